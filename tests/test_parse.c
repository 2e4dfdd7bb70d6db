// SPDX-License-Identifier: GPL-2.0-only
/* Description: strict option-value parsing: ranges, units, trailing junk, CPU lists. */
#include "krepro.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static void test_long(void **state)
{
	long v = 0;
	(void)state;
	assert_int_equal(kr_parse_long("--n", "42", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(kr_parse_long("--n", "-3", -5, 5, &v), 0);
	assert_int_equal(v, -3);
	assert_int_equal(kr_parse_long("--n", "101", 0, 100, &v), -1);
	assert_int_equal(kr_parse_long("--n", "-1", 0, 100, &v), -1);
	assert_int_equal(kr_parse_long("--n", "5x", 0, 100, &v), -1);
	assert_int_equal(kr_parse_long("--n", "", 0, 100, &v), -1);
	assert_int_equal(kr_parse_long("--n", " 5", 0, 100, &v), -1);
	assert_int_equal(kr_parse_long("--n", "5 ", 0, 100, &v), -1);
	assert_int_equal(kr_parse_long("--n", "99999999999999999999", 0, 100, &v), -1);
	assert_int_equal(v, -3); /* untouched on error */
}

static void test_double(void **state)
{
	double v = 0;
	(void)state;
	assert_int_equal(kr_parse_double("--t", "0.5", 0, 1, &v), 0);
	assert_true(v == 0.5);
	assert_int_equal(kr_parse_double("--t", "1e-1", 0, 1, &v), 0);
	assert_true(v == 0.1);
	assert_int_equal(kr_parse_double("--t", "nan", 0, 1, &v), -1);
	assert_int_equal(kr_parse_double("--t", "inf", 0, 1e300, &v), -1);
	assert_int_equal(kr_parse_double("--t", "0x1p-1", 0, 1, &v), -1);
	assert_int_equal(kr_parse_double("--t", "1.5", 0, 1, &v), -1);
	assert_int_equal(kr_parse_double("--t", "0.5%", 0, 1, &v), -1);
	assert_int_equal(kr_parse_double("--t", "-0.1", 0, 1, &v), -1);
}

static void test_duration(void **state)
{
	int64_t ns = 0;
	(void)state;
	assert_int_equal(kr_parse_duration_ns("--d", "500ms", "s", 1, 10000000000LL, &ns), 0);
	assert_int_equal(ns, 500000000LL);
	assert_int_equal(kr_parse_duration_ns("--d", "2", "s", 1, 10000000000LL, &ns), 0);
	assert_int_equal(ns, 2000000000LL);
	assert_int_equal(kr_parse_duration_ns("--d", "2", "ms", 1, 10000000000LL, &ns), 0);
	assert_int_equal(ns, 2000000LL);
	assert_int_equal(kr_parse_duration_ns("--d", "1.5us", "s", 1, 10000000000LL, &ns), 0);
	assert_int_equal(ns, 1500);
	assert_int_equal(kr_parse_duration_ns("--d", "10", "ns", 1, 10000000000LL, &ns), 0);
	assert_int_equal(ns, 10);
	assert_int_equal(kr_parse_duration_ns("--d", "-1", "s", 1, 10000000000LL, &ns), -1);
	assert_int_equal(kr_parse_duration_ns("--d", "0", "s", 1, 10000000000LL, &ns), -1);
	assert_int_equal(kr_parse_duration_ns("--d", "11s", "s", 1, 10000000000LL, &ns), -1);
	assert_int_equal(kr_parse_duration_ns("--d", "5 s", "s", 1, 10000000000LL, &ns), -1);
	assert_int_equal(kr_parse_duration_ns("--d", "5min", "s", 1, 10000000000LL, &ns), -1);
	assert_int_equal(kr_parse_duration_ns("--d", "ms", "s", 1, 10000000000LL, &ns), -1);
}

static void test_size(void **state)
{
	uint64_t b = 0;
	(void)state;
	assert_int_equal(kr_parse_size("--s", "4k", 1, 1ULL << 40, &b), 0);
	assert_int_equal(b, 4096);
	assert_int_equal(kr_parse_size("--s", "2M", 1, 1ULL << 40, &b), 0);
	assert_int_equal(b, 2u << 20);
	assert_int_equal(kr_parse_size("--s", "1GiB", 1, 1ULL << 40, &b), 0);
	assert_int_equal(b, 1u << 30);
	assert_int_equal(kr_parse_size("--s", "1.5G", 1, 1ULL << 40, &b), 0);
	assert_int_equal(b, 3ULL << 29);
	assert_int_equal(kr_parse_size("--s", "512", 1, 1ULL << 40, &b), 0);
	assert_int_equal(b, 512);
	assert_int_equal(kr_parse_size("--s", "2T", 1, 1ULL << 40, &b), -1);
	assert_int_equal(kr_parse_size("--s", "1X", 1, 1ULL << 40, &b), -1);
	assert_int_equal(kr_parse_size("--s", "1kk", 1, 1ULL << 40, &b), -1);
	assert_int_equal(kr_parse_size("--s", "-4k", 1, 1ULL << 40, &b), -1);
}

static void test_cpulist(void **state)
{
	struct kr_cpus s, online;
	char buf[64];
	(void)state;
	kr_online_cpus(&online);
	assert_true(kr_cpus_has(&online, 0));
	assert_int_equal(kr_parse_cpulist("--cpus", "0", &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.cpu[0], 0);
	kr_cpus_free(&s);
	if (kr_cpus_has(&online, 1)) {
		assert_int_equal(kr_parse_cpulist("--cpus", "0-1", &s), 0);
		assert_int_equal(s.n, 2);
		kr_cpus_free(&s);
		assert_int_equal(kr_parse_cpulist("--cpus", "1,0", &s), 0);
		assert_string_equal(kr_cpus_list(&s, buf, sizeof(buf)), "0-1");
		kr_cpus_free(&s);
	}
	kr_cpus_free(&online);
	const char *bad[] = { "999", "1-0", "0,", "-1", "0x", "", "0\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		assert_int_equal(kr_parse_cpulist("--cpus", bad[i], &s), -1);
		assert_int_equal(s.n, 0);
	}
}

static void test_choice(void **state)
{
	(void)state;
	assert_int_equal(kr_parse_choice("--w", "fibtest", "fibtest|workers"), 0);
	assert_int_equal(kr_parse_choice("--w", "workers", "fibtest|workers"), 1);
	assert_int_equal(kr_parse_choice("--w", "work", "fibtest|workers"), -1);
	assert_int_equal(kr_parse_choice("--w", "workersx", "fibtest|workers"), -1);
	assert_int_equal(kr_parse_choice("--w", "", "fibtest|workers"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_long),	 cmocka_unit_test(test_double),
		cmocka_unit_test(test_duration), cmocka_unit_test(test_size),
		cmocka_unit_test(test_cpulist),	 cmocka_unit_test(test_choice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
