// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: kr_parse_taskstat on arbitrary /proc/PID/stat text (comm may hold spaces and
 * parentheses). Checked: comm is NUL-terminated inside its array.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct kr_taskstat t;

	memset(&t, 0xa5, sizeof(t));
	if (kr_parse_taskstat(text, &t) == 0)
		FUZZ_CHECK(memchr(t.comm, 0, sizeof(t.comm)) != NULL);
	free(text);
	return 0;
}
