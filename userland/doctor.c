/* doctor.c: one report of what can be read without a BMC, each finding with its fix. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aheadctl.h"

struct finding {
	char *area, *what, *fix;
};

struct doctor {
	int n;
	struct finding *f;
	int nnotes, nskip;
	char *notes[32];
	char *skipped[32];	/* left out on purpose (not a failure), said */
};

void doctor_finding(struct doctor *d, const char *area, const char *what,
		    const char *fix)
{
	d->f = realloc(d->f, (d->n + 1) * sizeof(*d->f));
	if (!d->f)
		exit(EXIT_FAILED);
	d->f[d->n].area = xstrdup(area);
	d->f[d->n].what = xstrdup(what);
	d->f[d->n].fix = xstrdup(fix);
	d->n++;
}

static void note(struct doctor *d, char *s)
{
	if (d->nnotes < 32)
		d->notes[d->nnotes++] = s;
}

/* For the checks in other files (snapshot.c); s is malloc'd and kept. */
void doctor_note(struct doctor *d, char *s)
{
	note(d, s);
}

/* What the doctor leaves out by design (the BMC), said; s is malloc'd and kept. */
void doctor_not_checked(struct doctor *d, char *s)
{
	if (d->nskip < 32)
		d->skipped[d->nskip++] = s;
	else
		free(s);
}

static bool has_opt(const char *opts, const char *o)
{
	size_t l = strlen(o);

	for (const char *p = opts; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (!strncmp(p, o, l) && (p[l] == ',' || !p[l]))
			return true;
	}
	return false;
}

/* The mount's options without the ones that turn attribute caching off. */
static char *fixed_opts(const char *opts, bool noac)
{
	static const char *const drop[] = { "noac", "actimeo=0", "acregmin=0",
		"acregmax=0", "acdirmin=0", "acdirmax=0", "rw", NULL };
	char *copy = xstrdup(opts), *save = NULL, *out = xcalloc(1, strlen(opts) + 16);

	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		bool skip = noac && !strcmp(t, "sync");	/* noac implies sync */

		for (int i = 0; drop[i]; i++)
			skip |= !strcmp(t, drop[i]);
		if (skip)
			continue;
		if (*out)
			strcat(out, ",");
		strcat(out, t);
	}
	free(copy);
	return out;
}

/* NFS mounts that pay a round trip for every stat: noac or actimeo=0. */
static void doctor_nfs(struct doctor *d)
{
	char *p = xsprintf("%s/self/mounts", proc_root());
	char *text = read_file(p), *save = NULL;
	int nfs = 0;

	if (!text) {
		char *w = xsprintf("%s: %s: the NFS mounts were not checked", p, strerror(errno));

		doctor_finding(d, "nfs", w,
			       "none from aheadctl: make the file readable (is procfs mounted?) and run the doctor again");
		free(w);
		free(p);
		return;
	}
	free(p);
	for (char *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char esrc[4096], emnt[4096], type[64], opts[4096], *src, *mnt;
		bool noac, ac0;

		if (sscanf(l, "%4095s %4095s %63s %4095s", esrc, emnt, type, opts) != 4 ||
		    strncmp(type, "nfs", 3) || (type[3] && strcmp(type, "nfs4")))
			continue;
		nfs++;
		src = mount_unescape(esrc);
		mnt = mount_unescape(emnt);
		noac = has_opt(opts, "noac");
		ac0 = has_opt(opts, "actimeo=0") ||
			(has_opt(opts, "acregmax=0") && has_opt(opts, "acdirmax=0"));
		if (noac || ac0) {
			char *what = xsprintf("%s (%s): %s: every stat is a round trip to the server (26,000 files at a few ms each is minutes)",
					      mnt, src, noac ? "noac" : "actimeo=0");
			char *o = fixed_opts(opts, noac);
			char *o3 = xsprintf("%s%sactimeo=3", o, *o ? "," : "");
			char *qm = shell_quote(mnt), *qs = shell_quote(src);
			char *fix = xsprintf("umount %s && mount -t %s -o %s %s %s (or stack aheadfs with -o attr_timeout_ms=1000)",
					     qm, shq(type), shq(o3), qs, qm);

			free(o3);
			free(qm);
			free(qs);
			doctor_finding(d, "nfs", what, fix);
			free(what);
			free(fix);
			free(o);
		}
		free(src);
		free(mnt);
	}
	note(d, xsprintf("nfs: %d NFS mounts checked", nfs));
	free(text);
}

static void doctor_bw(struct doctor *d, bool skip)
{
	int nodes = numa_nodes();
	double ratio;
	bool flagged;
	char *v;

	if (nodes <= 1) {
		note(d, xsprintf("numa: one node, no cross-node bandwidth to check"));
		return;
	}
	if (skip) {
		note(d, xsprintf("numa: %d nodes, bandwidth matrix skipped (--skip-bw)", nodes));
		return;
	}
	if (numa_host_nodes() != nodes) {
		note(d, xsprintf("numa: %d nodes in %s, %d where aheadctl runs: bandwidth matrix not measured",
				 nodes, sysfs_root(), numa_host_nodes()));
		return;
	}
	/* A check that could not run is a finding, never an "ok". */
	if (numa_run(64ULL << 20, 0, 0.2)) {
		char *what = xsprintf("%d NUMA nodes, but the bandwidth matrix could not run (the message above says why): the cross-node bandwidth was not checked",
				      nodes);

		doctor_finding(d, "numa", what,
			       "none from aheadctl: 'aheadctl numa bw' says why; fix that (or run the doctor with --skip-bw) and run it again");
		free(what);
		return;
	}
	v = numa_verdict(&ratio, &flagged);
	if (flagged)
		doctor_finding(d, "numa", v,
			       "aheadctl bios show; then aheadctl --yes bios set snoop-mode home --reboot");
	else
		note(d, xsprintf("numa: %s", v));
	free(v);
}

int cmd_doctor(int argc, char **argv)
{
	struct doctor d = { 0 };
	bool skip_bw = false;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--skip-bw")) {
			skip_bw = true;
		} else {
			err("unknown doctor argument '%s' (--skip-bw)", argv[i]);
			return EXIT_USAGE;
		}
	}
	doctor_irq(&d);
	doctor_bw(&d, skip_bw);
	doctor_nfs(&d);
	doctor_fs(&d);
	doctor_snapshot(&d, skip_bw);
	if (g.json) {
		jopen('{');
		jint("count", d.n);
		jkey("findings");
		jopen('[');
		for (int i = 0; i < d.n; i++) {
			jopen('{');
			jstr("area", d.f[i].area);
			jstr("finding", d.f[i].what);
			jstr("fix", d.f[i].fix);
			jclose();
		}
		jclose();
		jkey("notes");
		jopen('[');
		for (int i = 0; i < d.nnotes; i++)
			jstr(NULL, d.notes[i]);
		jclose();
		jkey("not_checked");
		jopen('[');
		for (int i = 0; i < d.nskip; i++)
			jstr(NULL, d.skipped[i]);
		jclose();
		jclose();
		jend();
	} else {
		for (int i = 0; i < d.nnotes; i++)
			printf("ok: %s\n", d.notes[i]);
		for (int i = 0; i < d.nskip; i++)
			printf("not checked: %s\n", d.skipped[i]);
		for (int i = 0; i < d.n; i++)
			printf("FINDING [%s] %s\n  fix: %s\n", d.f[i].area, d.f[i].what,
			       d.f[i].fix);
		printf("%d finding%s\n", d.n, d.n == 1 ? "" : "s");
	}
	return d.n ? 1 : 0;
}
