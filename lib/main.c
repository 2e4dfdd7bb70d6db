// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: kr_main(): the shared command line, the lock, and the supervising parent.
 *
 * The measurement runs in a child. The parent forwards SIGINT/SIGTERM/SIGHUP to it, waits,
 * and then restores every journaled change however the child ended (verdict, crash, signal,
 * hard time cap). If the parent itself is SIGKILLed, the child dies with it (PDEATHSIG) and
 * the next run of any program restores the journal.
 */
#include "krepro.h"
#include "internal.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static const struct kr_prog *the_prog;
static const struct kr_cli *the_cli;
static struct kr_opts the_opts;

const struct kr_opts *kr_options(void)
{
	return the_prog ? &the_opts : NULL;
}

const struct kr_prog *kr_program(void)
{
	return the_prog;
}

const struct kr_cli *kr_cli(void)
{
	return the_cli;
}

/* The options every program shares: one table for getopt and --help. */
enum {
	O_DURATION, O_THRESHOLD, O_REPEAT, O_CPU, O_CPUS, O_SEED, O_TRIGGER, O_MITIGATE, O_FORMAT,
	O_CSV, O_KSELFTEST,
	O_QUIET, O_WAIT, O_RESTORE_ONLY, O_HELP, O_VERSION, O_MAIL_PARAMS, O_N,
	OPT_COMMON = 256, OPT_PROG = 512
};

static const struct {
	const char *name, *arg; /* arg: NULL for a flag */
	unsigned needs;		/* the KR_OPT_ flag a program sets to take it; 0: all do */
	const char *help;	/* NULL: not in --help's list */
} common[O_N] = {
	[O_DURATION] = { "duration", "SEC", 0, "measurement time (default %g s); a run is capped "
		"at %g s unless --duration asks for more" },
	[O_THRESHOLD] = { "threshold", "V", 0, "verdict threshold (default %g%s, range %g-%g)" },
	[O_REPEAT] = { "repeat", "N", KR_OPT_REPEAT, "repeats (default %d); all must agree, "
		"else SKIP inconclusive" },
	[O_CPU] = { "cpu", "N", KR_OPT_CPU, "the CPU the phenomenon is provoked on" },
	[O_CPUS] = { "cpus", "LIST", KR_OPT_CPUS, "the CPUs to use, e.g. 0-3,6" },
	[O_SEED] = { "seed", "N", KR_OPT_SEED, "seed of the random number generator" },
	[O_TRIGGER] = { "trigger", NULL, KR_OPT_TRIGGER, "provoke the phenomenon on purpose (a "
		"positive control: must FAIL)" },
	[O_MITIGATE] = { "mitigate", NULL, KR_OPT_MITIGATE, "apply the known fix for the run "
		"(restored)" },
	[O_FORMAT] = { "format", "text|json|tap", 0, "report format (the exit code is the same)" },
	[O_CSV] = { "csv", "FILE", 0, "write raw samples to FILE" },
	[O_KSELFTEST] = { "kselftest", NULL, 0, "kselftest's conventions: TAP, SKIP exits 4 (on "
		"by itself under kselftest's runner)" },
	[O_QUIET] = { "quiet", NULL, 0, "print only the verdict line" },
	[O_WAIT] = { "wait", "SEC", 0, "wait up to SEC for another krepro run" },
	[O_RESTORE_ONLY] = { "restore-only", NULL, 0, "restore what killed runs left, and exit" },
	[O_HELP] = { "help", NULL, 0, NULL },
	[O_VERSION] = { "version", NULL, 0, NULL },
	/* for scripts/export: the parameters as C, for the mail form's constants */
	[O_MAIL_PARAMS] = { "mail-params", NULL, 0, NULL },
};

static bool want_help, want_version, want_mail_params;
static const char *given_common[O_N]; /* the shared options given, as typed */

/* Lines of --help within an email's width. A line at column 0 continues at indent; an
 * indented one ("  --opt ARG   help") as kr_print_wrapped places it. */
static void usage(int indent, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void usage(int indent, const char *fmt, ...)
{
	char *s = KR_VSTRF(fmt), *nl;

	for (char *l = s; l; l = nl ? nl + 1 : NULL) {
		if ((nl = strchr(l, '\n')))
			*nl = 0;
		kr_print_wrapped(stdout, "", l, *l == ' ' ? -1 : indent);
	}
	free(s);
}

static void usage_option(const char *name, const char *arg, const char *help)
{
	char left[64];

	snprintf(left, sizeof(left), "%s%s%s", name, arg ? " " : "", arg ? arg : "");
	usage(0, "  --%-22s %s", left, help);
}

static void print_usage(const struct kr_prog *p, const struct kr_cli *c)
{
	const char *u = p->unit ? p->unit : "";
	/* the description: lines at column 0 are running text, joined into paragraphs;
	 * indented lines (formulas, lists) stay as they are */
	char *d = kr_strf("%s", c->description);
	for (char *l = d, *nl; (nl = strchr(l, '\n')); l = nl + 1)
		if (*l != ' ' && *l != '\n' && nl[1] && nl[1] != ' ' && nl[1] != '\n')
			*nl = ' ';
	size_t n = strlen(d);
	if (n && d[n - 1] == '\n')
		d[n - 1] = 0;
	usage(0, "Usage: %s [OPTIONS]\n%s %s: %s\n\n%s", p->name, p->name, KR_VERSION, c->summary, d);
	free(d);
	/* the rule as one paragraph, whatever its line breaks */
	char *rule = kr_strf("\nVerdict: %s", p->rule);
	for (char *r = rule + 1, *w = rule + 1;; r++) {
		char c = *r == '\n' ? ' ' : *r;
		if (c == ' ' && w[-1] == ' ')
			continue;
		if (!(*w++ = c))
			break;
	}
	usage(2, "%s", rule);
	free(rule);
	usage(0, "  metric %s, default threshold %g%s", p->metric, p->threshold, u);
	if (c->options && c->options->name)
		usage(0, "\nProgram options:");
	for (const struct kr_option *po = c->options; po && po->name; po++)
		usage_option(po->name, po->argname, po->help);
	usage(0, "\nCommon options:");
	for (int i = 0; i < O_N; i++) {
		if (!common[i].help || (common[i].needs && !(p->flags & common[i].needs)))
			continue;
		char *h = i == O_DURATION ? kr_strf(common[i].help, p->duration_s, p->duration_max_s)
			: i == O_THRESHOLD ? kr_strf(common[i].help, p->threshold, u,
						     p->threshold_min, p->threshold_max)
			: i == O_REPEAT ? kr_strf(common[i].help, p->repeat)
			: kr_strf("%s", common[i].help);
		usage_option(common[i].name, common[i].arg, h);
		free(h);
	}
	usage(0, "  --help, --version\n\n"
	      "Exit codes (chosen for git bisect run):\n"
	      "  0 PASS: not observed      1 FAIL: observed (bisect: bad)\n"
	      "  125 SKIP: this kernel cannot run it, or inconclusive (bisect: skip)\n"
	      "  128 ERROR: bad usage or tool failure (bisect: abort)\n"
	      "  129 SKIP: this machine or user cannot run it (bisect: abort)");
	if (p->flags & (KR_NEEDS_KTHREADS | KR_MITIGATE_NEEDS_KTHREADS))
		usage(0, "  129 also%s where kernel threads are not visible (a PID namespace "
		      "of its own, as in a container): run it in the host's",
		      p->flags & KR_NEEDS_KTHREADS ? "" : " with --mitigate");
	usage(0, "  4 SKIP (125 and 129) in kselftest mode, as kselftest's KSFT_SKIP");
	usage(0, "\nExample:\n  %s", c->example);
}

static int parse_common_option(int i, const char *arg)
{
	int64_t ns;
	long l;

	given_common[i] = arg ? arg : "";
	switch (i) {
	case O_DURATION:
		if (kr_parse_duration_ns("--duration", arg, "s", 1000000, 3600000000000LL, &ns) < 0)
			return -1;
		the_opts.duration_s = (double)ns / 1e9;
		the_opts.duration_set = true;
		return 0;
	case O_THRESHOLD:
		the_opts.threshold_set = true;
		return kr_parse_double("--threshold", arg, the_prog->threshold_min,
				       the_prog->threshold_max, &the_opts.threshold);
	case O_FORMAT:
		if ((l = kr_parse_choice("--format", arg, common[O_FORMAT].arg)) < 0)
			return -1;
		the_opts.format = (enum kr_format)l;
		the_opts.format_set = true;
		return 0;
	case O_CSV:
		if (!*arg)
			return kr_usage_error("--csv: expected a file name");
		the_opts.csv = arg;
		return 0;
	case O_KSELFTEST: the_opts.kselftest = true; return 0;
	case O_CPU:
		if (kr_parse_long("--cpu", arg, 0, KR_MAX_CPUS - 1, &l) < 0 ||
		    kr_cpu_check("--cpu", (int)l) < 0)
			return -1;
		the_opts.cpu = (int)l;
		return 0;
	case O_CPUS:
		kr_cpus_free(&the_opts.cpus);
		return kr_parse_cpulist("--cpus", arg, &the_opts.cpus);
	case O_SEED:
		if (kr_parse_long("--seed", arg, 1, 0x7fffffffL, &l) < 0)
			return -1;
		the_opts.seed = (unsigned long long)l;
		return 0;
	case O_REPEAT:
		if (kr_parse_long("--repeat", arg, 1, 100, &l) < 0)
			return -1;
		the_opts.repeat = (int)l;
		return 0;
	case O_WAIT:
		if (kr_parse_duration_ns("--wait", arg, "s", 0, 86400000000000LL, &ns) < 0)
			return -1;
		the_opts.wait_s = (double)ns / 1e9;
		return 0;
	case O_QUIET: the_opts.quiet = true; return 0;
	case O_TRIGGER: the_opts.trigger = true; return 0;
	case O_MITIGATE: the_opts.mitigate = true; return 0;
	case O_RESTORE_ONLY: the_opts.restore_only = true; return 0;
	case O_HELP: want_help = true; return 0;
	case O_VERSION: want_version = true; return 0;
	case O_MAIL_PARAMS: want_mail_params = true; return 0;
	}
	return -1;
}

double kr_hard_cap_s(void)
{
	double cap = the_prog->duration_max_s;

	if (the_opts.duration_set && the_opts.duration_s * (the_opts.repeat + 2) + 30 > cap)
		cap = the_opts.duration_s * (the_opts.repeat + 2) + 30;
	return cap + 5;
}

static pid_t measuring_child;
static volatile sig_atomic_t supervisor_signal;
volatile sig_atomic_t kr_pre_run_signal;

/* Until the supervisor takes over, a signal only ends the wait for the lock. Installed
 * explicitly: a script's background job inherits SIGINT ignored, and the contract says
 * SIGINT stops a run however it was started. */
static void note_pre_run_signal(int sig)
{
	kr_pre_run_signal = sig;
}

/* SIGALRM: the hard cap, the child is killed */
static void forward_signal(int sig)
{
	supervisor_signal = sig;
	if (measuring_child > 0)
		kill(measuring_child, sig == SIGALRM ? SIGKILL : sig);
}

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGALRM };

/* SIGINT, SIGTERM, SIGHUP (and SIGALRM with alrm) to handler */
static void on_stop_signals(void (*handler)(int), bool alrm)
{
	for (int i = 0; i < 3 + alrm; i++)
		sigaction(stop_signals[i], &(struct sigaction){ .sa_handler = handler }, NULL);
}

static int supervise(void)
{
	sigset_t block, old;
	int status, code;

	sigemptyset(&block);
	for (int i = 0; i < 4; i++)
		sigaddset(&block, stop_signals[i]);
	sigprocmask(SIG_BLOCK, &block, &old);
	if (kr_pre_run_signal)
		return kr_error("interrupted by SIG%s before the measurement; nothing was "
				"changed", sigabbrev_np(kr_pre_run_signal));
	pid_t parent = getpid();
	/* the journal is the supervisor's: named by its pid, restored by it */
	if (kr_journal_begin() < 0)
		return kr_error("cannot create the journal in %s: %s", kr_rundir(), strerror(errno));
	fflush(NULL);
	measuring_child = fork();
	if (measuring_child < 0)
		return kr_error("fork: %s", strerror(errno));
	if (measuring_child == 0) {
		/* die with the supervisor, so no RT thread outlives it unsupervised */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(KR_EXIT_ERROR);
		/* a shell starts background jobs with SIGINT ignored: the contract says it stops */
		on_stop_signals(SIG_DFL, false);
		sigprocmask(SIG_SETMASK, &old, NULL);
		code = the_prog->run(&the_opts);
		fflush(NULL);
		_exit(code);
	}
	on_stop_signals(forward_signal, true);
	/* the hard cap: a run never exceeds it, whatever the program does */
	double cap = kr_hard_cap_s();
	alarm((unsigned)cap);
	sigprocmask(SIG_SETMASK, &old, NULL);
	while (waitpid(measuring_child, &status, 0) < 0 && errno == EINTR)
		;
	alarm(0);
	measuring_child = 0;
	int failed = kr_journal_finish();
	if (WIFEXITED(status))
		code = WEXITSTATUS(status);
	else if (supervisor_signal == SIGALRM)
		code = kr_error("exceeded the hard cap of %.0f s and was killed; state restored", cap);
	else if (supervisor_signal)
		code = kr_error("interrupted by SIG%s; state restored", sigabbrev_np(supervisor_signal));
	else
		code = kr_error("the measurement crashed (%s); state restored",
				strsignal(WTERMSIG(status)));
	if (failed) {
		kr_warn("%d change(s) could not be restored: see the messages above and %s", failed,
			kr_rundir());
		code = KR_EXIT_ERROR;
	}
	kr_kmsg("krepro: %s end: %s", the_prog->name, code == KR_EXIT_PASS ? "PASS"
		: code == KR_EXIT_FAIL ? "FAIL" : code == KR_EXIT_SKIP ||
		code == KR_EXIT_SKIP_MACHINE || code == KR_EXIT_KSFT_SKIP ? "SKIP" : "ERROR");
	return code;
}

/* a usage line on stderr, and the exit code of bad usage */
#define usage_exit(...) (kr_usage_error(__VA_ARGS__), KR_EXIT_ERROR)

/* the program options given, as typed (for --mail-params' comments) */
static const char *given[64];

static int parse_program_option(int i, const char *arg)
{
	const struct kr_option *po = &the_cli->options[i];
	char opt[64];
	long l;
	int k;

	snprintf(opt, sizeof(opt), "--%s", po->name);
	given[i] = arg ? arg : "";
	switch (po->type) {
	case KR_ARGT_CUSTOM:
		return the_cli->parse(i, arg);
	case KR_ARGT_FLAG:
		*(bool *)po->var = true;
		return 0;
	case KR_ARGT_LONG:
		if (kr_parse_long(opt, arg, (long)po->min, (long)po->max, &l) < 0)
			return -1;
		*(long *)po->var = l;
		return 0;
	case KR_ARGT_DOUBLE:
		return kr_parse_double(opt, arg, po->min, po->max, po->var);
	case KR_ARGT_TIME:
		return kr_parse_duration_ns(opt, arg, po->unit, (int64_t)po->min, (int64_t)po->max,
					    po->var);
	case KR_ARGT_SIZE:
		return kr_parse_size(opt, arg, (uint64_t)po->min, (uint64_t)po->max, po->var);
	case KR_ARGT_CHOICE:
		if ((k = kr_parse_choice(opt, arg, po->argname)) < 0)
			return -1;
		*(int *)po->var = k;
		return 0;
	}
	return -1;
}

/* the shortest decimal that reads back as v */
static const char *c_double(double v, char *buf, size_t len)
{
	for (int digits = 6; digits <= 17; digits++)
		if (snprintf(buf, len, "%.*g", digits, v) > 0 && strtod(buf, NULL) == v)
			break;
	return buf;
}

/* the shared option i as typed, or nothing, and the line's end */
static void typed(int i)
{
	if (given_common[i])
		printf("--%s%s%s", common[i].name, *given_common[i] ? " " : "", given_common[i]);
	putchar('\n');
}

/* --mail-params: this run's parameters as C values, one per line, for scripts/export:
 *   NAME<tab>VALUE<tab>AS TYPED
 * "opts.FIELD" for the shared options (every one), the program's variable ("cfg.slice_us")
 * for each program option given; a custom option given cannot be a constant: "custom". */
static int print_mail_params(void)
{
	const struct kr_opts *o = &the_opts;
	char b[64], list[512];

	printf("opts.duration_s\t%s\t", c_double(o->duration_s, b, sizeof(b)));
	typed(O_DURATION);
	printf("opts.threshold\t%s\t", c_double(o->threshold, b, sizeof(b)));
	typed(O_THRESHOLD);
	printf("opts.repeat\t%d\t", o->repeat);
	typed(O_REPEAT);
	printf("opts.cpu\t%d\t", o->cpu);
	typed(O_CPU);
	if (o->cpus.n) {
		printf("opts.cpus\t{ %d, (int[]){ ", o->cpus.n);
		for (int i = 0; i < o->cpus.n; i++)
			printf("%s%d", i ? ", " : "", o->cpus.cpu[i]);
		printf(" } }\t--cpus %s\n", kr_cpus_list(&o->cpus, list, sizeof(list)));
	}
	if (o->seed) {
		printf("opts.seed\t%llu\t", o->seed);
		typed(O_SEED);
	}
	printf("opts.trigger\t%s\t", o->trigger ? "true" : "false");
	typed(O_TRIGGER);
	printf("opts.mitigate\t%s\t", o->mitigate ? "true" : "false");
	typed(O_MITIGATE);
	for (int i = 0; the_cli->options && the_cli->options[i].name; i++) {
		const struct kr_option *po = &the_cli->options[i];
		if (!given[i])
			continue;
		printf("%s\t", po->type == KR_ARGT_CUSTOM ? "custom" : po->field);
		switch (po->type) {
		case KR_ARGT_CUSTOM: printf("?"); break;
		case KR_ARGT_FLAG: printf("true"); break;
		case KR_ARGT_LONG: printf("%ld", *(long *)po->var); break;
		case KR_ARGT_DOUBLE: printf("%s", c_double(*(double *)po->var, b, sizeof(b))); break;
		case KR_ARGT_TIME: printf("%lld", (long long)*(int64_t *)po->var); break;
		case KR_ARGT_SIZE: printf("%llu", (unsigned long long)*(uint64_t *)po->var); break;
		case KR_ARGT_CHOICE: printf("%d", *(int *)po->var); break;
		}
		printf("\t--%s%s%s\n", po->name, *given[i] ? " " : "", given[i]);
	}
	return KR_EXIT_PASS;
}

static int locked_run(void);

int kr_main(const struct kr_prog *p, const struct kr_cli *c, int argc, char **argv)
{
	struct option lo[64];
	int n = 0;

	the_prog = p;
	the_cli = c;
	kr_cpus_init(); /* before any thread pins itself */
	kr_cpus_free(&the_opts.cpus); /* of a previous call (tests, fuzzers) */
	memset(&the_opts, 0, sizeof(the_opts));
	memset(given, 0, sizeof(given));
	memset(given_common, 0, sizeof(given_common));
	the_opts.duration_s = p->duration_s;
	the_opts.threshold = p->threshold;
	the_opts.cpu = -1;
	the_opts.repeat = p->repeat > 0 ? p->repeat : 1;
	for (int i = 0; i < O_N; i++)
		if (!common[i].needs || (p->flags & common[i].needs))
			lo[n++] = (struct option){ common[i].name, common[i].arg ? required_argument
						   : no_argument, NULL, OPT_COMMON + i };
	for (int i = 0; c->options && c->options[i].name && n < 63; i++)
		lo[n++] = (struct option){ c->options[i].name, c->options[i].argname &&
					   c->options[i].type != KR_ARGT_FLAG ? required_argument
					   : no_argument, NULL, OPT_PROG + i };
	lo[n] = (struct option){ 0 };

	/* getopt_long takes any unambiguous prefix ("--cpu" for --cpus, "--dur"): a typo must
	 * not become another option, so only whole names pass (issue 42) */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (strncmp(argv[i], "--", 2))
			continue;
		size_t len = strcspn(argv[i] + 2, "=");
		int k = 0;
		while (k < n && (strlen(lo[k].name) != len || strncmp(lo[k].name, argv[i] + 2, len)))
			k++;
		if (k == n)
			return usage_exit("unknown option '%.*s' (see --help)", (int)len + 2, argv[i]);
		if (lo[k].has_arg == required_argument && !argv[i][2 + len])
			i++; /* its value, whatever it looks like */
	}
	opterr = 0;
	optind = 1;
	want_help = want_version = want_mail_params = false;
	for (int key; (key = getopt_long(argc, argv, ":", lo, NULL)) != -1;) {
		if (key == '?' || key == ':')
			return usage_exit("%s '%s'%s (see --help)", key == '?' ? "unknown option"
					  : "option", argv[optind - 1], key == ':' ? " needs a value" : "");
		if (key >= OPT_PROG ? parse_program_option(key - OPT_PROG, optarg) < 0
				    : parse_common_option(key - OPT_COMMON, optarg) < 0)
			return KR_EXIT_ERROR;
	}
	if (optind < argc)
		return usage_exit("unexpected argument '%s' (see --help)", argv[optind]);
	/* kselftest/runner.sh exports kselftest_timeout to each test it runs (kernels 5.x to
	 * today); its own convention then wins: SKIP is exit 4 and the report is TAP */
	if (getenv("kselftest_timeout"))
		the_opts.kselftest = true;
	if (the_opts.kselftest && !the_opts.format_set)
		the_opts.format = KR_FMT_TAP;
	if (want_help || want_version) {
		if (want_help)
			print_usage(p, c);
		else
			printf("%s (krepro) %s\n", p->name, KR_VERSION);
		return KR_EXIT_PASS;
	}
	if (c->validate && c->validate(&the_opts) < 0)
		return KR_EXIT_ERROR;
	if (want_mail_params)
		return print_mail_params();

	pid_t holder = 0;
	if (the_opts.restore_only) {
		/* a user cannot restore what root changed: 129, not "holds the lock" (issue 42) */
		if (geteuid() != 0)
			return kr_skip(KR_EXIT_SKIP_MACHINE, "--restore-only needs root (it restores "
				       "kernel settings)");
		if (kr_lock_take(the_opts.wait_s, &holder) < 0)
			return usage_exit("another krepro run (pid %d) holds %s/lock", (int)holder,
					  kr_rundir());
		int failed = 0, found = kr_journal_restore_stale(&failed);
		if (found < 0)
			return usage_exit("cannot read %s: %s", kr_rundir(), strerror(errno));
		if (failed)
			return usage_exit("%d of %d journal(s) of unfinished runs could not be "
					  "restored completely (kept in %s): see above", failed, found,
					  kr_rundir());
		kr_warn("%d journal(s) of unfinished runs restored", found);
		return KR_EXIT_PASS;
	}
	if ((p->flags & KR_NEEDS_ROOT) && geteuid() != 0)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "needs root (it changes kernel settings, journaled)");
	/* before the lock and the restore of others' journals: in a PID namespace of its own
	 * their pids are not this /proc's */
	const char *why = kr_kthreads_missing(p, &the_opts);
	if (why)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "%s", why);

	/* the last check before the lock: the one output file a run makes */
	if (the_opts.csv && kr_csv_create(the_opts.csv) < 0)
		return usage_exit("--csv %s: %s", the_opts.csv, errno == EEXIST ? "exists (a run "
				  "replaces no file: name a new one)" : errno == ELOOP ?
				  "a symbolic link (not followed)" : strerror(errno));
	int code = locked_run();
	kr_csv_finish(the_opts.csv);
	return code;
}

static int locked_run(void)
{
	pid_t holder = 0;

	on_stop_signals(note_pre_run_signal, false);
	if (kr_lock_take(the_opts.wait_s, &holder) < 0) {
		if (errno == EINTR)
			return kr_error("interrupted by SIG%s while waiting for %s/lock; nothing "
					"was changed", sigabbrev_np(kr_pre_run_signal), kr_rundir());
		if (errno == EWOULDBLOCK)
			return kr_error("another krepro run (pid %d) holds %s/lock; --wait SEC waits for it",
					(int)holder, kr_rundir());
		return kr_error("cannot take %s/lock: %s", kr_rundir(), strerror(errno));
	}
	int stale_failed = 0;
	kr_journal_restore_stale(&stale_failed);
	if (stale_failed)
		kr_warn("%d journal(s) of unfinished runs could not be restored completely "
			"(kept in %s): the machine may not be as it was", stale_failed, kr_rundir());
	kr_kmsg("krepro: %s start", the_prog->name);
	return supervise();
}
