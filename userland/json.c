/* json.c: the JSON writer behind -j (one document on stdout, valid UTF-8, errors included). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aheadctl.h"
#include "jsonstr.h"

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

/* A JSON string: control characters escaped, invalid UTF-8 as \ufffd. */
static void str(const char *s)
{
	jsonstr_write(jf(), s, (size_t)-1);
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
