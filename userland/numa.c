/* numa.c: the bandwidth and latency matrices, CPU node x memory node (numa bw). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "aheadctl.h"

#define MIB (1ULL << 20)
#define HUGE_2M (2ULL << 20)
#define LINE 64			/* one pointer per cache line in the chase */
#define CHUNK (64 << 10)	/* a bandwidth thread looks at the clock this often */
#define DEFAULT_SIZE (256 * MIB)	/* per thread, when sysfs has no caches */
#define MIN_SIZE (64 * MIB)	/* per thread, at least, when sized from the LLC */
#define MEMFREE_USE 0.9		/* of a node's MemFree, at most */
#define C2C_MIN 2000		/* transfers a cache-to-cache run makes at least */

enum pages { PAGES_DEFAULT, PAGES_THP, PAGES_HUGETLB };
static const char *const pages_name[] = { "default", "thp", "hugetlb" };

struct bw_opts {
	unsigned long long size;	/* per thread; 0: from the LLC */
	unsigned long long floor;	/* the least size chosen from the LLC */
	int threads;			/* per CPU node; 0: one per CPU */
	double seconds;
	int runs;
	bool rw;			/* 1:1 read:write, else read only */
	bool hugepages;
	bool c2c;			/* the cache-to-cache matrix too (numa bw) */
};

/* The machine as sysfs (AHEADCTL_SYSFS_ROOT) describes it, and the plan. */
struct topo {
	int n;
	int *node;
	struct cpus *cpus;		/* online CPUs of each node */
	int *ncpu;
	long long *memfree;		/* bytes; -1 unknown */
	bool *has_mem;
	unsigned long long llc;		/* bytes; 0 unknown */
	int llc_level;
	char *llc_shared;		/* shared_cpu_list of that cache */
	unsigned long long size;	/* per thread, chosen */
	const char *size_from;		/* option, llc, default */
	int *threads;			/* bandwidth threads per CPU node */
	int *load;			/* bandwidth threads beside the latency thread */
	unsigned long long *need;	/* bytes per memory node */
	unsigned long long nbufs;	/* buffers a memory node holds at once */
	enum pages pages;
	int *c2c_w, *c2c_r;		/* n x n: the writer's and reader's CPU; -1: none */
};

struct result {
	double *mbps, *idle_ns, *loaded_ns;	/* n x n; -1: no such cell */
	double *c2c_ns;
};

static int bufs_per_thread(const struct bw_opts *o)
{
	return o->rw ? 2 : 1;
}

/* Bytes of "Node N KEY:  V kB" in nodeN/meminfo, or -1. */
static long long meminfo(int node, const char *key)
{
	char *p = xsprintf("%s/devices/system/node/node%d/meminfo", sysfs_root(), node);
	char *text = read_file(p), *s;
	long long v = -1;

	free(p);
	if (text && (s = strstr(text, key))) {
		s += strlen(key);
		v = strtoll(s, NULL, 10) * 1024;
	}
	free(text);
	return v;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* The node numbers under devices/system/node, sorted. */
static int list_nodes(int **out)
{
	char *p = xsprintf("%s/devices/system/node", sysfs_root());
	DIR *d = opendir(p);
	struct dirent *e;
	int n = 0, cap = 16;

	free(p);
	*out = xcalloc(cap, sizeof(int));
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, "node", 4) || !isdigit((unsigned char)e->d_name[4]))
			continue;
		if (n == cap) {
			cap *= 2;
			*out = realloc(*out, cap * sizeof(int));
			if (!*out)
				exit(EXIT_FAILED);
		}
		(*out)[n++] = atoi(e->d_name + 4);
	}
	if (d)
		closedir(d);
	qsort(*out, n, sizeof(int), cmp_int);
	return n;
}

/*
 * The last-level cache: the highest cache level of any CPU that holds data
 * (instruction caches do not count), its size and who shares it.
 */
static void find_llc(struct topo *t)
{
	for (int i = 0; i < t->n; i++)
		for (int c = 0; c < MAXCPUS; c++) {
			if (!t->cpus[i].on[c])
				continue;
			for (int k = 0; k < 16; k++) {
				char *dir = xsprintf("%s/devices/system/cpu/cpu%d/cache/index%d",
						     sysfs_root(), c, k);
				char *pl = xsprintf("%s/level", dir), *pt = xsprintf("%s/type", dir);
				char *ps = xsprintf("%s/size", dir), *pc = xsprintf("%s/shared_cpu_list", dir);
				char *type = read_file(pt), *size = read_file(ps);
				unsigned long long sz;
				long long level;

				if (!read_int(pl, &level) && size && parse_size(size, &sz) &&
				    !(type && !strcmp(type, "Instruction")) &&
				    (level > t->llc_level || (level == t->llc_level && sz > t->llc))) {
					t->llc_level = level;
					t->llc = sz;
					free(t->llc_shared);
					t->llc_shared = read_file(pc);
				}
				free(type);
				free(size);
				free(dir);
				free(pl);
				free(pt);
				free(ps);
				free(pc);
			}
		}
}

static bool thp_enabled(void)
{
	char *p = xsprintf("%s/kernel/mm/transparent_hugepage/enabled", sysfs_root());
	char *s = read_file(p);
	bool on = s && !strstr(s, "[never]");

	free(p);
	free(s);
	return on;
}

/* Free 2 MiB hugetlb pages on node, or 0. */
static long long free_huge(int node)
{
	char *p = xsprintf("%s/devices/system/node/node%d/hugepages/hugepages-2048kB/free_hugepages",
			   sysfs_root(), node);
	long long v = 0;

	if (read_int(p, &v))
		v = 0;
	free(p);
	return v;
}

/* hugetlb when every node has the pages, else THP said aloud, else refused. */
static int choose_pages(struct topo *t, const struct bw_opts *o)
{
	t->pages = PAGES_DEFAULT;
	if (!o->hugepages)
		return 0;
	t->pages = PAGES_HUGETLB;
	for (int j = 0; j < t->n; j++) {
		/* Each buffer is mapped on its own, rounded up to whole pages. */
		unsigned long long want = t->nbufs * ((t->size + HUGE_2M - 1) / HUGE_2M);

		if (!t->need[j])
			continue;
		if ((unsigned long long)free_huge(t->node[j]) >= want)
			continue;
		if (!thp_enabled()) {
			err("--hugepages: node %d has %lld free 2 MiB hugetlb pages, %llu needed (vm.nr_hugepages), and transparent huge pages are disabled ([never] in %s/kernel/mm/transparent_hugepage/enabled)",
			    t->node[j], free_huge(t->node[j]), want, sysfs_root());
			return -1;
		}
		warnx("--hugepages: node %d has %lld free 2 MiB hugetlb pages, %llu needed: using transparent huge pages (madvise) instead; reserve hugetlb pages with 'echo N > %s/devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages'",
		      t->node[j], free_huge(t->node[j]), want, sysfs_root(), t->node[j]);
		t->pages = PAGES_THP;
		break;
	}
	return 0;
}

/* Reads the topology, sizes the buffers and checks them against MemFree. */
static int plan(struct topo *t, const struct bw_opts *o)
{
	struct cpus online;
	int *nodes;

	memset(t, 0, sizeof(*t));
	t->n = list_nodes(&nodes);
	if (!t->n) {
		err("no NUMA nodes in %s/devices/system/node", sysfs_root());
		return -1;
	}
	if (online_cpus(&online)) {
		err("cannot read %s/devices/system/cpu/online", sysfs_root());
		return -1;
	}
	t->node = nodes;
	t->cpus = xcalloc(t->n, sizeof(*t->cpus));
	t->ncpu = xcalloc(t->n, sizeof(int));
	t->memfree = xcalloc(t->n, sizeof(long long));
	t->has_mem = xcalloc(t->n, sizeof(bool));
	t->threads = xcalloc(t->n, sizeof(int));
	t->load = xcalloc(t->n, sizeof(int));
	t->need = xcalloc(t->n, sizeof(unsigned long long));
	for (int i = 0; i < t->n; i++) {
		long long total = meminfo(t->node[i], "MemTotal:");

		if (!node_cpus(t->node[i], &t->cpus[i]))
			for (int c = 0; c < MAXCPUS; c++)
				t->cpus[i].on[c] &= online.on[c];
		t->ncpu[i] = cpus_count(&t->cpus[i]);
		/* Without meminfo (a bare fixture) the node is assumed to have memory. */
		t->has_mem[i] = total != 0;
		t->memfree[i] = meminfo(t->node[i], "MemFree:");
		if (t->ncpu[i]) {
			t->threads[i] = o->threads ? o->threads : t->ncpu[i];
			t->load[i] = t->threads[i] < t->ncpu[i] - 1 ? t->threads[i] :
				t->ncpu[i] - 1;
		}
	}
	find_llc(t);
	/*
	 * Cache-to-cache, cell (i, j): a line written by node i's first CPU
	 * and read by node j's first (within a node, its second); homed on
	 * node i.  A node of one CPU has no pair within it.
	 */
	t->c2c_w = xcalloc(t->n * t->n, sizeof(int));
	t->c2c_r = xcalloc(t->n * t->n, sizeof(int));
	for (int i = 0; i < t->n; i++)
		for (int j = 0; j < t->n; j++) {
			int ij = i * t->n + j;

			t->c2c_w[ij] = t->c2c_r[ij] = -1;
			if (!t->ncpu[i] || !t->ncpu[j] || !t->has_mem[i] ||
			    (i == j && t->ncpu[i] < 2))
				continue;
			t->c2c_w[ij] = cpus_nth(&t->cpus[i], 0);
			t->c2c_r[ij] = cpus_nth(&t->cpus[j], i == j ? 1 : 0);
		}
	if (o->size) {
		t->size = o->size;
		t->size_from = "option";
	} else if (t->llc) {
		/* Twice the LLC: a stream through it finds nothing left behind. */
		t->size = (2 * t->llc + MIB - 1) / MIB * MIB;
		if (t->size < o->floor)
			t->size = o->floor;
		t->size_from = "llc";
	} else {
		t->size = DEFAULT_SIZE > o->floor ? DEFAULT_SIZE : o->floor;
		t->size_from = "default";
	}
	return 0;
}

/* What each memory node must hold at once: the biggest row's buffers and the chase's. */
static int check_memory(struct topo *t, const struct bw_opts *o)
{
	int most = 0;

	for (int i = 0; i < t->n; i++)
		if (t->threads[i] > most)
			most = t->threads[i];
	t->nbufs = (unsigned long long)most * bufs_per_thread(o) + 1;
	for (int j = 0; j < t->n; j++) {
		if (!t->has_mem[j] || !most)
			continue;
		t->need[j] = t->nbufs * t->size;
		if (t->memfree[j] < 0 || t->need[j] <= t->memfree[j] * MEMFREE_USE)
			continue;
		err("node %d: numa bw needs %llu MiB there (%d threads x %s%llu MiB, and a %llu MiB latency buffer) but the node has %lld MiB free (MemFree), of which it uses at most %.0f%%: give a smaller --size or fewer --threads",
		    t->node[j], t->need[j] / MIB, most, o->rw ? "2 x " : "",
		    t->size / MIB, t->size / MIB, t->memfree[j] / (long long)MIB,
		    MEMFREE_USE * 100);
		return -1;
	}
	return choose_pages(t, o);
}

struct buf {
	void *map, *p;
	size_t maplen;
};

static void buf_free(struct buf *b)
{
	if (b->map)
		munmap(b->map, b->maplen);
	b->map = NULL;
}

/* MPOL_BIND: every page comes from node or the fault fails, never elsewhere. */
static int bind_node(void *p, size_t len, int node)
{
	unsigned long mask[16] = { 0 };
	const int bits = sizeof(mask) * 8;

	if (node < 0 || node >= bits) {
		errno = EINVAL;
		return -1;
	}
	mask[node / 64] |= 1UL << (node % 64);
	return mbind(p, len, MPOL_BIND, mask, bits, 0);
}

/* A buffer bound to node, not yet touched. */
static int buf_alloc(struct buf *b, size_t size, int node, enum pages pages)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;

	b->maplen = size;
	if (pages == PAGES_HUGETLB) {
		b->maplen = (size + HUGE_2M - 1) / HUGE_2M * HUGE_2M;
		flags |= MAP_HUGETLB;
	} else if (pages == PAGES_THP) {
		b->maplen = size + HUGE_2M;	/* room to align to a huge page */
	}
	b->map = mmap(NULL, b->maplen, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (b->map == MAP_FAILED) {
		b->map = NULL;
		err("cannot map %zu MiB for node %d%s: %s", size >> 20, node,
		    pages == PAGES_HUGETLB ? " in hugetlb pages" : "", strerror(errno));
		return -1;
	}
	b->p = b->map;
	if (pages == PAGES_THP) {
		b->p = (void *)(((uintptr_t)b->map + HUGE_2M - 1) & ~(uintptr_t)(HUGE_2M - 1));
		madvise(b->p, size, MADV_HUGEPAGE);
	}
	if (bind_node(b->map, b->maplen, node)) {
		err("cannot bind %zu MiB to node %d (mbind): %s", size >> 20, node,
		    strerror(errno));
		buf_free(b);
		return -1;
	}
	return 0;
}

/* Every sampled page of buf must sit on node; move_pages(2) with nodes=NULL asks. */
static int verify_placement(void *buf, size_t size, int node)
{
	long psz = sysconf(_SC_PAGESIZE);
	size_t pages = size / psz, n = pages < 256 ? pages : 256;
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

enum job { TOUCH, READ, RW, CHASE, BOUNCE };

struct worker {
	pthread_t tid;
	enum job job;
	int cpu;
	uint64_t *src, *dst;		/* CHASE: src is where the chase starts */
	size_t size;
	pthread_barrier_t *start;
	atomic_int *stop;
	unsigned long long bytes, steps;
	double elapsed;
	int err;
	int side;			/* BOUNCE: the turns it takes, 0 even, 1 odd */
	struct worker *peer;		/* BOUNCE: the other one, which must run too */
};

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t read_chunk(const uint64_t *p, size_t words)
{
	uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;

	for (size_t i = 0; i + 4 <= words; i += 4) {
		a0 += p[i];
		a1 += p[i + 1];
		a2 += p[i + 2];
		a3 += p[i + 3];
	}
	return a0 ^ a1 ^ a2 ^ a3;
}

/* Reads one buffer and writes the other, a word each: 1:1 read:write. */
static void copy_chunk(uint64_t *d, const uint64_t *s, size_t words)
{
	for (size_t i = 0; i < words; i++)
		d[i] = s[i] + 1;
}

/*
 * The workers below do one chunk or block before they look at stop: a
 * worker scheduled only after the measurement ended (a loaded host, a
 * guest's vCPU) still measures something, never 0 bytes in 0 s.
 */
static void stream(struct worker *w)
{
	size_t words = CHUNK / 8, nchunks = w->size / CHUNK, c = 0;
	uint64_t acc = 0;

	do {
		if (w->job == READ) {
			acc += read_chunk(w->src + c * words, words);
			w->bytes += CHUNK;
		} else {
			copy_chunk(w->dst + c * words, w->src + c * words, words);
			w->bytes += 2 * CHUNK;
		}
		if (++c == nchunks)
			c = 0;
	} while (!atomic_load_explicit(w->stop, memory_order_relaxed));
	sink += acc;
}

static void chase(struct worker *w)
{
	void **p = (void **)w->src;

	do {
		for (int i = 0; i < 256; i += 8) {
			p = *p; p = *p; p = *p; p = *p;
			p = *p; p = *p; p = *p; p = *p;
		}
		w->steps += 256;
	} while (!atomic_load_explicit(w->stop, memory_order_relaxed));
	sink += (uintptr_t)p;
}

/*
 * Two threads take turns on one line: each waits for its turn (the line's
 * count even or odd), then writes the next count.  Every turn moves the
 * line, modified, from the other CPU's cache to this one's: a read of a
 * line modified elsewhere (a HITM), the transfer a snoop mode decides.
 * They stop together once stop is set and C2C_MIN turns were made.
 */
static void bounce(struct worker *w)
{
	atomic_ulong *line = (atomic_ulong *)w->src;

	for (;;) {
		unsigned long v = atomic_load_explicit(line, memory_order_acquire);

		if (v >= C2C_MIN && atomic_load_explicit(w->stop, memory_order_relaxed))
			break;
		if ((int)(v & 1) == w->side) {
			atomic_store_explicit(line, v + 1, memory_order_release);
			w->steps++;
		}
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	cpu_set_t set;
	double t0;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	w->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (w->job == TOUCH) {
		/* First touch from the CPU node, in parallel; the policy picks the node. */
		if (!w->err) {
			memset(w->src, 1, w->size);
			if (w->dst)
				memset(w->dst, 1, w->size);
		}
		return NULL;
	}
	pthread_barrier_wait(w->start);
	/* A bounce without its peer would wait for its turn for ever. */
	if (w->err || (w->peer && w->peer->err))
		return NULL;
	t0 = now();
	if (w->job == CHASE)
		chase(w);
	else if (w->job == BOUNCE)
		bounce(w);
	else
		stream(w);
	w->elapsed = now() - t0;
	return NULL;
}

/* Runs the n workers together for seconds; 0, or -1 after a message. */
static int run_workers(struct worker *w, int n, double seconds)
{
	pthread_barrier_t start;
	atomic_int stop = 0;
	struct timespec d = { (time_t)seconds,
			      (long)((seconds - (time_t)seconds) * 1e9) };
	int rc = 0;

	pthread_barrier_init(&start, NULL, n + 1);
	for (int t = 0; t < n; t++) {
		w[t].start = &start;
		w[t].stop = &stop;
		if (pthread_create(&w[t].tid, NULL, work, &w[t])) {
			err("pthread_create failed");
			exit(EXIT_FAILED);
		}
	}
	if (w[0].job != TOUCH) {
		pthread_barrier_wait(&start);
		/* The measurement lasts this long; the workers time themselves. */
		while (nanosleep(&d, &d) && errno == EINTR)
			;
		atomic_store(&stop, 1);
	}
	for (int t = 0; t < n; t++) {
		pthread_join(w[t].tid, NULL);
		if (w[t].err && !rc) {
			err("cannot pin a thread to CPU %d: %s", w[t].cpu, strerror(w[t].err));
			rc = -1;
		}
	}
	pthread_barrier_destroy(&start);
	return rc;
}

/* A random cycle through every cache line of buf: the prefetchers cannot guess it. */
static void build_chase(uint64_t *buf, size_t size)
{
	size_t n = size / LINE;
	uint32_t *perm = xcalloc(n, sizeof(uint32_t));
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t k;
		uint32_t tmp;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		k = x % (i + 1);
		tmp = perm[i];
		perm[i] = perm[k];
		perm[k] = tmp;
	}
	for (size_t i = 0; i < n; i++)
		*(void **)((char *)buf + (size_t)perm[i] * LINE) =
			(char *)buf + (size_t)perm[(i + 1) % n] * LINE;
	free(perm);
}

struct cellbufs {
	int n;			/* buffers: threads x bufs_per_thread, then the chase */
	struct buf *b;
};

static void cell_free(struct cellbufs *cb)
{
	for (int k = 0; k < cb->n; k++)
		buf_free(&cb->b[k]);
	free(cb->b);
}

/* Maps, touches from CPU node i, checks placement on j and builds the chase. */
static int cell_alloc(struct cellbufs *cb, const struct topo *t, int i, int j,
		      const struct bw_opts *o)
{
	int per = bufs_per_thread(o), nt = t->threads[i];
	struct worker *w = xcalloc(nt, sizeof(*w));
	int rc = 0;

	cb->n = nt * per + 1;
	cb->b = xcalloc(cb->n, sizeof(struct buf));
	for (int k = 0; k < cb->n && !rc; k++)
		rc = buf_alloc(&cb->b[k], t->size, t->node[j], t->pages);
	for (int k = 0; k < nt && !rc; k++) {
		w[k].job = TOUCH;
		w[k].cpu = cpus_nth(&t->cpus[i], k % t->ncpu[i]);
		w[k].src = cb->b[k * per].p;
		w[k].dst = per == 2 ? cb->b[k * per + 1].p : NULL;
		w[k].size = t->size;
	}
	if (!rc)
		rc = run_workers(w, nt, 0);
	free(w);
	if (!rc)
		build_chase(cb->b[cb->n - 1].p, t->size);
	for (int k = 0; k < cb->n && !rc; k++)
		rc = verify_placement(cb->b[k].p, t->size, t->node[j]);
	if (rc)
		cell_free(cb);
	return rc;
}

/*
 * One phase: nbw bandwidth threads (on the node's CPUs from first_cpu on)
 * and, with lat, the chase on the node's first CPU.  Gives MB/s and ns.
 */
static int phase(const struct topo *t, int i, struct cellbufs *cb, int nbw,
		 int first_cpu, bool lat, const struct bw_opts *o, double *mbps,
		 double *ns)
{
	int per = bufs_per_thread(o), n = nbw + lat, span = t->ncpu[i] - first_cpu;
	struct worker *w = xcalloc(n, sizeof(*w));
	unsigned long long bytes = 0;
	double elapsed = 0;
	int rc;

	for (int k = 0; k < nbw; k++) {
		w[k].job = o->rw ? RW : READ;
		w[k].cpu = cpus_nth(&t->cpus[i], first_cpu + k % span);
		w[k].src = cb->b[k * per].p;
		w[k].dst = per == 2 ? cb->b[k * per + 1].p : NULL;
		w[k].size = t->size;
	}
	if (lat) {
		w[nbw].job = CHASE;
		w[nbw].cpu = cpus_nth(&t->cpus[i], 0);
		w[nbw].src = cb->b[cb->n - 1].p;
	}
	rc = run_workers(w, n, o->seconds);
	for (int k = 0; k < nbw; k++) {
		bytes += w[k].bytes;
		if (w[k].elapsed > elapsed)
			elapsed = w[k].elapsed;
	}
	*mbps = elapsed > 0 ? bytes / elapsed / 1e6 : -1;
	*ns = lat && w[nbw].steps ? w[nbw].elapsed * 1e9 / w[nbw].steps : -1;
	free(w);
	return rc;
}

static void best(double *cur, double v, bool lowest)
{
	if (v < 0)
		return;
	if (*cur < 0 || (lowest ? v < *cur : v > *cur))
		*cur = v;
}

/* Cell (i, j): best bandwidth, best idle and loaded latency of the runs. */
static int cell(const struct topo *t, int i, int j, const struct bw_opts *o,
		struct result *r)
{
	int n = t->n, ij = i * n + j;
	struct cellbufs cb;
	double mbps, ns;

	if (cell_alloc(&cb, t, i, j, o))
		return -1;
	for (int run = 0; run < o->runs; run++) {
		if (phase(t, i, &cb, t->threads[i], 0, false, o, &mbps, &ns))
			goto fail;
		best(&r->mbps[ij], mbps, false);
		if (phase(t, i, &cb, 0, 0, true, o, &mbps, &ns))
			goto fail;
		best(&r->idle_ns[ij], ns, true);
		if (t->load[i]) {
			if (phase(t, i, &cb, t->load[i], 1, true, o, &mbps, &ns))
				goto fail;
			best(&r->loaded_ns[ij], ns, true);
		}
	}
	cell_free(&cb);
	return 0;
fail:
	cell_free(&cb);
	return -1;
}

/* Cell (i, j) of the cache-to-cache matrix: ns per transfer, the best of the runs. */
static int c2c_cell(const struct topo *t, int i, int j, const struct bw_opts *o,
		    struct result *r)
{
	int ij = i * t->n + j, rc = 0;
	struct worker w[2];
	struct buf b;

	if (buf_alloc(&b, sysconf(_SC_PAGESIZE), t->node[i], PAGES_DEFAULT))
		return -1;
	for (int run = 0; run < o->runs && !rc; run++) {
		atomic_ulong *line = b.p;

		atomic_store(line, 0);
		memset(w, 0, sizeof(w));
		for (int k = 0; k < 2; k++) {
			w[k].job = BOUNCE;
			w[k].cpu = k ? t->c2c_r[ij] : t->c2c_w[ij];
			w[k].src = b.p;
			w[k].side = k;
			w[k].peer = &w[!k];
		}
		rc = run_workers(w, 2, o->seconds);
		if (!rc && run == 0)
			rc = verify_placement(b.p, sysconf(_SC_PAGESIZE), t->node[i]);
		if (!rc) {
			double el = w[0].elapsed > w[1].elapsed ? w[0].elapsed : w[1].elapsed;
			unsigned long turns = atomic_load(line);

			best(&r->c2c_ns[ij], turns && el > 0 ? el * 1e9 / turns : -1, true);
		}
	}
	buf_free(&b);
	return rc;
}

static int measure(const struct topo *t, const struct bw_opts *o, struct result *r)
{
	int n = t->n;

	r->mbps = xcalloc(n * n, sizeof(double));
	r->idle_ns = xcalloc(n * n, sizeof(double));
	r->loaded_ns = xcalloc(n * n, sizeof(double));
	r->c2c_ns = xcalloc(n * n, sizeof(double));
	for (int k = 0; k < n * n; k++)
		r->mbps[k] = r->idle_ns[k] = r->loaded_ns[k] = r->c2c_ns[k] = -1;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (t->ncpu[i] && t->has_mem[j] && cell(t, i, j, o, r))
				return -1;
	for (int k = 0; o->c2c && k < n * n; k++)
		if (t->c2c_w[k] >= 0 && c2c_cell(t, k / n, k % n, o, r))
			return -1;
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

static struct topo last_t;
static struct result last_r;

/* One line for humans and the doctor. */
char *numa_verdict(double *ratio, bool *flagged)
{
	int wi = 0, wj = 0, n = last_t.n;
	double w = worst_ratio(last_r.mbps, n, &wi, &wj);

	*ratio = w;
	*flagged = w >= 0 && w < BW_RATIO_THRESHOLD;
	if (n == 1)
		return xsprintf("one NUMA node: no remote memory, nothing to compare");
	if (w < 0)
		return xsprintf("no node has both CPUs and memory to compare remote with local");
	if (*flagged)
		return xsprintf("remote/local %.2f (CPU node %d reading node %d) is below %.2f: cross-node bandwidth is crippled; check the BIOS snoop mode ('aheadctl bios show'; early snoop on 2-socket Haswell/Broadwell shows this), then QPI/UPI link speed and memory population",
				w, last_t.node[wi], last_t.node[wj], BW_RATIO_THRESHOLD);
	return xsprintf("remote/local %.2f (worst: CPU node %d reading node %d), at or above %.2f",
			w, last_t.node[wi], last_t.node[wj], BW_RATIO_THRESHOLD);
}

static int bw_run(const struct bw_opts *o, bool measure_it)
{
	if (numa_available() < 0) {
		/* No NUMA syscalls: nothing can be bound to a node. */
		err("the kernel has no NUMA support (numa_available() < 0)");
		return -1;
	}
	if (plan(&last_t, o) || check_memory(&last_t, o))
		return -1;
	return measure_it ? measure(&last_t, o, &last_r) : 0;
}

/* The doctor's matrix: size is the least per-thread buffer, the LLC may ask more. */
int numa_run(unsigned long long size, int threads, double seconds)
{
	struct bw_opts o = { .floor = size, .threads = threads,
			     .seconds = seconds, .runs = 3 };

	if (!bw_run(&o, true))
		return 0;
	/* The doctor notes it and goes on: its -j document still stands. */
	json_error_reset();
	return -1;
}

static void json_matrix(const char *key, const double *m, int n)
{
	jkey(key);
	jopen('[');
	for (int i = 0; i < n; i++) {
		jopen('[');
		for (int j = 0; j < n; j++)
			if (m[i * n + j] < 0)
				jnull(NULL);
			else
				jnum(NULL, m[i * n + j]);
		jclose();
	}
	jclose();
}

static void json_ints(const char *key, const int *v, const struct topo *t)
{
	jkey(key);
	jopen('[');
	for (int i = 0; i < t->n; i++)
		if (t->ncpu[i])
			jint(NULL, v[i]);
		else
			jnull(NULL);
	jclose();
}

static void print_json(const struct topo *t, const struct bw_opts *o,
		       const struct result *r, const char *verdict,
		       double ratio, bool flagged)
{
	jopen('{');
	jbool("measured", r != NULL);
	jstr("traffic", o->rw ? "rw" : "read");
	jstr("pages", pages_name[t->pages]);
	jint("per_thread_size", t->size);
	jstr("size_from", t->size_from);
	if (t->llc) {
		jkey("llc");
		jopen('{');
		jint("level", t->llc_level);
		jint("size", t->llc);
		jstr("shared_cpu_list", t->llc_shared);
		jclose();
	} else {
		jnull("llc");
	}
	jnum("seconds", o->seconds);
	jint("runs", o->runs);
	jkey("nodes");
	jopen('[');
	for (int i = 0; i < t->n; i++)
		jint(NULL, t->node[i]);
	jclose();
	json_ints("threads", t->threads, t);
	json_ints("load_threads", t->load, t);
	jkey("memory_needed");
	jopen('[');
	for (int j = 0; j < t->n; j++)
		jint(NULL, t->need[j]);
	jclose();
	jkey("memfree");
	jopen('[');
	for (int j = 0; j < t->n; j++)
		if (t->memfree[j] < 0)
			jnull(NULL);
		else
			jint(NULL, t->memfree[j]);
	jclose();
	jkey("c2c_cpus");
	jopen('[');
	for (int i = 0; i < t->n; i++) {
		jopen('[');
		for (int j = 0; j < t->n; j++) {
			int ij = i * t->n + j;

			if (t->c2c_w[ij] < 0) {
				jnull(NULL);
				continue;
			}
			jopen('[');
			jint(NULL, t->c2c_w[ij]);
			jint(NULL, t->c2c_r[ij]);
			jclose();
		}
		jclose();
	}
	jclose();
	if (r) {
		json_matrix("mbps", r->mbps, t->n);
		json_matrix("idle_latency_ns", r->idle_ns, t->n);
		json_matrix("loaded_latency_ns", r->loaded_ns, t->n);
		json_matrix("c2c_latency_ns", r->c2c_ns, t->n);
		if (ratio < 0)
			jnull("worst_ratio");
		else
			jnum("worst_ratio", ratio);
		jnum("threshold", BW_RATIO_THRESHOLD);
		jbool("flagged", flagged);
		jstr("verdict", verdict);
	}
	jclose();
	jend();
}

static void print_matrix(const char *title, const struct topo *t, const double *m,
			 const char *fmt)
{
	printf("%s\n%-12s", title, "cpu\\mem");
	for (int j = 0; j < t->n; j++)
		printf(" %10d", t->node[j]);
	putchar('\n');
	for (int i = 0; i < t->n; i++) {
		printf("%-12d", t->node[i]);
		for (int j = 0; j < t->n; j++)
			if (m[i * t->n + j] < 0)
				printf(" %10s", "-");
			else
				printf(fmt, m[i * t->n + j]);
		putchar('\n');
	}
}

static void print_plan(const struct topo *t, const struct bw_opts *o)
{
	printf("%s traffic, %llu MiB per thread (", o->rw ? "read:write 1:1" : "read",
	       t->size >> 20);
	if (!strcmp(t->size_from, "option"))
		printf("--size");
	else if (!strcmp(t->size_from, "llc"))
		printf("twice the %llu MiB L%d cache shared by CPUs %s, at least %llu MiB",
		       t->llc >> 20, t->llc_level, t->llc_shared ? t->llc_shared : "?",
		       o->floor >> 20);
	else
		printf("no cache sizes in sysfs: the default");
	printf("), %s pages, best of %d runs of %.2f s\n", pages_name[t->pages],
	       o->runs, o->seconds);
	for (int i = 0; i < t->n; i++) {
		printf("node %d: ", t->node[i]);
		if (t->ncpu[i])
			printf("%d bandwidth threads (%d beside the latency thread)",
			       t->threads[i], t->load[i]);
		else
			printf("no CPUs");
		if (t->need[i])
			printf(", %llu MiB of memory needed", t->need[i] >> 20);
		if (t->memfree[i] >= 0)
			printf(", %lld MiB free", t->memfree[i] >> 20);
		putchar('\n');
	}
	for (int i = 0; i < t->n; i++) {
		bool any = false;

		printf("cache-to-cache from node %d:", t->node[i]);
		for (int j = 0; j < t->n; j++) {
			int ij = i * t->n + j;

			if (t->c2c_w[ij] < 0)
				continue;
			printf("%s CPU %d writes, CPU %d (node %d) reads", any ? ";" : "",
			       t->c2c_w[ij], t->c2c_r[ij], t->node[j]);
			any = true;
		}
		printf("%s\n", any ? "" : t->ncpu[i] == 1 && t->n == 1 ?
		       " none: one CPU, no other cache to move a line to" :
		       " none (no CPUs, or no memory to home the line)");
	}
	if (t->n == 1 && t->c2c_w[0] >= 0)
		printf("one NUMA node: cache-to-cache within node %d only (CPUs %d and %d), no remote transfer to compare\n",
		       t->node[0], t->c2c_w[0], t->c2c_r[0]);
}

static void print_text(const struct topo *t, const struct bw_opts *o,
		       const struct result *r, const char *verdict, bool flagged)
{
	print_plan(t, o);
	print_matrix("bandwidth, MB/s (rows: CPU node, columns: memory node)", t,
		     r->mbps, " %10.0f");
	print_matrix("idle latency, ns", t, r->idle_ns, " %10.1f");
	print_matrix("loaded latency, ns (the latency thread beside the bandwidth threads)",
		     t, r->loaded_ns, " %10.1f");
	print_matrix("cache-to-cache transfer latency, ns (a line the row's node writes, the column's reads; homed on the row's node)",
		     t, r->c2c_ns, " %10.1f");
	printf("%s%s\n", flagged ? "WARNING: " : "", verdict);
}

static int parse_args(int argc, char **argv, struct bw_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		unsigned long long v;
		char *end;

		if (!strcmp(a, "--hugepages")) {
			o->hugepages = true;
			continue;
		}
		if (!strcmp(a, "--size")) {
			if (!parse_size(val, &o->size) || o->size < MIB ||
			    o->size > (64ULL << 30)) {
				err("--size '%s': expected a per-thread size from 1M to 64G (suffix K, M or G)",
				    val ? val : "");
				return -1;
			}
		} else if (!strcmp(a, "--threads")) {
			if (!parse_u64(val, &v) || v < 1 || v > 1024) {
				err("--threads '%s': expected 1 to 1024", val ? val : "");
				return -1;
			}
			o->threads = v;
		} else if (!strcmp(a, "--runs")) {
			if (!parse_u64(val, &v) || v < 1 || v > 100) {
				err("--runs '%s': expected 1 to 100", val ? val : "");
				return -1;
			}
			o->runs = v;
		} else if (!strcmp(a, "--seconds")) {
			o->seconds = val ? strtod(val, &end) : 0;
			if (!val || *end || !(o->seconds >= 0.01 && o->seconds <= 60)) {
				err("--seconds '%s': expected 0.01 to 60", val ? val : "");
				return -1;
			}
		} else if (!strcmp(a, "--traffic")) {
			if (!val || (strcmp(val, "read") && strcmp(val, "rw"))) {
				err("--traffic '%s': expected read or rw", val ? val : "");
				return -1;
			}
			o->rw = !strcmp(val, "rw");
		} else {
			err("unknown argument '%s' (--size, --threads, --seconds, --runs, --traffic, --hugepages)",
			    a);
			return -1;
		}
		i++;
	}
	return 0;
}

int cmd_numa(int argc, char **argv)
{
	struct bw_opts o = { .floor = MIN_SIZE, .seconds = 1.0, .runs = 3, .c2c = true };
	double ratio = -1;
	bool flagged = false;
	char *verdict = NULL;

	if (!argc || strcmp(argv[0], "bw")) {
		err("unknown numa verb '%s' (bw)", argc ? argv[0] : "");
		return EXIT_USAGE;
	}
	if (parse_args(argc, argv, &o))
		return EXIT_USAGE;
	if (bw_run(&o, !g.dry_run))
		return EXIT_FAILED;
	if (!g.dry_run)
		verdict = numa_verdict(&ratio, &flagged);
	if (g.json)
		print_json(&last_t, &o, g.dry_run ? NULL : &last_r, verdict, ratio, flagged);
	else if (g.dry_run)
		print_plan(&last_t, &o);
	else
		print_text(&last_t, &o, &last_r, verdict, flagged);
	free(verdict);
	return 0;
}

/* Nodes the kernel knows (1 without NUMA support). */
/* The nodes of the sysfs tree read (AHEADCTL_SYSFS_ROOT), at least 1. */
int numa_nodes(void)
{
	char *p = xsprintf("%s/devices/system/node", sysfs_root());
	DIR *d = opendir(p);
	struct dirent *e;
	int n = 0;

	free(p);
	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, "node", 4) && isdigit((unsigned char)e->d_name[4]);
	if (d)
		closedir(d);
	return n ? n : 1;
}

/* The nodes libnuma sees on this host: where numa_run() measures. */
int numa_host_nodes(void)
{
	return numa_available() < 0 ? 1 : numa_num_configured_nodes();
}
