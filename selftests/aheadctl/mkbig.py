#!/usr/bin/env python3
# mkbig.py: generates big fixture trees for aheadctl's host tests, at test
# time, so that no megabytes of fixture are committed.
#
#   mkbig.py irq DIR NCPU       a storage node with NCPU CPUs (a multiple of 64)
#   mkbig.py mountinfo FILE     a ~2 MB mountinfo of a node running containers
#
# irq: NCPU/32 NUMA nodes whose cpulists are split as SMT siblings are
# (node n: CPUs 16n..16n+15 and NCPU/2+16n..NCPU/2+16n+15); a ConnectX-style
# NIC ens1f0np0 (mlx5, 0000:81:00.0 behind a bridge, numa_node 1) with an
# async vector (IRQ 200, mlx5_async0@pci:...) and 63 completion vectors
# (IRQs 201-263, mlx5_compN@pci:...), 63 tx and rx queues; IRQs 200-231 are
# in msi_irqs, 232-263 only named in /proc/interrupts (as sub-function
# vectors are).  comp N has the affinity_hint mlx5 sets,
# cpumask_local_spread(N, node 1): node 1's CPUs first, then the others.
# Three NVMe drives on node 0 (0000:0N:00.0, nvmeN / nvmeNn1) with an admin
# IRQ and NCPU/2 managed (0444) queue IRQs of two CPUs each.  Every IRQ
# starts on all CPUs; effective_affinity_list is a symlink to
# smp_affinity_list, so it follows a write as the kernel's does.
# /proc/interrupts has every CPU's column: at 256 CPUs it is over 1 MB.
import os
import sys


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def cpulist(cpus):
    cpus = sorted(cpus)
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else "%d-%d" % (cpus[i], cpus[j]))
        i = j + 1
    return ",".join(out)


def cpumask(cpus, ncpu):
    words = []
    for w in range(ncpu // 32 - 1, -1, -1):
        v = sum(1 << (c - 32 * w) for c in cpus if 32 * w <= c < 32 * w + 32)
        words.append("%08x" % v)
    return ",".join(words)


def mk_irq(proc, irq, aff, hint=None, managed=False):
    d = "%s/irq/%d" % (proc, irq)
    write(d + "/smp_affinity_list", aff)
    os.symlink("smp_affinity_list", d + "/effective_affinity_list")
    if hint is not None:
        write(d + "/affinity_hint", hint)
    if managed:
        os.chmod(d + "/smp_affinity_list", 0o444)


def pci_function(sys_, path, node, local, irqs):
    os.makedirs(path + "/msi_irqs", exist_ok=True)
    depth = path[len(sys_) + 1:].count("/") + 1
    os.symlink("../" * depth + "bus/pci", path + "/subsystem")
    write(path + "/numa_node", str(node))
    write(path + "/local_cpulist", cpulist(local))
    for i in irqs:
        write("%s/msi_irqs/%d" % (path, i), "msix")


def mk_irq_tree(root, ncpu):
    sys_, proc = root + "/sys", root + "/proc"
    nnodes, half = ncpu // 32, ncpu // 2
    nodes = [list(range(16 * n, 16 * n + 16)) + list(range(half + 16 * n, half + 16 * n + 16))
             for n in range(nnodes)]
    allcpus = list(range(ncpu))
    write(sys_ + "/devices/system/cpu/online", "0-%d" % (ncpu - 1))
    for n, cpus in enumerate(nodes):
        write("%s/devices/system/node/node%d/cpulist" % (sys_, n), cpulist(cpus))
    os.makedirs(sys_ + "/bus/pci", exist_ok=True)
    os.makedirs(sys_ + "/class/net", exist_ok=True)
    os.makedirs(sys_ + "/class/block", exist_ok=True)
    os.makedirs(root + "/etc", exist_ok=True)
    write(proc + "/self/mountinfo", "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw")
    write(proc + "/self/mounts", "/dev/sda1 / ext4 rw,relatime 0 0")
    lines = []  # (irq, chip, hwirq, name)

    # The mlx5 NIC on node 1.
    bdf = "0000:81:00.0"
    bridge = sys_ + "/devices/pci0000:80/0000:80:00.0"
    f = bridge + "/" + bdf
    os.makedirs(bridge, exist_ok=True)
    os.symlink("../../../bus/pci", bridge + "/subsystem")
    pci_function(sys_, f, 1, nodes[1], range(200, 232))
    spread = nodes[1] + [c for n in nodes if n is not nodes[1] for c in n]
    mk_irq(proc, 200, cpulist(allcpus), cpumask([], ncpu))
    lines.append((200, "IR-PCI-MSIX-" + bdf, "0-edge", "mlx5_async0@pci:" + bdf))
    for q in range(63):
        mk_irq(proc, 201 + q, cpulist(allcpus), cpumask([spread[q]], ncpu))
        lines.append((201 + q, "IR-PCI-MSIX-" + bdf, "%d-edge" % (q + 1),
                      "mlx5_comp%d@pci:%s" % (q, bdf)))
    net = f + "/net/ens1f0np0"
    for q in range(63):
        write("%s/queues/tx-%d/xps_cpus" % (net, q), cpumask([], ncpu))
        write("%s/queues/rx-%d/rps_cpus" % (net, q), cpumask([], ncpu))
    os.symlink("../../../" + bdf, net + "/device")
    os.symlink("../../devices/pci0000:80/0000:80:00.0/%s/net/ens1f0np0" % bdf,
               sys_ + "/class/net/ens1f0np0")

    # Three NVMe drives on node 0, managed queue IRQs.
    irq = 300
    for k in range(3):
        bdf = "0000:0%d:00.0" % (k + 1)
        f = "%s/devices/pci0000:00/%s" % (sys_, bdf)
        nq = ncpu // 2
        pci_function(sys_, f, 0, nodes[0], range(irq, irq + nq + 1))
        mk_irq(proc, irq, cpulist(allcpus))
        lines.append((irq, "IR-PCI-MSIX-" + bdf, "0-edge", "nvme%dq0" % k))
        for q in range(nq):
            mk_irq(proc, irq + 1 + q, cpulist([2 * q, 2 * q + 1]), managed=True)
            lines.append((irq + 1 + q, "IR-PCI-MSIX-" + bdf, "%d-edge" % (q + 1),
                          "nvme%dq%d" % (k, q + 1)))
        ctrl = "%s/nvme/nvme%d" % (f, k)
        os.makedirs(ctrl + "/nvme%dn1" % k)
        os.symlink("../..", ctrl + "/device")
        os.symlink("../../nvme%d" % k, "%s/nvme%dn1/device" % (ctrl, k))
        os.symlink("../../devices/pci0000:00/%s/nvme/nvme%d/nvme%dn1" % (bdf, k, k),
                   "%s/class/block/nvme%dn1" % (sys_, k))
        irq += nq + 1

    # /proc/interrupts: every CPU's column, as the kernel prints it.
    out = [" " * 11 + "".join("CPU%-8d" % c for c in allcpus).rstrip()]
    for n, chip, hw, name in [(0, "IR-IO-APIC", "2-edge", "timer"),
                              (9, "IR-IO-APIC", "9-fasteoi", "acpi")] + lines:
        counts = "".join(" %10d" % ((n * 7919 + c * 104729) % 1000003 if n != 0 or c == 0 else 0)
                         for c in allcpus)
        out.append("%4d:%s  %-8s %s  %s" % (n, counts, chip, hw, name))
    for tag, desc in [("NMI", "Non-maskable interrupts"), ("LOC", "Local timer interrupts"),
                      ("RES", "Rescheduling interrupts")]:
        out.append("%4s:%s   %s" % (tag, "".join(" %10d" % c for c in allcpus), desc))
    out.append(" ERR:          0")
    write(proc + "/interrupts", "\n".join(out))


def mk_mountinfo(path):
    # Docker-style overlay mounts around the two aheadfs mounts of the small
    # fixture (0:58 and 0:59, whose sysfs directories fixture.sh makes).
    out = ["22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw"]
    for i in range(2500):
        h = "%064x" % (i * 2654435761 % (1 << 256))
        lower = ":".join("/var/lib/docker/overlay2/l/%026X" % ((i * 31 + k) * 7919) for k in range(8))
        out.append("%d 22 0:%d / /var/lib/docker/overlay2/%s/merged rw,relatime shared:%d - overlay overlay "
                   "rw,lowerdir=%s,upperdir=/var/lib/docker/overlay2/%s/diff,workdir=/var/lib/docker/overlay2/%s/work"
                   % (1000 + i, 200 + i, h, 500 + i, lower, h, h))
        if i == 1200:
            out.append("60 22 0:58 / /mnt/ahead rw,relatime - aheadfs /srv/a rw,prefetch=ahead")
        if i == 2200:
            out.append("61 22 0:59 / /mnt/slow\\040one rw,relatime - aheadfs /srv/b rw,prefetch=legacy")
    write(path, "\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "irq":
        mk_irq_tree(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[1] == "mountinfo":
        mk_mountinfo(sys.argv[2])
    else:
        sys.exit("usage: mkbig.py irq DIR NCPU | mkbig.py mountinfo FILE")
