#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: record N runs of a krepro program on this machine for each of its
variants (sets of options), alternating the variants as scripts/compare does, and write
every run's verdict and metric value (its --format json report, read by
scripts/krcompare.py) to a JSON file: the recorded runs tests/compare_test.py resamples
to measure the false-positive rate of compare's rule. Run it under the bench lock:

  flock /tmp/krepro-bench.lock tests/record_runs.py -n 30 --out tests/data/runs-fibtest.json \\
      -- build/fibtest/fibtest '' '--trigger'

A variant is one string of options ('' for none). Exit 0 written, 128 bad usage."""
import argparse, datetime, json, os, platform, shlex, sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
import krcompare  # noqa: E402


def main():
    ap = argparse.ArgumentParser(prog="record_runs")
    ap.add_argument("-n", type=int, default=30)
    ap.add_argument("--out", required=True)
    ap.add_argument("program")
    ap.add_argument("variants", nargs="*", default=[""])
    a = ap.parse_args()
    if not os.access(a.program, os.X_OK) or a.n < 1:
        print(f"record_runs: {a.program}: not a program, or -n < 1", file=sys.stderr)
        return 128
    variants = a.variants or [""]
    sides = [{"args": shlex.split(v), "kernel": None} for v in variants]
    start = datetime.datetime.now(datetime.timezone.utc)
    runs = []
    for i in range(a.n):
        for v, s in zip(variants, sides):
            r = krcompare.run_once(s, a.program, [])
            runs.append({"variant": v or "default", "verdict": r["verdict"], "value": r["value"],
                         "metric": r.get("metric"), "seconds": r["seconds"]})
            print(f"record_runs: {i + 1}/{a.n} {v or 'default'}: {r['verdict']} {r['value']}",
                  file=sys.stderr)
    last = r
    out = {"kind": "krepro-recorded-runs", "program": last.get("program"),
           "metric": last.get("metric"), "unit": last.get("unit"), "fail_when": last.get("fail_when"),
           "variants": [v or "default" for v in variants], "runs_per_variant": a.n,
           "started": start.isoformat(timespec="seconds"),
           "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host": {"kernel": platform.release(), "cpu": (last.get("environment") or {}).get("cpu"),
                    "accelerator": krcompare.host_accelerator()},
           "krepro": krcompare.revision(), "runs": runs}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
