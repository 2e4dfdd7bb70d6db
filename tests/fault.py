#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: the fault test (issue 10). For each program: a default run, then the program
killed with SIGINT, SIGTERM and SIGKILL at seeded random points (a third of them in the first
300 ms, where the changes are made, the rest uniform over the length of a default run, which
covers the RT/measurement phase); after SIGKILL, `--restore-only` of this or another program,
started from another directory (/), must restore what the dead run left. After every trial the machine must be as before:
scripts/krstate.py's snapshot, plus every sysctl under kernel/, vm/ and net/core/, IRQ
affinities, hugepage counts, PM QoS, and the scheduling policy of every task. Also: two runs
at once (the second exits 128 naming the holder of the lock and changes nothing) and an
unprivileged run (exit 129 with a reason, nothing changed).

Every program execution holds /tmp/krepro-bench.lock (timing runs of other work must not
overlap). Needs root (exit 77 otherwise, meson's skip).

usage: tests/fault.py [--quick] [--kills N] [--seed S] [--builddir DIR] [PROGRAM...]
  PROGRAM: a name (DIR/<name>/<name>) or a path; default: every program built in DIR
  (default build/). A trial that another krepro run overlapped (another test suite) is
  run again, up to 3 times.
  --quick: one kill per signal per program. --mail: the same for each program's mail form
  (scripts/export, built here): a default run, then SIGINT, SIGTERM, SIGHUP (it undoes
  everything itself) and SIGKILL (its printed "undo by hand" lines, run by hand, must).
  Exit 0: all passed; 1: a failure."""
import argparse, fcntl, glob, os, random, re, signal, subprocess, sys, threading, time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
import krstate  # noqa: E402
import benchlock  # noqa: E402

BENCH_LOCK = benchlock.BENCH_LOCK
RUNDIR = "/run/krepro"
PROGRAMS = krstate.PROGRAMS
SYSCTL_DIRS = ["/proc/sys/kernel", "/proc/sys/vm", "/proc/sys/net/core"]
# values that change by themselves (found again at start-up by reading twice)
VOLATILE = re.compile(r"/(random|ns_last_pid|stat_refresh|drop_caches|compact_memory|"
                      r"perf_event_max_sample_rate|hung_task_detect_count)")


# the default run and the kills (and the mail form's constants): 1 s measuring phases,
# every phase still there (setup, measure, restore) in a third to a fifth of the time
# (ktask_bench 5.5 s -> 0.9, irqacct 5.7 -> 1.7, dio_kworker 5.5 -> 2.9); two at once
# keeps the default length, so that the first still holds the lock when the second starts
SHORT = ["--duration", "1"]

NOT_PROGRAM_TMP = re.compile(r"/krepro-(bench\.lock|brief|vmrun-|journal-test-)")


class BenchLock:
    """flock(1) on the shared bench lock, held for one program's series (< 3 min: taking it
    per trial would queue behind every other user of the lock each time). Nested: no-op.
    Held by an ancestor (flock ... scripts/test, or KREPRO_BENCH_LOCK_HELD=1): never taken."""
    depth = 1 if benchlock.held_by_ancestor(BENCH_LOCK) else 0
    f = None

    def __enter__(self):
        if BenchLock.depth == 0:
            BenchLock.f = benchlock.open_lock()
            fcntl.flock(BenchLock.f, fcntl.LOCK_EX)
        BenchLock.depth += 1
        return self

    def __exit__(self, *a):
        BenchLock.depth -= 1
        if BenchLock.depth == 0:
            fcntl.flock(BenchLock.f, fcntl.LOCK_UN)
            BenchLock.f.close()


def read(path, binary=False):
    try:
        with open(path, "rb" if binary else "r") as f:
            return f.read() if binary else f.read().strip()
    except OSError:
        return None


def task_policies(exclude):
    """(tid, starttime) -> (policy, rt_priority, nice, comm) of every task (threads too)."""
    out = {}
    for st in glob.glob("/proc/[0-9]*/task/[0-9]*/stat"):
        t = read(st)
        if not t:
            continue
        try:
            pid = int(st.split("/")[2])
            if pid in exclude:
                continue
            comm = t[t.index("(") + 1:t.rindex(")")]
            f = t[t.rindex(")") + 2:].split()
            # proc(5) numbering: field n is f[n - 3]
            # comm is not compared: a kworker's names its current workqueue
            out[(int(st.split("/")[4]), f[19])] = (f[38], f[37], f[16], comm)
        except (ValueError, IndexError):
            pass
    return out


def sysctls():
    out = {}
    for d in SYSCTL_DIRS:
        for root, _, files in os.walk(d):
            for name in files:
                p = os.path.join(root, name)
                if not VOLATILE.search(p):
                    out[p] = read(p)
    return out


def snapshot(volatile=()):
    s = krstate.snapshot()
    s["sysctl"] = {k: v for k, v in sysctls().items() if k not in volatile}
    s["irq_affinity"] = {p: read(p) for p in glob.glob("/proc/irq/*/smp_affinity_list")}
    s["hugepages"] = {p: read(p) for p in glob.glob("/sys/kernel/mm/hugepages/*/nr_*hugepages")}
    raw = read("/dev/cpu_dma_latency", binary=True)
    s["pm_qos_cpu_dma_latency"] = int.from_bytes(raw[:4], "little", signed=True) if raw else None
    s["pm_qos_resume"] = {p: read(p) for p in glob.glob(
        "/sys/devices/system/cpu/cpu*/power/pm_qos_resume_latency_us")}
    s["cpufreq_governor"] = {p: read(p) for p in glob.glob(
        "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor")}
    s["rundir"] = sorted(os.listdir(RUNDIR)) if os.path.isdir(RUNDIR) else []
    # /tmp/krepro-* of the harnesses around the programs (the bench lock, scripts/vmrun,
    # tests/test_journal) come and go with other work and are not a program's
    s["tmp"] = sorted(x for x in set(s["tmp"]) | set(glob.glob("/dev/shm/krepro*"))
                      if not NOT_PROGRAM_TMP.search(x))
    return s


def flat(s):
    """dict-valued items (sysctls, IRQs...) one key each, so a diff names the one that changed"""
    out = {}
    for k, v in s.items():
        if isinstance(v, dict) and k != "tasks":
            out.update({f"{k}:{kk}": vv for kk, vv in v.items()})
        elif k != "tasks":
            out[k] = v
    return out


def compare(before, after):
    """krstate.diff, but tasks only where the same task exists in both snapshots."""
    d = krstate.diff(flat(before), flat(after))
    for k in before.get("tasks", {}).keys() & after.get("tasks", {}).keys():
        if before["tasks"][k][:3] != after["tasks"][k][:3]:
            d.append(f"task {k[0]} {before['tasks'][k]} -> {after['tasks'][k]}")
    return d


def full_snapshot(volatile):
    s = snapshot(volatile)
    s["tasks"] = task_policies({os.getpid()})
    return s


def wait_lock_free(timeout=120):
    """A krepro run outside the bench lock (someone's test) may hold /run/krepro/lock."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            fd = os.open(os.path.join(RUNDIR, "lock"), os.O_RDWR)
        except FileNotFoundError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return
        except BlockingIOError:
            time.sleep(0.2)
        finally:
            os.close(fd)


def my_pids():
    ppid = {}
    for st in glob.glob("/proc/[0-9]*/stat"):
        t = read(st)
        if t:
            try:
                ppid[int(st.split("/")[2])] = int(t[t.rindex(")") + 2:].split()[1])
            except (ValueError, IndexError):
                pass
    mine, grew = {os.getpid()}, True
    while grew:
        new = {p for p, pp in ppid.items() if pp in mine} - mine
        mine |= new
        grew = bool(new)
    return mine


def foreign_runs(names):
    """krepro programs running that this test did not start (another test suite, a helper)"""
    mine = my_pids()
    out = set()
    for exe in glob.glob("/proc/[0-9]*/exe"):
        try:
            pid = int(exe.split("/")[2])
            if pid not in mine and os.path.basename(os.readlink(exe)) in names:
                out.add(pid)
        except (OSError, ValueError):
            pass
    return out


class Monitor(threading.Thread):
    """Samples foreign krepro runs during a trial: a trial they overlap proves nothing."""
    names = set()
    restorer = None

    def __init__(self):
        super().__init__(daemon=True)
        self.seen = foreign_runs(Monitor.names)
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.1):
            self.seen |= foreign_runs(Monitor.names)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.join()
        self.seen |= foreign_runs(Monitor.names)


def disturbed_retry(res, name, fn, *args):
    """Run one trial; when another krepro run overlapped it, run it again (3 times at most)."""
    for attempt in range(3):
        while foreign_runs(Monitor.names):
            time.sleep(0.5)
        if [j for j in os.listdir(RUNDIR) if j.startswith("journal.")] if os.path.isdir(RUNDIR) else []:
            # a dead run's journal (someone else's): any run restores it first, as documented
            finish(start([Monitor.restorer, "--restore-only", "--wait", "120"], cwd="/"), 60)
        with Monitor() as m:
            out = fn(Verdict, *args)
        if not m.seen:
            break
        print(f"  ...  {name:12s} another krepro run (pids {sorted(m.seen)}) overlapped: again",
              flush=True)
    else:
        return res.ok(name, "(not run: other krepro runs kept overlapping)", "")
    status, what, detail = out
    (res.ok if status else res.fail)(name, what, detail)
    return out


class Verdict:
    """What a trial hands back: (passed, what, detail)."""
    @staticmethod
    def ok(prog, what, detail=""):
        return (True, what, detail)

    @staticmethod
    def fail(prog, what, detail):
        return (False, what, detail)


class Result:
    def __init__(self):
        self.failures = []
        self.lines = []

    def ok(self, prog, what, detail=""):
        self.lines.append(f"  ok   {prog:12s} {what} {detail}".rstrip())
        print(self.lines[-1], flush=True)

    def fail(self, prog, what, detail):
        self.failures.append(f"{prog}: {what}: {detail}")
        self.lines.append(f"  FAIL {prog:12s} {what}: {detail}")
        print(self.lines[-1], flush=True)


def start(cmd, **kw):
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kw)


def finish(p, timeout):
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err, False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return p.returncode, out, err, True


def last_line(out):
    lines = [x for x in out.splitlines() if x.strip()]
    return lines[-1] if lines else ""


def default_run(res, name, exe, volatile):
    """A normal run: its wall time is the range the kill points are drawn from."""
    with BenchLock():
        wait_lock_free()
        before = full_snapshot(volatile)
        t0 = time.monotonic()
        rc, out, err, hung = finish(start([exe, "--wait", "120"] + SHORT), 120)
        wall = time.monotonic() - t0
        after = full_snapshot(volatile)
    d = compare(before, after)
    line = last_line(out)
    if hung or rc not in (0, 1, 125, 129):
        out = res.fail(name, "default run", f"exit {rc} hung={hung}: {line} {err.strip()[-300:]}")
    elif d:
        out = res.fail(name, "default run", "left changed: " + "; ".join(d))
    else:
        out = res.ok(name, "default run", f"exit {rc} in {wall:.1f} s: {line}")
    default_run.last = (wall, rc)
    return out


def kill_trial(res, name, exe, sig, when, target, restorer, volatile, wall):
    what = f"SIG{signal.Signals(sig).name[3:]} at {when:.2f} s to {target}"
    with BenchLock():
        wait_lock_free()
        before = full_snapshot(volatile)
        t0 = time.monotonic()
        p = start([exe, "--wait", "120"] + SHORT)
        time.sleep(max(0.0, when - (time.monotonic() - t0)))
        finished_first = p.poll() is not None
        if not finished_first:
            if target == "group":
                os.killpg(p.pid, sig)
            else:
                os.kill(p.pid, sig)
        rc, out, err, hung = finish(p, wall + 60)
        took = time.monotonic() - t0
        left = None
        if sig == signal.SIGKILL:
            time.sleep(0.05)
            left = compare(before, full_snapshot(volatile))
            # from another directory than the run's (dio_kworker's --dir . is relative)
            rrc, rout, rerr, rhung = finish(start([restorer, "--restore-only", "--wait", "120"],
                                                  cwd="/"), 60)
        after = full_snapshot(volatile)
    d = compare(before, after)
    if hung:
        return res.fail(name, what, f"did not end within {wall + 60:.0f} s")
    if finished_first:
        return res.ok(name, what, f"(finished before the signal: exit {rc})")
    if sig == signal.SIGKILL:
        restored = re.search(r"(\d+) journal\(s\)", rerr)
        nj = restored.group(1) if restored else "?"
        if rhung or rrc != 0:
            return res.fail(name, what, f"{os.path.basename(restorer)} --restore-only exit {rrc}: {rerr.strip()[-300:]}")
        if d:
            return res.fail(name, what, "not restored: " + "; ".join(d))
        return res.ok(name, what, f"-> {os.path.basename(restorer)} --restore-only restored {nj} "
                      f"journal(s); {len(left)} change(s) before it")
    line = last_line(out)
    if rc == 128 and re.match(rf"{re.escape(name)}: ERROR ", line) and not d:
        return res.ok(name, what, f"exit 128 after {took:.2f} s: {line}")
    if rc < 0 and when < 0.3 and not d:
        # delivered before the supervisor set its handlers (nothing was changed yet)
        return res.ok(name, what, f"(killed by the signal before the supervisor: exit {rc}, nothing changed)")
    if rc in (0, 1, 125, 129) and when > 0.8 * wall and not d:
        return res.ok(name, what, f"(ended with its verdict first: exit {rc})")
    return res.fail(name, what, f"exit {rc}, last line {line!r}, changed: {d}; stderr {err.strip()[-300:]}")


def two_at_once(res, name, exe, other, volatile):
    with BenchLock():
        wait_lock_free()
        before = full_snapshot(volatile)
        a = start([exe, "--wait", "120"])
        holder = None
        # until it holds the lock (the ok line says after how long), not a fixed 2 s: a
        # cold or loaded machine starts it later; 60 s only ends the wait for a run that
        # never takes it
        t0 = time.monotonic()
        while time.monotonic() < t0 + 60:
            if read(os.path.join(RUNDIR, "lock")) == str(a.pid):
                holder = a.pid
                break
            if a.poll() is not None:
                break
            time.sleep(0.01)
        took_lock = time.monotonic() - t0
        mid = snapshot(volatile)
        b = start([other])
        brc, bout, berr, bhung = finish(b, 30)
        mid2 = snapshot(volatile)
        if a.poll() is None:
            os.kill(a.pid, signal.SIGINT)
        arc, aout, aerr, ahung = finish(a, 60)
        after = full_snapshot(volatile)
    what = f"second run ({os.path.basename(other)}) while {name} runs"
    if holder is None:
        return res.fail(name, what, f"the first run never held the lock (exit {arc})")
    bjournal = [j for j in mid2["rundir"] if j == f"journal.{b.pid}"]
    changed = [x for x in compare(mid, mid2) if not x.startswith(("tasks", "journals", "rundir"))]
    text = bout + berr
    if brc != 128 or str(holder) not in text or bjournal or bhung:
        return res.fail(name, what, f"exit {brc}, output {text.strip()[-200:]!r}, journal {bjournal}")
    if compare(before, after):
        return res.fail(name, what, "left changed: " + "; ".join(compare(before, after)))
    # the first run keeps changing things while the second runs: only the second's own
    # traces (journal, names with its pid) can be told apart
    mine = [x for x in changed if str(b.pid) in x]
    if mine:
        return res.fail(name, what, "the second run changed: " + "; ".join(mine))
    return res.ok(name, what, f"exit 128 (the first held the lock after {took_lock:.2f} s): "
                  f"{last_line(bout) or last_line(berr)}")


def unprivileged(res, name, exe, volatile):
    with BenchLock():
        before = full_snapshot(volatile)
        rc, out, err, hung = finish(start(["setpriv", "--reuid", "65534", "--regid", "65534",
                                           "--clear-groups", exe, "--wait", "120"]), 60)
        after = full_snapshot(volatile)
    d = compare(before, after)
    line = last_line(out)
    if rc == 129 and re.match(rf"{re.escape(name)}: SKIP \S", line) and not d:
        return res.ok(name, "as uid 65534", f"exit 129: {line}")
    else:
        return res.fail(name, "as uid 65534", f"exit {rc}: {line!r} {err.strip()[-200:]} changed {d}")


def mail_build(name, tmp):
    """the program's mail form (scripts/export), built as its header says"""
    ex = subprocess.run([os.path.join(TOP, "scripts", "export"), name] + SHORT, capture_output=True,
                        text=True)
    if ex.returncode:
        return None, ex.stderr.strip()[-300:]
    with open(os.path.join(tmp, name + ".c"), "w") as f:
        f.write(ex.stdout)
    cc = re.search(r"^ \* Build: (cc .*)$", ex.stdout, re.M).group(1).split()
    b = subprocess.run(cc, cwd=tmp, capture_output=True, text=True)
    return (os.path.join(tmp, name), "") if b.returncode == 0 else (None, b.stderr[-300:])


def undo_by_hand(err):
    """run the mail form's 'undo by hand' lines, last first, as its reader would (a cgroup
    is busy until the killed run's workload is gone: each is tried for up to a second)"""
    for cmd in reversed([l.split("undo by hand: ", 1)[1] for l in err.splitlines()
                         if "undo by hand: " in l]):
        for _ in range(10):
            if subprocess.run(["sh", "-c", cmd], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)


def mail_trial(res, name, exe, sig, when, volatile, wall):
    """the mail form killed at `when`: SIGINT, SIGTERM, SIGHUP undo everything themselves;
    after SIGKILL its printed undo lines, run by hand, must"""
    what = f"mail form: SIG{signal.Signals(sig).name[3:]} at {when:.2f} s" if sig else \
        "mail form: default run"
    with BenchLock():
        wait_lock_free()
        before = full_snapshot(volatile)
        t0 = time.monotonic()
        p = start([exe])
        time.sleep(max(0.0, when - (time.monotonic() - t0)) if sig else 0)
        finished_first = p.poll() is not None
        if sig and not finished_first:
            os.kill(p.pid, sig)
        rc, out, err, hung = finish(p, wall + 60)
        mail_trial.wall = time.monotonic() - t0
        if sig == signal.SIGKILL:
            undo_by_hand(err)
        after = full_snapshot(volatile)
    d = compare(before, after)
    line = last_line(out)
    if hung:
        return res.fail(name, what, f"did not end within {wall + 60:.0f} s")
    if d:
        return res.fail(name, what, f"exit {rc}, left changed: {'; '.join(d)}")
    if not sig or finished_first or (rc in (0, 1, 125, 129) and when > 0.8 * wall):
        ok = rc in (0, 1, 125, 129) and re.match(rf"{re.escape(name)}: (PASS|FAIL|SKIP)", line)
        return (res.ok if ok else res.fail)(name, what, f"exit {rc}: {line}")
    if sig == signal.SIGKILL:
        n = err.count("undo by hand: ")
        return res.ok(name, what, f"restored by its {n} printed undo line(s)")
    if rc == 128 and re.match(rf"{re.escape(name)}: ERROR stopped by a signal", line):
        return res.ok(name, what, f"exit 128: {line}")
    return res.fail(name, what, f"exit {rc}, last line {line!r}; stderr {err.strip()[-300:]}")


def mail_trials(res, exes, kills, rng, volatile):
    import tempfile
    for name, _ in exes:
        with tempfile.TemporaryDirectory(prefix="krepro-fault-mail-") as tmp:
            exe, why = mail_build(name, tmp)
            if not exe:
                res.fail(name, "mail form", "does not build: " + why)
                continue
            mail_trial.wall = 10.0
            disturbed_retry(res, name, mail_trial, name, exe, 0, 0, volatile, 120)
            wall = mail_trial.wall
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL):
                for _ in range(kills):
                    when = rng.uniform(0.02, max(0.1, 0.9 * wall))
                    disturbed_retry(res, name, mail_trial, name, exe, sig, when, volatile, wall)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("programs", nargs="*")
    ap.add_argument("--quick", action="store_true", help="one kill per signal per program")
    ap.add_argument("--kills", type=int, default=2, help="kills per signal per program (default 2)")
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--mail", action="store_true",
                    help="the programs' mail forms (scripts/export) instead")
    ap.add_argument("--builddir", default=os.path.join(TOP, "build"),
                    help="where the programs are built (default build/)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("fault.py: SKIP: needs root", file=sys.stderr)
        return 77
    kills = 1 if a.quick else a.kills
    exes = []
    for p in a.programs or PROGRAMS:
        exe = p if "/" in p else os.path.join(a.builddir, p, p)
        if os.access(exe, os.X_OK):
            exes.append((os.path.basename(exe), os.path.abspath(exe)))
        elif a.programs:
            print(f"fault.py: no program {exe}", file=sys.stderr)
            return 128
    if not exes:
        print("fault.py: SKIP: no program built", file=sys.stderr)
        return 77
    rng = random.Random(a.seed)
    Monitor.names = set(PROGRAMS) | {n for n, _ in exes}
    Monitor.restorer = exes[0][1]
    # sysctls that change by themselves within a second are not compared
    s1 = sysctls()
    time.sleep(1)
    s2 = sysctls()
    volatile = {k for k in s1 if s1[k] != s2.get(k)}
    res = Result()
    t_start = time.monotonic()
    print(f"fault.py: {len(exes)} program(s), {kills} kill(s) per signal, seed {a.seed}; "
          f"not compared (volatile): {sorted(volatile)}", flush=True)
    if a.mail:
        mail_trials(res, exes, kills, rng, volatile)
        exes = []
    for i, (name, exe) in enumerate(exes):
        with BenchLock():
            t_prog = time.monotonic()
            default_run.last = (10.0, 128)
            disturbed_retry(res, name, default_run, name, exe, volatile)
            wall, rc = default_run.last
            other = exes[(i + 1) % len(exes)][1]
            if rc == 129:
                res.ok(name, "kills", "(skipped: the program cannot run on this machine)")
            else:
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
                    for k in range(kills):
                        early = k % 3 == 0 and rng.random() < 0.5
                        when = rng.uniform(0.02, 0.3) if early else rng.uniform(0.02, max(0.1, 0.9 * wall))
                        target = rng.choice(["pid", "group"])
                        restorer = rng.choice([exe, other])
                        disturbed_retry(res, name, kill_trial, name, exe, sig, when, target, restorer,
                                        volatile, wall)
            if rc == 129:  # it ends at once: nothing for the second run to meet
                res.ok(name, "two at once", "(skipped: the first run cannot run here; "
                       f"{name} as the second run: in the trial before)")
            else:
                disturbed_retry(res, name, two_at_once, name, exe, other, volatile)
            disturbed_retry(res, name, unprivileged, name, exe, volatile)
            print(f"  ({name}: {time.monotonic() - t_prog:.0f} s)", flush=True)
    took = time.monotonic() - t_start
    print(f"fault.py: {len(res.lines) - len(res.failures)} passed, {len(res.failures)} failed "
          f"in {took:.0f} s")
    for f in res.failures:
        print("FAILED: " + f)
    return 1 if res.failures else 0


if __name__ == "__main__":
    sys.exit(main())
