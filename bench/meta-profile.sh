#!/usr/bin/env bash
# bench/meta-profile.sh: where an aheadfs metadata operation's instructions
# go (Documentation/metadata.rst, "Where aheadfs's own cost is").  Run in a guest:
#
#   scripts/vm-run --kernel 6.12 --memory 3G --tcg-single --cpus 1 \
#       --qemu-opts '-icount shift=0,sleep=off' -- bench/meta-profile.sh
#
# xfs on a RAM disk (brd); the same operations on it directly ("lower"),
# through aheadfs with its defaults, and through overlayfs (upper and lower
# directories on the same xfs).  Per layer and op, in a fresh directory of
# $PROFILE_FILES files (default 5000), one process:
#   create      open(O_CREAT) + close of new files
#   stat        stat(2) of every file, $PROFILE_PASSES passes (default 10)
#   open_close  open(O_RDONLY) + close, $PROFILE_PASSES passes
#   rename      every file to NAME.r and back (two ops), a fifth as many
#   unlink      unlink(2)
# Each op is timed (ops per guest second: on QEMU's -icount clock, per 10^9
# instructions), then run again in a fresh directory under `perf record -e
# cpu-clock -c $PROFILE_PERIOD -g` (default 20000: a sample every 20,000
# instructions), for the layers in $PROFILE_RECORD (default aheadfs), and
# the run's samples are split by call chain, from the root: a
# sample is "own" once a frame of the layer's module (aheadfs.ko,
# overlay.ko; xfs.ko for the lower) is on the chain, "lower" when a frame of
# the lower's VFS entry points or of xfs follows (is called from) that, and
# "rest" without such a frame; "self" counts the samples whose innermost
# frame is the module's own code (its functions' own instructions, what
# they call not included).  PROFILE_RECORD="aheadfs overlay" profiles both
# stacking layers, for the same split of overlayfs.  Writes a table to
# stdout and build/bench/meta-profile-<release>.txt (with PROFILE_KEEP=1,
# each run's `perf script` too).  $PROFILE_OPS and $PROFILE_LAYERS choose
# the ops and layers.  Names are walked from the op's directory (RCU mode,
# as from a local root filesystem); MOPS_WALK=absolute walks them from "/",
# which in a guest whose root is 9p is ref-walk from the first name.
# PROFILE_MARKS=FILE (scripts/insn-profile, with QEMU's insncount plugin):
# each timed loop is marked for the plugin and named in FILE ("op layer
# operations"), and the guest's /proc/kallsyms is copied to FILE.kallsyms.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rel=$(uname -r)
files=${PROFILE_FILES:-5000}
passes=${PROFILE_PASSES:-10}
# One sample per $period guest ns (instructions, on the -icount clock).
period=${PROFILE_PERIOD:-20000}
ops=${PROFILE_OPS:-create stat open_close rename unlink}
layers=${PROFILE_LAYERS:-lower aheadfs overlay}
ko=${AHEADFS_KO:-$top/build/kmod/$rel/aheadfs.ko}
out=$top/build/bench
work=/run/aheadfs-meta-profile

die() { echo "meta-profile: $*" >&2; exit 1; }
mkdir -p "$out" "$work"
mount -t tmpfs -o size=256M mp "$work"
cleanup() {
	umount "$work/ov" "$work/ah" 2>/dev/null || true
	umount "$work/xfs" 2>/dev/null || true
	umount "$work" 2>/dev/null || true
}
trap cleanup EXIT

cat >"$work/mops.c" <<'CEOF'
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, const char *p)
{
	fprintf(stderr, "mops: %s %s: %s\n", what, p, strerror(errno));
	exit(1);
}

/*
 * MOPS_MARK=1: call a "ret" at the address QEMU's insncount plugin
 * watches (bench/insncount.c) just before and after the timed loop, so
 * that the plugin's phase between the two is the loop's instructions.
 */
#define MARK_ADDR ((void *)0x5a5a5a5a0000UL)
static void (*mark)(void);

static void mark_setup(void)
{
	unsigned char *page;

	if (!getenv("MOPS_MARK") || strcmp(getenv("MOPS_MARK"), "1"))
		return;
	page = mmap(MARK_ADDR, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (page != MARK_ADDR)
		die("mmap", "marker page");
	page[0] = 0xc3;			/* ret */
	mark = (void (*)(void))page;
}

int main(int argc, char **argv)
{
	const char *op = argv[1], *dir = argv[2];
	int n = atoi(argv[3]), passes = argc > 4 ? atoi(argv[4]) : 1;
	char p[4096], q[4200];
	struct timespec a, b;
	struct stat st;
	long done = 0;
	int i, k, fd;

	/*
	 * MOPS_WALK=absolute: every path from "/", through the guest's 9p
	 * root, whose d_revalidate sends every walk to ref-walk at its
	 * first component; otherwise names relative to DIR, the walk in RCU
	 * mode as from a local root filesystem.
	 */
	const char *walk = getenv("MOPS_WALK");
	int abs = walk && !strcmp(walk, "absolute");

	if (!abs && chdir(dir))
		die("chdir", dir);
	mark_setup();
	if (mark)
		mark();
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (k = 0; k < passes; k++) {
		for (i = 0; i < n; i++) {
			if (abs)
				snprintf(p, sizeof(p), "%s/f%d", dir, i);
			else
				snprintf(p, sizeof(p), "f%d", i);
			if (!strcmp(op, "create") || !strcmp(op, "mk")) {
				fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
				if (fd < 0)
					die("create", p);
				close(fd);
			} else if (!strcmp(op, "stat")) {
				if (stat(p, &st))
					die("stat", p);
			} else if (!strcmp(op, "open_close")) {
				fd = open(p, O_RDONLY);
				if (fd < 0)
					die("open", p);
				close(fd);
			} else if (!strcmp(op, "rename")) {
				snprintf(q, sizeof(q), "%s.r", p);
				if (rename(p, q) || rename(q, p))
					die("rename", p);
				done++;
			} else if (!strcmp(op, "unlink")) {
				if (unlink(p))
					die("unlink", p);
			} else {
				fprintf(stderr, "mops: op %s\n", op);
				return 2;
			}
			done++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (mark)
		mark();
	printf("%.0f", done / ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9));
	if (mark)
		printf(" %ld", done);
	printf("\n");
	return 0;
}
CEOF
gcc -O2 -Wall -o "$work/mops" "$work/mops.c" || die "cannot build mops"

cat >"$work/split.py" <<'PEOF'
import re, sys
# The lower's VFS entry points aheadfs calls, and what the lower is.
LOWER = re.compile(r'^(xfs_|vfs_|dentry_open$|lookup_one|lookup_noperm|'
                   r'inode_permission$|notify_change$|iterate_dir$|'
                   r'try_lookup_one|__lookup_one|kernel_read$|kernel_write$)')
# The stacking module's functions (aheadfs or overlay; perf names a
# module's from kallsyms, with [kernel.kallsyms] for their dso): its text
# symbols in /proc/kallsyms.
MOD = '[' + sys.argv[1] + ']'
OURS = set(l.split()[2] for l in open('/proc/kallsyms')
           if len(l.split()) == 4 and l.split()[3] == MOD
           and l.split()[1] in 'tT')
if not OURS:
    sys.exit('split.py: no text symbols of %s in /proc/kallsyms (built in?)' % MOD)
def ours(sym, ip):
    return sym in OURS and int(ip, 16) >= 0xffffffffc0000000
own = lower = rest = self = 0
ownsym = {}
frames = []
def flush():
    global own, lower, rest, self
    if not frames:
        return
    state = 'rest'
    first = None
    for sym, ip in reversed(frames):		# root first
        if state == 'rest':
            if ours(sym, ip):
                state = 'own'
        elif state == 'own' and not ours(sym, ip) and LOWER.match(sym):
            state = 'lower'
            break
    if ours(*frames[0]):
        self += 1
    if state == 'own':
        own += 1
        # Which of our functions, or what they call: the innermost ours.
        for sym, ip in frames:
            if ours(sym, ip):
                leaf = frames[0][0]
                key = sym if leaf == sym else sym + ' > ' + leaf
                ownsym[key] = ownsym.get(key, 0) + 1
                break
    elif state == 'lower':
        lower += 1
    else:
        rest += 1
for line in sys.stdin:
    line = line.rstrip('\n')
    if not line.strip():
        flush()
        frames = []
        continue
    if line[0] != ' ' and line[0] != '\t':
        continue				# the sample's header
    m = re.match(r'\s*([0-9a-f]+)\s+(\S+?)(\+0x[0-9a-f]+)?\s+\((.*)\)$', line)
    if m:
        frames.append((m.group(2), m.group(1)))
flush()
tot = own + lower + rest
print('%d %.1f %.1f %.1f' % (tot, 100.0 * own / max(tot, 1), 100.0 * self / max(tot, 1),
                           100.0 * lower / max(tot, 1)))
for k, v in sorted(ownsym.items(), key=lambda x: -x[1])[:12]:
    print('  %5.2f%% %s' % (100.0 * v / max(tot, 1), k))
PEOF

lsmod | grep -qw aheadfs || insmod "$ko"
# Sample as often as asked, however long the handler takes.
echo 200000 >/proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || true
echo 0 >/proc/sys/kernel/perf_cpu_time_max_percent
if modprobe brd rd_nr=1 rd_size=$((1024 * 1024)) 2>/dev/null && [ -b /dev/ram0 ]; then
	dev=/dev/ram0
else
	die "no brd"
fi
mkfs.xfs -q -f "$dev"
mkdir -p "$work/xfs" "$work/ah" "$work/ov"
mount "$dev" "$work/xfs"
mkdir -p "$work/xfs/ah" "$work/xfs/ovl" "$work/xfs/ovu" "$work/xfs/ovw" "$work/xfs/lo"
mount -t aheadfs "$work/xfs/ah" "$work/ah"
mount -t overlay -o "lowerdir=$work/xfs/ovl,upperdir=$work/xfs/ovu,workdir=$work/xfs/ovw" ov "$work/ov"
dir_of() {
	case $1 in
	lower) echo "$work/xfs/lo" ;; aheadfs) echo "$work/ah" ;; overlay) echo "$work/ov" ;;
	esac
}
# Prepare the directory OP needs at D/OP.N (fresh for every run).
prep() {
	local d=$1 op=$2
	rm -rf "$d"
	mkdir -p "$d"
	case $op in create) ;; *) "$work/mops" mk "$d" "$files" >/dev/null ;; esac
	sync
	echo 3 >/proc/sys/vm/drop_caches
	# warm the dentries and inodes, as a benchmark's earlier phase does
	case $op in create) ;; *) "$work/mops" stat "$d" "$files" >/dev/null ;; esac
}
run_passes() {
	case $1 in
	stat|open_close) echo "$passes" ;;
	rename) echo $(((passes + 4) / 5)) ;;
	*) echo 1 ;;
	esac
}

[ -z "${PROFILE_MARKS:-}" ] || : >"$PROFILE_MARKS"
report=$out/meta-profile-$rel.txt
: >"$report"
: >"$work/detail.txt"
printf '%-10s %-8s %9s %7s %7s %7s %7s\n' op layer ops_s own self lowervfs samples | tee -a "$report"
for op in $ops; do
	declare -A rate=()
	for layer in $layers; do
		base=$(dir_of "$layer")
		prep "$base/t.$op" "$op"
		if [ -n "${PROFILE_MARKS:-}" ]; then
			# The insncount plugin's phase: this loop's instructions.
			read -r r n < <(MOPS_MARK=1 "$work/mops" "$op" "$base/t.$op" "$files" "$(run_passes "$op")")
			rate[$layer]=$r
			echo "$op $layer $n" >>"$PROFILE_MARKS"
		else
			rate[$layer]=$("$work/mops" "$op" "$base/t.$op" "$files" "$(run_passes "$op")")
		fi
		split="- - - -"
		if [[ " ${PROFILE_RECORD:-aheadfs} " == *" $layer "* ]]; then
			prep "$base/p.$op" "$op"
			perf record -q -e cpu-clock -c "$period" -g -o "$work/perf.data" -- \
				"$work/mops" "$op" "$base/p.$op" "$files" "$(run_passes "$op")" >/dev/null 2>"$work/perf.err" ||
				{ cat "$work/perf.err" >&2; die "perf record"; }
			perf script -i "$work/perf.data" -F comm,ip,sym,dso 2>/dev/null \
				>"$work/script.txt"
			mod=$layer
			[ "$layer" != lower ] || mod=xfs
			python3 "$work/split.py" "$mod" <"$work/script.txt" >"$work/split.txt"
			[ -z "${PROFILE_KEEP:-}" ] || cp "$work/script.txt" "$out/meta-profile-$rel-$op-$layer.script"
			read -r samples ownp selfp lowp <"$work/split.txt"
			split="$ownp% $selfp% $lowp% $samples"
			{ echo "# $op, $layer: $mod's own, by innermost $mod function > leaf"
			  tail -n +2 "$work/split.txt"; } >>"$work/detail.txt"
			rm -rf "$base/p.$op"
		fi
		rm -rf "$base/t.$op"
		printf '%-10s %-8s %9s %7s %7s %7s %7s\n' "$op" "$layer" "${rate[$layer]}" $split | tee -a "$report"
	done
	if [ -n "${rate[overlay]:-}" ] && [ -n "${rate[aheadfs]:-}" ] && [ -n "${rate[lower]:-}" ]; then
		awk -v o="$op" -v l="${rate[lower]}" -v a="${rate[aheadfs]}" -v v="${rate[overlay]}" \
			'BEGIN { printf "%-10s aheadfs/lower %.3f overlay/lower %.3f aheadfs/overlay %.3f\n", o, a / l, v / l, a / v }' |
			tee -a "$report"
	fi
	unset rate
done
tee -a "$report" <"$work/detail.txt"
# The symbols the insncount plugin's block addresses are mapped to.
[ -z "${PROFILE_MARKS:-}" ] || cat /proc/kallsyms >"$PROFILE_MARKS.kallsyms"
