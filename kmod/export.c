// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs export_operations, so nfsd (and open_by_handle_at) can find an
 * aheadfs file again from a handle: the handle is the lower file's own.
 */
#include <linux/exportfs.h>
#include <linux/namei.h>
#include <linux/file.h>
#include <linux/cred.h>
#include <linux/dcache.h>
#include "aheadfs.h"

static struct dentry *lower_root(struct super_block *sb)
{
	return AHEADFS_SB(sb)->lower.dentry;
}

/* Over the root of its filesystem, every file of that filesystem is ours. */
static bool lower_is_fs_root(struct super_block *sb)
{
	struct dentry *root = lower_root(sb);

	return root == root->d_sb->s_root;
}

static int lower_encode(struct inode *lower, u32 *fh, int *max_len,
			struct inode *lower_parent)
{
	int type = aheadfs_encode_inode_fh(lower, (struct fid *)fh, max_len,
					   lower_parent);

	/* FILEID_ROOT (0) is nfsd's own name for an export's root. */
	if (type <= 0 || type > FILEID_INVALID)
		return FILEID_INVALID;
	return type;
}

/*
 * One layer needs nothing but the lower handle, type and all: it stays as
 * short as the lower's (NFSv3 allows 64 bytes), and it names the same file
 * after the dentry cache is dropped or aheadfs is mounted again over the
 * same lower.  A handle too large for @max_len yields FILEID_INVALID with
 * the size needed in *max_len, as the lower reports it.
 *
 * When the lower directory is not the root of its filesystem, a file's
 * handle carries its lower parent (the lower's connectable encoding), even
 * if the caller did not ask for one: decoded after a cache drop, the file is
 * then reconnected through that parent and proved to lie under the lower
 * directory (lower_acceptable).  Like nfsd's subtree_check, a file moved to
 * another directory gets a new handle, and its old one is stale.
 */
static int aheadfs_encode_fh(struct inode *inode, u32 *fh, int *max_len,
			     struct inode *parent)
{
	struct dentry *alias = NULL, *dir = NULL;
	int type;

	if (!parent && !S_ISDIR(inode->i_mode) &&
	    !lower_is_fs_root(inode->i_sb)) {
		/* A file unlinked while open has no hashed alias: no parent. */
		alias = d_find_alias(inode);
		if (alias) {
			dir = dget_parent(alias);
			parent = d_inode(dir);
		}
	}
	type = lower_encode(aheadfs_lower_inode(inode), fh, max_len,
			    parent ? aheadfs_lower_inode(parent) : NULL);
	dput(dir);
	dput(alias);
	return type;
}

/*
 * Every file must lie under the lower directory of this mount, or a handle
 * would open a way out of it.  exportfs has connected a directory before
 * asking.  A file that is disconnected (decoded after a cache drop) is not
 * acceptable as it is: exportfs then reconnects it through the parent its
 * handle carries (aheadfs_encode_fh) and asks again; with no parent in the
 * handle it is refused, ESTALE.  A file unlinked while still open keeps its
 * last parent, so it is found as long as it is open, as on the lower.
 */
static int lower_acceptable(void *context, struct dentry *lower)
{
	struct super_block *sb = context;

	if (lower_is_fs_root(sb))
		return 1;
	return is_subdir(lower, lower_root(sb));
}

/*
 * The aheadfs dentry of a lower dentry, connected: each name from the lower
 * root down is looked up in aheadfs, as a path walk would, so every dentry
 * on the way gets its lower path from lookup, and a directory never gets a
 * second, disconnected alias (nor does exportfs need to reconnect one).
 * Takes over the reference to @lower.  -EXDEV when @lower does not lead up
 * to the lower root (disconnected, or outside this mount), -ESTALE when a
 * rename in the lower raced with the walk.
 */
static struct dentry *connect(struct super_block *sb, struct dentry *lower)
{
	struct dentry *upper = dget(sb->s_root);
	struct dentry *cur = dget(lower_root(sb));
	struct dentry *d = NULL, *p = NULL, *next;
	struct name_snapshot name;
	int err;

	while (cur != lower) {
		/* The child of @cur on the way down to @lower. */
		d = dget(lower);
		for (;;) {
			p = dget_parent(d);
			if (p == cur)
				break;
			if (p == d) {
				err = -EXDEV;
				goto fail;
			}
			dput(d);
			d = p;
		}
		dput(p);
		p = NULL;
		take_dentry_name_snapshot(&name, d);
		next = lookup_positive_unlocked(name.name.name, upper,
						name.name.len);
		release_dentry_name_snapshot(&name);
		if (IS_ERR(next)) {
			err = PTR_ERR(next) == -ENOENT ? -ESTALE : PTR_ERR(next);
			goto fail;
		}
		if (aheadfs_lower_inode(d_inode(next)) != d_inode(d)) {
			dput(next);
			err = -ESTALE;
			goto fail;
		}
		dput(upper);
		upper = next;
		dput(cur);
		cur = d;
	}
	dput(cur);
	dput(lower);
	return upper;
fail:
	dput(p);
	dput(d);
	dput(cur);
	dput(upper);
	dput(lower);
	return ERR_PTR(err);
}

/*
 * Only our own code makes dentries without a lower path (below); it does
 * so under this lock, so that whoever finds an alias here finds it whole.
 */
static DEFINE_MUTEX(anon_lock);

/*
 * A disconnected aheadfs dentry for a file whose lower dentry is
 * disconnected too (a handle decoded after the caches were dropped): there
 * is no name to walk.  Takes over the reference to @lower.  Lookup never
 * splices such an alias of a file, and other aliases get their lower path
 * before their inode, so the lock covers every way to find one half-made.
 */
static struct dentry *anon_alias(struct super_block *sb, struct dentry *lower)
{
	struct aheadfs_dentry_info *di;
	struct dentry *dentry;
	struct inode *inode;

	di = kzalloc(sizeof(*di), GFP_KERNEL);
	if (!di) {
		dput(lower);
		return ERR_PTR(-ENOMEM);
	}
	di->lower.mnt = mntget(AHEADFS_SB(sb)->lower.mnt);
	di->lower.dentry = lower;

	inode = aheadfs_iget(sb, d_inode(lower));
	if (IS_ERR(inode)) {
		dentry = ERR_CAST(inode);
		goto out;
	}
	mutex_lock(&anon_lock);
	dentry = d_obtain_alias(inode);
	if (!IS_ERR(dentry) && !dentry->d_fsdata) {
		/* Whole before visible: RCU walks read it without the lock. */
		smp_store_release(&dentry->d_fsdata, di);
		di = NULL;
	}
	mutex_unlock(&anon_lock);
out:
	if (di) {
		path_put(&di->lower);
		kfree(di);
	}
	return dentry;
}

/*
 * The aheadfs dentry for an acceptable lower dentry: connected by name
 * where the lower has a path to it, else (a file over a whole-filesystem
 * lower after a cache drop, or unlinked while open) a disconnected alias.
 */
static struct dentry *upper_dentry(struct super_block *sb,
				   struct dentry *lower)
{
	struct dentry *upper;

	upper = connect(sb, dget(lower));
	if (!d_is_dir(lower) &&
	    (upper == ERR_PTR(-EXDEV) ||
	     (upper == ERR_PTR(-ESTALE) && d_unhashed(lower))))
		return anon_alias(sb, lower);
	dput(lower);
	if (upper == ERR_PTR(-EXDEV))
		return ERR_PTR(-ESTALE);
	return upper;
}

static struct dentry *aheadfs_fh_to_dentry(struct super_block *sb,
					   struct fid *fid, int fh_len,
					   int fh_type)
{
	struct dentry *lower;

	/* Directories come back connected to the lower root, and checked. */
	lower = exportfs_decode_fh(AHEADFS_SB(sb)->lower.mnt, fid, fh_len,
				   fh_type, lower_acceptable, sb);
	if (IS_ERR(lower))
		return lower;
	return upper_dentry(sb, lower);
}

/*
 * The parent named in a connectable handle (nfsd's subtree_check).  The
 * lower's fh_to_parent may return a disconnected directory; decoding that
 * directory's own handle connects it and checks it like any other.
 */
static struct dentry *aheadfs_fh_to_parent(struct super_block *sb,
					   struct fid *fid, int fh_len,
					   int fh_type)
{
	struct super_block *lower_sb = AHEADFS_SB(sb)->lower.mnt->mnt_sb;
	const struct export_operations *lop = lower_sb->s_export_op;
	u32 fh[MAX_HANDLE_SZ / 4];
	int len = ARRAY_SIZE(fh);
	struct dentry *dir;
	int type;

	if (!lop->fh_to_parent)
		return ERR_PTR(-ESTALE);
	dir = lop->fh_to_parent(lower_sb, fid, fh_len, fh_type);
	if (IS_ERR_OR_NULL(dir))
		return dir ? dir : ERR_PTR(-ESTALE);
	type = lower_encode(d_inode(dir), fh, &len, NULL);
	dput(dir);
	if (type == FILEID_INVALID)
		return ERR_PTR(-ESTALE);
	dir = exportfs_decode_fh(AHEADFS_SB(sb)->lower.mnt, (struct fid *)fh,
				 len, type, lower_acceptable, sb);
	if (IS_ERR(dir))
		return dir;
	return upper_dentry(sb, dir);
}

/*
 * Every aheadfs directory dentry is connected (see connect()), so its
 * parent is the dentry's own, as long as the lower still agrees.
 */
static struct dentry *aheadfs_get_parent(struct dentry *child)
{
	struct dentry *parent = dget_parent(child);
	struct dentry *lower = aheadfs_get_lower(child);
	bool same = lower && parent != child &&
		    READ_ONCE(lower->d_parent) == aheadfs_lower_dentry(parent);

	dput(lower);
	if (!same) {
		dput(parent);
		return ERR_PTR(-ESTALE);
	}
	return parent;
}

struct name_search {
	struct dir_context ctx;
	char *name;
	u64 ino;
	unsigned long seen;
	bool found;
};

static bool name_actor(struct dir_context *ctx, const char *name, int len,
		       loff_t pos, u64 ino, unsigned int type)
{
	struct name_search *ns = container_of(ctx, struct name_search, ctx);

	ns->seen++;
	if (ino != ns->ino || len > NAME_MAX || is_dot_dotdot(name, len))
		return true;
	memcpy(ns->name, name, len);
	ns->name[len] = '\0';
	ns->found = true;
	return false;
}

/*
 * The name of @child in @parent, from the lower: the lower's get_name when
 * it has one, else a search of the lower directory for the lower inode
 * number (what exportfs's default does on any filesystem), so the search
 * runs once, in the lower, under the caller's credentials.
 */
static int aheadfs_get_name(struct dentry *parent, char *name,
			    struct dentry *child)
{
	struct path dir_path = { .mnt = AHEADFS_SB(parent->d_sb)->lower.mnt };
	struct path child_path = { .mnt = dir_path.mnt };
	const struct export_operations *lop;
	struct name_search ns = {
		.ctx.actor = name_actor,
		.name = name,
	};
	struct kstat st;
	struct file *file;
	unsigned long seen;
	int err = -ESTALE;

	dir_path.dentry = aheadfs_get_lower(parent);
	child_path.dentry = aheadfs_get_lower(child);
	if (!dir_path.dentry || !child_path.dentry)
		goto out;
	lop = dir_path.dentry->d_sb->s_export_op;
	if (lop->get_name) {
		err = lop->get_name(dir_path.dentry, name, child_path.dentry);
		goto out;
	}
	err = vfs_getattr_nosec(&child_path, &st, STATX_INO,
				AT_STATX_SYNC_AS_STAT);
	if (err)
		goto out;
	ns.ino = st.ino;
	file = dentry_open(&dir_path, O_RDONLY | O_DIRECTORY, current_cred());
	err = PTR_ERR(file);
	if (IS_ERR(file))
		goto out;
	do {
		seen = ns.seen;
		err = iterate_dir(file, &ns.ctx);
	} while (!err && !ns.found && ns.seen != seen);
	fput(file);
	if (!err && !ns.found)
		err = -ENOENT;
out:
	dput(child_path.dentry);
	dput(dir_path.dentry);
	return err;
}

/* nfsd's "sync" exports: make a namespace change durable in the lower. */
static int aheadfs_commit_metadata(struct inode *inode)
{
	struct inode *lower = aheadfs_lower_inode(inode);
	const struct export_operations *lop = lower->i_sb->s_export_op;

	if (lop && lop->commit_metadata)
		return lop->commit_metadata(lower);
	return sync_inode_metadata(lower, 1);
}

const struct export_operations aheadfs_export_ops = {
	.encode_fh	= aheadfs_encode_fh,
	.fh_to_dentry	= aheadfs_fh_to_dentry,
	.fh_to_parent	= aheadfs_fh_to_parent,
	.get_parent	= aheadfs_get_parent,
	.get_name	= aheadfs_get_name,
	.commit_metadata = aheadfs_commit_metadata,
};
