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
static struct kr_opts the_opts;

const struct kr_opts *kr_options(void)
{
	return the_prog ? &the_opts : NULL;
}

const struct kr_prog *kr_program(void)
{
	return the_prog;
}

enum {
	OPT_DURATION = 1000, OPT_THRESHOLD, OPT_FORMAT, OPT_QUIET, OPT_CSV, OPT_CPU, OPT_CPUS, OPT_SEED,
	OPT_REPEAT, OPT_TRIGGER, OPT_MITIGATE, OPT_RESTORE_ONLY, OPT_WAIT, OPT_HELP, OPT_VERSION, OPT_KSELFTEST,
	OPT_PROG = 2000
};

/* The description refilled: lines that start at column 0 are running text and are joined
 * into paragraphs; indented lines (formulas, lists) stay as they are. */
static void print_description(FILE *f, const char *d)
{
	char *para = NULL;
	size_t n = 0;

	for (const char *l = d; l && *l; l += strcspn(l, "\n"), l += *l == '\n') {
		size_t len = strcspn(l, "\n");
		if (len && *l != ' ') {
			para = realloc(para, n + len + 2);
			if (!para)
				abort();
			if (n)
				para[n++] = ' ';
			memcpy(para + n, l, len);
			para[n += len] = 0;
			continue;
		}
		if (n)
			kr_print_wrapped(f, "", para, 0);
		n = 0;
		fprintf(f, "%.*s\n", (int)len, l);
	}
	if (n)
		kr_print_wrapped(f, "", para, 0);
	free(para);
}

static void print_usage(FILE *out)
{
	const struct kr_option *po = the_prog->options;
	const char *u = the_prog->unit && *the_prog->unit ? the_prog->unit : "";
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	fprintf(f, "Usage: %s [OPTIONS]\n%s %s: %s\n\n", the_prog->name, the_prog->name, KR_VERSION,
		the_prog->summary);
	print_description(f, the_prog->description);
	/* the rule as one paragraph, whatever its line breaks */
	char *rule = NULL;
	if (asprintf(&rule, "Verdict: %s", the_prog->rule) < 0)
		abort();
	for (char *r = rule, *w = rule;; r++) {
		char c = *r == '\n' ? ' ' : *r;
		if (c == ' ' && w > rule && w[-1] == ' ')
			continue;
		if (!(*w++ = c))
			break;
	}
	fputc('\n', f);
	kr_print_wrapped(f, "", rule, 2);
	free(rule);
	fprintf(f, "  metric %s, default threshold %g%s\n", the_prog->metric, the_prog->threshold, u);
	if (po && po->name) {
		fprintf(f, "\nProgram options:\n");
		for (; po->name; po++) {
			char left[64];
			snprintf(left, sizeof(left), "--%s%s%s", po->name, po->argname ? " " : "",
				 po->argname ? po->argname : "");
			fprintf(f, "  %-24s %s\n", left, po->help);
		}
	}
	fprintf(f, "\nCommon options:\n"
		   "  --duration SEC           measurement time (default %g s); a run is\n"
		   "                           capped at %g s unless --duration asks\n"
		   "                           for more\n"
		   "  --threshold V            verdict threshold (default %g%s, range %g-%g)\n",
		the_prog->duration_s, the_prog->duration_max_s, the_prog->threshold, u, the_prog->threshold_min,
		the_prog->threshold_max);
	if (the_prog->flags & KR_OPT_REPEAT)
		fprintf(f, "  --repeat N               repeats (default %d); all must agree, else\n"
			   "                           SKIP inconclusive\n",
			the_prog->repeat);
	if (the_prog->flags & KR_OPT_CPU)
		fprintf(f, "  --cpu N                  the CPU the phenomenon is provoked on\n");
	if (the_prog->flags & KR_OPT_CPUS)
		fprintf(f, "  --cpus LIST              the CPUs to use, e.g. 0-3,6\n");
	if (the_prog->flags & KR_OPT_SEED)
		fprintf(f, "  --seed N                 seed of the random number generator\n");
	if (the_prog->flags & KR_OPT_TRIGGER)
		fprintf(f, "  --trigger                provoke the phenomenon on purpose (a\n"
			   "                           positive control: must FAIL)\n");
	if (the_prog->flags & KR_OPT_MITIGATE)
		fprintf(f, "  --mitigate               apply the known fix for the run (restored)\n");
#ifndef KR_EXPORT_MINIMAL
	fprintf(f, "  --format text|json|tap   report format (the exit code is the same)\n"
		   "  --csv FILE               write raw samples to FILE\n"
		   "  --kselftest              kselftest's conventions: TAP, SKIP exits 4\n"
		   "                           (on by itself under kselftest's runner)\n");
#endif
	fprintf(f, "  --quiet                  print only the verdict line\n"
		   "  --wait SEC               wait up to SEC for another krepro run\n"
		   "  --restore-only           restore what killed runs left, and exit\n"
		   "  --help, --version\n"
		   "\nExit codes (chosen for git bisect run):\n"
		   "  0 PASS: not observed      1 FAIL: observed (bisect: bad)\n"
		   "  125 SKIP: this kernel cannot run it, or inconclusive (bisect: skip)\n"
		   "  128 ERROR: bad usage or tool failure (bisect: abort)\n"
		   "  129 SKIP: this machine or user cannot run it (bisect: abort)\n"
		   "  4 SKIP (125 and 129) in kselftest mode, as kselftest's KSFT_SKIP\n"
		   "\nExample:\n  %s\n", the_prog->example);
	fclose(f);
	/* every line within an email's width */
	for (char *l = text; l && *l;) {
		char *nl = strchr(l, '\n');
		if (nl)
			*nl = 0;
		if (*l)
			kr_print_wrapped(out, "", l, -1);
		else
			fputc('\n', out);
		l = nl ? nl + 1 : NULL;
	}
	free(text);
}

static int parse_common_option(int key, const char *arg)
{
	int64_t ns;
	long l;
	int i;

	switch (key) {
	case OPT_DURATION:
		if (kr_parse_duration_ns("--duration", arg, "s", 1000000, 3600000000000LL, &ns) < 0)
			return -1;
		the_opts.duration_s = (double)ns / 1e9;
		the_opts.duration_set = true;
		return 0;
	case OPT_THRESHOLD:
		the_opts.threshold_set = true;
		return kr_parse_double("--threshold", arg, the_prog->threshold_min, the_prog->threshold_max,
				       &the_opts.threshold);
	case OPT_FORMAT:
		if ((i = kr_parse_choice("--format", arg, "text|json|tap")) < 0)
			return -1;
#ifdef KR_EXPORT_MINIMAL /* JSON and TAP are not in the export */
		if (i != KR_FMT_TEXT)
			return kr_usage_error("--format: only text in this export");
#endif
		the_opts.format = (enum kr_format)i;
		the_opts.format_set = true;
		return 0;
	case OPT_QUIET: the_opts.quiet = true; return 0;
	case OPT_CSV:
#ifndef KR_EXPORT_MINIMAL
		if (!*arg)
			return kr_usage_error("--csv: expected a file name");
		the_opts.csv = arg;
		return 0;
#else
		return kr_usage_error("--csv: not in this export (see its first lines)");
#endif
	case OPT_CPU: {
		if (kr_parse_long("--cpu", arg, 0, CPU_SETSIZE - 1, &l) < 0 ||
		    kr_cpu_check("--cpu", (int)l) < 0)
			return -1;
		the_opts.cpu = (int)l;
		return 0;
	}
	case OPT_CPUS:
		the_opts.cpus_set = true;
		return kr_parse_cpulist("--cpus", arg, &the_opts.cpus);
	case OPT_SEED:
		if (kr_parse_long("--seed", arg, 0, 0x7fffffffL, &l) < 0)
			return -1;
		the_opts.seed = (unsigned long long)l;
		the_opts.seed_set = true;
		return 0;
	case OPT_REPEAT:
		if (kr_parse_long("--repeat", arg, 1, 100, &l) < 0)
			return -1;
		the_opts.repeat = (int)l;
		return 0;
	case OPT_TRIGGER: the_opts.trigger = true; return 0;
	case OPT_MITIGATE: the_opts.mitigate = true; return 0;
	case OPT_RESTORE_ONLY: the_opts.restore_only = true; return 0;
	case OPT_KSELFTEST: the_opts.kselftest = true; return 0;
	case OPT_WAIT:
		if (kr_parse_duration_ns("--wait", arg, "s", 0, 86400000000000LL, &ns) < 0)
			return -1;
		the_opts.wait_s = (double)ns / 1e9;
		return 0;
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

static void forward_signal(int sig)
{
	supervisor_signal = sig;
	if (measuring_child > 0)
		kill(measuring_child, sig);
}

static void kill_on_hard_cap(int sig)
{
	(void)sig;
	supervisor_signal = SIGALRM;
	if (measuring_child > 0)
		kill(measuring_child, SIGKILL);
}

static const char *verdict_of_exit(int code)
{
	switch (code) {
	case KR_EXIT_PASS: return "PASS";
	case KR_EXIT_FAIL: return "FAIL";
	case KR_EXIT_SKIP: case KR_EXIT_SKIP_MACHINE: case KR_EXIT_KSFT_SKIP: return "SKIP";
	default: return "ERROR";
	}
}

static int supervise(void)
{
	sigset_t block, old;
	int status, code;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGALRM);
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
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		code = the_prog->run(&the_opts);
		fflush(NULL);
		_exit(code);
	}
	kr_journal_child(measuring_child);
	struct sigaction sa = { .sa_handler = forward_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = kill_on_hard_cap;
	sigaction(SIGALRM, &sa, NULL);
	/* the hard cap: a run never exceeds it, whatever the program does */
	double cap = kr_hard_cap_s();
	alarm((unsigned)cap);
	sigprocmask(SIG_SETMASK, &old, NULL);
	while (waitpid(measuring_child, &status, 0) < 0 && errno == EINTR)
		;
	alarm(0);
	measuring_child = 0;
	int failed = kr_journal_finish();
	if (WIFEXITED(status)) {
		code = WEXITSTATUS(status);
	} else {
		int sig = WTERMSIG(status);
		if (supervisor_signal == SIGALRM)
			code = kr_error("exceeded the hard cap of %.0f s and was killed; state restored", cap);
		else if (supervisor_signal)
			code = kr_error("interrupted by SIG%s; state restored", sigabbrev_np(supervisor_signal));
		else
			code = kr_error("the measurement crashed (%s); state restored", strsignal(sig));
	}
	if (failed) {
		kr_warn("%d change(s) could not be restored: see the messages above and %s", failed,
			kr_rundir());
		code = KR_EXIT_ERROR;
	}
	kr_kmsg("krepro: %s end: %s", the_prog->name, verdict_of_exit(code));
	return code;
}

int kr_main(const struct kr_prog *p, int argc, char **argv)
{
	struct option lo[64];
	int n = 0, nprog = 0;

	the_prog = p;
	kr_cpus_init(); /* before any thread pins itself */
	memset(&the_opts, 0, sizeof(the_opts));
	the_opts.duration_s = p->duration_s;
	the_opts.threshold = p->threshold;
	the_opts.cpu = -1;
	the_opts.repeat = p->repeat > 0 ? p->repeat : 1;

#define ADD(nm, has, key) lo[n++] = (struct option){ nm, has, NULL, key }
	ADD("duration", required_argument, OPT_DURATION);
	ADD("threshold", required_argument, OPT_THRESHOLD);
	ADD("format", required_argument, OPT_FORMAT);
	ADD("quiet", no_argument, OPT_QUIET);
	ADD("csv", required_argument, OPT_CSV);
	ADD("wait", required_argument, OPT_WAIT);
	ADD("restore-only", no_argument, OPT_RESTORE_ONLY);
	ADD("kselftest", no_argument, OPT_KSELFTEST);
	ADD("help", no_argument, OPT_HELP);
	ADD("version", no_argument, OPT_VERSION);
	if (p->flags & KR_OPT_CPU)
		ADD("cpu", required_argument, OPT_CPU);
	if (p->flags & KR_OPT_CPUS)
		ADD("cpus", required_argument, OPT_CPUS);
	if (p->flags & KR_OPT_SEED)
		ADD("seed", required_argument, OPT_SEED);
	if (p->flags & KR_OPT_REPEAT)
		ADD("repeat", required_argument, OPT_REPEAT);
	if (p->flags & KR_OPT_TRIGGER)
		ADD("trigger", no_argument, OPT_TRIGGER);
	if (p->flags & KR_OPT_MITIGATE)
		ADD("mitigate", no_argument, OPT_MITIGATE);
	for (const struct kr_option *po = p->options; po && po->name && n < 62; po++, nprog++)
		ADD(po->name, po->argname ? required_argument : no_argument, OPT_PROG + nprog);
	lo[n] = (struct option){ 0 };
#undef ADD

	opterr = 0;
	optind = 1;
	bool help = false, version = false;
	for (;;) {
		int idx = -1;
		int key = getopt_long(argc, argv, ":", lo, &idx);
		if (key == -1)
			break;
		if (key == '?') {
			kr_usage_error("unknown option '%s' (see --help)", argv[optind - 1]);
			return KR_EXIT_ERROR;
		}
		if (key == ':') {
			kr_usage_error("option '%s' needs a value (see --help)", argv[optind - 1]);
			return KR_EXIT_ERROR;
		}
		if (key == OPT_HELP)
			help = true;
		else if (key == OPT_VERSION)
			version = true;
		else if (key >= OPT_PROG) {
			if (p->parse(key - OPT_PROG, optarg) < 0)
				return KR_EXIT_ERROR;
		} else if (parse_common_option(key, optarg) < 0) {
			return KR_EXIT_ERROR;
		}
	}
	if (optind < argc) {
		kr_usage_error("unexpected argument '%s' (see --help)", argv[optind]);
		return KR_EXIT_ERROR;
	}
	/* kselftest/runner.sh exports kselftest_timeout to each test it runs (kernels 5.x to
	 * today); its own convention then wins: SKIP is exit 4 and the report is TAP */
	if (getenv("kselftest_timeout"))
		the_opts.kselftest = true;
	if (the_opts.kselftest && !the_opts.format_set)
		the_opts.format = KR_FMT_TAP;
	if (help) {
		print_usage(stdout);
		return KR_EXIT_PASS;
	}
	if (version) {
		printf("%s (krepro) %s\n", p->name, KR_VERSION);
		return KR_EXIT_PASS;
	}
	if (p->validate && p->validate(&the_opts) < 0)
		return KR_EXIT_ERROR;

	if (the_opts.restore_only) {
		pid_t holder = 0;
		if (kr_lock_take(the_opts.wait_s, &holder) < 0) {
			kr_usage_error("another krepro run (pid %d) holds %s/lock", (int)holder, kr_rundir());
			return KR_EXIT_ERROR;
		}
		int failed = 0, found = kr_journal_restore_stale(&failed);
		if (found < 0) {
			kr_usage_error("cannot read %s: %s", kr_rundir(), strerror(errno));
			return KR_EXIT_ERROR;
		}
		if (failed) {
			fprintf(stderr, "%s: %d of %d journal(s) of unfinished runs could not be "
				"restored completely (kept in %s): see above\n", p->name, failed, found,
				kr_rundir());
			return KR_EXIT_ERROR;
		}
		fprintf(stderr, "%s: %d journal(s) of unfinished runs restored\n", p->name, found);
		return KR_EXIT_PASS;
	}
	if ((p->flags & KR_NEEDS_ROOT) && geteuid() != 0)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "needs root (it changes kernel settings, journaled)");

	struct sigaction pre = { .sa_handler = note_pre_run_signal };
	sigaction(SIGINT, &pre, NULL);
	sigaction(SIGTERM, &pre, NULL);
	sigaction(SIGHUP, &pre, NULL);
	pid_t holder = 0;
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
	kr_kmsg("krepro: %s start", p->name);
	return supervise();
}
