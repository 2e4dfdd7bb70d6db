// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: CPU choice (affinity x online with holes, the default victim, nohz_full and
 * isolated CPUs), CPU lists of any size (beyond glibc's 1024-CPU cpu_set_t) and the
 * kernel's hex CPU mask format, on hand-made sysfs text.
 */
#include "krepro.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* the sets of a test, freed at its end */
static struct kr_cpus sets[32];
static int nsets;

static struct kr_cpus *set_of(const char *list)
{
	struct kr_cpus *s = &sets[nsets++];

	assert_true(kr_cpus_parse(list, s) >= 0);
	return s;
}

static int free_sets(void **state)
{
	(void)state;
	while (nsets)
		kr_cpus_free(&sets[--nsets]);
	return 0;
}

static bool same(const struct kr_cpus *a, const char *list)
{
	char buf[4096];

	return !strcmp(kr_cpus_list(a, buf, sizeof(buf)), list);
}

/* lists as sysfs prints them, any size: the kernel's nr_cpu_ids can exceed 1024 (glibc's
 * cpu_set_t, where the old parser gave up: "0-2047" was -1) */
static void test_parse(void **state)
{
	struct kr_cpus s;
	char buf[64];
	(void)state;
	assert_int_equal(kr_cpus_parse("0-2,5,64\n", &s), 5);
	assert_true(kr_cpus_has(&s, 64) && kr_cpus_has(&s, 2) && !kr_cpus_has(&s, 3));
	kr_cpus_free(&s);
	assert_int_equal(kr_cpus_parse("0-2047", &s), 2048);
	assert_int_equal(s.cpu[2047], 2047);
	kr_cpus_free(&s);
	assert_int_equal(kr_cpus_parse("0,4095,8191", &s), 3);
	assert_string_equal(kr_cpus_list(&s, buf, sizeof(buf)), "0,4095,8191");
	kr_cpus_free(&s);
	/* in any order, each CPU once, kept ascending */
	assert_int_equal(kr_cpus_parse("5,1,0-2", &s), 4);
	assert_string_equal(kr_cpus_list(&s, buf, sizeof(buf)), "0-2,5");
	kr_cpus_free(&s);
	/* empty (nohz_full, isolated with none) */
	assert_int_equal(kr_cpus_parse("", &s), 0);
	assert_int_equal(kr_cpus_parse("\n", &s), 0);
	assert_int_equal(kr_cpus_parse(NULL, &s), 0);
	/* malformed: nothing kept */
	const char *bad[] = { "(null)", "2-1", "1,,2", "1-", "8192", "99999", "0 1", "-1", "0x",
			      "0,", "1\n2" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		assert_int_equal(kr_cpus_parse(bad[i], &s), -1);
		assert_int_equal(s.n, 0);
		assert_null(s.cpu);
	}
	/* a list too long for the buffer is cut, never overrun */
	assert_int_equal(kr_cpus_parse("0,2,4,6,8,10,12", &s), 7);
	assert_int_equal(strlen(kr_cpus_list(&s, buf, 6)), 5);
	kr_cpus_free(&s);
}

/* this process: at least one CPU, each one online */
static void test_usable(void **state)
{
	struct kr_cpus *here = &sets[nsets++], *on = &sets[nsets++];
	(void)state;
	assert_true(kr_usable_cpus(here) >= 1);
	assert_true(kr_online_cpus(on) >= here->n);
	for (int i = 0; i < here->n; i++)
		assert_true(kr_cpus_has(on, here->cpu[i]));
}

static void test_pick(void **state)
{
	int v, o;
	(void)state;
	/* the highest usable CPU, not "online count - 1": 7 of "0-2,4-7" (count 7 -> 6) */
	struct kr_cpus *holes = set_of("0-2,4-7");
	assert_int_equal(kr_cpu_pick(holes, -1, &v, &o), 0);
	assert_int_equal(v, 7);
	assert_int_equal(o, 0);
	/* four CPUs with the last one offline: count - 1 = 2 would be right by chance; with
	 * CPU 1 offline instead, count - 1 = 2 is fine but 3 is the highest */
	struct kr_cpus *hole1 = set_of("0,2-3");
	assert_int_equal(kr_cpu_pick(hole1, -1, &v, &o), 0);
	assert_int_equal(v, 3);
	assert_int_equal(o, 0);
	/* a cpuset without CPU 0: the other CPU is the lowest usable one */
	struct kr_cpus *cs = set_of("4,6");
	assert_int_equal(kr_cpu_pick(cs, -1, &v, &o), 0);
	assert_int_equal(v, 6);
	assert_int_equal(o, 4);
	/* an explicit CPU: taken when usable, refused when not */
	assert_int_equal(kr_cpu_pick(holes, 1, &v, &o), 0);
	assert_int_equal(v, 1);
	assert_int_equal(o, 0);
	assert_int_equal(kr_cpu_pick(holes, 0, &v, &o), 0);
	assert_int_equal(o, 1);
	assert_int_equal(kr_cpu_pick(holes, 3, &v, &o), -1);
	assert_int_equal(v, -1);
	assert_int_equal(kr_cpu_pick(holes, 5000, &v, &o), -1);
	/* one CPU: a victim but no other */
	struct kr_cpus *one = set_of("5");
	assert_int_equal(kr_cpu_pick(one, -1, &v, &o), 0);
	assert_int_equal(v, 5);
	assert_int_equal(o, -1);
	struct kr_cpus none = { 0, NULL };
	assert_int_equal(kr_cpu_pick(&none, -1, &v, &o), -1);
	/* the top of the set, past glibc's 1024 */
	struct kr_cpus *top = set_of("0,1023,4095");
	assert_int_equal(kr_cpu_pick(top, -1, &v, &o), 0);
	assert_int_equal(v, 4095);
	/* nohz_full=1 isolcpus=1 on 2 CPUs: the default victim is the housekeeping CPU 0 (the
	 * kernel refuses RPS to isolated CPUs); an explicit one is still taken */
	struct kr_cpus *two = set_of("0-1"), *iso = set_of("1");
	assert_int_equal(kr_cpu_pick_avoiding(two, iso, -1, &v, &o), 0);
	assert_int_equal(v, 0);
	assert_int_equal(o, 1);
	assert_int_equal(kr_cpu_pick_avoiding(two, iso, 1, &v, &o), 0);
	assert_int_equal(v, 1);
	/* every usable CPU isolated: the highest anyway */
	struct kr_cpus *all = set_of("0-1");
	assert_int_equal(kr_cpu_pick_avoiding(two, all, -1, &v, &o), 0);
	assert_int_equal(v, 1);
	assert_int_equal(kr_cpu_pick_avoiding(holes, NULL, -1, &v, &o), 0);
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
static void mask_parse(const char *mask, struct kr_cpus *out)
{
	char copy[KR_CPUMASK_LEN], list[KR_CPUMASK_LEN * 2] = "";
	int word = 0;

	snprintf(copy, sizeof(copy), "%s", mask);
	for (char *c = strrchr(copy, ','); ; c = strrchr(copy, ','), word++) {
		const char *w = c ? c + 1 : copy;
		assert_true(strlen(w) <= 8);
		unsigned long v = strtoul(w, NULL, 16);
		for (int b = 0; b < 32; b++)
			if (v & (1ul << b))
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d",
					 *list ? "," : "", word * 32 + b);
		if (!c)
			break;
		*c = 0;
	}
	assert_true(kr_cpus_parse(list, out) >= 0);
}

static void check_mask(int cpu, int nbits, int words, const char *first)
{
	char buf[KR_CPUMASK_LEN];
	struct kr_cpus one = { 1, &cpu }, back;

	assert_non_null(kr_cpus_mask(&one, nbits, buf, sizeof(buf)));
	/* words: one more comma-separated group per 32 CPUs, the first unpadded */
	int commas = 0;
	for (const char *p = buf; *p; p++)
		commas += *p == ',';
	assert_int_equal(commas + 1, words);
	assert_int_equal(strncmp(buf, first, strlen(first)), 0);
	assert_int_equal(strlen(buf), strcspn(buf, ",") + 9 * (size_t)(words - 1));
	mask_parse(buf, &back);
	assert_int_equal(back.n, 1);
	assert_int_equal(back.cpu[0], cpu);
	kr_cpus_free(&back);
}

static void test_cpumask(void **state)
{
	char buf[KR_CPUMASK_LEN];
	struct kr_cpus *s, back;
	(void)state;
	check_mask(0, 2, 1, "1");
	check_mask(31, 32, 1, "80000000");
	check_mask(32, 64, 2, "1,00000000");
	check_mask(32, 33, 2, "1,00000000");
	check_mask(255, 256, 8, "80000000,00000000");
	check_mask(255, 1024, 32, "0,00000000");
	check_mask(1023, 1024, 32, "80000000,00000000");
	/* past glibc's cpu_set_t: the kernel's largest NR_CPUS */
	check_mask(4096, 4128, 129, "1,00000000");
	check_mask(8191, 8192, 256, "80000000,00000000");
	/* widened to hold the CPU when nbits is too small */
	check_mask(224, 2, 8, "1,00000000");
	check_mask(1023, 64, 32, "80000000");
	/* several CPUs, all kept */
	s = set_of("0,31-32,100,1023");
	assert_non_null(kr_cpus_mask(s, 1024, buf, sizeof(buf)));
	mask_parse(buf, &back);
	assert_true(same(&back, "0,31-32,100,1023"));
	kr_cpus_free(&back);
	assert_string_equal(buf + strlen(buf) - 17, "00000001,80000001");
	/* sized from this machine's CPU count by default */
	s = set_of("0");
	assert_non_null(kr_cpus_mask(s, 0, buf, sizeof(buf)));
	assert_int_equal(strlen(buf), 1 + 9 * (size_t)((kr_nr_cpu_ids() + 31) / 32 - 1));
	/* a buffer too small is an error, never a cut mask */
	s = set_of("0,1023");
	assert_null(kr_cpus_mask(s, 1024, buf, 64));
	assert_null(kr_cpus_mask(s, 1024, buf, 0));
	assert_non_null(kr_cpus_mask(s, 1024, buf, 32 * 9));
}

/* affinity of any size, and a thread pinned to one CPU */
static void test_affinity(void **state)
{
	struct kr_cpus *saved = &sets[nsets++], *now = &sets[nsets++];
	(void)state;
	assert_true(kr_affinity_get(0, saved) >= 1);
	int cpu = saved->cpu[saved->n - 1];
	assert_int_equal(kr_pin(0, cpu), 0);
	assert_int_equal(kr_affinity_get(0, now), 1);
	assert_int_equal(now->cpu[0], cpu);
	assert_int_equal(kr_affinity_set(0, saved), 0);
	assert_true(kr_nr_cpu_ids() >= cpu + 1);
}

/* --cpu N outside the process affinity is refused, inside it accepted */
static void test_cpu_check(void **state)
{
	struct kr_cpus *saved = &sets[nsets++], *u = &sets[nsets++];
	(void)state;
	assert_int_equal(kr_cpu_check("--cpu", 0), 0);
	assert_int_equal(kr_cpu_check("--cpu", KR_MAX_CPUS - 1), -1);
	assert_int_equal(kr_cpu_check("--cpu", -1), -1);
	if (kr_nr_cpus_online() < 2)
		skip();
	assert_true(kr_affinity_get(0, saved) >= 2);
	assert_int_equal(kr_pin(0, 0), 0);
	kr_cpus_init(); /* the start affinity: now only CPU 0 */
	int c1 = kr_cpu_check("--cpu", 1);
	int n = kr_usable_cpus(u);
	assert_int_equal(kr_affinity_set(0, saved), 0);
	kr_cpus_init();
	assert_int_equal(c1, -1);
	assert_int_equal(n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_parse, free_sets),
		cmocka_unit_test_teardown(test_usable, free_sets),
		cmocka_unit_test_teardown(test_pick, free_sets),
		cmocka_unit_test_teardown(test_isolation, free_sets),
		cmocka_unit_test_teardown(test_cpumask, free_sets),
		cmocka_unit_test_teardown(test_affinity, free_sets),
		cmocka_unit_test_teardown(test_cpu_check, free_sets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
