#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: a stand-in krepro program for tests of scripts/compare and scripts/report:
prints a --format json report like the programs' (verdict, exit_code, metric, threshold,
rule, parameters, environment, known_causes) and exits with its code, at once.

Its metric "delay" (ms, FAIL above 20, so higher is worse; measurements: efficiency 0.7 on FAIL, else 0.99,
and probes, always 100) is read from $STANDIN_VALUES (a file of lines
"OPTIONS VALUE": the next unused line whose options are this run's; OPTIONS "-" is none),
and each run appends "OPTIONS VALUE" to $STANDIN_LOG. --version exits 0, a bad option 128.
"""
import json, os, sys

LIMIT = 20.0


def main():
    args = sys.argv[1:]
    if "--version" in args:
        print("standin 0.1.0")
        return 0
    opts, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("--format", "--wait"):
            skip = True
        elif a in ("--trigger", "--mitigate"):
            opts.append(a)
        else:
            print(f"standin: unknown option {a}", file=sys.stderr)
            return 128
    key = " ".join(opts) or "-"
    path, log = os.environ["STANDIN_VALUES"], os.environ["STANDIN_LOG"]
    used = open(log).read().splitlines() if os.path.exists(log) else []
    mine = [l for l in open(path).read().splitlines() if l.rsplit(" ", 1)[0] == key]
    n = sum(1 for l in used if l.rsplit(" ", 1)[0] == key)
    raw = mine[n % len(mine)].rsplit(" ", 1)[1]
    value = float(raw)
    with open(log, "a") as f:
        f.write(f"{key} {raw}\n")
    verdict, code = ("FAIL", 1) if value > LIMIT else ("PASS", 0)
    causes = ["kernels with 4cd13c21b207 (v4.9) and without d15121be7485 (v6.5)"] if code else []
    line = f"standin: {verdict} delay={value:g}ms (limit {LIMIT:g}ms)"
    print(json.dumps({
        "program": "standin", "version": "0.1.0", "verdict": verdict, "exit_code": code,
        "metric": {"name": "delay", "value": value, "unit": "ms"}, "threshold": LIMIT,
        "fail_when": "above", "rule": "FAIL when the delay exceeds the threshold", "reason": None,
        "verdict_line": line, "parameters": {"options": key},
        "environment": {"kernel": "6.1.0-test", "CONFIG_HZ": "250", "CONFIG_PREEMPT_RT": "n"},
        "measurements": {"delay": value, "efficiency": 0.7 if code else 0.99, "probes": 100}, "known_causes": causes, "text": ["standin", line]}))
    return code


if __name__ == "__main__":
    sys.exit(main())
