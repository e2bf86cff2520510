// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs backing file I/O: the requests aheadfs sends down to the lower
 * ("backing") file, at the bottom of the read path file.c -> sched.c ->
 * prefetch.c -> backing.c.  Synchronous requests are served in place with a
 * clone of the caller's kiocb; asynchronous ones stay asynchronous, the
 * lower completing a clone whose completion completes the caller's.  mmap
 * maps the lower file itself.
 */
#include <linux/slab.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/uio.h>
#include <linux/fs_stack.h>
#include "aheadfs.h"

/* Async I/O stays async: the lower completes a clone of the caller's kiocb. */
struct aheadfs_aio {
	struct kiocb iocb;
	refcount_t ref;
	struct kiocb *orig;
	bool write;
};

static struct kmem_cache *aheadfs_aio_cachep;

int aheadfs_backing_init(void)
{
	aheadfs_aio_cachep = kmem_cache_create("aheadfs_aio",
					       sizeof(struct aheadfs_aio), 0,
					       SLAB_HWCACHE_ALIGN, NULL);
	return aheadfs_aio_cachep ? 0 : -ENOMEM;
}

void aheadfs_backing_exit(void)
{
	kmem_cache_destroy(aheadfs_aio_cachep);
}

static void aio_put(struct aheadfs_aio *aio)
{
	if (refcount_dec_and_test(&aio->ref)) {
		fput(aio->iocb.ki_filp);
		kmem_cache_free(aheadfs_aio_cachep, aio);
	}
}

/*
 * May run in interrupt context (a direct I/O completion): only the size is
 * refreshed here, which the VFS checks copy_file_range and the like against,
 * and the next stat asks the lower (aheadfs_copy_attr_written()).  @end
 * says whether the lower's freeze protection is still to be ended here:
 * always for a request the lower queued, and for one it did not only where
 * the VFS has not ended it already (compat.h).
 */
static void aio_cleanup(struct aheadfs_aio *aio, bool end)
{
	struct inode *inode = file_inode(aio->orig->ki_filp);

	if (aio->write) {
		if (end)
			kiocb_end_write(&aio->iocb);
		fsstack_copy_inode_size(inode, file_inode(aio->iocb.ki_filp));
		set_bit(AHEADFS_I_WRITTEN, &AHEADFS_I(inode)->flags);
	}
	aio->orig->ki_pos = aio->iocb.ki_pos;
}

/*
 * Our references go before the caller's request completes: its completion
 * may drop the last reference to our file, and an unmount and rmmod may
 * follow, so nothing of ours is touched after it.
 */
static void aio_complete(struct kiocb *iocb, long res)
{
	struct aheadfs_aio *aio = container_of(iocb, struct aheadfs_aio, iocb);
	struct kiocb *orig = aio->orig;

	aio_cleanup(aio, true);
	aio_put(aio);
	orig->ki_complete(orig, res);
}

/*
 * Forward one request to the lower file.  A synchronous iocb is served in
 * place; an async one returns -EIOCBQUEUED and completes the caller's iocb
 * when the lower request completes.  Writes hold the lower's freeze
 * protection as the VFS wants it held on each kernel (compat.h); with
 * IOCB_NOWAIT (io_uring's inline attempt, RWF_NOWAIT) a frozen lower
 * refuses with -EAGAIN.
 */
ssize_t aheadfs_lower_rw(struct kiocb *iocb, struct file *lower,
			 struct iov_iter *iter, int rw)
{
	bool nowait = iocb->ki_flags & IOCB_NOWAIT;
	struct aheadfs_aio *aio;
	struct kiocb lk;
	ssize_t ret;

	if (is_sync_kiocb(iocb)) {
		kiocb_clone(&lk, iocb, lower);
		lk.ki_flags &= ~IOCB_DIO_CALLER_COMP;
		if (rw == WRITE) {
			if (!aheadfs_lower_write_start(lower, nowait))
				return -EAGAIN;
			ret = vfs_iocb_iter_write(lower, &lk, iter);
			aheadfs_lower_write_end(lower);
		} else {
			ret = vfs_iocb_iter_read(lower, &lk, iter);
		}
		iocb->ki_pos = lk.ki_pos;
		return ret;
	}

	aio = kmem_cache_zalloc(aheadfs_aio_cachep,
				nowait ? GFP_NOWAIT : GFP_KERNEL);
	if (!aio)
		return nowait ? -EAGAIN : -ENOMEM;
	if (rw == WRITE && !aheadfs_lower_write_start(lower, nowait)) {
		kmem_cache_free(aheadfs_aio_cachep, aio);
		return -EAGAIN;
	}
	kiocb_clone(&aio->iocb, iocb, get_file(lower));
	aio->iocb.ki_flags &= ~IOCB_DIO_CALLER_COMP;
	aio->iocb.ki_complete = aio_complete;
	aio->orig = iocb;
	aio->write = rw == WRITE;
	refcount_set(&aio->ref, 2);
	if (aio->write) {
		aheadfs_lower_write_queued(lower);
		ret = vfs_iocb_iter_write(lower, &aio->iocb, iter);
	} else {
		ret = vfs_iocb_iter_read(lower, &aio->iocb, iter);
	}
	aio_put(aio);
	if (ret != -EIOCBQUEUED) {
		aio_cleanup(aio, !AHEADFS_LOWER_WRITE_ENDS_UNQUEUED);
		aio_put(aio);
	}
	return ret;
}

/*
 * The mapping is the lower file's: coherent with read, write and with
 * direct users of the lower file.
 */
int aheadfs_backing_mmap(struct file *file, struct file *lower,
			 struct vm_area_struct *vma)
{
	if (!lower->f_op->mmap)
		return -ENODEV;
	if (WARN_ON_ONCE(file != vma->vm_file))
		return -EIO;
	vma_set_file(vma, lower);
	return call_mmap(vma->vm_file, vma);
}
