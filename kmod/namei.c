// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs namespace operations: lookup, and every change to a directory
 * (create, mkdir, mknod, symlink, link, unlink, rmdir, rename, O_TMPFILE).
 * Each goes to the lower under the caller's own credentials, through the
 * lower's mount (aheadfs_want_write()), with the lower parent locked and
 * checked to still hold the lower dentry; create-type operations share one
 * helper (make_object()).  The attribute operations are in inode.c.
 */
#include <linux/slab.h>
#include <linux/namei.h>
#include <linux/file.h>
#include "aheadfs.h"

/*
 * Lower dentries aheadfs does not stack over: an automount point (debugfs's
 * tracing, an NFSv4 server's submount) or a managed transit point would need
 * the lower's d_automount/d_manage on our dentry, and a directory without a
 * ->lookup cannot be walked.  Refused with EREMOTE, as overlayfs does.
 */
bool aheadfs_lower_weird(struct dentry *lower)
{
	if (lower->d_flags & (DCACHE_NEED_AUTOMOUNT | DCACHE_MANAGE_TRANSIT))
		return true;
	return d_is_dir(lower) && !d_can_lookup(lower);
}

struct dentry *aheadfs_lookup(struct inode *dir, struct dentry *dentry,
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
	lower = lookup_one_unlocked(aheadfs_sb_idmap(sb), dentry->d_name.name,
				    lower_parent, dentry->d_name.len);
	if (IS_ERR(lower)) {
		ret = lower;
		goto out_dput;
	}
	if (aheadfs_lower_weird(lower)) {
		aheadfs_err_ratelimited("%pd: an automount point in the lower, not stacked (EREMOTE)\n",
					lower);
		dput(lower);
		ret = ERR_PTR(-EREMOTE);
		goto out_dput;
	}
	lower_path.mnt = mntget(AHEADFS_SB(sb)->lower.mnt);
	lower_path.dentry = lower;
	aheadfs_set_lower_path(dentry, &lower_path);
	aheadfs_entry_stamp(dentry, jiffies);

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
	aheadfs_op_end(sb, AHEADFS_OP_lookup, inode, dentry, t0,
		       IS_ERR(ret) ? PTR_ERR(ret) : 0);
	return ret;
}

/*
 * With the lower parent locked: whether @lower still is what @dentry stands
 * for, hashed under @lower_parent with @dentry's name and holding the inode
 * @dentry's inode wraps, or none when @dentry is negative.  The VFS looked
 * @dentry up and revalidated it before it locked our parent, and the lower
 * directory can change in between (directly, or through another mount of
 * it): a create there instantiates the very negative dentry ours pins, a
 * rename there moves or renames the one ours pins.  Acting on it anyway
 * would replace a file that RENAME_NOREPLACE or O_EXCL said was absent, or
 * remove a name other than the caller's.  The parent's lock keeps the
 * name, the parent and the inode stable while the change is made.
 */
static bool lower_matches(struct dentry *dentry, struct dentry *lower,
			  struct dentry *lower_parent)
{
	struct inode *inode = d_inode(dentry);

	if (lower->d_parent != lower_parent || d_unhashed(lower))
		return false;
	if (inode ? d_inode(lower) != AHEADFS_I(inode)->lower :
		    d_really_is_positive(lower))
		return false;
	return lower->d_name.len == dentry->d_name.len &&
	       !memcmp(lower->d_name.name, dentry->d_name.name,
		       dentry->d_name.len);
}

/*
 * Lock the lower parent for a namespace change and check that the lower
 * dentry still stands for ours under it (lower_matches()).  -ESTALE makes
 * the VFS retry the walk with LOOKUP_REVAL, which revalidates against the
 * changed lower.
 */
static struct dentry *lock_lower_parent(struct dentry *dentry)
{
	struct dentry *lower_parent = aheadfs_get_lower(dentry->d_parent);
	struct dentry *lower = aheadfs_lower_dentry(dentry);

	/* Our directory was removed from the lower behind our back. */
	if (!lower_parent)
		return ERR_PTR(-ENOENT);
	inode_lock_nested(d_inode(lower_parent), I_MUTEX_PARENT);
	if (!lower_matches(dentry, lower, lower_parent)) {
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

		fresh = lookup_one(aheadfs_sb_idmap(dentry->d_sb),
				   dentry->d_name.name, lower_parent,
				   dentry->d_name.len);
		if (IS_ERR(fresh))
			return PTR_ERR(fresh);
		if (d_really_is_negative(fresh)) {
			dput(fresh);
			return -ENOENT;
		}
		/* Published before the old one goes: see aheadfs_d_revalidate(). */
		WRITE_ONCE(di->lower.dentry, fresh);
		aheadfs_forget_dentry_match(di);
		dput(lower);
		lower = fresh;
	}
	inode = aheadfs_iget(dentry->d_sb, d_inode(lower));
	if (IS_ERR(inode))
		return PTR_ERR(inode);
	d_instantiate(dentry, inode);
	return 0;
}

/*
 * A directory's names changed through the mount: its attributes are
 * refreshed, its listing dropped, and its blocks (a directory grows by
 * blocks its inode in memory may not count: xfs) asked for at the next stat.
 */
static void dir_changed(struct inode *dir)
{
	clear_bit(AHEADFS_I_BLOCKS, &AHEADFS_I(dir)->flags);
	aheadfs_copy_attr(dir);
	aheadfs_dir_changed(dir);
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
	aheadfs_idmap_t *idmap = aheadfs_sb_idmap(dir->i_sb);
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
	aheadfs_op_end(dir->i_sb, obj->op, d_inode(dentry), dentry,
		       t0, err);
	return err;
}

int aheadfs_create(aheadfs_idmap_t *idmap, struct inode *dir,
		   struct dentry *dentry, umode_t mode, bool excl)
{
	struct new_object obj = {
		.op = AHEADFS_OP_create, .mode = mode, .excl = excl,
	};

	return make_object(dir, dentry, &obj);
}

int aheadfs_mkdir(aheadfs_idmap_t *idmap, struct inode *dir,
		  struct dentry *dentry, umode_t mode)
{
	struct new_object obj = { .op = AHEADFS_OP_mkdir, .mode = mode };

	return make_object(dir, dentry, &obj);
}

int aheadfs_mknod(aheadfs_idmap_t *idmap, struct inode *dir,
		  struct dentry *dentry, umode_t mode, dev_t rdev)
{
	struct new_object obj = {
		.op = AHEADFS_OP_mknod, .mode = mode, .rdev = rdev,
	};

	return make_object(dir, dentry, &obj);
}

int aheadfs_symlink(aheadfs_idmap_t *idmap, struct inode *dir,
		    struct dentry *dentry, const char *target)
{
	struct new_object obj = {
		.op = AHEADFS_OP_symlink, .target = target,
	};

	return make_object(dir, dentry, &obj);
}

int aheadfs_link(struct dentry *old_dentry, struct inode *dir,
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
	err = vfs_link(lower_old, aheadfs_sb_idmap(dir->i_sb),
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
	aheadfs_op_end(dir->i_sb, AHEADFS_OP_link, d_inode(old_dentry),
		       new_dentry, t0, err);
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
	/*
	 * A reference of the call's own, besides our dentry's: with two,
	 * the lower's d_delete() unhashes its dentry instead of making it
	 * negative, so that open and getattr, which use our dentry's lower
	 * without a reference of their own, never meet a negative one.  An
	 * NFS lower counts that reference as a user and removes the file by
	 * a silly rename (.nfsXXXX, then REMOVE) instead of a REMOVE.
	 */
	lower = aheadfs_get_lower(dentry);
	if (!lower)
		err = -ENOENT;
	else if (isdir)
		err = vfs_rmdir(aheadfs_sb_idmap(dir->i_sb), d_inode(lower_parent),
				lower);
	else
		err = vfs_unlink(aheadfs_sb_idmap(dir->i_sb), d_inode(lower_parent),
				 lower, NULL);
	dput(lower);
	if (!err) {
		if (isdir)
			aheadfs_set_nlink(inode, 0);
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
		       inode, dentry, t0, err);
	return err;
}

int aheadfs_unlink(struct inode *dir, struct dentry *dentry)
{
	return remove_object(dir, dentry, false);
}

int aheadfs_rmdir(struct inode *dir, struct dentry *dentry)
{
	return remove_object(dir, dentry, true);
}

int aheadfs_rename(aheadfs_idmap_t *idmap, struct inode *old_dir,
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

	/*
	 * From 6.7 lock_rename() fails, holding nothing, when the two lower
	 * parents have no common ancestor (a lower superblock with several
	 * roots: NFS mounts sharing one).
	 */
	trap = lock_rename(lower_old_parent, lower_new_parent);
	if (IS_ERR(trap)) {
		err = PTR_ERR(trap);
		goto drop_write;
	}
	err = -ESTALE;
	if (!lower_matches(old_dentry, lower_old, lower_old_parent) ||
	    !lower_matches(new_dentry, lower_new, lower_new_parent))
		goto unlock;
	/* The same checks the VFS makes on the upper, now for the lower. */
	err = -EINVAL;
	if (trap == lower_old)
		goto unlock;
	err = -ENOTEMPTY;
	if (trap == lower_new)
		goto unlock;

	rd.AHEADFS_RD_OLD_IDMAP = aheadfs_sb_idmap(sb);
	rd.old_dir = d_inode(lower_old_parent);
	rd.old_dentry = lower_old;
	rd.AHEADFS_RD_NEW_IDMAP = aheadfs_sb_idmap(sb);
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
	if (new_dir != old_dir) {
		dir_changed(new_dir);
		/* A moved directory's listing names its old parent as "..". */
		if (!err && d_is_dir(old_dentry))
			aheadfs_dir_changed(d_inode(old_dentry));
		/* So does the one moved the other way by RENAME_EXCHANGE. */
		if (!err && (flags & RENAME_EXCHANGE) && d_is_dir(new_dentry))
			aheadfs_dir_changed(d_inode(new_dentry));
	}
unlock:
	unlock_rename(lower_old_parent, lower_new_parent);
drop_write:
	aheadfs_drop_write(sb);
out_dput:
	dput(lower_new);
	dput(lower_old);
	dput(lower_new_parent);
	dput(lower_old_parent);
out:
	aheadfs_op_end(sb, AHEADFS_OP_rename, d_inode(old_dentry),
		       old_dentry, t0, err);
	return err;
}

/*
 * O_TMPFILE: make the unnamed lower file, let our dentry stand for it, and
 * open it through our own ->open like any other file.
 */
int aheadfs_tmpfile(aheadfs_idmap_t *idmap, struct inode *dir,
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
	lower_file = aheadfs_tmpfile_open(aheadfs_sb_idmap(dir->i_sb),
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
	aheadfs_set_nlink(inode, 1);
	d_tmpfile(file, inode);
	err = finish_open_simple(file, 0);
out_fput:
	fput(lower_file);
out:
	aheadfs_op_end(dir->i_sb, AHEADFS_OP_tmpfile, NULL, NULL, t0,
		       err);
	return err;
}
