// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs's caches for lowers where asking costs a round trip (an NFS mount
 * with noac), in one place: the timeouts, the stamps, and readdir priming.
 *
 * - The attribute cache (attr_timeout_ms): within the timeout of the last
 *   refresh (aheadfs_inode_info.attr_time), a stat is answered from our
 *   inode and permission is decided by generic_permission() on it.
 * - The entry cache (entry_timeout_ms, and negative_timeout_ms for names
 *   that do not exist): within the timeout of the last confirmation
 *   (dentry->d_time), a walk skips the lower's d_revalidate.
 * - Readdir priming: with the entry cache on, a readdir through the mount
 *   stamps both, for every entry whose lower dentry and inode the lower
 *   already holds (an NFS client's READDIRPLUS has just filled them), so a
 *   listing's stats cost the listing's round trips only.
 *
 * Both timeouts are 0 (off) by default: then every walk, stat and
 * permission check asks the lower, and aheadfs is exactly as fresh as it.
 * Every change the mount makes refreshes the attributes it touched
 * (aheadfs_copy_attr()), and a write keeps the next stat away from the
 * cache until the lower has answered one (AHEADFS_I_WRITTEN).
 */
#include <linux/namei.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/magic.h>
#include <linux/nfs_fs.h>
#include "aheadfs.h"

static bool within(unsigned long stamp, unsigned int timeout_ms)
{
	return timeout_ms &&
	       time_before(jiffies, stamp + msecs_to_jiffies(timeout_ms));
}

/*
 * Whether @inode's attributes were refreshed from the lower within the
 * mount's attribute timeout (attr_timeout_ms; 0: never).
 */
bool aheadfs_attr_fresh(struct inode *inode)
{
	return within(READ_ONCE(AHEADFS_I(inode)->attr_time),
		      READ_ONCE(AHEADFS_SB(inode->i_sb)->attr_timeout_ms));
}

/*
 * Whether the lower's d_revalidate of @dentry may be skipped: the lower
 * confirmed the entry within the mount's entry timeout, or, for a negative
 * one (the name does not exist), within its negative timeout.  Counted as
 * a hit, or as a miss when the timeout is on but has run out.
 */
bool aheadfs_entry_fresh(struct dentry *dentry)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(dentry->d_sb);
	bool negative = d_is_negative(dentry);
	unsigned int timeout = negative ? READ_ONCE(sbi->negative_timeout_ms) :
					  READ_ONCE(sbi->entry_timeout_ms);

	if (!timeout)
		return false;
	if (!within(READ_ONCE(dentry->d_time), timeout)) {
		aheadfs_stat_inc(sbi, AHEADFS_STAT_entry_cache_misses);
		return false;
	}
	aheadfs_stat_inc(sbi, negative ? AHEADFS_STAT_negative_cache_hits :
			 AHEADFS_STAT_entry_cache_hits);
	return true;
}

/* The lower confirmed @dentry at @when (jiffies). */
void aheadfs_entry_stamp(struct dentry *dentry, unsigned long when)
{
	WRITE_ONCE(dentry->d_time, when);
}

/*
 * Whether @lower's filesystem may hold attributes in memory that are not
 * the truth: a network filesystem, whose server has its own.  Told by the
 * absence of a block device (FS_REQUIRES_DEV: ext4, xfs, btrfs keep the
 * truth in memory).
 */
static bool lower_attrs_remote(const struct inode *lower)
{
	return !(lower->i_sb->s_type->fs_flags & FS_REQUIRES_DEV);
}

/*
 * Whether a stat may be answered from the attribute cache: fresh, and no
 * data of the file's changing where the cached size, times and blocks
 * cannot follow it.  Not after a write through the mount until the lower's
 * getattr has reported (AHEADFS_I_WRITTEN), nor while the file is mapped
 * shared and writable (stores through the mapping update the lower's mtime
 * without a call of ours), nor while the lower has dirty pages of it or
 * pages under write-back: a network lower's getattr flushes them first and
 * reports the server's mtime, and a local one's counts blocks its inode
 * does not hold yet (ext4's delayed allocation).
 */
bool aheadfs_attr_stat_cached(struct inode *inode)
{
	struct address_space *mapping;

	struct aheadfs_inode_info *ai = AHEADFS_I(inode);

	if (!aheadfs_attr_fresh(inode))
		return false;
	if (!test_bit(AHEADFS_I_BLOCKS, &ai->flags) ||
	    !within(READ_ONCE(ai->blocks_time),
		    READ_ONCE(AHEADFS_SB(inode->i_sb)->attr_timeout_ms)))
		return false;
	if (!S_ISREG(inode->i_mode))
		return true;
	if (test_bit(AHEADFS_I_WRITTEN, &AHEADFS_I(inode)->flags))
		return false;
	mapping = aheadfs_lower_inode(inode)->i_mapping;
	return !mapping_writably_mapped(mapping) &&
	       !mapping_tagged(mapping, PAGECACHE_TAG_DIRTY) &&
	       !mapping_tagged(mapping, PAGECACHE_TAG_WRITEBACK);
}

/*
 * The lower reported @blocks for @inode at @when (its getattr, or an NFS
 * client's attributes, which keep i_blocks from the server's space_used).
 * Only while the attribute cache is on: nothing else reads it.
 */
void aheadfs_blocks_stamp(struct inode *inode, u64 blocks, unsigned long when)
{
	struct aheadfs_inode_info *ai = AHEADFS_I(inode);

	WRITE_ONCE(ai->blocks, blocks);
	WRITE_ONCE(ai->blocks_time, when);
	if (!test_bit(AHEADFS_I_BLOCKS, &ai->flags))
		set_bit(AHEADFS_I_BLOCKS, &ai->flags);
}

/*
 * When the attributes @lower holds in memory were true, in jiffies: now on
 * a local filesystem, whose inode in memory is the truth; on an NFS client,
 * the start of the call that last brought them from the server
 * (read_cache_jiffies, which READDIRPLUS sets too), unless the client knows
 * them to be out of date.  False for any other lower: when its attributes
 * were fetched is not known, so they are not stamped fresh.
 */
static bool lower_attr_time(struct inode *lower, unsigned long now,
			    unsigned long *when)
{
	struct nfs_inode *nfsi;

	if (!lower_attrs_remote(lower)) {
		*when = now;
		return true;
	}
	if (lower->i_sb->s_magic != NFS_SUPER_MAGIC)
		return false;
	nfsi = NFS_I(lower);
	if (READ_ONCE(nfsi->cache_validity) & NFS_INO_INVALID_ATTR)
		return false;
	*when = READ_ONCE(nfsi->read_cache_jiffies);
	/* Never dated later than now (a jiffies wrap, a bad value). */
	if (time_after(*when, now))
		*when = now;
	return true;
}

/*
 * Our inode's attributes from @lower's, dated @when; on a network lower
 * (an NFS client keeps i_blocks from the server) its st_blocks too.  A
 * local lower's st_blocks waits for its getattr: xfs keeps no i_blocks.
 */
static void prime_attrs(struct inode *inode, struct inode *lower,
			unsigned long when)
{
	aheadfs_copy_attr_at(inode, when);
	if (lower_attrs_remote(lower))
		aheadfs_blocks_stamp(inode, READ_ONCE(lower->i_blocks), when);
}

/*
 * A readdir of ours: the caller's context, wrapped to note each entry it
 * took, to be primed once the lower's readdir has returned.  Not in the
 * actor: the lower calls it with its directory locked (and an NFS client
 * with a page of its readdir cache locked), and priming may wait for a
 * lookup of ours of the same name, which may wait for that lock.
 */
struct aheadfs_prime_ctx {
	struct dir_context ctx;
	struct dir_context *caller;
	struct dentry *parent;		/* ours, locked (shared) by the VFS */
	struct dentry *lower_parent;	/* the lower directory being read */
	char *buf;			/* the entries taken: prime_rec, packed */
	size_t used;
	unsigned long now;
	unsigned long primed;
};

/* One entry noted for priming, in aheadfs_prime_ctx.buf. */
struct prime_rec {
	u64 ino;
	u8 len;
	char name[];
};

/*
 * The entries of one getdents call: glibc reads 32 KiB of them at a time,
 * and a record is smaller than the dirent it stands for.  Entries past it
 * are passed up, not primed.
 */
#define AHEADFS_PRIME_BUF	(32 << 10)

static size_t prime_rec_size(int len)
{
	return ALIGN(struct_size_t(struct prime_rec, name, len), 8);
}

/*
 * Prime our dentry and inode for one entry the lower just listed, from the
 * lower's dcache only: no lookup, no revalidation, nothing that could ask
 * the server.  The lower dentry must be positive, for the inode the listing
 * names (@ino), and of a lower whose attribute time is known; our dentry is
 * created the way a parallel lookup would be (d_alloc_parallel() under the
 * shared lock of the directory), or restamped if it exists and stands for
 * the same lower.  Anything else is left to the next lookup.
 */
static void prime_entry(struct aheadfs_prime_ctx *p, const char *name,
			int len, u64 ino)
{
	DECLARE_WAIT_QUEUE_HEAD_ONSTACK(wq);
	struct super_block *sb = p->parent->d_sb;
	struct qstr lname = QSTR_INIT(name, len);
	struct qstr uname = QSTR_INIT(name, len);
	struct dentry *lower, *dentry, *alias;
	struct inode *lower_inode, *inode;
	struct path lower_path;
	unsigned long when;

	lower = d_hash_and_lookup(p->lower_parent, &lname);
	if (IS_ERR_OR_NULL(lower))
		return;
	lower_inode = d_inode(lower);
	if (!lower_inode || lower_inode->i_ino != ino ||
	    aheadfs_lower_weird(lower) ||
	    !lower_attr_time(lower_inode, p->now, &when))
		goto out_lower;

	uname.hash = full_name_hash(p->parent, name, len);
	dentry = d_alloc_parallel(p->parent, &uname, &wq);
	if (IS_ERR(dentry))
		goto out_lower;
	if (!d_in_lookup(dentry)) {
		/* Ours already (or being looked up): restamp if it is this one. */
		inode = d_inode(dentry);
		if (inode && aheadfs_lower_dentry(dentry) == lower &&
		    aheadfs_lower_inode(inode) == lower_inode) {
			prime_attrs(inode, lower_inode, when);
			aheadfs_entry_stamp(dentry, when);
			p->primed++;
		}
		dput(dentry);
		goto out_lower;
	}
	if (aheadfs_new_dentry_info(dentry))
		goto out_done;
	inode = aheadfs_iget(sb, lower_inode);
	if (IS_ERR(inode))
		goto out_done;
	lower_path.mnt = mntget(AHEADFS_SB(sb)->lower.mnt);
	lower_path.dentry = dget(lower);
	aheadfs_set_lower_path(dentry, &lower_path);
	prime_attrs(inode, lower_inode, when);
	aheadfs_entry_stamp(dentry, when);
	alias = d_splice_alias(inode, dentry);
	d_lookup_done(dentry);
	if (!IS_ERR(alias)) {
		dput(alias);
		p->primed++;
	}
	dput(dentry);
	goto out_lower;
out_done:
	d_lookup_done(dentry);
	dput(dentry);
out_lower:
	dput(lower);
}

static bool prime_actor(struct dir_context *ctx, const char *name, int len,
			loff_t pos, u64 ino, unsigned int type)
{
	struct aheadfs_prime_ctx *p =
		container_of(ctx, struct aheadfs_prime_ctx, ctx);
	size_t sz = prime_rec_size(len);
	struct prime_rec *r;

	p->caller->pos = ctx->pos;
	/* Full: the entry is not the caller's, so it is not primed either. */
	if (!p->caller->actor(p->caller, name, len, pos, ino, type))
		return false;
	if (is_dot_dotdot(name, len) || len > NAME_MAX ||
	    p->used + sz > AHEADFS_PRIME_BUF)
		return true;
	r = (struct prime_rec *)(p->buf + p->used);
	r->ino = ino;
	r->len = len;
	memcpy(r->name, name, len);
	p->used += sz;
	return true;
}

/*
 * The lower's readdir of @lower for our @file, with @ctx's entries, d_ino
 * and offsets passed up as the lower gives them; with the entry cache on,
 * the entries passed up are primed afterwards (prime_entry()).
 */
int aheadfs_iterate_lower(struct file *file, struct file *lower,
			  struct dir_context *ctx)
{
	struct super_block *sb = file_inode(file)->i_sb;
	struct aheadfs_sb_info *sbi = AHEADFS_SB(sb);
	struct aheadfs_prime_ctx p = {
		.ctx.actor = prime_actor,
		.ctx.pos = ctx->pos,
		.caller = ctx,
		.parent = file->f_path.dentry,
		.lower_parent = lower->f_path.dentry,
	};
	struct prime_rec *r;
	size_t off;
	int err;

	lower->f_pos = ctx->pos;
	if (READ_ONCE(sbi->entry_timeout_ms))
		p.buf = kvmalloc(AHEADFS_PRIME_BUF, GFP_KERNEL);
	/* Off, or no memory for it: the lower's readdir, nothing primed. */
	if (!p.buf)
		return iterate_dir(lower, ctx);
	err = iterate_dir(lower, &p.ctx);
	ctx->pos = p.ctx.pos;
	p.now = jiffies;
	for (off = 0; off < p.used; off += prime_rec_size(r->len)) {
		r = (struct prime_rec *)(p.buf + off);
		prime_entry(&p, r->name, r->len, r->ino);
	}
	kvfree(p.buf);
	if (p.primed)
		aheadfs_stat_add(sbi, AHEADFS_STAT_entries_primed, p.primed);
	return err;
}
