// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: an RT task on the packet-processing CPU starves the network bottom half.
 *
 * NET_RX (the bottom half) runs at irq exit or, once deferred, in ksoftirqd/N, SCHED_OTHER:
 * an RT task busy on that CPU holds it off (Nutanix, 3.10 -> 5.10: 90 ms stalls).
 * 4cd13c21b207 ("softirq: Let ksoftirqd do its job", v4.9) defers all softirqs while
 * ksoftirqd is runnable; its revert d15121be7485 (v6.5) runs them at irq exit again.
 * Starved on any kernel: threaded NAPI's napi/DEV-N (v5.12), backlog_napi/N (v6.10,
 * thread_backlog_napi or PREEMPT_RT), ksoftirqd with threadirqs or PREEMPT_RT.
 *
 * A client sends a UDP probe every 5 ms over a veth pair to an echo server; the server
 * side's bottom half runs on the victim CPU, by RPS (a burst wakes ksoftirqd/N) or by
 * threaded NAPI (--trigger). A SCHED_FIFO loop owns the victim mid-repeat: the probes
 * sent then are compared with the others.
 */
#include "krepro.h"

#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <math.h>
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
#define MAX_BH 16		/* bottom-half threads watched */
#define MAX_PROBES 30002	/* 30 s, a probe every 1 ms */

static struct {
	int napi;			/* 1: threaded NAPI, 0: RPS, -1: NAPI with --trigger */
	int64_t window_ns, interval_ns;	/* the burner's time per repeat; between probes */
	long prio, burst;		/* the burner's SCHED_FIFO priority; RPS: burst size */
	double ratio;			/* FAIL also needs in_p50 > ratio x out_p50 */
} cfg = { .napi = -1, .window_ns = 500 * MS, .interval_ns = 5 * MS, .prio = 50,
	  .burst = 1000, .ratio = 10 };

/* the full program's (NULL here): knobs; report (-1: the lab, N: window N) */
static const char *const *env_knobs;
static void (*report_more)(const struct kr_opts *o, int when);

/* ---- the verdict rule (pure; unit-tested) ---- */

/* IN: sent from in_start (the burner's start ws, or the burst's end + guard) to its end
 * we; GUARD: within guard of either edge, or outstanding at ws */
enum phase { PHASE_OUT, PHASE_GUARD, PHASE_IN };

static enum phase probe_phase(int64_t sent, int64_t rtt, int64_t ws, int64_t in_start,
			      int64_t we, int64_t guard)
{
	if (sent >= in_start && sent < we)
		return PHASE_IN;
	if (sent >= ws - guard && sent < we + guard)
		return PHASE_GUARD;
	return sent < ws && (rtt < 0 || sent + rtt > ws) ? PHASE_GUARD : PHASE_OUT;
}

struct rtt { int sent, got, n; double p50; }; /* probes sent, echoes, samples; median ms */

static struct rtt rtt_of(double *ms, int n, int sent, int got)
{
	struct kr_stats st;

	kr_stats(ms, (size_t)n, &st);
	return (struct rtt){ sent, got, n, n ? st.median : NAN };
}

/* FAIL: the in-window median over limit and ratio x the one outside; SKIP: samples of
 * under half the probes in, or under 10 out */
static enum kr_verdict window_rule(const struct rtt *in, const struct rtt *out, double limit,
				   double ratio)
{
	if (!in->n || in->n * 2 < in->sent || out->n < 10)
		return KR_SKIP;
	return in->p50 > limit && in->p50 > ratio * out->p50 ? KR_FAIL : KR_PASS;
}

/* cpu's processed, dropped, time_squeeze in softnet_stat (-1: none): online CPUs' rows,
 * the CPU in column 13 since v5.10, before it the k-th online CPU in row k */
static int softnet_row(const char *text, const struct kr_cpus *online, int cpu, uint64_t v[3])
{
	unsigned long long x[3];
	int rows = 0, n, hit = 0; /* 1: by the row, 2: by column 13 */
	unsigned id;

	for (; text && *text; text += strcspn(text, "\n"), text += !!*text, rows++) {
		char line[256]; /* one row: sscanf reads on */
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(text, "\n"), text);
		n = sscanf(line, "%llx %llx %llx %*x %*x %*x %*x %*x %*x %*x %*x %*x %x", &x[0],
			   &x[1], &x[2], &id);
		if (n == 4 ? (int)id == cpu : n == 3 && online && rows < online->n &&
		    online->cpu[rows] == cpu)
			hit = n - 2, v[0] = x[0], v[1] = x[1], v[2] = x[2];
	}
	return hit == 2 || (hit == 1 && rows == online->n) ? 0 : -1;
}

/* ---- the lab ---- */

static struct {
	bool napi, gso;		/* threaded NAPI; the burst socket takes UDP_SEGMENT */
	int ns_c, ns_s, victim, other, echo_fd, probe_fd, burst_fd, nbh;
	bool burst;		/* RPS: a burst to wake ksoftirqd/N */
	char if_s[16];
	pid_t bh[MAX_BH];	/* the bottom half's threads */
	struct kr_cpus online;	/* softnet_stat's rows before v5.10 */
} lab;

static int softnet(uint64_t v[3])
{
	char *text = kr_read_text("/proc/net/softnet_stat");
	int r = softnet_row(text, &lab.online, lab.victim, v);

	free(text);
	return r;
}

/* a thread's context switches: they grow when it runs */
static long switches(pid_t tid)
{
	char path[64], text[16384], *p = text;
	long n = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (kr_read_file(path, text, sizeof(text)) > 0)
		while ((p = strstr(p, "ctxt_switches:"))) /* voluntary_, nonvoluntary_ */
			n += atol(p += 14);
	return n;
}

/* a UDP socket in ns on 10.201.0.a:port (a 0: any), connected to 10.201.0.peer:to (peer 0:
 * not connected, 255: the limited broadcast) */
static int udp(int ns, unsigned a, int port, unsigned peer, int to)
{
	struct sockaddr_in sa = { AF_INET, htons((uint16_t)port), { a ? htonl(0x0ac90000 | a) : 0 },
				  { 0 } };
	int fd = kr_netns_socket(ns, AF_INET, SOCK_DGRAM, 0), one = 1;

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	sa.sin_addr.s_addr = htonl(peer == 255 ? INADDR_BROADCAST : 0x0ac90000 | peer);
	sa.sin_port = htons((uint16_t)to);
	return !peer || !connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ? fd : -1;
}

/* the veth pair, its bottom half on the victim, the sockets: 0, or an exit code */
static int lab_build(void)
{
	char path[96], v[KR_CPUMASK_LEN], if_c[16];
	int r = 0, small = 4096, seg = 1400, big = 64 << 20;

	if ((lab.ns_c = kr_netns_new()) < 0 || (lab.ns_s = kr_netns_new()) < 0)
		return kr_skip(125, "needs network namespaces: %s", strerror(errno));
	snprintf(if_c, 16, "kr%xc", (unsigned)getpid());
	snprintf(lab.if_s, 16, "kr%xs", (unsigned)getpid());
	if (kr_veth_create(lab.ns_c, if_c, "10.201.0.1/24", lab.ns_s, lab.if_s, "10.201.0.2/24"))
		return errno == EOPNOTSUPP || errno == ENOENT
			       ? kr_skip(125, "needs veth (CONFIG_VETH): %s", strerror(errno))
			       : kr_error("cannot create the veth pair: %s", strerror(errno));
	snprintf(path, sizeof(path), "class/net/%s/threaded", lab.if_s);
	if (lab.napi) {
		/* GRO on: UDP takes the peer's NAPI path only when the sender has no TSO */
		if (kr_netns_ethtool(lab.ns_c, if_c, &(struct ethtool_value){ ETHTOOL_STSO, 0 }) ||
		    kr_netns_ethtool(lab.ns_s, lab.if_s, &(struct ethtool_value){ ETHTOOL_SGRO, 1 }) ||
		    kr_netns_sysfs_write(lab.ns_s, path, "1"))
			return kr_skip(125, "needs threaded NAPI on veth (v5.13): %s", strerror(errno));
		snprintf(path, sizeof(path), "napi/%.9s-*", lab.if_s); /* comm: 15 characters */
	} else {
		snprintf(path, sizeof(path), "class/net/%s/queues/rx-*/rps_cpus", lab.if_s);
		if (kr_netns_sysfs_write(lab.ns_s, path, kr_cpus_mask(&(struct kr_cpus){
				 1, &lab.victim }, 0, v, sizeof(v))))
			return errno == EINVAL ? kr_skip(129, "RPS refuses CPU %d (isolated?)",
							 lab.victim)
					       : kr_skip(125, "needs RPS: %s", strerror(errno));
		/* v6.10+: the RPS backlog's thread, where there is one */
		snprintf(path, sizeof(path), "backlog_napi/%d", lab.victim);
		lab.nbh = kr_find_kthreads(path, lab.bh + 1, 1) == 1;
		snprintf(path, sizeof(path), "ksoftirqd/%d", lab.victim);
	}
	if ((r = kr_find_kthreads(path, lab.bh, lab.napi ? MAX_BH : 1)) <= 0)
		return kr_skip(125, "no %s thread", path);
	lab.nbh += r;
	for (int i = 0; lab.napi && i < lab.nbh; i++) /* they die with the namespace: no undo */
		if (kr_pin(lab.bh[i], lab.victim))
			return kr_error("cannot pin %d: %s", (int)lab.bh[i], strerror(errno));
	/* the burst: a broadcast to 8 sinks never read (the victim segments, then drops) */
	lab.echo_fd = udp(lab.ns_s, 2, 7007, 1, 7008);
	lab.probe_fd = udp(lab.ns_c, 1, 7008, 2, 7007);
	lab.burst_fd = udp(lab.ns_c, 1, 0, 255, 7009);
	for (int i = 0; i < 8 && r >= 0; i++)
		r = setsockopt(udp(lab.ns_s, 0, 7009, 0, 0), SOL_SOCKET, SO_RCVBUF, &small, 4);
	if (r < 0 || lab.echo_fd < 0 || lab.probe_fd < 0 || lab.burst_fd < 0)
		return kr_error("lab sockets: %s", strerror(errno));
	setsockopt(lab.burst_fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
	lab.gso = !setsockopt(lab.burst_fd, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg));
	lab.burst = !lab.napi && lab.nbh == 1 && cfg.burst;
	return 0;
}

/* ---- one window ---- */

static struct {
	int n;
	int64_t t0, t_end;
	struct { int64_t sent, rtt; enum phase ph; } p[MAX_PROBES]; /* ns; rtt < 0: no echo */
} c;

/* A probe (number, send time) every interval from t0 to t_end; the echo server too; the
 * echoes until all came back or 300 ms passed (no RX timestamp: NAPI's is after the stall) */
static void *client_main(void *arg)
{
	int64_t next = c.t0, drain = c.t_end + 300 * MS, m[2];
	int pending = 0;

	for (;;) {
		int64_t now = kr_now_ns(), wait = (next < c.t_end ? next : drain) - now;
		if (next < c.t_end && wait <= 0 && c.n < MAX_PROBES) {
			c.p[c.n].sent = now, c.p[c.n].rtt = -1;
			m[0] = c.n++, m[1] = now;
			pending += send(lab.probe_fd, m, sizeof(m), 0) == sizeof(m);
			next += cfg.interval_ns;
			continue;
		}
		if (next >= c.t_end && (pending <= 0 || now >= drain))
			return arg;
		struct timespec ts = { wait > 0 ? wait / 1000000000 : 0,
				       wait > 0 ? wait % 1000000000 : 0 };
		struct pollfd pfd[2] = { { lab.echo_fd, POLLIN, 0 }, { lab.probe_fd, POLLIN, 0 } };
		ppoll(pfd, 2, &ts, NULL);
		while (recv(lab.echo_fd, m, sizeof(m), MSG_DONTWAIT) == sizeof(m))
			send(lab.echo_fd, m, sizeof(m), 0);
		while (recv(lab.probe_fd, m, sizeof(m), MSG_DONTWAIT) == sizeof(m))
			if (m[0] >= 0 && m[0] < c.n && c.p[m[0]].sent == m[1] && c.p[m[0]].rtt < 0)
				c.p[m[0]].rtt = kr_now_ns() - m[1], pending--;
	}
}

static struct {
	int64_t deadline;
	_Atomic int64_t started, ended;
	atomic_bool stolen, stop;	/* the canary ran in the window; it must stop */
	int fired;			/* the watchdog stopped the burner (-1: none armed) */
} b;

static void *burner_main(void *arg)
{
	struct kr_watchdog *w = kr_watchdog_arm(kr_gettid(), b.deadline);

	atomic_store(&b.started, kr_now_ns());
	while (w && kr_now_ns() < b.deadline)
		; /* own the CPU: nothing below this priority runs here */
	atomic_store(&b.ended, kr_now_ns());
	b.fired = w ? kr_watchdog_disarm(w) : -1;
	return arg;
}

/* on the victim: it runs while the burner burns only if RT throttling stopped it */
static void *canary_main(void *arg)
{
	kr_set_sched(0, SCHED_IDLE, 0);
	while (!atomic_load(&b.stop))
		if (atomic_load(&b.started) && !atomic_load(&b.ended))
			atomic_store(&b.stolen, true);
	return arg;
}

/* RPS: the burst, back to back: a fast victim drains a paused one */
static struct {
	int cpu;
	long sent, most;		/* datagrams (no UDP GSO: 44 x as many) */
	atomic_long tried;
	int64_t end;
	atomic_bool stop;
	pthread_t t;
} s;

static void *sender_main(void *arg)
{
	static char buf[44 * 1400]; /* 44 segments */

	for (long i = 0; !s.stop && i < s.most; s.tried = ++i)
		s.sent += send(lab.burst_fd, buf, lab.gso ? sizeof(buf) : 1200, MSG_DONTWAIT) > 0;
	s.end = kr_now_ns();
	return arg;
}

static struct {
	struct rtt in, out;
	int polls[MAX_BH], runnable[MAX_BH];	/* each thread's state, every 1 ms */
	bool ran[MAX_BH], woken;
	uint64_t net[3];			/* the victim's, as softnet_row() */
	int64_t ws;				/* the burner's start */
	const char *stop;			/* why the burst ended */
	enum kr_verdict v;
} w;

static void burst_stop(const char *why)
{
	s.stop = true;
	pthread_join(s.t, NULL);
	w.stop = why;
}

static int measure(const struct kr_opts *o)
{
	int64_t dur = (int64_t)(o->duration_s * 1e9), now, we;
	int64_t guard = 2 * cfg.interval_ns > 20 * MS ? 2 * cfg.interval_ns : 20 * MS;
	static double in[MAX_PROBES], out[MAX_PROBES];
	long sw0[MAX_BH];
	int nin = 0, nout = 0, sin = 0, gin = 0, sout = 0;
	uint64_t net0[3] = { 0 }, net1[3] = { 0 };
	struct kr_taskstat ts;
	pthread_t ct, bt, kt;

	memset(&w, 0, sizeof(w));
	memset(&b, 0, sizeof(b));
	s.tried = 0;
	s.sent = s.end = 0, s.most = cfg.burst * (lab.gso ? 1 : 44);
	s.stop = false;
	c.n = 0, c.t0 = kr_now_ns() + 5 * MS, c.t_end = c.t0 + dur;
	/* on an error the process ends; the client 0.3 s after its last probe */
	if (kr_thread_start(&ct, lab.other, SCHED_OTHER, 0, client_main, NULL) ||
	    kr_thread_start(&kt, lab.victim, SCHED_OTHER, 0, canary_main, NULL))
		return kr_error("thread: %s", strerror(errno));
	kr_sleep_until_ns(c.t0 + (dur - cfg.window_ns) / 2);
	softnet(net0);
	b.deadline = kr_now_ns() + cfg.window_ns;
	if (kr_thread_start(&bt, lab.victim, SCHED_FIFO, (int)cfg.prio, burner_main, NULL))
		return kr_error("burner thread: %s", strerror(errno));
	while (!(w.ws = atomic_load(&b.started)))
		kr_sleep_ns(100000);
	for (int i = 0; i < lab.nbh; i++)
		sw0[i] = switches(lab.bh[i]);
	if (lab.burst && kr_thread_start(&s.t, s.cpu, SCHED_OTHER, 0, sender_main, NULL))
		return kr_error("sender thread: %s", strerror(errno));
	/* Watch every 1 ms (0.25 ms in the burst: until a wake, drops, --burst or window/5) */
	while ((now = kr_now_ns()) < b.deadline - 2 * MS) {
		for (int i = 0; i < lab.nbh; i++)
			if (!kr_read_taskstat(lab.bh[i], &ts))
				w.polls[i]++, w.runnable[i] += ts.state == 'R';
		if (lab.burst && !w.stop) {
			softnet(net1);
			const char *why = w.runnable[0] || switches(lab.bh[0]) != sw0[0] ? ""
				: net1[1] > net0[1] ? " full" : s.tried >= s.most ||
				now > w.ws + cfg.window_ns / 5 ? " no wake" : NULL;
			if (why)
				burst_stop(why);
		}
		kr_sleep_ns(lab.burst && !w.stop ? MS / 4 : MS);
	}
	if (lab.burst && !w.stop)
		burst_stop(" no wake");
	for (int i = 0; i < lab.nbh; i++)
		w.ran[i] = switches(lab.bh[i]) != sw0[i], w.woken |= w.runnable[i] || w.ran[i];
	pthread_join(bt, NULL);
	atomic_store(&b.stop, true);
	pthread_join(kt, NULL);
	softnet(net1);
	pthread_join(ct, NULL);
	if (b.fired && !b.stolen) /* throttled past its deadline: not counted, below */
		return kr_error(b.fired < 0 ? "no RT watchdog: the burner did not run"
					    : "the watchdog had to stop the burner");
	for (int k = 0; k < 3; k++)
		w.net[k] = net1[k] - net0[k];
	we = atomic_load(&b.ended);
	for (int i = 0; i < c.n; i++) {
		int64_t sent = c.p[i].sent, rtt = c.p[i].rtt;
		/* lost while the victim dropped packets: held until the burner ended */
		double ms = (double)(rtt >= 0 ? rtt : w.net[1] ? we - sent : 0) / 1e6;
		c.p[i].ph = probe_phase(sent, rtt, w.ws, s.end ? s.end + guard : w.ws,
					we, guard);
		if (c.p[i].ph == PHASE_IN && (sin++, gin += rtt >= 0, rtt >= 0 || w.net[1]))
			in[nin++] = ms;
		else if (c.p[i].ph == PHASE_OUT && (sout++, rtt >= 0))
			out[nout++] = ms;
	}
	w.in = rtt_of(in, nin, sin, gin);
	w.out = rtt_of(out, nout, sout, nout);
	w.v = w.woken && !b.stolen ? window_rule(&w.in, &w.out, o->threshold, cfg.ratio) : KR_SKIP;
	return 0;
}

static int run(const struct kr_opts *o)
{
	static enum kr_verdict v[101];
	static double in_p50[101];
	int64_t dur = (int64_t)(o->duration_s * 1e9), end;
	int r, tries = 0, n = 0, nwoken = 0, nstolen = 0, npass = 0, nfail = 0;
	uint64_t skbs = 0, drops = 0;
	double out_p50 = NAN;
	struct kr_cpus usable;
	char why[200];
	pthread_t t;

	lab.napi = cfg.napi > 0 || (cfg.napi < 0 && o->trigger);
	kr_usable_cpus(&usable);
	r = kr_cpu_pick(&usable, o->cpu, &lab.victim, &lab.other);
	s.cpu = lab.other; /* or a third CPU */
	for (int i = 0; i < usable.n && s.cpu == lab.other; i++)
		if (usable.cpu[i] != lab.victim && usable.cpu[i] != lab.other)
			s.cpu = usable.cpu[i];
	kr_cpus_free(&usable);
	if (r < 0 || lab.other < 0)
		return kr_skip(129, "needs 2 usable CPUs (victim, client): %s",
			       kr_cpus_unusable(why, sizeof(why)));
	/* may we start the burner's watchdog, at SCHED_FIFO 99? (b.stop: the canary returns) */
	atomic_store(&b.stop, true);
	if (kr_thread_start(&t, -1, SCHED_FIFO, 99, canary_main, NULL))
		return errno == EPERM ? kr_skip(129, "SCHED_FIFO refused: needs CAP_SYS_NICE and "
						"RT time (cpu.rt_runtime_us)")
				      : kr_error("SCHED_FIFO thread: %s", strerror(errno));
	pthread_join(t, NULL);
	kr_env_standard(env_knobs);
	kr_params("path=%s cpu=%d mitigate=%s", lab.napi ? "napi" : "ksoftirqd", lab.victim,
		  o->mitigate ? "yes" : "no");
#ifndef KR_MAIL /* the mail form has them as constants on its top */
	kr_params("window=%lldms interval=%.1fms duration=%.2fs prio=%ld threshold=%.1fms "
		  "ratio=%.1f repeat=%d burst=%ld", (long long)(cfg.window_ns / MS),
		  (double)cfg.interval_ns / 1e6, o->duration_s, cfg.prio, o->threshold, cfg.ratio,
		  o->repeat, cfg.burst);
#endif
	kr_online_cpus(&lab.online);
	if (softnet((uint64_t[3]){ 0 }))
		return kr_skip(129, "cannot tell CPU %d's row in /proc/net/softnet_stat",
			       lab.victim);
	if ((r = lab_build()))
		return r;
	if (kr_pin(0, lab.other))
		return kr_error("cannot pin to CPU %d: %s", lab.other, strerror(errno));
	if (report_more)
		report_more(o, -1);
	for (int i = 0; o->mitigate && i < lab.nbh; i++) /* the fix: above the burner */
		if (kr_journal_sched(lab.bh[i], SCHED_FIFO, (int)cfg.prio + 1))
			return kr_error("cannot raise %d: %s", (int)lab.bh[i], strerror(errno));
	/* a window without a wakeup or with the burner throttled does not count: another,
	 * until repeat counted, 2 x repeat + 1 tried or 2.2 x their time passed */
	end = kr_now_ns() + (int64_t)(2.2 * o->repeat * (double)(dur + 100 * MS));
	kr_say("\nRTT ms      p50 in   out   lost in  NET_RX skbs drop sq");
	while (n < o->repeat && tries < 2 * o->repeat + 1 &&
	       (tries < o->repeat || kr_now_ns() + dur + 350 * MS <= end)) {
		if ((r = measure(o)))
			return r;
		kr_say("rep %-2d %9.3f %8.3f %4d/%-4d %10llu %4llu %2llu", ++tries, w.in.p50,
		       w.out.p50, w.in.sent - w.in.got, w.in.sent, (unsigned long long)w.net[0],
		       (unsigned long long)w.net[1], (unsigned long long)w.net[2]);
		if (report_more)
			report_more(o, tries);
		nwoken += w.woken, nstolen += b.stolen, skbs += w.net[0], drops += w.net[1];
		out_p50 = fmax(out_p50, w.out.p50);
		if (w.v != KR_SKIP)
			v[n] = w.v, in_p50[n++] = w.in.p50;
	}
	if (report_more)
		report_more(o, 0);
	enum kr_verdict verdict = n ? kr_vote(v, n, &npass, &nfail) : KR_SKIP;
	double med = n ? (kr_stats(in_p50, (size_t)n, &(struct kr_stats){ 0 }), in_p50[n / 2])
		       : NAN;
	if (nstolen == tries)
		return kr_skip(129, "RT throttling stopped the burner (cpu.rt_runtime_us?)");
	if (!nwoken && lab.burst && skbs && !drops) /* the victim kept up: any kernel */
		return kr_skip(129, "this machine is too fast: CPU %d kept up with the burst",
			       lab.victim);
	if (!n)
		return kr_inconclusive(med, nwoken ? "too few echoes in %d windows"
					    : "no bottom-half thread woken in %d windows", tries);
	if (verdict == KR_SKIP)
		return kr_inconclusive(med, "windows disagree: %d pass, %d fail", npass, nfail);
	if (n < 2 && o->repeat >= 2)
		return kr_inconclusive(med, "%d of %d windows counted, need 2", n, tries);
	if (verdict == KR_PASS && lab.nbh == 1 && !lab.napi && !o->mitigate)
		kr_say("ksoftirqd was starved and the softirqs still ran (at irq exit)");
	return kr_verdict(verdict, med, "out_p50_max=%.3fms woken=%d/%d", out_p50, nwoken, tries);
}

static const struct kr_prog prog = {
	.name = "rt_starve",
	.flags = KR_NEEDS_ROOT | KR_NEEDS_KTHREADS | KR_OPT_CPU | KR_OPT_TRIGGER | KR_OPT_MITIGATE |
		 KR_OPT_REPEAT,
	.metric = "in_p50", .unit = "ms", .threshold = 20, .threshold_min = 1,
	.threshold_max = 900,
	.rule = "FAIL when the median RTT of probes sent in the burner window exceeds the "
		"threshold and --ratio times the median outside it, in every counted window; "
		"a window counts when a bottom-half thread was woken in it",
	.duration_s = 1.2, .duration_max_s = 30, .repeat = 3, .run = run,
};

/* ---- the command line (not in the mail form) ---- */

static const struct kr_option options[] = {
	KR_ARG_CHOICE("path", "ksoftirqd|napi", cfg.napi,
		      "the bottom half: RPS (ksoftirqd) or threaded NAPI"),
	KR_ARG_TIME("window", cfg.window_ns, "ms", 50 * MS, 900 * MS,
		    "burner time per repeat, 50ms-900ms (500ms)"),
	KR_ARG_TIME("interval", cfg.interval_ns, "ms", 1 * MS, 50 * MS,
		    "probe spacing, 1ms-50ms (5ms)"),
	KR_ARG_LONG("prio", "N", cfg.prio, 1, 98, "the burner's SCHED_FIFO priority (50)"),
	KR_ARG_DOUBLE("ratio", "X", cfg.ratio, 1, 1e6,
		      "FAIL also needs in_p50 > X x out_p50 (10)"),
	KR_ARG_LONG("burst", "N", cfg.burst, 0, 100000,
		    "RPS: at most N 61.6 KB UDP GSO datagrams (1000)"),
	{ .name = NULL },
};

/* the full report's tallies over the windows */
static struct {
	char name[MAX_BH][16];	/* each thread's comm */
	int woken[MAX_BH];	/* windows in which each was woken */
	int windows, counted, nwoken;
} seen;

/* report_more(): the lab's threads; per window each thread's state, the burst, why it
 * did not count and the probes (--csv); at the end how often the last thread was woken */
static void report_full(const struct kr_opts *o, int when)
{
	struct kr_taskstat ts;

	if (when < 0) {
		kr_say("%s on %s -> CPU %d; client and echo server on CPU %d",
		       lab.napi ? "threaded NAPI" : "RPS", lab.if_s, lab.victim, lab.other);
		for (int i = 0; i < lab.nbh; i++) {
			bool ok = !kr_read_taskstat(lab.bh[i], &ts);
			snprintf(seen.name[i], 16, "%.15s", ok ? ts.comm : "(gone)");
			kr_say("  %s pid %d: %s %d", seen.name[i], (int)lab.bh[i],
			       ok ? kr_policy_name(ts.policy) : "-", ok ? ts.rt_priority : 0);
		}
		kr_say("burner SCHED_FIFO %ld%s%s", cfg.prio, o->mitigate ? "; bottom half "
		       "raised above it" : "", lab.burst ? "; a burst at the window start" : "");
		kr_csv_open("repeat,seq,sent_ms_from_window_start,rtt_ms,phase");
		kr_progress("window 1 (0 of %d counted)", o->repeat);
		return;
	}
	if (!when) {
		kr_measure("bh_woken_repeats", seen.nwoken);
		kr_say("\n%s: woken in %d of %d windows, %d counted", seen.name[lab.nbh - 1],
		       seen.woken[lab.nbh - 1], seen.windows, seen.counted);
		return;
	}
	for (int i = 0; i < c.n; i++)
		kr_csv_row("%d,%d,%.3f,%.3f,%d", when, i, (double)(c.p[i].sent - w.ws) / 1e6,
			   c.p[i].rtt >= 0 ? (double)c.p[i].rtt / 1e6 : NAN, c.p[i].ph);
	for (int i = 0; i < lab.nbh; i++) {
		seen.woken[i] += w.runnable[i] || w.ran[i];
		kr_say("  %-15s %s: runnable %d/%d polls%s", seen.name[i],
		       w.runnable[i] || w.ran[i] ? "woken" : "not woken", w.runnable[i],
		       w.polls[i], w.ran[i] ? ", ran" : "");
	}
	if (w.stop)
		kr_say("  burst %ld in %.1f ms%s", s.sent, s.end ? (double)(s.end - w.ws) / 1e6
		       : 0, w.stop);
	if (w.v == KR_SKIP)
		kr_say("  not counted: %s", b.stolen ? "RT throttling stopped the burner"
		       : !w.woken ? "no bottom-half thread woken" : "too few echoes");
	seen.windows = when, seen.counted += w.v != KR_SKIP, seen.nwoken += w.woken;
	kr_progress("window %d (%d of %d counted)", when + 1, seen.counted, o->repeat);
}

/* on FAIL: the thread that was starved, and why kernel k runs the bottom half there */
static const char *bh_cause(bool napi, bool backlog_woken, const struct kr_kernel *k)
{
	const char *why;

	if (napi)
		return "threaded NAPI: napi/DEV-N is SCHED_OTHER, below any RT task";
	if (backlog_woken)
		return (why = kr_backlog_threaded_from(k)) ? why : "backlog_napi/N threads "
			"exist: the RPS backlog runs in them";
	return (why = kr_softirq_threaded_from(k)) ? why
		: "4cd13c21b207 (v4.9) until its revert d15121be7485 (v6.5)";
}

static void causes(const struct kr_opts *o)
{
	(void)o;
	kr_cause("an RT task busy on the CPU of the network bottom half");
	kr_cause("%s", bh_cause(lab.napi, lab.nbh > 1 && seen.woken[1], kr_kernel_self()));
	/* 6.12's fair server (a deadline server for CFS tasks) is no remedy within a window:
	 * a 6.12 guest's NAPI path FAILed 4/4 with it at 50 ms a second and at 0 */
	int major = 0, minor = 0;
	if (sscanf(kr_kernel_self()->release, "%d.%d", &major, &minor) == 2 &&
	    (major > 6 || (major == 6 && minor >= 12)))
		kr_cause("not the fair server's budget: 6.12+ gives CFS 50 ms a second "
			 "(debugfs sched/fair_server), and a FAIL came with it and at 0");
}

static int validate(const struct kr_opts *o)
{
	if ((int64_t)(o->duration_s * 1e9) < cfg.window_ns + 200 * MS)
		return kr_usage_error("--duration: at least --window + 200ms (%.3f s)",
				      (double)(cfg.window_ns + 200 * MS) / 1e9);
	if (cfg.interval_ns * 4 > cfg.window_ns)
		return kr_usage_error("--interval: at most a quarter of --window");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct kr_cli cli = {
		.summary = "an RT task on the packet-processing CPU starves the bottom half",
		.description =
			"A veth pair joins two network namespaces; a client sends a UDP probe\n"
			"every --interval to an echo server, both on a CPU other than the\n"
			"victim (--cpu, default the last), which runs the server veth's bottom\n"
			"half: --path ksoftirqd (RPS; a burst of UDP GSO datagrams at the\n"
			"window start forces the softirq deferral; where the RPS backlog has a\n"
			"thread, backlog_napi/N) or napi (threaded NAPI, its kthread pinned\n"
			"there). In the middle of each repeat (--duration, 1.2 s) a SCHED_FIFO\n"
			"loop owns the victim for --window; round trips of probes sent in the\n"
			"window are compared with the others. 20 ms: starved windows gave\n"
			"medians of 180-270 ms, healthy ones < 8 ms (TCG guests).\n"
			"Kernels: ksoftirqd FAILs from 4cd13c21b207 (v4.9) to its revert\n"
			"d15121be7485 (v6.5); threaded NAPI, backlog_napi, threadirqs and\n"
			"PREEMPT_RT on every kernel. A window counts when a bottom-half thread\n"
			"was woken in it and no RT throttling stopped the burner.\n"
			"--trigger is --path napi; --mitigate raises the bottom-half threads\n"
			"to SCHED_FIFO prio+1 for the run (restored after).",
		.example = "rt_starve --path napi --mitigate",
		.options = options,
		.validate = validate,
		.causes = causes,
		.subsystem = "softirq", .kernel_file = "kernel/softirq.c",
		.mail_list = "linux-kernel@vger.kernel.org",
	};
	static const char *const knobs[] = { "group:rt_throttling", "group:thread_policies",
		"sysctl:net.core.netdev_budget", "sysctl:net.core.netdev_budget_usecs",
		"sysctl:net.core.netdev_max_backlog", "config:CONFIG_HZ", "config:CONFIG_PREEMPT_RT",
		NULL };

	env_knobs = knobs, report_more = report_full;
	return kr_main(&prog, &cli, argc, argv);
}
