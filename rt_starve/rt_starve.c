// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: an RT task on the packet-processing CPU starves the network bottom half.
 *
 * A hard interrupt only queues work; the NET_RX softirq (the bottom half) processes the
 * packets at irq exit or, once deferred, in ksoftirqd/N; threaded NAPI runs a device's
 * bottom half in napi/DEV-N. Both kthreads are SCHED_OTHER: a SCHED_FIFO task busy on
 * that CPU holds the packets until it sleeps (Nutanix, 3.10 -> 5.10: 90 ms stalls).
 * "softirq: Let ksoftirqd do its job" (4cd13c21b207, v4.9) made every softirq wait for
 * ksoftirqd once it was woken; its revert (d15121be7485, v6.5) runs them inline at irq
 * exit again. Threaded NAPI starves on every kernel that has it.
 *
 * The lab: a veth pair between two network namespaces; a client on another CPU sends a UDP
 * probe every few ms to an echo server. The server veth's bottom half runs on the victim
 * CPU: --path ksoftirqd by RPS (plus a burst that makes the softirq wake ksoftirqd),
 * --path napi by threaded NAPI. A bounded SCHED_FIFO loop owns the victim in the middle
 * of each repeat; round trips of probes sent in that window are compared with the rest.
 */
#include "krepro.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
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
#define MAX_BH 16
#define MAX_COUNTED 100 /* --repeat */
#define SEG 1400
#define NSEG 44 /* 44 x 1400 bytes: one 61.6 KB datagram, segmented on receive */
/* the burst's FANOUT receivers: the victim segments each datagram FANOUT times, so it
 * falls behind even a sender as slow as itself (TCG) */
#define FANOUT 8

static bool opt_napi;
static int64_t opt_window = 500 * MS, opt_interval = 5 * MS;
static long opt_prio = 50, opt_burst = 1000;
static double opt_ratio = 10.0;

/* ---- the verdict rule and the statistics it reads (pure; unit-tested) ---- */

struct rtt {
	int sent, got;		/* probes sent in this phase, echoes received */
	double p50, p99, max;	/* ms, NAN without samples */
};

/* Where a probe sent at `sent` belongs. The burner runs from ws to we; probes count as in
 * the window from in_start (ws, or on the ksoftirqd path the burst's end plus guard: they
 * must not merely queue behind the burst); those within guard of either edge are left out. */
enum phase { PHASE_OUT, PHASE_GUARD, PHASE_IN };

static enum phase probe_phase(int64_t sent, int64_t rtt, int64_t ws, int64_t in_start,
			      int64_t we, int64_t guard)
{
	if (sent >= in_start && sent < we)
		return PHASE_IN;
	if (sent >= ws - guard && sent < we + guard)
		return PHASE_GUARD;
	/* outstanding when the burner started (a VM's host stall): not a baseline probe */
	if (sent < ws && (rtt < 0 || sent + rtt > ws))
		return PHASE_GUARD;
	return PHASE_OUT;
}

/* rtt: received round trips in ms (sorted in place); sent: probes sent, received or not */
static void rtt_summarize(double *rtt, int got, int sent, struct rtt *s)
{
	struct kr_stats st;

	kr_stats(rtt, (size_t)got, &st);
	*s = (struct rtt){ sent, got, st.median, kr_percentile(rtt, (size_t)got, 99), st.max };
}

/* One window: FAIL when the in-window median exceeds limit_ms and ratio x the outside
 * one. Medians: starvation delays every probe of the window, a VM's host stall a few on
 * either side (out-of-window p99 59 ms under TCG). SKIP when the bottom-half thread was
 * never woken or too few echoes came back (under half inside, 10 outside). In-window
 * probes lost while the victim dropped packets are starved: nothing drained its backlog. */
static enum kr_verdict rt_starve_rule(const struct rtt *in, const struct rtt *out,
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

struct lab {
	int ns_c, ns_s;			/* client and server namespaces */
	char if_c[16], if_s[16];
	int victim, other;		/* CPUs */
	int echo_fd, probe_fd, burst_fd;
	bool gso;			/* burst_fd takes UDP_SEGMENT */
	long chunk;			/* burst datagrams sent between checks */
	pid_t bh[MAX_BH];		/* the bottom-half threads: ksoftirqd/N or napi/DEV-* */
	char bh_name[MAX_BH][64];
	int nbh;
};

/* a UDP socket in namespace ns bound to addr:port, connected to peer:pport when peer
 * (SO_REUSEADDR: the sinks share a port; SO_BROADCAST: the burst) */
static int udp(int ns, const char *addr, int port, const char *peer, int pport)
{
	struct sockaddr_in a = { AF_INET, htons((uint16_t)port), { 0 }, { 0 } }, b = a;
	int fd = kr_netns_socket(ns, AF_INET, SOCK_DGRAM, 0), one = 1;

	b.sin_port = htons((uint16_t)pport);
	if (fd >= 0 && (inet_pton(AF_INET, addr, &a.sin_addr) != 1 ||
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
			setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one)) ||
			bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
			(peer && (inet_pton(AF_INET, peer, &b.sin_addr) != 1 ||
				  connect(fd, (struct sockaddr *)&b, sizeof(b)))))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Steer the server veth's bottom half to the victim CPU. Returns 0, or an exit code. */
static int steer(struct lab *lab)
{
	char path[128], mask[KR_CPUMASK_LEN];
	struct kr_cpus one = { 1, &lab->victim };
	int nq = 0;

	if (!opt_napi) {
		kr_cpus_mask(&one, 0, mask, sizeof(mask));
		for (; nq < 64; nq++) {
			snprintf(path, sizeof(path), "class/net/%s/queues/rx-%d/rps_cpus",
				 lab->if_s, nq);
			if (kr_netns_sysfs_write(lab->ns_s, path, mask) < 0)
				break;
		}
		if (!nq)
			return kr_skip(125, "needs RPS (CONFIG_RPS): %s: %s", path, strerror(errno));
		snprintf(path, sizeof(path), "ksoftirqd/%d", lab->victim);
		if ((lab->nbh = kr_find_tasks(path, lab->bh, 1)) != 1)
			return kr_skip(125, "no %s thread", path);
		kr_say("path ksoftirqd: RPS of %s (%d rx queue%s) -> CPU %d (mask %s)", lab->if_s,
		       nq, nq > 1 ? "s" : "", lab->victim, mask);
		return 0;
	}
	snprintf(path, sizeof(path), "class/net/%s/threaded", lab->if_s);
	if (kr_netns_sysfs_read(lab->ns_s, path, mask, sizeof(mask)) < 0)
		return kr_skip(125, "needs threaded NAPI (/sys/class/net/DEV/threaded, v5.12)");
	/* UDP takes the peer's NAPI (GRO) path only when the sender has no TSO */
	if (kr_netns_ethtool(lab->ns_c, lab->if_c, &(struct ethtool_value){ ETHTOOL_STSO, 0 }))
		return kr_error("ETHTOOL_STSO off on %s: %s", lab->if_c, strerror(errno));
	if (kr_netns_ethtool(lab->ns_s, lab->if_s, &(struct ethtool_value){ ETHTOOL_SGRO, 1 }))
		return kr_skip(125, "veth cannot enable GRO (NAPI without XDP needs v5.13): %s",
			       strerror(errno));
	if (kr_netns_sysfs_write(lab->ns_s, path, "1") < 0)
		return kr_skip(125, "cannot enable threaded NAPI on veth: %s", strerror(errno));
	/* kthread names are cut at 15 characters: "napi/<ifname>-<id>" */
	snprintf(path, sizeof(path), "napi/%.9s-*", lab->if_s);
	if ((lab->nbh = kr_find_tasks(path, lab->bh, MAX_BH)) <= 0)
		return kr_skip(125, "no napi thread for %s after threaded=1 (veth NAPI needs v5.13)",
			       lab->if_s);
	/* the threads die with the namespace: their affinity needs no journal */
	for (int i = 0; i < lab->nbh; i++)
		if (kr_pin(lab->bh[i], lab->victim) < 0)
			return kr_error("cannot pin napi thread %d to CPU %d: %s", (int)lab->bh[i],
					lab->victim, strerror(errno));
	kr_say("path napi: threaded NAPI on %s (GRO on, TSO off on %s),", lab->if_s, lab->if_c);
	kr_say("  %d napi thread(s) pinned to CPU %d", lab->nbh, lab->victim);
	return 0;
}

/* Builds the lab. Returns 0, or the exit code of a SKIP/ERROR already reported. */
static int lab_build(struct lab *lab)
{
	int r, zero = 0, small = 4096, seg = SEG, sndbuf = 64 << 20;
	uint64_t backlog = 1000;

	lab->ns_c = kr_netns_new();
	lab->ns_s = lab->ns_c >= 0 ? kr_netns_new() : -1;
	if (lab->ns_s < 0)
		return kr_skip(125, "needs network namespaces (CONFIG_NET_NS): %s", strerror(errno));
	/* short names: "napi/<ifname>-N" must stay recognisable within 15 characters */
	snprintf(lab->if_c, sizeof(lab->if_c), "kr%xc", (unsigned)getpid());
	snprintf(lab->if_s, sizeof(lab->if_s), "kr%xs", (unsigned)getpid());
	if (kr_veth_create(lab->ns_c, lab->if_c, ADDR_CLIENT "/24", lab->ns_s, lab->if_s,
			   ADDR_SERVER "/24") < 0)
		return errno == EOPNOTSUPP || errno == ENOENT
			       ? kr_skip(125, "needs veth (CONFIG_VETH): %s", strerror(errno))
			       : kr_error("cannot create the veth pair: %s", strerror(errno));
	if ((r = steer(lab)))
		return r;
	lab->echo_fd = udp(lab->ns_s, ADDR_SERVER, PORT_ECHO, NULL, 0);
	lab->probe_fd = udp(lab->ns_c, ADDR_CLIENT, 0, ADDR_SERVER, PORT_ECHO);
	/* the burst: a limited broadcast out of the bound address's veth, not looped back;
	 * the sinks are never read: once full, each segment costs the victim a drop */
	lab->burst_fd = udp(lab->ns_c, ADDR_CLIENT, 0, "255.255.255.255", PORT_SINK);
	for (int i = 0; i < FANOUT && r >= 0; i++)
		r = setsockopt(udp(lab->ns_s, "0.0.0.0", PORT_SINK, NULL, 0), SOL_SOCKET,
			       SO_RCVBUF, &small, sizeof(small));
	if (r < 0 || lab->echo_fd < 0 || lab->probe_fd < 0 || lab->burst_fd < 0 ||
	    setsockopt(lab->burst_fd, IPPROTO_IP, IP_MULTICAST_LOOP, &zero, sizeof(zero)) < 0)
		return kr_error("lab sockets: %s", strerror(errno));
	/* the burst is charged to its socket until the victim frees it: room for all of it */
	setsockopt(lab->burst_fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf));
	lab->gso = setsockopt(lab->burst_fd, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg)) == 0;
	/* a chunk: 2 GSO datagrams, or without UDP GSO (< 4.18) the 44 datagrams of one,
	 * at most a quarter of the victim's backlog: a starved CPU keeps room for probes */
	kr_read_u64("/proc/sys/net/core/netdev_max_backlog", &backlog);
	lab->chunk = lab->gso ? 2 : backlog / 4 < NSEG ? (long)backlog / 4 : NSEG;
	if (lab->chunk < 1)
		lab->chunk = 1;
	return 0;
}

/* the echo server: returns every datagram waiting on fd to its sender */
static void echo(int fd)
{
	char buf[64];
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	ssize_t n;

	while ((n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl)) > 0)
		sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
}

struct probe {
	int64_t sent, rtt; /* ns; rtt < 0: no echo */
};

struct client {
	int fd, echo_fd, n, nmax;
	int64_t t0, t_end;
	struct probe *p;
};

/* Sends a probe (number, send time) every --interval from t0 to t_end, serves the echoes
 * and collects them until all came back or 300 ms more passed, never blocking on one. */
static void *client_main(void *arg)
{
	struct client *c = arg;
	int64_t next = c->t0, drain = c->t_end + 300 * MS, m[2];
	int pending = 0;

	for (;;) {
		int64_t now = kr_now_ns();
		if (next < c->t_end && now >= next && c->n < c->nmax) {
			c->p[c->n] = (struct probe){ now, -1 };
			m[0] = c->n++, m[1] = now;
			pending += send(c->fd, m, sizeof(m), 0) == (ssize_t)sizeof(m);
			next += opt_interval;
			continue;
		}
		if (next >= c->t_end && (pending == 0 || now >= drain))
			break;
		int64_t wait = (next < c->t_end ? next : drain) - now;
		struct timespec ts = { (time_t)(wait / 1000000000), (long)(wait % 1000000000) };
		struct pollfd pfd[2] = { { c->echo_fd, POLLIN, 0 }, { c->fd, POLLIN, 0 } };
		if (wait < 0)
			ts = (struct timespec){ 0, 0 };
		if (ppoll(pfd, 2, &ts, NULL) <= 0)
			continue;
		echo(c->echo_fd);
		while (recv(c->fd, m, sizeof(m), MSG_DONTWAIT) == (ssize_t)sizeof(m)) {
			/* no RX timestamp: on the NAPI path it is taken after the stall */
			if (m[0] >= 0 && m[0] < c->n && c->p[m[0]].sent == m[1] && c->p[m[0]].rtt < 0)
				c->p[m[0]].rtt = kr_now_ns() - m[1], pending--;
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
static void softnet_read(int cpu, uint64_t v[3])
{
	static char text[64 * 1024];
	unsigned long long x[3];
	unsigned id;
	int row = 0;

	if (kr_read_file("/proc/net/softnet_stat", text, sizeof(text)) < 0)
		return;
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"), row++) {
		int n = sscanf(l, "%llx %llx %llx %*x %*x %*x %*x %*x %*x %*x %*x %*x %x", &x[0],
			       &x[1], &x[2], &id);
		/* since v5.10 the 13th column is the CPU; before it, rows of online CPUs */
		if (n >= 3 && (n == 4 ? (int)id : row) == cpu) {
			v[0] = x[0], v[1] = x[1], v[2] = x[2];
			return;
		}
	}
}

struct result {
	struct rtt in, out;
	struct {
		int polls, runnable;	/* polls of the thread's state during the window */
		uint64_t ran;		/* schedstat timeslices during the window */
		double waited_ms;	/* schedstat run_delay growth until the repeat's end */
		bool woken;		/* runnable under the burner, ran or waited */
	} bh[MAX_BH];
	bool provoked;			/* a bottom-half thread was woken in the window */
	uint64_t softnet[3];		/* victim CPU deltas over the repeat */
	long burst_sent;
	int64_t burst_end;
	double burst_ms;
	const char *burst_stop;		/* why the burst stopped early, or "" */
	enum kr_verdict v;
};

static int measure(struct lab *lab, const struct kr_opts *o, int rep, struct result *res)
{
	int64_t dur = (int64_t)(o->duration_s * 1e9);
	int nmax = (int)(dur / opt_interval) + 2;
	struct client c = { lab->probe_fd, lab->echo_fd, 0, nmax, kr_now_ns() + 5 * MS, 0,
			    calloc((size_t)nmax, sizeof(struct probe)) };
	double *in = calloc(2 * (size_t)nmax, sizeof(double)), *out = in + nmax;
	static char buf[SEG * NSEG]; /* the burst's payload */
	struct burner b = { 0 };
	struct kr_taskstat ts;
	struct kr_schedstat ss0[MAX_BH], ss1;
	uint64_t sn0[3] = { 0 }, sn1[3] = { 0 };
	pthread_t ct, bt;

	memset(res, 0, sizeof(*res));
	if (!c.p || !in)
		return kr_error("out of memory");
	c.t_end = c.t0 + dur;
	if (kr_thread_start(&ct, lab->other, SCHED_OTHER, 0, client_main, &c) < 0)
		return kr_error("client thread: %s", strerror(errno));
	kr_sleep_until_ns(c.t0 + (dur - opt_window) / 2);
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
	/* Force the deferral like the original heavy traffic: each GSO datagram is 44 segments
	 * for the victim's NET_RX softirq; when a tick lands in that work with more pending,
	 * its budget (a jiffy or 10 restarts) runs out and it wakes ksoftirqd/N. Chance: send
	 * chunks until ksoftirqd/N is runnable or ran, the backlog overflows, --burst
	 * datagrams were sent or a fifth of the window passed. */
	int64_t t = kr_now_ns(), until = t + opt_window / 5;
	long max = opt_burst * (lab->gso ? 1 : NSEG), sent = 0;
	bool burst = !opt_napi && max > 0;
	while (burst && kr_now_ns() < b.deadline - 2 * MS) {
		for (long k = 0; k < lab->chunk && sent < max; k++, sent++) /* never block */
			res->burst_sent += send(lab->burst_fd, buf, lab->gso ? sizeof(buf) : 1200,
						MSG_DONTWAIT) > 0;
		softnet_read(lab->victim, sn1);
		if ((kr_read_taskstat(lab->bh[0], &ts) == 0 && ts.state == 'R') ||
		    (kr_read_schedstat(lab->bh[0], lab->bh[0], &ss1) == 0 &&
		     ss1.slices > ss0[0].slices))
			res->burst_stop = "";
		else if (sn1[1] > sn0[1])
			res->burst_stop = " full";
		else if (sent < max && kr_now_ns() < until)
			continue;
		else
			res->burst_stop = " no wake";
		burst = false;
		res->burst_end = kr_now_ns();
		res->burst_ms = (double)(res->burst_end - t) / 1e6;
	}
	/* watch the bottom-half threads while the burner owns the CPU; the last look is
	 * taken before it ends, so "ran in the window" means while it ran */
	while (kr_now_ns() < b.deadline - 2 * MS) {
		for (int i = 0; i < lab->nbh; i++)
			if (kr_read_taskstat(lab->bh[i], &ts) == 0)
				res->bh[i].polls++, res->bh[i].runnable += ts.state == 'R';
		kr_sleep_ns(1 * MS);
	}
	for (int i = 0; i < lab->nbh; i++) {
		kr_read_schedstat(lab->bh[i], lab->bh[i], &ss1);
		res->bh[i].ran = ss1.slices - ss0[i].slices;
		res->bh[i].woken = res->bh[i].runnable || res->bh[i].ran ||
				ss1.wait_ns - ss0[i].wait_ns >= 1 * MS;
		res->provoked |= res->bh[i].woken;
	}
	pthread_join(bt, NULL);
	softnet_read(lab->victim, sn1);
	pthread_join(ct, NULL);
	for (int k = 0; k < 3; k++)
		res->softnet[k] = sn1[k] - sn0[k];
	for (int i = 0; i < lab->nbh; i++) /* the wait is counted when the thread runs */
		if (kr_read_schedstat(lab->bh[i], lab->bh[i], &ss1) == 0)
			res->bh[i].waited_ms = (double)(ss1.wait_ns - ss0[i].wait_ns) / 1e6;
	if (b.fired)
		return kr_error(b.fired < 0 ? "no RT watchdog could be armed: the burner did not run"
					    : "the watchdog had to stop the burner");

	int64_t ws = atomic_load(&b.started), we = atomic_load(&b.ended);
	int64_t guard = 2 * opt_interval > 20 * MS ? 2 * opt_interval : 20 * MS;
	int64_t in_start = res->burst_end ? res->burst_end + guard : ws;
	int nin = 0, nout = 0, sent_in = 0, sent_out = 0;
	for (int i = 0; i < c.n; i++) {
		enum phase ph = probe_phase(c.p[i].sent, c.p[i].rtt, ws, in_start, we, guard);
		double rtt = c.p[i].rtt >= 0 ? (double)c.p[i].rtt / 1e6 : NAN;
		kr_csv_row("%d,%d,%.3f,%.3f,%s", rep, i, (double)(c.p[i].sent - ws) / 1e6, rtt,
			   (const char *[]){ "out", "guard", "in" }[ph]);
		if (ph == PHASE_IN && (sent_in++, c.p[i].rtt >= 0))
			in[nin++] = rtt;
		else if (ph == PHASE_OUT && (sent_out++, c.p[i].rtt >= 0))
			out[nout++] = rtt;
	}
	rtt_summarize(in, nin, sent_in, &res->in);
	rtt_summarize(out, nout, sent_out, &res->out);
	res->v = rt_starve_rule(&res->in, &res->out, o->threshold, opt_ratio, res->provoked,
				res->softnet[1] > 0);
	free(in);
	free(c.p);
	return 0;
}

static int rs_run(const struct kr_opts *o)
{
	struct lab lab = { .ns_c = -1, .ns_s = -1 };
	struct kr_cpus usable;
	char iso[32], why[200];
	int r;

	opt_napi |= o->trigger;	/* here, not in validate: the mail form runs this */

	/* requirements first, before anything changes; --cpu was checked before */
	kr_usable_cpus(&usable);
	r = kr_cpu_pick(&usable, o->cpu, &lab.victim, &lab.other);
	kr_cpus_free(&usable);
	if (r < 0 || lab.other < 0)
		return kr_skip(129, "needs 2 usable CPUs (the victim and one for client "
			       "and server): %s", kr_cpus_unusable(why, sizeof(why)));
	/* the burner and its SCHED_FIFO 99 watchdog (EPERM also from cpu.rt_runtime_us 0) */
	if ((r = kr_rt_check(99, why, sizeof(why))))
		return r == KR_EXIT_ERROR ? kr_error("%s", why) : kr_skip(r, "%s", why);

	kr_env_standard((const char *const[]){
		"group:rt_throttling", "group:thread_policies", "sysctl:net.core.netdev_budget",
		"sysctl:net.core.netdev_budget_usecs", "sysctl:net.core.netdev_max_backlog",
		"config:CONFIG_HZ", "config:CONFIG_PREEMPT_RT", NULL });
	const char *path = opt_napi ? "napi" : "ksoftirqd";
	kr_param("path", "%s", path);
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
	if (!opt_napi)
		kr_param("burst", "%ld", opt_burst);

	if ((r = lab_build(&lab)))
		return r;
	if (kr_pin(0, lab.other) < 0)
		return kr_error("cannot pin to CPU %d: %s", lab.other, strerror(errno));
	for (int i = 0; i < lab.nbh; i++) {
		struct kr_taskstat ts;
		if (kr_read_taskstat(lab.bh[i], &ts) < 0)
			return kr_error("bottom-half thread %d vanished", (int)lab.bh[i]);
		snprintf(lab.bh_name[i], sizeof(lab.bh_name[i]), "%s", ts.comm);
		kr_say("  %s pid %d: %s prio %d", ts.comm, (int)lab.bh[i],
		       kr_policy_name(ts.policy), ts.rt_priority);
		if (!o->mitigate)
			continue;
		/* the known fix: the bottom half above the burner (restored after) */
		if (kr_journal_sched(lab.bh[i], SCHED_FIFO, (int)opt_prio + 1) < 0)
			return kr_error("cannot raise %s: %s", ts.comm, strerror(errno));
		kr_say("  mitigate: %s raised to SCHED_FIFO %ld", ts.comm, opt_prio + 1);
	}
	kr_say("client and echo server on CPU %d; burner SCHED_FIFO %ld on CPU %d", lab.other,
	       opt_prio, lab.victim);
	if (!opt_napi && opt_burst > 0)
		kr_say("burst at window start: up to %ld x %s", opt_burst,
		       lab.gso ? "61.6 KB UDP GSO datagram" : "44 x 1200 B datagrams");

	/* first echo: the path works and the neighbours are resolved (3 s: a loaded host
	 * once took more than 1 s); a probe numbered -1 is never counted */
	int64_t m[2] = { -1, 0 };
	struct pollfd pe = { lab.echo_fd, POLLIN, 0 }, pp = { lab.probe_fd, POLLIN, 0 };
	bool echoed = false;
	for (int i = 0; i < 30 && !echoed; i++) {
		send(lab.probe_fd, m, sizeof(m), 0);
		if (poll(&pe, 1, 50) > 0)
			echo(lab.echo_fd);
		echoed = poll(&pp, 1, 50) > 0 && recv(lab.probe_fd, m, sizeof(m), 0) > 0;
	}
	if (!echoed)
		return kr_error("no echo through the veth lab in 3 s");

	kr_csv_open("repeat,seq,sent_ms_from_window_start,rtt_ms,phase");
	/* A window without the deferral tested nothing: measure another, until --repeat
	 * counted, 2 x --repeat + 1 tried, or 2.2 x the repeats' time passed. */
	static enum kr_verdict v[MAX_COUNTED];
	static double in_p50[MAX_COUNTED];
	struct result x;
	struct kr_stats st;
	int tries = 0, nconcl = 0, nprovoked = 0, npass = 0, nfail = 0;
	int64_t dur = (int64_t)(o->duration_s * 1e9);
	int64_t budget_end = kr_now_ns() + (int64_t)(2.2 * o->repeat * (double)(dur + 100 * MS));
	double out_p50 = NAN;
	kr_say("%s", "");
	kr_say("RTT ms        p50      p99      max lost/sent");
	while (nconcl < o->repeat && tries < 2 * o->repeat + 1 &&
	       (tries < o->repeat || kr_now_ns() + dur + 350 * MS <= budget_end)) {
		kr_progress("window %d (%d of %d counted)", ++tries, nconcl, o->repeat);
		if ((r = measure(&lab, o, tries, &x)))
			return r;
		kr_say("rep %-2d out %8.3f %8.3f %8.3f %4d/%d", tries, x.out.p50, x.out.p99,
		       x.out.max, x.out.sent - x.out.got, x.out.sent);
		kr_say("       in  %8.3f %8.3f %8.3f %4d/%d", x.in.p50, x.in.p99, x.in.max,
		       x.in.sent - x.in.got, x.in.sent);
		for (int i = 0; i < lab.nbh; i++)
			kr_say("       %s: %s, R %d/%d polls, ran %llu, waited %.0f ms",
			       lab.bh_name[i], x.bh[i].woken ? "woken" : "not woken", x.bh[i].runnable,
			       x.bh[i].polls, (unsigned long long)x.bh[i].ran, x.bh[i].waited_ms);
		char burst[64] = "";
		if (x.burst_stop)
			snprintf(burst, sizeof(burst), "; burst %ld/%.1fms%s", x.burst_sent,
				 x.burst_ms, x.burst_stop);
		kr_say("       NET_RX: %llu skbs, %llu dropped, %llu squeezed%s",
		       (unsigned long long)x.softnet[0], (unsigned long long)x.softnet[1],
		       (unsigned long long)x.softnet[2], burst);
		if (!x.provoked)
			kr_say("       not provoked (no deferral): not counted");
		else if (x.v == KR_SKIP)
			kr_say("       too few echoes: not counted");
		else if (x.v == KR_FAIL && x.in.got < x.in.sent && x.softnet[1] > 0)
			kr_say("       %d probes lost to the full backlog: starved",
			       x.in.sent - x.in.got);
		nprovoked += x.provoked;
		out_p50 = fmax(out_p50, x.out.p50); /* NAN: the other */
		if (x.v != KR_SKIP) {
			v[nconcl] = x.v;
			in_p50[nconcl++] = x.in.got < x.in.sent && x.softnet[1] > 0 ? INFINITY
										: x.in.p50;
		}
	}
	kr_measure("bh_woken_repeats", nprovoked);
	enum kr_verdict verdict = nconcl ? kr_vote(v, nconcl, &npass, &nfail) : KR_SKIP;
	kr_stats(in_p50, (size_t)nconcl, &st); /* sorts */
	double med = nconcl ? in_p50[nconcl / 2] : NAN;
	const char *bh_cause = opt_napi ? NULL : kr_softirq_threaded();
	kr_cause("an RT task busy on the CPU running the network bottom half");
	kr_cause("%s", opt_napi ? "threaded NAPI: napi/DEV-N is SCHED_OTHER, below any RT task"
		 : bh_cause ? bh_cause : "4cd13c21b207 (v4.9) until its revert d15121be7485 (v6.5)");
	kr_say("%s", "");
	kr_say("%s: woken in %d of %d windows, %d counted", lab.bh_name[0], nprovoked, tries,
	       nconcl);
	if (!opt_napi && verdict == KR_PASS)
		kr_say("ksoftirqd was starved and the softirqs still ran (inline at irq exit)");
	if (bh_cause)
		kr_say("softirqs run in threads here: the range 4cd13c21b207..d15121be7485\n"
		       "does not apply (%s)", bh_cause);
	/* short reasons: the verdict line goes into mails (72 columns) */
	if (nconcl == 0 && nprovoked == 0)
		return kr_inconclusive(med, "%s never woken in %d windows (not provoked)",
				       lab.bh_name[0], tries);
	if (nconcl == 0)
		return kr_inconclusive(med, "too few echoes in %d provoked windows", nprovoked);
	if (verdict == KR_SKIP)
		return kr_inconclusive(med, "windows disagree: %d pass, %d fail", npass, nfail);
	if (nconcl < 2 && o->repeat >= 2)
		return kr_inconclusive(med, "%d of %d windows counted, need 2", nconcl, tries);
	if (opt_napi)
		return kr_verdict(verdict, med, "out_p50=%.3fms path=%s", out_p50, path);
	return kr_verdict(verdict, med, "out_p50=%.3fms path=%s woken=%d/%d", out_p50, path,
			  nprovoked, tries);
}

static const struct kr_prog prog = {
	.name = "rt_starve",
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
	.run = rs_run,
};

/* ---- the command line (not in the mail form) ---- */

static const struct kr_option rs_options[] = {
	KR_ARG_CUSTOM("path", "ksoftirqd|napi", "bottom half on the victim CPU (default ksoftirqd)"),
	KR_ARG_CUSTOM("window", "DUR", "burner window per repeat, 50ms-900ms (default 500ms)"),
	KR_ARG_CUSTOM("interval", "DUR", "probe spacing, 1ms-50ms (default 5ms)"),
	KR_ARG_CUSTOM("prio", "N", "SCHED_FIFO priority of the burner, 1-98 (default 50)"),
	KR_ARG_CUSTOM("ratio", "X", "in-window median must also be over X x the out-window one (10)"),
	KR_ARG_CUSTOM("burst", "N", "ksoftirqd path: at most N 61.6 KB UDP GSO datagrams (1000)"),
	{ .name = NULL }
};

static int rs_parse(int index, const char *arg)
{
	int i;

	switch (index) {
	case 0:
		if ((i = kr_parse_choice("--path", arg, "ksoftirqd|napi")) < 0)
			return -1;
		opt_napi = i == 1;
		return 0;
	case 1:
		return kr_parse_duration_ns("--window", arg, "ms", 50 * MS, 900 * MS, &opt_window);
	case 2:
		return kr_parse_duration_ns("--interval", arg, "ms", 1 * MS, 50 * MS, &opt_interval);
	case 3:
		return kr_parse_long("--prio", arg, 1, 98, &opt_prio);
	case 4:
		return kr_parse_double("--ratio", arg, 1, 1e6, &opt_ratio);
	}
	return kr_parse_long("--burst", arg, 0, 100000, &opt_burst);
}

static int rs_validate(const struct kr_opts *o)
{
	if ((int64_t)(o->duration_s * 1e9) < opt_window + 200 * MS)
		return kr_usage_error("--duration: must be at least --window + 200ms (%.3f s)",
				      (double)(opt_window + 200 * MS) / 1e9);
	if (opt_interval * 4 > opt_window)
		return kr_usage_error("--interval: at most a quarter of --window");
	return 0;
}

static const struct kr_cli cli = {
	.summary = "an RT task on the packet-processing CPU starves the bottom half",
	.description =
		"A veth pair joins two network namespaces; a client sends a UDP probe every\n"
		"--interval to an echo server, both on a CPU other than the victim (--cpu,\n"
		"default the last), whose bottom half for the server veth is --path\n"
		"ksoftirqd (RPS, and a burst of UDP GSO datagrams at the window start to\n"
		"force the softirq deferral) or napi (threaded NAPI, its kthread pinned\n"
		"there). In the middle of each repeat (--duration, default 1.2 s) a\n"
		"watchdog-bounded SCHED_FIFO loop owns the victim for --window; round trips\n"
		"of probes sent inside the window are compared with those outside it.\n"
		"20 ms: starved windows gave medians of 180-270 ms, healthy ones < 1 ms.\n"
		"Kernels: ksoftirqd FAILs from 4cd13c21b207 (v4.9) to its revert\n"
		"d15121be7485 (v6.5); napi on every kernel with threaded NAPI.\n"
		"--trigger is --path napi; --mitigate raises ksoftirqd/N or the napi\n"
		"threads to SCHED_FIFO prio+1 for the run (restored after).",
	.example = "rt_starve --path napi --mitigate",
	.options = rs_options,
	.parse = rs_parse,
	.validate = rs_validate,
};

int main(int argc, char **argv)
{
	return kr_main(&prog, &cli, argc, argv);
}
