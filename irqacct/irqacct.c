// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: irq and softirq time charged to the task they interrupted.
 *
 * Without CONFIG_IRQ_TIME_ACCOUNTING (b52bfee445d3, 305e6835e055, v2.6.37; off in Debian
 * and most distributions) a task's clock runs on while its CPU serves an irq or softirq:
 * the time is charged to the interrupted task (CPU time, cgroup quota). With it, irq
 * time leaves the task's clock (unless tsc=noirqtime or an unstable TSC turns it off).
 *
 * UDP at Poisson spacing over loopback in a netns of our own; RPS steers NET_RX to a
 * victim CPU, where a probe spins and sums its clock steps above cfg.gap_ns: the time it
 * lost. Less run delay and steal, that is irq time; the part of it still in the probe's
 * CPU time was charged: hidden = charged / lost, busy less baseline; ~1 FAIL (0.98-1.01
 * measured), 0.07-0.28 with the option (TCG, quiet host) PASS.
 */
#include "krepro.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define PASS_BELOW 0.3 /* hidden below: precise irq time accounting (0.07-0.278 seen) */
#define SLICES 10      /* of baseline and of busy per repeat, ABBA: drift cancels */
#define MAX_DELAY 25.0 /* ms/s run delay from other tasks (idle 0.2, a build > 40) */
#define MAX_BASE 100.0 /* ms/s lost without traffic (quiet 11-42, TCG 70; host load) */

static struct {
	long rate;	 /* packets/s */
	double min_lost; /* ms/s of irq loss needed to judge */
	int64_t gap_ns;	 /* a clock step above this is time lost */
	int ksoftirqd;	 /* 0: at FIFO 1, as 4.9-6.4 defer NET_RX to it (4cd13c21b207) */
} cfg = { .rate = 60000, .min_lost = 50, .gap_ns = 1000 };

static _Atomic long traffic_rate; /* packets/s; 0 pauses the sender */
static _Atomic unsigned long long n_sent, n_received;
static unsigned short rng[3]; /* erand48's state: the seed */

static void *sender(void *fd)
{
	static const char payload[64] = "krepro-irqacct";
	int64_t next = 0, now;
	long rate;

	prctl(PR_SET_TIMERSLACK, 1UL);
	for (;;) {
		while (!(rate = traffic_rate))
			kr_sleep_ns(1000000);
		if (next < (now = kr_now_ns()) - 10000000)
			next = now; /* resumed, or hopelessly late */
		/* exponential gaps: never in step with the tick */
		next += (int64_t)(-log(1.0 - erand48(rng)) * 1e9 / (double)rate);
		if (next - now > 60000)
			kr_sleep_until_ns(next - 30000);
		while (kr_now_ns() < next)
			;
		n_sent += send(*(int *)fd, payload, 64, MSG_DONTWAIT) > 0;
	}
	return NULL;
}

static void *receiver(void *fd)
{
	static char buf[128];
	struct iovec iov = { buf, sizeof(buf) };
	struct mmsghdr m[64];

	for (int i = 0; i < 64; i++)
		m[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov, .msg_iovlen = 1 } };
	for (;;) /* until the process ends */
		n_received += (unsigned)recvmmsg(*(int *)fd, m, 64, MSG_WAITFORONE, NULL);
	return NULL;
}

/* a phase's figures per second (ms; packets), the mean of its slices by wall time */
#define NV 12
struct phase {
	const char *name;
	long rate;
	bool no_probe; /* the victim CPU may idle (the full program's) */
	double wall;
	union {
		struct {
			double lost, cpu, delay, ksoftirqd, steal, user, system, irq, softirq,
				idle, sent, received;
		};
		double v[NV];
	};
};

static int victim, other;
static bool fifo; /* ksoftirqd/N at SCHED_FIFO 1 */
static pid_t ksoftirqd;
static int64_t probe_ns;
static struct kr_cpu_times stat0[KR_MAX_CPUS], stat1[KR_MAX_CPUS]; /* a slice's */
static struct phase pairs[100][2]; /* per repeat: baseline, busy */
#ifndef KR_MAIL /* the full program's: /proc/stat, --csv; more after the pairs */
static int full_stat_csv(struct phase *s, double tick);
static void regimes(int repeats, enum kr_verdict v);
#endif

/* spins on the victim CPU at nice -20 (no RT throttling): lost, cpu and delay */
static void *probe(void *arg)
{
	struct phase *ph = arg;
	struct kr_schedstat s0 = { 0 }, s1 = { 0 };
	struct timespec c0, c1;
	int64_t lost = 0;

	setpriority(PRIO_PROCESS, (id_t)kr_gettid(), -20);
	kr_read_schedstat(getpid(), kr_gettid(), &s0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	int64_t t0 = kr_now_ns(), end = t0 + probe_ns, prev = t0;
	for (int64_t t = t0; t < end; prev = t)
		if ((t = kr_now_ns()) - prev > cfg.gap_ns)
			lost += t - prev;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	kr_read_schedstat(getpid(), kr_gettid(), &s1);
	double ms = 1e3 / (double)(prev - t0); /* ns -> ms per second */
	ph->lost = (double)lost * ms;
	ph->cpu = (double)((c1.tv_sec - c0.tv_sec) * 1000000000LL + c1.tv_nsec - c0.tv_nsec) * ms;
	ph->delay = (double)(s1.wait_ns - s0.wait_ns) * ms;
	return NULL;
}

static double ksoftirqd_ns(void)
{
	struct kr_schedstat s = { 0 };

	if (ksoftirqd)
		kr_read_schedstat(ksoftirqd, 0, &s);
	return (double)s.run_ns;
}

/* one slice of phase ph: its figures join ph's */
static int measure(struct phase *ph, double seconds)
{
	struct kr_cpu_times all;
	struct phase s = { .name = ph->name, .rate = ph->rate, .no_probe = ph->no_probe };
	pthread_t t;

	traffic_rate = ph->rate;
	kr_sleep_ns(20000000); /* let the rate settle (and the backlog drain) */
	unsigned long long tx = n_sent, rx = n_received;
	double k = ksoftirqd_ns();
	int64_t t0 = kr_now_ns();
	int cpus = kr_read_proc_stat(&all, stat0, victim + 1);
	probe_ns = (int64_t)(seconds * 1e9);
	if (ph->no_probe)
		kr_sleep_ns(probe_ns);
	else if (kr_thread_start(&t, victim, SCHED_OTHER, 0, probe, &s) || pthread_join(t, 0))
		return -1;
	if (cpus <= victim || kr_read_proc_stat(&all, stat1, victim + 1) <= victim)
		return -1;
	s.wall = (double)(kr_now_ns() - t0) / 1e9;
	double tick = 1e3 / (double)kr_user_hz() / s.wall; /* ticks -> ms per second */
	s.steal = (double)(stat1[victim].steal - stat0[victim].steal) * tick;
	s.ksoftirqd = (ksoftirqd_ns() - k) / 1e6 / s.wall;
	s.sent = (double)(n_sent - tx) / s.wall, s.received = (double)(n_received - rx) / s.wall;
#ifndef KR_MAIL
	if (full_stat_csv(&s, tick) < 0)
		return -1;
#endif
	for (int i = 0; i < NV; i++)
		ph->v[i] = (ph->v[i] * ph->wall + s.v[i] * s.wall) / (ph->wall + s.wall);
	ph->wall += s.wall;
	return 0;
}

/* busy t less baseline b (ms/s). The probe's gaps are irq time, steal and run delay
 * (and host time not shown as steal); what is charged of them is in its CPU time */
struct pair {
	double hidden, lost, delay, thread, base; /* delay: but ksoftirqd's; base: b's loss */
};

static struct pair pair_of(const struct phase *b, const struct phase *t)
{
	double lost = t->lost - t->steal - t->delay - (b->lost - b->steal - b->delay);

	return (struct pair){ .hidden = (t->cpu + t->lost - b->cpu - b->lost) / lost,
		.lost = lost, .thread = t->ksoftirqd - b->ksoftirqd, .base = b->lost,
		.delay = fmax(0, fmax(b->delay - b->ksoftirqd, t->delay - t->ksoftirqd)) };
}

/* a pair's vote; why: the reason for a SKIP */
static enum kr_verdict irqacct_rule(const struct pair *p, double fail_above, double min_lost,
				    char *why)
{
	if (p->thread > 5.0 && !(p->lost >= p->thread))
		sprintf(why, "NET_RX ran in ksoftirqd/%d (%.1f ms/s), not on irq exit (%.1f "
			"ms/s)%s", victim, p->thread, p->lost, fifo ? "" : ", at SCHED_OTHER");
	else if (!(p->base <= MAX_BASE))
		sprintf(why, "the baseline lost %.0f ms/s, over %.0f: host load?", p->base,
			MAX_BASE);
	else if (!(p->lost >= min_lost))
		sprintf(why, "irq loss %.1f ms/s below %.0f ms/s: raise the rate", p->lost,
			min_lost);
	else if (!(p->delay <= MAX_DELAY))
		sprintf(why, "run delay %.1f ms/s from other tasks", p->delay);
	else if (p->hidden > fail_above)
		return KR_FAIL;
	else if (p->hidden < PASS_BELOW)
		return KR_PASS;
	else
		sprintf(why, "hidden between %.2f and %.2f", PASS_BELOW, fail_above);
	return KR_SKIP;
}

/* UDP over loopback in a netns of our own (it goes with the process), RPS steering
 * NET_RX to the victim CPU; 0 or the exit code */
static int setup_network(int *tx, int *rx)
{
	char mask[KR_CPUMASK_LEN];
	int ns = kr_netns_new(), big = 4 << 20;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(5211),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	/* from inside the netns: the host's /sys shows the host's lo */
	if (ns < 0 || kr_netns_sysfs_write(ns, "class/net/lo/queues/rx-0/rps_cpus",
			kr_cpus_mask(&(struct kr_cpus){ 1, &victim }, 0, mask, sizeof(mask))))
		return errno == EINVAL || errno == ENOENT ? kr_skip(125, "needs CONFIG_NET_NS and "
			"CONFIG_RPS: %s", strerror(errno)) : kr_error("RPS to CPU %d in a network "
			"namespace: %s", victim, strerror(errno));
	*rx = kr_netns_socket(ns, AF_INET, SOCK_DGRAM, 0);
	*tx = kr_netns_socket(ns, AF_INET, SOCK_DGRAM, 0);
	if (*rx < 0 || *tx < 0 || setsockopt(*rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)) ||
	    bind(*rx, (void *)&a, sizeof(a)) || connect(*tx, (void *)&a, sizeof(a)))
		return kr_error("UDP over loopback: %s", strerror(errno));
	return 0;
}

/* what the kernel must have (thread: where NET_RX runs in a thread, else NULL): NULL, or
 * why the test cannot run (SKIP 125) */
static const char *kernel_unfit(const char *thread, char *why, size_t len)
{
	char st[128];

	if (kr_read_file("/proc/self/schedstat", st, sizeof(st)) < 0)
		return "needs /proc/PID/schedstat (CONFIG_SCHED_INFO)";
	if (thread)
		return snprintf(why, len, "NET_RX runs in a thread, not on irq exit: %s", thread), why;
	return NULL;
}

/* nice ranks only within an autogroup: a session of our own (setsid) gets one, and ours
 * at -20 keeps other sessions away. A process group leader cannot setsid: the mail form
 * typed into an interactive shell is one (issue 43: its probe lost the autogroup, and it
 * SKIPped where the program FAILed). Then a child carries the run in a session of its own;
 * this process passes it the signals it gets, the time cap's among them, and its exit code */
static pid_t session_child;

static void pass_signal(int sig)
{
	kill(session_child, sig);
}

static bool own_autogroup(void)
{
	int status;

	if (access("/proc/self/autogroup", F_OK))
		return false;
	if (setsid() < 0 && errno == EPERM) {
		fflush(NULL);
		if ((session_child = fork()) < 0)
			return false;
		if (session_child > 0) {
			for (const int *s = (const int[]){ SIGINT, SIGTERM, SIGHUP, SIGALRM, 0 }; *s; s++)
				signal(*s, pass_signal);
			while (waitpid(session_child, &status, 0) < 0 && errno == EINTR)
				;
			_exit(WIFEXITED(status) ? WEXITSTATUS(status) : KR_EXIT_ERROR);
		}
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* our undo runs if the parent is killed */
		if (setsid() < 0)
			return false;
	}
	return !kr_write_file("/proc/self/autogroup", "-20");
}

static int run(const struct kr_opts *o)
{
	char why[256];
	int n = o->repeat, tx, rx, rc, npass, nfail;
	/* --duration: 15% baseline, 35% busy (the full program's regimes: 50%) */
	double t_base = o->duration_s * 0.15 / n, t_busy = o->duration_s * 0.35 / n;
	unsigned long long seed = o->seed ? o->seed : (unsigned long long)kr_now_ns() & 0x7fffffff;
	enum kr_verdict votes[100];
	struct kr_cpus usable;
	struct pair p = { 0 };
	pthread_t th;

	kr_usable_cpus(&usable);
	rc = kr_cpu_pick(&usable, o->cpu, &victim, &other);
	kr_cpus_free(&usable);
	if (rc < 0 || other < 0)
		return kr_skip(129, "needs 2 usable CPUs: %s", kr_cpus_unusable(why, sizeof(why)));
	/* RPS's NET_RX in backlog_napi/N (v6.10+), softirqs in ksoftirqd */
	const char *thread = kr_backlog_threaded(), *unfit;
	if ((unfit = kernel_unfit(thread ? thread : kr_softirq_threaded(), why, sizeof(why))))
		return kr_skip(125, "%s", unfit);
#ifndef KR_MAIL
	kr_env_standard((const char *const[]){ "group:config", "group:cmdline",
		"config:CONFIG_PARAVIRT_TIME_ACCOUNTING", "config:CONFIG_VIRT_CPU_ACCOUNTING_GEN",
		"file:/sys/devices/system/clocksource/clocksource0/current_clocksource", NULL });
#else
	kr_env_standard(NULL); /* kernel and CPUs: the mail carries the rest */
#endif
	bool own = own_autogroup(); /* before any change, thread or socket */
	if ((rc = setup_network(&tx, &rx)))
		return rc;
	snprintf(why, sizeof(why), "ksoftirqd/%d", victim);
	kr_find_kthreads(why, &ksoftirqd, 1);
	/* refused (RT_GROUP_SCHED): measured as it is, the SKIP says so */
	fifo = !cfg.ksoftirqd && ksoftirqd && !kr_journal_sched(ksoftirqd, SCHED_FIFO, 1);
	kr_params("duration=%gs repeat=%d victim_cpu=%d traffic_cpu=%d rate=%ldpps gap=%lldns "
		  "min_lost=%gms/s seed=%llu ksoftirqd=%s probe=nice-20%s", o->duration_s, n,
		  victim, other, cfg.rate, (long long)cfg.gap_ns, cfg.min_lost, seed,
		  fifo ? "FIFO1" : ksoftirqd ? "left" : "none", own ? ",autogroup" : "");
	rng[0] = seed, rng[1] = seed >> 16, rng[2] = seed >> 32;
	if (kr_pin(0, other) || kr_thread_start(&th, other, SCHED_OTHER, 0, sender, &tx) ||
	    kr_thread_start(&th, other, SCHED_OTHER, 0, receiver, &rx))
		return kr_error("traffic on CPU %d: %s", other, strerror(errno));
	traffic_rate = cfg.rate; /* warm up */
	kr_sleep_ns(200000000);

	/* the subtraction assumes one load: a pair over MAX_DELAY or MAX_BASE is measured
	 * again while time lasts */
	int64_t end = kr_now_ns() + (int64_t)(o->duration_s * 1.5e9);
	int64_t again = (int64_t)((t_base + t_busy + 0.1 * SLICES) * 1e9);
	for (int r = 0; r < n; r++) {
		struct phase *ph = pairs[r];
		ph[0] = (struct phase){ .name = "baseline" };
		ph[1] = (struct phase){ .name = "busy", .rate = cfg.rate };
		for (int k = 0; k < 2 * SLICES; k++) { /* ABBA... */
			bool busy = k % 4 == 1 || k % 4 == 2;
			if (measure(&ph[busy], (busy ? t_busy : t_base) / SLICES))
				return kr_error("measurement failed: %s", strerror(errno));
		}
		p = pair_of(&ph[0], &ph[1]);
		if ((p.delay > MAX_DELAY || p.base > MAX_BASE) && kr_now_ns() + again < end) {
			kr_warn("run delay %.1f, baseline loss %.1f ms/s: measuring again",
				p.delay, p.base);
			r--;
			continue;
		}
		votes[r] = irqacct_rule(&p, o->threshold, cfg.min_lost, why);
		kr_say("%-3.0d ms/s    lost     CPU   delay ksoftirqd  steal  pkts/s",
		       n > 1 ? r + 1 : 0); /* the repeat's number, if more than one */
		for (int i = 0; i < 2; i++)
			kr_say("%-9s%8.1f%8.1f%8.1f%10.1f%7.1f%8.0f", ph[i].name, ph[i].lost,
			       ph[i].cpu, ph[i].delay, ph[i].ksoftirqd, ph[i].steal, ph[i].sent);
		kr_say("hidden = charged/lost = %.1f/%.1f = %.2f", p.hidden * p.lost, p.lost,
		       p.hidden);
	}
	enum kr_verdict v = kr_vote(votes, n, &npass, &nfail);
#ifndef KR_MAIL
	regimes(n, v);
#endif
	traffic_rate = 0; /* the threads and the netns end with the process */
	if (v != KR_SKIP) /* the figures: the last repeat's */
		return kr_verdict(v, p.hidden, "lost=%.0fms/s", p.lost);
	if (npass && nfail)
		return kr_inconclusive(p.hidden, "repeats disagree: %d PASS, %d FAIL", npass, nfail);
	return kr_inconclusive(p.hidden, "%s", why);
}

static const struct kr_prog prog = {
	.name = "irqacct",
	.flags = KR_NEEDS_ROOT | KR_NEEDS_KTHREADS | KR_OPT_CPU | KR_OPT_SEED | KR_OPT_REPEAT,
	.metric = "hidden", .unit = "", .threshold = 0.7, .threshold_min = 0.35, .threshold_max = 1.0,
	.rule = "FAIL when hidden > threshold, PASS below 0.3, with irq loss >= min_lost "
		"(50 ms/s), run delay from other tasks <= 25 and baseline loss <= 100 ms/s; "
		"SKIP 125 where NET_RX runs in a thread, else inconclusive",
	.duration_s = 5, .duration_max_s = 30, .repeat = 1, .run = run,
};

/* ---- the command line (not in the mail form) ---- */

/* --csv and JSON's names of a phase's figures (struct phase's v[]) */
static const char *const v_names[NV] = { "lost_ms_s", "cpu_ms_s", "delay_ms_s",
	"ksoftirqd_ms_s", "steal_ms_s", "stat_user_ms_s", "stat_system_ms_s", "stat_irq_ms_s",
	"stat_softirq_ms_s", "stat_idle_ms_s", "sent_pps", "received_pps" };

/* a slice's /proc/stat columns of the victim but steal (tick: ms/s of one), and its
 * --csv row; the file is opened on the first */
static int full_stat_csv(struct phase *s, double tick)
{
	static bool opened;
	const struct kr_cpu_times *a = &stat0[victim], *b = &stat1[victim];
	char row[1024], *p = row;

#define D(f) ((double)(b->f - a->f) * tick)
	s->user = D(user) + D(nice), s->system = D(system), s->irq = D(irq);
	s->softirq = D(softirq), s->idle = D(idle) + D(iowait);
#undef D
	if (!opened) {
		p += sprintf(p, "phase,rate_pps,probe,wall_s");
		for (int i = 0; i < NV; i++)
			p += sprintf(p, ",%s", v_names[i]);
		if (kr_csv_open(row) < 0)
			return -1;
		opened = true, p = row;
	}
	p += sprintf(p, "%s,%ld,%d,%.4f", s->name, s->rate, !s->no_probe, s->wall);
	for (int i = 0; i < NV; i++)
		p += sprintf(p, ",%.3f", s->v[i]);
	kr_csv_row("%s", row);
	return 0;
}

static long idle_rate = 15000; /* packets/s in the regimes after the pairs */

/* a verdict against CONFIG_IRQ_TIME_ACCOUNTING (irqta: 1 set, 0 not, -1 unknown) */
static bool config_disagrees(enum kr_verdict v, int irqta)
{
	return irqta >= 0 && ((v == KR_FAIL && irqta) || (v == KR_PASS && !irqta));
}

/* CONFIG_IRQ_TIME_ACCOUNTING as it acts: x86's tsc=noirqtime keeps it off at run time */
static int irq_time_accounting(const struct kr_kernel *k, bool *noirqtime)
{
	char v[32];
	int irqta = k->config ? kr_kconfig_parse(k->config, "CONFIG_IRQ_TIME_ACCOUNTING", v,
						 sizeof(v)) : -1;

	*noirqtime = k->cmdline && kr_cmdline_has(k->cmdline, "tsc=noirqtime");
	return irqta == 1 && *noirqtime ? 0 : irqta;
}

/* After the pairs, traffic still on: /proc/stat's softirq column against the time really
 * lost, with the probe (busy-low) and without it (idle-low: softirq in tickless idle is
 * never sampled) at the idle rate; JSON's figures; the verdict against the config. */
static void regimes(int repeats, enum kr_verdict v)
{
	static struct phase low, idle; /* static: reachable to the end (valgrind) */
	const struct kr_opts *o = kr_options();
	const struct phase *b = &pairs[repeats - 1][0], *t = &pairs[repeats - 1][1]; /* the last */
	double d = o->duration_s, tick = 1000.0 / (double)kr_user_hz();
	int64_t end = kr_now_ns() + (int64_t)(d * 0.7e9);

	kr_progress("%ld pps: busy, then idle", idle_rate);
	low = (struct phase){ .name = "busy-low", .rate = idle_rate };
	bool ok = measure(&low, d * 0.2) == 0;
	for (;;) { /* an idle regime that was not is measured again while time lasts */
		idle = (struct phase){ .name = "idle-low", .rate = idle_rate, .no_probe = true };
		if (!(ok = ok && measure(&idle, d * 0.3) == 0) || idle.user + idle.system <= 100 ||
		    kr_now_ns() + (int64_t)(d * 0.3e9) >= end)
			break;
		kr_warn("CPU %d not idle (tasks ran %.0f ms/s): measuring the idle regime again",
			victim, idle.user + idle.system);
	}
	double lost = pair_of(b, t).lost, low_lost = pair_of(b, &low).lost;
	double r_busy = (t->softirq - b->softirq) / lost, r_idle = idle.softirq / low_lost;
	bool idle_ok = ok && idle.user + idle.system <= 100;
	kr_say("%s", "");
	kr_say("/proc/stat of CPU %d (tick samples, %.0f ms units), ms/s:", victim, tick);
	kr_say("                    busy   busy-low  idle-low");
	kr_say("  rate (pps)     %7.0f   %7.0f   %7.0f", t->sent, low.sent, idle.sent);
	kr_say("  really lost    %7.1f   %7.1f   (~%.1f)  irq+softirq", lost, low_lost, low_lost);
	for (int i = 5; i < 10; i++) /* "stat_user_ms_s": "user" */
		kr_say("  %-15.*s%7.1f   %7.1f   %7.1f", (int)strlen(v_names[i]) - 10,
		       v_names[i] + 5, t->v[i], low.v[i], idle.v[i]);
	kr_say("  softirq/really lost: busy %.2f, idle %.2f (+-%.1f ms/s)", r_busy, r_idle,
	       tick / fmax(idle.wall, 1e-3));
	if (!idle_ok || r_idle < 0.7)
		kr_say("  %s", idle_ok ? "idle under-count: softirq in tickless idle is not sampled"
		       : "idle ratio not valid: other tasks ran on the CPU");
	kr_measure("hidden", pair_of(b, t).hidden);
	kr_measure("lost_ms_per_s", lost);
	kr_measure("stat_softirq_ratio_busy", r_busy);
	kr_measure("stat_softirq_ratio_idle", r_idle);
	kr_measure("idle_regime_valid", idle_ok);
	const struct phase *shown[] = { b, t, &low, &idle }; /* "busy_lost_ms_s", ... */
	for (int i = 0; i < 4 * NV; i++) {
		char key[64];
		snprintf(key, sizeof(key), "%s_%s", shown[i / NV]->name, v_names[i % NV]);
		kr_measure(key, shown[i / NV]->v[i % NV]);
	}
	bool noirqtime;
	bool disagree = config_disagrees(v, irq_time_accounting(kr_kernel_self(), &noirqtime));
	kr_measure("config_disagrees", disagree);
	if (disagree) {
		kr_say("!!! THE VERDICT DISAGREES WITH THE CONFIG: %s", v == KR_FAIL ?
		       "irqtime off (unstable TSC)?" : "VIRT_CPU_ACCOUNTING?");
		kr_warn("the verdict disagrees with CONFIG_IRQ_TIME_ACCOUNTING");
	}
}

/* on FAIL: the config this kernel was built with, and the switch at boot */
static void causes(const struct kr_opts *o)
{
	bool noirqtime;
	char v[32];
	int irqta = kr_kconfig("CONFIG_IRQ_TIME_ACCOUNTING", v, sizeof(v));

	(void)o;
	irq_time_accounting(kr_kernel_self(), &noirqtime);
	if (irqta != 1)
		kr_cause("CONFIG_IRQ_TIME_ACCOUNTING is not set (Debian, most distros): irq "
			 "time stays in the task's clock (b52bfee445d3, 305e6835e055). A config "
			 "choice: it concerns whoever builds this kernel, not the scheduler");
	if (irqta != 0)
		kr_cause("irq time accounting off at run time (%s)", noirqtime ?
			 "tsc=noirqtime on the command line" : "tsc=noirqtime, unstable TSC");
}

static const struct kr_option options[] = {
	KR_ARG_LONG("rate", "PPS", cfg.rate, 1000, 1000000, "busy load in packets/s (60000)"),
	KR_ARG_LONG("idle-rate", "PPS", idle_rate, 1000, 1000000,
		    "idle-CPU load in packets/s (15000)"),
	KR_ARG_DOUBLE("min-lost", "MS", cfg.min_lost, 1, 900,
		      "ms/s of irq loss needed to judge (50)"),
	KR_ARG_TIME("gap", cfg.gap_ns, "ns", 100, 1000000, "clock step counted as lost (1000ns)"),
	KR_ARG_CHOICE("ksoftirqd", "fifo|leave", cfg.ksoftirqd,
		      "ksoftirqd/CPU at SCHED_FIFO 1 (default fifo)"),
	{ .name = NULL },
};

static int validate(const struct kr_opts *o)
{
	if (o->duration_s / o->repeat < 0.5)
		return kr_usage_error("--duration: at least 0.5 s per repeat");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct kr_cli cli = {
		.summary = "irq/softirq time charged to the interrupted task",
		.description =
			"NET_RX softirq load on a victim CPU (Poisson UDP over loopback, RPS). A\n"
			"probe spinning there sums the clock gaps above --gap (the time it lost);\n"
			"its CPU time, run delay and steal show how much was charged to it, less\n"
			"a no-traffic baseline: hidden = charged / lost. Measured: 0.98-1.01\n"
			"without CONFIG_IRQ_TIME_ACCOUNTING, 0.07-0.28 with it (TCG, quiet\n"
			"host), -0.42 to 0.81 on a loaded host. PASS below 0.3, FAIL above\n"
			"0.7 (--threshold); in between SKIP 125 inconclusive.\n"
			"Also: /proc/stat's softirq column against the real loss. ksoftirqd/CPU\n"
			"runs at SCHED_FIFO 1 (journaled): on 4.9-6.4 it takes NET_RX otherwise.",
		.example = "irqacct --rate 60000 --format json",
		.options = options,
		.validate = validate,
		.causes = causes,
		.subsystem = "sched/cputime", .kernel_file = "kernel/sched/cputime.c",
		.mail_list = "linux-kernel@vger.kernel.org",
	};

	return kr_main(&prog, &cli, argc, argv);
}
