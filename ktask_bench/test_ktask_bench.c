// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: unit tests of ktask_bench's verdict rule, thread points and sizing.
 */
#define main ktask_bench_main
#include "ktask_bench.c"
#undef main

#include <setjmp.h>
#include <cmocka.h>

#include "../tests/shapes.h"

static void rule_perfect_scaling_passes(void **state)
{
	double gain;
	(void)state;
	assert_int_equal(ktask_rule(1.0, 0.5, NAN, 2, 0.3, &gain), KR_PASS);
	assert_true(fabs(gain - 1.0) < 1e-12);
}

static void rule_at_threshold_passes_just_below_fails(void **state)
{
	double gain;
	(void)state;
	/* 2 threads, threshold 0.5: speedup 1.5 is exactly at the limit */
	assert_int_equal(ktask_rule(1.5, 1.0, NAN, 2, 0.5, &gain), KR_PASS);
	assert_true(fabs(gain - 0.5) < 1e-12);
	assert_int_equal(ktask_rule(1.499, 1.0, NAN, 2, 0.5, &gain), KR_FAIL);
}

static void rule_serialised_threads_fail(void **state)
{
	double gain;
	(void)state;
	/* inode_lock: two threads take as long as one */
	assert_int_equal(ktask_rule(1.0, 1.0, NAN, 2, 0.3, &gain), KR_FAIL);
	assert_true(fabs(gain) < 1e-12);
	/* slower than one thread: a negative gain */
	assert_int_equal(ktask_rule(1.0, 1.1, NAN, 2, 0.3, &gain), KR_FAIL);
	assert_true(gain < 0);
	/* 4 threads at 1.6x: 0.2 of the 3x on offer */
	assert_int_equal(ktask_rule(1.0, 1 / 1.6, NAN, 4, 0.3, &gain), KR_FAIL);
	assert_true(fabs(gain - 0.2) < 1e-12);
}

static void rule_rejects_bad_input(void **state)
{
	double gain;
	(void)state;
	assert_int_equal(ktask_rule(0, 0.5, NAN, 2, 0.3, &gain), KR_SKIP);
	assert_true(isnan(gain));
	assert_int_equal(ktask_rule(1.0, 0, NAN, 2, 0.3, &gain), KR_SKIP);
	assert_int_equal(ktask_rule(NAN, 0.5, NAN, 2, 0.3, &gain), KR_SKIP);
	assert_int_equal(ktask_rule(1.0, INFINITY, NAN, 2, 0.3, &gain), KR_SKIP);
	assert_int_equal(ktask_rule(1.0, 0.5, NAN, 1, 0.3, &gain), KR_SKIP);
}

static void disturbed_repeat_does_not_vote(void **state)
{
	(void)state;
	/* another task held a worker's CPU: no vote */
	assert_false(repeat_judged(1.0, 1.0, MAX_DELAY + 0.01));
	assert_true(repeat_judged(1.0, 1.0, MAX_DELAY));
	assert_false(repeat_judged(1.0, 0.5, NAN));
	assert_false(repeat_judged(1.0, INFINITY, 0));
	assert_false(repeat_judged(0, 0.5, 0));
}

static void rule_normalised_by_the_bandwidth_wall(void **state)
{
	double gain;
	(void)state;
	/* this AMD-hosted VM: one kernel thread at 0.7 of memset at 2 threads, ideal 1.43 */
	assert_true(fabs(ideal_speedup(1.0, 0.7, 2) - 1.0 / 0.7) < 1e-12);
	/* parallel: speedup 1.36 is 0.84 of the 0.43x gain on offer */
	assert_int_equal(ktask_rule(1.0, 1.0 / 1.36, 0.7, 2, 0.3, &gain), KR_PASS);
	assert_true(gain > 0.8 && gain < 0.9);
	/* serialised: ~0 here too, where speedup / ideal gave 0.70 (a PASS at 0.65) */
	assert_int_equal(ktask_rule(1.0, 1.0, 0.7, 2, 0.3, &gain), KR_FAIL);
	assert_true(fabs(gain) < 1e-12);
	/* kernel far below the wall (populate on Intel: 0.45 of memset): ideal is N */
	assert_true(fabs(ideal_speedup(1.0, 0.38, 2) - 2) < 1e-12);
	/* never below 1: one kernel thread already at the wall, no speedup to ask for */
	assert_true(fabs(ideal_speedup(0.5, 0.8, 4) - 1) < 1e-12);
	assert_true(fabs(ideal_speedup(1.0, 0, 4) - 4) < 1e-12);
	assert_true(fabs(ideal_speedup(1.0, INFINITY, 4) - 4) < 1e-12);
}

static void rule_too_little_gain_on_offer_skips(void **state)
{
	double gain;
	(void)state;
	/* ideal 1.18 (--method touch on an Intel-hosted VM): a serialised 1.0x and a
	 * parallel 1.17x are 0.18x apart, within the noise: SKIP, gain still shown */
	assert_int_equal(ktask_rule(1.0, 1.0 / 1.17, 0.85, 2, 0.3, &gain), KR_SKIP);
	assert_true(gain > 0.9 && gain < 1.0);
	assert_int_equal(ktask_rule(1.0, 1.0, 0.85, 2, 0.3, &gain), KR_SKIP);
	/* at the limit it is judged */
	assert_int_equal(ktask_rule(1.0, 1.0, 1 / (MIN_IDEAL + 0.01), 2, 0.3, &gain), KR_FAIL);
	/* an idle host with one thread already at the wall: ideal 1, no gain, no
	 * division by 0 (valgrind: memset 30x slower than the kernel, gain=8.7e8) */
	assert_int_equal(ktask_rule(0.5, 0.5, 0.8, 4, 0.3, &gain), KR_SKIP);
	assert_true(isnan(gain));
	assert_int_equal(ktask_rule(0.006, 0.003, 0.15, 2, 0.3, &gain), KR_SKIP);
	assert_true(isnan(gain));
	/* just above NO_IDEAL the ratio is shown */
	assert_int_equal(ktask_rule(1.0, 1.0 / 1.05, 1 / 1.06, 2, 0.3, &gain), KR_SKIP);
	assert_true(gain > 0.8 && gain < 0.9);
}

static void size_fits_the_budget(void **state)
{
	const uint64_t M = 1ULL << 20;
	(void)state;
	/* this host: ~3.2 s per GiB of the fewest passes, 512 MiB fits 8 s */
	assert_int_equal(kr_fit_size(512 * M, 16 * M, 6.4, 8), 512 * M);
	/* TCG: 0.17 GiB/s, the default scaling run ~90 s per GiB: 80 MiB of 16 MiB chunks */
	assert_int_equal(kr_fit_size(512 * M, 16 * M, 90, 8), 80 * M);
	/* not even one unit */
	assert_int_equal(kr_fit_size(512 * M, 16 * M, 1000, 8), 0);
	/* no estimate: keep the size */
	assert_int_equal(kr_fit_size(512 * M, 2 * M, NAN, 8), 512 * M);
	assert_int_equal(kr_fit_size(512 * M, 2 * M, 0, 8), 512 * M);
}

static void points_powers_of_two_then_max(void **state)
{
	int p[MAX_POINTS];
	(void)state;
	assert_int_equal(thread_points(2, p), 2);
	assert_int_equal(p[0], 1);
	assert_int_equal(p[1], 2);
	assert_int_equal(thread_points(6, p), 4);
	assert_int_equal(p[2], 4);
	assert_int_equal(p[3], 6);
	assert_int_equal(thread_points(16, p), 5);
	assert_int_equal(p[4], 16);
	assert_int_equal(thread_points(MAX_THREADS, p), 9);
	assert_int_equal(p[8], MAX_THREADS);
	assert_int_equal(thread_points(255, p), 9);
	assert_int_equal(p[7], 128);
	assert_int_equal(p[8], 255);
}

/* on each machine shape (tests/shapes/): the CPUs and page kinds a default run needs, and
 * the NUMA nodes it splits the region over */
static void ktask_decide(struct shape *s)
{
	static const char *const files[] = { "sys/devices/system/cpu/online",
		"sys/kernel/mm/transparent_hugepage/enabled", &KR_HPAGE_POOL[1] /* no '/' */,
		"sys/devices/system/node/possible", "sys/devices/system/node/node0/meminfo", NULL };
	struct kr_cpus u;
	int code, node[MAX_PARTS], ncpus = kr_usable_cpus(&u), n = mem_nodes(node, MAX_PARTS);
	bool thp_ok;
	const char *why = unfit(ncpus, 7, &thp_ok, &code);

	kr_cpus_free(&u);
	shape_needs(s, files);
	shape_decision(s, why ? code : 0, why);
	if (n <= 1)
		shape_fact(s, "numa", "one-node: placement not exercised");
	else
		shape_factf(s, "numa", "%d nodes, a part of the region each", n);
	shape_factf(s, "threads", "%d", ncpus < MAX_THREADS ? ncpus : MAX_THREADS);
	shape_fact(s, "thp", thp_ok ? "on" : "never");
}

static void machine_shapes(void **state)
{
	(void)state;
	assert_true(shapes_each("ktask_bench", ktask_decide) >= 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rule_perfect_scaling_passes),
		cmocka_unit_test(rule_at_threshold_passes_just_below_fails),
		cmocka_unit_test(rule_serialised_threads_fail),
		cmocka_unit_test(rule_rejects_bad_input),
		cmocka_unit_test(disturbed_repeat_does_not_vote),
		cmocka_unit_test(rule_too_little_gain_on_offer_skips),
		cmocka_unit_test(rule_normalised_by_the_bandwidth_wall),
		cmocka_unit_test(size_fits_the_budget),
		cmocka_unit_test(points_powers_of_two_then_max),
		cmocka_unit_test(machine_shapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
