#!/usr/bin/env bash
# SMB export of aheadfs (runs in a guest with aheadfs loaded, as root): the
# kernel's SMB server, ksmbd (ksmbd-tools' ksmbd.mountd, its configuration
# and user database on a tmpfs of the test's own), shares an aheadfs mount;
# the kernel's SMB client (cifs, SMB 3.1.1) mounts it over loopback.  A
# client's copy_file_range is a server-side copy (FSCTL_SRV_COPYCHUNK_WRITE)
# that lands as aheadfs copy_file_range calls, one per chunk, counted by
# the mount's stats and its aheadfs_copy tracepoint, with no read or write
# through aheadfs; the data is identical; and, from smb-checks.sh (the
# checks export-samba.sh makes with Samba too), a byte-range lock taken
# over SMB is on the lower and one held on the lower refuses the client's,
# a rename over SMB reaches the lower, a file changed on the lower is read
# new over SMB.  KTAP on stdout.
#
#   AHEADFS_SCRATCH=<empty dir on ext4> AHEADFS_FSTYPE=ext4 selftests/export-smb.sh
#
# The share has oplocks off (ksmbd's own, which nothing on the lower
# breaks: Documentation/copy-offload.rst, "Serving aheadfs over SMB").
# AHEADFS_SMB_SHARE_OPTS (lines put first in the share's section: the
# first of a key's lines is the one ksmbd-tools takes) and
# AHEADFS_SMB_MOUNT_OPTS (added to the client's mount options) try the
# checks against other settings: "oplocks = yes" with the client's
# default caching, say, which serves the changed file stale.
#
# guest-run: fstypes=ext4 (what is tested is ksmbd and the client above
# aheadfs; the lower's copy methods are copy.c's and export-nfs.sh's)
set -u
# Installed for run_kselftest.sh and run with no lower: aheadfs_env.sh makes one.
[ -n "${AHEADFS_SCRATCH:-}${AHEADFS_ENV_RUNNING:-}" ] || [ ! -r "$(dirname "$0")/aheadfs_env.sh" ] ||
	AHEADFS_ENV_RUNNING=1 exec bash "$(dirname "$0")/aheadfs_env.sh" "$0" "$@"

. "$(dirname "$0")/ktap.sh"
. "$(dirname "$0")/smb-checks.sh"

echo "TAP version 13"
[ "$(id -u)" = 0 ] || bail "needs root"
[ -n "${AHEADFS_SCRATCH:-}" ] && [ -d "$AHEADFS_SCRATCH" ] || bail "AHEADFS_SCRATCH is not a directory"
[ -e /sys/module/aheadfs ] || bail "aheadfs is not loaded"
for c in ksmbd.mountd ksmbd.adduser ksmbd.control mount.cifs xfs_io python3; do
	command -v $c >/dev/null || bail "$c missing (ksmbd-tools, cifs-utils, xfsprogs, python3: scripts/setup-deps)"
done

work=$AHEADFS_SCRATCH/smb
lower=$work/lower mnt=$work/share cli=$work/client etc=$work/etc
mkdir -p "$lower" "$mnt" "$cli" "$etc"
pass=aheadfs-test-$$
mountd= loaded= inst=
cleanup() {
	exec 5>&- 6<&- 2>/dev/null
	mountpoint -q "$cli" && { umount "$cli" 2>/dev/null || umount -f "$cli" 2>/dev/null || umount -l "$cli"; }
	if [ -n "$mountd" ]; then
		timeout 60 ksmbd.control --shutdown >/dev/null 2>&1
		kill "$mountd" 2>/dev/null
	fi
	# The server's shares hold their paths: only now can aheadfs go.
	for m in $loaded; do rmmod "$m" 2>/dev/null; done
	[ -z "$inst" ] || rmdir "$inst" 2>/dev/null
	mountpoint -q "$mnt" && { umount "$mnt" 2>/dev/null || umount -l "$mnt"; }
	mountpoint -q "$etc" && umount "$etc"
	rm -rf "$work"
}
trap cleanup EXIT

sid=
mount -t aheadfs "$lower" "$mnt" || bail "mount -t aheadfs $lower $mnt"
sid=$(stat -c '%Hd:%Ld' "$mnt")

# ksmbd.mountd's configuration and user database: on a tmpfs of ours, so
# that nothing of the machine's /etc/ksmbd is read or changed.  The share
# is the aheadfs mount, served to root (the SMB user maps to the local
# user of that name); the server listens on lo only.
mount -t tmpfs -o size=1M,mode=0700 aheadfs-smb-etc "$etc" || bail "mount a tmpfs for ksmbd's configuration"
cat >"$etc/ksmbd.conf" <<EOF
[global]
	bind interfaces only = yes
	interfaces = lo
	server min protocol = SMB2_10
	smb2 leases = no
[aheadfs]
${AHEADFS_SMB_SHARE_OPTS:-}
	path = $mnt
	writeable = yes
	browseable = no
	valid users = root
	create mask = 0644
	oplocks = no
EOF
# ksmbd-tools 3.5 (bookworm-backports) renamed the options of 3.4
# (bookworm) that name these two files.
if ksmbd.mountd --help 2>&1 | grep -q -- --pwddb; then
	confdb=(-C "$etc/ksmbd.conf" -P "$etc/ksmbdpwd.db")
	out=$(ksmbd.adduser "${confdb[@]}" -a -p "$pass" root 2>&1)
else
	confdb=(-c "$etc/ksmbd.conf" -u "$etc/ksmbdpwd.db")
	out=$(ksmbd.adduser -c "$etc/ksmbd.conf" -i "$etc/ksmbdpwd.db" -a root -p "$pass" 2>&1)
fi || bail "ksmbd.adduser: $out"

ip link set lo up
pgrep -x ksmbd.mountd >/dev/null && bail "ksmbd.mountd is already running: this test starts its own"
# AHEADFS_KSMBD_KO: a ksmbd.ko to load instead of the kernel's
# (scripts/ksmbd-build: Debian's 6.1 ksmbd oopses on an open given no
# oplock; scripts/guest-run sets it when it built one for the kernel).
if [ -n "${AHEADFS_KSMBD_KO:-}" ]; then
	[ ! -e /sys/module/ksmbd ] || rmmod ksmbd || bail "the kernel's ksmbd is loaded and busy: cannot load $AHEADFS_KSMBD_KO"
	for m in $(modinfo -F depends "$AHEADFS_KSMBD_KO" | tr , ' '); do
		modprobe "$m" || bail "modprobe $m (for $AHEADFS_KSMBD_KO)"
	done
	insmod "$AHEADFS_KSMBD_KO" || bail "insmod $AHEADFS_KSMBD_KO"
	loaded="ksmbd $loaded"
	echo "# ksmbd from $AHEADFS_KSMBD_KO"
fi
for m in ksmbd cifs; do
	[ -e /sys/module/$m ] && continue
	modprobe $m || bail "modprobe $m"
	loaded="$m $loaded"
done
# ksmbd.mountd forks once it has handed the configuration to ksmbd; the
# server listens (port 445 on lo) when ksmbd has started its threads.
ksmbd.mountd "${confdb[@]}" >"$work.mountd" 2>&1 ||
	bail "ksmbd.mountd: $(cat "$work.mountd")"
mountd=$(pgrep -o -x ksmbd.mountd) || bail "ksmbd.mountd is not running: $(cat "$work.mountd")"
listening() { grep -qE '^ *[0-9]+: [0-9A-F]+:01BD [0-9A-F]+:0000 0A ' /proc/net/tcp /proc/net/tcp6 2>/dev/null; }
for i in $(seq 300); do listening && break; sleep 0.1; done
listening || bail "ksmbd does not listen on port 445 after 30 s: $(cat "$work.mountd"; dmesg | tail -5)"
ok "ksmbd shares an aheadfs mount"

mopts="vers=3.1.1,username=root,password=$pass${AHEADFS_SMB_MOUNT_OPTS:+,$AHEADFS_SMB_MOUNT_OPTS}"
# Bounded: a server that dies mid-session leaves the client retrying.
if timeout 120 mount -t cifs //127.0.0.1/aheadfs "$cli" -o "$mopts" 2>"$work.err"; then
	ok "the SMB 3.1.1 client mounts the share over loopback"
else
	nok "the SMB 3.1.1 client mounts the share over loopback" "$(ksmbd.mountd -V 2>&1; cat "$work.err" "$work.mountd"; dmesg | tail -8)"
	bail "no SMB mount"
fi

# --- server-side copy ----------------------------------------------------
# The client's copy_file_range sends FSCTL_SRV_COPYCHUNK_WRITE, one chunk
# of at most 1 MiB per request (the Linux client's chunk size; ksmbd would
# take up to 2 GiB); ksmbd serves each with vfs_copy_file_range() on the
# two aheadfs files: one aheadfs copy per chunk, the chunked copy on ext4,
# and nothing read or written through aheadfs's read and write paths.
size=$(((8 << 20) + (256 << 10) + 4))
head -c "$size" /dev/urandom >"$cli/src" || bail "write over SMB"
chunks=$(((size + (1 << 20) - 1) >> 20))
check "a file written over SMB is the file in the lower" "$size 0" \
	"$(stat -c %s "$lower/src") $(cmp "$cli/src" "$lower/src" >/dev/null; echo $?)"

# The requests one by one, from the tracepoint, in an instance of our own.
tr=/sys/kernel/tracing
[ -d $tr/instances ] || mount -t tracefs nodev $tr 2>/dev/null
inst=$tr/instances/aheadfs-smb-$$
mkdir "$inst" 2>/dev/null && echo 1 >"$inst/events/aheadfs/aheadfs_copy/enable" || inst=
names="copy_reqs copy_bytes copy_chunked copy_txns read_reqs write_reqs copy_clone"
s0=$(stats $names)
out=$(xfs_io -f -c "copy_range $cli/src" "$cli/dst" 2>&1)
s1=$(stats $names)
check "copy_file_range over SMB" "" "$out"
read -r r0 b0 c0 t0 rd0 wr0 k0 <<<"$s0"
read -r r1 b1 c1 t1 rd1 wr1 k1 <<<"$s1"
echo "# copy_file_range of $size bytes over SMB: $((r1 - r0)) aheadfs copies ($((c1 - c0)) chunked, $((t1 - t0)) transactions) of $((b1 - b0)) bytes; $((rd1 - rd0)) reads, $((wr1 - wr0)) writes through aheadfs"
check "the server-side copy ran through aheadfs: copy_bytes is the file's size" "$size" $((b1 - b0))
check "one aheadfs copy_file_range per 1 MiB chunk (copy_reqs)" "$chunks" $((r1 - r0))
if [ "${AHEADFS_FSTYPE:-}" = xfs ]; then
	# make check-full: the lower clones each chunk (no byte read).
	method=clone
	check "on xfs the lower cloned each (copy_clone)" "$chunks" $((k1 - k0))
else
	method=chunked
	check "on ${AHEADFS_FSTYPE:-ext4} aheadfs copied each in transactions (copy_chunked)" "$chunks" $((c1 - c0))
fi
check "no data went through aheadfs's read or write path (read_reqs, write_reqs)" "0 0" \
	"$((rd1 - rd0)) $((wr1 - wr0))"
if [ -n "$inst" ]; then
	echo 0 >"$inst/events/aheadfs/aheadfs_copy/enable"
	# Each event: its len, pos_in and method; ascending 1 MiB chunks.
	tl=$(sed -nE "s/.*aheadfs_copy: dev=$sid in=[0-9]+@([0-9]+) out=[0-9]+@[0-9]+ len=([0-9]+) ret=([0-9-]+) .*method=([a-z]+).*/\1 \2 \3 \4/p" "$inst/trace")
	want=$(awk -v s="$size" -v m="$method" 'BEGIN { for (o = 0; o < s; o += 1048576) {
		l = s - o < 1048576 ? s - o : 1048576; print o, l, l, m } }')
	check "the aheadfs_copy events are the chunks, in order (offset, len, ret, method)" "$want" "$tl"
else
	nok "the aheadfs_copy events are the chunks, in order (offset, len, ret, method)" \
		"no tracefs instance at $tr/instances"
fi
check "copied data is identical, over SMB" 0 "$(cmp "$cli/src" "$cli/dst" >/dev/null; echo $?)"
check "copied data is identical, in the lower" 0 "$(cmp "$lower/src" "$lower/dst" >/dev/null; echo $?)"

# --- locks, rename, a file changed on the lower (smb-checks.sh) ----------
smb_check_all

umount "$cli" || nok "the SMB client unmounts" "$(grep " $cli " /proc/mounts)"
echo "1..$n"
