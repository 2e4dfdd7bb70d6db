// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: kr_parse_proc_stat on arbitrary /proc/stat text. The per-CPU array is
 * allocated with exactly maxcpus entries (from the first byte), so ASan catches a write
 * past it; the count returned must lie within it.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int maxcpus = data[0] % 9; /* 0..8: includes an empty array */
	char *text = fuzz_cstr(data + 1, size - 1);
	struct kr_cpu_times all, *per = maxcpus ? malloc(sizeof(*per) * (size_t)maxcpus) : NULL;

	int n = kr_parse_proc_stat(text, &all, per, maxcpus);
	FUZZ_CHECK(n >= -1 && n <= maxcpus);
	if (n >= 0)
		(void)kr_cpu_times_total(&all);
	/* per == NULL is allowed: only the "cpu" line is wanted */
	n = kr_parse_proc_stat(text, &all, NULL, 0);
	FUZZ_CHECK(n == -1 || n == 0);
	free(per);
	free(text);
	return 0;
}
