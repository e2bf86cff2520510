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
t "irq set cpus LIST xps: IRQs and XPS round robin over LIST" '[ $rc = 0 ] && [ "$(aff 40)" = 0 ] && [ "$(aff 41)" = 1 ] && [ "$(aff 43)" = 0 ] && [ "$(xps 0)" = 1 ] && [ "$(xps 1)" = 2 ] && [ "$(xps 2)" = 1 ] && [ "$(xps 3)" = 2 ]'
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

# ---- irqbalance ----
fresh
mkdir -p "$F/proc/4242"; echo irqbalance >"$F/proc/4242/comm"
printf '/usr/sbin/irqbalance\0--foreground\0--banirq=41\0' >"$F/proc/4242/cmdline"
mkdir -p "$F/proc/77"; echo bash >"$F/proc/77/comm"
run irq show dev eth0
t "irqbalance detected; the exact --banirq ban printed for the IRQs it owns" '[ $rc = 0 ] && has "irqbalance (pid 4242) is running and will move 2 of eth0" && has "--banirq=40 --banirq=43" && ! has "--banirq=41" && ! has "--banirq=42"'
t "irqbalance: owned IRQs marked, banned and managed ones not" 'grep -q "^ *40 .*irqbalance" <<<"$out" && ! grep -q "^ *41 .*irqbalance" <<<"$out" && ! grep -q "^ *42 .*irqbalance" <<<"$out"'
run irq set dev eth0 policy local
t "irq set under irqbalance: applied, and the ban printed on stderr" '[ $rc = 0 ] && haserr "--banirq=40 --banirq=43"'
snap e
run -n irq ban dev eth0
t "irq ban -n: shows the script, writes nothing" '[ $rc = 0 ] && has "# aheadctl-ban eth0" && same e && [ ! -e "$F/etc/aheadctl/irqbalance-policy.sh" ]'
run irq ban dev eth0
pol=$F/etc/aheadctl/irqbalance-policy.sh
t "irq ban: policy script written, with the way to enable it" '[ $rc = 0 ] && [ -x "$pol" ] && has "IRQBALANCE_ARGS=\"--policyscript=$pol\""'
p0=$(realpath "$F/sys/devices/pci0000:80/0000:80:00.0/0000:81:00.0")
t "irq ban: the script bans the NIC by device path and by IRQ, nothing else" '[ "$(sh "$pol" "$p0" 12345)" = ban=true ] && [ "$(sh "$pol" /sys/devices/other 43)" = ban=true ] && [ -z "$(sh "$pol" /sys/devices/other 99)" ]'
run irq ban dev eth1
t "irq ban: a second device keeps the first" '[ $rc = 0 ] && [ "$(grep -c "^# aheadctl-ban " "$pol")" = 2 ] && [ "$(sh "$pol" /x 43)" = ban=true ] && [ "$(sh "$pol" /x 31)" = ban=true ]'
printf '/usr/sbin/irqbalance\0--policyscript=%s\0' "$pol" >"$F/proc/4242/cmdline"
run irq show dev eth0
t "irqbalance with our policy script: all of eth0's IRQs banned" '[ $rc = 0 ] && has "all of eth0'"'"'s IRQs are banned" && ! grep -q "^ *4[0-3] .*irqbalance" <<<"$out"'

