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

	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, sep);
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, word, n))
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

int kr_cgroups_parse(const char *mountinfo, struct kr_cgroups *cg)
{
	memset(cg, 0, sizeof(*cg));
	for (const char *l = mountinfo; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		char line[2048], mnt[256], fstype[64], opts[1024];
		size_t len = strcspn(l, "\n");
		if (len >= sizeof(line))
			continue;
		memcpy(line, l, len);
		line[len] = 0;
		/* "id parent maj:min root mountpoint options [optional...] - fstype source superopts" */
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %*s %1023s", fstype, opts) != 2)
			continue;
		if (!strcmp(fstype, "cgroup2") && !cg->v2[0]) {
			snprintf(cg->v2, sizeof(cg->v2), "%s", mnt);
		} else if (!strcmp(fstype, "cgroup")) {
			if (list_has_word(opts, "cpu", ',') && !cg->v1_cpu[0])
				snprintf(cg->v1_cpu, sizeof(cg->v1_cpu), "%s", mnt);
			if (list_has_word(opts, "cpuacct", ',') && !cg->v1_cpuacct[0])
				snprintf(cg->v1_cpuacct, sizeof(cg->v1_cpuacct), "%s", mnt);
		}
	}
	return cg->v2[0] || cg->v1_cpu[0] || cg->v1_cpuacct[0] ? 0 : -1;
}

int kr_cgroups_find(struct kr_cgroups *cg)
{
	static char text[256 * 1024];
	char path[300], ctl[512];

	if (kr_read_file("/proc/self/mountinfo", text, sizeof(text)) < 0)
		return -1;
	int r = kr_cgroups_parse(text, cg);
	if (cg->v2[0]) {
		snprintf(path, sizeof(path), "%s/cgroup.controllers", cg->v2);
		cg->v2_cpu = kr_read_file(path, ctl, sizeof(ctl)) >= 0 && list_has_word(ctl, "cpu", ' ');
	}
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
