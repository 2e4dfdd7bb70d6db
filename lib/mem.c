// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: memory for the programs that time the kernel clearing it: the user-space
 * stores it is compared with, the 2 MiB hugetlb pool (journaled), and a run sized to
 * the time budget from how fast this machine clears.
 */
#include "krepro.h"
#include "internal.h"

#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__x86_64__)
#include <emmintrin.h> /* SSE2: movnti, sfence (x86intrin.h parses 10x slower) */
#endif

void kr_fill(void *p, size_t n, bool nt)
{
#if defined(__x86_64__)
	if (!nt) {
		__asm__ volatile("rep stosb" : "+D"(p), "+c"(n) : "a"(0x5a) : "memory");
		return;
	}
	for (long long *q = p, *end = (long long *)((char *)p + n); q < end; q += 4)
		for (int i = 0; i < 4; i++) /* unrolled: 1 store a loop ran at 3/4 the speed */
			_mm_stream_si64(q + i, 0x5a5a5a5a5a5a5a5aLL);
	_mm_sfence();
#else
	(void)nt;
	memset(p, 0x5a, n);
#endif
}

long long kr_proc_kb(const char *path, const char *key)
{
	static char text[16384];
	uint64_t v;

	return kr_read_file(path, text, sizeof(text)) < 0 || kr_kv_get(text, key, &v) ? -1
											: (long long)v;
}

const char *kr_sysfs = "/sys"; /* tests point it at a tree of their own (internal.h) */
#define POOL "/kernel/mm/hugepages/hugepages-2048kB/" /* KR_HPAGE_POOL under kr_sysfs */
/* a node's 2 MiB pool under kr_sysfs: the printf format of its files (%s kr_sysfs, %d node) */
#define NODE_POOL "%s/devices/system/node/node%d/hugepages/hugepages-2048kB/"

/* a file of the 2 MiB pool: its path, or its number (0 if unreadable) */
static const char *pool_path(const char *file)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s" POOL "%s", kr_sysfs, file);
	return path;
}

static unsigned long long pool(const char *file)
{
	uint64_t v = 0;

	return kr_read_u64(pool_path(file), &v) < 0 ? 0 : v;
}

/* The pool's count on each node before the first change (without NUMA: the global
 * count), given back node by node. The kernel grows the global count interleaved over
 * the nodes and shrinks it round-robin over those with free pages: restoring it alone
 * moves pages between nodes (node0 0, node1 512, as a DPDK or KVM host sets them, can
 * come back 256/256). The global write only adds pages to a node, so each node's restore only
 * frees pages on that node: never more than were there, in any order. */
static glob_t saved; /* the count files; gl_pathc 0: nothing changed */
static char (*was)[32]; /* their counts */

static int give_back(bool write)
{
	int r = 0;

	for (size_t i = 0; write && i < saved.gl_pathc; i++)
		r |= kr_write_file(saved.gl_pathv[i], was[i]);
	globfree(&saved);
	free(was);
	saved.gl_pathc = 0, saved.gl_pathv = NULL, was = NULL;
	return r;
}

/* journal each count as its undo only: the global write changes them */
static int save(void)
{
	char pat[512];

	snprintf(pat, sizeof(pat), "%s/devices/system/node/node[0-9]*/hugepages/"
		 "hugepages-2048kB/nr_hugepages", kr_sysfs); /* NODE_POOL's, every node */
	if (glob(pat, 0, NULL, &saved) && glob(pool_path("nr_hugepages"), 0, NULL, &saved))
		return errno = ENOENT, -1;
	if (!(was = calloc(saved.gl_pathc, sizeof(*was))))
		return give_back(false), -1;
	for (size_t i = 0; i < saved.gl_pathc; i++)
		if (kr_read_file(saved.gl_pathv[i], was[i], sizeof(*was)) < 0 ||
		    kr_journal_write_undo(saved.gl_pathv[i], NULL, was[i]) < 0)
			return give_back(false), -1;
	return 0;
}

int kr_hugetlb_reserve(uint64_t npages)
{
	char val[32];

	if (!npages)
		return give_back(true);
	for (int i = 0;; i++) {
		unsigned long long nr = pool("nr_hugepages");
		unsigned long long got = pool("free_hugepages") - pool("resv_hugepages");
		if (got >= npages)
			return 0;
		if (i)
			return errno = ENOMEM, -1;
		snprintf(val, sizeof(val), "%llu", nr + npages - got);
		if ((!saved.gl_pathc && save() < 0) ||
		    kr_write_file(pool_path("nr_hugepages"), val) < 0)
			return -1;
	}
}

int kr_hugetlb_reserve_node(int node, uint64_t npages)
{
	char nr_path[512], free_path[512], val[32];
	uint64_t nr = 0, got = 0;

	snprintf(nr_path, sizeof(nr_path), NODE_POOL "nr_hugepages", kr_sysfs, node);
	snprintf(free_path, sizeof(free_path), NODE_POOL "free_hugepages", kr_sysfs, node);
	for (int i = 0;; i++) {
		if (kr_read_u64(nr_path, &nr) < 0 || kr_read_u64(free_path, &got) < 0)
			return -1;
		if (got >= npages)
			return 0;
		if (i)
			return errno = ENOMEM, -1;
		snprintf(val, sizeof(val), "%llu", (unsigned long long)(nr + npages - got));
		if ((!saved.gl_pathc && save() < 0) || kr_write_file(nr_path, val) < 0)
			return -1;
	}
}

double kr_clear_s_per_gib(bool huge)
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
		kr_fill(p, n, false);
		double s = (double)(kr_now_ns() - t0) / 1e9;
		munmap(p, n);
		best = i ? fmin(best, s) : best; /* the first pass may meet cold memory */
	}
	return best / ((double)n / (1 << 30));
}

uint64_t kr_fit_size(uint64_t size, uint64_t unit, double s_per_gib, double budget)
{
	double fits = budget / s_per_gib * (1 << 30);

	if (!(s_per_gib > 0) || !isfinite(s_per_gib) || fits >= (double)size)
		return size;
	return (uint64_t)(fits / (double)unit) * unit;
}

int kr_mem_budget(uint64_t *size, uint64_t dflt, uint64_t unit, double clear_s, double passes,
		  double budget)
{
	unsigned long long want = *size ? *size : dflt;
	unsigned long long fit = kr_fit_size(want, unit, clear_s * passes, budget);
	double need_s = clear_s * passes * (double)want / (1 << 30), gib = 1 << 30;

	if (fit < want && *size && need_s > 0.8 * (kr_hard_cap_s() - 5))
		return kr_skip(KR_EXIT_SKIP, "clearing runs at %.2f GiB/s here: --size %llu MiB "
			       "needs ~%.0f s, beyond the hard cap of %.0f s; try --size %lluM",
			       1 / clear_s, want >> 20, need_s, kr_hard_cap_s(), fit >> 20);
	if (!*size && fit < 2 * unit)
		return kr_skip(KR_EXIT_SKIP, "clearing runs at %.2f GiB/s here (emulated CPU?): "
			       "not even %llu MiB fits the time budget of %.0f s", 1 / clear_s,
			       (unsigned long long)unit >> 19, budget);
	if (!*size && fit < want)
		kr_say("clearing runs at %.2f GiB/s here: --size %llu MiB, not %llu, fits the\n"
		       "  time budget of %.0f s (--duration)", 1 / clear_s, fit >> 20, want >> 20,
		       budget);
	*size = *size ? *size : fit;
	double avail = (double)kr_proc_kb("/proc/meminfo", "MemAvailable") * 1024;
	if (avail < (double)*size + 512 * 1048576.0)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "needs %.1f GiB of available memory, has "
			       "%.1f GiB; try a smaller --size", (double)*size / gib + 0.5,
			       avail / gib);
	return 0;
}
