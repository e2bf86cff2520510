// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs attributes: getattr/statx follow the lower, setattr reaches it,
 * xattrs (user, trusted, security, POSIX ACLs) pass both ways, statfs is
 * the lower's, and the opt-in attribute cache behaves as documented.
 */
#include "aheadfs_test.h"

#include <dirent.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <sys/xattr.h>

FIXTURE(attr) {
	struct ahfs fs;
	char m[PATH_MAX];
	char l[PATH_MAX];
};

FIXTURE_SETUP(attr)
{
	ASSERT_EQ(0, ahfs_setup(&self->fs, "attr", ""));
	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, self->m, "f"), 1000));
	ahfs_l(&self->fs, self->l, "f");
}

FIXTURE_TEARDOWN(attr)
{
	ahfs_teardown(&self->fs);
}

static void same_stat(struct __test_metadata *_metadata, const char *m,
		      const char *l)
{
	struct stat a, b;

	ASSERT_EQ(0, lstat(m, &a));
	ASSERT_EQ(0, lstat(l, &b));
	EXPECT_EQ(b.st_ino, a.st_ino);
	EXPECT_EQ(b.st_mode, a.st_mode);
	EXPECT_EQ(b.st_nlink, a.st_nlink);
	EXPECT_EQ(b.st_uid, a.st_uid);
	EXPECT_EQ(b.st_gid, a.st_gid);
	EXPECT_EQ(b.st_size, a.st_size);
	EXPECT_EQ(b.st_blocks, a.st_blocks);
	EXPECT_EQ(b.st_mtim.tv_sec, a.st_mtim.tv_sec);
	EXPECT_EQ(b.st_mtim.tv_nsec, a.st_mtim.tv_nsec);
	EXPECT_EQ(b.st_ctim.tv_nsec, a.st_ctim.tv_nsec);
}

TEST_F(attr, stat_follows_lower)
{
	struct statx sx;

	same_stat(_metadata, self->m, self->l);
	ASSERT_EQ(0, ahfs_run("chmod 0604 '%s'; truncate -s 4321 '%s'",
			      self->l, self->l));
	same_stat(_metadata, self->m, self->l);
	same_stat(_metadata, self->fs.mnt, self->fs.lower);

	ASSERT_EQ(0, statx(AT_FDCWD, self->m, 0, STATX_ALL, &sx));
	EXPECT_EQ(4321, sx.stx_size);
	EXPECT_TRUE(sx.stx_mask & STATX_INO);
}

TEST_F(attr, setattr_reaches_lower)
{
	struct timeval tv[2] = { { 1000000000, 0 }, { 1200000000, 500000 } };
	struct stat st;
	int fd;

	ASSERT_EQ(0, chmod(self->m, 0640));
	ASSERT_EQ(0, chown(self->m, 1234, 5678));
	ASSERT_EQ(0, truncate(self->m, 1 << 20));
	ASSERT_EQ(0, utimes(self->m, tv));
	ASSERT_EQ(0, stat(self->l, &st));
	EXPECT_EQ(0640, st.st_mode & 07777);
	EXPECT_EQ(1234, st.st_uid);
	EXPECT_EQ(5678, st.st_gid);
	EXPECT_EQ(1 << 20, st.st_size);
	EXPECT_EQ(1000000000, st.st_atim.tv_sec);
	EXPECT_EQ(1200000000, st.st_mtim.tv_sec);
	EXPECT_EQ(500000000, st.st_mtim.tv_nsec);
	same_stat(_metadata, self->m, self->l);

	/* ftruncate goes through the open file. */
	fd = open(self->m, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 10));
	ASSERT_EQ(0, fchmod(fd, 0600));
	close(fd);
	ASSERT_EQ(0, stat(self->l, &st));
	EXPECT_EQ(10, st.st_size);
	EXPECT_EQ(0600, st.st_mode & 07777);

	/* chown drops setuid, as on the lower. */
	ASSERT_EQ(0, chmod(self->m, 04755));
	ASSERT_EQ(0, chown(self->m, 0, 0));
	ASSERT_EQ(0, stat(self->l, &st));
	EXPECT_EQ(0, st.st_mode & 04000);
}

TEST_F(attr, xattrs_both_ways)
{
	char buf[256] = {}, list[1024] = {};
	ssize_t n;

	ASSERT_EQ(0, setxattr(self->m, "user.up", "v1", 2, 0));
	ASSERT_EQ(2, getxattr(self->l, "user.up", buf, sizeof(buf)));
	EXPECT_STREQ("v1", buf);
	ASSERT_EQ(0, setxattr(self->l, "user.down", "v22", 3, 0));
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(3, getxattr(self->m, "user.down", buf, sizeof(buf)));
	EXPECT_STREQ("v22", buf);
	EXPECT_EQ(3, getxattr(self->m, "user.down", NULL, 0));

	EXPECT_EQ(-1, setxattr(self->m, "user.up", "x", 1, XATTR_CREATE));
	EXPECT_EQ(EEXIST, errno);
	EXPECT_EQ(-1, setxattr(self->m, "user.none", "x", 1, XATTR_REPLACE));
	EXPECT_EQ(ENODATA, errno);
	EXPECT_EQ(-1, getxattr(self->m, "user.up", buf, 1));
	EXPECT_EQ(ERANGE, errno);

	ASSERT_EQ(0, setxattr(self->m, "trusted.t", "tt", 2, 0));
	ASSERT_EQ(2, getxattr(self->l, "trusted.t", buf, sizeof(buf)));
	ASSERT_EQ(0, setxattr(self->m, "security.aheadfs", "s", 1, 0));
	ASSERT_EQ(1, getxattr(self->l, "security.aheadfs", buf, sizeof(buf)));

	n = listxattr(self->m, list, sizeof(list));
	ASSERT_LT(0, n);
	EXPECT_EQ(listxattr(self->l, buf, 0), n);
	EXPECT_TRUE(memmem(list, n, "user.up", 8) != NULL);
	EXPECT_TRUE(memmem(list, n, "user.down", 10) != NULL);

	ASSERT_EQ(0, removexattr(self->m, "user.up"));
	EXPECT_EQ(-1, getxattr(self->l, "user.up", buf, sizeof(buf)));
	EXPECT_EQ(ENODATA, errno);
	EXPECT_EQ(-1, removexattr(self->m, "user.up"));
	EXPECT_EQ(ENODATA, errno);
	EXPECT_EQ(-1, setxattr(self->m, "bogus.ns", "x", 1, 0));
	EXPECT_EQ(EOPNOTSUPP, errno);
}

TEST_F(attr, posix_acls)
{
	char d[PATH_MAX], f[PATH_MAX];
	int n;

	ASSERT_EQ(0, ahfs_run("setfacl -m u:4321:rw- '%s'", self->m));
	ASSERT_EQ(0, ahfs_run("getfacl -cp '%s' 2>/dev/null | grep -qx 'user:4321:rw-'",
			      self->l));
	ASSERT_EQ(0, ahfs_run("getfacl -cp '%s' 2>/dev/null | grep -qx 'user:4321:rw-'",
			      self->m));

	/* A default ACL set through the mount is inherited by new files. */
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, d, "acl"), 0755));
	ASSERT_EQ(0, ahfs_run("setfacl -d -m u:999:r-x '%s'", d));
	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, f, "acl/new"), 1));
	ASSERT_EQ(0, ahfs_run("getfacl -cp '%s' 2>/dev/null | grep -q '^user:999:r-x'",
			      ahfs_l(&self->fs, f, "acl/new")));

	/* The ACL grants access through the mount as on the lower. */
	ASSERT_EQ(0, ahfs_run("setfacl -b '%s'", self->m));
	n = ahfs_run("getfacl -cp '%s' 2>/dev/null | grep -q 'user:4321'", self->l);
	EXPECT_NE(0, n);
}

TEST_F(attr, statfs_is_lower)
{
	struct statfs a, b;

	ASSERT_EQ(0, statfs(self->fs.mnt, &a));
	ASSERT_EQ(0, statfs(self->fs.lower, &b));
	EXPECT_EQ(0xa4ead0f5, (unsigned long)a.f_type);
	EXPECT_EQ(b.f_bsize, a.f_bsize);
	EXPECT_EQ(b.f_blocks, a.f_blocks);
	EXPECT_EQ(b.f_files, a.f_files);
}

/* attr_timeout_ms: off by default; when set, served from cache. */
TEST_F(attr, attr_cache_opt_in)
{
	struct statx sx;
	struct stat st;
	long long hits;

	/* Written back: a file with dirty pages is never stat'ed from cache. */
	ASSERT_EQ(0, ahfs_run("sync '%s'", self->l));
	/* Default: every stat sees the lower at once. */
	ASSERT_EQ(0, stat(self->m, &st));
	ASSERT_EQ(0, chmod(self->l, 0611));
	ASSERT_EQ(0, stat(self->m, &st));
	EXPECT_EQ(0611, st.st_mode & 07777);
	EXPECT_EQ(0, ahfs_stat(&self->fs, "attr_cache_hits"));

	ASSERT_EQ(0, ahfs_set(&self->fs, "attr_timeout_ms", "600000"));
	ASSERT_EQ(0, stat(self->m, &st));
	hits = ahfs_stat(&self->fs, "attr_cache_hits");
	ASSERT_EQ(0, chmod(self->l, 0622));
	ASSERT_EQ(0, stat(self->m, &st));
	/* A change behind the mount's back is not seen within the timeout... */
	EXPECT_EQ(0611, st.st_mode & 07777);
	EXPECT_LT(hits, ahfs_stat(&self->fs, "attr_cache_hits"));
	/* ...but the mount's own changes are. */
	ASSERT_EQ(0, chmod(self->m, 0644));
	ASSERT_EQ(0, stat(self->m, &st));
	EXPECT_EQ(0644, st.st_mode & 07777);
	ASSERT_EQ(0, truncate(self->m, 77));
	ASSERT_EQ(0, stat(self->m, &st));
	EXPECT_EQ(77, st.st_size);
	/* AT_STATX_FORCE_SYNC bypasses the cache. */
	ASSERT_EQ(0, chmod(self->l, 0600));
	ASSERT_EQ(0, statx(AT_FDCWD, self->m, AT_STATX_FORCE_SYNC, STATX_MODE,
			   &sx));
	EXPECT_EQ(0600, sx.stx_mode & 07777);
	ASSERT_EQ(0, ahfs_set(&self->fs, "attr_timeout_ms", "0"));
	ASSERT_EQ(0, chmod(self->l, 0604));
	ASSERT_EQ(0, stat(self->m, &st));
	EXPECT_EQ(0604, st.st_mode & 07777);
}

/*
 * A stat from the attribute cache is what a fresh one says after the
 * mount's own changes that allocate without writing data (300 creates in a
 * directory, a large xattr): st_blocks follows the lower; and a statx from
 * the cache keeps the birth time and the statx attributes.
 */
TEST_F_TIMEOUT(attr, attr_cache_stat_after_own_changes, 120)
{
	char d[PATH_MAX], ld[PATH_MAX], p[PATH_MAX], name[32];
	struct statx a, b;
	struct stat sm, sl;
	char big[3000];
	long long hits;
	int i;

	ASSERT_EQ(0, ahfs_set(&self->fs, "attr_timeout_ms", "600000"));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, d, "big"), 0755));
	ahfs_l(&self->fs, ld, "big");
	ASSERT_EQ(0, stat(d, &sm));
	ASSERT_EQ(0, stat(d, &sm));
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "big/a-longer-file-name-%d", i);
		ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, p, name), 0));
	}
	ASSERT_EQ(0, stat(ld, &sl));
	ASSERT_EQ(0, stat(d, &sm));
	EXPECT_EQ(sl.st_blocks, sm.st_blocks);
	EXPECT_EQ(sl.st_size, sm.st_size);

	ASSERT_EQ(0, stat(self->m, &sm));
	memset(big, 'x', sizeof(big));
	ASSERT_EQ(0, setxattr(self->m, "user.big", big, sizeof(big), 0));
	ASSERT_EQ(0, stat(self->l, &sl));
	ASSERT_EQ(0, stat(self->m, &sm));
	EXPECT_EQ(sl.st_blocks, sm.st_blocks);

	/* A file not stat'ed yet: the first statx asks the lower. */
	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, p, "g"), 0));
	ASSERT_EQ(0, ahfs_run("chattr +a '%s'", ahfs_l(&self->fs, ld, "g")));
	ASSERT_EQ(0, statx(AT_FDCWD, ld, 0, STATX_BASIC_STATS | STATX_BTIME, &b));
	ASSERT_EQ(0, statx(AT_FDCWD, p, 0, STATX_BASIC_STATS | STATX_BTIME, &a));
	hits = ahfs_stat(&self->fs, "attr_cache_hits");
	ASSERT_EQ(0, statx(AT_FDCWD, p, 0, STATX_BASIC_STATS | STATX_BTIME, &a));
	EXPECT_LT(hits, ahfs_stat(&self->fs, "attr_cache_hits")) {
		TH_LOG("the second statx was not from the cache: the test proves nothing");
	}
	EXPECT_EQ(b.stx_mask & STATX_BTIME, a.stx_mask & STATX_BTIME);
	EXPECT_EQ(b.stx_btime.tv_sec, a.stx_btime.tv_sec);
	EXPECT_EQ(b.stx_btime.tv_nsec, a.stx_btime.tv_nsec);
	EXPECT_TRUE(a.stx_attributes & STATX_ATTR_APPEND);
	EXPECT_EQ(b.stx_attributes, a.stx_attributes);
	EXPECT_EQ(b.stx_attributes_mask, a.stx_attributes_mask);
	ASSERT_EQ(0, ahfs_run("chattr -a '%s'", ld));
}

/*
 * A stat from the attribute cache never reports older data than a fresh
 * one: after a write through the mount the lower answers the next stat,
 * and so it does while the lower has dirty pages of the file or while a
 * shared writable mapping exists; with the file's pages clean and no such
 * mapping, the cache answers again.
 */
TEST_F(attr, attr_cache_follows_data)
{
	long long hits;
	struct stat st, lst;
	char *p;
	int fd;

	/* The fixture's file, written back: its dirty pages keep the cache off. */
	ASSERT_EQ(0, ahfs_run("sync '%s'", self->l));
	ASSERT_EQ(0, ahfs_set(&self->fs, "attr_timeout_ms", "600000"));
	fd = open(self->m, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, stat(self->m, &st));
	hits = ahfs_stat(&self->fs, "attr_cache_hits");
	ASSERT_EQ(0, stat(self->m, &st));
	EXPECT_EQ(hits + 1, ahfs_stat(&self->fs, "attr_cache_hits"));

	ASSERT_EQ(3, pwrite(fd, "abc", 3, 1000));
	hits = ahfs_stat(&self->fs, "attr_cache_hits");
	ASSERT_EQ(0, stat(self->m, &st));
	EXPECT_EQ(hits, ahfs_stat(&self->fs, "attr_cache_hits"));
	EXPECT_EQ(1003, st.st_size);
	/* Answered once, but the lower still has the write's dirty pages. */
	ASSERT_EQ(0, stat(self->m, &st));
	EXPECT_EQ(hits, ahfs_stat(&self->fs, "attr_cache_hits"));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, stat(self->m, &st));
	ASSERT_EQ(0, stat(self->l, &lst));
	EXPECT_EQ(hits + 1, ahfs_stat(&self->fs, "attr_cache_hits"));
	EXPECT_EQ(lst.st_mtim.tv_sec, st.st_mtim.tv_sec);
	EXPECT_EQ(lst.st_mtim.tv_nsec, st.st_mtim.tv_nsec);

	/* Mapped shared and writable: every stat asks the lower. */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	hits = ahfs_stat(&self->fs, "attr_cache_hits");
	ASSERT_EQ(0, stat(self->m, &st));
	ASSERT_EQ(0, stat(self->m, &st));
	EXPECT_EQ(hits, ahfs_stat(&self->fs, "attr_cache_hits"));
	ASSERT_EQ(0, munmap(p, 4096));
	/* Read-only or private mappings change nothing the cache holds. */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 'x';
	ASSERT_EQ(0, stat(self->m, &st));
	EXPECT_EQ(hits + 1, ahfs_stat(&self->fs, "attr_cache_hits"));
	ASSERT_EQ(0, munmap(p, 4096));
	close(fd);
}

/* The entries of @path that readdir lists, "." and ".." aside. */
static int count_entries(const char *path)
{
	struct dirent *de;
	int n = 0;
	DIR *d;

	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/*
 * Readdir priming (entry_timeout_ms on): a listing stamps every entry the
 * lower holds in its dcache, from the lower's inode as it is then, which on
 * a local lower is the truth.  So a change made on the lower behind the
 * mount's back, not seen within the timeout before, is seen after the next
 * listing, from the cache.  With the entry cache off nothing is primed.
 */
TEST_F(attr, readdir_primes_entries)
{
	char d[PATH_MAX], m[PATH_MAX], l[PATH_MAX], name[32];
	long long primed, hits;
	struct stat st;
	int i;

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, d, "pd"), 0755));
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "pd/f%d", i);
		ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, m, name), 10));
		ASSERT_EQ(0, stat(m, &st));
		ASSERT_EQ(0, chmod(m, 0644));
	}
	ASSERT_EQ(0, ahfs_run("sync -f '%s'", d));
	ahfs_m(&self->fs, m, "pd/f0");
	ahfs_l(&self->fs, l, "pd/f0");
	primed = ahfs_stat(&self->fs, "entries_primed");
	ASSERT_EQ(8, count_entries(d));
	EXPECT_EQ(primed, ahfs_stat(&self->fs, "entries_primed"));

	ASSERT_EQ(0, ahfs_set(&self->fs, "attr_timeout_ms", "600000"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "entry_timeout_ms", "600000"));
	ASSERT_EQ(0, stat(m, &st));
	ASSERT_EQ(0, chmod(l, 0611));
	ASSERT_EQ(0, stat(m, &st));
	EXPECT_EQ(0644, st.st_mode & 07777);

	ASSERT_EQ(8, count_entries(d));
	EXPECT_EQ(primed + 8, ahfs_stat(&self->fs, "entries_primed"));
	hits = ahfs_stat(&self->fs, "attr_cache_hits");
	ASSERT_EQ(0, stat(m, &st));
	EXPECT_EQ(0611, st.st_mode & 07777);
	EXPECT_EQ(hits + 1, ahfs_stat(&self->fs, "attr_cache_hits"));
	same_stat(_metadata, m, l);
}

/* Whether directory @path lists @name. */
static int lists(const char *path, const char *name)
{
	struct dirent *de;
	int found = 0;
	DIR *d;

	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (!strcmp(de->d_name, name))
			found = 1;
	closedir(d);
	return found;
}

/*
 * The readdir cache (readdir_cache=1, within entry_timeout_ms): off by
 * default, and off while the entry cache is; on, a directory listed to its
 * end is listed again from memory, so a name created on the lower behind
 * the mount's back is not seen within the timeout, while every change of
 * the mount's own (create, unlink, rename) is seen at once.
 */
TEST_F(attr, readdir_cache_opt_in)
{
	char d[PATH_MAX], ld[PATH_MAX], p[PATH_MAX], q[PATH_MAX], name[32];
	long long hits, inval;
	int i;

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, d, "rc"), 0755));
	ahfs_l(&self->fs, ld, "rc");
	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "rc/f%d", i);
		ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, p, name), 0));
	}
	/* Off by default, with the entry cache on: the lower answers. */
	ASSERT_EQ(0, ahfs_set(&self->fs, "entry_timeout_ms", "600000"));
	ASSERT_EQ(20, count_entries(d));
	ASSERT_EQ(0, ahfs_make_file(ahfs_l(&self->fs, p, "rc/x"), 0));
	EXPECT_EQ(21, count_entries(d));
	EXPECT_EQ(0, ahfs_stat(&self->fs, "readdir_cache_hits"));

	/* On: the second listing is the first, from memory. */
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "1"));
	ASSERT_EQ(21, count_entries(d));
	hits = ahfs_stat(&self->fs, "readdir_cache_hits");
	ASSERT_EQ(21, count_entries(d));
	EXPECT_LT(hits, ahfs_stat(&self->fs, "readdir_cache_hits"));
	ASSERT_EQ(0, ahfs_make_file(ahfs_l(&self->fs, p, "rc/y"), 0));
	EXPECT_EQ(0, lists(d, "y"));
	EXPECT_EQ(21, count_entries(d));

	/* The mount's own changes are seen at once (and y with them). */
	inval = ahfs_stat(&self->fs, "readdir_invalidations");
	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, p, "rc/z"), 0));
	EXPECT_EQ(1, lists(d, "z"));
	EXPECT_EQ(1, lists(d, "y"));
	EXPECT_LT(inval, ahfs_stat(&self->fs, "readdir_invalidations"));
	ASSERT_EQ(1, lists(d, "z"));
	ASSERT_EQ(0, unlink(p));
	EXPECT_EQ(0, lists(d, "z"));
	ASSERT_EQ(0, lists(d, "x2"));
	ASSERT_EQ(0, rename(ahfs_m(&self->fs, p, "rc/x"),
			    ahfs_m(&self->fs, q, "rc/x2")));
	EXPECT_EQ(1, lists(d, "x2"));
	EXPECT_EQ(0, lists(d, "x"));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, p, "rc/sub"), 0755));
	EXPECT_EQ(1, lists(d, "sub"));
	ASSERT_EQ(0, rmdir(p));
	EXPECT_EQ(0, lists(d, "sub"));
	EXPECT_EQ(22, count_entries(d));

	/* Off again, or the entry cache off: the lower answers at once. */
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "0"));
	ASSERT_EQ(0, unlink(ahfs_l(&self->fs, p, "rc/y")));
	EXPECT_EQ(0, lists(d, "y"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "1"));
	ASSERT_EQ(21, count_entries(d));
	ASSERT_EQ(0, ahfs_set(&self->fs, "entry_timeout_ms", "0"));
	ASSERT_EQ(0, ahfs_make_file(ahfs_l(&self->fs, p, "rc/w"), 0));
	EXPECT_EQ(1, lists(d, "w"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "0"));
}

/* The inode number a listing of @dir gives "..", or 0. */
static ino_t dotdot_ino(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	ino_t ino = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (!strcmp(e->d_name, ".."))
			ino = e->d_ino;
	closedir(d);
	return ino;
}

/*
 * A directory moved to another parent through the mount lists its new
 * parent as "..", as the lower does, with its listing cached before the
 * move; and so do both directories of a RENAME_EXCHANGE.
 */
TEST_F_TIMEOUT(attr, readdir_cache_dotdot_after_rename, 120)
{
	char a[PATH_MAX], b[PATH_MAX], am[PATH_MAX], bm[PATH_MAX], bn[PATH_MAX];
	char lbm[PATH_MAX], lb[PATH_MAX];
	struct stat st;
	long long hits;

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, a, "a"), 0755));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, b, "b"), 0755));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, am, "a/m"), 0755));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, bn, "b/n"), 0755));
	ASSERT_EQ(0, ahfs_set(&self->fs, "entry_timeout_ms", "600000"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "1"));
	ASSERT_EQ(0, stat(a, &st));
	EXPECT_EQ(st.st_ino, dotdot_ino(am));
	hits = ahfs_stat(&self->fs, "readdir_cache_hits");
	EXPECT_EQ(st.st_ino, dotdot_ino(am));
	ASSERT_LT(hits, ahfs_stat(&self->fs, "readdir_cache_hits")) {
		TH_LOG("the listing was not cached: the test proves nothing");
	}

	ASSERT_EQ(0, rename(am, ahfs_m(&self->fs, bm, "b/m")));
	ASSERT_EQ(0, stat(b, &st));
	EXPECT_EQ(st.st_ino, dotdot_ino(bm));
	EXPECT_EQ(dotdot_ino(ahfs_l(&self->fs, lbm, "b/m")), dotdot_ino(bm));

	/* Exchanged: a/m (was b/n) and b/n (was b/m) after a cached listing. */
	EXPECT_EQ(st.st_ino, dotdot_ino(bn));
	ASSERT_EQ(0, mkdir(am, 0755));
	ASSERT_EQ(0, stat(a, &st));
	EXPECT_EQ(st.st_ino, dotdot_ino(am));
	ASSERT_EQ(0, syscall(SYS_renameat2, AT_FDCWD, am, AT_FDCWD, bn,
			     RENAME_EXCHANGE));
	EXPECT_EQ(st.st_ino, dotdot_ino(am));
	ASSERT_EQ(0, stat(b, &st));
	EXPECT_EQ(st.st_ino, dotdot_ino(bn));
	EXPECT_EQ(dotdot_ino(ahfs_l(&self->fs, lb, "b/n")), dotdot_ino(bn));
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "0"));
}

#define COMPAT_NR_GETDENTS64	220	/* i386's getdents64 */

/*
 * The entries of @path listed with i386's getdents64 (int 0x80 from this
 * 64-bit process: a compat syscall, which ext4 and NFS give 32-bit
 * offsets), or -errno: -EOVERFLOW when an offset does not fit in 32 bits,
 * as a 32-bit program's readdir() (glibc, without large-file support)
 * fails.  The buffer lies below 4 GiB, as a 32-bit pointer must, and takes
 * a few dozen entries a call, so the listing resumes many times.
 */
static int compat_count_entries(const char *path)
{
	const size_t len = 2048;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	int fd = open(path, O_RDONLY | O_DIRECTORY), n = 0;
	long got, off;
	long long d_off;

	if (buf == MAP_FAILED || fd < 0) {
		n = -errno;
		goto out;
	}
	for (;;) {
		asm volatile("int $0x80"
			     : "=a"(got)
			     : "a"(COMPAT_NR_GETDENTS64), "b"(fd), "c"(buf),
			       "d"(len)
			     : "memory", "r8", "r9", "r10", "r11");
		if (got <= 0)
			break;
		/* linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, name */
		for (off = 0; off < got;
		     off += *(unsigned short *)(buf + off + 16)) {
			memcpy(&d_off, buf + off + 8, sizeof(d_off));
			if (d_off != (long long)(unsigned int)d_off) {
				n = -EOVERFLOW;
				goto out;
			}
			n++;
		}
	}
	if (got < 0)
		n = (int)got;
out:
	if (fd >= 0)
		close(fd);
	if (buf != MAP_FAILED)
		munmap(buf, len);
	return n;
}

/*
 * A listing cached for a 64-bit reader is not served to a 32-bit one
 * (whose offsets the lower gives in 32 bits: ext4 hashes), which lists
 * the directory as it does on the lower directly; and the 32-bit listing
 * leaves the cache to the 64-bit readers.
 */
TEST_F_TIMEOUT(attr, readdir_cache_compat_offsets, 120)
{
	char d[PATH_MAX], ld[PATH_MAX];
	long long hits;
	int n;

	ASSERT_EQ(0, mkdir(ahfs_l(&self->fs, ld, "cc"), 0755));
	ASSERT_EQ(0, ahfs_run("cd '%s' && seq -f 'a-fairly-long-name-%%g' 500 | xargs touch",
			      ld));
	ahfs_m(&self->fs, d, "cc");
	n = compat_count_entries(ld);
	ASSERT_EQ(502, n) {
		TH_LOG("the lower's own 32-bit listing: %d (%s)", n,
		       n < 0 ? strerror(-n) : "entries");
	}
	ASSERT_EQ(0, ahfs_set(&self->fs, "entry_timeout_ms", "600000"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "1"));
	ASSERT_EQ(500, count_entries(d));
	hits = ahfs_stat(&self->fs, "readdir_cache_hits");
	ASSERT_EQ(500, count_entries(d));
	ASSERT_LT(hits, ahfs_stat(&self->fs, "readdir_cache_hits")) {
		TH_LOG("the listing was not cached: the test proves nothing");
	}
	n = compat_count_entries(d);
	EXPECT_EQ(502, n) {
		TH_LOG("a 32-bit listing through aheadfs: %d (%s)", n,
		       n < 0 ? strerror(-n) : "entries");
	}
	hits = ahfs_stat(&self->fs, "readdir_cache_hits");
	ASSERT_EQ(500, count_entries(d));
	EXPECT_LT(hits, ahfs_stat(&self->fs, "readdir_cache_hits"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "0"));
}

#define BIG_DIR_FILES	12000
#define READERS		12

/* getdents64 on @fd until @want entries were read, or the end: how many. */
static int read_entries(int fd, int want)
{
	char buf[32768];
	int n = 0;
	long got, off;

	while (n < want) {
		got = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (got <= 0)
			break;
		for (off = 0; off < got;
		     off += *(unsigned short *)(buf + off + 16))
			n++;
	}
	return n;
}

/*
 * The readdir cache's memory is the mount's and bounded: twelve readers
 * part-way through one 2.7 MB listing (each fill would grow to 4 MiB)
 * hold at most 16 MiB together, and nothing once they close; a kept
 * listing is given back under memory pressure (the superblock's shrinker,
 * driven here by drop_caches) while its directory stays open.
 */
TEST_F_TIMEOUT(attr, readdir_cache_bounded, 300)
{
	char d[PATH_MAX], ld[PATH_MAX];
	int fds[READERS], i, n, dfd;
	long long bytes, ev;

	ASSERT_EQ(0, mkdir(ahfs_l(&self->fs, ld, "huge"), 0755));
	ASSERT_EQ(0, ahfs_run("cd '%s' && python3 -c 'import os\nfor i in range(%d): open(\"%%0200d\" %% i, \"w\").close()'",
			      ld, BIG_DIR_FILES));
	ahfs_m(&self->fs, d, "huge");
	ASSERT_EQ(0, ahfs_set(&self->fs, "entry_timeout_ms", "600000"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "1"));
	EXPECT_EQ(0, ahfs_stat(&self->fs, "readdir_cache_bytes"));
	for (i = 0; i < READERS; i++) {
		fds[i] = open(d, O_RDONLY | O_DIRECTORY);
		ASSERT_LE(0, fds[i]);
		n = read_entries(fds[i], BIG_DIR_FILES * 9 / 10);
		ASSERT_LE(BIG_DIR_FILES * 9 / 10, n);
	}
	bytes = ahfs_stat(&self->fs, "readdir_cache_bytes");
	TH_LOG("%d readers part-way through %d entries hold %lld KiB", READERS,
	       BIG_DIR_FILES, bytes >> 10);
	EXPECT_LT(4 << 20, bytes);
	EXPECT_GE(16 << 20, bytes);
	for (i = 0; i < READERS; i++)
		close(fds[i]);
	EXPECT_EQ(0, ahfs_stat(&self->fs, "readdir_cache_bytes"));

	/* One whole listing kept, then reclaimed while the directory is open. */
	dfd = open(d, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, dfd);
	ASSERT_EQ(BIG_DIR_FILES + 2, read_entries(dfd, INT_MAX));
	EXPECT_LT(0, ahfs_stat(&self->fs, "readdir_cache_bytes"));
	ev = ahfs_stat(&self->fs, "readdir_cache_evictions");
	/*
	 * The superblock shrinker scans its objects in proportion to the
	 * dentries and inodes it also holds (readdir priming made 12000):
	 * the listing goes once they have gone, within a few rounds.
	 */
	bytes = 1;
	for (i = 0; i < 3 && bytes; i++) {
		ASSERT_EQ(0, ahfs_write_file("/proc/sys/vm/drop_caches", "2"));
		bytes = ahfs_stat(&self->fs, "readdir_cache_bytes");
	}
	EXPECT_EQ(0, bytes);
	EXPECT_LT(ev, ahfs_stat(&self->fs, "readdir_cache_evictions"));
	close(dfd);
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "0"));
}

/*
 * Past the entry timeout the lower answers: a name created on the lower
 * after a listing is seen once the timeout (50 ms) has run out, polled with
 * a deadline, never before the listing's own timeout could end.
 */
TEST_F(attr, readdir_cache_times_out)
{
	char d[PATH_MAX], p[PATH_MAX];
	struct timespec t0, t1;
	int seen = 0, i;

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, d, "rt"), 0755));
	ASSERT_EQ(0, ahfs_set(&self->fs, "entry_timeout_ms", "50"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "1"));
	ASSERT_EQ(0, clock_gettime(CLOCK_MONOTONIC, &t0));
	ASSERT_EQ(0, count_entries(d));
	ASSERT_EQ(0, ahfs_make_file(ahfs_l(&self->fs, p, "rt/late"), 0));
	for (i = 0; i < 1000 && !seen; i++) {
		seen = lists(d, "late");
		ASSERT_LE(0, seen);
		if (!seen)
			usleep(10000);
	}
	ASSERT_EQ(0, clock_gettime(CLOCK_MONOTONIC, &t1));
	EXPECT_EQ(1, seen);
	/* Not before the timeout could have run out (a jiffy's slack). */
	if (!ahfs_stat(&self->fs, "readdir_cache_hits"))
		TH_LOG("listed from the lower only: the host was slower than 50 ms");
	else
		EXPECT_LE(40, (t1.tv_sec - t0.tv_sec) * 1000 +
			  (t1.tv_nsec - t0.tv_nsec) / 1000000);
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "0"));
}

/* One pass of @path: names in order, and telldir() after each. */
static int walk(const char *path, char names[][16], long *pos, int max)
{
	struct dirent *de;
	int n = 0;
	DIR *d;

	d = opendir(path);
	if (!d)
		return -errno;
	while (n < max && (de = readdir(d))) {
		snprintf(names[n], 16, "%.15s", de->d_name);
		pos[n++] = telldir(d);
	}
	closedir(d);
	return n;
}

/*
 * One getdents64 call of at most 256 bytes on @fd; each name must be the
 * next of @ref (from *@got on).  The bytes read, 0 at the end, or -1 on a
 * mismatch.
 */
static int small_getdents(int fd, char ref[][16], int n, int *got)
{
	char buf[1024] __attribute__((aligned(8)));
	int len, off;

	len = syscall(SYS_getdents64, fd, buf, 256);
	for (off = 0; len > 0 && off < len;) {
		struct dirent64 *de = (struct dirent64 *)(buf + off);

		if (*got >= n || strcmp(ref[*got], de->d_name))
			return -1;
		(*got)++;
		off += de->d_reclen;
	}
	return len;
}

/*
 * A listing from the readdir cache is the lower's: the same names in the
 * same order with the same offsets, and seekdir() to an offset a listing
 * gave resumes there, from the cache or from the lower; two streams of one
 * directory read in turn each see the whole directory.
 */
TEST_F(attr, readdir_cache_positions)
{
	static char ref[300][16], got[300][16];
	long rpos[300], gpos[300];
	char d[PATH_MAX], p[PATH_MAX], name[32];
	int n, i, k, fd[2], got1, got2, r1, r2;
	long long hits;
	struct dirent *de1;
	DIR *s1;

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, d, "rp"), 0755));
	for (i = 0; i < 250; i++) {
		snprintf(name, sizeof(name), "rp/entry-%d", i);
		ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, p, name), 0));
	}
	n = walk(d, ref, rpos, 300);
	ASSERT_EQ(252, n);
	ASSERT_EQ(0, ahfs_set(&self->fs, "entry_timeout_ms", "600000"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "1"));
	for (k = 0; k < 2; k++) {	/* filled, then from the cache */
		ASSERT_EQ(n, walk(d, got, gpos, 300));
		for (i = 0; i < n; i++) {
			EXPECT_STREQ(ref[i], got[i]);
			EXPECT_EQ(rpos[i], gpos[i]);
		}
	}
	EXPECT_LT(0, ahfs_stat(&self->fs, "readdir_cache_hits"));

	/* seekdir() into the middle, from the cache. */
	s1 = opendir(d);
	ASSERT_NE(NULL, s1);
	seekdir(s1, rpos[99]);
	for (i = 100; i < n; i++) {
		de1 = readdir(s1);
		ASSERT_NE(NULL, de1);
		EXPECT_STREQ(ref[i], de1->d_name);
	}
	EXPECT_EQ(NULL, readdir(s1));
	closedir(s1);
	/*
	 * Two descriptors read in turn, a few entries per getdents call,
	 * the cache turned off half-way: each goes on from the lower where
	 * the cache left it.
	 */
	fd[0] = open(d, O_RDONLY | O_DIRECTORY);
	fd[1] = open(d, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, fd[0]);
	ASSERT_LE(0, fd[1]);
	got1 = got2 = 0;
	for (k = 0; k < 1000; k++) {
		if (k == 10)
			ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "0"));
		r1 = small_getdents(fd[0], ref, n, &got1);
		r2 = small_getdents(fd[1], ref, n, &got2);
		ASSERT_LE(0, r1);
		ASSERT_LE(0, r2);
		if (!r1 && !r2)
			break;
	}
	EXPECT_EQ(n, got1);
	EXPECT_EQ(n, got2);
	close(fd[1]);
	/* A listing kept from many small calls is whole. */
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "1"));
	ASSERT_EQ(0, lseek(fd[0], 0, SEEK_SET));
	got1 = 0;
	while ((r1 = small_getdents(fd[0], ref, n, &got1)) > 0)
		;
	ASSERT_EQ(0, r1);
	EXPECT_EQ(n, got1);
	close(fd[0]);
	hits = ahfs_stat(&self->fs, "readdir_cache_hits");
	ASSERT_EQ(n, walk(d, got, gpos, 300));
	for (i = 0; i < n; i++)
		EXPECT_STREQ(ref[i], got[i]);
	EXPECT_LT(hits, ahfs_stat(&self->fs, "readdir_cache_hits"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "readdir_cache", "0"));
}

#define NOBODY	65534

static int can_read(void *path)
{
	return access(path, R_OK) ? errno : 0;
}

/*
 * The permission cache never stands in for a lower that decides on its own
 * inode (ext4, xfs): with attr_timeout_ms on or off, the lower decides
 * every check, so a permission taken away or given on the lower directly
 * is seen through the mount at once, both ways, for files and for the
 * directories of a path walk, and nothing is counted as a cache hit.
 */
TEST_F_TIMEOUT(attr, perm_local_lower_decides, 120)
{
	char g[PATH_MAX];
	int round;

	ASSERT_EQ(0, ahfs_run("mkdir -m 0755 '%s/d' && touch '%s/d/g' && chmod 0644 '%s/d/g'",
			      self->fs.mnt, self->fs.mnt, self->fs.mnt));
	ahfs_m(&self->fs, g, "d/g");
	for (round = 0; round < 2; round++) {
		ASSERT_EQ(0, ahfs_set(&self->fs, "attr_timeout_ms",
				      round ? "600000" : "0"));
		ASSERT_EQ(0, chmod(self->l, 0644));
		/* A stat refreshes the attributes: the cache is fresh. */
		ASSERT_EQ(0, ahfs_run("stat '%s' '%s' >/dev/null", self->m, g));
		EXPECT_EQ(0, ahfs_as_user(NOBODY, can_read, self->m));
		/* Taken away behind the mount's back: refused at once. */
		ASSERT_EQ(0, chmod(self->l, 0600));
		EXPECT_EQ(EACCES, ahfs_as_user(NOBODY, can_read, self->l));
		EXPECT_EQ(EACCES, ahfs_as_user(NOBODY, can_read, self->m));
		/* Given back: granted at once. */
		ASSERT_EQ(0, chmod(self->l, 0644));
		EXPECT_EQ(0, ahfs_as_user(NOBODY, can_read, self->m));
		/* The mount's own change, both ways. */
		ASSERT_EQ(0, chmod(self->m, 0600));
		EXPECT_EQ(EACCES, ahfs_as_user(NOBODY, can_read, self->m));
		ASSERT_EQ(0, chmod(self->m, 0604));
		EXPECT_EQ(0, ahfs_as_user(NOBODY, can_read, self->m));
		/* A POSIX ACL set on the lower decides through the mount. */
		ASSERT_EQ(0, chmod(self->m, 0640));
		EXPECT_EQ(EACCES, ahfs_as_user(NOBODY, can_read, self->m));
		ASSERT_EQ(0, ahfs_run("setfacl -m u:%d:r-- '%s'", NOBODY, self->l));
		EXPECT_EQ(0, ahfs_as_user(NOBODY, can_read, self->m));
		ASSERT_EQ(0, ahfs_run("setfacl -b '%s'", self->l));
		EXPECT_EQ(EACCES, ahfs_as_user(NOBODY, can_read, self->m));
		/* A directory's search permission on a path walk. */
		EXPECT_EQ(0, ahfs_as_user(NOBODY, can_read, g));
		ASSERT_EQ(0, ahfs_run("chmod 0700 '%s/d'", self->fs.lower));
		EXPECT_EQ(EACCES, ahfs_as_user(NOBODY, can_read, g));
		ASSERT_EQ(0, ahfs_run("chmod 0755 '%s/d'", self->fs.lower));
		EXPECT_EQ(0, ahfs_as_user(NOBODY, can_read, g));
	}
	EXPECT_EQ(0, ahfs_stat(&self->fs, "perm_cache_hits"));
}

TEST_HARNESS_MAIN
