// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the report of every verdict path through kr_main, in text, JSON and TAP.
 * JSON is checked by a strict parser written here (RFC 8259 grammar), so an escaping
 * mistake in the library cannot hide behind a lenient consumer.
 */
#include "krepro.h"

#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

/* ---- a strict JSON parser: returns the end of one value, or NULL ---- */
static const char *json_value(const char *p, int depth);

static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	for (; *p != '"'; p++) {
		if ((unsigned char)*p < 0x20)
			return NULL; /* raw control characters are not allowed */
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char)p[i]))
						return NULL;
				p += 4;
			} else if (!strchr("\"\\/bfnrt", *p) || !*p) {
				return NULL;
			}
		}
	}
	return p + 1;
}

static const char *json_number(const char *p)
{
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (isdigit((unsigned char)*p))
		while (isdigit((unsigned char)*p))
			p++;
	else
		return NULL;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return NULL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return NULL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	return p;
}

static const char *json_value(const char *p, int depth)
{
	if (depth > 32)
		return NULL;
	p = ws(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		p = ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (close == '}') {
				if (!(p = json_string(ws(p))))
					return NULL;
				p = ws(p);
				if (*p++ != ':')
					return NULL;
			}
			if (!(p = json_value(p, depth + 1)))
				return NULL;
			p = ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	}
	if (*p == '"')
		return json_string(p);
	if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	return json_number(p);
}

static bool json_valid(const char *s)
{
	const char *e = json_value(s, 0);
	return e && !*ws(e);
}

static void test_json_checker(void **state)
{
	(void)state;
	/* the checker itself must reject what a broken escaper would produce */
	assert_true(json_valid("{\"a\":[1,-2.5e3,\"x\\\"y\\u0001\",true,null,{}]}"));
	assert_false(json_valid("{\"a\":\"tab\there\"}"));
	assert_false(json_valid("{\"a\":\"bad \\q escape\"}"));
	assert_false(json_valid("{\"a\":nan}"));
	assert_false(json_valid("{\"a\":1,}"));
	assert_false(json_valid("{\"a\":01}"));
	assert_false(json_valid("{\"a\":1} x"));
}

/* ---- running a tiny program through kr_main and capturing stdout ---- */
static int mode;
static const char *tricky = "quote\" backslash\\ tab\t newline\n cr\r bell\a del\x7f utf8 \xc3\xa9";

static int run(const struct kr_opts *o)
{
	(void)o;
	kr_env("kernel", "%s", "test");
	kr_param("weird", "%s", tricky);
	kr_say("line with %s", tricky);
	kr_say("two\nlines");
	kr_measure("value", 0.125);
	kr_measure("nan_is_null", 0.0 / 0.0);
	kr_measure_str("label", tricky);
	kr_cause("commit 0123456789ab (v1.0)");
	/* longer than an email line: wrapped with an indent in text mode */
	kr_env("irq_affinity", "%s", "1:0-1 8:0 9:0-1 12:1 14:0-1 15:0-1 24:0 25:1 26:0-1 27:1 28:0 "
	       "29:0-1 30:1 31:0 32:0-1 33:0-1 34:1 35:0");
	kr_say("a long line of the body: %s", "words that go on and on past the seventy-second "
	       "column of the report, so that they must be wrapped");
	kr_cause("a cause described at length: the per-CPU slices expire at the end of every "
		 "period (512ac999d275, v4.18), fixed by de53fd7aedb1 (v5.4)");
	switch (mode) {
	case 0: return kr_verdict(KR_PASS, 3.5, "usage=%.2f", 0.5);
	case 1: return kr_verdict(KR_FAIL, 84.12, "usage=%.2f", 0.31);
	case 2: return kr_skip(129, "no such hardware: %s", tricky);
	case 3: return kr_inconclusive(20.5, "repeats straddle the threshold: %d pass, %d fail", 1, 2);
	case 4: return kr_error("broken: %s", tricky);
	/* the widest each field can take (issue 43): an NVMe's IOPS, a 400-CPU id, a 6-digit
	 * value, a reason of a paragraph, a path with no space to break at */
	case 6: return kr_verdict(KR_FAIL, 123456.7, "test=%ld baseline=%ld IOPS cpu=%d p99=%.0fus",
				  9999999L, 9999999L, 399, 999999.0);
	case 7: return kr_inconclusive(0.5704, "4k: ideal speedup < 1.25x: memory bandwidth does "
				       "not scale to %d threads here; hugetlb %s", 400, tricky);
	case 8: return kr_skip(129, "/sys/devices/system/cpu/cpu399/cpuidle/state9/disable_"
			       "and_some_more_without_a_space: %s", "no such file or directory");
	case 9: return kr_error("cannot set /proc/sys/kernel/sched_cfs_bandwidth_slice_us to "
				"%d on cpu %d: %s", 1000000, 399, "Operation not permitted");
	default: abort(); /* a crash: the supervisor reports ERROR */
	}
}

static const struct kr_prog prog = {
	.name = "demo", .flags = KR_OPT_TRIGGER | KR_OPT_CPUS, .metric = "throttled",
	.unit = "%", .threshold = 20, .threshold_min = 0, .threshold_max = 100,
	.rule = "FAIL when throttled >= 20%", .duration_s = 1, .duration_max_s = 30, .run = run,
};

/* typed options: parsed by lib into their variables, printed back by --mail-params */
static struct {
	int64_t period_ns;
	long n;
	int shape;
	bool fast;
	double ratio;
} cfg = { .period_ns = -1 };

static const struct kr_option options[] = {
	KR_ARG_TIME("period", cfg.period_ns, "us", 1000000, 1000000000, "a period"),
	KR_ARG_LONG("n", "N", cfg.n, 1, 9, "a count"),
	KR_ARG_CHOICE("shape", "round|square", cfg.shape, "a shape"),
	KR_ARG_FLAG("fast", cfg.fast, "a flag"),
	KR_ARG_DOUBLE("ratio", "X", cfg.ratio, 1, 100, "a ratio"),
	{ .name = NULL },
};

static const struct kr_cli cli = {
	.summary = "a test program", .description = "Tests the report.", .example = "demo",
	.options = options,
};

static char out[64 * 1024];
static char rundir[] = "/tmp/krepro-test-XXXXXX";

/* kr_main with argv, its stdout captured in out[] */
static int run_captured(int argc, char **argv)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDOUT_FILENO);

	fflush(stdout);
	dup2(fileno(tmp), STDOUT_FILENO);
	int code = kr_main(&prog, &cli, argc, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	rewind(tmp);
	size_t n = fread(out, 1, sizeof(out) - 1, tmp);
	out[n] = 0;
	fclose(tmp);
	return code;
}

static int run_main(int m, const char *format)
{
	char *argv[] = { "demo", "--format", (char *)format, NULL };

	mode = m;
	return run_captured(3, argv);
}

static const struct {
	int code;
	const char *verdict, *line;
} expect[] = {
	{ 0, "PASS", "demo: PASS throttled=3.50% (limit 20.0%) usage=0.50" },
	{ 1, "FAIL", "demo: FAIL throttled=84.1% (limit 20.0%) usage=0.31" },
	{ 129, "SKIP", "demo: SKIP no such hardware: quote\"" },
	{ 125, "SKIP", "demo: SKIP inconclusive (repeats straddle the threshold: 1 pass, 2 fail): throttled=20.5% (limit 20.0%)" },
	{ 128, "ERROR", "demo: ERROR broken: quote\"" },
	{ 128, "ERROR", "demo: ERROR the measurement crashed (Aborted); state restored" },
};

static const char *last_line(void)
{
	static char l[4096];
	size_t n = strlen(out);
	while (n && out[n - 1] == '\n')
		n--;
	size_t s = n;
	while (s && out[s - 1] != '\n')
		s--;
	snprintf(l, sizeof(l), "%.*s", (int)(n - s), out + s);
	return l;
}

/* every line of the text report within KR_TEXT_WIDTH columns */
static void assert_lines_fit(const char *text)
{
	for (const char *l = text; *l;) {
		size_t len = strcspn(l, "\n");
		if (len > KR_TEXT_WIDTH)
			fail_msg("%zu columns: %.*s", len, (int)len, l);
		l += len + (l[len] == '\n');
	}
}

static void test_text(void **state)
{
	(void)state;
	for (int m = 0; m < 6; m++) {
		assert_int_equal(run_main(m, "text"), expect[m].code);
		assert_lines_fit(out);
		/* the verdict line is last and alone (SKIP/ERROR reasons may hold a newline);
		 * one too long for an email is cut to verdict, metric and limit, the rest
		 * printed above it */
		if (m == 3) {
			assert_string_equal(last_line(), "demo: SKIP inconclusive throttled=20.5% (limit 20.0%)");
			assert_non_null(strstr(out, "verdict: inconclusive (repeats straddle the threshold: 1"));
			continue;
		}
		assert_non_null(strstr(out, expect[m].line));
		if (m == 1) {
			assert_non_null(strstr(out, "known cause: commit 0123456789ab"));
			assert_non_null(strstr(out, "\n  (v5.4)\n"));
		}
		if (m < 5) { /* m 5 crashes before its report */
			assert_non_null(strstr(out, "\nirq_affinity: 1:0-1 8:0"));
			assert_non_null(strstr(out, "\n    28:0 29:0-1"));
			assert_non_null(strstr(out, "past the seventy-second\n  column of the report"));
		}
		if (m == 0) {
			assert_null(strstr(out, "known cause"));
			assert_string_equal(last_line(), expect[m].line);
			assert_non_null(strstr(out, "two\nlines\n"));
		}
	}
}

static void test_json(void **state)
{
	char key[64];
	(void)state;
	for (int m = 0; m < 6; m++) {
		assert_int_equal(run_main(m, "json"), expect[m].code);
		assert_true(json_valid(out));
		snprintf(key, sizeof(key), "\"verdict\":\"%s\"", expect[m].verdict);
		assert_non_null(strstr(out, key));
		snprintf(key, sizeof(key), "\"exit_code\":%d", expect[m].code);
		assert_non_null(strstr(out, key));
		if (m < 5) {
			/* escaping of every awkward character */
			assert_non_null(strstr(out, "quote\\\" backslash\\\\ tab\\t newline\\n cr\\r bell\\u0007 del\\u007f utf8 \xc3\xa9"));
			assert_non_null(strstr(out, "\"value\":0.125"));
			assert_non_null(strstr(out, "\"nan_is_null\":null"));
		}
	}
	assert_int_equal(run_main(1, "json"), 1);
	assert_non_null(strstr(out, "\"known_causes\":[\"commit 0123456789ab (v1.0)\",\"a cause described"));
	assert_non_null(strstr(out, "\"metric\":{\"name\":\"throttled\",\"value\":84.12,\"unit\":\"%\"}"));
	assert_int_equal(run_main(2, "json"), 129);
	assert_non_null(strstr(out, "\"reason\":\"no such hardware: quote"));
	assert_non_null(strstr(out, "\"value\":null"));
}

static void test_tap(void **state)
{
	static const char *const test_line[] = {
		"ok 1 demo\n", "not ok 1 demo\n", "ok 1 demo # SKIP no such hardware", "ok 1 demo # SKIP inconclusive",
		"not ok 1 demo # error: broken", "not ok 1 demo # error: the measurement crashed",
	};
	(void)state;
	for (int m = 0; m < 6; m++) {
		assert_int_equal(run_main(m, "tap"), expect[m].code);
		assert_memory_equal(out, "TAP version 13\n1..1\n", 20);
		/* every other line is a diagnostic; exactly one test line */
		int tests = 0;
		for (char *l = out + 20; *l; l = strchr(l, '\n') + 1) {
			if (!strncmp(l, "ok ", 3) || !strncmp(l, "not ok ", 7)) {
				tests++;
				assert_int_equal(strncmp(l, test_line[m], strlen(test_line[m])), 0);
			} else {
				assert_int_equal(l[0], '#');
			}
			if (!strchr(l, '\n'))
				break;
		}
		assert_int_equal(tests, 1);
	}
}

static void test_quiet_and_usage(void **state)
{
	char *argv[] = { "demo", "--quiet", NULL };
	(void)state;
	mode = 1;
	assert_int_equal(run_captured(2, argv), 1);
	assert_string_equal(out, "demo: FAIL throttled=84.1% (limit 20.0%) usage=0.31\n");
	/* bad usage is 128 and never runs the measurement */
	char *bad1[] = { "demo", "--duration", "-1", NULL };
	char *bad2[] = { "demo", "--threshold", "101", NULL };
	char *bad3[] = { "demo", "--format", "xml", NULL };
	char *bad4[] = { "demo", "--no-such", NULL };
	char *bad5[] = { "demo", "stray", NULL };
	mode = 5; /* would abort() if it ran */
	assert_int_equal(kr_main(&prog, &cli, 3, bad1), 128);
	assert_int_equal(kr_main(&prog, &cli, 3, bad2), 128);
	assert_int_equal(kr_main(&prog, &cli, 3, bad3), 128);
	assert_int_equal(kr_main(&prog, &cli, 2, bad4), 128);
	assert_int_equal(kr_main(&prog, &cli, 2, bad5), 128);
}

/* every verdict path with the widest values, text and --quiet: every line on stdout and
 * stderr within 72 columns, --quiet's stdout the verdict line alone */
static void test_widest(void **state)
{
	static const char *const word[] = { [6] = "demo: FAIL throttled=123457% (limit 20.0%)",
		[7] = "demo: SKIP inconclusive throttled=", [8] = "demo: SKIP /sys/",
		[9] = "demo: ERROR cannot set" };
	char err[16 * 1024];
	(void)state;
	for (int m = 6; m <= 9; m++) {
		for (int quiet = 0; quiet < 2; quiet++) {
			char *argv[] = { "demo", quiet ? "--quiet" : "--format", quiet ? NULL : "text",
					 NULL };
			FILE *e = tmpfile();
			int saved = dup(STDERR_FILENO);
			dup2(fileno(e), STDERR_FILENO);
			mode = m;
			run_captured(quiet ? 2 : 3, argv);
			fflush(stderr);
			dup2(saved, STDERR_FILENO);
			close(saved);
			rewind(e);
			err[fread(err, 1, sizeof(err) - 1, e)] = 0;
			fclose(e);
			assert_lines_fit(out);
			assert_lines_fit(err);
			const char *last = last_line();
			if (strncmp(last, word[m], strlen(word[m])))
				fail_msg("mode %d quiet %d: last line %s", m, quiet, last);
			if (quiet) /* one line, and what it leaves out said on stderr */
				assert_true(strchr(out, '\n') == out + strlen(out) - 1 && strstr(err, "demo: "));
		}
	}
}

/* typed options land in their variables, range-checked; --mail-params prints the run's
 * parameters as C for the mail form: every shared option, the program options given */
static void test_typed_options(void **state)
{
	char *argv[] = { "demo", "--period", "80ms", "--n", "3", "--shape", "square", "--fast",
			 "--ratio", "2.5", "--trigger", "--cpus", "0", "--mail-params", NULL };
	(void)state;
	mode = 5; /* would abort() if it ran */
	assert_int_equal(run_captured(14, argv), 0);
	assert_true(cfg.period_ns == 80000000 && cfg.n == 3 && cfg.shape == 1 && cfg.fast &&
		    cfg.ratio == 2.5);
	assert_string_equal(out, "opts.duration_s\t1\t\n"
				 "opts.threshold\t20\t\n"
				 "opts.repeat\t1\t\n"
				 "opts.cpu\t-1\t\n"
				 "opts.cpus\t{ 1, (int[]){ 0 } }\t--cpus 0\n"
				 "opts.trigger\ttrue\t--trigger\n"
				 "opts.mitigate\tfalse\t\n"
				 "cfg.period_ns\t80000000\t--period 80ms\n"
				 "cfg.n\t3\t--n 3\n"
				 "cfg.shape\t1\t--shape square\n"
				 "cfg.fast\ttrue\t--fast\n"
				 "cfg.ratio\t2.5\t--ratio 2.5\n");
	/* out of range, or not a word of the choice: usage errors */
	char *bad1[] = { "demo", "--n", "10", NULL };
	char *bad2[] = { "demo", "--period", "1s1", NULL };
	char *bad3[] = { "demo", "--shape", "oval", NULL };
	char *bad4[] = { "demo", "--fast=1", NULL };
	assert_int_equal(kr_main(&prog, &cli, 3, bad1), 128);
	assert_int_equal(kr_main(&prog, &cli, 3, bad2), 128);
	assert_int_equal(kr_main(&prog, &cli, 3, bad3), 128);
	assert_int_equal(kr_main(&prog, &cli, 2, bad4), 128);
	/* a duration given is a constant of the mail form too; a bare number is in us */
	char *argv2[] = { "demo", "--duration", "0.25", "--period", "1500", "--mail-params", NULL };
	assert_int_equal(run_captured(6, argv2), 0);
	assert_non_null(strstr(out, "opts.duration_s\t0.25\t--duration 0.25\n"));
	assert_non_null(strstr(out, "cfg.period_ns\t1500000\t--period 1500\n"));
	assert_null(strstr(out, "cfg.n\t"));
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(rundir))
		return -1;
	setenv("KREPRO_RUNDIR", rundir, 1);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", rundir);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_checker), cmocka_unit_test(test_text),
		cmocka_unit_test(test_json),	     cmocka_unit_test(test_tap),
		cmocka_unit_test(test_quiet_and_usage), cmocka_unit_test(test_typed_options),
		cmocka_unit_test(test_widest),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
