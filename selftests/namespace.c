// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs namespace operations: every change made through the mount shows in
 * the lower directory and the reverse, with the lower's inode numbers.
 */
#include "aheadfs_test.h"

#include <dirent.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

FIXTURE(ns) {
	struct ahfs fs;
};

FIXTURE_SETUP(ns)
{
	ASSERT_EQ(0, ahfs_setup(&self->fs, "ns", ""));
}

FIXTURE_TEARDOWN(ns)
{
	ahfs_teardown(&self->fs);
}

static char *get(const char *path)
{
	static char buf[4096];

	if (ahfs_read_file(path, buf, sizeof(buf)) < 0)
		return "<error>";
	return buf;
}

static ino_t ino(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_ino;
}

TEST_F(ns, create_both_ways)
{
	char m[PATH_MAX], l[PATH_MAX];
	struct stat ms, ls;

	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, m, "up"), "through the mount"));
	EXPECT_STREQ("through the mount", get(ahfs_l(&self->fs, l, "up")));

	ASSERT_EQ(0, ahfs_put(ahfs_l(&self->fs, l, "down"), "in the lower"));
	EXPECT_STREQ("in the lower", get(ahfs_m(&self->fs, m, "down")));

	/* st_ino is the lower inode number; st_dev is the mount's. */
	ASSERT_EQ(0, stat(m, &ms));
	ASSERT_EQ(0, stat(l, &ls));
	EXPECT_EQ(ls.st_ino, ms.st_ino);
	EXPECT_EQ(self->fs.dev, ms.st_dev);
	EXPECT_NE(ls.st_dev, ms.st_dev);

	/* O_EXCL on an existing name. */
	EXPECT_EQ(-1, open(m, O_WRONLY | O_CREAT | O_EXCL, 0644));
	EXPECT_EQ(EEXIST, errno);
}

TEST_F(ns, mkdir_rmdir)
{
	char m[PATH_MAX], l[PATH_MAX];
	struct stat st;

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, m, "d"), 0750));
	ASSERT_EQ(0, stat(ahfs_l(&self->fs, l, "d"), &st));
	EXPECT_TRUE(S_ISDIR(st.st_mode));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, m, "d/sub"), 0755));
	ASSERT_EQ(0, stat(ahfs_l(&self->fs, l, "d/sub"), &st));

	EXPECT_EQ(-1, rmdir(ahfs_m(&self->fs, m, "d")));
	EXPECT_EQ(ENOTEMPTY, errno);
	EXPECT_EQ(-1, mkdir(ahfs_m(&self->fs, m, "d"), 0755));
	EXPECT_EQ(EEXIST, errno);

	ASSERT_EQ(0, rmdir(ahfs_m(&self->fs, m, "d/sub")));
	ASSERT_EQ(0, rmdir(ahfs_m(&self->fs, m, "d")));
	EXPECT_EQ(-1, stat(ahfs_l(&self->fs, l, "d"), &st));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(ns, unlink_open_file)
{
	char m[PATH_MAX], l[PATH_MAX], buf[32] = {};
	struct stat st;
	int fd;

	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, m, "f"), "still here"));
	fd = open(m, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, unlink(m));
	EXPECT_EQ(-1, stat(ahfs_l(&self->fs, l, "f"), &st));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, access(m, F_OK));
	/* The open file keeps its data after the last name is gone. */
	ASSERT_EQ(10, pread(fd, buf, sizeof(buf) - 1, 0));
	EXPECT_STREQ("still here", buf);
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(0, st.st_nlink);
	close(fd);

	EXPECT_EQ(-1, unlink(m));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(ns, rename_variants)
{
	char a[PATH_MAX], b[PATH_MAX], l[PATH_MAX];

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, a, "d1"), 0755));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, a, "d2"), 0755));
	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, a, "d1/x"), "x"));
	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, b, "d2/y"), "y"));

	/* Across directories. */
	ASSERT_EQ(0, rename(ahfs_m(&self->fs, a, "d1/x"),
			    ahfs_m(&self->fs, b, "d2/x")));
	EXPECT_STREQ("x", get(ahfs_l(&self->fs, l, "d2/x")));
	EXPECT_EQ(-1, access(ahfs_l(&self->fs, l, "d1/x"), F_OK));

	/* RENAME_NOREPLACE refuses an existing target. */
	EXPECT_EQ(-1, syscall(SYS_renameat2, AT_FDCWD,
			      ahfs_m(&self->fs, a, "d2/x"), AT_FDCWD,
			      ahfs_m(&self->fs, b, "d2/y"), RENAME_NOREPLACE));
	EXPECT_EQ(EEXIST, errno);

	/* RENAME_EXCHANGE swaps the two, in the lower too. */
	ASSERT_EQ(0, syscall(SYS_renameat2, AT_FDCWD,
			     ahfs_m(&self->fs, a, "d2/x"), AT_FDCWD,
			     ahfs_m(&self->fs, b, "d2/y"), RENAME_EXCHANGE));
	EXPECT_STREQ("y", get(ahfs_l(&self->fs, l, "d2/x")));
	EXPECT_STREQ("x", get(ahfs_l(&self->fs, l, "d2/y")));
	EXPECT_STREQ("y", get(ahfs_m(&self->fs, a, "d2/x")));

	/* Overwriting rename. */
	ASSERT_EQ(0, rename(ahfs_m(&self->fs, a, "d2/x"),
			    ahfs_m(&self->fs, b, "d2/y")));
	EXPECT_STREQ("y", get(ahfs_l(&self->fs, l, "d2/y")));
	EXPECT_EQ(-1, access(ahfs_m(&self->fs, a, "d2/x"), F_OK));

	/* A directory into its own subtree. */
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, a, "d1/sub"), 0755));
	EXPECT_EQ(-1, rename(ahfs_m(&self->fs, a, "d1"),
			     ahfs_m(&self->fs, b, "d1/sub/in")));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(ns, hard_links)
{
	char a[PATH_MAX], b[PATH_MAX], l[PATH_MAX];
	struct stat sa, sb, sl;

	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, a, "a"), "shared"));
	ASSERT_EQ(0, link(a, ahfs_m(&self->fs, b, "b")));
	ASSERT_EQ(0, stat(a, &sa));
	ASSERT_EQ(0, stat(b, &sb));
	ASSERT_EQ(0, stat(ahfs_l(&self->fs, l, "b"), &sl));
	EXPECT_EQ(sa.st_ino, sb.st_ino);
	EXPECT_EQ(sl.st_ino, sb.st_ino);
	EXPECT_EQ(2, sa.st_nlink);
	EXPECT_EQ(2, sl.st_nlink);
	EXPECT_STREQ("shared", get(b));
	ASSERT_EQ(0, unlink(a));
	ASSERT_EQ(0, stat(b, &sb));
	EXPECT_EQ(1, sb.st_nlink);
}

TEST_F(ns, symlinks)
{
	char m[PATH_MAX], l[PATH_MAX], buf[PATH_MAX] = {};
	struct stat st;

	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, m, "target"), "pointed at"));
	ASSERT_EQ(0, symlink("target", ahfs_m(&self->fs, m, "s")));
	ASSERT_EQ(6, readlink(ahfs_l(&self->fs, l, "s"), buf, sizeof(buf)));
	EXPECT_STREQ("target", buf);
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(6, readlink(m, buf, sizeof(buf)));
	EXPECT_STREQ("target", buf);
	ASSERT_EQ(0, lstat(m, &st));
	EXPECT_TRUE(S_ISLNK(st.st_mode));
	EXPECT_STREQ("pointed at", get(m));

	/* A symlink made in the lower resolves through the mount. */
	ASSERT_EQ(0, symlink("target", ahfs_l(&self->fs, l, "s2")));
	EXPECT_STREQ("pointed at", get(ahfs_m(&self->fs, m, "s2")));
	ASSERT_EQ(0, symlink("nowhere", ahfs_m(&self->fs, m, "dangling")));
	EXPECT_EQ(-1, open(m, O_RDONLY));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(ns, special_files)
{
	char m[PATH_MAX], l[PATH_MAX];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int s;

	ASSERT_EQ(0, mkfifo(ahfs_m(&self->fs, m, "fifo"), 0600));
	ASSERT_EQ(0, stat(ahfs_l(&self->fs, l, "fifo"), &st));
	EXPECT_TRUE(S_ISFIFO(st.st_mode));

	ASSERT_EQ(0, mknod(ahfs_m(&self->fs, m, "null"), S_IFCHR | 0600,
			   makedev(1, 3)));
	ASSERT_EQ(0, stat(ahfs_l(&self->fs, l, "null"), &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(makedev(1, 3), st.st_rdev);
	ASSERT_EQ(0, stat(m, &st));
	EXPECT_EQ(makedev(1, 3), st.st_rdev);

	ASSERT_EQ(0, mknod(ahfs_m(&self->fs, m, "sock"), S_IFSOCK | 0600, 0));
	ASSERT_EQ(0, stat(ahfs_l(&self->fs, l, "sock"), &st));
	EXPECT_TRUE(S_ISSOCK(st.st_mode));

	/* bind(2) creates a socket through mknod. */
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_LE(0, s);
	ahfs_fmt(sa.sun_path, sizeof(sa.sun_path), "%s", ahfs_m(&self->fs, m, "b"));
	if (strlen(m) < sizeof(sa.sun_path)) {
		ASSERT_EQ(0, bind(s, (struct sockaddr *)&sa, sizeof(sa)));
		ASSERT_EQ(0, stat(ahfs_l(&self->fs, l, "b"), &st));
		EXPECT_TRUE(S_ISSOCK(st.st_mode));
	}
	close(s);
}

TEST_F(ns, tmpfile_then_link)
{
	char m[PATH_MAX], l[PATH_MAX], proc[64];
	struct stat st;
	int fd;

	fd = open(self->fs.mnt, O_TMPFILE | O_RDWR, 0640);
	ASSERT_LE(0, fd);
	ASSERT_EQ(5, write(fd, "anon!", 5));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(0, st.st_nlink);
	ahfs_fmt(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ASSERT_EQ(0, linkat(AT_FDCWD, proc, AT_FDCWD,
			    ahfs_m(&self->fs, m, "named"), AT_SYMLINK_FOLLOW));
	close(fd);
	EXPECT_STREQ("anon!", get(ahfs_l(&self->fs, l, "named")));
	ASSERT_EQ(0, stat(l, &st));
	EXPECT_EQ(1, st.st_nlink);
	EXPECT_EQ(0640, st.st_mode & 07777);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char * const *)a, *(char * const *)b);
}

static int list_dir(const char *path, char **names, int max)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)) && n < max)
		names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	return n;
}

TEST_F(ns, readdir_matches_lower)
{
	enum { N = 300 };
	char *up[N + 8], *down[N + 8], p[PATH_MAX], name[32];
	int i, nu, nd;

	for (i = 0; i < N; i++) {
		ahfs_fmt(name, sizeof(name), "entry-%04d", i);
		ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, p, name), name));
	}
	nu = list_dir(self->fs.mnt, up, N + 8);
	nd = list_dir(self->fs.lower, down, N + 8);
	ASSERT_EQ(N + 2, nu);
	ASSERT_EQ(nd, nu);
	for (i = 0; i < nu; i++)
		EXPECT_STREQ(down[i], up[i]);
	for (i = 0; i < nu; i++) {
		free(up[i]);
		free(down[i]);
	}
}

TEST_F(ns, readdir_d_ino_and_seekdir)
{
	char p[PATH_MAX], name[32], *after[64];
	struct dirent *de;
	long pos = -1;
	int i, n = 0;
	DIR *d;

	for (i = 0; i < 100; i++) {
		ahfs_fmt(name, sizeof(name), "f%d", i);
		ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, p, name), "x"));
	}
	d = opendir(self->fs.mnt);
	ASSERT_NE(NULL, d);
	for (i = 0; (de = readdir(d)); i++) {
		if (de->d_name[0] != '.') {
			EXPECT_EQ(ino(ahfs_l(&self->fs, p, de->d_name)),
				  de->d_ino);
		}
		if (i == 40)
			pos = telldir(d);
		if (i > 40 && n < 64)
			after[n++] = strdup(de->d_name);
	}
	ASSERT_LE(0, pos);
	ASSERT_LT(10, n);
	/* seekdir back to the cookie replays the same entries. */
	seekdir(d, pos);
	for (i = 0; i < n && (de = readdir(d)); i++)
		EXPECT_STREQ(after[i], de->d_name);
	EXPECT_EQ(n, i);
	closedir(d);
	for (i = 0; i < n; i++)
		free(after[i]);
}

/* Changes made in the lower behind the mount's back are seen at once. */
TEST_F(ns, lower_changes_revalidate)
{
	char m[PATH_MAX], l[PATH_MAX], l2[PATH_MAX];
	struct stat st;

	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, m, "a"), "one"));
	ASSERT_EQ(0, stat(m, &st));		/* cache the dentry */
	ASSERT_EQ(0, rename(ahfs_l(&self->fs, l, "a"),
			    ahfs_l(&self->fs, l2, "b")));
	EXPECT_EQ(-1, stat(m, &st));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_STREQ("one", get(ahfs_m(&self->fs, m, "b")));

	/* Replaced in the lower by another inode. */
	ASSERT_EQ(0, unlink(ahfs_l(&self->fs, l, "b")));
	ASSERT_EQ(0, ahfs_put(l, "two"));
	EXPECT_STREQ("two", get(ahfs_m(&self->fs, m, "b")));
	ASSERT_EQ(0, stat(m, &st));
	EXPECT_EQ(ino(l), st.st_ino);

	/* A negative dentry becomes positive when the lower gains the name. */
	EXPECT_EQ(-1, stat(ahfs_m(&self->fs, m, "late"), &st));
	ASSERT_EQ(0, ahfs_put(ahfs_l(&self->fs, l, "late"), "here now"));
	EXPECT_STREQ("here now", get(m));
	/* And a directory renamed in the lower. */
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, m, "dir"), 0755));
	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, m, "dir/in"), "inside"));
	ASSERT_EQ(0, rename(ahfs_l(&self->fs, l, "dir"),
			    ahfs_l(&self->fs, l2, "dir2")));
	EXPECT_EQ(-1, stat(ahfs_m(&self->fs, m, "dir/in"), &st));
	EXPECT_STREQ("inside", get(ahfs_m(&self->fs, m, "dir2/in")));
	/* Creating through a stale parent works after revalidation. */
	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, m, "dir2/new"), "new"));
	EXPECT_STREQ("new", get(ahfs_l(&self->fs, l, "dir2/new")));
}

/*
 * The lower's changes again, seen by walks that start in the mount (a
 * directory fd).  In a guest whose root is 9p or virtiofs every walk from
 * "/" drops to ref mode at its first name, so the walks above revalidate
 * in ref mode only; these stay in RCU mode until a change is found, where
 * revalidation goes by the d_seq of our dentry and of the lower one at
 * their last match (dentry.c), as every walk does on a storage node.
 * op_revalidate counts the verdicts given in ref mode: over an unchanged
 * tree there must be none.  A flag the lower's file gains (append-only,
 * which the VFS checks on our inode at open) is seen by such a walk too.
 */
static int at_ino(int dfd, const char *rel, ino_t *ino)
{
	struct stat st;

	if (fstatat(dfd, rel, &st, 0))
		return -errno;
	*ino = st.st_ino;
	return 0;
}

TEST_F(ns, rcu_walk_sees_lower_changes)
{
	char m[PATH_MAX], l[PATH_MAX], l2[PATH_MAX];
	long long r0, f0;
	ino_t a = 0, b = 0, x = 0;
	int dfd, fd, wfd, err, fl, i;

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, m, "d"), 0755));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, m, "e"), 0755));
	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, m, "d/a"), "a"));
	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, m, "d/b"), "b"));
	dfd = open(self->fs.mnt, O_PATH | O_DIRECTORY);
	ASSERT_LE(0, dfd);
	/* The dentries, and the lower's ACLs an RCU walk reads cached. */
	ASSERT_EQ(0, at_ino(dfd, "d/a", &a));
	ASSERT_EQ(0, at_ino(dfd, "d/b", &b));
	ASSERT_EQ(-ENOENT, at_ino(dfd, "d/late", &x));
	r0 = ahfs_stat(&self->fs, "op_revalidate");
	f0 = ahfs_stat(&self->fs, "revalidate_fail");
	ASSERT_LE(0, r0);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, at_ino(dfd, "d/a", &x));
		ASSERT_EQ(a, x);
		ASSERT_EQ(-ENOENT, at_ino(dfd, "d/late", &x));
	}
	EXPECT_EQ(r0, ahfs_stat(&self->fs, "op_revalidate"));

	/* Renamed in the lower: the old name is gone, the new one is it. */
	ASSERT_EQ(0, rename(ahfs_l(&self->fs, l, "d/a"),
			    ahfs_l(&self->fs, l2, "d/a2")));
	EXPECT_EQ(-ENOENT, at_ino(dfd, "d/a", &x));
	ASSERT_EQ(0, at_ino(dfd, "d/a2", &x));
	EXPECT_EQ(a, x);
	EXPECT_LT(f0, ahfs_stat(&self->fs, "revalidate_fail"));
	/* Exchanged in the lower: each name holds the other's inode. */
	ASSERT_EQ(0, syscall(SYS_renameat2, AT_FDCWD,
			     ahfs_l(&self->fs, l, "d/a2"), AT_FDCWD,
			     ahfs_l(&self->fs, l2, "d/b"), RENAME_EXCHANGE));
	ASSERT_EQ(0, at_ino(dfd, "d/a2", &x));
	EXPECT_EQ(b, x);
	ASSERT_EQ(0, at_ino(dfd, "d/b", &x));
	EXPECT_EQ(a, x);
	/* Moved to another directory under the same name. */
	ASSERT_EQ(0, rename(ahfs_l(&self->fs, l, "d/b"),
			    ahfs_l(&self->fs, l2, "e/b")));
	EXPECT_EQ(-ENOENT, at_ino(dfd, "d/b", &x));
	ASSERT_EQ(0, at_ino(dfd, "e/b", &x));
	EXPECT_EQ(a, x);
	/* Removed, then made again as another inode. */
	ASSERT_EQ(0, unlink(ahfs_l(&self->fs, l, "d/a2")));
	EXPECT_EQ(-ENOENT, at_ino(dfd, "d/a2", &x));
	ASSERT_EQ(0, ahfs_put(l, "new"));
	ASSERT_EQ(0, at_ino(dfd, "d/a2", &x));
	EXPECT_EQ(ino(l), x);
	EXPECT_STREQ("new", get(ahfs_m(&self->fs, m, "d/a2")));
	/* A name the lower gains: the negative dentry gives way. */
	ASSERT_EQ(0, ahfs_put(ahfs_l(&self->fs, l, "d/late"), "late"));
	ASSERT_EQ(0, at_ino(dfd, "d/late", &x));
	EXPECT_EQ(ino(l), x);
	/* The directory renamed in the lower: a walk through its old name. */
	ASSERT_EQ(0, rename(ahfs_l(&self->fs, l, "d"),
			    ahfs_l(&self->fs, l2, "d2")));
	EXPECT_EQ(-ENOENT, at_ino(dfd, "d/late", &x));
	ASSERT_EQ(0, at_ino(dfd, "d2/late", &x));
	EXPECT_EQ(ino(ahfs_l(&self->fs, l, "d2/late")), x);

	/*
	 * Made append-only on the lower directly: an open for writing
	 * without O_APPEND, which the VFS refuses on our inode's flags, is
	 * refused through the mount as on the lower, the name walked in RCU
	 * mode; with O_APPEND it opens on both sides.
	 */
	fd = open(ahfs_l(&self->fs, l, "d2/late"), O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, FS_IOC_GETFLAGS, &fl));
	ASSERT_EQ(0, ioctl(fd, FS_IOC_SETFLAGS, &(int){ fl | FS_APPEND_FL }));
	wfd = openat(dfd, "d2/late", O_WRONLY);
	err = wfd < 0 ? errno : 0;
	EXPECT_EQ(EPERM, err);
	if (wfd >= 0)
		close(wfd);
	EXPECT_EQ(-1, open(l, O_WRONLY));
	wfd = openat(dfd, "d2/late", O_WRONLY | O_APPEND);
	EXPECT_LE(0, wfd);
	if (wfd >= 0)
		close(wfd);
	ASSERT_EQ(0, ioctl(fd, FS_IOC_SETFLAGS, &fl));
	close(fd);
	wfd = openat(dfd, "d2/late", O_WRONLY);
	EXPECT_LE(0, wfd);
	if (wfd >= 0)
		close(wfd);

	/* Unchanged again: RCU mode again. */
	ASSERT_EQ(0, at_ino(dfd, "d2/late", &x));
	r0 = ahfs_stat(&self->fs, "op_revalidate");
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, at_ino(dfd, "d2/late", &x));
	EXPECT_EQ(r0, ahfs_stat(&self->fs, "op_revalidate"));
	close(dfd);
}

/* op_<name> counters follow the operations made. */
TEST_F(ns, op_counters)
{
	char m[PATH_MAX];
	long long c0, u0, m0;

	c0 = ahfs_stat(&self->fs, "op_create");
	u0 = ahfs_stat(&self->fs, "op_unlink");
	m0 = ahfs_stat(&self->fs, "op_mkdir");
	ASSERT_LE(0, c0);
	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, m, "c1"), "1"));
	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, m, "c2"), "2"));
	ASSERT_EQ(0, unlink(ahfs_m(&self->fs, m, "c1")));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, m, "dd"), 0755));
	EXPECT_EQ(c0 + 2, ahfs_stat(&self->fs, "op_create"));
	EXPECT_EQ(u0 + 1, ahfs_stat(&self->fs, "op_unlink"));
	EXPECT_EQ(m0 + 1, ahfs_stat(&self->fs, "op_mkdir"));
}

/* Permission checks of a walk, and the ioctls passed on, are counted too. */
TEST_F(ns, permission_and_ioctl_counted)
{
	char m[PATH_MAX];
	long long p0, i0;
	struct stat st;
	int fd, flags;

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, m, "pd"), 0755));
	ASSERT_EQ(0, ahfs_put(ahfs_m(&self->fs, m, "pd/f"), "x"));
	p0 = ahfs_stat(&self->fs, "op_permission");
	i0 = ahfs_stat(&self->fs, "op_ioctl");
	ASSERT_LE(0, p0);
	ASSERT_EQ(0, stat(ahfs_m(&self->fs, m, "pd/f"), &st));
	EXPECT_LT(p0, ahfs_stat(&self->fs, "op_permission"));
	fd = open(m, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, FS_IOC_GETFLAGS, &flags));
	close(fd);
	EXPECT_EQ(i0 + 1, ahfs_stat(&self->fs, "op_ioctl"));
}

TEST_HARNESS_MAIN
