/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the aheadfs BPF programs: log2 buckets and histograms. */
#ifndef AHEADTRACE_BITS_BPF_H
#define AHEADTRACE_BITS_BPF_H

/* Index of the highest set bit; 0 for 0 and 1. */
static __always_inline __u32 at_log2(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1)
		r += 1;
	return r;
}

/* Count one operation of @ns nanoseconds in @h. */
static __always_inline void at_hist_count(struct at_hist *h, __u64 ns)
{
	__u32 slot = at_log2(ns);

	if (slot >= AT_HIST_SLOTS)
		slot = AT_HIST_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->sum_ns, ns);
}

/* The same in the histogram at @key of a hash, made on first use. */
static __always_inline void at_hist_add_key(void *map, const void *key,
					    __u64 ns)
{
	struct at_hist *h;

	h = bpf_map_lookup_elem(map, key);
	if (!h) {
		struct at_hist zero;

		__builtin_memset(&zero, 0, sizeof(zero));
		/* Losing the race to another CPU is fine: it created it. */
		bpf_map_update_elem(map, key, &zero, BPF_NOEXIST);
		h = bpf_map_lookup_elem(map, key);
		if (!h)
			return;
	}
	at_hist_count(h, ns);
}

/* The same in a (dev, op) histogram. */
static __always_inline void at_hist_add(void *map, __u32 dev, __u32 op,
					__u64 ns)
{
	struct at_hist_key key = { .dev = dev, .op = op };

	at_hist_add_key(map, &key, ns);
}

#endif /* AHEADTRACE_BITS_BPF_H */
