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

/* Charged to the caller's memory cgroup, as the dentry is. */
struct aheadfs_dentry_info *aheadfs_alloc_dentry_info(void)
{
	struct aheadfs_dentry_info *di;

	di = kzalloc(sizeof(*di), GFP_KERNEL_ACCOUNT);
	if (di)
		aheadfs_forget_dentry_match(di);
	return di;
}

int aheadfs_new_dentry_info(struct dentry *dentry)
{
	struct aheadfs_dentry_info *di = aheadfs_alloc_dentry_info();

	if (!di)
		return -ENOMEM;
	dentry->d_fsdata = di;
	return 0;
}

/* The next revalidation compares everything again (lower_matches_at()). */
void aheadfs_forget_dentry_match(struct aheadfs_dentry_info *di)
{
	WRITE_ONCE(di->seq, AHEADFS_NO_SEQ);
	WRITE_ONCE(di->lower_seq, AHEADFS_NO_SEQ);
}

/* Takes over the caller's references to @path. */
void aheadfs_set_lower_path(struct dentry *dentry, struct path *path)
{
	struct aheadfs_dentry_info *di = AHEADFS_D(dentry);

	di->lower = *path;
	aheadfs_forget_dentry_match(di);
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

/*
 * check_lower(), remembered.  The dcache advances a dentry's d_seq around
 * every change check_lower() looks at: a rename or exchange (__d_move(),
 * the name and the parent), a drop from the hash (__d_drop()), an
 * instantiate or the loss of the inode.  So while our dentry's d_seq and
 * the lower's are what they were when check_lower() last found them
 * matching, its verdict stands, and a walk over an unchanged tree compares
 * no name.  The pair is kept only from a check made between two reads of
 * both counts that found them even and unchanged; counts only grow, so a
 * pair mixed from two such checks is as good as either.  Our parent's
 * lower dentry, the other thing check_lower() reads, is never replaced
 * while it has children (only a negative dentry's is, in namei.c's
 * instantiate()).
 */
static int lower_matches_at(struct dentry *dentry,
			    struct aheadfs_dentry_info *di,
			    struct dentry *lower, bool rcu)
{
	unsigned int seq = raw_read_seqcount(&dentry->d_seq);
	unsigned int lower_seq = raw_read_seqcount(&lower->d_seq);
	int ret;

	if (seq == READ_ONCE(di->seq) && lower_seq == READ_ONCE(di->lower_seq))
		return 1;
	ret = check_lower(dentry, lower, rcu);
	if (ret > 0 && !((seq | lower_seq) & 1) &&
	    !read_seqcount_retry(&dentry->d_seq, seq) &&
	    !read_seqcount_retry(&lower->d_seq, lower_seq)) {
		WRITE_ONCE(di->seq, seq);
		WRITE_ONCE(di->lower_seq, lower_seq);
	}
	return ret;
}

/* Positive, and what was written before it was made so is seen. */
static inline bool positive_acquire(const struct dentry *dentry)
{
	/* Pairs with the release of d_flags in d_instantiate(). */
	unsigned int flags = smp_load_acquire(&dentry->d_flags);

	return (flags & DCACHE_ENTRY_TYPE) != DCACHE_MISS_TYPE;
}

static noinline int revalidate_slow(struct dentry *dentry, unsigned int flags)
{
	struct aheadfs_dentry_info *di = READ_ONCE(dentry->d_fsdata);
	struct super_block *sb = dentry->d_sb;
	struct aheadfs_sb_info *sbi = AHEADFS_SB(sb);
	bool rcu = flags & LOOKUP_RCU;
	bool pinned = false;
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
	 * (instantiate() in namei.c) and drop the old one meanwhile, before
	 * it makes ours positive.  An RCU walk holds the RCU read lock.  In
	 * ref-walk, a positive dentry's lower dentry is the one it was made
	 * positive with (read after its type, which d_instantiate() publishes
	 * with a release), and the caller's reference to ours keeps ours
	 * positive and pins it.  A negative one's may be replaced at any
	 * time: hold a reference of our own, taken under RCU from a dentry
	 * not yet dead (a dead one was replaced first, so the next read
	 * finds the new one), since the lower's d_revalidate may sleep.
	 */
	if (rcu) {
		lower = READ_ONCE(di->lower.dentry);
	} else if (positive_acquire(dentry)) {
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
		pinned = true;
	}

	if (!rcu)
		t0 = aheadfs_op_begin();
	ret = lower_matches_at(dentry, di, lower, rcu);
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
		aheadfs_copy_size(inode, AHEADFS_I(inode)->lower);
out:
	if (ret == 0)
		aheadfs_stat_inc(sbi, AHEADFS_STAT_revalidate_fail);
	if (!rcu) {
		aheadfs_op_end(sb, AHEADFS_OP_revalidate, d_inode(dentry),
			       dentry, t0, ret);
		if (pinned)
			dput(lower);
	}
	return ret;
}

/*
 * Most revalidations are an RCU walk over a tree that did not change: both
 * d_seq are what they were at the last match (lower_matches_at()), the
 * lower has no d_revalidate of its own and our inode's flags are the
 * lower's.  That case is answered here, with nothing to save and restore;
 * everything else, and the same case's counterpart in ref-walk, is
 * revalidate_slow()'s, which gives the same verdict for it.
 */
static int aheadfs_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	struct aheadfs_dentry_info *di = READ_ONCE(dentry->d_fsdata);
	struct inode *inode, *lower_inode;
	struct dentry *lower;

	if (!(flags & LOOKUP_RCU) || !di || IS_ROOT(dentry))
		return revalidate_slow(dentry, flags);
	lower = READ_ONCE(di->lower.dentry);
	if (raw_read_seqcount(&dentry->d_seq) != READ_ONCE(di->seq) ||
	    raw_read_seqcount(&lower->d_seq) != READ_ONCE(di->lower_seq) ||
	    (READ_ONCE(lower->d_flags) & DCACHE_OP_REVALIDATE))
		return revalidate_slow(dentry, flags);
	inode = d_inode_rcu(dentry);
	if (inode) {
		lower_inode = READ_ONCE(AHEADFS_I(inode)->lower);
		if (!lower_inode || aheadfs_i_flags_stale(inode, lower_inode))
			return -ECHILD;
	}
	return 1;
}

const struct dentry_operations aheadfs_dops = {
	.d_revalidate	= aheadfs_d_revalidate,
	.d_release	= aheadfs_d_release,
};
