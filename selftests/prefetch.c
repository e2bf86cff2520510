// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs read scheduler and prefetch window, proved with the mount's
 * counters (never with timings): cold sequential reads find every byte
 * present after the first request of each stream, legacy mode shows the
 * uncached tail, concurrent streams stay ahead, random reads waste little,
 * and txn_kb is the one source of every I/O size.
 *
 * The time limits are generous: a TCG guest on a shared host can be ten
 * times slower than usual; they bound a hang, they measure nothing.
 *
 * guest-run: xfs-leaves-out=slow (the slow fixture makes its own ext4 on
 * dm-delay whatever the lower under test: on xfs it was a second ext4 run;
 * the prefetch fixture, which reads through the lower's page cache, runs
 * on both)
 */
#include "aheadfs_test.h"

#include <liburing.h>
#include <signal.h>
#include <sys/mman.h>

#define KIB	1024L
#define MIB	(1024L * KIB)

FIXTURE(prefetch) {
	struct ahfs fs;
	unsigned char *buf;
};

FIXTURE_SETUP(prefetch)
{
	ASSERT_EQ(0, ahfs_setup(&self->fs, "prefetch", "prefetch=ahead"));
	self->buf = malloc(32 * MIB);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(prefetch)
{
	free(self->buf);
	ahfs_teardown(&self->fs);
}

/* Counters, read in one go so that deltas are consistent. */
struct snap {
	long long reqs, txns, absent_reqs, tails, absent_bytes, present_bytes;
	long long chunks, pf_bytes, hit, wasted, peak;
	long long waits, inflight, demand, demand_bytes, wait_ns;
};

static void snap(struct ahfs *fs, struct snap *s)
{
	s->reqs = ahfs_stat(fs, "read_reqs");
	s->txns = ahfs_stat(fs, "read_txns");
	s->absent_reqs = ahfs_stat(fs, "absent_reqs");
	s->tails = ahfs_stat(fs, "uncached_tails");
	s->absent_bytes = ahfs_stat(fs, "read_absent_bytes");
	s->present_bytes = ahfs_stat(fs, "read_present_bytes");
	s->chunks = ahfs_stat(fs, "prefetch_chunks");
	s->pf_bytes = ahfs_stat(fs, "prefetch_bytes");
	s->hit = ahfs_stat(fs, "prefetch_hit_bytes");
	s->wasted = ahfs_stat(fs, "prefetch_wasted_bytes");
	s->peak = ahfs_stat(fs, "window_peak");
	s->waits = ahfs_stat(fs, "wait_reqs");
	s->inflight = ahfs_stat(fs, "read_inflight_bytes");
	s->demand = ahfs_stat(fs, "prefetch_demand_chunks");
	s->demand_bytes = ahfs_stat(fs, "prefetch_demand_bytes");
	s->wait_ns = ahfs_stat(fs, "read_wait_ns");
}

#define DELTA(a, b, f)	((b).f - (a).f)

/* A lower file of @len bytes holding the test pattern. */
static int make_cold(struct ahfs *fs, const char *name, off_t len)
{
	char path[PATH_MAX];

	return ahfs_make_file(ahfs_l(fs, path, name), len);
}

/* Write the lower file back and drop it from the page cache: reads go cold. */
static int drop_cache(struct ahfs *fs, const char *name)
{
	char path[PATH_MAX];
	int fd = open(ahfs_l(fs, path, name), O_RDONLY);
	int err;

	if (fd < 0)
		return -errno;
	err = fsync(fd) || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return err ? -EIO : 0;
}

/*
 * Read @fd from @off to @end (or EOF) in requests of @req, checking the data;
 * returns the number of requests that returned data, -1 on error.
 */
static long read_seq(int fd, unsigned char *buf, off_t off, off_t end,
		     size_t req)
{
	long n = 0;
	ssize_t r;

	for (;;) {
		size_t len = req;

		if (end && off + (off_t)len > end)
			len = end - off;
		if (!len)
			break;
		r = pread(fd, buf, len, off);
		if (r < 0)
			return -1;
		if (!r)
			break;
		if (ahfs_check_pattern(buf, r < 4096 ? r : 4096, off))
			return -1;
		off += r;
		n++;
	}
	return n;
}

static const size_t req_sizes[] = {
	4 * KIB, 128 * KIB, 1 * MIB, 8 * MIB, 8 * MIB + 256 * KIB,
	16 * MIB, 32 * MIB,
};

/*
 * Every request size of issue 3, cold, sequential: the first request finds
 * absent bytes (the file really was cold), none after it does.
 */
TEST_F_TIMEOUT(prefetch, ahead_sequential_all_sizes, 300)
{
	char path[PATH_MAX];
	unsigned int i;

	ASSERT_EQ(0, make_cold(&self->fs, "f", 96 * MIB));
	for (i = 0; i < sizeof(req_sizes) / sizeof(req_sizes[0]); i++) {
		size_t req = req_sizes[i];
		struct snap a, b, c;
		long n;
		int fd;

		ASSERT_EQ(0, drop_cache(&self->fs, "f"));
		fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
		ASSERT_LE(0, fd);
		snap(&self->fs, &a);
		ASSERT_EQ((ssize_t)req, pread(fd, self->buf, req, 0));
		snap(&self->fs, &b);
		n = read_seq(fd, self->buf, req, 0, req);
		snap(&self->fs, &c);
		close(fd);
		ASSERT_LT(0, n);
		TH_LOG("req %zu: first absent %lld B, then %ld reqs, absent_reqs %lld, chunks %lld, peak window %lld",
		       req, DELTA(a, b, absent_bytes), n,
		       DELTA(b, c, absent_reqs), DELTA(a, c, chunks), c.peak);
		EXPECT_EQ(1, DELTA(a, b, absent_reqs));
		EXPECT_EQ(0, DELTA(b, c, absent_reqs));
		EXPECT_EQ(0, DELTA(b, c, absent_bytes));
		EXPECT_EQ(0, DELTA(a, c, tails));
		EXPECT_LT(0, DELTA(a, c, chunks));
	}
}

/*
 * The story, side by side: 8 MiB + 256 KiB requests with txn 8 MiB.  Legacy
 * prefetches one txn per request and leaves a 256 KiB uncached tail in at
 * least 90% of the requests; ahead leaves none after the first request.
 */
TEST_F_TIMEOUT(prefetch, legacy_tails_ahead_none, 300)
{
	const size_t req = 8 * MIB + 256 * KIB;
	char path[PATH_MAX];
	struct snap a, b, c, d;
	long nl, na;
	int fd;

	ASSERT_EQ(0, make_cold(&self->fs, "f", 12 * req));

	ASSERT_EQ(0, ahfs_set(&self->fs, "prefetch", "legacy"));
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	snap(&self->fs, &a);
	nl = read_seq(fd, self->buf, 0, 0, req);
	snap(&self->fs, &b);
	close(fd);

	ASSERT_EQ(0, ahfs_set(&self->fs, "prefetch", "ahead"));
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	snap(&self->fs, &c);
	na = read_seq(fd, self->buf, 0, 0, req);
	snap(&self->fs, &d);
	close(fd);

	TH_LOG("legacy: %ld requests, %lld uncached tails, %lld absent bytes; ahead: %ld requests, %lld absent requests, %lld tails",
	       nl, DELTA(a, b, tails), DELTA(a, b, absent_bytes), na,
	       DELTA(c, d, absent_reqs), DELTA(c, d, tails));
	ASSERT_EQ(12, nl);
	ASSERT_EQ(12, na);
	EXPECT_GE(DELTA(a, b, tails) * 10, nl * 9);
	/* Each tail is the 256 KiB beyond the one chunk. */
	EXPECT_EQ(DELTA(a, b, tails) * 256 * KIB, DELTA(a, b, absent_bytes));
	EXPECT_EQ(1, DELTA(c, d, absent_reqs));
	EXPECT_EQ(0, DELTA(c, d, tails));
}

struct reader {
	int fd;
	off_t off, end;
	size_t req;
	unsigned char *buf;
};

/* Run @n readers in child processes at once; 0 when all read correctly. */
static int run_readers(struct reader *r, int n)
{
	pid_t pid[16];
	int i, st, bad = 0;

	for (i = 0; i < n; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			return -1;
		if (!pid[i])
			_exit(read_seq(r[i].fd, r[i].buf, r[i].off, r[i].end,
				       r[i].req) > 0 ? 0 : 1);
	}
	for (i = 0; i < n; i++)
		if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			bad++;
	return bad;
}

/* 8 readers on 8 cold files at once: only each stream's start is absent. */
TEST_F_TIMEOUT(prefetch, eight_readers_eight_files, 300)
{
	struct reader r[8];
	char name[16], path[PATH_MAX];
	struct snap a, b;
	int i;

	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ASSERT_EQ(0, make_cold(&self->fs, name, 8 * MIB));
		ASSERT_EQ(0, drop_cache(&self->fs, name));
		r[i] = (struct reader){
			.fd = open(ahfs_m(&self->fs, path, name), O_RDONLY),
			.req = 256 * KIB, .buf = self->buf + i * (1 * MIB),
		};
		ASSERT_LE(0, r[i].fd);
	}
	snap(&self->fs, &a);
	ASSERT_EQ(0, run_readers(r, 8));
	snap(&self->fs, &b);
	for (i = 0; i < 8; i++)
		close(r[i].fd);
	TH_LOG("%lld requests, %lld absent", DELTA(a, b, reqs),
	       DELTA(a, b, absent_reqs));
	EXPECT_EQ(8, DELTA(a, b, absent_reqs));
	EXPECT_LE(8 * 32, DELTA(a, b, reqs));
}

/*
 * 4 readers on disjoint regions of one open file (one struct file, as nfsd
 * threads share): one stream each; nothing absent after each stream's start.
 */
TEST_F_TIMEOUT(prefetch, four_readers_one_file, 300)
{
	const off_t region = 8 * MIB;
	char path[PATH_MAX];
	struct reader r[4];
	struct snap a, b;
	int fd, i;

	ASSERT_EQ(0, make_cold(&self->fs, "f", 4 * region));
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	/* A window of one region at most: the streams do not feed each other. */
	ASSERT_EQ(0, ahfs_set(&self->fs, "window_kb", "4096"));
	for (i = 0; i < 4; i++)
		r[i] = (struct reader){ .fd = fd, .off = i * region,
			.end = (i + 1) * region, .req = 128 * KIB,
			.buf = self->buf + i * (1 * MIB) };
	snap(&self->fs, &a);
	ASSERT_EQ(0, run_readers(r, 4));
	snap(&self->fs, &b);
	close(fd);
	TH_LOG("%lld requests, %lld absent, %lld absent bytes",
	       DELTA(a, b, reqs), DELTA(a, b, absent_reqs),
	       DELTA(a, b, absent_bytes));
	EXPECT_LE(1, DELTA(a, b, absent_reqs));
	EXPECT_GE(4, DELTA(a, b, absent_reqs));
	EXPECT_GE(4 * 128 * KIB, DELTA(a, b, absent_bytes));
	EXPECT_EQ(4 * region / (128 * KIB), DELTA(a, b, reqs));
}

/* Random 4 KiB reads over a large file: wasted prefetch <= 5% of read. */
TEST_F_TIMEOUT(prefetch, random_reads_waste_little, 300)
{
	const off_t size = 64 * MIB;
	unsigned long long seed = 7;
	char path[PATH_MAX];
	long long read = 0;
	struct snap a, b;
	int fd, i;

	ASSERT_EQ(0, make_cold(&self->fs, "f", size));
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	snap(&self->fs, &a);
	for (i = 0; i < 3000; i++) {
		off_t off;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		off = (off_t)((seed >> 20) % (size / 4096)) * 4096;
		ASSERT_EQ(4096, pread(fd, self->buf, 4096, off));
		ASSERT_EQ(0, ahfs_check_pattern(self->buf, 4096, off));
		read += 4096;
	}
	close(fd);	/* unread prefetch is written off at close */
	snap(&self->fs, &b);
	TH_LOG("read %lld, prefetched %lld, wasted %lld, absent requests %lld",
	       read, DELTA(a, b, pf_bytes), DELTA(a, b, wasted),
	       DELTA(a, b, absent_reqs));
	EXPECT_LE(DELTA(a, b, wasted) * 20, read);
	/* The reads really were cold. */
	EXPECT_LE(2500, DELTA(a, b, absent_reqs));
}

/*
 * One source of truth: txn_kb changed at runtime; read transactions and
 * prefetch chunks follow it at once.
 */
TEST_F_TIMEOUT(prefetch, txn_kb_sizes_transactions_and_chunks, 300)
{
	static const char *const txn_kb[] = { "1024", "2048", "512" };
	char path[PATH_MAX];
	struct snap a, b;
	unsigned int i;
	int fd;

	ASSERT_EQ(0, make_cold(&self->fs, "f", 32 * MIB));
	for (i = 0; i < 3; i++) {
		long txn = atol(txn_kb[i]) * KIB;
		long n;

		ASSERT_EQ(0, ahfs_set(&self->fs, "txn_kb", txn_kb[i]));
		ASSERT_EQ(0, drop_cache(&self->fs, "f"));
		fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
		ASSERT_LE(0, fd);
		snap(&self->fs, &a);
		n = read_seq(fd, self->buf, 0, 0, 4 * MIB);
		snap(&self->fs, &b);
		close(fd);
		TH_LOG("txn %ld: %ld requests, %lld txns, %lld chunks of %lld bytes",
		       txn, n, DELTA(a, b, txns), DELTA(a, b, chunks),
		       DELTA(a, b, pf_bytes));
		ASSERT_EQ(8, n);
		/* 8 data requests of 4 MiB and the one at EOF. */
		EXPECT_EQ(8 * (4 * MIB / txn) + 1, DELTA(a, b, txns));
		EXPECT_LT(0, DELTA(a, b, chunks));
		/* Every chunk at most txn: bytes <= chunks * txn ... */
		EXPECT_LE(DELTA(a, b, pf_bytes), DELTA(a, b, chunks) * txn);
		/* ... and all but the last chunk of each request's issue are txn. */
		EXPECT_LE(DELTA(a, b, chunks), DELTA(a, b, pf_bytes) / txn + 9);
	}

	/* Legacy: one chunk per request, of exactly min(request, txn). */
	ASSERT_EQ(0, ahfs_set(&self->fs, "prefetch", "legacy"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "txn_kb", "2048"));
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	snap(&self->fs, &a);
	ASSERT_EQ(8, read_seq(fd, self->buf, 0, 0, 4 * MIB));
	snap(&self->fs, &b);
	close(fd);
	EXPECT_EQ(8, DELTA(a, b, chunks));
	EXPECT_EQ(8 * 2 * MIB, DELTA(a, b, pf_bytes));
	EXPECT_EQ(8, DELTA(a, b, tails));
	EXPECT_EQ(8 * 2 * MIB, DELTA(a, b, absent_bytes));
}

/* kernel and off modes issue nothing of ours; switching is immediate. */
TEST_F_TIMEOUT(prefetch, kernel_and_off_modes_issue_nothing, 300)
{
	static const char *const modes[] = { "kernel", "off" };
	char path[PATH_MAX], mode[32];
	unsigned int i;

	ASSERT_EQ(0, make_cold(&self->fs, "f", 16 * MIB));
	for (i = 0; i < 2; i++) {
		struct snap a, b;
		int fd;

		ASSERT_EQ(0, ahfs_set(&self->fs, "prefetch", modes[i]));
		ASSERT_LT(0, ahfs_get(&self->fs, "prefetch", mode, sizeof(mode)));
		ASSERT_STREQ(modes[i], mode);
		ASSERT_EQ(0, drop_cache(&self->fs, "f"));
		fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
		ASSERT_LE(0, fd);
		snap(&self->fs, &a);
		ASSERT_EQ(16, read_seq(fd, self->buf, 0, 0, 1 * MIB));
		snap(&self->fs, &b);
		close(fd);
		TH_LOG("%s: %lld absent requests of %lld", modes[i],
		       DELTA(a, b, absent_reqs), DELTA(a, b, reqs));
		EXPECT_EQ(0, DELTA(a, b, chunks));
		EXPECT_EQ(0, DELTA(a, b, pf_bytes));
		/* off: nothing reads ahead, so every request finds its bytes absent. */
		if (i == 1)
			EXPECT_EQ(16, DELTA(a, b, absent_reqs));
	}
	EXPECT_NE(0, ahfs_set(&self->fs, "prefetch", "sideways"));
}

/* Hits and waste: a full read hits everything prefetched, wastes nothing. */
TEST_F_TIMEOUT(prefetch, hits_and_waste_accounting, 300)
{
	char path[PATH_MAX];
	struct snap a, b;
	int fd;

	ASSERT_EQ(0, make_cold(&self->fs, "f", 16 * MIB + 123));
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	snap(&self->fs, &a);
	ASSERT_EQ(17, read_seq(fd, self->buf, 0, 0, 1 * MIB));
	close(fd);
	snap(&self->fs, &b);
	EXPECT_EQ(16 * MIB + 123 - 1 * MIB, DELTA(a, b, pf_bytes));
	EXPECT_EQ(DELTA(a, b, pf_bytes), DELTA(a, b, hit));
	EXPECT_EQ(0, DELTA(a, b, wasted));

	/* Read half, close: the rest of the window is wasted. */
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	snap(&self->fs, &a);
	ASSERT_EQ(16, read_seq(fd, self->buf, 0, 16 * MIB, 1 * MIB));
	close(fd);
	snap(&self->fs, &b);
	TH_LOG("prefetched %lld, hit %lld, wasted %lld", DELTA(a, b, pf_bytes),
	       DELTA(a, b, hit), DELTA(a, b, wasted));
	EXPECT_LT(0, DELTA(a, b, wasted));
	EXPECT_EQ(DELTA(a, b, pf_bytes), DELTA(a, b, hit) + DELTA(a, b, wasted));
	EXPECT_EQ(0, ahfs_stat(&self->fs, "window_cur"));
}

/* Whether [@off, @off + @len) of @path is all up to date in the page cache. */
static int range_cached(const char *path, off_t off, size_t len)
{
	size_t pages = len / 4096, i;
	unsigned char *vec = malloc(pages);
	int fd = open(path, O_RDONLY), all = 0;
	void *m = MAP_FAILED;

	if (fd >= 0 && vec)
		m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);
	if (m != MAP_FAILED && !mincore(m, len, vec))
		for (all = 1, i = 0; i < pages; i++)
			all &= vec[i] & 1;
	if (m != MAP_FAILED)
		munmap(m, len);
	free(vec);
	if (fd >= 0)
		close(fd);
	return all;
}

/*
 * io_uring reads stay async: each call goes to the lower in one piece (one
 * transaction, whatever txn_kb), after the prefetcher has seen it, so the
 * window is ahead of them as of synchronous reads.  The window, not the
 * reader, brings in each next call's bytes: the reader asks for them once
 * they are in (how far ahead in time is the benchmark's question, and a
 * kernel with its checkers on is slow enough for a reader to overtake the
 * worker).
 */
TEST_F_TIMEOUT(prefetch, io_uring_reads_one_piece_window_ahead, 300)
{
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	char path[PATH_MAX];
	char lower[PATH_MAX];
	struct snap a, b, c;
	int fd, i, n;

	ASSERT_EQ(0, make_cold(&self->fs, "f", 32 * MIB));
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "txn_kb", "1024"));
	ahfs_l(&self->fs, lower, "f");
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	snap(&self->fs, &a);
	for (i = 0; i < 8; i++) {
		io_uring_prep_read(io_uring_get_sqe(&ring), fd, self->buf,
				   4 * MIB, i * 4 * MIB);
		ASSERT_EQ(1, io_uring_submit(&ring));
		ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
		ASSERT_EQ(4 * MIB, cqe->res);
		io_uring_cqe_seen(&ring, cqe);
		ASSERT_EQ(0, ahfs_check_pattern(self->buf, 4 * MIB, i * 4 * MIB));
		if (!i)
			snap(&self->fs, &b);
		/* The next call's bytes, read in by the window alone. */
		for (n = 0; i < 7 && n < 60000 &&
		     !range_cached(lower, (i + 1) * 4 * MIB, 4 * MIB); n++)
			usleep(1000);
		ASSERT_GT(60000, n) TH_LOG("call %d's bytes not read in by the window", i + 1);
	}
	snap(&self->fs, &c);
	io_uring_queue_exit(&ring);
	close(fd);
	TH_LOG("%lld calls, %lld txns, %lld absent calls (%lld after the first read), %lld chunks",
	       DELTA(a, c, reqs), DELTA(a, c, txns), DELTA(a, c, absent_reqs),
	       DELTA(b, c, absent_reqs), DELTA(a, c, chunks));
	EXPECT_EQ(DELTA(a, c, reqs), DELTA(a, c, txns));
	EXPECT_LE(1, DELTA(a, b, absent_reqs));
	EXPECT_EQ(0, DELTA(b, c, absent_reqs));
	EXPECT_LT(0, DELTA(a, c, chunks));
	EXPECT_LE(DELTA(a, c, pf_bytes), DELTA(a, c, chunks) * MIB);
}

/* O_DIRECT bypasses the page cache: split, but neither prefetched nor metered. */
TEST_F_TIMEOUT(prefetch, direct_reads_not_prefetched, 300)
{
	char path[PATH_MAX];
	struct snap a, b;
	void *dbuf;
	int fd, i;

	ASSERT_EQ(0, make_cold(&self->fs, "f", 8 * MIB));
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	ASSERT_EQ(0, ahfs_set(&self->fs, "txn_kb", "512"));
	ASSERT_EQ(0, posix_memalign(&dbuf, 4096, 1 * MIB));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY | O_DIRECT);
	ASSERT_LE(0, fd);
	snap(&self->fs, &a);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(1 * MIB, pread(fd, dbuf, 1 * MIB, i * MIB));
		ASSERT_EQ(0, ahfs_check_pattern(dbuf, 1 * MIB, i * MIB));
	}
	snap(&self->fs, &b);
	close(fd);
	free(dbuf);
	EXPECT_EQ(16, DELTA(a, b, txns));
	EXPECT_EQ(0, DELTA(a, b, chunks));
	EXPECT_EQ(0, DELTA(a, b, present_bytes) + DELTA(a, b, absent_bytes));
}

#define TRACEFS	"/sys/kernel/tracing"

static int trace_write(const char *file, const char *val)
{
	char path[PATH_MAX];

	return ahfs_write_file(ahfs_fmt(path, sizeof(path), "%s/%s", TRACEFS,
					file), val);
}

/* Empty the trace buffer (an open with O_TRUNC does). */
static int trace_clear(void)
{
	int fd = open(TRACEFS "/trace", O_WRONLY | O_TRUNC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Sum of "@field=N" over the trace lines of @event; the count in *@n. */
static long long trace_sum(const char *event, const char *field, long *n)
{
	char line[1024], key[64];
	long long sum = 0;
	FILE *f = fopen(TRACEFS "/trace", "r");
	char *p;

	*n = 0;
	if (!f)
		return -1;
	snprintf(key, sizeof(key), " %s=", field);
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || !strstr(line, event))
			continue;
		(*n)++;
		p = strstr(line, key);
		if (p)
			sum += atoll(p + strlen(key));
	}
	fclose(f);
	return sum;
}

/*
 * The tracepoints agree with the counters: aheadfs_read once per request
 * with the absent bytes summed over its transactions, aheadfs_prefetch once
 * per chunk with its length.
 */
TEST_F_TIMEOUT(prefetch, tracepoints_match_counters, 300)
{
	char path[PATH_MAX], filter[64];
	long long absent, len, wait_ns;
	long nread, nchunk, nwait;
	struct snap a, b;
	int fd;

	if (access(TRACEFS "/events", F_OK))
		mount("nodev", TRACEFS, "tracefs", 0, NULL);
	ASSERT_EQ(0, access(TRACEFS "/events/aheadfs/aheadfs_read", F_OK));
	ASSERT_EQ(0, make_cold(&self->fs, "f", 16 * MIB + 4096));
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	/* The kernel's dev_t of the mount: major << 20 | minor. */
	snprintf(filter, sizeof(filter), "dev == %u\n",
		 major(self->fs.dev) << 20 | minor(self->fs.dev));
	ASSERT_EQ(0, trace_write("events/aheadfs/aheadfs_read/filter", filter));
	ASSERT_EQ(0, trace_write("events/aheadfs/aheadfs_prefetch/filter", filter));
	ASSERT_EQ(0, trace_clear());
	ASSERT_EQ(0, trace_write("events/aheadfs/aheadfs_read/enable", "1"));
	ASSERT_EQ(0, trace_write("events/aheadfs/aheadfs_prefetch/enable", "1"));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	snap(&self->fs, &a);
	ASSERT_EQ(17, read_seq(fd, self->buf, 0, 0, 1 * MIB));
	snap(&self->fs, &b);
	close(fd);
	trace_write("events/aheadfs/aheadfs_read/enable", "0");
	trace_write("events/aheadfs/aheadfs_prefetch/enable", "0");
	absent = trace_sum("aheadfs_read:", "absent", &nread);
	wait_ns = trace_sum("aheadfs_read:", "wait_ns", &nwait);
	len = trace_sum("aheadfs_prefetch:", "len", &nchunk);
	trace_write("events/aheadfs/aheadfs_read/filter", "0\n");
	trace_write("events/aheadfs/aheadfs_prefetch/filter", "0\n");
	trace_clear();
	TH_LOG("%ld read events (%lld absent bytes, waited %lld ns), %ld prefetch events (%lld bytes)",
	       nread, absent, wait_ns, nchunk, len);
	EXPECT_EQ(DELTA(a, b, reqs), nread);
	EXPECT_EQ(DELTA(a, b, absent_bytes), absent);
	EXPECT_EQ(1 * MIB, absent);
	/* The first request waited for its own bytes at least. */
	EXPECT_EQ(nread, nwait);
	EXPECT_EQ(DELTA(a, b, wait_ns), wait_ns);
	EXPECT_LT(0, wait_ns);
	EXPECT_EQ(DELTA(a, b, chunks), nchunk);
	EXPECT_EQ(DELTA(a, b, pf_bytes), len);
}

/* Bytes of @path in the page cache (mincore of a mapping: nothing faulted). */
static long long resident(const char *path)
{
	int fd = open(path, O_RDONLY);
	long long n = -1;
	struct stat st;
	unsigned char *vec;
	size_t pages, i;
	void *m;

	if (fd < 0 || fstat(fd, &st))
		goto out;
	pages = (st.st_size + 4095) / 4096;
	m = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	vec = malloc(pages);
	if (m != MAP_FAILED && vec && !mincore(m, st.st_size, vec))
		for (n = 0, i = 0; i < pages; i++)
			n += (vec[i] & 1) * 4096LL;
	free(vec);
	if (m != MAP_FAILED)
		munmap(m, st.st_size);
out:
	if (fd >= 0)
		close(fd);
	return n;
}

#define CG_LIMIT	(32 * MIB)

/*
 * Read @path whole, in 1 MiB requests, in a child of memory cgroup @cg:
 * 0, or -1 if the child failed.
 */
static int read_in_cgroup(const char *cg, const char *path, unsigned char *buf)
{
	char procs[PATH_MAX];
	int status, fd;
	pid_t pid;

	ahfs_fmt(procs, sizeof(procs), "%s/cgroup.procs", cg);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		char me[32];

		snprintf(me, sizeof(me), "%d", getpid());
		if (ahfs_write_file(procs, me))
			_exit(2);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			_exit(3);
		_exit(read_seq(fd, buf, 0, 0, MIB) == 128 ? 0 : 4);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) ? -1 : 0;
}

/*
 * A reader in a memory cgroup limited to 32 MiB reads a 128 MiB file: on the
 * lower directly, what stays cached is within its limit; through aheadfs
 * too, with the window on: the pages the window's worker adds are charged
 * to the reader's cgroup (they escaped it: 128 MiB stayed cached).
 */
TEST_F_TIMEOUT(prefetch, window_charged_to_reader_memcg, 300)
{
	char cgroot[PATH_MAX], cg[PATH_MAX], m[PATH_MAX], l[PATH_MAX];
	long long direct, stacked;
	struct snap a, b;

	ahfs_fmt(cgroot, sizeof(cgroot), "%s/cgroup", self->fs.base);
	ahfs_fmt(cg, sizeof(cg), "%s/reader", cgroot);
	ASSERT_EQ(0, mkdir(cgroot, 0755));
	ASSERT_EQ(0, ahfs_run("mount -t cgroup2 none '%s' && echo +memory >'%s/cgroup.subtree_control' && mkdir '%s' && echo %ld >'%s/memory.max'",
			      cgroot, cgroot, cg, CG_LIMIT, cg));
	ASSERT_EQ(0, make_cold(&self->fs, "f", 128 * MIB));
	ahfs_l(&self->fs, l, "f");
	ahfs_m(&self->fs, m, "f");

	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	ASSERT_EQ(0, read_in_cgroup(cg, l, self->buf));
	direct = resident(l);
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	snap(&self->fs, &a);
	ASSERT_EQ(0, read_in_cgroup(cg, m, self->buf));
	snap(&self->fs, &b);
	stacked = resident(l);
	TH_LOG("cached after a read in a %ld MiB cgroup: %lld MiB directly, %lld MiB through aheadfs (%lld chunks prefetched)",
	       CG_LIMIT >> 20, direct >> 20, stacked >> 20, DELTA(a, b, chunks));
	ahfs_run("rmdir '%s'; umount '%s'", cg, cgroot);
	EXPECT_GE(CG_LIMIT + 4 * MIB, direct);
	EXPECT_LT(0, DELTA(a, b, chunks));
	EXPECT_GE(CG_LIMIT + 4 * MIB, stacked);
}

/*
 * One open file read through again and again (a scan, a benchmark): each
 * pass from offset 0 is a new stream, and the one a pass leaves at EOF holds
 * none of the mount's room.  So the window gauge stays within the file
 * however many passes, and the last pass is prefetched as the second was.
 * Streams that kept their whole window (window_kb, 64 MiB) after EOF took
 * all the room (half of MemAvailable) within 16 passes, and later passes
 * were prefetched a page at a time; and while an old stream that ended
 * where a pass was about to read took that request, the pass's own stream
 * kept a little more of the room each pass (10 MiB after 24 passes).
 */
TEST_F(prefetch, repeated_passes_keep_the_gauge_within_the_file)
{
	const off_t size = 4 * MIB;
	const size_t req = 64 * KIB;
	char path[PATH_MAX];
	struct snap a, b, c, d;
	int fd, pass;

	ASSERT_EQ(0, make_cold(&self->fs, "f", size));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	for (pass = 0; pass < 24; pass++) {
		if (pass == 1)
			snap(&self->fs, &a);
		else if (pass == 2)
			snap(&self->fs, &b);
		else if (pass == 23)
			snap(&self->fs, &c);
		ASSERT_EQ(size / (off_t)req,
			  read_seq(fd, self->buf, 0, 0, req));
	}
	snap(&self->fs, &d);
	close(fd);
	TH_LOG("peak %lld; prefetched %lld B in the second pass, %lld B in the last",
	       d.peak, DELTA(a, b, pf_bytes), DELTA(c, d, pf_bytes));
	EXPECT_GE(size, d.peak);
	EXPECT_EQ(0, ahfs_stat(&self->fs, "window_cur"));
	EXPECT_LT(0, DELTA(a, b, pf_bytes));
	EXPECT_EQ(DELTA(a, b, pf_bytes), DELTA(c, d, pf_bytes));
	EXPECT_EQ(0, DELTA(a, d, absent_reqs));
}

/*
 * The first request of a stream: its own bytes are submitted at once, in
 * transactions of txn_kb (not in the lower's maximum-I/O-size pieces, one
 * latency after another, nor as one request of whatever size the reader
 * asked for), then what the next request will read; the second request
 * finds nothing that still has to be submitted.
 */
TEST_F_TIMEOUT(prefetch, first_request_demand_in_txns, 300)
{
	const size_t req = 8 * MIB + 256 * KIB, txn = 1 * MIB;
	char path[PATH_MAX];
	struct snap a, b, c;
	int fd;

	ASSERT_EQ(0, ahfs_set(&self->fs, "txn_kb", "1024"));
	ASSERT_EQ(0, make_cold(&self->fs, "f", 64 * MIB));
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	snap(&self->fs, &a);
	ASSERT_EQ((ssize_t)req, pread(fd, self->buf, req, 0));
	snap(&self->fs, &b);
	ASSERT_EQ((ssize_t)req, pread(fd, self->buf, req, req));
	snap(&self->fs, &c);
	EXPECT_EQ(0, ahfs_check_pattern(self->buf, req, req));
	close(fd);
	TH_LOG("first: %lld demand chunks (%lld B), %lld window chunks; second: %lld demand chunks, %lld absent B",
	       DELTA(a, b, demand), DELTA(a, b, demand_bytes),
	       DELTA(a, b, chunks), DELTA(b, c, demand),
	       DELTA(b, c, absent_bytes));
	/* 8 MiB + 256 KiB in 1 MiB transactions: 8 whole and the rest. */
	EXPECT_EQ((long long)((req + txn - 1) / txn), DELTA(a, b, demand));
	EXPECT_EQ((long long)req, DELTA(a, b, demand_bytes));
	EXPECT_EQ((long long)req, DELTA(a, b, absent_bytes));
	EXPECT_EQ(1, DELTA(a, b, waits));
	/* The next request's bytes went out with the first, in txn chunks. */
	EXPECT_LE(2, DELTA(a, b, chunks));
	EXPECT_LE((long long)req, DELTA(a, b, pf_bytes));
	EXPECT_EQ(0, DELTA(b, c, demand));
	EXPECT_EQ(0, DELTA(b, c, absent_bytes));
}

/*
 * A lower whose every read costs a fixed latency (dm-delay over a loop
 * device): what was submitted but has not completed when a request reads it
 * is "inflight", and the request counts as one that waited, so the counters
 * tell what the clock does.
 */
#define SLOW_MS		300
#define SLOW_IMG	(192 * MIB)

FIXTURE(slow) {
	struct ahfs fs;
	char loopdev[64];
	char dm[64];
	char lower_mnt;		/* the dm device is mounted on fs.lower */
	unsigned char *buf;
};

static int slow_prepare(struct ahfs *fs, char *loopdev, char *dm,
			char *lower_mnt, const char *file, off_t len)
{
	char img[PATH_MAX], cmd[PATH_MAX + 64], dev[PATH_MAX];
	FILE *f;
	int err;

	err = ahfs_setup(fs, "slow", NULL);
	if (err)
		return err;
	ahfs_run("modprobe dm-delay 2>/dev/null");
	ahfs_fmt(img, sizeof(img), "%s/img", fs->base);
	/* The file is written before the delay is there. */
	if (ahfs_run("truncate -s %ld '%s' && mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 '%s'",
		     (long)SLOW_IMG, img, img) ||
	    ahfs_run("mount -o loop '%s' '%s'", img, fs->lower))
		return -EIO;
	err = ahfs_make_file(ahfs_l(fs, dev, file), len);
	if (ahfs_run("umount '%s'", fs->lower) || err)
		return err ? err : -EIO;
	ahfs_fmt(cmd, sizeof(cmd), "losetup -f --show '%s'", img);
	f = popen(cmd, "r");
	if (!f)
		return -EIO;
	if (!fgets(loopdev, 64, f))
		loopdev[0] = 0;
	pclose(f);
	loopdev[strcspn(loopdev, "\n")] = 0;
	if (!loopdev[0])
		return -EIO;
	snprintf(dm, 64, "ahfs-slow-%d", getpid());
	/* Reads wait SLOW_MS; writes go straight through. */
	if (ahfs_run("DM_DISABLE_UDEV=1 dmsetup create %s --table '0 %ld delay %s 0 %d %s 0 0'",
		     dm, (long)(SLOW_IMG >> 9), loopdev, SLOW_MS, loopdev)) {
		dm[0] = 0;
		return -EIO;
	}
	if (ahfs_run("mount /dev/mapper/%s '%s'", dm, fs->lower))
		return -EIO;
	*lower_mnt = 1;
	err = ahfs_mount_at(fs->lower, fs->mnt, "prefetch=ahead");
	if (err)
		return err;
	fs->mounted = 1;
	return ahfs_find_sysfs(fs);
}

FIXTURE_SETUP(slow)
{
	self->buf = malloc(8 * MIB);
	ASSERT_NE(NULL, self->buf);
	ASSERT_EQ(0, slow_prepare(&self->fs, self->loopdev, self->dm,
				  &self->lower_mnt, "f", 16 * MIB));
}

FIXTURE_TEARDOWN(slow)
{
	if (self->fs.mounted && umount(self->fs.mnt))
		umount2(self->fs.mnt, MNT_DETACH);
	self->fs.mounted = 0;
	if (self->lower_mnt)
		ahfs_run("umount '%s'", self->fs.lower);
	if (self->dm[0])
		ahfs_run("DM_DISABLE_UDEV=1 dmsetup remove --retry %s", self->dm);
	if (self->loopdev[0])
		ahfs_run("losetup -d %s", self->loopdev);
	ahfs_teardown(&self->fs);
	free(self->buf);
}

/*
 * Give reads of the slow fixture's device @ms of delay from now on: a new
 * table, swapped in by the resume (which freezes and thaws the ext4 on it).
 * The resume's change event has udev open the device to probe it; the
 * settle waits for that, or the device is still open at teardown.
 */
static int slow_delay(const char *dm, const char *loopdev, int ms)
{
	return ahfs_run("DM_DISABLE_UDEV=1 dmsetup reload %s --table '0 %ld delay %s 0 %d %s 0 0' && DM_DISABLE_UDEV=1 dmsetup resume %s && { udevadm settle 2>/dev/null || true; }",
			dm, (long)(SLOW_IMG >> 9), loopdev, ms, loopdev, dm);
}

/*
 * Legacy submits each request's chunk just before reading it: every request
 * waits a full device latency.  Its bytes were never absent (the chunk
 * covers a 1 MiB request), which the old counters reported as "present";
 * they are inflight, and every request is counted as one that waited.
 */
TEST_F_TIMEOUT(slow, legacy_requests_wait, 300)
{
	char path[PATH_MAX];
	struct snap a, b;
	int fd;

	ASSERT_EQ(0, ahfs_set(&self->fs, "prefetch", "legacy"));
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	snap(&self->fs, &a);
	ASSERT_EQ(8, read_seq(fd, self->buf, 0, 8 * MIB, 1 * MIB));
	snap(&self->fs, &b);
	close(fd);
	TH_LOG("%lld requests: %lld waited (%lld ms), %lld inflight B, %lld present B, %lld absent B",
	       DELTA(a, b, reqs), DELTA(a, b, waits),
	       DELTA(a, b, wait_ns) / 1000000, DELTA(a, b, inflight),
	       DELTA(a, b, present_bytes), DELTA(a, b, absent_bytes));
	EXPECT_EQ(8, DELTA(a, b, reqs));
	EXPECT_EQ(0, DELTA(a, b, absent_reqs));
	EXPECT_EQ(8, DELTA(a, b, waits));
	/*
	 * Each waited for its chunk, submitted just before: the device's
	 * delay, less what the submission took (half of it, at most).
	 */
	EXPECT_LE(8LL * SLOW_MS / 2 * 1000000, DELTA(a, b, wait_ns));
	EXPECT_EQ(8 * MIB, DELTA(a, b, inflight));
	EXPECT_EQ(0, DELTA(a, b, present_bytes));
}

/*
 * Ahead on the same device: only the first request finds its bytes absent;
 * whatever later requests still wait for is inflight, never absent.
 */
TEST_F_TIMEOUT(slow, ahead_never_absent_after_first, 300)
{
	char path[PATH_MAX];
	struct snap a, b, c;
	int fd;

	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	snap(&self->fs, &a);
	ASSERT_EQ(1 * MIB, pread(fd, self->buf, 1 * MIB, 0));
	snap(&self->fs, &b);
	ASSERT_EQ(15, read_seq(fd, self->buf, 1 * MIB, 0, 1 * MIB));
	snap(&self->fs, &c);
	close(fd);
	TH_LOG("first: waited %lld ms, prefetched %lld B meanwhile; after it: %lld requests, %lld waited (%lld ms, %lld inflight B), %lld absent",
	       DELTA(a, b, wait_ns) / 1000000, DELTA(a, b, pf_bytes),
	       DELTA(b, c, reqs),
	       DELTA(b, c, waits), DELTA(b, c, wait_ns) / 1000000,
	       DELTA(b, c, inflight), DELTA(b, c, absent_reqs));
	EXPECT_EQ(1, DELTA(a, b, absent_reqs));
	EXPECT_EQ(1, DELTA(a, b, waits));
	EXPECT_LE(SLOW_MS / 2 * 1000000LL, DELTA(a, b, wait_ns));
	/*
	 * While it waited, the first request (at the file's start) extended
	 * the window a piece at a time, to eight requests beyond its own end
	 * and no further (AHEADFS_PF_FIRST_REQS, within the default txn_kb):
	 * [1, 9) MiB.  Without the extension only the next request's MiB is
	 * prefetched.
	 */
	EXPECT_EQ(8 * MIB, DELTA(a, b, pf_bytes));
	/*
	 * Waits after the first are the window's ramp only: it goes to the
	 * measured product at once, and the first request's wait extended it,
	 * so the requests after the first wait for about one latency in all,
	 * at most three; legacy makes all 15 wait a full latency
	 * each.  How many of them find a chunk still in flight that was
	 * submitted a moment before is no measure: it depends on how the
	 * worker's submissions interleave with a reader that copies 1 MiB in
	 * a millisecond or two (2 to 4 with ERMS, up to 8 without, for the
	 * same 320 ms or so in all).
	 */
	EXPECT_GE(3LL * SLOW_MS * 1000000, DELTA(b, c, wait_ns));
	EXPECT_GT(15, DELTA(b, c, waits));
	/* A request that waited for nothing spent no time waiting. */
	if (!DELTA(b, c, waits))
		EXPECT_EQ(0, DELTA(b, c, wait_ns));
	EXPECT_EQ(1, DELTA(a, b, demand));
	EXPECT_EQ(0, DELTA(b, c, absent_reqs));
	EXPECT_EQ(0, DELTA(b, c, demand));
	EXPECT_EQ(15 * MIB, DELTA(b, c, present_bytes) + DELTA(b, c, inflight));
}

/*
 * The window sized by measurement: the first request's own bytes time a
 * chunk from submission to completion (the device's delay at least), the
 * requests after it time the reader, and the stats and the aheadfs_window
 * tracepoint show both and the product they call for.
 */
TEST_F_TIMEOUT(slow, window_measured, 300)
{
	char path[PATH_MAX], filter[64];
	long long lat, rate, target, last, want, tlat;
	long nev;
	int fd;

	if (access(TRACEFS "/events", F_OK))
		mount("nodev", TRACEFS, "tracefs", 0, NULL);
	ASSERT_EQ(0, access(TRACEFS "/events/aheadfs/aheadfs_window", F_OK));
	snprintf(filter, sizeof(filter), "dev == %u\n",
		 major(self->fs.dev) << 20 | minor(self->fs.dev));
	ASSERT_EQ(0, trace_write("events/aheadfs/aheadfs_window/filter",
				 filter));
	ASSERT_EQ(0, trace_clear());
	ASSERT_EQ(0, trace_write("events/aheadfs/aheadfs_window/enable", "1"));
	ASSERT_EQ(0, drop_cache(&self->fs, "f"));
	fd = open(ahfs_m(&self->fs, path, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(16, read_seq(fd, self->buf, 0, 16 * MIB, 1 * MIB));
	close(fd);
	trace_write("events/aheadfs/aheadfs_window/enable", "0");
	lat = ahfs_stat(&self->fs, "window_latency_us");
	rate = ahfs_stat(&self->fs, "window_rate");
	target = ahfs_stat(&self->fs, "window_target");
	last = ahfs_stat(&self->fs, "window_last");
	/* The stats' product: KiB/s x us, as the module computes it. */
	want = (rate >> 10) * lat / 1000000 * 2048;
	TH_LOG("latency %lld us, rate %lld KiB/s: target %lld KiB (computed %lld KiB), window %lld KiB",
	       lat, rate >> 10, target >> 10, want >> 10, last >> 10);
	EXPECT_LE(SLOW_MS * 1000LL, lat);
	EXPECT_GT(SLOW_MS * 1000LL * 20, lat);
	EXPECT_LT(0, rate);
	EXPECT_LE(llabs(target - want), want / 50 + 8 * KIB);
	EXPECT_LE(2 * MIB, last);
	/* The tracepoint saw the same latency, in ns. */
	tlat = trace_sum("aheadfs_window:", "latency_ns", &nev);
	EXPECT_LE(1, nev);
	EXPECT_LE(SLOW_MS * 1000000LL, tlat);
	trace_write("events/aheadfs/aheadfs_window/filter", "0\n");
}

/*
 * The copy is a reader too: copy_file_range's chunked copy (ext4 has no
 * copy of its own) meters each transaction of its source.  Legacy submits
 * each transaction's chunk just before copying it, so every transaction
 * waits; ahead finds only its first transaction absent, and no tail.
 */
TEST_F_TIMEOUT(slow, copy_counts_waits_and_absent, 300)
{
	static const char *const modes[] = { "legacy", "ahead" };
	long long txns[2], absent[2], waits[2], tails[2];
	char src[PATH_MAX], dst[PATH_MAX];
	int i, in, out;

	ASSERT_EQ(0, ahfs_set(&self->fs, "txn_kb", "1024"));
	for (i = 0; i < 2; i++) {
		loff_t left = 16 * MIB;
		ssize_t n;

		ASSERT_EQ(0, ahfs_set(&self->fs, "prefetch", modes[i]));
		ASSERT_EQ(0, drop_cache(&self->fs, "f"));
		in = open(ahfs_m(&self->fs, src, "f"), O_RDONLY);
		ASSERT_LE(0, in);
		out = open(ahfs_m(&self->fs, dst, "copy"),
			   O_WRONLY | O_CREAT | O_TRUNC, 0644);
		ASSERT_LE(0, out);
		txns[i] = ahfs_stat(&self->fs, "copy_txns");
		absent[i] = ahfs_stat(&self->fs, "copy_absent_txns");
		waits[i] = ahfs_stat(&self->fs, "copy_wait_txns");
		tails[i] = ahfs_stat(&self->fs, "copy_uncached_tails");
		while (left > 0) {
			n = copy_file_range(in, NULL, out, NULL, left, 0);
			ASSERT_LT(0, n);
			left -= n;
		}
		close(in);
		close(out);
		txns[i] = ahfs_stat(&self->fs, "copy_txns") - txns[i];
		absent[i] = ahfs_stat(&self->fs, "copy_absent_txns") - absent[i];
		waits[i] = ahfs_stat(&self->fs, "copy_wait_txns") - waits[i];
		tails[i] = ahfs_stat(&self->fs, "copy_uncached_tails") - tails[i];
		ASSERT_EQ(0, ahfs_run("cmp -s '%s' '%s'", src, dst));
		TH_LOG("%s: %lld transactions, %lld absent, %lld waited, %lld tails",
		       modes[i], txns[i], absent[i], waits[i], tails[i]);
	}
	EXPECT_EQ(16, txns[0]);
	EXPECT_EQ(16, waits[0]);
	EXPECT_EQ(0, absent[0]);
	EXPECT_EQ(16, txns[1]);
	EXPECT_EQ(1, absent[1]);
	EXPECT_EQ(0, tails[1]);
}

#define PRESSURE_CG	(48 * MIB)
#define PRESSURE_FILE	(128 * MIB)
#define PRESSURE_REQ	(8 * MIB)
#define PRESSURE_MS	1000

/*
 * Read @path whole in requests of PRESSURE_REQ in a child, in memory cgroup
 * @cg when not NULL, checking every byte there (a 4 KiB sample of each
 * request outside it): 0, or what went wrong (the child's exit code, or
 * 128 + the signal that killed it).
 */
static int read_checked(const char *cg, const char *path, unsigned char *buf)
{
	char procs[PATH_MAX];
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		char me[32];
		off_t off = 0;
		ssize_t r;
		int fd;

		snprintf(me, sizeof(me), "%d", getpid());
		if (cg && ahfs_write_file(ahfs_fmt(procs, sizeof(procs),
						   "%s/cgroup.procs", cg), me))
			_exit(2);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			_exit(3);
		while ((r = pread(fd, buf, PRESSURE_REQ, off)) > 0) {
			if (ahfs_check_pattern(buf, cg || r < 4096 ? r : 4096,
					       off))
				_exit(4);
			off += r;
		}
		_exit(r < 0 ? 5 : off == PRESSURE_FILE ? 0 : 6);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) :
				   128 + WTERMSIG(status);
}

/* "oom_kill N" of @cg's memory.events, or -1. */
static long long oom_kills(const char *cg)
{
	char path[PATH_MAX], buf[1024], *p;

	if (ahfs_read_file(ahfs_fmt(path, sizeof(path), "%s/memory.events", cg),
			   buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "oom_kill ");
	return p ? atoll(p + 9) : -1;
}

/*
 * Memory is the limit: window_kb at its maximum (4 GiB), a reader in a
 * memory cgroup of 48 MiB reads a 128 MiB file in 8 MiB requests from a
 * device whose reads take PRESSURE_MS.  Its window yields to the cgroup (it
 * never passes half of memory.max) instead of outgrowing what the cgroup
 * can hold, prefetch still runs, the reader is not OOM-killed and reads
 * every byte right.  The same read outside the cgroup then grows the window
 * past that bound: the cgroup, not the file or window_kb, stopped it.
 *
 * The delay is the device's timer, so that the free reader's window does
 * not depend on what a copy costs in the guest: it doubles while the reader
 * waits and then holds twice the reader's rate times PRESSURE_MS, past
 * 24 MiB unless the reader is slower than 12 MiB/s.  Over a fast lower
 * (a loop device on tmpfs) the window grows only as far as the lower's copy
 * is slow against the reader's, which TCG made 16 to 32 MiB.
 */
TEST_F_TIMEOUT(slow, memory_pressure_window_yields, 300)
{
	char cgroot[PATH_MAX], cg[PATH_MAX], m[PATH_MAX], l[PATH_MAX];
	struct snap a, b, c;
	int ret;

	ahfs_fmt(cgroot, sizeof(cgroot), "%s/cgroup", self->fs.base);
	ahfs_fmt(cg, sizeof(cg), "%s/reader", cgroot);
	ASSERT_EQ(0, mkdir(cgroot, 0755));
	ASSERT_EQ(0, ahfs_run("mount -t cgroup2 none '%s' && echo +memory >'%s/cgroup.subtree_control' && mkdir '%s' && echo %ld >'%s/memory.max'",
			      cgroot, cgroot, cg, PRESSURE_CG, cg));
	/* Writes are not delayed: the file is written through the device. */
	ASSERT_EQ(0, ahfs_make_file(ahfs_l(&self->fs, l, "big"),
				    PRESSURE_FILE));
	ASSERT_EQ(0, slow_delay(self->dm, self->loopdev, PRESSURE_MS));
	ASSERT_EQ(0, ahfs_set(&self->fs, "window_kb", "4194304"));
	ahfs_m(&self->fs, m, "big");

	ASSERT_EQ(0, drop_cache(&self->fs, "big"));
	snap(&self->fs, &a);
	ret = read_checked(cg, m, self->buf);
	snap(&self->fs, &b);
	EXPECT_EQ(0, ret) {
		TH_LOG("the reader in the cgroup: %s %d", ret > 128 ?
		       "killed by signal" : "failed with", ret > 128 ?
		       ret - 128 : ret);
	}
	EXPECT_EQ(0, oom_kills(cg));

	ASSERT_EQ(0, drop_cache(&self->fs, "big"));
	ASSERT_EQ(0, read_checked(NULL, m, self->buf));
	snap(&self->fs, &c);
	ahfs_run("rmdir '%s'; umount '%s'", cg, cgroot);
	TH_LOG("window peak %lld MiB in a %ld MiB cgroup (%lld chunks, %lld MiB wasted, %lld absent requests), %lld MiB outside it",
	       b.peak >> 20, PRESSURE_CG >> 20, DELTA(a, b, chunks),
	       DELTA(a, b, wasted) >> 20, DELTA(a, b, absent_reqs),
	       c.peak >> 20);
	EXPECT_LT(0, DELTA(a, b, chunks));
	EXPECT_LT(0, b.peak);
	EXPECT_GE(PRESSURE_CG / 2, b.peak);
	/* window_peak only grows: the larger peak is the free reader's. */
	EXPECT_LT(PRESSURE_CG / 2, c.peak);
}

TEST_HARNESS_MAIN
