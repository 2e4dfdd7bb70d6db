// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: parallel, NUMA-aware clearing of large memory against one thread (ktask).
 *
 * The kernel zeroes memory at fault time (folio_zero_user) in the faulting thread: the
 * ktask RFC (Daniel Jordan, 2017; never merged) took 41 s for 100 GiB of huge pages on
 * one thread, 2.0x less on 2, 10x on 16. So a process clears in parallel itself: threads
 * fault in disjoint chunks (MADV_POPULATE_WRITE, 5.14), each on its chunk's node. That
 * scales unless the kernel serialises them: hugetlbfs_fallocate() holds inode_lock for
 * the whole call (--trigger: chunks of ONE hugetlbfs file from every thread).
 * A KVM guest hands freed memory to the host (free page reporting), slow to re-fault:
 * each page kind is warmed up once, then its timed passes run back to back.
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

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define HUGE_2MB (21 << 26) /* MAP_HUGE_2MB, MFD_HUGE_2MB */
#define HPAGE (2ULL << 20)
#define GIB (1024.0 * 1024 * 1024)
#define MAX_THREADS 256
#define MAX_POINTS 10 /* 1, 2, 4 .. 256 and one more */
#define MAX_PARTS 64  /* NUMA nodes with memory */
#define MAX_REPEAT 100
#define MAX_DELAY 0.10 /* workers waited longer for a CPU: other tasks, no vote */
#define MIN_IDEAL 1.25 /* less gain on offer: serialised and parallel look alike */
#define NO_IDEAL 1.05  /* less: the gain is noise / ~0 */
#define PASSES 2       /* per point and repeat (A B A B); the fastest counts */

enum kind { K_HUGETLB, K_THP, K_4K, NKINDS };
static const char *const kind_names[NKINDS] = { "hugetlb", "thp", "4k" };
enum method { M_POPULATE, M_TOUCH, M_FALLOCATE };
static const char *const method_names[] = { "populate", "touch", "fallocate" };

/* 0: 512 MiB or what fits the time budget; the usable CPUs. pages: 1-3 one kind, 0 all,
 * -1 all (--trigger: hugetlb). method -1: populate (--trigger: fallocate) */
static struct {
	uint64_t size, chunk;
	long threads;
	int pages, method;
} cfg = { .size = 0, .chunk = 16ULL << 20, .threads = 0, .pages = -1, .method = -1 };

/* the full program's CSV, tables and notes (main() sets them; NULL in the mail form) */
static struct {
	int (*start)(unsigned kinds);
	void (*pass)(int kind, int point, int rep, int pass);
	void (*kind)(int kind, int nrep, int judged);
	void (*run)(void);
} full;

/* ---- the rules (unit tested) ---- */

/* n threads' speedup, unless rep stosb (mn s at n threads) hits the bandwidth wall first */
static double ideal_speedup(double t1, double mn, int n)
{
	return mn > 0 && isfinite(mn) ? fmax(1, fmin(n, t1 / mn)) : n;
}

/* A repeat votes when both passes ran and no worker waited long for a CPU */
static bool repeat_judged(double t1, double tn, double delay)
{
	return t1 > 0 && tn > 0 && isfinite(t1) && isfinite(tn) && delay <= MAX_DELAY;
}

/* gain = (speedup - 1) / (ideal - 1): serialised ~0, parallel ~1 whatever ideal is */
static enum kr_verdict ktask_rule(double t1, double tn, double mn, int n, double threshold,
				  double *gain)
{
	double ideal = ideal_speedup(t1, mn, n);

	*gain = NAN;
	if (!repeat_judged(t1, tn, 0) || n < 2)
		return KR_SKIP;
	if (ideal >= NO_IDEAL)
		*gain = (t1 / tn - 1) / (ideal - 1);
	if (ideal < MIN_IDEAL)
		return KR_SKIP;
	return *gain < threshold ? KR_FAIL : KR_PASS;
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

/* ---- the workers ---- */

static struct {
	char *base, *map; /* map: with the THP alignment slack */
	int fd;		  /* fallocate's hugetlbfs file */
	uint64_t size, chunk, stride;
	enum method method;
	bool clear; /* the kernel clears, else rep stosb */
	int nparts, node[MAX_PARTS];
	uint64_t end[MAX_PARTS]; /* the chunk where NUMA part i ends */
	_Atomic uint64_t next[MAX_PARTS];
	pthread_barrier_t go;
	_Atomic int err;
	/* the last cycle: clear and rep stosb s, the share of the clear that workers waited
	 * for a CPU, the share of THP */
	double t[2], delay, huge;
} job;

static struct worker { int part; pthread_t th; uint64_t wait_ns; int64_t t0, t1; }
	wk[MAX_THREADS];
static bool numa_ok;

static int do_chunk(uint64_t off, uint64_t len)
{
	char *p = job.base + off;

	if (!job.clear)
		kr_fill(p, len, false);
	else if (job.method == M_FALLOCATE)
		return fallocate(job.fd, 0, (off_t)off, (off_t)len);
	else if (job.method == M_POPULATE)
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

/* the byte where NUMA part p of the region ends */
static uint64_t part_end(int p)
{
	return job.end[p] * job.chunk < job.size ? job.end[p] * job.chunk : job.size;
}

/* The 2 MiB pages the region needs: on NUMA, each part's on its node, where cycle()
 * binds it (a global count spreads them evenly: a node short of its part's pages, and
 * the fault fails with EFAULT, 2 nodes of a TCG guest); fallocate's file is not bound */
static int reserve_hugetlb(void)
{
	if (!numa_ok || job.nparts < 2 || job.method == M_FALLOCATE)
		return kr_hugetlb_reserve(job.size / HPAGE);
	uint64_t b = 0;

	for (int p = 0; p < job.nparts; b = part_end(p++))
		if (kr_hugetlb_reserve_node(job.node[p], (part_end(p) - b + HPAGE - 1) / HPAGE) < 0)
			return -1;
	return 0;
}

/* One pass of n workers, first start to last end: seconds, or -1 with errno */
static double run_pass(bool clear, int n)
{
	int64_t t0 = INT64_MAX, t1 = 0;
	double waited = 0;

	job.clear = clear;
	atomic_store(&job.err, 0);
	for (int p = 0; p < job.nparts; p++)
		atomic_store(&job.next[p], p ? job.end[p - 1] : 0);
	pthread_barrier_init(&job.go, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		wk[i].part = i % job.nparts;
		if (kr_thread_start(&wk[i].th, -1, SCHED_OTHER, 0, worker_main, &wk[i]) < 0) {
			kr_warn("cannot start a worker: %s", strerror(errno));
			abort(); /* the harness restores; a half-started barrier cannot be undone */
		}
	}
	pthread_barrier_wait(&job.go);
	for (int i = 0; i < n; i++) {
		pthread_join(wk[i].th, NULL);
		t0 = wk[i].t0 < t0 ? wk[i].t0 : t0;
		t1 = wk[i].t1 > t1 ? wk[i].t1 : t1;
		waited += (double)wk[i].wait_ns / 1e9;
	}
	pthread_barrier_destroy(&job.go);
	if (clear)
		job.delay = waited / ((double)(t1 - t0) / 1e9 * n);
	return (errno = atomic_load(&job.err)) ? -1 : (double)(t1 - t0) / 1e9;
}

/* ---- the measurement ---- */

static int npoints, points[MAX_POINTS], vp; /* N = points[vp] */

/* Fresh memory of kind k: the kernel clears it with n threads, then at N rep stosb
 * over it (job.t; else NAN). fallocate: of one hugetlbfs file. 0 or an exit code. */
static int cycle(int k, int n)
{
	bool fa = job.method == M_FALLOCATE;
	int flags = fa ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS |
		    (k == K_HUGETLB ? MAP_HUGETLB | HUGE_2MB : 0);
	uint64_t b = 0, maplen = job.size + (k == K_THP ? HPAGE : 0); /* THP: 2 MiB aligned */

	job.stride = k == K_4K ? 4096 : HPAGE;
	job.fd = fa ? memfd_create("krepro-ktask_bench", MFD_HUGETLB | HUGE_2MB | MFD_CLOEXEC) : -1;
	job.map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, flags, job.fd, 0);
	job.base = k != K_THP ? job.map : (char *)(((uintptr_t)job.map + HPAGE - 1) & ~(HPAGE - 1));
	if (job.map == MAP_FAILED || (k != K_HUGETLB && madvise(job.base, job.size,
	    k == K_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) < 0))
		return kr_error("cannot map %s pages: %s", kind_names[k], strerror(errno));
	for (int p = 0; numa_ok && !fa && p < job.nparts; b = part_end(p++)) /* each on its node */
		numa_tonode_memory(job.base + b, (size_t)(part_end(p) - b), job.node[p]);
	if ((job.t[0] = run_pass(true, n)) < 0)
		return kr_error("clearing %s pages: %s", kind_names[k], strerror(errno));
	job.huge = k != K_THP ? 1 : kr_proc_kb("/proc/self/smaps_rollup", "AnonHugePages") *
				    1024.0 / (double)job.size;
	/* two passes: a first access sets each PTE's accessed bit, ~6 us a page
	 * under a host's shadow paging (Firecracker, issue 41) */
	job.t[1] = NAN;
	if (n == points[vp]) {
		double a = fa && madvise(job.map, job.size, MADV_POPULATE_WRITE) < 0 ? -1
										 : run_pass(false, n);
		if (a < 0 || (job.t[1] = fmin(a, run_pass(false, n))) < 0)
			return kr_error("rep stosb: %s", strerror(errno));
	}
	munmap(job.map, maplen);
	if (fa)
		close(job.fd);
	return 0;
}

/* Kind k: a warm-up, then its repeats back to back (the memory a pass frees is reused
 * before the host takes it) within left s. A repeat counts, with its fastest pass per
 * point, when no worker waited long for a CPU (other tasks; with fallocate the waits are
 * inode_lock's, the phenomenon). The kind votes from its fastest judged passes: noise
 * only adds time, a lock that serialises shows in every pass. 0 or an exit code. */
static int kind_vote(int k, const struct kr_opts *o, double left, enum kr_verdict *vote,
		     double *gain, double *ideal)
{
	double t1 = INFINITY, tn = INFINITY, mn = INFINITY;
	int r, i, n = points[vp], judged = 0;
	int64_t start = kr_now_ns(), last = 0;

	if (k == K_HUGETLB && reserve_hugetlb() < 0)
		return errno != ENOMEM ? kr_error("vm.nr_hugepages: %s", strerror(errno)) :
		       kr_skip(KR_EXIT_SKIP_MACHINE, "cannot reserve the 2 MiB pages "
			       "(memory fragmented)");
	if ((r = cycle(k, n)))
		return r;
	if (full.pass)
		full.pass(k, vp, -1, 0);
	if (job.huge < 0.9)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "only %.0f%% of the region got THPs "
			       "(memory fragmented)", 100 * job.huge);
	for (i = 0; i < o->repeat; i++) {
		int64_t t0 = kr_now_ns();
		double c[MAX_POINTS], d[MAX_POINTS], m = INFINITY; /* clear s, delay */
		if (i && (double)(t0 - start + last) / 1e9 > left)
			break; /* fewer repeats than asked fit the budget */
		for (int pass = 0; pass < PASSES * npoints; pass++) {
			int p = pass % npoints;
			if ((r = cycle(k, points[p])))
				return r;
			if (full.pass)
				full.pass(k, p, i, pass / npoints);
			if (pass < npoints || job.t[0] < c[p]) /* the first or faster */
				c[p] = job.t[0], d[p] = job.delay;
			m = p == vp ? fmin(m, job.t[1]) : m;
		}
		last = kr_now_ns() - t0;
		if (repeat_judged(c[0], c[vp], job.method == M_FALLOCATE ? 0 : fmax(d[0], d[vp])))
			judged++, t1 = fmin(t1, c[0]), tn = fmin(tn, c[vp]), mn = fmin(mn, m);
	}
	if (k == K_HUGETLB) /* give the pool back: warm memory for the next kind */
		kr_hugetlb_reserve(0);
	*vote = ktask_rule(t1, tn, mn, n, o->threshold, gain);
	*ideal = ideal_speedup(t1, mn, n);
	if (full.kind)
		full.kind(k, i, judged);
	kr_say("%s: %d of %d repeats judged: speedup %.2fx, ideal %.2fx, gain %.2f",
	       kind_names[k], judged, i, t1 / tn, *ideal, *gain);
	return 0;
}

/* Each kind in its share of the time budget; the metric: the lowest gain */
static int measure(const struct kr_opts *o, unsigned kinds, double budget)
{
	double metric = INFINITY, gain = NAN, ideal = NAN;
	int r, n = points[vp], nvotes = 0, npass, nfail, kinds_left = __builtin_popcount(kinds);
	const char *unjudged = NULL, *blind = NULL;
	enum kr_verdict votes[NKINDS];
	int64_t start = kr_now_ns();

	for (int k = 0; k < NKINDS; k++) {
		if (!(kinds & 1 << k))
			continue;
		double left = (budget - (double)(kr_now_ns() - start) / 1e9) / kinds_left--;
		if ((r = kind_vote(k, o, left, &votes[nvotes++], &gain, &ideal)))
			return r;
		if (ideal < MIN_IDEAL) /* judged repeats, too little on offer */
			blind = kind_names[k];
		else if (isnan(gain))
			unjudged = kind_names[k];
		metric = isnan(gain) ? metric : fmin(metric, gain);
	}
	if (full.run)
		full.run();
	kr_measure("gain", metric);
	enum kr_verdict v = kr_vote(votes, nvotes, &npass, &nfail);
	if (unjudged)
		return kr_inconclusive(isfinite(metric) ? metric : NAN, "every %s repeat "
				       "disturbed", unjudged);
	if (blind)
		return kr_inconclusive(metric, "%s: ideal speedup < %.2fx: memory bandwidth "
				       "does not scale to %d threads here", blind, MIN_IDEAL, n);
	if (v == KR_SKIP)
		return kr_inconclusive(metric, "%d page kinds pass, %d fail", npass, nfail);
	return kr_verdict(v, metric, "N=%d method=%s", n, method_names[job.method]);
}

/* ---- preconditions, the size that fits the time budget, the run ---- */

/* what the machine must have for the page kinds asked (*thp_ok: THP, not never): NULL,
 * or why not with the SKIP's *code */
static const char *unfit(int ncpus, unsigned kinds, bool *thp_ok, int *code)
{
	char thp[256] = "", v[32];

	kr_read_file("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp));
	*thp_ok = *thp && !strstr(thp, "[never]");
	*code = ncpus < 2 ? KR_EXIT_SKIP_MACHINE : KR_EXIT_SKIP;
	if (ncpus < 2)
		return "only one usable CPU";
	if (kinds & 1 << K_HUGETLB && kr_read_file(KR_HPAGE_POOL "nr_hugepages", v, sizeof(v)) < 0)
		return "needs 2 MiB hugetlb pages (CONFIG_HUGETLBFS)";
	return kinds & 1 << K_THP && !*thp_ok ? "needs THP (CONFIG_TRANSPARENT_HUGEPAGE, not never)"
					       : NULL;
}

/* the NUMA nodes with memory (as libnuma reads them): a part and its workers each */
static int mem_nodes(int *node, int max)
{
	char p[80], key[32], list[256] = "0"; /* the highest possible ends it: "0,2-3" */
	size_t e = (kr_read_file("/sys/devices/system/node/possible", list, sizeof(list)),
		    strlen(list));
	int n = 0;

	while (e > 0 && strchr("0123456789", list[e - 1]))
		e--;
	for (int i = 0, top = atoi(list + e); i <= top && n < max; i++) {
		snprintf(p, sizeof(p), "/sys/devices/system/node/node%d/meminfo", i);
		snprintf(key, sizeof(key), "Node %d MemTotal", i);
		if (kr_proc_kb(p, key) > 0)
			node[n++] = i;
	}
	return n;
}

static int run(const struct kr_opts *o)
{
	struct kr_cpus usable; /* this process's affinity (cpusets) x the online CPUs */
	int ncpus = kr_usable_cpus(&usable), r;
	unsigned kinds = cfg.pages > 0 ? 1u << (cfg.pages - 1) : o->trigger && cfg.pages < 0 ?
			 1 << K_HUGETLB : 7;
	int nthreads = (int)(cfg.threads ? cfg.threads : ncpus < MAX_THREADS ? ncpus : MAX_THREADS);
	bool thp_ok;
	const char *why = unfit(ncpus, kinds, &thp_ok, &r);

	kr_cpus_free(&usable);
	job.method = cfg.method >= 0 ? cfg.method : o->trigger ? M_FALLOCATE : M_POPULATE;
	kr_env_standard((const char *const[]){ "group:memory", "group:numa",
		"config:CONFIG_PAGE_REPORTING", NULL });
	if (why)
		return kr_skip(r, "%s", why);
	/* length 0: EINVAL only from a kernel that does not know the advice */
	if (job.method == M_POPULATE && madvise(NULL, 0, MADV_POPULATE_WRITE) < 0)
		return kr_skip(KR_EXIT_SKIP, "needs MADV_POPULATE_WRITE (Linux 5.14)");

	/* The size whose warm-ups and one repeat fit the time budget (the default: 2 s
	 * left for the rest) at the clearing speed probed, in passes of huge pages */
	double budget = o->duration_s - 2 * (o->duration_s == kr_program()->duration_s);
	double s_huge = kr_clear_s_per_gib(thp_ok), passes = 0;
	double s_4k = kinds & 1 << K_4K ? kr_clear_s_per_gib(false) : 0;
	uint64_t size = cfg.size;
	npoints = thread_points(nthreads, points);
	for (int k = 0; k < NKINDS; k++)
		if (kinds & 1 << k)
			passes += (k == K_4K ? s_4k / s_huge : 1) * (2 + PASSES * npoints);
	if ((r = kr_mem_budget(&size, 512ULL << 20, cfg.chunk, s_huge, passes, budget)))
		return r;
	uint64_t nchunks = (size + cfg.chunk - 1) / cfg.chunk; /* more threads would wait */
	nthreads = (uint64_t)nthreads > nchunks ? (int)nchunks : nthreads;

	numa_ok = numa_available() >= 0;
	job.nparts = numa_ok ? mem_nodes(job.node, MAX_PARTS) : 0;
	job.nparts = job.nparts ? job.nparts : 1;
	for (int i = 0; i < job.nparts; i++)
		job.end[i] = nchunks * (uint64_t)(i + 1) / (uint64_t)job.nparts;
	job.size = size;
	job.chunk = cfg.chunk;
	npoints = thread_points(nthreads, points);
	for (vp = npoints - 1; points[vp] > ncpus; vp--)
		;
	return full.start && (r = full.start(kinds)) ? r : measure(o, kinds, budget);
}

static const struct kr_prog prog = {
	.name = "ktask_bench",
	.flags = KR_NEEDS_ROOT | KR_OPT_REPEAT | KR_OPT_TRIGGER,
	.metric = "gain", .unit = "", .fail_below = true,
	/* serialised ~0 (-0.14-0.16 Intel-hosted, ideal ~2); healthy 0.44-0.98 */
	.threshold = 0.3, .threshold_min = 0.01, .threshold_max = 1.0,
	.rule = "FAIL when the gain (speedup(N) - 1) / (ideal(N) - 1) < threshold for\n"
		"  every page kind, from the fastest judged passes (N: most threads with a\n"
		"  CPU each; ideal(N) = min(N, rep stosb GiB/s at N threads / kernel GiB/s\n"
		"  at 1)); kinds that disagree, or ideal(N) < 1.25 (no gain to judge): SKIP",
	.duration_s = 10, .duration_max_s = 30, .repeat = 3, .run = run,
};

/* ---- the command line (not in the mail form) ---- */

/* per kind, point and repeat: clear and rep stosb s, the fastest passes (the table) */
static double tm[NKINDS][2][MAX_POINTS][MAX_REPEAT];
static double huge_min[NKINDS] = { 1, 1, 1 }; /* the lowest share of THP seen */
static bool cut; /* fewer repeats than asked fit the time budget */

/* the parameters the run derived, the CSV file */
static int full_start(unsigned kinds)
{
	kr_params("size=%.2fGiB chunk=%lluMiB threads=%d method=%s pages=%s repeat=%d",
		  job.size / GIB, (unsigned long long)(job.chunk >> 20), points[npoints - 1],
		  method_names[job.method], kinds == 7 ? "hugetlb,thp,4k" :
		  kind_names[__builtin_ctz(kinds)], kr_options()->repeat);
	if (kr_csv_open("pages,method,threads,repeat,pass,clear_s,memset_s,run_delay"))
		return kr_error("cannot write the CSV file: %s", strerror(errno));
	return 0;
}

static void full_pass(int k, int p, int rep, int pass)
{
	kr_csv_row("%s,%s,%d,%d,%d,%.6f,%.6f,%.3f", kind_names[k], method_names[job.method],
		   points[p], rep, pass, job.t[0], job.t[1], job.delay);
	huge_min[k] = fmin(huge_min[k], job.huge);
	for (int q = 0; rep >= 0 && q < 2; q++)
		tm[k][q][p][rep] = pass ? fmin(tm[k][q][p][rep], job.t[q]) : job.t[q];
}

/* the kind's table: every point, before its vote is printed */
static void kind_table(int k, int nrep, int judged)
{
	static const char *const how[] = { "MADV_POPULATE_WRITE", "first touch",
					   "fallocate, 1 file" };
	static int shown;
	double gib = job.size / GIB, t1 = INFINITY;

	cut |= nrep < kr_options()->repeat;
	kr_say("%s%s: %s, %.2f GiB in %llu MiB chunks, %d repeat%s", shown++ ? "\n" : "",
	       kind_names[k], how[job.method], gib, (unsigned long long)(job.chunk >> 20),
	       nrep, nrep > 1 ? "s" : "");
	kr_say("thr speedup   min s  med s  stdev  GiB/s   stosb  clear/\n"
	       "                                           GiB/s   stosb");
	for (int r = 0; r < nrep; r++)
		t1 = fmin(t1, tm[k][0][0][r]);
	for (int i = 0; i < npoints; i++) {
		struct kr_stats s[2];
		double v[2][MAX_REPEAT];
		char sp[16] = "      -", st[32] = "      -       -"; /* rep stosb: at N only */
		for (int q = 0; q < 1 + (i == vp); q++) { /* a copy: kr_stats sorts */
			memcpy(v[q], tm[k][q][i], sizeof(v[q]));
			kr_stats(v[q], (size_t)nrep, &s[q]);
		}
		if (i)
			snprintf(sp, sizeof(sp), "%6.2fx", t1 / s[0].min);
		if (i == vp)
			snprintf(st, sizeof(st), "%7.2f %7.2f", gib / s[1].min, s[1].min / s[0].min);
		kr_say("%3d %s %7.3f %6.3f %6.3f %6.2f %s", points[i], sp, s[0].min, s[0].median,
		       nrep > 1 ? s[0].stdev : 0, gib / s[0].min, st);
	}
	if (nrep > judged)
		kr_say("%d repeat%s not judged: workers waited >%.0f%% of a pass for a CPU",
		       nrep - judged, nrep - judged > 1 ? "s" : "", 100 * MAX_DELAY);
	if (huge_min[k] < 0.9)
		kr_say("warning: only %.0f%% of the region was THP in a pass", 100 * huge_min[k]);
}

/* where the run stands: NUMA, oversubscription, the budget, what the metric is */
static void run_notes(void)
{
	struct kr_cpus usable;
	int ncpus = kr_usable_cpus(&usable), n = points[vp], nthreads = points[npoints - 1];

	kr_cpus_free(&usable);
	if (job.nparts == 1)
		kr_say("one NUMA node with memory: NUMA placement not exercised");
	else
		kr_say("%d NUMA nodes: each worker bound to the node of its chunks", job.nparts);
	if (nthreads > ncpus)
		kr_say("%d threads > %d CPUs: points above %d oversubscribe, not judged",
		       nthreads, ncpus, n);
	if (cut)
		kr_say("fewer than %d repeats fit in the time budget (--duration)",
		       kr_options()->repeat);
	kr_say("gain = (speedup - 1) / (ideal - 1) at %d threads; the metric is the", n);
	kr_say("lowest over the page kinds");
}

static const struct kr_option options[] = {
	KR_ARG_SIZE("size", cfg.size, HPAGE, 1ULL << 40,
		    "memory cleared per pass (default 512M, less where it does not fit "
		    "--duration; 2 MiB multiple)"),
	KR_ARG_LONG("threads", "N", cfg.threads, 2, MAX_THREADS,
		    "most worker threads (default: the usable CPUs); 1, 2, 4 .. N"),
	KR_ARG_SIZE("chunk", cfg.chunk, HPAGE, 1ULL << 40,
		    "work unit from the shared counter (default 16M; 2 MiB multiple)"),
	KR_ARG_CHOICE("pages", "all|hugetlb|thp|4k", cfg.pages,
		      "page kinds (default all; --trigger: hugetlb)"),
	KR_ARG_CHOICE("method", "populate|touch|fallocate", cfg.method,
		      "MADV_POPULATE_WRITE (default), the last byte of each page, or "
		      "fallocate() of one hugetlbfs file (--trigger)"),
	{ .name = NULL },
};

static int validate(const struct kr_opts *o)
{
	int m = cfg.method >= 0 ? cfg.method : o->trigger ? M_FALLOCATE : M_POPULATE;
	int pages = cfg.pages >= 0 ? cfg.pages : o->trigger; /* --trigger: 1, hugetlb */

	if (cfg.size % HPAGE || cfg.chunk % HPAGE)
		return kr_usage_error("--%s: must be a multiple of 2 MiB",
				      cfg.size % HPAGE ? "size" : "chunk");
	if (m == M_FALLOCATE && pages != 1)
		return kr_usage_error("--method fallocate works on hugetlb pages only "
				      "(--pages hugetlb)");
	if (o->trigger && cfg.method >= 0 && cfg.method != M_FALLOCATE)
		return kr_usage_error("--trigger clears by fallocate; it cannot take --method %s",
				      method_names[cfg.method]);
	if (cfg.size && cfg.chunk > cfg.size)
		return kr_usage_error("--chunk (%llu MiB) is larger than --size",
				      (unsigned long long)(cfg.chunk >> 20));
	return 0;
}

/* on FAIL: what this run's method is known to serialise on first */
static void causes(const struct kr_opts *o)
{
	if (cfg.method == M_FALLOCATE || (cfg.method < 0 && o->trigger))
		kr_cause("hugetlbfs_fallocate() holds inode_lock for the whole call: the "
			 "threads' chunks of one file take turns");
	kr_cause("a lock shared by the faulting threads (e.g. zone->lock, the mmap lock)");
}

int main(int argc, char **argv)
{
	static const struct kr_cli cli = {
		.summary = "parallel clearing of large memory vs one thread",
		.description =
			"Clears --size of fresh hugetlb, THP and 4 KiB pages (zeroed by the kernel\n"
			"at fault time) with 1, 2, 4 .. N threads taking chunks from a shared\n"
			"counter, each bound to the NUMA node of its chunk (ktask RFC); then rep\n"
			"stosb over the same memory (the ceiling). Each kind is warmed\n"
			"up first (free page reporting makes re-faulted memory 10x slower; --csv:\n"
			"repeat -1).\n"
			"--trigger: fallocate() chunks of ONE hugetlbfs file from every thread;\n"
			"inode_lock serialises them: FAIL.\n"
			"How fast one thread of the kernel clears a huge page against rep stosb\n"
			"is clear_pages' verdict.",
		.example = "ktask_bench --size 2G --pages thp --threads 2 --csv scaling.csv",
		.options = options,
		.validate = validate,
		.causes = causes,
		.subsystem = "mm", .kernel_file = "mm/memory.c",
		.mail_list = "linux-mm@kvack.org",
	};
	full.start = full_start;
	full.pass = full_pass;
	full.kind = kind_table;
	full.run = run_notes;
	return kr_main(&prog, &cli, argc, argv);
}
