/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the aheadfs selftests: a fresh lower directory and mount
 * per test, the per-mount sysfs files, dmesg capture and running as another
 * user.  The guest runner provides $AHEADFS_SCRATCH, an empty directory on
 * the lower filesystem under test ($AHEADFS_FSTYPE: ext4 or xfs).
 *
 * The kselftest harness must come before <fcntl.h>.
 */
#ifndef _AHEADFS_TEST_H
#define _AHEADFS_TEST_H

#include "kselftest_harness.h"

#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>

struct ahfs {
	char base[PATH_MAX];	/* scratch directory of this test */
	char lower[PATH_MAX];	/* the lower directory */
	char mnt[PATH_MAX];	/* where aheadfs is mounted over it */
	char sysfs[PATH_MAX];	/* /sys/fs/aheadfs/<major:minor> */
	dev_t dev;
	int mounted;
};

static inline const char *ahfs_scratch(void)
{
	const char *s = getenv("AHEADFS_SCRATCH");

	return s && *s ? s : "/tmp";
}

static inline const char *ahfs_fstype(void)
{
	const char *s = getenv("AHEADFS_FSTYPE");

	return s && *s ? s : "unknown";
}

/* snprintf that the caller cannot forget to check: aborts on truncation. */
static inline char *ahfs_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		abort();
	return buf;
}

/*
 * Installed for run_kselftest.sh (aheadfs_env.sh beside the program) and
 * run with no $AHEADFS_SCRATCH: re-run under aheadfs_env.sh, which loads
 * the module if needed and makes a lower on a loop device.  Elsewhere (the
 * build tree, a lower given) this does nothing.  glibc passes argc and argv
 * to constructors.
 */
__attribute__((constructor)) static void ahfs_ksft_env(int argc, char **argv)
{
	const char *s = getenv("AHEADFS_SCRATCH");
	char exe[PATH_MAX], env[PATH_MAX + 32], **nargv;
	ssize_t n;
	int i;

	if ((s && *s) || getenv("AHEADFS_ENV_RUNNING"))
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = 0;
	ahfs_fmt(env, sizeof(env), "%.*s/aheadfs_env.sh",
		 (int)(strrchr(exe, '/') - exe), exe);
	if (access(env, R_OK))
		return;
	nargv = calloc(argc + 3, sizeof(*nargv));
	if (!nargv)
		abort();
	nargv[0] = "bash";
	nargv[1] = env;
	nargv[2] = exe;
	for (i = 1; i < argc; i++)
		nargv[i + 2] = argv[i];
	setenv("AHEADFS_ENV_RUNNING", "1", 1);
	execvp("bash", nargv);
	fprintf(stderr, "%s: cannot run bash %s: %s\n", exe, env, strerror(errno));
	exit(1);
}

static inline int ahfs_run(const char *fmt, ...)
{
	char cmd[4 * PATH_MAX];
	va_list ap;
	int n, st;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(cmd))
		return -1;
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Mount aheadfs over @lower at @mnt; returns 0 or -errno. */
static inline int ahfs_mount_at(const char *lower, const char *mnt,
				const char *opts)
{
	return mount(lower, mnt, "aheadfs", 0, opts) ? -errno : 0;
}

static inline int ahfs_find_sysfs(struct ahfs *fs)
{
	struct stat st;

	if (stat(fs->mnt, &st))
		return -errno;
	fs->dev = st.st_dev;
	ahfs_fmt(fs->sysfs, sizeof(fs->sysfs), "/sys/fs/aheadfs/%u:%u",
		 major(st.st_dev), minor(st.st_dev));
	return access(fs->sysfs, F_OK) ? -errno : 0;
}

/* A fresh lower directory and mount point; mounts unless @opts is NULL. */
static inline int ahfs_setup(struct ahfs *fs, const char *name,
			     const char *opts)
{
	static int seq;
	int err;

	memset(fs, 0, sizeof(*fs));
	ahfs_fmt(fs->base, sizeof(fs->base), "%s/%s.%d.%d", ahfs_scratch(),
		 name, getpid(), seq++);
	ahfs_fmt(fs->lower, sizeof(fs->lower), "%s/lower", fs->base);
	ahfs_fmt(fs->mnt, sizeof(fs->mnt), "%s/mnt", fs->base);
	if (mkdir(fs->base, 0755) || mkdir(fs->lower, 0755) ||
	    mkdir(fs->mnt, 0755))
		return -errno;
	if (!opts)
		return 0;
	err = ahfs_mount_at(fs->lower, fs->mnt, opts);
	if (err)
		return err;
	fs->mounted = 1;
	return ahfs_find_sysfs(fs);
}

static inline void ahfs_teardown(struct ahfs *fs)
{
	if (fs->mounted && umount(fs->mnt))
		umount2(fs->mnt, MNT_DETACH);
	fs->mounted = 0;
	if (fs->base[0])
		ahfs_run("rm -rf '%s'", fs->base);
}

/* Path of @rel under the mount (m) or the lower (l). */
static inline char *ahfs_m(struct ahfs *fs, char *buf, const char *rel)
{
	return ahfs_fmt(buf, PATH_MAX, "%s/%s", fs->mnt, rel);
}

static inline char *ahfs_l(struct ahfs *fs, char *buf, const char *rel)
{
	return ahfs_fmt(buf, PATH_MAX, "%s/%s", fs->lower, rel);
}

static inline int ahfs_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return (int)n;
}

static inline int ahfs_write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* One sysfs tunable of the mount: set, or read back as a string. */
static inline int ahfs_set(struct ahfs *fs, const char *file, const char *val)
{
	char path[PATH_MAX];

	return ahfs_write_file(ahfs_fmt(path, sizeof(path), "%s/%s",
					fs->sysfs, file), val);
}

static inline int ahfs_get(struct ahfs *fs, const char *file, char *buf,
			   size_t len)
{
	char path[PATH_MAX];
	int n;

	n = ahfs_read_file(ahfs_fmt(path, sizeof(path), "%s/%s", fs->sysfs,
				    file), buf, len);
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return n;
}

/* One counter from the mount's stats file; -1 if absent. */
static inline long long ahfs_stat(struct ahfs *fs, const char *name)
{
	static char buf[16384];
	char path[PATH_MAX];
	size_t nlen = strlen(name);
	char *p;

	if (ahfs_read_file(ahfs_fmt(path, sizeof(path), "%s/stats", fs->sysfs),
			   buf, sizeof(buf)) <= 0)
		return -1;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, nlen) && p[nlen] == ' ')
			return atoll(p + nlen + 1);
	return -1;
}

static inline int ahfs_drop_caches(void)
{
	sync();
	return ahfs_write_file("/proc/sys/vm/drop_caches", "3\n");
}

/* Write @len bytes of a position-dependent pattern (so misplaced data shows). */
static inline unsigned char ahfs_pattern(off_t off)
{
	return (unsigned char)((off * 7 + (off >> 12) * 13) & 0xff);
}

static inline int ahfs_make_file(const char *path, off_t len)
{
	static unsigned char buf[1 << 20];
	off_t off = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -errno;
	while (off < len) {
		size_t n = len - off < (off_t)sizeof(buf) ? (size_t)(len - off) :
			   sizeof(buf);
		size_t i;

		for (i = 0; i < n; i++)
			buf[i] = ahfs_pattern(off + i);
		if (write(fd, buf, n) != (ssize_t)n) {
			close(fd);
			return -EIO;
		}
		off += n;
	}
	return close(fd) ? -errno : 0;
}

/* 0 when @n bytes of @buf hold the pattern of file offset @off. */
static inline int ahfs_check_pattern(const unsigned char *buf, size_t n,
				     off_t off)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i] != ahfs_pattern(off + i))
			return -1;
	return 0;
}

/*
 * dmesg capture: ahfs_kmsg_open() positions at the end of the log;
 * ahfs_kmsg_grep() reads what was logged since and looks for @needle.
 */
static inline int ahfs_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

static inline int ahfs_kmsg_grep(int fd, const char *needle)
{
	char rec[8192];
	int found = 0;
	ssize_t n;

	while ((n = read(fd, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		if (n <= 0)
			continue;
		rec[n] = 0;
		if (strstr(rec, needle))
			found = 1;
	}
	return found;
}

/* Create or truncate @path with the string @s in it: 0 or -errno. */
static inline int ahfs_put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

/* Run @fn(arg) in a child with uid/gid @id; returns its exit status. */
static inline int ahfs_as_user(uid_t id, int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (!pid) {
		gid_t g = id;

		if (setgroups(1, &g) || setgid(id) || setuid(id))
			_exit(200);
		_exit(fn(arg));
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

/*
 * AHEADFS_TIMEOUT_SCALE=N multiplies every test's time limit by N (1 to
 * 100): under a kernel built with its checkers (make check-debug: lockdep,
 * KASAN) the same work takes several times longer, and the harness's
 * limits, made for Debian's kernels, would cut tests that are not stuck.
 * The limits bound a hang; they measure nothing.  Applied in main(), after
 * every test has registered.
 */
static inline void ahfs_scale_timeouts(void)
{
	const char *v = getenv("AHEADFS_TIMEOUT_SCALE");
	struct __fixture_metadata *f;
	struct __test_metadata *t;
	int scale = v ? atoi(v) : 1;

	if (scale <= 1 || scale > 100)
		return;
	for (f = __fixture_list; f; f = f->next)
		for (t = f->tests; t; t = t->next)
			t->timeout *= scale;
}

/*
 * AHEADFS_LEAVE_OUT=NAME[,NAME...]: the fixtures NAME, or the tests
 * FIXTURE.TEST, not to run (one line names them): scripts/guest-run sets it
 * from a "guest-run: xfs-leaves-out=..." line of the test's source, for the
 * parts that do not depend on that lower's type (make check-full runs them
 * all).  Applied in main(), after every test has registered; the plan
 * counts what runs.
 */
static inline int ahfs_left_out(const char *list, const char *f, const char *t)
{
	size_t fl = strlen(f), tl = strlen(t);
	const char *p = list;

	while (*p) {
		size_t l = strcspn(p, ",");

		if ((l == fl && !strncmp(p, f, fl)) ||
		    (l == fl + 1 + tl && !strncmp(p, f, fl) && p[fl] == '.' &&
		     !strncmp(p + fl + 1, t, tl)))
			return 1;
		p += l;
		if (*p)
			p++;
	}
	return 0;
}

static inline void ahfs_leave_out(void)
{
	const char *v = getenv("AHEADFS_LEAVE_OUT");
	struct __fixture_metadata *f;
	struct __test_metadata **tp, *t;
	int n = 0;

	if (!v || !*v)
		return;
	/*
	 * Unlinked from each fixture's list (the run follows next only); a
	 * fixture left with no test runs nothing.
	 */
	for (f = __fixture_list; f; f = f->next)
		for (tp = &f->tests; (t = *tp); ) {
			if (ahfs_left_out(v, f->name, t->name)) {
				*tp = t->next;
				n++;
			} else {
				tp = &t->next;
			}
		}
	printf("# AHEADFS_LEAVE_OUT=%s: %d tests left out on this lower\n", v, n);
	fflush(stdout);
}

#undef TEST_HARNESS_MAIN
#ifdef _CONSTRUCTOR_ORDER_BACKWARD
/* Harnesses before 6.11 also order the tests' constructors here. */
#define AHFS_HARNESS_ORDER \
	static void __attribute__((constructor)) \
	__constructor_order_last(void) \
	{ \
		if (!__constructor_order) \
			__constructor_order = _CONSTRUCTOR_ORDER_BACKWARD; \
	}
#else
#define AHFS_HARNESS_ORDER
#endif
#define TEST_HARNESS_MAIN \
	AHFS_HARNESS_ORDER \
	int main(int argc, char **argv) \
	{ \
		ahfs_scale_timeouts(); \
		ahfs_leave_out(); \
		return test_harness_run(argc, argv); \
	}

#endif /* _AHEADFS_TEST_H */
