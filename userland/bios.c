/* bios.c: stub */
#include "aheadctl.h"
int cmd_bios(int argc, char **argv) { (void)argc; (void)argv; return 1; }
