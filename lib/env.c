// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the environment header of every report (kernel, CPU, the knobs that matter)
 * and the start/end markers in the kernel log.
 */
#include "krepro.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* the file's content (cut to len), or dflt when it cannot be read */
static char *file_or(const char *path, char *buf, size_t len, const char *dflt)
{
	if (kr_read_file(path, buf, len) < 0 && errno != EFBIG)
		snprintf(buf, len, "%s", dflt);
	return buf;
}

static int env_cpu; /* kr_env_cpu() */

void kr_env_cpu(int cpu)
{
	env_cpu = cpu >= 0 ? cpu : 0;
}

static void env_config(void)
{
	static const char *const opts[] = { "HZ", "PREEMPT", "PREEMPT_VOLUNTARY", "PREEMPT_NONE",
		"PREEMPT_RT", "PREEMPT_DYNAMIC", "IRQ_TIME_ACCOUNTING", "CFS_BANDWIDTH",
		"RT_GROUP_SCHED", "NO_HZ_FULL", "NO_HZ_IDLE", "CPU_IDLE" };
	char line[512] = "", opt[64], val[64];
	size_t o = 0;

	if (kr_kconfig("CONFIG_HZ", val, sizeof(val)) < 0) {
		kr_env("config", "unknown (no /proc/config.gz or /boot/config-*)");
		return;
	}
	for (size_t i = 0; i < sizeof(opts) / sizeof(*opts) && o < sizeof(line); i++) {
		snprintf(opt, sizeof(opt), "CONFIG_%s", opts[i]);
		kr_kconfig(opt, val, sizeof(val));
		o += (size_t)snprintf(line + o, sizeof(line) - o, " %s=%s", opts[i], val);
	}
	kr_env("config", "%s", line + 1);
}

/* The boot parameters that change these phenomena, or "none of ..." */
static void env_cmdline(void)
{
	static const char *const keys[] = { "isolcpus=", "nohz_full=", "idle=", "max_cstate=",
		"intel_idle.max_cstate=", "processor.max_cstate=", "threadirqs", "preempt=",
		"irqaffinity=", "rcu_nocbs=", "tsc=", "notsc", "clocksource=", "nohz=", NULL };
	char cmd[4096] = "", out[1024] = "";
	size_t o = 0;

	kr_read_file("/proc/cmdline", cmd, sizeof(cmd));
	for (char *tok = strtok(cmd, " "); tok; tok = strtok(NULL, " "))
		for (const char *const *k = keys; *k; k++)
			if (!strncmp(tok, *k, strlen(*k)) && o < sizeof(out))
				o += (size_t)snprintf(out + o, sizeof(out) - o, " %s", tok);
	kr_env("cmdline", "%s", o ? out + 1 : "(none of isolcpus, nohz_full, idle=, max_cstate, "
	       "threadirqs, tsc=)");
}

static void env_sched_features(void)
{
	const char *path = "/sys/kernel/debug/sched/features";
	char val[1024], off[1024] = "";
	size_t o = 0;
	/* debugfs mounted only for this read when it is not */
	bool mnt = access(path, R_OK) < 0 && mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL) == 0;
	int r = kr_read_file(path, val, sizeof(val)), e = errno;

	if (mnt)
		umount("/sys/kernel/debug");
	/* only the features that are off: the defaults are long and not interesting */
	for (char *tok = strtok(r < 0 ? NULL : val, " "); tok; tok = strtok(NULL, " "))
		if (!strncmp(tok, "NO_", 3))
			o += (size_t)snprintf(off + o, sizeof(off) - o, " %s", tok);
	if (r < 0)
		kr_env("sched_features_off", "(unreadable: %s: %s)", path, strerror(e));
	else
		kr_env("sched_features_off", "%s", o ? off + 1 : "(none)");
}

static void env_cpuidle(void)
{
	struct kr_idle_state st[KR_MAX_IDLE_STATES];
	char drv[64], gov[64], line[1024] = " none";
	size_t o = 0;

	kr_cpuidle_driver(NULL, drv, sizeof(drv), gov, sizeof(gov));
	int n = kr_cpuidle_states(NULL, env_cpu, st, KR_MAX_IDLE_STATES);
	for (int i = 0; i < n && o < sizeof(line) - 64; i++) {
		char lat[24] = "?";
		if (st[i].latency_us >= 0)
			snprintf(lat, sizeof(lat), "%ld", st[i].latency_us);
		o += (size_t)snprintf(line + o, sizeof(line) - o, " %s:%sus%s", st[i].name, lat,
				      strcmp(st[i].disable, "0") ? "(off)" : "");
	}
	kr_env("cpuidle", "cpu%d: driver %s, governor %s, states%s", env_cpu, drv, gov, line);
}

static void env_cpufreq(void)
{
	char p[128], gov[64], drv[64];

	snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", env_cpu);
	if (kr_read_file(p, gov, sizeof(gov)) < 0) {
		kr_env("cpufreq", "cpu%d: (no cpufreq driver)", env_cpu);
		return;
	}
	strcpy(strrchr(p, '/'), "/scaling_driver");
	kr_env("cpufreq", "cpu%d: driver %s, governor %s", env_cpu, file_or(p, drv, sizeof(drv), "?"),
	       gov);
}

static void env_rt_throttling(void)
{
	char rt[32], period[32];

	kr_env("rt_throttling", "sched_rt_runtime_us %s of sched_rt_period_us %s",
	       file_or("/proc/sys/kernel/sched_rt_runtime_us", rt, sizeof(rt), "?"),
	       file_or("/proc/sys/kernel/sched_rt_period_us", period, sizeof(period), "?"));
}

/* IRQs of network and block devices, with the CPUs they are delivered to */
static void env_irq_affinity(void)
{
	static const char *const devs[] = { "virtio", "nvme", "eth", "mlx", "-rx", "-tx", "TxRx",
					    "ahci" };
	static int irqs[8192];
	char out[1024] = "";
	size_t o = 0;
	int n = kr_irq_list(irqs, 8192);

	for (int i = 0; i < n && o < sizeof(out) - 80; i++) {
		char name[128], p[64], aff[64];
		size_t d = kr_irq_name(irqs[i], name, sizeof(name)) ? sizeof(devs) / sizeof(*devs) : 0;
		while (d < sizeof(devs) / sizeof(*devs) && !strstr(name, devs[d]))
			d++;
		if (d == sizeof(devs) / sizeof(*devs))
			continue;
		snprintf(p, sizeof(p), "/proc/irq/%d/effective_affinity_list", irqs[i]);
		o += (size_t)snprintf(out + o, sizeof(out) - o, " %s=%s", name,
				      file_or(p, aff, sizeof(aff), "?"));
	}
	kr_env("irq_affinity", "%s", o ? out + 1 : "(no network or block device IRQs found)");
}

/* ksoftirqd, kworker, napi and irq threads: all SCHED_OTHER is one short line */
static void env_thread_policies(void)
{
	static const char *const kinds[] = { "ksoftirqd", "kworker", "napi", "irq" };
	static pid_t tids[2048];

	for (int k = 0; k < 4; k++) {
		char glob[16], key[32], rt[512] = "";
		size_t o = 0;
		int other = 0;
		snprintf(glob, sizeof(glob), "%s/*", kinds[k]);
		int n = kr_find_tasks(glob, tids, 2048);
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
		snprintf(key, sizeof(key), "threads_%s", kinds[k]);
		kr_env(key, "%d, %d SCHED_OTHER%s%s", n, other, o ? ";" : "", rt);
	}
}

static void env_cgroup(void)
{
	struct kr_cgroups cg;

	if (kr_cgroups_find(&cg) < 0)
		kr_env("cgroup", "(none mounted)");
	else
		kr_env("cgroup", "v2 %s%s; v1 cpu %s, cpuacct %s", cg.v2[0] ? cg.v2 : "(none)",
		       !cg.v2[0] ? "" : cg.v2_cpu ? " with cpu" : " without cpu",
		       cg.v1_cpu[0] ? cg.v1_cpu : "(none)",
		       cg.v1_cpuacct[0] ? cg.v1_cpuacct : "(none)");
}

static void env_memory(void)
{
	char thp[128], defrag[128], hp[32], text[8192] = "";
	uint64_t hsize = 0, total = 0;

	kr_read_file("/proc/meminfo", text, sizeof(text));
	kr_kv_get(text, "Hugepagesize", &hsize);
	kr_kv_get(text, "MemTotal", &total);
	kr_env("thp", "enabled %s, defrag %s",
	       file_or("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp), "(absent)"),
	       file_or("/sys/kernel/mm/transparent_hugepage/defrag", defrag, sizeof(defrag), "(absent)"));
	kr_env("hugepages", "nr_hugepages %s of %llu kB, MemTotal %llu MiB",
	       file_or("/proc/sys/vm/nr_hugepages", hp, sizeof(hp), "?"), (unsigned long long)hsize,
	       (unsigned long long)(total / 1024));
}

static int cmp_node(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

char *kr_numa_summary(const char *dir)
{
	char p[600], at[1024], *online, *cpus, *out = NULL, *end;
	int *nodes = NULL, n = 0, *more;
	size_t len = 0;
	struct dirent *e;
	DIR *d;

	dir = dir ? dir : "/sys/devices/system/node";
	snprintf(p, sizeof(p), "%s/online", dir);
	if (!(online = kr_read_text(p)) || !(d = opendir(kr_rooted(dir, at, sizeof(at)))))
		return free(online), NULL;
	/* the nodeN directories: numbers may be sparse, up to MAX_NUMNODES (1024 on x86) */
	while ((e = readdir(d))) {
		long v = strncmp(e->d_name, "node", 4) ? -1 : strtol(e->d_name + 4, &end, 10);
		if (v >= 0 && !*end && end > e->d_name + 4 && v <= INT32_MAX &&
		    (more = realloc(nodes, (size_t)(n + 1) * sizeof(*nodes))))
			nodes = more, nodes[n++] = (int)v;
	}
	closedir(d);
	qsort(nodes, (size_t)n, sizeof(*nodes), cmp_node);
	FILE *f = open_memstream(&out, &len);
	if (f) {
		fprintf(f, "nodes %.*s;", (int)strcspn(online, "\n"), online);
		for (int i = 0; i < n; i++) {
			snprintf(p, sizeof(p), "%s/node%d/cpulist", dir, nodes[i]);
			cpus = kr_read_text(p);
			int c = cpus ? (int)strcspn(cpus, "\n") : 0; /* a node of memory only */
			fprintf(f, " node%d:cpus %.*s", nodes[i], c ? c : 4, c ? cpus : "none");
			free(cpus);
		}
		fclose(f);
	}
	free(nodes);
	free(online);
	return out;
}

static void env_numa(void)
{
	char *s = kr_numa_summary(NULL);

	kr_env("numa", "%s", s ? s : "(no NUMA information)");
	free(s);
}

static void env_virt(void)
{
	char *cpuinfo = kr_read_text("/proc/cpuinfo"), vendor[128] = "", product[128] = "";
	bool hv = cpuinfo && strstr(cpuinfo, " hypervisor");

	free(cpuinfo);
	kr_read_file("/sys/class/dmi/id/sys_vendor", vendor, sizeof(vendor));
	kr_read_file("/sys/class/dmi/id/product_name", product, sizeof(product));
	kr_env("virtualization", "%s%s%s%s%s", hv ? "guest (hypervisor flag)" : "none detected",
	       vendor[0] ? ", " : "", vendor, product[0] ? " " : "", product);
}

const char *const kr_env_groups[] = { "group:config", "group:cmdline", "group:sched_features",
	"group:cpuidle", "group:cpufreq", "group:rt_throttling", "group:irq_affinity",
	"group:thread_policies", "group:cgroup", "group:memory", "group:numa", "group:virt", NULL };

/* One knob: "sysctl:kernel.sched_rt_runtime_us", "file:/sys/...", "config:CONFIG_HZ", or a
 * group of the bug-report environment ("group:cpuidle", see kr_env_groups). */
static void env_add_knob(const char *spec)
{
	char path[512], val[512];
	const char *arg = spec + strcspn(spec, ":");

	arg += *arg == ':';
	if (!strncmp(spec, "sysctl:", 7) || !strncmp(spec, "file:", 5)) {
		snprintf(path, sizeof(path), "%s%s", *spec == 's' ? "/proc/sys/" : "", arg);
		for (char *c = path + 10; *spec == 's' && *c; c++)
			*c = *c == '.' ? '/' : *c;
		kr_env(arg, "%s", file_or(path, val, sizeof(val), "(absent)"));
	} else if (!strncmp(spec, "config:", 7)) {
		kr_kconfig(arg, val, sizeof(val));
		kr_env(arg, "%s", val);
	} else if (!strcmp(spec, "group:config")) {
		env_config();
	} else if (!strcmp(spec, "group:cmdline")) {
		env_cmdline();
	} else if (!strcmp(spec, "group:sched_features")) {
		env_sched_features();
	} else if (!strcmp(spec, "group:cpuidle")) {
		env_cpuidle();
	} else if (!strcmp(spec, "group:cpufreq")) {
		env_cpufreq();
	} else if (!strcmp(spec, "group:rt_throttling")) {
		env_rt_throttling();
	} else if (!strcmp(spec, "group:irq_affinity")) {
		env_irq_affinity();
	} else if (!strcmp(spec, "group:thread_policies")) {
		env_thread_policies();
	} else if (!strcmp(spec, "group:cgroup")) {
		env_cgroup();
	} else if (!strcmp(spec, "group:memory")) {
		env_memory();
	} else if (!strcmp(spec, "group:numa")) {
		env_numa();
	} else if (!strcmp(spec, "group:virt")) {
		env_virt();
	} else {
		kr_env(spec, "(unknown knob)");
	}
}

/* the value of the first "key<tabs>: value" line of /proc/cpuinfo, its length in *n */
static const char *cpuinfo_value(const char *text, const char *key, int *n)
{
	size_t k = strlen(key);

	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *q = strncmp(p, key, k) ? NULL : p + k + strspn(p + k, " \t");
		if (q && *q == ':') {
			q += 1 + strspn(q + 1, " \t");
			*n = (int)strcspn(q, "\n");
			return *n ? q : NULL;
		}
	}
	return NULL;
}

struct id_name {
	unsigned id;
	const char *name;
};

static const char *id_name(const struct id_name *t, size_t n, unsigned id)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].id == id)
			return t[i].name;
	return NULL;
}

/* arm64: "CPU implementer" and "CPU part" (arch/arm64/include/asm/cputype.h) */
static const struct id_name arm_makers[] = { { 0x41, "ARM" }, { 0x42, "Broadcom" },
	{ 0x43, "Cavium" }, { 0x46, "Fujitsu" }, { 0x48, "HiSilicon" }, { 0x4e, "NVIDIA" },
	{ 0x50, "APM" }, { 0x51, "Qualcomm" }, { 0x61, "Apple" }, { 0x6d, "Microsoft" },
	{ 0xc0, "Ampere" } };
static const struct id_name arm_parts[] = { /* implementer << 12 | part */
	{ 0x41d03, "Cortex-A53" }, { 0x41d04, "Cortex-A35" }, { 0x41d05, "Cortex-A55" },
	{ 0x41d07, "Cortex-A57" }, { 0x41d08, "Cortex-A72" }, { 0x41d09, "Cortex-A73" },
	{ 0x41d0a, "Cortex-A75" }, { 0x41d0b, "Cortex-A76" }, { 0x41d0c, "Neoverse-N1" },
	{ 0x41d0d, "Cortex-A77" }, { 0x41d40, "Neoverse-V1" }, { 0x41d41, "Cortex-A78" },
	{ 0x41d44, "Cortex-X1" }, { 0x41d46, "Cortex-A510" }, { 0x41d47, "Cortex-A710" },
	{ 0x41d48, "Cortex-X2" }, { 0x41d49, "Neoverse-N2" }, { 0x41d4f, "Neoverse-V2" },
	{ 0x41d80, "Cortex-A520" }, { 0x41d81, "Cortex-A720" }, { 0x41d82, "Cortex-X4" },
	{ 0x41d84, "Neoverse-V3" }, { 0x41d8e, "Neoverse-N3" }, { 0x430af, "ThunderX2" },
	{ 0x46001, "A64FX" }, { 0x48d01, "TSV110" }, { 0x4e004, "Carmel" },
	{ 0xc0ac3, "AmpereOne" }, { 0xc0ac4, "AmpereOne-A" } };
#define NITEMS(t) (sizeof(t) / sizeof(*(t)))

static void buf_add(char *buf, size_t len, size_t *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf + *o, len - *o, fmt, ap);
	va_end(ap);
	*o = n < 0 ? *o : *o + (size_t)n < len ? *o + (size_t)n : len - 1; /* cut */
}

/* every kind of core, in the order of the CPUs: "ARM Cortex-A55 + ARM Cortex-A76" */
static size_t arm64_model(const char *text, char *buf, size_t len)
{
	unsigned seen[16], imp, part;
	size_t n = 0, o = 0;
	const char *q;

	for (const char *p = text; p && (p = strstr(p, "CPU implementer")) &&
				   n < NITEMS(seen); p++) {
		if (sscanf(p, "CPU implementer : %x", &imp) != 1 || !(q = strstr(p, "CPU part")) ||
		    sscanf(q, "CPU part : %x", &part) != 1)
			continue;
		unsigned id = imp << 12 | (part & 0xfff);
		size_t i = 0;
		while (i < n && seen[i] != id)
			i++;
		if (i < n)
			continue;
		const char *maker = id_name(arm_makers, NITEMS(arm_makers), imp);
		const char *name = id_name(arm_parts, NITEMS(arm_parts), id);
		seen[n++] = id;
		buf_add(buf, len, &o, "%s", o ? " + " : "");
		if (maker && name)
			buf_add(buf, len, &o, "%s %s", maker, name);
		else if (maker)
			buf_add(buf, len, &o, "%s part 0x%03x", maker, part);
		else
			buf_add(buf, len, &o, "implementer 0x%02x part 0x%03x", imp, part);
	}
	return o;
}

char *kr_cpu_model_from(const char *cpuinfo, const char *dt_model, char *buf, size_t len)
{
	/* arm64; MIPS, POWER, RISC-V, s390; 32-bit ARM's board */
	static const char *const keys[] = { "cpu model", "cpu", "uarch", "vendor_id", "Hardware" };
	int n = 0;
	const char *v = cpuinfo_value(cpuinfo, "model name", &n);

	snprintf(buf, len, "%.*s", n, v ? v : "");
	if (!v && !arm64_model(cpuinfo, buf, len))
		for (size_t i = 0; !v && i < NITEMS(keys); i++)
			if ((v = cpuinfo_value(cpuinfo, keys[i], &n)))
				snprintf(buf, len, "%.*s", n, v);
	if (dt_model && *dt_model) {
		size_t o = strlen(buf);
		snprintf(buf + o, len - o, o ? " (%s)" : "%s", dt_model);
	}
	if (!*buf)
		snprintf(buf, len, "unknown");
	return buf;
}

void kr_env_standard(const char *const *knobs)
{
	struct utsname u;
	char *text = kr_read_text("/proc/cpuinfo"), model[256], dt[128] = "";

	kr_read_file("/sys/firmware/devicetree/base/model", dt, sizeof(dt)); /* cut: fine */
	uname(&u);
	kr_env("kernel", "%s %s", u.release, u.machine);
	kr_env("cpu", "%d x %s", kr_nr_cpus_online(), kr_cpu_model_from(text, dt, model,
									    sizeof(model)));
	free(text);
	for (; knobs && *knobs; knobs++)
		env_add_knob(*knobs);
}

void kr_kmsg(const char *fmt, ...)
{
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	char *s = KR_VSTRF(fmt);

	/* one write, one record; the kernel log is a courtesy: never fail a run over it
	 * (not vdprintf: its stream buffer shows as a leak under LeakSanitizer) */
	if (fd >= 0) {
		ssize_t n = write(fd, s, strlen(s));
		(void)n;
		close(fd);
	}
	free(s);
}
