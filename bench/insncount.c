// SPDX-License-Identifier: GPL-2.0
/*
 * insncount: a QEMU TCG plugin that counts the instructions a guest's
 * vCPU executes, by the guest virtual address each translated block
 * starts at, and writes the counts out whenever the guest executes the
 * marker address.  Kernel blocks are counted one by one (the host maps
 * them to functions and modules with the guest's /proc/kallsyms); user
 * blocks are summed into one count at address 0.
 *
 *   qemu-system-x86_64 ... -icount shift=0,sleep=off \
 *       -plugin build/qemu-plugin/libinsncount.so,out=FILE[,mark=0xADDR]
 *
 * The marker (default 0x5a5a5a5a0000) is a user address nothing maps: a
 * guest program that wants a phase cut maps an executable page there
 * (MAP_FIXED) holding a "ret" and calls it (bench/meta-profile.sh's
 * metaops).  Every marker call appends to FILE:
 *
 *   phase N
 *   VADDR INSNS           (one line per block address executed since the
 *   ...                    previous phase, in hex and decimal)
 *   end N TOTAL
 *
 * and starts the next phase from zero.  The counts are exact for one vCPU
 * (inline additions, not atomic across vCPUs: run the guest with one).
 * The header is QEMU's own plugin API, taken from the QEMU source that
 * matches the installed QEMU at build time (scripts/qemu-plugin-build).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define SLOTS_LOG2	21
#define SLOTS		(1UL << SLOTS_LOG2)
#define KERNEL_START	0xffff800000000000ULL

struct slot {
	uint64_t vaddr;		/* 0: a free slot */
	uint64_t insns;
};

static struct slot *slots;
static uint64_t user_insns;
static uint64_t mark = 0x5a5a5a5a0000ULL;
static FILE *out;
static unsigned long phase;
static unsigned long used;

static struct slot *slot_of(uint64_t vaddr)
{
	uint64_t i = (vaddr * 0x9e3779b97f4a7c15ULL) >> (64 - SLOTS_LOG2);

	while (slots[i].vaddr && slots[i].vaddr != vaddr)
		i = (i + 1) & (SLOTS - 1);
	if (!slots[i].vaddr) {
		if (++used > SLOTS / 2) {
			fprintf(stderr, "insncount: more than %lu block addresses\n",
				SLOTS / 2);
			abort();
		}
		slots[i].vaddr = vaddr;
	}
	return &slots[i];
}

static void dump(unsigned int vcpu, void *udata)
{
	uint64_t total = user_insns;
	unsigned long i;

	(void)vcpu;
	(void)udata;
	fprintf(out, "phase %lu\n", ++phase);
	if (user_insns)
		fprintf(out, "0 %" PRIu64 "\n", user_insns);
	user_insns = 0;
	for (i = 0; i < SLOTS; i++) {
		if (!slots[i].insns)
			continue;
		fprintf(out, "%" PRIx64 " %" PRIu64 "\n", slots[i].vaddr,
			slots[i].insns);
		total += slots[i].insns;
		slots[i].insns = 0;
	}
	fprintf(out, "end %lu %" PRIu64 "\n", phase, total);
	fflush(out);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	uint64_t *counter = &user_insns;

	(void)id;
	if (vaddr == mark)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, dump,
						     QEMU_PLUGIN_CB_NO_REGS,
						     NULL);
	if (vaddr >= KERNEL_START)
		counter = &slot_of(vaddr)->insns;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 counter,
						 qemu_plugin_tb_n_insns(tb));
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	(void)id;
	(void)p;
	if (out)
		fclose(out);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *path = NULL;
	int i;

	if (!info->system_emulation || strcmp(info->target_name, "x86_64")) {
		fprintf(stderr, "insncount: x86_64 system emulation only\n");
		return -1;
	}
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			path = argv[i] + 4;
		} else if (!strncmp(argv[i], "mark=", 5)) {
			mark = strtoull(argv[i] + 5, NULL, 0);
		} else {
			fprintf(stderr, "insncount: unknown argument %s\n",
				argv[i]);
			return -1;
		}
	}
	if (!path) {
		fprintf(stderr, "insncount: out=FILE is required\n");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	slots = calloc(SLOTS, sizeof(*slots));
	if (!slots) {
		fprintf(stderr, "insncount: out of memory\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
