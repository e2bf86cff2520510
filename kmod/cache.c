// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs's caches for lowers where asking costs a round trip (an NFS mount
 * with noac), in one place: the timeouts, the stamps, and readdir priming.
 *
 * - The attribute cache (attr_timeout_ms): within the timeout of the last
 *   refresh (aheadfs_inode_info.attr_time), a stat is answered from our
 *   inode; within the same timeout of a grant by a lower that decides
 *   permission itself, the same caller's check is answered from the grant
 *   (aheadfs_perm_cached()).
 * - The entry cache (entry_timeout_ms, and negative_timeout_ms for names
 *   that do not exist): within the timeout of the last confirmation
 *   (dentry->d_time), a walk skips the lower's d_revalidate.
 * - Readdir priming: with the entry cache on, a readdir through the mount
 *   stamps both, for every entry whose lower dentry and inode the lower
 *   already holds (an NFS client's READDIRPLUS has just filled them), so a
 *   listing's stats cost the listing's round trips only.  On an NFS lower
 *   the directory is read ahead with READDIRPLUS first, and read from the
 *   server again once what the last read-ahead primed has run out (the
 *   client would otherwise list it from its readdir cache, without
 *   attributes): the listing after the timeouts costs the same round trips
 *   as the first, and stamps only attributes the server has just sent.
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
#include <linux/compat.h>
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
 * The permission cache: what the lower granted, never what it refused.  A
 * lower with no ->permission of its own decides on its in-memory inode
 * (ext4, xfs): asking it costs what deciding here would, so it is always
 * asked.  One with its own (NFS: an ACCESS round trip on noac; FUSE;
 * btrfs) is asked unless, within attr_timeout_ms, it granted this inode
 * at least @mask to the same caller: the same cred, or one with the same
 * fsuid, fsgid, group list, user namespace and effective capabilities, as
 * NFS's own access cache tells callers apart (its server decides on the
 * ids alone).  A refusal is never kept: the next check asks again.  The
 * mount's own changes of mode, owner, ACLs or xattrs forget the grant, and
 * so does a refresh that finds the mode or owner changed on the lower.
 *
 * Read under the seqlock, also in RCU walk: the fields compared are copies
 * or addresses (kept alive by the reference to the cred), never followed.
 */
static bool perm_same_caller(const struct aheadfs_inode_info *ai,
			     const struct cred *cred)
{
	return ai->perm_cred == cred ||
	       (uid_eq(ai->perm_fsuid, cred->fsuid) &&
		gid_eq(ai->perm_fsgid, cred->fsgid) &&
		ai->perm_groups == cred->group_info &&
		ai->perm_ns == cred->user_ns &&
		cap_issubset(ai->perm_caps, cred->cap_effective) &&
		cap_issubset(cred->cap_effective, ai->perm_caps));
}

bool aheadfs_perm_cached(struct inode *inode, int mask)
{
	struct aheadfs_inode_info *ai = AHEADFS_I(inode);
	unsigned int timeout = READ_ONCE(AHEADFS_SB(inode->i_sb)->attr_timeout_ms);
	const struct cred *cred = current_cred();
	unsigned int seq;
	bool hit;

	if (!timeout || !READ_ONCE(ai->perm_cred))
		return false;
	mask &= ~MAY_NOT_BLOCK;
	do {
		seq = read_seqbegin(&ai->perm_lock);
		hit = ai->perm_cred && !(mask & ~ai->perm_mask) &&
		      within(ai->perm_time, timeout) &&
		      perm_same_caller(ai, cred);
	} while (read_seqretry(&ai->perm_lock, seq));
	return hit;
}

/*
 * Sampled before the lower is asked: a forget after it (a chmod through the
 * mount while the lower was deciding on the old mode) moves it on, and the
 * grant is then not kept.  Forgets happen after the lower's change, so a
 * caller that sampled the new value asks the changed lower.
 */
unsigned long aheadfs_perm_gen(struct inode *inode)
{
	/* Pairs with the release in aheadfs_perm_forget(). */
	return smp_load_acquire(&AHEADFS_I(inode)->perm_gen);
}

/*
 * The lower granted @mask to the caller at @when, asked with the forget
 * generation @gen (aheadfs_perm_gen()).  A grant to the same caller within
 * the timeout adds to it, dated by the oldest.
 */
void aheadfs_perm_granted(struct inode *inode, int mask, unsigned long when,
			  unsigned long gen)
{
	struct aheadfs_inode_info *ai = AHEADFS_I(inode);
	unsigned int timeout = READ_ONCE(AHEADFS_SB(inode->i_sb)->attr_timeout_ms);
	const struct cred *cred = current_cred(), *old = NULL;

	mask &= ~MAY_NOT_BLOCK;
	write_seqlock(&ai->perm_lock);
	/* Forgotten while the lower decided: its answer may be stale. */
	if (ai->perm_gen != gen)
		goto unlock;
	if (ai->perm_cred && within(ai->perm_time, timeout) &&
	    perm_same_caller(ai, cred)) {
		ai->perm_mask |= mask;
	} else {
		old = ai->perm_cred;
		ai->perm_cred = get_cred(cred);
		ai->perm_groups = cred->group_info;
		ai->perm_ns = cred->user_ns;
		ai->perm_fsuid = cred->fsuid;
		ai->perm_fsgid = cred->fsgid;
		ai->perm_caps = cred->cap_effective;
		ai->perm_mask = mask;
		ai->perm_time = when;
	}
unlock:
	write_sequnlock(&ai->perm_lock);
	if (old)
		put_cred(old);
}

void aheadfs_perm_forget(struct inode *inode)
{
	struct aheadfs_inode_info *ai = AHEADFS_I(inode);
	const struct cred *old;

	/* Also with nothing kept: a grant being asked for may follow. */
	write_seqlock(&ai->perm_lock);
	/* After the lower's change: who sees it asks the changed lower. */
	smp_store_release(&ai->perm_gen, ai->perm_gen + 1);
	old = ai->perm_cred;
	ai->perm_cred = NULL;
	ai->perm_groups = NULL;
	ai->perm_ns = NULL;
	ai->perm_mask = 0;
	write_sequnlock(&ai->perm_lock);
	if (old)
		put_cred(old);
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
 * The lower's getattr reported @stat at @when: besides the blocks, what a
 * stat from the cache cannot take from our inode (the birth time, the
 * statx attributes).  A concurrent stat from the cache may see a mix of
 * two getattrs' values, each of them the lower's within the timeout.
 */
void aheadfs_stat_stamp(struct inode *inode, const struct kstat *stat,
			unsigned long when)
{
	struct aheadfs_inode_info *ai = AHEADFS_I(inode);

	ai->attributes = stat->attributes;
	ai->attributes_mask = stat->attributes_mask;
	if (stat->result_mask & STATX_BTIME) {
		ai->btime = stat->btime;
		set_bit(AHEADFS_I_BTIME, &ai->flags);
	} else {
		clear_bit(AHEADFS_I_BTIME, &ai->flags);
	}
	aheadfs_blocks_stamp(inode, stat->blocks, when);
}

/* A stat from the cache: what aheadfs_stat_stamp() kept. */
void aheadfs_stat_cached_fill(struct inode *inode, struct kstat *stat)
{
	struct aheadfs_inode_info *ai = AHEADFS_I(inode);

	stat->blocks = READ_ONCE(ai->blocks);
	stat->attributes |= ai->attributes;
	stat->attributes_mask |= ai->attributes_mask;
	if (test_bit(AHEADFS_I_BTIME, &ai->flags)) {
		stat->btime = ai->btime;
		stat->result_mask |= STATX_BTIME;
	}
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
 * The readdir cache (readdir_cache=1, within entry_timeout_ms): a
 * directory read through us from its start to its end, by one open file
 * in calls that follow each other, is kept as the lower listed it (names,
 * inode numbers, types, and the lower's offsets, which stay the ones the
 * caller sees), dated when the listing started; within the entry timeout
 * of that (and the attribute timeout, if on and shorter: past it a listing
 * from the lower primes what ls -l will stat), a readdir of the directory
 * is answered from it without asking the lower.  Every change of the
 * directory's names through this mount drops it (aheadfs_dir_changed()),
 * and a listing that such a change overtook is not kept; a change made in
 * the lower directly, or through another mount of it, is seen when the
 * timeout has run out.
 */
struct aheadfs_dir_cache {
	refcount_t ref;
	struct aheadfs_sb_info *sbi;
	struct inode *dir;	/* whose listing, once kept */
	struct list_head lru;	/* on sbi->dir_lru while kept */
	unsigned long time;	/* jiffies when the listing started */
	u64 gen;		/* the directory's dir_gen then */
	u64 seq;		/* which of the directory's caches, for dir_hint */
	loff_t end;		/* the position after the last entry */
	size_t used, size;
	bool failed;		/* too large, or no memory: not kept */
	char *buf;		/* dir_rec records, packed */
};

struct dir_rec {
	loff_t pos;		/* where the entry starts: the lower's offset */
	u64 ino;
	u8 type;
	u8 len;
	char name[];
};

/* The most one directory's cache holds: about 100,000 short names. */
#define AHEADFS_DIR_CACHE_MAX	(4 << 20)
/*
 * The most a mount's listings hold together, kept or being filled: a fill
 * that would pass it makes room from the oldest kept listings, or is not
 * kept.  The memory is the mount's, shared by every reader, so it is not
 * charged to the memory cgroup of whoever filled it; the superblock's
 * shrinker gives the kept listings back under memory pressure.
 */
#define AHEADFS_DIR_CACHE_MOUNT_MAX	(4 * AHEADFS_DIR_CACHE_MAX)

static size_t dir_rec_size(int len)
{
	return ALIGN(struct_size_t(struct dir_rec, name, len), 8);
}

static void dir_cache_put(struct aheadfs_dir_cache *dc)
{
	if (dc && refcount_dec_and_test(&dc->ref)) {
		atomic_long_sub(dc->size, &dc->sbi->dir_cache_bytes);
		kvfree(dc->buf);
		kfree(dc);
	}
}

/* Under @ai's dir_lock: its kept listing, taken off it and off the LRU. */
static struct aheadfs_dir_cache *dir_cache_detach(struct aheadfs_inode_info *ai)
{
	struct aheadfs_dir_cache *dc = ai->dir_cache;
	struct aheadfs_sb_info *sbi;

	if (!dc)
		return NULL;
	sbi = dc->sbi;
	spin_lock(&sbi->dir_lru_lock);
	if (!list_empty(&dc->lru)) {
		list_del_init(&dc->lru);
		sbi->dir_lru_count--;
	}
	spin_unlock(&sbi->dir_lru_lock);
	ai->dir_cache = NULL;
	return dc;
}

/*
 * Drop the mount's oldest kept listing: false if there is none, or if its
 * directory is busy (its dir_lock is taken in the other order).  A listing
 * on the LRU pins nothing, but its directory's inode stays alive while it
 * is there: eviction takes it off under dir_lru_lock first.
 */
static bool dir_cache_evict_oldest(struct aheadfs_sb_info *sbi)
{
	struct aheadfs_dir_cache *dc;
	struct aheadfs_inode_info *ai;

	spin_lock(&sbi->dir_lru_lock);
	dc = list_first_entry_or_null(&sbi->dir_lru, struct aheadfs_dir_cache,
				      lru);
	if (!dc) {
		spin_unlock(&sbi->dir_lru_lock);
		return false;
	}
	ai = AHEADFS_I(dc->dir);
	if (!spin_trylock(&ai->dir_lock)) {
		list_move_tail(&dc->lru, &sbi->dir_lru);
		spin_unlock(&sbi->dir_lru_lock);
		return false;
	}
	list_del_init(&dc->lru);
	sbi->dir_lru_count--;
	if (ai->dir_cache == dc)
		ai->dir_cache = NULL;
	spin_unlock(&ai->dir_lock);
	spin_unlock(&sbi->dir_lru_lock);
	aheadfs_stat_inc(sbi, AHEADFS_STAT_readdir_cache_evictions);
	dir_cache_put(dc);
	return true;
}

/* The superblock shrinker's view: kept listings, and giving @nr back. */
long aheadfs_dir_cache_count(struct super_block *sb)
{
	return READ_ONCE(AHEADFS_SB(sb)->dir_lru_count);
}

long aheadfs_dir_cache_reclaim(struct super_block *sb, long nr)
{
	long freed = 0;

	while (freed < nr && dir_cache_evict_oldest(AHEADFS_SB(sb)))
		freed++;
	return freed;
}

/*
 * @delta more bytes for a listing being filled, within the mount's bound:
 * room is made from the oldest kept listings first.
 */
static bool dir_cache_charge(struct aheadfs_dir_cache *dc, size_t delta)
{
	struct aheadfs_sb_info *sbi = dc->sbi;
	int tries;

	for (tries = 0; tries < 64; tries++) {
		if (atomic_long_add_return(delta, &sbi->dir_cache_bytes) <=
		    AHEADFS_DIR_CACHE_MOUNT_MAX)
			return true;
		atomic_long_sub(delta, &sbi->dir_cache_bytes);
		if (!dir_cache_evict_oldest(sbi))
			return false;
	}
	return false;
}

/*
 * How long what a listing primed stays good: the entry timeout, or the
 * attribute timeout if that is on and shorter.
 */
static unsigned int prime_timeout(struct aheadfs_sb_info *sbi)
{
	unsigned int entry = READ_ONCE(sbi->entry_timeout_ms);
	unsigned int attr = READ_ONCE(sbi->attr_timeout_ms);

	return attr && attr < entry ? attr : entry;
}

static bool dir_cache_on(struct aheadfs_sb_info *sbi)
{
	return READ_ONCE(sbi->readdir_cache) &&
	       READ_ONCE(sbi->entry_timeout_ms);
}

/*
 * The names of directory @dir changed through this mount (or it goes): its
 * readdir cache is dropped, and a listing under way is not kept.
 */
void aheadfs_dir_changed(struct inode *dir)
{
	struct aheadfs_inode_info *ai = AHEADFS_I(dir);
	struct aheadfs_dir_cache *old;

	spin_lock(&ai->dir_lock);
	ai->dir_gen++;
	old = dir_cache_detach(ai);
	spin_unlock(&ai->dir_lock);
	if (old) {
		aheadfs_stat_inc(AHEADFS_SB(dir->i_sb),
				 AHEADFS_STAT_readdir_invalidations);
		dir_cache_put(old);
	}
}

/* The readdir cache is off: @dir's is dropped, not counted. */
static void dir_cache_drop(struct inode *dir)
{
	struct aheadfs_inode_info *ai = AHEADFS_I(dir);
	struct aheadfs_dir_cache *old;

	spin_lock(&ai->dir_lock);
	old = dir_cache_detach(ai);
	spin_unlock(&ai->dir_lock);
	dir_cache_put(old);
}

/* An open directory is closed: the listing it was filling is not kept. */
void aheadfs_dir_release(struct aheadfs_file_info *fi)
{
	dir_cache_put(fi->dir_fill);
	fi->dir_fill = NULL;
}

/* The position of the record at @off, or the end after the last. */
static loff_t dir_pos_at(struct aheadfs_dir_cache *dc, size_t off)
{
	return off < dc->used ? ((struct dir_rec *)(dc->buf + off))->pos :
				dc->end;
}

/*
 * Where in @dc a readdir from @pos starts: where the file's last call
 * ended, the start, a record at @pos, or the end.  SIZE_MAX if @pos is
 * none of these (an offset from elsewhere): then the lower answers.
 */
static size_t dir_cache_find(struct aheadfs_dir_cache *dc,
			     struct aheadfs_file_info *fi, loff_t pos)
{
	size_t off;

	if (fi->dir_hint_seq == dc->seq && fi->dir_hint <= dc->used &&
	    dir_pos_at(dc, fi->dir_hint) == pos)
		return fi->dir_hint;
	if (pos == 0)
		return 0;
	for (off = 0; off < dc->used;
	     off += dir_rec_size(((struct dir_rec *)(dc->buf + off))->len))
		if (((struct dir_rec *)(dc->buf + off))->pos == pos)
			return off;
	return pos == dc->end ? dc->used : SIZE_MAX;
}

/*
 * A readdir of @file answered from its directory's cache, if there is one
 * within the entry timeout and @ctx's position is in it.  The lower file's
 * own position is not moved (only f_pos is set): the next readdir that
 * asks the lower seeks it first (dir_served).
 */
static bool dir_cache_serve(struct file *file, struct file *lower,
			    struct dir_context *ctx)
{
	struct inode *inode = file_inode(file);
	struct aheadfs_inode_info *ai = AHEADFS_I(inode);
	struct aheadfs_file_info *fi = AHEADFS_F(file);
	struct aheadfs_sb_info *sbi = AHEADFS_SB(inode->i_sb);
	struct aheadfs_dir_cache *dc, *old = NULL;
	struct dir_rec *r;
	size_t off;

	spin_lock(&ai->dir_lock);
	dc = ai->dir_cache;
	if (dc && !within(dc->time, prime_timeout(sbi))) {
		old = dir_cache_detach(ai);
		dc = NULL;
	}
	if (dc)
		refcount_inc(&dc->ref);
	spin_unlock(&ai->dir_lock);
	dir_cache_put(old);
	if (!dc)
		goto miss;
	off = dir_cache_find(dc, fi, ctx->pos);
	if (off == SIZE_MAX) {
		dir_cache_put(dc);
		goto miss;
	}
	while (off < dc->used) {
		r = (struct dir_rec *)(dc->buf + off);
		ctx->pos = r->pos;
		if (!dir_emit(ctx, r->name, r->len, r->ino, r->type))
			break;
		off += dir_rec_size(r->len);
	}
	ctx->pos = dir_pos_at(dc, off);
	fi->dir_hint = off;
	fi->dir_hint_seq = dc->seq;
	fi->dir_served = true;
	lower->f_pos = ctx->pos;
	dir_cache_put(dc);
	aheadfs_stat_inc(sbi, AHEADFS_STAT_readdir_cache_hits);
	return true;
miss:
	aheadfs_stat_inc(sbi, AHEADFS_STAT_readdir_cache_misses);
	return false;
}

/*
 * A readdir of @file that asks the lower, from @pos: from the start, it
 * begins a listing to keep; from where the file's last call ended, it goes
 * on with it; from anywhere else, the listing is given up.
 */
static void dir_fill_begin(struct file *file, loff_t pos)
{
	struct aheadfs_inode_info *ai = AHEADFS_I(file_inode(file));
	struct aheadfs_file_info *fi = AHEADFS_F(file);
	struct aheadfs_dir_cache *dc;

	if (pos != 0) {
		if (fi->dir_fill && pos != fi->dir_next)
			aheadfs_dir_release(fi);
		return;
	}
	aheadfs_dir_release(fi);
	dc = kzalloc(sizeof(*dc), GFP_KERNEL);
	if (!dc)
		return;
	refcount_set(&dc->ref, 1);
	dc->sbi = AHEADFS_SB(file_inode(file)->i_sb);
	INIT_LIST_HEAD(&dc->lru);
	dc->time = jiffies;
	spin_lock(&ai->dir_lock);
	dc->gen = ai->dir_gen;
	spin_unlock(&ai->dir_lock);
	fi->dir_fill = dc;
}

/* One entry the caller took, noted in the listing being filled. */
static void dir_fill_add(struct aheadfs_dir_cache *dc, const char *name,
			 int len, loff_t pos, u64 ino, unsigned int type)
{
	size_t sz = dir_rec_size(len);
	struct dir_rec *r;
	char *buf;

	if (dc->failed)
		return;
	if (len > NAME_MAX || dc->used + sz > AHEADFS_DIR_CACHE_MAX) {
		dc->failed = true;
		return;
	}
	if (dc->used + sz > dc->size) {
		size_t size = max_t(size_t, dc->size * 2, 16 << 10);

		size = min_t(size_t, size, AHEADFS_DIR_CACHE_MAX);
		if (!dir_cache_charge(dc, size - dc->size)) {
			dc->failed = true;
			return;
		}
		buf = kvmalloc(size, GFP_KERNEL);
		if (!buf) {
			atomic_long_sub(size - dc->size, &dc->sbi->dir_cache_bytes);
			dc->failed = true;
			return;
		}
		if (dc->used)
			memcpy(buf, dc->buf, dc->used);
		kvfree(dc->buf);
		dc->buf = buf;
		dc->size = size;
	}
	r = (struct dir_rec *)(dc->buf + dc->used);
	r->pos = pos;
	r->ino = ino;
	r->type = type;
	r->len = len;
	memcpy(r->name, name, len);
	dc->used += sz;
}

/*
 * The lower's readdir for the listing being filled returned: an error or
 * a listing too large gives it up; a call that found no entry left ended
 * it, and it becomes the directory's cache unless a change through us
 * overtook it; any other goes on at the next call.
 */
static void dir_fill_end(struct file *file, int err, bool ended, loff_t pos)
{
	struct aheadfs_inode_info *ai = AHEADFS_I(file_inode(file));
	struct aheadfs_file_info *fi = AHEADFS_F(file);
	struct aheadfs_dir_cache *dc = fi->dir_fill, *old = NULL;

	if (err || dc->failed) {
		aheadfs_dir_release(fi);
		return;
	}
	if (!ended) {
		fi->dir_next = pos;
		return;
	}
	fi->dir_fill = NULL;
	dc->end = pos;
	spin_lock(&ai->dir_lock);
	if (dc->gen == ai->dir_gen) {
		old = dir_cache_detach(ai);
		dc->seq = ++ai->dir_seq;
		dc->dir = file_inode(file);
		ai->dir_cache = dc;
		spin_lock(&dc->sbi->dir_lru_lock);
		list_add_tail(&dc->lru, &dc->sbi->dir_lru);
		dc->sbi->dir_lru_count++;
		spin_unlock(&dc->sbi->dir_lru_lock);
		dc = NULL;
	}
	spin_unlock(&ai->dir_lock);
	dir_cache_put(old);
	dir_cache_put(dc);
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
	struct aheadfs_dir_cache *fill;	/* the listing being kept, or NULL */
	unsigned long offered;		/* entries the lower gave this call */
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
 * The entries of one getdents call, as many as fit: a call whose entries
 * fill it ends short (glibc sizes its buffer by the directory's st_blksize,
 * up to 1 MiB, which an NFS client sets to its rsize).
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
	size_t sz = p->buf && len <= NAME_MAX ? prime_rec_size(len) : 0;
	struct prime_rec *r;

	p->offered++;
	/*
	 * Our note is full: the call ends here, short, and the entry is the
	 * first of the caller's next call, noted then.
	 */
	if (p->used + sz > AHEADFS_PRIME_BUF)
		return false;
	p->caller->pos = ctx->pos;
	/* Full: the entry is not the caller's, so it is not primed either. */
	if (!p->caller->actor(p->caller, name, len, pos, ino, type))
		return false;
	if (p->fill)
		dir_fill_add(p->fill, name, len, pos, ino, type);
	if (!sz || is_dot_dotdot(name, len))
		return true;
	r = (struct prime_rec *)(p->buf + p->used);
	r->ino = ino;
	r->len = len;
	memcpy(r->name, name, len);
	p->used += sz;
	return true;
}

/*
 * Whether entries of @lower may ever be primed: a local lower, or an NFS
 * client (lower_attr_time()).  On any other, the readdir is the lower's
 * alone, without the note of its entries.
 */
static bool lower_primable(const struct inode *lower)
{
	return !lower_attrs_remote(lower) ||
	       lower->i_sb->s_magic == NFS_SUPER_MAGIC;
}

/* The most entries one read-ahead of an NFS directory goes through. */
#define AHEADFS_PRIME_AHEAD	(1 << 18)

struct aheadfs_read_ahead {
	struct dir_context ctx;
	unsigned int seen;
};

static bool read_ahead_actor(struct dir_context *ctx, const char *name,
			     int len, loff_t pos, u64 ino, unsigned int type)
{
	struct aheadfs_read_ahead *ra =
		container_of(ctx, struct aheadfs_read_ahead, ctx);

	return ++ra->seen < AHEADFS_PRIME_AHEAD &&
	       !fatal_signal_pending(current);
}

/*
 * Whether the NFS client's readdir cache of @dir (the lower of our @inode)
 * may be read back for priming as it is: it was filled by a read-ahead of
 * ours (nfs_read_ahead()) within @timeout, so what its READDIRPLUS brought
 * is still good for that long, or within the client's own shortest
 * attribute timeout for files (acregmin; 0 with noac), within which the
 * client answers every stat from its cache anyway.  Otherwise the
 * attributes the client holds for its entries are older than what
 * priming could stamp fresh, and the client, whose cache stays valid for
 * as long as the directory's change attribute does (a chmod or a write of
 * a file leaves it alone), would list the directory from it without
 * attributes and send a GETATTR for each file stated after.
 */
static bool nfs_fetched_within(struct inode *inode, struct inode *dir,
			       unsigned int timeout)
{
	struct aheadfs_inode_info *ai = AHEADFS_I(inode);
	unsigned long t;

	if (!test_bit(AHEADFS_I_FETCHED, &ai->flags))
		return false;
	smp_rmb();	/* dir_fetch_time holds a value: see nfs_read_ahead() */
	t = READ_ONCE(ai->dir_fetch_time);
	return within(t, timeout) ||
	       time_before(jiffies, t + READ_ONCE(NFS_SERVER(dir)->acregmin));
}

/*
 * An NFS client reads a directory with READDIRPLUS, which brings each
 * entry's attributes and primes its dcache, from the directory's start
 * (a readdir at position 0), and past it only while it sees the entries
 * looked up, which priming spares it: the rest of a large directory would
 * come without attributes and cost a LOOKUP per entry, as without aheadfs.
 * So a readdir of ours from a directory's start first reads the lower
 * directory through, from an open file of its own: the client keeps what
 * it read in its readdir cache, which the caller's readdir then reads
 * back, and every entry is in its dcache, with attributes, to be primed.
 * The file's position is set back to 0 before each call: the client
 * decides READDIRPLUS by that position and resumes from the cookie it
 * keeps in the open file (6.12 ends its first call after 19 entries, to
 * count the lookups that follow them).  The round trips are those of the
 * client's own ls -l; at most AHEADFS_PRIME_AHEAD entries.
 *
 * Unless the client's readdir cache was filled that way within what
 * priming stamps (nfs_fetched_within()), it is dropped first, as
 * drop_caches would drop it (clean pages, none in use), so that the
 * client reads the directory from the server again, with READDIRPLUS:
 * once the timeouts have run out, the listing costs the listing's round
 * trips again, not a GETATTR per file, and every attribute it primes is
 * one the server has just returned (the client's read_cache_jiffies,
 * lower_attr_time()).  A page the drop leaves (another reader holds it)
 * is listed from the cache, its entries dated as the client dated them.
 */
static void nfs_read_ahead(struct inode *inode, struct file *lower)
{
	struct aheadfs_read_ahead ra = { .ctx.actor = read_ahead_actor };
	struct aheadfs_inode_info *ai = AHEADFS_I(inode);
	struct inode *dir = file_inode(lower);
	unsigned long start = jiffies;
	struct file *file;
	unsigned int seen;
	bool fetch;
	int err;

	if (dir->i_sb->s_magic != NFS_SUPER_MAGIC ||
	    !nfs_server_capable(dir, NFS_CAP_READDIRPLUS))
		return;
	fetch = !nfs_fetched_within(inode, dir,
				    prime_timeout(AHEADFS_SB(inode->i_sb)));
	file = dentry_open(&lower->f_path, O_RDONLY | O_DIRECTORY,
			   current_cred());
	if (IS_ERR(file))
		return;
	if (fetch)
		invalidate_mapping_pages(dir->i_mapping, 0, -1);
	do {
		seen = ra.seen;
		file->f_pos = 0;
		err = iterate_dir(file, &ra.ctx);
	} while (!err && ra.seen > seen && ra.seen < AHEADFS_PRIME_AHEAD &&
		 !fatal_signal_pending(current));
	/* Read through to its end: dated by when the reading started. */
	if (fetch && !err && ra.seen < AHEADFS_PRIME_AHEAD &&
	    !fatal_signal_pending(current)) {
		WRITE_ONCE(ai->dir_fetch_time, start);
		if (!test_bit(AHEADFS_I_FETCHED, &ai->flags)) {
			/* The time before the bit: nfs_fetched_within(). */
			smp_mb__before_atomic();
			set_bit(AHEADFS_I_FETCHED, &ai->flags);
		}
	}
	fput(file);
}

/*
 * The lower's readdir of @lower for our @file, with @ctx's entries, d_ino
 * and offsets passed up as the lower gives them; with the entry cache on,
 * the entries passed up are primed afterwards (prime_entry()); with the
 * readdir cache on too, answered from it (dir_cache_serve()) or noted for
 * it (dir_fill_begin()).
 */
/*
 * Whether @file's caller gets 32-bit directory offsets: ext4 and NFS give
 * them to a compat (32-bit) syscall and to a file nfsd opened for 32-bit
 * cookies (FMODE_32BITHASH, which nfsd sets after our open: it is passed
 * to the lower file here).  The readdir cache keeps 64-bit offsets, so such
 * a caller is neither served from it nor fills it.
 */
static bool dir_offsets_32bit(struct file *file, struct file *lower)
{
	const fmode_t hash = FMODE_32BITHASH | FMODE_64BITHASH;

	if ((READ_ONCE(file->f_mode) & hash) != (lower->f_mode & hash)) {
		spin_lock(&lower->f_lock);
		lower->f_mode = (lower->f_mode & ~hash) | (file->f_mode & hash);
		spin_unlock(&lower->f_lock);
	}
	return in_compat_syscall() || (file->f_mode & FMODE_32BITHASH);
}

int aheadfs_iterate_lower(struct file *file, struct file *lower,
			  struct dir_context *ctx)
{
	struct super_block *sb = file_inode(file)->i_sb;
	struct aheadfs_sb_info *sbi = AHEADFS_SB(sb);
	struct aheadfs_file_info *fi = AHEADFS_F(file);
	bool compat = dir_offsets_32bit(file, lower);
	bool cache = dir_cache_on(sbi) && !compat;
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

	if (cache && dir_cache_serve(file, lower, ctx))
		return 0;
	if (fi->dir_served) {
		/* Answered from the cache before: the lower seeks there. */
		loff_t pos = vfs_llseek(lower, ctx->pos, SEEK_SET);

		if (pos < 0)
			return pos;
		fi->dir_served = false;
	}
	lower->f_pos = ctx->pos;
	if (cache) {
		dir_fill_begin(file, ctx->pos);
	} else {
		/* Off: what was kept is not served when it is on again. */
		if (fi->dir_fill)
			aheadfs_dir_release(fi);
		if (!compat && READ_ONCE(AHEADFS_I(file_inode(file))->dir_cache))
			dir_cache_drop(file_inode(file));
	}
	if (READ_ONCE(sbi->entry_timeout_ms) &&
	    lower_primable(file_inode(lower)))
		p.buf = kvmalloc(AHEADFS_PRIME_BUF, GFP_KERNEL);
	p.fill = fi->dir_fill;
	/* Off, or no memory for it: the lower's readdir, nothing primed. */
	if (!p.buf && !p.fill)
		return iterate_dir(lower, ctx);
	if (p.buf && ctx->pos == 0)
		nfs_read_ahead(file_inode(file), lower);
	err = iterate_dir(lower, &p.ctx);
	ctx->pos = p.ctx.pos;
	if (p.fill)
		dir_fill_end(file, err, !p.offered, ctx->pos);
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
