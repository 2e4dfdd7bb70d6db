// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the CPU and interrupt parsers on arbitrary text: /proc/interrupts header and
 * lines, /sys/kernel/irq/N/per_cpu_count, the caller's cpu.rt_runtime_us from
 * /proc/self/cgroup, nohz_full/isolated lists, and the hex CPU mask of what was parsed.
 * The first byte picks the parser. Checked: no memory error; counts land only on CPUs the
 * header named; a mask is never cut and reads back as the same set.
 */
#include "fuzz.h"

static void check_mask(const struct kr_cpus *s)
{
	char buf[KR_CPUMASK_LEN];
	int words = 1, k = s->n;

	FUZZ_CHECK(kr_cpus_mask(s, 0, buf, sizeof(buf)) != NULL);
	for (const char *c = buf; *c; c++)
		words += *c == ',';
	/* most significant word first: the CPUs come out highest first, and are the set */
	for (char *w = strtok(buf, ","); w; w = strtok(NULL, ",")) {
		FUZZ_CHECK(strlen(w) <= 8);
		unsigned long v = strtoul(w, NULL, 16);
		words--;
		for (int b = 31; b >= 0; b--)
			if (v & (1ul << b))
				FUZZ_CHECK(k > 0 && s->cpu[--k] == words * 32 + b);
	}
	FUZZ_CHECK(k == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	char *text = fuzz_cstr(data + 1, size - 1);
	static uint64_t per[KR_MAX_CPUS];
	int col[64], ncol, irq;
	char name[64], file[512], group[256], iso[32];
	struct kr_cpus s;

	switch (data[0] % 5) {
	case 0: { /* header line, then lines */
		char *nl = strchr(text, '\n');
		if (nl)
			*nl = 0;
		ncol = kr_interrupts_header(text, col, 64);
		if (ncol > 0 && nl) {
			memset(per, 0, sizeof(per));
			for (char *l = strtok(nl + 1, "\n"); l; l = strtok(NULL, "\n")) {
				int n = kr_interrupts_line(l, col, ncol, &irq, per, KR_MAX_CPUS, name,
							   sizeof(name));
				FUZZ_CHECK(n <= ncol);
			}
			for (int c = 0; c < KR_MAX_CPUS; c++) {
				bool named = false;
				for (int i = 0; i < ncol; i++)
					named |= col[i] == c;
				FUZZ_CHECK(named || per[c] == 0);
			}
		}
		break;
	}
	case 1:
		FUZZ_CHECK(kr_parse_per_cpu_count(text, per, KR_MAX_CPUS) != 0);
		break;
	case 2: {
		struct kr_cgroups cg = { .v2 = "/sys/fs/cgroup/unified", .v1_cpu = "/sys/fs/cgroup/cpu" };
		if (kr_rt_runtime_file(text, &cg, file, sizeof(file), group, sizeof(group)) > 0)
			FUZZ_CHECK(group[0] == '/' && strstr(file, "cpu.rt_runtime_us"));
		break;
	}
	case 3:
		kr_cpu_isolation_from(size % 8, text, text, iso, sizeof(iso));
		break;
	case 4:
		if (kr_cpus_parse(text, &s) >= 0)
			check_mask(&s);
		kr_cpus_free(&s);
		break;
	}
	free(text);
	return 0;
}
