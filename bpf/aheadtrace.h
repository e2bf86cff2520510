/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types shared by the aheadfs BPF programs and the aheadtrace loader: the
 * mirror of kmod/trace.h's tracepoint arguments and of the meta operation
 * numbering in kmod/aheadfs.h, and the layout of every pinned map.  Change
 * this file together with kmod/trace.h and Documentation/tracing.rst.
 */
#ifndef AHEADTRACE_H
#define AHEADTRACE_H

#define AT_HIST_SLOTS	40	/* log2(ns): slot i counts [2^i, 2^(i+1)) ns */
#define AT_COMM_LEN	16
#define AT_MAX_FILES	10240	/* prefetch statistics kept for this many files, */
#define AT_FILES_PER_CPU 256	/* or this many per possible CPU (aheadtrace) */
#define AT_MAX_DEVS	16	/* vfs program set: devices traced at once */
#define AT_MAX_MOUNTS	256	/* ahead_mounts: aheadfs mounts counted */
#define AT_RINGBUF_SZ	(1 << 22)
#define AT_NAME_MAX	256	/* a dentry name, NUL included (NAME_MAX + 1) */
#define AT_PATH_LEN	1024	/* at_event.path: names, leaf first, NUL-separated */
#define AT_PATH_DEPTH	16	/* oplog -P: directories walked up at most */
#define AT_MAX_PHISTS	8192	/* hist -P/-C: (device, op, process) entries */
#define AT_MAX_HISTS	4096	/* ahead_hist, vfs_hist: (device, op) entries */

/*
 * ahead_lost (per-CPU array): what the programs could not record.  The ring
 * buffer's lost records, and the operations a full map had no room for: a
 * new key of ahead_hist or ahead_phist, a mount beyond ahead_mounts' size.
 * (ahead_files is an LRU: it evicts instead.)
 */
enum at_lost {
	AT_LOST_RING,
	AT_LOST_FULL,
	AT_NR_LOST
};

/* kmod/aheadfs.h enum aheadfs_meta_op: the values are ABI. */
#define AT_META_OPS(X)	\
	X(lookup) X(create) X(mkdir) X(rmdir) X(unlink) X(rename) X(link) \
	X(symlink) X(mknod) X(tmpfile) X(readdir) X(getattr) X(setattr) \
	X(open) X(release) X(fsync) X(mmap) X(fallocate) X(llseek) \
	X(fadvise) X(getxattr) X(setxattr) X(listxattr) X(statfs) X(ioctl) \
	X(revalidate) X(readlink) X(permission) X(write) X(read) X(copy) \
	X(remap)

#define AT_OP_ENUM(n) AT_OP_##n,
enum at_meta_op {
	AT_META_OPS(AT_OP_ENUM)
	AT_NR_META_OPS
};
#undef AT_OP_ENUM

/* kmod/trace.h AHEADFS_COPY_*: how a copy or remap was served. */
enum at_copy_method {
	AT_COPY_CLONE,
	AT_COPY_LOWER,
	AT_COPY_CHUNKED,
	AT_COPY_DEDUPE,
};

/*
 * The operations (bits of at_config.ops_mask) an aheadfs_copy event may be.
 * kmod/copy.c fires it for copy_file_range (served by the lower's copy, in
 * chunks, or by a reflink: clone) and for remap_file_range (FIDEDUPERANGE:
 * dedupe; FICLONE and FICLONERANGE: clone too).  A clone does not say which
 * it was, nor does a method this build does not know: both ops.
 */
static inline __u64 at_copy_ops(__u64 method)
{
	if (method == AT_COPY_LOWER || method == AT_COPY_CHUNKED)
		return 1ULL << AT_OP_copy;
	if (method == AT_COPY_DEDUPE)
		return 1ULL << AT_OP_remap;
	return (1ULL << AT_OP_copy) | (1ULL << AT_OP_remap);
}

/*
 * The VFS program set (vfs.bpf.c) numbers the functions it traces.  The
 * same table gives aheadtrace their names.
 */
#define AT_VFS_OPS(X)	\
	X(vfs_read) X(vfs_write) X(vfs_iocb_iter_read) X(vfs_iocb_iter_write) \
	X(vfs_open) X(vfs_getattr) X(iterate_dir) X(vfs_create) X(vfs_unlink) \
	X(vfs_mkdir) X(vfs_rmdir) X(vfs_rename) X(vfs_fsync_range) \
	X(vfs_copy_file_range) X(vfs_fallocate) X(vfs_statfs)

#define AT_VFS_ENUM(n) AT_VFS_##n,
enum at_vfs_op {
	AT_VFS_OPS(AT_VFS_ENUM)
	AT_NR_VFS_OPS
};
#undef AT_VFS_ENUM

/*
 * Raw tracepoint arguments, one u64 per TP_PROTO argument in kmod/trace.h
 * (raw_tp programs see exactly this; 32-bit arguments are zero-extended).
 * The last ones are kernel pointers (struct dentry, struct inode, and the
 * dentry's d_name.name), valid while the program runs: the caller holds
 * them.  A rename racing with the operation can change the name's bytes.
 */
struct at_read_args {
	__u64 ino;
	__s64 pos;
	__u64 len;		/* bytes requested */
	__u64 present;		/* bytes found in the lower page cache */
	__u64 absent;		/* bytes that had to be read from the lower */
	__u64 latency_ns;
	__s64 ret;		/* bytes read or -errno */
	__u64 dev;		/* kernel dev_t of the aheadfs superblock */
	__u64 mode;		/* prefetch mode: 0 ahead, 1 legacy, 2 kernel, 3 off */
	__u64 dentry;		/* struct dentry *: the file's */
	__u64 name;		/* its d_name.name */
	__u64 wait_ns;		/* time it waited for the device */
};

struct at_prefetch_args {
	__u64 ino;
	__s64 pos;
	__u64 len;
	__u64 window;		/* bytes the window now holds ahead of the reader */
	__u64 dev;
	__u64 dentry;		/* struct dentry *: the file's */
	__u64 name;		/* its d_name.name */
};

struct at_window_args {
	__u64 ino;
	__s64 pos;		/* the request that changed the window */
	__u64 window;		/* the stream's window now, bytes */
	__u64 target;		/* rate x latency x 2, bytes (0: unmeasured) */
	__u64 rate;		/* the reader's, bytes per second */
	__u64 latency_ns;	/* a chunk's, submission to completion */
	__u64 dev;
};

struct at_copy_args {
	__u64 ino_in;
	__s64 pos_in;
	__u64 ino_out;
	__s64 pos_out;
	__u64 len;
	__s64 ret;
	__u64 latency_ns;
	__u64 dev;
	__u64 method;		/* enum at_copy_method */
	__u64 dentry_in;	/* struct dentry *: the source file's */
	__u64 name_in;		/* its d_name.name */
};

struct at_meta_args {
	__u64 ino;
	__u64 latency_ns;
	__s64 ret;
	__u64 dev;
	__u64 op;		/* enum at_meta_op */
	__u64 inode;		/* struct inode *, or 0 */
	__u64 dentry;		/* struct dentry * the caller had, or 0 */
};

/* Histogram maps (ahead_hist, vfs_hist): one entry per (device, op). */
struct at_hist_key {
	__u32 dev;		/* kernel dev_t: major << 20 | minor */
	__u32 op;		/* enum at_meta_op or enum at_vfs_op */
};

/* ahead_phist (hist -P and -C): one entry per (device, op, process). */
struct at_phist_key {
	__u32 dev;
	__u32 op;		/* enum at_meta_op */
	__u32 pid;		/* thread group id; 0 with -C (per comm) */
	__u32 pad;
	char comm[AT_COMM_LEN];
};

struct at_hist {
	__u64 count;
	__u64 sum_ns;
	__u64 slots[AT_HIST_SLOTS];
};

/* ahead_files (prefetch effectiveness per file) and ahead_dentry: by inode. */
struct at_file_key {
	__u32 dev;
	__u32 pad;
	__u64 ino;
};

struct at_file_stats {
	__u64 prefetch_chunks;
	__u64 prefetch_bytes;
	__u64 read_reqs;
	__u64 read_bytes;	/* bytes returned to readers */
	__u64 present_bytes;	/* requested bytes found cached */
	__u64 absent_bytes;	/* requested bytes not cached */
	__u64 hit_bytes;	/* present bytes inside the prefetched range */
	__u64 window_max;
	__s64 pf_start;		/* the prefetched range, [pf_start, pf_end) */
	__s64 pf_end;
	/* When the entry was made: after an LRU eviction, a new one's differs. */
	__u64 born_ns;
};

/*
 * ahead_mounts: the same counters per mount, never evicted, so that totals
 * never go backwards whatever the LRU does to ahead_files.
 */
struct at_mount_stats {
	__u64 prefetch_chunks;
	__u64 prefetch_bytes;
	__u64 read_reqs;
	__u64 read_bytes;
	__u64 present_bytes;
	__u64 absent_bytes;
	__u64 hit_bytes;
};

/* ahead_config (array, one entry): runtime filters; zero traces everything. */
struct at_config {
	__u32 dev;		/* 0: every aheadfs mount */
	__u32 tgid;		/* 0: every process (oplog and the histograms) */
	__u64 min_lat_ns;	/* oplog: only operations at least this slow */
	__u64 ops_mask;		/* 0: every op; else bit (1 << op) selects op */
	__u32 flags;		/* AT_CFG_* */
	/*
	 * oplog: wake the reader once this many bytes are unread (0: a
	 * quarter of the ring, asked of the ring buffer per record).
	 */
	__u32 wake_bytes;
	/*
	 * Histogram slots count log2 of the latency in this many ns (0 or
	 * 1: ns; 1000: us; 1000000: ms); sum_ns stays in ns.
	 */
	__u32 hist_unit_ns;
	__u32 pad;
};

#define AT_CFG_NO_HIST		(1U << 0)
#define AT_CFG_NO_OPLOG		(1U << 1)
#define AT_CFG_NO_FILES		(1U << 2)
#define AT_CFG_NO_NAMES		(1U << 3)	/* oplog: no file names */
#define AT_CFG_PATHS		(1U << 4)	/* oplog: path from the mount's root */
#define AT_CFG_HIST_PID		(1U << 5)	/* hist into ahead_phist by pid */
#define AT_CFG_HIST_COMM	(1U << 6)	/* hist into ahead_phist by comm */
#define AT_CFG_HIST_OPS		(1U << 7)	/* hist into ahead_ophist: dev set */
#define AT_CFG_CGROUP		(1U << 8)	/* only tasks under ahead_cgroup[0] */

/* vfs_config (array, one entry): 0 traces every device, 1 only vfs_devs. */
struct at_vfs_config {
	__u32 filter;
	__u32 pad;
};

enum at_kind {
	AT_KIND_READ,
	AT_KIND_PREFETCH,
	AT_KIND_COPY,
	AT_KIND_META,
};

/* ahead_events ring buffer: one record per operation. */
struct at_event {
	__u64 ts_ns;		/* bpf_ktime_get_ns() when the tracepoint fired */
	__u64 ino;		/* copy: source inode */
	__s64 pos;		/* copy: source offset */
	__u64 len;
	__u64 present;
	__u64 absent;
	__u64 window;		/* prefetch only */
	__u64 latency_ns;
	__s64 ret;
	__u64 ino_out;		/* copy only */
	__s64 pos_out;		/* copy only */
	__u32 pid;		/* thread group id */
	__u32 tid;
	__u32 dev;
	__u16 kind;		/* enum at_kind */
	__u16 op;		/* meta op, copy method or read prefetch mode */
	char comm[AT_COMM_LEN];
	__u16 depth;		/* names in path; 0: no name known */
	__u16 name_flags;	/* AT_NAME_* */
	__u32 pad;
	/*
	 * The file's dentry name, then (oplog -P) its parents' up to the
	 * mount's root, excluded: "beta.dat\0dir\0sub\0" is sub/dir/beta.dat.
	 */
	char path[AT_PATH_LEN];
};

#define AT_NAME_TRUNC	(1U << 0)	/* the walk stopped before the root */

#endif /* AHEADTRACE_H */
