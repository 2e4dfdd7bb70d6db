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
#include <unistd.h>

int kr_interrupts_header(const char *line, int *col_cpu, int max)
{
	int n = 0;

	for (const char *p = line; (p = strstr(p, "CPU")) && n < max; p += 3) {
		char *end;
		long c = strtol(p + 3, &end, 10);
		if (end == p + 3 || c < 0 || c >= CPU_SETSIZE)
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

/* ---- softirqs in threads ---- */

bool kr_cmdline_has(const char *cmdline, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = cmdline; p && (p = strstr(p, word)); p++)
		if ((p == cmdline || p[-1] == ' ') && strchr(" \n", p[n]))
			return true;
	return false;
}

const char *kr_softirq_threaded_from(const char *cmdline, const char *realtime)
{
	if (realtime && atoi(realtime) == 1)
		return "PREEMPT_RT: softirqs always run in threads";
	if (kr_cmdline_has(cmdline, "threadirqs"))
		return "threadirqs: irq exit leaves every softirq to ksoftirqd";
	return NULL;
}

const char *kr_softirq_threaded(void)
{
	static char cmdline[4096], realtime[16];
	bool rt = kr_read_file("/sys/kernel/realtime", realtime, sizeof(realtime)) >= 0;

	kr_read_file("/proc/cmdline", cmdline, sizeof(cmdline));
	return kr_softirq_threaded_from(cmdline, rt ? realtime : NULL);
}
