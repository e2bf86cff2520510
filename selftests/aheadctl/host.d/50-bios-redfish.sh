# 50-bios-redfish.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
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

