// SPDX-License-Identifier: GPL-2.0
/*
 * aheadfs fsx: a seeded, replayable random-operation exerciser in the manner
 * of fsx.  The same operations run in lock step on two files in a plain
 * directory of the lower filesystem and on two files through an aheadfs
 * mount of a sibling directory.  After every operation both sides must have
 * returned the same result (value or errno), reads must have returned what
 * an in-memory model of a POSIX file holds, and every file's size and the
 * bytes the operation touched must match the model; every byte of every
 * file, on both sides and in the aheadfs lower, is compared every
 * FSX_FULL operations and at the end.  The model follows the operations
 * that succeeded, and only as far as they report (a short copy moves what
 * it counted; where a copy to or from an O_DIRECT file comes up short on one
 * side only, that side continues to the other's count, see copy_level()).
 *
 * Operations: buffered, O_DIRECT (aligned, and now and then not) and mmap
 * reads and writes, truncate, every fallocate mode, fsync, fdatasync,
 * copy_file_range within a file and between two, FICLONERANGE,
 * FIDEDUPERANGE, and reopening (or F_SETFL) with O_DIRECT on or off.  The
 * main fd of each file is used with its current flags (buffered or
 * O_DIRECT) by every operation but the O_DIRECT reads and writes, which
 * have an fd of their own.
 *
 * Every test is deterministic: the seed_N tests and, with no variable below
 * set, "replay_or_soak" run fixed seeds (the scripts' ops are fixed too).
 * Fresh seeds are for soaks: with AHEADFS_FSX_SOAK=N, "replay_or_soak" runs
 * N new time seeds, logging each before it runs, up to the first that fails,
 * and the seed_N tests skip; scripts/soak (make soak) boots a guest per
 * kernel for that, and a seed it finds failing becomes a seed_N test.
 * Replay one seed up to the failing op (both from the failure message): with
 * AHEADFS_FSX_SEED set, "replay_or_soak" runs that seed and the seed_N
 * tests skip; in a guest:
 *	scripts/vm-run --kernel 6.12 -- env AHEADFS_FSX_SEED=0x... \
 *		AHEADFS_FSX_OPS=N scripts/guest-run --only fsx --no-stress --fstypes ext4
 * (guest-run allows a test program 600 s: soak there with a few dozen seeds,
 * more with scripts/soak.)
 * AHEADFS_FSX_VERBOSE=1 logs every op; AHEADFS_FSX_FULL=1 compares every
 * byte after every op; AHEADFS_FSX_NO=setfl,clone,... leaves operations out
 * (by the keys of op_info[]; the sequence then differs).
 * AHEADFS_FSX_SELFCHECK=1 runs both sides on plain directories, without a
 * mount: a check of the model itself against the local filesystem.
 */
#include "aheadfs_test.h"

#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>

#define FSX_MAX		(1LL << 20)	/* no file grows past this */
#define FSX_CAP		(2 * FSX_MAX)	/* what a check reads at most */
#define FSX_BLK		4096LL
#define FSX_LOG		20		/* operations kept for a failure report */
#define FSX_OPS		1000		/* per seed, unless AHEADFS_FSX_OPS */
#define FSX_FULL	16		/* every so many ops, all views checked */
#define FSX_FILES	2
#define FSX_SIDES	2
#define FSX_ANY		(-2LL)		/* a script step's result: not checked */

enum fsx_code {
	OP_READ, OP_WRITE, OP_DREAD, OP_DWRITE, OP_MAPREAD, OP_MAPWRITE,
	OP_TRUNCATE, OP_FALLOC, OP_FSYNC, OP_FDATASYNC, OP_COPY, OP_CLONE,
	OP_DEDUPE, OP_REOPEN, OP_SETFL, OP_NR
};

/* AHEADFS_FSX_NO=key,key... leaves those operations out (for triage). */
static const struct {
	const char *name, *key;
	int weight;
} op_info[OP_NR] = {
	[OP_READ]	= { "pread", "read", 10 },
	[OP_WRITE]	= { "pwrite", "write", 12 },
	[OP_DREAD]	= { "pread(O_DIRECT fd)", "dread", 6 },
	[OP_DWRITE]	= { "pwrite(O_DIRECT fd)", "dwrite", 8 },
	[OP_MAPREAD]	= { "mmap read", "mapread", 5 },
	[OP_MAPWRITE]	= { "mmap write", "mapwrite", 6 },
	[OP_TRUNCATE]	= { "ftruncate", "truncate", 6 },
	[OP_FALLOC]	= { "fallocate", "falloc", 12 },
	[OP_FSYNC]	= { "fsync", "fsync", 2 },
	[OP_FDATASYNC]	= { "fdatasync", "fdatasync", 2 },
	[OP_COPY]	= { "copy_file_range", "copy", 16 },
	[OP_CLONE]	= { "FICLONERANGE", "clone", 6 },
	[OP_DEDUPE]	= { "FIDEDUPERANGE", "dedupe", 4 },
	[OP_REOPEN]	= { "reopen", "reopen", 3 },
	[OP_SETFL]	= { "fcntl(F_SETFL)", "setfl", 2 },
};

static const struct {
	int mode;
	const char *name;
	int weight;
} falloc_modes[] = {
	{ 0, "0", 3 },
	{ FALLOC_FL_KEEP_SIZE, "KEEP_SIZE", 2 },
	{ FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, "PUNCH_HOLE|KEEP_SIZE", 4 },
	{ FALLOC_FL_ZERO_RANGE, "ZERO_RANGE", 3 },
	{ FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, "ZERO_RANGE|KEEP_SIZE", 2 },
	{ FALLOC_FL_COLLAPSE_RANGE, "COLLAPSE_RANGE", 3 },
	{ FALLOC_FL_INSERT_RANGE, "INSERT_RANGE", 3 },
	{ FALLOC_FL_PUNCH_HOLE, "PUNCH_HOLE", 1 },	/* without KEEP_SIZE: refused */
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *const file_name[FSX_FILES] = { "a", "b" };
static const char *const view_name[] = { "lower", "aheadfs", "aheadfs's lower file" };

struct fsx_op {
	int code;
	int file;		/* acted on: the destination of copy, clone, dedupe */
	int src;		/* the source file of copy, clone, dedupe */
	int mode;		/* fallocate mode; O_DIRECT or 0 for reopen, setfl */
	long long off;		/* offset; the destination's for copy, clone, dedupe */
	long long soff;		/* source offset */
	long long len;		/* length; the new size for ftruncate */
	int mis;		/* O_DIRECT buffer misalignment */
	long long want;		/* scripts: the result both must give, or FSX_ANY */
};

struct fsx_res {
	long long ret;		/* the return value: -1 on error */
	int err;		/* errno when ret is -1 */
	long long aux[2];	/* copy: positions after; dedupe: status, bytes */
};

struct fsx_side {
	char dir[PATH_MAX];
	int fd[FSX_FILES];	/* O_RDWR, and O_DIRECT as last reopened */
	int dfd[FSX_FILES];	/* O_RDWR | O_DIRECT */
	int cfd[FSX_FILES];	/* O_RDONLY, for the checks */
};

struct fsx_logent {
	long n;
	struct fsx_op op;
	struct fsx_res res[FSX_SIDES];
	long long size[FSX_FILES];
	int direct[FSX_FILES];
};

struct fsx {
	const char *what;	/* "seed 0x..." or the script's name */
	unsigned long long seed, rng;
	long n, nops;
	int verbose, scripted;
	int weight[OP_NR];
	long full;		/* every so many ops, all bytes are checked */
	struct fsx_side side[FSX_SIDES];
	char view2[PATH_MAX];	/* the aheadfs side's lower directory */
	int nviews;
	int direct[FSX_FILES];	/* main fds' O_DIRECT, the same on both sides */
	unsigned char *model[FSX_FILES];
	long long size[FSX_FILES];
	unsigned char *wbuf, *rbuf[FSX_SIDES], *cbuf;
	struct fsx_logent log[FSX_LOG];
	/* the last copy or clone that succeeded: a candidate for dedupe */
	struct fsx_op last_copy;
	int have_last_copy;
	/* per operation: count, successes */
	long count[OP_NR], ok[OP_NR];
	long adopted;		/* unspecified ranges taken from the lower */
	long layout;		/* answers that differed by the blocks, not the bytes */
	long continued;		/* short O_DIRECT copies brought level */
	long eof_zeroed;	/* failed writes past EOF that grew one side */
	double t_ops, t_checks;	/* seconds in the ops and in the checks */
	double tc;		/* when this op's checks began */
};

static void fsx_msg(const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "# %s\n", line);
}

/* splitmix64: small, and the same sequence everywhere. */
static unsigned long long rnd(struct fsx *x)
{
	unsigned long long z = (x->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static long long below(struct fsx *x, long long n)
{
	return n > 0 ? (long long)(rnd(x) % (unsigned long long)n) : 0;
}

/* An alignment for offsets and lengths: none, 512 or 4096. */
static long long any_align(struct fsx *x)
{
	int r = below(x, 8);

	return r < 3 ? 1 : r < 5 ? 512 : FSX_BLK;
}

/* For O_DIRECT: aligned mostly, to 512 or 4096; now and then not at all. */
static long long dio_align(struct fsx *x)
{
	int r = below(x, 16);

	return r < 2 ? 1 : r < 6 ? 512 : FSX_BLK;
}

static long long pick_off(struct fsx *x, long long lim, long long align)
{
	return below(x, lim) & ~(align - 1);
}

/* Mostly short, sometimes up to 256 KiB; at least one @align, at most @max. */
static long long pick_len(struct fsx *x, long long max, long long align)
{
	int r = below(x, 16);
	long long lim = r < 9 ? 16 << 10 : r < 14 ? 64 << 10 : 256 << 10;
	long long len = (1 + below(x, lim) + align - 1) & ~(align - 1);

	if (len > max)
		len = max & ~(align - 1);
	return len > 0 ? len : 0;
}

static long long min_ll(long long a, long long b)
{
	return a < b ? a : b;
}

static long long max_ll(long long a, long long b)
{
	return a > b ? a : b;
}

static int overlaps(long long a, long long b, long long len)
{
	return len > 0 && a < b + len && b < a + len;
}

/* Source, length and destination of a copy, clone or dedupe. */
static void gen_remap(struct fsx *x, struct fsx_op *op)
{
	long long ssize, dsize, align, eff;
	int tries;

	if (op->code == OP_DEDUPE && x->have_last_copy && below(x, 2)) {
		/* Dedupe what the last copy made equal: SAME, mostly. */
		op->src = x->last_copy.src;
		op->file = x->last_copy.file;
		op->soff = x->last_copy.soff;
		op->off = x->last_copy.off;
		op->len = x->last_copy.len;
		if (below(x, 2))
			op->len &= ~(FSX_BLK - 1);
		return;
	}
	op->src = below(x, 2) ? op->file : !op->file;
	align = op->code == OP_COPY ? (below(x, 4) ? any_align(x) : FSX_BLK) :
		(below(x, 8) ? FSX_BLK : any_align(x));
	ssize = x->size[op->src];
	dsize = x->size[op->file];
	for (tries = 0; tries < 16; tries++) {
		/* Now and then a source offset at or past EOF. */
		op->soff = pick_off(x, ssize + ssize / 16 + 1, align);
		op->len = pick_len(x, FSX_MAX, align);
		if (op->code == OP_COPY && !below(x, 16))
			op->len = 1LL << 30;	/* "to EOF", as cp asks */
		if (op->code == OP_CLONE && !below(x, 8))
			op->len = 0;		/* FICLONERANGE: to EOF */
		eff = op->len;
		if (!eff || op->soff + eff > ssize)
			eff = max_ll(0, ssize - op->soff);
		if (op->code == OP_DEDUPE)
			op->off = pick_off(x, dsize + 1, align);
		else if (below(x, 2))	/* past the destination's EOF */
			op->off = (dsize + below(x, 256 << 10)) & ~(align - 1);
		else
			op->off = pick_off(x, dsize + 1, align);
		if (op->off + eff > FSX_MAX)
			op->off = (FSX_MAX - eff) & ~(align - 1);
		if (op->off < 0)
			op->off = 0;
		/* Overlap within one file is EINVAL: ask for it now and then. */
		if (op->src != op->file || !overlaps(op->soff, op->off, eff) ||
		    !below(x, 16))
			break;
	}
}

static void gen_op(struct fsx *x, struct fsx_op *op)
{
	long long total = 0, r, size, align;
	int i;

	memset(op, 0, sizeof(*op));
	op->want = FSX_ANY;
	for (i = 0; i < OP_NR; i++)
		total += x->weight[i];
	r = below(x, total);
	for (i = 0; r >= x->weight[i]; i++)
		r -= x->weight[i];
	op->code = i;
	op->file = below(x, 2);
	op->src = op->file;
	size = x->size[op->file];

	switch (op->code) {
	case OP_READ:
	case OP_DREAD:
	case OP_MAPREAD:
		align = op->code == OP_DREAD || x->direct[op->file] ?
			dio_align(x) : any_align(x);
		/* Reads past EOF now and then. */
		op->off = pick_off(x, size + size / 8 + 1, align);
		op->len = pick_len(x, FSX_MAX, align);
		if (op->code == OP_MAPREAD) {
			/* Beyond EOF a mapping is SIGBUS: stay within. */
			op->off = pick_off(x, size, 1);
			op->len = min_ll(op->len, size - op->off);
		}
		if (op->code == OP_DREAD && !below(x, 16))
			op->mis = 1 + below(x, 4095);
		break;
	case OP_WRITE:
	case OP_DWRITE:
	case OP_MAPWRITE:
		align = op->code == OP_DWRITE || x->direct[op->file] ?
			dio_align(x) : any_align(x);
		op->off = pick_off(x, min_ll(FSX_MAX, size + (256 << 10)), align);
		op->len = pick_len(x, FSX_MAX - op->off, align);
		if (op->code == OP_DWRITE && !below(x, 16))
			op->mis = 1 + below(x, 4095);
		break;
	case OP_TRUNCATE:
		align = any_align(x);
		op->len = pick_off(x, below(x, 2) ? FSX_MAX + 1 : size + 1, align);
		break;
	case OP_FALLOC:
		for (total = 0, i = 0; i < (int)ARRAY_LEN(falloc_modes); i++)
			total += falloc_modes[i].weight;
		r = below(x, total);
		for (i = 0; r >= falloc_modes[i].weight; i++)
			r -= falloc_modes[i].weight;
		op->mode = falloc_modes[i].mode;
		align = below(x, 4) ? FSX_BLK : any_align(x);
		if (op->mode == FALLOC_FL_COLLAPSE_RANGE) {
			op->off = pick_off(x, size, align);
			op->len = pick_len(x, size - op->off, align);
		} else if (op->mode == FALLOC_FL_INSERT_RANGE) {
			op->off = pick_off(x, size, align);
			op->len = pick_len(x, FSX_MAX - size, align);
		} else {
			op->off = pick_off(x, min_ll(FSX_MAX, size + (128 << 10)), align);
			op->len = pick_len(x, FSX_MAX - op->off, align);
		}
		break;
	case OP_COPY:
	case OP_CLONE:
	case OP_DEDUPE:
		gen_remap(x, op);
		break;
	case OP_REOPEN:
	case OP_SETFL:
		op->mode = below(x, 3) ? 0 : O_DIRECT;
		break;
	}
}

/* File data: never zero (a hole shows), and different for each op. */
static void fill(unsigned char *p, long long off, long long len, long n)
{
	unsigned int v = (unsigned int)((off + n * 131) % 255);
	long long i;

	for (i = 0; i < len; i++) {
		p[i] = v + 1;
		if (++v == 255)
			v = 0;
	}
}

static const char *errname(int err)
{
	const char *s = strerrorname_np(err);

	return s ? s : "E?";
}

static const char *falloc_name(int mode)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(falloc_modes); i++)
		if (falloc_modes[i].mode == mode)
			return falloc_modes[i].name;
	return "?";
}

static char *op_str(const struct fsx_op *op, const int direct[FSX_FILES],
		    const long long size[FSX_FILES], char *buf, size_t len)
{
	const char *f = file_name[op->file], *s = file_name[op->src];
	char mis[32] = "";
	int n;

	if (op->mis)
		snprintf(mis, sizeof(mis), ", buffer +%d", op->mis);
	switch (op->code) {
	case OP_READ: case OP_WRITE: case OP_DREAD: case OP_DWRITE:
	case OP_MAPREAD: case OP_MAPWRITE:
		n = snprintf(buf, len, "%s %s [%#llx, %#llx) len %#llx%s",
			     op_info[op->code].name, f, op->off,
			     op->off + op->len, op->len, mis);
		break;
	case OP_TRUNCATE:
		n = snprintf(buf, len, "ftruncate %s to %#llx", f, op->len);
		break;
	case OP_FALLOC:
		n = snprintf(buf, len, "fallocate %s %s [%#llx, %#llx) len %#llx",
			     f, falloc_name(op->mode), op->off,
			     op->off + op->len, op->len);
		break;
	case OP_FSYNC: case OP_FDATASYNC:
		n = snprintf(buf, len, "%s %s", op_info[op->code].name, f);
		break;
	case OP_COPY: case OP_CLONE: case OP_DEDUPE:
		n = snprintf(buf, len, "%s %s [%#llx, %#llx) len %#llx -> %s @%#llx",
			     op_info[op->code].name, s, op->soff,
			     op->soff + op->len, op->len, f, op->off);
		break;
	case OP_REOPEN:
		n = snprintf(buf, len, "reopen %s O_RDWR%s", f,
			     op->mode ? "|O_DIRECT" : "");
		break;
	case OP_SETFL:
		n = snprintf(buf, len, "fcntl(%s, F_SETFL, %s)", f,
			     op->mode ? "O_DIRECT" : "0");
		break;
	default:
		n = snprintf(buf, len, "op %d", op->code);
	}
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - n, "  {a %#llx%s, b %#llx%s}",
			 size[0], direct[0] ? " O_DIRECT" : "",
			 size[1], direct[1] ? " O_DIRECT" : "");
	return buf;
}

static char *res_str(const struct fsx_op *op, const struct fsx_res *r,
		     char *buf, size_t len)
{
	int n;

	if (r->ret < 0)
		n = snprintf(buf, len, "-1 %s", errname(r->err));
	else
		n = snprintf(buf, len, "%#llx", r->ret);
	if (n > 0 && (size_t)n < len && r->ret >= 0 && op->code == OP_COPY)
		snprintf(buf + n, len - n, " (pos in %#llx, out %#llx)",
			 r->aux[0], r->aux[1]);
	if (n > 0 && (size_t)n < len && r->ret >= 0 && op->code == OP_DEDUPE)
		snprintf(buf + n, len - n, " (status %lld, deduped %#llx)",
			 r->aux[0], r->aux[1]);
	return buf;
}

/* Copy the mapped range out; the caller made sure it is within EOF. */
static long long map_read(int fd, long long off, long long len,
			  unsigned char *buf)
{
	long long pg = off & ~(FSX_BLK - 1);
	size_t mlen = off + len - pg;
	struct stat st;
	void *p;

	if (!len)
		return 0;
	if (fstat(fd, &st))
		return -1;
	if (st.st_size < off + len) {
		errno = ENXIO;	/* a mapping would SIGBUS: the size is wrong */
		return -1;
	}
	p = mmap(NULL, mlen, PROT_READ, MAP_SHARED, fd, pg);
	if (p == MAP_FAILED)
		return -1;
	memcpy(buf, (char *)p + (off - pg), len);
	munmap(p, mlen);
	return len;
}

/* As fsx does: extend the file first, store through the mapping, msync. */
static long long map_write(int fd, long long off, long long len,
			   const unsigned char *data)
{
	long long pg = off & ~(FSX_BLK - 1);
	size_t mlen = off + len - pg;
	struct stat st;
	void *p;
	int err;

	if (!len)
		return 0;
	if (fstat(fd, &st))
		return -1;
	if (st.st_size < off + len && ftruncate(fd, off + len))
		return -1;
	if (fstat(fd, &st))
		return -1;
	if (st.st_size < off + len) {
		errno = ENXIO;
		return -1;
	}
	p = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, pg);
	if (p == MAP_FAILED)
		return -1;
	memcpy((char *)p + (off - pg), data, len);
	err = msync(p, mlen, MS_SYNC) ? errno : 0;
	munmap(p, mlen);
	if (err) {
		errno = err;
		return -1;
	}
	return len;
}

static int open_main(struct fsx *x, int s, int f, int direct)
{
	char path[PATH_MAX];

	ahfs_fmt(path, sizeof(path), "%s/%s", x->side[s].dir, file_name[f]);
	return open(path, O_RDWR | direct);
}

static void exec_op(struct fsx *x, int s, const struct fsx_op *op,
		    struct fsx_res *r)
{
	struct fsx_side *sd = &x->side[s];
	int fd = sd->fd[op->file];
	unsigned char *rb = x->rbuf[s] + op->mis;
	const unsigned char *wb = x->wbuf + op->mis;
	long long ret = -1;

	memset(r, 0, sizeof(*r));
	errno = 0;
	switch (op->code) {
	case OP_READ:
		ret = pread(fd, rb, op->len, op->off);
		break;
	case OP_DREAD:
		ret = pread(sd->dfd[op->file], rb, op->len, op->off);
		break;
	case OP_WRITE:
		ret = pwrite(fd, wb, op->len, op->off);
		break;
	case OP_DWRITE:
		ret = pwrite(sd->dfd[op->file], wb, op->len, op->off);
		break;
	case OP_MAPREAD:
		ret = map_read(fd, op->off, op->len, rb);
		break;
	case OP_MAPWRITE:
		ret = map_write(fd, op->off, op->len, wb);
		break;
	case OP_TRUNCATE:
		ret = ftruncate(fd, op->len);
		break;
	case OP_FALLOC:
		ret = fallocate(fd, op->mode, op->off, op->len);
		break;
	case OP_FSYNC:
		ret = fsync(fd);
		break;
	case OP_FDATASYNC:
		ret = fdatasync(fd);
		break;
	case OP_COPY: {
		loff_t pin = op->soff, pout = op->off;

		ret = copy_file_range(sd->fd[op->src], &pin, fd, &pout,
				      op->len, 0);
		r->aux[0] = pin;
		r->aux[1] = pout;
		break;
	}
	case OP_CLONE: {
		struct file_clone_range fcr = {
			.src_fd = sd->fd[op->src],
			.src_offset = op->soff,
			.src_length = op->len,
			.dest_offset = op->off,
		};

		ret = ioctl(fd, FICLONERANGE, &fcr);
		break;
	}
	case OP_DEDUPE: {
		struct {
			struct file_dedupe_range r;
			struct file_dedupe_range_info info;
		} d;

		memset(&d, 0, sizeof(d));
		d.r.src_offset = op->soff;
		d.r.src_length = op->len;
		d.r.dest_count = 1;
		d.info.dest_fd = fd;
		d.info.dest_offset = op->off;
		ret = ioctl(sd->fd[op->src], FIDEDUPERANGE, &d.r);
		r->aux[0] = d.info.status;
		r->aux[1] = d.info.bytes_deduped;
		break;
	}
	case OP_REOPEN:
		close(fd);
		sd->fd[op->file] = open_main(x, s, op->file, op->mode);
		ret = sd->fd[op->file] < 0 ? -1 : 0;
		break;
	case OP_SETFL:
		ret = fcntl(fd, F_SETFL, op->mode);
		break;
	}
	r->ret = ret < 0 ? -1 : ret;
	r->err = ret < 0 ? errno : 0;
}

static void set_size(struct fsx *x, int f, long long n)
{
	if (n < x->size[f])
		memset(x->model[f] + n, 0, x->size[f] - n);
	x->size[f] = n;
}

/* Data lands at [off, off + len) of file @f, from @src (may overlap). */
static int model_put(struct fsx *x, int f, long long off, const void *src,
		     long long len)
{
	if (len <= 0)
		return 0;
	if (off < 0 || off + len > FSX_CAP)
		return -1;
	memmove(x->model[f] + off, src, len);
	if (off + len > x->size[f])
		x->size[f] = off + len;
	return 0;
}

/*
 * What a POSIX file holds after @op returned @r.  Returns -1 if the result
 * is impossible for the model (a size past its buffer).
 */
static int model_apply(struct fsx *x, const struct fsx_op *op,
		       const struct fsx_res *r)
{
	int f = op->file;
	unsigned char *m = x->model[f];
	long long size = x->size[f], end = op->off + op->len, n;

	if (r->ret < 0)
		return 0;
	switch (op->code) {
	case OP_WRITE: case OP_DWRITE: case OP_MAPWRITE:
		return model_put(x, f, op->off, x->wbuf + op->mis, r->ret);
	case OP_TRUNCATE:
		if (op->len > FSX_CAP)
			return -1;
		set_size(x, f, op->len);
		break;
	case OP_FALLOC:
		if (end > FSX_CAP)
			return -1;
		switch (op->mode) {
		case 0:
			if (end > size)
				x->size[f] = end;
			break;
		case FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE:
		case FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE:
			if (op->off < size)
				memset(m + op->off, 0, min_ll(end, size) - op->off);
			break;
		case FALLOC_FL_ZERO_RANGE:
			if (op->off < size)
				memset(m + op->off, 0, min_ll(end, size) - op->off);
			if (end > size)
				x->size[f] = end;
			break;
		case FALLOC_FL_COLLAPSE_RANGE:
			if (end > size)
				return -1;
			memmove(m + op->off, m + end, size - end);
			set_size(x, f, size - op->len);
			break;
		case FALLOC_FL_INSERT_RANGE:
			if (op->off > size || size + op->len > FSX_CAP)
				return -1;
			memmove(m + end, m + op->off, size - op->off);
			memset(m + op->off, 0, op->len);
			x->size[f] = size + op->len;
			break;
		}
		break;
	case OP_COPY:
		if (r->ret > 0) {
			x->last_copy = *op;
			x->last_copy.len = r->ret;
			x->have_last_copy = 1;
		}
		return model_put(x, f, op->off, x->model[op->src] + op->soff,
				 r->ret);
	case OP_CLONE:
		n = op->len ? op->len : x->size[op->src] - op->soff;
		if (n > 0) {
			x->last_copy = *op;
			x->last_copy.len = n;
			x->have_last_copy = 1;
		}
		return model_put(x, f, op->off, x->model[op->src] + op->soff, n);
	case OP_REOPEN:
	case OP_SETFL:
		x->direct[f] = op->mode;
		break;
	}
	return 0;
}

static long long first_diff(const unsigned char *a, const unsigned char *b,
			    long long len)
{
	long long i;

	if (!memcmp(a, b, len))
		return -1;
	for (i = 0; i < len && a[i] == b[i]; i++)
		;
	return i;
}

/*
 * A write or copy that failed or came up short leaves the rest of its
 * destination range unspecified: the lower may have written some of it
 * (ext4's direct I/O with a misaligned buffer fails with EINVAL after
 * writing; a splice copy to an O_DIRECT file returns a short count with
 * more written).  Returns that range, empty if none.
 */
static void unspecified(struct fsx *x, const struct fsx_op *op,
			const struct fsx_res *r, long long *u0, long long *u1)
{
	long long eff = op->len, done = r->ret < 0 ? 0 : r->ret;

	*u0 = *u1 = 0;
	switch (op->code) {
	case OP_WRITE: case OP_DWRITE: case OP_MAPWRITE:
		break;
	case OP_COPY: case OP_CLONE:
		if (!eff || op->soff + eff > x->size[op->src])
			eff = max_ll(0, x->size[op->src] - op->soff);
		if (op->code == OP_CLONE)
			done = r->ret < 0 ? 0 : eff;
		break;
	default:
		return;
	}
	if (done < eff) {
		*u0 = op->off + done;
		*u1 = min_ll(op->off + eff, FSX_CAP);
	}
}

/*
 * Take the unspecified range [u0, u1) of file @f into the model from the
 * lower, if aheadfs holds the very same there.  Returns -1 if the two
 * sides differ.
 */
static int adopt(struct fsx *x, int f, long long u0, long long u1,
		 long long *where)
{
	unsigned char *a = x->cbuf, *b = x->cbuf + FSX_MAX;
	long long size[FSX_SIDES], n = u1 - u0, d, old = x->size[f];
	struct stat st;
	int s;

	*where = -1;
	for (s = 0; s < FSX_SIDES; s++) {
		if (fstat(x->side[s].cfd[f], &st))
			return -1;
		size[s] = st.st_size;
	}
	if (size[0] != size[1]) {
		*where = min_ll(size[0], size[1]);
		return -1;
	}
	/* The size may have grown into the range, no further. */
	if (size[0] < old || size[0] > max_ll(old, u1))
		return 0;
	n = min_ll(n, size[0] - u0);
	while (n > 0) {
		long long k = min_ll(n, FSX_MAX);

		if (pread(x->side[0].cfd[f], a, k, u0) != k ||
		    pread(x->side[1].cfd[f], b, k, u0) != k)
			return -1;
		d = first_diff(a, b, k);
		if (d >= 0) {
			*where = u0 + d;
			return -1;
		}
		if (first_diff(a, x->model[f] + u0, k) >= 0 || size[0] != old)
			x->adopted++;
		memcpy(x->model[f] + u0, a, k);
		u0 += k;
		n -= k;
	}
	x->size[f] = size[0];
	return 0;
}

struct fsx_view {
	long long size;		/* st_size, or -1 */
	long long diff;		/* first offset that differs from the model, or -1 */
	int got, want;		/* the bytes there (-1: past that side's EOF) */
	int err;
};

/*
 * Compare file @f as seen by view @v (a side, or the aheadfs lower) to the
 * model: its size, and its bytes in [r0, r1).
 */
static int view_check(struct fsx *x, int f, int v, long long r0, long long r1,
		      struct fsx_view *vw)
{
	char path[PATH_MAX];
	long long size = x->size[f], n, lim, d;
	struct stat st;
	ssize_t got;
	int fd;

	memset(vw, 0, sizeof(*vw));
	vw->diff = -1;
	if (v < FSX_SIDES) {
		fd = x->side[v].cfd[f];
	} else {
		fd = open(ahfs_fmt(path, sizeof(path), "%s/%s", x->view2,
				   file_name[f]), O_RDONLY);
		if (fd < 0) {
			vw->err = errno;
			vw->size = -1;
			vw->diff = 0;
			return -1;
		}
	}
	if (fstat(fd, &st)) {
		vw->err = errno;
		vw->size = -1;
		vw->diff = 0;
		goto out;
	}
	vw->size = st.st_size;
	lim = min_ll(min_ll(st.st_size, FSX_CAP), max_ll(r1, 0));
	r0 = max_ll(r0, 0);
	for (n = r0; n < lim; n += got) {
		got = pread(fd, x->cbuf + n, lim - n, n);
		if (got <= 0) {
			vw->err = got < 0 ? errno : 0;
			break;
		}
	}
	/* Content where both have it; then the size. */
	d = n > r0 ? first_diff(x->cbuf + r0, x->model[f] + r0,
				min_ll(n, size) - r0) : -1;
	if (d >= 0)
		d += r0;
	else if (st.st_size != size)
		d = min_ll(st.st_size, size);
	else if (n < min_ll(lim, size))
		d = n;	/* a short read */
	vw->diff = d;
	if (d >= 0) {
		vw->got = d < n && d >= r0 ? x->cbuf[d] : -1;
		vw->want = d < size ? x->model[f][d] : -1;
	}
out:
	if (v >= FSX_SIDES)
		close(fd);
	return vw->diff < 0 ? 0 : -1;
}

/* The bytes of its destination @op may change: [*t0, *t1), before it runs. */
static void touched(struct fsx *x, const struct fsx_op *op, long long *t0,
		    long long *t1)
{
	long long size = x->size[op->file], end = op->off + op->len, eff;

	*t0 = *t1 = 0;
	switch (op->code) {
	case OP_WRITE: case OP_DWRITE: case OP_MAPWRITE:
		*t0 = min_ll(op->off, size);
		*t1 = end;
		break;
	case OP_TRUNCATE:
		*t0 = min_ll(size, op->len);
		*t1 = max_ll(size, op->len);
		break;
	case OP_FALLOC:
		*t0 = min_ll(op->off, size);
		*t1 = op->mode == FALLOC_FL_COLLAPSE_RANGE ||
		      op->mode == FALLOC_FL_INSERT_RANGE ? FSX_CAP :
		      max_ll(end, size);
		break;
	case OP_COPY: case OP_CLONE: case OP_DEDUPE:
		eff = op->len;
		if (!eff || op->soff + eff > x->size[op->src])
			eff = max_ll(0, x->size[op->src] - op->soff);
		*t0 = min_ll(op->off, size);
		*t1 = op->off + max_ll(eff, op->len);
		break;
	}
	*t1 = min_ll(*t1, FSX_CAP);
}

static void report_views(struct fsx *x)
{
	struct fsx_view vw;
	int f, v;

	for (f = 0; f < FSX_FILES; f++) {
		for (v = 0; v < x->nviews; v++) {
			if (!view_check(x, f, v, 0, FSX_CAP, &vw)) {
				fsx_msg("  file %s, %s: size %#llx, equals the model",
					file_name[f], view_name[v], vw.size);
				continue;
			}
			fsx_msg("  file %s, %s: size %#llx (model %#llx), first difference at %#llx: %#x, model %#x%s%s",
				file_name[f], view_name[v], vw.size, x->size[f],
				vw.diff, vw.got, vw.want,
				vw.err ? ", error " : "",
				vw.err ? errname(vw.err) : "");
		}
	}
}

static const char *kernel_release(void)
{
	static struct utsname u;

	return uname(&u) ? "?" : u.release;
}

static void fsx_fail(struct fsx *x, const struct fsx_op *op,
		     const struct fsx_res res[FSX_SIDES], const int direct[FSX_FILES],
		     const long long size[FSX_FILES], const char *why)
{
	char o[320], r0[128], r1[128];
	int i;

	fsx_msg("fsx FAILED: %s", why);
	fsx_msg("%s on %s, op %ld of %ld: %s", x->what, ahfs_fstype(), x->n,
		x->nops, op_str(op, direct, size, o, sizeof(o)));
	fsx_msg("  lower:   %s", res_str(op, &res[0], r0, sizeof(r0)));
	fsx_msg("  aheadfs: %s", res_str(op, &res[1], r1, sizeof(r1)));
	fsx_msg("files now, against the model (after the op if both sides agreed):");
	report_views(x);
	if (!x->scripted)
		fsx_msg("replay: scripts/vm-run --kernel %s -- env AHEADFS_FSX_SEED=%#llx AHEADFS_FSX_OPS=%ld scripts/guest-run --only fsx --no-stress --fstypes %s",
			kernel_release(), x->seed, x->n, ahfs_fstype());
	fsx_msg("the last %d ops (op: operation {sizes before}: lower | aheadfs):",
		(int)min_ll(x->n, FSX_LOG));
	for (i = (int)min_ll(x->n, FSX_LOG); i > 0; i--) {
		const struct fsx_logent *e = &x->log[(x->n - i) % FSX_LOG];

		fsx_msg("  %5ld: %s: %s | %s", e->n,
			op_str(&e->op, e->direct, e->size, o, sizeof(o)),
			res_str(&e->op, &e->res[0], r0, sizeof(r0)),
			res_str(&e->op, &e->res[1], r1, sizeof(r1)));
	}
}

static int same_res(const struct fsx_res *a, const struct fsx_res *b)
{
	return a->ret == b->ret && a->err == b->err &&
	       (a->ret < 0 || (a->aux[0] == b->aux[0] && a->aux[1] == b->aux[1]));
}

static int reads(int code)
{
	return code == OP_READ || code == OP_DREAD || code == OP_MAPREAD;
}

static int writes(int code)
{
	return code == OP_WRITE || code == OP_DWRITE || code == OP_MAPWRITE;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Written extents in [off, off + len) of @fd after a sync: 0 if all hole
 * (or unwritten), -1 on error.  An O_DIRECT read takes an unwritten extent
 * for a hole: iomap_dio_iter() reads it with iomap_dio_hole_iter(), which
 * zeroes the buffer without the alignment checks of iomap_dio_bio_iter().
 */
static int extents(int fd, long long off, long long len)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ext[32];
	} f;
	const struct fiemap_extent *e;
	long long end = off + len;
	unsigned int i;
	int n = 0;

	while (off < end) {
		memset(&f, 0, sizeof(f));
		f.fm.fm_start = off;
		f.fm.fm_length = end - off;
		f.fm.fm_flags = FIEMAP_FLAG_SYNC;
		f.fm.fm_extent_count = ARRAY_LEN(f.ext);
		if (ioctl(fd, FS_IOC_FIEMAP, &f.fm))
			return -1;
		if (!f.fm.fm_mapped_extents)
			break;
		for (i = 0; i < f.fm.fm_mapped_extents; i++) {
			e = &f.ext[i];
			if (!(e->fe_flags & FIEMAP_EXTENT_UNWRITTEN))
				n++;
			off = e->fe_flags & FIEMAP_EXTENT_LAST ? end :
			      (long long)(e->fe_logical + e->fe_length);
		}
	}
	return n;
}

/*
 * An unaligned O_DIRECT read (a pread, or the source of a copy) is refused
 * with EINVAL by iomap only where the range is written: over a hole or an
 * unwritten extent it reads zeroes and succeeds.  The two sides' files hold
 * the same bytes but not always the same blocks (aheadfs's copy keeps holes
 * that the lower's splice copy fills with zeroes; a later fallocate or
 * ZERO_RANGE makes unwritten extents of the one and leaves the other
 * written), so there their answers may differ.  Returns the side that
 * succeeded when that explains a difference (its range all hole or
 * unwritten, the other side's not), else -1.
 */
static int layout_split(struct fsx *x, const struct fsx_op *op,
			const struct fsx_res res[FSX_SIDES])
{
	long long off, len, a0, a1;
	int ok, f, direct;

	if ((res[0].ret >= 0) == (res[1].ret >= 0))
		return -1;
	ok = res[0].ret >= 0 ? 0 : 1;
	if (res[!ok].err != EINVAL)
		return -1;
	switch (op->code) {
	case OP_DREAD:
	case OP_READ:
		f = op->file;
		direct = op->code == OP_DREAD || x->direct[f];
		off = op->off;
		len = op->len;
		break;
	case OP_COPY:
		f = op->src;
		direct = x->direct[f];
		off = op->soff;
		len = op->len;
		break;
	default:
		return -1;
	}
	len = min_ll(len, x->size[f] - off);
	if (!direct || len <= 0 || !((off | len | op->mis) & 511))
		return -1;
	/*
	 * A copy reads its source through a pipe, a pipe's worth (64 KiB) at
	 * a time, and stops at the first piece that fails: a copy that
	 * succeeded over a hole may have stopped short at data, with the
	 * count of the pieces before.  What it copied is what must be a hole
	 * on its side and hold data on the other.
	 */
	if (op->code == OP_COPY && res[ok].ret > 0 && res[ok].ret < len)
		len = res[ok].ret;
	a0 = off & ~511LL;
	a1 = (off + len + 511) & ~511LL;
	if (extents(x->side[ok].cfd[f], a0, a1 - a0) != 0 ||
	    extents(x->side[!ok].cfd[f], a0, a1 - a0) <= 0)
		return -1;
	return ok;
}

/*
 * A write past EOF that both sides refused (an unaligned O_DIRECT write:
 * EINVAL) may still have grown one of them: xfs zeroes from EOF towards the
 * write's offset before iomap checks the buffer (xfs_file_write_checks()),
 * and where the EOF block is mapped that zeroing writes the rest of the
 * block and moves i_size to its end; over a hole or an unwritten extent it
 * writes nothing.  The two sides hold the same bytes but not always the
 * same blocks (aheadfs's copy keeps holes the lower's splice copy fills,
 * layout_split()), so one may grow and the other not.  When that is all
 * that happened (one side at the model's size, the other grown to no
 * further than the end of the EOF block and below the write, with zeroes),
 * the smaller side is extended to the same size, as the zeroing did the
 * other, and the model follows.  Returns 0 then, or when nothing grew; -1
 * for any other difference, which the checks report.
 */
static int eof_zeroing(struct fsx *x, const struct fsx_op *op,
		       const struct fsx_res *r)
{
	long long old, size[FSX_SIDES], blk = 4096, big, n;
	unsigned char *a = x->cbuf;
	int s, f = op->file, grown;
	struct stat st;

	if (!writes(op->code) || op->code == OP_MAPWRITE || r->ret >= 0)
		return 0;
	old = x->size[f];
	if (op->off <= old)
		return 0;
	for (s = 0; s < FSX_SIDES; s++) {
		if (fstat(x->side[s].cfd[f], &st))
			return -1;
		size[s] = st.st_size;
		blk = st.st_blksize > 0 ? st.st_blksize : 4096;
	}
	if (size[0] == size[1])
		return 0;
	grown = size[0] > size[1] ? 0 : 1;
	big = size[grown];
	if (size[!grown] != old ||
	    big > min_ll((old + blk - 1) / blk * blk, op->off))
		return -1;
	n = big - old;
	if (pread(x->side[grown].cfd[f], a, n, old) != n)
		return -1;
	for (s = 0; s < n; s++)
		if (a[s])
			return -1;
	/* The main fd: the check fds are read-only. */
	if (ftruncate(x->side[!grown].fd[f], big))
		return -1;
	memset(x->model[f] + old, 0, n);
	x->size[f] = big;
	x->eof_zeroed++;
	if (x->verbose)
		fsx_msg("%5ld: a refused write past EOF grew the %s side's file to %#llx (its EOF block zeroed): the other side extended to match",
			x->n, view_name[grown], big);
	return 0;
}

/*
 * Copy on side @s from *pin to *pout until *pin reaches @end, as a caller of
 * copy_file_range would after a short count: on the main fds, or with
 * @buffered on buffered ones.  Returns 0 when it got there, else -1 (errno
 * from the copy that failed, or 0 for a copy that returned 0).
 */
static int copy_more(struct fsx *x, int s, const struct fsx_op *op,
		     int buffered, loff_t *pin, loff_t *pout, loff_t end)
{
	int in, out, ret = 0;
	ssize_t n;

	if (buffered) {
		in = open_main(x, s, op->src, 0);
		out = op->src == op->file ? in : open_main(x, s, op->file, 0);
	} else {
		in = x->side[s].fd[op->src];
		out = x->side[s].fd[op->file];
	}
	while (!ret && *pin < end) {
		errno = 0;
		n = copy_file_range(in, pin, out, pout, end - *pin, 0);
		if (n <= 0)
			ret = -1;
	}
	if (buffered) {
		n = errno;
		if (out != in && out >= 0)
			close(out);
		if (in >= 0)
			close(in);
		errno = n;
	}
	return ret;
}

/*
 * A splice copy to or from an O_DIRECT file stops where one pass of its
 * pipe meets an I/O the file refuses (a length that is not a multiple of
 * the sector size, an unaligned read of mapped blocks); where that falls
 * depends on how much of the source each pass took, which depends on the
 * sizes of the source's folios in the page cache, not only on the request:
 * the same copy on two files with the same bytes may count differently, on
 * the lower alone as through aheadfs.  When both succeeded with different
 * counts, the side that copied less continues as a caller of
 * copy_file_range would, from where it stopped to where the other side
 * did; the two must then agree.  Where that fails with EINVAL reading an
 * O_DIRECT source whose rest is a hole on the other side and mapped on this
 * one (the layouts differ, see layout_split()), it continues on buffered
 * fds.  Returns 0 if the sides now agree, -1 if not (results as they were).
 */
static int copy_level(struct fsx *x, const struct fsx_op *op,
		      struct fsx_res res[FSX_SIDES])
{
	struct fsx_res *lo, *hi;
	loff_t pin, pout, a0, a1;
	int s;

	if (op->code != OP_COPY || res[0].ret <= 0 || res[1].ret <= 0 ||
	    res[0].ret == res[1].ret ||
	    !(x->direct[op->src] || x->direct[op->file]))
		return -1;
	s = res[0].ret < res[1].ret ? 0 : 1;
	lo = &res[s];
	hi = &res[!s];
	pin = lo->aux[0];
	pout = lo->aux[1];
	if (!copy_more(x, s, op, 0, &pin, &pout, hi->aux[0])) {
		x->continued++;
	} else {
		if (!x->direct[op->src] || errno != EINVAL)
			return -1;
		a0 = pin & ~511LL;
		a1 = (hi->aux[0] + 511) & ~511LL;
		if (extents(x->side[!s].cfd[op->src], a0, a1 - a0) != 0 ||
		    extents(x->side[s].cfd[op->src], a0, a1 - a0) <= 0 ||
		    copy_more(x, s, op, 1, &pin, &pout, hi->aux[0]))
			return -1;
		x->layout++;
	}
	if (pin != hi->aux[0] || pout != hi->aux[1])
		return -1;
	if (x->verbose)
		fsx_msg("%5ld: the %s side's copy was shorter; continued to the other's count",
			x->n, view_name[s]);
	*lo = *hi;
	return 0;
}

/*
 * The copy that failed on side @s, again on buffered fds of that side, for
 * @len bytes (what the other side's copy did: all of it, or the pieces
 * before one that failed there too).
 */
static void copy_buffered(struct fsx *x, int s, const struct fsx_op *op,
			  long long len, struct fsx_res *r)
{
	int in = open_main(x, s, op->src, 0);
	int out = op->src == op->file ? in : open_main(x, s, op->file, 0);
	loff_t pin = op->soff, pout = op->off;

	memset(r, 0, sizeof(*r));
	r->ret = copy_file_range(in, &pin, out, &pout, len, 0);
	r->err = r->ret < 0 ? errno : 0;
	r->aux[0] = pin;
	r->aux[1] = pout;
	if (out != in && out >= 0)
		close(out);
	if (in >= 0)
		close(in);
}

/* One operation on both sides, in lock step, and the checks after it. */
static int fsx_step1(struct fsx *x, const struct fsx_op *op)
{
	struct fsx_logent *e = &x->log[x->n % FSX_LOG];
	struct fsx_res *res = e->res;
	char why[256], o[320], r0[128];
	struct fsx_view vw[FSX_SIDES];
	long long want, d[FSX_SIDES], u0, u1, t0, t1;
	const struct fsx_res *r;
	int s, f, v, full, bad, ok;
	double t;

	x->n++;
	e->n = x->n;
	e->op = *op;
	memcpy(e->size, x->size, sizeof(e->size));
	memcpy(e->direct, x->direct, sizeof(e->direct));
	if (writes(op->code))
		fill(x->wbuf + op->mis, op->off, op->len, x->n);
	t = now();
	for (s = 0; s < FSX_SIDES; s++)
		exec_op(x, s, op, &res[s]);
	x->tc = now();
	x->t_ops += x->tc - t;
	if (x->verbose)
		fsx_msg("%5ld: %s: %s | %s", x->n,
			op_str(op, e->direct, e->size, o, sizeof(o)),
			res_str(op, &res[0], r0, sizeof(r0)),
			res_str(op, &res[1], why, sizeof(why)));
	x->count[op->code]++;
	if (res[0].ret >= 0)
		x->ok[op->code]++;

	if (!same_res(&res[0], &res[1]))
		copy_level(x, op, res);
	ok = same_res(&res[0], &res[1]) ? 0 : layout_split(x, op, res);
	if (ok < 0) {
		fsx_fail(x, op, res, e->direct, e->size,
			 "the lower and aheadfs returned different results");
		return -1;
	}
	r = &res[ok];
	if (!same_res(&res[0], &res[1])) {
		x->layout++;
		if (x->verbose)
			fsx_msg("%5ld: the range is a hole on the %s side only: its unaligned O_DIRECT read succeeded there",
				x->n, view_name[ok]);
		if (op->code == OP_COPY) {
			struct fsx_res again;

			copy_buffered(x, !ok, op,
				      r->ret < op->len ? r->ret : op->len,
				      &again);
			if (!same_res(&again, r)) {
				snprintf(why, sizeof(why),
					 "an unaligned O_DIRECT copy failed on the %s side only (its source range is mapped there, a hole on the other), and the same copy on buffered fds there gives %s",
					 view_name[!ok],
					 res_str(op, &again, r0, sizeof(r0)));
				fsx_fail(x, op, res, e->direct, e->size, why);
				return -1;
			}
		}
	}
	if (eof_zeroing(x, op, r)) {
		fsx_fail(x, op, res, e->direct, e->size,
			 "a write refused on both sides changed the files' sizes differently");
		return -1;
	}
	if ((op->code == OP_REOPEN && r->ret < 0) ||
	    (op->want != FSX_ANY && r->ret != op->want)) {
		snprintf(why, sizeof(why), op->want != FSX_ANY ?
			 "both sides returned the same, but not %#llx: the test's premise is wrong on this kernel or lower" :
			 "reopen failed on both sides", op->want);
		fsx_fail(x, op, res, e->direct, e->size, why);
		return -1;
	}

	if (reads(op->code) && r->ret >= 0) {
		f = op->file;
		want = op->off >= x->size[f] ? 0 :
		       min_ll(op->len, x->size[f] - op->off);
		for (s = 0; s < FSX_SIDES; s++)
			d[s] = res[s].ret < 0 ? -1 :
			       first_diff(x->rbuf[s] + op->mis,
					  x->model[f] + op->off, res[s].ret);
		if (d[0] >= 0 || d[1] >= 0 || r->ret != want) {
			snprintf(why, sizeof(why),
				 "read data or count differs from the model (%#llx bytes expected): first difference from the lower at %#llx, from aheadfs at %#llx (file offsets, -1: none)%s",
				 want, d[0] < 0 ? -1 : op->off + d[0],
				 d[1] < 0 ? -1 : op->off + d[1],
				 d[0] == d[1] ?
				 "; both sides agree: a model bug?" : "");
			fsx_fail(x, op, res, e->direct, e->size, why);
			return -1;
		}
	}

	touched(x, op, &t0, &t1);
	unspecified(x, op, r, &u0, &u1);
	if (model_apply(x, op, r)) {
		fsx_fail(x, op, res, e->direct, e->size,
			 "the result takes a file past the model's bound (test bug)");
		return -1;
	}
	if (u1 > u0 && adopt(x, op->file, u0, u1, &d[0])) {
		snprintf(why, sizeof(why),
			 "after a failed or short op, the lower and aheadfs hold different data (or sizes) in its range, at %#llx",
			 d[0]);
		fsx_fail(x, op, res, e->direct, e->size, why);
		return -1;
	}

	/*
	 * Every file's size on both sides, and the bytes the op may have
	 * changed; every byte of every file (and of the aheadfs lower)
	 * every x->full ops.
	 */
	full = x->scripted || x->full <= 1 || x->n % x->full == 0 ||
	       x->n == x->nops;
	for (f = 0; f < FSX_FILES; f++) {
		long long r0 = full ? 0 : f == op->file ? t0 : 0;
		long long r1 = full ? FSX_CAP : f == op->file ? t1 : 0;

		bad = 0;
		for (v = 0; v < FSX_SIDES; v++)
			bad |= view_check(x, f, v, r0, r1, &vw[v]) ? 1 << v : 0;
		if (!bad && full && x->nviews > FSX_SIDES) {
			struct fsx_view lv;

			if (view_check(x, f, FSX_SIDES, 0, FSX_CAP, &lv)) {
				snprintf(why, sizeof(why),
					 "file %s: aheadfs's lower file differs from the model at %#llx, though aheadfs reads it right",
					 file_name[f], lv.diff);
				fsx_fail(x, op, res, e->direct, e->size, why);
				return -1;
			}
		}
		if (!bad)
			continue;
		snprintf(why, sizeof(why),
			 "file %s differs from the model after the op: %s%s%s",
			 file_name[f],
			 bad == 3 ? "on both sides" : bad == 1 ? "on the lower only" :
			 "through aheadfs only",
			 bad == 3 && vw[0].diff == vw[1].diff &&
			 vw[0].size == vw[1].size ?
			 " (the same way: a model bug, or the lower's own behaviour)" :
			 bad == 2 ? " (an aheadfs bug)" : "",
			 full && !(f == op->file && vw[0].diff >= t0 && vw[0].diff < t1) &&
			 !(f == op->file && vw[1].diff >= t0 && vw[1].diff < t1) ?
			 "; found by a full check, outside what this op touched: AHEADFS_FSX_FULL=1 checks all after every op" : "");
		fsx_fail(x, op, res, e->direct, e->size, why);
		return -1;
	}
	return 0;
}

static int fsx_step(struct fsx *x, const struct fsx_op *op)
{
	int err = fsx_step1(x, op);

	x->t_checks += now() - x->tc;
	return err;
}

static void fsx_close(struct fsx *x)
{
	int s, f;

	for (s = 0; s < FSX_SIDES; s++)
		for (f = 0; f < FSX_FILES; f++) {
			if (x->side[s].fd[f] >= 0)
				close(x->side[s].fd[f]);
			if (x->side[s].dfd[f] >= 0)
				close(x->side[s].dfd[f]);
			if (x->side[s].cfd[f] >= 0)
				close(x->side[s].cfd[f]);
			x->side[s].fd[f] = x->side[s].dfd[f] = x->side[s].cfd[f] = -1;
		}
	for (f = 0; f < FSX_FILES; f++)
		free(x->model[f]);
	free(x->wbuf);
	free(x->rbuf[0]);
	free(x->rbuf[1]);
	free(x->cbuf);
	memset(x, 0, sizeof(*x));
}

static long env_long(const char *name, long dflt)
{
	const char *s = getenv(name);

	return s && *s ? strtol(s, NULL, 0) : dflt;
}

static int selfcheck(void)
{
	const char *s = getenv("AHEADFS_FSX_SELFCHECK");

	return s && *s && strcmp(s, "0");
}

/*
 * Empty files a and b on both sides: side 0 in "direct", a sibling of the
 * mount's lower directory; side 1 through the mount.  Returns 0 or -errno.
 */
static int fsx_open(struct fsx *x, struct ahfs *fs, const char *what)
{
	char path[PATH_MAX];
	const char *env;
	int s, f, i;

	memset(x, 0, sizeof(*x));
	for (s = 0; s < FSX_SIDES; s++)
		for (f = 0; f < FSX_FILES; f++)
			x->side[s].fd[f] = x->side[s].dfd[f] = x->side[s].cfd[f] = -1;
	x->what = what;
	env = getenv("AHEADFS_FSX_VERBOSE");
	x->verbose = env && *env && strcmp(env, "0");
	x->full = env_long("AHEADFS_FSX_FULL", FSX_FULL);
	env = getenv("AHEADFS_FSX_NO");
	for (i = 0; i < OP_NR; i++) {
		const char *k = env ? strstr(env, op_info[i].key) : NULL;
		size_t kl = strlen(op_info[i].key);

		/* whole words of a comma-separated list */
		while (k && !((k == env || k[-1] == ',') &&
			      (k[kl] == ',' || !k[kl])))
			k = strstr(k + 1, op_info[i].key);
		x->weight[i] = k ? 0 : op_info[i].weight;
	}
	ahfs_fmt(x->side[0].dir, PATH_MAX, "%s/direct", fs->base);
	if (mkdir(x->side[0].dir, 0755) && errno != EEXIST)
		return -errno;
	if (selfcheck()) {
		ahfs_fmt(x->side[1].dir, PATH_MAX, "%s", fs->lower);
		x->nviews = FSX_SIDES;
	} else {
		ahfs_fmt(x->side[1].dir, PATH_MAX, "%s", fs->mnt);
		ahfs_fmt(x->view2, PATH_MAX, "%s", fs->lower);
		x->nviews = FSX_SIDES + 1;
	}
	for (f = 0; f < FSX_FILES; f++) {
		x->model[f] = calloc(1, FSX_CAP);
		if (!x->model[f])
			return -ENOMEM;
	}
	if (posix_memalign((void **)&x->wbuf, FSX_BLK, FSX_MAX + 2 * FSX_BLK) ||
	    posix_memalign((void **)&x->rbuf[0], FSX_BLK, FSX_MAX + 2 * FSX_BLK) ||
	    posix_memalign((void **)&x->rbuf[1], FSX_BLK, FSX_MAX + 2 * FSX_BLK) ||
	    posix_memalign((void **)&x->cbuf, FSX_BLK, FSX_CAP + FSX_BLK))
		return -ENOMEM;
	for (s = 0; s < FSX_SIDES; s++) {
		for (f = 0; f < FSX_FILES; f++) {
			ahfs_fmt(path, sizeof(path), "%s/%s", x->side[s].dir,
				 file_name[f]);
			i = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
			if (i < 0)
				return -errno;
			x->side[s].fd[f] = i;
			x->side[s].dfd[f] = open(path, O_RDWR | O_DIRECT);
			x->side[s].cfd[f] = open(path, O_RDONLY);
			if (x->side[s].dfd[f] < 0 || x->side[s].cfd[f] < 0)
				return -errno;
		}
	}
	return 0;
}

static void fsx_summary(struct fsx *x, double secs)
{
	char line[1536];
	int i, n = 0;

	line[0] = 0;
	for (i = 0; i < OP_NR; i++)
		if (x->count[i])
			n += snprintf(line + n, sizeof(line) - n, "%s%s %ld/%ld",
				      n ? ", " : "", op_info[i].name, x->ok[i],
				      x->count[i]);
	fsx_msg("%s on %s: %ld ops in %.1f s (%.1f s in the ops, %.1f s checking); succeeded/run: %s",
		x->what, ahfs_fstype(), x->n, secs, x->t_ops, x->t_checks,
		line);
	if (x->adopted || x->layout || x->continued || x->eof_zeroed)
		fsx_msg("%s: %ld unspecified ranges of failed or short writes and copies taken from the lower; %ld unaligned O_DIRECT reads that succeeded over a hole on one side only; %ld short O_DIRECT copies continued on one side; %ld refused writes past EOF that grew one side's EOF block",
			x->what, x->adopted, x->layout, x->continued,
			x->eof_zeroed);
}

#define FSX_TOLERATED_PCT	5

/* @nops random operations from @seed; 0 when both sides matched the model throughout. */
static int fsx_run(struct ahfs *fs, unsigned long long seed)
{
	struct fsx *x = calloc(1, sizeof(*x));
	char what[64];
	struct fsx_op op;
	double t0 = now();
	int err;

	if (!x)
		return -1;
	snprintf(what, sizeof(what), "seed %#llx", seed);
	err = fsx_open(x, fs, what);
	if (err) {
		fsx_msg("fsx: setting up the files: %s", strerror(-err));
		fsx_close(x);
		free(x);
		return -1;
	}
	x->seed = x->rng = seed;
	x->nops = env_long("AHEADFS_FSX_OPS", FSX_OPS);
	while (!err && x->n < x->nops) {
		gen_op(x, &op);
		err = fsx_step(x, &op);
	}
	fsx_summary(x, now() - t0);
	/*
	 * The tolerances (layout_split(), copy_level(), eof_zeroing()) are
	 * each conditioned on the blocks of both sides; bounded as well, so that
	 * a systematic difference cannot hide behind them: a random run may
	 * use each for at most FSX_TOLERATED_PCT of its operations.
	 */
	if (!err && (x->layout * 100 > x->n * FSX_TOLERATED_PCT ||
		     x->continued * 100 > x->n * FSX_TOLERATED_PCT ||
		     x->eof_zeroed * 100 > x->n * FSX_TOLERATED_PCT)) {
		fsx_msg("%s: answers told apart by the blocks (%ld), short O_DIRECT copies continued (%ld) or refused writes that grew one side (%ld) in more than %d%% of %ld ops: not a layout difference any more",
			what, x->layout, x->continued, x->eof_zeroed,
			FSX_TOLERATED_PCT, x->n);
		err = -1;
	}
	fsx_close(x);
	free(x);
	return err;
}

static int fsx_script(struct ahfs *fs, const char *name,
		      const struct fsx_op *ops, int nops)
{
	struct fsx *x = calloc(1, sizeof(*x));
	int i, err;

	if (!x)
		return -1;
	err = fsx_open(x, fs, name);
	if (err) {
		fsx_msg("fsx: setting up the files: %s", strerror(-err));
		fsx_close(x);
		free(x);
		return -1;
	}
	x->scripted = 1;
	x->nops = nops;
	for (i = 0; !err && i < nops; i++)
		err = fsx_step(x, &ops[i]);
	if (!err)
		fsx_summary(x, 0);
	fsx_close(x);
	free(x);
	return err;
}

FIXTURE(fsx) {
	struct ahfs fs;
};

FIXTURE_SETUP(fsx)
{
	ASSERT_EQ(0, ahfs_setup(&self->fs, "fsx", selfcheck() ? NULL : ""));
}

FIXTURE_TEARDOWN(fsx)
{
	ahfs_teardown(&self->fs);
}

/* Script steps: the result both sides must give, or FSX_ANY. */
#define S_REOPEN(f, m)		{ .code = OP_REOPEN, .file = f, .src = f, .mode = m, .want = 0 }
#define S_DWRITE(f, o, l)	{ .code = OP_DWRITE, .file = f, .src = f, .off = o, .len = l, .want = l }
#define S_TRUNC(f, l)		{ .code = OP_TRUNCATE, .file = f, .src = f, .len = l, .want = 0 }
#define S_COPY(s, so, l, f, o, w) \
	{ .code = OP_COPY, .src = s, .soff = so, .len = l, .file = f, .off = o, .want = w }
#define S_READ(f, o, l)		{ .code = OP_READ, .file = f, .src = f, .off = o, .len = l, .want = FSX_ANY }
#define S_WRITE(f, o, l)	{ .code = OP_WRITE, .file = f, .src = f, .off = o, .len = l, .want = l }
#define S_SETFL(f, m)		{ .code = OP_SETFL, .file = f, .src = f, .mode = m, .want = 0 }

/*
 * The reported failure: on an fd opened O_DIRECT, after truncates, a copy
 * of a hole (0x15000-0x23000) onto the same file past its EOF (0x62e00).
 * The lower copies all of it; so must aheadfs.
 */
TEST_F_TIMEOUT(fsx, reported_hole_to_past_eof_odirect, 120)
{
	static const struct fsx_op ops[] = {
		S_REOPEN(0, O_DIRECT),
		S_DWRITE(0, 0, 0x10000),
		S_TRUNC(0, 0x40000),
		S_TRUNC(0, 0x30000),
		S_COPY(0, 0x15000, 0xe000, 0, 0x62e00, 0xe000),
		S_READ(0, 0x60000, 0x20000),
	};

	ASSERT_EQ(0, fsx_script(&self->fs, "reported: hole to past EOF, O_DIRECT",
				ops, ARRAY_LEN(ops)));
}

/* The second report: 0x0-0x1000 (a hole after a truncate) to 0x20200. */
TEST_F_TIMEOUT(fsx, reported_after_truncate_odirect, 120)
{
	static const struct fsx_op ops[] = {
		S_REOPEN(0, O_DIRECT),
		S_DWRITE(0, 0, 0x8000),
		S_TRUNC(0, 0),
		S_TRUNC(0, 0x10000),
		S_COPY(0, 0x0, 0x1000, 0, 0x20200, 0x1000),
		S_READ(0, 0, 0x30000),
	};

	ASSERT_EQ(0, fsx_script(&self->fs, "reported: after a truncate, O_DIRECT",
				ops, ARRAY_LEN(ops)));
}

/*
 * Seed 0x660f5f8268d5b on 6.1's xfs: an unaligned copy of a hole leaves the
 * destination's first block a hole through aheadfs (its chunked copy keeps
 * holes, and writes the copy's last byte, two blocks on) and written with
 * zeroes on the lower (its splice copy), a truncate makes that block the
 * EOF block, and an unaligned O_DIRECT write past EOF, refused with EINVAL
 * on both sides, has xfs zero the rest of a mapped EOF block first: the
 * lower's file grows to 0x1000, aheadfs's stays.  Both hold the same bytes
 * (eof_zeroing()); on ext4 nothing grows.
 */
TEST_F_TIMEOUT(fsx, refused_write_past_eof_zeroes_one_side, 120)
{
	static const struct fsx_op ops[] = {
		S_TRUNC(0, 0x10000),
		S_COPY(0, 0x100, 0x2100, 1, 0x0, 0x2100),
		S_TRUNC(1, 0x64c),
		S_REOPEN(1, O_DIRECT),
		{ .code = OP_DWRITE, .file = 1, .src = 1, .off = 0x20000,
		  .len = 0x3000, .mis = 1801, .want = -1 },
		S_READ(1, 0, 0x2000),
	};

	ASSERT_EQ(0, fsx_script(&self->fs, "a refused write past EOF zeroes one side's EOF block",
				ops, ARRAY_LEN(ops)));
}

/* Neighbours of the report: data then a hole, and from one file to another. */
TEST_F_TIMEOUT(fsx, odirect_copy_variants, 120)
{
	static const struct fsx_op ops[] = {
		S_REOPEN(0, O_DIRECT),
		S_REOPEN(1, O_DIRECT),
		S_DWRITE(0, 0, 0x8000),
		S_TRUNC(0, 0x20000),
		/* data, aligned, to another file's EOF */
		S_COPY(0, 0x0, 0x8000, 1, 0x0, 0x8000),
		/* data then a hole, past the same file's EOF */
		S_COPY(0, 0x4000, 0x10000, 0, 0x40000, 0x10000),
		/* a hole to past another file's EOF, 512-aligned */
		S_COPY(0, 0x10000, 0x8000, 1, 0x10200, 0x8000),
		/* a hole under existing data */
		S_COPY(0, 0x18000, 0x4000, 1, 0x0, 0x4000),
	};

	ASSERT_EQ(0, fsx_script(&self->fs, "O_DIRECT copy variants", ops,
				ARRAY_LEN(ops)));
}

/* The same copies on buffered fds. */
TEST_F_TIMEOUT(fsx, buffered_copy_variants, 120)
{
	static const struct fsx_op ops[] = {
		S_DWRITE(0, 0, 0x10000),
		S_TRUNC(0, 0x40000),
		S_TRUNC(0, 0x30000),
		S_COPY(0, 0x15000, 0xe000, 0, 0x62e00, 0xe000),
		S_TRUNC(0, 0x20000),
		S_COPY(0, 0x0, 0x8000, 1, 0x0, 0x8000),
		S_COPY(0, 0x4000, 0x10000, 0, 0x40000, 0x10000),
		S_COPY(0, 0x10000, 0x8000, 1, 0x10200, 0x8000),
		S_COPY(0, 0x18000, 0x4000, 1, 0x0, 0x4000),
	};

	ASSERT_EQ(0, fsx_script(&self->fs, "buffered copy variants", ops,
				ARRAY_LEN(ops)));
}

/*
 * O_DIRECT turned off by fcntl(F_SETFL), then a buffered write (which
 * passes the flags to the lower file), then unaligned copies into the file
 * past its EOF: on the lower a buffered copy that succeeds.  (Found by the
 * random runs: seed 0xa4ead5f5, op 112.)
 */
TEST_F_TIMEOUT(fsx, setfl_clear_odirect_then_copy, 120)
{
	static const struct fsx_op ops[] = {
		S_REOPEN(0, O_DIRECT),
		S_DWRITE(0, 0, 0x10000),
		S_SETFL(0, 0),
		S_WRITE(0, 0x10000, 0x1000),
		S_WRITE(1, 0, 0x3000),
		S_COPY(1, 0x123, 0x1000, 0, 0x12345, 0x1000),
		S_COPY(0, 0x100, 0x800, 0, 0x20001, 0x800),
	};

	ASSERT_EQ(0, fsx_script(&self->fs, "F_SETFL clears O_DIRECT, then copies",
				ops, ARRAY_LEN(ops)));
}

/*
 * O_DIRECT turned on by fcntl(F_SETFL): an unaligned copy from the file
 * must fail as it does on the lower, before and after a read passed the
 * flags on.  (Found by the random runs: seed 0x5eed0000c0ffee, op 665.)
 */
TEST_F_TIMEOUT(fsx, setfl_set_odirect_then_copy, 120)
{
	static const struct fsx_op ops[] = {
		S_WRITE(0, 0, 0x10000),
		S_SETFL(0, O_DIRECT),
		S_COPY(0, 0x123, 0x1000, 1, 0x345, FSX_ANY),
		S_READ(0, 0, 0x1000),
		S_COPY(0, 0x123, 0x1000, 1, 0x345, FSX_ANY),
	};

	ASSERT_EQ(0, fsx_script(&self->fs, "F_SETFL sets O_DIRECT, then copies",
				ops, ARRAY_LEN(ops)));
}

/*
 * A copy cut short by RLIMIT_FSIZE: data, then a hole to EOF, copied past
 * the destination's EOF across the limit.  Both sides copy up to the limit
 * and say so (the count must never include a skipped hole that was not
 * written: the destination would be shorter than reported).
 */
TEST_F_TIMEOUT(fsx, copy_short_at_fsize_limit, 120)
{
	static const struct fsx_op ops[] = {
		S_WRITE(0, 0, 0x1000),
		S_TRUNC(0, 0x3001),
		S_COPY(0, 0, 0x3001, 1, 0x1f000, FSX_ANY),
		S_READ(1, 0x1e000, 0x8000),
	};
	struct rlimit rl = { 0x20000, 0x20000 };

	signal(SIGXFSZ, SIG_IGN);
	ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &rl));
	ASSERT_EQ(0, fsx_script(&self->fs, "copy cut short by RLIMIT_FSIZE",
				ops, ARRAY_LEN(ops)));
}

static const char *replay_seed(void)
{
	const char *s = getenv("AHEADFS_FSX_SEED");

	return s && *s ? s : NULL;
}

/* AHEADFS_FSX_SOAK=N: N fresh time seeds, or 0. */
static long soak_seeds(void)
{
	long n = env_long("AHEADFS_FSX_SOAK", 0);

	return n > 0 ? n : 0;
}

#define FSX_SEED_TEST(name, seed)						\
TEST_F_TIMEOUT(fsx, name, 300)							\
{										\
	if (replay_seed())							\
		SKIP(return, "AHEADFS_FSX_SEED is set: replay_or_soak runs it"); \
	if (soak_seeds())							\
		SKIP(return, "AHEADFS_FSX_SOAK is set: replay_or_soak runs fresh seeds"); \
	ASSERT_EQ(0, fsx_run(&self->fs, seed));				\
}

FSX_SEED_TEST(seed_1, 0x1ULL)
FSX_SEED_TEST(seed_2, 0xa4ead5f5ULL)
FSX_SEED_TEST(seed_3, 0x62e00ULL)
FSX_SEED_TEST(seed_4, 0x5eed0000c0ffeeULL)
/* xfs on 6.1, op 418: a copy to an O_DIRECT file, short on one side only. */
FSX_SEED_TEST(seed_5, 0x66b1f0ea5974aULL)
/*
 * Soaks of Nov 2026, each an unaligned O_DIRECT read that the lower refused
 * (EINVAL: a written block there) and aheadfs did not (unwritten extents
 * or holes there, its copy having kept a hole): see extents().
 */
/* ext4 on 6.12, op 863: misaligned buffer; aheadfs's hole from the copy at op 810. */
FSX_SEED_TEST(seed_6, 0x6606036df0a58ULL)
/* ext4 on 6.1, op 915: pread of an O_DIRECT fd at an unaligned offset. */
FSX_SEED_TEST(seed_7, 0x6605547dc581aULL)
/* xfs on 6.1, op 80: unaligned offset and length; all unwritten on aheadfs's side. */
FSX_SEED_TEST(seed_8, 0x660a546ce5a67ULL)
/*
 * xfs on 6.1, op 275: an unaligned O_DIRECT write past EOF, refused on both
 * sides, grew the lower's file to the end of its mapped EOF block only
 * (eof_zeroing()).
 */
FSX_SEED_TEST(seed_9, 0x660f5f8268d5bULL)
/*
 * ext4 on 6.12, op 225 (make check-full's soak, Dec 2026): a copy from an
 * O_DIRECT fd at an unaligned offset, refused by the lower (data in its
 * first 64 KiB) and short on aheadfs's side (64 KiB of hole, then data):
 * layout_split() of what the short copy copied.
 */
FSX_SEED_TEST(seed_10, 0x660286ec314adULL)

/* What replay_or_soak runs with neither AHEADFS_FSX_SEED nor _SOAK set. */
#define FSX_CI_SEED	0xc1c1c1ULL

/*
 * The seed being replayed, AHEADFS_FSX_SEED (and AHEADFS_FSX_OPS); or
 * with AHEADFS_FSX_SOAK=N, N fresh time seeds, each logged before it runs,
 * up to the first that fails; or else (make check) the fixed FSX_CI_SEED:
 * CI runs the same operations every time; fresh seeds are for soaks
 * (scripts/soak, make soak), whose failures become fixed seed_N tests.
 * The harness's bound is a soak's (about 10 s a seed under TCG, Nov 2026:
 * 4 hours hold a thousand); one seed in make check is bounded by
 * guest-run's 600 s per program.
 */
TEST_F_TIMEOUT(fsx, replay_or_soak, 14400)
{
	const char *s = replay_seed();
	unsigned long long seed;
	struct timespec ts;
	long i, n = soak_seeds();
	double t0 = now(), t;

	if (s) {
		seed = strtoull(s, NULL, 0);
		TH_LOG("replaying seed %#llx", seed);
		ASSERT_EQ(0, fsx_run(&self->fs, seed));
		return;
	}
	if (!n) {
		TH_LOG("fixed seed %#llx (AHEADFS_FSX_SOAK=N: N fresh seeds)",
		       FSX_CI_SEED);
		ASSERT_EQ(0, fsx_run(&self->fs, FSX_CI_SEED));
		return;
	}
	for (i = 0; i < n; i++) {
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (unsigned long long)ts.tv_sec * 1000003ULL ^ ts.tv_nsec ^
		       (unsigned long long)getpid() << 32;
		TH_LOG("soak %ld of %ld on %s: time seed %#llx: replay with AHEADFS_FSX_SEED=%#llx",
		       i + 1, n, ahfs_fstype(), seed, seed);
		ASSERT_EQ(0, fsx_run(&self->fs, seed))
			TH_LOG("soak: seed %#llx FAILED on %s %s after %ld passed: replay with AHEADFS_FSX_SEED=%#llx (and the replay line above)",
			       seed, kernel_release(), ahfs_fstype(), i, seed);
	}
	t = now() - t0;
	TH_LOG("soak: %ld fresh seeds passed on %s %s in %.0f s, %.1f s each",
	       n, kernel_release(), ahfs_fstype(), t, t / n);
}

TEST_HARNESS_MAIN
