#!/usr/bin/env bash
# Module parameter selftests (runs in a guest with aheadfs loaded, and no
# aheadfs mount): the parameters are the defaults of new mounts.  Values
# given at insmod, and by the shipped modprobe.d file through modprobe, are
# what /sys/module/aheadfs/parameters/ and new mounts show; a mount option
# overrides them; a write to a parameter reaches later mounts only; values
# out of range are refused at insmod and at write, naming the parameter and
# its range in dmesg, and change nothing.  The module is reloaded here and
# left loaded with its defaults, whatever happens.  KTAP on stdout.
#
#   AHEADFS_SCRATCH=<empty dir> AHEADFS_KO=<aheadfs.ko> selftests/params.sh
#
# guest-run: fstypes=ext4 (its subject is the module, not the lower)
# guest-run: run by ksft-install (by run_kselftest.sh, once a kernel)
set -u
# Installed for run_kselftest.sh and run with no lower: aheadfs_env.sh makes one.
[ -n "${AHEADFS_SCRATCH:-}${AHEADFS_ENV_RUNNING:-}" ] || [ ! -r "$(dirname "$0")/aheadfs_env.sh" ] ||
	AHEADFS_ENV_RUNNING=1 exec bash "$(dirname "$0")/aheadfs_env.sh" "$0" "$@"

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
ko=${AHEADFS_KO:-$top/build/kmod/$(uname -r)/aheadfs.ko}
P=/sys/module/aheadfs/parameters
# The shipped modprobe.d file: the tree's; installed beside this test; or
# the one a package or `make install` put in /etc/modprobe.d.
conf=$top/kmod/aheadfs.modprobe.conf
for c in "$here/aheadfs.modprobe.conf" /etc/modprobe.d/aheadfs.conf.dist /etc/modprobe.d/aheadfs.conf; do
	[ -f "$conf" ] || conf=$c
done
params="prefetch txn_kb window_kb attr_timeout_ms entry_timeout_ms negative_timeout_ms readdir_cache fh_search_entries"
# The numeric ones.
nums=${params#prefetch }

. "$(dirname "$0")/ktap.sh"

echo "TAP version 13"
[ "$(id -u)" = 0 ] || bail "needs root"
[ -n "${AHEADFS_SCRATCH:-}" ] && [ -d "$AHEADFS_SCRATCH" ] || bail "AHEADFS_SCRATCH is not a directory"
[ -f "$ko" ] || bail "no module at $ko"
[ -e /sys/module/aheadfs ] || bail "aheadfs is not loaded"
grep -q ' aheadfs ' /proc/mounts && bail "aheadfs mounts exist: the module cannot be reloaded"

work=$AHEADFS_SCRATCH/params
mkdir -p "$work"
# The module is loaded 17 times: from a copy in a tmpfs, not over the 9p
# root a guest reads build/ from (3 MB each time, under TCG), and without
# its debug information (strip --strip-debug: what the kernel loads,
# .modinfo and the parameters included, is the same; a tenth of the bytes
# to read and copy).
kcopy=
for d in /dev/shm /run /tmp; do
	[ "$(stat -f -c %T "$d" 2>/dev/null)" = tmpfs ] || continue
	kcopy=$(mktemp -d "$d/aheadfs-params.XXXXXX") && break
done
if [ -n "$kcopy" ] && cp "$ko" "$kcopy/aheadfs.ko"; then
	ko=$kcopy/aheadfs.ko
	strip --strip-debug "$ko" 2>/dev/null || echo "# strip --strip-debug $ko failed: loading it whole"
else
	echo "# no tmpfs for a copy of the module: loading $ko"
fi
mounts=()

# The defaults and ranges, as modinfo documents them: "(default D)" and
# "MIN to MAX" in each description.
declare -A def lo hi
while IFS= read -r line; do
	p=${line%%:*}
	def[$p]=$(sed -nE 's/.*\(default ([a-z0-9]+).*/\1/p' <<<"$line")
	lo[$p]=$(sed -nE 's/.* ([0-9]+) to ([0-9]+).*/\1/p' <<<"$line")
	hi[$p]=$(sed -nE 's/.* ([0-9]+) to ([0-9]+).*/\2/p' <<<"$line")
done < <(modinfo -F parm "$ko")

# mark: a line in the kernel log; since_mark: what was logged after it.
# printk stores a record before it returns, so no wait is needed.
mark_n=0
mark() { mark_n=$((mark_n + 1)); echo "aheadfs-params: mark $mark_n" >/dev/kmsg; }
since_mark() { dmesg | awk -v m="aheadfs-params: mark $mark_n" 'f { print } index($0, m) { f = 1 }'; }

# Values of every parameter, "name=value ..." in $params order.
pvals() {
	local p out=
	for p in $params; do out="$out $p=$(cat "$P/$p" 2>&1)"; done
	echo "${out# }"
}
defaults() {
	local p out=
	for p in $params; do out="$out $p=${def[$p]}"; done
	echo "${out# }"
}
# Options of the mount at $1 (from /proc/mounts), "name=value ..." for $params.
mopts() {
	local o p out=
	o=$(awk -v m="$1" '$2 == m { print $4 }' /proc/mounts | tr , '\n')
	for p in $params; do out="$out $p=$(sed -n "s/^$p=//p" <<<"$o")"; done
	echo "${out# }"
}
# The same from the mount's sysfs tunables.
sopts() {
	local d p out=
	d=/sys/fs/aheadfs/$(stat -c '%Hd:%Ld' "$1")
	for p in $params; do out="$out $p=$(cat "$d/$p" 2>&1)"; done
	echo "${out# }"
}
# mnt NAME [OPTIONS]: a new mount over its own lower; its path in $m.
mnt() {
	m=$work/$1
	mkdir -p "$m.lower" "$m"
	mount -t aheadfs ${2:+-o "$2"} "$m.lower" "$m" || return 1
	mounts+=("$m")
}
umount_all() {
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[i]}" 2>/dev/null; done
	mounts=()
}
# Left loaded with its defaults, on every path out.
cleanup() {
	umount_all
	if [ ! -e /sys/module/aheadfs ] || [ "$(pvals)" != "$(defaults)" ]; then
		rmmod aheadfs 2>/dev/null
		insmod "$ko" || echo "# could not load $ko again"
	fi
	rm -rf "$work" "$work.modroot" ${kcopy:+"$kcopy"}
}
trap cleanup EXIT

# ---------------------------------------------------------------------
# 1. modinfo documents each parameter, one per mount option.
for p in $params; do
	d=$(modinfo -F parm "$ko" | sed -n "s/^$p://p")
	if [ -n "$d" ] && [ -n "${def[$p]}" ]; then
		ok "modinfo: $p has a description with its default"
	else
		nok "modinfo: $p has a description with its default" "got: '$d'"
	fi
done
for p in $nums; do
	if [ -n "${lo[$p]}" ] && [ -n "${hi[$p]}" ]; then
		ok "modinfo: $p has its range"
	else
		nok "modinfo: $p has its range" "$(modinfo -F parm "$ko" | grep "^$p:")"
	fi
done
check "modinfo: no parameter but these" "$(tr ' ' '\n' <<<"$params" | sort)" \
	"$(modinfo -F parm "$ko" | cut -d: -f1 | sort)"

# ---------------------------------------------------------------------
# 2. Out-of-range values refused at insmod, each with a line naming it.
rmmod aheadfs || bail "rmmod aheadfs"
# kmod's insmod says "Invalid parameters" for EINVAL.
bad_load() { # bad_load PARAM VALUE [MORE ARGS]
	local p=$1 v=$2 err want args
	shift 2
	args="$p=$v${*:+ $*}"
	mark
	if err=$(insmod "$ko" "$p=$v" "$@" 2>&1); then
		nok "insmod $args is refused" "insmod succeeded"
		rmmod aheadfs
		return
	fi
	if [ -e /sys/module/aheadfs ]; then
		nok "insmod $args is refused" "it failed ($err) but the module is loaded"
		return
	fi
	if [ "$p" = prefetch ]; then
		want="aheadfs: parameter $p: invalid value '$v' (valid: ahead, legacy, kernel, off)"
	else
		want="aheadfs: parameter $p: invalid value '$v' (valid: ${lo[$p]} to ${hi[$p]})"
	fi
	if ! grep -q 'Invalid parameters' <<<"$err"; then
		nok "insmod $args is refused with EINVAL" "insmod: $err"
	elif ! since_mark | grep -qF -- "$want"; then
		nok "insmod $args is refused, dmesg names it" "want: $want
dmesg: $(since_mark)"
	else
		ok "insmod $args is refused with EINVAL, dmesg names it and its range"
	fi
}
bad_load txn_kb $((lo[txn_kb] - 1))
bad_load txn_kb $((hi[txn_kb] + 1))
bad_load txn_kb abc
bad_load txn_kb -1
bad_load window_kb $((hi[window_kb] + 1))
bad_load attr_timeout_ms $((hi[attr_timeout_ms] + 1))
bad_load entry_timeout_ms $((hi[entry_timeout_ms] + 1))
bad_load negative_timeout_ms $((hi[negative_timeout_ms] + 1))
bad_load readdir_cache $((hi[readdir_cache] + 1))
bad_load fh_search_entries $((hi[fh_search_entries] + 1))
bad_load prefetch sometimes
# One bad value fails the load whatever the good ones beside it.
bad_load window_kb 99999999 txn_kb=1024 prefetch=legacy

# ---------------------------------------------------------------------
# 3. Values given at insmod: the parameters and new mounts show them.
given="prefetch=legacy txn_kb=1024 window_kb=16384 attr_timeout_ms=250 entry_timeout_ms=500 negative_timeout_ms=750 readdir_cache=1 fh_search_entries=1000"
# shellcheck disable=SC2086
insmod "$ko" $given || bail "insmod $ko $given"
check "insmod $given: parameters" "$given" "$(pvals)"
for p in $params; do
	check "parameters/$p is mode 0644" 644 "$(stat -c %a "$P/$p")"
done
mnt a || bail "mount a"
a=$m
check "a mount without options takes the parameters (/proc/mounts)" "$given" "$(mopts "$a")"
check "a mount without options takes the parameters (sysfs)" "$given" "$(sopts "$a")"
mnt b "txn_kb=4096,prefetch=ahead" || bail "mount b"
b=$m
check "mount options override the parameters" \
	"prefetch=ahead txn_kb=4096 window_kb=16384 attr_timeout_ms=250 entry_timeout_ms=500 negative_timeout_ms=750 readdir_cache=1 fh_search_entries=1000" "$(mopts "$b")"

# ---------------------------------------------------------------------
# 4. A write to a parameter reaches later mounts only.
new="prefetch=kernel txn_kb=2048 window_kb=32768 attr_timeout_ms=0 entry_timeout_ms=1000 negative_timeout_ms=2000 readdir_cache=0 fh_search_entries=0"
for kv in $new; do
	if ! err=$( (printf '%s\n' "${kv#*=}" >"$P/${kv%%=*}") 2>&1); then
		nok "write $kv to parameters/${kv%%=*}" "$err"
	fi
done
check "parameters after writes" "$new" "$(pvals)"
check "the mount made before the writes keeps its values" "$given" "$(mopts "$a")"
check "the mount made before the writes keeps its sysfs values" "$given" "$(sopts "$a")"
check "the mount with options keeps its values" \
	"prefetch=ahead txn_kb=4096 window_kb=16384 attr_timeout_ms=250 entry_timeout_ms=500 negative_timeout_ms=750 readdir_cache=1 fh_search_entries=1000" "$(mopts "$b")"
mnt c || bail "mount c"
c=$m
check "a mount made after the writes takes the new values" "$new" "$(mopts "$c")"
# A remount applies the options it is given, not the new defaults.
if mount -o remount,window_kb=8192 "$a"; then
	check "remount applies its option only, not the new parameters" \
		"prefetch=legacy txn_kb=1024 window_kb=8192 attr_timeout_ms=250 entry_timeout_ms=500 negative_timeout_ms=750 readdir_cache=1 fh_search_entries=1000" "$(mopts "$a")"
else
	nok "mount -o remount,window_kb=8192"
fi

# ---------------------------------------------------------------------
# 5. Bad writes fail, change nothing, and name the parameter and range.
bad_write() { # bad_write PARAM VALUE
	local p=$1 v=$2 before err want
	before=$(pvals)
	mark
	if err=$( (printf '%s\n' "$v" >"$P/$p") 2>&1); then
		nok "write '$v' to parameters/$p is refused" "the write succeeded: $(pvals)"
		return
	fi
	if [ "$p" = prefetch ]; then
		want="aheadfs: parameter $p: invalid value '$v' (valid: ahead, legacy, kernel, off)"
	else
		want="aheadfs: parameter $p: invalid value '$v' (valid: ${lo[$p]} to ${hi[$p]})"
	fi
	if ! grep -q 'Invalid argument' <<<"$err"; then
		nok "write '$v' to parameters/$p fails with EINVAL" "$err"
	elif [ "$(pvals)" != "$before" ]; then
		nok "write '$v' to parameters/$p changes nothing" "before: $before
after:  $(pvals)"
	elif ! since_mark | grep -qF -- "$want"; then
		nok "write '$v' to parameters/$p: dmesg names it" "want: $want
dmesg: $(since_mark)"
	else
		ok "write '$v' to parameters/$p: EINVAL, unchanged, dmesg names it and its range"
	fi
}
for p in $nums; do
	[ "${lo[$p]}" -gt 0 ] && bad_write "$p" $((lo[$p] - 1))
	bad_write "$p" $((hi[$p] + 1))
	bad_write "$p" 12abc
	bad_write "$p" ""
done
bad_write prefetch sometimes
bad_write prefetch ""
mnt d || bail "mount d"
check "a mount made after the refused writes has the last good values" "$new" "$(mopts "$m")"
# The ends of each range are accepted.
for p in $nums; do
	for v in "${lo[$p]}" "${hi[$p]}"; do
		if err=$( (printf '%s\n' "$v" >"$P/$p") 2>&1) && [ "$(cat "$P/$p")" = "$v" ]; then
			ok "write $v (an end of the range) to parameters/$p"
		else
			nok "write $v (an end of the range) to parameters/$p" "$err; reads $(cat "$P/$p")"
		fi
	done
done
for v in ahead legacy kernel off; do
	(printf '%s\n' "$v" >"$P/prefetch") 2>/dev/null
	check "write $v to parameters/prefetch" "$v" "$(cat "$P/prefetch")"
done

# ---------------------------------------------------------------------
# 6. The shipped modprobe.d file: each line uncommented gives the defaults,
# through modprobe (from a private module tree).
umount_all
rmmod aheadfs || bail "rmmod aheadfs"
root=$work.modroot rel=$(uname -r)
mkdir -p "$root/lib/modules/$rel/extra" "$work.conf"
cp "$ko" "$root/lib/modules/$rel/extra/"
sed -nE 's/^#(options aheadfs .*)/\1/p' "$conf" >"$work.conf/aheadfs.conf"
check "$(basename "$conf") lists every parameter" "$(tr ' ' '\n' <<<"$params" | sort)" \
	"$(sed -E 's/.* ([a-z_]+)=.*/\1/' "$work.conf/aheadfs.conf" | sort)"
if ! depmod -b "$root" "$rel" 2>"$work.err"; then
	nok "depmod of a private module tree" "$(cat "$work.err")"
elif ! modprobe -d "$root" -C "$work.conf" aheadfs 2>"$work.err"; then
	nok "modprobe with $(basename "$conf") uncommented" "$(cat "$work.err")"
else
	check "modprobe with $(basename "$conf") uncommented: the defaults" "$(defaults)" "$(pvals)"
	rmmod aheadfs
fi
rm -rf "$work.conf" "$work.err"

# ---------------------------------------------------------------------
# 7. A load without parameters: modinfo's defaults, in a new mount too.
insmod "$ko" || bail "insmod $ko"
check "insmod without parameters: modinfo's defaults" "$(defaults)" "$(pvals)"
mnt e || bail "mount e"
check "a mount then has the defaults" "$(defaults)" "$(mopts "$m")"
umount_all

echo "1..$n"
[ $failed = 0 ]
