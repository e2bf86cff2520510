// SPDX-License-Identifier: GPL-2.0
/*
 * aheadtrace: live tracing of aheadfs with eBPF (latency histograms, the
 * operation log, prefetch effectiveness, and VFS-level histograms for any
 * filesystem), in the libbpf-tools manner.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <fcntl.h>
#include <poll.h>
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
#include "oplog_text.h"
#include "../userland/jsonstr.h"
#include "aheadfs.skel.h"
#include "vfs.skel.h"
#include "vfsk.skel.h"

#define AHEADFS_MAGIC	0xa4ead0f5
#define MAX_KEYS	AT_MAX_PHISTS
#define AT_RINGBUF_MAX	(1L << 30)	/* oplog -b: bytes at most */
#define CGROUP2_MAGIC	0x63677270	/* statfs(2) of a cgroup v2 directory */

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

enum verb { V_HIST, V_OPLOG, V_PREFETCH, V_VFS, V_HEATMAP };

static struct env {
	enum verb verb;
	const char *mnt;
	__u32 dev;			/* kernel dev_t of -m MNT */
	__u64 ops_mask;
	long interval;			/* seconds; 0: until Ctrl-C */
	long count;			/* intervals; 0: forever */
	bool json;
	bool verbose;
	bool timestamp;			/* oplog -T */
	bool paths;			/* oplog -P */
	bool per_pid;			/* hist -P */
	bool per_comm;			/* hist -C */
	long buffer_pages;		/* oplog -b; 0: AT_RINGBUF_SZ */
	__u32 pid;
	__u64 min_lat_ns;
	const char *prom;
	long top_files;			/* prefetch --prom: per-file series */
	const char *svg;		/* heatmap --svg */
	bool kprobe;			/* vfs --kprobe */
	__u32 devs[AT_MAX_DEVS];
	int ndevs;
	__u32 hist_unit_ns;		/* hist -m (1000000), -u (1000); 0: ns */
	long duration;			/* oplog -d: seconds; 0: until Ctrl-C */
	bool csv;			/* oplog -c */
	const char *cgroup;		/* --cgroup PATH */
	int cgroup_fd;
} env = { .cgroup_fd = -1 };

static volatile sig_atomic_t exiting;
/*
 * The first error writing stdout (EPIPE: the reader went away, as under
 * "| head"); it ends the run as Ctrl-C does, and the final writes of
 * --prom and --svg still happen.
 */
static int out_errno;
static struct timespec t_start;
static __u64 mono_start_ns;		/* t_start in ns: bpf_ktime_get_ns()'s clock */
static __s64 real_minus_mono_ns;	/* CLOCK_REALTIME - CLOCK_MONOTONIC */

static const char usage_text[] =
"Usage: aheadtrace VERB [OPTIONS] [INTERVAL [COUNT]]\n"
"Trace aheadfs live with eBPF.\n"
"\n"
"  hist      [--mount MNT] [-o OPS] [-p PID] [--cgroup PATH] [-m|-u] [-P|-C] [-j]\n"
"            [--prom FILE] [INTERVAL [COUNT]]\n"
"            latency histograms (log2, nanoseconds, or with -m milliseconds,\n"
"            -u microseconds) per device and operation\n"
"  oplog     [--mount MNT] [-o OPS] [-p PID] [--cgroup PATH] [-m MIN_MS]\n"
"            [--min-lat US] [-d DURATION] [-T] [-P] [-b PAGES] [-j|-c]\n"
"            one line per operation: file, offset, size, cached bytes, latency\n"
"  prefetch  [-m MNT] [-j] [--prom FILE [--top-files N]] [INTERVAL [COUNT]]\n"
"            prefetch effectiveness per file\n"
"  vfs       -d DEV [-d DEV]... [--kprobe] [-j] [--prom FILE] [INTERVAL [COUNT]]\n"
"            VFS-level latency histograms for any filesystem; DEV is\n"
"            MAJOR:MINOR or a path on the filesystem; fentry, or kprobes\n"
"            where fentry cannot attach\n"
"  heatmap   [-m MNT] [-o OP] [--cgroup PATH] [-j] [--svg FILE] [INTERVAL [COUNT]]\n"
"            one operation's latency over time: a row of log2 buckets per\n"
"            interval (default 1 s, OP read), drawn with Unicode blocks;\n"
"            --svg also writes the picture at exit\n"
"\n"
"      --mount MNT      only the aheadfs mount at MNT (-m MNT for prefetch\n"
"                       and heatmap)\n"
"  -o, --ops OPS        only these operations (comma-separated, e.g. read,unlink;\n"
"                       heatmap: one)\n"
"  -p, --pid PID        only this process\n"
"      --cgroup PATH    only tasks in this cgroup v2 directory or below it\n"
"  -m, --min MIN_MS     oplog: only operations at least MIN_MS milliseconds\n"
"                       long (as fsslower)\n"
"      --min-lat US     oplog: the same in microseconds\n"
"  -d, --duration S     oplog: stop after S seconds (as fsslower)\n"
"  -c, --csv            oplog: comma-separated values (as fsslower)\n"
"  -m, --milliseconds   hist: histograms in milliseconds (as biolatency)\n"
"  -u, --microseconds   hist: histograms in microseconds\n"
"  -T, --timestamp      oplog: a TIME column (HH:MM:SS)\n"
"  -P, --path           oplog: the path from the mount's root, not the name\n"
"  -P, --per-process    hist: one histogram per process (PID and COMM)\n"
"  -C, --per-comm       hist: one histogram per command name\n"
"  -b, --buffer-pages N oplog: ring buffer of N pages (a power of two;\n"
"                       default 4 MiB)\n"
"  -d, --dev DEV        vfs: trace this device (up to 16)\n"
"      --kprobe         vfs: kprobes for every function, never fentry\n"
"  -i, --interval S     print every S seconds (or INTERVAL)\n"
"  -c, --count N        stop after N intervals (or COUNT)\n"
"  -j, --json           JSON lines\n"
"      --prom FILE      also write Prometheus text format to FILE (every\n"
"                       interval, default 15 s, and at exit)\n"
"      --top-files N    prefetch --prom: also the N files read most\n"
"      --svg FILE       heatmap: write an SVG picture to FILE at exit\n"
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

/* The running kernel's: a ring buffer is a power-of-two number of them. */
static long page_size(void)
{
	long sz = sysconf(_SC_PAGESIZE);

	return sz > 0 ? sz : 4096;
}

/*
 * The ring buffer's size in bytes: -b pages, or AT_RINGBUF_SZ rounded up to
 * a whole page (a 64 KiB page is more than some buffers ask for).
 */
static __u32 ringbuf_bytes(long pages)
{
	long page = page_size();

	if (pages)
		return pages * page;
	return page < AT_RINGBUF_SZ ? AT_RINGBUF_SZ : page;
}

static __u32 kdev(dev_t d)
{
	return (major(d) << 20) | minor(d);
}

/* MAJOR:MINOR of a kernel dev_t, made once per device, not per record. */
static const char *dev_text(__u32 d)
{
	static __u32 last = ~0U;
	static char text[32];

	if (d != last) {
		snprintf(text, sizeof(text), "%u:%u", d >> 20,
			 d & ((1U << 20) - 1));
		last = d;
	}
	return text;
}

static void fmt_dev(__u32 d, char *buf, size_t sz)
{
	const char *text = dev_text(d);
	size_t n;

	n = strlen(text);
	if (n >= sz)
		n = sz - 1;
	memcpy(buf, text, n);
	buf[n] = '\0';
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

enum {
	OPT_MIN_LAT = 256, OPT_PROM, OPT_PATH, OPT_PER_PROCESS, OPT_TOP_FILES,
	OPT_SVG, OPT_KPROBE, OPT_MOUNT, OPT_MIN_MS, OPT_MSEC, OPT_DURATION,
	OPT_CSV, OPT_COUNT, OPT_CGROUP,
};

static const struct option long_opts[] = {
	{ "mount", required_argument, NULL, OPT_MOUNT },
	{ "min", required_argument, NULL, OPT_MIN_MS },
	{ "milliseconds", no_argument, NULL, OPT_MSEC },
	{ "microseconds", no_argument, NULL, 'u' },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "csv", no_argument, NULL, OPT_CSV },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "ops", required_argument, NULL, 'o' },
	{ "pid", required_argument, NULL, 'p' },
	{ "min-lat", required_argument, NULL, OPT_MIN_LAT },
	{ "timestamp", no_argument, NULL, 'T' },
	{ "path", no_argument, NULL, OPT_PATH },
	{ "per-process", no_argument, NULL, OPT_PER_PROCESS },
	{ "per-comm", no_argument, NULL, 'C' },
	{ "buffer-pages", required_argument, NULL, 'b' },
	{ "dev", required_argument, NULL, 'd' },
	{ "interval", required_argument, NULL, 'i' },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "json", no_argument, NULL, 'j' },
	{ "prom", required_argument, NULL, OPT_PROM },
	{ "top-files", required_argument, NULL, OPT_TOP_FILES },
	{ "svg", required_argument, NULL, OPT_SVG },
	{ "kprobe", no_argument, NULL, OPT_KPROBE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/*
 * A letter's meaning in a verb, where libbpf-tools give it several: -m is
 * fsslower's minimum latency in oplog, biolatency's milliseconds in hist,
 * the mount elsewhere (--mount everywhere); -c is fsslower's CSV in oplog,
 * the count elsewhere; -d fsslower's duration in oplog, the device in vfs;
 * -P the path in oplog, per process in hist.
 */
static int opt_of(enum verb v, int opt)
{
	switch (opt) {
	case 'm':
		return v == V_OPLOG ? OPT_MIN_MS : v == V_HIST ? OPT_MSEC : OPT_MOUNT;
	case 'c':
		return v == V_OPLOG ? OPT_CSV : OPT_COUNT;
	case 'd':
		return v == V_OPLOG ? OPT_DURATION : 'd';
	case 'P':
		return v == V_OPLOG ? OPT_PATH : OPT_PER_PROCESS;
	}
	return opt;
}

/* Which options each verb takes, by their meaning (opt_of()). */
static bool verb_takes(enum verb v, int opt)
{
	switch (opt) {
	case 'j': case 'v': case 'h':
		return true;
	case OPT_MOUNT:
		return v != V_VFS;
	case 'o':
		return v == V_HIST || v == V_OPLOG || v == V_HEATMAP;
	case 'p':
		return v == V_OPLOG || v == V_HIST;
	case OPT_CGROUP:
		return v == V_OPLOG || v == V_HIST || v == V_HEATMAP;
	case OPT_MIN_LAT: case OPT_MIN_MS: case 'T': case OPT_PATH: case 'b':
	case OPT_DURATION: case OPT_CSV:
		return v == V_OPLOG;
	case 'C': case OPT_PER_PROCESS: case OPT_MSEC: case 'u':
		return v == V_HIST;
	case 'd': case OPT_KPROBE:
		return v == V_VFS;
	case 'i': case OPT_COUNT:
		return v != V_OPLOG;
	case OPT_PROM:
		return v != V_OPLOG && v != V_HEATMAP;
	case OPT_SVG:
		return v == V_HEATMAP;
	case OPT_TOP_FILES:
		return v == V_PREFETCH;
	}
	return false;
}

/* The option as typed: its letter, or its long name. */
static const char *opt_name(int opt)
{
	static char buf[32];
	const struct option *o;

	if (opt < 256) {
		snprintf(buf, sizeof(buf), "-%c", opt);
		return buf;
	}
	for (o = long_opts; o->name; o++)
		if (o->val == opt) {
			snprintf(buf, sizeof(buf), "--%s", o->name);
			return buf;
		}
	return "?";
}

/*
 * A new file beside @path (--prom FILE, --svg FILE) for the next write,
 * renamed over @path once complete: mkstemp(3), so a symlink or file
 * planted at a fixed name is never followed or truncated, and a symlink at
 * @path itself is replaced, not followed.  Mode 0644, as node_exporter
 * reads it.  The name (malloc'd) and *fd, or NULL with errno set.
 */
static char *tmpfile_beside(const char *path, int *fd)
{
	const char *slash = strrchr(path, '/');
	char *tmp;

	if (asprintf(&tmp, "%.*s.%s.XXXXXX", slash ? (int)(slash - path + 1) : 0,
		     path, slash ? slash + 1 : path) < 0)
		return NULL;
	*fd = mkstemp(tmp);
	if (*fd < 0 || fchmod(*fd, 0644)) {
		int e = errno;

		if (*fd >= 0) {
			close(*fd);
			unlink(tmp);
		}
		free(tmp);
		errno = e;
		return NULL;
	}
	return tmp;
}

/*
 * --prom FILE, --svg FILE: a file can be made beside @path and renamed
 * over it (not a directory), or exit 2.
 */
static void check_writable(const char *opt, const char *path)
{
	struct stat st;
	char *tmp;
	int fd;

	if (!lstat(path, &st) && S_ISDIR(st.st_mode))
		die_usage("%s '%s': %s", opt, path, strerror(EISDIR));
	tmp = tmpfile_beside(path, &fd);
	if (!tmp)
		die_usage("%s '%s': %s", opt, path, strerror(errno));
	close(fd);
	unlink(tmp);
	free(tmp);
}

/*
 * ahead_files' size for prefetch: AT_MAX_FILES, or AT_FILES_PER_CPU per
 * possible CPU when that is more.  The LRU keeps free entries on per-CPU
 * lists (up to 128 each): with a share of few entries per CPU it evicts
 * long before it is full.
 */
static long files_max(int ncpu)
{
	long n = (long)(ncpu > 0 ? ncpu : 1) * AT_FILES_PER_CPU;

	return n > AT_MAX_FILES ? n : AT_MAX_FILES;
}

static void parse_args(int argc, char **argv)
{
	static const char *const verbs[] = {
		"hist", "oplog", "prefetch", "vfs", "heatmap",
	};
	const char *dev_args[AT_MAX_DEVS];
	int opt, i, ndev_args = 0;
	bool have_interval = false, have_count = false, have_min = false;
	bool m_letter = false;
	char optstr[64];

	if (argc < 2)
		die_usage("missing verb (hist, oplog, prefetch, vfs or heatmap)");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage_text, stdout);
		exit(0);
	}
	for (i = 0; i < 5; i++)
		if (!strcmp(argv[1], verbs[i]))
			break;
	if (i == 5)
		die_usage("unknown verb '%s' (hist, oplog, prefetch, vfs or heatmap)",
			  argv[1]);
	env.verb = i;
	argv++;
	argc--;

	/* hist -m and oplog -c take no argument: libbpf-tools' flags. */
	snprintf(optstr, sizeof(optstr), ":%so:p:d:i:%sb:jvhuTPC",
		 env.verb == V_HIST ? "m" : "m:", env.verb == V_OPLOG ? "c" : "c:");
	opterr = 0;
	optind = 0;	/* a fresh scan (the host tests parse several times) */
	while ((opt = getopt_long(argc, argv, optstr, long_opts, NULL)) != -1) {
		int typed = opt;

		if (opt == '?') {
			if (optopt)
				die_usage("unknown option '-%c'", optopt);
			die_usage("unknown option '%s'", argv[optind - 1]);
		}
		if (opt == ':')
			die_usage("option '%s' needs an argument", argv[optind - 1]);
		opt = opt_of(env.verb, opt);
		if (!verb_takes(env.verb, opt))
			die_usage("option '%s' does not apply to '%s'",
				  opt_name(typed), verbs[env.verb]);
		switch (opt) {
		case OPT_MOUNT:
			env.mnt = optarg;
			break;
		case 'o':
			env.ops_mask = parse_ops(optarg);
			break;
		case 'p':
			env.pid = parse_num("pid", optarg, 1, INT_MAX);
			break;
		case OPT_MIN_MS:
			/*
			 * oplog -m was the mount before fsslower's meaning
			 * won: a path is still taken as one, with a word.
			 */
			if (typed == 'm' && (optarg[0] == '/' || optarg[0] == '.')) {
				fprintf(stderr, "aheadtrace: warning: oplog -m is the least latency in ms now, as in fsslower; '%s' taken as --mount %s\n",
					optarg, optarg);
				env.mnt = optarg;
				break;
			}
			if (have_min)
				die_usage("the least latency given twice (-m MIN_MS and --min-lat US: give one)");
			env.min_lat_ns = parse_num(typed == 'm' ? "-m MIN_MS" : "--min",
						   optarg, 0, LONG_MAX / 1000000) * 1000000;
			have_min = true;
			break;
		case OPT_MIN_LAT:
			if (have_min)
				die_usage("the least latency given twice (-m MIN_MS and --min-lat US: give one)");
			env.min_lat_ns = parse_num("--min-lat", optarg, 0,
						   LONG_MAX / 1000) * 1000;
			have_min = true;
			break;
		case OPT_MSEC:
		case 'u':
			if (env.hist_unit_ns)
				die_usage("-m and -u do not combine (one unit)");
			env.hist_unit_ns = opt == 'u' ? 1000 : 1000000;
			m_letter = typed == 'm';
			break;
		case OPT_DURATION:
			env.duration = parse_num("duration", optarg, 1, 366L * 86400);
			break;
		case OPT_CSV:
			env.csv = true;
			break;
		case OPT_CGROUP:
			env.cgroup = optarg;
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
		case OPT_COUNT:
			env.count = parse_num("count", optarg, 1, LONG_MAX);
			have_count = true;
			break;
		case 'b':
			/* The kernel takes a power of two times its page. */
			env.buffer_pages = parse_num("--buffer-pages", optarg,
						     1, AT_RINGBUF_MAX / page_size());
			if (env.buffer_pages & (env.buffer_pages - 1))
				die_usage("invalid --buffer-pages '%s' (a power of two)",
					  optarg);
			break;
		case 'T':
			env.timestamp = true;
			break;
		case OPT_PATH:
			env.paths = true;
			break;
		case OPT_PER_PROCESS:
			env.per_pid = true;
			break;
		case 'C':
			env.per_comm = true;
			break;
		case 'j':
			env.json = true;
			break;
		case OPT_PROM:
			env.prom = optarg;
			break;
		case OPT_SVG:
			env.svg = optarg;
			break;
		case OPT_KPROBE:
			env.kprobe = true;
			break;
		case OPT_TOP_FILES:
			env.top_files = parse_num("--top-files", optarg, 1,
						  files_max(libbpf_num_possible_cpus()));
			break;
		case 'v':
			env.verbose = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		}
	}
	/* libbpf-tools' positional [interval] [count]. */
	if (optind < argc && env.verb != V_OPLOG) {
		/* hist -m MNT, as before -m became biolatency's milliseconds. */
		if (m_letter && (argv[optind][0] == '/' || argv[optind][0] == '.'))
			die_usage("hist -m is milliseconds now, as in biolatency: the mount is --mount %s",
				  argv[optind]);
		if (have_interval)
			die_usage("interval given twice (-i and '%s')", argv[optind]);
		env.interval = parse_num("interval", argv[optind++], 1, 86400);
		have_interval = true;
		if (optind < argc) {
			if (have_count)
				die_usage("count given twice (-c and '%s')",
					  argv[optind]);
			env.count = parse_num("count", argv[optind++], 1,
					      LONG_MAX);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (env.per_pid && env.per_comm)
		die_usage("-P and -C do not combine (-P shows the comm too)");
	if (env.csv && env.json)
		die_usage("-c and -j do not combine (CSV or JSON lines)");
	if (env.verb == V_HEATMAP) {
		if (!env.ops_mask)
			env.ops_mask = 1ULL << AT_OP_read;
		if (env.ops_mask & (env.ops_mask - 1))
			die_usage("heatmap draws one operation (-o read, for example)");
		/* Its interval is 1 s unless given: -c COUNT alone is fine. */
		if (!have_interval)
			env.interval = 1;
		have_interval = true;
	}
	if (env.top_files && !env.prom)
		die_usage("--top-files needs --prom (it selects Prometheus series)");
	if (env.prom && (env.per_pid || env.per_comm))
		die_usage("--prom does not combine with -P or -C (a series per process is unbounded)");
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
	if (env.cgroup) {
		struct statfs cfs;

		env.cgroup_fd = open(env.cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (env.cgroup_fd < 0)
			die_usage("--cgroup '%s': %s", env.cgroup, strerror(errno));
		if (fstatfs(env.cgroup_fd, &cfs) || (unsigned long)cfs.f_type != CGROUP2_MAGIC)
			die_usage("--cgroup '%s': not a cgroup v2 directory (/sys/fs/cgroup/...)",
				  env.cgroup);
	}
	/* Neither file is opened here: nothing is made or followed at FILE. */
	if (env.svg)
		check_writable("--svg", env.svg);
	if (env.prom)
		check_writable("--prom", env.prom);
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
		die("this kernel has no BTF (%s: %s); aheadtrace's programs need CONFIG_DEBUG_INFO_BTF=y",
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

/*
 * stdout's buffer written out.  A failure stops the run (out_errno): with
 * SIGPIPE ignored, a closed pipe is EPIPE here, not the end of the process,
 * so what is left to do at exit is still done.
 */
static void out_sync(void)
{
	struct pollfd p = { .fd = STDOUT_FILENO };

	errno = 0;
	if (fflush(stdout) != EOF && !ferror(stdout))
		return;
	/*
	 * An earlier implicit flush may have failed and emptied the buffer:
	 * a pipe whose reader is gone still says so (POLLERR).
	 */
	if (!out_errno)
		out_errno = errno ? errno :
			    poll(&p, 1, 0) == 1 && (p.revents & POLLERR) ?
			    EPIPE : EIO;
	exiting = 1;
}

/* main()'s exit status for the output: 0 for a reader that went away. */
static int out_status(void)
{
	if (!out_errno || out_errno == EPIPE)
		return 0;
	fprintf(stderr, "aheadtrace: cannot write the output: %s\n",
		strerror(out_errno));
	return 1;
}

/* aheadctl's string writer: UTF-8 as it is, the rest escaped. */
static void json_str(FILE *f, const char *s, size_t max)
{
	jsonstr_write(f, s, max);
}

/* ---- what the programs could not record ---- */

/* ahead_lost[@what] summed over every possible CPU, however many there are. */
static __u64 lost_count(int fd, int ncpu, __u32 what)
{
	__u64 *v, sum = 0;
	int i;

	if (ncpu <= 0)
		die("cannot count the CPUs: %s", strerror(-ncpu));
	/* A per-CPU value is 8-byte aligned per CPU: a __u64 is exactly that. */
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		die("out of memory");
	if (bpf_map_lookup_elem(fd, &what, v))
		die("cannot read the lost-event counts: %s", strerror(errno));
	for (i = 0; i < ncpu; i++)
		sum += v[i];
	free(v);
	return sum;
}

/*
 * Operations a full map had no room for (ahead_lost[AT_LOST_FULL]): hist,
 * heatmap and prefetch read it with each print, say on stderr what was
 * dropped since the last word, and the total at exit; --prom exports it
 * once there is any.  lost_fd is -1 where nothing is read (vfs).
 */
static int lost_fd = -1, lost_ncpu;
static __u64 dropped, dropped_said;

static void dropped_read(void)
{
	if (lost_fd >= 0)
		dropped = lost_count(lost_fd, lost_ncpu, AT_LOST_FULL);
}

/* The map that fills under the options given, and its size. */
static const char *full_map(void)
{
	static char text[64];

	if (env.verb == V_PREFETCH)
		snprintf(text, sizeof(text), "ahead_mounts full: %d mounts",
			 AT_MAX_MOUNTS);
	else if (env.per_pid || env.per_comm)
		snprintf(text, sizeof(text), "ahead_phist full: %d entries",
			 AT_MAX_PHISTS);
	else
		snprintf(text, sizeof(text), "ahead_hist full: %d entries",
			 AT_MAX_HISTS);
	return text;
}

static void drop_report(__u64 total, bool final)
{
	if (final) {
		if (total)
			fprintf(stderr, "aheadtrace: %llu operations not counted (%s)\n",
				(unsigned long long)total, full_map());
		return;
	}
	if (total <= dropped_said)
		return;
	out_sync();
	fprintf(stderr, "aheadtrace: %llu operations not counted (%s; %llu in all)\n",
		(unsigned long long)(total - dropped_said), full_map(),
		(unsigned long long)total);
	dropped_said = total;
}

static void prom_write_dropped(FILE *f)
{
	/* Only once there are some: a run that drops nothing keeps its series. */
	if (!dropped)
		return;
	fprintf(f, "# HELP aheadfs_trace_dropped_total Operations aheadtrace did not count: a map was full.\n");
	fprintf(f, "# TYPE aheadfs_trace_dropped_total counter\n");
	fprintf(f, "aheadfs_trace_dropped_total %llu\n", (unsigned long long)dropped);
}

/* ---- histograms: hist and vfs ---- */

/* Every histogram's key in one shape: pid and comm are empty unless -P/-C. */
struct hist_entry {
	struct at_phist_key key;
	struct at_hist cur;	/* cumulative, as read from the map */
	struct at_hist prev;	/* at the last print */
};

static struct hist_entry hists[MAX_KEYS];
static int nhists;

static int key_cmp(const void *a, const void *b)
{
	const struct hist_entry *x = a, *y = b;
	int c;

	if (x->key.dev != y->key.dev)
		return x->key.dev < y->key.dev ? -1 : 1;
	c = strncmp(x->key.comm, y->key.comm, AT_COMM_LEN);
	if (c)
		return c;
	if (x->key.pid != y->key.pid)
		return x->key.pid < y->key.pid ? -1 : 1;
	return (int)x->key.op - (int)y->key.op;
}

static struct hist_entry *hist_find(const struct at_phist_key *k)
{
	int i;

	for (i = 0; i < nhists; i++)
		if (!memcmp(&hists[i].key, k, sizeof(*k)))
			return &hists[i];
	if (nhists == MAX_KEYS)
		return NULL;
	memset(&hists[nhists], 0, sizeof(hists[0]));
	hists[nhists].key = *k;
	return &hists[nhists++];
}

/*
 * hist and heatmap of one mount (-m) count in ahead_ophist, an array by
 * op, which costs the traced operation less than the hash by (dev, op).
 */
static bool hist_by_op;

/* ahead_ophist's histogram of @op; false when it counted nothing. */
static bool ophist_read(int fd, __u32 op, struct at_hist *h)
{
	return !bpf_map_lookup_elem(fd, &op, h) && h->count;
}

/* @per: the map is keyed by struct at_phist_key, not struct at_hist_key. */
static int hist_read(int fd, bool per)
{
	union {
		struct at_hist_key k;
		struct at_phist_key pk;
	} key, next;
	struct at_phist_key full;
	struct hist_entry *h;
	struct at_hist cur;
	void *prev = NULL;
	__u32 op;

	if (hist_by_op) {
		for (op = 0; op < AT_NR_META_OPS; op++) {
			if (!ophist_read(fd, op, &cur))
				continue;
			memset(&full, 0, sizeof(full));
			full.dev = env.dev;
			full.op = op;
			h = hist_find(&full);
			if (!h)
				break;
			h->cur = cur;
		}
		qsort(hists, nhists, sizeof(hists[0]), key_cmp);
		return 0;
	}
	memset(&next, 0, sizeof(next));
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		memset(&full, 0, sizeof(full));
		if (per) {
			full = key.pk;
		} else {
			full.dev = key.k.dev;
			full.op = key.k.op;
		}
		h = hist_find(&full);
		if (!h)
			break;
		if (bpf_map_lookup_elem(fd, &key, &h->cur))
			continue;
	}
	qsort(hists, nhists, sizeof(hists[0]), key_cmp);
	return 0;
}

/*
 * An operation's name; "op_<n>" for a number this build does not know (a
 * newer module's), one per number, so that no two become one series.  The
 * text is good until the next call: one call per statement.
 */
static const char *op_name(__u32 op, bool vfs)
{
	static char unknown[16];

	if (vfs && op < AT_NR_VFS_OPS)
		return vfs_names[op];
	if (!vfs && op < AT_NR_META_OPS)
		return meta_names[op];
	snprintf(unknown, sizeof(unknown), "op_%u", op);
	return unknown;
}

/* A comm for text output: no control characters, never empty. */
static const char *comm_str(const char *comm, char *buf)
{
	int i;

	for (i = 0; i < AT_COMM_LEN - 1 && comm[i]; i++)
		buf[i] = (unsigned char)comm[i] < 0x20 || comm[i] == 0x7f ?
			 '?' : comm[i];
	buf[i] = '\0';
	if (!i)
		strcpy(buf, "-");
	return buf;
}

static void print_stars(__u64 v, __u64 max, int width)
{
	int n = max ? (int)((double)v * width / max) : 0, i;

	for (i = 0; i < width; i++)
		putchar(i < n ? '*' : ' ');
}

/* hist -m, -u: the unit the slots count in (at_config.hist_unit_ns), at least 1 ns. */
static __u64 hist_unit(void)
{
	return env.hist_unit_ns > 1 ? env.hist_unit_ns : 1;
}

static const char *hist_unit_name(void)
{
	return hist_unit() == 1000000 ? "msecs" : hist_unit() == 1000 ? "usecs" : "nsecs";
}

static void hist_print(bool vfs)
{
	__u64 unit = hist_unit();
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

			printf("{\"type\":\"%s\",\"time\":%.3f,\"dev\":\"%s\",",
			       vfs ? "vfs" : "hist", elapsed(), dev);
			if (env.per_pid)
				printf("\"pid\":%u,", h->key.pid);
			if (env.per_pid || env.per_comm) {
				printf("\"comm\":");
				json_str(stdout, h->key.comm, AT_COMM_LEN);
				putchar(',');
			}
			if (unit > 1)
				printf("\"unit\":\"%s\",", unit == 1000 ? "us" : "ms");
			printf("\"op\":\"%s\",\"count\":%llu,\"sum_ns\":%llu,\"buckets\":[",
			       op_name(h->key.op, vfs),
			       (unsigned long long)cnt,
			       (unsigned long long)sum);
			for (s = 0; s < AT_HIST_SLOTS; s++) {
				if (!d[s])
					continue;
				/* In ns whatever the unit: a slot is [2^s, 2^(s+1)) units. */
				printf("%s{\"lo_ns\":%llu,\"hi_ns\":%llu,\"count\":%llu}",
				       first ? "" : ",",
				       (s ? 1ULL << s : 0ULL) * unit,
				       (2ULL << s) * unit - 1,
				       (unsigned long long)d[s]);
				first = false;
			}
			printf("]}\n");
			continue;
		}
		printf("\ndev %s", dev);
		if (env.per_pid)
			printf(" pid %u", h->key.pid);
		if (env.per_pid || env.per_comm) {
			char comm[AT_COMM_LEN];

			printf(" comm %s", comm_str(h->key.comm, comm));
		}
		if (unit == 1000000)
			printf(" op %s: count %llu, average %.3f ms\n",
			       op_name(h->key.op, vfs), (unsigned long long)cnt,
			       sum / 1e6 / cnt);
		else
			printf(" op %s: count %llu, average %.1f us\n",
			       op_name(h->key.op, vfs), (unsigned long long)cnt,
			       sum / 1000.0 / cnt);
		printf("%24s : %-10s distribution\n", hist_unit_name(), "count");
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
	out_sync();
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
		__u64 cum = 0, total;

		fmt_dev(h->key.dev, dev, sizeof(dev));
		/*
		 * The last slot also counts everything beyond it (the
		 * programs clamp): it has no upper bound, so only +Inf holds
		 * it.
		 */
		for (s = 0; s < AT_HIST_SLOTS - 1; s++) {
			cum += h->cur.slots[s];
			fprintf(f, "%s_bucket{dev=\"%s\",%s=\"%s\",le=\"%.9g\"} %llu\n",
				m, dev, lbl, op_name(h->key.op, vfs),
				(double)(2ULL << s) * hist_unit() * 1e-9,
				(unsigned long long)cum);
		}
		cum += h->cur.slots[AT_HIST_SLOTS - 1];
		/*
		 * count and the slots are separate adds, read while they
		 * happen: +Inf and _count are never below a bucket.
		 */
		total = h->cur.count > cum ? h->cur.count : cum;
		fprintf(f, "%s_bucket{dev=\"%s\",%s=\"%s\",le=\"+Inf\"} %llu\n",
			m, dev, lbl, op_name(h->key.op, vfs),
			(unsigned long long)total);
		fprintf(f, "%s_sum{dev=\"%s\",%s=\"%s\"} %.9f\n", m, dev, lbl,
			op_name(h->key.op, vfs), h->cur.sum_ns * 1e-9);
		fprintf(f, "%s_count{dev=\"%s\",%s=\"%s\"} %llu\n", m, dev, lbl,
			op_name(h->key.op, vfs), (unsigned long long)total);
	}
}

/* ---- prefetch effectiveness ---- */

struct file_entry {
	struct at_file_key key;
	struct at_file_stats st;
};

/* ahead_files as last read: files_cap entries, its max_entries (files_alloc()). */
static struct file_entry *files;
static long files_cap;
static int nfiles;

static int file_key_cmp(const struct file_entry *x, const struct file_entry *y)
{
	if (x->key.dev != y->key.dev)
		return x->key.dev < y->key.dev ? -1 : 1;
	return x->key.ino < y->key.ino ? -1 : x->key.ino > y->key.ino;
}

/* By device and inode; a file read twice, its newest and largest copy last. */
static int file_cmp(const void *a, const void *b)
{
	const struct file_entry *x = a, *y = b;
	int c = file_key_cmp(x, y);

	if (c)
		return c;
	if (x->st.born_ns != y->st.born_ns)
		return x->st.born_ns < y->st.born_ns ? -1 : 1;
	if (x->st.read_reqs != y->st.read_reqs)
		return x->st.read_reqs < y->st.read_reqs ? -1 : 1;
	return x->st.prefetch_chunks < y->st.prefetch_chunks ? -1 :
	       x->st.prefetch_chunks > y->st.prefetch_chunks;
}

/*
 * files[] in order, one entry per file.  An LRU map walked while it evicts
 * gives some keys twice (bpf_map_get_next_key() after a key just evicted
 * starts over from the first), and a file twice would be two lines, and
 * two Prometheus series of one name and labels.  Of its copies the newest
 * entry (born_ns) with the most counted is kept: the counters only grow.
 */
static void files_sort(void)
{
	int i, w = 0;

	qsort(files, nfiles, sizeof(files[0]), file_cmp);
	for (i = 0; i < nfiles; i++) {
		if (w && !file_key_cmp(&files[w - 1], &files[i]))
			w--;
		files[w++] = files[i];
	}
	nfiles = w;
}

static void files_read(int fd)
{
	struct at_file_key key, next, *prev = NULL;

	nfiles = 0;
	while (nfiles < files_cap && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &files[nfiles].st))
			continue;
		files[nfiles++].key = key;
	}
	files_sort();
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
	out_sync();
}

/*
 * --top-files: per-file counters that never go backwards.  The LRU may evict
 * a file's entry and make a new one (another born_ns) that starts from
 * zero; what the old one had counted is kept here.  A file that left the
 * map is remembered while there is room (facc_max: twice the map's size).
 */
#define FACC_NR		4

static const struct {
	const char *name, *help;
	size_t off;
} facc_m[FACC_NR] = {
	{ "aheadfs_file_prefetch_bytes_total", "Bytes prefetched",
	  offsetof(struct at_file_stats, prefetch_bytes) },
	{ "aheadfs_file_read_bytes_total", "Bytes read",
	  offsetof(struct at_file_stats, read_bytes) },
	{ "aheadfs_file_absent_bytes_total", "Requested bytes not cached at read time",
	  offsetof(struct at_file_stats, absent_bytes) },
	{ "aheadfs_file_from_prefetch_bytes_total", "Cached bytes read inside the prefetched range",
	  offsetof(struct at_file_stats, hit_bytes) },
};

struct file_acc {
	struct at_file_key key;
	__u64 born_ns;
	__u64 last[FACC_NR];	/* the map entry's, at the last read */
	__u64 total[FACC_NR];	/* over every entry the file had */
	bool live;		/* in the map at the last read */
};

static struct file_acc *facc, **facc_top;
static long facc_max;
static int nfacc;

/* The buffers for an ahead_files of @cap entries. */
static void files_alloc(long cap)
{
	files_cap = cap;
	facc_max = 2 * cap;
	files = calloc(cap, sizeof(*files));
	facc = calloc(facc_max, sizeof(*facc));
	facc_top = calloc(facc_max, sizeof(*facc_top));
	if (!files || !facc || !facc_top)
		die("out of memory");
}

static int facc_cmp(const void *a, const void *b)
{
	const struct file_acc *x = a, *y = b;

	if (x->key.dev != y->key.dev)
		return x->key.dev < y->key.dev ? -1 : 1;
	return x->key.ino < y->key.ino ? -1 : x->key.ino > y->key.ino;
}

static __u64 stat_at(const struct at_file_stats *st, int j)
{
	return *(const __u64 *)((const char *)st + facc_m[j].off);
}

/* Fold the map just read (files[], sorted) into facc[]. */
static void facc_update(void)
{
	int i, j, n0 = nfacc, w;

	for (i = 0; i < nfacc; i++)
		facc[i].live = false;
	for (i = 0; i < nfiles; i++) {
		struct file_acc probe = { .key = files[i].key }, *a;
		bool again;

		a = bsearch(&probe, facc, n0, sizeof(facc[0]), facc_cmp);
		if (!a) {
			if (nfacc == facc_max) {
				/* Forget files no longer in the map first. */
				for (j = w = 0; j < nfacc; j++)
					if (facc[j].live || j >= n0)
						facc[w++] = facc[j];
				n0 -= nfacc - w;
				nfacc = w;
				if (nfacc == facc_max)
					continue;
			}
			a = &facc[nfacc++];
			memset(a, 0, sizeof(*a));
			a->key = files[i].key;
			a->born_ns = files[i].st.born_ns;
		}
		again = a->born_ns == files[i].st.born_ns;
		for (j = 0; j < FACC_NR; j++) {
			__u64 cur = stat_at(&files[i].st, j);

			a->total[j] += again && cur >= a->last[j] ?
				       cur - a->last[j] : cur;
			a->last[j] = cur;
		}
		a->born_ns = files[i].st.born_ns;
		a->live = true;
	}
	qsort(facc, nfacc, sizeof(facc[0]), facc_cmp);
}

/* Most bytes read first; equal ones in key order, so the choice is stable. */
static int facc_top_cmp(const void *a, const void *b)
{
	const struct file_acc *x = *(struct file_acc *const *)a;
	const struct file_acc *y = *(struct file_acc *const *)b;

	if (x->total[1] != y->total[1])
		return x->total[1] > y->total[1] ? -1 : 1;
	return facc_cmp(x, y);
}

static int facc_ptr_cmp(const void *a, const void *b)
{
	return facc_cmp(*(struct file_acc *const *)a,
			*(struct file_acc *const *)b);
}

static int mounts_fd = -1;

static void prom_write_mounts(FILE *f)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} m[] = {
		{ "aheadfs_prefetch_chunks_total", "Prefetch chunks issued",
		  offsetof(struct at_mount_stats, prefetch_chunks) },
		{ "aheadfs_prefetch_bytes_total", "Bytes prefetched",
		  offsetof(struct at_mount_stats, prefetch_bytes) },
		{ "aheadfs_read_requests_total", "Read requests",
		  offsetof(struct at_mount_stats, read_reqs) },
		{ "aheadfs_read_bytes_total", "Bytes read",
		  offsetof(struct at_mount_stats, read_bytes) },
		{ "aheadfs_read_present_bytes_total", "Requested bytes cached at read time",
		  offsetof(struct at_mount_stats, present_bytes) },
		{ "aheadfs_read_absent_bytes_total", "Requested bytes not cached at read time",
		  offsetof(struct at_mount_stats, absent_bytes) },
		{ "aheadfs_read_from_prefetch_bytes_total", "Cached bytes read inside the prefetched range",
		  offsetof(struct at_mount_stats, hit_bytes) },
	};
	static struct {
		__u32 dev;
		struct at_mount_stats st;
	} ms[AT_MAX_MOUNTS];
	struct at_mount_stats st;
	__u32 key, next, *prev = NULL;
	int i, k, n = 0;
	size_t j;
	char dev[32];

	while (n < AT_MAX_MOUNTS &&
	       !bpf_map_get_next_key(mounts_fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(mounts_fd, &key, &st))
			continue;
		/* Insertion keeps them in device order: few mounts. */
		for (k = n; k > 0 && ms[k - 1].dev > key; k--)
			ms[k] = ms[k - 1];
		ms[k].dev = key;
		ms[k].st = st;
		n++;
	}
	for (j = 0; j < sizeof(m) / sizeof(m[0]); j++) {
		fprintf(f, "# HELP %s %s, per mount, from aheadtrace.\n",
			m[j].name, m[j].help);
		fprintf(f, "# TYPE %s counter\n", m[j].name);
		for (i = 0; i < n; i++) {
			fmt_dev(ms[i].dev, dev, sizeof(dev));
			fprintf(f, "%s{dev=\"%s\"} %llu\n", m[j].name, dev,
				*(__u64 *)((char *)&ms[i].st + m[j].off));
		}
	}
}

static void prom_write_files(FILE *f)
{
	struct file_acc **top = facc_top;
	char dev[32];
	int i, j, n;

	prom_write_mounts(f);
	if (!env.top_files)
		return;
	for (i = 0; i < nfacc; i++)
		top[i] = &facc[i];
	qsort(top, nfacc, sizeof(top[0]), facc_top_cmp);
	n = nfacc < env.top_files ? nfacc : env.top_files;
	qsort(top, n, sizeof(top[0]), facc_ptr_cmp);
	for (j = 0; j < FACC_NR; j++) {
		fprintf(f, "# HELP %s %s, per file (the %ld read most), from aheadtrace.\n",
			facc_m[j].name, facc_m[j].help, env.top_files);
		fprintf(f, "# TYPE %s counter\n", facc_m[j].name);
		for (i = 0; i < n; i++) {
			fmt_dev(top[i]->key.dev, dev, sizeof(dev));
			fprintf(f, "%s{dev=\"%s\",ino=\"%llu\"} %llu\n",
				facc_m[j].name, dev,
				(unsigned long long)top[i]->key.ino,
				(unsigned long long)top[i]->total[j]);
		}
	}
}

static void prom_write(void)
{
	char *tmp;
	FILE *f;
	int fd;

	if (!env.prom)
		return;
	tmp = tmpfile_beside(env.prom, &fd);
	f = tmp ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "aheadtrace: --prom %s: %s\n", env.prom, strerror(errno));
		if (tmp) {
			close(fd);
			unlink(tmp);
			free(tmp);
		}
		return;
	}
	if (env.verb == V_PREFETCH)
		prom_write_files(f);
	else
		prom_write_hists(f, env.verb == V_VFS);
	prom_write_dropped(f);
	/* node_exporter must never see a half-written file. */
	if (fclose(f) || rename(tmp, env.prom)) {
		fprintf(stderr, "aheadtrace: %s: %s\n", env.prom, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
}

/* ---- the operation log ---- */

static __u64 events;
#define AT_POLL_MS	100	/* oplog: records appear within this */

/*
 * The event's file as text: the name, or with -P the path from the mount's
 * root ("sub/dir/beta.dat"; ".../" first when the walk stopped short).
 * Empty when no name is known.
 */
static void event_name(const struct at_event *e, char *buf, size_t sz)
{
	const char *comp[AT_PATH_DEPTH];
	size_t off = 0, len = 0;
	int n = 0, i;

	buf[0] = '\0';
	while (n < e->depth && n < AT_PATH_DEPTH && off < AT_PATH_LEN) {
		const char *c = e->path + off;
		size_t l = strnlen(c, AT_PATH_LEN - off);

		if (off + l == AT_PATH_LEN)
			break;		/* unterminated: not from our program */
		comp[n++] = c;
		off += l + 1;
	}
	if (!n)
		return;
	if (e->name_flags & AT_NAME_TRUNC)
		len = snprintf(buf, sz, ".../");
	for (i = n - 1; i >= 0 && len < sz; i--) {
		size_t l = strlen(comp[i]);

		if (len + l + 2 > sz)	/* as snprintf: cut at the end */
			l = sz - len - 1;
		memcpy(buf + len, comp[i], l);
		len += l;
		if (i && len + 1 < sz)
			buf[len++] = '/';
		buf[len] = '\0';
		if (len + 1 >= sz)
			break;
	}
}

/*
 * oplog's text output: lines built in place (oplog_text.h) in a buffer of
 * our own, written out when it fills and at every poll; stdio's fwrite
 * would copy each line once more.
 */
static char out_buf[1 << 16];
static size_t out_len;
static struct at_text text_cache;

static void out_flush(void)
{
	size_t off = 0;

	/* After a failed write, what comes is dropped: the run is ending. */
	while (off < out_len && !out_errno) {
		ssize_t n = write(STDOUT_FILENO, out_buf + off, out_len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			out_errno = n ? errno : EIO;
			exiting = 1;
			break;
		}
		off += n;
	}
	out_len = 0;
}

/* -T: the wall-clock time of a record, HH:MM:SS. */
static const char *clock_of(const struct at_event *e)
{
	static time_t ts_sec = -1;
	static char ts[16];
	__s64 ns = (__s64)e->ts_ns + real_minus_mono_ns;
	time_t t = ns / 1000000000;

	/* localtime_r once a second, not once a record. */
	if (t != ts_sec) {
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(ts, sizeof(ts), "%H:%M:%S", &tm);
		ts_sec = t;
	}
	return ts;
}

static void text_line(const struct at_event *e, const char *op,
		      const char *dev, const char *name, size_t name_max)
{
	char *end;

	if (sizeof(out_buf) - out_len < AT_LINE_MAX)
		out_flush();
	end = at_text_line(&text_cache, out_buf + out_len, e, op, dev, name,
			   name_max, env.timestamp ? clock_of(e) : NULL);
	out_len = end - out_buf;
}

/*
 * oplog -c: fsslower's CSV with oplog's columns.  A field with a comma, a
 * quote or a blank is quoted (RFC 4180, "" for a quote); a control
 * character is written '?', as in the text, so a record is one line.
 */
static const char csv_header[] =
	"ENDTIME_ns,PID,TID,COMM,OP,DEV,INO,OFFSET_b,BYTES,PRESENT,ABSENT,"
	"LATENCY_us,RET,FILE,WINDOW,INO_OUT,OFFSET_OUT\n";

static void csv_str(const char *s, size_t max)
{
	size_t n = strnlen(s, max), i;
	bool quote = false;

	for (i = 0; i < n; i++)
		quote |= s[i] == ',' || s[i] == '"' || s[i] == ' ';
	if (quote)
		putchar('"');
	for (i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c == '"')
			fputs("\"\"", stdout);
		else
			putchar(c < 0x20 || c == 0x7f ? '?' : c);
	}
	if (quote)
		putchar('"');
}

static void csv_line(const struct at_event *e, const char *op, const char *dev,
		     const char *name)
{
	bool timed = e->kind != AT_KIND_PREFETCH;

	if (env.timestamp)
		printf("%s,", clock_of(e));
	printf("%llu,%u,%u,", (unsigned long long)e->ts_ns, e->pid, e->tid);
	csv_str(e->comm, sizeof(e->comm));
	printf(",%s,%s,%llu,", op, dev, (unsigned long long)e->ino);
	if (e->kind != AT_KIND_META)
		printf("%lld,%llu", (long long)e->pos, (unsigned long long)e->len);
	else
		putchar(',');
	if (e->kind == AT_KIND_READ)
		printf(",%llu,%llu,", (unsigned long long)e->present,
		       (unsigned long long)e->absent);
	else
		fputs(",,,", stdout);
	if (timed)
		printf("%llu.%03llu,%lld,", (unsigned long long)e->latency_ns / 1000,
		       (unsigned long long)e->latency_ns % 1000, (long long)e->ret);
	else
		fputs(",,", stdout);
	csv_str(name, AT_PATH_LEN + 8);
	if (e->kind == AT_KIND_PREFETCH)
		printf(",%llu,,\n", (unsigned long long)e->window);
	else if (e->kind == AT_KIND_COPY)
		printf(",,%llu,%lld\n", (unsigned long long)e->ino_out,
		       (long long)e->pos_out);
	else
		fputs(",,,\n", stdout);
}

/*
 * A copy record's operation for -j: "remap" for a dedupe (FIDEDUPERANGE),
 * else "copy"; a clone may be either (at_copy_ops()) and stays "copy",
 * its method says "clone".
 */
static const char *copy_op(const struct at_event *e)
{
	return at_copy_ops(e->op) == 1ULL << AT_OP_remap ? "remap" : "copy";
}

static const char *op_of(const struct at_event *e)
{
	switch (e->kind) {
	case AT_KIND_READ:
		return "read";
	case AT_KIND_PREFETCH:
		return "prefetch";
	case AT_KIND_COPY:
		return e->op < 4 ? copy_names[e->op] : "copy";
	default:
		return op_name(e->op, false);
	}
}

/* oplog's first line: the columns (CSV's with -c), none for JSON lines. */
static void oplog_header(void)
{
	if (env.csv) {
		printf("%s%s", env.timestamp ? "TIME," : "", csv_header);
	} else if (!env.json) {
		if (env.timestamp)
			printf("%-8s ", "TIME");
		printf("%-7s %-7s %-16s %-10s %-8s %-10s %14s %12s %12s %12s %10s %6s %s\n",
		       "PID", "TID", "COMM", "OP", "DEV", "INO",
		       "OFFSET", "SIZE", "PRESENT", "ABSENT",
		       "LAT(ms)", "RET", env.paths ? "PATH" : "FILENAME");
	}
	/* The lines go through out_buf, after this. */
	out_sync();
}

static int on_event(void *ctx, void *data, size_t size)
{
	const struct at_event *e = data;
	char dev[32], name[AT_PATH_LEN + 8];
	const char *op;

	if (size < sizeof(*e))
		return 0;
	events++;
	if (env.csv) {
		fmt_dev(e->dev, dev, sizeof(dev));
		event_name(e, name, sizeof(name));
		csv_line(e, op_of(e), dev, name);
		return 0;
	}
	/*
	 * A name alone, the usual case, is used where it lies: the program
	 * ends it within AT_NAME_MAX bytes.
	 */
	if (!env.json && e->depth == 1 && !(e->name_flags & AT_NAME_TRUNC)) {
		text_line(e, op_of(e), dev_text(e->dev), e->path, AT_NAME_MAX);
		return 0;
	}
	fmt_dev(e->dev, dev, sizeof(dev));
	event_name(e, name, sizeof(name));
	op = op_of(e);
	if (env.json) {
		printf("{\"type\":\"op\",\"ts_ns\":%llu,\"time\":%.6f,",
		       (unsigned long long)e->ts_ns,
		       ((__s64)(e->ts_ns - mono_start_ns)) / 1e9);
		/* -T: the TIME column's wall-clock time, as text and CSV have it. */
		if (env.timestamp)
			printf("\"timestamp\":\"%s\",", clock_of(e));
		printf("\"pid\":%u,\"tid\":%u,\"comm\":", e->pid, e->tid);
		json_str(stdout, e->comm, sizeof(e->comm));
		printf(",\"kind\":\"%s\",\"op\":\"%s\",\"dev\":\"%s\",\"ino\":%llu,\"name\":",
		       e->kind == AT_KIND_READ ? "read" :
		       e->kind == AT_KIND_PREFETCH ? "prefetch" :
		       e->kind == AT_KIND_COPY ? "copy" : "meta",
		       e->kind == AT_KIND_COPY ? copy_op(e) : op, dev,
		       (unsigned long long)e->ino);
		if (e->depth)
			json_str(stdout, e->path, AT_NAME_MAX);
		else
			fputs("null", stdout);
		if (env.paths) {
			fputs(",\"path\":", stdout);
			if (name[0])
				json_str(stdout, name, sizeof(name));
			else
				fputs("null", stdout);
		}
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
	text_line(e, op, dev, name, sizeof(name));
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

static void attach(struct bpf_program *p)
{
	struct bpf_link *l;

	if (!bpf_program__autoload(p))
		return;
	l = bpf_program__attach(p);
	if (!l)
		die("cannot attach %s: %s", bpf_program__section_name(p),
		    strerror(errno));
	links[nlinks++] = l;
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

static int periodic(int fd, bool files_mode, bool vfs, bool per)
{
	long n = 0;

	for (;;) {
		bool more = wait_interval();

		dropped_read();
		if (files_mode) {
			files_read(fd);
			if (env.top_files)
				facc_update();
			files_print();
		} else {
			hist_read(fd, per);
			hist_print(vfs);
		}
		prom_write();
		if (!more || !env.interval || out_errno)
			break;
		if (env.count && ++n >= env.count)
			break;
		drop_report(dropped, false);
	}
	drop_report(dropped, true);
	return 0;
}

/* ---- heatmap ---- */

/* Terminal columns: slots HEAT_LO..HEAT_HI-1, 256 ns (2^8) to 17 s (2^34). */
#define HEAT_LO		8
#define HEAT_HI		35

struct heat_col {
	double time;		/* seconds since start, at the column's end */
	__u64 count;
	__u64 slots[AT_HIST_SLOTS];
};

static struct heat_col *heat;
static int nheat, heat_cap;

static const char *heat_op(void)
{
	int op = __builtin_ctzll(env.ops_mask);

	return op_name(op, false);
}

/* The operation's slots, summed over the mounts the map holds. */
static void heat_read(int fd, __u64 *slots)
{
	struct at_hist_key key, next, *prev = NULL;
	struct at_hist h;
	int s;

	__u32 op;

	memset(slots, 0, AT_HIST_SLOTS * sizeof(*slots));
	if (hist_by_op) {
		for (op = 0; op < AT_NR_META_OPS; op++) {
			if (!(env.ops_mask & (1ULL << op)) ||
			    !ophist_read(fd, op, &h))
				continue;
			for (s = 0; s < AT_HIST_SLOTS; s++)
				slots[s] += h.slots[s];
		}
		return;
	}
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &h) ||
		    !(env.ops_mask & (1ULL << key.op)))
			continue;
		for (s = 0; s < AT_HIST_SLOTS; s++)
			slots[s] += h.slots[s];
	}
}

/* "256ns", "1us", "16ms": the lower bound of slot @s, rounded. */
static void fmt_slot(int s, char *buf, size_t sz)
{
	double ns = (double)(1ULL << s);

	if (ns < 1e3)
		snprintf(buf, sz, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, sz, "%.3gus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, sz, "%.3gms", ns / 1e6);
	else
		snprintf(buf, sz, "%.3gs", ns / 1e9);
}

static void heat_header(void)
{
	char line[HEAT_HI - HEAT_LO + 1];
	int i;

	if (env.json)
		return;
	/* Labels over the slots of 1.02 us, 1.05 ms and 1.07 s. */
	memset(line, ' ', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	memcpy(line + 10 - HEAT_LO, "1us", 3);
	memcpy(line + 20 - HEAT_LO, "1ms", 3);
	memcpy(line + 30 - HEAT_LO, "1s", 2);
	printf("%-8s %8s  %s\n", "", "", line);
	printf("%-8s %8s |", "TIME", "COUNT");
	for (i = HEAT_LO; i < HEAT_HI; i++)
		putchar(i % 10 ? '.' : '|');
	printf("| %s latency, log2 buckets\n", heat_op());
	out_sync();
}

static void heat_print(const struct heat_col *c)
{
	static const char *const shade[] = { " ", "\u2591", "\u2592", "\u2593", "\u2588" };
	__u64 row[HEAT_HI - HEAT_LO] = {}, max = 0;
	int s, i;

	if (env.json) {
		printf("{\"type\":\"heatmap\",\"time\":%.3f,\"op\":\"%s\",\"count\":%llu,\"slots\":[",
		       c->time, heat_op(), (unsigned long long)c->count);
		for (s = 0; s < AT_HIST_SLOTS; s++)
			printf("%s%llu", s ? "," : "",
			       (unsigned long long)c->slots[s]);
		printf("]}\n");
		out_sync();
		return;
	}
	/* Slots outside the rows' range join the first or the last. */
	for (s = 0; s < AT_HIST_SLOTS; s++) {
		i = s < HEAT_LO ? 0 : s >= HEAT_HI ? HEAT_HI - HEAT_LO - 1 :
		    s - HEAT_LO;
		row[i] += c->slots[s];
	}
	for (i = 0; i < HEAT_HI - HEAT_LO; i++)
		if (row[i] > max)
			max = row[i];
	{
		time_t t = time(NULL);
		struct tm tm;
		char ts[16];

		localtime_r(&t, &tm);
		strftime(ts, sizeof(ts), "%H:%M:%S", &tm);
		printf("%-8s %8llu |", ts, (unsigned long long)c->count);
	}
	/* Shades relative to the row's fullest bucket: where the mass is. */
	for (i = 0; i < HEAT_HI - HEAT_LO; i++)
		fputs(shade[row[i] ? (int)((row[i] * 4 + max - 1) / max) : 0],
		      stdout);
	printf("|\n");
	out_sync();
}

static void xml_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if ((unsigned char)*s < 0x20)
			fputc('?', f);
		else
			fputc(*s, f);
	}
}

/* White (none) through yellow to dark red (the most), on a log scale. */
static void heat_colour(__u64 v, __u64 max, char *buf, size_t sz)
{
	static const int stops[][3] = {
		{ 255, 255, 204 }, { 254, 178, 76 }, { 240, 59, 32 },
		{ 128, 0, 38 },
	};
	double f, x;
	int k, c[3], j;

	if (!v) {
		snprintf(buf, sz, "#f7f7f7");
		return;
	}
	f = max > 1 ? log1p((double)v) / log1p((double)max) : 1.0;
	x = f * 3;
	k = x >= 3 ? 2 : (int)x;
	x -= k;
	for (j = 0; j < 3; j++)
		c[j] = (int)(stops[k][j] + (stops[k + 1][j] - stops[k][j]) * x + 0.5);
	snprintf(buf, sz, "#%02x%02x%02x", c[0], c[1], c[2]);
}

/* The whole run as one picture: time across, latency up, colour for count. */
static void heat_svg(void)
{
	const int cw = 14, ch = 14, left = 64, top = 36, bottom = 40;
	int lo = AT_HIST_SLOTS, hi = -1, i, s, w, h, step;
	char col[16], lbl[16], *tmp;
	__u64 max = 0;
	FILE *f;
	int fd;

	for (i = 0; i < nheat; i++)
		for (s = 0; s < AT_HIST_SLOTS; s++)
			if (heat[i].slots[s]) {
				if (s < lo)
					lo = s;
				if (s > hi)
					hi = s;
				if (heat[i].slots[s] > max)
					max = heat[i].slots[s];
			}
	if (hi < 0)
		lo = hi = 10;
	lo = lo > 0 ? lo - 1 : lo;
	hi = hi < AT_HIST_SLOTS - 1 ? hi + 1 : hi;
	w = left + (nheat ? nheat : 1) * cw + 90;
	/* Room for the title: about 7 px a character at 13 px. */
	if (w < left + 7 * (int)(40 + (env.mnt ? strlen(env.mnt) : 0)))
		w = left + 7 * (int)(40 + (env.mnt ? strlen(env.mnt) : 0));
	h = top + (hi - lo + 1) * ch + bottom;
	/* A new file renamed over FILE, as --prom's: no symlink followed. */
	tmp = tmpfile_beside(env.svg, &fd);
	f = tmp ? fdopen(fd, "w") : NULL;
	if (!f) {
		int e = errno;

		if (tmp) {
			close(fd);
			unlink(tmp);
			free(tmp);
		}
		die("--svg %s: %s", env.svg, strerror(e));
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n",
		w, h, w, h);
	fprintf(f, "<title>aheadfs %s latency heatmap</title>\n", heat_op());
	fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", w, h);
	fprintf(f, "<text x=\"%d\" y=\"20\" font-size=\"13\">aheadfs %s latency", left,
		heat_op());
	if (env.mnt) {
		fputs(" on ", f);
		xml_str(f, env.mnt);
	}
	fprintf(f, ", %ld s per column</text>\n", env.interval);
	for (i = 0; i < nheat; i++)
		for (s = lo; s <= hi; s++) {
			heat_colour(heat[i].slots[s], max, col, sizeof(col));
			fmt_slot(s, lbl, sizeof(lbl));
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\">"
				"<title>%.3f s, %s+: %llu</title></rect>\n",
				left + i * cw, top + (hi - s) * ch, cw, ch, col,
				heat[i].time, lbl,
				(unsigned long long)heat[i].slots[s]);
		}
	/* The latency axis: every slot's lower bound, at its row's foot. */
	for (s = lo; s <= hi; s++) {
		fmt_slot(s, lbl, sizeof(lbl));
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n",
			left - 4, top + (hi - s + 1) * ch - 3, lbl);
	}
	/* The time axis: a label every tenth of the way, 42 px apart at least. */
	step = nheat > 10 ? (nheat + 9) / 10 : 1;
	if (step * cw < 42)
		step = (42 + cw - 1) / cw;
	for (i = 0; i < nheat; i += step)
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%.0fs</text>\n",
			left + i * cw + cw / 2, top + (hi - lo + 1) * ch + 14,
			heat[i].time);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time since start</text>\n",
		left + (nheat ? nheat : 1) * cw / 2, h - 8);
	/* The colour scale. */
	for (i = 0; i <= 4; i++) {
		__u64 v = max ? (__u64)(expm1(log1p((double)max) * i / 4) + 0.5) : 0;

		heat_colour(v, max, col, sizeof(col));
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\" stroke=\"#999\"/>"
			"<text x=\"%d\" y=\"%d\">%llu</text>\n",
			w - 80, top + i * 16, col, w - 64, top + i * 16 + 10,
			(unsigned long long)v);
	}
	fprintf(f, "</svg>\n");
	if (fclose(f) || rename(tmp, env.svg)) {
		int e = errno;

		unlink(tmp);
		free(tmp);
		die("--svg %s: %s", env.svg, strerror(e));
	}
	free(tmp);
}

static void heatmap(int fd)
{
	__u64 cur[AT_HIST_SLOTS], prev[AT_HIST_SLOTS] = {};
	long n = 0;
	int s;

	heat_header();
	for (;;) {
		bool more = wait_interval();
		struct heat_col *c;

		if (nheat == heat_cap) {
			heat_cap = heat_cap ? heat_cap * 2 : 64;
			heat = realloc(heat, heat_cap * sizeof(*heat));
			if (!heat)
				die("out of memory");
		}
		c = &heat[nheat++];
		memset(c, 0, sizeof(*c));
		dropped_read();
		heat_read(fd, cur);
		for (s = 0; s < AT_HIST_SLOTS; s++) {
			c->slots[s] = cur[s] - prev[s];
			c->count += c->slots[s];
			prev[s] = cur[s];
		}
		c->time = elapsed();
		heat_print(c);
		if (!more || out_errno)
			break;
		if (env.count && ++n >= env.count)
			break;
		drop_report(dropped, false);
	}
	drop_report(dropped, true);
	if (env.svg)
		heat_svg();
	free(heat);
}

/*
 * Records the ring buffer had no room for: said while tracing (once a
 * second at most, what was lost since the last word, and the total), and
 * the total at exit.
 */
static __u64 lost_said;

static void lost_report(__u64 total, bool final)
{
	if (final) {
		if (total)
			fprintf(stderr, "aheadtrace: %llu events lost (ring buffer full)\n",
				(unsigned long long)total);
		return;
	}
	if (total <= lost_said)
		return;
	/* After the lines before the loss, not among them. */
	out_flush();
	out_sync();
	fprintf(stderr, "aheadtrace: lost %llu events (ring buffer full; %llu in all): a larger -b, or fewer operations (-o, -p, -m)\n",
		(unsigned long long)(total - lost_said), (unsigned long long)total);
	lost_said = total;
}

/*
 * oplog -d: the run is over at @t seconds since the programs were attached
 * (attached_at), not since aheadtrace started: loading takes a while.
 */
static double attached_at;

static bool past_duration(double t)
{
	return env.duration && t >= env.duration;
}

/* What the options ask of the programs: ahead_config's one entry. */
static struct at_config make_config(void)
{
	struct at_config cfg = {
		.dev = env.dev, .tgid = env.pid, .min_lat_ns = env.min_lat_ns,
		.ops_mask = env.ops_mask, .hist_unit_ns = env.hist_unit_ns,
	};

	switch (env.verb) {
	case V_HIST:
	case V_HEATMAP:
		cfg.flags = AT_CFG_NO_OPLOG | AT_CFG_NO_FILES;
		if (env.per_pid)
			cfg.flags |= AT_CFG_HIST_PID;
		else if (env.per_comm)
			cfg.flags |= AT_CFG_HIST_COMM;
		else if (env.dev)
			cfg.flags |= AT_CFG_HIST_OPS;
		break;
	case V_PREFETCH:
		cfg.flags = AT_CFG_NO_OPLOG | AT_CFG_NO_HIST;
		break;
	default:
		cfg.flags = AT_CFG_NO_HIST | AT_CFG_NO_FILES;
		if (env.paths)
			cfg.flags |= AT_CFG_PATHS;
		break;
	}
	if (env.cgroup)
		cfg.flags |= AT_CFG_CGROUP;
	return cfg;
}

static int run_aheadfs(void)
{
	struct at_config cfg = make_config();
	int ncpu = libbpf_num_possible_cpus();
	struct aheadfs_bpf *skel;
	struct ring_buffer *rb = NULL;
	__u32 zero = 0;
	int err;

	if (ncpu <= 0)
		die("cannot count the CPUs: %s", strerror(-ncpu));
	skel = aheadfs_bpf__open();
	if (!skel)
		load_error(-errno, "the aheadfs programs");
	switch (env.verb) {
	case V_HIST:
	case V_HEATMAP:
		hist_by_op = cfg.flags & AT_CFG_HIST_OPS;
		/* By op, at_meta_ops counts alone; at_meta has nothing to do. */
		bpf_program__set_autoload(skel->progs.at_meta, !hist_by_op);
		bpf_program__set_autoload(skel->progs.at_meta_ops, hist_by_op);
		bpf_program__set_autoload(skel->progs.at_read, false);
		bpf_program__set_autoload(skel->progs.at_prefetch, false);
		bpf_program__set_autoload(skel->progs.at_copy, false);
		break;
	case V_PREFETCH:
		bpf_program__set_autoload(skel->progs.at_copy, false);
		bpf_program__set_autoload(skel->progs.at_meta, false);
		bpf_program__set_autoload(skel->progs.at_meta_ops, false);
		/* The only verb that fills it: room for every CPU's free list. */
		files_alloc(files_max(ncpu));
		if (bpf_map__set_max_entries(skel->maps.ahead_files, files_cap))
			die("cannot size the per-file map: %s", strerror(errno));
		break;
	default:
		bpf_program__set_autoload(skel->progs.at_meta_ops, false);
		break;
	}
	/* The other verbs log nothing: one page, the smallest ring buffer. */
	if (bpf_map__set_max_entries(skel->maps.ahead_events,
				     env.verb == V_OPLOG ?
				     ringbuf_bytes(env.buffer_pages) :
				     (__u32)page_size()))
		die("cannot size the ring buffer: %s", strerror(errno));
	err = aheadfs_bpf__load(skel);
	if (err)
		load_error(err, "the aheadfs programs");
	/* The reader is woken at a quarter of the ring: no query per record. */
	cfg.wake_bytes = bpf_map__max_entries(skel->maps.ahead_events) / 4;
	/* The cgroup first: the flag that reads it comes with the config. */
	if (env.cgroup_fd >= 0 &&
	    bpf_map_update_elem(bpf_map__fd(skel->maps.ahead_cgroup), &zero,
				&env.cgroup_fd, BPF_ANY))
		die("cannot set the --cgroup filter: %s", strerror(errno));
	err = bpf_map_update_elem(bpf_map__fd(skel->maps.ahead_config), &zero,
				  &cfg, BPF_ANY);
	if (err)
		die("cannot set the filters: %s", strerror(errno));
	attach(skel->progs.at_read);
	attach(skel->progs.at_prefetch);
	attach(skel->progs.at_copy);
	attach(skel->progs.at_meta);
	attach(skel->progs.at_meta_ops);
	attached_at = elapsed();
	if (env.verb != V_OPLOG) {
		lost_fd = bpf_map__fd(skel->maps.ahead_lost);
		lost_ncpu = ncpu;
	}

	switch (env.verb) {
	case V_HIST:
		announce("aheadfs operation latency");
		if (env.per_pid || env.per_comm)
			periodic(bpf_map__fd(skel->maps.ahead_phist), false,
				 false, true);
		else
			periodic(bpf_map__fd(hist_by_op ?
					     skel->maps.ahead_ophist :
					     skel->maps.ahead_hist), false,
				 false, false);
		break;
	case V_HEATMAP:
		announce("aheadfs latency for a heatmap");
		heatmap(bpf_map__fd(hist_by_op ? skel->maps.ahead_ophist :
				    skel->maps.ahead_hist));
		break;
	case V_PREFETCH:
		mounts_fd = bpf_map__fd(skel->maps.ahead_mounts);
		announce("aheadfs prefetch");
		periodic(bpf_map__fd(skel->maps.ahead_files), true, false,
			 false);
		break;
	default: {
		int ring_lost_fd = bpf_map__fd(skel->maps.ahead_lost);
		double lost_at = 1;

		rb = ring_buffer__new(bpf_map__fd(skel->maps.ahead_events),
				      on_event, NULL, NULL);
		if (!rb)
			die("cannot open the ring buffer: %s", strerror(errno));
		oplog_header();
		if (env.duration)
			fprintf(stderr, "Tracing aheadfs operations for %ld s... Hit Ctrl-C to end.\n",
				env.duration);
		else
			announce("aheadfs operations");
		while (!exiting && !past_duration(elapsed() - attached_at)) {
			err = ring_buffer__poll(rb, AT_POLL_MS);
			if (err < 0 && err != -EINTR)
				die("ring buffer: %s", strerror(-err));
			/*
			 * Records are submitted without a wakeup until a
			 * quarter of the ring is used: whatever a timeout
			 * left is read here.
			 */
			err = ring_buffer__consume(rb);
			if (err < 0)
				die("ring buffer: %s", strerror(-err));
			out_flush();
			out_sync();
			if (elapsed() >= lost_at) {
				lost_report(lost_count(ring_lost_fd, ncpu,
						       AT_LOST_RING), false);
				lost_at = elapsed() + 1;
			}
		}
		/* Everything that fired before Ctrl-C is printed. */
		detach_all();
		ring_buffer__consume(rb);
		out_flush();
		out_sync();
		lost_report(lost_count(ring_lost_fd, ncpu, AT_LOST_RING),
			    true);
		fprintf(stderr, "%llu events\n", (unsigned long long)events);
		ring_buffer__free(rb);
	}
	}
	detach_all();
	aheadfs_bpf__destroy(skel);
	return 0;
}

/* A VFS function's program in OBJ: "_in", "_out", "_kin" or "_kout". */
static struct bpf_program *vfs_prog(struct bpf_object *obj, int op,
				    const char *sfx)
{
	struct bpf_program *p;
	char name[64];

	snprintf(name, sizeof(name), "%s%s", vfs_names[op], sfx);
	p = bpf_object__find_program_by_name(obj, name);
	if (!p)
		die("no BPF program %s (rebuild bpf/)", name);
	return p;
}

/* Attach an entry and exit pair, both or neither; 0 or -errno. */
static int attach_pair(struct bpf_program *in, struct bpf_program *out)
{
	struct bpf_link *a, *b;
	int err;

	a = bpf_program__attach(in);
	if (!a)
		return -errno;
	b = bpf_program__attach(out);
	if (!b) {
		err = -errno;
		bpf_link__destroy(a);
		return err;
	}
	links[nlinks++] = a;
	links[nlinks++] = b;
	return 0;
}

static void vfs_set_filter(int config_fd, int devs_fd)
{
	struct at_vfs_config cfg = { .filter = 1 };
	__u32 zero = 0, one = 1;
	int i;

	for (i = 0; i < env.ndevs; i++)
		if (bpf_map_update_elem(devs_fd, &env.devs[i], &one, BPF_ANY))
			die("cannot set the device filter: %s", strerror(errno));
	if (bpf_map_update_elem(config_fd, &zero, &cfg, BPF_ANY))
		die("cannot set the device filter: %s", strerror(errno));
}

/*
 * fentry/fexit (vfs.bpf.o) for every function the kernel's BTF has, unless
 * --kprobe; kprobe/kretprobe (vfsk.bpf.o, sharing vfs.bpf.o's maps) for the
 * others, for those whose fentry does not attach, and for all of them on a
 * kernel where fentry programs do not load.  Each fallback is said.
 */
static int run_vfs(void)
{
	bool need_k[AT_NR_VFS_OPS], any_k = false;
	struct vfs_bpf *skel = NULL;
	struct vfsk_bpf *kskel = NULL;
	struct btf *vmlinux;
	int err, op, hist_fd;

	if (env.kprobe)
		fprintf(stderr, "aheadtrace: --kprobe: every VFS function traced with kprobe/kretprobe\n");
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		die("cannot read the kernel's BTF: %s", strerror(errno));
	for (op = 0; op < AT_NR_VFS_OPS; op++) {
		need_k[op] = env.kprobe;
		if (!env.kprobe && btf__find_by_name_kind(vmlinux, vfs_names[op],
							  BTF_KIND_FUNC) < 0) {
			fprintf(stderr, "aheadtrace: %s: no BTF for fentry, traced with a kprobe\n",
				vfs_names[op]);
			need_k[op] = true;
		}
	}
	btf__free(vmlinux);

	if (!env.kprobe) {
		skel = vfs_bpf__open();
		if (!skel)
			load_error(-errno, "the vfs programs");
		for (op = 0; op < AT_NR_VFS_OPS; op++) {
			bpf_program__set_autoload(vfs_prog(skel->obj, op, "_in"),
						  !need_k[op]);
			bpf_program__set_autoload(vfs_prog(skel->obj, op, "_out"),
						  !need_k[op]);
		}
		err = vfs_bpf__load(skel);
		if (err) {
			/* No BPF trampoline here, say: kprobes for all. */
			fprintf(stderr, "aheadtrace: the fentry programs do not load here (%s), tracing with kprobes\n",
				strerror(-err));
			vfs_bpf__destroy(skel);
			skel = NULL;
			for (op = 0; op < AT_NR_VFS_OPS; op++)
				need_k[op] = true;
		}
	}
	if (skel) {
		vfs_set_filter(bpf_map__fd(skel->maps.vfs_config),
			       bpf_map__fd(skel->maps.vfs_devs));
		for (op = 0; op < AT_NR_VFS_OPS; op++) {
			if (need_k[op])
				continue;
			err = attach_pair(vfs_prog(skel->obj, op, "_in"),
					  vfs_prog(skel->obj, op, "_out"));
			if (err) {
				fprintf(stderr, "aheadtrace: %s: fentry cannot attach (%s), traced with a kprobe\n",
					vfs_names[op], strerror(-err));
				need_k[op] = true;
			}
		}
	}
	for (op = 0; op < AT_NR_VFS_OPS; op++)
		any_k |= need_k[op];

	if (any_k) {
		kskel = vfsk_bpf__open();
		if (!kskel)
			load_error(-errno, "the vfs kprobe programs");
		for (op = 0; op < AT_NR_VFS_OPS; op++) {
			bpf_program__set_autoload(vfs_prog(kskel->obj, op, "_kin"),
						  need_k[op]);
			bpf_program__set_autoload(vfs_prog(kskel->obj, op, "_kout"),
						  need_k[op]);
		}
		/* One histogram, whichever program fills it. */
		if (skel &&
		    (bpf_map__reuse_fd(kskel->maps.vfsk_config,
				       bpf_map__fd(skel->maps.vfs_config)) ||
		     bpf_map__reuse_fd(kskel->maps.vfsk_devs,
				       bpf_map__fd(skel->maps.vfs_devs)) ||
		     bpf_map__reuse_fd(kskel->maps.vfsk_hist,
				       bpf_map__fd(skel->maps.vfs_hist))))
			die("cannot share the vfs maps: %s", strerror(errno));
		err = vfsk_bpf__load(kskel);
		if (err)
			load_error(err, "the vfs kprobe programs");
		if (!skel)
			vfs_set_filter(bpf_map__fd(kskel->maps.vfsk_config),
				       bpf_map__fd(kskel->maps.vfsk_devs));
		for (op = 0; op < AT_NR_VFS_OPS; op++) {
			if (!need_k[op])
				continue;
			err = attach_pair(vfs_prog(kskel->obj, op, "_kin"),
					  vfs_prog(kskel->obj, op, "_kout"));
			if (err)
				fprintf(stderr, "aheadtrace: %s not traceable here (%s), skipped\n",
					vfs_names[op], strerror(-err));
		}
	}
	if (!nlinks)
		die("no VFS function could be traced on this kernel");
	hist_fd = skel ? bpf_map__fd(skel->maps.vfs_hist) :
			 bpf_map__fd(kskel->maps.vfsk_hist);
	announce("VFS calls");
	periodic(hist_fd, false, true, false);
	detach_all();
	vfsk_bpf__destroy(kskel);
	vfs_bpf__destroy(skel);
	return 0;
}

/*
 * Ctrl-C and SIGTERM end the run with its final print; a closed stdout
 * (SIGPIPE ignored: EPIPE, see out_sync()) ends it the same way.
 */
static void setup_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv)
{
	int rc;

	parse_args(argc, argv);
	check_privilege();
	if (env.verb != V_VFS)
		check_module();
	/* Every program set reads kernel structures through CO-RE. */
	check_btf();
	libbpf_set_print(libbpf_print);
	setup_signals();
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	{
		struct timespec rt;

		clock_gettime(CLOCK_REALTIME, &rt);
		mono_start_ns = t_start.tv_sec * 1000000000ULL + t_start.tv_nsec;
		real_minus_mono_ns = (rt.tv_sec * 1000000000LL + rt.tv_nsec) -
				     (__s64)mono_start_ns;
	}
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	rc = env.verb == V_VFS ? run_vfs() : run_aheadfs();
	return rc ? rc : out_status();
}
