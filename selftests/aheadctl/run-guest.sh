#!/usr/bin/env bash
# run-guest.sh 6.1|6.12: boots the guest guest-irq.sh needs and runs it;
# TAP on stdout and in build/results/aheadctl-guest-KERNEL.tap.
#
# The guest: 4 CPUs in two NUMA nodes (0-1, 2-3), a 4-queue virtio-net
# behind a pxb-pcie bridge on node 1 (a tap whose host end, 10.239.0.1,
# lives in a private network namespace made here), a virtio-net on the root
# bus (numa_node -1), a 2-queue virtio-blk on a null backend (managed IRQs).
#
# A run that fails says why in its TAP: the last lines of the guest's output
# and of vm-run's and QEMU's stderr, as comments (the whole of both is kept
# in aheadctl-guest-KERNEL.tap.log and .tap.err, and per boot in .log.N and
# .err.N).  A guest that never started
# its command (the namespace, the tap, QEMU or the kernel did not come up)
# is booted once more, and the TAP says so in a comment; a guest that
# started the command is never booted again, whatever its result.
#
# AHEADFS_SIMULATE_BOOT_FAILURE=N gives the first N boots (1 or 2) a QEMU
# option that QEMU does not know, so that they fail before the guest starts:
# to try the retry (1) and the report of a guest that never booted (2).
set -uo pipefail
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
log=$out.log err=$out.err
started='# run-guest: guest command started'
simulate=${AHEADFS_SIMULATE_BOOT_FAILURE:-0}
[[ $simulate =~ ^[0-9]+$ ]] || simulate=0

# boot N: one boot; the guest's stdout in $log.N, every stderr in $err.N.
boot() {
	local q=$qopts
	[ "$1" -le "$simulate" ] && q+=" -aheadfs-simulated-boot-failure"
	echo "# $(date +%T) boot $1 of the aheadctl guest on $k" >&2
	# The tap and its host end exist only in this namespace, gone with it.
	unshare --net -- sh -c 'ip link set lo up &&
		ip tuntap add dev ahq0 mode tap multi_queue &&
		ip addr add 10.239.0.1/24 dev ahq0 && ip link set ahq0 up && exec "$@"' sh \
		"$top/scripts/vm-run" --kernel "$k" --cpus 4 --memory 2G --timeout 900 --no-erms \
		--qemu-opts "$q" -- \
		bash -c "echo '$started'; exec selftests/aheadctl/guest-irq.sh" \
		</dev/null >"$log.$1" 2>"$err.$1"
}

# tails N: the last lines of boot N's output and stderr, as TAP comments.
tails() {
	echo "# boot $1, the guest's last lines:"
	tail -n 15 "$log.$1" | sed 's/^/#   /'
	echo "# boot $1, vm-run's and QEMU's last lines (stderr):"
	tail -n 15 "$err.$1" | sed 's/^/#   /'
}

rm -f "$log".[12] "$err".[12]
t0=$(date +%s)
boot 1
rc=$? n=1
note=
if ! grep -qF "$started" "$log.1"; then
	note="# the first boot failed (vm-run exit $rc after $(($(date +%s) - t0)) s, the guest never started its command) and was retried"
	n=2
	boot 2
	rc=$?
fi
cat "$log.$n" >"$log"
cat "$err.$n" >"$err"
# Everything vm-run said goes on to our caller's stderr, as before.
cat "$err.1" >&2
[ $n = 2 ] && cat "$err.2" >&2

{
	echo "TAP version 13"
	if [ -n "$note" ]; then
		echo "$note"
		tails 1
	fi
	grep -E '^(ok |not ok |#|1\.\.)' "$log.$n"
} >"$out"
planned=$(sed -nE 's/^1\.\.([0-9]+).*/\1/p' "$out" | head -n 1)
got=$(grep -cE '^(not )?ok [0-9]+ ' "$out")
why=
if ! grep -qF "$started" "$log.$n"; then
	why="the guest did not boot (twice: vm-run exit $rc, the command never started)"
elif [ -z "$planned" ]; then
	why="no plan: guest-irq.sh did not finish (vm-run exit $rc)"
elif [ "$got" -lt "$planned" ]; then
	why="$got of $planned results (vm-run exit $rc)"
elif [ $rc != 0 ] && ! grep -q '^not ok' "$out"; then
	why="vm-run exited $rc without a failing result"
fi
if [ -n "$why" ]; then
	{
		tails "$n"
		echo "not ok $((got + 1)) aheadctl guest-irq on $k: $why"
	} >>"$out"
	# A plan, so that the file stays one test run.
	[ -n "$planned" ] || echo "1..$((got + 1))" >>"$out"
	rc=1
fi
cat "$out"
exit "$rc"
