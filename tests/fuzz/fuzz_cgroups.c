// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: kr_cgroups_parse on arbitrary /proc/self/mountinfo text. Checked: every
 * mount point found is NUL-terminated in its array, and the result agrees with the return.
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
	free(text);
	return 0;
}
