#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# aheadfs_env.sh TEST [ARGS]: what scripts/guest-run sets up for a selftest,
# for a test run on its own (by run_kselftest.sh, say).  A selftest with no
# $AHEADFS_SCRATCH re-runs itself under this when it is installed beside it
# (the programs from aheadfs_test.h, the scripts from their first lines).
# It needs root; loads aheadfs if it is not loaded (modprobe, else insmod
# $AHEADFS_KO); makes a $AHEADFS_FSTYPE lower (ext4 unless set; or xfs) on a
# loop device over a sparse image in $TMPDIR (/tmp unless set); runs TEST
# with AHEADFS_SCRATCH set to an empty directory on it; then unmounts what
# the test left, the lower and the image.  Exits with TEST's status, 4
# (kselftest's skip) when it cannot set up, 1 when TEST left mounts behind.
#
# kselftest: not installed (as a test: it is installed as a TEST_FILE)
# Not executable on purpose: scripts/guest-run runs every executable
# selftests/*.sh as a test.
set -u

t=${1:?usage: aheadfs_env.sh TEST [ARGS]}
shift
name=$(basename "$t" .sh)
fstype=${AHEADFS_FSTYPE:-ext4}
size=${AHEADFS_LOWER_SIZE:-1200M}
skip() { echo "# aheadfs_env: $name: SKIP: $*"; exit 4; }
say() { echo "# aheadfs_env: $*" >&2; }

[ "$(id -u)" = 0 ] || skip "needs root"
if [ ! -e /sys/module/aheadfs ]; then
	if modprobe aheadfs 2>/dev/null; then
		say "loaded aheadfs with modprobe"
	elif [ -n "${AHEADFS_KO:-}" ] && insmod "$AHEADFS_KO"; then
		say "loaded aheadfs from $AHEADFS_KO"
	else
		skip "aheadfs is not loaded, and modprobe aheadfs${AHEADFS_KO:+ and insmod $AHEADFS_KO} failed: install the module (make install, or the aheadfs-dkms package) or load it first"
	fi
fi
# The module file, for params.sh's modinfo and reloads.
if [ -z "${AHEADFS_KO:-}" ] && ko=$(modinfo -n aheadfs 2>/dev/null) && [ -f "$ko" ]; then
	export AHEADFS_KO=$ko
fi
case $fstype in
ext4 | xfs) ;;
*) skip "AHEADFS_FSTYPE=$fstype: ext4 or xfs" ;;
esac
command -v "mkfs.$fstype" >/dev/null || skip "mkfs.$fstype missing (e2fsprogs, xfsprogs)"

work=$(mktemp -d "${TMPDIR:-/tmp}/aheadfs-$name.XXXXXX") || skip "mktemp in ${TMPDIR:-/tmp}"
# mktemp makes it 0700: the tests act as other users on the lower too.
chmod 0755 "$work"
lower=$work/lower
cleanup() {
	local m
	for m in $(awk -v d="$lower/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	mountpoint -q "$lower" && { umount "$lower" 2>/dev/null || umount -l "$lower"; }
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

modprobe loop 2>/dev/null
mkdir "$lower" && truncate -s "$size" "$work/lower.img" || skip "no room for a $size image in $work"
case $fstype in
xfs) out=$(mkfs.xfs -q -f -m reflink=1 "$work/lower.img" 2>&1) ;;
*) out=$(mkfs.ext4 -q -F "$work/lower.img" 2>&1) ;;
esac || skip "mkfs.$fstype: $out"
out=$(mount -o loop "$work/lower.img" "$lower" 2>&1) || skip "mount -o loop: $out"
mkdir "$lower/scratch"
say "$name over a $fstype lower at $lower"

AHEADFS_SCRATCH=$lower/scratch AHEADFS_FSTYPE=$fstype "$t" "$@"
rc=$?
left=$(awk -v d="$lower/scratch/" 'index($2, d) == 1 {print $2}' /proc/mounts)
if [ -n "$left" ]; then
	echo "# aheadfs_env: $name left $(wc -l <<<"$left") mounts behind: $(echo $left)"
	[ $rc = 0 ] && rc=1
fi
exit $rc
