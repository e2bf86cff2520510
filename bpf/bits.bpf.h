/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the aheadfs BPF programs: log2 buckets and histograms. */
#ifndef AHEADTRACE_BITS_BPF_H
#define AHEADTRACE_BITS_BPF_H

/*
 * Index of the highest set bit; 0 for 0 and 1.  A tree of comparisons, six
 * deep: each level one compare and branch, where shifting and adding per
 * level cost every traced operation twice the instructions (BPF has no
 * count-leading-zeros).  AT_L2_N(v, b) is the index for v in
 * [2^b, 2^(b + 2N)), and for v < 2 when b is 0.
 */
#define AT_L2_1(v, b)	((v) >= (1ULL << ((b) + 1)) ? (b) + 1 : (b))
#define AT_L2_2(v, b)	((v) >= (1ULL << ((b) + 2)) ? \
			 AT_L2_1(v, (b) + 2) : AT_L2_1(v, b))
#define AT_L2_4(v, b)	((v) >= (1ULL << ((b) + 4)) ? \
			 AT_L2_2(v, (b) + 4) : AT_L2_2(v, b))
#define AT_L2_8(v, b)	((v) >= (1ULL << ((b) + 8)) ? \
			 AT_L2_4(v, (b) + 8) : AT_L2_4(v, b))
#define AT_L2_16(v, b)	((v) >= (1ULL << ((b) + 16)) ? \
			 AT_L2_8(v, (b) + 16) : AT_L2_8(v, b))

static __always_inline __u32 at_log2(__u64 v)
{
	return v >= (1ULL << 32) ? AT_L2_16(v >> 32, 0) + 32 : AT_L2_16(v, 0);
}

/*
 * Count one operation of @ns nanoseconds in @h, in the slot of @v: @ns in
 * the histogram's unit (at_config.hist_unit_ns).
 */
static __always_inline void at_hist_count_in(struct at_hist *h, __u64 ns, __u64 v)
{
	__u32 slot = at_log2(v);

	if (slot >= AT_HIST_SLOTS)
		slot = AT_HIST_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->sum_ns, ns);
}

static __always_inline void at_hist_count(struct at_hist *h, __u64 ns)
{
	at_hist_count_in(h, ns, ns);
}

/*
 * The same in the histogram at @key of a hash, made on first use.  False
 * when the hash is full and has no entry for @key: the operation is not
 * counted, and the caller says so (ahead_lost[AT_LOST_FULL]).
 */
static __always_inline bool at_hist_add_key_in(void *map, const void *key,
					       __u64 ns, __u64 v)
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
			return false;
	}
	at_hist_count_in(h, ns, v);
	return true;
}

static __always_inline bool at_hist_add_key(void *map, const void *key,
					    __u64 ns)
{
	return at_hist_add_key_in(map, key, ns, ns);
}

/* The same in a (dev, op) histogram. */
static __always_inline bool at_hist_add_in(void *map, __u32 dev, __u32 op,
					   __u64 ns, __u64 v)
{
	struct at_hist_key key = { .dev = dev, .op = op };

	return at_hist_add_key_in(map, &key, ns, v);
}

static __always_inline bool at_hist_add(void *map, __u32 dev, __u32 op,
					__u64 ns)
{
	return at_hist_add_in(map, dev, op, ns, ns);
}

#endif /* AHEADTRACE_BITS_BPF_H */
