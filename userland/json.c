/* json.c: the JSON writer behind -j (one value on stdout, escaped). */
#include <math.h>
#include <stdio.h>

#include "aheadctl.h"

static int depth;
static bool first[64] = { true };
static bool after_key;
static char kinds[64];

static void sep(void)
{
	if (after_key) {
		after_key = false;
		return;
	}
	if (depth && !first[depth])
		putchar(',');
	first[depth] = false;
}

static void str(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", stdout); break;
		case '\\': fputs("\\\\", stdout); break;
		case '\n': fputs("\\n", stdout); break;
		case '\r': fputs("\\r", stdout); break;
		case '\t': fputs("\\t", stdout); break;
		default:
			if (*p < 0x20)
				printf("\\u%04x", *p);
			else
				putchar(*p);
		}
	}
	putchar('"');
}

void jkey(const char *k)
{
	if (!k)
		return;
	sep();
	str(k);
	putchar(':');
	after_key = true;
}

void jopen(char kind)
{
	sep();
	putchar(kind);
	if (depth < 63)
		depth++;
	first[depth] = true;
	kinds[depth] = kind;
}

void jclose(void)
{
	putchar(kinds[depth] == '[' ? ']' : '}');
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
	printf("%lld", v);
}

void jnum(const char *k, double v)
{
	jkey(k);
	sep();
	if (isfinite(v))
		printf("%.3f", v);
	else
		fputs("null", stdout);
}

void jbool(const char *k, bool v)
{
	jkey(k);
	sep();
	fputs(v ? "true" : "false", stdout);
}

void jnull(const char *k)
{
	jkey(k);
	sep();
	fputs("null", stdout);
}

void jend(void)
{
	putchar('\n');
	fflush(stdout);
}
