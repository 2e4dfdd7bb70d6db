// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: kr_kconfig_parse on arbitrary config text. The first byte sets the output
 * buffer size (1..64, allocated exactly, so ASan sees an overflow); the second picks the
 * option (fixed names, or the first line of the input).
 */
#include "fuzz.h"

static const char *const options[] = { "CONFIG_HZ", "CONFIG_CFS_BANDWIDTH", "CONFIG_", "C" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t len = 1 + data[0] % 64;
	char *text = fuzz_cstr(data + 2, size - 2), *opt;

	if (data[1] % 5 == 4) {
		size_t l = strcspn(text, "\n");
		opt = fuzz_cstr((const uint8_t *)text, l);
	} else {
		opt = strdup(options[data[1] % 5]);
	}
	char *buf = malloc(len);
	int r = kr_kconfig_parse(text, opt, buf, len);
	FUZZ_CHECK(r == 0 || r == 1);
	FUZZ_CHECK(strlen(buf) < len);
	free(buf);
	free(opt);
	free(text);
	return 0;
}
