// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: strings, the vote of repeats, time, statistics, /proc and /sys readers and
 * parsers, kernel config lookup, scheduling policy and the RT watchdog: what both
 * harnesses (lib's full one and the mail form's) share.
 */
#include "krepro.h"
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- strings ---- */
char *kr_vstrf(const char *fmt, va_list ap)
{
	char *s = NULL;

	if (vasprintf(&s, fmt, ap) < 0) {
		perror("krepro: out of memory");
		abort();
	}
	return s;
}

char *kr_strf(const char *fmt, ...)
{
	return KR_VSTRF(fmt);
}

const char *kr_format_value(double v, char *buf, size_t len)
{
	double a = fabs(v);

	/* three significant digits, the decade chosen by the value as it rounds: 0.9996 and
	 * 1.0 are both "1.00" (0.9996 was "1.000": a program and its mail form measuring
	 * 0.9996 and 1.0 printed different digits), never a bare "1" */
	snprintf(buf, len, !isfinite(v) ? "n/a" : a >= 99.95 ? "%.0f" : a >= 9.995 ? "%.1f" :
		 a >= 0.9995 || a == 0 ? "%.2f" : a >= 0.09995 ? "%.3f" : "%.3g", v);
	return buf;
}

/* ---- verdicts of repeats ---- */
enum kr_verdict kr_vote(const enum kr_verdict *v, int n, int *npass, int *nfail)
{
	int p = 0, f = 0;

	for (int i = 0; i < n; i++)
		p += v[i] == KR_PASS, f += v[i] == KR_FAIL;
	if (npass)
		*npass = p;
	if (nfail)
		*nfail = f;
	return p && !f ? KR_PASS : f && !p ? KR_FAIL : KR_SKIP;
}

/* ---- time ---- */
int64_t kr_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void kr_sleep_until_ns(int64_t t)
{
	struct timespec ts = { .tv_sec = t / 1000000000LL, .tv_nsec = t % 1000000000LL };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

void kr_sleep_ns(int64_t ns)
{
	kr_sleep_until_ns(kr_now_ns() + ns);
}

/* ---- statistics ---- */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double kr_percentile(const double *sorted, size_t n, double p)
{
	/* nearest rank: the smallest value with at least p% of the data at or below it;
	 * the epsilon keeps 99.9% of 1000 at rank 999 (0.999 * 1000 is 999.0000000000001) */
	double rank = ceil(p / 100.0 * (double)n - 1e-9);
	return !n ? NAN : sorted[rank < 1 ? 0 : rank >= (double)n ? n - 1 : (size_t)rank - 1];
}

void kr_stats(double *v, size_t n, struct kr_stats *s)
{
	double sum = 0, ss = 0, mean;

	if (n)
		qsort(v, n, sizeof(double), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	mean = n ? sum / (double)n : NAN;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - mean) * (v[i] - mean);
	*s = (struct kr_stats){ .n = n, .min = n ? v[0] : NAN, .max = n ? v[n - 1] : NAN, .mean = mean,
		.median = kr_percentile(v, n, 50), .stdev = n > 1 ? sqrt(ss / (double)(n - 1)) : n ? 0 : NAN };
}

void kr_histogram(const double *v, size_t n, double lo, double hi, size_t nbins, size_t *bins)
{
	memset(bins, 0, nbins * sizeof(*bins));
	for (size_t i = 0; nbins && hi > lo && i < n; i++) {
		double x = (v[i] - lo) / (hi - lo) * (double)nbins;
		bins[x < 0 ? 0 : x >= (double)nbins ? nbins - 1 : (size_t)x]++;
	}
}

/* ---- files ---- */
#ifndef KR_MAIL
const char *kr_root; /* tests: a recorded machine (internal.h) */

const char *kr_rooted(const char *path, char *buf, size_t len)
{
	if (!kr_root || (strncmp(path, "/sys/", 5) && strncmp(path, "/proc/", 6)))
		return path;
	snprintf(buf, len, "%s%s", kr_root, path);
	return buf;
}
#endif

/* all of f as a malloc'd string (up to a NUL: these text files hold none); NULL with errno */
static char *read_stream(FILE *f)
{
	char *buf = NULL;
	size_t cap = 0;

	if (getdelim(&buf, &cap, 0, f) < 0 && buf)
		*buf = 0; /* empty (glibc and musl allocate buf even then) */
	if (ferror(f))
		free(buf), buf = NULL;
	return buf;
}

char *kr_read_text(const char *path)
{
#ifdef KR_MAIL
	FILE *f = fopen(path, "re");
#else
	char at[1024];
	FILE *f = fopen(kr_rooted(path, at, sizeof(at)), "re");
#endif
	char *t = f ? read_stream(f) : NULL;

	if (f)
		fclose(f);
	return t;
}

/* read() until EOF: a seq_file returns about one page per read() (/proc/net/softnet_stat:
 * some 35 CPU rows), a pipe what was written so far */
int kr_read_file(const char *path, char *buf, size_t len)
{
#ifdef KR_MAIL
	int fd = open(path, O_RDONLY | O_CLOEXEC);
#else
	char at[1024];
	int fd = open(kr_rooted(path, at, sizeof(at)), O_RDONLY | O_CLOEXEC);
#endif
	ssize_t r = 1;
	size_t n = 0;
	char more[64];

	if (fd < 0)
		return -1; /* buf as it was */
	while (r > 0 && n + 1 < len && (r = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)r;
	/* buf is full: what follows does not fit, unless it is newlines (stripped anyway) */
	while (r > 0 && (r = read(fd, more, sizeof(more))) > 0)
		for (ssize_t i = 0; i < r; i++)
			if (more[i] != '\n')
				r = -2;
	close(fd);
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = 0;
	if (r == -2)
		errno = EFBIG;
	return r < 0 ? -1 : (int)n;
}

int kr_read_u64(const char *path, uint64_t *out)
{
	char buf[64], *end;

	errno = 0;
	if (kr_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	unsigned long long v = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && !isspace((unsigned char)*end)))
		return errno = EINVAL, -1;
	return *out = v, 0;
}

int kr_write_file(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC); /* like the shell's ">" */
	ssize_t n = (ssize_t)strlen(value), w = fd < 0 ? -1 : write(fd, value, (size_t)n);

	if (fd >= 0)
		close(fd);
	return w == n ? 0 : -1; /* a short write to a sysctl or sysfs file does not happen */
}

/* Random writes split a big file's extents; on a -o discard mount unlink then frees them
 * one discard each (1 GiB: 6-9 s, over a minute on a loaded host, after a signal too).
 * Zeroing the range first merges them into one. Async-signal-safe: the undo calls it. */
int kr_unlink_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0) /* not a regular file, or empty: EINVAL or ENODEV, harmless */
		(void)fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, lseek(fd, 0, SEEK_END)), close(fd);
	return unlink(path);
}

/* "key value" and "Key:   123 kB" lines */
int kr_kv_get(const char *text, const char *key, uint64_t *out)
{
	size_t k = strlen(key);

	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, k))
			continue;
		const char *q = p + k + (p[k] == ':');
		if (*q != ' ' && *q != '\t')
			continue; /* a longer key with this prefix */
		q += strspn(q, " \t");
		errno = 0;
		unsigned long long v = strtoull(q, NULL, 10);
		return isdigit((unsigned char)*q) && !errno ? (*out = v, 0) : -1;
	}
	return -1;
}

/* ---- /proc/stat ---- */
int kr_parse_proc_stat(const char *text, struct kr_cpu_times *all, struct kr_cpu_times *per,
		       int maxcpus)
{
	int found_all = 0, ncpu = 0;

	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, "cpu", 3))
			continue;
		char *end = (char *)p + 3;
		long cpu = isdigit((unsigned char)p[3]) ? strtol(p + 3, &end, 10) : -1;
		struct kr_cpu_times t = { 0 }, *to = cpu < 0 ? all : cpu < maxcpus && per ? &per[cpu] : NULL;
		if (*end != ' ' || !to ||
		    sscanf(end, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
			   " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &t.user, &t.nice, &t.system,
			   &t.idle, &t.iowait, &t.irq, &t.softirq, &t.steal, &t.guest, &t.guest_nice) < 4)
			continue;
		*to = t;
		if (cpu < 0)
			found_all = 1;
		else if (cpu + 1 > ncpu)
			ncpu = (int)cpu + 1;
	}
	return found_all ? ncpu : -1;
}

int kr_read_proc_stat(struct kr_cpu_times *all, struct kr_cpu_times *per, int maxcpus)
{
	char *t = kr_read_text("/proc/stat");
	int n = t ? kr_parse_proc_stat(t, all, per, maxcpus) : -1;

	free(t);
	return n;
}

uint64_t kr_cpu_times_total(const struct kr_cpu_times *t)
{
	/* guest time is already included in user/nice */
	return t->user + t->nice + t->system + t->idle + t->iowait + t->irq + t->softirq + t->steal;
}

long kr_user_hz(void)
{
	long hz = sysconf(_SC_CLK_TCK);
	return hz > 0 ? hz : 100;
}

/* ---- /proc/PID/schedstat and stat ---- */
int kr_parse_schedstat(const char *text, struct kr_schedstat *s)
{
	return sscanf(text, "%" SCNu64 " %" SCNu64 " %" SCNu64, &s->run_ns, &s->wait_ns,
		      &s->slices) == 3 ? 0 : -1;
}

int kr_read_schedstat(pid_t pid, pid_t tid, struct kr_schedstat *s)
{
	char path[64], buf[128];

	/* /proc/PID/schedstat is the thread group leader's, as task/PID/schedstat */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)(tid ? tid : pid));
	return kr_read_file(path, buf, sizeof(buf)) < 0 ? -1 : kr_parse_schedstat(buf, s);
}

int kr_parse_taskstat(const char *text, struct kr_taskstat *t)
{
	/* comm may contain spaces and parentheses: it ends at the last ')' */
	const char *l = strchr(text, '('), *r = strrchr(text, ')');

	memset(t, 0, sizeof(*t));
	if (!l || !r || r < l)
		return -1;
	snprintf(t->comm, sizeof(t->comm), "%.*s", (int)(r - l - 1), l + 1);
	/* the fields after comm, as proc(5) numbers them: 3 state, 4 ppid, 9 flags,
	 * 22 starttime, 39 processor, 40 rt_priority, 41 policy */
#define SKIP4 " %*s %*s %*s %*s"
	return sscanf(r + 1, " %c %d %*s %*s %*s %*s %lu" SKIP4 SKIP4 SKIP4 " %llu" SKIP4 SKIP4
		      SKIP4 SKIP4 " %d %d %d", &t->state, &t->ppid, &t->flags, &t->starttime,
		      &t->processor, &t->rt_priority, &t->policy) == 7 ? 0 : -1;
#undef SKIP4
}

int kr_read_taskstat(pid_t tid, struct kr_taskstat *t)
{
	char path[64], buf[1024];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)tid);
	return kr_read_file(path, buf, sizeof(buf)) < 0 ? -1 : kr_parse_taskstat(buf, t);
}

/* comm matches pattern; kthread: and PF_KTHREAD (include/linux/sched.h) is set */
static bool task_matches(pid_t tid, const char *pattern, bool kthread)
{
	struct kr_taskstat t;
	return !kr_read_taskstat(tid, &t) && !fnmatch(pattern, t.comm, 0) &&
	       (!kthread || (t.flags & 0x00200000));
}

/* every thread of every process */
static int scan_tasks(const char *pattern, bool kthreads, pid_t *tids, int max)
{
	glob_t g;
	int n = 0;

	if (glob("/proc/[0-9]*/task/[0-9]*", GLOB_NOSORT, NULL, &g))
		return -1;
	for (size_t i = 0; i < g.gl_pathc && n < max; i++)
		if (task_matches(atoi(strrchr(g.gl_pathv[i], '/') + 1), pattern, kthreads))
			tids[n++] = atoi(strrchr(g.gl_pathv[i], '/') + 1);
	globfree(&g);
	return n;
}

int kr_find_tasks(const char *pattern, pid_t *tids, int max)
{
	return scan_tasks(pattern, false, tids, max);
}

int kr_find_kthreads(const char *pattern, pid_t *tids, int max)
{
	/* every kthread but kthreadd (2) is its child: one short file, not every task's stat */
	char *kids = kr_read_text("/proc/2/task/2/children"), *p = kids;
	int n = kids && *kids ? 0 : scan_tasks(pattern, true, tids, max); /* !PROC_CHILDREN */

	for (long pid = 2; kids && *kids && pid > 0 && n < max; pid = strtol(p, &p, 10))
		if (task_matches((pid_t)pid, pattern, false))
			tids[n++] = (pid_t)pid;
	free(kids);
	return n;
}

bool kr_kthreads_visible(void)
{
	char stat[512] = "";
	int ppid = -1;

	kr_read_file("/proc/2/stat", stat, sizeof(stat));
	return sscanf(stat, "2 (kthreadd) %*c %d", &ppid) == 1 && ppid == 0;
}

const char *kr_kthreads_missing(const struct kr_prog *p, const struct kr_opts *o)
{
	unsigned need = KR_NEEDS_KTHREADS | (o->mitigate ? KR_MITIGATE_NEEDS_KTHREADS : 0);

	if (!(p->flags & need) || kr_kthreads_visible())
		return NULL;
	kr_say("PID 2 is not kthreadd here: run it in the host's PID namespace");
	return "kernel threads not visible: a PID namespace of its own";
}

/* ---- kernel config ---- */
int kr_kconfig_parse(const char *text, const char *option, char *buf, size_t len)
{
	size_t olen = strlen(option);

	/* "# CONFIG_X is not set" reads as absent: "n" */
	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, option, olen) || p[olen] != '=')
			continue;
		const char *v = p + olen + 1;
		int n = (int)strcspn(v, "\n"), q = n >= 2 && *v == '"' && v[n - 1] == '"';
		snprintf(buf, len, "%.*s", n - 2 * q, v + q);
		return 1;
	}
	snprintf(buf, len, "n");
	return 0;
}

const char *kr_kconfig_text(void)
{
	static char *text;
	static int tried;
	/* no zlib in lib/: gzip (or busybox's zcat) inflates /proc/config.gz */
	FILE *f = tried++ ? NULL : popen("(cat /boot/config-$(uname -r) || gzip -dc /proc/config.gz "
					 "|| zcat /proc/config.gz) 2>/dev/null", "r");

	if (f)
		text = read_stream(f), pclose(f);
	return text && *text ? text : NULL;
}

int kr_kconfig(const char *option, char *buf, size_t len)
{
	const char *text = kr_kconfig_text();

	if (text)
		return kr_kconfig_parse(text, option, buf, len);
	snprintf(buf, len, "unknown");
	return -1;
}

/* ---- scheduling ---- */
pid_t kr_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* SCHED_OTHER 0, FIFO 1, RR 2, BATCH 3, IDLE 5, DEADLINE 6 */
const char *kr_policy_name(int policy)
{
	static const char *const n[] = { "SCHED_OTHER", "SCHED_FIFO", "SCHED_RR", "SCHED_BATCH",
					 "SCHED_?", "SCHED_IDLE", "SCHED_DEADLINE" };
	return policy >= 0 && policy < 7 ? n[policy] : "SCHED_?";
}

/* as ps -o cls prints it */
const char *kr_policy_short(int policy)
{
	static const char *const n[] = { "TS", "FF", "RR", "B", "?", "IDL", "DLN" };
	return policy >= 0 && policy < 7 ? n[policy] : "?";
}

int kr_set_sched(pid_t tid, int policy, int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	return sched_setscheduler(tid, policy, &sp);
}

/* ---- watchdog: a SCHED_FIFO 99 thread, unpinned, that no RT burner below 99 starves ---- */
struct kr_watchdog {
	pthread_t thread;
	pid_t tid;
	int64_t until; /* the deadline + 200 ms of grace */
	int fired;
};

static void *watchdog_main(void *arg)
{
	struct kr_watchdog *w = arg;

	kr_sleep_until_ns(w->until); /* a cancellation point: disarming cancels the thread */
	kr_set_sched(w->tid, SCHED_OTHER, 0); /* the RT loop overran: take its priority */
	w->fired = 1;
	return NULL;
}

struct kr_watchdog *kr_watchdog_arm(pid_t tid, int64_t deadline_ns)
{
	struct kr_watchdog *w = malloc(sizeof(*w));

	if (!w)
		return NULL;
	*w = (struct kr_watchdog){ .tid = tid, .until = deadline_ns + 200000000 };
	if (kr_thread_start(&w->thread, -1, SCHED_FIFO, 99, watchdog_main, w) == 0)
		return w;
	free(w);
	return NULL;
}

int kr_watchdog_disarm(struct kr_watchdog *w)
{
	if (!w)
		return 0;
	pthread_cancel(w->thread); /* 0 also when it has already fired and ended */
	pthread_join(w->thread, NULL);
	int fired = w->fired;
	free(w);
	if (fired)
		kr_warn("watchdog: the RT loop overran; demoted to SCHED_OTHER");
	return fired;
}

/* ---- cpuidle ---- */
void kr_cpuidle_path(const char *sysdir, int cpu, int k, const char *file, char *buf, size_t len)
{
	snprintf(buf, len, "%s/cpu%d/cpuidle/state%d/%s", sysdir ? sysdir : "/sys/devices/system/cpu",
		 cpu, k, file);
}

int kr_cpuidle_states(const char *sysdir, int cpu, struct kr_idle_state *st, int max)
{
	char p[512], v[64];
	int n = 0;

#define STATE_FILE(name) (kr_cpuidle_path(sysdir, cpu, n, name, p, sizeof(p)), p)
	for (struct kr_idle_state *s = st; n < max; n++, s++) {
		*s = (struct kr_idle_state){ .disable = "?" };
		if (kr_read_file(STATE_FILE("name"), s->name, sizeof(s->name)) < 0)
			break;
		s->latency_us = kr_read_file(STATE_FILE("latency"), v, sizeof(v)) > 0 ? atol(v) : -1;
		s->residency_us = kr_read_file(STATE_FILE("residency"), v, sizeof(v)) > 0 ? atol(v) : -1;
		kr_read_file(STATE_FILE("disable"), s->disable, sizeof(s->disable));
		kr_read_u64(STATE_FILE("usage"), &s->usage);
	}
#undef STATE_FILE
	return n;
}

void kr_cpuidle_driver(const char *sysdir, char *drv, size_t dlen, char *gov, size_t glen)
{
	char p[512];
	const char *d = sysdir ? sysdir : "/sys/devices/system/cpu";

	snprintf(p, sizeof(p), "%s/cpuidle/current_driver", d);
	if (kr_read_file(p, drv, dlen) <= 0)
		snprintf(drv, dlen, "none");
	/* current_governor_ro before 5.x sysfs_switch; current_governor after */
	snprintf(p, sizeof(p), "%s/cpuidle/current_governor_ro", d);
	if (kr_read_file(p, gov, glen) <= 0) {
		snprintf(p, sizeof(p), "%s/cpuidle/current_governor", d);
		if (kr_read_file(p, gov, glen) <= 0)
			snprintf(gov, glen, "none");
	}
}
