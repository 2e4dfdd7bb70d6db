#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: scripts/compare and scripts/krcompare.py without a kernel: the statistics
and LKP's separation rule against hand-computed values, and whole compares on this machine
(--host) of a stand-in program (tests/compare_standin.py) whose values are given, then
scripts/report --compare on their results: a FAIL gives a mail, PASS on both sides none.
Exit 0 pass, 1 fail."""
import json, os, random, subprocess, sys, tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
import krcompare  # noqa: E402
from checks import check, finish  # noqa: E402

STANDIN = os.path.join(TOP, "tests", "compare_standin.py")


def flat(text):
    """TEXT with its line breaks and indents as single spaces: a wrapped line's words"""
    return " ".join(text.split())


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
    # LKP's summary: nothing trimmed below 32 runs, 1 a side from 32, at most 3; the median
    # is the middle value
    t = krcompare.trimmed([5, 1, 3])
    check((t["trimmed"], t["min"], t["median"], t["max"]) == (0, 1, 3, 5), f"3 values: {t}")
    t = krcompare.trimmed(list(range(40)) + [1e9])
    check(t["trimmed"] == 1 and t["min"] == 1 and t["max"] == 39, f"41 values: one cut each end: {t}")
    check(krcompare.trimmed(list(range(200)))["trimmed"] == 3, "at most 3 cut")
    st = lambda v: krcompare.stats(runs("PASS", v))
    a, b = st([10, 11, 12, 11, 10]), st([1, 2, 3, 2, 1])
    check(krcompare.separate(a, b) and krcompare.separate(b, a), "5 and 5 runs, far apart: separate")
    check(not krcompare.separate(a, st([1, 2, 10, 2, 1])), "ranges touching at 10: not separate")
    check(not krcompare.separate(st([10, 11, 12]), st([1, 2, 3])),
          "3 runs a side: not separate, however apart (MIN_RUNS %d)" % krcompare.MIN_RUNS)
    # apart, but by less than half the difference of the medians: wide ranges, a small gap
    sep, why = krcompare.judge(st([1, 5, 5, 5, 5.9]), st([6, 7, 7, 7, 11]))
    check(not sep and "<= 1/2 of the medians' distance" in why, f"a gap of 0.1 against medians 2 apart: {why}")
    sep, why = krcompare.judge(st([100, 100.02, 100.04, 100.01, 100.03]), st([100.5, 100.52, 100.54, 100.51, 100.53]))
    check(not sep and "not over 1%" in why, f"apart but 0.5 % of a change: {why}")
    check(abs(krcompare.change_pct(st([10, 11, 12]), st([1, 2, 3])) - (-81.818181)) < 1e-3,
          "%change (2 - 11) / 11")
    check(krcompare.json_args(["--quiet", "--format", "text", "--csv", "x.csv", "--repeat", "3", "--format=tap"])
          == ["--repeat", "3", "--format", "json"], "json_args takes out the output options")
    check(krcompare.fmt(244.13) == "244" and krcompare.fmt(0.3951) == "0.395" and krcompare.fmt(12.34) == "12.3",
          "three significant digits")
    five = lambda verdict, vals, fw="above": [dict(r, fail_when=fw) for r in runs(verdict, vals)]
    cmp = krcompare.compare([{"label": "6.1.0-56-amd64-with-a-long-name", "runs": five("FAIL", [212, 244, 493, 250, 230])},
                             {"label": "6.12", "runs": five("PASS", [0.22, 0.4, 0.61, 0.3, 0.5])}])
    t = krcompare.table(cmp)
    check(all(len(l) <= 72 for l in t.split("\n")), "table within 72 columns:\n" + t)
    check("FAIL 5/5" in t and "PASS 5/5" in t and "-99.9%" in t and "separate (5 and 5 runs)" in t,
          "the table's counts, %change and separation:\n" + t)
    check(cmp["metric"]["worse"] == "higher" and cmp["direction"] == "improvement" and
          "improvement (a higher delay is worse): -99.9% on b (6.12) against the base a (~ith-a-long-name)"
          in flat(t),
          "FAIL above the threshold, lower on b: an improvement against the base a:\n" + t)
    back = krcompare.compare(list(reversed(cmp["sides"])) and
                             [{"label": "6.12", "runs": five("PASS", [0.22, 0.4, 0.61, 0.3, 0.5])},
                              {"label": "6.1", "runs": five("FAIL", [212, 244, 493, 250, 230])}])
    check(back["direction"] == "regression" and "regression (a higher delay is worse): +" in krcompare.table(back),
          "the other way round: a regression:\n" + krcompare.table(back))
    low = krcompare.compare([{"label": "x", "runs": five("PASS", [0.99, 0.98, 0.99, 1.0, 0.98], "below")},
                             {"label": "y", "runs": five("FAIL", [0.7, 0.72, 0.69, 0.71, 0.7], "below")}])
    check(low["metric"]["worse"] == "lower" and low["direction"] == "regression",
          f"FAIL below the threshold, lower on b: a regression: {low['direction']}")
    none = krcompare.compare([{"label": "x", "runs": runs("PASS", [1, 1.1, 1, 1.1, 1])},
                              {"label": "y", "runs": runs("PASS", [5, 5.1, 5, 5.1, 5])}])
    check(none["direction"] == "change" and "no direction declared" in flat(krcompare.table(none)),
          "no fail_when in the reports: a change, not a regression")
    same = krcompare.compare([{"label": "x", "runs": five("PASS", [1, 2, 3, 4, 5])},
                              {"label": "y", "runs": five("PASS", [2, 3, 4, 5, 6])}])
    check(same["direction"] is None and "no change called: b (y) against the base a (x)" in flat(krcompare.table(same)),
          "overlapping: no change called")
    # TCG: marked at the top of the table, from vmrun's words or (older records) the guest CPU
    tcg = krcompare.compare([{"label": "x", "kernel": {"name": "x"}, "runs": [dict(r, accel="TCG") for r in five("PASS", [1, 2, 3, 4, 5])]},
                             {"label": "y", "kernel": {"name": "y"}, "runs": [dict(r, accel="TCG") for r in five("PASS", [1, 2, 3, 4, 5])]}])
    check(krcompare.table(tcg).startswith("TCG (both sides): emulated CPUs"), "TCG marked:\n" + krcompare.table(tcg))
    check(not krcompare.table(same).startswith("TCG"), "this machine: no TCG line")
    old = {"sides": [{"kernel": "amd64", "vmrun": ["--accel", "tcg"], "runs": []},
                     {"kernel": "6.12", "environment": {"cpu": "2 x QEMU TCG CPU version 2.5+"}, "runs": []}]}
    check(krcompare.accelerators(old) == ["TCG", "TCG"], f"TCG from older records: {krcompare.accelerators(old)}")
    check(krcompare.pct_text(125956.2) == "+125956%" and krcompare.pct_text(-99.94) == "-99.9%"
          and krcompare.pct_text(None) == "n/a", "%change: tenths below 1000 % only")
    # two long titles that differ only at their end stay apart (the column is 16 wide)
    two = krcompare.compare([{"label": "commit:rt-culprit~1", "runs": runs("PASS", [0.4, 0.3, 0.5])},
                             {"label": "commit:rt-culprit", "runs": runs("FAIL", [230, 240, 235])}])
    titles = krcompare.table(two).split("\n")[0].split()
    check(len(set(titles)) == 2 and all(len(t) <= 27 for t in titles) and len(titles[0]) <= 16,
          f"two titles kept apart: {titles}")
    check("not separate (3 and 3 runs): fewer than 5" in flat(krcompare.table(two)), "3 runs: too few")
    hdr = krcompare.header(two).split("\n")
    ta, tb = (next(l for l in hdr if l.startswith(t + ":")).split()[1] for t in "ab")
    check(ta != tb, "the header's titles differ:\n" + "\n".join(hdr))
    check(hdr[-1].endswith("(a is the base)"), "the header names the base: " + hdr[-1])
    # a long program.metric and small values: every column stays in its place
    lat = lambda vals: [{"verdict": "FAIL", "value": v, "metric": "ratio", "exit_code": 1,
                         "measurements": {"test_lat_mean_us": v * 1e5}} for v in vals]
    cmp = krcompare.compare([{"label": "default", "runs": lat([0.00129, 0.00219, 0.00269, 0.002, 0.0015])},
                             {"label": "--mitigate", "runs": lat([1.11, 1.2, 1.32, 1.15, 1.25])}])
    cmp["program"] = "dio_kworker"
    t = krcompare.table(cmp).split("\n")
    check(all(len(l) <= 72 for l in t), "within 72 columns:\n" + "\n".join(t))
    rng = next(l for l in t if l.endswith("min .. max"))
    check(rng[:17] == "0.00129..0.00269 ", "a wide min .. max keeps its column: %r" % rng)
    check(any(l.endswith("  test_lat_mean_us") for l in t),
          "a name too long with its program is shown bare, not cut:\n" + "\n".join(t))


# ---- the rule against recorded runs ------------------------------------------------------------
# tests/data/runs-*.json: 30 runs of each variant, recorded on this machine under the bench
# lock by tests/record_runs.py (rt_starve default, fibtest default and --trigger, alternated)

def recorded(name, variant):
    with open(os.path.join(TOP, "tests", "data", f"runs-{name}.json")) as f:
        d = json.load(f)
    return [dict(verdict=r["verdict"], value=r["value"], metric=d["metric"], fail_when=d["fail_when"])
            for r in d["runs"] if r["variant"] == variant and r["value"] is not None]


def lkp_1_rule(a, b):
    """the rule before: >= 3 runs a side and the ranges [min, max] do not overlap"""
    return a["n"] >= 3 and b["n"] >= 3 and (a["max"] < b["min"] or b["max"] < a["min"])


def self_rate(runs_, n, rule, draws=2000, seed=32):
    """how often RULE calls two disjoint random draws of N runs of one kernel separate; and
    how often it does for N consecutive runs against the N after them (drift over time)"""
    rng = random.Random(seed)
    hit = 0
    for _ in range(draws):
        s = rng.sample(runs_, 2 * n)
        hit += bool(rule(krcompare.stats(s[:n]), krcompare.stats(s[n:])))
    blocks = [(runs_[i:i + n], runs_[i + n:i + 2 * n]) for i in range(len(runs_) - 2 * n + 1)]
    bhit = sum(bool(rule(krcompare.stats(x), krcompare.stats(y))) for x, y in blocks)
    return hit / draws, bhit / len(blocks) if blocks else 0.0


def detect_rate(base, other, n, draws=1000, seed=33, scale=1.0):
    rng = random.Random(seed)
    hit = 0
    for _ in range(draws):
        a = rng.sample(base, n)
        b = [dict(r, value=r["value"] * scale) for r in rng.sample(other, n)]
        hit += krcompare.separate(krcompare.stats(a), krcompare.stats(b))
    return hit / draws


def self_compare():
    series = {f"{p} {v}": recorded(p, v) for p, v in
              (("rt_starve", "default"), ("fibtest", "default"), ("fibtest", "--trigger"))}
    check(all(len(r) == 30 for r in series.values()), "30 recorded runs each: %s" %
          {k: len(v) for k, v in series.items()})
    worst_new = worst_old = worst_below = 0.0
    for name, r in series.items():
        for n in (krcompare.MIN_RUNS, 10):
            rnd, blk = self_rate(r, n, krcompare.separate)
            worst_new = max(worst_new, rnd, blk)
            check(rnd < 0.05 and blk < 0.05, f"{name}, n={n}: one kernel against itself called separate "
                  f"in {100 * rnd:.1f}% of random draws, {100 * blk:.1f}% of consecutive blocks (< 5%)")
        # the rule before, at its n = 3: the harness can fail
        worst_old = max(worst_old, self_rate(r, 3, lkp_1_rule)[0])
        # MIN_RUNS is the smallest n that keeps every series under 5 %
        rule = lambda a, b: krcompare.separate(a, b, min_runs=1)
        worst_below = max(worst_below, *self_rate(r, krcompare.MIN_RUNS - 1, rule))
    check(worst_old >= 0.05, f"the old rule (n=3, ranges apart) on the same draws: {100 * worst_old:.1f}% "
          "(>= 5%: the harness tells a loose rule)")
    check(worst_below >= 0.05, f"n={krcompare.MIN_RUNS - 1} with this rule: {100 * worst_below:.1f}% "
          f"in the worst series (>= 5%: MIN_RUNS {krcompare.MIN_RUNS} is the smallest under 5%)")
    print(f"compare_test: self-compare: worst {100 * worst_new:.2f}% separate at n={krcompare.MIN_RUNS} "
          f"and 10; old rule at n=3: {100 * worst_old:.1f}%; n={krcompare.MIN_RUNS - 1}: {100 * worst_below:.1f}%")
    # and a real difference is called: fibtest's --trigger (efficiency 0.55-0.60 against
    # 0.99-1.00), and recorded noise with one side scaled
    fd, ft, rs = series["fibtest default"], series["fibtest --trigger"], series["rt_starve default"]
    for n in (krcompare.MIN_RUNS, 10):
        d = detect_rate(fd, ft, n)
        check(d >= 0.95, f"fibtest default against --trigger, n={n}: separate in {100 * d:.0f}% (>= 95%)")
        d = detect_rate(fd, fd, n, scale=1.05)
        check(d >= 0.95, f"fibtest default against itself x1.05, n={n}: separate in {100 * d:.0f}% (>= 95%)")
    d = detect_rate(rs, rs, krcompare.MIN_RUNS, scale=3)
    check(d >= 0.5, f"rt_starve against itself x3, n={krcompare.MIN_RUNS}: separate in {100 * d:.0f}% (>= 50%)")
    cmp = krcompare.compare([{"label": "default", "runs": fd[:10]}, {"label": "--trigger", "runs": ft[:10]}])
    check(cmp["separate"] and cmp["direction"] == "regression",
          f"fibtest's efficiency falling (FAIL below): a regression: {cmp['direction']}")


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
    vals = ["- 0.31", "- 0.42", "- 0.25", "- 0.39", "- 0.35", "--trigger 212", "--trigger 493", "--trigger 244",
            "--trigger 301", "--trigger 250"]
    p, cmp, order = compare(tmp, "apart", vals, ["--host", "-n", "5", "--b-args", "--trigger"])
    check(p.returncode == 0 and cmp, f"compare --host: exit {p.returncode}: {p.stderr}")
    if not cmp:
        return
    check(order[:4] == ["- 0.31", "--trigger 212", "- 0.42", "--trigger 493"], f"runs alternate a, b: {order}")
    a, b = cmp["sides"]
    check(a["stats"]["counts"] == {"PASS": 5} and b["stats"]["counts"] == {"FAIL": 5}, "counts")
    check(abs(a["stats"]["mean"] - 0.344) < 1e-9 and abs(b["stats"]["mean"] - 300) < 1e-9, "means")
    check(cmp["separate"] is True and cmp["direction"] == "regression", "separate, a regression")
    pv = cmp.get("provenance") or {}
    check(pv.get("krepro") and pv.get("started") and pv.get("finished") and pv.get("accelerator") == "bare"
          and (pv.get("host") or {}).get("cpus") and "qemu" in pv and "compiler" in pv,
          f"compare.json's provenance: {pv}")
    check(all(len(l) <= 72 for l in p.stdout.split("\n")), "stdout within 72 columns:\n" + p.stdout)
    check("PASS 5/5 -> FAIL 5/5" in p.stdout and "standin.delay (ms)" in p.stdout, "table:\n" + p.stdout)
    check("-29.3%" in p.stdout and "standin.efficiency" in p.stdout and "standin.probes" not in p.stdout,
          "a measurement that changed has its row, one that did not has none:\n" + p.stdout)
    check(cmp["argv"] == ["--host", "-n", "5", "--b-args", "--trigger", "--", STANDIN], f"argv {cmp['argv']}")
    r, mail, _ = report(tmp, "apart", os.path.join(tmp, "apart.json"))
    check(r.returncode == 0 and mail, f"report --compare with a FAIL side writes a mail: {r.stderr}")
    if mail:
        check(all(len(l) <= 72 for l in mail.split("\n")), "mail within 72 columns:\n" + mail)
        check(mail.startswith("Subject: [krepro] standin: PASS 5/5 on default -> FAIL 5/5 on --trigger"),
              "subject: " + mail.split("\n")[0])
        check(cmp["table"] in mail, "the table is in the mail")
        check('krepro noticed "standin: PASS 5/5 -> FAIL 5/5", a +' in flat(mail) and
              "regression of delay 0.344 -> 300ms, on --trigger against default:" in flat(mail),
              "LKP's headline: the flip and the change the rule called:\n" + mail)
        check(f"measured by: krepro {pv.get('krepro')}, " in flat(mail) and "test machine: " in mail and
              (" (the programs)" in mail if pv.get("compiler") else "compiler:     not recorded" in mail) and
              "| Reported-by: NAME <EMAIL>" in mail and
              "| Closes: URL-OF-THIS-REPORT" in mail and "parameters: standin, 5 runs a side" in flat(mail),
              "the test machine, compiler, revision, parameters and tags of compare.json:\n" + mail)
        check("4cd13c21b207" in mail and "CONFIG_HZ=250" in mail, "causes and config from the JSON")
        check("scripts/compare --host -n 5 --b-args --trigger" in mail, "the command to run it again")
        check("regression (a higher delay is worse): +" in flat(mail) and "against the base a (default)" in flat(mail),
              "the mail says regression, and which side is the base")

    overlap = ["- 10", "- 25", "- 12", "- 11", "- 13", "--trigger 22", "--trigger 30", "--trigger 24",
               "--trigger 23", "--trigger 26"]
    p, cmp, _ = compare(tmp, "overlap", overlap, ["--host", "-n", "5", "--b-args", "--trigger"])
    check(p.returncode == 0 and cmp and cmp["separate"] is False and
          "not separate (5 and 5 runs): the ranges overlap" in flat(p.stdout),
          "overlapping ranges: not separate\n" + p.stdout)

    clean = ["- 1", "- 2", "- 3", "- 2", "- 1", "--mitigate 1", "--mitigate 1.5", "--mitigate 2",
             "--mitigate 1.2", "--mitigate 1.8"]
    p, cmp, _ = compare(tmp, "clean", clean, ["--host", "-n", "5", "--b-args", "--mitigate"])
    r, mail, out = report(tmp, "clean", os.path.join(tmp, "clean.json"))
    check(r.returncode == 0 and mail is None and "PASS: nothing to report" in r.stdout and
          os.path.exists(os.path.join(out, "no-mail.txt")), f"PASS on both sides: no mail: {r.stdout}")

    # PASS on both sides, but the delay tripled: a performance regression gets its mail
    slow = ["- 3", "- 3.2", "- 3.1", "- 2.9", "- 3", "--trigger 9", "--trigger 9.5", "--trigger 9.2",
            "--trigger 9.1", "--trigger 8.9"]
    p, cmp, _ = compare(tmp, "slow", slow, ["--host", "-n", "5", "--b-args", "--trigger"])
    check(cmp and cmp["separate"] and cmp["direction"] == "regression", "PASS to PASS, tripled: a regression")
    r, mail, out = report(tmp, "slow", os.path.join(tmp, "slow.json"))
    check(r.returncode == 0 and mail and "regression (a higher delay is worse): +" in flat(mail),
          f"a separate regression without a FAIL still gets its mail: {r.stdout}")
    if mail:
        check(mail.startswith("Subject: [krepro] standin: +") and "delay regression" in mail.split("\n")[0],
              "subject names the change: " + mail.split("\n")[0])

    # a recorded comparison judged again, without a run: TCG marked, the direction said
    js = os.path.join(tmp, "rejudged.json")
    p = subprocess.run([os.path.join(TOP, "scripts", "compare"), "--rejudge",
                        os.path.join(TOP, "docs", "bisect", "compare-rt_starve-6.1-6.12.json"), "--json", js],
                       capture_output=True, text=True, timeout=60)
    re_ = json.load(open(js)) if os.path.exists(js) else {}
    check(p.returncode == 0 and "TCG (both sides)" in p.stdout and re_.get("direction") == "improvement"
          and re_.get("rejudged") and all(len(l) <= 72 for l in p.stdout.split("\n")),
          f"--rejudge a recorded compare: exit {p.returncode}\n{p.stdout}{p.stderr}")

    # --json into a missing directory, or over a file: said before any run, not after them
    # (issue 42 row 12: an hour of guest runs, then a traceback)
    for js, why in ((os.path.join(tmp, "no", "such.json"), "No such"), (STANDIN, "exists")):
        log = os.path.join(tmp, "early.log")
        p = subprocess.run([os.path.join(TOP, "scripts", "compare"), "--json", js, "--host", "--",
                            STANDIN], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, STANDIN_LOG=log))
        check(p.returncode == 128 and why in p.stderr and not os.path.exists(log),
              f"--json {js}: exit {p.returncode}, runs {os.path.exists(log)}: {p.stderr!r}")
    # labcheck likewise, and its --out: a new or empty directory, as report's (issue 42 row 7)
    if os.geteuid() == 0:
        full = os.path.join(tmp, "full")
        os.makedirs(full)
        open(os.path.join(full, "mail.txt"), "w").write("a draft\n")
        for argv, why in ((["--json", STANDIN], "exists"), (["--out", full], "exists"),
                          (["--kcidb", os.path.join(tmp, "no", "k.json")], "No such")):
            p = subprocess.run([os.path.join(TOP, "scripts", "labcheck"), "--build",
                                os.path.join(tmp, "no-build")] + argv, capture_output=True,
                               text=True, timeout=60)
            check(p.returncode == 128 and why in p.stderr and "Traceback" not in p.stderr,
                  f"labcheck {' '.join(argv)}: exit {p.returncode}: {p.stderr[-300:]!r}")
        check(open(os.path.join(full, "mail.txt")).read() == "a draft\n", "labcheck --out replaced a file")
    for bad, why in ((["--host", "-n", "4"], "-n 4 (under MIN_RUNS)"), (["--host", "--a", "amd64"], "--host and --a"),
                     (["--a", "amd64"], "--a without --b")):
        p, _, _ = compare(tmp, "bad", ["- 1"], bad)
        check(p.returncode == 128, f"{why}: exit {p.returncode}, want 128")


def provenance(tmp):
    """the kernel's compiler, from its config or the Debian config beside its vmlinuz"""
    boot = os.path.join(tmp, "boot")
    os.makedirs(boot)
    for f, text in (("vmlinuz-6.1.0-9-amd64", ""), ("config-6.1.0-9-amd64",
                    'CONFIG_CC_VERSION_TEXT="gcc-12 (Debian 12.2.0-14) 12.2.0"\n')):
        with open(os.path.join(boot, f), "w") as fh:
            fh.write(text)
    deb = {"image": os.path.join(boot, "vmlinuz-6.1.0-9-amd64"), "config": None}
    check(krcompare.kernel_compiler(deb) == "gcc-12 (Debian 12.2.0-14) 12.2.0", "a Debian kernel's compiler")
    check(krcompare.kernel_compiler({"image": "/x/bzImage", "config": None}) is None and
          krcompare.kernel_compiler(None) is None, "unknown: None")
    pv = krcompare.provenance([{"kernel": deb, "runs": [{"accel": "TCG"}]}, {"kernel": None, "runs": [{"accel": "bare"}]}],
                              qemu="/nonexistent/qemu")
    check(pv["accelerator"] == "TCG/bare" and pv["kernel_compilers"] == ["gcc-12 (Debian 12.2.0-14) 12.2.0", None]
          and pv["qemu"] is None and pv["host"]["cpus"], f"provenance: {pv}")


def lock_file(tmp):
    """a lock in a shared /tmp is opened as root without following a user's link (issue 42
    row 19: a dangling one made root create its target)"""
    link, target = os.path.join(tmp, "bench.lock"), os.path.join(tmp, "target")
    os.symlink(target, link)
    try:
        krcompare.open_lock(link)
        check(False, "open_lock followed a link")
    except krcompare.Usage as e:
        check(not os.path.lexists(target) and "bench.lock" in str(e), f"open_lock: {e}")
    os.mkfifo(os.path.join(tmp, "fifo.lock"))
    os.mkdir(os.path.join(tmp, "dir.lock"))
    for bad in ("fifo.lock", "dir.lock"):  # a FIFO would block the open for ever
        try:
            krcompare.open_lock(os.path.join(tmp, bad))
            check(False, f"open_lock took {bad}")
        except krcompare.Usage as e:
            check("not a regular file" in str(e) or "directory" in str(e), f"open_lock {bad}: {e}")
    f = krcompare.open_lock(os.path.join(tmp, "new.lock"))
    check(os.path.isfile(os.path.join(tmp, "new.lock")), "open_lock makes a missing lock")
    f.close()


def main():
    unit()
    with tempfile.TemporaryDirectory(prefix="krepro-lock-") as tmp:
        lock_file(tmp)
    self_compare()
    with tempfile.TemporaryDirectory(prefix="krepro-compare-") as tmp:
        provenance(tmp)
        whole(tmp)
    finish()


if __name__ == "__main__":
    main()
