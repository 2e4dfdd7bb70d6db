#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: the lab check N times in a row (default 10): every program must give the same
verdict every time, and the machine must be as it was at the start after every run.
Usage: labcheck_repeat.py [--times N] [--build DIR]. Exit 0 pass, 1 fail, 77 not root."""
import argparse, json, os, subprocess, sys, tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krstate import snapshot, diff  # noqa: E402

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
        p = subprocess.run([os.path.join(TOP, "scripts", "labcheck"), "--build", a.build, "--json", out],
                           capture_output=True, text=True)
        doc = json.load(open(out))
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
    if len(set(vs)) != 1:
        fails.append(f"{prog}: verdicts differ across runs: {vs}")
for f in fails:
    print("FAIL:", f)
print(f"{a.times} lab checks: " + ("the same verdicts every time, machine as found" if not fails else f"{len(fails)} problem(s)"))
sys.exit(1 if fails else 0)
