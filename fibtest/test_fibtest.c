// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: unit tests of fibtest's verdict rule at its edges, the window's figures (the
 * throttled-% clamp), and cpu.stat parsing on captured v1 and v2 text (the v2 cpu controller cannot be enabled on
 * the development machine, so v2 is tested here only).
 */
#define main fibtest_main
#include "fibtest.c"
#undef main
/* the rule alone: a window without steal */
#define fibtest_rule(t, e, limit, max_eff) window_verdict(t, e, 0, limit, max_eff)

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* captured from /sys/fs/cgroup/cpu/krepro-fibtest-PID/cpu.stat during --trigger,
 * kernel 6.18, cgroup v1 */
static const char v1_text[] = "nr_periods 10\n"
			      "nr_throttled 10\n"
			      "throttled_time 890502560\n"
			      "nr_bursts 0\n"
			      "burst_time 0\n";

/* cgroup v2 cpu.stat with the cpu controller enabled, in the layout of kernel 6.x
 * (cpu_extra_stat_show + cpu_cfs_stat_show); v2 cannot hold cpu on this machine */
static const char v2_text[] = "usage_usec 1003190\n"
			      "user_usec 1001712\n"
			      "system_usec 1478\n"
			      "core_sched.force_idle_usec 0\n"
			      "nr_periods 200\n"
			      "nr_throttled 197\n"
			      "throttled_usec 979337\n"
			      "nr_bursts 0\n"
			      "burst_usec 0\n";

static void test_rule_edges(void **state)
{
	(void)state;
	/* both limits are inclusive */
	assert_int_equal(fibtest_rule(20.0, 0.90, 20, 0.90), KR_FAIL);
	assert_int_equal(fibtest_rule(19.99, 0.50, 20, 0.90), KR_PASS);
	assert_int_equal(fibtest_rule(100.0, 0.9001, 20, 0.90), KR_PASS);
	assert_int_equal(fibtest_rule(100.0, 0.8999, 20, 0.90), KR_FAIL);
	/* legitimately throttled: used its quota */
	assert_int_equal(fibtest_rule(100.0, 1.00, 20, 0.90), KR_PASS);
	/* idle and never throttled */
	assert_int_equal(fibtest_rule(0.0, 0.0, 20, 0.90), KR_PASS);
	/* --threshold 0 makes any window with unused quota a FAIL */
	assert_int_equal(fibtest_rule(0.0, 0.5, 0, 0.90), KR_FAIL);
	/* --max-efficiency changes the second limit */
	assert_int_equal(fibtest_rule(50.0, 0.95, 20, 0.97), KR_FAIL);
	assert_int_equal(fibtest_rule(50.0, 0.98, 20, 0.97), KR_PASS);
}

static void test_window_steal(void **state)
{
	(void)state;
	/* steal up to the limit counts; above it the window is not conclusive either way */
	assert_int_equal(window_verdict(100.0, 0.5, 5.0, 20, 0.90), KR_FAIL);
	assert_int_equal(window_verdict(100.0, 0.5, 5.01, 20, 0.90), KR_SKIP);
	assert_int_equal(window_verdict(100.0, 1.0, 70.0, 20, 0.90), KR_SKIP);
	assert_int_equal(window_verdict(100.0, 1.0, 0.0, 20, 0.90), KR_PASS);
	/* a stolen window does not outvote the others; disagreeing windows are inconclusive */
	enum kr_verdict v[] = { KR_SKIP, KR_PASS, KR_PASS };
	assert_int_equal(kr_vote(v, 3, NULL, NULL), KR_PASS);
	v[1] = KR_FAIL;
	assert_int_equal(kr_vote(v, 3, NULL, NULL), KR_SKIP);
}

/* throttled % of the window from a to b, with b's counters */
static double throttled_pct(uint64_t periods, uint64_t throttled)
{
	struct sample a = { .t = 0 }, b = { .t = 1000000000, .nr_periods = periods,
					    .nr_throttled = throttled };
	return window_of(&a, &b).throttled;
}

static void test_window(void **state)
{
	(void)state;
	assert_true(throttled_pct(0, 0) == 0.0);
	assert_true(throttled_pct(0, 5) == 0.0);
	assert_true(fabs(throttled_pct(20, 5) - 25.0) < 1e-9);
	assert_true(throttled_pct(20, 20) == 100.0);
	/* a period can be counted as throttled more than once: clamp */
	assert_true(throttled_pct(20, 30) == 100.0);
	/* efficiency: usage / (quota / period x window); steal of all CPU time */
	cfg.quota_ns = 5000000;
	cfg.period_ns = 10000000;
	struct sample a = { .t = 0, .usage_ns = 1000000000, .cpu = { .user = 100, .steal = 10 } };
	struct sample b = { .t = 2000000000, .usage_ns = 1800000000,
			    .cpu = { .user = 280, .steal = 30 } };
	struct window w = window_of(&a, &b);
	assert_true(fabs(w.allowed_ms - 1000.0) < 1e-9 && fabs(w.usage_ms - 800.0) < 1e-9);
	assert_true(fabs(w.efficiency - 0.8) < 1e-9);
	assert_true(fabs(w.steal_pct - 10.0) < 1e-9);
}

static void test_parse_v1(void **state)
{
	struct sample s = { .usage_ns = 0 };
	(void)state;
	assert_int_equal(parse_cpu_stat(v1_text, &s), 0);
	assert_true(s.nr_periods == 10);
	assert_true(s.nr_throttled == 10);
	assert_true(s.throttled_ns == 890502560ULL); /* v1 is in ns */
}

static void test_parse_v2(void **state)
{
	struct sample s = { .usage_ns = 0 };
	(void)state;
	assert_int_equal(parse_cpu_stat(v2_text, &s), 0);
	assert_true(s.nr_periods == 200);
	assert_true(s.nr_throttled == 197);
	assert_true(s.throttled_ns == 979337000ULL); /* v2 is in us */
}

static void test_parse_by_key(void **state)
{
	struct sample s = { .usage_ns = 0 };
	(void)state;
	/* order does not matter; longer keys sharing a prefix are not taken */
	assert_int_equal(parse_cpu_stat("nr_throttled_extra 9\nthrottled_usec 7\n"
					"nr_throttled 3\nnr_periods_x 8\nnr_periods 4\n",
					&s),
			 0);
	assert_true(s.nr_periods == 4 && s.nr_throttled == 3 && s.throttled_ns == 7000);
	/* the v2 root's cpu.stat without the cpu controller has no bandwidth keys */
	assert_int_equal(parse_cpu_stat("usage_usec 59022842\nuser_usec 31715369\n"
					"system_usec 27307472\nnice_usec 0\n",
					&s),
			 -1);
	assert_int_equal(parse_cpu_stat("nr_periods 1\nnr_throttled 1\n", &s), -1);
	assert_int_equal(parse_cpu_stat("", &s), -1);
}

/* enabling +cpu at a v2 root that holds processes (a container's namespace root) is
 * EBUSY: the machine's doing, SKIP 129 with the reason; anything else stays an ERROR */
static void test_v2_enable_refusal(void **state)
{
	(void)state;
	assert_non_null(v2_enable_refusal(EBUSY));
	assert_non_null(strstr(v2_enable_refusal(EBUSY), "processes"));
	assert_non_null(v2_enable_refusal(EOPNOTSUPP));
	assert_non_null(v2_enable_refusal(EROFS));
	assert_non_null(v2_enable_refusal(EACCES));
	assert_null(v2_enable_refusal(EINVAL));
	assert_null(v2_enable_refusal(ENOMEM));
}

/* a parse callback returns 0 or -1 (--workload's index goes into cfg, not back), and
 * the values land in cfg in its units */
static void test_parse_options(void **state)
{
	(void)state;
	assert_int_equal(parse(0, "workers"), 0);
	assert_int_equal(cfg.workload, 1);
	assert_int_equal(parse(0, "fibtest"), 0);
	assert_int_equal(cfg.workload, 0);
	assert_int_equal(parse(0, "nope"), -1);
	assert_int_equal(parse(4, "5ms"), 0);
	assert_true(cfg.quota_ns == 5000000);
	assert_int_equal(parse(5, "100000"), 0); /* bare numbers in us */
	assert_true(cfg.period_ns == 100000000);
	assert_int_equal(parse(8, "0"), 0);
	assert_true(cfg.warmup_ns == 0);
	assert_int_equal(parse(9, "0.8"), 0);
	assert_true(cfg.max_efficiency == 0.8);
	assert_int_equal(parse(5, "0"), -1); /* below 1 ms */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_edges),
		cmocka_unit_test(test_window_steal),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_parse_v1),
		cmocka_unit_test(test_parse_v2),
		cmocka_unit_test(test_parse_by_key),
		cmocka_unit_test(test_v2_enable_refusal),
		cmocka_unit_test(test_parse_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
