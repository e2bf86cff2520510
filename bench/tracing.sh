#!/usr/bin/env bash
# Benchmark (in a guest): the cost of tracing on cached 4 KiB reads through
# aheadfs, with tracing off, with `aheadtrace hist` and with `aheadtrace
# oplog` running, in one guest run.  Rounds interleave the three and the
# median of each is reported.  Writes build/bench/tracing.json:
#   {"results": [{"kernel": K, "tracing": "off"|"hist"|"oplog", "ops_s": N}],
#    "ratios": [{"kernel": K, "hist": R, "oplog": R, "tracepoint_only": R}]}
# (a ratio is the median over rounds of that round's ops_s / the round's off)
# (entries of other kernels already in the file are kept) and prints a table.
#
#   bench/tracing.sh [ROUNDS] [SECONDS]
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-11} secs=${2:-1}
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
	[ -n "${tp:-}" ] && echo 0 >"$tp/enable" 2>/dev/null
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
command -v xfs_io >/dev/null || die "xfs_io missing (xfsprogs)"
# Size the passes so that a measurement takes about SECS untraced.
one=$(xfs_io -r -c "pread -b 4096 0 16m" "$work/mnt/f" | awk '/ ops; / { print $5 }')
passes=$(awk -v t="$one" -v s="$secs" 'BEGIN { p = int(s / (t > 0 ? t : 1)); print p < 1 ? 1 : p }')

# One measurement: 4 KiB preads of the cached file in one process (xfs_io
# times each pass itself), passes until about SECS; ops/s over all passes.
measure() {
	local cmds=() i
	for i in $(seq "$passes"); do cmds+=(-c "pread -b 4096 0 16m"); done
	xfs_io -r "${cmds[@]}" "$work/mnt/f" |
		awk '/ ops; / { ops += $3; t += $5 } END { printf "%d\n", ops / t }'
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

# The host is shared and TCG is noisy: each round measures the three back to
# back (in a rotating order), and the ratios are the medians of the
# per-round ratios.
# "tp" (table only) enables aheadfs_meta through ftrace with a filter that
# drops every event: the module's own cost of an enabled tracepoint (it reads
# the clock around each operation), without BPF.
tp=/sys/kernel/tracing/events/aheadfs/aheadfs_meta
[ -d "$tp" ] || tp=/sys/kernel/debug/tracing/events/aheadfs/aheadfs_meta
orders=("off hist oplog tp" "hist oplog tp off" "oplog tp off hist" "tp off hist oplog")
declare -A runs ratios v
for r in $(seq "$rounds"); do
	for mode in ${orders[$((r % 4))]}; do
		case $mode in
		hist|oplog) start "$mode" ;;
		tp) echo 'dev == 0' >"$tp/filter" && echo 1 >"$tp/enable" ;;
		esac
		v[$mode]=$(measure)
		runs[$mode]="${runs[$mode]:-} ${v[$mode]}"
		case $mode in
		hist|oplog) stop ;;
		tp) echo 0 >"$tp/enable" && echo 0 >"$tp/filter" ;;
		esac
	done
	for mode in hist oplog tp; do
		ratios[$mode]="${ratios[$mode]:-} $(awk -v a="${v[$mode]}" -v b="${v[off]}" 'BEGIN { printf "%.4f", b ? a / b : 0 }')"
	done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
off=$(median <<<"${runs[off]}")
hist=$(median <<<"${runs[hist]}")
oplog=$(median <<<"${runs[oplog]}")
rhist=$(median <<<"${ratios[hist]}")
roplog=$(median <<<"${ratios[oplog]}")
rtp=$(median <<<"${ratios[tp]}")

mkdir -p "$(dirname "$out")"
old='{"results": [], "ratios": []}'
[ -s "$out" ] && jq -e . "$out" >/dev/null 2>&1 && old=$(cat "$out")
jq --arg k "$rel" --argjson off "$off" --argjson hist "$hist" --argjson oplog "$oplog" \
	--argjson rhist "$rhist" --argjson roplog "$roplog" --argjson rtp "$rtp" '
	.results = ([.results[]? | select(.kernel != $k)] + [
		{kernel: $k, tracing: "off", ops_s: $off},
		{kernel: $k, tracing: "hist", ops_s: $hist},
		{kernel: $k, tracing: "oplog", ops_s: $oplog}]) |
	.ratios = ([.ratios[]? | select(.kernel != $k)] + [
		{kernel: $k, hist: ($rhist * 1000 | round / 1000),
		 oplog: ($roplog * 1000 | round / 1000),
		 tracepoint_only: ($rtp * 1000 | round / 1000)}])
' <<<"$old" >"$out.tmp" && mv "$out.tmp" "$out"

echo "cached 4 KiB reads through aheadfs, $rel, median of $rounds rounds of $passes x 4096 preads"
printf '%-8s %12s %8s   %s\n' tracing ops/s ratio "runs (ops/s)"
printf '%-8s %12d %8s  %s\n' off "$off" 1.000 "${runs[off]}"
printf '%-8s %12d %8.3f  %s\n' hist "$hist" "$rhist" "${runs[hist]}"
printf '%-8s %12d %8.3f  %s\n' oplog "$oplog" "$roplog" "${runs[oplog]}"
printf '%-8s %12d %8.3f  %s\n' tp "$(median <<<"${runs[tp]}")" "$rtp" "${runs[tp]}"
echo "tp: aheadfs_meta enabled through ftrace, every event filtered out (no BPF)"
echo "ratio: median of the per-round ratios to off (target: hist >= 0.950)"
