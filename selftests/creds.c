// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs credentials: the lower is accessed as the caller, so an
 * unprivileged user can do through the mount exactly what it can do on the
 * lower directly, and what it creates is owned by it.
 *
 * guest-run: fstypes=ext4 (its subject is aheadfs's use of the caller's
 * credentials, checked by the VFS the same over any lower)
 */
#include "aheadfs_test.h"

#include <sys/xattr.h>

#define NOBODY	65534

FIXTURE(creds) {
	struct ahfs fs;
	char path[PATH_MAX];
};

FIXTURE_SETUP(creds)
{
	ASSERT_EQ(0, ahfs_setup(&self->fs, "creds", ""));
	/* The scratch tree must be searchable by the unprivileged user. */
	ASSERT_EQ(0, chmod(self->fs.base, 0755));
	ASSERT_EQ(0, ahfs_run("chmod 0755 '%s' '%s'", ahfs_scratch(),
			      self->fs.lower));
}

FIXTURE_TEARDOWN(creds)
{
	ahfs_teardown(&self->fs);
}

static int try_open(void *arg)
{
	const char *path = arg;
	int fd = open(path, O_RDONLY);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

static int try_write(void *arg)
{
	int fd = open(arg, O_WRONLY);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno;
}

static int try_create(void *arg)
{
	int fd = open(arg, O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd < 0)
		return errno;
	if (write(fd, "mine", 4) != 4)
		return 99;
	close(fd);
	return 0;
}

static int try_unlink(void *arg)
{
	return unlink(arg) ? errno : 0;
}

static int try_chown_root(void *arg)
{
	return chown(arg, 0, 0) ? errno : 0;
}

static int try_chmod(void *arg)
{
	return chmod(arg, 0777) ? errno : 0;
}

static int try_mkdir(void *arg)
{
	return mkdir(arg, 0755) ? errno : 0;
}

static int try_setxattr(void *arg)
{
	return setxattr(arg, "trusted.x", "1", 1, 0) ? errno : 0;
}

/* Same answer through the mount and on the lower, for @rel. */
static void both(struct __test_metadata *_metadata, struct ahfs *fs,
		 int (*fn)(void *), const char *rel, int want)
{
	char m[PATH_MAX], l[PATH_MAX];

	EXPECT_EQ(want, ahfs_as_user(NOBODY, fn, ahfs_l(fs, l, rel))) {
		TH_LOG("lower %s", rel);
	}
	EXPECT_EQ(want, ahfs_as_user(NOBODY, fn, ahfs_m(fs, m, rel))) {
		TH_LOG("through the mount %s", rel);
	}
}

TEST_F(creds, root_only_file)
{
	char p[PATH_MAX];

	ASSERT_EQ(0, ahfs_make_file(ahfs_l(&self->fs, p, "secret"), 100));
	ASSERT_EQ(0, chmod(p, 0600));
	both(_metadata, &self->fs, try_open, "secret", EACCES);
	both(_metadata, &self->fs, try_write, "secret", EACCES);
	both(_metadata, &self->fs, try_chown_root, "secret", EPERM);
	both(_metadata, &self->fs, try_chmod, "secret", EPERM);
	/* Readable once the mode allows it, through both. */
	ASSERT_EQ(0, chmod(p, 0644));
	both(_metadata, &self->fs, try_open, "secret", 0);
	both(_metadata, &self->fs, try_write, "secret", EACCES);
}

TEST_F(creds, no_create_in_root_dir)
{
	char p[PATH_MAX];
	struct stat st;

	EXPECT_EQ(EACCES, ahfs_as_user(NOBODY, try_create,
				       ahfs_m(&self->fs, p, "nope")));
	EXPECT_EQ(-1, stat(ahfs_l(&self->fs, p, "nope"), &st));
	EXPECT_EQ(EACCES, ahfs_as_user(NOBODY, try_mkdir,
				       ahfs_m(&self->fs, p, "nodir")));
	ASSERT_EQ(0, ahfs_make_file(ahfs_l(&self->fs, p, "rootfile"), 1));
	both(_metadata, &self->fs, try_unlink, "rootfile", EACCES);
}

TEST_F(creds, own_directory)
{
	char p[PATH_MAX];
	struct stat st;

	ASSERT_EQ(0, mkdir(ahfs_l(&self->fs, p, "home"), 0755));
	ASSERT_EQ(0, chown(p, NOBODY, NOBODY));
	EXPECT_EQ(0, ahfs_as_user(NOBODY, try_create,
				  ahfs_m(&self->fs, p, "home/mine")));
	/* Created as the caller, not as whoever mounted. */
	ASSERT_EQ(0, stat(ahfs_l(&self->fs, p, "home/mine"), &st));
	EXPECT_EQ(NOBODY, st.st_uid);
	EXPECT_EQ(NOBODY, st.st_gid);
	EXPECT_EQ(0, ahfs_as_user(NOBODY, try_mkdir,
				  ahfs_m(&self->fs, p, "home/sub")));
	ASSERT_EQ(0, stat(ahfs_l(&self->fs, p, "home/sub"), &st));
	EXPECT_EQ(NOBODY, st.st_uid);
	both(_metadata, &self->fs, try_chown_root, "home/mine", EPERM);
	EXPECT_EQ(0, ahfs_as_user(NOBODY, try_unlink,
				  ahfs_m(&self->fs, p, "home/mine")));
}

TEST_F(creds, sticky_directory)
{
	char p[PATH_MAX];

	ASSERT_EQ(0, mkdir(ahfs_l(&self->fs, p, "tmp"), 01777));
	ASSERT_EQ(0, chmod(p, 01777));
	ASSERT_EQ(0, ahfs_make_file(ahfs_l(&self->fs, p, "tmp/roots"), 1));
	both(_metadata, &self->fs, try_unlink, "tmp/roots", EPERM);
}

TEST_F(creds, trusted_xattrs_need_privilege)
{
	char p[PATH_MAX];

	ASSERT_EQ(0, ahfs_make_file(ahfs_l(&self->fs, p, "x"), 1));
	ASSERT_EQ(0, chmod(p, 0666));
	both(_metadata, &self->fs, try_setxattr, "x", EPERM);
}

TEST_HARNESS_MAIN
