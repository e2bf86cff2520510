// SPDX-License-Identifier: GPL-2.0
/* get_unaligned() moved from <asm/unaligned.h> to <linux/unaligned.h> (6.12). */
#include <linux/unaligned.h>

unsigned long aheadfs_probe(const void *p);
unsigned long aheadfs_probe(const void *p)
{
	return get_unaligned((const unsigned long *)p);
}
