/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The text line of "aheadtrace oplog", built by hand into the output
 * buffer: the same bytes as printf's
 *   "%-8s " (with -T)
 *   "%-7d %-7u %-16s %-10s %-8s %-10llu %14lld %12llu %12s %12s %10s %6s %s"
 * and " window=%llu" or " out=%llu@%lld", at a fraction of the cost.  The
 * consumer often shares a CPU with the traced reads (always under TCG), so
 * what it spends per record is taken from them: a printf per field, a
 * strlen per column and a padding loop per character cost more than the
 * record itself.  A host test (tests/text.c) compares every byte with
 * printf's over random records.  Shared by aheadtrace.c and that test.
 */
#ifndef AHEADTRACE_OPLOG_TEXT_H
#define AHEADTRACE_OPLOG_TEXT_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "aheadtrace.h"

/*
 * Bytes a line takes at most, slack included: the fixed columns (each
 * wider than its width only by as much as its value needs: 20 digits and
 * a sign), the name (AT_PATH_LEN bytes of components, with ".../"), the
 * window or copy destination, and the 24 bytes a fixed-size copy may
 * write past the end.
 */
#define AT_LINE_MAX	(AT_PATH_LEN + 512)

/*
 * The columns from PID to INO depend only on the record's process, kind,
 * operation, device and inode: a reader's records repeat them, so the
 * last ones are kept and copied while their key repeats.
 */
struct at_text_key {
	__u32 pid;
	__u32 tid;
	__u32 dev;
	__u16 kind;
	__u16 op;
	__u64 ino;
	char comm[AT_COMM_LEN];
};

/* A column's last value and its digits, for values that repeat. */
struct at_text_col {
	__u64 v;
	unsigned int n;
	bool valid;
	char s[24];
};

enum { AT_COL_LEN, AT_COL_PRESENT, AT_COL_ABSENT, AT_COL_RET, AT_NR_COLS };

struct at_text {
	struct at_text_key key;
	bool valid;
	unsigned int prefix_len;
	char prefix[128];
	struct at_text_col col[AT_NR_COLS];
};

static const char at_spaces[32] = "                                ";
static const char at_d2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233"
	"34353637383940414243444546474849505152535455565758596061626364656667"
	"6869707172737475767778798081828384858687888990919293949596979899";

/*
 * Decimal digits of @v ending just before @end; returns the first.  The
 * 24 bytes from the result are readable when @end has 24 bytes after it:
 * callers copy a fixed 24 and advance by the length.
 */
static inline char *at_dec(__u64 v, char *end)
{
	while (v >= 100) {
		__u64 q = v / 100;
		unsigned int r = (unsigned int)(v - q * 100);

		end -= 2;
		memcpy(end, at_d2 + 2 * r, 2);
		v = q;
	}
	if (v >= 10) {
		end -= 2;
		memcpy(end, at_d2 + 2 * v, 2);
	} else {
		*--end = '0' + v;
	}
	return end;
}

static inline char *at_sdec(__s64 v, char *end)
{
	char *q;

	if (v >= 0)
		return at_dec(v, end);
	q = at_dec(-(__u64)v, end);
	*--q = '-';
	return q;
}

/* N bytes of S, then spaces up to WIDTH (<= 16) columns. */
static inline char *at_put_left(char *p, const char *s, size_t n, int width)
{
	memcpy(p, s, n);
	p += n;
	if ((int)n < width) {
		memcpy(p, at_spaces, 16);
		p += width - (int)n;
	}
	return p;
}

/* Spaces up to WIDTH (<= 16) columns, then N bytes of S. */
static inline char *at_put_right(char *p, const char *s, size_t n, int width)
{
	if ((int)n < width) {
		memcpy(p, at_spaces, 16);
		p += width - (int)n;
	}
	memcpy(p, s, n);
	return p + n;
}

/* A number's digits: a fixed 24-byte copy, so no call to memcpy. */
static inline char *at_put_num(char *p, __u64 v, bool is_signed, int width,
			       bool right)
{
	char tmp[64], *end = tmp + 24, *q;
	int n;

	q = is_signed ? at_sdec((__s64)v, end) : at_dec(v, end);
	n = end - q;
	if (right && n < width) {
		memcpy(p, at_spaces, 16);
		p += width - n;
	}
	memcpy(p, q, 24);
	p += n;
	if (!right && n < width) {
		memcpy(p, at_spaces, 16);
		p += width - n;
	}
	return p;
}

/*
 * The same for a column whose values repeat (a reader's request size, its
 * return value): the digits of the last value are kept and copied.
 */
static inline char *at_put_col(char *p, struct at_text_col *c, __u64 v,
			       bool is_signed, int width)
{
	if (!c->valid || c->v != v) {
		char tmp[64], *end = tmp + 24, *q;

		q = is_signed ? at_sdec((__s64)v, end) : at_dec(v, end);
		c->n = end - q;
		memcpy(c->s, q, 24);
		c->v = v;
		c->valid = true;
	}
	if ((int)c->n < width) {
		memcpy(p, at_spaces, 16);
		p += width - (int)c->n;
	}
	memcpy(p, c->s, 24);
	return p + c->n;
}

/*
 * The latency in ms with three decimals, as "%.3f" of ns / 1e6 gives it:
 * in integers, but for a tie (exactly 500 ns over a microsecond, which
 * printf rounds to even in binary) or a value a double cannot hold to the
 * nanosecond.  Right-justified in 10 columns.
 */
static inline char *at_put_ms(char *p, __u64 ns)
{
	__u64 us = ns / 1000, rem = ns % 1000;
	char tmp[64], *end = tmp + 24, *q;

	if (rem == 500 || ns >= 1000000000000000ULL) {
		int n = snprintf(tmp, sizeof(tmp), "%.3f", ns / 1e6);

		return at_put_right(p, tmp, n, 10);
	}
	if (rem > 500)
		us++;
	end[0] = '.';
	end[1] = '0' + us % 1000 / 100;
	end[2] = '0' + us % 100 / 10;
	end[3] = '0' + us % 10;
	q = at_dec(us / 1000, end);
	return at_put_right(p, q, end + 4 - q, 10);
}

/* A comm for text output: no control characters, never empty. */
static inline char *at_put_comm(char *p, const char *comm)
{
	int i;

	for (i = 0; i < AT_COMM_LEN - 1 && comm[i]; i++)
		p[i] = (unsigned char)comm[i] < 0x20 || comm[i] == 0x7f ?
		       '?' : comm[i];
	if (!i)
		p[i++] = '-';
	return at_put_left(p + i, "", 0, 16 - i);
}

static inline bool at_same_key(const struct at_text_key *k,
			       const struct at_event *e)
{
	__u64 a[2], b[2];

	memcpy(a, k->comm, sizeof(a));
	memcpy(b, e->comm, sizeof(b));
	return k->pid == e->pid && k->tid == e->tid && k->dev == e->dev &&
	       k->kind == e->kind && k->op == e->op && k->ino == e->ino &&
	       a[0] == b[0] && a[1] == b[1];
}

/*
 * One line for record @e into @p (AT_LINE_MAX bytes free); returns its end.
 * @op and @dev are the operation's and device's names, which the key
 * decides; @name the file's name or path ("" when not known), NUL-terminated
 * within @name_max bytes (else not known either); @ts the -T column or NULL.
 */
static inline char *at_text_line(struct at_text *t, char *p,
				 const struct at_event *e, const char *op,
				 const char *dev, const char *name,
				 size_t name_max, const char *ts)
{
	const unsigned char *s = (const unsigned char *)name;
	char *name_at;
	size_t i;

	if (ts) {
		p = at_put_left(p, ts, strlen(ts), 8);
		*p++ = ' ';
	}
	if (!t->valid || !at_same_key(&t->key, e)) {
		struct at_text_key *k = &t->key;
		char *q = t->prefix;
		size_t n;

		memset(k, 0, sizeof(*k));
		k->pid = e->pid;
		k->tid = e->tid;
		k->dev = e->dev;
		k->kind = e->kind;
		k->op = e->op;
		k->ino = e->ino;
		memcpy(k->comm, e->comm, AT_COMM_LEN);

		q = at_put_num(q, (__u64)(__s64)(__s32)e->pid, true, 7, false);
		*q++ = ' ';
		q = at_put_num(q, e->tid, false, 7, false);
		*q++ = ' ';
		q = at_put_comm(q, e->comm);
		*q++ = ' ';
		n = strnlen(op, 16);
		q = at_put_left(q, op, n, 10);
		*q++ = ' ';
		n = strnlen(dev, 24);
		q = at_put_left(q, dev, n, 8);
		*q++ = ' ';
		q = at_put_num(q, e->ino, false, 10, false);
		*q++ = ' ';
		t->prefix_len = q - t->prefix;
		t->valid = true;
	}
	memcpy(p, t->prefix, t->prefix_len);
	p += t->prefix_len;
	p = at_put_num(p, e->pos, true, 14, true);
	*p++ = ' ';
	p = at_put_col(p, &t->col[AT_COL_LEN], e->len, false, 12);
	*p++ = ' ';
	if (e->kind == AT_KIND_READ) {
		p = at_put_col(p, &t->col[AT_COL_PRESENT], e->present, false,
			       12);
		*p++ = ' ';
		p = at_put_col(p, &t->col[AT_COL_ABSENT], e->absent, false,
			       12);
	} else {
		p = at_put_right(p, "-", 1, 12);
		*p++ = ' ';
		p = at_put_right(p, "-", 1, 12);
	}
	*p++ = ' ';
	if (e->kind == AT_KIND_PREFETCH) {
		p = at_put_right(p, "-", 1, 10);
		*p++ = ' ';
		p = at_put_right(p, "-", 1, 6);
	} else {
		p = at_put_ms(p, e->latency_ns);
		*p++ = ' ';
		p = at_put_col(p, &t->col[AT_COL_RET], e->ret, true, 6);
	}
	*p++ = ' ';
	/* Text columns hold no spaces or control characters: they would shift. */
	name_at = p;
	for (i = 0; i < name_max && s[i]; i++)
		*p++ = s[i] <= 0x20 || s[i] == 0x7f ? '?' : s[i];
	if (!i || i == name_max) {
		p = name_at;
		*p++ = '-';
	}
	if (e->kind == AT_KIND_PREFETCH) {
		memcpy(p, " window=", 8);
		p = at_put_num(p + 8, e->window, false, 0, false);
	} else if (e->kind == AT_KIND_COPY) {
		memcpy(p, " out=", 5);
		p = at_put_num(p + 5, e->ino_out, false, 0, false);
		*p++ = '@';
		p = at_put_num(p, e->pos_out, true, 0, false);
	}
	*p++ = '\n';
	return p;
}

#endif /* AHEADTRACE_OPLOG_TEXT_H */
