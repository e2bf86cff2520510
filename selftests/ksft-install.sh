#!/usr/bin/env bash
# The selftests the kselftest way (runs in a guest with aheadfs loaded, as
# root): `make -C selftests install` makes a tree that the kernel's
# run_kselftest.sh runs, its list names every selftest and the tree holds
# each of them, and for a subset run_kselftest.sh reports result for result
# (each line's description and verdict) the same as the same programs run
# the way scripts/guest-run runs them.  The
# kselftest run is given no lower: each test makes its own (aheadfs_env.sh),
# as on a machine with only the module.  KTAP on stdout.
#
#   AHEADFS_SCRATCH=<empty dir> AHEADFS_FSTYPE=ext4 AHEADFS_KO=<aheadfs.ko> \
#       selftests/ksft-install.sh
#
# AHEADFS_KSFT_TESTS overrides the subset; AHEADFS_KSFT_INSTALL the tree's
# place (default /run/aheadfs-test/ksft in a test guest).  AHEADFS_KO is
# passed on: in the guest the module is not in /lib/modules, and params.sh
# reloads it from that file.
#
# guest-run: fstypes=ext4 (its subject is the installed tree, not the lower)
# guest-run: last (it compares with the suite's own results of its subset)
# kselftest: not installed (it tests the installation)
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
coll=filesystems/aheadfs
# One test of each kind the installed tree runs differently: a C program
# (the harness in aheadfs_test.h re-runs itself under aheadfs_env.sh) and a
# shell test (its first lines do the same).  Every other program or script
# goes the same way as one of these two, and `make check` runs them all
# the guest-run way anyway; the two run both ways here, result for result.
# errors is the quickest program (7 s under TCG); params.sh is the only
# shell test under 70 s (and reloads the module from AHEADFS_KO, which the
# installed tree must pass on).  Until Nov 2026 the subset was errors,
# attr, creds, export, namespace and params.sh: 196-211 s a kernel.  Under
# guest-run the guest-run way's results are the suite's own (step 4):
# each of the subset runs once more, by run_kselftest.sh, not twice; and a
# test whose source says "guest-run: run by ksft-install" (params.sh, which
# reloads the module 17 times) runs here only, by run_kselftest.sh, its
# results written as the suite's (step 5): once a kernel.
tests=${AHEADFS_KSFT_TESTS:-errors params.sh}
fstype=${AHEADFS_FSTYPE:-ext4}

. "$(dirname "$0")/ktap.sh"

echo "TAP version 13"
[ "$(id -u)" = 0 ] || bail "needs root"
[ -n "${AHEADFS_SCRATCH:-}" ] && [ -d "$AHEADFS_SCRATCH" ] || bail "AHEADFS_SCRATCH is not a directory"
[ -e /sys/module/aheadfs ] || bail "aheadfs is not loaded"
if [ -n "${AHEADFS_KSFT_INSTALL:-}" ]; then
	dest=$AHEADFS_KSFT_INSTALL
elif mountpoint -q /run/aheadfs-test; then
	dest=/run/aheadfs-test/ksft
else
	dest=$AHEADFS_SCRATCH/ksft
fi
work=$AHEADFS_SCRATCH/ksft-work
rm -rf "$dest" "$work"
mkdir -p "$work"
trap 'rm -rf "$dest" "$work"' EXIT

# counts: "pass P fail F skip S" of the KTAP results on stdin (one level).
counts() {
	awk '/^ok [0-9]+ .*# SKIP/ { s++; next } /^ok [0-9]+ / { p++ } /^not ok [0-9]+ / { f++ }
	     END { printf "pass %d fail %d skip %d\n", p, f, s }'
}
# results: one line "VERDICT DESCRIPTION" per KTAP result on stdin (one
# level; VERDICT ok, not-ok or skip, the number left out), in order: what
# two runs of one test are compared by.
results() {
	sed -nE 's/^ok [0-9]+ (.*[^ ]) *# SKIP.*/skip \1/p; t
		 s/^ok [0-9]+ (.*)/ok \1/p; t
		 s/^not ok [0-9]+ (.*)/not-ok \1/p'
}
# top_verdict NAME <OUTPUT: what run_kselftest.sh's own line says of NAME.
top_verdict() {
	awk -v t=" selftests: $coll: $1" '/^(not )?ok [0-9]+ selftests: / && index($0, t) {
		print /^not ok/ ? "not ok" : / # SKIP$/ ? "skip" : "ok" }'
}
verdict() { # verdict RC: what run_kselftest.sh makes of an exit status
	case $1 in 0) echo ok ;; 4) echo skip ;; *) echo "not ok" ;; esac
}

# 1. The install, from the tree's own Makefile.
if out=$(make -C "$top/selftests" install INSTALL_PATH="$dest" 2>&1); then
	ok "make -C selftests install INSTALL_PATH=$dest"
else
	nok "make -C selftests install INSTALL_PATH=$dest" "$(tail -n 30 <<<"$out")"
	bail "no installed tree"
fi

# 2. What the kernel's make install puts there.
miss=
for f in run_kselftest.sh kselftest/runner.sh kselftest/prefix.pl kselftest-list.txt \
	"$coll/settings" "$coll/config" "$coll/aheadfs_env.sh" "$coll/ktap.sh"; do
	[ -s "$dest/$f" ] || miss="$miss $f"
done
check "the tree has the runner, the list, settings, config, aheadfs_env.sh and ktap.sh" "" "$miss"
check "settings sets a timeout" "1" "$(grep -c '^timeout=[0-9]\+$' "$dest/$coll/settings")"
# A kernel with its checkers on is that much slower (guest-run's
# AHEADFS_TIMEOUT_SCALE): the runner's bound too, as an admin would edit
# the installed settings on a slow machine.
scale=${AHEADFS_TIMEOUT_SCALE:-1}
if [ "$scale" -gt 1 ]; then
	secs=$(sed -n 's/^timeout=//p' "$dest/$coll/settings")
	sed -i "s/^timeout=.*/timeout=$((secs * scale))/" "$dest/$coll/settings"
	echo "# settings: $(grep '^timeout=' "$dest/$coll/settings") (x$scale)"
fi

# 3. The list names every selftest of the tree, and the runner reads it.
want=$( { ls "$here"/*.c | xargs -n1 basename | sed 's/\.c$//'
	  grep -L '^# kselftest: not installed' "$here"/*.sh | xargs -n1 basename; } |
	sed "s|^|$coll:|" | sort)
check "kselftest-list.txt lists every selftest" "$want" "$(sort "$dest/kselftest-list.txt")"
check "run_kselftest.sh -l lists them" "$want" "$("$dest/run_kselftest.sh" -l | sort)"
miss=
for t in $(sed -n "s|^$coll:||p" "$dest/kselftest-list.txt"); do
	[ -f "$dest/$coll/$t" ] && [ -x "$dest/$coll/$t" ] || miss="$miss $t"
done
check "every listed selftest is in the tree, executable" "" "$miss"

# 4. The subset, the guest-run way: over the lower under test.  Under
# guest-run (AHEADFS_RESULTS=build/results/RELEASE-FSTYPE, this test last
# of all, AHEADFS_RESULTS_RAN the list of what this run ran) the suite has
# run them already: their results are its own (RELEASE-FSTYPE-NAME.tap,
# each line "FSTYPE.NAME: "), and nothing runs twice.  Otherwise (by hand,
# or no result of this run's) they run here.
declare -A want_c want_v
# runner_only T: the suite runs T by run_kselftest.sh only, here, and takes
# its results (guest-run's AHEADFS_KSFT_RUNNER_ONLY; "guest-run: run by
# ksft-install" in T's source).
runner_only() { [[ " ${AHEADFS_KSFT_RUNNER_ONLY:-} " == *" $1 "* ]] && [ -n "${AHEADFS_RESULTS:-}" ]; }
for t in $tests; do
	t0=$(date +%s)
	runner_only "$t" && continue
	suite=${AHEADFS_RESULTS:+$AHEADFS_RESULTS-${t%.sh}.tap}
	# A result of this run's only (AHEADFS_RESULTS_RAN: what ran so far).
	if [ -n "$suite" ] && [ -f "$suite" ] && grep -qE '^(not )?ok [0-9]+ ' "$suite" &&
	   grep -qxF "$fstype.${t%.sh}" "${AHEADFS_RESULTS_RAN:-/dev/null}"; then
		sed -E "s/^((not )?ok [0-9]+ )$fstype\.${t%.sh}: /\1/" "$suite" >"$work/$t.runner"
		want_c[$t]=$(counts <"$work/$t.runner")
		# The suite's verdict, as run_kselftest.sh would make it of the
		# program's exit: a failure fails it, all skips are a skip.
		read -r _ p _ f _ k <<<"${want_c[$t]}"
		if [ "$f" != 0 ] || grep -q '^Bail out!' "$work/$t.runner"; then
			want_v[$t]="not ok"
		elif [ "$p" = 0 ] && [ "$k" != 0 ]; then
			want_v[$t]=skip
		else
			want_v[$t]=ok
		fi
		echo "# the suite's own run: $t: ${want_c[$t]}, ${want_v[$t]} (${suite##*/})"
		continue
	fi
	if [ -f "$here/$t" ]; then prog=$here/$t; else prog=$top/build/selftests/$t; fi
	mkdir -p "$work/r-$t"
	AHEADFS_SCRATCH=$work/r-$t AHEADFS_FSTYPE=$fstype timeout -k 10 300 "$prog" \
		>"$work/$t.runner" 2>&1 </dev/null
	rc=$?
	want_c[$t]=$(counts <"$work/$t.runner")
	want_v[$t]=$(verdict $rc)
	echo "# guest-run way: $t: ${want_c[$t]}, ${want_v[$t]} ($(($(date +%s) - t0)) s)"
done

# 5. The same, by run_kselftest.sh from the installed tree, with no lower
# given; one test a run, its output (-s) in output.log: the runner's
# default, appending to /dev/stdout, loses lines under a redirection.
for t in $tests; do
	t0=$(date +%s)
	rm -f "$dest/output.log"
	env -u AHEADFS_SCRATCH -u AHEADFS_ENV_RUNNING AHEADFS_FSTYPE="$fstype" \
		"$dest/run_kselftest.sh" -s -t "$coll:$t" >"$work/$t.top" 2>&1 </dev/null
	sed 's/^# //' "$dest/output.log" >"$work/$t.ksft" 2>/dev/null
	got_v=$(top_verdict "$t" <"$work/$t.top")
	got_c=$(counts <"$work/$t.ksft")
	echo "# run_kselftest.sh: $t: $got_c, ${got_v:-no result} ($(($(date +%s) - t0)) s)"
	if runner_only "$t"; then
		# Its results are the suite's (FSTYPE.NAME: as guest-run
		# names them), whole, plan and comments included; its own
		# verdict must be what they make of it.
		suite=$AHEADFS_RESULTS-${t%.sh}.tap
		sed -E "s/^((not )?ok [0-9]+ )/\1$fstype.${t%.sh}: /" "$work/$t.ksft" >"$suite"
		read -r _ p _ f _ k <<<"$got_c"
		planned=$(sed -nE 's/^1\.\.([0-9]+).*/\1/p' "$work/$t.ksft" | tail -n 1)
		if [ "$f" != 0 ] || grep -q '^Bail out!' "$work/$t.ksft"; then
			want="not ok"
		elif [ "$p" = 0 ] && [ "$k" != 0 ]; then
			want=skip
		else
			want=ok
		fi
		if [ "$p$f$k" = 000 ] || [ "$planned" != $((p + f + k)) ]; then
			echo "not ok 9999 $fstype.${t%.sh}: run_kselftest.sh gave $((p + f + k)) of ${planned:-no} planned results" >>"$suite"
			nok "$t: run by run_kselftest.sh for the suite: all its results" "$(tail -n 20 "$work/$t.top")"
		elif [ "$(wc -l <<<"$got_v")" != 1 ] || [ "$got_v" != "$want" ]; then
			nok "$t: run by run_kselftest.sh for the suite: its verdict is its results'" "results: $got_c, $want
run_kselftest.sh: ${got_v:-no result}"
		else
			ok "$t: run by run_kselftest.sh for the suite ($(basename "$suite")): $got_c, $got_v"
		fi
		continue
	fi
	# Result for result: the same descriptions with the same verdicts, in
	# the same order, and the same exit verdict; counts alone would take
	# one failure traded for another for agreement.
	diff=$(diff <(results <"$work/$t.runner") <(results <"$work/$t.ksft"))
	if [ "$(wc -l <<<"$got_v")" != 1 ]; then
		nok "$t: run_kselftest.sh gives one result for it" "$(cat "$work/$t.top")"
	elif [ -z "$diff" ] && [ "$got_v" = "${want_v[$t]}" ] && [ "$got_c" = "${want_c[$t]}" ]; then
		ok "$t: run_kselftest.sh and guest-run agree result for result: ${want_c[$t]}, ${want_v[$t]}"
	else
		nok "$t: run_kselftest.sh and guest-run agree result for result" "guest-run way:    ${want_c[$t]}, ${want_v[$t]}
run_kselftest.sh: $got_c, ${got_v:-no result}
results that differ (< guest-run way, > run_kselftest.sh):
$(head -n 20 <<<"$diff")
run_kselftest.sh's comments:
$(grep -E '^#' "$work/$t.ksft" | head -n 10)"
	fi
done
# Each test ran over its own lower, and left nothing mounted.
check "no lower or mount left behind by run_kselftest.sh" "" \
	"$(awk '$2 ~ /\/aheadfs-[^/]*\.[A-Za-z0-9]+\/lower/ {print $2}' /proc/mounts)"

# 6. The comparison tells a broken tree: one with the first test gone.
t=${tests%% *}
cp -a "$dest" "$work/broken"
rm -f "$work/broken/$coll/$t" "$work/broken/output.log"
env -u AHEADFS_SCRATCH -u AHEADFS_ENV_RUNNING \
	"$work/broken/run_kselftest.sh" -s -t "$coll:$t" >"$work/broken.top" 2>&1 </dev/null
got="$(sed 's/^# //' "$work/broken/output.log" 2>/dev/null | counts), $(top_verdict "$t" <"$work/broken.top")"
if [ "$got" != "${want_c[$t]}, ${want_v[$t]}" ] && [ "${got##*, }" = "not ok" ]; then
	ok "a tree with $t missing fails the comparison ($got)"
else
	nok "a tree with $t missing fails the comparison" "$got
$(cat "$work/broken.top")"
fi

echo "1..$n"
