// SPDX-License-Identifier: GPL-2.0
/*
 * aheadtrace: live tracing of aheadfs with eBPF (latency histograms, the
 * operation log, prefetch effectiveness, and VFS-level histograms for any
 * filesystem), in the libbpf-tools manner.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "aheadtrace.h"
#include "aheadfs.skel.h"
#include "vfs.skel.h"

#define AHEADFS_MAGIC	0xa4ead0f5
#define MAX_KEYS	4096

static const char *const meta_names[] = {
#define X(n) #n,
	AT_META_OPS(X)
#undef X
};

static const char *const vfs_names[] = {
#define X(n) #n,
	AT_VFS_OPS(X)
#undef X
};

static const char *const copy_names[] = { "clone", "lower", "chunked", "dedupe" };
static const char *const mode_names[] = { "ahead", "legacy", "kernel", "off" };

enum verb { V_HIST, V_OPLOG, V_PREFETCH, V_VFS };

static struct env {
	enum verb verb;
	const char *mnt;
	__u32 dev;			/* kernel dev_t of -m MNT */
	__u64 ops_mask;
	long interval;			/* seconds; 0: until Ctrl-C */
	long count;			/* intervals; 0: forever */
	bool json;
	bool verbose;
	__u32 pid;
	__u64 min_lat_ns;
	const char *prom;
	__u32 devs[AT_MAX_DEVS];
	int ndevs;
} env;

static volatile sig_atomic_t exiting;
static struct timespec t_start;

static const char usage_text[] =
"Usage: aheadtrace VERB [OPTIONS]\n"
"Trace aheadfs live with eBPF.\n"
"\n"
"  hist      [-m MNT] [-o OPS] [-i INTERVAL] [-c COUNT] [-j] [--prom FILE]\n"
"            latency histograms (log2, nanoseconds) per device and operation\n"
"  oplog     [-m MNT] [-o OPS] [-p PID] [--min-lat US] [-j]\n"
"            one line per operation: offset, size, cached bytes, latency\n"
"  prefetch  [-m MNT] [-i INTERVAL] [-c COUNT] [-j] [--prom FILE]\n"
"            prefetch effectiveness per file\n"
"  vfs       -d DEV [-d DEV]... [-i INTERVAL] [-c COUNT] [-j] [--prom FILE]\n"
"            VFS-level latency histograms for any filesystem; DEV is\n"
"            MAJOR:MINOR or a path on the filesystem\n"
"\n"
"  -m, --mount MNT      only the aheadfs mount at MNT\n"
"  -o, --ops OPS        only these operations (comma-separated, e.g. read,unlink)\n"
"  -p, --pid PID        only this process\n"
"      --min-lat US     only operations at least US microseconds long\n"
"  -d, --dev DEV        vfs: trace this device (up to 16)\n"
"  -i, --interval S     print every S seconds\n"
"  -c, --count N        stop after N intervals\n"
"  -j, --json           JSON lines\n"
"      --prom FILE      also write Prometheus text format to FILE (every\n"
"                       interval, default 15 s, and at exit)\n"
"  -v, --verbose        libbpf debug output\n"
"  -h, --help           this text\n"
"\n"
"Ctrl-C prints the final state and exits.\n";

static void __attribute__((noreturn, format(printf, 1, 2))) die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("aheadtrace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'aheadtrace --help'.\n", stderr);
	exit(2);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fputs("aheadtrace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static long parse_num(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		die_usage("invalid %s '%s' (a number from %ld to %ld)", opt, s,
			  min, max);
	return v;
}

static __u32 kdev(dev_t d)
{
	return (major(d) << 20) | minor(d);
}

static void fmt_dev(__u32 d, char *buf, size_t sz)
{
	snprintf(buf, sz, "%u:%u", d >> 20, d & ((1U << 20) - 1));
}

/* MAJOR:MINOR, or any path on the filesystem. */
static __u32 parse_dev(const char *s)
{
	unsigned int maj, min;
	struct stat st;
	char c;

	if (sscanf(s, "%u:%u%c", &maj, &min, &c) == 2) {
		if (maj >= (1U << 12) || min >= (1U << 20))
			die_usage("invalid device '%s'", s);
		return (maj << 20) | min;
	}
	if (stat(s, &st))
		die_usage("device '%s': not MAJOR:MINOR, and %s", s,
			  strerror(errno));
	return kdev(st.st_dev);
}

static __u64 parse_ops(const char *s)
{
	char *copy = strdup(s), *save = NULL, *tok;
	__u64 mask = 0;
	size_t i;

	if (!copy)
		die("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < AT_NR_META_OPS; i++)
			if (!strcmp(tok, meta_names[i]))
				break;
		if (i == AT_NR_META_OPS) {
			fprintf(stderr, "aheadtrace: unknown operation '%s'; known:", tok);
			for (i = 0; i < AT_NR_META_OPS; i++)
				fprintf(stderr, " %s", meta_names[i]);
			fputc('\n', stderr);
			exit(2);
		}
		mask |= 1ULL << i;
	}
	free(copy);
	if (!mask)
		die_usage("empty operation list");
	return mask;
}

enum { OPT_MIN_LAT = 256, OPT_PROM };

static const struct option long_opts[] = {
	{ "mount", required_argument, NULL, 'm' },
	{ "ops", required_argument, NULL, 'o' },
	{ "pid", required_argument, NULL, 'p' },
	{ "min-lat", required_argument, NULL, OPT_MIN_LAT },
	{ "dev", required_argument, NULL, 'd' },
	{ "interval", required_argument, NULL, 'i' },
	{ "count", required_argument, NULL, 'c' },
	{ "json", no_argument, NULL, 'j' },
	{ "prom", required_argument, NULL, OPT_PROM },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Which options each verb takes, by getopt value. */
static bool verb_takes(enum verb v, int opt)
{
	switch (opt) {
	case 'j': case 'v': case 'h':
		return true;
	case 'm':
		return v != V_VFS;
	case 'o':
		return v == V_HIST || v == V_OPLOG;
	case 'p': case OPT_MIN_LAT:
		return v == V_OPLOG;
	case 'd':
		return v == V_VFS;
	case 'i': case 'c': case OPT_PROM:
		return v != V_OPLOG;
	}
	return false;
}

static const char *opt_name(int opt)
{
	static char buf[32];
	const struct option *o;

	for (o = long_opts; o->name; o++)
		if (o->val == opt) {
			if (opt < 256)
				snprintf(buf, sizeof(buf), "-%c", opt);
			else
				snprintf(buf, sizeof(buf), "--%s", o->name);
			return buf;
		}
	return "?";
}

static void parse_args(int argc, char **argv)
{
	static const char *const verbs[] = { "hist", "oplog", "prefetch", "vfs" };
	const char *dev_args[AT_MAX_DEVS];
	int opt, i, ndev_args = 0;
	bool have_interval = false;

	if (argc < 2)
		die_usage("missing verb (hist, oplog, prefetch or vfs)");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage_text, stdout);
		exit(0);
	}
	for (i = 0; i < 4; i++)
		if (!strcmp(argv[1], verbs[i]))
			break;
	if (i == 4)
		die_usage("unknown verb '%s' (hist, oplog, prefetch or vfs)", argv[1]);
	env.verb = i;
	argv++;
	argc--;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":m:o:p:d:i:c:jvh", long_opts,
				  NULL)) != -1) {
		if (opt == '?') {
			if (optopt)
				die_usage("unknown option '-%c'", optopt);
			die_usage("unknown option '%s'", argv[optind - 1]);
		}
		if (opt == ':')
			die_usage("option '%s' needs an argument", argv[optind - 1]);
		if (!verb_takes(env.verb, opt))
			die_usage("option '%s' does not apply to '%s'",
				  opt_name(opt), verbs[env.verb]);
		switch (opt) {
		case 'm':
			env.mnt = optarg;
			break;
		case 'o':
			env.ops_mask = parse_ops(optarg);
			break;
		case 'p':
			env.pid = parse_num("pid", optarg, 1, INT_MAX);
			break;
		case OPT_MIN_LAT:
			env.min_lat_ns = parse_num("--min-lat", optarg, 0,
						   LONG_MAX / 1000) * 1000;
			break;
		case 'd':
			if (ndev_args == AT_MAX_DEVS)
				die_usage("at most %d devices", AT_MAX_DEVS);
			dev_args[ndev_args++] = optarg;
			break;
		case 'i':
			env.interval = parse_num("interval", optarg, 1, 86400);
			have_interval = true;
			break;
		case 'c':
			env.count = parse_num("count", optarg, 1, LONG_MAX);
			break;
		case 'j':
			env.json = true;
			break;
		case OPT_PROM:
			env.prom = optarg;
			break;
		case 'v':
			env.verbose = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (env.verb == V_VFS && !ndev_args)
		die_usage("vfs needs at least one -d DEV");
	if (env.count && !have_interval && !env.prom)
		die_usage("-c COUNT needs -i INTERVAL");
	if (env.prom && !have_interval)
		env.interval = 15;

	for (i = 0; i < ndev_args; i++)
		env.devs[env.ndevs++] = parse_dev(dev_args[i]);
	if (env.mnt) {
		struct statfs sfs;
		struct stat st;

		if (statfs(env.mnt, &sfs) || stat(env.mnt, &st))
			die_usage("mount '%s': %s", env.mnt, strerror(errno));
		if ((unsigned long)sfs.f_type != AHEADFS_MAGIC)
			die_usage("'%s' is not on an aheadfs mount", env.mnt);
		env.dev = kdev(st.st_dev);
	}
	if (env.prom) {
		char tmp[PATH_MAX];
		FILE *f;

		snprintf(tmp, sizeof(tmp), "%s.tmp", env.prom);
		f = fopen(tmp, "w");
		if (!f)
			die_usage("--prom '%s': %s", env.prom, strerror(errno));
		fclose(f);
		unlink(tmp);
	}
}

/* Root, or the capabilities BPF tracing needs. */
static void check_privilege(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = {};
	__u64 eff;

	if (geteuid() == 0)
		return;
	if (syscall(SYS_capget, &hdr, data) == 0) {
		eff = data[0].effective | ((__u64)data[1].effective << 32);
		if (eff & (1ULL << CAP_SYS_ADMIN))
			return;
		if ((eff & (1ULL << 39)) && (eff & (1ULL << 38)))
			return;	/* CAP_BPF and CAP_PERFMON */
	}
	die("permission denied: tracing needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)");
}

static void check_btf(void)
{
	const char *path = getenv("AHEADTRACE_KERNEL_BTF");

	if (!path)
		path = "/sys/kernel/btf/vmlinux";
	if (access(path, R_OK))
		die("this kernel has no BTF (%s: %s); the vfs programs need CONFIG_DEBUG_INFO_BTF=y",
		    path, strerror(errno));
}

static void check_module(void)
{
	const char *path = getenv("AHEADTRACE_MODULE_DIR");

	if (!path)
		path = "/sys/module/aheadfs";
	if (access(path, F_OK))
		die("aheadfs is not loaded (%s missing): load the module first (modprobe aheadfs)",
		    path);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	if (level == LIBBPF_DEBUG && !env.verbose)
		return 0;
	if (!env.verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static void on_signal(int sig)
{
	exiting = 1;
}

static double elapsed(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t_start.tv_sec) +
	       (now.tv_nsec - t_start.tv_nsec) / 1e9;
}

static void json_str(FILE *f, const char *s, size_t max)
{
	size_t i;

	fputc('"', f);
	for (i = 0; i < max && s[i]; i++) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* ---- histograms: hist and vfs ---- */

struct hist_entry {
	struct at_hist_key key;
	struct at_hist cur;	/* cumulative, as read from the map */
	struct at_hist prev;	/* at the last print */
};

static struct hist_entry hists[MAX_KEYS];
static int nhists;

static int key_cmp(const void *a, const void *b)
{
	const struct hist_entry *x = a, *y = b;

	if (x->key.dev != y->key.dev)
		return x->key.dev < y->key.dev ? -1 : 1;
	return (int)x->key.op - (int)y->key.op;
}

static struct hist_entry *hist_find(const struct at_hist_key *k)
{
	int i;

	for (i = 0; i < nhists; i++)
		if (hists[i].key.dev == k->dev && hists[i].key.op == k->op)
			return &hists[i];
	if (nhists == MAX_KEYS)
		return NULL;
	memset(&hists[nhists], 0, sizeof(hists[0]));
	hists[nhists].key = *k;
	return &hists[nhists++];
}

static int hist_read(int fd)
{
	struct at_hist_key key, next, *prev = NULL;
	struct hist_entry *h;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		h = hist_find(&key);
		if (!h)
			break;
		if (bpf_map_lookup_elem(fd, &key, &h->cur))
			continue;
	}
	qsort(hists, nhists, sizeof(hists[0]), key_cmp);
	return 0;
}

static const char *op_name(__u32 op, bool vfs)
{
	if (vfs)
		return op < AT_NR_VFS_OPS ? vfs_names[op] : "?";
	return op < AT_NR_META_OPS ? meta_names[op] : "?";
}

static void print_stars(__u64 v, __u64 max, int width)
{
	int n = max ? (int)((double)v * width / max) : 0, i;

	for (i = 0; i < width; i++)
		putchar(i < n ? '*' : ' ');
}

static void hist_print(bool vfs)
{
	char dev[32];
	int i, s;

	if (!env.json) {
		time_t t = time(NULL);
		struct tm tm;
		char ts[16];

		localtime_r(&t, &tm);
		strftime(ts, sizeof(ts), "%H:%M:%S", &tm);
		printf("%s\n", ts);
	}
	for (i = 0; i < nhists; i++) {
		struct hist_entry *h = &hists[i];
		__u64 d[AT_HIST_SLOTS], cnt = h->cur.count - h->prev.count;
		__u64 sum = h->cur.sum_ns - h->prev.sum_ns, max = 0;
		int lo = -1, hi = -1;

		if (!cnt)
			continue;
		for (s = 0; s < AT_HIST_SLOTS; s++) {
			d[s] = h->cur.slots[s] - h->prev.slots[s];
			if (d[s]) {
				if (lo < 0)
					lo = s;
				hi = s;
				if (d[s] > max)
					max = d[s];
			}
		}
		fmt_dev(h->key.dev, dev, sizeof(dev));
		if (env.json) {
			bool first = true;

			printf("{\"type\":\"%s\",\"time\":%.3f,\"dev\":\"%s\",\"op\":\"%s\",\"count\":%llu,\"sum_ns\":%llu,\"buckets\":[",
			       vfs ? "vfs" : "hist", elapsed(), dev,
			       op_name(h->key.op, vfs),
			       (unsigned long long)cnt,
			       (unsigned long long)sum);
			for (s = 0; s < AT_HIST_SLOTS; s++) {
				if (!d[s])
					continue;
				printf("%s{\"lo_ns\":%llu,\"hi_ns\":%llu,\"count\":%llu}",
				       first ? "" : ",",
				       s ? 1ULL << s : 0ULL, (2ULL << s) - 1,
				       (unsigned long long)d[s]);
				first = false;
			}
			printf("]}\n");
			continue;
		}
		printf("\ndev %s op %s: count %llu, average %.1f us\n", dev,
		       op_name(h->key.op, vfs), (unsigned long long)cnt,
		       sum / 1000.0 / cnt);
		printf("%24s : %-10s distribution\n", "nsecs", "count");
		for (s = lo; s >= 0 && s <= hi; s++) {
			char range[40];

			snprintf(range, sizeof(range), "%llu -> %llu",
				 s ? 1ULL << s : 0ULL, (2ULL << s) - 1);
			printf("%24s : %-10llu |", range,
			       (unsigned long long)d[s]);
			print_stars(d[s], max, 40);
			printf("|\n");
		}
	}
	if (!env.json)
		putchar('\n');
	fflush(stdout);
	for (i = 0; i < nhists; i++)
		hists[i].prev = hists[i].cur;
}

static void prom_write_hists(FILE *f, bool vfs)
{
	const char *m = vfs ? "aheadfs_vfs_latency_seconds" :
			      "aheadfs_op_latency_seconds";
	const char *lbl = vfs ? "func" : "op";
	char dev[32];
	int i, s;

	fprintf(f, "# HELP %s Latency of %s, from aheadtrace.\n", m,
		vfs ? "VFS calls per device" : "aheadfs operations");
	fprintf(f, "# TYPE %s histogram\n", m);
	for (i = 0; i < nhists; i++) {
		struct hist_entry *h = &hists[i];
		__u64 cum = 0;

		fmt_dev(h->key.dev, dev, sizeof(dev));
		for (s = 0; s < AT_HIST_SLOTS; s++) {
			cum += h->cur.slots[s];
			fprintf(f, "%s_bucket{dev=\"%s\",%s=\"%s\",le=\"%.9g\"} %llu\n",
				m, dev, lbl, op_name(h->key.op, vfs),
				(double)(2ULL << s) * 1e-9,
				(unsigned long long)cum);
		}
		fprintf(f, "%s_bucket{dev=\"%s\",%s=\"%s\",le=\"+Inf\"} %llu\n",
			m, dev, lbl, op_name(h->key.op, vfs),
			(unsigned long long)h->cur.count);
		fprintf(f, "%s_sum{dev=\"%s\",%s=\"%s\"} %.9f\n", m, dev, lbl,
			op_name(h->key.op, vfs), h->cur.sum_ns * 1e-9);
		fprintf(f, "%s_count{dev=\"%s\",%s=\"%s\"} %llu\n", m, dev, lbl,
			op_name(h->key.op, vfs),
			(unsigned long long)h->cur.count);
	}
}

/* ---- prefetch effectiveness ---- */

struct file_entry {
	struct at_file_key key;
	struct at_file_stats st;
};

static struct file_entry files[AT_MAX_FILES];
static int nfiles;

static int file_cmp(const void *a, const void *b)
{
	const struct file_entry *x = a, *y = b;

	if (x->key.dev != y->key.dev)
		return x->key.dev < y->key.dev ? -1 : 1;
	return x->key.ino < y->key.ino ? -1 : x->key.ino > y->key.ino;
}

static void files_read(int fd)
{
	struct at_file_key key, next, *prev = NULL;

	nfiles = 0;
	while (nfiles < AT_MAX_FILES && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &files[nfiles].st))
			continue;
		files[nfiles++].key = key;
	}
	qsort(files, nfiles, sizeof(files[0]), file_cmp);
}

static void files_print(void)
{
	char dev[32];
	int i;

	if (!env.json)
		printf("%-10s %-12s %8s %14s %8s %14s %14s %14s %14s %6s\n",
		       "DEV", "INO", "CHUNKS", "PREFETCHED", "READS",
		       "READ", "PRESENT", "ABSENT", "FROM_PREFETCH", "HIT%");
	for (i = 0; i < nfiles; i++) {
		struct at_file_stats *s = &files[i].st;
		__u64 req = s->present_bytes + s->absent_bytes;

		fmt_dev(files[i].key.dev, dev, sizeof(dev));
		if (env.json) {
			printf("{\"type\":\"prefetch\",\"time\":%.3f,\"dev\":\"%s\",\"ino\":%llu,\"prefetch_chunks\":%llu,\"prefetch_bytes\":%llu,\"read_reqs\":%llu,\"read_bytes\":%llu,\"present_bytes\":%llu,\"absent_bytes\":%llu,\"from_prefetch_bytes\":%llu,\"window_max\":%llu}\n",
			       elapsed(), dev,
			       (unsigned long long)files[i].key.ino,
			       (unsigned long long)s->prefetch_chunks,
			       (unsigned long long)s->prefetch_bytes,
			       (unsigned long long)s->read_reqs,
			       (unsigned long long)s->read_bytes,
			       (unsigned long long)s->present_bytes,
			       (unsigned long long)s->absent_bytes,
			       (unsigned long long)s->hit_bytes,
			       (unsigned long long)s->window_max);
			continue;
		}
		printf("%-10s %-12llu %8llu %14llu %8llu %14llu %14llu %14llu %14llu %5.1f%%\n",
		       dev, (unsigned long long)files[i].key.ino,
		       (unsigned long long)s->prefetch_chunks,
		       (unsigned long long)s->prefetch_bytes,
		       (unsigned long long)s->read_reqs,
		       (unsigned long long)s->read_bytes,
		       (unsigned long long)s->present_bytes,
		       (unsigned long long)s->absent_bytes,
		       (unsigned long long)s->hit_bytes,
		       req ? 100.0 * s->hit_bytes / req : 0.0);
	}
	if (!env.json)
		putchar('\n');
	fflush(stdout);
}

static void prom_write_files(FILE *f)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} m[] = {
		{ "aheadfs_file_prefetch_bytes_total", "Bytes prefetched",
		  offsetof(struct at_file_stats, prefetch_bytes) },
		{ "aheadfs_file_read_bytes_total", "Bytes read",
		  offsetof(struct at_file_stats, read_bytes) },
		{ "aheadfs_file_absent_bytes_total", "Requested bytes not cached at read time",
		  offsetof(struct at_file_stats, absent_bytes) },
		{ "aheadfs_file_from_prefetch_bytes_total", "Cached bytes read inside the prefetched range",
		  offsetof(struct at_file_stats, hit_bytes) },
	};
	char dev[32];
	size_t j;
	int i;

	for (j = 0; j < sizeof(m) / sizeof(m[0]); j++) {
		fprintf(f, "# HELP %s %s, per file, from aheadtrace.\n",
			m[j].name, m[j].help);
		fprintf(f, "# TYPE %s counter\n", m[j].name);
		for (i = 0; i < nfiles; i++) {
			fmt_dev(files[i].key.dev, dev, sizeof(dev));
			fprintf(f, "%s{dev=\"%s\",ino=\"%llu\"} %llu\n",
				m[j].name, dev,
				(unsigned long long)files[i].key.ino,
				*(__u64 *)((char *)&files[i].st + m[j].off));
		}
	}
}

static void prom_write(void)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (!env.prom)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", env.prom);
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "aheadtrace: %s: %s\n", tmp, strerror(errno));
		return;
	}
	if (env.verb == V_PREFETCH)
		prom_write_files(f);
	else
		prom_write_hists(f, env.verb == V_VFS);
	/* node_exporter must never see a half-written file. */
	if (fclose(f) || rename(tmp, env.prom))
		fprintf(stderr, "aheadtrace: %s: %s\n", env.prom, strerror(errno));
}

/* ---- the operation log ---- */

static __u64 events;

static int on_event(void *ctx, void *data, size_t size)
{
	const struct at_event *e = data;
	char dev[32], lat[32];
	const char *op;

	if (size < sizeof(*e))
		return 0;
	events++;
	fmt_dev(e->dev, dev, sizeof(dev));
	switch (e->kind) {
	case AT_KIND_READ:
		op = "read";
		break;
	case AT_KIND_PREFETCH:
		op = "prefetch";
		break;
	case AT_KIND_COPY:
		op = e->op < 4 ? copy_names[e->op] : "copy";
		break;
	default:
		op = op_name(e->op, false);
	}
	if (env.json) {
		printf("{\"type\":\"op\",\"ts_ns\":%llu,\"pid\":%u,\"tid\":%u,\"comm\":",
		       (unsigned long long)e->ts_ns, e->pid, e->tid);
		json_str(stdout, e->comm, sizeof(e->comm));
		printf(",\"kind\":\"%s\",\"op\":\"%s\",\"dev\":\"%s\",\"ino\":%llu",
		       e->kind == AT_KIND_READ ? "read" :
		       e->kind == AT_KIND_PREFETCH ? "prefetch" :
		       e->kind == AT_KIND_COPY ? "copy" : "meta",
		       e->kind == AT_KIND_COPY ? "copy" : op, dev,
		       (unsigned long long)e->ino);
		if (e->kind == AT_KIND_READ)
			printf(",\"pos\":%lld,\"len\":%llu,\"present\":%llu,\"absent\":%llu,\"mode\":\"%s\"",
			       (long long)e->pos, (unsigned long long)e->len,
			       (unsigned long long)e->present,
			       (unsigned long long)e->absent,
			       e->op < 4 ? mode_names[e->op] : "?");
		else if (e->kind == AT_KIND_PREFETCH)
			printf(",\"pos\":%lld,\"len\":%llu,\"window\":%llu",
			       (long long)e->pos, (unsigned long long)e->len,
			       (unsigned long long)e->window);
		else if (e->kind == AT_KIND_COPY)
			printf(",\"pos\":%lld,\"ino_out\":%llu,\"pos_out\":%lld,\"len\":%llu,\"method\":\"%s\"",
			       (long long)e->pos,
			       (unsigned long long)e->ino_out,
			       (long long)e->pos_out,
			       (unsigned long long)e->len, op);
		if (e->kind != AT_KIND_PREFETCH)
			printf(",\"latency_ns\":%llu,\"ret\":%lld",
			       (unsigned long long)e->latency_ns,
			       (long long)e->ret);
		printf("}\n");
		return 0;
	}
	if (e->kind == AT_KIND_PREFETCH)
		snprintf(lat, sizeof(lat), "-");
	else
		snprintf(lat, sizeof(lat), "%.1f", e->latency_ns / 1000.0);
	printf("%-8d %-7u %-16.16s %-10s %-8s %-10llu %14lld %12llu ",
	       e->pid, e->tid, e->comm, op, dev, (unsigned long long)e->ino,
	       (long long)e->pos, (unsigned long long)e->len);
	if (e->kind == AT_KIND_READ)
		printf("%12llu %12llu",
		       (unsigned long long)e->present,
		       (unsigned long long)e->absent);
	else if (e->kind == AT_KIND_PREFETCH)
		printf("%12s %12s window=%llu", "-", "-",
		       (unsigned long long)e->window);
	else if (e->kind == AT_KIND_COPY)
		printf("%12s %12s out=%llu@%lld", "-", "-",
		       (unsigned long long)e->ino_out, (long long)e->pos_out);
	else
		printf("%12s %12s", "-", "-");
	if (e->kind != AT_KIND_PREFETCH)
		printf(" %10s %lld", lat, (long long)e->ret);
	putchar('\n');
	return 0;
}

/* ---- running ---- */

static struct bpf_link *links[64];
static int nlinks;

static void detach_all(void)
{
	while (nlinks > 0)
		bpf_link__destroy(links[--nlinks]);
}

static int attach(struct bpf_program *p, bool required)
{
	struct bpf_link *l;

	if (!bpf_program__autoload(p))
		return 0;
	l = bpf_program__attach(p);
	if (!l) {
		int err = -errno;

		if (required)
			die("cannot attach %s: %s", bpf_program__section_name(p),
			    strerror(-err));
		fprintf(stderr, "aheadtrace: %s not traceable here (%s), skipped\n",
			bpf_program__section_name(p), strerror(-err));
		return err;
	}
	links[nlinks++] = l;
	return 0;
}

static void load_error(int err, const char *what)
{
	if (err == -EPERM || err == -EACCES)
		die("permission denied loading %s: tracing needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)",
		    what);
	die("cannot load %s: %s (run with -v for the verifier log)", what,
	    strerror(-err));
}

/* Sleep one interval (without -i: until Ctrl-C); false when Ctrl-C came. */
static bool wait_interval(void)
{
	struct timespec ts = { .tv_sec = env.interval ? env.interval : 1 };

	do {
		while (!exiting && nanosleep(&ts, &ts) && errno == EINTR)
			;
		ts.tv_sec = 1;
		ts.tv_nsec = 0;
	} while (!env.interval && !exiting);
	return !exiting;
}

static void announce(const char *what)
{
	fprintf(stderr, "Tracing %s... Hit Ctrl-C to end.\n", what);
}

static int periodic(int fd, bool files_mode, bool vfs)
{
	long n = 0;

	for (;;) {
		bool more = wait_interval();

		if (files_mode) {
			files_read(fd);
			files_print();
		} else {
			hist_read(fd);
			hist_print(vfs);
		}
		prom_write();
		if (!more || !env.interval)
			break;
		if (env.count && ++n >= env.count)
			break;
	}
	return 0;
}

static int run_aheadfs(void)
{
	struct at_config cfg = {
		.dev = env.dev, .tgid = env.pid, .min_lat_ns = env.min_lat_ns,
		.ops_mask = env.ops_mask,
	};
	struct aheadfs_bpf *skel;
	struct ring_buffer *rb = NULL;
	__u32 zero = 0;
	int err;

	skel = aheadfs_bpf__open();
	if (!skel)
		load_error(-errno, "the aheadfs programs");
	switch (env.verb) {
	case V_HIST:
		cfg.flags = AT_CFG_NO_OPLOG | AT_CFG_NO_FILES;
		bpf_program__set_autoload(skel->progs.at_read, false);
		bpf_program__set_autoload(skel->progs.at_prefetch, false);
		bpf_program__set_autoload(skel->progs.at_copy, false);
		break;
	case V_PREFETCH:
		cfg.flags = AT_CFG_NO_OPLOG | AT_CFG_NO_HIST;
		bpf_program__set_autoload(skel->progs.at_copy, false);
		bpf_program__set_autoload(skel->progs.at_meta, false);
		break;
	default:
		cfg.flags = AT_CFG_NO_HIST | AT_CFG_NO_FILES;
		break;
	}
	if (env.verb != V_OPLOG)
		bpf_map__set_max_entries(skel->maps.ahead_events, 4096);
	err = aheadfs_bpf__load(skel);
	if (err)
		load_error(err, "the aheadfs programs");
	err = bpf_map_update_elem(bpf_map__fd(skel->maps.ahead_config), &zero,
				  &cfg, BPF_ANY);
	if (err)
		die("cannot set the filters: %s", strerror(errno));
	attach(skel->progs.at_read, true);
	attach(skel->progs.at_prefetch, true);
	attach(skel->progs.at_copy, true);
	attach(skel->progs.at_meta, true);

	switch (env.verb) {
	case V_HIST:
		announce("aheadfs operation latency");
		periodic(bpf_map__fd(skel->maps.ahead_hist), false, false);
		break;
	case V_PREFETCH:
		announce("aheadfs prefetch");
		periodic(bpf_map__fd(skel->maps.ahead_files), true, false);
		break;
	default: {
		__u64 lost[256] = {};
		int i, ncpu = libbpf_num_possible_cpus();

		rb = ring_buffer__new(bpf_map__fd(skel->maps.ahead_events),
				      on_event, NULL, NULL);
		if (!rb)
			die("cannot open the ring buffer: %s", strerror(errno));
		if (!env.json)
			printf("%-8s %-7s %-16s %-10s %-8s %-10s %14s %12s %12s %12s %10s %s\n",
			       "PID", "TID", "COMM", "OP", "DEV", "INO",
			       "OFFSET", "SIZE", "PRESENT", "ABSENT",
			       "LAT(us)", "RET");
		announce("aheadfs operations");
		while (!exiting) {
			err = ring_buffer__poll(rb, 200);
			if (err < 0 && err != -EINTR)
				die("ring buffer: %s", strerror(-err));
			fflush(stdout);
		}
		/* Everything that fired before Ctrl-C is printed. */
		detach_all();
		ring_buffer__consume(rb);
		fflush(stdout);
		if (ncpu > 0 && ncpu <= 256 &&
		    !bpf_map_lookup_elem(bpf_map__fd(skel->maps.ahead_lost),
					 &zero, lost)) {
			__u64 sum = 0;

			for (i = 0; i < ncpu; i++)
				sum += lost[i];
			if (sum)
				fprintf(stderr, "aheadtrace: %llu events lost (ring buffer full)\n",
					(unsigned long long)sum);
		}
		fprintf(stderr, "%llu events\n", (unsigned long long)events);
		ring_buffer__free(rb);
	}
	}
	detach_all();
	aheadfs_bpf__destroy(skel);
	return 0;
}

static int run_vfs(void)
{
	struct at_vfs_config cfg = { .filter = 1 };
	struct bpf_program *p;
	struct vfs_bpf *skel;
	struct btf *vmlinux;
	__u32 zero = 0, one = 1;
	int err, i;

	skel = vfs_bpf__open();
	if (!skel)
		load_error(-errno, "the vfs programs");
	/* Skip functions this kernel does not have rather than fail all. */
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		die("cannot read the kernel's BTF: %s", strerror(errno));
	bpf_object__for_each_program(p, skel->obj) {
		const char *sec = bpf_program__section_name(p);
		const char *fn = strchr(sec, '/');

		if (fn && btf__find_by_name_kind(vmlinux, fn + 1, BTF_KIND_FUNC) < 0) {
			fprintf(stderr, "aheadtrace: %s not in this kernel, skipped\n", sec);
			bpf_program__set_autoload(p, false);
		}
	}
	btf__free(vmlinux);
	err = vfs_bpf__load(skel);
	if (err)
		load_error(err, "the vfs programs");
	for (i = 0; i < env.ndevs; i++)
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.vfs_devs),
					&env.devs[i], &one, BPF_ANY))
			die("cannot set the device filter: %s", strerror(errno));
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.vfs_config), &zero, &cfg,
				BPF_ANY))
		die("cannot set the device filter: %s", strerror(errno));
	bpf_object__for_each_program(p, skel->obj)
		attach(p, false);
	if (!nlinks)
		die("no VFS function could be traced on this kernel");
	announce("VFS calls");
	periodic(bpf_map__fd(skel->maps.vfs_hist), false, true);
	detach_all();
	vfs_bpf__destroy(skel);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };

	parse_args(argc, argv);
	check_privilege();
	if (env.verb == V_VFS)
		check_btf();
	else
		check_module();
	libbpf_set_print(libbpf_print);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	return env.verb == V_VFS ? run_vfs() : run_aheadfs();
}
