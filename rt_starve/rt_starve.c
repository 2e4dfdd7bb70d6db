// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: an RT task on the packet-processing CPU starves the network bottom half.
 *
 * A hard interrupt only queues work; the NET_RX softirq (the bottom half) processes the
 * packets at irq exit, or, when the softirq is deferred, in ksoftirqd/N, a SCHED_OTHER
 * kthread of the same CPU. Threaded NAPI moves the whole bottom half of a device into a
 * SCHED_OTHER kthread, napi/DEV-N. A SCHED_FIFO task busy on that CPU outranks both, so
 * the packets wait until it sleeps (Nutanix, 3.10 -> 5.10: 90 ms stalls on a storage VM).
 *
 * Whether softirqs are deferred changed across versions: "softirq: Let ksoftirqd do its job"
 * (4cd13c21b207, v4.9) made every softirq wait for ksoftirqd once it had been woken; it was
 * reverted in v6.5 (d15121be7485), since when softirqs run inline at irq exit again even
 * with ksoftirqd starved. Threaded NAPI starves on every kernel that has it.
 *
 * The lab: two anonymous network namespaces joined by a veth pair. A client sends a small
 * UDP probe with its send time every few ms; an echo server returns it; both run on a CPU
 * other than the victim CPU. The bottom half of the server's veth is steered to the victim
 * CPU: --path ksoftirqd by RPS (plus a burst of UDP GSO packets at the start of the window,
 * big enough to exhaust the softirq budget so that ksoftirqd gets woken), --path napi by
 * threaded NAPI with the napi kthread pinned to the victim CPU. In the middle of each repeat
 * a SCHED_FIFO busy loop owns the victim CPU for a bounded window. The verdict compares the
 * round-trip times of probes sent inside the window with those sent outside it.
 */
#include "krepro.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

#define MS 1000000LL
#define ADDR_CLIENT "10.201.0.1"
#define ADDR_SERVER "10.201.0.2"
#define PORT_ECHO 7007
#define PORT_SINK 7009
#define PROBE_MAGIC 0x6b727274u /* "krrt" */
#define MAX_BH_THREADS 16
#define RS_MAX_ATTEMPTS 201 /* windows tried: 2 x --repeat (<= 100) + 1 */
#define GSO_SEGMENT 1400
#define GSO_SEGMENTS 44 /* 44 x 1400 bytes: one 61.6 KB datagram, segmented on receive */
/* The burst goes to the limited broadcast address, where SINK_FANOUT sockets listen: the victim's
 * softirq clones and segments every datagram FANOUT times, so it cannot keep up with one
 * sender even when the sender is as slow as the receiver (TCG), and its backlog grows. */
#define SINK_FANOUT 8
#define ADDR_BURST "255.255.255.255"

enum rs_path { PATH_KSOFTIRQD, PATH_NAPI };

/* program options (beyond the shared ones) */
static enum rs_path opt_path = PATH_KSOFTIRQD;
static int64_t opt_window = 500 * MS;
static int64_t opt_interval = 5 * MS;
static long opt_prio = 50;
static double opt_ratio = 10.0;
static long opt_burst = 1000; /* at most this many GSO datagrams (ksoftirqd path) */

/* ---- the verdict rule and the statistics it reads (pure; unit-tested) ---- */

struct rtt_summary {
	int sent, got;		     /* probes sent in this phase, echoes received */
	double min, p50, p99, max;   /* ms, NAN without samples */
	double over50;		     /* share of received probes with RTT > 50 ms, % */
};

/* Where a probe sent at time `sent` belongs. The burner runs from ws to we; probes count
 * as in the window from in_start (ws, or on the ksoftirqd path the end of the burst plus
 * a guard: they must not merely queue behind the burst). Probes sent within guard of
 * either edge, and during the burst, are left out of both sides. */
enum rs_phase { PHASE_OUT, PHASE_GUARD, PHASE_IN };

static enum rs_phase probe_phase(int64_t sent, int64_t rtt, int64_t ws, int64_t in_start,
				 int64_t we, int64_t guard)
{
	if (sent >= in_start && sent < we)
		return PHASE_IN;
	if (sent >= ws - guard && sent < we + guard)
		return PHASE_GUARD;
	/* still outstanding when the burner started (a host stall under a VM delays it): its
	 * echo waited for the burner too and must not inflate the out-of-window baseline */
	if (sent < ws && (rtt < 0 || sent + rtt > ws))
		return PHASE_GUARD;
	return PHASE_OUT;
}

/* rtt: received round trips in ms (sorted in place); sent: probes sent, received or not */
static void rtt_summarize(double *rtt, int got, int sent, struct rtt_summary *s)
{
	struct kr_stats st;
	int over = 0;

	s->sent = sent;
	s->got = got;
	s->min = s->p50 = s->p99 = s->max = s->over50 = NAN;
	if (got <= 0)
		return;
	kr_stats(rtt, (size_t)got, &st);
	for (int i = 0; i < got; i++)
		over += rtt[i] > 50.0;
	s->min = st.min;
	s->max = st.max;
	s->p50 = kr_percentile(rtt, (size_t)got, 50);
	s->p99 = kr_percentile(rtt, (size_t)got, 99);
	s->over50 = 100.0 * over / got;
}

/* One window: FAIL when the median in-window round trip exceeds both limit_ms and ratio
 * times the out-of-window median. Medians: a starved bottom half delays every probe of the
 * window (the median is about half the window), while a host stall under a VM delays a few
 * probes on either side by tens of ms (seen: out-of-window p99 59 ms under TCG), which a
 * max or p99 would read as starvation or as a noisy baseline. A window says nothing
 * (SKIP) when the bottom-half thread was never woken in it (not provoked: the deferral
 * did not happen, the path was not tested), or when either side has too few echoes (fewer than half the in-window probes came back,
 * or under 10 outside). In-window probes lost while the victim CPU dropped packets count
 * as starved: its backlog overflowed because nothing drained it (old kernels, whose veth
 * segments the burst on the sender side, fill netdev_max_backlog that way). */
static enum kr_verdict rt_starve_rule(const struct rtt_summary *in, const struct rtt_summary *out,
				      double limit_ms, double ratio, bool provoked, bool dropped)
{
	if (!provoked || in->sent <= 0 || out->got < 10 || !isfinite(out->p50))
		return KR_SKIP;
	if (dropped && in->got < in->sent)
		return KR_FAIL;
	if (in->got * 2 < in->sent || !isfinite(in->p50))
		return KR_SKIP;
	return in->p50 > limit_ms && in->p50 > ratio * out->p50 ? KR_FAIL : KR_PASS;
}

/* ---- option parsing ---- */

static const struct kr_option rs_options[] = {
	{ "path", "ksoftirqd|napi", "bottom half on the victim CPU (default ksoftirqd)" },
	{ "window", "DUR", "burner window per repeat, 50ms-900ms (default 500ms)" },
	{ "interval", "DUR", "probe spacing, 1ms-50ms (default 5ms)" },
	{ "prio", "N", "SCHED_FIFO priority of the burner, 1-98 (default 50)" },
	{ "ratio", "X", "in-window median must also be over X x the out-window one (10)" },
	{ "burst", "N", "ksoftirqd path: at most N 61.6 KB UDP GSO datagrams (1000)" },
	{ NULL, NULL, NULL }
};

static int rs_parse(int index, const char *arg)
{
	int i;

	switch (index) {
	case 0:
		if ((i = kr_parse_choice("--path", arg, "ksoftirqd|napi")) < 0)
			return -1;
		opt_path = (enum rs_path)i;
		return 0;
	case 1:
		return kr_parse_duration_ns("--window", arg, "ms", 50 * MS, 900 * MS, &opt_window);
	case 2:
		return kr_parse_duration_ns("--interval", arg, "ms", 1 * MS, 50 * MS, &opt_interval);
	case 3:
		return kr_parse_long("--prio", arg, 1, 98, &opt_prio);
	case 4:
		return kr_parse_double("--ratio", arg, 1, 1e6, &opt_ratio);
	case 5:
		return kr_parse_long("--burst", arg, 0, 100000, &opt_burst);
	}
	return -1;
}

static int rs_validate(const struct kr_opts *o)
{
	if (o->trigger)
		opt_path = PATH_NAPI;
	if ((int64_t)(o->duration_s * 1e9) < opt_window + 200 * MS)
		return kr_usage_error("--duration: must be at least --window + 200ms (%.3f s)",
				      (double)(opt_window + 200 * MS) / 1e9);
	if (opt_interval * 4 > opt_window)
		return kr_usage_error("--interval: at most a quarter of --window");
	return 0;
}

/* ---- the lab ---- */

struct lab {
	int ns_client, ns_server;
	char if_client[16], if_server[16];
	int victim, other;	   /* CPUs */
	int echo_fd, sink_fd[SINK_FANOUT]; /* server side (ns_server) */
	int probe_fd, burst_fd;	   /* client side (ns_client) */
	bool gso;		   /* burst_fd takes UDP_SEGMENT */
	long max_backlog;	   /* net.core.netdev_max_backlog */
	pid_t bh[MAX_BH_THREADS];  /* the bottom-half threads: ksoftirqd/N or napi/DEV-* */
	char bh_name[MAX_BH_THREADS][64];
	int nbh;
	atomic_bool stop_echo;
};

static int udp_socket(int nsfd, const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = kr_netns_socket(nsfd, AF_INET, SOCK_DGRAM, 0);

	inet_pton(AF_INET, addr, &sa.sin_addr);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int udp_connect(int fd, const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	inet_pton(AF_INET, addr, &sa.sin_addr);
	return connect(fd, (struct sockaddr *)&sa, sizeof(sa));
}

static int ethtool_set(int nsfd, const char *ifname, uint32_t cmd, uint32_t value)
{
	struct ethtool_value ev = { .cmd = cmd, .data = value };
	return kr_netns_ethtool(nsfd, ifname, &ev);
}

static void *echo_main(void *arg)
{
	struct lab *lab = arg;
	char buf[256];

	while (!atomic_load(&lab->stop_echo)) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(lab->echo_fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		if (n > 0)
			sendto(lab->echo_fd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
	}
	return NULL;
}

/* Steer the server veth's bottom half to the victim CPU. Returns 0, or an exit code. */
static int steer_ksoftirqd(struct lab *lab)
{
	char path[128], mask[KR_CPUMASK_LEN], name[32];
	int nq = 0;
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(lab->victim, &one);
	kr_format_cpumask(&one, 0, mask, sizeof(mask));
	for (int q = 0; q < 64; q++) {
		snprintf(path, sizeof(path), "class/net/%s/queues/rx-%d/rps_cpus", lab->if_server, q);
		if (kr_netns_sysfs_write(lab->ns_server, path, mask) < 0) {
			if (q == 0)
				return kr_skip(125, "needs RPS (CONFIG_RPS): %s: %s", path, strerror(errno));
			break;
		}
		nq++;
	}
	snprintf(name, sizeof(name), "ksoftirqd/%d", lab->victim);
	if (kr_find_tasks(name, lab->bh, 1) != 1)
		return kr_skip(125, "no %s thread", name);
	snprintf(lab->bh_name[0], sizeof(lab->bh_name[0]), "%s", name);
	lab->nbh = 1;
	kr_say("path ksoftirqd: RPS of %s (%d rx queue%s) -> CPU %d (mask %s)", lab->if_server, nq,
	       nq == 1 ? "" : "s", lab->victim, mask);
	return 0;
}

static int steer_napi(struct lab *lab)
{
	char path[128], glob[32];
	cpu_set_t one;

	snprintf(path, sizeof(path), "class/net/%s/threaded", lab->if_server);
	char cur[16];
	if (kr_netns_sysfs_read(lab->ns_server, path, cur, sizeof(cur)) < 0)
		return kr_skip(125, "needs threaded NAPI (/sys/class/net/DEV/threaded, v5.12)");
	/* UDP takes the peer's NAPI (GRO) path only when the sender has no TSO */
	if (ethtool_set(lab->ns_client, lab->if_client, ETHTOOL_STSO, 0) < 0)
		return kr_error("ETHTOOL_STSO off on %s: %s", lab->if_client, strerror(errno));
	if (ethtool_set(lab->ns_server, lab->if_server, ETHTOOL_SGRO, 1) < 0)
		return kr_skip(125, "veth cannot enable GRO (NAPI without XDP needs v5.13): %s",
			       strerror(errno));
	if (kr_netns_sysfs_write(lab->ns_server, path, "1") < 0)
		return kr_skip(125, "cannot enable threaded NAPI on veth: %s", strerror(errno));
	/* kthread names are cut at 15 characters: "napi/<ifname>-<id>" */
	snprintf(glob, sizeof(glob), "napi/%.9s-*", lab->if_server);
	if (strlen(glob) > 16)
		snprintf(glob + 15, sizeof(glob) - 15, "*");
	lab->nbh = kr_find_tasks(glob, lab->bh, MAX_BH_THREADS);
	if (lab->nbh <= 0)
		return kr_skip(125, "no napi thread for %s after threaded=1 (veth NAPI needs v5.13)",
			       lab->if_server);
	CPU_ZERO(&one);
	CPU_SET(lab->victim, &one);
	for (int i = 0; i < lab->nbh; i++) {
		struct kr_taskstat ts;
		if (kr_read_taskstat(lab->bh[i], &ts) == 0)
			snprintf(lab->bh_name[i], sizeof(lab->bh_name[i]), "%s", ts.comm);
		/* the thread dies with the namespace: its affinity needs no journal */
		if (sched_setaffinity(lab->bh[i], sizeof(one), &one) < 0)
			return kr_error("cannot pin %s to CPU %d: %s", lab->bh_name[i], lab->victim,
					strerror(errno));
	}
	kr_say("path napi: threaded NAPI on %s (GRO on, TSO off on %s),", lab->if_server,
	       lab->if_client);
	kr_say("  %d napi thread%s pinned to CPU %d", lab->nbh, lab->nbh == 1 ? "" : "s",
	       lab->victim);
	return 0;
}

/* Builds the lab. Returns 0, or the exit code of a SKIP/ERROR already reported. */
static int lab_build(struct lab *lab)
{
	pid_t pid = getpid();

	lab->ns_client = kr_netns_new();
	lab->ns_server = lab->ns_client >= 0 ? kr_netns_new() : -1;
	if (lab->ns_server < 0)
		return kr_skip(125, "needs network namespaces (CONFIG_NET_NS): %s", strerror(errno));
	/* short names: "napi/<ifname>-N" must stay recognisable within 15 characters */
	snprintf(lab->if_client, sizeof(lab->if_client), "kr%xc", (unsigned)pid);
	snprintf(lab->if_server, sizeof(lab->if_server), "kr%xs", (unsigned)pid);
	if (kr_veth_create(lab->ns_client, lab->if_client, ADDR_CLIENT "/24", lab->ns_server,
			   lab->if_server, ADDR_SERVER "/24") < 0) {
		if (errno == EOPNOTSUPP || errno == ENOENT)
			return kr_skip(125, "needs veth (CONFIG_VETH): %s", strerror(errno));
		return kr_error("cannot create the veth pair: %s", strerror(errno));
	}
	int r = opt_path == PATH_NAPI ? steer_napi(lab) : steer_ksoftirqd(lab);
	if (r)
		return r;

	lab->echo_fd = udp_socket(lab->ns_server, ADDR_SERVER, PORT_ECHO);
	lab->probe_fd = udp_socket(lab->ns_client, ADDR_CLIENT, 0);
	lab->burst_fd = kr_netns_socket(lab->ns_client, AF_INET, SOCK_DGRAM, 0);
	if (lab->echo_fd < 0 || lab->probe_fd < 0 || lab->burst_fd < 0 ||
	    udp_connect(lab->probe_fd, ADDR_SERVER, PORT_ECHO) < 0)
		return kr_error("lab sockets: %s", strerror(errno));
	/* the sinks: bound to any address (a broadcast reaches every one), never read; once
	 * full, each segment costs the victim CPU a drop */
	int one = 1, zero = 0, small = 4096;
	for (int i = 0; i < SINK_FANOUT; i++) {
		struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(PORT_SINK) };
		int fd = lab->sink_fd[i] = kr_netns_socket(lab->ns_server, AF_INET, SOCK_DGRAM, 0);
		if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
		    bind(fd, (struct sockaddr *)&any, sizeof(any)) < 0)
			return kr_error("sink socket: %s", strerror(errno));
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	}
	/* the limited broadcast leaves by the veth of the bound source address; no copy of
	 * it looped back to the client namespace */
	struct sockaddr_in src = { .sin_family = AF_INET };
	inet_pton(AF_INET, ADDR_CLIENT, &src.sin_addr);
	if (setsockopt(lab->burst_fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one)) < 0 ||
	    setsockopt(lab->burst_fd, IPPROTO_IP, IP_MULTICAST_LOOP, &zero, sizeof(zero)) < 0 ||
	    bind(lab->burst_fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    udp_connect(lab->burst_fd, ADDR_BURST, PORT_SINK) < 0)
		return kr_error("burst socket: %s", strerror(errno));
	struct timeval tv = { .tv_usec = 20000 };
	setsockopt(lab->echo_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* the burst stays charged to its socket until the victim CPU frees it: room for all
	 * of it, so that a starved receiver can neither block nor shorten the burst */
	int sndbuf = 64 << 20;
	setsockopt(lab->burst_fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf));
	uint64_t backlog = 1000;
	kr_read_u64("/proc/sys/net/core/netdev_max_backlog", &backlog);
	lab->max_backlog = (long)backlog;
	int seg = GSO_SEGMENT;
	lab->gso = setsockopt(lab->burst_fd, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg)) == 0;
	return 0;
}

/* ---- one repeat ---- */

struct probe {
	int64_t sent, rtt; /* ns; rtt < 0: no echo */
};

struct probe_msg {
	uint32_t magic, seq;
	int64_t sent;
};

struct client {
	int fd;
	int64_t t0, t_end, interval, drain;
	struct probe *p;
	int n, nmax;
};

/* Sends a probe every interval from t0 to t_end and collects the echoes, never blocking
 * on one: an echo may come back long after later probes were sent. */
static void *client_main(void *arg)
{
	struct client *c = arg;
	int64_t next = c->t0;
	int pending = 0;

	for (;;) {
		int64_t now = kr_now_ns();
		if (next < c->t_end && now >= next && c->n < c->nmax) {
			struct probe_msg m = { PROBE_MAGIC, (uint32_t)c->n, now };
			c->p[c->n].sent = now;
			c->p[c->n].rtt = -1;
			if (send(c->fd, &m, sizeof(m), 0) == (ssize_t)sizeof(m))
				pending++;
			c->n++;
			next += c->interval;
			continue;
		}
		if (next >= c->t_end && (pending == 0 || now >= c->t_end + c->drain))
			break;
		int64_t until = next < c->t_end ? next : c->t_end + c->drain;
		int64_t wait = until > now ? until - now : 0;
		struct timespec ts = { (time_t)(wait / 1000000000), (long)(wait % 1000000000) };
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		if (ppoll(&pfd, 1, &ts, NULL) <= 0)
			continue;
		struct probe_msg m;
		while (recv(c->fd, &m, sizeof(m), MSG_DONTWAIT) == (ssize_t)sizeof(m)) {
			int64_t t = kr_now_ns();
			if (m.magic != PROBE_MAGIC || (int)m.seq >= c->n || c->p[m.seq].rtt >= 0)
				continue;
			/* the send time carried in the payload: no RX timestamp, which the
			 * NAPI path would take after the stall */
			c->p[m.seq].rtt = t - m.sent;
			pending--;
		}
	}
	return NULL;
}

struct burner {
	int64_t deadline;
	_Atomic int64_t started, ended;
	int fired;
};

static void *burner_main(void *arg)
{
	struct burner *b = arg;
	struct kr_watchdog *w = kr_watchdog_arm(kr_gettid(), b->deadline);

	atomic_store(&b->started, kr_now_ns());
	while (w && kr_now_ns() < b->deadline)
		; /* own the CPU: nothing below our priority runs here (never without watchdog) */
	atomic_store(&b->ended, kr_now_ns());
	b->fired = w ? kr_watchdog_disarm(w) : -1;
	return NULL;
}

/* the victim CPU's row of /proc/net/softnet_stat: processed, dropped, time_squeeze */
static int softnet_read(int cpu, uint64_t v[3])
{
	static char text[64 * 1024];
	int row = 0;

	if (kr_read_file("/proc/net/softnet_stat", text, sizeof(text)) < 0)
		return -1;
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"), row++) {
		unsigned long long f[16] = { 0 };
		int n = 0;
		for (char *s = l, *e; n < 16; s = e, n++) {
			f[n] = strtoull(s, &e, 16);
			if (e == s)
				break;
		}
		/* since v5.10 the 13th column is the CPU; before it, rows of online CPUs */
		if ((n >= 13 ? (int)f[12] : row) == cpu) {
			v[0] = f[0], v[1] = f[1], v[2] = f[2];
			return 0;
		}
	}
	return -1;
}

struct bh_evidence {
	int samples, runnable;	     /* polls of the thread's state during the window */
	double waited_ms;	     /* schedstat run_delay growth, window start to repeat end */
	double waited_in_window_ms;  /* the same, until just before the burner ended */
	uint64_t ran_in_window;	     /* schedstat timeslices during the window */
};

struct repeat_result {
	struct rtt_summary in, out;
	struct bh_evidence bh[MAX_BH_THREADS];
	uint64_t softnet[3];	     /* victim CPU deltas over the window */
	double window_ms;
	long burst_sent;
	int64_t burst_end;
	double burst_ms;
	bool burst_woke;	     /* the burst stopped because ksoftirqd/N was woken */
	bool burst_full;	     /* ... because the victim's backlog overflowed */
	int lost_in, lost_out;
	bool provoked;		     /* a bottom-half thread was woken in the window */
	enum kr_verdict v;
};

/* the deferral happened in the window: the thread was runnable under the burner, ran, or
 * waited for a CPU (a wait after the window does not count) */
static bool bh_evidence_woken(const struct bh_evidence *e)
{
	return e->runnable > 0 || e->ran_in_window > 0 || e->waited_in_window_ms >= 1.0;
}

/* woken: runnable now, or has run since `slices` (when it outranks the burner) */
static bool bh_woken(const struct lab *lab, uint64_t slices)
{
	struct kr_taskstat ts;
	struct kr_schedstat ss;

	if (kr_read_taskstat(lab->bh[0], &ts) == 0 && ts.state == 'R')
		return true;
	return kr_read_schedstat(lab->bh[0], lab->bh[0], &ss) == 0 && ss.slices > slices;
}

/* Force the deferral, as the original heavy traffic did: each GSO datagram becomes 44
 * segments in the victim's NET_RX softirq. Once a tick lands in that work and more is
 * pending, the softirq runs out of its budget (a jiffy or 10 restarts) and
 * handle_softirqs() wakes ksoftirqd/N, which cannot run under the burner. Whether that
 * happens is chance, so send in chunks until ksoftirqd/N is runnable, at most --burst
 * datagrams or a fifth of the window; stopping then keeps the backlog short. */
static void send_burst(const struct lab *lab, int64_t deadline, uint64_t slices,
		       struct repeat_result *res)
{
	static char payload[GSO_SEGMENT * GSO_SEGMENTS];
	size_t len = lab->gso ? sizeof(payload) : 1200;
	/* a chunk: 2 GSO datagrams, or without UDP GSO (veth < 5.11 segments them on the
	 * sender side) the 44 datagrams of one, and at most a quarter of the victim's
	 * backlog, so that a starved CPU keeps room for the probes */
	long max = opt_burst * (lab->gso ? 1 : GSO_SEGMENTS), chunk = lab->gso ? 2 : GSO_SEGMENTS;
	if (!lab->gso && chunk > lab->max_backlog / 4)
		chunk = lab->max_backlog / 4 > 1 ? lab->max_backlog / 4 : 1;
	int64_t t = kr_now_ns(), until = t + opt_window / 5;
	uint64_t sn0[3] = { 0 }, sn[3] = { 0 };

	if (until > deadline)
		until = deadline;
	softnet_read(lab->victim, sn0);
	for (long i = 0; i < max && kr_now_ns() < until;) {
		for (long k = 0; k < chunk && i < max; k++, i++)
			/* never block: a starved receiver must not stall this thread */
			res->burst_sent += send(lab->burst_fd, payload, len, MSG_DONTWAIT) > 0;
		if (bh_woken(lab, slices)) {
			res->burst_woke = true;
			break;
		}
		/* the victim's backlog overflowed: more would only be dropped, and would
		 * still fill it when the window's probes arrive */
		if (softnet_read(lab->victim, sn) == 0 && sn[1] > sn0[1]) {
			res->burst_full = true;
			break;
		}
	}
	res->burst_end = kr_now_ns();
	res->burst_ms = (double)(res->burst_end - t) / 1e6;
}

static int run_repeat(struct lab *lab, const struct kr_opts *o, int rep, struct repeat_result *res)
{
	int64_t dur = (int64_t)(o->duration_s * 1e9);
	int64_t pre = (dur - opt_window) / 2;
	int nmax = (int)(dur / opt_interval) + 2;
	struct client c = { .fd = lab->probe_fd, .interval = opt_interval, .drain = 300 * MS,
			    .nmax = nmax, .p = calloc((size_t)nmax, sizeof(struct probe)) };
	struct burner b = { 0 };
	struct kr_schedstat ss0[MAX_BH_THREADS], ss1[MAX_BH_THREADS], ss2[MAX_BH_THREADS];
	uint64_t sn0[3] = { 0 }, sn1[3] = { 0 };
	pthread_t ct, bt;

	memset(res, 0, sizeof(*res));
	if (!c.p)
		return kr_error("out of memory");
	c.t0 = kr_now_ns() + 5 * MS;
	c.t_end = c.t0 + dur;
	if (kr_thread_start(&ct, lab->other, SCHED_OTHER, 0, client_main, &c) < 0)
		return kr_error("client thread: %s", strerror(errno));

	kr_sleep_until_ns(c.t0 + pre);
	for (int i = 0; i < lab->nbh; i++)
		kr_read_schedstat(lab->bh[i], lab->bh[i], &ss0[i]);
	softnet_read(lab->victim, sn0);
	b.deadline = kr_now_ns() + opt_window;
	if (kr_thread_start(&bt, lab->victim, SCHED_FIFO, (int)opt_prio, burner_main, &b) < 0) {
		int e = errno;
		pthread_join(ct, NULL);
		return e == EPERM ? kr_skip(129, "needs CAP_SYS_NICE for SCHED_FIFO")
				  : kr_error("burner thread: %s", strerror(e));
	}
	while (!atomic_load(&b.started))
		kr_sleep_ns(100000);
	/* Force the deferral, as the original heavy traffic did: each GSO datagram becomes 44
	 * segments in the victim's NET_RX softirq, enough to run out of its budget (a jiffy
	 * or 10 restarts) so that handle_softirqs() wakes ksoftirqd/N. */
	if (opt_path == PATH_KSOFTIRQD && opt_burst > 0)
		send_burst(lab, b.deadline, ss0[0].slices, res);
	/* watch the bottom-half threads' state while the burner owns the CPU; the last
	 * look is taken before it ends, so "ran in the window" means while it ran */
	while (kr_now_ns() < b.deadline - 2 * MS) {
		for (int i = 0; i < lab->nbh; i++) {
			struct kr_taskstat ts;
			if (kr_read_taskstat(lab->bh[i], &ts) == 0) {
				res->bh[i].samples++;
				res->bh[i].runnable += ts.state == 'R';
			}
		}
		kr_sleep_ns(1 * MS);
	}
	for (int i = 0; i < lab->nbh; i++)
		kr_read_schedstat(lab->bh[i], lab->bh[i], &ss1[i]);
	pthread_join(bt, NULL);
	softnet_read(lab->victim, sn1);
	pthread_join(ct, NULL);
	for (int i = 0; i < lab->nbh; i++) {
		kr_read_schedstat(lab->bh[i], lab->bh[i], &ss2[i]);
		res->bh[i].waited_ms = (double)(ss2[i].wait_ns - ss0[i].wait_ns) / 1e6;
		res->bh[i].ran_in_window = ss1[i].slices - ss0[i].slices;
		res->bh[i].waited_in_window_ms = (double)(ss1[i].wait_ns - ss0[i].wait_ns) / 1e6;
	}
	for (int k = 0; k < 3; k++)
		res->softnet[k] = sn1[k] - sn0[k];
	if (b.fired < 0)
		return kr_error("no RT watchdog could be armed: the burner did not run");
	if (b.fired)
		return kr_error("the watchdog had to stop the burner");

	int64_t ws = atomic_load(&b.started), we = atomic_load(&b.ended);
	int64_t guard = 2 * opt_interval > 20 * MS ? 2 * opt_interval : 20 * MS;
	int64_t in_start = res->burst_end ? res->burst_end + guard : ws;
	double *in = calloc((size_t)c.n + 1, sizeof(double));
	double *out = calloc((size_t)c.n + 1, sizeof(double));
	int nin = 0, nout = 0, sent_in = 0, sent_out = 0;
	if (!in || !out)
		return kr_error("out of memory");
	for (int i = 0; i < c.n; i++) {
		enum rs_phase ph = probe_phase(c.p[i].sent, c.p[i].rtt, ws, in_start, we, guard);
		double rtt = c.p[i].rtt >= 0 ? (double)c.p[i].rtt / 1e6 : NAN;
		static const char *const names[] = { "out", "guard", "in" };
		kr_csv_row("%d,%d,%.3f,%.3f,%s", rep, i, (double)(c.p[i].sent - ws) / 1e6, rtt,
			   names[ph]);
		if (ph == PHASE_IN) {
			sent_in++;
			if (c.p[i].rtt >= 0)
				in[nin++] = rtt;
		} else if (ph == PHASE_OUT) {
			sent_out++;
			if (c.p[i].rtt >= 0)
				out[nout++] = rtt;
		}
	}
	rtt_summarize(in, nin, sent_in, &res->in);
	rtt_summarize(out, nout, sent_out, &res->out);
	res->lost_in = sent_in - nin;
	res->lost_out = sent_out - nout;
	res->window_ms = (double)(we - ws) / 1e6;
	for (int i = 0; i < lab->nbh; i++)
		res->provoked |= bh_evidence_woken(&res->bh[i]);
	res->v = rt_starve_rule(&res->in, &res->out, o->threshold, opt_ratio, res->provoked,
				res->softnet[1] > 0);
	free(in);
	free(out);
	free(c.p);
	return 0;
}

/* ---- report ---- */

static void say_summary(const char *label, const char *phase, const struct rtt_summary *s, int lost)
{
	kr_say("%-6s %-4s %8.3f %8.3f %8.3f %8.3f %5.0f%% %4d/%d", label, phase, s->min, s->p50,
	       s->p99, s->max, isfinite(s->over50) ? s->over50 : 0.0, lost, s->sent);
}

static void say_evidence(const struct lab *lab, const struct repeat_result *r)
{
	for (int i = 0; i < lab->nbh; i++) {
		const struct bh_evidence *e = &r->bh[i];
		bool woken = bh_evidence_woken(e);
		kr_say("       %s: %s, R %d/%d polls, ran %llu, waited %.0f ms", lab->bh_name[i],
		       woken ? "woken" : "not woken", e->runnable, e->samples,
		       (unsigned long long)e->ran_in_window, e->waited_ms);
	}
	char burst[64] = "";
	if (opt_path == PATH_KSOFTIRQD && opt_burst > 0)
		snprintf(burst, sizeof(burst), "; burst %ld/%.1fms%s", r->burst_sent, r->burst_ms,
			 r->burst_woke ? "" : r->burst_full ? " full" : " no wake");
	kr_say("       CPU %d NET_RX: %llu skbs, %llu dropped, %llu squeezed%s", lab->victim,
	       (unsigned long long)r->softnet[0], (unsigned long long)r->softnet[1],
	       (unsigned long long)r->softnet[2], burst);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int rs_run(const struct kr_opts *o)
{
	struct lab lab;
	pthread_t et;
	char key[64];
	cpu_set_t usable;
	char iso[32], why[200];

	memset(&lab, 0, sizeof(lab));
	lab.ns_client = lab.ns_server = -1;
	/* requirements first, before anything changes; --cpu was checked by kr_main */
	kr_usable_cpus(&usable);
	if (kr_cpu_pick(&usable, o->cpu, &lab.victim, &lab.other) < 0 || lab.other < 0)
		return kr_skip(129, "needs 2 usable CPUs (the victim and one for client "
			       "and server): %s", kr_cpus_unusable(why, sizeof(why)));
	/* the burner and its SCHED_FIFO 99 watchdog (EPERM also from cpu.rt_runtime_us 0) */
	int rt = kr_rt_check(99, why, sizeof(why));
	if (rt)
		return rt == KR_EXIT_ERROR ? kr_error("%s", why) : kr_skip(rt, "%s", why);
	int mit_prio = (int)opt_prio + 1;

	kr_env_standard((const char *const[]){ "group:rt_throttling", "group:thread_policies",
					       "sysctl:net.core.netdev_budget",
					       "sysctl:net.core.netdev_budget_usecs",
					       "sysctl:net.core.netdev_max_backlog", "config:CONFIG_HZ",
					       "config:CONFIG_PREEMPT_RT", NULL });
	kr_param("path", "%s", opt_path == PATH_NAPI ? "napi" : "ksoftirqd");
	kr_param("cpu", "%d%s%s", lab.victim,
		 *kr_cpu_isolation(lab.victim, iso, sizeof(iso)) ? " " : "", iso);
	kr_param("window", "%.0fms", (double)opt_window / 1e6);
	kr_param("interval", "%.1fms", (double)opt_interval / 1e6);
	kr_param("duration", "%.2fs", o->duration_s);
	kr_param("prio", "%ld", opt_prio);
	kr_param("threshold", "%.1fms", o->threshold);
	kr_param("ratio", "%.1f", opt_ratio);
	kr_param("repeat", "%d", o->repeat);
	kr_param("mitigate", "%s", o->mitigate ? "yes" : "no");
	if (opt_path == PATH_KSOFTIRQD)
		kr_param("burst", "%ld", opt_burst);

	int r = lab_build(&lab);
	if (r)
		return r;
	if (kr_pin_self(lab.other) < 0)
		return kr_error("cannot pin to CPU %d: %s", lab.other, strerror(errno));
	for (int i = 0; i < lab.nbh; i++) {
		struct kr_taskstat ts;
		if (kr_read_taskstat(lab.bh[i], &ts) < 0)
			return kr_error("%s vanished", lab.bh_name[i]);
		kr_say("  %s pid %d: %s prio %d", lab.bh_name[i], (int)lab.bh[i],
		       kr_policy_name(ts.policy), ts.rt_priority);
		if (o->mitigate) {
			/* the known fix: the bottom half above the burner (restored after) */
			if (kr_journal_sched(lab.bh[i], SCHED_FIFO, mit_prio) < 0)
				return kr_error("cannot raise %s: %s", lab.bh_name[i], strerror(errno));
			kr_say("  mitigate: %s raised to SCHED_FIFO %d", lab.bh_name[i], mit_prio);
		}
	}
	kr_say("client and echo server on CPU %d; burner SCHED_FIFO %ld on CPU %d", lab.other,
	       opt_prio, lab.victim);
	if (opt_path == PATH_KSOFTIRQD && opt_burst > 0)
		kr_say("burst at window start: up to %ld x %s", opt_burst,
		       lab.gso ? "61.6 KB UDP GSO datagram" : "44 x 1200 B datagrams");

	if (kr_thread_start(&et, lab.other, SCHED_OTHER, 0, echo_main, &lab) < 0)
		return kr_error("echo thread: %s", strerror(errno));
	/* first echo: the path works and the neighbours are resolved (3 s: a
	 * loaded host once took more than 1 s) */
	struct probe_msg m = { PROBE_MAGIC, 0, 0 };
	bool echoed = false;
	for (int i = 0; i < 60 && !echoed; i++) {
		struct pollfd pfd = { .fd = lab.probe_fd, .events = POLLIN };
		send(lab.probe_fd, &m, sizeof(m), 0);
		echoed = poll(&pfd, 1, 50) > 0 && recv(lab.probe_fd, &m, sizeof(m), 0) > 0;
	}
	if (!echoed)
		return kr_error("no echo through the veth lab in 3 s");
	kr_sleep_ns(20 * MS);
	while (recv(lab.probe_fd, &m, sizeof(m), MSG_DONTWAIT) > 0)
		;

	kr_csv_open("repeat,seq,sent_ms_from_window_start,rtt_ms,phase");
	/* A window in which the deferral did not happen (the bottom-half thread never woken)
	 * tested nothing: it is not counted, and another one is measured, until --repeat
	 * windows were provoked, 2 x --repeat + 1 were tried, or the time budget (2.2 x the
	 * repeats' time) ran out. --repeat is at most 100: fixed arrays. */
	static struct repeat_result res[RS_MAX_ATTEMPTS];
	static enum kr_verdict v[RS_MAX_ATTEMPTS];
	static double in_p50[RS_MAX_ATTEMPTS];
	int max_attempts = 2 * o->repeat + 1, attempts = 0, nconcl = 0, nprovoked = 0;
	int64_t dur = (int64_t)(o->duration_s * 1e9);
	int64_t budget_end = kr_now_ns() + (int64_t)(2.2 * (double)o->repeat * (double)(dur + 100 * MS));
	kr_say("%s", "");
	kr_say("RTT ms           min      p50      p99      max  >50ms lost/sent");
	while (nconcl < o->repeat && attempts < max_attempts &&
	       (attempts < o->repeat || kr_now_ns() + dur + 350 * MS <= budget_end)) {
		int i = attempts++;
		kr_progress("window %d (%d of %d counted)", i + 1, nconcl, o->repeat);
		if ((r = run_repeat(&lab, o, i + 1, &res[i])))
			return r;
		char label[16];
		snprintf(label, sizeof(label), "rep %d", i + 1);
		say_summary(label, "out", &res[i].out, res[i].lost_out);
		say_summary("", "in", &res[i].in, res[i].lost_in);
		say_evidence(&lab, &res[i]);
		nprovoked += res[i].provoked;
		if (!res[i].provoked)
			kr_say("       not provoked (no deferral): not counted");
		else if (res[i].v == KR_SKIP)
			kr_say("       too few echoes: not counted");
		else if (res[i].v == KR_FAIL && res[i].lost_in > 0 && res[i].softnet[1] > 0)
			kr_say("       %d probes lost to the full backlog: starved", res[i].lost_in);
		if (res[i].v != KR_SKIP) {
			v[nconcl] = res[i].v;
			in_p50[nconcl++] = res[i].lost_in > 0 && res[i].softnet[1] > 0
						   ? INFINITY : res[i].in.p50;
		}
		const struct { const char *k; double v; } ms[] = {
			{ "out_min_ms", res[i].out.min }, { "out_p50_ms", res[i].out.p50 },
			{ "out_p99_ms", res[i].out.p99 }, { "out_max_ms", res[i].out.max },
			{ "in_min_ms", res[i].in.min }, { "in_p50_ms", res[i].in.p50 },
			{ "in_p99_ms", res[i].in.p99 }, { "in_max_ms", res[i].in.max },
			{ "in_over50_pct", res[i].in.over50 }, { "in_sent", res[i].in.sent },
			{ "in_lost", res[i].lost_in }, { "out_sent", res[i].out.sent },
			{ "out_lost", res[i].lost_out }, { "window_ms", res[i].window_ms },
			{ "netrx_packets", (double)res[i].softnet[0] },
			{ "netrx_dropped", (double)res[i].softnet[1] },
			{ "netrx_squeezed", (double)res[i].softnet[2] },
			{ "burst_sent", (double)res[i].burst_sent },
			{ "burst_ms", res[i].burst_ms },
			{ "provoked", res[i].provoked },
			{ "verdict_code", res[i].v == KR_PASS ? 0 : res[i].v == KR_FAIL ? 1 : 125 },
		};
		for (size_t k = 0; k < sizeof(ms) / sizeof(ms[0]); k++) {
			snprintf(key, sizeof(key), "rep%d_%s", i + 1, ms[k].k);
			kr_measure(key, ms[k].v);
		}
		for (int t = 0; t < lab.nbh; t++) {
			snprintf(key, sizeof(key), "rep%d_bh%d_waited_ms", i + 1, t);
			kr_measure(key, res[i].bh[t].waited_ms);
			snprintf(key, sizeof(key), "rep%d_bh%d_runnable_polls", i + 1, t);
			kr_measure(key, res[i].bh[t].runnable);
			snprintf(key, sizeof(key), "rep%d_bh%d_polls", i + 1, t);
			kr_measure(key, res[i].bh[t].samples);
			snprintf(key, sizeof(key), "rep%d_bh%d_ran_in_window", i + 1, t);
			kr_measure(key, (double)res[i].bh[t].ran_in_window);
		}
	}
	atomic_store(&lab.stop_echo, true);
	pthread_join(et, NULL);
	kr_measure("windows", attempts);
	kr_measure("windows_provoked", nprovoked);
	kr_measure("windows_counted", nconcl);
	kr_measure("bh_woken_repeats", nprovoked);

	int npass = 0, nfail = 0;
	enum kr_verdict verdict = nconcl ? kr_vote(v, nconcl, &npass, &nfail) : KR_SKIP;
	qsort(in_p50, (size_t)nconcl, sizeof(double), cmp_dbl);
	double med = nconcl ? in_p50[nconcl / 2] : NAN;
	double out_p50 = NAN;
	for (int i = 0; i < attempts; i++)
		if (isfinite(res[i].out.p50))
			out_p50 = isfinite(out_p50) ? fmax(out_p50, res[i].out.p50) : res[i].out.p50;
	kr_measure("in_p50_median_ms", med);
	kr_measure("out_p50_max_ms", out_p50);
	kr_cause("an RT task busy on the CPU running the network bottom half");
	const char *bh_cause = NULL;
	if (opt_path == PATH_NAPI)
		kr_cause("threaded NAPI: napi/DEV-N is SCHED_OTHER, below any RT task");
	else if ((bh_cause = kr_softirq_threaded()))
		kr_cause("%s", bh_cause);
	else
		kr_cause("4cd13c21b207 (v4.9) until its revert d15121be7485 (v6.5)");
	kr_say("%s", "");
	kr_say("%s: woken in %d of %d windows, %d counted", lab.bh_name[0], nprovoked, attempts,
	       nconcl);
	if (opt_path == PATH_KSOFTIRQD && verdict == KR_PASS)
		kr_say("ksoftirqd was starved and the softirqs still ran (inline at irq exit)");
	if (bh_cause)
		kr_say("softirqs run in threads here: the range 4cd13c21b207..d15121be7485\n"
		       "does not apply (%s)", bh_cause);
	const char *path = opt_path == PATH_NAPI ? "napi" : "ksoftirqd";
	int need = o->repeat < 2 ? o->repeat : 2;
	/* short reasons: the verdict line goes into mails (72 columns) */
	if (nconcl == 0 && nprovoked == 0)
		return kr_inconclusive(med, "%s never woken in %d windows (not provoked)",
				       lab.bh_name[0], attempts);
	if (nconcl == 0)
		return kr_inconclusive(med, "too few echoes in %d provoked windows", nprovoked);
	if (verdict == KR_SKIP)
		return kr_inconclusive(med, "windows disagree: %d pass, %d fail", npass, nfail);
	if (nconcl < need)
		return kr_inconclusive(med, "%d of %d windows counted, need %d", nconcl,
				       attempts, need);
	if (opt_path == PATH_NAPI)
		return kr_verdict(verdict, med, "out_p50=%.3fms path=%s", out_p50, path);
	return kr_verdict(verdict, med, "out_p50=%.3fms path=%s woken=%d/%d", out_p50, path,
			  nprovoked, attempts);
}

static const struct kr_prog prog = {
	.name = "rt_starve",
	.summary = "an RT task on the packet-processing CPU starves the bottom half",
	.description =
		"Builds two network namespaces joined by a veth pair, sends a UDP probe every\n"
		"--interval from a client to an echo server (both on a CPU other than --cpu)\n"
		"and measures round trips. The server veth's bottom half runs on the victim\n"
		"CPU (--cpu, default the last): --path ksoftirqd by RPS, with a burst of UDP\n"
		"GSO datagrams at the window start to force the softirq deferral to\n"
		"ksoftirqd/N; --path napi by threaded NAPI, the napi kthread pinned there.\n"
		"In the middle of each repeat a SCHED_FIFO busy loop owns the victim CPU for\n"
		"--window (watchdog-bounded). Round trips of probes sent inside the window are\n"
		"compared with those outside it. The report says whether the bottom-half\n"
		"thread was woken in the window (/proc/PID/stat, schedstat).\n"
		"Kernels: the ksoftirqd path FAILs from 4cd13c21b207 (v4.9) to its revert\n"
		"d15121be7485 (v6.5); the napi path FAILs on every kernel with threaded NAPI.\n"
		"--duration is one repeat, the window in its middle (default 1.2 s, 3 repeats).\n"
		"--trigger is --path napi; --mitigate raises ksoftirqd/N or the napi threads\n"
		"to SCHED_FIFO prio+1 for the run (restored after).",
	.example = "rt_starve --path napi --mitigate",
	.flags = KR_NEEDS_ROOT | KR_OPT_CPU | KR_OPT_TRIGGER | KR_OPT_MITIGATE | KR_OPT_REPEAT,
	.metric = "in_p50",
	.unit = "ms",
	.threshold = 20,
	.threshold_min = 1,
	.threshold_max = 900,
	.rule = "FAIL when the median RTT of probes sent in the burner window exceeds\n"
		"  the threshold and --ratio times the median outside it, in every counted\n"
		"  window; windows where the bottom-half thread was never woken do not count",
	.duration_s = 1.2,
	.duration_max_s = 30,
	.repeat = 3,
	.options = rs_options,
	.parse = rs_parse,
	.validate = rs_validate,
	.run = rs_run,
};

int main(int argc, char **argv)
{
	return kr_main(&prog, argc, argv);
}
