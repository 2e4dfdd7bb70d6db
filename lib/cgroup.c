// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: cgroup discovery and helpers. On this kind of machine v1 may hold the cpu
 * controller (with cpu and cpuacct as separate mounts) while v2 is mounted without it, so
 * the hierarchies are found from mountinfo, never assumed.
 */
#include "krepro.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* word is one of the sep-separated words of list */
static bool has_word(const char *list, const char *word, char sep)
{
	char l[2048], w[64];

	snprintf(l, sizeof(l), "%c%s%c", sep, list, sep);
	snprintf(w, sizeof(w), "%c%s%c", sep, word, sep);
	return strstr(l, w);
}

/* copy the line at *p into line (cut to fit) and move *p past it; false at the end */
static bool get_line(const char **p, char *line, size_t len)
{
	size_t n = strcspn(*p, "\n");

	snprintf(line, len, "%.*s", (int)n, *p);
	*p += n + ((*p)[n] == '\n');
	return n || **p;
}

/* the first mount of a kind, or one mounted over it later (it hides the first) */
static void take_mount(char *mnt, char *root, const char *m, const char *r)
{
	if (!mnt[0] || !strcmp(mnt, m))
		strcpy(mnt, m), strcpy(root, r);
}

int kr_cgroups_parse(const char *mountinfo, struct kr_cgroups *cg)
{
	char line[2048], root[256], mnt[256], fs[64], opts[1024], *dash, acct_root[256] = "";

	memset(cg, 0, sizeof(*cg));
	while (get_line(&mountinfo, line, sizeof(line))) {
		/* "id parent maj:min root mountpoint options [optional...] - fstype source
		 * superopts"; root: the directory of the hierarchy mounted there */
		if (!(dash = strstr(line, " - ")) ||
		    sscanf(line, "%*s %*s %*s %255s %255s", root, mnt) != 2 ||
		    sscanf(dash + 3, "%63s %*s %1023s", fs, opts) != 2)
			continue;
		bool v1 = !strcmp(fs, "cgroup");
		if (!strcmp(fs, "cgroup2"))
			take_mount(cg->v2, cg->v2_root, mnt, root);
		if (v1 && has_word(opts, "cpu", ','))
			take_mount(cg->v1_cpu, cg->v1_cpu_root, mnt, root);
		if (v1 && has_word(opts, "cpuacct", ','))
			take_mount(cg->v1_cpuacct, acct_root, mnt, root);
	}
	return cg->v2[0] || cg->v1_cpu[0] || cg->v1_cpuacct[0] ? 0 : -1;
}

int kr_cgroups_find(struct kr_cgroups *cg)
{
	char path[300], ctl[512] = "", *text = kr_read_text("/proc/self/mountinfo");
	int r = kr_cgroups_parse(text ? text : "", cg);

	free(text);
	snprintf(path, sizeof(path), "%s/cgroup.controllers", cg->v2);
	cg->v2_cpu = cg->v2[0] && kr_read_file(path, ctl, sizeof(ctl)) >= 0 &&
		     has_word(ctl, "cpu", ' ');
	return r;
}

int kr_cgroup_create(const char *path)
{
	char procs[600];

	if (kr_journal_mkdir(path, 0755) < 0)
		return -1;
	/* a mkdir under the tmpfs /sys/fs/cgroup "succeeds" without making a cgroup */
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
	if (access(procs, F_OK) < 0) {
		rmdir(path);
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

int kr_cgroup_remove(const char *path)
{
	char procs[PATH_MAX], ids[4096];
	size_t n = strlen(path);
	int r;

	/* a cgroup whose last task just exited can stay busy a moment; one with a task
	 * left (a workload the run forked, whose parent was killed) needs that task gone.
	 * Up to 10 s: a 128-vCPU guest under TCG kept one busy past 2 s (exit 128, the
	 * cgroup left behind on a host where that happens) */
	for (int i = 0; (r = rmdir(path)) < 0 && errno == EBUSY && i < 500; i++) {
		if (n + sizeof("/cgroup.procs") <= sizeof(procs)) {
			memcpy(procs, path, n);
			memcpy(procs + n, "/cgroup.procs", sizeof("/cgroup.procs"));
			int fd = open(procs, O_RDONLY | O_CLOEXEC);
			ssize_t len = fd < 0 ? -1 : read(fd, ids, sizeof(ids));
			if (fd >= 0)
				close(fd);
			for (long k = 0, pid = 0; k < len; k++) {
				if (ids[k] >= '0' && ids[k] <= '9') {
					pid = pid * 10 + ids[k] - '0';
					continue;
				}
				if (pid > 0 && pid != getpid())
					kill((pid_t)pid, SIGKILL);
				pid = 0;
			}
		}
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
	}
	return r;
}

int kr_cgroup_enable(const char *parent, const char *controller)
{
	char path[600], cur[512], add[64], undo[64];

	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", parent);
	if (kr_read_file(path, cur, sizeof(cur)) < 0)
		return -1;
	snprintf(add, sizeof(add), "+%s", controller);
	snprintf(undo, sizeof(undo), "-%s", controller);
	return has_word(cur, controller, ' ') ? 0 : kr_journal_write_undo(path, add, undo);
}

static int write_id(const char *dir, const char *file, long id)
{
	char path[600], v[32];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	snprintf(v, sizeof(v), "%ld", id);
	return kr_write_file(path, v);
}

int kr_cgroup_attach_tid(const char *path, pid_t tid)
{
	/* v1 "tasks"; v2 moves a single thread only within a threaded subtree: cgroup.procs
	 * would silently move the whole process (that is kr_cgroup_attach_pid) */
	int r = write_id(path, "tasks", tid);

	return r < 0 && errno == ENOENT ? write_id(path, "cgroup.threads", tid) : r;
}

int kr_cgroup_attach_pid(const char *path, pid_t pid)
{
	return write_id(path, "cgroup.procs", pid);
}

static int group_set(const char *group, const char *file, long long a, long long b)
{
	char path[600], v[64];

	snprintf(path, sizeof(path), "%s/%s", group, file);
	snprintf(v, sizeof(v), b ? "%lld %lld" : "%lld", a, b);
	return kr_write_file(path, v);
}

int kr_cpu_group(char *group, size_t len, const char *name, long long quota_us,
		 long long period_us)
{
	struct kr_cgroups cg;
	char path[600], busy[64];

	if (kr_cgroups_find(&cg) < 0 || (!cg.v2_cpu && !*cg.v1_cpu))
		return kr_skip(125, "no cpu controller in cgroup v1 or v2");
	snprintf(group, len, "%.250s/krepro-%s-%d", cg.v2_cpu ? cg.v2 : cg.v1_cpu, name,
		 (int)getpid());
	/* a container's cgroup namespace root (it has a cgroup.type, the real root has not)
	 * with processes in it cannot pass cpu down */
	snprintf(path, sizeof(path), "%s/cgroup.type", cg.v2);
	bool ns_root = cg.v2_cpu && access(path, F_OK) == 0;
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg.v2);
	if (ns_root && (kr_read_file(path, busy, sizeof(busy)) > 0 || errno == EFBIG))
		return kr_skip(129, "processes in cgroup %s (a container?)", cg.v2);
	/* the largest weight: other load must not look like lost quota */
	if ((cg.v2_cpu && kr_cgroup_enable(cg.v2, "cpu")) || kr_cgroup_create(group) ||
	    (cg.v2_cpu ? group_set(group, "cpu.weight", 10000, 0) ||
			 group_set(group, "cpu.max", quota_us, period_us)
		       : group_set(group, "cpu.shares", 262144, 0) ||
			 group_set(group, "cpu.cfs_period_us", period_us, 0) ||
			 group_set(group, "cpu.cfs_quota_us", quota_us, 0)))
		return kr_error("cannot make %s: %s", group, strerror(errno));
	return 0;
}

/* ---- may this process run SCHED_FIFO threads? ---- */

static void *rt_probe(void *arg)
{
	return arg;
}

int kr_rt_runtime_file(const char *proc_cgroup, const struct kr_cgroups *cg, char *file,
		       size_t flen, char *group, size_t glen)
{
	char line[1024], *c1, *c2;
	bool v1 = cg->v1_cpu[0];
	const char *root = v1 ? cg->v1_cpu_root : cg->v2_root;
	size_t rlen = strcmp(root, "/") ? strlen(root) : 0;

	*file = *group = 0;
	while (get_line(&proc_cgroup, line, sizeof(line))) {
		/* "hierarchy-id:controller,list:/path": the v1 cpu line, else the first v2 one
		 * (v2 has no rt files; the file may be absent) */
		if (!(c1 = strchr(line, ':')) || !(c2 = strchr(++c1, ':')) || c2[1] != '/')
			continue;
		*c2++ = 0;
		if (v1 ? !has_word(c1, "cpu", ',') : *c1 || !cg->v2[0])
			continue;
		snprintf(group, glen, "%s", c2);
		/* the path is the hierarchy's; the mount shows it from its root (a container's
		 * /docker/ID): a group outside that root is not in reach */
		if (strncmp(c2, root, rlen) || (c2[rlen] && c2[rlen] != '/'))
			return -1;
		c2 += rlen;
		if (snprintf(file, flen, "%s%s/cpu.rt_runtime_us", v1 ? cg->v1_cpu : cg->v2,
			     strcmp(c2, "/") ? c2 : "") >= (int)flen)
			return *file = 0, -1; /* a path cut short names another file */
		return v1 ? 1 : 2;
	}
	return -1;
}

int kr_rt_check(int prio, char *reason, size_t len)
{
	struct kr_cgroups cg;
	char file[700], group[512], val[64], cfg[8], *text = NULL;
	pthread_t t;
	int kind = -1;

	/* the truth: can a thread of this process be SCHED_FIFO prio? */
	if (kr_thread_start(&t, -1, SCHED_FIFO, prio, rt_probe, NULL) == 0)
		return pthread_join(t, NULL);
	if (errno != EPERM) {
		snprintf(reason, len, "cannot start a SCHED_FIFO %d thread: %s", prio, strerror(errno));
		return KR_EXIT_ERROR;
	}
	/* CONFIG_RT_GROUP_SCHED: a group without RT runtime refuses SCHED_FIFO with EPERM,
	 * even to root (new v1 cpu groups start with cpu.rt_runtime_us 0) */
	if (kr_cgroups_find(&cg) == 0 && (text = kr_read_text("/proc/self/cgroup")))
		kind = kr_rt_runtime_file(text, &cg, file, sizeof(file), group, sizeof(group));
	free(text);
	if (kind == 1 && kr_read_file(file, val, sizeof(val)) >= 0 && atol(val) == 0)
		snprintf(reason, len, "no RT time: cpu.rt_runtime_us=0 in cgroup %s", group);
	else if (kind == 2 && strcmp(group, "/") &&
		 kr_kconfig("CONFIG_RT_GROUP_SCHED", cfg, sizeof(cfg)) == 1)
		snprintf(reason, len, "no RT time in v2 cgroup %s (RT_GROUP_SCHED: "
			 "rt_runtime_us=0)", group);
	else
		snprintf(reason, len, "needs CAP_SYS_NICE (or RLIMIT_RTPRIO >= %d) for SCHED_FIFO",
			 prio);
	return KR_EXIT_SKIP_MACHINE;
}
