// SPDX-License-Identifier: GPL-2.0
/*
 * Lower I/O errors are part of the lower's rules.  The lower is a
 * filesystem on a device-mapper device of its own; a range of one file's
 * blocks is turned into dm-error, and each step is done twice, on the lower
 * directly (the reference) and through aheadfs, on two files laid out alike:
 * a buffered or O_DIRECT read over the bad blocks, the prefetch window's
 * chunk over them, a write-back error seen at fsync, and a chunked copy
 * from them.  Each call must give the lower's result: the same errno at
 * the same call, no error lost and none invented for bytes the lower read
 * fine (a read may return more good bytes than the lower's own, whose large
 * folios can fail whole: see check_reads()); every byte returned is right,
 * and once the device is healed every byte reads back right.  Run with prefetch=ahead and
 * prefetch=legacy, and transactions (txn_kb) smaller than the requests, so
 * the errors fall inside aheadfs's own chunks.
 */
#include "aheadfs_test.h"

#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#define FILE_SIZE	(8 << 20)
#define BAD_OFF		(3 << 20)	/* the bad blocks: file offsets */
#define BAD_LEN		(64 << 10)
#define MAX_CALLS	64

FIXTURE(fault) {
	struct ahfs fs;
	char loopdev[64];
	char dm[64];
	char dev[PATH_MAX];
	long long sectors;	/* the device's size */
	int lower_mounted;
	int kmsg;
};

FIXTURE_VARIANT(fault) {
	const char *opts;
};

FIXTURE_VARIANT_ADD(fault, ahead) {
	.opts = "prefetch=ahead,txn_kb=256",
};

FIXTURE_VARIANT_ADD(fault, legacy) {
	.opts = "prefetch=legacy,txn_kb=256",
};

/* stdout of @cmd's first line into @buf: 0 or -1. */
static int run_line(const char *cmd, char *buf, size_t len)
{
	FILE *f = popen(cmd, "r");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, len, f) != NULL;
	if (pclose(f) || !ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

FIXTURE_SETUP(fault)
{
	const char *fstype = strcmp(ahfs_fstype(), "xfs") ? "ext4" : "xfs";
	long long size = strcmp(fstype, "xfs") ? 64 << 20 : 320 << 20;
	char img[PATH_MAX], cmd[PATH_MAX + 64];

	self->kmsg = -1;
	ASSERT_EQ(0, ahfs_setup(&self->fs, "fault", NULL));
	ahfs_run("modprobe dm-mod 2>/dev/null");
	ASSERT_EQ(0, access("/dev/mapper/control", F_OK))
		TH_LOG("no device-mapper (dm-mod) to make the lower's errors");
	ASSERT_EQ(0, ahfs_run("dmsetup version >/dev/null 2>&1"))
		TH_LOG("no dmsetup to make the lower's errors");
	ahfs_fmt(img, sizeof(img), "%s/img", self->fs.base);
	ASSERT_EQ(0, ahfs_run("truncate -s %lld '%s'", size, img));
	ahfs_fmt(cmd, sizeof(cmd), "losetup -f --show '%s'", img);
	ASSERT_EQ(0, run_line(cmd, self->loopdev, sizeof(self->loopdev)));
	self->sectors = size >> 9;
	snprintf(self->dm, sizeof(self->dm), "fault-%d", getpid());
	ASSERT_EQ(0, ahfs_run("DM_DISABLE_UDEV=1 dmsetup create %s --table '0 %lld linear %s 0' 2>/dev/null",
			      self->dm, self->sectors, self->loopdev)) {
		self->dm[0] = 0;
	}
	ahfs_fmt(self->dev, sizeof(self->dev), "/dev/mapper/%s", self->dm);
	/* No lazy initialisation writing behind the test's back. */
	ASSERT_EQ(0, strcmp(fstype, "xfs") ?
		  ahfs_run("mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 %s", self->dev) :
		  ahfs_run("mkfs.xfs -q -f %s >/dev/null", self->dev));
	ASSERT_EQ(0, mount(self->dev, self->fs.lower, fstype, 0, NULL))
		TH_LOG("mount %s: %s", self->dev, strerror(errno));
	self->lower_mounted = 1;
	ASSERT_EQ(0, ahfs_mount_at(self->fs.lower, self->fs.mnt,
				   variant->opts));
	self->fs.mounted = 1;
	ASSERT_EQ(0, ahfs_find_sysfs(&self->fs));
	self->kmsg = ahfs_kmsg_open();
	ASSERT_LE(0, self->kmsg);
}

FIXTURE_TEARDOWN(fault)
{
	int err;

	/* Nothing of aheadfs may keep the lower busy once it is unmounted. */
	if (self->fs.mounted) {
		err = umount(self->fs.mnt) ? errno : 0;
		EXPECT_EQ(0, err) TH_LOG("umount aheadfs: %s", strerror(err));
	}
	self->fs.mounted = 0;
	if (self->lower_mounted) {
		err = umount(self->fs.lower) ? errno : 0;
		EXPECT_EQ(0, err) TH_LOG("umount the lower: %s", strerror(err));
	}
	if (self->dm[0])
		ahfs_run("DM_DISABLE_UDEV=1 dmsetup remove --retry %s >/dev/null 2>&1",
			 self->dm);
	if (self->loopdev[0])
		ahfs_run("losetup -d %s", self->loopdev);
	if (self->kmsg >= 0) {
		EXPECT_FALSE(ahfs_kmsg_grep(self->kmsg, "WARNING:"))
			TH_LOG("a kernel warning during the test (dmesg)");
		close(self->kmsg);
	}
	ahfs_teardown(&self->fs);
}

/* The device offset (bytes) of file offset @off of @fd, if [off, off + len) is one extent. */
static long long phys_of(int fd, off_t off, off_t len)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent fe[1];
	} m;

	memset(&m, 0, sizeof(m));
	m.fm.fm_start = off;
	m.fm.fm_length = len;
	m.fm.fm_flags = FIEMAP_FLAG_SYNC;
	m.fm.fm_extent_count = 1;
	if (ioctl(fd, FS_IOC_FIEMAP, &m.fm) || m.fm.fm_mapped_extents != 1)
		return -1;
	if (m.fe[0].fe_logical > (__u64)off ||
	    m.fe[0].fe_logical + m.fe[0].fe_length < (__u64)(off + len) ||
	    (m.fe[0].fe_flags & (FIEMAP_EXTENT_UNKNOWN |
				 FIEMAP_EXTENT_DELALLOC |
				 FIEMAP_EXTENT_ENCODED |
				 FIEMAP_EXTENT_NOT_ALIGNED |
				 FIEMAP_EXTENT_UNWRITTEN)))
		return -1;
	return m.fe[0].fe_physical + (off - m.fe[0].fe_logical);
}

/*
 * The device's table: linear, with dm-error over [bad[i], bad[i] + BAD_LEN)
 * for each of the @n device offsets in @bad (sorted, apart).  Suspending
 * flushes and freezes the lower, so nothing dirty crosses the switch.
 */
static int set_table(struct __test_metadata *_metadata, FIXTURE_DATA(fault) *self,
		     const long long *bad, int n)
{
	char table[1024];
	long long at = 0;
	size_t len = 0;
	int i;

	for (i = 0; i < n; i++) {
		long long s = bad[i] >> 9, e = (bad[i] + BAD_LEN) >> 9;

		if (s > at)
			len += snprintf(table + len, sizeof(table) - len,
					"%lld %lld linear %s %lld\\n", at, s - at,
					self->loopdev, at);
		len += snprintf(table + len, sizeof(table) - len,
				"%lld %lld error\\n", s, e - s);
		at = e;
	}
	if (at < self->sectors)
		len += snprintf(table + len, sizeof(table) - len,
				"%lld %lld linear %s %lld\\n", at,
				self->sectors - at, self->loopdev, at);
	if (len >= sizeof(table))
		return -1;
	if (ahfs_run("printf '%s' | DM_DISABLE_UDEV=1 dmsetup load %s 2>/dev/null && "
		     "DM_DISABLE_UDEV=1 dmsetup suspend %s 2>/dev/null && "
		     "DM_DISABLE_UDEV=1 dmsetup resume %s 2>/dev/null",
		     table, self->dm, self->dm, self->dm)) {
		TH_LOG("dmsetup could not load: %s", table);
		return -1;
	}
	return 0;
}

/*
 * Two files alike, "ref" and "ahead", FILE_SIZE bytes of the pattern,
 * written and synced on the lower: their device offsets at @off in
 * @bad[0..1].
 */
static int make_pair(struct __test_metadata *_metadata, FIXTURE_DATA(fault) *self,
		     off_t off, long long bad[2])
{
	static const char * const names[] = { "ref", "ahead" };
	char p[PATH_MAX];
	int i, fd;

	for (i = 0; i < 2; i++) {
		if (ahfs_make_file(ahfs_l(&self->fs, p, names[i]), FILE_SIZE))
			return -1;
		fd = open(p, O_RDONLY);
		if (fd < 0)
			return -1;
		bad[i] = phys_of(fd, off, BAD_LEN);
		close(fd);
		if (bad[i] < 0 || bad[i] % 4096) {
			TH_LOG("%s: %d KiB at %lld are not one extent",
			       p, BAD_LEN >> 10, (long long)off);
			return -1;
		}
	}
	if (bad[0] > bad[1]) {
		long long t = bad[0];

		bad[0] = bad[1];
		bad[1] = t;
		if (bad[1] - bad[0] < BAD_LEN)
			return -1;
	}
	sync();
	return 0;
}

/* Open "ref" on the lower and "ahead" through aheadfs. */
static void open_pair(FIXTURE_DATA(fault) *self, int flags, int fd[2])
{
	char p[PATH_MAX];

	fd[0] = open(ahfs_l(&self->fs, p, "ref"), flags);
	fd[1] = open(ahfs_m(&self->fs, p, "ahead"), flags);
}

/* What one call gave: its return value, errno, and whether the bytes were right. */
struct call {
	long long ret;
	int err;
	int data_ok;
	off_t off;		/* reads: the request */
	size_t len;
};

static void log_calls(struct __test_metadata *_metadata, const char *what,
		      const struct call *c, int n)
{
	int i;

	for (i = 0; i < n; i++)
		TH_LOG("%s call %d: %lld (%s)%s", what, i, c[i].ret,
		       c[i].ret < 0 ? strerror(c[i].err) : "ok",
		       c[i].data_ok ? "" : ", wrong bytes");
}

/* Both sides gave the same results, call for call. */
static void same_calls(struct __test_metadata *_metadata, const char *what,
		       const struct call ref[], const struct call got[], int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (ref[i].ret == got[i].ret && ref[i].data_ok == got[i].data_ok &&
		    (ref[i].ret >= 0 || ref[i].err == got[i].err))
			continue;
		TH_LOG("%s: call %d differs: lower %lld (%s), aheadfs %lld (%s)",
		       what, i, ref[i].ret,
		       ref[i].ret < 0 ? strerror(ref[i].err) : "ok",
		       got[i].ret, got[i].ret < 0 ? strerror(got[i].err) : "ok");
		log_calls(_metadata, "lower", ref, n);
		log_calls(_metadata, "aheadfs", got, n);
		EXPECT_TRUE(0);
		return;
	}
}

/*
 * Reads of @req bytes at @start, @start + @req, ... to FILE_SIZE, as a
 * sequential reader that passes over what fails; each returned byte checked
 * against the pattern.
 */
static int read_walk(int fd, off_t start, size_t req, struct call *c)
{
	unsigned char *buf;
	off_t off;
	int n = 0;

	if (posix_memalign((void **)&buf, 4096, req))
		return 0;
	for (off = start; off < FILE_SIZE && n < MAX_CALLS; off += req, n++) {
		ssize_t r = pread(fd, buf, req, off);

		c[n].ret = r;
		c[n].err = r < 0 ? errno : 0;
		c[n].data_ok = r <= 0 || !ahfs_check_pattern(buf, r, off);
		c[n].off = off;
		c[n].len = req;
	}
	free(buf);
	return n;
}

/*
 * The bytes a read at @off of @len can return before it meets the bad
 * blocks: 0 when it starts in them.
 */
static long long clean_prefix(off_t off, size_t len)
{
	long long end = off + (long long)len;

	if (end > FILE_SIZE)
		end = FILE_SIZE;
	if (off >= BAD_OFF + BAD_LEN || end <= BAD_OFF)
		return end - off;
	return off < BAD_OFF ? BAD_OFF - off : 0;
}

/*
 * Reads through aheadfs against the same reads of the lower: a read that
 * starts in the bad blocks fails with the lower's errno (EIO); any other
 * returns at least what the lower returned (no error invented where the
 * lower read fine) and never a byte of the bad blocks (no error lost), or
 * fails as the lower did.  The lower itself may fail more than the bad
 * blocks: it reads and fails whole folios, and XFS's are large; aheadfs
 * reads the same lower page cache, but its window shapes those folios.
 * Every byte returned is right.
 */
static void check_reads(struct __test_metadata *_metadata, const char *what,
			const struct call ref[], const struct call got[],
			int n)
{
	int i, ok = 1;

	for (i = 0; i < n && ok; i++) {
		long long p = clean_prefix(got[i].off, got[i].len);
		const struct call *l = &ref[i], *a = &got[i];

		if (!l->data_ok || !a->data_ok)
			ok = 0;
		else if (!p)
			ok = l->ret < 0 && a->ret < 0 && a->err == l->err;
		else if (a->ret >= 0)
			ok = l->ret <= p && a->ret >= l->ret && a->ret <= p;
		else
			ok = l->ret < 0 && a->err == l->err;
		if (!ok)
			TH_LOG("%s: read %d (%zu bytes at %lld, %lld before the bad blocks): lower %lld (%s), aheadfs %lld (%s)",
			       what, i, a->len, (long long)a->off, p, l->ret,
			       l->ret < 0 ? strerror(l->err) :
			       l->data_ok ? "ok" : "wrong bytes", a->ret,
			       a->ret < 0 ? strerror(a->err) :
			       a->data_ok ? "ok" : "wrong bytes");
	}
	EXPECT_TRUE(ok);
}

/* Some read of @c failed or came back short: it met the bad blocks. */
static int met_bad(const struct call c[], int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (c[i].ret < 0 ||
		    (c[i].ret < (long long)c[i].len &&
		     c[i].off + c[i].ret < FILE_SIZE))
			return 1;
	return 0;
}

static int drop_pair(int fd[2])
{
	return posix_fadvise(fd[0], 0, 0, POSIX_FADV_DONTNEED) ||
	       posix_fadvise(fd[1], 0, 0, POSIX_FADV_DONTNEED) ||
	       ahfs_drop_caches();
}

/* After healing, every byte of both files reads back right. */
static void heal_and_check(struct __test_metadata *_metadata,
			   FIXTURE_DATA(fault) *self, int fd[2])
{
	struct call c[MAX_CALLS];
	int i, n, side;

	ASSERT_EQ(0, set_table(_metadata, self, NULL, 0));
	for (side = 0; side < 2; side++) {
		n = read_walk(fd[side], 0, 1 << 20, c);
		for (i = 0; i < n; i++)
			EXPECT_TRUE(c[i].ret > 0 && c[i].data_ok)
				TH_LOG("%s, healed: call %d gave %lld (%s)",
				       side ? "aheadfs" : "lower", i, c[i].ret,
				       c[i].ret < 0 ? strerror(c[i].err) : "ok");
	}
}

/*
 * Buffered reads, of several sizes and starts, over the bad blocks: a short
 * count where a request runs into them, EIO where one starts in them, and
 * the bytes on either side read right (check_reads()).
 */
TEST_F_TIMEOUT(fault, buffered_read, 240)
{
	static const struct { off_t start; size_t req; } walks[] = {
		{ 0, 1 << 20 },
		{ 0, (8 << 20) + (256 << 10) },
		{ BAD_OFF - (4 << 10), 128 << 10 },
		{ BAD_OFF + (8 << 10), 4 << 10 },
	};
	struct call ref[MAX_CALLS], got[MAX_CALLS];
	long long bad[2];
	int fd[2], n, m;
	unsigned int i;

	ASSERT_EQ(0, make_pair(_metadata, self, BAD_OFF, bad));
	open_pair(self, O_RDONLY, fd);
	ASSERT_LE(0, fd[0]);
	ASSERT_LE(0, fd[1]);
	ASSERT_EQ(0, set_table(_metadata, self, bad, 2));
	for (i = 0; i < sizeof(walks) / sizeof(walks[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "%zu-byte reads from %lld",
			 walks[i].req, (long long)walks[i].start);
		ASSERT_EQ(0, drop_pair(fd));
		n = read_walk(fd[0], walks[i].start, walks[i].req, ref);
		m = read_walk(fd[1], walks[i].start, walks[i].req, got);
		ASSERT_EQ(n, m) {
			log_calls(_metadata, "lower", ref, n);
			log_calls(_metadata, "aheadfs", got, m);
		}
		check_reads(_metadata, what, ref, got, n);
		/* The lower itself saw the error: the walk is not vacuous. */
		EXPECT_TRUE(met_bad(ref, n))
			TH_LOG("%s: no read of the lower met the bad blocks", what);
	}
	heal_and_check(_metadata, self, fd);
	close(fd[0]);
	close(fd[1]);
}

/* O_DIRECT reads over the bad blocks: the lower's answer, call for call. */
TEST_F_TIMEOUT(fault, direct_read, 240)
{
	static const size_t reqs[] = { 64 << 10, 1 << 20, 3 << 20 };
	struct call ref[MAX_CALLS], got[MAX_CALLS];
	long long bad[2];
	int fd[2], n, m;
	unsigned int i;

	ASSERT_EQ(0, make_pair(_metadata, self, BAD_OFF, bad));
	open_pair(self, O_RDONLY | O_DIRECT, fd);
	ASSERT_LE(0, fd[0]);
	ASSERT_LE(0, fd[1]);
	ASSERT_EQ(0, set_table(_metadata, self, bad, 2));
	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "%zu-byte O_DIRECT reads", reqs[i]);
		n = read_walk(fd[0], 0, reqs[i], ref);
		m = read_walk(fd[1], 0, reqs[i], got);
		ASSERT_EQ(n, m);
		check_reads(_metadata, what, ref, got, n);
		EXPECT_TRUE(met_bad(ref, n))
			TH_LOG("%s: no read of the lower met the bad blocks", what);
	}
	heal_and_check(_metadata, self, fd);
	close(fd[0]);
	close(fd[1]);
}

/*
 * The prefetch window's chunks cover the bad blocks before the reader gets
 * there: a chunk's error is the lower readahead's, not the reader's.  The
 * reader gets what a reader of the lower gets (check_reads()), and the
 * window did prefetch (the test is not vacuous).
 */
TEST_F_TIMEOUT(fault, prefetch_chunk_error, 240)
{
	struct call ref[MAX_CALLS], got[MAX_CALLS];
	long long bad[2], before;
	int fd[2], n, m;

	ASSERT_EQ(0, make_pair(_metadata, self, BAD_OFF, bad));
	open_pair(self, O_RDONLY, fd);
	ASSERT_LE(0, fd[0]);
	ASSERT_LE(0, fd[1]);
	ASSERT_EQ(0, set_table(_metadata, self, bad, 2));
	ASSERT_EQ(0, drop_pair(fd));
	before = ahfs_stat(&self->fs, "prefetch_bytes");
	ASSERT_LE(0, before) TH_LOG("no prefetch_bytes in stats");
	n = read_walk(fd[0], 0, 512 << 10, ref);
	m = read_walk(fd[1], 0, 512 << 10, got);
	ASSERT_EQ(n, m);
	check_reads(_metadata, "512 KiB sequential reads", ref, got, n);
	EXPECT_TRUE(met_bad(ref, n))
		TH_LOG("no read of the lower met the bad blocks");
	EXPECT_LT(before, ahfs_stat(&self->fs, "prefetch_bytes"))
		TH_LOG("the window prefetched nothing");
	heal_and_check(_metadata, self, fd);
	close(fd[0]);
	close(fd[1]);
}

/*
 * A write-back error: buffered writes over the bad blocks succeed, and the
 * error comes at fsync, once to each file description open before it (an
 * fd opened before the write, another opened after the write and before
 * write-back), not again, and not to one opened after it: errseq, as on the
 * lower.
 */
TEST_F_TIMEOUT(fault, writeback_error_at_fsync, 240)
{
	struct call ref[8], got[8];
	unsigned char *buf;
	long long bad[2];
	int side, n = 0;

	ASSERT_EQ(0, make_pair(_metadata, self, BAD_OFF, bad));
	buf = malloc(1 << 20);
	ASSERT_NE(NULL, buf);
	memset(buf, 0x5a, 1 << 20);
	ASSERT_EQ(0, set_table(_metadata, self, bad, 2));
	for (side = 0; side < 2; side++) {
		struct call *c = side ? got : ref;
		char p[PATH_MAX];
		int a, b, late;

		if (side)
			ahfs_m(&self->fs, p, "ahead");
		else
			ahfs_l(&self->fs, p, "ref");
		a = open(p, O_RDWR);
		ASSERT_LE(0, a);
		n = 0;
		c[n].ret = pwrite(a, buf, 1 << 20, BAD_OFF - (512 << 10));
		c[n].err = errno;
		c[n++].data_ok = 1;
		b = open(p, O_RDWR);
		ASSERT_LE(0, b);
		c[n].ret = fsync(a);
		c[n].err = errno;
		c[n++].data_ok = 1;
		c[n].ret = fsync(a);
		c[n].err = errno;
		c[n++].data_ok = 1;
		c[n].ret = fdatasync(b);
		c[n].err = errno;
		c[n++].data_ok = 1;
		late = open(p, O_RDWR);
		ASSERT_LE(0, late);
		c[n].ret = fsync(late);
		c[n].err = errno;
		c[n++].data_ok = 1;
		/* A write elsewhere and its fsync: no old error again. */
		c[n].ret = pwrite(a, buf, 4096, 0);
		c[n].err = errno;
		c[n++].data_ok = 1;
		c[n].ret = fsync(a);
		c[n].err = errno;
		c[n++].data_ok = 1;
		close(late);
		close(b);
		close(a);
	}
	same_calls(_metadata, "write, fsync, fsync, fdatasync (2nd fd), fsync (fd opened after), write elsewhere, fsync",
		   ref, got, n);
	EXPECT_EQ(-1, ref[1].ret) TH_LOG("the lower reported no write-back error");
	EXPECT_EQ(EIO, ref[1].err);
	free(buf);
}

/*
 * copy_file_range from a file with bad blocks: aheadfs copies in chunks of
 * txn_kb, the lower (ext4) through its page cache; each call gives what the
 * lower gives (xfs clones, and meets no error on either side), and the
 * bytes copied are right.
 */
TEST_F_TIMEOUT(fault, copy_error, 240)
{
	struct call ref[MAX_CALLS], got[MAX_CALLS];
	long long bad[2];
	int side, n = 0, m = 0;

	ASSERT_EQ(0, make_pair(_metadata, self, BAD_OFF, bad));
	ASSERT_EQ(0, set_table(_metadata, self, bad, 2));
	ASSERT_EQ(0, ahfs_drop_caches());
	for (side = 0; side < 2; side++) {
		struct call *c = side ? got : ref;
		char p[PATH_MAX], q[PATH_MAX];
		loff_t in = 0, out = 0;
		unsigned char *buf;
		int s, d, k = 0;

		if (side) {
			ahfs_m(&self->fs, p, "ahead");
			ahfs_m(&self->fs, q, "ahead.copy");
		} else {
			ahfs_l(&self->fs, p, "ref");
			ahfs_l(&self->fs, q, "ref.copy");
		}
		s = open(p, O_RDONLY);
		d = open(q, O_RDWR | O_CREAT | O_TRUNC, 0644);
		ASSERT_LE(0, s);
		ASSERT_LE(0, d);
		buf = malloc(FILE_SIZE);
		ASSERT_NE(NULL, buf);
		while (in < FILE_SIZE && k < MAX_CALLS) {
			ssize_t r = syscall(__NR_copy_file_range, s, &in, d,
					    &out, FILE_SIZE - in, 0);

			c[k].ret = r;
			c[k].err = r < 0 ? errno : 0;
			c[k].data_ok = 1;
			k++;
			if (r == 0)
				break;
			if (r < 0) {
				/* Past the bad blocks, as a careful copier would. */
				in = out = in < BAD_OFF + BAD_LEN ?
					   BAD_OFF + BAD_LEN : in + 4096;
			}
		}
		/* What was copied is the source's bytes. */
		EXPECT_EQ(BAD_OFF, pread(d, buf, BAD_OFF, 0));
		EXPECT_EQ(0, ahfs_check_pattern(buf, BAD_OFF, 0))
			TH_LOG("%s: the bytes copied before the bad blocks differ",
			       side ? "aheadfs" : "lower");
		free(buf);
		close(d);
		close(s);
		if (side)
			m = k;
		else
			n = k;
	}
	ASSERT_EQ(n, m) {
		log_calls(_metadata, "lower", ref, n);
		log_calls(_metadata, "aheadfs", got, m);
	}
	same_calls(_metadata, "copy_file_range", ref, got, n);
	/* ext4 copies through its page cache, and so meets the bad blocks. */
	if (strcmp(ahfs_fstype(), "xfs")) {
		for (m = 0; m < n && ref[m].ret >= 0; m++)
			;
		EXPECT_LT(m, n) TH_LOG("no copy failed on the lower");
	}
}

TEST_HARNESS_MAIN
