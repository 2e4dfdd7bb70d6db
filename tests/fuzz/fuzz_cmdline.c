// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the whole command line through kr_main(): the input is split at NUL bytes
 * into argv. The program described here takes every shared option and two of its own; its
 * validate() callback checks the parsed options and then stops the run (-1: exit 128), so
 * no lock, journal, fork or /dev/kmsg line ever happens. Checked: no memory error, an exit
 * code of 0 (--help, --version) or 128, and parsed values within their documented ranges.
 */
#include "fuzz.h"

#include <getopt.h>
#include <math.h>

static const struct kr_option options[] = {
	{ "threads", "N", "worker threads" },
	{ "flag", NULL, "a flag" },
	{ NULL, NULL, NULL },
};

static long threads;

static int parse(int index, const char *arg)
{
	if (index == 0)
		return kr_parse_long("--threads", arg, 1, 64, &threads);
	FUZZ_CHECK(index == 1 && arg == NULL);
	return 0;
}

static int validate(const struct kr_opts *o)
{
	cpu_set_t online;

	kr_online_cpus(&online);
	FUZZ_CHECK(o->duration_s >= 0.001 && o->duration_s <= 3600);
	FUZZ_CHECK(!o->threshold_set || (o->threshold >= 0 && o->threshold <= 100));
	FUZZ_CHECK(o->format == KR_FMT_TEXT || o->format == KR_FMT_JSON || o->format == KR_FMT_TAP);
	FUZZ_CHECK(o->cpu == -1 || (o->cpu >= 0 && CPU_ISSET(o->cpu, &online)));
	FUZZ_CHECK(o->repeat >= 1 && o->repeat <= 100);
	FUZZ_CHECK(o->wait_s >= 0 && o->wait_s <= 86400);
	FUZZ_CHECK(!o->cpus_set || CPU_COUNT(&o->cpus) > 0);
	FUZZ_CHECK(threads >= 0 && threads <= 64);
	return -1; /* never run */
}

static int run(const struct kr_opts *o)
{
	(void)o;
	abort(); /* validate() always stops before */
}

static const struct kr_prog prog = {
	.name = "fuzzprog",
	.summary = "a program for fuzzing the command line",
	.description = "Nothing is measured.",
	.example = "fuzzprog --threads 2",
	.flags = KR_NEEDS_ROOT | KR_OPT_CPU | KR_OPT_CPUS | KR_OPT_SEED | KR_OPT_TRIGGER |
		 KR_OPT_MITIGATE | KR_OPT_REPEAT,
	.metric = "x",
	.unit = "%",
	.threshold = 20,
	.threshold_min = 0,
	.threshold_max = 100,
	.rule = "FAIL when x >= threshold",
	.duration_s = 1,
	.duration_max_s = 30,
	.repeat = 3,
	.options = options,
	.parse = parse,
	.validate = validate,
	.run = run,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_quiet_stderr();
	FILE *null = fopen("/dev/null", "w");
	if (null)
		stdout = null; /* --help and --version */
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = fuzz_cstr(data, size), *argv[18] = { "fuzzprog" };
	int argc = 1;

	for (size_t i = 0; i <= size && argc < 17;) {
		argv[argc++] = buf + i;
		i += strlen(buf + i) + 1;
	}
	argv[argc] = NULL;
	/* a real program calls kr_main once; here getopt's state from the previous input
	 * (which may point into freed memory) is reset first, as optind = 0 does */
	optind = 0;
	char *none[] = { "x", NULL };
	while (getopt_long(1, none, "", NULL, NULL) != -1)
		;
	threads = 0;
	int code = kr_main(&prog, argc, argv);
	FUZZ_CHECK(code == 0 || code == 128);
	free(buf);
	return 0;
}
