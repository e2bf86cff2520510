// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs misuse and bad input: each gets a clear errno and one dmesg line
 * naming the problem, never an oops, and nothing is lost.
 *
 * guest-run: fstypes=ext4 (its subject is aheadfs's own checks of its
 * arguments and options, made before the lower is asked anything)
 */
#include "aheadfs_test.h"

FIXTURE(err) {
	struct ahfs fs;
	int kmsg;
};

FIXTURE_SETUP(err)
{
	ASSERT_EQ(0, ahfs_setup(&self->fs, "err", NULL));
	self->kmsg = ahfs_kmsg_open();
	ASSERT_LE(0, self->kmsg);
}

FIXTURE_TEARDOWN(err)
{
	close(self->kmsg);
	ahfs_teardown(&self->fs);
}

/* mount(2) must fail with @err and log a line containing @needle. */
static void bad_mount(struct __test_metadata *_metadata, int kmsg,
		      const char *src, const char *mnt, const char *opts,
		      int err, const char *needle)
{
	EXPECT_EQ(-err, ahfs_mount_at(src, mnt, opts)) {
		TH_LOG("mount %s -o '%s'", src ? src : "(null)", opts);
	}
	EXPECT_TRUE(ahfs_kmsg_grep(kmsg, needle)) {
		TH_LOG("no dmesg line with '%s' for -o '%s'", needle, opts);
	}
}

TEST_F(err, missing_lower)
{
	char p[PATH_MAX];

	bad_mount(_metadata, self->kmsg, ahfs_l(&self->fs, p, "nope"),
		  self->fs.mnt, "", ENOENT, "no such directory");
}

TEST_F(err, lower_not_a_directory)
{
	char p[PATH_MAX];

	ASSERT_EQ(0, ahfs_make_file(ahfs_l(&self->fs, p, "file"), 10));
	bad_mount(_metadata, self->kmsg, p, self->fs.mnt, "", ENOTDIR,
		  "not a directory");
}

TEST_F(err, no_source)
{
	EXPECT_EQ(-1, mount(NULL, self->fs.mnt, "aheadfs", 0, ""));
	EXPECT_TRUE(errno == EINVAL || errno == ENOENT);
	EXPECT_TRUE(ahfs_kmsg_grep(self->kmsg, "LOWERDIR"));
}

TEST_F(err, bad_options)
{
	static const struct { const char *opts, *needle; } cases[] = {
		{ "bogus=1", "bogus" },
		{ "txn_kb=abc", "txn_kb" },
		{ "txn_kb=1", "txn_kb=1 out of range" },
		{ "txn_kb=99999999", "txn_kb=99999999 out of range" },
		{ "window_kb=-5", "window_kb" },
		{ "prefetch=sometimes", "prefetch" },
		{ "attr_timeout_ms=1e3", "attr_timeout_ms" },
		{ "entry_timeout_ms=999999999", "entry_timeout_ms" },
		{ "negative_timeout_ms=3600001", "negative_timeout_ms" },
		{ "readdir_cache=2", "readdir_cache=2 out of range" },
		{ "fh_search_entries=16777217",
		  "fh_search_entries=16777217 out of range" },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bad_mount(_metadata, self->kmsg, self->fs.lower, self->fs.mnt,
			  cases[i].opts, EINVAL, cases[i].needle);
}

TEST_F(err, good_options_shown_in_proc_mounts)
{
	char buf[65536], want[PATH_MAX + 128];
	int n;

	ASSERT_EQ(0, ahfs_mount_at(self->fs.lower, self->fs.mnt,
				   "prefetch=legacy,txn_kb=1024,window_kb=4096,attr_timeout_ms=50,entry_timeout_ms=60,negative_timeout_ms=70,readdir_cache=1,fh_search_entries=77"));
	self->fs.mounted = 1;
	ASSERT_EQ(0, ahfs_find_sysfs(&self->fs));
	n = ahfs_read_file("/proc/self/mounts", buf, sizeof(buf));
	ASSERT_LT(0, n);
	ahfs_fmt(want, sizeof(want), "%s %s aheadfs ", self->fs.lower,
		 self->fs.mnt);
	ASSERT_NE(NULL, strstr(buf, want));
	EXPECT_NE(NULL, strstr(strstr(buf, want),
			       "prefetch=legacy,txn_kb=1024,window_kb=4096,attr_timeout_ms=50,entry_timeout_ms=60,negative_timeout_ms=70,readdir_cache=1,fh_search_entries=77"));
	ASSERT_LT(0, ahfs_get(&self->fs, "txn_kb", buf, sizeof(buf)));
	EXPECT_STREQ("1024", buf);
	ASSERT_LT(0, ahfs_get(&self->fs, "prefetch", buf, sizeof(buf)));
	EXPECT_STREQ("legacy", buf);

	/* remount changes tunables in place. */
	ASSERT_EQ(0, mount(NULL, self->fs.mnt, NULL, MS_REMOUNT,
			   "txn_kb=2048,prefetch=ahead"));
	ASSERT_LT(0, ahfs_get(&self->fs, "txn_kb", buf, sizeof(buf)));
	EXPECT_STREQ("2048", buf);
	ASSERT_LT(0, ahfs_get(&self->fs, "prefetch", buf, sizeof(buf)));
	EXPECT_STREQ("ahead", buf);
}

TEST_F(err, bad_sysfs_writes)
{
	char buf[64];
	int i;

	ASSERT_EQ(0, ahfs_mount_at(self->fs.lower, self->fs.mnt, ""));
	self->fs.mounted = 1;
	ASSERT_EQ(0, ahfs_find_sysfs(&self->fs));

	EXPECT_EQ(-EINVAL, ahfs_set(&self->fs, "txn_kb", "0"));
	EXPECT_TRUE(ahfs_kmsg_grep(self->kmsg, "invalid txn_kb"));
	EXPECT_EQ(-EINVAL, ahfs_set(&self->fs, "window_kb", "lots"));
	EXPECT_TRUE(ahfs_kmsg_grep(self->kmsg, "invalid window_kb"));
	EXPECT_EQ(-EINVAL, ahfs_set(&self->fs, "prefetch", "maybe"));
	EXPECT_TRUE(ahfs_kmsg_grep(self->kmsg, "invalid prefetch mode"));
	EXPECT_EQ(-EACCES, ahfs_set(&self->fs, "stats", "0"));
	/* Each refused write has its line, however many come in a row. */
	for (i = 0; i < 16; i++) {
		snprintf(buf, sizeof(buf), "bad%d", i);
		EXPECT_EQ(-EINVAL, ahfs_set(&self->fs, "window_kb", buf));
	}
	EXPECT_TRUE(ahfs_kmsg_grep(self->kmsg,
				   "invalid window_kb value 'bad15'"));
	/* Nothing changed by the failed writes. */
	ASSERT_LT(0, ahfs_get(&self->fs, "txn_kb", buf, sizeof(buf)));
	EXPECT_STREQ("8192", buf);
	ASSERT_LT(0, ahfs_get(&self->fs, "prefetch", buf, sizeof(buf)));
	EXPECT_STREQ("ahead", buf);

	EXPECT_EQ(0, ahfs_set(&self->fs, "txn_kb", "512"));
	ASSERT_LT(0, ahfs_get(&self->fs, "txn_kb", buf, sizeof(buf)));
	EXPECT_STREQ("512", buf);
}

/*
 * A create, write, fsync, rename, link, mkdir, unlink and rmdir through the
 * mount at @top, each seen in @lower; then sync(2), which reaches every
 * layer.  0 or the first step that failed.
 */
static int stacked_ops(struct __test_metadata *_metadata, const char *top,
		       const char *lower)
{
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], d[PATH_MAX], buf[8];
	struct stat st;
	int fd;

	ahfs_fmt(a, sizeof(a), "%s/a", top);
	ahfs_fmt(b, sizeof(b), "%s/b", top);
	ahfs_fmt(c, sizeof(c), "%s/c", top);
	ahfs_fmt(d, sizeof(d), "%s/d", top);
	fd = open(a, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return 1;
	if (write(fd, "stacked", 7) != 7 || fsync(fd) || close(fd))
		return 2;
	if (rename(a, b) || link(b, c) || mkdir(d, 0755))
		return 3;
	ahfs_fmt(a, sizeof(a), "%s/c", lower);
	if (ahfs_read_file(a, buf, sizeof(buf)) != 7 || strcmp(buf, "stacked"))
		return 4;
	if (stat(a, &st) || st.st_nlink != 2)
		return 5;
	if (unlink(b) || unlink(c) || rmdir(d))
		return 6;
	sync();
	ahfs_fmt(a, sizeof(a), "%s/d", lower);
	return access(a, F_OK) ? 0 : 7;
}

TEST_F(err, stack_depth)
{
	char m2[PATH_MAX], m3[PATH_MAX];

	/* ext4/xfs (0) < aheadfs (1) < aheadfs (2) is the deepest allowed. */
	ASSERT_EQ(0, ahfs_mount_at(self->fs.lower, self->fs.mnt, ""));
	self->fs.mounted = 1;
	ASSERT_EQ(0, mkdir(ahfs_fmt(m2, sizeof(m2), "%s/m2", self->fs.base), 0755));
	ASSERT_EQ(0, mkdir(ahfs_fmt(m3, sizeof(m3), "%s/m3", self->fs.base), 0755));
	ASSERT_EQ(0, ahfs_mount_at(self->fs.mnt, m2, ""));
	bad_mount(_metadata, self->kmsg, m2, m3, "", EINVAL,
		  "stacked too deep");
	/*
	 * Through both layers: each takes the one below's locks while it
	 * holds its own (make check-debug's lockdep sees them in order).
	 */
	EXPECT_EQ(0, stacked_ops(_metadata, m2, self->fs.lower));
	EXPECT_EQ(0, umount(m2));
}

TEST_F(err, umount_while_busy)
{
	char p[PATH_MAX];
	int fd;

	ASSERT_EQ(0, ahfs_mount_at(self->fs.lower, self->fs.mnt, ""));
	self->fs.mounted = 1;
	fd = open(ahfs_m(&self->fs, p, "held"), O_RDWR | O_CREAT, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(4, write(fd, "data", 4));
	EXPECT_EQ(-1, umount(self->fs.mnt));
	EXPECT_EQ(EBUSY, errno);
	close(fd);
	EXPECT_EQ(0, umount(self->fs.mnt));
	self->fs.mounted = 0;
	/* Data written before the unmount is in the lower. */
	ASSERT_EQ(4, ahfs_read_file(ahfs_l(&self->fs, p, "held"), p, 16));
	EXPECT_EQ(0, memcmp(p, "data", 4));
}

TEST_F(err, rmmod_while_mounted)
{
	char p[PATH_MAX];

	ASSERT_EQ(0, ahfs_mount_at(self->fs.lower, self->fs.mnt, ""));
	self->fs.mounted = 1;
	/* delete_module(2) refuses a module whose filesystem is mounted. */
	EXPECT_NE(0, ahfs_run("rmmod aheadfs 2>/dev/null"));
	EXPECT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, p, "after"), 100));
	EXPECT_EQ(0, access(ahfs_l(&self->fs, p, "after"), F_OK));
}

/* The lower directory is removed under a live mount. */
TEST_F(err, lower_removed)
{
	char p[PATH_MAX];
	struct stat st;
	int fd;

	ASSERT_EQ(0, mkdir(ahfs_l(&self->fs, p, "sub"), 0755));
	ASSERT_EQ(0, ahfs_mount_at(p, self->fs.mnt, ""));
	self->fs.mounted = 1;
	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, p, "f"), 10));
	fd = open(p, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ahfs_run("rm -rf '%s/sub'", self->fs.lower));

	EXPECT_EQ(-1, stat(ahfs_m(&self->fs, p, "f"), &st));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, open(ahfs_m(&self->fs, p, "new"), O_CREAT | O_WRONLY, 0644));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, mkdir(ahfs_m(&self->fs, p, "newdir"), 0755));
	EXPECT_EQ(ENOENT, errno);
	/* The open file still reads. */
	EXPECT_EQ(10, read(fd, p, 10));
	close(fd);
	EXPECT_EQ(0, stat(self->fs.mnt, &st));
	EXPECT_EQ(0, umount(self->fs.mnt));
	self->fs.mounted = 0;
}

/*
 * A directory removed from the lower while the mount still holds it (a cwd,
 * an O_PATH fd): what works on a removed directory natively works, creating
 * in it fails with ENOENT.
 */
TEST_F(err, lower_removed_under_cwd)
{
	char p[PATH_MAX];
	struct stat st;
	int fd, ffd;

	ASSERT_EQ(0, ahfs_mount_at(self->fs.lower, self->fs.mnt, ""));
	self->fs.mounted = 1;
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, p, "gone"), 0755));
	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, p, "gone/f"), 10));
	fd = open(ahfs_m(&self->fs, p, "gone"), O_PATH | O_DIRECTORY);
	ASSERT_LE(0, fd);
	ffd = open(ahfs_m(&self->fs, p, "gone/f"), O_PATH);
	ASSERT_LE(0, ffd);
	ASSERT_EQ(0, chdir(ahfs_m(&self->fs, p, "gone")));
	ASSERT_EQ(0, ahfs_run("rm -rf '%s/gone'", self->fs.lower));

	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_TRUE(S_ISDIR(st.st_mode));
	EXPECT_EQ(0, st.st_nlink);
	ASSERT_EQ(0, fstat(ffd, &st));
	EXPECT_EQ(0, st.st_nlink);
	EXPECT_EQ(0, stat(".", &st));
	EXPECT_EQ(0, chmod(".", 0700));
	EXPECT_EQ(-1, open("new", O_CREAT | O_WRONLY, 0644));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, mkdir("newdir", 0755));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, access("f", F_OK));
	ASSERT_EQ(0, chdir("/"));
	close(fd);
	close(ffd);
}

/*
 * Removed through the mount while an O_PATH fd holds it: the lower dentry
 * must stay usable for the fd (it once turned negative under us and the
 * next fstat dereferenced NULL).
 */
TEST_F(err, removed_while_held)
{
	char p[PATH_MAX], q[PATH_MAX], buf[16];
	struct stat st;
	int dfd, ffd, rfd;

	ASSERT_EQ(0, ahfs_mount_at(self->fs.lower, self->fs.mnt, ""));
	self->fs.mounted = 1;
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, p, "d"), 0755));
	dfd = open(p, O_PATH | O_DIRECTORY);
	ASSERT_LE(0, dfd);
	ASSERT_EQ(0, rmdir(p));
	ASSERT_EQ(0, fstat(dfd, &st));
	EXPECT_EQ(0, st.st_nlink);

	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, p, "f"), 10));
	ffd = open(p, O_PATH);
	ASSERT_LE(0, ffd);
	ASSERT_EQ(0, unlink(p));
	ASSERT_EQ(0, fstat(ffd, &st));
	EXPECT_EQ(0, st.st_nlink);
	EXPECT_EQ(10, st.st_size);
	/* Reopening the removed file through /proc reaches our ->open. */
	rfd = open(ahfs_fmt(p, sizeof(p), "/proc/self/fd/%d", ffd), O_RDONLY);
	ASSERT_LE(0, rfd);
	EXPECT_EQ(10, read(rfd, buf, sizeof(buf)));
	close(rfd);

	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, p, "victim"), 3));
	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, p, "src"), 5));
	rfd = open(ahfs_m(&self->fs, p, "victim"), O_PATH);
	ASSERT_LE(0, rfd);
	ASSERT_EQ(0, rename(ahfs_m(&self->fs, p, "src"),
			    ahfs_m(&self->fs, q, "victim")));
	ASSERT_EQ(0, fstat(rfd, &st));
	EXPECT_EQ(3, st.st_size);
	EXPECT_EQ(0, st.st_nlink);
	close(rfd);
	close(ffd);
	close(dfd);
}

/* The lower is a bind mount that is lazily unmounted: the mount pins it. */
TEST_F(err, lower_detached)
{
	char bind[PATH_MAX], p[PATH_MAX];

	ASSERT_EQ(0, mkdir(ahfs_fmt(bind, sizeof(bind), "%s/bind", self->fs.base), 0755));
	ASSERT_EQ(0, mount(self->fs.lower, bind, NULL, MS_BIND, NULL));
	ASSERT_EQ(0, ahfs_mount_at(bind, self->fs.mnt, ""));
	self->fs.mounted = 1;
	EXPECT_EQ(-1, umount(bind));
	EXPECT_EQ(EBUSY, errno);
	ASSERT_EQ(0, umount2(bind, MNT_DETACH));
	EXPECT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, p, "still"), 100));
	EXPECT_EQ(0, access(ahfs_l(&self->fs, p, "still"), F_OK));
}

TEST_HARNESS_MAIN
