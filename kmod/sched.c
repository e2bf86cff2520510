// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs read scheduler: aheadfs_txn_size(), the one source of every I/O
 * size, and the split of a read into transactions.  (Placeholder: forwards
 * each read in one piece; replaced by the scheduler proper.)
 */
#include "aheadfs.h"

size_t aheadfs_txn_size(struct aheadfs_sb_info *sbi)
{
	return min_t(size_t, (size_t)READ_ONCE(sbi->txn_kb) << 10,
		     MAX_RW_COUNT);
}

ssize_t aheadfs_sched_read(struct kiocb *iocb, struct iov_iter *to)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file_inode(file);
	struct aheadfs_sb_info *sbi = AHEADFS_SB(inode->i_sb);
	u64 t0 = aheadfs_op_begin();
	ssize_t ret;

	aheadfs_prefetch_request(file, iocb->ki_pos, iov_iter_count(to));
	ret = aheadfs_lower_rw(iocb, aheadfs_lower_file(file), to, READ);
	aheadfs_stat_inc(sbi, AHEADFS_STAT_read_reqs);
	if (ret > 0)
		aheadfs_stat_add(sbi, AHEADFS_STAT_read_bytes, ret);
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_read, inode, t0, ret);
	return ret;
}
