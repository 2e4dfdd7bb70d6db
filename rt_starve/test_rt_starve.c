// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: unit test of rt_starve's verdict rule, probe classification and RTT summary.
 */
#define main rt_starve_main
#include "rt_starve.c"
#undef main

#include <setjmp.h>
#include <cmocka.h>

static struct rtt summary(int sent, int got, double p50, double max)
{
	struct rtt s = { .sent = sent, .got = got, .p50 = p50, .p99 = max, .max = max };
	return s;
}

#define RULE(in, out) rt_starve_rule(&(in), &(out), 20, 10, true, false)

/* FAIL needs both: the in-window median above the absolute limit and above ratio x the
 * out-of-window median */
static void test_rule_edges(void **state)
{
	(void)state;
	struct rtt out = summary(120, 120, 0.2, 0.3);
	struct rtt in = summary(100, 100, 250, 500);

	assert_int_equal(RULE(in, out), KR_FAIL);
	in.p50 = 20.0; /* equal to the limit: not above it */
	assert_int_equal(RULE(in, out), KR_PASS);
	in.p50 = 20.001;
	assert_int_equal(RULE(in, out), KR_FAIL);
	/* a slow machine: 25 ms in the window is not 10x a 3 ms median */
	out.p50 = 3.0;
	in.p50 = 25;
	assert_int_equal(RULE(in, out), KR_PASS);
	in.p50 = 30.001;
	assert_int_equal(RULE(in, out), KR_FAIL);
	in.p50 = 30.0;
	assert_int_equal(RULE(in, out), KR_PASS);
	/* a host stall under TCG: a few probes of 60 ms on both sides decide nothing */
	out = summary(134, 134, 0.37, 63.3);
	in = summary(80, 80, 0.5, 61.0);
	assert_int_equal(RULE(in, out), KR_PASS);
	/* the starved window that a max-over-p99 rule called PASS (6.1 under TCG, out p99
	 * 58.9 ms): in-window median 267 ms */
	in = summary(75, 75, 267.1, 448.2);
	assert_int_equal(RULE(in, out), KR_FAIL);
	/* the healthy figures of this machine */
	out = summary(132, 132, 0.1, 0.4);
	in = summary(100, 100, 0.08, 2.8);
	assert_int_equal(RULE(in, out), KR_PASS);
}

/* too few echoes on either side: no verdict from this window */
static void test_rule_inconclusive(void **state)
{
	(void)state;
	struct rtt out = summary(120, 120, 0.2, 0.3);
	struct rtt in = summary(100, 50, 250, 500);

	assert_int_equal(RULE(in, out), KR_FAIL); /* half back: enough */
	in.got = 49;
	assert_int_equal(RULE(in, out), KR_SKIP);
	in = summary(0, 0, NAN, NAN);
	assert_int_equal(RULE(in, out), KR_SKIP);
	in = summary(100, 100, 250, 500);
	out = summary(120, 9, 0.2, 0.3);
	assert_int_equal(RULE(in, out), KR_SKIP);
	out = summary(120, 10, 0.2, 0.3);
	assert_int_equal(RULE(in, out), KR_FAIL);
}

/* a window whose bottom-half thread was never woken tested nothing: never PASS (or FAIL) */
static void test_rule_not_provoked(void **state)
{
	(void)state;
	struct rtt out = summary(120, 120, 0.2, 0.3);
	struct rtt in = summary(100, 100, 0.2, 1.1);

	assert_int_equal(rt_starve_rule(&in, &out, 20, 10, true, false), KR_PASS);
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10, false, false), KR_SKIP);
	in = summary(100, 100, 250, 500);
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10, false, false), KR_SKIP);
}

/* in-window probes lost while the victim CPU dropped packets are starved, not missing */
static void test_rule_lost_to_drops(void **state)
{
	(void)state;
	struct rtt out = summary(120, 120, 0.2, 0.3);
	struct rtt in = summary(100, 10, 0.2, 1.1);

	assert_int_equal(rt_starve_rule(&in, &out, 20, 10, true, false), KR_SKIP);
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10, true, true), KR_FAIL);
	in = summary(100, 0, NAN, NAN); /* every one dropped */
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10, true, true), KR_FAIL);
	in = summary(100, 100, 0.2, 1.1); /* drops, but every probe came back quickly */
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10, true, true), KR_PASS);
	/* not provoked stays not provoked */
	in = summary(100, 10, 0.2, 1.1);
	assert_int_equal(rt_starve_rule(&in, &out, 20, 10, false, true), KR_SKIP);
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
	struct rtt s;

	for (int i = 0; i < 100; i++)
		v[i] = 100 - i; /* 100 .. 1 ms, unsorted */
	rtt_summarize(v, 100, 104, &s);
	assert_int_equal(s.sent, 104);
	assert_int_equal(s.got, 100);
	assert_float_equal(s.max, 100, 1e-9);
	assert_float_equal(s.p50, 50, 1e-9);
	assert_float_equal(s.p99, 99, 1e-9);
	rtt_summarize(v, 0, 5, &s);
	assert_int_equal(s.got, 0);
	assert_true(isnan(s.max) && isnan(s.p99) && isnan(s.p50));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_edges),
		cmocka_unit_test(test_rule_inconclusive),
		cmocka_unit_test(test_rule_not_provoked),
		cmocka_unit_test(test_rule_lost_to_drops),
		cmocka_unit_test(test_phase),
		cmocka_unit_test(test_summarize),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
