// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: krepro-envinfo, the environment a kernel performance bug report needs
 * (kernel config, boot parameters, sched features, cpuidle, RT throttling, IRQ affinity,
 * kthread priorities, cgroups, THP and hugepages, NUMA, virtualisation), as short text or
 * JSON. Every program's report header uses the same code (kr_env_standard) for its subset.
 * Usage: krepro-envinfo [--json]
 */
#include "krepro.h"

#include <string.h>

int main(int argc, char **argv)
{
	bool json = argc == 2 && !strcmp(argv[1], "--json");

	if (argc > 2 || (argc == 2 && !json)) {
		fprintf(stderr, "usage: krepro-envinfo [--json]\n");
		return KR_EXIT_ERROR;
	}
	kr_env_standard(kr_env_groups);
	kr_env_print(stdout, json);
	return 0;
}
