// SPDX-License-Identifier: GPL-2.0
/*
 * inode_get_mtime() and the other timestamp accessors came when struct
 * inode's timestamps were split into seconds and nanoseconds (6.7+);
 * before, i_atime, i_mtime and i_ctime were struct timespec64 fields.
 */
#include <linux/fs.h>

struct timespec64 aheadfs_probe(const struct inode *inode);
struct timespec64 aheadfs_probe(const struct inode *inode)
{
	return inode_get_mtime(inode);
}
