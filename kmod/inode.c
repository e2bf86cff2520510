// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs inode_operations and xattr handlers: every namespace and attribute
 * operation goes to the lower filesystem under the caller's own credentials,
 * so nothing is possible through the stack that is not possible directly.
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

static aheadfs_idmap_t *lower_idmap(struct super_block *sb)
{
	return aheadfs_mnt_idmap(AHEADFS_SB(sb)->lower.mnt);
}

/*
 * The lower's inode flags that mean the same on ours, where the VFS checks
 * them (append-only, immutable, sync, dirsync, noatime, and an active
 * swapfile, which the VFS refuses to copy, truncate or fallocate).  The rest
 * belong to the lower inode's own machinery and would lie, or oops, on ours:
 * S_AUTOMOUNT (the VFS would call a d_automount we do not have), S_PRIVATE,
 * S_DAX, S_NOSEC, S_KERNEL_FILE and the like.
 */
#define AHEADFS_COPY_I_FLAGS \
	(S_SYNC | S_NOATIME | S_APPEND | S_IMMUTABLE | S_DIRSYNC | S_SWAPFILE)

/*
 * Refresh the attributes the VFS reads from our inode, and restart the
 * attribute cache: the mount's own changes invalidate it.  On a nosuid
 * lower mount a file's set-id bits are hidden from our inode, which is what
 * exec reads, so that running it through aheadfs gains nothing that running
 * it directly would not; getattr still reports the lower's mode.
 */
void aheadfs_copy_attr(struct inode *inode)
{
	struct inode *lower = aheadfs_lower_inode(inode);
	struct vfsmount *mnt = AHEADFS_SB(inode->i_sb)->lower.mnt;
	umode_t mode = READ_ONCE(lower->i_mode);
	unsigned int flags;

	WRITE_ONCE(AHEADFS_I(inode)->lower_mode, mode);
	if (S_ISREG(mode) && (READ_ONCE(mnt->mnt_flags) & MNT_NOSUID))
		mode &= ~(S_ISUID | S_ISGID);
	inode->i_mode = mode;
	inode->i_uid = lower->i_uid;
	inode->i_gid = lower->i_gid;
	inode->i_rdev = lower->i_rdev;
	inode->i_blkbits = lower->i_blkbits;
	fsstack_copy_attr_times(inode, lower);
	set_nlink(inode, READ_ONCE(lower->i_nlink));
	flags = READ_ONCE(inode->i_flags) & ~AHEADFS_COPY_I_FLAGS;
	flags |= READ_ONCE(lower->i_flags) & AHEADFS_COPY_I_FLAGS;
	WRITE_ONCE(inode->i_flags, flags);
	fsstack_copy_inode_size(inode, lower);
	WRITE_ONCE(AHEADFS_I(inode)->attr_time, jiffies);
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
	inode->i_mapping->a_ops = &aheadfs_aops;
	/* The lower owns its ACLs; a copy cached here would go stale. */
	inode->i_acl = ACL_DONT_CACHE;
	inode->i_default_acl = ACL_DONT_CACHE;
	aheadfs_copy_attr(inode);

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
 * Lower dentries aheadfs does not stack over: an automount point (debugfs's
 * tracing, an NFSv4 server's submount) or a managed transit point would need
 * the lower's d_automount/d_manage on our dentry, and a directory without a
 * ->lookup cannot be walked.  Refused with EREMOTE, as overlayfs does.
 */
static bool lower_weird(struct dentry *lower)
{
	if (lower->d_flags & (DCACHE_NEED_AUTOMOUNT | DCACHE_MANAGE_TRANSIT))
		return true;
	return d_is_dir(lower) && !d_can_lookup(lower);
}

static struct dentry *aheadfs_lookup(struct inode *dir, struct dentry *dentry,
				     unsigned int flags)
{
	struct super_block *sb = dir->i_sb;
	struct dentry *lower_parent;
	struct path lower_path;
	struct dentry *lower, *ret;
	struct inode *inode = NULL;
	u64 t0 = aheadfs_op_begin();
	int err;

	lower_parent = aheadfs_get_lower(dentry->d_parent);
	if (!lower_parent) {
		ret = ERR_PTR(-ENOENT);
		goto out;
	}
	err = aheadfs_new_dentry_info(dentry);
	if (err) {
		ret = ERR_PTR(err);
		goto out_dput;
	}
	lower = lookup_one_unlocked(lower_idmap(sb), dentry->d_name.name,
				    lower_parent, dentry->d_name.len);
	if (IS_ERR(lower)) {
		ret = lower;
		goto out_dput;
	}
	if (lower_weird(lower)) {
		aheadfs_err_ratelimited("%pd: an automount point in the lower, not stacked (EREMOTE)\n",
					lower);
		dput(lower);
		ret = ERR_PTR(-EREMOTE);
		goto out_dput;
	}
	lower_path.mnt = mntget(AHEADFS_SB(sb)->lower.mnt);
	lower_path.dentry = lower;
	aheadfs_set_lower_path(dentry, &lower_path);
	WRITE_ONCE(dentry->d_time, jiffies);

	if (d_really_is_positive(lower)) {
		inode = aheadfs_iget(sb, d_inode(lower));
		if (IS_ERR(inode)) {
			ret = ERR_CAST(inode);
			inode = NULL;
			goto out_dput;
		}
	}
	ret = d_splice_alias(inode, dentry);
out_dput:
	dput(lower_parent);
out:
	aheadfs_op_end(sb, AHEADFS_OP_lookup, inode, t0,
		       IS_ERR(ret) ? PTR_ERR(ret) : 0);
	return ret;
}

/*
 * Lock the lower parent for a namespace change and check that the lower
 * dentry still stands under it.  -ESTALE makes the VFS retry the walk with
 * LOOKUP_REVAL, which revalidates against the changed lower.
 */
static struct dentry *lock_lower_parent(struct dentry *dentry)
{
	struct dentry *lower_parent = aheadfs_get_lower(dentry->d_parent);
	struct dentry *lower = aheadfs_lower_dentry(dentry);

	/* Our directory was removed from the lower behind our back. */
	if (!lower_parent)
		return ERR_PTR(-ENOENT);
	inode_lock_nested(d_inode(lower_parent), I_MUTEX_PARENT);
	if (lower->d_parent != lower_parent || d_unhashed(lower)) {
		inode_unlock(d_inode(lower_parent));
		dput(lower_parent);
		return ERR_PTR(-ESTALE);
	}
	return lower_parent;
}

static void unlock_lower_parent(struct dentry *lower_parent)
{
	inode_unlock(d_inode(lower_parent));
	dput(lower_parent);
}

/*
 * After a lower create, attach our inode to @dentry.  Some filesystems leave
 * the new lower dentry unhashed or negative after success: look it up again.
 */
static int instantiate(struct dentry *dentry, struct dentry *lower_parent)
{
	struct aheadfs_dentry_info *di = AHEADFS_D(dentry);
	struct dentry *lower = di->lower.dentry;
	struct inode *inode;

	if (d_unhashed(lower) || d_really_is_negative(lower)) {
		struct dentry *fresh;

		fresh = lookup_one(lower_idmap(dentry->d_sb),
				   dentry->d_name.name, lower_parent,
				   dentry->d_name.len);
		if (IS_ERR(fresh))
			return PTR_ERR(fresh);
		if (d_really_is_negative(fresh)) {
			dput(fresh);
			return -ENOENT;
		}
		dput(di->lower.dentry);
		di->lower.dentry = fresh;
		lower = fresh;
	}
	inode = aheadfs_iget(dentry->d_sb, d_inode(lower));
	if (IS_ERR(inode))
		return PTR_ERR(inode);
	d_instantiate(dentry, inode);
	return 0;
}

static void dir_changed(struct inode *dir)
{
	aheadfs_copy_attr(dir);
}

/* What a create-type operation makes in the lower. */
struct new_object {
	enum aheadfs_meta_op op;
	umode_t mode;
	dev_t rdev;		/* mknod */
	const char *target;	/* symlink */
	bool excl;		/* create */
};

static int make_object(struct inode *dir, struct dentry *dentry,
		       const struct new_object *obj)
{
	aheadfs_idmap_t *idmap = lower_idmap(dir->i_sb);
	struct dentry *lower_parent, *lower;
	struct inode *ldir;
	u64 t0 = aheadfs_op_begin();
	int err;

	err = aheadfs_want_write(dir->i_sb);
	if (err)
		goto out;
	lower_parent = lock_lower_parent(dentry);
	if (IS_ERR(lower_parent)) {
		err = PTR_ERR(lower_parent);
		goto out_drop;
	}
	ldir = d_inode(lower_parent);
	lower = aheadfs_lower_dentry(dentry);
	switch (obj->op) {
	case AHEADFS_OP_create:
		err = vfs_create(idmap, ldir, lower, obj->mode, obj->excl);
		break;
	case AHEADFS_OP_mkdir:
		err = vfs_mkdir(idmap, ldir, lower, obj->mode);
		break;
	case AHEADFS_OP_mknod:
		err = vfs_mknod(idmap, ldir, lower, obj->mode, obj->rdev);
		break;
	default:
		err = vfs_symlink(idmap, ldir, lower, obj->target);
		break;
	}
	if (!err)
		err = instantiate(dentry, lower_parent);
	dir_changed(dir);
	unlock_lower_parent(lower_parent);
out_drop:
	aheadfs_drop_write(dir->i_sb);
out:
	aheadfs_op_end(dir->i_sb, obj->op, d_inode(dentry), t0, err);
	return err;
}

static int aheadfs_create(aheadfs_idmap_t *idmap, struct inode *dir,
			  struct dentry *dentry, umode_t mode, bool excl)
{
	struct new_object obj = {
		.op = AHEADFS_OP_create, .mode = mode, .excl = excl,
	};

	return make_object(dir, dentry, &obj);
}

static int aheadfs_mkdir(aheadfs_idmap_t *idmap, struct inode *dir,
			 struct dentry *dentry, umode_t mode)
{
	struct new_object obj = { .op = AHEADFS_OP_mkdir, .mode = mode };

	return make_object(dir, dentry, &obj);
}

static int aheadfs_mknod(aheadfs_idmap_t *idmap, struct inode *dir,
			 struct dentry *dentry, umode_t mode, dev_t rdev)
{
	struct new_object obj = {
		.op = AHEADFS_OP_mknod, .mode = mode, .rdev = rdev,
	};

	return make_object(dir, dentry, &obj);
}

static int aheadfs_symlink(aheadfs_idmap_t *idmap, struct inode *dir,
			   struct dentry *dentry, const char *target)
{
	struct new_object obj = {
		.op = AHEADFS_OP_symlink, .target = target,
	};

	return make_object(dir, dentry, &obj);
}

static int aheadfs_link(struct dentry *old_dentry, struct inode *dir,
			struct dentry *new_dentry)
{
	struct dentry *lower_parent, *lower_old;
	u64 t0 = aheadfs_op_begin();
	int err = -ENOENT;

	lower_old = aheadfs_get_lower(old_dentry);
	if (!lower_old)
		goto out;
	err = aheadfs_want_write(dir->i_sb);
	if (err)
		goto out_dput;
	lower_parent = lock_lower_parent(new_dentry);
	if (IS_ERR(lower_parent)) {
		err = PTR_ERR(lower_parent);
		goto out_drop;
	}
	err = vfs_link(lower_old, lower_idmap(dir->i_sb),
		       d_inode(lower_parent), aheadfs_lower_dentry(new_dentry),
		       NULL);
	if (!err)
		err = instantiate(new_dentry, lower_parent);
	aheadfs_copy_attr(d_inode(old_dentry));
	dir_changed(dir);
	unlock_lower_parent(lower_parent);
out_drop:
	aheadfs_drop_write(dir->i_sb);
out_dput:
	dput(lower_old);
out:
	aheadfs_op_end(dir->i_sb, AHEADFS_OP_link, d_inode(old_dentry), t0,
		       err);
	return err;
}

/*
 * unlink and rmdir.  On success our dentry is dropped: a negative dentry of
 * ours would keep the removed lower dentry, and with it the lower inode and
 * its blocks, until a cache drop.  Dropped, it is freed with its last
 * reference, at once or at the last close of a file still open.
 */
static int remove_object(struct inode *dir, struct dentry *dentry, bool isdir)
{
	struct inode *inode = d_inode(dentry);
	struct dentry *lower_parent, *lower;
	u64 t0 = aheadfs_op_begin();
	int err;

	err = aheadfs_want_write(dir->i_sb);
	if (err)
		goto out;
	lower_parent = lock_lower_parent(dentry);
	if (IS_ERR(lower_parent)) {
		err = PTR_ERR(lower_parent);
		goto out_drop;
	}
	lower = aheadfs_get_lower(dentry);
	if (!lower)
		err = -ENOENT;
	else if (isdir)
		err = vfs_rmdir(lower_idmap(dir->i_sb), d_inode(lower_parent),
				lower);
	else
		err = vfs_unlink(lower_idmap(dir->i_sb), d_inode(lower_parent),
				 lower, NULL);
	dput(lower);
	if (!err) {
		if (isdir)
			clear_nlink(inode);
		d_drop(dentry);
	}
	/* A file's lower inode outlives its last link while it is open. */
	if (!isdir)
		aheadfs_copy_attr(inode);
	dir_changed(dir);
	unlock_lower_parent(lower_parent);
out_drop:
	aheadfs_drop_write(dir->i_sb);
out:
	aheadfs_op_end(dir->i_sb, isdir ? AHEADFS_OP_rmdir : AHEADFS_OP_unlink,
		       inode, t0, err);
	return err;
}

static int aheadfs_unlink(struct inode *dir, struct dentry *dentry)
{
	return remove_object(dir, dentry, false);
}

static int aheadfs_rmdir(struct inode *dir, struct dentry *dentry)
{
	return remove_object(dir, dentry, true);
}

static int aheadfs_rename(aheadfs_idmap_t *idmap, struct inode *old_dir,
			  struct dentry *old_dentry, struct inode *new_dir,
			  struct dentry *new_dentry, unsigned int flags)
{
	struct super_block *sb = old_dir->i_sb;
	struct dentry *lower_old_parent, *lower_new_parent;
	struct dentry *lower_old, *lower_new;
	struct renamedata rd = {};
	struct dentry *trap;
	u64 t0 = aheadfs_op_begin();
	int err = -EINVAL;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT))
		goto out;

	/*
	 * Pinned, so that an unlink in the lower can only unhash them; the
	 * target is pinned even when negative, so the rename's own
	 * d_delete leaves it positive for racing users of the victim.
	 */
	err = -ENOENT;
	lower_old_parent = aheadfs_get_lower(old_dentry->d_parent);
	lower_new_parent = aheadfs_get_lower(new_dentry->d_parent);
	lower_old = aheadfs_get_lower(old_dentry);
	lower_new = dget(aheadfs_lower_dentry(new_dentry));
	if (!lower_old_parent || !lower_new_parent || !lower_old)
		goto out_dput;
	err = aheadfs_want_write(sb);
	if (err)
		goto out_dput;

	trap = lock_rename(lower_old_parent, lower_new_parent);
	err = -ESTALE;
	if (lower_old->d_parent != lower_old_parent || d_unhashed(lower_old) ||
	    lower_new->d_parent != lower_new_parent || d_unhashed(lower_new))
		goto unlock;
	/* The same checks the VFS makes on the upper, now for the lower. */
	err = -EINVAL;
	if (trap == lower_old)
		goto unlock;
	err = -ENOTEMPTY;
	if (trap == lower_new)
		goto unlock;

	rd.AHEADFS_RD_OLD_IDMAP = lower_idmap(sb);
	rd.old_dir = d_inode(lower_old_parent);
	rd.old_dentry = lower_old;
	rd.AHEADFS_RD_NEW_IDMAP = lower_idmap(sb);
	rd.new_dir = d_inode(lower_new_parent);
	rd.new_dentry = lower_new;
	rd.flags = flags;
	err = vfs_rename(&rd);
	if (!err) {
		aheadfs_copy_attr(d_inode(old_dentry));
		if (d_really_is_positive(new_dentry))
			aheadfs_copy_attr(d_inode(new_dentry));
	}
	dir_changed(old_dir);
	if (new_dir != old_dir)
		dir_changed(new_dir);
unlock:
	unlock_rename(lower_old_parent, lower_new_parent);
	aheadfs_drop_write(sb);
out_dput:
	dput(lower_new);
	dput(lower_old);
	dput(lower_new_parent);
	dput(lower_old_parent);
out:
	aheadfs_op_end(sb, AHEADFS_OP_rename, d_inode(old_dentry), t0, err);
	return err;
}

/*
 * O_TMPFILE: make the unnamed lower file, let our dentry stand for it, and
 * open it through our own ->open like any other file.
 */
static int aheadfs_tmpfile(aheadfs_idmap_t *idmap, struct inode *dir,
			   struct file *file, umode_t mode)
{
	struct dentry *dentry = file->f_path.dentry;
	struct path lower_parent, lower_path;
	struct file *lower_file;
	struct inode *inode;
	u64 t0 = aheadfs_op_begin();
	int err;

	lower_parent.mnt = AHEADFS_SB(dir->i_sb)->lower.mnt;
	lower_parent.dentry = aheadfs_get_lower(dentry->d_parent);
	if (!lower_parent.dentry) {
		err = -ENOENT;
		goto out;
	}
	err = aheadfs_want_write(dir->i_sb);
	if (err) {
		dput(lower_parent.dentry);
		goto out;
	}
	lower_file = aheadfs_tmpfile_open(lower_idmap(dir->i_sb),
					  &lower_parent, mode, file->f_flags,
					  current_cred());
	aheadfs_drop_write(dir->i_sb);
	dput(lower_parent.dentry);
	if (IS_ERR(lower_file)) {
		err = PTR_ERR(lower_file);
		goto out;
	}
	err = aheadfs_new_dentry_info(dentry);
	if (err)
		goto out_fput;
	inode = aheadfs_iget(dir->i_sb, file_inode(lower_file));
	if (IS_ERR(inode)) {
		err = PTR_ERR(inode);
		goto out_fput;
	}
	lower_path = lower_file->f_path;
	path_get(&lower_path);
	aheadfs_set_lower_path(dentry, &lower_path);
	/* d_tmpfile() drops the one link a new inode is expected to have. */
	set_nlink(inode, 1);
	d_tmpfile(file, inode);
	err = finish_open_simple(file, 0);
out_fput:
	fput(lower_file);
out:
	aheadfs_op_end(dir->i_sb, AHEADFS_OP_tmpfile, NULL, t0, err);
	return err;
}

/*
 * Whether @inode's attributes were refreshed from the lower within the
 * mount's attribute timeout (attr_timeout_ms; 0: never).
 */
static bool attr_fresh(struct inode *inode)
{
	unsigned int timeout = READ_ONCE(AHEADFS_SB(inode->i_sb)->attr_timeout_ms);

	return timeout &&
	       time_before(jiffies, READ_ONCE(AHEADFS_I(inode)->attr_time) +
			   msecs_to_jiffies(timeout));
}

/*
 * The lower decides, unless the attribute cache is on and fresh: then
 * generic_permission() decides on our inode's owner, mode and ACL, which
 * are the lower's as last refreshed, as FUSE's default_permissions does
 * (on a noac NFS lower each of the lower's checks is an ACCESS or GETATTR
 * round trip, one per directory of every path walked).  A change made
 * behind the mount's back is then seen when the timeout expires; the
 * mount's own changes refresh the attributes at once, and so does a check
 * the lower decided.
 */
static int aheadfs_permission(aheadfs_idmap_t *idmap, struct inode *inode,
			      int mask)
{
	struct inode *lower = READ_ONCE(AHEADFS_I(inode)->lower);
	u64 t0 = aheadfs_op_begin();
	int err;

	/* RCU walk can meet an inode whose eviction has dropped its lower. */
	if (unlikely(!lower))
		return (mask & MAY_NOT_BLOCK) ? -ECHILD : -ESTALE;
	if (attr_fresh(inode)) {
		/* -ECHILD: an ACL to fetch; the ref-walk retry decides. */
		err = generic_permission(idmap, inode, mask);
		if (err != -ECHILD)
			aheadfs_stat_inc(AHEADFS_SB(inode->i_sb),
					 AHEADFS_STAT_perm_cache_hits);
		goto out;
	}
	err = inode_permission(lower_idmap(inode->i_sb), lower, mask);
	/*
	 * With the cache on, the lower just decided on its current attributes
	 * (an NFS lower revalidated them): ours follow, and the timeout runs
	 * from here.  Else an inode nobody stats (the mount's root, a
	 * directory only walked through) would ask the lower on every walk.
	 */
	if (err != -ECHILD && !(mask & MAY_NOT_BLOCK) &&
	    READ_ONCE(AHEADFS_SB(inode->i_sb)->attr_timeout_ms))
		aheadfs_copy_attr(inode);
out:
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_permission, inode, t0, err);
	return err;
}

/*
 * Whether @lower's filesystem may report attributes that its inode in
 * memory does not hold yet: a network filesystem, whose getattr flushes the
 * file's dirty pages and then reports the server's size and times
 * (nfs_getattr()).  Told by the absence of a block device (FS_REQUIRES_DEV:
 * ext4, xfs, btrfs keep the truth in memory; tmpfs, which has none either,
 * only loses the cache while its pages are dirty, which is always).
 */
static bool lower_attrs_remote(const struct inode *lower)
{
	return !(lower->i_sb->s_type->fs_flags & FS_REQUIRES_DEV);
}

/*
 * Whether a stat may be answered from the attribute cache: fresh, and no
 * data of the file's changing where the cached size and times cannot follow
 * it.  Not after a write through the mount until the lower's getattr has
 * reported (AHEADFS_I_WRITTEN), nor while the file is mapped shared and
 * writable (stores through the mapping update the lower's mtime without a
 * call of ours), nor, on a network lower, while the lower has dirty pages
 * of it or pages under write-back (its getattr would flush them first, and
 * report the server's mtime).
 */
static bool attr_stat_cached(struct inode *inode)
{
	struct address_space *mapping;
	struct inode *lower;

	if (!attr_fresh(inode))
		return false;
	if (!S_ISREG(inode->i_mode))
		return true;
	if (test_bit(AHEADFS_I_WRITTEN, &AHEADFS_I(inode)->flags))
		return false;
	lower = aheadfs_lower_inode(inode);
	mapping = lower->i_mapping;
	if (mapping_writably_mapped(mapping))
		return false;
	return !lower_attrs_remote(lower) ||
	       (!mapping_tagged(mapping, PAGECACHE_TAG_DIRTY) &&
		!mapping_tagged(mapping, PAGECACHE_TAG_WRITEBACK));
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
	bool written;
	int err = 0;

	/* Opt-in attribute cache: for lowers where each getattr is a round trip. */
	if (!(query_flags & AT_STATX_FORCE_SYNC) && attr_stat_cached(inode)) {
		aheadfs_fillattr(idmap, request_mask, inode, stat);
		stat->blocks = inode->i_blocks;
		/* The lower's own mode, set-id bits and all (copy_attr). */
		stat->mode = READ_ONCE(AHEADFS_I(inode)->lower_mode);
		aheadfs_stat_inc(sbi, AHEADFS_STAT_attr_cache_hits);
		goto out;
	}

	/*
	 * Before the lower reports: a write after this sets it again.  Tested
	 * first: a stat must not dirty the inode's cacheline when no write did.
	 */
	written = test_bit(AHEADFS_I_WRITTEN, &AHEADFS_I(inode)->flags) &&
		  test_and_clear_bit(AHEADFS_I_WRITTEN, &AHEADFS_I(inode)->flags);
	lower_path.mnt = sbi->lower.mnt;
	lower_path.dentry = aheadfs_get_lower(dentry);
	if (!lower_path.dentry) {
		/*
		 * Removed from the lower while a cwd or an fd pinned us: the
		 * inode we hold is what a native stat of it would show.
		 */
		aheadfs_copy_attr(inode);
		aheadfs_fillattr(idmap, request_mask, inode, stat);
		stat->blocks = inode->i_blocks;
		goto out;
	}
	err = aheadfs_vfs_getattr(&lower_path, stat, request_mask,
				  query_flags);
	dput(lower_path.dentry);
	if (err) {
		if (written)
			set_bit(AHEADFS_I_WRITTEN, &AHEADFS_I(inode)->flags);
		goto out;
	}
	aheadfs_copy_attr(inode);
out:
	if (!err)
		stat->dev = sb->s_dev;
	aheadfs_op_end(sb, AHEADFS_OP_getattr, inode, t0, err);
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

	inode_lock(lower_inode);
	err = notify_change(lower_idmap(dentry->d_sb), lower, &lower_ia, NULL);
	inode_unlock(lower_inode);
	aheadfs_drop_write(dentry->d_sb);
	dput(lower);
	aheadfs_copy_attr(inode);
out:
	aheadfs_op_end(dentry->d_sb, AHEADFS_OP_setattr, inode, t0, err);
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
	aheadfs_op_end(dentry->d_sb, AHEADFS_OP_readlink, inode, t0,
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
		       t0, ret);
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
	aheadfs_op_end(dentry->d_sb, AHEADFS_OP_ioctl, d_inode(dentry), t0,
		       err);
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
		err = vfs_fileattr_set(lower_idmap(dentry->d_sb), lower, fa);
		aheadfs_drop_write(dentry->d_sb);
	}
	dput(lower);
	aheadfs_copy_attr(d_inode(dentry));
out:
	aheadfs_op_end(dentry->d_sb, AHEADFS_OP_ioctl, d_inode(dentry), t0,
		       err);
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
	acl = vfs_get_acl(lower_idmap(dentry->d_sb), lower, acl_name(type));
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
		err = vfs_set_acl(lower_idmap(dentry->d_sb), lower,
				  acl_name(type), acl);
	else
		err = vfs_remove_acl(lower_idmap(dentry->d_sb), lower,
				     acl_name(type));
	aheadfs_drop_write(dentry->d_sb);
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
	struct dentry *lower = aheadfs_get_lower(dentry);
	u64 t0 = aheadfs_op_begin();
	ssize_t ret = -ENOENT;

	if (lower) {
		ret = vfs_getxattr(lower_idmap(inode->i_sb), lower, name,
				   buffer, size);
		dput(lower);
	}
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_getxattr, inode, t0, ret);
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
		err = vfs_setxattr(lower_idmap(inode->i_sb), lower, name,
				   value, size, flags);
	else
		err = vfs_removexattr(lower_idmap(inode->i_sb), lower, name);
	aheadfs_drop_write(inode->i_sb);
	dput(lower);
	aheadfs_copy_attr(inode);
out:
	aheadfs_op_end(inode->i_sb, AHEADFS_OP_setxattr, inode, t0, err);
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
