/* numa.c: the read bandwidth matrix, CPU node x memory node (numa bw). */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aheadctl.h"

struct worker {
	pthread_t tid;
	int cpu;
	const uint64_t *buf;
	size_t words;
	double seconds;
	pthread_barrier_t *start;
	unsigned long long bytes;
	double elapsed;
	int err;
};

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *reader(void *arg)
{
	struct worker *w = arg;
	cpu_set_t set;
	double t0, t;
	uint64_t acc = 0;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	w->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	pthread_barrier_wait(w->start);
	if (w->err)
		return NULL;
	t0 = now();
	do {
		const uint64_t *p = w->buf;
		uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;

		for (size_t i = 0; i + 4 <= w->words; i += 4) {
			a0 += p[i];
			a1 += p[i + 1];
			a2 += p[i + 2];
			a3 += p[i + 3];
		}
		acc += a0 ^ a1 ^ a2 ^ a3;
		w->bytes += w->words * 8;
		t = now();
	} while (t - t0 < w->seconds);
	w->elapsed = t - t0;
	sink += acc;
	return NULL;
}

/* Every sampled page of buf must sit on node; move_pages(2) with nodes=NULL asks. */
static int verify_placement(void *buf, size_t size, int node)
{
	long psz = sysconf(_SC_PAGESIZE);
	size_t pages = size / psz, n = pages < 1024 ? pages : 1024;
	void **addr = xcalloc(n, sizeof(void *));
	int *status = xcalloc(n, sizeof(int));
	int bad = -1;

	for (size_t i = 0; i < n; i++)
		addr[i] = (char *)buf + (i * (pages / n)) * psz;
	if (move_pages(0, n, addr, NULL, status, 0)) {
		err("move_pages: %s", strerror(errno));
		free(addr);
		free(status);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (status[i] != node) {
			bad = status[i];
			break;
		}
	free(addr);
	free(status);
	if (bad != -1) {
		err("memory meant for node %d landed on %s %d: the matrix would lie",
		    node, bad < 0 ? "error" : "node", bad);
		return -1;
	}
	return 0;
}

/* One cell: best MB/s of runs, threads pinned on cpu node i, memory on node j. */
static double cell(int i, int j, unsigned long long size, int threads,
		   double seconds, int runs)
{
	struct bitmask *cpus = numa_allocate_cpumask();
	int cpulist[MAXCPUS], ncpu = 0;
	double best = -1;
	char *buf;

	if (numa_node_to_cpus(i, cpus)) {
		numa_free_cpumask(cpus);
		return -1;
	}
	for (unsigned int c = 0; c < cpus->size && ncpu < MAXCPUS; c++)
		if (numa_bitmask_isbitset(cpus, c))
			cpulist[ncpu++] = c;
	numa_free_cpumask(cpus);
	if (!ncpu)
		return -1;
	if (threads <= 0)
		threads = ncpu;
	buf = numa_alloc_onnode(size, j);
	if (!buf) {
		err("cannot allocate %llu bytes on node %d", size, j);
		return -2;
	}
	memset(buf, 1, size);
	if (verify_placement(buf, size, j)) {
		numa_free(buf, size);
		return -2;
	}
	for (int r = 0; r < runs; r++) {
		struct worker *w = xcalloc(threads, sizeof(*w));
		pthread_barrier_t start;
		size_t words = size / 8 / threads;
		unsigned long long bytes = 0;
		double elapsed = 0;

		pthread_barrier_init(&start, NULL, threads + 1);
		for (int t = 0; t < threads; t++) {
			w[t].cpu = cpulist[t % ncpu];
			w[t].buf = (const uint64_t *)buf + t * words;
			w[t].words = words & ~3UL;
			w[t].seconds = seconds;
			w[t].start = &start;
			if (pthread_create(&w[t].tid, NULL, reader, &w[t])) {
				err("pthread_create failed");
				exit(EXIT_FAILED);
			}
		}
		pthread_barrier_wait(&start);
		for (int t = 0; t < threads; t++) {
			pthread_join(w[t].tid, NULL);
			if (w[t].err) {
				err("cannot pin a thread to CPU %d: %s", w[t].cpu,
				    strerror(w[t].err));
				numa_free(buf, size);
				return -2;
			}
			bytes += w[t].bytes;
			if (w[t].elapsed > elapsed)
				elapsed = w[t].elapsed;
		}
		pthread_barrier_destroy(&start);
		free(w);
		if (elapsed > 0 && bytes / elapsed / 1e6 > best)
			best = bytes / elapsed / 1e6;
	}
	numa_free(buf, size);
	return best;
}

/*
 * Fills mbps[i * n + j] for the n nodes that have CPUs or memory; -1 where a
 * node has no CPUs or no memory.  Returns 0, or -1 after an error message.
 */
int numa_matrix(unsigned long long size, int threads, double seconds,
		double **mbps, int *nnodes, int **nodes)
{
	int max, n = 0, runs = 3;
	const char *r = getenv("AHEADCTL_BW_RUNS");

	if (r && atoi(r) > 0)
		runs = atoi(r);
	if (numa_available() < 0) {
		/* No NUMA syscalls: one node, memory wherever the kernel puts it. */
		err("the kernel has no NUMA support (numa_available() < 0)");
		return -1;
	}
	max = numa_max_node();
	*nodes = xcalloc(max + 1, sizeof(int));
	for (int i = 0; i <= max; i++)
		if (numa_bitmask_isbitset(numa_all_nodes_ptr, i))
			(*nodes)[n++] = i;
	*nnodes = n;
	*mbps = xcalloc(n * n, sizeof(double));
	for (int a = 0; a < n; a++)
		for (int b = 0; b < n; b++) {
			long long free_b;
			double v = -1;

			if (numa_node_size64((*nodes)[b], &free_b) > 0)
				v = cell((*nodes)[a], (*nodes)[b], size, threads,
					 seconds, runs);
			if (v == -2)
				return -1;
			(*mbps)[a * n + b] = v;
		}
	return 0;
}

/* Worst remote/local ratio, -1 when there is no remote pair to compare. */
static double worst_ratio(const double *m, int n, int *wi, int *wj)
{
	double worst = -1;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double loc = m[i * n + i], rem = m[i * n + j];

			if (i == j || loc <= 0 || rem < 0)
				continue;
			if (worst < 0 || rem / loc < worst) {
				worst = rem / loc;
				*wi = i;
				*wj = j;
			}
		}
	return worst;
}

static int last_n, *last_nodes;
static double *last_m;

/* One line for humans and the doctor. */
char *numa_verdict(double *ratio, bool *flagged)
{
	int wi = 0, wj = 0;
	double w = worst_ratio(last_m, last_n, &wi, &wj);

	*ratio = w;
	*flagged = w >= 0 && w < BW_RATIO_THRESHOLD;
	if (last_n == 1)
		return xsprintf("one NUMA node: no remote memory, nothing to compare");
	if (w < 0)
		return xsprintf("no node has both CPUs and memory to compare remote with local");
	if (*flagged)
		return xsprintf("remote/local %.2f (CPU node %d reading node %d) is below %.2f: cross-node bandwidth is crippled; check the BIOS snoop mode ('aheadctl bios show'; early snoop on 2-socket Haswell/Broadwell shows this), then QPI/UPI link speed and memory population",
				w, last_nodes[wi], last_nodes[wj], BW_RATIO_THRESHOLD);
	return xsprintf("remote/local %.2f (worst: CPU node %d reading node %d), at or above %.2f",
			w, last_nodes[wi], last_nodes[wj], BW_RATIO_THRESHOLD);
}

int numa_run(unsigned long long size, int threads, double seconds)
{
	if (numa_matrix(size, threads, seconds, &last_m, &last_n, &last_nodes))
		return -1;
	return 0;
}

int cmd_numa(int argc, char **argv)
{
	unsigned long long size = 256ULL << 20, v;
	int threads = 0;
	double seconds = 1.0, ratio;
	bool flagged;
	char *verdict;

	if (!argc || strcmp(argv[0], "bw")) {
		err("unknown numa verb '%s' (bw)", argc ? argv[0] : "");
		return EXIT_USAGE;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--size")) {
			if (!parse_size(val, &size) || size < (1ULL << 20) ||
			    size > (64ULL << 30)) {
				err("--size '%s': expected 1M to 64G (suffix K, M or G)",
				    val ? val : "");
				return EXIT_USAGE;
			}
		} else if (!strcmp(a, "--threads")) {
			if (!parse_u64(val, &v) || v < 1 || v > 1024) {
				err("--threads '%s': expected 1 to 1024", val ? val : "");
				return EXIT_USAGE;
			}
			threads = v;
		} else if (!strcmp(a, "--seconds")) {
			char *end;

			seconds = val ? strtod(val, &end) : 0;
			if (!val || *end || !(seconds >= 0.01 && seconds <= 60)) {
				err("--seconds '%s': expected 0.01 to 60", val ? val : "");
				return EXIT_USAGE;
			}
		} else {
			err("unknown argument '%s' (--size, --threads, --seconds)", a);
			return EXIT_USAGE;
		}
		i++;
	}
	if (numa_run(size, threads, seconds))
		return EXIT_FAILED;
	verdict = numa_verdict(&ratio, &flagged);
	if (g.json) {
		jopen('{');
		jint("size", size);
		jint("threads_per_node", threads);
		jnum("seconds", seconds);
		jkey("nodes");
		jopen('[');
		for (int i = 0; i < last_n; i++)
			jint(NULL, last_nodes[i]);
		jclose();
		jkey("mbps");
		jopen('[');
		for (int i = 0; i < last_n; i++) {
			jopen('[');
			for (int j = 0; j < last_n; j++)
				if (last_m[i * last_n + j] < 0)
					jnull(NULL);
				else
					jnum(NULL, last_m[i * last_n + j]);
			jclose();
		}
		jclose();
		if (ratio < 0)
			jnull("worst_ratio");
		else
			jnum("worst_ratio", ratio);
		jnum("threshold", BW_RATIO_THRESHOLD);
		jbool("flagged", flagged);
		jstr("verdict", verdict);
		jclose();
		jend();
	} else {
		if (threads)
			printf("read bandwidth in MB/s, best of runs; %llu MiB per cell, %d threads per CPU node\n",
			       size >> 20, threads);
		else
			printf("read bandwidth in MB/s, best of runs; %llu MiB per cell, one thread per CPU of the node\n",
			       size >> 20);
		printf("%-12s", "cpu\\mem");
		for (int j = 0; j < last_n; j++)
			printf(" %10d", last_nodes[j]);
		putchar('\n');
		for (int i = 0; i < last_n; i++) {
			printf("%-12d", last_nodes[i]);
			for (int j = 0; j < last_n; j++)
				if (last_m[i * last_n + j] < 0)
					printf(" %10s", "-");
				else
					printf(" %10.0f", last_m[i * last_n + j]);
			putchar('\n');
		}
		printf("%s%s\n", flagged ? "WARNING: " : "", verdict);
	}
	free(verdict);
	return 0;
}

/* Nodes the kernel knows (1 without NUMA support). */
int numa_nodes(void)
{
	return numa_available() < 0 ? 1 : numa_num_configured_nodes();
}
