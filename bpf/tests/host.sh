#!/usr/bin/env bash
# Host-side tests of bpf/: aheadtrace's argument parsing and the error paths
# that need no guest, the objects' BTF, and the mirror of kmod's ABI in
# aheadtrace.h.  TAP on stdout; exits non-zero if any test failed.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "$here/.." && pwd)
at=${AHEADTRACE:-$here/aheadtrace}	# make check-san: the sanitizer build
out=$here/.output
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ok, nok: the shell tests' KTAP lines.
. "$top/selftests/ktap.sh"
skip() { n=$((n + 1)); echo "ok $n $1 # SKIP $2"; }

# expect NAME RC REGEX CMD...: CMD exits RC with exactly one stderr line
# matching REGEX (a usage hint line is allowed after a usage error).
expect() {
	local name=$1 rc=$2 re=$3 got err first lines
	shift 3
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	err=$(cat "$tmp/err")
	first=$(head -n1 "$tmp/err")
	lines=$(grep -vc "^Try 'aheadtrace --help'.$" "$tmp/err")
	if [ "$got" = "$rc" ] && [ "$lines" = 1 ] && grep -Eq -- "$re" <<<"$first"; then
		ok "$name"
	else
		nok "$name" "exit $got (want $rc); stderr: $err"
	fi
}

echo "TAP version 13"

# --- usage errors: exit 2, one message ---
expect "no verb" 2 '^aheadtrace: missing verb' "$at"
expect "unknown verb" 2 "^aheadtrace: unknown verb 'frobnicate'" "$at" frobnicate
expect "unknown option" 2 "^aheadtrace: unknown option '-z'" "$at" hist -z
expect "unknown long option" 2 "^aheadtrace: unknown option '--frob'" "$at" hist --frob
expect "missing option argument" 2 "^aheadtrace: option '-i' needs an argument" "$at" hist -i
expect "interval zero" 2 "^aheadtrace: invalid interval '0'" "$at" hist -i 0
expect "interval not a number" 2 "^aheadtrace: invalid interval '1s'" "$at" hist -i 1s
expect "count not a number" 2 "^aheadtrace: invalid count 'x'" "$at" hist -i 1 -c x
expect "count without interval" 2 '^aheadtrace: -c COUNT needs -i INTERVAL' "$at" hist -c 3
expect "unknown operation" 2 "^aheadtrace: unknown operation 'bogus'; known: lookup " "$at" hist -o read,bogus
expect "empty operation list" 2 '^aheadtrace: empty operation list' "$at" oplog -o ,
expect "pid zero" 2 "^aheadtrace: invalid pid '0'" "$at" oplog -p 0
expect "pid not a number" 2 "^aheadtrace: invalid pid 'me'" "$at" oplog -p me
expect "negative min-lat" 2 "^aheadtrace: invalid --min-lat '-1'" "$at" oplog --min-lat -1
expect "pid does not apply to prefetch" 2 "^aheadtrace: option '-p' does not apply to 'prefetch'" "$at" prefetch -p 1
expect "min-lat does not apply to prefetch" 2 "^aheadtrace: option '--min-lat' does not apply to 'prefetch'" "$at" prefetch --min-lat 5
expect "interval does not apply to oplog" 2 "^aheadtrace: option '-i' does not apply to 'oplog'" "$at" oplog -i 1
expect "dev does not apply to hist" 2 "^aheadtrace: option '-d' does not apply to 'hist'" "$at" hist -d 8:1
expect "mount does not apply to vfs" 2 "^aheadtrace: option '-m' does not apply to 'vfs'" "$at" vfs -d 8:1 -m /
expect "vfs without device" 2 '^aheadtrace: vfs needs at least one -d DEV' "$at" vfs
expect "vfs bad device path" 2 "^aheadtrace: device '/nonexistent/x': not MAJOR:MINOR" "$at" vfs -d /nonexistent/x
expect "vfs device out of range" 2 "^aheadtrace: invalid device '99999:1'" "$at" vfs -d 99999:1
expect "too many devices" 2 '^aheadtrace: at most 16 devices' "$at" vfs $(for i in $(seq 17); do printf -- '-d 8:%d ' "$i"; done)
expect "mount missing" 2 "^aheadtrace: mount '/nonexistent': No such file" "$at" hist --mount /nonexistent
expect "mount not aheadfs" 2 "^aheadtrace: '$tmp' is not on an aheadfs mount" "$at" oplog --mount "$tmp"
expect "prefetch -m is still the mount" 2 "^aheadtrace: '$tmp' is not on an aheadfs mount" "$at" prefetch -m "$tmp"
expect "heatmap -m is still the mount" 2 "^aheadtrace: mount '/nonexistent': No such file" "$at" heatmap -m /nonexistent
expect "prom file not writable" 2 "^aheadtrace: --prom '/nonexistent/m.prom'" "$at" hist --prom /nonexistent/m.prom
expect "extra argument" 2 "^aheadtrace: unexpected argument 'extra'" "$at" oplog extra
# Positional [interval] [count], as libbpf-tools take them.
expect "third positional argument" 2 "^aheadtrace: unexpected argument '3'" "$at" prefetch 1 2 3
expect "positional interval zero" 2 "^aheadtrace: invalid interval '0'" "$at" hist 0
expect "positional interval not a number" 2 "^aheadtrace: invalid interval 'extra'" "$at" prefetch extra
expect "positional count not a number" 2 "^aheadtrace: invalid count 'x'" "$at" hist 1 x
expect "positional count zero" 2 "^aheadtrace: invalid count '0'" "$at" vfs -d 8:1 1 0
expect "the first positional is the interval" 2 "^aheadtrace: interval given twice \(-i and '5'\)" "$at" hist -i 2 5
expect "the second positional is the count" 2 "^aheadtrace: count given twice \(-c and '7'\)" "$at" hist 5 7 -c 3
expect "oplog takes no interval" 2 "^aheadtrace: unexpected argument '1'" "$at" oplog 1
# Names and processes.
expect "-P and -C together" 2 '^aheadtrace: -P and -C do not combine' "$at" hist -P -C
expect "--prom with -P" 2 '^aheadtrace: --prom does not combine with -P or -C' "$at" hist -P --prom "$tmp/m.prom"
expect "--prom with -C" 2 '^aheadtrace: --prom does not combine with -P or -C' "$at" hist --per-comm --prom "$tmp/m.prom"
expect "-C does not apply to oplog" 2 "^aheadtrace: option '-C' does not apply to 'oplog'" "$at" oplog -C
expect "-P does not apply to prefetch" 2 "^aheadtrace: option '-P' does not apply to 'prefetch'" "$at" prefetch -P
expect "-T does not apply to hist" 2 "^aheadtrace: option '-T' does not apply to 'hist'" "$at" hist -T
expect "--path does not apply to hist" 2 "^aheadtrace: option '--path' does not apply to 'hist'" "$at" hist --path
expect "--per-process does not apply to oplog" 2 "^aheadtrace: option '--per-process' does not apply to 'oplog'" "$at" oplog --per-process
# The letters libbpf-tools give another meaning (issue 26): fsslower's
# oplog -m MIN_MS, -c (CSV) and -d DURATION, biolatency's hist -m
# (milliseconds), and -u, -p on hist, --cgroup.
expect "oplog -m not a number" 2 "^aheadtrace: invalid -m MIN_MS 'x' \(a number from 0 to " "$at" oplog -m x
expect "oplog -m negative" 2 "^aheadtrace: invalid -m MIN_MS '-1'" "$at" oplog -m -1
expect "oplog --min not a number" 2 "^aheadtrace: invalid --min 'ten'" "$at" oplog --min ten
expect "oplog -m and --min-lat together" 2 '^aheadtrace: the least latency given twice \(-m MIN_MS and --min-lat US: give one\)' "$at" oplog -m 10 --min-lat 5
expect "oplog -m needs its MIN_MS" 2 "^aheadtrace: option '-m' needs an argument" "$at" oplog -m
"$at" oplog -m "$tmp" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 2 ] && grep -qx "aheadtrace: warning: oplog -m is the least latency in ms now, as in fsslower; '$tmp' taken as --mount $tmp" "$tmp/err" &&
   grep -qx "aheadtrace: '$tmp' is not on an aheadfs mount" "$tmp/err"; then
	ok "oplog -m PATH: still the mount, with a warning naming fsslower's meaning"
else
	nok "oplog -m PATH: still the mount, with a warning" "exit $rc; $(cat "$tmp/err")"
fi
expect "hist -m takes no argument: a mount after it is named" 2 "^aheadtrace: hist -m is milliseconds now, as in biolatency: the mount is --mount /srv" "$at" hist -m /srv
expect "hist -m and -u together" 2 '^aheadtrace: -m and -u do not combine' "$at" hist -m -u
expect "-u does not apply to oplog" 2 "^aheadtrace: option '-u' does not apply to 'oplog'" "$at" oplog -u
expect "--milliseconds does not apply to heatmap" 2 "^aheadtrace: option '--milliseconds' does not apply to 'heatmap'" "$at" heatmap --milliseconds
expect "hist pid zero" 2 "^aheadtrace: invalid pid '0'" "$at" hist -p 0
expect "oplog duration zero" 2 "^aheadtrace: invalid duration '0'" "$at" oplog -d 0
expect "oplog duration not a number" 2 "^aheadtrace: invalid duration '5s'" "$at" oplog --duration 5s
expect "--duration does not apply to hist" 2 "^aheadtrace: option '--duration' does not apply to 'hist'" "$at" hist --duration 5
expect "oplog -c and -j together" 2 '^aheadtrace: -c and -j do not combine' "$at" oplog -c -j
expect "--csv does not apply to prefetch" 2 "^aheadtrace: option '--csv' does not apply to 'prefetch'" "$at" prefetch --csv
expect "--count does not apply to oplog" 2 "^aheadtrace: option '--count' does not apply to 'oplog'" "$at" oplog --count 3
expect "oplog -c takes no argument" 2 "^aheadtrace: unexpected argument '3'" "$at" oplog -c 3
expect "--cgroup missing" 2 "^aheadtrace: --cgroup '/nonexistent/cg': No such file or directory" "$at" hist --cgroup /nonexistent/cg
expect "--cgroup of a file" 2 "^aheadtrace: --cgroup '$here/Makefile': Not a directory" "$at" oplog --cgroup "$here/Makefile"
expect "--cgroup of a directory not in cgroup v2" 2 "^aheadtrace: --cgroup '$tmp': not a cgroup v2 directory" "$at" oplog --cgroup "$tmp"
expect "--cgroup does not apply to prefetch" 2 "^aheadtrace: option '--cgroup' does not apply to 'prefetch'" "$at" prefetch --cgroup /
expect "--cgroup does not apply to vfs" 2 "^aheadtrace: option '--cgroup' does not apply to 'vfs'" "$at" vfs -d 8:1 --cgroup /
v1=$(awk '$9 == "cgroup" { print $5; exit }' /proc/self/mountinfo)
if [ -n "$v1" ]; then
	expect "--cgroup of a cgroup v1 hierarchy" 2 "^aheadtrace: --cgroup '$v1': not a cgroup v2 directory" "$at" hist --cgroup "$v1"
else
	skip "--cgroup of a cgroup v1 hierarchy" "no cgroup v1 hierarchy mounted here"
fi
# A cgroup v2 directory: the host's, else one mounted for the test (root).
cg=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
cg_mounted=
if [ -z "$cg" ] && mkdir -p "$tmp/cg" && mount -t cgroup2 none "$tmp/cg" 2>/dev/null; then
	cg=$tmp/cg cg_mounted=1
fi
if [ -n "$cg" ]; then
	expect "valid hist -m -p --cgroup arguments accepted" 1 '^aheadtrace: aheadfs is not loaded' \
		env AHEADTRACE_MODULE_DIR=/nonexistent "$at" hist -m -p 1 --cgroup "$cg" -j 1 2
	expect "valid oplog -m -d -c --cgroup arguments accepted" 1 '^aheadtrace: aheadfs is not loaded' \
		env AHEADTRACE_MODULE_DIR=/nonexistent "$at" oplog -m 10 -d 5 -c -T --cgroup "$cg"
else
	skip "valid --cgroup arguments accepted" "no cgroup v2 here and none could be mounted"
	skip "valid oplog --cgroup arguments accepted" "no cgroup v2 here and none could be mounted"
fi
expect "valid hist -u --prom accepted" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" hist -u --prom "$tmp/m.prom" 5
expect "valid oplog --min --duration --csv accepted" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" oplog --min 0 --duration 1 --csv

# The oplog ring buffer in pages of the running kernel.
pages_max=$(( (1 << 30) / $(getconf PAGESIZE) ))
expect "buffer pages not a power of two" 2 "^aheadtrace: invalid --buffer-pages '3' \(a power of two\)" "$at" oplog -b 3
expect "buffer pages zero" 2 "^aheadtrace: invalid --buffer-pages '0' \(a number from 1 to $pages_max\)" "$at" oplog -b 0
expect "buffer pages over 1 GiB" 2 "^aheadtrace: invalid --buffer-pages '$((pages_max * 2))' \(a number from 1 to $pages_max\)" "$at" oplog --buffer-pages $((pages_max * 2))
expect "-b does not apply to hist" 2 "^aheadtrace: option '-b' does not apply to 'hist'" "$at" hist -b 2
expect "valid oplog -b accepted" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" oplog -b "$pages_max"
# Prometheus: per-file series only on request, and a bounded number: at
# most ahead_files' size, 10240 or 256 per possible CPU when that is more.
ncpu=$(awk -F, '{ for (i = 1; i <= NF; i++) { n = split($i, r, "-"); c += n == 2 ? r[2] - r[1] + 1 : 1 } } END { print c }' /sys/devices/system/cpu/possible)
files_max=$(( ncpu * 256 > 10240 ? ncpu * 256 : 10240 ))
expect "--top-files without --prom" 2 '^aheadtrace: --top-files needs --prom' "$at" prefetch --top-files 3
expect "--top-files zero" 2 "^aheadtrace: invalid --top-files '0' \(a number from 1 to $files_max\)" "$at" prefetch --top-files 0 --prom "$tmp/m.prom"
expect "--top-files over the map's size ($files_max for $ncpu CPUs)" 2 "^aheadtrace: invalid --top-files '$((files_max + 1))'" "$at" prefetch --top-files $((files_max + 1)) --prom "$tmp/m.prom"
expect "--top-files of the map's size accepted" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" prefetch --top-files "$files_max" --prom "$tmp/m.prom"
expect "--top-files does not apply to hist" 2 "^aheadtrace: option '--top-files' does not apply to 'hist'" "$at" hist --top-files 3 --prom "$tmp/m.prom"
expect "valid prefetch --prom --top-files accepted" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" prefetch --prom "$tmp/m.prom" --top-files 10 5
# --prom FILE: the file beside it is a new one (mkstemp), so a symlink
# planted at FILE.tmp is neither followed nor truncated.
echo precious >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/p.prom.tmp"
expect "hist --prom past a planted FILE.tmp symlink: argument checks pass" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" hist --prom "$tmp/p.prom" 5
if [ "$(cat "$tmp/victim")" = precious ] && [ -L "$tmp/p.prom.tmp" ] && [ -z "$(find "$tmp" -maxdepth 1 -name '.p.prom.*')" ]; then
	ok "--prom: a symlink at FILE.tmp is not followed, no temporary file left"
else
	nok "--prom: a symlink at FILE.tmp is not followed" "victim: $(cat "$tmp/victim" | head -c 100); $(ls -la "$tmp")"
fi
rm -f "$tmp/victim" "$tmp/p.prom.tmp"
# heatmap: one operation, an SVG file that can be written.
expect "heatmap of two operations" 2 '^aheadtrace: heatmap draws one operation' "$at" heatmap -o read,open
expect "heatmap --svg in a missing directory" 2 "^aheadtrace: --svg '/nonexistent/h.svg': No such file" "$at" heatmap --svg /nonexistent/h.svg
expect "heatmap --svg of a directory" 2 "^aheadtrace: --svg '$tmp': Is a directory" "$at" heatmap --svg "$tmp"
expect "--prom of a directory" 2 "^aheadtrace: --prom '$tmp': Is a directory" "$at" hist --prom "$tmp"
expect "--svg does not apply to hist" 2 "^aheadtrace: option '--svg' does not apply to 'hist'" "$at" hist --svg "$tmp/h.svg"
expect "--prom does not apply to heatmap" 2 "^aheadtrace: option '--prom' does not apply to 'heatmap'" "$at" heatmap --prom "$tmp/m.prom"
expect "-P does not apply to heatmap" 2 "^aheadtrace: option '-P' does not apply to 'heatmap'" "$at" heatmap -P
expect "heatmap interval zero" 2 "^aheadtrace: invalid interval '0'" "$at" heatmap 0
expect "valid heatmap arguments accepted" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" heatmap -o getattr --svg "$tmp/h.svg" -j 2 5
if [ -e "$tmp/h.svg" ]; then nok "a refused heatmap leaves no --svg file behind"; else ok "a refused heatmap leaves no --svg file behind"; fi
# --svg FILE is written as --prom's is (mkstemp, then rename): a symlink
# planted at FILE is neither followed nor made a file through, even when
# the arguments are only checked.
ln -s "$tmp/svg-victim" "$tmp/s.svg"
expect "heatmap --svg past a planted FILE symlink: argument checks pass" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" heatmap --svg "$tmp/s.svg"
if [ ! -e "$tmp/svg-victim" ] && [ -L "$tmp/s.svg" ] && [ -z "$(find "$tmp" -maxdepth 1 -name '.s.svg.*')" ]; then
	ok "--svg: the symlink at FILE is not followed at start, no temporary file left"
else
	nok "--svg: the symlink at FILE is not followed at start" "$(ls -la "$tmp")"
fi
# heatmap's interval is 1 s unless given: a count alone is enough.
expect "heatmap -c COUNT without an interval accepted" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" heatmap -c 5
expect "heatmap --count COUNT without an interval accepted" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" heatmap --count 3 -o open
# vfs --kprobe: only vfs takes it; it still needs the kernel's BTF (CO-RE).
expect "--kprobe does not apply to hist" 2 "^aheadtrace: option '--kprobe' does not apply to 'hist'" "$at" hist --kprobe
expect "vfs --kprobe without kernel BTF" 1 '^aheadtrace: this kernel has no BTF' \
	env AHEADTRACE_KERNEL_BTF=/nonexistent "$at" vfs --kprobe -d 8:1 1 1
# vfsk.bpf.o: a kprobe and a kretprobe for each of vfs.bpf.o's fentry programs.
secs() { llvm-objdump -h "$out/$1.bpf.o" | awk '{ print $2 }' | sed -nE "s|^$2/||p" | sort | paste -sd' '; }
fe=$(secs vfs fentry)
if [ -n "$fe" ] && [ "$(secs vfsk kprobe)" = "$fe" ] && [ "$(secs vfsk kretprobe)" = "$fe" ] &&
   [ "$(secs vfs fexit)" = "$fe" ]; then
	ok "vfsk.bpf.o: a kprobe and a kretprobe for each of vfs.bpf.o's $(wc -w <<<"$fe") fentry functions"
else
	nok "vfsk.bpf.o: a kprobe and a kretprobe for each fentry function" "fentry: $fe
kprobe: $(secs vfsk kprobe)
kretprobe: $(secs vfsk kretprobe)"
fi

# at_log2() (bits.bpf.h), the histogram slot, against a bit-by-bit count.
if ! cc -O2 -Wall -Wextra -Wno-unused-parameter -Wno-unused-function \
	-o "$tmp/log2" "$here/tests/log2.c" 2>"$tmp/cc"; then
	nok "at_log2: builds for the host" "$(cat "$tmp/cc")"
elif "$tmp/log2" >"$tmp/log2.out"; then
	ok "at_log2: the highest set bit of 0, every power of two and its neighbours, and 10^6 others"
else
	nok "at_log2: the highest set bit of every value" "$(head -5 "$tmp/log2.out")"
fi

# oplog's text line (oplog_text.h), built by hand, against printf's formats.
if ! cc -O2 -Wall -Wextra -Wno-unused-parameter -Wno-unused-function -I"$here" \
	-o "$tmp/text" "$here/tests/text.c" 2>"$tmp/cc"; then
	nok "oplog text line: builds for the host" "$(cat "$tmp/cc")"
elif "$tmp/text" >"$tmp/text.out"; then
	ok "oplog text line: byte for byte printf's, over 300,000 random records"
else
	nok "oplog text line: byte for byte printf's" "$(head -9 "$tmp/text.out")"
fi

# -j strings: aheadtrace's json_str() is aheadctl's writer (jsonstr.h), which
# keeps UTF-8 as it is and replaces only what is not UTF-8.
if ! grep -q '^#include "../userland/jsonstr.h"' "$here/aheadtrace.c" ||
   ! sed -n '/^static void json_str(/,/^}/p' "$here/aheadtrace.c" | grep -q 'jsonstr_write(f, s, max)'; then
	nok "aheadtrace -j strings go through userland/jsonstr.h"
elif ! cc -O1 -g -Wall -Wextra -fsanitize=address,undefined -fno-sanitize-recover=all \
	-o "$tmp/jsonstr" "$here/tests/jsonstr.c" 2>"$tmp/cc"; then
	nok "jsonstr: builds for the host" "$(cat "$tmp/cc")"
elif "$tmp/jsonstr" "café-日.dat" "$(printf 'a\033[2Jb\177"\\')" "$(printf 'bad\377\300\257x')" \
	"comm:kworker/u16:3x-évé" "comm:$(printf 'abcdefghijklmn\303\251')" >"$tmp/jsonstr.out" 2>&1 &&
	python3 - "$tmp/jsonstr.out" <<'PY'
import json, sys
got = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
want = ["café-日.dat", "a\x1b[2Jb\x7f\"\\", "bad\ufffd\ufffd\ufffdx",
        "kworker/u16:3x-\ufffd", "abcdefghijklmné"]
sys.exit(0 if got == want else print(got) or 1)
PY
then
	ok "aheadtrace -j strings: UTF-8 kept (café-日.dat), controls escaped, bad bytes U+FFFD, comm bounded"
else
	nok "aheadtrace -j strings: UTF-8 kept" "$(cat "$tmp/jsonstr.out")"
fi

# aheadtrace.c's own user-space code, driven without BPF (tests/unit.c):
# the ahead_config the options ask for, recorded events through the CSV
# writer, a recorded histogram in ms and us, lost records said while
# tracing, the end of an oplog -d run.  Built with the sanitizers, as
# jsonstr.c is.
unit=$tmp/unit
if ! cc -O1 -g -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE -I"$out" -I"$here" \
	-fsanitize=address,undefined -fno-sanitize-recover=all \
	-o "$unit" "$here/tests/unit.c" -lbpf -lm 2>"$tmp/cc"; then
	nok "tests/unit.c: builds for the host" "$(cat "$tmp/cc")"
	unit=false
fi
# u NAME WANT ARGS...: the unit's stdout and stderr (no blank lines) is exactly WANT.
u() {
	local name=$1 want=$2 got
	shift 2
	[ "$unit" = false ] && { nok "$name" "tests/unit.c did not build"; return; }
	got=$(ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 "$unit" "$@" 2>&1 | grep -v '^$')
	if [ "$got" = "$want" ]; then ok "$name"; else nok "$name" "want: $want
got: $got"; fi
}
# urc NAME WANT ARGS...: as u, the unit's exit status a last line "rc=N".
urc() {
	local name=$1 want=$2 got
	shift 2
	[ "$unit" = false ] && { nok "$name" "tests/unit.c did not build"; return; }
	got=$(ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 "$unit" "$@" 2>&1; echo "rc=$?")
	check "$name" "$want" "$(grep -v '^$' <<<"$got")"
}
# uhas NAME ARGS... -- LINE...: every LINE is a line of the unit's output.
uhas() {
	local name=$1 got l miss=
	shift
	[ "$unit" = false ] && { nok "$name" "tests/unit.c did not build"; return; }
	local args=()
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	got=$(ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 "$unit" "${args[@]}" 2>&1)
	for l in "$@"; do grep -qxF -- "$l" <<<"$got" || miss="$miss
missing: $l"; done
	if [ -z "$miss" ]; then ok "$name"; else nok "$name" "$miss
got: $(head -c 1500 <<<"$got")"; fi
}
u "config: oplog -m 5 is fsslower's 5 ms" "dev=0 tgid=0 min_lat_ns=5000000 ops_mask=0 flags=5 hist_unit_ns=0 cgroup_fd=none
sizeof=40" config oplog -m 5
u "config: oplog --min 0 traces everything" "dev=0 tgid=0 min_lat_ns=0 ops_mask=0 flags=5 hist_unit_ns=0 cgroup_fd=none
sizeof=40" config oplog --min 0
u "config: oplog --min-lat 250 is still microseconds" "dev=0 tgid=0 min_lat_ns=250000 ops_mask=0 flags=5 hist_unit_ns=0 cgroup_fd=none
sizeof=40" config oplog --min-lat 250
u "config: hist -m counts in milliseconds, -p 42 filters the histograms" "dev=0 tgid=42 min_lat_ns=0 ops_mask=0 flags=6 hist_unit_ns=1000000 cgroup_fd=none
sizeof=40" config hist -m -p 42
u "config: hist -u counts in microseconds" "dev=0 tgid=0 min_lat_ns=0 ops_mask=536870912 flags=6 hist_unit_ns=1000 cgroup_fd=none
sizeof=40" config hist --microseconds -o read
u "config: hist in nanoseconds by default" "dev=0 tgid=0 min_lat_ns=0 ops_mask=0 flags=6 hist_unit_ns=0 cgroup_fd=none
sizeof=40" config hist
if [ -n "$cg" ]; then
	u "config: --cgroup sets AT_CFG_CGROUP (256) with the directory open" "dev=0 tgid=0 min_lat_ns=0 ops_mask=0 flags=262 hist_unit_ns=0 cgroup_fd=open
sizeof=40" config hist --cgroup "$cg"
	u "config: oplog --cgroup" "dev=0 tgid=0 min_lat_ns=0 ops_mask=0 flags=261 hist_unit_ns=0 cgroup_fd=open
sizeof=40" config oplog --cgroup "$cg"
	u "config: heatmap --cgroup" "dev=0 tgid=0 min_lat_ns=0 ops_mask=536870912 flags=262 hist_unit_ns=0 cgroup_fd=open
sizeof=40" config heatmap --cgroup "$cg"
else
	skip "config: --cgroup sets AT_CFG_CGROUP" "no cgroup v2 here"
fi
[ -n "$cg_mounted" ] && umount "$cg"
u "oplog -c: recorded events as CSV, quoted where needed, controls as '?'" 'ENDTIME_ns,PID,TID,COMM,OP,DEV,INO,OFFSET_b,BYTES,PRESENT,ABSENT,LATENCY_us,RET,FILE,WINDOW,INO_OUT,OFFSET_OUT
179314790358,324,325,dd,read,0:61,12,0,8650752,8388608,262144,437077.200,8650752,big,,,
179314790358,324,325,kworker/u8:2,prefetch,0:61,12,8650752,8388608,,,,,big,8388608,,
179314790999,326,326,rm,lookup,0:61,65539,,,,,1873.900,0,"a,b ""c"".dat",,,
179314790999,326,326,rm,chunked,0:61,12,0,1024,,,5.000,1024,big,,13,4096
0,327,327,ev?il,unlink,8:1,14,,,,,0.999,-2,x?y,,,
0,327,327,ev?il,open,8:1,14,,,,,0.999,-2,sub/dir/beta.dat,,,' events oplog -c
uhas "oplog -c -T: a TIME column first" events oplog --csv -T -- \
	"TIME,ENDTIME_ns,PID,TID,COMM,OP,DEV,INO,OFFSET_b,BYTES,PRESENT,ABSENT,LATENCY_us,RET,FILE,WINDOW,INO_OUT,OFFSET_OUT"
if [ "$(ASAN_OPTIONS=detect_leaks=0 "$unit" events oplog -c -T 2>&1 | sed 1d | grep -cE '^[0-9]{2}:[0-9]{2}:[0-9]{2},[0-9]+,')" = 6 ]; then
	ok "oplog -c -T: each record starts with its HH:MM:SS"
else
	nok "oplog -c -T: each record starts with its HH:MM:SS" "$(ASAN_OPTIONS=detect_leaks=0 "$unit" events oplog -c -T 2>&1)"
fi
uhas "oplog without -c: the text columns as before" events oplog -- \
	"PID     TID     COMM             OP         DEV      INO                OFFSET         SIZE      PRESENT       ABSENT    LAT(ms)    RET FILENAME" \
	"324     325     dd               read       0:61     12                      0      8650752      8388608       262144    437.077 8650752 big"
uhas "hist -m: a histogram in milliseconds, as biolatency -m" hist hist -m -- \
	"dev 0:61 op read: count 3, average 4.333 ms" \
	"                   msecs : count      distribution" \
	"                  0 -> 1 : 1          |****************************************|" \
	"                  2 -> 3 : 1          |****************************************|" \
	"                  4 -> 7 : 0          |                                        |" \
	"                 8 -> 15 : 1          |****************************************|" \
	'aheadfs_op_latency_seconds_bucket{dev="0:61",op="read",le="0.002"} 1' \
	'aheadfs_op_latency_seconds_bucket{dev="0:61",op="read",le="0.016"} 3' \
	'aheadfs_op_latency_seconds_sum{dev="0:61",op="read"} 0.013000000'
uhas "hist -u: in microseconds" hist hist -u -- \
	"dev 0:61 op read: count 3, average 4333.3 us" \
	"                   usecs : count      distribution" \
	"            1024 -> 2047 : 1          |****************************************|" \
	"           8192 -> 16383 : 1          |****************************************|" \
	'aheadfs_op_latency_seconds_bucket{dev="0:61",op="read",le="0.002048"} 1'
uhas "hist: nanoseconds without -m or -u" hist hist -- \
	"                   nsecs : count      distribution" \
	"      1048576 -> 2097151 : 1          |****************************************|"
u_json=$(ASAN_OPTIONS=detect_leaks=0 "$unit" hist hist -m -j 2>&1 | head -1)
if python3 -c 'import json, sys
d = json.loads(sys.argv[1])
assert d["unit"] == "ms" and d["sum_ns"] == 13000000, d
assert [(b["lo_ns"], b["hi_ns"], b["count"]) for b in d["buckets"]] == [(0, 1999999, 1), (2000000, 3999999, 1), (8000000, 15999999, 1)], d' "$u_json" 2>"$tmp/py"; then
	ok "hist -m -j: "unit":"ms", buckets still in ns"
else
	nok "hist -m -j: buckets in ns" "$u_json $(cat "$tmp/py")"
fi
u "lost records: said while tracing (what since the last word, and in all), the total at exit" "aheadtrace: lost 5 events (ring buffer full; 5 in all): a larger -b, or fewer operations (-o, -p, -m)
aheadtrace: lost 7 events (ring buffer full; 12 in all): a larger -b, or fewer operations (-o, -p, -m)
aheadtrace: 12 events lost (ring buffer full)" lost 0 5 5 12 12
u "no lost records: nothing said" "" lost 0 0 0
u "oplog -d 3: over at 3 s, not before" "0 tracing
2.9 tracing
3 over
5 over" duration oplog -d 3 -- 0 2.9 3 5
u "oplog without -d: never over" "86400 tracing" duration oplog -- 86400

# oplog -j -T: the TIME column's HH:MM:SS as "timestamp" in each JSON line
# (-T is not ignored with -j); none without -T.
u_tj=$(ASAN_OPTIONS=detect_leaks=0 "$unit" events oplog -j -T 2>&1)
u_j=$(ASAN_OPTIONS=detect_leaks=0 "$unit" events oplog -j 2>&1)
if python3 -c 'import json, re, sys
t = [json.loads(l) for l in sys.argv[1].splitlines()]
j = [json.loads(l) for l in sys.argv[2].splitlines()]
assert len(t) == 6 and all(re.fullmatch(r"[0-2][0-9]:[0-5][0-9]:[0-6][0-9]", d["timestamp"]) for d in t), t
assert all("timestamp" not in d for d in j), j
assert [{k: v for k, v in d.items() if k != "timestamp"} for d in t] == j' "$u_tj" "$u_j" 2>"$tmp/py"; then
	ok "oplog -j -T: each JSON line has \"timestamp\":\"HH:MM:SS\", none without -T"
else
	nok "oplog -j -T: each JSON line has a timestamp" "$u_tj $(cat "$tmp/py")"
fi

# Copies: at_copy keeps a record for -o copy or -o remap by its method
# (at_copy_ops(), shared with the JSON writer): a dedupe is a remap, the
# lower's copy and the chunked one copy_file_range, a clone either (the
# tracepoint does not say which).
u "copy records: -o copy and -o remap by method, a clone both" "clone copy=1 remap=1
lower copy=1 remap=0
chunked copy=1 remap=0
dedupe copy=0 remap=1
4 copy=1 remap=1" copy-ops
u_cp=$(ASAN_OPTIONS=detect_leaks=0 "$unit" copies oplog -j 2>&1)
if python3 -c 'import json, sys
d = [json.loads(l) for l in sys.argv[1].splitlines()]
got = [(x["kind"], x["op"], x.get("method")) for x in d]
want = [("copy", "copy", "clone"), ("copy", "copy", "lower"), ("copy", "copy", "chunked"),
        ("copy", "remap", "dedupe"), ("meta", "op_40", None)]
assert got == want, got' "$u_cp" 2>"$tmp/py"; then
	ok "oplog -j: a dedupe is op remap, the other copies op copy, an unknown op op_40"
else
	nok "oplog -j: a dedupe is op remap" "$u_cp $(cat "$tmp/py")"
fi

# Prometheus histograms: an op this build does not know is op_<n>, one
# series per number (two were both op="?"); the last slot, which also
# counts everything beyond it, is in +Inf only (it was le="1099.51"); +Inf
# and _count are never below a bucket though count is read apart from the
# slots.
u_pe=$(ASAN_OPTIONS=detect_leaks=0 "$unit" prom-edge hist 2>&1)
if python3 - "$u_pe" <<'PY' 2>"$tmp/py"
import re, sys
lines = [l for l in sys.argv[1].splitlines() if not l.startswith("#")]
series = [l.rsplit(" ", 1)[0] for l in lines]
assert len(series) == len(set(series)), "duplicate series"
for op in ("op_40", "op_41"):
    b = [(l.split('le="')[1].split('"')[0], int(l.rsplit(" ", 1)[1]))
         for l in lines if l.startswith('aheadfs_op_latency_seconds_bucket{dev="0:61",op="%s",' % op)]
    assert len(b) == 40, (op, len(b))
    assert b[-2][0] == "549.755814" and b[-1] == ("+Inf", 2), (op, b[-3:])
    vals = [v for _, v in b]
    assert vals == sorted(vals), (op, vals)
    cnt = [l for l in lines if l.startswith('aheadfs_op_latency_seconds_count{dev="0:61",op="%s"}' % op)]
    assert cnt == ['aheadfs_op_latency_seconds_count{dev="0:61",op="%s"} 2' % op], cnt
assert not any("1099.5" in l for l in lines if "_bucket" in l)
assert "aheadfs_trace_dropped_total 3" in lines
PY
then
	ok "--prom: op_<n> for unknown ops, the clamped slot in +Inf only, +Inf = _count >= every bucket, dropped counts"
else
	nok "--prom: op_<n>, the clamped slot, monotonic buckets" "$(cat "$tmp/py")
$(grep -v '^#' <<<"$u_pe" | grep -E 'le="(5|\+)|_count|dropped')"
fi

# ahead_files walked while its LRU evicts can give a key twice: one line and
# one series per file, the newest entry's counts.
u_f=$(ASAN_OPTIONS=detect_leaks=0 "$unit" files prefetch --prom "$tmp/f.prom" --top-files 5 2>&1)
f_lines=$(grep -E '^0:61 ' <<<"$u_f" | awk '{ print $2, $5 }' | paste -sd,)
f_dup=$(grep -E '^aheadfs_file_' <<<"$u_f" | awk '{ print $1 }' | sort | uniq -d)
check "prefetch: a file walked twice is one line, its newest entry's (ino reads)" "7 4,8 1,9 2" "$f_lines"
check "prefetch --top-files: no duplicate series after a walk that met evictions" "" "$f_dup"
check "prefetch --top-files: each file's read bytes once" \
	'aheadfs_file_read_bytes_total{dev="0:61",ino="7"} 16384 aheadfs_file_read_bytes_total{dev="0:61",ino="8"} 4096 aheadfs_file_read_bytes_total{dev="0:61",ino="9"} 8192' \
	"$(grep '^aheadfs_file_read_bytes_total' <<<"$u_f" | paste -sd' ')"
# ahead_files' size: 10240, or 256 per possible CPU beyond 40.
u "ahead_files: 10240 entries up to 40 CPUs, then 256 per CPU" "1 10240
40 10240
41 10496
512 131072" files-max 1 40 41 512

# Counts a full map dropped (ahead_lost[AT_LOST_FULL]): said as lost records
# are, with the map that filled.
u "dropped counts: said while tracing and at exit, the map named" "aheadtrace: 5 operations not counted (ahead_hist full: 4096 entries; 5 in all)
aheadtrace: 7 operations not counted (ahead_hist full: 4096 entries; 12 in all)
aheadtrace: 12 operations not counted (ahead_hist full: 4096 entries)" dropped hist -- 0 5 5 12 12
u "dropped counts: hist -P names ahead_phist" "aheadtrace: 2 operations not counted (ahead_phist full: 8192 entries)" dropped hist -P -- 0 2
u "dropped counts: prefetch names ahead_mounts" "aheadtrace: 1 operations not counted (ahead_mounts full: 256 mounts)" dropped prefetch -- 1
u "no dropped counts: nothing said" "" dropped hist -- 0 0

# A closed stdout (aheadtrace ... | head): SIGPIPE is ignored, the run
# stops as after Ctrl-C with status 0, and what is written at exit still
# is: --prom after hist's last print, --svg after heatmap's (over a symlink
# planted at FILE: replaced, not followed).
rm -f "$tmp/pipe.prom"
urc "closed stdout: hist stops at once, status 0" "stopped: Broken pipe, before the count
rc=0" pipe hist -i 1 -c 3 --prom "$tmp/pipe.prom"
if grep -q '^aheadfs_op_latency_seconds_count{dev="0:61",op="read"} 3$' "$tmp/pipe.prom" 2>/dev/null; then
	ok "closed stdout: hist's --prom file still written"
else
	nok "closed stdout: hist's --prom file still written" "$(ls -la "$tmp")"
fi
urc "closed stdout: heatmap stops at once, status 0" "stopped: Broken pipe, before the count
rc=0" pipe heatmap -c 5 --svg "$tmp/s.svg"
if [ -f "$tmp/s.svg" ] && [ ! -L "$tmp/s.svg" ] && [ ! -e "$tmp/svg-victim" ] &&
   grep -q '^</svg>$' "$tmp/s.svg" && [ "$(stat -c %a "$tmp/s.svg")" = 644 ]; then
	ok "closed stdout: heatmap's --svg still written, over the planted symlink (mode 644), not through it"
else
	nok "closed stdout: heatmap's --svg still written, not through a symlink" "$(ls -la "$tmp")"
fi
for v in "oplog" "oplog -j" "oplog -c"; do
	urc "closed stdout: $v stops, status 0, no error" "stopped: Broken pipe
rc=0" pipe $v
done
urc "stdout full: oplog stops, says why, status 1" "stopped: No space left on device
aheadtrace: cannot write the output: No space left on device
rc=1" full oplog

"$at" --help >"$tmp/help" 2>&1
if [ $? = 0 ] && grep -q '^Usage: aheadtrace VERB' "$tmp/help" &&
   grep -q -- '--prom FILE' "$tmp/help"; then ok "--help"; else nok "--help" "$(cat "$tmp/help")"; fi

# --- environment errors: exit 1, one message ---
nobody=$(id -u nobody 2>/dev/null || echo 65534)
expect "unprivileged hist" 1 '^aheadtrace: permission denied: tracing needs root' \
	setpriv --reuid="$nobody" --regid="$nobody" --clear-groups "$at" hist
expect "unprivileged vfs" 1 '^aheadtrace: permission denied: tracing needs root' \
	setpriv --reuid="$nobody" --regid="$nobody" --clear-groups "$at" vfs -d 8:1
if [ -e /sys/module/aheadfs ]; then
	skip "aheadfs not loaded" "aheadfs is loaded on this host"
else
	expect "aheadfs not loaded" 1 '^aheadtrace: aheadfs is not loaded \(/sys/module/aheadfs missing\)' "$at" hist
fi
# Valid arguments get past the parser, to the module check.
expect "valid hist arguments accepted" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" hist -o read,unlink,getattr -i 2 -c 3 -j --prom "$tmp/m.prom"
expect "valid oplog arguments accepted" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" oplog -p 1 --min-lat 100 -j -o read
expect "valid oplog -T -P -j arguments accepted (-T: a timestamp field)" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" oplog -T -P -j
expect "valid hist -P with positional interval and count accepted" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" hist -P -j 2 3
expect "valid hist -C with -c and a positional interval accepted" 1 '^aheadtrace: aheadfs is not loaded' \
	env AHEADTRACE_MODULE_DIR=/nonexistent "$at" hist --per-comm -c 3 2
expect "valid vfs positional interval accepted" 1 '^aheadtrace: this kernel has no BTF' \
	env AHEADTRACE_KERNEL_BTF=/nonexistent "$at" vfs -d 8:1 1
expect "no kernel BTF" 1 '^aheadtrace: this kernel has no BTF \(/nonexistent: ' \
	env AHEADTRACE_KERNEL_BTF=/nonexistent "$at" vfs -d 8:1 -d /
# aheadfs.bpf.o reads the kernel's structures through CO-RE too: every verb
# checks for BTF before loading, after the module.
for v in hist oplog prefetch heatmap; do
	expect "no kernel BTF: $v says so before loading" 1 "^aheadtrace: this kernel has no BTF \(/nonexistent: .*CONFIG_DEBUG_INFO_BTF=y" \
		env AHEADTRACE_MODULE_DIR=/ AHEADTRACE_KERNEL_BTF=/nonexistent "$at" $v
done
# With the module "present" on a host that has no aheadfs, loading or
# attaching fails: one clear line, never a libbpf dump.
expect "attach failure is one line" 1 '^aheadtrace: (cannot attach raw_tp/aheadfs_|permission denied loading)' \
	env AHEADTRACE_MODULE_DIR=/ "$at" hist
# The same for the other verbs' program sets: where this host loads BPF,
# the verifier took them (the maps sized, prefetch's ahead_files too).
for v in "hist -P" oplog "oplog -o remap -P" prefetch heatmap; do
	expect "attach failure is one line: $v" 1 '^aheadtrace: (cannot attach raw_tp/aheadfs_|permission denied loading)' \
		env AHEADTRACE_MODULE_DIR=/ "$at" $v
done

# --- the objects ---
for o in aheadfs vfs vfsk; do
	if /usr/sbin/bpftool btf dump file "$out/$o.bpf.o" format c >"$tmp/$o.h" 2>&1 &&
	   grep -q '^struct at_hist_key {' "$tmp/$o.h" && grep -q '^struct at_hist {' "$tmp/$o.h"; then
		ok "$o.bpf.o carries BTF for its histogram key and value"
	else
		nok "$o.bpf.o carries BTF for its histogram key and value"
	fi
done
# --cgroup: a cgroup array ahead_cgroup (BPF_MAP_TYPE_CGROUP_ARRAY, 8), and
# every program asks bpf_current_task_under_cgroup() (helper 37) of it.
if bpftool_raw=$(/usr/sbin/bpftool btf dump file "$out/aheadfs.bpf.o" format raw 2>&1) &&
   python3 - "$bpftool_raw" <<'PY'
import re, sys
types = {}
for line in sys.argv[1].splitlines():
    m = re.match(r"\[(\d+)\] (\w+) '([^']*)'(.*)", line)
    if m:
        cur = int(m.group(1))
        types[cur] = [m.group(2), m.group(3), m.group(4), []]
    elif line.startswith("\t'") and types:
        types[cur][3].append(line.strip())
var = [k for k, t in types.items() if t[0] == "VAR" and t[1] == "ahead_cgroup"]
st = types[int(re.search(r"type_id=(\d+)", types[var[0]][2]).group(1))]
member = [m for m in st[3] if m.startswith("'type'")][0]
ptr = types[int(re.search(r"type_id=(\d+)", member).group(1))]
arr = types[int(re.search(r"type_id=(\d+)", ptr[2]).group(1))]
sys.exit(0 if arr[0] == "ARRAY" and "nr_elems=8" in arr[2] else 1)
PY
then
	ok "aheadfs.bpf.o: ahead_cgroup is a cgroup array (BPF_MAP_TYPE_CGROUP_ARRAY)"
else
	nok "aheadfs.bpf.o: ahead_cgroup is a cgroup array" "$(grep -n ahead_cgroup <<<"$bpftool_raw")"
fi
# ahead_lost: a per-CPU array (6) of two counters, lost records and the
# counts a full map dropped (enum at_lost); ahead_files an LRU hash (9) of
# AT_MAX_FILES as compiled (aheadtrace prefetch sizes it at load).
if python3 - "$bpftool_raw" <<'PY'
import re, sys
types = {}
for line in sys.argv[1].splitlines():
    m = re.match(r"\[(\d+)\] (\w+) '([^']*)'(.*)", line)
    if m:
        cur = int(m.group(1))
        types[cur] = [m.group(2), m.group(3), m.group(4), []]
    elif line.startswith("\t'") and types:
        types[cur][3].append(line.strip())
def member(var, name):
    v = [k for k, t in types.items() if t[0] == "VAR" and t[1] == var][0]
    st = types[int(re.search(r"type_id=(\d+)", types[v][2]).group(1))]
    m = [m for m in st[3] if m.startswith("'%s'" % name)][0]
    ptr = types[int(re.search(r"type_id=(\d+)", m).group(1))]
    arr = types[int(re.search(r"type_id=(\d+)", ptr[2]).group(1))]
    return int(re.search(r"nr_elems=(\d+)", arr[2]).group(1))
got = (member("ahead_lost", "type"), member("ahead_lost", "max_entries"),
       member("ahead_files", "type"), member("ahead_files", "max_entries"))
sys.exit(0 if got == (6, 2, 9, 10240) else print(got) or 1)
PY
then
	ok "aheadfs.bpf.o: ahead_lost a per-CPU array of 2 counters (lost, dropped), ahead_files an LRU of 10240"
else
	nok "aheadfs.bpf.o: ahead_lost of 2 counters, ahead_files of 10240" "$(grep -nE 'ahead_(lost|files)' <<<"$bpftool_raw")"
fi
under=$(llvm-objdump -d "$out/aheadfs.bpf.o" | awk '/^[0-9a-f]+ <[a-z_]+>:$/ { f = $2 } /[[:space:]]call 37$/ { print f }' | sort -u | tr -d '<>:' | paste -sd' ')
if [ "$under" = "at_copy at_meta at_meta_ops at_prefetch at_read" ]; then
	ok "every aheadfs program can filter by cgroup (bpf_current_task_under_cgroup): $under"
else
	nok "every aheadfs program can filter by cgroup" "programs calling helper 37: $under"
fi

# No .rodata/.bss/.data: bpftool cannot set them, and pinmaps would pin them.
for o in aheadfs vfs vfsk; do
	secs=$(llvm-objdump -h "$out/$o.bpf.o" 2>/dev/null | awk '{print $2}' | grep -E '^\.(rodata|bss|data)' || true)
	if [ -z "$secs" ]; then ok "$o.bpf.o has no global data sections"; else nok "$o.bpf.o has no global data sections" "$secs"; fi
done
# Map names are pin names: unique across the objects and at most 15 chars.
maps=$(for o in aheadfs vfs vfsk; do llvm-objdump -t "$out/$o.bpf.o" | awk '$4 == ".maps" { print $NF }'; done)
if [ -n "$maps" ] && [ -z "$(sort <<<"$maps" | uniq -d)" ] && ! grep -Eq '.{16}' <<<"$maps"; then
	ok "map names unique and short: $(echo $maps)"
else
	nok "map names unique and short" "$maps"
fi

# --- the ABI mirror: aheadtrace.h against kmod ---
kops=$(sed -n '/^enum aheadfs_meta_op {/,/^};/p' "$top/kmod/aheadfs.h" |
	grep -o 'AHEADFS_OP_[a-z_]*' | sed 's/AHEADFS_OP_//' | tr '\n' ' ')
aops=$(env AHEADTRACE_MODULE_DIR=/ "$at" hist -o '?' 2>&1 | sed -n "s/.*known: //p" | tr -s ' ' | sed 's/ *$/ /')
if [ -n "$kops" ] && [ "$kops" = "$aops" ]; then
	ok "meta op numbering matches kmod/aheadfs.h"
else
	nok "meta op numbering matches kmod/aheadfs.h" "kmod: $kops
aheadtrace: $aops"
fi
# Each struct at_<event>_args lists TP_PROTO's arguments in order.
for ev in read prefetch window copy meta; do
	proto=$(awk -v ev="aheadfs_$ev" '
		$0 ~ "^TRACE_EVENT\\(" ev "," { on = 1 }
		on && /TP_ARGS\(/ { sub(/.*TP_ARGS\(/, ""); s = $0
			while (s !~ /\)/) { getline; s = s " " $0 }
			sub(/\).*/, "", s); gsub(/[ \t]/, "", s); print s; exit }
	' "$top/kmod/trace.h")
	mirror=$(sed -n "/^struct at_${ev}_args {/,/^};/p" "$here/aheadtrace.h" |
		grep -Eo '__[us]64 [a-z_]+;' | sed -E 's/__[us]64 ([a-z_]+);/\1/' | paste -sd, -)
	if [ -n "$proto" ] && [ "$proto" = "$mirror" ]; then
		ok "struct at_${ev}_args mirrors TP_ARGS of aheadfs_$ev"
	else
		nok "struct at_${ev}_args mirrors TP_ARGS of aheadfs_$ev" "trace.h: $proto
aheadtrace.h: $mirror"
	fi
done
# Names come from the dentry each tracepoint passes, not from probes on the
# module's functions (which would make them an interface, and break when one
# is renamed or inlined): aheadfs.bpf.o holds raw tracepoint programs only.
secs_a=$(llvm-objdump -h "$out/aheadfs.bpf.o" 2>/dev/null | awk '{print $2}' |
	grep -E '^[a-z_]+/' | sed 's,/.*,,' | sort -u | paste -sd, -)
if [ "$secs_a" = raw_tp ]; then
	ok "aheadfs.bpf.o attaches to tracepoints only (raw_tp)"
else
	nok "aheadfs.bpf.o attaches to tracepoints only (raw_tp)" "program sections: $secs_a"
fi
copy_k=$(grep -Eo 'AHEADFS_COPY_[A-Z]+[[:space:]]+[0-9]+' "$top/kmod/trace.h" | awk '{print tolower($1) "=" $2}' | sed 's/ahead//' | paste -sd, -)
copy_a=$(sed -n '/^enum at_copy_method {/,/^};/p' "$here/aheadtrace.h" | grep -Eo 'AT_COPY_[A-Z]+' |
	awk '{print tolower($1) "=" NR - 1}' | sed 's/^at_/fs_/' | paste -sd, -)
if [ -n "$copy_k" ] && [ "$copy_k" = "$copy_a" ]; then
	ok "copy methods match kmod/trace.h"
else
	nok "copy methods match kmod/trace.h" "trace.h: $copy_k
aheadtrace.h: $copy_a"
fi

# make CFLAGS=-O0 replaces the user's flags only, not what the build needs.
mkdir -p "$tmp/b0" "$tmp/userland"
cp -a "$here/Makefile" "$here"/*.c "$here"/*.h "$out" "$tmp/b0/"
cp "$top/userland/jsonstr.h" "$tmp/userland/"
if make -s -C "$tmp/b0" CFLAGS=-O0 aheadtrace >"$tmp/b0.log" 2>&1 && [ -x "$tmp/b0/aheadtrace" ]; then
	ok "make CFLAGS=-O0 aheadtrace builds"
else
	nok "make CFLAGS=-O0 aheadtrace builds" "$(tail -5 "$tmp/b0.log")"
fi

echo "1..$n"
[ "$failed" = 0 ]
