// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: strict parsing of option values. Every function rejects empty strings,
 * trailing junk, NaN/inf and out-of-range values with one line naming the option and the
 * accepted range (unlike atoi()-style parsing, "5x" is not 5).
 */
#include "krepro.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int kr_parse_long(const char *opt, const char *s, long min, long max, long *out)
{
	char *end = NULL;
	long v = 0;

	errno = 0;
	if (s && *s && !isspace((unsigned char)*s))
		v = strtol(s, &end, 10);
	if (!end || errno || *end || v < min || v > max)
		return kr_usage_error("%s: '%s': want an integer %ld..%ld", opt, s ? s : "", min,
				      max);
	*out = v;
	return 0;
}

/* a finite decimal number followed by the rest (the unit) */
static int parse_number_prefix(const char *s, double *v, const char **rest)
{
	char *end;

	if (!s || !*s || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	*v = strtod(s, &end);
	if (errno || end == s || !isfinite(*v))
		return -1;
	/* strtod also takes "inf", "nan" and hex floats: only plain decimals are numbers here */
	for (const char *p = s; p < end; p++)
		if (!strchr("0123456789.+-eE", *p))
			return -1;
	*rest = end;
	return 0;
}

int kr_parse_double(const char *opt, const char *s, double min, double max, double *out)
{
	double v;
	const char *rest;

	if (parse_number_prefix(s, &v, &rest) < 0 || *rest || v < min || v > max)
		return kr_usage_error("%s: '%s': want a number %g..%g", opt, s ? s : "", min,
				      max);
	*out = v;
	return 0;
}

static const char *const duration_units[] = { "ns", "us", "ms", "s" };

/* "2s", "500ms": the largest unit that divides ns */
static void format_duration_ns(int64_t ns, char *buf, size_t len)
{
	int64_t mul = 1000000000;
	int u = 3;

	for (; ns % mul; mul /= 1000)
		u--;
	snprintf(buf, len, "%lld%s", (long long)(ns / mul), duration_units[u]);
}

int kr_parse_duration_ns(const char *opt, const char *s, const char *default_unit,
			 int64_t min_ns, int64_t max_ns, int64_t *out)
{
	double v;
	const char *rest;
	char lo[32], hi[32];
	int64_t mul = 0, m = 1;

	if (parse_number_prefix(s, &v, &rest) == 0)
		for (int u = 0; u < 4; u++, m *= 1000)
			if (!strcmp(*rest ? rest : default_unit, duration_units[u]))
				mul = m;
	if (!mul || v * (double)mul < (double)min_ns || v * (double)mul > (double)max_ns) {
		format_duration_ns(min_ns, lo, sizeof(lo));
		format_duration_ns(max_ns, hi, sizeof(hi));
		return kr_usage_error("%s: '%s': want %s..%s (ns us ms s; bare %s)", opt,
				      s ? s : "", lo, hi, default_unit);
	}
	*out = (int64_t)llround(v * (double)mul);
	return 0;
}

int kr_parse_size(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	double v;
	const char *rest;
	uint64_t mul = 0;

	if (parse_number_prefix(s, &v, &rest) == 0) {
		static const char suffixes[] = "kmgt";
		if (!*rest) {
			mul = 1;
		} else {
			const char *p = strchr(suffixes, tolower((unsigned char)rest[0]));
			if (p && (!rest[1] || !strcmp(rest + 1, "iB") || !strcmp(rest + 1, "B")))
				mul = 1ULL << (10 * (p - suffixes + 1));
		}
	}
	if (!mul || v < 0 || v * (double)mul < (double)min || v * (double)mul > (double)max)
		return kr_usage_error("%s: '%s': want %llu..%llu bytes (k, M, G, T)", opt,
				      s ? s : "", (unsigned long long)min, (unsigned long long)max);
	*out = (uint64_t)llround(v * (double)mul);
	return 0;
}

int kr_parse_cpulist(const char *opt, const char *s, struct kr_cpus *out)
{
	struct kr_cpus usable;
	char us[256];

	kr_usable_cpus(&usable);
	kr_cpus_list(&usable, us, sizeof(us));
	kr_cpus_free(&usable);
	if (kr_cpus_parse(s, out) <= 0 || s[strlen(s) - 1] == '\n') {
		kr_cpus_free(out);
		return kr_usage_error("%s: '%s': want a CPU list like 0-3,5 of usable %s",
				      opt, s ? s : "", us);
	}
	/* offline or outside the process affinity (cpuset, taskset): one line each */
	for (int i = 0; i < out->n; i++)
		if (kr_cpu_check(opt, out->cpu[i]) < 0) {
			kr_cpus_free(out);
			return -1;
		}
	return 0;
}

int kr_cpu_check(const char *opt, int cpu)
{
	struct kr_cpus online, usable;
	char list[256];
	int r = 0;

	kr_online_cpus(&online);
	kr_usable_cpus(&usable);
	if (!kr_cpus_has(&usable, cpu)) {
		bool on = kr_cpus_has(&online, cpu);
		kr_cpus_list(on ? &usable : &online, list, sizeof(list));
		r = kr_usage_error(on ? "%s: CPU %d is outside this process's affinity (usable "
				   "CPUs: %s)" : "%s: CPU %d is not online (online CPUs: %s)",
				   opt, cpu, list);
	}
	kr_cpus_free(&online);
	kr_cpus_free(&usable);
	return r;
}

int kr_parse_choice(const char *opt, const char *s, const char *choices)
{
	size_t n = s ? strlen(s) : 0;
	int idx = 0;

	for (const char *c = choices; n; c += strcspn(c, "|") + 1, idx++) {
		if (strcspn(c, "|") == n && !strncmp(c, s, n))
			return idx;
		if (!c[strcspn(c, "|")])
			break;
	}
	return kr_usage_error("%s: '%s': want one of %s", opt, s ? s : "", choices);
}
