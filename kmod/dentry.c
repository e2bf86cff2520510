// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs dentry_operations: each dentry pins the lower dentry it stands for,
 * and is revalidated against it on every walk, since other processes may
 * change the lower directory behind the mount's back.  Entry caching for slow
 * lowers (entry_timeout_ms, cache.c) only skips the lower's own, costly
 * revalidation.
 */
#include <linux/slab.h>
#include <linux/namei.h>
#include <linux/fs_stack.h>
#include "aheadfs.h"

int aheadfs_new_dentry_info(struct dentry *dentry)
{
	struct aheadfs_dentry_info *di;

	/* Charged to the caller's memory cgroup, as the dentry is. */
	di = kzalloc(sizeof(*di), GFP_KERNEL_ACCOUNT);
	if (!di)
		return -ENOMEM;
	dentry->d_fsdata = di;
	return 0;
}

/* Takes over the caller's references to @path. */
void aheadfs_set_lower_path(struct dentry *dentry, struct path *path)
{
	AHEADFS_D(dentry)->lower = *path;
}

static void aheadfs_d_release(struct dentry *dentry)
{
	struct aheadfs_dentry_info *di = dentry->d_fsdata;

	if (!di)
		return;
	path_put(&di->lower);
	/* An RCU walk may still be reading it (aheadfs_d_revalidate). */
	kfree_rcu(di, rcu);
}

/*
 * Whether @len bytes at @a and @b are the same: a word at a time, inline,
 * for the name compare of every walked component (memcmp() goes a byte at
 * a time).  Reads nothing beyond @len.
 */
static inline bool same_bytes(const unsigned char *a, const unsigned char *b,
			      unsigned int len)
{
	for (; len >= sizeof(unsigned long); len -= sizeof(unsigned long)) {
		if (get_unaligned((const unsigned long *)a) !=
		    get_unaligned((const unsigned long *)b))
			return false;
		a += sizeof(unsigned long);
		b += sizeof(unsigned long);
	}
	for (; len; len--)
		if (*a++ != *b++)
			return false;
	return true;
}

/*
 * Compare our name with the lower dentry's without its d_lock.  A rename in
 * the lower may change the name under us: d_seq tells, and the name and
 * length are only trusted as a pair read inside one d_seq section.  An old
 * name stays readable until an RCU grace period has passed.  Anything in
 * doubt drops the walk to ref-walk.
 */
static int same_name_rcu(const struct dentry *dentry,
			 const struct dentry *lower)
{
	unsigned int seq = read_seqcount_begin(&lower->d_seq);
	const unsigned char *name = READ_ONCE(lower->d_name.name);
	unsigned int len = READ_ONCE(lower->d_name.len);

	if (read_seqcount_retry(&lower->d_seq, seq))
		return -ECHILD;
	if (len != dentry->d_name.len ||
	    !same_bytes(name, dentry->d_name.name, len))
		return -ECHILD;
	return read_seqcount_retry(&lower->d_seq, seq) ? -ECHILD : 1;
}

/*
 * The lower dentry must still be hashed, under the lower dentry of our parent,
 * with our name, and must hold the inode our inode wraps (or none, for a
 * negative dentry).  In RCU walk anything doubtful drops to ref-walk.
 */
static int check_lower(struct dentry *dentry, struct dentry *lower,
		       bool rcu)
{
	struct inode *inode = rcu ? d_inode_rcu(dentry) : d_inode(dentry);
	struct inode *lower_inode = rcu ? d_inode_rcu(lower) : d_inode(lower);
	struct aheadfs_dentry_info *pdi;
	bool same_parent;
	int same_name;

	if (d_unhashed(lower))
		return 0;
	if (inode) {
		if (!lower_inode || AHEADFS_I(inode)->lower != lower_inode)
			return 0;
	} else if (lower_inode) {
		return 0;
	}
	/*
	 * Our parent is not pinned by the caller's reference to us: a rename
	 * may move us and the old parent be freed.  Dentries and their
	 * information are freed after a grace period, so read both under
	 * RCU, in ref-walk too (an RCU walk holds it already).
	 */
	if (rcu) {
		pdi = READ_ONCE(READ_ONCE(dentry->d_parent)->d_fsdata);
		if (!pdi || READ_ONCE(lower->d_parent) != pdi->lower.dentry)
			return 0;
		return same_name_rcu(dentry, lower);
	}
	rcu_read_lock();
	pdi = READ_ONCE(READ_ONCE(dentry->d_parent)->d_fsdata);
	same_parent = pdi && READ_ONCE(lower->d_parent) == pdi->lower.dentry;
	rcu_read_unlock();
	if (!same_parent)
		return 0;

	spin_lock(&lower->d_lock);
	same_name = lower->d_name.len == dentry->d_name.len &&
		    same_bytes(lower->d_name.name, dentry->d_name.name,
			       dentry->d_name.len);
	spin_unlock(&lower->d_lock);
	return same_name;
}

static int aheadfs_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	struct aheadfs_dentry_info *di = READ_ONCE(dentry->d_fsdata);
	struct super_block *sb = dentry->d_sb;
	struct aheadfs_sb_info *sbi = AHEADFS_SB(sb);
	bool rcu = flags & LOOKUP_RCU;
	struct dentry *lower;
	struct inode *inode;
	u64 t0 = 0;
	int ret;

	if (!di)
		return rcu ? -ECHILD : 0;
	if (IS_ROOT(dentry))
		return 1;
	/*
	 * A create through the mount may replace the lower dentry ours pins
	 * (instantiate() in namei.c) and drop the old one meanwhile: in
	 * ref-walk, which may sleep in the lower's d_revalidate, hold a
	 * reference of our own, taken under RCU from a dentry not yet dead:
	 * a dead one was replaced first, so the next read finds the new one.
	 */
	if (rcu) {
		/* The walk holds the RCU read lock. */
		lower = READ_ONCE(di->lower.dentry);
	} else {
		rcu_read_lock();
		for (;;) {
			lower = READ_ONCE(di->lower.dentry);
			if (lockref_get_not_dead(&lower->d_lockref))
				break;
			/* Ours holds a reference: dead only once replaced. */
			if (lower == READ_ONCE(di->lower.dentry)) {
				rcu_read_unlock();
				return 0;
			}
		}
		rcu_read_unlock();
	}

	if (!rcu)
		t0 = aheadfs_op_begin();
	ret = check_lower(dentry, lower, rcu);
	/* A verdict of invalid is given, and counted, in ref-walk only. */
	if (ret == 0 && rcu)
		return -ECHILD;
	if (ret <= 0)
		goto out;

	if ((lower->d_flags & DCACHE_OP_REVALIDATE) &&
	    !aheadfs_entry_fresh(dentry)) {
		ret = lower->d_op->d_revalidate(lower, flags);
		if (ret > 0)
			aheadfs_entry_stamp(dentry, jiffies);
	}

	inode = rcu ? d_inode_rcu(dentry) : d_inode(dentry);
	/*
	 * The lower's append-only and immutable flags, which the VFS checks
	 * on our inode at open and permission, as they are now (a chattr on
	 * the lower directly); copied in ref-walk.  An RCU walk may meet an
	 * inode being evicted, whose lower inode is gone (NULL): ref-walk
	 * decides.
	 */
	if (ret > 0 && inode) {
		struct inode *lower_inode = READ_ONCE(AHEADFS_I(inode)->lower);

		if (!lower_inode || aheadfs_i_flags_stale(inode, lower_inode)) {
			if (rcu)
				return -ECHILD;
			if (lower_inode)
				aheadfs_copy_i_flags(inode);
		}
	}
	/* Keep the size the VFS checks against (copy_file_range) current. */
	if (ret > 0 && !rcu && inode)
		fsstack_copy_inode_size(inode, AHEADFS_I(inode)->lower);
out:
	if (ret == 0)
		aheadfs_stat_inc(sbi, AHEADFS_STAT_revalidate_fail);
	if (!rcu) {
		aheadfs_op_end(sb, AHEADFS_OP_revalidate, d_inode(dentry),
			       dentry, t0, ret);
		dput(lower);
	}
	return ret;
}

const struct dentry_operations aheadfs_dops = {
	.d_revalidate	= aheadfs_d_revalidate,
	.d_release	= aheadfs_d_release,
};
