// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: cgroup discovery and helpers. On this kind of machine v1 may hold the cpu
 * controller (with cpu and cpuacct as separate mounts) while v2 is mounted without it, so
 * the hierarchies are found from mountinfo, never assumed.
 */
#include "krepro.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool list_has_word(const char *list, const char *word, char sep)
{
	size_t n = strlen(word);

	for (const char *p = list; p; p = strchr(p, sep), p = p ? p + 1 : NULL)
		if (!strncmp(p, word, n) && (p[n] == sep || !p[n]))
			return true;
	return false;
}

/* copy the line at *p into line (cut to fit) and move *p past it; false at the end */
static bool get_line(const char **p, char *line, size_t len)
{
	size_t n = *p ? strcspn(*p, "\n") : 0;

	if (!*p || !**p)
		return false;
	snprintf(line, len, "%.*s", (int)n, *p);
	*p += n + ((*p)[n] == '\n');
	return true;
}

int kr_cgroups_parse(const char *mountinfo, struct kr_cgroups *cg)
{
	char line[2048], mnt[256], fstype[64], opts[1024], *dash;

	memset(cg, 0, sizeof(*cg));
	while (get_line(&mountinfo, line, sizeof(line))) {
		/* "id parent maj:min root mountpoint options [optional...] - fstype source superopts" */
		if (!(dash = strstr(line, " - ")) || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %*s %1023s", fstype, opts) != 2)
			continue;
		bool v1 = !strcmp(fstype, "cgroup");
		if (!strcmp(fstype, "cgroup2") && !cg->v2[0])
			snprintf(cg->v2, sizeof(cg->v2), "%s", mnt);
		if (v1 && list_has_word(opts, "cpu", ',') && !cg->v1_cpu[0])
			snprintf(cg->v1_cpu, sizeof(cg->v1_cpu), "%s", mnt);
		if (v1 && list_has_word(opts, "cpuacct", ',') && !cg->v1_cpuacct[0])
			snprintf(cg->v1_cpuacct, sizeof(cg->v1_cpuacct), "%s", mnt);
	}
	return cg->v2[0] || cg->v1_cpu[0] || cg->v1_cpuacct[0] ? 0 : -1;
}

int kr_cgroups_find(struct kr_cgroups *cg)
{
	char path[300], ctl[512], *text = kr_read_text("/proc/self/mountinfo");

	if (!text)
		return -1;
	int r = kr_cgroups_parse(text, cg);
	free(text);
	snprintf(path, sizeof(path), "%s/cgroup.controllers", cg->v2);
	cg->v2_cpu = cg->v2[0] && kr_read_file(path, ctl, sizeof(ctl)) >= 0 && list_has_word(ctl, "cpu", ' ');
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

int kr_cgroup_enable(const char *parent, const char *controller)
{
	char path[600], cur[512], add[64], undo[64];

	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", parent);
	if (kr_read_file(path, cur, sizeof(cur)) < 0)
		return -1;
	if (list_has_word(cur, controller, ' '))
		return 0;
	snprintf(add, sizeof(add), "+%s", controller);
	snprintf(undo, sizeof(undo), "-%s", controller);
	return kr_journal_write_undo(path, add, undo);
}

static int cgroup_write_id(const char *dir, const char *file, long id)
{
	char path[600], v[32];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	snprintf(v, sizeof(v), "%ld", id);
	return kr_write_file(path, v);
}

int kr_cgroup_attach_tid(const char *path, pid_t tid)
{
	char tasks[600];

	snprintf(tasks, sizeof(tasks), "%s/tasks", path);
	if (access(tasks, F_OK) == 0)
		return cgroup_write_id(path, "tasks", tid); /* v1 */
	/* v2 moves a single thread only within a threaded subtree; falling back to
	 * cgroup.procs would silently move the whole process: use kr_cgroup_attach_pid */
	return cgroup_write_id(path, "cgroup.threads", tid);
}

int kr_cgroup_attach_pid(const char *path, pid_t pid)
{
	return cgroup_write_id(path, "cgroup.procs", pid);
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
	int found = -1;

	*file = *group = 0;
	while (get_line(&proc_cgroup, line, sizeof(line))) {
		/* "hierarchy-id:controller,list:/path" */
		if (!(c1 = strchr(line, ':')) || !(c2 = strchr(c1 + 1, ':')) || c2[1] != '/')
			continue;
		*c2++ = 0;
		const char *mnt = NULL;
		int kind = 0;
		if (cg->v1_cpu[0] && list_has_word(c1 + 1, "cpu", ','))
			mnt = cg->v1_cpu, kind = 1;
		else if (!c1[1] && cg->v2[0] && !cg->v1_cpu[0] && found < 0)
			mnt = cg->v2, kind = 2; /* v2 has no rt files; the file may be absent */
		if (!mnt)
			continue;
		snprintf(file, flen, "%s%s%scpu.rt_runtime_us", mnt, c2, c2[1] ? "/" : "");
		snprintf(group, glen, "%s", c2);
		found = kind;
		if (kind == 1)
			break;
	}
	return found;
}

int kr_rt_check(int prio, char *reason, size_t len)
{
	struct kr_cgroups cg;
	char file[700], group[512], val[64], *text = NULL;
	pthread_t t;

	/* the truth: can a thread of this process be SCHED_FIFO prio? */
	if (kr_thread_start(&t, -1, SCHED_FIFO, prio, rt_probe, NULL) == 0) {
		pthread_join(t, NULL);
		return 0;
	}
	int e = errno;
	if (e != EPERM) {
		snprintf(reason, len, "cannot start a SCHED_FIFO %d thread: %s", prio, strerror(e));
		return KR_EXIT_ERROR;
	}
	/* CONFIG_RT_GROUP_SCHED: a group without RT runtime refuses SCHED_FIFO with EPERM,
	 * even to root (new v1 cpu groups start with cpu.rt_runtime_us 0) */
	int kind = -1;
	char cfg[8];
	if (kr_cgroups_find(&cg) == 0 && (text = kr_read_text("/proc/self/cgroup")))
		kind = kr_rt_runtime_file(text, &cg, file, sizeof(file), group, sizeof(group));
	free(text);
	if (kind == 1 && kr_read_file(file, val, sizeof(val)) >= 0 && atol(val) == 0) {
		snprintf(reason, len, "no RT time: cpu.rt_runtime_us=0 in cgroup %s", group);
		return KR_EXIT_SKIP_MACHINE;
	}
	if (kind == 2 && strcmp(group, "/") && kr_kconfig("CONFIG_RT_GROUP_SCHED", cfg, sizeof(cfg)) == 1) {
		snprintf(reason, len, "no RT time in v2 cgroup %s (RT_GROUP_SCHED: "
			 "rt_runtime_us=0)", group);
		return KR_EXIT_SKIP_MACHINE;
	}
	snprintf(reason, len, "needs CAP_SYS_NICE (or RLIMIT_RTPRIO >= %d) for SCHED_FIFO", prio);
	return KR_EXIT_SKIP_MACHINE;
}
