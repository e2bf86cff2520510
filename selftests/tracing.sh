#!/usr/bin/env bash
# Tracing selftests (runs in a guest with aheadfs loaded): the operation
# log, histograms and prefetch counts that aheadtrace and the bpftool-only
# path report, checked against a scripted workload and the module's stats;
# file names, paths and per-process histograms against known names and comms;
# the ring buffer's size and lost records; Prometheus series bounded with
# 10,000 files; the heatmap of a dm-delay lower whose delay changes; the VFS
# program set on both layers, with fentry and with kprobes; clean unload.
# KTAP on stdout.
#
#   AHEADFS_SCRATCH=<empty dir on ext4 or xfs> selftests/tracing.sh
#
# guest-run: fstypes=ext4 (its subject is the tracer, not the lower: the
# programs hook aheadfs and the VFS, the same over any lower; 3 min a kernel)
set -u
# Installed for run_kselftest.sh and run with no lower: aheadfs_env.sh makes one.
[ -n "${AHEADFS_SCRATCH:-}${AHEADFS_ENV_RUNNING:-}" ] || [ ! -r "$(dirname "$0")/aheadfs_env.sh" ] ||
	AHEADFS_ENV_RUNNING=1 exec bash "$(dirname "$0")/aheadfs_env.sh" "$0" "$@"

here=$(cd "$(dirname "$0")" && pwd)
top=${AHEADFS_TOP:-}
for d in "$here/.." "$here/../.."; do
	[ -z "$top" ] && [ -x "$d/bpf/aheadtrace" ] && top=$(cd "$d" && pwd)
done
top=${top:-$here/..}
at=$top/bpf/aheadtrace
obj=$top/bpf/.output/aheadfs.bpf.o
vobj=$top/bpf/.output/vfs.bpf.o
bpftool=$(command -v bpftool || echo /usr/sbin/bpftool)
pin=/sys/fs/bpf/aheadfs

. "$(dirname "$0")/ktap.sh"

echo "TAP version 13"
[ "$(id -u)" = 0 ] || bail "needs root"
[ -n "${AHEADFS_SCRATCH:-}" ] && [ -d "$AHEADFS_SCRATCH" ] || bail "AHEADFS_SCRATCH is not a directory"
[ -e /sys/module/aheadfs ] || bail "aheadfs is not loaded"
[ -x "$at" ] && [ -r "$obj" ] && [ -r "$vobj" ] || bail "build bpf/ first (make -C bpf)"
command -v jq >/dev/null || bail "jq missing"
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || bail "cannot mount bpffs"

work=$AHEADFS_SCRATCH/tracing
lower=$work/lower mnt=$work/mnt log=$work/log
mkdir -p "$lower" "$mnt" "$log"
mount -t aheadfs "$lower" "$mnt" || bail "mount -t aheadfs $lower $mnt"
id=$(stat -c '%Hd:%Ld' "$mnt")
kdev=$(( ($(stat -c %Hd "$mnt") << 20) | $(stat -c %Ld "$mnt") ))
ldev=$(stat -c '%Hd:%Ld' "$lower")
sys=/sys/fs/aheadfs/$id
cleanup() {
	[ -n "${tracer:-}" ] && kill -INT "$tracer" 2>/dev/null && wait "$tracer"
	rm -rf "$pin" /sys/fs/bpf/aheadvfs
	umount "$work/mnt3" "$work/mnt2" "$mnt" "$work/dmnt" "$work/dlower" 2>/dev/null
	DM_DISABLE_UDEV=1 dmsetup remove --retry ahtest-delay 2>/dev/null
	[ -n "${dloop:-}" ] && losetup -d "$dloop" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
[ -r "$sys/stats" ] || bail "no $sys/stats"

stats() { cat "$sys/stats" >"$1"; }
# delta BEFORE AFTER NAME
delta() {
	echo $(( $(awk -v k="$3" '$1 == k { print $2 }' "$2") - $(awk -v k="$3" '$1 == k { print $2 }' "$1") ))
}

# start_tracer NAME ARGS...: aheadtrace in the background, stdout into
# $log/NAME.out; returns once it has attached (its "Tracing" line), read
# from a FIFO so that no sleep stands in for synchronisation.  Notices
# before that line ("aheadtrace: ...") are kept for $log/NAME.err.
start_tracer() {
	local name=$1 line
	shift
	rm -f "$log/$name.fifo"
	mkfifo "$log/$name.fifo"
	: >"$log/$name.pre"
	"$at" "$@" >"$log/$name.out" 2>"$log/$name.fifo" &
	tracer=$!
	exec 3<"$log/$name.fifo"
	while read -r -t 120 line <&3; do
		[ "${line#Tracing}" != "$line" ] && return 0
		printf '%s\n' "$line" >>"$log/$name.pre"
		[ "${line#aheadtrace: }" != "$line" ] || break
	done
	echo "# aheadtrace $*: $(cat "$log/$name.pre")"
	return 1
}
# stop_tracer NAME [SIGNAL]: signal it, wait, keep all of its stderr.
stop_tracer() {
	local rc
	kill -"${2:-INT}" "$tracer"
	wait "$tracer"
	rc=$?
	tracer=
	{ cat "$log/$1.pre"; cat <&3; } >"$log/$1.err"
	exec 3<&-
	return $rc
}

# wait_gone: BPF objects are freed after an RCU grace period, so poll (with
# a deadline) until no program, link or map of ours is left.
ours() {
	{
		"$bpftool" -j prog show | jq -r '.[].name // empty'
		"$bpftool" -j map show | jq -r '.[].name // empty'
	} 2>/dev/null | grep -E '^(at_(read|prefetch|copy|meta|file_[a-z]+)$|ahead_|vfs_)'
}
wait_gone() {
	local i
	for i in $(seq 200); do
		[ -z "$(ours)" ] && return 0
		sleep 0.05
	done
	return 1
}

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
[ -z "$(ours)" ] || bail "programs or maps of an earlier run are still loaded: $(ours | paste -sd' ')"

# ---------------------------------------------------------------------
# 1. The operation log against a scripted workload, legacy and ahead.
big=$((8650752 * 3))	# three 8 MiB + 256 KiB requests
head -c "$big" /dev/zero >"$lower/big" && sync
want_reads="0 8650752
8650752 8650752
17301504 8650752
12345 4096
1310720 262144"
absent_seen=0
for mode in legacy ahead; do
	echo "$mode" >"$sys/prefetch"
	check "$mode: prefetch mode set" "$mode" "$(cat "$sys/prefetch")"
	drop_caches
	if ! start_tracer "oplog-$mode" oplog --mount "$mnt" -j; then
		nok "$mode: aheadtrace oplog attaches"
		continue
	fi
	stats "$log/s0"
	dd if="$mnt/big" of=/dev/null bs=8650752 count=3 status=none
	dd if="$mnt/big" of=/dev/null bs=4096 count=1 iflag=skip_bytes skip=12345 status=none
	dd if="$mnt/big" of=/dev/null bs=262144 count=1 skip=5 status=none
	stats "$log/s1"
	stop_tracer "oplog-$mode"
	check "$mode: aheadtrace oplog exits 0 on Ctrl-C" 0 $?
	o=$log/oplog-$mode.out
	check "$mode: oplog holds exactly the requests' offsets and sizes" "$want_reads" \
		"$(jq -r 'select(.kind == "read") | "\(.pos) \(.len)"' "$o")"
	check "$mode: oplog reads carry the mode" "$mode" \
		"$(jq -r 'select(.kind == "read") | .mode' "$o" | sort -u | paste -sd,)"
	check "$mode: oplog absent bytes equal stats read_absent_bytes" \
		"$(delta "$log/s0" "$log/s1" read_absent_bytes)" \
		"$(jq -s 'map(select(.kind == "read") | .absent) | add' "$o")"
	check "$mode: oplog present bytes equal stats read_present_bytes" \
		"$(delta "$log/s0" "$log/s1" read_present_bytes)" \
		"$(jq -s 'map(select(.kind == "read") | .present) | add' "$o")"
	check "$mode: oplog prefetch bytes equal stats prefetch_bytes" \
		"$(delta "$log/s0" "$log/s1" prefetch_bytes)" \
		"$(jq -s 'map(select(.kind == "prefetch") | .len) | add // 0' "$o")"
	check "$mode: oplog prefetch records equal stats prefetch_chunks" \
		"$(delta "$log/s0" "$log/s1" prefetch_chunks)" \
		"$(jq -s 'map(select(.kind == "prefetch")) | length' "$o")"
	check "$mode: oplog read records come from dd with the bytes returned" \
		"dd 8650752,dd 8650752,dd 8650752,dd 4096,dd 262144" \
		"$(jq -r 'select(.kind == "read") | "\(.comm) \(.ret)"' "$o" | paste -sd,)"
	absent_seen=$((absent_seen + $(delta "$log/s0" "$log/s1" read_absent_bytes)))
done
# Equal zeros would prove nothing: reads after drop_caches miss somewhere.
if [ "$absent_seen" -gt 0 ]; then ok "absent bytes were seen ($absent_seen)"; else nok "absent bytes were seen"; fi

# A copy_file_range through aheadfs: one copy record with its offsets.
if start_tracer oplog-copy oplog --mount "$mnt" -j; then
	stats "$log/c0"
	xfs_io -f -c "copy_range -s 65536 -d 4096 -l 1048576 $mnt/big" "$mnt/copy" >"$log/copy.err" 2>&1
	stats "$log/c1"
	stop_tracer oplog-copy
	c=$log/oplog-copy.out
	check "copy: oplog holds the copy's offsets and size" "$(stat -c %i "$mnt/big") 65536 $(stat -c %i "$mnt/copy") 4096 1048576" \
		"$(jq -r 'select(.kind == "copy") | "\(.ino) \(.pos) \(.ino_out) \(.pos_out) \(.len)"' "$c" | paste -sd,)"
	m=$(jq -r 'select(.kind == "copy") | .method' "$c" | head -n1)
	check "copy: the method is counted in stats copy_$m" 1 \
		"$( [ -n "$m" ] && delta "$log/c0" "$log/c1" "copy_$m")"
else
	nok "aheadtrace oplog attaches (copy)"
fi

# Filters: -p keeps one process, --min-lat drops fast operations.
echo small >"$lower/small"
if start_tracer oplog-pid oplog --mount "$mnt" -p $$ -j; then
	read -r _ <"$mnt/small"
	cat "$mnt/small" >/dev/null
	stop_tracer oplog-pid
	check "oplog -p keeps only that process" "$$" \
		"$(jq -r '.pid' "$log/oplog-pid.out" | sort -u | paste -sd,)"
else
	nok "oplog -p attaches"
fi
if start_tracer oplog-lat oplog --mount "$mnt" --min-lat 100000000 -j; then
	cat "$mnt/small" >/dev/null
	stop_tracer oplog-lat
	check "oplog --min-lat drops faster operations" 0 "$(wc -l <"$log/oplog-lat.out")"
else
	nok "oplog --min-lat attaches"
fi

# fsslower's letter: -m MIN_MS, in milliseconds (100 s: nothing here).
if start_tracer oplog-minms oplog --mount "$mnt" -m 100000 -j; then
	cat "$mnt/small" >/dev/null
	stop_tracer oplog-minms
	check "oplog -m 100000 (ms) drops faster operations" 0 "$(wc -l <"$log/oplog-minms.out")"
else
	nok "oplog -m MIN_MS attaches"
fi
# --cgroup keeps the tasks of one cgroup v2 directory: a reader moved into
# it (cat) is traced, one outside it (head) is not.
cgr=$log/cgroup2
mkdir -p "$cgr" && mount -t cgroup2 none "$cgr" && mkdir "$cgr/ahtest"
if [ -d "$cgr/ahtest" ] && start_tracer oplog-cg oplog --mount "$mnt" --cgroup "$cgr/ahtest" -j; then
	head -c 100 "$mnt/small" >/dev/null
	bash -c 'echo $$ >"$1/cgroup.procs" && exec cat "$2"' _ "$cgr/ahtest" "$mnt/small" >/dev/null
	stop_tracer oplog-cg
	check "oplog --cgroup keeps only that cgroup's tasks (cat in it, not head outside)" "cat" \
		"$(jq -r '.comm' "$log/oplog-cg.out" | sort -u | paste -sd,)"
else
	nok "oplog --cgroup attaches" "$(cat "$log/oplog-cg.pre" 2>/dev/null)"
fi
rmdir "$cgr/ahtest" 2>/dev/null
umount "$cgr" 2>/dev/null

# ---------------------------------------------------------------------
# 1b. The ring buffer in pages of the running kernel, and lost records
# counted on every CPU: a one-page buffer, its reader stopped (SIGSTOP,
# awaited in /proc) while 50 reads are logged, keeps what fits in a page
# (the record's size from aheadtrace's debug info) and counts the rest as lost.
page=$(getconf PAGESIZE)
evsize=$(pahole -C at_event "$at" 2>/dev/null | sed -nE 's|.*/\* size: ([0-9]+),.*|\1|p')
# The ring buffer's size: of the one tracer running (a stopped tracer's map
# is freed after an RCU grace period, so each check waits for that first).
ringbuf() { "$bpftool" -j map show | jq -r '.[] | select(.name == "ahead_events") | .max_entries'; }
stopped() {
	local i
	for i in $(seq 2000); do
		[ "$(awk '{ print $3 }' "/proc/$1/stat")" = T ] && return 0
		sleep 0.01
	done
	return 1
}
[ -n "$evsize" ] || nok "pahole reads struct at_event's size from $at"
echo off >"$sys/prefetch"
wait_gone
if start_tracer lost oplog --mount "$mnt" -o read -b 1 -j; then
	check "oplog -b 1: the ring buffer is one page ($page bytes)" "$page" "$(ringbuf)"
	kill -STOP "$tracer"
	stopped "$tracer" || nok "aheadtrace stops on SIGSTOP"
	stats "$log/l0"
	dd if="$mnt/big" of=/dev/null bs=4096 count=50 status=none
	stats "$log/l1"
	kill -CONT "$tracer"
	stop_tracer lost
	check "oplog -b 1 exits 0 on Ctrl-C" 0 $?
	reqs=$(delta "$log/l0" "$log/l1" read_reqs)
	kept=$(( page / (evsize + 8) ))	# each record has an 8-byte header
	check "lost: a stopped reader's page keeps $kept records of $evsize bytes" "$kept" \
		"$(jq -s 'map(select(.kind == "read")) | length' "$log/lost.out")"
	check "lost: the other $((reqs - kept)) of the $reqs reads are reported lost" \
		"aheadtrace: $((reqs - kept)) events lost (ring buffer full)" \
		"$(grep 'events lost' "$log/lost.err")"
else
	nok "oplog -b 1 attaches"
fi
wait_gone
if start_tracer rb-default oplog --mount "$mnt"; then
	check "oplog: the default ring buffer is 4 MiB" 4194304 "$(ringbuf)"
	stop_tracer rb-default
else
	nok "oplog attaches (default ring buffer)"
fi
wait_gone
if start_tracer rb-hist hist --mount "$mnt"; then
	check "hist: the unused ring buffer is one page" "$page" "$(ringbuf)"
	stop_tracer rb-hist
else
	nok "hist attaches (ring buffer size)"
fi
echo ahead >"$sys/prefetch"

# ---------------------------------------------------------------------
# 2. Histograms: counts equal operation counts.
mkdir -p "$lower/d"
for i in 1 2 3; do echo "$i" >"$lower/d/f$i"; done
if start_tracer hist hist --mount "$mnt" -j; then
	stats "$log/h0"
	dd if="$mnt/big" of=/dev/null bs=4096 count=10 status=none
	stat "$mnt/d/f1" "$mnt/d/f2" >/dev/null
	ls "$mnt/d" >/dev/null
	rm "$mnt/d/f3"
	stats "$log/h1"
	stop_tracer hist
	check "aheadtrace hist exits 0 on Ctrl-C" 0 $?
	h=$log/hist.out
	check "hist read count equals the 10 reads issued" 10 \
		"$(jq -r 'select(.op == "read") | .count' "$h")"
	want=$(join <(sort "$log/h0") <(sort "$log/h1") |
		awk '$1 ~ /^op_/ && $3 != $2 { sub(/^op_/, "", $1); print $1, $3 - $2 }' | sort)
	got=$(jq -r '"\(.op) \(.count)"' "$h" | sort)
	# release is checked on its own below.
	check "hist counts equal stats op_* deltas for every operation but release" \
		"$(grep -v '^release ' <<<"$want")" "$(grep -v '^release ' <<<"$got")"
	check "hist counts release like stats op_release" \
		"$(grep '^release ' <<<"$want")" "$(grep '^release ' <<<"$got")"
	check "hist buckets add up to the counts" "" \
		"$(jq -r 'select(([.buckets[].count] | add) != .count) | .op' "$h")"
else
	nok "aheadtrace hist attaches"
fi
# Without --mount every mount is counted, by (device, op) in ahead_hist, where --mount
# counts one mount by op in ahead_ophist: both give this mount's reads.
majmin="$(stat -c %Hd "$mnt"):$(stat -c %Ld "$mnt")"
if start_tracer hist-all hist -j; then
	dd if="$mnt/big" of=/dev/null bs=4096 count=6 status=none
	stop_tracer hist-all
	check "hist without -m: this mount's 6 reads under its device" \
		"$majmin 6" \
		"$(jq -r 'select(.op == "read" and .dev == "'"$majmin"'") | "\(.dev) \(.count)"' "$log/hist-all.out")"
else
	nok "aheadtrace hist (every mount) attaches"
fi
if start_tracer hist-ops hist --mount "$mnt" -o unlink,getattr -j; then
	stat "$mnt/d/f1" >/dev/null
	cat "$mnt/d/f1" >/dev/null
	rm "$mnt/d/f2"
	stop_tracer hist-ops
	check "hist -o keeps only those operations" "getattr,unlink" \
		"$(jq -r '.op' "$log/hist-ops.out" | sort -u | paste -sd,)"
else
	nok "aheadtrace hist -o attaches"
fi

# Prometheus text format.
if start_tracer prom hist --mount "$mnt" --prom "$log/m.prom"; then
	stat "$mnt/d/f1" >/dev/null
	stop_tracer prom
	p=$(grep -E "^aheadfs_op_latency_seconds_count\{dev=\"$id\",op=\"getattr\"\} [1-9]" "$log/m.prom")
	inf=$(grep -E "^aheadfs_op_latency_seconds_bucket\{dev=\"$id\",op=\"getattr\",le=\"\+Inf\"\}" "$log/m.prom" | awk '{print $2}')
	if [ -n "$p" ] && [ "${p##* }" = "$inf" ] && grep -q '^# TYPE aheadfs_op_latency_seconds histogram' "$log/m.prom"; then
		ok "--prom writes a Prometheus histogram"
	else
		nok "--prom writes a Prometheus histogram" "$(head -n 5 "$log/m.prom" 2>&1)"
	fi
else
	nok "aheadtrace hist --prom attaches"
fi

# Prometheus from prefetch: per-mount series only, however many files are
# read; counters that never go backwards.  10,000 one-byte files, made by
# the shell's own redirections and read by one cat, then 11 of them again;
# the file is scraped after each pass (aheadtrace's next rewrite: a rename,
# so a new inode) and at exit.
mkdir -p "$lower/many"
for ((i = 0; i < 10000; i++)); do printf x >"$lower/many/f$i"; done
# next_scrape FILE COPY: wait for the next rewrite of FILE, keep a copy.
next_scrape() {
	local old i
	old=$(stat -c %i "$1" 2>/dev/null)
	for i in $(seq 2000); do
		if [ -e "$1" ] && [ "$(stat -c %i "$1" 2>/dev/null)" != "$old" ]; then
			cp "$1" "$2" && return 0
		fi
		sleep 0.01
	done
	return 1
}
series() { grep -vc '^#' "$1"; }
pm=aheadfs_prefetch_chunks_total,aheadfs_prefetch_bytes_total,aheadfs_read_requests_total,aheadfs_read_bytes_total,aheadfs_read_present_bytes_total,aheadfs_read_absent_bytes_total,aheadfs_read_from_prefetch_bytes_total
npm=$(tr , '\n' <<<"$pm" | wc -l)
if start_tracer prom-files prefetch --mount "$mnt" -i 2 --prom "$log/f.prom"; then
	stats "$log/pf0"
	cat "$mnt"/many/* >/dev/null
	next_scrape "$log/f.prom" "$log/f1.prom" || nok "prom: rewritten after the first pass"
	cat "$mnt"/many/f99* >/dev/null
	next_scrape "$log/f.prom" "$log/f2.prom" || nok "prom: rewritten after the second pass"
	stats "$log/pf1"
	stop_tracer prom-files
	check "prom: prefetch --prom exits 0 on Ctrl-C" 0 $?
	# One mount (-m) times the per-mount counters: no series per file.
	check "prom: $npm series (1 mount x $npm counters) after 10,000 files, first scrape" \
		"$npm" "$(series "$log/f1.prom")"
	check "prom: $npm series after the second pass and at exit" "$npm $npm" \
		"$(series "$log/f2.prom") $(series "$log/f.prom")"
	check "prom: the counters are the per-mount ones, labelled by dev" \
		"$(tr , '\n' <<<"$pm" | sed "s/\$/{dev=\"$id\"}/" | sort | paste -sd' ')" \
		"$(grep -v '^#' "$log/f.prom" | awk '{ print $1 }' | sort | paste -sd' ')"
	check "prom: no counter decreased from one scrape to the next" "" \
		"$(join <(grep -v '^#' "$log/f1.prom" | sort) <(grep -v '^#' "$log/f2.prom" | sort) |
			awk '$3 < $2' ; join <(grep -v '^#' "$log/f2.prom" | sort) <(grep -v '^#' "$log/f.prom" | sort) | awk '$3 < $2')"
	pv() { awk -v k="$1{dev=\"$id\"}" '$1 == k { print $2 }' "$log/f.prom"; }
	check "prom: read requests equal stats read_reqs over 10,000 files" \
		"$(delta "$log/pf0" "$log/pf1" read_reqs)" "$(pv aheadfs_read_requests_total)"
	check "prom: bytes read equal stats read_bytes" \
		"$(delta "$log/pf0" "$log/pf1" read_bytes)" "$(pv aheadfs_read_bytes_total)"
	check "prom: absent bytes equal stats read_absent_bytes" \
		"$(delta "$log/pf0" "$log/pf1" read_absent_bytes)" "$(pv aheadfs_read_absent_bytes_total)"
else
	nok "prefetch --prom attaches"
fi
rm -rf "$lower/many"
# --top-files N: per-file series for the N files read most, by dev and ino.
mkdir -p "$lower/top"
for i in 1 2 3 4; do head -c $((i * 4096)) /dev/zero >"$lower/top/t$i"; done
if start_tracer prom-top prefetch --mount "$mnt" --prom "$log/t.prom" --top-files 3; then
	cat "$mnt"/top/t* >/dev/null
	stop_tracer prom-top
	check "prom --top-files 3: $npm per-mount series and 3 files x 4 counters" $((npm + 12)) \
		"$(series "$log/t.prom")"
	check "prom --top-files 3: the three files read most, with the bytes read" \
		"$(for i in 2 3 4; do echo "$(stat -c %i "$lower/top/t$i") $((i * 4096))"; done | sort)" \
		"$(sed -nE "s/^aheadfs_file_read_bytes_total\{dev=\"$id\",ino=\"([0-9]+)\"\} ([0-9]+)\$/\1 \2/p" "$log/t.prom" | sort)"
else
	nok "prefetch --prom --top-files attaches"
fi

# ---------------------------------------------------------------------
# 3. Prefetch effectiveness per file.
echo ahead >"$sys/prefetch"
drop_caches
ino=$(stat -c %i "$mnt/big")
if start_tracer prefetch prefetch --mount "$mnt" -j; then
	stats "$log/p0"
	dd if="$mnt/big" of=/dev/null bs=8650752 count=3 status=none
	stats "$log/p1"
	stop_tracer prefetch
	check "aheadtrace prefetch exits 0 on Ctrl-C" 0 $?
	f=$log/prefetch.out
	check "prefetch: per-file prefetched bytes equal stats prefetch_bytes" \
		"$(delta "$log/p0" "$log/p1" prefetch_bytes)" \
		"$(jq -r "select(.ino == $ino) | .prefetch_bytes" "$f")"
	check "prefetch: per-file read bytes equal stats read_bytes" \
		"$(delta "$log/p0" "$log/p1" read_bytes)" \
		"$(jq -r "select(.ino == $ino) | .read_bytes" "$f")"
	check "prefetch: per-file absent bytes equal stats read_absent_bytes" \
		"$(delta "$log/p0" "$log/p1" read_absent_bytes)" \
		"$(jq -r "select(.ino == $ino) | .absent_bytes" "$f")"
else
	nok "aheadtrace prefetch attaches"
fi

# ---------------------------------------------------------------------
# 4. VFS level, both layers in one run; nested calls keep their own starts.
# The same workload twice: with fentry, then kprobes forced (--kprobe),
# which must give the same devices, functions and counts.  Prefetch off
# and caches dropped before each run, so that the lower sees the same calls.
echo off >"$sys/prefetch"
mkdir -p "$lower/v"
kwork() {
	for i in 1 2 3; do echo "$i" >"$mnt/v/f$i"; done
	dd if="$mnt/big" of=/dev/null bs=8650752 count=2 status=none
	stat "$mnt/v/f1" "$mnt/v/f2" >/dev/null
	ls "$mnt/v" >/dev/null
	mkdir "$mnt/v/d" && rmdir "$mnt/v/d"
	mv "$mnt/v/f3" "$mnt/v/f4"
	rm "$mnt/v/f1" "$mnt/v/f2" "$mnt/v/f4"
}
for probe in fentry kprobe; do
	args=()
	[ "$probe" = kprobe ] && args=(--kprobe)
	drop_caches
	if start_tracer "vfs-$probe" vfs -d "$mnt" -d "$lower" "${args[@]}" -j; then
		stats "$log/v0-$probe"
		kwork
		stats "$log/v1-$probe"
		stop_tracer "vfs-$probe"
		check "aheadtrace vfs ($probe) exits 0 on Ctrl-C" 0 $?
	else
		nok "aheadtrace vfs ($probe) attaches"
	fi
done
v=$log/vfs-fentry.out
cnt() { jq -r "select(.dev == \"$1\" and .op == \"$2\") | .count" "$v"; }
sum() { jq -r "select(.dev == \"$1\" and .op == \"$2\") | .sum_ns" "$v"; }
check "vfs: vfs_read on aheadfs counts the 2 reads" 2 "$(cnt "$id" vfs_read)"
check "vfs: lower reads equal stats read_txns" \
	"$(delta "$log/v0-fentry" "$log/v1-fentry" read_txns)" "$(cnt "$ldev" vfs_iocb_iter_read)"
check "vfs: vfs_unlink counted on aheadfs" 3 "$(cnt "$id" vfs_unlink)"
check "vfs: nested vfs_unlink counted on the lower too" 3 "$(cnt "$ldev" vfs_unlink)"
su=$(sum "$id" vfs_unlink) sl=$(sum "$ldev" vfs_unlink)
if [ -n "$su" ] && [ -n "$sl" ] && [ "$su" -ge "$sl" ]; then
	ok "vfs: outer unlink time includes the nested one ($su >= $sl ns)"
else
	nok "vfs: outer unlink time includes the nested one" "aheadfs $su lower $sl"
fi
check "vfs: only the requested devices" "$(printf '%s\n' "$id" "$ldev" | sort -u | paste -sd,)" \
	"$(jq -r .dev "$v" | sort -u | paste -sd,)"
# The functions aheadfs calls on the lower for this workload (kmod/), and
# the system calls' own on aheadfs (open(O_CREAT) calls ->create, not
# vfs_create): all seen.
kc() { jq -r '"\(.dev) \(.op) \(.count)"' "$log/vfs-$1.out" | sort; }
check "vfs: the workload reached each function it calls, on its layer" "" \
	"$(comm -23 <({ printf "$ldev %s\n" iterate_dir vfs_create vfs_iocb_iter_read \
			vfs_iocb_iter_write vfs_mkdir vfs_open vfs_rename vfs_rmdir vfs_unlink
		printf "$id %s\n" iterate_dir vfs_mkdir vfs_open vfs_read vfs_rename vfs_rmdir \
			vfs_unlink vfs_write; } | sort) <(kc fentry | awk '{ print $1, $2 }' | sort))"
check "vfs --kprobe: the same devices, functions and counts as fentry" "$(kc fentry)" "$(kc kprobe)"
check "vfs --kprobe: said so on stderr, no function skipped" \
	"aheadtrace: --kprobe: every VFS function traced with kprobe/kretprobe" \
	"$(grep '^aheadtrace: ' "$log/vfs-kprobe.err")"
check "vfs: fentry everywhere without --kprobe (nothing reported)" "" \
	"$(grep '^aheadtrace: ' "$log/vfs-fentry.err")"
echo ahead >"$sys/prefetch"

# ---------------------------------------------------------------------
# 5. Names and processes: a scripted workload under two command names
# (copies of dd, so that comm is theirs) reading known files a known number
# of times, and a second aheadfs mount that --mount must leave out.
mkdir -p "$lower/sub/dir" "$work/lower3" "$work/mnt3" "$work/bin"
head -c 1048576 /dev/zero >"$lower/alpha.dat"
head -c 1048576 /dev/zero >"$lower/sub/dir/beta.dat"
head -c 1048576 /dev/zero >"$work/lower3/gamma.dat"
cp "$(command -v dd)" "$work/bin/ahtest-reader"
cp "$(command -v dd)" "$work/bin/ahtest-other"
mount -t aheadfs "$work/lower3" "$work/mnt3" || bail "mount -t aheadfs $work/lower3 $work/mnt3"
id3=$(stat -c '%Hd:%Ld' "$work/mnt3")
# reader NAME FILE N: NAME reads N 4 KiB blocks of FILE in one process; its
# pid is appended to $log/pids as "PID NAME".
reader() {
	"$work/bin/$1" if="$2" of=/dev/null bs=4096 count="$3" status=none &
	echo "$! $1" >>"$log/pids"
	wait $!
}
# The workload: alpha.dat read 3 + 4 times by two processes of two names,
# sub/dir/beta.dat 2 times, and the other mount's gamma.dat 5 times.
workload() {
	: >"$log/pids"
	reader ahtest-reader "$mnt/alpha.dat" 3
	reader ahtest-reader "$mnt/sub/dir/beta.dat" 2
	reader ahtest-other "$mnt/alpha.dat" 4
	reader ahtest-reader "$work/mnt3/gamma.dat" 5
}
want_names="ahtest-reader alpha.dat alpha.dat 3
ahtest-reader beta.dat sub/dir/beta.dat 2
ahtest-other alpha.dat alpha.dat 4"
drop_caches
if start_tracer names oplog --mount "$mnt" -P -j; then
	stats "$log/n0"
	workload
	stats "$log/n1"
	stop_tracer names
	check "names: aheadtrace oplog -P exits 0 on Ctrl-C" 0 $?
	o=$log/names.out
	check "names: reads carry comm, name and path (-P), in order" "$want_names" \
		"$(jq -r 'select(.kind == "read") | "\(.comm) \(.name) \(.path)"' "$o" | uniq -c |
			awk '{ print $2, $3, $4, $1 }')"
	check "names: opens name the files opened" \
		"ahtest-reader alpha.dat,ahtest-reader sub/dir/beta.dat,ahtest-other alpha.dat" \
		"$(jq -r 'select(.op == "open") | "\(.comm) \(.path)"' "$o" | paste -sd,)"
	check "names: read records equal stats read_reqs" "$(delta "$log/n0" "$log/n1" read_reqs)" \
		"$(jq -s 'map(select(.kind == "read")) | length' "$o")"
	check "names: --mount leaves the other mount out" "" \
		"$(jq -r "select(.dev != \"$id\" or .name == \"gamma.dat\") | .dev" "$o" | sort -u)"
	check "names: every event has the name of a file or directory of the workload" "" \
		"$(jq -r 'select(.ino != 0) | .path // "null"' "$o" | sort -u |
			grep -vxE 'alpha\.dat|sub/dir/beta\.dat|sub/dir|sub|/')"
else
	nok "names: aheadtrace oplog -P attaches"
fi
# Without --mount the other mount is there, named (the filter above is no
# accident); -T adds a clock time; the text names the file last.
if start_tracer names-all oplog -T; then
	workload
	stop_tracer names-all
	t=$log/names-all.out
	check "names: text header has TIME, LAT(ms) and FILENAME" \
		"TIME PID TID COMM OP DEV INO OFFSET SIZE PRESENT ABSENT LAT(ms) RET FILENAME" \
		"$(head -n 1 "$t" | tr -s ' ')"
	check "names: without -m, the other mount's 5 reads are there by name" \
		"5 ahtest-reader $id3 gamma.dat" \
		"$(awk -v d="$id3" '$5 == "read" && $6 == d { print $4, $6, $14 }' "$t" | uniq -c | awk '{ print $1, $2, $3, $4 }')"
	check "names: -T times are HH:MM:SS" "" \
		"$(awk 'NR > 1 && $1 !~ /^[0-2][0-9]:[0-5][0-9]:[0-6][0-9]$/' "$t" | head -n 3)"
	check "names: text reads name beta.dat without -P" "ahtest-reader beta.dat 2" \
		"$(awk -v d="$id" '$5 == "read" && $6 == d && $14 == "beta.dat" { print $4, $14 }' "$t" | uniq -c | awk '{ print $2, $3, $1 }')"
else
	nok "names: aheadtrace oplog -T attaches"
fi
# Hard links, and names that do not exist: an operation is named by the
# name it was called with (the tracepoint's dentry), not by the inode's
# first link, and a lookup that found nothing still says what it sought.
ln "$lower/alpha.dat" "$lower/alpha.link"
drop_caches
if start_tracer links oplog --mount "$mnt" -j; then
	reader ahtest-reader "$mnt/alpha.dat" 1
	reader ahtest-reader "$mnt/alpha.link" 2
	stat "$mnt/alpha.link" >/dev/null
	stat "$mnt/ahtest-missing" >/dev/null 2>&1
	stop_tracer links
	o=$log/links.out
	check "names: reads of two links of one inode, each by its own name, in order" \
		"alpha.dat 1,alpha.link 2" \
		"$(jq -r 'select(.kind == "read") | .name' "$o" | uniq -c | awk '{ print $2, $1 }' | paste -sd,)"
	check "names: opens of two links, each by its own name, in order" \
		"alpha.dat,alpha.link" "$(jq -r 'select(.op == "open") | .name' "$o" | paste -sd,)"
	check "names: stat(1)'s getattr names the link it was given" "alpha.link" \
		"$(jq -r 'select(.comm == "stat" and .op == "getattr" and .ino != 0) | .name' "$o" | sort -u)"
	check "names: a lookup that found nothing names what it sought (ino 0)" "ahtest-missing 0" \
		"$(jq -r 'select(.op == "lookup" and .name == "ahtest-missing") | "\(.name) \(.ino)"' "$o" | sort -u)"
else
	nok "names: aheadtrace oplog (links) attaches"
fi
rm -f "$lower/alpha.link"

# hist -C and -P: per comm and per process, counts exactly the workload's.
if start_tracer hist-comm hist --mount "$mnt" -C -j; then
	stats "$log/hc0"
	workload
	stats "$log/hc1"
	stop_tracer hist-comm
	check "hist -C exits 0 on Ctrl-C" 0 $?
	h=$log/hist-comm.out
	check "hist -C: reads per comm" "ahtest-other 4,ahtest-reader 5" \
		"$(jq -r 'select(.op == "read") | "\(.comm) \(.count)"' "$h" | sort | paste -sd,)"
	check "hist -C: opens per comm" "ahtest-other 1,ahtest-reader 2" \
		"$(jq -r 'select(.op == "open") | "\(.comm) \(.count)"' "$h" | sort | paste -sd,)"
	check "hist -C: only the workload's comms" "ahtest-other,ahtest-reader" \
		"$(jq -r .comm "$h" | sort -u | paste -sd,)"
	want=$(join <(sort "$log/hc0") <(sort "$log/hc1") |
		awk '$1 ~ /^op_/ && $3 != $2 { sub(/^op_/, "", $1); print $1, $3 - $2 }' | sort)
	check "hist -C: counts summed over comms equal stats op_* deltas" "$want" \
		"$(jq -s -r 'group_by(.op)[] | "\(.[0].op) \(map(.count) | add)"' "$h" | sort)"
	check "hist -C: JSON has no pid key" "" "$(jq -r 'select(has("pid")) | .op' "$h")"
else
	nok "hist -C attaches"
fi
if start_tracer hist-pid hist --mount "$mnt" -P -j; then
	workload
	stop_tracer hist-pid
	check "hist -P exits 0 on Ctrl-C" 0 $?
	want=$(head -n 3 "$log/pids" | paste -d' ' - <(printf '%s\n' 3 2 4) | sort -n)
	check "hist -P: reads per pid and comm" "$want" \
		"$(jq -r 'select(.op == "read") | "\(.pid) \(.comm) \(.count)"' "$log/hist-pid.out" | sort -n)"
else
	nok "hist -P attaches"
fi
# Positional interval and count: two intervals, then it exits by itself.
timeout -k 5 120 "$at" hist --mount "$mnt" -C 1 2 >"$log/hist-pos.out" 2>"$log/hist-pos.err"
check "hist -C 1 2 exits 0 by itself" 0 $?
check "hist -C 1 2 prints two intervals" 2 \
	"$(grep -cE '^[0-2][0-9]:[0-5][0-9]:[0-6][0-9]$' "$log/hist-pos.out")"
umount "$work/mnt3"

# ---------------------------------------------------------------------
# 5b. heatmap: a lower whose latency changes half-way.  ext4 on a dm-delay
# target over a loop device, O_DIRECT reads (they reach the device): 20
# with no delay, then the table swapped to 50 ms and 20 more.  The
# tracer's own columns order the phases: once the first pass is over, two
# more columns (the second one read the map after the first was printed)
# close it, and the table is swapped only then.
export DM_DISABLE_UDEV=1
heat_ok=
mkdir -p "$work/dlower" "$work/dmnt"
truncate -s 64M "$work/delay.img"
if modprobe dm-delay && dloop=$(losetup -f --show "$work/delay.img") &&
   dsz=$(blockdev --getsz "$dloop") &&
   dmsetup create ahtest-delay --table "0 $dsz delay $dloop 0 0" &&
   mkfs.ext4 -q /dev/mapper/ahtest-delay && mount /dev/mapper/ahtest-delay "$work/dlower" &&
   head -c 1048576 /dev/zero >"$work/dlower/file" && sync &&
   mount -t aheadfs "$work/dlower" "$work/dmnt"; then
	heat_ok=1
else
	nok "heatmap: a dm-delay lower is set up" "$(dmesg | tail -n 5)"
fi
hcols() { wc -l <"$log/heat.out"; }
# wait_cols N: until the tracer has printed N columns.
wait_cols() {
	local i
	for i in $(seq 3000); do
		[ "$(hcols)" -ge "$1" ] && return 0
		sleep 0.01
	done
	return 1
}
if [ -n "$heat_ok" ] && start_tracer heat heatmap --mount "$work/dmnt" -o read -j --svg "$log/heat.svg" 1; then
	dd if="$work/dmnt/file" of=/dev/null bs=4096 count=20 iflag=direct status=none
	cut=$(( $(hcols) + 2 ))
	wait_cols "$cut" || nok "heatmap: two columns close the first pass"
	dmsetup load ahtest-delay --table "0 $dsz delay $dloop 0 50" &&
		dmsetup suspend ahtest-delay && dmsetup resume ahtest-delay ||
		nok "heatmap: the delay table is swapped in"
	dd if="$work/dmnt/file" of=/dev/null bs=4096 skip=20 count=20 iflag=direct status=none
	wait_cols $(( $(hcols) + 1 )) || nok "heatmap: a column after the second pass"
	stop_tracer heat
	check "heatmap exits 0 on Ctrl-C" 0 $?
	hj=$log/heat.out
	# phase FROM TO: the columns' slots summed, one "slot count" line each.
	phase() {
		jq -s -r --argjson a "$1" --argjson b "$2" \
			'.[$a:$b] | map(.slots) | transpose | to_entries[] | select((.value | add) > 0) | "\(.key) \(.value | add)"' "$hj"
	}
	p1=$(phase 0 "$cut") p2=$(phase "$cut" 1000)
	check "heatmap: the columns before the swap hold the 20 undelayed reads" 20 \
		"$(awk '{ n += $2 } END { print n + 0 }' <<<"$p1")"
	check "heatmap: the columns after it hold the 20 delayed reads" 20 \
		"$(awk '{ n += $2 } END { print n + 0 }' <<<"$p2")"
	# dm-delay holds a bio until a timer in jiffies: up to one jiffy (10 ms
	# at HZ=100) less than the table's delay.  50 ms less 10 is still in
	# slot 25 ([33.6 ms, 67.1 ms)) or above: no delayed read is faster.
	check "heatmap: every delayed read is in slot 25 (33.6 ms) or above" "" \
		"$(awk '$1 < 25' <<<"$p2")"
	m1=$(awk '{ s += $1 * $2; n += $2 } END { if (n) printf "%.2f", s / n }' <<<"$p1")
	m2=$(awk '{ s += $1 * $2; n += $2 } END { if (n) printf "%.2f", s / n }' <<<"$p2")
	if [ -n "$m1" ] && [ -n "$m2" ] && awk -v a="$m1" -v b="$m2" 'BEGIN { exit !(b > a) }'; then
		ok "heatmap: later columns have their mass in higher buckets (mean slot $m1 -> $m2)"
	else
		nok "heatmap: later columns have their mass in higher buckets" "before: $p1
after: $p2"
	fi
	check "heatmap -j: one line per column, each with 40 slots and their count" "" \
		"$(jq -r 'select(.type != "heatmap" or .op != "read" or (.slots | length) != 40 or (.slots | add) != .count) | .time' "$hj")"
	ncol=$(jq -s length "$hj")
	rows=$(sed -nE 's/.*<title>[0-9.]+ s, ([^:]+):.*/\1/p' "$log/heat.svg" | sort -u | wc -l)
	if grep -q '^<svg ' "$log/heat.svg" && grep -q '^</svg>$' "$log/heat.svg" &&
	   [ "$(grep -c '<rect x=.*<title>' "$log/heat.svg")" = $((ncol * rows)) ] &&
	   ! grep -Eq 'href|<script|<image' "$log/heat.svg"; then
		ok "heatmap --svg: a self-contained SVG, a cell per column ($ncol) and bucket ($rows)"
	else
		nok "heatmap --svg: a self-contained SVG" "$(head -c 400 "$log/heat.svg")"
	fi
else
	[ -z "$heat_ok" ] || nok "heatmap attaches"
fi
if [ -n "$heat_ok" ]; then
	dmsetup load ahtest-delay --table "0 $dsz delay $dloop 0 0" && dmsetup suspend ahtest-delay &&
		dmsetup resume ahtest-delay
	if start_tracer heat-text heatmap --mount "$work/dmnt" 1; then
		dd if="$work/dmnt/file" of=/dev/null bs=4096 count=5 iflag=direct status=none
		stop_tracer heat-text
		check "heatmap (text) exits 0 on Ctrl-C" 0 $?
		ht=$log/heat-text.out
		check "heatmap text: a header, then one row per interval" "TIME COUNT" \
			"$(sed -n 2p "$ht" | awk '{ print $1, $2 }')"
		check "heatmap text: the rows' counts add up to the 5 reads" 5 \
			"$(awk 'NR > 2 { n += $2 } END { print n + 0 }' "$ht")"
		full=$(printf '\xe2\x96\x88')
		check "heatmap text: each row with reads draws its fullest bucket as a full block" \
			"$(awk 'NR > 2 && $2 > 0' "$ht" | wc -l)" "$(grep -c "$full" "$ht")"
	else
		nok "heatmap (text) attaches"
	fi
	timeout -k 5 120 "$at" heatmap --mount "$work/dmnt" 1 2 >"$log/heat-count.out" 2>"$log/heat-count.err"
	check "heatmap 1 2 exits 0 by itself" 0 $?
	check "heatmap 1 2 prints a header and two rows" 4 "$(wc -l <"$log/heat-count.out")"
fi
umount "$work/dmnt" "$work/dlower" 2>/dev/null
# An open of the device by udev's blkid can make a first remove fail with
# EBUSY; --retry waits it out.  Left behind, the loop device would keep
# delay.img, and the scratch filesystem under it, busy.
if [ -n "${dloop:-}" ]; then
	if dmsetup remove --retry ahtest-delay 2>"$log/dm-remove.err" &&
	   losetup -d "$dloop" 2>>"$log/dm-remove.err"; then
		ok "the dm-delay device and its loop device are removed"
	else
		nok "the dm-delay device and its loop device are removed" \
			"$(cat "$log/dm-remove.err")"
	fi
fi
rm -f "$work/delay.img"

# ---------------------------------------------------------------------
# 6. aheadtrace leaves nothing behind, after Ctrl-C and after SIGTERM.
if wait_gone; then ok "nothing left after aheadtrace exits on Ctrl-C"; else nok "nothing left after aheadtrace exits on Ctrl-C" "$(ours)"; fi
if start_tracer term hist --mount "$mnt"; then
	stop_tracer term TERM
	check "aheadtrace exits 0 on SIGTERM" 0 $?
	if wait_gone; then ok "nothing left after SIGTERM"; else nok "nothing left after SIGTERM" "$(ours)"; fi
else
	nok "aheadtrace hist attaches (SIGTERM run)"
fi

# ---------------------------------------------------------------------
# 7. The bpftool-only path.
rm -rf "$pin"
if "$bpftool" prog loadall "$obj" "$pin" pinmaps "$pin" autoattach 2>"$log/loadall.err"; then
	ok "bpftool prog loadall ... pinmaps ... autoattach"
else
	nok "bpftool prog loadall ... pinmaps ... autoattach" "$(cat "$log/loadall.err")"
fi
check "maps and links pinned" "ahead_cgroup ahead_config ahead_events ahead_files ahead_hist ahead_lost ahead_mounts ahead_ophist ahead_phist at_copy at_meta at_meta_ops at_prefetch at_read" \
	"$(ls "$pin" 2>/dev/null | sort | paste -sd' ')"
check "five raw tracepoint links attached, nothing else" "5 0" \
	"$("$bpftool" -j link show 2>/dev/null | jq -r '[.[] | select(.type == "raw_tracepoint" and (.tp_name // "" | startswith("aheadfs_")))] | length') $("$bpftool" -j link show 2>/dev/null | jq -r '[.[] | select(.type == "perf_event")] | length')"
# Filter on this mount through the pinned config map (struct at_config, 40 bytes).
le32() { printf '%02x %02x %02x %02x' $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) $((($1 >> 24) & 255)); }
"$bpftool" map update pinned "$pin/ahead_config" key 0 0 0 0 \
	value hex $(le32 "$kdev") $(printf '00 %.0s' $(seq 36)) 2>"$log/update.err"
check "config map update" "" "$(cat "$log/update.err")"
# A second mount of the same lower: another device, filtered out.
mkdir -p "$work/mnt2"
mount -t aheadfs "$lower" "$work/mnt2"
kdev2=$(( ($(stat -c %Hd "$work/mnt2") << 20) | $(stat -c %Ld "$work/mnt2") ))
stats "$log/b0"
dd if="$mnt/big" of=/dev/null bs=4096 count=7 status=none
stat "$mnt/d/f1" >/dev/null
dd if="$work/mnt2/big" of=/dev/null bs=4096 count=3 status=none
stats "$log/b1"
umount "$work/mnt2"
"$bpftool" -j map dump pinned "$pin/ahead_hist" >"$log/dump.json" 2>&1
bc() { jq -r ".[] | (.formatted // .) | select(.key.dev == $kdev and .key.op == $1) | .value.$2" "$log/dump.json"; }
check "bpftool dump: read histogram counts the 7 reads" 7 "$(bc 29 count)"
check "bpftool dump: read slots add up to 7" 7 "$(jq -r ".[] | (.formatted // .) | select(.key.dev == $kdev and .key.op == 29) | .value.slots | add" "$log/dump.json")"
check "bpftool dump: getattr count equals stats op_getattr" \
	"$(delta "$log/b0" "$log/b1" op_getattr)" "$(bc 11 count)"
check "bpftool dump: the config map filters out another mount" "" \
	"$(jq -r ".[] | (.formatted // .) | select(.key.dev == $kdev2) | .key.op" "$log/dump.json")"
check "bpftool dump: keys are BTF-formatted" "dev op" \
	"$(jq -r '.[0].formatted.key // .[0].key | keys_unsorted | join(" ")' "$log/dump.json")"
# flags 128 (byte 24): this mount's histograms by op, in ahead_ophist, which
# at_meta_ops fills and at_meta then leaves alone.
"$bpftool" map update pinned "$pin/ahead_config" key 0 0 0 0 \
	value hex $(le32 "$kdev") $(printf '00 %.0s' $(seq 20)) 80 00 00 00 00 00 00 00 \
	00 00 00 00 00 00 00 00 \
	2>"$log/update.err"
check "config map update: flags 128" "" "$(cat "$log/update.err")"
dd if="$mnt/big" of=/dev/null bs=4096 count=5 status=none
"$bpftool" -j map dump pinned "$pin/ahead_ophist" >"$log/opdump.json" 2>&1
"$bpftool" -j map dump pinned "$pin/ahead_hist" >"$log/dump.json" 2>&1
check "bpftool dump, flags 128: ahead_ophist counts the 5 reads under op 29" 5 \
	"$(jq -r '.[] | (.formatted // .) | select(.key == 29) | .value.count' "$log/opdump.json")"
check "bpftool dump, flags 128: ahead_hist's reads stay at 7" 7 "$(bc 29 count)"
rm -r "$pin"
if wait_gone; then ok "removing the pins unloads everything"; else nok "removing the pins unloads everything" "$(ours)"; fi

# The VFS set through bpftool alone, filtered to this mount.
vpin=/sys/fs/bpf/aheadvfs
rm -rf "$vpin"
if "$bpftool" prog loadall "$vobj" "$vpin" pinmaps "$vpin" autoattach 2>"$log/vload.err"; then
	ok "bpftool loads and attaches vfs.bpf.o"
else
	nok "bpftool loads and attaches vfs.bpf.o" "$(cat "$log/vload.err")"
fi
"$bpftool" map update pinned "$vpin/vfs_devs" key hex $(le32 "$kdev") value 1 0 0 0 2>"$log/vupd.err" &&
	"$bpftool" map update pinned "$vpin/vfs_config" key 0 0 0 0 value 1 0 0 0 0 0 0 0 2>>"$log/vupd.err"
check "vfs filter set through the pinned maps" "" "$(cat "$log/vupd.err")"
# Calls between the attach and the filter update were counted for every
# device: from here on only this mount's entries may change.
others() { jq -c "[.[] | (.formatted // .) | select(.key.dev != $kdev)] | sort_by(.key)" "$1"; }
"$bpftool" -j map dump pinned "$vpin/vfs_hist" >"$log/vdump0.json" 2>&1
v0=$(jq -r ".[] | (.formatted // .) | select(.key.dev == $kdev and .key.op == 0) | .value.count" "$log/vdump0.json")
dd if="$mnt/big" of=/dev/null bs=4096 count=5 status=none
ls "$lower" >/dev/null
"$bpftool" -j map dump pinned "$vpin/vfs_hist" >"$log/vdump.json" 2>&1
check "bpftool dump: vfs_read on this mount counts the 5 reads" 5 \
	"$(( $(jq -r ".[] | (.formatted // .) | select(.key.dev == $kdev and .key.op == 0) | .value.count" "$log/vdump.json") - ${v0:-0} ))"
check "bpftool dump: other devices no longer counted once filtered" "$(others "$log/vdump0.json")" \
	"$(others "$log/vdump.json")"
rm -r "$vpin"
if wait_gone; then ok "removing the vfs pins unloads everything"; else nok "removing the vfs pins unloads everything" "$(ours)"; fi

echo "1..$n"
[ "$failed" = 0 ]
