// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: unit tests of dio_kworker's verdict rule and its block permutation (the
 * program is included with main renamed). The /proc/interrupts parser is lib's.
 */
#define main dio_kworker_main
#include "dio_kworker.c"
#undef main

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

static void rule_fails_below_threshold(void **state)
{
	(void)state;
	assert_int_equal(dio_kworker_rule(26000, 200, NAN, 0.5), KR_FAIL);
	assert_int_equal(dio_kworker_rule(1000, 499, NAN, 0.5), KR_FAIL);
	assert_int_equal(dio_kworker_rule(1000, 0, NAN, 0.5), KR_FAIL);
}

static void rule_passes_at_and_above_threshold(void **state)
{
	(void)state;
	assert_int_equal(dio_kworker_rule(1000, 500, NAN, 0.5), KR_PASS);
	assert_int_equal(dio_kworker_rule(26000, 50000, NAN, 0.5), KR_PASS);
	assert_int_equal(dio_kworker_rule(1000, 100, NAN, 0.05), KR_PASS);
}

static void rule_control_slow_is_inconclusive(void **state)
{
	(void)state;
	/* the RT submitter is slow off the completion CPU too: not this phenomenon */
	assert_int_equal(dio_kworker_rule(1000, 10, 499, 0.5), KR_SKIP);
	assert_int_equal(dio_kworker_rule(1000, 10, 500, 0.5), KR_FAIL);
	assert_int_equal(dio_kworker_rule(1000, 900, 900, 0.5), KR_PASS);
}

static void rule_without_baseline_is_error(void **state)
{
	(void)state;
	assert_int_equal(dio_kworker_rule(0, 100, NAN, 0.5), KR_ERROR);
	assert_int_equal(dio_kworker_rule(NAN, 100, NAN, 0.5), KR_ERROR);
	assert_int_equal(dio_kworker_rule(1000, NAN, NAN, 0.5), KR_ERROR);
}

/* every block exactly once, whatever the size (power of two or not) and seed */
static void permutation_is_bijective(void **state)
{
	static const uint64_t sizes[] = { 4096, 4097, 6000, 65536 };
	(void)state;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct dio_offsets o;
		dio_offsets_init(&o, sizes[k], 12345 + k);
		unsigned char *seen = calloc(sizes[k], 1);
		assert_non_null(seen);
		uint64_t identity = 0;
		for (uint64_t i = 0; i < sizes[k]; i++) {
			uint64_t x = dio_permute(&o, i);
			assert_true(x < sizes[k]);
			assert_int_equal(seen[x], 0);
			seen[x] = 1;
			identity += x == i;
		}
		assert_true(identity < sizes[k] / 100); /* shuffled, not sequential */
		free(seen);
	}
}

static void offsets_are_aligned_and_wrap(void **state)
{
	(void)state;
	dio_offsets_init(&offsets, 4096, 1);
	off_t first = dio_next_offset(&offsets);
	for (int i = 1; i < 4096; i++) {
		off_t off = dio_next_offset(&offsets);
		assert_int_equal(off % DIO_BLOCK, 0);
		assert_true(off < 4096LL * DIO_BLOCK);
	}
	assert_int_equal(dio_next_offset(&offsets), first); /* second pass starts over */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rule_fails_below_threshold),
		cmocka_unit_test(rule_passes_at_and_above_threshold),
		cmocka_unit_test(rule_control_slow_is_inconclusive),
		cmocka_unit_test(rule_without_baseline_is_error),
		cmocka_unit_test(permutation_is_bijective),
		cmocka_unit_test(offsets_are_aligned_and_wrap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
