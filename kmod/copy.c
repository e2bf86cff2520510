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
#include <linux/slab.h>
#include <linux/sched/signal.h>
#include <linux/fs_stack.h>
#include "aheadfs.h"
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

	aheadfs_copy_attr(out);
	if (method != AHEADFS_COPY_DEDUPE) {
		aheadfs_stat_inc(sbi, AHEADFS_STAT_copy_reqs);
		if (ret > 0)
			aheadfs_stat_add(sbi, AHEADFS_STAT_copy_bytes, ret);
	}
	aheadfs_stat_inc(sbi, method_stat[method]);
	if (t0)
		trace_aheadfs_copy(file_inode(file_in)->i_ino, pos_in, out->i_ino,
				   pos_out, len, ret, ktime_get_ns() - t0,
				   out->i_sb->s_dev, method);
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
 * The bounce buffer: a transaction's size if memory allows (one read and
 * one write per transaction), else less, down to a page; the transaction
 * stays the unit the prefetcher is told about and signals are checked at.
 */
static void *copy_buf(size_t want, size_t *size)
{
	void *buf;

	for (;;) {
		buf = kvmalloc(want, want > PAGE_SIZE ?
			       GFP_KERNEL | __GFP_NORETRY | __GFP_NOWARN :
			       GFP_KERNEL);
		if (buf || want <= PAGE_SIZE)
			break;
		want = max_t(size_t, want / 2, PAGE_SIZE);
	}
	*size = want;
	return buf;
}

/*
 * One transaction: [*in, *in + n) of the source to *out, in buffer-sized
 * pieces.  Advances both positions by what was written; returns the bytes
 * written, or an error if none were.
 */
static ssize_t copy_txn(struct file *lin, loff_t *in, struct file *lout,
			loff_t *out, size_t n, void *buf, size_t bufsz)
{
	size_t done = 0;

	while (done < n) {
		size_t piece = min(n - done, bufsz);
		ssize_t r, w;

		r = kernel_read(lin, buf, piece, in);
		if (r <= 0)
			return done ? done : r;
		w = kernel_write(lout, buf, r, out);
		if (w < r) {
			/* ENOSPC and the like: count only what was written. */
			*in -= r - max_t(ssize_t, w, 0);
			if (w > 0)
				done += w;
			return done ? done : (w < 0 ? w : -EIO);
		}
		done += w;
		if (r < piece)	/* the source shrank under us */
			break;
	}
	return done;
}

/*
 * The in-kernel copy: one transaction of aheadfs_txn_size() at a time,
 * each announced to the prefetcher first, destination written in order.
 * Stops between transactions on a fatal signal and returns what was
 * copied; an error is returned only if nothing was.
 */
static ssize_t copy_chunked(struct file *file_in, loff_t pos_in,
			    struct file *file_out, loff_t pos_out, size_t len)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(file_inode(file_in)->i_sb);
	struct file *lin = aheadfs_lower_file(file_in);
	struct file *lout = aheadfs_lower_file(file_out);
	size_t txn = aheadfs_txn_size(sbi);
	loff_t end = pos_in + len, start = pos_in;
	loff_t in = pos_in, out = pos_out;
	ssize_t ret = 0;
	size_t bufsz;
	void *buf;

	buf = copy_buf(min_t(size_t, txn, len), &bufsz);
	if (!buf)
		return -ENOMEM;

	while (in < end) {
		loff_t data = next_data(lin, in, end, lout, out);
		size_t n;
		ssize_t w;

		out += data - in;
		in = data;
		n = min_t(u64, txn, next_hole(lin, in, end) - in);
		aheadfs_stat_inc(sbi, AHEADFS_STAT_copy_txns);
		aheadfs_prefetch_request(file_in, in, n);
		w = copy_txn(lin, &in, lout, &out, n, buf, bufsz);
		if (w <= 0) {
			ret = w;
			break;
		}
		if ((size_t)w < n || fatal_signal_pending(current))
			break;
	}
	kvfree(buf);

	if (in > start)
		return in - start;
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
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_copy, inode, t0, ret);
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

	if (remap_flags & REMAP_FILE_DEDUP) {
		ret = vfs_dedupe_file_range_one(lin, pos_in, lout, pos_out, len,
						remap_flags);
		copy_done(file_in, pos_in, file_out, pos_out, len, ret, tr,
			  AHEADFS_COPY_DEDUPE);
	} else {
		ret = vfs_clone_file_range(lin, pos_in, lout, pos_out, len,
					   remap_flags);
		aheadfs_stat_inc(sbi, AHEADFS_STAT_clone_reqs);
		aheadfs_copy_attr(inode);
		if (tr)
			trace_aheadfs_copy(file_inode(file_in)->i_ino, pos_in,
					   inode->i_ino, pos_out, len, ret,
					   ktime_get_ns() - tr,
					   inode->i_sb->s_dev,
					   AHEADFS_COPY_CLONE);
	}
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_remap, inode, t0, ret);
	return ret;
}
