// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: parallel, NUMA-aware clearing of large memory against one thread (ktask).
 *
 * Memory handed to a process must be zeroed first. The kernel does it at fault time, one
 * page (or one 2 MiB folio, folio_zero_user) per fault, in the faulting thread: clearing
 * 100 GiB of huge pages took 41 s on one thread in the ktask RFC. ktask split such work
 * into chunks handed to per-NUMA-node kernel threads (2.0x at 2 threads, 10x at 16);
 * upstream never merged it (padata_do_multithreaded serves boot-time work only), so a
 * process parallelises clearing itself: several threads fault in disjoint chunks by
 * MADV_POPULATE_WRITE or by touching them. That scales unless something in the kernel
 * serialises the threads: hugetlbfs fallocate() takes inode_lock for the whole call, so
 * threads clearing one file take turns (--trigger shows it).
 *
 * This program clears --size bytes of hugetlb, THP or 4 KiB pages with 1, 2, 4 .. N
 * threads (chunks from a shared counter per node, each worker bound with libnuma to the
 * node that owns its chunk, memory bound to that node), measures the ceiling (rep stosb
 * over the same, already faulted memory, same thread counts) and the munmap time, and
 * prints the ktask table. The verdict is the parallel efficiency at the largest N that has
 * a CPU of its own: speedup(N) against the speedup the machine can give, min(N, memset
 * bandwidth at N threads / kernel clearing bandwidth at 1), so that a host at its memory
 * bandwidth wall does not fail every kernel.
 *
 * --measure clearing is the second verdict: how fast one thread of the kernel clears fresh
 * huge pages (2 MiB hugetlb, THP, 1 GiB hugetlb) against two user-space ceilings on the same
 * memory, cached stores (rep stosb) and non-temporal stores. Up to 2026 the kernel cleared a
 * huge page 4 KiB at a time with cached stores, in an order that ends at the faulting
 * subpage (process_huge_page); Ankur Arora's clear_pages() / "folio_zero_user: clear pages
 * sequentially" series doubled that on AMD Genoa (11.8 -> 23.6 GB/s).
 *
 * Pitfalls of this KVM guest: free page reporting gives freed memory back to the host
 * about 2 s after it is freed, and the first touch of such memory costs an EPT fault and
 * a host-side clear (0.4-1 GiB/s). So every kind is warmed up once (that pass is the
 * "cold" figure) and the timed passes follow back to back, reusing warm memory.
 */
#include "krepro.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <numa.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#ifndef MAP_HUGE_1GB
#define MAP_HUGE_1GB (30 << 26)
#endif

#define HPAGE_SIZE (2ULL << 20)
#define GPAGE_SIZE (1ULL << 30)
#define GIB (1024.0 * 1024 * 1024)
#define MAX_THREADS 256
#define MAX_POINTS 10 /* 1, 2, 4 .. 256 and a last one that is no power of two */
#define MAX_REPEAT 100
#define MAX_PARTS 64  /* NUMA nodes with memory that get a part of the region */

enum kind { K_HUGETLB, K_THP, K_4K, K_1G, NKINDS };
static const char *const kind_names[NKINDS] = { "hugetlb", "thp", "4k", "1g" };
#define SCALING_KINDS (1 << K_HUGETLB | 1 << K_THP | 1 << K_4K)
#define CLEARING_KINDS (1 << K_HUGETLB | 1 << K_THP | 1 << K_1G)
#define ALL_KINDS ((1 << NKINDS) - 1)
enum method { M_POPULATE, M_TOUCH, M_FALLOCATE };
static const char *const method_names[] = { "populate", "touch", "fallocate" };
enum op { OP_CLEAR, OP_MEMSET, OP_STREAM };

static struct {
	uint64_t size, chunk;
	int threads;	/* 0: the online CPUs */
	unsigned kinds; /* bit per enum kind */
	enum method method;
	bool method_set, kinds_set, cold, clearing; /* clearing: --measure clearing */
	bool size_set;
} cfg = { .size = 512ULL << 20, .chunk = 16ULL << 20, .kinds = SCALING_KINDS,
	  .method = M_POPULATE };

/* ---- the pure parts (unit tested) ---- */

/* Workers that waited longer than this share of a pass for a CPU were disturbed by other
 * tasks: their repeat says nothing about the kernel and does not vote. */
#define MAX_DELAY 0.10
#define PASSES 2 /* passes per point and repeat; the repeat keeps the fastest */

/* The speedup the machine can give n threads of kernel clearing that take t1 seconds on one
 * thread: n, unless n threads of memset over the same memory (mn seconds) hit the memory
 * bandwidth wall first. Never below 1. mn unknown (not finite or <= 0): n. */
static double ideal_speedup(double t1, double mn, int n)
{
	if (!(mn > 0) || !isfinite(mn))
		return n;
	return fmax(1, fmin(n, t1 / mn));
}

/* One verdict: efficiency = (t1 / tn) / ideal_speedup(t1, mn, n); FAIL below the threshold;
 * SKIP when either pass was disturbed (delay: the larger run-delay share of the two). */
static enum kr_verdict ktask_rule(double t1, double tn, double mn, int n, double delay,
				  double threshold, double *eff)
{
	*eff = NAN;
	if (!(t1 > 0) || !(tn > 0) || n < 2 || !isfinite(t1) || !isfinite(tn))
		return KR_SKIP;
	*eff = t1 / tn / ideal_speedup(t1, mn, n);
	if (!(delay <= MAX_DELAY))
		return KR_SKIP;
	return *eff < threshold ? KR_FAIL : KR_PASS;
}

/* Thread counts 1, 2, 4 .. below max, then max. Returns how many. */
static int thread_points(int max, int *pts)
{
	int n = 0;

	for (int t = 1; t < max && n < MAX_POINTS - 1; t *= 2)
		pts[n++] = t;
	pts[n++] = max;
	return n;
}

/* "hugetlb,thp,4k" or "all" into a bit mask; -1 on an unknown word */
static int parse_kinds(const char *s)
{
	char buf[64];
	int mask = 0;

	if (!strcmp(s, "all"))
		return ALL_KINDS; /* narrowed to the --measure's kinds in validate() */
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int k;
		for (k = 0; k < NKINDS && strcmp(w, kind_names[k]); k++)
			;
		if (k == NKINDS)
			return -1;
		mask |= 1 << k;
	}
	return mask ? mask : -1;
}

/* ---- the workers ---- */

struct job {
	char *base; /* the mapping (fallocate: mapped only for the memset pass) */
	int fd;	    /* memfd of --method fallocate, else -1 */
	uint64_t size, chunk, stride;
	enum op op;
	enum method method;
	int nparts, part_node[MAX_PARTS];
	uint64_t part_end[MAX_PARTS]; /* chunk index where part i ends */
	_Atomic uint64_t next[MAX_PARTS];
	pthread_barrier_t go;
	_Atomic int err;
	double delay; /* of the last pass: time workers waited for a CPU / (pass x workers) */
};

struct worker {
	struct job *job;
	int part;
	pthread_t thread;
	uint64_t wait_ns; /* runnable but not running during the pass: other tasks' CPU */
	int64_t t_start, t_end;
};

static bool numa_ok;

/* The userspace ceiling: the string store of the kernel's clear_page_erms, but of a
 * non-zero byte, so that the next clear of these pages zeroes real data. */
static void fill_pattern(void *p, size_t n)
{
#if defined(__x86_64__)
	__asm__ volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(0x5a) : "memory");
#else
	memset(p, 0x5a, n);
#endif
}

/* The other ceiling: non-temporal stores (movnti), which bypass the cache and so skip the
 * read-for-ownership of every line: what the unmerged 2020-21 clearing series used. */
static void fill_stream(void *p, size_t n)
{
#if defined(__x86_64__)
	const long long v = 0x5a5a5a5a5a5a5a5aLL;
	for (long long *q = p, *end = (long long *)((char *)p + n); q < end; q += 4) {
		_mm_stream_si64(q, v);
		_mm_stream_si64(q + 1, v);
		_mm_stream_si64(q + 2, v);
		_mm_stream_si64(q + 3, v);
	}
	_mm_sfence();
#else
	memset(p, 0x5a, n);
#endif
}

static int do_chunk(struct job *j, uint64_t off, uint64_t len)
{
	char *p = j->base + off;

	if (j->op == OP_MEMSET || j->op == OP_STREAM) {
		(j->op == OP_MEMSET ? fill_pattern : fill_stream)(p, len);
		return 0;
	}
	switch (j->method) {
	case M_POPULATE:
		return madvise(p, len, MADV_POPULATE_WRITE);
	case M_TOUCH:
		/* the last byte: folio_zero_user then clears the 2 MiB bottom-up */
		for (uint64_t o = j->stride - 1; o < len; o += j->stride)
			((volatile char *)p)[o] = 0;
		return 0;
	case M_FALLOCATE:
		return fallocate(j->fd, 0, (off_t)off, (off_t)len);
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct job *j = w->job;

	/* ktask: a worker runs on the node that owns its chunks, allocating there */
	if (numa_ok) {
		numa_run_on_node(j->part_node[w->part]);
		numa_set_localalloc();
	}
	struct kr_schedstat s0 = { 0 }, s1 = { 0 };
	pthread_barrier_wait(&j->go);
	kr_read_schedstat(getpid(), kr_gettid(), &s0);
	w->t_start = kr_now_ns();
	/* own node's chunks first, then help the other nodes */
	for (int k = 0; k < j->nparts; k++) {
		int p = (w->part + k) % j->nparts;
		for (;;) {
			uint64_t c = atomic_fetch_add(&j->next[p], 1);
			if (c >= j->part_end[p])
				break;
			uint64_t off = c * j->chunk;
			uint64_t len = j->size - off < j->chunk ? j->size - off : j->chunk;
			if (do_chunk(j, off, len) < 0) {
				int zero = 0;
				atomic_compare_exchange_strong(&j->err, &zero, errno ? errno : EIO);
			}
		}
	}
	w->t_end = kr_now_ns();
	kr_read_schedstat(getpid(), kr_gettid(), &s1);
	w->wait_ns = s1.wait_ns - s0.wait_ns;
	return NULL;
}

/* One timed pass with n workers; seconds, or -1 with errno. Thread start is not timed. */
static double run_pass(struct job *j, enum op op, int n)
{
	static struct worker w[MAX_THREADS];
	uint64_t nchunks = (j->size + j->chunk - 1) / j->chunk, begin = 0;

	j->op = op;
	atomic_store(&j->err, 0);
	for (int p = 0; p < j->nparts; p++) {
		atomic_store(&j->next[p], begin);
		begin = j->part_end[p] = nchunks * (uint64_t)(p + 1) / (uint64_t)j->nparts;
	}
	pthread_barrier_init(&j->go, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		w[i] = (struct worker){ .job = j, .part = i % j->nparts };
		if (kr_thread_start(&w[i].thread, -1, SCHED_OTHER, 0, worker_main, &w[i]) < 0) {
			kr_warn("cannot start a worker: %s", strerror(errno));
			abort(); /* the parent restores; a half-started barrier cannot be undone */
		}
	}
	pthread_barrier_wait(&j->go);
	for (int i = 0; i < n; i++)
		pthread_join(w[i].thread, NULL);
	pthread_barrier_destroy(&j->go);
	/* from the first worker's start to the last one's end: our own (main) thread may
	 * get a CPU only after the workers are done */
	int64_t t0 = w[0].t_start, t1 = w[0].t_end;
	for (int i = 1; i < n; i++) {
		t0 = w[i].t_start < t0 ? w[i].t_start : t0;
		t1 = w[i].t_end > t1 ? w[i].t_end : t1;
	}
	double s = (double)(t1 - t0) / 1e9;
	/* the workers' share of the pass spent waiting for a CPU (beyond their own number) */
	double waited = 0;
	for (int i = 0; i < n; i++)
		waited += (double)w[i].wait_ns / 1e9;
	j->delay = waited / (s * n);
	if (atomic_load(&j->err)) {
		errno = atomic_load(&j->err);
		return -1;
	}
	return s;
}

/* ---- the region ---- */

static int map_region(struct job *j, enum kind k)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | (k == K_HUGETLB ? MAP_HUGETLB : 0) |
		    (k == K_1G ? MAP_HUGETLB | MAP_HUGE_1GB : 0);
	uint64_t extra = k == K_THP ? HPAGE_SIZE : 0;

	j->fd = -1;
	j->base = NULL;
	j->stride = k == K_4K ? 4096 : HPAGE_SIZE;
	if (j->method == M_FALLOCATE) { /* one hugetlbfs file: the memory comes from fallocate */
		j->fd = memfd_create("krepro-ktask_bench", MFD_HUGETLB | MFD_CLOEXEC);
		return j->fd < 0 ? -1 : 0;
	}
	char *p = mmap(NULL, j->size + extra, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	if (extra) { /* THP needs 2 MiB alignment: trim the mapping to it */
		char *a = (char *)(((uintptr_t)p + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1));
		if (a > p)
			munmap(p, (size_t)(a - p));
		if (a + j->size < p + j->size + extra)
			munmap(a + j->size, (size_t)(p + j->size + extra - (a + j->size)));
		p = a;
	}
	if (k == K_THP && madvise(p, j->size, MADV_HUGEPAGE) < 0)
		return -1;
	if (k == K_4K && madvise(p, j->size, MADV_NOHUGEPAGE) < 0)
		return -1;
	j->base = p;
	/* each node's part of the region lives on that node */
	uint64_t nchunks = (j->size + j->chunk - 1) / j->chunk;
	for (int i = 0; numa_ok && i < j->nparts; i++) {
		uint64_t b = nchunks * (uint64_t)i / (uint64_t)j->nparts * j->chunk;
		uint64_t e = nchunks * (uint64_t)(i + 1) / (uint64_t)j->nparts * j->chunk;
		if (e > j->size)
			e = j->size;
		if (e > b)
			numa_tonode_memory(p + b, (size_t)(e - b), j->part_node[i]);
	}
	return 0;
}

/* after fallocate: map the file, its pages already cleared, for the memset pass */
static int map_file(struct job *j)
{
	char *p = mmap(NULL, j->size, PROT_READ | PROT_WRITE, MAP_SHARED, j->fd, 0);
	if (p == MAP_FAILED)
		return -1;
	j->base = p;
	return madvise(p, j->size, MADV_POPULATE_WRITE); /* maps, does not clear again */
}

/* seconds to free the region (munmap, and close of the file) */
static double unmap_region(struct job *j)
{
	int64_t t0 = kr_now_ns();
	if (j->base)
		munmap(j->base, j->size);
	if (j->fd >= 0)
		close(j->fd);
	j->base = NULL;
	j->fd = -1;
	return (double)(kr_now_ns() - t0) / 1e9;
}

static uint64_t meminfo(const char *key)
{
	static char text[8192];
	uint64_t v = 0;

	if (kr_read_file("/proc/meminfo", text, sizeof(text)) < 0 || kr_kv_get(text, key, &v) < 0)
		return 0;
	return v;
}

/* fraction of the region backed by huge pages: the check that THP really happened */
static double thp_fraction(const struct job *j)
{
	static char text[4096];
	uint64_t kb = 0;

	if (kr_read_file("/proc/self/smaps_rollup", text, sizeof(text)) < 0 ||
	    kr_kv_get(text, "AnonHugePages", &kb) < 0)
		return NAN;
	return (double)kb * 1024 / (double)j->size;
}

/* ---- the measurement ---- */

static struct result {
	double clear[MAX_POINTS][MAX_REPEAT], memset[MAX_POINTS][MAX_REPEAT];
	double unmap[MAX_POINTS][MAX_REPEAT], delay[MAX_POINTS][MAX_REPEAT];
	double other[MAX_REPEAT]; /* 1 thread, huge pages faulted at the other end */
	double cold, huge_min;	  /* first pass; lowest share of huge pages seen */
	int nrep;
} res[NKINDS];

static int npoints, points[MAX_POINTS], verdict_point;

/* One clear + memset + munmap of kind k at every thread count; 0 or an exit code. */
static int measure_repeat(struct job *j, enum kind k, int r)
{
	for (int i = 0; i < npoints; i++)
		res[k].clear[i][r] = res[k].memset[i][r] = res[k].unmap[i][r] = INFINITY;
	/* a repeat keeps the best of PASSES passes per point (A B A B): other tasks and the
	 * host only ever slow a pass down */
	for (int pass = 0; pass < PASSES; pass++) {
		for (int i = 0; i < npoints; i++) {
			uint64_t huge_before = meminfo("HugePages_Free");
			double tc, tm, tu;

			if (map_region(j, k) < 0)
				return kr_error("cannot map %.2f GiB of %s pages: %s", j->size / GIB,
						kind_names[k], strerror(errno));
			if ((tc = run_pass(j, OP_CLEAR, points[i])) < 0)
				return kr_error("clearing %s pages (%s): %s", kind_names[k],
						method_names[j->method], strerror(errno));
			double delay = j->delay;
			double huge = k == K_THP ? thp_fraction(j) : k == K_HUGETLB ?
				(double)(huge_before - meminfo("HugePages_Free")) * HPAGE_SIZE /
				(double)j->size : 1;
			res[k].huge_min = fmin(res[k].huge_min, huge);
			if (j->method == M_FALLOCATE && map_file(j) < 0)
				return kr_error("mapping the hugetlb file: %s", strerror(errno));
			if ((tm = run_pass(j, OP_MEMSET, points[i])) < 0)
				return kr_error("memset: %s", strerror(errno));
			tu = unmap_region(j);
			kr_csv_row("%s,%s,%d,%d,%d,%.6f,%.6f,%.6f,%.3f", kind_names[k],
				   method_names[j->method], points[i], r, pass, tc, tm, tu, delay);
			if (tc < res[k].clear[i][r]) {
				res[k].clear[i][r] = tc;
				res[k].delay[i][r] = delay;
			}
			res[k].memset[i][r] = fmin(res[k].memset[i][r], tm);
			res[k].unmap[i][r] = fmin(res[k].unmap[i][r], tu);
		}
	}
	/* Huge pages, one thread, faulted at the other end: folio_zero_user clears the 4 KiB
	 * subpages towards the faulting address, so a fault at the base (populate) clears
	 * top-down and one at the last byte (touch) bottom-up; the CPU's stores care. */
	if (k != K_4K && j->method != M_FALLOCATE) {
		enum method m = j->method;
		double t;
		j->method = m == M_POPULATE ? M_TOUCH : M_POPULATE;
		if (map_region(j, k) < 0 || (t = run_pass(j, OP_CLEAR, 1)) < 0)
			return kr_error("clearing %s pages (%s): %s", kind_names[k],
					method_names[j->method], strerror(errno));
		run_pass(j, OP_MEMSET, points[verdict_point]);
		unmap_region(j);
		j->method = m;
		res[k].other[r] = t;
	}
	return 0;
}

/* warm-up: the first pass over fresh memory, timed as the cold figure */
static int warm_up(struct job *j, enum kind k)
{
	if (map_region(j, k) < 0)
		return kr_error("cannot map %.2f GiB of %s pages: %s", j->size / GIB, kind_names[k],
				strerror(errno));
	double t = run_pass(j, OP_CLEAR, points[verdict_point]);
	if (t < 0)
		return kr_error("clearing %s pages (%s): %s", kind_names[k], method_names[j->method],
				strerror(errno));
	res[k].cold = t;
	res[k].huge_min = 1;
	if (k == K_THP && thp_fraction(j) < 0.9) {
		double f = thp_fraction(j);
		unmap_region(j);
		return kr_skip(KR_EXIT_SKIP_MACHINE, "only %.0f%% of the region got THPs (memory "
			       "fragmented; AnonHugePages in /proc/self/smaps_rollup)", 100 * f);
	}
	/* Leave data in the pages, like every timed pass: on this host, zeroing memory that is
	 * already zero can be faster, and freed memory normally holds data. */
	if (j->method == M_FALLOCATE && map_file(j) < 0)
		return kr_error("mapping the hugetlb file: %s", strerror(errno));
	run_pass(j, OP_MEMSET, points[verdict_point]);
	unmap_region(j);
	return 0;
}

/* the ktask table of one kind; returns its efficiency (median over repeats) */
static double report_kind(enum kind k, int nrep, double threshold, enum kr_verdict *votes,
			  int *nvotes)
{
	struct result *rs = &res[k];
	double gib = (double)cfg.size / GIB, t1min = 0, eff_one;
	char key[64];

	kr_say("%s: %s, %.2f GiB in %llu MiB chunks, %d repeat%s", kind_names[k],
	       cfg.method == M_POPULATE ? "MADV_POPULATE_WRITE" : cfg.method == M_TOUCH ?
	       "first touch" : "fallocate, 1 file", gib,
	       (unsigned long long)(cfg.chunk >> 20), nrep, nrep > 1 ? "s" : "");
	kr_say("thr speedup   min s  med s  stdev  GiB/s  memset  clear/  munmap");
	kr_say("                                           GiB/s  memset      ms");
	for (int i = 0; i < npoints; i++) {
		struct kr_stats c, m, u;
		double tmp[MAX_REPEAT];
		memcpy(tmp, rs->clear[i], (size_t)nrep * sizeof(double));
		kr_stats(tmp, (size_t)nrep, &c);
		memcpy(tmp, rs->memset[i], (size_t)nrep * sizeof(double));
		kr_stats(tmp, (size_t)nrep, &m);
		memcpy(tmp, rs->unmap[i], (size_t)nrep * sizeof(double));
		kr_stats(tmp, (size_t)nrep, &u);
		if (i == 0)
			t1min = c.min;
		char sp[16] = "      -";
		if (i)
			snprintf(sp, sizeof(sp), "%6.2fx", t1min / c.min);
		kr_say("%3d %s %7.3f %6.3f %6.3f %6.2f %7.2f %7.2f %7.2f", points[i], sp, c.min,
		       c.median, nrep > 1 ? c.stdev : 0, gib / c.min, gib / m.min, m.min / c.min,
		       1e3 * u.median);
		const char *n = kind_names[k];
		int t = points[i];
		snprintf(key, sizeof(key), "%s_t%d_min_s", n, t), kr_measure(key, c.min);
		snprintf(key, sizeof(key), "%s_t%d_median_s", n, t), kr_measure(key, c.median);
		snprintf(key, sizeof(key), "%s_t%d_stdev_s", n, t), kr_measure(key, nrep > 1 ? c.stdev : 0);
		snprintf(key, sizeof(key), "%s_t%d_gib_s", n, t), kr_measure(key, gib / c.min);
		snprintf(key, sizeof(key), "%s_t%d_memset_gib_s", n, t), kr_measure(key, gib / m.min);
		snprintf(key, sizeof(key), "%s_t%d_ceiling_fraction", n, t), kr_measure(key, m.min / c.min);
		snprintf(key, sizeof(key), "%s_t%d_munmap_ms", n, t), kr_measure(key, 1e3 * u.median);
		snprintf(key, sizeof(key), "%s_t%d_speedup", n, t), kr_measure(key, t1min / c.min);
	}
	/* a kind's efficiency is from the fastest judged pass at 1 and at N threads, like the
	 * table's speedup: host noise only ever adds time (a 30 ms pass can double), while a
	 * lock that serialises the threads shows in every pass, the fastest too */
	int judged = 0, n = points[verdict_point];
	double t1 = INFINITY, tn = INFINITY, mn = INFINITY;
	for (int r = 0; r < nrep; r++) {
		/* run delay flags other tasks on the workers' CPUs; with fallocate on one file
		 * the inode_lock handoffs wake the workers all the time, so there it is the
		 * phenomenon itself, not a disturbance */
		double d = cfg.method == M_FALLOCATE ? 0 :
			   fmax(rs->delay[0][r], rs->delay[verdict_point][r]);
		if (ktask_rule(rs->clear[0][r], rs->clear[verdict_point][r],
			       rs->memset[verdict_point][r], n, d, threshold, &eff_one) == KR_SKIP)
			continue; /* disturbed: other tasks took the workers' CPUs */
		judged++;
		t1 = fmin(t1, rs->clear[0][r]);
		tn = fmin(tn, rs->clear[verdict_point][r]);
		mn = fmin(mn, rs->memset[verdict_point][r]);
	}
	double e = NAN;
	enum kr_verdict v = judged ? ktask_rule(t1, tn, mn, n, 0, threshold, &e) : KR_SKIP;
	votes[(*nvotes)++] = v;
	int disturbed = nrep - judged;
	if (disturbed)
		kr_say("%d repeat%s not judged: workers waited >%.0f%% of a pass for a CPU",
		       disturbed, disturbed > 1 ? "s" : "", 100 * MAX_DELAY);
	snprintf(key, sizeof(key), "%s_disturbed", kind_names[k]), kr_measure(key, disturbed);
	if (cfg.cold)
		kr_say("first (warm-up) pass, %d thr: %.2f GiB/s (slow if the host took it back)",
		       points[verdict_point], gib / rs->cold);
	snprintf(key, sizeof(key), "%s_cold_gib_s", kind_names[k]), kr_measure(key, gib / rs->cold);
	snprintf(key, sizeof(key), "%s_efficiency", kind_names[k]), kr_measure(key, e);
	if (judged) {
		kr_say("ideal speedup at %d thr: %.2fx = min(%d, memset %d thr %.1f GiB/s", n,
		       ideal_speedup(t1, mn, n), n, n, gib / mn);
		kr_say("  / kernel 1 thr %.1f GiB/s); speedup %.2fx", gib / t1, t1 / tn);
	}
	snprintf(key, sizeof(key), "%s_ideal_speedup", kind_names[k]);
	kr_measure(key, judged ? ideal_speedup(t1, mn, n) : NAN);
	kr_say("%s efficiency at %d threads: %.2f (fastest of %d judged repeat%s)", kind_names[k],
	       n, e, judged, judged == 1 ? "" : "s");
	snprintf(key, sizeof(key), "%s_repeats", kind_names[k]), kr_measure(key, nrep);
	if (k != K_4K && cfg.method != M_FALLOCATE) {
		double o = INFINITY, m1 = INFINITY;
		for (int r = 0; r < nrep; r++) {
			o = fmin(o, rs->other[r]);
			m1 = fmin(m1, rs->memset[0][r]);
		}
		kr_say("1 thr, fault at the %s of each 2 MiB (cleared %s): %.2f GiB/s",
		       cfg.method == M_POPULATE ? "top" : "base",
		       cfg.method == M_POPULATE ? "upwards" : "downwards", gib / o);
		kr_say("  = %.2f of memset; the table's passes clear each 2 MiB %s", m1 / o,
		       cfg.method == M_POPULATE ? "downwards" : "upwards");
		snprintf(key, sizeof(key), "%s_t1_%s_gib_s", kind_names[k],
			 cfg.method == M_POPULATE ? "bottom_up" : "top_down");
		kr_measure(key, gib / o);
	}
	if (k != K_4K) {
		snprintf(key, sizeof(key), "%s_huge_fraction_min", kind_names[k]);
		kr_measure(key, rs->huge_min);
		if (rs->huge_min < 0.9)
			kr_say("warning: only %.0f%% of the region was huge pages in some pass",
			       100 * rs->huge_min);
	}
	kr_say("%s", "");
	return e;
}

/* ---- requirements, then the run ---- */

static char orig_nr_hugepages[32];
#define POOL_2M "/sys/kernel/mm/hugepages/hugepages-2048kB"
#define POOL_1G "/sys/kernel/mm/hugepages/hugepages-1048576kB"

static uint64_t pool_read(const char *pool, const char *file)
{
	char path[128];
	uint64_t v = 0;

	snprintf(path, sizeof(path), "%s/%s", pool, file);
	return kr_read_u64(path, &v) < 0 ? 0 : v;
}

/* Makes need pages of the pool free and unreserved (journaled: restored after the run, after
 * SIGINT, after a crash); orig gets the pool size before. 0, or how many pages it could get
 * (> 0, < need) with *got set, or -1 with errno. */
static int reserve_pool(const char *pool, uint64_t need, char *orig, size_t olen, uint64_t *got)
{
	char path[128], val[32];
	uint64_t nr = pool_read(pool, "nr_hugepages");
	uint64_t avail = pool_read(pool, "free_hugepages") - pool_read(pool, "resv_hugepages");

	snprintf(orig, olen, "%llu", (unsigned long long)nr);
	*got = avail;
	if (avail >= need)
		return 0;
	snprintf(path, sizeof(path), "%s/nr_hugepages", pool);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)(nr + need - avail));
	if (kr_journal_write(path, val) < 0)
		return -1;
	*got = pool_read(pool, "free_hugepages") - pool_read(pool, "resv_hugepages");
	return *got >= need ? 0 : 1;
}

static int reserve_hugepages(uint64_t need)
{
	uint64_t got;
	int r = reserve_pool(POOL_2M, need, orig_nr_hugepages, sizeof(orig_nr_hugepages), &got);

	if (r < 0)
		return kr_error("cannot set %s/nr_hugepages: %s", POOL_2M, strerror(errno));
	if (r > 0)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "could reserve only %llu of %llu 2 MiB huge "
			       "pages (memory fragmented)", (unsigned long long)got,
			       (unsigned long long)need);
	return 0;
}

/* ---- --measure clearing: one thread of the kernel against two ceilings ---- */

/* Kernel clearing of 2 MiB hugetlb pages below this share of the cached-store ceiling FAILs.
 * Upstream, the sequential clear_pages() series doubled demand-fault clearing on AMD Genoa
 * (11.8 -> 23.6 GB/s: about 0.5 -> 1.0 of its ceiling; Milan 2 MiB 12.9 -> 17.0). Measured
 * on 6.18 (without it): 0.42-0.51 of rep stosb on an AMD-hosted VM, where the top-down
 * order is the cost (a fault at the last byte, cleared bottom-up, gave 0.85-1.05); on an
 * Intel-hosted one the order costs nothing (populate = touch, user 4 KiB rep stosb up =
 * down, all ~8.2 GiB/s) and 4 KiB at a time costs 0.93 of one long rep stosb in the host's
 * fast phases, ~0.7 in its slow ones: median pair ratio 0.66-0.93 in 20 of 20 runs (2026-11-23).
 * 0.58 lies between the two with the margin on both sides: FAIL where the order costs
 * half, as on Genoa before the series, PASS where it costs nothing. THP adds the page
 * allocator and memory the host took back, 1 GiB pages are cleared in order: both are
 * shown, the 2 MiB hugetlb page decides. */
#define CLEARING_THRESHOLD 0.58
#define CLEARING_MARGIN 0.04 /* closer than this to the threshold: inconclusive */
/* passes per --repeat: a 512 MiB pass takes ~60 ms, and the fastest of many is what the
 * machine can do (another task's memory traffic only ever slows a pass) */
#define CLEARING_PASSES 4
/* --measure clearing's time budget without --duration: up to 12 passes of three kinds,
 * the 1 GiB page's cold warm-up alone ~4 s here (the hard cap is 35 s) */
#define CLEARING_BUDGET 20.0
/* a pass of --measure clearing (kernel clear, rep stosb, movnti) in probe units (clear +
 * rep stosb) */
#define CLEARING_UNITS 2

/* Verdict of one page kind: kernel GiB/s over cached-store GiB/s. */
static enum kr_verdict clearing_rule(double t_kernel, double t_cached, double threshold,
				     double *ratio)
{
	*ratio = NAN;
	if (!(t_kernel > 0) || !(t_cached > 0) || !isfinite(t_kernel) || !isfinite(t_cached))
		return KR_SKIP;
	*ratio = t_cached / t_kernel;
	if (fabs(*ratio - threshold) < CLEARING_MARGIN)
		return KR_SKIP;
	return *ratio < threshold ? KR_FAIL : KR_PASS;
}

#define SUBPAGES 512 /* 4 KiB subpages of a 2 MiB page */
#define BUCKET 32    /* subpages per bucket of the latency profile */
#define ORDER_PAGES 32

/* Which end of a 2 MiB page did the kernel clear last? Cached stores leave the last
 * subpages cleared in L1/L2, so right after the fault a load from them is faster. Loads one
 * line of each subpage, in random order (no prefetcher helps), over ORDER_PAGES fresh pages
 * faulted at subpage target; returns the centre of the bucket of subpages with the lowest
 * mean latency, or -1 (not x86, or no free hugetlb page). Measured here (6.18): fault at 0
 * -> 64 cycles at subpages 0-31 rising to 85 at 480-511; fault at 511 -> the reverse. */
static int hot_subpage(int target, unsigned *seed)
{
#if defined(__x86_64__)
	static double lat[SUBPAGES];
	int order[SUBPAGES];
	unsigned aux;

	memset(lat, 0, sizeof(lat));
	for (int n = 0; n < ORDER_PAGES; n++) {
		char *p = mmap(NULL, HPAGE_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		if (p == MAP_FAILED)
			return -1;
		for (int i = 0; i < SUBPAGES; i++)
			order[i] = i;
		for (int i = SUBPAGES - 1; i > 0; i--) { /* Fisher-Yates */
			int r = (int)(rand_r(seed) % (unsigned)(i + 1)), t = order[i];
			order[i] = order[r], order[r] = t;
		}
		/* the fault, at the target subpage, with no store of ours */
		if (madvise(p + (size_t)target * 4096, 4096, MADV_POPULATE_WRITE) < 0) {
			munmap(p, HPAGE_SIZE);
			return -1;
		}
		for (int i = 0; i < SUBPAGES; i++) {
			int sp = order[i];
			volatile char *line = p + (size_t)sp * 4096 + 64 * (size_t)((sp * 7 + 3) % 64);
			_mm_lfence();
			uint64_t t0 = __rdtscp(&aux);
			(void)*line;
			lat[sp] += (double)(__rdtscp(&aux) - t0);
		}
		munmap(p, HPAGE_SIZE);
	}
	int best = 0;
	double best_sum = INFINITY;
	for (int b = 0; b < SUBPAGES; b += BUCKET) {
		double sum = 0;
		for (int i = b; i < b + BUCKET; i++)
			sum += lat[i];
		if (sum < best_sum)
			best_sum = sum, best = b;
	}
	return best + BUCKET / 2;
#else
	(void)target, (void)seed;
	return -1;
#endif
}

/* The clearing order, from pages faulted at the base and at the top. */
static void report_order(const struct kr_opts *o)
{
	unsigned seed = o->seed_set ? (unsigned)o->seed : (unsigned)kr_now_ns();
	int lo = hot_subpage(0, &seed), hi = lo < 0 ? -1 : hot_subpage(SUBPAGES - 1, &seed);

	if (lo < 0 || hi < 0) {
		kr_say("clearing order: not observed (needs x86, a free 2 MiB page)");
		return;
	}
	/* ascending: a 6.1 kernel clearing in order (krepro patch, TCG) gave 432-496 for
	 * both faults; process_huge_page 80-176 and 336-496 */
	bool towards = lo < SUBPAGES / 2 && hi >= SUBPAGES / 2;
	bool up = lo >= SUBPAGES / 2 && hi >= SUBPAGES / 2;
	kr_measure("order_hot_subpage_fault_base", lo);
	kr_measure("order_hot_subpage_fault_top", hi);
	kr_measure_str("clearing_order", towards ? "towards-fault" : up ? "ascending" : "mixed");
	kr_say("clearing order of a 2 MiB page (cache-hot subpages after the");
	kr_say("fault, 0-511): fault at 0 -> hot ~%d; fault at 511 -> hot ~%d", lo, hi);
	kr_say("  = %s", towards ? "ends at the faulting subpage (process_huge_page)" :
	       up ? "ends at the top whatever the fault (sequential)" : "unclear");
}

/* Each kernel pass is paired with the rep stosb and movnti passes right after it on the same
 * memory, and the verdict is the median of the per-pair ratios. Measured here (Intel-hosted
 * VM, 6.18): the host's memory goes through phases of seconds in which clearing 4 KiB at a
 * time, by the kernel and by a user-space loop of 4 KiB rep stosb alike, drops from ~8.3 to
 * ~5.7 GiB/s while one long rep stosb drops less (8.7 -> 7.5-8.5): ratio ~0.93 in the fast
 * phases, ~0.7 in the slow ones. The fastest kernel pass over the fastest rep stosb pass,
 * the former statistic, took the two from different phases: 0.60-0.95 between runs. A pair
 * lies within one phase. Pairs whose thread waited > MAX_DELAY of a pass for a CPU (other
 * tasks) do not vote; fewer than CLEARING_MIN_PAIRS voting: inconclusive. */
#define CLEARING_MIN_PAIRS 3
#define CLEARING_MAX (MAX_REPEAT * CLEARING_PASSES)

static struct {
	double kernel, cached, stream, cold; /* median seconds of the voting passes; cold: first */
	double vs_cached, vs_stream;	      /* median of the per-pair ratios (kernel GiB/s over) */
	uint64_t size;
	int passes, judged;
	bool done;
	char why[96]; /* not measured: why */
} clr[NKINDS];

static double median_of(double *v, int n)
{
	struct kr_stats s;

	if (n <= 0)
		return NAN;
	kr_stats(v, (size_t)n, &s);
	return s.median;
}

/* One thread: kernel clearing of fresh pages of kind k, then rep stosb, then movnti over the
 * same (now faulted) memory; up to max passes, fewer when they outgrow this kind's share of
 * the time budget (share seconds, the warm-up included), never fewer than the minimum. */
static int measure_clearing(struct job *j, enum kind k, int max, double share)
{
	static double t[3][CLEARING_MAX], vc[CLEARING_MAX], vs[CLEARING_MAX];
	static const enum op ops[3] = { OP_CLEAR, OP_MEMSET, OP_STREAM };
	double secs[3]; /* kernel clear, rep stosb, movnti */
	int64_t start = kr_now_ns(), last = 0;
	int n = 0, judged = 0;

	if (max > CLEARING_MAX)
		max = CLEARING_MAX;
	for (int r = -1; r < max; r++) { /* r = -1: the warm-up, timed as the cold figure */
		int64_t t0 = kr_now_ns();
		if (r >= CLEARING_MIN_PAIRS && (double)(t0 - start + last) / 1e9 > share)
			break;
		if (map_region(j, k) < 0)
			return kr_error("cannot map %.2f GiB of %s pages: %s", j->size / GIB,
					kind_names[k], strerror(errno));
		double delay = 0;
		for (int i = 0; i < 3; i++) {
			if ((secs[i] = run_pass(j, ops[i], 1)) < 0)
				return kr_error("clearing %s pages: %s", kind_names[k], strerror(errno));
			delay = fmax(delay, j->delay);
		}
		if (k == K_THP && thp_fraction(j) < 0.9) {
			snprintf(clr[k].why, sizeof(clr[k].why), "only %.0f%% THP (fragmented)",
				 100 * thp_fraction(j));
			unmap_region(j);
			return 0;
		}
		unmap_region(j);
		kr_csv_row("%s,clearing,1,%d,0,%.6f,%.6f,%.6f,%.3f", kind_names[k], r, secs[0],
			   secs[1], secs[2], delay);
		last = kr_now_ns() - t0;
		if (r < 0) {
			clr[k].cold = secs[0];
			continue;
		}
		n++;
		if (!(delay <= MAX_DELAY))
			continue; /* other tasks took the CPU: says nothing about the kernel */
		for (int i = 0; i < 3; i++)
			t[i][judged] = secs[i];
		vc[judged] = secs[1] / secs[0];
		vs[judged] = secs[2] / secs[0];
		judged++;
	}
	clr[k].kernel = median_of(t[0], judged);
	clr[k].cached = median_of(t[1], judged);
	clr[k].stream = median_of(t[2], judged);
	clr[k].vs_cached = median_of(vc, judged);
	clr[k].vs_stream = median_of(vs, judged);
	clr[k].passes = n;
	clr[k].judged = judged;
	clr[k].done = true;
	clr[k].size = j->size;
	return 0;
}

static int run_clearing(const struct kr_opts *o, struct job *job, double s_per_gib)
{
	double threshold = o->threshold_set ? o->threshold : CLEARING_THRESHOLD;
	double budget = o->duration_set ? o->duration_s : CLEARING_BUDGET;
	int nkinds = 0, r, kinds_left = __builtin_popcount(cfg.kinds), judged = 0;
	double metric = NAN;
	char orig1g[32];
	uint64_t got;
	int64_t start = kr_now_ns();

	kr_param("measure", "clearing");
	kr_param("size", "%.2fGiB", cfg.size / GIB);
	kr_param("repeat", "%d", o->repeat);
	if (kr_csv_open("pages,method,threads,repeat,pass,clear_s,memset_s,stream_s,run_delay") < 0)
		return kr_error("cannot write --csv %s", o->csv);
	job->nparts = 1; /* one thread, on the first node with memory */
	for (int k = 0; k < NKINDS; k++) {
		if (!(cfg.kinds & 1 << k))
			continue;
		double left = budget - (double)(kr_now_ns() - start) / 1e9;
		job->size = k == K_1G ? (cfg.size + GPAGE_SIZE - 1) / GPAGE_SIZE * GPAGE_SIZE : cfg.size;
		job->chunk = job->size;
		if (k == K_HUGETLB && (r = reserve_hugepages(job->size / HPAGE_SIZE)))
			return r;
		if (k == K_1G) {
			/* the fewest passes of a 1 GiB page, estimated from the probe */
			double need = (1 + CLEARING_MIN_PAIRS) * CLEARING_UNITS * job->size / GIB *
				      s_per_gib;
			if (access(POOL_1G, F_OK) < 0) {
				snprintf(clr[k].why, sizeof(clr[k].why), "no 1 GiB pages on this CPU/kernel");
				continue;
			}
			if (need > left) {
				snprintf(clr[k].why, sizeof(clr[k].why), "~%.0f s at %.2f GiB/s: over the "
					 "time budget", need, 1 / s_per_gib);
				continue;
			}
			uint64_t avail = meminfo("MemAvailable") * 1024;
			if (avail < job->size + (1ULL << 30)) {
				snprintf(clr[k].why, sizeof(clr[k].why), "too little free memory");
				continue;
			}
			r = reserve_pool(POOL_1G, job->size / GPAGE_SIZE, orig1g, sizeof(orig1g), &got);
			if (r < 0)
				return kr_error("cannot set %s/nr_hugepages: %s", POOL_1G, strerror(errno));
			if (r > 0) {
				snprintf(clr[k].why, sizeof(clr[k].why), "could not reserve a 1 GiB page"
					 " (memory fragmented)");
				kr_write_file(POOL_1G "/nr_hugepages", orig1g);
				continue;
			}
		}
		kr_progress("%s: clearing", kind_names[k]);
		if ((r = measure_clearing(job, (enum kind)k, CLEARING_PASSES * o->repeat,
					  left / kinds_left--)))
			return r;
		/* give the pool back now (the journal restores it again at the end) */
		if (k == K_HUGETLB) {
			report_order(o);
			kr_write_file(POOL_2M "/nr_hugepages", orig_nr_hugepages);
		}
		if (k == K_1G)
			kr_write_file(POOL_1G "/nr_hugepages", orig1g);
	}

	kr_say("%s", "");
	kr_say("1 thread, GiB/s   kernel  cached     non-   kernel/  kernel/");
	kr_say("                  clears  stores  tempor.   cached  non-tmp");
	for (int k = 0; k < NKINDS; k++) {
		if (!(cfg.kinds & 1 << k))
			continue;
		if (!clr[k].done) {
			kr_say("%-12s  not measured: %s", kind_names[k], clr[k].why);
			continue;
		}
		double g = (double)clr[k].size / GIB;
		const char *n = kind_names[k];
		char key[64];
		snprintf(key, sizeof(key), "%s_passes", n), kr_measure(key, clr[k].passes);
		snprintf(key, sizeof(key), "%s_judged", n), kr_measure(key, clr[k].judged);
		snprintf(key, sizeof(key), "%s_cold_gib_s", n), kr_measure(key, g / clr[k].cold);
		if (clr[k].judged < CLEARING_MIN_PAIRS) {
			kr_say("%-12s  %d of %d passes disturbed (other tasks' CPU)", n,
			       clr[k].passes - clr[k].judged, clr[k].passes);
			continue;
		}
		nkinds++;
		/* the 2 MiB hugetlb page decides when measured, else the slowest kind */
		if (k == K_HUGETLB || !(cfg.kinds & 1 << K_HUGETLB)) {
			metric = k == K_HUGETLB || isnan(metric) ? clr[k].vs_cached :
				 fmin(metric, clr[k].vs_cached);
			judged = clr[k].judged;
		}
		kr_say("%-12s %11.2f %7.2f %8.2f %8.2f %8.2f", n, g / clr[k].kernel,
		       g / clr[k].cached, g / clr[k].stream, clr[k].vs_cached, clr[k].vs_stream);
		snprintf(key, sizeof(key), "%s_kernel_gib_s", n), kr_measure(key, g / clr[k].kernel);
		snprintf(key, sizeof(key), "%s_cached_gib_s", n), kr_measure(key, g / clr[k].cached);
		snprintf(key, sizeof(key), "%s_stream_gib_s", n), kr_measure(key, g / clr[k].stream);
		snprintf(key, sizeof(key), "%s_vs_cached", n), kr_measure(key, clr[k].vs_cached);
		snprintf(key, sizeof(key), "%s_vs_stream", n), kr_measure(key, clr[k].vs_stream);
	}
	kr_say("(medians of %d-%d passes; each ratio from one pass's kernel clear", CLEARING_MIN_PAIRS,
	       CLEARING_PASSES * o->repeat);
	kr_say(" and the user stores after it on the same memory; cold pass apart)");
	kr_say("kernel/cached of 2 MiB hugetlb pages below %.2f: FAIL", threshold);
	if (clr[K_HUGETLB].done && clr[K_HUGETLB].vs_stream < 0.6)
		kr_say("non-temporal stores clear %.1fx faster than the kernel here",
		       1 / clr[K_HUGETLB].vs_stream);
	if (!nkinds && !(cfg.kinds & 1 << K_HUGETLB && clr[K_HUGETLB].done))
		return kr_skip(KR_EXIT_SKIP_MACHINE, "no huge page kind could be measured");
	kr_cause("clear_page() 4 KiB at a time with cached stores, in process_huge_page()");
	kr_cause("  order, ending at the faulting subpage; addressed by Ankur Arora's");
	kr_cause("  clear_pages() / \"folio_zero_user: clear pages sequentially\" (mm, 2026)");
	if (isnan(metric))
		return kr_inconclusive(NAN, "fewer than %d undisturbed passes", CLEARING_MIN_PAIRS);
	kr_measure("clearing", metric);
	kr_measure("clearing_pairs", judged);
	double dummy;
	enum kr_verdict v = clearing_rule(1, metric, threshold, &dummy);
	if (v == KR_SKIP)
		return kr_inconclusive(metric, "within %.2f of the limit", CLEARING_MARGIN);
	return kr_verdict(v, metric, "%s", "");
}

/* ---- the size that fits the time budget ---- */

/* Seconds per GiB of one thread of the kernel clearing fresh memory (first touch of each
 * page) plus rep stosb over it: warm (the fastest of the passes after the first, which may
 * meet memory the host took back), over 32 MiB of THP (huge) or 4 KiB pages. Under TCG
 * this is 10-50x the host's figure: the default size would outgrow the hard cap. */
static double probe_s_per_gib(bool huge)
{
	const size_t n = 32ULL << 20;
	double best = INFINITY;

	for (int i = 0; i < 3; i++) {
		char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NAN;
		madvise(p, n, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
		int64_t t0 = kr_now_ns();
		for (size_t o = 0; o < n; o += 4096)
			((volatile char *)p)[o] = 1;
		fill_pattern(p, n);
		double s = (double)(kr_now_ns() - t0) / 1e9;
		munmap(p, n);
		if (i)
			best = fmin(best, s);
	}
	return best / ((double)n / GIB);
}

/* The largest size (a multiple of unit, at most size) whose fewest passes, units_per_gib
 * seconds per GiB in all, fit budget seconds; 0 when not even unit does. */
static uint64_t fit_size(uint64_t size, uint64_t unit, double s_per_gib_total, double budget)
{
	if (!(s_per_gib_total > 0) || !isfinite(s_per_gib_total))
		return size;
	double gib = budget / s_per_gib_total;
	if (gib * GIB >= (double)size)
		return size;
	return (uint64_t)(gib * GIB / (double)unit) * unit;
}

static int run(const struct kr_opts *o)
{
	cpu_set_t usable; /* this process's affinity (cpusets) x the online CPUs */
	int ncpus = kr_usable_cpus(&usable), nthreads = cfg.threads ? cfg.threads : ncpus;
	char buf[256];
	struct job job = { .size = cfg.size, .chunk = cfg.chunk, .method = cfg.method };

	kr_env_standard((const char *const[]){ "group:memory", "group:numa",
		"config:CONFIG_PAGE_REPORTING", NULL });
	if (o->trigger && !cfg.kinds_set)
		cfg.kinds = 1 << K_HUGETLB;
	if (o->trigger && !cfg.method_set)
		job.method = cfg.method = M_FALLOCATE;
	if (!cfg.threads && nthreads > MAX_THREADS)
		nthreads = MAX_THREADS;

	/* requirements first: nothing is changed before all of them hold */
	if (ncpus < 2 && !cfg.clearing)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "only one usable CPU: no parallel clearing to "
			       "compare");
	if ((cfg.kinds & 1 << K_HUGETLB) &&
	    (access("/proc/sys/vm/nr_hugepages", W_OK) < 0 || meminfo("Hugepagesize") == 0))
		return kr_skip(KR_EXIT_SKIP, "hugetlb pages need CONFIG_HUGETLBFS (vm.nr_hugepages)");
	if ((cfg.kinds & 1 << K_HUGETLB) && meminfo("Hugepagesize") != HPAGE_SIZE / 1024)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "the default huge page size is %llu kB, not 2048 kB "
			       "(hugepagesz= on the command line)", (unsigned long long)meminfo("Hugepagesize"));
	if (cfg.kinds & 1 << K_THP) {
		if (kr_read_file("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf)) < 0)
			return kr_skip(KR_EXIT_SKIP, "THP needs CONFIG_TRANSPARENT_HUGEPAGE");
		if (strstr(buf, "[never]"))
			return kr_skip(KR_EXIT_SKIP, "THP is disabled (transparent_hugepage/enabled "
				       "is never)");
	}
	if (cfg.method == M_POPULATE) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int bad = p == MAP_FAILED || madvise(p, 4096, MADV_POPULATE_WRITE) < 0;
		if (p != MAP_FAILED)
			munmap(p, 4096);
		if (bad)
			return kr_skip(KR_EXIT_SKIP, "needs MADV_POPULATE_WRITE (Linux 5.14); try --method touch");
	}
	/* Size the work to the time budget: the fewest passes (one repeat; --measure clearing:
	 * the warm-up and CLEARING_MIN_PAIRS) estimated from a probe of this machine's
	 * clearing speed. Under TCG the default 512 MiB took 40-42 s and met the hard cap. */
	bool thp_ok = kr_read_file("/sys/kernel/mm/transparent_hugepage/enabled", buf,
				   sizeof(buf)) >= 0 && !strstr(buf, "[never]");
	double c4k = !cfg.clearing && cfg.kinds & 1 << K_4K ? probe_s_per_gib(false) : 0;
	double chuge = probe_s_per_gib(thp_ok);
	double per_gib = 0, budget = o->duration_set ? o->duration_s : cfg.clearing ?
		CLEARING_BUDGET : kr_program()->duration_s - 2;
	uint64_t unit = cfg.clearing ? HPAGE_SIZE : cfg.chunk;
	uint64_t least = cfg.clearing ? 16 * HPAGE_SIZE : 2 * cfg.chunk;
	int npts = thread_points(nthreads, points);
	for (int k = 0; k < NKINDS; k++)
		if (cfg.kinds & 1 << k && k != K_1G)
			per_gib += (k == K_4K ? c4k : chuge) * (cfg.clearing ?
				   (1 + CLEARING_MIN_PAIRS) * CLEARING_UNITS : 2 + PASSES * npts);
	kr_measure("probe_clear_gib_s", 1 / chuge);
	uint64_t fit = fit_size(cfg.size, unit, per_gib, budget);
	if (fit < cfg.size && cfg.size_set &&
	    per_gib * (double)cfg.size / GIB > 0.8 * (kr_hard_cap_s() - 5))
		return kr_skip(KR_EXIT_SKIP, "clearing runs at %.2f GiB/s here: --size %llu MiB "
			       "needs ~%.0f s, beyond the hard cap of %.0f s; try --size %llu M",
			       1 / chuge, (unsigned long long)(cfg.size >> 20),
			       per_gib * (double)cfg.size / GIB, kr_hard_cap_s(),
			       (unsigned long long)(fit >> 20));
	if (fit < cfg.size && !cfg.size_set) {
		if (fit < least)
			return kr_skip(KR_EXIT_SKIP, "clearing runs at %.2f GiB/s here (emulated "
				       "CPU?): not even %llu MiB fits the time budget of %.0f s",
				       1 / chuge, (unsigned long long)(least >> 20), budget);
		kr_say("clearing runs at %.2f GiB/s here: --size %llu MiB, not %llu, fits the",
		       1 / chuge, (unsigned long long)(fit >> 20),
		       (unsigned long long)(cfg.size >> 20));
		kr_say("  time budget of %.0f s (--duration)", budget);
		cfg.size = fit;
		job.size = fit;
	}
	/* more threads than chunks would only wait */
	uint64_t nchunks = (cfg.size + cfg.chunk - 1) / cfg.chunk;
	if ((uint64_t)nthreads > nchunks)
		nthreads = (int)nchunks;

	/* one region at a time (the hugetlb pool is given back before the next kind) */
	uint64_t need = cfg.size;
	uint64_t avail = meminfo("MemAvailable") * 1024;
	if (avail < need + (512ULL << 20))
		return kr_skip(KR_EXIT_SKIP_MACHINE, "needs %.1f GiB of available memory, has %.1f GiB; "
			       "try a smaller --size", (double)(need + (512ULL << 20)) / GIB, avail / GIB);

	/* NUMA: every node with memory owns a part of the region and its workers */
	numa_ok = numa_available() >= 0;
	job.nparts = 1;
	if (numa_ok) {
		job.nparts = 0;
		for (int n = 0; n <= numa_max_node() && job.nparts < MAX_PARTS; n++)
			if (numa_node_size64(n, NULL) > 0)
				job.part_node[job.nparts++] = n;
		if (job.nparts == 0)
			job.part_node[job.nparts++] = 0;
	}
	if (cfg.clearing)
		return run_clearing(o, &job, chuge);

	npoints = thread_points(nthreads, points);
	for (verdict_point = npoints - 1; points[verdict_point] > ncpus; verdict_point--)
		;
	kr_param("size", "%.2fGiB", cfg.size / GIB);
	kr_param("chunk", "%lluMiB", (unsigned long long)(cfg.chunk >> 20));
	kr_param("threads", "%d", nthreads);
	kr_param("method", "%s", method_names[cfg.method]);
	buf[0] = 0;
	for (int k = 0; k < NKINDS; k++)
		if (cfg.kinds & 1 << k)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", *buf ? "," : "",
				 kind_names[k]);
	kr_param("pages", "%s", buf);
	kr_param("repeat", "%d", o->repeat);
	kr_measure("cpus_online", ncpus);
	kr_measure("numa_nodes", job.nparts);
	if (kr_csv_open("pages,method,threads,repeat,pass,clear_s,memset_s,munmap_s,run_delay") < 0)
		return kr_error("cannot write --csv %s", o->csv);

	/* Each kind in turn: warm-up, then its repeats back to back, so the memory freed by one
	 * pass is reused warm by the next before free page reporting hands it to the host. */
	int64_t start = kr_now_ns();
	int kinds_left = __builtin_popcount(cfg.kinds), cut = 0;
	for (int k = 0; k < NKINDS; k++) {
		if (!(cfg.kinds & 1 << k))
			continue;
		int r;
		if (k == K_HUGETLB && (r = reserve_hugepages(cfg.size / HPAGE_SIZE)))
			return r;
		if ((r = warm_up(&job, (enum kind)k)))
			return r;
		/* this kind's share of what is left of the time budget */
		double left = budget - (double)(kr_now_ns() - start) / 1e9;
		int64_t t_kind = kr_now_ns(), last = 0;
		for (int i = 0; i < o->repeat; i++) {
			int64_t t0 = kr_now_ns();
			if (i && (double)(t0 - t_kind + last) / 1e9 > left / kinds_left)
				break;
			kr_progress("%s: repeat %d of %d", kind_names[k], i + 1, o->repeat);
			if ((r = measure_repeat(&job, (enum kind)k, i)))
				return r;
			res[k].nrep = i + 1;
			last = kr_now_ns() - t0;
		}
		cut |= res[k].nrep < o->repeat;
		kinds_left--;
		/* give the pool back now (the journal restores it again at the end): its
		 * warm memory then serves the next kind */
		if (k == K_HUGETLB)
			kr_write_file("/proc/sys/vm/nr_hugepages", orig_nr_hugepages);
	}

	/* the report */
	double threshold = o->threshold, metric = INFINITY;
	const char *unjudged = NULL;
	enum kr_verdict votes[NKINDS * MAX_REPEAT];
	int nvotes = 0, npass, nfail, vt = points[verdict_point];
	for (int k = 0; k < NKINDS; k++) {
		if (cfg.kinds & 1 << k) {
			double e = report_kind((enum kind)k, res[k].nrep, threshold, votes, &nvotes);
			if (isnan(e))
				unjudged = kind_names[k];
			else if (e < metric)
				metric = e;
		}
	}
	if (cut)
		kr_say("fewer than %d repeats fit in the time budget of %.0f s (--duration)",
		       o->repeat, budget);
	if (job.nparts == 1)
		kr_say("one NUMA node with memory: NUMA placement not exercised");
	else
		kr_say("%d NUMA nodes: each worker bound to the node of its chunks", job.nparts);
	if (nthreads > ncpus)
		kr_say("%d threads > %d CPUs: points above %d oversubscribe, not judged", nthreads,
		       ncpus, vt);
	kr_say("efficiency = speedup / ideal speedup at %d threads; the metric is", vt);
	kr_say("the lowest over the page kinds");
	kr_measure("efficiency", metric);
	kr_measure("verdict_threads", vt);
	kr_cause("hugetlbfs fallocate() serialises on inode_lock (one file)");
	kr_cause("a lock shared by the faulting threads (e.g. zone->lock)");
	kr_cause("a memory bandwidth wall: compare the memset column");
	enum kr_verdict v = kr_vote(votes, nvotes, &npass, &nfail);
	if (unjudged)
		return kr_inconclusive(isfinite(metric) ? metric : NAN, "every %s repeat "
				       "disturbed", unjudged);
	if (v == KR_SKIP)
		return kr_inconclusive(metric, "%d page kinds pass, %d fail", npass, nfail);
	return kr_verdict(v, metric, "N=%d method=%s", vt, method_names[cfg.method]);
}

/* ---- options ---- */

static const char clearing_rule_text[] =
	"FAIL when one thread of the kernel clears fresh 2 MiB hugetlb pages at less than\n"
	"  threshold (default 0.58) x the cached-store ceiling (rep stosb over the same\n"
	"  memory right after; median of the pass pairs; without --pages hugetlb: the\n"
	"  slowest kind); within 0.04 of it: SKIP";

static struct kr_prog prog; /* below; --measure clearing switches its metric and rule */

static const struct kr_option options[] = {
	{ "size", "SIZE", "memory cleared per pass (default 512M; 2 MiB multiple)" },
	{ "threads", "N", "most worker threads (default: online CPUs); 1, 2, 4 .. N" },
	{ "chunk", "SIZE", "work unit from the shared counter (default 16M; 2 MiB multiple)" },
	{ "pages", "LIST", "hugetlb,thp,4k (clearing: hugetlb,thp,1g) or all (default)" },
	{ "method", "M", "populate (MADV_POPULATE_WRITE), touch, fallocate (hugetlb)" },
	{ "cold", NULL, "also show the first, cold pass of each kind" },
	{ "measure", "WHAT", "scaling (default) or clearing: 1-thread kernel clearing speed" },
	{ NULL, NULL, NULL },
};

static int parse(int index, const char *arg)
{
	long l;
	int i;

	switch (index) {
	case 0:
		if (kr_parse_size("--size", arg, HPAGE_SIZE, 1ULL << 40, &cfg.size) < 0)
			return -1;
		if (cfg.size % HPAGE_SIZE)
			return kr_usage_error("--size: must be a multiple of 2 MiB, got '%s'", arg);
		cfg.size_set = true;
		return 0;
	case 1:
		if (kr_parse_long("--threads", arg, 2, MAX_THREADS, &l) < 0)
			return -1;
		cfg.threads = (int)l;
		return 0;
	case 2:
		if (kr_parse_size("--chunk", arg, HPAGE_SIZE, 1ULL << 40, &cfg.chunk) < 0)
			return -1;
		if (cfg.chunk % HPAGE_SIZE)
			return kr_usage_error("--chunk: must be a multiple of 2 MiB, got '%s'", arg);
		return 0;
	case 3:
		if ((i = parse_kinds(arg)) < 0)
			return kr_usage_error("--pages: expected a list of hugetlb, thp, 4k or 'all', "
					      "got '%s'", arg);
		cfg.kinds = (unsigned)i;
		cfg.kinds_set = true;
		return 0;
	case 4:
		if ((i = kr_parse_choice("--method", arg, "populate|touch|fallocate")) < 0)
			return -1;
		cfg.method = (enum method)i;
		cfg.method_set = true;
		return 0;
	case 5:
		cfg.cold = true;
		return 0;
	case 6:
		if ((i = kr_parse_choice("--measure", arg, "scaling|clearing")) < 0)
			return -1;
		cfg.clearing = i == 1;
		if (cfg.clearing) { /* the second verdict: its own metric and rule */
			prog.metric = "clearing";
			prog.threshold = CLEARING_THRESHOLD;
			prog.rule = clearing_rule_text;
			if (!cfg.kinds_set)
				cfg.kinds = CLEARING_KINDS;
		}
		return 0;
	}
	return -1;
}

static int validate(const struct kr_opts *o)
{
	enum method m = o->trigger && !cfg.method_set ? M_FALLOCATE : cfg.method;
	unsigned kinds = o->trigger && !cfg.kinds_set ? 1 << K_HUGETLB : cfg.kinds;

	if (cfg.kinds == ALL_KINDS)
		cfg.kinds = cfg.clearing ? CLEARING_KINDS : SCALING_KINDS;
	if (cfg.clearing && (o->trigger || cfg.method != M_POPULATE || (cfg.kinds & 1 << K_4K)))
		return kr_usage_error("--measure clearing: populates hugetlb, thp and 1g pages with "
				      "one thread (no --trigger, --method or 4k)");
	if (!cfg.clearing && (cfg.kinds & 1 << K_1G))
		return kr_usage_error("--pages 1g: with --measure clearing only");
	if (m == M_FALLOCATE && kinds != 1 << K_HUGETLB)
		return kr_usage_error("--method fallocate works on hugetlb pages only (--pages hugetlb)");
	if (o->trigger && cfg.method_set && cfg.method != M_FALLOCATE)
		return kr_usage_error("--trigger clears by fallocate; it cannot take --method %s",
				      method_names[cfg.method]);
	if (cfg.chunk > cfg.size)
		return kr_usage_error("--chunk (%llu MiB) is larger than --size",
				      (unsigned long long)(cfg.chunk >> 20));
	return 0;
}

/* not const: --measure clearing switches the metric and rule */
static struct kr_prog prog = {
	.name = "ktask_bench",
	.summary = "parallel clearing of large memory vs one thread",
	.description =
		"Clears --size bytes of fresh hugetlb, THP and 4 KiB pages (the kernel zero-fills\n"
		"them at fault time) with 1, 2, 4 .. N threads that take chunks from a shared\n"
		"counter, each bound with libnuma to the node owning its chunk, like the ktask RFC.\n"
		"Also measures rep stosb over the same faulted memory (the ceiling) and munmap.\n"
		"Each kind is warmed up once first: this VM hands freed memory back to the host\n"
		"(free page reporting) and re-faulting it is 10x slower (--cold shows that pass).\n"
		"Efficiency: speedup(N) = t1 / tN at the largest N with a CPU each, against the\n"
		"speedup the machine can give (N, or less at its memory bandwidth wall: memset\n"
		"at N threads over the kernel at 1); each kind votes with its fastest passes.\n"
		"--trigger clears hugetlb pages by fallocate() of chunks of ONE hugetlbfs file\n"
		"from every thread: inode_lock serialises them, so the verdict must be FAIL.\n"
		"--measure clearing: one thread of kernel clearing of fresh 2 MiB hugetlb, THP and\n"
		"1 GiB hugetlb pages against rep stosb and movnti over the same memory; FAIL\n"
		"below 0.58 of rep stosb (its own rule, below). It also infers the order the\n"
		"kernel clears a 2 MiB page in from which subpages are cache-hot afterwards.",
	.example = "ktask_bench --size 2G --pages hugetlb,thp --threads 2 --csv scaling.csv",
	.flags = KR_NEEDS_ROOT | KR_OPT_REPEAT | KR_OPT_TRIGGER,
	.metric = "efficiency",
	.unit = "",
	.threshold = 0.65, /* serialised: 0.43-0.58 (1/N = 0.5); healthy: 0.72-0.99 */
	.threshold_min = 0.01,
	.threshold_max = 1.0,
	.rule = "FAIL when speedup(N) / ideal(N) < threshold for every page kind, from the\n"
		"  fastest judged passes (N: most threads with a CPU each; ideal(N) = min(N,\n"
		"  memset GiB/s at N threads / kernel GiB/s at 1)); kinds that disagree: SKIP.\n"
		"  --measure clearing: see above",
	.duration_s = 10,
	.duration_max_s = 30,
	.repeat = 3,
	.options = options,
	.parse = parse,
	.validate = validate,
	.run = run,
};

int main(int argc, char **argv)
{
	return kr_main(&prog, argc, argv);
}
