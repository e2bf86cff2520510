/* json.c: the JSON writer behind -j (one document on stdout, valid UTF-8, errors included). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aheadctl.h"

/*
 * The document is built in memory and written when aheadctl exits
 * (json_finish(), from main's on_exit handler).  A verb that fails halfway
 * through its document has its half thrown away and replaced by the error
 * document, so stdout holds exactly one complete JSON value whatever
 * happens, and a reader never has to parse a truncated one.
 */
static FILE *out;
static char *buf;
static size_t len;
static int depth;
static bool first[64] = { true };
static bool after_key;
static char kinds[64];
static int values;		/* top-level values begun */
static bool done;		/* jend() closed the top-level value */
static char *error_msg;		/* the first err() message */

static FILE *jf(void)
{
	if (!out) {
		out = open_memstream(&buf, &len);
		if (!out) {
			fputs("aheadctl: out of memory\n", stderr);
			_exit(EXIT_FAILED);
		}
	}
	return out;
}

static void sep(void)
{
	if (after_key) {
		after_key = false;
		return;
	}
	if (!depth)
		values++;
	if (depth && !first[depth])
		fputc(',', jf());
	first[depth] = false;
}

/*
 * Length of the valid UTF-8 sequence at p (1-4), or 0 when the bytes at p
 * are not one.  *bad gets how many bytes form the longest prefix that could
 * have started a valid sequence (at least 1): that prefix becomes one
 * U+FFFD, Unicode's "maximal subpart" practice, as Python's
 * decode('utf-8', 'replace') and WHATWG decoders do.
 */
static int utf8_len(const unsigned char *p, int *bad)
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
		if (p[i] < lo || p[i] > hi) {
			*bad = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xbf;
	}
	return n;
}

/* A JSON string: control characters escaped, invalid UTF-8 as \ufffd. */
static void str(const char *s)
{
	FILE *f = jf();
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (*p) {
		int n, bad;

		switch (*p) {
		case '"': fputs("\\\"", f); p++; continue;
		case '\\': fputs("\\\\", f); p++; continue;
		case '\n': fputs("\\n", f); p++; continue;
		case '\r': fputs("\\r", f); p++; continue;
		case '\t': fputs("\\t", f); p++; continue;
		}
		if (*p < 0x20 || *p == 0x7f) {
			/* DEL is legal raw, but escaped it cannot drive a terminal. */
			fprintf(f, "\\u%04x", *p++);
			continue;
		}
		n = utf8_len(p, &bad);
		if (!n) {
			fputs("\\ufffd", f);
			p += bad;
			continue;
		}
		fwrite(p, 1, n, f);
		p += n;
	}
	fputc('"', f);
}

void jkey(const char *k)
{
	if (!k)
		return;
	sep();
	str(k);
	fputc(':', jf());
	after_key = true;
}

void jopen(char kind)
{
	sep();
	fputc(kind, jf());
	if (depth < 63)
		depth++;
	first[depth] = true;
	kinds[depth] = kind;
}

void jclose(void)
{
	if (!depth)
		return;
	fputc(kinds[depth] == '[' ? ']' : '}', jf());
	depth--;
}

void jstr(const char *k, const char *v)
{
	jkey(k);
	if (!v) {
		jnull(NULL);
		return;
	}
	sep();
	str(v);
}

void jint(const char *k, long long v)
{
	jkey(k);
	sep();
	fprintf(jf(), "%lld", v);
}

void jnum(const char *k, double v)
{
	jkey(k);
	sep();
	if (isfinite(v))
		fprintf(jf(), "%.3f", v);
	else
		fputs("null", jf());
}

void jbool(const char *k, bool v)
{
	jkey(k);
	sep();
	fputs(v ? "true" : "false", jf());
}

void jnull(const char *k)
{
	jkey(k);
	sep();
	fputs("null", jf());
}

/* The top-level value is complete: it is what json_finish() prints. */
void jend(void)
{
	if (!depth && !after_key)
		done = true;
	fputc('\n', jf());
}

void json_error(const char *msg)
{
	if (!error_msg)
		error_msg = strdup(msg);
}

/* What failed so far was not the command's failure (the doctor carries on). */
void json_error_reset(void)
{
	free(error_msg);
	error_msg = NULL;
}

static void error_document(int status)
{
	char *m = error_msg ? NULL :
		xsprintf("aheadctl exited with status %d (see stderr)", status);

	/* Start over: whatever was written of the verb's document is dropped. */
	if (out)
		fclose(out);
	free(buf);
	out = NULL;
	buf = NULL;
	depth = values = 0;
	after_key = false;
	first[0] = true;
	jopen('{');
	jkey("error");
	jopen('{');
	jstr("message", error_msg ? error_msg : m);
	jint("exit", status);
	jclose();
	jclose();
	jend();
	free(m);
}

/*
 * Called once, as aheadctl exits with status: prints the one document.
 * A failure (nonzero status after an err()) replaces whatever the verb
 * wrote with the error document, complete or not: fs set closes its array
 * after putting values back, and that array would tell of writes undone.
 * A nonzero status without an err() is a verdict, not a failure (the
 * doctor exits 1 with findings): a complete document stands.  Returns the
 * status to exit with: a verb that succeeded without a complete document
 * is a bug, and reported as one.
 */
int json_finish(int status)
{
	bool complete = done && values == 1 && !depth;

	if (!g.json && !out)
		return status;
	if (!status && !complete) {
		json_error(values ? "internal error: the JSON document was left incomplete" :
			   "internal error: this verb wrote no JSON document");
		fprintf(stderr, "aheadctl: %s\n", error_msg);
		status = EXIT_FAILED;
	}
	if (status && (error_msg || !complete))
		error_document(status);
	fclose(out);
	out = NULL;
	fwrite(buf, 1, len, stdout);
	fflush(stdout);
	return status;
}
