// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs export_operations, so nfsd can export a mount.  (Placeholder:
 * empty, so mounts are not exportable; replaced by the export code proper.)
 */
#include <linux/exportfs.h>
#include "aheadfs.h"

const struct export_operations aheadfs_export_ops = {
};
