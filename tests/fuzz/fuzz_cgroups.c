// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: kr_cgroups_parse on arbitrary /proc/self/mountinfo text, then
 * kr_rt_runtime_file of a process in /docker/1f2e/app through the mounts found. Checked:
 * every mount point and root found is NUL-terminated in its array, the result agrees with
 * the return, and a file is under its mount point.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct kr_cgroups cg;

	memset(&cg, 0xa5, sizeof(cg));
	int r = kr_cgroups_parse(text, &cg);
	FUZZ_CHECK(memchr(cg.v2, 0, sizeof(cg.v2)) && memchr(cg.v1_cpu, 0, sizeof(cg.v1_cpu)) &&
		   memchr(cg.v1_cpuacct, 0, sizeof(cg.v1_cpuacct)));
	FUZZ_CHECK((r == 0) == (cg.v2[0] || cg.v1_cpu[0] || cg.v1_cpuacct[0]));
	FUZZ_CHECK(memchr(cg.v2_root, 0, sizeof(cg.v2_root)) &&
		   memchr(cg.v1_cpu_root, 0, sizeof(cg.v1_cpu_root)));
	char file[700], group[256];
	int kind = kr_rt_runtime_file("1:cpu:/docker/1f2e/app\n0::/docker/1f2e/app\n", &cg, file,
				      sizeof(file), group, sizeof(group));
	const char *mnt = kind == 1 ? cg.v1_cpu : cg.v2;
	FUZZ_CHECK(kind < 0 || (!strncmp(file, mnt, strlen(mnt)) &&
				strstr(file, "/cpu.rt_runtime_us")));
	free(text);
	return 0;
}
