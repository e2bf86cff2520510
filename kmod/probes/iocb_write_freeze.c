// SPDX-License-Identifier: GPL-2.0
/*
 * From 6.7 vfs_iocb_iter_write() takes the freeze protection of the file it
 * writes (kiocb_start_write()) and ends it, or leaves a queued request's to
 * its completion; before, its callers took it.  file_write_not_started()
 * came in the same series (moving file_start_write() into the VFS helpers).
 */
#include <linux/fs.h>

int aheadfs_probe(struct file *file);
int aheadfs_probe(struct file *file)
{
	return file_write_not_started(file);
}
