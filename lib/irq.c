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
	const char *p = line;
	char *end;

	while (*p == ' ')
		p++;
	const char *colon = strchr(p, ':');
	if (!colon || colon == p)
		return -1;
	long n = strtol(p, &end, 10);
	*irq = end == colon && n >= 0 && n <= INT32_MAX ? (int)n : -1; /* NMI, LOC...: -1 */
	p = colon + 1;
	int i;
	for (i = 0; i < ncol; i++) {
		while (*p == ' ')
			p++;
		if (!isdigit((unsigned char)*p))
			break; /* ERR/MIS have one column; the rest is the description */
		unsigned long long v = strtoull(p, &end, 10);
		p = end;
		if (per_cpu && col_cpu[i] >= 0 && col_cpu[i] < max)
			per_cpu[col_cpu[i]] = v;
	}
	if (name && nlen) {
		/* the action names are last: "PCI-MSIX-0000:00:02.0 1-edge virtio1-req.0" */
		size_t len = strlen(p);
		while (len && isspace((unsigned char)p[len - 1]))
			len--;
		const char *w = p + len;
		while (w > p && !isspace((unsigned char)w[-1]))
			w--;
		snprintf(name, nlen, "%.*s", (int)(p + len - w), w);
	}
	return i;
}

/* The /proc/interrupts line of irq; -1 if absent */
static int interrupts_find(int irq, uint64_t *per_cpu, int max, char *name, size_t nlen)
{
	char *text = kr_read_text("/proc/interrupts");
	int col_cpu[KR_MAX_CPUS], ncol, found = -1;

	if (!text)
		return -1;
	char *save = NULL, *l = strtok_r(text, "\n", &save);
	if (l && (ncol = kr_interrupts_header(l, col_cpu, KR_MAX_CPUS)) > 0)
		for (l = strtok_r(NULL, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			int n;
			if (kr_interrupts_line(l, col_cpu, ncol, &n, NULL, 0, NULL, 0) < 0 || n != irq)
				continue;
			kr_interrupts_line(l, col_cpu, ncol, &n, per_cpu, max, name, nlen);
			found = 0;
			break;
		}
	free(text);
	return found;
}

int kr_parse_per_cpu_count(const char *text, uint64_t *per_cpu, int max)
{
	int n = 0;

	for (const char *p = text;; n++) {
		char *end;
		if (!isdigit((unsigned char)*p))
			return -1;
		unsigned long long v = strtoull(p, &end, 10);
		if (n < max)
			per_cpu[n] = v;
		if (*end != ',')
			return !*end || *end == '\n' ? n + 1 : -1;
		p = end + 1;
	}
}

int kr_irq_counts(int irq, uint64_t *per_cpu, int max)
{
	char path[64];

	memset(per_cpu, 0, (size_t)max * sizeof(*per_cpu));
	snprintf(path, sizeof(path), "/sys/kernel/irq/%d/per_cpu_count", irq);
	char *text = kr_read_text(path);
	if (text) {
		int n = kr_parse_per_cpu_count(text, per_cpu, max);
		free(text);
		if (n > 0)
			return 0;
		memset(per_cpu, 0, (size_t)max * sizeof(*per_cpu));
	}
	return interrupts_find(irq, per_cpu, max, NULL, 0);
}

int kr_irq_name(int irq, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/kernel/irq/%d/actions", irq);
	if (kr_read_file(path, buf, len) > 0)
		return 0;
	return interrupts_find(irq, NULL, 0, buf, len) == 0 && *buf ? 0 : -1;
}

static int cmp_int(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

int kr_irq_list(int *irqs, int max)
{
	int n = 0;
	DIR *d = opendir("/sys/kernel/irq");

	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) && n < max)
			if (isdigit((unsigned char)e->d_name[0]))
				irqs[n++] = atoi(e->d_name);
		closedir(d);
	} else {
		char *text = kr_read_text("/proc/interrupts"), *save = NULL;
		if (!text)
			return -1;
		for (char *l = strtok_r(text, "\n", &save); l && n < max; l = strtok_r(NULL, "\n", &save)) {
			char *end, *p = l + strspn(l, " ");
			long v = strtol(p, &end, 10);
			if (end != p && *end == ':')
				irqs[n++] = (int)v;
		}
		free(text);
	}
	qsort(irqs, (size_t)n, sizeof(int), cmp_int);
	return n;
}

/* ---- softirqs in threads ---- */

bool kr_cmdline_has(const char *cmdline, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = cmdline; p && (p = strstr(p, word)); p++)
		if ((p == cmdline || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
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

	if (kr_read_file("/proc/cmdline", cmdline, sizeof(cmdline)) < 0)
		cmdline[0] = 0;
	return kr_softirq_threaded_from(cmdline, rt ? realtime : NULL);
}
