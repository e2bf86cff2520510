#!/usr/bin/env bash
# host-tests.sh: make check KERNEL=IMAGE KDIR=DIR, scripts/vm-run
# --kernel-image and the benchmarks' argument checks on the host, with no
# guest and no build; TAP on stdout.
# scripts/check runs with AHEADFS_CHECK_PLAN=1 (it stops after its checks of
# KERNEL= and KDIR=, before the set-up, builds or guests): each error exits
# 2 with a message that says what is wrong, a good pair plans that one
# kernel, and make check without them plans KERNELS as before.  vm-run runs
# from a copy of scripts/ whose virtme-ng is a stub that prints its
# arguments: an image is booted with the host's modules, or with those a
# full build tree installs once into build/kernels/RELEASE/ (a fake tree's
# modules_install here), with the build link DKMS needs.  Uses the host's
# Debian 6.1 (and 6.12) kernel; seconds.  Exit status 1 if a test failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d /tmp/aheadfs-scripts-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# Never past the plan, whatever a broken check lets through; and none of
# the caller's make variables (make check KERNEL=... puts them in MAKEFLAGS).
export AHEADFS_CHECK_PLAN=1
unset KERNEL KDIR KERNELS GUEST_ARGS AHEADFS_KERNEL_IMAGE AHEADFS_KERNEL_KDIR AHEADFS_HOST_MODULES
unset MAKEFLAGS MFLAGS MAKEOVERRIDES MAKELEVEL GNUMAKEFLAGS

n=0 failed=0
echo "TAP version 13"
pass() { n=$((n + 1)); echo "ok $n $1"; }
fail() {
	n=$((n + 1)) failed=1
	echo "not ok $n $1"
	[ -n "${2:-}" ] && printf '%s\n' "$2" | head -n 30 | sed 's/^/# /'
	return 0
}

rel=$("$top/scripts/kernel-release" 6.1 2>/dev/null)
img=/boot/vmlinuz-$rel hdr=/usr/src/linux-headers-$rel
rel2=$("$top/scripts/kernel-release" 6.12 2>/dev/null)
hdr2=/usr/src/linux-headers-$rel2
if [ -z "$rel" ] || [ ! -r "$img" ] || [ -z "$rel2" ]; then
	echo "ok 1 make check KERNEL= KDIR= # SKIP no Debian 6.1 and 6.12 kernels here (scripts/setup-deps)"
	echo "1..1"
	exit 0
fi

# run CMD...: its status in $rc, stdout and stderr in $out.
run() { out=$("$@" 2>&1); rc=$?; }
# expect NAME RC TEXT CMD...: CMD exits RC and says TEXT.
expect() {
	local name=$1 want=$2 text=$3
	shift 3
	run "$@"
	if [ "$rc" = "$want" ] && grep -qF -- "$text" <<<"$out"; then
		pass "$name"
	else
		fail "$name" "exit $rc (want $want); want the text: $text
got:
$out"
	fi
}
mk() { make -s --no-print-directory -C "$top" check "$@"; }

# 1. make check's arguments.
expect "kernel-release IMAGE is the image's release" 0 "$rel" "$top/scripts/kernel-release" "$img"
expect "make check KERNEL= without KDIR= fails, naming KDIR=DIR" 2 "KERNEL=$img needs KDIR=DIR" \
	mk KERNEL="$img"
expect "scripts/check KERNEL= without KDIR= exits 2" 2 "needs KDIR=DIR" env KERNEL="$img" "$top/scripts/check"
expect "make check KDIR= without KERNEL= fails, naming KERNEL=IMAGE" 2 "KDIR=$hdr needs KERNEL=IMAGE" \
	mk KDIR="$hdr"
expect "make check with a missing image fails" 2 "KERNEL=$tmp/vmlinuz is not a readable file" \
	mk KERNEL="$tmp/vmlinuz" KDIR="$hdr"
expect "make check with a file that is no kernel image fails" 2 "KERNEL=/boot/config-$rel is not a kernel image" \
	mk KERNEL="/boot/config-$rel" KDIR="$hdr"
mkdir "$tmp/empty"
expect "make check with a KDIR that has no release fails" 2 "KDIR=$tmp/empty has no kernel release" \
	mk KERNEL="$img" KDIR="$tmp/empty"
expect "make check with an image and a KDIR of two releases fails, naming both" 2 \
	"KERNEL=$img is kernel $rel but KDIR=$hdr2 is kernel $rel2" mk KERNEL="$img" KDIR="$hdr2"
expect "make check KERNEL=IMAGE KDIR=DIR checks that one kernel" 0 \
	"check: kernel $rel: scripts/kbuild $hdr; scripts/vm-run --kernel-image $img --kdir $hdr" \
	mk KERNEL="$img" KDIR="$hdr"
if [ "$(grep -c '^check: kernel' <<<"$out")" = 1 ]; then
	pass "make check KERNEL= KDIR= plans no other kernel"
else
	fail "make check KERNEL= KDIR= plans no other kernel" "$out"
fi
expect "KERNEL= and KDIR= from the environment work as on the command line" 0 \
	"check: kernel $rel: scripts/kbuild $hdr;" env KERNEL="$img" KDIR="$hdr" make -s --no-print-directory -C "$top" check
run mk
want="check: kernel 6.1: scripts/kbuild $rel; scripts/vm-run --kernel 6.1
check: kernel 6.12: scripts/kbuild $rel2; scripts/vm-run --kernel 6.12"
if [ "$rc" = 0 ] && [ "$out" = "$want" ]; then
	pass "make check without them plans KERNELS as before"
else
	fail "make check without them plans KERNELS as before" "exit $rc; want:
$want
got:
$out"
fi
run env KDIR="$hdr" make -s --no-print-directory -C "$top" check
if [ "$rc" = 0 ] && [ "$out" = "$want" ]; then
	pass "a KDIR in the environment alone (make's module build dir) is no KERNEL= request"
else
	fail "a KDIR in the environment alone (make's module build dir) is no KERNEL= request" "exit $rc; got:
$out"
fi

# 2. vm-run --kernel-image, from a copy of scripts/ with a stub virtme-ng.
t=$tmp/top
mkdir -p "$t/scripts" "$t/build/venv/bin"
cp "$top/scripts/vm-run" "$top/scripts/kernel-release" "$t/scripts/"
printf '#!/bin/sh\nfor a in "$@"; do echo "vng-arg: $a"; done\n' >"$t/build/venv/bin/vng"
chmod +x "$t/build/venv/bin/vng"
# virtme-ng's initramfs as setup-deps leaves it: it takes the root's 9p
# cache mode from the kernel's command line.
vl=$t/build/venv/lib/python3.11/site-packages/virtme
mkdir -p "$vl"
echo 'msize=524288${{aheadfs_9p_cache:+,cache=$aheadfs_9p_cache}} /dev/root' >"$vl/mkinitramfs.py"
vr=$t/scripts/vm-run
# booted IMAGE: the image vm-run gave virtme-ng ($out of the last run).
booted() { sed -n '/^vng-arg: -r$/{n;s/^vng-arg: //p}' <<<"$out"; }

expect "vm-run --kernel-image with a missing image exits 2" 2 "no readable kernel image $tmp/vmlinuz" \
	"$vr" --kernel-image "$tmp/vmlinuz" -- true
expect "vm-run --kernel-image with another release's --kdir exits 2, naming both" 2 \
	"$img is kernel $rel, $hdr2 is $rel2" "$vr" --kernel-image "$img" --kdir "$hdr2" -- true
expect "vm-run --kernel 6.1 boots /boot's image as before" 0 "vng-arg: $img" "$vr" --kernel 6.1 -- true
expect "vm-run: 9p for the root at once, no virtiofsd attempt" 0 "vng-arg: --force-9p" \
	"$vr" --kernel 6.1 -- true
expect "vm-run: each virtio-serial device has room for its one port" 0 \
	"vng-arg: --qemu-opts=-global virtio-serial-device.max_ports=2" "$vr" --kernel 6.1 -- true
expect "vm-run: the guest caches the host's root (9p cache=loose) by default" 0 \
	"vng-arg: aheadfs_9p_cache=loose" "$vr" --kernel 6.1 -- true
expect "vm-run --root-cache none: the root as virtme-ng mounts it, uncached" 0 \
	"vng-arg: aheadfs_9p_cache=none" "$vr" --kernel 6.1 --root-cache none -- true
expect "vm-run AHEADFS_ROOT_CACHE=none: the same" 0 \
	"vng-arg: aheadfs_9p_cache=none" env AHEADFS_ROOT_CACHE=none "$vr" --kernel 6.1 -- true
expect "vm-run --root-cache of a mode it does not know: exit 2" 2 \
	"--root-cache (AHEADFS_ROOT_CACHE) is loose or none, not 'mmap'" "$vr" --kernel 6.1 --root-cache mmap -- true
mv "$vl/mkinitramfs.py" "$vl/mkinitramfs.py.setup"
echo 'msize=524288 /dev/root' >"$vl/mkinitramfs.py"
expect "vm-run: a virtme-ng whose initramfs takes no cache mode: exit 2, naming setup-deps" 2 \
	"virtme-ng's initramfs takes no 9p cache mode: run scripts/setup-deps" "$vr" --kernel 6.1 -- true
mv "$vl/mkinitramfs.py.setup" "$vl/mkinitramfs.py"
run "$vr" --kernel 6.1 -- true
if grep -q 'erms' <<<"$out"; then
	fail "vm-run without --no-erms: the CPU as virtme-ng gives it" "$out"
else
	pass "vm-run without --no-erms: the CPU as virtme-ng gives it"
fi
expect "vm-run --no-erms --tcg-single: -cpu max,erms=off after the caller's options" 0 \
	"vng-arg: --qemu-opts=-global virtio-serial-device.max_ports=2 -icount shift=0 -accel tcg,thread=single -cpu max,erms=off" \
	"$vr" --kernel 6.1 --qemu-opts "-icount shift=0" --tcg-single --no-erms -- true
expect "vm-run --tcg-single: the caller's options, then one thread, after the port room" 0 \
	"vng-arg: --qemu-opts=-global virtio-serial-device.max_ports=2 -icount shift=0 -accel tcg,thread=single" \
	"$vr" --kernel 6.1 --qemu-opts "-icount shift=0" --tcg-single -- true
run "$vr" --kernel-image "$img" --kdir "$hdr" -- true
if [ "$rc" = 0 ] && [ "$(booted)" = "$t/build/kernels/boot/vmlinuz-$rel" ] &&
   [ "$(readlink "$t/build/kernels/boot/vmlinuz-$rel")" = "$img" ] && [ ! -e "$t/build/kernels/$rel" ]; then
	pass "vm-run --kernel-image with the host's modules: the image linked where virtme-ng finds /lib/modules"
else
	fail "vm-run --kernel-image with the host's modules" "exit $rc, booted $(booted); $out"
fi
export AHEADFS_HOST_MODULES=$tmp/no-modules
expect "vm-run --kernel-image, modules neither on the host nor given: exit 2" 2 \
	"has no modules on the host ($tmp/no-modules/$rel) and no --kdir was given" "$vr" --kernel-image "$img" -- true
expect "vm-run --kernel-image, a --kdir without modules.order: exit 2" 2 \
	"$hdr has no modules.order" "$vr" --kernel-image "$img" --kdir "$hdr" -- true

# A full build tree of the release, as far as vm-run needs one: its
# release, modules.order, and a modules_install that installs one module
# without modules.dep (vm-run runs depmod).
k=$tmp/kdir
mkdir -p "$k/include/generated"
echo "#define UTS_RELEASE \"$rel\"" >"$k/include/generated/utsrelease.h"
echo "kernel/fs/fake.ko" >"$k/modules.order"
printf 'modules_install:\n\tmkdir -p $(INSTALL_MOD_PATH)/lib/modules/%s/kernel/fs\n\tcp modules.order $(INSTALL_MOD_PATH)/lib/modules/%s/\n' \
	"$rel" "$rel" >"$k/Makefile"
m=$t/build/kernels/$rel/lib/modules/$rel
run "$vr" --kernel-image "$img" --kdir "$k" -- true
if [ "$rc" = 0 ] && grep -q "installing the modules of $rel from $k" <<<"$out" &&
   [ "$(booted)" = "$t/build/kernels/$rel/boot/vmlinuz-$rel" ] &&
   [ "$(readlink "$t/build/kernels/$rel/boot/vmlinuz-$rel")" = "$img" ] &&
   [ -f "$m/modules.dep" ] && [ -f "$m/modules.order" ] && [ "$(readlink "$m/build")" = "$k" ]; then
	pass "vm-run --kernel-image --kdir TREE: modules installed into build/kernels/$rel, build -> TREE, the image under it"
else
	fail "vm-run --kernel-image --kdir TREE installs the modules" "exit $rc, booted $(booted); $out
$(cd "$t/build/kernels" 2>/dev/null && find . | head -n 20)"
fi
run "$vr" --kernel-image "$img" --kdir "$k" -- true
if [ "$rc" = 0 ] && ! grep -q installing <<<"$out"; then
	pass "vm-run installs them once"
else
	fail "vm-run installs them once" "exit $rc; $out"
fi
touch -d 'now + 1 minute' "$k/modules.order"
expect "vm-run installs them again after the tree's modules.order changed" 0 "installing the modules of $rel" \
	"$vr" --kernel-image "$img" --kdir "$k" -- true
expect "vm-run --prepare sets up and boots nothing" 0 "vm-run: kernel $rel: image $img, modules $m" \
	"$vr" --kernel-image "$img" --kdir "$k" --prepare
grep -q vng-arg <<<"$out" && fail "vm-run --prepare started virtme-ng" "$out"
run env AHEADFS_KERNEL_IMAGE="$img" AHEADFS_KERNEL_KDIR="$k" "$vr" --kernel "$rel" -- true
if [ "$rc" = 0 ] && [ "$(booted)" = "$t/build/kernels/$rel/boot/vmlinuz-$rel" ]; then
	pass "vm-run --kernel RELEASE boots AHEADFS_KERNEL_IMAGE (aheadctl's guest under KERNEL=)"
else
	fail "vm-run --kernel RELEASE boots AHEADFS_KERNEL_IMAGE" "exit $rc, booted $(booted); $out"
fi
expect "vm-run: --kernel and --kernel-image of two releases exit 2" 2 "--kernel 6.12 is $rel2" \
	"$vr" --kernel 6.12 --kernel-image "$img" --kdir "$k" -- true
unset AHEADFS_HOST_MODULES

# 3. scripts/check itself, in a tree of stubs around it (setup-deps, kbuild,
# make's targets, vm-run and aheadctl's run-guest.sh record their calls and
# print one passing result): which kernels it builds for and how each guest
# boots.  AHEADFS_CHECK_PLAN is off there, in the stub tree only.
s=$tmp/stub
mkdir -p "$s/scripts" "$s/selftests/aheadctl" "$s/userland" "$s/debian" "$s/build"
cp "$top/scripts/check" "$top/scripts/ktap-summary" "$top/scripts/kernel-release" "$s/scripts/"
mkdir -p "$s/selftests" && cp "$top/selftests/skips.allow" "$s/selftests/"
printf '#!/bin/sh\nexit 0\n' >"$s/scripts/setup-deps"
printf '#!/bin/sh\necho "kbuild $*" >>"%s/build/calls"\n' "$s" >"$s/scripts/kbuild"
# dkms-prebuild (in the package job, beside the test guests) waits for a
# test guest's call, 30 s at most: the test guests do not wait for it.
cat >"$s/scripts/dkms-prebuild" <<STUB
#!/bin/sh
i=0
while ! grep -q guest-run "$s/build/calls" 2>/dev/null && [ \$i -lt 300 ]; do
	sleep 0.1
	i=\$((i + 1))
done
echo "dkms-prebuild \$*" >>"$s/build/calls"
if [ "\${AHEADFS_STUB_HANG:-}" = dkms-prebuild ]; then
	echo \$\$ >>"$s/build/hung"
	exec sleep 600
fi
STUB
printf '#!/bin/sh\necho "soak $*" >>"%s/build/calls"\n' "$s" >"$s/scripts/soak"
printf '#!/bin/sh\necho "ksmbd-build $*" >>"%s/build/calls"\n' "$s" >"$s/scripts/ksmbd-build"
# AHEADFS_STUB_HANG=WORD: a guest whose command has WORD never ends (its
# PID in build/hung).  AHEADFS_STUB_SKIP=LINE: each test guest writes LINE
# as the result of a test on xfs (build/results/kK-xfs-tracing.tap).
cat >"$s/scripts/vm-run" <<STUB
#!/bin/bash
echo "vm-run \$* [\${AHEADFS_KERNEL_IMAGE:-} \${AHEADFS_KERNEL_KDIR:-}]" >>"$s/build/calls"
if [ -n "\${AHEADFS_STUB_HANG:-}" ] && [[ " \$* " == *"\$AHEADFS_STUB_HANG"* ]]; then
	echo "# guest-run: started"
	echo "# the stub's last words before it hangs"
	echo \$\$ >>"$s/build/hung"
	exec sleep 600
fi
case " \$* " in
*" --prepare "*) ;;
*guest-run*)
	[ -z "\${AHEADFS_STUB_SKIP:-}" ] ||
		printf 'TAP version 13\n1..1\n%s\n' "\$AHEADFS_STUB_SKIP" >"$s/build/results/k\$2-xfs-tracing.tap"
	printf '# guest-run: started\nTAP version 13\nok 1 stub guest\n1..1\n' ;;
*deb.sh*) printf 'TAP version 13\nok 1 stub deb\n1..1\n' ;;
esac
STUB
cat >"$s/selftests/aheadctl/run-guest.sh" <<STUB
"$s/scripts/vm-run" --kernel "\$1" -- true
printf 'TAP version 13\nok 1 stub\n1..1\n' >"$s/build/results/aheadctl-guest-\$1.tap"
STUB
printf 'all:\n\t@true\n' >"$s/userland/Makefile"
printf '#!/bin/sh\n' >"$s/userland/aheadctl"
printf '#!/bin/sh\n' >"$s/debian/build-deb"
chmod +x "$s"/scripts/* "$s/userland/aheadctl" "$s/debian/build-deb"
printf 'deb:\n\t@test -z "$$AHEADFS_STUB_DEB_FAIL"\nselftests checkpatch:\n\t@true\nuserland-check man-check scripts-check:\n\t@echo "ok 1 $@"\n' >"$s/Makefile"
# stubcheck ENV...: the stub tree's check with ENV; its calls, sorted, in $out.
stubcheck() {
	rm -f "$s/build/calls"
	env -u AHEADFS_CHECK_PLAN -u AHEADFS_CHECK_GUESTS -u AHEADFS_GUEST_MEMORY \
		-u AHEADFS_GUEST_TIMEOUT -u AHEADFS_DEB_TIMEOUT -u AHEADFS_CHECK_DEADLINE \
		-u AHEADFS_CHECK_FULL -u AHEADFS_STUB_HANG -u AHEADFS_STUB_SKIP -u FSX_SOAK \
		-u AHEADFS_STUB_DEB_FAIL "$@" AHEADFS_GUEST_JOBS=2 "$s/scripts/check" >"$tmp/stub.out" 2>&1
	rc=$?
	out=$(sort "$s/build/calls" 2>/dev/null)
}
# calls_line WORD: the line number of the first call with WORD, in the
# order made (0: none).
calls_line() {
	grep -nF -- "$1" "$s/build/calls" 2>/dev/null | head -n 1 | cut -d: -f1 | grep . || echo 0
}
# stubwant NAME WANT: the calls were WANT's lines, in any order.
stubwant() {
	if [ "$rc" = 0 ] && [ "$out" = "$(sort <<<"$2")" ]; then
		pass "$1"
	else
		fail "$1" "exit $rc; want:
$(sort <<<"$2")
got:
$out
$(tail -n 5 "$tmp/stub.out")"
	fi
}
stubcheck
stubwant "scripts/check without KERNEL=: kbuild, ksmbd-build and the three guests of 6.1 and 6.12" \
"kbuild $rel
kbuild $rel2
ksmbd-build $rel
ksmbd-build $rel2
dkms-prebuild $s/build/dkms $rel $rel2
vm-run --kernel 6.1 --timeout 1800 --console --tcg-single --no-erms -- env AHEADFS_DEB_TEST=1 AHEADFS_DEB_PREBUILT=$s/build/dkms selftests/deb.sh [ ]
vm-run --kernel 6.1 --timeout 2700 --console --tcg-single --no-erms -- scripts/guest-run --exclude deb [ ]
vm-run --kernel 6.1 -- true [ ]
vm-run --kernel 6.12 --timeout 1800 --console --tcg-single --no-erms -- env AHEADFS_DEB_TEST=1 AHEADFS_DEB_PREBUILT=$s/build/dkms selftests/deb.sh [ ]
vm-run --kernel 6.12 --timeout 2700 --console --tcg-single --no-erms -- scripts/guest-run --exclude deb [ ]
vm-run --kernel 6.12 -- true [ ]"
# The packages (make deb, DKMS's build on the host) are built beside the
# test guests, and the package guests wait for them.
g=$(calls_line guest-run) p=$(calls_line dkms-prebuild) d=$(calls_line deb.sh)
if [ "$g" -gt 0 ] && [ "$p" -gt "$g" ] && [ "$d" -gt "$p" ]; then
	pass "scripts/check: the test guests boot before DKMS's build on the host, the package guests after it"
else
	fail "scripts/check: the test guests boot before DKMS's build on the host, the package guests after it" \
		"first guest-run call $g, dkms-prebuild $p, first deb.sh $d:
$(cat "$s/build/calls" 2>/dev/null)"
fi
# make deb fails: no package guest boots, each is a failure that says why,
# and the other guests run.
stubcheck AHEADFS_STUB_DEB_FAIL=1
nr=$(grep -l "^not ok 1 package guest .* not run: make deb failed" "$s"/build/results/*-deb.tap 2>/dev/null | wc -l)
last=$(tail -n 1 "$tmp/stub.out")
if [ "$rc" = 1 ] && [ "$nr" = 2 ] && [ "$(calls_line deb.sh)" = 0 ] && [ "$(calls_line dkms-prebuild)" = 0 ] &&
   [ "$(grep -c guest-run "$s/build/calls")" = 2 ] && [ "$(grep -c -- '-- true' "$s/build/calls")" = 2 ] &&
   [[ $last =~ ^[0-9]+\ passed,\ 3\ failed ]]; then
	pass "scripts/check: make deb fails: the package guests are failures not run, the other guests run"
else
	fail "scripts/check: make deb fails: the package guests are failures not run, the other guests run" \
		"exit $rc, $nr not run; last line: $last; calls:
$(cat "$s/build/calls" 2>/dev/null)"
fi
stubcheck KERNEL="$img" KDIR="$hdr"
v="--kernel-image $img --kdir $hdr"
stubwant "scripts/check KERNEL= KDIR=: the image prepared, kbuild KDIR, each guest boots the image" \
"kbuild $hdr
dkms-prebuild $s/build/dkms $rel:$hdr
vm-run $v --prepare [ ]
vm-run $v --timeout 1800 --console --tcg-single --no-erms -- env AHEADFS_DEB_TEST=1 AHEADFS_DEB_PREBUILT=$s/build/dkms selftests/deb.sh [ ]
vm-run $v --timeout 2700 --console --tcg-single --no-erms -- scripts/guest-run --exclude deb [ ]
vm-run --kernel $rel -- true [$img $hdr]"
if [ -f "$s/build/results/aheadctl-guest-$rel.tap" ] && [ -f "$s/build/results/kernel-$rel.tap" ]; then
	pass "scripts/check KERNEL= KDIR=: results under the release $rel"
else
	fail "scripts/check KERNEL= KDIR=: results under the release $rel" "$(ls "$s/build/results")"
fi

# make check-debug's way: the test guests only, with more memory.
stubcheck KERNEL="$img" KDIR="$hdr" AHEADFS_CHECK_GUESTS=test AHEADFS_GUEST_MEMORY=4G
stubwant "scripts/check AHEADFS_CHECK_GUESTS=test AHEADFS_GUEST_MEMORY=4G: the test guest alone, with --memory 4G" \
"kbuild $hdr
vm-run $v --prepare [ ]
vm-run $v --timeout 2700 --console --tcg-single --no-erms --memory 4G -- scripts/guest-run --exclude deb [ ]"
# make check-full's way: every test on every lower, longer stressors, DKMS
# compiling in the package guests for every kernel, fresh fsx seeds.
stubcheck AHEADFS_CHECK_FULL=1 FSX_SOAK=3
stubwant "scripts/check AHEADFS_CHECK_FULL=1: guest-run --full, DKMS in the guests for all kernels, scripts/soak" \
"kbuild $rel
kbuild $rel2
ksmbd-build $rel
ksmbd-build $rel2
soak --kernels $rel $rel2 --seeds 3
vm-run --kernel 6.1 --timeout 3600 --console --tcg-single --no-erms -- env AHEADFS_DEB_TEST=1 AHEADFS_DEB_KERNELS=all selftests/deb.sh [ ]
vm-run --kernel 6.1 --timeout 4500 --console --tcg-single --no-erms -- env AHEADFS_STRESS_SECONDS=30 AHEADFS_RCU_STRESS_SECONDS=120 scripts/guest-run --exclude deb --full [ ]
vm-run --kernel 6.1 -- true [ ]
vm-run --kernel 6.12 --timeout 3600 --console --tcg-single --no-erms -- env AHEADFS_DEB_TEST=1 AHEADFS_DEB_KERNELS=all selftests/deb.sh [ ]
vm-run --kernel 6.12 --timeout 4500 --console --tcg-single --no-erms -- env AHEADFS_STRESS_SECONDS=30 AHEADFS_RCU_STRESS_SECONDS=120 scripts/guest-run --exclude deb --full [ ]
vm-run --kernel 6.12 -- true [ ]"

# The overall deadline: two test guests that never end are stopped when it
# passes (their processes too), each reported as a failure with its last
# lines, the package and aheadctl guests behind them as not run, and the
# summary is still the last line.
rm -f "$s/build/hung"
t0=$(date +%s)
stubcheck AHEADFS_CHECK_DEADLINE=10 AHEADFS_STUB_HANG=guest-run
secs=$(($(date +%s) - t0))
last=$(tail -n 1 "$tmp/stub.out")
hung=$(cat "$s/build/hung" 2>/dev/null)
alive=
for p in $hung; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
stopped=$(grep -l "^not ok 1 .*: stopped at the overall deadline, 10 s after the start" "$s"/build/results/deadline-*.tap 2>/dev/null | wc -l)
notrun=$(grep -l "^not ok 1 .*: not started before the overall deadline" "$s"/build/results/deadline-*.tap 2>/dev/null | wc -l)
if [ "$rc" = 1 ] && [ "$(wc -w <<<"$hung")" = 2 ] && [ -z "$alive" ] && [ "$stopped" = 2 ] &&
   [ "$notrun" = 4 ] && [ "$secs" -lt 60 ] &&
   grep -q "the stub's last words before it hangs" "$s"/build/results/deadline-$rel.tap &&
   [[ $last =~ ^[0-9]+\ passed,\ 6\ failed ]]; then
	pass "scripts/check AHEADFS_CHECK_DEADLINE: guests that never end are stopped and reported, the summary last"
else
	for p in $alive; do kill "$p"; done
	fail "scripts/check AHEADFS_CHECK_DEADLINE: guests that never end are stopped and reported" \
		"exit $rc after $secs s; hung: $hung, still alive:$alive; $stopped stopped, $notrun not run; last line: $last
$(cat "$s"/build/results/deadline-*.tap 2>/dev/null | head -n 20)
$(tail -n 8 "$tmp/stub.out")"
fi

# The packages' job hangs (DKMS's build on the host, beside the test
# guests): at the deadline it is stopped and reported, and so are the
# package guests waiting for it; the aheadctl guests behind them are not
# run.
rm -f "$s/build/hung"
t0=$(date +%s)
stubcheck AHEADFS_CHECK_DEADLINE=20 AHEADFS_STUB_HANG=dkms-prebuild
secs=$(($(date +%s) - t0))
last=$(tail -n 1 "$tmp/stub.out")
hung=$(cat "$s/build/hung" 2>/dev/null)
alive=
for p in $hung; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
stopped=$(grep -l "^not ok 1 .*: stopped at the overall deadline, 20 s after the start" "$s"/build/results/deadline-*.tap 2>/dev/null | wc -l)
notrun=$(grep -l "^not ok 1 .*: not started before the overall deadline" "$s"/build/results/deadline-*.tap 2>/dev/null | wc -l)
if [ "$rc" = 1 ] && [ "$(wc -w <<<"$hung")" = 1 ] && [ -z "$alive" ] && [ "$stopped" = 3 ] &&
   [ "$notrun" = 2 ] && [ "$secs" -lt 60 ] && [ "$(calls_line deb.sh)" = 0 ] &&
   grep -q "== DKMS builds the package's module on the host" "$s"/build/results/deadline-packages.tap &&
   [[ $last =~ ^[0-9]+\ passed,\ 5\ failed ]]; then
	pass "scripts/check AHEADFS_CHECK_DEADLINE: a packages' job that never ends is stopped and reported, the summary last"
else
	for p in $alive; do kill "$p"; done
	fail "scripts/check AHEADFS_CHECK_DEADLINE: a packages' job that never ends is stopped and reported" \
		"exit $rc after $secs s; hung: $hung, still alive:$alive; $stopped stopped, $notrun not run; last line: $last
$(cat "$s"/build/results/deadline-*.tap 2>/dev/null | head -n 20)
$(tail -n 8 "$tmp/stub.out")"
fi

# A skip in a guest's results counts only if the allow-list names it.
stubcheck AHEADFS_CHECK_GUESTS=test "AHEADFS_STUB_SKIP=ok 1 xfs.tracing # SKIP runs on ext4 only"
last=$(tail -n 1 "$tmp/stub.out")
if [ "$rc" = 0 ] && [[ $last =~ ^[0-9]+\ passed,\ 0\ failed,\ 2\ skipped$ ]]; then
	pass "scripts/check: a guest's skip on the allow-list (selftests/skips.allow) is a skip"
else
	fail "scripts/check: a guest's skip on the allow-list is a skip" "exit $rc; last line: $last"
fi
stubcheck AHEADFS_CHECK_GUESTS=test "AHEADFS_STUB_SKIP=ok 1 xfs.tracing # SKIP bpftool missing"
last=$(tail -n 1 "$tmp/stub.out")
if [ "$rc" = 1 ] && [[ $last =~ ^[0-9]+\ passed,\ 2\ failed$ ]] &&
   grep -q "xfs.tracing # SKIP bpftool missing (a skip not on the allow-list" "$tmp/stub.out"; then
	pass "scripts/check: a guest's skip not on the allow-list fails the run"
else
	fail "scripts/check: a guest's skip not on the allow-list fails the run" "exit $rc; last line: $last
$(grep -i skip "$tmp/stub.out" | head -n 5)"
fi

expect "scripts/debug-kernel: an unknown version is refused" 2 "unknown version 5.10" \
	"$top/scripts/debug-kernel" 5.10

# A skip counts only if the allow-list names it; any other fails the run.
k=$tmp/ktap && mkdir -p "$k"
printf 'TAP version 13\n1..1\nok 1 xfs.tracing # SKIP runs on ext4 only\n' >"$k/6.1.0-1-amd64-xfs-tracing.tap"
printf 'TAP version 13\n1..1\nok 1 xfs.data\n' >"$k/6.1.0-1-amd64-xfs-data.tap"
expect "ktap-summary: a skip on the allow-list is a skip" 0 "1 passed, 0 failed, 1 skipped" \
	"$top/scripts/ktap-summary" "$k/6.1.0-1-amd64-xfs-tracing.tap" "$k/6.1.0-1-amd64-xfs-data.tap"
printf 'TAP version 13\n1..2\nok 1 a # SKIP no tool\nok 2 b\n' >"$k/other.tap"
expect "ktap-summary: a skip not on the allow-list fails the run" 1 "1 passed, 1 failed, 1 skipped" \
	"$top/scripts/ktap-summary" "$k/6.1.0-1-amd64-xfs-tracing.tap" "$k/other.tap"
printf '^other: ok 1 a # SKIP no tool$\n' >"$k/allow"
expect "ktap-summary: AHEADFS_SKIP_ALLOW names another allow-list" 0 "1 passed, 0 failed, 1 skipped" \
	env AHEADFS_SKIP_ALLOW="$k/allow" "$top/scripts/ktap-summary" "$k/other.tap"

# The benchmarks' own arguments, refused before anything needs root.
expect "bench/meta.sh: an unknown BENCH_META_CASES case is refused" 1 \
	"BENCH_META_CASES: unknown case 'bogus'" \
	env BENCH_META_CASES="local bogus" bash "$top/bench/meta.sh"
expect "bench/meta.sh: an unknown BENCH_CLOCK is refused" 2 \
	"BENCH_CLOCK must be wall or icount, not 'cycles'" \
	env BENCH_CLOCK=cycles bash "$top/bench/meta.sh"
expect "bench/meta.sh: a BENCH_META_TIMEOUT_MS of 0 is refused" 2 \
	"BENCH_META_TIMEOUT_MS must be a number of ms > 0" \
	env BENCH_CLOCK=icount BENCH_META_TIMEOUT_MS=0 bash "$top/bench/meta.sh"
expect "bench/meta.sh: a BENCH_META_TIMEOUT_MS that is no number is refused" 2 \
	"BENCH_META_TIMEOUT_MS must be a number of ms > 0" \
	env BENCH_META_TIMEOUT_MS=30s bash "$top/bench/meta.sh"
expect "bench/meta.sh: an unknown BENCH_META_WALK is refused" 2 \
	"BENCH_META_WALK must be relative or absolute, not 'sideways'" \
	env BENCH_META_WALK=sideways bash "$top/bench/meta.sh"
expect "bench/copy.sh: an unknown BENCH_CLOCK is refused" 2 \
	"BENCH_CLOCK must be wall or icount, not 'cycles'" \
	env BENCH_CLOCK=cycles bash "$top/bench/copy.sh"
expect "bench/prefetch.sh: an unknown BENCH_CLOCK is refused" 2 \
	"BENCH_CLOCK must be wall or icount, not 'cycles'" \
	env BENCH_CLOCK=cycles bash "$top/bench/prefetch.sh"
expect "bench/prefetch.sh: a BENCH_MODES mode it does not know is refused" 2 \
	"BENCH_MODES names lower, kernel, legacy or ahead, not 'hot'" \
	env BENCH_MODES="ahead hot" bash "$top/bench/prefetch.sh"
expect "bench/prefetch.sh: an empty BENCH_MODES is refused" 2 \
	"BENCH_MODES is empty" env BENCH_MODES=" " bash "$top/bench/prefetch.sh"
expect "bench/tracing.sh: an unknown BENCH_CLOCK is refused" 1 \
	"BENCH_CLOCK must be wall or icount, not 'cycles'" \
	env BENCH_CLOCK=cycles bash "$top/bench/tracing.sh"

# scripts/bench-run's guest: BENCH_CLOCK=icount asks vm-run for an
# instruction-counted, single-threaded TCG guest; wall time asks for neither.
b=$tmp/bstub
mkdir -p "$b/scripts" "$b/bench"
cp "$top/scripts/bench-run" "$b/scripts/"
cat >"$b/scripts/vm-run" <<'STUB'
#!/bin/sh
printf '%s\n' "$@" >>"$(dirname "$0")/../calls"
STUB
chmod +x "$b/scripts/vm-run"
printf '#!/bin/sh\n# vm-run-opts: -numa node\n' >"$b/bench/x.sh"
expect "bench-run: an unknown BENCH_CLOCK is refused" 2 \
	"BENCH_CLOCK must be wall or icount, not 'cycles'" \
	env BENCH_CLOCK=cycles KERNELS=6.12 "$b/scripts/bench-run" x
run env BENCH_CLOCK=icount KERNELS=6.12 "$b/scripts/bench-run" x
if [ "$rc" = 0 ] && grep -qx -- "--qemu-opts" "$b/calls" &&
   grep -qx -- "-numa node -icount shift=0,sleep=off" "$b/calls" &&
   grep -qx -- "--tcg-single" "$b/calls" && grep -qx "BENCH_CLOCK=icount" "$b/calls" &&
   grep -A1 -x -- "--cpus" "$b/calls" | grep -qx 1; then
	pass "bench-run BENCH_CLOCK=icount: -icount shift=0,sleep=off, --tcg-single, one vCPU, BENCH_CLOCK reaches the guest"
else
	fail "bench-run BENCH_CLOCK=icount" "exit $rc; calls:
$(cat "$b/calls" 2>/dev/null)"
fi
rm -f "$b/calls"
run env -u BENCH_CLOCK KERNELS=6.12 "$b/scripts/bench-run" x
if [ "$rc" = 0 ] && grep -qx -- "-numa node" "$b/calls" && ! grep -q -- "icount\|--tcg-single\|--cpus" "$b/calls"; then
	pass "bench-run without BENCH_CLOCK: real time, the script's own options only"
else
	fail "bench-run without BENCH_CLOCK" "exit $rc; calls:
$(cat "$b/calls" 2>/dev/null)"
fi
rm -f "$b/calls"
run env -u BENCH_CPU KERNELS=6.12 "$b/scripts/bench-run" x
if [ "$rc" = 0 ] && grep -qx -- "--no-erms" "$b/calls" && grep -qx "BENCH_CPU=noerms" "$b/calls"; then
	pass "bench-run without BENCH_CPU: the guest's CPU without ERMS, and BENCH_CPU=noerms reaches the guest"
else
	fail "bench-run without BENCH_CPU" "exit $rc; calls:
$(cat "$b/calls" 2>/dev/null)"
fi
rm -f "$b/calls"
run env BENCH_CPU=max KERNELS=6.12 "$b/scripts/bench-run" x
if [ "$rc" = 0 ] && ! grep -q -- "erms" "$b/calls" && grep -qx "BENCH_CPU=max" "$b/calls"; then
	pass "bench-run BENCH_CPU=max: the CPU as virtme-ng gives it, and BENCH_CPU=max reaches the guest"
else
	fail "bench-run BENCH_CPU=max" "exit $rc; calls:
$(cat "$b/calls" 2>/dev/null)"
fi
rm -f "$b/calls"
expect "bench-run: an unknown BENCH_CPU is refused" 2 \
	"BENCH_CPU must be noerms or max, not 'fast'" \
	env BENCH_CPU=fast KERNELS=6.12 "$b/scripts/bench-run" x
rm -f "$b/calls"
# "# bench-needs: ksmbd": scripts/ksmbd-build for each kernel before its
# guest; a kernel whose build fails is not run, and bench-run fails.
printf '#!/bin/sh\n# bench-needs: ksmbd\n' >"$b/bench/k.sh"
cat >"$b/scripts/ksmbd-build" <<'STUB'
#!/bin/sh
echo "ksmbd-build $1" >>"$(dirname "$0")/../calls"
[ "$1" != 6.1 ] || { echo "ksmbd-build: stub failure" >&2; exit 1; }
STUB
chmod +x "$b/scripts/ksmbd-build"
run env KERNELS="6.1 6.12" "$b/scripts/bench-run" k
if [ "$rc" = 1 ] && grep -qx "ksmbd-build 6.1" "$b/calls" &&
   grep -qx "ksmbd-build 6.12" "$b/calls" &&
   [ "$(grep -c -- "--kernel" "$b/calls")" = 1 ] &&
   grep -A1 -x -- "--kernel" "$b/calls" | grep -qx 6.12 &&
   grep -qF "scripts/ksmbd-build 6.1 failed; not run" <<<"$out"; then
	pass "bench-run: \"# bench-needs: ksmbd\" builds ksmbd per kernel first; a kernel whose build fails is not run, and the run fails"
else
	fail "bench-run: bench-needs ksmbd" "exit $rc; out: $out; calls:
$(cat "$b/calls" 2>/dev/null)"
fi
rm -f "$b/calls"
run env KERNELS=6.12 "$b/scripts/bench-run" x
if [ "$rc" = 0 ] && ! grep -q "ksmbd-build" "$b/calls"; then
	pass "bench-run: a script that needs no ksmbd builds none"
else
	fail "bench-run: no bench-needs line" "exit $rc; calls:
$(cat "$b/calls" 2>/dev/null)"
fi
rm -f "$b/calls" "$b/bench/k.sh"
printf '#!/bin/sh\n# bench-clock: icount\n' >"$b/bench/y.sh"
run env -u BENCH_CLOCK KERNELS=6.12 "$b/scripts/bench-run" y
if [ "$rc" = 0 ] && grep -qx -- "-icount shift=0,sleep=off" "$b/calls" &&
   grep -qx "BENCH_CLOCK=icount" "$b/calls"; then
	pass "bench-run: a script's \"# bench-clock: icount\" is its default clock, and reaches the guest"
else
	fail "bench-run: a script's bench-clock line" "exit $rc; calls:
$(cat "$b/calls" 2>/dev/null)"
fi
rm -f "$b/calls"
run env BENCH_CLOCK=wall KERNELS=6.12 "$b/scripts/bench-run" y
if [ "$rc" = 0 ] && ! grep -q -- "icount\|--tcg-single" "$b/calls" &&
   grep -qx "BENCH_CLOCK=wall" "$b/calls"; then
	pass "bench-run: BENCH_CLOCK=wall overrides a script's bench-clock line"
else
	fail "bench-run: BENCH_CLOCK=wall over a bench-clock line" "exit $rc; calls:
$(cat "$b/calls" 2>/dev/null)"
fi

expect "make demo: an unknown DEMO_CLOCK is refused before anything is built" 2 \
	"DEMO_CLOCK must be icount or wall, not 'fast'" \
	make -s --no-print-directory -C "$top" demo DEMO_CLOCK=fast

# scripts/insn-profile and its QEMU plugin (bench/insncount.c).
expect "insn-profile: no --kernel is refused" 2 "usage:" "$top/scripts/insn-profile"
expect "insn-profile: a tag with a slash is refused" 2 \
	"--tag: letters, digits, . _ - only" "$top/scripts/insn-profile" --kernel 6.12 --tag a/b
expect "insn-profile: an argument that is no VAR=VALUE is refused" 2 \
	"not VAR=VALUE: lower=1" "$top/scripts/insn-profile" --kernel 6.12 PROFILE_OPS=stat lower=1
expect "insn-profile: a kernel that is not installed is refused" 2 \
	"no installed kernel 5.4" "$top/scripts/insn-profile" --kernel 5.4
if so=$("$top/scripts/qemu-plugin-build" 2>"$tmp/plugin.err"); then
	pass "qemu-plugin-build: the insncount plugin builds"
	expect "insncount: an unknown plugin argument stops QEMU" 1 \
		"insncount: unknown argument bogus=1" \
		qemu-system-x86_64 -M none -accel tcg -display none -nodefaults \
		-plugin "$so,out=$tmp/p.out,bogus=1"
	expect "insncount: a plugin without out= stops QEMU" 1 \
		"insncount: out=FILE is required" \
		qemu-system-x86_64 -M none -accel tcg -display none -nodefaults -plugin "$so"
	expect "insncount: an out= it cannot create stops QEMU" 1 \
		"$tmp/none/p.out" \
		qemu-system-x86_64 -M none -accel tcg -display none -nodefaults \
		-plugin "$so,out=$tmp/none/p.out"
else
	fail "qemu-plugin-build: the insncount plugin builds" "$(cat "$tmp/plugin.err")"
fi

echo "1..$n"
exit $failed
