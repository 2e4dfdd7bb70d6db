// SPDX-License-Identifier: GPL-2.0-only
/* Description: unit test of hwts's verdict rule and its "no cpuidle states" decision. */
#define main hwts_main
#include "hwts.c"
#undef main

#include <setjmp.h>
#include <cmocka.h>

static void rule_edges(void **state)
{
	(void)state;
	/* the original: ~10 us awake, ~100 us+ idle with C6 */
	assert_int_equal(hwts_rule(250.0, 10.0, 100.0), KR_FAIL);
	/* exactly at the threshold is not above it */
	assert_int_equal(hwts_rule(110.0, 10.0, 100.0), KR_PASS);
	assert_int_equal(hwts_rule(110.1, 10.0, 100.0), KR_FAIL);
	/* this machine: halt wakeup ~100 us vs spinner ~55 us */
	assert_int_equal(hwts_rule(100.0, 55.0, 100.0), KR_PASS);
	assert_int_equal(hwts_rule(100.0, 55.0, 20.0), KR_FAIL);
	/* awake slower than idle: no penalty */
	assert_int_equal(hwts_rule(50.0, 80.0, 0.0), KR_PASS);
	/* a condition without samples is not a verdict */
	assert_int_equal(hwts_rule(NAN, 55.0, 100.0), KR_ERROR);
	assert_int_equal(hwts_rule(100.0, NAN, 100.0), KR_ERROR);
}

static void idle_states(void **state)
{
	(void)state;
	struct hw_state none[1] = { { .name = "" } };
	struct hw_state poll[1] = { { .name = "POLL" } };
	struct hw_state halt[2] = { { .name = "POLL" }, { .name = "haltpoll idle" } };
	struct hw_state c6[3] = { { .name = "POLL" }, { .name = "C1" }, { .name = "C6" } };

	assert_false(hwts_has_idle_states(none, 0));
	assert_false(hwts_has_idle_states(poll, 1));
	assert_true(hwts_has_idle_states(halt, 2));
	assert_true(hwts_has_idle_states(c6, 3));
	assert_true(hwts_has_idle_states(c6 + 1, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rule_edges),
		cmocka_unit_test(idle_states),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
