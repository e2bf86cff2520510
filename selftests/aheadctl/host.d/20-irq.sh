# 20-irq.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
# ---- irq show ----
fresh
run irq show dev eth0
t "irq show: NIC behind a bridge on node 1, local CPUs 2-3" '[ $rc = 0 ] && has "pci 0000:81:00.0" && has "numa_node 1" && has "local CPUs 2-3"'
t "irq show: msi_irqs and the mlx5-style name both found" 'has " 40  eth0-TxRx-0" && has " 41  eth0-TxRx-1" && has " 42  eth0-TxRx-2" && has " 43  mlx5_comp3@pci:0000:81:00.0" && ! has nvme0q1'
t "irq show: off-node, managed and ok states" 'grep -q "^ *40 .*off-node" <<<"$out" && grep -q "^ *41 .* ok$" <<<"$out" && grep -q "^ *42 .*managed" <<<"$out" && grep -q "^ *43 .*off-node" <<<"$out"'
t "irq show: XPS and RPS per queue" '[ "$(grep -c "^[0-3] .*none *none$" <<<"$out")" = 4 ]'
run -j irq show dev eth0
t "irq show -j: valid JSON with the same facts" 'json_ok && [ "$(jp "len(d[\"irqs\"])")" = 4 ] && [ "$(jp "[i[\"irq\"] for i in d[\"irqs\"] if i[\"managed\"]]")" = "[42]" ] && [ "$(jp "[i[\"irq\"] for i in d[\"irqs\"] if i[\"off_node\"]]")" = "[40, 43]" ] && [ "$(jp "d[\"numa_node\"]")" = 1 ] && [ "$(jp "len(d[\"queues\"])")" = 8 ]'
run irq show dev eth1
t "irq show: virtio-net walks up to its PCI function" '[ $rc = 0 ] && has "pci 0000:00:03.0" && has " 31  virtio1-input.0"'
t "irq show: numa_node -1 said plainly with the local_cpulist fallback" 'has "numa_node is -1" && has "local CPUs are 0-3 (local_cpulist)"'
run irq show dev eth1 node 1
t "irq show: numa_node -1 with an explicit node" '[ $rc = 0 ] && has "using node 1, given" && has "local CPUs 2-3"'
rm "$F/sys/devices/pci0000:00/0000:00:03.0/local_cpulist"
run irq show dev eth1
t "irq show: numa_node -1 without local_cpulist falls back to all online CPUs" '[ $rc = 0 ] && has "all online CPUs" && has "local CPUs 0-3"'
run irq show dev lo
t "irq show: virtual device refused" '[ $rc = 1 ] && one_line_err && haserr "virtual interface"'
run irq show dev nope0
t "irq show: absent device refused" '[ $rc = 1 ] && haserr "no network or block device '"'"'nope0'"'"'"'
run irq show
t "irq show: missing dev is a usage error" '[ $rc = 2 ] && haserr "missing '"'"'dev DEV'"'"'"'
run irq show dev eth0 extra
t "irq show: stray argument is a usage error" '[ $rc = 2 ]'
run irq frob dev eth0
t "irq: unknown verb" '[ $rc = 2 ] && haserr "unknown irq verb"'

# ---- irq set ----
fresh; snap a
run -n irq set dev eth0 policy local
t "irq set -n: prints the plan, writes nothing" '[ $rc = 0 ] && has "would set IRQ 40" && same a'
run irq set dev eth0 policy local
t "irq set local: every unmanaged IRQ on a node-1 CPU, round robin" '[ $rc = 0 ] && [ "$(aff 40)" = 2 ] && [ "$(aff 41)" = 3 ] && [ "$(aff 43)" = 2 ]'
t "irq set local: the managed IRQ is reported and left alone" '[ "$(aff 42)" = 2-3 ] && has "IRQ 42 (eth0-TxRx-2): managed by the kernel, left alone"'
run irq show dev eth0
t "irq set local: show then finds no off-node IRQ" '[ $rc = 0 ] && ! has off-node'
fresh
run irq set dev eth0 policy spread
t "irq set spread: local CPUs first, then the rest" '[ $rc = 0 ] && [ "$(aff 40)" = 2 ] && [ "$(aff 41)" = 3 ] && [ "$(aff 43)" = 0 ]'
fresh
run irq set dev eth0 policy cpus 0-1 xps
# tx-N follows the IRQ named for queue N: TxRx-2 is managed (2-3, kept), mlx5_comp3 serves queue 3.
t "irq set cpus LIST xps: IRQs round robin over LIST, XPS of tx-N on the CPU of queue N's IRQ" '[ $rc = 0 ] && [ "$(aff 40)" = 0 ] && [ "$(aff 41)" = 1 ] && [ "$(aff 43)" = 0 ] && [ "$(xps 0)" = 1 ] && [ "$(xps 1)" = 2 ] && [ "$(xps 2)" = c ] && [ "$(xps 3)" = 1 ] && has "tx-3 XPS -> CPU 0 (follows IRQ 43 mlx5_comp3@pci:0000:81:00.0, by name)" && has "tx-2 XPS -> CPUs 2-3 (follows IRQ 42 eth0-TxRx-2, by name)"'
# virtio-net: config (30), input.0 (31), output.0 (32): tx-0 is output.0's, not the config vector's.
fresh
run irq set dev eth1 policy cpus 1-3 xps
t "irq set xps on virtio-net: tx-0 gets the CPU of output.0, not of the config IRQ" '[ $rc = 0 ] && [ "$(aff 30)" = 1 ] && [ "$(aff 32)" = 3 ] && [ "$(cat "$F/sys/devices/pci0000:00/0000:00:03.0/virtio1/net/eth1/queues/tx-0/xps_cpus")" = 8 ] && has "tx-0 XPS -> CPU 3 (follows IRQ 32 virtio1-output.0, by name)"'
# Unnamed IRQs: position among the queue IRQs, the config vector left out.
fresh; sed -i 's/virtio1-input.0/virtio1-a/; s/virtio1-output.0/virtio1-b/' "$F/proc/interrupts"
run -j irq set dev eth1 policy cpus 1-3 xps
t "irq set xps without queue names: by position among the queue IRQs, said so" '[ $rc = 0 ] && [ "$(jp "(d[\"xps\"][0][\"irq\"], d[\"xps\"][0][\"cpu\"], d[\"xps\"][0][\"how\"])")" = "(31, 2, '"'"'by position among the queue IRQs'"'"')" ]'
run -j irq set dev eth0 policy local
t "irq set -j: valid JSON, managed IRQ with a null cpu" '[ $rc = 0 ] && json_ok && [ "$(jp "[(i[\"irq\"], i[\"cpu\"]) for i in d[\"irqs\"]]")" = "[(40, 2), (41, 3), (42, None), (43, 2)]" ]'
fresh; snap b
run irq set dev eth0 policy cpus 9
t "irq set: offline CPU refused, nothing written" '[ $rc = 1 ] && haserr "not online" && same b'
run irq set dev eth0 policy cpus 1-x
t "irq set: bad CPU list is a usage error" '[ $rc = 2 ] && haserr "expected a CPU list" && same b'
run irq set dev eth0 policy fastest
t "irq set: unknown policy" '[ $rc = 2 ] && haserr "unknown policy" && same b'
run irq set dev eth0 policy local frob
t "irq set: stray argument" '[ $rc = 2 ] && same b'
run irq set dev eth0
t "irq set: missing policy" '[ $rc = 2 ] && haserr usage && same b'
run irq set dev eth0 policy local node x
t "irq set: bad node" '[ $rc = 2 ] && same b'
run irq set dev eth0 policy local node 7
t "irq set: a node without a cpulist refused, nothing written" '[ $rc = 1 ] && one_line_err && haserr "node 7: no " && same b'
fresh; snap b
run irq set dev lo policy local
t "irq set: virtual device refused, nothing written" '[ $rc = 1 ] && same b'
# x86 moves an idle MSI at its next interrupt: the effective affinity stays.
rm "$F/proc/irq/41/effective_affinity_list"; echo 0 >"$F/proc/irq/41/effective_affinity_list"
run irq set dev eth0 policy local
t "irq set: effective affinity not moved yet is reported pending, not undone" '[ $rc = 0 ] && has "IRQ 41 (eth0-TxRx-1): 2 -> 3, effective 0 (pending: moves at its next interrupt)" && haserr "1 IRQs of eth0 are pending" && [ "$(aff 41)" = 3 ]'
run irq show dev eth0
t "irq show: the pending IRQ marked" 'grep -q "^ *41 .*pending" <<<"$out" && ! grep -q "^ *40 .*pending" <<<"$out"'
# A write the kernel refuses (EINVAL): IRQ 43's file is one that takes no
# number (THP's mode; the refused write changes nothing); 40 and 41 are undone.
thp=/sys/kernel/mm/transparent_hugepage/enabled
if [ -w "$thp" ]; then
	fresh; rm "$F/proc/irq/43/smp_affinity_list"; ln -s "$thp" "$F/proc/irq/43/smp_affinity_list"; snap c
	thp0=$(cat "$thp")
	run irq set dev eth0 policy local
	t "irq set: a refused write undoes every earlier write" '[ $rc = 1 ] && haserr "IRQ 43: writing 2 to" && haserr "Invalid argument" && haserr "restored" && same c && [ "$(cat "$thp")" = "$thp0" ]'
else
	skip "irq set: a refused write undoes every earlier write" "no writable $thp"
fi
fresh; rm "$F/sys/devices/pci0000:00/0000:00:03.0/virtio1/net/eth1/queues/tx-0/xps_cpus"; snap d
run irq set dev eth1 policy local xps
t "irq set xps on a device without XPS files fails before writing" '[ $rc = 1 ] && haserr "tx-0: cannot read" && same d'
if command -v setpriv >/dev/null; then
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env AHEADCTL_SYSFS_ROOT=$F/sys AHEADCTL_PROC_ROOT=$F/proc "$A" irq set dev eth0 policy local 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "irq set as non-root: permission message, nothing written" '[ $rc = 1 ] && haserr "irq set needs root" && same d'
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env AHEADCTL_SYSFS_ROOT=$F/sys AHEADCTL_PROC_ROOT=$F/proc "$A" -n irq set dev eth0 policy local 2>"$tmp/err"); rc=$?
	t "irq set -n as non-root: the plan, no privileges needed" '[ $rc = 0 ] && has "would set IRQ 40"'
else
	skip "irq set as non-root" "no setpriv"; skip "irq set -n as non-root" "no setpriv"
fi

# ---- block devices, wide masks ----
fresh
run irq show dev vda
t "irq show on a block device: virtio-blk's managed queue IRQs" '[ $rc = 0 ] && has "pci 0000:00:05.0" && grep -q "^ *50 .*virtio2-config .* ok$" <<<"$out" && grep -q "^ *51 .*managed" <<<"$out" && grep -q "^ *52 .*managed" <<<"$out" && ! has QUEUE'
run irq set dev vda policy cpus 1
t "irq set on a block device: config moved, managed left alone" '[ $rc = 0 ] && [ "$(aff 50)" = 1 ] && [ "$(aff 51)" = 0-1 ] && [ "$(aff 52)" = 2-3 ] && [ "$(grep -c "managed by the kernel" <<<"$out")" = 2 ]'
run irq set dev vda policy local xps
t "irq set xps on a block device refused before writing" '[ $rc = 1 ] && haserr "no tx queues" && [ "$(aff 50)" = 1 ]'
fresh; echo 0-39 >"$F/sys/devices/system/cpu/online"
run irq set dev eth0 policy cpus 33,39 xps
t "irq set: CPUs above 31 as lists, XPS masks in 32-bit groups" '[ $rc = 0 ] && [ "$(aff 40)" = 33 ] && [ "$(aff 41)" = 39 ] && [ "$(xps 0)" = 2,00000000 ] && [ "$(xps 1)" = 80,00000000 ]'
run irq show dev eth0
t "irq show: wide XPS masks read back as lists" '[ $rc = 0 ] && grep -q "^0 *33 " <<<"$out" && grep -q "^1 *39 " <<<"$out"'

# ---- node N with a known numa_node: an explicit override, said so ----
fresh
run irq show dev eth0 node 0
t "irq show node 0 on a node-1 NIC: overrides numa_node and says so" '[ $rc = 0 ] && has "numa_node 1 (overridden: using node 0, given)" && has "local CPUs 0-1" && has "node 0 given: it overrides the numa_node 1" && grep -q "^ *40 .* ok$" <<<"$out" && grep -q "^ *41 .*off-node" <<<"$out"'
run -j irq show dev eth0 node 0
t "irq show -j node 0: local_node 0, node_override true" '[ $rc = 0 ] && [ "$(jp "(d[\"numa_node\"], d[\"local_node\"], d[\"node_override\"])")" = "(1, 0, True)" ]'
run irq set dev eth0 policy local node 0
t "irq set local node 0 on a node-1 NIC: IRQs on node 0, the override said" '[ $rc = 0 ] && [ "$(aff 40)" = 0 ] && [ "$(aff 41)" = 1 ] && [ "$(aff 43)" = 0 ] && has "overrides the numa_node 1"'
run irq show dev eth0 node 1
t "irq show node N equal to numa_node: no override" '[ $rc = 0 ] && ! has overrid && has "numa_node 1  local CPUs 2-3"'

# ---- affinity_hint ----
fresh
printf '00000008\n' >"$F/proc/irq/41/affinity_hint"	# CPU 3: local
printf '00000001\n' >"$F/proc/irq/43/affinity_hint"	# CPU 0: remote
printf '00000000\n' >"$F/proc/irq/40/affinity_hint"	# none
run irq show dev eth0
t "irq show: affinity_hint column" '[ $rc = 0 ] && has " HINT " && grep -q "^ *41 .* 3  *ok$" <<<"$out" && grep -q "^ *43 .* 0  *off-node$" <<<"$out" && grep -q "^ *40 .* -  *off-node$" <<<"$out"'
run -j irq show dev eth0
q="'"
t "irq show -j: affinity_hint per IRQ (null without the file, empty without a hint)" '[ $rc = 0 ] && [ "$(jp "[i[\"affinity_hint\"] for i in d[\"irqs\"]]")" = "[$q$q, ${q}3$q, None, ${q}0$q]" ]'
run irq set dev eth0 policy local
t "irq set: a local hint is followed, a remote one is not" '[ $rc = 0 ] && [ "$(aff 41)" = 3 ] && has "IRQ 41 (eth0-TxRx-1): 2 -> 3 (driver'"'"'s affinity_hint)" && [ "$(aff 40)" = 2 ] && [ "$(aff 43)" = 3 ] && ! grep -q "IRQ 43 .*hint" <<<"$out"'
# A hint of two CPUs: the controller may target one of them (narrowed), which is kept.
fresh
printf '0000000c\n' >"$F/proc/irq/41/affinity_hint"
rm "$F/proc/irq/41/effective_affinity_list"; echo 3 >"$F/proc/irq/41/effective_affinity_list"
run irq set dev eth0 policy local
t "irq set: an effective affinity narrower than written is reported, not undone" '[ $rc = 0 ] && [ "$(aff 41)" = 2-3 ] && [ "$(aff 40)" = 2 ] && has "IRQ 41 (eth0-TxRx-1): 2 -> 2-3 (driver'"'"'s affinity_hint), effective 3 (narrowed by the interrupt controller" && haserr "narrower than the CPUs written" && ! haserr restored'
# smp_affinity_list that does not read back what was written is a real failure.
fresh; rm "$F/proc/irq/43/smp_affinity_list"; ln -s /dev/null "$F/proc/irq/43/smp_affinity_list"
run irq set dev eth0 policy local
t "irq set: smp_affinity_list reading back otherwise undoes every write" '[ $rc = 1 ] && haserr "IRQ 43: wrote 2, read back" && haserr "restored" && [ "$(aff 40)" = 0 ] && [ "$(aff 41)" = 2 ]'
# /proc/interrupts unreadable: said, not silently fewer IRQs.
fresh; rm "$F/proc/interrupts"; mkdir "$F/proc/interrupts"
run irq show dev eth0
t "irq show: unreadable /proc/interrupts is a warning naming what is missing" '[ $rc = 0 ] && haserr "aheadctl: warning: cannot read $F/proc/interrupts" && haserr "IRQs known only by name are missing" && ! has mlx5_comp3'

# ---- irqbalance ----
fresh
mkdir -p "$F/proc/4242"; echo irqbalance >"$F/proc/4242/comm"
printf '/usr/sbin/irqbalance\0--foreground\0--banirq=41\0' >"$F/proc/4242/cmdline"
mkdir -p "$F/proc/77"; echo bash >"$F/proc/77/comm"
run irq show dev eth0
t "irqbalance detected; the exact --banirq ban printed for the IRQs it owns" '[ $rc = 0 ] && has "irqbalance (pid 4242) is running and will move 2 of eth0" && has "--banirq=40 --banirq=43" && ! has "--banirq=41" && ! has "--banirq=42"'
t "irqbalance: owned IRQs marked, banned and managed ones not" 'grep -q "^ *40 .*irqbalance" <<<"$out" && ! grep -q "^ *41 .*irqbalance" <<<"$out" && ! grep -q "^ *42 .*irqbalance" <<<"$out"'
# A command line of more than 8 KiB and 256 arguments is read whole.
cp "$F/proc/4242/cmdline" "$tmp/cmdline"
{ printf '%s\0' /usr/sbin/irqbalance; for i in $(seq 400); do printf -- '--hintpolicy=subset%04d\0' "$i"; done
  printf '%s\0' --banirq=40 -i 43 --banirq=41; } >"$F/proc/4242/cmdline"
run irq show dev eth0
t "irqbalance: a $(($(wc -c <"$F/proc/4242/cmdline") / 1024)) KiB command line of 400+ arguments read whole, its last bans seen" '[ $rc = 0 ] && has "all of eth0'"'"'s IRQs are banned"'
cp "$tmp/cmdline" "$F/proc/4242/cmdline"
# Ban first, then write: irqbalance can move an IRQ between a write and a ban.
snap e0; rm -rf "$F/etc"; echo not-a-dir >"$F/etc"; snap e1
run irq set dev eth0 policy local
t "irq set under irqbalance: a ban that cannot be written stops before any affinity is written" '[ $rc = 1 ] && one_line_err && haserr "cannot create $F/etc/aheadctl" && same e1'
rm -f "$F/etc"; mkdir "$F/etc"
run -n irq set dev eth0 policy local
t "irq set -n under irqbalance: says it would ban first, writes nothing" '[ $rc = 0 ] && has "would ban eth0 (PCI 0000:81:00.0) from irqbalance in $F/etc/aheadctl/irqbalance-policy.sh before writing" && same e0'
run irq set dev eth0 policy local
pol=$F/etc/aheadctl/irqbalance-policy.sh
t "irq set under irqbalance: banned in the policy script first, applied, and the restart it needs printed" '[ $rc = 0 ] && [ "$(head -n 1 <<<"$out")" = "banned eth0 (PCI 0000:81:00.0) from irqbalance in $pol before writing" ] && grep -q "^# aheadctl-ban eth0 0000:81:00.0$" "$pol" && [ "$(aff 40)" = 2 ] && haserr "--banirq=40 --banirq=43"'
# A failure after the ban: the policy script is put back with the affinities.
rm -rf "$F/etc/aheadctl"; mkdir -p "$F/etc/aheadctl"
rm "$F/proc/irq/43/smp_affinity_list"; ln -s /dev/null "$F/proc/irq/43/smp_affinity_list"
run irq set dev eth0 policy local
t "irq set under irqbalance fails after the ban: the policy script it wrote is removed too" '[ $rc = 1 ] && haserr "IRQ 43: wrote 2, read back" && [ ! -e "$pol" ] && haserr "removed irqbalance policy script ($pol): it did not exist before" && [ "$(aff 40)" = 2 ]'
printf '#!/bin/sh\n# aheadctl-ban eth7 0000:07:00.0\nexit 0\n' >"$pol"; chmod 755 "$pol"
run irq set dev eth0 policy local
t "irq set under irqbalance fails after the ban: an earlier policy script is put back as it was" '[ $rc = 1 ] && [ "$(cat "$pol")" = "$(printf "#!/bin/sh\n# aheadctl-ban eth7 0000:07:00.0\nexit 0")" ] && haserr "restored irqbalance policy script"'
rm "$F/proc/irq/43/smp_affinity_list"; echo 0-3 >"$F/proc/irq/43/smp_affinity_list"
rm -rf "$F/etc/aheadctl"
snap e
run -n irq ban dev eth0
t "irq ban -n: shows the script, writes nothing" '[ $rc = 0 ] && has "# aheadctl-ban eth0" && same e && [ ! -e "$F/etc/aheadctl/irqbalance-policy.sh" ]'
run irq ban dev eth0
t "irq ban: policy script written, with the way to enable it" '[ $rc = 0 ] && [ -x "$pol" ] && has "IRQBALANCE_ARGS=\"--policyscript=$pol\""'
# The script run exactly as irqbalance runs it (classify.c: popen of
# "exec SCRIPT PATH IRQ"; PATH is /sys/bus/pci/devices/BDF for an IRQ of a
# PCI function, /sys for one without a sysfs device): output and status.
irqb() { sh -c "exec $pol $1 $2"; echo "status=$?"; }
t "irq ban: the script bans eth0's function, and its name-only IRQ by the address in its line" '[ "$(irqb /sys/bus/pci/devices/0000:81:00.0 40)" = "ban=true
status=0" ] && [ "$(irqb /sys 43)" = "ban=true
status=0" ]'
t "irq ban: other devices and IRQs pass, with status 0" '[ "$(irqb /sys/bus/pci/devices/0000:00:03.0 31)" = status=0 ] && [ "$(irqb /sys 99)" = status=0 ] && [ "$(irqb /sys/bus/pci/devices/10000:81:00.0 40)" = status=0 ]'
run irq ban dev eth1
t "irq ban: a second device keeps the first" '[ $rc = 0 ] && [ "$(grep -c "^# aheadctl-ban " "$pol")" = 2 ] && [ "$(irqb /sys/bus/pci/devices/0000:81:00.0 40)" = "ban=true
status=0" ] && [ "$(irqb /sys/bus/pci/devices/0000:00:03.0 31)" = "ban=true
status=0" ]'
# A reboot: eth0's IRQs are now 140-143, and eth1 (another device) got 40-42.
f0=$F/sys/devices/pci0000:80/0000:80:00.0/0000:81:00.0 f1=$F/sys/devices/pci0000:00/0000:00:03.0
# (eth1's own entry becomes another device's, so that nothing bans eth1.)
sed -i 's/aheadctl-ban eth1 .*/aheadctl-ban eth9 0000:00:09.0/' "$pol"
rm "$f0"/msi_irqs/* "$f1"/msi_irqs/*
for i in 140 141 142; do echo msix >"$f0/msi_irqs/$i"; done
for i in 40 41 42; do echo msix >"$f1/msi_irqs/$i"; done
sed -i 's/^ 4\([0-3]\):/14\1:/; s/^ 3\([0-2]\):\(.*\)virtio1/ 4\1:\2virtio1/' "$F/proc/interrupts"
for i in 140 141 142 143; do mk_irq "$F" $i 0-3; done
chmod 644 "$F/proc/irq/42/smp_affinity_list"	# eth1's now, not managed
t "after a reboot the script bans eth0 under its new IRQ numbers" '[ "$(irqb /sys/bus/pci/devices/0000:81:00.0 140)" = "ban=true
status=0" ] && [ "$(irqb /sys 143)" = "ban=true
status=0" ]'
t "after a reboot the device that inherited eth0's old IRQ numbers is not banned" '[ "$(irqb /sys/bus/pci/devices/0000:00:03.0 40)" = status=0 ] && [ "$(irqb /sys/bus/pci/devices/0000:00:03.0 41)" = status=0 ]'
printf '/usr/sbin/irqbalance\0--policyscript=%s\0' "$pol" >"$F/proc/4242/cmdline"
run irq show dev eth0
t "irqbalance with our policy script after a reboot: eth0's new IRQs banned" '[ $rc = 0 ] && has "all of eth0'"'"'s IRQs are banned" && grep -q "^ *143  mlx5_comp3" <<<"$out"'
run irq show dev eth1
t "irqbalance with our policy script after a reboot: eth1 on eth0's old numbers is not banned" '[ $rc = 0 ] && has "will move 3 of eth1" && grep -q "^ *40 .*irqbalance" <<<"$out"'

# ---- storage-node scale: 64, 128 and 256 CPUs (mkbig.py, generated here) ----
# ens1f0np0: mlx5 on node 1, IRQ 200 async, 201-263 comp0-62 (232-263 only
# named in /proc/interrupts), hints from cpumask_local_spread; 63 tx queues.
for ncpu in 64 128 256; do
	B=$tmp/big$ncpu; rm -rf "$B"; python3 "$here/mkbig.py" irq "$B" $ncpu; use "$B"
	n1=$(cat "$B/sys/devices/system/node/node1/cpulist")
	run irq show dev ens1f0np0
	t "$ncpu CPUs: /proc/interrupts of $(($(wc -c <"$B/proc/interrupts") / 1024)) KiB read, every IRQ of the NIC named, the name-only ones found" '[ $rc = 0 ] && [ "$(grep -c "^ *2[0-6][0-9]  mlx5_" <<<"$out")" = 64 ] && grep -q "^ *200  mlx5_async0@pci:0000:81:00.0 " <<<"$out" && grep -q "^ *263  mlx5_comp62@pci:0000:81:00.0 " <<<"$out" && has "local CPUs $n1"'
	run -j irq show dev ens1f0np0
	t "$ncpu CPUs: irq show -j, 64 IRQs, comp0 hinted to node 1's first CPU, 126 queues" '[ $rc = 0 ] && [ "$(jp "len(d[\"irqs\"])")" = 64 ] && [ "$(jp "d[\"irqs\"][1][\"affinity_hint\"]")" = 16 ] && [ "$(jp "all(i[\"name\"] and i[\"off_node\"] for i in d[\"irqs\"])")" = True ] && [ "$(jp "len(d[\"queues\"])")" = 126 ]'
	run doctor --skip-bw
	t "$ncpu CPUs: doctor counts all 64 off-node IRQs" '[ $rc = 1 ] && has "ens1f0np0: 64 IRQs (200,201," && has ",263) run off the NIC'"'"'s node 1 (CPUs $n1)"'
	run -j irq set dev ens1f0np0 policy local xps
	t "$ncpu CPUs: irq set local xps: every IRQ on node 1, hints kept, tx-N on compN's CPU" '[ $rc = 0 ] && python3 -c "
import json, sys
d = json.loads(sys.argv[1]); b = sys.argv[2]
def cpus(l):
    s = set()
    for r in l.split(\",\"):
        a, _, z = r.partition(\"-\"); s |= set(range(int(a), int(z or a) + 1))
    return s
n1 = cpus(open(b + \"/sys/devices/system/node/node1/cpulist\").read().strip())
aff = {i[\"irq\"]: cpus(open(b + \"/proc/irq/%d/smp_affinity_list\" % i[\"irq\"]).read().strip()) for i in d[\"irqs\"]}
assert len(aff) == 64 and all(a <= n1 and len(a) == 1 for a in aff.values()), aff
hinted = [i[\"irq\"] for i in d[\"irqs\"] if i[\"hint_followed\"]]
assert hinted == list(range(201, 233)), hinted
for x in d[\"xps\"]:
    q = x[\"queue\"]
    assert x[\"irq\"] == 201 + q and x[\"how\"] == \"by name\", x
    m = open(b + \"/sys/devices/pci0000:80/0000:80:00.0/0000:81:00.0/net/ens1f0np0/queues/tx-%d/xps_cpus\" % q).read().strip()
    assert {c for c in range(4096) if int(m.replace(\",\", \"\"), 16) >> c & 1} == aff[201 + q], (q, m)
assert len(d[\"xps\"]) == 63
" "$out" "$B"'
	run irq show dev nvme1n1
	t "$ncpu CPUs: an NVMe drive's managed queue IRQs" '[ $rc = 0 ] && [ "$(grep -c "managed$" <<<"$out")" = $((ncpu / 2)) ] && grep -q "nvme1q0 .*off-node$" <<<"$out"'
	run doctor --skip-bw
	t "$ncpu CPUs: doctor after the set finds nothing" '[ $rc = 0 ] && has "0 findings"'
	rm -rf "$B"
done
use "$F"
