// SPDX-License-Identifier: GPL-2.0
/*
 * oplog's hand-built text line (oplog_text.h) against printf's formats, over
 * random records: every byte must be the same.  Records come in runs that
 * share their process, kind, operation, device and inode (the columns the
 * line builder keeps and reuses) and then change one of them, so that both
 * the reuse and its invalidation are compared.  Prints "ok" or the first
 * mismatches and "mismatch"; exits 1 on a mismatch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "../oplog_text.h"

static __u64 x = 0x9e3779b97f4a7c15ULL;

static __u64 rnd(void)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/* A value of any magnitude: small ones are the common case. */
static __u64 mag(void)
{
	return rnd() >> (rnd() % 64);
}

static const char *const ops[] = {
	"read", "prefetch", "clone", "lookup", "revalidate", "permission", "?",
};

static void ref_comm(const char *comm, char *buf)
{
	int i;

	for (i = 0; i < AT_COMM_LEN - 1 && comm[i]; i++)
		buf[i] = (unsigned char)comm[i] < 0x20 || comm[i] == 0x7f ?
			 '?' : comm[i];
	buf[i] = '\0';
	if (!i)
		strcpy(buf, "-");
}

/* The line as the printf formats give it. */
static int ref_line(char *buf, size_t sz, const struct at_event *e,
		    const char *op, const char *dev, const char *name,
		    const char *ts)
{
	char comm[AT_COMM_LEN + 1], lat[64], ret[32], pres[32], abs_[32];
	char nm[AT_PATH_LEN + 16];
	size_t i;
	int n = 0;

	if (ts)
		n += snprintf(buf + n, sz - n, "%-8s ", ts);
	ref_comm(e->comm, comm);
	if (e->kind == AT_KIND_PREFETCH) {
		strcpy(lat, "-");
		strcpy(ret, "-");
	} else {
		snprintf(lat, sizeof(lat), "%.3f", e->latency_ns / 1e6);
		snprintf(ret, sizeof(ret), "%lld", (long long)e->ret);
	}
	if (e->kind == AT_KIND_READ) {
		snprintf(pres, sizeof(pres), "%llu", (unsigned long long)e->present);
		snprintf(abs_, sizeof(abs_), "%llu", (unsigned long long)e->absent);
	} else {
		strcpy(pres, "-");
		strcpy(abs_, "-");
	}
	for (i = 0; name[i]; i++)
		nm[i] = (unsigned char)name[i] <= 0x20 || name[i] == 0x7f ?
			'?' : name[i];
	nm[i] = '\0';
	if (!i)
		strcpy(nm, "-");
	n += snprintf(buf + n, sz - n,
		      "%-7d %-7u %-16s %-10s %-8s %-10llu %14lld %12llu %12s %12s %10s %6s %s",
		      (int)e->pid, e->tid, comm, op, dev,
		      (unsigned long long)e->ino, (long long)e->pos,
		      (unsigned long long)e->len, pres, abs_, lat, ret, nm);
	if (e->kind == AT_KIND_PREFETCH)
		n += snprintf(buf + n, sz - n, " window=%llu",
			      (unsigned long long)e->window);
	else if (e->kind == AT_KIND_COPY)
		n += snprintf(buf + n, sz - n, " out=%llu@%lld",
			      (unsigned long long)e->ino_out,
			      (long long)e->pos_out);
	n += snprintf(buf + n, sz - n, "\n");
	return n;
}

static void rnd_str(char *s, size_t max, bool printable)
{
	size_t n = rnd() % max, i;

	/* Mostly short names of ordinary bytes; some of any byte. */
	for (i = 0; i < n; i++) {
		unsigned char c = rnd();

		s[i] = printable ? 'a' + c % 26 : (c ? c : '.');
	}
	s[n] = '\0';
}

int main(void)
{
	static char got[AT_LINE_MAX + 64], want[AT_LINE_MAX + 64];
	static char name[AT_PATH_LEN + 8];
	struct at_text t = { 0 };
	struct at_event e;
	const char *op = ops[0];
	char dev[32], ts[16];
	size_t name_max;
	int bad = 0, i;

	memset(&e, 0, sizeof(e));
	strcpy(dev, "0:61");
	for (i = 0; i < 300000 && bad < 5; i++) {
		int what = rnd() % 8;
		bool with_ts = rnd() % 4 == 0;
		char *end;
		int n;

		/* Change one of the reused columns, or none (a run goes on). */
		switch (what) {
		case 0:
			e.pid = rnd() % 3 ? rnd() % 100000 : (__u32)rnd();
			break;
		case 1:
			e.tid = rnd() % 3 ? rnd() % 100000 : (__u32)rnd();
			break;
		case 2:
			rnd_str(e.comm, AT_COMM_LEN, rnd() % 2);
			break;
		case 3:
			/* The name is the kind's and op's, as in aheadtrace. */
			e.kind = rnd() % 4;
			e.op = rnd() % 8;
			op = ops[(e.kind * 8 + e.op) % 7];
			break;
		case 4:
			e.dev = rnd();
			snprintf(dev, sizeof(dev), "%u:%u", e.dev >> 20,
				 e.dev & ((1U << 20) - 1));
			break;
		case 5:
			e.ino = mag();
			break;
		}
		e.pos = rnd() % 5 ? (__s64)(mag() >> 1) : (__s64)rnd();
		/* Sizes and returns repeat in runs, as a reader's do. */
		if (rnd() % 2)
			e.len = mag();
		if (rnd() % 2)
			e.present = rnd() % 2 ? e.len : mag();
		if (rnd() % 2)
			e.absent = rnd() % 2 ? 0 : mag();
		e.window = mag();
		e.ino_out = mag();
		e.pos_out = (__s64)rnd() >> (rnd() % 64);
		if (rnd() % 2)
			e.ret = rnd() % 3 ? (__s64)(mag() >> 1) :
					    -(__s64)(rnd() % 200);
		/* Latencies of every size, ties at 500 ns and the largest. */
		switch (rnd() % 6) {
		case 0:
			e.latency_ns = (rnd() % 100000) * 1000 + 500;
			break;
		case 1:
			e.latency_ns = rnd();
			break;
		default:
			e.latency_ns = mag();
		}
		if (rnd() % 5)
			rnd_str(name, 24, true);
		else
			rnd_str(name, AT_PATH_LEN, false);
		snprintf(ts, sizeof(ts), "%02u:%02u:%02u", (unsigned)(rnd() % 24),
			 (unsigned)(rnd() % 60), (unsigned)(rnd() % 60));
		n = ref_line(want, sizeof(want), &e, op, dev, name,
			     with_ts ? ts : NULL);
		/* A name not ended within its bound is not known. */
		name_max = sizeof(name);
		if (rnd() % 50 == 0 && name[0]) {
			name_max = strlen(name);
			n = ref_line(want, sizeof(want), &e, op, dev, "",
				     with_ts ? ts : NULL);
		}
		end = at_text_line(&t, got, &e, op, dev, name, name_max,
				   with_ts ? ts : NULL);
		if (end - got != n || memcmp(got, want, n)) {
			printf("record %d:\n got: %.*s want: %.*s", i,
			       (int)(end - got), got, n, want);
			bad++;
		}
	}
	printf("%s\n", bad ? "mismatch" : "ok");
	return bad != 0;
}
