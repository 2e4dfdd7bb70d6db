// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the save/restore journal and the single-run lock (CONTRACT.md sections 5, 7).
 *
 * Every change to system state is appended to /run/krepro/journal.<pid> *before* it is
 * made, as the action that undoes it. Undo actions are idempotent (write a value, rmdir,
 * unlink, set a policy if the task is still the same one), so restoring twice is harmless
 * and the supervising parent can always restore the whole journal after the child ends.
 * A journal whose owner died (SIGKILL) is restored by the next run of any program.
 *
 * Paths are journaled absolute (resolved before the change): a restore runs from any
 * directory, e.g. `--restore-only` after a SIGKILL. An entry that could not be undone is
 * reported as such, never as done.
 *
 * Line format, fields separated by tabs, with \t \n \\ escaped:
 *   krepro-journal <pid> <starttime> <program>
 *   write <path> <undo value>
 *   rmdir <path>
 *   unlink <path>
 *   sched <tid> <starttime> <policy> <prio>
 *   hwtstamp <ifname> <tx_type> <rx_filter>   (SIOCSHWTSTAMP of a NIC in the root namespace)
 *   child <pid> <starttime>       (the measuring child: waited for before a stale restore)
 */
#include "krepro.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
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
static char journal_path[512];
static pid_t journal_owner;

const char *kr_rundir(void)
{
	const char *d = getenv("KREPRO_RUNDIR");
	return d && *d ? d : "/run/krepro";
}

static int ensure_rundir(void)
{
	if (mkdir(kr_rundir(), 0700) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

static void journal_escape(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 3 < len; s++) {
		if (*s == '\t' || *s == '\n' || *s == '\\') {
			out[o++] = '\\';
			out[o++] = *s == '\t' ? 't' : *s == '\n' ? 'n' : '\\';
		} else {
			out[o++] = *s;
		}
	}
	out[o] = 0;
}

static void journal_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			*o++ = *s == 't' ? '\t' : *s == 'n' ? '\n' : *s;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

static unsigned long long task_starttime(pid_t pid)
{
	struct kr_taskstat t;
	return kr_read_taskstat(pid, &t) == 0 ? t.starttime : 0;
}

/* the same process still running (not a reused pid, not a zombie nobody reaps) */
static bool task_alive(pid_t pid, unsigned long long starttime)
{
	struct kr_taskstat t;

	if (kr_read_taskstat(pid, &t) < 0)
		return false;
	return t.state != 'Z' && t.state != 'X' && (!starttime || t.starttime == starttime);
}

/* Open this process's journal (the supervisor's: a forked child keeps appending to it). */
static int journal_open(void)
{
	if (journal_fd >= 0)
		return 0;
	if (ensure_rundir() < 0)
		return -1;
	journal_owner = getpid();
	snprintf(journal_path, sizeof(journal_path), "%s/journal.%d", kr_rundir(), (int)journal_owner);
	journal_fd = open(journal_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (journal_fd < 0)
		return -1;
	char line[256];
	const struct kr_prog *p = kr_program();
	int n = snprintf(line, sizeof(line), "krepro-journal\t%d\t%llu\t%s\n", (int)journal_owner,
			 task_starttime(journal_owner), p ? p->name : "krepro");
	if (write(journal_fd, line, (size_t)n) != n)
		return -1;
	return 0;
}

static int journal_append(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int journal_append(const char *fmt, ...)
{
	char line[4096];
	va_list ap;

	if (journal_open() < 0) {
		kr_warn("cannot write the journal in %s: %s", kr_rundir(), strerror(errno));
		return -1;
	}
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* one write() per line with O_APPEND: a crash never leaves half an entry behind
	 * that a restore would misread as a complete one */
	if (write(journal_fd, line, (size_t)n) != n)
		return -1;
	fdatasync(journal_fd);
	return 0;
}

/* Forget the inherited journal (a forked process that is a run of its own, in tests). */
void kr_journal_detach(void)
{
	if (journal_fd >= 0)
		close(journal_fd);
	journal_fd = -1;
}

int kr_journal_begin(void)
{
	return journal_open();
}

int kr_journal_child(pid_t pid)
{
	return journal_append("child\t%d\t%llu\n", (int)pid, task_starttime(pid));
}

/* path made absolute, without following its last component (it may not exist yet, or be a
 * symlink the undo must remove, not its target): the directory resolved, the name kept */
int kr_journal_abspath(const char *path, char *out, size_t len)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;

	if (!*path || !*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		errno = EINVAL; /* "dir/", ".": no name to keep */
		return -1;
	}
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (!realpath(dir, real))
		return -1;
	int n = snprintf(out, len, "%s/%s", strcmp(real, "/") ? real : "", name);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* escaped absolute path for a journal line */
static int journal_path_field(const char *path, char *out, size_t len)
{
	char abs[PATH_MAX];

	if (kr_journal_abspath(path, abs, sizeof(abs)) < 0) {
		kr_warn("journal: cannot resolve %s: %s", path, strerror(errno));
		return -1;
	}
	journal_escape(abs, out, len);
	return 0;
}

int kr_journal_write_undo(const char *path, const char *value, const char *undo)
{
	char p[1024], u[2048];

	if (journal_path_field(path, p, sizeof(p)) < 0)
		return -1;
	journal_escape(undo, u, sizeof(u));
	if (journal_append("write\t%s\t%s\n", p, u) < 0)
		return -1;
	return kr_write_file(path, value);
}

int kr_journal_write(const char *path, const char *value)
{
	char old[2048];

	if (kr_read_file(path, old, sizeof(old)) < 0)
		return -1;
	return kr_journal_write_undo(path, value, old);
}

int kr_journal_mkdir(const char *path, mode_t mode)
{
	char p[1024];

	if (journal_path_field(path, p, sizeof(p)) < 0 || journal_append("rmdir\t%s\n", p) < 0)
		return -1;
	return mkdir(path, mode);
}

int kr_journal_unlink(const char *path)
{
	char p[1024];

	if (journal_path_field(path, p, sizeof(p)) < 0)
		return -1;
	return journal_append("unlink\t%s\n", p);
}

int kr_journal_sched(pid_t tid, int policy, int prio)
{
	struct sched_param sp;
	int old = sched_getscheduler(tid);
	unsigned long long st = task_starttime(tid);

	if (old < 0 || sched_getparam(tid, &sp) < 0 || !st)
		return -1;
	if (journal_append("sched\t%d\t%llu\t%d\t%d\n", (int)tid, st, old, sp.sched_priority) < 0)
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
	char name[64];

	/* a driver without SIOCGHWTSTAMP: assume stamping was off, the usual default */
	if (hwtstamp_ioctl(ifname, &old, false) < 0)
		old = (struct hwtstamp_config){ .tx_type = HWTSTAMP_TX_OFF, .rx_filter = HWTSTAMP_FILTER_NONE };
	journal_escape(ifname, name, sizeof(name));
	if (journal_append("hwtstamp\t%s\t%d\t%d\n", name, old.tx_type, old.rx_filter) < 0)
		return -1;
	return hwtstamp_ioctl(ifname, &cfg, true);
}

/* A cgroup cannot be removed while tasks are in it: move stragglers to the parent. */
static int remove_cgroup_dir(const char *path)
{
	char procs[1100], parent[1100], buf[4096];

	for (int i = 0; i < 100; i++) {
		if (rmdir(path) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -1; /* ENOTEMPTY (files or child groups) does not pass by waiting */
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
		if (errno == EBUSY && kr_read_file(procs, buf, sizeof(buf)) > 0) {
			snprintf(parent, sizeof(parent), "%s", path);
			char *slash = strrchr(parent, '/');
			if (slash) {
				strcpy(slash, "/cgroup.procs");
				for (char *s = strtok(buf, "\n"); s; s = strtok(NULL, "\n"))
					kr_write_file(parent, s);
			}
		}
		kr_sleep_ns(20000000); /* an exiting task leaves the group a little later */
	}
	errno = EBUSY;
	return -1;
}

static int journal_undo_line(char *line, bool verbose)
{
	char *f[6] = { 0 };
	int n = 0;

	for (char *s = line; n < 6; n++) {
		f[n] = s;
		s = strchr(s, '\t');
		if (!s) {
			n++;
			break;
		}
		*s++ = 0;
	}
	for (int i = 0; i < n; i++)
		journal_unescape(f[i]);
	int r = 0;
	const char *gone = "";
	bool pathed = (!strcmp(f[0], "write") && n == 3) ||
		      ((!strcmp(f[0], "rmdir") || !strcmp(f[0], "unlink")) && n == 2);
	if (pathed && f[1][0] != '/') {
		/* relative to a directory this process does not know (an older krepro's
		 * journal): acting here could remove the wrong file; say so instead */
		fprintf(stderr, "krepro: cannot restore %s %s: a relative path "
			"(from the dead run's directory): undo it by hand\n", f[0], f[1]);
		return 1;
	}
	if (!strcmp(f[0], "write") && n == 3) {
		r = kr_write_file(f[1], f[2]);
		if (r < 0 && errno == ENOENT)
			r = 0, gone = " (gone: nothing to restore)"; /* with its namespace or device */
		if (verbose)
			fprintf(stderr, "krepro: restore %s = %s%s\n", f[1], f[2], r ? " FAILED" : gone);
	} else if (!strcmp(f[0], "rmdir") && n == 2) {
		if (access(f[1], F_OK) < 0 && errno == ENOENT)
			gone = " (not there: never made, or removed already)";
		r = remove_cgroup_dir(f[1]);
		if (verbose)
			fprintf(stderr, "krepro: remove %s%s\n", f[1], r ? " FAILED" : gone);
	} else if (!strcmp(f[0], "unlink") && n == 2) {
		if (unlink(f[1]) == 0)
			r = 0;
		else if (errno == ENOENT)
			gone = " (not there: never made, or removed already)";
		else
			r = -1;
		if (verbose)
			fprintf(stderr, "krepro: remove %s%s\n", f[1], r ? " FAILED" : gone);
	} else if (!strcmp(f[0], "sched") && n == 5) {
		char *end;
		long tid = strtol(f[1], &end, 10);
		unsigned long long st = strtoull(f[2], NULL, 10);
		/* only the same task (a pid may have been reused since), and never tid 0, which
		 * would be the restoring process itself */
		if (tid > 0 && tid <= INT32_MAX && !*end && st && task_starttime((pid_t)tid) == st)
			r = kr_set_sched((pid_t)tid, atoi(f[3]), atoi(f[4])) < 0 && errno != ESRCH ? -1 : 0;
		if (verbose)
			fprintf(stderr, "krepro: restore policy %s prio %s of task %ld%s\n", f[3], f[4],
				tid, r ? " FAILED" : "");
	} else if (!strcmp(f[0], "hwtstamp") && n == 4) {
		struct hwtstamp_config cfg = { .tx_type = atoi(f[2]), .rx_filter = atoi(f[3]) };
		r = hwtstamp_ioctl(f[1], &cfg, true) < 0 && errno != ENODEV ? -1 : 0;
		if (verbose)
			fprintf(stderr, "krepro: restore hardware timestamping of %s (tx %s, rx %s)%s\n",
				f[1], f[2], f[3], r ? " FAILED" : "");
	} else if (strcmp(f[0], "krepro-journal") && strcmp(f[0], "child") && *f[0]) {
		fprintf(stderr, "krepro: journal: unknown entry '%s'\n", f[0]);
		r = -1;
	}
	if (r)
		fprintf(stderr, "krepro: could not restore (%s): %s\n", f[0], strerror(errno));
	return r ? 1 : 0;
}

static int journal_restore_text(char *text, bool verbose)
{
	int failed = 0;
	char **lines = NULL;
	size_t n = 0;

	for (char *s = strtok(text, "\n"); s; s = strtok(NULL, "\n")) {
		char **more = realloc(lines, (n + 1) * sizeof(char *));
		if (!more) {
			free(lines);
			return 1;
		}
		lines = more;
		lines[n++] = s;
	}
	while (n--)
		failed += journal_undo_line(lines[n], verbose);
	free(lines);
	return failed;
}

int kr_journal_restore_file(const char *path, bool verbose)
{
	char *t = kr_read_text(path);

	if (!t)
		return errno == ENOENT ? 0 : -1;
	int failed = journal_restore_text(t, verbose);
	free(t);
	return failed;
}

int kr_journal_restore(void)
{
	if (journal_fd < 0)
		return 0;
	int failed = kr_journal_restore_file(journal_path, false);
	if (ftruncate(journal_fd, 0) < 0)
		failed++;
	return failed;
}

/* The supervisor's last act: restore, then remove the journal file. */
int kr_journal_finish(void)
{
	if (journal_fd < 0 || getpid() != journal_owner)
		return 0;
	int failed = kr_journal_restore_file(journal_path, false);
	close(journal_fd);
	journal_fd = -1;
	if (!failed)
		unlink(journal_path);
	return failed;
}

int kr_journal_restore_stale(int *failed)
{
	DIR *d = opendir(kr_rundir());
	struct dirent *e;
	int found = 0;

	if (failed)
		*failed = 0;
	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "journal.", 8))
			continue;
		pid_t pid = (pid_t)atoi(e->d_name + 8);
		char path[600];
		snprintf(path, sizeof(path), "%s/%s", kr_rundir(), e->d_name);
		if (pid == getpid() || pid <= 0)
			continue;
		char *t = kr_read_text(path);
		if (!t)
			continue;
		unsigned long long st = 0, cst = 0;
		int cpid = 0;
		char prog[64] = "?";
		sscanf(t, "krepro-journal\t%*d\t%llu\t%63s", &st, prog);
		char *c = strstr(t, "\nchild\t");
		if (c)
			sscanf(c, "\nchild\t%d\t%llu", &cpid, &cst);
		free(t);
		if (task_alive(pid, st))
			continue; /* a live run owns it */
		/* the owner was killed; its child dies with it (PDEATHSIG), but may take a moment */
		for (int i = 0; cpid > 0 && task_alive(cpid, cst) && i < 200; i++)
			kr_sleep_ns(10000000);
		fprintf(stderr, "krepro: found the journal of a %s run (pid %d) that did not finish; restoring it\n",
			prog, (int)pid);
		int nf = kr_journal_restore_file(path, true);
		if (nf == 0) {
			unlink(path);
		} else {
			fprintf(stderr, "krepro: kept %s: %d entr%s could not be restored\n", path,
				nf < 0 ? 1 : nf, nf == 1 ? "y" : "ies");
			if (failed)
				(*failed)++;
		}
		found++;
	}
	closedir(d);
	return found;
}

/* ---- the single-run lock ---- */
static int lock_fd = -1;

int kr_lock_take(double wait_s, pid_t *holder)
{
	char path[600];

	if (lock_fd >= 0)
		return 0; /* held already: flock would conflict with our own earlier open */
	if (ensure_rundir() < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/lock", kr_rundir());
	lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock_fd < 0)
		return -1;
	int64_t until = kr_now_ns() + (int64_t)(wait_s * 1e9);
	while (flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
		if (kr_pre_run_signal) {
			close(lock_fd);
			lock_fd = -1;
			errno = EINTR;
			return -1;
		}
		if (errno != EWOULDBLOCK || kr_now_ns() >= until) {
			char buf[32] = "";
			if (pread(lock_fd, buf, sizeof(buf) - 1, 0) > 0)
				*holder = (pid_t)atoi(buf);
			close(lock_fd);
			lock_fd = -1;
			errno = EWOULDBLOCK;
			return -1;
		}
		kr_sleep_ns(50000000);
	}
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(lock_fd, 0) < 0 || pwrite(lock_fd, buf, (size_t)n, 0) != n)
		return -1;
	return 0;
}
