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

/* the start time of a live task (not a zombie), else 0: a reused pid has another one */
static unsigned long long task_starttime(pid_t pid)
{
	struct kr_taskstat t;
	return kr_read_taskstat(pid, &t) || t.state == 'Z' || t.state == 'X' ? 0 : t.starttime;
}

/* One write() per line with O_APPEND: a crash never leaves half an entry behind that a
 * restore would misread as a complete one. /run is tmpfs: no fsync. */
static int __attribute__((format(printf, 1, 2))) journal_append(const char *fmt, ...)
{
	char line[4096];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n <= 0 || n >= (int)sizeof(line) || strchr(line, '\n') != line + n - 1)
		return errno = EINVAL, -1; /* too long, or a newline inside: nothing changed */
	return kr_journal_begin() || write(journal_fd, line, (size_t)n) != n ? -1 : 0;
}

/* Open this process's journal (the supervisor's: a forked child keeps appending to it). */
int kr_journal_begin(void)
{
	if (journal_fd >= 0)
		return 0;
	mkdir(kr_rundir(), 0700); /* or it exists; else the open fails */
	journal_owner = getpid();
	snprintf(journal_file, sizeof(journal_file), "%s/journal.%d", kr_rundir(), (int)journal_owner);
	journal_fd = open(journal_file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	return journal_fd < 0 ? -1 : journal_append("krepro-journal\t%d\t%llu\t%s\n",
		(int)journal_owner, task_starttime(journal_owner), kr_program() ? kr_program()->name : "krepro");
}

/* Forget the inherited journal (a forked process that is a run of its own, in tests). */
void kr_journal_detach(void)
{
	close(journal_fd);
	journal_fd = -1;
}

/* "kind <path>[ <undo>]", the path made absolute by the current directory, nothing in it
 * resolved (its last component may not exist yet, or be a symlink the undo must remove) */
static int journal_path(const char *kind, const char *path, const char *undo)
{
	char cwd[PATH_MAX] = "";

	if (strchr(path, '\t') || (*path != '/' && !getcwd(cwd, sizeof(cwd))))
		return errno = EINVAL, -1;
	return journal_append("%s\t%s%s%s%s%s\n", kind, cwd, *cwd ? "/" : "", path,
			      undo ? "\t" : "", undo ? undo : "");
}

int kr_journal_write_undo(const char *path, const char *value, const char *undo)
{
	return journal_path("write", path, undo) ? -1 : value ? kr_write_file(path, value) : 0;
}

int kr_journal_write(const char *path, const char *value)
{
	char old[2048];
	return kr_read_file(path, old, sizeof(old)) < 0 ? -1 : kr_journal_write_undo(path, value, old);
}

int kr_journal_mkdir(const char *path, mode_t mode)
{
	return journal_path("rmdir", path, NULL) ? -1 : mkdir(path, mode);
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

	return old < 0 || sched_getparam(tid, &sp) < 0 || !st ||
	       journal_append("sched\t%d\t%llu\t%d\t%d\n", (int)tid, st, old, sp.sched_priority)
	       ? -1 : kr_set_sched(tid, policy, prio);
}

/* SIOCGHWTSTAMP or SIOCSHWTSTAMP (req) on ifname, in the root network namespace */
static int hwtstamp_ioctl(const char *ifname, struct hwtstamp_config *cfg, unsigned long req)
{
	struct ifreq ifr = { .ifr_ifru.ifru_data = (void *)cfg };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	snprintf(ifr.ifr_name, IFNAMSIZ, "%.15s", ifname); /* IFNAMSIZ - 1 */
	int r = ioctl(fd, req, &ifr), e = errno;
	close(fd);
	return errno = e, r;
}

int kr_journal_hwtstamp(const char *ifname, int tx_type, int rx_filter)
{
	struct hwtstamp_config old = { 0 }, cfg = { .tx_type = tx_type, .rx_filter = rx_filter };

	/* a driver without SIOCGHWTSTAMP cannot say what to restore: "off" would be a guess,
	 * and it would break ptp4l or chrony using the NIC's stamps; nothing is changed */
	if (hwtstamp_ioctl(ifname, &old, SIOCGHWTSTAMP) < 0)
		return -2;
	return journal_append("hwtstamp\t%s\t%d\t%d\n", ifname, old.tx_type, old.rx_filter)
	       ? -1 : hwtstamp_ioctl(ifname, &cfg, SIOCSHWTSTAMP);
}

/* Undo one journal line; returns 1 if it could not be undone. */
static int undo_line(char *line, bool verbose)
{
	char a[PATH_MAX];
	unsigned long long st;
	int tid, pol, prio, tx, rx, o = 0, r = -2, e;

	/* "child": the measuring child's pid, written up to 2026-11-24; the lock it
	 * inherits keeps the next run out until it is gone, so nothing needs it */
	if (!*line || !strncmp(line, "krepro-journal\t", 15) || !strncmp(line, "child\t", 6))
		return 0;
	/* a path is absolute: relative to an unknown directory, it could name another file */
	if (sscanf(line, "write\t%4095[^\t]%n", a, &o) == 1 && line[o] == '\t' && *a == '/')
		r = kr_write_file(a, line + o + 1);
	else if (sscanf(line, "unlink\t%4095[^\t]%n", a, &o) == 1 && !line[o] && *a == '/')
		r = kr_unlink_file(a);
	else if (sscanf(line, "rmdir\t%4095[^\t]%n", a, &o) == 1 && !line[o] && *a == '/')
		r = kr_cgroup_remove(a);
	else if (sscanf(line, "sched\t%d\t%llu\t%d\t%d%n", &tid, &st, &pol, &prio, &o) == 4 && !line[o])
		/* only the same task (the pid may be reused), never tid 0 (ourselves) */
		r = tid > 0 && st && task_starttime(tid) == st ? kr_set_sched(tid, pol, prio)
							       : (errno = ESRCH, -1);
	else if (sscanf(line, "hwtstamp\t%31[^\t]\t%d\t%d%n", a, &tx, &rx, &o) == 3 && !line[o])
		r = hwtstamp_ioctl(a, &(struct hwtstamp_config){ .tx_type = tx, .rx_filter = rx },
				   SIOCSHWTSTAMP);
	/* the file, task or NIC went away (with its namespace or device): nothing to restore */
	e = r == -1 && errno != ENOENT && errno != ESRCH && errno != ENODEV ? errno : 0;
	for (char *t = line; (t = strchr(t, '\t'));)
		*t = ' ';
	if (verbose || e || r == -2)
		fprintf(stderr, "krepro: undo %s: %s\n", line, !r ? "done" : e ? strerror(e)
			: r == -2 ? "cannot undo it here: do it by hand" : "gone, nothing to restore");
	return e || r == -2;
}

/* Restore one journal file, last entry first; returns the number of entries that could
 * not be undone, -1 if it cannot be read. */
int kr_journal_restore_file(const char *path, bool verbose)
{
	char *text = kr_read_text(path), *nl, *kept, *line;
	int failed = 0;

	if (!text)
		return errno == ENOENT ? 0 : -1;
	/* what could not be undone stays, in its order, under the first line, and nothing
	 * else: a later run retries only that (issue 42: the entries undone were replayed
	 * by every later run, undoing an admin's own changes made since) */
	size_t len = strlen(text), at = len + 1;
	if (!(kept = calloc(1, len + 2))) {
		free(text);
		return -1;
	}
	do {
		nl = strrchr(text, '\n');
		line = nl ? nl + 1 : text;
		size_t n = strlen(line);
		char *copy = strdup(line); /* undo_line writes over its tabs */
		if (copy && (!nl || undo_line(copy, verbose))) {
			failed += nl != NULL;
			memcpy(kept + (at -= n + 1), line, n);
			kept[at + n] = '\n';
		}
		free(copy);
		if (nl)
			*nl = 0;
	} while (nl);
	int fd = failed ? open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (fd >= 0) {
		if (write(fd, kept + at, len + 1 - at) < 0)
			failed = -1;
		close(fd);
	}
	free(kept);
	free(text);
	return failed;
}

/* The supervisor's last act: restore, then remove the journal file. */
int kr_journal_finish(void)
{
	if (journal_fd < 0 || getpid() != journal_owner)
		return 0;
	int failed = kr_journal_restore_file(journal_file, false);
	close(journal_fd);
	journal_fd = -1;
	if (!failed)
		unlink(journal_file);
	return failed;
}

int kr_journal_restore(void)
{
	return kr_journal_finish();
}

/* Journals of dead runs. Their measuring children are dead too: a child inherits the
 * lock, so that the caller, who holds it, can only get it once they have exited. */
int kr_journal_restore_stale(int *failed)
{
	DIR *d = opendir(kr_rundir());
	struct dirent *e;
	int found = 0, kept = 0, pid, nf;

	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d))) {
		char path[600], head[160], prog[64] = "?";
		unsigned long long st = 0, now;
		snprintf(path, sizeof(path), "%s/%s", kr_rundir(), e->d_name);
		/* the first line is enough: EFBIG (the rest did not fit) is no error here */
		if (sscanf(e->d_name, "journal.%d", &pid) != 1 || (pid == getpid() && journal_fd >= 0) ||
		    (kr_read_file(path, head, sizeof(head)) < 0 && errno != EFBIG))
			continue;
		sscanf(head, "krepro-journal\t%*d\t%llu\t%63s", &st, prog);
		/* a live run owns it (starttime 0: any task of that pid); our own pid with
		 * another starttime is a dead run's whose pid we now have (issue 42: skipped,
		 * then truncated by our journal_begin, its changes kept for good) */
		if ((now = task_starttime(pid)) && (!st || now == st))
			continue;
		fprintf(stderr, "krepro: restoring the journal of a dead %s run (pid %d)\n", prog, pid);
		if (!(nf = kr_journal_restore_file(path, true)))
			unlink(path); /* else kept, for the user */
		kept += nf != 0;
		found++;
	}
	closedir(d);
	if (failed)
		*failed = kept;
	return found;
}

/* ---- the single-run lock, held until exit (by the measuring child too) ---- */
int kr_lock_take(double wait_s, pid_t *holder)
{
	static int fd = -1; /* held already (kr_main run twice, in tests): flock would fail */
	char path[600], buf[32] = "";
	int64_t until = kr_now_ns() + (int64_t)(wait_s * 1e9);
	int e;

	if (fd >= 0)
		return 0;
	snprintf(path, sizeof(path), "%s/lock", kr_rundir());
	mkdir(kr_rundir(), 0700);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return -1;
	while ((e = flock(fd, LOCK_EX | LOCK_NB) ? errno : 0) == EWOULDBLOCK && !kr_pre_run_signal &&
	       kr_now_ns() < until)
		kr_sleep_ns(50000000);
	if (!e)
		return ftruncate(fd, 0) || dprintf(fd, "%d\n", (int)getpid()) < 0 ? -1 : 0;
	*holder = pread(fd, buf, sizeof(buf) - 1, 0) > 0 ? (pid_t)atoi(buf) : 0;
	close(fd);
	fd = -1;
	return errno = kr_pre_run_signal ? EINTR : e, -1;
}
