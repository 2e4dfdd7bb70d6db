// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: memory for the programs that time the kernel clearing it: the user-space
 * stores it is compared with, the 2 MiB hugetlb pool (journaled), and a run sized to
 * the time budget from how fast this machine clears.
 */
#include "krepro.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__x86_64__)
#include <x86intrin.h>
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

static unsigned long long pool(const char *file)
{
	char path[128];
	uint64_t v = 0;

	snprintf(path, sizeof(path), KR_HPAGE_POOL "%s", file);
	return kr_read_u64(path, &v) < 0 ? 0 : v;
}

int kr_hugetlb_reserve(uint64_t npages)
{
	static char orig[32]; /* the pool before the first change; "": unchanged */
	char val[32];

	if (!npages)
		return *orig ? kr_write_file(KR_HPAGE_POOL "nr_hugepages", orig) : 0;
	for (int i = 0;; i++) {
		unsigned long long nr = pool("nr_hugepages");
		unsigned long long got = pool("free_hugepages") - pool("resv_hugepages");
		if (got >= npages)
			return 0;
		if (i)
			return errno = ENOMEM, -1;
		if (!*orig)
			snprintf(orig, sizeof(orig), "%llu", nr);
		snprintf(val, sizeof(val), "%llu", nr + npages - got);
		if (kr_journal_write(KR_HPAGE_POOL "nr_hugepages", val) < 0)
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
