# fixture.sh: builds fake sysfs/procfs/etc trees for aheadctl's host tests.
# Sourced; mk_fixture DIR makes DIR/sys, DIR/proc, DIR/etc.
#
# eth0: a NIC on node 1 (0000:81:00.0 behind a bridge), IRQs 40-42 in
#   msi_irqs, 43 only named mlx5-style in /proc/interrupts, 42 managed
#   (0444, as from 6.12), 4 tx and 4 rx queues.
# eth1: virtio-net: its device link is the virtio device under the PCI
#   function 0000:00:03.0 (numa_node -1, local_cpulist 0-3), IRQs 30-32.
# lo: no device.
# Effective affinity files are symlinks to smp_affinity_list: they follow a
# write as the kernel's do (a test replaces one to model a kernel that
# does not follow).

mk_irq() {	# DIR IRQ AFFINITY
	mkdir -p "$1/proc/irq/$2"
	echo "$3" >"$1/proc/irq/$2/smp_affinity_list"
	ln -s smp_affinity_list "$1/proc/irq/$2/effective_affinity_list"
}

mk_fixture() {
	local d=$1 s=$1/sys p=$1/proc
	mkdir -p "$s/devices/system/cpu" "$s/devices/system/node/node0" \
		"$s/devices/system/node/node1" "$s/bus/pci" "$s/bus/virtio" \
		"$s/class/net" "$p/self" "$d/etc"
	echo 0-3 >"$s/devices/system/cpu/online"
	echo 0-1 >"$s/devices/system/node/node0/cpulist"
	echo 2-3 >"$s/devices/system/node/node1/cpulist"

	# eth0 on node 1
	local f0=$s/devices/pci0000:80/0000:80:00.0/0000:81:00.0
	mkdir -p "$f0/msi_irqs" "$f0/net/eth0/queues"
	ln -s ../../../../bus/pci "$f0/subsystem"
	ln -s ../../../bus/pci "$s/devices/pci0000:80/0000:80:00.0/subsystem"
	echo 1 >"$f0/numa_node"
	echo 2-3 >"$f0/local_cpulist"
	for i in 40 41 42; do echo msix >"$f0/msi_irqs/$i"; done
	ln -s ../../devices/pci0000:80/0000:80:00.0/0000:81:00.0/net/eth0 "$s/class/net/eth0"
	ln -s ../../../0000:81:00.0 "$f0/net/eth0/device"
	for q in 0 1 2 3; do
		mkdir -p "$f0/net/eth0/queues/tx-$q" "$f0/net/eth0/queues/rx-$q"
		echo 0 >"$f0/net/eth0/queues/tx-$q/xps_cpus"
		echo 0 >"$f0/net/eth0/queues/rx-$q/rps_cpus"
	done
	mk_irq "$d" 40 0
	mk_irq "$d" 41 2
	mk_irq "$d" 42 2-3
	chmod 0444 "$p/irq/42/smp_affinity_list"
	mk_irq "$d" 43 0-3

	# eth1: virtio-net on the root bus, numa_node -1
	local f1=$s/devices/pci0000:00/0000:00:03.0
	mkdir -p "$f1/msi_irqs" "$f1/virtio1/net/eth1/queues/tx-0" "$f1/virtio1/net/eth1/queues/rx-0"
	ln -s ../../../bus/pci "$f1/subsystem"
	ln -s ../../../../bus/virtio "$f1/virtio1/subsystem"
	echo -1 >"$f1/numa_node"
	echo 0-3 >"$f1/local_cpulist"
	for i in 30 31 32; do echo msix >"$f1/msi_irqs/$i"; done
	ln -s ../../devices/pci0000:00/0000:00:03.0/virtio1/net/eth1 "$s/class/net/eth1"
	ln -s ../../../virtio1 "$f1/virtio1/net/eth1/device"
	echo 00000000 >"$f1/virtio1/net/eth1/queues/tx-0/xps_cpus"
	echo 0 >"$f1/virtio1/net/eth1/queues/rx-0/rps_cpus"
	mk_irq "$d" 30 0-3
	mk_irq "$d" 31 0-3
	mk_irq "$d" 32 0-3

	# vda: virtio-blk, a queue IRQ per CPU pair, managed (0444) as from 6.12
	local f2=$s/devices/pci0000:00/0000:00:05.0
	mkdir -p "$f2/msi_irqs" "$f2/virtio2/block/vda" "$s/class/block"
	ln -s ../../../bus/pci "$f2/subsystem"
	echo -1 >"$f2/numa_node"
	echo 0-3 >"$f2/local_cpulist"
	for i in 50 51 52; do echo msix >"$f2/msi_irqs/$i"; done
	ln -s ../../devices/pci0000:00/0000:00:05.0/virtio2/block/vda "$s/class/block/vda"
	ln -s ../../../virtio2 "$f2/virtio2/block/vda/device"
	mk_irq "$d" 50 0-3
	mk_irq "$d" 51 0-1
	mk_irq "$d" 52 2-3
	chmod 0444 "$p/irq/51/smp_affinity_list" "$p/irq/52/smp_affinity_list"

	# lo: virtual
	mkdir -p "$s/devices/virtual/net/lo"
	ln -s ../../devices/virtual/net/lo "$s/class/net/lo"

	cat >"$p/interrupts" <<'INTR'
           CPU0       CPU1       CPU2       CPU3
  0:         44          0          0          0   IO-APIC   2-edge      timer
 30:          0          0          0          0   PCI-MSIX-0000:00:03.0   0-edge      virtio1-config
 31:        100          0          0          0   PCI-MSIX-0000:00:03.0   1-edge      virtio1-input.0
 32:         10          0          0          0   PCI-MSIX-0000:00:03.0   2-edge      virtio1-output.0
 40:          0          0          0          0   IR-PCI-MSI 1048576-edge      eth0-TxRx-0
 41:          0          0          0          0   IR-PCI-MSI 1048577-edge      eth0-TxRx-1
 42:          0          0          0          0   IR-PCI-MSI 1048578-edge      eth0-TxRx-2
 43:          0          0          0          0   IR-PCI-MSI 1048579-edge      mlx5_comp3@pci:0000:81:00.0
 50:          0          0          0          0   PCI-MSIX-0000:00:05.0   0-edge      virtio2-config
 51:          0          0          0          0   PCI-MSIX-0000:00:05.0   1-edge      virtio2-req.0
 52:          0          0          0          0   PCI-MSIX-0000:00:05.0   2-edge      virtio2-req.1
 99:          0          0          0          0   IR-PCI-MSI 2048-edge      nvme0q1
NMI:          0          0          0          0   Non-maskable interrupts
INTR
	mkdir -p "$p/irq/99"
	echo 0 >"$p/irq/99/smp_affinity_list"

	# aheadfs mount 0:58 (healthy) and 0:59 (legacy, tails, txn > window),
	# with a space in its mount point; an ext4 and an NFS mount.
	cat >"$p/self/mountinfo" <<'MI'
22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
60 22 0:58 / /mnt/ahead rw,relatime - aheadfs /srv/a rw,prefetch=ahead
61 22 0:59 / /mnt/slow\040one rw,relatime - aheadfs /srv/b rw,prefetch=legacy
MI
	cat >"$p/self/mounts" <<'MO'
/dev/sda1 / ext4 rw,relatime 0 0
/srv/a /mnt/ahead aheadfs rw,relatime,prefetch=ahead 0 0
MO
	mk_aheadfs "$s/fs/aheadfs/0:58" ahead 8192 65536 0 /srv/a
	mk_aheadfs "$s/fs/aheadfs/0:59" legacy 16384 8192 7 /srv/b
}

mk_aheadfs() {	# DIR PREFETCH TXN_KB WINDOW_KB UNCACHED_TAILS LOWER
	mkdir -p "$1"
	echo "$2" >"$1/prefetch"
	echo "$3" >"$1/txn_kb"
	echo "$4" >"$1/window_kb"
	echo 0 >"$1/attr_timeout_ms"
	echo 0 >"$1/entry_timeout_ms"
	echo 0 >"$1/negative_timeout_ms"
	echo 0 >"$1/readdir_cache"
	echo 262144 >"$1/fh_search_entries"
	echo "$6" >"$1/lower"
	printf 'read_reqs 100\nread_bytes 409600\nuncached_tails %s\nprefetch_chunks 12\nprefetch_bytes 98304\nwindow_cur 0\nop_lookup 3\n' \
		"$5" >"$1/stats"
}

# A fixture with nothing to find: eth0 local, no irqbalance, no NFS, healthy aheadfs.
mk_clean_fixture() {
	mk_fixture "$1"
	echo 2 >"$1/proc/irq/40/smp_affinity_list"
	echo 3 >"$1/proc/irq/43/smp_affinity_list"
	echo 2-3 >"$1/proc/irq/31/smp_affinity_list"
	sed -i '/0:59/d' "$1/proc/self/mountinfo"
}
