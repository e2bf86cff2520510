#!/usr/bin/env bash
# Benchmark (in a guest): the cost of tracing on cached 4 KiB reads through
# aheadfs, with tracing off, with `aheadtrace hist` and with `aheadtrace
# oplog` running, in one guest run.  Rounds interleave the three and the
# median of each is reported.  Writes build/bench/tracing.json:
#   {"results": [{"kernel": K, "tracing": "off"|"hist"|"oplog", "ops_s": N}],
#    "ratios": [{"kernel": K, "hist": R, "oplog": R}]}
# (entries of other kernels already in the file are kept) and prints a table.
#
#   bench/tracing.sh [ROUNDS] [SECONDS]
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5} secs=${2:-2}
rel=$(uname -r)
at=$top/bpf/aheadtrace
out=$top/build/bench/tracing.json
die() { echo "bench/tracing: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (run it in a guest: make bench BENCH=tracing)"
[ -x "$at" ] || die "build bpf/ first (make -C bpf)"
command -v jq >/dev/null || die "jq missing"
if [ ! -e /sys/module/aheadfs ]; then
	insmod "$top/build/kmod/$rel/aheadfs.ko" || die "cannot load build/kmod/$rel/aheadfs.ko"
fi
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || die "cannot mount bpffs"
modprobe loop 2>/dev/null

work=$(mktemp -d /run/aheadfs-bench.XXXXXX) || die "mktemp"
mount -t tmpfs -o size=512M bench "$work" || die "tmpfs"
tracer=
cleanup() {
	[ -n "$tracer" ] && kill -INT "$tracer" 2>/dev/null && wait "$tracer"
	umount "$work/mnt" "$work/lower" 2>/dev/null
	umount "$work"
	rmdir "$work"
}
trap cleanup EXIT
truncate -s 256M "$work/img" && mkfs.ext4 -q -F "$work/img" >/dev/null || die "mkfs"
mkdir "$work/lower" "$work/mnt"
mount -o loop "$work/img" "$work/lower" || die "mount lower"
mount -t aheadfs "$work/lower" "$work/mnt" || die "mount aheadfs"
head -c $((16 << 20)) /dev/zero >"$work/lower/f"
cat "$work/mnt/f" >/dev/null	# cached from here on

# One measurement: 4 KiB reads of the cached file, passes until SECS.
measure() {
	local t0 t1 ops=0
	t0=$(date +%s%N)
	t1=$t0
	while [ $((t1 - t0)) -lt $((secs * 1000000000)) ]; do
		dd if="$work/mnt/f" of=/dev/null bs=4096 status=none
		ops=$((ops + 4096))
		t1=$(date +%s%N)
	done
	echo $((ops * 1000000000 / (t1 - t0)))
}

start() {
	local line
	mkfifo "$work/fifo.$1"
	"$at" "$1" -m "$work/mnt" >/dev/null 2>"$work/fifo.$1" &
	tracer=$!
	exec 3<"$work/fifo.$1"
	read -r -t 120 line <&3 && [ "${line#Tracing}" != "$line" ] ||
		die "aheadtrace $1 did not start: $line"
	rm -f "$work/fifo.$1"
}
stop() {
	kill -INT "$tracer"
	wait "$tracer"
	tracer=
	cat <&3 >/dev/null
	exec 3<&-
}

declare -A runs
for r in $(seq "$rounds"); do
	for mode in off hist oplog; do
		[ "$mode" = off ] || start "$mode"
		runs[$mode]="${runs[$mode]:-} $(measure)"
		[ "$mode" = off ] || stop
	done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
off=$(median <<<"${runs[off]}")
hist=$(median <<<"${runs[hist]}")
oplog=$(median <<<"${runs[oplog]}")

mkdir -p "$(dirname "$out")"
old='{"results": [], "ratios": []}'
[ -s "$out" ] && jq -e . "$out" >/dev/null 2>&1 && old=$(cat "$out")
jq --arg k "$rel" --argjson off "$off" --argjson hist "$hist" --argjson oplog "$oplog" '
	.results = ([.results[]? | select(.kernel != $k)] + [
		{kernel: $k, tracing: "off", ops_s: $off},
		{kernel: $k, tracing: "hist", ops_s: $hist},
		{kernel: $k, tracing: "oplog", ops_s: $oplog}]) |
	.ratios = ([.ratios[]? | select(.kernel != $k)] + [
		{kernel: $k,
		 hist: ($hist / $off * 1000 | round / 1000),
		 oplog: ($oplog / $off * 1000 | round / 1000)}])
' <<<"$old" >"$out.tmp" && mv "$out.tmp" "$out"

echo "cached 4 KiB reads through aheadfs, $rel, median of $rounds rounds of ${secs}s"
printf '%-8s %12s %8s   %s\n' tracing ops/s ratio "runs (ops/s)"
for mode in off hist oplog; do
	m=$(median <<<"${runs[$mode]}")
	printf '%-8s %12d %8s  %s\n' "$mode" "$m" \
		"$(awk -v a="$m" -v b="$off" 'BEGIN { printf "%.3f", a / b }')" "${runs[$mode]}"
done
echo "(target: hist costs at most 5%, ratio >= 0.950)"
