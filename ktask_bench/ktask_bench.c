// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: parallel, NUMA-aware clearing of large memory against one thread (ktask).
 *
 * The kernel zeroes memory at fault time, one page or one 2 MiB folio per fault
 * (folio_zero_user), in the faulting thread: 100 GiB of huge pages took 41 s on one
 * thread in the ktask RFC, which handed chunks to per-node kernel threads (2.0x at 2,
 * 10x at 16). Upstream never merged it (padata_do_multithreaded serves boot-time work),
 * so a process clears in parallel itself: threads fault in disjoint chunks by
 * MADV_POPULATE_WRITE or by touching them. That scales unless the kernel serialises
 * them: hugetlbfs fallocate() holds inode_lock for the whole call (--trigger).
 *
 * Workload: --size of hugetlb, THP or 4 KiB pages cleared by 1, 2, 4 .. N threads that
 * take chunks from a per-node counter, each bound (libnuma) to the node of its chunk.
 * Measured: the clear, rep stosb over the same faulted memory (the ceiling), munmap.
 * Verdict: the efficiency at the largest N with a CPU each, speedup(N) / min(N, memset
 * GiB/s at N / kernel GiB/s at 1), so a host at its bandwidth wall fails no kernel.
 *
 * --measure clearing, the second verdict: one thread of the kernel clearing fresh huge
 * pages against rep stosb and movnti over the same memory. Up to 2026 the kernel cleared
 * a huge page 4 KiB at a time with cached stores, ending at the faulting subpage
 * (process_huge_page); Ankur Arora's clear_pages() / "folio_zero_user: clear pages
 * sequentially" series doubled that on AMD Genoa (11.8 -> 23.6 GB/s).
 *
 * KVM guests: free page reporting gives freed memory back to the host ~2 s later and
 * re-faulting it costs an EPT fault and a host clear (0.4-1 GiB/s). So each kind is
 * warmed up once (the "cold" figure) and the timed passes follow back to back.
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
	bool method_set, kinds_set, cold, clearing, size_set; /* clearing: --measure clearing */
} cfg = { .size = 512ULL << 20, .chunk = 16ULL << 20, .kinds = SCALING_KINDS,
	  .method = M_POPULATE };

/* ---- the pure parts (unit tested) ---- */

/* Workers that waited longer than this share of a pass for a CPU were disturbed by other
 * tasks: their repeat says nothing about the kernel and does not vote. */
#define MAX_DELAY 0.10
#define PASSES 2 /* passes per point and repeat; the repeat keeps the fastest */

/* The speedup the machine can give n threads of kernel clearing that take t1 s on one:
 * n, unless n threads of memset (mn s) hit the bandwidth wall first; never below 1. */
static double ideal_speedup(double t1, double mn, int n)
{
	if (!(mn > 0) || !isfinite(mn))
		return n;
	return fmax(1, fmin(n, t1 / mn));
}

/* efficiency = (t1 / tn) / ideal_speedup; FAIL below the threshold; SKIP when a pass was
 * disturbed (delay: the larger run-delay share of the two). */
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
		int k = 0;
		while (k < NKINDS && strcmp(w, kind_names[k]))
			k++;
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

/* The ceilings, of a non-zero byte so that the next clear zeroes real data: the string
 * store of the kernel's clear_page_erms (cached), or movnti, non-temporal stores that skip
 * the read-for-ownership (what the unmerged 2020-21 clearing series used). */
static void fill(void *p, size_t n, bool stream)
{
#if defined(__x86_64__)
	if (!stream) {
		__asm__ volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(0x5a) : "memory");
		return;
	}
	for (long long *q = p, *end = (long long *)((char *)p + n); q < end; q += 4)
		for (int i = 0; i < 4; i++)
			_mm_stream_si64(q + i, 0x5a5a5a5a5a5a5a5aLL);
	_mm_sfence();
#else
	(void)stream;
	memset(p, 0x5a, n);
#endif
}

static int do_chunk(struct job *j, uint64_t off, uint64_t len)
{
	char *p = j->base + off;

	if (j->op != OP_CLEAR) {
		fill(p, len, j->op == OP_STREAM);
		return 0;
	}
	switch (j->method) {
	case M_POPULATE:
		return madvise(p, len, MADV_POPULATE_WRITE);
	case M_TOUCH: /* the last byte: folio_zero_user then clears the 2 MiB bottom-up */
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
	struct kr_schedstat s0 = { 0 }, s1 = { 0 };

	if (numa_ok) { /* ktask: a worker runs on the node that owns its chunks */
		numa_run_on_node(j->part_node[w->part]);
		numa_set_localalloc();
	}
	pthread_barrier_wait(&j->go);
	kr_read_schedstat(getpid(), kr_gettid(), &s0);
	w->t_start = kr_now_ns();
	for (int k = 0; k < j->nparts; k++) { /* own node's chunks first, then help others */
		int p = (w->part + k) % j->nparts;
		for (uint64_t c; (c = atomic_fetch_add(&j->next[p], 1)) < j->part_end[p];) {
			uint64_t off = c * j->chunk;
			int zero = 0;
			if (do_chunk(j, off, j->size - off < j->chunk ? j->size - off : j->chunk) < 0)
				atomic_compare_exchange_strong(&j->err, &zero, errno ? errno : EIO);
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
	/* first worker's start to last one's end: main may get a CPU only after them */
	int64_t t0 = w[0].t_start, t1 = w[0].t_end;
	double waited = 0;
	for (int i = 0; i < n; i++) {
		t0 = w[i].t_start < t0 ? w[i].t_start : t0;
		t1 = w[i].t_end > t1 ? w[i].t_end : t1;
		waited += (double)w[i].wait_ns / 1e9;
	}
	double s = (double)(t1 - t0) / 1e9;
	j->delay = waited / (s * n); /* the workers' share of the pass waiting for a CPU */
	if ((errno = atomic_load(&j->err)))
		return -1;
	return s;
}

/* ---- the region ---- */

static int map_region(struct job *j, enum kind k)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | (k == K_HUGETLB ? MAP_HUGETLB : 0) |
		    (k == K_1G ? MAP_HUGETLB | MAP_HUGE_1GB : 0);
	uint64_t extra = k == K_THP ? HPAGE_SIZE : 0, size = j->size;

	j->fd = -1;
	j->base = NULL;
	j->stride = k == K_4K ? 4096 : HPAGE_SIZE;
	if (j->method == M_FALLOCATE) { /* one hugetlbfs file: the memory comes from fallocate */
		j->fd = memfd_create("krepro-ktask_bench", MFD_HUGETLB | MFD_CLOEXEC);
		return j->fd < 0 ? -1 : 0;
	}
	char *p = mmap(NULL, size + extra, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	if (extra) { /* THP needs 2 MiB alignment: trim the mapping to it */
		char *a = (char *)(((uintptr_t)p + HPAGE_SIZE - 1) & ~(uintptr_t)(HPAGE_SIZE - 1));
		if (a > p)
			munmap(p, (size_t)(a - p));
		if (a + size < p + size + extra)
			munmap(a + size, (size_t)(p + size + extra - (a + size)));
		p = a;
	}
	if (k == K_THP && madvise(p, size, MADV_HUGEPAGE) < 0)
		return -1;
	if (k == K_4K && madvise(p, size, MADV_NOHUGEPAGE) < 0)
		return -1;
	j->base = p;
	uint64_t nchunks = (size + j->chunk - 1) / j->chunk;
	for (int i = 0; numa_ok && i < j->nparts; i++) { /* each node's part lives there */
		uint64_t b = nchunks * (uint64_t)i / (uint64_t)j->nparts * j->chunk;
		uint64_t e = nchunks * (uint64_t)(i + 1) / (uint64_t)j->nparts * j->chunk;
		if (e > size)
			e = size;
		if (e > b)
			numa_tonode_memory(p + b, (size_t)(e - b), j->part_node[i]);
	}
	return 0;
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

/* a "Key: value" of a /proc file; dflt when absent */
static double kv(const char *path, const char *key, double dflt)
{
	static char text[8192];
	uint64_t v = 0;

	if (kr_read_file(path, text, sizeof(text)) < 0 || kr_kv_get(text, key, &v) < 0)
		return dflt;
	return (double)v;
}
#define meminfo(key) ((uint64_t)kv("/proc/meminfo", key, 0))
/* fraction of the region backed by huge pages: the check that THP really happened */
#define thp_fraction(j) (kv("/proc/self/smaps_rollup", "AnonHugePages", NAN) * 1024 / \
			 (double)(j)->size)

/* One cycle on fresh memory of kind k: map, the kernel clears it with n threads, rep
 * stosb (and with stream movnti) over it with m threads, munmap. t: clear, memset,
 * movnti, munmap seconds; delay: the largest run-delay share; huge: the share of huge
 * pages after the clear. 0 or an exit code. */
static int cycle(struct job *j, enum kind k, int n, int m, bool stream, double t[4],
		 double *delay, double *huge)
{
	uint64_t free_before = meminfo("HugePages_Free");

	if (map_region(j, k) < 0)
		return kr_error("cannot map %.2f GiB of %s pages: %s", j->size / GIB,
				kind_names[k], strerror(errno));
	if ((t[0] = run_pass(j, OP_CLEAR, n)) < 0)
		return kr_error("clearing %s pages (%s): %s", kind_names[k],
				method_names[j->method], strerror(errno));
	*delay = j->delay;
	*huge = k == K_THP ? thp_fraction(j) : k == K_HUGETLB ?
		(double)(free_before - meminfo("HugePages_Free")) * HPAGE_SIZE / (double)j->size : 1;
	if (j->method == M_FALLOCATE) { /* map the file, its pages cleared, for memset */
		char *p = mmap(NULL, j->size, PROT_READ | PROT_WRITE, MAP_SHARED, j->fd, 0);
		if (p == MAP_FAILED || madvise(j->base = p, j->size, MADV_POPULATE_WRITE) < 0)
			return kr_error("mapping the hugetlb file: %s", strerror(errno));
	}
	for (int i = 1; i < (stream ? 3 : 2); i++) {
		if ((t[i] = run_pass(j, i == 1 ? OP_MEMSET : OP_STREAM, m)) < 0)
			return kr_error("memset: %s", strerror(errno));
		*delay = stream ? fmax(*delay, j->delay) : *delay;
	}
	t[3] = unmap_region(j);
	return 0;
}

/* a measurement whose key is formatted */
static void measuref(double v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void measuref(double v, const char *fmt, ...)
{
	char key[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(key, sizeof(key), fmt, ap);
	va_end(ap);
	kr_measure(key, v);
}

/* ---- the scaling measurement ---- */

static struct result {
	double t[3][MAX_POINTS][MAX_REPEAT]; /* best clear, memset, munmap s */
	double delay[MAX_POINTS][MAX_REPEAT]; /* run delay share of the best clear */
	double other[MAX_REPEAT]; /* 1 thread, huge pages faulted at the other end */
	double cold, huge_min;	  /* first pass; lowest share of huge pages seen */
	int nrep;
} res[NKINDS];

static int npoints, points[MAX_POINTS], verdict_point;

/* One repeat of kind k: the best of PASSES cycles per thread count (A B A B: other tasks
 * and the host only ever slow a pass down). 0 or an exit code. */
static int measure_repeat(struct job *j, enum kind k, int r)
{
	struct result *rs = &res[k];
	double t[4], delay, huge;
	int e;

	for (int i = 0; i < npoints; i++)
		rs->t[0][i][r] = rs->t[1][i][r] = rs->t[2][i][r] = INFINITY;
	for (int pass = 0; pass < PASSES; pass++) {
		for (int i = 0; i < npoints; i++) {
			if ((e = cycle(j, k, points[i], points[i], false, t, &delay, &huge)))
				return e;
			rs->huge_min = fmin(rs->huge_min, huge);
			kr_csv_row("%s,%s,%d,%d,%d,%.6f,%.6f,%.6f,%.3f", kind_names[k],
				   method_names[j->method], points[i], r, pass, t[0], t[1], t[3], delay);
			if (t[0] < rs->t[0][i][r])
				rs->t[0][i][r] = t[0], rs->delay[i][r] = delay;
			rs->t[1][i][r] = fmin(rs->t[1][i][r], t[1]);
			rs->t[2][i][r] = fmin(rs->t[2][i][r], t[3]);
		}
	}
	/* Huge pages, one thread, faulted at the other end: folio_zero_user clears the 4 KiB
	 * subpages towards the faulting address, so a fault at the base (populate) clears
	 * top-down and one at the last byte (touch) bottom-up; the CPU's stores care. */
	if (k != K_4K && j->method != M_FALLOCATE) {
		enum method m = j->method;
		j->method = m == M_POPULATE ? M_TOUCH : M_POPULATE;
		e = cycle(j, k, 1, points[verdict_point], false, t, &delay, &huge);
		j->method = m;
		if (e)
			return e;
		rs->other[r] = t[0];
	}
	return 0;
}

/* the ktask table of one kind and its vote; returns its efficiency */
static double report_kind(enum kind k, int nrep, double threshold, enum kr_verdict *vote)
{
	static const char *const keys[] = { "min_s", "median_s", "stdev_s", "gib_s",
		"memset_gib_s", "ceiling_fraction", "munmap_ms", "speedup" };
	struct result *rs = &res[k];
	double gib = (double)cfg.size / GIB, t1min = 0;
	const char *kn = kind_names[k];
	bool top = cfg.method == M_POPULATE;

	kr_say("%s: %s, %.2f GiB in %llu MiB chunks, %d repeat%s", kn, top ?
	       "MADV_POPULATE_WRITE" : cfg.method == M_TOUCH ? "first touch" : "fallocate, 1 file",
	       gib, (unsigned long long)(cfg.chunk >> 20), nrep, nrep > 1 ? "s" : "");
	kr_say("thr speedup   min s  med s  stdev  GiB/s  memset  clear/  munmap");
	kr_say("                                           GiB/s  memset      ms");
	for (int i = 0; i < npoints; i++) {
		double tmp[MAX_REPEAT];
		struct kr_stats s[3];
		for (int q = 0; q < 3; q++) {
			memcpy(tmp, rs->t[q][i], (size_t)nrep * sizeof(double));
			kr_stats(tmp, (size_t)nrep, &s[q]);
		}
		t1min = i ? t1min : s[0].min;
		double v[] = { s[0].min, s[0].median, nrep > 1 ? s[0].stdev : 0, gib / s[0].min,
			       gib / s[1].min, s[1].min / s[0].min, 1e3 * s[2].median,
			       t1min / s[0].min };
		char sp[16] = "      -";
		if (i)
			snprintf(sp, sizeof(sp), "%6.2fx", v[7]);
		kr_say("%3d %s %7.3f %6.3f %6.3f %6.2f %7.2f %7.2f %7.2f", points[i], sp, v[0], v[1],
		       v[2], v[3], v[4], v[5], v[6]);
		for (int q = 0; q < 8; q++)
			measuref(v[q], "%s_t%d_%s", kn, points[i], keys[q]);
	}
	/* The efficiency is from the fastest judged pass at 1 and at N threads, like the
	 * speedup: host noise only adds time (a 30 ms pass can double), a lock that
	 * serialises the threads shows in every pass, the fastest too. Run delay flags other
	 * tasks on the workers' CPUs; with fallocate on one file the inode_lock handoffs wake
	 * the workers all the time: there it is the phenomenon, not a disturbance. */
	int judged = 0, n = points[verdict_point], vp = verdict_point;
	double t1 = INFINITY, tn = INFINITY, mn = INFINITY, e = NAN;
	for (int r = 0; r < nrep; r++) {
		double d = cfg.method == M_FALLOCATE ? 0 : fmax(rs->delay[0][r], rs->delay[vp][r]);
		if (ktask_rule(rs->t[0][0][r], rs->t[0][vp][r], rs->t[1][vp][r], n, d,
			       threshold, &e) == KR_SKIP)
			continue;
		judged++;
		t1 = fmin(t1, rs->t[0][0][r]);
		tn = fmin(tn, rs->t[0][vp][r]);
		mn = fmin(mn, rs->t[1][vp][r]);
	}
	e = NAN;
	*vote = judged ? ktask_rule(t1, tn, mn, n, 0, threshold, &e) : KR_SKIP;
	if (nrep > judged)
		kr_say("%d repeat%s not judged: workers waited >%.0f%% of a pass for a CPU",
		       nrep - judged, nrep - judged > 1 ? "s" : "", 100 * MAX_DELAY);
	if (cfg.cold)
		kr_say("first (warm-up) pass, %d thr: %.2f GiB/s (slow if the host took it back)",
		       n, gib / rs->cold);
	if (judged) {
		kr_say("ideal speedup at %d thr: %.2fx = min(%d, memset %d thr %.1f GiB/s", n,
		       ideal_speedup(t1, mn, n), n, n, gib / mn);
		kr_say("  / kernel 1 thr %.1f GiB/s); speedup %.2fx", gib / t1, t1 / tn);
	}
	kr_say("%s efficiency at %d threads: %.2f (fastest of %d judged repeat%s)", kn, n, e,
	       judged, judged == 1 ? "" : "s");
	measuref(nrep - judged, "%s_disturbed", kn);
	measuref(gib / rs->cold, "%s_cold_gib_s", kn);
	measuref(e, "%s_efficiency", kn);
	measuref(judged ? ideal_speedup(t1, mn, n) : NAN, "%s_ideal_speedup", kn);
	measuref(nrep, "%s_repeats", kn);
	if (k != K_4K && cfg.method != M_FALLOCATE) {
		double o = INFINITY, m1 = INFINITY;
		for (int r = 0; r < nrep; r++)
			o = fmin(o, rs->other[r]), m1 = fmin(m1, rs->t[1][0][r]);
		kr_say("1 thr, fault at the %s of each 2 MiB (cleared %s): %.2f GiB/s",
		       top ? "top" : "base", top ? "upwards" : "downwards", gib / o);
		kr_say("  = %.2f of memset; the table's passes clear each 2 MiB %s", m1 / o,
		       top ? "downwards" : "upwards");
		measuref(gib / o, "%s_t1_%s_gib_s", kn, top ? "bottom_up" : "top_down");
	}
	if (k != K_4K) {
		measuref(rs->huge_min, "%s_huge_fraction_min", kn);
		if (rs->huge_min < 0.9)
			kr_say("warning: only %.0f%% of the region was huge pages in some pass",
			       100 * rs->huge_min);
	}
	kr_say("%s", "");
	return e;
}

/* ---- the hugetlb pools (journaled: restored after the run, SIGINT, a crash) ---- */

#define POOL_2M "/sys/kernel/mm/hugepages/hugepages-2048kB"
#define POOL_1G "/sys/kernel/mm/hugepages/hugepages-1048576kB"

static uint64_t pool_read(const char *pool, const char *file)
{
	char path[128];
	uint64_t v = 0;

	snprintf(path, sizeof(path), "%s/%s", pool, file);
	return kr_read_u64(path, &v) < 0 ? 0 : v;
}

/* Makes need pages of the pool free and unreserved; orig gets the pool size before.
 * 0, or 1 when it could get fewer (*got), or -1 with errno. */
static int reserve_pool(const char *pool, uint64_t need, char orig[32], uint64_t *got)
{
	char path[128], val[32];
	uint64_t nr = pool_read(pool, "nr_hugepages");

	snprintf(orig, 32, "%llu", (unsigned long long)nr);
	for (int i = 0;; i++) {
		*got = pool_read(pool, "free_hugepages") - pool_read(pool, "resv_hugepages");
		if (*got >= need || i)
			return *got >= need ? 0 : 1;
		snprintf(path, sizeof(path), "%s/nr_hugepages", pool);
		snprintf(val, sizeof(val), "%llu", (unsigned long long)(nr + need - *got));
		if (kr_journal_write(path, val) < 0)
			return -1;
	}
}

static char orig_2m[32], orig_1g[32];

static int reserve_hugepages(uint64_t need)
{
	uint64_t got;
	int r = reserve_pool(POOL_2M, need, orig_2m, &got);

	if (r < 0)
		return kr_error("cannot set %s/nr_hugepages: %s", POOL_2M, strerror(errno));
	if (r > 0)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "could reserve only %llu of %llu 2 MiB huge "
			       "pages (memory fragmented)", (unsigned long long)got,
			       (unsigned long long)need);
	return 0;
}

/* ---- --measure clearing: one thread of the kernel against two ceilings ---- */

/* FAIL: 2 MiB hugetlb pages cleared at less than this share of rep stosb. The sequential
 * clear_pages() series took AMD Genoa from ~0.5 to ~1.0 of its ceiling (11.8 -> 23.6 GB/s).
 * 6.18 without it: 0.42-0.51 on an AMD-hosted VM (top-down order; bottom-up 0.85-1.05),
 * 0.66-0.93 on an Intel-hosted one, where the order costs nothing (20 of 20, 2026-11-23).
 * THP adds the page allocator, 1 GiB pages clear in order: shown; 2 MiB hugetlb decides. */
#define CLEARING_THRESHOLD 0.58
#define CLEARING_MARGIN 0.04 /* closer than this to the threshold: inconclusive */
#define CLEARING_PASSES 4    /* per --repeat: a 512 MiB pass takes ~60 ms */
#define CLEARING_BUDGET 20.0 /* s without --duration; the 1 GiB warm-up alone ~4 s */
#define CLEARING_UNITS 2 /* a pass (clear, rep stosb, movnti) in probe units (clear, stosb) */
/* Each kernel pass is paired with the user passes right after it on the same memory and
 * the verdict is the median pair ratio: the host's memory goes through phases of seconds
 * (4 KiB clears 8.3 -> 5.7 GiB/s, rep stosb 8.7 -> 7.5-8.5) and fastest over fastest took
 * the two from different phases (0.60-0.95 between runs). Pairs whose thread waited
 * > MAX_DELAY do not vote; fewer than CLEARING_MIN_PAIRS voting: inconclusive. */
#define CLEARING_MIN_PAIRS 3
#define CLEARING_MAX (MAX_REPEAT * CLEARING_PASSES)

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
 * subpages in L1/L2, so right after the fault a load from them is faster. Loads one line
 * of each subpage in random order (no prefetcher helps) over ORDER_PAGES fresh pages
 * faulted at subpage target; returns the centre of the bucket with the lowest mean
 * latency, or -1 (not x86, or no free hugetlb page). Here (6.18): fault at 0 -> 64 cycles
 * at subpages 0-31 rising to 85 at 480-511; fault at 511 -> the reverse. */
static int hot_subpage(int target, unsigned *seed)
{
#if defined(__x86_64__)
	static double lat[SUBPAGES];
	int order[SUBPAGES], best = 0;
	unsigned aux;
	double best_sum = INFINITY;

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
	for (int b = 0; b < SUBPAGES; b += BUCKET) {
		double sum = 0;
		for (int i = b; i < b + BUCKET; i++)
			sum += lat[i];
		best = sum < best_sum ? (best_sum = sum, b) : best;
	}
	return best + BUCKET / 2;
#else
	(void)target, (void)seed;
	return -1;
#endif
}

/* The clearing order, from pages faulted at the base and at the top. A 6.1 kernel
 * clearing in order (krepro patch, TCG) gave 432-496 for both faults; process_huge_page
 * 80-176 and 336-496. */
static void report_order(const struct kr_opts *o)
{
	unsigned seed = o->seed_set ? (unsigned)o->seed : (unsigned)kr_now_ns();
	int lo = hot_subpage(0, &seed), hi = lo < 0 ? -1 : hot_subpage(SUBPAGES - 1, &seed);

	if (lo < 0 || hi < 0) {
		kr_say("clearing order: not observed (needs x86, a free 2 MiB page)");
		return;
	}
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

static struct {
	double m[5], cold; /* medians: kernel, cached, movnti s; kernel/cached, /movnti */
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

/* One thread: kernel clearing of fresh pages of kind k, then rep stosb and movnti over
 * the same memory; up to max passes, fewer when they outgrow share seconds (the warm-up
 * included), never fewer than the minimum. */
static int measure_clearing(struct job *j, enum kind k, int max, double share)
{
	static double v[5][CLEARING_MAX]; /* kernel, cached, movnti s; the two ratios */
	double t[4], delay, huge;
	int64_t start = kr_now_ns(), last = 0;
	int judged = 0, e;

	clr[k].size = j->size;
	for (int r = -1; r < max && r < CLEARING_MAX; r++) { /* r = -1: warm-up, the cold figure */
		int64_t t0 = kr_now_ns();
		if (r >= CLEARING_MIN_PAIRS && (double)(t0 - start + last) / 1e9 > share)
			break;
		if ((e = cycle(j, k, 1, 1, true, t, &delay, &huge)))
			return e;
		if (k == K_THP && huge < 0.9) {
			snprintf(clr[k].why, sizeof(clr[k].why), "only %.0f%% THP (fragmented)",
				 100 * huge);
			return 0;
		}
		kr_csv_row("%s,clearing,1,%d,0,%.6f,%.6f,%.6f,%.3f", kind_names[k], r, t[0], t[1],
			   t[2], delay);
		last = kr_now_ns() - t0;
		if (r < 0) {
			clr[k].cold = t[0];
			continue;
		}
		clr[k].passes++;
		if (!(delay <= MAX_DELAY))
			continue; /* other tasks took the CPU: says nothing about the kernel */
		for (int i = 0; i < 3; i++)
			v[i][judged] = t[i];
		v[3][judged] = t[1] / t[0];
		v[4][judged++] = t[2] / t[0];
	}
	for (int i = 0; i < 5; i++)
		clr[k].m[i] = median_of(v[i], judged);
	clr[k].judged = judged;
	clr[k].done = true;
	return 0;
}

/* Why the 1 GiB page cannot be measured (NULL: its pool is reserved), or an exit code. */
static const char *reserve_1g(struct job *j, double left, double s_per_gib, int *rc)
{
	/* the fewest passes of a 1 GiB page, estimated from the probe */
	double need = (1 + CLEARING_MIN_PAIRS) * CLEARING_UNITS * j->size / GIB * s_per_gib;
	static char why[96];
	uint64_t got;

	*rc = 0;
	if (access(POOL_1G, F_OK) < 0)
		return "no 1 GiB pages on this CPU/kernel";
	snprintf(why, sizeof(why), "~%.0f s at %.2f GiB/s: over the time budget", need,
		 1 / s_per_gib);
	if (need > left)
		return why;
	if (meminfo("MemAvailable") * 1024 < j->size + (1ULL << 30))
		return "too little free memory";
	if ((*rc = reserve_pool(POOL_1G, j->size / GPAGE_SIZE, orig_1g, &got)) < 0) {
		*rc = kr_error("cannot set %s/nr_hugepages: %s", POOL_1G, strerror(errno));
		return "";
	}
	if (*rc > 0) {
		*rc = 0;
		kr_write_file(POOL_1G "/nr_hugepages", orig_1g);
		return "could not reserve a 1 GiB page (memory fragmented)";
	}
	return NULL;
}

static int run_clearing(const struct kr_opts *o, struct job *job, double s_per_gib)
{
	double threshold = o->threshold_set ? o->threshold : CLEARING_THRESHOLD;
	double budget = o->duration_set ? o->duration_s : CLEARING_BUDGET, metric = NAN;
	int nkinds = 0, r = 0, kinds_left = __builtin_popcount(cfg.kinds), judged = 0;
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
		const char *why = k == K_1G ? reserve_1g(job, left, s_per_gib, &r) : NULL;
		if (r)
			return r;
		if (why) {
			snprintf(clr[k].why, sizeof(clr[k].why), "%s", why);
			continue;
		}
		kr_progress("%s: clearing", kind_names[k]);
		if ((r = measure_clearing(job, (enum kind)k, CLEARING_PASSES * o->repeat,
					  left / kinds_left--)))
			return r;
		if (k == K_HUGETLB)
			report_order(o);
		/* give the pool back now (the journal restores it again at the end) */
		if (k == K_HUGETLB || k == K_1G)
			kr_write_file(k == K_1G ? POOL_1G "/nr_hugepages" : POOL_2M "/nr_hugepages",
				      k == K_1G ? orig_1g : orig_2m);
	}

	kr_say("%s", "");
	kr_say("1 thread, GiB/s   kernel  cached     non-   kernel/  kernel/");
	kr_say("                  clears  stores  tempor.   cached  non-tmp");
	for (int k = 0; k < NKINDS; k++) {
		const char *n = kind_names[k];
		double g = (double)clr[k].size / GIB;
		if (!(cfg.kinds & 1 << k))
			continue;
		if (!clr[k].done) {
			kr_say("%-12s  not measured: %s", n, clr[k].why);
			continue;
		}
		measuref(clr[k].passes, "%s_passes", n);
		measuref(clr[k].judged, "%s_judged", n);
		measuref(g / clr[k].cold, "%s_cold_gib_s", n);
		if (clr[k].judged < CLEARING_MIN_PAIRS) {
			kr_say("%-12s  %d of %d passes disturbed (other tasks' CPU)", n,
			       clr[k].passes - clr[k].judged, clr[k].passes);
			continue;
		}
		nkinds++;
		/* the 2 MiB hugetlb page decides when measured, else the slowest kind */
		if (k == K_HUGETLB || !(cfg.kinds & 1 << K_HUGETLB)) {
			metric = k == K_HUGETLB || isnan(metric) ? clr[k].m[3] :
				 fmin(metric, clr[k].m[3]);
			judged = clr[k].judged;
		}
		kr_say("%-12s %11.2f %7.2f %8.2f %8.2f %8.2f", n, g / clr[k].m[0],
		       g / clr[k].m[1], g / clr[k].m[2], clr[k].m[3], clr[k].m[4]);
		measuref(g / clr[k].m[0], "%s_kernel_gib_s", n);
		measuref(g / clr[k].m[1], "%s_cached_gib_s", n);
		measuref(g / clr[k].m[2], "%s_stream_gib_s", n);
		measuref(clr[k].m[3], "%s_vs_cached", n);
		measuref(clr[k].m[4], "%s_vs_stream", n);
	}
	kr_say("(medians of %d-%d passes; each ratio from one pass's kernel clear",
	       CLEARING_MIN_PAIRS, CLEARING_PASSES * o->repeat);
	kr_say(" and the user stores after it on the same memory; cold pass apart)");
	kr_say("kernel/cached of 2 MiB hugetlb pages below %.2f: FAIL", threshold);
	if (clr[K_HUGETLB].done && clr[K_HUGETLB].m[4] < 0.6)
		kr_say("non-temporal stores clear %.1fx faster than the kernel here",
		       1 / clr[K_HUGETLB].m[4]);
	if (!nkinds && !(cfg.kinds & 1 << K_HUGETLB && clr[K_HUGETLB].done))
		return kr_skip(KR_EXIT_SKIP_MACHINE, "no huge page kind could be measured");
	kr_cause("clear_page() 4 KiB at a time with cached stores, in process_huge_page()");
	kr_cause("  order, ending at the faulting subpage; addressed by Ankur Arora's");
	kr_cause("  clear_pages() / \"folio_zero_user: clear pages sequentially\" (mm, 2026)");
	if (isnan(metric))
		return kr_inconclusive(NAN, "fewer than %d undisturbed passes", CLEARING_MIN_PAIRS);
	kr_measure("clearing", metric);
	kr_measure("clearing_pairs", judged);
	double ratio;
	enum kr_verdict v = clearing_rule(1, metric, threshold, &ratio);
	if (v == KR_SKIP)
		return kr_inconclusive(metric, "within %.2f of the limit", CLEARING_MARGIN);
	return kr_verdict(v, metric, "%s", "");
}

/* ---- the size that fits the time budget ---- */

/* Seconds per GiB of one thread clearing fresh memory (first touch of each page) plus rep
 * stosb over it, the fastest of the passes after the first, over 32 MiB of THP (huge) or
 * 4 KiB pages. Under TCG this is 10-50x the host's: the default size met the hard cap. */
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
		fill(p, n, false);
		double s = (double)(kr_now_ns() - t0) / 1e9;
		munmap(p, n);
		if (i)
			best = fmin(best, s);
	}
	return best / ((double)n / GIB);
}

/* The largest size (a multiple of unit, at most size) whose fewest passes, s_per_gib
 * seconds per GiB in all, fit budget seconds; 0 when not even unit does. */
static uint64_t fit_size(uint64_t size, uint64_t unit, double s_per_gib, double budget)
{
	if (!(s_per_gib > 0) || !isfinite(s_per_gib) || budget / s_per_gib * GIB >= (double)size)
		return size;
	return (uint64_t)(budget / s_per_gib * GIB / (double)unit) * unit;
}

/* SKIP reasons found before anything changes, or 0 */
static int requirements(int ncpus)
{
	char buf[256];
	bool thp = kr_read_file("/sys/kernel/mm/transparent_hugepage/enabled", buf,
				sizeof(buf)) >= 0;

	if (ncpus < 2 && !cfg.clearing)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "only one usable CPU: no parallel clearing "
			       "to compare");
	if (cfg.kinds & 1 << K_HUGETLB) {
		uint64_t hps = meminfo("Hugepagesize");
		if (access("/proc/sys/vm/nr_hugepages", W_OK) < 0 || hps == 0)
			return kr_skip(KR_EXIT_SKIP, "hugetlb pages need CONFIG_HUGETLBFS "
				       "(vm.nr_hugepages)");
		if (hps != HPAGE_SIZE / 1024)
			return kr_skip(KR_EXIT_SKIP_MACHINE, "the default huge page size is %llu "
				       "kB, not 2048 kB (hugepagesz= on the command line)",
				       (unsigned long long)hps);
	}
	if (cfg.kinds & 1 << K_THP && !thp)
		return kr_skip(KR_EXIT_SKIP, "THP needs CONFIG_TRANSPARENT_HUGEPAGE");
	if (cfg.kinds & 1 << K_THP && strstr(buf, "[never]"))
		return kr_skip(KR_EXIT_SKIP, "THP is disabled (transparent_hugepage/enabled is "
			       "never)");
	if (cfg.method == M_POPULATE) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		bool bad = p == MAP_FAILED || madvise(p, 4096, MADV_POPULATE_WRITE) < 0;
		if (p != MAP_FAILED)
			munmap(p, 4096);
		if (bad)
			return kr_skip(KR_EXIT_SKIP, "needs MADV_POPULATE_WRITE (Linux 5.14); try "
				       "--method touch");
	}
	return 0;
}

static int run(const struct kr_opts *o)
{
	cpu_set_t usable; /* this process's affinity (cpusets) x the online CPUs */
	int ncpus = kr_usable_cpus(&usable), nthreads = cfg.threads ? cfg.threads : ncpus, r;
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
	if ((r = requirements(ncpus)))
		return r;

	/* Size the work to the time budget: the fewest passes (one repeat; clearing: the
	 * warm-up and CLEARING_MIN_PAIRS) from a probe of this machine's clearing speed.
	 * Under TCG the default 512 MiB took 40-42 s and met the hard cap. */
	bool thp_ok = kr_read_file("/sys/kernel/mm/transparent_hugepage/enabled", buf,
				   sizeof(buf)) >= 0 && !strstr(buf, "[never]");
	double c4k = !cfg.clearing && cfg.kinds & 1 << K_4K ? probe_s_per_gib(false) : 0;
	double chuge = probe_s_per_gib(thp_ok), per_gib = 0;
	double budget = o->duration_set ? o->duration_s : cfg.clearing ? CLEARING_BUDGET :
			kr_program()->duration_s - 2;
	uint64_t least = cfg.clearing ? 16 * HPAGE_SIZE : 2 * cfg.chunk;
	int npts = thread_points(nthreads, points);
	for (int k = 0; k < NKINDS; k++)
		if (cfg.kinds & 1 << k && k != K_1G)
			per_gib += (k == K_4K ? c4k : chuge) * (cfg.clearing ?
				   (1 + CLEARING_MIN_PAIRS) * CLEARING_UNITS : 2 + PASSES * npts);
	kr_measure("probe_clear_gib_s", 1 / chuge);
	uint64_t fit = fit_size(cfg.size, cfg.clearing ? HPAGE_SIZE : cfg.chunk, per_gib, budget);
	double need_s = per_gib * (double)cfg.size / GIB;
	if (fit < cfg.size && cfg.size_set && need_s > 0.8 * (kr_hard_cap_s() - 5))
		return kr_skip(KR_EXIT_SKIP, "clearing runs at %.2f GiB/s here: --size %llu MiB "
			       "needs ~%.0f s, beyond the hard cap of %.0f s; try --size %llu M",
			       1 / chuge, (unsigned long long)(cfg.size >> 20), need_s,
			       kr_hard_cap_s(), (unsigned long long)(fit >> 20));
	if (fit < cfg.size && !cfg.size_set) {
		if (fit < least)
			return kr_skip(KR_EXIT_SKIP, "clearing runs at %.2f GiB/s here (emulated "
				       "CPU?): not even %llu MiB fits the time budget of %.0f s",
				       1 / chuge, (unsigned long long)(least >> 20), budget);
		kr_say("clearing runs at %.2f GiB/s here: --size %llu MiB, not %llu, fits the",
		       1 / chuge, (unsigned long long)(fit >> 20),
		       (unsigned long long)(cfg.size >> 20));
		kr_say("  time budget of %.0f s (--duration)", budget);
		job.size = cfg.size = fit;
	}
	/* more threads than chunks would only wait */
	uint64_t nchunks = (cfg.size + cfg.chunk - 1) / cfg.chunk;
	if ((uint64_t)nthreads > nchunks)
		nthreads = (int)nchunks;
	/* one region at a time (the hugetlb pool is given back before the next kind) */
	uint64_t avail = meminfo("MemAvailable") * 1024, need = cfg.size + (512ULL << 20);
	if (avail < need)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "needs %.1f GiB of available memory, has "
			       "%.1f GiB; try a smaller --size", (double)need / GIB, avail / GIB);

	/* NUMA: every node with memory owns a part of the region and its workers */
	numa_ok = numa_available() >= 0;
	job.nparts = 0;
	for (int n = 0; numa_ok && n <= numa_max_node() && job.nparts < MAX_PARTS; n++)
		if (numa_node_size64(n, NULL) > 0)
			job.part_node[job.nparts++] = n;
	if (job.nparts == 0)
		job.part_node[job.nparts++] = 0;
	if (cfg.clearing)
		return run_clearing(o, &job, chuge);

	npoints = thread_points(nthreads, points);
	for (verdict_point = npoints - 1; points[verdict_point] > ncpus; verdict_point--)
		;
	int vt = points[verdict_point];
	kr_param("size", "%.2fGiB", cfg.size / GIB);
	kr_param("chunk", "%lluMiB", (unsigned long long)(cfg.chunk >> 20));
	kr_param("threads", "%d", nthreads);
	kr_param("method", "%s", method_names[cfg.method]);
	buf[0] = 0;
	for (int k = 0; k < NKINDS; k++)
		if (cfg.kinds & 1 << k)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
				 *buf ? "," : "", kind_names[k]);
	kr_param("pages", "%s", buf);
	kr_param("repeat", "%d", o->repeat);
	kr_measure("cpus_online", ncpus);
	kr_measure("numa_nodes", job.nparts);
	if (kr_csv_open("pages,method,threads,repeat,pass,clear_s,memset_s,munmap_s,run_delay") < 0)
		return kr_error("cannot write --csv %s", o->csv);

	/* Each kind: warm-up, then its repeats back to back, so the memory freed by one pass
	 * is reused warm by the next before free page reporting hands it to the host. */
	int64_t start = kr_now_ns();
	int kinds_left = __builtin_popcount(cfg.kinds), cut = 0;
	for (int k = 0; k < NKINDS; k++) {
		double t[4], delay, huge;
		if (!(cfg.kinds & 1 << k))
			continue;
		if (k == K_HUGETLB && (r = reserve_hugepages(cfg.size / HPAGE_SIZE)))
			return r;
		if ((r = cycle(&job, (enum kind)k, vt, vt, false, t, &delay, &huge)))
			return r;
		res[k].cold = t[0];
		res[k].huge_min = 1;
		if (k == K_THP && huge < 0.9)
			return kr_skip(KR_EXIT_SKIP_MACHINE, "only %.0f%% of the region got THPs "
				       "(memory fragmented; AnonHugePages in "
				       "/proc/self/smaps_rollup)", 100 * huge);
		/* this kind's share of what is left of the time budget */
		double left = (budget - (double)(kr_now_ns() - start) / 1e9) / kinds_left--;
		int64_t t_kind = kr_now_ns(), last = 0;
		for (int i = 0; i < o->repeat; i++) {
			int64_t t0 = kr_now_ns();
			if (i && (double)(t0 - t_kind + last) / 1e9 > left)
				break;
			kr_progress("%s: repeat %d of %d", kind_names[k], i + 1, o->repeat);
			if ((r = measure_repeat(&job, (enum kind)k, i)))
				return r;
			res[k].nrep = i + 1;
			last = kr_now_ns() - t0;
		}
		cut |= res[k].nrep < o->repeat;
		/* give the pool back now: its warm memory then serves the next kind */
		if (k == K_HUGETLB)
			kr_write_file(POOL_2M "/nr_hugepages", orig_2m);
	}

	double metric = INFINITY;
	const char *unjudged = NULL;
	enum kr_verdict votes[NKINDS];
	int nvotes = 0, npass, nfail;
	for (int k = 0; k < NKINDS; k++) {
		if (!(cfg.kinds & 1 << k))
			continue;
		double e = report_kind((enum kind)k, res[k].nrep, o->threshold, &votes[nvotes++]);
		if (isnan(e))
			unjudged = kind_names[k];
		else
			metric = fmin(metric, e);
	}
	if (cut)
		kr_say("fewer than %d repeats fit in the time budget of %.0f s (--duration)",
		       o->repeat, budget);
	if (job.nparts == 1)
		kr_say("one NUMA node with memory: NUMA placement not exercised");
	else
		kr_say("%d NUMA nodes: each worker bound to the node of its chunks", job.nparts);
	if (nthreads > ncpus)
		kr_say("%d threads > %d CPUs: points above %d oversubscribe, not judged",
		       nthreads, ncpus, vt);
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

static int parse_size(const char *opt, const char *arg, uint64_t *out)
{
	if (kr_parse_size(opt, arg, HPAGE_SIZE, 1ULL << 40, out) < 0)
		return -1;
	if (*out % HPAGE_SIZE)
		return kr_usage_error("%s: must be a multiple of 2 MiB, got '%s'", opt, arg);
	return 0;
}

static int parse(int index, const char *arg)
{
	long l;
	int i;

	switch (index) {
	case 0:
		cfg.size_set = true;
		return parse_size("--size", arg, &cfg.size);
	case 1:
		if (kr_parse_long("--threads", arg, 2, MAX_THREADS, &l) < 0)
			return -1;
		cfg.threads = (int)l;
		return 0;
	case 2:
		return parse_size("--chunk", arg, &cfg.chunk);
	case 3:
		if ((i = parse_kinds(arg)) < 0)
			return kr_usage_error("--pages: expected a list of hugetlb, thp, 4k or "
					      "'all', got '%s'", arg);
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
		if ((cfg.clearing = i == 1)) { /* the second verdict: its own metric and rule */
			prog.metric = "clearing";
			prog.threshold = CLEARING_THRESHOLD;
			prog.rule = "FAIL when one thread of the kernel clears fresh 2 MiB hugetlb\n"
				"  pages at < threshold x rep stosb over the same memory right after\n"
				"  (median of the pass pairs; without hugetlb: the slowest kind);\n"
				"  within 0.04 of it: SKIP";
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
		return kr_usage_error("--measure clearing: populates hugetlb, thp and 1g pages "
				      "with one thread (no --trigger, --method or 4k)");
	if (!cfg.clearing && (cfg.kinds & 1 << K_1G))
		return kr_usage_error("--pages 1g: with --measure clearing only");
	if (m == M_FALLOCATE && kinds != 1 << K_HUGETLB)
		return kr_usage_error("--method fallocate works on hugetlb pages only "
				      "(--pages hugetlb)");
	if (o->trigger && cfg.method_set && cfg.method != M_FALLOCATE)
		return kr_usage_error("--trigger clears by fallocate; it cannot take --method %s",
				      method_names[cfg.method]);
	if (cfg.chunk > cfg.size)
		return kr_usage_error("--chunk (%llu MiB) is larger than --size",
				      (unsigned long long)(cfg.chunk >> 20));
	return 0;
}

static struct kr_prog prog = {
	.name = "ktask_bench",
	.summary = "parallel clearing of large memory vs one thread",
	.description =
		"Clears --size of fresh hugetlb, THP and 4 KiB pages (zeroed by the kernel at\n"
		"fault time) with 1, 2, 4 .. N threads taking chunks from a shared counter, each\n"
		"bound to the NUMA node of its chunk (ktask RFC); then rep stosb over the same\n"
		"memory (the ceiling) and munmap. Each kind is warmed up first (free page\n"
		"reporting makes re-faulted memory 10x slower; --cold shows that pass).\n"
		"--trigger: fallocate() chunks of ONE hugetlbfs file from every thread;\n"
		"inode_lock serialises them: FAIL.\n"
		"--measure clearing: one thread of the kernel clearing fresh 2 MiB, THP and\n"
		"1 GiB pages against rep stosb and movnti over the same memory (FAIL below 0.58\n"
		"of rep stosb: its own rule), and the order it clears a 2 MiB page in (which\n"
		"subpages are cache-hot afterwards).",
	.example = "ktask_bench --size 2G --pages hugetlb,thp --threads 2 --csv scaling.csv",
	.flags = KR_NEEDS_ROOT | KR_OPT_REPEAT | KR_OPT_TRIGGER,
	.metric = "efficiency",
	.unit = "",
	.threshold = 0.65, /* serialised: 0.43-0.58 (1/N = 0.5); healthy: 0.72-0.99 */
	.threshold_min = 0.01,
	.threshold_max = 1.0,
	.rule = "FAIL when speedup(N) / ideal(N) < threshold for every page kind, from the\n"
		"  fastest judged passes (N: most threads with a CPU each; ideal(N) = min(N,\n"
		"  memset GiB/s at N threads / kernel GiB/s at 1)); kinds that disagree: SKIP",
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
