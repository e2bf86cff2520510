/*
 * jsonstr.h: the one JSON string writer of aheadctl (json.c) and aheadtrace
 * (bpf/aheadtrace.c).  Valid UTF-8 is written as it is (café-日.dat stays
 * café-日.dat); '"', '\\' and control characters (below U+0020, and DEL)
 * are escaped; each invalid UTF-8 sequence becomes one U+FFFD, written
 * \ufffd, per maximal subpart, as Python's decode('utf-8', 'replace') does.
 */
#ifndef AHEADFS_JSONSTR_H
#define AHEADFS_JSONSTR_H

#include <stddef.h>
#include <stdio.h>

/*
 * Length of the valid UTF-8 sequence at p (1-4), or 0 when the bytes at p
 * are not one.  *bad gets how many bytes form the longest prefix that could
 * have started a valid sequence (at least 1): that prefix becomes one
 * U+FFFD, Unicode's "maximal subpart" practice, as Python's
 * decode('utf-8', 'replace') and WHATWG decoders do.
 */
static inline int jsonstr_utf8_len(const unsigned char *p, size_t left, int *bad)
{
	unsigned char lo = 0x80, hi = 0xbf;
	int n;

	*bad = 1;
	if (*p < 0x80)
		return 1;
	if (*p >= 0xc2 && *p <= 0xdf)
		n = 2;
	else if (*p >= 0xe0 && *p <= 0xef)
		n = 3;
	else if (*p >= 0xf0 && *p <= 0xf4)
		n = 4;
	else
		return 0;	/* a continuation byte, C0/C1 (overlong), F5-FF */
	/* The second byte's range excludes overlongs, surrogates, > U+10FFFF. */
	if (*p == 0xe0)
		lo = 0xa0;
	else if (*p == 0xed)
		hi = 0x9f;
	else if (*p == 0xf0)
		lo = 0x90;
	else if (*p == 0xf4)
		hi = 0x8f;
	for (int i = 1; i < n; i++) {
		if ((size_t)i >= left || p[i] < lo || p[i] > hi) {
			*bad = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return n;
}

/* s, at most max bytes of it (NUL ends it before), as a JSON string to f. */
static inline void jsonstr_write(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	fputc('"', f);
	while (i < max && p[i]) {
		int n, bad;

		switch (p[i]) {
		case '"': fputs("\\\"", f); i++; continue;
		case '\\': fputs("\\\\", f); i++; continue;
		case '\n': fputs("\\n", f); i++; continue;
		case '\r': fputs("\\r", f); i++; continue;
		case '\t': fputs("\\t", f); i++; continue;
		}
		if (p[i] < 0x20 || p[i] == 0x7f) {
			/* DEL is legal raw, but escaped it cannot drive a terminal. */
			fprintf(f, "\\u%04x", p[i++]);
			continue;
		}
		n = jsonstr_utf8_len(p + i, max - i, &bad);
		if (!n) {
			fputs("\\ufffd", f);
			i += bad;
			continue;
		}
		fwrite(p + i, 1, n, f);
		i += n;
	}
	fputc('"', f);
}

#endif
