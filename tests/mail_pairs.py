#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: a mail form gives the same verdict as its program (CONTRACT.md section 8).

mail_pairs.py --build DIR [--pairs N] [--args "OPTS"] PROGRAM
    exports PROGRAM's mail form (with OPTS as its constants), builds it as its header says,
    and runs it and the built program in alternating pairs on this machine: the default run
    and, where the program has them, --trigger and --mitigate (the mail form takes those two
    on its command line). Every pair must give the same exit code, and the machine must be
    as before after every run. A pair where one side is inconclusive (SKIP 125) and the other
    not is run again, twice at most: noise may make either side inconclusive, never make
    them disagree on PASS and FAIL. Pairs 1, 3, ... start both sides as process-group
    leaders (as an interactive shell does), 2, 4, ... as a script does. Needs root (77
    otherwise).

mail_pairs.py --build STATIC-DIR --guest "VMRUN-OPTIONS" [--variants LIST] ... PROGRAM
    the same pairs inside a kernel under qemu: each side runs through scripts/vmrun with
    VMRUN-OPTIONS (e.g. "--kernel $(scripts/vm/debian-kernel 6.12-amd64) --mem 2048");
    the build dir must be static (meson -Dstatic=true), the mail form is built with
    -static. --variants "default,--trigger" chooses the runs (default: all three).
    Timing work: run it under the krepro lock. Exit 0 pass, 1 fail, 77 skip.
"""
import argparse, os, re, shlex, subprocess, sys, tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krstate import snapshot, diff  # noqa: E402
from checks import check, finish  # noqa: E402

# 124: scripts/vmrun's word for a guest that started the program and gave no exit code
# (a hang, a panic, a lost console): run again like a SKIP, never a match by itself
WORDS = {0: "PASS", 1: "FAIL", 124: "NO-EXIT", 125: "SKIP", 128: "ERROR", 129: "SKIP129"}


def run(argv, leader):
    # leader: a process-group leader, as an interactive shell starts a command (issue 43:
    # the irqacct form's setsid() failed there, and only there)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                       process_group=0 if leader else None)
    # the verdict line is the last of the report; a guest's console may mix in stderr
    out = [l for l in p.stdout.split("\n") if l.strip() and "undo by hand" not in l]
    last = out[-1] if out else p.stderr.strip()[-200:]
    return p.returncode, last


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--args", default="")
    ap.add_argument("--guest", help="scripts/vmrun options: run both sides in a guest")
    ap.add_argument("--variants", help="comma-separated: default,--trigger,--mitigate")
    ap.add_argument("program")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    prog, opts = a.program, shlex.split(a.args)
    built = os.path.join(os.path.abspath(a.build), prog, prog)
    helptext = subprocess.run([built, "--help"], capture_output=True, text=True).stdout
    variants = [[]] + [[v] for v in ("--trigger", "--mitigate") if "--" + v[2:] + " " in helptext]
    if a.variants:
        variants = [[] if v == "default" else v.split() for v in a.variants.split(",")]
    vm = [os.path.join(TOP, "scripts", "vmrun")] + shlex.split(a.guest) + ["--"] if a.guest else []
    ex = subprocess.run([os.path.join(TOP, "scripts", "export"), prog] + opts,
                        capture_output=True, text=True)
    if not check(ex.returncode == 0, f"scripts/export {prog}: {ex.stderr[:500]}"):
        finish()
    with tempfile.TemporaryDirectory(prefix="krepro-pairs-") as tmp:
        with open(os.path.join(tmp, prog + ".c"), "w") as f:
            f.write(ex.stdout)
        cc = re.search(r"^ \* Build: (cc .*)$", ex.stdout, re.M).group(1).split()
        if vm:
            cc.insert(1, "-static")
        b = subprocess.run(cc, cwd=tmp, capture_output=True, text=True)
        if not check(b.returncode == 0, f"{' '.join(cc)}: {b.stderr[:500]}"):
            finish()
        mail = os.path.join(tmp, prog)
        before = snapshot()
        for v in variants:
            for i in range(a.pairs):
                for attempt in range(3):
                    # alternating: built first in even pairs, the mail form first in odd ones
                    sides = [("built", vm + [built, "--wait", "600", "--quiet"] + opts + v),
                             ("mail", vm + [mail] + v)]
                    if i % 2:
                        sides.reverse()
                    got = {}
                    # pairs 1, 3, ... as a shell starts them (group leaders), 2, 4, ... as
                    # a script does
                    leader = i % 2 == 0
                    for name, argv in sides:
                        got[name] = run(argv, leader)
                        d = diff(before, snapshot())
                        check(not d, f"{prog} {name} {' '.join(v)}: the machine changed: {d}")
                    codes = {got["built"][0], got["mail"][0]}
                    print(f"{prog} {' '.join(v) or 'default'} pair {i + 1}"
                          f"{' (group leaders)' if leader else ''}: built "
                          f"{WORDS.get(got['built'][0], got['built'][0])}, mail "
                          f"{WORDS.get(got['mail'][0], got['mail'][0])}"
                          f"{' (again)' if attempt else ''}\n  built: {got['built'][1]}\n"
                          f"  mail:  {got['mail'][1]}")
                    unsure = {125, 124} if vm else {125}
                    if len(codes) == 1 and 124 not in codes or \
                            not (codes & unsure and codes <= {0, 1} | unsure):
                        break
                check(len(codes) == 1 and 124 not in codes,
                      f"{prog} {' '.join(v) or 'default'} pair {i + 1}: "
                      f"built {got['built']}, mail {got['mail']}")
    finish()


if __name__ == "__main__":
    sys.exit(main())
