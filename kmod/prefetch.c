// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs readahead window: per-stream state of each open file, issuing the
 * prefetch chunks into the lower file's page cache (the reader's own and
 * next bytes here, the rest by a worker), and metering what the page cache
 * holds of a range and what became of the prefetch.  The arithmetic lives in window.h; this file adds the locking,
 * the memory budget, the I/O and the counters.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/pagevec.h>
#include <linux/backing-dev.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/file.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/fadvise.h>
#include "aheadfs.h"
#include "window.h"
#include "trace.h"

/*
 * Per open file.  The reader plans the window under @lock; @work submits the
 * planned chunks, so that the reader allocates and submits only what it
 * reads itself.  @work never outlives the file: release cancels it.
 */
struct aheadfs_pf_state {
	spinlock_t lock;		/* protects w, cursor and dying */
	struct aheadfs_window w;
	unsigned int cursor;		/* the worker's next stream */
	bool dying;			/* release: submit nothing more */
	struct file *file;		/* ours; valid while @work may run */
	struct work_struct work;
	wait_queue_head_t submitted;	/* a chunk of a stream went out */
	/*
	 * The memory cgroup of the reader that made the streams: the worker
	 * charges the pages it adds to it, as the reader's own reads would
	 * be, so a window never escapes its reader's memory.max.
	 */
	struct mem_cgroup *memcg;
};

/* Chunks one run of the worker submits before it yields the CPU. */
#define AHEADFS_PF_BATCH	4

static struct workqueue_struct *aheadfs_pf_wq;
static void pf_work_fn(struct work_struct *work);

/*
 * In every mode but `kernel`, the lower file reads exactly what it is asked
 * for (FMODE_RANDOM: no readahead of its own, large reads of the request).
 * Then the present/absent counters measure our window alone, and a request
 * that finds bytes absent costs one read of the missing range, as on the
 * slow path of the story; `off` is then really off.  `kernel` gives the
 * lower its readahead back.
 */
static void lower_readahead(struct file *file, bool ours)
{
	struct aheadfs_file_info *fi = AHEADFS_F(file);
	struct file *lower = aheadfs_lower_file(file);
	bool random = READ_ONCE(lower->f_mode) & FMODE_RANDOM;

	/*
	 * A file without its information stands for set_random: a lower
	 * FMODE_RANDOM that a caller's fadvise set makes the information
	 * and says so (aheadfs_prefetch_advised()).
	 */
	if (ours == random || (!ours && fi && !fi->set_random))
		return;
	spin_lock(&lower->f_lock);
	if (ours)
		lower->f_mode |= FMODE_RANDOM;
	else
		lower->f_mode &= ~FMODE_RANDOM;
	if (fi)
		fi->set_random = ours;
	spin_unlock(&lower->f_lock);
}

/*
 * The caller's fadvise(2) of @advice reached the lower file: a
 * POSIX_FADV_RANDOM is the caller's own FMODE_RANDOM there, which a change
 * of mode to `kernel` must leave.  Without memory for the file's
 * information, such a change clears it, as if aheadfs had set it.
 */
void aheadfs_prefetch_advised(struct file *file, int advice)
{
	struct aheadfs_file_info *fi;
	struct file *lower;

	if (advice != POSIX_FADV_RANDOM || !S_ISREG(file_inode(file)->i_mode))
		return;
	fi = aheadfs_file_info(file, GFP_KERNEL_ACCOUNT);
	if (!fi)
		return;
	lower = fi->lower;
	spin_lock(&lower->f_lock);
	if (lower->f_mode & FMODE_RANDOM)
		fi->set_random = false;
	spin_unlock(&lower->f_lock);
}

/*
 * A file opened for reading: the lower's readahead follows the mode from
 * the start (mmap and splice read the lower directly).  The lower file was
 * opened for this file and nobody else holds it yet, so its f_mode is set
 * without f_lock; later changes of mode go through lower_readahead().  The
 * streams come with the first read the window plans (pf_get()): an open
 * and close, as a metadata load does them, allocates and cancels nothing.
 */
void aheadfs_prefetch_open(struct file *file)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(file_inode(file)->i_sb);
	struct aheadfs_file_info *fi = AHEADFS_F(file);
	struct file *lower = aheadfs_lower_file(file);

	if (READ_ONCE(sbi->prefetch_mode) == AHEADFS_PF_KERNEL ||
	    (lower->f_mode & FMODE_RANDOM))
		return;
	lower->f_mode |= FMODE_RANDOM;
	if (fi)
		fi->set_random = true;
}

/*
 * The file's prefetch streams, made by its first read that needs them;
 * concurrent first reads (pread(2) from threads) agree on one.  NULL with
 * no memory: the read goes on without a window.
 */
static struct aheadfs_pf_state *pf_get(struct file *file, bool nowait)
{
	/* Charged to the reader's memory cgroup, as the open file is. */
	gfp_t gfp = nowait ? GFP_NOWAIT | __GFP_ACCOUNT : GFP_KERNEL_ACCOUNT;
	struct aheadfs_file_info *fi = aheadfs_file_info(file, gfp);
	struct aheadfs_pf_state *pf, *old;

	if (!fi)
		return NULL;
	pf = READ_ONCE(fi->pf);
	if (pf)
		return pf;
	pf = kzalloc(sizeof(*pf), gfp);
	if (!pf)
		return NULL;
	spin_lock_init(&pf->lock);
	pf->file = file;
	INIT_WORK(&pf->work, pf_work_fn);
	init_waitqueue_head(&pf->submitted);
	pf->memcg = get_mem_cgroup_from_mm(current->mm);
	old = cmpxchg(&fi->pf, NULL, pf);
	if (old) {
		mem_cgroup_put(pf->memcg);
		kfree(pf);
		return old;
	}
	return pf;
}

static void window_gauge(struct aheadfs_sb_info *sbi, s64 delta)
{
	s64 cur, peak;

	if (!delta)
		return;
	cur = atomic64_add_return(delta, &sbi->window_cur);
	peak = atomic64_read(&sbi->window_peak);
	while (cur > peak) {
		s64 old = atomic64_cmpxchg(&sbi->window_peak, peak, cur);

		if (old == peak)
			break;
		peak = old;
	}
}

void aheadfs_prefetch_release(struct file *file)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(file_inode(file)->i_sb);
	struct aheadfs_file_info *fi = AHEADFS_F(file);
	struct aheadfs_pf_state *pf = fi ? fi->pf : NULL;
	u64 wasted;
	s64 delta;

	/* Never read through the window: nothing was made. */
	if (!pf)
		return;
	/*
	 * A closed file submits nothing more: the worker stops at its next
	 * chunk, and what it had not submitted is neither read nor wasted.
	 */
	spin_lock(&pf->lock);
	pf->dying = true;
	spin_unlock(&pf->lock);
	cancel_work_sync(&pf->work);
	/* The last reference is gone and the worker too: the lock is ours. */
	wasted = aheadfs_window_drop(&pf->w, &delta);
	aheadfs_stat_add(sbi, AHEADFS_STAT_prefetch_wasted_bytes, wasted);
	window_gauge(sbi, delta);
	fi->pf = NULL;
	mem_cgroup_put(pf->memcg);
	kfree(pf);
}

/* Pages looked up per RCU section, so a huge range cannot stall a CPU. */
#define PRESENCE_BATCH	1024

/*
 * Sort the bytes of [pos, pos + len) by what their pages are in @mapping: up
 * to date (present), in the page cache but not up to date (inflight: a read
 * of them has been submitted and the reader would wait for it), or not there
 * (absent; shadow entries of evicted pages are absent), noting an absent
 * byte before a cached one.  The folio flags are read under RCU without a
 * reference: a folio freed meanwhile gives a stale verdict on one page of a
 * statistic, never a wrong access (struct folio memory is never freed).
 */
void aheadfs_cache_presence(struct address_space *mapping, loff_t pos,
			    u64 len, struct aheadfs_presence *pr)
{
	pgoff_t index = pos >> PAGE_SHIFT;
	pgoff_t last;
	u64 end;

	if (!len || pos < 0)
		return;
	end = aheadfs_sat_add(pos, len);
	last = (end - 1) >> PAGE_SHIFT;
	while (index <= last) {
		pgoff_t stop = min_t(pgoff_t, last, index + PRESENCE_BATCH - 1);
		XA_STATE(xas, &mapping->i_pages, index);
		void *entry;

		rcu_read_lock();
		for (; index <= stop; index++) {
			u64 a = max_t(u64, (u64)index << PAGE_SHIFT, pos);
			u64 b = min_t(u64, ((u64)index + 1) << PAGE_SHIFT, end);

			entry = xas_next(&xas);
			if (!entry || xa_is_value(entry)) {
				if (!pr->absent)
					pr->first_absent = a;
				pr->absent += b - a;
				continue;
			}
			if (pr->absent)
				pr->hole_first = true;
			/* A retry entry: the folio is being split or moved. */
			if (!xa_is_internal(entry) &&
			    folio_test_uptodate((struct folio *)entry))
				pr->present += b - a;
			else
				pr->inflight += b - a;
		}
		rcu_read_unlock();
		cond_resched();
	}
}

/*
 * Wait until the folios of [pos, pos + len) that are under I/O (locked and
 * not up to date: a read the window, the lower or another reader submitted)
 * are read in, before the lower's read copies them: the time a reader waits
 * for the device, measured where it is spent.  Returns that time in ns, 0 if
 * no folio was under I/O.  A folio whose read failed is left to the lower's
 * read, which retries it and returns the error.  Stops at a fatal signal,
 * which the lower's read then sees too.
 */
u64 aheadfs_wait_reads(struct address_space *mapping, loff_t pos, u64 len)
{
	struct folio_batch fbatch;
	pgoff_t index, last;
	bool killed = false;
	u64 t0 = 0;
	unsigned int i;

	if (!len || pos < 0)
		return 0;
	index = pos >> PAGE_SHIFT;
	last = (aheadfs_sat_add(pos, len) - 1) >> PAGE_SHIFT;
	folio_batch_init(&fbatch);
	while (!killed && filemap_get_folios(mapping, &index, last, &fbatch)) {
		for (i = 0; i < folio_batch_count(&fbatch); i++) {
			struct folio *folio = fbatch.folios[i];

			if (folio_test_uptodate(folio) ||
			    !folio_test_locked(folio))
				continue;
			if (!t0)
				t0 = ktime_get_ns();
			if (folio_wait_locked_killable(folio)) {
				killed = true;
				break;
			}
		}
		folio_batch_release(&fbatch);
		cond_resched();
	}
	return t0 ? ktime_get_ns() - t0 : 0;
}

/* Lowers without a readahead path (tmpfs, DAX) have nothing to prefetch. */
static bool can_prefetch(struct file *lower)
{
	struct address_space *mapping = lower->f_mapping;
	struct inode *inode = mapping->host;

	if (IS_DAX(inode) || inode_to_bdi(inode) == &noop_backing_dev_info)
		return false;
	return mapping->a_ops->readahead || mapping->a_ops->read_folio;
}

/*
 * How far the mount's windows may still grow: half of MemAvailable less the
 * windows already held.  Prefetched pages are reclaimable, so reclaim would
 * otherwise evict what the readers have yet to read; the window yields
 * instead, and allocations inside readahead do not retry (readahead_gfp_mask).
 */
static u64 mem_room(struct aheadfs_sb_info *sbi)
{
	u64 budget = ((u64)si_mem_available() << PAGE_SHIFT) / 2;
	s64 held = atomic64_read(&sbi->window_cur);

	if (held < 0)
		held = 0;
	return budget > (u64)held ? budget - held : 0;
}

/*
 * The most one window of @pf may hold: half of the smallest memory.max of
 * the memory cgroup its pages are charged to (pf_work_fn()) and of that
 * cgroup's ancestors, as the mount's windows together take at most half of
 * MemAvailable.  A window larger than its cgroup can hold would be
 * reclaimed by the cgroup before it is read.
 */
static u64 memcg_cap(const struct aheadfs_pf_state *pf)
{
	u64 pages = U64_MAX;
#ifdef CONFIG_MEMCG
	struct mem_cgroup *memcg;

	for (memcg = pf->memcg; memcg; memcg = parent_mem_cgroup(memcg))
		pages = min_t(u64, pages, READ_ONCE(memcg->memory.max));
#endif
	return pages == U64_MAX ? U64_MAX : (pages << PAGE_SHIFT) / 2;
}

/*
 * Read [pos, pos + len) into the lower page cache as one readahead request.
 * page_cache_ra_unbounded() adds the missing folios (locked until their read
 * completes) and submits the reads without waiting for them; pages already
 * cached are skipped.
 */
static void read_ahead(struct file *lower, u64 pos, u64 len)
{
	pgoff_t first = pos >> PAGE_SHIFT;
	DEFINE_READAHEAD(ractl, lower, &lower->f_ra, lower->f_mapping, first);

	page_cache_ra_unbounded(&ractl,
				((pos + len - 1) >> PAGE_SHIFT) - first + 1, 0);
}

static void issue_chunk(struct file *file, struct file *lower, u64 pos,
			u64 len, u64 window)
{
	struct super_block *sb = file_inode(file)->i_sb;
	struct aheadfs_sb_info *sbi = AHEADFS_SB(sb);

	read_ahead(lower, pos, len);
	aheadfs_stat_inc(sbi, AHEADFS_STAT_prefetch_chunks);
	aheadfs_stat_add(sbi, AHEADFS_STAT_prefetch_bytes, len);
	trace_aheadfs_prefetch(file_inode(file)->i_ino, pos, len, window,
			       sb->s_dev, file->f_path.dentry,
			       file->f_path.dentry->d_name.name);
}

/* Legacy: the reader submits its one chunk itself, in chunks of @txn. */
static void issue(struct file *file, struct file *lower, u64 start, u64 end,
		  u64 txn, u64 window)
{
	u64 pos, len;

	for (pos = start; pos < end; pos += len) {
		len = min(end - pos, txn);
		issue_chunk(file, lower, pos, len, window);
		if (fatal_signal_pending(current))
			break;
	}
}

/* Chunk @c is out: the stream counts it, a reader waiting for it goes on. */
static void chunk_done(struct aheadfs_pf_state *pf,
		       const struct aheadfs_pf_chunk *c)
{
	spin_lock(&pf->lock);
	aheadfs_window_submitted(&pf->w, c);
	spin_unlock(&pf->lock);
	wake_up_all(&pf->submitted);
}

/*
 * The worker: submits the planned chunks of every stream of the file, round
 * robin, AHEADFS_PF_BATCH per run, and queues itself again for the rest, so
 * that one file's window never holds a worker for long and release waits
 * for at most one batch.
 */
static void pf_work_fn(struct work_struct *work)
{
	struct aheadfs_pf_state *pf = container_of(work, struct aheadfs_pf_state,
						   work);
	struct file *file = pf->file;
	struct aheadfs_sb_info *sbi = AHEADFS_SB(file_inode(file)->i_sb);
	struct file *lower = aheadfs_lower_file(file);
	u64 txn = aheadfs_txn_size(sbi);
	struct mem_cgroup *old_memcg = set_active_memcg(pf->memcg);
	struct aheadfs_pf_chunk c;
	u64 len;
	int n;

	for (n = 0; n < AHEADFS_PF_BATCH; n++) {
		spin_lock(&pf->lock);
		len = pf->dying ? 0 : aheadfs_window_next_chunk(&pf->w, txn,
								&pf->cursor,
								&c);
		spin_unlock(&pf->lock);
		if (!len)
			goto out;
		issue_chunk(file, lower, c.start, c.len, c.win);
		chunk_done(pf, &c);
	}
	queue_work(aheadfs_pf_wq, work);
out:
	set_active_memcg(old_memcg);
}

/*
 * The part of the reader's own request that is not in the page cache (from
 * its first absent page; pages already cached are skipped), submitted in
 * transactions of @txn before the reader waits on it: the lower file
 * (random access, see lower_readahead()) would read it in pieces of its
 * maximum I/O size, waiting for each before asking for the next.
 */
static void issue_demand(struct file *file, struct file *lower, u64 start,
			 u64 end, u64 txn)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(file_inode(file)->i_sb);
	u64 pos, len;

	for (pos = start; pos < end; pos += len) {
		len = min(end - pos, txn);
		read_ahead(lower, pos, len);
		aheadfs_stat_inc(sbi, AHEADFS_STAT_prefetch_demand_chunks);
		aheadfs_stat_add(sbi, AHEADFS_STAT_prefetch_demand_bytes, len);
		if (fatal_signal_pending(current))
			break;
	}
}

static bool stream_busy(struct aheadfs_pf_state *pf, int i, u64 limit)
{
	bool busy;

	spin_lock(&pf->lock);
	busy = !pf->dying && aheadfs_stream_busy(&pf->w, i, limit);
	spin_unlock(&pf->lock);
	return busy;
}

/*
 * What the next request of the stream will read (up to @need), where the
 * worker has not submitted it yet (the window's first request, or a worker
 * behind): the reader submits it, and what else the plan has up to @limit,
 * after its own bytes, or waits for the worker to finish the chunk it holds
 * there.  Either way the next request finds its bytes in the page cache.
 */
static void issue_next(struct file *file, struct file *lower,
		       struct aheadfs_pf_state *pf,
		       const struct aheadfs_pf_plan *plan, u64 need, u64 limit,
		       u64 txn)
{
	struct aheadfs_pf_chunk c;
	u64 len;

	for (;;) {
		if (wait_event_killable(pf->submitted,
					!stream_busy(pf, plan->stream, need)))
			return;
		spin_lock(&pf->lock);
		len = pf->dying ? 0 : aheadfs_stream_take(&pf->w, plan->stream,
							  need, limit, txn,
							  &c);
		spin_unlock(&pf->lock);
		if (!len)
			return;
		issue_chunk(file, lower, c.start, c.len, c.win);
		chunk_done(pf, &c);
	}
}

/*
 * The reader's share of the window: up to one and a half grains (about a
 * request and a half) of what is planned and nobody has taken, submitted
 * without waiting for the worker, whatever chunk it holds below.  A steady
 * reader tops up its window this way by what it read; one whose worker gets
 * no CPU (a single or busy one) catches up with the plan by half a request
 * each time, and a window that grows costs no request much more than its
 * own share.
 * Returns whether the stream still has planned bytes nobody took, for the
 * worker.
 */
static bool issue_own(struct file *file, struct file *lower,
		      struct aheadfs_pf_state *pf,
		      const struct aheadfs_pf_plan *plan, u64 txn)
{
	u64 budget = plan->grain + plan->grain / 2;
	struct aheadfs_pf_chunk c;
	bool pending;
	u64 len;

	for (;;) {
		spin_lock(&pf->lock);
		len = pf->dying ? 0 : aheadfs_stream_take_own(&pf->w,
							      plan->stream,
							      &budget, txn,
							      &c);
		pending = !len && aheadfs_stream_pending(&pf->w, plan->stream);
		spin_unlock(&pf->lock);
		if (!len)
			return pending;
		issue_chunk(file, lower, c.start, c.len, c.win);
		chunk_done(pf, &c);
		if (fatal_signal_pending(current))
			return true;
	}
}

/*
 * Whether the last page of [pos, pos + len) is still being read in (locked
 * and not up to date): the request would wait for it.  Read under RCU
 * without a reference, as aheadfs_cache_presence() does.
 */
static bool reading_in(struct address_space *mapping, loff_t pos, u64 len)
{
	struct folio *folio;
	bool busy;

	rcu_read_lock();
	folio = xa_load(&mapping->i_pages,
			(aheadfs_sat_add(pos, len) - 1) >> PAGE_SHIFT);
	busy = folio && !xa_is_value(folio) && !folio_test_uptodate(folio) &&
	       folio_test_locked(folio);
	rcu_read_unlock();
	return busy;
}

/* A stream's window changed: the mount's gauges and the tracepoint. */
static void window_sized(struct file *file, struct aheadfs_pf_state *pf,
			 const struct aheadfs_pf_plan *plan, u64 pos)
{
	struct super_block *sb = file_inode(file)->i_sb;
	struct aheadfs_sb_info *sbi = AHEADFS_SB(sb);
	u64 rate = 0, lat = 0;

	if (plan->stream >= 0) {
		spin_lock(&pf->lock);
		rate = pf->w.s[plan->stream].rate;
		lat = pf->w.s[plan->stream].lat;
		spin_unlock(&pf->lock);
	}
	WRITE_ONCE(sbi->window_last, plan->win);
	WRITE_ONCE(sbi->window_target, plan->target);
	WRITE_ONCE(sbi->window_rate, rate);
	WRITE_ONCE(sbi->window_latency_ns, lat);
	trace_aheadfs_window(file_inode(file)->i_ino, pos, plan->win,
			     plan->target, rate, lat, sb->s_dev);
}

/*
 * The request of @tk has been read, after waiting @wait_ns for the device
 * (AHEADFS_WAIT_UNMEASURED: for a time not measured).  If it waited, the
 * window learns it: the latency of its own bytes, which it submitted
 * itself, or a stall on bytes the window submitted too late; and the
 * reader's rate is timed without the wait, nor the time it spent extending
 * the window instead of waiting.
 */
void aheadfs_prefetch_done(struct file *file,
			   const struct aheadfs_pf_ticket *tk,
			   const struct aheadfs_presence *pr, u64 wait_ns)
{
	struct aheadfs_file_info *fi = AHEADFS_F(file);
	struct aheadfs_pf_state *pf = fi ? READ_ONCE(fi->pf) : NULL;
	u64 t1;

	if (!pf || !tk || !tk->t0 || !(pr->absent || pr->inflight))
		return;
	t1 = ktime_get_ns();
	/* Extending the window took the time it would have waited. */
	if (wait_ns != AHEADFS_WAIT_UNMEASURED)
		wait_ns += tk->t_idle;
	spin_lock(&pf->lock);
	aheadfs_stream_waited(&pf->w, tk->stream, tk->gen, tk->t0, t1, wait_ns,
			      tk->t_own, pr->absent != 0, tk->grown);
	spin_unlock(&pf->lock);
}

/*
 * The request of @plan is about to wait for its bytes: while they are still
 * being read in, it submits the window a piece at a time
 * (aheadfs_stream_extend()) on the CPU it would leave idle.  Returns whether
 * the window grew.
 */
static bool issue_idle(struct file *file, struct file *lower,
		       struct aheadfs_pf_state *pf,
		       const struct aheadfs_pf_plan *plan,
		       struct aheadfs_pf_req *rq)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(file_inode(file)->i_sb);
	u64 piece = aheadfs_pf_piece(rq->count, rq->txn);
	struct aheadfs_pf_plan sized = *plan;
	struct aheadfs_pf_chunk c;
	bool grew = false, any = false;
	s64 delta = 0;
	u64 len;

	while (reading_in(lower->f_mapping, rq->pos, rq->count)) {
		rq->mem_room = mem_room(sbi);
		/* A truncate during the wait ends the window there. */
		rq->isize = i_size_read(file_inode(lower));
		grew = false;
		delta = 0;
		spin_lock(&pf->lock);
		len = pf->dying ? 0 : aheadfs_stream_extend(&pf->w, plan->stream,
							    plan->gen, rq,
							    piece, &delta,
							    &grew, &c);
		if (grew) {
			sized.win = pf->w.s[plan->stream].gauge;
			sized.target = aheadfs_stream_bdp(&pf->w.s[plan->stream]);
		}
		spin_unlock(&pf->lock);
		window_gauge(sbi, delta);
		any |= grew;
		if (!len)
			break;
		issue_chunk(file, lower, c.start, c.len, c.win);
		chunk_done(pf, &c);
		if (fatal_signal_pending(current))
			break;
	}
	if (any)
		window_sized(file, pf, &sized, rq->pos);
	return any;
}

int aheadfs_prefetch_init(void)
{
	aheadfs_pf_wq = alloc_workqueue("aheadfs_pf", WQ_UNBOUND, 0);
	return aheadfs_pf_wq ? 0 : -ENOMEM;
}

/* Release cancelled every file's work: nothing is left to drain. */
void aheadfs_prefetch_exit(void)
{
	destroy_workqueue(aheadfs_pf_wq);
}

/*
 * Plan the window for a read of [pos, pos + count) and have it submitted.
 * In ahead mode the request's own bytes are metered into @meter (if not
 * NULL) before its missing part is submitted, so that the counters say
 * what the window had ready; returns whether it metered them.  @now is the
 * caller's ktime_get_ns() at the request's start if it has read it (a traced
 * read), else 0.
 */
bool aheadfs_prefetch_request(struct file *file, loff_t pos, size_t count,
			      bool nowait, u64 now,
			      struct aheadfs_presence *meter,
			      struct aheadfs_pf_ticket *tk)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(file_inode(file)->i_sb);
	unsigned int mode = READ_ONCE(sbi->prefetch_mode);
	struct file *lower = aheadfs_lower_file(file);
	struct aheadfs_presence pr = {}, own = {};
	struct aheadfs_pf_state *pf;
	struct aheadfs_pf_plan plan;
	struct aheadfs_pf_req rq;
	loff_t isize;

	if (tk)
		*tk = (struct aheadfs_pf_ticket){ .stream = -1 };
	if (!S_ISREG(file_inode(file)->i_mode) || !count || pos < 0)
		return false;
	lower_readahead(file, mode != AHEADFS_PF_KERNEL);
	if (mode != AHEADFS_PF_AHEAD && mode != AHEADFS_PF_LEGACY)
		return false;
	if (!can_prefetch(lower))
		return false;

	isize = i_size_read(file_inode(lower));
	/* Nothing to fetch past the end; nor a window sized by that part. */
	if (pos >= isize)
		return false;
	pf = pf_get(file, nowait);
	if (!pf)
		return false;
	rq = (struct aheadfs_pf_req){
		.pos = pos,
		.count = min_t(u64, count, isize - pos),
		.isize = isize,
		.txn = aheadfs_txn_size(sbi),
		.win_cap = min((u64)READ_ONCE(sbi->window_kb) << 10,
			       memcg_cap(pf)),
		.legacy = mode == AHEADFS_PF_LEGACY,
	};
	if (!rq.legacy) {
		rq.mem_room = mem_room(sbi);
		rq.now = now ?: ktime_get_ns();
	}
	spin_lock(&pf->lock);
	aheadfs_window_plan(&pf->w, &rq, &plan);
	spin_unlock(&pf->lock);

	window_gauge(sbi, plan.win_delta);
	if (plan.resized)
		window_sized(file, pf, &plan, rq.pos);
	if (tk && plan.stream >= 0)
		*tk = (struct aheadfs_pf_ticket){
			.t0 = rq.now, .stream = plan.stream, .gen = plan.gen,
		};
	/* The old prefetcher: the reader submits, and only its txn. */
	if (rq.legacy && plan.issue_end > plan.issue_start && !nowait)
		issue(file, lower, plan.issue_start, plan.issue_end, rq.txn,
		      plan.win);
	/* What this request reads of earlier prefetch: still there, or lost. */
	if (plan.hit_end > plan.hit_start) {
		aheadfs_cache_presence(lower->f_mapping, plan.hit_start,
				       plan.hit_end - plan.hit_start, &pr);
		aheadfs_stat_add(sbi, AHEADFS_STAT_prefetch_hit_bytes,
				 pr.present + pr.inflight);
		plan.wasted += pr.absent;
		/* Evicted before it was read: the window is too big. */
		if (pr.absent && plan.stream >= 0) {
			spin_lock(&pf->lock);
			aheadfs_stream_evicted(&pf->w, plan.stream, plan.gen,
					       rq.count);
			spin_unlock(&pf->lock);
		}
	}
	/*
	 * Ahead: what the window planned for this request and the worker has
	 * not submitted yet (a worker behind, or a non-blocking attempt before
	 * this one that left everything to it) is submitted now: planned, so
	 * not absent, but the request will wait for it (inflight).  Then the
	 * reader's own missing bytes, then the next request's range; the
	 * worker takes the window beyond.  A reader that must not block
	 * (IOCB_NOWAIT) submits nothing itself.
	 */
	if (!rq.legacy && !nowait)
		issue_next(file, lower, pf, &plan, rq.pos + rq.count,
			   rq.pos + rq.count, rq.txn);
	if (!rq.legacy) {
		aheadfs_cache_presence(lower->f_mapping, rq.pos, rq.count,
				       &own);
		if (meter)
			*meter = own;
	}
	/*
	 * It will wait for bytes already sent, but its window grew at this
	 * request already (towards the product, or doubled): what that added is
	 * this request's to submit, and the wait is no stall to grow it for
	 * again.
	 */
	if (!rq.legacy && !nowait && own.inflight && plan.stream >= 0 &&
	    plan.grew && tk)
		tk->grown = true;
	if (!rq.legacy && !nowait) {
		/* From the first page nobody asked for to the end. */
		if (own.absent) {
			if (tk && tk->t0)
				tk->t_own = ktime_get_ns();
			issue_demand(file, lower, own.first_absent,
				     rq.pos + rq.count, rq.txn);
		}
		issue_next(file, lower, pf, &plan, plan.sync_end, plan.sync_end,
			   rq.txn);
	}
	/*
	 * The reader's share of the window, then the worker for the rest
	 * (what the window grew by).  A plan that left nothing untaken (a
	 * steady reader between top-ups) needs neither: the lock is not taken
	 * again to find that out.  Last, while its own bytes are still being
	 * read in, it extends the window on the CPU it would leave idle.
	 */
	if (!rq.legacy && plan.stream >= 0 && plan.pending &&
	    (nowait ? plan.issue_end > plan.issue_start :
		      issue_own(file, lower, pf, &plan, rq.txn)))
		queue_work(aheadfs_pf_wq, &pf->work);
	if (!rq.legacy && !nowait && plan.stream >= 0 &&
	    (own.absent || own.inflight)) {
		u64 t = tk && tk->t0 ? ktime_get_ns() : 0;

		if (issue_idle(file, lower, pf, &plan, &rq) && tk)
			tk->grown = true;
		if (t)
			tk->t_idle = ktime_get_ns() - t;
	}
	if (plan.wasted)
		aheadfs_stat_add(sbi, AHEADFS_STAT_prefetch_wasted_bytes,
				 plan.wasted);
	return !rq.legacy && meter;
}
