#!/usr/bin/env bash
# host-tests.sh AHEADCTL: aheadctl's host tests, TAP on stdout.
# Fake sysfs/procfs trees (fixture.sh), the Redfish emulator (redfish_emu.py)
# and OpenIPMI's ipmi_sim on 127.0.0.1, vendor tools through -n, numa bw on
# this host.  Exit status 1 if any test failed.
set -u
A=${1:?usage: host-tests.sh PATH/TO/aheadctl}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/fixture.sh"
tmp=$(mktemp -d /tmp/aheadctl-test.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

n=0 failed=0
echo "TAP version 13"
pass() { n=$((n + 1)); echo "ok $n $1"; }
fail() {
	n=$((n + 1)); failed=1; echo "not ok $n $1"
	echo "# rc=$rc stdout: $(head -c 1500 <<<"$out" | tr '\n' '|')"
	echo "# stderr: $(head -c 800 <<<"$err" | tr '\n' '|')"
}
skip() { n=$((n + 1)); echo "ok $n $1 # SKIP $2"; }
# run ARGS...: runs aheadctl, sets rc, out, err.
run() { out=$("$A" "$@" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err"); }
# t NAME CONDITION...: the condition is evaluated with the last run's results.
t() { local name=$1; shift; if eval "$@"; then pass "$name"; else fail "$name"; fi; }
json_ok() { python3 -c 'import json,sys; json.loads(sys.stdin.read())' <<<"$out" 2>/dev/null; }
# jq-like probe: jp 'PYTHON EXPR on d' prints its value.
jp() { python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print($1)" <<<"$out" 2>/dev/null; }
has() { grep -qF -- "$1" <<<"$out"; }
haserr() { grep -qF -- "$1" <<<"$err"; }
one_line_err() { [ "$(grep -c . <<<"$err")" -ge 1 ] && grep -q '^aheadctl: ' <<<"$err"; }

F=$tmp/f
# apply's record of what it replaced (AHEADCTL_VAR_ROOT/lib/aheadctl): never the host's /var.
export AHEADCTL_VAR_ROOT=$tmp/var
use() { export AHEADCTL_SYSFS_ROOT=$1/sys AHEADCTL_PROC_ROOT=$1/proc AHEADCTL_ETC_ROOT=$1/etc AHEADCTL_VAR_ROOT=$1/var; }
fresh() { rm -rf "$F"; mk_fixture "$F"; use "$F"; }
aff() { cat "$F/proc/irq/$1/smp_affinity_list"; }
xps() { cat "$F/sys/devices/pci0000:80/0000:80:00.0/0000:81:00.0/net/eth0/queues/tx-$1/xps_cpus"; }
# Every file's content (as read: a trailing newline does not count).
tree() { (cd "$F" && find . -type f | sort | while read -r f; do printf '%s=%s\n' "$f" "$(tr -d '\0' <"$f")"; done); }
snap() { tree >"$tmp/snap.$1"; }
same() { tree | cmp -s - "$tmp/snap.$1"; }

# The tests, one file per area (host.d/NN-AREA.sh), sourced in order: each
# starts from the state it needs (fresh, use, its own daemons in pids).
for section in "$here"/host.d/*.sh; do
	echo "# ---- $(basename "$section" .sh)"
	. "$section"
done

echo "1..$n"
exit $failed
