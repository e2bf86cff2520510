# 30-numa.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
# ---- numa bw (this host) ----
run -j numa bw --size 16M --seconds 0.05
nn=$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)
t "numa bw on this host: ${nn}x${nn} matrix, every cell > 0 MB/s" '[ $rc = 0 ] && json_ok && [ "$(jp "len(d[\"mbps\"])")" = $nn ] && [ "$(jp "all(all(c > 0 for c in r) for r in d[\"mbps\"])")" = True ]'
if [ "$nn" = 1 ]; then
	t "numa bw on one node: no ratio, no false alarm" '[ "$(jp "d[\"worst_ratio\"]")" = None ] && [ "$(jp "d[\"flagged\"]")" = False ] && [ "$(jp "d[\"threshold\"]")" = 0.25 ]'
else
	t "numa bw: a ratio per remote pair" '[ "$(jp "d[\"worst_ratio\"] > 0")" = True ]'
fi
run numa bw --size 16M --seconds 0.05 --threads 1
t "numa bw: human table" '[ $rc = 0 ] && has "cpu\\mem" && has "1 threads per CPU node"'
for bad in "--size 12Q" "--size 100" "--threads 0" "--threads x" "--seconds 0" "--seconds 99" "--seconds" "--bogus 1"; do
	run numa bw $bad
	t "numa bw $bad: usage error" '[ $rc = 2 ] && one_line_err'
done
run numa frob
t "numa: unknown verb" '[ $rc = 2 ]'

