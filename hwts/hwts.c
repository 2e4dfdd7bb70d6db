// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: hwts - wakeup latency of CPU idle states, split with SO_TIMESTAMPING.
 *
 * A CPU that sleeps in a deep idle state between packets pays the state's exit latency
 * (C6: 100-300 us) before the woken receiver runs. In the original case kernel->user
 * latency (recvmsg return minus the kernel's RX software stamp) went from ~10 us to
 * ~100 us on hosts whose C6 exit costs 290 us; disabling C6 cut the RTT by 85 %.
 *
 * A sender thread sends UDP packets every --spacing (10 ms: the receiver CPU goes idle)
 * to a receiver pinned to --cpu, blocked in recvmsg, over veth between two private
 * network namespaces (or their lo), or to "hwts --listen" on another host. Stamps: TX
 * from the error queue (SCHED = qdisc, SOFTWARE = driver, HARDWARE = NIC; OPT_ID), RX by
 * the kernel (SOFTWARE, HARDWARE) and by the receiver when recvmsg returns.
 * Conditions with the same packet count, interleaved in ABBA rounds against host drift:
 * "idle", and "awake": deep idle prevented by holding /dev/cpu_dma_latency at 0 (PM QoS:
 * the governor only polls) or, with no cpuidle state (idle is HLT), by a SCHED_IDLE
 * spinner on the CPU. --per-state: idle with each state disabled. Verdict: hwts_late.
 */
#include "krepro.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <linux/ethtool.h>
#include <linux/net_tstamp.h>
#include <math.h>
#include <net/if.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HW_MAGIC 0x68777473U
#define HW_STOP_SEQ 0xffffffffU
#define HW_ROUNDS 5 /* blocks per condition, interleaved ABBA */
/* A packet is late when its kernel->user latency exceeds the awake median by more than
 * --late (default 25 us): well above what a shallow state's exit adds (C1: 1-2 us, an IPI
 * wakeup: a few us), well below what C6 adds (the original: ~10 us rising to ~100 us with
 * a 290 us C6 exit). */
#define HW_LATE_US 25.0
/* The idle condition only says something when the CPU did idle between packets: entries
 * into any cpuidle state per packet. A quiet CPU enters idle at least once in every gap
 * (here 2.0-2.4 per packet); with other tasks on it, 0.03-0.63 were seen. */
#define HW_MIN_IDLE_ENTRIES 0.9

enum { PATH_VETH, PATH_LO, PATH_IFACE };
enum { AWAKE_AUTO, AWAKE_PMQOS, AWAKE_SPIN };
enum { C_IDLE, C_PMQOS, C_SPIN, C_NOSTATE };

static struct {
	int path, awake;
	int64_t spacing_ns, late_ns;
	long packets, port; /* packets per condition; 0: from --duration */
	bool per_state, listen;
	const char *iface, *peer;
} cfg = { .spacing_ns = 10000000, .port = 7469, .late_ns = (int64_t)(HW_LATE_US * 1000) };

/* CLOCK_REALTIME stamps of one packet (ns, 0 = not seen) */
enum { T_SEND, T_SCHED, T_TXSW, T_TXHW, T_RXSW, T_RXHW, T_USER, NT };
struct hw_sample {
	int cond, rep;
	bool warmup;
	int64_t t[NT];
};
struct hw_pkt {
	uint32_t magic, seq;
	uint16_t reply_port, pad16;
	uint32_t pad32;
	int64_t t_send;
};
struct hw_cond {
	char name[16];
	int kind, state;		      /* C_NOSTATE: the disabled state */
	uint64_t entries[KR_MAX_IDLE_STATES]; /* state usage delta during its blocks */
	long sent;
};

static struct kr_idle_state states[KR_MAX_IDLE_STATES];
static int nstates, rx_cpu, tx_cpu, nconds, txfd, rxfd;
static struct hw_cond conds[2 + KR_MAX_IDLE_STATES];
static struct hw_sample *samples;
static double *buf, *abuf;
static uint32_t nsamples, next_seq;
static atomic_bool spin_stop, rx_stop;
static struct sockaddr_in dst;
static char rx_if[IFNAMSIZ], hw_why[160] = "not tried (no --iface)";
static bool hw_rx, hw_tx; /* hardware stamps on */

/* ---- the verdict rule and its inputs (unit-tested) ---- */
struct hw_late {
	double limit, idle_pct, awake_pct, added; /* added = idle_pct - awake_pct */
};

/* Late packets added by idling: both conditions against one limit, awake p50 + late_us.
 * Spikes count whether they hit 50 % of the packets (p50 moves) or 5 % (only p99
 * moves); noise that delays both conditions alike cancels out. Sorts awake in place. */
static struct hw_late hwts_late(const double *idle, size_t ni, double *awake, size_t na,
				double late_us)
{
	struct hw_late r = { NAN, NAN, NAN, NAN };
	struct kr_stats st;
	size_t li = 0, la = 0;

	if (!ni || !na)
		return r;
	kr_stats(awake, na, &st);
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

/* FAIL when idling made more than threshold % of the packets late. Idling cannot make
 * packets faster: awake worse than idle by as much means other load hit the awake blocks
 * harder, and the comparison is inconclusive (SKIP), not a PASS. */
static enum kr_verdict hwts_rule(double added_pct, double threshold_pct)
{
	if (!isfinite(added_pct))
		return KR_ERROR;
	if (added_pct > threshold_pct)
		return KR_FAIL;
	return added_pct < -threshold_pct ? KR_SKIP : KR_PASS;
}

/* entries into any state per packet (the CPU idled: >= HW_MIN_IDLE_ENTRIES) */
static double hwts_idled(const uint64_t *entries, int n, long packets)
{
	uint64_t sum = 0;

	for (int k = 0; k < n; k++)
		sum += entries[k];
	return packets > 0 ? (double)sum / (double)packets : 0;
}

/* A state a CPU can idle in: POLL (a busy loop, exit latency 0) does not count. */
static bool hwts_has_idle_states(const struct kr_idle_state *st, int n)
{
	while (n-- > 0)
		if (strcmp(st[n].name, "POLL"))
			return true;
	return false;
}

/* ---- conditions ---- */
/* entries[k] += sign * usage of the receiver CPU's state k (modulo 2^64: a later + cancels) */
static void add_usage(uint64_t *entries, int sign)
{
	struct kr_idle_state st[KR_MAX_IDLE_STATES];
	int n = kr_cpuidle_states(NULL, rx_cpu, st, nstates);

	for (int k = 0; k < n; k++)
		entries[k] += (uint64_t)sign * st[k].usage;
}

/* SCHED_IDLE: runs only when the CPU would otherwise idle; any wakeup preempts it */
static void *spinner(void *arg)
{
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		__asm__ __volatile__("" ::: "memory");
	return arg;
}

/* enter (on) or leave condition c */
static int cond_set(const struct hw_cond *c, bool on)
{
	static pthread_t spin;
	static int pmqos_fd = -1;
	int32_t zero = 0;
	char p[160];

	if (c->kind == C_NOSTATE) {
		kr_cpuidle_path(NULL, rx_cpu, c->state, "disable", p, sizeof(p));
		if (on)
			return kr_journal_write(p, "1");
		if (kr_journal_write(p, states[c->state].disable) < 0)
			kr_warn("cannot re-enable %s: %s (restored at exit)", p, strerror(errno));
	} else if (c->kind == C_SPIN) {
		atomic_store(&spin_stop, !on);
		if (!on)
			return pthread_join(spin, NULL);
		if (kr_thread_start(&spin, rx_cpu, SCHED_IDLE, 0, spinner, NULL) < 0)
			return -1;
		kr_sleep_ns(2000000); /* let it reach the CPU */
	} else if (c->kind == C_PMQOS) {
		/* held while open; closing the fd (or dying) drops the request: nothing to journal */
		if (!on)
			return close(pmqos_fd);
		pmqos_fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
		if (pmqos_fd < 0 || write(pmqos_fd, &zero, sizeof(zero)) != sizeof(zero))
			return -1;
		kr_sleep_ns(2000000);
	}
	return 0;
}

/* ---- sockets and stamps ---- */
static struct sockaddr_in inaddr(const char *ip, long port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	if (ip)
		inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* the SCM_TIMESTAMPING stamps of a message: [0] software, [2] raw hardware */
static const struct scm_timestamping *find_stamps(struct msghdr *m, struct sock_extended_err **ee)
{
	const struct scm_timestamping *ts = NULL;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING)
			ts = (const struct scm_timestamping *)CMSG_DATA(c);
		else if (ee && c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR)
			*ee = (struct sock_extended_err *)CMSG_DATA(c);
	}
	return ts;
}

/* TX stamps from the sender's error queue; OPT_ID numbers sends from 0, as seq does */
static void drain_errqueue(void)
{
	char ctrl[512];
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
		if (ts->ts[2].tv_sec || ts->ts[2].tv_nsec)
			t[T_TXHW] = ts_ns(&ts->ts[2]);
		else if (ee->ee_info == SCM_TSTAMP_SCHED)
			t[T_SCHED] = ts_ns(&ts->ts[0]);
		else if (ee->ee_info == SCM_TSTAMP_SND)
			t[T_TXSW] = ts_ns(&ts->ts[0]);
	}
}

static void *receiver(void *arg)
{
	char ctrl[512];
	struct hw_pkt p;
	struct iovec iov = { &p, sizeof(p) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl };
	struct timespec now;

	for (;;) {
		m.msg_controllen = sizeof(ctrl);
		ssize_t r = recvmsg(rxfd, &m, 0);
		clock_gettime(CLOCK_REALTIME, &now);
		if (r < 0 && (errno == EAGAIN || errno == EINTR) && !atomic_load(&rx_stop))
			continue;
		if (r < 0 || (r == sizeof(p) && p.magic == HW_MAGIC && p.seq == HW_STOP_SEQ))
			return arg;
		if (r != sizeof(p) || p.magic != HW_MAGIC || p.seq >= nsamples)
			continue;
		int64_t *t = samples[p.seq].t;
		const struct scm_timestamping *ts = find_stamps(&m, NULL);
		t[T_USER] = ts_ns(&now);
		if (ts) {
			t[T_RXSW] = ts_ns(&ts->ts[0]);
			t[T_RXHW] = ts_ns(&ts->ts[2]);
		}
	}
}

/* --listen: echo every packet to its sender's reply port until the stop packet */
static int reflect(const struct kr_opts *o)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in me = inaddr(NULL, cfg.port), from;
	struct timeval tv = { .tv_usec = 200000 };
	struct hw_pkt p;
	long n = 0;

	kr_param("mode", "listen");
	kr_param("port", "%ld", cfg.port);
	if (fd < 0 || (cfg.iface && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, cfg.iface,
					       (socklen_t)strlen(cfg.iface)) < 0) ||
	    bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return kr_error("listen on port %ld: %s", cfg.port, strerror(errno));
	for (int64_t end = kr_now_ns() + (int64_t)(o->duration_s * 1e9); kr_now_ns() < end;) {
		socklen_t fl = sizeof(from);
		if (recvfrom(fd, &p, sizeof(p), 0, (struct sockaddr *)&from, &fl) != sizeof(p) ||
		    p.magic != HW_MAGIC)
			continue;
		from.sin_port = htons(p.reply_port);
		sendto(fd, &p, sizeof(p), 0, (struct sockaddr *)&from, sizeof(from));
		if (p.seq == HW_STOP_SEQ)
			break;
		n++;
	}
	return kr_skip(KR_EXIT_SKIP_MACHINE, "listen mode reflected %ld packets (the verdict is the peer's)", n);
}

/* The sockets: in two private namespaces held by fds (they vanish with the process),
 * over veth or their lo; or with --peer in this one, toward a reflector, with hardware
 * stamps when --iface has them (ETHTOOL_GET_TS_INFO). */
static int open_net(void)
{
	const char *src = NULL, *to = cfg.peer, *ifn = cfg.iface;
	int nsa = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), nsb = nsa;
	long port = cfg.port;
	char ifa[IFNAMSIZ];
	struct ethtool_ts_info ti = { .cmd = ETHTOOL_GET_TS_INFO };

	snprintf(rx_if, sizeof(rx_if), "%s", ifn ? ifn : "(routed)");
	if (cfg.path != PATH_IFACE) {
		src = "10.77.0.1", to = "10.77.0.2", port = cfg.port + 1;
		snprintf(ifa, sizeof(ifa), "kr%ua", (unsigned)getpid() % 100000u);
		snprintf(rx_if, sizeof(rx_if), "kr%ub", (unsigned)getpid() % 100000u);
		if ((nsa = kr_netns_new()) < 0 || (nsb = kr_netns_new()) < 0)
			return kr_skip(KR_EXIT_SKIP, "needs network namespaces (CONFIG_NET_NS): %s",
				       strerror(errno));
		if (cfg.path == PATH_LO) {
			nsa = nsb;
			src = to = "127.0.0.1";
			snprintf(rx_if, sizeof(rx_if), "lo");
		} else if (kr_veth_create(nsa, ifa, "10.77.0.1/24", nsb, rx_if, "10.77.0.2/24") < 0) {
			return kr_skip(KR_EXIT_SKIP, "needs veth (CONFIG_VETH): %s", strerror(errno));
		}
	}
	/* virtual devices have no NIC clock: never asked */
	if (src)
		snprintf(hw_why, sizeof(hw_why), "unsupported by %s (virtual)", rx_if);
	else if (ifn && kr_netns_ethtool(nsb, rx_if, &ti) < 0)
		snprintf(hw_why, sizeof(hw_why), "unsupported by %s (ETHTOOL_GET_TS_INFO: %s)",
			 rx_if, strerror(errno));
	else if (ifn)
		snprintf(hw_why, sizeof(hw_why), "unsupported by %s (so_timestamping %#x, phc %d)",
			 rx_if, ti.so_timestamping, ti.phc_index);
	hw_rx = (ti.so_timestamping & SOF_TIMESTAMPING_RX_HARDWARE) &&
		(ti.rx_filters & (1u << HWTSTAMP_FILTER_ALL));
	hw_tx = (ti.so_timestamping & SOF_TIMESTAMPING_TX_HARDWARE) &&
		(ti.tx_types & (1u << HWTSTAMP_TX_ON));
	/* on the NIC for the run: journaled, restored however the run ends */
	if ((hw_rx || hw_tx) &&
	    kr_journal_hwtstamp(ifn, hw_tx ? HWTSTAMP_TX_ON : HWTSTAMP_TX_OFF,
				hw_rx ? HWTSTAMP_FILTER_ALL : HWTSTAMP_FILTER_NONE) < 0)
		return kr_error("SIOCSHWTSTAMP on %s: %s", ifn, strerror(errno));
	struct sockaddr_in from = inaddr(src, 0), me = inaddr(src ? to : NULL, cfg.port + 1);
	socklen_t iflen = ifn ? (socklen_t)strlen(ifn) : 0;
	dst = inaddr(to, port);
	txfd = kr_netns_socket(nsa, AF_INET, SOCK_DGRAM, 0);
	rxfd = kr_netns_socket(nsb, AF_INET, SOCK_DGRAM, 0);
	if (txfd < 0 || rxfd < 0 ||
	    (iflen && setsockopt(txfd, SOL_SOCKET, SO_BINDTODEVICE, ifn, iflen) < 0) ||
	    (iflen && setsockopt(rxfd, SOL_SOCKET, SO_BINDTODEVICE, ifn, iflen) < 0) ||
	    bind(rxfd, (struct sockaddr *)&me, sizeof(me)) < 0 ||
	    bind(txfd, (struct sockaddr *)&from, sizeof(from)) < 0)
		return kr_error("sockets %s %s: %s", src ? "in the namespaces to" : "toward", to,
				strerror(errno));
	/* RX: software (and hardware) stamps; TX: qdisc, driver (and NIC), numbered by OPT_ID */
	struct timeval tv = { .tv_usec = 200000 + (int)(cfg.spacing_ns / 1000) };
	int hw = SOF_TIMESTAMPING_RAW_HARDWARE, sw = SOF_TIMESTAMPING_SOFTWARE;
	int rxf = sw | SOF_TIMESTAMPING_RX_SOFTWARE | (hw_rx ? hw | SOF_TIMESTAMPING_RX_HARDWARE : 0);
	int txf = sw | SOF_TIMESTAMPING_TX_SCHED | SOF_TIMESTAMPING_TX_SOFTWARE |
		  SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY |
		  (hw_tx ? hw | SOF_TIMESTAMPING_TX_HARDWARE : 0);
	if (setsockopt(rxfd, SOL_SOCKET, SO_TIMESTAMPING, &rxf, sizeof(rxf)) < 0 ||
	    setsockopt(txfd, SOL_SOCKET, SO_TIMESTAMPING, &txf, sizeof(txf)) < 0 ||
	    setsockopt(rxfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return kr_skip(KR_EXIT_SKIP, "SO_TIMESTAMPING refused: %s", strerror(errno));
	return 0;
}

/* ---- the measurement: all conditions, interleaved in rounds (ABBA); per_block + 1
 * packets a block (the first after a switch is a warmup); state entries per block ---- */
static int measure(int repeat, long per_block)
{
	struct hw_pkt p = { .magic = HW_MAGIC, .reply_port = (uint16_t)(cfg.port + 1) };
	struct timespec now;
	pthread_t rxt;

	if (kr_pin(0, tx_cpu) < 0 ||
	    kr_thread_start(&rxt, rx_cpu, SCHED_OTHER, 0, receiver, NULL) < 0)
		return kr_error("pinning to cpu%d/cpu%d: %s", tx_cpu, rx_cpu, strerror(errno));
	for (int rep = 0; rep < repeat; rep++)
		for (int round = 0; round < HW_ROUNDS; round++) {
			kr_progress("repeat %d/%d round %d/%d", rep + 1, repeat, round + 1, HW_ROUNDS);
			for (int j = 0; j < nconds; j++) {
				int ci = round % 2 ? nconds - 1 - j : j;
				struct hw_cond *c = &conds[ci];
				if (cond_set(c, true) < 0)
					return kr_error("condition %s: %s", c->name, strerror(errno));
				add_usage(c->entries, -1);
				int64_t t = kr_now_ns() + cfg.spacing_ns;
				for (long i = 0; i <= per_block; i++, t += cfg.spacing_ns, c->sent++) {
					struct hw_sample *s = &samples[next_seq];
					kr_sleep_until_ns(t);
					*s = (struct hw_sample){ .cond = ci, .rep = rep, .warmup = !i };
					clock_gettime(CLOCK_REALTIME, &now);
					p.t_send = s->t[T_SEND] = ts_ns(&now);
					p.seq = next_seq++;
					if (sendto(txfd, &p, sizeof(p), 0, (struct sockaddr *)&dst,
						   sizeof(dst)) < 0)
						return kr_error("sendto: %s", strerror(errno));
					drain_errqueue();
				}
				add_usage(c->entries, 1);
				cond_set(c, false);
			}
		}
	/* the last packets, then stop the receiver */
	kr_sleep_ns(50000000);
	drain_errqueue();
	p.seq = HW_STOP_SEQ;
	atomic_store(&rx_stop, true);
	sendto(txfd, &p, sizeof(p), 0, (struct sockaddr *)&dst, sizeof(dst));
	pthread_join(rxt, NULL);
	return 0;
}

/* ---- segments (with --peer, driver->kernel and user->user span the round trip) ---- */
enum { SEG_K2U, SEG_STACK, SEG_NIC2K, SEG_TXQ, SEG_TXDRV, SEG_TXNIC, SEG_U2U, NSEG };
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

/* one segment of one sample in us, NAN when a stamp is missing */
static double seg_us(const struct hw_sample *s, int g)
{
	int64_t a = s->t[seg[g].from], b = s->t[seg[g].to];

	return a && b ? (double)(b - a) / 1000.0 : NAN;
}

/* segment g of condition c's samples (rep < 0: all repeats) into v, sorted; returns how many */
static size_t collect(int c, int rep, int g, double *v)
{
	struct kr_stats st;
	size_t n = 0;

	for (uint32_t i = 0; i < next_seq; i++) {
		const struct hw_sample *s = &samples[i];
		double x = seg_us(s, g);
		if (s->cond == c && !s->warmup && (rep < 0 || s->rep == rep) && isfinite(x))
			v[n++] = x;
	}
	kr_stats(v, n, &st);
	return n;
}

/* percentile p of segment g over condition c, all repeats */
static double pct(int c, int g, double p)
{
	return kr_percentile(buf, collect(c, -1, g, buf), p);
}

static double per_packet(const struct hw_cond *c, int k)
{
	return c->sent ? (double)c->entries[k] / (double)c->sent : 0;
}

/* the table of segments x conditions, state entries, per-state savings */
static void report(const char *gov)
{
	char key[96], line[128];

	kr_say("\n%-15s %-12s %8s %8s %8s %8s", "segment (us)", "condition", "p50", "p90", "p99",
	       "max");
	for (int g = 0; g < NSEG; g++)
		for (int c = 0; c < nconds; c++) {
			size_t n = collect(c, -1, g, buf);
			if (!n) {
				kr_say("%-15s no stamps", seg[g].name);
				break;
			}
			kr_say("%-15s %-12s %8.1f %8.1f %8.1f %8.1f", c ? "" : seg[g].name,
			       conds[c].name, kr_percentile(buf, n, 50), kr_percentile(buf, n, 90),
			       kr_percentile(buf, n, 99), buf[n - 1]);
			snprintf(key, sizeof(key), "%s_%.15s_p50_us", seg[g].key, conds[c].name);
			kr_measure(key, kr_percentile(buf, n, 50));
		}
	if (cfg.path == PATH_IFACE)
		kr_say("(with --peer, driver->kernel and user->user span the round trip)");
	if (nstates)
		kr_say("\nstate entries per packet on cpu%d:", rx_cpu);
	for (int c = 0; nstates && c < nconds; c++) {
		int len = snprintf(line, sizeof(line), "  %-12s", conds[c].name);
		for (int k = 0; k < nstates && len < (int)sizeof(line) - 16; k++)
			len += snprintf(line + len, sizeof(line) - (size_t)len, " s%d %.2f", k,
					per_packet(&conds[c], k));
		kr_say("%s", line);
	}
	/* per-state: which state costs latency */
	for (int c = 2; c < nconds; c++) {
		int k = conds[c].state;
		kr_say("disabling state%d (%s) saves %.1f us of kernel->user p50", k, states[k].name,
		       pct(0, SEG_K2U, 50) - pct(c, SEG_K2U, 50));
		/* e.g. the haltpoll governor picks its state without looking at 'disable' */
		if (per_packet(&conds[c], k) > 0.1)
			kr_say("  but state%d was still entered %.2f times per packet: governor %s\n"
			       "  ignores 'disable'", k, per_packet(&conds[c], k), gov);
	}
}

/* late packets of repeat rep (< 0: all repeats) */
static struct hw_late late_of(int rep)
{
	size_t ni = collect(0, rep, SEG_K2U, buf), na = collect(1, rep, SEG_K2U, abuf);

	return hwts_late(buf, ni, abuf, na, (double)cfg.late_ns / 1000.0);
}

/* ---- the verdict: per repeat, then the vote ---- */
static int judge(int repeat, double threshold, bool have_states)
{
	static const double at[3] = { 50, 90, 99 };
	enum kr_verdict v[100];
	struct hw_late l;
	double d[3];
	int npass, nfail;

	kr_say("\nlate: kernel->user above the awake p50 + %.0f us", (double)cfg.late_ns / 1000.0);
	for (int rep = 0; rep < repeat; rep++) {
		l = late_of(rep);
		if ((v[rep] = hwts_rule(l.added, threshold)) == KR_ERROR)
			return kr_error("no kernel->user samples in repeat %d", rep + 1);
		if (repeat > 1)
			kr_say("repeat %d: late idle %.1f%%, awake %.1f%% (> %.1f us): %+.1f%%",
			       rep + 1, l.idle_pct, l.awake_pct, l.limit, l.added);
	}
	l = late_of(-1);
	for (int i = 0; i < 3; i++)
		d[i] = pct(0, SEG_K2U, at[i]) - pct(1, SEG_K2U, at[i]);
	kr_say("late packets: idle %.1f%%, %s %.1f%% (> %.1f us)", l.idle_pct, conds[1].name,
	       l.awake_pct, l.limit);
	kr_say("kernel->user added by idling: p50 %+.1f, p90 %+.1f, p99 %+.1f us", d[0], d[1], d[2]);
	kr_measure("late_idle_pct", l.idle_pct);
	kr_measure("late_awake_pct", l.awake_pct);
	kr_cause("deep C-states (C6 exit 100-300 us) on the receiving CPU: disable them "
		 "(cpuidle stateN/disable, intel_idle.max_cstate) or hold PM QoS");
	kr_cause("a cpuidle governor choosing too deep a state for short idle periods");
	kr_cause("a guest's halt: a VM exit and a host wakeup");
	if (!have_states && cfg.awake == AWAKE_AUTO)
		return kr_skip(KR_EXIT_SKIP_MACHINE,
			       "no cpuidle states (halt-wakeup penalty p50 %+.1f us, p99 %+.1f us)",
			       d[0], d[2]);
	/* an idle condition in which the CPU did not idle compares nothing */
	double e = hwts_idled(conds[0].entries, nstates, conds[0].sent);
	if (nstates && e < HW_MIN_IDLE_ENTRIES) {
		kr_say("cpu%d idled %.2f times per packet (< %.1f): other tasks kept it busy",
		       rx_cpu, e, HW_MIN_IDLE_ENTRIES);
		return kr_inconclusive(l.added, "cpu%d idled %.2fx per packet", rx_cpu, e);
	}
	enum kr_verdict final = kr_vote(v, repeat, &npass, &nfail);
	if (final == KR_SKIP && (npass || nfail))
		return kr_inconclusive(l.added, "%d repeats PASS, %d FAIL", npass, nfail);
	if (final == KR_SKIP) {
		kr_say("more awake packets late than idle ones: other load hit the awake blocks");
		return kr_inconclusive(l.added, "awake %.0f%% late, idle %.0f%%", l.awake_pct,
				       l.idle_pct);
	}
	return kr_verdict(final, l.added, "idle=%.0f%% awake=%.0f%% late>%.0fus", l.idle_pct,
			  l.awake_pct, l.limit);
}

static int run(const struct kr_opts *o)
{
	char drv[64], gov[64];
	struct kr_cpus usable = { 0, NULL };
	int r;

	/* requirements first: CPUs (the receiver --cpu, default the highest usable one; the
	 * sender another), cpuidle, PM QoS; the header describes the measured CPU */
	bool cpus_ok = !cfg.listen && kr_usable_cpus(&usable) >= 2 &&
		       kr_cpu_pick(&usable, o->cpu, &rx_cpu, &tx_cpu) >= 0 && tx_cpu >= 0;
	kr_cpus_free(&usable);
	kr_env_cpu(cfg.listen ? 0 : rx_cpu);
	kr_env_standard((const char *const[]){ "group:cpuidle", "group:cpufreq", "group:cmdline",
					       "config:CONFIG_CPU_IDLE", "config:CONFIG_HZ", NULL });
	if (cfg.listen)
		return reflect(o);
	if (!cpus_ok)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "needs 2 online CPUs (sender and receiver)");
	nstates = kr_cpuidle_states(NULL, rx_cpu, states, KR_MAX_IDLE_STATES);
	kr_cpuidle_driver(NULL, drv, sizeof(drv), gov, sizeof(gov));
	bool have_states = hwts_has_idle_states(states, nstates);
	int awake = cfg.awake ? cfg.awake : have_states ? AWAKE_PMQOS : AWAKE_SPIN;
	if (awake == AWAKE_PMQOS && access("/dev/cpu_dma_latency", W_OK) < 0)
		return kr_skip(KR_EXIT_SKIP, "needs /dev/cpu_dma_latency (CONFIG_PM): %s",
			       strerror(errno));
	if (cfg.per_state && !have_states)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "--per-state: no cpuidle states on cpu%d", rx_cpu);

	conds[0] = (struct hw_cond){ .name = "idle", .kind = C_IDLE };
	conds[1] = awake == AWAKE_SPIN ? (struct hw_cond){ .name = "awake-spin", .kind = C_SPIN }
				       : (struct hw_cond){ .name = "awake-pmqos", .kind = C_PMQOS };
	nconds = 2;
	for (int k = 0; cfg.per_state && k < nstates; k++)
		if (strcmp(states[k].name, "POLL") && !strcmp(states[k].disable, "0")) {
			conds[nconds] = (struct hw_cond){ .kind = C_NOSTATE, .state = k };
			snprintf(conds[nconds++].name, sizeof(conds[0].name), "no-state%u", (unsigned char)k);
		}
	long packets = cfg.packets ? cfg.packets
				   : (long)(o->duration_s * 1e9 / 2 / (double)cfg.spacing_ns);
	long per_block = (packets < 20 ? 20 : packets + HW_ROUNDS - 1) / HW_ROUNDS;
	if ((double)o->repeat * nconds * HW_ROUNDS * (double)(per_block + 1) > 4e6)
		return kr_error("too many packets: %d repeats x %d conditions x %ld", o->repeat,
				nconds, per_block * HW_ROUNDS);
	nsamples = (uint32_t)(o->repeat * nconds * HW_ROUNDS * (per_block + 1));
	samples = calloc(nsamples, sizeof(*samples));
	buf = malloc(2 * nsamples * sizeof(double));
	abuf = buf + nsamples;
	if (!samples || !buf)
		return kr_error("out of memory for %u samples", nsamples);
	if ((r = open_net()))
		return r;

	kr_param("path", "%s", (const char *[]){ "veth", "lo", "iface" }[cfg.path]);
	kr_param("rx_if", "%s", rx_if);
	if (cfg.peer)
		kr_param("peer", "%s:%ld", cfg.peer, cfg.port);
	kr_param("cpu", "%d", rx_cpu);
	kr_param("sender_cpu", "%d", tx_cpu);
	kr_param("spacing", "%.3gms", (double)cfg.spacing_ns / 1e6);
	kr_param("packets", "%ld", per_block * HW_ROUNDS);
	kr_param("awake", "%s", awake == AWAKE_SPIN ? "spin" : "pmqos");
	kr_param("repeat", "%d", o->repeat);
	kr_say("hardware stamps: %s", hw_rx || hw_tx ? "on" : hw_why);
	kr_measure_str("hardware_timestamps", hw_rx || hw_tx ? "on" : hw_why);
	if ((r = measure(o->repeat, per_block)))
		return r;

	long lost = 0;
	kr_csv_open("repeat,condition,seq,warmup,user_to_qdisc_us,user_to_driver_us,user_to_nic_us,"
		    "driver_to_kernel_us,nic_to_kernel_us,kernel_to_user_us,user_to_user_us");
	for (uint32_t i = 0; i < next_seq; i++) {
		const struct hw_sample *s = &samples[i];
		lost += !s->t[T_USER];
		kr_csv_row("%d,%s,%u,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f", s->rep + 1,
			   conds[s->cond].name, i, s->warmup, seg_us(s, SEG_TXQ), seg_us(s, SEG_TXDRV),
			   seg_us(s, SEG_TXNIC), seg_us(s, SEG_STACK), seg_us(s, SEG_NIC2K),
			   seg_us(s, SEG_K2U), seg_us(s, SEG_U2U));
	}
	kr_measure("packets_sent", next_seq);
	if (lost > (long)next_seq / 10)
		return kr_error("%ld of %u packets lost", lost, next_seq);
	report(gov);
	return judge(o->repeat, o->threshold, have_states);
}

static const struct kr_prog prog = {
	.name = "hwts",
	.flags = KR_NEEDS_ROOT | KR_OPT_CPU | KR_OPT_REPEAT,
	.metric = "late_added",
	.unit = "%",
	.threshold = 5,
	.threshold_min = 0,
	.threshold_max = 100,
	.rule = "FAIL when % late (idle) - % late (awake) > threshold;\n"
		"  late: kernel->user > awake p50 + --late (25 us)",
	.duration_s = 6,
	.duration_max_s = 30,
	.repeat = 1,
	.run = run,
};

/* ---- the command line (not in the mail form) ---- */

static const struct kr_option hwts_options[] = {
	KR_ARG_CUSTOM("path", "veth|lo", "path between two namespaces (default veth)"),
	KR_ARG_CUSTOM("spacing", "DUR", "time between packets (10ms; 100us-1s)"),
	KR_ARG_CUSTOM("packets", "N", "per condition (default --duration/2/spacing)"),
	KR_ARG_CUSTOM("awake", "auto|pmqos|spin", "how awake keeps the CPU from idling"),
	KR_ARG_CUSTOM("per-state", NULL, "also idle with each cpuidle state disabled"),
	KR_ARG_CUSTOM("iface", "IF", "real interface toward --peer (hardware stamps)"),
	KR_ARG_CUSTOM("peer", "IPV4", "address of a host running hwts --listen"),
	KR_ARG_CUSTOM("listen", NULL, "reflect packets to their sender (remote side)"),
	KR_ARG_CUSTOM("port", "N", "UDP port of --listen (7469; replies to N+1)"),
	KR_ARG_CUSTOM("late", "DUR", "late: above the awake p50 + DUR (25us)"),
	{ .name = NULL },
};

/* ---- options ---- */
static int hwts_parse(int index, const char *arg)
{
	struct in_addr a;

	switch (index) {
	case 0: return (cfg.path = kr_parse_choice("--path", arg, "veth|lo")) < 0 ? -1 : 0;
	case 1: return kr_parse_duration_ns("--spacing", arg, "ms", 100000, 1000000000, &cfg.spacing_ns);
	case 2: return kr_parse_long("--packets", arg, 20, 100000, &cfg.packets);
	case 3: return (cfg.awake = kr_parse_choice("--awake", arg, "auto|pmqos|spin")) < 0 ? -1 : 0;
	case 4: return !(cfg.per_state = true);
	case 5:
		if (!*arg || strlen(arg) >= IFNAMSIZ)
			return kr_usage_error("--iface: expected an interface name (< %d chars)", IFNAMSIZ);
		return !(cfg.iface = arg);
	case 6:
		if (inet_pton(AF_INET, arg, &a) != 1)
			return kr_usage_error("--peer: expected an IPv4 address, got '%s'", arg);
		return !(cfg.peer = arg);
	case 7: return !(cfg.listen = true);
	case 8: return kr_parse_long("--port", arg, 1, 65534, &cfg.port);
	case 9: return kr_parse_duration_ns("--late", arg, "us", 1000, 100000000, &cfg.late_ns);
	}
	return -1;
}

static int hwts_validate(const struct kr_opts *o)
{
	(void)o;
	if (cfg.peer && cfg.listen)
		return kr_usage_error("--peer and --listen: one side listens, the other measures");
	if (cfg.iface && !cfg.peer && !cfg.listen)
		return kr_usage_error("--iface: needs --peer ADDR (or --listen on the remote side)");
	if (cfg.peer || cfg.listen)
		cfg.path = PATH_IFACE;
	return 0;
}

static const struct kr_cli cli = {
	.summary = "wakeup latency of idle states, split with SO_TIMESTAMPING",
	.description =
		"Sends UDP packets every --spacing to a receiver blocked in recvmsg on\n"
		"--cpu (veth or lo between two namespaces, or 'hwts --listen' on\n"
		"--peer) and splits their latency with SO_TIMESTAMPING. Conditions,\n"
		"in 5 interleaved rounds: idle, and awake: /dev/cpu_dma_latency = 0\n"
		"(pmqos) or a SCHED_IDLE spinner (spin; auto takes spin when the CPU\n"
		"has no cpuidle state besides POLL).\n"
		"Late: kernel->user above the awake p50 + --late (25 us: a shallow\n"
		"state adds a few us, C6 100-300 us). Threshold 5 %: the original's\n"
		"C6 exits hit some packets, not the median; noise that hits both\n"
		"conditions cancels. SKIP 125: the CPU entered idle < 0.9 times per\n"
		"packet, or more awake packets were late than idle ones. SKIP 129\n"
		"'no cpuidle states' (--awake auto), with the halt penalty printed.",
	.example = "hwts --awake spin --cpu 1",
	.options = hwts_options,
	.parse = hwts_parse,
	.validate = hwts_validate,
};

int main(int argc, char **argv)
{
	return kr_main(&prog, &cli, argc, argv);
}
