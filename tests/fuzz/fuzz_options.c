// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the option value parsers (kr_parse_long/double/duration_ns/size/cpulist/choice
 * and kr_cpus_list). The first byte picks the parser and its range; the rest is the
 * value. Checked: no memory error, and an accepted value lies within the range asked for; a
 * CPU list holds online CPUs only and survives kr_cpus_list -> kr_parse_cpulist, and
 * kr_cpus_list into a short buffer truncates within it.
 */
#include "fuzz.h"

#include <limits.h>
#include <math.h>

static const long long_ranges[][2] = { { 0, 100 }, { -5, 5 }, { 1, 1000000 }, { LONG_MIN, LONG_MAX } };
static const double dbl_ranges[][2] = { { 0, 1 }, { -1e9, 1e9 }, { 0.001, 100 }, { 0, 0 } };
static const char *const units[] = { "s", "ms", "us", "ns" };
static const char *const choices[] = { "text|json|tap", "a|ab|abc", "x", "|empty||words|" };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_quiet_stderr();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned sel = data[0];
	char *s = fuzz_cstr(data + 1, size - 1);

	switch (sel % 6) {
	case 0: {
		const long *r = long_ranges[(sel / 6) % 4];
		long v;
		if (kr_parse_long("--n", s, r[0], r[1], &v) == 0)
			FUZZ_CHECK(v >= r[0] && v <= r[1]);
		break;
	}
	case 1: {
		const double *r = dbl_ranges[(sel / 6) % 4];
		double v;
		if (kr_parse_double("--x", s, r[0], r[1], &v) == 0)
			FUZZ_CHECK(isfinite(v) && v >= r[0] && v <= r[1]);
		break;
	}
	case 2: {
		int64_t lo = (sel / 6) % 2 ? 1000 : 0, hi = (sel / 24) % 2 ? INT64_MAX / 2 : 30000000000LL;
		int64_t v;
		if (kr_parse_duration_ns("--duration", s, units[(sel / 12) % 4], lo, hi, &v) == 0)
			FUZZ_CHECK(v >= lo && v <= hi);
		break;
	}
	case 3: {
		uint64_t lo = (sel / 6) % 2 ? 4096 : 0, hi = (sel / 12) % 2 ? UINT64_MAX / 2 : 1ULL << 40;
		uint64_t v;
		if (kr_parse_size("--size", s, lo, hi, &v) == 0)
			FUZZ_CHECK(v >= lo && v <= hi);
		break;
	}
	case 4: {
		struct kr_cpus set, online, again;
		char buf[256];
		kr_online_cpus(&online);
		if (kr_parse_cpulist("--cpus", s, &set) == 0) {
			FUZZ_CHECK(set.n > 0);
			for (int i = 0; i < set.n; i++)
				FUZZ_CHECK(kr_cpus_has(&online, set.cpu[i]));
			kr_cpus_list(&set, buf, sizeof(buf));
			FUZZ_CHECK(kr_parse_cpulist("--cpus", buf, &again) == 0 && again.n == set.n &&
				   !memcmp(again.cpu, set.cpu, sizeof(int) * (size_t)set.n));
			kr_cpus_free(&again);
			/* a short buffer truncates, never overflows */
			size_t len = 1 + (sel / 6) % 8;
			char *small = malloc(len);
			kr_cpus_list(&set, small, len);
			FUZZ_CHECK(strlen(small) < len);
			free(small);
			kr_cpus_free(&set);
		}
		kr_cpus_free(&online);
		break;
	}
	case 5: {
		const char *c = choices[(sel / 6) % 4];
		int idx = kr_parse_choice("--mode", s, c);
		if (idx >= 0) {
			/* the index names a word equal to s */
			const char *w = c;
			for (int i = 0; i < idx; i++)
				w = strchr(w, '|') + 1;
			FUZZ_CHECK(!strncmp(w, s, strlen(s)) && (w[strlen(s)] == '|' || !w[strlen(s)]));
			FUZZ_CHECK(*s);
		}
		break;
	}
	}
	free(s);
	return 0;
}
