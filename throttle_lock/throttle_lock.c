// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: a CFS bandwidth group throttled while its task holds a kernel lock stalls
 * tasks outside the group.
 *
 * Until 6.18 a group that runs out of quota is throttled as a whole, wherever its tasks
 * are: a task that gets to a cond_resched() or a preemption point in the kernel holding a
 * lock sits off the CPU, lock held, until the next period refills the quota. Every task
 * that needs the lock waits with it, in any group: priority inversion, hung tasks, and on
 * PREEMPT_RT deadlocks with ktimers/ksoftirqd. An rwsem's waiting writer makes every
 * later reader wait too. 6.18's task-based throttle ("sched/fair: Switch to task based
 * throttle model", Valentin Schneider, Aaron Lu) dequeues a throttled task only on its
 * way back to user space, so a lock taken in the kernel is released first.
 *
 * A holder process in a group with a small quota (10 ms per 100 ms) populates 1 MiB of
 * 4 KiB pages in a loop (mmap MAP_POPULATE: mmap_lock held, a cond_resched() per page)
 * while one of its threads takes mmap_lock for writing (mprotect) every 1 ms. Outside
 * the group a reader reads /proc/HOLDER/cmdline every 1 ms, as ps does, which needs the
 * holder's mmap_lock: its longest wait, in periods, is the verdict. --trigger: the
 * holder holds a lock in user space instead (a process-shared mutex, half the time, in
 * spans of random length: a fixed cycle phase-locks with the tick that throttles it),
 * which no throttle model releases first: the reader stalls on every kernel.
 */
#include "krepro.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define MS 1000000LL
#define SLICE "/proc/sys/kernel/sched_cfs_bandwidth_slice_us"
#define BASELINE 100 /* reads while the holder waits: what an uncontended read takes */

static struct {
	int64_t quota_ns, period_ns, interval_ns;
	uint64_t size; /* populated per lock hold */
} cfg = { .quota_ns = 10 * MS, .period_ns = 100 * MS, .interval_ns = 1 * MS,
	  .size = 1 << 20 };

static char group[300];
static pid_t holder;
static pthread_mutex_t *user_lock; /* --trigger: shared with the holder */
static unsigned long long seed = 0x5eed; /* --trigger's spans (--seed) */

/* the holder's writer: mmap_lock for writing, queued behind the populate's read side */
static void *writer(void *arg)
{
	char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	(void)arg;
	if (page == MAP_FAILED)
		return NULL;
	for (int prot = PROT_READ;; prot ^= PROT_WRITE) {
		mprotect(page, 4096, prot);
		kr_sleep_ns(cfg.interval_ns);
	}
}

static void spin_ns(int64_t ns)
{
	for (int64_t end = kr_now_ns() + ns; kr_now_ns() < end;)
		;
}

/* 50-150 us, from the seed: xorshift64 */
static int64_t span_ns(void)
{
	seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
	return 50000 + (int64_t)(seed % 100000);
}

/* the holder: in the group, pinned to cpu, waits for go, then holds mmap_lock in a loop
 * (--trigger: the user-space lock, held 50-150 us, then not 50-150 us; with a fixed
 * 100 + 100 us the tick that throttles it found it in the same state every period, and
 * one run in about 20 PASSed) */
static void holder_main(int cpu, int ready, int go)
{
	pthread_t t;
	char c;
	int err;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* 4 KiB pages: the populate reaches a cond_resched() at every page */
	err = prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) || kr_cgroup_attach_pid(group, getpid()) ||
	      kr_pin(0, cpu) ? errno : 0;
	if (write(ready, &err, sizeof(err)) < 0 || err || read(go, &c, 1) != 1)
		_exit(1);
	while (user_lock) {
		pthread_mutex_lock(user_lock);
		spin_ns(span_ns());
		pthread_mutex_unlock(user_lock);
		spin_ns(span_ns());
	}
	if (kr_thread_start(&t, cpu, SCHED_OTHER, 0, writer, NULL))
		_exit(1);
	for (;;) {
		void *p = mmap(NULL, cfg.size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p != MAP_FAILED)
			munmap(p, cfg.size);
	}
}

static int start_holder(int cpu, int *go)
{
	int ready[2], gop[2], err = 0;

	if (pipe(ready) || pipe(gop) || (holder = fork()) < 0)
		return kr_error("fork: %s", strerror(errno));
	if (!holder)
		holder_main(cpu, ready[1], gop[0]);
	close(ready[1]), close(gop[0]);
	*go = gop[1];
	if (read(ready[0], &err, sizeof(err)) != sizeof(err) || err)
		return kr_error("no holder in %s: %s", group, strerror(err ? err : EPIPE));
	close(ready[0]);
	return 0;
}

/* one read of the holder's cmdline (--trigger: one take of the user-space lock): how long
 * it took, in us (-1: it failed) */
static double read_wait_us(int fd)
{
	char buf[256];
	int64_t t = kr_now_ns();

	if (user_lock && (errno = pthread_mutex_lock(user_lock)))
		return -1; /* EOWNERDEAD: the holder died */
	if (user_lock)
		return pthread_mutex_unlock(user_lock) ? -1 : (double)(kr_now_ns() - t) / 1e3;
	return pread(fd, buf, sizeof(buf), 0) < 0 ? -1 : (double)(kr_now_ns() - t) / 1e3;
}

/* a process-shared mutex for --trigger, in memory the holder inherits */
static int make_user_lock(void)
{
	pthread_mutexattr_t a;
	void *m = mmap(NULL, sizeof(*user_lock), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return kr_error("mmap: %s", strerror(errno));
	user_lock = m;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	/* a holder that dies holding it: EOWNERDEAD for the reader, not a wait forever */
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	return pthread_mutex_init(user_lock, &a) ? kr_error("pthread_mutex_init failed") : 0;
}

/* the verdict from the reader's longest wait (stall, in periods), the reads that waited
 * and the periods the group was throttled in; *why: an inconclusive run's reason */
static enum kr_verdict judge(double stall, size_t waited, uint64_t throttled, bool mitigate,
			     double threshold, const char **why)
{
	*why = NULL;
	if (!waited) /* the premise: the reads need the lock the holder holds */
		*why = "no read waited: the lock was not contended";
	else if (!mitigate && !throttled)
		*why = "the group was never throttled";
	else
		return stall > threshold ? KR_FAIL : KR_PASS;
	return KR_SKIP;
}

/* whether the release has the task-based throttle (e1fad12dcb66, merged for 6.18), by its
 * version: a distribution kernel may carry a backport */
static bool task_based_by_version(const char *release)
{
	int a = 0, b = 0;

	return sscanf(release, "%d.%d", &a, &b) == 2 && a * 1000 + b >= 6018;
}

static int throttled(uint64_t *periods, uint64_t *n)
{
	char path[400], text[4096];

	snprintf(path, sizeof(path), "%s/cpu.stat", group);
	return kr_read_file(path, text, sizeof(text)) < 0 ||
	       kr_kv_get(text, "nr_periods", periods) || kr_kv_get(text, "nr_throttled", n)
		       ? -1 : 0;
}

/* before anything changes: the kernel's bandwidth control and the CPUs; 0, or a SKIP's
 * exit code with its reason in why */
static int machine_check(int want, int *cpu, int *reader_cpu, char *why, size_t len)
{
	struct kr_cpus usable;
	uint64_t slice;
	int r;

	if (kr_read_u64(SLICE, &slice) < 0)
		return snprintf(why, len, "needs CONFIG_CFS_BANDWIDTH (no %s)", SLICE), 125;
	kr_usable_cpus(&usable);
	r = kr_cpu_pick(&usable, want, cpu, reader_cpu);
	kr_cpus_free(&usable);
	return r < 0 ? snprintf(why, len, "no usable CPU"), 129 : 0;
}

static int run(const struct kr_opts *o)
{
	static double base[BASELINE], *wait;
	uint64_t p0, p1, t0, t1;
	int cpu, reader_cpu, go = -1, fd, r;
	size_t n = 0, max_n;
	char path[64], why_not[300];

	if ((r = machine_check(o->cpu, &cpu, &reader_cpu, why_not, sizeof(why_not))))
		return kr_skip(r, "%s", why_not);
	int64_t quota = o->mitigate ? 2 * cfg.period_ns : cfg.quota_ns;
	const char *lock = o->trigger ? "user" : "mmap_lock", *why;

	seed = o->seed ? o->seed : seed;
	kr_env_standard((const char *const[]){ "config:CONFIG_CFS_BANDWIDTH",
					       "config:CONFIG_PREEMPT_RT", "group:cgroup",
					       "group:cmdline", NULL });
	kr_params("cpu=%d reader_cpu=%d quota_us=%lld period_us=%lld size_kib=%llu "
		  "interval_us=%lld window_s=%g lock=%s seed=%llu mitigate=%s", cpu, reader_cpu,
		  (long long)quota / 1000, (long long)cfg.period_ns / 1000,
		  (unsigned long long)cfg.size >> 10, (long long)cfg.interval_ns / 1000,
		  o->duration_s, lock, seed, o->mitigate ? "yes" : "no");
	if ((o->trigger && (r = make_user_lock())) ||
	    (r = kr_cpu_group(group, sizeof(group), "throttle_lock", quota / 1000,
			      cfg.period_ns / 1000)) || (r = start_holder(cpu, &go)))
		return r;
	if (reader_cpu >= 0)
		kr_pin(0, reader_cpu);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)holder);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return kr_error("%s: %s", path, strerror(errno));
	for (int i = 0; i < BASELINE; i++)
		if ((base[i] = read_wait_us(fd)) < 0)
			return kr_error("%s: %s", o->trigger ? "the user-space lock" : path,
					strerror(errno));
	max_n = (size_t)(o->duration_s * 1e9 / (double)cfg.interval_ns) + 2;
	if (!(wait = calloc(max_n, sizeof(*wait))))
		return kr_error("out of memory");
	if (write(go, "g", 1) != 1)
		return kr_error("the holder is gone: %s", strerror(errno));
	kr_sleep_ns(2 * cfg.period_ns); /* its first periods: the quota is in use */
	kr_csv_open("t_ms,wait_us");
	int64_t start = kr_now_ns(), end = start + (int64_t)(o->duration_s * 1e9);
	if (throttled(&p0, &t0))
		return kr_error("cannot read %s/cpu.stat: %s", group, strerror(errno));
	for (int64_t next = start; next < end && n < max_n; next += cfg.interval_ns) {
		if ((wait[n] = read_wait_us(fd)) < 0)
			return kr_error("%s: %s", o->trigger ? "the user-space lock" : path,
					strerror(errno));
		kr_csv_row("%.3f,%.1f", (double)(kr_now_ns() - start) / 1e6, wait[n]);
		n++;
		kr_sleep_until_ns(next + cfg.interval_ns);
	}
	if (throttled(&p1, &t1))
		return kr_error("cannot read %s/cpu.stat: %s", group, strerror(errno));
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);

	/* a read that waited: longer than 4x the uncontended reads' p95, and 50 us (their max
	 * under TCG was a 6 ms outlier: 3 of 10 --mitigate runs had no read above 4x it) */
	struct kr_stats b, w;
	kr_stats(base, BASELINE, &b);
	double base_p95 = kr_percentile(base, BASELINE, 95);
	double waited_us = 4 * base_p95 > 50 ? 4 * base_p95 : 50;
	size_t waited = 0;
	for (size_t i = 0; i < n; i++)
		waited += wait[i] > waited_us;
	kr_stats(wait, n, &w);
	double p99 = kr_percentile(wait, n, 99), stall = w.max * 1e3 / (double)cfg.period_ns;
	kr_say("group %s:", group);
	kr_say("  quota %lld us per %lld us", (long long)quota / 1000,
	       (long long)cfg.period_ns / 1000);
	if (o->trigger) {
		kr_say("holder pid %d on cpu %d: a user-space lock, held half the time",
		       (int)holder, cpu);
		kr_say("reader takes it every %lld us, cpu %d", (long long)cfg.interval_ns / 1000,
		       reader_cpu);
	} else {
		kr_say("holder pid %d on cpu %d: %llu KiB populated in a loop, a writer",
		       (int)holder, cpu, (unsigned long long)cfg.size >> 10);
		kr_say("reader %s every %lld us, cpu %d", path,
		       (long long)cfg.interval_ns / 1000, reader_cpu);
	}
	kr_say("holder idle:  %d reads, median %.1f us, p95 %.1f us, max %.1f us", BASELINE,
	       b.median, base_p95, b.max);
	kr_say("holder busy: %zu reads, median %.1f us, p99 %.1f us, max %.1f ms", n, w.median,
	       p99, w.max / 1e3);
	kr_say("reads that waited (> %.0f us): %zu; group throttled in %llu of %llu "
	       "periods", waited_us, waited, (unsigned long long)(t1 - t0),
	       (unsigned long long)(p1 - p0));
	kr_measure("reads", (double)n);
	kr_measure("waited_reads", (double)waited);
	kr_measure("wait_p99_us", p99);
	kr_measure("wait_max_us", w.max);
	kr_measure("throttled_periods", (double)(t1 - t0));
	enum kr_verdict v = judge(stall, waited, t1 - t0, o->mitigate, o->threshold, &why);
	if (v == KR_SKIP)
		return kr_inconclusive(stall, "%s", why);
	return kr_verdict(v, stall, "max_wait=%.1fms p99=%.2fms", w.max / 1e3, p99 / 1e3);
}

static const struct kr_prog prog = {
	.name = "throttle_lock",
	.flags = KR_NEEDS_ROOT | KR_OPT_CPU | KR_OPT_SEED | KR_OPT_TRIGGER | KR_OPT_MITIGATE,
	.metric = "stall", .unit = "", .threshold = 0.5, .threshold_min = 0.05,
	.threshold_max = 10,
	.rule = "FAIL when the outside reader's longest wait for the holder's mmap_lock "
		"exceeds threshold x the period",
	.duration_s = 2, .duration_max_s = 30, .run = run,
};

/* ---- the command line (not in the mail form) ---- */

static const struct kr_option options[] = {
	KR_ARG_TIME("quota", cfg.quota_ns, "us", MS, 1e12, "the group's quota (10ms)"),
	KR_ARG_TIME("period", cfg.period_ns, "us", MS, 1e9, "the group's period (100ms)"),
	KR_ARG_SIZE("size", cfg.size, 4096, 1ULL << 30, "populated per lock hold (1M)"),
	KR_ARG_TIME("interval", cfg.interval_ns, "us", 100000, 1e9,
		    "between reads, and the writer's mprotects (1ms)"),
	{ .name = NULL },
};

/* on FAIL: the throttle model by the kernel's version */
static void causes(const struct kr_opts *o)
{
	struct utsname u;

	uname(&u);
	if (o->trigger)
		kr_cause("--trigger: the holder was throttled in user space holding a "
			 "user-space lock, which no throttle model releases first: the "
			 "measurement's positive control, on any kernel");
	else if (!task_based_by_version(u.release))
		kr_cause("%s throttles a group wherever its tasks are (before 6.18): "
			 "the holder sat off the CPU in the kernel with mmap_lock held; "
			 "e1fad12dcb66 (\"sched/fair: Switch to task based throttle "
			 "model\", 6.18) defers it to the return to user space", u.release);
	else
		kr_cause("%s is 6.18 or later by its version: e1fad12dcb66's task-based "
			 "throttle should have let the holder release mmap_lock first; a "
			 "regression of it, or a kernel without it", u.release);
}

static int validate(const struct kr_opts *o)
{
	(void)o;
	if (cfg.quota_ns >= cfg.period_ns)
		return kr_usage_error("--quota: must be less than --period (%lld us)",
				      (long long)cfg.period_ns / 1000);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct kr_cli cli = {
		.summary = "a throttled group's task holds a lock others wait for",
		.description =
			"Runs a holder process in its own cgroup with a small quota (10 ms\n"
			"per 100 ms): it populates 1 MiB of 4 KiB pages in a loop (mmap\n"
			"MAP_POPULATE, mmap_lock held) while one of its threads mprotects a\n"
			"page (mmap_lock for writing) every 1 ms. Outside the group, a reader\n"
			"reads /proc/HOLDER/cmdline every 1 ms, as ps does; that needs the\n"
			"holder's mmap_lock. Before 6.18 the throttle takes the holder off\n"
			"the CPU in the kernel, lock held, until the next period: the reader\n"
			"waits up to period - quota (90 ms). 6.18's task-based throttle\n"
			"defers it to the return to user space: the reader waits for one\n"
			"populate at most.\n"
			"  stall = the reader's longest wait / period\n"
			"FAIL when stall > 0.5. SKIP 125 when no read waited (the lock was\n"
			"not contended) or the group was never throttled (without\n"
			"--mitigate). --mitigate gives the group 2 CPUs of quota, the\n"
			"workaround of a larger quota: the stall is the throttle's.\n"
			"--trigger: the holder holds a user-space lock instead (half the\n"
			"time, in spans of 50-150 us, from --seed), which no throttle\n"
			"model releases first: FAIL on every kernel, the measurement's\n"
			"positive control.",
		.example = "git bisect run ./build/throttle_lock/throttle_lock --quiet",
		.options = options,
		.validate = validate,
		.causes = causes,
		.subsystem = "sched/fair", .kernel_file = "kernel/sched/fair.c",
		.mail_list = "linux-kernel@vger.kernel.org",
	};
	return kr_main(&prog, &cli, argc, argv);
}
