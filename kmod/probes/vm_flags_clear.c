// SPDX-License-Identifier: GPL-2.0
/*
 * vm_flags_clear() came with vma->vm_flags made read-only to everyone else
 * (6.3+); before, a driver's ->mmap changed vm_flags directly.
 */
#include <linux/mm.h>

void aheadfs_probe(struct vm_area_struct *vma);
void aheadfs_probe(struct vm_area_struct *vma)
{
	vm_flags_clear(vma, VM_MAYEXEC);
}
