/*
 * jsonstr.c: the JSON string writer aheadtrace -j uses (json_str() in
 * aheadtrace.c calls jsonstr_write() of ../userland/jsonstr.h, aheadctl's),
 * on names a trace carries: each argument is written as one JSON string per
 * line, at most 16 bytes of it for a "comm:" argument (a task comm is a
 * 16-byte array, not NUL-terminated when full).  tests/host.sh decodes the
 * lines with Python and compares.
 */
#include <stdio.h>
#include <string.h>

#include "../../userland/jsonstr.h"

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "comm:", 5))
			jsonstr_write(stdout, argv[i] + 5, 16);
		else
			jsonstr_write(stdout, argv[i], (size_t)-1);
		putchar('\n');
	}
	return 0;
}
