#!/usr/bin/env bash
# guest-irq.sh: aheadctl irq and numa bw in a two-node guest; TAP on stdout.
#
# The guest it needs (QEMU options, see Documentation/aheadctl.rst):
#   4 CPUs, 2G, NUMA node 0 = CPUs 0-1, node 1 = CPUs 2-3;
#   a multiqueue virtio-net behind a pxb-pcie bridge on node 1 (tap, 4 queues);
#   a virtio-net on the root bus (numa_node -1);
#   a virtio-blk with 2 queues (managed IRQs).
# Exit status 1 if any test failed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
A=${AHEADCTL:-$top/userland/aheadctl}
n=0 failed=0
echo "TAP version 13"
pass() { n=$((n + 1)); echo "ok $n $1"; }
fail() { n=$((n + 1)); failed=1; echo "not ok $n $1"; shift; for l in "$@"; do echo "# $l"; done; }
t() { local name=$1; shift; if eval "$@"; then pass "$name"; else fail "$name" "rc=$rc" "$(tr '\n' '|' <<<"$out" | head -c 2000)" "$(tr '\n' '|' <<<"$err" | head -c 600)"; fi; }
run() { out=$("$A" "$@" 2>/tmp/aheadctl.err); rc=$?; err=$(cat /tmp/aheadctl.err); }
has() { grep -qF -- "$1" <<<"$out"; }
haserr() { grep -qF -- "$1" <<<"$err"; }
# cpulist_in LIST ALLOWED: every CPU of LIST is in ALLOWED (both cpulists)
expand() { local IFS=,; for r in $1; do case $r in *-*) seq "${r%-*}" "${r#*-}" ;; *) echo "$r" ;; esac; done; }
cpulist_in() { local c; for c in $(expand "$1"); do expand "$2" | grep -qx "$c" || return 1; done; }
pci_of() { local d; d=$(readlink -f "/sys/class/$1/$2/device"); while [ "$d" != / ] && [ "$(basename "$(readlink -f "$d/subsystem")")" != pci ]; do d=$(dirname "$d"); done; echo "$d"; }

echo "# kernel $(uname -r)"
modprobe -q virtio_net 2>/dev/null; modprobe -q virtio_blk 2>/dev/null
# Devices show up asynchronously after modprobe: wait for them, bounded.
for _ in $(seq 100); do
	[ "$(ls /sys/class/net | grep -vc '^lo$')" -ge 2 ] && [ -e /sys/class/block/vda ] && break
	sleep 0.1
done

node1=$(cat /sys/devices/system/node/node1/cpulist 2>/dev/null)
rc=0 out="" err=""
t "two NUMA nodes, node 1 has CPUs" '[ -n "$node1" ]'
nic1="" nic0=""
for d in /sys/class/net/*; do
	dev=$(basename "$d"); [ -e "$d/device" ] || continue
	p=$(pci_of net "$dev"); node=$(cat "$p/numa_node" 2>/dev/null)
	[ "$node" = 1 ] && nic1=$dev
	[ "$node" = -1 ] && nic0=$dev
done
echo "# node-1 NIC: ${nic1:-none}, root-bus NIC: ${nic0:-none}"
t "a NIC behind the pxb-pcie bridge reports numa_node 1" '[ -n "$nic1" ]'

if [ -n "$nic1" ]; then
	p1=$(pci_of net "$nic1")
	irqs=$(ls "$p1/msi_irqs")
	run irq show dev "$nic1"
	t "irq show: node 1, its local CPUs, every msi_irq listed" '[ $rc = 0 ] && has "numa_node 1" && has "local CPUs $node1" && for i in $irqs; do grep -q "^ *$i " <<<"$out" || exit 1; done'
	echo "# $nic1: $(wc -w <<<"$irqs") IRQs, $(ls -d /sys/class/net/$nic1/queues/tx-* | wc -l) tx queues"
	# Start from IRQs on node 0 so the move is visible.
	for i in $irqs; do echo 0 >/proc/irq/$i/smp_affinity_list 2>/dev/null; done
	run irq show dev "$nic1"
	bad=""
	for i in $irqs; do grep -Eq "^ *$i .*(off-node|pending)" <<<"$out" || bad="$bad $i"; done
	t "irq show: IRQs put on node 0 are reported off-node or pending" '[ $rc = 0 ] && [ -z "$bad" ]'
	run irq set dev "$nic1" policy local xps
	t "irq set policy local xps: succeeds" '[ $rc = 0 ]'
	setout=$out
	bad=""
	for i in $irqs; do cpulist_in "$(cat /proc/irq/$i/smp_affinity_list)" "$node1" || bad="$bad $i"; done
	out="$bad"
	t "every IRQ's affinity is on node 1's CPUs" '[ -z "$bad" ]'
	# Idle MSIs move at their next interrupt: make the queues interrupt.
	# The host end of the tap (10.239.0.1, in the runner's private network
	# namespace) answers ARP and refuses UDP with ICMP.
	count() { awk -v i="$1:" '$1 == i { s = 0; for (k = 2; k <= NF; k++) if ($k ~ /^[0-9]+$/) s += $k; print s }' /proc/interrupts; }
	declare -A before
	for i in $irqs; do before[$i]=$(count "$i"); done
	ip addr add 10.239.0.2/24 dev "$nic1" && ip link set "$nic1" up
	for _ in $(seq 50); do
		for c in $(expand "$node1"); do
			taskset -c "$c" bash -c 'for p in $(seq 9000 9015); do echo x >/dev/udp/10.239.0.1/$p; done' 2>/dev/null
		done
		fired=0
		for i in $irqs; do [ "$(count "$i")" != "${before[$i]}" ] && fired=$((fired + 1)); done
		[ "$fired" -ge 2 ] && break
		sleep 0.1
	done
	bad="" fired=""
	for i in $irqs; do
		[ "$(count "$i")" != "${before[$i]}" ] || continue
		fired="$fired $i"
		e=$(cat /proc/irq/$i/effective_affinity_list)
		cpulist_in "$e" "$node1" || bad="$bad $i:$e"
	done
	echo "# IRQs that fired after the set:$fired"
	out="fired:$fired bad:$bad"
	t "every queue IRQ that interrupted since has its effective affinity on node 1" '[ -n "$fired" ] && [ -z "$bad" ]'
	bad=""
	for i in $irqs; do
		e=$(cat /proc/irq/$i/effective_affinity_list)
		cpulist_in "$e" "$node1" || grep -q "^IRQ $i (.*pending" <<<"$setout" || bad="$bad $i:$e"
	done
	out="$bad"
	t "an IRQ not yet on node 1 was reported pending by irq set" '[ -z "$bad" ]'
	bad=""
	for q in /sys/class/net/$nic1/queues/tx-*; do
		m=$(cat "$q/xps_cpus"); v=$((16#${m//,/}))
		[ "$v" != 0 ] && [ $((v & 3)) = 0 ] || bad="$bad $(basename "$q"):$m"
	done
	out="$bad"
	t "XPS of every tx queue is on node 1" '[ -z "$bad" ]'
	run irq show dev "$nic1"
	t "irq show after set: nothing off-node" '[ $rc = 0 ] && ! has off-node'
	# XPS follows the IRQ that serves the queue: virtio-net's output.N for tx-N.
	bad=""
	for q in /sys/class/net/$nic1/queues/tx-*; do
		qn=${q##*tx-} i=""
		for j in $irqs; do
			awk -v i="$j:" -v s="-output.$qn" '$1 == i && substr($NF, length($NF) - length(s) + 1) == s { f = 1 } END { exit !f }' /proc/interrupts && i=$j
		done
		[ -n "$i" ] || { bad="$bad tx-$qn:no-output-irq"; continue; }
		m=$(cat "$q/xps_cpus") want=0
		for c in $(expand "$(cat /proc/irq/$i/smp_affinity_list)"); do want=$((want | 1 << c)); done
		[ "$((16#${m//,/}))" = "$want" ] || bad="$bad tx-$qn:$m/irq$i"
	done
	out="$bad"
	t "XPS of tx-N is the CPU of the IRQ named ...-output.N" '[ -z "$bad" ]'
	run -j irq show dev "$nic1"
	t "irq show -j in the guest is valid JSON" '[ $rc = 0 ] && python3 -c "import json,sys; json.load(sys.stdin)" <<<"$out"'
	t "irq show -j: each IRQ's affinity_hint is its /proc/irq/N/affinity_hint" '[ $rc = 0 ] && python3 -c "
import json, sys
d = json.loads(sys.argv[1])
def span(r):
    a, _, z = r.partition(\"-\")
    return range(int(a), int(z or a) + 1)
for i in d[\"irqs\"]:
    v = int(open(\"/proc/irq/%d/affinity_hint\" % i[\"irq\"]).read().strip().replace(\",\", \"\"), 16)
    h = i[\"affinity_hint\"]
    got = [c for r in h.split(\",\") if r for c in span(r)]
    assert got == [c for c in range(v.bit_length()) if v >> c & 1], (i, hex(v))
" "$out"'
	run irq show dev "$nic1" node 0
	t "irq show node 0 on the node-1 NIC: an override, said so" '[ $rc = 0 ] && has "numa_node 1 (overridden: using node 0, given)" && has "local CPUs $(cat /sys/devices/system/node/node0/cpulist)"'
fi

t "a NIC on the root bus with numa_node -1" '[ -n "$nic0" ]'
if [ -n "$nic0" ]; then
	run irq show dev "$nic0"
	t "irq show: numa_node -1 said plainly, with the fallback" '[ $rc = 0 ] && has "numa_node is -1" && has "pass '"'"'node N'"'"' to choose a node"'
	p0=$(pci_of net "$nic0")
	run irq set dev "$nic0" policy local node 0
	n0cpus=$(cat /sys/devices/system/node/node0/cpulist)
	bad=""
	for i in $(ls "$p0/msi_irqs"); do
		cpulist_in "$(cat /proc/irq/$i/smp_affinity_list)" "$n0cpus" || bad="$bad $i"
		cpulist_in "$(cat /proc/irq/$i/effective_affinity_list)" "$n0cpus" ||
			grep -q "^IRQ $i (.*pending" <<<"$out" || bad="$bad $i(eff)"
	done
	t "irq set policy local node 0 on the -1 NIC: IRQs on node 0 (or pending)" '[ $rc = 0 ] && [ -z "$bad" ]'
fi

if [ -e /sys/class/block/vda ]; then
	pb=$(pci_of block vda)
	before=$(for i in $(ls "$pb/msi_irqs"); do echo "$i $(cat /proc/irq/$i/smp_affinity_list)"; done)
	run irq set dev vda policy cpus 0
	t "irq set on virtio-blk: managed IRQs reported, not a failure" '[ $rc = 0 ] && has "managed by the kernel, left alone"'
	changed=""
	while read -r i a; do
		grep -q "^IRQ $i (.*managed by the kernel" <<<"$out" || continue
		[ "$(cat /proc/irq/$i/smp_affinity_list)" = "$a" ] || changed="$changed $i"
	done <<<"$before"
	t "managed IRQs keep their affinity" '[ -z "$changed" ]'
	run irq show dev vda
	ro=$(find /proc/irq/*/smp_affinity_list -perm 0444 2>/dev/null | head -n 1)
	if [ -n "$ro" ]; then
		t "irq show on virtio-blk marks the managed IRQs (0444 files, 6.12)" '[ $rc = 0 ] && has managed'
	else
		t "irq show on virtio-blk runs (before 6.12 only a write tells managed IRQs)" '[ $rc = 0 ] && has "virtio"'
	fi
else
	t "a virtio-blk device (vda)" 'false'
fi

# numa bw: 2 CPUs per node, so 2 bandwidth threads and 1 beside the latency thread.
bw_ok() {	# every matrix 2x2 with every cell > 0
	python3 -c "import json,sys
d = json.load(sys.stdin)
assert d['nodes'] == [0, 1] and d['threads'] == [2, 2] and d['load_threads'] == [1, 1], d
for k in 'mbps', 'idle_latency_ns', 'loaded_latency_ns':
	assert len(d[k]) == 2 and all(len(r) == 2 and all(c > 0 for c in r) for r in d[k]), (k, d[k])
assert d['worst_ratio'] > 0 and d['traffic'] == sys.argv[1] and d['runs'] == 2" "$1" <<<"$out"
}
run -j numa bw --size 16M --seconds 0.1 --runs 2
t "numa bw: 2x2 bandwidth, idle and loaded latency matrices, every cell > 0" '[ $rc = 0 ] && bw_ok read'
echo "# numa bw: $(python3 -c 'import json,sys; d=json.load(sys.stdin); print("MB/s", d["mbps"], "ratio", d["worst_ratio"], "idle ns", d["idle_latency_ns"], "loaded ns", d["loaded_latency_ns"])' <<<"$out" 2>/dev/null)"
run -j numa bw --size 16M --seconds 0.1 --runs 2 --traffic rw
t "numa bw --traffic rw: the same shape, every cell > 0" '[ $rc = 0 ] && bw_ok rw'
echo "# numa bw --traffic rw: $(python3 -c 'import json,sys; d=json.load(sys.stdin); print("MB/s", d["mbps"])' <<<"$out" 2>/dev/null)"
run -j doctor --skip-bw
t "doctor in the guest: valid JSON, exit 0 or 1" '[ $rc -le 1 ] && python3 -c "import json,sys; json.load(sys.stdin)" <<<"$out"'

# apply/verify, the boot unit and the udev rule; sourced: the numbering goes on.
. "$top/selftests/aheadctl/guest-persist.sh"
echo "1..$n"
exit $failed
