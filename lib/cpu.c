// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: which CPUs a run may use and how they are set up: the process affinity
 * (cpusets, containers, taskset) intersected with the online CPUs (with their holes), the
 * default victim CPU, nohz_full/isolated CPUs, and CPU masks in the kernel's hex format.
 */
#include "krepro.h"

#include <errno.h>
#include <string.h>

/* The affinity the process had when kr_main started, before any thread pinned itself. */
static cpu_set_t start_affinity;
static bool start_affinity_set;

void kr_cpus_init(void)
{
	if (sched_getaffinity(0, sizeof(start_affinity), &start_affinity) == 0)
		start_affinity_set = true;
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
	cpu_set_t aff, online;

	kr_online_cpus(&online);
	if (start_affinity_set)
		aff = start_affinity;
	else if (sched_getaffinity(0, sizeof(aff), &aff) < 0)
		aff = online;
	CPU_AND(set, &aff, &online);
	return CPU_COUNT(set);
}

int kr_cpu_pick_avoiding(const cpu_set_t *usable, const cpu_set_t *avoid, int want,
			 int *victim, int *other)
{
	*victim = *other = -1;
	/* the default victim is the highest usable CPU, a housekeeping one when there is one:
	 * the kernel refuses RPS to isolated CPUs (and nohz_full ones are set aside for a
	 * reason) */
	for (int pass = 0; want < 0 && pass < 2; pass++)
		for (int c = CPU_SETSIZE - 1; c >= 0 && want < 0; c--)
			if (CPU_ISSET(c, usable) && (pass || !avoid || !CPU_ISSET(c, avoid)))
				want = c;
	if (want < 0 || want >= CPU_SETSIZE || !CPU_ISSET(want, usable))
		return -1;
	*victim = want;
	for (int c = CPU_SETSIZE - 1; c >= 0; c--) /* the lowest other one */
		if (c != want && CPU_ISSET(c, usable))
			*other = c;
	return 0;
}

/* The nohz_full and isolated CPU lists as sysfs gives them, each "" when absent; nohz_full
 * reads "(null)" on kernels built with NO_HZ_FULL but booted without it. */
#define ISOLATION_LEN 4096
static void read_isolation(char *nohz, char *iso)
{
	if (kr_read_file("/sys/devices/system/cpu/nohz_full", nohz, ISOLATION_LEN) < 0 ||
	    !strcmp(nohz, "(null)") || !strcmp(nohz, "(null)\n"))
		nohz[0] = 0;
	if (kr_read_file("/sys/devices/system/cpu/isolated", iso, ISOLATION_LEN) < 0)
		iso[0] = 0;
	nohz[strcspn(nohz, "\n")] = iso[strcspn(iso, "\n")] = 0;
}

int kr_cpu_pick(const cpu_set_t *usable, int want, int *victim, int *other)
{
	char nohz[ISOLATION_LEN], iso[ISOLATION_LEN];
	cpu_set_t avoid, s;

	read_isolation(nohz, iso);
	kr_cpulist_parse(nohz, &avoid); /* "": empty */
	kr_cpulist_parse(iso, &s);
	CPU_OR(&avoid, &avoid, &s);
	return kr_cpu_pick_avoiding(usable, &avoid, want, victim, other);
}

const char *kr_cpus_unusable(char *buf, size_t len)
{
	cpu_set_t online, usable;
	char on[256], us[256], iso[ISOLATION_LEN], nohz[ISOLATION_LEN];

	kr_online_cpus(&online);
	kr_usable_cpus(&usable);
	read_isolation(nohz, iso);
	bool aff = !CPU_EQUAL(&online, &usable);
	snprintf(buf, len, "usable %s of online %s%s%s%s%s%s%s%s",
		 kr_format_cpulist(&usable, us, sizeof(us)), kr_format_cpulist(&online, on, sizeof(on)),
		 aff ? " (affinity: cpuset, taskset" : "", aff && *iso ? ", isolcpus" : "",
		 aff ? ")" : "", *iso ? "; isolated " : "", iso, *nohz ? "; nohz_full " : "", nohz);
	return buf;
}

int kr_cpu_check(const char *opt, int cpu)
{
	cpu_set_t online, usable;
	char list[256];

	kr_online_cpus(&online);
	kr_usable_cpus(&usable);
	bool on = cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &online);
	if (on && CPU_ISSET(cpu, &usable))
		return 0;
	kr_format_cpulist(on ? &usable : &online, list, sizeof(list));
	return kr_usage_error(on ? "%s: CPU %d is outside this process's affinity (usable CPUs: %s)"
			      : "%s: CPU %d is not online (online CPUs: %s)", opt, cpu, list);
}

/* nohz_full reads "(null)" on kernels built with NO_HZ_FULL but booted without it */
static bool in_cpulist(const char *list, int cpu)
{
	cpu_set_t s;

	return list && cpu >= 0 && cpu < CPU_SETSIZE && kr_cpulist_parse(list, &s) == 0 &&
	       CPU_ISSET(cpu, &s);
}

const char *kr_cpu_isolation_from(int cpu, const char *nohz_full, const char *isolated,
				  char *buf, size_t len)
{
	bool nohz = in_cpulist(nohz_full, cpu), iso = in_cpulist(isolated, cpu);

	snprintf(buf, len, "%s%s%s", nohz ? "nohz_full" : "", nohz && iso ? "," : "",
		 iso ? "isolated" : "");
	return buf;
}

const char *kr_cpu_isolation(int cpu, char *buf, size_t len)
{
	char nohz[ISOLATION_LEN], iso[ISOLATION_LEN];

	read_isolation(nohz, iso);
	return kr_cpu_isolation_from(cpu, nohz, iso, buf, len);
}

int kr_nr_cpu_ids(void)
{
	char buf[4096];
	cpu_set_t possible, online;
	int last = 0;

	if (kr_read_file("/sys/devices/system/cpu/possible", buf, sizeof(buf)) < 0)
		buf[0] = 0;
	kr_cpulist_parse(buf, &possible);
	kr_online_cpus(&online);
	CPU_OR(&possible, &possible, &online);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &possible))
			last = c + 1;
	return last;
}

char *kr_format_cpumask(const cpu_set_t *set, int nbits, char *buf, size_t len)
{
	size_t o = 0;

	if (nbits <= 0)
		nbits = kr_nr_cpu_ids();
	for (int c = nbits; c < CPU_SETSIZE; c++) /* widened to hold the highest set CPU */
		if (CPU_ISSET(c, set))
			nbits = c + 1;
	nbits = nbits < CPU_SETSIZE ? nbits : CPU_SETSIZE;
	/* most significant word first, the later ones zero-padded to 8 digits, as the
	 * kernel prints (and bitmap_parse reads) rps_cpus and smp_affinity */
	for (int w = (nbits + 31) / 32 - 1; w >= 0; w--) {
		uint32_t v = 0;
		for (int b = 0; b < 32; b++)
			v |= CPU_ISSET(w * 32 + b, set) ? 1u << b : 0;
		int n = snprintf(buf + o, len - o, o ? ",%08x" : "%x", v);
		if (n < 0 || (size_t)n >= len - o) {
			errno = ENOSPC;
			return NULL;
		}
		o += (size_t)n;
	}
	return buf;
}
