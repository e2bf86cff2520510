# SPDX-License-Identifier: GPL-2.0
# kselftest: not installed
#
# ktap.sh: the KTAP lines of the shell tests, sourced by each of them
# (". "$(dirname "$0")/ktap.sh"; bpf/tests/host.sh too), never run alone;
# installed beside them for run_kselftest.sh.  A test prints "TAP version
# 13" itself, then:
#
#   ok NAME                        a passing check
#   nok NAME [DETAIL]              a failing one; DETAIL's lines as comments
#   check NAME WANT GOT [DETAIL]   ok when WANT and GOT are the same string
#   bail REASON...                 "Bail out!", the plan so far, exit 1
#
# and its plan, "1..$n", at the end; $failed counts the failures, for the
# test's exit status.

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n $1"; }
nok() {
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n $1"
	[ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/# /'
	return 0
}
check() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		nok "$1" "want: $2
got:  $3${4:+
$4}"
	fi
}
bail() { echo "Bail out! $*"; echo "1..$((n + 1))"; exit 1; }
