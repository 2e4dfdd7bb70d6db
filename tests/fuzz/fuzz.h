/* SPDX-License-Identifier: GPL-2.0-only */
/* Description: helpers shared by the libFuzzer harnesses of tests/fuzz/. */
#ifndef KREPRO_FUZZ_H
#define KREPRO_FUZZ_H
#include "krepro.h"

#include <stdlib.h>
#include <string.h>

/* libFuzzer's data is not NUL-terminated: an exact-size copy, so ASan sees any over-read */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = 0;
	return s;
}

/* lib/ prints a line on stderr for every rejected input: harnesses that call such code send
 * stderr to /dev/null. libFuzzer kept its own FILE pointer to the real stderr and ASan
 * writes to fd 2 directly, so crash reports still show; FUZZ_CHECK writes to fuzz_err. */
static FILE *fuzz_err;
static inline void fuzz_quiet_stderr(void)
{
	FILE *null = fopen("/dev/null", "w");
	fuzz_err = stderr;
	if (null)
		stderr = null;
}

/* a failed invariant: a crash libFuzzer reports with the input */
#define FUZZ_CHECK(cond)                                                                    \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(fuzz_err ? fuzz_err : stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__,    \
				__LINE__);                                                  \
			abort();                                                            \
		}                                                                           \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
#endif
