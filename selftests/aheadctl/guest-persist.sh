# guest-persist.sh: apply/verify, the boot unit and the udev rule in the
# two-node guest.  Sourced at the end of guest-irq.sh, whose t, run, has,
# cpulist_in and A it uses and whose TAP numbering (n, failed) it carries on.
#
# The guest's / is the host's, read-only, and nothing runs udevd there:
# the config and the rule go to tmpfs (/run; udevd reads /run/udev/rules.d),
# and systemd-udevd is started here and stopped at the end.
echo "# ---- persistence: apply, verify, aheadctl.service, 90-aheadctl.rules"
pd=$(mktemp -d /run/aheadctl-persist.XXXXXX)
petc=$pd/etc
pconf=$petc/aheadctl/aheadctl.conf
mkdir -p "$petc/aheadctl" /run/udev/rules.d
export AHEADCTL_ETC_ROOT=$petc
# apply records what it replaces under VAR/lib/aheadctl: / is read-only here.
export AHEADCTL_VAR_ROOT=$pd/var

# The shipped unit, its ExecStart pointed at this build.
sed "s|/usr/sbin/aheadctl|$A|" "$top/userland/systemd/aheadctl.service" >"$pd/aheadctl.service"
out=$(systemd-analyze verify "$pd/aheadctl.service" 2>&1); rc=$? err=$out
t "systemd-analyze verify aheadctl.service: clean" '[ $rc = 0 ] && [ -z "$out" ]'

pnic=""
for d in /sys/class/net/*; do
	[ -e "$d/device" ] || continue
	[ "$(cat "$(pci_of net "$(basename "$d")")/numa_node" 2>/dev/null)" = 1 ] && pnic=$(basename "$d")
done
pirqs() { ls "$(pci_of net "$pnic")/msi_irqs"; }
# Every IRQ of the NIC on node 0, where the placement is not.
pdisturb() { local i; for i in $(pirqs); do echo 0 >/proc/irq/$i/smp_affinity_list 2>/dev/null; done; }
# The NIC's IRQ affinities, for the TAP comments.
paff() { local i; for i in $(pirqs); do printf '%s:%s ' "$i" "$(cat /proc/irq/$i/smp_affinity_list)"; done; }
t "persistence: the node-1 NIC is there" '[ -n "$pnic" ]'

if [ -n "$pnic" ]; then
	printf '# the node-1 NIC\n[nic %s]\npolicy = local\nxps = yes\n' "$pnic" >"$pconf"
	run apply -c "$pconf"
	t "apply: the node-1 NIC placed from the config" '[ $rc = 0 ] && has "1 done, 0 skipped, 0 failed"'
	run verify -c "$pconf"
	t "verify after apply: nothing drifted" '[ $rc = 0 ] && has "0 drifted"'
	pdisturb
	run verify -c "$pconf"
	t "verify after moving the IRQs to node 0: drift, exit 1" '[ $rc = 1 ] && has "DRIFT [nic $pnic] IRQ affinity"'

	# The shipped rule, pointed at this build and this config; the config's
	# root reaches aheadctl as a device property (udev passes them to RUN).
	sed -e "s|/usr/sbin/aheadctl|$A|g" -e "s|/etc/aheadctl/aheadctl.conf|$pconf|g" \
		"$top/userland/udev/90-aheadctl.rules" >/run/udev/rules.d/90-aheadctl.rules
	echo "SUBSYSTEM==\"net|queues\", ENV{AHEADCTL_ETC_ROOT}=\"$petc\", ENV{AHEADCTL_VAR_ROOT}=\"$pd/var\"" \
		>/run/udev/rules.d/89-aheadctl-test.rules
	# Keep the NIC's name: no predictable-name renames in this test.
	ln -sf /dev/null /run/udev/rules.d/80-net-setup-link.rules
	pdevpath=$(cd "/sys/class/net/$pnic" && pwd -P); pdevpath=${pdevpath#/sys}
	out=$(udevadm test --action=add "/sys/class/net/$pnic" 2>&1); rc=$? err=""
	t "udevadm test: a NIC that appears runs apply --dev for it" '[ $rc = 0 ] && grep -qF "run: '"'"'$A apply --dev $pnic'"'"'" <<<"$out"'
	# udevadm test cannot open a queue (no uevent file in its sysfs
	# directory); the queue rule is tested by the real events below.
	out=$(udevadm test --action=add /sys/class/block/vda 2>&1); rc=$?
	t "udevadm test: a block device does not run apply" '[ $rc = 0 ] && ! grep -qF "run: '"'"'$A" <<<"$out"'

	/lib/systemd/systemd-udevd --debug >"$pd/udevd.log" 2>&1 &
	udevd_pid=$!
	for _ in $(seq 100); do udevadm control --ping --timeout=1 2>/dev/null && break; sleep 0.1; done
	out="" err=""
	t "systemd-udevd started" 'udevadm control --ping --timeout=5'
	udevadm monitor --kernel --subsystem-match=net --subsystem-match=queues >"$pd/monitor.log" 2>&1 &
	mon_pid=$!
	# The monitor is listening once it printed its header.
	for _ in $(seq 100); do grep -q "^KERNEL" "$pd/monitor.log" && break; grep -q "monitor will print" "$pd/monitor.log" && break; sleep 0.1; done

	# A channel count change, as after a driver update or an admin's ethtool -L.
	pq=$(ls -d /sys/class/net/$pnic/queues/tx-* | wc -l)
	pdisturb
	ethtool -L "$pnic" combined 2
	udevadm settle --timeout=180
	ethtool -L "$pnic" combined "$pq"
	udevadm settle --timeout=180
	echo "# kernel events seen: $(awk '/^KERNEL/ { print $2, $NF }' "$pd/monitor.log" | sort | uniq -c | tr -s ' \n' ' ')"
	out=$(cat "$pd/monitor.log") err=""
	t "ethtool -L: the kernel sends queue add and remove events (SUBSYSTEM queues)" 'grep -q "^KERNEL.* remove .*/queues/tx-[0-9]* (queues)" <<<"$out" && grep -q "^KERNEL.* add .*/queues/tx-[0-9]* (queues)" <<<"$out"'
	run verify -c "$pconf"
	echo "# after ethtool -L combined 2 and $pq: $(paff)"
	t "after ethtool -L under udevd: the placement and XPS are back (verify clean)" '[ $rc = 0 ]'

	# A NIC that appears: the kernel's own "add" event for it, asked for
	# through its uevent file.  (Unbinding and binding the virtio-net
	# device again wedged this TCG guest in bind, with or without udevd:
	# not usable here.)
	pdisturb
	udevadm trigger --action=add --settle "/sys/class/net/$pnic"
	udevadm settle --timeout=180
	run verify -c "$pconf"
	echo "# after an add event for $pnic: $(paff)"
	t "after an add event for the NIC under udevd: placed again (verify clean)" '[ $rc = 0 ]'
	if [ "$failed" != 0 ]; then
		echo "# udevd's log, aheadctl lines:"
		grep -a "aheadctl" "$pd/udevd.log" | tail -n 30 | sed 's/^/#   /'
	fi

	udevadm control --exit
	for _ in $(seq 100); do kill -0 "$udevd_pid" 2>/dev/null || break; sleep 0.1; done
	kill "$mon_pid" 2>/dev/null
	wait "$mon_pid" "$udevd_pid" 2>/dev/null
	rm -f /run/udev/rules.d/90-aheadctl.rules /run/udev/rules.d/89-aheadctl-test.rules \
		/run/udev/rules.d/80-net-setup-link.rules
	out="" err="" rc=0
	t "systemd-udevd stopped" '! kill -0 "$udevd_pid" 2>/dev/null'
fi
unset AHEADCTL_ETC_ROOT AHEADCTL_VAR_ROOT
