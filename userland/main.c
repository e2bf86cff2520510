/* main.c: aheadctl's global options, the object dispatch and the help text. */
#include <stdlib.h>
#include <string.h>

#include "aheadctl.h"

struct opts g;

static const char help_text[] =
"usage: aheadctl [-j] [-n] [--yes] OBJECT VERB [ARGS]\n"
"\n"
"  -j, --json      JSON on stdout (messages go to stderr)\n"
"  -n, --dry-run   print what a writing verb would do, change nothing\n"
"  -y, --yes       confirm a write that goes to a BMC (bios set, power-cycle)\n"
"\n"
"Objects and verbs:\n"
"  irq show dev DEV [node N]\n"
"      the NIC's IRQs (from its PCI function's msi_irqs and /proc/interrupts),\n"
"      its NUMA node and local CPUs, affinity and effective affinity, managed\n"
"      and irqbalance-owned IRQs, off-node IRQs, XPS and RPS per queue\n"
"  irq set dev DEV policy local|spread|cpus LIST [xps] [node N]\n"
"      one IRQ per CPU, round robin over: the local CPUs (local), all online\n"
"      CPUs local first (spread) or LIST; writes smp_affinity_list, reads it\n"
"      back and checks the effective affinity; xps: tx queue q gets the CPU\n"
"      of the q-th IRQ.  Managed IRQs are reported and left alone.\n"
"  irq ban dev DEV\n"
"      write an irqbalance policy script banning DEV's IRQs\n"
"  numa bw [--size SIZE] [--threads N] [--seconds S] [--runs R]\n"
"      read bandwidth matrix, CPU node x memory node, MB/s; flags a\n"
"      remote/local ratio below 0.25\n"
"  fs show [MNT]\n"
"  fs set MNT KEY=VALUE\n"
"      aheadfs mounts, their tunables and stats (/sys/fs/aheadfs/<dev>/)\n"
"  bios show [--via redfish|ipmi|racadm|onecli|ilorest|sum|syscfg] [BMC]\n"
"  bios set snoop-mode home|early|cod|osb [--reboot] [--via ...] [BMC]\n"
"  bios power-cycle [--via redfish|ipmi] BMC\n"
"      BMC: --bmc URL|HOST [--user USER] [--password-file FILE] [--insecure]\n"
"      [--system ID]; the password comes from FILE (mode 0600) or\n"
"      AHEADCTL_BMC_PASSWORD, never from the command line\n"
"  doctor [--skip-bw]\n"
"      off-node NIC IRQs, irqbalance conflicts, the bandwidth verdict, NFS\n"
"      mounts with noac/actimeo=0, aheadfs mounts with uncached tails or\n"
"      txn_kb above window_kb; exit 0 when nothing was found, 1 otherwise\n"
"  help\n"
"\n"
"Documentation/aheadctl.rst has the details.\n";

static void usage(FILE *f)
{
	fputs(help_text, f);
}

int main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			g.json = true;
		} else if (!strcmp(a, "-n") || !strcmp(a, "--dry-run")) {
			g.dry_run = true;
		} else if (!strcmp(a, "-y") || !strcmp(a, "--yes")) {
			g.yes = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-jn") || !strcmp(a, "-nj")) {
			g.json = g.dry_run = true;
		} else {
			err("unknown option '%s' (see 'aheadctl help')", a);
			return EXIT_USAGE;
		}
	}
	if (i == argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	argc -= i;
	argv += i;
	if (!strcmp(argv[0], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[0], "irq"))
		return cmd_irq(argc - 1, argv + 1);
	if (!strcmp(argv[0], "numa"))
		return cmd_numa(argc - 1, argv + 1);
	if (!strcmp(argv[0], "fs"))
		return cmd_fs(argc - 1, argv + 1);
	if (!strcmp(argv[0], "bios"))
		return cmd_bios(argc - 1, argv + 1);
	if (!strcmp(argv[0], "doctor"))
		return cmd_doctor(argc - 1, argv + 1);
	err("unknown object '%s' (irq, numa, fs, bios, doctor, help)", argv[0]);
	return EXIT_USAGE;
}
