// SPDX-License-Identifier: GPL-2.0
/*
 * VFS-level latency histograms for any filesystem, per (device, function),
 * from fentry/fexit pairs on the VFS entry points.  A stacking filesystem
 * nests these calls (vfs_getattr on aheadfs calls vfs_getattr on the lower),
 * so start times are keyed by thread, layer (the superblock's device) and
 * function: the inner call never overwrites the outer one's start.  Needs
 * only vmlinux BTF; a separate object so that a kernel without fentry
 * support fails this set alone.  vfsk.bpf.c has the same with kprobes, for
 * kernels or functions where fentry cannot attach.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "aheadtrace.h"
#include "bits.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct at_vfs_config);
} vfs_config SEC(".maps");

/* Devices traced when vfs_config.filter is set: dev -> 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AT_MAX_DEVS);
	__type(key, __u32);
	__type(value, __u32);
} vfs_devs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AT_MAX_HISTS);
	__type(key, struct at_hist_key);
	__type(value, struct at_hist);
} vfs_hist SEC(".maps");

struct vfs_start_key {
	__u32 tid;
	__u32 dev;		/* the layer */
	__u32 op;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct vfs_start_key);
	__type(value, __u64);
} vfs_start SEC(".maps");

static __always_inline bool dev_wanted(__u32 dev)
{
	__u32 zero = 0;
	struct at_vfs_config *c = bpf_map_lookup_elem(&vfs_config, &zero);

	if (!c || !c->filter)
		return true;
	return bpf_map_lookup_elem(&vfs_devs, &dev) != NULL;
}

static __always_inline int enter(__u32 dev, __u32 op)
{
	struct vfs_start_key key = {
		.tid = (__u32)bpf_get_current_pid_tgid(), .dev = dev, .op = op,
	};
	__u64 ts;

	if (!dev_wanted(dev))
		return 0;
	ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&vfs_start, &key, &ts, BPF_ANY);
	return 0;
}

static __always_inline int leave(__u32 dev, __u32 op)
{
	struct vfs_start_key key = {
		.tid = (__u32)bpf_get_current_pid_tgid(), .dev = dev, .op = op,
	};
	__u64 *ts = bpf_map_lookup_elem(&vfs_start, &key);
	__u64 now = bpf_ktime_get_ns();

	if (!ts)
		return 0;
	/*
	 * aheadtrace's filter keeps the keys to 16 devices x 16 functions,
	 * far from AT_MAX_HISTS: a full map (unfiltered, bpftool) only
	 * leaves devices beyond it uncounted.
	 */
	at_hist_add(&vfs_hist, dev, op, now - *ts);
	bpf_map_delete_elem(&vfs_start, &key);
	return 0;
}

static __always_inline __u32 file_dev(struct file *f)
{
	return f->f_inode->i_sb->s_dev;
}

static __always_inline __u32 path_dev(const struct path *p)
{
	return p->dentry->d_sb->s_dev;
}

static __always_inline __u32 inode_dev(struct inode *i)
{
	return i->i_sb->s_dev;
}

/* One fentry/fexit pair; DEV is an expression of the first argument. */
#define AT_VFS_PAIR(fn, type, DEV)					\
SEC("fentry/" #fn)							\
int BPF_PROG(fn##_in, type a0)						\
{									\
	return enter(DEV, AT_VFS_##fn);					\
}									\
SEC("fexit/" #fn)							\
int BPF_PROG(fn##_out, type a0)						\
{									\
	return leave(DEV, AT_VFS_##fn);					\
}

/* The same with the interesting object in the second argument. */
#define AT_VFS_PAIR2(fn, type, DEV)					\
SEC("fentry/" #fn)							\
int BPF_PROG(fn##_in, void *unused, type a0)				\
{									\
	return enter(DEV, AT_VFS_##fn);					\
}									\
SEC("fexit/" #fn)							\
int BPF_PROG(fn##_out, void *unused, type a0)				\
{									\
	return leave(DEV, AT_VFS_##fn);					\
}

AT_VFS_PAIR(vfs_read, struct file *, file_dev(a0))
AT_VFS_PAIR(vfs_write, struct file *, file_dev(a0))
AT_VFS_PAIR(vfs_iocb_iter_read, struct file *, file_dev(a0))
AT_VFS_PAIR(vfs_iocb_iter_write, struct file *, file_dev(a0))
AT_VFS_PAIR(vfs_open, const struct path *, path_dev(a0))
AT_VFS_PAIR(vfs_getattr, const struct path *, path_dev(a0))
AT_VFS_PAIR(iterate_dir, struct file *, file_dev(a0))
AT_VFS_PAIR2(vfs_create, struct inode *, inode_dev(a0))
AT_VFS_PAIR2(vfs_unlink, struct inode *, inode_dev(a0))
AT_VFS_PAIR2(vfs_mkdir, struct inode *, inode_dev(a0))
AT_VFS_PAIR2(vfs_rmdir, struct inode *, inode_dev(a0))
AT_VFS_PAIR(vfs_rename, struct renamedata *, a0->old_dentry->d_sb->s_dev)
AT_VFS_PAIR(vfs_fsync_range, struct file *, file_dev(a0))
AT_VFS_PAIR(vfs_copy_file_range, struct file *, file_dev(a0))
AT_VFS_PAIR(vfs_fallocate, struct file *, file_dev(a0))
AT_VFS_PAIR(vfs_statfs, const struct path *, path_dev(a0))
