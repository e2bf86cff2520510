// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs readahead window.  (Placeholder: no prefetch of its own; replaced
 * by the window proper.)
 */
#include "aheadfs.h"

int aheadfs_prefetch_open(struct file *file)
{
	return 0;
}

void aheadfs_prefetch_release(struct file *file)
{
}

void aheadfs_prefetch_request(struct file *file, loff_t pos, size_t count)
{
}
