# 75-revert.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
# ---- revert: apply records what it replaced, revert puts it back ----
# persist_fixture, CONF, VQ and conf() are 70-apply.sh's.

STATE=$F/var/lib/aheadctl/apply-state.json
POLICY=$F/etc/aheadctl/irqbalance-policy.sh
revert_conf() {
	conf <<'EOF'
[nic eth0]
policy = local
xps = yes
[nic eth9]
policy = spread
[fs /mnt/ahead]
txn_kb = 4096
[block vda]
read_ahead_kb = 4096
nr_requests = 64
EOF
}
# Line number of the first output line holding $1.
line_of() { grep -nF -m1 -- "$1" <<<"$out" | cut -d: -f1; }

persist_fixture
revert_conf
snap before
run revert
t "revert with nothing recorded: says so, exit 1, nothing written" '[ $rc = 1 ] && haserr "aheadctl: nothing to revert: $STATE does not exist" && [ -z "$out" ] && same before'
run -j revert
t "revert -j with nothing recorded: the error document" '[ $rc = 1 ] && json_ok && jp "d[\"error\"][\"message\"]" | grep -q "^nothing to revert"'

run apply
t "apply: says how many values it recorded, and where" '[ $rc = 0 ] && has "11 values recorded in $STATE (11 by this run)" && has "aheadctl revert"'
t "apply: the record is mode 0600 in a 0700 directory" '[ "$(stat -c %a "$STATE")" = 600 ] && [ "$(stat -c %a "$F/var/lib/aheadctl")" = 700 ]'
out=$(cat "$STATE")
t "apply: the record holds each replaced value with what it is" 'json_ok && [ "$(jp "(d[\"format\"], d[\"version\"], len(d[\"entries\"]))")" = "('"'"'aheadctl-apply-state'"'"', 1, 11)" ] && [ "$(jp "[e[\"old\"] for e in d[\"entries\"] if e[\"what\"] == \"IRQ 40 (eth0-TxRx-0) affinity\"]")" = "['"'"'0'"'"']" ] && [ "$(jp "[e[\"old\"] for e in d[\"entries\"] if e[\"what\"] == \"irqbalance policy script\"]")" = "[None]" ]'
snap applied
run -j apply
t "apply again: the first values before apply are kept, nothing new recorded" '[ $rc = 0 ] && json_ok && [ "$(jp "(d[\"recorded\"], d[\"recorded_now\"])")" = "(11, 0)" ] && same applied'

run -n revert
t "revert -n: says what it would restore, changes nothing" '[ $rc = 0 ] && has "would restore IRQ 40 (eth0-TxRx-0) affinity: 2 -> 0" && has "would restore vda read_ahead_kb: 4096 -> 128" && has "dry run: 11 restored, 0 failed" && same applied'
run revert
t "revert: every value put back, each said, exit 0" '[ $rc = 0 ] && has "restored IRQ 40 (eth0-TxRx-0) affinity: 2 -> 0" && has "restored IRQ 43 (mlx5_comp3@pci:0000:81:00.0) affinity: 2 -> 0-3" && has "restored eth0 tx-1 XPS: 8 -> 0" && has "restored /mnt/ahead txn_kb: 4096 -> 8192" && has "restored vda nr_requests: 64 -> 256" && has "restored irqbalance policy script: removed (it did not exist before apply)" && has "11 restored, 0 failed"'
t "revert: the trees are as before apply, the record gone" 'same before && [ ! -e "$STATE" ] && [ ! -e "$POLICY" ]'
t "revert: newest first (block, fs, XPS, IRQs, then the ban written first)" '[ "$(line_of "vda nr_requests")" -lt "$(line_of "vda read_ahead_kb")" ] && [ "$(line_of "vda read_ahead_kb")" -lt "$(line_of "/mnt/ahead txn_kb")" ] && [ "$(line_of "/mnt/ahead txn_kb")" -lt "$(line_of "tx-0 XPS")" ] && [ "$(line_of "tx-0 XPS")" -lt "$(line_of "IRQ 40")" ] && [ "$(line_of "IRQ 40")" -lt "$(line_of "policy script")" ]'
run revert
t "revert again: nothing to revert, exit 1, nothing changed" '[ $rc = 1 ] && haserr "nothing to revert" && same before'

# A policy script that was there before: its text comes back.
printf '#!/bin/sh\n# a policy of the admin\nexit 0\n' >"$POLICY"
chmod 755 "$POLICY"
snap before
run apply
run -j revert
t "revert -j: each value with what, path, now, old, status" '[ $rc = 0 ] && json_ok && [ "$(jp "(d[\"restored\"], d[\"failed\"], d[\"applied\"])")" = "(11, 0, True)" ] && [ "$(jp "all(set(v) >= {\"what\",\"path\",\"now\",\"old\",\"status\"} for v in d[\"values\"])")" = True ] && [ "$(jp "d[\"values\"][-1][\"what\"]")" = "irqbalance policy script" ]'
t "revert: an earlier policy script is put back as it was, mode 0755" 'same before && [ "$(cat "$POLICY")" = "$(printf "#!/bin/sh\n# a policy of the admin\nexit 0")" ] && [ "$(stat -c %a "$POLICY")" = 755 ]'
rm -f "$POLICY"

# What changed since apply is put back all the same; a device gone is said.
persist_fixture
revert_conf
snap before
run apply
echo 512 >"$VQ/read_ahead_kb"
rm -rf "$F/sys/fs/aheadfs/0:58"
run revert
t "revert: a value changed since apply restored too; a mount gone said, not a failure" '[ $rc = 0 ] && has "restored vda read_ahead_kb: 512 -> 128" && has "gone /mnt/ahead txn_kb: $F/sys/fs/aheadfs/0:58/txn_kb no longer exists" && has "10 restored, 0 failed" && [ ! -e "$STATE" ]'

# A value that cannot be written back: the others are, it stays recorded.
persist_fixture
revert_conf
echo 4096 >"$VQ/nr_requests"
run apply
rm "$VQ/nr_requests"
ln -s /proc/self/oom_score_adj "$VQ/nr_requests"	# refuses 4096 with EINVAL
run revert
t "revert: a refused write is named, exit 1, the rest restored" '[ $rc = 1 ] && haserr "revert: vda nr_requests: $F/sys/class/block/vda/queue/nr_requests: Invalid argument" && has "failed vda nr_requests" && has "10 restored, 1 failed" && [ "$(aff 40)" = 0 ] && [ "$(cat "$VQ/read_ahead_kb")" = 128 ]'
out=$(cat "$STATE" 2>/dev/null)
t "revert: only the value not put back stays recorded" 'json_ok && [ "$(jp "[e[\"what\"] for e in d[\"entries\"]]")" = "['"'"'vda nr_requests'"'"']" ]'
rm "$VQ/nr_requests"; echo 64 >"$VQ/nr_requests"
run revert
t "revert again once fixed: that value, then nothing left" '[ $rc = 0 ] && has "restored vda nr_requests: 64 -> 4096" && has "1 restored, 0 failed" && [ ! -e "$STATE" ] && [ "$(cat "$VQ/nr_requests")" = 4096 ]'

# A reboot resets sysfs and procfs: revert does not write a boot's values into the next.
persist_fixture
revert_conf
mkdir -p "$F/proc/sys/kernel/random"
echo 11111111-aaaa > "$F/proc/sys/kernel/random/boot_id"
run apply
echo 22222222-bbbb > "$F/proc/sys/kernel/random/boot_id"
echo 3 >"$F/proc/irq/40/smp_affinity_list"
run revert
t "revert after a reboot: the earlier boot's values not restored, said; the ban removed" '[ $rc = 0 ] && has "10 values recorded in an earlier boot were reset by the reboot: not restored" && has "restored irqbalance policy script: removed" && has "1 restored, 0 failed" && [ "$(aff 40)" = 3 ] && [ ! -e "$POLICY" ]'
run apply
echo 33333333-cccc > "$F/proc/sys/kernel/random/boot_id"
rm -f "$POLICY"
run apply
out=$(cat "$STATE")
t "apply in a new boot: that boot's values recorded, the earlier boot's dropped" 'json_ok && [ "$(jp "(d[\"boot_id\"], len(d[\"entries\"]))")" = "('"'"'33333333-cccc'"'"', 11)" ] && [ "$(jp "[e[\"old\"] for e in d[\"entries\"] if e[\"what\"] == \"IRQ 40 (eth0-TxRx-0) affinity\"]")" = "['"'"'2'"'"']" ]'

# The record is trusted as the config is: one others can write is refused.
persist_fixture
revert_conf
run apply
chmod 0666 "$STATE"
snap c
run revert
t "revert: a record others can write is refused, exit 1, nothing written" '[ $rc = 1 ] && haserr "state $STATE: it is writable by everyone (mode 0666): refusing it" && same c'
run apply
t "apply: a record others can write is refused before any write" '[ $rc = 1 ] && haserr "writable by everyone" && [ -z "$out" ] && same c'
chmod 0600 "$STATE"
chmod 0777 "$F/var/lib/aheadctl"
run revert
t "revert: a state directory others can write is refused" '[ $rc = 1 ] && haserr "state directory $F/var/lib/aheadctl: it is writable by everyone (mode 0777)" && same c'
chmod 0700 "$F/var/lib/aheadctl"
echo '{"format": "aheadctl-apply-state", "version": 1, "entries": [{"path": "'"$tmp"'/victim", "old": "x", "what": "planted"}]}' >"$STATE"
echo precious >"$tmp/victim"
run revert
t "revert: a recorded path apply never writes is left alone, named, exit 1" '[ $rc = 1 ] && haserr "revert: planted: $tmp/victim is not a file apply writes: left alone" && [ "$(cat "$tmp/victim")" = precious ]'
echo 'not json' >"$STATE"
snap c
run apply
t "apply: a broken record stops it before any write, naming the file" '[ $rc = 1 ] && haserr "$STATE:1: not JSON" && same c'
run revert
t "revert: a broken record is named, exit 1" '[ $rc = 1 ] && haserr "$STATE:1: not JSON"'
echo '{"format": "aheadctl-apply-state", "version": 9, "entries": []}' >"$STATE"
run revert
t "revert: a record of another version is refused" '[ $rc = 1 ] && haserr "not an aheadctl apply state of version 1"'
rm -f "$STATE" "$tmp/victim"

# Where the record cannot be written, apply writes nothing.
persist_fixture
revert_conf
snap c
AHEADCTL_VAR_ROOT=$CONF run apply
t "apply: no place for its record: the reason, exit 1, nothing written" '[ $rc = 1 ] && haserr "cannot create $CONF/lib: Not a directory" && same c'
run -n apply
t "apply -n: no record needed, none made" '[ $rc = 0 ] && [ ! -e "$F/var" ] && same c'
# A full disk: the journal's first line is refused, so nothing is written.
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	persist_fixture
	revert_conf
	snap c
	mkdir -p "$F/var"
	out=$(unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs "$1" && { dd if=/dev/zero of="$1/fill" bs=4096 2>/dev/null; exec "$2" apply; }' \
		sh "$F/var" "$A" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "apply: a state directory that takes no write (ENOSPC): the reason, exit 1, nothing written" '[ $rc = 1 ] && haserr "No space left on device" && haserr "could not record for revert" && same c'
else
	skip "apply on a full state directory" "needs root and unshare -m"
fi

# ---- an apply that is stopped: what it changed is recorded all the same ----
# Each value is in the journal, on disk, before it is written.  A FIFO as
# vda's read_ahead_kb holds apply in [block vda], after the NIC and the mount.
JOURNAL=$F/var/lib/aheadctl/apply-journal
stall_apply() {	# apply in the background, stalled in [block vda]; its pid in $apid
	rm "$VQ/read_ahead_kb"; mkfifo "$VQ/read_ahead_kb"
	"$A" apply >"$tmp/out.bg" 2>"$tmp/err.bg" &
	apid=$!
	for _ in $(seq 600); do [ "$(cat "$F/sys/fs/aheadfs/0:58/txn_kb")" = 4096 ] && break; sleep 0.05; done
	sleep 0.5
}
unstall() { rm -f "$VQ/read_ahead_kb"; echo 128 >"$VQ/read_ahead_kb"; }
olds() {	# the recorded old values of IRQ 40 and of the mount's txn_kb
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sorted(e["old"] for e in d["entries"] if e["what"] in ("IRQ 40 (eth0-TxRx-0) affinity", "/mnt/ahead txn_kb")))' "$STATE" 2>/dev/null
}
persist_fixture
revert_conf
snap before
stall_apply
kill -TERM $apid; wait $apid; rc=$?; out=$(cat "$tmp/out.bg"); err=$(cat "$tmp/err.bg")
t "apply stopped by SIGTERM: exit 1, said; what it changed merged into the record" '[ $rc = 1 ] && haserr "stopped by Terminated: what was changed is recorded for '"'"'aheadctl revert'"'"'" && [ ! -e "$JOURNAL" ] && [ "$(olds)" = "['"'"'0'"'"', '"'"'8192'"'"']" ]'
unstall
run revert
t "revert after an apply stopped by SIGTERM: the trees as before it" '[ $rc = 0 ] && same before && [ ! -e "$STATE" ]'
persist_fixture
revert_conf
snap before
stall_apply
kill -KILL $apid; wait $apid 2>/dev/null
t "apply killed (SIGKILL): its journal is on disk with what it changed" '[ ! -e "$STATE" ] && grep -q "\"old\":\"8192\"" "$JOURNAL" && grep -q "IRQ 40 (eth0-TxRx-0) affinity" "$JOURNAL"'
unstall
run apply
t "apply after a killed one: the journal merged first, the values before any apply kept" '[ $rc = 0 ] && haserr "values an interrupted apply replaced, left in its journal, are now recorded" && [ ! -e "$JOURNAL" ] && [ "$(olds)" = "['"'"'0'"'"', '"'"'8192'"'"']" ]'
run revert
t "revert: the trees as before the killed apply" '[ $rc = 0 ] && same before'
persist_fixture
revert_conf
snap before
stall_apply
kill -KILL $apid; wait $apid 2>/dev/null
unstall
run revert
t "revert after a killed apply: the journal's values put back, said, the journal gone" '[ $rc = 0 ] && has "values from $JOURNAL, the journal of an apply that was stopped, included" && same before && [ ! -e "$JOURNAL" ] && [ ! -e "$STATE" ]'
# A journal of an earlier boot: its sysfs values were reset by the reboot.
persist_fixture
revert_conf
mkdir -p "$F/proc/sys/kernel/random"
echo 11111111-aaaa >"$F/proc/sys/kernel/random/boot_id"
stall_apply
kill -KILL $apid; wait $apid 2>/dev/null
unstall
echo 22222222-bbbb >"$F/proc/sys/kernel/random/boot_id"
echo 3 >"$F/proc/irq/40/smp_affinity_list"
run revert
t "revert of an earlier boot's journal: its sysfs values left, the policy script removed" '[ $rc = 0 ] && [ "$(aff 40)" = 3 ] && [ ! -e "$POLICY" ] && has "restored irqbalance policy script: removed" && [ ! -e "$JOURNAL" ]'

run revert extra
t "revert takes no argument: usage, exit 2" '[ $rc = 2 ] && haserr "usage: aheadctl [-n] [-j] revert"'
