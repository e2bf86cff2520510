#!/usr/bin/env bash
# vm-run-opts: -drive driver=null-co,size=2G,read-zeroes=on,if=none,id=bench,snapshot=on -device virtio-blk-pci,drive=bench,serial=aheadfs-bench
# vm-run-memory: 3G
# vm-run-timeout: 5400
#
# bench/prefetch.sh: cold sequential read throughput and per-request latency
# through aheadfs, on a device where a miss costs what a disk charges: run
# inside a guest by `make bench BENCH=prefetch` (scripts/bench-run).
#
# Under TCG the guest's CPU, not a bandwidth cap, is the bottleneck, so a
# throttled drive never makes a cache miss cost anything.  What a miss costs
# on a storage node is latency (a seek, a round trip to a remote tier), so
# the drive here charges latency per read: dm-delay over one virtio-blk
# drive (a QEMU null device with a temporary overlay, nothing on the host),
# with every read delayed by $BENCH_LATENCIES ms (default "10 1": a disk
# seek, a fast remote tier) and, as the control, the same drive undelayed
# (latency 0: there ahead must cost nothing).  Writes are never delayed.
#
# For each latency, request size and mode (the lower read directly, aheadfs
# kernel, legacy, ahead) the page cache is dropped and a $BENCH_FILE_MIB MiB
# file (default 256) is read once, sequentially, by a reader that times
# every request; then the same file is read hot through aheadfs (the ceiling:
# what the cache delivers).  Reported per run: MiB/s, p50/p90/p99 request
# latency, the device's completed reads and aheadfs's stats deltas.  On the
# undelayed drive, where the guest's CPU alone sets the rate and one run
# varies by 2x, the modes run $BENCH_FAST_ROUNDS times (default 3) in
# alternation and each row is the median run, with the lowest and highest
# rate beside it; the delayed rows run $BENCH_ROUNDS times (default 1).
#
# Output: build/bench/prefetch-<release>.json (this kernel) and
# build/bench/prefetch.json (every kernel measured so far): "results", one
# object per run {"kernel", "device", "latency_ms", "mode", "req_bytes",
# "mib_s", "p50_ms", "p90_ms", "p99_ms", "hot_mib_s", "dev_reads", "reqs",
# "absent_reqs", "wait_reqs", "uncached_tails", "demand_chunks",
# "prefetch_chunks", "window_peak", "rounds", "mib_s_min", "mib_s_max"}
# (stats null for mode lower), and
# "ratios", each target with its value, met or MISSED; and a table.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rel=$(uname -r)
out=$top/build/bench
size_mib=${BENCH_FILE_MIB:-256}
latencies=${BENCH_LATENCIES:-10 1}
sizes=${BENCH_SIZES:-131072 1048576 8388608 8650752 16777216}
rounds=${BENCH_ROUNDS:-1}
fast_rounds=${BENCH_FAST_ROUNDS:-3}
modes="lower kernel legacy ahead"
ko=$top/build/kmod/$rel/aheadfs.ko
work=/run/aheadfs-bench

die() { echo "bench/prefetch: $*" >&2; exit 1; }
# Its story is the disk's latency (dm-delay), which is idle time: an
# instruction-counted clock (BENCH_CLOCK=icount, scripts/bench-run) skips it.
[ "${BENCH_CLOCK:-wall}" = wall ] ||
	die "BENCH_CLOCK=${BENCH_CLOCK}: this benchmark measures a disk's latency, which is idle time; run it with BENCH_CLOCK=wall"

disk() {	# disk SERIAL: the /dev node of the virtio disk with that serial
	local d
	for d in /sys/block/vd*; do
		[ "$(cat "$d/serial" 2>/dev/null)" = "$1" ] && { echo "/dev/${d##*/}"; return; }
	done
	die "no virtio disk with serial $1 (run through make bench BENCH=prefetch)"
}

mkdir -p "$out" "$work"
mount -t tmpfs -o size=64M bench "$work"
[ -r "$ko" ] || die "no module $ko (make modules)"
lsmod | grep -qw aheadfs || insmod "$ko"
modprobe dm-delay || die "no dm-delay module"
command -v dmsetup >/dev/null || die "no dmsetup (scripts/setup-deps installs it)"
tsv=$work/results.tsv
: >"$tsv"

# The reader: sequential reads of REQ bytes, each timed; prints
# "ns p50_ns p90_ns p99_ns".
cat >"$work/reader.py" <<'EOF'
import os, sys, time
path, req = sys.argv[1], int(sys.argv[2])
buf = bytearray(req)
mv = memoryview(buf)
fd = os.open(path, os.O_RDONLY)
lat = []
t0 = time.perf_counter_ns()
while True:
    a = time.perf_counter_ns()
    n = os.readv(fd, [mv])
    lat.append(time.perf_counter_ns() - a)
    if n < req:
        break
t1 = time.perf_counter_ns()
os.close(fd)
lat.sort()
def q(p):
    return lat[min(len(lat) - 1, int(p * len(lat)))]
print(t1 - t0, q(0.5), q(0.9), q(0.99))
EOF

blk=$(disk aheadfs-bench)
bname=${blk#/dev/}
lower=$work/lower mnt=$work/mnt
mkdir -p "$lower" "$mnt"
# No lazy init: a background inode-table writer would steal the reads.
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$blk" 1G >/dev/null
mount "$blk" "$lower"
dd if=/dev/urandom of="$lower/f" bs=1M count="$size_mib" status=none
umount "$lower"
sectors=$(blockdev --getsz "$blk")

dev_reads() { awk '{ print $1 }' "/sys/block/$bname/stat"; }
stats() {	# stats SYSFSDIR: the counters the rows carry, one line
	awk '$1 ~ /^(read_reqs|absent_reqs|wait_reqs|uncached_tails|prefetch_demand_chunks|prefetch_chunks|window_peak)$/ { printf "%s=%s ", $1, $2 }' "$1/stats"
}

for lat in 0 $latencies; do
	dev=fast
	if [ "$lat" != 0 ]; then
		dev=delay
		dmsetup create ahfs-bench --table "0 $sectors delay $blk 0 $lat $blk 0 0"
		mount /dev/mapper/ahfs-bench "$lower"
	else
		mount "$blk" "$lower"
	fi
	mount -t aheadfs -o prefetch=ahead "$lower" "$mnt"
	sysfs=/sys/fs/aheadfs/$(mountpoint -d "$mnt")
	[ -d "$sysfs" ] || die "no $sysfs"
	echo "# $dev, $lat ms per read: $(cat /sys/block/$bname/queue/read_ahead_kb) KiB lower readahead, txn $(cat "$sysfs/txn_kb") KiB, window $(cat "$sysfs/window_kb") KiB" >&2
	n=$rounds
	[ "$lat" = 0 ] && n=$fast_rounds
	for req in $sizes; do
	    for round in $(seq "$n"); do
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
			read -r ns p50 p90 p99 < <(python3 "$work/reader.py" "$f" "$req")
			s1=$(stats "$sysfs") r1=$(dev_reads)
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rel" \
				"$dev" "$lat" "$mode" "$req" "$ns" "$p50" "$p90" \
				"$p99" "$((r1 - r0))" "$s0" "$s1" "$round" >>"$tsv"
			echo "# $dev $lat ms, $req B, $mode (run $round/$n): $((size_mib * 1000000000 / ns)) MiB/s" >&2
		done
	    done
	done
	umount "$mnt"
	umount "$lower"
	[ "$lat" = 0 ] || dmsetup remove ahfs-bench
done

python3 - "$tsv" "$out" "$rel" "$size_mib" <<'EOF'
import glob, json, os, sys

tsv, out, rel, size_mib = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
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
for key, rs in runs.items():
    # The median run by rate (the lower one of the middle two), whole.
    rs.sort(key=lambda x: x[0])
    mib_s, f = rs[(len(rs) - 1) // 2]
    (k, dev, lat, mode, req, ns, p50, p90, p99, reads, s0, s1) = f[:12]
    lat, req = int(lat), int(req)
    a, b = kv(s0), kv(s1)
    d = lambda n: None if mode == "lower" else b.get(n, 0) - a.get(n, 0)
    rows.append({"kernel": rel, "device": dev, "latency_ms": lat,
                 "mode": mode, "req_bytes": req, "mib_s": mib_s,
                 "p50_ms": round(int(p50) / 1e6, 2),
                 "p90_ms": round(int(p90) / 1e6, 2),
                 "p99_ms": round(int(p99) / 1e6, 2),
                 "dev_reads": int(reads),
                 "reqs": d("read_reqs"), "absent_reqs": d("absent_reqs"),
                 "wait_reqs": d("wait_reqs"),
                 "uncached_tails": d("uncached_tails"),
                 "demand_chunks": d("prefetch_demand_chunks"),
                 "prefetch_chunks": d("prefetch_chunks"),
                 "window_peak": None if mode == "lower" else b.get("window_peak"),
                 "rounds": len(rs), "mib_s_min": rs[0][0],
                 "mib_s_max": rs[-1][0]})
for r in rows:
    r["hot_mib_s"] = hot.get((r["device"], r["latency_ms"], r["req_bytes"]))
by = {(r["device"], r["latency_ms"], r["mode"], r["req_bytes"]): r for r in rows}
lats = sorted({r["latency_ms"] for r in rows})
sizes = sorted({r["req_bytes"] for r in rows})
ratios = []
def add(name, lat, req, v, target, op=">="):
    met = v >= target if op == ">=" else v <= target
    ratios.append({"kernel": rel, "latency_ms": lat, "ratio": name,
                   "req_bytes": req, "value": round(v, 2), "target": target,
                   "op": op, "met": met})
def ratio(name, lat, a, b, req, target):
    dev = "fast" if lat == 0 else "delay"
    x, y = by.get((dev, lat, a, req)), by.get((dev, lat, b, req))
    if x and y and y["mib_s"]:
        add(name, lat, req, x["mib_s"] / y["mib_s"], target)
for lat in lats:
    if lat == 10:
        ratio("ahead/legacy", lat, "ahead", "legacy", 8650752, 2.0)
    for s in sizes:
        if lat == 0:
            ratio("ahead/lower", lat, "ahead", "lower", s, 0.97)
            continue
        ratio("ahead/lower", lat, "ahead", "lower", s, 1.2)
        ratio("ahead/kernel", lat, "ahead", "kernel", s, 1.0)
        r = by.get(("delay", lat, "ahead", s))
        if r and r["hot_mib_s"] and s >= 131072:
            add("ahead/hot", lat, s, r["mib_s"] / r["hot_mib_s"], 0.8)
        if r and r["p50_ms"]:
            add("ahead p99/p50", lat, s, r["p99_ms"] / r["p50_ms"], 2.0, "<=")
mine = {"kernel": rel, "file_mib": size_mib, "results": rows, "ratios": ratios}
json.dump(mine, open(os.path.join(out, "prefetch-%s.json" % rel), "w"), indent=1)
allr, allq = [], []
for p in sorted(glob.glob(os.path.join(out, "prefetch-*.json"))):
    d = json.load(open(p))
    allr += d["results"]
    allq += d["ratios"]
json.dump({"results": allr, "ratios": allq},
          open(os.path.join(out, "prefetch.json"), "w"), indent=1)

print("kernel %s, %d MiB cold file; the median of %s runs per row" % (
    rel, size_mib, "/".join(str(n) for n in sorted({r["rounds"] for r in rows}))))
print("each cell: MiB/s, p50/p99 ms per request, and for aheadfs requests")
print("absent/waited/all; hot: the same file cached, through aheadfs")
modes = ["lower", "kernel", "legacy", "ahead"]
W = 30
for lat in lats:
    dev = "fast" if lat == 0 else "delay"
    print("\n%s, %d ms per read" % (dev, lat))
    print("%9s" % "req" + "".join(" %*s" % (W, m) for m in modes) + " %7s" % "hot")
    for s in sizes:
        row = "%9d" % s
        for m in modes:
            r = by.get((dev, lat, m, s))
            if not r:
                row += " %*s" % (W, "-")
                continue
            c = "" if r["reqs"] is None else " %d/%d/%d" % (
                r["absent_reqs"], r["wait_reqs"], r["reqs"])
            row += " %*s" % (W, "%.1f %.1f/%.1f%s" % (
                r["mib_s"], r["p50_ms"], r["p99_ms"], c))
        h = hot.get((dev, lat, s))
        row += " %7s" % ("%.1f" % h if h else "-")
        print(row)
print("\nratios (target):")
for q in ratios:
    print("  %3d ms %-14s %9d  %6.2f  (%s %.2f) %s" % (
        q["latency_ms"], q["ratio"], q["req_bytes"], q["value"], q["op"],
        q["target"], "met" if q["met"] else "MISSED"))
EOF
umount "$work" 2>/dev/null || true
