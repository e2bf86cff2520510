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
