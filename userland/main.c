/* main.c: aheadctl's global options, the object table and dispatch, the help text. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aheadctl.h"

#ifndef VERSION
#define VERSION "unknown"	/* the Makefile sets it from git describe */
#endif

struct opts g;

static const char usage_text[] =
"usage: aheadctl [-j] [-n] [-y] OBJECT VERB [ARGS]\n"
"       aheadctl OBJECT help | help | --help | --version\n"
"\n"
"  -j, --json      one JSON document on stdout, errors included (messages go\n"
"                  to stderr too)\n"
"  -n, --dry-run   print what a writing verb would do, change nothing\n"
"  -y, --yes       confirm a write that goes to a BMC (bios set, power-cycle)\n"
"  -h, --help      this text\n"
"  -V, --version   the version\n"
"Short options combine (-jn); global options go before OBJECT.\n";

/*
 * One entry per object: its name, its command, and its verbs' help.
 * 'aheadctl help' prints every help in this order, 'aheadctl OBJECT help'
 * its own.  A new object is one line here and its cmd_ function.
 */
struct object {
	const char *name;
	int (*cmd)(int argc, char **argv);
	const char *help;
};

static const struct object objects[] = {
	{ "irq", cmd_irq,
"  irq show dev DEV [node N]\n"
"      the NIC's IRQs (from its PCI function's msi_irqs and /proc/interrupts),\n"
"      its NUMA node and local CPUs, affinity and effective affinity, managed\n"
"      and irqbalance-owned IRQs, off-node IRQs, XPS and RPS per queue\n"
"  irq set dev DEV policy local|spread|cpus LIST [xps] [node N]\n"
"      one IRQ per CPU, round robin over: the local CPUs (local), all online\n"
"      CPUs local first (spread) or LIST, following a driver's affinity_hint\n"
"      inside them; bans the IRQs from irqbalance first, then writes\n"
"      smp_affinity_list, reads it back and reports the effective affinity;\n"
"      xps: tx queue N gets the CPU of the IRQ serving queue N.  node N\n"
"      overrides the NIC's node.  Managed IRQs are reported and left alone.\n"
"  irq ban dev DEV\n"
"      write an irqbalance policy script banning DEV's IRQs\n" },
	{ "numa", cmd_numa,
"  numa bw [--size SIZE] [--threads N] [--seconds S] [--runs R]\n"
"          [--traffic read|rw] [--hugepages]\n"
"      bandwidth (MB/s) and idle and loaded latency (ns) matrices, CPU node x\n"
"      memory node: one thread per CPU of the CPU node, each with its own\n"
"      SIZE buffer on the memory node (default: twice the last-level cache,\n"
"      at least 64M); best of R runs (3) of S seconds (1); and the\n"
"      cache-to-cache transfer latency (ns), writer node x reader node (a\n"
"      line one CPU modifies, another reads); flags a remote/local\n"
"      bandwidth ratio below 0.25.  -n prints the plan only.\n" },
	{ "fs", cmd_fs,
"  fs show [MNT]\n"
"  fs set MNT KEY=VALUE\n"
"      aheadfs mounts, their tunables and stats (/sys/fs/aheadfs/<dev>/)\n" },
	{ "bios", cmd_bios,
"  bios show [--via redfish|ipmi|racadm|onecli|ilorest|sum|syscfg] [BMC]\n"
"  bios set snoop-mode home|early|cod|osb [--reboot [--force]] [--via ...]\n"
"           [BMC]\n"
"  bios power-cycle [--force] [--via redfish|ipmi] BMC\n"
"      resets are graceful unless --force is given\n"
"      BMC: --bmc URL|HOST[:PORT] [--user USER] [--password-file FILE]\n"
"      [--ca FILE] [--insecure] [--insecure-http] [--system ID] [--timeout S]\n"
"      [--wait S]; --ca FILE: the CA that signed the BMC's certificate;\n"
"      the password comes from FILE (mode 0600) or AHEADCTL_BMC_PASSWORD,\n"
"      never from the command line\n" },
	{ "doctor", cmd_doctor,
"  doctor [--skip-bw]\n"
"      off-node NIC IRQs, irqbalance conflicts, the bandwidth verdict, NFS\n"
"      mounts with noac/actimeo=0, aheadfs mounts with uncached tails or\n"
"      txn_kb above window_kb, regressions since the snapshot named in\n"
"      aheadctl.conf; exit 0 when nothing was found, 1 otherwise\n" },
	{ "apply", cmd_apply,
"  apply [-c FILE] [--dev DEV | --devpath DEVPATH] [--skip-bios]\n"
"      apply /etc/aheadctl/aheadctl.conf: NIC placement, XPS and irqbalance\n"
"      ban, aheadfs tunables, block queue settings; checks the snoop mode;\n"
"      absent devices are skipped (--dev: one device's sections, for udev);\n"
"      records each value it replaces in /var/lib/aheadctl/apply-state.json\n" },
	{ "revert", cmd_revert,
"  revert\n"
"      put back what apply replaced (IRQ affinity, XPS, the irqbalance ban,\n"
"      aheadfs tunables, block queue settings), newest first, each said;\n"
"      exit 1 when there is nothing to revert\n" },
	{ "verify", cmd_verify,
"  verify [-c FILE] [--dev DEV]\n"
"      what drifted from the config, each with its fix; exit 1 on drift\n" },
	{ "snapshot", cmd_snapshot,
"  snapshot save|diff [FILE] [--skip-bw] [-c FILE]\n"
"      save what decides write throughput (drivers, queues, IRQ placement,\n"
"      XPS, NUMA nodes, bandwidth, snoop mode, aheadfs tunables,\n"
"      irqbalance); diff names each regression since, with its fix\n" },
};

#define NOBJECTS (sizeof(objects) / sizeof(objects[0]))

static const char help_tail[] =
"  help\n"
"\n"
"Documentation/aheadctl.rst has the details.\n";

/* Text, or under -j the text as the one JSON document. */
static int print_text(const char *key, const char *text)
{
	if (g.json) {
		jopen('{');
		jstr(key, text);
		jclose();
		jend();
	} else {
		fputs(text, stdout);
	}
	return 0;
}

static int help_all(void)
{
	char *all = xsprintf("%s\nObjects and verbs:\n", usage_text), *next;

	for (size_t i = 0; i < NOBJECTS; i++) {
		next = xsprintf("%s%s", all, objects[i].help);
		free(all);
		all = next;
	}
	next = xsprintf("%s%s", all, help_tail);
	free(all);
	print_text("help", next);
	free(next);
	return 0;
}

static char *object_names(void)
{
	char *s = xstrdup(""), *next;

	for (size_t i = 0; i < NOBJECTS; i++) {
		next = xsprintf("%s%s, ", s, objects[i].name);
		free(s);
		s = next;
	}
	next = xsprintf("%shelp", s);
	free(s);
	return next;
}

static bool is_help(const char *a)
{
	return !strcmp(a, "help") || !strcmp(a, "--help") || !strcmp(a, "-h");
}

static int dispatch(int argc, char **argv)
{
	char *names;

	if (is_help(argv[0]))
		return help_all();
	for (size_t i = 0; i < NOBJECTS; i++) {
		if (strcmp(argv[0], objects[i].name))
			continue;
		if (argc > 1 && is_help(argv[1]))
			return print_text("help", objects[i].help);
		return objects[i].cmd(argc - 1, argv + 1);
	}
	names = object_names();
	err("unknown object '%s' (%s)", argv[0], names);
	free(names);
	return EXIT_USAGE;
}

/* Every way out of aheadctl passes here: -j's one document is printed now. */
static void finish(int status, void *arg)
{
	int st = json_finish(status);

	(void)arg;
	if (st != status) {
		fflush(stdout);
		_exit(st);
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "yes", no_argument, NULL, 'y' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool help = false, version = false;
	const char *bad = NULL;
	char badopt[3] = "-?";
	int c;

	guard_stdio();
	on_exit(finish, NULL);
	/* '+': stop at OBJECT; what follows belongs to the verb.  ':': we word the errors. */
	opterr = 0;
	for (;;) {
		/* The word getopt is about to read, to name a bad long option. */
		const char *word = optind < argc ? argv[optind] : "";

		c = getopt_long(argc, argv, "+:jnyhV", longopts, NULL);
		if (c == -1)
			break;
		switch (c) {
		case 'j': g.json = true; break;
		case 'n': g.dry_run = true; break;
		case 'y': g.yes = true; break;
		case 'h': help = true; break;
		case 'V': version = true; break;
		default:
			/* Keep going, so a later -j still shapes the error. */
			if (!bad && !strncmp(word, "--", 2)) {
				bad = word;
			} else if (!bad) {
				badopt[1] = optopt;
				bad = badopt;
			}
		}
	}
	if (bad) {
		err("unknown option '%s' (see 'aheadctl help')", bad);
		return EXIT_USAGE;
	}
	if (help)
		return help_all();
	if (version)
		return print_text("version", g.json ? VERSION : "aheadctl " VERSION "\n");
	if (optind == argc) {
		err("no OBJECT given");
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	return dispatch(argc - optind, argv + optind);
}
