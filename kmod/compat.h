/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the kernel APIs aheadfs builds against (Debian's
 * 6.1 and 6.12).  Decisions come from compile probes (the files in kmod/probes/, run
 * by the build into aheadfs_config.h), never from LINUX_VERSION_CODE: Debian
 * backports APIs, so version numbers lie.
 */
#ifndef _AHEADFS_COMPAT_H
#define _AHEADFS_COMPAT_H

#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/stat.h>
#include "aheadfs_config.h"

#ifdef AHEADFS_HAVE_LINUX_UNALIGNED
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

#ifdef AHEADFS_HAVE_MNT_IDMAP
#define aheadfs_idmap_t			struct mnt_idmap
#define aheadfs_mnt_idmap(mnt)		mnt_idmap(mnt)
#define AHEADFS_RD_OLD_IDMAP		old_mnt_idmap
#define AHEADFS_RD_NEW_IDMAP		new_mnt_idmap
#else
#define aheadfs_idmap_t			struct user_namespace
#define aheadfs_mnt_idmap(mnt)		mnt_user_ns(mnt)
#define AHEADFS_RD_OLD_IDMAP		old_mnt_userns
#define AHEADFS_RD_NEW_IDMAP		new_mnt_userns
#endif

#ifdef AHEADFS_HAVE_GENERIC_FILLATTR_MASK
#define aheadfs_fillattr(idmap, mask, inode, stat) \
	generic_fillattr(idmap, mask, inode, stat)
#else
#define aheadfs_fillattr(idmap, mask, inode, stat) \
	generic_fillattr(idmap, inode, stat)
#endif

#ifdef AHEADFS_HAVE_KERNEL_TMPFILE_OPEN
#define aheadfs_tmpfile_open(idmap, path, mode, flags, cred) \
	kernel_tmpfile_open(idmap, path, mode, flags, cred)
#else
#define aheadfs_tmpfile_open(idmap, path, mode, flags, cred) \
	vfs_tmpfile_open(idmap, path, mode, flags, cred)
#endif

/* Both end in our ->read_iter, so the read scheduler sees spliced reads. */
#ifdef AHEADFS_HAVE_COPY_SPLICE_READ
#define aheadfs_splice_read	copy_splice_read
#else
#define aheadfs_splice_read	generic_file_splice_read
#endif

/*
 * From 6.8 the VFS passes AT_GETATTR_NOSEC down to a stacked getattr when it
 * has already made the security check; vfs_getattr() refuses that flag.
 */
#ifdef AT_GETATTR_NOSEC
static inline int aheadfs_vfs_getattr(const struct path *path,
				      struct kstat *stat, u32 mask,
				      unsigned int flags)
{
	if (flags & AT_GETATTR_NOSEC)
		return vfs_getattr_nosec(path, stat, mask, flags);
	return vfs_getattr(path, stat, mask, flags);
}
#else
#define aheadfs_vfs_getattr(path, stat, mask, flags) \
	vfs_getattr(path, stat, mask, flags)
#endif

/* 6.5 added EXPORT_FH_* flags; aheadfs encodes plain (decodable) handles. */
#ifdef AHEADFS_HAVE_ENCODE_INODE_FH_FLAGS
#define aheadfs_encode_inode_fh(inode, fid, max_len, parent) \
	exportfs_encode_inode_fh(inode, fid, max_len, parent, 0)
#else
#define aheadfs_encode_inode_fh(inode, fid, max_len, parent) \
	exportfs_encode_inode_fh(inode, fid, max_len, parent)
#endif

/*
 * Lock requests: 6.9 moved owner, file and flags into a file_lock_core and
 * the lock API into <linux/filelock.h>.
 */
#ifdef AHEADFS_HAVE_FILE_LOCK_CORE
#include <linux/filelock.h>
#define aheadfs_lock_core_t		struct file_lock_core
#define aheadfs_fl_core(fl)		(&(fl)->c)
#define aheadfs_flc(core, field)	((core)->flc_##field)
#else
#define aheadfs_lock_core_t		struct file_lock
#define aheadfs_fl_core(fl)		(fl)
#define aheadfs_flc(core, field)	((core)->fl_##field)
#endif

/*
 * From 6.7 do_splice_direct() takes the destination's freeze protection
 * itself (direct_splice_actor); before, its callers did.
 */
#ifdef AHEADFS_HAVE_SPLICE_FILE_RANGE
#define aheadfs_splice_start_write(file)	do { } while (0)
#define aheadfs_splice_end_write(file)		do { } while (0)
#else
#define aheadfs_splice_start_write(file)	file_start_write(file)
#define aheadfs_splice_end_write(file)		file_end_write(file)
#endif

/*
 * The lower's freeze protection around a write forwarded to it.  From 6.7
 * vfs_iocb_iter_write() takes it itself (kiocb_start_write()) and ends it,
 * or leaves a queued request's end to the completion (kiocb_end_write());
 * taking it here too nests the read side of the lower's percpu rwsem, which
 * deadlocks against a freeze that starts in between, and a queued request
 * would keep one count for ever.  Before 6.7 the caller takes it, and for a
 * queued request hands it to the completion as the VFS's aio does.
 *
 * aheadfs_lower_write_start() returns false if @nowait and the lower is
 * frozen or freezing (the caller's -EAGAIN).  On 6.7+ that is a look only:
 * vfs_iocb_iter_write() waits if a freeze starts right after it.
 * aheadfs_lower_write_end() ends what a synchronous write took;
 * aheadfs_lower_write_queued() hands it to a request the lower queued, and
 * AHEADFS_LOWER_WRITE_ENDS_UNQUEUED says whether the VFS itself ended the
 * protection of a request the lower did not queue.
 */
#ifdef AHEADFS_HAVE_IOCB_WRITE_FREEZE
static inline bool aheadfs_lower_write_start(struct file *lower, bool nowait)
{
	if (!nowait)
		return true;
	if (!file_start_write_trylock(lower))
		return false;
	file_end_write(lower);
	return true;
}
#define aheadfs_lower_write_end(lower)		do { } while (0)
#define aheadfs_lower_write_queued(lower)	do { } while (0)
#define AHEADFS_LOWER_WRITE_ENDS_UNQUEUED	true
#else
static inline bool aheadfs_lower_write_start(struct file *lower, bool nowait)
{
	if (!nowait) {
		file_start_write(lower);
		return true;
	}
	return file_start_write_trylock(lower);
}
#define aheadfs_lower_write_end(lower)		file_end_write(lower)
/* Completion, in another context, ends it (lockdep's hand-over). */
#define aheadfs_lower_write_queued(lower) \
	__sb_writers_release(file_inode(lower)->i_sb, SB_FREEZE_WRITE)
#define AHEADFS_LOWER_WRITE_ENDS_UNQUEUED	false
#endif

#ifndef IOCB_DIO_CALLER_COMP
#define IOCB_DIO_CALLER_COMP	0
#endif

/* A flag taken from a mapping being set up, in ->mmap. */
/* Whether @a's access, change and modification times are @b's. */
#ifdef AHEADFS_HAVE_INODE_GET_MTIME
static inline bool aheadfs_same_times(const struct inode *a,
				      const struct inode *b)
{
	return inode_get_mtime_nsec(a) == inode_get_mtime_nsec(b) &&
	       inode_get_mtime_sec(a) == inode_get_mtime_sec(b) &&
	       inode_get_ctime_nsec(a) == inode_get_ctime_nsec(b) &&
	       inode_get_ctime_sec(a) == inode_get_ctime_sec(b) &&
	       inode_get_atime_nsec(a) == inode_get_atime_nsec(b) &&
	       inode_get_atime_sec(a) == inode_get_atime_sec(b);
}
#else
static inline bool aheadfs_same_times(const struct inode *a,
				      const struct inode *b)
{
	return timespec64_equal(&a->i_mtime, &b->i_mtime) &&
	       timespec64_equal(&a->i_ctime, &b->i_ctime) &&
	       timespec64_equal(&a->i_atime, &b->i_atime);
}
#endif

#ifdef AHEADFS_HAVE_VM_FLAGS_CLEAR
#define aheadfs_vm_flags_clear(vma, flags)	vm_flags_clear(vma, flags)
#else
#define aheadfs_vm_flags_clear(vma, flags)	((vma)->vm_flags &= ~(flags))
#endif

#endif /* _AHEADFS_COMPAT_H */
