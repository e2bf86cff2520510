// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs readahead window: per-stream state of each open file, issuing the
 * prefetch chunks into the lower file's page cache, and metering what became
 * of them.  The arithmetic lives in window.h; this file adds the locking,
 * the memory budget, the I/O and the counters.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/backing-dev.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/file.h>
#include <linux/workqueue.h>
#include "aheadfs.h"
#include "window.h"
#include "trace.h"

struct aheadfs_pf_state {
	spinlock_t lock;		/* protects w */
	struct aheadfs_window w;
	bool set_random;		/* we set FMODE_RANDOM on the lower */
};

/*
 * In every mode but `kernel`, the lower file reads exactly what it is asked
 * for (FMODE_RANDOM: no readahead of its own, large reads of the request).
 * Then the present/absent counters measure our window alone, and a request
 * that finds bytes absent costs one read of the missing range, as on the
 * slow path of the story; `off` is then really off.  `kernel` gives the
 * lower its readahead back.
 */
static void lower_readahead(struct file *lower, struct aheadfs_pf_state *pf,
			    bool ours)
{
	bool random = READ_ONCE(lower->f_mode) & FMODE_RANDOM;

	if (ours == random || (!ours && !pf->set_random))
		return;
	spin_lock(&lower->f_lock);
	if (ours)
		lower->f_mode |= FMODE_RANDOM;
	else
		lower->f_mode &= ~FMODE_RANDOM;
	spin_unlock(&lower->f_lock);
	pf->set_random = ours;
}

int aheadfs_prefetch_open(struct file *file)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(file_inode(file)->i_sb);
	struct aheadfs_pf_state *pf;

	pf = kzalloc(sizeof(*pf), GFP_KERNEL);
	if (!pf)
		return -ENOMEM;
	spin_lock_init(&pf->lock);
	AHEADFS_F(file)->pf = pf;
	lower_readahead(aheadfs_lower_file(file), pf,
			READ_ONCE(sbi->prefetch_mode) != AHEADFS_PF_KERNEL);
	return 0;
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
	struct aheadfs_pf_state *pf = AHEADFS_F(file)->pf;
	u64 wasted;
	s64 delta;

	if (!pf)
		return;
	/* The last reference is gone: nobody else can hold the lock. */
	wasted = aheadfs_window_drop(&pf->w, &delta);
	aheadfs_stat_add(sbi, AHEADFS_STAT_prefetch_wasted_bytes, wasted);
	window_gauge(sbi, delta);
	AHEADFS_F(file)->pf = NULL;
	kfree(pf);
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
 * Read [start, end) into the lower page cache in chunks of @txn, ascending.
 * page_cache_ra_unbounded() adds the folios (locked, so they count as
 * present at once) and submits the reads without waiting for them; pages
 * already cached are skipped.
 */
static void issue(struct file *file, struct file *lower, u64 start, u64 end,
		  u64 txn, u64 window)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(file_inode(file)->i_sb);
	struct address_space *mapping = lower->f_mapping;
	u64 pos, len;

	for (pos = start; pos < end; pos += len) {
		pgoff_t first = pos >> PAGE_SHIFT;
		DEFINE_READAHEAD(ractl, lower, &lower->f_ra, mapping, first);

		len = min(end - pos, txn);
		page_cache_ra_unbounded(&ractl,
					((pos + len - 1) >> PAGE_SHIFT) - first + 1,
					0);
		aheadfs_stat_inc(sbi, AHEADFS_STAT_prefetch_chunks);
		aheadfs_stat_add(sbi, AHEADFS_STAT_prefetch_bytes, len);
		trace_aheadfs_prefetch(file_inode(file)->i_ino, pos, len,
				       window, file_inode(file)->i_sb->s_dev);
		if (fatal_signal_pending(current))
			break;
	}
}

/*
 * A reader that must not block (IOCB_NOWAIT) still moves its window; the
 * chunks it plans are issued by a worker, which holds the file until done.
 */
struct pf_work {
	struct work_struct work;
	struct file *file;
	u64 start, end, txn, win;
};

static struct workqueue_struct *aheadfs_pf_wq;

static void pf_work_fn(struct work_struct *work)
{
	struct pf_work *pw = container_of(work, struct pf_work, work);

	issue(pw->file, aheadfs_lower_file(pw->file), pw->start, pw->end,
	      pw->txn, pw->win);
	fput(pw->file);
	kfree(pw);
}

static void issue_async(struct file *file, u64 start, u64 end, u64 txn,
			u64 win)
{
	struct pf_work *pw = kmalloc(sizeof(*pw), GFP_NOWAIT | __GFP_NOWARN);

	/* Prefetch is advice: without memory to ask, it is not asked. */
	if (!pw)
		return;
	INIT_WORK(&pw->work, pf_work_fn);
	pw->file = get_file(file);
	pw->start = start;
	pw->end = end;
	pw->txn = txn;
	pw->win = win;
	queue_work(aheadfs_pf_wq, &pw->work);
}

int aheadfs_prefetch_init(void)
{
	aheadfs_pf_wq = alloc_workqueue("aheadfs_pf", WQ_UNBOUND, 0);
	return aheadfs_pf_wq ? 0 : -ENOMEM;
}

/* Every queued chunk has been issued, and its file reference dropped. */
void aheadfs_prefetch_exit(void)
{
	destroy_workqueue(aheadfs_pf_wq);
}

void aheadfs_prefetch_request(struct file *file, loff_t pos, size_t count,
			      bool nowait)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(file_inode(file)->i_sb);
	struct aheadfs_pf_state *pf = AHEADFS_F(file)->pf;
	unsigned int mode = READ_ONCE(sbi->prefetch_mode);
	struct file *lower = aheadfs_lower_file(file);
	struct aheadfs_presence pr = {};
	struct aheadfs_pf_plan plan;
	struct aheadfs_pf_req rq;
	loff_t isize;

	if (!pf || !count || pos < 0)
		return;
	lower_readahead(lower, pf, mode != AHEADFS_PF_KERNEL);
	if (mode != AHEADFS_PF_AHEAD && mode != AHEADFS_PF_LEGACY)
		return;
	if (!can_prefetch(lower))
		return;

	isize = i_size_read(file_inode(lower));
	/* Nothing to fetch past the end; nor a window sized by that part. */
	if (pos >= isize)
		return;
	rq = (struct aheadfs_pf_req){
		.pos = pos,
		.count = min_t(u64, count, isize - pos),
		.isize = isize,
		.txn = aheadfs_txn_size(sbi),
		.win_cap = (u64)READ_ONCE(sbi->window_kb) << 10,
		.legacy = mode == AHEADFS_PF_LEGACY,
	};
	if (!rq.legacy)
		rq.mem_room = mem_room(sbi);
	spin_lock(&pf->lock);
	aheadfs_window_plan(&pf->w, &rq, &plan);
	spin_unlock(&pf->lock);

	window_gauge(sbi, plan.win_delta);
	if (plan.issue_end > plan.issue_start && nowait)
		issue_async(file, plan.issue_start, plan.issue_end, rq.txn,
			    plan.win);
	else if (plan.issue_end > plan.issue_start)
		issue(file, lower, plan.issue_start, plan.issue_end, rq.txn,
		      plan.win);
	/* What this request reads of earlier prefetch: still there, or lost. */
	if (plan.hit_end > plan.hit_start) {
		aheadfs_cache_presence(lower->f_mapping, plan.hit_start,
				       plan.hit_end - plan.hit_start, &pr);
		aheadfs_stat_add(sbi, AHEADFS_STAT_prefetch_hit_bytes,
				 pr.present);
		plan.wasted += pr.absent;
	}
	if (plan.wasted)
		aheadfs_stat_add(sbi, AHEADFS_STAT_prefetch_wasted_bytes,
				 plan.wasted);
}
