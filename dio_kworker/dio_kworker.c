// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: RT I/O threads starve the kworkers that complete their own direct I/O.
 *
 * iomap (iomap_dio_bio_end_io) finishes an async O_DIRECT write in the filesystem's
 * "dio/<dev>" workqueue, which is bound: a SCHED_OTHER kworker/N:M of the CPU where the
 * disk's interrupt landed runs it. A SCHED_FIFO thread keeping that CPU busy (an RT
 * storage service polling for its completions) starves the kworker that must finish its
 * own writes; only RT throttling's 50 ms a second lets them through. Seen by Nutanix on
 * all-NVMe nodes (5.10). Which writes wait there (read in 4.19's, 6.1's and recent
 * source): on ext4, those into unwritten extents, as this test's are, before iomap too
 * (fs/direct-io.c), and every one since 378f32bab371 (v5.5, "ext4: introduce direct I/O
 * write using iomap infrastructure"); on XFS every one (iomap).
 *
 * 4 KiB random O_DIRECT writes, Linux AIO at queue depth 32, into a fallocate()d file's
 * unwritten extents (made unwritten again before each phase) in the current directory,
 * from a submitter pinned to the CPU that takes the disk's interrupts: SCHED_OTHER
 * sleeping for completions (baseline), then SCHED_FIFO 40 polling for them (test).
 * ratio = test IOPS / baseline IOPS.
 */
#include "krepro.h"

#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <linux/aio_abi.h>
#include <linux/magic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define BLOCK 4096
#define SUBMITTER_PRIO 40 /* an RT service: above kworkers, below threaded IRQs' 50 */
#define KWORKER_PRIO 45	  /* --mitigate: above the submitter */
#define MAX_IRQS 64
/* a write held this long waited for RT throttling: 6.12 then still does ~300 writes/s,
 * which a slow baseline may near, so a PASS is inconclusive (starved ~950, raised ~50) */
#define DIO_THROTTLED_MS 400

static struct {
	uint64_t size;
	long iodepth;	/* writes in flight, <= 256 */
	bool written;	/* --extents written (the full program's only): overwrites */
} cfg = { .size = 1ULL << 30, .iodepth = 32 };
static char bufs[256][BLOCK] __attribute__((aligned(BLOCK))); /* one per write */

static enum kr_verdict dio_kworker_rule(double baseline, double test, double threshold,
					double test_wait_ms)
{
	if (!(baseline > 0) || !(test >= 0))
		return KR_ERROR;
	if (test / baseline < threshold)
		return KR_FAIL;
	return test_wait_ms >= DIO_THROTTLED_MS ? KR_SKIP : KR_PASS;
}

/* each block once in random order, nblocks writes before any block twice: a
 * full-period LCG modulo a power of two, skipping the blocks past the end */
static uint64_t nblocks, mask, block;

static void dio_blocks_init(uint64_t n, uint64_t seed)
{
	for (nblocks = n, mask = 1; mask < n; mask <<= 1)
		;
	block = seed & --mask;
}

static off_t dio_next_offset(void)
{
	do
		block = (block * 0x5851F42D4C957F2DULL + 0x14057B7EF767814FULL) & mask;
	while (block >= nblocks);
	return (off_t)(block * BLOCK);
}

/* Before a phase, outside its window: all unwritten again, or the phase's writes meet
 * the blocks the last one wrote (a 2 s phase writes ~100k of 1 GiB's 262,144). Zeroing
 * leaves one unwritten extent on ext4 in 0.2 s (a punched hole discards each piece on a
 * -o discard mount: 6-9 s); punch and fallocate where it cannot. */
static int dio_fresh_extents(int fd, const char *path)
{
	off_t len = (off_t)cfg.size;

	if (fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, len) < 0 &&
	    (errno != EOPNOTSUPP || fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					      0, len) < 0 || fsync(fd) < 0 ||
	     fallocate(fd, 0, 0, len) < 0))
		return errno == EOPNOTSUPP ? kr_skip(129, "this filesystem can neither zero "
			"a range nor punch a hole: no unwritten extents after a phase")
			: kr_error("making %s unwritten again: %s", path, strerror(errno));
	return fsync(fd) < 0 ? kr_error("fsync %s: %s", path, strerror(errno)) : 0;
}

/* ---- where the filesystem's writes complete ---- */

static struct dio_device {
	char name[64];			/* "vda1": its workqueue is dio/vda1 */
	int irqs[MAX_IRQS], nirq;	/* its disks' queue interrupts */
	bool rq_affinity2;		/* a disk completes on the submitter's CPU */
	struct kr_cpus irq_cpus;	/* where they go */
	int cpu;			/* the completion CPU chosen */
} dev;

/* block device at sysfs path p -> MSI interrupts of the PCI function above its disk;
 * for dm and md its slaves', for NVMe multipath its paths' */
static void dio_find_irqs(const char *p, struct dio_device *d, int depth)
{
	char real[PATH_MAX], up[PATH_MAX], path[PATH_MAX + 32], *s;
	glob_t g;
	uint64_t v;

	if (depth > 8 || !realpath(p, real))
		return;
	if (!access(strcat(strcpy(path, real), "/partition"), F_OK))
		*strrchr(real, '/') = 0;
	d->rq_affinity2 |= !kr_read_u64(strcat(strcpy(path, real), "/queue/rq_affinity"),
					&v) && v == 2;
	for (strcpy(up, real); glob(strcat(strcpy(path, up), "/msi_irqs/*"), 0, NULL, &g); *s = 0)
		if ((s = strrchr(up, '/')) <= up) { /* none above it */
			snprintf(path, sizeof(path), "%s/{slaves/*,device/*/device}", real);
			if (glob(path, GLOB_BRACE, NULL, &g))
				return;
			for (size_t i = 0; i < g.gl_pathc; i++)
				dio_find_irqs(g.gl_pathv[i], d, depth + 1);
			globfree(&g);
			return;
		}
	for (size_t i = 0; i < g.gl_pathc && d->nirq < MAX_IRQS; i++) {
		int irq = atoi(strrchr(g.gl_pathv[i], '/') + 1), k = 0;
		while (k < d->nirq && d->irqs[k] != irq)
			k++;
		if (k == d->nirq)
			d->irqs[d->nirq++] = irq;
	}
	globfree(&g);
}

/* the filesystem's device and the CPUs its I/O queues' interrupts go to */
static void dio_find_device(dev_t st_dev, struct dio_device *d)
{
	char path[PATH_MAX], real[PATH_MAX], name[64], aff[4096];
	struct kr_cpus s;
	int n = 0, q;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(st_dev), minor(st_dev));
	snprintf(d->name, sizeof(d->name), "%.63s", realpath(path, real) ? strrchr(real, '/') + 1
									  : path + 15);
	dio_find_irqs(path, d, 0);
	for (int i = 0; i < d->nirq; i++) {
		/* virtio's config vector and NVMe's admin queue complete no I/O */
		snprintf(path, sizeof(path), "/proc/irq/%d/effective_affinity_list", d->irqs[i]);
		if (kr_irq_name(d->irqs[i], name, sizeof(name)) || strstr(name, "config") ||
		    (sscanf(name, "nvme%*dq%d", &q) == 1 && !q) ||
		    kr_read_file(path, aff, sizeof(aff)) < 0 || kr_cpus_parse(aff, &s) < 0)
			continue;
		for (int k = 0; k < s.n; k++)
			kr_cpus_add(&d->irq_cpus, s.cpu[k]);
		kr_cpus_free(&s);
		d->irqs[n++] = d->irqs[i];
	}
	d->nirq = n;
}

/* ---- a phase: the submitter on its CPU for a while ---- */

struct dio_phase {
	const char *name;
	int rep;
	bool rt;
	int64_t start, end;		/* the timed window */
	unsigned long long n, done;	/* writes completed in the window, in all */
	unsigned long long irq_here, irq_all; /* the disk's interrupts on cpu, on all */
	double lat_sum_us, lat_max_us, iops;
};

/* the full program's report and --extents written; NULL in the mail form */
static void (*dio_describe)(const struct statfs *fs, bool by_irq);
static void (*dio_report)(const struct dio_phase *ph, bool irqs);
static int (*dio_fill)(int fd, const char *path);

/* adds (sign 1) or subtracts (-1) the disk's interrupts so far */
static void dio_irqs(struct dio_phase *ph, unsigned long long sign)
{
	int ncpu = kr_nr_cpu_ids();
	uint64_t *c = malloc((size_t)ncpu * sizeof(*c));

	for (int i = 0; c && i < dev.nirq; i++) {
		if (kr_irq_counts(dev.irqs[i], c, ncpu))
			continue;
		ph->irq_here += sign * c[dev.cpu];
		for (int j = 0; j < ncpu; j++)
			ph->irq_all += sign * c[j];
	}
	free(c);
}

/* one write per io_submit, as fio does */
static int dio_submit(aio_context_t ctx, struct iocb *cb, int64_t *sent)
{
	cb->aio_offset = dio_next_offset();
	sent[cb->aio_data] = kr_now_ns();
	while (syscall(SYS_io_submit, ctx, 1, &cb) != 1)
		if (errno != EINTR)
			return errno;
	return 0;
}

/* --mitigate: the CPU's kworkers above the submitter, new ones every 10 ms */
static int raised;

static void dio_raise_kworkers(int cpu)
{
	char pattern[32];
	pid_t tids[1024];

	snprintf(pattern, sizeof(pattern), "kworker/%d:*", cpu);
	for (int i = 0, n = kr_find_kthreads(pattern, tids, 1024); i < n; i++)
		if (sched_getscheduler(tids[i]) == SCHED_OTHER &&
		    kr_journal_sched(tids[i], SCHED_FIFO, KWORKER_PRIO) == 0)
			raised++;
}

/* len ns, pinned, iodepth writes in flight: SCHED_OTHER sleeps for completions; RT
 * polls under a watchdog, then drains as SCHED_OTHER. Returns 0 or an errno. */
static int dio_run_phase(struct dio_phase *ph, int fd, int64_t len, bool mitigate)
{
	unsigned qd = (unsigned)cfg.iodepth, inflight = 0;
	struct kr_watchdog *wd = NULL;
	struct io_event ev[256];
	struct iocb cbs[256];
	int64_t sent[256], now, raise_at = 0;
	aio_context_t ctx = 0;
	int err = syscall(SYS_io_setup, qd, &ctx) || kr_pin(0, dev.cpu) ? errno : 0;

	kr_progress("%s: %.1f s", ph->name, (double)len / 1e9);
	dio_irqs(ph, -1ULL);
	ph->end = (ph->start = kr_now_ns()) + len;
	if (ph->rt && !err && !(wd = kr_watchdog_arm(kr_gettid(), ph->end + 500000000)))
		err = ECANCELED; /* never an RT busy loop without it */
	else if (ph->rt && !err && kr_set_sched(0, SCHED_FIFO, SUBMITTER_PRIO) < 0)
		err = errno;
	for (unsigned i = 0; i < qd && !err; i++) {
		cbs[i] = (struct iocb){ .aio_data = i, .aio_lio_opcode = IOCB_CMD_PWRITE,
					.aio_fildes = (uint32_t)fd, .aio_nbytes = BLOCK,
					.aio_buf = (uintptr_t)bufs[i] };
		inflight += !(err = dio_submit(ctx, &cbs[i], sent));
	}
	for (bool stop = err; inflight > 0;) {
		bool poll = ph->rt && !stop;
		long r = syscall(SYS_io_getevents, ctx, poll ? 0 : 1, qd, ev,
				 poll ? &(struct timespec){ 0, 0 } : NULL);
		if (r < 0 && errno != EINTR) {
			err = errno;
			break; /* io_destroy waits for the rest */
		}
		if ((now = kr_now_ns()) >= ph->end && !stop && (stop = true))
			kr_set_sched(0, SCHED_OTHER, 0);
		if (mitigate && !stop && now >= raise_at)
			dio_raise_kworkers(dev.cpu), raise_at = now + 10000000;
		for (long k = 0; k < r; k++, inflight--, ph->done++) {
			double lat_us = (double)(now - sent[ev[k].data]) / 1e3;
			if (ev[k].res != BLOCK)
				err = ev[k].res < 0 ? (int)-ev[k].res : EIO, stop = true;
			if (!err && now <= ph->end) { /* in the window */
				ph->n++, ph->lat_sum_us += lat_us;
				ph->lat_max_us = fmax(ph->lat_max_us, lat_us);
				kr_csv_row("%d,%s,%.6f,%.1f", ph->rep, ph->name,
					   (double)(now - ph->start) / 1e9, lat_us);
			}
			if (!stop && !(stop = (err = dio_submit(ctx, &cbs[ev[k].data], sent))))
				inflight++;
		}
	}
	kr_set_sched(0, SCHED_OTHER, 0);
	if (ctx)
		syscall(SYS_io_destroy, ctx);
	kr_watchdog_disarm(wd);
	dio_irqs(ph, 1);
	ph->iops = (double)ph->n / ((double)(ph->end - ph->start) / 1e9);
	return err;
}

/* ---- the measurement ---- */

/* Did the phase's writes complete on its CPU? Each interrupt there completes at most
 * qd writes; other I/O of the disk interrupts the CPUs it came from. */
static bool dio_irq_routed(const struct dio_phase *ph, unsigned qd)
{
	return ph->irq_here * qd >= ph->done;
}

/* The test files of runs that died (a panic while bisecting: their journal was on tmpfs;
 * a SIGKILL of the mail form), removed and named: the krepro-dio_kworker-PID directories
 * here whose data file no process holds locked (a run locks its own). A lock, not the
 * PID: after a reboot the PID may be another process's. Only what a run makes: a real
 * directory of ours, mode 0700, PID digits in its name, holding at most a regular file
 * "data" (issue 42: a user's link of that name, or their krepro-dio_kworker-notes/, in a
 * shared directory was emptied). dir: the current one, to name. */
static void dio_remove_stale(const char *dir)
{
	glob_t g;

	if (glob("krepro-dio_kworker-*", GLOB_ONLYDIR, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *name = g.gl_pathv[i], *pid = name + strlen("krepro-dio_kworker-");
		struct stat st, ds;
		int d, fd = -1;

		if (!*pid || pid[strspn(pid, "0123456789")] ||
		    (d = open(name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			continue;
		bool ours = fstat(d, &ds) == 0 && ds.st_uid == geteuid() &&
			    (ds.st_mode & 07777) == 0700;
		if (ours && (fd = openat(d, "data", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			ours = errno == ENOENT;
		/* a regular file of ours that no live run holds */
		if (ours && fd >= 0)
			ours = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
			       flock(fd, LOCK_EX | LOCK_NB) == 0;
		if (ours && (unlinkat(d, "data", 0) == 0 || errno == ENOENT) && rmdir(name) == 0)
			kr_warn("removed %s/%s, left by a run that died", dir, name);
		else if (ours)
			kr_warn("cannot remove %s/%s, left by a run that died: %s", dir, name,
				strerror(errno));
		if (fd >= 0)
			close(fd);
		close(d);
	}
	globfree(&g);
}

static int dio_run(const struct kr_opts *o)
{
	static struct kr_cpus ok;
	struct statfs fs;
	struct stat st;
	struct dio_phase ph[2];
	aio_context_t ctx = 0;
	char why[256], tmp[PATH_MAX], path[PATH_MAX + 8], at[256];
	int r, fd, cpu = o->cpu;
	enum kr_verdict votes[100];
	double ratio = 0, waited_ms = 0; /* the repeats' mean; the longest wait of a SKIP */

	/* before anything changes: a disk filesystem with room, AIO, SCHED_FIFO, the CPU;
	 * what died runs left here is no change, and its room counts */
	if (!getcwd(tmp, sizeof(tmp) - 40))
		return kr_error("the current directory: %s", strerror(errno));
	dio_remove_stale(tmp);
	if (statfs(".", &fs) < 0 || stat(".", &st) < 0)
		return kr_error("the current directory: %s", strerror(errno));
	if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC)
		return kr_skip(129, "the current directory is on tmpfs: run it on a disk");
	if ((uint64_t)fs.f_bavail * fs.f_bsize < cfg.size + (256ULL << 20))
		return kr_skip(129, "needs %llu MiB free here",
			       (unsigned long long)(cfg.size >> 20) + 256);
	if (syscall(SYS_io_setup, 1, &ctx) < 0)
		return errno == ENOSYS ? kr_skip(125, "needs CONFIG_AIO (io_setup: ENOSYS)")
				       : kr_skip(129, "io_setup: %s", strerror(errno));
	syscall(SYS_io_destroy, ctx);
	if ((r = kr_rt_check(99, why, sizeof(why)))) /* the RT watchdog's priority */
		return r == KR_EXIT_ERROR ? kr_error("%s", why) : kr_skip(r, "%s", why);
	dio_find_device(st.st_dev, &dev);
	kr_usable_cpus(&ok);
	/* the completion CPU: --cpu, or with rq_affinity=2 the submitter's (the highest
	 * usable), or the highest usable one the queue interrupts go to */
	bool by_irq = cpu < 0 && !dev.rq_affinity2, irqs = dev.nirq && !dev.rq_affinity2;
	for (int i = dev.irq_cpus.n - 1; by_irq && cpu < 0 && i >= 0; i--)
		cpu = kr_cpus_has(&ok, dev.irq_cpus.cpu[i]) ? dev.irq_cpus.cpu[i] : -1;
	if (by_irq && !dev.nirq)
		return kr_skip(129, "which CPU completes %s's I/O? no PCI MSI queue IRQs: "
			       "give --cpu", dev.name);
	if (by_irq && cpu < 0)
		return kr_skip(129, "%s's I/O completes on CPU %s (%s)", dev.name,
			       kr_cpus_list(&dev.irq_cpus, at, sizeof(at)),
			       kr_cpus_unusable(why, sizeof(why)));
	dev.cpu = cpu = cpu < 0 ? ok.cpu[ok.n - 1] : cpu;
	if (!kr_cpus_has(&ok, cpu))
		return kr_skip(129, "CPU %d is not usable (%s)", cpu,
			       kr_cpus_unusable(why, sizeof(why)));
	if (dio_describe)
		dio_describe(&fs, by_irq);
	else
		kr_env_standard(NULL), kr_say("completion CPU %d", cpu);

	/* the test file in a temp dir, both removed on exit (after a panic, by the next run) */
	snprintf(tmp + strlen(tmp), 40, "/krepro-dio_kworker-%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/data", tmp);
	if (kr_journal_mkdir(tmp, 0700) < 0 || kr_journal_unlink(path) < 0)
		return kr_error("mkdir %s: %s", tmp, strerror(errno));
	if ((fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600)) < 0)
		return errno == EINVAL ? kr_skip(129, "this filesystem has no O_DIRECT")
				       : kr_error("create %s: %s", path, strerror(errno));
	flock(fd, LOCK_EX); /* this run's: not one that died (dio_remove_stale) */
	if (fallocate(fd, 0, 0, (off_t)cfg.size) < 0)
		return errno == EOPNOTSUPP ? kr_skip(129, "this filesystem has no fallocate()")
					   : kr_error("fallocate %s: %s", path, strerror(errno));
	memset(bufs, 0xa5, sizeof(bufs)); /* not zeroes: no zero detection */
	if (dio_fill && (r = dio_fill(fd, path)))
		return r;
	if (fsync(fd) < 0)
		return kr_error("fsync %s: %s", path, strerror(errno));
	dio_blocks_init(cfg.size / BLOCK, o->seed ? o->seed : 0x5eed);

	for (int rep = 0; rep < o->repeat; rep++) {
		for (int i = 0; i < 2; i++) {
			double s = i ? fmin(o->duration_s, 3) : o->duration_s; /* RT: <= 3 s */
			ph[i] = (struct dio_phase){ .name = i ? "test" : "baseline",
						    .rep = rep + 1, .rt = i };
			if (!cfg.written && (rep || i) && (r = dio_fresh_extents(fd, path)))
				return r;
			if ((r = dio_run_phase(&ph[i], fd, (int64_t)(s * 1e9), o->mitigate && i)))
				return r == EINVAL ? kr_skip(129, "O_DIRECT writes: EINVAL")
					: kr_error("%s phase: %s", ph[i].name, strerror(r));
			if (!cfg.written && ph[i].done > nblocks) /* the LCG came round */
				kr_say("%s: %llu writes met blocks it wrote: use a larger --size",
				       ph[i].name, ph[i].done - nblocks);
			/* the kernel's doing: 125, a bisect skips it */
			if (irqs && !dio_irq_routed(&ph[i], (unsigned)cfg.iodepth))
				return kr_skip(125, "%s: %llu writes from CPU %d completed "
					"elsewhere (disk IRQs %llu there, %llu in all)", ph[i].name,
					ph[i].done, cpu, ph[i].irq_here, ph[i].irq_all);
		}
		double wait_ms = ph[1].lat_max_us / 1000;
		votes[rep] = dio_kworker_rule(ph[0].iops, ph[1].iops, o->threshold, wait_ms);
		if (votes[rep] == KR_ERROR)
			return kr_error("no write completed in the baseline");
		waited_ms = votes[rep] == KR_SKIP ? fmax(waited_ms, wait_ms) : waited_ms;
		ratio += ph[1].iops / ph[0].iops / o->repeat;
		if (dio_report)
			dio_report(ph, irqs);
		else
			kr_say("baseline %.0f, test %.0f IOPS; longest wait %.0f ms",
			       ph[0].iops, ph[1].iops, wait_ms);
	}

	int npass, nfail;
	enum kr_verdict v = kr_vote(votes, o->repeat, &npass, &nfail);
	kr_measure("ratio", ratio);
	if (v == KR_SKIP && waited_ms > 0)
		return kr_inconclusive(ratio, "a write waited %.0f ms, for RT throttling: "
				       "the baseline is too slow to tell", waited_ms);
	if (v == KR_SKIP)
		return kr_inconclusive(ratio, "%d of %d repeats FAIL", nfail, o->repeat);
	return kr_verdict(v, ratio, "test=%.0f baseline=%.0f IOPS cpu=%d", ph[1].iops,
			  ph[0].iops, cpu);
}

static const struct kr_prog prog = {
	.name = "dio_kworker", .metric = "ratio", .fail_below = true, .unit = "",
	.flags = KR_NEEDS_ROOT | KR_MITIGATE_NEEDS_KTHREADS | KR_OPT_CPU | KR_OPT_SEED |
		 KR_OPT_MITIGATE | KR_OPT_REPEAT,
	.threshold = 0.5, .threshold_min = 0.001, .threshold_max = 1.0,
	.rule = "FAIL when test IOPS / baseline IOPS < threshold (0.5: measured 0.001-0.016\n"
		"  when starved, 0.9-4.0 with the kworkers raised or on another CPU)",
	.duration_s = 2, .duration_max_s = 30, .repeat = 1, .run = dio_run,
};

/* ---- the command line (not in the mail form) ---- */

static const struct kr_option options[] = {
	KR_ARG_SIZE("size", cfg.size, 16ULL << 20, 64ULL << 30, "test file size (1G)"),
	KR_ARG_CUSTOM("extents", "unwritten|written",
		      "fresh from fallocate() (default) or written first"),
	KR_ARG_LONG("iodepth", "N", cfg.iodepth, 1, 256, "writes in flight (32)"),
	{ .name = NULL }
};

static int parse(int index, const char *arg)
{
	int r = index == 1 ? kr_parse_choice("--extents", arg, "unwritten|written") : 0;

	cfg.written = index == 1 ? r == 1 : cfg.written;
	return r < 0 ? -1 : 0;
}

/* --extents written: each block written once before the phases */
static int fill(int fd, const char *path)
{
	for (uint64_t off = 0; cfg.written && off < cfg.size; off += sizeof(bufs))
		if (pwrite(fd, bufs, sizeof(bufs), (off_t)off) < 0)
			return kr_error("filling %s: %s", path, strerror(errno));
	return 0;
}

static long fs_type; /* statfs f_type of the test file's filesystem */

/* the report's environment and parameters (the mail form's are its constants) */
static void describe(const struct statfs *fs, bool by_irq)
{
	const struct kr_opts *o = kr_options();
	char how[96] = "rq_affinity=2: the submitter's";

	kr_env_standard((const char *const[]){ "group:rt_throttling", "group:irq_affinity",
		"config:CONFIG_HZ", "config:CONFIG_PREEMPT", "config:CONFIG_PREEMPT_RT", NULL });
	fs_type = fs->f_type;
	kr_env("filesystem", "%s on %s", fs->f_type == EXT4_SUPER_MAGIC ? "ext4" : fs->f_type ==
	       XFS_SUPER_MAGIC ? "xfs" : fs->f_type == BTRFS_SUPER_MAGIC ? "btrfs" : "other",
	       dev.name);
	kr_params("file_mib=%llu extents=%s iodepth=%ld duration_s=%g repeat=%d "
		  "completion_cpu=%d submitter_prio=%d mitigate=%s seed=%llu threshold=%g",
		  (unsigned long long)(cfg.size >> 20), cfg.written ? "written" : "unwritten",
		  cfg.iodepth, o->duration_s, o->repeat, dev.cpu, SUBMITTER_PRIO, o->mitigate ?
		  "kworkers_fifo_45" : "no", o->seed ? o->seed : 0x5eed, o->threshold);
	if (o->cpu >= 0)
		strcpy(how, "given");
	else if (by_irq && snprintf(how, sizeof(how), "IRQ %d ", dev.irqs[0]))
		kr_irq_name(dev.irqs[0], how + strlen(how), sizeof(how) - strlen(how));
	kr_say("completion CPU %d (%s)", dev.cpu, how);
	kr_csv_open("repeat,phase,t_s,latency_us");
}

/* a repeat's table */
static void report(const struct dio_phase *ph, bool irqs)
{
	const char *keys[] = { "iops", "lat_mean_us", "lat_max_us" };
	char key[64], pol[16], prefix[16] = "";

	if (kr_options()->repeat > 1 && snprintf(prefix, sizeof(prefix), "r%d_", ph->rep))
		kr_say("repeat %d of %d:", ph->rep, kr_options()->repeat);
	kr_say("  phase     cpu  policy       IOPS   mean us    max us");
	for (const struct dio_phase *p = ph; p < ph + 2; p++) {
		double v[] = { p->iops, p->lat_sum_us / (double)p->n, p->lat_max_us };
		for (int i = 0; i < 3; i++) {
			snprintf(key, sizeof(key), "%s%s_%s", prefix, p->name, keys[i]);
			kr_measure(key, v[i]);
		}
		snprintf(pol, sizeof(pol), p->rt ? "FIFO %d" : "OTHER", SUBMITTER_PRIO);
		kr_say("  %-9s %-4d %-8s %8.0f %9.0f %9.0f", p->name, dev.cpu, pol, v[0], v[1], v[2]);
	}
	for (int i = 0; i < 2 && irqs; i++)
		kr_say("  %s: %llu writes, disk IRQs %llu of %llu on CPU %d", ph[i].name,
		       ph[i].done, ph[i].irq_here, ph[i].irq_all, dev.cpu);
	if (raised)
		kr_say("  kworker/%d:* raised to FIFO %d so far: %d", dev.cpu, KWORKER_PRIO,
		       raised);
	kr_say("  test/baseline = %.3f", ph[1].iops / ph[0].iops);
}

/* What sends this run's writes to that workqueue, by filesystem and extent kind: only
 * what was read in the kernel's source (4.19, 6.1, recent; fs/direct-io.c before iomap,
 * fs/iomap/direct-io.c; README.md), else "not identified" */
static const char *dio_cause(long fs, bool written)
{
	if (fs == EXT4_SUPER_MAGIC && !written)
		return "ext4 converts unwritten extents after an async direct write in that "
		       "workqueue, as before its direct I/O went through iomap in 5.5 (read in "
		       "4.19's fs/direct-io.c): not a regression of 5.5";
	if (fs == EXT4_SUPER_MAGIC)
		return "378f32bab371 (v5.5): ext4's direct writes through iomap, which "
		       "completes every async one in that workqueue, overwrites too; before "
		       "it an overwrite completed in the disk's interrupt (fs/direct-io.c)";
	if (fs == XFS_SUPER_MAGIC)
		return "XFS: iomap completes every async direct write in that workqueue, "
		       "overwrites too (read in 4.19, 6.1, recent): since which commit, not "
		       "identified";
	if (fs == BTRFS_SUPER_MAGIC)
		return "btrfs: iomap completes its async direct writes in that workqueue "
		       "(read in 6.1): since which commit, not identified";
	return "this filesystem: what defers its direct writes' completion: not identified";
}

/* on FAIL: what this run saw first */
static void causes(const struct kr_opts *o)
{
	char rt[32];

	if (kr_read_file("/proc/sys/kernel/sched_rt_runtime_us", rt, sizeof(rt)) > 0 &&
	    atol(rt) < 0)
		kr_cause("sched_rt_runtime_us=-1: no RT throttling, so the starved kworkers "
			 "never run while the RT thread does");
	kr_cause("CPU %d %s: the completion of each async direct write waits there for a "
		 "SCHED_OTHER kworker/%d:* of the bound dio/%s workqueue", dev.cpu,
		 o->cpu >= 0 ? "(--cpu)" : dev.rq_affinity2 ? "submits (rq_affinity=2)"
		 : "takes the disk's interrupts", dev.cpu, dev.name);
	kr_cause("%s", dio_cause(fs_type, cfg.written));
}

/* each phase plus its drain, and the preparation: must fit the supervisor's cap */
static int validate(const struct kr_opts *o)
{
	double d = o->duration_s, cap = kr_hard_cap_s() - 5;
	double need = o->repeat * (d + fmin(d, 3) + 2) + 10;

	return need <= cap ? 0 : kr_usage_error("--repeat %d with %.1f s phases needs ~%.0f s, "
						"over the %.0f s cap: use fewer repeats",
						o->repeat, d, need, cap);
}

int main(int argc, char **argv)
{
	static const struct kr_cli cli = {
		.summary = "RT I/O threads starve the kworkers completing their own direct I/O",
		.description =
			"Measures 4 KiB random O_DIRECT writes (Linux AIO, queue depth 32) into\n"
			"a fresh fallocate()d file in the current directory, from a submitter\n"
			"pinned to the CPU that completes the disk's I/O: SCHED_OTHER (baseline),\n"
			"then SCHED_FIFO 40 polling for completions (test). iomap completes async\n"
			"direct writes in a kworker of the dio/<dev> workqueue on that CPU, which\n"
			"the RT submitter starves but for RT throttling's 5%. FIFO 40 stays below\n"
			"threaded IRQ handlers' 50: the kworker starves, not the IRQ thread.\n"
			"The completion CPU: where the disk's queue IRQs go (checked in each\n"
			"phase: a phase whose writes completed elsewhere is SKIP 125), or the\n"
			"submitter's with rq_affinity=2; --cpu overrides. --duration is per\n"
			"phase, RT phases at most 3 s. The temp file is removed on every exit.\n"
			"Known: 6.18, ext4 on virtio-blk: 0.001-0.010; --mitigate 1.0-4.0.",
		.example = "cd /mnt/disk && dio_kworker",
		.options = options,
		.parse = parse,
		.validate = validate,
		.causes = causes,
		.subsystem = "iomap", .kernel_file = "fs/iomap/direct-io.c",
		.mail_list = "linux-fsdevel@vger.kernel.org",
	};
	dio_describe = describe;
	dio_report = report;
	dio_fill = fill;
	return kr_main(&prog, &cli, argc, argv);
}
