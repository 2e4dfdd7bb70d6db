// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: what lib reads of the kernel's own words on arbitrary text: the command
 * line, uname -r and -v, /sys/kernel/realtime and config text (kr_softirq_threaded_from,
 * kr_backlog_threaded_from, kr_cmdline_has), and /proc/cpuinfo (kr_cpu_model_from). The
 * input is split at NUL bytes into those texts; the first byte sets the model buffer's
 * size (1..128, allocated exactly, so ASan sees an overflow). Checked: no memory error, a
 * NUL-terminated model that is never empty, and a cause only from what the kernel said.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t len = 1 + data[0] % 128;
	char *buf = fuzz_cstr(data + 1, size - 1), *part[6] = { "", "", "", "", "", "" };
	int n = 0;

	for (size_t i = 0; i < size && n < 6; n++) { /* cmdline, release, version, ... */
		part[n] = buf + i;
		i += strlen(buf + i) + 1;
	}
	struct kr_kernel k = { .cmdline = part[0], .release = part[1], .version = part[2],
			       .realtime = *part[3] ? part[3] : NULL,
			       .config = *part[4] ? part[4] : NULL };
	const char *rt = kr_preempt_rt(&k), *s = kr_softirq_threaded_from(&k),
		   *b = kr_backlog_threaded_from(&k);
	FUZZ_CHECK(!rt || s); /* RT: softirqs in threads, always */
	FUZZ_CHECK(!b || rt || strstr(k.cmdline, "backlog"));
	FUZZ_CHECK(!s || rt || strstr(k.cmdline, "threadirqs"));
	kr_cmdline_has(k.cmdline, part[5]);
	char *model = malloc(len);
	kr_cpu_model_from(part[5], part[4], model, len);
	FUZZ_CHECK(memchr(model, 0, len) && (len == 1 || *model));
	free(model);
	free(buf);
	return 0;
}
