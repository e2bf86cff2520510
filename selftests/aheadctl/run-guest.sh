#!/usr/bin/env bash
# run-guest.sh 6.1|6.12: boots the guest guest-irq.sh needs and runs it;
# TAP on stdout and in build/results/aheadctl-guest-KERNEL.tap.
#
# The guest: 4 CPUs in two NUMA nodes (0-1, 2-3), a 4-queue virtio-net
# behind a pxb-pcie bridge on node 1 (a tap whose host end, 10.239.0.1,
# lives in a private network namespace made here), a virtio-net on the root
# bus (numa_node -1), a 2-queue virtio-blk on a null backend (managed IRQs).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
k=${1:?usage: run-guest.sh 6.1|6.12}
qopts="-object memory-backend-ram,id=m0,size=1G -object memory-backend-ram,id=m1,size=1G"
qopts+=" -numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,cpus=2-3,memdev=m1"
qopts+=" -device pxb-pcie,id=pxb1,bus_nr=128,numa_node=1,bus=pcie.0"
qopts+=" -device pcie-root-port,id=rp1,bus=pxb1,chassis=10"
qopts+=" -netdev tap,id=n1,ifname=ahq0,script=no,downscript=no,queues=4"
qopts+=" -device virtio-net-pci,netdev=n1,bus=rp1,mq=on,vectors=10"
qopts+=" -netdev user,id=n0 -device virtio-net-pci,netdev=n0,bus=pcie.0"
qopts+=" -blockdev driver=null-co,node-name=nb0,size=67108864"
qopts+=" -device virtio-blk-pci,drive=nb0,num-queues=2,bus=pcie.0"
mkdir -p "$top/build/results"
out=$top/build/results/aheadctl-guest-$k.tap
# The tap and its host end exist only in this namespace, gone with it.
unshare --net -- sh -c 'ip link set lo up &&
	ip tuntap add dev ahq0 mode tap multi_queue &&
	ip addr add 10.239.0.1/24 dev ahq0 && ip link set ahq0 up && exec "$@"' sh \
	"$top/scripts/vm-run" --kernel "$k" --cpus 4 --memory 2G --timeout 900 \
	--qemu-opts "$qopts" -- selftests/aheadctl/guest-irq.sh </dev/null |
	tee "$out.log" | grep -E '^(TAP version|ok |not ok |#|1\.\.)' >"$out"
rc=${PIPESTATUS[0]}
cat "$out"
grep -q '^1\.\.' "$out" || { echo "not ok 1 aheadctl guest-irq on $k: no plan (see $out.log)" | tee -a "$out"; exit 1; }
exit "$rc"
