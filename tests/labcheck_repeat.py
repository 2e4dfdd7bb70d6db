#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: the lab check N times in a row (default 10): no program may contradict
itself (PASS in one run, FAIL in another) or end in ERROR, and the machine must be as it
was at the start after every run. A SKIP between verdicts is noise said as noise (a loaded
machine makes a run inconclusive), not a contradiction: it is printed, not failed.
Usage: labcheck_repeat.py [--times N] [--build DIR]. Exit 0 pass, 1 fail, 77 not root."""
import argparse, json, os, subprocess, sys, tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krstate import snapshot, diff  # noqa: E402
sys.path.insert(0, os.path.join(TOP, "tests"))
from contract import validate_json  # noqa: E402
from checks import FAILS  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--times", type=int, default=10)
ap.add_argument("--build", default=os.path.join(TOP, "build"))
a = ap.parse_args()
if os.geteuid() != 0:
    print("SKIP: needs root")
    sys.exit(77)
start = snapshot()
seen, fails = {}, []
with tempfile.TemporaryDirectory(prefix="krepro-soak-") as tmp:
    for i in range(a.times):
        out = os.path.join(tmp, f"run{i}.json")
        # the first run keeps every program's own JSON report: each is checked against the
        # contract (a real run's report; run-PROG checks a real run's TAP)
        keep = ["--out", os.path.join(tmp, "reports")] if i == 0 else []
        p = subprocess.run([os.path.join(TOP, "scripts", "labcheck"), "--build", a.build, "--json", out]
                           + keep, capture_output=True, text=True)
        doc = json.load(open(out))
        for r in doc["results"] if keep else []:
            path = os.path.join(tmp, "reports", r["program"] + ".json")
            if os.path.exists(path):
                validate_json(open(path).read(), r.get("exit_code"), f"run 1: {r['program']}'s report")
            else:
                fails.append(f"run 1: no JSON report of {r['program']}")
        verdicts = {r["program"]: r["verdict"] for r in doc["results"]}
        print(f"run {i + 1}: exit {p.returncode} " + " ".join(f"{k}={v}" for k, v in verdicts.items()), flush=True)
        if p.returncode == 128:
            fails.append(f"run {i + 1}: labcheck error: {p.stdout.strip().splitlines()[-3:]}")
        for prog, v in verdicts.items():
            seen.setdefault(prog, []).append(v)
        changed = diff(start, snapshot())
        if changed:
            fails.append(f"run {i + 1}: the machine changed: {changed}")
for prog, vs in seen.items():
    if {"PASS", "FAIL"} <= set(vs) or "ERROR" in vs:
        fails.append(f"{prog}: verdicts contradict each other across runs: {vs} "
                     f"(load average now {os.getloadavg()[0]:.2f})")
    elif len(set(vs)) != 1:
        print(f"note: {prog}: {vs}: inconclusive in some runs, never contradicted")
for f in fails:
    print("FAIL:", f)
fails += FAILS  # the reports' checks, printed as they failed
print(f"{a.times} lab checks: " + ("no verdict contradicted, machine as found" if not fails else f"{len(fails)} problem(s)"))
sys.exit(1 if fails else 0)
