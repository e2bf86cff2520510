#!/usr/bin/env bash
# host-tests.sh AHEADCTL: aheadctl's host tests, TAP on stdout.
# Fake sysfs/procfs trees (fixture.sh), the Redfish emulator (redfish_emu.py)
# and OpenIPMI's ipmi_sim on 127.0.0.1, vendor tools through -n, numa bw on
# this host.  Exit status 1 if any test failed.
set -u
A=${1:?usage: host-tests.sh PATH/TO/aheadctl}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/fixture.sh"
tmp=$(mktemp -d /tmp/aheadctl-test.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

n=0 failed=0
echo "TAP version 13"
pass() { n=$((n + 1)); echo "ok $n $1"; }
fail() {
	n=$((n + 1)); failed=1; echo "not ok $n $1"
	echo "# rc=$rc stdout: $(head -c 1500 <<<"$out" | tr '\n' '|')"
	echo "# stderr: $(head -c 800 <<<"$err" | tr '\n' '|')"
}
skip() { n=$((n + 1)); echo "ok $n $1 # SKIP $2"; }
# run ARGS...: runs aheadctl, sets rc, out, err.
run() { out=$("$A" "$@" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err"); }
# t NAME CONDITION...: the condition is evaluated with the last run's results.
t() { local name=$1; shift; if eval "$@"; then pass "$name"; else fail "$name"; fi; }
json_ok() { python3 -c 'import json,sys; json.loads(sys.stdin.read())' <<<"$out" 2>/dev/null; }
# jq-like probe: jp 'PYTHON EXPR on d' prints its value.
jp() { python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print($1)" <<<"$out" 2>/dev/null; }
has() { grep -qF -- "$1" <<<"$out"; }
haserr() { grep -qF -- "$1" <<<"$err"; }
one_line_err() { [ "$(grep -c . <<<"$err")" -ge 1 ] && grep -q '^aheadctl: ' <<<"$err"; }

F=$tmp/f
use() { export AHEADCTL_SYSFS_ROOT=$1/sys AHEADCTL_PROC_ROOT=$1/proc AHEADCTL_ETC_ROOT=$1/etc; }
fresh() { rm -rf "$F"; mk_fixture "$F"; use "$F"; }
aff() { cat "$F/proc/irq/$1/smp_affinity_list"; }
xps() { cat "$F/sys/devices/pci0000:80/0000:80:00.0/0000:81:00.0/net/eth0/queues/tx-$1/xps_cpus"; }
# Every file's content (as read: a trailing newline does not count).
tree() { (cd "$F" && find . -type f | sort | while read -r f; do printf '%s=%s\n' "$f" "$(tr -d '\0' <"$f")"; done); }
snap() { tree >"$tmp/snap.$1"; }
same() { tree | cmp -s - "$tmp/snap.$1"; }

# ---- general ----
run help
t "help: exit 0 and every object's verbs" '[ $rc = 0 ] && has "irq show" && has "irq set" && has "irq ban" && has "numa bw" && has "fs show" && has "fs set" && has "bios show" && has "bios set" && has "power-cycle" && has doctor'
run
t "no arguments: usage, exit 2" '[ $rc = 2 ] && haserr usage'
run frob
t "unknown object: one message, exit 2" '[ $rc = 2 ] && [ "$err" = "aheadctl: unknown object '"'"'frob'"'"' (irq, numa, fs, bios, doctor, help)" ]'
run -x irq
t "unknown option: exit 2" '[ $rc = 2 ] && haserr "unknown option"'

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

# ---- numa bw (this host) ----
run -j numa bw --size 16M --seconds 0.05
nn=$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)
t "numa bw on this host: ${nn}x${nn} matrix, every cell > 0 MB/s" '[ $rc = 0 ] && json_ok && [ "$(jp "len(d[\"mbps\"])")" = $nn ] && [ "$(jp "all(all(c > 0 for c in r) for r in d[\"mbps\"])")" = True ]'
if [ "$nn" = 1 ]; then
	t "numa bw on one node: no ratio, no false alarm" '[ "$(jp "d[\"worst_ratio\"]")" = None ] && [ "$(jp "d[\"flagged\"]")" = False ] && [ "$(jp "d[\"threshold\"]")" = 0.25 ]'
else
	t "numa bw: a ratio per remote pair" '[ "$(jp "d[\"worst_ratio\"] > 0")" = True ]'
fi
run numa bw --size 16M --seconds 0.05 --threads 1
t "numa bw: human table" '[ $rc = 0 ] && has "cpu\\mem" && has "1 threads per CPU node"'
for bad in "--size 12Q" "--size 100" "--threads 0" "--threads x" "--seconds 0" "--seconds 99" "--seconds" "--bogus 1"; do
	run numa bw $bad
	t "numa bw $bad: usage error" '[ $rc = 2 ] && one_line_err'
done
run numa frob
t "numa: unknown verb" '[ $rc = 2 ]'

# ---- fs ----
fresh
run fs show
t "fs show: both aheadfs mounts, unescaped, with tunables and stats" '[ $rc = 0 ] && has "/mnt/ahead  dev 0:58  lower /srv/a" && has "/mnt/slow one  dev 0:59" && grep -q "txn_kb *16384" <<<"$out" && grep -q "uncached_tails *7" <<<"$out" && ! has sda1'
run -j fs show /mnt/ahead/
t "fs show -j MNT: one mount, numbers as numbers" '[ $rc = 0 ] && json_ok && [ "$(jp "len(d)")" = 1 ] && [ "$(jp "d[0][\"tunables\"][\"txn_kb\"]")" = 8192 ] && [ "$(jp "d[0][\"tunables\"][\"prefetch\"]")" = ahead ] && [ "$(jp "d[0][\"stats\"][\"read_reqs\"]")" = 100 ]'
printf '70 22 0:60 / /mnt/q"x\\134y\\011z rw - aheadfs /srv/c rw\n' >>"$F/proc/self/mountinfo"
mk_aheadfs "$F/sys/fs/aheadfs/0:60" ahead 8192 65536 0 '/srv/"c'
run -j fs show
t "fs show -j: quotes, backslashes and tabs in names escaped" '[ $rc = 0 ] && json_ok && [ "$(jp "d[2][\"mountpoint\"] == \"/mnt/q\\\"x\\\\y\\tz\" and d[2][\"lower\"] == \"/srv/\\\"c\"")" = True ]'
run fs show /
t "fs show: a non-aheadfs mount refused" '[ $rc = 1 ] && haserr "/ is not an aheadfs mount"'
run fs show a b
t "fs show: two mounts is a usage error" '[ $rc = 2 ]'
printf '22 1 8:1 / / rw - ext4 /dev/sda1 rw\n' >"$F/proc/self/mountinfo"
run fs show
t "fs show: no aheadfs mounts said so" '[ $rc = 0 ] && has "no aheadfs mounts"'
run -j fs show
t "fs show -j: no mounts is an empty array" '[ $rc = 0 ] && [ "$out" = "[]" ]'
fresh; snap f
run -n fs set /mnt/ahead txn_kb=4096
t "fs set -n: nothing written" '[ $rc = 0 ] && has "would set /mnt/ahead: txn_kb 8192 -> 4096" && same f'
run fs set /mnt/ahead txn_kb=4096 prefetch=legacy
t "fs set: values written and read back" '[ $rc = 0 ] && [ "$(cat "$F/sys/fs/aheadfs/0:58/txn_kb")" = 4096 ] && [ "$(cat "$F/sys/fs/aheadfs/0:58/prefetch")" = legacy ]'
fresh; snap g
for bad in "txn_kb=1" "txn_kb=2000000" "txn_kb=12k" "window_kb=-1" "prefetch=fast" "bogus=1" "txn_kb" "=4"; do
	run fs set /mnt/ahead $bad
	t "fs set $bad: usage error, nothing written" '[ $rc = 2 ] && one_line_err && same g'
done
run fs set /mnt/none txn_kb=4096
t "fs set on a non-aheadfs path refused" '[ $rc = 1 ] && haserr "not an aheadfs mount" && same g'
run fs set /mnt/ahead
t "fs set without KEY=VALUE" '[ $rc = 2 ]'
# The second write fails (its file is gone): the first is put back.
rm "$F/sys/fs/aheadfs/0:58/window_kb"; mkdir "$F/sys/fs/aheadfs/0:58/window_kb"; snap h
run fs set /mnt/ahead txn_kb=4096 window_kb=1024
t "fs set: a failed write is refused before anything is written" '[ $rc = 1 ] && same h'
fresh
# A file that reads and opens for writing but refuses the value, as the
# module does with EINVAL: aheadctl's own oom_score_adj (range -1000..1000).
ln -sfn /proc/self/oom_score_adj "$F/sys/fs/aheadfs/0:58/window_kb"
run fs set /mnt/ahead txn_kb=4096 window_kb=1024
t "fs set: a refused write undoes the earlier writes" '[ $rc = 1 ] && haserr "the module refused the value" && haserr "restored txn_kb=8192" && [ "$(cat "$F/sys/fs/aheadfs/0:58/txn_kb")" = 8192 ]'
fresh
if command -v setpriv >/dev/null; then
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env AHEADCTL_SYSFS_ROOT=$F/sys AHEADCTL_PROC_ROOT=$F/proc "$A" fs set /mnt/ahead txn_kb=4096 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "fs set as non-root: permission message" '[ $rc = 1 ] && haserr "fs set needs root" && [ "$(cat "$F/sys/fs/aheadfs/0:58/txn_kb")" = 8192 ]'
else
	skip "fs set as non-root" "no setpriv"
fi

# ---- doctor ----
fresh
mkdir -p "$F/proc/4242"; echo irqbalance >"$F/proc/4242/comm"; printf 'irqbalance\0' >"$F/proc/4242/cmdline"
cat >>"$F/proc/self/mounts" <<'MO'
srv:/export /mnt/nfs nfs4 rw,sync,relatime,vers=4.2,rsize=1048576,noac,proto=tcp 0 0
srv:/e2 /mnt/nfs2 nfs rw,relatime,vers=3,acregmin=0,acregmax=0,acdirmin=0,acdirmax=0 0 0
srv:/e3 /mnt/nfs3 nfs4 rw,relatime,vers=4.2 0 0
MO
run doctor --skip-bw
t "doctor: findings found, exit 1" '[ $rc = 1 ] && has "7 findings"'
t "doctor: off-node IRQs with the fixing command" 'has "eth0: 2 IRQs (40,43) run off the NIC'"'"'s node 1" && has "fix: aheadctl irq set dev eth0 policy local"'
t "doctor: irqbalance conflict with the fixing command" 'has "irqbalance (pid 4242) owns" && has "fix: aheadctl irq ban dev eth0" && has "fix: aheadctl irq ban dev eth1"'
t "doctor: NFS noac and actimeo=0 mounts, the fix keeps the other options" 'has "/mnt/nfs (srv:/export): noac" && has "mount -t nfs4 -o relatime,vers=4.2,rsize=1048576,proto=tcp,actimeo=3 srv:/export /mnt/nfs" && has "/mnt/nfs2 (srv:/e2): actimeo=0" && ! has "/mnt/nfs3 ("'
t "doctor: aheadfs uncached tails and txn_kb above the window" 'has "/mnt/slow one: 7 of 100 reads" && has "fix: aheadctl fs set '"'"'/mnt/slow one'"'"' prefetch=ahead" && has "txn_kb 16384 is larger than the prefetch window (window_kb 8192)" && has "fix: aheadctl fs set '"'"'/mnt/slow one'"'"' window_kb=16384"'
t "doctor: one-node bandwidth note, no false alarm" 'has "ok: numa: " && ! has "[numa]"'
run -j doctor --skip-bw
t "doctor -j: valid JSON, findings with fixes" '[ $rc = 1 ] && json_ok && [ "$(jp "d[\"count\"]")" = 7 ] && [ "$(jp "all(f[\"fix\"] for f in d[\"findings\"])")" = True ] && [ "$(jp "sorted(set(f[\"area\"] for f in d[\"findings\"]))")" = "['"'"'fs'"'"', '"'"'irq'"'"', '"'"'nfs'"'"']" ]'
# Run the fixes the doctor named, as a shell reads them; then irqbalance
# restarts with the policy script (as the ban's message says).
run doctor --skip-bw
sed -n 's/^  fix: aheadctl \(fs\|irq\) /\1 /p' <<<"$out" >"$tmp/fixes"
while read -r l; do eval "\"\$A\" $l" >/dev/null 2>&1 || echo "# fix failed: $l"; done <"$tmp/fixes"
printf 'irqbalance\0--policyscript=%s\0' "$F/etc/aheadctl/irqbalance-policy.sh" >"$F/proc/4242/cmdline"
# The counters are cumulative: a fresh mount's (no tails since) stands for "later".
sed -i 's/^uncached_tails .*/uncached_tails 0/' "$F/sys/fs/aheadfs/0:59/stats"
run doctor --skip-bw
t "doctor: after running the fixes it named only the NFS findings remain" '[ $(wc -l <"$tmp/fixes") = 5 ] && [ "$(cat "$F/sys/fs/aheadfs/0:59/window_kb")" = 16384 ] && [ "$(cat "$F/sys/fs/aheadfs/0:59/prefetch")" = ahead ] && [ $rc = 1 ] && has "2 findings" && [ "$(grep -c "^FINDING \[nfs\]" <<<"$out")" = 2 ]'
rm -rf "$F"; mk_clean_fixture "$F"
run doctor
t "doctor: a clean node has no findings, exit 0" '[ $rc = 0 ] && has "0 findings" && ! has FINDING'
run doctor --frob
t "doctor: unknown argument" '[ $rc = 2 ]'
unset AHEADCTL_SYSFS_ROOT AHEADCTL_PROC_ROOT AHEADCTL_ETC_ROOT

# ---- bios: Redfish against redfish_emu.py ----
emu() {	# emu NAME VENDOR [ARGS...]: starts the emulator, sets URL_NAME
	local name=$1 vendor=$2; shift 2
	python3 "$here/redfish_emu.py" --vendor "$vendor" --ready "$tmp/$name.port" \
		--log "$tmp/$name.log" "$@" >/dev/null 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do [ -s "$tmp/$name.port" ] && break; sleep 0.05; done
	[ -s "$tmp/$name.port" ]
}
patches() { grep -c '"method": "PATCH"' "$tmp/$1.log" 2>/dev/null || true; }
export AHEADCTL_BMC_USER=root AHEADCTL_BMC_PASSWORD=calvin
if emu dell dell && emu hpe hpe && emu acme acme && emu nosnoop dell-nosnoop && emu two dell --systems 2; then
	D=http://127.0.0.1:$(cat "$tmp/dell.port")
	run bios show --bmc "$D"
	t "redfish: Dell SnoopMode read and mapped" '[ $rc = 0 ] && has "Dell Inc. PowerEdge R730" && has "SnoopMode = EarlySnoop (snoop-mode early)"'
	run -j bios show --bmc "$D"
	t "redfish -j: valid JSON" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"snoop_mode\"]")" = early ] && [ "$(jp "d[\"pending\"]")" = None ]'
	run bios set snoop-mode home --bmc "$D"
	t "redfish: set without --yes refused, no PATCH" '[ $rc = 2 ] && haserr "add --yes" && [ "$(patches dell)" = 0 ]'
	run -n bios set snoop-mode home --bmc "$D" --reboot
	t "redfish -n: the PATCH and the reset shown, none sent" '[ $rc = 0 ] && has "would PATCH /redfish/v1/Systems/1/Bios/Settings" && has "\"ApplyTime\":\"OnReset\"" && has "would POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset" && [ "$(patches dell)" = 0 ] && ! grep -q POST "$tmp/dell.log"'
	run --yes bios set snoop-mode home --bmc "$D"
	t "redfish: PATCH Bios/Settings with SettingsApplyTime, pending without --reboot" '[ $rc = 0 ] && has "pending" && has "not rebooting" && grep "\"PATCH\"" "$tmp/dell.log" | grep "\"@Redfish.SettingsApplyTime\": {\"ApplyTime\": \"OnReset\"}" | grep -q "\"Attributes\": {\"SnoopMode\": \"HomeSnoop\"}" && ! grep -q "\"POST\"" "$tmp/dell.log"'
	run bios show --bmc "$D"
	t "redfish: show reports the pending value" '[ $rc = 0 ] && has "(snoop-mode early)" && has "pending: SnoopMode = HomeSnoop"'
	run --yes bios set snoop-mode home --bmc "$D" --reboot
	t "redfish: --reboot resets the system (ForceRestart)" '[ $rc = 0 ] && grep "\"POST\"" "$tmp/dell.log" | grep -q "\"ResetType\": \"ForceRestart\""'
	run -j bios show --bmc "$D"
	t "redfish: after the reset the BIOS runs home snoop" '[ "$(jp "d[\"snoop_mode\"]")" = home ] && [ "$(jp "d[\"pending\"]")" = None ]'
	np=$(patches dell)
	run --yes bios set snoop-mode home --bmc "$D"
	t "redfish: setting the current value changes nothing" '[ $rc = 0 ] && has "already HomeSnoop" && [ "$(patches dell)" = "$np" ]'
	run --yes bios set snoop-mode osb --bmc "$D"
	t "redfish: Dell opportunistic snoop broadcast" '[ $rc = 0 ] && grep -q "OpportunisticSnoopBroadcast" "$tmp/dell.log"'
	run --yes bios power-cycle --bmc "$D"
	t "redfish: power-cycle" '[ $rc = 0 ] && has "reset requested: ForceRestart"'
	H=http://127.0.0.1:$(cat "$tmp/hpe.port")
	run --yes bios set snoop-mode early --bmc "$H"
	t "redfish: HPE QpiSnoopConfig, early snoop is Standard" '[ $rc = 0 ] && grep "\"PATCH\"" "$tmp/hpe.log" | grep -q "\"QpiSnoopConfig\": \"Standard\"" || { [ $rc = 0 ] && has "already Standard"; }'
	run --yes bios set snoop-mode home --bmc "$H"
	t "redfish: HPE home snoop" '[ $rc = 0 ] && grep "\"PATCH\"" "$tmp/hpe.log" | grep -q "\"QpiSnoopConfig\": \"HomeSnoop\""'
	n0=$(patches hpe)
	run --yes bios set snoop-mode osb --bmc "$H"
	t "redfish: HPE has no OSB: refused, no PATCH" '[ $rc = 1 ] && haserr "offers no '"'"'osb'"'"'" && [ "$(patches hpe)" = "$n0" ]'
	run --yes bios set snoop-mode home --bmc "http://127.0.0.1:$(cat "$tmp/acme.port")"
	t "redfish: unknown manufacturer refused, no PATCH" '[ $rc = 1 ] && haserr "unknown manufacturer '"'"'Acme Servers'"'"'" && haserr "refusing to guess" && [ "$(patches acme)" = 0 ]'
	run --yes bios set snoop-mode home --bmc "http://127.0.0.1:$(cat "$tmp/nosnoop.port")"
	t "redfish: known vendor without the attribute refused" '[ $rc = 1 ] && haserr "has no attribute SnoopMode" && [ "$(patches nosnoop)" = 0 ]'
	T=http://127.0.0.1:$(cat "$tmp/two.port")
	run bios show --bmc "$T"
	t "redfish: several systems need --system" '[ $rc = 1 ] && haserr "has 2 systems; choose one with --system ID: 1 2"'
	run bios show --bmc "$T" --system 2
	t "redfish: --system picks one" '[ $rc = 0 ] && has "/redfish/v1/Systems/2"'
	run bios show --bmc "$T" --system 9
	t "redfish: absent --system" '[ $rc = 1 ] && haserr "no system '"'"'9'"'"'"'
	AHEADCTL_BMC_PASSWORD=wrong run bios show --bmc "$D"
	t "redfish: wrong password is one clear message" '[ $rc = 1 ] && [ "$err" = "aheadctl: the BMC refused the credentials of user '"'"'root'"'"' (HTTP 401)" ]'
	run bios show --bmc "$D" --password calvin
	t "redfish: a password on the command line is refused" '[ $rc = 2 ] && haserr "not taken from the command line"'
	run bios show --bmc "$D" --password=calvin
	t "redfish: --password=... refused too" '[ $rc = 2 ]'
	printf 'calvin\n' >"$tmp/pw"; chmod 0644 "$tmp/pw"
	AHEADCTL_BMC_PASSWORD= run bios show --bmc "$D" --password-file "$tmp/pw"
	t "redfish: a password file readable by others is refused" '[ $rc = 1 ] && haserr "mode 0600" && haserr "0644"'
	chmod 0600 "$tmp/pw"
	out=$(env -u AHEADCTL_BMC_PASSWORD "$A" bios show --bmc "$D" --password-file "$tmp/pw" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "redfish: a 0600 password file is used" '[ $rc = 0 ] && has "snoop-mode"'
	out=$(env -u AHEADCTL_BMC_PASSWORD "$A" bios show --bmc "$D" --password-file "$tmp/nofile" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "redfish: a missing password file" '[ $rc = 1 ] && haserr "cannot open password file"'
	out=$(env -u AHEADCTL_BMC_PASSWORD "$A" bios show --bmc "$D" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "redfish: no password at all" '[ $rc = 2 ] && haserr "credentials missing"'
	out=$(env -u AHEADCTL_BMC_USER "$A" bios show --bmc "$D" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "redfish: no user" '[ $rc = 2 ] && haserr "credentials missing"'
	run bios show
	t "bios: nothing to talk to" '[ $rc = 2 ] && haserr "nothing to talk to"'
	run bios show --bmc
	t "bios: --bmc without a value" '[ $rc = 2 ] && haserr "--bmc needs a value"'
	run bios set snoop-mode turbo --bmc "$D"
	t "bios: unknown snoop mode" '[ $rc = 2 ] && haserr "expected home, early, cod or osb"'
	run bios set turbo on --bmc "$D"
	t "bios: only snoop-mode can be set" '[ $rc = 2 ]'
	run bios show --via carrier-pigeon
	t "bios: unknown --via" '[ $rc = 2 ]'
	run bios frob
	t "bios: unknown verb" '[ $rc = 2 ]'
	# A closed port: nothing listens on the port of a stopped emulator.
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' >"$tmp/closed"
	run bios show --bmc "http://127.0.0.1:$(cat "$tmp/closed")"
	t "redfish: unreachable BMC is one message" '[ $rc = 1 ] && haserr "Could not connect" || haserr "Couldn'"'"'t connect"'
	# TLS: verified unless --insecure.
	if openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" \
		-days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 &&
		emu tls dell --tls "$tmp/cert.pem" "$tmp/key.pem"; then
		S=https://127.0.0.1:$(cat "$tmp/tls.port")
		run bios show --bmc "$S"
		t "redfish TLS: an unknown certificate is refused" '[ $rc = 1 ] && haserr "did not verify; --insecure skips the check"'
		AHEADCTL_CA_FILE=$tmp/cert.pem run bios show --bmc "$S"
		t "redfish TLS: verified against the given CA" '[ $rc = 0 ] && has "snoop-mode early"'
		run bios show --bmc "$S" --insecure
		t "redfish TLS: --insecure skips the check" '[ $rc = 0 ] && has "snoop-mode early"'
	else
		for x in 1 2 3; do skip "redfish TLS $x" "openssl or the TLS emulator failed"; done
	fi
else
	skip "redfish" "the emulator did not start"
fi

# ---- bios: IPMI against ipmi_sim ----
if command -v ipmi_sim >/dev/null && command -v ipmitool >/dev/null; then
	port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	mkdir -p "$tmp/ipmi/state"
	cat >"$tmp/ipmi/chassis" <<CH
#!/bin/sh
# ipmi_sim chassis control: DEVICE get|set PARM [VAL]...; power kept in a file.
echo "\$*" >>"$tmp/ipmi/chassis.log"
dev=\$1; op=\$2; shift 2
case \$op in
get) for p in "\$@"; do [ "\$p" = power ] && echo "power:\$(cat "$tmp/ipmi/power" 2>/dev/null || echo 1)"; done ;;
set) while [ \$# -ge 2 ]; do [ "\$1" = power ] && echo "\$2" >"$tmp/ipmi/power"; shift 2; done ;;
esac
exit 0
CH
	chmod +x "$tmp/ipmi/chassis"
	cat >"$tmp/ipmi/lan.conf" <<LC
name "aheadctl-test"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 $port
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
  endlan
  chassis_control "$tmp/ipmi/chassis 0x20"
  user 2 true  "admin" "s3cret" admin 10 none md2 md5 straight
LC
	# Dell's IANA number (674), product 0x0123.
	printf 'mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 674 0x0123 persist_sdr\nmc_enable 0x20\n' >"$tmp/ipmi/sim.emu"
	ipmi_sim -c "$tmp/ipmi/lan.conf" -f "$tmp/ipmi/sim.emu" -s "$tmp/ipmi/state" -n >"$tmp/ipmi/sim.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do ss -Huln "sport = :$port" | grep -q . && break; sleep 0.05; done
	# ipmi_sim 2.0.33 has no cipher suite 17 (ipmitool's default): use 3.
	export AHEADCTL_IPMI_CIPHER=3
	IP="127.0.0.1:$port"
	AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret run bios show --via ipmi --bmc "$IP"
	t "ipmi: board identified through ipmi_sim" '[ $rc = 0 ] && has "board: Dell Inc. (IANA 674), product 291 (0x0123)" && has "not readable over IPMI"'
	AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret run -j bios show --via ipmi --bmc "$IP"
	t "ipmi -j: valid JSON" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"manufacturer_id\"]")" = 674 ] && [ "$(jp "d[\"power\"]")" = on ]'
	AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret run -n bios power-cycle --via ipmi --bmc "$IP"
	t "ipmi -n power-cycle: the command shown, no password in it, nothing sent" '[ $rc = 0 ] && has "would run: ipmitool -I lanplus -H 127.0.0.1 -p $port -C 3 -U admin -E" && has "chassis power cycle" && ! has s3cret && ! grep -q "set power" "$tmp/ipmi/chassis.log" 2>/dev/null'
	AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret run --yes bios power-cycle --via ipmi --bmc "$IP"
	t "ipmi power-cycle reaches the chassis" '[ $rc = 0 ] && grep -q "set power 0" "$tmp/ipmi/chassis.log"'
	AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=wrong run bios show --via ipmi --bmc "$IP"
	t "ipmi: wrong password fails with one message" '[ $rc = 1 ] && haserr "ipmitool mc failed"'
	AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret run --yes bios set snoop-mode home --via ipmi --bmc "$IP"
	t "ipmi: bios set refused (no standard command)" '[ $rc = 1 ] && haserr "IPMI has no standard command"'
	AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret run bios power-cycle --via ipmi --bmc "$IP"
	t "ipmi: power-cycle without --yes refused" '[ $rc = 2 ] && haserr "add --yes"'
	run bios power-cycle --via racadm
	t "bios power-cycle via a vendor tool refused" '[ $rc = 2 ]'
else
	skip "ipmi" "ipmi_sim or ipmitool missing (Debian openipmi, ipmitool)"
fi

# ---- bios: vendor tools through their dry-run command lines ----
run -n bios set snoop-mode home --via racadm --reboot
t "racadm -n: get, set, job with power cycle" '[ $rc = 0 ] && [ "$out" = "would run: racadm get BIOS.MemSettings.SnoopMode
would run: racadm set BIOS.MemSettings.SnoopMode HomeSnoop
would run: racadm jobqueue create BIOS.Setup.1-1 -r pwrcycle -s TIME_NOW" ]'
run -n bios set snoop-mode cod --via racadm
t "racadm -n without --reboot: job queued, pending" '[ $rc = 0 ] && has "racadm set BIOS.MemSettings.SnoopMode ClusterOnDie" && has "would run: racadm jobqueue create BIOS.Setup.1-1" && ! has pwrcycle && has "pending"'
run -n bios set snoop-mode early --via ilorest --reboot
t "ilorest -n: early is Standard, commit, reboot" '[ $rc = 0 ] && has "would run: ilorest set QpiSnoopConfig=Standard --selector Bios. --commit" && has "would run: ilorest reboot"'
run -n bios set snoop-mode osb --via ilorest
t "ilorest: no OSB, refused" '[ $rc = 1 ] && haserr "no '"'"'osb'"'"' snoop mode"'
run -n bios set snoop-mode home --via onecli
t "onecli -n" '[ $rc = 0 ] && has "would run: onecli config set Processors.SnoopMode \"Home Snoop\""'
run -n bios set snoop-mode home --via syscfg
t "syscfg -n" '[ $rc = 0 ] && has "would run: syscfg /bcs \"\" \"Snoop Mode\" \"Home Snoop\""'
run -n bios set snoop-mode home --via onecli --reboot
t "onecli --reboot without a BMC for IPMI refused" '[ $rc = 2 ] && haserr "needs --bmc"'
AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=x run -n bios set snoop-mode home --via syscfg --reboot --bmc 127.0.0.1:9
t "syscfg --reboot: IPMI power cycle shown" '[ $rc = 0 ] && has "would run: ipmitool" && has "chassis power cycle"'
run -n bios set snoop-mode home --via sum
t "sum: set refused with the manual steps" '[ $rc = 1 ] && haserr "sum -c ChangeBiosCfg"'
run -n bios show --via sum
t "sum -n show" '[ $rc = 0 ] && has "would run: sum -c GetCurrentBiosCfg"'
out=$(PATH=/nonexistent "$A" bios show --via racadm 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
t "racadm not installed: one message" '[ $rc = 1 ] && [ "$err" = "aheadctl: racadm is not installed (not in PATH)" ]'
out=$(PATH=/nonexistent "$A" --yes bios set snoop-mode home --via racadm 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
t "racadm set not installed: one message" '[ $rc = 1 ] && haserr "not installed"'
# A tool that cannot read the attribute: nothing is set.
mkdir -p "$tmp/bin"; printf '#!/bin/sh\necho "$*" >>%s/racadm.log\n[ "$1" = get ] && { echo "ERROR: attribute not found" >&2; exit 3; }\nexit 0\n' "$tmp" >"$tmp/bin/racadm"; chmod +x "$tmp/bin/racadm"
out=$(PATH=$tmp/bin:$PATH "$A" --yes bios set snoop-mode home --via racadm 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
t "vendor tool without the attribute: refused before any set" '[ $rc = 1 ] && haserr "refusing to set it" && ! grep -q "^set" "$tmp/racadm.log"'

echo "1..$n"
exit $failed
