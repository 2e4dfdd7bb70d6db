// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the environment header of every report (kernel, CPU, the knobs that matter)
 * and the start/end markers in the kernel log.
 */
#include "krepro.h"

#include <fcntl.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

static void cpu_model(char *buf, size_t len)
{
	static char text[64 * 1024];

	snprintf(buf, len, "unknown");
	if (kr_read_file("/proc/cpuinfo", text, sizeof(text)) < 0)
		return;
	char *p = strstr(text, "model name");
	if (!p || !(p = strchr(p, ':')))
		return;
	p += 1 + strspn(p + 1, " \t");
	size_t n = strcspn(p, "\n");
	snprintf(buf, len, "%.*s", (int)n, p);
}

/* One knob: "sysctl:kernel.sched_rt_runtime_us", "file:/sys/...", "config:CONFIG_HZ". */
static void add_knob(const char *spec)
{
	char path[512], val[256];

	if (!strncmp(spec, "sysctl:", 7)) {
		const char *name = spec + 7;
		snprintf(path, sizeof(path), "/proc/sys/%s", name);
		for (char *c = path + 10; *c; c++)
			if (*c == '.')
				*c = '/';
		if (kr_read_file(path, val, sizeof(val)) < 0)
			snprintf(val, sizeof(val), "(absent)");
		kr_env(name, "%s", val);
	} else if (!strncmp(spec, "file:", 5)) {
		if (kr_read_file(spec + 5, val, sizeof(val)) < 0)
			snprintf(val, sizeof(val), "(absent)");
		kr_env(spec + 5, "%s", val);
	} else if (!strncmp(spec, "config:", 7)) {
		kr_kconfig(spec + 7, val, sizeof(val));
		kr_env(spec + 7, "%s", val);
	}
}

void kr_env_standard(const char *const *knobs)
{
	struct utsname u;
	char model[256];

	uname(&u);
	cpu_model(model, sizeof(model));
	kr_env("kernel", "%s %s", u.release, u.machine);
	kr_env("cpu", "%d x %s", kr_nr_cpus_online(), model);
	for (; knobs && *knobs; knobs++)
		add_knob(*knobs);
}

void kr_kmsg(const char *fmt, ...)
{
	char line[256];
	va_list ap;

	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* the kernel log is a courtesy: never fail a run over it */
	if (n > 0 && write(fd, line, (size_t)n) < 0)
		n = 0;
	close(fd);
}
