// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: where the kernel puts interrupt and softirq time.
 *
 * Without CONFIG_IRQ_TIME_ACCOUNTING the task clock runs on while a CPU serves a hardirq or
 * softirq: the time is charged to the interrupted task (its CPU time, its cgroup's quota),
 * and /proc/stat's irq/softirq columns are tick samples, blind to softirq work on an idle,
 * tickless CPU. With it, irq time is taken out of the task's clock. (In the field: an XDP
 * balancer's softirq CPU "doubled" from 4.19 to 5.4: only 5.4 had the option.)
 *
 * Here: Poisson-spaced UDP over a veth pair between two namespaces of our own; RPS steers the
 * receive softirq to a victim CPU. There a probe spins and sums the clock gaps above --gap:
 * the time it lost. Its CPU time, run delay and the CPU's steal tell how much was charged:
 *   hidden = (charged lost time) / (lost time), traffic - no-traffic baseline
 * ~1: irq work is charged to the interrupted task; ~0: precise irq time accounting.
 * The report also compares /proc/stat's softirq column with the time really lost.
 */
#include "krepro.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#define IA_PASS_BELOW 0.3 /* hidden below this: precise irq time accounting */
#define IA_SLICES 10	  /* baseline and busy alternate: a drift of the host's load cancels */
/* ms/s beyond which a pair is measured again: run delay from other tasks (idle box 0.2,
 * builds > 40), baseline loss (quiet 11-27); the idle regime: user+system (quiet 0-22) */
#define IA_MAX_DELAY_MS 25.0
#define IA_MAX_BASE_MS 100.0
#define IA_MAX_TASKS_MS 100.0

static long opt_rate = 60000, opt_idle_rate = 15000; /* pps: busy, idle regime */
static double opt_min_lost = 50;		      /* ms/s of softirq loss needed to judge */
static int64_t opt_gap_ns = 1000;		      /* a clock step above this is lost time */
/* ksoftirqd/N at SCHED_FIFO 1 (journaled): 4.9-6.4 (4cd13c21b207, reverted by d15121be7485)
 * defer softirqs to a runnable ksoftirqd, as it stays behind the probe; at FIFO it is not. */
static bool opt_ksoftirqd_fifo = true;

/* NET_RX ran more in a thread (thread_ms) than on irq exit (lost_ms): the probe then lost
 * only the hardirq side (IPIs, wakeups), charged on any kernel */
static bool net_rx_in_thread(double thread_ms, double lost_ms)
{
	return isfinite(thread_ms) && thread_ms > 5.0 && !(lost_ms >= thread_ms);
}

/* delay_ms: probe run delay from other tasks; thread_ms: the busiest NET_RX thread (NAN:
 * none); threaded: softirqs run only in threads (PREEMPT_RT, threadirqs) */
static enum kr_verdict irqacct_rule(double hidden, double lost_ms, double delay_ms,
				    double thread_ms, bool threaded, double fail_above,
				    double min_lost)
{
	if (threaded || net_rx_in_thread(thread_ms, lost_ms) || !isfinite(hidden) ||
	    !(lost_ms >= min_lost) || !(delay_ms <= IA_MAX_DELAY_MS))
		return KR_SKIP;
	if (hidden > fail_above)
		return KR_FAIL;
	return hidden < IA_PASS_BELOW ? KR_PASS : KR_SKIP;
}

/* a verdict against CONFIG_IRQ_TIME_ACCOUNTING (irqta: 1 set, 0 not, -1 unknown) */
static bool config_disagrees(enum kr_verdict v, int irqta)
{
	return irqta >= 0 && ((v == KR_FAIL && irqta) || (v == KR_PASS && !irqta));
}

/* traffic: a Poisson sender and a draining receiver, both off the victim CPU */
static _Atomic long traffic_rate; /* pps; 0 pauses the sender */
static atomic_bool traffic_stop;
static _Atomic unsigned long long n_sent, n_received;
static unsigned short rng[3]; /* erand48's state, from --seed */

static void *sender_main(void *arg)
{
	char payload[64] = "krepro-irqacct";
	int64_t next = 0, now;

	prctl(PR_SET_TIMERSLACK, 1UL); /* the spacing is the point: no timer slack */
	while (!traffic_stop) {
		long rate = traffic_rate;
		if (rate <= 0) {
			kr_sleep_ns(1000000);
			continue;
		}
		if (next < (now = kr_now_ns()) - 10000000)
			next = now; /* resumed, or hopelessly late: restart the process */
		/* exponential gaps: never in step with the tick (HZ) */
		next += (int64_t)(-log(1.0 - erand48(rng)) * 1e9 / (double)rate);
		if (next - now > 60000)
			kr_sleep_until_ns(next - 30000);
		while (kr_now_ns() < next)
			;
		n_sent += send(*(int *)arg, payload, sizeof(payload), MSG_DONTWAIT) > 0;
	}
	return NULL;
}

static void *receiver_main(void *arg)
{
	static char buf[128]; /* nobody reads the data: one buffer for all */
	struct iovec iov = { buf, sizeof(buf) };
	struct mmsghdr m[64];

	for (int i = 0; i < 64; i++)
		m[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov, .msg_iovlen = 1 } };
	while (!traffic_stop) {
		int n = recvmmsg(*(int *)arg, m, 64, MSG_WAITFORONE, NULL);
		n_received += (unsigned long long)(n > 0 ? n : 0);
	}
	return NULL;
}

/* an interval's figures per second (ms, packets): CSV columns; JSON keys after the phase */
#define IA_NV 13
static const char *const v_names[IA_NV] = {
	"lost_ms_s", "cpu_ms_s", "delay_ms_s", "steal_ms_s", "ksoftirqd_ms_s", "backlog_napi_ms_s",
	"stat_user_ms_s", "stat_system_ms_s", "stat_irq_ms_s", "stat_softirq_ms_s",
	"stat_idle_ms_s", "sent_pps", "received_pps"
};

struct phase {
	const char *name;
	long rate;  /* pps asked for */
	bool probe; /* probe spinning on the victim CPU (busy) or not (idle) */
	double wall_s;
	union {
		struct {
			double lost, cpu, delay; /* of the probe */
			double steal, ksoftirqd, backlog;
			double st_user, st_system, st_irq, st_softirq, st_idle; /* /proc/stat */
			double pps_sent, pps_received;
		};
		double v[IA_NV];
	};
};

static int victim_cpu, other_cpu;
/* NET_RX threads of the victim: ksoftirqd/N; backlog_napi/N, threaded RPS (RT, 6.10+) */
static pid_t ksoftirqd_tid, backlog_tid;
static int64_t probe_ns; /* length of the probe's run */

/* spins on the victim CPU at nice -20 (no RT throttling); sets lost, cpu and delay */
static void *probe_main(void *arg)
{
	struct phase *ph = arg;
	struct kr_schedstat s0 = { 0 }, s1 = { 0 }; /* schedstat checked in run() */
	struct timespec c0, c1;
	pid_t pid = getpid(), tid = kr_gettid();
	int64_t lost = 0;

	setpriority(PRIO_PROCESS, (id_t)tid, -20);
	kr_read_schedstat(pid, tid, &s0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	int64_t t0 = kr_now_ns(), end = t0 + probe_ns, prev = t0;
	for (int64_t t = t0; t < end; prev = t) {
		t = kr_now_ns();
		if (t - prev > opt_gap_ns)
			lost += t - prev;
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	kr_read_schedstat(pid, tid, &s1);
	double ms = 1e3 / (double)(prev - t0); /* ns -> ms per second */
	ph->lost = (double)lost * ms;
	ph->cpu = ((double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec)) * ms;
	ph->delay = (double)(s1.wait_ns - s0.wait_ns) * ms;
	return NULL;
}

static double run_ns(pid_t tid)
{
	struct kr_schedstat s;

	return tid > 0 && kr_read_schedstat(tid, 0, &s) == 0 ? (double)s.run_ns : NAN;
}

/* one interval of phase ph, one CSV row; ph: the mean of its intervals by wall time */
static int measure(struct phase *ph, double seconds)
{
	static struct kr_cpu_times per0[KR_MAX_CPUS], per1[KR_MAX_CPUS];
	struct kr_cpu_times all;
	struct phase s = { .name = ph->name, .rate = ph->rate, .probe = ph->probe };
	pthread_t t;

	traffic_rate = ph->rate;
	kr_sleep_ns(20000000); /* let the rate settle (and the backlog drain) */
	unsigned long long tx0 = n_sent, rx0 = n_received;
	double k0 = run_ns(ksoftirqd_tid), n0 = run_ns(backlog_tid);
	int ncpu = kr_read_proc_stat(&all, per0, KR_MAX_CPUS);
	int64_t t0 = kr_now_ns();
	probe_ns = (int64_t)(seconds * 1e9);
	if (!ph->probe)
		kr_sleep_ns(probe_ns);
	else if (kr_thread_start(&t, victim_cpu, SCHED_OTHER, 0, probe_main, &s) < 0)
		return -1;
	else
		pthread_join(t, NULL);
	double wall = (double)(kr_now_ns() - t0) / 1e9;
	if (ncpu <= victim_cpu || kr_read_proc_stat(&all, per1, KR_MAX_CPUS) <= victim_cpu)
		return -1;

	const struct kr_cpu_times *a = &per0[victim_cpu], *b = &per1[victim_cpu];
	double tick = 1000.0 / (double)kr_user_hz() / wall; /* ticks -> ms per second */
#define D(f) ((double)(b->f - a->f) * tick)
	s.steal = D(steal), s.st_user = D(user) + D(nice), s.st_system = D(system);
	s.st_irq = D(irq), s.st_softirq = D(softirq), s.st_idle = D(idle) + D(iowait);
#undef D
	s.ksoftirqd = (run_ns(ksoftirqd_tid) - k0) / 1e6 / wall;
	s.backlog = (run_ns(backlog_tid) - n0) / 1e6 / wall;
	s.pps_sent = (double)(n_sent - tx0) / wall;
	s.pps_received = (double)(n_received - rx0) / wall;
	kr_csv_row("%s,%ld,%d,%.4f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f",
		   s.name, s.rate, s.probe, wall, s.v[0], s.v[1], s.v[2], s.v[3], s.v[4], s.v[5],
		   s.v[6], s.v[7], s.v[8], s.v[9], s.v[10], s.v[11], s.v[12]);
	for (int i = 0; i < IA_NV; i++)
		ph->v[i] = (ph->v[i] * ph->wall_s + s.v[i] * wall) / (ph->wall_s + wall);
	ph->wall_s += wall;
	return 0;
}

/* The probe's gaps are irq + softirq + steal + run delay (+ host time not shown as steal).
 * irq_lost: gaps less steal and run delay (not in the task's clock); irq_charged: gaps that
 * still show up as the probe's CPU time. Both in ms/s. */
static double irq_lost(const struct phase *p)
{
	return p->lost - p->steal - p->delay;
}

static double irq_charged(const struct phase *p)
{
	return p->cpu - (1000.0 - p->lost);
}

#define finite0(x) (isfinite(x) ? (x) : 0)

/* run delay from other tasks than the NET_RX threads (the softirq itself, deferred) */
static double pair_delay(const struct phase *b, const struct phase *t)
{
	return fmax(0, fmax(b->delay - finite0(b->ksoftirqd) - finite0(b->backlog),
			    t->delay - finite0(t->ksoftirqd) - finite0(t->backlog)));
}

/* the busier NET_RX thread of a pair (ms/s, traffic - baseline), and whether it was
 * backlog_napi rather than ksoftirqd; NAN when the CPU has neither */
static double busiest_thread(const struct phase *b, const struct phase *t, bool *backlog)
{
	double k = t->ksoftirqd - finite0(b->ksoftirqd), n = t->backlog - finite0(b->backlog);

	*backlog = isfinite(n) && !(k >= n);
	return *backlog ? n : k;
}

/* two namespaces and a veth pair, held by our fds only; 0 or the exit code: a missing
 * veth or RPS is the kernel's (SKIP), else ERROR */
static int setup_network(int *tx_sock, int *rx_sock)
{
	char a[16], b[16], rps[96], mask[KR_CPUMASK_LEN];
	const char *what = "network namespace";
	int ns_tx, ns_rx, tag = (int)(getpid() % 100000), big = 4 << 20;
	struct timeval tv = { 0, 100000 }; /* the receiver checks the stop flag */
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(5211) };

	snprintf(a, sizeof(a), "kr%da", tag);
	snprintf(b, sizeof(b), "kr%db", tag);
	if ((ns_tx = kr_netns_new()) < 0 || (ns_rx = kr_netns_new()) < 0)
		goto fail;
	what = "veth pair";
	if (kr_veth_create(ns_tx, a, "10.211.0.1/24", ns_rx, b, "10.211.0.2/24") < 0)
		goto fail;
	/* RPS to the victim CPU, written from inside: the host's sysfs does not show this veth */
	snprintf(rps, sizeof(rps), "class/net/%s/queues/rx-0/rps_cpus", b);
	what = rps;
	if (kr_netns_sysfs_write(ns_rx, rps, kr_cpus_mask(&(struct kr_cpus){ 1, &victim_cpu }, 0, mask, sizeof(mask))) < 0)
		goto fail;
	inet_pton(AF_INET, "10.211.0.2", &dst.sin_addr);
	*rx_sock = kr_netns_socket(ns_rx, AF_INET, SOCK_DGRAM, 0);
	*tx_sock = kr_netns_socket(ns_tx, AF_INET, SOCK_DGRAM, 0);
	what = "UDP sockets";
	if (*rx_sock < 0 || *tx_sock < 0 ||
	    setsockopt(*rx_sock, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)) < 0 ||
	    setsockopt(*rx_sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    bind(*rx_sock, (struct sockaddr *)&dst, sizeof(dst)) < 0 ||
	    connect(*tx_sock, (struct sockaddr *)&dst, sizeof(dst)) < 0)
		goto fail;
	return 0;
fail:
	if (errno == ENOENT || errno == EOPNOTSUPP)
		return kr_skip(125, "needs veth and RPS: %s: %s", what, strerror(errno));
	return kr_error("%s: %s", what, strerror(errno));
}

static struct phase base[100], busy[100], low, idle; /* per repeat; the low-rate pair */

static int report(const struct kr_opts *o, int rejected, int irqta, bool noirqtime,
		  const char *threaded, bool fifo)
{
	static const char *const rows[] = { "lost (gaps)", "probe CPU time", "probe run delay",
		"steal", "ksoftirqd", "backlog_napi", "user", "system", "irq", "softirq", "idle" };
	enum kr_verdict votes[100];
	double hidden = NAN, lost = NAN, delay = NAN, thread = NAN;
	bool in_backlog = false; /* after the loop: the last repeat's */

	kr_say("pairs measured again (run delay > 25, baseline > 100 ms/s): %d", rejected);
	kr_say("ms per second      baseline    busy   (busy-baseline)");
	for (int r = 0; r < o->repeat; r++) {
		const struct phase *b = &base[r], *t = &busy[r];
		lost = irq_lost(t) - irq_lost(b);
		hidden = (irq_charged(t) - irq_charged(b)) / lost;
		delay = pair_delay(b, t);
		thread = busiest_thread(b, t, &in_backlog);
		votes[r] = irqacct_rule(hidden, lost, delay, thread, threaded, o->threshold,
					opt_min_lost);
		if (o->repeat > 1)
			kr_say("repeat %d:", r + 1);
		for (int i = 0; i < (backlog_tid ? 6 : 5); i++) /* ksoftirqd, backlog_napi: /N */
			kr_say("  %-18s%7.1f  %7.1f  %7.1f", rows[i], b->v[i], t->v[i],
			       t->v[i] - b->v[i]);
		kr_say("  CPU+delay+steal   %7.1f  %7.1f", b->cpu + b->delay + b->steal,
		       t->cpu + t->delay + t->steal);
		kr_say("  packets/s         %7.0f  %7.0f  (received %.0f)", b->pps_sent,
		       t->pps_sent, t->pps_received);
		kr_say("  hidden = (CPU-(1000-lost)) / (lost-delay-steal)");
		kr_say("         = %.1f / %.1f = %.2f", hidden * lost, lost, hidden);
	}
	const struct phase *b = &base[o->repeat - 1], *t = &busy[o->repeat - 1]; /* the run's */

	/* /proc/stat against the time really lost; for idle-low (no probe) busy-low's loss */
	double low_lost = irq_lost(&low) - irq_lost(b), tick = 1000.0 / (double)kr_user_hz();
	double r_busy = (t->st_softirq - b->st_softirq) / lost, r_idle = idle.st_softirq / low_lost;
	bool idle_ok = idle.st_user + idle.st_system <= IA_MAX_TASKS_MS;
	kr_say("%s", "");
	kr_say("/proc/stat of CPU %d (tick samples, %.0f ms units), ms/s:", victim_cpu, tick);
	kr_say("                    busy   busy-low  idle-low");
	kr_say("  rate (pps)     %7.0f   %7.0f   %7.0f", t->pps_sent, low.pps_sent, idle.pps_sent);
	kr_say("  really lost    %7.1f   %7.1f   (~%.1f)  irq+softirq", lost, low_lost, low_lost);
	for (int i = 6; i < 11; i++)
		kr_say("  %-15s%7.1f   %7.1f   %7.1f", rows[i], t->v[i], low.v[i], idle.v[i]);
	kr_say("  softirq/really lost: busy %.2f, idle %.2f (+-%.1f ms/s)", r_busy, r_idle,
	       tick / idle.wall_s);
	if (!idle_ok || r_idle < 0.7)
		kr_say("  %s", idle_ok ? "idle under-count: softirq in tickless idle is not sampled"
		       : "idle ratio not valid: other tasks ran on the CPU");
	kr_measure("hidden", hidden);
	kr_measure("lost_ms_per_s", lost);
	kr_measure("rejected_intervals", rejected);
	kr_measure("stat_softirq_ratio_busy", r_busy);
	kr_measure("stat_softirq_ratio_idle", r_idle);
	kr_measure("idle_regime_valid", idle_ok);
	const struct phase *shown[] = { b, t, &low, &idle }; /* "busy_lost_ms_s", ... */
	for (int i = 0; i < 4 * IA_NV; i++) {
		char key[64];
		snprintf(key, sizeof(key), "%s_%s", shown[i / IA_NV]->name, v_names[i % IA_NV]);
		kr_measure(key, shown[i / IA_NV]->v[i % IA_NV]);
	}

	/* tsc=noirqtime keeps irq time accounting off at run time: a FAIL is then right */
	int npass, nfail;
	enum kr_verdict v = kr_vote(votes, o->repeat, &npass, &nfail);
	bool disagree = config_disagrees(v, irqta == 1 && noirqtime ? 0 : irqta);
	kr_measure("config_disagrees", disagree);
	if (disagree) {
		kr_say("!!! THE VERDICT DISAGREES WITH THE CONFIG: %s", v == KR_FAIL ?
		       "irqtime off (unstable TSC)?" : "VIRT_CPU_ACCOUNTING?");
		kr_warn("the verdict disagrees with CONFIG_IRQ_TIME_ACCOUNTING");
	}
	if (v != KR_SKIP) /* the config on the verdict line, marked when it contradicts */
		return kr_verdict(v, hidden, "lost=%.0fms/s stat=%.2fx/%.2fx%s cfg=%s%s", lost,
				  r_busy, r_idle, idle_ok ? "" : "?", irqta < 0 ? "?" : irqta ? "y" : "n",
				  disagree ? "!CONFIG-MISMATCH" : "");
	if (npass && nfail)
		return kr_inconclusive(hidden, "repeats disagree: %d PASS, %d FAIL", npass, nfail);
	/* before "host load?": a thread that ran NET_RX is the cause whatever the load */
	if (net_rx_in_thread(thread, lost))
		return kr_inconclusive(hidden, "NET_RX ran in %s/%d (%.1f ms/s), not on irq exit "
				       "(%.1f ms/s)%s%s", in_backlog ? "backlog_napi" : "ksoftirqd",
				       victim_cpu, thread, lost, threaded || !fifo ? ": " : "",
				       threaded ? threaded : fifo ? "" : "drop --ksoftirqd leave");
	if (threaded)
		return kr_inconclusive(hidden, "%s; the probe lost %.1f ms/s (IPIs, wakeups)",
				       threaded, lost);
	if (!(lost >= opt_min_lost))
		return kr_inconclusive(hidden, b->lost > IA_MAX_BASE_MS ? "softirq loss %.1f ms/s "
				       "under a baseline loss of %.0f ms/s (host load?)" : "softirq "
				       "loss %.1f ms/s below %.0f ms/s: raise --rate", lost,
				       b->lost > IA_MAX_BASE_MS ? b->lost : opt_min_lost);
	if (!(delay <= IA_MAX_DELAY_MS))
		return kr_inconclusive(hidden, "run delay %.1f ms/s from other tasks", delay);
	return kr_inconclusive(hidden, "hidden between %.2f and %.2f", IA_PASS_BELOW,
			       o->threshold);
}

static int run(const struct kr_opts *o)
{
	char cfg[32], buf[256], cmdline[4096] = "", head[512] = "phase,rate_pps,probe,wall_s";
	int n = o->repeat, tx_sock, rx_sock, rc, bad = 0, rejected = 0;
	double d = o->duration_s, t_base = d * 0.15 / n, t_busy = d * 0.35 / n, t_low = d * 0.2,
	       t_idle = d * 0.3; /* --duration: baseline and busy per repeat, the low-rate pair */
	unsigned long long seed = o->seed ? o->seed : (unsigned long long)(kr_now_ns() & 0x7fffffff);
	struct kr_cpus usable;
	pthread_t th;
	bool fifo;

	kr_usable_cpus(&usable);
	int picked = kr_cpu_pick(&usable, o->cpu, &victim_cpu, &other_cpu);
	kr_cpus_free(&usable);
	if (picked < 0 || other_cpu < 0)
		return kr_skip(129, "needs 2 usable CPUs (a victim and one for the traffic): %s",
			       kr_cpus_unusable(buf, sizeof(buf)));
	if (access("/proc/self/schedstat", R_OK) < 0)
		return kr_skip(125, "needs /proc/PID/schedstat (CONFIG_SCHED_INFO)");
	if (kr_kconfig("CONFIG_RPS", cfg, sizeof(cfg)) == 0)
		return kr_skip(125, "needs CONFIG_RPS (steers the receive softirq to the victim CPU)");
	int irqta = kr_kconfig("CONFIG_IRQ_TIME_ACCOUNTING", cfg, sizeof(cfg));
	kr_read_file("/proc/cmdline", cmdline, sizeof(cmdline));
	/* x86 then keeps irq time accounting off at run time, whatever the config */
	bool noirqtime = kr_cmdline_has(cmdline, "tsc=noirqtime");
	kr_env_standard((const char *const[]){
		"config:CONFIG_IRQ_TIME_ACCOUNTING", "config:CONFIG_HZ", "config:CONFIG_NO_HZ_IDLE",
		"config:CONFIG_VIRT_CPU_ACCOUNTING_GEN", "config:CONFIG_PARAVIRT_TIME_ACCOUNTING",
		"file:/sys/devices/system/clocksource/clocksource0/current_clocksource",
		"group:cmdline", NULL });
	kr_param("duration", "%.1f s", d);
	kr_param("victim_cpu", "%d%s%s", victim_cpu,
		 *kr_cpu_isolation(victim_cpu, buf, sizeof(buf)) ? " " : "", buf);
	kr_param("traffic_cpu", "%d", other_cpu);
	kr_param("rate", "%ld pps, idle %ld pps (Poisson)", opt_rate, opt_idle_rate);
	kr_param("gap", "%lld ns, min_lost %.0f ms/s", (long long)opt_gap_ns, opt_min_lost);
	kr_param("repeat", "%d", n);
	kr_param("seed", "%llu", seed);
	/* only the causes this kernel can have: with the option, the run-time switch */
	if (irqta != 1)
		kr_cause("CONFIG_IRQ_TIME_ACCOUNTING is not set (Debian, most distros)");
	if (irqta != 0)
		kr_cause("irq time accounting off at run time (%s)",
			 noirqtime ? "tsc=noirqtime on the command line" : "tsc=noirqtime, unstable TSC");

	/* FIFO refused (RT_GROUP_SCHED without runtime): measured as it is; the SKIP says why */
	snprintf(buf, sizeof(buf), "backlog_napi/%d", victim_cpu);
	if (kr_find_tasks(buf, &backlog_tid, 1) > 0)
		kr_param("backlog_napi", "%s (threaded backlog NAPI)", buf);
	snprintf(buf, sizeof(buf), "ksoftirqd/%d", victim_cpu);
	kr_find_tasks(buf, &ksoftirqd_tid, 1);
	fifo = opt_ksoftirqd_fifo && ksoftirqd_tid &&
	       kr_journal_sched(ksoftirqd_tid, SCHED_FIFO, 1) == 0;
	if (!ksoftirqd_tid || fifo)
		kr_param("ksoftirqd", "%s", fifo ? "SCHED_FIFO 1 for the run (restored)"
			 : "(not found)");
	else
		kr_param("ksoftirqd", "left as it is (%s)",
			 opt_ksoftirqd_fifo ? strerror(errno) : "--ksoftirqd");
	const char *threaded = kr_softirq_threaded(); /* PREEMPT_RT, threadirqs */
	kr_param("softirqs", "%s", threaded ? threaded : "on irq exit (else ksoftirqd)");
	for (int i = 0; i < IA_NV; i++)
		strcat(strcat(head, ","), v_names[i]);
	if (kr_csv_open(head) < 0)
		return kr_error("--csv: %s", strerror(errno));
	/* nice ranks tasks only inside their autogroup: one of our own at -20 keeps other
	 * sessions off the victim CPU (it dies with us) */
	bool own_group = access("/proc/self/autogroup", F_OK) == 0 && setsid() >= 0 &&
			 kr_write_file("/proc/self/autogroup", "-20") == 0;
	kr_param("probe", "nice -20%s", own_group ? ", own autogroup at nice -20" : "");

	if (kr_pin(0, other_cpu) < 0)
		return kr_error("pin to CPU %d: %s", other_cpu, strerror(errno));
	if ((rc = setup_network(&tx_sock, &rx_sock)) != 0)
		return rc;
	rng[0] = (unsigned short)seed, rng[1] = (unsigned short)(seed >> 16);
	rng[2] = (unsigned short)(seed >> 32);
	if (kr_thread_start(&th, other_cpu, SCHED_OTHER, 0, sender_main, &tx_sock) < 0 ||
	    kr_thread_start(&th, other_cpu, SCHED_OTHER, 0, receiver_main, &rx_sock) < 0)
		return kr_error("traffic thread: %s", strerror(errno));
	traffic_rate = opt_rate; /* warm up: neighbour resolution, caches */
	kr_sleep_ns(200000000);

	/* the subtraction assumes one load: a pair with other tasks on the victim CPU or foreign
	 * softirq load is measured again while time lasts; so is an idle regime that was not */
	int64_t end = kr_now_ns() + (int64_t)(d * 1.5e9);
	int64_t again = (int64_t)((t_base + t_busy + 0.1 * IA_SLICES + t_low + t_idle) * 1e9);
	for (int r = 0; r < n && !bad; r++) {
		for (;;) {
			kr_progress("repeat %d/%d: baseline, then %ld pps", r + 1, n, opt_rate);
			base[r] = (struct phase){ .name = "baseline", .probe = true };
			busy[r] = (struct phase){ .name = "busy", .rate = opt_rate, .probe = true };
			/* ABBA... slices: a drift of the host's load (under TCG not shown as
			 * steal but as lost time) is on both sides */
			for (int k = 0; k < 2 * IA_SLICES && !bad; k++) {
				bool is_b = k % 4 == 0 || k % 4 == 3;
				bad = measure(is_b ? &base[r] : &busy[r],
					      (is_b ? t_base : t_busy) / IA_SLICES) < 0;
			}
			double dl = pair_delay(&base[r], &busy[r]);
			if (bad || (dl <= IA_MAX_DELAY_MS && base[r].lost <= IA_MAX_BASE_MS) ||
			    kr_now_ns() + again > end)
				break;
			rejected++;
			kr_warn("CPU %d: run delay %.1f ms/s from other tasks, baseline loss %.1f "
				"ms/s: measuring again", victim_cpu, dl, base[r].lost);
		}
	}
	kr_progress("%ld pps: busy, then idle", opt_idle_rate);
	low = (struct phase){ .name = "busy-low", .rate = opt_idle_rate, .probe = true };
	bad = bad || measure(&low, t_low) < 0;
	end += (int64_t)(d * 0.2e9);
	for (;;) {
		idle = (struct phase){ .name = "idle-low", .rate = opt_idle_rate };
		if (bad || (bad = measure(&idle, t_idle) < 0) ||
		    idle.st_user + idle.st_system <= IA_MAX_TASKS_MS ||
		    kr_now_ns() + (int64_t)(t_idle * 1e9) >= end)
			break;
		kr_warn("CPU %d not idle (tasks ran %.0f ms/s): measuring the idle regime again",
			victim_cpu, idle.st_user + idle.st_system);
	}
	traffic_stop = true; /* the threads and namespaces end with the process */
	if (bad)
		return kr_error("measurement failed: %s", strerror(errno));
	return report(o, rejected, irqta, noirqtime, threaded, fifo);
}

static const struct kr_prog prog = {
	.name = "irqacct",
	.flags = KR_NEEDS_ROOT | KR_OPT_CPU | KR_OPT_SEED | KR_OPT_REPEAT,
	.metric = "hidden",
	.threshold = 0.7,
	.threshold_min = 0.35,
	.threshold_max = 1.0,
	.rule = "FAIL when hidden > threshold, PASS when hidden < 0.3, with a softirq loss\n"
		"  >= --min-lost ms/s and probe run delay (other than ksoftirqd) <= 25 ms/s;\n"
		"  SKIP 125 when a NET_RX thread (ksoftirqd, backlog_napi) ran more than\n"
		"  the probe lost, or softirqs run only in threads (PREEMPT_RT,\n"
		"  threadirqs); else SKIP 125 inconclusive.\n"
		"  0.7/0.3: measured 0.99-1.02 here without the option; with it the\n"
		"  task clock excludes irq time (expected ~0)",
	.duration_s = 5,
	.duration_max_s = 30,
	.repeat = 1,
	.run = run,
};

/* ---- the command line (not in the mail form) ---- */

static const struct kr_option options[] = {
	KR_ARG_CUSTOM("rate", "PPS", "busy load in packets/s (default 60000)"),
	KR_ARG_CUSTOM("idle-rate", "PPS", "idle-CPU load in packets/s (default 15000)"),
	KR_ARG_CUSTOM("min-lost", "MS", "ms/s of softirq loss to judge (default 50)"),
	KR_ARG_CUSTOM("gap", "NS", "clock step counted as lost (default 1000 ns)"),
	KR_ARG_CUSTOM("ksoftirqd", "fifo|leave", "ksoftirqd/CPU at SCHED_FIFO 1 (default fifo)"),
	{ .name = NULL },
};

static int parse(int index, const char *arg)
{
	switch (index) {
	case 0: return kr_parse_long("--rate", arg, 1000, 1000000, &opt_rate);
	case 1: return kr_parse_long("--idle-rate", arg, 1000, 1000000, &opt_idle_rate);
	case 2: return kr_parse_double("--min-lost", arg, 1, 900, &opt_min_lost);
	case 3: return kr_parse_duration_ns("--gap", arg, "ns", 100, 1000000, &opt_gap_ns);
	}
	int i = kr_parse_choice("--ksoftirqd", arg, "fifo|leave");
	opt_ksoftirqd_fifo = i == 0;
	return i < 0 ? -1 : 0;
}

static int validate(const struct kr_opts *o)
{
	if (o->duration_s / o->repeat < 0.5)
		return kr_usage_error("--duration: at least 0.5 s per repeat");
	return 0;
}

static const struct kr_cli cli = {
	.summary = "irq/softirq time charged to the interrupted task",
	.description =
		"NET_RX softirq load on a victim CPU (Poisson UDP over veth, RPS). A\n"
		"probe spinning there sums the clock gaps above --gap (the time it lost);\n"
		"its CPU time, run delay and steal show how much was charged to it, less\n"
		"a no-traffic baseline: hidden = charged / lost (~1 charged, ~0 precise).\n"
		"Also: /proc/stat's softirq column against the real loss. ksoftirqd/CPU\n"
		"runs at SCHED_FIFO 1 (journaled): on 4.9-6.4 it takes NET_RX otherwise.",
	.example = "irqacct --rate 60000 --format json",
	.options = options,
	.parse = parse,
	.validate = validate,
};

int main(int argc, char **argv)
{
	return kr_main(&prog, &cli, argc, argv);
}
