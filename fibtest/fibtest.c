// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: CFS bandwidth control throttles a group that leaves its quota unused.
 *
 * A cgroup's CPU quota lives in one global bucket per group. Each CPU's runqueue takes a
 * slice of it on demand (kernel.sched_cfs_bandwidth_slice_us, 5 ms by default); when the
 * group's threads on a CPU block, all but 1 ms goes back to the bucket. Commit 512ac999d275
 * (v4.18) made those per-CPU leftovers expire at the end of every period, so a group with a
 * small worker on each of many CPUs lost up to 1 ms per CPU per period and was throttled
 * while mostly idle (Indeed: 4.1 CPUs allowed, < 0.5 used, throttled most periods).
 * de53fd7aedb1 (v5.4) removed the expiry. The same stranding can be provoked on a fixed
 * kernel with a huge slice: one CPU hoards the whole quota while the others are throttled.
 *
 * This is Indeed's Fibtest made into a verdict: it creates its own cgroup with a quota,
 * runs fast threads (Fibonacci as fast as they can) and slow threads (a burst of iterations,
 * then 10 ms asleep) pinned across the CPUs, and reads the group's cpu.stat and CPU usage
 * over a window after a warm-up. Throttled % = nr_throttled / nr_periods; efficiency =
 * usage / quota allowed over the window. FAIL when the group was throttled in many periods
 * while it used well below its quota. Throttling of a group that does use its quota is
 * legitimate and passes.
 */
#include "krepro.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLICE_SYSCTL "/proc/sys/kernel/sched_cfs_bandwidth_slice_us"
#define TRIGGER_SLICE_US 1000000L /* 1 s: the first CPU to ask takes the whole quota */
#define STEAL_LIMIT_PCT 5.0	  /* steal fakes lost quota: such a window is retried */
#define MAX_STEAL_RETRIES 2
#define MAX_THREADS 1024
#define WORKER_BURST_NS 1200000	  /* workers: 1.2 ms of CPU per wake */

enum workload { WL_FIBTEST, WL_WORKERS };

static struct {
	enum workload workload;
	bool workload_set;
	long fast, slow;	/* -1: the workload's default */
	long iterations;	/* per slow-thread burst; -1: default */
	int64_t quota_ns, period_ns, burst_ns, warmup_ns; /* -1: default */
	long slice_us;		/* -1: leave the sysctl alone */
	double max_efficiency;
} cfg = { WL_FIBTEST, false, -1, -1, -1, -1, -1, 0, -1, -1, 0.90 };

static const struct kr_option options[] = {
	{ "workload", "fibtest|workers",
	  "fibtest: 1 fast + slow threads, one per CPU (default); workers: 4 slow per CPU" },
	{ "fast", "N", "fast threads (default 1 for fibtest, 0 for workers)" },
	{ "threads", "N", "slow threads (default: CPUs - fast; workers: 4 per CPU)" },
	{ "iterations", "N", "iterations per slow burst (default 100; workers: 1.2 ms of CPU)" },
	{ "quota", "TIME", "quota per period (default 5ms; workers 80ms)" },
	{ "period", "TIME", "period (default 10ms; workers 100ms)" },
	{ "burst", "TIME", "burst allowance, cpu.max.burst / cpu.cfs_burst_us (default 0)" },
	{ "slice", "US", "set kernel.sched_cfs_bandwidth_slice_us for the run (restored)" },
	{ "warmup", "TIME", "warm-up before the window (default max(300ms, 2 periods))" },
	{ "max-efficiency", "E", "FAIL needs efficiency <= E too (default 0.90)" },
	{ NULL, NULL, NULL }
};

/* ---- the verdict rule and the parsing, pure (unit-tested) ---- */

/* nr_throttled / nr_periods in %, clamped: a period can count as throttled more than once */
static double throttled_pct(uint64_t periods, uint64_t throttled)
{
	if (!periods)
		return 0;
	double p = 100.0 * (double)throttled / (double)periods;
	return p > 100 ? 100 : p;
}

/* FAIL when throttled in >= limit % of periods while efficiency <= max_efficiency */
static enum kr_verdict fibtest_rule(double throttled, double efficiency, double limit,
				    double max_efficiency)
{
	if (isnan(throttled) || isnan(efficiency))
		return KR_SKIP;
	return throttled >= limit && efficiency <= max_efficiency ? KR_FAIL : KR_PASS;
}

/* One window: its rule verdict, or SKIP when host steal could have faked the lost quota */
static enum kr_verdict window_verdict(double throttled, double efficiency, double steal_pct,
				      double limit, double max_efficiency)
{
	if (steal_pct > STEAL_LIMIT_PCT)
		return KR_SKIP;
	return fibtest_rule(throttled, efficiency, limit, max_efficiency);
}

struct cpu_stat {
	uint64_t nr_periods, nr_throttled, throttled_ns;
	uint64_t usage_ns; /* v2 only */
	bool has_usage;
};

/* cpu.stat by key: v1 gives throttled_time in ns, v2 throttled_usec and usage_usec in us */
static int parse_cpu_stat(const char *text, struct cpu_stat *s)
{
	uint64_t v;

	memset(s, 0, sizeof(*s));
	if (kr_kv_get(text, "nr_periods", &s->nr_periods) < 0 ||
	    kr_kv_get(text, "nr_throttled", &s->nr_throttled) < 0)
		return -1;
	if (kr_kv_get(text, "throttled_time", &v) == 0)
		s->throttled_ns = v;
	else if (kr_kv_get(text, "throttled_usec", &v) == 0)
		s->throttled_ns = v * 1000;
	else
		return -1;
	if (kr_kv_get(text, "usage_usec", &v) == 0) {
		s->usage_ns = v * 1000;
		s->has_usage = true;
	}
	return 0;
}

/* ---- the workload ---- */

static pthread_barrier_t start_line;
static atomic_bool stop;
static atomic_int attach_errors;
static const char *attach_to[2]; /* v1: each thread joins cpu and cpuacct groups itself */
static _Atomic uint64_t fast_iterations, slow_bursts;

struct worker {
	pthread_t thread;
	int cpu;
	bool fast;
	long iterations;
	clockid_t clock;
};

/* one Fibonacci step; the asm keeps the compiler from folding the loop away */
static inline uint64_t fib_steps(uint64_t n)
{
	uint64_t a = 0, b = 1;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t c = a + b;
		a = b;
		b = c;
		__asm__ volatile("" : "+r"(a), "+r"(b));
	}
	return b;
}

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A slow thread's burst: a count of steps (the original), or an amount of CPU time, so
 * the workers shape is the same on a fast or a slow machine and under other load. */
static void slow_burst(const struct worker *w)
{
	if (w->iterations > 0) {
		fib_steps((uint64_t)w->iterations);
		return;
	}
	int64_t end = thread_cpu_ns() + WORKER_BURST_NS;
	while (thread_cpu_ns() < end)
		fib_steps(2000);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 2; i++)
		if (attach_to[i] && kr_cgroup_attach_tid(attach_to[i], kr_gettid()) < 0)
			atomic_fetch_add(&attach_errors, 1);
	pthread_getcpuclockid(pthread_self(), &w->clock);
	pthread_barrier_wait(&start_line);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (w->fast) {
			fib_steps(10000);
			atomic_fetch_add_explicit(&fast_iterations, 10000, memory_order_relaxed);
		} else {
			slow_burst(w);
			atomic_fetch_add_explicit(&slow_bursts, 1, memory_order_relaxed);
			kr_sleep_ns(10000000); /* an async worker waiting for its next task */
		}
	}
	return NULL;
}

/* ---- the group ---- */

static struct {
	bool v2;
	char cpu[300], acct[300]; /* group directories; acct "" when usage comes from v2 */
	char domain[280];	  /* v2: the domain holding the process and the threaded group */
} grp;

/* Why enabling a v2 controller failed, when that is the machine's doing rather than the
 * kernel's or ours: a group with processes in it cannot pass controllers down (EBUSY: a
 * container's cgroup namespace root is such a group), a read-only or undelegated hierarchy
 * refuses the write. NULL: an unexpected failure. */
static const char *v2_enable_refusal(int err)
{
	switch (err) {
	case EBUSY:	 /* domain controllers, or a kernel before threaded cgroups (4.14) */
	case EOPNOTSUPP: /* a group with processes became a thread root: no domain below */
		return "processes in it (a container?)";
	case EACCES:
	case EPERM:
	case EROFS:
		return "not writable (a container?)";
	}
	return NULL;
}

static int v2_skip(const char *group, int err)
{
	kr_say("The cpu controller cannot be passed down from %s:", group);
	kr_say("a cgroup v2 group with processes in it (a container's cgroup");
	kr_say("namespace root is one) or a read-only hierarchy cannot give it to");
	kr_say("a child group. Run on the host, or in a delegated subtree.");
	return kr_skip(KR_EXIT_SKIP_MACHINE, "cgroup %s: %s", group, v2_enable_refusal(err));
}

/* v2: domain krepro-fibtest-PID with cpu enabled for its child, the threaded group
 * krepro-fibtest-PID/workers that gets the quota. Only the workload threads go into
 * it (cgroup.threads); the process, with the sampling thread, stays in the domain, so
 * the sampler is neither throttled nor counted in the group's usage. */
static int setup_v2(const char *root)
{
	char path[400], procs[64];

	/* A cgroup namespace (a container) shows a non-root group as the root: it has a
	 * cgroup.type file, which the real root has not. With processes in it, the cpu
	 * controller cannot be passed down to a domain below it: say so before any change. */
	snprintf(path, sizeof(path), "%s/cgroup.type", root);
	bool ns_root = access(path, F_OK) == 0;
	snprintf(path, sizeof(path), "%s/cgroup.procs", root);
	if (ns_root && kr_read_file(path, procs, sizeof(procs)) > 0)
		return v2_skip(root, EBUSY);
	if (kr_cgroup_enable(root, "cpu") < 0) {
		int e = errno;
		return v2_enable_refusal(e) ? v2_skip(root, e)
					    : kr_error("cannot enable cpu in %s: %s", root, strerror(e));
	}
	snprintf(grp.domain, sizeof(grp.domain), "%.240s/krepro-fibtest-%d", root, (int)getpid());
	snprintf(grp.cpu, sizeof(grp.cpu), "%s/workers", grp.domain);
	if (kr_cgroup_create(grp.domain) < 0)
		return kr_error("cannot create cgroup %s: %s", grp.domain, strerror(errno));
	/* the domain competes with the rest of the machine: the largest weight there too */
	snprintf(path, sizeof(path), "%s/cpu.weight", grp.domain);
	if (kr_write_file(path, "10000") < 0)
		return kr_error("cannot set %s: %s", path, strerror(errno));
	if (kr_cgroup_enable(grp.domain, "cpu") < 0) {
		int e = errno;
		return v2_enable_refusal(e) ? v2_skip(root, e)
					    : kr_error("cannot enable cpu in %s: %s", grp.domain,
						       strerror(e));
	}
	if (kr_cgroup_create(grp.cpu) < 0)
		return kr_error("cannot create cgroup %s: %s", grp.cpu, strerror(errno));
	snprintf(path, sizeof(path), "%s/cgroup.type", grp.cpu);
	if (kr_write_file(path, "threaded") < 0)
		return errno == ENOENT
			       ? kr_skip(KR_EXIT_SKIP, "needs threaded cgroups (v4.14+): no %s", path)
			       : kr_error("cannot make %s threaded: %s", grp.cpu, strerror(errno));
	return 0;
}

static struct worker *workers;
static int nworkers;

struct snapshot {
	int64_t t;
	struct cpu_stat st;
	uint64_t usage_ns;
	struct kr_cpu_times cpu;
};

static int take_snapshot(struct snapshot *s)
{
	char path[400], text[4096];

	s->t = kr_now_ns();
	snprintf(path, sizeof(path), "%s/cpu.stat", grp.cpu);
	if (kr_read_file(path, text, sizeof(text)) < 0 || parse_cpu_stat(text, &s->st) < 0)
		return -1;
	if (grp.v2) {
		s->usage_ns = s->st.usage_ns;
	} else if (grp.acct[0]) {
		snprintf(path, sizeof(path), "%s/cpuacct.usage", grp.acct);
		if (kr_read_u64(path, &s->usage_ns) < 0)
			return -1;
	} else {
		/* no cpuacct: the threads' own CPU clocks add up to the same */
		s->usage_ns = 0;
		for (int i = 0; i < nworkers; i++) {
			struct timespec ts;
			if (clock_gettime(workers[i].clock, &ts) == 0)
				s->usage_ns += (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		}
	}
	return kr_read_proc_stat(&s->cpu, NULL, 0) < 0 ? -1 : 0;
}

static int set_limits(int64_t quota_ns, int64_t period_ns, int64_t burst_ns)
{
	char path[400], v[64];
	long q = (long)(quota_ns / 1000), p = (long)(period_ns / 1000), b = (long)(burst_ns / 1000);

	if (grp.v2) {
		snprintf(path, sizeof(path), "%s/cpu.max", grp.cpu);
		snprintf(v, sizeof(v), "%ld %ld", q, p);
		if (kr_write_file(path, v) < 0)
			return -1;
	} else {
		snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", grp.cpu);
		snprintf(v, sizeof(v), "%ld", p);
		if (kr_write_file(path, v) < 0)
			return -1;
		snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", grp.cpu);
		snprintf(v, sizeof(v), "%ld", q);
		if (kr_write_file(path, v) < 0)
			return -1;
	}
	/* the largest weight: other load on the machine must not look like lost quota */
	snprintf(path, sizeof(path), "%s/%s", grp.cpu, grp.v2 ? "cpu.weight" : "cpu.shares");
	if (kr_write_file(path, grp.v2 ? "10000" : "262144") < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", grp.cpu, grp.v2 ? "cpu.max.burst" : "cpu.cfs_burst_us");
	snprintf(v, sizeof(v), "%ld", b);
	/* an absent burst file (before v5.14) is fine when no burst is asked for */
	if (kr_write_file(path, v) < 0 && (b || access(path, F_OK) == 0))
		return -1;
	return 0;
}

/* threads listed in a group (v1 "tasks", v2 "cgroup.threads"), -1 if unreadable */
static int group_threads(const char *dir)
{
	static char text[64 * 1024];
	char path[400];
	int n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, grp.v2 ? "cgroup.threads" : "tasks");
	if (kr_read_file(path, text, sizeof(text)) < 0)
		return -1;
	for (char *p = text; *p; p++)
		n += *p == '\n';
	return text[0] ? n + 1 : 0; /* kr_read_file strips the last newline */
}

/* ---- one measurement window ---- */

struct window {
	double throttled, efficiency, steal_pct, seconds;
	uint64_t periods, nr_throttled;
	double throttled_ms, usage_ms, allowed_ms;
	enum kr_verdict verdict;
};

static int measure_window(int repeat, int64_t period_ns, int64_t quota_ns, double seconds,
			  struct window *w)
{
	struct snapshot first, prev, cur;

	if (take_snapshot(&first) < 0)
		return -1;
	prev = first;
	/* one sample per period, for --csv; the window is first..last */
	int64_t end = first.t + (int64_t)(seconds * 1e9);
	for (int64_t next = first.t + period_ns;; next += period_ns) {
		kr_sleep_until_ns(next < end ? next : end);
		if (take_snapshot(&cur) < 0)
			return -1;
		uint64_t tot = kr_cpu_times_total(&cur.cpu) - kr_cpu_times_total(&prev.cpu);
		kr_csv_row("%d,%.3f,%.3f,%llu,%llu,%.3f,%.3f,%.1f", repeat,
			   (double)(cur.t - first.t) / 1e6, (double)(cur.t - prev.t) / 1e6,
			   (unsigned long long)(cur.st.nr_periods - prev.st.nr_periods),
			   (unsigned long long)(cur.st.nr_throttled - prev.st.nr_throttled),
			   (double)(cur.st.throttled_ns - prev.st.throttled_ns) / 1e6,
			   (double)(cur.usage_ns - prev.usage_ns) / 1e6,
			   tot ? 100.0 * (double)(cur.cpu.steal - prev.cpu.steal) / (double)tot : 0.0);
		prev = cur;
		if (cur.t >= end)
			break;
	}
	w->seconds = (double)(cur.t - first.t) / 1e9;
	w->periods = cur.st.nr_periods - first.st.nr_periods;
	w->nr_throttled = cur.st.nr_throttled - first.st.nr_throttled;
	w->throttled = throttled_pct(w->periods, w->nr_throttled);
	w->throttled_ms = (double)(cur.st.throttled_ns - first.st.throttled_ns) / 1e6;
	w->usage_ms = (double)(cur.usage_ns - first.usage_ns) / 1e6;
	w->allowed_ms = w->seconds * 1e3 * (double)quota_ns / (double)period_ns;
	w->efficiency = w->usage_ms / w->allowed_ms;
	uint64_t tot = kr_cpu_times_total(&cur.cpu) - kr_cpu_times_total(&first.cpu);
	w->steal_pct = tot ? 100.0 * (double)(cur.cpu.steal - first.cpu.steal) / (double)tot : 0;
	return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- run ---- */

static int run(const struct kr_opts *o)
{
	struct kr_cgroups cg;
	cpu_set_t cpus;
	char path[400], text[256];
	int cpu_list[CPU_SETSIZE], ncpus = 0;
	bool workers_shape = cfg.workload == WL_WORKERS || (o->trigger && !cfg.workload_set);

	/* requirements first, nothing changed yet */
	if (access(SLICE_SYSCTL, F_OK) < 0)
		return kr_skip(125, "needs CONFIG_CFS_BANDWIDTH (no %s)", SLICE_SYSCTL);
	if (kr_cgroups_find(&cg) < 0)
		return kr_skip(125, "no cgroup hierarchy mounted");
	grp.v2 = cg.v2[0] && cg.v2_cpu;
	if (!grp.v2 && !cg.v1_cpu[0])
		return kr_skip(125, "no cpu controller in cgroup v1 or v2");
	if (!grp.v2) {
		snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", cg.v1_cpu);
		if (access(path, F_OK) < 0)
			return kr_skip(125, "needs CONFIG_CFS_BANDWIDTH (no %s)", path);
	}
	if (o->cpus_set)
		cpus = o->cpus;
	else
		kr_usable_cpus(&cpus); /* affinity (cpusets) x online */
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &cpus))
			cpu_list[ncpus++] = c;

	long fast = cfg.fast >= 0 ? cfg.fast : workers_shape ? 0 : 1;
	long slow = cfg.slow >= 0 ? cfg.slow : workers_shape ? 4L * ncpus : ncpus - fast;
	if (slow < 0)
		slow = 0;
	/* 0: a burst of WORKER_BURST_NS of CPU time */
	long iterations = cfg.iterations > 0 ? cfg.iterations : workers_shape ? 0 : 100;
	int64_t period = cfg.period_ns > 0 ? cfg.period_ns : workers_shape ? 100000000 : 10000000;
	int64_t quota = cfg.quota_ns > 0 ? cfg.quota_ns : workers_shape ? 80000000 : 5000000;
	int64_t burst = cfg.burst_ns > 0 ? cfg.burst_ns : 0;
	int64_t warmup = cfg.warmup_ns >= 0 ? cfg.warmup_ns : 300000000;
	if (warmup < 2 * period)
		warmup = 2 * period; /* a window that starts in the first periods overstates usage */
	long slice = cfg.slice_us > 0 ? cfg.slice_us : o->trigger ? TRIGGER_SLICE_US : -1;
	if (fast + slow < 1 || fast + slow > MAX_THREADS)
		return kr_error("--fast + --threads must be 1-%d (is %ld)", MAX_THREADS, fast + slow);
	if (quota > period * ncpus)
		kr_warn("quota %.1f ms exceeds period x CPUs: the group cannot be throttled",
			(double)quota / 1e6);

	kr_env_standard((const char *const[]){ "sysctl:kernel.sched_cfs_bandwidth_slice_us",
					       "config:CONFIG_CFS_BANDWIDTH", "config:CONFIG_HZ",
					       "group:cgroup", NULL });
	char cpubuf[256];
	kr_param("workload", "%s", workers_shape ? "workers" : "fibtest");
	kr_param("fast", "%ld", fast);
	kr_param("threads", "%ld", slow);
	if (iterations)
		kr_param("iterations", "%ld", iterations);
	else
		kr_param("burst_cpu_us", "%d", WORKER_BURST_NS / 1000);
	kr_param("cpus", "%s", kr_format_cpulist(&cpus, cpubuf, sizeof(cpubuf)));
	kr_param("quota_us", "%lld", (long long)(quota / 1000));
	kr_param("period_us", "%lld", (long long)(period / 1000));
	kr_param("burst_us", "%lld", (long long)(burst / 1000));
	kr_param("warmup_ms", "%.0f", (double)warmup / 1e6);
	kr_param("window_s", "%g", o->duration_s);
	kr_param("repeat", "%d", o->repeat);
	kr_param("max_efficiency", "%g", cfg.max_efficiency);
	kr_cause("512ac999d275 (v4.18) without de53fd7aedb1 (v5.4)");
	kr_cause("a large sched_cfs_bandwidth_slice_us: one CPU hoards quota");

	/* the group, in every hierarchy that holds cpu or cpuacct */
	if (grp.v2) {
		int r = setup_v2(cg.v2);
		if (r)
			return r;
	} else {
		snprintf(grp.cpu, sizeof(grp.cpu), "%s/krepro-fibtest-%d", cg.v1_cpu, (int)getpid());
		if (cg.v1_cpuacct[0] && strcmp(cg.v1_cpuacct, cg.v1_cpu))
			snprintf(grp.acct, sizeof(grp.acct), "%s/krepro-fibtest-%d", cg.v1_cpuacct,
				 (int)getpid());
		else if (cg.v1_cpuacct[0])
			snprintf(grp.acct, sizeof(grp.acct), "%s", grp.cpu);
	}
	if (!grp.v2 && kr_cgroup_create(grp.cpu) < 0)
		return kr_error("cannot create cgroup %s: %s", grp.cpu, strerror(errno));
	if (grp.acct[0] && strcmp(grp.acct, grp.cpu) && kr_cgroup_create(grp.acct) < 0)
		return kr_error("cannot create cgroup %s: %s", grp.acct, strerror(errno));
	if (set_limits(quota, period, burst) < 0)
		return kr_error("cannot set the quota of %s: %s", grp.cpu, strerror(errno));

	if (kr_read_file(SLICE_SYSCTL, text, sizeof(text)) < 0)
		return kr_error("cannot read %s: %s", SLICE_SYSCTL, strerror(errno));
	long slice_now = atol(text);
	if (slice > 0) {
		char v[32];
		snprintf(v, sizeof(v), "%ld", slice);
		if (kr_journal_write(SLICE_SYSCTL, v) < 0)
			return kr_error("cannot set %s: %s", SLICE_SYSCTL, strerror(errno));
		kr_say("kernel.sched_cfs_bandwidth_slice_us: %ld -> %ld (restored after)",
		       slice_now, slice);
	}
	kr_param("slice_us", "%ld", slice > 0 ? slice : slice_now);

	/* threads: pinned before they run, each in the group before its first step; on v2
	 * the process (this sampler thread) stays in the unlimited domain above the group */
	if (grp.v2 && kr_cgroup_attach_pid(grp.domain, getpid()) < 0)
		return kr_error("cannot move into %s: %s", grp.domain, strerror(errno));
	attach_to[0] = grp.cpu;
	attach_to[1] = grp.acct[0] && strcmp(grp.acct, grp.cpu) ? grp.acct : NULL;
	nworkers = (int)(fast + slow);
	workers = calloc((size_t)nworkers, sizeof(*workers));
	if (!workers || pthread_barrier_init(&start_line, NULL, (unsigned)nworkers + 1))
		return kr_error("out of memory");
	for (int i = 0; i < nworkers; i++) {
		workers[i] = (struct worker){ .cpu = cpu_list[i % ncpus], .fast = i < fast,
					      .iterations = iterations };
		if (kr_thread_start(&workers[i].thread, workers[i].cpu, SCHED_OTHER, 0, worker_main,
				    &workers[i]) < 0)
			return kr_error("cannot start thread %d: %s", i, strerror(errno));
	}
	pthread_barrier_wait(&start_line);
	if (attach_errors)
		return kr_error("%d thread(s) could not join %s", (int)attach_errors, grp.cpu);
	/* only the workload is limited: the sampler must not be throttled with it */
	int in_group = group_threads(grp.cpu);
	kr_measure("threads_in_group", in_group);
	if (in_group != nworkers)
		return kr_error("%d thread(s) in %s, expected the %d workload threads", in_group,
				grp.cpu, nworkers);

	kr_csv_open("repeat,t_ms,interval_ms,nr_periods,nr_throttled,throttled_ms,usage_ms,"
		    "steal_pct");
	kr_progress("warm-up %.0f ms, then %d window(s) of %g s", (double)warmup / 1e6,
		    o->repeat, o->duration_s);
	kr_sleep_ns(warmup);

	/* windows: a window with steal above the limit does not count and is retried */
	/* --repeat is at most 100: fixed arrays, nothing to free on any return path */
	static struct window win[100 + MAX_STEAL_RETRIES];
	static enum kr_verdict votes[100 + MAX_STEAL_RETRIES];
	int nwin = 0, maxwin = o->repeat + MAX_STEAL_RETRIES;
	int conclusive = 0;
	while (conclusive < o->repeat && nwin < maxwin) {
		struct window *w = &win[nwin];
		if (measure_window(nwin + 1, period, quota, o->duration_s, w) < 0)
			return kr_error("cannot read the group's counters: %s", strerror(errno));
		w->verdict = window_verdict(w->throttled, w->efficiency, w->steal_pct, o->threshold,
					    cfg.max_efficiency);
		conclusive += w->verdict != KR_SKIP;
		votes[nwin++] = w->verdict;
	}
	atomic_store(&stop, true);
	for (int i = 0; i < nworkers; i++)
		pthread_join(workers[i].thread, NULL);

	kr_say("cgroup %s %s%s", grp.v2 ? "v2" : "v1", grp.cpu,
	       grp.acct[0] && strcmp(grp.acct, grp.cpu) ? " (+cpuacct)" : "");
	if (grp.v2)
		kr_say("(threaded: the workload threads only, the sampler outside)");
	kr_say("quota %.2f ms per %.2f ms period = %.2f CPU; %ld fast + %ld slow",
	       (double)quota / 1e6, (double)period / 1e6, (double)quota / (double)period, fast,
	       slow);
	kr_say("%s", "");
	kr_say("window periods throttled thr.time   usage allowed effic. steal");
	kr_say("            #         %%       ms      ms      ms              %%");
	double thr[64], eff[64];
	int nconc = 0;
	for (int i = 0; i < nwin; i++) {
		struct window *w = &win[i];
		kr_say("%6d %7llu %9.1f %8.1f %7.1f %7.1f %6.3f %6.1f%s", i + 1,
		       (unsigned long long)w->periods, w->throttled, w->throttled_ms, w->usage_ms,
		       w->allowed_ms, w->efficiency, w->steal_pct,
		       w->verdict == KR_SKIP ? " steal" : "");
		if (w->verdict != KR_SKIP && nconc < 64) {
			thr[nconc] = w->throttled;
			eff[nconc++] = w->efficiency;
		}
	}
	/* the report shows the first conclusive window's figures, or the medians */
	struct window *w0 = &win[0];
	for (int i = 0; i < nwin; i++)
		if (win[i].verdict != KR_SKIP) {
			w0 = &win[i];
			break;
		}
	double throttled = nconc ? median(thr, nconc) : w0->throttled;
	double efficiency = nconc ? median(eff, nconc) : w0->efficiency;
	double usage_cpu = w0->usage_ms / (w0->seconds * 1e3);
	kr_say("%s", "");
	kr_say("usage %.2f CPU of %.2f CPU allowed; throttled in %.1f%% of periods",
	       usage_cpu, (double)quota / (double)period, throttled);
	kr_say("iterations: fast %.3g/s, slow bursts %.3g/s (whole run)",
	       (double)fast_iterations / ((double)warmup / 1e9 + nwin * o->duration_s),
	       (double)slow_bursts / ((double)warmup / 1e9 + nwin * o->duration_s));
	kr_measure("throttled_pct", throttled);
	kr_measure("efficiency", efficiency);
	kr_measure("usage_cpu", usage_cpu);
	kr_measure("quota_cpu", (double)quota / (double)period);
	kr_measure("nr_periods", (double)w0->periods);
	kr_measure("nr_throttled", (double)w0->nr_throttled);
	kr_measure("throttled_ms", w0->throttled_ms);
	kr_measure("usage_ms", w0->usage_ms);
	kr_measure("allowed_ms", w0->allowed_ms);
	kr_measure("steal_pct", w0->steal_pct);
	kr_measure("windows", nwin);
	kr_measure("windows_conclusive", nconc);
	kr_measure("fast_iterations", (double)fast_iterations);
	kr_measure("slow_bursts", (double)slow_bursts);

	int npass, nfail;
	enum kr_verdict v = kr_vote(votes, nwin, &npass, &nfail);
	if (!nconc)
		return kr_inconclusive(throttled, "steal above %.0f%% of CPU time in all %d windows",
				       STEAL_LIMIT_PCT, nwin);
	if (v == KR_SKIP)
		return kr_inconclusive(throttled, "%d window(s) PASS, %d FAIL", npass, nfail);
	if (v == KR_PASS && throttled >= o->threshold)
		kr_say("throttled, but the quota was used: that throttling is legitimate");
	else if (v == KR_FAIL)
		kr_say("throttled while %.0f%% of the quota went unused\n"
		       "(de53fd7aedb1 is in 4.14.154+, 4.19.84+, 5.3.9+ and v5.4)",
		       100 * (1 - efficiency));
	return kr_verdict(v, throttled, "efficiency=%.3f (limit %.2f)", efficiency,
			  cfg.max_efficiency);
}

/* ---- options ---- */

static int parse(int index, const char *arg)
{
	int64_t ns;
	double d;
	int i;

	switch (index) {
	case 0:
		if ((i = kr_parse_choice("--workload", arg, "fibtest|workers")) < 0)
			return -1;
		cfg.workload = (enum workload)i;
		cfg.workload_set = true;
		return 0;
	case 1: return kr_parse_long("--fast", arg, 0, MAX_THREADS, &cfg.fast);
	case 2: return kr_parse_long("--threads", arg, 0, MAX_THREADS, &cfg.slow);
	case 3: return kr_parse_long("--iterations", arg, 1, 1000000000L, &cfg.iterations);
	case 4:
		if (kr_parse_duration_ns("--quota", arg, "us", 1000000, 1000000000000LL, &ns) < 0)
			return -1;
		cfg.quota_ns = ns;
		return 0;
	case 5:
		if (kr_parse_duration_ns("--period", arg, "us", 1000000, 1000000000LL, &ns) < 0)
			return -1;
		cfg.period_ns = ns;
		return 0;
	case 6:
		if (kr_parse_duration_ns("--burst", arg, "us", 0, 1000000000000LL, &ns) < 0)
			return -1;
		cfg.burst_ns = ns;
		return 0;
	case 7: return kr_parse_long("--slice", arg, 1, 1000000, &cfg.slice_us);
	case 8:
		if (kr_parse_duration_ns("--warmup", arg, "ms", 0, 10000000000LL, &ns) < 0)
			return -1;
		cfg.warmup_ns = ns;
		return 0;
	case 9:
		if (kr_parse_double("--max-efficiency", arg, 0, 2, &d) < 0)
			return -1;
		cfg.max_efficiency = d;
		return 0;
	}
	return -1;
}

static int validate(const struct kr_opts *o)
{
	(void)o;
	if (cfg.quota_ns > 0 && cfg.period_ns > 0 && cfg.burst_ns > cfg.quota_ns)
		return kr_usage_error("--burst: must not exceed --quota");
	if (cfg.period_ns > 0 && o->duration_s * 1e9 < (double)cfg.period_ns)
		return kr_usage_error("--duration: must be at least one --period");
	return 0;
}

static const struct kr_prog prog = {
	.name = "fibtest",
	.summary = "CFS bandwidth: throttled while the quota goes unused",
	.description =
		"Creates its own cgroup (krepro-fibtest-PID) with a CPU quota, runs Indeed's\n"
		"Fibtest shape in it (a fast thread computing Fibonacci numbers, slow threads\n"
		"doing a short burst then sleeping 10 ms, pinned across the CPUs) and reads\n"
		"the group's cpu.stat and usage over a window after a warm-up:\n"
		"  throttled  = nr_throttled / nr_periods (%)\n"
		"  efficiency = usage / (quota / period x window)\n"
		"A group that is throttled while it uses its quota is limited legitimately;\n"
		"one throttled while it leaves quota unused is hit by per-CPU slice expiry\n"
		"(512ac999d275, v4.18, fixed by de53fd7aedb1, v5.4) or slice hoarding.\n"
		"On cgroup v2 the group is a threaded child of a domain holding the\n"
		"process: only the workload threads are limited, the sampler is not.\n"
		"A v2 root that cannot pass the cpu controller down (a container's) is\n"
		"SKIP 129.\n"
		"A window with host steal above 5% is not counted and is repeated.\n"
		"--trigger sets kernel.sched_cfs_bandwidth_slice_us to 1 s (restored) and\n"
		"runs the workers shape, so a fixed kernel FAILs too (positive control).",
	.example = "git bisect run ./build/fibtest/fibtest --quiet",
	.flags = KR_NEEDS_ROOT | KR_OPT_CPUS | KR_OPT_TRIGGER | KR_OPT_REPEAT,
	.metric = "throttled",
	.unit = "%",
	.threshold = 20,
	.threshold_min = 0,
	.threshold_max = 100,
	.rule = "FAIL when throttled >= threshold % of periods and efficiency <= 0.90",
	.duration_s = 1,
	.duration_max_s = 30,
	.repeat = 1,
	.options = options,
	.parse = parse,
	.validate = validate,
	.run = run,
};

int main(int argc, char **argv)
{
	return kr_main(&prog, argc, argv);
}
