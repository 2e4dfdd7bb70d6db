# SPDX-License-Identifier: GPL-2.0-only
"""Description: a snapshot of everything a krepro run may touch, to show it left the machine
as it found it. Used by tests/contract.py and scripts/labcheck."""
import glob, os, re

PROGRAMS = ["fibtest", "rt_starve", "dio_kworker", "hwts", "ktask_bench", "irqacct",
            "clear_pages", "throttle_lock"]
SYSCTLS = ["kernel/sched_cfs_bandwidth_slice_us", "kernel/sched_rt_runtime_us",
           "kernel/sched_rt_period_us", "vm/nr_hugepages", "vm/nr_overcommit_hugepages"]


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def snapshot():
    s = {f: _read("/proc/sys/" + f) for f in SYSCTLS}
    # each node's share of the pools: restoring the global count alone moves pages between nodes
    s["hugepages_nodes"] = {p: _read(p) for p in glob.glob(
        "/sys/devices/system/node/node*/hugepages/*/nr_hugepages")}
    s["cgroups"] = sorted(glob.glob("/sys/fs/cgroup/*/krepro-*") + glob.glob("/sys/fs/cgroup/krepro-*")
                          + glob.glob("/sys/fs/cgroup/*/*/krepro-*"))
    s["journals"] = sorted(x for x in os.listdir("/run/krepro") if x != "lock") \
        if os.path.isdir("/run/krepro") else []
    s["netns"] = sorted(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else []
    s["interfaces"] = sorted(os.listdir("/sys/class/net"))
    policies = []
    for comm in glob.glob("/proc/[0-9]*/comm"):
        name = _read(comm)
        if not name or not re.match(r"(ksoftirqd|kworker|napi|irq)/", name):
            continue
        st = _read(comm[:-4] + "stat")
        try:
            fields = st[st.rindex(")") + 2:].split()
            if name.startswith("irq/"):
                continue  # threaded IRQ handlers are FIFO 50 by design
            if fields[38] != "0":  # policy, field 41 of proc(5)
                policies.append((name, fields[38], fields[37]))
        except (AttributeError, ValueError, IndexError):
            pass
    s["kthread_policies"] = sorted(policies)
    s["rps"] = {f: _read(f) for f in sorted(glob.glob("/sys/class/net/*/queues/rx-*/rps_cpus"))}
    s["cpuidle_disable"] = {f: _read(f) for f in sorted(glob.glob("/sys/devices/system/cpu/cpu*/cpuidle/state*/disable"))}
    # what programs create is named krepro-<program>-<pid>, wherever it goes
    s["tmp"] = sorted(p for d in ("/tmp", "/var/tmp", ".", "/dev/shm", "/dev/hugepages")
                      for prog in PROGRAMS for p in glob.glob(f"{d}/krepro-{prog}-*"))
    s["thp"] = _read("/sys/kernel/mm/transparent_hugepage/enabled")
    return s


def diff(before, after):
    """The keys that differ, with both values: an empty list when nothing changed."""
    return [f"{k}: {before.get(k)!r} -> {after.get(k)!r}" for k in sorted(set(before) | set(after))
            if before.get(k) != after.get(k)]
