// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of kmod/window.h: the transaction split and the readahead
 * window, against a simulated page cache (one bit per 4 KiB page).  Prints
 * TAP.  Every request size of issue 3 is covered, plus the edges: window
 * growth and cap, end of file, offsets near LLONG_MAX, concurrent streams,
 * random, backward and strided access, memory room and runtime changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <stdarg.h>
#include "window.h"

#define KIB		1024ULL
#define MIB		(1024ULL * KIB)
#define PG		4096ULL
#define TXN		(8 * MIB)
#define WINDOW		(64 * MIB)
#define ROOM		(1ULL << 40)

static int tests, failed;

static void report(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void report(int ok, const char *fmt, ...)
{
	va_list ap;

	tests++;
	if (!ok)
		failed++;
	printf("%sok %d ", ok ? "" : "not ", tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* The simulated lower page cache of one file. */
struct sim {
	unsigned char *bits;
	u64 pages;
	u64 isize;
	struct aheadfs_window w;
	u64 txn, win_cap, mem_room;
	bool legacy;
	bool worker_lags;	/* the worker submits nothing until sim_drain() */
	unsigned int cursor;	/* the worker's round robin */
	/* Totals, as prefetch.c and sched.c would count them. */
	u64 issued, hits, wasted, read, absent_reqs, tails, reqs;
	u64 reader_chunks;	/* chunks the reader submitted itself */
	u64 max_req_submitted;	/* the most one request submitted itself */
	u64 worker_bytes;	/* bytes the worker submitted */
	u64 chunks;		/* chunks anyone submitted */
	s64 window_cur;
	u64 window_peak;
	int order_bad;		/* issued below an earlier issue's end */
	int gauge_bad;		/* window_cur went negative */
	int pending_bad;	/* a plan said nothing untaken, and was wrong */
	u64 max_issue;
};

static void sim_init(struct sim *s, u64 isize)
{
	memset(s, 0, sizeof(*s));
	s->isize = isize;
	s->pages = (isize + PG - 1) / PG;
	s->bits = calloc(s->pages / 8 + 1, 1);
	if (!s->bits)
		abort();
	s->txn = TXN;
	s->win_cap = WINDOW;
	s->mem_room = ROOM;
}

static void sim_free(struct sim *s)
{
	free(s->bits);
}

static int has(struct sim *s, u64 pg)
{
	return pg < s->pages && (s->bits[pg / 8] >> (pg % 8)) & 1;
}

static void set(struct sim *s, u64 pg)
{
	if (pg < s->pages)
		s->bits[pg / 8] |= 1 << (pg % 8);
}

static void evict(struct sim *s, u64 start, u64 end)
{
	u64 pg;

	for (pg = start / PG; pg * PG < end && pg < s->pages; pg++)
		s->bits[pg / 8] &= ~(1 << (pg % 8));
}

/* Present bytes of [start, end), as sched.c meters them. */
static u64 present(struct sim *s, u64 start, u64 end, int *hole_first)
{
	u64 pg, n = 0, seen_hole = 0;

	end = aheadfs_min64(end, s->isize);
	*hole_first = 0;
	for (pg = start / PG; pg * PG < end; pg++) {
		u64 a = aheadfs_max64(pg * PG, start);
		u64 b = aheadfs_min64((pg + 1) * PG, end);

		if (has(s, pg)) {
			n += b - a;
			if (seen_hole)
				*hole_first = 1;
		} else {
			seen_hole = 1;
		}
	}
	return n;
}

/* The worker: submits every planned chunk, as prefetch.c's pf_work_fn. */
static void sim_drain(struct sim *s)
{
	struct aheadfs_pf_chunk c;
	u64 pg;

	while (aheadfs_window_next_chunk(&s->w, s->txn, &s->cursor, &c)) {
		if (c.len > s->txn)
			s->order_bad++;
		for (pg = c.start / PG; pg * PG < c.start + c.len; pg++)
			set(s, pg);
		s->issued += c.len;
		s->worker_bytes += c.len;
		s->chunks++;
		aheadfs_window_submitted(&s->w, &c);
	}
}

/* A chunk the reader took: submitted at once.  Returns its length. */
static u64 sim_reader_chunk(struct sim *s, const struct aheadfs_pf_chunk *ch)
{
	u64 pg;

	for (pg = ch->start / PG; pg * PG < ch->start + ch->len; pg++)
		set(s, pg);
	s->issued += ch->len;
	s->reader_chunks++;
	s->chunks++;
	aheadfs_window_submitted(&s->w, ch);
	return ch->len;
}

/*
 * One read request: plan, issue the prefetch in txn-size chunks (in
 * ascending order), meter hits, then read.  Returns the absent bytes.
 */
static u64 sim_read(struct sim *s, u64 pos, u64 count)
{
	struct aheadfs_pf_req rq = {
		.pos = pos, .count = count, .isize = s->isize, .txn = s->txn,
		.win_cap = s->win_cap, .legacy = s->legacy,
	};
	struct aheadfs_pf_plan p;
	u64 c, pg, end, have, want, absent, req_submitted = 0, budget;
	int hole_first;

	/* As prefetch.c does: the budget less the windows already held. */
	rq.mem_room = s->mem_room > (u64)s->window_cur ?
		      s->mem_room - s->window_cur : 0;
	aheadfs_window_plan(&s->w, &rq, &p);
	if (p.issue_end > p.issue_start) {
		if (p.issue_start < s->max_issue)
			s->order_bad++;
		s->max_issue = p.issue_end;
	}
	s->window_cur += p.win_delta;
	if (s->window_cur < 0)
		s->gauge_bad++;
	if ((u64)s->window_cur > s->window_peak)
		s->window_peak = s->window_cur;
	s->wasted += p.wasted;
	if (!s->legacy) {
		/* The reader submits what its next request would read. */
		struct aheadfs_pf_chunk ch;

		if (aheadfs_stream_busy(&s->w, p.stream, p.sync_end))
			s->order_bad++;
		while (aheadfs_stream_take(&s->w, p.stream, p.sync_end,
					   p.sync_end,
					   s->txn, &ch))
			req_submitted += sim_reader_chunk(s, &ch);
		/*
		 * Then its share of the window (prefetch.c asks only when the
		 * plan says something is left untaken: check that it is so).
		 */
		budget = p.grain + p.grain / 2;
		while (aheadfs_stream_take_own(&s->w, p.stream, &budget,
					       s->txn, &ch)) {
			if (!p.pending)
				s->pending_bad++;
			req_submitted += sim_reader_chunk(s, &ch);
		}
		if (req_submitted > s->max_req_submitted)
			s->max_req_submitted = req_submitted;
	} else {
		/* The reader submits the legacy chunk itself. */
		for (c = p.issue_start; c < p.issue_end; c += s->txn) {
			u64 ce = aheadfs_min64(c + s->txn, p.issue_end);

			for (pg = c / PG; pg * PG < ce; pg++)
				set(s, pg);
			s->issued += ce - c;
		}
	}
	if (p.hit_end > p.hit_start) {
		have = present(s, p.hit_start, p.hit_end, &hole_first);
		s->hits += have;
		s->wasted += p.hit_end - p.hit_start - have;
	}
	end = aheadfs_min64(aheadfs_sat_add(pos, count), s->isize);
	want = end > pos ? end - pos : 0;
	have = want ? present(s, pos, end, &hole_first) : 0;
	absent = want - have;
	s->reqs++;
	if (absent) {
		s->absent_reqs++;
		if (have && !hole_first)
			s->tails++;
	}
	for (pg = pos / PG; pg * PG < end; pg++)
		set(s, pg);
	s->read += want;
	if (!s->legacy && !s->worker_lags)
		sim_drain(s);
	return absent;
}

static void sim_close(struct sim *s)
{
	s64 d;

	s->wasted += aheadfs_window_drop(&s->w, &d);
	s->window_cur += d;
}

static const u64 sizes[] = {
	4 * KIB, 128 * KIB, 1 * MIB, 8 * MIB, 8 * MIB + 256 * KIB,
	16 * MIB, 32 * MIB,
};

static void test_txn_split(void)
{
	static const u64 want[] = { 1, 1, 1, 1, 2, 2, 4 };
	unsigned int i;
	u64 done, n, last;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		n = 0;
		last = 0;
		for (done = 0; done < sizes[i];
		     done += aheadfs_txn_len(done, sizes[i], TXN)) {
			last = aheadfs_txn_len(done, sizes[i], TXN);
			n++;
		}
		report(n == want[i] && aheadfs_txn_count(sizes[i], TXN) == n &&
		       done == sizes[i],
		       "txn split of %llu bytes into %llu transactions of 8 MiB (last %llu)",
		       (unsigned long long)sizes[i], (unsigned long long)n,
		       (unsigned long long)last);
	}
	report(aheadfs_txn_len(0, 8 * MIB + 256 * KIB, TXN) == 8 * MIB &&
	       aheadfs_txn_len(8 * MIB, 8 * MIB + 256 * KIB, TXN) == 256 * KIB &&
	       aheadfs_txn_len(8 * MIB + 256 * KIB, 8 * MIB + 256 * KIB, TXN) == 0,
	       "8 MiB + 256 KiB with txn 8 MiB is 8 MiB then 256 KiB");
	report(aheadfs_txn_count(8 * MIB + 256 * KIB, 4 * KIB) == 2112 &&
	       aheadfs_txn_count(1, TXN) == 1 && aheadfs_txn_count(0, TXN) == 0 &&
	       aheadfs_txn_count(AHEADFS_LOFF_MAX, 1ULL << 30) == 1ULL << 33,
	       "txn counts for txn 4 KiB, one byte, zero and LLONG_MAX");
}

/* Sequential cold read of the whole file in requests of @req. */
static void seq_read(struct sim *s, u64 req, u64 *absent_after_first)
{
	u64 pos;

	*absent_after_first = 0;
	for (pos = 0; pos < s->isize; pos += req)
		if (sim_read(s, pos, req) && pos)
			(*absent_after_first)++;
	sim_read(s, pos, req);	/* the read that returns 0 at EOF */
}

static void test_ahead_sizes(void)
{
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct sim s;
		u64 bad;

		sim_init(&s, 8 * sizes[i] + 12345);
		seq_read(&s, sizes[i], &bad);
		sim_close(&s);
		report(bad == 0 && s.absent_reqs == 1 && s.wasted == 0 &&
		       s.hits + sizes[i] == s.read && s.window_cur == 0 &&
		       !s.order_bad && !s.gauge_bad,
		       "ahead, %llu-byte requests: absent only in the first of %llu (got %llu), hits %llu of %llu read, wasted %llu, issued in ascending order",
		       (unsigned long long)sizes[i],
		       (unsigned long long)s.reqs,
		       (unsigned long long)s.absent_reqs,
		       (unsigned long long)s.hits,
		       (unsigned long long)s.read,
		       (unsigned long long)s.wasted);
		sim_free(&s);
	}
}

static void test_legacy_tail(void)
{
	u64 req = 8 * MIB + 256 * KIB, bad;
	struct sim a, l;

	sim_init(&l, 40 * req);
	l.legacy = true;
	seq_read(&l, req, &bad);
	sim_close(&l);
	sim_init(&a, 40 * req);
	seq_read(&a, req, &bad);
	sim_close(&a);
	report(l.tails * 10 >= (l.reqs - 1) * 9 && l.absent_reqs == l.tails &&
	       a.absent_reqs == 1 && a.tails == 0,
	       "8 MiB + 256 KiB: legacy %llu tails in %llu requests, ahead %llu absent requests",
	       (unsigned long long)l.tails, (unsigned long long)l.reqs,
	       (unsigned long long)a.absent_reqs);
	report(l.issued <= l.reqs * TXN && l.wasted == 0,
	       "legacy issues at most one txn per request (%llu bytes in %llu requests)",
	       (unsigned long long)l.issued, (unsigned long long)l.reqs);
	sim_free(&l);
	sim_free(&a);
}

static void test_window_growth(void)
{
	struct sim s;
	u64 pos, prev = 0, peak = 0;
	int doubling = 1, i;
	struct aheadfs_pf_req rq;
	struct aheadfs_pf_plan p;

	sim_init(&s, 1ULL << 30);
	for (pos = 0, i = 0; pos < 256 * MIB; pos += 4 * KIB, i++) {
		rq = (struct aheadfs_pf_req){ .pos = pos, .count = 4 * KIB,
			.isize = s.isize, .txn = TXN, .win_cap = WINDOW,
			.mem_room = ROOM };
		aheadfs_window_plan(&s.w, &rq, &p);
		if (i && i < 14 && p.win != 2 * prev)
			doubling = 0;
		prev = p.win;
		peak = aheadfs_max64(peak, p.win);
	}
	report(doubling && peak == WINDOW && prev == WINDOW,
	       "4 KiB requests: window doubles from 4 KiB and stops at window_kb (%llu)",
	       (unsigned long long)peak);

	/* A request larger than window_kb: the window covers one request. */
	sim_free(&s);
	sim_init(&s, 1ULL << 31);
	for (pos = 0; pos < 800 * MIB; pos += 96 * MIB) {
		rq = (struct aheadfs_pf_req){ .pos = pos, .count = 96 * MIB,
			.isize = s.isize, .txn = TXN, .win_cap = WINDOW,
			.mem_room = ROOM };
		aheadfs_window_plan(&s.w, &rq, &p);
		if (p.win != 96 * MIB || s.w.s[0].ra_end < pos + 192 * MIB)
			break;
	}
	report(pos >= 800 * MIB,
	       "96 MiB requests with window 64 MiB: window grows to 96 MiB, one request ahead");

	/* window_kb lowered at runtime: the next request follows. */
	rq.pos = pos;
	rq.count = 1 * MIB;
	rq.win_cap = 2 * MIB;
	aheadfs_window_plan(&s.w, &rq, &p);
	report(p.win == 2 * MIB, "window_kb lowered at runtime: window %llu",
	       (unsigned long long)p.win);
	rq.win_cap = 0;
	rq.pos += rq.count;
	aheadfs_window_plan(&s.w, &rq, &p);
	report(p.win == 1 * MIB && s.w.s[0].ra_end >= rq.pos + 2 * MIB,
	       "window_kb 0: the window still covers one request");
	sim_free(&s);
}

static void test_eof(void)
{
	struct sim s;
	u64 bad, isize = 10 * MIB + 100;

	sim_init(&s, isize);
	seq_read(&s, 1 * MIB, &bad);
	report(s.max_issue == isize && bad == 0,
	       "EOF: prefetch stops at i_size (%llu)",
	       (unsigned long long)s.max_issue);
	sim_close(&s);
	report(s.wasted == 0 && s.issued == isize - 1 * MIB,
	       "EOF: a whole-file read wastes nothing (issued %llu)",
	       (unsigned long long)s.issued);
	sim_free(&s);

	/* Empty file and reads past EOF: nothing issued. */
	sim_init(&s, 0);
	sim_read(&s, 0, 1 * MIB);
	sim_read(&s, 1 * MIB, 1 * MIB);
	report(s.issued == 0 && s.absent_reqs == 0, "empty file: nothing issued");
	sim_free(&s);
}

static void test_overflow(void)
{
	struct aheadfs_window w;
	struct aheadfs_pf_req rq = {
		.pos = AHEADFS_LOFF_MAX - 4096, .count = 64 * MIB,
		.isize = AHEADFS_LOFF_MAX, .txn = TXN,
		.win_cap = WINDOW, .mem_room = ROOM,
	};
	struct aheadfs_pf_plan p;
	int ok = 1, i;

	memset(&w, 0, sizeof(w));
	for (i = 0; i < 4; i++) {
		aheadfs_window_plan(&w, &rq, &p);
		if (p.issue_end > AHEADFS_LOFF_MAX || p.issue_end < p.issue_start ||
		    p.hit_end < p.hit_start)
			ok = 0;
		rq.pos = AHEADFS_LOFF_MAX;
	}
	report(ok && w.s[0].next == AHEADFS_LOFF_MAX,
	       "offsets near LLONG_MAX saturate, never wrap");

	memset(&w, 0, sizeof(w));
	rq.pos = ULLONG_MAX;
	rq.count = ULLONG_MAX;
	aheadfs_window_plan(&w, &rq, &p);
	report(p.issue_end <= AHEADFS_LOFF_MAX && p.issue_end >= p.issue_start &&
	       aheadfs_sat_add(AHEADFS_LOFF_MAX, 1) == AHEADFS_LOFF_MAX &&
	       aheadfs_sat_add(AHEADFS_LOFF_MAX - 1, 1) == AHEADFS_LOFF_MAX &&
	       aheadfs_sat_add(1, AHEADFS_LOFF_MAX) == AHEADFS_LOFF_MAX &&
	       aheadfs_sat_add(ULLONG_MAX, ULLONG_MAX) == AHEADFS_LOFF_MAX,
	       "position and count of ULLONG_MAX: no wrap");

	memset(&w, 0, sizeof(w));
	rq = (struct aheadfs_pf_req){ .pos = 0, .count = 1ULL << 62,
		.isize = AHEADFS_LOFF_MAX, .txn = TXN, .win_cap = WINDOW,
		.mem_room = ROOM, .legacy = true };
	aheadfs_window_plan(&w, &rq, &p);
	report(p.issue_end - p.issue_start == TXN,
	       "legacy with a huge request: one chunk of txn");
}

/* @n readers, interleaved request by request, each over its own range. */
static void interleave(struct sim *s, int n, const u64 *start, u64 len,
		       u64 req, u64 *bad)
{
	u64 off;
	int i;

	*bad = 0;
	for (off = 0; off < len; off += req)
		for (i = 0; i < n; i++)
			if (sim_read(s, start[i] + off, req) && off)
				(*bad)++;
}

static void test_concurrent(void)
{
	u64 start[16], bad, region = 16 * MIB;
	struct sim s;
	int i;

	/* 4 readers on disjoint regions of one file. */
	sim_init(&s, 4 * region);
	for (i = 0; i < 4; i++)
		start[i] = i * region;
	interleave(&s, 4, start, region, 1 * MIB, &bad);
	report(bad == 0 && s.absent_reqs == 4,
	       "4 interleaved readers on disjoint regions: absent only at each start (%llu)",
	       (unsigned long long)s.absent_reqs);
	sim_free(&s);

	/* As many streams as slots, 128 KiB requests. */
	sim_init(&s, AHEADFS_PF_STREAMS * region);
	for (i = 0; i < AHEADFS_PF_STREAMS; i++)
		start[i] = i * region;
	interleave(&s, AHEADFS_PF_STREAMS, start, region, 128 * KIB, &bad);
	sim_close(&s);
	report(bad == 0 && s.absent_reqs == AHEADFS_PF_STREAMS &&
	       s.window_cur == 0,
	       "%d interleaved streams on one file: absent only at each start",
	       AHEADFS_PF_STREAMS);
	sim_free(&s);

	/* 8 MiB + 256 KiB, 4 streams. */
	sim_init(&s, 4 * 80 * MIB);
	for (i = 0; i < 4; i++)
		start[i] = i * 80 * MIB;
	interleave(&s, 4, start, 72 * MIB, 8 * MIB + 256 * KIB, &bad);
	report(bad == 0, "4 interleaved 8 MiB + 256 KiB streams: no absent byte after each start");
	report(s.window_peak <= 4 * WINDOW,
	       "window_cur peak is the sum of the streams' windows (%llu)",
	       (unsigned long long)s.window_peak);
	sim_free(&s);
}

static void test_random(void)
{
	unsigned long long seed = 42;
	struct sim s;
	u64 i, n = 4000;

	sim_init(&s, 1ULL << 30);
	for (i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		sim_read(&s, ((seed >> 20) % (s.pages - 1)) * PG, 4 * KIB);
	}
	sim_close(&s);
	report(s.wasted * 20 <= s.read,
	       "random 4 KiB reads: wasted %llu of %llu bytes read (<= 5%%)",
	       (unsigned long long)s.wasted, (unsigned long long)s.read);
	report(s.issued * 20 <= s.read,
	       "random 4 KiB reads: prefetch stops (%llu bytes issued)",
	       (unsigned long long)s.issued);

	/* Random, then sequential: the stream is confirmed and prefetched. */
	{
		u64 pos = 512 * MIB, bad = 0;

		for (i = 0; i < 64; i++, pos += 1 * MIB)
			if (sim_read(&s, pos, 1 * MIB) && i >= 2)
				bad++;
		report(bad == 0 && s.w.duds < AHEADFS_PF_DUD_MAX,
		       "random then sequential: prefetch resumes from the third request (%llu absent)",
		       (unsigned long long)bad);
	}
	sim_free(&s);
}

static void test_backward_strided(void)
{
	struct sim s;
	u64 pos;
	int i;

	sim_init(&s, 256 * MIB);
	for (i = 0, pos = 255 * MIB; i < 200; i++, pos -= 1 * MIB)
		sim_read(&s, pos, 1 * MIB);
	sim_close(&s);
	report(s.wasted <= 20 * MIB && s.issued <= 20 * MIB,
	       "backward reads: prefetch stops (issued %llu, wasted %llu)",
	       (unsigned long long)s.issued, (unsigned long long)s.wasted);
	sim_free(&s);

	sim_init(&s, 1ULL << 30);
	for (i = 0, pos = 0; i < 1000; i++, pos += 1 * MIB)
		sim_read(&s, pos, 64 * KIB);
	sim_close(&s);
	report(s.wasted * 20 <= s.read + 20 * 64 * KIB,
	       "strided reads (64 KiB every 1 MiB): wasted %llu of %llu read",
	       (unsigned long long)s.wasted, (unsigned long long)s.read);
	sim_free(&s);
}

static void test_memory_room(void)
{
	struct sim s;
	u64 bad;

	sim_init(&s, 256 * MIB);
	s.mem_room = 0;
	seq_read(&s, 1 * MIB, &bad);
	report(s.issued == 0 && s.window_peak == 0,
	       "no memory room: prefetch yields entirely");
	sim_free(&s);

	sim_init(&s, 256 * MIB);
	s.mem_room = 4 * MIB;
	seq_read(&s, 1 * MIB, &bad);
	report(s.window_peak <= 4 * MIB && bad == 0,
	       "memory room 4 MiB: window held at %llu, still one request ahead",
	       (unsigned long long)s.window_peak);
	sim_free(&s);
}

static void test_txn_runtime(void)
{
	struct sim s;
	u64 pos, c, bad = 0, big = 0;
	struct aheadfs_pf_req rq;
	struct aheadfs_pf_plan p;

	/* Chunks of the txn in force, ahead mode, txn changed mid-stream. */
	sim_init(&s, 1ULL << 30);
	for (pos = 0; pos < 512 * MIB; pos += 4 * MIB) {
		s.txn = pos < 256 * MIB ? 8 * MIB : 1 * MIB;
		rq = (struct aheadfs_pf_req){ .pos = pos, .count = 4 * MIB,
			.isize = s.isize, .txn = s.txn, .win_cap = WINDOW,
			.mem_room = ROOM };
		aheadfs_window_plan(&s.w, &rq, &p);
		for (c = p.issue_start; c < p.issue_end; c += s.txn)
			if (aheadfs_min64(c + s.txn, p.issue_end) - c > s.txn)
				big++;
		if (pos >= 4 * MIB && s.w.s[0].ra_end < pos + 8 * MIB)
			bad++;
	}
	report(!big && !bad, "ahead: window independent of txn, chunks never exceed it");

	/* Legacy chunk follows txn. */
	sim_free(&s);
	sim_init(&s, 1ULL << 30);
	s.legacy = true;
	s.txn = 2 * MIB;
	sim_read(&s, 0, 8 * MIB + 256 * KIB);
	report(s.issued == 2 * MIB && s.tails == 1,
	       "legacy: txn 2 MiB gives a 2 MiB chunk and a tail");
	sim_free(&s);
}

static void test_eviction(void)
{
	struct sim s;
	u64 pos;

	sim_init(&s, 256 * MIB);
	sim_read(&s, 0, 1 * MIB);
	sim_read(&s, 1 * MIB, 1 * MIB);
	/* Memory pressure evicts what was prefetched ahead. */
	evict(&s, 2 * MIB, 256 * MIB);
	pos = 2 * MIB;
	sim_read(&s, pos, 1 * MIB);
	report(s.wasted == 1 * MIB && s.absent_reqs == 2,
	       "evicted prefetch is counted as wasted (%llu)",
	       (unsigned long long)s.wasted);
	sim_close(&s);
	sim_free(&s);
}

/*
 * The worker lags behind the reader: the reader submits what its next
 * request reads, so only the first request finds bytes absent; what nobody
 * submitted is neither a hit nor wasted; what the worker submits later is
 * hit as usual, and close writes off exactly what was submitted and not read.
 */
static void test_worker_lag(void)
{
	struct sim s;
	struct aheadfs_pf_chunk c = { 0 };
	u64 pos = 0, absent = 0, len;
	unsigned int cur = 0;
	int i;

	sim_init(&s, 256 * MIB);
	s.worker_lags = true;
	for (i = 0; i < 8; i++, pos += 1 * MIB)
		absent += sim_read(&s, pos, 1 * MIB);
	len = aheadfs_window_next_chunk(&s.w, s.txn, &cur, &c);
	report(absent == 1 * MIB && s.hits == 7 * MIB && s.wasted == 0 &&
	       s.issued >= 8 * MIB && len && c.start == 1 * MIB + s.issued,
	       "worker lag: absent %llu (first request only), hits %llu, wasted %llu, reader submitted %llu (the next requests and its share of the window), worker's next chunk at %llu",
	       (unsigned long long)absent, (unsigned long long)s.hits,
	       (unsigned long long)s.wasted, (unsigned long long)s.issued,
	       (unsigned long long)c.start);
	sim_free(&s);
	sim_init(&s, 256 * MIB);
	s.worker_lags = true;
	sim_read(&s, 0, 1 * MIB);
	sim_read(&s, 1 * MIB, 1 * MIB);
	sim_drain(&s);
	absent = 0;
	for (i = 0, pos = 2 * MIB; i < 4; i++, pos += 1 * MIB) {
		absent += sim_read(&s, pos, 1 * MIB);
		sim_drain(&s);
	}
	sim_close(&s);
	report(absent == 0 && s.hits == 5 * MIB &&
	       s.wasted == s.issued - s.hits,
	       "worker lag: once drained, reads hit (%llu) and close writes off the rest (%llu of %llu)",
	       (unsigned long long)s.hits, (unsigned long long)s.wasted,
	       (unsigned long long)s.issued);
	sim_free(&s);
}

/*
 * 4 KiB reads whose worker stops running once the window is grown (on a
 * busy or single CPU it runs only when the reader is preempted): the reader
 * tops the window up itself, a grain at a time, so it issues one chunk per
 * grain, not one per request nor a large one now and then, and still finds
 * nothing absent.
 */
/*
 * 4 KiB reads of @s (with its txn) to @warm with the worker running, then
 * to @end with the worker lagging: the reader's chunks in the second part,
 * and the bytes found absent in all, to *@absent.
 */
static u64 lagging_small_reads(struct sim *s, u64 warm, u64 end, u64 *absent)
{
	u64 pos, chunks;

	*absent = 0;
	for (pos = 0; pos < warm; pos += 4 * KIB)
		*absent += sim_read(s, pos, 4 * KIB);
	chunks = s->reader_chunks;
	s->worker_lags = true;
	s->max_req_submitted = 0;
	for (; pos < end; pos += 4 * KIB)
		*absent += sim_read(s, pos, 4 * KIB);
	return s->reader_chunks - chunks;
}

static void test_worker_lag_small_reads(void)
{
	struct sim s;
	u64 absent, chunks;

	sim_init(&s, 256 * MIB);
	chunks = lagging_small_reads(&s, 64 * MIB, 192 * MIB, &absent);
	report(absent == 4 * KIB && chunks &&
	       chunks <= 128 * MIB / aheadfs_pf_grain(4 * KIB, s.txn) + 1 &&
	       s.max_req_submitted <= 2 * aheadfs_pf_grain(4 * KIB, s.txn) &&
	       s.order_bad == 0,
	       "worker lag, 4 KiB reads: the reader submitted %llu chunks for 128 MiB (a grain of %llu), at most %llu bytes in one request, %llu bytes absent",
	       (unsigned long long)chunks,
	       (unsigned long long)aheadfs_pf_grain(4 * KIB, s.txn),
	       (unsigned long long)s.max_req_submitted,
	       (unsigned long long)absent);
	sim_free(&s);
}

/*
 * The grain is the transaction size's, not a size of its own: a request's
 * size, at least a 64th of the transaction.  4 KiB readers whose worker
 * stops running submit at most a grain and a half in one request, in
 * two chunks at most, for each txn_kb; and a smaller txn_kb makes smaller
 * top-ups.
 */
static void test_grain_follows_txn(void)
{
	static const u64 txns[] = { 512 * KIB, 1 * MIB, 8 * MIB };
	u64 prev_max = 0;
	unsigned int i;

	report(aheadfs_pf_grain(4 * KIB, 8 * MIB) == 128 * KIB &&
	       aheadfs_pf_grain(4 * KIB, 1 * MIB) == 16 * KIB &&
	       aheadfs_pf_grain(8 * MIB + 256 * KIB, 8 * MIB) ==
	       8 * MIB + 256 * KIB &&
	       aheadfs_pf_grain(4 * KIB, 4 * KIB) == 4 * KIB,
	       "grain: a 64th of the txn (128 KiB at 8 MiB), the request's size above");
	for (i = 0; i < sizeof(txns) / sizeof(txns[0]); i++) {
		u64 txn = txns[i], grain = aheadfs_pf_grain(4 * KIB, txn);
		u64 absent, chunks;
		struct sim s;

		sim_init(&s, 256 * MIB);
		s.txn = txn;
		chunks = lagging_small_reads(&s, 64 * MIB, 128 * MIB, &absent);
		report(absent == 4 * KIB && chunks &&
		       chunks <= 64 * MIB / grain + 1 &&
		       s.max_req_submitted <= grain + grain / 2 &&
		       s.max_req_submitted > prev_max && !s.order_bad &&
		       !s.pending_bad,
		       "txn %llu, 4 KiB reads: grain %llu, %llu reader chunks for 64 MiB, at most %llu bytes in one request",
		       (unsigned long long)txn, (unsigned long long)grain,
		       (unsigned long long)chunks,
		       (unsigned long long)s.max_req_submitted);
		prev_max = s.max_req_submitted;
		sim_free(&s);
	}
}

/*
 * Steady readers of every size, with a worker that never runs after the
 * window's growth: each request submits about what it reads (at most two
 * grains of aheadfs_pf_grain()), the worker is left nothing,
 * and nothing is absent after the first request.  Before, the window was
 * topped up by half of it at once, and one request in 256 of a 128 KiB
 * reader submitted 32 MiB.
 */
static void test_spread_topups(void)
{
	static const u64 reqs[] = { 128 * KIB, 1 * MIB, 8 * MIB,
				    8 * MIB + 256 * KIB, 16 * MIB };
	unsigned int i;

	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		u64 req = reqs[i], pos, absent = 0, grain, wb;
		struct sim s;

		sim_init(&s, 512 * MIB + 4 * req);
		grain = aheadfs_pf_grain(req, s.txn);
		/* Grown to the cap, the worker draining. */
		for (pos = 0; pos < 256 * MIB; pos += req)
			absent += sim_read(&s, pos, req);
		s.worker_lags = true;
		s.max_req_submitted = 0;
		wb = s.worker_bytes;
		for (; pos + req <= 512 * MIB; pos += req)
			absent += sim_read(&s, pos, req);
		sim_drain(&s);
		report(absent == req &&
		       s.max_req_submitted <= grain + grain / 2 &&
		       s.worker_bytes == wb && !s.order_bad && !s.pending_bad,
		       "steady %llu-byte reads: at most %llu bytes submitted by one request (a grain and a half: %llu), the worker left %llu, %llu bytes absent",
		       (unsigned long long)req,
		       (unsigned long long)s.max_req_submitted,
		       (unsigned long long)(grain + grain / 2),
		       (unsigned long long)(s.worker_bytes - wb),
		       (unsigned long long)absent);
		sim_free(&s);
	}
}

/*
 * One open file read through again and again (a scan, a benchmark): each
 * pass from 0 is a new stream, and the one it leaves at EOF holds nothing
 * of the mount's room.  So the gauge stays within the file, and the last
 * of 40 passes is prefetched in as few chunks as the second: streams that
 * held their whole window after EOF took all the room within four passes,
 * and the passes after them prefetched a page at a time.  (Until the
 * best-ranked stream was chosen, an old stream that ended where a pass was
 * about to read took that request, and the pass's own stream kept a little
 * more of the room every pass.)
 */
static void test_repeated_passes(void)
{
	u64 pos, absent = 0, second = 0, last = 0, c0, i0;
	u64 second_b = 0, last_b = 0;
	struct sim s;
	int pass;

	sim_init(&s, 16 * MIB);
	s.mem_room = 256 * MIB;
	for (pass = 0; pass < 40; pass++) {
		c0 = s.chunks;
		i0 = s.issued;
		for (pos = 0; pos < 16 * MIB; pos += 4 * KIB)
			absent += sim_read(&s, pos, 4 * KIB);
		if (pass == 1) {
			second = s.chunks - c0;
			second_b = s.issued - i0;
		}
		last = s.chunks - c0;
		last_b = s.issued - i0;
	}
	sim_close(&s);
	/*
	 * One file's worth: the stream a pass leaves at EOF holds nothing,
	 * and keeps its last request (the next pass's stream, which reads it
	 * too, is the one the request continues).
	 */
	report(absent == 4 * KIB && s.window_peak <= 16 * MIB &&
	       s.window_cur == 0 && s.gauge_bad == 0 && last == second &&
	       last_b == second_b && last_b >= 8 * MIB,
	       "40 passes over a 16 MiB file: peak gauge %llu; the second pass %llu chunks, %llu bytes, the last %llu chunks, %llu bytes",
	       (unsigned long long)s.window_peak, (unsigned long long)second,
	       (unsigned long long)second_b, (unsigned long long)last,
	       (unsigned long long)last_b);
	sim_free(&s);
}

/*
 * A reader's chunk and the worker's cross: the worker's, above, is out
 * first.  What counts as submitted has no gap, a reader needing the range
 * waits while any of it is held, and nothing is left held at the end.
 */
static void test_crossing_chunks(void)
{
	struct aheadfs_window w = { 0 };
	struct aheadfs_pf_req rq = {
		.pos = 0, .count = 1 * MIB, .isize = 256 * MIB, .txn = TXN,
		.win_cap = WINDOW, .mem_room = ROOM,
	};
	struct aheadfs_pf_chunk r = { 0 }, k = { 0 };
	struct aheadfs_pf_plan p;
	unsigned int cur = 0;
	struct aheadfs_stream *s;
	u64 lr, lk, gap_issued;
	bool busy_mid, busy_end;

	aheadfs_window_plan(&w, &rq, &p);
	rq.pos = 1 * MIB;
	aheadfs_window_plan(&w, &rq, &p);
	s = &w.s[p.stream];
	lr = aheadfs_stream_take(&w, p.stream, p.sync_end, p.sync_end, TXN,
				 &r);
	lk = aheadfs_window_next_chunk(&w, TXN, &cur, &k);
	aheadfs_window_submitted(&w, &k);
	gap_issued = s->issued;
	busy_mid = aheadfs_stream_busy(&w, p.stream, p.sync_end);
	aheadfs_window_submitted(&w, &r);
	busy_end = aheadfs_stream_busy(&w, p.stream, AHEADFS_LOFF_MAX);
	report(lr && lk && k.start == r.start + r.len &&
	       gap_issued == r.start && busy_mid && !busy_end &&
	       s->issued == s->claimed && s->subs == 0,
	       "crossing chunks: reader [%llu, +%llu), worker [%llu, +%llu) out first: submitted stays at %llu until the reader's is out, then %llu",
	       (unsigned long long)r.start, (unsigned long long)r.len,
	       (unsigned long long)k.start, (unsigned long long)k.len,
	       (unsigned long long)gap_issued,
	       (unsigned long long)s->issued);
}

/*
 * nfsd's threads serve one client's sequential READs out of order: each
 * group of four requests arrives shuffled.  They are one stream: only the
 * first group's requests find bytes absent, and nothing is wasted.
 */
static void test_nfsd_reorder(void)
{
	static const int order[][4] = {
		{ 1, 0, 3, 2 }, { 0, 2, 1, 3 }, { 3, 0, 1, 2 }, { 0, 1, 3, 2 },
	};
	u64 absent_reqs = 0, live = 0;
	struct sim s;
	int g, k;

	sim_init(&s, 256 * MIB);
	for (g = 0; g < 64; g++) {
		for (k = 0; k < 4; k++) {
			u64 pos = ((u64)g * 4 + order[g % 4][k]) * MIB;

			if (sim_read(&s, pos, 1 * MIB) && g > 0)
				absent_reqs++;
		}
	}
	for (k = 0; k < AHEADFS_PF_STREAMS; k++)
		live += s.w.s[k].live;
	sim_close(&s);
	report(absent_reqs == 0 && live == 1 && s.wasted == 0,
	       "nfsd-like reordered 1 MiB reads: %llu absent requests after the first four, %llu stream(s), wasted %llu",
	       (unsigned long long)absent_reqs, (unsigned long long)live,
	       (unsigned long long)s.wasted);
	sim_free(&s);
}

/* One forward request of stream-sized @req at time @now (ns); its plan. */
static struct aheadfs_pf_plan bdp_req(struct aheadfs_window *w, u64 pos,
				      u64 req, u64 now)
{
	struct aheadfs_pf_req rq = {
		.pos = pos, .count = req, .isize = 1ULL << 50, .txn = TXN,
		.win_cap = 1ULL << 30, .mem_room = ROOM, .now = now,
	};
	struct aheadfs_pf_plan p;

	aheadfs_window_plan(w, &rq, &p);
	return p;
}

/*
 * The window by measurement: a chunk's latency (timed on the first
 * request's own bytes) times the reader's rate, x2.  It grows to that and
 * stops, far below the cap; shrinks when the reader slows; grows past it
 * on a stall; halves on eviction; and saturates instead of overflowing.
 */
static void test_bdp(void)
{
	static struct aheadfs_window w;
	const u64 ms = 1000000, req = 1 * MIB;
	struct aheadfs_pf_plan p;
	u64 pos = 0, t = 1 * ms, bdp, win, grew = 0;
	int i, resized = 0;

	memset(&w, 0, sizeof(w));
	p = bdp_req(&w, pos, req, t);
	report(p.stream >= 0 && p.target == 0 && p.resized,
	       "bdp: a new stream is unmeasured (target %llu)",
	       (unsigned long long)p.target);
	/* Its own bytes submitted at t + 0.1 ms, read 10 ms later. */
	aheadfs_stream_waited(&w, p.stream, p.gen, t, t + 10 * ms + ms / 10,
			      AHEADFS_WAIT_UNMEASURED, t + ms / 10, true,
			      false);
	report(w.s[p.stream].lat == 10 * ms,
	       "bdp: the first request times a chunk: %llu ns",
	       (unsigned long long)w.s[p.stream].lat);
	/* A reader that takes 2 ms per MiB when nothing waits: 500 MiB/s. */
	t += 10 * ms + ms / 10;
	for (i = 0; i < 40; i++) {
		pos += req;
		t += 2 * ms;
		p = bdp_req(&w, pos, req, t);
		resized += p.resized;
	}
	bdp = p.target;
	win = w.s[p.stream].win;
	/* 500 MiB/s x 10 ms x 2 = 10 MiB, give or take the EWMA's start. */
	report(bdp > 9 * MIB && bdp < 11 * MIB,
	       "bdp: 500 MiB/s x 10 ms x 2 = %llu KiB",
	       (unsigned long long)(bdp >> 10));
	/*
	 * The product without its headroom at once, the headroom half a
	 * request per request: about 10 changes, not one per request.
	 */
	report(win >= bdp && win < 2 * bdp && resized <= 2 + (int)(bdp / req),
	       "bdp: the window grew to %llu KiB (product %llu KiB, cap 1 GiB) in %d changes, and stopped",
	       (unsigned long long)(win >> 10), (unsigned long long)(bdp >> 10),
	       resized);
	report(p.win == win, "bdp: the plan's window is the stream's (%llu)",
	       (unsigned long long)p.win);

	/* The reader slows to 20 ms per MiB: 50 MiB/s, 1 MiB x 2. */
	for (i = 0; i < 40; i++) {
		pos += req;
		t += 20 * ms;
		p = bdp_req(&w, pos, req, t);
	}
	bdp = p.target;
	win = w.s[p.stream].win;
	report(bdp < 2 * MIB + MIB / 4 && win <= AHEADFS_PF_BDP_SLACK * bdp &&
	       win >= bdp,
	       "bdp: a slower reader: the window shrank to %llu KiB (product %llu KiB)",
	       (unsigned long long)(win >> 10), (unsigned long long)(bdp >> 10));

	/* A stall: the reader waited for the window's own bytes. */
	aheadfs_stream_waited(&w, p.stream, p.gen, t, t + 5 * ms,
			      AHEADFS_WAIT_UNMEASURED, 0, false, false);
	pos += req;
	t += 25 * ms;
	p = bdp_req(&w, pos, req, t);
	grew = w.s[p.stream].win;
	report(grew == 2 * win && w.s[p.stream].lat == 10 * ms,
	       "bdp: a stall doubles the window (%llu -> %llu KiB) and leaves the latency",
	       (unsigned long long)(win >> 10), (unsigned long long)(grew >> 10));
	/* An interval that waited is not timed: the rate stays 50 MiB/s. */
	report(w.s[p.stream].rate > 45 * MIB && w.s[p.stream].rate < 55 * MIB,
	       "bdp: time waited for the device is not the reader's (%llu KiB/s)",
	       (unsigned long long)(w.s[p.stream].rate >> 10));

	/* Eviction halves it, not below a request. */
	aheadfs_stream_evicted(&w, p.stream, p.gen, req);
	report(w.s[p.stream].win == grew / 2, "bdp: eviction halves the window");
	for (i = 0; i < 8; i++)
		aheadfs_stream_evicted(&w, p.stream, p.gen, req);
	report(w.s[p.stream].win == req, "bdp: ... never below a request");

	/* A stale ticket (the slot's stream was replaced) changes nothing. */
	win = w.s[p.stream].win;
	aheadfs_stream_waited(&w, p.stream, p.gen + 1, t, t + ms,
			      AHEADFS_WAIT_UNMEASURED, t, true, false);
	aheadfs_stream_evicted(&w, p.stream, p.gen + 1, req);
	report(w.s[p.stream].win == win && w.s[p.stream].lat == 10 * ms,
	       "bdp: a report for a replaced stream is ignored");

	/* Saturation: a reader at ~1 GB per ns and an hour's latency. */
	memset(&w, 0, sizeof(w));
	p = bdp_req(&w, 0, 1ULL << 30, 1);
	aheadfs_stream_waited(&w, p.stream, p.gen, 1, 3600ULL * 1000 * ms,
			      AHEADFS_WAIT_UNMEASURED, 1, true, false);
	p = bdp_req(&w, 1ULL << 30, 1ULL << 30, 2);
	/* (that interval waited: the rate is timed on the next) */
	p = bdp_req(&w, 2ULL << 30, 1ULL << 30, 3);
	report(p.target == AHEADFS_LOFF_MAX / 1000000 ||
	       p.target > (1ULL << 50),
	       "bdp: saturates, no overflow (target %llu)",
	       (unsigned long long)p.target);
	report(w.s[p.stream].win <= 1ULL << 30,
	       "bdp: ... and the cap still holds");
}

/*
 * A request that waited is timed without its wait: the rate is the
 * reader's from its second request on, and the window goes to the product
 * instead of doubling at each request while the waits keep it unmeasured.
 * A wait nobody measured (the copy path's) leaves the request untimed.
 */
static void test_rate_without_wait(void)
{
	static struct aheadfs_window w;
	const u64 ms = 1000000, req = 8 * MIB;
	struct aheadfs_pf_plan p;
	u64 t = 1 * ms, rate;
	int i;

	memset(&w, 0, sizeof(w));
	p = bdp_req(&w, 0, req, t);
	/*
	 * 10 ms waited of its 26 ms, for its own bytes submitted 10 ms before
	 * the wait ended: 8 MiB in 16 ms of the reader's own, a 10 ms chunk.
	 */
	aheadfs_stream_waited(&w, p.stream, p.gen, t, t + 20 * ms, 10 * ms,
			      t + 10 * ms, true, false);
	t += 26 * ms;
	p = bdp_req(&w, req, req, t);
	rate = w.s[p.stream].rate;
	report(rate == 8 * MIB * 1000 / 16,
	       "rate: a request that waited 10 of its 26 ms is timed on 16 (%llu KiB/s)",
	       (unsigned long long)(rate >> 10));
	/* 500 MiB/s x 10 ms x 2 = 10 MiB. */
	report(p.grew && p.win == p.target && p.win == 10 * MIB,
	       "rate: that plan grew the window to the product, and says so (%llu KiB)",
	       (unsigned long long)(p.win >> 10));
	/*
	 * Each request then waits 0.1 ms for bytes in flight, a wait the
	 * window was already extended for (aheadfs_stream_extend()): it was
	 * doubled at each request while those waits kept it unmeasured, to
	 * the 1 GiB cap.
	 */
	for (i = 2; i < 8; i++) {
		aheadfs_stream_waited(&w, p.stream, p.gen, t, t + 16 * ms,
				      ms / 10, 0, false, true);
		t += 16 * ms;
		p = bdp_req(&w, i * req, req, t);
	}
	report(w.s[p.stream].win >= 10 * MIB && w.s[p.stream].win < 11 * MIB,
	       "rate: waits of 0.1 ms at every request keep the window at the product (%llu KiB), not doubled each time",
	       (unsigned long long)(w.s[p.stream].win >> 10));

	memset(&w, 0, sizeof(w));
	p = bdp_req(&w, 0, req, t);
	aheadfs_stream_waited(&w, p.stream, p.gen, t, t + 20 * ms,
			      AHEADFS_WAIT_UNMEASURED, t + 2 * ms, true, false);
	t += 26 * ms;
	p = bdp_req(&w, req, req, t);
	report(!w.s[p.stream].rate,
	       "rate: a request whose wait was not measured is not timed");
}

/* Every chunk stream @i has taken, submitted. */
static void submit_taken(struct aheadfs_window *w, int i)
{
	struct aheadfs_pf_chunk c;

	while (aheadfs_stream_claim(w, i, AHEADFS_LOFF_MAX, TXN, &c))
		aheadfs_window_submitted(w, &c);
}

/*
 * A reader far faster than the device: once its rate is known the window
 * goes to the product at once, not by one doubling per request.  A request
 * about to wait for bytes in flight extends the window a piece at a time
 * (aheadfs_stream_extend()): first what the plan has that nobody took, then
 * beyond its end; and the wait it extended for is no stall.  A stall's
 * measured wait grows the window by what the reader would have read in it.
 */
static void test_bdp_jump_and_extend(void)
{
	static struct aheadfs_window w;
	const u64 ms = 1000000, req = 128 * KIB, piece = 64 * KIB;
	struct aheadfs_pf_req rq = {
		.count = req, .isize = 1ULL << 50, .txn = TXN,
		.win_cap = 64 * MIB, .mem_room = ROOM,
	};
	struct aheadfs_pf_plan p;
	struct aheadfs_pf_chunk c;
	u64 t = 1 * ms, win, ra, held, len;
	s64 delta;
	bool grew;
	int i;

	memset(&w, 0, sizeof(w));
	p = bdp_req(&w, 0, req, t);
	aheadfs_stream_waited(&w, p.stream, p.gen, t, t + 10 * ms,
			      AHEADFS_WAIT_UNMEASURED, t, true, false);
	t += 10 * ms;
	p = bdp_req(&w, req, req, t);
	/* 128 KiB in 0.25 ms: 500 MiB/s; x 10 ms x 2 = 10 MiB. */
	t += ms / 4;
	p = bdp_req(&w, 2 * req, req, t);
	win = w.s[p.stream].win;
	report(p.target > 9 * MIB &&
	       win == p.target / AHEADFS_PF_BDP_HEADROOM + req / 2,
	       "jump: the third request's window is the product without headroom, and half a request (%llu KiB, product %llu KiB)",
	       (unsigned long long)(win >> 10),
	       (unsigned long long)(p.target >> 10));

	/*
	 * Four requests on, the window's bytes are in flight, and a request
	 * extends (AHEADFS_PF_FIRST_REQS << 6 requests ahead at most).
	 */
	for (i = 3; i < 8; i++) {
		t += ms / 4;
		p = bdp_req(&w, i * req, req, t);
	}
	win = w.s[p.stream].win;
	ra = w.s[p.stream].ra_end;
	rq.pos = 7 * req;
	rq.now = t;
	held = w.s[p.stream].claimed;
	len = aheadfs_stream_extend(&w, p.stream, p.gen, &rq, piece, &delta,
				    &grew, &c);
	report(len == piece && c.start == held && !grew && !delta &&
	       w.s[p.stream].ra_end == ra,
	       "extend: first what the plan has that nobody took ([%llu, +%llu) KiB)",
	       (unsigned long long)(c.start >> 10),
	       (unsigned long long)(len >> 10));
	aheadfs_window_submitted(&w, &c);
	submit_taken(&w, p.stream);
	held = w.s[p.stream].gauge;
	len = aheadfs_stream_extend(&w, p.stream, p.gen, &rq, piece, &delta,
				    &grew, &c);
	report(len == piece && c.start == ra && w.s[p.stream].ra_end == ra + piece &&
	       grew && w.s[p.stream].win == ra + piece - 8 * req &&
	       delta == (s64)(w.s[p.stream].gauge - held) && delta > 0,
	       "extend: then a piece beyond the plan's end, the window and gauge grown (%llu -> %llu KiB)",
	       (unsigned long long)(win >> 10),
	       (unsigned long long)(w.s[p.stream].win >> 10));
	aheadfs_window_submitted(&w, &c);
	aheadfs_stream_waited(&w, p.stream, p.gen, t, t + 5 * ms, 5 * ms, 0,
			      false, true);
	report(!w.s[p.stream].stalled,
	       "extend: a wait the window was extended for is not a stall");

	win = w.s[p.stream].win;
	ra = w.s[p.stream].ra_end;
	rq.pos = 2 * req;
	report(!aheadfs_stream_extend(&w, p.stream, p.gen + 1, &rq, piece,
				      &delta, &grew, &c) &&
	       !aheadfs_stream_extend(&w, p.stream, p.gen, &rq, piece, &delta,
				      &grew, &c) &&
	       w.s[p.stream].win == win && w.s[p.stream].ra_end == ra,
	       "extend: not for a replaced stream, nor for a request behind its front");
	rq.pos = 7 * req;
	rq.legacy = true;
	report(!aheadfs_stream_extend(&w, p.stream, p.gen, &rq, piece, &delta,
				      &grew, &c),
	       "extend: not in legacy mode");
	rq.legacy = false;
	rq.win_cap = ra - 8 * req;
	held = w.s[p.stream].gauge;
	report(!aheadfs_stream_extend(&w, p.stream, p.gen, &rq, piece, &delta,
				      &grew, &c) &&
	       w.s[p.stream].win == win && w.s[p.stream].ra_end == ra &&
	       w.s[p.stream].gauge == held && !delta,
	       "extend: not past the cap, and then nothing planned or counted");
	rq.win_cap = 64 * MIB;
	rq.isize = ra;
	report(!aheadfs_stream_extend(&w, p.stream, p.gen, &rq, piece, &delta,
				      &grew, &c) && w.s[p.stream].ra_end == ra,
	       "extend: not past the end of the file");
	rq.isize = 1ULL << 50;
	rq.mem_room = 0;
	report(!aheadfs_stream_extend(&w, p.stream, p.gen, &rq, piece, &delta,
				      &grew, &c) && w.s[p.stream].ra_end == ra,
	       "extend: not past the mount's memory room");
	rq.mem_room = ROOM;

	/*
	 * A stall measured at 1 ms, the reader at 500 MiB/s: short by
	 * 500 KiB x 2, and the window grows by that, not doubled.
	 */
	t += 5 * ms + ms / 4;
	p = bdp_req(&w, 8 * req, req, t);
	aheadfs_stream_waited(&w, p.stream, p.gen, t, t + ms + ms / 4, ms, 0,
			      false, false);
	t += ms + ms / 4;
	win = w.s[p.stream].win;
	p = bdp_req(&w, 9 * req, req, t);
	/*
	 * That interval is timed on 0.25 ms: 500 MiB/s still.  The window,
	 * below the product, also takes its half request towards it.
	 */
	len = w.s[p.stream].rate / 1000 * 2 + req / 2;
	report(w.s[p.stream].rate > 450 * MIB && w.s[p.stream].win > win &&
	       w.s[p.stream].win < p.target &&
	       w.s[p.stream].win - win > len - len / 50 &&
	       w.s[p.stream].win - win < len + len / 50,
	       "stall: a 1 ms wait at %llu MiB/s grows the window by twice what it would have read, and half a request (%llu -> %llu KiB)",
	       (unsigned long long)(w.s[p.stream].rate >> 20),
	       (unsigned long long)(win >> 10),
	       (unsigned long long)(w.s[p.stream].win >> 10));
	aheadfs_stream_waited(&w, p.stream, p.gen, t, t + ms / 4, 1000, 0,
			      false, false);
	t += ms / 4;
	win = w.s[p.stream].win;
	p = bdp_req(&w, 10 * req, req, t);
	report(w.s[p.stream].win == win + req + req / 2,
	       "stall: a wait of 1 us grows it by a request at least, and half a request (%llu -> %llu KiB)",
	       (unsigned long long)(win >> 10),
	       (unsigned long long)(w.s[p.stream].win >> 10));
}

/*
 * A stream's first request extends while it waits, if it starts at the
 * file's start, to AHEADFS_PF_FIRST_REQS requests ahead and no more; one that
 * starts elsewhere and has not been followed yet does not extend.
 */
static void test_extend_first(void)
{
	static struct aheadfs_window w;
	const u64 req = 128 * KIB, piece = 64 * KIB;
	struct aheadfs_pf_req rq = {
		.count = req, .isize = 1ULL << 50, .txn = TXN,
		.win_cap = 64 * MIB, .mem_room = ROOM,
	};
	struct aheadfs_pf_plan p;
	struct aheadfs_pf_chunk c;
	int n = 0;
	s64 delta;
	bool grew;

	memset(&w, 0, sizeof(w));
	p = bdp_req(&w, 0, req, 0);
	submit_taken(&w, p.stream);
	while (aheadfs_stream_extend(&w, p.stream, p.gen, &rq, piece, &delta,
				     &grew, &c) && n < 10000) {
		aheadfs_window_submitted(&w, &c);
		n++;
	}
	report(p.stream >= 0 &&
	       w.s[p.stream].ra_end == req + AHEADFS_PF_FIRST_REQS * req,
	       "first: a read at the file's start extends to %d requests ahead (%llu KiB, %d pieces)",
	       AHEADFS_PF_FIRST_REQS,
	       (unsigned long long)(w.s[p.stream].ra_end >> 10), n);

	/*
	 * A request that follows reads what the first planned; the bound
	 * doubles: 16 requests ahead of its end.
	 */
	p = bdp_req(&w, req, req, 0);
	rq.pos = req;
	submit_taken(&w, p.stream);
	n = 0;
	while (aheadfs_stream_extend(&w, p.stream, p.gen, &rq, piece, &delta,
				     &grew, &c) && n < 10000) {
		aheadfs_window_submitted(&w, &c);
		n++;
	}
	report(w.s[p.stream].ra_end == 2 * req + 2 * AHEADFS_PF_FIRST_REQS * req,
	       "first: the next request extends to twice as many ahead (%llu KiB)",
	       (unsigned long long)(w.s[p.stream].ra_end >> 10));

	memset(&w, 0, sizeof(w));
	p = bdp_req(&w, 64 * MIB, req, 0);
	rq.pos = 64 * MIB;
	submit_taken(&w, p.stream);
	report(p.stream >= 0 &&
	       !aheadfs_stream_extend(&w, p.stream, p.gen, &rq, piece, &delta,
				      &grew, &c),
	       "first: a stream not followed yet, elsewhere in the file, does not extend");
}

/*
 * 3000 random 4 KiB reads of a 64 MiB file, each extending while it waits
 * as far as it may (a slow device): the few that happen to follow one
 * another extend a few requests, and all of it is a small part of what
 * was read (selftests/prefetch.c random_reads_waste_little).
 */
static void test_extend_random(void)
{
	static struct aheadfs_window w;
	unsigned long long seed = 7, size = 64 * MIB, ext = 0;
	struct aheadfs_pf_plan p;
	struct aheadfs_pf_chunk c;
	s64 delta;
	bool grew;
	int i;

	memset(&w, 0, sizeof(w));
	for (i = 0; i < 3000; i++) {
		struct aheadfs_pf_req rq = {
			.count = PG, .isize = size, .txn = TXN,
			.win_cap = WINDOW, .mem_room = ROOM,
		};

		seed = seed * 6364136223846793005ULL +
		       1442695040888963407ULL;
		rq.pos = ((seed >> 20) % (size / PG)) * PG;
		aheadfs_window_plan(&w, &rq, &p);
		if (p.stream < 0)
			continue;
		submit_taken(&w, p.stream);
		while (aheadfs_stream_extend(&w, p.stream, p.gen, &rq,
					     aheadfs_pf_piece(PG, TXN), &delta,
					     &grew, &c)) {
			ext += c.len;
			aheadfs_window_submitted(&w, &c);
		}
	}
	report(ext * 20 <= 3000 * PG,
	       "random: 3000 random reads extend by %llu KiB in all (read %llu KiB)",
	       ext >> 10, (3000 * PG) >> 10);
}

int main(void)
{
	printf("TAP version 13\n");
	test_txn_split();
	test_ahead_sizes();
	test_legacy_tail();
	test_window_growth();
	test_eof();
	test_overflow();
	test_concurrent();
	test_random();
	test_backward_strided();
	test_memory_room();
	test_txn_runtime();
	test_eviction();
	test_worker_lag();
	test_worker_lag_small_reads();
	test_spread_topups();
	test_grain_follows_txn();
	test_repeated_passes();
	test_crossing_chunks();
	test_nfsd_reorder();
	test_bdp();
	test_bdp_jump_and_extend();
	test_extend_first();
	test_extend_random();
	test_rate_without_wait();
	printf("1..%d\n", tests);
	return failed ? 1 : 0;
}
