// SPDX-License-Identifier: GPL-2.0
/*
 * The VFS histograms of vfs.bpf.c from kprobe/kretprobe pairs, for kernels
 * or functions where fentry cannot attach (no BTF for the function, no BPF
 * trampoline).  The same histogram layout and function numbering; its own
 * maps, which aheadtrace replaces with vfs.bpf.o's when both are loaded, so
 * that a run mixing the two fills one histogram map.  A kretprobe sees no
 * arguments: the entry pushes the device and start time on a stack per
 * thread and function and the return pops them.  Every call is pushed,
 * traced device or not, so that a nested call of the same function
 * (aheadfs's vfs_unlink calling the lower's) pops its own entry.  A
 * separate object because bpftool's autoattach would attach both sets.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "aheadtrace.h"
#include "bits.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct at_vfs_config);
} vfsk_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AT_MAX_DEVS);
	__type(key, __u32);
	__type(value, __u32);
} vfsk_devs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AT_MAX_HISTS);
	__type(key, struct at_hist_key);
	__type(value, struct at_hist);
} vfsk_hist SEC(".maps");

struct vfs_kdepth_key {
	__u32 tid;
	__u32 op;
};

struct vfs_kstart_key {
	__u32 tid;
	__u32 op;
	__u32 depth;
	__u32 pad;
};

struct vfs_kstart_val {
	__u64 ts;
	__u32 dev;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct vfs_kdepth_key);
	__type(value, __u32);
} vfsk_depth SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct vfs_kstart_key);
	__type(value, struct vfs_kstart_val);
} vfsk_start SEC(".maps");

static __always_inline bool dev_wanted(__u32 dev)
{
	__u32 zero = 0;
	struct at_vfs_config *c = bpf_map_lookup_elem(&vfsk_config, &zero);

	if (!c || !c->filter)
		return true;
	return bpf_map_lookup_elem(&vfsk_devs, &dev) != NULL;
}

static __always_inline int kenter(__u32 dev, __u32 op)
{
	struct vfs_kdepth_key dk = {
		.tid = (__u32)bpf_get_current_pid_tgid(), .op = op,
	};
	struct vfs_kstart_key sk = { .tid = dk.tid, .op = op };
	__u32 *d = bpf_map_lookup_elem(&vfsk_depth, &dk), depth;

	depth = d ? *d : 0;
	if (dev_wanted(dev)) {
		struct vfs_kstart_val v = { .ts = bpf_ktime_get_ns(), .dev = dev };

		sk.depth = depth;
		bpf_map_update_elem(&vfsk_start, &sk, &v, BPF_ANY);
	}
	depth++;
	bpf_map_update_elem(&vfsk_depth, &dk, &depth, BPF_ANY);
	return 0;
}

static __always_inline int kleave(__u32 op)
{
	struct vfs_kdepth_key dk = {
		.tid = (__u32)bpf_get_current_pid_tgid(), .op = op,
	};
	struct vfs_kstart_key sk = { .tid = dk.tid, .op = op };
	__u32 *d = bpf_map_lookup_elem(&vfsk_depth, &dk), depth;
	struct vfs_kstart_val *v;
	__u64 now = bpf_ktime_get_ns();

	/* No entry: the probe was attached while this call ran. */
	if (!d || !*d)
		return 0;
	depth = *d - 1;
	if (depth)
		bpf_map_update_elem(&vfsk_depth, &dk, &depth, BPF_ANY);
	else
		bpf_map_delete_elem(&vfsk_depth, &dk);
	sk.depth = depth;
	v = bpf_map_lookup_elem(&vfsk_start, &sk);
	if (!v)
		return 0;
	/*
	 * aheadtrace's filter keeps the keys to 16 devices x 16 functions,
	 * far from AT_MAX_HISTS: a full map (unfiltered, bpftool) only
	 * leaves devices beyond it uncounted.
	 */
	at_hist_add(&vfsk_hist, v->dev, op, now - v->ts);
	bpf_map_delete_elem(&vfsk_start, &sk);
	return 0;
}

/*
 * One kprobe/kretprobe pair; DEV is an expression of the first argument,
 * read through CO-RE (a kprobe's arguments are plain registers).
 */
#define AT_VFSK_PAIR(fn, type, DEV)					\
SEC("kprobe/" #fn)							\
int BPF_KPROBE(fn##_kin, type a0)					\
{									\
	return kenter(DEV, AT_VFS_##fn);				\
}									\
SEC("kretprobe/" #fn)							\
int BPF_KRETPROBE(fn##_kout)						\
{									\
	return kleave(AT_VFS_##fn);					\
}

/* The same with the interesting object in the second argument. */
#define AT_VFSK_PAIR2(fn, type, DEV)					\
SEC("kprobe/" #fn)							\
int BPF_KPROBE(fn##_kin, void *unused, type a0)				\
{									\
	return kenter(DEV, AT_VFS_##fn);				\
}									\
SEC("kretprobe/" #fn)							\
int BPF_KRETPROBE(fn##_kout)						\
{									\
	return kleave(AT_VFS_##fn);					\
}

#define K_FILE	BPF_CORE_READ(a0, f_inode, i_sb, s_dev)
#define K_PATH	BPF_CORE_READ(a0, dentry, d_sb, s_dev)
#define K_INODE	BPF_CORE_READ(a0, i_sb, s_dev)

AT_VFSK_PAIR(vfs_read, struct file *, K_FILE)
AT_VFSK_PAIR(vfs_write, struct file *, K_FILE)
AT_VFSK_PAIR(vfs_iocb_iter_read, struct file *, K_FILE)
AT_VFSK_PAIR(vfs_iocb_iter_write, struct file *, K_FILE)
AT_VFSK_PAIR(vfs_open, const struct path *, K_PATH)
AT_VFSK_PAIR(vfs_getattr, const struct path *, K_PATH)
AT_VFSK_PAIR(iterate_dir, struct file *, K_FILE)
AT_VFSK_PAIR2(vfs_create, struct inode *, K_INODE)
AT_VFSK_PAIR2(vfs_unlink, struct inode *, K_INODE)
AT_VFSK_PAIR2(vfs_mkdir, struct inode *, K_INODE)
AT_VFSK_PAIR2(vfs_rmdir, struct inode *, K_INODE)
AT_VFSK_PAIR(vfs_rename, struct renamedata *,
	     BPF_CORE_READ(a0, old_dentry, d_sb, s_dev))
AT_VFSK_PAIR(vfs_fsync_range, struct file *, K_FILE)
AT_VFSK_PAIR(vfs_copy_file_range, struct file *, K_FILE)
AT_VFSK_PAIR(vfs_fallocate, struct file *, K_FILE)
AT_VFSK_PAIR(vfs_statfs, const struct path *, K_PATH)
