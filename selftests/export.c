// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs file handles (export_operations), through name_to_handle_at and
 * open_by_handle_at, the calls nfsd's handles go through too: a file's
 * handle is the lower's connectable one (the file and its lower parent), so
 * the lower decodes it too; it outlives a dentry-cache drop and a remount,
 * finds renamed and moved files and directories, refuses what lies outside
 * the mount's lower directory or left it (the lower directory is not the
 * root of its filesystem here), opens a removed file while it is still open, and many
 * decoders of one handle at once share one inode.  The NFS side is in
 * export-nfs.sh.
 */
#include "aheadfs_test.h"

#include <sys/syscall.h>

#define HBYTES	MAX_HANDLE_SZ

struct fh {
	struct file_handle h;
	unsigned char bytes[HBYTES];
};

FIXTURE(export) {
	struct ahfs fs;
	char path[PATH_MAX];
	int mfd;
};

FIXTURE_SETUP(export)
{
	ASSERT_EQ(0, ahfs_setup(&self->fs, "export", ""));
	self->mfd = open(self->fs.mnt, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, self->mfd);
}

FIXTURE_TEARDOWN(export)
{
	if (self->mfd >= 0)
		close(self->mfd);
	ahfs_teardown(&self->fs);
}

static int get_fh(const char *path, struct fh *fh)
{
	int mount_id;

	memset(fh, 0, sizeof(*fh));
	fh->h.handle_bytes = HBYTES;
	return name_to_handle_at(AT_FDCWD, path, &fh->h, &mount_id, 0) ?
	       -errno : 0;
}

static int open_fh(int mfd, struct fh *fh, int flags)
{
	int fd = open_by_handle_at(mfd, &fh->h, flags);

	return fd < 0 ? -errno : fd;
}

/* Where /proc says an open file is: the path the dentry is connected by. */
static char *fd_path(int fd, char *buf)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, PATH_MAX - 1);
	buf[n < 0 ? 0 : n] = 0;
	return buf;
}

static int remount(struct ahfs *fs, int *mfd)
{
	close(*mfd);
	*mfd = -1;
	if (umount(fs->mnt))
		return -errno;
	fs->mounted = 0;
	if (ahfs_mount_at(fs->lower, fs->mnt, ""))
		return -errno;
	fs->mounted = 1;
	*mfd = open(fs->mnt, O_RDONLY | O_DIRECTORY);
	return *mfd < 0 ? -errno : 0;
}

/* An fd on the lower filesystem, for open_by_handle_at on the lower. */
static int lower_mfd(struct ahfs *fs)
{
	return open(fs->lower, O_RDONLY | O_DIRECTORY);
}

/* 0 when @fd is @st's file and holds @len bytes of the pattern. */
static int same_file(int fd, const struct stat *st, size_t len)
{
	unsigned char buf[8192];
	struct stat got;

	if (len > sizeof(buf) || fstat(fd, &got) || got.st_ino != st->st_ino)
		return -1;
	if (pread(fd, buf, sizeof(buf), 0) != (ssize_t)len)
		return -1;
	return ahfs_check_pattern(buf, len, 0);
}

/*
 * The lower directory is not the root of its filesystem, so a file's
 * handle carries its lower parent directory, encoded by the lower as its
 * own connectable handle (the file's handle, then the parent's), and the
 * lower decodes it like any of its handles.
 */
TEST_F(export, handle_decodes_on_the_lower)
{
	struct fh up, low, dir, small;
	char l[PATH_MAX];
	struct stat lst;
	int mount_id, lfd, fd;

	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, self->path, "f"), 4096));
	ASSERT_EQ(0, get_fh(self->path, &up));
	ASSERT_EQ(0, get_fh(ahfs_l(&self->fs, l, "f"), &low));
	ASSERT_EQ(0, stat(l, &lst));
	ASSERT_EQ(0, get_fh(self->fs.lower, &dir));
	TH_LOG("aheadfs handle type %d, %u bytes; lower file %d, %u; lower dir %d, %u",
	       up.h.handle_type, up.h.handle_bytes, low.h.handle_type,
	       low.h.handle_bytes, dir.h.handle_type, dir.h.handle_bytes);
	EXPECT_EQ(low.h.handle_bytes + dir.h.handle_bytes, up.h.handle_bytes)
		TH_LOG("the handle does not carry the lower parent");
	if (up.h.handle_bytes == low.h.handle_bytes + dir.h.handle_bytes) {
		EXPECT_EQ(0, memcmp(up.h.f_handle, low.h.f_handle,
				    low.h.handle_bytes));
		EXPECT_EQ(0, memcmp(up.h.f_handle + low.h.handle_bytes,
				    dir.h.f_handle, dir.h.handle_bytes));
	}

	/* On the lower: its file, same inode, same data. */
	lfd = lower_mfd(&self->fs);
	ASSERT_LE(0, lfd);
	fd = open_fh(lfd, &up, O_RDONLY);
	EXPECT_LE(0, fd) TH_LOG("the lower cannot decode it: %s", strerror(-fd));
	if (fd >= 0) {
		struct stat st;

		ASSERT_EQ(0, fstat(fd, &st));
		EXPECT_EQ(lst.st_dev, st.st_dev);
		EXPECT_EQ(0, same_file(fd, &lst, 4096));
		close(fd);
	}
	close(lfd);

	/* And through aheadfs, the same file. */
	fd = open_fh(self->mfd, &up, O_RDONLY);
	ASSERT_LE(0, fd) TH_LOG("%s", strerror(-fd));
	EXPECT_EQ(0, same_file(fd, &lst, 4096));
	close(fd);

	/* Too small a buffer: EOVERFLOW and the size needed. */
	memset(&small, 0, sizeof(small));
	small.h.handle_bytes = 0;
	EXPECT_EQ(-1, name_to_handle_at(AT_FDCWD, self->path, &small.h,
					&mount_id, 0));
	EXPECT_EQ(EOVERFLOW, errno);
	EXPECT_EQ(up.h.handle_bytes, small.h.handle_bytes);
}

TEST_F(export, file_survives_cache_drop_and_remount)
{
	unsigned char buf[8192];
	struct stat a, b;
	struct fh fh;
	int fd, round;

	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, self->path, "data"),
				    sizeof(buf)));
	ASSERT_EQ(0, get_fh(self->path, &fh));
	ASSERT_EQ(0, stat(self->path, &a));
	for (round = 0; round < 3; round++) {
		if (round == 1)
			ASSERT_EQ(0, ahfs_drop_caches());
		if (round == 2)
			ASSERT_EQ(0, remount(&self->fs, &self->mfd));
		fd = open_fh(self->mfd, &fh, O_RDONLY);
		ASSERT_LE(0, fd) TH_LOG("round %d: %s", round, strerror(-fd));
		ASSERT_EQ(0, fstat(fd, &b));
		EXPECT_EQ(a.st_ino, b.st_ino);
		if (round < 2)
			EXPECT_EQ(a.st_dev, b.st_dev);
		ASSERT_EQ((ssize_t)sizeof(buf), read(fd, buf, sizeof(buf)));
		EXPECT_EQ(0, ahfs_check_pattern(buf, sizeof(buf), 0));
		close(fd);
	}
	/* And writable through the handle. */
	fd = open_fh(self->mfd, &fh, O_WRONLY | O_APPEND);
	ASSERT_LE(0, fd);
	ASSERT_EQ(3, write(fd, "end", 3));
	close(fd);
	ASSERT_EQ(0, stat(self->path, &b));
	EXPECT_EQ((off_t)sizeof(buf) + 3, b.st_size);
}

TEST_F(export, directory_comes_back_connected)
{
	char want[PATH_MAX], got[PATH_MAX], l[PATH_MAX];
	struct fh fh;
	int fd, f;

	ASSERT_EQ(0, ahfs_run("mkdir -p '%s/a/b/c' && echo x > '%s/a/b/c/f'",
			      self->fs.mnt, self->fs.mnt));
	ASSERT_EQ(0, get_fh(ahfs_m(&self->fs, want, "a/b/c"), &fh));
	ASSERT_EQ(0, remount(&self->fs, &self->mfd));
	ASSERT_EQ(0, ahfs_drop_caches());
	fd = open_fh(self->mfd, &fh, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, fd) TH_LOG("%s", strerror(-fd));
	EXPECT_STREQ(want, fd_path(fd, got));
	f = openat(fd, "f", O_RDONLY);
	EXPECT_LE(0, f);
	close(f);
	close(fd);

	/* Renamed in the lower behind the mount's back: found by its new name. */
	ASSERT_EQ(0, rename(ahfs_l(&self->fs, l, "a/b"),
			    ahfs_l(&self->fs, got, "b2")));
	ASSERT_EQ(0, ahfs_drop_caches());
	fd = open_fh(self->mfd, &fh, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, fd) TH_LOG("%s", strerror(-fd));
	EXPECT_STREQ(ahfs_m(&self->fs, want, "b2/c"), fd_path(fd, got));
	close(fd);
}

TEST_F(export, removed_file_is_stale)
{
	struct fh fh, dfh;

	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, self->path, "gone"), 10));
	ASSERT_EQ(0, get_fh(self->path, &fh));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, self->path, "dgone"), 0755));
	ASSERT_EQ(0, get_fh(self->path, &dfh));
	ASSERT_EQ(0, ahfs_run("rm -r '%s/gone' '%s/dgone'", self->fs.mnt,
			      self->fs.mnt));
	ASSERT_EQ(0, ahfs_drop_caches());
	EXPECT_EQ(-ESTALE, open_fh(self->mfd, &fh, O_RDONLY));
	EXPECT_EQ(-ESTALE, open_fh(self->mfd, &dfh, O_RDONLY));
}

TEST_F(export, directory_outside_the_mount_is_refused)
{
	char out[PATH_MAX], in[PATH_MAX];
	struct fh fh;
	int fd;

	/* A directory of the lower filesystem beside this mount's lower. */
	ahfs_fmt(out, sizeof(out), "%s/outside", self->fs.base);
	ASSERT_EQ(0, mkdir(out, 0755));
	ASSERT_EQ(0, get_fh(out, &fh));
	EXPECT_EQ(-ESTALE, open_fh(self->mfd, &fh, O_RDONLY | O_DIRECTORY));
	ASSERT_EQ(0, ahfs_drop_caches());
	EXPECT_EQ(-ESTALE, open_fh(self->mfd, &fh, O_RDONLY | O_DIRECTORY));

	/* Moved in, it is found. */
	ASSERT_EQ(0, rename(out, ahfs_l(&self->fs, in, "inside")));
	fd = open_fh(self->mfd, &fh, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, fd) TH_LOG("%s", strerror(-fd));
	EXPECT_STREQ(ahfs_m(&self->fs, in, "inside"), fd_path(fd, out));
	close(fd);

	/* And moved out again, refused again. */
	ahfs_fmt(out, sizeof(out), "%s/outside", self->fs.base);
	ASSERT_EQ(0, rename(ahfs_l(&self->fs, in, "inside"), out));
	EXPECT_EQ(-ESTALE, open_fh(self->mfd, &fh, O_RDONLY | O_DIRECTORY));
}

/*
 * A file of the lower filesystem beside this mount's lower directory: its
 * lower handle names no file of this mount, cached or not.
 */
TEST_F(export, file_outside_the_mount_is_refused)
{
	char out[PATH_MAX];
	struct fh fh;
	int fd;

	ahfs_fmt(out, sizeof(out), "%s/outside-file", self->fs.base);
	ASSERT_EQ(0, ahfs_make_file(out, 100));
	ASSERT_EQ(0, get_fh(out, &fh));
	fd = open_fh(self->mfd, &fh, O_RDONLY);
	EXPECT_EQ(-ESTALE, fd) TH_LOG("cached: opened a file outside the mount");
	if (fd >= 0)
		close(fd);
	ASSERT_EQ(0, ahfs_drop_caches());
	fd = open_fh(self->mfd, &fh, O_RDONLY);
	EXPECT_EQ(-ESTALE, fd) TH_LOG("after a cache drop: opened a file outside the mount");
	if (fd >= 0)
		close(fd);
}

/*
 * A file moved out of the lower directory behind the mount's back is
 * refused, with its dentries cached or not; moved back into the directory
 * it was in when the handle was taken, it opens again.
 */
TEST_F(export, file_moved_out_is_refused)
{
	char in[PATH_MAX], out[PATH_MAX];
	struct stat st;
	struct fh fh;
	int drop, fd;

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, self->path, "sub"), 0755));
	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, self->path, "sub/f"), 4096));
	ASSERT_EQ(0, get_fh(self->path, &fh));
	ASSERT_EQ(0, stat(self->path, &st));
	ahfs_l(&self->fs, in, "sub/f");
	ahfs_fmt(out, sizeof(out), "%s/moved-out", self->fs.base);
	fd = open_fh(self->mfd, &fh, O_RDONLY);
	ASSERT_LE(0, fd) TH_LOG("%s", strerror(-fd));
	close(fd);

	for (drop = 0; drop < 2; drop++) {
		ASSERT_EQ(0, rename(in, out));
		if (drop)
			ASSERT_EQ(0, ahfs_drop_caches());
		fd = open_fh(self->mfd, &fh, O_RDONLY);
		EXPECT_EQ(-ESTALE, fd)
			TH_LOG("%s: opened a file moved out of the mount",
			       drop ? "after a cache drop" : "cached");
		if (fd >= 0)
			close(fd);

		ASSERT_EQ(0, rename(out, in));
		if (drop)
			ASSERT_EQ(0, ahfs_drop_caches());
		fd = open_fh(self->mfd, &fh, O_RDONLY);
		EXPECT_LE(0, fd)
			TH_LOG("%s: moved back in, it does not open: %s",
			       drop ? "after a cache drop" : "cached",
			       strerror(-fd));
		if (fd >= 0) {
			EXPECT_EQ(0, same_file(fd, &st, 4096));
			close(fd);
		}
	}
}

/*
 * Moved to another directory inside the mount, through the mount or in the
 * lower, a file opens by the handle taken before the move, its dentries
 * cached or not, as the lower's own handle opens it: also once the
 * directory named in the handle is gone, and many levels down.  (nfsd's
 * subtree_check would call it stale; a client with the file open would
 * lose it to a `mv` on the server.)
 */
TEST_F(export, file_moved_to_another_directory)
{
	static const struct { bool lower; const char *from, *to; } moves[] = {
		{ false, "d1/f", "d2/f" },
		{ true, "d2/f", "d2/d3/d4/g" },
		{ false, "d2/d3/d4/g", "h" },
		{ true, "h", "d2/d3/i" },
	};
	char a[PATH_MAX], b[PATH_MAX];
	int drop, fd, lfd, lmfd;
	struct fh fh, lfh;
	struct stat st;
	unsigned int i;

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, a, "d1"), 0755));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, a, "d2"), 0755));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, a, "d2/d3"), 0755));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, a, "d2/d3/d4"), 0755));
	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, a, "d1/f"), 4096));
	ASSERT_EQ(0, stat(a, &st));
	ASSERT_EQ(0, get_fh(a, &fh));
	ASSERT_EQ(0, get_fh(ahfs_l(&self->fs, b, "d1/f"), &lfh));
	lmfd = lower_mfd(&self->fs);
	ASSERT_LE(0, lmfd);

	for (i = 0; i < sizeof(moves) / sizeof(moves[0]); i++) {
		if (moves[i].lower) {
			ASSERT_EQ(0, rename(ahfs_l(&self->fs, a, moves[i].from),
					    ahfs_l(&self->fs, b, moves[i].to)));
		} else {
			ASSERT_EQ(0, rename(ahfs_m(&self->fs, a, moves[i].from),
					    ahfs_m(&self->fs, b, moves[i].to)));
		}
		/* The directory the handle names, gone after the second move. */
		if (i == 1) {
			ASSERT_EQ(0, rmdir(ahfs_l(&self->fs, a, "d1")));
		}
		for (drop = 0; drop < 2; drop++) {
			if (drop) {
				ASSERT_EQ(0, ahfs_drop_caches());
			}
			/* The reference: the lower's own handle, on the lower. */
			lfd = open_fh(lmfd, &lfh, O_RDONLY);
			ASSERT_LE(0, lfd) TH_LOG("lower: '%s' moved to '%s': %s",
						 moves[i].from, moves[i].to,
						 strerror(-lfd));
			close(lfd);
			fd = open_fh(self->mfd, &fh, O_RDONLY);
			EXPECT_LE(0, fd) TH_LOG("'%s' moved to '%s' %s%s: %s",
						moves[i].from, moves[i].to,
						moves[i].lower ? "in the lower" :
						"through the mount",
						drop ? ", caches dropped" : "",
						strerror(-fd));
			if (fd < 0)
				continue;
			EXPECT_EQ(0, same_file(fd, &st, 4096));
			/* Connected where it now is. */
			EXPECT_STREQ(ahfs_m(&self->fs, a, moves[i].to),
				     fd_path(fd, b));
			close(fd);
		}
	}
	close(lmfd);
}

/*
 * The search for a moved file reads at most fh_search_entries entries of
 * the lower directory: beyond them the handle is stale, with one line in
 * dmesg naming the tunable; raised, the same handle opens; 0 turns the
 * search off.  The lower's own handle opens the file throughout.
 */
TEST_F(export, moved_file_search_bound)
{
	static const struct { const char *bound; bool opens; } cases[] = {
		{ "16", false }, { "1000", true }, { "0", false },
		{ "262144", true },
	};
	char a[PATH_MAX], b[PATH_MAX], name[16];
	int fd, kmsg, lfd, lmfd;
	struct fh fh, lfh;
	unsigned int i;
	struct stat st;

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, a, "d1"), 0755));
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, a, "d2"), 0755));
	/* The lower directory's own entries, read before d2's: 2 + 50. */
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "p%02u", i);
		ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, a, name), 0));
	}
	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, a, "d1/f"), 4096));
	ASSERT_EQ(0, stat(a, &st));
	ASSERT_EQ(0, get_fh(a, &fh));
	ASSERT_EQ(0, get_fh(ahfs_l(&self->fs, b, "d1/f"), &lfh));
	ASSERT_EQ(0, rename(ahfs_l(&self->fs, a, "d1/f"),
			    ahfs_l(&self->fs, b, "d2/f")));
	lmfd = lower_mfd(&self->fs);
	ASSERT_LE(0, lmfd);

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ASSERT_EQ(0, ahfs_set(&self->fs, "fh_search_entries",
				      cases[i].bound));
		ASSERT_EQ(0, ahfs_drop_caches());
		lfd = open_fh(lmfd, &lfh, O_RDONLY);
		ASSERT_LE(0, lfd) TH_LOG("lower: %s", strerror(-lfd));
		close(lfd);
		kmsg = ahfs_kmsg_open();
		ASSERT_LE(0, kmsg);
		fd = open_fh(self->mfd, &fh, O_RDONLY);
		if (cases[i].opens) {
			EXPECT_LE(0, fd) TH_LOG("fh_search_entries=%s: %s",
						cases[i].bound,
						strerror(-fd));
			if (fd >= 0) {
				EXPECT_EQ(0, same_file(fd, &st, 4096));
				EXPECT_STREQ(ahfs_m(&self->fs, a, "d2/f"),
					     fd_path(fd, b));
				close(fd);
			}
		} else {
			EXPECT_EQ(-ESTALE, fd) TH_LOG("fh_search_entries=%s: %d",
						      cases[i].bound, fd);
			if (fd >= 0)
				close(fd);
		}
		/* The bound's line, only where the search ran into it. */
		snprintf(name, sizeof(name), "first %s ", cases[i].bound);
		EXPECT_EQ(!strcmp(cases[i].bound, "16"),
			  ahfs_kmsg_grep(kmsg, name)) TH_LOG("fh_search_entries=%s",
							     cases[i].bound);
		close(kmsg);
	}
	close(lmfd);
}

/*
 * Renamed within its directory, through the mount or in the lower, a file
 * opens by its handle, cached or not; in the lower directory itself (whose
 * parent is outside the mount) and in a subdirectory.
 */
TEST_F(export, file_renamed_in_its_directory)
{
	static const char * const dirs[] = { "", "sub/" };
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], name[32];
	unsigned int i;
	struct stat st;
	struct fh fh;
	int drop, fd;

	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, a, "sub"), 0755));
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "%sa", dirs[i]);
		ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, a, name), 4096));
		ASSERT_EQ(0, get_fh(a, &fh));
		ASSERT_EQ(0, stat(a, &st));
		for (drop = 0; drop < 2; drop++) {
			/* Through the mount, a to b; in the lower, b to c. */
			snprintf(name, sizeof(name), "%sb", dirs[i]);
			ASSERT_EQ(0, rename(a, ahfs_m(&self->fs, b, name)));
			if (drop)
				ASSERT_EQ(0, ahfs_drop_caches());
			fd = open_fh(self->mfd, &fh, O_RDONLY);
			EXPECT_LE(0, fd) TH_LOG("'%s' renamed through the mount%s: %s",
						name, drop ? ", caches dropped" : "",
						strerror(-fd));
			if (fd >= 0) {
				EXPECT_EQ(0, same_file(fd, &st, 4096));
				close(fd);
			}

			ASSERT_EQ(0, rename(ahfs_l(&self->fs, b, name),
					    ahfs_l(&self->fs, c, dirs[i][0] ? "sub/c" : "c")));
			if (drop)
				ASSERT_EQ(0, ahfs_drop_caches());
			fd = open_fh(self->mfd, &fh, O_RDONLY);
			EXPECT_LE(0, fd) TH_LOG("'%s' renamed in the lower%s: %s",
						name, drop ? ", caches dropped" : "",
						strerror(-fd));
			if (fd >= 0) {
				EXPECT_EQ(0, same_file(fd, &st, 4096));
				close(fd);
			}
			/* Back to a for the next round. */
			ASSERT_EQ(0, rename(c, ahfs_l(&self->fs, b, dirs[i][0] ? "sub/a" : "a")));
		}
	}
}

/*
 * A file removed while it is open still has an inode: its handle opens
 * it, through aheadfs as on the lower, until the last close.
 */
TEST_F(export, removed_open_file_opens_until_last_close)
{
	char l[PATH_MAX];
	struct fh up, low;
	struct stat st;
	int lfd, keep, fd, lowfd;

	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, self->path, "u"), 4096));
	ASSERT_EQ(0, get_fh(self->path, &up));
	ASSERT_EQ(0, get_fh(ahfs_l(&self->fs, l, "u"), &low));
	ASSERT_EQ(0, stat(self->path, &st));
	lfd = lower_mfd(&self->fs);
	ASSERT_LE(0, lfd);
	keep = open(self->path, O_RDONLY);
	ASSERT_LE(0, keep);
	ASSERT_EQ(0, unlink(self->path));

	/* The lower's behaviour: its handle opens the removed, open file. */
	lowfd = open_fh(lfd, &low, O_RDONLY);
	EXPECT_LE(0, lowfd) TH_LOG("lower: %s", strerror(-lowfd));
	if (lowfd >= 0) {
		EXPECT_EQ(0, same_file(lowfd, &st, 4096));
		close(lowfd);
	}
	/* aheadfs, the same. */
	fd = open_fh(self->mfd, &up, O_RDONLY);
	EXPECT_LE(0, fd) TH_LOG("aheadfs: the removed, still open file: %s",
				strerror(-fd));
	if (fd >= 0) {
		EXPECT_EQ(0, same_file(fd, &st, 4096));
		close(fd);
	}

	/* After the last close, gone on both. */
	close(keep);
	fd = open_fh(self->mfd, &up, O_RDONLY);
	EXPECT_EQ(-ESTALE, fd) TH_LOG("aheadfs: the removed file after its last close");
	if (fd >= 0)
		close(fd);
	lowfd = open_fh(lfd, &low, O_RDONLY);
	EXPECT_EQ(-ESTALE, lowfd) TH_LOG("lower: the removed file after its last close");
	if (lowfd >= 0)
		close(lowfd);
	close(lfd);
}

TEST_F(export, garbage_handle_is_stale)
{
	struct fh fh;

	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, self->path, "f"), 10));
	ASSERT_EQ(0, get_fh(self->path, &fh));
	/* An inode number that does not exist, same generation. */
	memset(fh.h.f_handle, 0xfe, 4);
	EXPECT_EQ(-ESTALE, open_fh(self->mfd, &fh, O_RDONLY));
}

/*
 * Many processes decoding the same handles while the caches are dropped
 * under them: the disconnected-alias path races with itself and with
 * lookups, and every open must see the same file.
 */
TEST_F_TIMEOUT(export, concurrent_decodes, 120)
{
	static char path[4][PATH_MAX];
	struct fh fh[4];
	pid_t pid[4];
	int i, st, bad = 0;

	for (i = 0; i < 4; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, path[i], name),
					    4096));
		ASSERT_EQ(0, get_fh(path[i], &fh[i]));
	}
	for (i = 0; i < 4; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (!pid[i]) {
			unsigned char buf[4096];
			int n, fd;

			for (n = 0; n < 300; n++) {
				if (i == 0 && n % 50 == 0)
					ahfs_write_file("/proc/sys/vm/drop_caches",
							"2\n");
				fd = open_fh(self->mfd, &fh[n % 4], O_RDONLY);
				if (fd < 0)
					_exit(1);
				if (read(fd, buf, sizeof(buf)) != sizeof(buf) ||
				    ahfs_check_pattern(buf, sizeof(buf), 0))
					_exit(2);
				close(fd);
				if (n % 7 == 0 && access(path[n % 4], R_OK))
					_exit(3);
			}
			_exit(0);
		}
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &st, 0));
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	EXPECT_EQ(0, bad);
}

TEST_HARNESS_MAIN
