#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: scripts/compare and scripts/krcompare.py without a kernel: the statistics
and LKP's separation rule against hand-computed values, and whole compares on this machine
(--host) of a stand-in program (tests/compare_standin.py) whose values are given, then
scripts/report --compare on their results: a FAIL gives a mail, PASS on both sides none.
Exit 0 pass, 1 fail."""
import json, os, subprocess, sys, tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
import krcompare  # noqa: E402
from checks import check, finish  # noqa: E402

STANDIN = os.path.join(TOP, "tests", "compare_standin.py")


def runs(verdict, values):
    return [{"verdict": verdict, "value": v, "metric": "delay", "exit_code": 1 if verdict == "FAIL" else 0}
            for v in values]


def unit():
    s = krcompare.stats(runs("FAIL", [1.0, 2.0, 3.0]))
    check(s["mean"] == 2.0 and abs(s["stddev"] - 1.0) < 1e-12 and s["stddev_pct"] == 50.0,
          f"stats of 1, 2, 3: {s}")
    check(s["counts"] == {"FAIL": 3} and s["n"] == 3 and (s["min"], s["max"]) == (1.0, 3.0), f"counts {s}")
    skip = krcompare.stats(runs("FAIL", [1.0, 2.0]) + runs("SKIP", [100.0]))
    check(skip["n"] == 2 and skip["mean"] == 1.5 and skip["counts"] == {"FAIL": 2, "SKIP": 1},
          f"a SKIP's value is not in the statistics: {skip}")
    a, b = krcompare.stats(runs("FAIL", [10, 11, 12])), krcompare.stats(runs("PASS", [1, 2, 3]))
    check(krcompare.separate(a, b) and krcompare.separate(b, a), "3 and 3 runs, apart: separate")
    c = krcompare.stats(runs("PASS", [1, 2, 10]))
    check(not krcompare.separate(a, c), "ranges touching at 10: not separate")
    d = krcompare.stats(runs("PASS", [1, 2]))
    check(not krcompare.separate(a, d), "2 runs a side: not separate, however apart")
    check(abs(krcompare.change_pct(a, b) - (-81.818181)) < 1e-3, "%change (2 - 11) / 11")
    check(krcompare.json_args(["--quiet", "--format", "text", "--csv", "x.csv", "--repeat", "3", "--format=tap"])
          == ["--repeat", "3", "--format", "json"], "json_args takes out the output options")
    check(krcompare.fmt(244.13) == "244" and krcompare.fmt(0.3951) == "0.395" and krcompare.fmt(12.34) == "12.3",
          "three significant digits")
    cmp = krcompare.compare([{"label": "6.1.0-56-amd64-with-a-long-name", "runs": runs("FAIL", [212, 244, 493])},
                             {"label": "6.12", "runs": runs("PASS", [0.22, 0.4, 0.61])}])
    t = krcompare.table(cmp)
    check(all(len(l) <= 72 for l in t.split("\n")), "table within 72 columns:\n" + t)
    check("FAIL 3/3" in t and "PASS 3/3" in t and "-99.9%" in t and "separate: the ranges do not overlap" in t,
          "the table's counts, %change and separation:\n" + t)
    check(krcompare.pct_text(125956.2) == "+125956%" and krcompare.pct_text(-99.94) == "-99.9%"
          and krcompare.pct_text(None) == "n/a", "%change: tenths below 1000 % only")
    # two long titles that differ only at their end stay apart (the column is 16 wide)
    two = krcompare.compare([{"label": "commit:rt-culprit~1", "runs": runs("PASS", [0.4, 0.3, 0.5])},
                             {"label": "commit:rt-culprit", "runs": runs("FAIL", [230, 240, 235])}])
    titles = krcompare.table(two).split("\n")[0].split()
    check(len(set(titles)) == 2 and all(len(t) <= 27 for t in titles) and len(titles[0]) <= 16,
          f"two titles kept apart: {titles}")
    hdr = krcompare.header(two).split("\n")
    ta, tb = (next(l for l in hdr if l.startswith(t + ":")).split()[1] for t in "ab")
    check(ta != tb, "the header's titles differ:\n" + "\n".join(hdr))
    # a long program.metric and small values: every column stays in its place
    lat = lambda vals: [{"verdict": "FAIL", "value": v, "metric": "ratio", "exit_code": 1,
                         "measurements": {"test_lat_mean_us": v * 1e5}} for v in vals]
    cmp = krcompare.compare([{"label": "default", "runs": lat([0.00129, 0.00219, 0.00269])},
                             {"label": "--mitigate", "runs": lat([1.11, 1.2, 1.32])}])
    cmp["program"] = "dio_kworker"
    t = krcompare.table(cmp).split("\n")
    check(all(len(l) <= 72 for l in t), "within 72 columns:\n" + "\n".join(t))
    rng = next(l for l in t if l.endswith("min .. max"))
    check(rng[:17] == "0.00129..0.00269 ", "a wide min .. max keeps its column: %r" % rng)
    check(any(l.endswith("  test_lat_mean_us") for l in t),
          "a name too long with its program is shown bare, not cut:\n" + "\n".join(t))


def compare(tmp, name, values, argv):
    vals = os.path.join(tmp, name + ".values")
    with open(vals, "w") as f:
        f.write("\n".join(values) + "\n")
    log = os.path.join(tmp, name + ".log")
    js = os.path.join(tmp, name + ".json")
    env = dict(os.environ, STANDIN_VALUES=vals, STANDIN_LOG=log)
    p = subprocess.run([os.path.join(TOP, "scripts", "compare"), "--json", js] + argv + ["--", STANDIN],
                       capture_output=True, text=True, env=env, timeout=120)
    order = open(log).read().split("\n") if os.path.exists(log) else []
    return p, (json.load(open(js)) if os.path.exists(js) else None), order


def report(tmp, name, js):
    out = os.path.join(tmp, name + "-report")
    p = subprocess.run([os.path.join(TOP, "scripts", "report"), "--out", out, "--compare", js],
                       capture_output=True, text=True, timeout=120)
    mail = os.path.join(out, "mail.txt")
    return p, (open(mail).read() if os.path.exists(mail) else None), out


def whole(tmp):
    vals = ["- 0.31", "- 0.42", "- 0.25", "- 0.39", "--trigger 212", "--trigger 493", "--trigger 244",
            "--trigger 301"]
    p, cmp, order = compare(tmp, "apart", vals, ["--host", "-n", "4", "--b-args", "--trigger"])
    check(p.returncode == 0 and cmp, f"compare --host: exit {p.returncode}: {p.stderr}")
    if not cmp:
        return
    check(order[:4] == ["- 0.31", "--trigger 212", "- 0.42", "--trigger 493"], f"runs alternate a, b: {order}")
    a, b = cmp["sides"]
    check(a["stats"]["counts"] == {"PASS": 4} and b["stats"]["counts"] == {"FAIL": 4}, "counts")
    check(abs(a["stats"]["mean"] - 0.3425) < 1e-9 and abs(b["stats"]["mean"] - 312.5) < 1e-9, "means")
    check(cmp["separate"] is True, "separate")
    check(all(len(l) <= 72 for l in p.stdout.split("\n")), "stdout within 72 columns:\n" + p.stdout)
    check("PASS 4/4 -> FAIL 4/4" in p.stdout and "standin.delay (ms)" in p.stdout, "table:\n" + p.stdout)
    check("-29.3%" in p.stdout and "standin.efficiency" in p.stdout and "standin.probes" not in p.stdout,
          "a measurement that changed has its row, one that did not has none:\n" + p.stdout)
    check(cmp["argv"] == ["--host", "-n", "4", "--b-args", "--trigger", "--", STANDIN], f"argv {cmp['argv']}")
    r, mail, _ = report(tmp, "apart", os.path.join(tmp, "apart.json"))
    check(r.returncode == 0 and mail, f"report --compare with a FAIL side writes a mail: {r.stderr}")
    if mail:
        check(all(len(l) <= 72 for l in mail.split("\n")), "mail within 72 columns:\n" + mail)
        check(mail.startswith("Subject: [krepro] standin: PASS 4/4 on default -> FAIL 4/4 on --trigger"),
              "subject: " + mail.split("\n")[0])
        check(cmp["table"] in mail, "the table is in the mail")
        check("4cd13c21b207" in mail and "CONFIG_HZ=250" in mail, "causes and config from the JSON")
        check("scripts/compare --host -n 4 --b-args --trigger" in mail, "the command to run it again")

    overlap = ["- 10", "- 25", "- 12", "--trigger 22", "--trigger 30", "--trigger 24"]
    p, cmp, _ = compare(tmp, "overlap", overlap, ["--host", "-n", "3", "--b-args", "--trigger"])
    check(p.returncode == 0 and cmp and cmp["separate"] is False and "not separate: the ranges overlap" in p.stdout,
          "overlapping ranges: not separate\n" + p.stdout)

    clean = ["- 1", "- 2", "- 3", "--mitigate 1", "--mitigate 1.5", "--mitigate 2"]
    p, cmp, _ = compare(tmp, "clean", clean, ["--host", "-n", "3", "--b-args", "--mitigate"])
    r, mail, out = report(tmp, "clean", os.path.join(tmp, "clean.json"))
    check(r.returncode == 0 and mail is None and "PASS: nothing to report" in r.stdout and
          os.path.exists(os.path.join(out, "no-mail.txt")), f"PASS on both sides: no mail: {r.stdout}")

    for bad, why in ((["--host", "-n", "2"], "-n 2"), (["--host", "--a", "amd64"], "--host and --a"),
                     (["--a", "amd64"], "--a without --b")):
        p, _, _ = compare(tmp, "bad", ["- 1"], bad)
        check(p.returncode == 128, f"{why}: exit {p.returncode}, want 128")


def main():
    unit()
    with tempfile.TemporaryDirectory(prefix="krepro-compare-") as tmp:
        whole(tmp)
    finish()


if __name__ == "__main__":
    main()
