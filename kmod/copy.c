// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs copy offload: copy_file_range and remap_file_range (clone,
 * dedupe).  A copy goes to the lower as a clone or as the lower's own copy
 * when both lower files share a superblock and the lower has one; anything
 * else is copied in the kernel, in transactions of aheadfs_txn_size(), with
 * the source prefetched ahead of the copy cursor.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/fs_stack.h>
#include <linux/splice.h>
#include "aheadfs.h"
#include "window.h"
#include "trace.h"

static void copy_done(struct file *file_in, loff_t pos_in,
		      struct file *file_out, loff_t pos_out, size_t len,
		      ssize_t ret, u64 t0, unsigned int method)
{
	struct inode *out = file_inode(file_out);
	struct aheadfs_sb_info *sbi = AHEADFS_SB(out->i_sb);
	static const enum aheadfs_stat method_stat[] = {
		[AHEADFS_COPY_CLONE]	= AHEADFS_STAT_copy_clone,
		[AHEADFS_COPY_LOWER]	= AHEADFS_STAT_copy_lower,
		[AHEADFS_COPY_CHUNKED]	= AHEADFS_STAT_copy_chunked,
		[AHEADFS_COPY_DEDUPE]	= AHEADFS_STAT_dedupe_reqs,
	};

	aheadfs_copy_attr_written(out);
	if (method != AHEADFS_COPY_DEDUPE) {
		aheadfs_stat_inc(sbi, AHEADFS_STAT_copy_reqs);
		if (ret > 0)
			aheadfs_stat_add(sbi, AHEADFS_STAT_copy_bytes, ret);
	}
	aheadfs_stat_inc(sbi, method_stat[method]);
	if (t0)
		trace_aheadfs_copy(file_inode(file_in)->i_ino, pos_in, out->i_ino,
				   pos_out, len, ret, ktime_get_ns() - t0,
				   out->i_sb->s_dev, method,
				   file_in->f_path.dentry,
				   file_in->f_path.dentry->d_name.name);
}

/*
 * Skip a hole of the source when the destination there is past its end, so
 * the copy stays sparse; a hole under existing destination data is copied
 * as the zeroes it reads as.  Returns the next source offset with data.  A
 * copy that ends in a hole stops short of skipping its last byte, whose
 * write then sets the destination's size as any write would: a truncate
 * would ask for permissions the caller's open file does not imply, and
 * could fail after data was copied.
 */
static loff_t next_data(struct file *lin, loff_t pos, loff_t end,
			struct file *lout, loff_t pos_out)
{
	loff_t data;

	if (pos_out < i_size_read(file_inode(lout)))
		return pos;
	data = vfs_llseek(lin, pos, SEEK_DATA);
	if (data < 0 && data != -ENXIO)
		return pos;
	/* ENXIO: nothing but hole up to EOF. */
	if (data < 0 || data >= end)
		return max(pos, end - 1);
	return data;
}

/* Where the data run starting at @pos ends (EOF counts as a hole). */
static loff_t next_hole(struct file *lin, loff_t pos, loff_t end)
{
	loff_t hole = vfs_llseek(lin, pos, SEEK_HOLE);

	return hole > pos ? min(hole, end) : end;
}

/*
 * One transaction: [*in, *in + n) of the source to *out through a pipe of
 * the source's pages (do_splice_direct, the lower's own generic copy), so
 * each byte is copied once and O_DIRECT files are read and written as the
 * lower would.  Advances both positions by what was written; returns the
 * bytes written, or an error if none were.
 */
static ssize_t copy_txn(struct file *lin, loff_t *in, struct file *lout,
			loff_t *out, size_t n)
{
	ssize_t ret;

	aheadfs_splice_start_write(lout);
	ret = do_splice_direct(lin, in, lout, out, n, 0);
	aheadfs_splice_end_write(lout);
	return ret;
}

/*
 * Announce a transaction of the source to the prefetcher and meter what the
 * lower page cache held of it, as the read scheduler does for a read: the
 * copy is a reader too, and its uncached tails and waits are counted.
 * What it found goes to @pr, for aheadfs_prefetch_done() after the copy.
 */
static void meter_txn(struct file *file_in, struct file *lin, loff_t pos,
		      size_t n, struct aheadfs_presence *pr,
		      struct aheadfs_pf_ticket *tk)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(file_inode(file_in)->i_sb);
	loff_t isize;

	*pr = (struct aheadfs_presence){};
	tk->t0 = 0;
	/* As for reads: direct I/O bypasses the page cache. */
	if (lin->f_flags & O_DIRECT)
		return;
	if (!aheadfs_prefetch_request(file_in, pos, n, false, 0, pr, tk)) {
		isize = i_size_read(file_inode(lin));
		if (pos >= isize)
			return;
		aheadfs_cache_presence(lin->f_mapping, pos,
				       min_t(u64, n, isize - pos), pr);
	}
	if (pr->absent) {
		aheadfs_stat_inc(sbi, AHEADFS_STAT_copy_absent_txns);
		if ((pr->present || pr->inflight) && !pr->hole_first)
			aheadfs_stat_inc(sbi, AHEADFS_STAT_copy_uncached_tails);
	}
	if (pr->absent || pr->inflight)
		aheadfs_stat_inc(sbi, AHEADFS_STAT_copy_wait_txns);
}

/*
 * The in-kernel copy: one transaction of aheadfs_txn_size() at a time,
 * each announced to the prefetcher first, destination written in order.
 * Holes of the source are skipped where that keeps the destination sparse,
 * except on O_DIRECT files, which are copied byte for byte as the lower's
 * generic copy does (a skipped hole would leave a write too small to be
 * aligned).  Stops between transactions on a fatal signal and returns what
 * was copied; an error is returned only if nothing was.
 */
static ssize_t copy_chunked(struct file *file_in, loff_t pos_in,
			    struct file *file_out, loff_t pos_out, size_t len)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(file_inode(file_in)->i_sb);
	struct file *lin = aheadfs_lower_file(file_in);
	struct file *lout = aheadfs_lower_file(file_out);
	struct aheadfs_presence pr;
	struct aheadfs_pf_ticket tk;
	bool sparse = !((lin->f_flags | lout->f_flags) & O_DIRECT);
	size_t txn = aheadfs_txn_size(sbi);
	loff_t end = pos_in + len, start = pos_in;
	loff_t in = pos_in, out = pos_out;
	/* Copied for sure: a skipped hole counts once data after it is. */
	loff_t done = pos_in;
	ssize_t ret = 0;

	while (in < end) {
		size_t n;
		ssize_t w;

		if (sparse) {
			loff_t data = next_data(lin, in, end, lout, out);

			out += data - in;
			in = data;
			n = min_t(u64, txn, next_hole(lin, in, end) - in);
		} else {
			n = min_t(u64, txn, end - in);
		}
		aheadfs_stat_inc(sbi, AHEADFS_STAT_copy_txns);
		meter_txn(file_in, lin, in, n, &pr, &tk);
		w = copy_txn(lin, &in, lout, &out, n);
		if (w > 0)
			aheadfs_prefetch_done(file_in, &tk, &pr,
					      AHEADFS_WAIT_UNMEASURED);
		if (w <= 0) {
			ret = w;
			break;
		}
		done = in;
		if ((size_t)w < n || fatal_signal_pending(current))
			break;
	}

	if (done > start)
		return done - start;
	return ret ? ret : (fatal_signal_pending(current) ? -EINTR : 0);
}

ssize_t aheadfs_copy_file_range(struct file *file_in, loff_t pos_in,
				struct file *file_out, loff_t pos_out,
				size_t len, unsigned int flags)
{
	struct file *lin = aheadfs_lower_file(file_in);
	struct file *lout = aheadfs_lower_file(file_out);
	struct inode *inode = file_inode(file_out);
	bool same_sb = file_inode(lin)->i_sb == file_inode(lout)->i_sb;
	unsigned int method = AHEADFS_COPY_CHUNKED;
	u64 t0 = aheadfs_op_begin();
	u64 tr = trace_aheadfs_copy_enabled() ? ktime_get_ns() : 0;
	ssize_t ret;

	if (flags) {
		ret = -EINVAL;
		goto out;
	}
	ret = aheadfs_sync_lower_flags(file_in);
	if (!ret)
		ret = aheadfs_sync_lower_flags(file_out);
	if (ret)
		goto out;
	/*
	 * The VFS refuses overlapping ranges of one file, but two aheadfs
	 * mounts of one lower give one lower file two inodes of ours.
	 */
	ret = -EINVAL;
	if (file_inode(lin) == file_inode(lout) && pos_out < pos_in + len &&
	    pos_in < pos_out + len)
		goto out;
	/*
	 * The VFS made the checks a native filesystem gets (modes, types,
	 * O_APPEND, immutable, swapfiles, overlap, clamping to EOF) on our
	 * files; the lower repeats them on its own.
	 */
	if (same_sb && lout->f_op->copy_file_range) {
		/* NFS 4.2 server-side COPY, and the like. */
		method = AHEADFS_COPY_LOWER;
		ret = vfs_copy_file_range(lin, pos_in, lout, pos_out, len, 0);
		if (ret != -EOPNOTSUPP && ret != -EXDEV)
			goto out;
	} else if (same_sb && lin->f_op->remap_file_range) {
		/* A reflink: shares extents, copies nothing. */
		method = AHEADFS_COPY_CLONE;
		ret = vfs_clone_file_range(lin, pos_in, lout, pos_out,
					   min_t(loff_t, len, MAX_RW_COUNT),
					   REMAP_FILE_CAN_SHORTEN);
		if (ret > 0)
			goto out;
	}
	method = AHEADFS_COPY_CHUNKED;
	ret = copy_chunked(file_in, pos_in, file_out, pos_out, len);
out:
	copy_done(file_in, pos_in, file_out, pos_out, len, ret, tr, method);
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_copy, inode,
		       file_out->f_path.dentry, t0, ret);
	return ret;
}

/* FICLONE, FICLONERANGE and FIDEDUPERANGE: the lower's to do, or refuse. */
loff_t aheadfs_remap_file_range(struct file *file_in, loff_t pos_in,
				struct file *file_out, loff_t pos_out,
				loff_t len, unsigned int remap_flags)
{
	struct file *lin = aheadfs_lower_file(file_in);
	struct file *lout = aheadfs_lower_file(file_out);
	struct inode *inode = file_inode(file_out);
	struct aheadfs_sb_info *sbi = AHEADFS_SB(inode->i_sb);
	u64 t0 = aheadfs_op_begin();
	u64 tr = trace_aheadfs_copy_enabled() ? ktime_get_ns() : 0;
	loff_t ret;

	ret = aheadfs_sync_lower_flags(file_in);
	if (!ret)
		ret = aheadfs_sync_lower_flags(file_out);
	if (ret)
		goto out;
	if (remap_flags & REMAP_FILE_DEDUP) {
		ret = vfs_dedupe_file_range_one(lin, pos_in, lout, pos_out, len,
						remap_flags);
		copy_done(file_in, pos_in, file_out, pos_out, len, ret, tr,
			  AHEADFS_COPY_DEDUPE);
	} else {
		ret = vfs_clone_file_range(lin, pos_in, lout, pos_out, len,
					   remap_flags);
		aheadfs_stat_inc(sbi, AHEADFS_STAT_clone_reqs);
		aheadfs_copy_attr_written(inode);
		if (tr)
			trace_aheadfs_copy(file_inode(file_in)->i_ino, pos_in,
					   inode->i_ino, pos_out, len, ret,
					   ktime_get_ns() - tr,
					   inode->i_sb->s_dev,
					   AHEADFS_COPY_CLONE,
					   file_in->f_path.dentry,
					   file_in->f_path.dentry->d_name.name);
	}
out:
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_remap, inode,
		       file_out->f_path.dentry, t0, ret);
	return ret;
}
