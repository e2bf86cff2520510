#!/usr/bin/env bash
# Debian package selftests (runs in a guest as root, with no aheadfs mount;
# aheadfs loaded or not): the packages `make deb` built into
# build/deb/ install with apt-get, DKMS builds the module from
# /usr/src/aheadfs-VERSION for the running kernel and the newest installed
# one, and for another kernel through the kernel's postinst hook (what a
# kernel upgrade runs); modprobe loads it, modinfo documents its parameters,
# it mounts; the man pages, tools, unit and udev rule are in place; apt-get
# purge takes all of it away again.  KTAP on stdout.
#
#   selftests/deb.sh          (AHEADFS_DEB_DIR=DIR: the .debs, default build/deb)
#
# AHEADFS_DEB_PREBUILT=DIR (make check's package guest): DKMS's build was
# done on the host (scripts/dkms-prebuild DIR RELEASE): its tarball
# DIR/RELEASE/aheadfs-VERSION.dkms.tar.gz goes where the package's postinst
# looks for one (/usr/share/aheadfs-dkms/, Debian's common.postinst), and
# the postinst loads it (dkms ldtarball) instead of compiling: the
# maintainer scripts, dkms add and install, depmod, modprobe and the purge
# run as they do on a machine, without DKMS's compile under TCG (7-15 min).
# Without it (make check-full) DKMS compiles in the guest.
#
# make check runs it alone in a guest of each kernel (scripts/check's
# deb_guest: scripts/vm-run ... -- env AHEADFS_DEB_TEST=1 selftests/deb.sh),
# and its test guests leave it out (guest-run --exclude deb).
#
# The guest's root is the host's, read-only over 9p: the packages go into a
# private mount namespace whose root is an overlay of / under a tmpfs upper,
# entered with chroot; what apt, dpkg and DKMS write stays in the tmpfs and
# goes with the namespace.  The host must have the packages' dependencies
# (dkms, the libraries, the kernels' headers: scripts/setup-deps), since the
# guest has no network.  The runner's module is unloaded first and loaded
# again on every way out.
#
# guest-run: fstypes=ext4 (its subject is the packages, not the lower)
# kselftest: not installed (it tests this tree's packages, from build/deb)
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
rel=$(uname -r)
ko=${AHEADFS_KO:-$top/build/kmod/$rel/aheadfs.ko}
debs=${AHEADFS_DEB_DIR:-$top/build/deb}
# The parameters modinfo must show: those the shipped modprobe.d file
# documents (params.sh checks that it names every one of the module's).
params=$(sed -nE 's/^#options aheadfs ([a-z_]+)=.*/\1/p' "$top/kmod/aheadfs.modprobe.conf" 2>/dev/null | sort | tr '\n' ' ')
params=${params% }

. "$(dirname "$0")/ktap.sh"
# One skipped result: guest-run counts result lines, and takes any status
# but 0 for a failure.
skip_all() { echo "ok 1 the Debian packages # SKIP $*"; echo "1..1"; exit 0; }

# A private mount namespace first: every mount below is ours only, and
# goes with the last process in it.
if [ -z "${AHEADFS_DEB_NS:-}" ]; then
	if ! err=$(unshare --mount --propagation private true 2>&1); then
		echo "TAP version 13"
		bail "no private mount namespace (unshare --mount): $err"
	fi
	AHEADFS_DEB_NS=1 exec unshare --mount --propagation private -- "$0" "$@"
fi

echo "TAP version 13"
[ -n "$params" ] || bail "no parameter in $top/kmod/aheadfs.modprobe.conf"
# DKMS compiles the module in the guest: 308 s on 6.1, 440 s on 6.12 in a
# TCG guest, the whole test 8-10 minutes, more than guest-run gives a test
# (600 s).  So under guest-run (a guest-run by hand, without --exclude deb)
# it runs only when asked, and says where make check runs it; run alone
# (make check's package guest, or by hand) it always runs.
if [ -n "${AHEADFS_SCRATCH:-}" ] && [ "${AHEADFS_DEB_TEST:-0}" != 1 ]; then
	skip_all "make check runs it in a guest of its own (the DKMS build outlasts guest-run's 600 s a test); AHEADFS_DEB_TEST=1 runs it here"
fi
[ "$(id -u)" = 0 ] || bail "needs root"
dkms_deb=$(ls "$debs"/aheadfs-dkms_*_all.deb 2>/dev/null)
tools_deb=$(ls "$debs"/aheadfs-tools_*_"$(dpkg --print-architecture)".deb 2>/dev/null)
if [ -z "$dkms_deb$tools_deb" ] && [ -z "${AHEADFS_SCRATCH:-}" ] && [ -z "${AHEADFS_DEB_DIR:-}" ]; then
	# Installed elsewhere (a kselftest tree) with no packages beside it.
	skip_all "no packages in $debs (make deb)"
fi
[ "$(wc -w <<<"$dkms_deb")" = 1 ] && [ "$(wc -w <<<"$tools_deb")" = 1 ] ||
	bail "want one aheadfs-dkms and one aheadfs-tools package in $debs (make deb), found: $(ls "$debs" 2>&1 | tr '\n' ' ')"
ver=$(dpkg-deb -f "$dkms_deb" Version)
check "the two packages have one version" "$ver" "$(dpkg-deb -f "$tools_deb" Version)"
prebuilt=
if [ -n "${AHEADFS_DEB_PREBUILT:-}" ]; then
	prebuilt=$AHEADFS_DEB_PREBUILT/$rel/aheadfs-$ver.dkms.tar.gz
	[ -f "$prebuilt" ] || bail "AHEADFS_DEB_PREBUILT: no $prebuilt (scripts/dkms-prebuild)"
	[ "${AHEADFS_DEB_KERNELS:-running}" = running ] ||
		bail "AHEADFS_DEB_PREBUILT is for the running kernel alone, not AHEADFS_DEB_KERNELS=$AHEADFS_DEB_KERNELS"
fi
for c in apt-get dpkg-deb chroot; do
	command -v $c >/dev/null || bail "$c missing"
done
grep -q ' aheadfs ' /proc/mounts && bail "aheadfs mounts exist: the module cannot be unloaded"
was_loaded=0
[ -e /sys/module/aheadfs ] && was_loaded=1
[ $was_loaded = 0 ] || [ -f "$ko" ] || bail "aheadfs is loaded but $ko, to load again at the end, does not exist"

# The root the packages go into.
w=$(mktemp -d "${AHEADFS_SCRATCH:-${TMPDIR:-/tmp}}/deb.XXXXXX") || bail "mktemp"
root=$w/root
mounted=
cleanup() {
	mountpoint -q "$w/mnt" 2>/dev/null && umount "$w/mnt"
	if [ -e /sys/module/aheadfs ] && ! rmmod aheadfs; then
		echo "# could not unload the aheadfs that this test loaded"
	fi
	if [ $was_loaded = 1 ] && ! insmod "$ko"; then
		echo "# could not load $ko again"
	fi
	# The namespace's mounts go with it; the tmpfs under $w first, so
	# that the directory can go too.
	[ -n "$mounted" ] && umount -R "$w" 2>/dev/null
	rm -rf "$w"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

mount -t tmpfs -o size=2G,mode=0755 aheadfs-deb "$w" || bail "mount a tmpfs on $w"
mounted=1
mkdir -p "$w/upper" "$w/work" "$root" "$w/lower" "$w/mnt"
if ! err=$(mount -t overlay aheadfs-deb-root -o "lowerdir=/,upperdir=$w/upper,workdir=$w/work" "$root" 2>&1); then
	bail "an overlay of / with a tmpfs upper: $err; $(dmesg | grep -i overlay | tail -n 3)"
fi
mount -t proc proc "$root/proc" && mount --rbind /sys "$root/sys" &&
	mount --rbind /dev "$root/dev" && mount -t tmpfs -o mode=0755 run "$root/run" &&
	mount -t tmpfs -o mode=1777 tmp "$root/tmp" || bail "mounts in $root"
mkdir "$root/tmp/debs" && cp "$dkms_deb" "$tools_deb" "$root/tmp/debs/" || bail "copy the packages"
# A kernel whose modules are not the host's (make check KERNEL=IMAGE
# KDIR=DIR): vm-run installed them under build/kernels/, and the guest
# sees them through a link on a tmpfs /lib/modules (virtme-ng's way) that
# the overlay of / does not show.  The root gets the guest's tree, with
# its build link to DIR, as an overlay of its own: what DKMS and depmod
# write stays in our tmpfs, not in build/.  With the host's modules,
# /lib/modules/RELEASE is a directory (through /lib -> usr/lib or not),
# and nothing changes.
mods=$(readlink -f "/lib/modules/$rel")
if [ -L "/lib/modules/$rel" ] && [ -d "$mods" ]; then
	mkdir -p "$root/lib/modules/$rel" "$w/mods-upper" "$w/mods-work" &&
		mount -t overlay aheadfs-deb-modules \
			-o "lowerdir=$mods,upperdir=$w/mods-upper,workdir=$w/mods-work" "$root/lib/modules/$rel" ||
		bail "an overlay of $mods (the guest's /lib/modules/$rel) on $root/lib/modules/$rel"
	echo "# /lib/modules/$rel is $mods (vm-run --kernel-image), build -> $(readlink "$mods/build")"
fi

# inroot CMD...: CMD in the new root, with a clean environment.
inroot() {
	chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
# What the packages must leave as they found it: their module files in
# every kernel's tree, DKMS sources and state, modprobe's view.
leftovers() {
	(cd "$root" && find lib/modules -path '*/updates/dkms/aheadfs.ko*'
	 ls -d usr/src/aheadfs-* var/lib/dkms/aheadfs etc/modprobe.d/aheadfs.conf \
		etc/systemd/system/multi-user.target.wants/aheadctl.service 2>/dev/null
	 grep -l aheadfs lib/modules/*/modules.dep 2>/dev/null) | sort
}
before=$(leftovers)
[ -z "$before" ] || echo "# already in the root before the installation (left as they are): $(echo $before)"
inroot dpkg-query -W -f '${Status}\n' aheadfs-dkms aheadfs-tools 2>/dev/null | grep -q 'ok installed' &&
	bail "the host has aheadfs packages installed: the test installs its own"
kdir=$(inroot readlink -f "/lib/modules/$rel/build")
[ -n "$kdir" ] && [ -f "$root$kdir/Makefile" ] ||
	bail "no headers for $rel: /lib/modules/$rel/build -> '$kdir' (scripts/setup-deps installs them)"

# The kernels DKMS builds for at installation: the running one, and the
# newest one installed (dkms's common.postinst); any other one with its
# headers is built by the kernel postinst hook, as an upgrade would.  A
# build takes minutes under TCG: unless AHEADFS_DEB_KERNELS=all, the other
# kernels' headers are hidden in the new root (their build links removed
# in the overlay), and DKMS builds for the running kernel alone.
newest= other=
if [ "${AHEADFS_DEB_KERNELS:-running}" = all ]; then
	newest=$(cd "$root/boot" && ls config-* | sed 's/^config-//' | sort -V | tail -n 1)
	for k in $(ls "$root/lib/modules"); do
		[ "$k" = "$rel" ] || [ "$k" = "$newest" ] || [ ! -f "$root/lib/modules/$k/build/Makefile" ] || other="$other $k"
	done
	[ "$newest" != "$rel" ] || newest=
else
	for k in $(ls "$root/lib/modules"); do
		[ "$k" = "$rel" ] || rm -f "$root/lib/modules/$k/build" "$root/lib/modules/$k/source"
	done
fi
echo "# version $ver; DKMS builds at installation for $rel${newest:+ and $newest}${other:+, then by the kernel hook for$other}"
# man-db's trigger re-indexes every page of the root (minutes over 9p under
# TCG); `man -w` needs no index.  Debian's switch for it:
rm -f "$root/var/lib/man-db/auto-update"
# apt builds its cache from the host's package lists (bookworm, backports,
# security: 27 MB) at every call, "Building dependency tree" for 20-40 s of
# a TCG guest's time each.  The guest has no network and the packages'
# dependencies are installed in the root, or the installation fails
# saying which: an empty lists directory, and no cache, leave apt the
# dpkg status and the two files it is given.
mount -t tmpfs -o size=1M,mode=0755 apt-lists-hidden "$root/var/lib/apt/lists" &&
	mkdir "$root/var/lib/apt/lists/partial" &&
	rm -f "$root"/var/cache/apt/*.bin ||
	bail "an empty tmpfs over $root/var/lib/apt/lists"
# DKMS runs depmod at the installation and at the purge, and depmod reads
# every module of the kernel (4228 xz-compressed ones on 6.12, 400 MB on
# 6.1, all over 9p): minutes of a TCG guest's time.  aheadfs depends on no
# module (modinfo -F depends is empty), so the kernels' own modules are
# hidden from the test's root (an empty tmpfs over each kernel/ directory):
# depmod still rewrites modules.dep and the rest, with aheadfs in them or
# not, and modprobe still finds the module only through them.
if [ "${AHEADFS_DEB_ALL_MODULES:-0}" != 1 ]; then
	for d in "$root"/lib/modules/*/kernel; do
		[ -d "$d" ] || continue
		mount -t tmpfs -o size=1M,mode=0755 kernel-modules-hidden "$d" ||
			bail "an empty tmpfs over $d"
	done
fi

if [ $was_loaded = 1 ]; then
	rmmod aheadfs || bail "rmmod aheadfs (the runner's module)"
fi

# The host's build, where the postinst looks for a DKMS tarball; it is
# not the package's, and goes once the postinst has loaded it.
if [ -n "$prebuilt" ]; then
	mkdir -p "$root/usr/share/aheadfs-dkms" &&
		cp "$prebuilt" "$root/usr/share/aheadfs-dkms/aheadfs-$ver.dkms.tar.gz" ||
		bail "copy $prebuilt into the root"
	echo "# DKMS's build from the host: $prebuilt"
fi

# ---------------------------------------------------------------------
# 1. apt-get installs both; dkms builds (or loads the host's build) and
# installs the module.
# progress LOG: the lines of apt's output that say where it is, as they
# come, with the seconds since $t0 (a guest that times out shows where).
progress() {
	tee "$1" | grep --line-buffered -E '^(Unpacking|Setting up|Building|Done|Module build|Error|Removing|Purging|Deleting|depmod|Signing|Running module|Cleaning)' |
		while IFS= read -r l; do echo "# $(($(date +%s) - t0)) s: $l"; done
}
t0=$(date +%s)
inroot apt-get install -y -q --no-install-recommends \
	"/tmp/debs/$(basename "$dkms_deb")" "/tmp/debs/$(basename "$tools_deb")" 2>&1 | progress "$w/apt.log"
if [ "${PIPESTATUS[0]}" != 0 ]; then
	logs=$(cd "$root" && ls var/lib/dkms/aheadfs/*/build/make.log var/lib/dkms/aheadfs/*/build/build/kmod/*/build.log 2>/dev/null)
	nok "apt-get install ./aheadfs-dkms_*.deb ./aheadfs-tools_*.deb" "$(tail -n 30 "$w/apt.log")
$(for l in $logs; do echo "== $l"; tail -n 30 "$root/$l"; done)"
	bail "the packages did not install"
fi
ok "apt-get install ./aheadfs-dkms_*.deb ./aheadfs-tools_*.deb ($(($(date +%s) - t0)) s)"
if [ -n "$prebuilt" ]; then
	# The postinst took the host's build, and compiled nothing.
	if grep -q "^Loading tarball for aheadfs-$ver" "$w/apt.log" &&
	   ! grep -q "^Building initial module" "$w/apt.log"; then
		ok "the postinst loaded DKMS's build from the host (dkms ldtarball), no compile in the guest"
	else
		nok "the postinst loaded DKMS's build from the host (dkms ldtarball), no compile in the guest" \
			"$(grep -E 'tarball|Building|Loading' "$w/apt.log" | head -n 10)"
	fi
	rm -rf "$root/usr/share/aheadfs-dkms"
fi
check "dpkg: both installed at $ver" "aheadfs-dkms $ver install ok installed
aheadfs-tools $ver install ok installed" \
	"$(inroot dpkg-query -W -f '${Package} ${Version} ${Status}\n' aheadfs-dkms aheadfs-tools)"

for k in $rel $newest; do
	st=$(inroot dkms status -m aheadfs -v "$ver" -k "$k" 2>&1)
	if grep -q ": installed" <<<"$st"; then
		ok "dkms built and installed aheadfs/$ver for $k"
	else
		nok "dkms built and installed aheadfs/$ver for $k" "dkms status: $st"
	fi
done
for k in $other; do
	t0=$(date +%s)
	if ! inroot /etc/kernel/postinst.d/dkms "$k" >"$w/hook.log" 2>&1; then
		nok "the kernel postinst hook builds aheadfs for $k" "$(tail -n 20 "$w/hook.log")"
	else
		st=$(inroot dkms status -m aheadfs -v "$ver" -k "$k" 2>&1)
		if grep -q ": installed" <<<"$st"; then
			ok "the kernel postinst hook (a kernel upgrade) builds aheadfs for $k ($(($(date +%s) - t0)) s)"
		else
			nok "the kernel postinst hook builds aheadfs for $k" "dkms status: $st
$(tail -n 20 "$w/hook.log")"
		fi
	fi
done

# ---------------------------------------------------------------------
# 2. modprobe loads the module DKMS installed, with its parameters.
path=$(inroot modinfo -n aheadfs 2>&1)
case $path in
"/lib/modules/$rel/updates/dkms/aheadfs.ko"*) ok "modinfo -n aheadfs: $path" ;;
*) nok "modinfo -n aheadfs is the module DKMS installed" "got: $path" ;;
esac
check "modinfo aheadfs: every parameter" "$(tr ' ' '\n' <<<"$params")" \
	"$(inroot modinfo -F parm aheadfs | cut -d: -f1 | sort)"
miss=
for p in $params; do
	inroot modinfo -F parm aheadfs | grep -qE "^$p:.*\(default " || miss="$miss $p"
done
check "modinfo aheadfs: each parameter's description names its default" "" "${miss# }"
if ! err=$(inroot modprobe aheadfs txn_kb=1024 2>&1); then
	nok "modprobe aheadfs txn_kb=1024" "$err"
else
	check "modprobe aheadfs txn_kb=1024: the parameter" 1024 "$(cat /sys/module/aheadfs/parameters/txn_kb 2>&1)"
	# The runner's module was unloaded; modprobe loads what modules.dep of
	# the new root names (aheadfs has no srcversion to compare).
	dep=$(inroot modprobe --show-depends aheadfs 2>&1)
	case $dep in
	"insmod /lib/modules/$rel/updates/dkms/aheadfs.ko"*) ok "modprobe loaded the module DKMS installed" ;;
	*) nok "modprobe loaded the module DKMS installed" "modprobe --show-depends aheadfs: $dep" ;;
	esac
fi

# ---------------------------------------------------------------------
# 3. A mount of it works.
echo "through aheadfs from the package $ver" >"$w/lower/file"
if ! err=$(mount -t aheadfs "$w/lower" "$w/mnt" 2>&1); then
	nok "mount -t aheadfs LOWER MNT" "$err"
else
	check "a file of the lower reads through the mount" "$(cat "$w/lower/file")" "$(cat "$w/mnt/file" 2>&1)"
	echo written >"$w/mnt/new" 2>/dev/null
	check "a file written through the mount is in the lower" written "$(cat "$w/lower/new" 2>&1)"
	o=$(awk -v m="$w/mnt" '$2 == m { print $3 " " $4 }' /proc/mounts)
	case ",${o#* }," in
	*,txn_kb=1024,*) ok "the mount takes the parameter modprobe gave ($o)" ;;
	*) nok "the mount takes the parameter modprobe gave" "/proc/mounts: $o" ;;
	esac
	umount "$w/mnt" || nok "umount the aheadfs mount"
fi

# ---------------------------------------------------------------------
# 4. The rest of what the packages ship.
for m in "8 aheadctl" "8 aheadtrace" "5 aheadfs"; do
	set -- $m
	check "man -w $1 $2" "/usr/share/man/man$1/$2.$1.gz" "$(inroot man -w "$1" "$2" 2>&1)"
done
if inroot env MANWIDTH=80 man -P cat 8 aheadctl 2>&1 | grep -q '^NAME'; then
	ok "man aheadctl renders"
else
	nok "man aheadctl renders" "$(inroot env MANWIDTH=80 man -P cat 8 aheadctl 2>&1 | head -n 5)"
fi
check "aheadctl --version is the package's" "aheadctl $ver" "$(inroot aheadctl --version 2>&1)"
for f in /usr/sbin/aheadtrace /usr/lib/aheadfs/bpf/aheadfs.bpf.o /usr/lib/aheadfs/bpf/vfs.bpf.o /usr/lib/aheadfs/bpf/vfsk.bpf.o \
	/lib/systemd/system/aheadctl.service /usr/lib/udev/rules.d/90-aheadctl.rules \
	/usr/share/doc/aheadfs-tools/aheadctl.rst; do
	if [ -s "$root$f" ]; then ok "aheadfs-tools installs $f"; else nok "aheadfs-tools installs $f"; fi
done
if [ "$(od -An -tu2 -j18 -N2 "$root/usr/lib/aheadfs/bpf/aheadfs.bpf.o" 2>/dev/null | tr -d ' ')" = 247 ]; then
	ok "aheadfs.bpf.o is a BPF object (ELF machine 247)"
else
	nok "aheadfs.bpf.o is a BPF object (ELF machine 247)"
fi
# The unit's documentation link survives the package's doc compression.
doc=$(sed -n 's|^Documentation=file:||p' "$root/lib/systemd/system/aheadctl.service")
if [ -n "$doc" ] && [ -f "$root$doc" ]; then
	ok "the unit's Documentation= file exists ($doc)"
else
	nok "the unit's Documentation= file exists" "Documentation=file:$doc"
fi
if [ -L "$root/etc/systemd/system/multi-user.target.wants/aheadctl.service" ]; then
	ok "aheadctl.service is enabled"
else
	nok "aheadctl.service is enabled" "$(ls -l "$root/etc/systemd/system/multi-user.target.wants/" 2>&1)"
fi
if cmp -s "$top/kmod/aheadfs.modprobe.conf" "$root/etc/modprobe.d/aheadfs.conf"; then
	ok "/etc/modprobe.d/aheadfs.conf is kmod/aheadfs.modprobe.conf"
else
	nok "/etc/modprobe.d/aheadfs.conf is kmod/aheadfs.modprobe.conf" "$(ls -l "$root/etc/modprobe.d/" 2>&1)"
fi
check "/etc/modprobe.d/aheadfs.conf sets nothing (every line commented)" "" \
	"$(grep -vE '^[[:space:]]*(#|$)' "$root/etc/modprobe.d/aheadfs.conf" 2>&1)"
check "/etc/modprobe.d/aheadfs.conf is a conffile of aheadfs-dkms" /etc/modprobe.d/aheadfs.conf \
	"$(inroot dpkg-query -W -f '${Conffiles}\n' aheadfs-dkms | awk 'NF { print $1 }')"

# ---------------------------------------------------------------------
# 5. apt-get purge takes it all away.
rmmod aheadfs || nok "rmmod the aheadfs that modprobe loaded"
t0=$(date +%s)
inroot apt-get purge -y -q aheadfs-dkms aheadfs-tools 2>&1 | progress "$w/purge.log"
if [ "${PIPESTATUS[0]}" != 0 ]; then
	nok "apt-get purge aheadfs-dkms aheadfs-tools" "$(tail -n 30 "$w/purge.log")"
else
	ok "apt-get purge aheadfs-dkms aheadfs-tools ($(($(date +%s) - t0)) s)"
fi
check "dpkg: neither package is left" "" \
	"$(inroot dpkg-query -W -f '${Package} ${Status}\n' aheadfs-dkms aheadfs-tools 2>/dev/null | grep -v ' not-installed$')"
check "nothing left in /lib/modules, /usr/src, /var/lib/dkms, /etc" "$before" "$(leftovers)"
check "dkms knows no aheadfs" "" "$(inroot dkms status -m aheadfs 2>&1)"
if path=$(inroot modinfo -n aheadfs 2>&1); then
	nok "modinfo aheadfs finds no module after the purge" "it finds $path"
else
	ok "modinfo aheadfs finds no module after the purge"
fi
check "man -w aheadctl finds nothing after the purge" "" "$(inroot man -w aheadctl 2>/dev/null)"

echo "1..$n"
[ $failed = 0 ]
