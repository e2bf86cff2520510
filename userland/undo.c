/* undo.c: the values aheadctl's writes replace: a failed verb's rollback, apply's record, revert. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "aheadctl.h"

#define STATE_FORMAT "aheadctl-apply-state"
#define STATE_VERSION 1
#define JOURNAL_FORMAT "aheadctl-apply-journal"
/* apply hands its children the journal's descriptor in this variable. */
#define JOURNAL_ENV "AHEADCTL_UNDO_FD"

struct undo {
	char *path;
	char *old;		/* NULL: the file did not exist */
	char *what;		/* "IRQ 40 (eth0-TxRx-0) affinity", for the messages */
	bool file;		/* a whole file of ours (the policy script), not a sysfs value */
};

struct undo_log {
	int n, cap;
	struct undo *u;
};

struct undo_log *undo_new(void)
{
	return xcalloc(1, sizeof(struct undo_log));
}

static void undo_add(struct undo_log *l, const char *path, const char *old,
		     const char *what, bool file)
{
	struct undo *u;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->u = realloc(l->u, l->cap * sizeof(*l->u));
		if (!l->u) {
			err("out of memory");
			exit(EXIT_FAILED);
		}
	}
	u = &l->u[l->n++];
	u->path = xstrdup(path);
	u->old = old ? xstrdup(old) : NULL;
	u->what = xstrdup(what);
	u->file = file;
}

void undo_free(struct undo_log *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->n; i++) {
		free(l->u[i].path);
		free(l->u[i].old);
		free(l->u[i].what);
	}
	free(l->u);
	free(l);
}

static char *state_dir(void)
{
	return xsprintf("%s/lib/aheadctl", var_root());
}

static char *journal_path(void)
{
	char *d = state_dir(), *p = xsprintf("%s/apply-journal", d);

	free(d);
	return p;
}

/*
 * The journal of the apply that runs us, or -1: the descriptor named in
 * AHEADCTL_UNDO_FD must be open for appending on the journal file of our
 * state directory (the same device and inode), so that a stray variable
 * cannot make us write into another descriptor.
 */
static int journal_fd(void)
{
	static int fd = -2;
	struct stat a, b;
	const char *v;
	char *end, *p;
	long n;
	int fl;

	if (fd != -2)
		return fd;
	fd = -1;
	v = getenv(JOURNAL_ENV);
	if (!v || !*v)
		return fd;
	n = strtol(v, &end, 10);
	if (*end || n < 3 || n > 65535 || fstat(n, &a) || !S_ISREG(a.st_mode))
		return fd;
	fl = fcntl(n, F_GETFL);
	if (fl < 0 || !(fl & O_APPEND) || (fl & O_ACCMODE) == O_RDONLY)
		return fd;
	p = journal_path();
	if (!stat(p, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		fd = n;
	free(p);
	return fd;
}

static json_t *undo_json(const struct undo *u)
{
	return json_pack("{s:s, s:s?, s:s, s:b}", "path", u->path, "old", u->old,
			 "what", u->what, "file", u->file);
}

/* One line to the journal, on disk when this returns; 0 or -1 (errno). */
static int journal_line(int fd, json_t *j)
{
	char *line = json_dumps(j, JSON_COMPACT);
	char *nl = xsprintf("%s\n", line ? line : "{}");
	ssize_t len = strlen(nl), w;
	int rc = 0;

	/* One write per record: the offset is shared with apply and its other children. */
	while ((w = write(fd, nl, len)) < 0 && errno == EINTR)
		;
	if (w != len) {
		if (w >= 0)
			errno = ENOSPC;
		rc = -1;
	} else if (fdatasync(fd)) {
		rc = -1;
	}
	free(nl);
	free(line);
	return rc;
}

/*
 * Before a write replaces old at path: written to apply's journal when
 * apply runs us (on disk before the value changes, so that a kill of
 * apply loses no record), then kept in l (NULL: not kept) for the verb's
 * own rollback.  0, or -1 after a message: the value must not be written.
 */
int undo_note(struct undo_log *l, const char *path, const char *old, const char *what,
	      bool file)
{
	struct undo u = { (char *)path, (char *)old, (char *)what, file };
	int fd = journal_fd();

	if (fd >= 0) {
		json_t *j = undo_json(&u);
		int r = journal_line(fd, j);

		json_decref(j);
		if (r) {
			char *jp = journal_path();

			err("cannot record %s (%s) for revert in %s: %s: not changing it",
			    what, path, jp, strerror(errno));
			free(jp);
			return -1;
		}
	}
	if (l)
		undo_add(l, path, old, what, file);
	return 0;
}

/* The last value noted was not written after all (the write was refused). */
void undo_unnote(struct undo_log *l)
{
	struct undo *u;

	if (!l || !l->n)
		return;
	u = &l->u[--l->n];
	free(u->path);
	free(u->old);
	free(u->what);
}

/* Puts back one value: 0 or -errno. */
static int undo_put(const struct undo *u)
{
	char *text;
	int r;

	if (!u->file)
		return write_file(u->path, u->old);
	if (!u->old)
		return unlink(u->path) && errno != ENOENT ? -errno : 0;
	/* read_file() dropped the final newline. */
	text = xsprintf("%s\n", u->old);
	r = write_atomic(u->path, text, 0755, NULL) ? -errno : 0;
	free(text);
	return r;
}

/* A failed verb: what it changed, put back newest first, each said on stderr. */
void undo_rollback(struct undo_log *l)
{
	for (int i = l->n - 1; i >= 0; i--) {
		const struct undo *u = &l->u[i];

		if (undo_put(u))
			warnx("could not restore %s (%s) to %s", u->what, u->path,
			      u->old ? u->old : "its absence");
		else if (!u->old)
			fprintf(stderr, "aheadctl: removed %s (%s): it did not exist before\n",
				u->what, u->path);
		else
			fprintf(stderr, "aheadctl: restored %s to %s\n", u->what, u->old);
	}
	l->n = 0;
}

/* ---- the state apply records and revert reads ---- */

struct state {
	char *dir, *path, *jpath;
	int dirfd;		/* locked: apply and revert take turns */
	char *boot_id;		/* of the boot that recorded the values */
	char *config;
	struct undo_log *log;
	int journal;		/* apply: the journal file its children append to */
	bool leftover;		/* a journal an interrupted apply left was merged */
};

static char *this_boot(void)
{
	char *p = xsprintf("%s/sys/kernel/random/boot_id", proc_root());
	char *b = read_file(p);

	free(p);
	return b ? b : xstrdup("");
}

/* mkdir -p, the last component 0700; 0 or -1 after a message. */
static int make_dir(const char *dir, const char *verb)
{
	char *p = xstrdup(dir);
	int rc = 0;

	for (char *s = p + 1; ; s++) {
		bool last = !*s;

		if (*s && *s != '/')
			continue;
		*s = 0;
		if (mkdir(p, last ? 0700 : 0755) && errno != EEXIST) {
			err("cannot create %s: %s%s", p, strerror(errno),
			    errno == EACCES || errno == EROFS ?
			    xsprintf(" (%s records what it changes there)", verb) : "");
			rc = -1;
			break;
		}
		if (last)
			break;
		*s = '/';
	}
	free(p);
	return rc;
}

static void state_free(struct state *st)
{
	if (!st)
		return;
	if (st->dirfd >= 0)
		close(st->dirfd);
	if (st->journal >= 0)
		close(st->journal);
	free(st->dir);
	free(st->path);
	free(st->jpath);
	free(st->boot_id);
	free(st->config);
	undo_free(st->log);
	free(st);
}

/* Entries of a JSON array into l; -1 when one is not an entry. */
static int entries_of(json_t *arr, struct undo_log *l)
{
	json_t *e;
	size_t i;

	if (!json_is_array(arr))
		return -1;
	json_array_foreach(arr, i, e) {
		const char *path = json_string_value(json_object_get(e, "path"));
		const char *what = json_string_value(json_object_get(e, "what"));
		json_t *old = json_object_get(e, "old");

		if (!path || !what || (old && !json_is_string(old) && !json_is_null(old)))
			return -1;
		undo_add(l, path, json_string_value(old), what,
			 json_is_true(json_object_get(e, "file")));
	}
	return 0;
}

/*
 * Locks the state directory and reads the state, if any (st->log empty
 * otherwise).  create: make the directory (apply).  NULL after a message.
 */
static struct state *state_open(bool create, const char *verb)
{
	struct state *st = xcalloc(1, sizeof(*st));
	json_error_t je;
	json_t *j;
	char *text;

	st->dirfd = st->journal = -1;
	st->dir = state_dir();
	st->path = xsprintf("%s/apply-state.json", st->dir);
	st->jpath = journal_path();
	st->log = undo_new();
	if (create && make_dir(st->dir, verb))
		goto fail;
	st->dirfd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->dirfd < 0) {
		if (errno == ENOENT && !create)
			return st;
		err("cannot open %s: %s", st->dir, strerror(errno));
		goto fail;
	}
	if (check_trusted(st->dir, "state directory"))
		goto fail;
	flock(st->dirfd, LOCK_EX);
	if (access(st->path, F_OK))
		return st;
	if (check_trusted(st->path, "state"))
		goto fail;
	text = read_file(st->path);
	if (!text) {
		err("%s: %s", st->path, strerror(errno));
		goto fail;
	}
	j = json_loads(text, 0, &je);
	free(text);
	if (!j) {
		err("%s:%d: not JSON (%s): move it away to start a new record", st->path,
		    je.line, je.text);
		goto fail;
	}
	if (strcmp(json_string_value(json_object_get(j, "format")) ?: "", STATE_FORMAT) ||
	    json_integer_value(json_object_get(j, "version")) != STATE_VERSION ||
	    entries_of(json_object_get(j, "entries"), st->log)) {
		err("%s: not an aheadctl apply state of version %d: move it away to start a new record",
		    st->path, STATE_VERSION);
		json_decref(j);
		goto fail;
	}
	st->boot_id = xstrdup(json_string_value(json_object_get(j, "boot_id")) ?: "");
	st->config = xstrdup(json_string_value(json_object_get(j, "config")) ?: "");
	json_decref(j);
	return st;
fail:
	state_free(st);
	return NULL;
}

/* Writes the state (mode 0600, atomically), or removes it when empty; 0 or -1. */
static int state_write(struct state *st)
{
	json_t *arr = json_array(), *j;
	char *text, *failed;
	int rc = 0;

	if (!st->log->n) {
		if (unlink(st->path) && errno != ENOENT) {
			err("cannot remove %s: %s", st->path, strerror(errno));
			rc = -1;
		}
		json_decref(arr);
		return rc;
	}
	for (int i = 0; i < st->log->n; i++)
		json_array_append_new(arr, undo_json(&st->log->u[i]));
	j = json_pack("{s:s, s:i, s:s, s:s, s:o}", "format", STATE_FORMAT, "version",
		      STATE_VERSION, "boot_id", st->boot_id ? st->boot_id : "", "config",
		      st->config ? st->config : "", "entries", arr);
	text = json_dumps(j, JSON_INDENT(1));
	json_decref(j);
	if (!text || write_atomic(st->path, text, 0600, &failed)) {
		err("cannot write %s: %s", text ? failed : st->path, strerror(errno));
		rc = -1;
	}
	free(text);
	return rc;
}

/* The values of an earlier boot: sysfs and procfs were reset by the reboot. */
static int drop_other_boot(struct state *st, const char *boot)
{
	int kept = 0, n = st->log->n;

	if (!st->boot_id || !strcmp(st->boot_id, boot))
		return 0;
	for (int i = 0; i < n; i++) {
		struct undo *u = &st->log->u[i];

		if (u->file) {
			st->log->u[kept++] = *u;
			continue;
		}
		free(u->path);
		free(u->old);
		free(u->what);
	}
	st->log->n = kept;
	return n - kept;
}

/* The directory's entries (a new or removed journal) on disk; 0 or -1 (errno). */
static int sync_state_dir(const struct state *st)
{
	return st->dirfd >= 0 ? fsync(st->dirfd) : 0;
}

/* A value already recorded keeps its first old value: *added counts the new ones. */
static void merge_one(struct state *st, const struct undo *u, int *added)
{
	for (int i = 0; i < st->log->n; i++)
		if (!strcmp(st->log->u[i].path, u->path))
			return;
	undo_add(st->log, u->path, u->old, u->what, u->file);
	(*added)++;
}

/*
 * The journal file, if there is one, merged into the state: apply's own at
 * its end, or one an apply left when it was killed.  Values of another boot
 * than boot are dropped as drop_other_boot() drops them.  0 (*added: values
 * new to the state), or -1 after a message.
 */
static int journal_merge(struct state *st, const char *boot, int *added)
{
	char *text, *line, *save = NULL;
	const char *jboot = NULL;
	json_t *head = NULL;
	bool first = true;

	*added = 0;
	if (access(st->jpath, F_OK))
		return 0;
	if (check_trusted(st->jpath, "journal"))
		return -1;
	text = read_file(st->jpath);
	if (!text) {
		err("cannot read the journal of what apply replaced, %s: %s", st->jpath,
		    strerror(errno));
		return -1;
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *j = json_loads(line, 0, NULL), *arr;
		struct undo_log *one;

		if (first) {
			first = false;
			if (!strcmp(json_string_value(json_object_get(j, "format")) ?: "",
				    JOURNAL_FORMAT)) {
				head = j;
				jboot = json_string_value(json_object_get(head, "boot_id"));
				continue;
			}
			warnx("%s has no header: its values are taken as of an earlier boot",
			      st->jpath);
		}
		one = undo_new();
		arr = json_array();
		json_array_append(arr, j);
		if (!j || entries_of(arr, one) || !one->n)
			warnx("the journal of what apply replaced has a bad line: ignored");
		else if (one->u[0].file || (jboot && !strcmp(jboot, boot)))
			merge_one(st, &one->u[0], added);
		json_decref(arr);
		json_decref(j);
		undo_free(one);
	}
	json_decref(head);
	free(text);
	st->leftover = true;
	return 0;
}

/* The journal merged and written into the state: removed; 0 or -1 after a message. */
static int journal_remove(struct state *st)
{
	if (unlink(st->jpath) && errno != ENOENT) {
		err("cannot remove %s: %s", st->jpath, strerror(errno));
		return -1;
	}
	sync_state_dir(st);
	return 0;
}

/*
 * A new journal, its header on disk: the proof that the state directory
 * takes a write before apply changes anything.  0 or -1 after a message.
 */
static int journal_create(struct state *st)
{
	json_t *head;
	int r;

	/* Not O_CLOEXEC: apply's children (the verbs it runs) append to it. */
	st->journal = open(st->jpath, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	if (st->journal < 0) {
		err("cannot create %s: %s: apply would change values it could not record for revert",
		    st->jpath, strerror(errno));
		return -1;
	}
	head = json_pack("{s:s, s:s, s:s}", "format", JOURNAL_FORMAT, "boot_id",
			 st->boot_id ? st->boot_id : "", "config", st->config ? st->config : "");
	r = journal_line(st->journal, head) || sync_state_dir(st);
	json_decref(head);
	if (r) {
		err("cannot write %s: %s: apply would change values it could not record for revert",
		    st->jpath, strerror(errno));
		close(st->journal);
		st->journal = -1;
		unlink(st->jpath);
		return -1;
	}
	return 0;
}

/*
 * apply, before its first write: the state locked and checked, a journal
 * an interrupted apply left merged into it (and the state written), and a
 * journal file its children (and it) note each replaced value in, one
 * synced line each.  NULL after a message: apply then writes nothing.
 */
struct state *undo_begin(const char *config)
{
	struct state *st = state_open(true, "apply");
	char *fd, *boot;
	int added;

	if (!st)
		return NULL;
	boot = this_boot();
	drop_other_boot(st, boot);
	free(st->boot_id);
	st->boot_id = boot;
	if (journal_merge(st, boot, &added)) {
		state_free(st);
		return NULL;
	}
	if (st->leftover) {
		if (state_write(st) || journal_remove(st)) {
			state_free(st);
			return NULL;
		}
		if (added)
			warnx("%d values an interrupted apply replaced, left in its journal, are now recorded in %s",
			      added, st->path);
	}
	free(st->config);
	st->config = xstrdup(config);
	if (journal_create(st)) {
		state_free(st);
		return NULL;
	}
	fd = xsprintf("%d", st->journal);
	setenv(JOURNAL_ENV, fd, 1);
	free(fd);
	return st;
}

/*
 * apply, at the end (or when a signal stops it): the journal merged into
 * the state, then removed.  A value already recorded keeps its first old
 * value, the one before any apply.  Returns the number of values revert
 * would put back, or -1 after a message (the journal then stays, for the
 * next apply or revert to merge).
 */
int undo_end(struct state *st, int *added)
{
	int rc;

	*added = 0;
	unsetenv(JOURNAL_ENV);
	if (st->journal >= 0) {
		close(st->journal);
		st->journal = -1;
	}
	if (journal_merge(st, st->boot_id ? st->boot_id : "", added)) {
		state_free(st);
		return -1;
	}
	if (state_write(st)) {
		err("the values apply replaced stay in %s: the next apply, or revert, records them",
		    st->jpath);
		state_free(st);
		return -1;
	}
	rc = journal_remove(st) ? -1 : st->log->n;
	state_free(st);
	return rc;
}

char *undo_state_path(void)
{
	char *d = state_dir(), *p = xsprintf("%s/apply-state.json", d);

	free(d);
	return p;
}

/* ---- revert ---- */

static bool under(const char *path, const char *root)
{
	size_t n = strlen(root);

	return !strncmp(path, root, n) && path[n] == '/';
}

/* Only what apply writes: a sysfs or procfs value, or our policy script. */
static bool revertible(const struct undo *u)
{
	char *policy = xsprintf("%s/aheadctl/irqbalance-policy.sh", etc_root());
	bool ok = !strstr(u->path, "/../") &&
		(u->file ? !strcmp(u->path, policy) :
		 under(u->path, sysfs_root()) || under(u->path, proc_root()));

	free(policy);
	return ok;
}

/* One value, newest first: "restored", "unchanged", "gone" or "failed". */
static const char *revert_one(const struct undo *u, char **now, char **why)
{
	int r;

	*why = NULL;
	*now = read_file(u->path);
	if (!revertible(u)) {
		*why = xsprintf("%s is not a file apply writes: left alone", u->path);
		return "failed";
	}
	if (!*now && errno == ENOENT && !u->file) {
		*why = xsprintf("%s no longer exists (the device is gone)", u->path);
		return "gone";
	}
	if ((!*now && !u->old) || (*now && u->old && !strcmp(*now, u->old)))
		return "unchanged";
	if (g.dry_run)
		return "would restore";
	r = undo_put(u);
	if (r) {
		*why = xsprintf("%s: %s", u->path, strerror(-r));
		return "failed";
	}
	return "restored";
}

static int revert_usage(void)
{
	err("usage: aheadctl [-n] [-j] revert");
	return EXIT_USAGE;
}

int cmd_revert(int argc, char **argv)
{
	struct state *st;
	struct undo_log *left;
	char *boot;
	int dropped, nrest = 0, failed = 0, merged = 0;

	(void)argv;
	if (argc)
		return revert_usage();
	st = state_open(false, "revert");
	if (!st)
		return EXIT_FAILED;
	boot = this_boot();
	dropped = drop_other_boot(st, boot);
	/* What an apply that was killed changed is in its journal. */
	if (journal_merge(st, boot, &merged)) {
		free(boot);
		state_free(st);
		return EXIT_FAILED;
	}
	/* What is left is this boot's: written back under its id. */
	free(st->boot_id);
	st->boot_id = xstrdup(boot);
	if (!st->log->n) {
		err("nothing to revert: %s %s", st->path, dropped ?
		    "holds only values of an earlier boot, which the reboot reset" :
		    "does not exist (no apply recorded anything since the last revert)");
		if ((dropped || st->leftover) && !g.dry_run && !state_write(st) && st->leftover)
			journal_remove(st);
		free(boot);
		state_free(st);
		return EXIT_FAILED;
	}
	if (g.json) {
		jopen('{');
		jstr("state", st->path);
		jstr("config", st->config);
		jbool("applied", !g.dry_run);
		jint("earlier_boot_dropped", dropped);
		jint("from_journal", merged);
		jkey("values");
		jopen('[');
	} else {
		if (dropped)
			printf("%d values recorded in an earlier boot were reset by the reboot: not restored\n",
			       dropped);
		if (merged)
			printf("%d values from %s, the journal of an apply that was stopped, included\n",
			       merged, st->jpath);
	}
	left = undo_new();
	for (int i = st->log->n - 1; i >= 0; i--) {
		const struct undo *u = &st->log->u[i];
		char *now, *why;
		const char *what = revert_one(u, &now, &why);

		if (!strcmp(what, "failed")) {
			failed++;
			err("revert: %s: %s", u->what, why);
			undo_add(left, u->path, u->old, u->what, u->file);
		} else {
			nrest += !strcmp(what, "restored") || !strcmp(what, "would restore");
		}
		if (g.json) {
			jopen('{');
			jstr("what", u->what);
			jstr("path", u->path);
			jstr("now", now);
			jstr("old", u->old);
			jstr("status", what);
			jstr("reason", why);
			jclose();
		} else if (why) {
			printf("%s %s: %s\n", what, u->what, why);
		} else if (!strcmp(what, "unchanged")) {
			printf("unchanged %s: %s, as before apply\n", u->what,
			       u->old ? u->old : "absent");
		} else if (!u->old) {
			printf("%s %s: %s (it did not exist before apply)\n", what, u->what,
			       g.dry_run ? "would remove it" : "removed");
		} else {
			printf("%s %s: %s -> %s\n", what, u->what, now ? now : "?", u->old);
		}
		free(now);
		free(why);
	}
	/* Only what could not be put back stays recorded, for another try. */
	if (!g.dry_run) {
		for (int k = 0; k < left->n / 2; k++) {
			struct undo t = left->u[k];

			left->u[k] = left->u[left->n - 1 - k];
			left->u[left->n - 1 - k] = t;
		}
		undo_free(st->log);
		st->log = left;
		left = NULL;
		if (state_write(st))
			failed++;
		else if (st->leftover && journal_remove(st))
			failed++;
	}
	undo_free(left);
	if (g.json) {
		jclose();
		jint("restored", nrest);
		jint("failed", failed);
		jclose();
		jend();
	} else {
		printf("%s%d restored, %d failed%s\n", g.dry_run ? "dry run: " : "", nrest,
		       failed, failed ? ": run aheadctl revert again once fixed" : "");
	}
	free(boot);
	state_free(st);
	return failed ? EXIT_FAILED : 0;
}
