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

struct irq {
	int n;
	char *name;		/* from /proc/interrupts, "" if absent */
	char *aff;		/* smp_affinity_list as read */
	char *eff;		/* effective_affinity_list, NULL if absent */
	struct cpus affc, effc;
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

/* Reads irqbalance's command line: --banirq=N / -i N and --policyscript. */
static void irqbalance_args(struct nic *nic)
{
	char *p = xsprintf("%s/%d/cmdline", proc_root(), nic->irqbalance);
	char buf[8192];
	size_t len;
	FILE *f = fopen(p, "r");
	char *args[256];
	int na = 0;

	free(p);
	if (!f)
		return;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	/* cmdline is NUL-separated; a fixture may use newlines instead. */
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\n')
			buf[i] = 0;
	for (size_t i = 0; i < len && na < 256; i += strlen(buf + i) + 1)
		if (buf[i])
			args[na++] = buf + i;
	for (int i = 0; i < na; i++) {
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
		if (!strncmp(args[i], "--policyscript=", 15))
			nic->policyscript = xstrdup(args[i] + 15);
		else if ((!strcmp(args[i], "-l") || !strcmp(args[i], "--policyscript")) &&
			 i + 1 < na)
			nic->policyscript = xstrdup(args[++i]);
	}
}

static char *policy_path(void)
{
	return xsprintf("%s/aheadctl/irqbalance-policy.sh", etc_root());
}

/* IRQs our policy script bans: its "# aheadctl-ban DEV PCIPATH IRQ..." lines. */
static void policy_bans(struct nic *nic)
{
	char *ours = policy_path();
	char *text;

	if (!nic->policyscript) {
		free(ours);
		return;
	}
	text = read_file(nic->policyscript);
	free(ours);
	for (char *l = text; l && *l;) {
		char *nl = strchr(l, '\n');

		if (nl)
			*nl = 0;
		if (!strncmp(l, "# aheadctl-ban ", 15)) {
			char *s = NULL, *dev = strtok_r(l + 15, " ", &s);

			strtok_r(NULL, " ", &s);	/* pci path */
			if (dev && !strcmp(dev, nic->dev))
				for (char *t = strtok_r(NULL, " ", &s); t;
				     t = strtok_r(NULL, " ", &s))
					for (int k = 0; k < nic->nirq; k++)
						if (nic->irqs[k].n == atoi(t))
							nic->irqs[k].banned = true;
		}
		l = nl ? nl + 1 : NULL;
	}
	free(text);
}

/* Names from /proc/interrupts, indexed by IRQ number. */
struct names {
	int max;
	char **name;
};

static void load_names(struct names *nm)
{
	char *p = xsprintf("%s/interrupts", proc_root());
	char *text = read_file(p), *save = NULL, *line;
	int ncpu = 0;

	free(p);
	nm->max = 0;
	nm->name = NULL;
	if (!text)
		return;
	line = strtok_r(text, "\n", &save);
	for (char *s = line; s && (s = strstr(s, "CPU")); s += 3)
		ncpu++;
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *s = line, *end, *tok[64];
		int n, nt = 0;
		char *ss = NULL;

		while (isspace((unsigned char)*s))
			s++;
		n = strtol(s, &end, 10);
		if (end == s || *end != ':' || n < 0 || n > 1 << 20)
			continue;
		for (char *t = strtok_r(end + 1, " \t", &ss); t && nt < 64;
		     t = strtok_r(NULL, " \t", &ss))
			tok[nt++] = t;
		if (nt <= ncpu + 2)
			continue;
		if (n >= nm->max) {
			int nmax = n + 64;

			nm->name = realloc(nm->name, nmax * sizeof(char *));
			if (!nm->name)
				exit(EXIT_FAILED);
			memset(nm->name + nm->max, 0, (nmax - nm->max) * sizeof(char *));
			nm->max = nmax;
		}
		{
			size_t len = 0;
			char *nmstr;

			for (int i = ncpu + 2; i < nt; i++)
				len += strlen(tok[i]) + 1;
			nmstr = xcalloc(1, len + 1);
			for (int i = ncpu + 2; i < nt; i++) {
				if (i > ncpu + 2)
					strcat(nmstr, " ");
				strcat(nmstr, tok[i]);
			}
			nm->name[n] = nmstr;
		}
	}
	free(text);
}

static bool is_pci_function(const char *dir)
{
	char *sub = xsprintf("%s/subsystem", dir);
	char real[PATH_MAX];
	bool pci = realpath(sub, real) && !strcmp(basename(real), "pci");

	free(sub);
	return pci;
}

static void add_irq(struct nic *nic, int n)
{
	for (int i = 0; i < nic->nirq; i++)
		if (nic->irqs[i].n == n)
			return;
	nic->irqs = realloc(nic->irqs, (nic->nirq + 1) * sizeof(*nic->irqs));
	if (!nic->irqs)
		exit(EXIT_FAILED);
	memset(&nic->irqs[nic->nirq], 0, sizeof(*nic->irqs));
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
	if (nic->bdf && (at = strchr(name, '@')) && strstr(at, nic->bdf))
		return true;
	/* eth0, eth0-TxRx-3, eth0-rx-1 */
	return !strncmp(name, nic->dev, dl) && (!name[dl] || name[dl] == '-');
}

static void read_irq_state(struct nic *nic, struct irq *q, const struct names *nm)
{
	char *p = xsprintf("%s/irq/%d/smp_affinity_list", proc_root(), q->n);
	char *e = xsprintf("%s/irq/%d/effective_affinity_list", proc_root(), q->n);
	char *dbg = xsprintf("%s/kernel/debug/irq/irqs/%d", sysfs_root(), q->n);
	char *flags;
	struct stat st;

	q->name = xstrdup(q->n < nm->max && nm->name[q->n] ? nm->name[q->n] : "");
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
	(void)nic;
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

/*
 * Loads everything about DEV.  forced_node >= 0 overrides numa_node -1.
 * Prints one message and returns non-zero when DEV cannot be used.
 */
static int nic_load(struct nic *nic, const char *dev, int forced_node, bool quiet)
{
	char *net = xsprintf("%s/class/net/%s", sysfs_root(), dev);
	char *link = xsprintf("%s/device", net);
	char real[PATH_MAX], *dir, *devroot;
	struct names nm;
	struct stat st;
	long long node = -1;
	DIR *d;
	struct dirent *e;

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
		if (!quiet)
			err("no network or block device '%s' (nothing in %s/class/net or class/block)",
			    dev, sysfs_root());
		return EXIT_FAILED;
	}
	if (!realpath(link, real)) {
		if (!quiet)
			err("%s has no device (a virtual interface): it has no IRQs of its own",
			    dev);
		return EXIT_FAILED;
	}
	/* virtio-net's device link is the virtio device, below the PCI function. */
	devroot = xsprintf("%s/devices", sysfs_root());
	{
		char rootreal[PATH_MAX];

		if (realpath(devroot, rootreal)) {
			free(devroot);
			devroot = xstrdup(rootreal);
		}
	}
	dir = xstrdup(real);
	while (strlen(dir) > strlen(devroot) && !is_pci_function(dir)) {
		char *up = xstrdup(dirname(dir));

		free(dir);
		dir = up;
	}
	if (strlen(dir) <= strlen(devroot)) {
		if (!quiet)
			err("%s (%s) is not behind a PCI function: no msi_irqs to read",
			    dev, real);
		free(dir);
		return EXIT_FAILED;
	}
	nic->pci = dir;
	nic->bdf = xstrdup(basename(xstrdup(dir)));
	{
		char *p = xsprintf("%s/numa_node", dir);

		if (read_int(p, &node))
			node = -1;
		free(p);
	}
	nic->node = node;
	nic->use_node = node;
	if (node < 0 && forced_node >= 0) {
		nic->use_node = forced_node;
		nic->fallback = "node given on the command line";
	}
	if (nic->use_node >= 0) {
		if (node_cpus(nic->use_node, &nic->local)) {
			if (!quiet)
				err("node %d: no %s/devices/system/node/node%d/cpulist",
				    nic->use_node, sysfs_root(), nic->use_node);
			return EXIT_FAILED;
		}
	} else {
		char *p = xsprintf("%s/local_cpulist", dir);
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
	{
		struct cpus on;

		if (!online_cpus(&on))
			for (int i = 0; i < MAXCPUS; i++)
				nic->local.on[i] = nic->local.on[i] && on.on[i];
	}

	/* The PCI function's MSI/MSI-X vectors, else its INTx line. */
	{
		char *p = xsprintf("%s/msi_irqs", dir);

		d = opendir(p);
		free(p);
		while (d && (e = readdir(d)))
			if (isdigit((unsigned char)e->d_name[0]))
				add_irq(nic, atoi(e->d_name));
		if (d)
			closedir(d);
		if (!nic->nirq) {
			long long irq;

			p = xsprintf("%s/irq", dir);
			if (!read_int(p, &irq) && irq > 0)
				add_irq(nic, irq);
			free(p);
		}
	}
	load_names(&nm);
	for (int i = 0; i < nm.max; i++)
		if (nm.name[i] && name_matches(nic, nm.name[i]))
			add_irq(nic, i);
	qsort(nic->irqs, nic->nirq, sizeof(*nic->irqs), cmp_irq);
	for (int i = 0; i < nic->nirq; i++)
		read_irq_state(nic, &nic->irqs[i], &nm);
	for (int i = 0; i < nm.max; i++)
		free(nm.name[i]);
	free(nm.name);

	nic->ntx = nic->block ? 0 : count_queues(dev, "tx-");
	nic->nrx = nic->block ? 0 : count_queues(dev, "rx-");
	nic->irqbalance = irqbalance_pid();
	if (nic->irqbalance) {
		irqbalance_args(nic);
		policy_bans(nic);
	}
	free(net);
	free(link);
	free(devroot);
	return 0;
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
	if (nic->node >= 0)
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
	fprintf(f, "irqbalance (pid %d) is running and will move %d of %s's IRQs:\n"
		"  run 'aheadctl irq ban dev %s', or start irqbalance with",
		nic->irqbalance, unbanned(nic), nic->dev, nic->dev);
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
		printf("%5s  %-32s %-10s %-10s %s\n", "IRQ", "NAME", "AFFINITY",
		       "EFFECTIVE", "STATE");
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
		printf("%5d  %-32s %-10s %-10s %s\n", q->n, *q->name ? q->name : "-",
		       q->aff ? q->aff : "-", q->eff ? q->eff : "-", state);
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
	int cpu;
	char *path;
	char *old;
	bool skipped;		/* managed: left alone */
	bool pending;		/* effective affinity not moved yet */
	bool written;
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

static void rollback(struct plan *p, int n)
{
	for (int i = n - 1; i >= 0; i--) {
		if (!p[i].written)
			continue;
		if (write_file(p[i].path, p[i].old))
			warnx("could not restore %s to %s", p[i].path, p[i].old);
		else
			fprintf(stderr, "aheadctl: restored %s to %s\n", p[i].path, p[i].old);
	}
}

static int irq_set(struct nic *nic, char **rest, int nrest)
{
	int order[MAXCPUS], norder = 0, nplan = 0, k = 0, rc = 0;
	bool xps = false;
	const char *policy;
	struct cpus on, chosen;
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
		for (int c = 0; c < MAXCPUS; c++)
			if (chosen.on[c])
				order[norder++] = c;
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
	for (int i = 0; i < nic->nirq; i++) {
		struct plan *p = &plan[nplan++];

		p->irq = i;
		p->path = xsprintf("%s/irq/%d/smp_affinity_list", proc_root(), nic->irqs[i].n);
		p->old = nic->irqs[i].aff ? xstrdup(nic->irqs[i].aff) : NULL;
		if (nic->irqs[i].managed) {
			p->skipped = true;
			continue;
		}
		if (!p->old) {
			err("IRQ %d: cannot read %s: %s", nic->irqs[i].n, p->path,
			    strerror(errno));
			return EXIT_FAILED;
		}
		p->cpu = order[k++ % norder];
		if (!g.dry_run && access(p->path, W_OK)) {
			err("cannot write %s: %s%s", p->path, strerror(errno),
			    errno == EACCES ? " (irq set needs root)" : "");
			return EXIT_FAILED;
		}
	}
	for (int q = 0; xps && q < nic->ntx; q++) {
		struct plan *p = &plan[nplan++];

		p->irq = -1;
		p->queue = q;
		p->cpu = order[q % norder];
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
	}

	for (int i = 0; i < nplan && !g.dry_run; i++) {
		struct plan *p = &plan[i];
		char val[32], *now;
		int r;

		if (p->skipped)
			continue;
		if (p->irq >= 0) {
			struct irq *q = &nic->irqs[p->irq];
			struct cpus want, eff;
			char *e;

			snprintf(val, sizeof(val), "%d", p->cpu);
			r = write_file(p->path, val);
			if (r == -EIO || r == -EPERM) {
				/* The kernel manages this one's affinity. */
				q->managed = true;
				p->skipped = true;
				continue;
			}
			if (r) {
				err("IRQ %d: writing %s to %s failed: %s", q->n, val,
				    p->path, strerror(-r));
				rc = EXIT_FAILED;
				break;
			}
			p->written = true;
			now = read_file(p->path);
			memset(&want, 0, sizeof(want));
			want.on[p->cpu] = true;
			if (!now || strcmp(now, val)) {
				err("IRQ %d: wrote %s, read back '%s'", q->n, val,
				    now ? now : "(unreadable)");
				free(now);
				rc = EXIT_FAILED;
				break;
			}
			free(q->aff);
			q->aff = now;
			e = xsprintf("%s/irq/%d/effective_affinity_list", proc_root(), q->n);
			free(q->eff);
			q->eff = read_file(e);
			free(e);
			/*
			 * x86 moves an MSI whose vector cannot change in
			 * process context at its next interrupt: until then
			 * the effective affinity is the old one.  Pending, not
			 * failed; irq show says which.
			 */
			if (q->eff && (cpulist_parse(q->eff, &eff) || !cpus_subset(&eff, &want)))
				p->pending = true;
		} else {
			struct cpus want;
			char *mask;

			memset(&want, 0, sizeof(want));
			want.on[p->cpu] = true;
			mask = cpumask_format(&want);
			r = write_file(p->path, mask);
			if (r) {
				err("tx-%d: writing %s to %s failed: %s", p->queue, mask,
				    p->path, strerror(-r));
				free(mask);
				rc = EXIT_FAILED;
				break;
			}
			p->written = true;
			now = read_file(p->path);
			{
				struct cpus got;

				if (!now || cpumask_parse(now, &got) ||
				    memcmp(&got, &want, sizeof(got))) {
					err("tx-%d: wrote XPS mask %s, read back '%s'", p->queue,
					    mask, now ? now : "(unreadable)");
					rc = EXIT_FAILED;
				}
			}
			free(now);
			free(mask);
			if (rc)
				break;
		}
	}
	if (rc) {
		rollback(plan, nplan);
		return rc;
	}

	if (g.json) {
		jopen('{');
		jstr("dev", nic->dev);
		jstr("policy", policy);
		jbool("applied", !g.dry_run);
		jkey("irqs");
		jopen('[');
		for (int i = 0; i < nplan; i++) {
			struct plan *p = &plan[i];

			if (p->irq < 0)
				continue;
			jopen('{');
			jint("irq", nic->irqs[p->irq].n);
			jstr("name", nic->irqs[p->irq].name);
			jbool("managed", nic->irqs[p->irq].managed);
			if (p->skipped) {
				jnull("cpu");
			} else {
				jint("cpu", p->cpu);
				jstr("effective", g.dry_run ? NULL : nic->irqs[p->irq].eff);
				jbool("pending", p->pending);
			}
			jstr("old", p->old);
			jclose();
		}
		jclose();
		jkey("xps");
		jopen('[');
		for (int i = 0; i < nplan; i++)
			if (plan[i].irq < 0) {
				jopen('{');
				jint("queue", plan[i].queue);
				jint("cpu", plan[i].cpu);
				jclose();
			}
		jclose();
		jclose();
		jend();
	} else {
		for (int i = 0; i < nplan; i++) {
			struct plan *p = &plan[i];

			if (p->irq < 0) {
				printf("%stx-%d XPS -> CPU %d\n", g.dry_run ? "would set " : "",
				       p->queue, p->cpu);
				continue;
			}
			if (p->skipped)
				printf("IRQ %d (%s): managed by the kernel, left alone\n",
				       nic->irqs[p->irq].n, nic->irqs[p->irq].name);
			else if (g.dry_run)
				printf("would set IRQ %d (%s): %s -> %d\n", nic->irqs[p->irq].n,
				       nic->irqs[p->irq].name, p->old, p->cpu);
			else
				printf("IRQ %d (%s): %s -> %d, effective %s%s\n",
				       nic->irqs[p->irq].n, nic->irqs[p->irq].name, p->old,
				       p->cpu, nic->irqs[p->irq].eff ? nic->irqs[p->irq].eff : "n/a",
				       p->pending ? " (pending: moves at its next interrupt)" : "");
		}
	}
	{
		int npend = 0;

		for (int i = 0; i < nplan; i++)
			npend += plan[i].pending;
		if (npend)
			fprintf(stderr, "aheadctl: %d IRQs of %s are pending: the kernel moves each at its next interrupt ('aheadctl irq show dev %s' shows them)\n",
				npend, nic->dev, nic->dev);
	}
	if (nic->irqbalance && unbanned(nic))
		print_ban_hint(nic, stderr);
	return 0;
}

/* Writes (or replaces DEV's entry in) the irqbalance policy script. */
static int irq_ban(struct nic *nic)
{
	char *path = policy_path(), *old = read_file(path), *dir, *tmp;
	size_t cap = 4096 + (old ? strlen(old) : 0) + nic->nirq * 12;
	char *out = xcalloc(1, cap), *o = out;
	FILE *f;
	int nb = 0;

	o += sprintf(o, "#!/bin/sh\n# aheadctl irqbalance policy: IRQs that aheadctl irq set places.\n"
		     "# irqbalance runs it as: SCRIPT DEVICE_SYSFS_PATH IRQ\n");
	/* Keep the other devices' entries. */
	for (char *l = old; l && *l;) {
		char *nl = strchr(l, '\n');
		size_t dl = strlen(nic->dev);

		if (nl)
			*nl = 0;
		if (!strncmp(l, "# aheadctl-ban ", 15) &&
		    !(strncmp(l + 15, nic->dev, dl) == 0 && l[15 + dl] == ' '))
			o += sprintf(o, "%s\n", l);
		l = nl ? nl + 1 : NULL;
	}
	o += sprintf(o, "# aheadctl-ban %s %s", nic->dev, nic->pci);
	for (int i = 0; i < nic->nirq; i++)
		if (!nic->irqs[i].managed) {
			o += sprintf(o, " %d", nic->irqs[i].n);
			nb++;
		}
	o += sprintf(o, "\n");
	/* The body: the banned device paths and IRQ numbers from the comments. */
	o += sprintf(o,
		     "grep '^# aheadctl-ban ' \"$0\" | while read -r _ _ _ path irqs; do\n"
		     "\tcase \"$1\" in \"$path\"*) echo ban=true; exit 0 ;; esac\n"
		     "\tfor i in $irqs; do [ \"$i\" = \"$2\" ] && { echo ban=true; exit 0; }; done\n"
		     "done\n");
	if (!nb) {
		err("%s: every IRQ is managed by the kernel; irqbalance leaves them alone already",
		    nic->dev);
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
		return 0;
	}
	dir = xstrdup(path);
	*strrchr(dir, '/') = 0;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		err("cannot create %s: %s%s", dir, strerror(errno),
		    errno == EACCES ? " (irq ban needs root)" : "");
		return EXIT_FAILED;
	}
	tmp = xsprintf("%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(out, f) < 0 || fchmod(fileno(f), 0755) || fclose(f)) {
		err("cannot write %s: %s%s", tmp, strerror(errno),
		    errno == EACCES ? " (irq ban needs root)" : "");
		unlink(tmp);
		return EXIT_FAILED;
	}
	if (rename(tmp, path)) {
		err("cannot rename %s to %s: %s", tmp, path, strerror(errno));
		unlink(tmp);
		return EXIT_FAILED;
	}
	if (g.json) {
		jopen('{');
		jstr("path", path);
		jint("banned_irqs", nb);
		jbool("applied", true);
		jbool("irqbalance_uses_it", nic->policyscript && !strcmp(nic->policyscript, path));
		jclose();
		jend();
	} else {
		printf("wrote %s: %d IRQs of %s banned from irqbalance\n", path, nb, nic->dev);
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
	if (r)
		return r;
	if (!strcmp(verb, "show"))
		return irq_show(&nic);
	if (!strcmp(verb, "ban"))
		return irq_ban(&nic);
	return irq_set(&nic, rest, nrest);
}

/* Doctor: off-node IRQs and irqbalance conflicts of every PCI NIC. */
void doctor_irq(struct doctor *d)
{
	char *p = xsprintf("%s/class/net", sysfs_root());
	DIR *dir = opendir(p);
	struct dirent *e;

	free(p);
	while (dir && (e = readdir(dir))) {
		struct nic nic;
		char offs[512] = "";
		int noff = 0;

		if (e->d_name[0] == '.' || nic_load(&nic, e->d_name, -1, true))
			continue;
		for (int i = 0; i < nic.nirq; i++)
			if (nic.irqs[i].off_node && nic.use_node >= 0 &&
			    strlen(offs) < sizeof(offs) - 16) {
				sprintf(offs + strlen(offs), "%s%d", noff ? "," : "",
					nic.irqs[i].n);
				noff++;
			}
		if (noff) {
			char *l = cpulist_format(&nic.local);
			char *what = xsprintf("%s: %d IRQs (%s) run off the NIC's node %d (CPUs %s)",
					      nic.dev, noff, offs, nic.use_node, l);
			char *fix = xsprintf("aheadctl irq set dev %s policy local", nic.dev);

			doctor_finding(d, "irq", what, fix);
			free(what);
			free(fix);
			free(l);
		}
		if (nic.irqbalance && unbanned(&nic)) {
			char *what = xsprintf("%s: irqbalance (pid %d) owns %d of its IRQs and will undo a placement",
					      nic.dev, nic.irqbalance, unbanned(&nic));
			char *fix = xsprintf("aheadctl irq ban dev %s", nic.dev);

			doctor_finding(d, "irq", what, fix);
			free(what);
			free(fix);
		}
	}
	if (dir)
		closedir(dir);
}
