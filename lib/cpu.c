// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: which CPUs a run may use and how they are set up: the process affinity
 * (cpusets, containers, taskset) intersected with the online CPUs (with their holes), the
 * default victim CPU, nohz_full/isolated CPUs, and CPU lists and masks in the kernel's
 * formats. A set is a list of CPU numbers of any length: the kernel's nr_cpu_ids can
 * exceed glibc's cpu_set_t (1024 CPUs), so affinity calls are sized to the kernel.
 */
#include "krepro.h"
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void kr_cpus_free(struct kr_cpus *s)
{
	free(s->cpu);
	*s = (struct kr_cpus){ 0, NULL };
}

bool kr_cpus_has(const struct kr_cpus *s, int cpu)
{
	for (int i = 0; i < s->n; i++)
		if (s->cpu[i] == cpu)
			return true;
	return false;
}

/* kept ascending, each CPU once: in order, an append */
int kr_cpus_add(struct kr_cpus *s, int cpu)
{
	int i = s->n, *c = s->n % 64 ? s->cpu : realloc(s->cpu, sizeof(int) * (size_t)(s->n + 64));

	if (!c)
		return -1;
	for (s->cpu = c; i > 0 && c[i - 1] > cpu; i--)
		;
	if (i > 0 && c[i - 1] == cpu)
		return 0;
	memmove(c + i + 1, c + i, sizeof(int) * (size_t)(s->n - i));
	c[i] = cpu;
	return s->n++, 0;
}

int kr_cpus_parse(const char *list, struct kr_cpus *out)
{
	const char *p = list ? list : "";
	char *end;

	*out = (struct kr_cpus){ 0, NULL };
	while (isdigit((unsigned char)*p)) {
		errno = 0;
		long a = strtol(p, &end, 10);
		long b = *end == '-' && isdigit((unsigned char)end[1]) ? strtol(end + 1, &end, 10) : a;
		if (errno || b < a || b >= KR_MAX_CPUS)
			break;
		while (a <= b && kr_cpus_add(out, (int)a) == 0)
			a++;
		/* on to the next after a ','; else the end (out of memory: p stays, malformed) */
		p = a <= b ? p : *end == ',' && isdigit((unsigned char)end[1]) ? end + 1 : end;
		if (p != end + 1)
			break;
	}
	if (*p && strcmp(p, "\n")) { /* "1,,2", "2-1", "(null)": nothing kept */
		kr_cpus_free(out);
		return errno = EINVAL, -1;
	}
	return out->n;
}

char *kr_cpus_list(const struct kr_cpus *s, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (int i = 0; i < s->n && o < len; i++) {
		int j = i;
		while (j + 1 < s->n && s->cpu[j + 1] == s->cpu[j] + 1)
			j++;
		o += (size_t)snprintf(buf + o, len - o, o ? ",%d" : "%d", s->cpu[i]);
		if (j > i && o < len)
			o += (size_t)snprintf(buf + o, len - o, "-%d", s->cpu[j]);
		i = j;
	}
	return buf;
}

/* a CPU list of /sys/devices/system/cpu/ (nohz_full reads "(null)" on kernels built with
 * NO_HZ_FULL but booted without it: empty); returns the count, -1 if unreadable */
static int sysfs_cpus(const char *file, struct kr_cpus *out)
{
	char path[64], buf[4096] = "";

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/%s", file);
	return kr_read_file(path, buf, sizeof(buf)) < 0 ? (*out = (struct kr_cpus){ 0, NULL }, -1)
							: kr_cpus_parse(buf, out);
}

int kr_nr_cpu_ids(void)
{
	static int ids;
	struct kr_cpus s = { 0, NULL };

	if (!ids && sysfs_cpus("possible", &s) > 0)
		ids = s.cpu[s.n - 1] + 1;
	kr_cpus_free(&s);
	if (!ids) /* without sysfs: the online count is a floor; affinity calls grow past it */
		ids = sysconf(_SC_NPROCESSORS_CONF) > 0 ? (int)sysconf(_SC_NPROCESSORS_CONF) : 1;
	return ids;
}

char *kr_cpus_mask(const struct kr_cpus *s, int nbits, char *buf, size_t len)
{
	size_t o = 0;
	int top = s->n ? s->cpu[s->n - 1] + 1 : 0, k = s->n - 1;

	nbits = nbits > 0 ? nbits : kr_nr_cpu_ids();
	nbits = nbits > top ? nbits : top; /* widened to hold the highest CPU */
	/* most significant word first, the later ones zero-padded to 8 digits, as the
	 * kernel prints (and bitmap_parse reads) rps_cpus and smp_affinity */
	for (int w = (nbits + 31) / 32 - 1; w >= 0; w--) {
		uint32_t v = 0;
		for (; k >= 0 && s->cpu[k] >= w * 32; k--)
			v |= 1U << (s->cpu[k] - w * 32);
		size_t n = (size_t)snprintf(buf + o, len - o, o ? ",%08x" : "%x", v);
		if (n >= len - o)
			return errno = ENOSPC, NULL;
		o += n;
	}
	return buf;
}

/* a cpu_set_t of the CPUs in s (CPU_ALLOC: any CPU number) */
static cpu_set_t *set_of(const struct kr_cpus *s, size_t *size)
{
	int n = s->n ? s->cpu[s->n - 1] + 1 : 1;
	cpu_set_t *set = CPU_ALLOC(n);

	*size = CPU_ALLOC_SIZE(n);
	if (set)
		CPU_ZERO_S(*size, set);
	for (int i = 0; set && i < s->n; i++)
		CPU_SET_S(s->cpu[i], *size, set);
	return set;
}

int kr_affinity_get(pid_t tid, struct kr_cpus *out)
{
	size_t size = CPU_ALLOC_SIZE(KR_MAX_CPUS); /* not smaller than the kernel's cpumask */
	cpu_set_t *set = CPU_ALLOC(KR_MAX_CPUS);
	int r = set ? sched_getaffinity(tid, size, set) : -1;

	*out = (struct kr_cpus){ 0, NULL };
	for (int c = 0; r == 0 && c < KR_MAX_CPUS; c++)
		if (CPU_ISSET_S(c, size, set) && kr_cpus_add(out, c))
			r = -1;
	CPU_FREE(set);
	return r ? -1 : out->n;
}

int kr_affinity_set(pid_t tid, const struct kr_cpus *s)
{
	size_t size;
	cpu_set_t *set = set_of(s, &size);
	int r = set ? sched_setaffinity(tid, size, set) : -1;

	CPU_FREE(set);
	return r;
}

int kr_pin(pid_t tid, int cpu)
{
	return kr_affinity_set(tid, &(struct kr_cpus){ 1, &cpu });
}

int kr_online_cpus(struct kr_cpus *out)
{
	/* without sysfs (some containers): the CPUs we may use are online */
	if (sysfs_cpus("online", out) <= 0)
		kr_affinity_get(0, out);
	return out->n;
}

int kr_nr_cpus_online(void)
{
	struct kr_cpus s;
	int n = kr_online_cpus(&s);

	kr_cpus_free(&s);
	return n;
}

/* The affinity the process had when kr_main started, before any thread pinned itself. */
static struct kr_cpus start_aff;

void kr_cpus_init(void)
{
	kr_cpus_free(&start_aff);
#ifndef KR_MAIL
	if (kr_root) { /* a recorded machine has no affinity: its online CPUs */
		sysfs_cpus("online", &start_aff);
		return;
	}
#endif
	kr_affinity_get(0, &start_aff);
}

int kr_cpus_and(const struct kr_cpus *a, const struct kr_cpus *b, struct kr_cpus *out)
{
	*out = (struct kr_cpus){ 0, NULL };
	for (int i = 0; i < a->n; i++)
		if (kr_cpus_has(b, a->cpu[i]) && kr_cpus_add(out, a->cpu[i]) < 0)
			return -1;
	return out->n;
}

/* sched_getaffinity() gives the mask and the active CPUs: offline ones (holes) are out */
int kr_usable_cpus(struct kr_cpus *out)
{
	*out = (struct kr_cpus){ 0, NULL };
	for (int i = 0; i < start_aff.n; i++)
		if (kr_cpus_add(out, start_aff.cpu[i]))
			return kr_cpus_free(out), 0;
	return start_aff.n ? out->n : kr_affinity_get(0, out);
}

int kr_cpu_pick_avoiding(const struct kr_cpus *usable, const struct kr_cpus *avoid, int want,
			 int *victim, int *other)
{
	/* the default victim is the highest usable CPU, a housekeeping one when there is one:
	 * the kernel refuses RPS to isolated CPUs (and nohz_full ones are set aside for a
	 * reason) */
	for (int i = usable->n - 1; want < 0 && avoid && i >= 0; i--)
		if (!kr_cpus_has(avoid, usable->cpu[i]))
			want = usable->cpu[i];
	want = want < 0 && usable->n ? usable->cpu[usable->n - 1] : want;
	*victim = kr_cpus_has(usable, want) ? want : -1;
	*other = -1;
	for (int i = 0; *victim >= 0 && i < usable->n && *other < 0; i++) /* the lowest other */
		if (usable->cpu[i] != want)
			*other = usable->cpu[i];
	return *victim < 0 ? -1 : 0;
}

int kr_cpu_pick(const struct kr_cpus *usable, int want, int *victim, int *other)
{
	struct kr_cpus avoid, iso;

	sysfs_cpus("nohz_full", &avoid);
	sysfs_cpus("isolated", &iso);
	for (int i = 0; i < iso.n; i++)
		kr_cpus_add(&avoid, iso.cpu[i]);
	int r = kr_cpu_pick_avoiding(usable, &avoid, want, victim, other);
	kr_cpus_free(&avoid);
	kr_cpus_free(&iso);
	return r;
}

const char *kr_cpus_unusable(char *buf, size_t len)
{
	struct kr_cpus s[4]; /* usable, online, isolated, nohz_full */
	char l[4][256];

	kr_usable_cpus(&s[0]);
	kr_online_cpus(&s[1]);
	sysfs_cpus("isolated", &s[2]);
	sysfs_cpus("nohz_full", &s[3]);
	for (int i = 0; i < 4; i++)
		kr_cpus_list(&s[i], l[i], sizeof(l[i]));
	bool aff = s[0].n != s[1].n, i = s[2].n, n = s[3].n;
	snprintf(buf, len, "usable CPUs %s, online %s%s%s%s%s%s%s%s", s[0].n ? l[0] : "none", l[1],
		 aff ? " (affinity: cpuset, taskset" : "", aff && i ? ", isolcpus" : "",
		 aff ? ")" : "", i ? "; isolated " : "", l[2], n ? "; nohz_full " : "", l[3]);
	for (int k = 0; k < 4; k++)
		kr_cpus_free(&s[k]);
	return buf;
}

const char *kr_cpu_isolation_from(int cpu, const char *nohz_full, const char *isolated,
				  char *buf, size_t len)
{
	struct kr_cpus nohz, iso;

	kr_cpus_parse(nohz_full, &nohz);
	kr_cpus_parse(isolated, &iso);
	bool n = kr_cpus_has(&nohz, cpu), i = kr_cpus_has(&iso, cpu);
	snprintf(buf, len, "%s%s%s", n ? "nohz_full" : "", n && i ? "," : "", i ? "isolated" : "");
	kr_cpus_free(&nohz);
	kr_cpus_free(&iso);
	return buf;
}

const char *kr_cpu_isolation(int cpu, char *buf, size_t len)
{
	char n[4096] = "", i[4096] = "";

	kr_read_file("/sys/devices/system/cpu/nohz_full", n, sizeof(n));
	kr_read_file("/sys/devices/system/cpu/isolated", i, sizeof(i));
	return kr_cpu_isolation_from(cpu, n, i, buf, len);
}

int kr_thread_start(pthread_t *t, int cpu, int policy, int prio, void *(*fn)(void *), void *arg)
{
	struct kr_cpus usable = { 0, NULL };
	pthread_attr_t a;
	size_t size;

	/* unpinned means every usable CPU (the process affinity at start), not the caller's
	 * mask: a watchdog started from a pinned RT thread must not share the CPU it guards */
	if (cpu < 0)
		kr_usable_cpus(&usable);
	cpu_set_t *set = set_of(cpu < 0 ? &usable : &(struct kr_cpus){ 1, &cpu }, &size);
	kr_cpus_free(&usable);
	if (!set)
		return -1;
	pthread_attr_init(&a);
	pthread_attr_setaffinity_np(&a, size, set);
	/* the policy is in place before the thread's first instruction */
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, policy);
	pthread_attr_setschedparam(&a, &(struct sched_param){ .sched_priority = prio });
	errno = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	CPU_FREE(set);
	return errno ? -1 : 0;
}
