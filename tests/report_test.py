#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: scripts/report writes the directory a bug report mail needs.

report_test.py BUILDDIR            the fast path: another run holds the lock (a private
                                   KREPRO_RUNDIR), so the program ends with ERROR at once:
                                   every file, and no mail (ERROR says why) (needs root);
                                   then the mail of a recorded bisect (docs/bisect/rt_starve):
                                   its first bad commit, checks, table, config, commands.
                                   And a stand-in fibtest's recorded FAIL: the run mail
                                   (subject, recipients, the kernel, config, compiler and
                                   machine; text attachments; causes exactly the JSON's).
report_test.py --kernel BUILDDIR   real fibtest runs: the default one (a mail only if it
                                   FAILs) and --trigger (its FAIL the positive control:
                                   positive-control.txt, no mail). The report is the
                                   subject, not the host: a SKIP's directory is checked as
                                   a SKIP's, --trigger tried up to 3 times.
Exit 0 pass, 1 fail, 77 skip (meson's convention).
"""
import fcntl, json, os, re, shutil, subprocess, sys, tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from checks import FAILS, check, finish  # noqa: E402




def report(build, out, args, env=None):
    env = dict(env or os.environ, KREPRO_BUILD=build)
    return subprocess.run([os.path.join(TOP, "scripts", "report"), "--out", out, "fibtest"] + args,
                          capture_output=True, text=True, env=env, timeout=1200)


def check_dir(out, code, real, trigger=False):
    for f in ["report.txt", "report.json", "command.txt", "envinfo.txt", "fibtest.c"]:
        check(os.path.isfile(os.path.join(out, f)) and os.path.getsize(os.path.join(out, f)),
              f"{f} missing or empty")
    read = lambda f: open(os.path.join(out, f)).read() if os.path.exists(os.path.join(out, f)) else ""
    mail, rep, cmd = read("mail.txt"), read("report.txt"), read("command.txt")
    word = {0: "PASS", 1: "FAIL", 125: "SKIP", 128: "ERROR", 129: "SKIP"}[code]
    js = json.loads(read("report.json") or "{}")
    check(js.get("verdict") == word, f"report.json verdict {js.get('verdict')}, exit says {word}")
    verdict = rep.rstrip("\n").split("\n")[-1]
    check(verdict.startswith(f"fibtest: {word}"), f"report.txt verdict line: {verdict!r}")
    if js.get("verdict_detail"):  # what a short verdict line left out, above it as printed
        body = " ".join(rep.rstrip("\n").split("\n")[:-1][-4:])
        check(" ".join(js["verdict_detail"].split()) in " ".join(body.split()),
              f"report.txt lacks the verdict's detail {js['verdict_detail']!r}")
    check(f"exit code: {code} ({word})" in cmd and "command: " in cmd and "version: fibtest" in cmd,
          f"command.txt: {cmd!r}")
    check("kernel" in read("envinfo.txt"), "envinfo.txt has the kernel")
    check(read("fibtest.c").startswith("// SPDX") and "int main(" in read("fibtest.c"), "the export")
    # every run's figure (--runs, default 5): runs.json, and the table atop report.txt
    runs = json.loads(read("runs.json") or "[]")
    check(len(runs) == 5 and all(r.get("verdict") in ("PASS", "FAIL", "SKIP", "ERROR") for r in runs),
          f"runs.json: {len(runs)} runs")
    check(rep.startswith("5 runs of fibtest") and f"runs: 5: " in cmd, "report.txt: the runs on top")
    if trigger and word in ("PASS", "FAIL"):
        # a positive control, never a bug mail (issue 43: "works as designed")
        note = " ".join(read("positive-control.txt").split())
        check(not mail, f"--trigger {word}: a mail was written")
        check(("FAIL, as a positive control should" if word == "FAIL" else
               "the positive control did not FAIL") in note and note.endswith(verdict),
              f"positive-control.txt: {note!r}")
        return
    if word != "FAIL":
        check(not mail, f"a {word} run writes no mail")
        note = read("no-mail.txt")
        want = "nothing to report" if word == "PASS" else (js.get("reason") or "")[:20]
        check(note.startswith(f"fibtest: {word}: ") and want in note, f"no-mail.txt: {note!r}")
        return
    wide = [l for l in mail.split("\n") if len(l) > 72]
    check(not wide, f"mail.txt lines over 72 columns: {wide}")
    subject = " ".join(mail.split("\nTo:")[0].split())  # a header folded over lines
    check(subject.startswith(f"Subject: [BUG] sched/fair: fibtest FAILs on {os.uname().release}: "
                             "CFS bandwidth"), f"subject: {subject!r}")
    check("\nTo: linux-kernel@vger.kernel.org\n" in mail, "To: the list the program names")
    # the robot's head: where it ran, before anything else
    head = mail.split("\n\n", 2)[1] if mail.count("\n\n") >= 2 else ""
    for k in ("kernel:", "tree:", "config:", "compiler:", "test machine:", "parameters:"):
        check(re.search(r"^" + k + " +\S", mail, re.M), f"no {k!r} line in the mail's head")
    check(os.uname().release in mail and "NUMA node" in mail, "the kernel and the machine")
    check("| Reported-by: " in mail and "| Closes: " in mail, "the tags to fill")
    check(re.search(r"^  efficiency: median 0\.708, min 0\.708, max 0\.708 over 5 runs; FAIL 5/5",
                    mail, re.M), "the spread of the runs")
    att = " ".join(mail.split("Attached: ", 1)[-1].split())
    check(not any(f in att for f in ("report.json", ".png", ".csv", "command.txt")),
          f"only text attachments: {att!r}")
    check(os.path.isfile(os.path.join(out, "config.txt")) == ("config.txt" in att),
          "config.txt attached when written")
    check("\n" + js.get("verdict_line", "?") + "\n" in mail, "the verdict line is in the mail")
    shown = rep.split("\n\n", 1)[1] if rep.startswith("5 runs of") else rep  # the runs table: attached
    check(shown.rstrip("\n") in mail, "the report is in the mail, as printed")
    check(re.search(r"^  cc -O2 .*fibtest\.c", mail, re.M), "build line")
    check(re.search(r"^  sudo \./fibtest", mail, re.M), "run line")
    check(" ".join(("How it decides: " + js.get("rule", "?")).split()) in " ".join(mail.split()), "the rule")
    # the causes: exactly those of the JSON (a cause the run ruled out is not printed)
    causes = js.get("causes", js.get("known_causes")) or []
    block = mail.split("Known causes (as the program reported them):\n", 1)
    listed = re.findall(r"^  - (.*(?:\n    .*)*)", block[1].split("\n\n")[0], re.M) if len(block) > 1 else []
    check([" ".join(c.split()) for c in listed] == [" ".join(c.split()) for c in causes],
          f"the mail's causes {listed} are the JSON's {causes}")
    if real:
        check(os.path.getsize(os.path.join(out, "fibtest.csv")) > 0, "the samples")
        if shutil.which("gnuplot"):
            check(os.path.isfile(os.path.join(out, "fibtest.png")), "the picture")
    print(mail)


def standin_fail(build, tmp):
    """the mail of a default run's FAIL, whatever this host's verdict: a stand-in fibtest
    (the real one's --help and --version) that reports a recorded FAIL"""
    fake = os.path.join(tmp, "fakebuild")
    os.makedirs(os.path.join(fake, "fibtest"))
    os.symlink(os.path.join(build, "tools"), os.path.join(fake, "tools"))
    real = os.path.join(build, "fibtest", "fibtest")
    line = "fibtest: FAIL efficiency=0.708 (limit 0.900) throttled=100%"
    rep = dict(program="fibtest", version="0.1.0", verdict="FAIL", exit_code=1, reason=None, verdict_line=line, verdict_detail=None,
               metric={"name": "efficiency", "value": 0.708, "unit": ""}, threshold=0.9,
               fail_when="below", measurements={"throttled_pct": 100},
               known_causes=["a recorded cause, for the test"],
               text=["fibtest (krepro) stand-in", "  window 1: efficiency 0.708"],
               rule="FAIL when efficiency (usage / quota) <= threshold", parameters={},
               environment={"CONFIG_CFS_BANDWIDTH": "y"},
               subsystem={"prefix": "sched/fair", "file": "kernel/sched/fair.c",
                          "list": "linux-kernel@vger.kernel.org"})
    with open(os.path.join(fake, "fibtest", "report.json"), "w") as f:
        json.dump(rep, f)
    exe = os.path.join(fake, "fibtest", "fibtest")
    with open(exe, "w") as f:
        f.write('#!/bin/sh\ncase "$1" in --help|--version) exec %s "$1" ;; esac\n'
                'cat %s\nexit 1\n' % (real, os.path.join(fake, "fibtest", "report.json")))
    os.chmod(exe, 0o755)
    out = os.path.join(tmp, "standin")
    p = report(fake, out, [])
    check(p.returncode == 0, f"stand-in FAIL: exit {p.returncode}: {p.stderr[-300:]}")
    check_dir(out, 1, False)
    # --kernel-tree: the tree's base commit, and the recipients its get_maintainer.pl names
    # for the program's kernel file (a stand-in script: what it was asked is recorded)
    tree = os.path.join(tmp, "linux")
    os.makedirs(os.path.join(tree, "scripts"))
    with open(os.path.join(tree, "scripts", "get_maintainer.pl"), "w") as f:
        f.write('print "Peter Zijlstra <peterz\\@infradead.org>\\n'
                'linux-kernel\\@vger.kernel.org\\n"; open(A, ">", "asked"); print A "@ARGV";\n')
    git = ["git", "-C", tree, "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", tree], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "sched/fair: a base commit"], check=True)
    out = os.path.join(tmp, "standin-tree")
    p = subprocess.run([os.path.join(TOP, "scripts", "report"), "--out", out, "--kernel-tree", tree,
                        "fibtest"], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, KREPRO_BUILD=fake))
    mail = open(os.path.join(out, "mail.txt")).read() if p.returncode == 0 else ""
    flat = " ".join(mail.split())
    asked = open(os.path.join(tree, "asked")).read() if os.path.exists(os.path.join(tree, "asked")) else ""
    check("To: Peter Zijlstra <peterz@infradead.org> Cc: linux-kernel@vger.kernel.org" in flat
          and '("sched/fair: a base commit")' in flat and asked.endswith("-f kernel/sched/fair.c"),
          f"--kernel-tree: exit {p.returncode}, asked {asked!r}: {mail[:600]}")


def bisect_mail(tmp):
    """the mail of the recorded rt_starve bisect (docs/bisect/rt_starve): no run, no kernel"""
    out = os.path.join(tmp, "bisect-mail")
    bdir = os.path.join(TOP, "docs", "bisect", "rt_starve")
    p = subprocess.run([os.path.join(TOP, "scripts", "report"), "--out", out, "--bisect", bdir],
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"report --bisect: exit {p.returncode}: {p.stderr}")
    mail = open(os.path.join(out, "mail.txt")).read() if os.path.exists(os.path.join(out, "mail.txt")) else ""
    res = json.load(open(os.path.join(bdir, "result.json")))
    first = res["first"]["commit"][:12]
    check(not [l for l in mail.split("\n") if len(l) > 72], "bisect mail within 72 columns")
    check(mail.startswith("Subject: [krepro] rt_starve FAILs since " + first), mail.split("\n")[0])
    check("\ncommit: " + first in mail and "\ntree:   " in mail, "the commit and the tree")
    # LKP's parts: the verdict flip, Reported-by/Closes to fill, the recipients the
    # tree's own get_maintainer.pl named (the record's result.json), who measured
    cc = (res.get("maintainers") or {}).get("recipients") or []
    check('krepro noticed "rt_starve: PASS -> FAIL"' in mail and "| Reported-by: NAME <EMAIL>" in mail
          and "| Closes: URL-OF-THIS-REPORT" in mail and cc and "\nCc: " + ", ".join(cc) + "\n" in mail
          and "\nmeasured by:  krepro " + (res.get("krepro") or "") in mail,
          "LKP's headline, tags, the recipients and who measured")
    for v in open(os.path.join(bdir, "verify.txt")).read().splitlines():
        check(v[len("verify: "):].split(":")[0] in mail, f"verification line: {v}")
    cmp = json.load(open(os.path.join(bdir, "compare.json")))
    check(cmp["table"] in mail, "the compare table")
    check(re.search(r"^  CONFIG_HZ=\d+$", mail, re.M), "the config the program read")
    joined = re.sub(r" \\\n\s*", " ", mail)  # the shell's continuation lines, joined
    check("scripts/vmrun --kernel" in joined and "build-static/rt_starve/rt_starve" in joined, "the guest command")
    check(re.search(r"^  cc -O2 .*rt_starve\.c", mail, re.M) and os.path.isfile(os.path.join(out, "rt_starve.c")),
          "the mail form and its build line")
    for f in ("summary.txt", "steps.txt", "bisect.log", "start.config"):
        check(os.path.isfile(os.path.join(out, f)), f"{f} attached")
    summary = open(os.path.join(out, "summary.txt")).read()
    check(all(len(l) <= 72 for l in summary.split("\n")), "summary.txt within 72 columns:\n" + summary)
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
        for n in ("0", "x", "100"):
            bad = subprocess.run([os.path.join(TOP, "scripts", "report"), "--out", out, "--runs", n,
                                  "fibtest"], capture_output=True, text=True, timeout=60)
            check(bad.returncode == 128 and "--runs" in bad.stderr and not os.path.exists(out),
                  f"--runs {n} is refused: {bad.returncode}")
        if real:
            # the subject is the report directory, not the host's verdict: a SKIP (a loaded
            # machine: steal, inconclusive) is a report too and is checked as one; --trigger
            # is run again, up to 3 times, for the FAIL whose mail is the point
            for args in (["--duration", "0.5"], ["--trigger"]):
                for attempt in range(1, 4):
                    shutil.rmtree(out, ignore_errors=True)
                    p = report(build, out, args + ["--wait", "900"])
                    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
                    if p.returncode:
                        break
                    code = int(re.search(r"exit code: (\d+)",
                                         open(os.path.join(out, "command.txt")).read()).group(1))
                    line = open(os.path.join(out, "report.txt")).read().rstrip("\n").split("\n")[-1]
                    print(f"fibtest {' '.join(args)}: attempt {attempt}: exit {code}: {line}")
                    if code == 1 or args != ["--trigger"]:
                        break
                if p.returncode:
                    continue
                check(code in (0, 1, 125, 129), f"the run's exit code {code}")
                if args == ["--trigger"] and code != 1:
                    print(f"NOTE: fibtest --trigger did not FAIL in 3 attempts (load on this "
                          f"machine: {os.getloadavg()[0]:.2f}): the mail of a FAIL is not "
                          "checked here; the report of exit %d is" % code)
                check_dir(out, code, True, trigger="--trigger" in args)
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
            if os.path.isfile(os.path.join(TOP, "docs", "bisect", "rt_starve", "result.json")):
                bisect_mail(tmp)
            hostile_program(tmp)
            standin_fail(build, tmp)
    finish()


def hostile_program(tmp):
    """someone else's compare.json naming an executable or a path out of --out (issue 42):
    refused before anything runs or is written"""
    ran = os.path.join(tmp, "RAN")
    evil = os.path.join(tmp, "evil.sh")
    with open(evil, "w") as f:
        f.write("#!/bin/sh\ntouch %s\n" % ran)
    os.chmod(evil, 0o755)
    for prog in (evil, "../../../../elsewhere/TRAV", 42):
        cmp = {"program": prog, "metric": {"name": "m"}, "threshold": 1,
               "sides": [{"label": "a", "runs": [{"verdict": "PASS", "value": 0.5}]}]}
        path = os.path.join(tmp, "hostile.json")
        with open(path, "w") as f:
            json.dump(cmp, f)
        out = os.path.join(tmp, "hostile-out")
        p = subprocess.run([os.path.join(TOP, "scripts", "report"), "--out", out, "--compare", path],
                           capture_output=True, text=True, timeout=120)
        # the field named, one line (scripts/krinput.py's COMPARE: "program" is a name)
        check(p.returncode == 128 and "hostile.json: program: " in p.stderr and
              len(p.stderr.strip().split("\n")) == 1 and not os.path.exists(ran)
              and not os.path.exists(out) and not os.path.exists(os.path.join(tmp, "elsewhere")),
              f"program {prog!r}: exit {p.returncode}, {p.stderr.strip()[-200:]!r}")


if __name__ == "__main__":
    main()
