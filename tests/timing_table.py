#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: the table of docs/tests.md from the logs of real runs of scripts/test: each
test's time (the longest over the runs given) against the timeout it declares, which must
be at least 5x that time (a cold machine with one CPU kept busy is the measure).

timing_table.py [--write FILE] BUILD_DIR LOGDIR...
    BUILD_DIR: a configured build (its tests' timeouts); LOGDIR: a scripts/test run's
    build-*/meson-logs, or a clone cold-check kept (every meson-logs/*.json under it).
    Prints the markdown table, or with --write replaces the table in FILE (docs/tests.md);
    exit 1 when a timeout is under 5x the longest time seen.
"""
import glob, json, os, sys


def main():
    args = sys.argv[1:]
    write = args[1] if args[:1] == ["--write"] else None
    if write:
        args = args[2:]
    build, logdirs = args[0], args[1:]
    intro = json.load(open(os.path.join(build, "meson-info", "intro-tests.json")))
    timeout = {t["name"]: t["timeout"] for t in intro}
    suite = {t["name"]: ",".join(s.split(":")[-1] for s in t["suite"]) for t in intro}
    seen = {}  # name -> [durations]
    for d in logdirs:
        # meson's logs: testlog.json, or NAME.json with --logbase NAME (scripts/test)
        for f in glob.glob(os.path.join(d, "**", "meson-logs", "*.json"), recursive=True) + \
                glob.glob(os.path.join(d, "*.json")):
            for line in open(f):
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if isinstance(r, dict) and "duration" in r:  # "project:suite / name"
                    seen.setdefault(r["name"].split(" / ")[-1], []).append(r["duration"])
    bad = 0
    rows = ["| test | suite | longest run (s) | timeout (s) |", "|---|---|---:|---:|"]
    for name in sorted(timeout, key=lambda n: (-max(seen.get(n, [0])), n)):
        longest = max(seen.get(name, [0]))
        flag = ""
        if name in seen and timeout[name] < 5 * longest:
            flag, bad = " **under 5x**", bad + 1
        runs = "%.1f" % longest if name in seen else "not run"
        rows.append(f"| {name} | {suite[name]} | {runs} | {timeout[name]}{flag} |")
    table = "\n".join(rows)
    if write:
        text = open(write).read()
        a = text.index(rows[0])
        b = text.find("\n\n", a)
        text = text[:a] + table + (text[b:] if b >= 0 else "\n")
        with open(write, "w") as f:
            f.write(text)
    else:
        print(table)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
