// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: RT I/O threads starve the kworkers that complete their own direct I/O.
 *
 * iomap (fs/iomap/direct-io.c) completes an async O_DIRECT write in the filesystem's
 * per-superblock "dio/<dev>" workqueue. It is bound: a SCHED_OTHER kworker/N:M of the CPU
 * where the bio completed (where the device's interrupt landed) runs the work. A SCHED_FIFO
 * thread that keeps that CPU busy (an RT storage service polling its completions) starves
 * the kworker that must finish its writes: only RT throttling's ~50 ms/s lets them through.
 * A synchronous write completes in the caller and is immune.
 *
 * Workload: 4 KiB random O_DIRECT writes (io_uring, queue depth 32) into a file prepared
 * outside the timed windows, from a submitter pinned to the completion CPU: SCHED_OTHER
 * sleeping for completions (baseline), then SCHED_FIFO 40 busy-polling (test).
 * Verdict: test IOPS / baseline IOPS.
 */
#include "krepro.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <liburing.h>
#include <limits.h>
#include <linux/magic.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define DIO_BLOCK 4096
/* The RT storage service: above SCHED_OTHER kworkers, below the FIFO 50 of threaded IRQ
 * handlers (threadirqs, PREEMPT_RT), which would starve instead (another phenomenon). */
#define SUBMITTER_PRIO 40
#define KWORKER_PRIO 45	  /* --mitigate: above the submitter, still below IRQ threads */
#define MITIGATOR_PRIO 46 /* the thread re-applying it must not be starved either */
#define RT_PHASE_MAX_NS 3000000000LL
#define MAX_IRQS 64
#define MAX_DISKS 8
#define DIO_IRQ_MIN 20 /* fewer device interrupts in a phase tell nothing */

static struct {
	const char *dir;
	uint64_t size;
	int iodepth;
	bool written, control, sync;
} cfg = { ".", 1ULL << 30, 32, false, false, false };

/* ratio = test/baseline IOPS, FAIL below threshold. When the control (the same RT
 * submitter on another CPU; NAN when not run) is slow too, the RT submitter itself is
 * the problem, not its completion CPU: inconclusive. No baseline I/O: error. */
static enum kr_verdict dio_kworker_rule(double baseline_iops, double test_iops,
					double control_iops, double threshold)
{
	if (!(baseline_iops > 0) || !(test_iops >= 0))
		return KR_ERROR;
	if (!isnan(control_iops) && control_iops / baseline_iops < threshold)
		return KR_SKIP;
	return test_iops / baseline_iops < threshold ? KR_FAIL : KR_PASS;
}

/* ---- offsets: every block of the file once, in random order ---- */

static struct dio_offsets {
	uint64_t nblocks, mask, seed;
	int half;
	_Atomic uint64_t next;
} offsets;

static void dio_offsets_init(struct dio_offsets *o, uint64_t nblocks, uint64_t seed)
{
	int bits = 1;

	while ((1ULL << bits) < nblocks)
		bits++;
	*o = (struct dio_offsets){ .nblocks = nblocks, .mask = (1ULL << bits) - 1,
				   .seed = seed & ((1ULL << bits) - 1), .half = bits > 1 ? bits / 2 : 1 };
}

/* A bijection of [0, nblocks) (odd multiplications and xorshifts modulo 2^bits, cycle-
 * walking): like fio's random map, each block once before any twice (fresh extents). */
static uint64_t dio_permute(const struct dio_offsets *o, uint64_t x)
{
	do {
		x = ((x ^ o->seed) * 0x9E3779B97F4A7C15ULL) & o->mask;
		x ^= x >> o->half;
		x = (x * 0xD6E8FEB86659FD93ULL) & o->mask;
		x ^= x >> o->half;
	} while (x >= o->nblocks);
	return x;
}

static off_t dio_next_offset(struct dio_offsets *o)
{
	return (off_t)(dio_permute(o, atomic_fetch_add(&o->next, 1) % o->nblocks) * DIO_BLOCK);
}

/* ---- the disks under the filesystem, and the interrupts completing their I/O ---- */

struct dio_device {
	char name[64], chain[160], irq_desc[128]; /* "dm-0", "dm-0 -> vda,vdb", "IRQ 36 ..." */
	char disks[MAX_DISKS][64], msi[MAX_DISKS * 2][PATH_MAX]; /* PCI functions' msi_irqs */
	int ndisks, nmsi, nirq, rq_affinity, irqs[MAX_IRQS];
	struct kr_cpus irq_cpus; /* the queue IRQs' effective affinity */
};

/* A block device (disk or partition) -> the disks that carry its I/O, through the slaves
 * of device-mapper and md devices */
static void dio_leaves(const char *dev, struct dio_device *d, int depth)
{
	char real[PATH_MAX], path[PATH_MAX + 16];
	glob_t g;

	if (depth > 8 || !realpath(dev, real))
		return;
	snprintf(path, sizeof(path), "%s/partition", real);
	if (access(path, F_OK) == 0)
		*strrchr(real, '/') = 0; /* a partition: its disk is the parent */
	snprintf(path, sizeof(path), "%s/slaves/*", real);
	if (glob(path, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			dio_leaves(g.gl_pathv[i], d, depth + 1);
		globfree(&g);
		return;
	}
	for (int i = 0; i < d->ndisks; i++)
		if (!strcmp(d->disks[i], strrchr(real, '/') + 1))
			return;
	if (d->ndisks < MAX_DISKS)
		snprintf(d->disks[d->ndisks++], sizeof(d->disks[0]), "%s", strrchr(real, '/') + 1);
}

/* adds the msi_irqs of the PCI function at or above a device directory, once */
static int dio_msi_add(struct dio_device *d, const char *dev)
{
	char real[PATH_MAX], path[PATH_MAX];

	if (!realpath(dev, real))
		return -1;
	for (int up = 0; up < 6 && strrchr(real, '/') > real; up++, *strrchr(real, '/') = 0) {
		if (snprintf(path, sizeof(path), "%s/msi_irqs", real) >= (int)sizeof(path) ||
		    access(path, F_OK))
			continue;
		for (int i = 0; i < d->nmsi; i++)
			if (!strcmp(d->msi[i], path))
				return 0;
		if (d->nmsi < MAX_DISKS * 2)
			memcpy(d->msi[d->nmsi++], path, sizeof(path));
		return 0;
	}
	return -1;
}

/* The device of the filesystem -> its disks and the PCI functions whose interrupts
 * complete their I/O. A disk on a virtual device (an NVMe multipath head on nvme-subsysN)
 * is tried through the devices listed there (the subsystem's controllers). root prefixes
 * /sys (the tests use a fake tree). */
static void dio_resolve(const char *root, const char *name, struct dio_device *d)
{
	char path[PATH_MAX + 128];
	glob_t g;

	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(path, sizeof(path), "%s/sys/class/block/%s", root, name);
	dio_leaves(path, d, 0);
	size_t o = (size_t)snprintf(d->chain, sizeof(d->chain), "%s", name);
	for (int i = 0; i < d->ndisks; i++) {
		snprintf(path, sizeof(path), "%s/sys/block/%s/device", root, d->disks[i]);
		if (dio_msi_add(d, path) < 0 && strcat(path, "/*/device") &&
		    glob(path, 0, NULL, &g) == 0) {
			for (size_t k = 0; k < g.gl_pathc; k++)
				dio_msi_add(d, g.gl_pathv[k]);
			globfree(&g);
		}
		if (strcmp(d->disks[i], name) && o + 70 < sizeof(d->chain))
			o += (size_t)snprintf(d->chain + o, sizeof(d->chain) - o, "%s%s",
					      i ? "," : " -> ", d->disks[i]);
	}
}

/* the device of st_dev (none on btrfs: an anonymous dev_t), its rq_affinity, and the
 * interrupts of its I/O queues with their effective affinity */
static void dio_find_device(dev_t dev, struct dio_device *d)
{
	char path[PATH_MAX + 64], real[PATH_MAX], iname[64], aff[256];
	uint64_t v;
	struct kr_cpus s;
	glob_t g;

	memset(d, 0, sizeof(*d));
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(dev), minor(dev));
	if (realpath(path, real))
		dio_resolve("", strrchr(real, '/') + 1, d);
	else
		snprintf(d->chain, sizeof(d->chain), "%.60s", path + 15);
	snprintf(path, sizeof(path), "/sys/block/%s/queue/rq_affinity", d->disks[0]);
	d->rq_affinity = d->ndisks && kr_read_u64(path, &v) == 0 ? (int)v : -1;
	for (int m = 0; m < d->nmsi; m++) {
		snprintf(path, sizeof(path), "%s/*", d->msi[m]);
		if (glob(path, 0, NULL, &g))
			continue;
		for (size_t i = 0; i < g.gl_pathc && d->nirq < MAX_IRQS; i++) {
			int irq = atoi(strrchr(g.gl_pathv[i], '/') + 1), q = 0;
			/* virtio's config vector and NVMe's admin queue carry no completions */
			snprintf(path, sizeof(path), "/proc/irq/%d/effective_affinity_list", irq);
			if (kr_irq_name(irq, iname, sizeof(iname)) < 0 ||
			    strstr(iname, "config") || (sscanf(iname, "nvme%*dq%d", &q) == 1 && !q) ||
			    kr_read_file(path, aff, sizeof(aff)) < 0 || kr_cpus_parse(aff, &s) < 0)
				continue;
			for (int k = 0; k < s.n; k++)
				kr_cpus_add(&d->irq_cpus, s.cpu[k]);
			kr_cpus_free(&s);
			if (!d->nirq)
				snprintf(d->irq_desc, sizeof(d->irq_desc), "IRQ %d %s", irq, iname);
			d->irqs[d->nirq++] = irq;
		}
		globfree(&g);
	}
}

/* adds (sign 1) or subtracts (-1) the device's interrupts so far, by CPU number */
static void dio_irq_count(const struct dio_device *d, uint64_t *per_cpu, int sign)
{
	static uint64_t c[KR_MAX_CPUS];

	for (int i = 0; i < d->nirq; i++)
		if (kr_irq_counts(d->irqs[i], c, KR_MAX_CPUS) == 0)
			for (int j = 0; j < KR_MAX_CPUS; j++)
				per_cpu[j] += (uint64_t)sign * c[j];
}

/* ---- one phase: submitters, samples, figures ---- */

struct dio_phase {
	const char *name;
	int cpu, fd, err, rt_err, raised; /* rt_err 1: no watchdog, 2: SCHED_FIFO refused */
	bool rt;
	int64_t start, end;		  /* the timed window */
	pthread_mutex_t lock;
	size_t n, cap;			  /* the I/Os completed inside the window */
	double *lat_us, *t_s, iops;
	uint64_t irq_cpu[KR_MAX_CPUS];	  /* the device's interrupts in the phase */
};

static void dio_sample(struct dio_phase *ph, int64_t sent, int64_t now)
{
	if (now > ph->end)
		return;
	pthread_mutex_lock(&ph->lock);
	if (ph->n == ph->cap) {
		ph->cap = ph->cap ? 2 * ph->cap : 65536;
		if (!(ph->lat_us = realloc(ph->lat_us, ph->cap * sizeof(double))) ||
		    !(ph->t_s = realloc(ph->t_s, ph->cap * sizeof(double))))
			abort();
	}
	ph->lat_us[ph->n] = (double)(now - sent) / 1e3;
	ph->t_s[ph->n++] = (double)(now - ph->start) / 1e9;
	pthread_mutex_unlock(&ph->lock);
}

static void *dio_buffers(unsigned n)
{
	void *buf;

	if (posix_memalign(&buf, DIO_BLOCK, (size_t)n * DIO_BLOCK))
		return NULL;
	return memset(buf, 0xa5, (size_t)n * DIO_BLOCK); /* not zeroes: no zero detection */
}

/* One write per io_uring_enter, as fio by default (iodepth_batch_submit=1): io_uring
 * plugs batches above two SQEs, the writes wait for each other's ext4 work and reach the
 * device together; batched, the baseline was 0.70-0.80 of fio's IOPS here. */
static int dio_submit(struct io_uring *ring, int fd, char *bufs, int64_t *sent, unsigned slot)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	int r;

	sent[slot] = kr_now_ns();
	io_uring_prep_write(sqe, fd, bufs + (size_t)slot * DIO_BLOCK, DIO_BLOCK,
			    (uint64_t)dio_next_offset(&offsets));
	io_uring_sqe_set_data64(sqe, slot);
	while ((r = io_uring_submit(ring)) == -EINTR)
		;
	return r < 0 ? -r : 0;
}

/* A submitter, pinned, from the phase's start. --sync: one pwrite at a time, completed
 * in the caller. io_uring: iodepth writes in flight, the ring set up like fio's
 * (completions posted when the task asks); SCHED_OTHER sleeps for a completion, RT never
 * sleeps (busy poll). An RT one first arms its watchdog, an unpinned FIFO 99 thread. */
static void *dio_worker(void *arg)
{
	struct dio_phase *ph = arg;
	struct kr_watchdog *wd = NULL;
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	unsigned qd = cfg.sync ? 1 : (unsigned)cfg.iodepth, inflight = 0, head, seen;
	int64_t sent[256], now;
	char *bufs = dio_buffers(qd);
	int r = cfg.sync ? 0 : io_uring_queue_init(qd, &ring, IORING_SETUP_COOP_TASKRUN |
				    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);

	if (r == -EINVAL) /* before 6.1 */
		r = io_uring_queue_init(qd, &ring, 0);
	int err = r < 0 ? -r : bufs ? 0 : ENOMEM, rt_err = 0;
	bool ring_ok = !cfg.sync && r >= 0, stop = cfg.sync || err;
	if (!err && kr_pin(0, ph->cpu) < 0)
		err = errno;
	kr_sleep_until_ns(ph->start);
	if (ph->rt && !err && !(wd = kr_watchdog_arm(kr_gettid(), ph->end + 500000000)))
		err = ECANCELED, rt_err = 1; /* never an RT busy loop without it */
	else if (ph->rt && !err && kr_set_sched(0, SCHED_FIFO, SUBMITTER_PRIO) < 0)
		err = errno, rt_err = 2;
	while (cfg.sync && !err && (now = kr_now_ns()) < ph->end) {
		ssize_t w = pwrite(ph->fd, bufs, DIO_BLOCK, dio_next_offset(&offsets));
		if (w == DIO_BLOCK)
			dio_sample(ph, now, kr_now_ns());
		else
			err = w < 0 ? errno : EIO;
	}
	for (unsigned i = 0; i < qd && !stop; i++)
		if (!(stop = (err = dio_submit(&ring, ph->fd, bufs, sent, i)) != 0))
			inflight++;
	while (inflight > 0) {
		if (stop || !ph->rt)
			r = io_uring_wait_cqe(&ring, &cqe);
		else
			r = io_uring_cq_ready(&ring) ? 0 : io_uring_get_events(&ring);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
			err = -r;
			break;
		}
		now = kr_now_ns();
		if (!stop && now >= ph->end && (stop = true) && ph->rt)
			kr_set_sched(0, SCHED_OTHER, 0); /* leave RT before draining */
		seen = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			unsigned slot = (unsigned)io_uring_cqe_get_data64(cqe);
			seen++, inflight--;
			if (cqe->res != DIO_BLOCK)
				err = cqe->res < 0 ? -cqe->res : EIO, stop = true;
			else
				dio_sample(ph, sent[slot], now);
			if (!stop && !(stop = (err = dio_submit(&ring, ph->fd, bufs, sent, slot)) != 0))
				inflight++;
		}
		io_uring_cq_advance(&ring, seen);
	}
	if (ring_ok)
		io_uring_queue_exit(&ring);
	if (ph->rt)
		kr_set_sched(0, SCHED_OTHER, 0);
	kr_watchdog_disarm(wd);
	free(bufs);
	pthread_mutex_lock(&ph->lock);
	if (err && !ph->err)
		ph->err = err, ph->rt_err = rt_err;
	pthread_mutex_unlock(&ph->lock);
	return NULL;
}

/* --mitigate: kworkers come and go, so keep raising the completion CPU's new ones */
static struct {
	atomic_bool stop;
	int cpu, raised;
} mitigator;

static void *dio_mitigator(void *once)
{
	char glob[32];
	pid_t tids[1024];

	snprintf(glob, sizeof(glob), "kworker/%d:*", mitigator.cpu);
	do
		for (int i = 0, n = kr_find_kthreads(glob, tids, 1024); i < n; i++)
			if (sched_getscheduler(tids[i]) == SCHED_OTHER &&
			    kr_journal_sched(tids[i], SCHED_FIFO, KWORKER_PRIO) == 0)
				mitigator.raised++;
	while (!once && !atomic_load(&mitigator.stop) && (kr_sleep_ns(10000000), true));
	return NULL;
}

static int dio_run_phase(struct dio_phase *ph, const struct dio_device *dev, double duration_s,
			 bool mitigate)
{
	pthread_t th[256], mt;
	int nw = cfg.sync ? cfg.iodepth : 1, n = 0, terr;
	int64_t len = (int64_t)(duration_s * 1e9);

	if (ph->rt && len > RT_PHASE_MAX_NS)
		len = RT_PHASE_MAX_NS;
	kr_progress("%s: %.1f s", ph->name, (double)len / 1e9);
	if (mitigate) {
		mitigator.cpu = ph->cpu;
		mitigator.raised = 0;
		atomic_store(&mitigator.stop, false);
		dio_mitigator(&mitigator); /* once now, then from a thread above the submitter */
		if (kr_thread_start(&mt, -1, SCHED_FIFO, MITIGATOR_PRIO, dio_mitigator, NULL) < 0)
			return errno;
	}
	pthread_mutex_init(&ph->lock, NULL);
	dio_irq_count(dev, ph->irq_cpu, -1);
	ph->start = kr_now_ns() + 20000000; /* the workers start together */
	ph->end = ph->start + len;
	while (n < nw && kr_thread_start(&th[n], -1, SCHED_OTHER, 0, dio_worker, ph) == 0)
		n++;
	terr = n < nw ? errno : 0;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (mitigate) {
		atomic_store(&mitigator.stop, true);
		pthread_join(mt, NULL);
		ph->raised = mitigator.raised;
	}
	dio_irq_count(dev, ph->irq_cpu, 1);
	ph->iops = (double)ph->n / ((double)(ph->end - ph->start) / 1e9);
	return ph->err ? ph->err : terr;
}

/* " cpu0=3278 cpu1=297": the device's interrupts in a phase, on cpu and on every CPU that
 * took any (by number: holes are fine) */
static void dio_irq_list(const struct dio_phase *ph, int cpu, char *out, size_t len)
{
	size_t off = 0;

	out[0] = 0;
	for (int c = 0, shown = 0; c < KR_MAX_CPUS && shown < 6 && off + 32 < len; c++)
		if (c == cpu || ph->irq_cpu[c])
			shown++, off += (size_t)snprintf(out + off, len - off, " cpu%d=%llu", c,
							 (unsigned long long)ph->irq_cpu[c]);
}

/* The CPU that took most of the device's interrupts in a phase (-1: too few to tell) and
 * the share cpu took. Where the interrupt lands, bio_endio runs and queues the dio work. */
static int dio_irq_target(const struct dio_phase *ph, int cpu, double *share)
{
	uint64_t total = 0, best = 0;
	int top = -1;

	for (int c = 0; c < KR_MAX_CPUS; c++) {
		total += ph->irq_cpu[c];
		if (ph->irq_cpu[c] > best)
			best = ph->irq_cpu[c], top = c;
	}
	*share = total ? (double)ph->irq_cpu[cpu] / (double)total : NAN;
	return total >= DIO_IRQ_MIN ? top : -1;
}

/* SCHED_FIFO prio refused: SKIP or ERROR saying why */
static int dio_rt_check(int prio)
{
	char why[200];
	int r = kr_rt_check(prio, why, sizeof(why));

	return !r ? 0 : r == KR_EXIT_ERROR ? kr_error("%s", why) : kr_skip(r, "%s", why);
}

/* before anything changes: a disk filesystem with room, io_uring, SCHED_FIFO */
static int dio_requirements(struct statfs *sfs, struct stat *st)
{
	struct io_uring ring;
	int r = cfg.sync ? 0 : io_uring_queue_init(4, &ring, 0);

	if (r == 0 && !cfg.sync)
		io_uring_queue_exit(&ring);
	if (statfs(cfg.dir, sfs) < 0 || stat(cfg.dir, st) < 0)
		return kr_error("--dir %s: %s", cfg.dir, strerror(errno));
	if (!S_ISDIR(st->st_mode))
		return kr_error("--dir %s: not a directory", cfg.dir);
	if (sfs->f_type == TMPFS_MAGIC || sfs->f_type == RAMFS_MAGIC)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "%s is on tmpfs, which has no direct I/O path: "
			       "give --dir on a disk filesystem", cfg.dir);
	if ((uint64_t)sfs->f_bavail * (uint64_t)sfs->f_bsize < cfg.size + (256ULL << 20))
		return kr_skip(KR_EXIT_SKIP_MACHINE, "needs %llu MiB free in %s",
			       (unsigned long long)(cfg.size >> 20) + 256, cfg.dir);
	if (r == -ENOSYS)
		return kr_skip(KR_EXIT_SKIP, "needs CONFIG_IO_URING");
	if (r == -EPERM)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "io_uring is disabled (kernel.io_uring_disabled)");
	if (r < 0)
		return kr_error("io_uring_queue_init: %s", strerror(-r));
	/* the RT submitter and its FIFO 99 watchdog: refused with EPERM in a cgroup without RT
	 * runtime (RT_GROUP_SCHED), which is not an I/O error */
	return dio_rt_check(99);
}

/* The CPU whose kworkers complete the writes; the submitter is pinned there, so it must be
 * usable (online and in this process's affinity). */
static int dio_pick_cpu(const struct kr_opts *o, const struct dio_device *dev,
			const struct kr_cpus *usable, int *ccpu, int *other, char *how, size_t len)
{
	struct kr_cpus irq_usable;
	char cpus[256], irqs[256];
	bool by_irq = o->cpu < 0 && dev->rq_affinity != 2;

	kr_cpus_and(&dev->irq_cpus, usable, &irq_usable);
	int picked = kr_cpu_pick(&irq_usable, -1, ccpu, other);
	kr_cpus_free(&irq_usable);
	if (by_irq && !dev->nirq)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "cannot tell which CPU completes I/O of %s: %s: "
			       "give --cpu", dev->chain, !dev->ndisks ? "no block device found"
			       : !dev->nmsi ? "no PCI MSI interrupts under it" : "no queue IRQs");
	if (by_irq && picked < 0)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "the I/O of %s completes on CPU %s, outside "
			       "this process's CPUs (%s): start it with that CPU in its affinity "
			       "(taskset)", dev->name, kr_cpus_list(&dev->irq_cpus, irqs,
			       sizeof(irqs)), kr_cpus_unusable(cpus, sizeof(cpus)));
	kr_cpu_pick(usable, by_irq ? *ccpu : o->cpu, ccpu, other);
	if (by_irq && dev->irq_cpus.n == 1)
		snprintf(how, len, "%s: effective affinity %d", dev->irq_desc, *ccpu);
	else
		snprintf(how, len, "%s", o->cpu >= 0 ? "given with --cpu" : !by_irq ? "rq_affinity=2: "
			 "completes on the submitter's CPU" : "queue IRQs on several CPUs: the submitter's");
	if (*ccpu < 0)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "no usable CPU (affinity %s)",
			       kr_cpus_list(usable, cpus, sizeof(cpus)));
	if (cfg.control && *other < 0)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "--control needs 2 usable CPUs");
	return 0;
}

static void dio_param_cpu(int cpu)
{
	char iso[32];

	kr_cpu_isolation(cpu, iso, sizeof(iso));
	kr_param("completion_cpu", "%d%s%s", cpu, *iso ? " " : "", iso);
}

/* ---- the measurement ---- */

/* the test file (its temp dir and name journaled), prepared outside the timed windows */
static int dio_prepare(const char *path, int *fdp)
{
	int fd = *fdp = open(path, O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);

	if (fd < 0)
		return errno == EINVAL ? kr_skip(KR_EXIT_SKIP_MACHINE, "%s does not support O_DIRECT",
						 cfg.dir)
				       : kr_error("create %s: %s", path, strerror(errno));
	if (fallocate(fd, 0, 0, (off_t)cfg.size) < 0)
		return errno == EOPNOTSUPP ? kr_skip(KR_EXIT_SKIP_MACHINE, "the filesystem of %s "
						     "has no fallocate()", cfg.dir)
					   : kr_error("fallocate %s: %s", path, strerror(errno));
	char *buf = cfg.written ? dio_buffers(256) : NULL;
	for (uint64_t off = 0; buf && off < cfg.size; off += 256 * DIO_BLOCK)
		if (pwrite(fd, buf, 256 * DIO_BLOCK, (off_t)off) != 256 * DIO_BLOCK)
			return kr_error("filling %s: %s", path, strerror(errno));
	free(buf);
	if ((cfg.written && !buf) || fsync(fd) < 0)
		return kr_error("filling %s: %s", path, buf ? strerror(errno) : "out of memory");
	return 0;
}

/* A phase's outcome: 0, or the SKIP/ERROR that ends the run */
static int dio_phase_check(const struct dio_phase *ph, int r)
{
	if (r == EINVAL)
		return kr_skip(KR_EXIT_SKIP_MACHINE, "O_DIRECT writes to %s fail with EINVAL", cfg.dir);
	if (ph->rt_err == 1)
		return kr_error("%s phase: no RT watchdog could be armed: not run at SCHED_FIFO",
				ph->name);
	if (ph->rt_err == 2)
		return (r = dio_rt_check(SUBMITTER_PRIO)) ? r : kr_error("%s phase: SCHED_FIFO %d "
			"refused: %s", ph->name, SUBMITTER_PRIO, strerror(ph->err));
	return r ? kr_error("%s phase: write failed: %s", ph->name, strerror(r)) : 0;
}

/* the table, csv rows and JSON figures of a repeat ("r2_test_iops" with --repeat) */
static void dio_report(struct dio_phase *ph, int np, int rep, const char *prefix, bool irqs,
		       bool mitigate)
{
	const char *keys[] = { "iops", "lat_p50_us", "lat_p99_us", "lat_max_us" };
	char key[64], pol[16], at[256];
	struct kr_stats st;

	kr_say("  %-9s %-4s %-8s %8s %9s %9s %9s", "phase", "cpu", "policy", "IOPS", "p50 us",
	       "p99 us", "max us");
	for (struct dio_phase *p = ph; p < ph + np; p++) {
		for (size_t i = 0; i < p->n; i++)
			kr_csv_row("%d,%s,%.6f,%.1f", rep, p->name, p->t_s[i], p->lat_us[i]);
		kr_stats(p->lat_us, p->n, &st);
		double v[] = { p->iops, kr_percentile(p->lat_us, p->n, 50),
			       kr_percentile(p->lat_us, p->n, 99), st.max };
		for (int i = 0; i < 4; i++) {
			snprintf(key, sizeof(key), "%s%s_%s", prefix, p->name, keys[i]);
			kr_measure(key, v[i]);
		}
		snprintf(pol, sizeof(pol), p->rt ? "FIFO %d" : "OTHER", SUBMITTER_PRIO);
		kr_say("  %-9s %-4d %-8s %8.0f %9.0f %9.0f %9.0f", p->name, p->cpu, pol, v[0],
		       v[1], v[2], v[3]);
		free(p->lat_us);
		free(p->t_s);
	}
	for (int i = 0; i < 2 && irqs; i++) {
		dio_irq_list(&ph[i], ph[0].cpu, at, sizeof(at));
		kr_say("  device IRQs in %s:%s", ph[i].name, at[0] ? at : " none");
	}
	if (mitigate) {
		kr_say("  kworker/%d:* raised to FIFO %d in test: %d", ph[0].cpu, KWORKER_PRIO,
		       ph[1].raised);
		kr_measure("kworkers_raised", ph[1].raised);
	}
	kr_say("  test/baseline = %.3f", ph[1].iops / ph[0].iops);
	if (np > 2)
		kr_say("  control/baseline = %.3f", ph[2].iops / ph[0].iops);
}

static int dio_run(const struct kr_opts *o)
{
	struct statfs sfs;
	struct stat st;
	static struct dio_device dev; /* static: its CPU lists stay reachable to the end */
	struct dio_phase ph[3];
	static struct kr_cpus usable;
	char how[200], rq[128], sched[128], dir[PATH_MAX], tmp[PATH_MAX];
	char path[PATH_MAX + 16], at[256], key[96];
	int r, fd = -1, ccpu = -1, other = -1, np = cfg.control ? 3 : 2;
	enum kr_verdict votes[100];
	double ratios[100], share;
	uint64_t seed = o->seed ? o->seed : 0x5eed;

	if ((r = dio_requirements(&sfs, &st)) != 0)
		return r;
	dio_find_device(st.st_dev, &dev);
	kr_usable_cpus(&usable);
	if ((r = dio_pick_cpu(o, &dev, &usable, &ccpu, &other, how, sizeof(how))) != 0)
		return r;
	snprintf(rq, sizeof(rq), "file:/sys/block/%s/queue/rq_affinity", dev.disks[0]);
	snprintf(sched, sizeof(sched), "file:/sys/block/%s/queue/scheduler", dev.disks[0]);
	kr_env_standard((const char *const[]){ "group:rt_throttling", "group:irq_affinity",
		"sysctl:kernel.io_uring_disabled", rq, sched, "config:CONFIG_HZ",
		"config:CONFIG_PREEMPT", NULL });
	long fs = (long)sfs.f_type;
	kr_env("filesystem", "%s on %s", fs == EXT4_SUPER_MAGIC ? "ext4" : fs == XFS_SUPER_MAGIC
	       ? "xfs" : fs == BTRFS_SUPER_MAGIC ? "btrfs" : "other", dev.chain);
	kr_param("file", "%llu MiB, %s extents, in %s", (unsigned long long)(cfg.size >> 20),
		 cfg.written ? "written" : "unwritten", cfg.dir);
	kr_param("writes", "%d B random O_DIRECT, %s %d", DIO_BLOCK, cfg.sync ?
		 "sync pwrite threads:" : "io_uring depth", cfg.iodepth);
	kr_param("duration", "%.1f s per phase (RT phases <= 3 s)", o->duration_s);
	dio_param_cpu(ccpu);
	kr_param("submitter", "SCHED_FIFO %d in the RT phases", SUBMITTER_PRIO);
	kr_param("mitigate", "%s", o->mitigate ? "kworkers at SCHED_FIFO 45" : "no");
	kr_param("repeat", "%d", o->repeat);
	kr_param("seed", "%llu", (unsigned long long)seed);
	kr_param("threshold", "%g", o->threshold);

	if (!realpath(cfg.dir, dir))
		return kr_error("--dir %s: %s", cfg.dir, strerror(errno));
	snprintf(tmp, sizeof(tmp), "%.*s/krepro-dio_kworker-%d", PATH_MAX - 40, dir, (int)getpid());
	snprintf(path, sizeof(path), "%s/data", tmp);
	if (kr_journal_mkdir(tmp, 0700) < 0)
		return kr_error("mkdir %s: %s", tmp, strerror(errno));
	if (kr_journal_unlink(path) < 0)
		return kr_error("cannot journal %s", path);
	if ((r = dio_prepare(path, &fd)) != 0)
		return r;
	dio_offsets_init(&offsets, cfg.size / DIO_BLOCK, seed);
	kr_csv_open("repeat,phase,t_s,latency_us");
	kr_say("completion CPU %d (%s)", ccpu, how);

	/* The affinity says where the interrupts may go, not where they went: on Debian 6.1
	 * ext4 hands a write into an unwritten extent to an io-wq worker that may run on any
	 * CPU and use its queue (2-queue NVMe, writes of CPU 1: cpu0=3278 cpu1=297), and in
	 * the RT phase they all fled CPU 1 (cpu0=2566-3126 cpu1=0: PASS 0.94-1.12). So a
	 * first baseline whose IRQs went elsewhere is followed there once (no --cpu); else
	 * SKIP: never a verdict about a CPU that did not complete its own writes. */
	bool irqs = dev.nirq && dev.rq_affinity != 2, followed = o->cpu >= 0;
	for (int rep = 0; rep < o->repeat; rep++) {
		char prefix[16] = "";
		if (o->repeat > 1)
			snprintf(prefix, sizeof(prefix), "r%d_", rep + 1);
		ph[0] = (struct dio_phase){ .name = "baseline", .cpu = ccpu, .fd = fd };
		ph[1] = (struct dio_phase){ .name = "test", .cpu = ccpu, .fd = fd, .rt = true };
		ph[2] = (struct dio_phase){ .name = "control", .cpu = other, .fd = fd, .rt = true };
		for (int i = 0; i < np; i++) {
			r = dio_run_phase(&ph[i], &dev, o->duration_s, o->mitigate && i == 1);
			if ((r = dio_phase_check(&ph[i], r)) != 0)
				return r;
			int top = i < 2 && irqs ? dio_irq_target(&ph[i], ccpu, &share) : -1;
			if (top < 0 || share >= 0.5)
				continue;
			dio_irq_list(&ph[i], ccpu, at, sizeof(at));
			if (i || followed || !kr_cpus_has(&usable, top))
				return kr_skip(KR_EXIT_SKIP_MACHINE, "the %s's device IRQs went to CPU "
					       "%d, not to CPU %d where the submitter runs (%s)",
					       ph[i].name, top, ccpu, at + 1);
			kr_say("the IRQs of writes from CPU %d went to CPU %d (%s): following "
			       "them", ccpu, top, at + 1);
			kr_cpu_pick(&usable, top, &ccpu, &other);
			dio_param_cpu(ccpu);
			free(ph[0].lat_us);
			free(ph[0].t_s);
			followed = true;
			break;
		}
		if (!ph[np - 1].start) { /* followed: the baseline again, from there */
			rep--;
			continue;
		}
		votes[rep] = dio_kworker_rule(ph[0].iops, ph[1].iops, cfg.control ? ph[2].iops : NAN,
					      o->threshold);
		if (votes[rep] == KR_ERROR)
			return kr_error("no write completed in the baseline phase");
		snprintf(key, sizeof(key), "%sratio", prefix);
		kr_measure(key, ratios[rep] = ph[1].iops / ph[0].iops);
		snprintf(key, sizeof(key), "%scontrol_ratio", prefix);
		if (cfg.control)
			kr_measure(key, ph[2].iops / ph[0].iops);
		if (o->repeat > 1)
			kr_say("repeat %d of %d:", rep + 1, o->repeat);
		dio_report(ph, np, rep + 1, prefix, dev.nirq > 0, o->mitigate);
	}
	kr_csv_close();

	/* Zeroing the range merges the thousands of extents the random writes split: unlink
	 * then frees (and discards) them in 0.3 s, not 6-9 s. */
	if (fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, (off_t)cfg.size) < 0 && errno != EOPNOTSUPP)
		kr_warn("zeroing %s before removal: %s", path, strerror(errno));
	close(fd);
	unlink(path);
	rmdir(tmp);

	int npass = 0, nfail = 0;
	enum kr_verdict v = kr_vote(votes, o->repeat, &npass, &nfail);
	struct kr_stats rs;
	kr_stats(ratios, (size_t)o->repeat, &rs);
	kr_measure("ratio", rs.median);
	kr_cause("iomap defers async O_DIRECT write completion to the \"dio/%s\" wq", dev.name);
	kr_cause("its kworker/%d:* are SCHED_OTHER on the IRQ's CPU, below RT", ccpu);
	kr_cause("mitigation: RT off that CPU, kworkers above it (--mitigate), sync I/O");
	if (v == KR_SKIP && o->repeat > 1 && npass && nfail)
		return kr_inconclusive(rs.median, "%d of %d repeats FAIL", nfail, o->repeat);
	if (v == KR_SKIP)
		return kr_inconclusive(rs.median, "the RT submitter is slow on the other CPU too "
				       "(control/baseline %.2f)", ph[2].iops / ph[0].iops);
	return kr_verdict(v, rs.median, "test=%.0f baseline=%.0f IOPS cpu=%d", ph[1].iops,
			  ph[0].iops, ccpu);
}

static const struct kr_prog prog = {
	.name = "dio_kworker",
	.flags = KR_NEEDS_ROOT | KR_OPT_CPU | KR_OPT_SEED | KR_OPT_MITIGATE | KR_OPT_REPEAT,
	.metric = "ratio",
	.fail_below = true,
	.unit = "",
	.threshold = 0.5,
	.threshold_min = 0.001,
	.threshold_max = 1.0,
	.rule = "FAIL when test IOPS / baseline IOPS < threshold (0.5: measured 0.0008-0.005\n"
		"  when starved, 0.8-1.5 with kworkers raised, sync I/O or another CPU);\n"
		"  with --control, a control/baseline below it too is inconclusive (SKIP 125)",
	.duration_s = 2,
	.duration_max_s = 30,
	.repeat = 1,
	.run = dio_run,
};

/* ---- the command line (not in the mail form) ---- */

static const struct kr_option dio_options[] = {
	KR_ARG_CUSTOM("dir", "DIR", "where the temp dir and file go (default: .)"),
	KR_ARG_CUSTOM("size", "SIZE", "test file size (default 1G, 16M-64G)"),
	KR_ARG_CUSTOM("extents", "KIND", "unwritten (fallocate, default) or written"),
	KR_ARG_CUSTOM("iodepth", "N", "I/Os in flight, or sync threads (default 32)"),
	KR_ARG_CUSTOM("control", NULL, "also run the RT submitter on another CPU"),
	KR_ARG_CUSTOM("sync", NULL, "synchronous pwrite threads (SPDK-like case)"),
	{ .name = NULL }
};

/* ---- options, requirements, the completion CPU ---- */

static int dio_parse(int index, const char *arg)
{
	long l = 0;
	int c = 0;

	if ((index == 2 && (c = kr_parse_choice("--extents", arg, "unwritten|written")) < 0) ||
	    (index == 3 && kr_parse_long("--iodepth", arg, 1, 256, &l) < 0))
		return -1;
	switch (index) {
	case 0: cfg.dir = arg; return *arg ? 0 : kr_usage_error("--dir: expected a directory");
	case 1: return kr_parse_size("--size", arg, 16ULL << 20, 64ULL << 30, &cfg.size);
	case 2: cfg.written = c == 1; return 0;
	case 3: cfg.iodepth = (int)l; return 0;
	case 4: cfg.control = true; return 0;
	case 5: cfg.sync = true; return 0;
	}
	return -1;
}

/* each phase plus its drain, and the preparation: must fit the supervisor's cap */
static int dio_validate(const struct kr_opts *o)
{
	double d = o->duration_s, cap = kr_hard_cap_s() - 5;
	double need = o->repeat * ((cfg.control ? 3 : 2) * (fmin(d, 3) + 1) + fmax(d - 3, 0)) + 10;

	return need <= cap ? 0 : kr_usage_error("--repeat %d with %.1f s phases needs ~%.0f s, "
						"over the %.0f s cap: use fewer repeats",
						o->repeat, d, need, cap);
}

static const struct kr_cli cli = {
	.summary = "RT I/O threads starve the kworkers completing their own direct I/O",
	.description =
		"Measures 4 KiB random O_DIRECT writes (io_uring, queue depth 32) from a\n"
		"submitter pinned to the CPU that completes the device's I/O: SCHED_OTHER\n"
		"(baseline), then SCHED_FIFO 40 busy-polling its ring (test). iomap completes\n"
		"async direct writes in a kworker of the dio/<dev> workqueue on that CPU,\n"
		"which the RT submitter starves but for RT throttling's ~5%. FIFO 40 stays\n"
		"below threaded IRQ handlers' 50, so the kworker starves, not the IRQ thread.\n"
		"The completion CPU: the disk queue IRQ's effective affinity (checked), or\n"
		"the submitter's with rq_affinity=2; --cpu overrides. --duration is per\n"
		"phase, RT phases at most 3 s. The temp file is removed on every exit path.\n"
		"Known: 6.18, ext4 on virtio-blk: 0.0006-0.002; --mitigate 1.59-1.67.",
	.example = "dio_kworker --control --format=json",
	.options = dio_options,
	.parse = dio_parse,
	.validate = dio_validate,
};

int main(int argc, char **argv)
{
	return kr_main(&prog, &cli, argc, argv);
}
