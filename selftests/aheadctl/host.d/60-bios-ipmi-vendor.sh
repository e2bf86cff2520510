# 60-bios-ipmi-vendor.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
# ---- bios: IPMI against ipmi_sim ----
if command -v ipmi_sim >/dev/null && command -v ipmitool >/dev/null; then
	port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	mkdir -p "$tmp/ipmi/state"
	# ipmi_sim's chassis control: power kept in a file.  A soft shutdown
	# ("shutdown 1") powers off, as an OS does once it has stopped, unless
	# os-hangs exists (an OS that ignores the ACPI request).
	cat >"$tmp/ipmi/chassis" <<CH
#!/bin/sh
echo "\$*" >>"$tmp/ipmi/chassis.log"
dev=\$1; op=\$2; shift 2
case \$op in
get) for p in "\$@"; do [ "\$p" = power ] && echo "power:\$(cat "$tmp/ipmi/power" 2>/dev/null || echo 1)"; done ;;
set) while [ \$# -ge 2 ]; do
	[ "\$1" = power ] && echo "\$2" >"$tmp/ipmi/power"
	[ "\$1" = shutdown ] && [ ! -e "$tmp/ipmi/os-hangs" ] && echo 0 >"$tmp/ipmi/power"
	shift 2; done ;;
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
	for _ in $(seq 600); do ss -Huln "sport = :$port" | grep -q . && break; sleep 0.05; done
	# ipmi_sim 2.0.33 has no cipher suite 17 (ipmitool's default): use 3.
	export AHEADCTL_IPMI_CIPHER=3
	IP="127.0.0.1:$port"
	clog() { tail -n +$(($1 + 1)) "$tmp/ipmi/chassis.log" 2>/dev/null; }
	cmark() { cat "$tmp/ipmi/chassis.log" 2>/dev/null | wc -l; }
	ipmi() { AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret run "$@"; }
	# The password reaches real ipmitool through the pipe (-f /dev/fd/N).
	ipmi bios show --via ipmi --bmc "$IP"
	t "ipmi: board identified through ipmi_sim" '[ $rc = 0 ] && has "board: Dell Inc. (IANA 674), product 291 (0x0123)" && has "not readable over IPMI"'
	ipmi -j bios show --via ipmi --bmc "$IP"
	t "ipmi -j: valid JSON" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"manufacturer_id\"]")" = 674 ] && [ "$(jp "d[\"power\"]")" = on ]'
	m=$(cmark); ipmi -n bios power-cycle --via ipmi --bmc "$IP"
	t "ipmi -n power-cycle: graceful steps shown, no password in them, nothing sent" '[ $rc = 0 ] && has "would run: ipmitool -I lanplus -H 127.0.0.1 -p $port -C 3 -U admin -f <pipe> -N 3 -R 2 chassis power soft" && has "chassis power on" && ! has "power cycle" && ! has s3cret && ! clog $m | grep -q "^0x20 set"'
	m=$(cmark); ipmi --yes bios power-cycle --via ipmi --bmc "$IP"
	t "ipmi power-cycle: soft shutdown, off, then power on" '[ $rc = 0 ] && [ "$(clog $m | grep "^0x20 set" | tr "\n" "|")" = "0x20 set shutdown 1|0x20 set power 1|" ] && has "graceful restart through IPMI: chassis power soft, wait for off, chassis power on"'
	m=$(cmark); ipmi -j --yes bios power-cycle --via ipmi --bmc "$IP"
	t "ipmi -j power-cycle: one JSON document with the reset" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"reset\"][\"via\"], d[\"reset\"][\"graceful\"], d[\"reset\"][\"requested\"]")" = "ipmi True True" ] && clog $m | grep -q "set shutdown 1"'
	touch "$tmp/ipmi/os-hangs"; m=$(cmark); start=$SECONDS
	ipmi --yes bios power-cycle --via ipmi --bmc "$IP" --wait 2
	# Power on after the soft request, always: a no-op while the system is on,
	# and what brings it back if the OS stops later.
	t "ipmi: an OS that does not shut down: clear error after --wait, power on sent, never cut" '[ $rc = 1 ] && haserr "still on 2 s after the soft (ACPI) shutdown request" && haserr "may yet end up off" && haserr "--force" && [ "$(clog $m | grep "^0x20 set" | tr "\n" "|")" = "0x20 set shutdown 1|0x20 set power 1|" ] && [ $((SECONDS - start)) -lt 30 ]'
	rm -f "$tmp/ipmi/os-hangs"; m=$(cmark)
	ipmi --yes bios power-cycle --via ipmi --bmc "$IP" --force
	t "ipmi power-cycle --force: a hard power cycle, said so" '[ $rc = 0 ] && clog $m | grep -q "^0x20 set power 0" && ! clog $m | grep -q shutdown && has "hard (--force) restart through IPMI: chassis power cycle"'
	# ipmi_sim powers back on a moment after a cycle: wait for it before
	# switching the system off for the next test.  The chassis script logs a
	# call before it acts, so the power file must say on too: an "echo 0"
	# between the log line and the script's own write was undone by it.
	for _ in $(seq 600); do
		clog $m | grep -q "^0x20 set power 1" && [ "$(cat "$tmp/ipmi/power" 2>/dev/null)" = 1 ] && break
		sleep 0.05
	done
	echo 0 >"$tmp/ipmi/power"; m=$(cmark)
	ipmi --yes bios power-cycle --via ipmi --bmc "$IP"
	t "ipmi power-cycle of a system that is off: power on only" '[ $rc = 0 ] && [ "$(clog $m | grep "^0x20 set" | tr "\n" "|")" = "0x20 set power 1|" ] && has "power on (the system was off)"'
	AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=wrong run bios show --via ipmi --bmc "$IP"
	t "ipmi: wrong password fails with one message" '[ $rc = 1 ] && haserr "aheadctl: ipmitool mc info failed"'
	ipmi --yes bios set snoop-mode home --via ipmi --bmc "$IP"
	t "ipmi: bios set refused (no standard command)" '[ $rc = 1 ] && haserr "IPMI has no standard command"'
	ipmi bios power-cycle --via ipmi --bmc "$IP"
	t "ipmi: power-cycle without --yes refused" '[ $rc = 2 ] && haserr "add --yes"'
	run bios power-cycle --via racadm
	t "bios power-cycle via a vendor tool refused" '[ $rc = 2 ]'
	# A BMC that never answers: a UDP port bound by a process that never reads.
	python3 -c 'import os, signal, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
open(sys.argv[1] + ".tmp", "w").write("%d\n" % s.getsockname()[1])
os.rename(sys.argv[1] + ".tmp", sys.argv[1]); signal.pause()' "$tmp/ipmi/mute.port" &
	pids+=($!)
	for _ in $(seq 600); do [ -s "$tmp/ipmi/mute.port" ] && break; sleep 0.05; done
	start=$SECONDS
	ipmi bios show --via ipmi --bmc "127.0.0.1:$(cat "$tmp/ipmi/mute.port")"
	t "ipmi: a BMC that never answers: one clear error within ipmitool's retries" '[ $rc = 1 ] && haserr "aheadctl: ipmitool mc info failed (exit 1) talking to 127.0.0.1" && [ $((SECONDS - start)) -lt 60 ]'
else
	fail "ipmi: ipmi_sim or ipmitool missing (Debian openipmi, ipmitool)"
fi

# ---- bios: IPMI addresses, through -n ----
ipmin() { AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret AHEADCTL_IPMI_CIPHER= run -n bios power-cycle --via ipmi --bmc "$@"; }
ipmin '[fe80::1]:623'
t "ipmi: [IPv6]:port is -H without brackets and -p" '[ $rc = 0 ] && has "-H fe80::1 -p 623 -U admin"'
ipmin '[fe80::1]'
t "ipmi: [IPv6] without a port" '[ $rc = 0 ] && has "-H fe80::1 -U admin"'
ipmin 'fe80::1'
t "ipmi: a bare IPv6 address is one host" '[ $rc = 0 ] && has "-H fe80::1 -U admin"'
ipmin 'bmc.example:6230'
t "ipmi: name:port" '[ $rc = 0 ] && has "-H bmc.example -p 6230 -U admin"'
ipmin 'ipmi://127.0.0.2:623/'
t "ipmi: scheme and path dropped" '[ $rc = 0 ] && has "-H 127.0.0.2 -p 623 -U admin"'
for bad in '[fe80::1' '[fe80::1]x' 'bmc:0' 'bmc:x' 'bmc:' '[]:623'; do
	ipmin "$bad"
	t "ipmi: bad address '$bad' refused" '[ $rc = 2 ] && haserr "aheadctl: --bmc" && [ -z "$out" ]'
done
AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=123456789012345678901 run -n bios power-cycle --via ipmi --bmc 127.0.0.2
t "ipmi: a password over 20 bytes refused, not echoed" '[ $rc = 2 ] && haserr "at most 20 bytes; this one has 21" && ! grep -q 1234567 <<<"$err"'

# ---- bios: no secret reaches a child: fake tools dump what they get ----
fk=$tmp/fake; mkdir -p "$fk/bin"
cat >"$fk/bin/ipmitool" <<'FAKE'
#!/bin/sh
# Records argv, env and the -f file; plays a chassis that powers off on soft.
d=$(dirname "$0")/..
printf '%s\n' "$*" >>"$d/ipmitool.argv"
env >>"$d/ipmitool.env"
while [ $# -gt 0 ]; do [ "$1" = -f ] && { cat "$2" >"$d/ipmitool.pwfile"; }; shift; done
st=$(cat "$d/power" 2>/dev/null || echo on)
last=$(sed -n '$p' "$d/ipmitool.argv")
# status-fails N (or "all"): that many status polls after the soft request fail.
fails=$(cat "$d/status-fails" 2>/dev/null || echo 0)
case "$last" in
*"power status")
	if [ -e "$d/soft-sent" ] && [ "$fails" != 0 ]; then
		[ "$fails" = all ] || echo $((fails - 1)) >"$d/status-fails"
		echo "Error: Unable to establish IPMI v2 / RMCP+ session" >&2; exit 1
	fi
	echo "Chassis Power is $st" ;;
*"power soft") touch "$d/soft-sent"; echo off >"$d/power"; echo "Chassis Power Control: Soft" ;;
*"power on") echo on >"$d/power"; echo "Chassis Power Control: Up/On" ;;
*"power cycle") echo "Chassis Power Control: Cycle" ;;
esac
FAKE
cat >"$fk/bin/racadm" <<'FAKE'
#!/bin/sh
# Records argv and env under its own name (racadm, syscfg, onecli, systemctl).
d=$(dirname "$0")/..; n=$(basename "$0")
printf '%s\n' "$*" >>"$d/$n.argv"
env >>"$d/$n.env"
[ "$1" = get ] && echo "SnoopMode=EarlySnoop"
exit 0
FAKE
cp "$fk/bin/racadm" "$fk/bin/syscfg"; cp "$fk/bin/racadm" "$fk/bin/onecli"
# The in-band restart: a fake systemctl, so that no test reboots the host.
cp "$fk/bin/racadm" "$fk/bin/systemctl"
chmod +x "$fk/bin/"*
fake() { rm -f "$fk"/*.argv "$fk"/*.env "$fk"/*.pwfile "$fk/power" "$fk/soft-sent"; out=$(env PATH="$fk/bin:$PATH" CANARY=1 "$@" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err"); }
fake env AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret IPMI_PASSWORD=s3cret "$A" --yes bios power-cycle --via ipmi --bmc 127.0.0.2:623
t "ipmitool gets the password through its -f pipe, exactly" '[ $rc = 0 ] && [ "$(cat "$fk/ipmitool.pwfile")" = s3cret ] && grep -q -- "-f /dev/fd/[0-9]" "$fk/ipmitool.argv"'
t "ipmitool's environment and argv hold no secret" '[ -s "$fk/ipmitool.env" ] && ! grep -q s3cret "$fk/ipmitool.env" "$fk/ipmitool.argv" && ! grep -q "^IPMI_PASSWORD=\|^AHEADCTL_BMC_PASSWORD=" "$fk/ipmitool.env" && grep -q "^CANARY=1$" "$fk/ipmitool.env"'
t "ipmitool (fake): soft, status polled, on" '[ "$(grep -o "chassis power [a-z]*" "$fk/ipmitool.argv" | tr "\n" "|")" = "chassis power status|chassis power soft|chassis power status|chassis power on|" ]'
# A status poll that fails while the system shuts down (a lost answer, a
# BMC busy): polled again, and the system powered on.
echo 2 >"$fk/status-fails"
fake env AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret "$A" --yes bios power-cycle --via ipmi --bmc 127.0.0.2:623
t "ipmi: failed status polls after the soft request are polled again, then power on" '[ $rc = 0 ] && [ "$(grep -o "chassis power [a-z]*" "$fk/ipmitool.argv" | tr "\n" "|")" = "chassis power status|chassis power soft|chassis power status|chassis power status|chassis power status|chassis power on|" ] && has "graceful restart through IPMI"'
echo all >"$fk/status-fails"; start=$SECONDS
fake env AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret "$A" --yes bios power-cycle --via ipmi --bmc 127.0.0.2:623 --wait 2
t "ipmi: no status answer at all until --wait: power on sent anyway, the node said maybe off, exit 1" '[ $rc = 1 ] && [ "$(grep -o "chassis power [a-z]*" "$fk/ipmitool.argv" | sed -n "\$p")" = "chassis power on" ] && haserr "the power state could not be read for 2 s after the soft (ACPI) shutdown request" && haserr "the node may be off" && haserr "power on'"'"' was sent" && [ $((SECONDS - start)) -lt 20 ]'
rm -f "$fk/status-fails"
fake env AHEADCTL_BMC_USER=admin 'AHEADCTL_BMC_PASSWORD=pass word ' "$A" --yes bios power-cycle --via ipmi --bmc 127.0.0.2 --force
t "a password with blanks (which -f would cut) goes in IPMI_PASSWORD of ipmitool only" '[ $rc = 0 ] && grep -q -- "-U admin -E " "$fk/ipmitool.argv" && grep -qx "IPMI_PASSWORD=pass word " "$fk/ipmitool.env" && ! grep -q "^AHEADCTL_BMC_PASSWORD=" "$fk/ipmitool.env" && ! grep -q "pass word" "$fk/ipmitool.argv"'
fake env AHEADCTL_BMC_PASSWORD=s3cret IPMI_PASSWORD=s3cret "$A" --yes bios set snoop-mode home --via racadm
t "a vendor tool's environment holds no secret" '[ $rc = 0 ] && [ -s "$fk/racadm.env" ] && ! grep -q s3cret "$fk/racadm.env" && grep -q "^CANARY=1$" "$fk/racadm.env"'
t "racadm: get, set, then the BIOS job without a reboot" '[ "$(tr "\n" "|" <"$fk/racadm.argv")" = "get BIOS.MemSettings.SnoopMode|set BIOS.MemSettings.SnoopMode HomeSnoop|jobqueue create BIOS.Setup.1-1|" ] && has "pending"'
fake "$A" -j bios show --via racadm
t "racadm -j show: one JSON document with the tool's output" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"via\"], d[\"commands\"][0][\"command\"], d[\"commands\"][0][\"exit\"], d[\"commands\"][0][\"output\"].strip()")" = "racadm racadm get BIOS.MemSettings.SnoopMode 0 SnoopMode=EarlySnoop" ]'
fake "$A" -j --yes bios set snoop-mode home --via racadm --reboot
t "racadm -j set --reboot: one JSON document, graceful job" '[ $rc = 0 ] && json_ok && [ "$(jp "len(d[\"commands\"]), d[\"commands\"][2][\"command\"], d[\"reset\"][\"graceful\"], d[\"reset\"][\"requested\"], d[\"pending\"]")" = "3 racadm jobqueue create BIOS.Setup.1-1 -r graceful -s TIME_NOW True True False" ]'
fake "$A" -j -n bios set snoop-mode home --via racadm --reboot --force
t "racadm -j -n set --reboot --force: what would run, nothing run" '[ $rc = 0 ] && json_ok && [ ! -e "$fk/racadm.argv" ] && [ "$(jp "d[\"dry_run\"], d[\"commands\"][2][\"command\"], d[\"commands\"][2][\"run\"], d[\"reset\"][\"graceful\"]")" = "True racadm jobqueue create BIOS.Setup.1-1 -r pwrcycle -s TIME_NOW False False" ]'
# A vendor tool runs on the node itself: its graceful restart is the node's
# own warm reboot (IPMI's soft off would stop aheadctl before its power on).
fake env AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret "$A" -j --yes bios set snoop-mode home --via syscfg --reboot --bmc 127.0.0.2
t "syscfg -j set --reboot: the in-band graceful restart (systemctl reboot) in the one JSON document" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"via\"], d[\"reset\"][\"via\"], d[\"reset\"][\"type\"], d[\"reset\"][\"graceful\"], d[\"reset\"][\"requested\"], d[\"pending\"], d[\"commands\"][2][\"command\"]")" = "syscfg systemd systemctl reboot True True False systemctl reboot" ] && [ "$(cat "$fk/systemctl.argv")" = reboot ] && [ ! -e "$fk/ipmitool.argv" ] && haserr "warning: --bmc is not used" && grep -q "^CANARY=1$" "$fk/syscfg.env" && ! grep -q s3cret "$fk/syscfg.env" "$fk/systemctl.env"'
fake env AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=s3cret "$A" --yes bios set snoop-mode home --via syscfg --reboot --force --bmc 127.0.0.2
t "syscfg set --reboot --force: the IPMI power cycle (one command to the BMC), no systemctl" '[ $rc = 0 ] && grep -q "chassis power cycle$" "$fk/ipmitool.argv" && ! grep -q "power soft" "$fk/ipmitool.argv" && [ ! -e "$fk/systemctl.argv" ] && ! grep -q s3cret "$fk/ipmitool.env"'
fake "$A" --yes bios set snoop-mode home --via onecli --reboot
t "onecli set --reboot without a BMC: systemctl reboot, said" '[ $rc = 0 ] && [ "$(cat "$fk/systemctl.argv")" = reboot ] && has "graceful restart in-band: systemctl reboot"'
printf '#!/bin/sh\necho "Failed to start reboot.target" >&2\nexit 1\n' >"$tmp/bin-sysctl"
mkdir -p "$tmp/nobootbin"; cp "$fk/bin/racadm" "$tmp/nobootbin/onecli"; cp "$tmp/bin-sysctl" "$tmp/nobootbin/systemctl"; chmod +x "$tmp/nobootbin/"*
out=$(PATH="$tmp/nobootbin:$PATH" "$A" --yes bios set snoop-mode home --via onecli --reboot 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
t "onecli set --reboot: a failed systemctl reboot is exit 1, the change said pending" '[ $rc = 1 ] && haserr "'"'"'systemctl reboot'"'"' failed (exit 1)" && haserr "snoop-mode home stays pending until the next reboot"'
mkdir -p "$tmp/nosysctl"; cp "$fk/bin/onecli" "$tmp/nosysctl/onecli"; rm -f "$tmp/onecli.argv"
out=$(PATH="$tmp/nosysctl" "$A" --yes bios set snoop-mode home --via onecli --reboot 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
t "onecli set --reboot without systemctl: refused before anything is set" '[ $rc = 1 ] && haserr "there is no systemctl here" && [ ! -e "$tmp/onecli.argv" ]'
# ---- bios: vendor tools are bounded: --timeout (default 300 s) and 4 MiB of output ----
mkdir -p "$tmp/slowbin"
cat >"$tmp/slowbin/racadm" <<SLOW
#!/bin/sh
# A tool that hangs, and a process of its own that would outlive it.
sleep 300 &
echo \$! >"$tmp/slow.child"
echo \$\$ >"$tmp/slow.tool"
exec sleep 300
SLOW
chmod +x "$tmp/slowbin/racadm"; rm -f "$tmp/slow.child" "$tmp/slow.tool"; start=$SECONDS
# Alive: there and not a zombie (an orphan waits for whoever reaps here).
alive() { [ -n "$1" ] && [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z ' "/proc/$1/stat" 2>/dev/null; }
out=$(PATH="$tmp/slowbin:$PATH" timeout 40 "$A" bios show --via racadm --timeout 2 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
sleep 0.2
t "vendor tool that hangs: stopped after --timeout with what it started, one clear message, exit 1" '[ $rc = 1 ] && haserr "aheadctl: '"'"'racadm get BIOS.MemSettings.SnoopMode'"'"' did not finish within 2 s (--timeout sets the limit): stopped it" && [ $((SECONDS - start)) -lt 15 ] && [ -s "$tmp/slow.child" ] && ! alive "$(cat "$tmp/slow.child")" && ! alive "$(cat "$tmp/slow.tool")"'
for f in "$tmp/slow.child" "$tmp/slow.tool"; do [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
cat >"$tmp/slowbin/racadm" <<'BIG'
#!/bin/sh
head -c 10485760 /dev/zero | tr '\0' x
BIG
out=$(PATH="$tmp/slowbin:$PATH" timeout 40 "$A" bios show --via racadm 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
t "vendor tool with 10 MiB of output: stopped at 4 MiB, refused, nothing echoed" '[ $rc = 1 ] && haserr "wrote more than 4 MiB: stopped it" && [ ${#out} -lt 1000 ]'

# ---- bios: vendor tools through their dry-run command lines ----
run -n bios set snoop-mode home --via racadm --reboot
t "racadm -n --reboot: get, set, job with a graceful reboot" '[ $rc = 0 ] && [ "$out" = "would run: racadm get BIOS.MemSettings.SnoopMode
would run: racadm set BIOS.MemSettings.SnoopMode HomeSnoop
would run: racadm jobqueue create BIOS.Setup.1-1 -r graceful -s TIME_NOW
would request a graceful restart through racadm" ]'
run -n bios set snoop-mode home --via racadm --reboot --force
t "racadm -n --reboot --force: job with a power cycle" '[ $rc = 0 ] && has "would run: racadm jobqueue create BIOS.Setup.1-1 -r pwrcycle -s TIME_NOW" && has "hard (--force)"'
run -n bios set snoop-mode cod --via racadm
t "racadm -n without --reboot: job queued, pending" '[ $rc = 0 ] && has "racadm set BIOS.MemSettings.SnoopMode ClusterOnDie" && has "would run: racadm jobqueue create BIOS.Setup.1-1" && ! has " -r " && has "pending"'
run -n bios set snoop-mode early --via ilorest --reboot --force
t "ilorest -n --reboot --force: early is Standard, commit, ForceRestart" '[ $rc = 0 ] && has "would run: ilorest set QpiSnoopConfig=Standard --selector Bios. --commit" && has "would run: ilorest reboot ForceRestart"'
run -n bios set snoop-mode early --via ilorest --reboot
t "ilorest --reboot without --force: the in-band graceful restart, no BMC needed (its own reboot is hard)" '[ $rc = 0 ] && has "would run: systemctl reboot" && ! has "ilorest reboot" && ! has ipmitool'
AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=x run -n bios set snoop-mode early --via ilorest --reboot --bmc 127.0.0.2
t "ilorest --reboot with a BMC: still in-band, the unused --bmc said" '[ $rc = 0 ] && has "would run: systemctl reboot" && ! has "chassis power" && haserr "--bmc is not used: ilorest reboot only does hard resets"'
run -n bios set snoop-mode osb --via ilorest
t "ilorest: no OSB, refused" '[ $rc = 1 ] && haserr "no '"'"'osb'"'"' snoop mode"'
run -n bios set snoop-mode home --via onecli
t "onecli -n" '[ $rc = 0 ] && has "would run: onecli config set Processors.SnoopMode \"Home Snoop\""'
run -n bios set snoop-mode home --via syscfg
t "syscfg -n" '[ $rc = 0 ] && has "would run: syscfg /bcs \"\" \"Snoop Mode\" \"Home Snoop\""'
run -n bios set snoop-mode home --via onecli --reboot
t "onecli --reboot: the in-band graceful restart shown, no BMC needed" '[ $rc = 0 ] && has "would run: systemctl reboot" && has "would do a graceful restart in-band"'
run -n bios set snoop-mode home --via onecli --reboot --force
t "onecli --reboot --force without a BMC for the IPMI power cycle refused" '[ $rc = 2 ] && haserr "needs --bmc" && haserr "power cycle" && [ -z "$out" ]'
AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=x run -n bios set snoop-mode home --via syscfg --reboot --bmc 127.0.0.2:9
t "syscfg --reboot: systemctl reboot shown, no IPMI soft off and power on from the node itself" '[ $rc = 0 ] && has "would run: systemctl reboot" && ! has "chassis power soft" && ! has "chassis power on" && ! has "would run: ipmitool"'
AHEADCTL_BMC_USER=admin AHEADCTL_BMC_PASSWORD=x run -n bios set snoop-mode home --via syscfg --reboot --force --bmc 127.0.0.2:9
t "syscfg --reboot --force: the IPMI power cycle shown" '[ $rc = 0 ] && has "chassis power cycle" && ! has "power soft"'
run -n bios set snoop-mode home --via sum
t "sum: set refused with the manual steps" '[ $rc = 1 ] && haserr "sum -c ChangeBiosCfg"'
run -n bios show --via sum
t "sum -n show" '[ $rc = 0 ] && has "would run: sum -c GetCurrentBiosCfg"'
run -j -n bios show --via sum
t "sum -j -n show: one JSON document" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"dry_run\"], d[\"commands\"][0][\"run\"]")" = "True False" ]'
out=$(PATH=/nonexistent "$A" bios show --via racadm 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
t "racadm not installed: one message" '[ $rc = 1 ] && [ "$err" = "aheadctl: racadm is not installed (not in PATH)" ]'
out=$(PATH=/nonexistent "$A" --yes bios set snoop-mode home --via racadm 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
t "racadm set not installed: one message" '[ $rc = 1 ] && haserr "not installed"'
# A tool that cannot read the attribute: nothing is set.
mkdir -p "$tmp/bin"; printf '#!/bin/sh\necho "$*" >>%s/racadm.log\n[ "$1" = get ] && { echo "ERROR: attribute not found" >&2; exit 3; }\nexit 0\n' "$tmp" >"$tmp/bin/racadm"; chmod +x "$tmp/bin/racadm"
out=$(PATH=$tmp/bin:$PATH "$A" --yes bios set snoop-mode home --via racadm 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
t "vendor tool without the attribute: refused before any set" '[ $rc = 1 ] && haserr "refusing to set it" && ! grep -q "^set" "$tmp/racadm.log"'
