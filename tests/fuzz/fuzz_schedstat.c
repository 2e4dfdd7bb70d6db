// SPDX-License-Identifier: GPL-2.0-only
/* Description: kr_parse_schedstat on arbitrary /proc/PID/schedstat text. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct kr_schedstat s;

	int r = kr_parse_schedstat(text, &s);
	FUZZ_CHECK(r == 0 || r == -1);
	free(text);
	return 0;
}
