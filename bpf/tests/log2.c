// SPDX-License-Identifier: GPL-2.0
/*
 * at_log2() of bits.bpf.h, built for the host: it must give the index of
 * the highest set bit for every value (0 for 0), which picks the histogram
 * slot of every traced operation.  Prints "ok" or each mismatch and
 * "mismatch"; exits 1 on a mismatch.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/types.h>
/* glibc defines __always_inline; the BPF helpers are stubs, never called. */

#define BPF_NOEXIST 1
static void *bpf_map_lookup_elem(void *map, const void *key) { return NULL; }
static long bpf_map_update_elem(void *map, const void *key, const void *v,
				__u64 flags) { return 0; }
#include "../aheadtrace.h"
#include "../bits.bpf.h"

static __u32 ref(__u64 v)
{
	__u32 r = 0;

	while (v >>= 1)
		r++;
	return r;
}

static int check(__u64 v)
{
	if (at_log2(v) == ref(v))
		return 0;
	printf("at_log2(%#llx) = %u, want %u\n", (unsigned long long)v,
	       at_log2(v), ref(v));
	return 1;
}

int main(void)
{
	__u64 x = 0x9e3779b97f4a7c15ULL;
	int bad = check(0), i;

	for (i = 0; i < 64; i++) {
		__u64 p = 1ULL << i;

		bad += check(p) + check(p - 1) + check(p + 1) + check(p | (p - 1));
	}
	for (i = 0; i < 1000000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		bad += check(x >> (i % 64));
	}
	printf("%s\n", bad ? "mismatch" : "ok");
	return bad != 0;
}
