# 95-results.sh: sourced by host-tests.sh.  Results that must be exact:
# what is read is unescaped, what cannot be read is said, numbers are
# compared as numbers, fixes run as printed and clear what they report.
# ---- results: the doctor's NFS check ----
fresh
cat >>"$F/proc/self/mounts" <<'MO'
srv:/my\040export /mnt/my\040nfs nfs4 rw,relatime,vers=4.2,noac 0 0
MO
run doctor --skip-bw
fixline=$(sed -n 's/^  fix: \(umount .*\) (or stack.*$/\1/p' <<<"$out")
(umount() { :; }; mount() { printf '%s\n' "$@" >"$tmp/mount.args"; }; eval "$fixline") >/dev/null 2>&1
t "doctor: an NFS mount point with a blank is unescaped, its fix runs on it" 'has "FINDING [nfs] /mnt/my nfs (srv:/my export): noac" && [ "$(sed -n 5,6p "$tmp/mount.args" | tr "\n" "|")" = "srv:/my export|/mnt/my nfs|" ]'
rm -f "$tmp/mount.args"
chmod 000 "$F/proc/self/mounts"; mv "$F/proc/self/mounts" "$F/proc/self/mounts.gone"
run doctor --skip-bw
t "doctor: an unreadable mounts file is a finding, not 'ok: 0 NFS mounts checked'" '[ $rc = 1 ] && has "FINDING [nfs] $F/proc/self/mounts: No such file or directory: the NFS mounts were not checked" && ! has "0 NFS mounts checked"'
run -j doctor --skip-bw
t "doctor -j: the unreadable mounts file among the findings" 'json_ok && [ "$(jp "len([f for f in d[\"findings\"] if f[\"area\"] == \"nfs\"])")" = 1 ]'
# ---- results: numbers with leading zeros are refused, not compared as text ----
persist_fixture
printf '[block vda]\nread_ahead_kb = 08192\n' | conf
snap lz
run apply
t "apply: read_ahead_kb = 08192 refused with its line, nothing written" '[ $rc = 1 ] && haserr "$CONF:2: read_ahead_kb = 08192: expected an integer from 0 to 2147483648, without leading zeros" && same lz'
run verify
t "verify: the same line refused, no drift reported for ever" '[ $rc = 1 ] && haserr "without leading zeros" && ! has DRIFT'
run fs set /mnt/ahead txn_kb=0064
t "fs set txn_kb=0064: refused, exit 2, nothing written" '[ $rc = 2 ] && haserr "txn_kb=0064: expected an integer from 4 to 1048576, without leading zeros" && same lz'
run fs set /mnt/ahead txn_kb=64
t "fs set txn_kb=64: written" '[ $rc = 0 ] && [ "$(cat "$F/sys/fs/aheadfs/0:58/txn_kb")" = 64 ]'
# ---- results: verify with a driver's hint of several CPUs; an all-ones hint ----
persist_fixture
printf '0000000c\n' >"$F/proc/irq/41/affinity_hint"	# CPUs 2-3, the NIC's node
printf '[nic eth0]\npolicy = local\nirqbalance-ban = no\n' | conf
run apply
run verify
t "verify after apply: a hint of CPUs 2-3 followed is no drift" '[ $rc = 0 ] && [ "$(aff 41)" = 2-3 ] && has "ok [nic eth0] IRQ affinity" && ! has DRIFT'
echo 0 >"$F/proc/irq/41/smp_affinity_list"
run verify
fixline=$(sed -n 's/^  fix: aheadctl //p' <<<"$out")
t "verify: the hinted IRQ moved away is drift, expected 2-3" '[ $rc = 1 ] && has "DRIFT [nic eth0] IRQ affinity: expected IRQ41:2-3, found IRQ41:0"'
eval "\"\$A\" $fixline" >/dev/null 2>&1
run verify
t "verify: its printed fix clears it" '[ $rc = 0 ] && [ "$(aff 41)" = 2-3 ] && ! has DRIFT'
fresh
printf 'ffffffff\n' >"$F/proc/irq/40/affinity_hint"
printf '0000000f\n' >"$F/proc/irq/41/affinity_hint"	# every online CPU
run irq show dev eth0
t "irq show: an all-ones hint and one of every online CPU are no hint" '[ $rc = 0 ] && grep -q "^ *40 .* -  *off-node$" <<<"$out" && grep -q "^ *41 .* -  *ok$" <<<"$out"'
run irq set dev eth0 policy cpus 0-3
t "irq set cpus 0-3: a hint of every CPU is not followed, each IRQ on one CPU" '[ $rc = 0 ] && [ "$(aff 40)" = 0 ] && [ "$(aff 41)" = 1 ] && ! has "affinity_hint"'
# ---- results: doctor -j keeps its report when the config or snapshot fails ----
persist_fixture
printf 'snapshot = %s/no-such-baseline.json\n' "$tmp" | conf
run -j doctor --skip-bw
t "doctor -j, configured snapshot missing: the report, with a snapshot finding" '[ $rc = 1 ] && json_ok && [ "$(jp "\"error\" in d")" = False ] && [ "$(jp "[f[\"area\"] for f in d[\"findings\"]].count(\"snapshot\")")" = 1 ] && [ "$(jp "[f[\"area\"] for f in d[\"findings\"]].count(\"irq\")")" -ge 1 ]'
printf '[nic eth0]\npolcy = local\n' | conf
run -j doctor --skip-bw
t "doctor -j, a bad config line: the report, with a config finding" '[ $rc = 1 ] && json_ok && [ "$(jp "\"error\" in d")" = False ] && [ "$(jp "[f[\"area\"] for f in d[\"findings\"]].count(\"config\")")" = 1 ] && haserr "unknown key '"'"'polcy'"'"'"'
cp "$here/../../userland/aheadctl.conf.example" "$CONF"
run doctor --skip-bw
t "doctor with the example config as shipped: no finding about a missing baseline" '! has "FINDING [snapshot]" && ! haserr "baseline.json"'
# ---- results: --timeout N is N, for Redfish and for IPMI ----
# stub NAME MODE: bmc_stub.py on 127.0.0.1, its port in $tmp/NAME.port.
stub() {
	rm -f "$tmp/$1.port"
	python3 "$here/bmc_stub.py" --ready "$tmp/$1.port" "$2" 0 >/dev/null 2>&1 &
	pids+=($!)
	for _ in $(seq 600); do [ -s "$tmp/$1.port" ] && break; sleep 0.05; done
	[ -s "$tmp/$1.port" ]
}
ms() { echo $(($(date +%s%N) / 1000000)); }
if stub deaf deaf && stub mute mute; then
	export AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret
	t0=$(ms); run bios show --bmc "http://127.0.0.1:$(cat "$tmp/deaf.port")" --insecure-http --timeout 11; el=$(($(ms) - t0))
	t "redfish: a BMC that never completes the connection: given up after --timeout 11, not 10" '[ $rc = 1 ] && haserr "did not answer within 11 s" && [ $el -ge 10700 ] && [ $el -lt 20000 ]'
	if command -v ipmitool >/dev/null; then
		t0=$(ms); run bios show --via ipmi --bmc "127.0.0.1:$(cat "$tmp/mute.port")" --timeout 2; el=$(($(ms) - t0))
		t "ipmi: a silent BMC: given up within --timeout 2, said so" '[ $rc = 1 ] && haserr "did not answer within 2 s (--timeout sets the limit)" && [ $el -lt 8000 ]'
	else
		skip "ipmi: --timeout" "no ipmitool"
	fi
	unset AHEADCTL_BMC_USER AHEADCTL_BMC_PASSWORD
else
	fail "bmc_stub.py deaf/mute did not start"
fi
# ---- results: the doctor counts the nodes of the tree it was given ----
fresh
for i in 2 3 4 5 6 7; do mkdir -p "$F/sys/devices/system/node/node$i"; echo $((i * 2))-$((i * 2 + 1)) >"$F/sys/devices/system/node/node$i/cpulist"; done
run doctor --skip-bw
t "doctor: an 8-node sysfs tree is 8 nodes (not libnuma's count of this host)" 'has "ok: numa: 8 nodes, bandwidth matrix skipped (--skip-bw)"'
run doctor
t "doctor: the bandwidth matrix is not measured on a host that is not the tree" 'has "ok: numa: 8 nodes in $F/sys, " && has "where aheadctl runs: bandwidth matrix not measured"'
# ---- results: a bandwidth matrix that cannot run is a finding, never "ok" ----
# libnuma reads the host's /sys/devices/system/node: in a mount namespace
# of its own the fixture's two nodes stand in for it, and the matrix cannot
# run there (node 1 has 400 MiB free, not what numa bw needs).
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	fresh
	for nd in 0 1; do
		printf 'Node %d MemTotal:       33554432 kB\nNode %d MemFree:        409600 kB\nNode %d MemUsed:        0 kB\n' $nd $nd $nd \
			>"$F/sys/devices/system/node/node$nd/meminfo"
	done
	out=$(unshare -m sh -c 'mount --bind "$1/sys/devices/system/node" /sys/devices/system/node && exec "$2" doctor' \
		sh "$F" "$A" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "doctor: a bandwidth matrix that cannot run is a [numa] finding, exit 1, not an ok" '[ $rc = 1 ] && has "FINDING [numa] 2 NUMA nodes, but the bandwidth matrix could not run" && ! has "ok: numa:" && haserr "numa bw needs"'
else
	skip "doctor: a bandwidth matrix that cannot run" "needs root and unshare -m"
fi
# ---- results: the doctor's window_kb fix stays within what the module takes ----
fresh
sed -i 's/^uncached_tails .*/uncached_tails 5/' "$F/sys/fs/aheadfs/0:58/stats"
echo 3000000 >"$F/sys/fs/aheadfs/0:58/window_kb"
run doctor --skip-bw
fixline=$(sed -n 's/^  fix: aheadctl \(fs set \/mnt\/ahead window_kb=.*\)$/\1/p' <<<"$out")
t "doctor: uncached tails with window_kb 3000000: the fix is the maximum, 4194304, not twice" 'has "/mnt/ahead: 5 of 100 reads" && [ "$fixline" = "fs set /mnt/ahead window_kb=4194304" ]'
"$A" $fixline >/dev/null 2>&1; rc=$?
t "doctor: that fix runs as printed" '[ $rc = 0 ] && [ "$(cat "$F/sys/fs/aheadfs/0:58/window_kb")" = 4194304 ]'
run doctor --skip-bw
t "doctor: uncached tails at the maximum window: no fix past it, said" 'has "/mnt/ahead: 5 of 100 reads" && has "fix: none from aheadctl: window_kb is at its maximum (4194304)" && ! grep -q "window_kb=[0-9]" <<<"$(grep -A1 "/mnt/ahead: 5 of 100" <<<"$out")"'
# ---- results: verify with an XPS CPU list longer than 31 characters ----
persist_fixture
echo 0-39 >"$F/sys/devices/system/cpu/online"
echo 3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,35,37,39 >"$F/sys/devices/system/node/node1/cpulist"
printf 'aa,aaaaaaa8\n' >"$F/proc/irq/40/affinity_hint"	# every CPU of node 1
printf '[nic eth0]\npolicy = local\nxps = yes\nirqbalance-ban = no\n' | conf
run apply
run verify
t "verify: a tx queue whose IRQ is on 19 CPUs (a 52-character list) is no drift after apply" '[ $rc = 0 ] && [ "$(aff 40)" = 3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,35,37,39 ] && has "ok [nic eth0] XPS" && ! has DRIFT'
