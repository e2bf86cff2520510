# 50-bios-redfish.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
# ---- bios: Redfish against redfish_emu.py ----
# The emulator serves plain HTTP on 127.0.0.1, so these tests pass
# --insecure-http ($R); the TLS tests at the end pass --insecure or a CA.
emu() {	# emu NAME VENDOR [ARGS...]: starts the emulator; its port in $tmp/NAME.port
	local name=$1 vendor=$2; shift 2
	python3 "$here/redfish_emu.py" --vendor "$vendor" --ready "$tmp/$name.port" \
		--log "$tmp/$name.log" "$@" >/dev/null 2>&1 &
	pids+=($!)
	for _ in $(seq 600); do [ -s "$tmp/$name.port" ] && break; sleep 0.05; done
	[ -s "$tmp/$name.port" ] && touch "$tmp/$name.log"
}
patches() { grep -c '"method": "PATCH"' "$tmp/$1.log" 2>/dev/null || true; }
resets() { grep -c 'ComputerSystem.Reset' "$tmp/$1.log" 2>/dev/null || true; }
lines() { wc -l <"$tmp/$1.log"; }
# sess NAME FROM: the requests logged since line FROM hold exactly one login
# and one logout, the logout last with no session left open, and every
# request but the service root and the login carried the session's token.
sess() {
	python3 - "$tmp/$1.log" "$2" <<'PY'
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])][int(sys.argv[2]):]
S = "/redfish/v1/SessionService/Sessions"
ins = [l for l in log if l["method"] == "POST" and l["path"] == S]
outs = [l for l in log if l["method"] == "DELETE" and l["path"].startswith(S + "/")]
rest = [l for l in log if l["path"].rstrip("/") != "/redfish/v1" and l not in ins]
sys.exit(0 if len(ins) == 1 and len(outs) == 1 and log[-1] is outs[0] and
         log[-1]["open"] == 0 and all(l["auth"] == "token" for l in rest) else 1)
PY
}
R=--insecure-http
export AHEADCTL_BMC_USER=root AHEADCTL_BMC_PASSWORD=calvin
if emu dell dell && emu hpe hpe && emu acme acme && emu nosnoop dell-nosnoop && emu two dell --systems 2 &&
	emu bare dell --systems 2 --bare-ids && emu bare1 dell --bare-ids &&
	emu nograce dell --reset-types On,ForceOff,ForceRestart && emu spaced dell --password 'cal vin  ' &&
	emu hang dell --hang GET:/redfish/v1/Systems/1/Bios &&
	emu hangset dell --hang GET:/redfish/v1/Systems/1/Bios/Settings && emu evil dell &&
	emu lure dell --sessions-link "@127.0.0.1:$(cat "$tmp/evil.port")/redfish/v1/SessionService/Sessions"; then
	D=http://127.0.0.1:$(cat "$tmp/dell.port")
	m=$(lines dell); run bios show --bmc "$D" $R
	t "redfish: Dell SnoopMode read and mapped" '[ $rc = 0 ] && has "Dell Inc. PowerEdge R730" && has "SnoopMode = EarlySnoop (snoop-mode early)"'
	t "redfish session: show logs in once, uses the token, logs out" 'sess dell $m'
	t "redfish: --insecure-http warns once on stderr" '[ "$(grep -c "warning: --insecure-http" <<<"$err")" = 1 ]'
	run -j bios show --bmc "$D" $R
	t "redfish -j: valid JSON" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"snoop_mode\"]")" = early ] && [ "$(jp "d[\"pending\"]")" = None ]'
	run bios set snoop-mode home --bmc "$D" $R
	t "redfish: set without --yes refused, no PATCH" '[ $rc = 2 ] && haserr "add --yes" && [ "$(patches dell)" = 0 ]'
	m=$(lines dell); run -n bios set snoop-mode home --bmc "$D" $R --reboot
	t "redfish -n: the PATCH and the graceful reset shown, none sent" '[ $rc = 0 ] && has "would PATCH /redfish/v1/Systems/1/Bios/Settings" && has "\"ApplyTime\":\"OnReset\"" && has "would POST /redfish/v1/Systems/1/Actions/ComputerSystem.Reset {\"ResetType\": \"GracefulRestart\"}" && [ "$(patches dell)" = 0 ] && [ "$(resets dell)" = 0 ]'
	t "redfish session: -n set logs in once and out" 'sess dell $m'
	run -j -n bios set snoop-mode home --bmc "$D" $R --reboot
	t "redfish -j -n set: one JSON document of what would be done" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"dry_run\"], d[\"changed\"], d[\"to\"], d[\"reset\"][\"type\"], d[\"reset\"][\"requested\"]")" = "True True HomeSnoop GracefulRestart False" ] && [ "$(patches dell)" = 0 ]'
	m=$(lines dell); run --yes bios set snoop-mode home --bmc "$D" $R
	t "redfish: PATCH Bios/Settings with SettingsApplyTime, pending without --reboot" '[ $rc = 0 ] && has "pending" && has "not rebooting" && grep "\"PATCH\"" "$tmp/dell.log" | grep "\"@Redfish.SettingsApplyTime\": {\"ApplyTime\": \"OnReset\"}" | grep -q "\"Attributes\": {\"SnoopMode\": \"HomeSnoop\"}" && [ "$(resets dell)" = 0 ]'
	t "redfish session: set logs in once and out" 'sess dell $m'
	run bios show --bmc "$D" $R
	t "redfish: show reports the pending value" '[ $rc = 0 ] && has "(snoop-mode early)" && has "pending: SnoopMode = HomeSnoop"'
	m=$(lines dell); run -j --yes bios set snoop-mode home --bmc "$D" $R --reboot
	t "redfish: --reboot restarts gracefully (GracefulRestart)" '[ $rc = 0 ] && grep "\"POST\"" "$tmp/dell.log" | grep -q "\"ResetType\": \"GracefulRestart\"" && ! grep -q "ForceRestart" "$tmp/dell.log" && haserr "reset requested: GracefulRestart (graceful)"'
	t "redfish -j set --reboot: one JSON document with the reset" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"changed\"], d[\"pending\"], d[\"reset\"][\"type\"], d[\"reset\"][\"graceful\"], d[\"reset\"][\"requested\"]")" = "True HomeSnoop GracefulRestart True True" ]'
	t "redfish session: set --reboot logs in once and out" 'sess dell $m'
	run -j bios show --bmc "$D" $R
	t "redfish: after the reset the BIOS runs home snoop" '[ "$(jp "d[\"snoop_mode\"]")" = home ] && [ "$(jp "d[\"pending\"]")" = None ]'
	np=$(patches dell)
	run --yes bios set snoop-mode home --bmc "$D" $R
	t "redfish: setting the current value changes nothing" '[ $rc = 0 ] && has "already HomeSnoop" && [ "$(patches dell)" = "$np" ]'
	run -j --yes bios set snoop-mode home --bmc "$D" $R --reboot
	t "redfish -j: the current value: changed false, no reset" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"changed\"], d[\"pending\"], d[\"reset\"]")" = "False None None" ] && [ "$(patches dell)" = "$np" ]'
	# The current value asked for while another one is pending (it would
	# apply at the next reset): the pending one is set back, no reset.
	run --yes bios set snoop-mode cod --bmc "$D" $R
	np=$(patches dell); nr=$(resets dell)
	run -j --yes bios set snoop-mode home --bmc "$D" $R --reboot
	t "redfish: the current value with another pending: set back (PATCH), said, no reset" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"changed\"], d[\"was_pending\"], d[\"pending\"], d[\"reset\"]")" = "True ClusterOnDie None None" ] && [ "$(patches dell)" = $((np + 1)) ] && [ "$(resets dell)" = "$nr" ] && haserr "but ClusterOnDie was pending" && haserr "no reset: the BIOS already runs HomeSnoop"'
	run -j bios show --bmc "$D" $R
	t "redfish: ... and nothing is pending any more" '[ $rc = 0 ] && [ "$(jp "d[\"snoop_mode\"], d[\"pending\"]")" = "home None" ]'
	# Pending settings that cannot be read (the BMC does not answer that GET).
	HS=http://127.0.0.1:$(cat "$tmp/hangset.port")
	m=$(lines hangset); run -j bios show --bmc "$HS" $R --timeout 2
	t "redfish show: pending settings that cannot be read are an error, not 'nothing pending'" '[ $rc = 1 ] && json_ok && jp "d[\"error\"][\"message\"]" | grep -q "Bios/Settings: the BMC did not answer within 2 s" && haserr "the pending BIOS settings (/redfish/v1/Systems/1/Bios/Settings) cannot be read"'
	t "redfish session: logged out after the settings timeout" 'sess hangset $m'
	run --yes bios set snoop-mode early --bmc "$HS" $R --timeout 2
	t "redfish set of the current value: pending settings that cannot be read: refused" '[ $rc = 1 ] && haserr "refusing to set snoop-mode early without knowing what is pending" && ! has "nothing to change" && [ "$(patches hangset)" = 0 ]'
	run --yes bios set snoop-mode home --bmc "$HS" $R --timeout 2
	t "redfish set of another value: pending settings that cannot be read: refused, nothing patched" '[ $rc = 1 ] && haserr "refusing to set" && [ "$(patches hangset)" = 0 ]'
	run --yes bios set snoop-mode osb --bmc "$D" $R
	t "redfish: Dell opportunistic snoop broadcast" '[ $rc = 0 ] && grep -q "OpportunisticSnoopBroadcast" "$tmp/dell.log"'
	nr=$(resets dell); m=$(lines dell); run --yes bios power-cycle --bmc "$D" $R
	t "redfish: power-cycle is a GracefulRestart by default, and says so" '[ $rc = 0 ] && has "reset requested: GracefulRestart (graceful)" && [ "$(resets dell)" = $((nr + 1)) ] && tail -n 2 "$tmp/dell.log" | grep -q "\"ResetType\": \"GracefulRestart\""'
	t "redfish session: power-cycle logs in once and out" 'sess dell $m'
	run -j --yes bios power-cycle --bmc "$D" $R --force
	t "redfish: power-cycle --force is a ForceRestart; -j says so" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"reset\"][\"type\"], d[\"reset\"][\"graceful\"]")" = "ForceRestart False" ] && tail -n 2 "$tmp/dell.log" | grep -q "\"ResetType\": \"ForceRestart\""'
	run -j -n bios power-cycle --bmc "$D" $R
	t "redfish -j -n power-cycle: one JSON document, nothing posted" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"dry_run\"], d[\"reset\"][\"requested\"]")" = "True False" ] && [ "$(resets dell)" = $((nr + 2)) ]'
	run --yes bios set snoop-mode home --bmc "$D" $R --force
	t "redfish: --force without --reboot on set is a usage error" '[ $rc = 2 ] && haserr "goes with --reboot"'
	G=http://127.0.0.1:$(cat "$tmp/nograce.port")
	m=$(lines nograce); run --yes bios power-cycle --bmc "$G" $R
	t "redfish: no GracefulRestart allowed: refused, nothing posted" '[ $rc = 1 ] && haserr "allows no GracefulRestart reset (it allows: On, ForceOff, ForceRestart)" && haserr "--force" && [ "$(resets nograce)" = 0 ]'
	t "redfish session: a refused reset still logs out" 'sess nograce $m'
	run --yes bios power-cycle --bmc "$G" $R --force
	t "redfish: ... and --force does the ForceRestart" '[ $rc = 0 ] && grep -q "\"ResetType\": \"ForceRestart\"" "$tmp/nograce.log"'
	H=http://127.0.0.1:$(cat "$tmp/hpe.port")
	run --yes bios set snoop-mode early --bmc "$H" $R
	t "redfish: HPE QpiSnoopConfig, early snoop is Standard" '[ $rc = 0 ] && grep "\"PATCH\"" "$tmp/hpe.log" | grep -q "\"QpiSnoopConfig\": \"Standard\"" || { [ $rc = 0 ] && has "already Standard"; }'
	run --yes bios set snoop-mode home --bmc "$H" $R
	t "redfish: HPE home snoop" '[ $rc = 0 ] && grep "\"PATCH\"" "$tmp/hpe.log" | grep -q "\"QpiSnoopConfig\": \"HomeSnoop\""'
	n0=$(patches hpe); m=$(lines hpe)
	run --yes bios set snoop-mode osb --bmc "$H" $R
	t "redfish: HPE has no OSB: refused, no PATCH" '[ $rc = 1 ] && haserr "offers no '"'"'osb'"'"'" && [ "$(patches hpe)" = "$n0" ]'
	t "redfish session: a refusal after login still logs out" 'sess hpe $m'
	m=$(lines acme); run --yes bios set snoop-mode home --bmc "http://127.0.0.1:$(cat "$tmp/acme.port")" $R
	t "redfish: unknown manufacturer refused, no PATCH" '[ $rc = 1 ] && haserr "unknown manufacturer '"'"'Acme Servers'"'"'" && haserr "refusing to guess" && [ "$(patches acme)" = 0 ]'
	t "redfish session: unknown manufacturer, still one login and logout" 'sess acme $m'
	run --yes bios set snoop-mode home --bmc "http://127.0.0.1:$(cat "$tmp/nosnoop.port")" $R
	t "redfish: known vendor without the attribute refused" '[ $rc = 1 ] && haserr "has no attribute SnoopMode" && [ "$(patches nosnoop)" = 0 ]'
	T=http://127.0.0.1:$(cat "$tmp/two.port")
	m=$(lines two); run bios show --bmc "$T" $R
	t "redfish: several systems need --system" '[ $rc = 1 ] && haserr "has 2 systems; choose one with --system ID: 1 2"'
	t "redfish session: the systems listing still logs out" 'sess two $m'
	run bios show --bmc "$T" $R --system 2
	t "redfish: --system picks one" '[ $rc = 0 ] && has "/redfish/v1/Systems/2"'
	run bios show --bmc "$T" $R --system 9
	t "redfish: absent --system" '[ $rc = 1 ] && haserr "no system '"'"'9'"'"'"'
	# Members whose @odata.id is a bare id, no '/': listed, chosen, resolved under the collection.
	B=http://127.0.0.1:$(cat "$tmp/bare.port")
	run bios show --bmc "$B" $R
	t "redfish: member ids without '/' are listed (no crash)" '[ $rc = 1 ] && haserr "has 2 systems; choose one with --system ID: 1 2"'
	run bios show --bmc "$B" $R --system 2
	t "redfish: a member id without '/' is chosen by --system" '[ $rc = 0 ] && has "(/redfish/v1/Systems/2): SnoopMode = EarlySnoop"'
	run bios show --bmc "http://127.0.0.1:$(cat "$tmp/bare1.port")" $R
	t "redfish: a lone member id without '/' is resolved under Systems" '[ $rc = 0 ] && has "(/redfish/v1/Systems/1)"'
	run --yes bios power-cycle --bmc "$B" $R --system 2
	t "redfish: power-cycle of a member id without '/'" '[ $rc = 0 ] && grep -q "\"path\": \"/redfish/v1/Systems/2/Actions/ComputerSystem.Reset\"" "$tmp/bare.log"'
	m=$(lines dell); AHEADCTL_BMC_PASSWORD=wrong run bios show --bmc "$D" $R
	t "redfish: wrong password is one clear message" '[ $rc = 1 ] && [ "$(grep -v "warning: --insecure-http" <<<"$err")" = "aheadctl: the BMC refused the credentials of user '"'"'root'"'"' (HTTP 401)" ]'
	t "redfish session: a refused login sends nothing else" '[ "$(tail -n +$((m + 1)) "$tmp/dell.log" | grep -vc "\"path\": \"/redfish/v1\"")" = 1 ] && tail -n 1 "$tmp/dell.log" | grep -q "\"open\": 0"'
	# A request the BMC never answers: a bounded wait, one message, and the session still closed.
	m=$(lines hang); start=$SECONDS
	run bios show --bmc "http://127.0.0.1:$(cat "$tmp/hang.port")" $R --timeout 3
	t "redfish: a BMC that stops answering mid-way: clear error within the timeout" '[ $rc = 1 ] && haserr "GET http://127.0.0.1:$(cat "$tmp/hang.port")/redfish/v1/Systems/1/Bios: the BMC did not answer within 3 s" && [ $((SECONDS - start)) -lt 15 ]'
	t "redfish session: logged out after the timeout" 'sess hang $m'
	# SIGTERM while a request hangs: abandoned at once, the session still closed.
	m=$(lines hang)
	"$A" bios show --bmc "http://127.0.0.1:$(cat "$tmp/hang.port")" $R --timeout 60 >/dev/null 2>"$tmp/err.term" &
	apid=$!
	for _ in $(seq 600); do tail -n +$((m + 1)) "$tmp/hang.log" | grep -q '"path": "/redfish/v1/Systems/1/Bios"' && break; sleep 0.05; done
	start=$SECONDS; kill -TERM $apid; wait $apid; rc=$?; err=$(cat "$tmp/err.term"); out=
	t "redfish: SIGTERM during a request: one message, exit 1, quickly" '[ $rc = 1 ] && haserr "/redfish/v1/Systems/1/Bios: interrupted" && [ $((SECONDS - start)) -lt 15 ]'
	t "redfish session: logged out after SIGTERM" 'sess hang $m'
	# A link that is no path ("@host/..."): after the base URL it would name
	# another host, which would get the password (the session POST).
	m=$(lines lure); run bios show --bmc "http://127.0.0.1:$(cat "$tmp/lure.port")" $R
	t "redfish: a link without its leading '/' is refused; nothing reaches the host it names" '[ $rc = 1 ] && haserr "the BMC gave a link that is not a path on it" && [ "$(lines evil)" = 0 ] && [ "$(lines lure)" = $((m + 1)) ]'
	# A port that accepts connections and never answers.
	python3 -c 'import signal, socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write("%d\n" % s.getsockname()[1])
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1]); signal.pause()' "$tmp/mute.port" &
	pids+=($!)
	for _ in $(seq 600); do [ -s "$tmp/mute.port" ] && break; sleep 0.05; done
	start=$SECONDS
	run bios show --bmc "http://127.0.0.1:$(cat "$tmp/mute.port")" $R --timeout 3
	t "redfish: a port that never answers: clear error within the timeout" '[ $rc = 1 ] && haserr "/redfish/v1: the BMC did not answer within 3 s" && [ $((SECONDS - start)) -lt 15 ]'
	run bios show --bmc "$D" $R --timeout 0
	t "redfish: --timeout 0 refused" '[ $rc = 2 ] && haserr "--timeout '"'"'0'"'"': expected seconds"'
	# Plain HTTP and credentials in the URL.
	m=$(lines dell); run bios show --bmc "$D"
	t "redfish: plain http:// refused without --insecure-http, nothing sent" '[ $rc = 2 ] && haserr "plain http:// would send the BMC password in clear" && [ "$(lines dell)" = $m ]'
	run bios show --bmc "ftp://127.0.0.1:$(cat "$tmp/dell.port")"
	t "redfish: another scheme refused" '[ $rc = 2 ] && haserr "expected https://"'
	run bios show --bmc "::1" --timeout 3
	t "redfish: a bare IPv6 address becomes https://[addr]" '[ $rc = 1 ] && haserr "GET https://[::1]/redfish/v1: "'
	run bios show --bmc "http://root:calvin@127.0.0.1:$(cat "$tmp/dell.port")" $R
	t "redfish: user:pass@host refused, the password never echoed" '[ $rc = 2 ] && haserr "credentials in it" && ! grep -q calvin <<<"$out$err" && [ "$(lines dell)" = $m ]'
	out=$(AHEADCTL_BMC="https://root:calvin@127.0.0.1:1" "$A" bios show 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "redfish: AHEADCTL_BMC with credentials refused, not echoed" '[ $rc = 2 ] && haserr "AHEADCTL_BMC: a BMC address with credentials" && ! grep -q calvin <<<"$out$err"'
	run bios show --bmc "$D" $R --password calvin
	t "redfish: a password on the command line is refused" '[ $rc = 2 ] && haserr "not taken from the command line"'
	run bios show --bmc "$D" $R --password=calvin
	t "redfish: --password=... refused too" '[ $rc = 2 ]'
	printf 'calvin\n' >"$tmp/pw"; chmod 0644 "$tmp/pw"
	AHEADCTL_BMC_PASSWORD= run bios show --bmc "$D" $R --password-file "$tmp/pw"
	t "redfish: a password file readable by others is refused" '[ $rc = 1 ] && haserr "mode 0600" && haserr "0644"'
	chmod 0600 "$tmp/pw"
	out=$(env -u AHEADCTL_BMC_PASSWORD "$A" bios show --bmc "$D" $R --password-file "$tmp/pw" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "redfish: a 0600 password file is used" '[ $rc = 0 ] && has "snoop-mode"'
	# The file's bytes are the password, less one final newline.
	printf 'cal vin  \n' >"$tmp/pw2"; chmod 0600 "$tmp/pw2"
	out=$(env -u AHEADCTL_BMC_PASSWORD "$A" bios show --bmc "http://127.0.0.1:$(cat "$tmp/spaced.port")" $R --password-file "$tmp/pw2" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "redfish: a password file keeps inner and trailing blanks" '[ $rc = 0 ] && has "snoop-mode"'
	printf 'calvin\n\n' >"$tmp/pw3"; chmod 0600 "$tmp/pw3"
	out=$(env -u AHEADCTL_BMC_PASSWORD "$A" bios show --bmc "$D" $R --password-file "$tmp/pw3" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "redfish: only one final newline is stripped" '[ $rc = 1 ] && haserr "refused the credentials"'
	: >"$tmp/pw4"; chmod 0600 "$tmp/pw4"
	out=$(env -u AHEADCTL_BMC_PASSWORD "$A" bios show --bmc "$D" $R --password-file "$tmp/pw4" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "redfish: an empty password file is refused" '[ $rc = 1 ] && haserr "password file $tmp/pw4: empty"'
	out=$(env -u AHEADCTL_BMC_PASSWORD "$A" bios show --bmc "$D" $R --password-file "$tmp/nofile" 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "redfish: a missing password file" '[ $rc = 1 ] && haserr "cannot open password file"'
	out=$(env -u AHEADCTL_BMC_PASSWORD "$A" bios show --bmc "$D" $R 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "redfish: no password at all" '[ $rc = 2 ] && haserr "credentials missing"'
	out=$(env -u AHEADCTL_BMC_USER "$A" bios show --bmc "$D" $R 2>"$tmp/err"); rc=$?; err=$(cat "$tmp/err")
	t "redfish: no user" '[ $rc = 2 ] && haserr "credentials missing"'
	run bios show
	t "bios: nothing to talk to" '[ $rc = 2 ] && haserr "nothing to talk to"'
	run bios show --bmc
	t "bios: --bmc without a value" '[ $rc = 2 ] && haserr "--bmc needs a value"'
	run bios set snoop-mode turbo --bmc "$D" $R
	t "bios: unknown snoop mode" '[ $rc = 2 ] && haserr "expected home, early, cod or osb"'
	run bios set turbo on --bmc "$D" $R
	t "bios: only snoop-mode can be set" '[ $rc = 2 ]'
	run bios show --via carrier-pigeon
	t "bios: unknown --via" '[ $rc = 2 ]'
	run bios frob
	t "bios: unknown verb" '[ $rc = 2 ]'
	run bios show --bmc "$D" $R --force
	t "bios: --force is not a show option" '[ $rc = 2 ] && haserr "unknown bios argument '"'"'--force'"'"'"'
	# A closed port: nothing listens on a port just released.
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' >"$tmp/closed"
	run bios show --bmc "http://127.0.0.1:$(cat "$tmp/closed")" $R
	t "redfish: unreachable BMC is one message" '[ $rc = 1 ] && { haserr "Could not connect" || haserr "Couldn'"'"'t connect"; }'
	# TLS: verified unless --insecure.
	if openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" \
		-days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 &&
		emu tls dell --tls "$tmp/cert.pem" "$tmp/key.pem"; then
		S=https://127.0.0.1:$(cat "$tmp/tls.port")
		run bios show --bmc "$S"
		t "redfish TLS: an unknown certificate is refused, the problem named, --ca offered" '[ $rc = 1 ] && haserr "the BMC'"'"'s certificate did not verify: SSL certificate problem: self-signed certificate (give the CA that signed it with --ca FILE or ca-file =; --insecure skips the check)"'
		run bios show --bmc "$S" --ca "$tmp/cert.pem"
		t "redfish TLS: --ca FILE verifies against that CA" '[ $rc = 0 ] && has "snoop-mode early" && [ -z "$err" ]'
		run bios show --bmc "$S" --ca "$tmp/no-such-ca.pem"
		t "redfish TLS: a missing --ca file is named, not blamed on the certificate" '[ $rc = 1 ] && haserr "CA file $tmp/no-such-ca.pem: No such file or directory" && ! haserr "--insecure"'
		printf 'not a certificate\n' >"$tmp/junk.pem"
		run bios show --bmc "$S" --ca "$tmp/junk.pem"
		t "redfish TLS: a CA file that is no certificate is named" '[ $rc = 1 ] && haserr "$tmp/junk.pem" && ! haserr "--insecure skips"'
		openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key2.pem" -out "$tmp/other.pem" \
			-days 1 -subj /CN=other >/dev/null 2>&1
		run bios show --bmc "$S" --ca "$tmp/other.pem"
		t "redfish TLS: the wrong CA: the problem and the CA file named" '[ $rc = 1 ] && haserr "did not verify: SSL certificate problem" && haserr "checked against $tmp/other.pem"'
		(umask 077 && echo calvin >"$tmp/tls.pw")
		printf '[bios]\nsnoop-mode = home\nbmc = %s\nca-file = %s\nuser = root\npassword-file = %s\n' \
			"$S" "$tmp/cert.pem" "$tmp/tls.pw" >"$tmp/tls.conf"
		run verify -c "$tmp/tls.conf"
		t "verify: ca-file = in [bios] verifies the BMC; the fix carries --ca" '[ $rc = 1 ] && has "DRIFT [bios] snoop-mode: expected home, found early" && has " --ca $tmp/cert.pem" && ! haserr "did not verify"'
		run bios show --via ipmi --bmc 127.0.0.1 --ca "$tmp/cert.pem"
		t "bios: --ca with --via ipmi is refused" '[ $rc = 2 ] && haserr "--ca is for Redfish"'
		AHEADCTL_CA_FILE=$tmp/cert.pem run bios show --bmc "$S"
		t "redfish TLS: verified against the given CA" '[ $rc = 0 ] && has "snoop-mode early" && [ -z "$err" ]'
		m=$(lines tls); run bios show --bmc "$S" --insecure
		t "redfish TLS: --insecure skips the check" '[ $rc = 0 ] && has "snoop-mode early"'
		t "redfish TLS session: one login and logout" 'sess tls $m'
	else
		fail "redfish TLS: openssl or the TLS emulator failed"
	fi
else
	fail "redfish: the emulator did not start"
fi
