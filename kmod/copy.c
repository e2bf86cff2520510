// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs copy offload: copy_file_range and remap_file_range.  (Placeholder:
 * refuses; replaced by the copy paths proper.)
 */
#include "aheadfs.h"

ssize_t aheadfs_copy_file_range(struct file *file_in, loff_t pos_in,
				struct file *file_out, loff_t pos_out,
				size_t len, unsigned int flags)
{
	return -EOPNOTSUPP;
}

loff_t aheadfs_remap_file_range(struct file *file_in, loff_t pos_in,
				struct file *file_out, loff_t pos_out,
				loff_t len, unsigned int remap_flags)
{
	return -EOPNOTSUPP;
}
