#!/usr/bin/env bash
# NFS export of aheadfs (runs in a guest with aheadfs loaded, as root): the
# kernel NFS server exports an aheadfs mount (fsid=), an NFS 4.2 client
# mounts it over loopback; cp inside the export is a server-side COPY
# (the client's COPY count and aheadfs's copy stats rise) with identical
# data; FICLONE from the client reaches the lower (xfs) or fails as there
# (ext4); the client's file handles survive a cache drop and a remount of
# aheadfs on the server.  KTAP on stdout.
#
#   AHEADFS_SCRATCH=<empty dir on ext4 or xfs> AHEADFS_FSTYPE=ext4|xfs \
#       selftests/export-nfs.sh
#
# guest-run: xfs-leaves-out=nfs-lower (aheadfs over the NFS client mount:
# its lower is the client, the same whatever the server's filesystem; the
# server's COPY, CLONE and file handles, which are the lower's, run on both)
set -u
# Installed for run_kselftest.sh and run with no lower: aheadfs_env.sh makes one.
[ -n "${AHEADFS_SCRATCH:-}${AHEADFS_ENV_RUNNING:-}" ] || [ ! -r "$(dirname "$0")/aheadfs_env.sh" ] ||
	AHEADFS_ENV_RUNNING=1 exec bash "$(dirname "$0")/aheadfs_env.sh" "$0" "$@"

. "$(dirname "$0")/ktap.sh"

echo "TAP version 13"
[ "$(id -u)" = 0 ] || bail "needs root"
[ -n "${AHEADFS_SCRATCH:-}" ] && [ -d "$AHEADFS_SCRATCH" ] || bail "AHEADFS_SCRATCH is not a directory"
[ -e /sys/module/aheadfs ] || bail "aheadfs is not loaded"
fstype=${AHEADFS_FSTYPE:-unknown}
for c in rpcbind rpc.nfsd rpc.mountd exportfs mount.nfs xfs_io; do
	command -v $c >/dev/null || bail "$c missing (nfs-kernel-server, nfs-common, rpcbind, xfsprogs)"
done

work=$AHEADFS_SCRATCH/nfs
lower=$work/lower mnt=$work/export cli=$work/client
mkdir -p "$lower" "$mnt" "$cli"
fsid=0
pids= leases=
cleanup() {
	exec 4<&- 2>/dev/null
	# aheadfs over the client first: a client mount under it cannot go,
	# and a walk into it once nfsd has stopped would wait for ever.
	[ -z "${upper:-}" ] || umount "$upper" 2>/dev/null || umount -l "$upper" 2>/dev/null
	umount -f "$cli" 2>/dev/null || umount -l "$cli" 2>/dev/null
	exportfs -u "127.0.0.1:$mnt" 2>/dev/null
	[ -z "$pids" ] || rpc.nfsd 0 2>/dev/null
	for p in $pids; do kill "$p"; done
	[ -z "$leases" ] || echo "$leases" >/proc/sys/fs/leases-enable
	umount "$mnt" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# The server's stat counter NAME of the aheadfs mount at $mnt.
stat_of() {
	local id
	id=$(stat -c '%Hd:%Ld' "$mnt") || return
	awk -v k="$1" '$1 == k { print $2 }' "/sys/fs/aheadfs/$id/stats"
}
# The client's count of NFS operation OP on the mount at $cli.
nfs_ops() {
	awk -v m=" $cli " -v op="$1:" '
		/^device / { mine = index($0, m) > 0 }
		mine && $1 == op { print $2; exit }' /proc/self/mountstats
}

mount -t aheadfs "$lower" "$mnt" || bail "mount -t aheadfs $lower $mnt"

# fsid=0 makes the export the NFSv4 root: the pseudo-root nfsd would
# otherwise build over the export's ancestors starts at the guest's 9p root,
# which cannot be exported.
# The guest sees the host's root read-only; virtme-ng lays writable
# overlays on /etc, /var and /tmp, which is all the daemons write to.
ip link set lo up
for m in nfsd; do modprobe $m || bail "modprobe $m"; done
mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || bail "mount nfsd"
mkdir -p /var/lib/nfs/v4recovery /run/rpcbind
: >/etc/exports
# No delegations: a client holding one keeps the file open in nfsd, and
# the remount below could not unmount aheadfs (6.1's unlock_filesystem
# does not revoke them).
leases=$(cat /proc/sys/fs/leases-enable)
echo 0 >/proc/sys/fs/leases-enable
# Each daemon forks once it is listening; the test stops what it started.
if ! pgrep -x rpcbind >/dev/null; then
	rpcbind -w || bail "rpcbind"
	pids="$pids $(pgrep -n -x rpcbind)"
fi
pgrep -x nfsd >/dev/null && bail "nfsd is already running: this test starts its own"
# Short lease and grace, ended at once: there is nothing to reclaim.
echo 10 >/proc/fs/nfsd/nfsv4leasetime
echo 10 >/proc/fs/nfsd/nfsv4gracetime
rpc.mountd --no-udp >/dev/null 2>&1 || bail "rpc.mountd"
pids="$pids $(pgrep -n -x rpc.mountd)"
rpc.nfsd --no-udp -V 4.2 4 || bail "rpc.nfsd"
echo Y >/proc/fs/nfsd/v4_end_grace
exportfs -o "rw,sync,no_root_squash,no_subtree_check,fsid=$fsid" "127.0.0.1:$mnt" ||
	bail "exportfs 127.0.0.1:$mnt"
ok "exportfs of an aheadfs mount with fsid="
if mount -t nfs -o vers=4.2,proto=tcp,port=2049,actimeo=0 127.0.0.1:/ "$cli" 2>"$work.err"; then
	ok "NFS 4.2 client mounts the export over loopback"
else
	nok "NFS 4.2 client mounts the export over loopback" "$(cat "$work.err"; dmesg | tail -5)"
	bail "no NFS mount"
fi

# --- server-side copy ----------------------------------------------------
head -c $((8 << 20)) /dev/urandom >"$cli/src"
printf 'tail' >>"$cli/src"
size=$(((8 << 20) + 4))

# copy_file_range on the client: always a COPY, served by aheadfs through
# the lower's clone (xfs) or its own copy in transactions (ext4).
copies=$(nfs_ops COPY) reqs=$(stat_of copy_reqs) bytes=$(stat_of copy_bytes)
clone=$(stat_of copy_clone) chunked=$(stat_of copy_chunked)
out=$(xfs_io -f -c "copy_range $cli/src" "$cli/dst" 2>&1)
check "copy_file_range inside the export" "" "$out"
if [ "$(nfs_ops COPY)" -gt "$copies" ]; then
	ok "copy_file_range was a server-side COPY (client mountstats)"
else
	nok "copy_file_range was a server-side COPY (client mountstats)" "COPY $copies -> $(nfs_ops COPY)"
fi
# nfsd copies in pieces (6.1: at most 4 MiB per synchronous COPY, and the
# client loops), each one copy_file_range through aheadfs.
dreqs=$(($(stat_of copy_reqs) - reqs))
check "the COPY ran through aheadfs (copy_bytes)" "$size" $(($(stat_of copy_bytes) - bytes))
check "the COPY ran through aheadfs (copy_reqs)" 1 $((dreqs > 0))
if [ "$fstype" = xfs ]; then
	check "on xfs the lower cloned each (copy_clone)" "$dreqs" $(($(stat_of copy_clone) - clone))
else
	check "on $fstype aheadfs copied each in transactions (copy_chunked)" "$dreqs" \
		$(($(stat_of copy_chunked) - chunked))
fi
check "copied data is identical, on the client" 0 "$(cmp "$cli/src" "$cli/dst" >/dev/null; echo $?)"
check "copied data is identical, in the lower" 0 "$(cmp "$lower/src" "$lower/dst" >/dev/null; echo $?)"

# GNU cp tries FICLONE first (a CLONE), then copy_file_range (a COPY).
copies=$(nfs_ops COPY) clones=$(nfs_ops CLONE) creqs=$(stat_of clone_reqs)
reqs=$(stat_of copy_reqs)
if cp "$cli/src" "$cli/cp" 2>"$work.err"; then
	ok "cp inside the export"
else
	nok "cp inside the export" "$(cat "$work.err")"
fi
check "cp data is identical" 0 "$(cmp "$cli/src" "$cli/cp" >/dev/null; echo $?)"
if [ "$fstype" = xfs ]; then
	check "on xfs cp was a server-side CLONE, into the lower (mountstats, clone_reqs)" \
		"1 1" "$(($(nfs_ops CLONE) - clones)) $(($(stat_of clone_reqs) - creqs))"
else
	check "on $fstype cp was a server-side COPY, through aheadfs (mountstats, copy_reqs)" \
		"1 1" "$(($(nfs_ops COPY) > copies)) $(($(stat_of copy_reqs) > reqs))"
	out=$(xfs_io -f -c "reflink $cli/src" "$cli/clone" 2>&1)
	if grep -q 'Operation not supported' <<<"$out"; then
		ok "FICLONE over NFS fails with EOPNOTSUPP, as on $fstype"
	else
		nok "FICLONE over NFS fails with EOPNOTSUPP, as on $fstype" "$out"
	fi
fi

# --- prefetch behind nfsd, and over an NFS lower --------------------------
# A client's sequential read reaches aheadfs as nfsd's READs, each through
# nfsd's cached open of the file: one stream, whose window keeps the reads
# after the first ones from finding bytes absent.  One nfsd thread serves
# them, in the client's order: with 4, how far the READs arrive out of order
# is the scheduler's, and 4 absent of 1028 was seen once.  With one thread:
# 1 absent on ext4, 1 or 2 on xfs (6.12: 1028 reads, 2 absent, Nov 2026);
# at most 4 leaves room for twice that.  The window's tolerance of
# reordering is the unit tests' and prefetch's four_readers_one_file.
head -c $((64 << 20)) /dev/urandom >"$cli/seq"
sync
echo 3 >/proc/sys/vm/drop_caches
echo 1 >/proc/fs/nfsd/threads
r0=$(stat_of read_reqs) a0=$(stat_of absent_reqs)
dd if="$cli/seq" of=/dev/null bs=1M status=none
reqs=$(($(stat_of read_reqs) - r0)) absent=$(($(stat_of absent_reqs) - a0))
echo 4 >/proc/fs/nfsd/threads
echo "# a client's 64 MiB read: $reqs reads through aheadfs, $absent found bytes absent"
if [ "$reqs" -ge 16 ] && [ "$absent" -le 4 ]; then
	ok "nfsd's reads of one client stream are one prefetch stream"
else
	nok "nfsd's reads of one client stream are one prefetch stream" "$reqs reads, $absent with absent bytes (want 16 or more, at most 4)"
fi

# aheadfs over the NFS client mount: the window works over an NFS lower,
# and a file changed on the server is never served stale through it.
# Its lower is the NFS client, whatever the server's filesystem: on xfs
# it is left out (AHEADFS_LEAVE_OUT=nfs-lower, scripts/guest-run; make
# check-full runs it there too).
upper=$work/upper
mkdir -p "$upper"
if [[ ,${AHEADFS_LEAVE_OUT:-}, == *,nfs-lower,* ]]; then
	echo "# AHEADFS_LEAVE_OUT=nfs-lower: aheadfs over the NFS client mount left out on $fstype"
elif mount -t aheadfs -o prefetch=ahead "$cli" "$upper" 2>"$work.err"; then
	uid=$(stat -c '%Hd:%Ld' "$upper")
	ustat() { awk -v k="$1" '$1 == k { print $2 }' "/sys/fs/aheadfs/$uid/stats"; }
	echo 3 >/proc/sys/vm/drop_caches
	r0=$(ustat read_reqs) a0=$(ustat absent_reqs) c0=$(ustat prefetch_chunks)
	same=$(cmp "$upper/seq" "$cli/seq" >/dev/null 2>&1; echo $?)
	reqs=$(($(ustat read_reqs) - r0)) absent=$(($(ustat absent_reqs) - a0))
	chunks=$(($(ustat prefetch_chunks) - c0))
	check "a file read through aheadfs over NFS is the file" 0 "$same"
	echo "# over NFS: $reqs reads, $absent found bytes absent, $chunks chunks prefetched"
	if [ "$chunks" -gt 0 ] && [ "$absent" -le 1 ]; then
		ok "the window works over an NFS lower"
	else
		nok "the window works over an NFS lower" "$reqs reads, $absent absent, $chunks chunks"
	fi
	# A copy through aheadfs between two files of the NFS lower is the
	# lower's own copy (copy_lower): the client sends COPY, and the data
	# never comes to it: no READ (nor WRITE) on the wire for the copied
	# range.  On the server the COPY lands in the exported aheadfs mount
	# as its copy_file_range (copy_bytes there).
	head -c $((6 << 20)) /dev/urandom >"$lower/csrc"
	printf tail >>"$lower/csrc"
	csize=$(((6 << 20) + 4))
	echo 3 >/proc/sys/vm/drop_caches
	u0=$(ustat copy_lower) ur0=$(ustat copy_reqs) uc0=$(ustat copy_chunked)
	# Reads: READ, and READ_PLUS, with which 6.12's client reads from a
	# 4.2 server.
	nfs_reads() { echo $(($(nfs_ops READ) + $(nfs_ops READ_PLUS || true) + 0)); }
	cp0=$(nfs_ops COPY) rd0=$(nfs_reads) wr0=$(nfs_ops WRITE) sb0=$(stat_of copy_bytes)
	out=$(xfs_io -f -c "copy_range $upper/csrc" "$upper/cdst" 2>&1)
	ureqs=$(($(ustat copy_reqs) - ur0)) ulower=$(($(ustat copy_lower) - u0))
	uchunk=$(($(ustat copy_chunked) - uc0))
	cps=$(($(nfs_ops COPY) - cp0)) rds=$(($(nfs_reads) - rd0)) wrs=$(($(nfs_ops WRITE) - wr0))
	sbytes=$(($(stat_of copy_bytes) - sb0))
	echo "# copy_file_range through aheadfs over NFS: $ureqs aheadfs copies ($ulower by the lower, $uchunk chunked); client COPY $cps, READ and READ_PLUS $rds, WRITE $wrs; server aheadfs copy_bytes $sbytes"
	check "copy_file_range through aheadfs over NFS" "" "$out"
	if [ "$ureqs" -ge 1 ] && [ "$ulower" = "$ureqs" ] && [ "$uchunk" = 0 ]; then
		ok "aheadfs over NFS hands the copy to the lower (copy_lower)"
	else
		nok "aheadfs over NFS hands the copy to the lower (copy_lower)" \
			"$ureqs copies, $ulower by the lower, $uchunk chunked"
	fi
	check "the copy is COPY on the wire, with no READ or WRITE (client mountstats: COPY>0 READ+READ_PLUS WRITE)" \
		"1 0 0" "$((cps > 0)) $rds $wrs"
	check "the server's aheadfs copied the file (copy_bytes)" "$csize" "$sbytes"
	check "data copied through aheadfs over NFS is identical, in the server's lower" 0 \
		"$(cmp "$lower/csrc" "$lower/cdst" >/dev/null; echo $?)"
	head -c $((16 << 20)) /dev/zero | tr '\0' 'A' >"$lower/stale"
	# Read whole: the window prefetches the file into the client's cache.
	a=$(tr -d 'A' <"$upper/stale" | wc -c; head -c 4 "$upper/stale")
	# Rewritten in place on the server, behind the client and aheadfs.
	head -c $((16 << 20)) /dev/zero | tr '\0' 'B' |
		dd of="$lower/stale" conv=notrunc status=none
	b=$(tr -d 'B' <"$upper/stale" | wc -c; head -c 4 "$upper/stale")
	check "a file changed on the server is read new through aheadfs over NFS" "0
AAAA 0
BBBB" "$a $b"
	# Permission checks from the attribute cache: each walk of a path
	# through aheadfs costs the client ACCESS and GETATTR calls per
	# directory with the caches off (actimeo=0), and next to none with
	# attr_timeout_ms and entry_timeout_ms on.
	mkdir -p "$lower/p/q/r" && echo x >"$lower/p/q/r/f"
	walks() {	# walks: ACCESS + GETATTR calls for 50 access(2) walks
		local a0 g0 l0 i
		a0=$(nfs_ops ACCESS) g0=$(nfs_ops GETATTR) l0=$(nfs_ops LOOKUP)
		for i in $(seq 50); do [ -r "$upper/p/q/r/f" ] || return 1; done
		echo "# ACCESS $(($(nfs_ops ACCESS) - a0)), GETATTR $(($(nfs_ops GETATTR) - g0)), LOOKUP $(($(nfs_ops LOOKUP) - l0))" >&2
		echo $(($(nfs_ops ACCESS) - a0 + $(nfs_ops GETATTR) - g0))
	}
	off=$(walks) || off=failed
	echo 60000 >"/sys/fs/aheadfs/$uid/attr_timeout_ms"
	echo 60000 >"/sys/fs/aheadfs/$uid/entry_timeout_ms"
	p0=$(ustat perm_cache_hits)
	walks >/dev/null	# the first walk fills the caches
	on=$(walks) || on=failed
	hits=$(($(ustat perm_cache_hits) - p0))
	echo "# 50 walks of p/q/r/f: $off ACCESS+GETATTR calls with the caches off, $on with them on ($hits checks from the cache)"
	if [ "$off" != failed ] && [ "$on" != failed ] && [ "$off" -ge 100 ] &&
	   [ $((on * 10)) -le "$off" ] && [ "$hits" -ge 200 ]; then
		ok "permission checks over NFS come from the attribute cache"
	else
		nok "permission checks over NFS come from the attribute cache" "off $off, on $on calls; $hits cache hits"
	fi
	# A refusal is never cached as a grant: the server refuses to write an
	# immutable file (its ACCESS reply), which the mode bits and root's
	# capabilities, all the client has, would allow.  Asked three times by
	# one process, on the client directly and through aheadfs with the
	# attribute cache on: refused each time on both.
	echo x >"$lower/imm" && chattr +i "$lower/imm"
	wok() {	# wok PATH: access(W_OK) of PATH three times, as 0/1 words
		python3 -c 'import os, sys; print(*[int(os.access(sys.argv[1], os.W_OK)) for _ in range(3)])' "$1"
	}
	a=$(wok "$cli/imm") b=$(wok "$upper/imm")
	chattr -i "$lower/imm"
	check "access(W_OK) of a file the NFS server refuses is refused each time through aheadfs as on the client" \
		"0 0 0 / 0 0 0" "$a / $b"
	# A grant is kept for the caller it was made to: root's read of a file
	# only root may read does not let nobody read it, right after.
	# (nobody reads a file open to all first: the path is walkable.)
	echo secret >"$lower/mine" && chmod 0600 "$lower/mine"
	echo open >"$lower/pub" && chmod 0644 "$lower/pub"
	asnobody() { setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }
	a=$(cat "$upper/mine" 2>&1; asnobody cat "$upper/pub" 2>&1
	    asnobody cat "$upper/mine" 2>/dev/null || echo refused)
	check "a permission granted to root over NFS is not granted to nobody from the cache" \
		"secret
open
refused" "$a"
	# A stat from the attribute cache is what a fresh stat would report:
	# after a write through the mount (the client's mtime is the server's,
	# set when close sends the pages), and while the file is mapped shared
	# and written (the stores dirty the client's pages without a call of
	# aheadfs's).  The same stat without a write is served from the cache.
	echo x >"$lower/w"
	fmt='%s %.9Y %.9Z'
	stat "$upper/w" >/dev/null
	h0=$(ustat attr_cache_hits)
	same=$(stat -c "$fmt" "$upper/w")
	hits=$(($(ustat attr_cache_hits) - h0))
	check "a repeated stat over NFS is served from the attribute cache" \
		"1 $(stat -c "$fmt" "$cli/w")" "$hits $same"
	printf more >>"$upper/w"
	a=$(stat -c "$fmt" "$upper/w")
	check "a stat after a write through the mount over NFS is a fresh one" \
		"$(stat -c "$fmt" "$cli/w")" "$a"
	a=$(python3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 0)
m[0:1] = b"Y"
s = os.stat(sys.argv[1])
print(s.st_size, "%d.%09d" % divmod(s.st_mtime_ns, 10**9), "%d.%09d" % divmod(s.st_ctime_ns, 10**9))
m.close()
' "$upper/w" 2>&1)
	check "a stat over NFS while a shared mapping is written is a fresh one" \
		"$(stat -c "$fmt" "$cli/w")" "$a"
	# Readdir priming: ls -l of files the client has never looked up.
	# With the entry cache off, each name costs the client LOOKUPs or GETATTRs
	# (noac); with entry_timeout_ms on, the listing's READDIRPLUS brings
	# every entry's attributes, aheadfs stamps them into its dentries and
	# inodes as it passes the entries up, and the stats that follow ask
	# nothing more.  Either way the listing is the client's own.  1500
	# files are several of the client's batches: past the first, it reads
	# with READDIRPLUS only because aheadfs read the directory ahead.  The
	# calls left are the directory's own: its LOOKUP and ACCESS, and a
	# GETATTR for each of the client's readdir calls (noac).
	now_ms() { echo $(($(date +%s%N) / 1000000)); }
	lsl() {	# lsl DIR: ls -l of DIR into $listing, the calls it cost in $calls, its ms in $took
		local l0 g0 a0 r0 p0 t0
		l0=$(nfs_ops LOOKUP) g0=$(nfs_ops GETATTR) a0=$(nfs_ops ACCESS)
		r0=$(nfs_ops READDIR) p0=$(ustat entries_primed) t0=$(now_ms)
		listing=$(ls -ln --full-time "$1") || listing="ls failed"
		took=$(($(now_ms) - t0))
		calls=$(($(nfs_ops LOOKUP) - l0 + $(nfs_ops GETATTR) - g0 + $(nfs_ops ACCESS) - a0))
		readdirs=$(($(nfs_ops READDIR) - r0))
		primed=$(($(ustat entries_primed) - p0))
		echo "# ls -l of ${1##*/}: $readdirs READDIR, $calls LOOKUP+GETATTR+ACCESS, $primed primed, $took ms"
	}
	mkdir "$lower/many0" && (cd "$lower/many0" && seq -f 'f%g' 300 | xargs touch)
	mkdir "$lower/many1" && (cd "$lower/many1" && seq -f 'f%g' 1500 | xargs touch)
	echo 0 >"/sys/fs/aheadfs/$uid/entry_timeout_ms"
	lsl "$upper/many0"
	off=$calls offprimed=$primed
	check "with the entry cache off, ls -l through aheadfs over NFS is the client's" \
		"$(ls -ln --full-time "$cli/many0")" "$listing"
	echo 60000 >"/sys/fs/aheadfs/$uid/entry_timeout_ms"
	lsl "$upper/many1"
	took1=$took
	check "with readdir priming, ls -l through aheadfs over NFS is the client's" \
		"$(ls -ln --full-time "$cli/many1")" "$listing"
	if [ "$off" -ge 300 ] && [ "$offprimed" = 0 ] && [ "$primed" -ge 1500 ] &&
	   [ "$calls" -le 20 ]; then
		ok "readdir priming: ls -l of 1500 files over NFS costs the listing's calls, not one per file"
	else
		nok "readdir priming: ls -l of 1500 files over NFS costs the listing's calls, not one per file" \
			"entry cache off, 300 files: $off calls, $offprimed primed; on, 1500 files: $calls calls, $primed primed (want 300 or more calls off, none primed; 1500 or more primed and at most 20 calls on)"
	fi
	# Repeated within the timeouts, the listing is read back from the
	# client's readdir cache (no READDIR): what the first one's
	# READDIRPLUS brought is still good, and is primed again.
	lsl "$upper/many1"
	if [ "$readdirs" = 0 ] && [ "$calls" -le 20 ] && [ "$primed" -ge 1500 ]; then
		ok "readdir priming: ls -l repeated within the timeouts reads the client's readdir cache"
	else
		nok "readdir priming: ls -l repeated within the timeouts reads the client's readdir cache" \
			"$readdirs READDIR, $calls LOOKUP+GETATTR+ACCESS, $primed primed (want no READDIR, at most 20 calls, 1500 or more primed)"
	fi
	# The readdir cache (readdir_cache=1, within entry_timeout_ms): a
	# repeated listing asks the client nothing (under noac each of the
	# client's readdir calls sends a GETATTR of the directory), a name the
	# server adds is not listed within the timeout, and is at once with the
	# cache off.  The timeout is the longest there is for these checks, so
	# that no host is slow enough for it to run out between them.
	echo 3600000 >"/sys/fs/aheadfs/$uid/entry_timeout_ms"
	echo 1 >"/sys/fs/aheadfs/$uid/readdir_cache"
	ls -f "$upper/many1" >/dev/null
	r0=$(nfs_ops READDIR) g0=$(nfs_ops GETATTR) h0=$(ustat readdir_cache_hits)
	n1=$(ls -f "$upper/many1" | wc -l)
	check "with the readdir cache, a repeated listing over NFS asks the client nothing (READDIR, GETATTR, entries)" \
		"0 0 1502" "$(($(nfs_ops READDIR) - r0)) $(($(nfs_ops GETATTR) - g0)) $n1"
	check "with the readdir cache, the repeated listing is answered from it" \
		1 "$(($(ustat readdir_cache_hits) > h0))"
	touch "$lower/many1/late"
	check "with the readdir cache, a name the server adds is not listed within the timeout" \
		0 "$(ls -f "$upper/many1" | grep -cx late)"
	echo 0 >"/sys/fs/aheadfs/$uid/readdir_cache"
	check "with the readdir cache off, the name the server added is listed at once" \
		1 "$(ls -f "$upper/many1" | grep -cx late)"
	echo 60000 >"/sys/fs/aheadfs/$uid/entry_timeout_ms"
	# After the timeouts ran out: the client's readdir cache of many1 is
	# still valid (noac revalidates it by the directory's change
	# attribute, which a chmod or a write of a file leaves alone), so it
	# would list the directory again without attributes, and the stats
	# would cost one GETATTR per file, as on the client alone.  Priming
	# has the client read it again with READDIRPLUS and re-stamps what
	# the server just returned: the listing after the timeouts costs the
	# listing's calls again, and shows what was changed on the server
	# after the first one.  Both timeouts short, with the readdir cache
	# on; then the attribute timeout alone short, where the readdir
	# cache's listing, kept for the entry timeout, would be served
	# without priming.  Short is 2 s, or four times what the first primed
	# listing above took if that is longer: a listing must end within
	# it, or the stats of its first entries find them expired (a slow
	# host).  The wait is computed: until the timeouts have run out since
	# the first listing ended.
	short=$((took1 * 4 > 2000 ? took1 * 4 : 2000))
	[ "$short" -le 30000 ] || short=30000
	echo 1 >"/sys/fs/aheadfs/$uid/readdir_cache"
	for t in "$short $short both timeouts short" "$short 3600000 the attribute timeout alone short"; do
		read -r at et what <<<"$t"
		echo "# attr_timeout_ms $at, entry_timeout_ms $et"
		echo "$at" >"/sys/fs/aheadfs/$uid/attr_timeout_ms"
		echo "$et" >"/sys/fs/aheadfs/$uid/entry_timeout_ms"
		lsl "$upper/many1"
		first=$calls
		end=$(now_ms)
		chmod 0604 "$mnt/many1/f7"
		printf 'changed on the server' >>"$mnt/many1/f9"
		want=$(stat -c '%A %s' "$mnt/many1/f7" "$mnt/many1/f9")
		while [ $(($(now_ms) - end)) -le $((at + 200)) ]; do sleep 0.1; done
		lsl "$upper/many1"
		# As listed, and as a stat right after it (from the cache) reports.
		got=$(awk '$NF == "f7" || $NF == "f9" { print substr($1, 1, 10), $5 }' <<<"$listing"
		      stat -c '%A %s' "$upper/many1/f7" "$upper/many1/f9")
		check "after the attribute timeout ran out ($what), ls -l through aheadfs over NFS is the client's" \
			"$(ls -ln --full-time "$cli/many1")" "$listing"
		check "after the attribute timeout ran out ($what), a change on the server is seen" "$want
$want" "$got"
		if [ "$calls" -le 20 ] && [ "$primed" -ge 1500 ]; then
			ok "after the attribute timeout ran out ($what), ls -l of 1500 files over NFS costs the listing's calls, not one per file"
		else
			nok "after the attribute timeout ran out ($what), ls -l of 1500 files over NFS costs the listing's calls, not one per file" \
				"first listing $first calls; after the timeouts: $calls LOOKUP+GETATTR+ACCESS, $readdirs READDIR, $primed primed (want at most 20 calls, 1500 or more primed)"
		fi
		chmod 0644 "$mnt/many1/f7"
	done
	echo 0 >"/sys/fs/aheadfs/$uid/readdir_cache"
	echo 60000 >"/sys/fs/aheadfs/$uid/attr_timeout_ms"
	echo 60000 >"/sys/fs/aheadfs/$uid/entry_timeout_ms"
	# Negative entries follow negative_timeout_ms, not entry_timeout_ms: off
	# (the default), a name created on the server is seen at once even with
	# the entry cache on; on, a name looked up and missing stays missing
	# within it (counted), unless the mount itself creates it.
	gone() { [ ! -e "$upper/$1" ] && echo missing || echo exists; }
	a=$(gone neg0)
	echo x >"$lower/neg0"
	check "with negative_timeout_ms 0, a name created on the server is seen at once" \
		"missing exists" "$a $(gone neg0)"
	echo 60000 >"/sys/fs/aheadfs/$uid/negative_timeout_ms"
	n0=$(ustat negative_cache_hits)
	a=$(gone neg1)
	echo x >"$lower/neg1"
	a="$a $(gone neg1)"
	check "with negative_timeout_ms on, a missing name stays missing within it (from the cache)" \
		"missing missing 1" "$a $(($(ustat negative_cache_hits) > n0))"
	a=$(gone neg2)
	echo y >"$upper/neg2"
	check "with negative_timeout_ms on, the mount's own create is seen at once" \
		"missing exists y" "$a $(gone neg2) $(cat "$lower/neg2")"
	echo 0 >"/sys/fs/aheadfs/$uid/negative_timeout_ms"
	check "with negative_timeout_ms back at 0, the server's name is seen" exists "$(gone neg1)"
	# Taken away on the server: seen once the attribute timeout ends.
	chmod 0700 "$lower/p/q"
	echo 0 >"/sys/fs/aheadfs/$uid/attr_timeout_ms"
	echo 0 >"/sys/fs/aheadfs/$uid/entry_timeout_ms"
	check "with the caches off, a permission taken away on the server is refused at once" \
		1 "$(setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$upper/p/q/r/f"; echo $?)"
	umount "$upper" || nok "aheadfs over NFS unmounts" "$(grep " $upper " /proc/mounts)"
else
	nok "aheadfs mounts over an NFS 4.2 client mount" "$(cat "$work.err"; dmesg | tail -3)"
fi

# --- file handles --------------------------------------------------------
mkdir -p "$cli/d1/d2" && printf 'hello\n' >"$cli/d1/d2/f"
# The client keeps the directory's handle as long as this descriptor lives;
# every use of it below sends that handle to the server.
exec 4<"$cli/d1/d2"
echo 2 >/proc/sys/vm/drop_caches
check "directory handle works after a cache drop" "f" "$(ls /proc/self/fd/4/)"
check "file by name in it after a cache drop" "hello" "$(cat /proc/self/fd/4/f)"

exportfs -u "127.0.0.1:$mnt"
echo "$mnt" >/proc/fs/nfsd/unlock_filesystem
# nfsd's file cache lets go of the files it held open in its own time (its
# laundrette, about 2 s): busy until then, so retried for up to 30 s.
for i in $(seq 300); do
	umount "$mnt" 2>"$work.err" && break
	grep -qi busy "$work.err" || break
	sleep 0.1
done
if ! mountpoint -q "$mnt"; then
	ok "aheadfs unmounted under the export"
else
	nok "aheadfs unmounted under the export" "$(cat "$work.err"; grep " $mnt " /proc/mounts)"
fi
mount -t aheadfs "$lower" "$mnt" || bail "mount -t aheadfs again"
exportfs -f
exportfs -o "rw,sync,no_root_squash,no_subtree_check,fsid=$fsid" "127.0.0.1:$mnt" ||
	bail "exportfs again"
echo 2 >/proc/sys/vm/drop_caches
check "directory handle works after a remount" "f" "$(ls /proc/self/fd/4/ 2>&1)"
check "file by name in it after a remount" "hello" "$(cat /proc/self/fd/4/f 2>&1)"
printf 'more\n' >>/proc/self/fd/4/f
check "written through the old handle after a remount" "hello
more" "$(cat "$lower/d1/d2/f")"
exec 4<&-

check "the copy is still identical after the remount" 0 "$(cmp "$cli/src" "$cli/dst" >/dev/null; echo $?)"

echo "1..$n"
