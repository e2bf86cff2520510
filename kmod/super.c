// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs module init and exit, mount options (fs_context), and the
 * super_operations of a mount stacked on one lower directory.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/namei.h>
#include <linux/seq_file.h>
#include <linux/statfs.h>
#include <linux/exportfs.h>
#include <linux/xattr.h>
#include <linux/fs_stack.h>
#include <linux/sysfs.h>
#include "aheadfs.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

struct kmem_cache *aheadfs_inode_cachep;
struct kmem_cache *aheadfs_file_cachep;

const char *const aheadfs_prefetch_names[AHEADFS_PF_NR_MODES] = {
	[AHEADFS_PF_AHEAD]	= "ahead",
	[AHEADFS_PF_LEGACY]	= "legacy",
	[AHEADFS_PF_KERNEL]	= "kernel",
	[AHEADFS_PF_OFF]	= "off",
};

void aheadfs_op_trace(struct super_block *sb, enum aheadfs_meta_op op,
		      const struct inode *inode, const struct dentry *dentry,
		      u64 t0, u64 t1, long ret)
{
	trace_aheadfs_meta(inode ? inode->i_ino : 0, t1 - t0, ret, sb->s_dev,
			   op, inode, dentry);
}

u64 aheadfs_stat_sum(struct aheadfs_sb_info *sbi, enum aheadfs_stat idx)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(sbi->stats, cpu)->v[idx];
	return sum;
}

/* Mount options; the same names are the sysfs tunables. */
enum {
	Opt_prefetch,
	Opt_txn_kb,
	Opt_window_kb,
	Opt_attr_timeout_ms,
	Opt_entry_timeout_ms,
	Opt_negative_timeout_ms,
	Opt_readdir_cache,
	Opt_fh_search_entries,
};

static const struct constant_table prefetch_modes[] = {
	{ "ahead",	AHEADFS_PF_AHEAD },
	{ "legacy",	AHEADFS_PF_LEGACY },
	{ "kernel",	AHEADFS_PF_KERNEL },
	{ "off",	AHEADFS_PF_OFF },
	{}
};

static const struct fs_parameter_spec aheadfs_param_specs[] = {
	fsparam_enum("prefetch", Opt_prefetch, prefetch_modes),
	fsparam_u32("txn_kb", Opt_txn_kb),
	fsparam_u32("window_kb", Opt_window_kb),
	fsparam_u32("attr_timeout_ms", Opt_attr_timeout_ms),
	fsparam_u32("entry_timeout_ms", Opt_entry_timeout_ms),
	fsparam_u32("negative_timeout_ms", Opt_negative_timeout_ms),
	fsparam_u32("readdir_cache", Opt_readdir_cache),
	fsparam_u32("fh_search_entries", Opt_fh_search_entries),
	{}
};

struct aheadfs_fs_context {
	unsigned int prefetch_mode;
	unsigned int txn_kb;
	unsigned int window_kb;
	unsigned int attr_timeout_ms;
	unsigned int entry_timeout_ms;
	unsigned int negative_timeout_ms;
	unsigned int readdir_cache;
	unsigned int fh_search_entries;
	unsigned int set;		/* bitmask of Opt_* given */
};

/*
 * The range of each numeric tunable, the one check behind mount options,
 * sysfs writes and module parameters.
 */
struct tunable_range {
	const char *name;
	unsigned int min;
	unsigned int max;
};

static const struct tunable_range tunable_ranges[] = {
	{ "txn_kb",		4,	AHEADFS_MAX_TXN_KB },
	{ "window_kb",		0,	AHEADFS_MAX_WINDOW_KB },
	{ "attr_timeout_ms",	0,	AHEADFS_MAX_TIMEOUT_MS },
	{ "entry_timeout_ms",	0,	AHEADFS_MAX_TIMEOUT_MS },
	{ "negative_timeout_ms", 0,	AHEADFS_MAX_TIMEOUT_MS },
	{ "readdir_cache",	0,	1 },
	{ "fh_search_entries",	0,	AHEADFS_MAX_FH_SEARCH_ENTRIES },
};

static const struct tunable_range *tunable_range(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(tunable_ranges); i++)
		if (!strcmp(name, tunable_ranges[i].name))
			return &tunable_ranges[i];
	return NULL;
}

int aheadfs_check_tunable(const char *name, unsigned int val)
{
	const struct tunable_range *r = tunable_range(name);

	if (r && (val < r->min || val > r->max))
		return -ERANGE;
	return 0;
}

/*
 * Module parameters: the defaults of new mounts, named as the mount
 * options.  A mount takes them once, when its fs_context is set up, so a
 * change (modprobe.d, /sys/module/aheadfs/parameters/) reaches later mounts
 * only, and mount options still override them.  Only root sets them, and
 * each refused value must leave its line: not rate-limited.
 */
static unsigned int def_prefetch = AHEADFS_PF_AHEAD;
static unsigned int def_txn_kb = AHEADFS_DEF_TXN_KB;
static unsigned int def_window_kb = AHEADFS_DEF_WINDOW_KB;
static unsigned int def_attr_timeout_ms;
static unsigned int def_entry_timeout_ms;
static unsigned int def_negative_timeout_ms;
static unsigned int def_readdir_cache;
static unsigned int def_fh_search_entries = AHEADFS_DEF_FH_SEARCH_ENTRIES;

/* The parameter's name as the mount option has it (no "aheadfs." prefix). */
static const char *param_name(const struct kernel_param *kp)
{
	return kp->name + sizeof("" MODULE_PARAM_PREFIX) - 1;
}

static int param_set_tunable(const char *val, const struct kernel_param *kp)
{
	const char *name = param_name(kp);
	const struct tunable_range *r = tunable_range(name);
	unsigned int v;
	int err;

	err = kstrtouint(val, 0, &v);
	if (!err)
		err = aheadfs_check_tunable(name, v);
	if (err) {
		pr_err(AHEADFS_NAME ": parameter %s: invalid value '%.*s' (valid: %u to %u)\n",
		       name, (int)min_t(size_t, strcspn(val, "\n"), 32), val,
		       r ? r->min : 0, r ? r->max : UINT_MAX);
		return -EINVAL;
	}
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	return 0;
}

static int param_get_tunable(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(*(unsigned int *)kp->arg));
}

static const struct kernel_param_ops tunable_param_ops = {
	.set	= param_set_tunable,
	.get	= param_get_tunable,
};

static int param_set_prefetch(const char *val, const struct kernel_param *kp)
{
	int mode = sysfs_match_string(aheadfs_prefetch_names, val);

	if (mode < 0) {
		pr_err(AHEADFS_NAME ": parameter %s: invalid value '%.*s' (valid: ahead, legacy, kernel, off)\n",
		       param_name(kp), (int)min_t(size_t, strcspn(val, "\n"), 32),
		       val);
		return -EINVAL;
	}
	WRITE_ONCE(*(unsigned int *)kp->arg, mode);
	return 0;
}

static int param_get_prefetch(char *buf, const struct kernel_param *kp)
{
	unsigned int mode = READ_ONCE(*(unsigned int *)kp->arg);

	return sysfs_emit(buf, "%s\n", aheadfs_prefetch_names[mode]);
}

static const struct kernel_param_ops prefetch_param_ops = {
	.set	= param_set_prefetch,
	.get	= param_get_prefetch,
};

module_param_cb(prefetch, &prefetch_param_ops, &def_prefetch, 0644);
__MODULE_PARM_TYPE(prefetch, "string");
MODULE_PARM_DESC(prefetch,
		 "Prefetch mode of new mounts: ahead, legacy, kernel or off (default ahead)");
module_param_cb(txn_kb, &tunable_param_ops, &def_txn_kb, 0644);
__MODULE_PARM_TYPE(txn_kb, "uint");
MODULE_PARM_DESC(txn_kb,
		 "Transaction size of new mounts in KiB, 4 to 1048576 (default 8192)");
module_param_cb(window_kb, &tunable_param_ops, &def_window_kb, 0644);
__MODULE_PARM_TYPE(window_kb, "uint");
MODULE_PARM_DESC(window_kb,
		 "Largest prefetch window of new mounts in KiB, 0 to 4194304 (default 65536)");
module_param_cb(attr_timeout_ms, &tunable_param_ops, &def_attr_timeout_ms,
		0644);
__MODULE_PARM_TYPE(attr_timeout_ms, "uint");
MODULE_PARM_DESC(attr_timeout_ms,
		 "Attribute cache lifetime of new mounts in ms, 0 to 3600000 (default 0: off)");
module_param_cb(entry_timeout_ms, &tunable_param_ops, &def_entry_timeout_ms,
		0644);
__MODULE_PARM_TYPE(entry_timeout_ms, "uint");
MODULE_PARM_DESC(entry_timeout_ms,
		 "Entry cache lifetime of new mounts in ms, 0 to 3600000 (default 0: off)");
module_param_cb(negative_timeout_ms, &tunable_param_ops,
		&def_negative_timeout_ms, 0644);
__MODULE_PARM_TYPE(negative_timeout_ms, "uint");
MODULE_PARM_DESC(negative_timeout_ms,
		 "Negative entry cache lifetime of new mounts in ms, 0 to 3600000 (default 0: off)");
module_param_cb(readdir_cache, &tunable_param_ops, &def_readdir_cache, 0644);
__MODULE_PARM_TYPE(readdir_cache, "uint");
MODULE_PARM_DESC(readdir_cache,
		 "Readdir cache of new mounts (within entry_timeout_ms), 0 to 1 (default 0: off)");
module_param_cb(fh_search_entries, &tunable_param_ops, &def_fh_search_entries,
		0644);
__MODULE_PARM_TYPE(fh_search_entries, "uint");
MODULE_PARM_DESC(fh_search_entries,
		 "Lower directory entries a file handle of a moved file is searched in, 0 to 16777216 (default 262144; 0: no search)");

static int aheadfs_parse_param(struct fs_context *fc,
			       struct fs_parameter *param)
{
	struct aheadfs_fs_context *ctx = fc->fs_private;
	struct fs_parse_result result;
	int opt;

	opt = fs_parse(fc, aheadfs_param_specs, param, &result);
	if (opt < 0)
		return opt;

	if (param->type == fs_value_is_string &&
	    aheadfs_check_tunable(param->key, result.uint_32)) {
		const struct tunable_range *r = tunable_range(param->key);

		return invalfc(fc, "%s=%s out of range (valid: %u to %u)",
			       param->key, param->string, r->min, r->max);
	}

	switch (opt) {
	case Opt_prefetch:
		ctx->prefetch_mode = result.uint_32;
		break;
	case Opt_txn_kb:
		ctx->txn_kb = result.uint_32;
		break;
	case Opt_window_kb:
		ctx->window_kb = result.uint_32;
		break;
	case Opt_attr_timeout_ms:
		ctx->attr_timeout_ms = result.uint_32;
		break;
	case Opt_entry_timeout_ms:
		ctx->entry_timeout_ms = result.uint_32;
		break;
	case Opt_negative_timeout_ms:
		ctx->negative_timeout_ms = result.uint_32;
		break;
	case Opt_readdir_cache:
		ctx->readdir_cache = result.uint_32;
		break;
	case Opt_fh_search_entries:
		ctx->fh_search_entries = result.uint_32;
		break;
	}
	ctx->set |= BIT(opt);
	return 0;
}

static void apply_tunables(struct aheadfs_sb_info *sbi,
			   struct aheadfs_fs_context *ctx)
{
	if (ctx->set & BIT(Opt_prefetch))
		WRITE_ONCE(sbi->prefetch_mode, ctx->prefetch_mode);
	if (ctx->set & BIT(Opt_txn_kb))
		WRITE_ONCE(sbi->txn_kb, ctx->txn_kb);
	if (ctx->set & BIT(Opt_window_kb))
		WRITE_ONCE(sbi->window_kb, ctx->window_kb);
	if (ctx->set & BIT(Opt_attr_timeout_ms))
		WRITE_ONCE(sbi->attr_timeout_ms, ctx->attr_timeout_ms);
	if (ctx->set & BIT(Opt_entry_timeout_ms))
		WRITE_ONCE(sbi->entry_timeout_ms, ctx->entry_timeout_ms);
	if (ctx->set & BIT(Opt_negative_timeout_ms))
		WRITE_ONCE(sbi->negative_timeout_ms, ctx->negative_timeout_ms);
	if (ctx->set & BIT(Opt_readdir_cache))
		WRITE_ONCE(sbi->readdir_cache, ctx->readdir_cache);
	if (ctx->set & BIT(Opt_fh_search_entries))
		WRITE_ONCE(sbi->fh_search_entries, ctx->fh_search_entries);
}

/*
 * Whether the filesystem of @lower_root hashes or compares names itself:
 * a case-folding encoding on the superblock, or dentry operations that
 * hash and compare.
 */
static bool lower_names_folded(struct dentry *lower_root)
{
#if IS_ENABLED(CONFIG_UNICODE)
	if (lower_root->d_sb->s_encoding)
		return true;
#endif
	return lower_root->d_flags & (DCACHE_OP_HASH | DCACHE_OP_COMPARE);
}

static struct inode *aheadfs_alloc_inode(struct super_block *sb)
{
	struct aheadfs_inode_info *ai;

	ai = alloc_inode_sb(sb, aheadfs_inode_cachep, GFP_KERNEL);
	if (!ai)
		return NULL;
	ai->lower = NULL;
	ai->attr_time = 0;
	ai->flags = 0;
	ai->blocks = 0;
	ai->blocks_time = 0;
	ai->attributes = 0;
	ai->attributes_mask = 0;
	ai->lower_mode = 0;
	seqlock_init(&ai->perm_lock);
	ai->perm_cred = NULL;
	ai->perm_groups = NULL;
	ai->perm_ns = NULL;
	ai->perm_time = 0;
	ai->perm_mask = 0;
	ai->perm_gen = 0;
	spin_lock_init(&ai->dir_lock);
	ai->dir_cache = NULL;
	ai->dir_gen = 0;
	ai->dir_seq = 0;
	return &ai->vfs_inode;
}

static void aheadfs_free_inode(struct inode *inode)
{
	kmem_cache_free(aheadfs_inode_cachep, AHEADFS_I(inode));
}

static void aheadfs_evict_inode(struct inode *inode)
{
	struct inode *lower = AHEADFS_I(inode)->lower;

	truncate_inode_pages_final(&inode->i_data);
	if (S_ISDIR(inode->i_mode))
		aheadfs_dir_changed(inode);
	clear_inode(inode);
	aheadfs_perm_forget(inode);
	/* Dropped here rather than in free_inode, which may run from RCU. */
	AHEADFS_I(inode)->lower = NULL;
	iput(lower);
}

static int aheadfs_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	struct path lower;
	u64 t0 = aheadfs_op_begin();
	int err;

	aheadfs_lower_path(dentry, &lower);
	err = vfs_statfs(&lower, buf);
	if (!err)
		buf->f_type = AHEADFS_MAGIC;
	aheadfs_op_end(dentry->d_sb, AHEADFS_OP_statfs, d_inode(dentry),
		       dentry, t0, err);
	return err;
}

/* syncfs(2) on the mount must reach the lower filesystem's dirty data. */
/*
 * An aheadfs mount over another takes the lower aheadfs's locks while it
 * holds its own: the same lock classes, one level down.  Each stacking
 * depth has classes of its own (as overlayfs gives its inodes), so lockdep
 * sees an order between two locks, not one lock taken twice: the rename
 * mutex and the freeze levels of the superblock here, the inodes' i_rwsem
 * in aheadfs_iget(), s_umount (held during mount) nested in sync_fs.
 */
static void aheadfs_lockdep_sb(struct super_block *sb)
{
#ifdef CONFIG_LOCKDEP
	static struct lock_class_key rename_key[FILESYSTEM_MAX_STACK_DEPTH];
	static struct lock_class_key
		writers_key[FILESYSTEM_MAX_STACK_DEPTH][SB_FREEZE_LEVELS];
	int depth = sb->s_stack_depth - 1;
	int i;

	if (WARN_ON_ONCE(depth < 0 || depth >= FILESYSTEM_MAX_STACK_DEPTH))
		return;
	lockdep_set_class(&sb->s_vfs_rename_mutex, &rename_key[depth]);
	for (i = 0; i < SB_FREEZE_LEVELS; i++)
		lockdep_set_class(&sb->s_writers.rw_sem[i],
				  &writers_key[depth][i]);
#endif
}

static int aheadfs_sync_fs(struct super_block *sb, int wait)
{
	struct super_block *lower_sb = AHEADFS_SB(sb)->lower_sb;
	int err;

	if (!wait)
		return 0;
	/* Ours is held: the lower's may be an aheadfs one, a level down. */
	down_read_nested(&lower_sb->s_umount, sb->s_stack_depth);
	err = sync_filesystem(lower_sb);
	up_read(&lower_sb->s_umount);
	return err;
}

static int aheadfs_show_options(struct seq_file *m, struct dentry *root)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(root->d_sb);

	seq_printf(m, ",prefetch=%s,txn_kb=%u,window_kb=%u",
		   aheadfs_prefetch_names[READ_ONCE(sbi->prefetch_mode)],
		   READ_ONCE(sbi->txn_kb), READ_ONCE(sbi->window_kb));
	seq_printf(m, ",attr_timeout_ms=%u,entry_timeout_ms=%u,negative_timeout_ms=%u",
		   READ_ONCE(sbi->attr_timeout_ms),
		   READ_ONCE(sbi->entry_timeout_ms),
		   READ_ONCE(sbi->negative_timeout_ms));
	seq_printf(m, ",readdir_cache=%u,fh_search_entries=%u",
		   READ_ONCE(sbi->readdir_cache),
		   READ_ONCE(sbi->fh_search_entries));
	return 0;
}

/* The superblock's shrinker reclaims kept readdir listings too. */
static long aheadfs_nr_cached_objects(struct super_block *sb,
				      struct shrink_control *sc)
{
	return aheadfs_dir_cache_count(sb);
}

static long aheadfs_free_cached_objects(struct super_block *sb,
					struct shrink_control *sc)
{
	return aheadfs_dir_cache_reclaim(sb, sc->nr_to_scan);
}

static const struct super_operations aheadfs_sops = {
	.nr_cached_objects = aheadfs_nr_cached_objects,
	.free_cached_objects = aheadfs_free_cached_objects,
	.alloc_inode	= aheadfs_alloc_inode,
	.free_inode	= aheadfs_free_inode,
	.evict_inode	= aheadfs_evict_inode,
	.drop_inode	= generic_delete_inode,
	.statfs		= aheadfs_statfs,
	.sync_fs	= aheadfs_sync_fs,
	.show_options	= aheadfs_show_options,
};

static int aheadfs_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct aheadfs_fs_context *ctx = fc->fs_private;
	struct aheadfs_sb_info *sbi;
	struct super_block *lower_sb;
	struct inode *inode;
	struct dentry *root;
	int err;

	if (!fc->source)
		return invalfc(fc, "missing LOWERDIR (mount -t aheadfs LOWERDIR MNT)");

	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	sb->s_fs_info = sbi;
	init_completion(&sbi->kobj_released);
	sbi->prefetch_mode = ctx->prefetch_mode;
	sbi->txn_kb = ctx->txn_kb;
	sbi->window_kb = ctx->window_kb;
	sbi->attr_timeout_ms = ctx->attr_timeout_ms;
	sbi->entry_timeout_ms = ctx->entry_timeout_ms;
	sbi->negative_timeout_ms = ctx->negative_timeout_ms;
	sbi->readdir_cache = ctx->readdir_cache;
	sbi->fh_search_entries = ctx->fh_search_entries;

	spin_lock_init(&sbi->dir_lru_lock);
	INIT_LIST_HEAD(&sbi->dir_lru);
	sbi->stats = alloc_percpu(struct aheadfs_stats);
	if (!sbi->stats)
		return -ENOMEM;

	err = kern_path(fc->source, LOOKUP_FOLLOW | LOOKUP_DIRECTORY,
			&sbi->lower);
	if (err) {
		errorfc(fc, "lower %s: %s (error %d)", fc->source,
			err == -ENOENT ? "no such directory" :
			err == -ENOTDIR ? "not a directory" : "lookup failed",
			err);
		return err;
	}
	lower_sb = sbi->lower.mnt->mnt_sb;
	sbi->lower_sb = lower_sb;

	/*
	 * An idmapped lower would need every attribute, ACL and owner
	 * mapped on the way up and back down; aheadfs refuses it instead
	 * (and its own mounts cannot be idmapped: no FS_ALLOW_IDMAP).
	 */
	if (is_idmapped_mnt(sbi->lower.mnt))
		return invalfc(fc, "lower %s is an idmapped mount: not supported",
			       fc->source);

	/*
	 * Names the lower compares its own way (ext4 casefold, xfs ascii-ci,
	 * vfat): our dcache would hash and compare them byte for byte, so a
	 * name it knows under another case would be negative here, and the
	 * lower never hashes negative dentries, so every create through us
	 * would fail ESTALE.  Refused, as overlayfs refuses such layers.
	 */
	if (lower_names_folded(sbi->lower.dentry))
		return invalfc(fc, "lower %s has case-insensitive names: not supported",
			       fc->source);

	sb->s_stack_depth = lower_sb->s_stack_depth + 1;
	if (sb->s_stack_depth > FILESYSTEM_MAX_STACK_DEPTH)
		return invalfc(fc, "lower %s is stacked too deep (max %d)",
			       fc->source, FILESYSTEM_MAX_STACK_DEPTH);
	aheadfs_lockdep_sb(sb);

	sb->s_magic = AHEADFS_MAGIC;
	sb->s_op = &aheadfs_sops;
	sb->s_d_op = &aheadfs_dops;
	sb->s_xattr = aheadfs_xattr_handlers;
	sb->s_maxbytes = lower_sb->s_maxbytes;
	sb->s_time_gran = lower_sb->s_time_gran;
	sb->s_blocksize = lower_sb->s_blocksize;
	sb->s_blocksize_bits = lower_sb->s_blocksize_bits;
	sb->s_flags |= lower_sb->s_flags & SB_POSIXACL;
	/*
	 * The lower mount's noexec and nodev hold through aheadfs as they are
	 * when used, not as they were at mount time: exec opens and PROT_EXEC
	 * mappings (file.c) and device opens (aheadfs_permission()) check the
	 * lower mount then.  nosuid is applied to each inode's mode when it is
	 * refreshed, as an exec open does (aheadfs_copy_attr()).
	 */
	if (lower_sb->s_export_op && lower_sb->s_export_op->fh_to_dentry &&
	    aheadfs_export_ops.fh_to_dentry)
		sb->s_export_op = &aheadfs_export_ops;

	inode = aheadfs_iget(sb, d_inode(sbi->lower.dentry));
	if (IS_ERR(inode))
		return PTR_ERR(inode);
	root = d_make_root(inode);
	if (!root)
		return -ENOMEM;
	sb->s_root = root;
	err = aheadfs_new_dentry_info(root);
	if (err)
		return err;
	aheadfs_set_lower_path(root, &sbi->lower);
	path_get(&sbi->lower);

	return aheadfs_sysfs_add(sb);
}

static int aheadfs_get_tree(struct fs_context *fc)
{
	return get_tree_nodev(fc, aheadfs_fill_super);
}

static int aheadfs_reconfigure(struct fs_context *fc)
{
	apply_tunables(AHEADFS_SB(fc->root->d_sb), fc->fs_private);
	return 0;
}

static void aheadfs_free_fc(struct fs_context *fc)
{
	kfree(fc->fs_private);
}

static const struct fs_context_operations aheadfs_context_ops = {
	.parse_param	= aheadfs_parse_param,
	.get_tree	= aheadfs_get_tree,
	.reconfigure	= aheadfs_reconfigure,
	.free		= aheadfs_free_fc,
};

static int aheadfs_init_fs_context(struct fs_context *fc)
{
	struct aheadfs_fs_context *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	/* The module parameters; a remount applies only the options given. */
	ctx->prefetch_mode = READ_ONCE(def_prefetch);
	ctx->txn_kb = READ_ONCE(def_txn_kb);
	ctx->window_kb = READ_ONCE(def_window_kb);
	ctx->attr_timeout_ms = READ_ONCE(def_attr_timeout_ms);
	ctx->entry_timeout_ms = READ_ONCE(def_entry_timeout_ms);
	ctx->negative_timeout_ms = READ_ONCE(def_negative_timeout_ms);
	ctx->readdir_cache = READ_ONCE(def_readdir_cache);
	ctx->fh_search_entries = READ_ONCE(def_fh_search_entries);
	fc->fs_private = ctx;
	fc->ops = &aheadfs_context_ops;
	return 0;
}

static void aheadfs_kill_sb(struct super_block *sb)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(sb);

	if (sbi)
		aheadfs_sysfs_del(sb);
	kill_anon_super(sb);
	if (sbi) {
		path_put(&sbi->lower);
		free_percpu(sbi->stats);
		kfree(sbi);
	}
}

static struct file_system_type aheadfs_fs_type = {
	.owner			= THIS_MODULE,
	.name			= AHEADFS_NAME,
	.init_fs_context	= aheadfs_init_fs_context,
	.parameters		= aheadfs_param_specs,
	.kill_sb		= aheadfs_kill_sb,
};
MODULE_ALIAS_FS(AHEADFS_NAME);

static void aheadfs_inode_init_once(void *obj)
{
	struct aheadfs_inode_info *ai = obj;

	inode_init_once(&ai->vfs_inode);
}

static int __init aheadfs_init(void)
{
	int err;

	aheadfs_inode_cachep = kmem_cache_create("aheadfs_inode",
						 sizeof(struct aheadfs_inode_info),
						 0, SLAB_RECLAIM_ACCOUNT |
						 SLAB_ACCOUNT,
						 aheadfs_inode_init_once);
	if (!aheadfs_inode_cachep)
		return -ENOMEM;
	/*
	 * One per open file: an open's only allocation of our own, charged
	 * to the opener's memory cgroup as its struct file is.
	 */
	aheadfs_file_cachep = KMEM_CACHE(aheadfs_file_info, SLAB_ACCOUNT);
	if (!aheadfs_file_cachep) {
		err = -ENOMEM;
		goto out_inode_cache;
	}
	err = aheadfs_backing_init();
	if (err)
		goto out_file_cache;
	err = aheadfs_prefetch_init();
	if (err)
		goto out_file;
	err = aheadfs_sysfs_init();
	if (err)
		goto out_prefetch;
	err = register_filesystem(&aheadfs_fs_type);
	if (err)
		goto out_sysfs;
	return 0;

out_sysfs:
	aheadfs_sysfs_exit();
out_prefetch:
	aheadfs_prefetch_exit();
out_file:
	aheadfs_backing_exit();
out_file_cache:
	kmem_cache_destroy(aheadfs_file_cachep);
out_inode_cache:
	kmem_cache_destroy(aheadfs_inode_cachep);
	return err;
}

static void __exit aheadfs_exit(void)
{
	unregister_filesystem(&aheadfs_fs_type);
	aheadfs_sysfs_exit();
	aheadfs_prefetch_exit();
	aheadfs_backing_exit();
	/* Inodes are freed through RCU; wait before destroying their cache. */
	rcu_barrier();
	kmem_cache_destroy(aheadfs_file_cachep);
	kmem_cache_destroy(aheadfs_inode_cachep);
}

module_init(aheadfs_init);
module_exit(aheadfs_exit);

MODULE_DESCRIPTION("aheadfs: a stacking filesystem whose readahead stays ahead");
MODULE_LICENSE("GPL");
