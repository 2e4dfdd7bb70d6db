// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the mail form's harness (lib/mail.c, built as the form builds it, with
 * KR_MAIL) prints the verdict line the full program prints (tests/test_report.c's
 * test_widest: the same calls, the same last lines), and every line within 72 columns
 * with the widest values (issue 43: the irqacct form's SKIP line was 104 columns).
 */
#include "../lib/mail.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

static const struct kr_prog prog = {
	.name = "demo", .metric = "throttled", .unit = "%",
};
static struct kr_opts opts = { .threshold = 20 };
static char out[16 * 1024];

static int verdict(int m)
{
	switch (m) {
	case 0: return kr_verdict(KR_PASS, 3.5, "usage=%.2f", 0.5);
	case 6: return kr_verdict(KR_FAIL, 123456.7, "test=%ld baseline=%ld IOPS cpu=%d p99=%.0fus",
				  9999999L, 9999999L, 399, 999999.0);
	case 7: return kr_inconclusive(0.5704, "4k: ideal speedup < 1.25x: memory bandwidth does "
				       "not scale to %d threads here; hugetlb %s", 400, "x");
	case 8: return kr_skip(129, "/sys/devices/system/cpu/cpu399/cpuidle/state9/disable_"
			       "and_some_more_without_a_space: %s", "no such file or directory");
	default: return kr_error("cannot set /proc/sys/kernel/sched_cfs_bandwidth_slice_us to "
				 "%d on cpu %d: %s", 1000000, 399, "Operation not permitted");
	}
}

static void test_verdict_lines(void **state)
{
	static const char *const last[] = {
		[0] = "demo: PASS throttled=3.50% (limit 20.0%) usage=0.50",
		[6] = "demo: FAIL throttled=123457% (limit 20.0%)",
		[7] = "demo: SKIP inconclusive throttled=0.570% (limit 20.0%)",
		[8] = "demo: SKIP /sys/devices/system/cpu/cpu399/cpuidle/state9/disable_and ...",
		[9] = "demo: ERROR cannot set ...",
	};
	(void)state;
	the_prog = &prog, the_opts = &opts;
	for (int m = 0; m <= 9; m++) {
		if (!last[m])
			continue;
		FILE *tmp = tmpfile();
		int saved = dup(STDOUT_FILENO);
		fflush(stdout);
		dup2(fileno(tmp), STDOUT_FILENO);
		verdict(m);
		fflush(stdout);
		dup2(saved, STDOUT_FILENO);
		close(saved);
		rewind(tmp);
		out[fread(out, 1, sizeof(out) - 1, tmp)] = 0;
		fclose(tmp);
		char *end = out + strlen(out) - 1, *l = end;
		while (l > out && l[-1] != '\n')
			l--;
		assert_int_equal(*end, '\n');
		*end = 0;
		assert_string_equal(l, last[m]);
		for (char *p = out; *p; p += strcspn(p, "\n") + !!p[strcspn(p, "\n")])
			if (strcspn(p, "\n") > KR_TEXT_WIDTH)
				fail_msg("mode %d: %zu columns: %.*s", m, strcspn(p, "\n"),
					 (int)strcspn(p, "\n"), p);
		if (m >= 6) /* what the cut line leaves out is said above it */
			assert_non_null(strstr(out, m == 6 ? "verdict: test=9999999 baseline=9999999" :
					m == 7 ? "verdict: inconclusive (4k: ideal speedup" :
					m == 8 ? "SKIP: /sys/devices" : "ERROR: cannot set /proc"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_verdict_lines) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
