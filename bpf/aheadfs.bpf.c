// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs tracepoint programs: latency histograms per (device, op) or per
 * process, prefetch effectiveness per file and the operation log ring
 * buffer, with the file's name.  Raw tracepoints only: the scalars are the
 * arguments, the name is read from the dentry the tracepoint passes with
 * CO-RE against vmlinux BTF, so no module BTF is needed (6.1's module has
 * none); runtime filters live in the ahead_config map because bpftool
 * cannot set .rodata (the cgroup filter's flag too: libbpf-tools keep it
 * in .rodata, which would make the object unloadable by bpftool alone).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "aheadtrace.h"
#include "bits.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct at_config);
} ahead_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AT_MAX_HISTS);
	__type(key, struct at_hist_key);
	__type(value, struct at_hist);
} ahead_hist SEC(".maps");

/*
 * The same for the one mount the loader selected (AT_CFG_HIST_OPS), by op:
 * an array lookup the verifier inlines, where the hash above costs a hash
 * of the key and a bucket walk on every operation.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AT_NR_META_OPS);
	__type(key, __u32);
	__type(value, struct at_hist);
} ahead_ophist SEC(".maps");

/* hist -P and -C: the same histograms per process or per comm. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AT_MAX_PHISTS);
	__type(key, struct at_phist_key);
	__type(value, struct at_hist);
} ahead_phist SEC(".maps");

/*
 * AT_MAX_FILES as compiled (bpftool); aheadtrace prefetch makes it
 * AT_FILES_PER_CPU per possible CPU when that is more: the LRU keeps free
 * entries on per-CPU lists, and evicts before the map is full when each
 * CPU's list holds a share of few entries.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, AT_MAX_FILES);
	__type(key, struct at_file_key);
	__type(value, struct at_file_stats);
} ahead_files SEC(".maps");

/* Per-mount totals of what ahead_files counts per file: never evicted. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AT_MAX_MOUNTS);
	__type(key, __u32);
	__type(value, struct at_mount_stats);
} ahead_mounts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, AT_RINGBUF_SZ);
} ahead_events SEC(".maps");

/*
 * What was not recorded (enum at_lost): events lost because the ring buffer
 * was full, counts dropped because a map was.  One counter per CPU, which
 * the loader sums over libbpf_num_possible_cpus(), however many.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, AT_NR_LOST);
	__type(key, __u32);
	__type(value, __u64);
} ahead_lost SEC(".maps");

/*
 * --cgroup: the cgroup v2 directory whose tasks (and its descendants')
 * are traced, when flags has AT_CFG_CGROUP.  aheadtrace puts the
 * directory's descriptor here; bpftool has no way to, so its users trace
 * every cgroup.
 */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ahead_cgroup SEC(".maps");

static __always_inline struct at_config *at_cfg(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&ahead_config, &zero);
}

/* One more of @what (enum at_lost) on this CPU. */
static __always_inline void count_lost(__u32 what)
{
	__u64 *n = bpf_map_lookup_elem(&ahead_lost, &what);

	if (n)
		*n += 1;
}

/* The process filters: -p (tgid) and --cgroup, for the log and the histograms. */
static __always_inline bool task_wanted(const struct at_config *c)
{
	if (c->tgid && c->tgid != (__u32)(bpf_get_current_pid_tgid() >> 32))
		return false;
	if ((c->flags & AT_CFG_CGROUP) &&
	    bpf_current_task_under_cgroup(&ahead_cgroup, 0) != 1)
		return false;
	return true;
}

static __always_inline bool wanted(const struct at_config *c, __u32 dev,
				   __u32 op)
{
	if (c->dev && c->dev != dev)
		return false;
	if (c->ops_mask && op < 64 && !(c->ops_mask & (1ULL << op)))
		return false;
	return task_wanted(c);
}

/* A latency in the histograms' unit: the slot is log2 of it. */
static __always_inline __u64 in_unit(const struct at_config *c, __u64 ns)
{
	__u32 unit = c->hist_unit_ns;

	return unit > 1 ? ns / unit : ns;
}

/* A ring buffer record, or NULL when the oplog filters drop this event. */
static __always_inline struct at_event *
event_start(const struct at_config *c, __u64 latency_ns, bool has_latency)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *task;
	struct at_event *e;

	if (c->flags & AT_CFG_NO_OPLOG)
		return NULL;
	/* The process filters were applied by wanted(). */
	if (c->min_lat_ns && (!has_latency || latency_ns < c->min_lat_ns))
		return NULL;
	e = bpf_ringbuf_reserve(&ahead_events, sizeof(*e), 0);
	if (!e) {
		count_lost(AT_LOST_RING);
		return NULL;
	}
	/* The path is read only as far as depth says. */
	__builtin_memset(e, 0, __builtin_offsetof(struct at_event, path));
	e->ts_ns = bpf_ktime_get_ns();
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->latency_ns = latency_ns;
	/*
	 * task->comm through the BTF pointer: two loads, where the helper
	 * (bpf_get_current_comm(): strscpy_pad) costs a read ~2% of a
	 * cached 4 KiB read.  The kernel keeps comm NUL-terminated; bytes
	 * after the NUL may be stale, and the reader stops at the NUL.
	 */
	task = bpf_get_current_task_btf();
	__builtin_memcpy(e->comm, task->comm, sizeof(e->comm));
	return e;
}

/*
 * Hand a record to the reader without waking it: a wakeup (an irq_work,
 * then the reader's own wakeup, per record) costs more than the record,
 * and the loader polls with a timeout, so records still appear within it.
 * Past a quarter of the ring the reader is woken, so that a burst is
 * drained before the ring fills.
 */
static __always_inline void event_submit(const struct at_config *c,
					 struct at_event *e)
{
	__u64 flags = BPF_RB_NO_WAKEUP, wake = c->wake_bytes;

	if (!wake)
		wake = bpf_ringbuf_query(&ahead_events, BPF_RB_RING_SIZE) / 4;
	if (bpf_ringbuf_query(&ahead_events, BPF_RB_AVAIL_DATA) >= wake)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(e, flags);
}

/* ---- names ---- */

static __always_inline bool names_wanted(const struct at_config *c)
{
	return !(c->flags & (AT_CFG_NO_OPLOG | AT_CFG_NO_NAMES));
}

/*
 * The event's name: the dentry's (@name, its d_name.name, when the
 * tracepoint passed it: one probe read fewer), and with AT_CFG_PATHS its
 * parents' up to the superblock's root (not included), leaf first.  The
 * tracepoint's caller holds @d, so it is the file's own name as the
 * operation saw it; a rename racing with it can only garble the text
 * (probe reads never fault).
 * bpf_d_path() would be simpler but is allowed only in fentry/LSM programs
 * on a list of kernel functions, none of which is here; fentry on the
 * module itself needs module BTF, which 6.1 does not build.
 */
static __always_inline void put_name(const struct at_config *c,
				     struct at_event *e, struct dentry *d,
				     const void *name)
{
	struct dentry *root, *parent;
	__u32 off = 0;
	long n;
	int i;

	if (!d || !names_wanted(c))
		return;
	if (!(c->flags & AT_CFG_PATHS)) {
		if (!name)
			name = BPF_CORE_READ(d, d_name.name);
		n = bpf_probe_read_kernel_str(e->path, AT_NAME_MAX, name);
		if (n > 0)
			e->depth = 1;
		return;
	}
	root = BPF_CORE_READ(d, d_sb, s_root);
	for (i = 0; i < AT_PATH_DEPTH; i++) {
		if (off > AT_PATH_LEN - AT_NAME_MAX) {
			e->name_flags |= AT_NAME_TRUNC;
			return;
		}
		n = bpf_probe_read_kernel_str(&e->path[off], AT_NAME_MAX,
					      BPF_CORE_READ(d, d_name.name));
		if (n <= 0)
			return;
		off += n;
		e->depth++;
		parent = BPF_CORE_READ(d, d_parent);
		if (d == root || parent == d || parent == root)
			return;
		d = parent;
	}
	e->name_flags |= AT_NAME_TRUNC;
}

/*
 * An operation given no dentry (->permission() has only the inode) is
 * named by the inode's first alias: for a hard link, perhaps another
 * link's name.
 */
static __always_inline struct dentry *alias_of(struct inode *inode)
{
	struct hlist_node *first;

	if (!inode)
		return NULL;
	first = BPF_CORE_READ(inode, i_dentry.first);
	if (!first)
		return NULL;
	return (struct dentry *)((char *)first -
		bpf_core_field_offset(struct dentry, d_u.d_alias));
}

static __always_inline struct at_file_stats *file_stats(__u32 dev, __u64 ino)
{
	struct at_file_key key = { .dev = dev, .ino = ino };
	struct at_file_stats *fs;

	fs = bpf_map_lookup_elem(&ahead_files, &key);
	if (fs)
		return fs;
	{
		struct at_file_stats zero;

		__builtin_memset(&zero, 0, sizeof(zero));
		zero.born_ns = bpf_ktime_get_ns();
		bpf_map_update_elem(&ahead_files, &key, &zero, BPF_NOEXIST);
	}
	/*
	 * The LRU evicts to make room, so this is never a full map (the
	 * mount's totals in ahead_mounts still count the operation).
	 */
	return bpf_map_lookup_elem(&ahead_files, &key);
}

static __always_inline struct at_mount_stats *mount_stats(__u32 dev)
{
	struct at_mount_stats *ms;

	ms = bpf_map_lookup_elem(&ahead_mounts, &dev);
	if (ms)
		return ms;
	{
		struct at_mount_stats zero;

		__builtin_memset(&zero, 0, sizeof(zero));
		bpf_map_update_elem(&ahead_mounts, &dev, &zero, BPF_NOEXIST);
	}
	/* NULL: AT_MAX_MOUNTS mounts have their entry, this one is not counted. */
	ms = bpf_map_lookup_elem(&ahead_mounts, &dev);
	if (!ms)
		count_lost(AT_LOST_FULL);
	return ms;
}

SEC("raw_tp/aheadfs_read")
int at_read(struct bpf_raw_tracepoint_args *ctx)
{
	const struct at_read_args *a = (const void *)ctx->args;
	struct at_config *c = at_cfg();
	struct at_event *e;
	__u32 dev = a->dev;

	if (!c || !wanted(c, dev, AT_OP_read))
		return 0;

	if (!(c->flags & AT_CFG_NO_FILES)) {
		struct at_file_stats *fs = file_stats(dev, a->ino);
		struct at_mount_stats *ms = mount_stats(dev);
		__u64 hit = 0;

		if (fs) {
			__s64 end = a->pos + (__s64)a->len;
			__s64 lo = a->pos > fs->pf_start ? a->pos : fs->pf_start;
			__s64 hi = end < fs->pf_end ? end : fs->pf_end;

			hit = hi > lo ? hi - lo : 0;
			if (hit > a->present)
				hit = a->present;
			__sync_fetch_and_add(&fs->read_reqs, 1);
			if (a->ret > 0)
				__sync_fetch_and_add(&fs->read_bytes, a->ret);
			__sync_fetch_and_add(&fs->present_bytes, a->present);
			__sync_fetch_and_add(&fs->absent_bytes, a->absent);
			__sync_fetch_and_add(&fs->hit_bytes, hit);
		}
		if (ms) {
			__sync_fetch_and_add(&ms->read_reqs, 1);
			if (a->ret > 0)
				__sync_fetch_and_add(&ms->read_bytes, a->ret);
			__sync_fetch_and_add(&ms->present_bytes, a->present);
			__sync_fetch_and_add(&ms->absent_bytes, a->absent);
			__sync_fetch_and_add(&ms->hit_bytes, hit);
		}
	}

	e = event_start(c, a->latency_ns, true);
	if (!e)
		return 0;
	e->kind = AT_KIND_READ;
	e->op = a->mode;
	e->dev = dev;
	e->ino = a->ino;
	e->pos = a->pos;
	e->len = a->len;
	e->present = a->present;
	e->absent = a->absent;
	e->ret = a->ret;
	put_name(c, e, (struct dentry *)a->dentry, (const void *)a->name);
	event_submit(c, e);
	return 0;
}

SEC("raw_tp/aheadfs_prefetch")
int at_prefetch(struct bpf_raw_tracepoint_args *ctx)
{
	const struct at_prefetch_args *a = (const void *)ctx->args;
	struct at_config *c = at_cfg();
	struct at_event *e;
	__u32 dev = a->dev;

	if (!c || !wanted(c, dev, AT_OP_read))
		return 0;

	if (!(c->flags & AT_CFG_NO_FILES)) {
		struct at_file_stats *fs = file_stats(dev, a->ino);
		struct at_mount_stats *ms = mount_stats(dev);

		if (ms) {
			__sync_fetch_and_add(&ms->prefetch_chunks, 1);
			__sync_fetch_and_add(&ms->prefetch_bytes, a->len);
		}
		if (fs) {
			__s64 end = a->pos + (__s64)a->len;

			__sync_fetch_and_add(&fs->prefetch_chunks, 1);
			__sync_fetch_and_add(&fs->prefetch_bytes, a->len);
			/*
			 * Chunks are issued in ascending order: extend the
			 * range while they touch it, restart it on a seek.
			 * Racy updates only blur the hit estimate.
			 */
			if (fs->pf_end > fs->pf_start && a->pos <= fs->pf_end &&
			    end >= fs->pf_start) {
				if (a->pos < fs->pf_start)
					fs->pf_start = a->pos;
				if (end > fs->pf_end)
					fs->pf_end = end;
			} else {
				fs->pf_start = a->pos;
				fs->pf_end = end;
			}
			if (a->window > fs->window_max)
				fs->window_max = a->window;
		}
	}

	e = event_start(c, 0, false);
	if (!e)
		return 0;
	e->kind = AT_KIND_PREFETCH;
	e->dev = dev;
	e->ino = a->ino;
	e->pos = a->pos;
	e->len = a->len;
	e->window = a->window;
	put_name(c, e, (struct dentry *)a->dentry, (const void *)a->name);
	event_submit(c, e);
	return 0;
}

SEC("raw_tp/aheadfs_copy")
int at_copy(struct bpf_raw_tracepoint_args *ctx)
{
	const struct at_copy_args *a = (const void *)ctx->args;
	struct at_config *c = at_cfg();
	struct at_event *e;
	__u32 dev = a->dev;

	if (!c || (c->dev && c->dev != dev))
		return 0;
	/* -o copy, -o remap: a clone is either (at_copy_ops()). */
	if (c->ops_mask && !(c->ops_mask & at_copy_ops(a->method)))
		return 0;
	if (!task_wanted(c))
		return 0;
	e = event_start(c, a->latency_ns, true);
	if (!e)
		return 0;
	e->kind = AT_KIND_COPY;
	e->op = a->method;
	e->dev = dev;
	e->ino = a->ino_in;
	e->pos = a->pos_in;
	e->ino_out = a->ino_out;
	e->pos_out = a->pos_out;
	e->len = a->len;
	e->ret = a->ret;
	put_name(c, e, (struct dentry *)a->dentry_in,
		 (const void *)a->name_in);
	event_submit(c, e);
	return 0;
}

SEC("raw_tp/aheadfs_meta")
int at_meta(struct bpf_raw_tracepoint_args *ctx)
{
	const struct at_meta_args *a = (const void *)ctx->args;
	struct at_config *c = at_cfg();
	struct at_event *e;
	__u32 dev = a->dev, op = a->op;

	if (!c)
		return 0;
	/*
	 * The log alone (oplog): reads and copies are logged from their own,
	 * richer tracepoints, so their events here are done with at once.
	 */
	if ((c->flags & AT_CFG_NO_HIST) && (op == AT_OP_read ||
	    op == AT_OP_copy || op == AT_OP_remap))
		return 0;
	if (!wanted(c, dev, op))
		return 0;
	/* Every operation, reads and copies included, is timed here. */
	if (c->flags & (AT_CFG_HIST_PID | AT_CFG_HIST_COMM)) {
		struct at_phist_key k = { .dev = dev, .op = op };

		if (c->flags & AT_CFG_HIST_PID)
			k.pid = bpf_get_current_pid_tgid() >> 32;
		bpf_get_current_comm(k.comm, sizeof(k.comm));
		if (!at_hist_add_key_in(&ahead_phist, &k, a->latency_ns,
					in_unit(c, a->latency_ns)))
			count_lost(AT_LOST_FULL);
	} else if (!(c->flags & (AT_CFG_NO_HIST | AT_CFG_HIST_OPS))) {
		if (!at_hist_add_in(&ahead_hist, dev, op, a->latency_ns,
				    in_unit(c, a->latency_ns)))
			count_lost(AT_LOST_FULL);
	}
	/* Reads and copies are logged from their own, richer tracepoints. */
	if ((c->flags & AT_CFG_NO_OPLOG) || op == AT_OP_read ||
	    op == AT_OP_copy || op == AT_OP_remap)
		return 0;
	e = event_start(c, a->latency_ns, true);
	if (!e)
		return 0;
	e->kind = AT_KIND_META;
	e->op = op;
	e->dev = dev;
	e->ino = a->ino;
	e->ret = a->ret;
	put_name(c, e, a->dentry ? (struct dentry *)a->dentry :
			 alias_of((struct inode *)a->inode), NULL);
	event_submit(c, e);
	return 0;
}

/*
 * The histograms of one mount by op (AT_CFG_HIST_OPS, with dev): what every
 * traced operation pays under "aheadtrace hist -m", so a program of its own
 * that does nothing else.  at_meta leaves these to it.
 */
SEC("raw_tp/aheadfs_meta")
int at_meta_ops(struct bpf_raw_tracepoint_args *ctx)
{
	const struct at_meta_args *a = (const void *)ctx->args;
	struct at_config *c = at_cfg();
	__u32 op = a->op;
	struct at_hist *h;

	if (!c || !(c->flags & AT_CFG_HIST_OPS) || c->dev != a->dev ||
	    (c->ops_mask && !((c->ops_mask >> (op & 63)) & 1)) ||
	    ((c->tgid || (c->flags & AT_CFG_CGROUP)) && !task_wanted(c)))
		return 0;
	h = bpf_map_lookup_elem(&ahead_ophist, &op);
	if (h)
		at_hist_count_in(h, a->latency_ns, in_unit(c, a->latency_ns));
	return 0;
}
