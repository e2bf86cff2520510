# 70-apply.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
# ---- apply, verify: aheadctl.conf, the boot unit, the udev rule ----

# The fixture plus what persistence reads: vda's queue settings, eth0's
# driver (mlx5_core, module version 4.0), the kernel release.  80-snapshot.sh
# uses it too.
persist_fixture() {
	fresh
	local vq=$F/sys/devices/pci0000:00/0000:00:05.0/virtio2/block/vda/queue
	local f0=$F/sys/devices/pci0000:80/0000:80:00.0/0000:81:00.0
	mkdir -p "$vq" "$F/sys/bus/pci/drivers/mlx5_core/module" "$F/proc/sys/kernel"
	echo 128 >"$vq/read_ahead_kb"
	echo 256 >"$vq/nr_requests"
	echo 4.0 >"$F/sys/bus/pci/drivers/mlx5_core/module/version"
	ln -s ../../../../bus/pci/drivers/mlx5_core "$f0/driver"
	echo 6.1.0-28-amd64 >"$F/proc/sys/kernel/osrelease"
	mkdir -p "$F/etc/aheadctl"
}
CONF=$F/etc/aheadctl/aheadctl.conf
VQ=$F/sys/devices/pci0000:00/0000:00:05.0/virtio2/block/vda/queue
conf() { cat >"$CONF"; }
# The fix lines of the last run, with aheadctl as this build.
fixes() { sed -n 's/^  fix: //p' <<<"$out" | sed "s|^aheadctl |$A |"; }

persist_fixture
conf <<'EOF'
# the test node
[nic eth0]          # the node-1 NIC
policy = local
xps = yes

[nic eth9]
policy = spread

[fs /mnt/ahead]
txn_kb = 4096
prefetch = ahead

[fs /mnt/later]
window_kb = 1024

[block vda]
read_ahead_kb = 4096
nr_requests = 64

[block nvme9n1]
read_ahead_kb = 4096
EOF
cp "$CONF" "$tmp/good.conf"
snap a
run -n apply
t "apply -n: says what it would do, writes nothing" '[ $rc = 0 ] && has "would set IRQ 40 (eth0-TxRx-0): 0 -> 2" && has "would set tx-0 XPS -> CPU 2" && has "would set /mnt/ahead: txn_kb 8192 -> 4096" && has "would set read_ahead_kb 128 -> 4096" && has "would write $F/etc/aheadctl/irqbalance-policy.sh" && same a'
t "apply -n: absent NIC, mount and disk reported and skipped" 'has "skipped: no such network device eth9" && has "skipped: not an aheadfs mount (yet) /mnt/later" && has "skipped: no such block device nvme9n1" && has "dry run: 3 done, 3 skipped, 0 failed"'
run verify
t "verify before apply: each drift with expected, found and fix; exit 1" '[ $rc = 1 ] && has "DRIFT [nic eth0] IRQ affinity: expected IRQ40:2 IRQ41:3 IRQ43:2, found IRQ40:0 IRQ41:2 IRQ43:0-3" && has "DRIFT [nic eth0] XPS: expected tx-0:2 tx-1:3 " && has "found tx-0:none tx-1:none" && has "fix: aheadctl irq set dev eth0 policy local xps" && has "DRIFT [fs /mnt/ahead] txn_kb: expected 4096, found 8192" && has "DRIFT [block vda] read_ahead_kb: expected 4096, found 128" && has "skipped [nic eth9]: no such network device eth9, as apply skips it" && ! has "DRIFT [nic eth9]" && has "ok [fs /mnt/ahead] prefetch"'
run apply
t "apply: exit 0 with absent devices skipped" '[ $rc = 0 ] && has "3 done, 3 skipped, 0 failed"'
t "apply: IRQs one per local CPU, managed IRQ 42 left alone" '[ "$(aff 40) $(aff 41) $(aff 42) $(aff 43)" = "2 3 2-3 2" ]'
# Each tx queue follows an IRQ (irq set decides which): its CPUs, on node 1.
t "apply: XPS of every tx queue set, on node 1 (CPUs 2-3, mask c)" 'for q in 0 1 2 3; do m=$((16#$(xps $q))); [ $m != 0 ] && [ $((m & ~12)) = 0 ] || exit 1; done; [ "$(xps 0) $(xps 1)" = "4 8" ]'
t "apply: aheadfs tunable and block queue settings written" '[ "$(cat "$F/sys/fs/aheadfs/0:58/txn_kb")" = 4096 ] && [ "$(cat "$VQ/read_ahead_kb")" = 4096 ] && [ "$(cat "$VQ/nr_requests")" = 64 ]'
ban=$(grep -n -m1 "banned from irqbalance" <<<"$out" | cut -d: -f1)
irq=$(grep -n -m1 "IRQ 40 (" <<<"$out" | cut -d: -f1)
t "apply: the irqbalance ban written first, then the placement" 'grep -q "eth0" "$F/etc/aheadctl/irqbalance-policy.sh" && [ -n "$ban" ] && [ -n "$irq" ] && [ "$ban" -lt "$irq" ]'
# An absent NIC, disk or mount is skipped by verify as apply skips it (it
# was drift until issue 26: a node whose config names a NIC not probed yet
# then failed verify on every run); --strict makes it drift again.
run verify
t "verify after apply: the absent ones skipped, each said once, exit 0" '[ $rc = 0 ] && ! has DRIFT && has "skipped [fs /mnt/later]: not an aheadfs mount (yet) /mnt/later, as apply skips it" && has "skipped [block nvme9n1]: no such block device nvme9n1" && [ "$(grep -c "nvme9n1" <<<"$out")" = 1 ] && has "ok [nic eth0] IRQ affinity" && has "ok [nic eth0] XPS" && has "0 drifted, 7 as configured, 3 skipped (absent)"'
run -j verify
t "verify -j: the skipped sections with their reason, not drift" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"count\"]")" = 0 ] && [ "$(jp "sorted((x[\"kind\"], x[\"name\"]) for x in d[\"skipped\"])")" = "[('"'"'block'"'"', '"'"'nvme9n1'"'"'), ('"'"'fs'"'"', '"'"'/mnt/later'"'"'), ('"'"'nic'"'"', '"'"'eth9'"'"')]" ] && [ "$(jp "all(x[\"reason\"] for x in d[\"skipped\"])")" = True ]'
run verify --strict
t "verify --strict: the absent ones are drift, exit 1" '[ $rc = 1 ] && [ "$(grep -c "^DRIFT" <<<"$out")" = 3 ] && has "DRIFT [fs /mnt/later] mount: expected an aheadfs mount, found not mounted" && has "DRIFT [block nvme9n1] device: expected present, found absent" && has "DRIFT [nic eth9] device" && ! has "skipped ["'
mv "$F/proc/self/mountinfo" "$F/proc/self/mountinfo.away"
run verify
t "verify with the mounts unreadable: [fs] is drift, not skipped" '[ $rc = 1 ] && has "DRIFT [fs /mnt/ahead] mount: expected an aheadfs mount, found unknown: the mounts cannot be listed" && haserr "mountinfo" && ! has "skipped [fs /mnt/ahead]"'
run apply
t "apply with the mounts unreadable: [fs] fails, not skipped" '[ $rc = 1 ] && has "failed: the aheadfs mounts cannot be listed" && ! has "skipped: not an aheadfs mount (yet) /mnt/ahead"'
mv "$F/proc/self/mountinfo.away" "$F/proc/self/mountinfo"
# The same without the absent ones.
conf <<'EOF2'
[nic eth0]
policy = local
xps = yes
[fs /mnt/ahead]
txn_kb = 4096
prefetch = ahead
[block vda]
read_ahead_kb = 4096
nr_requests = 64
EOF2
run verify
t "verify: nothing drifted, exit 0" '[ $rc = 0 ] && has "0 drifted" && ! has DRIFT'
run -j verify
t "verify -j: one document, count 0" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"count\"]")" = 0 ] && [ "$(jp "d[\"drift\"]")" = "[]" ]'

# Drift: what a driver reload or an admin does behind our back.
echo 0 >"$F/proc/irq/41/smp_affinity_list"
echo 0 >"$F/sys/devices/pci0000:80/0000:80:00.0/0000:81:00.0/net/eth0/queues/tx-1/xps_cpus"
echo 8192 >"$F/sys/fs/aheadfs/0:58/txn_kb"
echo 512 >"$VQ/nr_requests"
run verify
t "verify: moved IRQ, lost XPS, changed tunables: each named, exit 1" '[ $rc = 1 ] && has "IRQ affinity: expected IRQ41:3, found IRQ41:0" && has "XPS: expected tx-1:3, found tx-1:none" && has "txn_kb: expected 4096, found 8192" && has "nr_requests: expected 64, found 512" && [ "$(grep -c "^DRIFT" <<<"$out")" = 4 ]'
run -j verify
t "verify -j: each drift has kind, name, what, expected, found, fix" '[ $rc = 1 ] && json_ok && [ "$(jp "d[\"count\"]")" = 4 ] && [ "$(jp "all(set(x) >= {\"kind\",\"name\",\"what\",\"expected\",\"found\",\"fix\"} for x in d[\"drift\"])")" = True ] && [ "$(jp "[x[\"fix\"] for x in d[\"drift\"] if x[\"kind\"] == \"fs\"][0]")" = "aheadctl fs set /mnt/ahead txn_kb=4096" ]'
run verify
fixes | sort -u >"$tmp/fixes"
while read -r f; do eval "$f" >/dev/null 2>&1; done <"$tmp/fixes"
run verify
t "verify: the fixes, run as printed, leave nothing drifted" '[ $rc = 0 ] && [ "$(wc -l <"$tmp/fixes")" = 3 ]'

# irqbalance: running without our policy script, it owns eth0's IRQs.
mkdir -p "$F/proc/4242"; echo irqbalance >"$F/proc/4242/comm"; printf 'irqbalance\0--foreground\0' >"$F/proc/4242/cmdline"
run verify
t "verify: irqbalance owning the NIC's IRQs is drift, with the ban and the policyscript option" '[ $rc = 1 ] && has "DRIFT [nic eth0] irqbalance ban" && has "found irqbalance (pid 4242) owns IRQs 40,41,43" && has "--policyscript=$F/etc/aheadctl/irqbalance-policy.sh"'
printf 'irqbalance\0--policyscript=%s\0' "$F/etc/aheadctl/irqbalance-policy.sh" >"$F/proc/4242/cmdline"
run verify
t "verify: irqbalance started with the policy script: no drift" '[ $rc = 0 ] && has "ok [nic eth0] irqbalance ban"'
rm -rf "$F/proc/4242"

# --dev, --devpath: what the udev rule runs for one NIC.
cp "$tmp/good.conf" "$CONF"
echo 0 >"$F/proc/irq/40/smp_affinity_list"; echo 8192 >"$F/sys/fs/aheadfs/0:58/txn_kb"; echo 99 >"$VQ/read_ahead_kb"
run apply --dev eth0
t "apply --dev eth0: that NIC only" '[ $rc = 0 ] && [ "$(aff 40)" = 2 ] && [ "$(cat "$F/sys/fs/aheadfs/0:58/txn_kb")" = 8192 ] && [ "$(cat "$VQ/read_ahead_kb")" = 99 ] && has "1 done, 0 skipped, 0 failed"'
echo 0 >"$F/proc/irq/40/smp_affinity_list"
run apply --devpath /devices/pci0000:80/0000:80:00.0/0000:81:00.0/net/eth0/queues/tx-3
t "apply --devpath of a queue (udev %p): its NIC" '[ $rc = 0 ] && [ "$(aff 40)" = 2 ] && has "[nic eth0]"'
run apply --dev vda
t "apply --dev vda: a block device section" '[ $rc = 0 ] && [ "$(cat "$VQ/read_ahead_kb")" = 4096 ]'
run apply --dev eth9
t "apply --dev of an absent configured NIC: skipped, exit 0" '[ $rc = 0 ] && has "skipped: no such network device eth9"'
snap b
run apply --dev lo
t "apply --dev of an unconfigured device: nothing, exit 0" '[ $rc = 0 ] && has "nothing configured for lo" && same b'
run -j apply --dev eth0
t "apply -j: one document, the verbs' own results inside" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"items\"][0][\"status\"]")" = applied ] && [ "$(jp "d[\"items\"][0][\"placement\"][\"irqs\"][0][\"irq\"]")" = 40 ] && [ "$(jp "d[\"items\"][0][\"ban\"][\"applied\"]")" = True ]'
run -jn apply
t "apply -jn: statuses dry-run and skipped" '[ $rc = 0 ] && json_ok && [ "$(jp "sorted(set(i[\"status\"] for i in d[\"items\"]))")" = "['"'"'dry-run'"'"', '"'"'skipped'"'"']" ] && [ "$(jp "d[\"skipped\"]")" = 3 ]'

# A refused write: the block settings before it are put back.
cat >"$CONF" <<'EOF'
[block vda]
read_ahead_kb = 2048
nr_requests = 4096
EOF
echo 128 >"$VQ/read_ahead_kb"
# A file that opens for writing and refuses the value (EINVAL), as the
# kernel does with nr_requests above the tag depth: oom_score_adj.
ln -sfn /proc/self/oom_score_adj "$VQ/nr_requests"
run apply
t "apply: a refused block write fails the item and restores the earlier one" '[ $rc = 1 ] && haserr "nr_requests: writing 4096 failed" && haserr "restored" && [ "$(cat "$VQ/read_ahead_kb")" = 128 ] && has "0 done, 0 skipped, 1 failed"'
rm "$VQ/nr_requests"; echo 256 >"$VQ/nr_requests"

# Bad files: one message naming file and line, exit 1, nothing written.
persist_fixture
badconf() {	# NAME LINE CONTENT: the file, its expected line and message part
	local name=$1 line=$2 want=$3
	printf '%b' "$4" >"$CONF"
	snap c
	run apply
	t "bad config ($name): $CONF:$line named, exit 1, nothing written" '[ $rc = 1 ] && [ "$(grep -c . <<<"$err")" = 1 ] && haserr "aheadctl: $CONF:$line: $want" && same c'
}
badconf "unknown key" 3 "unknown key 'polcy' in [nic eth0]" '# c\n[nic eth0]\npolcy = local\n'
badconf "unknown section" 2 "unknown section [disk]" '\n[disk sda]\nread_ahead_kb = 1\n'
badconf "fs value out of range" 2 "txn_kb = 1: expected an integer from 4 to 1048576" '[fs /mnt/ahead]\ntxn_kb = 1\n'
badconf "prefetch word" 2 "prefetch = fast: expected one of ahead, legacy, kernel, off" '[fs /mnt/ahead]\nprefetch = fast\n'
badconf "policy" 2 "policy = near: expected local, spread or cpus LIST" '[nic eth0]\npolicy = near\n'
badconf "cpu list" 2 "policy = cpus 3-1" '[nic eth0]\npolicy = cpus 3-1\n'
badconf "yes/no" 3 "xps = maybe: expected yes or no" '[nic eth0]\npolicy = local\nxps = maybe\n'
badconf "no =" 2 "expected KEY = VALUE or [SECTION]" '[nic eth0]\npolicy local\n'
badconf "empty value" 2 "policy has no value" '[nic eth0]\npolicy =\n'
badconf "key twice" 3 "policy given twice in this section (first at line 2)" '[nic eth0]\npolicy = local\npolicy = spread\n'
badconf "section twice" 3 "[nic eth0] again (first at line 1)" '[nic eth0]\npolicy = local\n[nic eth0]\nxps = yes\n'
badconf "nic without a name" 1 "[nic]: needs a device name" '[nic]\npolicy = local\n'
badconf "relative mount point" 1 "[fs mnt/x]: the mount point must be an absolute path" '[fs mnt/x]\ntxn_kb = 64\n'
badconf "bios with a name" 1 "[bios x]: [bios] takes no name" '[bios x]\nsnoop-mode = home\n'
badconf "snoop mode" 2 "snoop-mode = fast: expected one of home, early, cod, osb" '[bios]\nsnoop-mode = fast\n'
badconf "key before any section" 1 "unknown key 'policy' before any section" 'policy = local\n'
badconf "relative snapshot" 1 "snapshot = base.json: expected an absolute path" 'snapshot = base.json\n'
badconf "xps without policy" 1 "[nic eth0]: xps and node need a policy" '[nic eth0]\nxps = yes\n'
badconf "empty section" 1 "[block vda] is empty" '[block vda]\n[nic eth0]\npolicy = local\n'
badconf "unclosed header" 1 "a section header is" '[nic eth0\npolicy = local\n'
printf '[nic eth0]\npolcy = local\n' >"$CONF"
run verify
t "verify with a bad config: the same message, exit 1" '[ $rc = 1 ] && haserr "$CONF:2: unknown key" && ! has DRIFT'
run -j apply
t "apply -j with a bad config: the error document names file and line" '[ $rc = 1 ] && json_ok && grep -qF "$CONF:2: unknown key" <<<"$(jp "d[\"error\"][\"message\"]")"'
rm -f "$CONF"
run apply
t "apply without a config: file named, exit 1" '[ $rc = 1 ] && haserr "aheadctl: $CONF: No such file or directory"'
printf '[block vda]\nread_ahead_kb = 512\n' >"$tmp/other.conf"
run apply -c "$tmp/other.conf"
t "apply -c FILE: that file" '[ $rc = 0 ] && [ "$(cat "$VQ/read_ahead_kb")" = 512 ]'
run apply --dev
t "apply --dev without a value: usage, exit 2" '[ $rc = 2 ] && haserr "usage: aheadctl"'
run apply --bogus x
t "apply with an unknown argument: usage, exit 2" '[ $rc = 2 ]'
run apply --dev a/b
t "apply --dev with a slash: usage, exit 2" '[ $rc = 2 ]'

# The snoop mode is checked through the BMC, never set.
python3 "$here/redfish_emu.py" --vendor dell --ready "$tmp/persist-rf.port" \
	--log "$tmp/persist-rf.log" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 600); do [ -s "$tmp/persist-rf.port" ] && break; sleep 0.05; done
if [ -s "$tmp/persist-rf.port" ]; then
	(umask 077 && echo calvin >"$tmp/bmc.pw")
	printf '[bios]\nsnoop-mode = home\nbmc = http://127.0.0.1:%s\ninsecure-http = yes\nuser = root\npassword-file = %s\n' \
		"$(cat "$tmp/persist-rf.port")" "$tmp/bmc.pw" >"$CONF"
	run apply
	t "apply [bios]: snoop mode early reported against home, nothing sent to the BMC" '[ $rc = 0 ] && has "snoop-mode is early, home expected: not changed at boot" && haserr "aheadctl: warning: snoop-mode is early" && ! grep -q "\"PATCH\"\|ComputerSystem.Reset" "$tmp/persist-rf.log"'
	run verify
	t "verify [bios]: snoop mode drift with the bios set command" '[ $rc = 1 ] && has "DRIFT [bios] snoop-mode: expected home, found early" && has "fix: aheadctl --yes bios set snoop-mode home --reboot --bmc http://127.0.0.1:"'
	# The fix, as printed, with no credentials in the environment (-n: a dry run).
	bfix=$(sed -n 's/^  fix: aheadctl \(--yes bios set .*\) (a BIOS change.*$/\1/p' <<<"$out")
	out=$(eval "env -u AHEADCTL_BMC_USER -u AHEADCTL_BMC_PASSWORD \"\$A\" -n $bfix" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "verify [bios]: the bios fix runs as printed (user, password file, --insecure-http from [bios])" '[ -n "$bfix" ] && [ $rc = 0 ] && has "HomeSnoop"'
	nreq=$(wc -l <"$tmp/persist-rf.log")
	run apply --skip-bios
	t "apply --skip-bios (the unit's): the BMC left alone, said so" '[ $rc = 0 ] && has "snoop-mode home expected, not checked (--skip-bios)" && [ "$(wc -l <"$tmp/persist-rf.log")" = "$nreq" ]'
	sed -i 's/snoop-mode = home/snoop-mode = early/' "$CONF"
	run verify
	t "verify [bios]: the expected snoop mode is no drift" '[ $rc = 0 ] && has "ok [bios] snoop-mode"'
else
	fail "the Redfish emulator for the [bios] check did not start"
fi
printf '[bios]\nsnoop-mode = home\n' >"$CONF"
run verify
t "verify [bios] without a BMC: not checked, said so, exit 0" '[ $rc = 0 ] && has "not checked [bios] snoop-mode home: no bmc in [bios]"'

# The boot unit and the udev rule as shipped.
u=$here/../../userland
run -n apply -c "$u/aheadctl.conf.example"
t "the example config parses and dry-runs on the fixture" '[ $rc = 0 ] && has "[nic eth0]" && has "skipped: no such block device nvme0n1"'
if command -v systemd-analyze >/dev/null; then
	# verify wants ExecStart's binary to exist: this build stands in for /usr/sbin/aheadctl.
	sed "s|/usr/sbin/aheadctl|$A|" "$u/systemd/aheadctl.service" >"$tmp/aheadctl.service"
	out=$(systemd-analyze verify "$tmp/aheadctl.service" 2>&1); rc=$?; err=$out
	t "systemd-analyze verify aheadctl.service: clean" '[ $rc = 0 ] && [ -z "$out" ]'
	t "the unit: oneshot, apply --skip-bios, before irqbalance and network-pre, no udev-settle" 'grep -qx "Type=oneshot" "$u/systemd/aheadctl.service" && grep -qx "ExecStart=/usr/sbin/aheadctl apply --skip-bios" "$u/systemd/aheadctl.service" && grep -qx "Before=irqbalance.service network-pre.target" "$u/systemd/aheadctl.service" && ! grep -q "^[A-Za-z].*udev-settle" "$u/systemd/aheadctl.service"'
else
	fail "systemd-analyze is not installed (scripts/setup-deps installs systemd)"
fi
