# 60-bios-ipmi-vendor.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
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
