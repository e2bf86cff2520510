// SPDX-License-Identifier: GPL-2.0
/*
 * A bounded concurrency stressor for aheadfs's dentry paths, RCU walk and
 * revalidation above all: in one mount, readers look up, stat, lstat,
 * open, access and list a small set of names a few levels deep while
 * writers create, remove, mkdir, rmdir, rename (over existing names,
 * RENAME_EXCHANGE, RENAME_NOREPLACE) and recreate them, some through the
 * mount and one directly in the lower behind the mount's back, and one
 * thread drops the dentry and inode caches in a loop.
 *
 * It asserts that no operation failed with an errno outside the ones its
 * races explain (ESTALE is retried), that every thread made progress, that
 * a walk of the mount then matches a walk of the lower (names, types and
 * inode numbers), and that the kernel logged no warning, BUG, oops, RCU
 * splat or use-after-free meanwhile.
 *
 * Bounded by AHEADFS_RCU_STRESS_SECONDS (default 20, at most 300) and by
 * AHEADFS_RCU_STRESS_OPS operations per thread (default 1000000).  On
 * Linux before 6.8 the lower writer creates by rename, around a bug of the
 * dentry cache's shrinker (lower_create()), and the readers walk from "/"
 * only; AHEADFS_RCU_STRESS_DIRECT=1 makes it create directly there too,
 * with half the readers' walks from the mount, which shows that bug.
 * Elsewhere half the readers' walks start at the mount (RCU mode in a
 * guest whose root is 9p), half at "/" (ref-walk there).
 *
 * Names keep a type so that no rename can be asked to move a directory
 * under itself (EINVAL): dN are directories (renamed only within their
 * parent), fN are regular files (renamed and exchanged across
 * directories), xN are either, an empty-ish leaf flipped between a file
 * and a directory (renamed only within its parent, to another xN).
 *
 * guest-run: fstypes=ext4 (its subject is aheadfs's dentry paths and RCU
 * walk, the VFS's and aheadfs's own caches over any lower)
 */
#include "aheadfs_test.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#define N_READERS	3
#define N_UP_WRITERS	2
#define N_LOW_WRITERS	1
#define N_WORKERS	(N_READERS + N_UP_WRITERS + N_LOW_WRITERS + 1)
#define ESTALE_TRIES	8
#define MAX_FAILS	16
#define FAIL_LEN	(PATH_MAX + 128)

enum kind { READER, UP_WRITER, LOW_WRITER, DROPPER };

static const char * const kind_name[] = {
	[READER] = "reader", [UP_WRITER] = "writer (aheadfs)",
	[LOW_WRITER] = "writer (lower)", [DROPPER] = "drop_caches",
};

struct stress;

struct worker {
	pthread_t tid;
	enum kind kind;
	int id;
	uint64_t rnd;
	const char *root;	/* the mount or the lower */
	int root_fd;		/* root, for walks that start there */
	unsigned long ops, ok, estale;
	unsigned long fresh;	/* the lower writer's fresh names so far */
	struct stress *st;
};

struct stress {
	char mnt[PATH_MAX];
	char lower[PATH_MAX];
	atomic_int stop;
	struct timespec deadline;
	unsigned long max_ops;
	bool create_by_rename;	/* see lower_create() */
	pthread_barrier_t start;
	pthread_mutex_t lock;
	unsigned long nfail;
	char fail[MAX_FAILS][FAIL_LEN];
	struct worker w[N_WORKERS];
};

/* errnos an operation may meet in these races, as a mask of 1 << errno */
#define E(x)		(1ULL << (x))
#define READ_ERRS	(E(ENOENT) | E(ENOTDIR))
#define WRITE_ERRS	(E(ENOENT) | E(ENOTDIR) | E(EISDIR) | E(EEXIST) | \
			 E(ENOTEMPTY) | E(EBUSY))

/* @expr again while it fails with ESTALE, a few times: its last result. */
#define RETRY_ESTALE(w, expr) ({					\
	long __r;							\
	int __n = 0;							\
	while ((__r = (expr)) < 0 && errno == ESTALE &&		\
	       ++__n < ESTALE_TRIES)					\
		(w)->estale++;						\
	__r;								\
})

static long env_long(const char *name, long def, long min, long max)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	v = strtol(s, &end, 0);
	if (*end || v < min)
		return def;
	return v > max ? max : v;
}

static uint64_t rnd(struct worker *w)
{
	/* xorshift64: per thread, no shared state */
	w->rnd ^= w->rnd << 13;
	w->rnd ^= w->rnd >> 7;
	w->rnd ^= w->rnd << 17;
	return w->rnd;
}

static unsigned int pick(struct worker *w, unsigned int n)
{
	return (unsigned int)(rnd(w) % n);
}

static int done(struct worker *w)
{
	struct stress *st = w->st;
	struct timespec now;

	if (atomic_load_explicit(&st->stop, memory_order_relaxed))
		return 1;
	if (w->ops >= st->max_ops)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec > st->deadline.tv_sec ||
	    (now.tv_sec == st->deadline.tv_sec &&
	     now.tv_nsec >= st->deadline.tv_nsec)) {
		atomic_store(&st->stop, 1);
		return 1;
	}
	return 0;
}

/*
 * Count an operation that returned @r (errno set when negative); one whose
 * errno is not in @allowed is recorded as a failure.
 */
static void account(struct worker *w, const char *op, const char *path,
		    long r, unsigned long long allowed)
{
	struct stress *st = w->st;
	int err = errno;

	w->ops++;
	if (r >= 0) {
		w->ok++;
		return;
	}
	if (err > 0 && err < 64 && (allowed & E(err)))
		return;
	pthread_mutex_lock(&st->lock);
	if (st->nfail < MAX_FAILS)
		snprintf(st->fail[st->nfail], FAIL_LEN, "%s %d: %s %s: %s%s",
			 kind_name[w->kind], w->id, op, path, strerror(err),
			 err == ESTALE ? " (after retries)" : "");
	st->nfail++;
	pthread_mutex_unlock(&st->lock);
}

/* A directory slot: the root, dN or dN/dN. */
static void dir_slot(struct worker *w, char *buf, size_t len)
{
	switch (pick(w, 3)) {
	case 0:
		ahfs_fmt(buf, len, "%s", w->root);
		break;
	case 1:
		ahfs_fmt(buf, len, "%s/d%u", w->root, pick(w, 2));
		break;
	default:
		ahfs_fmt(buf, len, "%s/d%u/d%u", w->root, pick(w, 2),
			 pick(w, 2));
		break;
	}
}

/* A directory for files: a slot, or an xN in it (a directory or not). */
static void file_dir(struct worker *w, char *buf, size_t len)
{
	dir_slot(w, buf, len);
	if (!pick(w, 4)) {
		size_t n = strlen(buf);

		ahfs_fmt(buf + n, len - n, "/x%u", pick(w, 2));
	}
}

static void child(char *buf, const char *dir, char type, unsigned int i)
{
	ahfs_fmt(buf, PATH_MAX, "%s/%c%u", dir, type, i);
}

/* Any name, of any type, one to four levels deep, mostly through dN. */
static void any_path(struct worker *w, char *buf)
{
	static const char types[] = "dfx";
	unsigned int depth = 1 + pick(w, 4), i;
	size_t n;

	ahfs_fmt(buf, PATH_MAX, "%s", w->root);
	for (i = 0; i < depth; i++) {
		char t = i + 1 < depth && pick(w, 10) < 7 ? 'd' :
			 types[pick(w, 3)];

		n = strlen(buf);
		ahfs_fmt(buf + n, PATH_MAX - n, "/%c%u", t, pick(w, 2));
	}
}

static long list_dir(int fd)
{
	char buf[4096];
	long n, total = 0;

	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		total += n;
	return n < 0 ? n : total;
}

static void reader_op(struct worker *w)
{
	char path[PATH_MAX], link[64], target[PATH_MAX];
	const char *name = path;
	int at = AT_FDCWD;
	struct stat s;
	char c;
	long r;
	int fd, n;

	any_path(w, path);
	/*
	 * Half the walks start at the mount (a directory fd) and half at
	 * "/": a guest whose root is 9p or virtiofs sends every walk from
	 * "/" to ref mode at its first name (their d_revalidate refuses RCU
	 * walk), so only the first half walks aheadfs in RCU mode, as every
	 * walk does on a storage node's local root filesystem.  Not on a
	 * kernel with the shrinker's bug (lower_create()): there the faster
	 * readers' lookups put the lower's negative dentries through that
	 * race often enough to hit it in one run of four.
	 */
	if (!w->st->create_by_rename && pick(w, 2)) {
		at = w->root_fd;
		name = path + strlen(w->root) + 1;
	}
	switch (pick(w, 7)) {
	case 0:
		r = RETRY_ESTALE(w, fstatat(at, name, &s, 0));
		account(w, "stat", path, r, READ_ERRS);
		break;
	case 1:
		r = RETRY_ESTALE(w, fstatat(at, name, &s, AT_SYMLINK_NOFOLLOW));
		account(w, "lstat", path, r, READ_ERRS);
		break;
	case 2:
		r = fd = RETRY_ESTALE(w, openat(at, name, O_RDONLY));
		account(w, "open", path, r, READ_ERRS);
		if (fd < 0)
			break;
		if (!fstat(fd, &s) && S_ISREG(s.st_mode)) {
			r = RETRY_ESTALE(w, read(fd, &c, 1));
			account(w, "read", path, r, 0);
		}
		close(fd);
		break;
	case 3:
		r = RETRY_ESTALE(w, faccessat(at, name, pick(w, 2) ?
					      F_OK : R_OK | X_OK, 0));
		/* R_OK | X_OK of a file with mode 0644 is EACCES. */
		account(w, "access", path, r, READ_ERRS | E(EACCES));
		break;
	case 4:
		r = fd = RETRY_ESTALE(w, openat(at, name,
						O_RDONLY | O_DIRECTORY));
		account(w, "opendir", path, r, READ_ERRS);
		if (fd < 0)
			break;
		/* A directory removed since is listed as ENOENT. */
		r = RETRY_ESTALE(w, list_dir(fd));
		account(w, "getdents64", path, r, E(ENOENT));
		close(fd);
		break;
	case 5: {
		/* A walk from a directory fd, whose dentry may be dead. */
		char *slash = strrchr(path, '/');

		*slash = 0;
		r = fd = RETRY_ESTALE(w, open(path, O_PATH | O_DIRECTORY));
		account(w, "open O_PATH", path, r, READ_ERRS);
		*slash = '/';
		if (fd < 0)
			break;
		r = RETRY_ESTALE(w, fstatat(fd, slash + 1, &s,
					    AT_SYMLINK_NOFOLLOW));
		account(w, "fstatat", path, r, READ_ERRS);
		close(fd);
		break;
	}
	default:
		/* d_path of a dentry that may be renamed or removed. */
		r = fd = RETRY_ESTALE(w, open(path, O_PATH));
		account(w, "open O_PATH", path, r, READ_ERRS);
		if (fd < 0)
			break;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		/*
		 * procfs, not aheadfs: an RCU walk through /proc/<tgid> while
		 * drop_caches evicts that inode finds no task behind it, and
		 * proc_pid_permission() answers ESRCH where it could ask for
		 * a walk in ref mode.  A second walk looks the pid up anew.
		 */
		for (n = 0; n < ESTALE_TRIES; n++) {
			r = readlink(link, target, sizeof(target));
			if (r >= 0 || errno != ESRCH)
				break;
		}
		account(w, "readlink /proc/self/fd", path, r, 0);
		close(fd);
		break;
	}
}

static int make_file_at(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd < 0)
		return -1;
	if (write(fd, "aheadfs\n", 8) != 8) {
		int err = errno;

		close(fd);
		errno = err ? err : EIO;
		return -1;
	}
	return close(fd);
}

/*
 * Linux before 6.8 can unlock an i_lock it never took while it shrinks the
 * dentry cache: shrink_lock_dentry() looks at d_inode before it lets go of
 * the dentry to wait for its parent's d_lock, and not again after, so a
 * negative dentry on the shrink list that a create made positive meanwhile
 * (looked up, instantiated and put back to no reference) is killed as if
 * it had taken that inode's lock.  The shrinking CPU's preempt count goes
 * below zero: "BUG: scheduling while atomic" in the drop_caches thread.
 * The lower writer's creates make the lower's own negative dentries
 * positive, behind aheadfs and with no reference held past the call, so on
 * such a kernel it creates under a fresh name and renames that into place:
 * a rename leaves the target's negative dentry negative, and a fresh name
 * was never a negative dentry on a shrink list.  The names aheadfs makes
 * positive in the lower are pinned by aheadfs's dentry, so a shrinker that
 * meets one sees a reference and leaves it.  6.8 rewrote the locking for a
 * kill (lock_for_kill()): it looks at d_inode again after every wait.
 */
static bool kernel_before(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma < major || (ma == major && mi < minor);
}

/* A file (or, @dir, a directory) made at @path by worker @w. */
static int lower_create(struct worker *w, const char *path, bool dir)
{
	const char *slash = strrchr(path, '/');
	char parent[PATH_MAX], fresh[64];
	int dfd, r, err;

	if (!w->st->create_by_rename || w->kind != LOW_WRITER)
		return dir ? mkdir(path, 0755) : make_file_at(AT_FDCWD, path);
	ahfs_fmt(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
	dfd = open(parent, O_PATH | O_DIRECTORY);
	if (dfd < 0)
		return -1;
	/* Nobody else looks up a name beginning with a dot. */
	ahfs_fmt(fresh, sizeof(fresh), ".new.%d.%lu", w->id, w->fresh++);
	r = dir ? mkdirat(dfd, fresh, 0755) : make_file_at(dfd, fresh);
	if (!r) {
		r = renameat2(dfd, fresh, dfd, slash + 1, RENAME_NOREPLACE);
		err = errno;
		if (r)
			unlinkat(dfd, fresh, dir ? AT_REMOVEDIR : 0);
		errno = err;
	}
	err = errno;
	close(dfd);
	errno = err;
	return r;
}

static void writer_op(struct worker *w)
{
	char dir[PATH_MAX], dir2[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
	unsigned int i = pick(w, 2);
	long r;

	switch (pick(w, 9)) {
	case 0:		/* create a file, fN or xN */
		if (pick(w, 2)) {
			file_dir(w, dir, sizeof(dir));
			child(a, dir, 'f', i);
		} else {
			dir_slot(w, dir, sizeof(dir));
			child(a, dir, 'x', i);
		}
		r = RETRY_ESTALE(w, lower_create(w, a, false));
		account(w, "create", a, r, WRITE_ERRS);
		break;
	case 1:		/* unlink fN or xN */
		if (pick(w, 2)) {
			file_dir(w, dir, sizeof(dir));
			child(a, dir, 'f', i);
		} else {
			dir_slot(w, dir, sizeof(dir));
			child(a, dir, 'x', i);
		}
		r = RETRY_ESTALE(w, unlink(a));
		account(w, "unlink", a, r, WRITE_ERRS);
		break;
	case 2:		/* mkdir dN (two levels at most) or xN */
		dir_slot(w, dir, sizeof(dir));
		if (pick(w, 2) && strlen(dir) - strlen(w->root) < 6)
			child(a, dir, 'd', i);
		else
			child(a, dir, 'x', i);
		r = RETRY_ESTALE(w, lower_create(w, a, true));
		account(w, "mkdir", a, r, WRITE_ERRS);
		break;
	case 3:		/* rmdir dN or xN */
		dir_slot(w, dir, sizeof(dir));
		child(a, dir, pick(w, 3) ? 'x' : 'd', i);
		r = RETRY_ESTALE(w, rmdir(a));
		account(w, "rmdir", a, r, WRITE_ERRS);
		break;
	case 4:		/* a file to another directory, over what is there */
		file_dir(w, dir, sizeof(dir));
		file_dir(w, dir2, sizeof(dir2));
		child(a, dir, 'f', i);
		child(b, dir2, 'f', pick(w, 2));
		if (!strcmp(a, b))
			break;
		r = RETRY_ESTALE(w, rename(a, b));
		account(w, "rename", a, r, WRITE_ERRS);
		break;
	case 5:		/* a file to another directory, never over one */
		file_dir(w, dir, sizeof(dir));
		file_dir(w, dir2, sizeof(dir2));
		child(a, dir, 'f', i);
		child(b, dir2, 'f', pick(w, 2));
		if (!strcmp(a, b))
			break;
		r = RETRY_ESTALE(w, renameat2(AT_FDCWD, a, AT_FDCWD, b,
					      RENAME_NOREPLACE));
		account(w, "rename noreplace", a, r, WRITE_ERRS);
		break;
	case 6:		/* two files of two directories exchanged */
		file_dir(w, dir, sizeof(dir));
		file_dir(w, dir2, sizeof(dir2));
		child(a, dir, 'f', i);
		child(b, dir2, 'f', pick(w, 2));
		if (!strcmp(a, b))
			break;
		r = RETRY_ESTALE(w, renameat2(AT_FDCWD, a, AT_FDCWD, b,
					      RENAME_EXCHANGE));
		account(w, "rename exchange", a, r, WRITE_ERRS);
		break;
	case 7: {	/* dN or xN within its directory: moved or exchanged */
		char t = pick(w, 2) ? 'd' : 'x';

		dir_slot(w, dir, sizeof(dir));
		child(a, dir, t, i);
		child(b, dir, t, !i);
		if (pick(w, 2)) {
			r = RETRY_ESTALE(w, rename(a, b));
			account(w, "rename", a, r, WRITE_ERRS);
		} else {
			r = RETRY_ESTALE(w, renameat2(AT_FDCWD, a, AT_FDCWD, b,
						      RENAME_EXCHANGE));
			account(w, "rename exchange", a, r, WRITE_ERRS);
		}
		break;
	}
	default: {	/* rewrite a file in place */
		int fd;

		file_dir(w, dir, sizeof(dir));
		child(a, dir, 'f', i);
		r = fd = RETRY_ESTALE(w, open(a, O_WRONLY | O_TRUNC));
		account(w, "open O_TRUNC", a, r, WRITE_ERRS);
		if (fd >= 0) {
			r = write(fd, "again\n", 6);
			account(w, "write", a, r, 0);
			close(fd);
		}
		break;
	}
	}
}

static void dropper_op(struct worker *w)
{
	/* Pacing, so that the other threads get the CPUs; not a wait on them. */
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	int r;

	r = ahfs_write_file("/proc/sys/vm/drop_caches", "2\n");
	errno = -r;
	account(w, "drop_caches", "2", r, 0);
	nanosleep(&pause, NULL);
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;

	/*
	 * 4 stops the kernel logging a line for each drop, which would
	 * flood the log that this test and the runner read.
	 */
	if (w->kind == DROPPER) {
		int r = ahfs_write_file("/proc/sys/vm/drop_caches", "4\n");

		errno = -r;
		account(w, "drop_caches", "4", r, 0);
	}
	pthread_barrier_wait(&w->st->start);
	while (!done(w)) {
		switch (w->kind) {
		case READER:
			reader_op(w);
			break;
		case UP_WRITER:
		case LOW_WRITER:
			writer_op(w);
			break;
		case DROPPER:
			dropper_op(w);
			break;
		}
	}
	atomic_store(&w->st->stop, 1);
	return NULL;
}

/* The starting tree, in the lower: every dN, and fN and xN in each. */
static int populate(const char *lower)
{
	static const char * const dirs[] = {
		"", "/d0", "/d1", "/d0/d0", "/d0/d1", "/d1/d0", "/d1/d1",
	};
	char p[PATH_MAX];
	unsigned int i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (i && mkdir(ahfs_fmt(p, sizeof(p), "%s%s", lower, dirs[i]),
			       0755))
			return -errno;
		if (ahfs_make_file(ahfs_fmt(p, sizeof(p), "%s%s/f0", lower,
					    dirs[i]), 64) ||
		    ahfs_make_file(ahfs_fmt(p, sizeof(p), "%s%s/f1", lower,
					    dirs[i]), 64) ||
		    mkdir(ahfs_fmt(p, sizeof(p), "%s%s/x0", lower, dirs[i]),
			  0755) ||
		    ahfs_make_file(ahfs_fmt(p, sizeof(p), "%s%s/x0/f0", lower,
					    dirs[i]), 64) ||
		    ahfs_make_file(ahfs_fmt(p, sizeof(p), "%s%s/x1", lower,
					    dirs[i]), 64))
			return -EIO;
	}
	return 0;
}

struct entry {
	char path[PATH_MAX];
	char type;
	ino_t ino;
};

struct walk {
	struct entry *e;
	size_t n, cap;
	int err;
	char where[PATH_MAX + 64];
};

static void walk_fail(struct walk *wk, const char *what, const char *rel)
{
	if (!wk->err) {
		wk->err = errno ? errno : EIO;
		snprintf(wk->where, sizeof(wk->where), "%s %s", what, rel);
	}
}

static char type_of(mode_t m)
{
	return S_ISDIR(m) ? 'd' : S_ISREG(m) ? 'f' : '?';
}

/* Every name under @rel of @root, with its type and inode number. */
static void walk_tree(struct walk *wk, int root, const char *rel)
{
	char sub[PATH_MAX];
	struct dirent *de;
	struct stat s;
	DIR *d;
	int fd;

	fd = openat(root, rel, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || !(d = fdopendir(fd))) {
		walk_fail(wk, "open", rel);
		if (fd >= 0)
			close(fd);
		return;
	}
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ahfs_fmt(sub, sizeof(sub), "%s/%s", rel, de->d_name);
		if (fstatat(root, sub, &s, AT_SYMLINK_NOFOLLOW)) {
			walk_fail(wk, "lstat", sub);
			continue;
		}
		if (wk->n == wk->cap) {
			struct entry *e;

			wk->cap = wk->cap ? 2 * wk->cap : 256;
			e = realloc(wk->e, wk->cap * sizeof(*e));
			if (!e) {
				walk_fail(wk, "realloc", sub);
				break;
			}
			wk->e = e;
		}
		ahfs_fmt(wk->e[wk->n].path, PATH_MAX, "%s", sub);
		wk->e[wk->n].type = type_of(s.st_mode);
		wk->e[wk->n].ino = s.st_ino;
		wk->n++;
		if (S_ISDIR(s.st_mode))
			walk_tree(wk, root, sub);
		errno = 0;
	}
	if (errno)
		walk_fail(wk, "readdir", rel);
	closedir(d);
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->path,
		      ((const struct entry *)b)->path);
}

static int walk(const char *top, struct walk *wk)
{
	int root = open(top, O_RDONLY | O_DIRECTORY);

	memset(wk, 0, sizeof(*wk));
	if (root < 0) {
		walk_fail(wk, "open", top);
		return -wk->err;
	}
	walk_tree(wk, root, ".");
	close(root);
	qsort(wk->e, wk->n, sizeof(*wk->e), entry_cmp);
	return -wk->err;
}

/*
 * Kernel log lines that show a kernel bug, logged since @fd was opened at
 * the end of the log: their count, the first KMSG_KEEP of them in @out.
 */
#define KMSG_KEEP	20
#define KMSG_LEN	512

static const char * const kmsg_bad[] = {
	"WARNING:", "BUG:", "BUG ", "Oops", "RCU", "rcu: INFO",
	"detected stall", "use-after-free", "general protection",
	"KASAN", "UBSAN", "refcount_t", "list_add corruption",
	"list_del corruption", "possible circular locking",
	"possible recursive locking", "inconsistent lock state",
	"soft lockup", "blocked for more than", "Kernel panic",
};

static int kmsg_scan(int fd, char out[KMSG_KEEP][KMSG_LEN])
{
	char rec[8192];
	int found = 0;
	unsigned int i;
	ssize_t n;

	for (;;) {
		char *msg, *nl;

		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* records overwritten: go on */
		if (n <= 0)
			break;
		rec[n] = 0;
		/* "prio,seq,usec,flags;message\n" then " KEY=value" lines */
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		nl = strchr(msg, '\n');
		if (nl)
			*nl = 0;
		/* Markers the guest runner logs on purpose. */
		if (strstr(msg, "aheadfs-guest-run:") ||
		    strstr(msg, "aheadfs-selftest:"))
			continue;
		for (i = 0; i < sizeof(kmsg_bad) / sizeof(kmsg_bad[0]); i++)
			if (strstr(msg, kmsg_bad[i]))
				break;
		if (i == sizeof(kmsg_bad) / sizeof(kmsg_bad[0]))
			continue;
		if (found < KMSG_KEEP)
			snprintf(out[found], KMSG_LEN, "%.500s", msg);
		found++;
	}
	return found;
}

FIXTURE(rcu) {
	struct ahfs fs;
	int kmsg;
};

FIXTURE_SETUP(rcu)
{
	self->kmsg = -1;
	ASSERT_EQ(0, ahfs_setup(&self->fs, "rcu", NULL));
	ASSERT_EQ(0, populate(self->fs.lower));
	ASSERT_EQ(0, ahfs_mount_at(self->fs.lower, self->fs.mnt, ""));
	self->fs.mounted = 1;
	self->kmsg = ahfs_kmsg_open();
	ASSERT_LE(0, self->kmsg) TH_LOG("/dev/kmsg: %s", strerror(errno));
}

FIXTURE_TEARDOWN(rcu)
{
	if (self->kmsg >= 0)
		close(self->kmsg);
	ahfs_teardown(&self->fs);
}

/* Up to 300 s of stress, a walk, the log: well inside guest-run's 600 s. */
TEST_F_TIMEOUT(rcu, lookups_race_namespace_changes_and_cache_drops, 450)
{
	static struct stress st;
	static char bad[KMSG_KEEP][KMSG_LEN];
	struct walk up, low;
	unsigned long total = 0;
	size_t i, j;
	long secs;
	int k, nbad, diffs;

	memset(&st, 0, sizeof(st));
	ahfs_fmt(st.mnt, sizeof(st.mnt), "%s", self->fs.mnt);
	ahfs_fmt(st.lower, sizeof(st.lower), "%s", self->fs.lower);
	secs = env_long("AHEADFS_RCU_STRESS_SECONDS", 20, 1, 300);
	st.max_ops = env_long("AHEADFS_RCU_STRESS_OPS", 1000000, 1, LONG_MAX);
	st.create_by_rename = kernel_before(6, 8) &&
			      !env_long("AHEADFS_RCU_STRESS_DIRECT", 0, 0, 1);
	ASSERT_EQ(0, pthread_mutex_init(&st.lock, NULL));
	ASSERT_EQ(0, pthread_barrier_init(&st.start, NULL, N_WORKERS + 1));
	for (k = 0; k < N_WORKERS; k++) {
		struct worker *w = &st.w[k];

		w->st = &st;
		w->rnd = 0x9e3779b97f4a7c15ULL * (k + 1) ^ (uint64_t)getpid();
		if (k < N_READERS) {
			w->kind = READER;
			w->id = k;
		} else if (k < N_READERS + N_UP_WRITERS) {
			w->kind = UP_WRITER;
			w->id = k - N_READERS;
		} else if (k < N_WORKERS - 1) {
			w->kind = LOW_WRITER;
			w->id = k - N_READERS - N_UP_WRITERS;
		} else {
			w->kind = DROPPER;
		}
		w->root = w->kind == LOW_WRITER ? st.lower : st.mnt;
		w->root_fd = open(w->root, O_PATH | O_DIRECTORY);
		ASSERT_LE(0, w->root_fd);
		ASSERT_EQ(0, pthread_create(&w->tid, NULL, worker_fn, w));
	}
	TH_LOG("%ld s, at most %lu operations a thread, %d threads",
	       secs, st.max_ops, N_WORKERS);
	if (st.create_by_rename)
		TH_LOG("Linux before 6.8: the lower writer creates by rename and the readers walk from / (lower_create())");
	/* The clock starts when every thread is ready. */
	clock_gettime(CLOCK_MONOTONIC, &st.deadline);
	st.deadline.tv_sec += secs;
	pthread_barrier_wait(&st.start);
	for (k = 0; k < N_WORKERS; k++)
		pthread_join(st.w[k].tid, NULL);
	pthread_barrier_destroy(&st.start);
	for (k = 0; k < N_WORKERS; k++)
		close(st.w[k].root_fd);

	for (k = 0; k < N_WORKERS; k++) {
		struct worker *w = &st.w[k];

		TH_LOG("%s %d: %lu operations, %lu succeeded, %lu ESTALE retried",
		       kind_name[w->kind], w->id, w->ops, w->ok, w->estale);
		EXPECT_LT(0UL, w->ops) TH_LOG("%s %d made no progress",
					    kind_name[w->kind], w->id);
		total += w->ops;
	}
	TH_LOG("%lu operations in all", total);
	for (i = 0; i < st.nfail && i < MAX_FAILS; i++)
		TH_LOG("unexpected: %s", st.fail[i]);
	EXPECT_EQ(0UL, st.nfail);

	/* Whatever the races left, the mount shows the lower as it is. */
	EXPECT_EQ(0, walk(self->fs.mnt, &up)) TH_LOG("aheadfs walk: %s: %s",
						     up.where, strerror(up.err));
	ASSERT_EQ(0, walk(self->fs.lower, &low)) TH_LOG("lower walk: %s: %s",
						       low.where, strerror(low.err));
	TH_LOG("after the run: %zu names in the lower, %zu through aheadfs",
	       low.n, up.n);
	diffs = 0;
	for (i = j = 0; i < up.n || j < low.n;) {
		int c = i == up.n ? 1 : j == low.n ? -1 :
			strcmp(up.e[i].path, low.e[j].path);

		if (!c && up.e[i].type == low.e[j].type &&
		    up.e[i].ino == low.e[j].ino) {
			i++, j++;
			continue;
		}
		if (diffs++ < 10) {
			if (c < 0)
				TH_LOG("only through aheadfs: %s", up.e[i].path);
			else if (c > 0)
				TH_LOG("only in the lower: %s", low.e[j].path);
			else
				TH_LOG("%s: aheadfs %c ino %lu, lower %c ino %lu",
				       up.e[i].path, up.e[i].type,
				       (unsigned long)up.e[i].ino, low.e[j].type,
				       (unsigned long)low.e[j].ino);
		}
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
	EXPECT_EQ(0, diffs);
	free(up.e);
	free(low.e);

	nbad = kmsg_scan(self->kmsg, bad);
	for (k = 0; k < nbad && k < KMSG_KEEP; k++)
		TH_LOG("kernel: %s", bad[k]);
	EXPECT_EQ(0, nbad) TH_LOG("the kernel logged a bug during the run");
}

TEST_HARNESS_MAIN
