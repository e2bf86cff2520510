/* fs.c: aheadfs mounts, their tunables and stats (fs show, fs set, doctor). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aheadctl.h"

struct mnt {
	char *dir;	/* mount point, unescaped */
	char *dev;	/* major:minor */
};

static const struct tunable {
	const char *name;
	unsigned long long min, max;	/* numeric range; max 0: an enum */
} tunables[] = {
	{ "prefetch", 0, 0 },
	{ "txn_kb", 4, 1048576 },
	{ "window_kb", 0, 4194304 },
	{ "attr_timeout_ms", 0, 3600000 },
	{ "entry_timeout_ms", 0, 3600000 },
	{ "negative_timeout_ms", 0, 3600000 },
	{ "readdir_cache", 0, 1 },
	{ "fh_search_entries", 0, 16777216 },
};
#define NTUNABLES (sizeof(tunables) / sizeof(tunables[0]))
static const char *const prefetch_modes[] = { "ahead", "legacy", "kernel", "off" };

/* /proc/self/mountinfo escapes space, tab, newline and backslash as \ooo. */
char *mount_unescape(const char *s)
{
	char *out = xstrdup(s), *o = out;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0');
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = 0;
	return out;
}

static int mountinfo_parse(char *text, struct mnt **out);

/* Every aheadfs mount from mountinfo; returns the count, -1 if unreadable. */
static int aheadfs_mounts(struct mnt **out)
{
	char *path = xsprintf("%s/self/mountinfo", proc_root());
	char *text = read_file(path);

	free(path);
	*out = NULL;
	if (!text)
		return -1;
	return mountinfo_parse(text, out);
}

/* The aheadfs mounts of mountinfo's text (consumed, freed); the count. */
static int mountinfo_parse(char *text, struct mnt **out)
{
	char *line, *save = NULL;
	int n = 0;

	*out = NULL;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[12] = { 0 }, *s2 = NULL, *tok;
		int nf = 0, dash = -1;

		for (tok = strtok_r(line, " ", &s2); tok && nf < 12;
		     tok = strtok_r(NULL, " ", &s2)) {
			if (!strcmp(tok, "-") && dash < 0)
				dash = nf;
			f[nf++] = tok;
		}
		if (dash < 0 || dash + 1 >= nf || nf < 5 ||
		    strcmp(f[dash + 1], "aheadfs"))
			continue;
		*out = realloc(*out, (n + 1) * sizeof(**out));
		if (!*out)
			exit(EXIT_FAILED);
		(*out)[n].dir = mount_unescape(f[4]);
		(*out)[n].dev = xstrdup(f[2]);
		n++;
	}
	free(text);
	return n;
}

/* Why mountinfo could not be read, for one message (errno as read_file left it). */
static char *mountinfo_error(void)
{
	int e = errno;

	return xsprintf("cannot read %s/self/mountinfo: %s%s", proc_root(), strerror(e),
			e == EFBIG ? " (aheadctl reads files up to 64 MiB)" : "");
}

static char *attr_path(const struct mnt *m, const char *name)
{
	return xsprintf("%s/fs/aheadfs/%s/%s", sysfs_root(), m->dev, name);
}

static char *attr_read(const struct mnt *m, const char *name)
{
	char *p = attr_path(m, name), *v = read_file(p);

	free(p);
	return v;
}

/* One "name value" line per counter, as the module writes it. */
static long long stat_get(const char *stats, const char *name)
{
	size_t len = strlen(name);

	for (const char *l = stats; l && *l;) {
		if (!strncmp(l, name, len) && l[len] == ' ')
			return strtoll(l + len + 1, NULL, 10);
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	return -1;
}

static void show_one(const struct mnt *m)
{
	char *stats = attr_read(m, "stats");
	char *lower = attr_read(m, "lower");

	if (g.json) {
		jopen('{');
		jstr("mountpoint", m->dir);
		jstr("dev", m->dev);
		jstr("lower", lower);
		jkey("tunables");
		jopen('{');
		for (size_t i = 0; i < NTUNABLES; i++) {
			char *v = attr_read(m, tunables[i].name);
			unsigned long long n;

			if (v && tunables[i].max && parse_u64(v, &n))
				jint(tunables[i].name, n);
			else
				jstr(tunables[i].name, v);
			free(v);
		}
		jclose();
		jkey("stats");
		if (!stats) {
			jnull(NULL);
		} else {
			char *s = xstrdup(stats), *save = NULL;

			jopen('{');
			for (char *l = strtok_r(s, "\n", &save); l;
			     l = strtok_r(NULL, "\n", &save)) {
				char *sp = strchr(l, ' ');

				if (!sp)
					continue;
				*sp = 0;
				jint(l, strtoll(sp + 1, NULL, 10));
			}
			jclose();
			free(s);
		}
		jclose();
	} else {
		printf("%s  dev %s  lower %s\n", m->dir, m->dev,
		       lower ? lower : "?");
		for (size_t i = 0; i < NTUNABLES; i++) {
			char *v = attr_read(m, tunables[i].name);

			printf("  %-18s %s\n", tunables[i].name, v ? v : "?");
			free(v);
		}
		if (stats) {
			char *s = xstrdup(stats), *save = NULL;

			printf("  stats:\n");
			for (char *l = strtok_r(s, "\n", &save); l;
			     l = strtok_r(NULL, "\n", &save)) {
				char *sp = strchr(l, ' ');

				if (!sp)
					continue;
				*sp = 0;
				printf("    %-24s %s\n", l, sp + 1);
			}
			free(s);
		} else {
			printf("  stats: unreadable\n");
		}
	}
	free(stats);
	free(lower);
}

static const struct mnt *find_mnt(const struct mnt *m, int n, const char *dir)
{
	char real[PATH_MAX];
	char *want = xstrdup(dir);
	size_t len = strlen(want);

	while (len > 1 && want[len - 1] == '/')
		want[--len] = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < n; i++)
			if (!strcmp(m[i].dir, want)) {
				free(want);
				return &m[i];
			}
		if (pass || !realpath(dir, real))
			break;
		free(want);
		want = xstrdup(real);
	}
	free(want);
	return NULL;
}

static int fs_show(int argc, char **argv)
{
	struct mnt *m;
	int n = aheadfs_mounts(&m), shown = 0;

	if (argc > 1) {
		err("fs show takes at most one mount point");
		return EXIT_USAGE;
	}
	if (n < 0) {
		char *msg = mountinfo_error();

		err("%s", msg);
		free(msg);
		return EXIT_FAILED;
	}
	if (argc == 1) {
		const struct mnt *one = find_mnt(m, n, argv[0]);

		if (!one) {
			err("%s is not an aheadfs mount", argv[0]);
			return EXIT_FAILED;
		}
		if (g.json)
			jopen('[');
		show_one(one);
		if (g.json) {
			jclose();
			jend();
		}
		return 0;
	}
	if (g.json)
		jopen('[');
	for (int i = 0; i < n; i++, shown++) {
		if (shown && !g.json)
			putchar('\n');
		show_one(&m[i]);
	}
	if (g.json) {
		jclose();
		jend();
	} else if (!n) {
		printf("no aheadfs mounts\n");
	}
	return 0;
}

static const struct tunable *tunable_of(const char *key)
{
	for (size_t i = 0; i < NTUNABLES; i++)
		if (!strcmp(tunables[i].name, key))
			return &tunables[i];
	return NULL;
}

static bool tunable_ok(const struct tunable *t, const char *val)
{
	unsigned long long v;

	if (!t->max) {
		for (size_t i = 0; i < 4; i++)
			if (!strcmp(val, prefetch_modes[i]))
				return true;
		return false;
	}
	return parse_u64(val, &v) && v >= t->min && v <= t->max;
}

static int fs_set(int argc, char **argv)
{
	struct mnt *m;
	const struct mnt *one;
	int n, nset = argc - 1, rc = 0;
	char **key, **val, **old, **path;
	struct undo_log *log;

	if (argc < 2) {
		err("usage: aheadctl fs set MNT KEY=VALUE [KEY=VALUE...]");
		return EXIT_USAGE;
	}
	key = xcalloc(nset, sizeof(char *));
	val = xcalloc(nset, sizeof(char *));
	old = xcalloc(nset, sizeof(char *));
	path = xcalloc(nset, sizeof(char *));
	/* Everything is checked before the first write. */
	for (int i = 0; i < nset; i++) {
		const struct tunable *t;
		char *eq = strchr(argv[i + 1], '=');

		if (!eq || eq == argv[i + 1]) {
			err("'%s': expected KEY=VALUE", argv[i + 1]);
			return EXIT_USAGE;
		}
		key[i] = strndup(argv[i + 1], eq - argv[i + 1]);
		val[i] = eq + 1;
		t = tunable_of(key[i]);
		if (!t) {
			err("unknown tunable '%s' (prefetch, txn_kb, window_kb, attr_timeout_ms, entry_timeout_ms, negative_timeout_ms, readdir_cache, fh_search_entries)",
			    key[i]);
			return EXIT_USAGE;
		}
		if (!tunable_ok(t, val[i])) {
			if (t->max)
				err("%s=%s: expected an integer from %llu to %llu%s",
				    key[i], val[i], t->min, t->max,
				    val[i][0] == '0' && val[i][1] ? ", without leading zeros" : "");
			else
				err("prefetch=%s: expected ahead, legacy, kernel or off",
				    val[i]);
			return EXIT_USAGE;
		}
	}
	n = aheadfs_mounts(&m);
	if (n < 0) {
		char *msg = mountinfo_error();

		err("%s", msg);
		free(msg);
		return EXIT_FAILED;
	}
	one = find_mnt(m, n, argv[0]);
	if (!one) {
		err("%s is not an aheadfs mount", argv[0]);
		return EXIT_FAILED;
	}
	for (int i = 0; i < nset; i++) {
		path[i] = attr_path(one, key[i]);
		old[i] = read_file(path[i]);
		if (!old[i]) {
			err("cannot read %s: %s", path[i], strerror(errno));
			return EXIT_FAILED;
		}
		if (!g.dry_run && access(path[i], W_OK)) {
			err("cannot write %s: %s%s", path[i], strerror(errno),
			    errno == EACCES ? " (fs set needs root)" : "");
			return EXIT_FAILED;
		}
	}
	if (g.json)
		jopen('[');
	log = undo_new();
	for (int i = 0; i < nset; i++) {
		int r = 0;
		char *now = NULL;

		if (!g.dry_run) {
			char *what = xsprintf("%s %s", one->dir, key[i]);
			bool noted = !undo_note(log, path[i], old[i], what, false);

			free(what);
			if (!noted) {
				rc = EXIT_FAILED;	/* not recorded, not written */
				break;
			}
			r = write_file(path[i], val[i]);
			if (r)
				undo_unnote(log);	/* refused: nothing changed */
			now = r ? NULL : read_file(path[i]);
			if (!r && (!now || strcmp(now, val[i])))
				r = -EIO;
		}
		if (r) {
			err("%s: writing %s=%s failed: %s%s", one->dir, key[i],
			    val[i], strerror(-r),
			    r == -EINVAL ? " (the module refused the value; see dmesg)" :
			    r == -EIO ? " (read back a different value)" : "");
			rc = EXIT_FAILED;
			free(now);
			break;
		}
		if (g.json) {
			jopen('{');
			jstr("mountpoint", one->dir);
			jstr("key", key[i]);
			jstr("old", old[i]);
			jstr("new", val[i]);
			jbool("applied", !g.dry_run);
			jclose();
		} else {
			printf("%s%s: %s %s -> %s\n", g.dry_run ? "would set " : "",
			       one->dir, key[i], old[i], val[i]);
		}
		free(now);
	}
	/* A failure puts back what was changed before it. */
	if (rc)
		undo_rollback(log);
	undo_free(log);
	if (g.json) {
		jclose();
		jend();
	}
	return rc;
}

int cmd_fs(int argc, char **argv)
{
	if (argc == 0 || !strcmp(argv[0], "show"))
		return fs_show(argc ? argc - 1 : 0, argv + (argc ? 1 : 0));
	if (!strcmp(argv[0], "set"))
		return fs_set(argc - 1, argv + 1);
	err("unknown fs verb '%s' (show, set)", argv[0]);
	return EXIT_USAGE;
}

/* Findings for the doctor: uncached tails, and txn_kb above window_kb. */
void doctor_fs(struct doctor *d)
{
	struct mnt *m;
	int n = aheadfs_mounts(&m);

	/* A check that could not run is a finding, never a silent pass. */
	if (n < 0) {
		char *msg = mountinfo_error();
		char *what = xsprintf("%s: no aheadfs mount was checked", msg);

		doctor_finding(d, "fs", what,
			       "none from aheadctl: make it readable (is procfs mounted?) and run the doctor again");
		free(what);
		free(msg);
	}
	for (int i = 0; i < n; i++) {
		char *stats = attr_read(&m[i], "stats");
		char *mode = attr_read(&m[i], "prefetch");
		char *txn = attr_read(&m[i], "txn_kb");
		char *win = attr_read(&m[i], "window_kb");
		long long tails = stat_get(stats, "uncached_tails");
		long long reqs = stat_get(stats, "read_reqs");
		unsigned long long t = 0, w = 0;

		if (!stats) {
			char *what = xsprintf("%s: %s/fs/aheadfs/%s/stats unreadable",
					      m[i].dir, sysfs_root(), m[i].dev);

			doctor_finding(d, "fs", what, "check that the aheadfs module is the one that mounted it");
			free(what);
		}
		if (tails > 0) {
			char *what = xsprintf("%s: %lld of %lld reads ended in bytes the prefetch had not brought in (uncached_tails, prefetch=%s)",
					      m[i].dir, tails, reqs, mode ? mode : "?");
			char *q = shell_quote(m[i].dir);
			/* The module's maximum (AHEADFS_MAX_WINDOW_KB), as fs set takes it. */
			unsigned long long wmax = tunable_of("window_kb")->max;
			unsigned long long want = win && parse_u64(win, &w) && w ?
				(w > wmax / 2 ? wmax : w * 2) : 65536ULL;
			char *fix = mode && strcmp(mode, "ahead") ?
				xsprintf("aheadctl fs set %s prefetch=ahead", q) :
				w >= wmax ?
				xsprintf("none from aheadctl: window_kb is at its maximum (%llu); the lower does not keep up with the readers of %s (aheadctl fs show %s: window_latency_us)",
					 wmax, q, q) :
				xsprintf("aheadctl fs set %s window_kb=%llu", q, want);

			free(q);

			doctor_finding(d, "fs", what, fix);
			free(what);
			free(fix);
		}
		if (!txn || !win || !parse_u64(txn, &t) || !parse_u64(win, &w)) {
			char *what = xsprintf("%s: %s/fs/aheadfs/%s/%s unreadable: txn_kb against window_kb not checked",
					      m[i].dir, sysfs_root(), m[i].dev,
					      txn && parse_u64(txn, &t) ? "window_kb" : "txn_kb");

			doctor_finding(d, "fs", what, "check that the aheadfs module is the one that mounted it");
			free(what);
		} else if (t > w) {
			char *what = xsprintf("%s: txn_kb %llu is larger than the prefetch window (window_kb %llu): a prefetch chunk cannot cover one transaction",
					      m[i].dir, t, w);
			char *q = shell_quote(m[i].dir);
			char *fix = xsprintf("aheadctl fs set %s window_kb=%llu", q, t);

			free(q);

			doctor_finding(d, "fs", what, fix);
			free(what);
			free(fix);
		}
		free(stats);
		free(mode);
		free(txn);
		free(win);
	}
}

/* Fuzzing (userland/fuzz/): mountinfo text as read from procfs. */
void fuzz_mountinfo(const char *data, size_t n)
{
	char *text = xcalloc(1, n + 1);
	struct mnt *m;
	int k;

	memcpy(text, data, n);
	k = mountinfo_parse(text, &m);
	for (int i = 0; i < k; i++) {
		free(m[i].dir);
		free(m[i].dev);
	}
	free(m);
}
