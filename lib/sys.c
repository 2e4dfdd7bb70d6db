// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: time, statistics, /proc and /sys readers and parsers, kernel config lookup,
 * CPU pinning, scheduling policy and the RT watchdog.
 */
#include "krepro.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

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
static int cmp_double_asc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double kr_percentile(const double *sorted, size_t n, double p)
{
	if (!n)
		return NAN;
	if (p <= 0)
		return sorted[0];
	if (p >= 100)
		return sorted[n - 1];
	/* nearest rank: the smallest value with at least p% of the data at or below it */
	/* the epsilon keeps 99.9% of 1000 at rank 999: 0.999 * 1000 is 999.0000000000001 */
	size_t rank = (size_t)ceil(p / 100.0 * (double)n - 1e-9);
	if (rank < 1)
		rank = 1;
	return sorted[rank - 1];
}

void kr_stats(double *v, size_t n, struct kr_stats *s)
{
	double sum = 0, ss = 0;

	if (n)
		qsort(v, n, sizeof(double), cmp_double_asc);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	*s = (struct kr_stats){ .n = n, .min = n ? v[0] : NAN, .max = n ? v[n - 1] : NAN,
				.mean = n ? sum / (double)n : NAN, .median = kr_percentile(v, n, 50) };
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - s->mean) * (v[i] - s->mean);
	s->stdev = n > 1 ? sqrt(ss / (double)(n - 1)) : n ? 0 : NAN;
}

void kr_histogram(const double *v, size_t n, double lo, double hi, size_t nbins, size_t *bins)
{
	memset(bins, 0, nbins * sizeof(*bins));
	if (!nbins || !(hi > lo))
		return;
	for (size_t i = 0; i < n; i++) {
		double x = (v[i] - lo) / (hi - lo) * (double)nbins;
		size_t b = x < 0 ? 0 : x >= (double)nbins ? nbins - 1 : (size_t)x;
		bins[b]++;
	}
}

/* ---- files ---- */
/* the rest of fd (closed here) as a malloc'd string; NULL with errno */
static char *read_all(int fd)
{
	int e;
	size_t cap = 0, n = 0;
	char *buf = NULL, *more = NULL;
	ssize_t r = 0;

	if (fd < 0)
		return NULL;
	for (;;) {
		if (cap - n < 2 && !(more = realloc(buf, cap = cap * 2 + 4096)))
			break;
		buf = more;
		r = read(fd, buf + n, cap - n - 1);
		if (r > 0)
			n += (size_t)r;
		else if (r == 0 || errno != EINTR)
			break;
	}
	e = errno;
	close(fd);
	if (!more || r < 0) {
		free(buf);
		errno = e;
		return NULL;
	}
	buf[n] = 0;
	return buf;
}

char *kr_read_text(const char *path)
{
	return read_all(open(path, O_RDONLY | O_CLOEXEC));
}

int kr_read_file(const char *path, char *buf, size_t len)
{
	char *t = kr_read_text(path);

	if (!t)
		return -1;
	size_t n = strlen(t);
	while (n && t[n - 1] == '\n')
		n--;
	n = n < len ? n : len - 1;
	memcpy(buf, t, n);
	buf[n] = 0;
	free(t);
	return (int)n;
}

int kr_read_u64(const char *path, uint64_t *out)
{
	char buf[64], *end;

	if (kr_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	if (!errno && end != buf && (!*end || isspace((unsigned char)*end))) {
		*out = v;
		return 0;
	}
	errno = EINVAL;
	return -1;
}

int kr_write_file(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC); /* like the shell's ">" */
	ssize_t w = fd < 0 ? -1 : write(fd, value, strlen(value));
	int e = w < 0 ? errno : EIO;

	if (fd >= 0)
		close(fd);
	errno = e;
	return w == (ssize_t)strlen(value) ? 0 : -1;
}

/* "key value" and "Key:   123 kB" lines */
int kr_kv_get(const char *text, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);

	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *q = p + klen;
		if (strncmp(p, key, klen))
			continue;
		q += *q == ':';
		if (*q != ' ' && *q != '\t')
			continue; /* a longer key with this prefix */
		q += strspn(q, " \t");
		char *end;
		errno = 0;
		unsigned long long v = strtoull(q, &end, 10);
		if (!isdigit((unsigned char)*q) || errno)
			return -1;
		*out = v;
		return 0;
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
	if (kr_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	return kr_parse_taskstat(buf, t);
}

#define KR_PF_KTHREAD 0x00200000 /* include/linux/sched.h */

static bool task_matches(pid_t tid, const char *glob, bool kthread)
{
	struct kr_taskstat t;

	return kr_read_taskstat(tid, &t) == 0 && fnmatch(glob, t.comm, 0) == 0 &&
	       (!kthread || (t.flags & KR_PF_KTHREAD));
}

/* every thread of every process (kernel threads: PF_KTHREAD) whose comm matches glob */
static int scan_tasks(const char *glob, bool kthreads, pid_t *tids, int max)
{
	DIR *d = opendir("/proc"), *td;
	struct dirent *e, *te;
	char path[300];
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) && n < max) {
		snprintf(path, sizeof(path), "/proc/%s/task", e->d_name);
		if (!isdigit((unsigned char)e->d_name[0]) || !(td = opendir(path)))
			continue;
		while ((te = readdir(td)) && n < max)
			if (atoi(te->d_name) > 0 && task_matches(atoi(te->d_name), glob, kthreads))
				tids[n++] = atoi(te->d_name);
		closedir(td);
	}
	closedir(d);
	return n;
}

int kr_find_tasks(const char *glob, pid_t *tids, int max)
{
	return scan_tasks(glob, false, tids, max);
}

int kr_find_kthreads(const char *glob, pid_t *tids, int max)
{
	/* every kthread but kthreadd (2) is its child: one short file, not every task's stat */
	char *kids = kr_read_text("/proc/2/task/2/children"), *p = kids;
	int n = 0;

	if (!kids || !*kids) {
		free(kids);
		return scan_tasks(glob, true, tids, max); /* no CONFIG_PROC_CHILDREN */
	}
	for (long pid = 2; pid > 0 && n < max; pid = strtol(p, &p, 10))
		if (task_matches((pid_t)pid, glob, false))
			tids[n++] = (pid_t)pid;
	free(kids);
	return n;
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
		int n = (int)strcspn(v, "\n");
		if (n >= 2 && v[0] == '"' && v[n - 1] == '"')
			v++, n -= 2;
		snprintf(buf, len, "%.*s", n, v);
		return 1;
	}
	snprintf(buf, len, "n");
	return 0;
}

int kr_kconfig(const char *option, char *buf, size_t len)
{
	static char *text;
	static bool tried;
	struct utsname u;
	char path[300];

	if (!tried) {
		tried = true;
		uname(&u);
		snprintf(path, sizeof(path), "/boot/config-%s", u.release);
		text = kr_read_text(path);
		/* no zlib in lib/: let gzip (or busybox's zcat) inflate /proc/config.gz */
		FILE *f = text ? NULL : popen("gzip -dc /proc/config.gz 2>/dev/null || "
					      "zcat /proc/config.gz 2>/dev/null", "r");
		if (f) {
			text = read_all(dup(fileno(f)));
			pclose(f);
		}
	}
	if (!text || !*text) {
		snprintf(buf, len, "unknown");
		return -1;
	}
	return kr_kconfig_parse(text, option, buf, len);
}

/* ---- CPUs and scheduling ---- */
int kr_cpulist_parse(const char *s, cpu_set_t *out)
{
	CPU_ZERO(out);
	for (const char *p = s; p && isdigit((unsigned char)*p);) {
		char *end;
		errno = 0;
		long a = strtol(p, &end, 10);
		long b = *end == '-' && isdigit((unsigned char)end[1]) ? strtol(end + 1, &end, 10) : a;
		if (errno || b < a || b >= CPU_SETSIZE ||
		    (*end && *end != '\n' && (*end != ',' || !isdigit((unsigned char)end[1]))))
			return -1;
		while (a <= b)
			CPU_SET(a++, out);
		if (*end != ',')
			return 0;
		p = end + 1;
	}
	return -1;
}

int kr_online_cpus(cpu_set_t *set)
{
	char buf[4096];

	if (kr_read_file("/sys/devices/system/cpu/online", buf, sizeof(buf)) < 0 ||
	    kr_cpulist_parse(buf, set) < 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		CPU_ZERO(set);
		for (long i = 0; i < n && i < CPU_SETSIZE; i++)
			CPU_SET(i, set);
	}
	return CPU_COUNT(set);
}

int kr_nr_cpus_online(void)
{
	cpu_set_t s;
	return kr_online_cpus(&s);
}

pid_t kr_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

int kr_pin_self(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
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

int kr_thread_start(pthread_t *t, int cpu, int policy, int prio, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	struct sched_param sp = { .sched_priority = prio };
	cpu_set_t s;

	/* unpinned means every usable CPU (the process affinity at start), not the caller's
	 * mask: a watchdog started from a pinned RT thread must not share the CPU it guards */
	CPU_ZERO(&s);
	if (cpu >= 0)
		CPU_SET(cpu, &s);
	else
		kr_usable_cpus(&s);
	pthread_attr_init(&a);
	pthread_attr_setaffinity_np(&a, sizeof(s), &s);
	/* the policy is in place before the thread's first instruction */
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, policy);
	pthread_attr_setschedparam(&a, &sp);
	int r = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	errno = r;
	return r ? -1 : 0;
}

/* ---- watchdog: a SCHED_FIFO 99 thread, unpinned, that no RT burner below 99 starves ---- */
struct kr_watchdog {
	pthread_t thread;
	pid_t tid;
	int64_t until; /* the deadline + 200 ms of grace */
	int pipefd[2]; /* a write disarms it */
	int fired;
};

static void *watchdog_main(void *arg)
{
	struct kr_watchdog *w = arg;
	struct pollfd p = { .fd = w->pipefd[0], .events = POLLIN };

	for (int64_t left; (left = w->until - kr_now_ns()) > 0;)
		if (poll(&p, 1, (int)(left / 1000000) + 1) > 0)
			return NULL; /* disarmed */
	/* the RT loop overran its deadline: take its priority away */
	kr_set_sched(w->tid, SCHED_OTHER, 0);
	w->fired = 1;
	return NULL;
}

struct kr_watchdog *kr_watchdog_arm(pid_t tid, int64_t deadline_ns)
{
	struct kr_watchdog *w = calloc(1, sizeof(*w));

	if (w && pipe2(w->pipefd, O_CLOEXEC) == 0) {
		w->tid = tid;
		w->until = deadline_ns + 200000000;
		if (kr_thread_start(&w->thread, -1, SCHED_FIFO, 99, watchdog_main, w) == 0)
			return w;
		close(w->pipefd[0]);
		close(w->pipefd[1]);
	}
	free(w);
	return NULL;
}

int kr_watchdog_disarm(struct kr_watchdog *w)
{
	if (!w)
		return 0;
	if (write(w->pipefd[1], "x", 1) < 0)
		kr_warn("watchdog: %s", strerror(errno));
	pthread_join(w->thread, NULL);
	int fired = w->fired;
	close(w->pipefd[0]);
	close(w->pipefd[1]);
	free(w);
	if (fired)
		kr_warn("watchdog: the RT loop overran its deadline and was demoted to SCHED_OTHER");
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

	for (; n < max; n++) {
		struct kr_idle_state *s = &st[n];
		memset(s, 0, sizeof(*s));
		kr_cpuidle_path(sysdir, cpu, n, "name", p, sizeof(p));
		if (kr_read_file(p, s->name, sizeof(s->name)) < 0)
			break;
		kr_cpuidle_path(sysdir, cpu, n, "latency", p, sizeof(p));
		s->latency_us = kr_read_file(p, v, sizeof(v)) > 0 ? atol(v) : -1;
		kr_cpuidle_path(sysdir, cpu, n, "residency", p, sizeof(p));
		s->residency_us = kr_read_file(p, v, sizeof(v)) > 0 ? atol(v) : -1;
		kr_cpuidle_path(sysdir, cpu, n, "disable", p, sizeof(p));
		if (kr_read_file(p, s->disable, sizeof(s->disable)) < 0)
			snprintf(s->disable, sizeof(s->disable), "?");
		kr_cpuidle_path(sysdir, cpu, n, "usage", p, sizeof(p));
		if (kr_read_u64(p, &s->usage) < 0)
			s->usage = 0;
	}
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
