// SPDX-License-Identifier: GPL-2.0
/*
 * aheadtrace's user-space half on the host, where no BPF program loads:
 * aheadtrace.c itself (its main renamed) driven without the kernel.
 *
 *   unit config VERB [OPTIONS]    the ahead_config the options ask for
 *   unit events VERB [OPTIONS]    recorded oplog events through on_event()
 *   unit hist VERB [OPTIONS]      a recorded histogram through hist_print()
 *                                 and the Prometheus writer
 *   unit lost N... END            lost-record totals as read once a second,
 *                                 then the total at exit
 *   unit duration VERB [OPTIONS] -- T...   whether oplog is over at T s
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

/* read on 0:61: 1.5 ms, 2.5 ms and 9 ms, in the slots of the unit asked for. */
static void hist(void)
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
	hist_print(false);
	prom_write_hists(stdout, false);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "lost")) {
		for (int i = 2; i < argc; i++)
			lost_report(strtoull(argv[i], NULL, 10), i == argc - 1);
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
	} else if (!strcmp(mode, "hist")) {
		hist();
	} else {
		fprintf(stderr, "unit: unknown mode '%s'\n", mode);
		return 2;
	}
	return 0;
}
