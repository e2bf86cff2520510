// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs copy offload: copy_file_range semantics as on a native
 * filesystem, the path taken (clone on xfs, chunked copy on ext4 and across
 * lowers), holes, short copies, the copy chunk following txn_kb, and
 * FICLONE/FIDEDUPERANGE reaching the lower.
 */
#include "aheadfs_test.h"

#include <liburing.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>

FIXTURE(copy) {
	struct ahfs fs;
	char src[PATH_MAX];
	char dst[PATH_MAX];
	int xfs;
};

FIXTURE_SETUP(copy)
{
	ASSERT_EQ(0, ahfs_setup(&self->fs, "copy", ""));
	ahfs_m(&self->fs, self->src, "src");
	ahfs_m(&self->fs, self->dst, "dst");
	self->xfs = !strcmp(ahfs_fstype(), "xfs");
}

FIXTURE_TEARDOWN(copy)
{
	ahfs_teardown(&self->fs);
}

static ssize_t cfr(int in, loff_t *pin, int out, loff_t *pout, size_t len)
{
	return copy_file_range(in, pin, out, pout, len, 0);
}

TEST_F(copy, whole_file_and_offsets)
{
	const off_t size = (3 << 20) + 123;
	long long reqs = ahfs_stat(&self->fs, "copy_reqs");
	long long bytes = ahfs_stat(&self->fs, "copy_bytes");
	int in, out;

	ASSERT_EQ(0, ahfs_make_file(self->src, size));
	in = open(self->src, O_RDONLY);
	out = open(self->dst, O_WRONLY | O_CREAT, 0644);
	ASSERT_LE(0, in);
	ASSERT_LE(0, out);
	ASSERT_EQ(1000, lseek(in, 1000, SEEK_SET));
	/* GNU cp asks for about 2^63 bytes: the copy runs to EOF. */
	ASSERT_EQ(size - 1000, cfr(in, NULL, out, NULL, SSIZE_MAX));
	EXPECT_EQ(size, lseek(in, 0, SEEK_CUR));
	EXPECT_EQ(size - 1000, lseek(out, 0, SEEK_CUR));
	EXPECT_EQ(0, cfr(in, NULL, out, NULL, SSIZE_MAX));
	close(in);
	close(out);
	EXPECT_EQ(0, ahfs_run("cmp -s -i 1000:0 '%s' '%s'", self->src, self->dst));
	/* The call at EOF never reaches the filesystem. */
	EXPECT_EQ(reqs + 1, ahfs_stat(&self->fs, "copy_reqs"));
	EXPECT_EQ(bytes + size - 1000, ahfs_stat(&self->fs, "copy_bytes"));
}

TEST_F(copy, short_at_eof_and_past_it)
{
	loff_t pin, pout = 0;
	int in, out;

	ASSERT_EQ(0, ahfs_make_file(self->src, 10000));
	in = open(self->src, O_RDONLY);
	out = open(self->dst, O_WRONLY | O_CREAT, 0644);
	pin = 9900;
	EXPECT_EQ(100, cfr(in, &pin, out, &pout, 1 << 20));
	EXPECT_EQ(10000, pin);
	EXPECT_EQ(100, pout);
	pin = 20000;
	EXPECT_EQ(0, cfr(in, &pin, out, &pout, 100));
	close(in);
	close(out);
}

TEST_F(copy, refused_like_native)
{
	char d[PATH_MAX];
	loff_t a = 0, b = 4096;
	int in, out, fd, flags;

	ASSERT_EQ(0, ahfs_make_file(self->src, 1 << 20));
	ASSERT_EQ(0, ahfs_make_file(self->dst, 1 << 20));
	in = open(self->src, O_RDWR);
	ASSERT_LE(0, in);

	/* Overlapping ranges in one file. */
	EXPECT_EQ(-1, cfr(in, &a, in, &b, 65536));
	EXPECT_EQ(EINVAL, errno);
	/* O_APPEND destination, read-only destination, write-only source. */
	out = open(self->dst, O_WRONLY | O_APPEND);
	EXPECT_EQ(-1, cfr(in, NULL, out, NULL, 100));
	EXPECT_EQ(EBADF, errno);
	close(out);
	out = open(self->dst, O_RDONLY);
	EXPECT_EQ(-1, cfr(in, NULL, out, NULL, 100));
	EXPECT_EQ(EBADF, errno);
	close(out);
	fd = open(self->src, O_WRONLY);
	out = open(self->dst, O_WRONLY);
	EXPECT_EQ(-1, cfr(fd, NULL, out, NULL, 100));
	EXPECT_EQ(EBADF, errno);
	close(fd);
	/* Directories. */
	ASSERT_EQ(0, mkdir(ahfs_m(&self->fs, d, "dir"), 0755));
	fd = open(d, O_RDONLY | O_DIRECTORY);
	EXPECT_EQ(-1, cfr(fd, NULL, out, NULL, 100));
	EXPECT_EQ(EISDIR, errno);
	close(fd);
	/* Bad flags. */
	EXPECT_EQ(-1, copy_file_range(in, NULL, out, NULL, 100, 1));
	EXPECT_EQ(EINVAL, errno);
	/* An immutable destination. */
	ASSERT_EQ(0, ioctl(out, FS_IOC_GETFLAGS, &flags));
	flags |= FS_IMMUTABLE_FL;
	ASSERT_EQ(0, ioctl(out, FS_IOC_SETFLAGS, &flags));
	EXPECT_EQ(-1, cfr(in, NULL, out, NULL, 100));
	EXPECT_EQ(EPERM, errno);
	flags &= ~FS_IMMUTABLE_FL;
	ASSERT_EQ(0, ioctl(out, FS_IOC_SETFLAGS, &flags));
	close(out);
	close(in);
}

TEST_F(copy, running_executable_and_swapfile)
{
	char exe[PATH_MAX], swp[PATH_MAX], c;
	int p[2], in, out;
	pid_t pid;

	/* A running executable cannot be opened for writing, as natively. */
	ASSERT_EQ(0, ahfs_run("cp /bin/sleep '%s'", ahfs_m(&self->fs, exe, "sleep")));
	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(p[0]);
		execl(exe, "sleep", "60", NULL);
		_exit(127);
	}
	close(p[1]);
	/* EOF once exec has closed the write end: the program runs. */
	ASSERT_EQ(0, read(p[0], &c, 1));
	EXPECT_EQ(-1, open(exe, O_WRONLY));
	EXPECT_EQ(ETXTBSY, errno);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(p[0]);

	/* A swapfile of the lower is refused through the mount too. */
	ahfs_l(&self->fs, swp, "swap");
	ASSERT_EQ(0, ahfs_run("dd if=/dev/zero of='%s' bs=1M count=8 status=none && chmod 600 '%s' && mkswap '%s' >/dev/null",
			      swp, swp, swp));
	if (ahfs_run("swapon '%s' 2>/dev/null", swp))
		SKIP(return, "swapon not possible on this %s lower", ahfs_fstype());
	ASSERT_EQ(0, ahfs_make_file(self->dst, 4096));
	in = open(ahfs_m(&self->fs, swp, "swap"), O_RDONLY);
	out = open(self->dst, O_WRONLY);
	ASSERT_LE(0, in);
	EXPECT_EQ(-1, cfr(in, NULL, out, NULL, 4096));
	EXPECT_EQ(ETXTBSY, errno);
	close(in);
	close(out);
	ASSERT_EQ(0, ahfs_run("swapoff '%s'", ahfs_l(&self->fs, swp, "swap")));
}

static int shared_extents(const char *path)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ext[64];
	} f = { .fm = { .fm_length = ~0ULL, .fm_extent_count = 64,
			.fm_flags = FIEMAP_FLAG_SYNC } };
	int fd = open(path, O_RDONLY), n = 0;
	unsigned int i;

	if (fd < 0 || ioctl(fd, FS_IOC_FIEMAP, &f.fm))
		return -1;
	close(fd);
	for (i = 0; i < f.fm.fm_mapped_extents; i++)
		n += !!(f.ext[i].fe_flags & FIEMAP_EXTENT_SHARED);
	return n;
}

/* xfs (reflink) clones; ext4 copies in the kernel. */
TEST_F(copy, method_follows_lower)
{
	long long clone = ahfs_stat(&self->fs, "copy_clone");
	long long chunked = ahfs_stat(&self->fs, "copy_chunked");
	int in, out;

	ASSERT_EQ(0, ahfs_make_file(self->src, 4 << 20));
	in = open(self->src, O_RDONLY);
	out = open(self->dst, O_WRONLY | O_CREAT, 0644);
	ASSERT_EQ(4 << 20, cfr(in, NULL, out, NULL, 4 << 20));
	close(in);
	close(out);
	EXPECT_EQ(0, ahfs_run("cmp -s '%s' '%s'", self->src, self->dst));
	if (self->xfs) {
		EXPECT_EQ(clone + 1, ahfs_stat(&self->fs, "copy_clone"));
		EXPECT_LT(0, shared_extents(self->dst));
	} else {
		EXPECT_EQ(chunked + 1, ahfs_stat(&self->fs, "copy_chunked"));
		EXPECT_EQ(0, shared_extents(self->dst));
	}
}

TEST_F(copy, holes_preserved)
{
	struct stat st;
	int in, out;

	in = open(self->src, O_RDWR | O_CREAT, 0644);
	ASSERT_LE(0, in);
	ASSERT_EQ(4, pwrite(in, "head", 4, 0));
	ASSERT_EQ(4, pwrite(in, "tail", 4, 16 << 20));
	ASSERT_EQ(0, fsync(in));
	out = open(self->dst, O_WRONLY | O_CREAT, 0644);
	ASSERT_EQ((16 << 20) + 4, cfr(in, NULL, out, NULL, SSIZE_MAX));
	close(in);
	close(out);
	EXPECT_EQ(0, ahfs_run("cmp -s '%s' '%s'", self->src, self->dst));
	ASSERT_EQ(0, stat(self->dst, &st));
	EXPECT_EQ((16 << 20) + 4, st.st_size);
	EXPECT_GT(1 << 20, st.st_blocks * 512) {
		TH_LOG("the 16 MiB hole was written out: %lld bytes allocated",
		       (long long)st.st_blocks * 512);
	}
}

/* A source that ends in a hole: the copy has its size, not its blocks. */
TEST_F(copy, ends_in_hole)
{
	struct stat st;
	int in, out;

	in = open(self->src, O_RDWR | O_CREAT, 0644);
	ASSERT_LE(0, in);
	ASSERT_EQ(4, pwrite(in, "head", 4, 0));
	ASSERT_EQ(0, ftruncate(in, 16 << 20));
	out = open(self->dst, O_WRONLY | O_CREAT, 0644);
	ASSERT_EQ(16 << 20, cfr(in, NULL, out, NULL, SSIZE_MAX));
	EXPECT_EQ(16 << 20, lseek(out, 0, SEEK_CUR));
	close(in);
	close(out);
	EXPECT_EQ(0, ahfs_run("cmp -s '%s' '%s'", self->src, self->dst));
	ASSERT_EQ(0, stat(self->dst, &st));
	EXPECT_EQ(16 << 20, st.st_size);
	EXPECT_GT(1 << 20, st.st_blocks * 512);
}

TEST_F_TIMEOUT(copy, beyond_4g, 120)
{
	loff_t pin = 5LL << 30, pout = 6LL << 30;
	char buf[8] = {};
	int in, out;

	in = open(self->src, O_RDWR | O_CREAT, 0644);
	ASSERT_EQ(7, pwrite(in, "far off", 7, 5LL << 30));
	out = open(self->dst, O_RDWR | O_CREAT, 0644);
	ASSERT_EQ(7, cfr(in, &pin, out, &pout, 1 << 20));
	EXPECT_EQ((6LL << 30) + 7, pout);
	ASSERT_EQ(7, pread(out, buf, 7, 6LL << 30));
	EXPECT_STREQ("far off", buf);
	close(in);
	close(out);
}

/*
 * The second aheadfs mount, over a small tmpfs: a copy between two lowers
 * is the chunked copy, in transactions of txn_kb, and stops short at ENOSPC
 * or a fatal signal with what was copied intact.
 */
FIXTURE(xcopy) {
	struct ahfs fs;
	struct ahfs out;	/* the second mount: only its path and sysfs */
	char tmp[PATH_MAX];
};

FIXTURE_SETUP(xcopy)
{
	ASSERT_EQ(0, ahfs_setup(&self->fs, "xcopy", ""));
	ahfs_fmt(self->tmp, sizeof(self->tmp), "%s/tmpfs", self->fs.base);
	ahfs_fmt(self->out.mnt, sizeof(self->out.mnt), "%s/mnt2",
		 self->fs.base);
	ASSERT_EQ(0, mkdir(self->tmp, 0755));
	ASSERT_EQ(0, mkdir(self->out.mnt, 0755));
	ASSERT_EQ(0, mount("tmpfs", self->tmp, "tmpfs", 0, "size=6m"));
	ASSERT_EQ(0, ahfs_mount_at(self->tmp, self->out.mnt, ""));
	ASSERT_EQ(0, ahfs_find_sysfs(&self->out));
}

FIXTURE_TEARDOWN(xcopy)
{
	umount(self->out.mnt);
	umount(self->tmp);
	ahfs_teardown(&self->fs);
}

TEST_F(xcopy, chunk_follows_txn_kb)
{
	char src[PATH_MAX], dst[PATH_MAX];
	long long t0;
	int in, out;

	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, src, "src"), 4 << 20));
	in = open(src, O_RDONLY);
	ASSERT_LE(0, in);

	ASSERT_EQ(0, ahfs_set(&self->fs, "txn_kb", "512"));
	t0 = ahfs_stat(&self->fs, "copy_txns");
	out = open(ahfs_fmt(dst, sizeof(dst), "%s/a", self->out.mnt),
		   O_WRONLY | O_CREAT, 0644);
	ASSERT_EQ(4 << 20, cfr(in, NULL, out, NULL, SSIZE_MAX));
	close(out);
	EXPECT_EQ(t0 + 8, ahfs_stat(&self->fs, "copy_txns"));

	ASSERT_EQ(0, ahfs_set(&self->fs, "txn_kb", "2048"));
	t0 = ahfs_stat(&self->fs, "copy_txns");
	ASSERT_EQ(0, lseek(in, 0, SEEK_SET));
	out = open(ahfs_fmt(dst, sizeof(dst), "%s/a", self->out.mnt),
		   O_WRONLY | O_TRUNC);
	ASSERT_EQ(4 << 20, cfr(in, NULL, out, NULL, SSIZE_MAX));
	close(out);
	EXPECT_EQ(t0 + 2, ahfs_stat(&self->fs, "copy_txns"));
	close(in);
	EXPECT_EQ(0, ahfs_run("cmp -s '%s' '%s'", src, dst));
}

TEST_F(xcopy, enospc_returns_short_count)
{
	char src[PATH_MAX], dst[PATH_MAX];
	ssize_t n;
	int in, out;

	ASSERT_EQ(0, ahfs_set(&self->fs, "txn_kb", "1024"));
	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, src, "src"), 10 << 20));
	in = open(src, O_RDONLY);
	out = open(ahfs_fmt(dst, sizeof(dst), "%s/full", self->out.mnt),
		   O_WRONLY | O_CREAT, 0644);
	ASSERT_LE(0, in);
	ASSERT_LE(0, out);
	n = cfr(in, NULL, out, NULL, SSIZE_MAX);
	EXPECT_LT(0, n);
	EXPECT_GE(6 << 20, n);
	EXPECT_EQ(n, lseek(out, 0, SEEK_CUR));
	/* The next call reports the error itself. */
	EXPECT_EQ(-1, cfr(in, NULL, out, NULL, SSIZE_MAX));
	EXPECT_EQ(ENOSPC, errno);
	close(in);
	close(out);
	EXPECT_EQ(0, ahfs_run("cmp -s -n %zd '%s' '%s'", n, src, dst));
}

/*
 * A copy killed mid-way: SIGKILL lands while the chunked copy runs (from
 * the lower under test to the tmpfs lower, grown for it, so on every lower
 * it is the chunked copy), in 4 KiB transactions so that it runs long
 * enough to be caught.  The copy stops: the destination is a byte-identical prefix of
 * the source, the bytes copied are what the stats report, and no
 * transaction began after the last one that copied anything.
 */
TEST_F_TIMEOUT(xcopy, fatal_signal_stops_between_transactions, 180)
{
	const off_t size = 64 << 20;
	char src[PATH_MAX], dst[PATH_MAX];
	long long txns, bytes, reqs, dtxns;
	struct stat st;
	int status, in, out;
	pid_t pid;

	ASSERT_EQ(0, mount(NULL, self->tmp, NULL, MS_REMOUNT, "size=80m"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "txn_kb", "4"));
	ASSERT_EQ(0, ahfs_make_file(ahfs_m(&self->fs, src, "src"), size));
	ahfs_fmt(dst, sizeof(dst), "%s/dst", self->out.mnt);
	in = open(src, O_RDONLY);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, in);
	ASSERT_LE(0, out);
	ASSERT_EQ(0, ahfs_drop_caches());
	txns = ahfs_stat(&self->fs, "copy_txns");
	/* Transactions count on the source's mount, requests on the target's. */
	reqs = ahfs_stat(&self->out, "copy_reqs");
	bytes = ahfs_stat(&self->out, "copy_bytes");

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(cfr(in, NULL, out, NULL, size) == size ? 0 : 1);
	/* Kill it once its 16th transaction has begun. */
	while (ahfs_stat(&self->fs, "copy_txns") < txns + 16) {
		ASSERT_EQ(0, waitpid(pid, &status, WNOHANG)) {
			TH_LOG("the copy ended before its 16th transaction");
		}
		sched_yield();
	}
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status)) {
		TH_LOG("the copy of %lld MiB ended before SIGKILL (status %#x)",
		       (long long)size >> 20, status);
	}
	ASSERT_EQ(SIGKILL, WTERMSIG(status));

	ASSERT_EQ(0, fstat(out, &st));
	EXPECT_GT(size, st.st_size);
	EXPECT_LE(15 * 4096, st.st_size);
	EXPECT_EQ(reqs + 1, ahfs_stat(&self->out, "copy_reqs"));
	EXPECT_EQ(st.st_size, ahfs_stat(&self->out, "copy_bytes") - bytes);
	dtxns = ahfs_stat(&self->fs, "copy_txns") - txns;
	EXPECT_LE(st.st_size, dtxns * 4096);
	EXPECT_GE(st.st_size, (dtxns - 1) * 4096);
	EXPECT_EQ(0, ahfs_run("cmp -s -n %lld '%s' '%s'",
			      (long long)st.st_size, src, dst));
	TH_LOG("killed after %lld of %lld bytes, %lld transactions",
	       (long long)st.st_size, (long long)size, dtxns);
	close(in);
	close(out);
}

/* One FICLONE and one FIDEDUPERANGE of @in onto @out: (ret, errno, status). */
static void remap_both(int in, int out, int res[5])
{
	struct {
		struct file_dedupe_range r;
		struct file_dedupe_range_info info;
	} d = { .r = { .src_length = 1 << 20, .dest_count = 1 },
		.info = { .dest_fd = out } };

	errno = 0;
	res[0] = ioctl(out, FICLONE, in);
	res[1] = errno;
	errno = 0;
	res[2] = ioctl(in, FIDEDUPERANGE, &d.r);
	res[3] = errno;
	res[4] = d.info.status;
}

/*
 * Two aheadfs mounts of one lower give one lower file two aheadfs inodes:
 * the VFS's overlap check cannot see it, aheadfs must, as the lower would.
 */
TEST_F(copy, overlap_across_two_mounts_refused)
{
	char mnt2[PATH_MAX], p2[PATH_MAX];
	unsigned char buf[65536];
	loff_t pin, pout;
	int in, out;

	ASSERT_EQ(0, ahfs_make_file(self->src, sizeof(buf)));
	ahfs_fmt(mnt2, sizeof(mnt2), "%s/mnt2", self->fs.base);
	ASSERT_EQ(0, mkdir(mnt2, 0755));
	ASSERT_EQ(0, ahfs_mount_at(self->fs.lower, mnt2, ""));
	in = open(self->src, O_RDONLY);
	out = open(ahfs_fmt(p2, sizeof(p2), "%s/src", mnt2), O_WRONLY);
	ASSERT_LE(0, in);
	ASSERT_LE(0, out);
	pin = 0;
	pout = 4096;
	EXPECT_EQ(-1, cfr(in, &pin, out, &pout, 16384));
	EXPECT_EQ(EINVAL, errno);
	/* Nothing was written: the file still holds its pattern. */
	EXPECT_EQ((ssize_t)sizeof(buf), pread(in, buf, sizeof(buf), 0));
	EXPECT_EQ(0, ahfs_check_pattern(buf, sizeof(buf), 0));
	/* Disjoint ranges of the same file copy as on the lower. */
	pin = 0;
	pout = 32768;
	EXPECT_EQ(16384, cfr(in, &pin, out, &pout, 16384));
	EXPECT_EQ((ssize_t)sizeof(buf), pread(in, buf, sizeof(buf), 0));
	EXPECT_EQ(0, ahfs_check_pattern(buf, 32768, 0));
	EXPECT_EQ(0, ahfs_check_pattern(buf + 32768, 16384, 0));
	close(in);
	close(out);
	EXPECT_EQ(0, umount(mnt2));
}

/*
 * An asynchronous append completes outside the write call: the size the VFS
 * clamps a following copy to must still follow it.
 */
TEST_F(copy, source_grown_by_async_write)
{
	static unsigned char buf[1 << 16] __attribute__((aligned(4096)));
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	loff_t pin = 0, pout = 0;
	int fd, out, calls = 0;
	ssize_t n;

	ASSERT_EQ(0, ahfs_make_file(self->src, 4096));
	/* O_DIRECT: the lower completes it later, not within the call. */
	fd = open(self->src, O_RDWR | O_DIRECT);
	out = open(self->dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, out);
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	memset(buf, 0x33, sizeof(buf));
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_write(sqe, fd, buf, sizeof(buf), 4096);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ((int)sizeof(buf), cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	/*
	 * To EOF, as cp does: a copy from an O_DIRECT file may stop short
	 * after one pipe of 64 KiB (do_splice_direct()), on 6.12 in about
	 * one call in six, the lower's own copy_file_range as often.  A size
	 * left stale would end it at 4096.
	 */
	do {
		n = cfr(fd, &pin, out, &pout, 1 << 20);
	} while (n > 0 && ++calls < 64);
	EXPECT_EQ(0, n);
	EXPECT_EQ(4096 + (off_t)sizeof(buf), pin);
	EXPECT_EQ(4096 + (off_t)sizeof(buf), pout);
	close(fd);
	close(out);
}

TEST_F(copy, ficlone_and_dedupe)
{
	struct {
		struct file_dedupe_range r;
		struct file_dedupe_range_info info;
	} d = {};
	char l1[PATH_MAX], l2[PATH_MAX];
	int in, out, up[5], low[5], i;

	/* Through the mount, exactly what the lower answers. */
	ASSERT_EQ(0, ahfs_make_file(self->src, 1 << 20));
	ASSERT_EQ(0, ahfs_make_file(self->dst, 1 << 20));
	ASSERT_EQ(0, ahfs_make_file(ahfs_l(&self->fs, l1, "lsrc"), 1 << 20));
	ASSERT_EQ(0, ahfs_make_file(ahfs_l(&self->fs, l2, "ldst"), 1 << 20));
	in = open(l1, O_RDONLY);
	out = open(l2, O_RDWR);
	remap_both(in, out, low);
	close(in);
	close(out);
	in = open(self->src, O_RDONLY);
	out = open(self->dst, O_RDWR);
	remap_both(in, out, up);
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(low[i], up[i]) {
			TH_LOG("FICLONE/FIDEDUPERANGE result %d: lower %d, aheadfs %d",
			       i, low[i], up[i]);
		}
	}
	if (!self->xfs) {
		EXPECT_EQ(-1, up[0]);
		EXPECT_EQ(EOPNOTSUPP, up[1]);
		goto out;
	}
	EXPECT_EQ(0, up[0]);
	EXPECT_LT(0, shared_extents(self->dst));

	/* Equal ranges dedupe; differing ones do not. */
	ASSERT_EQ(0, ahfs_make_file(self->dst, 1 << 20));
	EXPECT_EQ(0, shared_extents(self->dst));
	d.r.src_length = 1 << 20;
	d.r.dest_count = 1;
	d.info.dest_fd = out;
	ASSERT_EQ(0, ioctl(in, FIDEDUPERANGE, &d.r));
	EXPECT_EQ(FILE_DEDUPE_RANGE_SAME, d.info.status);
	EXPECT_EQ(1 << 20, d.info.bytes_deduped);
	EXPECT_LT(0, shared_extents(self->dst));
	EXPECT_EQ(4, pwrite(out, "diff", 4, 0));
	memset(&d.info, 0, sizeof(d.info));
	d.info.dest_fd = out;
	ASSERT_EQ(0, ioctl(in, FIDEDUPERANGE, &d.r));
	EXPECT_EQ(FILE_DEDUPE_RANGE_DIFFERS, d.info.status);
	EXPECT_LE(1, ahfs_stat(&self->fs, "dedupe_reqs"));
out:
	close(in);
	close(out);
}

TEST_HARNESS_MAIN
