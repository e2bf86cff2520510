# aheadfs top-level build.
#
#   make                  module for KDIR, userland tools, selftests
#   make KERNELS="6.1 6.12" modules   one module per target kernel
#   make check            set-up, build, host tests, selftests in a guest per kernel
#   make bench [BENCH=n]  benchmarks in a guest (bench/<n>.sh)
#   make demo             mount aheadfs in a guest and show its stats
#   make install | dkms | checkpatch | clean

TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD := $(TOP)/build
KERNELS ?= 6.1 6.12
BENCH ?=
# The running kernel's build dir if it has one, else the newest Debian headers.
KDIR ?= $(firstword $(wildcard /lib/modules/$(shell uname -r)/build) \
	$(lastword $(sort $(wildcard /usr/src/linux-headers-*-amd64))))

SELFTEST_SRCS := $(wildcard selftests/*.c)
SELFTEST_BINS := $(patsubst selftests/%.c,$(BUILD)/selftests/%,$(SELFTEST_SRCS))
SELFTEST_CFLAGS := -O2 -g -Wall -I$(BUILD)/kselftest -Iselftests -D_GNU_SOURCE
SELFTEST_LDLIBS := -luring -laio -lpthread

HAVE_USERLAND := $(wildcard userland/Makefile)
HAVE_BPF := $(wildcard bpf/Makefile)
HAVE_UNIT := $(wildcard selftests/unit/Makefile)

# $(call host_check,TARGET,RESULT-PREFIX): run a host test target; if it fails
# without leaving its KTAP in build/results, record that as a failure.
define host_check
	@$(MAKE) --no-print-directory $(1) || { \
		ls $(BUILD)/results/$(2)*.tap >/dev/null 2>&1 || \
		printf 'TAP version 13\n1..1\nnot ok 1 %s did not complete\n' '$(1)' \
			>$(BUILD)/results/$(2)-incomplete.tap; }
endef

.PHONY: all module modules userland bpf selftests check check-host guest-tests \
	bench demo install dkms checkpatch clean deps userland-check bpf-check \
	unit-check

all: module $(if $(HAVE_USERLAND),userland) $(if $(HAVE_BPF),bpf) selftests

deps:
	@scripts/setup-deps

module:
	@scripts/kbuild $(KDIR)

modules:
	@set -e; for k in $(KERNELS); do scripts/kbuild $$k; done

userland:
	$(MAKE) -C userland

bpf:
	$(MAKE) -C bpf

selftests: $(SELFTEST_BINS)

$(BUILD)/selftests/%: selftests/%.c selftests/aheadfs_test.h
	@mkdir -p $(dir $@)
	$(CC) $(SELFTEST_CFLAGS) -o $@ $< $(SELFTEST_LDLIBS)

userland-check:
	$(if $(HAVE_USERLAND),$(MAKE) -C userland check)

bpf-check:
	$(if $(HAVE_BPF),$(MAKE) -C bpf check)

unit-check:
	$(if $(HAVE_UNIT),$(MAKE) -C selftests/unit unit-check)

# Host-side tests: no guest needed.  Each writes build/results/<name>*.tap.
check-host:
	$(call host_check,unit-check,unit-)
	$(call host_check,userland-check,userland)
	$(call host_check,bpf-check,bpf-)

# One guest per kernel; a guest that does not finish is a failure line.
guest-tests: modules selftests
	@set -e; for k in $(KERNELS); do \
		rel=$$(scripts/kernel-release $$k); \
		echo "== guest $$rel" >&2; \
		if ! scripts/vm-run --kernel $$k -- scripts/guest-run $(GUEST_ARGS); then \
			printf 'TAP version 13\n1..1\nnot ok 1 guest %s did not finish\n' $$rel \
				>$(BUILD)/results/$$rel-guest.tap; \
		fi; \
	done

check:
	@scripts/setup-deps
	@rm -rf $(BUILD)/results && mkdir -p $(BUILD)/results
	@$(MAKE) --no-print-directory all modules
	@$(MAKE) --no-print-directory check-host
	@$(MAKE) --no-print-directory guest-tests
	@scripts/ktap-summary $(BUILD)/results/*.tap

bench: modules selftests $(if $(HAVE_USERLAND),userland) $(if $(HAVE_BPF),bpf)
	@scripts/setup-deps
	@scripts/bench-run $(BENCH)

demo: modules $(if $(HAVE_USERLAND),userland)
	@scripts/setup-deps
	@scripts/vm-run --kernel $(firstword $(KERNELS)) -- scripts/demo

install: module
	@rel=$$(make -s -C $(KDIR) kernelrelease); \
	install -D -m 0644 $(BUILD)/kmod/$$rel/aheadfs.ko \
		$(DESTDIR)/lib/modules/$$rel/updates/aheadfs.ko && \
	{ [ -n "$(DESTDIR)" ] || depmod -a $$rel; }
	$(if $(HAVE_USERLAND),install -D -m 0755 userland/aheadctl $(DESTDIR)/usr/local/sbin/aheadctl)

# DKMS builds from a copy of kmod/ with its own probe run (dkms.conf).
dkms:
	@ver=$$(git describe --always --dirty 2>/dev/null || echo 0); \
	src=$(DESTDIR)/usr/src/aheadfs-$$ver; \
	rm -rf $$src && mkdir -p $$src/scripts && \
	cp -r kmod $$src/ && cp scripts/kbuild scripts/kernel-release $$src/scripts/ && \
	sed "s/@VERSION@/$$ver/" kmod/dkms.conf.in >$$src/dkms.conf && \
	echo "dkms source in $$src: dkms add aheadfs/$$ver && dkms install aheadfs/$$ver"

checkpatch:
	@scripts/setup-deps >/dev/null
	@perl $(BUILD)/checkpatch/checkpatch.pl --no-tree --file --terse \
		--ignore SPDX_LICENSE_TAG \
		kmod/*.c kmod/*.h kmod/probes/*.c

clean:
	rm -rf $(BUILD)/kmod $(BUILD)/selftests $(BUILD)/results $(BUILD)/bench
	$(if $(HAVE_USERLAND),$(MAKE) -C userland clean)
	$(if $(HAVE_BPF),$(MAKE) -C bpf clean)
