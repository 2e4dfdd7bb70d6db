#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: scripts/plot's gnuplot scripts, read without gnuplot: fibtest's panel
shows the quota it was throttled under inside the frame, and apart from throttled %
(at 100 % throttled and a 0.8-CPU quota, autoscaling put the quota on the frame, and a
shared scale put both lines at one height); rt_starve's shades the RT burner's window; a hostile compare.json's labels, units and
values stay inside gnuplot strings or out of the plot. Exit 0 pass, 1 fail."""
import os, re, sys, tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tests"))
from checks import check, finish, load_script  # noqa: E402

plot = load_script(os.path.join(TOP, "scripts", "plot"))


def fib_rows(quota, usage):
    return [{"window": "0", "t_ms": str(100 * i), "interval_ms": "100", "periods": "10",
             "throttled": "10", "usage_ms": str(100 * usage), "quota_cpus": str(quota)} for i in range(1, 11)]


def height(g, axis, v):
    m = re.search(r"set %srange \[([-\d.e]+):([-\d.e]+)\]" % axis, g)
    check(m is not None, f"set {axis}range with numbers:\n{g}")
    return (v - float(m.group(1))) / (float(m.group(2)) - float(m.group(1))) if m else 0


with tempfile.TemporaryDirectory() as tmp:
    for quota, usage in ((0.8, 0.45), (4.1, 0.5), (0.8, 1.6)):
        g = plot.fibtest(fib_rows(quota, usage), tmp)
        q, u, t = height(g, "y2", quota), height(g, "y2", usage), height(g, "y", 100)
        check(0.05 < q < 0.95 and 0.05 < u < 0.95, f"quota {quota}, usage {usage}: inside the frame ({q:.2f}, {u:.2f})")
        check(abs(q - t) > 0.05, f"quota {quota}: not at the height of 100 % throttled ({q:.2f}, {t:.2f})")
        check("title 'quota (CPUs)'" in g, "the quota is plotted")
    # rt_starve: the RT burner's window shaded, from the probes of phase 2 (PHASE_IN;
    # compared with "in", it never was)
    rows = [{"repeat": "1", "seq": str(i), "sent_ms_from_window_start": "%.3f" % (10 * i - 30),
             "rtt_ms": "0.300", "phase": "2" if 3 <= i < 8 else "0"} for i in range(12)]
    g = plot.rt_starve(rows, tmp)
    check("set object 1 rect from 0.0,graph 0 to 40.0,graph 1" in g,
          f"rt_starve: the burner window from its in-window probes:\n{g}")
    # someone else's compare.json (issue 42): a label that ends its gnuplot string and
    # starts a command, a value that is text; the script keeps both inside strings
    evil = "good' 1)\nsystem 'id > F'\nset xtics ('x"
    cmp = {"program": "fibtest';system 'id'", "threshold": 0.9,
           "metric": {"name": "efficiency", "unit": "'\n!id"},
           "sides": [{"label": evil, "runs": [{"verdict": "PASS", "value": 0.99},
                                              {"verdict": "FAIL", "value": "1);system('id')"}]}]}
    g = plot.verdict_panel(None, cmp, tmp)
    check("\nsystem" not in g and "!id" not in g.replace("?!id", ""),
          f"a label or unit started a gnuplot command:\n{g}")
    strings = re.sub(r"'(?:[^']|'')*'", "S", g)  # every quoted string, as one token
    check("system" not in strings and "'" not in strings,
          f"text from the JSON outside a gnuplot string:\n{g}")
    check("1);system" not in g, "a text value went into the data")
finish()
