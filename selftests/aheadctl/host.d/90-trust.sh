# 90-trust.sh: sourced by host-tests.sh.  What a hostile BMC, snapshot or
# config file can make aheadctl do: bounded input, refused files, quoted
# fixes, no terminal escapes.
# ---- trust: bounded BMC answers ----
# rss ARGS...: runs aheadctl like run, and its peak RSS in KiB in $rss.
rss_run() {
	rss=$(python3 -c '
import resource, subprocess, sys
with open(sys.argv[1], "w") as e, open(sys.argv[2], "w") as o:
    rc = subprocess.call(sys.argv[3:], stdout=o, stderr=e)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)' "$tmp/err" "$tmp/out" "$A" "$@")
	rc=${rss#* }; rss=${rss% *}; out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
}
rm -f "$tmp/big.port"
python3 "$here/bmc_stub.py" --ready "$tmp/big.port" big $((256 << 20)) >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 600); do [ -s "$tmp/big.port" ] && break; sleep 0.05; done
if [ -s "$tmp/big.port" ]; then
	AHEADCTL_BMC_USER=root AHEADCTL_BMC_PASSWORD=calvin \
		rss_run bios show --bmc "http://127.0.0.1:$(cat "$tmp/big.port")" --insecure-http
	t "redfish: a 256 MiB answer is refused, RSS stays small" '[ $rc = 1 ] && haserr "larger than 4 MiB" && [ "$rss" -lt 65536 ]'
else
	fail "redfish: bmc_stub.py did not start"
fi
# ---- trust: the config and the password file, as sshd's StrictModes ----
# persist_fixture, conf and CONF are 70-apply.sh's.
persist_fixture
conf <<'CONF'
[block vda]
read_ahead_kb = 4096
CONF
chmod 0666 "$CONF"; snap cw
run verify
t "verify: a world-writable config is refused, named, nothing read" '[ $rc = 1 ] && haserr "config $CONF: it is writable by everyone (mode 0666): refusing it" && ! has DRIFT'
run apply
t "apply: a world-writable config is refused, nothing written" '[ $rc = 1 ] && haserr "writable by everyone" && same cw'
chmod 0644 "$CONF"; chmod 0775 "$F/etc/aheadctl"
run apply
t "apply: a config in a group-writable directory is refused" '[ $rc = 1 ] && haserr "its directory $F/etc/aheadctl is writable by its group (mode 0775)" && same cw'
chmod 0755 "$F/etc/aheadctl"
run apply
t "apply: the same config, safe again, is applied" '[ $rc = 0 ] && [ "$(cat "$VQ/read_ahead_kb")" = 4096 ]'
mkdir -p "$tmp/pw"; chmod 0777 "$tmp/pw"; printf 'calvin\n' >"$tmp/pw/p"; chmod 0600 "$tmp/pw/p"
run bios show --bmc 127.0.0.1 --user root --password-file "$tmp/pw/p"
t "bios: a password file in a world-writable directory is refused" '[ $rc = 1 ] && haserr "password file $tmp/pw/p: its directory $tmp/pw is writable by everyone (mode 0777)"'
chown 12345 "$tmp/pw/p"; chmod 0755 "$tmp/pw"
run bios show --bmc 127.0.0.1 --user root --password-file "$tmp/pw/p"
t "bios: a password file owned by another user is refused" '[ $rc = 1 ] && haserr "owned by uid 12345"'
rm -rf "$tmp/pw"
