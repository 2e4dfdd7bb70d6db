#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: checks one built program against ../shared/CONTRACT.md.

contract.py PROGRAM           the command line and the paths that need no measurement:
                              --help/--version, bad values -> 128 with one line on stderr and
                              nothing changed, JSON and TAP on the SKIP (not root) and ERROR
                              (lock held) paths, and kselftest mode on them (--kselftest
                              or the runner's kselftest_timeout: SKIP exits 4, TAP).
contract.py --kernel PROGRAM  a real default run in TAP: exit code and verdict agree,
                              the report is valid, and the machine is as before (needs root).
Exit 0 pass, 1 fail, 77 skip (meson's convention).
"""
import fcntl, json, os, re, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from krstate import snapshot, diff  # noqa: E402

from checks import FAILS, check, finish, lock_held_elsewhere  # noqa: E402


# the programs whose measurement needs kernel threads (ksoftirqd/N, kworkers, napi threads),
# and with which options: where they are not visible, in a PID namespace of their own (a
# container's), these end in SKIP 129 before anything changes; the others run there
KTHREADS = {"rt_starve": [[], ["--mitigate"]], "irqacct": [[]], "dio_kworker": [["--mitigate"]]}
PIDNS = ["unshare", "--pid", "--fork", "--mount-proc"]


def run(argv, env=None, timeout=120, user=None, affinity=None):
    if user:
        argv = ["setpriv", "--reuid", user, "--regid", user, "--clear-groups"] + argv
    pre = (lambda: os.sched_setaffinity(0, affinity)) if affinity else None
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout,
                       preexec_fn=pre)
    return p.returncode, p.stdout, p.stderr


def catches_sigint(pid):
    """Whether the process has a SIGINT handler (SigCgt in /proc/PID/status)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGINT - 1) & 1)
    except OSError:
        pass
    return False


def quiet_snapshot(timeout=180):
    """A snapshot while no krepro run is active: holding the single-run lock, so another
    run's cgroups and journal (a parallel test, a lab check) are not mistaken for ours."""
    os.makedirs("/run/krepro", exist_ok=True)
    with open("/run/krepro/lock", "a+") as lock:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        try:
            return snapshot()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def validate_json(out, code, what, ksft=False):
    try:
        d = json.loads(out)
    except ValueError as e:
        return check(False, f"{what}: invalid JSON ({e}): {out[:200]!r}")
    for k in ["program", "version", "verdict", "exit_code", "metric", "threshold", "rule",
              "reason", "parameters", "environment", "measurements"]:
        check(k in d, f"{what}: JSON lacks '{k}'")
    check(d.get("exit_code") == code, f"{what}: JSON exit_code {d.get('exit_code')} != {code}")
    # whom a FAIL concerns, for scripts/report's mail (issue 43)
    sub = d.get("subsystem") or {}
    check(all(isinstance(sub.get(k), str) and sub[k] for k in ("prefix", "file", "list")),
          f"{what}: JSON subsystem {sub!r}: prefix, file and list")
    want = ({0: "PASS", 1: "FAIL", 4: "SKIP", 128: "ERROR"} if ksft else
            {0: "PASS", 1: "FAIL", 125: "SKIP", 129: "SKIP", 128: "ERROR"}).get(code)
    check(d.get("verdict") == want, f"{what}: verdict {d.get('verdict')} for exit {code}")
    if want in ("SKIP", "ERROR"):
        check(bool(d.get("reason")), f"{what}: {want} without a reason")
    # the metric that decides is the verdict line's: on the PASS side of its limit in a
    # PASS, on the FAIL side in a FAIL (fibtest read "PASS throttled=100% (limit 20%)")
    m, t = (d.get("metric") or {}).get("value"), d.get("threshold")
    if want in ("PASS", "FAIL") and isinstance(m, (int, float)) and isinstance(t, (int, float)):
        below = d.get("fail_when") == "below"
        fail_side = m <= t if below else m >= t
        pass_side = m >= t if below else m <= t
        check(pass_side if want == "PASS" else fail_side,
              f"{what}: {want} with {d['metric'].get('name')}={m} on the wrong side of its "
              f"limit {t} (FAIL {d.get('fail_when')})")
    return d


def validate_tap(out, code, name, what, ksft=False, nested=False):
    """TAP as kselftest.h prints it; ksft: kselftest mode (SKIP is exit 4, a
    "# Totals:" line after the test line); nested: KSFT_TAP_LEVEL set, no version line."""
    lines = out.rstrip("\n").split("\n")
    head = ["1..1"] if nested else ["TAP version 13", "1..1"]
    check(lines[:len(head)] == head, f"{what}: TAP header {lines[:2]}")
    tests = [l for l in lines[len(head):] if not l.startswith("#")]
    check(len(tests) == 1, f"{what}: {len(tests)} TAP test lines: {tests}")
    if ksft:
        check(bool(tests) and lines[-2] == tests[0], f"{what}: the test line is not second to last")
        verdict = {0: "pass", 1: "fail", 4: "skip", 128: "error"}.get(code, "?")
        counts = {k: int(k == verdict) for k in ["pass", "fail", "skip", "error"]}
        want = "# Totals: pass:{pass} fail:{fail} xfail:0 xpass:0 skip:{skip} error:{error}".format(**counts)
        check(lines[-1] == want, f"{what}: last line {lines[-1]!r}, expected {want!r}")
    if tests:
        t = tests[0]
        if code == 0:
            check(t == f"ok 1 {name}", f"{what}: {t!r}")
        elif code in ((4,) if ksft else (125, 129)):
            check(re.match(rf"ok 1 {name} # SKIP \S", t) is not None, f"{what}: {t!r}")
        else:
            check(t.startswith(f"not ok 1 {name}"), f"{what}: {t!r}")


def contract(prog):
    name = os.path.basename(prog)
    code, out, err = run([prog, "--help"])
    check(code == 0 and "Exit codes" in out and "Example" in out, "--help exits 0 with exit codes and an example")
    code, out, err = run([prog, "--version"])
    check(code == 0 and name in out, "--version")
    bad = [["--no-such-option"], ["--duration", "-1"], ["--duration", "abc"], ["--duration", "5x"],
           ["--threshold", "nan"], ["--format", "xml"], ["--csv"], ["stray-argument"],
           # getopt_long's abbreviations are typos here, not other options (issue 42 row 18)
           ["--dur", "1"], ["--thresh", "0.5"], ["--form=json"]]
    if "--cpu N" in out or re.search(r"--cpu\b", run([prog, "--help"])[1]):
        bad += [["--cpu", "999"], ["--cpu", "-1"], ["--cpu", "0x"]]
    if re.search(r"--cpus\b", run([prog, "--help"])[1]):
        bad += [["--cpus", "999"], ["--cpus", "0-"], ["--cpus", ""]]
    if "--repeat" in run([prog, "--help"])[1]:
        bad += [["--repeat", "0"], ["--repeat", "-2"]]
    # a program's own combinations, refused before the lock (issue 42 rows 18-19)
    bad += {"fibtest": [["--fast", "0", "--threads", "0"], ["--threads", "0", "--trigger"]],
            "hwts": [["--listen"], ["--iface", "lo"]]}.get(name, [])
    # quiet snapshots: a krepro run elsewhere (a lab check, another suite) must not show
    # its changes in progress as ours; after it ends it has restored them
    before = quiet_snapshot()
    for args in bad:
        code, out, err = run([prog] + args)
        check(code == 128, f"{args}: exit {code}, expected 128")
        check(out == "", f"{args}: printed a report: {out[:100]!r}")
        lines = err.strip().split("\n")
        check(len(lines) == 1 and lines[0].startswith(name + ":"), f"{args}: not one line on stderr: {err!r}")
    # --csv FILE is checked before anything changes and never replaces or follows what is
    # there (issue 42 rows 14-15: checked after the run; a user's link followed as root)
    with tempfile.TemporaryDirectory(prefix="krepro-contract-csv-") as d:
        old, link, target = os.path.join(d, "old.csv"), os.path.join(d, "link.csv"), os.path.join(d, "t")
        with open(old, "w") as f:
            f.write("a draft\n")
        os.symlink(target, link)
        for path, what in ((old, "exists"), (link, "exists"), (os.path.join(d, "no", "x.csv"), "No such")):
            code, out, err = run([prog, "--csv", path])
            check(code == 128 and out == "" and err.count("\n") == 1 and what in err,
                  f"--csv {os.path.basename(path)}: exit {code}, {err!r}")
        check(open(old).read() == "a draft\n" and not os.path.lexists(target),
              "--csv: a file that exists, or a link's target, was written")
        if os.geteuid() == 0:  # refused after the CSV was made: it is removed again
            with lock_held_elsewhere("krepro-contract-") as env:
                code, out, err = run([prog, "--csv", os.path.join(d, "new.csv")], env=env)
            check(code == 128 and not os.path.lexists(os.path.join(d, "new.csv")),
                  f"--csv beside a held lock: exit {code}, the empty CSV left: "
                  f"{os.path.lexists(os.path.join(d, 'new.csv'))}")
    # --cpu of an online CPU outside the process affinity (a cpuset, taskset): as bad
    cpus = sorted(os.sched_getaffinity(0))
    if re.search(r"--cpu\b", run([prog, "--help"])[1]) and len(cpus) >= 2:
        code, out, err = run([prog, "--cpu", str(cpus[-1])], affinity={cpus[0]})
        check(code == 128 and out == "" and err.count("\n") == 1 and "affinity" in err,
              f"--cpu {cpus[-1]} outside the affinity {{{cpus[0]}}}: exit {code}, {err!r}")
    changed = diff(before, quiet_snapshot())
    check(not changed, f"bad usage changed the machine: {changed}")

    # the ERROR path: another run holds the lock
    with lock_held_elsewhere("krepro-contract-") as env:
        if os.geteuid() == 0:
            for fmt in ["json", "tap", "text"]:
                code, out, err = run([prog, "--format", fmt], env=env)
                check(code == 128, f"lock held: exit {code}")
                if fmt == "json":
                    d = validate_json(out, code, "lock held")
                    check("4242" in (d or {}).get("reason", ""), "lock held: the reason names the holder pid")
                elif fmt == "tap":
                    validate_tap(out, code, name, "lock held")
                else:
                    check(out.strip().split("\n")[-1].startswith(f"{name}: ERROR "), f"lock held: {out!r}")
            # SIGINT while it waits for the lock, started as a script's background job is
            # (SIGINT ignored): it stops with ERROR at once, having changed nothing
            p = subprocess.Popen([prog, "--wait", "30"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True,
                                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
            # signalled once it catches SIGINT (it does so just before waiting for the lock),
            # not after a fixed sleep: a SIGINT before that is ignored, however slow the start
            t0 = time.monotonic()
            while p.poll() is None and not catches_sigint(p.pid) and time.monotonic() < t0 + 25:
                time.sleep(0.01)
            t1 = time.monotonic()
            p.send_signal(signal.SIGINT)
            try:
                out, err = p.communicate(timeout=10)
                print(f"SIGINT during --wait: caught after {t1 - t0:.3f} s, "
                      f"ended {time.monotonic() - t1:.3f} s after it")
                check(p.returncode == 128 and "interrupted by SIGINT while waiting" in out,
                      f"SIGINT during --wait: exit {p.returncode}, {out[-200:]!r}")
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                check(False, "SIGINT during --wait: still waiting 10 s later")
            pid_namespace(prog, name, env)
            # kselftest mode keeps 128 for ERROR (kselftest: any exit but 0 and 4 fails)
            code, out, err = run([prog, "--kselftest"], env=env)
            check(code == 128, f"lock held, --kselftest: exit {code}")
            validate_tap(out, code, name, "lock held, --kselftest", ksft=True)
    # the SKIP 129 path: not root (only when we can drop privileges)
    if os.geteuid() == 0:
        for fmt in ["json", "tap"]:
            code, out, err = run([prog, "--format", fmt], user="65534")
            check(code == 129, f"not root: exit {code}, expected 129: {err}")
            if fmt == "json":
                validate_json(out, code, "not root")
            else:
                validate_tap(out, code, name, "not root")
        # kselftest mode: asked for, or set by kselftest/runner.sh's kselftest_timeout
        ksft_env = dict(os.environ, kselftest_timeout="45")
        for args, env, nested in [(["--kselftest"], None, False), ([], ksft_env, False),
                                  (["--quiet"], dict(ksft_env, KSFT_TAP_LEVEL="1"), True)]:
            what = f"not root, kselftest {args or 'runner env'}{' nested' if nested else ''}"
            code, out, err = run([prog] + args, env=env, user="65534")
            check(code == 4, f"{what}: exit {code}, expected 4: {err}")
            validate_tap(out, code, name, what, ksft=True, nested=nested)
        code, out, err = run([prog, "--format", "json"], env=ksft_env, user="65534")
        check(code == 4, f"not root, kselftest json: exit {code}, expected 4")
        validate_json(out, code, "not root, kselftest json", ksft=True)
        code, out, err = run([prog, "--format", "text"], env=ksft_env, user="65534")
        check(code == 4 and out.strip().split("\n")[-1].startswith(f"{name}: SKIP "),
              f"not root, kselftest text: exit {code}: {out[-200:]!r}")
        # --restore-only as a user: a machine-side SKIP, not "another run holds the lock"
        # (issue 42: "(pid 0) holds the lock", 128)
        code, out, err = run([prog, "--restore-only"], user="65534")
        check(code == 129 and "needs root" in out + err and "another krepro run" not in out + err,
              f"not root, --restore-only: exit {code}: {(out + err)[-200:]!r}")
        changed = diff(before, quiet_snapshot())
        check(not changed, f"the not-root run changed the machine: {changed}")


def pid_namespace(prog, name, env):
    """In a PID namespace of its own, with the lock held elsewhere: a program that needs
    kernel threads says SKIP 129 before the lock (so before any change), naming the
    namespace; the others go on to the lock (ERROR 128, lock held)."""
    if subprocess.run(PIDNS + ["true"], capture_output=True).returncode != 0:
        print("PID namespace: unshare --pid refused here, not checked")
        return
    mitigate = "--mitigate" in run([prog, "--help"])[1]
    for args in [[]] + ([["--mitigate"]] if mitigate else []):
        need = args in KTHREADS.get(name, [])
        for fmt in ["text", "json"]:
            code, out, err = run(PIDNS + [prog, "--format", fmt] + args, env=env)
            what = f"in a PID namespace {' '.join(args)}".rstrip() + f", {fmt}"
            last = out.strip().split("\n")[-1] if out.strip() else ""
            print(f"{what}: exit {code}: {last[:100]}")
            if not need:
                check(code == 128, f"{what}: exit {code}, expected 128 (lock held): {last!r}")
                continue
            if not check(code == 129, f"{what}: exit {code}, expected 129: {last!r} {err!r}"):
                continue
            if fmt == "json":
                d = validate_json(out, code, what) or {}
                check("PID namespace" in (d.get("reason") or ""), f"{what}: reason {d.get('reason')!r}")
            else:
                check(last == f"{name}: SKIP kernel threads not visible: a PID namespace of its "
                      "own" and "run it in the host's PID namespace" in out, f"{what}: {out!r}")


def kernel(prog):
    """a real default run in TAP (a real run's JSON: the lab check's reports, checked in
    tests/labcheck_repeat.py; one run fewer per program)"""
    if os.geteuid() != 0:
        print("SKIP: needs root")
        sys.exit(77)
    name = os.path.basename(prog)
    before = quiet_snapshot()
    code, out, err = run([prog, "--format", "tap", "--wait", "120"], timeout=240)
    sys.stderr.write(err)
    check(code in (0, 1, 125, 129), f"default run: exit {code}")
    validate_tap(out, code, name, "default run")
    print(out.rstrip("\n").split("\n")[-1])
    changed = diff(before, quiet_snapshot())
    check(not changed, f"the machine changed: {changed}")


def main():
    args = sys.argv[1:]
    if args and args[0] == "--kernel":
        kernel(os.path.abspath(args[1]))
    else:
        contract(os.path.abspath(args[0]))
    finish()


if __name__ == "__main__":
    main()
