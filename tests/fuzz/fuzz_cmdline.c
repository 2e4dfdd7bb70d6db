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

static struct {
	long threads;
	bool flag;
	int64_t period_ns;
	int shape;
	double ratio;
	uint64_t size;
} cfg;

static const struct kr_option options[] = {
	KR_ARG_LONG("threads", "N", cfg.threads, 1, 64, "worker threads"),
	KR_ARG_FLAG("flag", cfg.flag, "a flag"),
	KR_ARG_TIME("period", cfg.period_ns, "us", 1000000, 1000000000, "a period"),
	KR_ARG_CHOICE("shape", "round|square", cfg.shape, "a shape"),
	KR_ARG_DOUBLE("ratio", "X", cfg.ratio, 1, 1000, "a ratio"),
	KR_ARG_SIZE("size", cfg.size, 4096, 1ULL << 40, "a size"),
	KR_ARG_CUSTOM("custom", "V", "goes to parse()"),
	{ NULL, NULL, NULL, 0, NULL, NULL, 0, 0, NULL },
};

static int parse(int index, const char *arg)
{
	FUZZ_CHECK(index == 6 && arg != NULL);
	return *arg == 'x' ? kr_usage_error("--custom: no x") : 0;
}

static int validate(const struct kr_opts *o)
{
	struct kr_cpus online;

	kr_online_cpus(&online);
	FUZZ_CHECK(o->duration_s >= 0.001 && o->duration_s <= 3600);
	FUZZ_CHECK(!o->threshold_set || (o->threshold >= 0 && o->threshold <= 100));
	FUZZ_CHECK(o->format == KR_FMT_TEXT || o->format == KR_FMT_JSON || o->format == KR_FMT_TAP);
	FUZZ_CHECK(o->cpu == -1 || (o->cpu >= 0 && kr_cpus_has(&online, o->cpu)));
	FUZZ_CHECK(o->repeat >= 1 && o->repeat <= 100);
	FUZZ_CHECK(o->wait_s >= 0 && o->wait_s <= 86400);
	for (int i = 0; i < o->cpus.n; i++)
		FUZZ_CHECK(kr_cpus_has(&online, o->cpus.cpu[i]));
	FUZZ_CHECK(cfg.threads >= 0 && cfg.threads <= 64);
	FUZZ_CHECK(cfg.period_ns == 0 || (cfg.period_ns >= 1000000 && cfg.period_ns <= 1000000000));
	FUZZ_CHECK(cfg.shape == 0 || cfg.shape == 1);
	FUZZ_CHECK(cfg.ratio == 0 || (cfg.ratio >= 1 && cfg.ratio <= 1000));
	FUZZ_CHECK(cfg.size == 0 || (cfg.size >= 4096 && cfg.size <= 1ULL << 40));
	kr_cpus_free(&online);
	return -1; /* never run */
}

static int run(const struct kr_opts *o)
{
	(void)o;
	abort(); /* validate() always stops before */
}

static const struct kr_cli cli = {
	.summary = "a program for fuzzing the command line",
	.description = "Nothing is measured.",
	.example = "fuzzprog --threads 2",
	.options = options,
	.parse = parse,
	.validate = validate,
};

static const struct kr_prog prog = {
	.name = "fuzzprog",
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
	memset(&cfg, 0, sizeof(cfg));
	int code = kr_main(&prog, &cli, argc, argv);
	FUZZ_CHECK(code == 0 || code == 128);
	free(buf);
	return 0;
}
