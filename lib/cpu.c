// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: which CPUs a run may use and how they are set up: the process affinity
 * (cpusets, containers, taskset) intersected with the online CPUs (with their holes), the
 * default victim CPU, nohz_full/isolated CPUs, and CPU masks in the kernel's hex format.
 * CPU_ISSET is false for any CPU outside the set's range, negative ones included.
 */
#include "krepro.h"

#include <errno.h>
#include <string.h>

/* The affinity the process had when kr_main started, before any thread pinned itself. */
static cpu_set_t start_aff;
static bool have_start;

void kr_cpus_init(void)
{
	have_start = sched_getaffinity(0, sizeof(start_aff), &start_aff) == 0;
}

int kr_usable_cpus_from(const cpu_set_t *affinity, const char *online, cpu_set_t *out)
{
	cpu_set_t on;

	if (kr_cpulist_parse(online, &on) < 0)
		return -1;
	CPU_AND(out, affinity, &on);
	return CPU_COUNT(out);
}

int kr_usable_cpus(cpu_set_t *set)
{
	cpu_set_t online;

	kr_online_cpus(&online);
	if (!have_start && sched_getaffinity(0, sizeof(*set), set) < 0)
		*set = online;
	CPU_AND(set, have_start ? &start_aff : set, &online);
	return CPU_COUNT(set);
}

static int highest(const cpu_set_t *s)
{
	int c = CPU_SETSIZE;

	while (--c >= 0 && !CPU_ISSET(c, s))
		;
	return c;
}

int kr_cpu_pick_avoiding(const cpu_set_t *usable, const cpu_set_t *avoid, int want,
			 int *victim, int *other)
{
	cpu_set_t hk; /* housekeeping: usable and not avoided */

	/* the default victim is the highest usable CPU, a housekeeping one when there is one:
	 * the kernel refuses RPS to isolated CPUs (and nohz_full ones are set aside for a
	 * reason) */
	if (want < 0 && avoid) {
		CPU_XOR(&hk, usable, avoid);
		CPU_AND(&hk, &hk, usable);
		want = highest(&hk);
	}
	want = want < 0 ? highest(usable) : want;
	*victim = CPU_ISSET(want, usable) ? want : -1;
	*other = -1;
	for (int c = 0; *victim >= 0 && c < CPU_SETSIZE && *other < 0; c++) /* the lowest other */
		if (c != want && CPU_ISSET(c, usable))
			*other = c;
	return *victim < 0 ? -1 : 0;
}

/* nohz_full reads "(null)" on kernels built with NO_HZ_FULL but booted without it: empty */
static void isolated_cpus(cpu_set_t *nohz, cpu_set_t *iso)
{
	char n[4096] = "", i[4096] = "";

	kr_read_file("/sys/devices/system/cpu/nohz_full", n, sizeof(n));
	kr_read_file("/sys/devices/system/cpu/isolated", i, sizeof(i));
	kr_cpulist_parse(n, nohz);
	kr_cpulist_parse(i, iso);
}

int kr_cpu_pick(const cpu_set_t *usable, int want, int *victim, int *other)
{
	cpu_set_t avoid, iso;

	isolated_cpus(&avoid, &iso);
	CPU_OR(&avoid, &avoid, &iso);
	return kr_cpu_pick_avoiding(usable, &avoid, want, victim, other);
}

const char *kr_cpus_unusable(char *buf, size_t len)
{
	cpu_set_t on, us, nohz, iso;
	char a[256], b[256], c[256], d[256];

	kr_online_cpus(&on);
	kr_usable_cpus(&us);
	isolated_cpus(&nohz, &iso);
	bool aff = !CPU_EQUAL(&on, &us), i = CPU_COUNT(&iso), n = CPU_COUNT(&nohz);
	snprintf(buf, len, "usable %s of online %s%s%s%s%s%s%s%s",
		 kr_format_cpulist(&us, a, sizeof(a)), kr_format_cpulist(&on, b, sizeof(b)),
		 aff ? " (affinity: cpuset, taskset" : "", aff && i ? ", isolcpus" : "",
		 aff ? ")" : "", i ? "; isolated " : "", kr_format_cpulist(&iso, c, sizeof(c)),
		 n ? "; nohz_full " : "", kr_format_cpulist(&nohz, d, sizeof(d)));
	return buf;
}

int kr_cpu_check(const char *opt, int cpu)
{
	cpu_set_t online, usable;
	char list[256];

	kr_online_cpus(&online);
	kr_usable_cpus(&usable);
	if (CPU_ISSET(cpu, &usable))
		return 0;
	bool on = CPU_ISSET(cpu, &online);
	kr_format_cpulist(on ? &usable : &online, list, sizeof(list));
	return kr_usage_error(on ? "%s: CPU %d is outside this process's affinity (usable CPUs: %s)"
			      : "%s: CPU %d is not online (online CPUs: %s)", opt, cpu, list);
}

static const char *isolation_of(int cpu, const cpu_set_t *nohz, const cpu_set_t *iso,
				char *buf, size_t len)
{
	bool n = CPU_ISSET(cpu, nohz), i = CPU_ISSET(cpu, iso);

	snprintf(buf, len, "%s%s%s", n ? "nohz_full" : "", n && i ? "," : "", i ? "isolated" : "");
	return buf;
}

const char *kr_cpu_isolation_from(int cpu, const char *nohz_full, const char *isolated,
				  char *buf, size_t len)
{
	cpu_set_t nohz, iso;

	kr_cpulist_parse(nohz_full, &nohz);
	kr_cpulist_parse(isolated, &iso);
	return isolation_of(cpu, &nohz, &iso, buf, len);
}

const char *kr_cpu_isolation(int cpu, char *buf, size_t len)
{
	cpu_set_t nohz, iso;

	isolated_cpus(&nohz, &iso);
	return isolation_of(cpu, &nohz, &iso, buf, len);
}

int kr_nr_cpu_ids(void)
{
	char buf[4096] = "";
	cpu_set_t s;

	kr_read_file("/sys/devices/system/cpu/possible", buf, sizeof(buf));
	if (kr_cpulist_parse(buf, &s) < 0)
		kr_online_cpus(&s);
	return highest(&s) + 1;
}

char *kr_format_cpumask(const cpu_set_t *set, int nbits, char *buf, size_t len)
{
	size_t o = 0;
	int top = highest(set) + 1;

	nbits = nbits > 0 ? nbits : kr_nr_cpu_ids();
	nbits = nbits > top ? nbits : top; /* widened to hold the highest set CPU */
	/* most significant word first, the later ones zero-padded to 8 digits, as the
	 * kernel prints (and bitmap_parse reads) rps_cpus and smp_affinity */
	for (int w = (nbits + 31) / 32 - 1; w >= 0; w--) {
		uint32_t v = 0;
		for (int b = 0; b < 32; b++)
			v |= (uint32_t)!!CPU_ISSET(w * 32 + b, set) << b;
		size_t n = (size_t)snprintf(buf + o, len - o, o ? ",%08x" : "%x", v);
		if (n >= len - o) {
			errno = ENOSPC;
			return NULL;
		}
		o += n;
	}
	return buf;
}
