/* SPDX-License-Identifier: GPL-2.0 */
/*
 * aheadfs readahead window arithmetic: the transaction split, stream
 * detection and the window plan.  Pure logic with no kernel dependency, so
 * that selftests/unit/ compiles it in user space and covers its edge cases
 * in milliseconds; prefetch.c and sched.c call it under their own locks.
 *
 * All offsets are bytes in [0, AHEADFS_LOFF_MAX]; sums saturate there.
 */
#ifndef _AHEADFS_WINDOW_H
#define _AHEADFS_WINDOW_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#include <stdbool.h>
typedef uint64_t u64;
typedef int64_t s64;
typedef uint32_t u32;
#endif

#define AHEADFS_LOFF_MAX	0x7fffffffffffffffULL

/* Streams tracked per open file (nfsd threads share one open file). */
#define AHEADFS_PF_STREAMS	16
/*
 * nfsd's threads serve one client stream's READs concurrently, so they reach
 * the file slightly out of order.  A request this many of the stream's
 * requests before its last one, or beyond its end, still continues it.
 */
#define AHEADFS_PF_REORDER	4
/*
 * A stream that is replaced without ever having been followed by a
 * sequential request is a dud.  While AHEADFS_PF_DUD_LIMIT duds are on
 * record, a new stream must be confirmed by a second, sequential request
 * before anything is prefetched for it: random readers stop prefetch.
 */
#define AHEADFS_PF_DUD_LIMIT	4
#define AHEADFS_PF_DUD_MAX	16
/*
 * The window by measurement (bandwidth-delay product): the reader's rate
 * times the time a chunk takes from submission to completion, with this
 * much headroom (x2) for the variation of both.  The window grows to the
 * product without the headroom at once, and to the headroom half a request
 * per request; by what the reader would have read while it waited for
 * bytes the window submitted (the estimate was short); it halves while it
 * holds more than AHEADFS_PF_BDP_SLACK times the product, and on eviction.
 */
#define AHEADFS_PF_BDP_HEADROOM	2
#define AHEADFS_PF_BDP_SLACK	4
/*
 * The window is topped up whenever a grain is missing from it, and each
 * request submits up to a grain and a half of what is planned and not taken
 * itself (aheadfs_stream_take_own()), so that the window stays full even
 * when the worker gets no CPU; the worker takes what it can of the rest.
 * The grain is aheadfs_pf_grain(): derived from the transaction size, as
 * every size is.
 */
#define AHEADFS_PF_GRAIN_SHIFT	6
#define AHEADFS_NSEC		1000000000ULL
/* A request waited for the device, for a time nobody measured. */
#define AHEADFS_WAIT_UNMEASURED	(~0ULL)

static inline u64 aheadfs_min64(u64 a, u64 b)
{
	return a < b ? a : b;
}

static inline u64 aheadfs_max64(u64 a, u64 b)
{
	return a > b ? a : b;
}

/*
 * The grain of a request of @count bytes under transactions of @txn
 * (aheadfs_txn_size()): the request's size, so that each request adds about
 * what it read and none submits for many (a 128 KiB reader of a 64 MiB
 * window topped it up by 32 MiB once every 256 requests), and for smaller
 * requests a 64th of a transaction (128 KiB at the default txn_kb of 8192:
 * a 4 KiB reader tops up once every 32 reads), so that tiny requests do not
 * submit a page at a time.  A change of txn_kb moves it with the
 * transactions and chunks.
 */
static inline u64 aheadfs_pf_grain(u64 count, u64 txn)
{
	return aheadfs_max64(count, txn >> AHEADFS_PF_GRAIN_SHIFT);
}

/* a * b, saturated at AHEADFS_LOFF_MAX. */
static inline u64 aheadfs_sat_mul(u64 a, u64 b)
{
	if (a && b > AHEADFS_LOFF_MAX / a)
		return AHEADFS_LOFF_MAX;
	return a * b;
}

/* a + b, saturated at AHEADFS_LOFF_MAX. */
static inline u64 aheadfs_sat_add(u64 a, u64 b)
{
	if (a >= AHEADFS_LOFF_MAX || b >= AHEADFS_LOFF_MAX - a)
		return AHEADFS_LOFF_MAX;
	return a + b;
}

/* Number of transactions of @txn bytes that a request of @count takes. */
static inline u64 aheadfs_txn_count(u64 count, u64 txn)
{
	return count / txn + (count % txn ? 1 : 0);
}

/* Length of the transaction that starts @done bytes into the request. */
static inline u64 aheadfs_txn_len(u64 done, u64 count, u64 txn)
{
	return done >= count ? 0 : aheadfs_min64(count - done, txn);
}

struct aheadfs_stream {
	u64 last_pos;	/* start of the stream's last request */
	u64 next;	/* where its next sequential request starts */
	u64 req;	/* size of its last request */
	u64 pf_start;	/* first prefetched byte not yet read or written off */
	u64 ra_end;	/* end of what has been planned for prefetch */
	u64 claimed;	/* end of what has been taken for submission */
	u64 issued;	/* end of what has been submitted, <= claimed */
	u32 subs;	/* chunks taken and not yet submitted */
	u32 gen;	/* which stream of the slot this is */
	u64 win;	/* window: grows on sequential requests */
	u64 gauge;	/* what this stream adds to the mount's window_cur */
	u64 lru;
	u64 t_req;	/* when its last request began (ns; 0: no clock) */
	u64 t_wait;	/* how long that request waited (ns, or UNMEASURED) */
	u64 t_stall;	/* how long its last stall waited (ns; 0: not measured) */
	u64 rate;	/* the reader's rate between requests, bytes/s (EWMA) */
	u64 lat;	/* submission to completion of its own bytes, ns (EWMA) */
	u32 hits;	/* sequential requests that followed the first */
	bool live;
	bool confirmed;	/* prefetch runs for this stream */
	bool stalled;	/* its last request waited for bytes the window sent */
};

struct aheadfs_window {
	struct aheadfs_stream s[AHEADFS_PF_STREAMS];
	u64 tick;
	u32 duds;
	u32 gen;
	int last;	/* the slot of the last request's stream */
};

/* A chunk taken for submission: where, and from which stream. */
struct aheadfs_pf_chunk {
	u64 start, len;
	u64 win;		/* the stream's window then */
	int stream;
	u32 gen;
};

/* What prefetch.c knows about a request when it asks for a plan. */
struct aheadfs_pf_req {
	u64 pos;
	u64 count;
	u64 isize;	/* size of the lower file now */
	u64 txn;	/* aheadfs_txn_size() */
	u64 win_cap;	/* window_kb in bytes, or a memory cgroup's cap */
	u64 mem_room;	/* bytes the mount's windows may still grow by */
	u64 now;	/* ns, any monotonic clock; 0: size by the cap alone */
	bool legacy;
};

/* What to do for the request: issue, meter, write off. */
struct aheadfs_pf_plan {
	u64 issue_start, issue_end;	/* prefetch this range */
	u64 hit_start, hit_end;		/* prefetched earlier, read now */
	u64 wasted;			/* prefetched, never to be read */
	s64 win_delta;			/* change of the mount's window_cur */
	u64 win;			/* the stream's window after this */
	int stream;			/* the request's stream (-1: none) */
	u32 gen;			/* and which one of that slot */
	u64 sync_end;			/* the reader submits up to here */
	u64 grain;			/* the reader submits 1.5 of these */
	u64 target;			/* the product (0: not measured yet) */
	bool resized;			/* the stream's window changed */
	bool grew;			/* ... grew, at a sequential request */
	bool pending;			/* planned bytes nobody has taken */
};

/*
 * The window a stream needs: its reader's rate times the latency of a
 * chunk, with headroom; 0 while either is unmeasured.
 */
static inline u64 aheadfs_stream_bdp(const struct aheadfs_stream *s)
{
	if (!s->rate || !s->lat)
		return 0;
	/* bytes/s x ns / 1e9, as KiB/s x us (saturating), at least 1. */
	return aheadfs_max64(aheadfs_sat_mul(aheadfs_sat_mul(s->rate >> 10,
							     s->lat / 1000),
					     AHEADFS_PF_BDP_HEADROOM << 10) /
			     1000000, 1);
}

static inline u64 aheadfs_ewma(u64 avg, u64 sample)
{
	return avg ? avg - avg / 4 + sample / 4 : sample;
}

/*
 * The reader's rate: the bytes of its last request over the time from that
 * request's start to this one's, less the time it waited for the device (a
 * reader held up by the device is not a slow reader).  A request whose wait
 * was not measured (the copy path's) is not timed: the time it spent
 * copying cannot be told from the time it waited.  Timing the requests
 * that waited matters: while none is timed the window doubles at each
 * request (aheadfs_stream_size()), and a reader whose every request waits
 * a fraction of a latency (the window's first requests) outgrew the product
 * many times over in its first few requests, which paid for all of it.
 */
static inline void aheadfs_stream_clock(struct aheadfs_stream *s, u64 now)
{
	u64 dt;

	if (!now || !s->t_req || now <= s->t_req)
		return;
	dt = now - s->t_req;
	if (s->t_wait >= dt)
		return;
	s->rate = aheadfs_ewma(s->rate, aheadfs_sat_mul(s->req, AHEADFS_NSEC) /
				       (dt - s->t_wait));
}

/*
 * What a stall says the window is short by: the bytes the reader would have
 * read in the time it waited, with the product's headroom.
 */
static inline u64 aheadfs_stream_short(const struct aheadfs_stream *s)
{
	return aheadfs_sat_mul(aheadfs_sat_mul(s->rate >> 10, s->t_stall / 1000),
			       AHEADFS_PF_BDP_HEADROOM << 10) / 1000000;
}

/*
 * Size the window of a stream that moved forward: below the measured
 * product, grow it at once to the product without its headroom (what the
 * reader needs not to wait), so that a reader far faster than the device
 * waits for it once, not once per doubling, and by half a request at each
 * request towards the headroom, which the reader's share of the window
 * (one and a half grains) submits without a request that pays for many
 * and without the worker taking the reader's CPU; when the reader waited
 * for bytes the window had sent, grow it by twice what the reader would
 * have read in that wait (a request at least); halve it while it holds far
 * more than the product.  Unmeasured (no clock, no latency yet, or a stall
 * whose wait was not timed), it doubles up to the cap.
 */
static inline void aheadfs_stream_size(struct aheadfs_stream *s, u64 req)
{
	u64 bdp = aheadfs_stream_bdp(s);

	if (!s->win) {
		s->win = req;
	} else if (!bdp || (s->stalled && !s->t_stall)) {
		s->win = aheadfs_sat_add(s->win, s->win);
	} else {
		if (s->stalled)
			s->win = aheadfs_sat_add(s->win,
						 aheadfs_max64(aheadfs_stream_short(s),
							       req));
		if (s->win < bdp)
			s->win = aheadfs_min64(aheadfs_sat_add(aheadfs_max64(
				s->win, bdp / AHEADFS_PF_BDP_HEADROOM), req / 2),
				bdp);
		else if (!s->stalled && s->win / AHEADFS_PF_BDP_SLACK > bdp)
			s->win /= 2;
	}
	s->stalled = false;
}

static inline bool aheadfs_stream_match(const struct aheadfs_stream *s,
					u64 pos, bool reorder)
{
	u64 slack;

	if (!s->live)
		return false;
	/* Sequential, or resuming after a short read. */
	if (!reorder)
		return pos >= s->last_pos && pos <= s->next;
	/*
	 * Or a request of the stream that came out of order: within
	 * AHEADFS_PF_REORDER requests of it.  A longer forward jump, even
	 * into the window, starts a new stream: another reader may be
	 * starting there (disjoint regions of one file), and strided access
	 * is served like random access.
	 */
	slack = s->req * AHEADFS_PF_REORDER;
	return aheadfs_sat_add(pos, slack) >= s->last_pos &&
	       pos <= aheadfs_sat_add(s->next, slack);
}

/* Bytes a stream had prefetched (submitted) that nobody has read yet. */
static inline u64 aheadfs_stream_unread(const struct aheadfs_stream *s)
{
	u64 e = aheadfs_min64(s->ra_end, s->issued);

	return e > s->pf_start ? e - s->pf_start : 0;
}

/*
 * How well a request at @pos continues stream @s: 3 where the stream's next
 * request starts, 2 within its last request (a short read resumed), 1 within
 * the reorder slack, 0 not at all.
 */
static inline int aheadfs_stream_rank(const struct aheadfs_stream *s, u64 pos)
{
	if (!s->live)
		return 0;
	if (pos == s->next)
		return 3;
	if (aheadfs_stream_match(s, pos, false))
		return 2;
	return aheadfs_stream_match(s, pos, true) ? 1 : 0;
}

/*
 * The stream a request at @pos continues: the best ranked, and of those the
 * most recently used.  A stream a reader left at EOF ends where the next pass's
 * stream reads its last request, and the first match in slot order gave that
 * request, and the gauge at EOF, to the old one.  The last request's stream,
 * continued sequentially (the usual case), is taken at once.
 */
static inline int aheadfs_window_slot(struct aheadfs_window *w, u64 pos,
				      bool *found)
{
	int i, r, best = -1, best_r = 0, victim = 0;

	*found = false;
	if (w->last >= 0 && w->last < AHEADFS_PF_STREAMS &&
	    aheadfs_stream_rank(&w->s[w->last], pos) == 3) {
		*found = true;
		return w->last;
	}
	for (i = 0; i < AHEADFS_PF_STREAMS; i++) {
		r = aheadfs_stream_rank(&w->s[i], pos);
		if (r && (r > best_r ||
			  (r == best_r && w->s[i].lru > w->s[best].lru))) {
			best = i;
			best_r = r;
		}
	}
	if (best >= 0) {
		*found = true;
		return best;
	}
	for (i = 0; i < AHEADFS_PF_STREAMS; i++) {
		if (!w->s[i].live)
			return i;
		if (w->s[i].lru < w->s[victim].lru)
			victim = i;
	}
	return victim;
}

/* Legacy: one chunk of at most one transaction, for this request only. */
static inline void aheadfs_legacy_plan(const struct aheadfs_pf_req *rq,
				       struct aheadfs_pf_plan *p)
{
	u64 pos = aheadfs_min64(rq->pos, AHEADFS_LOFF_MAX);
	u64 len = aheadfs_min64(rq->count, rq->txn);
	u64 end = aheadfs_min64(aheadfs_sat_add(pos, len), rq->isize);

	if (end > pos) {
		p->issue_start = p->hit_start = pos;
		p->issue_end = p->hit_end = end;
		p->win = end - pos;
	}
}

/*
 * What stream @s, whose request ends at @end, holds ahead of its reader:
 * its window, less what memory and the file allow; and the top-up that
 * brings what is planned to that.
 */
static inline void aheadfs_stream_fill(struct aheadfs_stream *s,
				       const struct aheadfs_pf_req *rq,
				       u64 end, struct aheadfs_pf_plan *p)
{
	u64 want, limit, grain, hs, he;

	want = 0;
	if (s->confirmed) {
		/* Memory first: the room left, plus what this stream holds. */
		limit = aheadfs_sat_add(rq->mem_room, s->gauge);
		want = aheadfs_min64(s->win, limit);
		/*
		 * And no more than the file has beyond this request: a stream
		 * at EOF holds nothing, so the streams a reader leaves behind
		 * at the end of each pass over a file do not keep their
		 * windows' worth of the mount's room until they are replaced
		 * (16 passes over a 16 MiB file held 900 MiB, all the room,
		 * and the next pass prefetched 2 KiB at a time).
		 */
		want = aheadfs_min64(want, rq->isize > end ? rq->isize - end : 0);
	}
	p->win_delta += (s64)want - (s64)s->gauge;
	s->gauge = want;
	p->win = want;
	if (!want)
		return;

	/*
	 * Top up to the window whenever a grain of it (or the rest of the
	 * file) is missing ahead of this request's end.  What a steady reader
	 * adds is about its own request, and it submits that itself, right
	 * away: spread over the requests, and never late for want of a CPU
	 * for the worker.
	 */
	grain = aheadfs_min64(want, aheadfs_pf_grain(rq->count, rq->txn));
	hs = aheadfs_max64(s->ra_end, end);
	he = aheadfs_min64(aheadfs_sat_add(end, want), rq->isize);
	p->grain = grain;
	if (he <= hs || (he - hs < grain && he < rq->isize))
		return;
	p->issue_start = hs;
	p->issue_end = he;
	s->ra_end = he;
}

/*
 * Plan one request: find or make its stream, meter what it reads of the
 * stream's earlier prefetch, grow the window and say what to prefetch so
 * that the window covers at least one more request of this size beyond the
 * end of this one (less only when memory is short, or at end of file).
 */
static inline void aheadfs_window_plan(struct aheadfs_window *w,
				       const struct aheadfs_pf_req *rq,
				       struct aheadfs_pf_plan *p)
{
	u64 pos = aheadfs_min64(rq->pos, AHEADFS_LOFF_MAX);
	u64 req = rq->count, end, cap, hs, he, old;
	struct aheadfs_stream *s;
	bool found, fwd;
	int i;

	*p = (struct aheadfs_pf_plan){ .stream = -1 };
	if (!req)
		return;
	if (rq->legacy) {
		aheadfs_legacy_plan(rq, p);
		return;
	}
	end = aheadfs_sat_add(pos, req);
	/* The window may pass window_kb to cover one request beyond this. */
	cap = aheadfs_max64(rq->win_cap, req);

	i = aheadfs_window_slot(w, pos, &found);
	w->last = i;
	s = &w->s[i];
	old = found ? s->win : 0;
	if (!found) {
		if (s->live) {
			p->wasted += aheadfs_stream_unread(s);
			p->win_delta -= (s64)s->gauge;
			if (!s->hits && w->duds < AHEADFS_PF_DUD_MAX)
				w->duds++;
		}
		*s = (struct aheadfs_stream){
			.last_pos = pos, .next = end, .req = req,
			.pf_start = end, .ra_end = end,
			.claimed = end, .issued = end, .gen = ++w->gen,
			.win = req, .live = true, .t_req = rq->now,
			.confirmed = w->duds < AHEADFS_PF_DUD_LIMIT,
		};

		fwd = false;
	} else {
		fwd = pos == s->next;
		/* Only what the worker has submitted was prefetched. */
		hs = aheadfs_max64(pos, s->pf_start);
		he = aheadfs_min64(end, aheadfs_min64(s->ra_end, s->issued));
		if (he > hs) {
			p->hit_start = hs;
			p->hit_end = he;
			s->pf_start = he;
		}
		if (end >= s->ra_end) {
			/* Past the plan: the reader reads all it needs. */
			s->pf_start = s->ra_end = end;
			s->claimed = aheadfs_max64(s->claimed, end);
			s->issued = aheadfs_max64(s->issued, end);
		} else {
			/*
			 * What the plan left unsubmitted in this request is
			 * the reader's to submit (aheadfs_stream_take), and
			 * what lies below it nobody's.
			 */
			s->pf_start = aheadfs_max64(s->pf_start, end);
			s->claimed = aheadfs_max64(s->claimed, pos);
			s->issued = aheadfs_max64(s->issued, pos);
		}
		if (fwd) {
			if (!s->confirmed) {
				s->confirmed = true;
				w->duds /= 2;
				s->pf_start = s->ra_end = end;
				s->win = 0;
			}
			s->hits++;
			aheadfs_stream_clock(s, rq->now);
			aheadfs_stream_size(s, req);
		}
		if (rq->now) {
			s->t_req = rq->now;
			s->t_wait = 0;
		}
		s->last_pos = pos;
		s->req = req;
		s->next = aheadfs_max64(s->next, end);
	}
	s->win = aheadfs_min64(aheadfs_max64(s->win, req), cap);
	p->resized = s->win != old;
	p->grew = found && s->win > old;
	s->lru = ++w->tick;
	/*
	 * The worker submits the window; the reader submits what the next
	 * request of this size would read, if the worker has not yet: the
	 * window's first request, and a worker that fell behind.
	 */
	p->stream = i;
	p->gen = s->gen;
	p->sync_end = aheadfs_sat_add(end, req);
	p->target = aheadfs_stream_bdp(s);

	aheadfs_stream_fill(s, rq, end, p);
	/* Asked here, under the plan's lock, not again by each reader. */
	p->pending = s->claimed < s->ra_end;
}

static inline u64 aheadfs_stream_claim(struct aheadfs_window *w, int i,
				       u64 limit, u64 txn,
				       struct aheadfs_pf_chunk *c)
{
	struct aheadfs_stream *s = &w->s[i];
	u64 e = aheadfs_min64(s->ra_end, limit);

	if (!s->live || s->claimed >= e)
		return 0;
	c->start = s->claimed;
	c->len = aheadfs_min64(e - s->claimed, txn);
	c->win = s->gauge;
	c->stream = i;
	c->gen = s->gen;
	s->claimed += c->len;
	s->subs++;
	return c->len;
}

/*
 * A stream's first request extends its window while it waits to at most
 * this many requests ahead (and one transaction), so that a reader that
 * reads only the start of a file prefetches little more than the kernel's
 * own initial readahead would; each sequential request after it doubles
 * that bound, so that a random reader that happened to follow itself once
 * extends a few requests, not a window.
 */
#define AHEADFS_PF_FIRST_REQS	8

/*
 * The piece a waiting request adds to its window at a time
 * (aheadfs_stream_extend()): a grain, at most an eighth of a transaction,
 * so that the reader is back at most that piece's submission after its
 * bytes came in; a page at least.
 */
#define AHEADFS_PF_PIECE_MIN	4096ULL
static inline u64 aheadfs_pf_piece(u64 count, u64 txn)
{
	return aheadfs_max64(aheadfs_min64(aheadfs_pf_grain(count, txn),
					   txn >> 3), AHEADFS_PF_PIECE_MIN);
}

/*
 * The request @rq of stream @i (generation @gen) is about to wait for bytes
 * still being read in, and its CPU would idle: it submits one more piece of
 * the window (@piece bytes) instead, what the plan has that nobody took
 * first, else a piece added beyond the plan's end.  So a cold stream's
 * first wait fills the window as far as the CPU gets in one device latency,
 * and the window is ahead of the reader by what the device's latency needs
 * without a ramp of requests that each wait for part of it.  Only for a
 * stream known to be sequential (it has been followed), or that starts at
 * the file's start; bounded by AHEADFS_PF_FIRST_REQS requests ahead,
 * doubled at each sequential request; never past the cap, the memory room
 * or the file.
 * Returns the chunk's length (0: nothing to add); @win_delta gets the
 * change of the mount's window_cur, *@grew whether the window grew.
 */
static inline u64 aheadfs_stream_extend(struct aheadfs_window *w, int i,
					u32 gen,
					const struct aheadfs_pf_req *rq,
					u64 piece, s64 *win_delta, bool *grew,
					struct aheadfs_pf_chunk *c)
{
	u64 end = aheadfs_sat_add(rq->pos, rq->count), lim, he;
	struct aheadfs_stream *s;

	*win_delta = 0;
	*grew = false;
	if (i < 0 || i >= AHEADFS_PF_STREAMS || rq->legacy || !piece)
		return 0;
	s = &w->s[i];
	if (!s->live || s->gen != gen || !s->confirmed || s->next != end ||
	    (!s->hits && s->last_pos))
		return 0;
	if (s->claimed < s->ra_end)
		return aheadfs_stream_claim(w, i,
					    aheadfs_sat_add(s->claimed, piece),
					    rq->txn, c);
	lim = aheadfs_min64(aheadfs_max64(rq->win_cap, rq->count),
			    aheadfs_sat_add(rq->mem_room, s->gauge));
	if (!s->hits)
		lim = aheadfs_min64(lim, aheadfs_max64(aheadfs_min64(
			aheadfs_sat_mul(rq->count, AHEADFS_PF_FIRST_REQS),
			rq->txn), rq->count));
	else
		lim = aheadfs_min64(lim, aheadfs_sat_mul(rq->count,
			(u64)AHEADFS_PF_FIRST_REQS << aheadfs_min64(s->hits, 32)));
	he = aheadfs_min64(aheadfs_min64(aheadfs_sat_add(s->ra_end, piece),
					 aheadfs_sat_add(end, lim)),
			   rq->isize);
	if (he <= s->ra_end || s->ra_end < end)
		return 0;
	s->ra_end = he;
	if (he - end > s->gauge) {
		*win_delta = (s64)(he - end) - (s64)s->gauge;
		s->gauge = he - end;
	}
	if (he - end > s->win) {
		s->win = he - end;
		*grew = true;
	}
	return aheadfs_stream_claim(w, i, he, rq->txn, c);
}

/*
 * Whether the worker is still submitting a chunk of stream @i below @limit:
 * the reader waits for it rather than find its next bytes missing.
 */
static inline bool aheadfs_stream_busy(const struct aheadfs_window *w, int i,
				       u64 limit)
{
	const struct aheadfs_stream *s;

	if (i < 0 || i >= AHEADFS_PF_STREAMS)
		return false;
	s = &w->s[i];
	return s->live && s->subs &&
	       s->issued < aheadfs_min64(s->claimed, limit);
}

/*
 * The reader's next chunk, while what stream @i planned below @need is not
 * all taken: at most @txn bytes of what nobody has taken, below @limit
 * (>= @need).  Returns its length (0: nothing left).  Called when the
 * stream is not busy below @need, so chunks are submitted in order.
 */
static inline u64 aheadfs_stream_take(struct aheadfs_window *w, int i,
				      u64 need, u64 limit, u64 txn,
				      struct aheadfs_pf_chunk *c)
{
	if (i < 0 || i >= AHEADFS_PF_STREAMS)
		return 0;
	if (w->s[i].claimed >= aheadfs_min64(need, w->s[i].ra_end))
		return 0;
	return aheadfs_stream_claim(w, i, aheadfs_max64(need, limit), txn, c);
}

/*
 * The reader's next chunk of its share of the window: what nobody has taken
 * yet, from the first such byte, at most @txn bytes and what is left of
 * *@budget (which it decreases), whatever the worker is still submitting
 * below it.  Returns its length (0: nothing left).
 */
static inline u64 aheadfs_stream_take_own(struct aheadfs_window *w, int i,
					  u64 *budget, u64 txn,
					  struct aheadfs_pf_chunk *c)
{
	u64 len;

	if (i < 0 || i >= AHEADFS_PF_STREAMS || !*budget)
		return 0;
	len = aheadfs_stream_claim(w, i,
				   aheadfs_sat_add(w->s[i].claimed, *budget),
				   txn, c);
	*budget -= len;
	return len;
}

/* Whether stream @i has planned bytes nobody has taken: the worker's. */
static inline bool aheadfs_stream_pending(const struct aheadfs_window *w,
					  int i)
{
	const struct aheadfs_stream *s;

	if (i < 0 || i >= AHEADFS_PF_STREAMS)
		return false;
	s = &w->s[i];
	return s->live && s->claimed < s->ra_end;
}

/*
 * The worker's next chunk: at most @txn bytes of the planned but not yet
 * taken part of a stream, taking the streams round robin from *@cursor.
 * Returns its length (0: nothing left).
 */
static inline u64 aheadfs_window_next_chunk(struct aheadfs_window *w,
					    u64 txn, unsigned int *cursor,
					    struct aheadfs_pf_chunk *c)
{
	unsigned int n;

	for (n = 0; n < AHEADFS_PF_STREAMS; n++) {
		int i = (*cursor + n) % AHEADFS_PF_STREAMS;

		if (aheadfs_stream_claim(w, i, AHEADFS_LOFF_MAX, txn, c)) {
			*cursor = (i + 1) % AHEADFS_PF_STREAMS;
			return c->len;
		}
	}
	return 0;
}

/*
 * Chunk @c has been submitted.  What is submitted counts without a gap: a
 * chunk done before one below it (the reader's and the worker's may cross)
 * counts once no chunk of the stream is left in submission.
 */
static inline void aheadfs_window_submitted(struct aheadfs_window *w,
					    const struct aheadfs_pf_chunk *c)
{
	struct aheadfs_stream *s = &w->s[c->stream];

	if (!s->live || s->gen != c->gen)
		return;
	if (!--s->subs)
		s->issued = s->claimed;
	else if (s->issued >= c->start)
		s->issued = aheadfs_max64(s->issued, c->start + c->len);
}

/*
 * The request of stream @i (generation @gen) that began at @t0 and ended at
 * @t1 had waited for the device, @wait ns of it (or AHEADFS_WAIT_UNMEASURED):
 * for @own bytes that the reader itself submitted at @t_own (they were
 * absent), or else for bytes the window had submitted (a stall: the window
 * is short, unless it grew for this wait already, @grown:
 * aheadfs_stream_extend()).  A read of its own absent bytes times a chunk
 * from submission to completion: the latency sample.
 */
static inline void aheadfs_stream_waited(struct aheadfs_window *w, int i,
					 u32 gen, u64 t0, u64 t1, u64 wait,
					 u64 t_own, bool own, bool grown)
{
	struct aheadfs_stream *s;

	if (i < 0 || i >= AHEADFS_PF_STREAMS || !t0 || t1 < t0)
		return;
	s = &w->s[i];
	if (!s->live || s->gen != gen)
		return;
	if (s->t_req == t0)
		s->t_wait = wait == AHEADFS_WAIT_UNMEASURED ? wait :
			    aheadfs_min64(wait, t1 - t0);
	if (own && t_own && t1 > t_own)
		s->lat = aheadfs_ewma(s->lat, t1 - t_own);
	else if (!own && !grown) {
		s->stalled = true;
		s->t_stall = wait == AHEADFS_WAIT_UNMEASURED ? 0 :
			     aheadfs_min64(wait, t1 - t0);
	}
}

/* What stream @i had prefetched was evicted before it was read: halve. */
static inline void aheadfs_stream_evicted(struct aheadfs_window *w, int i,
					  u32 gen, u64 req)
{
	struct aheadfs_stream *s;

	if (i < 0 || i >= AHEADFS_PF_STREAMS)
		return;
	s = &w->s[i];
	if (s->live && s->gen == gen)
		s->win = aheadfs_max64(s->win / 2, req);
}

/* Close: every stream's unread prefetch is wasted.  Returns the bytes. */
static inline u64 aheadfs_window_drop(struct aheadfs_window *w,
				      s64 *win_delta)
{
	u64 wasted = 0;
	int i;

	*win_delta = 0;
	for (i = 0; i < AHEADFS_PF_STREAMS; i++) {
		struct aheadfs_stream *s = &w->s[i];

		if (!s->live)
			continue;
		wasted += aheadfs_stream_unread(s);
		*win_delta -= (s64)s->gauge;
		s->live = false;
		s->gauge = 0;
	}
	return wasted;
}

#endif /* _AHEADFS_WINDOW_H */
