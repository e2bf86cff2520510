/* snapshot.c: what decides write throughput, saved before a kernel upgrade and compared after (snapshot save/diff, doctor). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "aheadctl.h"

#define SNAP_FORMAT "aheadctl-snapshot"
#define SNAP_VERSION 1

/*
 * What a diff found: regressions (each with its fix), what could not be
 * compared because one side is unknown (each with what to do), and plain
 * changes.  path: the snapshot's, for the fixes; skip_bw: --skip-bw;
 * no_bmc: the snoop mode was not read now on purpose (the doctor).
 */
struct report {
	int n, nnotes, nunk;
	char **what, **fix, **notes, **unk_what, **unk_fix;
	const char *path;
	bool skip_bw, no_bmc;
};

static void add_pair(char ***a, char ***b, int *n, char *x, char *y)
{
	*a = realloc(*a, (*n + 1) * sizeof(char *));
	*b = realloc(*b, (*n + 1) * sizeof(char *));
	if (!*a || !*b)
		exit(EXIT_FAILED);
	(*a)[*n] = x;
	(*b)[(*n)++] = y;
}

static void regress(struct report *r, char *what, char *fix)
{
	add_pair(&r->what, &r->fix, &r->n, what, fix);
}

/* One side unknown: said, never compared (a missing side is no regression). */
static void not_compared(struct report *r, char *what, char *fix)
{
	add_pair(&r->unk_what, &r->unk_fix, &r->nunk, what, fix);
}

/* The fix for what the snapshot itself did not record. */
static char *resave_fix(const struct report *r)
{
	return xsprintf("aheadctl snapshot save %s (a new baseline, on a node in its known good state, once it can be read)",
			shq(r->path ? r->path : "FILE"));
}

static void note(struct report *r, char *s)
{
	r->notes = realloc(r->notes, (r->nnotes + 1) * sizeof(char *));
	if (!r->notes)
		exit(EXIT_FAILED);
	r->notes[r->nnotes++] = s;
}

static const char *jstr_of(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static long long jint_of(json_t *o, const char *k, long long dflt)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/*
 * A source that could not be read is recorded as unknown, never as empty:
 * the field is null and the snapshot's "unknown" object says why, by area
 * ("aheadfs", "bandwidth", "snoop_mode"); a NIC that cannot be read is an
 * entry with its own "unknown".  Saying that a mount is gone because the
 * mounts could not be listed would print a fix that mounts it twice.
 */
static void set_unknown(json_t *s, const char *area, const char *why)
{
	json_t *u = json_object_get(s, "unknown");

	json_object_set_new(u, area, json_string(why));
	warnx("snapshot: %s unknown (%s): recorded as unknown, not compared", area, why);
}

static const char *unknown_of(json_t *s, const char *area)
{
	return json_string_value(json_object_get(json_object_get(s, "unknown"), area));
}

/* The message of a child's -j error document, or dflt. */
static const char *child_error(json_t *j, const char *dflt)
{
	const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));

	return m ? m : dflt;
}

/* ---- taking a snapshot ---- */

/* The kernel release (procfs first, so that fixture trees can say theirs). */
static char *kernel_release(void)
{
	char *p = xsprintf("%s/sys/kernel/osrelease", proc_root());
	char *r = read_file(p);
	struct utsname u;

	free(p);
	if (r)
		return r;
	return xstrdup(uname(&u) ? "unknown" : u.release);
}

static char *link_base(const char *path)
{
	char real[PATH_MAX];

	return realpath(path, real) ? xstrdup(basename(real)) : NULL;
}

static bool real_sysfs(void)
{
	return !strcmp(sysfs_root(), "/sys");
}

/*
 * Driver, version and firmware: ethtool -i on the real system; in a
 * fixture tree (and without ethtool) the sysfs driver link and the
 * module's version file.
 */
static void nic_driver(json_t *o, const char *dev)
{
	char *p = xsprintf("%s/class/net/%s/device/driver", sysfs_root(), dev);
	char *drv = link_base(p), *ver, *out = NULL;
	char *eargv[] = { "ethtool", "-i", (char *)dev, NULL };

	free(p);
	p = xsprintf("%s/class/net/%s/device/driver/module/version", sysfs_root(), dev);
	ver = read_file(p);
	free(p);
	json_object_set_new(o, "driver", drv ? json_string(drv) : json_null());
	json_object_set_new(o, "version", ver ? json_string(ver) : json_null());
	json_object_set_new(o, "firmware", json_null());
	if (real_sysfs() && !run_cmd(eargv, NULL, -1, &out)) {
		for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
			if (!strncmp(l, "driver: ", 8))
				json_object_set_new(o, "driver", json_string(l + 8));
			else if (!strncmp(l, "version: ", 9))
				json_object_set_new(o, "version", json_string(l + 9));
			else if (!strncmp(l, "firmware-version: ", 18))
				json_object_set_new(o, "firmware", json_string(l + 18));
		}
	}
	free(out);
	free(drv);
	free(ver);
}

/*
 * One NIC as 'irq show' sees it, plus its driver; NULL if not a PCI NIC;
 * a PCI NIC 'irq show' cannot read is an entry that says why ("unknown").
 */
static json_t *nic_snap(const char *dev)
{
	char *a[] = { "-j", "irq", "show", "dev", (char *)dev, NULL };
	json_t *show, *o, *irqs, *xps, *e;
	int rc, ntx = 0, nrx = 0;
	size_t i;

	show = self_json(a, &rc, true);
	if (rc || !json_is_object(show)) {
		char *why = NULL, *bdf = NULL;

		o = NULL;
		if (nic_probe(dev, &why, &bdf) != 1) {
			o = json_pack("{s:s, s:s?, s:s}", "dev", dev, "pci", bdf, "unknown",
				      why ? why : child_error(show, "irq show failed"));
			warnx("snapshot: NIC %s unknown (%s): recorded as unknown, not compared",
			      dev, json_string_value(json_object_get(o, "unknown")));
		}
		free(why);
		free(bdf);
		json_decref(show);
		return o;
	}
	o = json_object();
	json_object_set_new(o, "dev", json_string(dev));
	json_object_set(o, "pci", json_object_get(show, "pci"));
	nic_driver(o, dev);
	json_object_set(o, "numa_node", json_object_get(show, "numa_node"));
	json_object_set(o, "local_cpus", json_object_get(show, "local_cpus"));
	irqs = json_array();
	json_array_foreach(json_object_get(show, "irqs"), i, e) {
		json_t *q = json_object();

		json_object_set(q, "irq", json_object_get(e, "irq"));
		json_object_set(q, "name", json_object_get(e, "name"));
		json_object_set(q, "affinity", json_object_get(e, "affinity"));
		json_object_set(q, "effective", json_object_get(e, "effective"));
		json_object_set(q, "managed", json_object_get(e, "managed"));
		json_object_set(q, "off_node", json_object_get(e, "off_node"));
		json_object_set(q, "irqbalance", json_object_get(e, "irqbalance"));
		json_array_append_new(irqs, q);
	}
	xps = json_object();
	json_array_foreach(json_object_get(show, "queues"), i, e) {
		const char *q = jstr_of(e, "queue");

		if (!strncmp(q, "tx-", 3)) {
			ntx++;
			json_object_set(xps, q, json_object_get(e, "xps"));
		} else {
			nrx++;
		}
	}
	json_object_set_new(o, "tx_queues", json_integer(ntx));
	json_object_set_new(o, "rx_queues", json_integer(nrx));
	json_object_set_new(o, "irqs", irqs);
	json_object_set_new(o, "xps", xps);
	json_decref(show);
	return o;
}

/* The first directory up from a device with FILE in it: numa_node, driver. */
static char *up_find(const char *devlink, const char *file)
{
	char real[PATH_MAX], *dir, *found = NULL;

	if (!realpath(devlink, real))
		return NULL;
	dir = xstrdup(real);
	while (strlen(dir) > 1 && !found) {
		char *p = xsprintf("%s/%s", dir, file), *up;

		if (!access(p, F_OK))
			found = p;
		else
			free(p);
		up = xstrdup(dirname(dir));
		free(dir);
		dir = up;
	}
	free(dir);
	return found;
}

static char *queue_attr(const char *dev, const char *key)
{
	char *p = xsprintf("%s/class/block/%s/queue/%s", sysfs_root(), dev, key);
	char *v = read_file(p);

	free(p);
	return v;
}

/* A whole disk behind a device (no loop, dm or partition); NULL otherwise. */
static json_t *disk_snap(const char *dev)
{
	char *base = xsprintf("%s/class/block/%s", sysfs_root(), dev);
	char *devlink = xsprintf("%s/device", base), *part = xsprintf("%s/partition", base);
	char *nodef = NULL, *drv = NULL, *ra, *nr;
	long long node = -1;
	json_t *o = NULL;

	if (access(devlink, F_OK) || !access(part, F_OK))
		goto out;
	nodef = up_find(devlink, "numa_node");
	if (nodef && read_int(nodef, &node))
		node = -1;
	drv = up_find(devlink, "driver");
	o = json_object();
	json_object_set_new(o, "dev", json_string(dev));
	json_object_set_new(o, "driver", drv ? json_string(link_base(drv)) : json_null());
	json_object_set_new(o, "numa_node", json_integer(node));
	ra = queue_attr(dev, "read_ahead_kb");
	nr = queue_attr(dev, "nr_requests");
	json_object_set_new(o, "read_ahead_kb", ra ? json_string(ra) : json_null());
	json_object_set_new(o, "nr_requests", nr ? json_string(nr) : json_null());
	free(ra);
	free(nr);
out:
	free(nodef);
	free(drv);
	free(base);
	free(devlink);
	free(part);
	return o;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names in SYSFS/class/CLS, sorted; the count. */
static int class_names(const char *cls, char ***names)
{
	char *p = xsprintf("%s/class/%s", sysfs_root(), cls);
	DIR *d = opendir(p);
	struct dirent *e;
	int n = 0;

	free(p);
	*names = NULL;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		*names = realloc(*names, (n + 1) * sizeof(char *));
		if (!*names)
			exit(EXIT_FAILED);
		(*names)[n++] = xstrdup(e->d_name);
	}
	if (d)
		closedir(d);
	if (n)
		qsort(*names, n, sizeof(char *), cmp_name);
	return n;
}

static json_t *bandwidth_snap(json_t *s)
{
	char *a[] = { "-j", "numa", "bw", "--size", "64M", "--seconds", "0.2", NULL };
	json_t *bw, *o;
	int rc;

	bw = self_json(a, &rc, false);
	if (rc || !json_is_object(bw)) {
		set_unknown(s, "bandwidth", child_error(bw, "numa bw failed"));
		json_decref(bw);
		return json_null();
	}
	o = json_object();
	json_object_set(o, "worst_ratio", json_object_get(bw, "worst_ratio"));
	json_object_set(o, "mbps", json_object_get(bw, "mbps"));
	json_decref(bw);
	return o;
}

static json_t *mounts_snap(json_t *s)
{
	char *a[] = { "-j", "fs", "show", NULL };
	json_t *all, *out, *e;
	size_t i;
	int rc;

	all = self_json(a, &rc, true);
	if (rc || !json_is_array(all)) {
		set_unknown(s, "aheadfs", child_error(all, "fs show failed"));
		json_decref(all);
		return json_null();
	}
	out = json_array();
	json_array_foreach(all, i, e) {
		json_t *m = json_object();

		json_object_set(m, "mountpoint", json_object_get(e, "mountpoint"));
		json_object_set(m, "lower", json_object_get(e, "lower"));
		json_object_set(m, "tunables", json_object_get(e, "tunables"));
		json_array_append_new(out, m);
	}
	json_decref(all);
	return out;
}

/*
 * Everything, now.  bw: measure the bandwidth matrix; c: the config (its
 * BMC), or NULL; bmc: read the snoop mode through that BMC (the doctor
 * does not contact it).
 */
static json_t *snap_take(bool bw, const struct conf *c, bool bmc)
{
	json_t *s = json_object(), *nics = json_array(), *disks = json_array(), *ib;
	char **names, *k = kernel_release(), stamp[32], *snoop = NULL;
	const char *expected;
	time_t now = time(NULL);
	int n, pid = irqbalance_pid();

	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	json_object_set_new(s, "format", json_string(SNAP_FORMAT));
	json_object_set_new(s, "version", json_integer(SNAP_VERSION));
	json_object_set_new(s, "saved", json_string(stamp));
	json_object_set_new(s, "kernel", json_string(k));
	json_object_set_new(s, "unknown", json_object());
	free(k);
	if (c && bmc && conf_has_bmc(c)) {
		snoop = conf_snoop_mode(c, &expected, false);
		if (!snoop)
			set_unknown(s, "snoop_mode", "the BMC of [bios] did not answer (see above)");
	}
	n = class_names("net", &names);
	for (int i = 0; i < n; i++) {
		json_t *o = nic_snap(names[i]);

		if (o)
			json_array_append_new(nics, o);
		free(names[i]);
	}
	free(names);
	n = class_names("block", &names);
	for (int i = 0; i < n; i++) {
		json_t *o = disk_snap(names[i]);

		if (o)
			json_array_append_new(disks, o);
		free(names[i]);
	}
	free(names);
	json_object_set_new(s, "nics", nics);
	json_object_set_new(s, "disks", disks);
	json_object_set_new(s, "bandwidth", bw ? bandwidth_snap(s) : json_null());
	json_object_set_new(s, "snoop_mode", snoop ? json_string(snoop) : json_null());
	free(snoop);
	json_object_set_new(s, "aheadfs", mounts_snap(s));
	ib = json_object();
	json_object_set_new(ib, "running", json_boolean(pid));
	json_object_set_new(ib, "pid", pid ? json_integer(pid) : json_null());
	json_object_set_new(s, "irqbalance", ib);
	return s;
}

/* ---- comparing ---- */

static json_t *find_by(json_t *arr, const char *key, const char *val)
{
	json_t *e;
	size_t i;

	json_array_foreach(arr, i, e)
		if (!strcmp(jstr_of(e, key), val))
			return e;
	return NULL;
}

/* The IRQs of a NIC with a flag set, as "40,41"; their count in *n. */
static char *irqs_with(json_t *nic, const char *flag, int *n)
{
	char *out = xstrdup("");
	json_t *e;
	size_t i;

	*n = 0;
	json_array_foreach(json_object_get(nic, "irqs"), i, e) {
		char *m;

		if (!json_is_true(json_object_get(e, flag)))
			continue;
		m = xsprintf("%s%s%lld", out, *out ? "," : "", jint_of(e, "irq", -1));
		free(out);
		out = m;
		(*n)++;
	}
	return out;
}

static char *irq_list(json_t *nic)
{
	char *out = xstrdup("");
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(nic, "irqs"), i, e) {
		char *m = xsprintf("%s%s%lld", out, *out ? "," : "", jint_of(e, "irq", -1));

		free(out);
		out = m;
	}
	return out;
}

/* tx queues whose XPS was set and is not any more: "tx-0,tx-3". */
static char *xps_lost(json_t *b, json_t *n)
{
	char *out = xstrdup("");
	const char *q;
	json_t *v;

	json_object_foreach(json_object_get(b, "xps"), q, v) {
		const char *was = json_string_value(v);
		const char *now = json_string_value(json_object_get(json_object_get(n, "xps"), q));
		char *m;

		/* A queue that is gone is the queue count's regression. */
		if (!was || !*was || !json_object_get(json_object_get(n, "xps"), q) ||
		    (now && *now))
			continue;
		m = xsprintf("%s%s%s", out, *out ? "," : "", q);
		free(out);
		out = m;
	}
	return out;
}

static char *placement_fix(json_t *b, const char *dev)
{
	bool had_xps = false;
	const char *q;
	json_t *v;

	json_object_foreach(json_object_get(b, "xps"), q, v)
		had_xps |= json_string_value(v) && *json_string_value(v);
	return xsprintf("aheadctl irq set dev %s policy local%s", shq(dev), had_xps ? " xps" : "");
}

static void diff_queues(struct report *r, json_t *b, json_t *n, const char *dev)
{
	long long bt = jint_of(b, "tx_queues", 0), br = jint_of(b, "rx_queues", 0);
	long long nt = jint_of(n, "tx_queues", 0), nr = jint_of(n, "rx_queues", 0);

	if (nt >= bt && nr >= br)
		return;
	regress(r, xsprintf("%s: queues dropped: %lld tx / %lld rx, were %lld / %lld",
			    dev, nt, nr, bt, br),
		bt == br ? xsprintf("ethtool -L %s combined %lld", shq(dev), bt) :
		xsprintf("ethtool -L %s tx %lld rx %lld", shq(dev), bt, br));
}

static void diff_irqs(struct report *r, json_t *b, json_t *n, const char *dev)
{
	int boff, noff, bib, nib;
	char *off = irqs_with(n, "off_node", &noff), *ib = irqs_with(n, "irqbalance", &nib);
	char *x, *bl = irq_list(b), *nl = irq_list(n);

	free(irqs_with(b, "off_node", &boff));
	free(irqs_with(b, "irqbalance", &bib));
	if (noff > boff)
		regress(r, xsprintf("%s: %d IRQs (%s) now run off the NIC's node %lld (CPUs %s); %d did before",
				    dev, noff, off, jint_of(n, "numa_node", -1),
				    jstr_of(n, "local_cpus"), boff),
			placement_fix(b, dev));
	x = xps_lost(b, n);
	if (*x)
		regress(r, xsprintf("%s: XPS lost on %s (was set, now none)", dev, x),
			placement_fix(b, dev));
	if (nib > bib)
		regress(r, xsprintf("%s: irqbalance now owns %d of its IRQs (%s); it owned %d and will undo the placement",
				    dev, nib, ib, bib),
			xsprintf("aheadctl irq ban dev %s", shq(dev)));
	if (strcmp(bl, nl))
		note(r, xsprintf("%s: IRQs renumbered: %s -> %s", dev, *bl ? bl : "none",
				 *nl ? nl : "none"));
	free(x);
	free(off);
	free(ib);
	free(bl);
	free(nl);
}

static void diff_nic(struct report *r, json_t *b, json_t *nics)
{
	const char *dev = jstr_of(b, "dev"), *bd = jstr_of(b, "driver");
	json_t *n = find_by(nics, "dev", dev);
	long long bn = jint_of(b, "numa_node", -1), nn;

	if (json_string_value(json_object_get(b, "unknown"))) {
		not_compared(r, xsprintf("%s: unknown in the snapshot (%s)", dev,
					 jstr_of(b, "unknown")), resave_fix(r));
		return;
	}

	if (!n && (n = find_by(nics, "pci", jstr_of(b, "pci")))) {
		regress(r, xsprintf("%s (pci %s) is now named %s", dev, jstr_of(b, "pci"),
				    jstr_of(n, "dev")),
			xsprintf("rename [nic %s] in aheadctl.conf to [nic %s], or pin the name with a systemd .link file",
				 dev, jstr_of(n, "dev")));
		dev = jstr_of(n, "dev");
	}
	if (!n) {
		regress(r, xsprintf("%s (pci %s, driver %s) is gone", dev, jstr_of(b, "pci"),
				    *bd ? bd : "?"),
			xsprintf("modprobe %s (dmesg says why it did not bind)", *bd ? shq(bd) : "DRIVER"));
		return;
	}
	if (json_string_value(json_object_get(n, "unknown"))) {
		not_compared(r, xsprintf("%s: not compared: it cannot be read now (%s)", dev,
					 jstr_of(n, "unknown")),
			     xsprintf("none from aheadctl: 'aheadctl irq show dev %s' says why; fix that and run it again",
				      shq(dev)));
		return;
	}
	if (*bd && strcmp(bd, jstr_of(n, "driver"))) {
		const char *pci = jstr_of(n, "pci"), *nd = jstr_of(n, "driver");
		char *bp = xsprintf("/sys/bus/pci/drivers/%s/bind", bd);
		char *up = xsprintf("/sys/bus/pci/drivers/%s/unbind", nd);
		char *bind = xsprintf("modprobe %s && echo %s > %s", shq(bd), shq(pci), shq(bp));


		regress(r, xsprintf("%s: driver swapped: %s -> %s", dev, bd, *nd ? nd : "none"),
			*nd ? xsprintf("echo %s > %s && %s (and blacklist %s)",
				       shq(pci), shq(up), bind, nd) : xstrdup(bind));
		free(bind);
		free(bp);
		free(up);
	} else if (strcmp(jstr_of(b, "version"), jstr_of(n, "version")) ||
		   strcmp(jstr_of(b, "firmware"), jstr_of(n, "firmware"))) {
		note(r, xsprintf("%s: %s version %s -> %s, firmware %s -> %s", dev, bd,
				 jstr_of(b, "version"), jstr_of(n, "version"),
				 jstr_of(b, "firmware"), jstr_of(n, "firmware")));
	}
	nn = jint_of(n, "numa_node", -1);
	if (bn >= 0 && nn != bn)
		regress(r, xsprintf("%s: numa_node %lld, was %lld (firmware or kernel no longer gives its proximity domain)",
				    dev, nn, bn),
			xsprintf("aheadctl irq set dev %s policy local node %lld", shq(dev), bn));
	diff_queues(r, b, n, dev);
	diff_irqs(r, b, n, dev);
}

static void diff_disk(struct report *r, json_t *b, json_t *disks)
{
	static const char *const keys[] = { "read_ahead_kb", "nr_requests" };
	const char *dev = jstr_of(b, "dev");
	json_t *n = find_by(disks, "dev", dev);

	if (!n) {
		regress(r, xsprintf("disk %s (driver %s) is gone", dev, jstr_of(b, "driver")),
			xsprintf("modprobe %s (dmesg says why it did not appear)",
				 *jstr_of(b, "driver") ? shq(jstr_of(b, "driver")) : "DRIVER"));
		return;
	}
	if (jint_of(n, "numa_node", -1) != jint_of(b, "numa_node", -1))
		note(r, xsprintf("disk %s: numa_node %lld -> %lld", dev,
				 jint_of(b, "numa_node", -1), jint_of(n, "numa_node", -1)));
	for (int i = 0; i < 2; i++) {
		const char *was = json_string_value(json_object_get(b, keys[i]));
		const char *now = json_string_value(json_object_get(n, keys[i]));
		char *p, *q;

		if (!was || (now && !strcmp(was, now)))
			continue;
		p = xsprintf("%s/class/block/%s/queue/%s", sysfs_root(), dev, keys[i]);
		q = shell_quote(p);
		regress(r, xsprintf("disk %s: %s %s, was %s", dev, keys[i], now ? now : "unreadable", was),
			xsprintf("echo %s > %s", shq(was), q));
		free(p);
		free(q);
	}
}

static char *tunable_str(json_t *v)
{
	if (json_is_integer(v))
		return xsprintf("%lld", (long long)json_integer_value(v));
	return xstrdup(json_string_value(v) ? json_string_value(v) : "unreadable");
}

static void diff_mount(struct report *r, json_t *b, json_t *mounts)
{
	const char *mp = jstr_of(b, "mountpoint");
	json_t *n = find_by(mounts, "mountpoint", mp), *v;
	char *q = shell_quote(mp);
	const char *k;

	if (!n) {
		char *opts = xstrdup("");

		json_object_foreach(json_object_get(b, "tunables"), k, v) {
			char *s = tunable_str(v), *o = xsprintf("%s%s%s=%s", opts, *opts ? "," : "", k, s);

			free(s);
			free(opts);
			opts = o;
		}
		regress(r, xsprintf("aheadfs mount %s (lower %s) is gone", mp, jstr_of(b, "lower")),
			xsprintf("mount -t aheadfs%s%s %s %s", *opts ? " -o " : "", *opts ? shq(opts) : "",
				 shq(jstr_of(b, "lower")), q));
		free(opts);
		free(q);
		return;
	}
	json_object_foreach(json_object_get(b, "tunables"), k, v) {
		char *was = tunable_str(v);
		char *now = tunable_str(json_object_get(json_object_get(n, "tunables"), k));

		if (strcmp(was, now)) {
			char *kv = xsprintf("%s=%s", k, was);

			regress(r, xsprintf("aheadfs %s: %s %s, was %s", mp, k, now, was),
				xsprintf("aheadctl fs set %s %s", q, shq(kv)));
			free(kv);
		}
		free(was);
		free(now);
	}
	free(q);
}

/* The snoop mode: compared when both sides have it, else said why not. */
static void diff_snoop(struct report *r, json_t *b, json_t *n, const struct conf *c)
{
	const char *bs = json_string_value(json_object_get(b, "snoop_mode"));
	const char *ns = json_string_value(json_object_get(n, "snoop_mode"));
	const char *bu = unknown_of(b, "snoop_mode"), *nu = unknown_of(n, "snoop_mode");

	if (bs && ns && strcmp(bs, ns))
		regress(r, xsprintf("BIOS snoop mode %s, was %s", ns, bs),
			c ? conf_bios_fix(c, bs) :
			xsprintf("aheadctl --yes bios set snoop-mode %s --reboot --bmc URL", shq(bs)));
	else if (bs && nu)
		not_compared(r, xsprintf("the BIOS snoop mode (%s in the snapshot) not compared: %s",
					 bs, nu),
			     xsprintf("none from aheadctl: make the BMC answer ('aheadctl bios show' with [bios]'s options says why) and run it again"));
	else if (bs && !ns && !r->no_bmc)
		note(r, xsprintf("the BIOS snoop mode (%s in the snapshot) not compared: no bmc in [bios] of the config",
				 bs));
	else if (bu && (ns || nu))
		not_compared(r, xsprintf("the BIOS snoop mode: unknown in the snapshot (%s)", bu),
			     resave_fix(r));
}

static void diff_node(struct report *r, json_t *b, json_t *n, const struct conf *c)
{
	json_t *bb = json_object_get(b, "bandwidth"), *nb = json_object_get(n, "bandwidth");
	json_t *br = json_object_get(bb, "worst_ratio"), *nr = json_object_get(nb, "worst_ratio");
	const char *bs = json_string_value(json_object_get(b, "snoop_mode"));

	if (strcmp(jstr_of(b, "kernel"), jstr_of(n, "kernel")))
		note(r, xsprintf("kernel %s -> %s", jstr_of(b, "kernel"), jstr_of(n, "kernel")));
	if (json_is_number(br) && json_is_number(nr) &&
	    json_number_value(nr) < BW_RATIO_THRESHOLD &&
	    json_number_value(br) >= BW_RATIO_THRESHOLD)
		regress(r, xsprintf("cross-node read bandwidth ratio %.2f, was %.2f (below %.2f: the snoop mode, QPI/UPI links or memory population changed)",
				    json_number_value(nr), json_number_value(br), BW_RATIO_THRESHOLD),
			xsprintf("aheadctl bios show; then aheadctl --yes bios set snoop-mode %s --reboot",
				 bs ? shq(bs) : "home"));
	else if (json_is_number(br) && unknown_of(n, "bandwidth"))
		not_compared(r, xsprintf("the cross-node bandwidth (ratio %.2f in the snapshot) not compared: it cannot be measured now (%s)",
					 json_number_value(br), unknown_of(n, "bandwidth")),
			     xstrdup("none from aheadctl: 'aheadctl numa bw' says why; fix that and run it again (or pass --skip-bw)"));
	else if (unknown_of(b, "bandwidth") && !r->skip_bw)
		not_compared(r, xsprintf("the cross-node bandwidth: not measured in the snapshot (%s)",
					 unknown_of(b, "bandwidth")), resave_fix(r));
	diff_snoop(r, b, n, c);
	if (!jint_of(json_object_get(b, "irqbalance"), "pid", 0) &&
	    jint_of(json_object_get(n, "irqbalance"), "pid", 0))
		note(r, xsprintf("irqbalance is running now (pid %lld), it was not",
				 jint_of(json_object_get(n, "irqbalance"), "pid", 0)));
}

static void snap_diff(struct report *r, json_t *b, json_t *n, const struct conf *c)
{
	json_t *e;
	size_t i;

	diff_node(r, b, n, c);
	json_array_foreach(json_object_get(b, "nics"), i, e)
		diff_nic(r, e, json_object_get(n, "nics"));
	json_array_foreach(json_object_get(n, "nics"), i, e)
		if (!find_by(json_object_get(b, "nics"), "dev", jstr_of(e, "dev")) &&
		    !find_by(json_object_get(b, "nics"), "pci", jstr_of(e, "pci")))
			note(r, xsprintf("%s (driver %s) is new", jstr_of(e, "dev"),
					 jstr_of(e, "driver")));
	json_array_foreach(json_object_get(b, "disks"), i, e)
		diff_disk(r, e, json_object_get(n, "disks"));
	if (unknown_of(b, "aheadfs"))
		not_compared(r, xsprintf("the aheadfs mounts: unknown in the snapshot (%s)",
					 unknown_of(b, "aheadfs")), resave_fix(r));
	else if (json_array_size(json_object_get(b, "aheadfs")) &&
		 !json_is_array(json_object_get(n, "aheadfs")))
		not_compared(r, xsprintf("the aheadfs mounts not compared: they cannot be listed now (%s)",
					 unknown_of(n, "aheadfs") ? unknown_of(n, "aheadfs") : "?"),
			     xstrdup("none from aheadctl: 'aheadctl fs show' says why; fix that and run it again"));
	else
		json_array_foreach(json_object_get(b, "aheadfs"), i, e)
			diff_mount(r, e, json_object_get(n, "aheadfs"));
}

static json_t *snap_check(json_t *s, const char *path);

/* Loads a snapshot; NULL after one message naming the file. */
static json_t *snap_load(const char *path)
{
	json_error_t je;
	struct stat st;
	json_t *s;

	if (stat(path, &st)) {
		err("%s: %s (save one with 'aheadctl snapshot save %s')", path,
		    strerror(errno), path);
		return NULL;
	}
	s = json_load_file(path, 0, &je);
	if (!s) {
		err("%s:%d: not a snapshot: %s", path, je.line, je.text);
		return NULL;
	}
	return snap_check(s, path);
}

/* s if it is a snapshot this aheadctl reads; else NULL after a message (s freed). */
static json_t *snap_check(json_t *s, const char *path)
{
	if (!json_is_object(s) || strcmp(jstr_of(s, "format"), SNAP_FORMAT)) {
		err("%s: not an aheadctl snapshot (no \"format\": \"%s\")", path, SNAP_FORMAT);
		json_decref(s);
		return NULL;
	}
	if (jint_of(s, "version", -1) != SNAP_VERSION) {
		err("%s: snapshot format version %lld; this aheadctl reads version %d (save a new one with 'aheadctl snapshot save %s')",
		    path, jint_of(s, "version", -1), SNAP_VERSION, path);
		json_decref(s);
		return NULL;
	}
	return s;
}

/* What this snapshot could not read: areas and NICs, for the summary. */
static json_t *unknowns(json_t *s)
{
	json_t *l = json_array(), *e;
	const char *k;
	size_t i;

	json_object_foreach(json_object_get(s, "unknown"), k, e)
		json_array_append_new(l, json_string(k));
	json_array_foreach(json_object_get(s, "nics"), i, e)
		if (json_string_value(json_object_get(e, "unknown")))
			json_array_append_new(l, json_sprintf("NIC %s", jstr_of(e, "dev")));
	return l;
}

static int snap_save(const char *path, bool bw, const struct conf *c)
{
	json_t *s = snap_take(bw, c, true), *unk;
	char *tmp = NULL, *text;
	size_t nn = json_array_size(json_object_get(s, "nics"));
	size_t nd = json_array_size(json_object_get(s, "disks"));
	size_t nm = json_array_size(json_object_get(s, "aheadfs"));
	const char *snoop = json_string_value(json_object_get(s, "snoop_mode"));

	if (g.dry_run) {
		/* The snapshot it would write, on stdout. */
		if (g.json) {
			jvalue(NULL, s);
			jend();
		} else {
			json_dumpf(s, stdout, JSON_INDENT(2));
			putchar('\n');
		}
		json_decref(s);
		return 0;
	}
	text = json_dumps(s, JSON_INDENT(2));
	if (!text || write_atomic(path, text, 0644, &tmp)) {
		err("cannot write %s: %s", tmp ? tmp : path, strerror(text ? errno : ENOMEM));
		free(tmp);
		free(text);
		json_decref(s);
		return EXIT_FAILED;
	}
	free(text);
	unk = unknowns(s);
	if (g.json) {
		jopen('{');
		jstr("path", path);
		jstr("kernel", jstr_of(s, "kernel"));
		jint("nics", nn);
		jint("disks", nd);
		if (unknown_of(s, "aheadfs"))
			jnull("aheadfs");
		else
			jint("aheadfs", nm);
		jbool("bandwidth", json_is_object(json_object_get(s, "bandwidth")));
		jstr("snoop_mode", snoop);
		jvalue("unknown", unk);
		jclose();
		jend();
	} else {
		char *mounts = unknown_of(s, "aheadfs") ? xstrdup("aheadfs mounts unknown") :
			xsprintf("%zu aheadfs mounts", nm);

		printf("saved %s: kernel %s, %zu NICs, %zu disks, %s, bandwidth %s, snoop mode %s\n",
		       path, jstr_of(s, "kernel"), nn, nd, mounts,
		       json_is_object(json_object_get(s, "bandwidth")) ? "measured" :
		       bw ? "not measured (numa bw failed)" : "skipped (--skip-bw)",
		       snoop ? snoop : unknown_of(s, "snoop_mode") ? "unknown (the BMC did not answer)" :
		       "not read (no [bios] bmc)");
		free(mounts);
		if (json_array_size(unk)) {
			printf("unknown (not compared by diff until saved again):");
			for (size_t i = 0; i < json_array_size(unk); i++)
				printf("%s %s", i ? "," : "", json_string_value(json_array_get(unk, i)));
			putchar('\n');
		}
	}
	json_decref(unk);
	json_decref(s);
	free(tmp);
	return 0;
}

/*
 * Compares the snapshot at path with now; -1 on a bad snapshot.  bmc: read
 * the snoop mode through the config's BMC (not the doctor).
 */
static int snap_compare(const char *path, bool skip_bw, const struct conf *c, bool bmc,
			struct report *r, json_t **before)
{
	json_t *b = snap_load(path), *n;

	if (!b)
		return -1;
	r->path = path;
	r->skip_bw = skip_bw;
	r->no_bmc = !bmc;
	/* Measure the bandwidth only when there is a number to compare with. */
	n = snap_take(!skip_bw && json_is_object(json_object_get(b, "bandwidth")), c, bmc);
	snap_diff(r, b, n, c);
	json_decref(n);
	*before = b;
	return 0;
}

static int snap_diff_cmd(const char *path, bool skip_bw, const struct conf *c)
{
	struct report r = { 0 };
	json_t *b;

	if (snap_compare(path, skip_bw, c, true, &r, &b))
		return EXIT_FAILED;
	if (g.json) {
		jopen('{');
		jstr("snapshot", path);
		jstr("saved", jstr_of(b, "saved"));
		jstr("kernel_then", jstr_of(b, "kernel"));
		jint("count", r.n);
		jkey("regressions");
		jopen('[');
		for (int i = 0; i < r.n; i++) {
			jopen('{');
			jstr("regression", r.what[i]);
			jstr("fix", r.fix[i]);
			jclose();
		}
		jclose();
		jkey("not_compared");
		jopen('[');
		for (int i = 0; i < r.nunk; i++) {
			jopen('{');
			jstr("what", r.unk_what[i]);
			jstr("fix", r.unk_fix[i]);
			jclose();
		}
		jclose();
		jkey("notes");
		jopen('[');
		for (int i = 0; i < r.nnotes; i++)
			jstr(NULL, r.notes[i]);
		jclose();
		jclose();
		jend();
	} else {
		printf("against %s (saved %s, kernel %s)\n", path, jstr_of(b, "saved"),
		       jstr_of(b, "kernel"));
		for (int i = 0; i < r.nnotes; i++)
			printf("note: %s\n", r.notes[i]);
		for (int i = 0; i < r.n; i++)
			printf("REGRESSION %s\n  fix: %s\n", r.what[i], r.fix[i]);
		for (int i = 0; i < r.nunk; i++)
			printf("NOT COMPARED %s\n  fix: %s\n", r.unk_what[i], r.unk_fix[i]);
		printf("%d regression%s", r.n, r.n == 1 ? "" : "s");
		if (r.nunk)
			printf(", %d not compared", r.nunk);
		putchar('\n');
	}
	json_decref(b);
	/* What could not be compared is no "nothing regressed". */
	return r.n || r.nunk ? EXIT_FAILED : 0;
}

static int snap_usage(void)
{
	err("usage: aheadctl snapshot save|diff [FILE] [--skip-bw] [-c CONFIG]");
	return EXIT_USAGE;
}

int cmd_snapshot(int argc, char **argv)
{
	const char *verb = argc ? argv[0] : "", *file = NULL, *cpath = NULL;
	bool skip_bw = false;
	struct conf *c;
	int rc;

	if (strcmp(verb, "save") && strcmp(verb, "diff")) {
		err("unknown snapshot verb '%s' (save, diff)", verb);
		return EXIT_USAGE;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--skip-bw"))
			skip_bw = true;
		else if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) && i + 1 < argc)
			cpath = argv[++i];
		else if (argv[i][0] != '-' && !file)
			file = argv[i];
		else
			return snap_usage();
	}
	/* The config names the BMC and may name the snapshot. */
	if (cpath || !access(conf_default_path(), F_OK)) {
		c = conf_read(cpath ? cpath : conf_default_path());
		if (!c)
			return EXIT_FAILED;
	} else {
		c = NULL;
	}
	if (!file)
		file = c ? conf_snapshot(c) : NULL;
	if (!file) {
		err("snapshot %s: no FILE, and no 'snapshot = PATH' in the config", verb);
		return EXIT_USAGE;
	}
	if (!strcmp(verb, "save"))
		rc = snap_save(file, !skip_bw, c);
	else
		rc = snap_diff_cmd(file, skip_bw, c);
	return rc;
}

static void report_free(struct report *r)
{
	for (int i = 0; i < r->n; i++) {
		free(r->what[i]);
		free(r->fix[i]);
	}
	for (int i = 0; i < r->nunk; i++) {
		free(r->unk_what[i]);
		free(r->unk_fix[i]);
	}
	for (int i = 0; i < r->nnotes; i++)
		free(r->notes[i]);
	free(r->what);
	free(r->fix);
	free(r->unk_what);
	free(r->unk_fix);
	free(r->notes);
	memset(r, 0, sizeof(*r));
}

/* Doctor: the configured snapshot's regressions, each a finding. */
void doctor_snapshot(struct doctor *d, bool skip_bw)
{
	char *cp = conf_default_path();
	struct conf *c;
	struct report r = { 0 };
	const char *path;
	json_t *b;

	if (access(cp, F_OK)) {
		free(cp);
		return;
	}
	c = conf_read(cp);
	if (!c) {
		char *what = xsprintf("%s cannot be used (the message above says which line)", cp);

		/* A finding, not the doctor's failure: -j keeps its report. */
		json_error_reset();
		doctor_finding(d, "config", what, "fix that line, then: aheadctl verify");
		free(what);
		free(cp);
		return;
	}
	free(cp);
	path = conf_snapshot(c);
	if (!path) {
		conf_free(c);
		return;
	}
	/* The doctor reads what needs no BMC: the snoop mode is not compared. */
	if (snap_compare(path, skip_bw, c, false, &r, &b)) {
		char *what = xsprintf("the configured snapshot %s cannot be read (see above)", path);
		char *q = shell_quote(path);
		char *fix = xsprintf("aheadctl snapshot save %s (on a node in its known good state)", q);

		json_error_reset();
		doctor_finding(d, "snapshot", what, fix);
		free(what);
		free(fix);
		free(q);
		conf_free(c);
		return;
	}
	for (int i = 0; i < r.n; i++)
		doctor_finding(d, "snapshot", r.what[i], r.fix[i]);
	/* A side that could not be read is a check that did not run: a finding. */
	for (int i = 0; i < r.nunk; i++)
		doctor_finding(d, "snapshot", r.unk_what[i], r.unk_fix[i]);
	doctor_note(d, xsprintf("snapshot: compared with %s (kernel %s): %d regressions%s",
				path, jstr_of(b, "kernel"), r.n,
				r.nunk ? ", some parts not compared (findings)" : ""));
	if (json_string_value(json_object_get(b, "snoop_mode")))
		doctor_not_checked(d, xsprintf("snapshot: the BIOS snoop mode (%s in the snapshot) was not compared: the doctor does not contact the BMC ('aheadctl snapshot diff' does)",
					       json_string_value(json_object_get(b, "snoop_mode"))));
	json_decref(b);
	report_free(&r);
	conf_free(c);
}


/*
 * Fuzzing (userland/fuzz/): a snapshot file's bytes, checked as snap_load()
 * checks them, then diffed against itself and against a node with nothing.
 */
void fuzz_snapshot(const char *data, size_t n)
{
	json_t *s = json_loadb(data, n, 0, NULL), *none;
	struct report r = { 0 };

	if (!s || !(s = snap_check(s, "fuzz.json")))
		return;
	none = json_pack("{s:s, s:[], s:[], s:[]}", "kernel", "none", "nics", "disks", "aheadfs");
	snap_diff(&r, s, s, NULL);
	report_free(&r);
	snap_diff(&r, s, none, NULL);
	report_free(&r);
	snap_diff(&r, none, s, NULL);
	report_free(&r);
	shq_free();
	json_decref(none);
	json_decref(s);
}
