// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the mail form's harness (CONTRACT.md section 8): lib's calls for one run
 * with constant parameters. The report goes straight to stdout, the verdict line last.
 * Each change is printed first with the command that undoes it by hand (what a SIGKILL
 * would leave), kept in memory, and undone in reverse on exit, on SIGINT, SIGTERM, SIGHUP,
 * on a crash and at the hard time cap (alarm). The full programs link lib's other harness
 * (main.c, report.c, journal.c, env.c): options, formats, on-disk journal, --wait for the
 * lock. The form takes the same lock, /run/krepro/lock, or exits 128 naming its holder.
 */
#include "krepro.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define FORMAT(buf, fmt) do { va_list ap; va_start(ap, fmt); \
	(void)(fmt ? vsnprintf(buf, sizeof(buf), fmt, ap) : (*buf = 0)); va_end(ap); } while (0)

static const struct kr_prog *the_prog;
static struct kr_opts *the_opts;
static char causes[4][256];
static int ncauses, param_col; /* the column of the "params:" line being printed; 0: none */

const struct kr_opts *kr_options(void)
{
	return the_opts;
}

const struct kr_prog *kr_program(void)
{
	return the_prog;
}

double kr_hard_cap_s(void)
{
	double cap = the_opts->duration_s * (the_opts->repeat + 2) + 30;

	return fmax(cap, the_prog->duration_max_s) + 5;
}

void kr_say(const char *fmt, ...)
{
	va_list ap;

	if (param_col) /* ends the params line */
		putchar('\n'), param_col = 0;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* "HEAD word word ..." within 72 columns, continued after INDENT; kr_say ends the line */
static void wrap_word(const char *head, const char *indent, const char *w)
{
	int len = (int)strlen(w);

	if (!param_col || param_col + 1 + len > KR_TEXT_WIDTH)
		param_col = param_col ? printf("\n%s", indent) - 1 : printf("%s", head);
	for (int room; param_col + 1 + len > KR_TEXT_WIDTH; w += room, len -= room) {
		room = KR_TEXT_WIDTH - param_col - 1; /* a word longer than a line: a path */
		printf(" %.*s\n%s", room, w, indent);
		param_col = (int)strlen(indent);
	}
	param_col += printf(" %s", w);
}

static void wrap_words(const char *head, const char *indent, char *text)
{
	for (char *w = strtok(text, " "); w; w = strtok(NULL, " "))
		wrap_word(head, indent, w);
}

static void param_word(const char *kv)
{
	wrap_word("params:", "       ", kv);
}

void kr_param(const char *key, const char *fmt, ...)
{
	char v[256], kv[320];

	FORMAT(v, fmt);
	snprintf(kv, sizeof(kv), "%s=%s", key, v);
	param_word(kv);
}

void kr_params(const char *fmt, ...)
{
	char text[1024];

	FORMAT(text, fmt);
	wrap_words("params:", "       ", text);
}

void kr_env_standard(const char *const *knobs)
{
	struct utsname u;

	(void)knobs; /* the mail carries the environment */
	uname(&u);
	kr_say("%s (krepro %s mail form): %s %s, %d CPUs", the_prog->name, KR_VERSION, u.release,
	       u.machine, (int)sysconf(_SC_NPROCESSORS_ONLN));
}

void kr_warn(const char *fmt, ...)
{
	char line[1024];

	FORMAT(line, fmt);
	fprintf(stderr, "%s: %s\n", the_prog->name, line);
}

void kr_cause(const char *fmt, ...)
{
	if (ncauses == 4)
		return;
	FORMAT(causes[ncauses], fmt);
	ncauses++;
}

/* the verdict line, last: "NAME: VERDICT [why] [metric=V (limit T)] [extra]", as the full
 * program prints it: one longer than 72 columns is cut to the verdict and the metric (or
 * the reason's first words), what it leaves out in a "verdict: ..." line above it */
static int verdict_line(enum kr_verdict v, int code, double value, const char *why,
			const char *extra)
{
	static const char *const words[] = { "PASS", "FAIL", "SKIP", "ERROR" };
	char line[1280], m[160] = "", vb[32], tb[32], d[1200];
	bool metric = v < KR_SKIP || (v == KR_SKIP && !isnan(value));

	for (int i = 0; v == KR_FAIL && i < ncauses; i++)
		kr_say("known cause: %s", causes[i]);
	if (metric)
		snprintf(m, sizeof(m), "%s=%s%s (limit %s%s)", the_prog->metric,
			 kr_format_value(value, vb, 32), the_prog->unit,
			 kr_format_value(the_opts->threshold, tb, 32), the_prog->unit);
	int n = snprintf(line, sizeof(line), "%s: %s%s%s%s%s%s%s", the_prog->name, words[v],
			 *why ? " " : "", why, metric ? " " : "", m, *extra ? " " : "", extra);
	if (n <= KR_TEXT_WIDTH) {
		kr_say("%s", line);
	} else if (metric) {
		snprintf(d, sizeof(d), "%s %s", why, extra);
		wrap_words("verdict:", " ", d);
		kr_say("%s: %s %s%s", the_prog->name, words[v], v == KR_SKIP ? "inconclusive " : "", m);
	} else {
		int cut = 0, head = (int)(strlen(the_prog->name) + strlen(words[v])) + 3;
		for (int i = 0; line[i] && i + 1 <= KR_TEXT_WIDTH - 4; i++)
			if (line[i] == ' ')
				cut = i;
		if (cut < head) /* a reason with no space to break at (a path): cut in it */
			cut = KR_TEXT_WIDTH - 4;
		char head_word[8];
		snprintf(head_word, sizeof(head_word), "%s:", words[v]);
		snprintf(d, sizeof(d), "%s", why);
		wrap_words(head_word, " ", d);
		kr_say("%.*s ...", cut, line);
	}
	fflush(stdout);
	return code;
}

int kr_verdict(enum kr_verdict v, double value, const char *fmt, ...)
{
	char extra[512];

	FORMAT(extra, fmt);
	return verdict_line(v, (const int[]){ 0, 1, 125, 128 }[v], value,
			    v == KR_SKIP ? "inconclusive" : "", extra);
}

int kr_skip(int code, const char *fmt, ...)
{
	char why[512];

	FORMAT(why, fmt);
	return verdict_line(KR_SKIP, code, NAN, why, "");
}

int kr_error(const char *fmt, ...)
{
	char why[512];

	FORMAT(why, fmt);
	return verdict_line(KR_ERROR, KR_EXIT_ERROR, NAN, why, "");
}

int kr_inconclusive(double value, const char *fmt, ...)
{
	char reason[512], why[530];

	FORMAT(reason, fmt);
	snprintf(why, sizeof(why), "inconclusive (%s)%s", reason, isnan(value) ? "" : ":");
	return verdict_line(KR_SKIP, KR_EXIT_SKIP, value, why, "");
}

/* ---- the changes: each entry whole before it counts, read by the signal handler ---- */
static struct {
	char kind, path[256], old[64]; /* 'w' write old to path, 'd' rmdir, 'u' unlink,
					* 's' tid's policy and prio */
	int tid, policy, prio;
} undo_log[32];
static volatile sig_atomic_t nundo;
/* kr_cgroup_remove and kr_unlink_file, once a directory or file is registered: a run
 * that makes none leaves them out of its mail form */
static int (*remove_dir)(const char *path), (*remove_file)(const char *path);

/* how: the command that undoes it by hand */
static int undo_add(char kind, const char *path, const char *old, int tid, int policy, int prio,
		    const char *how, ...)
{
	char line[512];

	if (nundo == 32 || strlen(path) >= 256 || strlen(old) >= 64)
		return errno = ENOSPC, -1;
	FORMAT(line, how);
	kr_warn("if killed, undo by hand: %s", line);
	undo_log[nundo].kind = kind;
	strcpy(undo_log[nundo].path, path);
	strcpy(undo_log[nundo].old, old);
	undo_log[nundo].tid = tid, undo_log[nundo].policy = policy, undo_log[nundo].prio = prio;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return nundo++, 0;
}

int kr_journal_write_undo(const char *path, const char *value, const char *old)
{
	return undo_add('w', path, old, 0, 0, 0, "echo '%s' > %s", old, path) ? -1
	       : value ? kr_write_file(path, value) : 0;
}

int kr_journal_write(const char *path, const char *value)
{
	char old[64];

	return kr_read_file(path, old, sizeof(old)) < 0 ? -1
							: kr_journal_write_undo(path, value, old);
}

int kr_journal_mkdir(const char *path, mode_t mode)
{
	remove_dir = kr_cgroup_remove;
	return undo_add('d', path, "", 0, 0, 0, "rmdir %s", path) ? -1 : mkdir(path, mode);
}

int kr_journal_unlink(const char *path)
{
	remove_file = kr_unlink_file;
	return undo_add('u', path, "", 0, 0, 0, "rm -f %s", path);
}

int kr_journal_sched(pid_t tid, int policy, int prio)
{
	int old = sched_getscheduler(tid);
	struct sched_param sp = { 0 };

	if (old < 0 || sched_getparam(tid, &sp) ||
	    undo_add('s', "", "", tid, old, sp.sched_priority, "chrt %s -p %d %d", old == SCHED_FIFO
		     ? "-f" : old == SCHED_RR ? "-r" : "-o", sp.sched_priority, (int)tid))
		return -1;
	return kr_set_sched(tid, policy, prio);
}

/* undo everything, last first, with async-signal-safe calls only; returns the failures */
static int undo_all(void)
{
	int failed = 0;

	while (nundo > 0) {
		__typeof__(*undo_log) *u = &undo_log[--nundo];
		int fd = u->kind == 'w' ? open(u->path, O_WRONLY) : -1, r = -1;
		if (fd >= 0)
			r = write(fd, u->old, strlen(u->old)) < 0 ? -1 : 0, close(fd);
		if (u->kind == 'd')
			r = remove_dir(u->path);
		if (u->kind == 'u')
			r = remove_file(u->path);
		if (u->kind == 's')
			r = kr_set_sched(u->tid, u->policy, u->prio);
		failed += r < 0 && errno != ENOENT && errno != ESRCH; /* gone with its task */
	}
	return failed;
}

static char stop_msg[128];

static void on_fatal_signal(int sig)
{
	undo_all();
	if (write(STDOUT_FILENO, stop_msg, strlen(stop_msg)) < 0)
		_exit(128 + sig);
	_exit(KR_EXIT_ERROR);
}

int kr_mail_main(const struct kr_prog *p, struct kr_opts *o, int argc, char **argv)
{
	sigset_t all;

	the_prog = p, the_opts = o;
	for (int i = 1; i < argc; i++) {
		bool t = !strcmp(argv[i], "--trigger"), m = !strcmp(argv[i], "--mitigate");
		if (!(t && (p->flags & KR_OPT_TRIGGER)) && !(m && (p->flags & KR_OPT_MITIGATE)))
			return fprintf(stderr, "usage: %s [--trigger] [--mitigate]\n", argv[0]), 128;
		o->trigger |= t, o->mitigate |= m;
	}
	kr_cpus_init();
	if ((p->flags & KR_NEEDS_ROOT) && geteuid() != 0)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "needs root (it changes kernel settings)");
	const char *why = kr_kthreads_missing(p, o);
	if (why)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "%s", why);
	/* one krepro run at a time, the programs' lock (CONTRACT.md section 7): a form and a
	 * program at once restored each other's changes (issue 42: ksoftirqd/1 left at
	 * SCHED_FIFO 51 for good) */
	char holder[32] = "?";
	mkdir("/run/krepro", 0700);
	int lock = open("/run/krepro/lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0) {
		if (lock < 0 || errno != EWOULDBLOCK)
			return kr_error("cannot take /run/krepro/lock: %s", strerror(errno));
		holder[read(lock, holder, sizeof(holder) - 1) > 0 ? strcspn(holder, "\n") : 1] = 0;
		return kr_error("another krepro run (pid %s) holds /run/krepro/lock", holder);
	}
	if (ftruncate(lock, 0) == 0)
		dprintf(lock, "%d\n", (int)getpid());
	snprintf(stop_msg, sizeof(stop_msg), "\n%s: ERROR stopped by a signal, its time cap or "
		 "a crash; changes undone\n", p->name);
	for (const int *s = (const int[]){ SIGINT, SIGTERM, SIGHUP, SIGALRM, SIGSEGV, SIGBUS,
					   SIGFPE, SIGABRT, 0 }; *s; s++)
		signal(*s, on_fatal_signal);
	alarm((unsigned)kr_hard_cap_s() + 1);
	int code = p->run(o);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL); /* the undo below is not interrupted */
	if (undo_all())
		return fprintf(stderr, "%s: undo the changes above by hand\n", p->name), 128;
	return code;
}
