# 80-snapshot.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
# ---- snapshot save/diff, and the doctor's snapshot check ----
# persist_fixture, CONF and VQ come from 70-apply.sh: the fixture with eth0's
# driver (mlx5_core 4.0), vda's queue settings and a kernel release.
P0=$F/sys/devices/pci0000:80/0000:80:00.0/0000:81:00.0
S=$tmp/before.json

persist_fixture
irq_set() { "$A" irq set dev eth0 policy local xps >/dev/null; }
irq_set
run snapshot save "$S" --skip-bw
t "snapshot save: written, summary printed" '[ $rc = 0 ] && [ -s "$S" ] && has "saved $S: kernel 6.1.0-28-amd64, 2 NICs, 1 disks, 2 aheadfs mounts, bandwidth skipped (--skip-bw)"'
out=$(cat "$S")
t "snapshot: format and version" 'json_ok && [ "$(jp "d[\"format\"], d[\"version\"]")" = "aheadctl-snapshot 1" ]'
t "snapshot: eth0's driver, version, node, queues (from sysfs in a fixture)" '[ "$(jp "[(n[\"driver\"], n[\"version\"], n[\"numa_node\"], n[\"tx_queues\"], n[\"rx_queues\"]) for n in d[\"nics\"] if n[\"dev\"] == \"eth0\"][0]")" = "('"'"'mlx5_core'"'"', '"'"'4.0'"'"', 1, 4, 4)" ]'
t "snapshot: IRQ placement per IRQ and XPS per queue" '[ "$(jp "[[(q[\"irq\"], q[\"affinity\"], q[\"off_node\"]) for q in n[\"irqs\"]] for n in d[\"nics\"] if n[\"dev\"] == \"eth0\"][0][0]")" = "(40, '"'"'2'"'"', False)" ] && [ "$(jp "[n[\"xps\"][\"tx-1\"] for n in d[\"nics\"] if n[\"dev\"] == \"eth0\"][0]")" = 3 ]'
t "snapshot: disk node and queue settings, aheadfs tunables, irqbalance, no bandwidth" '[ "$(jp "d[\"disks\"][0][\"dev\"], d[\"disks\"][0][\"read_ahead_kb\"], d[\"disks\"][0][\"numa_node\"]")" = "vda 128 -1" ] && [ "$(jp "[m[\"tunables\"][\"txn_kb\"] for m in d[\"aheadfs\"] if m[\"mountpoint\"] == \"/mnt/slow one\"][0]")" = 16384 ] && [ "$(jp "d[\"irqbalance\"][\"running\"], d[\"bandwidth\"], d[\"snoop_mode\"]")" = "False None None" ]'
run snapshot diff "$S" --skip-bw
t "snapshot diff, nothing changed: 0 regressions, exit 0" '[ $rc = 0 ] && has "0 regressions" && ! has REGRESSION'

# A kernel upgrade: another release, eth0 on another driver with half the
# queues, its IRQs renumbered and spread over all CPUs, XPS gone; irqbalance
# started; a tunable reset; a mount gone; read-ahead back to the default.
echo 6.12.0-1-amd64 >"$F/proc/sys/kernel/osrelease"
mkdir -p "$F/sys/bus/pci/drivers/mlx5_other"
ln -sfn ../../../../bus/pci/drivers/mlx5_other "$P0/driver"
rm -r "$P0/net/eth0/queues/tx-2" "$P0/net/eth0/queues/tx-3" "$P0/net/eth0/queues/rx-2" "$P0/net/eth0/queues/rx-3"
rm "$P0/msi_irqs/"*; for i in 60 61 62; do echo msix >"$P0/msi_irqs/$i"; done
for i in 60 61 62 63; do mk_irq "$F" $i 0-3; done
sed -i 's/^ 4\([0-3]\):/ 6\1:/' "$F/proc/interrupts"
echo 0 >"$P0/net/eth0/queues/tx-0/xps_cpus"; echo 0 >"$P0/net/eth0/queues/tx-1/xps_cpus"
mkdir -p "$F/proc/4242"; echo irqbalance >"$F/proc/4242/comm"; printf 'irqbalance\0' >"$F/proc/4242/cmdline"
echo 4096 >"$F/sys/fs/aheadfs/0:58/txn_kb"
sed -i '/0:59/d' "$F/proc/self/mountinfo"
echo 64 >"$VQ/read_ahead_kb"
run snapshot diff "$S" --skip-bw
t "diff after the upgrade: exit 1, the kernel change noted" '[ $rc = 1 ] && has "note: kernel 6.1.0-28-amd64 -> 6.12.0-1-amd64" && has "note: eth0: IRQs renumbered: 40,41,42,43 -> 60,61,62,63"'
t "diff: the driver swap, with unbind, modprobe and bind" 'has "REGRESSION eth0: driver swapped: mlx5_core -> mlx5_other" && has "fix: echo 0000:81:00.0 > /sys/bus/pci/drivers/mlx5_other/unbind && modprobe mlx5_core && echo 0000:81:00.0 > /sys/bus/pci/drivers/mlx5_core/bind"'
t "diff: the queue count drop, with ethtool -L" 'has "REGRESSION eth0: queues dropped: 2 tx / 2 rx, were 4 / 4" && has "fix: ethtool -L eth0 combined 4"'
t "diff: IRQs off-node now, with irq set" 'has "REGRESSION eth0: 4 IRQs (60,61,62,63) now run off the NIC'"'"'s node 1 (CPUs 2-3); 0 did before" && has "fix: aheadctl irq set dev eth0 policy local xps"'
t "diff: XPS lost" 'has "REGRESSION eth0: XPS lost on tx-0,tx-1 (was set, now none)"'
t "diff: irqbalance running unbanned, with the ban, for each NIC" 'has "REGRESSION eth0: irqbalance now owns 4 of its IRQs (60,61,62,63); it owned 0" && has "fix: aheadctl irq ban dev eth0" && has "REGRESSION eth1: irqbalance now owns 3 of its IRQs (30,31,32)" && has "note: irqbalance is running now (pid 4242), it was not"'
t "diff: a tunable changed, a mount gone, read-ahead changed" 'has "REGRESSION aheadfs /mnt/ahead: txn_kb 4096, was 8192" && has "fix: aheadctl fs set /mnt/ahead txn_kb=8192" && has "REGRESSION aheadfs mount /mnt/slow one (lower /srv/b) is gone" && has "fix: mount -t aheadfs -o prefetch=legacy,txn_kb=16384,window_kb=8192,attr_timeout_ms=0,entry_timeout_ms=0,negative_timeout_ms=0,readdir_cache=0,fh_search_entries=262144 /srv/b '"'"'/mnt/slow one'"'"'" && has "REGRESSION disk vda: read_ahead_kb 64, was 128"'
t "diff: exactly these 9 regressions" 'has "9 regressions" && [ "$(grep -c "^REGRESSION" <<<"$out")" = 9 ]'
run -j snapshot diff "$S" --skip-bw
t "diff -j: one document, each regression with its fix" '[ $rc = 1 ] && json_ok && [ "$(jp "d[\"count\"]")" = 9 ] && [ "$(jp "all(r[\"regression\"] and r[\"fix\"] for r in d[\"regressions\"])")" = True ] && [ "$(jp "d[\"kernel_then\"]")" = 6.1.0-28-amd64 ] && [ "$(jp "len(d[\"notes\"])")" -ge 2 ]'
# The fixes that need no driver or mount, run as printed.
run snapshot diff "$S" --skip-bw
rm -rf "$F/proc/4242"
ln -sfn ../../../../bus/pci/drivers/mlx5_core "$P0/driver"
grep -E '^  fix: (aheadctl (irq set|fs set)|echo [0-9]+ > /)' <<<"$out" | sed -n 's/^  fix: //p' | sort -u | sed "s|^aheadctl |$A |" >"$tmp/fixes"
while read -r f; do eval "$f" >/dev/null 2>&1; done <"$tmp/fixes"
run snapshot diff "$S" --skip-bw
t "diff: after the printed fixes only queues and the mount remain" '[ $rc = 1 ] && [ "$(wc -l <"$tmp/fixes")" = 3 ] && has "2 regressions" && has "queues dropped" && has "/mnt/slow one (lower /srv/b) is gone"'

# A renamed NIC and a gone one; a node that lost its proximity domain.
persist_fixture; irq_set
"$A" snapshot save "$S" --skip-bw >/dev/null
echo -1 >"$P0/numa_node"
run snapshot diff "$S" --skip-bw
t "diff: numa_node now -1, with irq set node N" '[ $rc = 1 ] && has "REGRESSION eth0: numa_node -1, was 1" && has "fix: aheadctl irq set dev eth0 policy local node 1"'
echo 1 >"$P0/numa_node"
mv "$P0/net/eth0" "$P0/net/eth5"; rm "$F/sys/class/net/eth0"
ln -s ../../devices/pci0000:80/0000:80:00.0/0000:81:00.0/net/eth5 "$F/sys/class/net/eth5"
run snapshot diff "$S" --skip-bw
t "diff: a renamed NIC is named, with the config rename" '[ $rc = 1 ] && has "REGRESSION eth0 (pci 0000:81:00.0) is now named eth5" && has "rename [nic eth0] in aheadctl.conf to [nic eth5]"'
rm "$F/sys/class/net/eth5"
run snapshot diff "$S" --skip-bw
t "diff: a NIC gone, with its driver to load" '[ $rc = 1 ] && has "REGRESSION eth0 (pci 0000:81:00.0, driver mlx5_core) is gone" && has "fix: modprobe mlx5_core"'

# The snoop mode, read through the BMC of [bios] (the Redfish emulator, early snoop).
persist_fixture
python3 "$here/redfish_emu.py" --vendor dell --ready "$tmp/snap-rf.port" \
	--log "$tmp/snap-rf.log" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 600); do [ -s "$tmp/snap-rf.port" ] && break; sleep 0.05; done
(umask 077 && echo calvin >"$tmp/bmc.pw")
printf 'snapshot = %s\n[bios]\nbmc = http://127.0.0.1:%s\ninsecure-http = yes\nuser = root\npassword-file = %s\n' \
	"$S" "$(cat "$tmp/snap-rf.port" 2>/dev/null)" "$tmp/bmc.pw" >"$CONF"
run snapshot save --skip-bw
t "snapshot save without FILE: the config's snapshot, with the BMC's snoop mode" '[ $rc = 0 ] && has "saved $S" && has "snoop mode early" && [ "$(python3 -c "import json; print(json.load(open(\"$S\"))[\"snoop_mode\"])")" = early ]'
python3 - "$S" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["snoop_mode"] = "home"; json.dump(d, open(sys.argv[1], "w"))
PY
run snapshot diff --skip-bw
t "diff: the snoop mode changed, with bios set through the configured BMC" '[ $rc = 1 ] && has "REGRESSION BIOS snoop mode early, was home" && has "fix: aheadctl --yes bios set snoop-mode home --reboot --bmc http://127.0.0.1:" && [ "$(grep -c "^REGRESSION" <<<"$out")" = 1 ]'

# The doctor reads what needs no BMC: it does not ask the BMC for the
# snoop mode, and says that this comparison was not done.
m=$(wc -l <"$tmp/snap-rf.log")
run doctor --skip-bw
t "doctor: the BMC of [bios] is not contacted; the snoop comparison is said not done" '[ "$(wc -l <"$tmp/snap-rf.log")" = "$m" ] && ! has "BIOS snoop mode early, was home" && has "not checked: snapshot: the BIOS snoop mode (home in the snapshot) was not compared: the doctor does not contact the BMC"'
run -j doctor --skip-bw
t "doctor -j: the snoop comparison under not_checked" 'json_ok && [ "$(jp "len(d[\"not_checked\"]), [f for f in d[\"findings\"] if \"snoop\" in f[\"finding\"]]")" = "1 []" ] && [ "$(wc -l <"$tmp/snap-rf.log")" = "$m" ]'

# A source that cannot be read is recorded as unknown, and an unknown side
# is not compared: no NIC or mount "gone", no fix that mounts twice.
persist_fixture; irq_set
"$A" snapshot save "$S" --skip-bw >/dev/null
mv "$F/sys/devices/system/node/node1/cpulist" "$tmp/cpulist1"
run snapshot diff "$S" --skip-bw
t "diff: a NIC that cannot be read now is not compared, not gone" '[ $rc = 1 ] && ! has "is gone" && ! has "modprobe" && has "NOT COMPARED eth0: not compared: it cannot be read now (node 1: no " && has "0 regressions, 1 not compared"'
run snapshot save "$tmp/unk.json" --skip-bw
t "save: a NIC that cannot be read is recorded as unknown and said" '[ $rc = 0 ] && haserr "snapshot: NIC eth0 unknown (node 1: no " && has "unknown (not compared by diff until saved again): NIC eth0" && [ "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print([(n[\"pci\"], n[\"unknown\"][:7]) for n in d[\"nics\"] if n[\"dev\"] == \"eth0\"])" "$tmp/unk.json")" = "[('"'"'0000:81:00.0'"'"', '"'"'node 1:'"'"')]" ]'
mv "$tmp/cpulist1" "$F/sys/devices/system/node/node1/cpulist"
run snapshot diff "$tmp/unk.json" --skip-bw
t "diff against a snapshot with an unknown NIC: not compared, the fix saves again" '[ $rc = 1 ] && has "NOT COMPARED eth0: unknown in the snapshot (node 1: no " && has "fix: aheadctl snapshot save $tmp/unk.json" && ! has REGRESSION'
mv "$F/proc/self/mountinfo" "$tmp/mountinfo"
run snapshot diff "$S" --skip-bw
t "diff: mounts that cannot be listed now are not compared: none 'gone', no mount in a fix" '[ $rc = 1 ] && ! has "is gone" && ! has "mount -t aheadfs" && has "NOT COMPARED the aheadfs mounts not compared: they cannot be listed now (cannot read $F/proc/self/mountinfo: No such file or directory)"'
run -j snapshot diff "$S" --skip-bw
t "diff -j: what was not compared, with its fix, apart from the regressions" '[ $rc = 1 ] && json_ok && [ "$(jp "d[\"count\"], len(d[\"not_compared\"]), all(x[\"what\"] and x[\"fix\"] for x in d[\"not_compared\"])")" = "0 1 True" ]'
printf 'snapshot = %s\n' "$S" >"$CONF"
run doctor --skip-bw
t "doctor: mounts that cannot be listed: a [snapshot] finding 'not compared', no 'gone'" '[ $rc = 1 ] && has "FINDING [snapshot] the aheadfs mounts not compared" && ! has "is gone" && ! has "mount -t aheadfs"'
rm "$CONF"
run snapshot save "$tmp/unk2.json" --skip-bw
t "save: mounts that cannot be listed are recorded unknown (null), not as none" '[ $rc = 0 ] && has "aheadfs mounts unknown" && haserr "snapshot: aheadfs unknown (cannot read" && [ "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d[\"aheadfs\"], \"aheadfs\" in d[\"unknown\"])" "$tmp/unk2.json")" = "None True" ]'
mv "$tmp/mountinfo" "$F/proc/self/mountinfo"
run snapshot diff "$tmp/unk2.json" --skip-bw
t "diff against a snapshot whose mounts were unknown: not compared, no mount 'new' or 'gone'" '[ $rc = 1 ] && has "NOT COMPARED the aheadfs mounts: unknown in the snapshot" && ! has REGRESSION'
# The snapshot is written through a synced file, renamed, its directory synced.
if command -v strace >/dev/null; then
	strace -f -qq -e trace=fsync,fdatasync,rename,renameat,renameat2 -o "$tmp/strace.log" \
		"$A" snapshot save "$tmp/synced.json" --skip-bw >/dev/null 2>&1; rc=$?
	out=$(cat "$tmp/strace.log"); err=
	t "snapshot save: the new file synced before its rename, the directory after it" '[ $rc = 0 ] && python3 - "$tmp/strace.log" "$tmp/synced.json" <<'"'"'PY'"'"'
import re, sys
lines = [l for l in open(sys.argv[1])]
ren = [i for i, l in enumerate(lines) if "rename" in l and ("\"%s\"" % sys.argv[2]) in l and l.rstrip().endswith("= 0")]
assert len(ren) == 1, ren
pid = lines[ren[0]].split()[0]
mine = lambda i: lines[i].split()[0] == pid and re.search(r"\bf(data)?sync\(", lines[i])
assert any(mine(i) for i in range(ren[0])), "no fsync before the rename"
assert any(mine(i) for i in range(ren[0] + 1, len(lines))), "no fsync of the directory after it"
PY'
else
	skip "snapshot save: synced before and after the rename" "no strace"
fi

# The doctor runs the diff of the configured snapshot.
persist_fixture; irq_set
printf 'snapshot = %s\n' "$S" >"$CONF"
"$A" snapshot save "$S" --skip-bw >/dev/null
run doctor --skip-bw
t "doctor: the snapshot compared, no finding from it when nothing regressed" '! grep -q "^FINDING \[snapshot\]" <<<"$out" && has "ok: snapshot: compared with $S (kernel 6.1.0-28-amd64): 0 regressions"'
echo 0 >"$F/proc/irq/41/smp_affinity_list"; echo 4096 >"$F/sys/fs/aheadfs/0:58/txn_kb"
run doctor --skip-bw
t "doctor: each regression a [snapshot] finding with its fix" '[ $rc = 1 ] && has "FINDING [snapshot] eth0: 1 IRQs (41) now run off the NIC'"'"'s node 1 (CPUs 2-3); 0 did before" && has "FINDING [snapshot] aheadfs /mnt/ahead: txn_kb 4096, was 8192" && has "fix: aheadctl fs set /mnt/ahead txn_kb=8192"'
run -j doctor --skip-bw
t "doctor -j: the snapshot findings in the one document" '[ $rc = 1 ] && json_ok && [ "$(jp "len([f for f in d[\"findings\"] if f[\"area\"] == \"snapshot\"])")" = 2 ]'
rm "$S"
run doctor --skip-bw
t "doctor: a configured snapshot that is missing is a finding, with save" '[ $rc = 1 ] && has "FINDING [snapshot] the configured snapshot $S cannot be read" && has "fix: aheadctl snapshot save $S" && haserr "aheadctl: $S: No such file or directory"'
printf 'snapshot = %s\nbogus = 1\n' "$S" >"$CONF"
run doctor --skip-bw
t "doctor: a bad config is a finding, its line on stderr" '[ $rc = 1 ] && has "FINDING [config] $CONF cannot be used" && haserr "aheadctl: $CONF:2: unknown key '"'"'bogus'"'"'"'
rm "$CONF"
run doctor --skip-bw
t "doctor without a config: no snapshot check" '! has "snapshot:" && ! grep -q "^FINDING \[snapshot\]" <<<"$out"'

# Bad snapshots and bad arguments: one message naming the file, exit 1 or 2.
run snapshot diff "$tmp/none.json"
t "diff: a missing snapshot file named, exit 1" '[ $rc = 1 ] && [ "$(grep -c . <<<"$err")" = 1 ] && haserr "aheadctl: $tmp/none.json: No such file or directory"'
printf '{"format": "aheadctl-snapshot",\n "version": 1,\n "nics": [}\n' >"$tmp/broken.json"
run snapshot diff "$tmp/broken.json"
t "diff: a snapshot that is not JSON: file and line, exit 1" '[ $rc = 1 ] && haserr "aheadctl: $tmp/broken.json:3: not a snapshot"'
echo '{"format": "aheadctl-snapshot", "version": 2}' >"$tmp/v2.json"
run snapshot diff "$tmp/v2.json"
t "diff: a snapshot of another format version refused, exit 1" '[ $rc = 1 ] && haserr "aheadctl: $tmp/v2.json: snapshot format version 2; this aheadctl reads version 1"'
echo '{"nics": []}' >"$tmp/other.json"
run snapshot diff "$tmp/other.json"
t "diff: a JSON file that is no snapshot refused, exit 1" '[ $rc = 1 ] && haserr "not an aheadctl snapshot"'
run -j snapshot diff "$tmp/v2.json"
t "diff -j on a bad snapshot: the error document" '[ $rc = 1 ] && json_ok && grep -q "format version 2" <<<"$(jp "d[\"error\"][\"message\"]")"'
run snapshot save
t "save without FILE or a configured one: usage, exit 2" '[ $rc = 2 ] && haserr "no FILE"'
run snapshot
t "snapshot without a verb: exit 2" '[ $rc = 2 ] && haserr "unknown snapshot verb"'
run snapshot diff a b
t "snapshot diff with two files: usage, exit 2" '[ $rc = 2 ]'
run snapshot save "$tmp/nodir/x.json" --skip-bw
t "save into a missing directory: named, exit 1" '[ $rc = 1 ] && haserr "$tmp/nodir/x.json"'
snap s
run -n snapshot save "$tmp/dry.json" --skip-bw
t "save -n: the snapshot on stdout, nothing written" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"format\"]")" = aheadctl-snapshot ] && [ ! -e "$tmp/dry.json" ] && same s'
# On this host itself (one node): the bandwidth matrix is measured, 1x1.
out=$(env -u AHEADCTL_SYSFS_ROOT -u AHEADCTL_PROC_ROOT "$A" snapshot save "$tmp/bw.json" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
t "save on this host: the bandwidth measured, the real kernel release" '[ $rc = 0 ] && has "bandwidth measured" && [ "$(python3 -c "import json; d=json.load(open(\"$tmp/bw.json\")); print(len(d[\"bandwidth\"][\"mbps\"]), d[\"kernel\"])")" = "$(ls /sys/devices/system/node | grep -c "^node[0-9]") $(uname -r)" ]'
