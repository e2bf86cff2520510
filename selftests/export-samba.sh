#!/usr/bin/env bash
# SMB export of aheadfs by Samba (runs in a guest with aheadfs loaded, as
# root): smbd, chrooted into the Samba root scripts/samba-root builds
# (build/samba-root: Debian's samba conflicts with the ksmbd-tools of the
# guest's root, export-smb.sh's server), shares an aheadfs mount, started
# and stopped by scripts/smb-share --server samba (its configuration and
# state on a tmpfs of the test's own); the kernel's SMB client (cifs, SMB
# 3.1.1) mounts it over loopback.  KTAP on stdout.
#
#   AHEADFS_SCRATCH=<empty dir on ext4> AHEADFS_FSTYPE=ext4 selftests/export-samba.sh
#
# What is checked, from the client's side (its own counts of SMB requests
# in /proc/fs/cifs/Stats) and from aheadfs's (its stats):
# - a client's copy_file_range is a server-side copy (the client sends
#   FSCTL_SRV_COPYCHUNK_WRITE IOCTLs, no READ or WRITE): between two files
#   of the aheadfs mount Samba (4.17, vfs_default) copies each chunk with
#   copy_file_range(2) on the two aheadfs files, one aheadfs copy per 1 MiB
#   chunk and no read through aheadfs; to another filesystem (a share
#   holding the aheadfs mount and an ext4 directory) copy_file_range fails
#   EXDEV and Samba falls back to its own pread and pwrite of each chunk:
#   the story's reader, 1 MiB reads through aheadfs's read path, no aheadfs
#   copy; both copies identical;
# - what export-smb.sh checks with ksmbd, from smb-checks.sh: byte-range
#   locks from both sides (one taken over SMB is an fcntl lock on the lower
#   file, Samba's "posix locking", and one held on the lower refuses the
#   client's), a rename over SMB reaches the lower, a file changed on the
#   lower is read new over SMB;
# - a read-only lower (aheadfs over a read-only bind mount, a share of its
#   own) refuses a write and a create over SMB, and the file stays.
# A Samba root that is missing is a failure (a bail-out), not a skip:
# scripts/setup-deps builds it.
#
# guest-run: fstypes=ext4 (what is tested is Samba and the client above
# aheadfs; the lower's copy methods are copy.c's and export-nfs.sh's)
# kselftest: not installed (it needs the tree's Samba root and scripts)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)

. "$(dirname "$0")/ktap.sh"
. "$(dirname "$0")/smb-checks.sh"

echo "TAP version 13"
[ "$(id -u)" = 0 ] || bail "needs root"
[ -n "${AHEADFS_SCRATCH:-}" ] && [ -d "$AHEADFS_SCRATCH" ] || bail "AHEADFS_SCRATCH is not a directory"
[ -e /sys/module/aheadfs ] || bail "aheadfs is not loaded"
for c in mount.cifs xfs_io python3; do
	command -v $c >/dev/null || bail "$c missing (cifs-utils, xfsprogs, python3: scripts/setup-deps)"
done
sroot=${AHEADFS_SAMBA_ROOT:-$top/build/samba-root}
[ -x "$sroot/usr/sbin/smbd" ] || bail "no Samba root at $sroot: scripts/samba-root builds it (scripts/setup-deps runs it)"
share=$top/scripts/smb-share
[ -x "$share" ] || bail "$share missing"

work=$AHEADFS_SCRATCH/samba
lower=$work/lower mnt=$work/share cli=$work/client etc=$work/etc
mix=$work/mix mixcli=$work/mixclient
rolow=$work/rolower robind=$work/robind romnt=$work/roshare rocli=$work/roclient
mkdir -p "$lower" "$mnt" "$cli" "$etc" "$mix/a" "$mix/t" "$mixcli" "$rolow" "$robind" "$romnt" "$rocli"
export AHEADFS_SMB_PASSWORD=aheadfs-test-$$
started=
cleanup() {
	exec 5>&- 2>/dev/null
	local m
	for m in "$mixcli" "$rocli"; do
		mountpoint -q "$m" && { umount "$m" 2>/dev/null || umount -f "$m" 2>/dev/null || umount -l "$m"; }
	done
	[ -z "$started" ] || "$share" --server samba stop "$cli" "$etc" >&2
	for m in "$mix/a" "$romnt" "$robind" "$mnt"; do
		mountpoint -q "$m" && { umount "$m" 2>/dev/null || umount -l "$m"; }
	done
	rm -rf "$work"
}
trap cleanup EXIT

sid= rosid=
mount -t aheadfs "$lower" "$mnt" || bail "mount -t aheadfs $lower $mnt"
sid=$(stat -c '%Hd:%Ld' "$mnt")
# The second share: the same aheadfs mount bound beside an ext4 directory
# (the scratch's), so that a copy from one to the other crosses
# filesystems.
mount --bind "$mnt" "$mix/a" || bail "bind $mnt on $mix/a"
# The third: aheadfs over a read-only bind mount of a directory.
printf 'unchanged\n' >"$rolow/f"
mount --bind "$rolow" "$robind" && mount -o remount,bind,ro "$robind" || bail "read-only bind of $rolow"
mount -t aheadfs "$robind" "$romnt" || bail "mount -t aheadfs $robind $romnt"

started=1
if out=$("$share" --server samba start "$mnt" "$cli" "$etc" "mix=$mix" "ro=$romnt" 2>&1); then
	ok "Samba's smbd (chrooted in $sroot) shares an aheadfs mount; the SMB 3.1.1 client mounts it"
	echo "# $(chroot "$etc/root" /usr/sbin/smbd --version 2>&1)"
else
	nok "Samba's smbd (chrooted in $sroot) shares an aheadfs mount; the SMB 3.1.1 client mounts it" \
		"$out
$(tail -n 30 "$etc"/rw/var/log/samba/log.* "$etc"/rw/var/log/samba/smbd.out 2>&1; dmesg | tail -n 10)"
	bail "no SMB mount"
fi
mopts="vers=3.1.1,username=root,password=$AHEADFS_SMB_PASSWORD"
for s in mix:"$mixcli" ro:"$rocli"; do
	timeout 120 mount -t cifs "//127.0.0.1/${s%%:*}" "${s#*:}" -o "$mopts" 2>"$work.err" ||
		bail "mount -t cifs //127.0.0.1/${s%%:*}: $(cat "$work.err"; dmesg | tail -n 5)"
done
[ -r /proc/fs/cifs/Stats ] && [ -n "$(smb_sent aheadfs Reads)" ] ||
	bail "no per-share counts in /proc/fs/cifs/Stats: $(head -c 2000 /proc/fs/cifs/Stats 2>&1)"

size=$(((8 << 20) + (256 << 10) + 4))
chunks=$(((size + (1 << 20) - 1) >> 20))
head -c "$size" /dev/urandom >"$cli/src" || bail "write over SMB"
check "a file written over SMB is the file in the lower" "$size 0" \
	"$(stat -c %s "$lower/src") $(cmp "$cli/src" "$lower/src" >/dev/null; echo $?)"

# --- server-side copy within the aheadfs mount ---------------------------
names="copy_reqs copy_bytes copy_chunked read_reqs read_bytes write_reqs"
# copy SHARE SRC DST: copy_file_range over SMB; prints the client's READ,
# WRITE and IOCTL requests and the aheadfs counters' changes, one line.
copy() {
	local c0 c1 s0 s1 out
	c0="$(smb_sent "$1" Reads) $(smb_sent "$1" Writes) $(smb_sent "$1" IOCTLs)"
	s0=$(stats $names)
	out=$(xfs_io -f -c "copy_range $2" "$3" 2>&1)
	s1=$(stats $names)
	c1="$(smb_sent "$1" Reads) $(smb_sent "$1" Writes) $(smb_sent "$1" IOCTLs)"
	[ -z "$out" ] || echo "xfs_io: $out" >&2
	paste -d' ' <(tr ' ' '\n' <<<"$c1 $s1") <(tr ' ' '\n' <<<"$c0 $s0") | awk '{ printf "%d ", $1 - $2 }'
}
# copied_on_server WHAT SHARE SRC DST: copy over SMB, set the counts below
# from copy's line and check that the copy ran on the server.
copied_on_server() {
	read -r rd wr io cr cb cc rr rb wrq <<<"$(copy "$2" "$3" "$4" 2>"$work.cperr")"
	echo "# copy_file_range of $size bytes $1: the client sent $rd READs, $wr WRITEs, $io IOCTLs; aheadfs: $cr copies ($cc chunked) of $cb bytes, $rr reads of $rb bytes, $wrq writes"
	check "copy_file_range over SMB, $1" "" "$(cat "$work.cperr")"
	check "the client copied on the server: no READ or WRITE sent, an IOCTL a chunk at least" "0 0 yes" \
		"$rd $wr $([ "$io" -ge "$chunks" ] && echo yes || echo "no ($io)")"
}
copied_on_server "within the share" aheadfs "$cli/src" "$cli/dst"
check "within one aheadfs mount Samba copies each chunk with copy_file_range: copy_reqs, copy_bytes" \
	"$chunks $size" "$cr $cb"
check "and reads nothing through aheadfs (read_reqs, write_reqs)" "0 0" "$rr $wrq"
check "copied data is identical, in the lower" 0 "$(cmp "$lower/src" "$lower/dst" >/dev/null; echo $?)"

# --- server-side copy to another filesystem: Samba's own reads -----------
copied_on_server "from aheadfs to another filesystem" mix "$mixcli/a/src" "$mixcli/t/dst"
check "Samba read the source through aheadfs's read path: read_bytes, no aheadfs copy" \
	"$size 0" "$rb $cr"
check "in large reads: at most one aheadfs read (read_reqs) a 1 MiB chunk" \
	"yes" "$([ "$rr" -ge 1 ] && [ "$rr" -le "$chunks" ] && echo yes || echo "no: $rr reads of $rb bytes")"
check "copied data is identical, in the lower" 0 "$(cmp "$lower/src" "$mix/t/dst" >/dev/null; echo $?)"

# --- a read-only lower ---------------------------------------------------
check "a file of the read-only lower is read over SMB" unchanged "$(cat "$rocli/f" 2>&1)"
out=$(python3 -c '
import os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY)
    os.write(fd, b"changed\n")
    os.fsync(fd)
    os.close(fd)
    print("written")
except OSError as e:
    print("refused")' "$rocli/f" 2>&1)
check "a read-only lower refuses a write over SMB" refused "$out"
check "a read-only lower refuses a create over SMB" refused \
	"$( (: >"$rocli/new") 2>/dev/null && echo created || echo refused)"
check "the read-only lower's file is unchanged, and nothing was created" "unchanged absent" \
	"$(cat "$rolow/f") $([ -e "$rolow/new" ] && echo present || echo absent)"

# --- locks, rename, a file changed on the lower (smb-checks.sh) ----------
smb_check_all

for m in "$mixcli" "$rocli"; do umount "$m" || nok "the SMB client unmounts $m" "$(grep " $m " /proc/mounts)"; done
started=
out=$("$share" --server samba stop "$cli" "$etc" 2>&1)
check "smbd stops and its mounts go (smb-share stop)" "" "$out"
echo "1..$n"
