#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: the installed kselftest collection under the kernel's own runner.

Takes run_kselftest.sh and kselftest/runner.sh from Debian's linux-source-6.1 tarball
(scripts/deps test installs it; without it the test skips), installs the collection with
scripts/kselftest-install into a temp dir, and runs `run_kselftest.sh -c krepro`:
- as nobody: every program must come out "ok N ... # SKIP" (exit 4, kselftest mode
  switched on by the runner's environment), none FAIL;
- as root, with short runs (KSELFTEST_<PROG>_ARGS): for every program the runner's result
  must agree with the program's own TAP line (PASS ok, FAIL not ok exit=1, SKIP ok # SKIP,
  ERROR not ok exit=128), and the machine is as found.
Prints the runner's PASS/FAIL/SKIP counts. Exit 0 pass, 1 fail, 77 skip (no runner source).

Usage: kselftest_test.py --build DIR [--no-root-run]
"""
import argparse, glob, os, re, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
from contract import quiet_snapshot  # noqa: E402
from krstate import PROGRAMS, diff  # noqa: E402

from checks import FAILS, check, finish  # noqa: E402
# short runs: the defaults of seven programs take ~35 s; --wait queues behind another run
SHORT_ARGS = {"fibtest": "", "rt_starve": "", "dio_kworker": "--duration 1",
              "hwts": "--duration 2", "ktask_bench": "--duration 3", "irqacct": "--duration 2",
              "clear_pages": "--duration 3", "throttle_lock": "--duration 1"}
RESULT = re.compile(r"^(ok|not ok) (\d+) selftests: krepro: (\S+)(.*)$")
INNER = re.compile(r"^# (ok|not ok) 1 (\S+)( # SKIP \S.*| # error: .*)?$")


def runner_source():
    tars = sorted(glob.glob("/usr/src/linux-source-6.1.tar.*")) or sorted(glob.glob("/usr/src/linux-source-*.tar.*"))
    return tars[0] if tars else None


def parse(out):
    """The runner's result per program, and each program's own TAP test line."""
    runner, inner = {}, {}
    for line in out.split("\n"):
        m = RESULT.match(line)
        if m:
            runner[m.group(3)] = (m.group(1), m.group(4).strip())
        m = INNER.match(line)
        if m:
            inner[m.group(2)] = "PASS" if m.group(1) == "ok" and not m.group(3) else \
                "SKIP" if m.group(1) == "ok" else "ERROR" if m.group(3) else "FAIL"
    return runner, inner


def counts(runner):
    c = {"pass": 0, "fail": 0, "skip": 0}
    for res, rest in runner.values():
        c["skip" if rest == "# SKIP" else "pass" if res == "ok" else "fail"] += 1
    return c


def run_collection(install, user=None, env=None):
    # the runner reopens /dev/stdout; a pipe made by root is not writable by nobody, so
    # nobody's shell makes its own pipe
    cmd = ["sh", "-c", '"$0" -c krepro 2>&1 | cat', os.path.join(install, "run_kselftest.sh")]
    if user:
        cmd = ["setpriv", "--reuid", user, "--regid", user, "--clear-groups"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, cwd="/", env=env, timeout=900)
    return p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--no-root-run", action="store_true", help="only the unprivileged run")
    a = ap.parse_args()
    src = runner_source()
    if not src:
        print("SKIP: no /usr/src/linux-source-*.tar.* (scripts/deps test installs linux-source-6.1)")
        sys.exit(77)
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        print("SKIP: no setpriv to run as nobody")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="krepro-kselftest-")
    try:
        os.chmod(tmp, 0o755)
        install = os.path.join(tmp, "install")
        # another collection's line must survive the install
        os.makedirs(install)
        with open(os.path.join(install, "kselftest-list.txt"), "w") as f:
            f.write("timers:nanosleep\nkrepro:stale\n")
        p = subprocess.run([os.path.join(TOP, "scripts", "kselftest-install"), "--build", a.build,
                            "--kernel-src", src, install], capture_output=True, text=True)
        print(p.stdout + p.stderr, end="")
        if not check(p.returncode == 0, f"kselftest-install exit {p.returncode}"):
            return
        layout(install)
        if os.geteuid() != 0:
            out = run_collection(install)
        else:
            out = run_collection(install, user="65534")
        print("--- the runner as " + ("nobody" if os.geteuid() == 0 else "this user"))
        print(out, end="")
        runner, inner = parse(out)
        c = counts(runner)
        print(f"runner counts (unprivileged): pass {c['pass']} fail {c['fail']} skip {c['skip']}")
        check(sorted(runner) == sorted(PROGRAMS), f"runner results for {sorted(runner)}")
        for name in PROGRAMS:
            check(runner.get(name, ("", ""))[1] == "# SKIP", f"unprivileged {name}: {runner.get(name)}")
            check(inner.get(name) == "SKIP", f"unprivileged {name}: own verdict {inner.get(name)}")
        if os.geteuid() == 0 and not a.no_root_run:
            root_run(install)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def layout(install):
    coll = os.path.join(install, "krepro")
    for name in PROGRAMS:
        check(os.access(os.path.join(coll, name), os.X_OK), f"{name} installed")
    with open(os.path.join(install, "kselftest-list.txt")) as f:
        lst = f.read().split()
    check(lst == ["timers:nanosleep"] + [f"krepro:{n}" for n in PROGRAMS], f"kselftest-list.txt: {lst}")
    with open(os.path.join(coll, "settings")) as f:
        m = re.fullmatch(r"timeout=(\d+)\n", f.read())
    caps = []
    for name in PROGRAMS:
        h = subprocess.run([os.path.join(coll, name), "--help"], capture_output=True, text=True).stdout
        caps.append(float(re.search(r"capped at\s+([0-9.]+) s", h).group(1)))
    # the supervisor kills at cap + 5 s and then restores: the runner must wait longer
    check(m and int(m.group(1)) > max(caps) + 5, f"settings timeout {m and m.group(1)} vs caps {caps}")
    with open(os.path.join(coll, "config")) as f:
        cfg = f.read()
    for opt in ["CONFIG_CFS_BANDWIDTH=y", "CONFIG_VETH=y", "CONFIG_RPS=y", "CONFIG_NET_NS=y"]:
        check(opt in cfg.split("\n"), f"config fragment lacks {opt}")
    check(all(re.fullmatch(r"(#.*|CONFIG_\w+=[ym0-9]+|)", l) for l in cfg.split("\n")),
          "config fragment: only comments and CONFIG_X=y lines")
    lst = subprocess.run([os.path.join(install, "run_kselftest.sh"), "-l"], capture_output=True,
                         text=True).stdout.split()
    check([l for l in lst if l.startswith("krepro:")] == [f"krepro:{n}" for n in PROGRAMS],
          f"run_kselftest.sh -l: {lst}")


def root_run(install):
    env = dict(os.environ)
    for name, args in SHORT_ARGS.items():
        env[f"KSELFTEST_{name.upper()}_ARGS"] = ("--wait 30 " + args).strip()
    before = quiet_snapshot()
    out = run_collection(install, env=env)
    print("--- the runner as root")
    print(out, end="")
    runner, inner = parse(out)
    want = {"PASS": ("ok", ""), "FAIL": ("not ok", "# exit=1"), "SKIP": ("ok", "# SKIP"),
            "ERROR": ("not ok", "# exit=128")}
    for name in PROGRAMS:
        v = inner.get(name)
        check(v is not None, f"root {name}: no TAP test line of its own")
        check(runner.get(name) == want.get(v), f"root {name}: runner {runner.get(name)} for {v}")
    c = counts(runner)
    print(f"runner counts (root): pass {c['pass']} fail {c['fail']} skip {c['skip']}"
          f" ({', '.join(f'{n} {inner.get(n)}' for n in PROGRAMS)})")
    changed = diff(before, quiet_snapshot())
    check(not changed, f"the machine changed: {changed}")


if __name__ == "__main__":
    main()
    finish()
