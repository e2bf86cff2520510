/* irq.c: a NIC's IRQs, their NUMA placement, XPS/RPS, irqbalance (irq show/set/ban). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aheadctl.h"

enum qkind { Q_NONE, Q_BOTH, Q_TX, Q_RX, Q_OTHER };

struct irq {
	int n;
	char *name;		/* from /proc/interrupts, "" if absent */
	char *tail;		/* its line after the counts: chip, hwirq, name */
	char *aff;		/* smp_affinity_list as read */
	char *eff;		/* effective_affinity_list, NULL if absent */
	char *hint;		/* affinity_hint as a CPU list, NULL if absent */
	struct cpus affc, effc, hintc;
	enum qkind kind;	/* what its name says it serves */
	int queue;		/* the queue number in its name, -1 if none */
	bool from_pci;		/* in the PCI function's msi_irqs or irq */
	bool managed;
	bool banned;		/* excluded from irqbalance */
	bool off_node;
	bool pending;		/* effective affinity outside the affinity */
};

struct nic {
	const char *dev;
	char *pci;		/* the PCI function's sysfs directory */
	char *bdf;		/* 0000:00:03.0 */
	int node;		/* numa_node as read, may be -1 */
	int use_node;		/* node the local CPUs come from, -1: fallback */
	const char *fallback;	/* how local CPUs were chosen when node is -1 */
	bool override;		/* node N given while numa_node is known */
	int names_err;		/* errno if /proc/interrupts was unreadable */
	char *problem;		/* why it could not be loaded (quiet mode) */
	bool not_nic;		/* virtual or not PCI: nothing to check */
	struct cpus local;
	int nirq;
	struct irq *irqs;
	int ntx, nrx;
	int irqbalance;		/* pid or 0 */
	bool block;		/* a block device, not a netdev */
	char *policyscript;	/* irqbalance's --policyscript, if any */
};

/* The irqbalance daemon's pid (found by comm in procfs), or 0. */
int irqbalance_pid(void)
{
	DIR *d = opendir(proc_root());
	struct dirent *e;
	int pid = 0;

	if (!d)
		return 0;
	while (!pid && (e = readdir(d))) {
		char *p, *comm;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		p = xsprintf("%s/%s/comm", proc_root(), e->d_name);
		comm = read_file(p);
		if (comm && !strcmp(comm, "irqbalance"))
			pid = atoi(e->d_name);
		free(comm);
		free(p);
	}
	closedir(d);
	return pid;
}

/*
 * Reads irqbalance's command line, whole (procfs reports no size; a long
 * list of --banirq has no limit): --banirq=N / -i N and --policyscript.
 */
static void irqbalance_args(struct nic *nic)
{
	char *p = xsprintf("%s/%d/cmdline", proc_root(), nic->irqbalance);
	size_t len, na = 0;
	char *buf = read_file_len(p, &len), **args;

	free(p);
	if (!buf)
		return;
	/* cmdline is NUL-separated; a fixture may use newlines instead. */
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\n')
			buf[i] = 0;
	args = xcalloc(len / 2 + 1, sizeof(char *));
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
		if (buf[i])
			args[na++] = buf + i;
	for (size_t i = 0; i < na; i++) {
		const char *v = NULL;

		if (!strncmp(args[i], "--banirq=", 9))
			v = args[i] + 9;
		else if ((!strcmp(args[i], "-i") || !strcmp(args[i], "--banirq")) &&
			 i + 1 < na)
			v = args[++i];
		if (v) {
			for (int k = 0; k < nic->nirq; k++)
				if (nic->irqs[k].n == atoi(v))
					nic->irqs[k].banned = true;
			continue;
		}
		if (!strncmp(args[i], "--policyscript=", 15)) {
			free(nic->policyscript);
			nic->policyscript = xstrdup(args[i] + 15);
		} else if ((!strcmp(args[i], "-l") || !strcmp(args[i], "--policyscript")) &&
			   i + 1 < na) {
			free(nic->policyscript);
			nic->policyscript = xstrdup(args[++i]);
		}
	}
	free(args);
	free(buf);
}

static char *policy_path(void)
{
	return xsprintf("%s/aheadctl/irqbalance-policy.sh", etc_root());
}

/* Does s name the PCI address bdf (not a longer one that ends like it)? */
static bool mentions_bdf(const char *s, const char *bdf)
{
	size_t bl = strlen(bdf);

	for (const char *p = s; p && (p = strstr(p, bdf)); p++)
		if ((p == s || !isxdigit((unsigned char)p[-1])) &&
		    !isxdigit((unsigned char)p[bl]))
			return true;
	return false;
}

/* The PCI address of a "# aheadctl-ban DEV PCI" line (older scripts: a path). */
static const char *ban_bdf(char *line, char **dev)
{
	char *save = NULL, *pci, *slash;

	*dev = strtok_r(line + 15, " ", &save);
	pci = strtok_r(NULL, " ", &save);
	if (!*dev || !pci)
		return NULL;
	slash = strrchr(pci, '/');
	return slash ? slash + 1 : pci;
}

/* Is the PCI function bdf on a ban line of the script text? */
static bool policy_lists(const char *text, const char *bdf)
{
	char *copy = xstrdup(text ? text : ""), *save = NULL;
	bool found = false;

	for (char *l = strtok_r(copy, "\n", &save); l && !found;
	     l = strtok_r(NULL, "\n", &save)) {
		char *dev;
		const char *b;

		if (strncmp(l, "# aheadctl-ban ", 15))
			continue;
		b = ban_bdf(l, &dev);
		found = b && !strcmp(b, bdf);
	}
	free(copy);
	return found;
}

/*
 * Would the policy script ban this IRQ?  irqbalance passes the PCI
 * function's path for an IRQ in its msi_irqs (or irq), and /sys for an IRQ
 * it finds only in /proc/interrupts: the script then looks for the address
 * in the IRQ's line (mlx5_comp3@pci:0000:81:00.0, PCI-MSIX-0000:81:00.0).
 */
static bool script_bans(const struct nic *nic, const struct irq *q)
{
	return q->from_pci || mentions_bdf(q->tail, nic->bdf);
}

/* Marks the IRQs that irqbalance's policy script (if it is ours) bans. */
static void policy_bans(struct nic *nic)
{
	char *text;

	if (!nic->policyscript)
		return;
	text = read_file(nic->policyscript);
	if (text && policy_lists(text, nic->bdf))
		for (int k = 0; k < nic->nirq; k++)
			if (script_bans(nic, &nic->irqs[k]))
				nic->irqs[k].banned = true;
	free(text);
}

/* /proc/interrupts, indexed by IRQ number. */
struct names {
	int max;
	char **name;		/* the action names */
	char **tail;		/* everything after the count columns */
	int err;		/* errno if the file could not be read */
};

/*
 * Splits what follows "N:" in a /proc/interrupts line: NCPU count columns,
 * the chip, the hwirq (x86 joins the flow handler: "1048576-edge"; with
 * GENERIC_IRQ_SHOW_LEVEL a separate "Level" or "Edge" follows), then the
 * action names.  Any number of CPUs: storage nodes have 64 to 256 and more.
 */
static void split_line(char *s, int ncpu, char **tail, char **name)
{
	char *save = NULL, *tok;
	size_t tl = 0, nl = 0, cap = strlen(s) + 2;
	int nt = 0;

	*tail = xcalloc(1, cap);
	*name = xcalloc(1, cap);
	for (tok = strtok_r(s, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save), nt++) {
		if (nt < ncpu)
			continue;
		tl += sprintf(*tail + tl, "%s%s", tl ? " " : "", tok);
		if (nt < ncpu + 2 || (nt == ncpu + 2 &&
		    (!strcmp(tok, "Level") || !strcmp(tok, "Edge"))))
			continue;
		nl += sprintf(*name + nl, "%s%s", nl ? " " : "", tok);
	}
}

static void parse_names(struct names *nm, char *text);

static void load_names(struct names *nm)
{
	char *p = xsprintf("%s/interrupts", proc_root());
	char *text = read_file(p);

	free(p);
	memset(nm, 0, sizeof(*nm));
	if (!text) {
		nm->err = errno;
		return;
	}
	parse_names(nm, text);
}

/* /proc/interrupts' text (consumed, freed) into nm, zeroed before. */
static void parse_names(struct names *nm, char *text)
{
	char *save = NULL, *line;
	int ncpu = 0;

	line = strtok_r(text, "\n", &save);
	for (char *s = line; s && (s = strstr(s, "CPU")); s += 3)
		ncpu++;
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *s = line, *end;
		int n;

		while (isspace((unsigned char)*s))
			s++;
		n = strtol(s, &end, 10);
		if (end == s || *end != ':' || n < 0 || n > 1 << 20)
			continue;
		if (n >= nm->max) {
			int nmax = n + 64;

			nm->name = realloc(nm->name, nmax * sizeof(char *));
			nm->tail = realloc(nm->tail, nmax * sizeof(char *));
			if (!nm->name || !nm->tail)
				exit(EXIT_FAILED);
			memset(nm->name + nm->max, 0, (nmax - nm->max) * sizeof(char *));
			memset(nm->tail + nm->max, 0, (nmax - nm->max) * sizeof(char *));
			nm->max = nmax;
		}
		free(nm->name[n]);
		free(nm->tail[n]);
		split_line(end + 1, ncpu, &nm->tail[n], &nm->name[n]);
	}
	free(text);
}

static void free_names(struct names *nm)
{
	for (int i = 0; i < nm->max; i++) {
		free(nm->name[i]);
		free(nm->tail[i]);
	}
	free(nm->name);
	free(nm->tail);
}

static bool is_pci_function(const char *dir)
{
	char *sub = xsprintf("%s/subsystem", dir);
	char real[PATH_MAX];
	bool pci = realpath(sub, real) && !strcmp(basename(real), "pci");

	free(sub);
	return pci;
}

static void add_irq(struct nic *nic, int n, bool from_pci)
{
	for (int i = 0; i < nic->nirq; i++)
		if (nic->irqs[i].n == n)
			return;
	nic->irqs = realloc(nic->irqs, (nic->nirq + 1) * sizeof(*nic->irqs));
	if (!nic->irqs)
		exit(EXIT_FAILED);
	memset(&nic->irqs[nic->nirq], 0, sizeof(*nic->irqs));
	nic->irqs[nic->nirq].from_pci = from_pci;
	nic->irqs[nic->nirq++].n = n;
}

static int cmp_irq(const void *a, const void *b)
{
	return ((const struct irq *)a)->n - ((const struct irq *)b)->n;
}

/* Does a /proc/interrupts name belong to this NIC without an msi_irqs entry? */
static bool name_matches(const struct nic *nic, const char *name)
{
	size_t dl = strlen(nic->dev);
	const char *at;

	/* mlx5 style: mlx5_comp3@pci:0000:3b:00.0 */
	if (nic->bdf && (at = strchr(name, '@')) && mentions_bdf(at, nic->bdf))
		return true;
	/* eth0, eth0-TxRx-3, eth0-rx-1 */
	return !strncmp(name, nic->dev, dl) && (!name[dl] || name[dl] == '-');
}

/* The number after prefix in s, or -1. */
static int num_after(const char *s, const char *prefix)
{
	const char *p = strstr(s, prefix);

	if (!p || !isdigit((unsigned char)p[strlen(prefix)]))
		return -1;
	return atoi(p + strlen(prefix));
}

/*
 * What a driver's IRQ name says it serves: queue pair N (Intel and
 * Broadcom "TxRx-N", mlx5 "mlx5_compN"), one direction (virtio-net
 * "input.N"/"output.N", "tx-N"/"rx-N"), or nothing (config, async,
 * command, misc vectors, and the bare device name of the link IRQ).
 */
static void classify(const struct nic *nic, struct irq *q)
{
	static const char *const other[] = { "config", "async", "_cmd", "-ctrl",
		"misc", "-pages", NULL };
	const char *nm = q->name;

	q->queue = -1;
	q->kind = Q_NONE;
	if ((q->queue = num_after(nm, "TxRx-")) >= 0 ||
	    (q->queue = num_after(nm, "mlx5_comp")) >= 0) {
		q->kind = Q_BOTH;
	} else if ((q->queue = num_after(nm, "-output.")) >= 0 ||
		   (q->queue = num_after(nm, "-tx-")) >= 0) {
		q->kind = Q_TX;
	} else if ((q->queue = num_after(nm, "-input.")) >= 0 ||
		   (q->queue = num_after(nm, "-rx-")) >= 0) {
		q->kind = Q_RX;
	} else {
		for (int i = 0; other[i]; i++)
			if (strstr(nm, other[i]))
				q->kind = Q_OTHER;
		if (!strcmp(nm, nic->dev))
			q->kind = Q_OTHER;
	}
}

static void read_irq_state(struct nic *nic, struct irq *q, const struct names *nm)
{
	char *p = xsprintf("%s/irq/%d/smp_affinity_list", proc_root(), q->n);
	char *e = xsprintf("%s/irq/%d/effective_affinity_list", proc_root(), q->n);
	char *h = xsprintf("%s/irq/%d/affinity_hint", proc_root(), q->n);
	char *dbg = xsprintf("%s/kernel/debug/irq/irqs/%d", sysfs_root(), q->n);
	char *flags, *hint;
	struct stat st;

	q->name = xstrdup(q->n < nm->max && nm->name[q->n] ? nm->name[q->n] : "");
	q->tail = xstrdup(q->n < nm->max && nm->tail[q->n] ? nm->tail[q->n] : "");
	classify(nic, q);
	/*
	 * The driver's wish (a hex mask; all zeroes when it has none).  All
	 * ones, or every online CPU, says nothing either (mlnx-tools reads it
	 * so): shown and followed as no hint.
	 */
	hint = read_file(h);
	if (hint && !cpumask_parse(hint, &q->hintc)) {
		struct cpus on;

		if (!hint[strspn(hint, "fF,")] ||
		    (!online_cpus(&on) && cpus_count(&on) > 1 && cpus_subset(&on, &q->hintc)))
			memset(&q->hintc, 0, sizeof(q->hintc));
		q->hint = cpulist_format(&q->hintc);
	}
	free(hint);
	free(h);
	q->aff = read_file(p);
	q->eff = read_file(e);
	if (q->aff)
		cpulist_parse(q->aff, &q->affc);
	if (q->eff)
		cpulist_parse(q->eff, &q->effc);
	/* From 6.12 a managed IRQ's affinity file is read-only (0444). */
	if (!stat(p, &st) && !(st.st_mode & 0222))
		q->managed = true;
	/* With CONFIG_GENERIC_IRQ_DEBUGFS, the flags say it on any kernel. */
	flags = read_file(dbg);
	if (flags && strstr(flags, "AFFINITY_MANAGED"))
		q->managed = true;
	free(flags);
	if (q->aff || q->eff) {
		const struct cpus *c = q->eff && cpus_count(&q->effc) ?
			&q->effc : &q->affc;

		q->off_node = !q->managed && !cpus_subset(c, &nic->local);
		q->pending = !q->managed && q->eff && q->aff &&
			cpus_count(&q->effc) && !cpus_subset(&q->effc, &q->affc);
	}
	free(p);
	free(e);
	free(dbg);
}

static int count_queues(const char *dev, const char *prefix)
{
	char *p = xsprintf("%s/class/net/%s/queues", sysfs_root(), dev);
	DIR *d = opendir(p);
	struct dirent *e;
	int n = 0;

	free(p);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

/* Why DEV cannot be used: on stderr, or kept in nic->problem when quiet. */
static int nic_fail(struct nic *nic, bool quiet, bool not_nic, char *msg)
{
	if (quiet) {
		nic->problem = msg;
		nic->not_nic = not_nic;
	} else {
		err("%s", msg);
		free(msg);
	}
	return EXIT_FAILED;
}

/* Walks up from the device link to the PCI function, or NULL. */
static char *pci_function(const char *real)
{
	char *devroot = xsprintf("%s/devices", sysfs_root()), *dir;
	char rootreal[PATH_MAX];

	if (realpath(devroot, rootreal)) {
		free(devroot);
		devroot = xstrdup(rootreal);
	}
	dir = xstrdup(real);
	while (strlen(dir) > strlen(devroot) && !is_pci_function(dir)) {
		char *up = xstrdup(dirname(dir));

		free(dir);
		dir = up;
	}
	if (strlen(dir) <= strlen(devroot)) {
		free(dir);
		dir = NULL;
	}
	free(devroot);
	return dir;
}

/*
 * The local CPUs.  A node given with 'node N' wins, also over a known
 * numa_node: firmware does report wrong proximity domains, and an engineer
 * who names a node means it (show and set say that it overrides).
 */
static int choose_local(struct nic *nic, int forced_node, bool quiet)
{
	struct cpus on;

	nic->use_node = nic->node;
	if (forced_node >= 0 && forced_node != nic->node) {
		nic->use_node = forced_node;
		nic->override = nic->node >= 0 && forced_node != nic->node;
		nic->fallback = nic->node >= 0 ? "node given on the command line, overriding numa_node" :
			"node given on the command line";
	}
	if (nic->use_node >= 0) {
		if (node_cpus(nic->use_node, &nic->local))
			return nic_fail(nic, quiet, false,
					xsprintf("node %d: no %s/devices/system/node/node%d/cpulist",
						 nic->use_node, sysfs_root(), nic->use_node));
	} else {
		char *p = xsprintf("%s/local_cpulist", nic->pci);
		char *s = read_file(p);

		free(p);
		if (s && !cpulist_parse(s, &nic->local) && cpus_count(&nic->local)) {
			nic->fallback = "local_cpulist";
		} else {
			online_cpus(&nic->local);
			nic->fallback = "all online CPUs";
		}
		free(s);
		nic->use_node = -1;
	}
	if (!online_cpus(&on))
		for (int i = 0; i < MAXCPUS; i++)
			nic->local.on[i] = nic->local.on[i] && on.on[i];
	return 0;
}

/* The PCI function's MSI/MSI-X vectors, else its INTx line. */
static void pci_irqs(struct nic *nic)
{
	char *p = xsprintf("%s/msi_irqs", nic->pci);
	DIR *d = opendir(p);
	struct dirent *e;

	free(p);
	while (d && (e = readdir(d)))
		if (isdigit((unsigned char)e->d_name[0]))
			add_irq(nic, atoi(e->d_name), true);
	if (d)
		closedir(d);
	if (!nic->nirq) {
		long long irq;

		p = xsprintf("%s/irq", nic->pci);
		if (!read_int(p, &irq) && irq > 0)
			add_irq(nic, irq, true);
		free(p);
	}
}

/*
 * Loads everything about DEV.  forced_node >= 0 chooses the node.  Returns
 * non-zero when DEV cannot be used, with one message (nic->problem if quiet).
 */
static int nic_load(struct nic *nic, const char *dev, int forced_node, bool quiet)
{
	char *net = xsprintf("%s/class/net/%s", sysfs_root(), dev);
	char *link = xsprintf("%s/device", net);
	char real[PATH_MAX];
	struct names nm;
	struct stat st;
	long long node = -1;

	memset(nic, 0, sizeof(*nic));
	nic->dev = dev;
	if (!strchr(dev, '/') && *dev && stat(net, &st)) {
		/* A block device (virtio-blk, nvme) is looked at the same way. */
		char *blk = xsprintf("%s/class/block/%s", sysfs_root(), dev);

		if (!stat(blk, &st)) {
			free(net);
			free(link);
			net = blk;
			link = xsprintf("%s/device", net);
			nic->block = true;
		} else {
			free(blk);
		}
	}
	if (strchr(dev, '/') || !*dev || stat(net, &st)) {
		free(net);
		free(link);
		return nic_fail(nic, quiet, true,
				xsprintf("no network or block device '%s' (nothing in %s/class/net or class/block)",
					 dev, sysfs_root()));
	}
	free(net);
	if (!realpath(link, real)) {
		free(link);
		return nic_fail(nic, quiet, true,
				xsprintf("%s has no device (a virtual interface): it has no IRQs of its own",
					 dev));
	}
	free(link);
	/* virtio-net's device link is the virtio device, below the PCI function. */
	nic->pci = pci_function(real);
	if (!nic->pci)
		return nic_fail(nic, quiet, true,
				xsprintf("%s (%s) is not behind a PCI function: no msi_irqs to read",
					 dev, real));
	nic->bdf = xstrdup(strrchr(nic->pci, '/') + 1);
	{
		char *p = xsprintf("%s/numa_node", nic->pci);

		if (read_int(p, &node))
			node = -1;
		free(p);
	}
	nic->node = node;
	if (choose_local(nic, forced_node, quiet))
		return EXIT_FAILED;

	pci_irqs(nic);
	load_names(&nm);
	nic->names_err = nm.err;
	if (nm.err && !quiet)
		warnx("cannot read %s/interrupts: %s: IRQs known only by name are missing and none is labelled",
		      proc_root(), strerror(nm.err));
	for (int i = 0; i < nm.max; i++)
		if (nm.name[i] && name_matches(nic, nm.name[i]))
			add_irq(nic, i, false);
	qsort(nic->irqs, nic->nirq, sizeof(*nic->irqs), cmp_irq);
	for (int i = 0; i < nic->nirq; i++)
		read_irq_state(nic, &nic->irqs[i], &nm);
	free_names(&nm);

	nic->ntx = nic->block ? 0 : count_queues(dev, "tx-");
	nic->nrx = nic->block ? 0 : count_queues(dev, "rx-");
	nic->irqbalance = irqbalance_pid();
	if (nic->irqbalance) {
		irqbalance_args(nic);
		policy_bans(nic);
	}
	return 0;
}

/* What nic_load() allocated (also after a failure). */
static void nic_free(struct nic *nic)
{
	for (int i = 0; i < nic->nirq; i++) {
		free(nic->irqs[i].name);
		free(nic->irqs[i].tail);
		free(nic->irqs[i].aff);
		free(nic->irqs[i].eff);
		free(nic->irqs[i].hint);
	}
	free(nic->irqs);
	free(nic->pci);
	free(nic->bdf);
	free(nic->problem);
	free(nic->policyscript);
	memset(nic, 0, sizeof(*nic));
}

/*
 * For snapshot.c: whether DEV is a NIC irq show can read (0), not one at
 * all (1: virtual, not behind PCI, absent), or one that cannot be read
 * (-1; why in *problem, malloc'd, and its PCI address in *bdf if known).
 */
int nic_probe(const char *dev, char **problem, char **bdf)
{
	struct nic nic;
	int rc;

	*problem = *bdf = NULL;
	if (!nic_load(&nic, dev, -1, true)) {
		nic_free(&nic);
		return 0;
	}
	rc = nic.not_nic ? 1 : -1;
	if (rc < 0) {
		*problem = nic.problem;
		nic.problem = NULL;
		*bdf = nic.bdf;
		nic.bdf = NULL;
	}
	nic_free(&nic);
	return rc;
}

static char *queue_mask(const char *dev, const char *q, const char *file)
{
	char *p = xsprintf("%s/class/net/%s/queues/%s/%s", sysfs_root(), dev, q, file);
	char *s = read_file(p);
	struct cpus c;
	char *list;

	free(p);
	if (!s)
		return NULL;
	if (cpumask_parse(s, &c)) {
		free(s);
		return NULL;
	}
	free(s);
	list = cpulist_format(&c);
	return list;
}

static const char *node_desc(const struct nic *nic, char *buf, size_t len)
{
	if (nic->override)
		snprintf(buf, len, "%d (overridden: using node %d, given)", nic->node,
			 nic->use_node);
	else if (nic->node >= 0)
		snprintf(buf, len, "%d", nic->node);
	else if (nic->use_node >= 0)
		snprintf(buf, len, "-1 (using node %d, given)", nic->use_node);
	else
		snprintf(buf, len, "-1 (unknown; local CPUs from %s)", nic->fallback);
	return buf;
}

static int unbanned(const struct nic *nic)
{
	int n = 0;

	for (int i = 0; i < nic->nirq; i++)
		n += !nic->irqs[i].banned && !nic->irqs[i].managed;
	return n;
}

static void print_ban_hint(const struct nic *nic, FILE *f)
{
	char *path = policy_path(), *text = read_file(path);

	fprintf(f, "irqbalance (pid %d) is running and will move %d of %s's IRQs:\n",
		nic->irqbalance, unbanned(nic), nic->dev);
	if (text && policy_lists(text, nic->bdf))
		fprintf(f, "  %s bans them, but irqbalance does not read it: restart irqbalance with --policyscript=%s, or with",
			path, path);
	else
		fprintf(f, "  run 'aheadctl irq ban dev %s', or start irqbalance with", nic->dev);
	free(text);
	free(path);
	for (int i = 0; i < nic->nirq; i++)
		if (!nic->irqs[i].banned && !nic->irqs[i].managed)
			fprintf(f, " --banirq=%d", nic->irqs[i].n);
	fputc('\n', f);
}

static int irq_show(struct nic *nic)
{
	char buf[128], *local = cpulist_format(&nic->local);

	if (g.json) {
		jopen('{');
		jstr("dev", nic->dev);
		jstr("pci", nic->bdf);
		jint("numa_node", nic->node);
		if (nic->use_node >= 0)
			jint("local_node", nic->use_node);
		else
			jnull("local_node");
		jstr("fallback", nic->fallback);
		jbool("node_override", nic->override);
		jstr("local_cpus", local);
		jkey("irqbalance");
		jopen('{');
		jbool("running", nic->irqbalance);
		if (nic->irqbalance)
			jint("pid", nic->irqbalance);
		jstr("policyscript", nic->policyscript);
		jclose();
		jkey("irqs");
		jopen('[');
		for (int i = 0; i < nic->nirq; i++) {
			const struct irq *q = &nic->irqs[i];

			jopen('{');
			jint("irq", q->n);
			jstr("name", q->name);
			jstr("affinity", q->aff);
			jstr("effective", q->eff);
			jstr("affinity_hint", q->hint);
			jbool("managed", q->managed);
			jbool("off_node", q->off_node);
			jbool("pending", q->pending);
			jbool("irqbalance", nic->irqbalance && !q->banned && !q->managed);
			jclose();
		}
		jclose();
		jkey("queues");
		jopen('[');
		for (int k = 0; k < 2; k++) {
			int nq = k ? nic->nrx : nic->ntx;

			for (int i = 0; i < nq; i++) {
				char qn[32];
				char *m;

				snprintf(qn, sizeof(qn), "%s-%d", k ? "rx" : "tx", i);
				m = queue_mask(nic->dev, qn, k ? "rps_cpus" : "xps_cpus");
				jopen('{');
				jstr("queue", qn);
				jstr(k ? "rps" : "xps", m);
				jclose();
				free(m);
			}
		}
		jclose();
		jclose();
		jend();
		free(local);
		return 0;
	}
	printf("dev %s  pci %s  numa_node %s  local CPUs %s\n", nic->dev, nic->bdf,
	       node_desc(nic, buf, sizeof(buf)), local);
	if (nic->override)
		printf("node %d given: it overrides the numa_node %d that the firmware reports for %s\n",
		       nic->use_node, nic->node, nic->bdf);
	if (nic->node < 0 && nic->use_node < 0)
		printf("numa_node is -1: the firmware gave %s no proximity domain; local CPUs are %s (%s); pass 'node N' to choose a node\n",
		       nic->bdf, local, nic->fallback);
	if (nic->irqbalance && unbanned(nic))
		print_ban_hint(nic, stdout);
	else if (nic->irqbalance)
		printf("irqbalance (pid %d) is running; all of %s's IRQs are banned from it\n",
		       nic->irqbalance, nic->dev);
	if (!nic->nirq)
		printf("no IRQs: %s has no msi_irqs and no interrupt line in use\n", nic->bdf);
	else
		printf("%5s  %-32s %-10s %-10s %-10s %s\n", "IRQ", "NAME", "AFFINITY",
		       "EFFECTIVE", "HINT", "STATE");
	for (int i = 0; i < nic->nirq; i++) {
		const struct irq *q = &nic->irqs[i];
		char state[80] = "";

		if (q->managed)
			strcat(state, "managed,");
		if (q->off_node)
			strcat(state, "off-node,");
		if (q->pending)
			strcat(state, "pending,");
		if (nic->irqbalance && !q->banned && !q->managed)
			strcat(state, "irqbalance,");
		if (!q->aff)
			strcat(state, "no-proc-entry,");
		if (!*state)
			strcpy(state, "ok,");
		state[strlen(state) - 1] = 0;
		printf("%5d  %-32s %-10s %-10s %-10s %s\n", q->n, *q->name ? q->name : "-",
		       q->aff ? q->aff : "-", q->eff ? q->eff : "-",
		       q->hint && *q->hint ? q->hint : "-", state);
	}
	if (nic->ntx || nic->nrx)
		printf("%-8s %-12s %s\n", "QUEUE", "XPS", "RPS");
	for (int i = 0; i < (nic->ntx > nic->nrx ? nic->ntx : nic->nrx); i++) {
		char tq[16], rq[16];
		char *x, *r;

		snprintf(tq, sizeof(tq), "tx-%d", i);
		snprintf(rq, sizeof(rq), "rx-%d", i);
		x = i < nic->ntx ? queue_mask(nic->dev, tq, "xps_cpus") : NULL;
		r = i < nic->nrx ? queue_mask(nic->dev, rq, "rps_cpus") : NULL;
		printf("%-8d %-12s %s\n", i, x ? (*x ? x : "none") : "-",
		       r ? (*r ? r : "none") : "-");
		free(x);
		free(r);
	}
	free(local);
	return 0;
}

struct plan {
	int irq;		/* index into nic->irqs, or -1 for a tx queue */
	int queue;
	int src;		/* tx queue: the IRQ (index) whose CPUs it gets */
	const char *how;	/* why these CPUs */
	struct cpus want;
	char *val;		/* what is written */
	char *path;
	char *old;
	bool skipped;		/* managed: left alone */
	bool pending;		/* effective affinity not moved yet */
	bool narrowed;		/* effective affinity a subset of the request */
};

static int parse_dev_args(int argc, char **argv, const char **dev, int *node,
			  char ***rest, int *nrest)
{
	*dev = NULL;
	*node = -1;
	*nrest = 0;
	*rest = xcalloc(argc + 1, sizeof(char *));
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "dev") && i + 1 < argc) {
			*dev = argv[++i];
		} else if (!strcmp(argv[i], "node") && i + 1 < argc) {
			unsigned long long v;

			if (!parse_u64(argv[++i], &v) || v > 1023) {
				err("node '%s': expected a node number", argv[i]);
				return EXIT_USAGE;
			}
			*node = v;
		} else {
			(*rest)[(*nrest)++] = argv[i];
		}
	}
	if (!*dev) {
		err("missing 'dev DEV'");
		return EXIT_USAGE;
	}
	return 0;
}

/*
 * irqbalance runs a policy script through popen() as "exec SCRIPT PATH IRQ"
 * (classify.c: build_one_dev_entry() and add_new_irq() call
 * get_irq_user_policy(), which runs run_script_for_policy()).  PATH is
 * /sys/bus/pci/devices/<BDF> for an IRQ of a PCI function's msi_irqs or
 * irq file, and /sys for an IRQ without a sysfs device.  It bans the IRQ
 * when the script prints ban=true, and ignores the output of a script that
 * exits non-zero.  So the script matches the PCI address, which a reboot
 * keeps, never an IRQ number, which a reboot hands to another device.
 */
static const char policy_body[] =
	"bdf=${1##*/}\n"
	"line=\n"
	"[ \"$1\" = /sys ] && line=$(grep \"^ *$2:\" \"$proc/interrupts\")\n"
	"grep '^# aheadctl-ban ' \"$0\" | while read -r _ _ _ pci _; do\n"
	"\twant=${pci##*/}\n"
	"\t[ -n \"$want\" ] || continue\n"
	"\t[ \"$bdf\" = \"$want\" ] && { echo ban=true; break; }\n"
	"\tcase \"$line\" in\n"
	"\t*[!0-9a-fA-F]\"$want\" | *[!0-9a-fA-F]\"$want\"[!0-9a-fA-F]*) echo ban=true; break ;;\n"
	"\tesac\n"
	"done\n"
	"exit 0\n";

/* The script with DEV's entry added (or replaced) and the others kept. */
static char *policy_text(const struct nic *nic, const char *old)
{
	char *copy = xstrdup(old ? old : ""), *save = NULL;
	char *proc = shell_quote(proc_root());
	size_t cap = strlen(copy) + strlen(policy_body) + strlen(proc) + 1024 +
		strlen(nic->dev) + strlen(nic->bdf);
	char *out = xcalloc(1, cap), *o = out;

	o += sprintf(o, "#!/bin/sh\n"
		     "# aheadctl irqbalance policy: devices whose IRQs aheadctl irq set places.\n"
		     "# irqbalance runs it as: SCRIPT /sys/bus/pci/devices/BDF IRQ (or SCRIPT /sys IRQ)\n"
		     "# and bans the IRQ on ban=true; devices match by PCI address, stable across reboots.\n");
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *line = xstrdup(l), *dev;
		const char *b;

		if (!strncmp(l, "# aheadctl-ban ", 15) && (b = ban_bdf(line, &dev)) &&
		    strcmp(dev, nic->dev) && strcmp(b, nic->bdf))
			o += sprintf(o, "# aheadctl-ban %s %s\n", dev, b);
		free(line);
	}
	o += sprintf(o, "# aheadctl-ban %s %s\nproc=%s\n%s", nic->dev, nic->bdf,
		     proc, policy_body);
	free(proc);
	free(copy);
	return out;
}

/*
 * Writes the script atomically, its former text (old, NULL when there was
 * none) noted for revert and, in log (NULL: none), for the verb's own
 * rollback; 0, or one message and EXIT_FAILED.
 */
static int policy_write(const char *path, const char *old, const char *text,
			const char *verb, struct undo_log *log)
{
	char *dir = xstrdup(path), *tmp;

	*strrchr(dir, '/') = 0;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		int e = errno;
		char *why = xsprintf(" (%s needs root)", verb);

		err("cannot create %s: %s%s", dir, strerror(e), e == EACCES ? why : "");
		free(why);
		free(dir);
		return EXIT_FAILED;
	}
	free(dir);
	if (undo_note(log, path, old, "irqbalance policy script", true))
		return EXIT_FAILED;
	if (write_atomic(path, text, 0755, &tmp)) {
		int e = errno;
		char *why = xsprintf(" (%s needs root)", verb);

		err("cannot write %s: %s%s", tmp ? tmp : path, strerror(e),
		    e == EACCES ? why : "");
		free(why);
		free(tmp);
		undo_unnote(log);
		return EXIT_FAILED;
	}
	return 0;
}

/* How many of DEV's IRQs the script bans; warns about the ones it cannot. */
static int policy_count(const struct nic *nic, bool warn)
{
	int nb = 0;

	for (int i = 0; i < nic->nirq; i++) {
		const struct irq *q = &nic->irqs[i];

		if (q->managed)
			continue;
		if (script_bans(nic, q))
			nb++;
		else if (warn)
			warnx("IRQ %d (%s) is in no msi_irqs and its /proc/interrupts line names no PCI address: a policy script cannot tell it across reboots; use irqbalance --banirq=%d",
			      q->n, q->name, q->n);
	}
	return nb;
}

/*
 * The IRQ that serves tx queue q, so that XPS sends from the CPU that
 * completes the queue: by name (a tx IRQ N, then a queue pair N), else the
 * q-th queue IRQ, never a config or async vector.
 */
static int tx_irq(const struct nic *nic, int q, const char **how)
{
	static const enum qkind byname[] = { Q_TX, Q_BOTH };
	int nq = 0, pos;

	for (int k = 0; k < 2; k++)
		for (int i = 0; i < nic->nirq; i++)
			if (nic->irqs[i].kind == byname[k] && nic->irqs[i].queue == q) {
				*how = "by name";
				return i;
			}
	for (int i = 0; i < nic->nirq; i++)
		nq += nic->irqs[i].kind != Q_OTHER && nic->irqs[i].kind != Q_RX;
	if (!nq) {
		*how = "by position among all IRQs: none serves a tx queue";
		return q % nic->nirq;
	}
	pos = q % nq;
	*how = "by position among the queue IRQs";
	for (int i = 0; i < nic->nirq; i++)
		if (nic->irqs[i].kind != Q_OTHER && nic->irqs[i].kind != Q_RX && !pos--)
			return i;
	return 0;	/* not reached: pos < nq */
}

/* XPS follows its IRQ: where we place it, or where the kernel keeps it. */
static void xps_follow(const struct nic *nic, struct plan *plan, struct plan *p)
{
	const struct plan *ip = &plan[p->src];

	if (ip->skipped)
		p->want = nic->irqs[p->src].affc;
	else
		p->want = ip->want;
	free(p->val);
	p->val = cpumask_format(&p->want);
}

static bool cpus_equal(const struct cpus *a, const struct cpus *b)
{
	return cpus_subset(a, b) && cpus_subset(b, a);
}

/* Checks one IRQ's file before anything is written. */
static int plan_irq(struct nic *nic, struct plan *p, int i, const struct cpus *allowed,
		    const int *order, int norder, int *k)
{
	const struct irq *q = &nic->irqs[i];

	p->irq = i;
	p->path = xsprintf("%s/irq/%d/smp_affinity_list", proc_root(), q->n);
	p->old = q->aff ? xstrdup(q->aff) : NULL;
	if (q->managed) {
		p->skipped = true;
		return 0;
	}
	if (!p->old) {
		err("IRQ %d: cannot read %s: %s", q->n, p->path, strerror(errno));
		return EXIT_FAILED;
	}
	/* A driver's hint inside the local CPUs the policy allows wins. */
	if (q->hint && cpus_count(&q->hintc) && cpus_subset(&q->hintc, allowed)) {
		p->want = q->hintc;
		p->how = "affinity_hint";
	} else {
		memset(&p->want, 0, sizeof(p->want));
		p->want.on[order[(*k)++ % norder]] = true;
	}
	p->val = cpulist_format(&p->want);
	if (!g.dry_run && access(p->path, W_OK)) {
		err("cannot write %s: %s%s", p->path, strerror(errno),
		    errno == EACCES ? " (irq set needs root)" : "");
		return EXIT_FAILED;
	}
	return 0;
}

static int plan_xps(struct nic *nic, struct plan *plan, struct plan *p, int q)
{
	p->irq = -1;
	p->queue = q;
	p->src = tx_irq(nic, q, &p->how);
	xps_follow(nic, plan, p);
	p->path = xsprintf("%s/class/net/%s/queues/tx-%d/xps_cpus",
			   sysfs_root(), nic->dev, q);
	p->old = read_file(p->path);
	if (!p->old) {
		err("tx-%d: cannot read %s: %s", q, p->path, strerror(errno));
		return EXIT_FAILED;
	}
	if (!g.dry_run && access(p->path, W_OK)) {
		err("cannot write %s: %s%s", p->path, strerror(errno),
		    errno == EACCES ? " (irq set needs root)" : "");
		return EXIT_FAILED;
	}
	return 0;
}

/*
 * Writes one IRQ.  A real failure (the write refused, smp_affinity_list not
 * what was written) returns EXIT_FAILED; an effective affinity that has not
 * moved yet (pending) or is narrower than asked (the interrupt controller
 * may target one CPU of several) is reported, not undone.
 */
static int write_irq(struct nic *nic, struct plan *p, struct undo_log *log)
{
	struct irq *q = &nic->irqs[p->irq];
	struct cpus got, eff;
	char *now, *e, *what = xsprintf("IRQ %d (%s) affinity", q->n, q->name);
	int r = undo_note(log, p->path, p->old, what, false);

	free(what);
	if (r)
		return EXIT_FAILED;
	r = write_file(p->path, p->val);
	if (r)
		undo_unnote(log);	/* refused: nothing changed */
	if (r == -EIO || r == -EPERM) {
		/* The kernel manages this one's affinity. */
		q->managed = true;
		p->skipped = true;
		return 0;
	}
	if (r) {
		err("IRQ %d: writing %s to %s failed: %s", q->n, p->val, p->path,
		    strerror(-r));
		return EXIT_FAILED;
	}
	now = read_file(p->path);
	if (!now || cpulist_parse(now, &got) || !cpus_equal(&got, &p->want)) {
		err("IRQ %d: wrote %s, read back '%s'", q->n, p->val,
		    now ? now : "(unreadable)");
		free(now);
		return EXIT_FAILED;
	}
	free(q->aff);
	q->aff = now;
	e = xsprintf("%s/irq/%d/effective_affinity_list", proc_root(), q->n);
	free(q->eff);
	q->eff = read_file(e);
	free(e);
	/*
	 * x86 moves an MSI whose vector cannot change in process context at
	 * its next interrupt: until then the effective affinity is the old
	 * one.  Pending, not failed; irq show says which.
	 */
	if (q->eff && (cpulist_parse(q->eff, &eff) || !cpus_subset(&eff, &p->want)))
		p->pending = true;
	else if (q->eff && cpus_count(&eff) && !cpus_equal(&eff, &p->want))
		p->narrowed = true;
	return 0;
}

static int write_xps(struct nic *nic, struct plan *plan, struct plan *p,
		     struct undo_log *log)
{
	struct cpus got;
	char *now, *what;
	int r;

	xps_follow(nic, plan, p);	/* its IRQ may have turned out managed */
	what = xsprintf("%s tx-%d XPS", nic->dev, p->queue);
	r = undo_note(log, p->path, p->old, what, false);
	free(what);
	if (r)
		return EXIT_FAILED;
	r = write_file(p->path, p->val);
	if (r) {
		undo_unnote(log);
		err("tx-%d: writing %s to %s failed: %s", p->queue, p->val, p->path,
		    strerror(-r));
		return EXIT_FAILED;
	}
	now = read_file(p->path);
	if (!now || cpumask_parse(now, &got) || !cpus_equal(&got, &p->want)) {
		err("tx-%d: wrote XPS mask %s, read back '%s'", p->queue, p->val,
		    now ? now : "(unreadable)");
		free(now);
		return EXIT_FAILED;
	}
	free(now);
	return 0;
}

/*
 * Bans the device from irqbalance before the first affinity write, so that
 * irqbalance cannot move an IRQ between our write and the ban.
 */
static int ban_first(struct nic *nic, const struct plan *plan, int nplan, char **banned,
		     struct undo_log *log)
{
	char *path, *old, *text;
	bool need = false;
	int r;

	for (int i = 0; i < nplan; i++)
		if (plan[i].irq >= 0 && !plan[i].skipped && !nic->irqs[plan[i].irq].banned)
			need = true;
	if (!nic->irqbalance || !need || !policy_count(nic, false))
		return 0;
	path = policy_path();
	*banned = path;
	if (g.dry_run)
		return 0;
	old = read_file(path);
	text = policy_text(nic, old);
	r = policy_write(path, old, text, "irq set", log);
	free(old);
	free(text);
	if (r)
		return r;
	policy_bans(nic);	/* banned now if irqbalance runs this script */
	return 0;
}

static void set_report(struct nic *nic, struct plan *plan, int nplan, const char *policy,
		       const char *banned)
{
	if (g.json) {
		jopen('{');
		jstr("dev", nic->dev);
		jstr("policy", policy);
		jbool("applied", !g.dry_run);
		jbool("node_override", nic->override);
		jstr("banned_in", banned);
		jkey("irqs");
		jopen('[');
		for (int i = 0; i < nplan; i++) {
			struct plan *p = &plan[i];
			struct irq *q;

			if (p->irq < 0)
				continue;
			q = &nic->irqs[p->irq];
			jopen('{');
			jint("irq", q->n);
			jstr("name", q->name);
			jbool("managed", q->managed);
			if (p->skipped) {
				jnull("cpu");
			} else {
				jint("cpu", cpus_nth(&p->want, 0));
				jstr("cpus", p->val);
				jbool("hint_followed", p->how != NULL);
				jstr("effective", g.dry_run ? NULL : q->eff);
				jbool("pending", p->pending);
				jbool("narrowed", p->narrowed);
			}
			jstr("old", p->old);
			jclose();
		}
		jclose();
		jkey("xps");
		jopen('[');
		for (int i = 0; i < nplan; i++)
			if (plan[i].irq < 0) {
				char *l = cpulist_format(&plan[i].want);

				jopen('{');
				jint("queue", plan[i].queue);
				jint("cpu", cpus_nth(&plan[i].want, 0));
				jstr("cpus", l);
				jint("irq", nic->irqs[plan[i].src].n);
				jstr("how", plan[i].how);
				jclose();
				free(l);
			}
		jclose();
		jclose();
		jend();
		return;
	}
	if (nic->override)
		printf("node %d given: it overrides the numa_node %d that the firmware reports for %s\n",
		       nic->use_node, nic->node, nic->bdf);
	if (banned)
		printf("%s %s (PCI %s) from irqbalance in %s before writing\n",
		       g.dry_run ? "would ban" : "banned", nic->dev, nic->bdf, banned);
	for (int i = 0; i < nplan; i++) {
		struct plan *p = &plan[i];
		struct irq *q;
		char *l;

		if (p->irq < 0) {
			l = cpulist_format(&p->want);
			printf("%stx-%d XPS -> CPU%s %s (follows IRQ %d %s, %s)\n",
			       g.dry_run ? "would set " : "", p->queue,
			       cpus_count(&p->want) > 1 ? "s" : "", l,
			       nic->irqs[p->src].n,
			       *nic->irqs[p->src].name ? nic->irqs[p->src].name : "-", p->how);
			free(l);
			continue;
		}
		q = &nic->irqs[p->irq];
		if (p->skipped)
			printf("IRQ %d (%s): managed by the kernel, left alone\n", q->n, q->name);
		else if (g.dry_run)
			printf("would set IRQ %d (%s): %s -> %s%s\n", q->n, q->name, p->old,
			       p->val, p->how ? " (driver's affinity_hint)" : "");
		else
			printf("IRQ %d (%s): %s -> %s%s, effective %s%s\n", q->n, q->name,
			       p->old, p->val, p->how ? " (driver's affinity_hint)" : "",
			       q->eff ? q->eff : "n/a",
			       p->pending ? " (pending: moves at its next interrupt)" :
			       p->narrowed ? " (narrowed by the interrupt controller: allowed, kept)" : "");
	}
}

static int irq_set(struct nic *nic, char **rest, int nrest)
{
	int order[MAXCPUS], norder = 0, nplan = 0, k = 0, rc = 0;
	bool xps = false;
	const char *policy;
	char *banned = NULL;
	struct cpus on, chosen, allowed;
	struct undo_log *log;
	struct plan *plan;

	if (nrest < 2 || strcmp(rest[0], "policy")) {
		err("usage: aheadctl irq set dev DEV policy local|spread|cpus LIST [xps] [node N]");
		return EXIT_USAGE;
	}
	policy = rest[1];
	if (online_cpus(&on)) {
		err("cannot read %s/devices/system/cpu/online", sysfs_root());
		return EXIT_FAILED;
	}
	memset(&chosen, 0, sizeof(chosen));
	memset(&allowed, 0, sizeof(allowed));
	if (!strcmp(policy, "local") || !strcmp(policy, "spread")) {
		for (int c = 0; c < MAXCPUS; c++)
			if (nic->local.on[c] && on.on[c])
				order[norder++] = c;
		if (!strcmp(policy, "spread"))
			for (int c = 0; c < MAXCPUS; c++)
				if (!nic->local.on[c] && on.on[c])
					order[norder++] = c;
		if (!norder) {
			err("%s: no online local CPUs to place IRQs on", nic->dev);
			return EXIT_FAILED;
		}
		for (int c = 0; c < MAXCPUS; c++)
			allowed.on[c] = nic->local.on[c] && on.on[c];
		rest += 2;
		nrest -= 2;
	} else if (!strcmp(policy, "cpus")) {
		if (nrest < 3 || cpulist_parse(rest[2], &chosen) || !cpus_count(&chosen)) {
			err("policy cpus: expected a CPU list such as 0-3,8, got '%s'",
			    nrest < 3 ? "" : rest[2]);
			return EXIT_USAGE;
		}
		if (!cpus_subset(&chosen, &on)) {
			char *l = cpulist_format(&on);

			err("CPU list %s has CPUs that are not online (online: %s)", rest[2], l);
			free(l);
			return EXIT_FAILED;
		}
		for (int c = 0; c < MAXCPUS; c++) {
			if (chosen.on[c])
				order[norder++] = c;
			allowed.on[c] = chosen.on[c] && nic->local.on[c];
		}
		rest += 3;
		nrest -= 3;
	} else {
		err("unknown policy '%s' (local, spread, cpus LIST)", policy);
		return EXIT_USAGE;
	}
	for (int i = 0; i < nrest; i++) {
		if (!strcmp(rest[i], "xps")) {
			xps = true;
		} else {
			err("unexpected argument '%s'", rest[i]);
			return EXIT_USAGE;
		}
	}
	if (!nic->nirq) {
		err("%s: no IRQs found (no msi_irqs, no interrupt line)", nic->dev);
		return EXIT_FAILED;
	}
	if (xps && !nic->ntx) {
		err("%s: no tx queues in sysfs: cannot set XPS", nic->dev);
		return EXIT_FAILED;
	}

	/* The whole plan, checked before the first write. */
	plan = xcalloc(nic->nirq + nic->ntx, sizeof(*plan));
	for (int i = 0; i < nic->nirq; i++)
		if (plan_irq(nic, &plan[nplan++], i, &allowed, order, norder, &k))
			return EXIT_FAILED;
	for (int q = 0; xps && q < nic->ntx; q++)
		if (plan_xps(nic, plan, &plan[nplan++], q))
			return EXIT_FAILED;
	/* The script the ban writes is in the log: a failure below puts it back too. */
	log = undo_new();
	if (ban_first(nic, plan, nplan, &banned, log)) {
		undo_free(log);
		return EXIT_FAILED;
	}

	for (int i = 0; i < nplan && !g.dry_run && !rc; i++) {
		if (plan[i].skipped)
			continue;
		rc = plan[i].irq >= 0 ? write_irq(nic, &plan[i], log) :
			write_xps(nic, plan, &plan[i], log);
	}
	if (rc) {
		undo_rollback(log);
		undo_free(log);
		return rc;
	}
	undo_free(log);
	set_report(nic, plan, nplan, policy, banned);
	{
		int npend = 0, nnarrow = 0;

		for (int i = 0; i < nplan; i++) {
			npend += plan[i].pending;
			nnarrow += plan[i].narrowed;
		}
		if (npend)
			fprintf(stderr, "aheadctl: %d IRQs of %s are pending: the kernel moves each at its next interrupt ('aheadctl irq show dev %s' shows them)\n",
				npend, nic->dev, nic->dev);
		if (nnarrow)
			fprintf(stderr, "aheadctl: %d IRQs of %s have an effective affinity narrower than the CPUs written: the interrupt controller chose among them, as it may\n",
				nnarrow, nic->dev);
	}
	if (nic->irqbalance && unbanned(nic))
		print_ban_hint(nic, stderr);
	return 0;
}

/* Writes (or replaces DEV's entry in) the irqbalance policy script. */
static int irq_ban(struct nic *nic)
{
	char *path = policy_path(), *old = read_file(path);
	char *out = policy_text(nic, old);
	int nb = policy_count(nic, true), r;

	if (!nb) {
		err("%s: every IRQ is managed by the kernel; irqbalance leaves them alone already",
		    nic->dev);
		free(old);
		return EXIT_FAILED;
	}
	if (g.dry_run) {
		if (g.json) {
			jopen('{');
			jstr("path", path);
			jstr("script", out);
			jbool("applied", false);
			jclose();
			jend();
		} else {
			printf("would write %s:\n%s", path, out);
		}
		free(old);
		return 0;
	}
	r = policy_write(path, old, out, "irq ban", NULL);
	free(old);
	if (r)
		return r;
	if (g.json) {
		jopen('{');
		jstr("path", path);
		jstr("pci", nic->bdf);
		jint("banned_irqs", nb);
		jbool("applied", true);
		jbool("irqbalance_uses_it", nic->policyscript && !strcmp(nic->policyscript, path));
		jclose();
		jend();
	} else {
		printf("wrote %s: %d IRQs of %s (PCI %s) banned from irqbalance\n", path, nb,
		       nic->dev, nic->bdf);
		if (!nic->policyscript || strcmp(nic->policyscript, path))
			printf("irqbalance reads it once started with it: set IRQBALANCE_ARGS=\"--policyscript=%s\" in /etc/default/irqbalance, then 'systemctl restart irqbalance'\n",
			       path);
	}
	return 0;
}

int cmd_irq(int argc, char **argv)
{
	const char *dev, *verb = argc ? argv[0] : "";
	char **rest;
	int nrest, node, r;
	struct nic nic;

	if (strcmp(verb, "show") && strcmp(verb, "set") && strcmp(verb, "ban")) {
		err("unknown irq verb '%s' (show, set, ban)", verb);
		return EXIT_USAGE;
	}
	r = parse_dev_args(argc - 1, argv + 1, &dev, &node, &rest, &nrest);
	if (r)
		return r;
	if (strcmp(verb, "set") && nrest) {
		err("unexpected argument '%s'", rest[0]);
		return EXIT_USAGE;
	}
	if (!strcmp(verb, "set") && (nrest < 2 || strcmp(rest[0], "policy"))) {
		err("usage: aheadctl irq set dev DEV policy local|spread|cpus LIST [xps] [node N]");
		return EXIT_USAGE;
	}
	r = nic_load(&nic, dev, node, false);
	if (!r && !strcmp(verb, "show"))
		r = irq_show(&nic);
	else if (!r && !strcmp(verb, "ban"))
		r = irq_ban(&nic);
	else if (!r)
		r = irq_set(&nic, rest, nrest);
	nic_free(&nic);
	free(rest);
	return r;
}

/* A check that could not run is said, never skipped in silence. */
static void doctor_unread(struct doctor *d, const char *what)
{
	doctor_finding(d, "irq", what,
		       "none from aheadctl: make the file readable (is procfs/sysfs mounted? run as root?) and run the doctor again");
}

static void doctor_nic(struct doctor *d, struct nic *nic)
{
	size_t cap = 64, len = 0;
	char *offs = xcalloc(1, cap);
	int noff = 0;

	for (int i = 0; i < nic->nirq; i++) {
		if (!nic->irqs[i].off_node || nic->use_node < 0)
			continue;
		if (len + 16 > cap)
			offs = realloc(offs, cap *= 2);
		if (!offs)
			exit(EXIT_FAILED);
		len += sprintf(offs + len, "%s%d", noff++ ? "," : "", nic->irqs[i].n);
	}
	if (noff) {
		char *l = cpulist_format(&nic->local);
		char *what = xsprintf("%s: %d IRQs (%s) run off the NIC's node %d (CPUs %s)",
				      nic->dev, noff, offs, nic->use_node, l);
		char *fix = xsprintf("aheadctl irq set dev %s policy local", shq(nic->dev));

		doctor_finding(d, "irq", what, fix);
		free(what);
		free(fix);
		free(l);
	}
	free(offs);
	if (nic->irqbalance && unbanned(nic)) {
		char *what = xsprintf("%s: irqbalance (pid %d) owns %d of its IRQs and will undo a placement",
				      nic->dev, nic->irqbalance, unbanned(nic));
		char *fix = xsprintf("aheadctl irq ban dev %s", shq(nic->dev));

		doctor_finding(d, "irq", what, fix);
		free(what);
		free(fix);
	}
}

/* Doctor: off-node IRQs and irqbalance conflicts of every PCI NIC. */
void doctor_irq(struct doctor *d)
{
	char *p = xsprintf("%s/class/net", sysfs_root());
	DIR *dir = opendir(p);
	struct dirent *e;
	bool names_said = false;

	if (!dir) {
		char *what = xsprintf("cannot read %s: %s: no NIC's IRQs were checked",
				      p, strerror(errno));

		doctor_unread(d, what);
		free(what);
	}
	free(p);
	while (dir && (e = readdir(dir))) {
		struct nic nic;

		if (e->d_name[0] == '.')
			continue;
		if (nic_load(&nic, e->d_name, -1, true)) {
			/* A virtual or non-PCI interface has nothing to check. */
			if (!nic.not_nic) {
				char *what = xsprintf("%s: not checked: %s", e->d_name,
						      nic.problem);

				doctor_unread(d, what);
				free(what);
			}
			nic_free(&nic);
			continue;
		}
		if (nic.names_err && !names_said) {
			char *what = xsprintf("cannot read %s/interrupts: %s: IRQs known only by name (mlx5_compN@pci:...) were not checked",
					      proc_root(), strerror(nic.names_err));

			doctor_unread(d, what);
			free(what);
			names_said = true;
		}
		doctor_nic(d, &nic);
		nic_free(&nic);
	}
	if (dir)
		closedir(dir);
}

/* Fuzzing (userland/fuzz/): /proc/interrupts as read from procfs. */
void fuzz_interrupts(const char *data, size_t n)
{
	char *text = xcalloc(1, n + 1);
	struct names nm = { 0 };

	memcpy(text, data, n);
	parse_names(&nm, text);
	free_names(&nm);
}
