// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: kr_kv_get (cpu.stat, /proc/meminfo) on arbitrary text. The input is
 * "KEY\0TEXT" (no NUL: a fixed key). When found, the key must start a line of the text.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	char *key, *text;

	if (nul) {
		key = fuzz_cstr(data, (size_t)(nul - data));
		text = fuzz_cstr(nul + 1, size - (size_t)(nul - data) - 1);
	} else {
		key = fuzz_cstr((const uint8_t *)"nr_throttled", 12);
		text = fuzz_cstr(data, size);
	}
	uint64_t v = 12345;
	if (kr_kv_get(text, key, &v) == 0) {
		char *at = strstr(text, key);
		FUZZ_CHECK(at != NULL);
	} else {
		FUZZ_CHECK(v == 12345); /* not found: the output is left alone */
	}
	free(key);
	free(text);
	return 0;
}
