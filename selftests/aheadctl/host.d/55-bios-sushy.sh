# 55-bios-sushy.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
# ---- bios: Redfish against sushy-tools' sushy-emulator (a service not written here) ----
# sushy-emulator (PyPI sushy-tools, installed into build/venv by
# scripts/setup-deps) with its fake driver, over TLS with a certificate
# verified through AHEADCTL_CA_FILE.  What it can play: the service root,
# a Systems collection whose member ids are UUIDs, ComputerSystem with
# ResetType@Redfish.AllowableValues, ComputerSystem.Reset, Basic auth
# against an htpasswd file.  What only redfish_emu.py covers (50-*.sh):
# sessions (sushy-emulator has no SessionService, so aheadctl falls back to
# Basic auth there, with a warning), Bios and Bios/Settings (its fake
# driver exposes no Bios), the vendor map (it reports Manufacturer "Sushy
# Emulator"), PATCH with SettingsApplyTime, a service without
# GracefulRestart, bare member ids, a BMC that stops answering.
sushy=${AHEADCTL_SUSHY:-$here/../../build/venv/bin/sushy-emulator}
sdir=$tmp/sushy; mkdir -p "$sdir"
U1=27946b59-9e44-4fa7-8e91-f3527a1ef094 U2=48295b5e-1a2b-4c3d-9e8f-0a1b2c3d4e5f
sushy_start() {
	local py=${sushy%/*}/python port
	[ -x "$sushy" ] || return 1
	[ -s "$tmp/cert.pem" ] || openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" \
		-out "$tmp/cert.pem" -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
		>/dev/null 2>&1 || return 1
	"$py" -c 'import bcrypt; print("root:" + bcrypt.hashpw(b"calvin", bcrypt.gensalt(4)).decode())' \
		>"$sdir/htpasswd" || return 1
	cat >"$sdir/conf.py" <<EOF
SUSHY_EMULATOR_FAKE_DRIVER = True
SUSHY_EMULATOR_AUTH_FILE = '$sdir/htpasswd'
SUSHY_EMULATOR_FAKE_SYSTEMS = [
    {'uuid': '$U1', 'name': 'node-a', 'power_state': 'On', 'external_notifier': False, 'nics': []},
    {'uuid': '$U2', 'name': 'node-b', 'power_state': 'On', 'external_notifier': False, 'nics': []},
]
EOF
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	"$sushy" --config "$sdir/conf.py" -i 127.0.0.1 -p "$port" --ssl-certificate "$tmp/cert.pem" \
		--ssl-key "$tmp/key.pem" >"$sdir/log" 2>&1 &
	pids+=($!)
	SU=https://127.0.0.1:$port
	for _ in $(seq 300); do
		curl -s -o /dev/null --cacert "$tmp/cert.pem" "$SU/redfish/v1" && return 0
		sleep 0.1
	done
	return 1
}
# Its request log (werkzeug's; it colours some lines): resets it answered 204.
su_posts() { grep -c "POST /redfish/v1/Systems/$1/Actions/ComputerSystem.Reset HTTP/1.1.*\" 204 " "$sdir/log"; }
if sushy_start; then
	export AHEADCTL_CA_FILE=$tmp/cert.pem
	# Systems members are UUIDs under /redfish/v1/Systems/.
	run bios show --bmc "$SU"
	t "sushy: two systems listed by their UUIDs" '[ $rc = 1 ] && haserr "/redfish/v1/Systems has 2 systems; choose one with --system ID: $U1 $U2"'
	t "sushy: no SessionService, so Basic auth, said once" '[ "$(grep -c "advertises no sessions" <<<"$err")" = 1 ]'
	run bios show --bmc "$SU" --system "$U1"
	t "sushy: a system without Bios is refused clearly" '[ $rc = 1 ] && haserr "/redfish/v1/Systems/$U1 exposes no Bios resource"'
	run --yes bios set snoop-mode home --reboot --bmc "$SU" --system "$U2"
	t "sushy: set refused before any change, no reset" '[ $rc = 1 ] && haserr "exposes no Bios resource" && [ "$(su_posts "$U2")" = 0 ]'
	run bios show --bmc "$SU" --system nope
	t "sushy: an absent --system" '[ $rc = 1 ] && haserr "no system '"'"'nope'"'"' in /redfish/v1/Systems"'
	AHEADCTL_BMC_PASSWORD=wrong run bios show --bmc "$SU" --system "$U1"
	t "sushy: wrong password is one clear message" '[ $rc = 1 ] && haserr "the BMC refused the credentials of user '"'"'root'"'"' (HTTP 401)"'
	run -n bios power-cycle --bmc "$SU" --system "$U1"
	t "sushy -n power-cycle: GracefulRestart from its AllowableValues, nothing posted" '[ $rc = 0 ] && has "would POST /redfish/v1/Systems/$U1/Actions/ComputerSystem.Reset {\"ResetType\": \"GracefulRestart\"}" && [ "$(su_posts "$U1")" = 0 ]'
	run -j --yes bios power-cycle --bmc "$SU" --system "$U1"
	t "sushy: power-cycle is a GracefulRestart it accepts; -j says so" '[ $rc = 0 ] && json_ok && [ "$(jp "d[\"system\"], d[\"reset\"][\"type\"], d[\"reset\"][\"requested\"]")" = "/redfish/v1/Systems/$U1 GracefulRestart True" ] && [ "$(su_posts "$U1")" = 1 ]'
	run --yes bios power-cycle --bmc "$SU" --system "$U2" --force
	t "sushy: power-cycle --force is a ForceRestart it accepts" '[ $rc = 0 ] && has "reset requested: ForceRestart (hard, --force)" && [ "$(su_posts "$U2")" = 1 ]'
	unset AHEADCTL_CA_FILE
	run bios show --bmc "$SU" --system "$U1"
	t "sushy: its certificate is verified" '[ $rc = 1 ] && haserr "did not verify"'
else
	fail "sushy: sushy-emulator did not start (scripts/setup-deps installs sushy-tools into build/venv)"
fi
