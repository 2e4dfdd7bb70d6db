// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: hwts - wakeup latency of CPU idle states, split with SO_TIMESTAMPING.
 *
 * A CPU asleep in an idle state between packets pays the state's exit latency before
 * the woken reader runs. NTT's case: C6 exits of 290 us; kernel->user latency
 * (recvmsg's return - the RX software stamp) ~10 us with spikes to ~100 us; disabling
 * C6 cut the RTT by 85 %. In a guest the idle state is a halt, a VM exit (cpuidle
 * haltpoll: fa86ee90eb11, 2cffe9f6b96f, v5.4). Remedies: disable the state or hold PM
 * QoS (/dev/cpu_dma_latency: --mitigate); in a guest also halt polling, idle=poll, the
 * host's kvm.halt_poll_ns and C-states.
 *
 * A UDP packet every 10 ms goes over veth between two network namespaces to a reader
 * blocked in recvmsg on the measured CPU: "idle", and "awake" (PM QoS 0: the CPU polls),
 * interleaved ABBA in 5 rounds. A packet is late above the awake p50 + 25 us; FAIL when
 * idling made > 5 % more packets late.
 */
#include "krepro.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <math.h>
#include <net/if.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HW_MAGIC 0x68777473U
#define HW_ROUNDS 5 /* blocks per condition */
#define HW_MIN_IDLE 0.9 /* entries per packet: 1.6-2.9 here, 0.03-0.63 with other tasks */
#define HW_MAX_BUSY 10.0 /* % out of idle: 0-1.3 here, 25-100 with a fuzzer or a guest */

enum { PATH_VETH, PATH_LO, PATH_PEER };
enum { C_IDLE, C_PMQOS, C_SPIN, C_NOSTATE };

static struct {
	int path, awake; /* awake: C_PMQOS, or C_SPIN (--awake spin) */
	int64_t spacing_ns, late_ns;
	long packets; /* per condition; 0: --duration / 2 / spacing */
} cfg = { .path = PATH_VETH, .awake = C_PMQOS, .spacing_ns = 10000000, .late_ns = 25000 };

/* the full program's: --peer, TX stamps, --awake spin, --per-state, its report */
static struct {
	const char *const *env;
	int (*open)(void), (*cond_set)(int c, bool on), (*pass)(void);
	void (*sent)(void), (*record)(void);
} more;

enum { T_SEND, T_SCHED, T_TXSW, T_TXHW, T_RXSW, T_RXHW, T_USER, NT };
struct hw_sample {
	int cond, rep;
	bool warmup;
	int64_t t[NT]; /* CLOCK_REALTIME ns, 0: none */
};
struct hw_cond {
	const char *name;
	int kind, state; /* state: C_NOSTATE's */
	uint64_t entries[KR_MAX_IDLE_STATES], idle_us, wall_ns; /* over its blocks */
	long sent;
};

static struct kr_idle_state states[KR_MAX_IDLE_STATES];
static struct hw_cond conds[2 + KR_MAX_IDLE_STATES];
static struct hw_sample *samples;
static double *buf, *abuf;
static uint32_t nsamples, next_seq, received;
static int nstates, nexits, nconds = 2, rx_cpu, tx_cpu, txfd, rxfd; /* nexits: awake avoids */
static atomic_bool rx_stop;
static struct sockaddr_in dst;

/* ---- the verdict rule (unit-tested) ---- */
struct hw_late {
	double limit, idle_pct, awake_pct, added; /* added = idle_pct - awake_pct */
};

/* % of packets above the awake p50 + late_us: spikes count, noise in both cancels */
static struct hw_late hwts_late(const double *idle, size_t ni, double *awake, size_t na,
				double late_us)
{
	struct hw_late r = { NAN, NAN, NAN, NAN };
	struct kr_stats st;
	size_t li = 0, la = 0;

	if (!ni || !na)
		return r;
	kr_stats(awake, na, &st); /* sorts awake */
	r.limit = st.median + late_us;
	for (size_t i = 0; i < ni || i < na; i++) {
		li += i < ni && idle[i] > r.limit;
		la += i < na && awake[i] > r.limit;
	}
	r.idle_pct = 100.0 * (double)li / (double)ni;
	r.awake_pct = 100.0 * (double)la / (double)na;
	r.added = r.idle_pct - r.awake_pct;
	return r;
}

/* SKIP: idling cannot make packets faster, nor can a state not entered delay them
 * (exits: entries per packet into states with an exit latency; NAN: none) */
static enum kr_verdict hwts_rule(double added_pct, double threshold_pct, double exits)
{
	if (!isfinite(added_pct))
		return KR_ERROR;
	if (added_pct > threshold_pct)
		return exits < 0.1 ? KR_SKIP : KR_FAIL;
	return added_pct < -threshold_pct ? KR_SKIP : KR_PASS;
}

/* Which states count: E_ANY all; E_EXIT those with an exit latency (not POLL, a busy
 * loop: what a spinner keeps the CPU out of); E_QOS those but state0, what PM QoS 0
 * keeps it out of: the governors pick state0 under any request (menu, teo, haltpoll),
 * and on arm64 it is WFI, exit latency 1 (cpuidle-psci: no POLL) */
enum { E_ANY, E_EXIT, E_QOS };
static bool hwts_counts(const struct kr_idle_state *st, int k, int which)
{
	return which == E_ANY || (st[k].latency_us > 0 && (which == E_EXIT || k > 0));
}

/* entries per packet into the states that count */
static double hwts_entries(const uint64_t *e, const struct kr_idle_state *st, int n,
			   long packets, int which)
{
	uint64_t sum = 0;

	for (int k = 0; k < n; k++)
		sum += hwts_counts(st, k, which) ? e[k] : 0;
	return packets > 0 ? (double)sum / (double)packets : 0;
}

static double per_packet(int c, int which)
{
	return hwts_entries(conds[c].entries, states, nstates, conds[c].sent, which);
}

/* ---- the conditions ---- */
/* SKIP 125: this kernel lacks what */
static int needs(const char *what)
{
	return kr_skip(KR_EXIT_SKIP, "needs %s: %s", what, strerror(errno));
}

/* c's counters += sign * the CPU's (mod 2^64: leaving's + cancels entering's -) */
static void add_usage(struct hw_cond *c, int sign)
{
	struct kr_idle_state st[KR_MAX_IDLE_STATES];
	int n = kr_cpuidle_states(NULL, rx_cpu, st, nstates);
	uint64_t us = 0;
	char p[160];

	c->wall_ns += (uint64_t)sign * (uint64_t)kr_now_ns();
	for (int k = 0; k < n; k++) {
		c->entries[k] += (uint64_t)sign * st[k].usage;
		kr_cpuidle_path(NULL, rx_cpu, k, "time", p, sizeof(p));
		c->idle_us += kr_read_u64(p, &us) ? 0 : (uint64_t)sign * us;
	}
}

/* PM QoS 0 while the fd is open: no CPU enters a state with an exit latency */
static int pmqos_hold(void)
{
	int32_t zero = 0;
	int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);

	if (fd >= 0 && write(fd, &zero, sizeof(zero)) != sizeof(zero))
		close(fd), fd = -1;
	return fd;
}

/* enter or leave condition c, counting its idle state usage in between */
static int cond_set(int c, bool on)
{
	static int qos;
	int r = 0;

	if (!on)
		add_usage(&conds[c], 1);
	if (conds[c].kind == C_PMQOS)
		r = on ? (qos = pmqos_hold()) < 0 : close(qos);
	else if (conds[c].kind != C_IDLE)
		r = more.cond_set(c, on);
	if (on) /* the governor sees the request */
		kr_sleep_ns(2000000), add_usage(&conds[c], -1);
	return r;
}

/* ---- the packets ---- */
static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* on the measured CPU: the kernel's RX stamp, and its own on return */
static void *receiver(void *arg)
{
	_Alignas(struct cmsghdr) char ctrl[512];
	uint32_t p[2];
	struct iovec iov = { p, sizeof(p) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl };
	struct timespec now;

	for (;;) {
		m.msg_controllen = sizeof(ctrl);
		ssize_t r = recvmsg(rxfd, &m, 0);
		clock_gettime(CLOCK_REALTIME, &now);
		if (r < 0 && atomic_load(&rx_stop)) /* SO_RCVTIMEO after the last */
			return arg;
		if (r != sizeof(p) || p[0] != HW_MAGIC || p[1] >= nsamples)
			continue;
		int64_t *t = samples[p[1]].t;
		t[T_USER] = ts_ns(&now), received++;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
				struct scm_timestamping *ts = (void *)CMSG_DATA(c);
				t[T_RXSW] = ts_ns(&ts->ts[0]);
				t[T_RXHW] = ts_ns(&ts->ts[2]);
			}
	}
}

/* sender and reader in two namespaces (gone with the process), over veth or lo */
static int open_net(void)
{
	int nsa = kr_netns_new(), nsb = kr_netns_new();
	int on = SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_RX_SOFTWARE;

	if (nsa < 0 || nsb < 0)
		return needs("network namespaces (CONFIG_NET_NS)");
	if (cfg.path == PATH_LO)
		nsa = nsb;
	else if (kr_veth_create(nsa, "kra", "10.77.0.1/24", nsb, "krb", "10.77.0.2/24") < 0)
		return needs("veth (CONFIG_VETH)");
	dst = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(7470) };
	inet_pton(AF_INET, cfg.path ? "127.0.0.1" : "10.77.0.2", &dst.sin_addr);
	txfd = kr_netns_socket(nsa, AF_INET, SOCK_DGRAM, 0);
	rxfd = kr_netns_socket(nsb, AF_INET, SOCK_DGRAM, 0);
	if (txfd < 0 || rxfd < 0 || bind(rxfd, (struct sockaddr *)&dst, sizeof(dst)) < 0)
		return kr_error("sockets: %s", strerror(errno));
	if (setsockopt(rxfd, SOL_SOCKET, SO_TIMESTAMPING, &on, sizeof(on)) < 0)
		return needs("SO_TIMESTAMPING");
	return 0;
}

/* ---- the measurement: ABBA rounds of per_block + 1 packets (the first a warmup) ---- */
static int measure(int repeat, long per_block, bool mitigate)
{
	int64_t end_us = 200000 + cfg.spacing_ns / 1000; /* > the gaps */
	struct timeval tv = { end_us / 1000000, end_us % 1000000 };
	uint32_t p[2] = { HW_MAGIC, 0 };
	struct timespec now;
	pthread_t rxt;
	int qos = -1;

	if (mitigate && (qos = pmqos_hold()) < 0) /* --mitigate: PM QoS 0 all along */
		return kr_error("/dev/cpu_dma_latency: %s", strerror(errno));
	if (setsockopt(rxfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    kr_pin(0, tx_cpu) < 0 ||
	    kr_thread_start(&rxt, rx_cpu, SCHED_OTHER, 0, receiver, NULL) < 0)
		return kr_error("the reader on cpu%d: %s", rx_cpu, strerror(errno));
	for (int rep = 0; rep < repeat; rep++)
		for (int round = 0; round < HW_ROUNDS * nconds; round++) {
			int j = round % nconds, c = round / nconds % 2 ? nconds - 1 - j : j;
			if (cond_set(c, true))
				return kr_error("%s: %s", conds[c].name, strerror(errno));
			int64_t t = kr_now_ns() + cfg.spacing_ns;
			for (long i = 0; i <= per_block; i++, t += cfg.spacing_ns) {
				struct hw_sample *s = &samples[p[1] = next_seq++];
				kr_sleep_until_ns(t);
				clock_gettime(CLOCK_REALTIME, &now);
				*s = (struct hw_sample){ c, rep, !i, { ts_ns(&now) } };
				if (sendto(txfd, p, sizeof(p), 0, (struct sockaddr *)&dst,
					   sizeof(dst)) < 0)
					return kr_error("sendto: %s", strerror(errno));
				if (more.sent)
					more.sent();
			}
			conds[c].sent += per_block + 1;
			cond_set(c, false);
		}
	atomic_store(&rx_stop, true);
	pthread_join(rxt, NULL);
	return qos >= 0 ? close(qos) : 0;
}

/* ---- the report and the verdict ---- */
/* kernel->user in us of condition c (rep < 0: every repeat) into v, sorted */
static size_t collect(int c, int rep, double *v)
{
	struct kr_stats st;
	size_t n = 0;

	for (const struct hw_sample *s = samples; s < samples + next_seq; s++)
		if (s->cond == c && !s->warmup && (rep < 0 || s->rep == rep) &&
		    s->t[T_RXSW] && s->t[T_USER])
			v[n++] = (double)(s->t[T_USER] - s->t[T_RXSW]) / 1000.0;
	kr_stats(v, n, &st);
	return n;
}

static struct hw_late late_of(int rep)
{
	size_t ni = collect(0, rep, buf), na = collect(1, rep, abuf);

	return hwts_late(buf, ni, abuf, na, (double)cfg.late_ns / 1000.0);
}

/* % of the time the CPU was out of its idle states in c's blocks (NAN: no states) */
static double busy_pct(int c)
{
	double idle = 1e5 * (double)conds[c].idle_us / (double)conds[c].wall_ns;

	return nstates ? fmax(0, 100 - idle) : NAN;
}

static int judge(const struct kr_opts *o)
{
	int avoided = cfg.awake == C_SPIN ? E_EXIT : E_QOS; /* what awake keeps out of */
	double exits = nexits ? per_packet(0, avoided) : NAN;
	enum kr_verdict v[100], final;
	struct hw_late l;
	int np, nf;

	kr_say("\nkernel->user (us)      p50      p90      p99      max  cpu%d busy", rx_cpu);
	for (int c = 0; c < 2; c++) {
		size_t n = collect(c, -1, buf);
		kr_say("  %-15s %8.1f %8.1f %8.1f %8.1f %9.1f%%", conds[c].name,
		       kr_percentile(buf, n, 50), kr_percentile(buf, n, 90),
		       kr_percentile(buf, n, 99), kr_percentile(buf, n, 100), busy_pct(c));
	}
	if (more.record)
		more.record();
	for (int rep = 0; rep < o->repeat; rep++) {
		l = late_of(rep);
		if ((v[rep] = hwts_rule(l.added, o->threshold, exits)) == KR_ERROR)
			return kr_error("no kernel->user samples in repeat %d", rep + 1);
		if (o->repeat > 1)
			kr_say("repeat %d: late idle %.1f%%, awake %.1f%%", rep + 1, l.idle_pct,
			       l.awake_pct);
	}
	l = late_of(-1);
	for (int c = 0; c < 2; c++) /* else awake (or --mitigate) idled too */
		if ((conds[c].kind == C_PMQOS || o->mitigate) && per_packet(c, E_QOS) >= 0.1)
			return kr_skip(KR_EXIT_SKIP, "PM QoS 0 did not keep cpu%d out of idle "
				       "states past state0 (%s: %.2f per packet)", rx_cpu,
				       conds[c].name, per_packet(c, E_QOS));
	/* other tasks on the CPU: they, not idle states, would decide */
	for (int c = 0; c < 2; c++)
		if ((!c && nstates && per_packet(0, E_ANY) < HW_MIN_IDLE) ||
		    (conds[c].kind != C_SPIN && busy_pct(c) > HW_MAX_BUSY))
			return kr_inconclusive(l.added, "cpu%d busy %.0f%% in %s, idled "
					       "%.2fx/packet", rx_cpu, busy_pct(c), conds[c].name,
					       per_packet(c, E_ANY));
	if ((final = kr_vote(v, o->repeat, &np, &nf)) == KR_PASS && more.pass && (np = more.pass()))
		return np; /* --peer: the NIC's interrupt CPU was not measured */
	if (final != KR_SKIP)
		return kr_verdict(final, l.added, "idle=%.0f%% awake=%.0f%% late>%.0fus",
				  l.idle_pct, l.awake_pct, l.limit);
	if (np || nf)
		return kr_inconclusive(l.added, "%d repeats PASS, %d FAIL", np, nf);
	if (l.added > o->threshold) /* both polled: host noise */
		return kr_inconclusive(l.added, "cpu%d left no idle state in the idle blocks",
				       rx_cpu);
	/* other load hit the awake blocks */
	return kr_inconclusive(l.added, "awake %.0f%% late, idle %.0f%%", l.awake_pct,
			       l.idle_pct);
}

/* What the machine must have: 2 CPUs, the measured one (--cpu, default the highest usable
 * one) and the sender's, and idle states awake keeps it out of. 0, or SKIP 129 and why. */
static int machine_check(int cpu, char *why, size_t len)
{
	struct kr_cpus usable = { 0, NULL };
	char drv[64], gov[64];
	int nusable = kr_usable_cpus(&usable);
	bool cpus_ok = nusable >= 2 &&
		       kr_cpu_pick(&usable, cpu, &rx_cpu, &tx_cpu) >= 0 && tx_cpu >= 0;

	kr_cpus_free(&usable);
	if (!cpus_ok)
		return snprintf(why, len, "needs 2 usable CPUs (sender, reader); affinity: %d of "
				"%d online", nusable, kr_nr_cpus_online()), KR_EXIT_SKIP_MACHINE;
	nstates = kr_cpuidle_states(NULL, rx_cpu, states, KR_MAX_IDLE_STATES);
	kr_cpuidle_driver(NULL, drv, sizeof(drv), gov, sizeof(gov));
	nexits = 0;
	for (int k = 0; k < nstates; k++) /* the states awake keeps the CPU out of */
		nexits += hwts_counts(states, k, cfg.awake == C_SPIN ? E_EXIT : E_QOS);
	if (!nexits && cfg.awake != C_SPIN) /* only a spinner can be compared with a halt */
		return snprintf(why, len, "no cpuidle states past state0 on cpu%d (driver %s)",
				rx_cpu, drv), KR_EXIT_SKIP_MACHINE;
	return 0;
}

static int run(const struct kr_opts *o)
{
	char why[160];
	int r = machine_check(o->cpu, why, sizeof(why));

	kr_env_cpu(rx_cpu);
	kr_env_standard(more.env);
	if (r)
		return kr_skip(r, "%s", why);
	if ((cfg.awake == C_PMQOS || o->mitigate) && access("/dev/cpu_dma_latency", W_OK) < 0)
		return needs("/dev/cpu_dma_latency (CONFIG_PM)");
	conds[0] = (struct hw_cond){ .name = "idle", .kind = C_IDLE };
	conds[1] = (struct hw_cond){ .name = cfg.awake == C_SPIN ? "awake-spin" : "awake-pmqos",
				     .kind = cfg.awake };
	long packets = cfg.packets ? cfg.packets
				   : (long)(o->duration_s * 1e9 / 2 / (double)cfg.spacing_ns);
	long per_block = (packets < 20 ? 20 : packets + HW_ROUNDS - 1) / HW_ROUNDS;
	if ((r = more.open ? more.open() : open_net()))
		return r;
	double n = (double)o->repeat * nconds * HW_ROUNDS * (double)(per_block + 1);
	samples = n <= 4e6 ? calloc((size_t)n, sizeof(*samples)) : NULL;
	buf = samples ? malloc(2 * (size_t)n * sizeof(double)) : NULL;
	if (!buf)
		return kr_error("no memory for %.0f samples", n);
	nsamples = (uint32_t)n, abuf = buf + nsamples;
	kr_params("path=%s cpu=%d sender_cpu=%d spacing=%.3gms packets=%ld awake=%s repeat=%d "
		  "mitigate=%s", (const char *[]){ "veth", "lo", "peer" }[cfg.path], rx_cpu,
		  tx_cpu, (double)cfg.spacing_ns / 1e6, per_block * HW_ROUNDS, conds[1].name + 6,
		  o->repeat, o->mitigate ? "pmqos" : "no");
	if ((r = measure(o->repeat, per_block, o->mitigate)))
		return r;
	if (received < next_seq - next_seq / 10)
		return kr_error("%u of %u packets lost", next_seq - received, next_seq);
	return judge(o);
}

static const struct kr_prog prog = {
	.name = "hwts",
	.flags = KR_NEEDS_ROOT | KR_OPT_CPU | KR_OPT_REPEAT | KR_OPT_MITIGATE,
	.metric = "late_added", .unit = "%", .threshold = 5, .threshold_max = 100,
	.rule = "FAIL when % late (idle) - % late (awake) > threshold;\n"
		"  late: kernel->user > awake p50 + --late (25 us)",
	.duration_s = 6, .duration_max_s = 30, .repeat = 1, .run = run,
};

/* ---- the command line (not in the mail form) ---- */

#include <ctype.h>
#include <dirent.h>
#include <linux/ethtool.h>

#define HW_STOP 0xffffffffU /* the last packet's seq: --listen returns */

/* Two hosts: "hwts --listen" on one reflects the packets of "hwts --peer ADDR" on the
 * other, through --iface, with hardware stamps where its NIC has them. */
static struct {
	const char *iface, *peer;
	long port;
	bool listen, per_state;
} full = { .port = 7469 };
static char hw_why[160], names[KR_MAX_IDLE_STATES][16]; /* --per-state's conditions */
static int nic_irq[64], nnic_irq, nic_lines; /* --peer --iface: its MSI vectors; RX lines */
static uint64_t *nic_per; /* its RX interrupts per CPU: - before the run, + after */
static const char *rx_if;
static atomic_bool spin_stop;

static const struct kr_option options[] = {
	KR_ARG_CHOICE("path", "veth|lo", cfg.path, "between two namespaces (default veth)"),
	KR_ARG_TIME("spacing", cfg.spacing_ns, "ms", 100000, 1e9,
		    "time between packets (10ms; 100us-1s)"),
	KR_ARG_LONG("packets", "N", cfg.packets, 20, 100000,
		    "per condition (default --duration/2/spacing)"),
	/* what the mail form leaves out: a spinner, a diagnostic, the remote peer */
	KR_ARG_CUSTOM("awake", "auto|pmqos|spin",
		      "how awake keeps the CPU from idling (auto: pmqos)"),
	KR_ARG_TIME("late", cfg.late_ns, "us", 1000, 1e8, "late: above the awake p50 + TIME (25us)"),
	KR_ARG_CUSTOM("per-state", NULL, "also idle with each cpuidle state disabled"),
	KR_ARG_CUSTOM("iface", "IF", "real interface toward --peer (hardware stamps)"),
	KR_ARG_CUSTOM("peer", "IPV4", "the host running hwts --listen (with --listen: the "
		      "measuring host)"),
	KR_ARG_CUSTOM("listen", NULL, "reflect --peer's packets (remote side)"),
	KR_ARG_CUSTOM("port", "N", "UDP port of --listen (7469; replies to N+1)"),
	{ .name = NULL },
};

static int parse(int index, const char *arg)
{
	struct in_addr a;
	int k;

	switch (index) {
	case 3: /* auto: pmqos */
		k = kr_parse_choice("--awake", arg, "auto|pmqos|spin");
		cfg.awake = k == 2 ? C_SPIN : C_PMQOS;
		return k < 0 ? -1 : 0;
	case 5: return !(full.per_state = true);
	case 6:
		if (!*arg || strlen(arg) >= IFNAMSIZ)
			return kr_usage_error("--iface: expected an interface name (< %d chars)",
					      IFNAMSIZ);
		return !(full.iface = arg);
	case 7:
		if (inet_pton(AF_INET, arg, &a) != 1)
			return kr_usage_error("--peer: expected an IPv4 address, got '%s'", arg);
		return !(full.peer = arg);
	case 8: return !(full.listen = true);
	case 9: return kr_parse_long("--port", arg, 1, 65534, &full.port);
	}
	return -1;
}

/* the SCM_TIMESTAMPING stamps of a message: [0] software, [2] raw hardware */
static const struct scm_timestamping *find_stamps(struct msghdr *m, struct sock_extended_err **ee)
{
	const struct scm_timestamping *ts = NULL;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING)
			ts = (const struct scm_timestamping *)CMSG_DATA(c);
		else if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR)
			*ee = (struct sock_extended_err *)CMSG_DATA(c);
	return ts;
}

/* TX stamps from the sender's error queue; OPT_ID numbers sends from 0, as seq does */
static void drain_errqueue(void)
{
	_Alignas(struct cmsghdr) char ctrl[512];
	struct msghdr m = { .msg_control = ctrl };

	for (;;) {
		struct sock_extended_err *ee = NULL;
		m.msg_controllen = sizeof(ctrl);
		if (recvmsg(txfd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
		const struct scm_timestamping *ts = find_stamps(&m, &ee);
		if (!ts || !ee || ee->ee_origin != SO_EE_ORIGIN_TIMESTAMPING || ee->ee_data >= nsamples)
			continue;
		int64_t *t = samples[ee->ee_data].t;
		if (ts->ts[2].tv_sec)
			t[T_TXHW] = ts_ns(&ts->ts[2]);
		else
			t[ee->ee_info == SCM_TSTAMP_SCHED ? T_SCHED : T_TXSW] = ts_ns(&ts->ts[0]);
	}
}

/* --peer: the NIC's interrupts per CPU (per[cpu] +=) from /proc/interrupts text: the
 * lines of its MSI vectors (irq[], n of them) or naming ifname; of those, only the RX
 * ones where the names tell ("input", "rx": TX completions do not delay a packet in).
 * Returns how many lines counted. */
static int nic_irqs(const char *text, const char *ifname, const int *irq, int n,
		    uint64_t *per, int maxcpu)
{
	int col[KR_MAX_CPUS / 8], ncol = 0, lines = 0;
	const char *p = text;
	size_t il = strlen(ifname);

	for (int c; ncol < (int)(sizeof(col) / sizeof(*col)) &&
		    sscanf(p, " CPU%d%n", &col[ncol], &c) == 1; p += c)
		ncol++;
	for (int rxonly = 2; rxonly-- && !lines;)
		for (const char *l = strchr(p, '\n'); l && *++l; l = strchr(l, '\n')) {
			char *e, desc[256];
			long nr = strtol(l, &e, 10);
			bool mine = false;
			if (*e != ':') /* NMI:, LOC: ... */
				continue;
			const char *nl = strchr(l, '\n'), *d = e + 1;
			uint64_t v[KR_MAX_CPUS / 8];
			for (int i = 0; i < ncol; i++)
				v[i] = strtoull(d, (char **)&d, 10);
			snprintf(desc, sizeof(desc), "%.*s", (int)(nl ? nl - d : (long)strlen(d)), d);
			for (int i = 0; i < n; i++)
				mine |= irq[i] == nr;
			for (char *q = desc; il && (q = strstr(q, ifname)); q++)
				mine |= (q == desc || !isalnum((unsigned char)q[-1])) &&
					!isalnum((unsigned char)q[il]);
			char *name = strrchr(desc, ' ') ? strrchr(desc, ' ') + 1 : desc;
			if (!mine || (rxonly && !strcasestr(name, "rx") && !strcasestr(name, "input")))
				continue;
			lines++;
			for (int i = 0; i < ncol; i++)
				if (col[i] >= 0 && col[i] < maxcpu)
					per[col[i]] += v[i];
		}
	return lines;
}

/* the CPU that took most of them (*top); true when cpu took >= 90 % */
static bool nic_on(const uint64_t *per, int ncpu, int cpu, int *top, uint64_t *all)
{
	*top = cpu, *all = 0;
	for (int c = 0; c < ncpu; c++) {
		*all += per[c];
		*top = per[c] > per[*top] ? c : *top;
	}
	return *all && (double)per[cpu] >= 0.9 * (double)*all;
}

/* --iface: the MSI vectors of its device (a virtio NIC's are its PCI parent's) */
static void nic_vectors(const char *ifn)
{
	char d[300], real[PATH_MAX];
	struct dirent *e;
	DIR *dir;

	snprintf(d, sizeof(d), "/sys/class/net/%s/device", ifn);
	if (!realpath(d, real) || strlen(real) > sizeof(real) - 16)
		return;
	if (!strncmp(strrchr(real, '/') + 1, "virtio", 6))
		*strrchr(real, '/') = 0;
	if (!(dir = opendir(strcat(real, "/msi_irqs"))))
		return;
	while ((e = readdir(dir)) && nnic_irq < 64)
		if (isdigit((unsigned char)e->d_name[0]))
			nic_irq[nnic_irq++] = atoi(e->d_name);
	closedir(dir);
}

/* nic_per += sign * --iface's RX interrupts per CPU so far */
static void nic_count(int sign)
{
	int ncpu = kr_nr_cpu_ids();
	char *text = kr_read_text("/proc/interrupts");
	uint64_t *per = calloc((size_t)ncpu, sizeof(*per));

	nic_per = nic_per ? nic_per : calloc((size_t)ncpu, sizeof(*nic_per));
	nic_lines = text && per && nic_per ? nic_irqs(text, full.iface, nic_irq, nnic_irq, per,
						      ncpu) : 0;
	for (int c = 0; nic_lines && c < ncpu; c++)
		nic_per[c] += (uint64_t)sign * per[c];
	free(per), free(text);
}

/* --peer: kernel->user starts at the RX stamp, taken where the NIC's interrupt is
 * handled: an idle exit of that CPU comes before it and is not seen. A PASS stands
 * only when the measured CPU took the interrupts; else SKIP 129 naming the CPU. */
static int peer_pass(void)
{
	int top = rx_cpu;
	uint64_t all = 0;

	if (!full.iface)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "--peer without --iface: no telling which "
			       "CPU took the NIC's interrupts; its idle exits come before the "
			       "RX stamp, unseen by kernel->user");
	nic_count(1);
	if (!nic_lines)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "no interrupt of %s in /proc/interrupts "
			       "(by name or MSI vector): no telling which CPU took them",
			       full.iface);
	if (!nic_on(nic_per, kr_nr_cpu_ids(), rx_cpu, &top, &all))
		return kr_skip(KR_EXIT_SKIP_MACHINE, "%s's RX interrupts: %llu of %llu on "
			       "cpu%d, not the measured cpu%d; idle exits there come before "
			       "the RX stamp, unseen by kernel->user (--cpu %d, or pin the IRQ "
			       "to cpu%d)", full.iface, (unsigned long long)nic_per[top],
			       (unsigned long long)all, top, rx_cpu, top, rx_cpu);
	return 0;
}

/* --peer: sockets in this namespace toward the reflector, with the NIC's hardware stamps
 * where ETHTOOL_GET_TS_INFO offers them (SIOCSHWTSTAMP, journaled); hw: what it got */
static int open_peer(int *hw)
{
	struct ethtool_ts_info ti = { .cmd = ETHTOOL_GET_TS_INFO };
	struct sockaddr_in me = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)(full.port + 1)) };
	const char *ifn = full.iface;
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int rxf = SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_RX_SOFTWARE;
	socklen_t iflen = ifn ? (socklen_t)strlen(ifn) : 0;

	rx_if = ifn ? ifn : "(routed)";
	snprintf(hw_why, sizeof(hw_why), "not tried (no --iface)");
	if (ifn && kr_netns_ethtool(self, ifn, &ti) < 0) {
		snprintf(hw_why, sizeof(hw_why), "unsupported by %s (ETHTOOL_GET_TS_INFO: %s)",
			 ifn, strerror(errno));
	} else if (ifn) {
		bool rx = (ti.so_timestamping & SOF_TIMESTAMPING_RX_HARDWARE) &&
			  (ti.rx_filters & (1u << HWTSTAMP_FILTER_ALL));
		bool tx = (ti.so_timestamping & SOF_TIMESTAMPING_TX_HARDWARE) &&
			  (ti.tx_types & (1u << HWTSTAMP_TX_ON));
		*hw = tx ? SOF_TIMESTAMPING_TX_HARDWARE | SOF_TIMESTAMPING_RAW_HARDWARE : 0;
		rxf |= rx ? SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_RAW_HARDWARE : 0;
		snprintf(hw_why, sizeof(hw_why), "unsupported by %s (so_timestamping %#x, phc %d)",
			 ifn, ti.so_timestamping, ti.phc_index);
		if (rx || tx)
			snprintf(hw_why, sizeof(hw_why), "on (%s%s)", rx ? "RX " : "", tx ? "TX" : "");
		/* on the NIC for the run: journaled, restored however the run ends */
		int r = rx || tx ? kr_journal_hwtstamp(ifn, tx ? HWTSTAMP_TX_ON : HWTSTAMP_TX_OFF,
						       rx ? HWTSTAMP_FILTER_ALL : HWTSTAMP_FILTER_NONE)
				 : 0;
		if (r == -2) /* "off" would be a guess: it would break ptp4l, chrony */
			return kr_skip(KR_EXIT_SKIP_MACHINE, "%s cannot report its hardware "
				       "timestamping config (SIOCGHWTSTAMP: %s): not changed, as "
				       "it could not be restored", ifn, strerror(errno));
		if (r < 0)
			return kr_error("SIOCSHWTSTAMP on %s: %s", ifn, strerror(errno));
	}
	if (self >= 0)
		close(self);
	if (ifn) /* the RX interrupts before the run (peer_pass: after) */
		nic_vectors(ifn), nic_count(-1);
	dst = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)full.port) };
	inet_pton(AF_INET, full.peer, &dst.sin_addr);
	txfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	rxfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (txfd < 0 || rxfd < 0 ||
	    (iflen && setsockopt(txfd, SOL_SOCKET, SO_BINDTODEVICE, ifn, iflen) < 0) ||
	    (iflen && setsockopt(rxfd, SOL_SOCKET, SO_BINDTODEVICE, ifn, iflen) < 0) ||
	    bind(rxfd, (struct sockaddr *)&me, sizeof(me)) < 0)
		return kr_error("sockets toward %s: %s", full.peer, strerror(errno));
	if (setsockopt(rxfd, SOL_SOCKET, SO_TIMESTAMPING, &rxf, sizeof(rxf)) < 0)
		return needs("SO_TIMESTAMPING");
	return 0;
}

/* SCHED_IDLE: runs only when the CPU would idle; any wakeup preempts it */
static void *spinner(void *arg)
{
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		__asm__ __volatile__("" ::: "memory");
	return arg;
}

/* the full program's conditions: --awake spin, a spinner on the CPU in its blocks;
 * --per-state, the state disabled in its blocks, re-enabled after */
static int cond_set_full(int c, bool on)
{
	static pthread_t spin;
	char p[160];

	if (conds[c].kind == C_SPIN) {
		atomic_store(&spin_stop, !on);
		return on ? kr_thread_start(&spin, rx_cpu, SCHED_IDLE, 0, spinner, NULL)
			  : pthread_join(spin, NULL);
	}
	kr_cpuidle_path(NULL, rx_cpu, conds[c].state, "disable", p, sizeof(p));
	return kr_write_file(p, on ? "1" : states[conds[c].state].disable);
}

/* the full program's sockets: --peer's or the namespaces', and TX stamps at the qdisc,
 * the driver (and the NIC), numbered by OPT_ID; --per-state's blocks, journaled first */
static int open_full(void)
{
	int hw = 0, r = full.peer ? open_peer(&hw) : open_net();
	int tx = SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_TX_SCHED |
		 SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_OPT_ID |
		 SOF_TIMESTAMPING_OPT_TSONLY | hw;
	char p[160];

	if (r)
		return r;
	if (!full.peer) {
		rx_if = cfg.path ? "lo" : "krb";
		snprintf(hw_why, sizeof(hw_why), "unsupported by %s (virtual)", rx_if);
	}
	kr_param("rx_if", "%s", rx_if);
	if (setsockopt(txfd, SOL_SOCKET, SO_TIMESTAMPING, &tx, sizeof(tx)) < 0)
		return needs("SO_TIMESTAMPING (TX)");
	for (int k = 0; full.per_state && k < nstates; k++) {
		kr_cpuidle_path(NULL, rx_cpu, k, "disable", p, sizeof(p));
		if (states[k].latency_us > 0 && !strcmp(states[k].disable, "0")) {
			if (kr_journal_write(p, "0") < 0)
				return kr_error("%s: %s", p, strerror(errno));
			snprintf(names[k], sizeof(names[k]), "no-state%u", (unsigned char)k);
			conds[nconds++] = (struct hw_cond){ .name = names[k], .kind = C_NOSTATE,
							    .state = k };
		}
	}
	return 0;
}

/* --listen --peer ADDR: echo the measuring host's packets to its port + 1 until its stop
 * packet. Bound to the one local address that routes to it, and deaf to every other
 * sender (issue 42: bound to every address, anyone could stop it or use the echo). */
static int reflect(const struct kr_opts *o)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in me, from, to = { .sin_family = AF_INET,
					    .sin_port = htons((uint16_t)(full.port + 1)) };
	socklen_t ml = sizeof(me);
	struct timeval tv = { .tv_usec = 200000 };
	uint32_t p[2];
	long n = 0, others = 0;

	kr_env_standard((const char *const[]){ "group:cpuidle", "group:cmdline", NULL });
	kr_params("mode=listen peer=%s port=%ld", full.peer, full.port);
	inet_pton(AF_INET, full.peer, &to.sin_addr);
	if (fd < 0 || (full.iface && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, full.iface,
						(socklen_t)strlen(full.iface)) < 0) ||
	    connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0 || /* the route's source */
	    getsockname(fd, (struct sockaddr *)&me, &ml) < 0)
		return kr_error("no route to %s: %s", full.peer, strerror(errno));
	close(fd);
	me.sin_port = htons((uint16_t)full.port);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || (full.iface && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, full.iface,
						(socklen_t)strlen(full.iface)) < 0) ||
	    bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return kr_error("listen on port %ld: %s", full.port, strerror(errno));
	for (int64_t end = kr_now_ns() + (int64_t)(o->duration_s * 1e9); kr_now_ns() < end;) {
		socklen_t fl = sizeof(from);
		if (recvfrom(fd, p, sizeof(p), 0, (struct sockaddr *)&from, &fl) != sizeof(p) ||
		    p[0] != HW_MAGIC)
			continue;
		if (from.sin_addr.s_addr != to.sin_addr.s_addr) {
			others++;
			continue;
		}
		sendto(fd, p, sizeof(p), 0, (struct sockaddr *)&to, sizeof(to));
		if (p[1] == HW_STOP)
			break;
		n++;
	}
	kr_measure("packets_from_others", (double)others);
	if (others)
		kr_warn("%ld packets from other hosts ignored", others);
	/* the verdict is the peer's */
	return kr_skip(KR_EXIT_SKIP_MACHINE, "listen: reflected %ld packets of %s", n, full.peer);
}

/* every segment (with --peer, driver->kernel and user->user span the round trip) */
enum { SEG_K2U, SEG_D2K, SEG_NIC2K, SEG_TXQ, SEG_TXDRV, SEG_TXNIC, SEG_U2U, NSEG };
static const struct {
	const char *name, *key;
	int from, to;
} seg[NSEG] = {
	{ "kernel->user", "kernel_to_user", T_RXSW, T_USER },
	{ "driver->kernel", "driver_to_kernel", T_TXSW, T_RXSW },
	{ "NIC->kernel", "nic_to_kernel", T_RXHW, T_RXSW },
	{ "user->qdisc", "user_to_qdisc", T_SEND, T_SCHED },
	{ "user->driver", "user_to_driver", T_SEND, T_TXSW },
	{ "user->NIC", "user_to_nic", T_SEND, T_TXHW },
	{ "user->user", "user_to_user", T_SEND, T_USER },
};

/* segment g of a sample in us, NAN when a stamp is missing */
static double seg_us(const struct hw_sample *s, int g)
{
	int64_t a = s->t[seg[g].from], b = s->t[seg[g].to];

	return a && b ? (double)(b - a) / 1000.0 : NAN;
}

/* segment g of condition c, every repeat, into buf, sorted */
static size_t seg_collect(int c, int g)
{
	struct kr_stats st;
	size_t n = 0;

	for (uint32_t i = 0; i < next_seq; i++)
		if (samples[i].cond == c && !samples[i].warmup && isfinite(seg_us(&samples[i], g)))
			buf[n++] = seg_us(&samples[i], g);
	kr_stats(buf, n, &st);
	return n;
}

/* the other segments, --per-state's savings, JSON's figures, --csv: one row a packet */
static void record(void)
{
	struct hw_late l = late_of(-1);
	char k[96], drv[64], gov[64];
	double p[2][3];

	kr_cpuidle_driver(NULL, drv, sizeof(drv), gov, sizeof(gov));
	kr_say("state entries per packet on cpu%d (cpuidle driver %s):", rx_cpu, drv);
	for (int c = 0; c < nconds; c++)
		for (int s = 0; s < nstates; s++)
			kr_say("  %-12s %-16.24s %6.2f", s ? "" : conds[c].name, states[s].name,
			       (double)conds[c].entries[s] / (double)conds[c].sent);
	for (int c = 0; c < 2; c++) {
		size_t n = seg_collect(c, SEG_K2U);
		for (int i = 0; i < 3; i++)
			p[c][i] = kr_percentile(buf, n, (double[]){ 50, 90, 99 }[i]);
	}
	kr_say("hardware stamps: %s", hw_why);
	kr_say("%-15s %-12s %8s %8s %8s %8s", "segment (us)", "condition", "p50", "p90", "p99",
	       "max");
	for (int g = 0; g < NSEG; g++)
		for (int c = 0; c < nconds; c++) {
			size_t n = seg_collect(c, g);
			if (!n)
				break;
			if (g != SEG_K2U)
				kr_say("%-15s %-12s %8.1f %8.1f %8.1f %8.1f", c ? "" : seg[g].name,
				       conds[c].name, kr_percentile(buf, n, 50),
				       kr_percentile(buf, n, 90), kr_percentile(buf, n, 99),
				       buf[n - 1]);
			snprintf(k, sizeof(k), "%s_%.15s_p50_us", seg[g].key, conds[c].name);
			kr_measure(k, kr_percentile(buf, n, 50));
		}
	for (int c = 2; c < nconds; c++) { /* --per-state: what each state costs */
		int s = conds[c].state;
		double left = (double)conds[c].entries[s] / (double)conds[c].sent;
		kr_say("disabling %s saves %.1f us of kernel->user p50", states[s].name,
		       p[0][0] - kr_percentile(buf, seg_collect(c, SEG_K2U), 50));
		if (left > 0.1) /* the haltpoll governor picks its state without looking */
			kr_say("  but it was still entered %.2f times per packet: the governor "
			       "ignores 'disable'", left);
	}
	kr_say("kernel->user added by idling: p50 %+.1f, p90 %+.1f, p99 %+.1f us",
	       p[0][0] - p[1][0], p[0][1] - p[1][1], p[0][2] - p[1][2]);
	kr_say("late: kernel->user above the awake p50 + %.0f us", (double)cfg.late_ns / 1000);
	kr_say("late packets: idle %.1f%%, %s %.1f%% (> %.1f us)", l.idle_pct, conds[1].name,
	       l.awake_pct, l.limit);
	/* entries into states with an exit latency: a halt or a C-state (not POLL) */
	kr_measure("idle_deep_entries_per_packet", per_packet(0, E_EXIT));
	kr_measure("late_idle_pct", l.idle_pct);
	kr_measure("late_awake_pct", l.awake_pct);
	kr_measure("packets_sent", next_seq);
	kr_measure_str("hardware_timestamps", hw_why);
	kr_csv_open("repeat,condition,seq,warmup,user_to_qdisc_us,user_to_driver_us,user_to_nic_us,"
		    "driver_to_kernel_us,nic_to_kernel_us,kernel_to_user_us,user_to_user_us");
	for (uint32_t i = 0; i < next_seq; i++) {
		const struct hw_sample *s = &samples[i];
		kr_csv_row("%d,%s,%u,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f", s->rep + 1,
			   conds[s->cond].name, i, s->warmup, seg_us(s, SEG_TXQ), seg_us(s, SEG_TXDRV),
			   seg_us(s, SEG_TXNIC), seg_us(s, SEG_D2K), seg_us(s, SEG_NIC2K),
			   seg_us(s, SEG_K2U), seg_us(s, SEG_U2U));
	}
}

/* The known causes of a FAIL, what this run measured first: the idle state the CPU
 * entered between packets (per_packet[k]: entries per packet into state k in the idle
 * blocks) and its driver. A guest's halt (haltpoll) is a VM exit: its remedies are not
 * the C-state ones. root: "" (this machine) or a recorded sysfs tree (tests). Returns
 * how many lines it wrote into c. */
static int hwts_causes(const char *root, int cpu, const double *per_packet, double spacing_ms,
		       char c[][320])
{
	struct kr_idle_state st[KR_MAX_IDLE_STATES];
	char sys[256], drv[64], gov[64], poll_ns[32] = "?", boot[64] = "";
	int deep = -1, n = 0, exits = 0;

	snprintf(sys, sizeof(sys), "%s/sys/devices/system/cpu", root);
	int ns = kr_cpuidle_states(sys, cpu, st, KR_MAX_IDLE_STATES);
	kr_cpuidle_driver(sys, drv, sizeof(drv), gov, sizeof(gov));
	for (int k = 0; k < ns; k++) { /* the deepest state entered */
		exits += st[k].latency_us > 0;
		if (per_packet[k] >= 0.1 && st[k].latency_us > 0 &&
		    (deep < 0 || st[k].latency_us > st[deep].latency_us))
			deep = k;
	}
	if (deep < 0 && exits) {
		snprintf(c[n++], 320, "cpu%d entered no idle state between packets (driver "
			 "%s; PM QoS held?): the late packets come from elsewhere, e.g. host "
			 "noise", cpu, drv);
		return n;
	}
	if (deep < 0) {
		snprintf(c[n++], 320, "cpu%d halts without a cpuidle state (driver %s): the "
			 "architecture's default idle (in a guest a VM exit); idle=poll avoids it",
			 cpu, drv);
		return n;
	}
	if (!strcmp(drv, "haltpoll")) {
		snprintf(sys, sizeof(sys), "%s/sys/module/haltpoll/parameters/guest_halt_poll_ns",
			 root);
		kr_read_file(sys, poll_ns, sizeof(poll_ns));
		snprintf(c[n++], 320, "a guest's halt: cpu%d idled in '%s' (cpuidle driver "
			 "haltpoll) %.2f times per packet, each a VM exit; the host then wakes "
			 "the vCPU thread and pays its own C-state exit", cpu, st[deep].name,
			 per_packet[deep]);
		snprintf(c[n++], 320, "its remedies: in the guest PM QoS (--mitigate), idle=poll, "
			 "or halt polling longer than the gaps (haltpoll.guest_halt_poll_ns=%s, "
			 "packets %g ms apart); on the host kvm.halt_poll_ns and its C-states",
			 poll_ns, spacing_ms);
		return n;
	}
	/* intel_idle.max_cstate and processor.max_cstate count from state1 (state0 polls) */
	if (!strcmp(drv, "intel_idle") || !strcmp(drv, "acpi_idle"))
		snprintf(boot, sizeof(boot), ", %s.max_cstate=%d at boot",
			 drv[0] == 'i' ? "intel_idle" : "processor", deep - 1);
	snprintf(c[n++], 320, "%s (exit %ld us, driver %s) on cpu%d, entered %.2f times per "
		 "packet: disable it (cpu*/cpuidle/state%d/disable%s) or hold PM QoS "
		 "(/dev/cpu_dma_latency, --mitigate)", st[deep].name, st[deep].latency_us, drv,
		 cpu, per_packet[deep], deep, boot);
	snprintf(c[n++], 320, "the %s governor choosing %s for idle periods of %g ms", gov,
		 st[deep].name, spacing_ms);
	return n;
}

static void causes(const struct kr_opts *o)
{
	char c[3][320], iso[64];
	double pp[KR_MAX_IDLE_STATES];

	(void)o;
	for (int k = 0; k < nstates; k++)
		pp[k] = (double)conds[0].entries[k] / (double)conds[0].sent;
	for (int i = 0, n = hwts_causes("", rx_cpu, pp, (double)cfg.spacing_ns / 1e6, c); i < n; i++)
		kr_cause("%s", c[i]);
	if (*kr_cpu_isolation(rx_cpu, iso, sizeof(iso)))
		kr_cause("cpu%d is %s: a CPU without its tick sleeps longer and deeper (NTT's "
			 "case got worse with isolcpus and nohz_full)", rx_cpu, iso);
}

/* the header's cpuidle and cpufreq lines: of the measured CPU (kr_env_cpu) */
static const char *const env[] = { "group:cpuidle", "group:cpufreq", "group:cmdline",
				   "config:CONFIG_CPU_IDLE", "config:CONFIG_HZ", NULL };

static int validate(const struct kr_opts *o)
{
	(void)o;
	if (full.listen && !full.peer)
		return kr_usage_error("--listen: needs --peer ADDR, the one host it answers");
	if (full.iface && !full.peer)
		return kr_usage_error("--iface: needs --peer ADDR");
	cfg.path = full.peer && !full.listen ? PATH_PEER : cfg.path;
	more.open = open_full, more.sent = drain_errqueue, more.cond_set = cond_set_full;
	more.record = record;
	more.pass = full.peer && !full.listen ? peer_pass : NULL;
	more.env = env;
	return 0;
}

static int run_full(const struct kr_opts *o)
{
	uint32_t stop[2] = { HW_MAGIC, HW_STOP };
	int r;

	if (full.listen)
		return reflect(o);
	r = run(o);
	if (full.peer && next_seq) /* --listen returns */
		sendto(txfd, stop, sizeof(stop), 0, (struct sockaddr *)&dst, sizeof(dst));
	return r;
}

int main(int argc, char **argv)
{
	static const struct kr_cli cli = {
		.summary = "wakeup latency of idle states, split with SO_TIMESTAMPING",
		.description =
			"Sends UDP packets every --spacing to a reader blocked in recvmsg on\n"
			"--cpu (veth or lo between two namespaces, or 'hwts --listen' on\n"
			"--peer) and splits their latency with SO_TIMESTAMPING. Conditions,\n"
			"in 5 interleaved rounds: idle, and awake: /dev/cpu_dma_latency = 0\n"
			"(pmqos: the CPU polls) or a SCHED_IDLE spinner on it (spin).\n"
			"Late: kernel->user above the awake p50 + --late (25 us: a shallow\n"
			"state adds a few us, C6 100-300 us). Threshold 5 %: the original's\n"
			"C6 exits hit some packets, not the median; noise that hits both\n"
			"conditions cancels. SKIP 125: the CPU entered idle < 0.9 times per\n"
			"packet or was busy > 10 % of the time (other tasks), more awake\n"
			"packets were late than idle ones, or PM QoS did not keep the CPU\n"
			"polling (state0 aside: arm64's WFI). SKIP 129: no cpuidle states\n"
			"past state0 (POLL or WFI), unless --awake spin.\n"
			"A FAIL names the state the CPU idled in: a C-state, or in a guest\n"
			"(cpuidle driver haltpoll) the halt, a VM exit, whose remedies are\n"
			"the guest's halt polling, idle=poll, PM QoS and the host's.\n"
			"--mitigate holds PM QoS 0 for the whole run (the idle blocks too).\n"
			"--peer: a PASS needs the NIC's RX interrupts on --cpu (90 %; its\n"
			"idle exits come before the RX stamp), else SKIP 129; --iface needs\n"
			"a driver that reports its stamping config (SIOCGHWTSTAMP), else\n"
			"SKIP 129 with nothing changed.",
		.example = "hwts --mitigate",
		.options = options,
		.parse = parse,
		.validate = validate,
		.causes = causes,
		.subsystem = "cpuidle", .kernel_file = "drivers/cpuidle/cpuidle.c",
		.mail_list = "linux-pm@vger.kernel.org",
	};
	static struct kr_prog with_listen;

	with_listen = prog;
	with_listen.run = run_full;
	return kr_main(&with_listen, &cli, argc, argv);
}
