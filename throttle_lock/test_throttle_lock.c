// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: unit tests of throttle_lock's verdict rule at its edges (the limit, the
 * two inconclusive premises, --mitigate's), the version check that names e1fad12dcb66,
 * and the decisions before any measurement on each machine shape (tests/shapes/).
 */
#define main throttle_lock_main
#include "throttle_lock.c"
#undef main

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../tests/shapes.h"

static void test_rule_edges(void **state)
{
	const char *why;

	(void)state;
	/* FAIL above the limit only: a wait of half the period is not yet a stall */
	assert_int_equal(judge(0.5, 10, 20, false, 0.5, &why), KR_PASS);
	assert_null(why);
	assert_int_equal(judge(0.5001, 10, 20, false, 0.5, &why), KR_FAIL);
	assert_int_equal(judge(0.973, 7, 20, false, 0.5, &why), KR_FAIL); /* 6.1, TCG */
	assert_int_equal(judge(0.0017, 10, 20, false, 0.5, &why), KR_PASS); /* 6.18 host */
	/* --threshold moves the limit */
	assert_int_equal(judge(0.3, 10, 20, false, 0.2, &why), KR_FAIL);
	assert_int_equal(judge(0.3, 10, 20, false, 0.4, &why), KR_PASS);
}

static void test_rule_premises(void **state)
{
	const char *why;

	(void)state;
	/* no read waited: the lock was not contended, a PASS would prove nothing; nor a
	 * FAIL that no read's wait explains */
	assert_int_equal(judge(0.01, 0, 20, false, 0.5, &why), KR_SKIP);
	assert_non_null(strstr(why, "no read waited"));
	assert_int_equal(judge(0.9, 0, 20, true, 0.5, &why), KR_SKIP);
	/* never throttled: the quota was not the limit (a default run) ... */
	assert_int_equal(judge(0.01, 10, 0, false, 0.5, &why), KR_SKIP);
	assert_non_null(strstr(why, "never throttled"));
	assert_int_equal(judge(0.9, 10, 0, false, 0.5, &why), KR_SKIP);
	/* ... which --mitigate's quota of two CPUs means to be */
	assert_int_equal(judge(0.05, 32, 0, true, 0.5, &why), KR_PASS);
	assert_int_equal(judge(0.9, 32, 0, true, 0.5, &why), KR_FAIL);
}

static void test_task_based_by_version(void **state)
{
	static const char *const with[] = { "6.18.44-fc-v1272", "6.18.0", "6.19-rc1", "7.0.1" };
	static const char *const without[] = { "6.1.0-57-amd64", "6.12.118+deb12-rt-amd64",
					       "6.17.9", "5.15.0-91-generic", "4.18.0-553.el8",
					       "garbage", "" };
	(void)state;
	for (size_t i = 0; i < sizeof(with) / sizeof(*with); i++)
		assert_true(task_based_by_version(with[i]));
	for (size_t i = 0; i < sizeof(without) / sizeof(*without); i++)
		assert_false(task_based_by_version(without[i]));
}

/* on each machine shape: the program's machine_check(), then the hierarchy kr_cpu_group()
 * makes its group in (lib's choice, mirrored as fibtest's test does) */
static void throttle_lock_decide(struct shape *s)
{
	static const char *const files[] = { "proc/sys/kernel/sched_cfs_bandwidth_slice_us",
		"proc/self/mountinfo", "sys/devices/system/cpu/online", NULL };
	struct kr_cgroups cg;
	char why[300];
	int cpu, reader, r;

	shape_needs(s, files);
	if ((r = machine_check(-1, &cpu, &reader, why, sizeof(why))))
		shape_decision(s, r, why);
	else if (kr_cgroups_find(&cg) < 0 || (!cg.v2_cpu && !*cg.v1_cpu))
		shape_decision(s, 125, "no cpu controller in cgroup v1 or v2");
	else
		shape_decisionf(s, 0, "holder cpu%d reader cpu%d, cgroup v%d", cpu, reader,
				cg.v2_cpu ? 2 : 1);
}

static void machine_shapes(void **state)
{
	(void)state;
	assert_true(shapes_each("throttle_lock", throttle_lock_decide) >= 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_edges),
		cmocka_unit_test(test_rule_premises),
		cmocka_unit_test(test_task_based_by_version),
		cmocka_unit_test(machine_shapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
