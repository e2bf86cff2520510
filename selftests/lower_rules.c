// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs keeps the lower's rules: what a read-only, frozen, noexec, nodev
 * or nosuid lower, or an immutable or append-only file, refuses or delays
 * is refused or delayed the same way through aheadfs (each claim is checked
 * on the lower directly too); an automount point is not stacked over;
 * locks taken through aheadfs and on the lower see each other, and a lease
 * on the lower is broken by an open through aheadfs; ACLs, idmapped
 * mounts, clones and RWF_NOWAIT behave as on the lower; changes made on the
 * lower are seen once the caches' timeouts run out; and what is removed
 * through aheadfs gives its space and inodes back to the lower at once.
 */
#include "aheadfs_test.h"

#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <time.h>

#include <linux/fiemap.h>
#include <linux/fs.h>

#include <libaio.h>
#include <liburing.h>

#ifndef FIFREEZE
#define FIFREEZE		_IOWR('X', 119, int)
#define FITHAW			_IOWR('X', 120, int)
#endif
#ifndef RWF_NOWAIT
#define RWF_NOWAIT		0x00000008
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP	0x00100000
struct mount_attr {
	unsigned long long attr_set;
	unsigned long long attr_clr;
	unsigned long long propagation;
	unsigned long long userns_fd;
};
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE		1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC	O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH	0x00000004
#endif
#ifndef SYS_open_tree
#define SYS_open_tree		428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount		429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr	442
#endif
#ifndef STATX_ATTR_AUTOMOUNT
#define STATX_ATTR_AUTOMOUNT	0x1000
#endif

#define NOBODY		65534
#define LR_MAX_MNTS	8
#define LR_MAX_KIDS	32
#define WAIT_MS		10000	/* bound of every wait for an observable state */

/*
 * The state every fixture shares: the scratch tree, the mounts made (each
 * unmounted in reverse order at teardown, whatever failed), the children
 * still running (killed and reaped first), and a frozen lower (thawed
 * before anything else).
 */
struct lr {
	struct ahfs fs;
	char mnts[LR_MAX_MNTS][PATH_MAX];
	int nmnts;
	pid_t kids[LR_MAX_KIDS];
	int nkids;
	int frozen_fd;		/* root of a frozen lower; 0: none */
	pid_t guard;		/* thaws the lower if the test dies */
	void *shared;		/* a page children report into */
	int kmsg;		/* /dev/kmsg from the test's start; 0: none */
	char dm[64];		/* a device-mapper device of ours */
	char loopdev[64];	/* the loop device under it */
	int suspended;		/* dm is suspended */
	pid_t nowait_pid;	/* the last read_nowait() child */
};

static char lr_why[PATH_MAX + 128];	/* what the last failed helper did */

static int fail(int err, const char *what, const char *path)
{
	snprintf(lr_why, sizeof(lr_why), "%s %s: %s", what, path,
		 strerror(-err));
	return err;
}

static char *at(char *buf, const char *root, const char *rel)
{
	return ahfs_fmt(buf, PATH_MAX, "%s/%s", root, rel);
}

static int lr_init(struct lr *x, const char *name, const char *opts)
{
	int err;

	x->shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (x->shared == MAP_FAILED) {
		x->shared = NULL;
		return fail(-errno, "mmap", "shared page");
	}
	x->kmsg = ahfs_kmsg_open();
	if (x->kmsg < 0)
		return fail(-errno, "open", "/dev/kmsg");
	err = ahfs_setup(&x->fs, name, opts);
	if (err)
		return fail(err, "ahfs_setup", name);
	/* Searchable by the unprivileged users some tests run as. */
	if (chmod(x->fs.base, 0755) || chmod(x->fs.lower, 0755))
		return fail(-errno, "chmod", x->fs.base);
	return 0;
}

/* mount(2), remembered for the teardown; 0 or -errno. */
static int lr_mount(struct lr *x, const char *src, const char *dst,
		    const char *type, unsigned long flags, const char *data)
{
	if (x->nmnts == LR_MAX_MNTS)
		return fail(-ENOSPC, "too many mounts at", dst);
	if (mount(src, dst, type, flags, data))
		return fail(-errno, type ? type : "bind mount at", dst);
	ahfs_fmt(x->mnts[x->nmnts++], PATH_MAX, "%s", dst);
	return 0;
}

static void lr_forget(struct lr *x, const char *path)
{
	int i;

	for (i = x->nmnts - 1; i >= 0; i--) {
		if (strcmp(x->mnts[i], path))
			continue;
		memmove(x->mnts[i], x->mnts[i + 1],
			(x->nmnts - i - 1) * sizeof(x->mnts[0]));
		x->nmnts--;
		return;
	}
}

/* A bind mount of @src at @dst, remounted with @flags (MS_RDONLY, ...). */
static int lr_bind(struct lr *x, const char *src, const char *dst,
		   unsigned long flags)
{
	int err;

	if (mkdir(dst, 0755) && errno != EEXIST)
		return fail(-errno, "mkdir", dst);
	err = lr_mount(x, src, dst, NULL, MS_BIND, NULL);
	if (err || !flags)
		return err;
	if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | flags, NULL))
		return fail(-errno, "remount,bind with flags", dst);
	return 0;
}

static int lr_aheadfs(struct lr *x, const char *lower, const char *mnt,
		      const char *opts)
{
	if (mkdir(mnt, 0755) && errno != EEXIST)
		return fail(-errno, "mkdir", mnt);
	return lr_mount(x, lower, mnt, "aheadfs", 0, opts);
}

static int lr_umount(struct lr *x, const char *path)
{
	if (umount(path))
		return -errno;
	lr_forget(x, path);
	return 0;
}

static void umount_hard(const char *path)
{
	if (umount(path) && errno != EINVAL && errno != ENOENT)
		umount2(path, MNT_DETACH);
}

/* Mounts under @base that are still there (automounts, say), deepest first. */
static void sweep_mounts(const char *base)
{
	char line[2 * PATH_MAX], mp[PATH_MAX], (*left)[PATH_MAX];
	size_t blen = strlen(base);
	int n = 0, i, j;
	FILE *f;

	left = calloc(64, PATH_MAX);
	f = fopen("/proc/self/mountinfo", "r");
	if (!left || !f)
		goto out;
	while (n < 64 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 &&
		    !strncmp(mp, base, blen) && mp[blen] == '/')
			strcpy(left[n++], mp);
	}
	for (i = 0; i < n; i++)		/* longest path first */
		for (j = i + 1; j < n; j++)
			if (strlen(left[j]) > strlen(left[i])) {
				strcpy(mp, left[i]);
				strcpy(left[i], left[j]);
				strcpy(left[j], mp);
			}
	for (i = 0; i < n; i++)
		umount_hard(left[i]);
out:
	if (f)
		fclose(f);
	free(left);
}

static pid_t lr_fork(struct lr *x)
{
	pid_t pid;

	if (x->nkids == LR_MAX_KIDS)
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid > 0)
		x->kids[x->nkids++] = pid;
	return pid;
}

/* Reap @pid within @ms: 0 and its status, or -ETIMEDOUT (still tracked). */
static int lr_wait(struct lr *x, pid_t pid, int ms, int *status)
{
	int i, st;

	for (i = 0; i <= ms / 10; i++) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid || (r < 0 && errno == ECHILD)) {
			int k;

			for (k = 0; k < x->nkids; k++)
				if (x->kids[k] == pid)
					x->kids[k] = x->kids[--x->nkids];
			if (status)
				*status = r == pid ? st : -1;
			return 0;
		}
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static int lr_thaw(struct lr *x)
{
	int err = 0;

	if (x->frozen_fd <= 0)
		return 0;
	if (ioctl(x->frozen_fd, FITHAW, 0))
		err = -errno;
	close(x->frozen_fd);
	x->frozen_fd = 0;
	return err;
}

/* Hold (suspend) or release (resume) the I/O of our dm device. */
static int lr_suspend(struct lr *x)
{
	if (ahfs_run("DM_DISABLE_UDEV=1 dmsetup suspend --nolockfs %s", x->dm))
		return -EIO;
	x->suspended = 1;
	return 0;
}

static int lr_resume(struct lr *x)
{
	if (!x->suspended)
		return 0;
	if (ahfs_run("DM_DISABLE_UDEV=1 dmsetup resume %s >/dev/null 2>&1",
		     x->dm))
		return -EIO;
	x->suspended = 0;
	return 0;
}

/*
 * A kernel warning, BUG or oops logged since the test started, so that the
 * test that caused it fails by name (the guest's own dmesg check only says
 * that one happened).
 */
static const char *kernel_complaint(int kmsg)
{
	static const char *const bad[] = {
		"WARNING:", "BUG:", "Oops", "general protection",
		"INFO: task", "lockdep", "circular locking",
	};
	static char rec[8192];
	unsigned int i;
	ssize_t n;

	for (;;) {
		n = read(kmsg, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;
		if (n <= 0)
			return NULL;
		rec[n] = 0;
		for (i = 0; i < ARRAY_SIZE(bad); i++)
			if (strstr(rec, bad[i]))
				return rec;
	}
}

static void lr_cleanup(struct __test_metadata *_metadata, struct lr *x)
{
	const char *complaint;
	int i;

	lr_thaw(x);
	lr_resume(x);
	for (i = 0; i < x->nkids; i++)
		kill(x->kids[i], SIGKILL);
	while (x->nkids)
		if (lr_wait(x, x->kids[0], WAIT_MS, NULL))
			break;
	if (x->guard > 0) {
		kill(x->guard, SIGKILL);
		waitpid(x->guard, NULL, 0);
		x->guard = 0;
	}
	for (i = x->nmnts - 1; i >= 0; i--)
		umount_hard(x->mnts[i]);
	x->nmnts = 0;
	if (x->fs.mounted)
		umount_hard(x->fs.mnt);
	x->fs.mounted = 0;
	if (x->fs.base[0])
		sweep_mounts(x->fs.base);
	if (x->dm[0])
		ahfs_run("DM_DISABLE_UDEV=1 dmsetup remove --retry %s >/dev/null 2>&1",
			 x->dm);
	x->dm[0] = 0;
	if (x->loopdev[0])
		ahfs_run("losetup -d %s", x->loopdev);
	x->loopdev[0] = 0;
	ahfs_teardown(&x->fs);
	if (x->shared)
		munmap(x->shared, 4096);
	x->shared = NULL;
	if (x->kmsg > 0) {
		/* Not EXPECT: after a failed ASSERT its handler would run. */
		complaint = kernel_complaint(x->kmsg);
		if (complaint) {
			TH_LOG("the kernel logged: %s", complaint);
			_metadata->passed = 0;
		}
		close(x->kmsg);
		x->kmsg = 0;
	}
}

/* Fixture set-up that cleans up what it made before it fails. */
#define LR_SETUP(x, prepare) do {					\
	int __err = (prepare);						\
									\
	if (__err) {							\
		TH_LOG("set-up: %s", lr_why);				\
		lr_cleanup(_metadata, x);				\
	}								\
	ASSERT_EQ(0, __err);						\
} while (0)

/* 0 or the errno of a call that returned -1. */
static int err_of(long ret)
{
	return ret < 0 ? errno : 0;
}

/* The state letter of @pid in /proc/PID/stat (R, S, D, Z...), 0 if gone. */
static char proc_state(pid_t pid)
{
	char path[64], buf[1024], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (ahfs_read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static const char *proc_wchan(pid_t pid)
{
	static char buf[128];
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/wchan", pid);
	if (ahfs_read_file(path, buf, sizeof(buf)) < 0)
		strcpy(buf, "?");
	return buf;
}

/* One byte from @fd within @ms, or -1. */
static int read_byte(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	unsigned char c;

	if (poll(&p, 1, ms) != 1 || read(fd, &c, 1) != 1)
		return -1;
	return c;
}

static void close_others(int keep1, int keep2)
{
	int fd;

	for (fd = 3; fd < 1024; fd++)
		if (fd != keep1 && fd != keep2)
			close(fd);
}

/* ------------------------------------------------------------------ */
/* Read-only lower                                                     */
/* ------------------------------------------------------------------ */

struct buf {
	char *p;
	size_t len, cap;
};

static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len)
			break;
		b->cap = b->cap * 2 + n + 4096;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	b->len += n;
}

static unsigned long long hash_bytes(const void *p, size_t n,
				     unsigned long long h)
{
	const unsigned char *c = p;

	while (n--)
		h = (h ^ *c++) * 1099511628211ULL;
	return h;
}

static unsigned long long hash_file(const char *path)
{
	unsigned long long h = 14695981039346656037ULL;
	char b[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOATIME);

	if (fd < 0)
		fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	while ((n = read(fd, b, sizeof(b))) > 0)
		h = hash_bytes(b, n, h);
	close(fd);
	return h;
}

/*
 * One line per entry under @dir: name, mode, owner, size, links, mtime,
 * ctime, content, symlink target, xattrs.  Any change a call makes to the
 * lower tree changes this text.
 */
static void snapshot(struct buf *b, const char *dir, const char *rel)
{
	struct dirent **names;
	char path[PATH_MAX], sub[PATH_MAX], list[4096], val[4096];
	int n, i;

	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		bprintf(b, "%s: scandir %d\n", rel, errno);
		return;
	}
	for (i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		struct stat st;
		ssize_t ln, vn, k;

		if (!strcmp(name, ".") || !strcmp(name, "..")) {
			free(names[i]);
			continue;
		}
		at(path, dir, name);
		ahfs_fmt(sub, sizeof(sub), "%s/%s", rel, name);
		if (lstat(path, &st)) {
			bprintf(b, "%s: lstat %d\n", sub, errno);
			free(names[i]);
			continue;
		}
		bprintf(b, "%s %o %u:%u %lld %lu m%lld.%09ld c%lld.%09ld", sub,
			st.st_mode, st.st_uid, st.st_gid, (long long)st.st_size,
			(unsigned long)st.st_nlink, (long long)st.st_mtim.tv_sec,
			st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
			st.st_ctim.tv_nsec);
		if (S_ISREG(st.st_mode))
			bprintf(b, " data=%llx", hash_file(path));
		if (S_ISLNK(st.st_mode)) {
			ln = readlink(path, val, sizeof(val) - 1);
			val[ln < 0 ? 0 : ln] = 0;
			bprintf(b, " -> %s", val);
		}
		ln = llistxattr(path, list, sizeof(list));
		for (k = 0; k < ln; k += strlen(list + k) + 1) {
			vn = lgetxattr(path, list + k, val, sizeof(val));
			bprintf(b, " %s=%llx", list + k, vn < 0 ? 0ULL :
				hash_bytes(val, vn, 14695981039346656037ULL));
		}
		bprintf(b, "\n");
		if (S_ISDIR(st.st_mode))
			snapshot(b, path, sub);
		free(names[i]);
	}
	free(names);
}

/* The first line where two snapshots differ, for the log. */
static const char *first_diff(const char *a, const char *b)
{
	static char out[1024];
	const char *la = a, *lb = b;

	while (*la && *lb) {
		size_t na = strcspn(la, "\n"), nb = strcspn(lb, "\n");

		if (na != nb || memcmp(la, lb, na))
			break;
		la += na + !!la[na];
		lb += nb + !!lb[nb];
	}
	snprintf(out, sizeof(out), "before: %.*s | after: %.*s",
		 (int)strcspn(la, "\n"), la, (int)strcspn(lb, "\n"), lb);
	return out;
}

/* A valid system.posix_acl_access value: u::rw-,u:1234:rw-,g::r--,m::rw-,o::r-- */
static const unsigned char acl_value[] = {
	2, 0, 0, 0,
	0x01, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
	0x02, 0, 6, 0, 0xd2, 0x04, 0, 0,
	0x04, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
	0x10, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
	0x20, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
};

/* Each operation on the tree under @r: 0 or errno. */
static int ro_create(const char *r)
{
	char p[PATH_MAX];
	int fd = open(at(p, r, "new"), O_WRONLY | O_CREAT | O_EXCL, 0644);

	return fd < 0 ? errno : (close(fd), 0);
}

static int ro_mkdir(const char *r)
{
	char p[PATH_MAX];

	return err_of(mkdir(at(p, r, "newdir"), 0755));
}

static int ro_mknod(const char *r)
{
	char p[PATH_MAX];

	return err_of(mknod(at(p, r, "fifo"), S_IFIFO | 0644, 0));
}

static int ro_symlink(const char *r)
{
	char p[PATH_MAX];

	return err_of(symlink("f", at(p, r, "sl")));
}

static int ro_link(const char *r)
{
	char p[PATH_MAX], q[PATH_MAX];

	return err_of(link(at(p, r, "f"), at(q, r, "f.link")));
}

static int ro_chmod(const char *r)
{
	char p[PATH_MAX];

	return err_of(chmod(at(p, r, "f"), 0600));
}

static int ro_chown(const char *r)
{
	char p[PATH_MAX];

	return err_of(chown(at(p, r, "f"), 1234, 1234));
}

static int ro_utimes(const char *r)
{
	char p[PATH_MAX];

	return err_of(utimes(at(p, r, "f"), NULL));
}

static int ro_setxattr(const char *r)
{
	char p[PATH_MAX];

	return err_of(setxattr(at(p, r, "f"), "user.x", "1", 1, 0));
}

static int ro_removexattr(const char *r)
{
	char p[PATH_MAX];

	return err_of(removexattr(at(p, r, "f"), "user.keep"));
}

static int ro_setacl(const char *r)
{
	char p[PATH_MAX];

	return err_of(setxattr(at(p, r, "f"), "system.posix_acl_access",
			       acl_value, sizeof(acl_value), 0));
}

static int ro_tmpfile(const char *r)
{
	int fd = open(r, O_TMPFILE | O_WRONLY, 0600);

	return fd < 0 ? errno : (close(fd), 0);
}

static int open_err(const char *r, const char *rel, int flags)
{
	char p[PATH_MAX];
	int fd = open(at(p, r, rel), flags);

	return fd < 0 ? errno : (close(fd), 0);
}

static int ro_open_wr(const char *r)
{
	return open_err(r, "f", O_WRONLY);
}

static int ro_open_rdwr(const char *r)
{
	return open_err(r, "f", O_RDWR);
}

static int ro_open_trunc(const char *r)
{
	return open_err(r, "f", O_RDONLY | O_TRUNC);
}

static int ro_open_append(const char *r)
{
	return open_err(r, "f", O_WRONLY | O_APPEND);
}

static int ro_truncate(const char *r)
{
	char p[PATH_MAX];

	return err_of(truncate(at(p, r, "f"), 1));
}

static int ro_rename(const char *r)
{
	char p[PATH_MAX], q[PATH_MAX];

	return err_of(rename(at(p, r, "victim"), at(q, r, "renamed")));
}

static int ro_unlink(const char *r)
{
	char p[PATH_MAX];

	return err_of(unlink(at(p, r, "victim")));
}

static int ro_rmdir(const char *r)
{
	char p[PATH_MAX];

	return err_of(rmdir(at(p, r, "d")));
}

static int ro_access_w(const char *r)
{
	char p[PATH_MAX];

	return err_of(access(at(p, r, "f"), W_OK));
}

static int ro_access_dir_w(const char *r)
{
	char p[PATH_MAX];

	return err_of(access(at(p, r, "d"), W_OK));
}

static const struct {
	const char *name;
	int (*fn)(const char *root);
} ro_ops[] = {
	{ "access(W_OK)", ro_access_w },
	{ "access(dir, W_OK)", ro_access_dir_w },
	{ "open(O_CREAT)", ro_create },
	{ "mkdir", ro_mkdir },
	{ "mknod(fifo)", ro_mknod },
	{ "symlink", ro_symlink },
	{ "link", ro_link },
	{ "chmod", ro_chmod },
	{ "chown", ro_chown },
	{ "utimes", ro_utimes },
	{ "setxattr(user.x)", ro_setxattr },
	{ "removexattr(user.keep)", ro_removexattr },
	{ "setxattr(system.posix_acl_access)", ro_setacl },
	{ "open(O_TMPFILE)", ro_tmpfile },
	{ "open(O_WRONLY)", ro_open_wr },
	{ "open(O_RDWR)", ro_open_rdwr },
	{ "open(O_RDONLY|O_TRUNC)", ro_open_trunc },
	{ "open(O_WRONLY|O_APPEND)", ro_open_append },
	{ "truncate", ro_truncate },
	{ "rename", ro_rename },
	{ "unlink", ro_unlink },
	{ "rmdir", ro_rmdir },
};

static int lr_start_guard(struct lr *x, const char *root);

/*
 * A filesystem of its own (to freeze, or to remount read-only) in an image
 * file, mounted as the lower, with a guard that thaws it if the test dies.
 */
static int lr_own_fs(struct lr *x)
{
	const char *fstype = strcmp(ahfs_fstype(), "xfs") ? "ext4" : "xfs";
	char img[PATH_MAX];
	struct stat a, b;

	ahfs_fmt(img, sizeof(img), "%s/img", x->fs.base);
	/* mkfs.xfs refuses less than 300 MB; the image is sparse. */
	if (ahfs_run("truncate -s %s '%s' && mkfs.%s -q %s '%s' >/dev/null",
		     strcmp(fstype, "xfs") ? "64M" : "320M", img, fstype,
		     strcmp(fstype, "xfs") ? "-F" : "-f", img))
		return fail(-EIO, "mkfs", img);
	if (ahfs_run("mount -o loop '%s' '%s'", img, x->fs.lower))
		return fail(-EIO, "mount -o loop", img);
	ahfs_fmt(x->mnts[x->nmnts++], PATH_MAX, "%s", x->fs.lower);
	if (stat(x->fs.base, &a) || stat(x->fs.lower, &b) ||
	    a.st_dev == b.st_dev)
		return fail(-EINVAL, "no filesystem of its own at",
			    x->fs.lower);
	return lr_start_guard(x, x->fs.lower);
}

FIXTURE(ro) {
	struct lr x;
	char bind[PATH_MAX];	/* the read-only lower, used directly */
};

/*
 * bind: the lower is a read-only bind mount of a writable filesystem.
 * sb: the lower is a filesystem of its own remounted read-only, under a
 * mount whose attribute cache is on (each refusal is asked twice: a
 * refusal must never come back from the cache as a grant).
 */
FIXTURE_VARIANT(ro) {
	int sb;
};

FIXTURE_VARIANT_ADD(ro, bind) {
	.sb = 0,
};

FIXTURE_VARIANT_ADD(ro, sb) {
	.sb = 1,
};

static int ro_prepare(struct lr *x, char *bind, int sb)
{
	char p[PATH_MAX];
	int err;

	err = lr_init(x, "ro", NULL);
	if (err)
		return err;
	if (sb) {
		err = lr_own_fs(x);
		if (err)
			return err;
	}
	if (ahfs_put(at(p, x->fs.lower, "f"), "contents") ||
	    setxattr(p, "user.keep", "k", 1, 0) ||
	    ahfs_put(at(p, x->fs.lower, "victim"), "v") ||
	    mkdir(at(p, x->fs.lower, "d"), 0755))
		return fail(-errno, "populate", x->fs.lower);
	if (sb) {
		ahfs_fmt(bind, PATH_MAX, "%s", x->fs.lower);
		if (ahfs_run("mount -o remount,ro '%s'", x->fs.lower))
			return fail(-EIO, "remount read-only", x->fs.lower);
		return lr_aheadfs(x, bind, x->fs.mnt, "attr_timeout_ms=600000");
	}
	ahfs_fmt(bind, PATH_MAX, "%s/robind", x->fs.base);
	err = lr_bind(x, x->fs.lower, bind, MS_RDONLY);
	if (err)
		return err;
	return lr_aheadfs(x, bind, x->fs.mnt, "");
}

FIXTURE_SETUP(ro)
{
	LR_SETUP(&self->x, ro_prepare(&self->x, self->bind, variant->sb));
}

FIXTURE_TEARDOWN(ro)
{
	lr_cleanup(_metadata, &self->x);
}

/*
 * Every change through aheadfs over a read-only lower (bind mount or
 * superblock) fails EROFS, as on it directly, and so does access(W_OK),
 * every time it is asked; the lower is untouched.
 */
TEST_F_TIMEOUT(ro, every_change_is_erofs, 120)
{
	struct buf before = {}, after = {};
	char p[PATH_MAX], data[64];
	unsigned int i, round;

	snapshot(&before, self->x.fs.lower, ".");
	ASSERT_NE(NULL, before.p);
	/* aheadfs shows the read-only lower. */
	ASSERT_EQ(8, ahfs_read_file(at(p, self->x.fs.mnt, "f"), data,
				    sizeof(data)));
	EXPECT_STREQ("contents", data);

	for (round = 0; round < 2; round++) {
		for (i = 0; i < ARRAY_SIZE(ro_ops); i++) {
			int direct = ro_ops[i].fn(self->bind);
			int stacked = ro_ops[i].fn(self->x.fs.mnt);

			EXPECT_EQ(EROFS, direct) {
				TH_LOG("%s on the read-only lower itself: %s",
				       ro_ops[i].name, strerror(direct));
			}
			EXPECT_EQ(EROFS, stacked) {
				TH_LOG("%s through aheadfs, round %u: %s (%d)",
				       ro_ops[i].name, round,
				       stacked ? strerror(stacked) : "succeeded",
				       stacked);
			}
		}
	}

	snapshot(&after, self->x.fs.lower, ".");
	ASSERT_NE(NULL, after.p);
	EXPECT_STREQ(before.p, after.p) {
		TH_LOG("the lower changed: %s", first_diff(before.p, after.p));
	}
	free(before.p);
	free(after.p);
}

/* ------------------------------------------------------------------ */
/* Frozen lower                                                        */
/* ------------------------------------------------------------------ */

static volatile sig_atomic_t guard_woken;

static void guard_wake(int sig)
{
	guard_woken = 1;
}

/*
 * A process outside the test's process group that thaws @root (when not
 * NULL) and resumes our dm device (when there is one) if the test dies: the
 * harness kills the group on a timeout, and a frozen lower or a suspended
 * device left behind would hang the guest.  At a normal teardown it is
 * killed.
 */
static int lr_start_guard(struct lr *x, const char *root)
{
	struct sigaction sa = { .sa_handler = guard_wake };
	pid_t parent = getpid();
	sigset_t block, old;
	struct stat want = {};
	pid_t pid;

	if (root && stat(root, &want))
		return fail(-errno, "stat", root);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return fail(-errno, "fork", "guard");
	}
	if (!pid) {
		struct stat st;
		sigset_t none;
		int fd;

		setsid();
		close_others(-1, -1);
		if (chdir("/"))
			_exit(1);
		sigaction(SIGTERM, &sa, NULL);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sigemptyset(&none);
		while (getppid() == parent && !guard_woken)
			sigsuspend(&none);
		fd = root ? open(root, O_RDONLY | O_DIRECTORY) : -1;
		if (fd >= 0 && !fstat(fd, &st) && st.st_dev == want.st_dev)
			ioctl(fd, FITHAW, 0);
		if (x->dm[0])
			ahfs_run("DM_DISABLE_UDEV=1 dmsetup resume %s", x->dm);
		_exit(0);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	x->guard = pid;
	return 0;
}

static int lr_freeze(struct lr *x, const char *root)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, FIFREEZE, 0)) {
		int err = -errno;

		close(fd);
		return err;
	}
	x->frozen_fd = fd;
	return 0;
}

FIXTURE(frozen) {
	struct lr x;
};

static int frozen_prepare(struct lr *x)
{
	char img[PATH_MAX];
	int err;

	err = lr_init(x, "frozen", NULL);
	if (err)
		return err;
	err = lr_own_fs(x);
	if (err)
		return err;
	if (ahfs_put(at(img, x->fs.lower, "f"), "old!"))
		return fail(-EIO, "populate", x->fs.lower);
	return lr_aheadfs(x, x->fs.lower, x->fs.mnt, "");
}

FIXTURE_SETUP(frozen)
{
	LR_SETUP(&self->x, frozen_prepare(&self->x));
}

FIXTURE_TEARDOWN(frozen)
{
	lr_cleanup(_metadata, &self->x);
}

/* stat(@path) in a child, bounded: 0 and *@st, errno, or -1 if it blocked. */
static int stat_bounded(struct lr *x, const char *path, struct stat *st)
{
	pid_t pid = lr_fork(x);
	int status;

	if (pid < 0)
		return -2;
	if (!pid)
		_exit(stat(path, x->shared) ? errno : 0);
	if (lr_wait(x, pid, WAIT_MS, &status))
		return -1;
	if (!WIFEXITED(status))
		return -2;
	memcpy(st, x->shared, sizeof(*st));
	return WEXITSTATUS(status);
}

/* The first bytes of @path, read in a child, bounded; -1 if it blocked. */
static int read_bounded(struct lr *x, const char *path, char *out,
			size_t len)
{
	pid_t pid = lr_fork(x);
	int status;

	if (pid < 0)
		return -2;
	if (!pid) {
		int n = ahfs_read_file(path, x->shared, len);

		_exit(n < 0 ? -n : 0);
	}
	if (lr_wait(x, pid, WAIT_MS, &status))
		return -1;
	if (!WIFEXITED(status))
		return -2;
	memcpy(out, x->shared, len);
	out[len - 1] = 0;
	return WEXITSTATUS(status);
}

static int op_create(const char *path, int fd)
{
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	return fd < 0 ? errno : (close(fd), 0);
}

static int op_chmod(const char *path, int fd)
{
	return err_of(chmod(path, 0600));
}

static int op_utimes(const char *path, int fd)
{
	struct timeval tv[2] = { { 1000000000, 0 }, { 1000000000, 0 } };

	return err_of(utimes(path, tv));
}

static int op_write(const char *path, int fd)
{
	ssize_t n = pwrite(fd, "NEW!", 4, 0);

	return n == 4 ? 0 : n < 0 ? errno : 99;
}

/*
 * Poll until @pid sleeps in the freeze protection (state D in
 * percpu_rwsem_wait, where sb_start_write() and its kin wait on both
 * kernels), or has exited: 'F' for the first, else the last state seen.
 */
static char wait_frozen(pid_t pid, int ms)
{
	char s = 0;
	int i;

	for (i = 0; i <= ms / 10; i++) {
		s = proc_state(pid);
		if (s == 'D' && strstr(proc_wchan(pid), "percpu_rwsem"))
			return 'F';
		if (s == 'Z' || s == 'X' || !s)
			break;
		usleep(10000);
	}
	return s;
}

/*
 * Start @op(@path, @fd) in a child while the lower is frozen: the child must
 * be seen waiting for the thaw, and still be running; the caller then checks
 * that nothing reached the lower, thaws, and collects it with op_finish().
 */
static pid_t op_start(struct __test_metadata *_metadata, struct lr *x,
		      int (*op)(const char *, int), const char *path, int fd)
{
	pid_t pid = lr_fork(x);
	char state;

	if (!pid)
		_exit(op(path, fd));
	if (pid < 0)
		return pid;
	state = wait_frozen(pid, WAIT_MS);
	EXPECT_EQ('F', state) {
		TH_LOG("the child never waited for the frozen lower: state %c, wchan %s",
		       state ? state : '-', proc_wchan(pid));
	}
	return state == 'F' ? pid : -1;
}

static void op_finish(struct __test_metadata *_metadata, struct lr *x,
		      pid_t pid)
{
	int status = 0;
	char state;

	EXPECT_EQ(0, waitpid(pid, &status, WNOHANG)) {
		TH_LOG("the child finished while the lower was frozen");
	}
	state = wait_frozen(pid, 0);
	EXPECT_EQ('F', state) {
		TH_LOG("no longer waiting for the thaw: state %c, wchan %s",
		       state ? state : '-', proc_wchan(pid));
	}
	ASSERT_EQ(0, lr_thaw(x));
	ASSERT_EQ(0, lr_wait(x, pid, WAIT_MS, &status)) {
		TH_LOG("still blocked %d ms after the thaw: wchan %s",
		       WAIT_MS, proc_wchan(pid));
	}
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("after the thaw the operation failed: %s",
		       strerror(WEXITSTATUS(status)));
	}
}

/* A create through aheadfs waits for a frozen lower, and completes once it thaws. */
TEST_F_TIMEOUT(frozen, create_waits_for_thaw, 60)
{
	char m[PATH_MAX], l[PATH_MAX];
	struct stat st;
	pid_t pid;

	at(m, self->x.fs.mnt, "new");
	at(l, self->x.fs.lower, "new");
	/* Cached negative entries: a later stat of the lower takes no lock. */
	ASSERT_EQ(-1, stat(l, &st));
	ASSERT_EQ(-1, stat(m, &st));
	ASSERT_EQ(0, lr_freeze(&self->x, self->x.fs.lower));

	pid = op_start(_metadata, &self->x, op_create, m, -1);
	ASSERT_LT(0, pid);
	EXPECT_EQ(ENOENT, stat_bounded(&self->x, l, &st)) {
		TH_LOG("the file is on the frozen lower, or its stat blocked (-1)");
	}
	op_finish(_metadata, &self->x, pid);
	EXPECT_EQ(0, stat(l, &st));
	EXPECT_EQ(0, stat(m, &st));
}

/* chmod and utimes through aheadfs wait for a frozen lower, and complete once it thaws. */
TEST_F_TIMEOUT(frozen, setattr_waits_for_thaw, 60)
{
	char m[PATH_MAX], l[PATH_MAX];
	struct stat st;
	pid_t pid;

	at(m, self->x.fs.mnt, "f");
	at(l, self->x.fs.lower, "f");
	ASSERT_EQ(0, chmod(l, 0644));

	ASSERT_EQ(0, lr_freeze(&self->x, self->x.fs.lower));
	pid = op_start(_metadata, &self->x, op_chmod, m, -1);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, stat_bounded(&self->x, l, &st));
	EXPECT_EQ(0644, st.st_mode & 07777);
	op_finish(_metadata, &self->x, pid);
	ASSERT_EQ(0, stat(l, &st));
	EXPECT_EQ(0600, st.st_mode & 07777);

	ASSERT_EQ(0, lr_freeze(&self->x, self->x.fs.lower));
	pid = op_start(_metadata, &self->x, op_utimes, m, -1);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, stat_bounded(&self->x, l, &st));
	EXPECT_NE(1000000000, st.st_mtim.tv_sec);
	op_finish(_metadata, &self->x, pid);
	ASSERT_EQ(0, stat(l, &st));
	EXPECT_EQ(1000000000, st.st_mtim.tv_sec);
}

/* write(2) to an aheadfs fd opened before the freeze waits for the thaw. */
TEST_F_TIMEOUT(frozen, write_waits_for_thaw, 60)
{
	char m[PATH_MAX], l[PATH_MAX], data[16];
	pid_t pid;
	int fd;

	at(m, self->x.fs.mnt, "f");
	at(l, self->x.fs.lower, "f");
	fd = open(m, O_WRONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, lr_freeze(&self->x, self->x.fs.lower));
	pid = op_start(_metadata, &self->x, op_write, NULL, fd);
	if (pid < 0)
		close(fd);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, read_bounded(&self->x, l, data, 5));
	EXPECT_STREQ("old!", data);
	op_finish(_metadata, &self->x, pid);
	close(fd);
	ASSERT_EQ(4, ahfs_read_file(l, data, 5));
	EXPECT_STREQ("NEW!", data);
}

/*
 * Freeze the lower at @root in a child, bounded: 0 (frozen, to be thawed
 * by lr_thaw()), an errno, or -ETIMEDOUT if the freeze never returned (a
 * writer's freeze protection never given back: the child stays in D state).
 */
static int freeze_bounded(struct lr *x, const char *root)
{
	int status, fd;
	pid_t pid;

	fd = open(root, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return errno;
	pid = lr_fork(x);
	if (pid < 0) {
		close(fd);
		return EAGAIN;
	}
	if (!pid)
		_exit(ioctl(fd, FIFREEZE, 0) ? errno : 0);
	if (lr_wait(x, pid, WAIT_MS, &status)) {
		close(fd);
		return -ETIMEDOUT;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		close(fd);
		return WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
	}
	x->frozen_fd = fd;
	return 0;
}

#define AIO_WRITES	256

/*
 * 256 async O_DIRECT writes through aheadfs (libaio), all completed: a
 * freeze of the lower then returns, as it does after the same writes on the
 * lower directly (each queued write gives the lower's freeze protection
 * back at its completion), and the data is on the lower.
 */
TEST_F_TIMEOUT(frozen, freeze_after_async_writes, 120)
{
	struct iocb cbs[AIO_WRITES], *cbp[AIO_WRITES];
	struct io_event ev[AIO_WRITES];
	const char *files[] = { self->x.fs.lower, self->x.fs.mnt };
	char p[PATH_MAX], *buf;
	io_context_t ctx = 0;
	int side, i, k, n, fd, err;

	ASSERT_EQ(0, posix_memalign((void **)&buf, 4096, 4096));
	memset(buf, 'w', 4096);
	for (side = 0; side < 2; side++) {
		at(p, files[side], side ? "via-mnt" : "via-lower");
		/*
		 * Overwrites of written blocks: an extending or allocating
		 * O_DIRECT write is completed before io_submit() returns
		 * (ext4), and only a queued one hands its freeze protection
		 * to the completion.
		 */
		ASSERT_EQ(0, ahfs_run("xfs_io -f -c 'pwrite -q 0 %d' -c fsync '%s'",
				      AIO_WRITES * 4096, p));
		fd = open(p, O_RDWR | O_DIRECT);
		ASSERT_LE(0, fd) TH_LOG("open %s: %s", p, strerror(errno));
		ASSERT_EQ(0, io_setup(AIO_WRITES, &ctx));
		for (i = 0; i < AIO_WRITES; i++) {
			io_prep_pwrite(&cbs[i], fd, buf, 4096, (off_t)i * 4096);
			cbp[i] = &cbs[i];
		}
		ASSERT_EQ(AIO_WRITES, io_submit(ctx, AIO_WRITES, cbp));
		for (n = 0; n < AIO_WRITES; n += i) {
			i = io_getevents(ctx, 1, AIO_WRITES - n, ev, NULL);
			ASSERT_LT(0, i);
			for (k = 0; k < i; k++)
				EXPECT_EQ(4096, (long)ev[k].res);
		}
		io_destroy(ctx);
		ctx = 0;
		close(fd);
		err = freeze_bounded(&self->x, self->x.fs.lower);
		ASSERT_EQ(0, err) {
			TH_LOG("freeze after %d async writes %s: %s", AIO_WRITES,
			       side ? "through aheadfs" : "on the lower",
			       err == -ETIMEDOUT ? "never returned" : strerror(err));
		}
		ASSERT_EQ(0, lr_thaw(&self->x));
	}
	at(p, self->x.fs.lower, "via-mnt");
	{
		struct stat st;

		ASSERT_EQ(0, stat(p, &st));
		EXPECT_EQ(AIO_WRITES * 4096, st.st_size);
	}
	free(buf);
}

/*
 * Every kind of change, each in a directory of its own, made in one
 * process per side and kind while the lower is frozen: on the lower
 * directly (the reference) and through aheadfs.  @prep runs before the
 * freeze, @op in the child, @check on the lower after the thaw (0: the
 * change is there).
 */
struct fop {
	const char *name;
	int (*prep)(const char *d);
	int (*op)(const char *d);
	int (*check)(const char *d);
};

static int fop_put(const char *d, const char *rel, const char *s)
{
	char p[PATH_MAX];

	return ahfs_put(at(p, d, rel), s) ? EIO : 0;
}

/* 0 if @rel under @d holds exactly @want. */
static int fop_has(const char *d, const char *rel, const char *want)
{
	char p[PATH_MAX], got[64];
	int n = ahfs_read_file(at(p, d, rel), got, sizeof(got));

	if (n < 0)
		return -n;
	return n == (int)strlen(want) && !memcmp(got, want, n) ? 0 : EBADMSG;
}

static int fop_gone(const char *d, const char *rel)
{
	char p[PATH_MAX];
	struct stat st;

	return lstat(at(p, d, rel), &st) ? (errno == ENOENT ? 0 : errno)
					 : EEXIST;
}

static int fop_nothing(const char *d)
{
	return 0;
}

static int fop_create(const char *d)
{
	char p[PATH_MAX];

	return op_create(at(p, d, "new"), -1);
}

static int fop_created(const char *d)
{
	return fop_has(d, "new", "");
}

static int fop_victim(const char *d)
{
	return fop_put(d, "victim", "v");
}

static int fop_unlink(const char *d)
{
	char p[PATH_MAX];

	return err_of(unlink(at(p, d, "victim")));
}

static int fop_unlinked(const char *d)
{
	return fop_gone(d, "victim");
}

static int fop_a(const char *d)
{
	return fop_put(d, "a", "renamed");
}

static int fop_rename(const char *d)
{
	char a[PATH_MAX], b[PATH_MAX];

	return err_of(rename(at(a, d, "a"), at(b, d, "b")));
}

static int fop_renamed(const char *d)
{
	return fop_gone(d, "a") ?: fop_has(d, "b", "renamed");
}

static int fop_long(const char *d)
{
	return fop_put(d, "t", "truncate me");
}

static int fop_truncate(const char *d)
{
	char p[PATH_MAX];

	return err_of(truncate(at(p, d, "t"), 3));
}

static int fop_truncated(const char *d)
{
	return fop_has(d, "t", "tru");
}

static int fop_short(const char *d)
{
	return fop_put(d, "fa", "x");
}

static int fop_fallocate(const char *d)
{
	char p[PATH_MAX];
	int fd = open(at(p, d, "fa"), O_RDWR), err;

	if (fd < 0)
		return errno;
	err = err_of(fallocate(fd, 0, 0, 65536));
	close(fd);
	return err;
}

static int fop_fallocated(const char *d)
{
	char p[PATH_MAX];
	struct stat st;

	if (stat(at(p, d, "fa"), &st))
		return errno;
	return st.st_size == 65536 && st.st_blocks >= 65536 / 512 ? 0 : EBADMSG;
}

static int fop_mapped(const char *d)
{
	return fop_put(d, "mm", "mmap-old");
}

/* A store to a MAP_SHARED mapping made while frozen: a write fault. */
static int fop_mmap_store(const char *d)
{
	char p[PATH_MAX], *m;
	int fd = open(at(p, d, "mm"), O_RDWR);

	if (fd < 0)
		return errno;
	m = mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return errno;
	memcpy(m, "MMAP", 4);
	return err_of(munmap(m, 8));
}

static int fop_stored(const char *d)
{
	return fop_has(d, "mm", "MMAP-old");
}

static int fop_src(const char *d)
{
	return fop_put(d, "src", "copy source") ?: fop_put(d, "dst", "");
}

static int fop_copy(const char *d)
{
	char p[PATH_MAX];
	int in = open(at(p, d, "src"), O_RDONLY);
	int out = open(at(p, d, "dst"), O_WRONLY);
	ssize_t n = -1;

	if (in >= 0 && out >= 0)
		n = copy_file_range(in, NULL, out, NULL, 11, 0);
	n = n == 11 ? 0 : n < 0 ? errno : EBADMSG;
	close(in);
	close(out);
	return n;
}

static int fop_copied(const char *d)
{
	return fop_has(d, "dst", "copy source");
}

static const struct fop fops[] = {
	{ "create", fop_nothing, fop_create, fop_created },
	{ "unlink", fop_victim, fop_unlink, fop_unlinked },
	{ "rename", fop_a, fop_rename, fop_renamed },
	{ "truncate", fop_long, fop_truncate, fop_truncated },
	{ "fallocate", fop_short, fop_fallocate, fop_fallocated },
	{ "mmap_store", fop_mapped, fop_mmap_store, fop_stored },
	{ "copy_file_range", fop_src, fop_copy, fop_copied },
};

static int fop_run(const char *path, int i)
{
	return fops[i].op(path);
}

/* A hash of the lower's tree (snapshot()), taken in a child, bounded. */
static int snapshot_bounded(struct lr *x, const char *dir,
			    unsigned long long *h)
{
	pid_t pid = lr_fork(x);
	int status;

	if (pid < 0)
		return -2;
	if (!pid) {
		struct buf b = {};

		snapshot(&b, dir, ".");
		*(unsigned long long *)x->shared =
			hash_bytes(b.p, b.len, 14695981039346656037ULL);
		_exit(0);
	}
	if (lr_wait(x, pid, WAIT_MS, &status))
		return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return -2;
	*h = *(unsigned long long *)x->shared;
	return 0;
}

/*
 * create, unlink, rename, truncate, fallocate, a store to a shared mapping
 * and copy_file_range, each made while the lower is frozen: on the lower
 * directly each waits for the thaw, and so does each made through aheadfs;
 * nothing reaches the lower while it is frozen, and after the thaw every
 * one completes with the same result on both sides.
 */
TEST_F_TIMEOUT(frozen, every_change_waits_both_sides, 120)
{
	const char *roots[] = { self->x.fs.lower, self->x.fs.mnt };
	pid_t pids[2][ARRAY_SIZE(fops)];
	char d[PATH_MAX], l[PATH_MAX];
	unsigned long long before, during;
	unsigned int i, side;
	int status;

	for (side = 0; side < 2; side++)
		for (i = 0; i < ARRAY_SIZE(fops); i++) {
			/* Made on the lower, so that the aheadfs side finds it. */
			ahfs_fmt(l, sizeof(l), "%s/%c-%s", self->x.fs.lower,
				 "LM"[side], fops[i].name);
			ASSERT_EQ(0, mkdir(l, 0755));
			ASSERT_EQ(0, fops[i].prep(l)) TH_LOG("prepare %s", l);
		}
	/* The aheadfs side's names are known to it before the freeze. */
	for (i = 0; i < ARRAY_SIZE(fops); i++) {
		struct buf b = {};

		ahfs_fmt(d, sizeof(d), "%s/M-%s", self->x.fs.mnt, fops[i].name);
		snapshot(&b, d, ".");
		free(b.p);
	}
	ASSERT_EQ(0, snapshot_bounded(&self->x, self->x.fs.lower, &before));
	ASSERT_EQ(0, lr_freeze(&self->x, self->x.fs.lower));

	for (side = 0; side < 2; side++)
		for (i = 0; i < ARRAY_SIZE(fops); i++) {
			ahfs_fmt(d, sizeof(d), "%s/%c-%s", roots[side],
				 "LM"[side], fops[i].name);
			pids[side][i] = op_start(_metadata, &self->x, fop_run,
						 d, i);
			ASSERT_LT(0, pids[side][i]) {
				TH_LOG("%s %s did not wait for the thaw",
				       fops[i].name, side ? "through aheadfs" :
				       "on the lower");
			}
		}
	/* All still waiting, and the lower unchanged (reads go on). */
	for (side = 0; side < 2; side++)
		for (i = 0; i < ARRAY_SIZE(fops); i++) {
			EXPECT_EQ(0, waitpid(pids[side][i], &status, WNOHANG));
			EXPECT_EQ('F', wait_frozen(pids[side][i], 0)) {
				TH_LOG("%s %s: wchan %s", fops[i].name,
				       side ? "through aheadfs" : "on the lower",
				       proc_wchan(pids[side][i]));
			}
		}
	ASSERT_EQ(0, snapshot_bounded(&self->x, self->x.fs.lower, &during)) {
		TH_LOG("a walk of the frozen lower blocked");
	}
	EXPECT_EQ(before, during) {
		TH_LOG("the frozen lower changed");
	}

	ASSERT_EQ(0, lr_thaw(&self->x));
	for (side = 0; side < 2; side++)
		for (i = 0; i < ARRAY_SIZE(fops); i++) {
			ASSERT_EQ(0, lr_wait(&self->x, pids[side][i], WAIT_MS,
					     &status)) {
				TH_LOG("%s %s still blocked after the thaw: wchan %s",
				       fops[i].name, side ? "through aheadfs" :
				       "on the lower", proc_wchan(pids[side][i]));
			}
			ASSERT_TRUE(WIFEXITED(status));
			EXPECT_EQ(0, WEXITSTATUS(status)) {
				TH_LOG("%s %s after the thaw: %s", fops[i].name,
				       side ? "through aheadfs" : "on the lower",
				       strerror(WEXITSTATUS(status)));
			}
			ahfs_fmt(l, sizeof(l), "%s/%c-%s", self->x.fs.lower,
				 "LM"[side], fops[i].name);
			EXPECT_EQ(0, fops[i].check(l)) {
				TH_LOG("%s %s: not done on the lower",
				       fops[i].name, side ? "through aheadfs" :
				       "on the lower");
			}
			/* And aheadfs shows the result as the lower has it. */
			ahfs_fmt(d, sizeof(d), "%s/%c-%s", self->x.fs.mnt,
				 "LM"[side], fops[i].name);
			EXPECT_EQ(0, fops[i].check(d)) {
				TH_LOG("%s %s: aheadfs does not show it",
				       fops[i].name, side ? "through aheadfs" :
				       "on the lower");
			}
		}
}

/* Read @path whole in a child, bounded: 0 and its hash, errno, -1 if blocked. */
static int hash_bounded(struct lr *x, const char *path,
			unsigned long long *h)
{
	pid_t pid = lr_fork(x);
	int status;

	if (pid < 0)
		return -2;
	if (!pid) {
		*(unsigned long long *)x->shared = hash_file(path);
		_exit(0);
	}
	if (lr_wait(x, pid, WAIT_MS, &status))
		return -1;
	if (!WIFEXITED(status))
		return -2;
	*h = *(unsigned long long *)x->shared;
	return WEXITSTATUS(status);
}

/* The names in @dir, counted in a child, bounded; -1 if it blocked. */
static int readdir_bounded(struct lr *x, const char *dir)
{
	pid_t pid = lr_fork(x);
	int status;

	if (pid < 0)
		return -2;
	if (!pid) {
		DIR *dp = opendir(dir);
		struct dirent *de;
		int n = 0;

		if (!dp)
			_exit(255);
		while ((de = readdir(dp)))
			n++;
		_exit(n);
	}
	if (lr_wait(x, pid, WAIT_MS, &status))
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
}

#define FROZEN_READ	(1 << 20)

/*
 * A frozen lower still reads: through aheadfs, read(2) of data in the page
 * cache and of data that is not, stat and readdir all complete during the
 * freeze, with the lower's data.
 */
TEST_F_TIMEOUT(frozen, reads_go_on, 60)
{
	char l[PATH_MAX], m[PATH_MAX], name[32];
	unsigned long long want, got;
	struct stat st;
	int fd, i;

	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "d/e%d", i);
		if (!i)
			ASSERT_EQ(0, mkdir(at(l, self->x.fs.lower, "d"), 0755));
		ASSERT_EQ(0, ahfs_put(at(l, self->x.fs.lower, name), "e"));
	}
	ASSERT_EQ(0, ahfs_make_file(at(l, self->x.fs.lower, "cached"),
				    FROZEN_READ));
	ASSERT_EQ(0, ahfs_make_file(at(l, self->x.fs.lower, "cold"),
				    FROZEN_READ));
	want = hash_file(l);
	/* Cached: read once through aheadfs. */
	ASSERT_EQ(want, hash_file(at(m, self->x.fs.mnt, "cached")));
	/* Cold: written back, then its pages dropped. */
	fd = open(at(l, self->x.fs.lower, "cold"), O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fsync(fd));
	for (i = 0; i <= WAIT_MS / 10; i++) {
		unsigned char vec[FROZEN_READ / 4096];
		void *p;
		int k, n = 0;

		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		p = mmap(NULL, FROZEN_READ, PROT_READ, MAP_SHARED, fd, 0);
		ASSERT_NE(MAP_FAILED, p);
		ASSERT_EQ(0, mincore(p, FROZEN_READ, vec));
		munmap(p, FROZEN_READ);
		for (k = 0; k < FROZEN_READ / 4096; k++)
			n += vec[k] & 1;
		if (!n)
			break;
		usleep(10000);
	}
	close(fd);
	ASSERT_GE(WAIT_MS / 10, i) TH_LOG("the cold file's pages stay cached");

	ASSERT_EQ(0, lr_freeze(&self->x, self->x.fs.lower));
	EXPECT_EQ(0, hash_bounded(&self->x, at(m, self->x.fs.mnt, "cached"),
				  &got)) {
		TH_LOG("a cached read through aheadfs blocked (-1) or failed");
	}
	EXPECT_EQ(want, got);
	got = 0;
	EXPECT_EQ(0, hash_bounded(&self->x, at(m, self->x.fs.mnt, "cold"),
				  &got)) {
		TH_LOG("an uncached read through aheadfs blocked (-1) or failed");
	}
	EXPECT_EQ(want, got);
	EXPECT_EQ(0, stat_bounded(&self->x, at(m, self->x.fs.mnt, "cold"), &st));
	EXPECT_EQ(FROZEN_READ, st.st_size);
	EXPECT_EQ(12, readdir_bounded(&self->x, at(m, self->x.fs.mnt, "d")));
	ASSERT_EQ(0, lr_thaw(&self->x));
}

#define FREEZE_ROUNDS	150

/*
 * A process writing in a loop (synchronous writes, buffered and O_DIRECT
 * in turn) while the lower is frozen and thawed again and again: every
 * freeze returns, with the writer on the lower directly and through
 * aheadfs, and the writer goes on after each thaw.
 */
TEST_F_TIMEOUT(frozen, freeze_races_sync_writes, 300)
{
	const char *roots[] = { self->x.fs.lower, self->x.fs.mnt };
	volatile long *count = self->x.shared;
	char p[PATH_MAX];
	int side, round, err, i;
	long before;
	pid_t pid;

	for (side = 0; side < 2; side++) {
		at(p, roots[side], side ? "w-mnt" : "w-lower");
		*count = 0;
		pid = lr_fork(&self->x);
		ASSERT_LE(0, pid);
		if (!pid) {
			char *buf;
			int fd = open(p, O_RDWR | O_CREAT, 0644);
			int dfd = open(p, O_RDWR | O_DIRECT);
			long i;

			if (fd < 0 || dfd < 0 || posix_memalign((void **)&buf, 4096, 4096))
				_exit(1);
			memset(buf, 's', 4096);
			for (i = 0;; i++) {
				if (pwrite(i & 1 ? dfd : fd, buf, 4096,
					   (i % 64) * 4096) != 4096)
					_exit(2);
				(*count)++;
			}
		}
		for (round = 0; round < FREEZE_ROUNDS; round++) {
			before = *count;
			err = freeze_bounded(&self->x, self->x.fs.lower);
			ASSERT_EQ(0, err) {
				TH_LOG("freeze %d with a writer %s: %s", round,
				       side ? "through aheadfs" : "on the lower",
				       err == -ETIMEDOUT ? "never returned" :
				       strerror(err));
			}
			ASSERT_EQ(0, lr_thaw(&self->x));
			/* The writer moves again before the next freeze. */
			for (i = 0; *count == before && i <= WAIT_MS; i++)
				usleep(1000);
			ASSERT_NE(before, *count) {
				TH_LOG("the writer %s did not go on after thaw %d",
				       side ? "through aheadfs" : "on the lower",
				       round);
			}
		}
		kill(pid, SIGKILL);
		ASSERT_EQ(0, lr_wait(&self->x, pid, WAIT_MS, NULL));
	}
}

#define NOREPLACE_ROUNDS	20

/* renameat2(@from, @to, RENAME_NOREPLACE): 0 or errno. */
static int rename_noreplace(const char *from, const char *to)
{
	return err_of(renameat2(AT_FDCWD, from, AT_FDCWD, to,
				RENAME_NOREPLACE));
}

/*
 * RENAME_NOREPLACE through aheadfs never replaces a file, even one the
 * lower got after the VFS found the target absent.  With the lower frozen,
 * a create of "y" on the lower waits first; then a RENAME_NOREPLACE of x to
 * y through aheadfs finds y absent (in our dentry and in the lower's) and
 * waits too.  Thawed, the create usually runs first: the rename must then
 * fail EEXIST (aheadfs finds, under the lower's locks, that the lower
 * dentry is no longer what ours stood for, and the VFS looks again), not
 * move x over the new file.  When the rename runs first, the create fails
 * EEXIST.  Never both succeed; rounds repeat until the create came first a
 * few times.
 */
TEST_F_TIMEOUT(frozen, rename_noreplace_races_lower_create, 120)
{
	char mx[PATH_MAX], my[PATH_MAX], lx[PATH_MAX], ly[PATH_MAX], got[16];
	int round, lower_first = 0, cst, rst, c, r;
	pid_t create, rename;
	struct stat st;

	at(mx, self->x.fs.mnt, "x");
	at(my, self->x.fs.mnt, "y");
	at(lx, self->x.fs.lower, "x");
	at(ly, self->x.fs.lower, "y");
	for (round = 0; round < NOREPLACE_ROUNDS && lower_first < 3; round++) {
		ASSERT_EQ(0, ahfs_put(mx, "moved"));
		/* Both negative, cached: y is absent on either side. */
		ASSERT_EQ(-1, lstat(my, &st));
		ASSERT_EQ(-1, lstat(ly, &st));
		ASSERT_EQ(0, lr_freeze(&self->x, self->x.fs.lower));
		create = lr_fork(&self->x);
		ASSERT_LE(0, create);
		if (!create)
			_exit(op_create(ly, -1));
		ASSERT_EQ('F', wait_frozen(create, WAIT_MS));
		rename = lr_fork(&self->x);
		ASSERT_LE(0, rename);
		if (!rename)
			_exit(rename_noreplace(mx, my));
		ASSERT_EQ('F', wait_frozen(rename, WAIT_MS)) {
			TH_LOG("the rename did not wait for the frozen lower: wchan %s",
			       proc_wchan(rename));
		}
		ASSERT_EQ(0, lr_thaw(&self->x));
		ASSERT_EQ(0, lr_wait(&self->x, create, WAIT_MS, &cst));
		ASSERT_EQ(0, lr_wait(&self->x, rename, WAIT_MS, &rst));
		ASSERT_TRUE(WIFEXITED(cst) && WIFEXITED(rst));
		c = WEXITSTATUS(cst);
		r = WEXITSTATUS(rst);
		ASSERT_FALSE(c == 0 && r == 0) {
			TH_LOG("round %d: the lower's create of y and RENAME_NOREPLACE of x to y both succeeded: y is now %s",
			       round, ahfs_read_file(ly, got, sizeof(got)) < 0 ?
			       "unreadable" : got);
		}
		if (!c) {
			lower_first++;
			EXPECT_EQ(EEXIST, r);
			/* x stayed, and y is the lower's empty file. */
			EXPECT_EQ(0, lstat(lx, &st));
			EXPECT_EQ(0, lstat(ly, &st));
			EXPECT_EQ(0, st.st_size);
		} else {
			EXPECT_EQ(EEXIST, c);
			EXPECT_EQ(0, r);
		}
		ASSERT_EQ(0, unlink(ly));
		if (unlink(lx))
			ASSERT_EQ(ENOENT, errno);
	}
	TH_LOG("%d rounds, the lower's create ran first in %d", round,
	       lower_first);
	/* Otherwise the race was never run and nothing was shown. */
	EXPECT_LT(0, lower_first);
}

/* ------------------------------------------------------------------ */
/* Immutable and append-only files                                     */
/* ------------------------------------------------------------------ */

FIXTURE(iflags) {
	struct lr x;
};

static const char *const iflag_files[] = { "f", "a", "g" };

static int iflags_prepare(struct lr *x)
{
	char p[PATH_MAX];
	unsigned int i;
	int err;

	err = lr_init(x, "iflags", NULL);
	if (err)
		return err;
	for (i = 0; i < ARRAY_SIZE(iflag_files); i++)
		if (ahfs_put(at(p, x->fs.lower, iflag_files[i]), "base"))
			return fail(-EIO, "populate", p);
	return lr_aheadfs(x, x->fs.lower, x->fs.mnt, "");
}

/* FS_IOC_GETFLAGS of @path, or -errno. */
static int get_iflags(const char *path)
{
	int fd = open(path, O_RDONLY), fl = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, FS_IOC_GETFLAGS, &fl))
		fl = -errno;
	close(fd);
	return fl;
}

/* FS_IOC_SETFLAGS of @path: its flags with @set, without @clear; 0 or errno. */
static int set_iflags(const char *path, int set, int clear)
{
	int fd = open(path, O_RDONLY), fl = 0, err = 0;

	if (fd < 0)
		return errno;
	if (ioctl(fd, FS_IOC_GETFLAGS, &fl))
		err = errno;
	fl = (fl | set) & ~clear;
	if (!err && ioctl(fd, FS_IOC_SETFLAGS, &fl))
		err = errno;
	close(fd);
	return err;
}

FIXTURE_SETUP(iflags)
{
	LR_SETUP(&self->x, iflags_prepare(&self->x));
}

FIXTURE_TEARDOWN(iflags)
{
	char p[PATH_MAX];
	unsigned int i;

	/* Else nothing could remove them. */
	for (i = 0; i < ARRAY_SIZE(iflag_files); i++)
		set_iflags(at(p, self->x.fs.lower, iflag_files[i]), 0,
			   FS_IMMUTABLE_FL | FS_APPEND_FL);
	lr_cleanup(_metadata, &self->x);
}

static int if_open(const char *d, const char *rel, int flags)
{
	char p[PATH_MAX];
	int fd = open(at(p, d, rel), flags);

	return fd < 0 ? errno : (close(fd), 0);
}

static int if_open_wr(const char *d, const char *rel)
{
	return if_open(d, rel, O_WRONLY);
}

static int if_open_rdwr(const char *d, const char *rel)
{
	return if_open(d, rel, O_RDWR);
}

static int if_open_trunc(const char *d, const char *rel)
{
	return if_open(d, rel, O_WRONLY | O_APPEND | O_TRUNC);
}

static int if_truncate(const char *d, const char *rel)
{
	char p[PATH_MAX];

	return err_of(truncate(at(p, d, rel), 1));
}

static int if_unlink(const char *d, const char *rel)
{
	char p[PATH_MAX];

	return err_of(unlink(at(p, d, rel)));
}

static int if_rename(const char *d, const char *rel)
{
	char a[PATH_MAX], b[PATH_MAX];

	return err_of(rename(at(a, d, rel), at(b, d, "renamed")));
}

static int if_link(const char *d, const char *rel)
{
	char a[PATH_MAX], b[PATH_MAX];

	return err_of(link(at(a, d, rel), at(b, d, "linked")));
}

static int if_chmod(const char *d, const char *rel)
{
	char p[PATH_MAX];

	return err_of(chmod(at(p, d, rel), 0600));
}

static int if_utimes(const char *d, const char *rel)
{
	struct timeval tv[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	char p[PATH_MAX];

	return err_of(utimes(at(p, d, rel), tv));
}

static int if_setxattr(const char *d, const char *rel)
{
	char p[PATH_MAX];

	return err_of(setxattr(at(p, d, rel), "user.x", "x", 1, 0));
}

static const struct {
	const char *name;
	int (*fn)(const char *d, const char *rel);
} if_ops[] = {
	{ "open O_WRONLY", if_open_wr },
	{ "open O_RDWR", if_open_rdwr },
	{ "open O_APPEND|O_TRUNC", if_open_trunc },
	{ "truncate", if_truncate },
	{ "unlink", if_unlink },
	{ "rename", if_rename },
	{ "link", if_link },
	{ "chmod", if_chmod },
	{ "utimes", if_utimes },
	{ "setxattr", if_setxattr },
};

/*
 * Every change of a file made immutable (or append-only) on the lower
 * directly: refused with EPERM through aheadfs as on the lower itself.
 */
static void iflag_refusals(struct __test_metadata *_metadata, struct lr *x,
			   const char *rel, int append)
{
	char p[PATH_MAX], data[16];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(if_ops); i++) {
		int direct, stacked;

		direct = if_ops[i].fn(x->fs.lower, rel);
		stacked = if_ops[i].fn(x->fs.mnt, rel);
		EXPECT_EQ(EPERM, direct) {
			TH_LOG("%s of an %s file on the lower: %s", if_ops[i].name,
			       append ? "append-only" : "immutable",
			       direct ? strerror(direct) : "succeeded");
		}
		EXPECT_EQ(direct, stacked) {
			TH_LOG("%s of an %s file through aheadfs: %s",
			       if_ops[i].name,
			       append ? "append-only" : "immutable",
			       stacked ? strerror(stacked) : "succeeded");
		}
	}
	EXPECT_EQ(4, ahfs_read_file(at(p, x->fs.lower, rel), data,
				    sizeof(data)));
	EXPECT_STREQ("base", data);
}

/* chattr +i on the lower: every change is refused through aheadfs too. */
TEST_F(iflags, immutable_set_on_lower)
{
	char l[PATH_MAX], m[PATH_MAX];
	int fd;

	at(l, self->x.fs.lower, "f");
	at(m, self->x.fs.mnt, "f");
	/* aheadfs knows the file before the flag is set. */
	ASSERT_EQ(0, if_open_wr(self->x.fs.mnt, "f"));
	ASSERT_EQ(0, set_iflags(l, FS_IMMUTABLE_FL, 0));
	ASSERT_LT(0, get_iflags(m) & FS_IMMUTABLE_FL);
	iflag_refusals(_metadata, &self->x, "f", 0);
	fd = open(m, O_WRONLY | O_APPEND);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(EPERM, errno);
	if (fd >= 0)
		close(fd);
	/* Cleared on the lower: allowed again through aheadfs. */
	ASSERT_EQ(0, set_iflags(l, 0, FS_IMMUTABLE_FL));
	EXPECT_EQ(0, if_open_wr(self->x.fs.mnt, "f"));
	EXPECT_EQ(0, if_chmod(self->x.fs.mnt, "f"));
}

/*
 * chattr +a on the lower: through aheadfs as directly, only O_APPEND
 * writes are allowed, and they append (a pwrite at 0 too); clearing
 * O_APPEND with F_SETFL is refused.
 */
TEST_F(iflags, append_only_set_on_lower)
{
	const char *roots[] = { self->x.fs.lower, self->x.fs.mnt };
	char p[PATH_MAX], data[16];
	int side, fd;

	ASSERT_EQ(0, if_open_wr(self->x.fs.mnt, "a"));
	ASSERT_EQ(0, set_iflags(at(p, self->x.fs.lower, "a"), FS_APPEND_FL, 0));
	iflag_refusals(_metadata, &self->x, "a", 1);
	for (side = 0; side < 2; side++) {
		fd = open(at(p, roots[side], "a"), O_WRONLY | O_APPEND);
		ASSERT_LE(0, fd) {
			TH_LOG("O_APPEND open %s: %s", side ? "through aheadfs" :
			       "on the lower", strerror(errno));
		}
		EXPECT_EQ(1, pwrite(fd, side ? "M" : "L", 1, 0));
		EXPECT_EQ(-1, fcntl(fd, F_SETFL, 0));
		EXPECT_EQ(EPERM, errno) {
			TH_LOG("clearing O_APPEND %s", side ?
			       "through aheadfs" : "on the lower");
		}
		close(fd);
	}
	EXPECT_EQ(6, ahfs_read_file(at(p, self->x.fs.lower, "a"), data,
				    sizeof(data)));
	EXPECT_STREQ("baseLM", data);
	EXPECT_EQ(6, ahfs_read_file(at(p, self->x.fs.mnt, "a"), data,
				    sizeof(data)));
	EXPECT_STREQ("baseLM", data);
}

/*
 * FS_IOC_SETFLAGS through aheadfs sets the lower's flags (FS_IOC_GETFLAGS
 * on the lower shows them, and the lower then refuses what they forbid),
 * and clears them again.
 */
TEST_F(iflags, set_through_aheadfs)
{
	char l[PATH_MAX], m[PATH_MAX], x2[PATH_MAX];
	int fl;

	at(l, self->x.fs.lower, "g");
	at(m, self->x.fs.mnt, "g");
	ASSERT_EQ(0, set_iflags(m, FS_APPEND_FL, 0));
	fl = get_iflags(l);
	ASSERT_LE(0, fl);
	EXPECT_EQ(FS_APPEND_FL, fl & (FS_APPEND_FL | FS_IMMUTABLE_FL));
	EXPECT_EQ(EPERM, if_open_wr(self->x.fs.lower, "g"));
	EXPECT_EQ(EPERM, if_open_wr(self->x.fs.mnt, "g"));

	ASSERT_EQ(0, set_iflags(m, FS_IMMUTABLE_FL, FS_APPEND_FL));
	fl = get_iflags(l);
	ASSERT_LE(0, fl);
	EXPECT_EQ(FS_IMMUTABLE_FL, fl & (FS_APPEND_FL | FS_IMMUTABLE_FL));
	EXPECT_EQ(EPERM, if_unlink(self->x.fs.lower, "g"));
	EXPECT_EQ(EPERM, if_unlink(self->x.fs.mnt, "g"));

	ASSERT_EQ(0, set_iflags(m, 0, FS_IMMUTABLE_FL));
	fl = get_iflags(l);
	ASSERT_LE(0, fl);
	EXPECT_EQ(0, fl & (FS_APPEND_FL | FS_IMMUTABLE_FL));
	EXPECT_EQ(0, if_rename(self->x.fs.mnt, "g"));
	EXPECT_EQ(0, access(at(x2, self->x.fs.lower, "renamed"), F_OK));
}

/* ------------------------------------------------------------------ */
/* noexec, nodev, nosuid                                               */
/* ------------------------------------------------------------------ */

FIXTURE(mflags) {
	struct lr x;
};

static int mflags_prepare(struct lr *x)
{
	char p[PATH_MAX];
	int err;

	/* fs.mnt: aheadfs over the plain lower, the control. */
	err = lr_init(x, "mflags", "");
	if (err)
		return err;
	if (ahfs_run("cp /bin/true '%s/true' && cp /bin/sleep '%s/sleep' && cp /usr/bin/id '%s/id' && chmod 4755 '%s/id'",
		     x->fs.lower, x->fs.lower, x->fs.lower, x->fs.lower))
		return fail(-EIO, "copy programs into", x->fs.lower);
	/* A program with a file capability that prints its own. */
	if (ahfs_run("cp /bin/cat '%s/capcat' && setcap cap_net_raw+ep '%s/capcat'",
		     x->fs.lower, x->fs.lower))
		return fail(-EIO, "setcap (libcap2-bin) a copy of cat in", x->fs.lower);
	/* /dev/null's numbers. */
	if (mknod(at(p, x->fs.lower, "null"), S_IFCHR | 0666, makedev(1, 3)))
		return fail(-errno, "mknod", p);
	return 0;
}

FIXTURE_SETUP(mflags)
{
	LR_SETUP(&self->x, mflags_prepare(&self->x));
}

FIXTURE_TEARDOWN(mflags)
{
	lr_cleanup(_metadata, &self->x);
}

/* A bind mount of the lower remounted with @flag at base/b-@tag, aheadfs over it at base/m-@tag. */
static int stack_flagged(struct lr *x, unsigned long flag, const char *tag,
			 char *bind, char *mnt)
{
	int err;

	ahfs_fmt(bind, PATH_MAX, "%s/b-%s", x->fs.base, tag);
	ahfs_fmt(mnt, PATH_MAX, "%s/m-%s", x->fs.base, tag);
	err = lr_bind(x, x->fs.lower, bind, flag);
	return err ? err : lr_aheadfs(x, bind, mnt, "");
}

/*
 * Execute @dir/@prog @arg as @uid, its stdout in @out: the program's exit
 * status, -errno when execve failed, or -1000 on another failure.
 */
static int run_prog(struct lr *x, uid_t uid, const char *dir,
		    const char *prog, const char *arg, char *out, size_t len)
{
	char path[PATH_MAX];
	int p[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	at(path, dir, prog);
	if (pipe(p))
		return -1000;
	pid = lr_fork(x);
	if (pid < 0)
		return -1000;
	if (!pid) {
		gid_t g = uid;

		close(p[0]);
		if (dup2(p[1], 1) < 0)
			_exit(255);
		close_others(-1, -1);
		if (uid && (setgroups(1, &g) || setgid(uid) || setuid(uid)))
			_exit(254);
		execl(path, prog, arg, (char *)NULL);
		_exit(errno < 100 ? 100 + errno : 253);
	}
	close(p[1]);
	while (got < (ssize_t)len - 1 &&
	       (n = read(p[0], out + got, len - 1 - got)) > 0)
		got += n;
	out[got] = 0;
	close(p[0]);
	if (lr_wait(x, pid, WAIT_MS, &status) || !WIFEXITED(status))
		return -1000;
	status = WEXITSTATUS(status);
	if (status >= 100 && status < 200)
		return -(status - 100);
	return status;
}

/* mmap(PROT_EXEC) of @dir/true: 0 or errno. */
static int mmap_exec(const char *dir)
{
	char p[PATH_MAX];
	void *m;
	int fd = open(at(p, dir, "true"), O_RDONLY), err = 0;

	if (fd < 0)
		return errno;
	m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		err = errno;
	else
		munmap(m, 4096);
	close(fd);
	return err;
}

/*
 * mmap(PROT_READ) of @dir/true, then mprotect(PROT_READ | PROT_EXEC) of the
 * mapping: 0 or the errno of the step that failed.
 */
static int mprotect_exec(const char *dir)
{
	char p[PATH_MAX];
	void *m;
	int fd = open(at(p, dir, "true"), O_RDONLY), err = 0;

	if (fd < 0)
		return errno;
	m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		err = errno;
	} else {
		if (mprotect(m, 4096, PROT_READ | PROT_EXEC))
			err = errno;
		munmap(m, 4096);
	}
	close(fd);
	return err;
}

/* Open @dir/null read-write and write to it: 0 or errno. */
static int open_dev(const char *dir)
{
	char p[PATH_MAX];
	int fd = open(at(p, dir, "null"), O_RDWR), err = 0;

	if (fd < 0)
		return errno;
	if (write(fd, "gone", 4) != 4)
		err = errno ? errno : EIO;
	close(fd);
	return err;
}

/* execve through aheadfs over a noexec lower fails EACCES, as on the lower; over a plain lower it runs. */
TEST_F(mflags, noexec_exec)
{
	char bind[PATH_MAX], mnt[PATH_MAX], out[64];

	ASSERT_EQ(0, stack_flagged(&self->x, MS_NOEXEC, "noexec", bind, mnt)) {
		TH_LOG("%s", lr_why);
	}
	EXPECT_EQ(-EACCES, run_prog(&self->x, 0, bind, "true", NULL, out,
				    sizeof(out)));
	EXPECT_EQ(-EACCES, run_prog(&self->x, 0, mnt, "true", NULL, out,
				    sizeof(out)));
	/* Control: the same file runs through aheadfs over the plain lower. */
	EXPECT_EQ(0, run_prog(&self->x, 0, self->x.fs.mnt, "true", NULL, out,
			      sizeof(out)));
}

/* mmap(PROT_EXEC) through aheadfs over a noexec lower fails EPERM, as on the lower; over a plain lower it maps. */
TEST_F(mflags, noexec_mmap)
{
	char bind[PATH_MAX], mnt[PATH_MAX];

	ASSERT_EQ(0, stack_flagged(&self->x, MS_NOEXEC, "noexec", bind, mnt)) {
		TH_LOG("%s", lr_why);
	}
	EXPECT_EQ(EPERM, mmap_exec(bind));
	EXPECT_EQ(EPERM, mmap_exec(mnt));
	EXPECT_EQ(0, mmap_exec(self->x.fs.mnt));
}

/*
 * A mapping made without PROT_EXEC cannot be made executable later either:
 * mprotect(PROT_EXEC) fails EACCES through aheadfs over a noexec lower, as
 * on the lower; over a plain lower it succeeds.
 */
TEST_F(mflags, noexec_mprotect)
{
	char bind[PATH_MAX], mnt[PATH_MAX];

	ASSERT_EQ(0, stack_flagged(&self->x, MS_NOEXEC, "noexec", bind, mnt)) {
		TH_LOG("%s", lr_why);
	}
	EXPECT_EQ(EACCES, mprotect_exec(bind));
	EXPECT_EQ(EACCES, mprotect_exec(mnt));
	EXPECT_EQ(0, mprotect_exec(self->x.fs.mnt));
}

/* Opening a device node through aheadfs over a nodev lower fails EACCES, as on the lower; over a plain lower it works. */
TEST_F(mflags, nodev_open)
{
	char bind[PATH_MAX], mnt[PATH_MAX];

	ASSERT_EQ(0, stack_flagged(&self->x, MS_NODEV, "nodev", bind, mnt)) {
		TH_LOG("%s", lr_why);
	}
	EXPECT_EQ(EACCES, open_dev(bind));
	EXPECT_EQ(EACCES, open_dev(mnt));
	EXPECT_EQ(0, open_dev(self->x.fs.mnt));
}

/* A setuid-root program run by nobody through aheadfs over a nosuid lower gains no euid 0, as on the lower; stat still shows S_ISUID. */
TEST_F(mflags, nosuid_exec)
{
	char bind[PATH_MAX], mnt[PATH_MAX], p[PATH_MAX], out[64];
	struct stat st;

	ASSERT_EQ(0, stack_flagged(&self->x, MS_NOSUID, "nosuid", bind, mnt)) {
		TH_LOG("%s", lr_why);
	}
	/* `id -u` prints the effective uid. */
	ASSERT_EQ(0, run_prog(&self->x, NOBODY, bind, "id", "-u", out,
			      sizeof(out)));
	EXPECT_STREQ("65534\n", out);
	ASSERT_EQ(0, run_prog(&self->x, NOBODY, mnt, "id", "-u", out,
			      sizeof(out)));
	EXPECT_STREQ("65534\n", out) {
		TH_LOG("a set-uid file ran with euid %s through aheadfs over a nosuid lower",
		       out);
	}
	ASSERT_EQ(0, stat(at(p, mnt, "id"), &st));
	EXPECT_EQ(04755, st.st_mode & 07777);
	ASSERT_EQ(0, stat(at(p, bind, "id"), &st));
	EXPECT_EQ(04755, st.st_mode & 07777);
	/* Control: over a lower without nosuid it does run as root. */
	ASSERT_EQ(0, run_prog(&self->x, NOBODY, self->x.fs.mnt, "id", "-u",
			      out, sizeof(out)));
	EXPECT_STREQ("0\n", out);
}

/*
 * Run @dir/sleep in a child and wait (bounded) until it is that program:
 * its pid, or -1.
 */
static pid_t start_sleeper(struct lr *x, const char *dir)
{
	char path[PATH_MAX], exe[PATH_MAX], link[64];
	ssize_t n;
	pid_t pid;
	int i;

	at(path, dir, "sleep");
	pid = lr_fork(x);
	if (!pid) {
		close_others(-1, -1);
		execl(path, "sleep", "1000", (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	for (i = 0; i <= WAIT_MS / 10; i++) {
		n = readlink(link, exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = 0;
			if (!strcmp(exe, path))
				return pid;
		}
		usleep(10000);
	}
	kill(pid, SIGKILL);
	lr_wait(x, pid, WAIT_MS, NULL);
	return -1;
}

/* open(@path, O_WRONLY) and close: 0 or errno. */
static int open_write(const char *path)
{
	int fd = open(path, O_WRONLY);

	return fd < 0 ? errno : (close(fd), 0);
}

/*
 * A running program's file refuses writes on both sides (ETXTBSY): one
 * run through aheadfs cannot be opened for write or truncated on the
 * lower, one run from the lower cannot be through aheadfs; with nothing
 * running, both open it for write.
 */
TEST_F(mflags, text_busy_both_sides)
{
	char l[PATH_MAX], m[PATH_MAX];
	pid_t pid;

	at(l, self->x.fs.lower, "sleep");
	at(m, self->x.fs.mnt, "sleep");
	pid = start_sleeper(&self->x, self->x.fs.mnt);
	ASSERT_LT(0, pid);
	EXPECT_EQ(ETXTBSY, open_write(m));
	EXPECT_EQ(ETXTBSY, open_write(l)) {
		TH_LOG("a program run through aheadfs could be rewritten on the lower");
	}
	EXPECT_EQ(ETXTBSY, err_of(truncate(l, 0)));
	kill(pid, SIGKILL);
	ASSERT_EQ(0, lr_wait(&self->x, pid, WAIT_MS, NULL));

	pid = start_sleeper(&self->x, self->x.fs.lower);
	ASSERT_LT(0, pid);
	EXPECT_EQ(ETXTBSY, open_write(l));
	EXPECT_EQ(ETXTBSY, open_write(m));
	EXPECT_EQ(ETXTBSY, err_of(truncate(m, 0))) {
		TH_LOG("a program run from the lower could be truncated through aheadfs");
	}
	kill(pid, SIGKILL);
	ASSERT_EQ(0, lr_wait(&self->x, pid, WAIT_MS, NULL));

	EXPECT_EQ(0, open_write(l));
	EXPECT_EQ(0, open_write(m));
}

/* The effective capabilities @dir/capcat runs with as @uid, or "" on failure. */
static const char *cap_eff(struct lr *x, uid_t uid, const char *dir,
			   char *out, size_t len)
{
	char status[4096], *p;

	if (run_prog(x, uid, dir, "capcat", "/proc/self/status", status,
		     sizeof(status)) || !(p = strstr(status, "CapEff:\t")))
		return "";
	snprintf(out, len, "%.16s", p + 8);
	return out;
}

/*
 * A file capability is the nosuid lower's too: cap_net_raw+ep on a program
 * gives it CAP_NET_RAW when run through aheadfs over a plain lower, as on
 * the lower, and nothing over a nosuid one, as on the lower (exec checks
 * nosuid on aheadfs's mount, so aheadfs hides the capability from exec);
 * getxattr(2) still shows it, as stat shows a set-uid bit.
 */
TEST_F(mflags, nosuid_file_caps)
{
	char bind[PATH_MAX], mnt[PATH_MAX], p[PATH_MAX], out[32];
	char cap[64];

	ASSERT_EQ(0, stack_flagged(&self->x, MS_NOSUID, "nosuid", bind, mnt)) {
		TH_LOG("%s", lr_why);
	}
	/* CAP_NET_RAW is bit 13. */
	EXPECT_STREQ("0000000000002000",
		     cap_eff(&self->x, NOBODY, self->x.fs.lower, out, sizeof(out)));
	EXPECT_STREQ("0000000000002000",
		     cap_eff(&self->x, NOBODY, self->x.fs.mnt, out, sizeof(out)));
	EXPECT_STREQ("0000000000000000",
		     cap_eff(&self->x, NOBODY, bind, out, sizeof(out)));
	EXPECT_STREQ("0000000000000000",
		     cap_eff(&self->x, NOBODY, mnt, out, sizeof(out))) {
		TH_LOG("a file capability took effect through aheadfs over a nosuid lower");
	}
	EXPECT_LT(0, getxattr(at(p, mnt, "capcat"), "security.capability",
			      cap, sizeof(cap)));
}

/*
 * The lower's noexec, nodev and nosuid as they are when used: a bind mount
 * of the lower, plain when aheadfs is mounted over it, remounted noexec and
 * nodev refuses exec, PROT_EXEC and the device through aheadfs as it does
 * directly; remounted nosuid instead, a set-uid program runs without its
 * euid on both sides; remounted plain, all of it works again.
 */
TEST_F_TIMEOUT(mflags, remounted_after_mount, 120)
{
	static const struct {
		const char *opts;	/* remount,bind,OPTS; NULL: as mounted */
		int noexec, nodev, nosuid;
	} states[] = {
		{ NULL, 0, 0, 0 },
		{ "noexec,nodev,suid", 1, 1, 0 },
		{ "exec,dev,nosuid", 0, 0, 1 },
		{ "exec,dev,suid", 0, 0, 0 },
	};
	char bind[PATH_MAX], mnt[PATH_MAX], out[64];
	const char *sides[2];
	unsigned int i;
	int side, got;

	ASSERT_EQ(0, stack_flagged(&self->x, 0, "remount", bind, mnt)) {
		TH_LOG("%s", lr_why);
	}
	sides[0] = bind;
	sides[1] = mnt;
	for (i = 0; i < ARRAY_SIZE(states); i++) {
		if (states[i].opts)
			ASSERT_EQ(0, ahfs_run("mount -o remount,bind,%s '%s'",
					      states[i].opts, bind));
		for (side = 0; side < 2; side++) {
			const char *how = side ? "through aheadfs" : "directly";
			const char *st = states[i].opts ?: "as mounted";

			got = run_prog(&self->x, 0, sides[side], "true", NULL,
				       out, sizeof(out));
			EXPECT_EQ(states[i].noexec ? -EACCES : 0, got) {
				TH_LOG("exec, %s, %s: %d", st, how, got);
			}
			got = mmap_exec(sides[side]);
			EXPECT_EQ(states[i].noexec ? EPERM : 0, got) {
				TH_LOG("mmap(PROT_EXEC), %s, %s: %s", st, how,
				       strerror(got));
			}
			got = open_dev(sides[side]);
			EXPECT_EQ(states[i].nodev ? EACCES : 0, got) {
				TH_LOG("device open, %s, %s: %s", st, how,
				       strerror(got));
			}
			if (states[i].noexec)
				continue;
			ASSERT_EQ(0, run_prog(&self->x, NOBODY, sides[side], "id",
					      "-u", out, sizeof(out)));
			EXPECT_STREQ(states[i].nosuid ? "65534\n" : "0\n", out) {
				TH_LOG("set-uid, %s, %s: euid %s", st, how, out);
			}
		}
	}
}

/* ------------------------------------------------------------------ */
/* An automount point on the lower                                     */
/* ------------------------------------------------------------------ */

FIXTURE(automount) {
	struct lr x;
	char dbg[PATH_MAX];
};

FIXTURE_SETUP(automount)
{
	LR_SETUP(&self->x, lr_init(&self->x, "automount", NULL));
	ahfs_fmt(self->dbg, sizeof(self->dbg), "%s/dbg", self->x.fs.base);
}

FIXTURE_TEARDOWN(automount)
{
	/* Any tracefs the lower's automount made goes in the sweep. */
	lr_cleanup(_metadata, &self->x);
}

/* The filesystem type mounted at exactly @path, or NULL. */
static const char *mounted_at(const char *path)
{
	static char type[64];
	char line[2 * PATH_MAX], mp[PATH_MAX];
	const char *found = NULL;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 &&
		    !strcmp(mp, path) && sep &&
		    sscanf(sep + 3, "%63s", type) == 1)
			found = type;
	}
	fclose(f);
	return found;
}

/* aheadfs over debugfs lists "tracing" but refuses to stack over that automount point (EREMOTE), and unmounts cleanly. */
TEST_F(automount, debugfs_tracing)
{
	char p[PATH_MAX];
	const char *type;
	struct statx sx;
	struct dirent *de;
	struct stat st;
	int found = 0, fd, kfd;
	DIR *d;

	ASSERT_EQ(0, mkdir(self->dbg, 0755));
	if (lr_mount(&self->x, "none", self->dbg, "debugfs", 0, NULL))
		SKIP(return, "cannot mount debugfs: %.200s", lr_why);
	at(p, self->dbg, "tracing");
	if (statx(AT_FDCWD, p, AT_NO_AUTOMOUNT | AT_SYMLINK_NOFOLLOW,
		  STATX_BASIC_STATS, &sx))
		SKIP(return, "debugfs has no tracing: %s", strerror(errno));
	if (!(sx.stx_attributes_mask & STATX_ATTR_AUTOMOUNT) ||
	    !(sx.stx_attributes & STATX_ATTR_AUTOMOUNT))
		SKIP(return, "debugfs's tracing is not an automount point in this kernel");
	/*
	 * Directly, a statx that follows it mounts tracefs there (stat(2)
	 * never follows an automount point at the end of the path).
	 */
	ASSERT_EQ(NULL, mounted_at(p));
	ASSERT_EQ(0, statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &sx));
	type = mounted_at(p);
	if (!type)
		SKIP(return, "following debugfs's tracing mounted nothing");
	EXPECT_STREQ("tracefs", type);
	EXPECT_EQ(0, umount(p));

	ASSERT_EQ(0, lr_aheadfs(&self->x, self->dbg, self->x.fs.mnt, "")) {
		TH_LOG("%s", lr_why);
	}
	d = opendir(self->x.fs.mnt);
	ASSERT_NE(NULL, d);
	while ((de = readdir(d)))
		if (!strcmp(de->d_name, "tracing"))
			found = 1;
	closedir(d);
	EXPECT_TRUE(found) {
		TH_LOG("readdir of aheadfs over debugfs did not list tracing");
	}
	kfd = ahfs_kmsg_open();
	ASSERT_LE(0, kfd);
	EXPECT_EQ(-1, lstat(at(p, self->x.fs.mnt, "tracing"), &st));
	EXPECT_EQ(EREMOTE, errno);
	/* The refusal says why, once, in the kernel log. */
	EXPECT_TRUE(ahfs_kmsg_grep(kfd, "aheadfs: tracing: an automount point in the lower, not stacked (EREMOTE)"));
	close(kfd);
	EXPECT_EQ(-1, statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &sx));
	EXPECT_EQ(EREMOTE, errno);
	fd = open(p, O_RDONLY | O_DIRECTORY);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(EREMOTE, errno);
	if (fd >= 0)
		close(fd);
	/* Nothing was mounted through aheadfs, and it unmounts. */
	EXPECT_EQ(NULL, mounted_at(p));
	EXPECT_EQ(0, lr_umount(&self->x, self->x.fs.mnt));
}

/* ------------------------------------------------------------------ */
/* Locks                                                               */
/* ------------------------------------------------------------------ */

enum lock_kind { LK_POSIX, LK_OFD, LK_FLOCK };

#define HOLD_START	10
#define HOLD_LEN	90

/* Lock (F_WRLCK) or unlock (F_UNLCK) [@start, +@len) of @fd: 0 or errno. */
static int do_lock(int fd, enum lock_kind k, short type, off_t start,
		   off_t len, int wait)
{
	struct flock fl = {
		.l_type = type, .l_whence = SEEK_SET,
		.l_start = start, .l_len = len,
	};

	switch (k) {
	case LK_POSIX:
		return err_of(fcntl(fd, wait ? F_SETLKW : F_SETLK, &fl));
	case LK_OFD:
		return err_of(fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK,
				    &fl));
	default:
		return err_of(flock(fd, (type == F_UNLCK ? LOCK_UN : LOCK_EX) |
				    (wait ? 0 : LOCK_NB)));
	}
}

/* F_GETLK (or F_OFD_GETLK) of [0, 200) for a write lock. */
static struct flock get_lock(int fd, enum lock_kind k)
{
	struct flock fl = {
		.l_type = F_WRLCK, .l_whence = SEEK_SET,
		.l_start = 0, .l_len = 200,
	};

	if (fcntl(fd, k == LK_OFD ? F_OFD_GETLK : F_GETLK, &fl))
		fl.l_type = -errno;
	return fl;
}

/*
 * A process holding a write lock on a file until told otherwise.  @other,
 * when set, is another path of the same file: 'o' opens and closes it (a
 * POSIX lock's owner closing any descriptor of the file), 'v' unlocks the
 * held range through a descriptor of it that stays open.
 */
struct holder {
	pid_t pid;
	int cmd;	/* 'u': unlock, 'c': close the fd, 'o', 'v'; EOF: exit */
	int ack;	/* one byte per step: its errno */
	const char *other;
};

static int holder_start(struct lr *x, struct holder *h, const char *path,
			enum lock_kind k)
{
	int c[2], a[2];

	if (pipe(c) || pipe(a))
		return -1;
	h->pid = lr_fork(x);
	if (h->pid < 0)
		return -1;
	if (!h->pid) {
		unsigned char r;
		int fd;

		close(c[1]);
		close(a[0]);
		close_others(c[0], a[1]);
		fd = open(path, O_RDWR);
		r = fd < 0 ? errno : do_lock(fd, k, F_WRLCK, HOLD_START,
					     HOLD_LEN, 0);
		if (write(a[1], &r, 1) != 1)
			_exit(1);
		while (read(c[0], &r, 1) == 1) {
			int ofd;

			if (r == 'u') {
				r = do_lock(fd, k, F_UNLCK, HOLD_START,
					    HOLD_LEN, 0);
			} else if (r == 'o' || r == 'v') {
				ofd = h->other ? open(h->other, O_RDWR) : -1;
				if (ofd < 0)
					r = h->other ? errno : EINVAL;
				else if (r == 'o')
					r = err_of(close(ofd));
				else
					r = do_lock(ofd, k, F_UNLCK, HOLD_START,
						    HOLD_LEN, 0);
			} else {
				r = err_of(close(fd));
			}
			if (write(a[1], &r, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(c[0]);
	close(a[1]);
	h->cmd = c[1];
	h->ack = a[0];
	return read_byte(h->ack, WAIT_MS);
}

static int holder_do(struct holder *h, char cmd)
{
	if (write(h->cmd, &cmd, 1) != 1)
		return -1;
	return read_byte(h->ack, WAIT_MS);
}

static void holder_stop(struct lr *x, struct holder *h)
{
	close(h->cmd);
	close(h->ack);
	lr_wait(x, h->pid, WAIT_MS, NULL);
}

FIXTURE(locks) {
	struct lr x;
	char mnt2[PATH_MAX];
	char l[PATH_MAX], m[PATH_MAX], m2[PATH_MAX];
};

static int locks_prepare(struct lr *x, char *mnt2)
{
	char p[PATH_MAX];
	int err;

	err = lr_init(x, "locks", "");
	if (err)
		return err;
	if (ahfs_put(at(p, x->fs.lower, "f"), "lock me"))
		return fail(-EIO, "populate", p);
	ahfs_fmt(mnt2, PATH_MAX, "%s/mnt2", x->fs.base);
	return lr_aheadfs(x, x->fs.lower, mnt2, "");
}

FIXTURE_SETUP(locks)
{
	LR_SETUP(&self->x, locks_prepare(&self->x, self->mnt2));
	at(self->l, self->x.fs.lower, "f");
	at(self->m, self->x.fs.mnt, "f");
	at(self->m2, self->mnt2, "f");
}

FIXTURE_TEARDOWN(locks)
{
	lr_cleanup(_metadata, &self->x);
}

/*
 * With a POSIX write lock on [10, 100) held by another process through
 * @held, F_SETLK through @probe fails as it does on the lower directly, and
 * F_GETLK through @probe names the holder and its range.
 */
static void posix_conflict(struct __test_metadata *_metadata, struct lr *x,
			   const char *held, const char *probe,
			   const char *lower)
{
	struct holder h;
	struct flock fl;
	int fd, want = EAGAIN, got;

	ASSERT_EQ(0, holder_start(x, &h, held, LK_POSIX));
	if (!strcmp(held, lower)) {
		/* The lower's own answer to a conflict: aheadfs must match. */
		fd = open(lower, O_RDWR);
		ASSERT_LE(0, fd);
		want = do_lock(fd, LK_POSIX, F_WRLCK, 0, 200, 0);
		close(fd);
		ASSERT_TRUE(want == EAGAIN || want == EACCES) {
			TH_LOG("F_SETLK on the lower against a lower lock: %s",
			       want ? strerror(want) : "granted");
		}
	}
	fd = open(probe, O_RDWR);
	ASSERT_LE(0, fd);
	got = do_lock(fd, LK_POSIX, F_WRLCK, 0, 200, 0);
	EXPECT_EQ(want, got) {
		TH_LOG("F_SETLK on %s against a lock held through %s: %s",
		       probe, held, got ? strerror(got) : "granted");
	}
	fl = get_lock(fd, LK_POSIX);
	EXPECT_EQ(F_WRLCK, fl.l_type);
	EXPECT_EQ(h.pid, fl.l_pid);
	EXPECT_EQ(HOLD_START, fl.l_start);
	EXPECT_EQ(HOLD_LEN, fl.l_len);
	/* Outside the held range there is no conflict. */
	EXPECT_EQ(0, do_lock(fd, LK_POSIX, F_WRLCK, 150, 10, 0));
	close(fd);
	holder_stop(x, &h);
}

/* A POSIX lock held on the lower refuses F_SETLK through aheadfs; F_GETLK there names the holder. */
TEST_F(locks, posix_lower_then_aheadfs)
{
	posix_conflict(_metadata, &self->x, self->l, self->m, self->l);
}

/* A POSIX lock held through aheadfs refuses F_SETLK on the lower; F_GETLK there names the holder. */
TEST_F(locks, posix_aheadfs_then_lower)
{
	posix_conflict(_metadata, &self->x, self->m, self->l, self->l);
}

/* A POSIX lock held through one aheadfs mount refuses F_SETLK through another mount of the same lower. */
TEST_F(locks, posix_across_mounts)
{
	posix_conflict(_metadata, &self->x, self->m, self->m2, self->l);
}

/* A POSIX lock held through aheadfs goes away when its holder closes the fd. */
TEST_F(locks, posix_released_on_close)
{
	struct holder h;
	int fd;

	ASSERT_EQ(0, holder_start(&self->x, &h, self->m, LK_POSIX));
	fd = open(self->l, O_RDWR);
	ASSERT_LE(0, fd);
	EXPECT_EQ(EAGAIN, do_lock(fd, LK_POSIX, F_WRLCK, 0, 200, 0));
	ASSERT_EQ(0, holder_do(&h, 'c'));
	EXPECT_EQ(0, do_lock(fd, LK_POSIX, F_WRLCK, 0, 200, 0));
	close(fd);
	holder_stop(&self->x, &h);
}

/*
 * What the lower says of [0, 200) for a write lock, asked with an OFD lock
 * (which conflicts with every POSIX lock, this process's too): F_UNLCK, or
 * the type held there.
 */
static int lower_says(const char *lower)
{
	struct flock fl;
	int fd = open(lower, O_RDWR);

	if (fd < 0)
		return -errno;
	fl = get_lock(fd, LK_OFD);
	close(fd);
	return fl.l_type;
}

/*
 * A holder's POSIX lock taken through aheadfs, then released on the lower
 * behind the mount's back (@how: 'o', the holder closes a descriptor of
 * the file on the lower, which drops its locks there as POSIX says; 'v',
 * it unlocks through the second aheadfs mount).  The lower then grants the
 * range to anyone, and so does aheadfs (@wait: with F_SETLKW, which must
 * not wait); the lock granted goes at its owner's close, even after the
 * holder has gone, and nothing stays locked on the lower.
 */
static void posix_released_behind(struct __test_metadata *_metadata,
				  struct lr *x, const char *m,
				  const char *other, const char *l, char how,
				  int wait)
{
	struct holder h = { .other = other };
	int fd, got, status;
	pid_t pid;

	ASSERT_EQ(0, holder_start(x, &h, m, LK_POSIX));
	EXPECT_EQ(F_WRLCK, lower_says(l));
	ASSERT_EQ(0, holder_do(&h, how));
	/* The lower's own rule: the holder's lock is gone there. */
	EXPECT_EQ(F_UNLCK, lower_says(l));

	fd = open(m, O_RDWR);
	ASSERT_LE(0, fd);
	if (wait) {
		/* In a child, bounded: a wait on a stale shadow never ends. */
		pid = lr_fork(x);
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(do_lock(fd, LK_POSIX, F_WRLCK, 0, 200, 1));
		got = lr_wait(x, pid, WAIT_MS, &status);
		EXPECT_EQ(0, got) {
			TH_LOG("F_SETLKW through aheadfs still waits %d ms after the lower granted",
			       WAIT_MS);
		}
		if (!got) {
			EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
		}
		/* The child's exit closed its descriptors: nothing held. */
		EXPECT_EQ(F_UNLCK, lower_says(l));
	} else {
		got = do_lock(fd, LK_POSIX, F_WRLCK, 0, 200, 0);
		EXPECT_EQ(0, got) {
			TH_LOG("F_SETLK through aheadfs after the lower released the range: %s",
			       strerror(got));
		}
		EXPECT_EQ(F_WRLCK, lower_says(l));
	}
	/* The holder goes first: our inode may then hold no shadow at all. */
	holder_stop(x, &h);
	close(fd);
	EXPECT_EQ(F_UNLCK, lower_says(l)) {
		TH_LOG("the lower stays locked after its owner's close");
	}
}

/* A holder closing the file on the lower drops its lock there; aheadfs then grants the range, and its lock goes at close. */
TEST_F_TIMEOUT(locks, posix_dropped_on_the_lower, 60)
{
	posix_released_behind(_metadata, &self->x, self->m, self->l,
			      self->l, 'o', 0);
}

/* The same with F_SETLKW, which must be granted at once. */
TEST_F_TIMEOUT(locks, posix_dropped_on_the_lower_setlkw, 60)
{
	posix_released_behind(_metadata, &self->x, self->m, self->l,
			      self->l, 'o', 1);
}

/* A lock unlocked through a second aheadfs mount is granted again through the first. */
TEST_F_TIMEOUT(locks, posix_unlocked_through_other_mount, 60)
{
	posix_released_behind(_metadata, &self->x, self->m, self->m2,
			      self->l, 'v', 0);
}

/*
 * A POSIX lock taken through aheadfs goes when its owner closes any
 * descriptor of the file (here one of the other mount), as on the lower.
 */
TEST_F_TIMEOUT(locks, posix_released_by_any_close, 60)
{
	struct holder h = { .other = self->m2 };

	ASSERT_EQ(0, holder_start(&self->x, &h, self->m, LK_POSIX));
	EXPECT_EQ(F_WRLCK, lower_says(self->l));
	ASSERT_EQ(0, holder_do(&h, 'o'));
	EXPECT_EQ(F_UNLCK, lower_says(self->l));
	holder_stop(&self->x, &h);
}

/* A blocked F_SETLKW through aheadfs waits on the lower holder and wakes up when it unlocks. */
TEST_F(locks, setlkw_wakes_on_lower_unlock)
{
	struct holder h;
	int r[2], i, waiting = 0, early;
	pid_t pid;

	ASSERT_EQ(0, holder_start(&self->x, &h, self->l, LK_POSIX));
	ASSERT_EQ(0, pipe(r));
	pid = lr_fork(&self->x);
	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned char c;
		int fd;

		close(r[0]);
		close_others(r[1], -1);
		fd = open(self->m, O_RDWR);
		c = fd < 0 ? errno : do_lock(fd, LK_POSIX, F_WRLCK, 0, 200, 1);
		_exit(write(r[1], &c, 1) == 1 ? 0 : 1);
	}
	close(r[1]);
	/* /proc/locks lists a blocked request as "->" with the waiter's pid. */
	for (i = 0; i <= WAIT_MS / 10 && !waiting; i++) {
		char line[256];
		FILE *f = fopen("/proc/locks", "r");
		struct pollfd p = { .fd = r[0], .events = POLLIN };

		ASSERT_NE(NULL, f);
		while (fgets(line, sizeof(line), f)) {
			char *arrow = strstr(line, "->");
			int lpid;

			if (arrow && sscanf(arrow + 2, "%*s %*s %*s %d",
					    &lpid) == 1 && lpid == pid)
				waiting = 1;
		}
		fclose(f);
		if (!waiting && poll(&p, 1, 10) == 1)
			break;		/* it returned without waiting */
	}
	early = read_byte(r[0], 0);
	EXPECT_EQ(-1, early) {
		TH_LOG("F_SETLKW through aheadfs returned %d while the lower lock was held",
		       early);
	}
	EXPECT_TRUE(waiting) {
		TH_LOG("no blocked lock request of pid %d in /proc/locks", pid);
	}
	ASSERT_EQ(0, holder_do(&h, 'u'));
	if (early < 0) {
		EXPECT_EQ(0, read_byte(r[0], WAIT_MS)) {
			TH_LOG("F_SETLKW did not return 0 after the unlock");
		}
	}
	close(r[0]);
	EXPECT_EQ(0, lr_wait(&self->x, pid, WAIT_MS, NULL));
	holder_stop(&self->x, &h);
}

/* OFD locks conflict between the lower and aheadfs both ways and across mounts, and go with the last close. */
TEST_F(locks, ofd_both_ways)
{
	struct flock fl;
	int lfd, mfd, mfd2, m2fd;

	lfd = open(self->l, O_RDWR);
	mfd = open(self->m, O_RDWR);
	m2fd = open(self->m2, O_RDWR);
	ASSERT_LE(0, lfd);
	ASSERT_LE(0, mfd);
	ASSERT_LE(0, m2fd);

	/* Held on the lower: refused through aheadfs, which reports it. */
	ASSERT_EQ(0, do_lock(lfd, LK_OFD, F_WRLCK, HOLD_START, HOLD_LEN, 0));
	EXPECT_EQ(EAGAIN, do_lock(mfd, LK_OFD, F_WRLCK, 0, 200, 0));
	fl = get_lock(mfd, LK_OFD);
	EXPECT_EQ(F_WRLCK, fl.l_type);
	EXPECT_EQ(-1, fl.l_pid);
	EXPECT_EQ(HOLD_START, fl.l_start);
	EXPECT_EQ(HOLD_LEN, fl.l_len);
	close(lfd);
	EXPECT_EQ(0, do_lock(mfd, LK_OFD, F_WRLCK, 0, 200, 0));

	/* Held through aheadfs: refused on the lower and through mnt2. */
	lfd = open(self->l, O_RDWR);
	ASSERT_LE(0, lfd);
	EXPECT_EQ(EAGAIN, do_lock(lfd, LK_OFD, F_WRLCK, 0, 200, 0));
	EXPECT_EQ(EAGAIN, do_lock(m2fd, LK_OFD, F_WRLCK, 0, 200, 0));
	fl = get_lock(lfd, LK_OFD);
	EXPECT_EQ(F_WRLCK, fl.l_type);
	/* It belongs to the open file: one close of two fds keeps it. */
	mfd2 = dup(mfd);
	ASSERT_LE(0, mfd2);
	close(mfd);
	EXPECT_EQ(EAGAIN, do_lock(lfd, LK_OFD, F_WRLCK, 0, 200, 0));
	close(mfd2);
	EXPECT_EQ(0, do_lock(lfd, LK_OFD, F_WRLCK, 0, 200, 0));
	close(lfd);
	close(m2fd);
}

/* flock(LOCK_EX|LOCK_NB) conflicts between the lower and aheadfs both ways and across mounts, released at close. */
TEST_F(locks, flock_both_ways)
{
	int lfd, mfd, m2fd;

	lfd = open(self->l, O_RDWR);
	mfd = open(self->m, O_RDWR);
	m2fd = open(self->m2, O_RDWR);
	ASSERT_LE(0, lfd);
	ASSERT_LE(0, mfd);
	ASSERT_LE(0, m2fd);

	ASSERT_EQ(0, do_lock(lfd, LK_FLOCK, F_WRLCK, 0, 0, 0));
	EXPECT_EQ(EWOULDBLOCK, do_lock(mfd, LK_FLOCK, F_WRLCK, 0, 0, 0));
	EXPECT_EQ(EWOULDBLOCK, do_lock(m2fd, LK_FLOCK, F_WRLCK, 0, 0, 0));
	close(lfd);
	EXPECT_EQ(0, do_lock(mfd, LK_FLOCK, F_WRLCK, 0, 0, 0));

	lfd = open(self->l, O_RDWR);
	ASSERT_LE(0, lfd);
	EXPECT_EQ(EWOULDBLOCK, do_lock(lfd, LK_FLOCK, F_WRLCK, 0, 0, 0));
	EXPECT_EQ(EWOULDBLOCK, do_lock(m2fd, LK_FLOCK, F_WRLCK, 0, 0, 0));
	close(mfd);
	EXPECT_EQ(0, do_lock(lfd, LK_FLOCK, F_WRLCK, 0, 0, 0));
	EXPECT_EQ(EWOULDBLOCK, do_lock(m2fd, LK_FLOCK, F_WRLCK, 0, 0, 0));
	close(lfd);
	EXPECT_EQ(0, do_lock(m2fd, LK_FLOCK, F_WRLCK, 0, 0, 0));
	close(m2fd);
}

/* F_SETLEASE through aheadfs fails EINVAL, where the lower grants it. */
TEST_F(locks, lease_refused)
{
	int fd;

	fd = open(self->l, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fcntl(fd, F_SETLEASE, F_RDLCK));
	EXPECT_EQ(F_RDLCK, fcntl(fd, F_GETLEASE));
	EXPECT_EQ(0, fcntl(fd, F_SETLEASE, F_UNLCK));
	close(fd);

	fd = open(self->m, O_RDONLY);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, fcntl(fd, F_SETLEASE, F_RDLCK));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(F_UNLCK, fcntl(fd, F_GETLEASE));
	close(fd);
}

/*
 * A read lease held on the lower file is broken by an open for writing:
 * the holder gets SIGIO and sees F_GETLEASE turn to F_UNLCK (the lease
 * being broken), and the opener waits until the holder gives the lease
 * up, then opens.  The same through aheadfs as on the lower directly:
 * aheadfs opens the lower file at each open with the caller's flags, and
 * the lower's open breaks the lease.
 */
TEST_F_TIMEOUT(locks, lower_lease_broken_by_open, 60)
{
	const char *paths[] = { self->l, self->m };
	int side;

	for (side = 0; side < 2; side++) {
		int c[2], a[2], status;
		pid_t holder, opener;

		ASSERT_EQ(0, pipe(c));
		ASSERT_EQ(0, pipe(a));
		holder = lr_fork(&self->x);
		ASSERT_LE(0, holder);
		if (!holder) {
			struct timespec ts = { WAIT_MS / 1000, 0 };
			unsigned char r;
			sigset_t io;
			int fd;

			close_others(c[0], a[1]);
			sigemptyset(&io);
			sigaddset(&io, SIGIO);
			sigprocmask(SIG_BLOCK, &io, NULL);
			fd = open(self->l, O_RDONLY);
			r = fd < 0 ? errno : err_of(fcntl(fd, F_SETLEASE, F_RDLCK));
			if (write(a[1], &r, 1) != 1 || r)
				_exit(1);
			/* The break: SIGIO, and the lease is going. */
			r = sigtimedwait(&io, NULL, &ts) == SIGIO ?
			    fcntl(fd, F_GETLEASE) : 'T';
			if (write(a[1], &r, 1) != 1 || read(c[0], &r, 1) != 1)
				_exit(1);
			r = err_of(fcntl(fd, F_SETLEASE, F_UNLCK));
			if (write(a[1], &r, 1) != 1)
				_exit(1);
			_exit(0);
		}
		close(c[0]);
		close(a[1]);
		ASSERT_EQ(0, read_byte(a[0], WAIT_MS)) {
			TH_LOG("no read lease on the lower");
		}
		opener = lr_fork(&self->x);
		ASSERT_LE(0, opener);
		if (!opener) {
			int fd = open(paths[side], O_WRONLY);

			_exit(fd < 0 ? errno : 0);
		}
		EXPECT_EQ(F_UNLCK, read_byte(a[0], WAIT_MS)) {
			TH_LOG("an open for writing %s did not break the lower's lease",
			       side ? "through aheadfs" : "on the lower");
		}
		/* The default lease-break-time is 45 s: well beyond this. */
		EXPECT_EQ(0, waitpid(opener, &status, WNOHANG)) {
			TH_LOG("the opener %s did not wait for the lease holder",
			       side ? "through aheadfs" : "on the lower");
		}
		ASSERT_EQ(1, write(c[1], "u", 1));
		EXPECT_EQ(0, read_byte(a[0], WAIT_MS));
		ASSERT_EQ(0, lr_wait(&self->x, opener, WAIT_MS, &status)) {
			TH_LOG("the opener is still blocked after the lease went");
		}
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) {
			TH_LOG("open for writing %s: %s",
			       side ? "through aheadfs" : "on the lower",
			       strerror(WEXITSTATUS(status)));
		}
		ASSERT_EQ(0, lr_wait(&self->x, holder, WAIT_MS, &status));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
		close(c[1]);
		close(a[0]);
	}
}

/* ------------------------------------------------------------------ */
/* ACLs                                                                */
/* ------------------------------------------------------------------ */

FIXTURE(acl) {
	struct lr x;
};

FIXTURE_SETUP(acl)
{
	LR_SETUP(&self->x, lr_init(&self->x, "acl", ""));
}

FIXTURE_TEARDOWN(acl)
{
	lr_cleanup(_metadata, &self->x);
}

/* `getfacl --omit-header @path` into @out (with any error); its exit status. */
static int getfacl(const char *path, char *out, size_t len)
{
	char cmd[PATH_MAX + 64];
	size_t n;
	FILE *f;
	int st;

	ahfs_fmt(cmd, sizeof(cmd), "getfacl --absolute-names --omit-header '%s' 2>&1", path);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The ACL xattr @name of @path: its length (bytes in @v), or -errno. */
static int acl_bytes(const char *path, const char *name, char *v, size_t len)
{
	ssize_t n = getxattr(path, name, v, len);

	return n < 0 ? -errno : (int)n;
}

/*
 * getfacl through aheadfs (@m) and on the lower (@l) agree, as do the raw
 * ACL xattrs; the aheadfs text is left in @out.
 */
static void same_acl(struct __test_metadata *_metadata, const char *m,
		     const char *l, char *out, size_t len)
{
	char lo[4096], vm[1024], vl[1024];
	static const char *const names[] = {
		"system.posix_acl_access", "system.posix_acl_default",
	};
	int i, nm, nl;

	ASSERT_EQ(0, getfacl(m, out, len)) {
		TH_LOG("getfacl through aheadfs: %s", out);
	}
	ASSERT_EQ(0, getfacl(l, lo, sizeof(lo)));
	EXPECT_STREQ(lo, out) {
		TH_LOG("getfacl differs; on the lower:\n%s", lo);
	}
	for (i = 0; i < 2; i++) {
		nm = acl_bytes(m, names[i], vm, sizeof(vm));
		nl = acl_bytes(l, names[i], vl, sizeof(vl));
		EXPECT_EQ(nl, nm) {
			TH_LOG("%s: %d bytes on the lower, %d through aheadfs",
			       names[i], nl, nm);
		}
		if (nm == nl && nm > 0) {
			EXPECT_EQ(0, memcmp(vm, vl, nm));
		}
	}
}

static int try_write(void *arg)
{
	int fd = open(arg, O_WRONLY);

	return fd < 0 ? errno : (close(fd), 0);
}

static int acl_supported(const char *dir)
{
	char p[PATH_MAX];

	if (ahfs_put(at(p, dir, "probe"), ""))
		return -EIO;
	if (setxattr(p, "system.posix_acl_access", acl_value,
		     sizeof(acl_value), 0))
		return -errno;
	return unlink(p) ? -errno : 0;
}

/* setfacl -m/-x/-b through aheadfs shows at once on both sides; a second -m keeps the first entry (no stale write-back). */
TEST_F(acl, modify_through_aheadfs)
{
	char m[PATH_MAX], l[PATH_MAX], out[4096];
	int err = acl_supported(self->x.fs.lower);

	if (err)
		SKIP(return, "the %s lower has no POSIX ACLs: %s",
		     ahfs_fstype(), strerror(-err));
	ASSERT_EQ(0, ahfs_put(at(l, self->x.fs.lower, "f"), "acl"));
	ASSERT_EQ(0, chmod(l, 0640));
	at(m, self->x.fs.mnt, "f");
	/* Read first, so that anything aheadfs caches is now filled. */
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_STREQ("user::rw-\ngroup::r--\nother::---\n\n", out);
	EXPECT_EQ(EACCES, ahfs_as_user(1234, try_write, m));

	ASSERT_EQ(0, ahfs_run("setfacl -m u:1234:rw '%s'", m));
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_NE(NULL, strstr(out, "user:1234:rw-\n"));
	EXPECT_NE(NULL, strstr(out, "mask::rw-\n"));
	/* The ACL is what the lower enforces, through aheadfs too. */
	EXPECT_EQ(0, ahfs_as_user(1234, try_write, m));
	EXPECT_EQ(0, ahfs_as_user(1234, try_write, l));

	/* The reported data loss: this -m wrote back a stale ACL. */
	ASSERT_EQ(0, ahfs_run("setfacl -m g:2345:x '%s'", m));
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_NE(NULL, strstr(out, "user:1234:rw-\n")) {
		TH_LOG("user:1234 lost by a later setfacl -m:\n%s", out);
	}
	EXPECT_NE(NULL, strstr(out, "group:2345:--x\n"));

	ASSERT_EQ(0, ahfs_run("setfacl -x u:1234 '%s'", m));
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_EQ(NULL, strstr(out, "user:1234"));
	EXPECT_NE(NULL, strstr(out, "group:2345:--x\n"));
	EXPECT_EQ(EACCES, ahfs_as_user(1234, try_write, m));

	ASSERT_EQ(0, ahfs_run("setfacl -b '%s'", m));
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_STREQ("user::rw-\ngroup::r--\nother::---\n\n", out);
}

/* An ACL set or removed directly on the lower is seen at once through aheadfs. */
TEST_F(acl, lower_change_seen)
{
	char m[PATH_MAX], l[PATH_MAX], out[4096];
	int err = acl_supported(self->x.fs.lower);

	if (err)
		SKIP(return, "the %s lower has no POSIX ACLs: %s",
		     ahfs_fstype(), strerror(-err));
	ASSERT_EQ(0, ahfs_put(at(l, self->x.fs.lower, "f"), "acl"));
	ASSERT_EQ(0, chmod(l, 0640));
	at(m, self->x.fs.mnt, "f");
	same_acl(_metadata, m, l, out, sizeof(out));

	ASSERT_EQ(0, ahfs_run("setfacl -m u:1234:r '%s'", l));
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_NE(NULL, strstr(out, "user:1234:r--\n"));

	ASSERT_EQ(0, ahfs_run("setfacl -m u:1234:rw,g:2345:r '%s'", l));
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_NE(NULL, strstr(out, "user:1234:rw-\n"));
	EXPECT_NE(NULL, strstr(out, "group:2345:r--\n"));

	ASSERT_EQ(0, ahfs_run("setfacl -b '%s'", l));
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_EQ(NULL, strstr(out, "user:1234"));
}

/* A default ACL set through aheadfs round-trips, is inherited by a file created through aheadfs, and -k removes it. */
TEST_F(acl, default_acl_dir)
{
	char m[PATH_MAX], l[PATH_MAX], out[4096];
	int err = acl_supported(self->x.fs.lower);

	if (err)
		SKIP(return, "the %s lower has no POSIX ACLs: %s",
		     ahfs_fstype(), strerror(-err));
	ASSERT_EQ(0, mkdir(at(l, self->x.fs.lower, "d"), 0750));
	at(m, self->x.fs.mnt, "d");
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_EQ(NULL, strstr(out, "default:"));

	ASSERT_EQ(0, ahfs_run("setfacl -d -m u:1234:rwx '%s'", m));
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_NE(NULL, strstr(out, "default:user:1234:rwx\n"));

	ASSERT_EQ(0, ahfs_put(at(m, self->x.fs.mnt, "d/new"), "inherit"));
	at(l, self->x.fs.lower, "d/new");
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_NE(NULL, strstr(out, "user:1234:rwx")) {
		TH_LOG("the new file did not inherit the default ACL:\n%s", out);
	}

	at(m, self->x.fs.mnt, "d");
	at(l, self->x.fs.lower, "d");
	ASSERT_EQ(0, ahfs_run("setfacl -k '%s'", m));
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_EQ(NULL, strstr(out, "default:"));
}

/* `unshare -U -r @cmd '@path'` (root mapped to root only): its exit status, its output in @out. */
static int in_userns(const char *cmd, const char *path, char *out, size_t len)
{
	char line[2 * PATH_MAX];
	size_t n;
	FILE *f;
	int st;

	ahfs_fmt(line, sizeof(line), "unshare -U -r %s '%s' 2>&1", cmd, path);
	f = popen(line, "r");
	if (!f)
		return -1;
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* In a user namespace, ACLs read the same through aheadfs as on the lower (unmapped ids munged alike), and a change made there lands on the lower. */
TEST_F_TIMEOUT(acl, user_namespace, 120)
{
	char m[PATH_MAX], l[PATH_MAX], out[4096], lo[4096];
	struct buf before = {}, after = {};
	int err = acl_supported(self->x.fs.lower), rm, rl;

	if (err)
		SKIP(return, "the %s lower has no POSIX ACLs: %s",
		     ahfs_fstype(), strerror(-err));
	if (in_userns("true", "", out, sizeof(out)))
		SKIP(return, "unshare -U -r does not work here: %.200s", out);
	ASSERT_EQ(0, ahfs_put(at(l, self->x.fs.lower, "f"), "acl"));
	ASSERT_EQ(0, chmod(l, 0640));
	ASSERT_EQ(0, ahfs_run("setfacl -m u:1234:rw '%s'", l));
	at(m, self->x.fs.mnt, "f");

	/* 1234 has no id inside: both show it alike, as no id (-1) or the overflow uid. */
	ASSERT_EQ(0, in_userns("getfacl --absolute-names --omit-header", m,
			       out, sizeof(out))) {
		TH_LOG("%s", out);
	}
	ASSERT_EQ(0, in_userns("getfacl --absolute-names --omit-header", l,
			       lo, sizeof(lo)));
	EXPECT_STREQ(lo, out);
	EXPECT_EQ(NULL, strstr(out, "1234"));
	EXPECT_TRUE(strstr(out, "user:4294967295:rw-") ||
		    strstr(out, "user:nobody:rw-") ||
		    strstr(out, "user:65534:rw-")) {
		TH_LOG("%s", out);
	}

	/* Writing the overflow uid back is refused alike; nothing changes. */
	snapshot(&before, self->x.fs.lower, ".");
	rm = in_userns("setfacl -m g::rw", m, out, sizeof(out));
	rl = in_userns("setfacl -m g::rw", l, lo, sizeof(lo));
	EXPECT_EQ(rl, rm) {
		TH_LOG("inside: on the lower %d (%s), through aheadfs %d (%s)",
		       rl, lo, rm, out);
	}
	snapshot(&after, self->x.fs.lower, ".");
	ASSERT_NE(NULL, before.p);
	ASSERT_NE(NULL, after.p);
	if (!rl && !rm) {
		/* Both may be accepted: then both made the same change. */
		TH_LOG("setfacl inside the namespace was accepted on both sides");
	} else {
		EXPECT_STREQ(before.p, after.p) {
			TH_LOG("the lower changed: %s",
			       first_diff(before.p, after.p));
		}
	}
	free(before.p);
	free(after.p);

	/* A mapped id set inside through aheadfs is root's entry outside. */
	ASSERT_EQ(0, ahfs_put(at(l, self->x.fs.lower, "g"), "acl"));
	at(m, self->x.fs.mnt, "g");
	ASSERT_EQ(0, in_userns("setfacl -m u:0:rwx", m, out, sizeof(out))) {
		TH_LOG("setfacl through aheadfs inside the namespace: %s", out);
	}
	same_acl(_metadata, m, l, out, sizeof(out));
	EXPECT_NE(NULL, strstr(out, "user:root:rwx\n"));
}

/* ------------------------------------------------------------------ */
/* Idmapped mounts                                                     */
/* ------------------------------------------------------------------ */

#define MAP_FROM	10000
#define MAP_COUNT	65536

static int sys_open_tree(int dfd, const char *path, unsigned int flags)
{
	return syscall(SYS_open_tree, dfd, path, flags);
}

static int sys_mount_setattr(int dfd, const char *path, unsigned int flags,
			     struct mount_attr *attr)
{
	return syscall(SYS_mount_setattr, dfd, path, flags, attr,
		       sizeof(*attr));
}

static int sys_move_mount(int from_dfd, const char *from, int to_dfd,
			  const char *to, unsigned int flags)
{
	return syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

/*
 * A user namespace where ids 0..MAP_COUNT-1 are MAP_FROM..: an idmapped
 * mount with it shows on-disk uid 0 as MAP_FROM.  Its fd, or -errno.
 */
static int make_userns(void)
{
	char path[64], map[64];
	int up[2], down[2], fd;
	unsigned char c = 0;
	pid_t pid;

	if (pipe(up) || pipe(down))
		return -errno;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		close(up[0]);
		close(down[1]);
		c = unshare(CLONE_NEWUSER) ? 'e' : 'u';
		if (write(up[1], &c, 1) != 1)
			_exit(1);
		/* Stay until the parent has the namespace's fd. */
		_exit(read(down[0], &c, 1) < 0);
	}
	close(up[1]);
	close(down[0]);
	if (read_byte(up[0], WAIT_MS) != 'u') {
		fd = -EPERM;
		goto out;
	}
	snprintf(map, sizeof(map), "0 %d %d\n", MAP_FROM, MAP_COUNT);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	fd = ahfs_write_file(path, map);
	if (fd)
		goto out;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
	fd = ahfs_write_file(path, map);
	if (fd)
		goto out;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
out:
	close(up[0]);
	close(down[1]);
	waitpid(pid, NULL, 0);
	return fd;
}

/* Make the detached copy @tree of a mount idmapped with @userns: 0 or errno. */
static int idmap_tree(int tree, int userns)
{
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_IDMAP,
		.userns_fd = userns,
	};

	return err_of(sys_mount_setattr(tree, "", AT_EMPTY_PATH, &attr));
}

FIXTURE(idmap) {
	struct lr x;
	int userns;
};

FIXTURE_SETUP(idmap)
{
	LR_SETUP(&self->x, lr_init(&self->x, "idmap", NULL));
	self->userns = make_userns();
	if (self->userns < 0)
		lr_cleanup(_metadata, &self->x);
	ASSERT_LE(0, self->userns) {
		TH_LOG("no user namespace: %s", strerror(-self->userns));
	}
}

FIXTURE_TEARDOWN(idmap)
{
	if (self->userns > 0)
		close(self->userns);
	lr_cleanup(_metadata, &self->x);
}

/* An idmapped aheadfs mount is refused with EINVAL; the same call on the lower's own mount succeeds. */
TEST_F(idmap, aheadfs_mount_refused)
{
	int tree, err;

	ASSERT_EQ(0, lr_aheadfs(&self->x, self->x.fs.lower, self->x.fs.mnt,
				"")) {
		TH_LOG("%s", lr_why);
	}
	/* Control: the lower (ext4, xfs) can be idmapped. */
	tree = sys_open_tree(AT_FDCWD, self->x.fs.lower,
			     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	ASSERT_LE(0, tree);
	EXPECT_EQ(0, idmap_tree(tree, self->userns));
	close(tree);

	tree = sys_open_tree(AT_FDCWD, self->x.fs.mnt,
			     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	ASSERT_LE(0, tree);
	err = idmap_tree(tree, self->userns);
	EXPECT_EQ(EINVAL, err) {
		TH_LOG("MOUNT_ATTR_IDMAP on an aheadfs mount: %s",
		       err ? strerror(err) : "succeeded");
	}
	close(tree);
}

/* uid of @path, (unsigned)-1 if stat fails. */
static uid_t uid_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? (uid_t)-1 : st.st_uid;
}

/*
 * An idmapped lower is refused (aheadfs would have to map every owner and
 * ACL both ways): mounting over one fails with EINVAL and one dmesg line,
 * where the same mount over the plain lower works.
 */
TEST_F(idmap, idmapped_lower_refused)
{
	char idm[PATH_MAX], p[PATH_MAX];
	int tree, kfd;

	ASSERT_EQ(0, ahfs_put(at(p, self->x.fs.lower, "rootf"), "0"));
	/* The idmapped lower: on-disk 0..65535 shows as 10000..75535. */
	ahfs_fmt(idm, sizeof(idm), "%s/idm", self->x.fs.base);
	ASSERT_EQ(0, mkdir(idm, 0755));
	tree = sys_open_tree(AT_FDCWD, self->x.fs.lower,
			     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	ASSERT_LE(0, tree);
	ASSERT_EQ(0, idmap_tree(tree, self->userns));
	ASSERT_EQ(0, sys_move_mount(tree, "", AT_FDCWD, idm,
				    MOVE_MOUNT_F_EMPTY_PATH));
	ahfs_fmt(self->x.mnts[self->x.nmnts++], PATH_MAX, "%s", idm);
	close(tree);
	/* Control: the idmapped mount maps, so the refusal is about it. */
	ASSERT_EQ(MAP_FROM, uid_of(at(p, idm, "rootf")));

	kfd = ahfs_kmsg_open();
	ASSERT_LE(0, kfd);
	EXPECT_EQ(-1, mount(idm, self->x.fs.mnt, "aheadfs", 0, ""));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_TRUE(ahfs_kmsg_grep(kfd, "is an idmapped mount: not supported"));
	close(kfd);

	/* The plain lower mounts. */
	ASSERT_EQ(0, lr_aheadfs(&self->x, self->x.fs.lower, self->x.fs.mnt, ""));
	EXPECT_EQ(0, uid_of(at(p, self->x.fs.mnt, "rootf")));
}

/* ------------------------------------------------------------------ */
/* Case-insensitive lowers                                             */
/* ------------------------------------------------------------------ */

FIXTURE(casefold) {
	struct lr x;
};

FIXTURE_SETUP(casefold)
{
	LR_SETUP(&self->x, lr_init(&self->x, "casefold", NULL));
}

FIXTURE_TEARDOWN(casefold)
{
	lr_cleanup(_metadata, &self->x);
}

/*
 * An ext4 with the casefold feature (a directory with +F finds "NAME" as
 * "Name" on the lower directly) is refused as a lower: EINVAL and one line
 * in the kernel log, not a mount where every create fails ESTALE.
 */
TEST_F_TIMEOUT(casefold, ext4_casefold_refused, 120)
{
	char img[PATH_MAX], p[PATH_MAX];
	int kfd, fd;

	ahfs_fmt(img, sizeof(img), "%s/cf.img", self->x.fs.base);
	ASSERT_EQ(0, ahfs_run("truncate -s 64M '%s' && mkfs.ext4 -q -F -O casefold '%s' >/dev/null && mount -o loop '%s' '%s'",
			      img, img, img, self->x.fs.lower));
	ahfs_fmt(self->x.mnts[self->x.nmnts++], PATH_MAX, "%s", self->x.fs.lower);
	ASSERT_EQ(0, ahfs_run("mkdir '%s/d' && chattr +F '%s/d' && touch '%s/d/Name'",
			      self->x.fs.lower, self->x.fs.lower, self->x.fs.lower));
	/* Control: the lower folds case. */
	fd = open(at(p, self->x.fs.lower, "d/NAME"), O_RDONLY);
	ASSERT_LE(0, fd);
	close(fd);

	kfd = ahfs_kmsg_open();
	ASSERT_LE(0, kfd);
	EXPECT_EQ(-1, mount(self->x.fs.lower, self->x.fs.mnt, "aheadfs", 0, ""));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_TRUE(ahfs_kmsg_grep(kfd, "has case-insensitive names: not supported"));
	close(kfd);
}

/* ------------------------------------------------------------------ */
/* FIFOs and UNIX sockets                                              */
/* ------------------------------------------------------------------ */

FIXTURE(ipc) {
	struct lr x;
};

FIXTURE_SETUP(ipc)
{
	LR_SETUP(&self->x, lr_init(&self->x, "ipc", ""));
}

FIXTURE_TEARDOWN(ipc)
{
	lr_cleanup(_metadata, &self->x);
}

/* connect(2) to the UNIX socket at @path: 0 or errno. */
static int unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0), err = 0;

	if (fd < 0)
		return errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		err = errno;
	close(fd);
	return err;
}

/*
 * The documented limit (Documentation/aheadfs.rst, "FIFOs and UNIX
 * sockets"): a socket bound on the lower is reached on the lower and not
 * through aheadfs (ECONNREFUSED), and a FIFO's reader on the lower is not
 * a reader of the FIFO opened through aheadfs (ENXIO for a non-blocking
 * writer), while a reader and a writer through aheadfs meet.
 */
TEST_F_TIMEOUT(ipc, fifo_and_socket_do_not_cross_layers, 60)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char l[PATH_MAX], m[PATH_MAX], c;
	int s, r, w;

	at(l, self->x.fs.lower, "sock");
	at(m, self->x.fs.mnt, "sock");
	ASSERT_LT(strlen(l), sizeof(sa.sun_path));
	ASSERT_LT(strlen(m), sizeof(sa.sun_path));
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_LE(0, s);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", l);
	ASSERT_EQ(0, bind(s, (struct sockaddr *)&sa, sizeof(sa)));
	ASSERT_EQ(0, listen(s, 4));
	EXPECT_EQ(0, unix_connect(l));
	EXPECT_EQ(ECONNREFUSED, unix_connect(m));
	close(s);

	at(l, self->x.fs.lower, "fifo");
	at(m, self->x.fs.mnt, "fifo");
	ASSERT_EQ(0, mkfifo(l, 0644));
	r = open(l, O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, r);
	w = open(m, O_WRONLY | O_NONBLOCK);
	EXPECT_EQ(-1, w);
	EXPECT_EQ(ENXIO, errno);
	if (w >= 0)
		close(w);
	close(r);
	/* Through aheadfs on both ends: they meet. */
	r = open(m, O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, r);
	w = open(m, O_WRONLY | O_NONBLOCK);
	ASSERT_LE(0, w);
	EXPECT_EQ(1, write(w, "x", 1));
	EXPECT_EQ(1, read(r, &c, 1));
	close(w);
	close(r);
}

/* ------------------------------------------------------------------ */
/* RWF_NOWAIT                                                          */
/* ------------------------------------------------------------------ */

/*
 * The lower is a filesystem on a device-mapper device of its own, so that
 * its I/O can be held (dmsetup suspend) while the RWF_NOWAIT reads run: a
 * cold read then cannot be completed by a fast device before the kernel
 * checks the page (which otherwise makes EAGAIN a race), and a read that
 * would wait for I/O shows as one that does not return.
 */
FIXTURE(nowait) {
	struct lr x;
	char why[256];		/* why there is no dm device */
};

#define COLD_SIZE	(4 << 20)
#define WATCH_MS	2000	/* how long the counters are watched after it */

static int nowait_prepare(struct lr *x, char *why)
{
	const char *fstype = strcmp(ahfs_fstype(), "xfs") ? "ext4" : "xfs";
	long long size = strcmp(fstype, "xfs") ? 64 << 20 : 320 << 20;
	char img[PATH_MAX], dev[PATH_MAX], cmd[PATH_MAX + 64];
	FILE *f;
	int err;

	err = lr_init(x, "nowait", NULL);
	if (err)
		return err;
	ahfs_run("modprobe dm-mod 2>/dev/null");
	if (access("/dev/mapper/control", F_OK) ||
	    ahfs_run("dmsetup version >/dev/null 2>&1")) {
		snprintf(why, 256, "no device-mapper (dm-mod, dmsetup) to hold the lower's I/O");
		return 0;
	}
	ahfs_fmt(img, sizeof(img), "%s/img", x->fs.base);
	if (ahfs_run("truncate -s %lld '%s'", size, img))
		return fail(-EIO, "truncate", img);
	ahfs_fmt(cmd, sizeof(cmd), "losetup -f --show '%s'", img);
	f = popen(cmd, "r");
	if (!f || !fgets(x->loopdev, sizeof(x->loopdev), f)) {
		if (f)
			pclose(f);
		x->loopdev[0] = 0;
		return fail(-EIO, "losetup", img);
	}
	pclose(f);
	x->loopdev[strcspn(x->loopdev, "\n")] = 0;
	snprintf(x->dm, sizeof(x->dm), "lr-nowait-%d", getpid());
	if (ahfs_run("DM_DISABLE_UDEV=1 dmsetup create %s --table '0 %lld linear %s 0'",
		     x->dm, size >> 9, x->loopdev)) {
		x->dm[0] = 0;
		return fail(-EIO, "dmsetup create on", x->loopdev);
	}
	ahfs_fmt(dev, sizeof(dev), "/dev/mapper/%s", x->dm);
	/* No lazy initialisation writing behind the test's back. */
	if (strcmp(fstype, "xfs") ?
	    ahfs_run("mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 %s", dev) :
	    ahfs_run("mkfs.xfs -q -f %s", dev))
		return fail(-EIO, "mkfs", dev);
	err = lr_mount(x, dev, x->fs.lower, fstype, 0, NULL);
	if (err)
		return err;
	err = lr_start_guard(x, NULL);
	if (!err)
		err = lr_aheadfs(x, x->fs.lower, x->fs.mnt, "");
	if (!err && ahfs_find_sysfs(&x->fs))
		err = fail(-ENOENT, "no sysfs directory for", x->fs.mnt);
	return err;
}

FIXTURE_SETUP(nowait)
{
	LR_SETUP(&self->x, nowait_prepare(&self->x, self->why));
}

FIXTURE_TEARDOWN(nowait)
{
	lr_cleanup(_metadata, &self->x);
}

/* Pages of the first @len bytes of @fd in the page cache, or -1. */
static long resident(int fd, size_t len)
{
	static unsigned char vec[COLD_SIZE / 4096 + 1];
	long n = 0;
	size_t i;
	void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -1;
	if (mincore(p, len, vec))
		n = -1;
	for (i = 0; n >= 0 && i < (len + 4095) / 4096; i++)
		n += vec[i] & 1;
	munmap(p, len);
	return n;
}

/* Drop @fd's pages (once reads in flight are done); 0 when none is left. */
static int make_cold(int fd)
{
	int i;

	for (i = 0; i <= WAIT_MS / 10; i++) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		if (!resident(fd, COLD_SIZE))
			return 0;
		usleep(10000);
	}
	return -1;
}

/*
 * preadv2(RWF_NOWAIT) of 1 MiB at 0, in a child: its result (errno in
 * *@err), or -2 if it did not return within 5 s (it waits for the device).
 */
static ssize_t read_nowait(struct lr *x, int fd, int *err)
{
	long *res = x->shared;
	pid_t pid = lr_fork(x);
	int status;

	if (pid < 0)
		return -3;
	if (!pid) {
		static char buf[1 << 20];
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };

		errno = 0;
		res[0] = preadv2(fd, &iov, 1, 0, RWF_NOWAIT);
		res[1] = res[0] < 0 ? errno : 0;
		_exit(0);
	}
	x->nowait_pid = pid;
	if (lr_wait(x, pid, WAIT_MS, &status))
		return -2;
	*err = res[1];
	return res[0];
}

#define TRACEFS	"/sys/kernel/tracing"

static int trace_set(const char *file, const char *val)
{
	char path[PATH_MAX];

	return ahfs_write_file(ahfs_fmt(path, sizeof(path), "%s/%s", TRACEFS,
					file), val);
}

/* Empty the trace buffer (an open with O_TRUNC; a write of "" does not). */
static int trace_clear(void)
{
	int fd = open(TRACEFS "/trace", O_WRONLY | O_TRUNC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/*
 * The aheadfs_prefetch events in the trace buffer: how many, how many were
 * fired by task @pid (the chunk was issued in that task's context), and how
 * many by a kworker (aheadfs's worker) when @by_worker is not NULL.
 */
static int prefetch_events(pid_t pid, long *by_pid, long *by_worker)
{
	char line[1024], tag[32];
	FILE *f = fopen(TRACEFS "/trace", "r");
	int n = 0;

	*by_pid = 0;
	if (by_worker)
		*by_worker = 0;
	if (!f)
		return -1;
	/* "  comm-PID  [cpu] ..." */
	snprintf(tag, sizeof(tag), "-%d ", (int)pid);
	while (fgets(line, sizeof(line), f)) {
		char *ev = strstr(line, "aheadfs_prefetch:");
		char *t;

		if (line[0] == '#' || !ev)
			continue;
		n++;
		t = strstr(line, tag);
		if (t && t < ev)
			(*by_pid)++;
		t = strstr(line, "kworker/");
		if (by_worker && t && t < ev)
			(*by_worker)++;
	}
	fclose(f);
	return n;
}

/*
 * preadv2(RWF_NOWAIT) of a cold file returns through aheadfs what it does on
 * the lower (EAGAIN) without waiting, and the reader issues no prefetch of
 * its own.  Where the lower's own attempt starts readahead (RWF_NOWAIT is
 * IOCB_NOWAIT: 6.12), what the window plans is issued by aheadfs's worker
 * (counted in prefetch_chunks, traced, none in the reader's context);
 * where it starts no I/O (RWF_NOWAIT is also IOCB_NOIO: 6.1), nothing is
 * issued at all.
 */
TEST_F_TIMEOUT(nowait, cold_file, 120)
{
	static char buf[1 << 20];
	char l[PATH_MAX], m[PATH_MAX], filter[64];
	long long chunks, now = -1;
	long by_reader = 0;
	ssize_t nl, nm;
	int lfd, mfd, el = 0, em = 0, i, events, lower_io = 0;

	if (!self->x.dm[0])
		SKIP(return, "%s", self->why);
	if (access(TRACEFS "/events", F_OK))
		mount("nodev", TRACEFS, "tracefs", 0, NULL);
	ASSERT_EQ(0, access(TRACEFS "/events/aheadfs/aheadfs_prefetch", F_OK));
	ASSERT_EQ(0, ahfs_make_file(at(l, self->x.fs.lower, "cold"),
				    COLD_SIZE));
	lfd = open(l, O_RDWR);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, fsync(lfd));
	/* Opened before the device is held: only data I/O is left to do. */
	mfd = open(at(m, self->x.fs.mnt, "cold"), O_RDONLY);
	ASSERT_LE(0, mfd);

	ASSERT_EQ(0, make_cold(lfd));
	ASSERT_EQ(0, lr_suspend(&self->x));
	nl = read_nowait(&self->x, lfd, &el);
	ASSERT_NE(-2, nl) {
		TH_LOG("the lower's own RWF_NOWAIT read waited for the device");
	}
	ASSERT_EQ(-1, nl) {
		TH_LOG("the lower itself read %zd bytes of a cold file with RWF_NOWAIT",
		       nl);
	}
	ASSERT_EQ(EAGAIN, el);
	ASSERT_EQ(0, lr_resume(&self->x));
	/*
	 * Whether the lower's own attempt started readahead: it does where
	 * RWF_NOWAIT is IOCB_NOWAIT alone (6.12), and starts no I/O where it
	 * also means IOCB_NOIO (6.1).  Its pages are up to date, and so seen,
	 * once the device has read them: a bounded wait, as long as any
	 * wait for a state (a loaded TCG guest, or the debug kernel, takes
	 * seconds to complete the read).
	 */
	for (i = 0; i <= WAIT_MS / 10; i++) {
		lower_io = resident(lfd, COLD_SIZE) > 0;
		if (lower_io)
			break;
		usleep(10000);
	}

	/* Cold again. */
	ASSERT_EQ(0, make_cold(lfd));
	snprintf(filter, sizeof(filter), "dev == %u\n",
		 major(self->x.fs.dev) << 20 | minor(self->x.fs.dev));
	ASSERT_EQ(0, trace_set("events/aheadfs/aheadfs_prefetch/filter", filter));
	ASSERT_EQ(0, trace_clear());
	ASSERT_EQ(0, trace_set("events/aheadfs/aheadfs_prefetch/enable", "1"));
	chunks = ahfs_stat(&self->x.fs, "prefetch_chunks");
	ASSERT_LE(0, chunks);
	ASSERT_EQ(0, lr_suspend(&self->x));
	nm = read_nowait(&self->x, mfd, &em);
	EXPECT_NE(-2, nm) {
		TH_LOG("the RWF_NOWAIT read through aheadfs waited for the device");
	}
	EXPECT_EQ(nl, nm);
	EXPECT_EQ(el, em) {
		TH_LOG("through aheadfs: %zd, %s", nm, strerror(em));
	}
	/*
	 * What the worker issues is counted once its I/O could be
	 * submitted: release the device and give it a bounded while.
	 */
	ASSERT_EQ(0, lr_resume(&self->x));
	for (i = 0; i <= (lower_io ? WAIT_MS : WATCH_MS) / 10; i++) {
		now = ahfs_stat(&self->x.fs, "prefetch_chunks");
		events = prefetch_events(self->x.nowait_pid, &by_reader, NULL);
		if (now != chunks && events > 0)
			break;
		usleep(10000);
	}
	trace_set("events/aheadfs/aheadfs_prefetch/enable", "0");
	events = prefetch_events(self->x.nowait_pid, &by_reader, NULL);
	trace_set("events/aheadfs/aheadfs_prefetch/filter", "0\n");
	ASSERT_LE(0, events);
	TH_LOG("%lld chunks counted for the NOWAIT read, %d traced, %ld by the reader; the lower's own %s I/O",
	       now - chunks, events, by_reader, lower_io ? "started" : "started no");
	EXPECT_EQ(0, by_reader) {
		TH_LOG("the RWF_NOWAIT reader issued prefetch itself");
	}
	if (lower_io) {
		/*
		 * The read moved its stream's window all the same, and the
		 * worker issued it: counted, and traced.
		 */
		EXPECT_LT(chunks, now) {
			TH_LOG("nothing of the window the RWF_NOWAIT read planned was issued");
		}
		EXPECT_LT(0, events);
	} else if (now != chunks || events) {
		/*
		 * The lower's own attempt left no page: on 6.1 it starts no
		 * I/O (IOCB_NOIO); on 6.12 it starts readahead, which the
		 * suspended device may fail.  Which of the two it was cannot
		 * be told from here, so only the reader is held to it: what
		 * was issued, the worker issued (checked above), and all of
		 * it is traced.  nowait.uring_inline_attempt proves the
		 * worker issues the window on both kernels.
		 */
		EXPECT_EQ(now - chunks, events);
	}

	/*
	 * Control: a blocking read on a fresh open (a window of its own)
	 * does prefetch, and reads the data.
	 */
	close(mfd);
	mfd = open(m, O_RDONLY);
	ASSERT_LE(0, mfd);
	ASSERT_EQ(0, make_cold(lfd));
	chunks = ahfs_stat(&self->x.fs, "prefetch_chunks");
	now = ahfs_stat(&self->x.fs, "prefetch_demand_chunks");
	ASSERT_EQ(sizeof(buf), pread(mfd, buf, sizeof(buf), 0));
	EXPECT_EQ(0, ahfs_check_pattern((unsigned char *)buf, sizeof(buf), 0));
	/* Its own bytes as one request, and the next request's too. */
	EXPECT_EQ(now + 1, ahfs_stat(&self->x.fs, "prefetch_demand_chunks"));
	EXPECT_LT(chunks, ahfs_stat(&self->x.fs, "prefetch_chunks"));
	close(mfd);
	close(lfd);
}

/* ------------------------------------------------------------------ */
/* The caches' timeouts run out                                        */
/* ------------------------------------------------------------------ */

#define CACHE_MS	1500

FIXTURE(expiry) {
	struct lr x;
};

static int expiry_prepare(struct lr *x)
{
	char p[PATH_MAX], opts[256];
	int err;

	err = lr_init(x, "expiry", NULL);
	if (err)
		return err;
	if (ahfs_put(at(p, x->fs.lower, "f"), "0123456789") ||
	    chmod(p, 0644) || ahfs_put(at(p, x->fs.lower, "gone"), "g") ||
	    mkdir(at(p, x->fs.lower, "d"), 0755) ||
	    ahfs_put(at(p, x->fs.lower, "d/old"), "o"))
		return fail(-errno, "populate", x->fs.lower);
	snprintf(opts, sizeof(opts),
		 "attr_timeout_ms=%d,entry_timeout_ms=%d,negative_timeout_ms=%d,readdir_cache=1",
		 CACHE_MS, CACHE_MS, CACHE_MS);
	err = lr_aheadfs(x, x->fs.lower, x->fs.mnt, opts);
	if (!err && ahfs_find_sysfs(&x->fs))
		err = fail(-ENOENT, "no sysfs directory for", x->fs.mnt);
	return err;
}

FIXTURE_SETUP(expiry)
{
	LR_SETUP(&self->x, expiry_prepare(&self->x));
}

FIXTURE_TEARDOWN(expiry)
{
	lr_cleanup(_metadata, &self->x);
}

/* Whether directory @dir lists @name: 1, 0, or -errno. */
static int dir_lists(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int found = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		found |= !strcmp(de->d_name, name);
	closedir(d);
	return found;
}

/*
 * With every cache on (attr_timeout_ms, entry_timeout_ms,
 * negative_timeout_ms, readdir_cache), what the mount learnt is cached,
 * then changed on the lower directly: a chmod and a truncate of a file, a
 * name removed, a name created where the mount had found none, a name
 * created in a listed directory.  Once the timeout has run out from the
 * time the caches were filled, aheadfs shows every change.  Only the time
 * is waited for, never a state: what is served before the deadline is not
 * asserted (it depends on the host's speed).  The attribute and readdir
 * caches serve ext4 and xfs too; the entry and negative timeouts only skip
 * the revalidation of lowers that have one (NFS, FUSE), so on these lowers
 * the last three checks hold at once.
 */
TEST_F_TIMEOUT(expiry, lower_changes_seen_after_timeout, 60)
{
	char m[PATH_MAX], l[PATH_MAX];
	struct timespec deadline;
	struct stat st;

	/* Fill the caches: attributes, a positive, a negative entry, a listing. */
	ASSERT_EQ(0, stat(at(m, self->x.fs.mnt, "f"), &st));
	EXPECT_EQ(0644, st.st_mode & 07777);
	EXPECT_EQ(10, st.st_size);
	ASSERT_EQ(0, stat(at(m, self->x.fs.mnt, "gone"), &st));
	ASSERT_EQ(-1, stat(at(m, self->x.fs.mnt, "late"), &st));
	ASSERT_EQ(ENOENT, errno);
	ASSERT_EQ(1, dir_lists(at(m, self->x.fs.mnt, "d"), "old"));
	ASSERT_EQ(0, dir_lists(m, "new"));
	/* Every cache entry above is dated before this. */
	ASSERT_EQ(0, clock_gettime(CLOCK_MONOTONIC, &deadline));

	ASSERT_EQ(0, chmod(at(l, self->x.fs.lower, "f"), 0600));
	ASSERT_EQ(0, truncate(l, 3));
	ASSERT_EQ(0, unlink(at(l, self->x.fs.lower, "gone")));
	ASSERT_EQ(0, ahfs_put(at(l, self->x.fs.lower, "late"), "late"));
	ASSERT_EQ(0, ahfs_put(at(l, self->x.fs.lower, "d/new"), "new"));

	/* The timeout, and a few jiffies of slack. */
	deadline.tv_nsec += (CACHE_MS % 1000 + 50) * 1000000L;
	deadline.tv_sec += CACHE_MS / 1000 + deadline.tv_nsec / 1000000000L;
	deadline.tv_nsec %= 1000000000L;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline,
			       NULL) == EINTR)
		;

	ASSERT_EQ(0, stat(at(m, self->x.fs.mnt, "f"), &st));
	EXPECT_EQ(0600, st.st_mode & 07777) {
		TH_LOG("a chmod on the lower not seen after attr_timeout_ms");
	}
	EXPECT_EQ(3, st.st_size) {
		TH_LOG("a truncate on the lower not seen after attr_timeout_ms");
	}
	EXPECT_EQ(-1, stat(at(m, self->x.fs.mnt, "gone"), &st)) {
		TH_LOG("a name removed on the lower still there after entry_timeout_ms");
	}
	EXPECT_EQ(0, stat(at(m, self->x.fs.mnt, "late"), &st)) {
		TH_LOG("a name created on the lower still absent after negative_timeout_ms");
	}
	EXPECT_EQ(1, dir_lists(at(m, self->x.fs.mnt, "d"), "new")) {
		TH_LOG("a name created on the lower not listed after the timeout");
	}
	EXPECT_EQ(0, dir_lists(at(m, self->x.fs.mnt, "."), "gone"));
	TH_LOG("attr_cache_hits %lld, entry_cache_hits %lld, negative_cache_hits %lld, readdir_cache_hits %lld",
	       ahfs_stat(&self->x.fs, "attr_cache_hits"),
	       ahfs_stat(&self->x.fs, "entry_cache_hits"),
	       ahfs_stat(&self->x.fs, "negative_cache_hits"),
	       ahfs_stat(&self->x.fs, "readdir_cache_hits"));
}

/* ------------------------------------------------------------------ */
/* Clones across mounts                                                */
/* ------------------------------------------------------------------ */

FIXTURE(reflink) {
	struct lr x;
	char mnt2[PATH_MAX];	/* a second aheadfs mount of the lower */
	char bind[PATH_MAX];	/* a bind mount of the lower: the reference */
	char abind[PATH_MAX];	/* a bind mount of the first aheadfs mount */
	char other[PATH_MAX];	/* another filesystem (tmpfs) */
	char omnt[PATH_MAX];	/* aheadfs over it */
	int xfs;
};

static int reflink_prepare(struct lr *x, char *mnt2, char *bind, char *abind,
			   char *other, char *omnt)
{
	char p[PATH_MAX];
	int err;

	err = lr_init(x, "reflink", NULL);
	if (err)
		return err;
	if (ahfs_make_file(at(p, x->fs.lower, "src"), 1 << 20))
		return fail(-EIO, "populate", p);
	ahfs_fmt(mnt2, PATH_MAX, "%s/mnt2", x->fs.base);
	ahfs_fmt(bind, PATH_MAX, "%s/bind", x->fs.base);
	ahfs_fmt(abind, PATH_MAX, "%s/abind", x->fs.base);
	ahfs_fmt(other, PATH_MAX, "%s/other", x->fs.base);
	ahfs_fmt(omnt, PATH_MAX, "%s/omnt", x->fs.base);
	err = lr_aheadfs(x, x->fs.lower, x->fs.mnt, "");
	if (!err)
		err = lr_aheadfs(x, x->fs.lower, mnt2, "");
	if (!err)
		err = lr_bind(x, x->fs.lower, bind, 0);
	if (!err)
		err = lr_bind(x, x->fs.mnt, abind, 0);
	if (!err && mkdir(other, 0755))
		err = fail(-errno, "mkdir", other);
	if (!err)
		err = lr_mount(x, "tmpfs", other, "tmpfs", 0, "size=16m");
	if (!err && ahfs_make_file(at(p, other, "src"), 1 << 20))
		err = fail(-EIO, "populate", p);
	if (!err)
		err = lr_aheadfs(x, other, omnt, "");
	return err;
}

FIXTURE_SETUP(reflink)
{
	LR_SETUP(&self->x, reflink_prepare(&self->x, self->mnt2, self->bind,
					   self->abind, self->other,
					   self->omnt));
	self->xfs = !strcmp(ahfs_fstype(), "xfs");
}

FIXTURE_TEARDOWN(reflink)
{
	lr_cleanup(_metadata, &self->x);
}

/* Extents of @path flagged shared (FIEMAP), or -1. */
static int shared_extents(const char *path)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ext[64];
	} f = { .fm = { .fm_length = ~0ULL, .fm_extent_count = 64,
			.fm_flags = FIEMAP_FLAG_SYNC } };
	int fd = open(path, O_RDONLY), n = 0;
	unsigned int i;

	if (fd < 0)
		return -1;
	if (ioctl(fd, FS_IOC_FIEMAP, &f.fm)) {
		close(fd);
		return -1;
	}
	close(fd);
	for (i = 0; i < f.fm.fm_mapped_extents; i++)
		n += !!(f.ext[i].fe_flags & FIEMAP_EXTENT_SHARED);
	return n;
}

/*
 * FICLONE (@range 0) or FICLONERANGE of @src's first MiB onto @dst (made
 * empty): 0 or errno.
 */
static int clone_to(const char *src, const char *dst, int range)
{
	struct file_clone_range r = { .src_length = 1 << 20 };
	int in = open(src, O_RDONLY), err;
	int out = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (in < 0 || out < 0) {
		err = errno;
		goto out;
	}
	r.src_fd = in;
	err = err_of(range ? ioctl(out, FICLONERANGE, &r) :
			     ioctl(out, FICLONE, in));
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return err;
}

/* copy_file_range of @src's first MiB onto @dst (made empty): 0 or errno. */
static int copy_to(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY), err = 0;
	int out = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ssize_t n;

	if (in < 0 || out < 0) {
		err = errno;
		goto out;
	}
	n = copy_file_range(in, NULL, out, NULL, 1 << 20, 0);
	err = n < 0 ? errno : n == 1 << 20 ? 0 : EBADMSG;
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return err;
}

/*
 * FICLONE and FICLONERANGE within one aheadfs superblock work as on the
 * lower: within one mount, and across two mounts of it (a bind mount),
 * as within the lower and across it and a bind mount of it (xfs: a clone,
 * the extents shared on the lower; ext4: EOPNOTSUPP).  Two aheadfs mounts
 * of the same lower are two superblocks, and the VFS refuses a clone
 * across superblocks before aheadfs is asked: EXDEV, where the lower
 * clones across two of its mounts; copy_file_range across them clones on
 * the lower exactly when it does across the lower's two mounts.  Between
 * aheadfs and another filesystem: EXDEV, as directly.
 */
TEST_F(reflink, clone_across_mounts)
{
	const char *src_l = "src";
	char a[PATH_MAX], b[PATH_MAX], l[PATH_MAX];
	int range, direct, stacked, sd, ss, k;

	for (range = 0; range < 2; range++) {
		const char *how = range ? "FICLONERANGE" : "FICLONE";

		/* One superblock: within one mount, and to a bind mount of it. */
		for (k = 0; k < 2; k++) {
			char ln[16], mn[16];

			snprintf(ln, sizeof(ln), "l-%d-%d", range, k);
			snprintf(mn, sizeof(mn), "m-%d-%d", range, k);
			direct = clone_to(at(a, self->x.fs.lower, src_l),
					  at(b, k ? self->bind : self->x.fs.lower,
					     ln), range);
			stacked = clone_to(at(a, self->x.fs.mnt, src_l),
					   at(b, k ? self->abind : self->x.fs.mnt,
					      mn), range);
			EXPECT_EQ(self->xfs ? 0 : EOPNOTSUPP, direct);
			EXPECT_EQ(direct, stacked) {
				TH_LOG("%s %s: lower %s, aheadfs %s", how,
				       k ? "to a bind mount" : "within one mount",
				       strerror(direct), strerror(stacked));
			}
			sd = shared_extents(at(l, self->x.fs.lower, ln));
			ss = shared_extents(at(l, self->x.fs.lower, mn));
			EXPECT_EQ(!!sd, !!ss) {
				TH_LOG("%s %s: shared extents on the lower %d, through aheadfs %d",
				       how, k ? "to a bind mount" : "within one mount",
				       sd, ss);
			}
			if (self->xfs) {
				EXPECT_LT(0, ss);
				EXPECT_EQ(hash_file(at(a, self->x.fs.lower, src_l)),
					  hash_file(l));
			}
		}

		/* Two aheadfs mounts of the lower: two superblocks. */
		direct = clone_to(at(a, self->x.fs.lower, src_l),
				  at(b, self->bind, "l-across"), range);
		stacked = clone_to(at(a, self->x.fs.mnt, src_l),
				   at(b, self->mnt2, "m-across"), range);
		TH_LOG("%s across two mounts: of the lower %s, of aheadfs %s",
		       how, strerror(direct), strerror(stacked));
		EXPECT_EQ(self->xfs ? 0 : EOPNOTSUPP, direct);
		EXPECT_EQ(EXDEV, stacked);
		EXPECT_EQ(0, shared_extents(at(l, self->x.fs.lower, "m-across")));

		/* Another filesystem. */
		direct = clone_to(at(a, self->other, src_l),
				  at(b, self->x.fs.lower, "l-other"), range);
		stacked = clone_to(at(a, self->omnt, src_l),
				   at(b, self->x.fs.mnt, "m-other"), range);
		EXPECT_EQ(EXDEV, direct);
		EXPECT_EQ(direct, stacked) {
			TH_LOG("%s from another filesystem: lower %s, aheadfs %s",
			       how, strerror(direct), strerror(stacked));
		}
	}

	/* copy_file_range across the two: a clone where the lower's is. */
	EXPECT_EQ(0, copy_to(at(a, self->x.fs.lower, src_l),
			     at(b, self->bind, "l-copy")));
	EXPECT_EQ(0, copy_to(at(a, self->x.fs.mnt, src_l),
			     at(b, self->mnt2, "m-copy")));
	sd = shared_extents(at(l, self->x.fs.lower, "l-copy"));
	ss = shared_extents(at(l, self->x.fs.lower, "m-copy"));
	EXPECT_EQ(!!sd, !!ss) {
		TH_LOG("copy_file_range across two mounts: shared extents on the lower %d, through aheadfs %d",
		       sd, ss);
	}
	if (self->xfs)
		EXPECT_LT(0, ss);
	EXPECT_EQ(hash_file(at(a, self->x.fs.lower, src_l)), hash_file(l));
}

/*
 * A caller's POSIX_FADV_RANDOM through the mount is the caller's own: a
 * switch of the mount to prefetch=kernel, which gives the lower file back
 * the readahead aheadfs took from it at open, leaves it (the fadvise made
 * the file's information, which says whose it is).  A file opened beside
 * it without the advice reads ahead again in kernel mode.
 */
TEST_F_TIMEOUT(nowait, caller_random_survives_kernel_mode, 60)
{
	static unsigned char buf[4096];
	char l[PATH_MAX], m[PATH_MAX];
	int lfd, plain, advised;

	ASSERT_EQ(0, ahfs_make_file(at(l, self->x.fs.lower, "adv"), COLD_SIZE));
	lfd = open(l, O_RDONLY);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, fsync(lfd));
	plain = open(at(m, self->x.fs.mnt, "adv"), O_RDONLY);
	ASSERT_LE(0, plain);
	advised = open(m, O_RDONLY);
	ASSERT_LE(0, advised);
	ASSERT_EQ(0, posix_fadvise(advised, 0, 0, POSIX_FADV_RANDOM));
	ASSERT_EQ(0, ahfs_set(&self->x.fs, "prefetch", "kernel"));

	ASSERT_EQ(0, make_cold(lfd));
	ASSERT_EQ(sizeof(buf), pread(advised, buf, sizeof(buf), 0));
	EXPECT_EQ(1, resident(lfd, COLD_SIZE));
	ASSERT_EQ(0, make_cold(lfd));
	ASSERT_EQ(sizeof(buf), pread(plain, buf, sizeof(buf), 0));
	EXPECT_LT(1, resident(lfd, COLD_SIZE));
	EXPECT_EQ(0, ahfs_check_pattern(buf, sizeof(buf), 0));

	EXPECT_EQ(0, ahfs_set(&self->x.fs, "prefetch", "ahead"));
	close(advised);
	close(plain);
	close(lfd);
}

/*
 * io_uring's first, inline attempt at a read is IOCB_NOWAIT without
 * IOCB_NOIO, on both kernels.  A read of data in the page cache completes
 * in it, and the window it plans beyond (the bytes after it, not cached)
 * is issued by aheadfs's worker: counted, traced in a kworker, none in the
 * submitting task, and the bytes reach the lower's page cache.
 */
TEST_F_TIMEOUT(nowait, uring_inline_attempt, 60)
{
	static unsigned char buf[1 << 20] __attribute__((aligned(4096)));
	char l[PATH_MAX], m[PATH_MAX], filter[64];
	long by_reader = 0, by_worker = 0;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	long long chunks, now = 0;
	int lfd, mfd, i, events = 0;

	if (access(TRACEFS "/events", F_OK))
		mount("nodev", TRACEFS, "tracefs", 0, NULL);
	ASSERT_EQ(0, access(TRACEFS "/events/aheadfs/aheadfs_prefetch", F_OK));
	ASSERT_EQ(0, ahfs_make_file(at(l, self->x.fs.lower, "warm"),
				    COLD_SIZE));
	lfd = open(l, O_RDONLY);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(0, fsync(lfd));
	ASSERT_EQ(0, make_cold(lfd));
	/* Its first MiB only, without the lower's readahead. */
	ASSERT_EQ(0, posix_fadvise(lfd, 0, 0, POSIX_FADV_RANDOM));
	ASSERT_EQ(sizeof(buf), pread(lfd, buf, sizeof(buf), 0));
	ASSERT_EQ(sizeof(buf) / 4096, resident(lfd, COLD_SIZE));
	mfd = open(at(m, self->x.fs.mnt, "warm"), O_RDONLY);
	ASSERT_LE(0, mfd);

	snprintf(filter, sizeof(filter), "dev == %u\n",
		 major(self->x.fs.dev) << 20 | minor(self->x.fs.dev));
	ASSERT_EQ(0, trace_set("events/aheadfs/aheadfs_prefetch/filter", filter));
	ASSERT_EQ(0, trace_clear());
	ASSERT_EQ(0, trace_set("events/aheadfs/aheadfs_prefetch/enable", "1"));
	chunks = ahfs_stat(&self->x.fs, "prefetch_chunks");
	ASSERT_LE(0, chunks);
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, mfd, buf, sizeof(buf), 0);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ((int)sizeof(buf), cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	EXPECT_EQ(0, ahfs_check_pattern(buf, sizeof(buf), 0));

	/* The worker runs when it runs: a bounded wait for its chunk. */
	for (i = 0; i <= WAIT_MS / 10; i++) {
		now = ahfs_stat(&self->x.fs, "prefetch_chunks");
		events = prefetch_events(getpid(), &by_reader, &by_worker);
		if (now > chunks && by_worker > 0)
			break;
		usleep(10000);
	}
	trace_set("events/aheadfs/aheadfs_prefetch/enable", "0");
	events = prefetch_events(getpid(), &by_reader, &by_worker);
	trace_set("events/aheadfs/aheadfs_prefetch/filter", "0\n");
	TH_LOG("%lld chunks after the inline read, %d traced: %ld by the submitter, %ld by a kworker",
	       now - chunks, events, by_reader, by_worker);
	EXPECT_LT(chunks, now) {
		TH_LOG("nothing of the window the inline attempt planned was issued");
	}
	EXPECT_LT(0, by_worker);
	EXPECT_EQ(0, by_reader) {
		TH_LOG("the inline (IOCB_NOWAIT) attempt issued prefetch itself");
	}
	/* And the window's bytes reach the lower's page cache. */
	for (i = 0; i <= WAIT_MS / 10; i++) {
		if (resident(lfd, COLD_SIZE) > (long)(sizeof(buf) / 4096))
			break;
		usleep(10000);
	}
	EXPECT_LT(sizeof(buf) / 4096, resident(lfd, COLD_SIZE));
	close(mfd);
	close(lfd);
}

/* ------------------------------------------------------------------ */
/* Space and inodes go back to the lower at unlink and rmdir           */
/* ------------------------------------------------------------------ */

FIXTURE(space) {
	struct lr x;
};

FIXTURE_SETUP(space)
{
	LR_SETUP(&self->x, lr_init(&self->x, "space", ""));
}

FIXTURE_TEARDOWN(space)
{
	lr_cleanup(_metadata, &self->x);
}

#define BIG		(64LL << 20)
#define TOL_BYTES	(4LL << 20)
#define TOL_INODES	4

struct room {
	long long bytes;	/* free */
	long long inodes;	/* free */
};

static struct room room_of(const char *path)
{
	struct room r = { -1, -1 };
	struct statvfs s;

	if (!statvfs(path, &s)) {
		r.bytes = (long long)s.f_bfree * s.f_frsize;
		r.inodes = s.f_ffree;
	}
	return r;
}

/*
 * syncfs the lower and poll it (XFS frees in background inode inactivation)
 * until @want is back, its bytes within TOL_BYTES and its inodes within
 * @tol_inodes, for at most WAIT_MS; no cache is dropped.  The last reading.
 */
static struct room wait_room(const char *lower, struct room want,
			     long long tol_inodes)
{
	int fd = open(lower, O_RDONLY | O_DIRECTORY), i;
	struct room r = {};

	for (i = 0; i <= WAIT_MS / 20; i++) {
		if (fd >= 0 && i % 5 == 0)
			syncfs(fd);
		r = room_of(lower);
		if (r.bytes >= want.bytes - TOL_BYTES &&
		    r.inodes >= want.inodes - tol_inodes)
			break;
		usleep(20000);
	}
	if (fd >= 0)
		close(fd);
	return r;
}

static void sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	if (fd >= 0) {
		syncfs(fd);
		close(fd);
	}
}

/* Write @len bytes to a new @path and fsync: the open fd, or -errno. */
static int write_synced(const char *path, long long len)
{
	static char b[1 << 20];
	long long done;
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);

	if (fd < 0)
		return -errno;
	memset(b, 0x5a, sizeof(b));
	for (done = 0; done < len; done += sizeof(b))
		if (write(fd, b, sizeof(b)) != sizeof(b))
			break;
	if (done < len || fsync(fd)) {
		close(fd);
		return -EIO;
	}
	return fd;
}

/*
 * One run in @root (the lower itself, or aheadfs over it): a 64 MiB file,
 * unlinked while @hold_open keeps it open or not; how much of the lower's
 * free space and inodes are missing in the end, and while held open.
 */
static void big_run(struct __test_metadata *_metadata, struct lr *x,
		    const char *root, int hold_open, struct room *kept,
		    long long *held_bytes)
{
	struct room before, used, after;
	char p[PATH_MAX];
	int fd;

	sync_dir(x->fs.lower);
	before = room_of(x->fs.lower);
	fd = write_synced(at(p, root, "big"), BIG);
	ASSERT_LE(0, fd);
	if (!hold_open)
		close(fd);
	used = room_of(x->fs.lower);
	ASSERT_LE(BIG - TOL_BYTES, before.bytes - used.bytes) {
		TH_LOG("writing %lld bytes used only %lld", BIG,
		       before.bytes - used.bytes);
	}
	ASSERT_EQ(0, unlink(p));
	if (hold_open) {
		sync_dir(x->fs.lower);
		used = room_of(x->fs.lower);
		*held_bytes = before.bytes - used.bytes;
		close(fd);
	}
	/* One inode: wait for it to be back, as it is directly. */
	after = wait_room(x->fs.lower, before, 0);
	kept->bytes = before.bytes - after.bytes;
	kept->inodes = before.inodes - after.inodes;
}

/* Many small files (@files, in @dirs subdirectories when > 0) made and removed under @root. */
static void small_run(struct __test_metadata *_metadata, struct lr *x,
		      const char *root, int dirs, int files,
		      struct room *kept)
{
	struct room before, used, after;
	char p[PATH_MAX], t[PATH_MAX];
	int d, i, per = dirs ? files / dirs : files;

	sync_dir(x->fs.lower);
	before = room_of(x->fs.lower);
	ASSERT_EQ(0, mkdir(at(t, root, "t"), 0755));
	for (d = 0; d < (dirs ? dirs : 1); d++) {
		if (dirs) {
			ahfs_fmt(p, sizeof(p), "%s/t/d%d", root, d);
			ASSERT_EQ(0, mkdir(p, 0755));
		}
		for (i = 0; i < per; i++) {
			if (dirs)
				ahfs_fmt(p, sizeof(p), "%s/t/d%d/f%d", root,
					 d, i);
			else
				ahfs_fmt(p, sizeof(p), "%s/t/f%d", root, i);
			ASSERT_EQ(0, ahfs_make_file(p, 4096));
		}
	}
	sync_dir(x->fs.lower);
	used = room_of(x->fs.lower);
	/*
	 * Within TOL_INODES: inodes the run before this one removed may still
	 * be freed in the background (xfs's inode inactivation) while these
	 * are made, as wait_room() allows.
	 */
	ASSERT_LE(files - TOL_INODES, before.inodes - used.inodes) {
		TH_LOG("creating %d files used %lld inodes", files,
		       before.inodes - used.inodes);
	}
	for (d = 0; d < (dirs ? dirs : 1); d++) {
		for (i = 0; i < per; i++) {
			if (dirs)
				ahfs_fmt(p, sizeof(p), "%s/t/d%d/f%d", root,
					 d, i);
			else
				ahfs_fmt(p, sizeof(p), "%s/t/f%d", root, i);
			ASSERT_EQ(0, unlink(p));
		}
		if (dirs) {
			ahfs_fmt(p, sizeof(p), "%s/t/d%d", root, d);
			ASSERT_EQ(0, rmdir(p));
		}
	}
	ASSERT_EQ(0, rmdir(t));
	after = wait_room(x->fs.lower, before, TOL_INODES);
	kept->bytes = before.bytes - after.bytes;
	kept->inodes = before.inodes - after.inodes;
}

static long long at_least0(long long v)
{
	return v > 0 ? v : 0;
}

/* A 64 MiB file unlinked through aheadfs gives its blocks and inode back without a cache drop, as directly. */
TEST_F_TIMEOUT(space, unlinked_file, 60)
{
	struct room ref, kept;

	big_run(_metadata, &self->x, self->x.fs.lower, 0, &ref, NULL);
	ASSERT_GE(TOL_BYTES, ref.bytes) {
		TH_LOG("the lower itself kept %lld bytes", ref.bytes);
	}
	big_run(_metadata, &self->x, self->x.fs.mnt, 0, &kept, NULL);
	EXPECT_GE(TOL_BYTES + at_least0(ref.bytes), kept.bytes) {
		TH_LOG("%lld bytes still used after unlink through aheadfs (directly: %lld)",
		       kept.bytes, ref.bytes);
	}
	EXPECT_GE(at_least0(ref.inodes), kept.inodes) {
		TH_LOG("%lld inodes still used (directly: %lld)", kept.inodes,
		       ref.inodes);
	}
}

/* A file unlinked through aheadfs while open keeps its space until the last close, then frees it at once. */
TEST_F_TIMEOUT(space, unlinked_while_open, 60)
{
	long long ref_held = 0, held = 0;
	struct room ref, kept;

	big_run(_metadata, &self->x, self->x.fs.lower, 1, &ref, &ref_held);
	ASSERT_LE(BIG - TOL_BYTES, ref_held);
	ASSERT_GE(TOL_BYTES, ref.bytes);
	big_run(_metadata, &self->x, self->x.fs.mnt, 1, &kept, &held);
	EXPECT_LE(BIG - TOL_BYTES, held) {
		TH_LOG("only %lld bytes held by the open unlinked file", held);
	}
	EXPECT_GE(TOL_BYTES + at_least0(ref.bytes), kept.bytes) {
		TH_LOG("%lld bytes still used after the last close (directly: %lld)",
		       kept.bytes, ref.bytes);
	}
	EXPECT_GE(at_least0(ref.inodes), kept.inodes);
}

/* 200 small files unlinked through aheadfs give their inodes back at once, as directly. */
TEST_F_TIMEOUT(space, small_files, 60)
{
	struct room ref, kept;

	small_run(_metadata, &self->x, self->x.fs.lower, 0, 200, &ref);
	ASSERT_GE(TOL_INODES, ref.inodes) {
		TH_LOG("the lower itself kept %lld inodes", ref.inodes);
	}
	small_run(_metadata, &self->x, self->x.fs.mnt, 0, 200, &kept);
	EXPECT_GE(TOL_INODES + at_least0(ref.inodes), kept.inodes) {
		TH_LOG("%lld inodes still used after unlink through aheadfs (directly: %lld)",
		       kept.inodes, ref.inodes);
	}
	EXPECT_GE(TOL_BYTES + at_least0(ref.bytes), kept.bytes);
}

/* A tree removed through aheadfs (unlink and rmdir) gives its inodes back at once, as directly. */
TEST_F_TIMEOUT(space, removed_tree, 60)
{
	struct room ref, kept;

	small_run(_metadata, &self->x, self->x.fs.lower, 10, 100, &ref);
	ASSERT_GE(TOL_INODES, ref.inodes) {
		TH_LOG("the lower itself kept %lld inodes", ref.inodes);
	}
	small_run(_metadata, &self->x, self->x.fs.mnt, 10, 100, &kept);
	EXPECT_GE(TOL_INODES + at_least0(ref.inodes), kept.inodes) {
		TH_LOG("%lld inodes still used after rmdir through aheadfs (directly: %lld)",
		       kept.inodes, ref.inodes);
	}
	EXPECT_GE(TOL_BYTES + at_least0(ref.bytes), kept.bytes);
}

TEST_HARNESS_MAIN
