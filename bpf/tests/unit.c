// SPDX-License-Identifier: GPL-2.0
/*
 * aheadtrace's user-space half on the host, where no BPF program loads:
 * aheadtrace.c itself (its main renamed) driven without the kernel.
 *
 *   unit config VERB [OPTIONS]    the ahead_config the options ask for
 *   unit events VERB [OPTIONS]    recorded oplog events through on_event()
 *   unit copies VERB [OPTIONS]    recorded copies of every method, and an
 *                                 unknown op, through on_event()
 *   unit copy-ops                 whether -o copy and -o remap keep each
 *                                 copy method (at_copy_ops(), at_copy's)
 *   unit hist VERB [OPTIONS]      a recorded histogram through hist_print()
 *                                 and the Prometheus writer
 *   unit lost N... END            lost-record totals as read once a second,
 *                                 then the total at exit
 *   unit dropped VERB [OPTIONS] -- N... END   the same for the counts
 *                                 full maps dropped
 *   unit duration VERB [OPTIONS] -- T...   whether oplog is over at T s
 *   unit prom-edge VERB [OPTIONS] histograms with ops this build does not
 *                                 know, the clamped last slot and a count
 *                                 read behind its slots, as Prometheus text
 *   unit files VERB [OPTIONS]     an ahead_files walk that met evictions
 *                                 (keys twice) through the per-file output
 *   unit files-max NCPU...        ahead_files' size for NCPU possible CPUs
 *   unit pipe VERB [OPTIONS]      the verb's output into a closed pipe
 *                                 (hist: periodic(), heatmap: heatmap(),
 *                                 oplog: recorded events); how it ended on
 *                                 stderr, the exit status aheadtrace's
 *   unit full VERB [OPTIONS]      the same into /dev/full
 *
 * Output on stdout (lost: stderr, as aheadtrace says it); host.sh checks
 * it.  Parse errors exit as aheadtrace does.
 */
#define main aheadtrace_main
#include "../aheadtrace.c"
#undef main

static void put_path(struct at_event *e, const char *const *names, int n)
{
	size_t off = 0;

	for (int i = 0; i < n; i++) {
		size_t l = strlen(names[i]) + 1;

		memcpy(e->path + off, names[i], l);
		off += l;
	}
	e->depth = n;
}

/* The records of a dd that reads, a prefetch, names that need care. */
static void play_events(void)
{
	static const char *const beta[] = { "beta.dat", "dir", "sub" };
	static const char *const big[] = { "big" };
	static const char *const odd[] = { "a,b \"c\".dat" };
	static const char *const ctl[] = { "x\ny" };
	struct at_event e;

	memset(&e, 0, sizeof(e));
	e.ts_ns = 179314790358ULL;
	e.pid = 324;
	e.tid = 325;
	e.dev = 61;
	strcpy(e.comm, "dd");
	e.kind = AT_KIND_READ;
	e.op = 1;		/* legacy */
	e.ino = 12;
	e.len = 8650752;
	e.present = 8388608;
	e.absent = 262144;
	e.latency_ns = 437077200;
	e.ret = 8650752;
	put_path(&e, big, 1);
	on_event(NULL, &e, sizeof(e));

	e.kind = AT_KIND_PREFETCH;
	e.op = 0;
	strcpy(e.comm, "kworker/u8:2");
	e.pos = 8650752;
	e.len = 8388608;
	e.window = 8388608;
	e.latency_ns = 0;
	e.ret = 0;
	on_event(NULL, &e, sizeof(e));

	memset(&e, 0, sizeof(e));
	e.ts_ns = 179314790999ULL;
	e.pid = e.tid = 326;
	e.dev = 61;
	strcpy(e.comm, "rm");
	e.kind = AT_KIND_META;
	e.op = AT_OP_lookup;
	e.ino = 65539;
	e.latency_ns = 1873900;
	put_path(&e, odd, 1);
	on_event(NULL, &e, sizeof(e));

	e.kind = AT_KIND_COPY;
	e.op = AT_COPY_CHUNKED;
	e.ino = 12;
	e.pos = 0;
	e.ino_out = 13;
	e.pos_out = 4096;
	e.len = 1024;
	e.latency_ns = 5000;
	e.ret = 1024;
	put_path(&e, big, 1);
	on_event(NULL, &e, sizeof(e));

	memset(&e, 0, sizeof(e));
	e.pid = e.tid = 327;
	e.dev = (8 << 20) | 1;
	strcpy(e.comm, "ev\033il");
	e.kind = AT_KIND_META;
	e.op = AT_OP_unlink;
	e.ino = 14;
	e.latency_ns = 999;
	e.ret = -2;
	put_path(&e, ctl, 1);
	on_event(NULL, &e, sizeof(e));

	e.op = AT_OP_open;
	put_path(&e, beta, 3);
	on_event(NULL, &e, sizeof(e));

	out_flush();
	fflush(stdout);
}

/*
 * aheadfs_copy records of each method (clone, lower, chunked, dedupe), and a
 * meta record of op 40, which this build does not know.
 */
static void play_copies(void)
{
	struct at_event e;

	memset(&e, 0, sizeof(e));
	e.pid = e.tid = 400;
	e.dev = 61;
	strcpy(e.comm, "cp");
	e.kind = AT_KIND_COPY;
	e.ino = 12;
	e.ino_out = 13;
	e.len = 4096;
	e.ret = 4096;
	for (e.op = AT_COPY_CLONE; e.op <= AT_COPY_DEDUPE; e.op++)
		on_event(NULL, &e, sizeof(e));
	e.kind = AT_KIND_META;
	e.op = 40;
	e.ret = 0;
	on_event(NULL, &e, sizeof(e));
	out_flush();
	fflush(stdout);
}

/* read on 0:61: 1.5 ms, 2.5 ms and 9 ms, in the slots of the unit asked for. */
static void hist_seed(void)
{
	static const __u64 ns[] = { 1500000, 2500000, 9000000 };
	struct hist_entry *h = &hists[0];

	nhists = 1;
	memset(h, 0, sizeof(*h));
	h->key.dev = 61;
	h->key.op = AT_OP_read;
	for (int i = 0; i < 3; i++) {
		__u64 v = ns[i] / hist_unit();
		int slot = 63 - __builtin_clzll(v | 1);

		h->cur.slots[slot]++;
		h->cur.count++;
		h->cur.sum_ns += ns[i];
	}
}

static void hist(void)
{
	hist_seed();
	hist_print(false);
	prom_write_hists(stdout, false);
	fflush(stdout);
}

/*
 * Ops 40 and 41 (a newer module's) on 0:61, each with one operation in the
 * first slot and one in the last, the clamped one (2^39 units or more);
 * op 41's count read before its last slot's add.  Then 3 dropped counts.
 */
static void prom_edge(void)
{
	nhists = 2;
	memset(hists, 0, 2 * sizeof(hists[0]));
	for (int i = 0; i < 2; i++) {
		struct hist_entry *h = &hists[i];

		h->key.dev = 61;
		h->key.op = 40 + i;
		h->cur.slots[0] = 1;
		h->cur.slots[AT_HIST_SLOTS - 1] = 1;
		h->cur.count = i ? 1 : 2;
		h->cur.sum_ns = 1ULL << 40;
	}
	prom_write_hists(stdout, false);
	dropped = 3;
	prom_write_dropped(stdout);
	fflush(stdout);
}

/*
 * ahead_files walked while the LRU evicted: inode 7 of 0:61 seen twice (the
 * walk started over), inode 9 three times, a newer entry of it (born_ns 2)
 * among them.  Printed as prefetch prints it, and as --prom --top-files.
 */
static void files_dups(void)
{
	static const struct { __u64 ino, born, reads; } rec[] = {
		{ 7, 1, 3 }, { 9, 1, 5 }, { 8, 1, 1 }, { 7, 1, 4 }, { 9, 2, 2 },
		{ 9, 1, 6 },
	};
	int i;

	files_alloc(16);
	nfiles = sizeof(rec) / sizeof(rec[0]);
	for (i = 0; i < nfiles; i++) {
		files[i].key.dev = 61;
		files[i].key.ino = rec[i].ino;
		files[i].st.born_ns = rec[i].born;
		files[i].st.read_reqs = rec[i].reads;
		files[i].st.read_bytes = rec[i].reads * 4096;
	}
	files_sort();
	files_print();
	facc_update();
	prom_write_files(stdout);
	fflush(stdout);
}

/* stdout a pipe nobody reads, or with @full /dev/full (ENOSPC). */
static void broken_stdout(bool full)
{
	int p[2];

	if (full) {
		p[1] = open("/dev/full", O_WRONLY);
		if (p[1] < 0)
			exit(3);
	} else {
		if (pipe(p))
			exit(3);
		close(p[0]);
	}
	dup2(p[1], STDOUT_FILENO);
	close(p[1]);
}

/* The verb's printing loop on a closed pipe: it must stop, not die. */
static int pipe_run(bool full)
{
	double t0;

	setup_signals();
	broken_stdout(full);
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	switch (env.verb) {
	case V_HIST:
		hist_seed();
		periodic(-1, false, false, false);
		break;
	case V_HEATMAP:
		heatmap(-1);
		break;
	default:
		/* As oplog's loop after each poll. */
		play_events();
		out_sync();
		break;
	}
	t0 = elapsed();
	fprintf(stderr, "stopped: %s%s\n",
		out_errno ? strerror(out_errno) : "no error",
		!env.count ? "" : t0 < env.count * env.interval - 0.5 ?
		", before the count" : ", at the count");
	return out_status();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "lost")) {
		for (int i = 2; i < argc; i++)
			lost_report(strtoull(argv[i], NULL, 10), i == argc - 1);
		return 0;
	}
	if (!strcmp(mode, "copy-ops")) {
		static const char *const m[] = { "clone", "lower", "chunked", "dedupe", "4" };

		for (int i = 0; i < 5; i++)
			printf("%s copy=%d remap=%d\n", m[i],
			       !!(at_copy_ops(i) & (1ULL << AT_OP_copy)),
			       !!(at_copy_ops(i) & (1ULL << AT_OP_remap)));
		return 0;
	}
	if (!strcmp(mode, "files-max")) {
		for (int i = 2; i < argc; i++)
			printf("%s %ld\n", argv[i], files_max(atoi(argv[i])));
		return 0;
	}
	if (!strcmp(mode, "dropped")) {
		int sep = 2;

		while (sep < argc && strcmp(argv[sep], "--"))
			sep++;
		parse_args(sep - 1, argv + 1);
		for (int i = sep + 1; i < argc; i++)
			drop_report(strtoull(argv[i], NULL, 10), i == argc - 1);
		return 0;
	}
	if (!strcmp(mode, "duration")) {
		int sep = 2;

		while (sep < argc && strcmp(argv[sep], "--"))
			sep++;
		parse_args(sep - 1, argv + 1);
		for (int i = sep + 1; i < argc; i++)
			printf("%s %s\n", argv[i], past_duration(atof(argv[i])) ? "over" : "tracing");
		return 0;
	}
	parse_args(argc - 1, argv + 1);
	if (!strcmp(mode, "config")) {
		struct at_config c = make_config();

		printf("dev=%u tgid=%u min_lat_ns=%llu ops_mask=%llu flags=%u hist_unit_ns=%u cgroup_fd=%s\n",
		       c.dev, c.tgid, (unsigned long long)c.min_lat_ns,
		       (unsigned long long)c.ops_mask, c.flags, c.hist_unit_ns,
		       env.cgroup_fd >= 0 ? "open" : "none");
		printf("sizeof=%zu\n", sizeof(c));
	} else if (!strcmp(mode, "events")) {
		oplog_header();
		play_events();
	} else if (!strcmp(mode, "copies")) {
		play_copies();
	} else if (!strcmp(mode, "hist")) {
		hist();
	} else if (!strcmp(mode, "prom-edge")) {
		prom_edge();
	} else if (!strcmp(mode, "files")) {
		files_dups();
	} else if (!strcmp(mode, "pipe") || !strcmp(mode, "full")) {
		return pipe_run(!strcmp(mode, "full"));
	} else {
		fprintf(stderr, "unit: unknown mode '%s'\n", mode);
		return 2;
	}
	return 0;
}
