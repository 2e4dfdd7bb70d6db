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
#include <math.h>
#include <sys/select.h>
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
	memset(s, 0, sizeof(*s));
	s->n = n;
	if (!n) {
		s->min = s->max = s->mean = s->stdev = s->median = NAN;
		return;
	}
	qsort(v, n, sizeof(double), cmp_double_asc);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	s->mean = sum / (double)n;
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - s->mean) * (v[i] - s->mean);
	s->stdev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
	s->min = v[0];
	s->max = v[n - 1];
	s->median = kr_percentile(v, n, 50);
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
int kr_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return -1;
	while (off + 1 < len) {
		ssize_t r = read(fd, buf + off, len - 1 - off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
		off += (size_t)r;
	}
	close(fd);
	buf[off] = 0;
	while (off && buf[off - 1] == '\n')
		buf[--off] = 0;
	return (int)off;
}

int kr_read_u64(const char *path, uint64_t *out)
{
	char buf[64], *end;

	if (kr_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && !isspace((unsigned char)*end))) {
		errno = EINVAL;
		return -1;
	}
	*out = v;
	return 0;
}

int kr_write_file(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC); /* like the shell's ">" */

	if (fd < 0)
		return -1;
	size_t len = strlen(value);
	ssize_t w = write(fd, value, len);
	int e = errno;
	close(fd);
	if (w != (ssize_t)len) {
		errno = w < 0 ? e : EIO;
		return -1;
	}
	return 0;
}

int kr_kv_get(const char *text, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, klen))
			continue;
		const char *q = p + klen;
		if (*q == ':')
			q++;
		if (*q != ' ' && *q != '\t')
			continue; /* a longer key with this prefix */
		while (*q == ' ' || *q == '\t')
			q++;
		if (!isdigit((unsigned char)*q))
			return -1;
		char *end;
		errno = 0;
		unsigned long long v = strtoull(q, &end, 10);
		if (errno)
			return -1;
		*out = v;
		return 0;
	}
	return -1;
}

/* ---- /proc/stat ---- */
static int parse_proc_stat_cpu(const char *p, struct kr_cpu_times *t)
{
	unsigned long long f[10] = { 0 };
	int n = sscanf(p, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1],
		       &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9]);
	if (n < 4)
		return -1;
	*t = (struct kr_cpu_times){ f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9] };
	return 0;
}

int kr_parse_proc_stat(const char *text, struct kr_cpu_times *all, struct kr_cpu_times *per,
		       int maxcpus)
{
	int found_all = 0, ncpu = 0;

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, "cpu", 3))
			continue;
		if (p[3] == ' ') {
			if (parse_proc_stat_cpu(p + 3, all) == 0)
				found_all = 1;
		} else if (isdigit((unsigned char)p[3])) {
			char *end;
			long cpu = strtol(p + 3, &end, 10);
			if (*end != ' ' || cpu < 0 || cpu >= maxcpus || !per)
				continue;
			if (parse_proc_stat_cpu(end, &per[cpu]) == 0 && cpu + 1 > ncpu)
				ncpu = (int)cpu + 1;
		}
	}
	return found_all ? ncpu : -1;
}

int kr_read_proc_stat(struct kr_cpu_times *all, struct kr_cpu_times *per, int maxcpus)
{
	static char buf[256 * 1024];

	if (kr_read_file("/proc/stat", buf, sizeof(buf)) < 0)
		return -1;
	return kr_parse_proc_stat(buf, all, per, maxcpus);
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
	unsigned long long a, b, c;

	if (sscanf(text, "%llu %llu %llu", &a, &b, &c) != 3)
		return -1;
	*s = (struct kr_schedstat){ a, b, c };
	return 0;
}

int kr_read_schedstat(pid_t pid, pid_t tid, struct kr_schedstat *s)
{
	char path[64], buf[128];

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	if (kr_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	return kr_parse_schedstat(buf, s);
}

int kr_parse_taskstat(const char *text, struct kr_taskstat *t)
{
	/* comm may contain spaces and parentheses: it ends at the last ')' */
	const char *l = strchr(text, '('), *r = strrchr(text, ')');

	if (!l || !r || r < l)
		return -1;
	memset(t, 0, sizeof(*t));
	size_t n = (size_t)(r - l - 1);
	if (n >= sizeof(t->comm))
		n = sizeof(t->comm) - 1;
	memcpy(t->comm, l + 1, n);
	t->comm[n] = 0;
	/* fields after comm, numbered as in proc(5): 3 state ... 22 starttime, 39 processor,
	 * 40 rt_priority, 41 policy */
	const char *p = r + 1;
	int field = 2;
	unsigned long long v;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		field++;
		if (field == 3)
			t->state = *p;
		else if (sscanf(p, "%llu", &v) == 1) {
			if (field == 4)
				t->ppid = (int)v;
			else if (field == 9)
				t->flags = (unsigned long)v;
			else if (field == 22)
				t->starttime = v;
			else if (field == 39)
				t->processor = (int)v;
			else if (field == 40)
				t->rt_priority = (int)v;
			else if (field == 41)
				t->policy = (int)v;
		}
		while (*p && *p != ' ')
			p++;
	}
	return field >= 41 ? 0 : -1;
}

int kr_read_taskstat(pid_t tid, struct kr_taskstat *t)
{
	char path[64], buf[1024];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)tid);
	if (kr_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	return kr_parse_taskstat(buf, t);
}

int kr_find_tasks(const char *glob, pid_t *tids, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	/* kernel threads are single-threaded processes; user threads are searched too */
	while ((e = readdir(d)) && n < max) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		char path[600];
		snprintf(path, sizeof(path), "/proc/%s/task", e->d_name);
		DIR *td = opendir(path);
		if (!td)
			continue;
		struct dirent *te;
		while ((te = readdir(td)) && n < max) {
			char comm[64];
			if (!isdigit((unsigned char)te->d_name[0]))
				continue;
			snprintf(path, sizeof(path), "/proc/%s/task/%s/comm", e->d_name, te->d_name);
			if (kr_read_file(path, comm, sizeof(comm)) < 0)
				continue;
			if (fnmatch(glob, comm, 0) == 0)
				tids[n++] = (pid_t)atoi(te->d_name);
		}
		closedir(td);
	}
	closedir(d);
	return n;
}

#define KR_PF_KTHREAD 0x00200000 /* include/linux/sched.h */

static bool comm_matches(const char *pid, const char *glob)
{
	char path[64], comm[64];

	snprintf(path, sizeof(path), "/proc/%s/comm", pid);
	return kr_read_file(path, comm, sizeof(comm)) >= 0 && fnmatch(glob, comm, 0) == 0;
}

int kr_find_kthreads(const char *glob, pid_t *tids, int max)
{
	int n = 0;
	/* every kthread but kthreadd is its child: one short file, not every task's comm */
	char *kids = kr_read_text("/proc/2/task/2/children");

	if (kids && *kids) {
		char *save = NULL;
		if (comm_matches("2", glob) && n < max)
			tids[n++] = 2;
		for (char *t = strtok_r(kids, " \n", &save); t && n < max; t = strtok_r(NULL, " \n", &save))
			if (comm_matches(t, glob))
				tids[n++] = (pid_t)atoi(t);
		free(kids);
		return n;
	}
	free(kids);
	/* no CONFIG_PROC_CHILDREN: processes only (a kthread has no other threads), PF_KTHREAD */
	DIR *d = opendir("/proc");
	struct dirent *e;
	if (!d)
		return -1;
	while ((e = readdir(d)) && n < max) {
		struct kr_taskstat ts;
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid_t pid = (pid_t)atoi(e->d_name);
		if (kr_read_taskstat(pid, &ts) == 0 && (ts.flags & KR_PF_KTHREAD) &&
		    fnmatch(glob, ts.comm, 0) == 0)
			tids[n++] = pid;
	}
	closedir(d);
	return n;
}

/* ---- kernel config ---- */
int kr_kconfig_parse(const char *text, const char *option, char *buf, size_t len)
{
	size_t olen = strlen(option);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, option, olen) && p[olen] == '=') {
			const char *v = p + olen + 1, *e = strchr(v, '\n');
			size_t n = e ? (size_t)(e - v) : strlen(v);
			if (n && v[0] == '"' && v[n - 1] == '"' && n >= 2) {
				v++;
				n -= 2;
			}
			if (n >= len)
				n = len - 1;
			memcpy(buf, v, n);
			buf[n] = 0;
			return 1;
		}
		if (!strncmp(p, "# ", 2) && !strncmp(p + 2, option, olen) &&
		    !strncmp(p + 2 + olen, " is not set", 11)) {
			snprintf(buf, len, "n");
			return 0;
		}
	}
	snprintf(buf, len, "n");
	return 0;
}

static char *kconfig_cache;

static char *load_kconfig(void)
{
	struct utsname u;
	char path[300];
	size_t cap = 1 << 20, n = 0;

	if (kconfig_cache)
		return kconfig_cache;
	uname(&u);
	snprintf(path, sizeof(path), "/boot/config-%s", u.release);
	FILE *f = fopen(path, "re");
	bool piped = false;
	if (!f && access("/proc/config.gz", R_OK) == 0) {
		/* no zlib in lib/: let gzip (or busybox's zcat) inflate it */
		f = popen("gzip -dc /proc/config.gz 2>/dev/null || zcat /proc/config.gz 2>/dev/null", "r");
		piped = true;
	}
	if (!f)
		return NULL;
	char *t = malloc(cap);
	size_t r;
	while (t && (r = fread(t + n, 1, cap - n - 1, f)) > 0) {
		n += r;
		if (n + 1 == cap)
			t = realloc(t, cap *= 2);
	}
	if (piped)
		pclose(f);
	else
		fclose(f);
	if (!t || n == 0) {
		free(t);
		return NULL;
	}
	t[n] = 0;
	return kconfig_cache = t;
}

int kr_kconfig(const char *option, char *buf, size_t len)
{
	char *t = load_kconfig();

	if (!t) {
		snprintf(buf, len, "unknown");
		return -1;
	}
	return kr_kconfig_parse(t, option, buf, len);
}

/* ---- CPUs and scheduling ---- */
int kr_cpulist_parse(const char *s, cpu_set_t *out)
{
	CPU_ZERO(out);
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	for (const char *p = s;;) {
		char *end;
		if (!isdigit((unsigned char)*p))
			return -1;
		errno = 0;
		long a = strtol(p, &end, 10), b = a;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				return -1;
			b = strtol(end + 1, &end, 10);
		}
		if (errno || b < a || a < 0 || b >= CPU_SETSIZE)
			return -1;
		for (long i = a; i <= b; i++)
			CPU_SET(i, out);
		if (*end == ',' && end[1])
			p = end + 1;
		else if (!*end || *end == '\n')
			return 0;
		else
			return -1;
	}
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

const char *kr_policy_name(int policy)
{
	switch (policy) {
	case SCHED_OTHER: return "SCHED_OTHER";
	case SCHED_FIFO: return "SCHED_FIFO";
	case SCHED_RR: return "SCHED_RR";
	case SCHED_BATCH: return "SCHED_BATCH";
	case SCHED_IDLE: return "SCHED_IDLE";
	case 6: return "SCHED_DEADLINE";
	}
	return "SCHED_?";
}

/* as ps -o cls prints it */
const char *kr_policy_short(int policy)
{
	switch (policy) {
	case SCHED_OTHER: return "TS";
	case SCHED_FIFO: return "FF";
	case SCHED_RR: return "RR";
	case SCHED_BATCH: return "B";
	case SCHED_IDLE: return "IDL";
	case 6: return "DLN";
	}
	return "?";
}

int kr_set_sched(pid_t tid, int policy, int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	return sched_setscheduler(tid, policy, &sp);
}

int kr_thread_start(pthread_t *t, int cpu, int policy, int prio, void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	int r;

	pthread_attr_init(&a);
	/* unpinned means every usable CPU (the process affinity at start), not the caller's
	 * mask: a watchdog started from a pinned RT thread must not share the CPU it guards */
	cpu_set_t s;
	if (cpu >= 0) {
		CPU_ZERO(&s);
		CPU_SET(cpu, &s);
	} else {
		kr_usable_cpus(&s);
	}
	pthread_attr_setaffinity_np(&a, sizeof(s), &s);
	/* the policy is in place before the thread's first instruction */
	struct sched_param sp = { .sched_priority = prio };
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, policy);
	pthread_attr_setschedparam(&a, &sp);
	r = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	if (r) {
		errno = r;
		return -1;
	}
	return 0;
}

/* ---- watchdog ---- */
#define KR_WATCHDOG_GRACE_NS 200000000LL

struct kr_watchdog {
	pthread_t thread;
	pid_t tid;
	int64_t deadline;
	int pipefd[2];
	int fired;
};

static void *watchdog_main(void *arg)
{
	struct kr_watchdog *w = arg;
	int64_t until = w->deadline + KR_WATCHDOG_GRACE_NS;

	for (;;) {
		int64_t left = until - kr_now_ns();
		if (left <= 0)
			break;
		struct timespec ts = { left / 1000000000LL, left % 1000000000LL };
		fd_set fds;
		FD_ZERO(&fds);
		FD_SET(w->pipefd[0], &fds);
		struct timeval tv = { ts.tv_sec, ts.tv_nsec / 1000 };
		if (select(w->pipefd[0] + 1, &fds, NULL, NULL, &tv) > 0)
			return NULL; /* disarmed */
	}
	/* the RT loop overran its deadline: take its priority away */
	kr_set_sched(w->tid, SCHED_OTHER, 0);
	w->fired = 1;
	return NULL;
}

struct kr_watchdog *kr_watchdog_arm(pid_t tid, int64_t deadline_ns)
{
	struct kr_watchdog *w = calloc(1, sizeof(*w));

	if (!w || pipe2(w->pipefd, O_CLOEXEC) < 0) {
		free(w);
		return NULL;
	}
	w->tid = tid;
	w->deadline = deadline_ns;
	/* SCHED_FIFO 99 and unpinned: no RT burner below 99 can starve it */
	if (kr_thread_start(&w->thread, -1, SCHED_FIFO, 99, watchdog_main, w) < 0) {
		close(w->pipefd[0]);
		close(w->pipefd[1]);
		free(w);
		return NULL;
	}
	return w;
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
