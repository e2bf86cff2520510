# 10-general.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
# ---- general: options, help, the JSON document ----
run help
t "help: exit 0 and every object's verbs" '[ $rc = 0 ] && has "irq show" && has "irq set" && has "irq ban" && has "numa bw" && has "fs show" && has "fs set" && has "bios show" && has "bios set" && has "power-cycle" && has doctor'
full=$out
for obj in irq numa fs bios doctor; do
	run $obj help
	t "$obj help: its own verbs only, exit 0, a part of 'aheadctl help'" '[ $rc = 0 ] && [ -z "$err" ] && [ -n "$out" ] && ! grep -v "^      " <<<"$out" | grep -vq "^  $obj" && [[ $full == *"$out"* ]]'
	obj_help=$out
	run $obj --help
	t "$obj --help: the same as '$obj help'" '[ $rc = 0 ] && [ "$out" = "$obj_help" ]'
done
run --help
t "--help: the whole help" '[ $rc = 0 ] && [ "$out" = "$full" ]'
run -h
t "-h: the whole help" '[ $rc = 0 ] && [ "$out" = "$full" ]'
run -j numa help
t "-j numa help: the help as one JSON document" '[ $rc = 0 ] && json_ok && [ "$(jp "\"numa bw\" in d[\"help\"] and \"irq\" not in d[\"help\"]")" = True ]'
run
t "no arguments: usage, exit 2" '[ $rc = 2 ] && haserr usage && haserr "aheadctl: no OBJECT given"'
run frob
t "unknown object: one message naming the objects, exit 2" '[ $rc = 2 ] && [ -z "$out" ] && [ "$(grep -c . <<<"$err")" = 1 ] && haserr "aheadctl: unknown object '"'"'frob'"'"' (irq, numa, fs, bios, doctor, " && haserr ", help)"'
run -x irq
t "unknown option: exit 2" '[ $rc = 2 ] && [ "$err" = "aheadctl: unknown option '"'"'-x'"'"' (see '"'"'aheadctl help'"'"')" ]'
run --bogus irq
t "unknown long option: named, exit 2" '[ $rc = 2 ] && haserr "unknown option '"'"'--bogus'"'"'"'
run -jx irq
t "unknown option inside a group: named alone, exit 2" '[ $rc = 2 ] && haserr "unknown option '"'"'-x'"'"'"'
run --version
t "--version: aheadctl and a version, exit 0" '[ $rc = 0 ] && grep -Eq "^aheadctl [^ ]+$" <<<"$out"'
version=$out
if v=$(git -C "$here" describe --tags --always 2>/dev/null); then
	t "--version: the git describe of the tree it was built from" '[ "$out" = "aheadctl $v" ]'
else
	skip "--version: the git describe of the tree" "not a git checkout"
fi
run -V
t "-V: the same" '[ $rc = 0 ] && grep -Eq "^aheadctl [^ ]+$" <<<"$out"'
run -j --version
t "-j --version: the version as JSON" '[ $rc = 0 ] && json_ok && [ "aheadctl $(jp "d[\"version\"]")" = "$version" ]'

# Combined short options: -jn, -nj, -jny, long forms; -n is seen in the JSON.
fresh
snap opts
for o in -jn -nj -jny -yjn "-j -n" "--json --dry-run --yes"; do
	run $o irq set dev eth0 policy local
	t "global options '$o': JSON and a dry run" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"applied\"]")" = False ] && same opts'
done
run irq -j show dev eth0
t "a global option after OBJECT is the verb's (refused), exit 2" '[ $rc = 2 ] && haserr "unknown irq verb '"'"'-j'"'"'"'
run numa bw -j
t "numa bw -j: global options go before OBJECT, exit 2" '[ $rc = 2 ] && haserr "unknown argument '"'"'-j'"'"'"'

# -j: exactly one document on stdout, for errors too.
run -j frob
t "-j unknown object: the error document, exit 2" '[ $rc = 2 ] && json_ok && [ "$(jp "d[\"error\"][\"exit\"]")" = 2 ] && [ "aheadctl: $(jp "d[\"error\"][\"message\"]")" = "$err" ] && [ "$(jp "list(d)")" = "['"'"'error'"'"']" ]'
run --bogus -j irq
t "-j after a bad option still shapes the error" '[ $rc = 2 ] && json_ok && [ "$(jp "d[\"error\"][\"exit\"]")" = 2 ]'
run -j irq show dev nope0
t "-j failed verb: the error document with exit 1 and stderr's message" '[ $rc = 1 ] && json_ok && [ "$(jp "d[\"error\"][\"exit\"]")" = 1 ] && [ "aheadctl: $(jp "d[\"error\"][\"message\"]")" = "$err" ]'
run -j numa bw --runs 0
t "-j usage error in a verb: the error document with exit 2" '[ $rc = 2 ] && json_ok && [ "$(jp "d[\"error\"][\"message\"]")" = "--runs '"'"'0'"'"': expected 1 to 100" ]'
# fs set opens its array, writes one entry, then the module refuses the
# second value: the half-written array is replaced by the error document.
fresh
ln -sfn /proc/self/oom_score_adj "$F/sys/fs/aheadfs/0:58/window_kb"
run -j fs set /mnt/ahead txn_kb=4096 window_kb=1024
t "-j error after the document began: only the error document" '[ $rc = 1 ] && json_ok && [ "$(jp "list(d)")" = "['"'"'error'"'"']" ] && jp "d[\"error\"][\"message\"]" | grep -q "writing window_kb=1024 failed" && haserr "restored /mnt/ahead txn_kb to 8192"'
fresh
run -j doctor --skip-bw
t "-j doctor with findings: its own document stands with exit 1" '[ $rc = 1 ] && json_ok && [ "$(jp "d[\"count\"] > 0 and \"error\" not in d")" = True ]'
# Every verb of irq, fs and numa (doctor above): one valid document.  Dry
# runs and reads: the fixture stays as it is.
fresh
snap verbs
for v in "irq show dev eth0" "-n irq set dev eth0 policy local" "-n irq ban dev eth0" "fs show" "fs show /mnt/ahead" "-n fs set /mnt/ahead txn_kb=4096" "-n numa bw" "help" "irq help"; do
	run -j $v
	t "-j $v: one valid JSON document" '[ $rc = 0 ] && json_ok && same verbs'
done

# JSON is valid UTF-8 whatever the bytes: control characters escaped,
# invalid sequences as U+FFFD (one per maximal subpart, as Python decodes).
utf8_same() {	# RAW-BYTES-FILE PYTHON-EXPR: the JSON string equals the bytes decoded with 'replace'
	python3 -c '
import json, sys
raw = open(sys.argv[1], "rb").read().rstrip(b"\n")
d = json.loads(sys.stdin.buffer.read().decode("utf-8"))	# strict: invalid UTF-8 fails
v = eval(sys.argv[2])
sys.exit(0 if v == raw.decode("utf-8", "replace") else 1)' "$1" "$2" <<<"$out"
}
fresh
printf 'eth0-q\001\033[31m\177\xff\xc0\xaf\xe2\x82z\xed\xa0\x80\xf4\x90caf\xc3\xa9\xf0\x9f\x92\xbe' >"$tmp/irqname"
printf ' 44:          0          0          0          0   IR-PCI-MSI 1048580-edge      %s\n' "$(cat "$tmp/irqname")" >>"$F/proc/interrupts"
mk_irq "$F" 44 2
run -j irq show dev eth0
t "-j: an IRQ name with control characters and invalid UTF-8 stays valid JSON" '[ $rc = 0 ] && utf8_same "$tmp/irqname" "[i[\"name\"] for i in d[\"irqs\"] if i[\"irq\"] == 44][0]"'
t "-j: control characters and DEL are escaped, never raw" '! LC_ALL=C grep -q "[[:cntrl:]]" <<<"$out" && grep -qF "\\u0001\\u001b[31m\\u007f\\ufffd\\ufffd\\ufffd\\ufffdz" <<<"$out" && grep -qF "café" <<<"$out"'
fresh
# A mount point with a newline (mountinfo's \012) and raw invalid bytes.
printf '/mnt/bad\nx\xff\xfey' >"$tmp/mntname"
printf '62 22 0:58 / /mnt/bad\\012x\xff\xfey rw - aheadfs /srv/a rw\n' >>"$F/proc/self/mountinfo"
run -j fs show
t "-j: a mount point with a newline and invalid UTF-8 stays valid JSON" '[ $rc = 0 ] && utf8_same "$tmp/mntname" "d[-1][\"mountpoint\"]"'
# make CFLAGS=-O0 replaces the user's flags only, not what the build needs.
mkdir -p "$tmp/u0/userland"
cp "$here/../../userland/Makefile" "$here/../../userland"/*.c "$here/../../userland"/*.h "$tmp/u0/userland/"
if make -s -j2 -C "$tmp/u0/userland" CFLAGS=-O0 aheadctl >"$tmp/u0.log" 2>&1 && [ -x "$tmp/u0/userland/aheadctl" ]; then
	pass "make CFLAGS=-O0 builds aheadctl"
else
	out=$(tail -5 "$tmp/u0.log"); rc=1; err=""; fail "make CFLAGS=-O0 builds aheadctl"
fi
rm -rf "$tmp/u0" "$tmp/u0.log"
