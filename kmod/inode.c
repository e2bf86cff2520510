// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs attribute operations and the inode_operations tables: getattr,
 * setattr, permission, xattrs, POSIX ACLs and fileattr go to the lower
 * filesystem under the caller's own credentials, so nothing is possible
 * through the stack that is not possible directly.  Namespace operations
 * are in namei.c, the attribute and entry caches in cache.c.
 */
#include <linux/slab.h>
#include <linux/namei.h>
#include <linux/fs_stack.h>
#include <linux/xattr.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <linux/fileattr.h>
#include <linux/fiemap.h>
#include <linux/file.h>
#include "aheadfs.h"

void aheadfs_copy_i_flags(struct inode *inode)
{
	unsigned int flags;

	flags = READ_ONCE(inode->i_flags) & ~AHEADFS_COPY_I_FLAGS;
	flags |= READ_ONCE(aheadfs_lower_inode(inode)->i_flags) &
		 AHEADFS_COPY_I_FLAGS;
	WRITE_ONCE(inode->i_flags, flags);
}

/*
 * Link counts change concurrently (getattr, readdir priming, rmdir):
 * set_nlink() counts a count leaving or reaching 0 in the superblock's
 * s_remove_count, which two unserialized calls would count twice.
 */
void aheadfs_set_nlink(struct inode *inode, unsigned int nlink)
{
	spin_lock(&inode->i_lock);
	set_nlink(inode, nlink);
	spin_unlock(&inode->i_lock);
}

/*
 * Refresh the attributes the VFS reads from our inode, and restart the
 * attribute cache from @when, the time they were true in the lower
 * (cache.c): the mount's own changes invalidate it.  On a nosuid
 * lower mount a file's set-id bits are hidden from our inode, which is what
 * exec reads, so that running it through aheadfs gains nothing that running
 * it directly would not; getattr still reports the lower's mode.
 */
static __always_inline void copy_attr_at(struct inode *inode,
					 unsigned long when)
{
	struct aheadfs_inode_info *ai = AHEADFS_I(inode);
	struct inode *lower = ai->lower;
	umode_t lower_mode = READ_ONCE(lower->i_mode), mode = lower_mode;
	unsigned int nlink;

	if (S_ISREG(mode) && aheadfs_lower_nosuid(inode->i_sb))
		mode &= ~(S_ISUID | S_ISGID);
	/*
	 * Each field is stored only when it differs: every stat comes here,
	 * and stats of an unchanged file from many CPUs must not bounce our
	 * inode's cachelines between them.
	 */
	if (READ_ONCE(ai->lower_mode) != lower_mode)
		WRITE_ONCE(ai->lower_mode, lower_mode);
	if (inode->i_mode != mode || !uid_eq(inode->i_uid, lower->i_uid) ||
	    !gid_eq(inode->i_gid, lower->i_gid)) {
		aheadfs_perm_forget(inode);
		inode->i_mode = mode;
		inode->i_uid = lower->i_uid;
		inode->i_gid = lower->i_gid;
	}
	if (!aheadfs_same_times(inode, lower))
		fsstack_copy_attr_times(inode, lower);
	nlink = READ_ONCE(lower->i_nlink);
	if (READ_ONCE(inode->i_nlink) != nlink)
		aheadfs_set_nlink(inode, nlink);
	if (aheadfs_i_flags_stale(inode, lower))
		aheadfs_copy_i_flags(inode);
	aheadfs_copy_size(inode, lower);
	if (READ_ONCE(ai->attr_time) != when)
		WRITE_ONCE(ai->attr_time, when);
}

/* Out of line for the other callers; getattr, on every stat, has its own. */
void aheadfs_copy_attr_at(struct inode *inode, unsigned long when)
{
	copy_attr_at(inode, when);
}

/* Refreshed from the lower, whose attributes are true now. */
void aheadfs_copy_attr(struct inode *inode)
{
	aheadfs_copy_attr_at(inode, jiffies);
}

/*
 * The same after the mount wrote the file's data (write, fallocate, copy,
 * clone): the size and times the lower holds in memory now may not be what
 * its getattr reports (an NFS client's mtime is the server's, set when the
 * written pages reach it), so the next stat asks the lower.
 */
void aheadfs_copy_attr_written(struct inode *inode)
{
	set_bit(AHEADFS_I_WRITTEN, &AHEADFS_I(inode)->flags);
	aheadfs_copy_attr(inode);
}

static int iget_test(struct inode *inode, void *lower)
{
	return AHEADFS_I(inode)->lower == lower;
}

static int iget_set(struct inode *inode, void *lower)
{
	AHEADFS_I(inode)->lower = lower;
	return 0;
}

/*
 * i_rwsem of an aheadfs inode, in a class of its stacking depth (see
 * aheadfs_lockdep_sb()), set before unlock_new_inode(), which then leaves
 * a directory's alone.
 */
static void aheadfs_lockdep_inode(struct inode *inode)
{
#ifdef CONFIG_LOCKDEP
	static struct lock_class_key dir_key[FILESYSTEM_MAX_STACK_DEPTH];
	static struct lock_class_key key[FILESYSTEM_MAX_STACK_DEPTH];
	int depth = inode->i_sb->s_stack_depth - 1;

	if (WARN_ON_ONCE(depth < 0 || depth >= FILESYSTEM_MAX_STACK_DEPTH))
		return;
	if (S_ISDIR(inode->i_mode))
		lockdep_set_class(&inode->i_rwsem, &dir_key[depth]);
	else
		lockdep_set_class(&inode->i_rwsem, &key[depth]);
#endif
}

struct inode *aheadfs_iget(struct super_block *sb, struct inode *lower)
{
	struct inode *inode;

	/* The reference moves into the inode, or is dropped if one exists. */
	if (!igrab(lower))
		return ERR_PTR(-ESTALE);
	inode = iget5_locked(sb, lower->i_ino, iget_test, iget_set, lower);
	if (!inode) {
		iput(lower);
		return ERR_PTR(-ENOMEM);
	}
	if (!(inode->i_state & I_NEW)) {
		iput(lower);
		return inode;
	}

	inode->i_ino = lower->i_ino;
	inode->i_generation = lower->i_generation;
	/* Neither changes in an inode's life. */
	inode->i_rdev = lower->i_rdev;
	inode->i_blkbits = lower->i_blkbits;
	inode->i_mapping->a_ops = &aheadfs_aops;
	/* The lower owns its ACLs; a copy cached here would go stale. */
	inode->i_acl = ACL_DONT_CACHE;
	inode->i_default_acl = ACL_DONT_CACHE;
	aheadfs_copy_attr(inode);
	aheadfs_lockdep_inode(inode);

	switch (lower->i_mode & S_IFMT) {
	case S_IFDIR:
		inode->i_op = &aheadfs_dir_iops;
		inode->i_fop = &aheadfs_dir_fops;
		break;
	case S_IFREG:
		inode->i_op = &aheadfs_file_iops;
		inode->i_fop = lower->i_fop && lower->i_fop->remap_file_range ?
			       &aheadfs_file_fops : &aheadfs_file_noremap_fops;
		break;
	case S_IFLNK:
		inode->i_op = &aheadfs_symlink_iops;
		break;
	default:
		inode->i_op = &aheadfs_special_iops;
		init_special_inode(inode, lower->i_mode, lower->i_rdev);
		break;
	}
	unlock_new_inode(inode);
	return inode;
}

/*
 * The lower decides: its mode bits, ACLs, read-only superblock, immutable
 * flag, LSM and, for NFS or FUSE, its server.  Within attr_timeout_ms of a
 * grant by a lower that decides permission itself (a round trip on a noac
 * NFS client), the same caller's check is answered from that grant; a
 * refusal is never cached (cache.c).  A write to a read-only lower mount
 * (a bind mount with MS_RDONLY) is refused here as the VFS refuses it on
 * that mount, and so is a device open on a nodev lower mount:
 * inode_permission() does not look at mounts.
 */
static noinline int permission_slow(struct inode *inode, int mask)
{
	struct inode *lower = READ_ONCE(AHEADFS_I(inode)->lower);
	struct aheadfs_sb_info *sbi = AHEADFS_SB(inode->i_sb);
	u64 t0 = aheadfs_op_begin();
	unsigned long asked = 0, gen = 0;
	bool cacheable;
	int err;

	/* RCU walk can meet an inode whose eviction has dropped its lower. */
	if (unlikely(!lower))
		return (mask & MAY_NOT_BLOCK) ? -ECHILD : -ESTALE;
	/* Not for a walk's MAY_EXEC, which is most of the calls. */
	if (unlikely(mask & (MAY_WRITE | MAY_OPEN))) {
		if ((mask & MAY_WRITE) && __mnt_is_readonly(sbi->lower.mnt) &&
		    (S_ISREG(inode->i_mode) || S_ISDIR(inode->i_mode) ||
		     S_ISLNK(inode->i_mode))) {
			err = -EROFS;
			goto out;
		}
		/* A device node's open, on a lower mounted (or remounted) nodev. */
		if ((mask & MAY_OPEN) &&
		    (S_ISCHR(inode->i_mode) || S_ISBLK(inode->i_mode)) &&
		    aheadfs_lower_nodev(inode->i_sb)) {
			err = -EACCES;
			goto out;
		}
	}
	/*
	 * Grants are kept only for lowers that decide with a ->permission of
	 * their own (NFS's round trip), and only with the cache on.
	 */
	cacheable = lower->i_op->permission && READ_ONCE(sbi->attr_timeout_ms);
	if (cacheable) {
		if (aheadfs_perm_cached(inode, mask)) {
			aheadfs_stat_inc(sbi, AHEADFS_STAT_perm_cache_hits);
			err = 0;
			goto out;
		}
		asked = jiffies;
		gen = aheadfs_perm_gen(inode);
	}
	err = inode_permission(aheadfs_sb_idmap(inode->i_sb), lower, mask);
	if (!err && cacheable && !(mask & MAY_NOT_BLOCK))
		aheadfs_perm_granted(inode, mask, asked, gen);
out:
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_permission, inode,
		       NULL, t0, err);
	return err;
}

/*
 * A walk's MAY_EXEC, an open's MAY_READ and most other checks: a lower
 * inode, no write to refuse on a read-only lower mount and no device to
 * refuse on a nodev one, no grant to look up or keep, no tracepoint on.
 * The rest is permission_slow()'s.
 */
static int aheadfs_permission(aheadfs_idmap_t *idmap, struct inode *inode,
			      int mask)
{
	struct inode *lower = READ_ONCE(AHEADFS_I(inode)->lower);
	struct aheadfs_sb_info *sbi = AHEADFS_SB(inode->i_sb);
	int err;

	if (unlikely(!lower || (mask & MAY_WRITE) ||
		     ((mask & MAY_OPEN) &&
		      (S_ISCHR(inode->i_mode) || S_ISBLK(inode->i_mode))) ||
		     tracepoint_enabled(aheadfs_meta)) ||
	    (lower->i_op->permission && READ_ONCE(sbi->attr_timeout_ms)))
		return permission_slow(inode, mask);
	err = inode_permission(aheadfs_sb_idmap(inode->i_sb), lower, mask);
	/* Untraced (t0 0): the op counted, as aheadfs_op_end() counts it. */
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_permission, inode, NULL, 0, err);
	return err;
}

static int aheadfs_getattr(aheadfs_idmap_t *idmap, const struct path *path,
			   struct kstat *stat, u32 request_mask,
			   unsigned int query_flags)
{
	struct dentry *dentry = path->dentry;
	struct inode *inode = d_inode(dentry);
	struct super_block *sb = dentry->d_sb;
	struct aheadfs_sb_info *sbi = AHEADFS_SB(sb);
	struct path lower_path;
	u64 t0 = aheadfs_op_begin();
	unsigned long asked;
	bool written;
	int err = 0;

	/* Opt-in attribute cache: for lowers where each getattr is a round trip. */
	if (READ_ONCE(sbi->attr_timeout_ms) &&
	    !(query_flags & AT_STATX_FORCE_SYNC) &&
	    (!(request_mask & STATX_BTIME) ||
	     test_bit(AHEADFS_I_BTIME, &AHEADFS_I(inode)->flags)) &&
	    aheadfs_attr_stat_cached(inode)) {
		aheadfs_fillattr(idmap, request_mask, inode, stat);
		aheadfs_stat_cached_fill(inode, stat);
		/* The lower's own mode, set-id bits and all (copy_attr). */
		stat->mode = READ_ONCE(AHEADFS_I(inode)->lower_mode);
		aheadfs_stat_inc(sbi, AHEADFS_STAT_attr_cache_hits);
		goto out;
	}
	if (READ_ONCE(sbi->attr_timeout_ms))
		aheadfs_stat_inc(sbi, AHEADFS_STAT_attr_cache_misses);

	/*
	 * Before the lower reports: a write after this sets it again.  Tested
	 * first: a stat must not dirty the inode's cacheline when no write did.
	 */
	written = test_bit(AHEADFS_I_WRITTEN, &AHEADFS_I(inode)->flags) &&
		  test_and_clear_bit(AHEADFS_I_WRITTEN, &AHEADFS_I(inode)->flags);
	/*
	 * No reference of our own for the call: the caller's on our dentry
	 * pins our dentry_info and with it the reference it holds on the
	 * lower dentry, which is never replaced while we are positive.  That
	 * reference also keeps the lower dentry positive: d_delete() turns
	 * a dentry negative only when its caller holds the last reference,
	 * and otherwise unhashes it, so a concurrent unlink or rmdir in the
	 * lower (or a d_invalidate(), or a rename, which only moves it) leaves
	 * it and its inode as they are for the call.
	 */
	lower_path.mnt = sbi->lower.mnt;
	lower_path.dentry = aheadfs_lower_dentry(dentry);
	if (d_really_is_negative(lower_path.dentry)) {
		/*
		 * Removed from the lower while a cwd or an fd pinned us: the
		 * inode we hold is what a native stat of it would show.
		 */
		aheadfs_copy_attr(inode);
		aheadfs_fillattr(idmap, request_mask, inode, stat);
		stat->blocks = inode->i_blocks;
		goto out;
	}
	asked = jiffies;
	/* With the cache on, the birth time too: a stat from it gives it. */
	if (READ_ONCE(sbi->attr_timeout_ms))
		request_mask |= STATX_BTIME;
	err = aheadfs_vfs_getattr(&lower_path, stat, request_mask,
				  query_flags);
	if (err) {
		if (written)
			set_bit(AHEADFS_I_WRITTEN, &AHEADFS_I(inode)->flags);
		goto out;
	}
	/* True in the lower since before the call: stamped as of then. */
	copy_attr_at(inode, asked);
	if (READ_ONCE(sbi->attr_timeout_ms))
		aheadfs_stat_stamp(inode, stat, asked);
out:
	if (!err)
		stat->dev = sb->s_dev;
	aheadfs_op_end(sb, AHEADFS_OP_getattr, inode, dentry, t0, err);
	return err;
}

static int aheadfs_setattr(aheadfs_idmap_t *idmap, struct dentry *dentry,
			   struct iattr *ia)
{
	struct inode *inode = d_inode(dentry);
	struct inode *lower_inode = aheadfs_lower_inode(inode);
	struct iattr lower_ia = *ia;
	struct dentry *lower;
	u64 t0 = aheadfs_op_begin();
	int err = -ENOENT;

	lower = aheadfs_get_lower(dentry);
	if (!lower)
		goto out;
	err = aheadfs_want_write(dentry->d_sb);
	if (err) {
		dput(lower);
		goto out;
	}
	if (lower_ia.ia_valid & ATTR_FILE)
		lower_ia.ia_file = aheadfs_lower_file(ia->ia_file);
	/* notify_change() on the lower derives the mode from these itself. */
	if (lower_ia.ia_valid & (ATTR_KILL_SUID | ATTR_KILL_SGID))
		lower_ia.ia_valid &= ~ATTR_MODE;

	/*
	 * A size change takes write access to the lower inode, as
	 * do_truncate() takes it to ours: a program running from the lower
	 * file (directly or through another mount) refuses it, ETXTBSY.
	 */
	if (ia->ia_valid & ATTR_SIZE) {
		err = get_write_access(lower_inode);
		if (err)
			goto out_drop;
	}
	inode_lock(lower_inode);
	err = notify_change(aheadfs_sb_idmap(dentry->d_sb), lower, &lower_ia, NULL);
	inode_unlock(lower_inode);
	if (ia->ia_valid & ATTR_SIZE)
		put_write_access(lower_inode);
	if (ia->ia_valid & (ATTR_MODE | ATTR_UID | ATTR_GID))
		aheadfs_perm_forget(inode);
out_drop:
	aheadfs_drop_write(dentry->d_sb);
	dput(lower);
	/* A new size frees or maps blocks: the next stat asks the lower. */
	if (ia->ia_valid & ATTR_SIZE)
		clear_bit(AHEADFS_I_BLOCKS, &AHEADFS_I(inode)->flags);
	aheadfs_copy_attr(inode);
out:
	aheadfs_op_end(dentry->d_sb, AHEADFS_OP_setattr, inode,
		       dentry, t0, err);
	return err;
}

static const char *aheadfs_get_link(struct dentry *dentry,
				    struct inode *inode,
				    struct delayed_call *done)
{
	struct dentry *lower;
	const char *link;
	u64 t0;

	if (!dentry)
		return ERR_PTR(-ECHILD);
	t0 = aheadfs_op_begin();
	lower = aheadfs_get_lower(dentry);
	if (lower) {
		/* The body lives as long as the lower inode, which we pin. */
		link = vfs_get_link(lower, done);
		dput(lower);
	} else {
		link = ERR_PTR(-ENOENT);
	}
	aheadfs_op_end(dentry->d_sb, AHEADFS_OP_readlink, inode,
		       dentry, t0,
		       IS_ERR(link) ? PTR_ERR(link) : 0);
	return link;
}

static ssize_t aheadfs_listxattr(struct dentry *dentry, char *list,
				 size_t size)
{
	struct dentry *lower = aheadfs_get_lower(dentry);
	u64 t0 = aheadfs_op_begin();
	ssize_t ret = -ENOENT;

	if (lower) {
		ret = vfs_listxattr(lower, list, size);
		dput(lower);
	}
	aheadfs_op_end(dentry->d_sb, AHEADFS_OP_listxattr, d_inode(dentry),
		       dentry, t0, ret);
	return ret;
}

/*
 * FS_IOC_[GS]ETFLAGS and FS_IOC_FS[GS]ETXATTR, the ioctls aheadfs passes on
 * (counted as op_ioctl); other ioctls are not forwarded.
 */
static int aheadfs_fileattr_get(struct dentry *dentry, struct fileattr *fa)
{
	struct dentry *lower = aheadfs_get_lower(dentry);
	u64 t0 = aheadfs_op_begin();
	int err = -ENOENT;

	if (lower) {
		err = vfs_fileattr_get(lower, fa);
		dput(lower);
	}
	aheadfs_op_end(dentry->d_sb, AHEADFS_OP_ioctl, d_inode(dentry),
		       dentry, t0, err);
	return err;
}

static int aheadfs_fileattr_set(aheadfs_idmap_t *idmap,
				struct dentry *dentry, struct fileattr *fa)
{
	struct dentry *lower = aheadfs_get_lower(dentry);
	u64 t0 = aheadfs_op_begin();
	int err = -ENOENT;

	if (!lower)
		goto out;
	err = aheadfs_want_write(dentry->d_sb);
	if (!err) {
		err = vfs_fileattr_set(aheadfs_sb_idmap(dentry->d_sb), lower, fa);
		aheadfs_drop_write(dentry->d_sb);
	}
	dput(lower);
	aheadfs_copy_attr(d_inode(dentry));
out:
	aheadfs_op_end(dentry->d_sb, AHEADFS_OP_ioctl, d_inode(dentry),
		       dentry, t0, err);
	return err;
}

static int aheadfs_fiemap(struct inode *inode,
			  struct fiemap_extent_info *fieinfo, u64 start,
			  u64 len)
{
	struct inode *lower = aheadfs_lower_inode(inode);

	if (!lower->i_op->fiemap)
		return -EOPNOTSUPP;
	return lower->i_op->fiemap(lower, fieinfo, start, len);
}

#ifdef AHEADFS_HAVE_VFS_SET_ACL
static const char *acl_name(int type)
{
	return type == ACL_TYPE_ACCESS ? XATTR_NAME_POSIX_ACL_ACCESS :
					 XATTR_NAME_POSIX_ACL_DEFAULT;
}

static struct posix_acl *aheadfs_get_acl(aheadfs_idmap_t *idmap,
					 struct dentry *dentry, int type)
{
	struct dentry *lower = aheadfs_get_lower(dentry);
	struct posix_acl *acl;

	if (!lower)
		return ERR_PTR(-ENOENT);
	acl = vfs_get_acl(aheadfs_sb_idmap(dentry->d_sb), lower, acl_name(type));
	dput(lower);
	return acl;
}

static int aheadfs_set_acl(aheadfs_idmap_t *idmap, struct dentry *dentry,
			   struct posix_acl *acl, int type)
{
	struct dentry *lower = aheadfs_get_lower(dentry);
	int err;

	if (!lower)
		return -ENOENT;
	err = aheadfs_want_write(dentry->d_sb);
	if (err)
		goto out;
	if (acl)
		err = vfs_set_acl(aheadfs_sb_idmap(dentry->d_sb), lower,
				  acl_name(type), acl);
	else
		err = vfs_remove_acl(aheadfs_sb_idmap(dentry->d_sb), lower,
				     acl_name(type));
	aheadfs_drop_write(dentry->d_sb);
	aheadfs_perm_forget(d_inode(dentry));
out:
	dput(lower);
	aheadfs_copy_attr(d_inode(dentry));
	return err;
}

/*
 * For callers that have an inode but no dentry (nfsd's ACL attributes).
 * Never cached here (ACL_DONT_CACHE): the lower's own cache is the one.
 */
static struct posix_acl *aheadfs_get_inode_acl(struct inode *inode, int type,
					       bool rcu)
{
	struct inode *lower = READ_ONCE(AHEADFS_I(inode)->lower);

	if (rcu)
		return ERR_PTR(-ECHILD);
	if (!lower)
		return ERR_PTR(-ESTALE);
	return get_inode_acl(lower, type);
}

#define AHEADFS_ACL_IOPS				\
	.get_inode_acl	= aheadfs_get_inode_acl,	\
	.get_acl	= aheadfs_get_acl,		\
	.set_acl	= aheadfs_set_acl,
#else
/*
 * Before vfs_set_acl(), ACL xattrs reach the catch-all handler below.  The
 * VFS still reads ACLs through ->get_acl (generic_permission() in the
 * attribute cache's permission checks, nfsd), and calls it without a
 * check for an inode whose ACLs are ACL_DONT_CACHE, as ours are: it must
 * exist, and it asks the lower.
 */
static struct posix_acl *aheadfs_get_acl_compat(struct inode *inode,
						int type, bool rcu)
{
	struct inode *lower = READ_ONCE(AHEADFS_I(inode)->lower);

	if (rcu)
		return ERR_PTR(-ECHILD);
	if (!lower)
		return ERR_PTR(-ESTALE);
	return get_acl(lower, type);
}

#define AHEADFS_ACL_IOPS				\
	.get_acl	= aheadfs_get_acl_compat,
#endif

#define AHEADFS_COMMON_IOPS				\
	.permission	= aheadfs_permission,		\
	.getattr	= aheadfs_getattr,		\
	.setattr	= aheadfs_setattr,		\
	.listxattr	= aheadfs_listxattr,		\
	.fileattr_get	= aheadfs_fileattr_get,		\
	.fileattr_set	= aheadfs_fileattr_set,		\
	AHEADFS_ACL_IOPS

const struct inode_operations aheadfs_dir_iops = {
	.lookup		= aheadfs_lookup,
	.create		= aheadfs_create,
	.link		= aheadfs_link,
	.unlink		= aheadfs_unlink,
	.symlink	= aheadfs_symlink,
	.mkdir		= aheadfs_mkdir,
	.rmdir		= aheadfs_rmdir,
	.mknod		= aheadfs_mknod,
	.rename		= aheadfs_rename,
	.tmpfile	= aheadfs_tmpfile,
	AHEADFS_COMMON_IOPS
};

const struct inode_operations aheadfs_file_iops = {
	.fiemap		= aheadfs_fiemap,
	AHEADFS_COMMON_IOPS
};

const struct inode_operations aheadfs_symlink_iops = {
	.get_link	= aheadfs_get_link,
	.permission	= aheadfs_permission,
	.getattr	= aheadfs_getattr,
	.setattr	= aheadfs_setattr,
	.listxattr	= aheadfs_listxattr,
};

const struct inode_operations aheadfs_special_iops = {
	AHEADFS_COMMON_IOPS
};

static int aheadfs_xattr_get(const struct xattr_handler *handler,
			     struct dentry *dentry, struct inode *inode,
			     const char *name, void *buffer, size_t size)
{
	struct dentry *lower;
	u64 t0 = aheadfs_op_begin();
	ssize_t ret = -ENODATA;

	/*
	 * exec reads a file's capabilities here, having checked nosuid on
	 * our mount only: on a nosuid lower they take no effect, as there.
	 * getxattr(2) still shows them, as stat shows a set-id bit.
	 */
	if (current->in_execve && !strcmp(name, XATTR_NAME_CAPS) &&
	    aheadfs_lower_nosuid(inode->i_sb))
		goto out;
	/*
	 * An LSM reads its label when d_obtain_alias() makes a disconnected
	 * alias (export.c's anon_alias()), before the alias has its lower
	 * path: nothing to read from yet.
	 */
	if (!READ_ONCE(dentry->d_fsdata))
		goto out;
	ret = -ENOENT;
	lower = aheadfs_get_lower(dentry);
	if (lower) {
		ret = vfs_getxattr(aheadfs_sb_idmap(inode->i_sb), lower, name,
				   buffer, size);
		dput(lower);
	}
out:
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_getxattr, inode,
		       dentry, t0, ret);
	return ret;
}

static int aheadfs_xattr_set(const struct xattr_handler *handler,
			     aheadfs_idmap_t *idmap, struct dentry *dentry,
			     struct inode *inode, const char *name,
			     const void *value, size_t size, int flags)
{
	struct dentry *lower = aheadfs_get_lower(dentry);
	u64 t0 = aheadfs_op_begin();
	int err = -ENOENT;

	if (!lower)
		goto out;
	err = aheadfs_want_write(inode->i_sb);
	if (err) {
		dput(lower);
		goto out;
	}
	if (value)
		err = vfs_setxattr(aheadfs_sb_idmap(inode->i_sb), lower, name,
				   value, size, flags);
	else
		err = vfs_removexattr(aheadfs_sb_idmap(inode->i_sb), lower, name);
	aheadfs_drop_write(inode->i_sb);
	aheadfs_perm_forget(inode);
	/* An xattr may take or free a block: the next stat asks. */
	clear_bit(AHEADFS_I_BLOCKS, &AHEADFS_I(inode)->flags);
	dput(lower);
	aheadfs_copy_attr(inode);
out:
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_setxattr, inode,
		       dentry, t0, err);
	return err;
}

/* One handler for every name: the lower decides what it supports. */
static const struct xattr_handler aheadfs_xattr_handler = {
	.prefix	= "",
	.get	= aheadfs_xattr_get,
	.set	= aheadfs_xattr_set,
};

const struct xattr_handler *aheadfs_xattr_handlers[] = {
	&aheadfs_xattr_handler,
	NULL
};
