/* SPDX-License-Identifier: GPL-2.0 */
/*
 * aheadfs private types: per-mount, per-inode and per-open-file state, the
 * statistics counters and the few helpers shared between files.
 */
#ifndef _AHEADFS_H
#define _AHEADFS_H

#include <linux/fs.h>
#include <linux/fs_stack.h>
#include <linux/path.h>
#include <linux/kobject.h>
#include <linux/percpu.h>
#include <linux/uio.h>
#include <linux/mount.h>
#include <linux/tracepoint-defs.h>
#include "compat.h"

#define AHEADFS_NAME		"aheadfs"
#define AHEADFS_MAGIC		0xa4ead0f5

/* Defaults for the mount options and sysfs tunables. */
#define AHEADFS_DEF_TXN_KB	8192U
#define AHEADFS_DEF_WINDOW_KB	65536U
#define AHEADFS_MAX_TXN_KB	(1U << 20)	/* 1 GiB */
#define AHEADFS_MAX_WINDOW_KB	(4U << 20)	/* 4 GiB */
#define AHEADFS_MAX_TIMEOUT_MS	(3600U * 1000U)
#define AHEADFS_DEF_FH_SEARCH_ENTRIES	(1U << 18)
#define AHEADFS_MAX_FH_SEARCH_ENTRIES	(1U << 24)

enum aheadfs_prefetch_mode {
	AHEADFS_PF_AHEAD,	/* window stays a full request ahead of the reader */
	AHEADFS_PF_LEGACY,	/* one chunk of at most txn per request (the old bug) */
	AHEADFS_PF_KERNEL,	/* no prefetch of ours; the lower's readahead only */
	AHEADFS_PF_OFF,		/* no prefetch and no lower readahead */
	AHEADFS_PF_NR_MODES,
};

extern const char *const aheadfs_prefetch_names[AHEADFS_PF_NR_MODES];

/*
 * Every counter in /sys/fs/aheadfs/<id>/stats, in print order (names in
 * sysfs.c).  Counters are per-CPU and summed on read; gauges (the window)
 * live in the sb_info.
 */
enum aheadfs_stat {
	AHEADFS_STAT_read_reqs,
	AHEADFS_STAT_read_bytes,
	AHEADFS_STAT_read_txns,
	AHEADFS_STAT_read_present_bytes,
	AHEADFS_STAT_read_absent_bytes,
	AHEADFS_STAT_absent_reqs,
	AHEADFS_STAT_uncached_tails,
	AHEADFS_STAT_read_inflight_bytes,
	AHEADFS_STAT_wait_reqs,
	AHEADFS_STAT_read_wait_ns,
	AHEADFS_STAT_write_reqs,
	AHEADFS_STAT_write_bytes,
	AHEADFS_STAT_prefetch_chunks,
	AHEADFS_STAT_prefetch_bytes,
	AHEADFS_STAT_prefetch_hit_bytes,
	AHEADFS_STAT_prefetch_wasted_bytes,
	AHEADFS_STAT_prefetch_demand_chunks,
	AHEADFS_STAT_prefetch_demand_bytes,
	AHEADFS_STAT_copy_reqs,
	AHEADFS_STAT_copy_bytes,
	AHEADFS_STAT_copy_clone,
	AHEADFS_STAT_copy_lower,
	AHEADFS_STAT_copy_chunked,
	AHEADFS_STAT_copy_txns,
	AHEADFS_STAT_copy_absent_txns,
	AHEADFS_STAT_copy_wait_txns,
	AHEADFS_STAT_copy_uncached_tails,
	AHEADFS_STAT_clone_reqs,
	AHEADFS_STAT_dedupe_reqs,
	AHEADFS_STAT_revalidate_fail,
	AHEADFS_STAT_attr_cache_hits,
	AHEADFS_STAT_entry_cache_hits,
	AHEADFS_STAT_perm_cache_hits,
	AHEADFS_STAT_negative_cache_hits,
	AHEADFS_STAT_entries_primed,
	AHEADFS_STAT_attr_cache_misses,
	AHEADFS_STAT_entry_cache_misses,
	AHEADFS_STAT_readdir_cache_hits,
	AHEADFS_STAT_readdir_cache_misses,
	AHEADFS_STAT_readdir_invalidations,
	AHEADFS_STAT_readdir_cache_evictions,
	AHEADFS_NR_STATS
};

/*
 * Operations counted as op_<name> in stats and reported by the aheadfs_meta
 * tracepoint.  The values are ABI: bpf/aheadtrace.h mirrors them.
 */
enum aheadfs_meta_op {
	AHEADFS_OP_lookup,
	AHEADFS_OP_create,
	AHEADFS_OP_mkdir,
	AHEADFS_OP_rmdir,
	AHEADFS_OP_unlink,
	AHEADFS_OP_rename,
	AHEADFS_OP_link,
	AHEADFS_OP_symlink,
	AHEADFS_OP_mknod,
	AHEADFS_OP_tmpfile,
	AHEADFS_OP_readdir,
	AHEADFS_OP_getattr,
	AHEADFS_OP_setattr,
	AHEADFS_OP_open,
	AHEADFS_OP_release,
	AHEADFS_OP_fsync,
	AHEADFS_OP_mmap,
	AHEADFS_OP_fallocate,
	AHEADFS_OP_llseek,
	AHEADFS_OP_fadvise,
	AHEADFS_OP_getxattr,
	AHEADFS_OP_setxattr,
	AHEADFS_OP_listxattr,
	AHEADFS_OP_statfs,
	AHEADFS_OP_ioctl,
	AHEADFS_OP_revalidate,
	AHEADFS_OP_readlink,
	AHEADFS_OP_permission,
	AHEADFS_OP_write,
	AHEADFS_OP_read,
	AHEADFS_OP_copy,
	AHEADFS_OP_remap,
	AHEADFS_NR_META_OPS
};

struct aheadfs_stats {
	u64 v[AHEADFS_NR_STATS];
	u64 ops[AHEADFS_NR_META_OPS];
};

/* Per-mount state, sb->s_fs_info. */
struct aheadfs_sb_info {
	struct path lower;			/* the lower root */
	struct super_block *lower_sb;
	struct aheadfs_stats __percpu *stats;
	struct kobject kobj;			/* /sys/fs/aheadfs/<major:minor> */
	struct completion kobj_released;
	bool kobj_added;

	/* Tunables: READ_ONCE() on every use, WRITE_ONCE() from sysfs. */
	unsigned int txn_kb;
	unsigned int window_kb;
	unsigned int prefetch_mode;
	unsigned int attr_timeout_ms;
	unsigned int entry_timeout_ms;
	unsigned int negative_timeout_ms;
	unsigned int readdir_cache;		/* 0 or 1 */
	unsigned int fh_search_entries;	/* export.c: a moved file's search */

	/*
	 * The readdir cache's memory (cache.c): bytes of every listing kept
	 * or being filled, and the kept ones, oldest first, for reclaim.
	 */
	atomic_long_t dir_cache_bytes;
	spinlock_t dir_lru_lock;
	struct list_head dir_lru;
	unsigned long dir_lru_count;

	/* Gauges, updated by prefetch.c. */
	atomic64_t window_cur;
	atomic64_t window_peak;
	/* The last window sized by a stream, and its measurements. */
	u64 window_last;		/* bytes */
	u64 window_target;		/* rate x latency x headroom, bytes */
	u64 window_rate;		/* the reader's, bytes per second */
	u64 window_latency_ns;		/* a chunk's, submission to completion */
};

/* Per-inode state: the VFS inode wraps exactly one lower inode. */
struct aheadfs_inode_info {
	struct inode vfs_inode;
	struct inode *lower;
	unsigned long attr_time;	/* jiffies of the last attribute refresh */
	/*
	 * st_blocks as the lower's getattr last reported it, and when: not
	 * every lower keeps i_blocks (xfs does not), so a cached stat reports
	 * this, within the attribute timeout of @blocks_time only.
	 */
	u64 blocks;
	unsigned long blocks_time;
	/*
	 * What else a getattr of the lower reported then, which our inode does
	 * not hold: the birth time (if AHEADFS_I_BTIME) and the statx
	 * attributes.
	 */
	struct timespec64 btime;
	u64 attributes, attributes_mask;
	unsigned long flags;		/* AHEADFS_I_* bits */
	umode_t lower_mode;		/* the lower's mode then (i_mode may hide set-id bits) */
	/*
	 * The permission cache (cache.c): what the lower last granted, when,
	 * and to whom: a reference to the caller's cred, which keeps the
	 * group list and namespace compared by address alive, and the ids
	 * and capabilities it was granted for.
	 */
	seqlock_t perm_lock;
	const struct cred *perm_cred;
	struct group_info *perm_groups;
	struct user_namespace *perm_ns;
	kuid_t perm_fsuid;
	kgid_t perm_fsgid;
	kernel_cap_t perm_caps;
	unsigned long perm_time;
	int perm_mask;
	/* Bumped by each forget: a grant asked for before it is not kept. */
	unsigned long perm_gen;
	/* A directory's readdir cache (cache.c), under dir_lock. */
	spinlock_t dir_lock;
	struct aheadfs_dir_cache *dir_cache;
	u64 dir_gen;			/* bumped by each change through us */
	u64 dir_seq;			/* numbers the caches kept */
	/* When an NFS lower's listing was last read afresh (cache.c). */
	unsigned long dir_fetch_time;
};

/*
 * aheadfs_inode_info.flags: AHEADFS_I_WRITTEN, written through this mount
 * since the lower last reported its attributes (getattr); till then a stat
 * is not served from the attribute cache.
 */
#define AHEADFS_I_WRITTEN	0
/* aheadfs_inode_info.blocks holds a value (cache.c). */
#define AHEADFS_I_BLOCKS	1
/* aheadfs_inode_info.btime holds the lower's birth time (cache.c). */
#define AHEADFS_I_BTIME		2
/* aheadfs_inode_info.dir_fetch_time holds a value (cache.c). */
#define AHEADFS_I_FETCHED	3

struct aheadfs_pf_state;
struct aheadfs_dir_cache;

/*
 * Per-open-file state.  file->private_data is a regular file's lower file
 * itself until something needs more (the window's first read, pf_get();
 * a caller's fadvise), and otherwise, as for every directory and every
 * exec, this, tagged AHEADFS_FILE_INFO in its lowest bit (both are
 * word-aligned): an open and close of a file allocates nothing of ours.
 * Made once, never replaced before the file's release.
 */
struct aheadfs_file_info {
	struct file *lower;
	struct aheadfs_pf_state *pf;	/* prefetch streams, owned by prefetch.c */
	/* We set FMODE_RANDOM on the lower (true while there is no info). */
	bool set_random;
	bool denied_write;		/* an exec's: writes to the lower denied */
	/* A directory's readdir cache being filled, or being read (cache.c). */
	struct aheadfs_dir_cache *dir_fill;
	loff_t dir_next;		/* where dir_fill's next call must start */
	size_t dir_hint;		/* the record of dir_cache read next */
	u64 dir_hint_seq;		/* of the cache dir_hint is in */
	bool dir_served;		/* the lower file's position was not moved */
};

/*
 * dentry->d_fsdata: the lower path this dentry stands for.  Freed after an
 * RCU grace period: RCU-walk revalidation reads it without a reference.
 */
struct aheadfs_dentry_info {
	struct path lower;
	/*
	 * Our d_seq and the lower dentry's when a revalidation last found
	 * them matching (dentry.c); AHEADFS_NO_SEQ, which no d_seq at rest
	 * is, before that.
	 */
	unsigned int seq;
	unsigned int lower_seq;
	struct rcu_head rcu;
};

/* Odd: a d_seq is odd only while it is being written. */
#define AHEADFS_NO_SEQ	1U

static inline struct aheadfs_sb_info *AHEADFS_SB(const struct super_block *sb)
{
	return sb->s_fs_info;
}

static inline struct aheadfs_inode_info *AHEADFS_I(const struct inode *inode)
{
	return container_of(inode, struct aheadfs_inode_info, vfs_inode);
}

static inline struct inode *aheadfs_lower_inode(const struct inode *inode)
{
	return AHEADFS_I(inode)->lower;
}

#define AHEADFS_FILE_INFO	1UL

/* The file's aheadfs_file_info, or NULL while it has none. */
static inline struct aheadfs_file_info *AHEADFS_F(const struct file *file)
{
	unsigned long p = (unsigned long)READ_ONCE(file->private_data);

	if (!(p & AHEADFS_FILE_INFO))
		return NULL;
	return (struct aheadfs_file_info *)(p - AHEADFS_FILE_INFO);
}

static inline struct file *aheadfs_lower_file(const struct file *file)
{
	unsigned long p = (unsigned long)READ_ONCE(file->private_data);

	if (p & AHEADFS_FILE_INFO)
		return ((struct aheadfs_file_info *)(p - AHEADFS_FILE_INFO))->lower;
	return (struct file *)p;
}

struct aheadfs_file_info *aheadfs_file_info(struct file *file, gfp_t gfp);

static inline struct aheadfs_dentry_info *AHEADFS_D(const struct dentry *dentry)
{
	return dentry->d_fsdata;
}

/* The lower path of a dentry; valid as long as the dentry is positive. */
static inline void aheadfs_lower_path(const struct dentry *dentry,
				      struct path *path)
{
	*path = AHEADFS_D(dentry)->lower;
}

static inline struct dentry *aheadfs_lower_dentry(const struct dentry *dentry)
{
	return AHEADFS_D(dentry)->lower.dentry;
}

/*
 * The lower dentry of a positive dentry, with a reference of the caller's
 * for one operation that may outlive our dentry's hold (a rename or unlink
 * passes it down).  Our dentry's own reference already keeps it positive:
 * d_delete() only unhashes a dentry somebody else holds, so getattr and
 * open use aheadfs_lower_dentry() under the caller's pin on our dentry.
 * NULL when the lower is already negative.
 */
static inline struct dentry *aheadfs_get_lower(const struct dentry *dentry)
{
	struct dentry *lower = dget(AHEADFS_D(dentry)->lower.dentry);

	if (d_really_is_negative(lower)) {
		dput(lower);
		return NULL;
	}
	return lower;
}

static inline aheadfs_idmap_t *aheadfs_sb_idmap(struct super_block *sb)
{
	return aheadfs_mnt_idmap(AHEADFS_SB(sb)->lower.mnt);
}

static inline aheadfs_idmap_t *aheadfs_lower_idmap(const struct dentry *dentry)
{
	return aheadfs_mnt_idmap(AHEADFS_D(dentry)->lower.mnt);
}

static inline void aheadfs_stat_add(struct aheadfs_sb_info *sbi,
				    enum aheadfs_stat idx, u64 n)
{
	this_cpu_add(sbi->stats->v[idx], n);
}

static inline void aheadfs_stat_inc(struct aheadfs_sb_info *sbi,
				    enum aheadfs_stat idx)
{
	this_cpu_inc(sbi->stats->v[idx]);
}

u64 aheadfs_stat_sum(struct aheadfs_sb_info *sbi, enum aheadfs_stat idx);

/*
 * Operation accounting, inline on every operation's path: aheadfs_op_begin()
 * returns a start time only when the aheadfs_meta tracepoint is on, so a
 * disabled tracepoint costs one static branch; aheadfs_op_end() counts the
 * op and emits the event.
 * aheadfs_op_end_at() takes the end time from a caller that has read the
 * clock already (0 when @t0 is 0): a traced read reads it once per end.
 * @dentry is the name the caller was given for @inode (NULL: none, as in
 * ->permission()): the tracepoint passes it on, so that a BPF program
 * names the file without probing aheadfs's functions.
 */
DECLARE_TRACEPOINT(aheadfs_meta);

static inline u64 aheadfs_op_begin(void)
{
	return tracepoint_enabled(aheadfs_meta) ? ktime_get_ns() : 0;
}

void aheadfs_op_trace(struct super_block *sb, enum aheadfs_meta_op op,
		      const struct inode *inode, const struct dentry *dentry,
		      u64 t0, u64 t1, long ret);

static inline void aheadfs_op_end_at(struct super_block *sb,
				     enum aheadfs_meta_op op,
				     const struct inode *inode,
				     const struct dentry *dentry, u64 t0,
				     u64 t1, long ret)
{
	this_cpu_inc(AHEADFS_SB(sb)->stats->ops[op]);
	if (unlikely(t0))
		aheadfs_op_trace(sb, op, inode, dentry, t0, t1, ret);
}

static inline void aheadfs_op_end(struct super_block *sb,
				  enum aheadfs_meta_op op,
				  const struct inode *inode,
				  const struct dentry *dentry, u64 t0, long ret)
{
	aheadfs_op_end_at(sb, op, inode, dentry, t0, t0 ? ktime_get_ns() : 0,
			  ret);
}

/* super.c */
extern struct kmem_cache *aheadfs_inode_cachep;
extern struct kmem_cache *aheadfs_file_cachep;
int aheadfs_check_tunable(const char *name, unsigned int val);

/*
 * Every change aheadfs makes to the lower goes through the lower's mount:
 * a read-only lower refuses it (EROFS) and a frozen one makes it wait, as
 * the same change made directly would.
 */
/*
 * The lower mount's noexec and nodev, read when they matter (an exec open,
 * a PROT_EXEC mapping, a device open): the lower may be remounted after
 * aheadfs is mounted over it, either way.
 */
static inline bool aheadfs_lower_noexec(struct super_block *sb)
{
	struct vfsmount *mnt = AHEADFS_SB(sb)->lower.mnt;

	return (READ_ONCE(mnt->mnt_flags) & MNT_NOEXEC) ||
	       (mnt->mnt_sb->s_iflags & SB_I_NOEXEC);
}

static inline bool aheadfs_lower_nodev(struct super_block *sb)
{
	struct vfsmount *mnt = AHEADFS_SB(sb)->lower.mnt;

	return (READ_ONCE(mnt->mnt_flags) & MNT_NODEV) ||
	       (mnt->mnt_sb->s_iflags & SB_I_NODEV);
}

/*
 * The lower's nosuid: set-id bits (hidden from our inode's mode, see
 * aheadfs_copy_attr_at()) and file capabilities (hidden from exec, see
 * aheadfs_xattr_get()) take no effect through aheadfs.
 */
static inline bool aheadfs_lower_nosuid(struct super_block *sb)
{
	return READ_ONCE(AHEADFS_SB(sb)->lower.mnt->mnt_flags) & MNT_NOSUID;
}

static inline int aheadfs_want_write(struct super_block *sb)
{
	return mnt_want_write(AHEADFS_SB(sb)->lower.mnt);
}

static inline void aheadfs_drop_write(struct super_block *sb)
{
	mnt_drop_write(AHEADFS_SB(sb)->lower.mnt);
}

/* inode.c */
extern const struct inode_operations aheadfs_dir_iops;
extern const struct inode_operations aheadfs_file_iops;
extern const struct inode_operations aheadfs_symlink_iops;
extern const struct inode_operations aheadfs_special_iops;
extern const struct xattr_handler *aheadfs_xattr_handlers[];
struct inode *aheadfs_iget(struct super_block *sb, struct inode *lower);
int aheadfs_interpose(struct dentry *dentry, struct super_block *sb,
		      struct path *lower_path);
void aheadfs_set_nlink(struct inode *inode, unsigned int nlink);
void aheadfs_copy_attr(struct inode *inode);

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
 * Whether the lower's copied flags changed behind our back (chattr on the
 * lower): the VFS checks ours before asking us, in inode_permission()
 * (immutable) and may_open() (append-only).  On every walk: inline.
 */
static inline bool aheadfs_i_flags_stale(const struct inode *inode,
					 const struct inode *lower)
{
	unsigned int flags = READ_ONCE(inode->i_flags);

	return (flags ^ READ_ONCE(lower->i_flags)) & AHEADFS_COPY_I_FLAGS;
}

void aheadfs_copy_i_flags(struct inode *inode);

/* fsstack_copy_inode_size(), storing nothing when nothing differs. */
static inline void aheadfs_copy_size(struct inode *inode, struct inode *lower)
{
	if (i_size_read(inode) != i_size_read(lower) ||
	    READ_ONCE(inode->i_blocks) != READ_ONCE(lower->i_blocks))
		fsstack_copy_inode_size(inode, lower);
}

void aheadfs_copy_attr_at(struct inode *inode, unsigned long when);
void aheadfs_copy_attr_written(struct inode *inode);

/* namei.c */
bool aheadfs_lower_weird(struct dentry *lower);
struct dentry *aheadfs_lookup(struct inode *dir, struct dentry *dentry,
			      unsigned int flags);
int aheadfs_create(aheadfs_idmap_t *idmap, struct inode *dir,
		   struct dentry *dentry, umode_t mode, bool excl);
int aheadfs_mkdir(aheadfs_idmap_t *idmap, struct inode *dir,
		  struct dentry *dentry, umode_t mode);
int aheadfs_mknod(aheadfs_idmap_t *idmap, struct inode *dir,
		  struct dentry *dentry, umode_t mode, dev_t rdev);
int aheadfs_symlink(aheadfs_idmap_t *idmap, struct inode *dir,
		    struct dentry *dentry, const char *target);
int aheadfs_link(struct dentry *old_dentry, struct inode *dir,
		 struct dentry *new_dentry);
int aheadfs_unlink(struct inode *dir, struct dentry *dentry);
int aheadfs_rmdir(struct inode *dir, struct dentry *dentry);
int aheadfs_rename(aheadfs_idmap_t *idmap, struct inode *old_dir,
		   struct dentry *old_dentry, struct inode *new_dir,
		   struct dentry *new_dentry, unsigned int flags);
int aheadfs_tmpfile(aheadfs_idmap_t *idmap, struct inode *dir,
		    struct file *file, umode_t mode);

/* cache.c */
bool aheadfs_attr_fresh(struct inode *inode);
bool aheadfs_perm_cached(struct inode *inode, int mask);
unsigned long aheadfs_perm_gen(struct inode *inode);
void aheadfs_perm_granted(struct inode *inode, int mask, unsigned long when,
			  unsigned long gen);
void aheadfs_perm_forget(struct inode *inode);
bool aheadfs_attr_stat_cached(struct inode *inode);
void aheadfs_blocks_stamp(struct inode *inode, u64 blocks, unsigned long when);
void aheadfs_stat_stamp(struct inode *inode, const struct kstat *stat,
			unsigned long when);
void aheadfs_stat_cached_fill(struct inode *inode, struct kstat *stat);
bool aheadfs_entry_fresh(struct dentry *dentry);
void aheadfs_entry_stamp(struct dentry *dentry, unsigned long when);
void aheadfs_dir_changed(struct inode *dir);
long aheadfs_dir_cache_count(struct super_block *sb);
long aheadfs_dir_cache_reclaim(struct super_block *sb, long nr);
void aheadfs_dir_release(struct aheadfs_file_info *fi);
int aheadfs_iterate_lower(struct file *file, struct file *lower,
			  struct dir_context *ctx);

/* dentry.c */
extern const struct dentry_operations aheadfs_dops;
struct aheadfs_dentry_info *aheadfs_alloc_dentry_info(void);
int aheadfs_new_dentry_info(struct dentry *dentry);
void aheadfs_forget_dentry_match(struct aheadfs_dentry_info *di);
void aheadfs_set_lower_path(struct dentry *dentry, struct path *path);

/* file.c */
extern const struct file_operations aheadfs_file_fops;
extern const struct file_operations aheadfs_file_noremap_fops;
extern const struct file_operations aheadfs_dir_fops;
extern const struct address_space_operations aheadfs_aops;
int aheadfs_sync_lower_flags(struct file *file);

/* backing.c */
int aheadfs_backing_init(void);
void aheadfs_backing_exit(void);
ssize_t aheadfs_lower_rw(struct kiocb *iocb, struct file *lower,
			 struct iov_iter *iter, int rw);
int aheadfs_backing_mmap(struct file *file, struct file *lower,
			 struct vm_area_struct *vma);

/* sched.c */
size_t aheadfs_txn_size(struct aheadfs_sb_info *sbi);
ssize_t aheadfs_sched_read(struct kiocb *iocb, struct iov_iter *to);

/* prefetch.c */
/*
 * What a range finds in the lower page cache: up to date (present), cached
 * but still being read (inflight: the reader waits for the device), or not
 * cached at all (absent).
 */
struct aheadfs_presence {
	u64 present;
	u64 inflight;
	u64 absent;
	u64 first_absent;	/* offset of the first absent byte, if any */
	bool hole_first;	/* an absent byte came before a cached one */
};

void aheadfs_cache_presence(struct address_space *mapping, loff_t pos,
			    u64 len, struct aheadfs_presence *pr);
u64 aheadfs_wait_reads(struct address_space *mapping, loff_t pos, u64 len);
void aheadfs_prefetch_open(struct file *file);
void aheadfs_prefetch_advised(struct file *file, int advice);
void aheadfs_prefetch_release(struct file *file);
/* A request the window planned, for aheadfs_prefetch_done(). */
struct aheadfs_pf_ticket {
	u64 t0;		/* when it was planned (ns; 0: not planned) */
	u64 t_own;	/* when the reader submitted its own absent bytes */
	u64 t_idle;	/* ns it extended the window instead of waiting */
	u32 gen;
	int stream;
	bool grown;	/* the window grew for the wait it found */
};

bool aheadfs_prefetch_request(struct file *file, loff_t pos, size_t count,
			      bool nowait, u64 now,
			      struct aheadfs_presence *meter,
			      struct aheadfs_pf_ticket *tk);
void aheadfs_prefetch_done(struct file *file,
			   const struct aheadfs_pf_ticket *tk,
			   const struct aheadfs_presence *pr, u64 wait_ns);
int aheadfs_prefetch_init(void);
void aheadfs_prefetch_exit(void);

/* copy.c */
ssize_t aheadfs_copy_file_range(struct file *file_in, loff_t pos_in,
				struct file *file_out, loff_t pos_out,
				size_t len, unsigned int flags);
loff_t aheadfs_remap_file_range(struct file *file_in, loff_t pos_in,
				struct file *file_out, loff_t pos_out,
				loff_t len, unsigned int remap_flags);

/* export.c */
extern const struct export_operations aheadfs_export_ops;

/* sysfs.c */
int aheadfs_sysfs_init(void);
void aheadfs_sysfs_exit(void);
int aheadfs_sysfs_add(struct super_block *sb);
void aheadfs_sysfs_del(struct super_block *sb);

#define aheadfs_err_ratelimited(fmt, ...) \
	pr_err_ratelimited(AHEADFS_NAME ": " fmt, ##__VA_ARGS__)

#endif /* _AHEADFS_H */
