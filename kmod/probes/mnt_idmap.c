// SPDX-License-Identifier: GPL-2.0
/* Inode operations take a struct mnt_idmap (6.3+) rather than a user_namespace. */
#include <linux/fs.h>
#include <linux/mount.h>

int aheadfs_probe(struct mnt_idmap *idmap, struct inode *dir, struct dentry *d);
int aheadfs_probe(struct mnt_idmap *idmap, struct inode *dir, struct dentry *d)
{
	return vfs_rmdir(idmap, dir, d);
}
