// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/fs/aheadfs/<major:minor>/: one read-write file per tunable, like
 * /sys/block/<dev>/queue/read_ahead_kb, and `stats`, one "name value" line
 * per counter, like /proc/vmstat.  Only root writes the tunables, and each
 * refused value must leave its line, as a refused module parameter does:
 * not rate-limited (a burst of them from one test, or one script, hid the
 * next one's line).
 */
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/slab.h>
#include "aheadfs.h"

static struct kobject *aheadfs_root_kobj;

struct aheadfs_attr {
	struct attribute attr;
	ssize_t (*show)(struct aheadfs_sb_info *sbi, char *buf);
	ssize_t (*store)(struct aheadfs_sb_info *sbi, const char *name,
			 const char *buf, size_t len);
	size_t offset;		/* of the unsigned int tunable in sb_info */
};

static unsigned int *tunable(struct aheadfs_sb_info *sbi,
			     const struct aheadfs_attr *a)
{
	return (unsigned int *)((char *)sbi + a->offset);
}

static ssize_t aheadfs_attr_show(struct kobject *kobj, struct attribute *attr,
				 char *buf)
{
	struct aheadfs_sb_info *sbi = container_of(kobj, struct aheadfs_sb_info,
						   kobj);
	struct aheadfs_attr *a = container_of(attr, struct aheadfs_attr, attr);

	if (a->show)
		return a->show(sbi, buf);
	return sysfs_emit(buf, "%u\n", READ_ONCE(*tunable(sbi, a)));
}

static ssize_t aheadfs_attr_store(struct kobject *kobj, struct attribute *attr,
				  const char *buf, size_t len)
{
	struct aheadfs_sb_info *sbi = container_of(kobj, struct aheadfs_sb_info,
						   kobj);
	struct aheadfs_attr *a = container_of(attr, struct aheadfs_attr, attr);
	unsigned int val;
	int err;

	if (a->store)
		return a->store(sbi, attr->name, buf, len);
	err = kstrtouint(buf, 0, &val);
	if (!err)
		err = aheadfs_check_tunable(attr->name, val) ? -EINVAL : 0;
	if (err) {
		pr_warn(AHEADFS_NAME ": %s: invalid %s value '%.*s'\n",
			kobject_name(kobj), attr->name,
			(int)min_t(size_t, len, 32), buf);
		return err;
	}
	WRITE_ONCE(*tunable(sbi, a), val);
	return len;
}

static ssize_t prefetch_show(struct aheadfs_sb_info *sbi, char *buf)
{
	return sysfs_emit(buf, "%s\n",
			  aheadfs_prefetch_names[READ_ONCE(sbi->prefetch_mode)]);
}

static ssize_t prefetch_store(struct aheadfs_sb_info *sbi, const char *name,
			      const char *buf, size_t len)
{
	int mode = sysfs_match_string(aheadfs_prefetch_names, buf);

	if (mode < 0) {
		pr_warn(AHEADFS_NAME ": %s: invalid prefetch mode '%.*s' (ahead|legacy|kernel|off)\n",
			kobject_name(&sbi->kobj),
			(int)min_t(size_t, strcspn(buf, "\n"), 32), buf);
		return -EINVAL;
	}
	WRITE_ONCE(sbi->prefetch_mode, mode);
	return len;
}

static const char *const stat_names[AHEADFS_NR_STATS] = {
	[AHEADFS_STAT_read_reqs] = "read_reqs",
	[AHEADFS_STAT_read_bytes] = "read_bytes",
	[AHEADFS_STAT_read_txns] = "read_txns",
	[AHEADFS_STAT_read_present_bytes] = "read_present_bytes",
	[AHEADFS_STAT_read_absent_bytes] = "read_absent_bytes",
	[AHEADFS_STAT_absent_reqs] = "absent_reqs",
	[AHEADFS_STAT_uncached_tails] = "uncached_tails",
	[AHEADFS_STAT_read_inflight_bytes] = "read_inflight_bytes",
	[AHEADFS_STAT_wait_reqs] = "wait_reqs",
	[AHEADFS_STAT_read_wait_ns] = "read_wait_ns",
	[AHEADFS_STAT_write_reqs] = "write_reqs",
	[AHEADFS_STAT_write_bytes] = "write_bytes",
	[AHEADFS_STAT_prefetch_chunks] = "prefetch_chunks",
	[AHEADFS_STAT_prefetch_bytes] = "prefetch_bytes",
	[AHEADFS_STAT_prefetch_hit_bytes] = "prefetch_hit_bytes",
	[AHEADFS_STAT_prefetch_wasted_bytes] = "prefetch_wasted_bytes",
	[AHEADFS_STAT_prefetch_demand_chunks] = "prefetch_demand_chunks",
	[AHEADFS_STAT_prefetch_demand_bytes] = "prefetch_demand_bytes",
	[AHEADFS_STAT_copy_reqs] = "copy_reqs",
	[AHEADFS_STAT_copy_bytes] = "copy_bytes",
	[AHEADFS_STAT_copy_clone] = "copy_clone",
	[AHEADFS_STAT_copy_lower] = "copy_lower",
	[AHEADFS_STAT_copy_chunked] = "copy_chunked",
	[AHEADFS_STAT_copy_txns] = "copy_txns",
	[AHEADFS_STAT_copy_absent_txns] = "copy_absent_txns",
	[AHEADFS_STAT_copy_wait_txns] = "copy_wait_txns",
	[AHEADFS_STAT_copy_uncached_tails] = "copy_uncached_tails",
	[AHEADFS_STAT_clone_reqs] = "clone_reqs",
	[AHEADFS_STAT_dedupe_reqs] = "dedupe_reqs",
	[AHEADFS_STAT_revalidate_fail] = "revalidate_fail",
	[AHEADFS_STAT_attr_cache_hits] = "attr_cache_hits",
	[AHEADFS_STAT_entry_cache_hits] = "entry_cache_hits",
	[AHEADFS_STAT_perm_cache_hits] = "perm_cache_hits",
	[AHEADFS_STAT_negative_cache_hits] = "negative_cache_hits",
	[AHEADFS_STAT_entries_primed] = "entries_primed",
	[AHEADFS_STAT_attr_cache_misses] = "attr_cache_misses",
	[AHEADFS_STAT_entry_cache_misses] = "entry_cache_misses",
	[AHEADFS_STAT_readdir_cache_hits] = "readdir_cache_hits",
	[AHEADFS_STAT_readdir_cache_misses] = "readdir_cache_misses",
	[AHEADFS_STAT_readdir_invalidations] = "readdir_invalidations",
	[AHEADFS_STAT_readdir_cache_evictions] = "readdir_cache_evictions",
};

static const char *const op_names[AHEADFS_NR_META_OPS] = {
	[AHEADFS_OP_lookup] = "lookup",
	[AHEADFS_OP_create] = "create",
	[AHEADFS_OP_mkdir] = "mkdir",
	[AHEADFS_OP_rmdir] = "rmdir",
	[AHEADFS_OP_unlink] = "unlink",
	[AHEADFS_OP_rename] = "rename",
	[AHEADFS_OP_link] = "link",
	[AHEADFS_OP_symlink] = "symlink",
	[AHEADFS_OP_mknod] = "mknod",
	[AHEADFS_OP_tmpfile] = "tmpfile",
	[AHEADFS_OP_readdir] = "readdir",
	[AHEADFS_OP_getattr] = "getattr",
	[AHEADFS_OP_setattr] = "setattr",
	[AHEADFS_OP_open] = "open",
	[AHEADFS_OP_release] = "release",
	[AHEADFS_OP_fsync] = "fsync",
	[AHEADFS_OP_mmap] = "mmap",
	[AHEADFS_OP_fallocate] = "fallocate",
	[AHEADFS_OP_llseek] = "llseek",
	[AHEADFS_OP_fadvise] = "fadvise",
	[AHEADFS_OP_getxattr] = "getxattr",
	[AHEADFS_OP_setxattr] = "setxattr",
	[AHEADFS_OP_listxattr] = "listxattr",
	[AHEADFS_OP_statfs] = "statfs",
	[AHEADFS_OP_ioctl] = "ioctl",
	[AHEADFS_OP_revalidate] = "revalidate",
	[AHEADFS_OP_readlink] = "readlink",
	[AHEADFS_OP_permission] = "permission",
	[AHEADFS_OP_write] = "write",
	[AHEADFS_OP_read] = "read",
	[AHEADFS_OP_copy] = "copy",
	[AHEADFS_OP_remap] = "remap",
};

static ssize_t stats_show(struct aheadfs_sb_info *sbi, char *buf)
{
	u64 sum[AHEADFS_NR_STATS] = {}, ops[AHEADFS_NR_META_OPS] = {};
	int cpu, i, n = 0;

	for_each_possible_cpu(cpu) {
		struct aheadfs_stats *s = per_cpu_ptr(sbi->stats, cpu);

		for (i = 0; i < AHEADFS_NR_STATS; i++)
			sum[i] += READ_ONCE(s->v[i]);
		for (i = 0; i < AHEADFS_NR_META_OPS; i++)
			ops[i] += READ_ONCE(s->ops[i]);
	}
	for (i = 0; i < AHEADFS_NR_STATS; i++)
		n += sysfs_emit_at(buf, n, "%s %llu\n", stat_names[i], sum[i]);
	n += sysfs_emit_at(buf, n, "readdir_cache_bytes %ld\n",
			   atomic_long_read(&sbi->dir_cache_bytes));
	n += sysfs_emit_at(buf, n, "window_cur %lld\nwindow_peak %lld\n",
			   (long long)atomic64_read(&sbi->window_cur),
			   (long long)atomic64_read(&sbi->window_peak));
	n += sysfs_emit_at(buf, n,
			   "window_last %llu\nwindow_target %llu\nwindow_rate %llu\nwindow_latency_us %llu\n",
			   READ_ONCE(sbi->window_last),
			   READ_ONCE(sbi->window_target),
			   READ_ONCE(sbi->window_rate),
			   READ_ONCE(sbi->window_latency_ns) / 1000);
	for (i = 0; i < AHEADFS_NR_META_OPS; i++)
		n += sysfs_emit_at(buf, n, "op_%s %llu\n", op_names[i], ops[i]);
	return n;
}

static ssize_t lower_show(struct aheadfs_sb_info *sbi, char *buf)
{
	char *tmp, *p;
	ssize_t ret;

	tmp = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!tmp)
		return -ENOMEM;
	p = d_path(&sbi->lower, tmp, PATH_MAX);
	ret = IS_ERR(p) ? PTR_ERR(p) : sysfs_emit(buf, "%s\n", p);
	kfree(tmp);
	return ret;
}

#define TUNABLE(_name)							\
static struct aheadfs_attr attr_##_name = {				\
	.attr = { .name = #_name, .mode = 0644 },			\
	.offset = offsetof(struct aheadfs_sb_info, _name),		\
}

TUNABLE(txn_kb);
TUNABLE(window_kb);
TUNABLE(attr_timeout_ms);
TUNABLE(entry_timeout_ms);
TUNABLE(negative_timeout_ms);
TUNABLE(readdir_cache);
TUNABLE(fh_search_entries);

static struct aheadfs_attr attr_prefetch = {
	.attr = { .name = "prefetch", .mode = 0644 },
	.show = prefetch_show,
	.store = prefetch_store,
};

static struct aheadfs_attr attr_stats = {
	.attr = { .name = "stats", .mode = 0444 },
	.show = stats_show,
};

static struct aheadfs_attr attr_lower = {
	.attr = { .name = "lower", .mode = 0444 },
	.show = lower_show,
};

static struct attribute *aheadfs_attrs[] = {
	&attr_prefetch.attr,
	&attr_txn_kb.attr,
	&attr_window_kb.attr,
	&attr_attr_timeout_ms.attr,
	&attr_entry_timeout_ms.attr,
	&attr_negative_timeout_ms.attr,
	&attr_readdir_cache.attr,
	&attr_fh_search_entries.attr,
	&attr_stats.attr,
	&attr_lower.attr,
	NULL,
};
ATTRIBUTE_GROUPS(aheadfs);

static void aheadfs_kobj_release(struct kobject *kobj)
{
	struct aheadfs_sb_info *sbi = container_of(kobj, struct aheadfs_sb_info,
						   kobj);

	complete(&sbi->kobj_released);
}

static const struct sysfs_ops aheadfs_sysfs_ops = {
	.show	= aheadfs_attr_show,
	.store	= aheadfs_attr_store,
};

static const struct kobj_type aheadfs_ktype = {
	.sysfs_ops	= &aheadfs_sysfs_ops,
	.default_groups	= aheadfs_groups,
	.release	= aheadfs_kobj_release,
};

int aheadfs_sysfs_add(struct super_block *sb)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(sb);
	int err;

	err = kobject_init_and_add(&sbi->kobj, &aheadfs_ktype,
				   aheadfs_root_kobj, "%u:%u",
				   MAJOR(sb->s_dev), MINOR(sb->s_dev));
	if (err) {
		/* Initialised but not added: only the put, then its release. */
		pr_err(AHEADFS_NAME ": %u:%u: sysfs directory not created (error %d)\n",
		       MAJOR(sb->s_dev), MINOR(sb->s_dev), err);
		kobject_put(&sbi->kobj);
		wait_for_completion(&sbi->kobj_released);
		return err;
	}
	sbi->kobj_added = true;
	return 0;
}

void aheadfs_sysfs_del(struct super_block *sb)
{
	struct aheadfs_sb_info *sbi = AHEADFS_SB(sb);

	if (!sbi->kobj_added)
		return;
	kobject_del(&sbi->kobj);
	kobject_put(&sbi->kobj);
	/* sbi, which embeds the kobject, is freed right after this. */
	wait_for_completion(&sbi->kobj_released);
}

int aheadfs_sysfs_init(void)
{
	aheadfs_root_kobj = kobject_create_and_add(AHEADFS_NAME, fs_kobj);
	return aheadfs_root_kobj ? 0 : -ENOMEM;
}

void aheadfs_sysfs_exit(void)
{
	kobject_put(aheadfs_root_kobj);
}
