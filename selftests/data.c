// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs data paths: read/write with every flag, splice, mmap coherence,
 * sync, fallocate, SEEK_DATA/SEEK_HOLE, fadvise and readahead(2), locks,
 * ioctls and async I/O (io_uring, libaio), checked against the lower file.
 */
#include "aheadfs_test.h"

#include <libaio.h>
#include <liburing.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

FIXTURE(data) {
	struct ahfs fs;
	char m[PATH_MAX];	/* "f" through the mount */
	char l[PATH_MAX];	/* "f" in the lower */
};

FIXTURE_SETUP(data)
{
	ASSERT_EQ(0, ahfs_setup(&self->fs, "data", ""));
	ahfs_m(&self->fs, self->m, "f");
	ahfs_l(&self->fs, self->l, "f");
}

FIXTURE_TEARDOWN(data)
{
	ahfs_teardown(&self->fs);
}

static int same_file(const char *a, const char *b)
{
	return ahfs_run("cmp -s '%s' '%s'", a, b);
}

TEST_F(data, write_through_read_lower)
{
	static unsigned char buf[1 << 20];
	int fd;

	ASSERT_EQ(0, ahfs_make_file(self->m, 5 << 20 | 123));
	ASSERT_EQ(0, same_file(self->m, self->l));
	fd = open(self->l, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(sizeof(buf), pread(fd, buf, sizeof(buf), 3 << 20));
	EXPECT_EQ(0, ahfs_check_pattern(buf, sizeof(buf), 3 << 20));
	close(fd);
}

TEST_F(data, write_lower_read_through)
{
	static unsigned char buf[1 << 20];
	struct stat st;
	int fd;

	ASSERT_EQ(0, ahfs_make_file(self->l, 3 << 20));
	fd = open(self->m, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(sizeof(buf), pread(fd, buf, sizeof(buf), 1 << 20));
	EXPECT_EQ(0, ahfs_check_pattern(buf, sizeof(buf), 1 << 20));
	/* A lower-side append is seen by the open file too. */
	ASSERT_EQ(0, ahfs_run("printf tail >> '%s'", self->l));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ((3 << 20) + 4, st.st_size);
	ASSERT_EQ(4, pread(fd, buf, 16, 3 << 20));
	EXPECT_EQ(0, memcmp(buf, "tail", 4));
	close(fd);
}

TEST_F(data, append_sync_and_rwf_flags)
{
	char buf[64] = {};
	struct iovec iov;
	struct stat st;
	int fd;

	fd = open(self->m, O_WRONLY | O_CREAT | O_APPEND | O_SYNC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(3, pwrite(fd, "one", 3, 0));
	ASSERT_EQ(3, pwrite(fd, "two", 3, 0));	/* O_APPEND ignores offset */
	close(fd);

	fd = open(self->m, O_WRONLY);
	ASSERT_LE(0, fd);
	iov.iov_base = "three";
	iov.iov_len = 5;
	ASSERT_EQ(5, pwritev2(fd, &iov, 1, 0, RWF_APPEND | RWF_DSYNC));
	iov.iov_base = "ONE";
	iov.iov_len = 3;
	ASSERT_EQ(3, pwritev2(fd, &iov, 1, 0, RWF_SYNC));
	close(fd);
	ASSERT_EQ(11, ahfs_read_file(self->l, buf, sizeof(buf)));
	EXPECT_STREQ("ONEtwothree", buf);
	ASSERT_EQ(0, stat(self->m, &st));
	EXPECT_EQ(11, st.st_size);

	/* fcntl(F_SETFL, O_APPEND) on an open file reaches the lower file. */
	fd = open(self->m, O_WRONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fcntl(fd, F_SETFL, O_APPEND));
	ASSERT_EQ(1, pwrite(fd, "!", 1, 0));
	close(fd);
	ASSERT_EQ(12, ahfs_read_file(self->l, buf, sizeof(buf)));
	EXPECT_STREQ("ONEtwothree!", buf);
}

TEST_F(data, o_direct)
{
	void *buf;
	int fd;

	ASSERT_EQ(0, posix_memalign(&buf, 4096, 1 << 20));
	memset(buf, 0xab, 1 << 20);
	fd = open(self->m, O_RDWR | O_CREAT | O_DIRECT, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1 << 20, pwrite(fd, buf, 1 << 20, 0));
	memset(buf, 0, 1 << 20);
	ASSERT_EQ(1 << 20, pread(fd, buf, 1 << 20, 0));
	EXPECT_EQ(0xab, ((unsigned char *)buf)[12345]);
	/* Misaligned direct I/O fails as on the lower. */
	EXPECT_EQ(-1, pread(fd, (char *)buf + 1, 4096, 0));
	EXPECT_EQ(EINVAL, errno);
	close(fd);
	EXPECT_EQ(0, same_file(self->m, self->l));
	free(buf);
}

TEST_F(data, beyond_4g)
{
	const off_t off = (5LL << 30) + 17;
	char buf[16] = {};
	struct stat st;
	int fd;

	fd = open(self->m, O_RDWR | O_CREAT, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(5, pwrite(fd, "far!!", 5, off));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(off + 5, st.st_size);
	ASSERT_EQ(5, pread(fd, buf, 5, off));
	EXPECT_STREQ("far!!", buf);
	close(fd);
	ASSERT_EQ(0, stat(self->l, &st));
	EXPECT_EQ(off + 5, st.st_size);
	/* Hole before it reads as zeroes. */
	fd = open(self->m, O_RDONLY);
	ASSERT_EQ(8, pread(fd, buf, 8, 4LL << 30));
	EXPECT_EQ(0, buf[0] | buf[7]);
	EXPECT_EQ(off & ~4095LL, lseek(fd, 1LL << 30, SEEK_DATA));
	close(fd);
}

TEST_F(data, splice_and_sendfile)
{
	char out[PATH_MAX];
	int in, o, p[2];
	loff_t off = 0;
	ssize_t n, total = 0;

	ASSERT_EQ(0, ahfs_make_file(self->m, (2 << 20) + 77));
	ahfs_m(&self->fs, out, "copy");
	in = open(self->m, O_RDONLY);
	o = open(out, O_WRONLY | O_CREAT, 0644);
	ASSERT_LE(0, in);
	ASSERT_LE(0, o);
	ASSERT_EQ(0, pipe(p));
	while ((n = splice(in, &off, p[1], NULL, 65536, 0)) > 0) {
		ASSERT_EQ(n, splice(p[0], NULL, o, NULL, n, 0));
		total += n;
	}
	ASSERT_EQ(0, n);
	EXPECT_EQ((2 << 20) + 77, total);
	close(o);
	EXPECT_EQ(0, same_file(self->l, ahfs_l(&self->fs, out, "copy")));

	/* sendfile(2) to a file goes through splice too. */
	o = open(ahfs_m(&self->fs, out, "sent"), O_WRONLY | O_CREAT, 0644);
	ASSERT_LE(0, o);
	off = 0;
	total = 0;
	while ((n = sendfile(o, in, &off, 1 << 20)) > 0)
		total += n;
	EXPECT_EQ((2 << 20) + 77, total);
	close(o);
	close(in);
	close(p[0]);
	close(p[1]);
	EXPECT_EQ(0, same_file(self->l, ahfs_l(&self->fs, out, "sent")));
}

TEST_F(data, mmap_shared_coherent)
{
	const size_t len = 1 << 20;
	char buf[8] = {};
	char *map;
	int fd, lfd;

	ASSERT_EQ(0, ahfs_make_file(self->m, len));
	fd = open(self->m, O_RDWR);
	ASSERT_LE(0, fd);
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	EXPECT_EQ(0, ahfs_check_pattern((unsigned char *)map, len, 0));

	/* A store through the mapping is seen by read() on both layers. */
	memcpy(map + 4096, "mapped", 6);
	ASSERT_EQ(6, pread(fd, buf, 6, 4096));
	EXPECT_STREQ("mapped", buf);
	lfd = open(self->l, O_RDWR);
	ASSERT_LE(0, lfd);
	ASSERT_EQ(6, pread(lfd, buf, 6, 4096));
	EXPECT_STREQ("mapped", buf);

	/* A write() to the lower is seen through the mapping. */
	ASSERT_EQ(5, pwrite(lfd, "lower", 5, 8192));
	EXPECT_EQ(0, memcmp(map + 8192, "lower", 5));
	ASSERT_EQ(0, msync(map, len, MS_SYNC));
	ASSERT_EQ(0, munmap(map, len));
	close(lfd);

	/* MAP_PRIVATE writes stay private. */
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	memcpy(map, "private", 7);
	ASSERT_EQ(7, pread(fd, buf, 7, 0));
	EXPECT_NE(0, memcmp(buf, "private", 7));
	munmap(map, len);
	close(fd);
}

TEST_F(data, sync_calls)
{
	int fd = open(self->m, O_RDWR | O_CREAT, 0644);

	ASSERT_LE(0, fd);
	ASSERT_EQ(4, write(fd, "sync", 4));
	EXPECT_EQ(0, fsync(fd));
	EXPECT_EQ(0, fdatasync(fd));
	EXPECT_EQ(0, sync_file_range(fd, 0, 4, SYNC_FILE_RANGE_WRITE |
				     SYNC_FILE_RANGE_WAIT_AFTER));
	EXPECT_EQ(0, syncfs(fd));
	close(fd);
	fd = open(self->fs.mnt, O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, fsync(fd));
	close(fd);
}

/* Sectors written to the block device holding @path, or -1. */
static long long dev_written(const char *path)
{
	char f[PATH_MAX], buf[512];
	long long v[7];
	struct stat st;

	if (stat(path, &st))
		return -1;
	ahfs_fmt(f, sizeof(f), "/sys/dev/block/%u:%u/stat", major(st.st_dev),
		 minor(st.st_dev));
	if (ahfs_read_file(f, buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6]) != 7)
		return -1;
	return v[6];
}

/*
 * sync_file_range(2) has no file operation: the VFS writes back the open
 * file's mapping, which must be the lower's (aheadfs has no pages).
 */
TEST_F(data, sync_file_range_writes_lower_pages)
{
	static char buf[1 << 20];
	long long before, after;
	int fd;

	fd = open(self->m, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	memset(buf, 0x5a, sizeof(buf));
	/*
	 * Counted from before the write: the flusher may write some of it
	 * back first, and what sync_file_range() promises is that the whole
	 * range is on the device when it returns.
	 */
	before = dev_written(self->fs.lower);
	ASSERT_LE(0, before);
	ASSERT_EQ((ssize_t)sizeof(buf), write(fd, buf, sizeof(buf)));
	ASSERT_EQ(0, sync_file_range(fd, 0, sizeof(buf),
				     SYNC_FILE_RANGE_WAIT_BEFORE |
				     SYNC_FILE_RANGE_WRITE |
				     SYNC_FILE_RANGE_WAIT_AFTER));
	after = dev_written(self->fs.lower);
	/* The whole megabyte reached the device: 2048 sectors at least. */
	EXPECT_LE(before + (long long)(sizeof(buf) >> 9), after)
		TH_LOG("%lld sectors written during sync_file_range", after - before);
	close(fd);
}

TEST_F(data, fallocate_modes_and_seek_holes)
{
	unsigned char buf[4096];
	struct stat st;
	int fd, lfd;
	off_t d, h;

	fd = open(self->m, O_RDWR | O_CREAT, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fallocate(fd, 0, 0, 1 << 20));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(1 << 20, st.st_size);
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(1 << 20, st.st_size);
	EXPECT_LE(2 << 20, st.st_blocks * 512);

	memset(buf, 0x5a, sizeof(buf));
	ASSERT_EQ(4096, pwrite(fd, buf, 4096, 8192));
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       8192, 4096));
	ASSERT_EQ(4096, pread(fd, buf, 4096, 8192));
	EXPECT_EQ(0, buf[0] | buf[4095]);
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 4096));
	EXPECT_EQ(-1, fallocate(fd, 0x4000, 0, 4096));	/* unknown mode */
	EXPECT_EQ(EOPNOTSUPP, errno);
	close(fd);

	/* A sparse file: SEEK_DATA/SEEK_HOLE answers match the lower's. */
	fd = open(ahfs_m(&self->fs, (char *)buf, "sparse"), O_RDWR | O_CREAT, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(4, pwrite(fd, "data", 4, 4 << 20));
	ASSERT_EQ(4, pwrite(fd, "more", 4, 12 << 20));
	ASSERT_EQ(0, fsync(fd));
	lfd = open(ahfs_l(&self->fs, (char *)buf, "sparse"), O_RDONLY);
	ASSERT_LE(0, lfd);
	for (d = 0; d >= 0 && d < (12 << 20); d = h) {
		d = lseek(fd, d, SEEK_DATA);
		ASSERT_EQ(lseek(lfd, d < 0 ? 0 : d, SEEK_DATA) == d, 1);
		h = lseek(fd, d, SEEK_HOLE);
		EXPECT_EQ(lseek(lfd, d, SEEK_HOLE), h);
		ASSERT_LT(d, h);
	}
	EXPECT_EQ(-1, lseek(fd, (12 << 20) + 4, SEEK_DATA));
	EXPECT_EQ(ENXIO, errno);
	close(lfd);
	close(fd);
}

/* Resident pages of [off, off + len) of a file, by mincore() on a mapping. */
static long resident(const char *path, off_t off, size_t len)
{
	unsigned char vec[1024];
	long n = 0;
	size_t i;
	void *map;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || len / 4096 > sizeof(vec))
		return -1;
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	if (mincore(map, len, vec))
		n = -1;
	for (i = 0; n >= 0 && i < len / 4096; i++)
		n += vec[i] & 1;
	munmap(map, len);
	return n;
}

/*
 * WILLNEED starts reads and returns: wait for the range to become resident,
 * bounded, as a condition rather than a fixed sleep.
 */
static long wait_resident(const char *path, off_t off, size_t len)
{
	struct timespec ts = { 0, 1000000 };
	long n = 0;
	int i;

	for (i = 0; i < 10000; i++) {
		n = resident(path, off, len);
		if (n < 0 || n == (long)(len / 4096))
			break;
		nanosleep(&ts, NULL);
	}
	return n;
}

TEST_F(data, fadvise_and_readahead_reach_lower)
{
	const size_t range = 64 << 10;
	int fd;

	ASSERT_EQ(0, ahfs_make_file(self->l, 8 << 20));
	fd = open(self->m, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ahfs_drop_caches());
	ASSERT_EQ(0, resident(self->l, 1 << 20, range));

	/* aheadfs itself has no pages: the advice must act on the lower's. */
	ASSERT_EQ(0, posix_fadvise(fd, 1 << 20, range, POSIX_FADV_WILLNEED));
	EXPECT_EQ(range / 4096, wait_resident(self->l, 1 << 20, range)) {
		TH_LOG("fadvise(WILLNEED) did not reach the lower page cache");
	}
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	EXPECT_EQ(0, resident(self->l, 1 << 20, range)) {
		TH_LOG("fadvise(DONTNEED) did not reach the lower page cache");
	}
	ASSERT_EQ(0, resident(self->l, 4 << 20, range));
	ASSERT_EQ(0, readahead(fd, 4 << 20, range));
	EXPECT_EQ(range / 4096, wait_resident(self->l, 4 << 20, range)) {
		TH_LOG("readahead(2) did not reach the lower page cache");
	}
	close(fd);
}

TEST_F(data, flock_and_posix_locks)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 100 };
	int a, b, st;
	pid_t pid;

	ASSERT_EQ(0, ahfs_make_file(self->m, 4096));
	a = open(self->m, O_RDWR);
	b = open(self->m, O_RDWR);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, flock(a, LOCK_EX | LOCK_NB));
	EXPECT_EQ(-1, flock(b, LOCK_EX | LOCK_NB));
	EXPECT_EQ(EWOULDBLOCK, errno);
	ASSERT_EQ(0, flock(a, LOCK_UN));
	EXPECT_EQ(0, flock(b, LOCK_EX | LOCK_NB));

	ASSERT_EQ(0, fcntl(a, F_SETLK, &fl));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct flock t = fl;

		if (fcntl(b, F_SETLK, &t) == 0 || (errno != EAGAIN && errno != EACCES))
			_exit(1);
		if (fcntl(b, F_GETLK, &t) || t.l_type != F_WRLCK ||
		    t.l_pid != getppid())
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(0, WEXITSTATUS(st));
	close(a);
	close(b);
}

TEST_F(data, ioctl_flags_and_fiemap)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ext[32];
	} up = {}, low = {};
	int fd, lfd, flags = 0;

	ASSERT_EQ(0, ahfs_make_file(self->m, 1 << 20));
	fd = open(self->m, O_RDONLY);
	lfd = open(self->l, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, lfd);

	ASSERT_EQ(0, ioctl(fd, FS_IOC_GETFLAGS, &flags));
	flags |= FS_NOATIME_FL;
	ASSERT_EQ(0, ioctl(fd, FS_IOC_SETFLAGS, &flags));
	flags = 0;
	ASSERT_EQ(0, ioctl(lfd, FS_IOC_GETFLAGS, &flags));
	EXPECT_TRUE(flags & FS_NOATIME_FL);

	ASSERT_EQ(0, fsync(fd));
	up.fm.fm_length = low.fm.fm_length = ~0ULL;
	up.fm.fm_extent_count = low.fm.fm_extent_count = 32;
	up.fm.fm_flags = low.fm.fm_flags = FIEMAP_FLAG_SYNC;
	ASSERT_EQ(0, ioctl(fd, FS_IOC_FIEMAP, &up.fm));
	ASSERT_EQ(0, ioctl(lfd, FS_IOC_FIEMAP, &low.fm));
	ASSERT_LT(0, up.fm.fm_mapped_extents);
	EXPECT_EQ(low.fm.fm_mapped_extents, up.fm.fm_mapped_extents);
	EXPECT_EQ(low.ext[0].fe_physical, up.ext[0].fe_physical);

	/* Anything else is refused rather than passed blindly. */
	EXPECT_EQ(-1, ioctl(fd, _IO('X', 0x7e), 0));
	EXPECT_EQ(ENOTTY, errno);
	close(fd);
	close(lfd);
}

TEST_F(data, io_uring_read_write)
{
	static char wbuf[1 << 16], rbuf[1 << 16];
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	int fd, i;

	for (i = 0; i < (int)sizeof(wbuf); i++)
		wbuf[i] = (char)(i * 31);
	fd = open(self->m, O_RDWR | O_CREAT, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, io_uring_queue_init(8, &ring, 0));
	io_uring_prep_write(io_uring_get_sqe(&ring), fd, wbuf, sizeof(wbuf), 4096);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ(sizeof(wbuf), cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	io_uring_prep_read(io_uring_get_sqe(&ring), fd, rbuf, sizeof(rbuf), 4096);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ(sizeof(rbuf), cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	EXPECT_EQ(0, memcmp(wbuf, rbuf, sizeof(rbuf)));
	io_uring_queue_exit(&ring);
	close(fd);

	fd = open(self->l, O_RDONLY);
	ASSERT_EQ(sizeof(rbuf), pread(fd, rbuf, sizeof(rbuf), 4096));
	EXPECT_EQ(0, memcmp(wbuf, rbuf, sizeof(rbuf)));
	close(fd);
}

TEST_F(data, libaio_direct_read_write)
{
	struct iocb cb[2], *cbs[2] = { &cb[0], &cb[1] };
	struct io_event ev[2];
	io_context_t ctx = 0;
	void *w, *r;
	int fd, n = 0;

	ASSERT_EQ(0, posix_memalign(&w, 4096, 1 << 20));
	ASSERT_EQ(0, posix_memalign(&r, 4096, 1 << 20));
	memset(w, 0x3c, 1 << 20);
	fd = open(self->m, O_RDWR | O_CREAT | O_DIRECT, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, io_setup(4, &ctx));
	io_prep_pwrite(&cb[0], fd, w, 1 << 20, 0);
	ASSERT_EQ(1, io_submit(ctx, 1, cbs));
	ASSERT_EQ(1, io_getevents(ctx, 1, 1, ev, NULL));
	EXPECT_EQ(1 << 20, (long)ev[0].res);
	/* Two reads in flight at once. */
	io_prep_pread(&cb[0], fd, r, 1 << 19, 0);
	io_prep_pread(&cb[1], fd, (char *)r + (1 << 19), 1 << 19, 1 << 19);
	ASSERT_EQ(2, io_submit(ctx, 2, cbs));
	while (n < 2) {
		int got = io_getevents(ctx, 1, 2 - n, ev, NULL);

		ASSERT_LT(0, got);
		EXPECT_EQ(1 << 19, (long)ev[0].res);
		n += got;
	}
	EXPECT_EQ(0, memcmp(w, r, 1 << 20));
	io_destroy(ctx);
	close(fd);
	free(w);
	free(r);
}

TEST_F(data, read_write_stats)
{
	long long rb, wb, rr;
	char buf[4096];
	int fd;

	rb = ahfs_stat(&self->fs, "read_bytes");
	wb = ahfs_stat(&self->fs, "write_bytes");
	rr = ahfs_stat(&self->fs, "read_reqs");
	ASSERT_LE(0, rb);
	fd = open(self->m, O_RDWR | O_CREAT, 0644);
	ASSERT_LE(0, fd);
	memset(buf, 1, sizeof(buf));
	ASSERT_EQ(4096, pwrite(fd, buf, 4096, 0));
	ASSERT_EQ(1000, pwrite(fd, buf, 1000, 4096));
	ASSERT_EQ(4096, pread(fd, buf, 4096, 0));
	close(fd);
	EXPECT_EQ(wb + 5096, ahfs_stat(&self->fs, "write_bytes"));
	EXPECT_EQ(rb + 4096, ahfs_stat(&self->fs, "read_bytes"));
	EXPECT_EQ(rr + 1, ahfs_stat(&self->fs, "read_reqs"));
}

/*
 * A memory cgroup's statistics are kept per CPU and folded into what
 * memory.stat shows only once enough has changed: on 6.12 up to 64 pages a
 * CPU (MEMCG_CHARGE_BATCH) may be missing from a read.  Enough opens that
 * half of aheadfs_file_info's share (about 80 bytes each) is four times
 * that, at least 20000.
 */
static long charge_opens(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long n = 4 * 64 * 4096 * (cpus > 0 ? cpus : 1) / 40;

	return n > 20000 ? n : 20000;
}

/* "slab N" of memory cgroup @cg's memory.stat (bytes), or -1. */
static long long memcg_slab(const char *cg)
{
	char path[PATH_MAX], buf[16384], *p;

	if (ahfs_read_file(ahfs_fmt(path, sizeof(path), "%s/memory.stat", cg),
			   buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "\nslab ");
	return p ? atoll(p + 6) : -1;
}

/*
 * What one object of slab cache @name costs the memory cgroup it is
 * charged to: its size in the slab and the cgroup pointer kept beside it.
 */
static long long slab_charge(const char *name)
{
	char path[PATH_MAX], buf[64];

	if (ahfs_read_file(ahfs_fmt(path, sizeof(path),
				    "/sys/kernel/slab/%s/slab_size", name),
			   buf, sizeof(buf)) <= 0)
		return -1;
	return atoll(buf) + sizeof(void *);
}

/*
 * How much slab memory cgroup @cg was charged while a child in it opened
 * @path @opens times (and kept the files open), reading a byte of each
 * if @read: the child joins, the parent reads the cgroup's slab, the
 * child opens, the parent reads it again; pipes order the steps.  -1 if a
 * step failed.
 */
static long long charged_for_opens(const char *cg, const char *path,
				   long opens, bool read_one)
{
	int go[2], done[2], status;
	long i;
	long long before, after;
	char c = 0, procs[PATH_MAX];
	pid_t pid;

	if (pipe(go) || pipe(done))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		struct rlimit rl = { opens + 64, opens + 64 };
		char me[32];

		snprintf(me, sizeof(me), "%d", getpid());
		if (setrlimit(RLIMIT_NOFILE, &rl) ||
		    ahfs_write_file(ahfs_fmt(procs, sizeof(procs),
					     "%s/cgroup.procs", cg), me))
			_exit(2);
		/* Joined: the fd table is grown before the parent's count. */
		if (dup2(0, opens + 32) < 0)
			_exit(3);
		if (write(done[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(4);
		for (i = 0; i < opens; i++) {
			int fd = open(path, O_RDONLY);

			if (fd < 0)
				_exit(5);
			if (read_one && pread(fd, &c, 1, 0) != 1)
				_exit(7);
		}
		if (write(done[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(6);
		_exit(0);
	}
	before = after = -1;
	if (read(done[0], &c, 1) == 1) {
		before = memcg_slab(cg);
		if (write(go[1], &c, 1) == 1 && read(done[0], &c, 1) == 1)
			after = memcg_slab(cg);
		if (write(go[1], &c, 1) != 1)
			after = -1;
	}
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) || before < 0 || after < 0)
		return -1;
	return after - before;
}

/*
 * An open file through aheadfs is charged to its opener's memory cgroup,
 * as the kernel's own struct file is: opening a file through aheadfs
 * costs the cgroup our struct file and the lower's, each file held open
 * (the same opens on the lower directly cost it one struct file each),
 * and nothing of aheadfs's own; a read through the window then makes the
 * file's information (the aheadfs_file_info slab) and its prefetch
 * streams, charged to the reader's.
 */
TEST_F_TIMEOUT(data, open_files_charged_to_memcg, 180)
{
	char cgroot[PATH_MAX], cg[PATH_MAX];
	long long filp, info, direct, through, read;
	long n = charge_opens();

	filp = slab_charge("filp");
	info = slab_charge("aheadfs_file_info");
	ASSERT_LT(0, filp);
	ASSERT_LT(0, info);
	ASSERT_EQ(0, ahfs_make_file(self->m, 4096));
	ahfs_fmt(cgroot, sizeof(cgroot), "%s/cgroup", self->fs.base);
	ahfs_fmt(cg, sizeof(cg), "%s/opener", cgroot);
	ASSERT_EQ(0, mkdir(cgroot, 0755));
	ASSERT_EQ(0, ahfs_run("mount -t cgroup2 none '%s' && echo +memory >'%s/cgroup.subtree_control' && mkdir '%s'",
			      cgroot, cgroot, cg));
	direct = charged_for_opens(cg, self->l, n, false);
	through = charged_for_opens(cg, self->m, n, false);
	/* A sixteenth as many: each read makes streams of some KiB too. */
	read = charged_for_opens(cg, self->m, n / 16, true);
	ahfs_run("rmdir '%s'; umount '%s'", cg, cgroot);
	TH_LOG("%ld opens, slab charged per open: %lld bytes on the lower, %lld through aheadfs, %lld through aheadfs with a read (struct file %lld, aheadfs_file_info %lld)",
	       n, direct / n, through / n, read / (n / 16), filp, info);
	ASSERT_LE(0, direct);
	ASSERT_LE(0, through);
	ASSERT_LE(0, read);
	EXPECT_LE(n * filp * 8 / 10, direct);
	/* Our struct file, and no aheadfs_file_info. */
	EXPECT_LE(n * filp * 8 / 10, through - direct);
	EXPECT_GT(n * (filp + info / 2), through - direct);
	/* A read made it (and the streams), at the reader's charge. */
	EXPECT_LE(n / 16 * info, read - through / 16);
}

TEST_HARNESS_MAIN
