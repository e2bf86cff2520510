/*
 * fuzz.c: a libFuzzer target for one of aheadctl's parsers, chosen at build
 * time with -DFUZZ_TARGET=fuzz_NAME (userland/Makefile: make fuzz).  The
 * parsers are the ones that read what aheadctl does not control: the
 * config, /proc/interrupts, mountinfo, a snapshot file, a BMC's answer.
 */
#include <stddef.h>
#include <stdint.h>

#include "../aheadctl.h"

struct opts g;		/* main.c's, which a fuzz target does not link */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FUZZ_TARGET((const char *)data, size);
	json_error_reset();
	return 0;
}
