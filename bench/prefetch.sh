#!/usr/bin/env bash
# bench-clock: icount
# vm-run-memory: 3G
# vm-run-timeout: 5400
#
# bench/prefetch.sh: cold sequential read throughput and per-request latency
# through aheadfs, on a device where a miss costs what a disk charges: run
# inside a guest by `make bench BENCH=prefetch` (scripts/bench-run).
#
# The clock: by default BENCH_CLOCK=icount (the "bench-clock" line above;
# BENCH_CLOCK=wall runs it on real time): the guest's clock counts its
# instructions and an idle vCPU's clock jumps to the next timer deadline, so
# a device delay that is a timer inside the guest is counted in full, the
# host's load is not, and two runs of one tree give the same figures.
# Nothing timed touches the host: the device is in the guest, and the
# reader (a static C program on tmpfs, its memory locked) is loaded before
# it times anything.
#
# The device: null_blk, memory-backed (1 GiB, 4 KiB blocks, commands up to
# 1280 KiB as a virtio disk's, queue depth 64), every command completed by
# null_blk's hrtimer $L ms after it was queued (irqmode=2 completion_nsec),
# for L in $BENCH_LATENCIES (default "10 1": a disk seek, a fast remote
# tier) and, as the control, the same device completing at once (L = 0,
# irqmode=0: there ahead must cost nothing).  The delay applies to writes
# too; only the reads are timed.  Each latency reloads null_blk, so the file
# is written again each time.  Under TCG the guest's CPU, not a bandwidth
# cap, is the bottleneck: what a miss costs here is latency only.
#
# For each latency, request size and mode (the lower read directly, aheadfs
# kernel, legacy, ahead) the page cache is dropped and a $BENCH_FILE_MIB MiB
# file (default 256) is read once, sequentially, by a reader that times
# every request, the time the CPU was idle during its loop (wait: what the
# guest's tasks did not run of it, from /proc/schedstat; on the one vCPU of
# an icount run, the time everything waited on the device) and the time the
# reader itself slept in it (blocked: the loop's time less its own CPU time
# and run-queue delay, from /proc/self/schedstat; on one vCPU that includes
# the time the prefetch worker ran); then the same file is read hot through
# aheadfs (the ceiling: what the cache delivers).  Reported per run: MiB/s
# (guest time), p50/p90/p99 request latency, the first request's, how many
# took more than twice the median, the wait, the device's completed reads
# and aheadfs's stats deltas; per size and latency "latency hidden" (ahead
# at L ms over ahead at 0 ms).  Each row runs $BENCH_ROUNDS times (default 1
# under icount, whose runs repeat; 3 under wall time, the median kept, the
# lowest and highest rate beside it).
#
# Output ($BENCH_OUT, default build/bench, a directory the guest can write:
# under build/): prefetch-<release>.json (this kernel) and prefetch.json
# (every kernel measured so far in that directory): "clock", "cpu" (with
# or without ERMS: scripts/bench-run's BENCH_CPU),
# "device" (what the device was), "results", one object per run
# {"kernel", "clock", "device", "latency_ms", "mode", "req_bytes", "mib_s",
# "p50_ms", "p90_ms", "p99_ms", "first_ms", "slow_reqs", "wait_ms",
# "wait_over_0ms_ms", "blocked_ms", "cpus", "cpu_ms", "runq_ms", "hot_mib_s", "dev_reads", "reqs", "absent_reqs", "wait_reqs", "kernel_wait_ms",
# "uncached_tails", "demand_chunks", "prefetch_chunks", "window_peak",
# "rounds", "mib_s_min", "mib_s_max"} (stats null for mode lower),
# "probe_ms" (one 4 KiB direct read of the device, per latency), and
# "ratios", each target with its value, met or MISSED ("ahead p99/p50"
# with the lower's own as "lower_value" when the lower ran); and a table.  The
# raw rows (prefetch-<release>.tsv) end with every request's latency, ns,
# in request order.
#
# BENCH_MODES (default "lower kernel legacy ahead") runs only the modes it
# names (hot always follows): to try a change of the window, "ahead" alone,
# in a third of the time; the ratios of a mode not run are left out.
# BENCH_TRACE=1 records aheadfs's read, prefetch and window tracepoints
# during each ahead run into trace-<release>-<device>-<L>-<req>.txt beside
# the JSON: who submitted which chunk when (the reader or the worker),
# what each request waited, how the window was sized.  Tracing costs the
# traced runs CPU, so their figures are not the untraced ones.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rel=$(uname -r)
out=${BENCH_OUT:-$top/build/bench}
size_mib=${BENCH_FILE_MIB:-256}
latencies=${BENCH_LATENCIES:-10 1}
sizes=${BENCH_SIZES:-131072 1048576 8388608 8650752 16777216}
clock=${BENCH_CLOCK:-wall}
case $clock in
icount) rounds=${BENCH_ROUNDS:-1} ;;
wall) rounds=${BENCH_ROUNDS:-3} ;;
*) echo "bench/prefetch: BENCH_CLOCK must be wall or icount, not '$clock'" >&2; exit 2 ;;
esac
modes=${BENCH_MODES:-lower kernel legacy ahead}
for m in $modes; do
	case $m in
	lower | kernel | legacy | ahead) ;;
	*) echo "bench/prefetch: BENCH_MODES names lower, kernel, legacy or ahead, not '$m'" >&2; exit 2 ;;
	esac
done
[ -n "${modes// /}" ] || { echo "bench/prefetch: BENCH_MODES is empty" >&2; exit 2; }
tracefs=/sys/kernel/tracing
ko=$top/build/kmod/$rel/aheadfs.ko
work=/run/aheadfs-bench

die() { echo "bench/prefetch: $*" >&2; exit 1; }

mkdir -p "$out" "$work"
mount -t tmpfs -o size=64M bench "$work"
cleanup() {
	set +e
	umount "$work/mnt" "$work/lower" 2>/dev/null
	rmmod null_blk 2>/dev/null
	umount "$work" 2>/dev/null
}
trap cleanup EXIT
[ -r "$ko" ] || die "no module $ko (make modules)"
lsmod | grep -qw aheadfs || insmod "$ko"
[ -z "${BENCH_TRACE:-}" ] || [ -d "$tracefs/events/aheadfs" ] ||
	die "BENCH_TRACE: no $tracefs/events/aheadfs (tracefs not mounted?)"
! lsmod | grep -qw null_blk || die "null_blk is loaded already: this benchmark loads it with its own parameters"
command -v gcc >/dev/null || die "no gcc (the reader is built in the guest)"
# The raw rows go to the output directory as they are measured: a guest
# killed midway leaves them (the summary below can be rerun on them).
tsv=$out/prefetch-$rel.tsv probes=$out/prefetch-$rel.probes
: >"$tsv"
: >"$probes"

# The reader: sequential read(2)s of REQ bytes, each timed.  Static, on
# tmpfs, its memory locked and its buffers touched before the clock starts:
# the timed loop faults in nothing from the 9p root.  Prints "ns p50_ns
# p90_ns p99_ns wait_ns cpu_ns runq_ns blocked_ns cpus": wait is the time
# the CPUs were idle during the loop, summed over them (the guest's time
# less what its tasks ran, /proc/schedstat; on one vCPU, the time nothing
# could run because everything waited on the device); blocked is the loop's
# time less the reader's own CPU time and run-queue delay
# (/proc/self/schedstat): the time it slept, on the device or while the
# prefetch worker ran.  With a third argument FILE it writes each request's
# latency there, in ns, in request order.  "reader DEV probe": the median of
# 5 direct 4 KiB reads of the device, ns.
cat >"$work/reader.c" <<'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
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
 * What the tasks of every CPU have run, ns (field 7 of /proc/schedstat's
 * cpu lines), and in *ncpu how many CPUs.  A task's run is added when it
 * leaves the CPU: a nanosleep first makes the reader leave it, so that its
 * own time up to here is in the sum.
 */
static long long cpu_run(int *ncpu)
{
	static char b[1 << 16];
	const struct timespec tick = { 0, 1 };
	long long sum = 0, v[7];
	ssize_t n;
	char *p;
	FILE *f;

	nanosleep(&tick, NULL);
	f = fopen("/proc/schedstat", "r");
	if (!f)
		return -1;
	n = fread(b, 1, sizeof(b) - 1, f);
	fclose(f);
	b[n > 0 ? n : 0] = 0;
	*ncpu = 0;
	for (p = strstr(b, "\ncpu"); p; p = strstr(p + 1, "\ncpu")) {
		if (sscanf(p + 1, "cpu%*d %lld %lld %lld %lld %lld %lld %lld",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			   &v[6]) != 7)
			return -1;
		sum += v[6];
		++*ncpu;
	}
	return *ncpu ? sum : -1;
}

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long long *lat, t0, t1, c0, c1, r0, r1, u0, u1, idle;
	size_t req, n = 0, max;
	int fd, sfd, ncpu = 0;
	struct stat st;
	char *buf;

	if (argc < 3)
		return 2;
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		perror("mlockall");
	/* The nanosleeps of cpu_run() as short as they can be. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (!strcmp(argv[2], "probe")) {
		long long p[5];

		fd = open(argv[1], O_RDONLY | O_DIRECT);
		if (fd < 0 || posix_memalign((void **)&buf, 4096, 4096))
			return 1;
		for (int i = 0; i < 5; i++) {
			t0 = now(CLOCK_MONOTONIC);
			if (pread(fd, buf, 4096, (off_t)i * 1048576) != 4096)
				return 1;
			p[i] = now(CLOCK_MONOTONIC) - t0;
		}
		qsort(p, 5, sizeof(*p), cmp);
		printf("%lld\n", p[2]);
		return 0;
	}
	req = strtoul(argv[2], NULL, 0);
	fd = open(argv[1], O_RDONLY);
	sfd = open("/proc/self/schedstat", O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return 1;
	max = st.st_size / req + 2;
	lat = calloc(max, sizeof(*lat));
	buf = malloc(req);
	if (!lat || !buf)
		return 1;
	memset(buf, 1, req);
	memset(lat, 0, max * sizeof(*lat));
	runq(sfd);
	now(CLOCK_PROCESS_CPUTIME_ID);
	cpu_run(&ncpu);
	u0 = cpu_run(&ncpu);
	r0 = runq(sfd);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	t0 = now(CLOCK_MONOTONIC);
	for (;;) {
		long long a = now(CLOCK_MONOTONIC);
		ssize_t r = read(fd, buf, req);

		if (n < max)
			lat[n++] = now(CLOCK_MONOTONIC) - a;
		if (r < 0) {
			perror("read");
			return 1;
		}
		if ((size_t)r < req)
			break;
	}
	t1 = now(CLOCK_MONOTONIC);
	c1 = now(CLOCK_PROCESS_CPUTIME_ID);
	r1 = runq(sfd);
	u1 = cpu_run(&ncpu);
	idle = u0 < 0 || u1 < 0 ? -1 : ncpu * (t1 - t0) - (u1 - u0);
	if (argc > 3) {
		FILE *f = fopen(argv[3], "w");

		for (size_t i = 0; f && i < n; i++)
			fprintf(f, "%lld\n", lat[i]);
		if (!f || fclose(f))
			perror(argv[3]);
	}
	qsort(lat, n, sizeof(*lat), cmp);
#define Q(p) lat[(size_t)((p) * n) < n ? (size_t)((p) * n) : n - 1]
	printf("%lld %lld %lld %lld %lld %lld %lld %lld %d\n", t1 - t0, Q(0.5),
	       Q(0.9), Q(0.99), idle, c1 - c0, r1 - r0,
	       (t1 - t0) - (c1 - c0) - (r1 - r0), ncpu);
	return 0;
}
EOF
gcc -O2 -Wall -static -o "$work/reader" "$work/reader.c" || die "the reader does not build"

lower=$work/lower mnt=$work/mnt
mkdir -p "$lower" "$mnt"
blk=/dev/nullb0 bname=nullb0

dev_reads() { awk '{ print $1 }' "/sys/block/$bname/stat"; }
stats() {	# stats SYSFSDIR: the counters the rows carry, one line
	awk '$1 ~ /^(read_reqs|absent_reqs|wait_reqs|read_wait_ns|uncached_tails|prefetch_demand_chunks|prefetch_chunks|window_peak)$/ { printf "%s=%s ", $1, $2 }' "$1/stats"
}
# nullblk LAT: null_blk loaded afresh, memory-backed, completing each
# command LAT ms after it was queued (its hrtimer), or at once for 0.
nullblk() {
	local irq="irqmode=0"
	[ "$1" = 0 ] || irq="irqmode=2 completion_nsec=$(($1 * 1000000))"
	! lsmod | grep -qw null_blk || rmmod null_blk
	# shellcheck disable=SC2086
	modprobe null_blk nr_devices=1 queue_mode=2 memory_backed=1 gb=1 \
		bs=4096 max_sectors=2560 hw_queue_depth=64 submit_queues=1 $irq ||
		die "modprobe null_blk $irq failed"
	udevadm settle 2>/dev/null || true
	[ -b "$blk" ] || die "no $blk"
	[ "$(cat /sys/module/null_blk/parameters/memory_backed)" = Y ] ||
		die "null_blk is not memory-backed"
}
devdesc="null_blk memory-backed 1 GiB, 4 KiB blocks, max_sectors 2560, depth 64; L ms: irqmode=2 completion_nsec=L*10^6 (hrtimer), 0 ms: irqmode=0"

for lat in 0 $latencies; do
	dev=fast
	[ "$lat" = 0 ] || dev=delay
	nullblk "$lat"
	# No lazy init: a background inode-table writer would steal the reads.
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$blk" >/dev/null
	mount "$blk" "$lower"
	# Written while the device charges its latency (writes too): the
	# file's blocks the same for every latency, one mkfs and one dd.
	dd if=/dev/urandom of="$lower/f" bs=1M count="$size_mib" status=none
	umount "$lower"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	probe=$("$work/reader" "$blk" probe) || die "probe of $blk failed"
	printf '%s\t%s\n' "$lat" "$probe" >>"$probes"
	if [ "$lat" != 0 ] && [ "$probe" -lt $((lat * 900000)) ]; then
		die "$blk at $lat ms: a direct read took $probe ns (irqmode=2 ignored?)"
	fi
	mount "$blk" "$lower"
	mount -t aheadfs -o prefetch=ahead "$lower" "$mnt"
	sysfs=/sys/fs/aheadfs/$(mountpoint -d "$mnt")
	[ -d "$sysfs" ] || die "no $sysfs"
	echo "# $clock clock, $dev, $lat ms per command (a direct 4 KiB read: $probe ns): $(cat /sys/block/$bname/queue/read_ahead_kb) KiB lower readahead, max $(cat /sys/block/$bname/queue/max_sectors_kb) KiB per command, txn $(cat "$sysfs/txn_kb") KiB, window $(cat "$sysfs/window_kb") KiB" >&2
	for req in $sizes; do
	    for round in $(seq "$rounds"); do
		for mode in $modes hot; do
			f=$mnt/f
			case $mode in
			lower) f=$lower/f ;;
			hot) echo ahead >"$sysfs/prefetch" ;;
			*) echo "$mode" >"$sysfs/prefetch" ;;
			esac
			if [ "$mode" = hot ]; then
				# Warm: the whole file in the cache, then timed.
				cat "$f" >/dev/null
			else
				sync
				echo 3 >/proc/sys/vm/drop_caches
			fi
			s0=$(stats "$sysfs") r0=$(dev_reads)
			tr_on=
			if [ -n "${BENCH_TRACE:-}" ] && [ "$mode" = ahead ]; then
				tr_on=1
				: >"$tracefs/trace"
				echo 65536 >"$tracefs/buffer_size_kb"
				for e in aheadfs_read aheadfs_prefetch aheadfs_window; do
					echo 1 >"$tracefs/events/aheadfs/$e/enable"
				done
			fi
			read -r ns p50 p90 p99 wait cpu runq blocked cpus < <("$work/reader" "$f" "$req" "$work/series")
			s1=$(stats "$sysfs") r1=$(dev_reads)
			if [ -n "$tr_on" ]; then
				echo 0 >"$tracefs/events/aheadfs/enable"
				cp "$tracefs/trace" "$out/trace-$rel-$dev-$lat-$req.txt"
			fi
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rel" \
				"$dev" "$lat" "$mode" "$req" "$ns" "$p50" "$p90" \
				"$p99" "$((r1 - r0))" "$s0" "$s1" "$round" \
				"$wait" "$cpu" "$runq" "$blocked" "$cpus" \
				"$(tr '\n' ' ' <"$work/series")" >>"$tsv"
			echo "# $dev $lat ms, $req B, $mode (run $round/$rounds): $((size_mib * 1000000000 / ns)) MiB/s, wait $((wait / 1000000)) ms" >&2
		done
	    done
	done
	umount "$mnt"
	umount "$lower"
	rmmod null_blk
done

# The CPU model (scripts/bench-run's BENCH_CPU): with ERMS, the clock counts
# a string copy or clear one byte an iteration.
cpu="no erms (rep movsq/stosq)"
! grep -qw erms /proc/cpuinfo || cpu="erms (rep movsb/stosb)"
python3 - "$tsv" "$out" "$rel" "$size_mib" "$clock" "$devdesc" "$probes" "$cpu" <<'EOF'
import glob, json, os, sys

tsv, out, rel, size_mib, clock, devdesc, probes, cpu = sys.argv[1:9]
size_mib = int(size_mib)
probe_ms = {int(l.split()[0]): round(int(l.split()[1]) / 1e6, 3)
            for l in open(probes) if l.strip()}
def kv(s):
    return {k: int(v) for k, v in (x.split("=") for x in s.split())}
runs, hots = {}, {}
for line in open(tsv):
    f = line.rstrip("\n").split("\t")
    lat, req, ns = int(f[2]), int(f[4]), int(f[5])
    mib_s = round(size_mib / (ns / 1e9), 1)
    key = (f[1], lat, f[3], req)
    if f[3] == "hot":
        hots.setdefault((f[1], lat, req), []).append(mib_s)
    else:
        runs.setdefault(key, []).append((mib_s, f))
def median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2]
hot = {k: median(v) for k, v in hots.items()}
rows = []
ms = lambda x: round(int(x) / 1e6, 2)
for key, rs in runs.items():
    # The median run by rate (the lower one of the middle two), whole.
    rs.sort(key=lambda x: x[0])
    mib_s, f = rs[(len(rs) - 1) // 2]
    (k, dev, lat, mode, req, ns, p50, p90, p99, reads, s0, s1) = f[:12]
    wait, cpu_ns, runq, blocked, cpus = f[13:18]
    series = [int(x) for x in f[18].split()]
    # Requests that took more than twice the median, and the first one.
    slow = sum(1 for x in series if x > 2 * int(p50))
    lat, req = int(lat), int(req)
    a, b = kv(s0), kv(s1)
    d = lambda n: None if mode == "lower" else b.get(n, 0) - a.get(n, 0)
    rows.append({"kernel": rel, "clock": clock, "cpu": cpu, "device": dev,
                 "latency_ms": lat, "probe_ms": probe_ms.get(lat),
                 "mode": mode, "req_bytes": req, "mib_s": mib_s,
                 "p50_ms": ms(p50), "p90_ms": ms(p90), "p99_ms": ms(p99),
                 "wait_ms": ms(wait), "cpu_ms": ms(cpu_ns), "runq_ms": ms(runq),
                 "blocked_ms": ms(blocked), "cpus": int(cpus),
                 "first_ms": ms(series[0]) if series else None,
                 "slow_reqs": slow,
                 "dev_reads": int(reads),
                 "reqs": d("read_reqs"), "absent_reqs": d("absent_reqs"),
                 "wait_reqs": d("wait_reqs"),
                 "kernel_wait_ms": None if mode == "lower" else round(d("read_wait_ns") / 1e6, 2),
                 "uncached_tails": d("uncached_tails"),
                 "demand_chunks": d("prefetch_demand_chunks"),
                 "prefetch_chunks": d("prefetch_chunks"),
                 "window_peak": None if mode == "lower" else b.get("window_peak"),
                 "rounds": len(rs), "mib_s_min": rs[0][0],
                 "mib_s_max": rs[-1][0]})
for r in rows:
    r["hot_mib_s"] = hot.get((r["device"], r["latency_ms"], r["req_bytes"]))
by = {(r["latency_ms"], r["mode"], r["req_bytes"]): r for r in rows}
# The wait beyond the same run's on the undelayed device: what the device's
# latency added.
for r in rows:
    z = by.get((0, r["mode"], r["req_bytes"]))
    r["wait_over_0ms_ms"] = round(r["wait_ms"] - z["wait_ms"], 2) if z else None
lats = sorted({r["latency_ms"] for r in rows})
sizes = sorted({r["req_bytes"] for r in rows})
ratios = []
def add(name, lat, req, v, target, op=">=", lower=None):
    met = v >= target if op == ">=" else v <= target
    q = {"kernel": rel, "clock": clock, "latency_ms": lat,
         "ratio": name, "req_bytes": req, "value": round(v, 3),
         "target": target, "op": op, "met": met}
    if lower is not None:
        q["lower_value"] = round(lower, 3)
    ratios.append(q)
def ratio(name, lat, a, b, req, target, lb=None):
    x, y = by.get((lat, a, req)), by.get((lb if lb is not None else lat, b, req))
    if x and y and y["mib_s"]:
        add(name, lat, req, x["mib_s"] / y["mib_s"], target)
for lat in lats:
    for s in sizes:
        r = by.get((lat, "ahead", s))
        if lat == 0:
            ratio("ahead/lower", lat, "ahead", "lower", s, 0.97)
        else:
            if s == 8650752 and lat == 10:
                ratio("ahead/legacy", lat, "ahead", "legacy", s, 2.0)
            ratio("ahead/lower", lat, "ahead", "lower", s, 1.2)
            ratio("ahead/kernel", lat, "ahead", "kernel", s, 1.0)
            # Latency hidden: ahead at L ms over ahead at 0 ms.
            ratio("latency hidden", lat, "ahead", "ahead", s, 0.9, lb=0)
            # The device wait in the reader's loop, in device latencies:
            # the CPU's idle time, which is that on one vCPU only.
            if r and r["probe_ms"] and r["cpus"] == 1:
                add("ahead wait/latency", lat, s, r["wait_ms"] / r["probe_ms"], 2.0, "<=")
                if r["wait_over_0ms_ms"] is not None:
                    add("ahead (wait-w0)/lat", lat, s, r["wait_over_0ms_ms"] / r["probe_ms"], 2.0, "<=")
        # Beside it the lower's own, read directly in the same run: what
        # the kernel's page cache and allocator make uneven without aheadfs.
        if r and r["p50_ms"]:
            lw = by.get((lat, "lower", s))
            add("ahead p99/p50", lat, s, r["p99_ms"] / r["p50_ms"], 2.0, "<=",
                lw["p99_ms"] / lw["p50_ms"] if lw and lw["p50_ms"] else None)
mine = {"kernel": rel, "clock": clock, "cpu": cpu, "device": devdesc,
        "file_mib": size_mib, "probe_ms": probe_ms, "results": rows,
        "ratios": ratios}
json.dump(mine, open(os.path.join(out, "prefetch-%s.json" % rel), "w"), indent=1)
allr, allq, meta = [], [], []
for p in sorted(glob.glob(os.path.join(out, "prefetch-*.json"))):
    d = json.load(open(p))
    allr += d["results"]
    allq += d["ratios"]
    meta.append({k: d.get(k) for k in ("kernel", "clock", "cpu", "device", "file_mib", "probe_ms")})
json.dump({"runs": meta, "results": allr, "ratios": allq},
          open(os.path.join(out, "prefetch.json"), "w"), indent=1)

print("kernel %s, %s clock, CPU %s, %d MiB cold file; the median of %s runs per row" % (
    rel, clock, cpu, size_mib, "/".join(str(n) for n in sorted({r["rounds"] for r in rows}))))
print("device: %s" % devdesc)
print("a direct 4 KiB read took (ms): %s" % ", ".join(
    "%g at %d ms" % (probe_ms[l], l) for l in sorted(probe_ms)))
print("MiB/s (guest time) per mode; hot: the same file cached, through aheadfs")
modes = ["lower", "kernel", "legacy", "ahead"]
for lat in lats:
    print("\n%d ms per command" % lat)
    print("%9s" % "req" + "".join(" %8s" % m for m in modes + ["hot"]) +
          " %6s %6s %6s %6s" % ("a/leg", "a/low", "a/ker", "hidden"))
    for s in sizes:
        row = "%9d" % s
        for m in modes:
            r = by.get((lat, m, s))
            row += " %8s" % ("%.1f" % r["mib_s"] if r else "-")
        h = (by.get((lat, "ahead", s)) or {}).get("hot_mib_s")
        row += " %8s" % ("%.1f" % h if h else "-")
        a = by.get((lat, "ahead", s))
        for m, l2 in (("legacy", lat), ("lower", lat), ("kernel", lat), ("ahead", 0)):
            b = by.get((l2, m, s))
            row += " %6s" % ("%.2f" % (a["mib_s"] / b["mib_s"]) if a and b and b["mib_s"] else "-")
        print(row)
    print("%9s %s" % ("req", "per mode: p50/p99 ms per request, p99/p50, the first request's ms, requests over 2x p50, wait (idle) ms in the loop (beyond 0 ms's), the reader's blocked ms; aheadfs: absent/waited/all requests, read_wait_ns in ms"))
    for s in sizes:
        print("%9d" % s)
        for m in modes:
            r = by.get((lat, m, s))
            if not r:
                continue
            c = "" if r["reqs"] is None else "  %d/%d/%d, read_wait %.2f" % (
                r["absent_reqs"], r["wait_reqs"], r["reqs"],
                r["kernel_wait_ms"])
            w0 = "" if lat == 0 or r["wait_over_0ms_ms"] is None else "(%.2f)" % r["wait_over_0ms_ms"]
            print("%9s %-6s %8.2f/%-8.2f %6.2f  first %8.2f  slow %4d  wait %8.2f %-10s blocked %8.2f%s" % (
                "", m, r["p50_ms"], r["p99_ms"],
                r["p99_ms"] / r["p50_ms"] if r["p50_ms"] else 0,
                r["first_ms"] or 0, r["slow_reqs"], r["wait_ms"], w0,
                r["blocked_ms"], c))
print("\nratios (target):")
for q in ratios:
    print("  %3d ms %-19s %9d  %7.2f  (%s %.2f) %s%s" % (
        q["latency_ms"], q["ratio"], q["req_bytes"], q["value"], q["op"],
        q["target"], "met" if q["met"] else "MISSED",
        "  (the lower read directly: %.2f)" % q["lower_value"]
        if "lower_value" in q else ""))
EOF
