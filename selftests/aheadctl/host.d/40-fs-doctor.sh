# 40-fs-doctor.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
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
# A node running containers: a ~2 MB mountinfo, the aheadfs mounts among
# thousands of overlay mounts (procfs reports st_size 0: read it all).
fresh; python3 "$here/mkbig.py" mountinfo "$F/proc/self/mountinfo"
run fs show
t "fs show: a $(($(wc -c <"$F/proc/self/mountinfo") / 1024)) KiB mountinfo read whole, both aheadfs mounts among the overlays" '[ $rc = 0 ] && has "/mnt/ahead  dev 0:58  lower /srv/a" && has "/mnt/slow one  dev 0:59" && ! has overlay'
run fs set /mnt/slow\ one window_kb=32768
t "fs set: a mount found in a big mountinfo" '[ $rc = 0 ] && [ "$(cat "$F/sys/fs/aheadfs/0:59/window_kb")" = 32768 ]'
run doctor --skip-bw
t "doctor: the aheadfs checks run on a big mountinfo" 'has "/mnt/slow one: 7 of 100 reads" && ! has "cannot read"'
truncate -s 65M "$F/proc/self/mountinfo"
run fs show
t "fs show: a mountinfo of 64 MiB or more refused with one clear message" '[ $rc = 1 ] && one_line_err && haserr "self/mountinfo: File too large (aheadctl reads files up to 64 MiB)"'
run doctor --skip-bw
t "doctor: an unreadable mountinfo is a finding, not a silent skip" '[ $rc = 1 ] && has "FINDING [fs] cannot read $F/proc/self/mountinfo: File too large" && has "no aheadfs mount was checked"'
rm "$F/proc/self/mountinfo"
run -j doctor --skip-bw
t "doctor -j: a missing mountinfo is a finding too" '[ $rc = 1 ] && json_ok && [ "$(jp "[f[\"area\"] for f in d[\"findings\"] if \"mountinfo\" in f[\"finding\"]]")" = "['"'"'fs'"'"']" ]'
fresh; rm "$F/sys/fs/aheadfs/0:58/window_kb"
run doctor --skip-bw
t "doctor: an unreadable tunable is said, not skipped" 'has "FINDING [fs] /mnt/ahead: $F/sys/fs/aheadfs/0:58/window_kb unreadable"'
fresh; rm "$F/proc/interrupts"
run doctor --skip-bw
t "doctor: an unreadable /proc/interrupts is a finding" '[ $rc = 1 ] && has "FINDING [irq] cannot read $F/proc/interrupts" && [ "$(grep -c "cannot read $F/proc/interrupts" <<<"$out")" = 1 ]'
fresh; rm "$F/sys/devices/system/node/node1/cpulist"
run doctor --skip-bw
t "doctor: a NIC that cannot be loaded is said, lo (virtual) is not" '[ $rc = 1 ] && has "FINDING [irq] eth0: not checked: node 1: no " && ! has "lo: not checked"'

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
t "fs set: a refused write undoes the earlier writes" '[ $rc = 1 ] && haserr "the module refused the value" && haserr "restored /mnt/ahead txn_kb to 8192" && [ "$(cat "$F/sys/fs/aheadfs/0:58/txn_kb")" = 8192 ]'
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

