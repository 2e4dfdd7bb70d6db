// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the save/restore journal and the single-run lock (CONTRACT.md sections 5, 7).
 *
 * Every change to system state is appended to /run/krepro/journal.<pid> *before* it is
 * made, as the action that undoes it. Undo actions are idempotent (write a value, rmdir,
 * unlink, set a policy if the task is still the same one), so restoring twice is harmless
 * and the supervising parent can always restore the whole journal after the child ends.
 * A journal whose owner died (SIGKILL) is restored by the next run of any program.
 * Paths are journaled absolute, so a restore runs from any directory. An entry that could
 * not be undone is reported as such, never as done.
 *
 * One line per entry, fields separated by tabs (a value may hold tabs: it is the last
 * field; a newline in a value or a tab in a path is refused before anything changes):
 *   krepro-journal <pid> <starttime> <program>
 *   child <pid> <starttime>       (the measuring child: waited for before a stale restore)
 *   write <path> <undo value>     rmdir <path>     unlink <path>
 *   sched <tid> <starttime> <policy> <prio>
 *   hwtstamp <ifname> <tx_type> <rx_filter>   (SIOCSHWTSTAMP of a NIC in the root namespace)
 */
#include "krepro.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <net/if.h>
#include <linux/net_tstamp.h>
#include <linux/sockios.h>
#include <sys/stat.h>
#include <unistd.h>

static int journal_fd = -1;
static char journal_file[512];
static pid_t journal_owner;

const char *kr_rundir(void)
{
	const char *d = getenv("KREPRO_RUNDIR");
	return d && *d ? d : "/run/krepro";
}

static int make_rundir(void)
{
	return mkdir(kr_rundir(), 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* the start time of a live task (not a zombie), else 0: a reused pid has another one */
static unsigned long long task_starttime(pid_t pid)
{
	struct kr_taskstat t;
	return kr_read_taskstat(pid, &t) == 0 && t.state != 'Z' && t.state != 'X' ? t.starttime : 0;
}

/* One write() per line with O_APPEND: a crash never leaves half an entry behind that a
 * restore would misread as a complete one. */
static int journal_append(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int journal_append(const char *fmt, ...)
{
	char line[4096];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) || strchr(line, '\n') != line + n - 1) {
		errno = EINVAL; /* too long, or a newline inside: refused, nothing changed */
		return -1;
	}
	if (kr_journal_begin() < 0 || write(journal_fd, line, (size_t)n) != n) {
		kr_warn("cannot write the journal in %s: %s", kr_rundir(), strerror(errno));
		return -1;
	}
	fdatasync(journal_fd);
	return 0;
}

/* Open this process's journal (the supervisor's: a forked child keeps appending to it). */
int kr_journal_begin(void)
{
	const struct kr_prog *p = kr_program();

	if (journal_fd >= 0)
		return 0;
	if (make_rundir() < 0)
		return -1;
	journal_owner = getpid();
	snprintf(journal_file, sizeof(journal_file), "%s/journal.%d", kr_rundir(), (int)journal_owner);
	journal_fd = open(journal_file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (journal_fd < 0)
		return -1;
	return journal_append("krepro-journal\t%d\t%llu\t%s\n", (int)journal_owner,
			      task_starttime(journal_owner), p ? p->name : "krepro");
}

/* Forget the inherited journal (a forked process that is a run of its own, in tests). */
void kr_journal_detach(void)
{
	if (journal_fd >= 0)
		close(journal_fd);
	journal_fd = -1;
}

int kr_journal_child(pid_t pid)
{
	return journal_append("child\t%d\t%llu\n", (int)pid, task_starttime(pid));
}

/* "kind <path>[ <undo>]", the path made absolute by the current directory, nothing in it
 * resolved (its last component may not exist yet, or be a symlink the undo must remove) */
static int journal_path(const char *kind, const char *path, const char *undo)
{
	char cwd[PATH_MAX] = "";

	if (strchr(path, '\t')) {
		errno = EINVAL;
		return -1;
	}
	if (*path != '/' && !getcwd(cwd, sizeof(cwd)))
		return -1;
	return journal_append("%s\t%s%s%s%s%s\n", kind, cwd, *cwd ? "/" : "", path,
			      undo ? "\t" : "", undo ? undo : "");
}

int kr_journal_write_undo(const char *path, const char *value, const char *undo)
{
	return journal_path("write", path, undo) < 0 ? -1 : kr_write_file(path, value);
}

int kr_journal_write(const char *path, const char *value)
{
	char old[2048];

	return kr_read_file(path, old, sizeof(old)) < 0 ? -1 : kr_journal_write_undo(path, value, old);
}

int kr_journal_mkdir(const char *path, mode_t mode)
{
	return journal_path("rmdir", path, NULL) < 0 ? -1 : mkdir(path, mode);
}

int kr_journal_unlink(const char *path)
{
	return journal_path("unlink", path, NULL);
}

int kr_journal_sched(pid_t tid, int policy, int prio)
{
	struct sched_param sp;
	int old = sched_getscheduler(tid);
	unsigned long long st = task_starttime(tid);

	if (old < 0 || sched_getparam(tid, &sp) < 0 || !st ||
	    journal_append("sched\t%d\t%llu\t%d\t%d\n", (int)tid, st, old, sp.sched_priority) < 0)
		return -1;
	return kr_set_sched(tid, policy, prio);
}

/* SIOCGHWTSTAMP/SIOCSHWTSTAMP on ifname (root network namespace); set: 1 to set cfg */
static int hwtstamp_ioctl(const char *ifname, struct hwtstamp_config *cfg, bool set)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	ifr.ifr_data = (void *)cfg;
	int r = ioctl(fd, set ? SIOCSHWTSTAMP : SIOCGHWTSTAMP, &ifr);
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

int kr_journal_hwtstamp(const char *ifname, int tx_type, int rx_filter)
{
	struct hwtstamp_config old = { 0 }, cfg = { .tx_type = tx_type, .rx_filter = rx_filter };

	/* a driver without SIOCGHWTSTAMP: assume stamping was off, the usual default */
	if (hwtstamp_ioctl(ifname, &old, false) < 0)
		old = (struct hwtstamp_config){ .tx_type = HWTSTAMP_TX_OFF, .rx_filter = HWTSTAMP_FILTER_NONE };
	if (journal_append("hwtstamp\t%s\t%d\t%d\n", ifname, old.tx_type, old.rx_filter) < 0)
		return -1;
	return hwtstamp_ioctl(ifname, &cfg, true);
}

/* A cgroup cannot be removed while tasks are in it: move stragglers to the parent (an
 * exiting task leaves the group a little later). -1 with ENOENT: it is not there. */
static int remove_dir(const char *path)
{
	char procs[PATH_MAX + 16], parent[PATH_MAX + 16], buf[4096];

	for (int i = 0; i < 100; i++, kr_sleep_ns(20000000)) {
		if (rmdir(path) == 0)
			return 0;
		if (errno != EBUSY)
			return -1; /* ENOTEMPTY (files or child groups) does not pass by waiting */
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
		snprintf(parent, sizeof(parent), "%.*s/cgroup.procs", (int)(strrchr(path, '/') - path), path);
		if (kr_read_file(procs, buf, sizeof(buf)) > 0)
			for (char *s = strtok(buf, "\n"); s; s = strtok(NULL, "\n"))
				kr_write_file(parent, s);
	}
	errno = EBUSY;
	return -1;
}

/* Undo one journal line; returns 1 if it could not be undone. */
static int undo_line(char *line, bool verbose)
{
	static const char *const kinds[] = { "write", "rmdir", "unlink", "sched", "hwtstamp" };
	static const int nfields[] = { 3, 2, 2, 5, 4 };
	/* what each undoes, from the fields after the kind ("%.0s": a field not shown) */
	static const char *const says[] = { "restore %s = %s", "remove %s", "remove %s",
		"restore task %s%.0s to policy %s prio %s",
		"restore hardware timestamping of %s (tx %s, rx %s)" };
	char *f[5] = { line }, *t;
	int n = 1, k = 0, r;

	if ((t = strchr(line, '\t')))
		*t = 0, f[n++] = t + 1;
	while (k < 5 && strcmp(line, kinds[k]))
		k++;
	if (k == 5 && (!*line || !strcmp(line, "krepro-journal") || !strcmp(line, "child")))
		return 0;
	while (k < 5 && n < nfields[k] && (t = strchr(f[n - 1], '\t')))
		*t = 0, f[n++] = t + 1;
	if (k == 5 || n != nfields[k]) {
		fprintf(stderr, "krepro: journal: unknown entry '%s'\n", line);
		return 1;
	}
	if (k < 3 && f[1][0] != '/') {
		/* relative to a directory this process does not know (an older krepro's
		 * journal): acting here could remove the wrong file; say so instead */
		fprintf(stderr, "krepro: cannot restore %s %s: a relative path "
			"(from the dead run's directory): undo it by hand\n", line, f[1]);
		return 1;
	}
	if (k == 0) {
		r = kr_write_file(f[1], f[2]);
	} else if (k == 1) {
		r = remove_dir(f[1]);
	} else if (k == 2) {
		r = unlink(f[1]);
	} else if (k == 3) {
		long tid = strtol(f[1], NULL, 10);
		unsigned long long st = strtoull(f[2], NULL, 10);
		/* only the same task (its pid may have been reused since), and never tid 0,
		 * which would be the restoring process itself */
		errno = ESRCH;
		r = tid > 0 && tid <= INT_MAX && st && task_starttime((pid_t)tid) == st
			    ? kr_set_sched((pid_t)tid, atoi(f[3]), atoi(f[4])) : -1;
	} else {
		struct hwtstamp_config cfg = { .tx_type = atoi(f[2]), .rx_filter = atoi(f[3]) };
		r = hwtstamp_ioctl(f[1], &cfg, true);
	}
	/* the file, task or NIC went away (with its namespace or device): nothing to restore */
	bool gone = r < 0 && (errno == ENOENT || errno == ESRCH || errno == ENODEV);
	if (verbose || (r < 0 && !gone)) {
		const char *why = r == 0 ? "" : gone ? " (gone: nothing to restore)" : strerror(errno);
		fprintf(stderr, "krepro: ");
		fprintf(stderr, says[k], f[1], f[2], f[3], f[4]);
		fprintf(stderr, "%s%s\n", r < 0 && !gone ? " FAILED: " : "", why);
	}
	return r < 0 && !gone;
}

/* Restore one journal file, last entry first; returns the number of entries that could
 * not be undone, -1 if it cannot be read. */
int kr_journal_restore_file(const char *path, bool verbose)
{
	char *text = kr_read_text(path), *nl;
	int failed = 0;

	if (!text)
		return errno == ENOENT ? 0 : -1;
	do {
		nl = strrchr(text, '\n');
		failed += undo_line(nl ? nl + 1 : text, verbose);
		if (nl)
			*nl = 0;
	} while (nl);
	free(text);
	return failed;
}

int kr_journal_restore(void)
{
	if (journal_fd < 0)
		return 0;
	int failed = kr_journal_restore_file(journal_file, false);
	if (ftruncate(journal_fd, 0) < 0)
		failed++;
	return failed;
}

/* The supervisor's last act: restore, then remove the journal file. */
int kr_journal_finish(void)
{
	if (journal_fd < 0 || getpid() != journal_owner)
		return 0;
	int failed = kr_journal_restore_file(journal_file, false);
	kr_journal_detach();
	if (!failed)
		unlink(journal_file);
	return failed;
}

/* the same process still running (starttime 0: any process of that pid) */
static bool task_alive(pid_t pid, unsigned long long starttime)
{
	unsigned long long st = task_starttime(pid);
	return st && (!starttime || st == starttime);
}

int kr_journal_restore_stale(int *failed)
{
	DIR *d = opendir(kr_rundir());
	struct dirent *e;
	int found = 0, kept = 0;

	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d))) {
		char path[600], prog[64] = "?", *t, *c;
		unsigned long long st = 0, cst = 0;
		int pid = 0, cpid = 0;
		snprintf(path, sizeof(path), "%s/%s", kr_rundir(), e->d_name);
		if (sscanf(e->d_name, "journal.%d", &pid) != 1 || pid <= 0 || pid == getpid() ||
		    !(t = kr_read_text(path)))
			continue;
		sscanf(t, "krepro-journal\t%*d\t%llu\t%63s", &st, prog);
		if ((c = strstr(t, "\nchild\t")))
			sscanf(c, "\nchild\t%d\t%llu", &cpid, &cst);
		free(t);
		if (task_alive(pid, st))
			continue; /* a live run owns it */
		/* the owner was killed; its child dies with it (PDEATHSIG), but may take a moment */
		for (int i = 0; cpid > 0 && task_alive(cpid, cst) && i < 200; i++)
			kr_sleep_ns(10000000);
		fprintf(stderr, "krepro: found the journal of a %s run (pid %d) that did not "
			"finish; restoring it\n", prog, pid);
		int nf = kr_journal_restore_file(path, true);
		if (nf == 0) {
			unlink(path);
		} else {
			fprintf(stderr, "krepro: kept %s: %d entr%s could not be restored\n", path,
				nf < 0 ? 1 : nf, nf == 1 ? "y" : "ies");
			kept++;
		}
		found++;
	}
	closedir(d);
	if (failed)
		*failed = kept;
	return found;
}

/* ---- the single-run lock ---- */
int kr_lock_take(double wait_s, pid_t *holder)
{
	static int fd = -1;
	char path[600], buf[32] = "";
	int64_t until = kr_now_ns() + (int64_t)(wait_s * 1e9);

	if (fd >= 0)
		return 0; /* held already: flock would conflict with our own earlier open */
	snprintf(path, sizeof(path), "%s/lock", kr_rundir());
	if (make_rundir() < 0 || (fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return -1;
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = kr_pre_run_signal ? EINTR : errno != EWOULDBLOCK || kr_now_ns() >= until ? EWOULDBLOCK : 0;
		if (e) {
			if (e == EWOULDBLOCK && pread(fd, buf, sizeof(buf) - 1, 0) > 0)
				*holder = (pid_t)atoi(buf);
			close(fd);
			fd = -1;
			errno = e;
			return -1;
		}
		kr_sleep_ns(50000000);
	}
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	return ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n ? -1 : 0;
}
