// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: interrupts: names, per-CPU counts and the list of IRQs, from
 * /sys/kernel/irq/N/ (actions, per_cpu_count: one count per possible CPU, by CPU number)
 * and, where that is missing (no CONFIG_SPARSE_IRQ), from /proc/interrupts, read whole
 * (it has one column per online CPU, so on big hosts it is large, and with offline CPUs
 * column i is not CPU i: the header says which CPU each column is).
 */
#include "krepro.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

int kr_interrupts_header(const char *line, int *col_cpu, int max)
{
	int n = 0;

	for (const char *p = line; (p = strstr(p, "CPU")) && n < max; p += 3) {
		char *end;
		long c = strtol(p + 3, &end, 10);
		if (end == p + 3 || c < 0 || c >= KR_MAX_CPUS)
			return -1;
		col_cpu[n++] = (int)c;
	}
	return n ? n : -1;
}

int kr_interrupts_line(const char *line, const int *col_cpu, int ncol, int *irq,
		       uint64_t *per_cpu, int max, char *name, size_t nlen)
{
	char *end;
	const char *p = line + strspn(line, " "), *colon = strchr(p, ':');
	int i = 0;

	if (!colon || colon == p)
		return -1;
	long n = strtol(p, &end, 10);
	*irq = end == colon && n >= 0 && n <= INT32_MAX ? (int)n : -1; /* NMI, LOC...: -1 */
	for (p = colon + 1; i < ncol; i++, p = end) {
		p += strspn(p, " ");
		if (!isdigit((unsigned char)*p))
			break; /* ERR/MIS have one column; the rest is the description */
		unsigned long long v = strtoull(p, &end, 10);
		if (per_cpu && col_cpu[i] >= 0 && col_cpu[i] < max)
			per_cpu[col_cpu[i]] = v;
	}
	/* the action names are last: "PCI-MSIX-0000:00:02.0 1-edge virtio1-req.0" */
	const char *e = p + strlen(p), *w;
	while (e > p && isspace((unsigned char)e[-1]))
		e--;
	for (w = e; w > p && !isspace((unsigned char)w[-1]); w--)
		;
	if (name && nlen)
		snprintf(name, nlen, "%.*s", (int)(e - w), w);
	return i;
}

/* The /proc/interrupts line of irq; -1 if absent */
static int interrupts_find(int irq, uint64_t *per_cpu, int max, char *name, size_t nlen)
{
	char *text = kr_read_text("/proc/interrupts"), *save = NULL, *end;
	char *l = text ? strtok_r(text, "\n", &save) : NULL;
	int col_cpu[KR_MAX_CPUS], n = -1, ncol = l ? kr_interrupts_header(l, col_cpu, KR_MAX_CPUS) : -1;

	while (ncol > 0 && n < 0 && (l = strtok_r(NULL, "\n", &save)))
		if (strtol(l, &end, 10) == irq && *end == ':' && end > l + strspn(l, " "))
			kr_interrupts_line(l, col_cpu, ncol, &n, per_cpu, max, name, nlen);
	free(text);
	return n < 0 ? -1 : 0;
}

int kr_parse_per_cpu_count(const char *text, uint64_t *per_cpu, int max)
{
	char *end;
	int n = 0;

	for (const char *p = text; isdigit((unsigned char)*p); p = end + 1, n++) {
		unsigned long long v = strtoull(p, &end, 10);
		if (n < max)
			per_cpu[n] = v;
		if (*end != ',')
			return !*end || *end == '\n' ? n + 1 : -1;
	}
	return -1;
}

int kr_irq_counts(int irq, uint64_t *per_cpu, int max)
{
	char path[64], *text;

	snprintf(path, sizeof(path), "/sys/kernel/irq/%d/per_cpu_count", irq);
	memset(per_cpu, 0, (size_t)max * sizeof(*per_cpu));
	int n = (text = kr_read_text(path)) ? kr_parse_per_cpu_count(text, per_cpu, max) : -1;
	free(text);
	if (n > 0)
		return 0;
	memset(per_cpu, 0, (size_t)max * sizeof(*per_cpu));
	return interrupts_find(irq, per_cpu, max, NULL, 0);
}

int kr_irq_name(int irq, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/kernel/irq/%d/actions", irq);
	int n = kr_read_file(path, buf, len);
	if (n > 0 || (n < 0 && errno == EFBIG))
		return 0; /* a shared IRQ's list of actions, cut to len */
	*buf = 0;
	return interrupts_find(irq, NULL, 0, buf, len) == 0 && *buf ? 0 : -1;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* /proc/irq/N: with or without CONFIG_SPARSE_IRQ */
int kr_irq_list(int *irqs, int max)
{
	int n = 0;
	DIR *d = opendir("/proc/irq");
	struct dirent *e;

	if (!d)
		return -1;
	while ((e = readdir(d)) && n < max)
		if (isdigit((unsigned char)e->d_name[0]))
			irqs[n++] = atoi(e->d_name);
	closedir(d);
	qsort(irqs, (size_t)n, sizeof(int), cmp_int);
	return n;
}

/* ---- what this kernel runs in threads ---- */

/* cmdline has name as a whole parameter, split as the kernel's next_arg() does (quotes
 * keep spaces) up to "--" (what follows is init's): exactly, or (early) as an
 * early_param() takes it: with any value or none, '-' as '_' (parameq()), in quotes */
static bool has_param(const char *cmdline, const char *name, bool early)
{
	size_t n = 0, i;

	for (const char *a = cmdline; a && *(a += n + strspn(a + n, " \t\n"));) {
		bool q = false;
		for (n = 0; a[n] && (q || !isspace((unsigned char)a[n])); n++)
			q ^= a[n] == '"';
		if (!n || (n == 2 && !strncmp(a, "--", 2))) /* empty: at a "\r" */
			break;
		q = early && *a == '"';
		for (a += q, n -= q, i = 0; i < n && name[i] && (a[i] == name[i] ||
		     (early && strchr("-_", a[i]) && strchr("-_", name[i]))); i++)
			;
		if (!name[i] && (i == n || (early && (a[i] == '=' ||
						      (q && a[i] == '"' && i + 1 == n)))))
			return true;
	}
	return false;
}

bool kr_cmdline_has(const char *cmdline, const char *word)
{
	return has_param(cmdline, word, false);
}

/* "6.12.117+deb12-rt-amd64" is at least major.minor; true when it cannot be told */
static bool release_at_least(const char *release, int major, int minor)
{
	int a, b;
	return !release || sscanf(release, "%d.%d", &a, &b) != 2 || a > major ||
	       (a == major && b >= minor);
}

const char *kr_preempt_rt(const struct kr_kernel *k)
{
	char v[8];

	/* the build's flags: "#1 SMP PREEMPT_RT Debian ..." (init/Makefile); "SMP PREEMPT RT"
	 * in the RT patches of 4.x */
	if (k->version && (has_param(k->version, "PREEMPT_RT", false) ||
			   strstr(k->version, " PREEMPT RT ")))
		return "uname -v";
	if (k->realtime && atoi(k->realtime) == 1)
		return "/sys/kernel/realtime"; /* the RT patch queue's; mainline has none */
	if (k->config && kr_kconfig_parse(k->config, "CONFIG_PREEMPT_RT", v, sizeof(v)) &&
	    !strcmp(v, "y"))
		return "CONFIG_PREEMPT_RT=y";
	return NULL;
}

const char *kr_softirq_threaded_from(const struct kr_kernel *k)
{
	static char why[96];
	const char *rt = kr_preempt_rt(k);
	char v[8];

	if (rt)
		return snprintf(why, sizeof(why), "PREEMPT_RT (%s): softirqs always run in "
				"threads", rt), why;
	/* kernel/irq/manage.c: no threadirqs parameter without IRQ_FORCED_THREADING */
	if (has_param(k->cmdline, "threadirqs", true) &&
	    (!k->config || kr_kconfig_parse(k->config, "CONFIG_IRQ_FORCED_THREADING", v,
					    sizeof(v))))
		return "threadirqs: irq exit leaves every softirq to ksoftirqd";
	return NULL;
}

const char *kr_backlog_threaded_from(const struct kr_kernel *k)
{
	static char why[96];
	const char *rt = kr_preempt_rt(k);

	/* net/core/dev.c, use_backlog_threads() (v6.10): true on PREEMPT_RT, else with the
	 * early parameter thread_backlog_napi */
	if (!release_at_least(k->release, 6, 10))
		return NULL;
	if (rt)
		return snprintf(why, sizeof(why), "PREEMPT_RT (%s): the RPS backlog runs in "
				"backlog_napi/N", rt), why;
	if (has_param(k->cmdline, "thread_backlog_napi", true))
		return "thread_backlog_napi: the RPS backlog runs in backlog_napi/N";
	return NULL;
}

const struct kr_kernel *kr_kernel_self(void)
{
	static struct utsname u;
	static char rt[16];
	static struct kr_kernel k;

	if (!k.release && uname(&u) == 0)
		k = (struct kr_kernel){ .release = u.release, .version = u.version,
			.cmdline = kr_read_text("/proc/cmdline"), .config = kr_kconfig_text(),
			.realtime = kr_read_file("/sys/kernel/realtime", rt, sizeof(rt)) < 0 ? NULL
											     : rt };
	return &k;
}

const char *kr_softirq_threaded(void)
{
	return kr_softirq_threaded_from(kr_kernel_self());
}

const char *kr_backlog_threaded(void)
{
	const char *why = kr_backlog_threaded_from(kr_kernel_self());
	pid_t t;

	/* the threads themselves, where kernel threads are visible (not in a PID namespace) */
	if (!kr_kthreads_visible())
		return why;
	if (kr_find_kthreads("backlog_napi/*", &t, 1) != 1)
		return NULL;
	return why ? why : "backlog_napi/N threads exist: the RPS backlog runs in them";
}
