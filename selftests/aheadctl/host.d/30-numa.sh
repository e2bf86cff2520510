# 30-numa.sh: sourced by host-tests.sh, which defines run, t, fresh, pass, fail and skip.
# ---- numa bw: sizing and refusals from a fixture (-n: the plan, nothing measured) ----
MiB=1048576
# cache CPU INDEX LEVEL TYPE SIZE SHARED: one cache of a fixture CPU, as sysfs has it.
cache() {
	local d=$F/sys/devices/system/cpu/cpu$1/cache/index$2
	mkdir -p "$d"
	echo "$3" >"$d/level"; echo "$4" >"$d/type"; echo "$5" >"$d/size"; echo "$6" >"$d/shared_cpu_list"
}
# numa_fixture LLC-SIZE: nodes 0 (CPUs 0-1) and 1 (2-3), 16 GiB free each, an L3 per node.
numa_fixture() {
	fresh
	for c in 0 1 2 3; do
		cache $c 0 1 Data 48K $c
		cache $c 1 1 Instruction 32K $c
		cache $c 2 2 Unified 2048K $c
		[ -n "$1" ] && cache $c 3 3 Unified "$1" $((c / 2 * 2))-$((c / 2 * 2 + 1))
	done
	for nd in 0 1; do
		printf 'Node %d MemTotal:       33554432 kB\nNode %d MemFree:        16777216 kB\nNode %d MemUsed:        16777216 kB\n' $nd $nd $nd \
			>"$F/sys/devices/system/node/node$nd/meminfo"
		mkdir -p "$F/sys/devices/system/node/node$nd/hugepages/hugepages-2048kB"
		echo 0 >"$F/sys/devices/system/node/node$nd/hugepages/hugepages-2048kB/free_hugepages"
	done
	mkdir -p "$F/sys/kernel/mm/transparent_hugepage"
	echo 'always [madvise] never' >"$F/sys/kernel/mm/transparent_hugepage/enabled"
}
memfree() {	# NODE KB
	sed -i "s/MemFree: .*/MemFree:        $2 kB/" "$F/sys/devices/system/node/node$1/meminfo"
}

numa_fixture 107520K	# a 105 MiB L3 (a 56-core Sapphire Rapids socket)
run -j -n numa bw
t "numa bw sizing: twice the LLC per thread (fixture: 105 MiB L3 -> 210 MiB)" '[ $rc = 0 ] && json_ok && [ "$(jp "(d[\"measured\"], d[\"per_thread_size\"] // $MiB, d[\"size_from\"])")" = "(False, 210, '"'"'llc'"'"')" ] && [ "$(jp "(d[\"llc\"][\"level\"], d[\"llc\"][\"size\"], d[\"llc\"][\"shared_cpu_list\"])")" = "(3, 110100480, '"'"'0-1'"'"')" ]'
t "numa bw plan: one thread per CPU of each node, one beside the latency thread" '[ "$(jp "(d[\"nodes\"], d[\"threads\"], d[\"load_threads\"])")" = "([0, 1], [2, 2], [1, 1])" ]'
t "numa bw plan: memory per node = threads x size + the latency buffer" '[ "$(jp "d[\"memory_needed\"]")" = "[$((3 * 210 * MiB)), $((3 * 210 * MiB))]" ] && [ "$(jp "d[\"memfree\"]")" = "[$((16 * 1024 * MiB)), $((16 * 1024 * MiB))]" ] && [ "$(jp "\"mbps\" in d")" = False ]'
t "numa bw plan: cache-to-cache pairs, writer and reader CPU per cell (within a node its second CPU)" '[ "$(jp "d[\"c2c_cpus\"]")" = "[[[0, 1], [0, 2]], [[2, 0], [2, 3]]]" ] && [ "$(jp "\"c2c_latency_ns\" in d")" = False ]'
run -j -n numa bw --traffic rw --threads 1
t "numa bw plan --traffic rw --threads 1: a read and a write buffer per thread" '[ $rc = 0 ] && [ "$(jp "(d[\"traffic\"], d[\"threads\"], d[\"load_threads\"], d[\"memory_needed\"][0] // $MiB)")" = "('"'"'rw'"'"', [1, 1], [1, 1], 630)" ]'
run -n numa bw
t "numa bw -n: the plan in words, nothing measured" '[ $rc = 0 ] && has "210 MiB per thread (twice the 105 MiB L3 cache shared by CPUs 0-1, at least 64 MiB)" && has "node 1: 2 bandwidth threads (1 beside the latency thread), 630 MiB of memory needed, 16384 MiB free" && ! has "MB/s"'
t "numa bw -n: the cache-to-cache pairs in words" 'has "cache-to-cache from node 0: CPU 0 writes, CPU 1 (node 0) reads; CPU 0 writes, CPU 2 (node 1) reads" && has "cache-to-cache from node 1: CPU 2 writes, CPU 0 (node 0) reads; CPU 2 writes, CPU 3 (node 1) reads" && ! has "one NUMA node"'
# A node of one CPU has no pair within it; a node without memory homes no line.
echo 0-2 >"$F/sys/devices/system/cpu/online"
run -j -n numa bw
t "numa bw plan: a node of one CPU has no cache-to-cache cell of its own (null)" '[ $rc = 0 ] && [ "$(jp "d[\"c2c_cpus\"]")" = "[[[0, 1], [0, 2]], [[2, 0], None]]" ]'
echo 0-3 >"$F/sys/devices/system/cpu/online"
sed -i "s/MemTotal: .*/MemTotal:       0 kB/" "$F/sys/devices/system/node/node1/meminfo"
run -j -n numa bw
t "numa bw plan: a node without memory writes no line of its own (its row null)" '[ $rc = 0 ] && [ "$(jp "d[\"c2c_cpus\"]")" = "[[[0, 1], [0, 2]], [None, None]]" ]'
# One node, as this host: it still runs, within the node, and says so.
numa_fixture 107520K
rm -rf "$F/sys/devices/system/node/node1"
run -n numa bw
t "numa bw -n on one node: cache-to-cache within it, said" '[ $rc = 0 ] && has "cache-to-cache from node 0: CPU 0 writes, CPU 1 (node 0) reads" && has "one NUMA node: cache-to-cache within node 0 only (CPUs 0 and 1), no remote transfer to compare"'
echo 0 >"$F/sys/devices/system/cpu/online"
run -j -n numa bw
t "numa bw plan on one CPU: no cache-to-cache cell, said" '[ $rc = 0 ] && [ "$(jp "d[\"c2c_cpus\"]")" = "[[None]]" ]'
run -n numa bw
t "numa bw -n on one CPU: no cache-to-cache transfer, said" '[ $rc = 0 ] && has "cache-to-cache from node 0: none: one CPU, no other cache to move a line to"'
numa_fixture 107520K
numa_fixture 8192K
run -j -n numa bw
t "numa bw sizing: a small LLC still gets 64 MiB per thread" '[ $rc = 0 ] && [ "$(jp "(d[\"per_thread_size\"] // $MiB, d[\"size_from\"], d[\"llc\"][\"size\"] // $MiB)")" = "(64, '"'"'llc'"'"', 8)" ]'
numa_fixture ""
run -j -n numa bw
t "numa bw sizing: the L2 when sysfs has no L3 (2 MiB -> the 64 MiB floor)" '[ $rc = 0 ] && [ "$(jp "(d[\"per_thread_size\"] // $MiB, d[\"llc\"][\"level\"])")" = "(64, 2)" ]'
rm -rf "$F"/sys/devices/system/cpu/cpu*/cache
run -j -n numa bw
t "numa bw sizing: no caches in sysfs -> 256 MiB per thread" '[ $rc = 0 ] && [ "$(jp "(d[\"per_thread_size\"] // $MiB, d[\"size_from\"], d[\"llc\"])")" = "(256, '"'"'default'"'"', None)" ]'
run -j -n numa bw --size 32M
t "numa bw --size: per thread, as given" '[ $rc = 0 ] && [ "$(jp "(d[\"per_thread_size\"] // $MiB, d[\"size_from\"])")" = "(32, '"'"'option'"'"')" ]'

# MemFree too small: refused before anything is mapped or run (on the
# fixture's fake nodes a run would fail binding memory, with another message).
numa_fixture 107520K
memfree 1 409600
snap memfree
run numa bw --seconds 0.01
t "numa bw: a node without the free memory refused, naming node, size and MemFree, exit 1" '[ $rc = 1 ] && [ -z "$out" ] && [ "$err" = "aheadctl: node 1: numa bw needs 630 MiB there (2 threads x 210 MiB, and a 210 MiB latency buffer) but the node has 400 MiB free (MemFree), of which it uses at most 90%: give a smaller --size or fewer --threads" ] && same memfree'
run -j numa bw --seconds 0.01
t "numa bw -j: the refusal is the error document" '[ $rc = 1 ] && json_ok && jp "d[\"error\"][\"message\"]" | grep -q "^node 1: numa bw needs 630 MiB"'
run numa bw --seconds 0.01 --traffic rw
t "numa bw --traffic rw: the write buffers count too" '[ $rc = 1 ] && haserr "needs 1050 MiB there (2 threads x 2 x 210 MiB, and a 210 MiB latency buffer)"'
memfree 1 614400
run -j -n numa bw --threads 1
t "numa bw: fewer threads fit (2 x 210 MiB in 90% of 600 MiB)" '[ $rc = 0 ] && [ "$(jp "d[\"memory_needed\"][1] // $MiB")" = 420 ]'

# --hugepages: hugetlb when every node has the pages, else THP said aloud, else refused.
numa_fixture 107520K
run -j -n numa bw --hugepages
t "numa bw --hugepages without hugetlb pages: THP, with a warning" '[ $rc = 0 ] && [ "$(jp "d[\"pages\"]")" = thp ] && haserr "aheadctl: warning: --hugepages: node 0 has 0 free 2 MiB hugetlb pages, 315 needed: using transparent huge pages (madvise) instead"'
for nd in 0 1; do echo 315 >"$F/sys/devices/system/node/node$nd/hugepages/hugepages-2048kB/free_hugepages"; done
run -j -n numa bw --hugepages
t "numa bw --hugepages with the pages: hugetlb, no warning" '[ $rc = 0 ] && [ "$(jp "d[\"pages\"]")" = hugetlb ] && [ -z "$err" ]'
echo 314 >"$F/sys/devices/system/node/node1/hugepages/hugepages-2048kB/free_hugepages"
echo 'always madvise [never]' >"$F/sys/kernel/mm/transparent_hugepage/enabled"
run -j -n numa bw --hugepages
t "numa bw --hugepages: a node short of pages and THP off: refused, exit 1" '[ $rc = 1 ] && json_ok && haserr "aheadctl: --hugepages: node 1 has 314 free 2 MiB hugetlb pages, 315 needed" && haserr "transparent huge pages are disabled"'

# ---- numa bw on this host (the real sysfs), small and short ----
unset AHEADCTL_SYSFS_ROOT AHEADCTL_PROC_ROOT AHEADCTL_ETC_ROOT
nn=$(ls -d /sys/devices/system/node/node[0-9]* | wc -l)
node0_cpus=$(python3 -c 'import sys
n = 0
for r in open("/sys/devices/system/node/node0/cpulist").read().strip().split(","):
	a, _, b = r.partition("-"); n += int(b or a) - int(a) + 1
print(n)')
run -j numa bw --size 16M --seconds 0.05 --runs 2
t "numa bw on this host: ${nn}x${nn} matrix, every cell > 0 MB/s" '[ $rc = 0 ] && json_ok && [ "$(jp "len(d[\"mbps\"])")" = $nn ] && [ "$(jp "all(all(c > 0 for c in r) for r in d[\"mbps\"])")" = True ]'
t "numa bw --runs 2: accepted and reported" '[ "$(jp "(d[\"runs\"], d[\"measured\"], d[\"traffic\"], d[\"per_thread_size\"])")" = "(2, True, '"'"'read'"'"', $((16 * MiB)))" ]'
t "numa bw: one thread per CPU of node 0 ($node0_cpus)" '[ "$(jp "d[\"threads\"][0]")" = $node0_cpus ] && [ "$(jp "d[\"load_threads\"][0]")" = $((node0_cpus - 1)) ] && [ "$(jp "d[\"memory_needed\"][0]")" = $(((node0_cpus + 1) * 16 * MiB)) ]'
t "numa bw: idle latency per node pair > 0 ns" '[ "$(jp "[len(r) for r in d[\"idle_latency_ns\"]] == [$nn] * $nn and all(c > 0 for r in d[\"idle_latency_ns\"] for c in r)")" = True ]'
t "numa bw: loaded latency > 0 ns where a CPU is left for load, else null" '[ "$(jp "all((c is not None and c > 0) if d[\"load_threads\"][i] else c is None for i, r in enumerate(d[\"loaded_latency_ns\"]) for c in r)")" = True ]'
t "numa bw: a cache-to-cache cell > 0 ns per pair of CPUs, null where there is none" '[ "$(jp "len(d[\"c2c_latency_ns\"]) == $nn and all(len(r) == $nn for r in d[\"c2c_latency_ns\"]) and all((c is not None and c > 0) if d[\"c2c_cpus\"][i][j] else c is None for i, r in enumerate(d[\"c2c_latency_ns\"]) for j, c in enumerate(r))")" = True ]'
echo "# numa bw here: MB/s $(jp "d[\"mbps\"]") idle ns $(jp "d[\"idle_latency_ns\"]") loaded ns $(jp "d[\"loaded_latency_ns\"]") cache-to-cache ns $(jp "d[\"c2c_latency_ns\"]")"
if [ "$nn" = 1 ]; then
	t "numa bw on one node: no ratio, no false alarm" '[ "$(jp "d[\"worst_ratio\"]")" = None ] && [ "$(jp "d[\"flagged\"]")" = False ] && [ "$(jp "d[\"threshold\"]")" = 0.25 ]'
else
	t "numa bw: a ratio per remote pair" '[ "$(jp "d[\"worst_ratio\"] > 0")" = True ]'
fi
run -j numa bw --size 16M --seconds 0.05 --runs 1 --traffic rw
t "numa bw --traffic rw: runs, every cell > 0 MB/s, write buffers counted" '[ $rc = 0 ] && [ "$(jp "d[\"traffic\"]")" = rw ] && [ "$(jp "all(c > 0 for r in d[\"mbps\"] for c in r)")" = True ] && [ "$(jp "d[\"memory_needed\"][0]")" = $(((2 * node0_cpus + 1) * 16 * MiB)) ]'
echo "# numa bw --traffic rw here: MB/s $(jp "d[\"mbps\"]")"
run -j numa bw --size 16M --seconds 0.02 --runs 1 --hugepages
t "numa bw --hugepages: hugetlb, or THP with the reason on stderr" '[ $rc = 0 ] && case $(jp "d[\"pages\"]") in hugetlb) true;; thp) haserr "using transparent huge pages";; *) false;; esac && [ "$(jp "all(c > 0 for r in d[\"mbps\"] for c in r)")" = True ]'
run numa bw --size 16M --seconds 0.02 --runs 1 --threads 1
t "numa bw: the human matrices" '[ $rc = 0 ] && has "16 MiB per thread (--size)" && has "node 0: 1 bandwidth threads" && has "bandwidth, MB/s" && has "idle latency, ns" && has "loaded latency, ns" && has "cache-to-cache transfer latency, ns" && has "cpu\\mem" && [ "$(grep -c "^0  " <<<"$out")" = 4 ]'
if [ "$nn" = 1 ]; then
	t "numa bw on one node: cache-to-cache runs within it and says so" 'has "one NUMA node: cache-to-cache within node" && grep -q "^0  *[0-9.-]" <<<"$(sed -n "/^cache-to-cache transfer latency/,\$p" <<<"$out")"'
fi
for bad in "--size 12Q" "--size 100" "--threads 0" "--threads x" "--seconds 0" "--seconds 99" "--seconds" "--runs 0" "--runs 101" "--runs x" "--runs" "--traffic write" "--traffic" "--bogus 1"; do
	run numa bw $bad
	t "numa bw $bad: usage error" '[ $rc = 2 ] && one_line_err && [ "$(grep -c . <<<"$err")" = 1 ] && [ -z "$out" ]'
done
run numa frob
t "numa: unknown verb" '[ $rc = 2 ] && haserr "unknown numa verb '"'"'frob'"'"' (bw)"'
