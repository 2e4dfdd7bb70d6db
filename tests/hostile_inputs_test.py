#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: someone else's files, hostile, to the scripts that read them (issue 42
row 17: 100 malformed inputs gave 50 tracebacks; a /dev/zero result.json read all
memory). scripts/report --compare and --bisect, scripts/plot (CSV, --json, --compare),
scripts/compare --rejudge and scripts/kcidb.py each get: the file itself wrong
(truncated, empty, a FIFO, /dev/zero or a link to it, a link to a good file, a
directory, 300 MB sparse, not UTF-8, NaN, nested 100000 deep); each field a reader
uses of a wrong type or missing; labels with control characters, quotes, shell and
gnuplot commands; program names that are paths; bisect directories with linked or
odd members; then a seeded fuzzer mutates the recorded files (docs/bisect) and CSVs
written as the programs write them. Every input: exit 128 with ONE line on stderr
naming the file (and the field), or 0 where it is still valid; never a traceback, a
timeout, a file written outside --out, or a command of the input run (each one
touches CANARY in the case's directory).

hostile_inputs_test.py [--fuzz SECONDS [--seed N] [--artifacts DIR]] [BUILDDIR]
  without --fuzz: the cases above and 500 mutations from a fixed seed; with it, new
  mutations from SEED (random unless given, printed) for SECONDS, each failing input
  saved under DIR. Exit 0 pass, 1 fail, 128 bad usage.
"""
import copy, importlib.machinery, importlib.util, json, os, random, resource, shutil, signal, sys
import tempfile, time, traceback

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
SCRIPT = {n: os.path.join(TOP, "scripts", n) for n in ("report", "plot", "compare", "kcidb.py")}
TIMEOUT = 30           # a valid report (export, gnuplot) takes 2-3 s
BIG = 300 << 20        # the "300 MB JSON read whole"
MEM = 512 << 20        # address space of every run: reading BIG whole fails
FUZZ = 500
JOBS = 3               # cases at once: most wait on gnuplot or cc, not the CPU
CANARY = "CANARY"
EVIL = f"touch {CANARY}"
DROP = object()        # a mutation that deletes the key


def load(rel):
    with open(os.path.join(TOP, rel)) as f:
        return json.load(f)


CMP = load("docs/bisect/compare-fibtest-fib-good-bad.json")
BIS = "docs/bisect/rt_starve"
MEMBERS = ("result.json", "compare.json", "summary.txt", "steps.txt", "bisect.log",
           "start.config", "verify.txt")
RES, BCMP = load(BIS + "/result.json"), load(BIS + "/compare.json")
# a program's --format json report, from a recorded run
_r = CMP["sides"][1]["runs"][0]
REP = {"program": _r["program"], "version": "0.9.0", "verdict": _r["verdict"],
       "exit_code": _r["exit_code"], "metric": {"name": _r["metric"], "value": _r["value"],
                                                 "unit": _r["unit"]},
       "threshold": _r["threshold"], "fail_when": _r["fail_when"], "rule": _r["rule"],
       "reason": None, "verdict_line": _r["verdict_line"], "parameters": {"duration": 5},
       "environment": _r["environment"], "measurements": _r["measurements"],
       "known_causes": _r["causes"], "text": ["fibtest (krepro) 0.9.0", _r["verdict_line"]],
       "duration_s": 4.2, "start_time": 1795000000.0}
DOC = {"kernel": "6.1.192-krepro", "results": [REP, dict(REP, program="rt_starve")]}


def csv_of(header, rows):
    return header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows)


# the samples as the programs' kr_csv_row formats write them
HW = ("repeat,condition,seq,warmup,user_to_qdisc_us,user_to_driver_us,user_to_nic_us,"
      "driver_to_kernel_us,nic_to_kernel_us,kernel_to_user_us,user_to_user_us")
IRQ = ("phase,rate_pps,probe,wall_s,lost_ms_s,cpu_ms_s,delay_ms_s,ksoftirqd_ms_s,steal_ms_s,"
       "stat_user_ms_s,stat_system_ms_s,stat_irq_ms_s,stat_softirq_ms_s,stat_idle_ms_s,"
       "sent_pps,received_pps")
CSVS = {
    "fibtest": csv_of("window,t_ms,interval_ms,periods,throttled,usage_ms,quota_cpus",
                      [(0, "%.3f" % (100 * i), "100.000", 10, i % 4, "45.000", "0.800")
                       for i in range(1, 11)]),
    "rt_starve": csv_of("repeat,seq,sent_ms_from_window_start,rtt_ms,phase",
                        [(w, i, "%.3f" % (i * 7.5 - 20), "nan" if i == 3 else "%.3f" % (0.2 + i),
                          2 if 3 < i < 9 else 0) for w in (1, 2) for i in range(12)]),
    "dio_kworker": csv_of("repeat,phase,t_s,latency_us",
                          [(0, ph, "%.6f" % (i / 50), "%.1f" % (80 + i)) for ph in ("baseline", "test")
                           for i in range(40)]),
    "hwts": csv_of(HW, [(1, c, i, int(i < 2), *["%.3f" % (i + k) for k in range(6)],
                         "nan" if i == 5 else "%.3f" % (3 * i)) for c in ("idle", "awake-spin")
                        for i in range(20)]),
    "ktask_bench": csv_of("pages,method,threads,repeat,pass,clear_s,memset_s,run_delay",
                          [(k, "populate", t, r, 1, "%.6f" % (0.5 / t), "0.100000", "0.000")
                           for k in ("hugetlb", "thp") for t in (1, 2) for r in (0, 1)]),
    "clear_pages": csv_of("pass,kernel_s,stosb_s,movnti_s,run_delay",
                          [(i, "0.100000", "%.6f" % (0.09 + i / 100), "0.120000", "0.000")
                           for i in range(4)]),
    "irqacct": csv_of(IRQ, [(ph, rate, probe, "1.0000", *["%.3f" % (rate / 1000 + k) for k in range(12)])
                            for ph, rate, probe in (("baseline", 0, 1), ("busy", 15000, 1),
                                                    ("busy-low", 15000, 1), ("idle-low", 15000, 0))]),
    "throttle_lock": csv_of("t_ms,wait_us", [("%.3f" % i, "%.1f" % (6 + i % 90)) for i in range(40)]),
}

INPUT = {"report-compare": "cmp.json", "rejudge": "cmp.json", "plot-compare": "cmp.json",
         "plot-json": "report.json", "kcidb": "labcheck.json", "plot-csv": "samples.csv",
         "report-bisect": "bis/result.json"}
BASE = {"report-compare": CMP, "rejudge": CMP, "plot-compare": CMP, "plot-json": REP,
        "kcidb": DOC, "plot-csv": CSVS["fibtest"]}


def command(target, path):
    return {"report-compare": [PY, SCRIPT["report"], "--out", "out", "--compare", path],
            "report-bisect": [PY, SCRIPT["report"], "--out", "out", "--bisect", "bis"],
            "plot-compare": [PY, SCRIPT["plot"], "--compare", path, "--out", "out/plot.png"],
            "plot-json": [PY, SCRIPT["plot"], "--json", path, "--out", "out/plot.png"],
            "plot-csv": [PY, SCRIPT["plot"], path, "--out", "out/plot.png"],
            "rejudge": [PY, SCRIPT["compare"], "--rejudge", path, "--json", "out/rejudged.json"],
            "kcidb": [PY, SCRIPT["kcidb.py"], path]}[target]


def files_of(target, cheap=False):
    """the valid inputs of a target: {relative path: content}; cheap: a stand-in program
    named (the report's export of it fails at once instead of compiling for 2 s)"""
    if target != "report-bisect":
        return {INPUT[target]: rename(BASE[target]) if cheap else BASE[target]}
    fs = {}
    for m in MEMBERS:
        with open(os.path.join(TOP, BIS, m), "rb") as f:
            fs["bis/" + m] = f.read()
    if cheap:
        fs["bis/result.json"], fs["bis/compare.json"] = rename(RES), rename(BCMP)
    return fs


def rename(obj):
    obj = copy.deepcopy(obj)
    if isinstance(obj, dict) and "program" in obj:
        obj["program"] = "standin"
    return obj


def mutated(obj, keys, value):
    obj = copy.deepcopy(obj)
    node = obj
    for k in keys[:-1]:
        node = node[k]
    if value is DROP:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return obj


class Case:
    def __init__(self, target, name, files=None, path=None, fault=None, expect="bad", field=None):
        self.target, self.name, self.expect, self.field, self.fault = target, name, expect, field, fault
        self.path = path or INPUT[target]
        self.files = files_of(target) if files is None else files
        self.argv = command(target, "/dev/zero" if fault == "zero" else self.path)


def field_cases(target, base, keys, values, expect="bad", path=None):
    """a case per value at KEYS of BASE (the target's file, or a bisect member)"""
    out = []
    leaf = next((k for k in reversed(keys) if isinstance(k, str)), None)
    for v in values:
        fs = files_of(target)
        p = path or INPUT[target]
        fs[p] = mutated(base, keys, v)
        what = "missing" if v is DROP else json.dumps(v)[:40]
        out.append(Case(target, f"{'.'.join(map(str, keys))} = {what}", fs, p, expect=expect,
                        field=leaf if expect == "bad" else None))
    return out


def write(d, rel, content):
    p = os.path.join(d, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if not isinstance(content, (bytes, str)):
        content = json.dumps(content, indent=1)
    with open(p, "wb") as f:
        f.write(content.encode() if isinstance(content, str) else content)


def setup(c, d, big):
    if c.target != "report-bisect":
        os.mkdir(os.path.join(d, "out"))
    for rel, content in c.files.items():
        write(d, rel, content)
    p = os.path.join(d, c.path)
    if c.fault in (None, "zero"):
        return
    if os.path.lexists(p):
        shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if c.fault == "fifo":
        os.mkfifo(p)
    elif c.fault == "zero-link":
        os.symlink("/dev/zero", p)
    elif c.fault == "passwd-link":
        os.symlink("/etc/passwd", p)
    elif c.fault == "link":  # to a valid copy beside it
        write(d, "good-copy", c.files.get(c.path) or b"{}")
        os.symlink(os.path.join(d, "good-copy"), p)
    elif c.fault == "dir":
        os.mkdir(p)
    elif c.fault == "sparse":
        os.link(big, p)  # one sparse file of BIG bytes, linked: no 300 MB written per case
    assert c.fault == "missing" or os.path.lexists(p), c.fault


def snapshot(d):
    out = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            out[os.path.relpath(p, d)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def load_scripts():
    """the scripts as modules, imported once: each case runs in a fork of this process
    (1-2 ms) instead of a new interpreter (80-100 ms), the same main() on the same argv"""
    mods = {}
    sys.path.insert(0, os.path.join(TOP, "scripts"))
    for n, path in SCRIPT.items():
        loader = importlib.machinery.SourceFileLoader("hostile_" + n.replace(".py", ""), path)
        m = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
        loader.exec_module(m)
        mods[path] = m
    return mods


def child(c, d, env, mods):
    """in the fork: the case's script, its main() as `python3 SCRIPT ARGS` runs it"""
    code = 1
    try:
        os.setsid()
        os.chdir(d)
        for fd, name, flags in ((0, os.devnull, os.O_RDONLY), (1, ".stdout", os.O_WRONLY | os.O_CREAT),
                                (2, ".stderr", os.O_WRONLY | os.O_CREAT)):
            f = os.open(os.path.join("..", os.path.basename(d) + name) if fd else name, flags, 0o600)
            os.dup2(f, fd)
            os.close(f)
        os.environ.clear()
        os.environ.update(env)
        tempfile.tempdir = None  # the parent's cached /tmp: TMPDIR is the case's own
        sys.argv = c.argv[1:]
        try:
            r = mods[c.argv[1]].main()
            code = r if isinstance(r, int) else 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
            if not isinstance(e.code, (int, type(None))):
                print(e.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def start(c, root, build, big, mods):
    d = os.path.join(root, "%04d" % c.idx)
    os.makedirs(os.path.join(d, "tmp"))
    setup(c, d, big)
    c.dir, c.before = d, snapshot(d)
    env = dict(os.environ, TMPDIR=os.path.join(d, "tmp"), KREPRO_BUILD=build,
               PYTHONDONTWRITEBYTECODE="1")
    sys.stdout.flush()
    sys.stderr.flush()
    c.t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        child(c, d, env, mods)
    return pid


def finish(c, returncode):
    d = c.dir
    c.seconds = time.monotonic() - c.t0
    out, err = (open(d + n, "rb").read().decode(errors="replace") for n in (".stdout", ".stderr"))
    os.unlink(d + ".stdout")
    os.unlink(d + ".stderr")
    why = []
    if returncode is None:
        why.append(f"no exit within {TIMEOUT} s")
    elif returncode not in (0, 128):
        why.append(f"exit {returncode}")
    elif c.expect == "bad" and returncode != 128:
        why.append("exit 0: taken as valid")
    elif c.expect == "ok" and returncode != 0:
        why.append("exit 128: a valid input refused")
    if "Traceback" in err + out:
        why.append("a traceback: " + err.strip().split("\n")[-1][:100])
    if returncode == 128:
        lines = err.strip().split("\n")
        name = os.path.basename("/dev/zero" if c.fault == "zero" else c.path)
        if len(lines) != 1 or len(lines[0]) > 400:
            why.append(f"stderr: {len(lines)} lines, {len(err)} bytes")
        elif name not in lines[0]:
            why.append(f"stderr names no {name}: {lines[0][:100]}")
        elif c.field and c.field not in lines[0]:
            why.append(f"stderr names no field {c.field}: {lines[0][:100]}")
    if os.path.lexists(os.path.join(d, CANARY)):
        why.append("a command from the input ran (CANARY)")
    after = snapshot(d)
    odd = sorted(k for k, v in after.items() if c.before.get(k) != v
                 and k.split("/")[0] not in ("out", "tmp"))
    if odd:
        why.append("written outside --out: " + " ".join(odd)[:100])
    if os.path.isdir(os.path.join(d, "tmp")) and os.listdir(os.path.join(d, "tmp")):
        why.append("left in TMPDIR: " + " ".join(os.listdir(os.path.join(d, "tmp")))[:100])
    c.why, c.err = why, err.strip()[:300]
    shutil.rmtree(d, ignore_errors=True)
    return c


# ---- the cases ---------------------------------------------------------------------------

FAULTS = ("fifo", "zero-link", "zero", "link", "dir", "sparse", "missing")


def file_cases(target, base, path=None, num=None):
    """the file itself wrong: faults of the file, bad bytes, bad JSON; NUM: the keys of a
    number in BASE for NaN, Infinity and huge numbers"""
    path = path or INPUT[target]
    text = json.dumps(base, indent=1)
    cases = [Case(target, f"{path}: {f}", path=path, fault=f) for f in FAULTS
             if f != "zero" or target != "report-bisect"]
    bodies = {"truncated to 1 byte": text[:1], "truncated to half": text[:len(text) // 2],
              "truncated by 1 byte": text[:-1], "empty": "", "a list": "[]", "null": "null",
              "a string": '"x"', "a number": "7",
              "nested 100000 deep": "[" * 100000 + "]" * 100000,
              "objects 50000 deep": '{"a":' * 50000 + "1" + "}" * 50000,
              "not UTF-8": text.encode().replace(b'"', b'"\xff\xfe', 1),
              "a NUL byte": text.encode().replace(b'"', b'"\x00', 1),
              "a BOM": b"\xef\xbb\xbf" + text.encode(),
              "nested 200 deep in an extra key": text.rstrip()[:-1] + ', "extra": ' +
              "[" * 200 + "]" * 200 + "}"}
    if num:
        for what, lit in (("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"),
                          ("1e400", "1e400"), ("a 5000-digit int", "9" * 5000),
                          ("10**400", "1" + "0" * 400)):
            bodies[f"{'.'.join(map(str, num))} = {what}"] = json.dumps(
                mutated(base, num, "@@N@@"), indent=1).replace('"@@N@@"', lit)
    for what, body in bodies.items():
        fs = files_of(target)
        fs[path] = body
        cases.append(Case(target, f"{path}: {what}", fs, path))
    return cases


S0, R0 = ("sides", 0), ("sides", 0, "runs", 0)
CTRL = ["a\nb", "red\x1b[31m", "bidi\u202eevil", "tab\there", "nul\x00"]
# compare.json: the keys, bad values, and which readers use them (the others may take them)
CMP_FIELDS = [
    (("program",), [42, "../../x", "a/b", f"x;{EVIL}", "", "..", "fibtest\n"],
     ("report-compare", "plot-compare")),
    (("sides",), ["x", {}, [], CMP["sides"][:1], CMP["sides"] * 2, DROP],
     ("report-compare", "rejudge", "plot-compare")),
    (("metric",), ["x", [], DROP], ("report-compare", "plot-compare")),
    (("metric", "name"), [42, ["x"]] + CTRL[:2], ("report-compare", "plot-compare")),
    (("metric", "unit"), [42, "'\n!" + EVIL], ("report-compare", "plot-compare")),
    (("threshold",), ["0.9", [], True], ("report-compare", "plot-compare")),
    (("change_pct",), ["x", [1]], ("report-compare",)),
    (("separate",), ["yes", 1, DROP], ("report-compare",)),
    (("table",), [42, ["x"]], ("report-compare",)),
    (("command",), [42, ["x"]], ("report-compare", "rejudge")),
    (("argv",), ["--a x", [1], [["x"]]], ("report-compare", "rejudge")),
    (("runs_per_side",), ["10", 1.5, -3], ("report-compare", "rejudge")),
    (("provenance",), ["x", []], ("report-compare", "rejudge")),
    (("provenance", "host"), ["x", 3], ("report-compare", "rejudge")),
    (("measurements",), ["x", [1], [{"separate": True}]], ("report-compare",)),
    (("accelerators",), ["TCG", [1, 2]], ("report-compare",)),
    (S0 + ("label",), [42, ["x"]] + CTRL, ("report-compare", "rejudge", "plot-compare")),
    (S0 + ("kernel",), [42, f"amd64; {EVIL}", "$(" + EVIL + ")"],
     ("report-compare", "rejudge", "plot-compare")),
    (S0 + ("commit",), [42, "not hex"], ("report-compare", "rejudge")),
    (S0 + ("args",), ["--trigger", [1]], ("report-compare", "rejudge")),
    (S0 + ("vmrun",), ["--cpus 2", [None]], ("report-compare", "rejudge")),
    (S0 + ("runs",), ["x", {}, [1], DROP], ("report-compare", "rejudge", "plot-compare")),
    (S0 + ("stats",), ["x", DROP], ("report-compare",)),
    (S0 + ("stats", "mean"), ["x", [1]], ("report-compare",)),
    (S0 + ("stats", "counts"), ["PASS", {"PASS": "ten"}], ("report-compare",)),
    (S0 + ("stats", "runs"), ["10", DROP], ("report-compare",)),
    (S0 + ("stats", "lkp"), ["x", DROP], ("report-compare",)),
    (S0 + ("causes",), ["x", [1]], ("report-compare",)),
    (S0 + ("environment",), ["x", {"CONFIG_HZ": [1]}], ("report-compare",)),
    (R0 + ("verdict",), [42, "MAYBE", None, DROP], ("report-compare", "rejudge", "plot-compare")),
    (R0 + ("value",), ["0.7", [0.7], True], ("report-compare", "rejudge", "plot-compare")),
    (R0 + ("threshold",), ["0.9"], ("report-compare", "rejudge")),
    (R0 + ("metric",), [["efficiency"], 42], ("report-compare", "rejudge")),
    (R0 + ("measurements",), ["x", {"throttled_pct": "100"}], ("report-compare", "rejudge")),
    (R0 + ("release",), [42, ["6.1"]], ("report-compare", "rejudge")),
    (R0 + ("fail_when",), ["sideways", 1], ("report-compare", "rejudge")),
    (R0 + ("environment",), ["x"], ("report-compare", "rejudge")),
    (R0 + ("causes",), ["x", [{}]], ("report-compare", "rejudge")),
]
# result.json of a bisect
RES_FIELDS = [
    (("program",), [42, "../../x", "a b", "", "/nonexistent/evil.sh", DROP]),
    (("program_args",), ["--quiet", [1]]), (("vmrun",), ["--accel tcg", [{}]]),
    (("terms",), ["x", DROP]), (("terms", "new"), [42]), (("repo",), [42, DROP]),
    (("first",), ["x", [1]]), (("first", "commit"), [42, "zz", DROP]),
    (("first", "subject"), [42, ["x"], "a\nb"]), (("old_commit",), [42, DROP]),
    (("new",), [["x"]]), (("verified",), [42, "maybe"]), (("verify",), ["x", [1]]),
    (("maintainers",), ["x"]), (("maintainers", "recipients"), ["a@b", [1]]),
    (("machine",), ["x", [1]]), (("compiler",), ["gcc"]), (("hangs",), ["x"]),
    (("hangs", "commits"), ["abc", [1]]), (("seconds",), ["x", 3]), (("steps",), ["x", [1]]),
    (("runs",), ["5", 1.5]), (("busy_seconds",), ["x"]), (("started",), [42]),
]
REP_FIELDS = [(("program",), [42, "../x"]), (("metric",), ["x", []]),
              (("metric", "value"), ["0.7", [1]]), (("metric", "unit"), [42, "ms\n!" + EVIL]),
              (("metric", "name"), [42]), (("threshold",), ["0.9"]), (("verdict",), [42, "MAYBE"])]
DOC_FIELDS = [(("results",), ["x", {}, [1]]), (("results", 0, "kernel_version"), [42]),
              (("results", 0, "kernel"), [42, ["x"]]), (("results", 0, "program"), [42]),
              (("results", 0, "verdict"), [[1], {}]), (("results", 0, "text"), ["abc", [1]]),
              (("results", 0, "start_time"), [1e18, -1e18, [1]]),
              (("results", 0, "duration_s"), ["4.2"]), (("results", 0, "environment"), ["x", [1]]),
              (("results", 0, "metric"), ["x"]), (("results", 0, "known_causes"), ["x"])]


def csv_cases():
    cs = [Case("plot-csv", f"{p}: valid", {"samples.csv": t}, expect="ok") for p, t in CSVS.items()]

    def bad(name, text, expect="bad"):
        cs.append(Case("plot-csv", name, {"samples.csv": text}, expect=expect))
    fib, rt, ktask, hw = CSVS["fibtest"], CSVS["rt_starve"], CSVS["ktask_bench"], CSVS["hwts"]
    lines = fib.split("\n")
    bad("fibtest: a column missing", fib.replace(",quota_cpus", "", 1))
    bad("fibtest: a short row", "\n".join(lines[:3] + ["0,100"] + lines[3:]))
    for v in ("abc", "inf", "nan", "1e999", "1e300", "", "0x10", "1_000"):
        bad(f"fibtest: periods {v!r}", "\n".join(lines[:2] + [lines[2].replace(",10,", f",{v},", 1)] + lines[3:]))
    bad("fibtest: t_ms with a space", fib.replace(",100.000,", ",1 00,", 1))
    bad("header only", lines[0] + "\n")
    bad("empty", "")
    bad("an unknown header", "a,b,c\n1,2,3\n")
    bad("not UTF-8", fib.encode() + b"\xff\xfe,1\n")
    bad("a NUL byte", fib + "0,\x00\n")
    bad("a 200 KB field", fib + "0," + "9" * 200000 + "\n")
    bad("rt_starve: repeat 1.5", rt.replace("\n1,0,", "\n1.5,0,", 1))
    bad("rt_starve: rtt_ms 'x'", rt.replace(",nan,", ",x,", 1))
    bad("dio_kworker: t_s 1e308", CSVS["dio_kworker"].replace(",0.000000,", ",1e308,", 1))
    for v in ("../../x", "/tmp/x", f"a' ;system '{EVIL}' ;'", '"a\nb"', "a b"):
        bad(f"ktask_bench: pages {v!r}", ktask.replace("\nhugetlb,", f"\n{v},", 1))
        bad(f"hwts: condition {v!r}", hw.replace(",idle,", f",{v},", 1))
    bad("irqacct: phase with a space", CSVS["irqacct"].replace("\nbusy,", "\nbusy x,", 1))
    bad("irqacct: probe 'yes'", CSVS["irqacct"].replace(",15000,1,", ",15000,yes,", 1))
    bad("clear_pages: kernel_s 'x'", CSVS["clear_pages"].replace(",0.100000,", ",x,", 1))
    bad("throttle_lock: wait_us -inf", CSVS["throttle_lock"].replace(",6.0\n", ",-inf\n", 1))
    bad("extra columns", fib.replace("\n1,", "\n1,2,3,", 1).replace("quota_cpus", "quota_cpus,x", 1),
        "either")
    for f in FAULTS:
        cs.append(Case("plot-csv", f"samples.csv: {f}", {"samples.csv": fib}, fault=f))
    p = Case("plot-csv", "fibtest --program rt_starve", {"samples.csv": fib})
    p.argv = p.argv[:2] + ["--program", "rt_starve"] + p.argv[2:]
    return cs + [p]


def bisect_cases():
    cs = [Case("report-bisect", f"bis/{m}: {f}", path="bis/" + m, fault=f)
          for m in ("compare.json", "start.config", "summary.txt", "verify.txt", "bisect.log")
          for f in ("fifo", "zero-link", "passwd-link", "dir", "sparse")]
    cs += [Case("report-bisect", "bis/result.json: link", path="bis/result.json", fault="link")]
    for m, body in (("verify.txt", b"verify: \xff\xfe\n"), ("verify.txt", b"verify: \x1b[2J\n")):
        fs = files_of("report-bisect")
        fs["bis/" + m] = body
        cs.append(Case("report-bisect", f"bis/{m}: {body[8:12]!r}", fs, "bis/" + m))
    c = Case("report-bisect", "bis: a file", path="bis", fault=None)
    c.files = {"bis": "not a directory"}
    cs.append(c)
    fs = files_of("report-bisect")
    fs["bis/compare.json"] = mutated(BCMP, R0 + ("value",), "0.25")
    cs.append(Case("report-bisect", "bis/compare.json: a run's value text", fs,
                   "bis/compare.json", field="value"))
    cs += file_cases("report-bisect", RES, num=("runs",))
    return cs


def label_cases():
    """labels with quotes and commands: plain text, harmless where it is quoted"""
    lab = f"x' . system('{EVIL}') . '$({EVIL})`{EVIL}`;{EVIL}|\\"
    cs = []
    for t in ("report-compare", "rejudge", "plot-compare"):
        fs = files_of(t)
        fs["cmp.json"] = mutated(mutated(CMP, ("sides", 1, "label"), lab), ("metric", "unit"),
                                 "!" + EVIL)
        cs.append(Case(t, "a label of quotes and commands", fs, expect="ok"))
    fs = files_of("report-bisect")
    fs["bis/result.json"] = mutated(RES, ("first", "subject"), lab)
    cs.append(Case("report-bisect", "a subject of quotes and commands", fs, expect="ok"))
    fs = files_of("plot-csv")
    fs["samples.csv"] = CSVS["hwts"].replace(",idle,", ",a'b!c,")
    cs.append(Case("plot-csv", "a condition with a quote", fs, expect="either"))
    return cs


def fixed_cases():
    cs = [Case(t, "valid", expect="ok") for t in BASE]
    cs.append(Case("report-bisect", "valid", expect="ok"))
    for rel in ("docs/bisect/compare-dio_kworker-mitigate.json", "docs/bisect/fibtest/compare.json",
                "docs/bisect/compare-rt_starve-commits.json"):
        cs += [Case(t, f"valid {rel}", {"cmp.json": load(rel)}, expect="ok")
               for t in ("rejudge", "plot-compare")]
    for keys, values, readers in CMP_FIELDS:
        for t in ("report-compare", "rejudge", "plot-compare"):
            cs += field_cases(t, CMP, keys, values, "bad" if t in readers else "either")
    for keys, values in RES_FIELDS:
        cs += field_cases("report-bisect", RES, keys, values)
    for keys, values in REP_FIELDS:
        cs += field_cases("plot-json", REP, keys, values)
    for keys, values in DOC_FIELDS:
        cs += field_cases("kcidb", DOC, keys, values)
    fs = files_of("report-bisect")
    fs["bis/result.json"] = mutated(mutated(RES, ("first",), None), ("bisect_end",),
                                    {"how": "skipped", "candidates": [1, 2]})
    cs.append(Case("report-bisect", "bisect_end.candidates = [1, 2]", fs, field="candidates"))
    for t in ("report-compare", "rejudge", "plot-compare"):
        cs += file_cases(t, CMP, num=R0 + ("value",))
    cs += file_cases("plot-json", REP, num=("metric", "value"))
    cs += file_cases("kcidb", DOC, num=("results", 0, "duration_s"))
    return cs + bisect_cases() + csv_cases() + label_cases()


# ---- the fuzzer --------------------------------------------------------------------------

ODD = ["", "x", 0, -1, 2.5, 10 ** 20, True, None, [], {}, [1, "a"], {"k": []}, "a\nb",
       "../../x", f"$({EVIL})", "\u202e"]


def paths(v, pre=()):
    out = []
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else []
    for k, x in items:
        out.append(pre + (k,))
        out += paths(x, pre + (k,))
    return out


def fuzz_cases(n, seed=20261207):
    """N mutations from SEED, one at a time (a fuzz run's many do not fit in memory)"""
    rng = random.Random(seed)
    targets = ["rejudge", "rejudge", "plot-compare", "report-compare", "report-bisect",
               "plot-json", "kcidb", "plot-csv"]
    for i in range(n):
        t = rng.choice(targets)
        fs = files_of(t, cheap=True)
        p = INPUT[t] if t != "report-bisect" else rng.choice(["bis/result.json", "bis/compare.json"])
        base = fs[p]
        if isinstance(base, bytes):
            base = json.loads(base)
        how = rng.choice(["drop", "swap", "swap", "flip", "cut"] if not isinstance(base, str)
                         else ["flip", "cut", "cell", "cell"])
        if how in ("drop", "swap"):
            keys = rng.choice(paths(base))
            body = mutated(base, keys, DROP if how == "drop" else rng.choice(ODD))
            what = ".".join(map(str, keys))
        elif how == "cell":
            rows = [r.split(",") for r in base.split("\n")]
            y = rng.randrange(len(rows) - 1)
            x = rng.randrange(len(rows[y]))
            rows[y][x] = rng.choice(["", "x", "nan", "inf", "1e999", "-1", "0", "../x", "a'b", '"q"'])
            body, what = "\n".join(",".join(r) for r in rows), f"line {y + 1} column {x + 1}"
        else:
            b = bytearray(base.encode() if isinstance(base, str) else json.dumps(base, indent=1).encode())
            if how == "cut":
                body, what = bytes(b[:rng.randrange(len(b))]), "cut"
            else:
                for _ in range(rng.randint(1, 4)):
                    b[rng.randrange(len(b))] = rng.randrange(256)
                body, what = bytes(b), "bytes"
        fs[p] = body
        c = Case(t, f"fuzz {i} {how} {what}"[:80], fs, p, expect="either")
        c.idx = i
        yield c


def run_cases(cases, build, deadline=None):
    """every case, JOBS at a time (until DEADLINE, a monotonic time, when one is given):
    (the cases done, what was left in the scratch directory)"""
    with tempfile.TemporaryDirectory(prefix="krepro-hostile-") as root:
        big = os.path.join(root, "big")
        with open(big, "wb") as f:
            f.truncate(BIG)
        # every run's limits: no 300 MB read whole, no 300 MB written (after the sparse file)
        resource.setrlimit(resource.RLIMIT_AS, (MEM, MEM))
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
        mods = load_scripts()
        done, todo, running = [], iter(cases), {}
        while True:
            while len(running) < JOBS and (deadline is None or time.monotonic() < deadline):
                c = next(todo, None)
                if c is None:
                    break
                running[start(c, root, build, big, mods)] = c
            if not running:
                break
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid:
                done.append(finish(running.pop(pid), os.waitstatus_to_exitcode(status)))
                continue
            for pid, c in running.items():
                if time.monotonic() - c.t0 > TIMEOUT:
                    os.killpg(pid, signal.SIGKILL)  # the case's own session: what it started too
                    os.waitpid(pid, 0)
                    done.append(finish(running.pop(pid), None))
                    break
            else:
                time.sleep(0.002)
        return done, [n for n in os.listdir(root) if n != "big"]


def main():
    args = sys.argv[1:]
    fuzz = seed = artifacts = None
    while args and args[0].startswith("--"):
        if args[0] in ("--fuzz", "--seed", "--artifacts") and len(args) > 1:
            if args[0] == "--artifacts":
                artifacts = args[1]
            else:
                try:
                    v = int(args[1])
                except ValueError:
                    v = -1
                if v < 0:
                    print(f"hostile_inputs: {args[0]}: a whole number, not {args[1]!r}")
                    sys.exit(128)
                fuzz, seed = (v, seed) if args[0] == "--fuzz" else (fuzz, v)
            args = args[2:]
        else:
            print(__doc__.split("\n\n")[-1].strip())
            sys.exit(128)
    build = os.path.abspath(args[0] if args else os.path.join(TOP, "build"))
    t0 = time.monotonic()
    if fuzz is None:
        cases, deadline = fixed_cases() + list(fuzz_cases(FUZZ)), None
        for i, c in enumerate(cases):
            c.idx = i
    else:
        # the fuzzer (suite fuzz): new mutations each run, from a seed it prints
        seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
        print(f"hostile_inputs: fuzzing for {fuzz} s from seed {seed}")
        cases, deadline = fuzz_cases(1 << 30, seed), t0 + fuzz
    if not shutil.which("gnuplot"):
        print("hostile_inputs: no gnuplot: scripts/plot's cases left out")
        cases = (c for c in cases if not c.target.startswith("plot"))
    done, left = run_cases(cases, build, deadline)
    failed = [c for c in done if c.why]
    for c in failed:
        print(f"FAIL: {c.target}: {c.name}: {'; '.join(c.why)}")
        if c.err:
            print("      stderr: " + c.err.split("\n")[-1][:200])
        if artifacts:  # the input, to replay: --seed SEED, or by hand
            d = os.path.join(artifacts, f"hostile-{seed}-{c.idx}")
            for rel, content in c.files.items():
                write(d, rel, content)
            print(f"      input: {d}/")
    slow = max(done, key=lambda c: c.seconds) if done else None
    print(f"hostile_inputs: {len(done)} inputs tried, {len(failed)} failed "
          f"({time.monotonic() - t0:.0f} s" +
          (f"; slowest {slow.seconds:.1f} s: {slow.target} {slow.name})" if slow else ")"))
    if left:
        print("hostile_inputs: left in the scratch directory: " + " ".join(left))
    sys.exit(1 if failed or left or not done else 0)


if __name__ == "__main__":
    main()
