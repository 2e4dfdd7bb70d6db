// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: unit test of rt_starve's verdict rule, probe classification and RTT summary.
 */
#define main rt_starve_main
#include "rt_starve.c"
#undef main

#include <setjmp.h>
#include <cmocka.h>

static struct rtt_summary summary(int sent, int got, double p99, double max)
{
	struct rtt_summary s = { .sent = sent, .got = got, .min = 0.05, .p50 = 0.1,
				 .p99 = p99, .max = max, .over50 = 0 };
	return s;
}

/* FAIL needs both: above the absolute limit and above ratio x out-of-window p99 */
static void test_rule_edges(void **state)
{
	(void)state;
	struct rtt_summary out = summary(120, 120, 0.2, 0.3);
	struct rtt_summary in = summary(100, 100, 400, 500);

	assert_int_equal(rt_starve_rule(&in, &out, 20, 10), KR_FAIL);
	in.max = 20.0; /* equal to the limit: not above it */
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10), KR_PASS);
	in.max = 20.001;
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10), KR_FAIL);
	/* a noisy baseline: 25 ms in the window is not 10x a 3 ms p99 */
	out.p99 = 3.0;
	in.max = 25;
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10), KR_PASS);
	in.max = 30.001;
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10), KR_FAIL);
	in.max = 30.0;
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10), KR_PASS);
	/* the healthy figures of this machine */
	out = summary(132, 132, 0.26, 0.4);
	in = summary(100, 100, 0.2, 2.8);
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10), KR_PASS);
}

/* too few echoes on either side: no verdict from this repeat */
static void test_rule_inconclusive(void **state)
{
	(void)state;
	struct rtt_summary out = summary(120, 120, 0.2, 0.3);
	struct rtt_summary in = summary(100, 50, 400, 500);

	assert_int_equal(rt_starve_rule(&in, &out, 20, 10), KR_FAIL); /* half back: enough */
	in.got = 49;
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10), KR_SKIP);
	in = summary(0, 0, NAN, NAN);
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10), KR_SKIP);
	in = summary(100, 100, 400, 500);
	out = summary(120, 9, 0.2, 0.3);
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10), KR_SKIP);
	out = summary(120, 10, 0.2, 0.3);
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10), KR_FAIL);
}

static void test_phase(void **state)
{
	(void)state;
	int64_t ws = 1000 * MS, we = 1500 * MS, guard = 20 * MS;

	/* napi path: the window starts with the burner */
	assert_int_equal(probe_phase(ws, 100000, ws, ws, we, guard), PHASE_IN);
	assert_int_equal(probe_phase(we - 1, 100000, ws, ws, we, guard), PHASE_IN);
	assert_int_equal(probe_phase(we, 100000, ws, ws, we, guard), PHASE_GUARD);
	assert_int_equal(probe_phase(ws - 1, 100000, ws, ws, we, guard), PHASE_GUARD);
	assert_int_equal(probe_phase(ws - guard, 100000, ws, ws, we, guard), PHASE_GUARD);
	assert_int_equal(probe_phase(ws - guard - 1, 100000, ws, ws, we, guard), PHASE_OUT);
	assert_int_equal(probe_phase(we + guard - 1, 100000, ws, ws, we, guard), PHASE_GUARD);
	assert_int_equal(probe_phase(we + guard, 100000, ws, ws, we, guard), PHASE_OUT);
	/* ksoftirqd path: probes sent during the burst and its guard count nowhere */
	int64_t in_start = ws + 30 * MS;
	assert_int_equal(probe_phase(ws, 100000, ws, in_start, we, guard), PHASE_GUARD);
	assert_int_equal(probe_phase(in_start - 1, 100000, ws, in_start, we, guard), PHASE_GUARD);
	assert_int_equal(probe_phase(in_start, 100000, ws, in_start, we, guard), PHASE_IN);
	assert_int_equal(probe_phase(ws - guard - 1, 100000, ws, in_start, we, guard), PHASE_OUT);
	/* sent well before the window but answered only inside it: not a baseline probe */
	assert_int_equal(probe_phase(ws - 10 * guard, 10 * guard + 1, ws, in_start, we, guard), PHASE_GUARD);
	assert_int_equal(probe_phase(ws - 10 * guard, 10 * guard, ws, in_start, we, guard), PHASE_OUT);
	assert_int_equal(probe_phase(ws - 10 * guard, -1, ws, in_start, we, guard), PHASE_GUARD);
}

static void test_summarize(void **state)
{
	(void)state;
	double v[100];
	struct rtt_summary s;

	for (int i = 0; i < 100; i++)
		v[i] = 100 - i; /* 100 .. 1 ms, unsorted */
	rtt_summarize(v, 100, 104, &s);
	assert_int_equal(s.sent, 104);
	assert_int_equal(s.got, 100);
	assert_float_equal(s.min, 1, 1e-9);
	assert_float_equal(s.max, 100, 1e-9);
	assert_float_equal(s.p50, 50, 1e-9);
	assert_float_equal(s.p99, 99, 1e-9);
	assert_float_equal(s.over50, 50, 1e-9); /* 51..100 are over 50 ms */
	rtt_summarize(v, 0, 5, &s);
	assert_int_equal(s.got, 0);
	assert_true(isnan(s.max) && isnan(s.p99) && isnan(s.over50));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_edges),
		cmocka_unit_test(test_rule_inconclusive),
		cmocka_unit_test(test_phase),
		cmocka_unit_test(test_summarize),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
