#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: scripts/report writes the directory a bug report mail needs.

report_test.py BUILDDIR            the fast path: another run holds the lock (a private
                                   KREPRO_RUNDIR), so the program ends with ERROR at once;
                                   checks every file and the mail body (needs root).
report_test.py --kernel BUILDDIR   a real fibtest run: the same, plus the samples and picture.
Exit 0 pass, 1 fail, 77 skip (meson's convention).
"""
import fcntl, os, re, shutil, subprocess, sys, tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from checks import FAILS, check, finish  # noqa: E402




def report(build, out, args, env=None):
    env = dict(env or os.environ, KREPRO_BUILD=build)
    return subprocess.run([os.path.join(TOP, "scripts", "report"), "--out", out, "fibtest"] + args,
                          capture_output=True, text=True, env=env, timeout=1200)


def check_dir(out, code, real):
    for f in ["mail.txt", "report.txt", "command.txt", "envinfo.txt", "fibtest.c"]:
        check(os.path.isfile(os.path.join(out, f)) and os.path.getsize(os.path.join(out, f)),
              f"{f} missing or empty")
    read = lambda f: open(os.path.join(out, f)).read() if os.path.exists(os.path.join(out, f)) else ""
    mail, rep, cmd = read("mail.txt"), read("report.txt"), read("command.txt")
    word = {0: "PASS", 1: "FAIL", 125: "SKIP", 128: "ERROR", 129: "SKIP"}[code]
    wide = [l for l in mail.split("\n") if len(l) > 72]
    check(not wide, f"mail.txt lines over 72 columns: {wide}")
    check(mail.startswith(f"Subject: fibtest {word} on {os.uname().release}: CFS bandwidth"),
          f"subject: {mail.split(chr(10))[0]!r}")
    verdict = rep.rstrip("\n").split("\n")[-1]
    check(verdict.startswith(f"fibtest: {word}"), f"report.txt verdict line: {verdict!r}")
    check("\n" + verdict + "\n" in mail, "the verdict line is in the mail")
    check(rep.rstrip("\n") in mail, "the report is in the mail, as printed")
    check(re.search(r"^  cc -O2 -pthread fibtest\.c -o fibtest -lm$", mail, re.M), "build line")
    check(re.search(r"^  sudo \./fibtest", mail, re.M), "run line")
    check("How it decides: FAIL when efficiency" in mail, "the rule")
    check(f"exit code: {code} ({word})" in cmd and "command: " in cmd and "version: fibtest" in cmd,
          f"command.txt: {cmd!r}")
    check("kernel" in read("envinfo.txt"), "envinfo.txt has the kernel")
    check(read("fibtest.c").startswith("// SPDX") and "int main(" in read("fibtest.c"), "the export")
    if word == "FAIL":
        # --trigger on a kernel with de53fd7aedb1: the slice it set, not the commit
        fixed = tuple(map(int, re.match(r"(\d+)\.(\d+)", os.uname().release).groups())) >= (5, 4)
        check("Known causes:" in mail and "sched_cfs_bandwidth_slice_us" in mail and
              ("512ac999d275" not in mail.split("Known causes:")[1]) == fixed,
              "known causes on FAIL: the slice it set; 512ac999d275 only without the fix")
    if real:
        check(os.path.getsize(os.path.join(out, "fibtest.csv")) > 0, "the samples")
        if shutil.which("gnuplot"):
            check(os.path.isfile(os.path.join(out, "fibtest.png")), "the picture")
    print(mail)


def main():
    args = sys.argv[1:]
    real = args[:1] == ["--kernel"]
    build = os.path.abspath(args[-1])
    if os.geteuid() != 0:
        print("SKIP: needs root")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="krepro-report-") as tmp:
        out = os.path.join(tmp, "out")
        bad = report(build, out, ["--format", "json"])
        check(bad.returncode == 128 and not os.path.exists(out), "--format json is refused")
        if real:
            p = report(build, out, ["--duration", "0.5", "--wait", "900"])
            check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
            code = int(re.search(r"exit code: (\d+)", open(os.path.join(out, "command.txt")).read()).group(1))
            check(code in (0, 1), f"the run's exit code {code}")
            check_dir(out, code, True)
        else:
            rundir = os.path.join(tmp, "run")
            os.makedirs(rundir)
            with open(os.path.join(rundir, "lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                lock.write("4242\n")
                lock.flush()
                p = report(build, out, ["--wait", "0"], dict(os.environ, KREPRO_RUNDIR=rundir))
            check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
            check_dir(out, 128, False)
    finish()


if __name__ == "__main__":
    main()
