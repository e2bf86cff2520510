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
# The peak RSS with a 256 MiB answer against that with a 4 KiB one (an
# ASan build has a larger base): at most 64 MiB more (the old binary: 778 MiB).
rm -f "$tmp/big.port" "$tmp/small.port"
python3 "$here/bmc_stub.py" --ready "$tmp/big.port" big $((256 << 20)) >/dev/null 2>&1 &
pids+=($!)
python3 "$here/bmc_stub.py" --ready "$tmp/small.port" big 4096 >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 600); do [ -s "$tmp/big.port" ] && [ -s "$tmp/small.port" ] && break; sleep 0.05; done
if [ -s "$tmp/big.port" ] && [ -s "$tmp/small.port" ]; then
	AHEADCTL_BMC_USER=root AHEADCTL_BMC_PASSWORD=calvin \
		rss_run bios show --bmc "http://127.0.0.1:$(cat "$tmp/small.port")" --insecure-http
	rss0=$rss
	AHEADCTL_BMC_USER=root AHEADCTL_BMC_PASSWORD=calvin \
		rss_run bios show --bmc "http://127.0.0.1:$(cat "$tmp/big.port")" --insecure-http
	t "redfish: a 256 MiB answer is refused, RSS stays small" '[ $rc = 1 ] && haserr "larger than 4 MiB" && [ $((rss - rss0)) -lt 65536 ]'
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
mkdir -p "$tmp/pwdir"; chmod 0777 "$tmp/pwdir"; printf 'calvin\n' >"$tmp/pwdir/p"; chmod 0600 "$tmp/pwdir/p"
run bios show --bmc 127.0.0.1 --user root --password-file "$tmp/pwdir/p"
t "bios: a password file in a world-writable directory is refused" '[ $rc = 1 ] && haserr "password file $tmp/pwdir/p: its directory $tmp/pwdir is writable by everyone (mode 0777)"'
chown 12345 "$tmp/pwdir/p"; chmod 0755 "$tmp/pwdir"
run bios show --bmc 127.0.0.1 --user root --password-file "$tmp/pwdir/p"
t "bios: a password file owned by another user is refused" '[ $rc = 1 ] && haserr "owned by uid 12345"'
rm -rf "$tmp/pwdir"
# ---- trust: fix lines are quoted, text output shows no terminal escapes ----
# A snapshot whose strings hold blanks, ';' and escape sequences: each fix
# line must stay one command with these as words, and nothing the terminal
# would act on reaches stdout or stderr.
persist_fixture
P0=$F/sys/devices/pci0000:80/0000:80:00.0/0000:81:00.0
S=$tmp/hostile.json
"$A" snapshot save "$S" --skip-bw >/dev/null
python3 - "$S" "$tmp" <<'PY'
import json, sys
p, tmp = sys.argv[1], sys.argv[2]
d = json.load(open(p))
for m in d["aheadfs"]:
    if m["mountpoint"] == "/mnt/ahead":
        m["lower"] = "/srv/my data;touch %s/pwned" % tmp
for n in d["nics"]:
    if n["dev"] == "eth0":
        n["driver"] = "mlx5_core;touch %s/pwned2 \x1b]0;owned\x07\x1b[2J" % tmp
json.dump(d, open(p, "w"))
PY
sed -i '/ \/mnt\/ahead /d' "$F/proc/self/mountinfo"
run snapshot diff "$S" --skip-bw
# Each fix line as a shell splits it: no ';' or '|' outside a word.
fix_words_ok() {
	sed -n 's/^  fix: //p' <<<"$out" | sed 's/ (.*)$//' | python3 -c '
import shlex, sys
ok = True
for l in sys.stdin:
    toks = list(shlex.shlex(l, posix=True, punctuation_chars=True))
    ok &= not any(t in (";", "|", "||", "&") for t in toks)
sys.exit(0 if ok else 1)'
}
t "snapshot diff: hostile names are regressions, exit 1" '[ $rc = 1 ] && has "REGRESSION aheadfs mount /mnt/ahead" && has "driver swapped"'
t "snapshot diff: every fix line is one command, ';' inside its words" 'fix_words_ok'
fixline=$(sed -n 's/^  fix: \(mount -t aheadfs .*\)$/\1/p' <<<"$out")
(mount() { printf '%s\n' "$@" >"$tmp/mount.args"; }; eval "$fixline") >/dev/null 2>&1
t "snapshot diff: the mount fix, pasted, runs mount alone with the lower as one word" '[ -n "$fixline" ] && [ ! -e "$tmp/pwned" ] && [ "$(sed -n 5p "$tmp/mount.args")" = "/srv/my data;touch $tmp/pwned" ] && [ "$(sed -n 6p "$tmp/mount.args")" = /mnt/ahead ]'
t "snapshot diff: no escape or BEL byte on stdout or stderr; shown as \\u001b" '! grep -q "[$(printf "\033\007")]" <<<"$out$err" && has "\\u001b]0;owned\\u0007"'
run -j snapshot diff "$S" --skip-bw
t "snapshot diff -j: still valid JSON, the name decodes to its bytes" 'json_ok && [ "$(jp "any(\"\\x1b]0;owned\" in r[\"regression\"] for r in d[\"regressions\"])")" = True ]'
printf 'snapshot = %s\n' "$S" | conf
run doctor --skip-bw
t "doctor: the configured snapshot's regressions, fixes quoted, no escapes" '[ $rc = 1 ] && has "FINDING [snapshot] aheadfs mount /mnt/ahead" && fix_words_ok && ! grep -q "[$(printf "\033\007")]" <<<"$out$err"'
rm -f "$tmp/pwned" "$tmp/pwned2" "$tmp/mount.args"
# ---- trust: files written through mkstemp, not a fixed NAME.tmp ----
persist_fixture
echo precious >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/s.json.tmp"
run snapshot save "$tmp/s.json" --skip-bw
t "snapshot save: a symlink planted at FILE.tmp is not followed" '[ $rc = 0 ] && [ "$(cat "$tmp/victim")" = precious ] && [ -L "$tmp/s.json.tmp" ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/s.json"'
ln -s "$tmp/victim" "$F/etc/aheadctl/irqbalance-policy.sh.tmp"
run irq ban dev eth0
t "irq ban: a symlink planted at the policy script's .tmp is not followed" '[ $rc = 0 ] && [ "$(cat "$tmp/victim")" = precious ] && grep -q "aheadctl-ban eth0" "$F/etc/aheadctl/irqbalance-policy.sh" && [ -x "$F/etc/aheadctl/irqbalance-policy.sh" ]'
rm -f "$tmp/victim" "$tmp/s.json.tmp" "$tmp/s.json"
