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
 * found again in that parent and so proved to lie under the lower
 * directory.  A file since moved elsewhere is looked for under the lower
 * directory (place_file), so the handle stays valid across a rename.
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
 * asking.  A non-directory that is disconnected (decoded after a cache
 * drop) cannot be checked as it is: it is taken, and place_file() then
 * finds it a parent under the lower directory or refuses it.  A file
 * unlinked while still open keeps its last parent, so it is found as long
 * as it is open, as on the lower.
 */
static int lower_acceptable(void *context, struct dentry *lower)
{
	struct super_block *sb = context;

	if (lower_is_fs_root(sb))
		return 1;
	return is_subdir(lower, lower_root(sb));
}

static int lower_acceptable_file(void *context, struct dentry *lower)
{
	if (!d_is_dir(lower) && IS_ROOT(lower))
		return 1;
	return lower_acceptable(context, lower);
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

	di = aheadfs_alloc_dentry_info();
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

/*
 * The connected lower directory that a connectable handle names as its
 * parent, under the lower directory; NULL when the handle names none.  The
 * lower's fh_to_parent may return a disconnected directory; decoding that
 * directory's own handle connects it and checks it like any other.
 */
static struct dentry *lower_handle_parent(struct super_block *sb,
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
		return NULL;
	dir = lop->fh_to_parent(lower_sb, fid, fh_len, fh_type);
	if (IS_ERR_OR_NULL(dir))
		return dir;
	type = lower_encode(d_inode(dir), fh, &len, NULL);
	dput(dir);
	if (type == FILEID_INVALID)
		return ERR_PTR(-ESTALE);
	return exportfs_decode_fh(AHEADFS_SB(sb)->lower.mnt, (struct fid *)fh,
				  len, type, lower_acceptable, sb);
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

/* The inode number the lower's readdir gives @lower. */
static int lower_ino(struct vfsmount *mnt, struct dentry *lower, u64 *ino)
{
	struct path path = { .mnt = mnt, .dentry = lower };
	struct kstat st;
	int err;

	err = vfs_getattr_nosec(&path, &st, STATX_INO, AT_STATX_SYNC_AS_STAT);
	if (!err)
		*ino = st.ino;
	return err;
}

/*
 * The name of @child in the lower directory @dir: the lower's get_name
 * when it has one, else a search of @dir for the lower inode number (what
 * exportfs's default does on any filesystem), under the caller's
 * credentials.
 */
static int lower_name_in(const struct path *dir, struct dentry *child,
			 char *name)
{
	const struct export_operations *lop = dir->dentry->d_sb->s_export_op;
	struct name_search ns = {
		.ctx.actor = name_actor,
		.name = name,
	};
	struct file *file;
	unsigned long seen;
	int err;

	if (lop->get_name)
		return lop->get_name(dir->dentry, name, child);
	err = lower_ino(dir->mnt, child, &ns.ino);
	if (err)
		return err;
	file = dentry_open(dir, O_RDONLY | O_DIRECTORY, current_cred());
	if (IS_ERR(file))
		return PTR_ERR(file);
	do {
		seen = ns.seen;
		err = iterate_dir(file, &ns.ctx);
	} while (!err && !ns.found && ns.seen != seen);
	fput(file);
	if (!err && !ns.found)
		err = -ENOENT;
	return err;
}

struct search_name {
	struct list_head list;
	int len;
	char name[];
};

struct search_dir {
	struct list_head list;
	struct dentry *dentry;
};

struct tree_search {
	struct dir_context ctx;
	u64 ino;
	unsigned long left;		/* entries still to be read */
	unsigned long seen;
	struct list_head names;		/* subdirectories, then the match */
	bool found;
	int err;
};

static bool tree_actor(struct dir_context *ctx, const char *name, int len,
		       loff_t pos, u64 ino, unsigned int type)
{
	struct tree_search *ts = container_of(ctx, struct tree_search, ctx);
	struct search_name *sn;

	ts->seen++;
	if (len > NAME_MAX || is_dot_dotdot(name, len))
		return true;
	if (!ts->left) {
		ts->err = -E2BIG;
		return false;
	}
	ts->left--;
	if (ino != ts->ino && type != DT_DIR && type != DT_UNKNOWN)
		return true;
	sn = kmalloc(struct_size(sn, name, len + 1), GFP_KERNEL);
	if (!sn) {
		ts->err = -ENOMEM;
		return false;
	}
	sn->len = len;
	memcpy(sn->name, name, len);
	sn->name[len] = '\0';
	if (ino == ts->ino) {
		/* First on the list: looked up before any subdirectory. */
		list_add(&sn->list, &ts->names);
		ts->found = true;
		return false;
	}
	list_add_tail(&sn->list, &ts->names);
	return true;
}

/* Reads the lower directory @dir into @ts; an unreadable one is passed. */
static void search_read_dir(struct vfsmount *mnt, struct dentry *dir,
			    struct tree_search *ts)
{
	struct path path = { .mnt = mnt, .dentry = dir };
	struct file *file;
	unsigned long seen;
	int err;

	file = dentry_open(&path, O_RDONLY | O_DIRECTORY, current_cred());
	if (IS_ERR(file))
		return;
	do {
		seen = ts->seen;
		err = iterate_dir(file, &ts->ctx);
	} while (!err && !ts->found && !ts->err && ts->seen != seen);
	fput(file);
}

/*
 * @d, looked up in the search: the dentry searched for, or a directory
 * queued to be read (an error pointer either way, the reference taken).
 */
static struct dentry *search_next(struct dentry *lower, struct dentry *d,
				  struct list_head *queue)
{
	struct search_dir *sd;

	if (d_inode(d) == d_inode(lower))
		return d;
	sd = d_is_dir(d) ? kmalloc(sizeof(*sd), GFP_KERNEL) : NULL;
	if (!sd) {
		dput(d);
		return ERR_PTR(-ESTALE);
	}
	sd->dentry = d;
	list_add_tail(&sd->list, queue);
	return ERR_PTR(-ESTALE);
}

/*
 * The connected lower dentry of the non-directory @lower (disconnected),
 * found by a breadth-first search of the lower directory for its inode
 * number, reading at most the mount's fh_search_entries entries
 * (Documentation/copy-offload.rst, "File handles"; 0: no search).  -ESTALE
 * when it is not there (moved out, or never in), or too far to be found.
 */
static struct dentry *search_lower(struct super_block *sb,
				   struct dentry *lower)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(sb);
	struct vfsmount *mnt = sbi->lower.mnt;
	struct tree_search ts = {
		.ctx.actor = tree_actor,
		.left = READ_ONCE(sbi->fh_search_entries),
		.names = LIST_HEAD_INIT(ts.names),
	};
	unsigned long bound = ts.left;
	struct dentry *found = ERR_PTR(-ESTALE);
	struct search_name *sn, *nsn;
	struct search_dir *sd, *nsd;
	LIST_HEAD(queue);
	struct dentry *d;
	int err;

	if (!bound)
		return ERR_PTR(-ESTALE);
	err = lower_ino(mnt, lower, &ts.ino);
	if (err)
		return ERR_PTR(err);
	sd = kmalloc(sizeof(*sd), GFP_KERNEL);
	if (!sd)
		return ERR_PTR(-ENOMEM);
	sd->dentry = dget(lower_root(sb));
	list_add_tail(&sd->list, &queue);

	while (!list_empty(&queue) && IS_ERR(found) && !ts.err) {
		sd = list_first_entry(&queue, struct search_dir, list);
		list_del(&sd->list);
		ts.found = false;
		search_read_dir(mnt, sd->dentry, &ts);
		list_for_each_entry_safe(sn, nsn, &ts.names, list) {
			list_del(&sn->list);
			if (IS_ERR(found) && !ts.err &&
			    !fatal_signal_pending(current)) {
				d = lookup_positive_unlocked(sn->name,
							     sd->dentry,
							     sn->len);
				if (!IS_ERR(d))
					found = search_next(lower, d, &queue);
			}
			kfree(sn);
		}
		dput(sd->dentry);
		kfree(sd);
		if (fatal_signal_pending(current))
			ts.err = -EINTR;
	}
	list_for_each_entry_safe(sd, nsd, &queue, list) {
		dput(sd->dentry);
		kfree(sd);
	}
	if (ts.err == -E2BIG)
		pr_warn_ratelimited("aheadfs: a file handle's inode %llu not found in the first %lu entries of the lower directory (fh_search_entries): stale\n",
				    ts.ino, bound);
	if (IS_ERR(found) && ts.err == -ENOMEM)
		found = ERR_PTR(-ENOMEM);
	return found;
}

/*
 * A disconnected lower non-directory (its handle decoded after a cache
 * drop) placed under the lower directory: found in the parent its handle
 * names, which is the common case, else, if the handle names a parent at
 * all (aheadfs's handles do), looked for under the lower directory, since
 * the file may have been moved.  A handle naming no parent was not made by
 * this mount: -ESTALE.  Takes over the reference to @lower.
 */
static struct dentry *place_file(struct super_block *sb, struct fid *fid,
				 int fh_len, int fh_type,
				 struct dentry *lower)
{
	struct path dir = { .mnt = AHEADFS_SB(sb)->lower.mnt };
	char name[NAME_MAX + 1];
	struct dentry *d;

	dir.dentry = lower_handle_parent(sb, fid, fh_len, fh_type);
	if (!dir.dentry) {
		dput(lower);
		return ERR_PTR(-ESTALE);
	}
	if (!IS_ERR(dir.dentry)) {
		d = ERR_PTR(-ENOENT);
		if (!lower_name_in(&dir, lower, name))
			d = lookup_positive_unlocked(name, dir.dentry,
						     strlen(name));
		dput(dir.dentry);
		if (!IS_ERR(d)) {
			if (d_inode(d) == d_inode(lower)) {
				dput(lower);
				return d;
			}
			dput(d);
		}
	}
	d = search_lower(sb, lower);
	dput(lower);
	return d;
}

static struct dentry *aheadfs_fh_to_dentry(struct super_block *sb,
					   struct fid *fid, int fh_len,
					   int fh_type)
{
	struct dentry *lower;

	/* Directories come back connected to the lower root, and checked. */
	lower = exportfs_decode_fh(AHEADFS_SB(sb)->lower.mnt, fid, fh_len,
				   fh_type, lower_acceptable_file, sb);
	if (IS_ERR(lower))
		return lower;
	if (!d_is_dir(lower) && IS_ROOT(lower) && !lower_is_fs_root(sb)) {
		lower = place_file(sb, fid, fh_len, fh_type, lower);
		if (IS_ERR(lower))
			return lower;
	}
	return upper_dentry(sb, lower);
}

/* The parent named in a connectable handle (nfsd's subtree_check). */
static struct dentry *aheadfs_fh_to_parent(struct super_block *sb,
					   struct fid *fid, int fh_len,
					   int fh_type)
{
	struct dentry *dir = lower_handle_parent(sb, fid, fh_len, fh_type);

	if (IS_ERR_OR_NULL(dir))
		return dir ? dir : ERR_PTR(-ESTALE);
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

/* The name of @child in @parent, from the lower. */
static int aheadfs_get_name(struct dentry *parent, char *name,
			    struct dentry *child)
{
	struct path dir = { .mnt = AHEADFS_SB(parent->d_sb)->lower.mnt };
	struct dentry *lower_child = aheadfs_get_lower(child);
	int err = -ESTALE;

	dir.dentry = aheadfs_get_lower(parent);
	if (dir.dentry && lower_child)
		err = lower_name_in(&dir, lower_child, name);
	dput(lower_child);
	dput(dir.dentry);
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
