#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: every line a program prints in text mode fits an email (72 columns).

width.py PROGRAM           --help, --version, bad options (the one stderr line), the
                           lock held (ERROR) and not root (SKIP 129, as nobody).
width.py --kernel PROGRAM  real runs in text mode (needs root): the default run, and
                           --trigger, --mitigate and the threshold at both ends of its
                           range where the program has them, so PASS, FAIL and SKIP
                           paths are all printed.
Prints the widest line seen. Exit 0 pass, 1 fail, 77 skip (meson's convention).
"""
import os, re, subprocess, sys

WIDTH = 72
from checks import FAILS, finish, lock_held_elsewhere  # noqa: E402
widest = (0, "", "")


def check_text(text, what):
    global widest
    for line in text.splitlines():
        if len(line) > widest[0]:
            widest = (len(line), what, line)
        if len(line) > WIDTH:
            FAILS.append(what)
            print(f"FAIL: {what}: {len(line)} columns: {line}")


def run(argv, env=None, user=None, timeout=1000):
    if user:
        argv = ["setpriv", "--reuid", user, "--regid", user, "--clear-groups"] + argv
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def usage_paths(prog):
    name = os.path.basename(prog)
    code, help_text, _ = run([prog, "--help"])
    if code != 0 or "Exit codes" not in help_text:
        FAILS.append("--help")
    check_text(help_text, "--help")
    check_text(run([prog, "--version"])[1], "--version")
    bad = [["--no-such-option"], ["--duration", "-1"], ["--duration"], ["--threshold", "x"],
           ["--format", "xml"], ["stray"]]
    if re.search(r"--cpu\b", help_text):
        bad.append(["--cpu", "999"])
    if re.search(r"--cpus\b", help_text):
        bad.append(["--cpus", "0-"])
    if "--repeat" in help_text:
        bad.append(["--repeat", "0"])
    for args in bad:
        code, out, err = run([prog] + args)
        if code != 128:
            FAILS.append(f"{args}: exit {code}")
        check_text(out + err, f"bad option {' '.join(args)}")
    if os.geteuid() == 0:
        with lock_held_elsewhere("krepro-width-") as env:
            code, out, _ = run([prog], env=env)
            if code != 128 or not out.strip().split("\n")[-1].startswith(f"{name}: ERROR"):
                FAILS.append(f"lock held: exit {code}")
            check_text(out, "lock held (ERROR)")
        code, out, _ = run([prog], user="65534")
        if code != 129:
            FAILS.append(f"not root: exit {code}")
        check_text(out, "not root (SKIP 129)")


def real_runs(prog):
    if os.geteuid() != 0:
        print("SKIP: needs root")
        sys.exit(77)
    help_text = run([prog, "--help"])[1]
    runs = [[]]
    if "--trigger" in help_text:
        runs.append(["--trigger"])
    if "--mitigate" in help_text:
        runs.append(["--mitigate"])
    m = re.search(r"--threshold V\s.*?range\s+([-\d.e+]+)-([-\d.e+]+)\)", help_text, re.S)
    if m:
        runs += [["--threshold", m.group(1)], ["--threshold", m.group(2)]]
    for args in runs:
        code, out, err = run([prog, "--wait", "900"] + args)
        sys.stderr.write(err)
        verdict = out.strip().split("\n")[-1] if out.strip() else ""
        print(f"{' '.join(args) or 'default'}: exit {code}: {verdict}")
        print("  | " + out.rstrip("\n").replace("\n", "\n  | "))
        check_text(out, f"run {' '.join(args) or 'default'} (exit {code})")


def main():
    args = sys.argv[1:]
    if args and args[0] == "--kernel":
        real_runs(os.path.abspath(args[1]))
    else:
        usage_paths(os.path.abspath(args[0]))
    print(f"widest line: {widest[0]} columns ({widest[1]}): {widest[2]}")
    finish()
    print("all lines within", WIDTH, "columns")


if __name__ == "__main__":
    main()
