// SPDX-License-Identifier: GPL-2.0-only
/* Description: unit test of irqacct's verdict rule at its edges. */
#define main irqacct_main
#include "irqacct.c"
#undef main

#include <setjmp.h>
#include <cmocka.h>

static void charged_to_task_fails(void **state)
{
	(void)state;
	assert_int_equal(irqacct_rule(1.00, 300, 0, 0.7, 50), KR_FAIL);
	assert_int_equal(irqacct_rule(0.71, 300, 0, 0.7, 50), KR_FAIL);
	assert_int_equal(irqacct_rule(0.70, 300, 0, 0.7, 50), KR_SKIP); /* not above */
}

static void precise_accounting_passes(void **state)
{
	(void)state;
	assert_int_equal(irqacct_rule(0.02, 300, 0, 0.7, 50), KR_PASS);
	assert_int_equal(irqacct_rule(-0.05, 300, 0, 0.7, 50), KR_PASS);
	assert_int_equal(irqacct_rule(0.29, 300, 0, 0.7, 50), KR_PASS);
	assert_int_equal(irqacct_rule(0.30, 300, 0, 0.7, 50), KR_SKIP);
}

static void in_between_is_inconclusive(void **state)
{
	(void)state;
	assert_int_equal(irqacct_rule(0.5, 300, 0, 0.7, 50), KR_SKIP);
	/* a higher threshold widens the gap */
	assert_int_equal(irqacct_rule(0.8, 300, 0, 0.9, 50), KR_SKIP);
}

static void too_little_loss_is_inconclusive(void **state)
{
	(void)state;
	assert_int_equal(irqacct_rule(1.0, 49.9, 0, 0.7, 50), KR_SKIP);
	assert_int_equal(irqacct_rule(1.0, 50, 0, 0.7, 50), KR_FAIL);
	assert_int_equal(irqacct_rule(0.0, 10, 0, 0.7, 50), KR_SKIP);
	assert_int_equal(irqacct_rule(NAN, 300, 0, 0.7, 50), KR_SKIP);
	assert_int_equal(irqacct_rule(1.0, NAN, 0, 0.7, 50), KR_SKIP);
}

static void run_delay_is_inconclusive(void **state)
{
	(void)state;
	assert_int_equal(irqacct_rule(1.0, 300, IA_MAX_DELAY_MS, 0.7, 50), KR_FAIL);
	assert_int_equal(irqacct_rule(1.0, 300, IA_MAX_DELAY_MS + 0.1, 0.7, 50), KR_SKIP);
	assert_int_equal(irqacct_rule(0.0, 300, 40, 0.7, 50), KR_SKIP);
}

static void verdict_against_config(void **state)
{
	(void)state;
	assert_false(config_disagrees(KR_FAIL, 0));
	assert_false(config_disagrees(KR_PASS, 1));
	assert_true(config_disagrees(KR_FAIL, 1));
	assert_true(config_disagrees(KR_PASS, 0));
	assert_false(config_disagrees(KR_FAIL, -1)); /* no config readable: nothing to compare */
	assert_false(config_disagrees(KR_SKIP, 0));
	assert_false(config_disagrees(KR_SKIP, 1));
}

/* the two sides of the metric: what each accounting mode would give for the same loss */
static void metric_of_both_accounting_modes(void **state)
{
	(void)state;
	/* gaps: 10 ms/s steal + 20 ms/s host time not reported as steal (charged to the task) */
	struct phase b = { .lost = 30, .steal = 10, .cpu = 1000 - 30 + 20 };
	/* traffic adds 300 ms/s of softirq, and another task runs 50 ms/s (run delay) */
	struct phase t = { .lost = 380, .steal = 10, .delay = 50, .cpu = 1000 - 380 + 20 + 300 };
	double L = irq_lost(&t) - irq_lost(&b);
	assert_true(fabs(L - 300) < 1e-9);
	/* no irq time accounting: all of the softirq time is in the task's CPU time */
	assert_true(fabs((irq_charged(&t) - irq_charged(&b)) / L - 1.0) < 1e-9);
	/* precise accounting: the task's clock stops during the softirq */
	t.cpu -= 300;
	assert_true(fabs((irq_charged(&t) - irq_charged(&b)) / L) < 1e-9);
}

static void noirqtime_on_the_cmdline(void **state)
{
	(void)state;
	assert_true(cmdline_noirqtime("tsc=noirqtime"));
	assert_true(cmdline_noirqtime("ro quiet tsc=noirqtime console=ttyS0"));
	assert_true(cmdline_noirqtime("tsc=reliable tsc=noirqtime"));
	assert_false(cmdline_noirqtime("tsc=reliable panic=-1"));
	assert_false(cmdline_noirqtime("foo.tsc=noirqtime"));
	assert_false(cmdline_noirqtime(""));
}

/* 6.1 under TCG, ksoftirqd left at SCHED_OTHER behind the probe: NET_RX ran in ksoftirqd
 * (11.8 ms/s) and the probe lost 10.4 ms/s: its own reason, not "raise --rate" */
static void net_rx_in_ksoftirqd(void **state)
{
	(void)state;
	struct phase b = { .ksoftirqd = 0.0 }, t = { .ksoftirqd = 11.8 };
	assert_true(moved_to_ksoftirqd(&b, &t, 10.4));
	/* 6.18 here: ksoftirqd 1.3 ms/s next to 372 ms/s lost on irq exit */
	t.ksoftirqd = 1.3;
	assert_false(moved_to_ksoftirqd(&b, &t, 372.0));
	/* 6.1 under TCG with ksoftirqd at FIFO: it ran 29.9 ms/s, irq exit lost 143.6 */
	t.ksoftirqd = 29.9;
	assert_false(moved_to_ksoftirqd(&b, &t, 143.6));
	t.ksoftirqd = 1.3;
	/* a quiet run: neither */
	assert_false(moved_to_ksoftirqd(&b, &t, 2.0));
	t.ksoftirqd = NAN; /* no ksoftirqd found */
	assert_false(moved_to_ksoftirqd(&b, &t, 2.0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(charged_to_task_fails),
		cmocka_unit_test(precise_accounting_passes),
		cmocka_unit_test(in_between_is_inconclusive),
		cmocka_unit_test(too_little_loss_is_inconclusive),
		cmocka_unit_test(run_delay_is_inconclusive),
		cmocka_unit_test(metric_of_both_accounting_modes),
		cmocka_unit_test(verdict_against_config),
		cmocka_unit_test(noirqtime_on_the_cmdline),
		cmocka_unit_test(net_rx_in_ksoftirqd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
