# aheadfs top-level build.
#
#   make                  module for KDIR, userland tools, selftests
#   make KERNELS="6.1 6.12"   the same, with one module per target kernel
#   make modules          one module per kernel of KERNELS (default 6.1 6.12)
#   make check            set-up, build, host tests, selftests in a guest per kernel
#   make check KERNEL=IMAGE KDIR=DIR   the same for that one kernel (any kernel)
#   make check-full       the exhaustive tier: check plus what it leaves out
#   make check-debug      the test guests under a kernel built with its checkers
#   make bench [BENCH=n]  benchmarks in a guest (bench/<n>.sh)
#   make demo             mount aheadfs in a guest and show its stats (DEMO_CLOCK=icount|wall)
#   make man              man pages build/man/*.{5,8} from Documentation/man/*.rst
#   make deb              Debian packages aheadfs-dkms, aheadfs-tools in build/deb/
#   make install | dkms | checkpatch | clean

TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD := $(TOP)/build
KERNELS ?= 6.1 6.12
BENCH ?=
# make demo's guest clock: icount (instruction-counted, exact) or wall
DEMO_CLOCK ?= icount
# The running kernel's build dir if it has one, else the newest Debian headers.
KDIR ?= $(firstword $(wildcard /lib/modules/$(shell uname -r)/build) \
	$(lastword $(sort $(wildcard /usr/src/linux-headers-*-amd64))))

# Selftests: selftests/*.c, and selftests/DIR/*.c unless DIR has its own
# Makefile (selftests/unit: host unit tests).  selftests/DIR/NAME.c builds
# into build/selftests/DIR-NAME.
SELFTEST_OWN_DIRS := $(patsubst %/Makefile,%/,$(wildcard selftests/*/Makefile))
SELFTEST_SRCS := $(wildcard selftests/*.c) \
	$(filter-out $(addsuffix %,$(SELFTEST_OWN_DIRS)),$(wildcard selftests/*/*.c))
selftest_bin = $(BUILD)/selftests/$(subst /,-,$(patsubst selftests/%.c,%,$(1)))
SELFTEST_BINS := $(foreach s,$(SELFTEST_SRCS),$(call selftest_bin,$(s)))
SELFTEST_HDRS := $(wildcard selftests/*.h selftests/*/*.h) $(BUILD)/kselftest/kselftest_harness.h
SELFTEST_CFLAGS := -O2 -g -Wall -I$(BUILD)/kselftest -I$(TOP)/selftests -D_GNU_SOURCE
SELFTEST_LDLIBS := -luring -laio -lpthread

HAVE_USERLAND := $(wildcard userland/Makefile)
HAVE_BPF := $(wildcard bpf/Makefile)
HAVE_UNIT := $(wildcard selftests/unit/Makefile)

# Man pages: Documentation/man/NAME.SECTION.rst -> build/man/NAME.SECTION,
# by rst2man (Debian's python3-docutils); a docutils warning fails the build.
# They include text from the guides, so they depend on them.
PREFIX ?= /usr/local
MANDIR ?= $(PREFIX)/share/man
RST2MAN ?= rst2man
MAN_SRCS := $(wildcard Documentation/man/*.rst)
MAN_PAGES := $(patsubst Documentation/man/%.rst,$(BUILD)/man/%,$(MAN_SRCS))
MAN_VERSION := $(shell git describe --tags --always 2>/dev/null || echo 0.1-unknown)
MODPROBE_CONF := kmod/aheadfs.modprobe.conf

.PHONY: all module modules userland bpf selftests check check-host guest-tests \
	userland-check-san bpf-check-san fuzz \
	bench demo demo-clock install dkms checkpatch clean deps userland-check bpf-check \
	unit-check man man-check install-man install-modprobe-conf scripts-check
.PHONY: deb

# KERNELS given on the command line or in the environment: a module for each.
MODULE_TARGET := $(if $(filter command line environment,$(origin KERNELS)),modules,module)

all: $(MODULE_TARGET) $(if $(HAVE_USERLAND),userland) $(if $(HAVE_BPF),bpf) selftests

deps:
	@scripts/setup-deps

$(BUILD)/kselftest/kselftest_harness.h $(BUILD)/checkpatch/checkpatch.pl:
	@scripts/setup-deps

module:
	@nice scripts/kbuild $(KDIR)

modules:
	@set -e; for k in $(KERNELS); do nice scripts/kbuild $$k; done

userland:
	$(MAKE) -C userland

bpf:
	$(MAKE) -C bpf

# Binaries of removed sources must not linger: the guest runs them all.
selftests: $(SELFTEST_BINS)
	@for f in $(BUILD)/selftests/*; do \
		case " $(SELFTEST_BINS) " in *" $$f "*) ;; *) rm -f "$$f" ;; esac; \
	done

define selftest_rule
$(call selftest_bin,$(1)): $(1) $(SELFTEST_HDRS)
	@mkdir -p $$(dir $$@)
	nice $$(CC) $$(SELFTEST_CFLAGS) -I$(dir $(1)) -o $$@ $(1) $$(SELFTEST_LDLIBS)
endef
$(foreach s,$(SELFTEST_SRCS),$(eval $(call selftest_rule,$(s))))

# The kselftest framework (lib.mk, run_kselftest.sh) that `make -C selftests
# install` uses, extracted here on the host: a guest test installs the tree.
.PHONY: ksft-framework
selftests: ksft-framework
ksft-framework:
	@$(MAKE) -s --no-print-directory -C selftests framework

userland-check:
	$(if $(HAVE_USERLAND),$(MAKE) -C userland check)

bpf-check:
	$(if $(HAVE_BPF),$(MAKE) -C bpf check)

unit-check:
	$(if $(HAVE_UNIT),$(MAKE) -C selftests/unit unit-check)

man: $(MAN_PAGES)

# The footer says the version of the tree at the time of the build.
$(BUILD)/man/%: Documentation/man/%.rst \
		Documentation/aheadfs.rst Documentation/aheadctl.rst Documentation/tracing.rst
	@mkdir -p $(dir $@)
	cd Documentation/man && sed 's|@VERSION@|$(MAN_VERSION)|' $*.rst | \
		$(RST2MAN) --halt=warning --report=warning - $@.tmp
	@mv $@.tmp $@

# The pages render without warnings and name every mount option, module
# parameter, sysfs file, statistic and CLI verb; TAP in build/results/man.tap.
man-check: man
	@mkdir -p $(BUILD)/results
	@selftests/man/host-tests.sh $(BUILD)/man >$(BUILD)/results/man.tap; \
		rc=$$?; cat $(BUILD)/results/man.tap; exit $$rc

# make check KERNEL=/KDIR= and vm-run --kernel-image, on the host with no
# guest and no build (seconds); TAP in build/results/scripts.tap.
scripts-check:
	@mkdir -p $(BUILD)/results
	@selftests/scripts/host-tests.sh >$(BUILD)/results/scripts.tap; \
		rc=$$?; cat $(BUILD)/results/scripts.tap; exit $$rc

# Host-side tests only: no guest needed.  Each writes build/results/*.tap.
check-host: $(if $(HAVE_UNIT),unit-check) $(if $(HAVE_USERLAND),userland-check) \
	$(if $(HAVE_BPF),bpf-check) man-check scripts-check $(if $(HAVE_BPF),bpf-check-san)

# The userland and bpf host tests again, the tools built with ASan and UBSan:
# bpf's (30 s) in check-host; aheadctl's take about ten times as long as
# userland-check (19 minutes on a loaded 2-core host), so they run on
# request.
userland-check-san:
	$(if $(HAVE_USERLAND),$(MAKE) -C userland check-san)

bpf-check-san:
	$(if $(HAVE_BPF),$(MAKE) -C bpf check-san)

# libFuzzer targets for aheadctl's parsers (conf, /proc/interrupts,
# mountinfo, snapshot, Redfish answers), each run FUZZ_SECONDS (30); not
# part of check.  Needs clang and its runtime (Debian: libclang-rt-dev).
fuzz:
	$(if $(HAVE_USERLAND),$(MAKE) -C userland fuzz $(if $(FUZZ_SECONDS),FUZZ_SECONDS=$(FUZZ_SECONDS)))

# The guests only, for modules and selftests already built.
guest-tests:
	@for k in $(KERNELS); do \
		scripts/vm-run --kernel $$k -- scripts/guest-run $(GUEST_ARGS) || exit 1; \
	done
	@scripts/ktap-summary $(BUILD)/results/*.tap

# Fresh random fsx seeds, FSX_SOAK (default 40) per lower, in a guest per
# kernel of KERNELS; not part of check, whose seeds are fixed.  A failing
# seed's replay line is in build/results/soak-*.log; see scripts/soak.
.PHONY: soak
soak: modules selftests
	@scripts/soak --kernels "$(KERNELS)" --seeds $(or $(FSX_SOAK),40)

# Everything, each step recorded as KTAP; see scripts/check.  KERNEL=IMAGE
# KDIR=DIR: that kernel instead of KERNELS (scripts/check says what each
# needs).  KDIR counts as given on the command line, or with KERNEL= from
# the environment too; KDIR's default, or a KDIR from the environment alone
# (make's module build dir), is not a request for it.
CHECK_KDIR := $(if $(or $(KERNEL),$(filter command line,$(origin KDIR))),$(if \
	$(filter command line environment,$(origin KDIR)),$(KDIR)))
check:
	@KERNELS="$(KERNELS)" KERNEL="$(KERNEL)" KDIR="$(CHECK_KDIR)" GUEST_ARGS="$(GUEST_ARGS)" scripts/check

# The exhaustive tier: scripts/check with AHEADFS_CHECK_FULL=1, everything
# make check leaves out: DKMS compiling in the package guests for every
# installed kernel, every test whole on every lower (the xfs duplicates),
# stress-ng and rcu_stress longer, FSX_SOAK (default 40) fresh fsx seeds
# per lower and kernel (scripts/soak), and make fuzz when there is such a
# target; one summary line, as make check.
.PHONY: check-full
check-full:
	@AHEADFS_CHECK_FULL=1 FSX_SOAK="$(or $(FSX_SOAK),40)" KERNELS="$(KERNELS)" KERNEL="$(KERNEL)" \
		KDIR="$(CHECK_KDIR)" GUEST_ARGS="$(GUEST_ARGS)" scripts/check

# The kernel's own checkers: Debian's kernel source (DEBUG_KERNEL, 6.12 by
# default) built once with lockdep, KASAN, UBSAN, kmemleak, DEBUG_OBJECTS,
# DEBUG_LIST and the hung-task detector (scripts/debug-kernel, config in
# selftests/config.debug, kept under build/debug-kernel/), then make
# check's test guests under it (make check KERNEL=IMAGE KDIR=DIR): any
# report of a checker fails.  GUEST_ARGS narrows it (--only NAME ...).
DEBUG_KERNEL ?= 6.12
.PHONY: check-debug
check-debug:
	@scripts/setup-deps
	@set -e; out=$$(scripts/debug-kernel $(DEBUG_KERNEL)); set -- $$out; \
	AHEADFS_CHECK_GUESTS=test AHEADFS_GUEST_MEMORY=4G \
	AHEADFS_GUEST_TIMEOUT=$${AHEADFS_GUEST_TIMEOUT:-14400} \
	AHEADFS_CHECK_DEADLINE=$${AHEADFS_CHECK_DEADLINE:-15600} \
	KERNELS= KERNEL=$$1 KDIR=$$2 \
	GUEST_ARGS="--debug-kernel --test-timeout 3600 $(GUEST_ARGS)" scripts/check

bench: modules selftests $(if $(HAVE_USERLAND),userland) $(if $(HAVE_BPF),bpf)
	@scripts/setup-deps
	@scripts/ksmbd-build $(KERNELS)
	@KERNELS="$(KERNELS)" scripts/bench-run $(BENCH)

# Before anything is built for it.
demo-clock:
	@case "$(DEMO_CLOCK)" in icount | wall) ;; *) echo "demo: DEMO_CLOCK must be icount or wall, not '$(DEMO_CLOCK)'" >&2; exit 2 ;; esac

demo: demo-clock $(if $(HAVE_USERLAND),userland)
	@scripts/setup-deps
	@nice scripts/kbuild $(firstword $(KERNELS))
	@scripts/ksmbd-build $(firstword $(KERNELS))
	@scripts/vm-run --kernel $(firstword $(KERNELS)) \
		$(if $(filter wall,$(DEMO_CLOCK)),,--tcg-single --cpus 1 --no-erms \
		--qemu-opts "-icount shift=0,sleep=off") -- scripts/demo

install: module install-man install-modprobe-conf
	@rel=$$(scripts/kernel-release $(abspath $(KDIR))) && \
	install -D -m 0644 $(BUILD)/kmod/$$rel/aheadfs.ko \
		$(DESTDIR)/lib/modules/$$rel/updates/aheadfs.ko && \
	{ [ -n "$(DESTDIR)" ] || depmod -a $$rel; }
	$(if $(HAVE_USERLAND),$(MAKE) -C userland install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR))

install-man: man
	install -d $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0644 $(filter %.5,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 $(filter %.8,$(MAN_PAGES)) $(DESTDIR)$(MANDIR)/man8/

# The admin's own /etc/modprobe.d/aheadfs.conf is kept; ours goes beside it
# as aheadfs.conf.dist, which modprobe does not read.
install-modprobe-conf:
	@f=$(DESTDIR)/etc/modprobe.d/aheadfs.conf; \
	if [ -e $$f ] && ! cmp -s $(MODPROBE_CONF) $$f; then \
		install -m 0644 $(MODPROBE_CONF) $$f.dist && \
		echo "install: $$f has local changes: kept; the shipped one is $$f.dist"; \
	else \
		install -D -m 0644 $(MODPROBE_CONF) $$f; \
	fi

# DKMS builds from a copy of kmod/ with its own probe run (dkms.conf).  The
# package aheadfs-dkms installs this same tree (debian/rules): what the
# module build reads is listed here only, and selftests/deb.sh proves the
# tree builds on its own.
DKMS_VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo 0)
dkms:
	@ver=$(DKMS_VERSION); \
	src=$(DESTDIR)/usr/src/aheadfs-$$ver; \
	rm -rf $$src && mkdir -p $$src/kmod/probes $$src/scripts && \
	cp kmod/Kbuild kmod/*.c kmod/*.h $$src/kmod/ && cp kmod/probes/*.c $$src/kmod/probes/ && \
	cp scripts/kbuild scripts/kernel-release $$src/scripts/ && \
	sed "s/@VERSION@/$$ver/" kmod/dkms.conf.in >$$src/dkms.conf && \
	echo "dkms source in $$src: dkms add aheadfs/$$ver && dkms install aheadfs/$$ver"

# Debian packages aheadfs-dkms and aheadfs-tools into build/deb/, built from
# a copy of the tree and checked by lintian; see debian/build-deb.
deb:
	@debian/build-deb

checkpatch: $(BUILD)/checkpatch/checkpatch.pl
	@perl $(BUILD)/checkpatch/checkpatch.pl --no-tree --file --terse \
		kmod/*.c kmod/*.h kmod/probes/*.c

clean:
	rm -rf $(BUILD)/kmod $(BUILD)/selftests $(BUILD)/results $(BUILD)/bench $(BUILD)/man
	$(if $(HAVE_USERLAND),$(MAKE) -C userland clean)
	$(if $(HAVE_BPF),$(MAKE) -C bpf clean)
	$(if $(HAVE_UNIT),$(MAKE) -C selftests/unit clean)
