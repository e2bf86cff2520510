// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs file_operations: each open file holds one open lower file, and data
 * operations are forwarded to it.  aheadfs keeps no page cache of its own:
 * reads and writes use the lower file's, and mmap maps the lower file.
 */
#include <linux/slab.h>
#include <linux/file.h>
#include <linux/fcntl.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/uio.h>
#include <linux/fadvise.h>
#include <linux/splice.h>
#include "aheadfs.h"

/*
 * fcntl(F_SETFL) changes our flags; the lower file must follow, in f_flags
 * and in the kiocb flags in-kernel I/O on it starts from (splice, the
 * chunked copy).  Called before every data operation on the lower file.
 */
int aheadfs_sync_lower_flags(struct file *file)
{
	struct file *lower = aheadfs_lower_file(file);
	const unsigned int mask = O_APPEND | O_DIRECT | O_NONBLOCK | O_NOATIME;
	unsigned int flags = READ_ONCE(file->f_flags) & mask;
	int err;

	if ((READ_ONCE(lower->f_flags) & mask) == flags)
		return 0;
	if ((flags & O_DIRECT) && !(lower->f_mode & FMODE_CAN_ODIRECT))
		return -EINVAL;
	if (lower->f_op->check_flags) {
		err = lower->f_op->check_flags(flags);
		if (err)
			return err;
	}
	spin_lock(&lower->f_lock);
	lower->f_flags = (lower->f_flags & ~mask) | flags;
	lower->f_iocb_flags = iocb_flags(lower);
	spin_unlock(&lower->f_lock);
	return 0;
}

static ssize_t aheadfs_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct file *file = iocb->ki_filp;
	int err;

	if (!iov_iter_count(to))
		return 0;
	err = aheadfs_sync_lower_flags(file);
	if (err)
		return err;
	return aheadfs_sched_read(iocb, to);
}

static ssize_t aheadfs_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file_inode(file);
	struct aheadfs_sb_info *sbi = AHEADFS_SB(inode->i_sb);
	struct file *lower = aheadfs_lower_file(file);
	u64 t0 = aheadfs_op_begin();
	ssize_t ret;

	if (!iov_iter_count(from))
		return 0;
	ret = aheadfs_sync_lower_flags(file);
	if (ret)
		return ret;
	ret = aheadfs_lower_rw(iocb, lower, from, WRITE);
	if (ret > 0)
		aheadfs_stat_add(sbi, AHEADFS_STAT_write_bytes, ret);
	aheadfs_stat_inc(sbi, AHEADFS_STAT_write_reqs);
	if (ret != -EIOCBQUEUED)
		aheadfs_copy_attr_written(inode);
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_write, inode,
		       file->f_path.dentry, t0, ret);
	return ret;
}

/*
 * The file's aheadfs_file_info, made now if it has none yet (a regular
 * file's first need of one): threads that race here agree on one.  NULL
 * with no memory.
 */
struct aheadfs_file_info *aheadfs_file_info(struct file *file, gfp_t gfp)
{
	unsigned long p = (unsigned long)READ_ONCE(file->private_data);
	struct aheadfs_file_info *fi;
	unsigned long old;

	if (p & AHEADFS_FILE_INFO)
		return (struct aheadfs_file_info *)(p - AHEADFS_FILE_INFO);
	fi = kmem_cache_zalloc(aheadfs_file_cachep, gfp);
	if (!fi)
		return NULL;
	fi->lower = (struct file *)p;
	/* What a file without its info stands for: see lower_readahead(). */
	fi->set_random = true;
	/* Fully ordered: whoever reads the tagged pointer sees fi whole. */
	old = (unsigned long)cmpxchg(&file->private_data, (void *)p,
				     (void *)((unsigned long)fi |
					      AHEADFS_FILE_INFO));
	if (old != p) {
		kmem_cache_free(aheadfs_file_cachep, fi);
		return (struct aheadfs_file_info *)(old - AHEADFS_FILE_INFO);
	}
	return fi;
}

static int aheadfs_open(struct inode *inode, struct file *file)
{
	struct aheadfs_file_info *fi = NULL;
	struct path lower_path;
	struct file *lower;
	unsigned int flags;
	u64 t0 = aheadfs_op_begin();
	int err;

	/*
	 * A directory's readdir state and an exec's denied writes need our
	 * information from the start; a regular file's is made when needed.
	 */
	if (!S_ISREG(inode->i_mode) || (file->f_flags & __FMODE_EXEC)) {
		fi = kmem_cache_zalloc(aheadfs_file_cachep, GFP_KERNEL);
		if (!fi) {
			err = -ENOMEM;
			goto out;
		}
	}
	/* Creation and truncation already happened through our inode ops. */
	flags = file->f_flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC);
	if (flags & __O_TMPFILE)
		flags &= ~(__O_TMPFILE | O_DIRECTORY);
	/* exec and uselib on a lower mounted (or remounted) noexec. */
	if ((file->f_flags & __FMODE_EXEC) && aheadfs_lower_noexec(inode->i_sb)) {
		err = -EACCES;
		goto out_free;
	}
	/*
	 * Our file pins our dentry, whose reference on the lower dentry
	 * keeps it positive (as in aheadfs_getattr()); the lower file takes
	 * its own.
	 */
	lower_path.mnt = AHEADFS_SB(inode->i_sb)->lower.mnt;
	lower_path.dentry = aheadfs_lower_dentry(file->f_path.dentry);
	if (d_really_is_negative(lower_path.dentry)) {
		err = -ENOENT;
		goto out_free;
	}
	lower = dentry_open(&lower_path, flags, current_cred());
	if (IS_ERR(lower)) {
		err = PTR_ERR(lower);
		goto out_free;
	}
	/*
	 * exec denies writes to our inode; the lower's must be denied too,
	 * or the program could be rewritten under it from the lower (or
	 * another mount), and one the lower has open for write must not run.
	 */
	if ((file->f_flags & __FMODE_EXEC) && S_ISREG(inode->i_mode)) {
		err = deny_write_access(lower);
		if (err) {
			fput(lower);
			goto out_free;
		}
		fi->denied_write = true;
	}
	if (fi) {
		fi->lower = lower;
		file->private_data = (void *)((unsigned long)fi |
					      AHEADFS_FILE_INFO);
	} else {
		file->private_data = lower;
	}
	file->f_mode |= lower->f_mode & (FMODE_CAN_ODIRECT | FMODE_NOWAIT);

	if (S_ISREG(inode->i_mode)) {
		/*
		 * What the VFS does to the file's pages without asking us
		 * (sync_file_range(2)) reaches the lower's, which are the
		 * only ones; write-back errors are reported from there on.
		 */
		file->f_mapping = lower->f_mapping;
		file->f_wb_err = filemap_sample_wb_err(file->f_mapping);
		aheadfs_copy_attr(inode);
		aheadfs_prefetch_open(file);
	}
	err = 0;
	goto out;

out_free:
	if (fi)
		kmem_cache_free(aheadfs_file_cachep, fi);
out:
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_open, inode,
		       file->f_path.dentry, t0, err);
	return err;
}

static int aheadfs_release(struct inode *inode, struct file *file)
{
	struct aheadfs_file_info *fi = AHEADFS_F(file);
	struct file *lower = aheadfs_lower_file(file);
	u64 t0 = aheadfs_op_begin();

	if (fi) {
		if (S_ISREG(inode->i_mode))
			aheadfs_prefetch_release(file);
		else if (S_ISDIR(inode->i_mode))
			aheadfs_dir_release(fi);
		if (fi->denied_write)
			allow_write_access(lower);
		kmem_cache_free(aheadfs_file_cachep, fi);
	}
	fput(lower);
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_release, inode,
		       file->f_path.dentry, t0, 0);
	return 0;
}

static int aheadfs_flush(struct file *file, fl_owner_t id)
{
	struct file *lower = aheadfs_lower_file(file);
	int err = 0;

	/* NFS lowers write back on close (close-to-open consistency). */
	if (lower->f_op->flush)
		err = lower->f_op->flush(lower, id);
	/*
	 * Then the closer's POSIX locks go, as a close of the lower file
	 * would drop them: our shadows, each unlock reaching the lower
	 * (aheadfs_lock()), and then whatever the owner still holds on the
	 * lower file, shadow or not.  The VFS drops our inode's locks after
	 * ->flush only while our inode has any, and a lower lock must never
	 * outlive its owner's close.
	 */
	locks_remove_posix(file, id);
	locks_remove_posix(lower, id);
	return err;
}

/*
 * Locks live on the lower inode, so that they conflict with locks taken on
 * the lower directly, through another aheadfs mount, or (on NFS) by other
 * clients of the server.  For the call, the request is aimed at the lower
 * file: a lower's ->lock (NFS, lockd) reaches its open state through it,
 * and the lock recorded (a copy of the request) is the lower file's, owned
 * by it where the open file owns the lock (flock, OFD), so that the lower
 * file's last close, at our release, drops it.  Afterwards the request is
 * the caller's again: the VFS checks that it still names its file.
 */
static int lower_lock(struct file *file, int cmd, struct file_lock *fl,
		      bool flock)
{
	struct file *lower = aheadfs_lower_file(file);
	aheadfs_lock_core_t *c = aheadfs_fl_core(fl);
	bool owned = aheadfs_flc(c, owner) == (fl_owner_t)file;
	int err;

	aheadfs_flc(c, file) = lower;
	if (owned)
		aheadfs_flc(c, owner) = (fl_owner_t)lower;
	if (flock)
		err = lower->f_op->flock ? lower->f_op->flock(lower, cmd, fl) :
					    locks_lock_file_wait(lower, fl);
	else if (IS_GETLK(cmd))
		err = vfs_test_lock(lower, fl);
	else
		err = vfs_lock_file(lower, cmd, fl, NULL);
	/* F_GETLK may have filled in the conflicting lock: leave that be. */
	if (aheadfs_flc(c, file) == lower)
		aheadfs_flc(c, file) = file;
	if (owned && aheadfs_flc(c, owner) == (fl_owner_t)lower)
		aheadfs_flc(c, owner) = (fl_owner_t)file;
	return err;
}

/* How many stale shadows one grant may clear before it gives up. */
#define AHEADFS_SHADOW_TRIES	16

/*
 * Drop what another owner's shadow @conf holds of @fl's range: the lower
 * has just granted @fl there, so that owner holds no conflicting lock on
 * the lower any more (it closed another descriptor of the file on the
 * lower, unlocked through another mount, or an NFS lower lost the lock).
 */
static int shadow_drop_stale(struct file *file, struct file_lock *conf,
			     struct file_lock *fl)
{
	aheadfs_lock_core_t *cc = aheadfs_fl_core(conf);
	struct file_lock un;
	aheadfs_lock_core_t *uc = aheadfs_fl_core(&un);

	locks_init_lock(&un);
	aheadfs_flc(uc, owner) = aheadfs_flc(cc, owner);
	aheadfs_flc(uc, flags) = aheadfs_flc(cc, flags) & (FL_POSIX | FL_OFDLCK);
	aheadfs_flc(uc, type) = F_UNLCK;
	aheadfs_flc(uc, pid) = aheadfs_flc(cc, pid);
	aheadfs_flc(uc, file) = file;
	un.fl_start = max(conf->fl_start, fl->fl_start);
	un.fl_end = min(conf->fl_end, fl->fl_end);
	return posix_lock_file(file, &un, NULL);
}

/*
 * Record on our inode the shadow of @fl, which the lower has just granted.
 * The lower is the authority: a conflicting shadow is stale and goes
 * (shadow_drop_stale()), so a shadow never refuses what the lower granted,
 * and the shadow never waits (the lower did the waiting).  If it still
 * cannot be recorded (no memory), the lower lock is given back and the
 * error returned: a lower lock with no shadow would not be dropped at its
 * owner's close.  Giving back unlocks the range for the owner, so locks it
 * held there before this request go too; only on that error.
 */
static int shadow_lock(struct file *file, struct file_lock *fl)
{
	aheadfs_lock_core_t *c = aheadfs_fl_core(fl);
	unsigned int sleep = aheadfs_flc(c, flags) & FL_SLEEP;
	unsigned char type = aheadfs_flc(c, type);
	struct file_lock conf;
	int err, tries;

	aheadfs_flc(c, flags) &= ~FL_SLEEP;
	for (tries = 0; ; tries++) {
		locks_init_lock(&conf);
		err = posix_lock_file(file, fl, &conf);
		if (err == -EAGAIN && tries < AHEADFS_SHADOW_TRIES)
			err = shadow_drop_stale(file, &conf, fl) ?: -EAGAIN;
		locks_release_private(&conf);
		if (err != -EAGAIN || tries == AHEADFS_SHADOW_TRIES)
			break;
	}
	if (err) {
		pr_warn_ratelimited("aheadfs: %pD: no record of a lock the lower granted (%d): lower lock given back\n",
				    file, err);
		aheadfs_flc(c, type) = F_UNLCK;
		lower_lock(file, F_SETLK, fl, false);
		aheadfs_flc(c, type) = type;
		if (err == -EAGAIN)
			err = -ENOLCK;
	}
	aheadfs_flc(c, flags) |= sleep;
	return err;
}

/*
 * POSIX and OFD locks are also recorded on our own inode, as a shadow of
 * the lower's: what the VFS, nfsd and lockd do with our inode's locks
 * without asking us (drop them at close, after a close/fcntl race, for a
 * dead NFS client; look for them before releasing a lock owner) then comes
 * back here as an unlock, and reaches the lower.  A lower lock taken
 * through us always has its shadow (added after it, removed before it, the
 * lower lock given back if the shadow cannot be added), and a close drops
 * the owner's lower locks whatever the shadows say (aheadfs_flush()).  A
 * shadow may outlive its lower lock (released on the lower behind our
 * back); it then never refuses anything the lower grants (shadow_lock()),
 * and F_GETLK asks the lower.
 */
static int aheadfs_lock(struct file *file, int cmd, struct file_lock *fl)
{
	bool unlock = aheadfs_flc(aheadfs_fl_core(fl), type) == F_UNLCK;
	int err;

	if (IS_GETLK(cmd))
		return lower_lock(file, cmd, fl, false);
	if (unlock) {
		err = posix_lock_file(file, fl, NULL);
		if (err)
			return err;
	}
	err = lower_lock(file, cmd, fl, false);
	if (err || unlock)
		return err;
	return shadow_lock(file, fl);
}

static int aheadfs_flock(struct file *file, int cmd, struct file_lock *fl)
{
	return lower_lock(file, cmd, fl, true);
}

static int aheadfs_fsync(struct file *file, loff_t start, loff_t end,
			 int datasync)
{
	struct inode *inode = file_inode(file);
	u64 t0 = aheadfs_op_begin();
	int err;

	err = vfs_fsync_range(aheadfs_lower_file(file), start, end, datasync);
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_fsync, inode,
		       file->f_path.dentry, t0, err);
	return err;
}

static loff_t aheadfs_llseek(struct file *file, loff_t offset, int whence)
{
	struct inode *inode = file_inode(file);
	struct file *lower = aheadfs_lower_file(file);
	u64 t0 = aheadfs_op_begin();
	loff_t ret;

	/*
	 * SEEK_DATA, SEEK_HOLE and SEEK_END are the lower's to answer, and
	 * directory offsets are the lower's cookies (telldir/seekdir).
	 */
	inode_lock(inode);
	lower->f_pos = file->f_pos;
	ret = vfs_llseek(lower, offset, whence);
	file->f_pos = lower->f_pos;
	inode_unlock(inode);
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_llseek, inode,
		       file->f_path.dentry, t0, ret);
	return ret;
}

static int aheadfs_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct inode *inode = file_inode(file);
	u64 t0 = aheadfs_op_begin();
	int err;

	/*
	 * As do_mmap() treats a mapping of a file on a noexec mount, for the
	 * lower's noexec, as it is now: PROT_EXEC is refused, and the mapping
	 * may not be made executable later either (mprotect(2) looks only at
	 * VM_MAYEXEC, which do_mmap() set from our mount's flags).
	 */
	if (aheadfs_lower_noexec(inode->i_sb)) {
		if (vma->vm_flags & VM_EXEC) {
			err = -EPERM;
			goto out;
		}
		aheadfs_vm_flags_clear(vma, VM_MAYEXEC);
	}
	err = aheadfs_backing_mmap(file, aheadfs_lower_file(file), vma);
out:
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_mmap, inode,
		       file->f_path.dentry, t0, err);
	return err;
}

static long aheadfs_fallocate(struct file *file, int mode, loff_t offset,
			      loff_t len)
{
	struct inode *inode = file_inode(file);
	u64 t0 = aheadfs_op_begin();
	long err;

	err = vfs_fallocate(aheadfs_lower_file(file), mode, offset, len);
	aheadfs_copy_attr_written(inode);
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_fallocate, inode,
		       file->f_path.dentry, t0, err);
	return err;
}

/* Without this, fadvise and readahead(2) act on our no-op backing device. */
static int aheadfs_fadvise(struct file *file, loff_t offset, loff_t len,
			   int advice)
{
	struct inode *inode = file_inode(file);
	u64 t0 = aheadfs_op_begin();
	int err;

	err = vfs_fadvise(aheadfs_lower_file(file), offset, len, advice);
	if (!err)
		aheadfs_prefetch_advised(file, advice);
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_fadvise, inode,
		       file->f_path.dentry, t0, err);
	return err;
}

static int aheadfs_iterate_shared(struct file *file, struct dir_context *ctx)
{
	struct file *lower = aheadfs_lower_file(file);
	struct inode *inode = file_inode(file);
	u64 t0 = aheadfs_op_begin();
	int err;

	err = aheadfs_iterate_lower(file, lower, ctx);
	file->f_pos = lower->f_pos;
	aheadfs_copy_attr(inode);
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_readdir, inode,
		       file->f_path.dentry, t0, err);
	return err;
}

#define AHEADFS_FILE_FOPS						\
	.owner		= THIS_MODULE,					\
	.open		= aheadfs_open,					\
	.release	= aheadfs_release,				\
	.flush		= aheadfs_flush,				\
	.llseek		= aheadfs_llseek,				\
	.read_iter	= aheadfs_read_iter,				\
	.write_iter	= aheadfs_write_iter,				\
	.splice_read	= aheadfs_splice_read,				\
	.splice_write	= iter_file_splice_write,			\
	.mmap		= aheadfs_mmap,					\
	.fsync		= aheadfs_fsync,				\
	.fallocate	= aheadfs_fallocate,				\
	.fadvise	= aheadfs_fadvise,				\
	.lock		= aheadfs_lock,					\
	.flock		= aheadfs_flock,				\
	.setlease	= simple_nosetlease,				\
	.copy_file_range = aheadfs_copy_file_range

/*
 * Files whose lower can clone or dedupe get remap_file_range; the others
 * have none, so FICLONE and FIDEDUPERANGE fail exactly as on the lower.
 */
const struct file_operations aheadfs_file_fops = {
	AHEADFS_FILE_FOPS,
	.remap_file_range = aheadfs_remap_file_range,
};

const struct file_operations aheadfs_file_noremap_fops = {
	AHEADFS_FILE_FOPS,
};

const struct file_operations aheadfs_dir_fops = {
	.owner		= THIS_MODULE,
	.open		= aheadfs_open,
	.release	= aheadfs_release,
	.llseek		= aheadfs_llseek,
	.read		= generic_read_dir,
	.iterate_shared	= aheadfs_iterate_shared,
	.fsync		= aheadfs_fsync,
	.flush		= aheadfs_flush,
	.lock		= aheadfs_lock,
	.flock		= aheadfs_flock,
	.setlease	= simple_nosetlease,
};

/*
 * Our inodes never hold pages; direct_IO is here only so that O_DIRECT opens
 * pass the VFS check, and the lower decides whether O_DIRECT works.
 */
const struct address_space_operations aheadfs_aops = {
	.direct_IO	= noop_direct_IO,
};
