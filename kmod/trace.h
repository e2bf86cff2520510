/* SPDX-License-Identifier: GPL-2.0 */
/*
 * aheadfs tracepoints: the stable interface that bpf/ reads.  TP_PROTO takes
 * scalars, then the file's dentry and its name (for aheadfs_meta, which
 * "aheadtrace hist" counts every operation from, only the inode and the
 * dentry: the least it passes, the less a histogram costs), then any
 * scalar added later: the ftrace records hold the scalars only, and a raw tracepoint program
 * reads the pointers as u64 arguments and the structures behind them with
 * CO-RE against vmlinux BTF, so no program needs module BTF.  Each
 * record's layout (all fields naturally aligned, 64-bit first but for
 * those added later, at the end) and the
 * raw arguments are mirrored in bpf/aheadtrace.h.  Change an argument only
 * together with that header and Documentation/tracing.rst; add one only at
 * the end, where a program built for fewer still attaches.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM aheadfs

#if !defined(_AHEADFS_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _AHEADFS_TRACE_H

#include <linux/tracepoint.h>

/* How a copy_file_range or remap request was served; ABI, see aheadtrace.h. */
#define AHEADFS_COPY_CLONE	0	/* lower reflink of the whole range */
#define AHEADFS_COPY_LOWER	1	/* the lower's own copy_file_range */
#define AHEADFS_COPY_CHUNKED	2	/* in-kernel copy in txn-size chunks */
#define AHEADFS_COPY_DEDUPE	3	/* FIDEDUPERANGE passed to the lower */

TRACE_EVENT(aheadfs_read,
	TP_PROTO(u64 ino, s64 pos, u64 len, u64 present, u64 absent,
		 u64 latency_ns, s64 ret, u32 dev, u32 mode,
		 const struct dentry *dentry, const unsigned char *name,
		 u64 wait_ns),
	TP_ARGS(ino, pos, len, present, absent, latency_ns, ret, dev, mode,
		dentry, name, wait_ns),
	TP_STRUCT__entry(
		__field(u64, ino)
		__field(s64, pos)
		__field(u64, len)
		__field(u64, present)
		__field(u64, absent)
		__field(u64, latency_ns)
		__field(s64, ret)
		__field(u32, dev)
		__field(u32, mode)
		__field(u64, wait_ns)
	),
	TP_fast_assign(
		__entry->ino = ino;
		__entry->pos = pos;
		__entry->len = len;
		__entry->present = present;
		__entry->absent = absent;
		__entry->latency_ns = latency_ns;
		__entry->ret = ret;
		__entry->dev = dev;
		__entry->mode = mode;
		__entry->wait_ns = wait_ns;
	),
	TP_printk("dev=%u:%u ino=%llu pos=%lld len=%llu present=%llu absent=%llu latency_ns=%llu ret=%lld mode=%u wait_ns=%llu",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->ino,
		  __entry->pos, __entry->len, __entry->present,
		  __entry->absent, __entry->latency_ns, __entry->ret,
		  __entry->mode, __entry->wait_ns)
);

TRACE_EVENT(aheadfs_prefetch,
	TP_PROTO(u64 ino, s64 pos, u64 len, u64 window, u32 dev,
		 const struct dentry *dentry, const unsigned char *name),
	TP_ARGS(ino, pos, len, window, dev, dentry, name),
	TP_STRUCT__entry(
		__field(u64, ino)
		__field(s64, pos)
		__field(u64, len)
		__field(u64, window)
		__field(u32, dev)
	),
	TP_fast_assign(
		__entry->ino = ino;
		__entry->pos = pos;
		__entry->len = len;
		__entry->window = window;
		__entry->dev = dev;
	),
	TP_printk("dev=%u:%u ino=%llu pos=%lld len=%llu window=%llu",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->ino,
		  __entry->pos, __entry->len, __entry->window)
);

/*
 * A stream's window changed size: the reader's rate and a chunk's latency
 * as measured, and the window they call for (0: not measured yet).
 */
TRACE_EVENT(aheadfs_window,
	TP_PROTO(u64 ino, s64 pos, u64 window, u64 target, u64 rate,
		 u64 latency_ns, u32 dev),
	TP_ARGS(ino, pos, window, target, rate, latency_ns, dev),
	TP_STRUCT__entry(
		__field(u64, ino)
		__field(s64, pos)
		__field(u64, window)
		__field(u64, target)
		__field(u64, rate)
		__field(u64, latency_ns)
		__field(u32, dev)
	),
	TP_fast_assign(
		__entry->ino = ino;
		__entry->pos = pos;
		__entry->window = window;
		__entry->target = target;
		__entry->rate = rate;
		__entry->latency_ns = latency_ns;
		__entry->dev = dev;
	),
	TP_printk("dev=%u:%u ino=%llu pos=%lld window=%llu target=%llu rate=%llu latency_ns=%llu",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->ino,
		  __entry->pos, __entry->window, __entry->target,
		  __entry->rate, __entry->latency_ns)
);

TRACE_EVENT(aheadfs_copy,
	TP_PROTO(u64 ino_in, s64 pos_in, u64 ino_out, s64 pos_out, u64 len,
		 s64 ret, u64 latency_ns, u32 dev, u32 method,
		 const struct dentry *dentry_in, const unsigned char *name_in),
	TP_ARGS(ino_in, pos_in, ino_out, pos_out, len, ret, latency_ns, dev,
		method, dentry_in, name_in),
	TP_STRUCT__entry(
		__field(u64, ino_in)
		__field(s64, pos_in)
		__field(u64, ino_out)
		__field(s64, pos_out)
		__field(u64, len)
		__field(s64, ret)
		__field(u64, latency_ns)
		__field(u32, dev)
		__field(u32, method)
	),
	TP_fast_assign(
		__entry->ino_in = ino_in;
		__entry->pos_in = pos_in;
		__entry->ino_out = ino_out;
		__entry->pos_out = pos_out;
		__entry->len = len;
		__entry->ret = ret;
		__entry->latency_ns = latency_ns;
		__entry->dev = dev;
		__entry->method = method;
	),
	TP_printk("dev=%u:%u in=%llu@%lld out=%llu@%lld len=%llu ret=%lld latency_ns=%llu method=%s",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->ino_in,
		  __entry->pos_in, __entry->ino_out, __entry->pos_out,
		  __entry->len, __entry->ret, __entry->latency_ns,
		  __print_symbolic(__entry->method,
				   { AHEADFS_COPY_CLONE, "clone" },
				   { AHEADFS_COPY_LOWER, "lower" },
				   { AHEADFS_COPY_CHUNKED, "chunked" },
				   { AHEADFS_COPY_DEDUPE, "dedupe" }))
);

TRACE_EVENT(aheadfs_meta,
	TP_PROTO(u64 ino, u64 latency_ns, s64 ret, u32 dev, u32 op,
		 const struct inode *inode, const struct dentry *dentry),
	TP_ARGS(ino, latency_ns, ret, dev, op, inode, dentry),
	TP_STRUCT__entry(
		__field(u64, ino)
		__field(u64, latency_ns)
		__field(s64, ret)
		__field(u32, dev)
		__field(u32, op)
	),
	TP_fast_assign(
		__entry->ino = ino;
		__entry->latency_ns = latency_ns;
		__entry->ret = ret;
		__entry->dev = dev;
		__entry->op = op;
	),
	TP_printk("dev=%u:%u op=%u ino=%llu latency_ns=%llu ret=%lld",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->op,
		  __entry->ino, __entry->latency_ns, __entry->ret)
);

#endif /* _AHEADFS_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
