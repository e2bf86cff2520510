#!/usr/bin/env bash
# vm-run-opts: -drive driver=null-co,size=4G,read-zeroes=on,if=none,id=slow,snapshot=on,throttling.iops-total=150,throttling.bps-total=157286400 -device virtio-blk-pci,drive=slow,serial=aheadfs-slow -drive driver=null-co,size=4G,read-zeroes=on,if=none,id=fast,snapshot=on -device virtio-blk-pci,drive=fast,serial=aheadfs-fast
#
# bench/prefetch.sh: cold sequential read throughput through aheadfs, run
# inside a guest by `make bench BENCH=prefetch` (scripts/bench-run).
#
# Two drives (the options above): "slow" is throttled by QEMU to 150 requests
# and 150 MiB/s, which charges per request like a disk seek; "fast" is the
# same without the throttle.  Both are QEMU null devices with a temporary
# overlay (snapshot=on), so nothing needs to exist on the host and what the
# guest writes lives only for this run.  On each, an ext4 lower holds one
# file; for every request size of issue 3 and every mode (the lower read
# directly, aheadfs kernel, legacy and ahead) the page cache is dropped and
# the file is read once with dd; each measurement is repeated $BENCH_REPS
# times, interleaved, and the median is kept.
#
# Output: build/bench/prefetch-<release>.json (this kernel) and
# build/bench/prefetch.json (every kernel measured so far), a "results" list
# of {"kernel", "device", "mode", "req_bytes", "mib_s", "reqs",
# "absent_reqs"} plus the target "ratios"; and a table on stdout.  For mode
# "lower" reqs is the count of dd's reads and absent_reqs is null (only
# aheadfs meters the page cache).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rel=$(uname -r)
out=$top/build/bench
reps=${BENCH_REPS:-3}
size_mib=${BENCH_FILE_MIB:-64}
sizes="4096 131072 1048576 8388608 8650752 16777216 33554432"
modes="lower kernel legacy ahead"
ko=$top/build/kmod/$rel/aheadfs.ko
work=/run/aheadfs-bench

die() { echo "bench/prefetch: $*" >&2; exit 1; }

disk() {	# disk SERIAL: the /dev node of the virtio disk with that serial
	local d
	for d in /sys/block/vd*; do
		[ "$(cat "$d/serial" 2>/dev/null)" = "$1" ] && { echo "/dev/${d##*/}"; return; }
	done
	die "no virtio disk with serial $1 (run through make bench BENCH=prefetch)"
}

stat_of() {	# stat_of SYSFSDIR NAME
	awk -v n="$2" '$1 == n { print $2 }' "$1/stats"
}

mkdir -p "$out" "$work"
mount -t tmpfs -o size=64M bench "$work"
[ -r "$ko" ] || die "no module $ko (make modules)"
lsmod | grep -qw aheadfs || insmod "$ko"
tsv=$work/results.tsv
: >"$tsv"

for dev in slow fast; do
	blk=$(disk "aheadfs-$dev")
	lower=$work/$dev-lower mnt=$work/$dev-mnt
	mkdir -p "$lower" "$mnt"
	# No lazy init: a background inode-table writer would steal the IOPS.
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$blk" 1G >/dev/null
	mount "$blk" "$lower"
	dd if=/dev/urandom of="$lower/f" bs=1M count="$size_mib" status=none
	sync
	mount -t aheadfs -o prefetch=ahead "$lower" "$mnt"
	sysfs=/sys/fs/aheadfs/$(mountpoint -d "$mnt")
	[ -d "$sysfs" ] || die "no $sysfs"
	echo "# $dev: $blk, $(cat /sys/block/${blk#/dev/}/queue/read_ahead_kb) KiB lower readahead, txn $(cat "$sysfs/txn_kb") KiB, window $(cat "$sysfs/window_kb") KiB" >&2
	for rep in $(seq "$reps"); do
		for req in $sizes; do
			for mode in $modes; do
				if [ "$mode" = lower ]; then
					f=$lower/f
				else
					f=$mnt/f
					echo "$mode" >"$sysfs/prefetch"
				fi
				sync
				echo 3 >/proc/sys/vm/drop_caches
				r0=$(stat_of "$sysfs" read_reqs)
				a0=$(stat_of "$sysfs" absent_reqs)
				t0=$(date +%s%N)
				dd if="$f" of=/dev/null bs="$req" status=none
				t1=$(date +%s%N)
				r1=$(stat_of "$sysfs" read_reqs)
				a1=$(stat_of "$sysfs" absent_reqs)
				if [ "$mode" = lower ]; then
					reqs=$(( (size_mib * 1048576 + req - 1) / req + 1 ))
					absent=null
				else
					reqs=$((r1 - r0)) absent=$((a1 - a0))
				fi
				printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rel" "$dev" \
					"$mode" "$req" "$rep" "$((t1 - t0))" "$reqs" \
					"$absent" >>"$tsv"
			done
		done
		echo "# $dev: repetition $rep of $reps done" >&2
	done
	umount "$mnt"
	umount "$lower"
done

python3 - "$tsv" "$out" "$rel" "$size_mib" <<'EOF'
import glob, json, os, statistics, sys

tsv, out, rel, size_mib = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
runs = {}
for line in open(tsv):
    k, dev, mode, req, rep, ns, reqs, absent = line.split("\t")
    key = (dev, mode, int(req))
    runs.setdefault(key, []).append(
        (int(ns), int(reqs), None if absent.strip() == "null" else int(absent)))
results = []
for (dev, mode, req), rs in runs.items():
    ns = statistics.median(r[0] for r in rs)
    med = sorted(rs, key=lambda r: r[0])[len(rs) // 2]
    results.append({"kernel": rel, "device": dev, "mode": mode,
                    "req_bytes": req,
                    "mib_s": round(size_mib / (ns / 1e9), 1),
                    "reqs": med[1], "absent_reqs": med[2]})
by = {(r["device"], r["mode"], r["req_bytes"]): r for r in results}
ratios = []
def ratio(name, dev, a, b, req, target):
    x, y = by.get((dev, a, req)), by.get((dev, b, req))
    if not x or not y or not y["mib_s"]:
        return
    v = round(x["mib_s"] / y["mib_s"], 2)
    ratios.append({"kernel": rel, "device": dev, "ratio": name,
                   "req_bytes": req, "value": v, "target": target,
                   "met": v >= target})
sizes = sorted({r["req_bytes"] for r in results})
ratio("ahead/legacy", "slow", "ahead", "legacy", 8650752, 2.0)
for s in sizes:
    ratio("ahead/lower", "slow", "ahead", "lower", s, 1.0)
for s in sizes:
    ratio("ahead/lower", "fast", "ahead", "lower", s, 0.95)
mine = {"kernel": rel, "file_mib": size_mib, "results": results,
        "ratios": ratios}
json.dump(mine, open(os.path.join(out, "prefetch-%s.json" % rel), "w"),
          indent=1)
# Every kernel measured so far, in one file.
allr, allq = [], []
for p in sorted(glob.glob(os.path.join(out, "prefetch-*.json"))):
    d = json.load(open(p))
    allr += d["results"]
    allq += d["ratios"]
json.dump({"results": allr, "ratios": allq},
          open(os.path.join(out, "prefetch.json"), "w"), indent=1)

print("kernel %s, %d MiB file, median MiB/s (absent requests / requests)" % (rel, size_mib))
modes = ["lower", "kernel", "legacy", "ahead"]
for dev in ("slow", "fast"):
    print("\n%-6s %10s" % (dev, "req") + "".join("%18s" % m for m in modes))
    for s in sizes:
        row = "%-6s %10d" % ("", s)
        for m in modes:
            r = by.get((dev, m, s))
            a = "-" if r["absent_reqs"] is None else str(r["absent_reqs"])
            row += "%18s" % ("%.1f (%s/%d)" % (r["mib_s"], a, r["reqs"]))
        print(row)
print("\nratios (target):")
for q in ratios:
    print("  %-4s %-13s %9d  %5.2f  (>= %.2f) %s" % (
        q["device"], q["ratio"], q["req_bytes"], q["value"], q["target"],
        "met" if q["met"] else "MISSED"))
EOF
umount "$work" 2>/dev/null || true
