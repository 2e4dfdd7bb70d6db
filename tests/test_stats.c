// SPDX-License-Identifier: GPL-2.0-only
/* Description: statistics against hand-computed values (nearest-rank percentiles). */
#include "krepro.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static void test_percentile_nearest_rank(void **state)
{
	/* the textbook example: 15 20 35 40 50 */
	double v[] = { 50, 15, 40, 20, 35 };
	struct kr_stats s;
	(void)state;
	kr_stats(v, 5, &s);
	assert_true(kr_percentile(v, 5, 5) == 15);   /* rank ceil(0.25) = 1 */
	assert_true(kr_percentile(v, 5, 30) == 20);  /* rank ceil(1.5) = 2 */
	assert_true(kr_percentile(v, 5, 40) == 20);  /* rank ceil(2.0) = 2 */
	assert_true(kr_percentile(v, 5, 50) == 35);  /* rank ceil(2.5) = 3 */
	assert_true(kr_percentile(v, 5, 100) == 50);
	assert_true(kr_percentile(v, 5, 0) == 15);
	assert_true(s.median == 35);
	/* p99 of 100 values 1..100 is 99, of 1000 values 1..1000 is 990 */
	double w[1000];
	for (int i = 0; i < 1000; i++)
		w[i] = 1000 - i;
	kr_stats(w, 100, &s); /* the first 100: 901..1000 */
	assert_true(kr_percentile(w, 100, 99) == 999);
	kr_stats(w, 1000, &s);
	assert_true(kr_percentile(w, 1000, 99) == 990);
	assert_true(kr_percentile(w, 1000, 99.9) == 999);
	assert_true(isnan(kr_percentile(w, 0, 50)));
}

static void test_mean_stdev(void **state)
{
	double v[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	struct kr_stats s;
	(void)state;
	kr_stats(v, 8, &s);
	assert_true(s.n == 8);
	assert_true(s.mean == 5);
	assert_true(s.min == 2 && s.max == 9);
	/* sample stdev: sum of squares 32, / 7 */
	assert_true(fabs(s.stdev - sqrt(32.0 / 7.0)) < 1e-12);
	assert_true(s.median == 4);
	double one[] = { 3 };
	kr_stats(one, 1, &s);
	assert_true(s.stdev == 0 && s.median == 3);
	kr_stats(one, 0, &s);
	assert_true(s.n == 0 && isnan(s.mean));
}

static void test_histogram(void **state)
{
	double v[] = { -1, 0, 0.5, 1, 2.5, 9.99, 10, 50 };
	size_t bins[5];
	(void)state;
	kr_histogram(v, 8, 0, 10, 5, bins);
	assert_int_equal(bins[0], 4); /* -1 (clamped), 0, 0.5, 1 */
	assert_int_equal(bins[1], 1); /* 2.5 */
	assert_int_equal(bins[2], 0);
	assert_int_equal(bins[3], 0);
	assert_int_equal(bins[4], 3); /* 9.99, 10 and 50 (clamped) */
}

static void test_vote(void **state)
{
	enum kr_verdict all_pass[] = { KR_PASS, KR_PASS, KR_PASS };
	enum kr_verdict straddle[] = { KR_PASS, KR_FAIL, KR_FAIL };
	enum kr_verdict fail_skip[] = { KR_FAIL, KR_SKIP, KR_FAIL };
	enum kr_verdict none[] = { KR_SKIP, KR_ERROR };
	int p, f;
	(void)state;
	assert_int_equal(kr_vote(all_pass, 3, &p, &f), KR_PASS);
	assert_int_equal(p, 3);
	assert_int_equal(kr_vote(straddle, 3, &p, &f), KR_SKIP);
	assert_int_equal(f, 2);
	assert_int_equal(kr_vote(fail_skip, 3, &p, &f), KR_FAIL);
	assert_int_equal(kr_vote(none, 2, &p, &f), KR_SKIP);
}

/* the verdict line's digits: three significant, the decade by the value as it rounds, so
 * that 0.9996 and 1.0 (a program and its mail form) print the same "1.00" */
static void test_format_value(void **state)
{
	char b[32];
	(void)state;

	assert_string_equal(kr_format_value(0.9996, b, sizeof(b)), "1.00");
	assert_string_equal(kr_format_value(1.0, b, sizeof(b)), "1.00");
	assert_string_equal(kr_format_value(0.998, b, sizeof(b)), "0.998");
	assert_string_equal(kr_format_value(9.996, b, sizeof(b)), "10.0");
	assert_string_equal(kr_format_value(99.96, b, sizeof(b)), "100");
	assert_string_equal(kr_format_value(0.09996, b, sizeof(b)), "0.100");
	assert_string_equal(kr_format_value(0.0123, b, sizeof(b)), "0.0123");
	assert_string_equal(kr_format_value(0, b, sizeof(b)), "0.00");
	assert_string_equal(kr_format_value(-0.9996, b, sizeof(b)), "-1.00");
	assert_string_equal(kr_format_value(NAN, b, sizeof(b)), "n/a");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_percentile_nearest_rank),
		cmocka_unit_test(test_mean_stdev),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_vote),
		cmocka_unit_test(test_format_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
