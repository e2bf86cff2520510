// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs read scheduler: aheadfs_txn_size(), the one source of every I/O
 * size, the split of a read into transactions, and the metering of what each
 * transaction found in the lower page cache.
 */
#include <linux/fs.h>
#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/uio.h>
#include "aheadfs.h"
#include "window.h"
#include "trace.h"

/*
 * The lower takes at most MAX_RW_COUNT bytes in one read or write call; that
 * is the only limit of the lower path that bounds a transaction.  The block
 * device's max_sectors_kb and the bdi's io_pages are per-bio limits: the
 * lower's page cache and its direct I/O path split a transaction into bios of
 * that size themselves, so capping transactions there would only multiply
 * calls and make the transaction size differ from the prefetch chunk for
 * reasons nobody tuned.  Page-aligned, so that transactions and chunks cover
 * whole pages.
 */
size_t aheadfs_txn_size(struct aheadfs_sb_info *sbi)
{
	size_t txn = (size_t)READ_ONCE(sbi->txn_kb) << 10;

	txn = min_t(size_t, txn, MAX_RW_COUNT);
	return max_t(size_t, round_down(txn, PAGE_SIZE), PAGE_SIZE);
}

/* Meter [pos, pos + len), clipped at the lower file's end. */
static void meter(struct file *lower, loff_t pos, u64 len,
		  struct aheadfs_presence *pr)
{
	loff_t isize = i_size_read(file_inode(lower));

	if (pos >= isize)
		return;
	len = min_t(u64, len, isize - pos);
	aheadfs_cache_presence(lower->f_mapping, pos, len, pr);
}

static void account(struct aheadfs_sb_info *sbi, ssize_t ret, u64 txns,
		    const struct aheadfs_presence *pr, u64 wait_ns)
{
	aheadfs_stat_inc(sbi, AHEADFS_STAT_read_reqs);
	if (ret > 0)
		aheadfs_stat_add(sbi, AHEADFS_STAT_read_bytes, ret);
	aheadfs_stat_add(sbi, AHEADFS_STAT_read_txns, txns);
	aheadfs_stat_add(sbi, AHEADFS_STAT_read_present_bytes, pr->present);
	aheadfs_stat_add(sbi, AHEADFS_STAT_read_absent_bytes, pr->absent);
	aheadfs_stat_add(sbi, AHEADFS_STAT_read_inflight_bytes, pr->inflight);
	if (pr->absent) {
		aheadfs_stat_inc(sbi, AHEADFS_STAT_absent_reqs);
		if ((pr->present || pr->inflight) && !pr->hole_first)
			aheadfs_stat_inc(sbi, AHEADFS_STAT_uncached_tails);
	}
	/* Waited for the device: part of it was not up to date. */
	if (pr->absent || pr->inflight)
		aheadfs_stat_inc(sbi, AHEADFS_STAT_wait_reqs);
	aheadfs_stat_add(sbi, AHEADFS_STAT_read_wait_ns, wait_ns);
}

/*
 * A synchronous read, one transaction at a time: each transaction is one
 * read of the lower file, metered just before it is issued (@meter_txns;
 * else the window metered the whole request into @pr).  Stops at the first
 * short or failed transaction (end of file, a signal, an error) and returns
 * what was read, or the error if nothing was.
 *
 * A transaction that was not all up to date waits for the device, and
 * *@wait_ns adds how long: where the lower does no readahead of its own
 * (FMODE_RANDOM: every mode but kernel), its folios under I/O are waited
 * for before the lower's read copies them (aheadfs_wait_reads()), which
 * is where that read would wait; where pages were absent and the lower
 * reads them in itself (off, legacy's tail), or where its readahead runs
 * (kernel: its read starts the next readahead before it waits, and waiting
 * first would serialize the two), the whole lower read, copy included.
 */
static ssize_t read_sync(struct kiocb *iocb, struct file *lower,
			 struct iov_iter *to, size_t txn, bool meter_txns,
			 u64 *txns, struct aheadfs_presence *pr, u64 *wait_ns)
{
	ssize_t ret = 0, done = 0;

	while (iov_iter_count(to)) {
		size_t len = min(iov_iter_count(to), txn);
		size_t rest = iov_iter_count(to) - len;
		u64 absent = pr->absent, inflight = pr->inflight, t = 0;
		bool waits = pr->absent || pr->inflight;

		iov_iter_truncate(to, len);
		if (meter_txns) {
			meter(lower, iocb->ki_pos, len, pr);
			waits = pr->absent != absent || pr->inflight != inflight;
		}
		if (waits) {
			t = ktime_get_ns();
			if (READ_ONCE(lower->f_mode) & FMODE_RANDOM &&
			    (!meter_txns || pr->absent == absent)) {
				aheadfs_wait_reads(lower->f_mapping,
						   iocb->ki_pos, len);
				*wait_ns += ktime_get_ns() - t;
				t = 0;
			}
		}
		(*txns)++;
		ret = aheadfs_lower_rw(iocb, lower, to, READ);
		if (t)
			*wait_ns += ktime_get_ns() - t;
		iov_iter_reexpand(to, iov_iter_count(to) + rest);
		if (ret <= 0)
			break;
		done += ret;
		if ((size_t)ret < len || fatal_signal_pending(current))
			break;
	}
	return done ? done : ret;
}

ssize_t aheadfs_sched_read(struct kiocb *iocb, struct iov_iter *to)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file_inode(file);
	struct super_block *sb = inode->i_sb;
	struct aheadfs_sb_info *sbi = AHEADFS_SB(sb);
	struct file *lower = aheadfs_lower_file(file);
	u64 t0 = aheadfs_op_begin();
	/* One clock reading serves both tracepoints and the window. */
	u64 tr = trace_aheadfs_read_enabled() ? (t0 ?: ktime_get_ns()) : 0;
	struct aheadfs_presence pr = {};
	struct aheadfs_pf_ticket tk = { .stream = -1 };
	loff_t pos = iocb->ki_pos;
	size_t count = iov_iter_count(to);
	/* Direct I/O bypasses the page cache: no prefetch, nothing to meter. */
	bool cached = !(iocb->ki_flags & IOCB_DIRECT);
	bool metered = false;
	u64 txns = 0, wait_ns = 0, t1;
	ssize_t ret;

	/*
	 * Issuing the window allocates pages and submits I/O: a caller that
	 * must not block (IOCB_NOWAIT) has it done by a worker, one that must
	 * not start I/O (IOCB_NOIO) has none.
	 */
	if (cached && !(iocb->ki_flags & IOCB_NOIO))
		metered = aheadfs_prefetch_request(file, pos, count,
						   iocb->ki_flags & IOCB_NOWAIT,
						   t0 ?: tr, &pr, &tk);

	if (is_sync_kiocb(iocb)) {
		ret = read_sync(iocb, lower, to, aheadfs_txn_size(sbi),
				cached && !metered, &txns, &pr, &wait_ns);
		/* What it waited for, and how long, sizes the window. */
		if (ret > 0)
			aheadfs_prefetch_done(file, &tk, &pr, wait_ns);
	} else {
		/*
		 * Async (io_uring, libaio) goes down in one piece, so that it
		 * stays async with one completion: the prefetcher has seen
		 * the whole request, the lower's buffered path reads page by
		 * page anyway, and its direct I/O path splits into bios.
		 */
		if (cached && !metered)
			meter(lower, pos, count, &pr);
		txns = 1;
		ret = aheadfs_lower_rw(iocb, lower, to, READ);
	}

	/*
	 * A non-blocking attempt that would have blocked is retried (io_uring's
	 * worker, the caller): in full after -EAGAIN, for the rest after a
	 * short read that stopped at bytes not yet read in (a worker behind
	 * with the window, which the blocking retry submits itself).  The
	 * request is counted once, there; of this attempt only what it read.
	 */
	/*
	 * One that read all it asked for waited for nothing: what its meter
	 * saw missing was read in before it got there (by the worker, or the
	 * lower's own readahead, on another CPU), so it counts as present.
	 */
	if ((iocb->ki_flags & IOCB_NOWAIT) && ret > 0 && (size_t)ret == count &&
	    (pr.absent || pr.inflight))
		pr = (struct aheadfs_presence){
			.present = pr.present + pr.inflight + pr.absent,
		};
	if ((iocb->ki_flags & IOCB_NOWAIT) &&
	    (ret == -EAGAIN || (ret > 0 && (size_t)ret < count && pr.absent))) {
		if (ret > 0)
			aheadfs_stat_add(sbi, AHEADFS_STAT_read_bytes, ret);
	} else {
		account(sbi, ret, txns, &pr, wait_ns);
	}
	t1 = t0 || tr ? ktime_get_ns() : 0;
	if (tr)
		trace_aheadfs_read(inode->i_ino, pos, count, pr.present,
				   pr.absent, t1 - tr, ret, sb->s_dev,
				   READ_ONCE(sbi->prefetch_mode),
				   file->f_path.dentry,
				   file->f_path.dentry->d_name.name, wait_ns);
	aheadfs_op_end_at(sb, AHEADFS_OP_read, inode, file->f_path.dentry, t0,
			  t1, ret);
	return ret;
}
