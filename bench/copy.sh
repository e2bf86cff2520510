#!/usr/bin/env bash
# vm-run-opts: -drive driver=null-co,size=4G,read-zeroes=on,if=none,id=slow,snapshot=on,throttling.iops-total=150,throttling.bps-total=157286400 -device virtio-blk-pci,drive=slow,serial=aheadfs-slow -drive driver=null-co,size=4G,read-zeroes=on,if=none,id=fast,snapshot=on -device virtio-blk-pci,drive=fast,serial=aheadfs-fast
# vm-run-timeout: 5400
# bench-needs: ksmbd
#
# bench/copy.sh: copying a cold file through aheadfs, run inside a guest by
# `make bench BENCH=copy` (scripts/bench-run), with the two drives above:
# "slow" is throttled by QEMU to 150 requests and 150 MiB/s (it charges per
# request like a disk seek), "fast" is not.  Both are QEMU null devices with
# a temporary overlay (snapshot=on): nothing exists on the host.
#
# Three lowers, two methods each, every copy of a cold file (sync, caches
# dropped) and timed until its data is durable (fsync):
#   ext4-slow    aheadfs over ext4 on the slow drive
#   xfs-reflink  aheadfs over xfs (reflink=1) on the fast drive
#   nfs42        an NFS 4.2 client over loopback, with tc netem adding
#                2 ms to every packet on lo, mounting an export of aheadfs
#                over ext4 on the fast drive
# Methods: "readwrite", a loop of 1 MiB reads and writes; and
# "copy_file_range", called until it returns 0 (the lower's clone on xfs,
# the server-side COPY over NFS, aheadfs's chunked copy on ext4).  Each
# measurement is repeated $BENCH_REPS times, interleaved; medians are kept.
# The file is $BENCH_COPY_MIB MiB (default 1024; under TCG a smaller one
# keeps a run within minutes).
#
# Then the story's reader, which was a copy: the slow drive's ext4 again,
# under dm-delay charging every read $BENCH_COPY_LATENCY ms (default 10; a
# disk seek; writes are not delayed), copy_file_range of the cold file with
# prefetch=legacy beside prefetch=ahead, and the copy's counters
# (copy_absent_txns, copy_wait_txns, copy_uncached_tails).
#
# BENCH_CLOCK=icount (scripts/bench-run) runs the story's copy only, on an
# instruction-counted clock and a device in the guest (null_blk with an
# hrtimer completion of 0 and $BENCH_COPY_LATENCY ms; see the block below),
# into build/bench/copy-icount-<release>.json ($BENCH_OUT); with it, at
# each latency, the same file over SMB (ksmbd, then Samba's smbd, sharing
# the aheadfs mount, the kernel's SMB client on loopback: the client's
# copy_file_range, a server-side copy, and its read/write loop, legacy and
# ahead; with Samba also a server-side copy to a tmpfs, which Samba makes
# with its own reads; BENCH_COPY_SMB_SERVERS chooses the servers, off with
# BENCH_COPY_SMB=0) and aheadfs over an NFS 4.2 client of the ext4
# (copy_file_range, a server-side COPY, and the read/write loop; off with
# BENCH_COPY_NFS_LOWER=0).  Everything runs inside the guest: loopback
# networking and both servers are the guest's own.
#
# Output: build/bench/copy-<release>.json (this kernel) and
# build/bench/copy.json (every kernel measured so far):
#   {"results": [{"kernel", "lower", "method", "bytes", "seconds"}, ...,
#                {"kernel", "lower": "ext4-delay", "method", "mode",
#                 "latency_ms", "bytes", "seconds", "txns", "absent_txns",
#                 "wait_txns", "uncached_tails"}],
#    "ratios": [{"kernel", "lower", "value", "target", "met"}]}
# and a table on stdout.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rel=$(uname -r)
out=$top/build/bench
reps=${BENCH_REPS:-3}
size_mib=${BENCH_COPY_MIB:-1024}
latency=${BENCH_COPY_LATENCY:-10}
ko=${AHEADFS_KO:-$top/build/kmod/$rel/aheadfs.ko}
work=/run/aheadfs-bench-copy

die() { echo "bench/copy: $*" >&2; exit 1; }

# BENCH_CLOCK=icount runs the story's copy only, on null_blk (below).
case ${BENCH_CLOCK:-wall} in
wall|icount) ;;
*) echo "bench/copy: BENCH_CLOCK must be wall or icount, not '${BENCH_CLOCK}'" >&2; exit 2 ;;
esac

disk() {	# disk SERIAL: the /dev node of the virtio disk with that serial
	local d
	for d in /sys/block/vd*; do
		[ "$(cat "$d/serial" 2>/dev/null)" = "$1" ] && { echo "/dev/${d##*/}"; return; }
	done
	die "no virtio disk with serial $1 (run through make bench BENCH=copy)"
}

stat_of() {	# stat_of MNT NAME: a counter of the aheadfs mount at MNT
	awk -v n="$2" '$1 == n { print $2 }' "/sys/fs/aheadfs/$(mountpoint -d "$1")/stats"
}

for c in python3 mkfs.xfs rpc.nfsd rpc.mountd exportfs tc; do
	command -v $c >/dev/null || die "$c missing (scripts/setup-deps)"
done
mkdir -p "$out" "$work"
mount -t tmpfs -o size=64M bench "$work"
[ -r "$ko" ] || die "no module $ko (make modules)"
lsmod | grep -qw aheadfs || insmod "$ko"
tsv=$work/results.tsv
: >"$tsv"
pids=
cleanup() {
	set +e
	umount -f "$work/nfs-client" 2>/dev/null
	tc qdisc del dev lo root 2>/dev/null
	exportfs -ua 2>/dev/null
	[ -z "$pids" ] || rpc.nfsd 0 2>/dev/null
	for p in $pids; do kill "$p" 2>/dev/null; done
	for m in "$work"/*-mnt "$work"/*-lower; do umount "$m" 2>/dev/null; done
	dmsetup remove ahfs-copy 2>/dev/null
	umount "$work" 2>/dev/null
}
trap cleanup EXIT

# The copy itself, timed inside one process that is already running: an
# exec after drop_caches would time reading the tool over the guest's 9p
# root.  readwrite: 1 MiB reads and writes; copy_file_range: calls until
# it returns 0.  Both end with fsync.  Prints seconds.
cat >"$work/copy.py" <<'PY'
import os, sys, time
method, src, dst = sys.argv[1:4]
with open("/proc/sys/vm/drop_caches", "w") as f:
    f.write("3\n")
fi = os.open(src, os.O_RDONLY)
fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
t0 = time.monotonic()
if method == "readwrite":
    while True:
        b = os.read(fi, 1 << 20)
        if not b:
            break
        while b:
            b = b[os.write(fo, b):]
else:
    while os.copy_file_range(fi, fo, 1 << 62):
        pass
os.fsync(fo)
print("%.6f" % (time.monotonic() - t0))
PY

# timed LOWER METHOD SRC DST [MODE LATENCY_MS]: one cold copy, appended to
# the results (with the copy counters of the source's mount for a MODE).
timed() {
	local s c0= c1=
	rm -f "$4"
	sync
	[ -z "${5:-}" ] || c0=$(copy_counts "$3")
	s=$(python3 "$work/copy.py" "$2" "$3" "$4") || die "$1 $2: copy failed"
	[ -z "${5:-}" ] || c1=$(copy_counts "$3")
	cmp -s "$3" "$4" || die "$1 $2: the copy differs from its source"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rel" "$1" "$2" \
		"$(stat -c %s "$3")" "$s" "${5:-}" "${6:-}" "$c0" "$c1" >>"$tsv"
}

# copy_counts FILE: the copy counters of the aheadfs mount FILE is on.
copy_counts() {
	awk '$1 ~ /^(copy_(reqs|txns|absent_txns|wait_txns|uncached_tails)|read_reqs|wait_reqs|absent_reqs|uncached_tails)$/ { printf "%s=%s ", $1, $2 }' \
		"/sys/fs/aheadfs/$(stat -c '%Hd:%Ld' "$1")/stats"
}

case ${BENCH_CLOCK:-wall} in
wall) ;;
icount)
# Under the instruction-counted clock (BENCH_CLOCK=icount) only the story's
# copy runs, on a device inside the guest: the throttled drive's and the
# network's delays wait on the host, which jumps the clock by no measured
# time.  null_blk, memory-backed, every command completed by its hrtimer
# L ms after it was queued (irqmode=2 completion_nsec; writes too), for
# L = 0 (irqmode=0) and $BENCH_COPY_LATENCY; ext4 on it, aheadfs over that,
# a cold $BENCH_COPY_MIB MiB file (default 256 here) copied with
# copy_file_range by a static C copier on tmpfs (memory locked, caches
# dropped by itself, so nothing timed touches the 9p root), legacy and
# ahead.  One run each: icount runs repeat.  Timed: the copy_file_range
# loop, then its fsync, separately; the copier's wait is its blocked time
# (the loop's time less its CPU time and run-queue delay).
out=${BENCH_OUT:-$top/build/bench}
size_mib=${BENCH_COPY_MIB:-256}
mkdir -p "$out"
cleanup() {
	set +e
	umount -f "$work/smb-mixcli" 2>/dev/null
	for server in ksmbd samba; do
		"$top/scripts/smb-share" --server $server stop "$work/smb-cli" "$work/smb-etc" 2>/dev/null
	done
	umount "$work/smb-mix/t" "$work/smb-mix/a" 2>/dev/null
	umount "$work/mnt" 2>/dev/null
	umount -f "$work/nfs-cli" 2>/dev/null
	exportfs -ua 2>/dev/null
	pgrep -x nfsd >/dev/null && rpc.nfsd 0 2>/dev/null
	umount "$work/mnt" "$work/lower" 2>/dev/null
	rmmod null_blk 2>/dev/null
	umount "$work" 2>/dev/null
}
trap cleanup EXIT
! lsmod | grep -qw null_blk || die "null_blk is loaded already: this benchmark loads it with its own parameters"
tsv=$work/results.tsv
: >"$tsv"
cat >"$work/copier.c" <<'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long long now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long runq(int fd)
{
	char b[128];
	long long run = 0, wait = 0;
	ssize_t n = pread(fd, b, sizeof(b) - 1, 0);

	if (n <= 0)
		return 0;
	b[n] = 0;
	sscanf(b, "%lld %lld", &run, &wait);
	return wait;
}

/*
 * copier SRC DST [rw]: prints "copy_ns fsync_ns wait_ns cpu_ns runq_ns";
 * with rw, a loop of 1 MiB reads and writes instead of copy_file_range.
 */
static char buf[1 << 20];

int main(int argc, char **argv)
{
	long long t0, t1, t2, c0, c1, r0, r1;
	int fi, fo, sfd, dc, rw;

	if (argc != 3 && argc != 4)
		return 2;
	rw = argc == 4 && !strcmp(argv[3], "rw");
	memset(buf, 0, sizeof(buf));
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		perror("mlockall");
	sfd = open("/proc/self/schedstat", O_RDONLY);
	dc = open("/proc/sys/vm/drop_caches", O_WRONLY);
	fi = open(argv[1], O_RDONLY);
	fo = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fi < 0 || fo < 0 || dc < 0)
		return 1;
	sync();
	if (write(dc, "3\n", 2) != 2)
		return 1;
	runq(sfd);
	now(CLOCK_PROCESS_CPUTIME_ID);
	r0 = runq(sfd);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	t0 = now(CLOCK_MONOTONIC);
	for (;;) {
		ssize_t n, w;

		if (!rw) {
			n = copy_file_range(fi, NULL, fo, NULL, 1LL << 62, 0);
			if (n < 0) {
				perror("copy_file_range");
				return 1;
			}
			if (!n)
				break;
			continue;
		}
		n = read(fi, buf, sizeof(buf));
		if (n < 0) {
			perror("read");
			return 1;
		}
		if (!n)
			break;
		for (w = 0; w < n;) {
			ssize_t k = write(fo, buf + w, n - w);

			if (k <= 0) {
				perror("write");
				return 1;
			}
			w += k;
		}
	}
	t1 = now(CLOCK_MONOTONIC);
	c1 = now(CLOCK_PROCESS_CPUTIME_ID);
	r1 = runq(sfd);
	if (fsync(fo))
		return 1;
	t2 = now(CLOCK_MONOTONIC);
	printf("%lld %lld %lld %lld %lld\n", t1 - t0, t2 - t1,
	       (t1 - t0) - (c1 - c0) - (r1 - r0), c1 - c0, r1 - r0);
	return 0;
}
EOF
gcc -O2 -Wall -static -o "$work/copier" "$work/copier.c" || die "the copier does not build"
lower=$work/lower mnt=$work/mnt blk=/dev/nullb0
mkdir -p "$lower" "$mnt"
# icount_row LAT LOWER METHOD MODE SRC DST [rw] [EXTRA]: one cold copy by the
# copier, with the counters of the aheadfs mount $mnt, appended to the
# results; EXTRA (key=value words) goes with it.  The copy is compared with
# the source on the server's side: DST's name in the lower, or $same_as.
icount_row() {
	local c0 c1 cns fns wait cpu runq
	rm -f "$6"
	sync
	c0=$(copy_counts "$mnt/src")
	read -r cns fns wait cpu runq < <("$work/copier" "$5" "$6" ${7:+"$7"}) ||
		die "$2 $3 $4 at $1 ms: copy failed"
	c1=$(copy_counts "$mnt/src")
	# The wire's counts before cmp, whose own reads would be counted too.
	[ -z "${wire_mnt:-}" ] || wire1=$(nfs_wire "$wire_mnt")
	cmp -s "$mnt/src" "${same_as:-$lower/${6##*/}}" || die "$2 $3 $4 at $1 ms: the copy differs from its source"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rel" "$1" \
		"$4" "$((size_mib * 1048576))" "$cns" "$fns" "$wait" \
		"$cpu" "$runq" "$c0" "$c1" "$2" "$3" "${8:-}" >>"$tsv"
	echo "# $2 $3 $4, null_blk $1 ms: copy $((cns / 1000000)) ms, fsync $((fns / 1000000)) ms, wait $((wait / 1000000)) ms ${8:-}" >&2
}
# smb_rows LAT SERVER: SERVER (ksmbd, or Samba's smbd chrooted in
# build/samba-root) shares the aheadfs mount, the SMB client mounts it
# (scripts/smb-share); the client's copy_file_range (a server-side copy:
# FSCTL_SRV_COPYCHUNK_WRITE, one aheadfs copy per 1 MiB chunk) and its loop
# of 1 MiB reads and writes, legacy and ahead.  With Samba also a
# server-side copy from the aheadfs mount to a tmpfs (a second share
# holding both): copy_file_range between them fails EXDEV and Samba copies
# each 1 MiB chunk with its own pread and pwrite, the story's reader.
smb_rows() {
	local cli=$work/smb-cli etc=$work/smb-etc mix=$work/smb-mix mixcli=$work/smb-mixcli
	local sysfs mode extra=()
	sysfs=/sys/fs/aheadfs/$(mountpoint -d "$mnt")
	if [ "$2" = samba ]; then
		mkdir -p "$mix/a" "$mix/t" "$mixcli"
		mount --bind "$mnt" "$mix/a" && mount -t tmpfs -o size=$((size_mib + 64))M smbmix "$mix/t" ||
			die "the Samba mixed share"
		extra=("mix=$mix")
	fi
	"$top/scripts/smb-share" --server "$2" start "$mnt" "$cli" "$etc" ${extra[@]+"${extra[@]}"} ||
		die "SMB share ($2)"
	if [ "$2" = samba ]; then
		timeout 120 mount -t cifs //127.0.0.1/mix "$mixcli" \
			-o "vers=3.1.1,username=root,password=${AHEADFS_SMB_PASSWORD:-aheadfs-smb-share}" ||
			die "mount -t cifs //127.0.0.1/mix"
	fi
	for mode in legacy ahead; do
		echo "$mode" >"$sysfs/prefetch"
		icount_row "$1" "smb-$2" copy_file_range "$mode" "$cli/src" "$cli/dst"
		icount_row "$1" "smb-$2" readwrite "$mode" "$cli/src" "$cli/dst" rw
		[ "$2" = samba ] || continue
		same_as=$mix/t/dst icount_row "$1" smb-samba-to-tmpfs copy_file_range "$mode" \
			"$mixcli/a/src" "$mixcli/t/dst"
		rm -f "$mix/t/dst"
	done
	rm -f "$mnt/dst"
	if [ "$2" = samba ]; then
		umount "$mixcli" || die "umount $mixcli"
	fi
	"$top/scripts/smb-share" --server "$2" stop "$cli" "$etc" || die "SMB share stop ($2)"
	if [ "$2" = samba ]; then
		umount "$mix/t" "$mix/a" || die "umount the mixed share's mounts"
	fi
}
# nfs_ops CLIENT OP: the count of NFS operation OP on the mount at CLIENT.
nfs_ops() {
	awk -v m=" $1 " -v op="$2:" '/^device / { mine = index($0, m) > 0 }
		mine && $1 == op { print $2; exit }' /proc/self/mountstats
}
# nfs_wire CLIENT: "COPY READS" on the mount at CLIENT, READS counting READ
# and READ_PLUS (6.12's client reads with it).
nfs_wire() {
	echo "$(($(nfs_ops "$1" COPY) + 0)) $(($(nfs_ops "$1" READ) + $(nfs_ops "$1" READ_PLUS) + 0))"
}
# wire_delta C0 R0 C1 R1: the row's extra words for the counts between.
wire_delta() {
	echo "nfs_copy=$(($3 - $1)) nfs_read=$(($4 - $2))"
}
# nfs_lower_rows LAT: the lower's ext4 exported by nfsd, an NFS 4.2 client
# mounting it, aheadfs over the client (mounted at $mnt in place of the
# ext4's: the counters are its): copy_file_range through aheadfs is the
# lower's own copy, a server-side COPY (the client's COPY and READ counts
# go with the row), beside aheadfs's read/write loop over NFS.
nfs_lower_rows() {
	local cli=$work/nfs-cli sysfs mode pids= extra wire0
	mkdir -p "$cli"
	umount "$mnt"
	ip link set lo up
	modprobe nfsd || die "modprobe nfsd"
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
	mkdir -p /var/lib/nfs/v4recovery /run/rpcbind
	if ! pgrep -x rpcbind >/dev/null; then
		rpcbind -w
		pids="$pids $(pgrep -n -x rpcbind)"
	fi
	echo 10 >/proc/fs/nfsd/nfsv4leasetime
	echo 10 >/proc/fs/nfsd/nfsv4gracetime
	rpc.mountd --no-udp >/dev/null 2>&1
	pids="$pids $(pgrep -n -x rpc.mountd)"
	rpc.nfsd --no-udp -V 4.2 4
	echo Y >/proc/fs/nfsd/v4_end_grace
	exportfs -o rw,sync,no_root_squash,no_subtree_check,fsid=0 "127.0.0.1:$lower"
	mount -t nfs -o vers=4.2,proto=tcp 127.0.0.1:/ "$cli" || die "NFS mount"
	mount -t aheadfs "$cli" "$mnt" || die "aheadfs over NFS"
	sysfs=/sys/fs/aheadfs/$(mountpoint -d "$mnt")
	echo ahead >"$sysfs/prefetch"
	wire0=$(nfs_wire "$cli") wire_mnt=$cli
	icount_row "$1" nfs-lower copy_file_range ahead "$mnt/src" "$mnt/dst"
	wire_mnt=
	# shellcheck disable=SC2086
	extra=$(wire_delta $wire0 $wire1)
	echo "# nfs-lower copy_file_range at $1 ms, after the check's reads: $(wire_delta $wire0 $(nfs_wire "$cli"))" >&2
	sed -i '$ s/\t$/\t'"$extra"'/' "$tsv"
	echo "# nfs-lower copy_file_range at $1 ms: $extra" >&2
	for mode in legacy ahead; do
		echo "$mode" >"$sysfs/prefetch"
		icount_row "$1" nfs-lower readwrite "$mode" "$mnt/src" "$mnt/dst" rw
	done
	rm -f "$mnt/dst"
	umount "$mnt"
	umount "$cli"
	exportfs -ua
	rpc.nfsd 0
	for p in $pids; do kill "$p"; done
	mount -t aheadfs "$lower" "$mnt"
}
smb=${BENCH_COPY_SMB:-1} nfsl=${BENCH_COPY_NFS_LOWER:-1}
smb_servers=
[ "$smb" = 0 ] || smb_servers=${BENCH_COPY_SMB_SERVERS:-ksmbd samba}
for server in $smb_servers; do
	case $server in
	ksmbd) ;;
	samba) [ -x "${AHEADFS_SAMBA_ROOT:-$top/build/samba-root}/usr/sbin/smbd" ] ||
		die "no Samba root: scripts/samba-root builds it (or BENCH_COPY_SMB_SERVERS=ksmbd)" ;;
	*) die "BENCH_COPY_SMB_SERVERS: unknown server $server (ksmbd, samba)" ;;
	esac
done
for lat in 0 "$latency"; do
	irq="irqmode=0"
	[ "$lat" = 0 ] || irq="irqmode=2 completion_nsec=$((lat * 1000000))"
	# shellcheck disable=SC2086
	modprobe null_blk nr_devices=1 queue_mode=2 memory_backed=1 gb=2 \
		bs=4096 max_sectors=2560 hw_queue_depth=64 submit_queues=1 $irq ||
		die "modprobe null_blk $irq failed"
	udevadm settle 2>/dev/null || true
	[ -b "$blk" ] || die "no $blk"
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$blk" >/dev/null
	mount "$blk" "$lower"
	mount -t aheadfs "$lower" "$mnt"
	dd if=/dev/urandom of="$mnt/src" bs=1M count="$size_mib" conv=fsync status=none
	sysfs=/sys/fs/aheadfs/$(mountpoint -d "$mnt")
	echo "# icount clock, null_blk $lat ms per command ($irq), txn $(cat "$sysfs/txn_kb") KiB, $size_mib MiB file" >&2
	for mode in legacy ahead; do
		echo "$mode" >"$sysfs/prefetch"
		rm -f "$mnt/dst"
		sync
		c0=$(copy_counts "$mnt/src")
		read -r cns fns wait cpu runq < <("$work/copier" "$mnt/src" "$mnt/dst") ||
			die "null_blk $lat ms $mode: copy failed"
		c1=$(copy_counts "$mnt/src")
		cmp -s "$mnt/src" "$mnt/dst" || die "null_blk $lat ms $mode: the copy differs from its source"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rel" "$lat" \
			"$mode" "$((size_mib * 1048576))" "$cns" "$fns" "$wait" \
			"$cpu" "$runq" "$c0" "$c1" >>"$tsv"
		echo "# null_blk $lat ms, $mode: copy $((cns / 1000000)) ms, fsync $((fns / 1000000)) ms, wait $((wait / 1000000)) ms" >&2
	done
	rm -f "$mnt/dst"
	for server in $smb_servers; do smb_rows "$lat" "$server"; done
	[ "$nfsl" = 0 ] || nfs_lower_rows "$lat"
	umount "$mnt"
	# nfsd's file cache lets go of the files it held in its own time.
	for _ in $(seq 300); do umount "$lower" 2>/dev/null && break; sleep 0.1; done
	mountpoint -q "$lower" && die "$lower stays busy"
	rmmod null_blk
done
python3 - "$tsv" "$out" "$rel" <<'EOF'
import json, os, sys
# The guest's CPU model (scripts/bench-run's BENCH_CPU): with ERMS, the
# instruction-counted clock counts a string copy or clear a byte an iteration.
cpu_model = "erms (rep movsb/stosb)" if " erms" in open("/proc/cpuinfo").read() else "no erms (rep movsq/stosq)"

tsv, out, rel = sys.argv[1:4]
def kv(s):
    return {k: int(v) for k, v in (x.split("=") for x in s.split())}
rows = []
for line in open(tsv):
    f = line.rstrip("\n").split("\t")
    k, lat, mode, size, cns, fns, wait, cpu, runq, c0, c1 = f[:11]
    lower, method, extra = (f[11:14] + ["", "", ""])[:3] if len(f) > 11 else ("ext4-null_blk", "copy_file_range", "")
    a, b = kv(c0), kv(c1)
    c = {n: b.get(n, 0) - a.get(n, 0) for n in b}
    rows.append({"kernel": rel, "clock": "icount", "lower": lower,
                 "method": method, "mode": mode,
                 "latency_ms": int(lat), "bytes": int(size),
                 "copy_s": int(cns) / 1e9, "fsync_s": int(fns) / 1e9,
                 "seconds": (int(cns) + int(fns)) / 1e9,
                 "wait_ms": round(int(wait) / 1e6, 2),
                 "cpu_ms": round(int(cpu) / 1e6, 2),
                 "runq_ms": round(int(runq) / 1e6, 2),
                 "txns": c.get("copy_txns"),
                 "absent_txns": c.get("copy_absent_txns"),
                 "wait_txns": c.get("copy_wait_txns"),
                 "uncached_tails": c.get("copy_uncached_tails"),
                 "copy_reqs": c.get("copy_reqs"),
                 "read_reqs": c.get("read_reqs"),
                 "read_wait_reqs": c.get("wait_reqs"),
                 "read_absent_reqs": c.get("absent_reqs")})
    rows[-1].update(kv(extra))
local = [r for r in rows if r["lower"] == "ext4-null_blk"]
by = {(r["latency_ms"], r["mode"]): r for r in local}
ratios = []
for lat in sorted({r["latency_ms"] for r in local}):
    l, a = by.get((lat, "legacy")), by.get((lat, "ahead"))
    if l and a:
        for what in ("copy_s", "seconds"):
            v = round(l[what] / a[what], 3)
            t = 2.0 if lat == 10 else None
            ratios.append({"kernel": rel, "clock": "icount", "latency_ms": lat,
                           "ratio": "ahead/legacy (%s)" % ("copy" if what == "copy_s" else "copy+fsync"),
                           "value": v, "target": t,
                           "met": None if t is None else v >= t})
# SMB: the server-side copy, ahead over legacy and over the client's best
# read/write loop; the targets are at 10 ms.
# Samba's copy to a tmpfs (its own reads through aheadfs) has the first.
for smb in ("smb-ksmbd", "smb-samba", "smb-samba-to-tmpfs"):
    sm = {(r["latency_ms"], r["method"], r["mode"]): r for r in rows if r["lower"] == smb}
    for lat in sorted({k[0] for k in sm}):
        t = 2.0 if lat == 10 else None
        a, l = sm.get((lat, "copy_file_range", "ahead")), sm.get((lat, "copy_file_range", "legacy"))
        loops = [sm[(lat, "readwrite", m)] for m in ("legacy", "ahead") if (lat, "readwrite", m) in sm]
        if a and l:
            v = round(l["seconds"] / a["seconds"], 3)
            ratios.append({"kernel": rel, "clock": "icount", "lower": smb, "latency_ms": lat,
                           "ratio": "server-side copy ahead/legacy", "value": v,
                           "target": t, "met": None if t is None else v >= t})
        if a and loops:
            v = round(min(x["seconds"] for x in loops) / a["seconds"], 3)
            ratios.append({"kernel": rel, "clock": "icount", "lower": smb, "latency_ms": lat,
                           "ratio": "server-side copy ahead/best client loop", "value": v,
                           "target": t, "met": None if t is None else v >= t})
# NFS lower: COPY on the wire and no READ for the copy.
for r in rows:
    if r["lower"] == "nfs-lower" and r["method"] == "copy_file_range":
        ok = r.get("nfs_copy", 0) > 0 and r.get("nfs_read", 1) == 0
        ratios.append({"kernel": rel, "clock": "icount", "lower": "nfs-lower",
                       "latency_ms": r["latency_ms"],
                       "ratio": "COPY ops %s, READ ops %s" % (r.get("nfs_copy"), r.get("nfs_read")),
                       "value": None, "target": "COPY > 0, READ 0", "met": ok})
json.dump({"clock": "icount", "cpu": cpu_model, "device": "null_blk memory-backed, hrtimer completion",
           "results": rows, "ratios": ratios},
          open(os.path.join(out, "copy-icount-%s.json" % rel), "w"), indent=1)
print("kernel %s, icount clock, CPU %s, a cold file on ext4 on null_blk, copied through aheadfs" % (rel, cpu_model))
print("%-18s %-15s %4s %-7s %9s %9s %8s %9s  %s" % ("lower", "method", "ms", "mode", "copy s", "fsync s", "MiB/s", "wait ms",
      "copies txns absent waited | reads waited"))
for r in rows:
    print("%-18s %-15s %4d %-7s %9.4f %9.4f %8.1f %9.2f  %s %s %s %s | %s %s%s" % (
        r["lower"], r["method"], r["latency_ms"], r["mode"], r["copy_s"], r["fsync_s"],
        r["bytes"] / 1048576 / r["copy_s"], r["wait_ms"],
        r["copy_reqs"], r["txns"], r["absent_txns"], r["wait_txns"],
        r["read_reqs"], r["read_wait_reqs"],
        "" if "nfs_copy" not in r else "  COPY %s READ %s" % (r["nfs_copy"], r["nfs_read"])))
for q in ratios:
    tgt = "" if q["target"] is None else "  (target %s) %s" % (q["target"], "met" if q["met"] else "MISSED")
    val = "" if q["value"] is None else "%6.2f" % q["value"]
    print("  %-18s %3d ms %-40s %s%s" % (q.get("lower", "ext4-null_blk"), q["latency_ms"], q["ratio"], val, tgt))
EOF
exit 0 ;;
esac

# mklower NAME DEV FSTYPE: a fresh lower on DEV with aheadfs over it, and
# the source file; echoes the aheadfs mount.
mklower() {
	local lower=$work/$1-lower mnt=$work/$1-mnt
	mkdir -p "$lower" "$mnt"
	case $3 in
	# No lazy init: a background inode-table writer would steal the IOPS.
	ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$2" 3G >/dev/null ;;
	xfs) mkfs.xfs -q -f -m reflink=1 "$2" ;;
	esac
	mount "$2" "$lower"
	mount -t aheadfs "$lower" "$mnt"
	dd if=/dev/urandom of="$mnt/src" bs=1M count="$size_mib" conv=fsync status=none
	echo "$mnt"
}

slow=$(mklower ext4-slow "$(disk aheadfs-slow)" ext4)
xfs=$(mklower xfs-reflink "$(disk aheadfs-fast)" xfs)
echo "# ext4-slow: txn $(cat "/sys/fs/aheadfs/$(mountpoint -d "$slow")/txn_kb") KiB, $size_mib MiB file" >&2
for rep in $(seq "$reps"); do
	for m in readwrite copy_file_range; do
		timed ext4-slow $m "$slow/src" "$slow/dst"
		timed xfs-reflink $m "$xfs/src" "$xfs/dst"
	done
	echo "# ext4-slow, xfs-reflink: repetition $rep of $reps done" >&2
done
echo "# ext4-slow: copy_chunked $(stat_of "$slow" copy_chunked), copy_txns $(stat_of "$slow" copy_txns); xfs-reflink: copy_clone $(stat_of "$xfs" copy_clone)" >&2
rm -f "$slow/dst" "$xfs/dst"
umount "$xfs" "$work/xfs-reflink-lower"

# The story's reader: the chunked copy on a drive charging every read.
sdev=$(disk aheadfs-slow)
umount "$slow" "$work/ext4-slow-lower"
modprobe dm-delay || die "no dm-delay module"
dmsetup create ahfs-copy --table "0 $(blockdev --getsz "$sdev") delay $sdev 0 $latency $sdev 0 0"
mount /dev/mapper/ahfs-copy "$work/ext4-slow-lower"
mount -t aheadfs "$work/ext4-slow-lower" "$slow"
for rep in $(seq "$reps"); do
	for mode in legacy ahead; do
		echo "$mode" >"/sys/fs/aheadfs/$(mountpoint -d "$slow")/prefetch"
		timed ext4-delay copy_file_range "$slow/src" "$slow/dst" "$mode" "$latency"
	done
	echo "# ext4-delay ($latency ms per read): repetition $rep of $reps done" >&2
done
rm -f "$slow/dst"
umount "$slow" "$work/ext4-slow-lower"
dmsetup remove ahfs-copy

# NFS: the export is aheadfs over ext4 on the fast drive (the xfs lower's).
nfs=$(mklower nfs-server "$(disk aheadfs-fast)" ext4)
cli=$work/nfs-client
mkdir -p "$cli"
ip link set lo up
modprobe nfsd
modprobe sch_netem
mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
mkdir -p /var/lib/nfs/v4recovery /run/rpcbind
if ! pgrep -x rpcbind >/dev/null; then
	rpcbind -w
	pids="$pids $(pgrep -n -x rpcbind)"
fi
pgrep -x nfsd >/dev/null && die "nfsd is already running"
echo 10 >/proc/fs/nfsd/nfsv4leasetime
echo 10 >/proc/fs/nfsd/nfsv4gracetime
rpc.mountd --no-udp >/dev/null 2>&1
pids="$pids $(pgrep -n -x rpc.mountd)"
rpc.nfsd --no-udp -V 4.2 4
echo Y >/proc/fs/nfsd/v4_end_grace
# fsid=0: the export is the NFSv4 root (see selftests/export-nfs.sh).
exportfs -o rw,sync,no_root_squash,no_subtree_check,fsid=0 "127.0.0.1:$nfs"
mount -t nfs -o vers=4.2,proto=tcp 127.0.0.1:/ "$cli"
tc qdisc add dev lo root netem delay 2ms
c0=$(awk -v m=" $cli " '/^device / { mine = index($0, m) > 0 } mine && $1 == "COPY:" { print $2; exit }' /proc/self/mountstats)
for rep in $(seq "$reps"); do
	for m in readwrite copy_file_range; do
		timed nfs42 $m "$cli/src" "$cli/dst"
	done
	echo "# nfs42: repetition $rep of $reps done" >&2
done
c1=$(awk -v m=" $cli " '/^device / { mine = index($0, m) > 0 } mine && $1 == "COPY:" { print $2; exit }' /proc/self/mountstats)
echo "# nfs42: client COPY ops $((c1 - c0)); server aheadfs copy_reqs $(stat_of "$nfs" copy_reqs)" >&2

python3 - "$tsv" "$out" "$rel" <<'EOF'
import glob, json, os, statistics, sys

tsv, out, rel = sys.argv[1:4]
def kv(s):
    return {k: int(v) for k, v in (x.split("=") for x in s.split())}
runs, counts = {}, {}
for line in open(tsv):
    (k, lower, method, size, secs, mode, lat, c0,
     c1) = line.rstrip("\n").split("\t")
    key = (lower, method, int(size), mode, lat)
    runs.setdefault(key, []).append(float(secs))
    if mode:
        a, b = kv(c0), kv(c1)
        counts.setdefault(key, []).append(
            {n: b.get(n, 0) - a.get(n, 0) for n in b})
results = []
for key, s in runs.items():
    lower, method, size, mode, lat = key
    r = {"kernel": rel, "lower": lower, "method": method, "bytes": size,
         "seconds": round(statistics.median(s), 3)}
    if mode:
        c = counts[key][-1]
        r.update({"mode": mode, "latency_ms": int(lat),
                  "txns": c.get("copy_txns"),
                  "absent_txns": c.get("copy_absent_txns"),
                  "wait_txns": c.get("copy_wait_txns"),
                  "uncached_tails": c.get("copy_uncached_tails")})
    results.append(r)
by = {(r["lower"], r["method"]): r for r in results if "mode" not in r}
delay = {r["mode"]: r for r in results if r["lower"] == "ext4-delay"}
targets = {"nfs42": 7.0, "xfs-reflink": 100.0, "ext4-slow": 2.0}
ratios = []
if "legacy" in delay and "ahead" in delay:
    v = round(delay["legacy"]["seconds"] / max(delay["ahead"]["seconds"], 1e-6), 2)
    ratios.append({"kernel": rel, "lower": "ext4-delay ahead/legacy",
                   "latency_ms": delay["ahead"]["latency_ms"], "value": v,
                   "target": 2.0, "met": v >= 2.0})
for lower, target in targets.items():
    rw, cfr = by.get((lower, "readwrite")), by.get((lower, "copy_file_range"))
    if rw and cfr:
        v = round(rw["seconds"] / max(cfr["seconds"], 1e-6), 2)
        ratios.append({"kernel": rel, "lower": lower, "value": v,
                       "target": target, "met": v >= target})
json.dump({"results": results, "ratios": ratios},
          open(os.path.join(out, "copy-%s.json" % rel), "w"), indent=1)
allr, allq = [], []
for p in sorted(glob.glob(os.path.join(out, "copy-*.json"))):
    d = json.load(open(p))
    allr += d["results"]
    allq += d["ratios"]
json.dump({"results": allr, "ratios": allq},
          open(os.path.join(out, "copy.json"), "w"), indent=1)

print("kernel %s, cold copy, median seconds (MiB/s)" % rel)
print("%-12s %10s %22s %22s %9s %8s" % ("lower", "MiB", "readwrite",
      "copy_file_range", "speedup", "target"))
for lower, target in targets.items():
    rw, cfr = by.get((lower, "readwrite")), by.get((lower, "copy_file_range"))
    if not rw or not cfr:
        continue
    mib = rw["bytes"] / 1048576
    q = [x for x in ratios if x["lower"] == lower][0]
    print("%-12s %10d %12.3f (%7.1f) %12.3f (%7.1f) %8.2fx %7.0fx %s" % (
        lower, mib, rw["seconds"], mib / rw["seconds"], cfr["seconds"],
        mib / max(cfr["seconds"], 1e-6), q["value"], target,
        "met" if q["met"] else "MISSED"))
if delay:
    print("\ncopy_file_range on ext4 at %d ms per read: median seconds (MiB/s), the copy's transactions" %
          list(delay.values())[0]["latency_ms"])
    for mode in ("legacy", "ahead"):
        r = delay.get(mode)
        if r:
            mib = r["bytes"] / 1048576
            print("  %-7s %10.3f (%7.1f)  %d txns, %d absent, %d waited, %d uncached tails" % (
                mode, r["seconds"], mib / r["seconds"], r["txns"],
                r["absent_txns"], r["wait_txns"], r["uncached_tails"]))
    for q in ratios:
        if q["lower"].startswith("ext4-delay"):
            print("  ahead/legacy %.2fx (target 2x) %s" % (
                q["value"], "met" if q["met"] else "MISSED"))
EOF
