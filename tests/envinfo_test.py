#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: krepro-envinfo's fields against /proc and /sys read independently here."""
import gzip, json, os, re, subprocess, sys

exe = sys.argv[1]
env = json.loads(subprocess.run([exe, "--json"], capture_output=True, text=True, check=True).stdout)
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)


def read(p):
    with open(p) as f:
        return f.read().strip()


def comm(pid):
    """A task's name, or "" when it exited between the listing and the read."""
    try:
        return read(f"/proc/{pid}/comm")
    except OSError:
        return ""


u = os.uname()
check(env["kernel"] == f"{u.release} {u.machine}", f"kernel {env['kernel']!r}")
check(env["cpu"].startswith(f"{os.cpu_count()} x "), f"cpu {env['cpu']!r}")
check(env["rt_throttling"] == "sched_rt_runtime_us %s of sched_rt_period_us %s"
      % (read("/proc/sys/kernel/sched_rt_runtime_us"), read("/proc/sys/kernel/sched_rt_period_us")),
      f"rt_throttling {env['rt_throttling']!r}")
check(env["hugepages"].startswith("nr_hugepages %s of " % read("/proc/sys/vm/nr_hugepages")),
      f"hugepages {env['hugepages']!r}")
check(("[%s]" % re.search(r"\[(\w+)\]", read("/sys/kernel/mm/transparent_hugepage/enabled")).group(1))
      in env["thp"], f"thp {env['thp']!r}")
check(env["numa"].startswith("nodes %s;" % read("/sys/devices/system/node/online")), f"numa {env['numa']!r}")
# cgroups: from mountinfo, parsed differently (by fstype and super options)
v1cpu = v1acct = v2 = None
for line in open("/proc/self/mountinfo"):
    pre, _, post = line.partition(" - ")
    mnt = pre.split()[4]
    fstype, _, opts = post.split()[:3]
    if fstype == "cgroup2" and v2 is None:
        v2 = mnt
    if fstype == "cgroup" and "cpu" in opts.split(",") and v1cpu is None:
        v1cpu = mnt
    if fstype == "cgroup" and "cpuacct" in opts.split(",") and v1acct is None:
        v1acct = mnt
check(f"v1 cpu {v1cpu or '(none)'}, cpuacct {v1acct or '(none)'}" in env["cgroup"], f"cgroup {env['cgroup']!r}")
check(env["cgroup"].startswith(f"v2 {v2 or '(none)'}"), f"cgroup v2 {env['cgroup']!r}")
# ksoftirqd threads: one per possible CPU that came online
n = sum(1 for p in os.listdir("/proc") if p.isdigit() and comm(p).startswith("ksoftirqd/"))
check(env["threads_ksoftirqd"].startswith(f"{n}, "), f"threads_ksoftirqd {env['threads_ksoftirqd']!r} vs {n}")
drv = read("/sys/devices/system/cpu/cpuidle/current_driver") if os.path.exists(
    "/sys/devices/system/cpu/cpuidle/current_driver") else "none"
# envinfo describes cpu0 (a program names the CPU it measures, kr_env_cpu)
check(env["cpuidle"].startswith(f"cpu0: driver {drv},"), f"cpuidle {env['cpuidle']!r}")
names = []
for k in range(16):
    p = f"/sys/devices/system/cpu/cpu0/cpuidle/state{k}/name"
    if not os.path.exists(p):
        break
    names.append(read(p))
check(all(f" {n}:" in env["cpuidle"] for n in names), f"cpuidle states {env['cpuidle']!r} vs {names}")
if os.path.exists("/proc/config.gz"):
    cfg = gzip.open("/proc/config.gz", "rt").read()
    hz = re.search(r"^CONFIG_HZ=(\d+)$", cfg, re.M)
    check(hz and f"HZ={hz.group(1)} " in env["config"], f"config {env['config']!r}")
    ita = "y" if re.search(r"^CONFIG_IRQ_TIME_ACCOUNTING=y$", cfg, re.M) else "n"
    check(f"IRQ_TIME_ACCOUNTING={ita}" in env["config"], f"config IRQ_TIME_ACCOUNTING {env['config']!r}")
cmd = read("/proc/cmdline")
for key in ("isolcpus=", "nohz_full=", "tsc="):
    m = re.search(r"(?:^| )(" + key + r"\S*)", cmd)
    check((m.group(1) in env["cmdline"]) if m else (key not in env["cmdline"] or "none of" in env["cmdline"]),
          f"cmdline {env['cmdline']!r}")
if fails:
    print(f"{len(fails)} check(s) failed")
    sys.exit(1)
print("all envinfo fields agree with /proc and /sys")
