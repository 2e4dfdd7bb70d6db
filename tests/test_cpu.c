// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: CPU choice (affinity x online with holes, the default victim, nohz_full and
 * isolated CPUs) and the kernel's hex CPU mask format, on hand-made sysfs text.
 */
#include "krepro.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static cpu_set_t set_of(const char *list)
{
	cpu_set_t s;

	assert_int_equal(kr_cpulist_parse(list, &s), 0);
	return s;
}

static void test_usable(void **state)
{
	cpu_set_t all = set_of("0-1023"), out;
	(void)state;
	/* a hole: CPU 3 offline (sysfs text with its newline) */
	assert_int_equal(kr_usable_cpus_from(&all, "0-2,4-7\n", &out), 7);
	assert_false(CPU_ISSET(3, &out));
	/* a container's cpuset: only 2, 3 and 5 allowed, 3 offline */
	cpu_set_t cs = set_of("2-3,5");
	assert_int_equal(kr_usable_cpus_from(&cs, "0-2,4-7", &out), 2);
	cpu_set_t want = set_of("2,5");
	assert_true(CPU_EQUAL(&out, &want));
	assert_int_equal(kr_usable_cpus_from(&cs, "garbage", &out), -1);
}

static void test_pick(void **state)
{
	int v, o;
	(void)state;
	/* the highest usable CPU, not "online count - 1": 7 of "0-2,4-7" (count 7 -> 6) */
	cpu_set_t holes = set_of("0-2,4-7");
	assert_int_equal(kr_cpu_pick(&holes, -1, &v, &o), 0);
	assert_int_equal(v, 7);
	assert_int_equal(o, 0);
	/* four CPUs with the last one offline: count - 1 = 2 would be right by chance; with
	 * CPU 1 offline instead, count - 1 = 2 is fine but 3 is the highest */
	cpu_set_t hole1 = set_of("0,2-3");
	assert_int_equal(kr_cpu_pick(&hole1, -1, &v, &o), 0);
	assert_int_equal(v, 3);
	assert_int_equal(o, 0);
	/* a cpuset without CPU 0: the other CPU is the lowest usable one */
	cpu_set_t cs = set_of("4,6");
	assert_int_equal(kr_cpu_pick(&cs, -1, &v, &o), 0);
	assert_int_equal(v, 6);
	assert_int_equal(o, 4);
	/* an explicit CPU: taken when usable, refused when not */
	assert_int_equal(kr_cpu_pick(&holes, 1, &v, &o), 0);
	assert_int_equal(v, 1);
	assert_int_equal(o, 0);
	assert_int_equal(kr_cpu_pick(&holes, 0, &v, &o), 0);
	assert_int_equal(o, 1);
	assert_int_equal(kr_cpu_pick(&holes, 3, &v, &o), -1);
	assert_int_equal(v, -1);
	assert_int_equal(kr_cpu_pick(&holes, 5000, &v, &o), -1);
	/* one CPU: a victim but no other */
	cpu_set_t one = set_of("5");
	assert_int_equal(kr_cpu_pick(&one, -1, &v, &o), 0);
	assert_int_equal(v, 5);
	assert_int_equal(o, -1);
	cpu_set_t none;
	CPU_ZERO(&none);
	assert_int_equal(kr_cpu_pick(&none, -1, &v, &o), -1);
	/* the top of the set */
	cpu_set_t top = set_of("0,1023");
	assert_int_equal(kr_cpu_pick(&top, -1, &v, &o), 0);
	assert_int_equal(v, 1023);
	/* nohz_full=1 isolcpus=1 on 2 CPUs: the default victim is the housekeeping CPU 0 (the
	 * kernel refuses RPS to isolated CPUs); an explicit one is still taken */
	cpu_set_t two = set_of("0-1"), iso = set_of("1");
	assert_int_equal(kr_cpu_pick_avoiding(&two, &iso, -1, &v, &o), 0);
	assert_int_equal(v, 0);
	assert_int_equal(o, 1);
	assert_int_equal(kr_cpu_pick_avoiding(&two, &iso, 1, &v, &o), 0);
	assert_int_equal(v, 1);
	/* every usable CPU isolated: the highest anyway */
	cpu_set_t all = set_of("0-1");
	assert_int_equal(kr_cpu_pick_avoiding(&two, &all, -1, &v, &o), 0);
	assert_int_equal(v, 1);
	assert_int_equal(kr_cpu_pick_avoiding(&holes, NULL, -1, &v, &o), 0);
	assert_int_equal(v, 7);
}

static void test_isolation(void **state)
{
	char b[32];
	(void)state;
	assert_string_equal(kr_cpu_isolation_from(1, "1-3", "", b, sizeof(b)), "nohz_full");
	assert_string_equal(kr_cpu_isolation_from(1, "1-3", "1", b, sizeof(b)), "nohz_full,isolated");
	assert_string_equal(kr_cpu_isolation_from(2, "", "2\n", b, sizeof(b)), "isolated");
	assert_string_equal(kr_cpu_isolation_from(0, "1-3", "1", b, sizeof(b)), "");
	/* NO_HZ_FULL built in but not booted with it */
	assert_string_equal(kr_cpu_isolation_from(1, "(null)", "", b, sizeof(b)), "");
	/* no such files (NULL) */
	assert_string_equal(kr_cpu_isolation_from(1, NULL, NULL, b, sizeof(b)), "");
}

/* The mask read back as the kernel's bitmap_parse reads it: words from the right. */
static cpu_set_t mask_parse(const char *mask)
{
	cpu_set_t s;
	char copy[KR_CPUMASK_LEN];
	int word = 0;

	CPU_ZERO(&s);
	snprintf(copy, sizeof(copy), "%s", mask);
	for (char *c = strrchr(copy, ','); ; c = strrchr(copy, ','), word++) {
		const char *w = c ? c + 1 : copy;
		assert_true(strlen(w) <= 8);
		unsigned long v = strtoul(w, NULL, 16);
		for (int b = 0; b < 32; b++)
			if (v & (1ul << b))
				CPU_SET(word * 32 + b, &s);
		if (!c)
			break;
		*c = 0;
	}
	return s;
}

static void check_mask(int cpu, int nbits, int words, const char *first)
{
	char buf[KR_CPUMASK_LEN];
	cpu_set_t one, back;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	assert_non_null(kr_format_cpumask(&one, nbits, buf, sizeof(buf)));
	/* words: one more comma-separated group per 32 CPUs, the first unpadded */
	int commas = 0;
	for (const char *p = buf; *p; p++)
		commas += *p == ',';
	assert_int_equal(commas + 1, words);
	assert_int_equal(strncmp(buf, first, strlen(first)), 0);
	assert_int_equal(strlen(buf), strcspn(buf, ",") + 9 * (size_t)(words - 1));
	back = mask_parse(buf);
	assert_true(CPU_EQUAL(&one, &back));
}

static void test_cpumask(void **state)
{
	char buf[KR_CPUMASK_LEN];
	cpu_set_t s;
	(void)state;
	check_mask(0, 2, 1, "1");
	check_mask(31, 32, 1, "80000000");
	check_mask(32, 64, 2, "1,00000000");
	check_mask(32, 33, 2, "1,00000000");
	check_mask(255, 256, 8, "80000000,00000000");
	check_mask(255, 1024, 32, "0,00000000");
	check_mask(1023, 1024, 32, "80000000,00000000");
	/* widened to hold the CPU when nbits is too small */
	check_mask(224, 2, 8, "1,00000000");
	check_mask(1023, 64, 32, "80000000");
	/* several CPUs, all kept */
	s = set_of("0,31-32,100,1023");
	assert_non_null(kr_format_cpumask(&s, 1024, buf, sizeof(buf)));
	cpu_set_t back = mask_parse(buf);
	assert_true(CPU_EQUAL(&s, &back));
	assert_string_equal(buf + strlen(buf) - 17, "00000001,80000001");
	/* sized from this machine's CPU count by default */
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	assert_non_null(kr_format_cpumask(&s, 0, buf, sizeof(buf)));
	assert_int_equal(strlen(buf), 1 + 9 * (size_t)((kr_nr_cpu_ids() + 31) / 32 - 1));
	/* a buffer too small is an error, never a cut mask */
	CPU_SET(1023, &s);
	assert_null(kr_format_cpumask(&s, 1024, buf, 64));
	assert_null(kr_format_cpumask(&s, 1024, buf, 0));
	assert_non_null(kr_format_cpumask(&s, 1024, buf, 32 * 9));
}

/* --cpu N outside the process affinity is refused, inside it accepted */
static void test_cpu_check(void **state)
{
	cpu_set_t saved, only0;
	(void)state;
	assert_int_equal(kr_cpu_check("--cpu", 0), 0);
	assert_int_equal(kr_cpu_check("--cpu", CPU_SETSIZE - 1), -1);
	assert_int_equal(kr_cpu_check("--cpu", -1), -1);
	if (kr_nr_cpus_online() < 2)
		skip();
	assert_int_equal(sched_getaffinity(0, sizeof(saved), &saved), 0);
	CPU_ZERO(&only0);
	CPU_SET(0, &only0);
	assert_int_equal(sched_setaffinity(0, sizeof(only0), &only0), 0);
	int c1 = kr_cpu_check("--cpu", 1);
	cpu_set_t u;
	int n = kr_usable_cpus(&u);
	assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);
	assert_int_equal(c1, -1);
	assert_int_equal(n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_usable),	  cmocka_unit_test(test_pick),
		cmocka_unit_test(test_isolation), cmocka_unit_test(test_cpumask),
		cmocka_unit_test(test_cpu_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
