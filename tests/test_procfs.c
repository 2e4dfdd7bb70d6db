// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the /proc, /sys and cgroup parsers, fed text captured on the lab machine
 * (tests/data/) and hand-made edge cases.
 */
#include "krepro.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

static char text[64 * 1024];

static const char *data(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", DATADIR, name);
	assert_true(kr_read_file(path, text, sizeof(text)) > 0);
	return text;
}

static void test_proc_stat(void **state)
{
	struct kr_cpu_times all, per[4];
	(void)state;
	/* captured: "cpu  3171 0 2675 88406 544 0 55 11 0 0" */
	assert_int_equal(kr_parse_proc_stat(data("proc_stat.txt"), &all, per, 4), 2);
	assert_int_equal(all.user, 3171);
	assert_int_equal(all.system, 2675);
	assert_int_equal(all.idle, 88406);
	assert_int_equal(all.iowait, 544);
	assert_int_equal(all.softirq, 55);
	assert_int_equal(all.steal, 11);
	assert_int_equal(per[1].user, 1910);
	assert_int_equal(per[1].iowait, 519);
	assert_int_equal(per[0].steal + per[1].steal, all.steal);
	assert_int_equal(kr_cpu_times_total(&all), 3171 + 2675 + 88406 + 544 + 55 + 11);
	/* a kernel with fewer columns (no steal/guest): still parsed */
	assert_int_equal(kr_parse_proc_stat("cpu  1 2 3 4\ncpu0 1 2 3 4\n", &all, per, 4), 1);
	assert_int_equal(all.idle, 4);
	assert_int_equal(all.steal, 0);
	/* "cpu" must be a line start; no aggregate line means failure */
	assert_int_equal(kr_parse_proc_stat("intr 1 cpu  1 2 3 4\n", &all, per, 4), -1);
	/* a CPU beyond maxcpus is ignored, not written past the array */
	assert_int_equal(kr_parse_proc_stat("cpu  1 2 3 4\ncpu7 1 2 3 4\n", &all, per, 4), 0);
}

static void test_cpu_stat(void **state)
{
	uint64_t v;
	(void)state;
	const char *v1 = data("cpu_stat_v1.txt");
	assert_int_equal(kr_kv_get(v1, "nr_periods", &v), 0);
	assert_int_equal(kr_kv_get(v1, "throttled_time", &v), 0);
	assert_int_equal(kr_kv_get(v1, "usage_usec", &v), -1);
	const char *v2 = data("cpu_stat_v2.txt");
	assert_int_equal(kr_kv_get(v2, "nr_periods", &v), 0);
	assert_int_equal(v, 100);
	assert_int_equal(kr_kv_get(v2, "nr_throttled", &v), 0);
	assert_int_equal(v, 20);
	/* by key, not by prefix: "throttled" is not "throttled_usec" */
	assert_int_equal(kr_kv_get(v2, "throttled", &v), -1);
	assert_int_equal(kr_kv_get(v2, "throttled_usec", &v), 0);
	assert_int_equal(v, 400000);
	assert_int_equal(kr_kv_get(v2, "usage_usec", &v), 0);
	assert_int_equal(v, 2500000);
	assert_int_equal(kr_kv_get(v2, "burst_usec", &v), 0);
	assert_int_equal(v, 1200);
	/* a longer key with the same prefix before the real one is skipped, not taken */
	assert_int_equal(kr_kv_get("throttled_usec 400000\nthrottled 7\n", "throttled", &v), 0);
	assert_int_equal(v, 7);
	/* the order of keys does not matter, and a key in a value is not a key */
	assert_int_equal(kr_kv_get("a 1\nb 2\nc b\n", "b", &v), 0);
	assert_int_equal(v, 2);
	/* meminfo style */
	assert_int_equal(kr_kv_get("MemFree:    1234 kB\nHugePages_Free:   7\n", "HugePages_Free", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(kr_kv_get("MemFree:    1234 kB\n", "MemFree", &v), 0);
	assert_int_equal(v, 1234);
}

static void test_schedstat(void **state)
{
	struct kr_schedstat s;
	(void)state;
	assert_int_equal(kr_parse_schedstat("123456 7890 12\n", &s), 0);
	assert_int_equal(s.run_ns, 123456);
	assert_int_equal(s.wait_ns, 7890);
	assert_int_equal(s.slices, 12);
	assert_int_equal(kr_parse_schedstat("123456 7890\n", &s), -1);
	assert_int_equal(kr_parse_schedstat(data("schedstat.txt"), &s), 0);
}

static void test_taskstat(void **state)
{
	struct kr_taskstat t;
	(void)state;
	/* comm with spaces and parentheses ends at the last ')' */
	assert_int_equal(kr_parse_taskstat(data("task_stat_tricky.txt"), &t), 0);
	assert_string_equal(t.comm, "kworker/1:2-dio (a) b");
	assert_int_equal(t.state, 'S');
	assert_int_equal(t.starttime, 987654);
	assert_int_equal(t.processor, 1);
	assert_int_equal(t.rt_priority, 50);
	assert_int_equal(t.policy, SCHED_FIFO);
	assert_int_equal(kr_parse_taskstat(data("task_stat.txt"), &t), 0);
	assert_string_equal(t.comm, "cat");
	assert_int_equal(kr_parse_taskstat("1 (x) S 1 2 3", &t), -1);
	assert_int_equal(kr_parse_taskstat("garbage", &t), -1);
}

static void test_kconfig(void **state)
{
	char v[64];
	(void)state;
	const char *k = data("kconfig.txt");
	assert_int_equal(kr_kconfig_parse(k, "CONFIG_HZ", v, sizeof(v)), 1);
	assert_string_equal(v, "250");
	assert_int_equal(kr_kconfig_parse(k, "CONFIG_IRQ_TIME_ACCOUNTING", v, sizeof(v)), 0);
	assert_string_equal(v, "n");
	assert_int_equal(kr_kconfig_parse(k, "CONFIG_CFS_BANDWIDTH", v, sizeof(v)), 1);
	assert_string_equal(v, "y");
	assert_int_equal(kr_kconfig_parse(k, "CONFIG_VETH", v, sizeof(v)), 1);
	assert_string_equal(v, "m");
	assert_int_equal(kr_kconfig_parse(k, "CONFIG_LOCALVERSION", v, sizeof(v)), 1);
	assert_string_equal(v, "-krepro test");
	/* CONFIG_HZ is not CONFIG_HZ_250 and vice versa */
	assert_int_equal(kr_kconfig_parse(k, "CONFIG_HZ_25", v, sizeof(v)), 0);
	assert_int_equal(kr_kconfig_parse(k, "CONFIG_NO_SUCH", v, sizeof(v)), 0);
}

static void test_mountinfo(void **state)
{
	struct kr_cgroups cg;
	(void)state;
	/* this lab: v1 cpu and cpuacct apart, v2 at /sys/fs/cgroup/unified */
	assert_int_equal(kr_cgroups_parse(data("mountinfo_v1v2.txt"), &cg), 0);
	assert_string_equal(cg.v1_cpu, "/sys/fs/cgroup/cpu");
	assert_string_equal(cg.v1_cpuacct, "/sys/fs/cgroup/cpuacct");
	assert_string_equal(cg.v2, "/sys/fs/cgroup/unified");
	/* systemd's combined v1 mount: "cpu,cpuacct" holds both; cpuset is not cpu */
	assert_int_equal(kr_cgroups_parse(data("mountinfo_v1_combined.txt"), &cg), 0);
	assert_string_equal(cg.v1_cpu, "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(cg.v1_cpuacct, "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(cg.v2, "");
	/* pure v2 */
	assert_int_equal(kr_cgroups_parse(data("mountinfo_v2only.txt"), &cg), 0);
	assert_string_equal(cg.v2, "/sys/fs/cgroup");
	assert_string_equal(cg.v1_cpu, "");
	assert_int_equal(kr_cgroups_parse("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n", &cg), -1);
}

/* a sysfs cpu directory of our own: cpu0 with POLL only, cpu3 with POLL, C1 and a
 * disabled C6 (exit 290 us, the original investigation's); the governor only in the
 * newer current_governor file */
static void put(const char *dir, const char *rel, const char *value)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	char *slash = strrchr(path, '/');
	for (char *p = path + strlen(dir) + 1; p < slash; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(path, 0755);
			*p = '/';
		}
	*slash = 0;
	mkdir(path, 0755);
	*slash = '/';
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", value);
	fclose(f);
}

static void test_cpuidle(void **state)
{
	char dir[] = "/tmp/krepro-test-cpuidle-XXXXXX", p[600], drv[64], gov[64];
	struct kr_idle_state st[KR_MAX_IDLE_STATES];
	(void)state;

	assert_non_null(mkdtemp(dir));
	put(dir, "cpu0/cpuidle/state0/name", "POLL");
	const char *const names[] = { "POLL", "C1", "C6" }, *const lat[] = { "0", "1", "290" },
			  *const dis[] = { "0", "0", "1" }, *const use[] = { "5", "9690", "1702644" };
	for (int k = 0; k < 3; k++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "cpu3/cpuidle/state%d/name", k);
		put(dir, rel, names[k]);
		snprintf(rel, sizeof(rel), "cpu3/cpuidle/state%d/latency", k);
		put(dir, rel, lat[k]);
		snprintf(rel, sizeof(rel), "cpu3/cpuidle/state%d/disable", k);
		put(dir, rel, dis[k]);
		snprintf(rel, sizeof(rel), "cpu3/cpuidle/state%d/usage", k);
		put(dir, rel, use[k]);
	}
	put(dir, "cpuidle/current_driver", "intel_idle");
	put(dir, "cpuidle/current_governor", "menu");

	assert_int_equal(kr_cpuidle_states(dir, 3, st, KR_MAX_IDLE_STATES), 3);
	assert_string_equal(st[2].name, "C6");
	assert_int_equal(st[2].latency_us, 290);
	assert_int_equal(st[2].residency_us, -1); /* no file */
	assert_string_equal(st[2].disable, "1");
	assert_int_equal(st[2].usage, 1702644);
	assert_string_equal(st[1].disable, "0");
	assert_int_equal(kr_cpuidle_states(dir, 0, st, KR_MAX_IDLE_STATES), 1);
	assert_string_equal(st[0].disable, "?");
	assert_int_equal(kr_cpuidle_states(dir, 1, st, KR_MAX_IDLE_STATES), 0);
	assert_int_equal(kr_cpuidle_states(dir, 3, st, 2), 2); /* at most max */
	kr_cpuidle_path(dir, 3, 2, "disable", p, sizeof(p));
	assert_non_null(strstr(p, "/cpu3/cpuidle/state2/disable"));
	kr_cpuidle_driver(dir, drv, sizeof(drv), gov, sizeof(gov));
	assert_string_equal(drv, "intel_idle");
	assert_string_equal(gov, "menu");
	put(dir, "cpuidle/current_governor_ro", "haltpoll");
	kr_cpuidle_driver(dir, drv, sizeof(drv), gov, sizeof(gov));
	assert_string_equal(gov, "haltpoll");
	kr_cpuidle_driver("/nonexistent", drv, sizeof(drv), gov, sizeof(gov));
	assert_string_equal(drv, "none");
	assert_string_equal(gov, "none");
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* the caller's cpu.rt_runtime_us (RT_GROUP_SCHED refuses SCHED_FIFO when it is 0) */
static void test_rt_runtime_file(void **state)
{
	struct kr_cgroups cg;
	char file[700], group[256];
	(void)state;
	/* captured: a shell moved into a new v1 cpu group on the lab machine */
	assert_int_equal(kr_cgroups_parse(data("mountinfo_v1v2.txt"), &cg), 0);
	assert_int_equal(kr_rt_runtime_file(data("proc_cgroup_v1.txt"), &cg, file, sizeof(file),
					    group, sizeof(group)), 1);
	assert_string_equal(group, "/krepro-rt0");
	assert_string_equal(file, "/sys/fs/cgroup/cpu/krepro-rt0/cpu.rt_runtime_us");
	/* the root group: no doubled slash */
	assert_int_equal(kr_rt_runtime_file("1:cpu:/\n0::/\n", &cg, file, sizeof(file), group,
					    sizeof(group)), 1);
	assert_string_equal(file, "/sys/fs/cgroup/cpu/cpu.rt_runtime_us");
	/* cpu and cpuacct mounted together (systemd on v1) */
	assert_int_equal(kr_cgroups_parse(data("mountinfo_v1_combined.txt"), &cg), 0);
	assert_int_equal(kr_rt_runtime_file("4:cpu,cpuacct:/user.slice\n1:name=systemd:/x\n", &cg,
					    file, sizeof(file), group, sizeof(group)), 1);
	assert_string_equal(group, "/user.slice");
	assert_int_equal(strcmp(file + strlen(file) - 29, "/user.slice/cpu.rt_runtime_us"), 0);
	/* cpuacct alone is not the cpu controller */
	assert_int_equal(kr_rt_runtime_file("2:cpuacct:/a\n", &cg, file, sizeof(file), group,
					    sizeof(group)), -1);
	/* v2 only: the unified line */
	assert_int_equal(kr_cgroups_parse(data("mountinfo_v2only.txt"), &cg), 0);
	assert_int_equal(kr_rt_runtime_file("0::/user.slice/session-2.scope\n", &cg, file,
					    sizeof(file), group, sizeof(group)), 2);
	assert_string_equal(group, "/user.slice/session-2.scope");
	/* a container's view (recorded: the v1 cpu hierarchy's /krepro-libfix-docker bind-
	 * mounted over /sys/fs/cgroup/cpu, as docker mounts /docker/ID): /proc/self/cgroup
	 * paths are the hierarchy's, the mount shows the group at its mount root */
	assert_int_equal(kr_cgroups_parse(data("mountinfo_v1_container.txt"), &cg), 0);
	assert_string_equal(cg.v1_cpu, "/sys/fs/cgroup/cpu");
	assert_int_equal(kr_rt_runtime_file(data("proc_cgroup_v1_container.txt"), &cg, file,
					    sizeof(file), group, sizeof(group)), 1);
	assert_string_equal(group, "/krepro-libfix-docker/app");
	assert_string_equal(file, "/sys/fs/cgroup/cpu/app/cpu.rt_runtime_us");
	assert_int_equal(kr_rt_runtime_file("1:cpu:/krepro-libfix-docker\n", &cg, file,
					    sizeof(file), group, sizeof(group)), 1);
	assert_string_equal(file, "/sys/fs/cgroup/cpu/cpu.rt_runtime_us");
	/* a group outside what is mounted has no file here; a look-alike prefix is not in it */
	assert_int_equal(kr_rt_runtime_file("1:cpu:/other\n", &cg, file, sizeof(file), group,
					    sizeof(group)), -1);
	assert_int_equal(kr_rt_runtime_file("1:cpu:/krepro-libfix-dockerx\n", &cg, file,
					    sizeof(file), group, sizeof(group)), -1);
	/* a file name that does not fit is none (cut short, it would name another) */
	assert_int_equal(kr_rt_runtime_file("1:cpu:/krepro-libfix-docker/app\n", &cg, file, 30,
					    group, sizeof(group)), -1);
	assert_string_equal(file, "");
	/* v2 the same */
	assert_int_equal(kr_cgroups_parse("30 1 0:26 /docker/1f2e /sys/fs/cgroup rw - cgroup2 "
					  "cgroup2 rw\n", &cg), 0);
	assert_int_equal(kr_rt_runtime_file("0::/docker/1f2e/c\n", &cg, file, sizeof(file),
					    group, sizeof(group)), 2);
	assert_string_equal(file, "/sys/fs/cgroup/c/cpu.rt_runtime_us");
	/* garbage */
	assert_int_equal(kr_rt_runtime_file("nonsense\n::\n", &cg, file, sizeof(file), group,
					    sizeof(group)), -1);
}

/* /proc/interrupts with CPU 1 offline: column i is not CPU i */
static void test_interrupts(void **state)
{
	int col[8], irq;
	uint64_t c[8];
	char name[64];
	(void)state;
	assert_int_equal(kr_interrupts_header("           CPU0       CPU2       CPU3       ", col, 8), 3);
	assert_int_equal(col[0], 0);
	assert_int_equal(col[1], 2);
	assert_int_equal(col[2], 3);
	memset(c, 0, sizeof(c));
	assert_int_equal(kr_interrupts_line(" 36:          7      56369          3 PCI-MSIX-0000:00:02.0"
					    "   1-edge      virtio1-req.0", col, 3, &irq, c, 8, name,
					    sizeof(name)), 3);
	assert_int_equal(irq, 36);
	assert_int_equal(c[0], 7);
	assert_int_equal(c[1], 0); /* offline: no column */
	assert_int_equal(c[2], 56369);
	assert_int_equal(c[3], 3);
	assert_string_equal(name, "virtio1-req.0");
	/* named rows: no IRQ number */
	assert_int_equal(kr_interrupts_line("NMI:          0          0          0   Non-maskable interrupts",
					    col, 3, &irq, c, 8, NULL, 0), 3);
	assert_int_equal(irq, -1);
	/* ERR has one column only */
	assert_int_equal(kr_interrupts_line("ERR:          0\n", col, 3, &irq, c, 8, name, sizeof(name)), 1);
	assert_int_equal(kr_interrupts_line("no colon here", col, 3, &irq, c, 8, NULL, 0), -1);
	/* a CPU beyond the array is not written */
	int big[1] = { 5000 };
	assert_int_equal(kr_interrupts_line(" 9: 4 x", big, 1, &irq, c, 8, NULL, 0), 1);
	assert_int_equal(kr_interrupts_header("no cpus", col, 8), -1);
	/* /sys/kernel/irq/N/per_cpu_count: by CPU number, possible CPUs */
	assert_int_equal(kr_parse_per_cpu_count("0,15,3\n", c, 8), 3);
	assert_int_equal(c[1], 15);
	assert_int_equal(kr_parse_per_cpu_count("1,2,3,4,5,6,7,8,9", c, 8), 9); /* counted, not written */
	assert_int_equal(c[7], 8);
	assert_int_equal(kr_parse_per_cpu_count("1,,2", c, 8), -1);
	assert_int_equal(kr_parse_per_cpu_count("", c, 8), -1);
}

/* files of any size: /proc/interrupts of a 1024-CPU host is over 1 MB */
static void test_read_text(void **state)
{
	char path[] = "/tmp/krepro-procfs-test-XXXXXX";
	(void)state;
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	static char line[12000];
	memset(line, ' ', sizeof(line) - 2);
	line[sizeof(line) - 2] = 'x';
	line[sizeof(line) - 1] = '\n';
	for (int i = 0; i < 200; i++)
		assert_int_equal(write(fd, line, sizeof(line)), (ssize_t)sizeof(line));
	close(fd);
	char *t = kr_read_text(path);
	unlink(path);
	assert_non_null(t);
	assert_int_equal(strlen(t), 200 * sizeof(line));
	assert_int_equal(t[strlen(t) - 2], 'x');
	free(t);
	assert_null(kr_read_text("/nonexistent/file"));
}

/* a FIFO fed 7 bytes at a time: every read() returns only what was written so far, as a
 * seq_file returns one page (/proc/net/softnet_stat: about 35 CPU rows) */
static void *feed_fifo(void *path)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	setvbuf(f, NULL, _IONBF, 0);
	for (int i = 0; i < 100; i++) {
		char row[16];
		snprintf(row, sizeof(row), "row %02d\n", i);
		fputs(row, f);
		usleep(200);
	}
	fclose(f);
	return NULL;
}

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* kr_read_file reads to the end of the file, and says when it does not fit */
static void test_read_file(void **state)
{
	char dir[] = "/tmp/krepro-test-readfile-XXXXXX", path[64], buf[8192];
	pthread_t t;
	(void)state;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(pthread_create(&t, NULL, feed_fifo, path), 0);
	assert_int_equal(kr_read_file(path, buf, sizeof(buf)), 100 * 7 - 1);
	pthread_join(t, NULL);
	assert_memory_equal(buf, "row 00\nrow 01\n", 14);
	assert_string_equal(buf + 99 * 7, "row 99");
	unlink(path);
	/* a real seq_file: smaps gives one page (4 KB) per read() and this process has more */
	assert_true(kr_read_file("/proc/self/smaps", buf, sizeof(buf)) > 4096 ||
		    errno == EFBIG);
	/* too long for buf: -1 with EFBIG, buf holds what fits, NUL-terminated */
	snprintf(path, sizeof(path), "%s/file", dir);
	put_file(path, "0123456789\n");
	errno = 0;
	assert_int_equal(kr_read_file(path, buf, 6), -1);
	assert_int_equal(errno, EFBIG);
	assert_string_equal(buf, "01234");
	/* exactly fits, with or without its newline (stripped either way) */
	assert_int_equal(kr_read_file(path, buf, 11), 10);
	assert_string_equal(buf, "0123456789");
	put_file(path, "0123456789");
	assert_int_equal(kr_read_file(path, buf, 11), 10);
	put_file(path, "0123456789\n\n");
	assert_int_equal(kr_read_file(path, buf, 11), 10);
	put_file(path, "");
	assert_int_equal(kr_read_file(path, buf, 11), 0);
	assert_string_equal(buf, "");
	unlink(path);
	assert_int_equal(kr_read_file(path, buf, sizeof(buf)), -1);
	assert_int_equal(errno, ENOENT);
	rmdir(dir);
}

/* kernel threads only: kthreadd and ksoftirqd/0 found, this process not */
static void test_find_kthreads(void **state)
{
	pid_t t[8];
	char comm[64];
	(void)state;
	assert_int_equal(kr_find_kthreads("kthreadd", t, 8), 1);
	assert_int_equal(t[0], 2);
	assert_int_equal(kr_find_kthreads("ksoftirqd/0", t, 8), 1);
	assert_true(kr_read_file("/proc/self/comm", comm, sizeof(comm)) > 0);
	assert_true(kr_find_tasks(comm, t, 8) >= 1);
	assert_int_equal(kr_find_kthreads(comm, t, 8), 0);
	struct kr_taskstat ts;
	assert_int_equal(kr_read_taskstat(t[0] = 2, &ts), 0);
	assert_true(ts.flags & 0x00200000);
	assert_int_equal(kr_read_taskstat(getpid(), &ts), 0);
	assert_false(ts.flags & 0x00200000);
	assert_int_equal(ts.ppid, getppid());
}

/* uname -v of Debian's kernels (their bzImages' version strings, and booted) */
#define DEB61 "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2 (2026-11-16)"
#define DEB61_RT "#1 SMP PREEMPT_RT Debian 6.1.192-2 (2026-11-16)"
#define DEB612 "#1 SMP PREEMPT_DYNAMIC Debian 6.12.117-1~deb12u1 (2026-11-14)"
#define DEB612_RT "#1 SMP PREEMPT_RT Debian 6.12.117-1~deb12u1 (2026-11-14)"
/* a kernel.org build's (init/Makefile's flags, then the build date); this host's; the form
 * of the RT patches of 4.x */
#define MAINLINE612_RT "#1 SMP PREEMPT_RT Wed Nov 26 06:00:00 UTC 2026"
#define HOST618 "#1 SMP PREEMPT_DYNAMIC @0"
#define DEB419_RT "#1 SMP PREEMPT RT Debian 4.19.67-2+deb10u2 (2019-11-11)"
/* this host's command line: init's arguments after "--" */
#define HOST_CMDLINE "console=ttyS0 quiet panic=1 rdinit=/process_api -- --addr 0.0.0.0:2024"

/* who runs softirqs in threads: PREEMPT_RT as the kernel says it, threadirqs; a look-alike
 * word is not it */
static void test_threaded_cause(void **state)
{
	(void)state;
	struct kr_kernel k = { .release = "6.18.44", .version = HOST618, .cmdline = "ro" };
	const char *const no[] = { "BOOT_IMAGE=/vmlinuz root=/dev/vda ro", "nothreadirqs",
		"foo.threadirqs", "threadirqsx", HOST_CMDLINE " threadirqs",
		"x=\"a threadirqs b\"", "a -- b threadirqs", "" };
	const char *const yes[] = { "root=/dev/vda threadirqs quiet", "threadirqs",
		"ro threadirqs\n", "threadirqs=0", "\"threadirqs\"", "\"threadirqs=1\"" };
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++) {
		k.cmdline = no[i];
		assert_null(kr_softirq_threaded_from(&k));
	}
	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++) {
		k.cmdline = yes[i];
		assert_string_equal(kr_softirq_threaded_from(&k),
				    "threadirqs: irq exit leaves every softirq to ksoftirqd");
	}
	/* whole parameters of the kernel's, not init's */
	assert_true(kr_cmdline_has(HOST_CMDLINE, "quiet"));
	assert_true(kr_cmdline_has(HOST_CMDLINE, "panic=1"));
	assert_false(kr_cmdline_has(HOST_CMDLINE, "--addr"));
	assert_false(kr_cmdline_has(HOST_CMDLINE, "--"));
	assert_false(kr_cmdline_has("x=\"a quiet\"", "quiet"));
	/* a config without IRQ_FORCED_THREADING has no threadirqs parameter */
	k.config = "# CONFIG_IRQ_FORCED_THREADING is not set\n";
	assert_null(kr_softirq_threaded_from(&k));
	k.config = "CONFIG_IRQ_FORCED_THREADING=y\n";
	assert_non_null(kr_softirq_threaded_from(&k));

	/* generic kernels: not RT, with or without their config at hand */
	const char *const generic[] = { DEB61, DEB612, HOST618, "#1 SMP PREEMPT",
		"#1 SMP PREEMPT_RTX", "#1 SMP" };
	for (size_t i = 0; i < sizeof(generic) / sizeof(*generic); i++) {
		k = (struct kr_kernel){ .release = "6.12.117+deb12-amd64", .version = generic[i],
			.cmdline = "ro quiet", .config = "# CONFIG_PREEMPT_RT is not set\n" };
		assert_null(kr_preempt_rt(&k));
		assert_null(kr_softirq_threaded_from(&k));
		k.config = NULL;
		assert_null(kr_softirq_threaded_from(&k));
	}
	/* Debian's 6.1-rt and 6.12-rt: the RT patches; uname -v and /sys/kernel/realtime */
	k = (struct kr_kernel){ .release = "6.1.0-56-rt-amd64", .version = DEB61_RT,
		.cmdline = "ro", .realtime = "1\n" };
	assert_string_equal(kr_softirq_threaded_from(&k),
			    "PREEMPT_RT (uname -v): softirqs always run in threads");
	k.release = "6.12.117+deb12-rt-amd64", k.version = DEB612_RT;
	assert_string_equal(kr_preempt_rt(&k), "uname -v");
	/* 6.12 from kernel.org with PREEMPT_RT=y: no /sys/kernel/realtime, which only the RT
	 * patch queue adds (Debian's 6.12-rt applies it: its file says 1). The old code's
	 * NULL here. */
	k = (struct kr_kernel){ .release = "6.12.0", .version = MAINLINE612_RT,
		.cmdline = "BOOT_IMAGE=/boot/vmlinuz-6.12.0 root=/dev/vda ro" };
	assert_string_equal(kr_preempt_rt(&k), "uname -v");
	assert_non_null(kr_softirq_threaded_from(&k));
	k.version = DEB419_RT;
	assert_string_equal(kr_preempt_rt(&k), "uname -v");
	/* a version string that says nothing: the config, then the RT patch's file */
	k.version = "#1 custom";
	k.config = "CONFIG_PREEMPT_RT=y\n";
	assert_string_equal(kr_softirq_threaded_from(&k),
			    "PREEMPT_RT (CONFIG_PREEMPT_RT=y): softirqs always run in threads");
	k.config = NULL;
	k.realtime = "1";
	assert_string_equal(kr_preempt_rt(&k), "/sys/kernel/realtime");
	k.realtime = "0";
	assert_null(kr_preempt_rt(&k));
	/* this machine: 6.18, neither */
	assert_null(kr_softirq_threaded());
}

/* the RPS backlog in backlog_napi/N: v6.10+, PREEMPT_RT or thread_backlog_napi */
static void test_backlog_threaded(void **state)
{
	(void)state;
	const char *param = "thread_backlog_napi: the RPS backlog runs in backlog_napi/N";
	struct kr_kernel k = { .release = "6.12.117+deb12-amd64", .version = DEB612,
			       .cmdline = "root=/dev/vda ro thread_backlog_napi console=ttyS0" };
	assert_string_equal(kr_backlog_threaded_from(&k), param);
	/* an early parameter: any value, '-' for '_'; not after "--", not inside a word */
	const char *const yes[] = { "thread_backlog_napi=0", "thread-backlog-napi",
		"\"thread_backlog_napi\"" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++) {
		k.cmdline = yes[i];
		assert_string_equal(kr_backlog_threaded_from(&k), param);
	}
	const char *const no[] = { "ro", "net.thread_backlog_napi", "thread_backlog_napix",
		"ro -- thread_backlog_napi", "threadirqs", "" };
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++) {
		k.cmdline = no[i];
		assert_null(kr_backlog_threaded_from(&k));
	}
	/* before 6.10 there is no such thread, the parameter is unknown */
	k = (struct kr_kernel){ .release = "6.9.12", .version = DEB612,
				.cmdline = "thread_backlog_napi" };
	assert_null(kr_backlog_threaded_from(&k));
	k.release = "6.10.0-rc1";
	assert_non_null(kr_backlog_threaded_from(&k));
	k.release = "7.0.0";
	assert_non_null(kr_backlog_threaded_from(&k));
	/* mainline RT 6.12: always */
	k = (struct kr_kernel){ .release = "6.12.117+deb12-rt-amd64", .version = DEB612_RT,
				.cmdline = "ro" };
	assert_string_equal(kr_backlog_threaded_from(&k),
			    "PREEMPT_RT (uname -v): the RPS backlog runs in backlog_napi/N");
	/* RT 6.1: softirqs in threads, but no backlog thread yet */
	k = (struct kr_kernel){ .release = "6.1.0-56-rt-amd64", .version = DEB61_RT,
				.cmdline = "ro thread_backlog_napi", .realtime = "1" };
	assert_null(kr_backlog_threaded_from(&k));
	assert_non_null(kr_softirq_threaded_from(&k));
	/* generic 6.18 without the parameter: this machine */
	k = (struct kr_kernel){ .release = "6.18.44-fc-v669", .version = HOST618,
				.cmdline = HOST_CMDLINE };
	assert_null(kr_backlog_threaded_from(&k));
	assert_null(kr_backlog_threaded());
}

/* the CPU model of the header: x86 says it; arm64 says who made which part */
static void test_cpu_model(void **state)
{
	char m[256], *t;
	(void)state;
	assert_string_equal(kr_cpu_model_from(data("cpuinfo_x86.txt"), NULL, m, sizeof(m)),
			    "AMD EPYC");
	/* Ampere Altra: 0x41 0xd0c (the lscpu thread's); Rockchip RK3588: 4 A55 and 4 A76 */
	assert_string_equal(kr_cpu_model_from(data("cpuinfo_arm64_altra.txt"), NULL, m,
					      sizeof(m)), "ARM Neoverse-N1");
	assert_string_equal(kr_cpu_model_from(data("cpuinfo_arm64_rk3588.txt"),
					      "Radxa ROCK 5B", m, sizeof(m)),
			    "ARM Cortex-A55 + ARM Cortex-A76 (Radxa ROCK 5B)");
	/* parts and makers without a name here: their numbers */
	assert_string_equal(kr_cpu_model_from("CPU implementer\t: 0x41\nCPU part\t: 0xfff\n",
					      NULL, m, sizeof(m)), "ARM part 0xfff");
	assert_string_equal(kr_cpu_model_from("CPU implementer\t: 0x99\nCPU part\t: 0x001\n",
					      NULL, m, sizeof(m)),
			    "implementer 0x99 part 0x001");
	assert_string_equal(kr_cpu_model_from("CPU implementer\t: 0xc0\nCPU part\t: 0xac3\n",
					      NULL, m, sizeof(m)), "Ampere AmpereOne");
	/* the device tree alone; other architectures; nothing */
	assert_string_equal(kr_cpu_model_from("processor\t: 0\n", "Raspberry Pi 5 Model B",
					      m, sizeof(m)), "Raspberry Pi 5 Model B");
	assert_string_equal(kr_cpu_model_from("processor\t: 0\ncpu\t\t: POWER9 (raw), altivec "
					      "supported\n", NULL, m, sizeof(m)),
			    "POWER9 (raw), altivec supported");
	assert_string_equal(kr_cpu_model_from("processor\t: 0\nuarch\t\t: sifive,u74-mc\n",
					      NULL, m, sizeof(m)), "sifive,u74-mc");
	assert_string_equal(kr_cpu_model_from("cpu MHz\t: 2000\ncpu family\t: 6\n", NULL, m,
					      sizeof(m)), "unknown");
	assert_string_equal(kr_cpu_model_from(NULL, NULL, m, sizeof(m)), "unknown");
	assert_string_equal(kr_cpu_model_from("c\ncp", NULL, m, sizeof(m)), "unknown");
	assert_string_equal(kr_cpu_model_from(data("cpuinfo_arm64_rk3588.txt"), NULL, m, 10),
			    "ARM Corte");
	/* this machine */
	t = kr_read_text("/proc/cpuinfo");
	assert_string_not_equal(kr_cpu_model_from(t, NULL, m, sizeof(m)), "unknown");
	free(t);
}

/* NUMA nodes as sysfs lists them: sparse, beyond 64, one without CPUs */
static void test_numa(void **state)
{
	char dir[] = "/tmp/krepro-test-node-XXXXXX", cmd[64], *s;
	(void)state;
	assert_non_null(mkdtemp(dir));
	put(dir, "online", "0-1,70,1023");
	put(dir, "possible", "0-1023");
	put(dir, "node0/cpulist", "0-3");
	put(dir, "node1/cpulist", "");
	put(dir, "node70/cpulist", "4-7");
	put(dir, "node1023/cpulist", "8");
	put(dir, "power/autosuspend_delay_ms", "0");
	assert_non_null(s = kr_numa_summary(dir));
	assert_string_equal(s, "nodes 0-1,70,1023; node0:cpus 0-3 node1:cpus none "
			       "node70:cpus 4-7 node1023:cpus 8");
	free(s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	assert_null(kr_numa_summary("/nonexistent"));
	/* this machine: one node */
	assert_non_null(s = kr_numa_summary(NULL));
	assert_non_null(strstr(s, "node0:cpus "));
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_stat), cmocka_unit_test(test_cpu_stat),
		cmocka_unit_test(test_schedstat), cmocka_unit_test(test_taskstat),
		cmocka_unit_test(test_kconfig),	  cmocka_unit_test(test_mountinfo),
		cmocka_unit_test(test_cpuidle),
		cmocka_unit_test(test_rt_runtime_file),
		cmocka_unit_test(test_interrupts),	  cmocka_unit_test(test_read_text),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_find_kthreads),
		cmocka_unit_test(test_threaded_cause),
		cmocka_unit_test(test_backlog_threaded),
		cmocka_unit_test(test_cpu_model),
		cmocka_unit_test(test_numa),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
