// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: parallel, NUMA-aware clearing of large memory against one thread (ktask).
 *
 * The kernel zeroes memory at fault time, one page or one 2 MiB folio per fault
 * (folio_zero_user), in the faulting thread: 100 GiB of huge pages took 41 s on one
 * thread in the ktask RFC, which handed chunks to per-node kernel threads (2.0x at 2,
 * 10x at 16). Upstream never merged it, so a process clears in parallel itself: threads
 * fault in disjoint chunks (MADV_POPULATE_WRITE or a touch), each bound to its chunk's
 * node. That scales unless the kernel serialises them: hugetlbfs fallocate() holds
 * inode_lock for the whole call (--trigger). Verdict: the gain at the largest N with a
 * CPU each, (speedup(N) - 1) / (ideal(N) - 1), ideal(N) = min(N, memset GiB/s at N /
 * kernel GiB/s at 1): a host at its bandwidth wall fails no kernel, and a serialised
 * clear scores ~0 whether ideal is 1.4 (an AMD-hosted VM) or 2.
 *
 * --measure clearing: one thread of the kernel clearing fresh huge pages against rep stosb
 * and movnti over the same memory. Up to 2026 the kernel cleared a huge page 4 KiB at a
 * time with cached stores, ending at the faulting subpage (process_huge_page); Ankur
 * Arora's "folio_zero_user: clear pages sequentially" doubled that on AMD Genoa.
 * KVM guests hand freed memory back to the host (free page reporting) and re-faulting it
 * is slow: each kind is warmed up once, then its timed passes follow back to back.
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

#define HPAGE (2ULL << 20)
#define GIB (1024.0 * 1024 * 1024)
#define MAX_THREADS 256
#define MAX_POINTS 10  /* 1, 2, 4 .. 256 and a last one that is no power of two */
#define MAX_PARTS 64   /* NUMA nodes with memory */
#define MAX_DELAY 0.10 /* workers waited longer for a CPU: other tasks, no vote */
#define MIN_IDEAL 1.25 /* less speedup on offer: serialised and parallel look alike */
#define PASSES 2       /* per point and repeat (A B A B); the fastest counts */
#define POOL "/sys/kernel/mm/hugepages/hugepages-2048kB/"

/* FAIL: 2 MiB hugetlb pages cleared at less than this share of rep stosb. The sequential
 * series took AMD Genoa from ~0.5 to ~1.0 of its ceiling (11.8 -> 23.6 GB/s). 6.18
 * without it: 0.42-0.51 on an AMD-hosted VM (top-down; bottom-up 0.85-1.05), 0.66-0.93
 * on an Intel-hosted one where the order costs nothing (20 of 20, 2026-11-23). */
#define CLEARING_THRESHOLD 0.58
#define CLEARING_MARGIN 0.04 /* closer to the threshold: inconclusive */
#define CLEARING_PASSES 4    /* per --repeat: a 512 MiB pass takes ~60 ms */
#define CLEARING_BUDGET 20.0 /* s without --duration */
/* The verdict is the median of per-pass ratios (kernel clear, then the user stores on the
 * same memory): the host's memory has phases of seconds, and fastest over fastest took
 * the two from different phases (0.60-0.95 between runs). */
#define CLEARING_MIN_PAIRS 3
#define MAX_REPS (100 * CLEARING_PASSES) /* --repeat 100 */

enum kind { K_HUGETLB, K_THP, K_4K, NKINDS };
static const char *const kind_names[NKINDS] = { "hugetlb", "thp", "4k" };
#define ALL_KINDS ((1 << NKINDS) - 1)
enum method { M_POPULATE, M_TOUCH, M_FALLOCATE };
static const char *const method_names[] = { "populate", "touch", "fallocate" };

static struct {
	uint64_t size, chunk;
	int threads;	/* 0: the usable CPUs */
	unsigned kinds; /* bit per enum kind */
	enum method method;
	bool method_set, kinds_set, clearing, size_set;
} cfg = { .size = 512ULL << 20, .chunk = 16ULL << 20, .kinds = ALL_KINDS };

/* ---- the rules (unit tested) ---- */

/* The speedup the machine can give n threads of kernel clearing that take t1 s on one:
 * n, unless n threads of memset (mn s) hit the bandwidth wall first; never below 1. */
static double ideal_speedup(double t1, double mn, int n)
{
	return mn > 0 && isfinite(mn) ? fmax(1, fmin(n, t1 / mn)) : n;
}

/* A repeat votes when both passes ran and no worker waited long for a CPU */
static bool repeat_judged(double t1, double tn, double delay)
{
	return t1 > 0 && tn > 0 && isfinite(t1) && isfinite(tn) && delay <= MAX_DELAY;
}

/* gain = (speedup - 1) / (ideal - 1): the share of the gain the machine offers that the
 * threads got; serialised ~0, parallel ~1 whatever ideal is. FAIL below the threshold;
 * SKIP where ideal < MIN_IDEAL: too little gain on offer to tell the two apart. */
static enum kr_verdict ktask_rule(double t1, double tn, double mn, int n, double threshold,
				  double *gain)
{
	double ideal = ideal_speedup(t1, mn, n);

	*gain = NAN;
	if (!repeat_judged(t1, tn, 0) || n < 2)
		return KR_SKIP;
	*gain = (t1 / tn - 1) / fmax(ideal - 1, 1e-9);
	if (ideal < MIN_IDEAL)
		return KR_SKIP;
	return *gain < threshold ? KR_FAIL : KR_PASS;
}

/* --measure clearing: kernel GiB/s over cached-store GiB/s; SKIP near the threshold */
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
	int mask = 0, k;

	if (!strcmp(s, "all"))
		return ALL_KINDS;
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < NKINDS && strcmp(w, kind_names[k]); k++)
			;
		if (k == NKINDS)
			return -1;
		mask |= 1 << k;
	}
	return mask ? mask : -1;
}

/* The largest size (a multiple of unit, at most size) whose fewest passes, s_per_gib
 * seconds per GiB in all, fit budget seconds; 0 when not even unit does. */
static uint64_t fit_size(uint64_t size, uint64_t unit, double s_per_gib, double budget)
{
	if (!(s_per_gib > 0) || !isfinite(s_per_gib) || budget / s_per_gib * GIB >= (double)size)
		return size;
	return (uint64_t)(budget / s_per_gib * GIB / (double)unit) * unit;
}

/* ---- the workers ---- */

enum op { OP_CLEAR, OP_MEMSET, OP_STREAM };
static struct {
	char *base, *map; /* the region; map: its mapping with the THP alignment slack */
	int fd;		  /* the hugetlbfs memfd of --method fallocate, else -1 */
	uint64_t size, chunk, maplen, stride;
	enum op op;
	int nparts, node[MAX_PARTS];
	uint64_t end[MAX_PARTS]; /* chunk index where part i ends */
	_Atomic uint64_t next[MAX_PARTS];
	pthread_barrier_t go;
	_Atomic int err;
	double delay; /* of the last pass: the workers' share of it waiting for a CPU */
} job;

static struct worker {
	int part;
	pthread_t th;
	uint64_t wait_ns;
	int64_t t0, t1;
} wk[MAX_THREADS];

static bool numa_ok;

/* The ceilings, a non-zero byte so that the next clear zeroes real data: the string store
 * of the kernel's clear_page_erms, or movnti (non-temporal, no read-for-ownership). */
static void fill(void *p, size_t n, bool stream)
{
#if defined(__x86_64__)
	if (!stream) {
		__asm__ volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(0x5a) : "memory");
		return;
	}
	for (long long *q = p, *end = (long long *)((char *)p + n); q < end; q += 4)
		for (int i = 0; i < 4; i++) /* unrolled: 1 store a loop ran at 3/4 the speed */
			_mm_stream_si64(q + i, 0x5a5a5a5a5a5a5a5aLL);
	_mm_sfence();
#else
	(void)stream;
	memset(p, 0x5a, n);
#endif
}

static int do_chunk(uint64_t off, uint64_t len)
{
	char *p = job.base + off;

	if (job.op != OP_CLEAR)
		fill(p, len, job.op == OP_STREAM);
	else if (cfg.method == M_FALLOCATE)
		return fallocate(job.fd, 0, (off_t)off, (off_t)len);
	else if (cfg.method == M_POPULATE)
		return madvise(p, len, MADV_POPULATE_WRITE);
	else /* the last byte: folio_zero_user then clears the 2 MiB bottom-up */
		for (uint64_t o = job.stride - 1; o < len; o += job.stride)
			((volatile char *)p)[o] = 0;
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct kr_schedstat s0 = { 0 }, s1 = { 0 };

	if (numa_ok) { /* ktask: a worker runs on the node that owns its chunks */
		numa_run_on_node(job.node[w->part]);
		numa_set_localalloc();
	}
	pthread_barrier_wait(&job.go);
	kr_read_schedstat(getpid(), kr_gettid(), &s0);
	w->t0 = kr_now_ns();
	for (int k = 0; k < job.nparts; k++) { /* own node's chunks first, then help others */
		int p = (w->part + k) % job.nparts;
		for (uint64_t c; (c = atomic_fetch_add(&job.next[p], 1)) < job.end[p];) {
			uint64_t off = c * job.chunk, len = job.size - off;
			if (do_chunk(off, len < job.chunk ? len : job.chunk) < 0)
				atomic_store(&job.err, errno ? errno : EIO);
		}
	}
	w->t1 = kr_now_ns();
	kr_read_schedstat(getpid(), kr_gettid(), &s1);
	w->wait_ns = s1.wait_ns - s0.wait_ns;
	return NULL;
}

/* One timed pass with n workers: seconds, or -1 with errno. Thread start is not timed. */
static double run_pass(enum op op, int n)
{
	uint64_t nchunks = (job.size + job.chunk - 1) / job.chunk, begin = 0;
	int64_t t0 = INT64_MAX, t1 = 0;
	double waited = 0;

	job.op = op;
	atomic_store(&job.err, 0);
	for (int p = 0; p < job.nparts; p++) {
		atomic_store(&job.next[p], begin);
		begin = job.end[p] = nchunks * (uint64_t)(p + 1) / (uint64_t)job.nparts;
	}
	pthread_barrier_init(&job.go, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		wk[i].part = i % job.nparts;
		if (kr_thread_start(&wk[i].th, -1, SCHED_OTHER, 0, worker_main, &wk[i]) < 0) {
			kr_warn("cannot start a worker: %s", strerror(errno));
			abort(); /* the parent restores; a half-started barrier cannot be undone */
		}
	}
	pthread_barrier_wait(&job.go);
	for (int i = 0; i < n; i++) { /* first start to last end */
		pthread_join(wk[i].th, NULL);
		t0 = wk[i].t0 < t0 ? wk[i].t0 : t0;
		t1 = wk[i].t1 > t1 ? wk[i].t1 : t1;
		waited += (double)wk[i].wait_ns / 1e9;
	}
	pthread_barrier_destroy(&job.go);
	job.delay = waited / ((double)(t1 - t0) / 1e9 * n);
	return (errno = atomic_load(&job.err)) ? -1 : (double)(t1 - t0) / 1e9;
}

/* ---- one cycle on fresh memory ---- */

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

/* Map fresh memory of kind k; the kernel clears it with n threads; rep stosb (clearing:
 * then movnti) over it with n threads; munmap; a CSV row. t: clear, memset, movnti,
 * munmap s; delay: the largest run-delay share; huge: the share of THP. 0 or an exit code. */
static int cycle(enum kind k, int n, int rep, int pass, double t[4], double *delay,
		 double *huge)
{
	uint64_t nch = (job.size + job.chunk - 1) / job.chunk;
	bool fa = cfg.method == M_FALLOCATE; /* one hugetlbfs file: fallocate() brings pages */

	job.stride = k == K_4K ? 4096 : HPAGE;
	job.maplen = job.size + (k == K_THP ? HPAGE : 0); /* THP needs 2 MiB alignment */
	job.fd = fa ? memfd_create("krepro-ktask_bench", MFD_HUGETLB | MFD_CLOEXEC) : -1;
	job.map = fa ? NULL : mmap(NULL, job.maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE |
				   MAP_ANONYMOUS | (k == K_HUGETLB ? MAP_HUGETLB : 0), -1, 0);
	job.base = k != K_THP ? job.map : (char *)(((uintptr_t)job.map + HPAGE - 1) & ~(HPAGE - 1));
	if ((fa && job.fd < 0) || job.map == MAP_FAILED || (k != K_HUGETLB && madvise(job.base,
	    job.size, k == K_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) < 0))
		return kr_error("cannot map %.2f GiB of %s pages: %s", job.size / GIB,
				kind_names[k], strerror(errno));
	for (int i = 0; numa_ok && !fa && i < job.nparts; i++) { /* each part on its node */
		uint64_t b = nch * (uint64_t)i / (uint64_t)job.nparts * job.chunk;
		uint64_t e = nch * (uint64_t)(i + 1) / (uint64_t)job.nparts * job.chunk;
		if ((e = e > job.size ? job.size : e) > b)
			numa_tonode_memory(job.base + b, (size_t)(e - b), job.node[i]);
	}
	if ((t[0] = run_pass(OP_CLEAR, n)) < 0)
		return kr_error("clearing %s pages (%s): %s", kind_names[k],
				method_names[cfg.method], strerror(errno));
	*delay = job.delay;
	*huge = k != K_THP ? 1 : kv("/proc/self/smaps_rollup", "AnonHugePages", NAN) * 1024 /
				   (double)job.size;
	if (fa) { /* map the file, its pages cleared, for memset */
		job.map = job.base = mmap(NULL, job.size, PROT_READ | PROT_WRITE, MAP_SHARED,
					  job.fd, 0);
		if (job.map == MAP_FAILED || madvise(job.map, job.size, MADV_POPULATE_WRITE) < 0)
			return kr_error("mapping the hugetlb file: %s", strerror(errno));
	}
	for (int i = 1; i < (cfg.clearing ? 3 : 2); i++) {
		if ((t[i] = run_pass(i == 1 ? OP_MEMSET : OP_STREAM, n)) < 0)
			return kr_error("memset: %s", strerror(errno));
		*delay = fmax(*delay, cfg.clearing ? job.delay : 0);
	}
	int64_t t0 = kr_now_ns();
	munmap(job.map, job.maplen);
	if (job.fd >= 0)
		close(job.fd);
	t[3] = (double)(kr_now_ns() - t0) / 1e9;
	kr_csv_row("%s,%s,%d,%d,%d,%.6f,%.6f,%.6f,%.3f", kind_names[k], cfg.clearing ?
		   "clearing" : method_names[cfg.method], n, rep, pass, t[0], t[1],
		   t[cfg.clearing ? 2 : 3], *delay);
	return 0;
}

static char orig_pool[32];

static uint64_t pool_get(const char *file)
{
	char path[128];
	uint64_t v = 0;

	snprintf(path, sizeof(path), POOL "%s", file);
	return kr_read_u64(path, &v) < 0 ? 0 : v;
}

/* Makes need pages of the 2 MiB pool free (journaled: restored after the run, on a
 * signal and after a crash). 0 or an exit code. */
static int reserve_hugepages(uint64_t need)
{
	unsigned long long nr = pool_get("nr_hugepages"), got;
	char val[32];

	snprintf(orig_pool, sizeof(orig_pool), "%llu", nr);
	for (int i = 0;; i++) {
		if ((got = pool_get("free_hugepages") - pool_get("resv_hugepages")) >= need)
			return 0;
		if (i)
			return kr_skip(KR_EXIT_SKIP_MACHINE, "could reserve only %llu of %llu 2 MiB "
				       "huge pages (memory fragmented)", got, (unsigned long long)need);
		snprintf(val, sizeof(val), "%llu", nr + need - got);
		if (kr_journal_write(POOL "nr_hugepages", val) < 0)
			return kr_error("cannot set " POOL "nr_hugepages: %s", strerror(errno));
	}
}

/* ---- the measurement ---- */

static struct result {
	/* fastest clear, memset, munmap (clearing: movnti) s per point and repeat (clearing:
	 * per pass, at point 0), and the run delay share of that clear */
	double t[3][MAX_POINTS][MAX_REPS], delay[MAX_POINTS][MAX_REPS];
	double huge_min; /* the lowest share of THP seen */
	int nrep;
} res[NKINDS];

static int npoints, points[MAX_POINTS], vp; /* vp: the judged point */

/* Each kind: a warm-up (CSV repeat -1), then its repeats back to back, so that the memory
 * freed by one pass is reused warm by the next before free page reporting hands it to
 * the host. Returns 0 or an exit code; *cut: fewer repeats than asked fit the budget. */
static int measure(int repeat, double budget, bool *cut)
{
	bool cl = cfg.clearing;
	int r, kinds_left = __builtin_popcount(cfg.kinds);
	int max = cl ? CLEARING_PASSES * repeat : repeat, least = cl ? CLEARING_MIN_PAIRS : 1;
	int64_t start = kr_now_ns();

	for (int k = 0; k < NKINDS; k++) {
		struct result *rs = &res[k];
		double t[4], delay, huge, left = budget - (double)(kr_now_ns() - start) / 1e9;
		int64_t t_kind = kr_now_ns(), last = 0;
		if (!(cfg.kinds & 1 << k))
			continue;
		if (k == K_HUGETLB && (r = reserve_hugepages(job.size / HPAGE)))
			return r;
		if ((r = cycle((enum kind)k, points[vp], -1, 0, t, &delay, &rs->huge_min)))
			return r;
		if (rs->huge_min < 0.9 && !cl)
			return kr_skip(KR_EXIT_SKIP_MACHINE, "only %.0f%% of the region got THPs "
				       "(memory fragmented; AnonHugePages in "
				       "/proc/self/smaps_rollup)", 100 * rs->huge_min);
		if (!cl) { /* the kind's share of what is left after the warm-up */
			t_kind = kr_now_ns();
			left = budget - (double)(t_kind - start) / 1e9;
		}
		left /= kinds_left--;
		for (int i = 0; i < max && (!cl || rs->huge_min >= 0.9); i++) {
			int64_t t0 = kr_now_ns();
			if (i >= least && (double)(t0 - t_kind + last) / 1e9 > left)
				break;
			kr_progress("%s: repeat %d of %d", kind_names[k], i + 1, max);
			for (int p = 0; p < npoints; p++)
				rs->t[0][p][i] = rs->t[1][p][i] = rs->t[2][p][i] = INFINITY;
			for (int pass = 0; pass < (cl ? 1 : PASSES); pass++)
				for (int p = 0; p < npoints; p++) {
					if ((r = cycle((enum kind)k, points[p], i, pass, t, &delay, &huge)))
						return r;
					rs->huge_min = fmin(rs->huge_min, huge);
					if (t[0] < rs->t[0][p][i])
						rs->t[0][p][i] = t[0], rs->delay[p][i] = delay;
					rs->t[1][p][i] = fmin(rs->t[1][p][i], t[1]);
					rs->t[2][p][i] = fmin(rs->t[2][p][i], t[cl ? 2 : 3]);
				}
			rs->nrep = i + 1;
			last = kr_now_ns() - t0;
		}
		rs->nrep = cl && rs->huge_min < 0.9 ? 0 : rs->nrep; /* THP fragmented */
		*cut |= !cl && rs->nrep < max;
		if (k == K_HUGETLB) /* give the pool back: warm memory for the next kind */
			kr_write_file(POOL "nr_hugepages", orig_pool);
	}
	return 0;
}

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

/* ---- the reports ---- */

static int report_scaling(const struct kr_opts *o, int ncpus, int nthreads, double budget,
			  bool cut)
{
	static const char *const how[] = { "MADV_POPULATE_WRITE", "first touch",
					   "fallocate, 1 file" };
	double gib = cfg.size / GIB, metric = INFINITY;
	int n = points[vp], nvotes = 0, npass, nfail;
	const char *unjudged = NULL, *blind = NULL;
	double blind_ideal = NAN;
	enum kr_verdict votes[NKINDS];

	for (int k = 0; k < NKINDS; k++) {
		struct result *rs = &res[k];
		double t1 = INFINITY, tn = INFINITY, mn = INFINITY, e;
		int nrep = rs->nrep, judged = 0;
		if (!(cfg.kinds & 1 << k))
			continue;
		/* The vote: the fastest judged pass at 1 and at N threads (host noise only adds
		 * time, a lock that serialises the threads shows in every pass). Run delay flags
		 * other tasks on the workers' CPUs; with fallocate on one file the inode_lock
		 * handoffs wake the workers all the time: there it is the phenomenon. */
		for (int r = 0; r < nrep; r++) {
			double d = cfg.method == M_FALLOCATE ? 0 : fmax(rs->delay[0][r],
									 rs->delay[vp][r]);
			if (!repeat_judged(rs->t[0][0][r], rs->t[0][vp][r], d))
				continue;
			judged++;
			t1 = fmin(t1, rs->t[0][0][r]);
			tn = fmin(tn, rs->t[0][vp][r]);
			mn = fmin(mn, rs->t[1][vp][r]);
		}
		double ideal = ideal_speedup(t1, mn, n);
		votes[nvotes++] = ktask_rule(t1, tn, mn, n, o->threshold, &e);
		if (votes[nvotes - 1] == KR_SKIP && isfinite(e)) { /* ideal < MIN_IDEAL */
			blind = kind_names[k];
			blind_ideal = ideal;
		}
		unjudged = isnan(e) ? kind_names[k] : unjudged;
		metric = isnan(e) ? metric : fmin(metric, e);
		kr_say("%s: %s, %.2f GiB in %llu MiB chunks, %d repeat%s", kind_names[k],
		       how[cfg.method], gib, (unsigned long long)(cfg.chunk >> 20), nrep,
		       nrep > 1 ? "s" : "");
		kr_say("thr speedup   min s  med s  stdev  GiB/s  memset  clear/  munmap");
		kr_say("                                           GiB/s  memset      ms");
		for (int i = 0; i < npoints; i++) {
			struct kr_stats s[3];
			char sp[16] = "      -";
			for (int q = 0; q < 3; q++) /* sorts them: the vote is done */
				kr_stats(rs->t[q][i], (size_t)nrep, &s[q]);
			if (i) /* t[0][0][0]: the fastest at 1 thread */
				snprintf(sp, sizeof(sp), "%6.2fx", rs->t[0][0][0] / s[0].min);
			kr_say("%3d %s %7.3f %6.3f %6.3f %6.2f %7.2f %7.2f %7.2f", points[i], sp,
			       s[0].min, s[0].median, nrep > 1 ? s[0].stdev : 0, gib / s[0].min,
			       gib / s[1].min, s[1].min / s[0].min, 1e3 * s[2].median);
		}
		if (nrep > judged)
			kr_say("%d repeat%s not judged: workers waited >%.0f%% of a pass for a "
			       "CPU", nrep - judged, nrep - judged > 1 ? "s" : "", 100 * MAX_DELAY);
		if (judged) {
			kr_say("ideal speedup at %d thr: %.2fx = min(%d, memset %d thr %.1f GiB/s",
			       n, ideal, n, n, gib / mn);
			kr_say("  / kernel 1 thr %.1f GiB/s); speedup %.2fx", gib / t1, t1 / tn);
		}
		kr_say("%s gain at %d threads: %.2f (fastest of %d judged repeat%s)",
		       kind_names[k], n, e, judged, judged == 1 ? "" : "s");
		if (rs->huge_min < 0.9)
			kr_say("warning: only %.0f%% of the region was huge pages in some pass",
			       100 * rs->huge_min);
		kr_say("%s", "");
		measuref(e, "%s_gain", kind_names[k]);
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
		       nthreads, ncpus, n);
	kr_say("gain = (speedup - 1) / (ideal - 1) at %d threads; the metric is the", n);
	kr_say("lowest over the page kinds");
	kr_measure("gain", metric);
	kr_cause("hugetlbfs fallocate() serialises on inode_lock (one file)");
	kr_cause("a lock shared by the faulting threads (e.g. zone->lock)");
	kr_cause("a memory bandwidth wall: compare the memset column");
	enum kr_verdict v = kr_vote(votes, nvotes, &npass, &nfail);
	if (unjudged)
		return kr_inconclusive(isfinite(metric) ? metric : NAN, "every %s repeat "
				       "disturbed", unjudged);
	if (blind)
		return kr_inconclusive(metric, "%s: ideal speedup %.2fx < %.2fx: memory "
				       "bandwidth does not scale to %d threads here", blind,
				       blind_ideal, MIN_IDEAL, n);
	if (v == KR_SKIP)
		return kr_inconclusive(metric, "%d page kinds pass, %d fail", npass, nfail);
	return kr_verdict(v, metric, "N=%d method=%s", n, method_names[cfg.method]);
}

/* --measure clearing: per kind the medians of the undisturbed passes */
static int report_clearing(const struct kr_opts *o)
{
	static const char *const keys[] = { "kernel_gib_s", "cached_gib_s", "stream_gib_s" };
	static double v[5][MAX_REPS]; /* kernel, cached, movnti s; kernel/cached, /movnti */
	double threshold = o->threshold != kr_program()->threshold ? o->threshold
								     : CLEARING_THRESHOLD;
	double g = cfg.size / GIB, metric = NAN, nt = NAN, m[5];
	int nkinds = 0;

	kr_say("%s", "");
	kr_say("1 thread, GiB/s   kernel  cached     non-   kernel/  kernel/");
	kr_say("                  clears  stores  tempor.   cached  non-tmp");
	for (int k = 0, n = 0; k < NKINDS; k++, n = 0) {
		struct result *rs = &res[k];
		if (!(cfg.kinds & 1 << k))
			continue;
		for (int i = 0; i < rs->nrep; i++) {
			if (!(rs->delay[0][i] <= MAX_DELAY))
				continue; /* other tasks took the CPU: says nothing of the kernel */
			for (int q = 0; q < 3; q++)
				v[q][n] = rs->t[q][0][i];
			v[3][n] = v[1][n] / v[0][n];
			v[4][n] = v[2][n] / v[0][n];
			n++;
		}
		if (!rs->nrep)
			kr_say("%-12s  not measured: only %.0f%% THP (fragmented)", kind_names[k],
			       100 * rs->huge_min);
		else if (n < CLEARING_MIN_PAIRS)
			kr_say("%-12s  %d of %d passes disturbed (other tasks' CPU)", kind_names[k],
			       rs->nrep - n, rs->nrep);
		if (n < CLEARING_MIN_PAIRS)
			continue;
		nkinds++;
		for (int q = 0; q < 5; q++) {
			struct kr_stats s;
			kr_stats(v[q], (size_t)n, &s);
			m[q] = s.median;
		}
		/* the 2 MiB hugetlb page decides when measured, else the slowest kind */
		if (k == K_HUGETLB || !(cfg.kinds & 1 << K_HUGETLB))
			metric = isnan(metric) ? m[3] : fmin(metric, m[3]);
		nt = k == K_HUGETLB ? m[4] : nt;
		kr_say("%-12s %11.2f %7.2f %8.2f %8.2f %8.2f", kind_names[k], g / m[0], g / m[1],
		       g / m[2], m[3], m[4]);
		for (int q = 0; q < 3; q++)
			measuref(g / m[q], "%s_%s", kind_names[k], keys[q]);
		measuref(m[3], "%s_vs_cached", kind_names[k]);
	}
	kr_say("(medians of %d-%d passes; each ratio from one pass's kernel clear",
	       CLEARING_MIN_PAIRS, CLEARING_PASSES * o->repeat);
	kr_say(" and the user stores after it on the same memory; cold pass apart)");
	kr_say("kernel/cached of 2 MiB hugetlb pages below %.2f: FAIL", threshold);
	if (nt < 0.6)
		kr_say("non-temporal stores clear %.1fx faster than the kernel here", 1 / nt);
	if (!nkinds && !res[K_HUGETLB].nrep)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "no huge page kind could be measured");
	kr_cause("clear_page() 4 KiB at a time with cached stores, in process_huge_page()");
	kr_cause("  order, ending at the faulting subpage; addressed by Ankur Arora's");
	kr_cause("  clear_pages() / \"folio_zero_user: clear pages sequentially\" (mm, 2026)");
	if (isnan(metric))
		return kr_inconclusive(NAN, "fewer than %d undisturbed passes", CLEARING_MIN_PAIRS);
	kr_measure("clearing", metric);
	if (clearing_rule(1, metric, threshold, &m[0]) == KR_SKIP)
		return kr_inconclusive(metric, "within %.2f of the limit", CLEARING_MARGIN);
	return kr_verdict(metric < threshold ? KR_FAIL : KR_PASS, metric, "%s", "");
}

/* ---- preconditions, and the size that fits the time budget ---- */

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
		best = i ? fmin(best, s) : best;
	}
	return best / ((double)n / GIB);
}

/* SKIP reasons found before anything changes, or 0 */
static int requirements(int ncpus, const char *thp)
{
	uint64_t hps = meminfo("Hugepagesize");
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool populate = p != MAP_FAILED && madvise(p, 4096, MADV_POPULATE_WRITE) == 0;
	bool hugetlb = cfg.kinds & 1 << K_HUGETLB, thp_k = cfg.kinds & 1 << K_THP;

	if (p != MAP_FAILED)
		munmap(p, 4096);
	if (ncpus < 2 && !cfg.clearing)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "only one usable CPU: no parallel clearing "
			       "to compare");
	if (hugetlb && (access("/proc/sys/vm/nr_hugepages", W_OK) < 0 || !hps))
		return kr_skip(KR_EXIT_SKIP, "hugetlb pages need CONFIG_HUGETLBFS "
			       "(vm.nr_hugepages)");
	if (hugetlb && hps != HPAGE / 1024)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "the default huge page size is %llu kB, "
			       "not 2048 kB (hugepagesz= on the command line)",
			       (unsigned long long)hps);
	if (thp_k && !*thp)
		return kr_skip(KR_EXIT_SKIP, "THP needs CONFIG_TRANSPARENT_HUGEPAGE");
	if (thp_k && strstr(thp, "[never]"))
		return kr_skip(KR_EXIT_SKIP, "THP is disabled (transparent_hugepage/enabled is "
			       "never)");
	if (cfg.method == M_POPULATE && !populate)
		return kr_skip(KR_EXIT_SKIP, "needs MADV_POPULATE_WRITE (Linux 5.14); try "
			       "--method touch");
	return 0;
}

static int run(const struct kr_opts *o)
{
	struct kr_cpus usable; /* this process's affinity (cpusets) x the online CPUs */
	int ncpus = kr_usable_cpus(&usable), nthreads = cfg.threads ? cfg.threads : ncpus, r;
	kr_cpus_free(&usable);
	char thp[256] = "", pages[64] = "";
	bool cut = false;

	kr_env_standard((const char *const[]){ "group:memory", "group:numa",
		"config:CONFIG_PAGE_REPORTING", NULL });
	if (o->trigger && !cfg.kinds_set)
		cfg.kinds = 1 << K_HUGETLB;
	if (o->trigger && !cfg.method_set)
		cfg.method = M_FALLOCATE;
	nthreads = nthreads > MAX_THREADS ? MAX_THREADS : nthreads;
	kr_read_file("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp));
	if ((r = requirements(ncpus, thp)))
		return r;

	/* Size the work to the time budget: the fewest passes (one repeat and the warm-up;
	 * clearing: the warm-up and CLEARING_MIN_PAIRS) from a probe of the clearing speed.
	 * Under TCG the default 512 MiB took 40-42 s and met the hard cap. */
	double c4k = !cfg.clearing && cfg.kinds & 1 << K_4K ? probe_s_per_gib(false) : 0;
	double chuge = probe_s_per_gib(*thp && !strstr(thp, "[never]")), per_gib = 0;
	double budget = o->duration_s != kr_program()->duration_s ? o->duration_s : cfg.clearing ?
			CLEARING_BUDGET :
			kr_program()->duration_s - 2;
	uint64_t least = cfg.clearing ? 16 * HPAGE : 2 * cfg.chunk;
	int npts = thread_points(nthreads, points);
	for (int k = 0; k < NKINDS; k++)
		if (cfg.kinds & 1 << k)
			per_gib += (k == K_4K ? c4k : chuge) * (cfg.clearing ?
				   (1 + CLEARING_MIN_PAIRS) * 2 : 2 + PASSES * npts);
	uint64_t fit = fit_size(cfg.size, cfg.clearing ? HPAGE : cfg.chunk, per_gib, budget);
	double need_s = per_gib * cfg.size / GIB;
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
		cfg.size = fit;
	}
	/* more threads than chunks would only wait */
	uint64_t nchunks = (cfg.size + cfg.chunk - 1) / cfg.chunk;
	nthreads = (uint64_t)nthreads > nchunks ? (int)nchunks : nthreads;
	/* one region at a time (the hugetlb pool is given back before the next kind) */
	uint64_t avail = meminfo("MemAvailable") * 1024, need = cfg.size + (512ULL << 20);
	if (avail < need)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "needs %.1f GiB of available memory, has "
			       "%.1f GiB; try a smaller --size", need / GIB, avail / GIB);

	/* NUMA: every node with memory owns a part of the region and its workers (clearing:
	 * one thread, on the first node) */
	numa_ok = numa_available() >= 0;
	for (int n = 0; numa_ok && n <= numa_max_node() && job.nparts < MAX_PARTS; n++)
		if (numa_node_size64(n, NULL) > 0)
			job.node[job.nparts++] = n;
	job.nparts = cfg.clearing || !job.nparts ? 1 : job.nparts;
	job.size = cfg.size;
	job.chunk = cfg.clearing ? cfg.size : cfg.chunk;
	npoints = cfg.clearing ? 1 : thread_points(nthreads, points);
	for (vp = npoints - 1; points[vp] > ncpus; vp--)
		;
	for (int k = 0; k < NKINDS; k++)
		if (cfg.kinds & 1 << k)
			snprintf(pages + strlen(pages), sizeof(pages) - strlen(pages), "%s%s",
				 *pages ? "," : "", kind_names[k]);
	if (cfg.clearing)
		kr_param("measure", "clearing");
	kr_param("size", "%.2fGiB", cfg.size / GIB);
	if (!cfg.clearing) {
		kr_param("chunk", "%lluMiB", (unsigned long long)(cfg.chunk >> 20));
		kr_param("threads", "%d", nthreads);
		kr_param("method", "%s", method_names[cfg.method]);
		kr_param("pages", "%s", pages);
	}
	kr_param("repeat", "%d", o->repeat);
	if (kr_csv_open(cfg.clearing ?
			"pages,method,threads,repeat,pass,clear_s,memset_s,stream_s,run_delay" :
			"pages,method,threads,repeat,pass,clear_s,memset_s,munmap_s,run_delay") < 0)
		return kr_error("cannot write the CSV file: %s", strerror(errno));
	if ((r = measure(o->repeat, budget, &cut)))
		return r;
	return cfg.clearing ? report_clearing(o) : report_scaling(o, ncpus, nthreads, budget, cut);
}

/* ---- options ---- */

static struct kr_prog prog; /* below; --measure clearing switches its metric and rule */

static struct kr_prog prog = {
	.name = "ktask_bench",
	.flags = KR_NEEDS_ROOT | KR_OPT_REPEAT | KR_OPT_TRIGGER,
	.metric = "gain",
	.fail_below = true,
	.unit = "",
	/* serialised ~0 (-0.14-0.16 Intel-hosted, ideal ~2); healthy 0.44-0.98 */
	.threshold = 0.3,
	.threshold_min = 0.01,
	.threshold_max = 1.0,
	.rule = "FAIL when the gain (speedup(N) - 1) / (ideal(N) - 1) < threshold for\n"
		"  every page kind, from the fastest judged passes (N: most threads with a\n"
		"  CPU each; ideal(N) = min(N, memset GiB/s at N threads / kernel GiB/s at\n"
		"  1)); kinds that disagree, or ideal(N) < 1.25 (no gain to judge): SKIP",
	.duration_s = 10,
	.duration_max_s = 30,
	.repeat = 3,
	.run = run,
};

/* ---- the command line (not in the mail form) ---- */

static const struct kr_option options[] = {
	KR_ARG_CUSTOM("size", "SIZE", "memory cleared per pass (default 512M; 2 MiB multiple)"),
	KR_ARG_CUSTOM("threads", "N", "most worker threads (default: online CPUs); 1, 2, 4 .. N"),
	KR_ARG_CUSTOM("chunk", "SIZE", "work unit from the shared counter (default 16M; 2 MiB multiple)"),
	KR_ARG_CUSTOM("pages", "LIST", "hugetlb,thp,4k (clearing: hugetlb,thp) or all (default)"),
	KR_ARG_CUSTOM("method", "M", "populate (MADV_POPULATE_WRITE), touch, fallocate (hugetlb)"),
	KR_ARG_CUSTOM("measure", "WHAT", "scaling (default) or clearing: 1-thread kernel clearing speed"),
	{ .name = NULL },
};

static int parse(int index, const char *arg)
{
	uint64_t *size = index ? &cfg.chunk : &cfg.size;
	const char *opt = index ? "--chunk" : "--size";
	long l;
	int i;

	switch (index) {
	case 0:
	case 2:
		cfg.size_set |= !index;
		if (kr_parse_size(opt, arg, HPAGE, 1ULL << 40, size) < 0)
			return -1;
		return *size % HPAGE ? kr_usage_error("%s: must be a multiple of 2 MiB, got "
						      "'%s'", opt, arg) : 0;
	case 1:
		if (kr_parse_long("--threads", arg, 2, MAX_THREADS, &l) < 0)
			return -1;
		cfg.threads = (int)l;
		return 0;
	case 3:
		if ((i = parse_kinds(arg)) < 0)
			return kr_usage_error("--pages: expected a list of hugetlb, thp, 4k or "
					      "'all', got '%s'", arg);
		cfg.kinds = (unsigned)i;
		cfg.kinds_set = strcmp(arg, "all"); /* all: the --measure's kinds */
		return 0;
	case 4:
		if ((i = kr_parse_choice("--method", arg, "populate|touch|fallocate")) < 0)
			return -1;
		cfg.method = (enum method)i;
		cfg.method_set = true;
		return 0;
	}
	if ((i = kr_parse_choice("--measure", arg, "scaling|clearing")) < 0)
		return -1;
	if ((cfg.clearing = i == 1)) { /* the second verdict: its own metric and rule */
		prog.metric = "clearing";
		prog.threshold = CLEARING_THRESHOLD;
		prog.rule = "FAIL when one thread of the kernel clears fresh 2 MiB hugetlb\n"
			"  pages at < threshold x rep stosb over the same memory right after\n"
			"  (median of the pass pairs; without hugetlb: the slowest kind);\n"
			"  within 0.04 of it: SKIP";
	}
	return 0;
}

static int validate(const struct kr_opts *o)
{
	enum method m = o->trigger && !cfg.method_set ? M_FALLOCATE : cfg.method;
	unsigned kinds = o->trigger && !cfg.kinds_set ? 1 << K_HUGETLB : cfg.kinds;

	if (cfg.clearing && !cfg.kinds_set)
		cfg.kinds = 1 << K_HUGETLB | 1 << K_THP;
	if (cfg.clearing && (o->trigger || cfg.method != M_POPULATE || (cfg.kinds & 1 << K_4K)))
		return kr_usage_error("--measure clearing: populates hugetlb and thp pages "
				      "with one thread (no --trigger, --method or 4k)");
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

static const struct kr_cli cli = {
	.summary = "parallel clearing of large memory vs one thread",
	.description =
		"Clears --size of fresh hugetlb, THP and 4 KiB pages (zeroed by the kernel at\n"
		"fault time) with 1, 2, 4 .. N threads taking chunks from a shared counter, each\n"
		"bound to the NUMA node of its chunk (ktask RFC); then rep stosb over the same\n"
		"memory (the ceiling) and munmap. Each kind is warmed up first (free page\n"
		"reporting makes re-faulted memory 10x slower; --csv: repeat -1).\n"
		"--trigger: fallocate() chunks of ONE hugetlbfs file from every thread;\n"
		"inode_lock serialises them: FAIL.\n"
		"--measure clearing: one thread of the kernel clearing fresh 2 MiB hugetlb and\n"
		"THP pages against rep stosb and movnti over the same memory (FAIL below 0.58\n"
		"of rep stosb: its own rule).",
	.example = "ktask_bench --size 2G --pages hugetlb,thp --threads 2 --csv scaling.csv",
	.options = options,
	.parse = parse,
	.validate = validate,
};

int main(int argc, char **argv)
{
	return kr_main(&prog, &cli, argc, argv);
}
