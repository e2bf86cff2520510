// SPDX-License-Identifier: GPL-2.0
/* kernel_tmpfile_open() replaced vfs_tmpfile_open() (6.5+). */
#include <linux/fs.h>

void *aheadfs_probe(void);
void *aheadfs_probe(void)
{
	return kernel_tmpfile_open;
}
