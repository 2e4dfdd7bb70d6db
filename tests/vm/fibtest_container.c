// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: fibtest as it starts in a container on cgroup v2, for a guest booted by
 * scripts/vmrun --cgroup v2: the cpu controller enabled at the real root (as a host gives
 * it to its containers), this process moved into a group "ct", then a cgroup namespace and
 * a fresh cgroup2 mount, so /sys/fs/cgroup is ct: a non-root group with processes in it.
 * fibtest must end SKIP 129 with the reason, before changing anything (it used to write
 * "+cpu" there and end in ERROR). Built and run by tests/vm/fibtest_v2.sh.
 */
#define main fibtest_main
#include "fibtest.c"
#undef main

#include <sys/mount.h>
#include <sys/stat.h>

int main(int argc, char **argv)
{
	char pid[32], ctl[256] = "";

	mkdir("/sys/fs/cgroup/ct", 0755);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (kr_write_file("/sys/fs/cgroup/cgroup.subtree_control", "+cpu") < 0 ||
	    kr_write_file("/sys/fs/cgroup/ct/cgroup.procs", pid) < 0 ||
	    unshare(CLONE_NEWCGROUP | CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    umount2("/sys/fs/cgroup", MNT_DETACH) < 0 ||
	    mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, NULL) < 0) {
		perror("fibtest_container: setting up the container view");
		return KR_EXIT_ERROR;
	}
	kr_read_file("/sys/fs/cgroup/cgroup.controllers", ctl, sizeof(ctl));
	fprintf(stderr, "fibtest_container: /sys/fs/cgroup is group ct, controllers: %s\n", ctl);
	return fibtest_main(argc, argv);
}
