// SPDX-License-Identifier: GPL-2.0
/* struct file_lock keeps its owner, file and flags in a file_lock_core (6.9+). */
#include <linux/fs.h>
#include <linux/filelock.h>

unsigned int aheadfs_probe(struct file_lock *fl);
unsigned int aheadfs_probe(struct file_lock *fl)
{
	return fl->c.flc_flags;
}
