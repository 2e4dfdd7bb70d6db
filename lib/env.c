// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the environment header of every report (kernel, CPU, the knobs that matter)
 * and the start/end markers in the kernel log.
 */
#include "krepro.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

static void read_cpu_model(char *buf, size_t len)
{
	char *text = kr_read_text("/proc/cpuinfo"), *p = text ? strstr(text, "model name") : NULL;

	if (p && (p = strchr(p, ':')))
		p += 1 + strspn(p + 1, " \t");
	snprintf(buf, len, "%.*s", p ? (int)strcspn(p, "\n") : 7, p ? p : "unknown");
	free(text);
}

/* the file's content, or dflt when it cannot be read */
static char *file_or(const char *path, char *buf, size_t len, const char *dflt)
{
	if (kr_read_file(path, buf, len) < 0)
		snprintf(buf, len, "%s", dflt);
	return buf;
}

static void env_file(const char *key, const char *path)
{
	char val[512];

	kr_env(key, "%s", file_or(path, val, sizeof(val), "(absent)"));
}

static void env_config(const char *const *options)
{
	char line[512] = "", val[64];
	size_t o = 0;

	for (; *options; options++) {
		int r = kr_kconfig(*options, val, sizeof(val));
		if (r < 0) {
			kr_env("config", "unknown (no /proc/config.gz or /boot/config-*)");
			return;
		}
		o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s=%s", o ? " " : "",
				      *options + 7, val);
	}
	kr_env("config", "%s", line);
}

/* The boot parameters that change these phenomena, or "none of ..." */
static void env_cmdline(void)
{
	static const char *const keys[] = { "isolcpus=", "nohz_full=", "idle=", "max_cstate=",
					     "intel_idle.max_cstate=", "processor.max_cstate=",
					     "threadirqs", "preempt=", "irqaffinity=", "rcu_nocbs=",
					     /* irq time accounting: tsc=noirqtime turns it off */
					     "tsc=", "notsc", "clocksource=", "nohz=", NULL };
	char cmd[4096], out[1024] = "";
	size_t o = 0;

	if (kr_read_file("/proc/cmdline", cmd, sizeof(cmd)) < 0)
		return;
	for (char *tok = strtok(cmd, " "); tok; tok = strtok(NULL, " "))
		for (const char *const *k = keys; *k; k++)
			if (!strncmp(tok, *k, strlen(*k)) && o < sizeof(out))
				o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s", o ? " " : "", tok);
	kr_env("cmdline", "%s", o ? out : "(none of isolcpus, nohz_full, idle=, max_cstate, threadirqs, tsc=)");
}

static void env_sched_features(void)
{
	const char *path = "/sys/kernel/debug/sched/features";
	char val[1024];
	bool mounted = false;

	if (access(path, R_OK) < 0 && access("/sys/kernel/debug", F_OK) == 0 &&
	    mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL) == 0)
		mounted = true; /* only for this read: unmounted right away */
	int r = kr_read_file(path, val, sizeof(val));
	int e = errno;
	if (mounted)
		umount("/sys/kernel/debug");
	if (r < 0) {
		kr_env("sched_features_off", "(unreadable: %s: %s)", path, strerror(e));
		return;
	}
	/* only the features that are off: the defaults are long and not interesting */
	char off[1024] = "";
	size_t o = 0;
	for (char *tok = strtok(val, " "); tok; tok = strtok(NULL, " "))
		if (!strncmp(tok, "NO_", 3))
			o += (size_t)snprintf(off + o, sizeof(off) - o, "%s%s", o ? " " : "", tok);
	kr_env("sched_features_off", "%s", o ? off : "(none)");
}

static int env_measured_cpu; /* kr_env_cpu() */

void kr_env_cpu(int cpu)
{
	env_measured_cpu = cpu >= 0 ? cpu : 0;
}

static void env_cpuidle(void)
{
	struct kr_idle_state st[KR_MAX_IDLE_STATES];
	char drv[64], gov[64], line[1024] = "";
	size_t o = 0;

	kr_cpuidle_driver(NULL, drv, sizeof(drv), gov, sizeof(gov));
	int n = kr_cpuidle_states(NULL, env_measured_cpu, st, KR_MAX_IDLE_STATES);
	for (int i = 0; i < n && o < sizeof(line) - 64; i++) {
		o += (size_t)snprintf(line + o, sizeof(line) - o, " %s:", st[i].name);
		o += (size_t)(st[i].latency_us < 0
				      ? snprintf(line + o, sizeof(line) - o, "?us")
				      : snprintf(line + o, sizeof(line) - o, "%ldus", st[i].latency_us));
		if (strcmp(st[i].disable, "0"))
			o += (size_t)snprintf(line + o, sizeof(line) - o, "(off)");
	}
	kr_env("cpuidle", "cpu%d: driver %s, governor %s, states%s", env_measured_cpu, drv, gov,
	       o ? line : " none");
}

static void env_cgroups(void)
{
	struct kr_cgroups cg;

	if (kr_cgroups_find(&cg) < 0) {
		kr_env("cgroup", "(none mounted)");
		return;
	}
	kr_env("cgroup", "v2 %s%s; v1 cpu %s, cpuacct %s", cg.v2[0] ? cg.v2 : "(none)",
	       cg.v2[0] ? (cg.v2_cpu ? " with cpu" : " without cpu") : "",
	       cg.v1_cpu[0] ? cg.v1_cpu : "(none)", cg.v1_cpuacct[0] ? cg.v1_cpuacct : "(none)");
}

/* ksoftirqd, kworker and napi threads: all SCHED_OTHER is one short line */
static void env_thread_policies(void)
{
	static const char *const globs[] = { "ksoftirqd/*", "kworker/*", "napi/*", "irq/*" };
	pid_t tids[2048];

	for (size_t g = 0; g < sizeof(globs) / sizeof(globs[0]); g++) {
		int n = kr_find_tasks(globs[g], tids, 2048), other = 0;
		char rt[512] = "";
		size_t o = 0;
		for (int i = 0; i < n; i++) {
			struct kr_taskstat t;
			if (kr_read_taskstat(tids[i], &t) < 0)
				continue;
			if (t.policy == SCHED_OTHER)
				other++;
			else if (o < sizeof(rt) - 64)
				o += (size_t)snprintf(rt + o, sizeof(rt) - o, " %s=%s%d", t.comm,
						      kr_policy_short(t.policy), t.rt_priority);
		}
		char key[32];
		snprintf(key, sizeof(key), "threads_%.*s", (int)strcspn(globs[g], "/"), globs[g]);
		kr_env(key, "%d, %d SCHED_OTHER%s%s", n, other, o ? ";" : "", rt);
	}
}

/* IRQs of network and block devices, with the CPUs they are delivered to */
static void env_irq_affinity(void)
{
	static int irqs[8192];
	char out[1024] = "";
	size_t o = 0;
	int n = kr_irq_list(irqs, 8192);

	for (int i = 0; i < n; i++) {
		char name[128], p[64], aff[64];
		if (kr_irq_name(irqs[i], name, sizeof(name)) < 0 ||
		    !(strstr(name, "virtio") || strstr(name, "nvme") || strstr(name, "eth") ||
		      strstr(name, "mlx") || strstr(name, "-rx") || strstr(name, "-tx") ||
		      strstr(name, "TxRx") || strstr(name, "ahci")))
			continue;
		snprintf(p, sizeof(p), "/proc/irq/%d/effective_affinity_list", irqs[i]);
		if (o < sizeof(out) - 80)
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s=%s", o ? " " : "",
					      name, file_or(p, aff, sizeof(aff), "?"));
	}
	kr_env("irq_affinity", "%s", o ? out : "(no network or block device IRQs found)");
}

static void env_memory(void)
{
	char thp[128], defrag[128], hp[32], text[8192];
	uint64_t hsize = 0, total = 0;

	file_or("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp), "(absent)");
	file_or("/sys/kernel/mm/transparent_hugepage/defrag", defrag, sizeof(defrag), "(absent)");
	file_or("/proc/sys/vm/nr_hugepages", hp, sizeof(hp), "?");
	if (kr_read_file("/proc/meminfo", text, sizeof(text)) > 0) {
		kr_kv_get(text, "Hugepagesize", &hsize);
		kr_kv_get(text, "MemTotal", &total);
	}
	kr_env("thp", "enabled %s, defrag %s", thp, defrag);
	kr_env("hugepages", "nr_hugepages %s of %llu kB, MemTotal %llu MiB", hp,
	       (unsigned long long)hsize, (unsigned long long)(total / 1024));
}

static void env_numa(void)
{
	char online[64], line[512] = "";
	size_t o = 0;

	if (kr_read_file("/sys/devices/system/node/online", online, sizeof(online)) < 0) {
		kr_env("numa", "(no NUMA information)");
		return;
	}
	for (int n = 0; n < 64; n++) {
		char p[96], cpus[128];
		snprintf(p, sizeof(p), "/sys/devices/system/node/node%d/cpulist", n);
		if (kr_read_file(p, cpus, sizeof(cpus)) < 0)
			continue;
		o += (size_t)snprintf(line + o, sizeof(line) - o, " node%d:cpus %s", n, cpus);
		if (o >= sizeof(line) - 64)
			break;
	}
	kr_env("numa", "nodes %s;%s", online, line);
}

static void env_virt(void)
{
	char text[64 * 1024], vendor[128] = "", product[128] = "";

	bool hv = kr_read_file("/proc/cpuinfo", text, sizeof(text)) > 0 && strstr(text, " hypervisor");
	kr_read_file("/sys/class/dmi/id/sys_vendor", vendor, sizeof(vendor));
	kr_read_file("/sys/class/dmi/id/product_name", product, sizeof(product));
	kr_env("virtualization", "%s%s%s%s%s", hv ? "guest (hypervisor flag)" : "none detected",
	       vendor[0] ? ", " : "", vendor, product[0] ? " " : "", product);
}

static void env_cpufreq(void)
{
	char p[128], gov[64], drv[64];

	snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor",
		 env_measured_cpu);
	if (kr_read_file(p, gov, sizeof(gov)) < 0) {
		kr_env("cpufreq", "cpu%d: (no cpufreq driver)", env_measured_cpu);
		return;
	}
	snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_driver",
		 env_measured_cpu);
	kr_env("cpufreq", "cpu%d: driver %s, governor %s", env_measured_cpu,
	       file_or(p, drv, sizeof(drv), "?"), gov);
}

/* One knob: "sysctl:kernel.sched_rt_runtime_us", "file:/sys/...", "config:CONFIG_HZ", or a
 * group of the bug-report environment ("group:cpuidle", see kr_env_groups). scripts/export
 * keeps the groups its program names (KR_ENV_GROUP_name) and no other. */
static void env_add_knob(const char *spec)
{
	char path[512];

	if (!strncmp(spec, "sysctl:", 7)) {
		const char *name = spec + 7;
		snprintf(path, sizeof(path), "/proc/sys/%s", name);
		for (char *c = path + 10; *c; c++)
			if (*c == '.')
				*c = '/';
		env_file(name, path);
	} else if (!strncmp(spec, "file:", 5)) {
		env_file(spec + 5, spec + 5);
	} else if (!strncmp(spec, "config:", 7)) {
		char val[256];
		kr_kconfig(spec + 7, val, sizeof(val));
		kr_env(spec + 7, "%s", val);
#if !defined(KR_EXPORT_MINIMAL) || defined(KR_ENV_GROUP_config)
	} else if (!strcmp(spec, "group:config")) {
		env_config((const char *const[]){ "CONFIG_HZ", "CONFIG_PREEMPT", "CONFIG_PREEMPT_VOLUNTARY",
			"CONFIG_PREEMPT_NONE", "CONFIG_PREEMPT_RT", "CONFIG_PREEMPT_DYNAMIC",
			"CONFIG_IRQ_TIME_ACCOUNTING", "CONFIG_CFS_BANDWIDTH", "CONFIG_RT_GROUP_SCHED",
			"CONFIG_NO_HZ_FULL", "CONFIG_NO_HZ_IDLE", "CONFIG_CPU_IDLE", NULL });
#endif
#if !defined(KR_EXPORT_MINIMAL) || defined(KR_ENV_GROUP_cmdline)
	} else if (!strcmp(spec, "group:cmdline")) {
		env_cmdline();
#endif
#if !defined(KR_EXPORT_MINIMAL) || defined(KR_ENV_GROUP_sched_features)
	} else if (!strcmp(spec, "group:sched_features")) {
		env_sched_features();
#endif
#if !defined(KR_EXPORT_MINIMAL) || defined(KR_ENV_GROUP_cpuidle)
	} else if (!strcmp(spec, "group:cpuidle")) {
		env_cpuidle();
#endif
#if !defined(KR_EXPORT_MINIMAL) || defined(KR_ENV_GROUP_cpufreq)
	} else if (!strcmp(spec, "group:cpufreq")) {
		env_cpufreq();
#endif
#if !defined(KR_EXPORT_MINIMAL) || defined(KR_ENV_GROUP_rt_throttling)
	} else if (!strcmp(spec, "group:rt_throttling")) {
		char rt[32], period[32];
		kr_env("rt_throttling", "sched_rt_runtime_us %s of sched_rt_period_us %s",
		       file_or("/proc/sys/kernel/sched_rt_runtime_us", rt, sizeof(rt), "?"),
		       file_or("/proc/sys/kernel/sched_rt_period_us", period, sizeof(period), "?"));
#endif
#if !defined(KR_EXPORT_MINIMAL) || defined(KR_ENV_GROUP_irq_affinity)
	} else if (!strcmp(spec, "group:irq_affinity")) {
		env_irq_affinity();
#endif
#if !defined(KR_EXPORT_MINIMAL) || defined(KR_ENV_GROUP_thread_policies)
	} else if (!strcmp(spec, "group:thread_policies")) {
		env_thread_policies();
#endif
#if !defined(KR_EXPORT_MINIMAL) || defined(KR_ENV_GROUP_cgroup)
	} else if (!strcmp(spec, "group:cgroup")) {
		env_cgroups();
#endif
#if !defined(KR_EXPORT_MINIMAL) || defined(KR_ENV_GROUP_memory)
	} else if (!strcmp(spec, "group:memory")) {
		env_memory();
#endif
#if !defined(KR_EXPORT_MINIMAL) || defined(KR_ENV_GROUP_numa)
	} else if (!strcmp(spec, "group:numa")) {
		env_numa();
#endif
#if !defined(KR_EXPORT_MINIMAL) || defined(KR_ENV_GROUP_virt)
	} else if (!strcmp(spec, "group:virt")) {
		env_virt();
#endif
	} else {
		kr_env(spec, "(unknown knob)");
	}
}

const char *const kr_env_groups[] = { "group:config", "group:cmdline", "group:sched_features",
	"group:cpuidle", "group:cpufreq", "group:rt_throttling", "group:irq_affinity",
	"group:thread_policies", "group:cgroup", "group:memory", "group:numa", "group:virt", NULL };

void kr_env_standard(const char *const *knobs)
{
	struct utsname u;
	char model[256];

	uname(&u);
	read_cpu_model(model, sizeof(model));
	kr_env("kernel", "%s %s", u.release, u.machine);
	kr_env("cpu", "%d x %s", kr_nr_cpus_online(), model);
	for (; knobs && *knobs; knobs++)
		env_add_knob(*knobs);
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
