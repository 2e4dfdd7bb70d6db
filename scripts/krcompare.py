#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: run a krepro program N times on each of two sides (two kernels in guests,
two commits of one tree, or two sets of options on this machine) and compare the runs as
the kernel test robot (LKP) does: the verdict counts, the metric's mean, %stddev and
%change, and whether the two sets of runs are separate.

Used by scripts/compare (its command line), scripts/vm/kernel-bisect (the culprit check)
and scripts/report (the mail). Reads each run's `--format json` report, and of it only
verdict, exit_code, metric {name, value, unit}, threshold, rule, environment and
known_causes (or causes): never the text.

Separate, as lkp-tests judges a change (lib/stats.rb, StatSummary and the gap rule of
is_changed_stats / ChangedStat#change? with its default gap distance 2; krepro's own code):
on each side the conclusive runs (PASS or FAIL with a metric value), at least MIN_RUNS of
them, sorted, n/32 of them (at most 3) trimmed off each end as outliers; each side's min,
median and max of what is left; then the two ranges do not overlap, the gap between them
is more than half the difference of the medians, and the higher median is more than
MIN_CHANGE (the metric; MIN_CHANGE_OTHER for the other measurements) above the lower.
MIN_RUNS is the smallest n whose self-compares (one kernel against itself, on recorded
runs) are called separate in under 5 % of draws: tests/compare_test.py measures it.

The direction: each program declares on which side of its threshold a FAIL lies
(struct kr_prog .fail_below, "fail_when" in its JSON report): that side is worse, so
a separate change towards it is a regression, away from it an improvement; a is the base.
"""
import atexit, datetime, fcntl, hashlib, json, math, os, re, stat, subprocess, textwrap, time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
CACHE = os.environ.get("KREPRO_CACHE", "/var/cache/krepro")
WIDTH = 72
MIN_RUNS = 5          # conclusive runs a side before a change can be called separate
MIN_CHANGE = 0.01     # the metric: LKP's floor for a test's own (perf) metrics
MIN_CHANGE_OTHER = 0.05  # the other measurements: LKP's floor for other stats
GAP_DISTANCE = 2      # the gap must exceed (difference of the medians) / GAP_DISTANCE
MAX_ROWS = 8   # measurements shown under the metric: those that changed (separate)
WORDS = {0: "PASS", 1: "FAIL", 125: "SKIP", 129: "SKIP"}
ORDER = ["FAIL", "PASS", "SKIP", "ERROR"]


class Usage(Exception):
    pass


_UNWRITTEN = []


def _drop_unwritten():
    for path, f in _UNWRITTEN:
        if not f.closed:
            f.close()
            try:  # only what output_file created, still empty
                if os.lstat(path).st_size == 0:
                    os.unlink(path)
            except OSError:
                pass


def output_file(path, what="--json"):
    """an output FILE opened before the runs (issue 42: a bad path failed after them, an
    hour of guest runs lost): a new file, never through a link, never over one that exists
    (a run as root replaces nothing); written at the end by write_output, removed again if
    the script ends before it writes it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
    except FileExistsError:
        raise Usage(f"{what} {path}: exists (name a new file)")
    except OSError as e:
        raise Usage(f"{what} {path}: {e.strerror}")
    f = os.fdopen(fd, "w")
    if not _UNWRITTEN:
        atexit.register(_drop_unwritten)
    _UNWRITTEN.append((path, f))
    return f


def write_output(f, text):
    f.seek(0)
    f.truncate()
    f.write(text)
    f.close()


def word(code):
    return WORDS.get(code, "ERROR")


# ---- the program's options --------------------------------------------------------------------

def json_args(args):
    """ARGS with the output options taken out and --format json added: a run's numbers are
    read from its JSON report, whatever the user's predicate printed."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("--format", "--csv"):
            skip = True
        elif a == "--quiet" or a.startswith(("--format=", "--csv=")):
            pass
        else:
            out.append(a)
    return out + ["--format", "json"]


def program_path(prog, static):
    """A path, or a program name: build-static/NAME/NAME (guests) or build/NAME/NAME."""
    if os.sep in prog:
        return os.path.abspath(prog)
    build = os.environ.get("KREPRO_BUILD") if not static else None
    build = build or os.path.join(TOP, "build-static" if static else "build")
    return os.path.join(build, prog, prog)


# ---- kernels ----------------------------------------------------------------------------------

def kernel_spec(spec, tree=None, flock=None, config=None):
    """A kernel to boot: {"image", "config" (or None), "expect": {release, utsversion} or None,
    "name"}. SPEC: a Debian flavour (scripts/vm/debian-kernel: amd64, 6.12-amd64, rt-amd64,
    ...), built:NAME (scripts/vm/build-kernels), commit:REV (built from TREE with
    bisect-kernel --build-only), a directory bisect-kernel --build-only wrote, or a bzImage."""
    if spec.startswith("commit:"):
        if not tree:
            raise Usage(f"{spec}: needs --tree (the kernel tree to build it from)")
        return build_commit(tree, spec[len("commit:"):], flock, config=config)
    if spec.startswith("built:"):
        d = os.path.join(CACHE, "kernels", spec[len("built:"):])
        if not os.path.isfile(os.path.join(d, "bzImage")):
            raise Usage(f"{spec}: no {d}/bzImage (scripts/vm/build-kernels {spec[6:]})")
        return built_dir(d, spec)
    if os.path.isdir(spec):
        if not os.path.isfile(os.path.join(spec, "bzImage")):
            raise Usage(f"{spec}: a directory without bzImage")
        return built_dir(spec, spec)
    if os.sep in spec:
        if not os.path.isfile(spec):
            raise Usage(f"{spec}: no such kernel image")
        return {"image": os.path.abspath(spec), "config": None, "expect": None, "name": spec}
    r = subprocess.run([os.path.join(HERE, "vm", "debian-kernel"), spec], text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode:
        raise Usage(f"kernel {spec}: {r.stderr.strip()}")
    return {"image": r.stdout.strip(), "config": None, "expect": None, "name": spec}


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def built_dir(d, name):
    """a directory with bzImage, release and (from bisect-kernel --build-only) utsversion"""
    rel = read(os.path.join(d, "release")) or None
    cfg = os.path.join(d, "config-" + rel) if rel else None
    expect = {"release": rel, "utsversion": read(os.path.join(d, "utsversion")) or None} if rel else None
    k = {"image": os.path.join(os.path.abspath(d), "bzImage"),
         "config": cfg if cfg and os.path.isfile(cfg) else None, "expect": expect, "name": name}
    commit = read(os.path.join(d, "commit"))
    if commit:
        k["commit"] = commit
        k["config_hash"] = read(os.path.join(d, "config-hash"))
    return k


def open_lock(path):
    """a lock file (flock(2) only, never written), as root in a shared /tmp: made if
    missing, never through a link (issue 42: a user's dangling link there made root create
    its target), a regular file"""
    try:
        # O_NONBLOCK: a FIFO put there would block the open until a writer came
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK |
                     os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise Usage(f"lock {path}: {e.strerror}")
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise Usage(f"lock {path}: not a regular file")
    return f


def locked(cmd, flock, **kw):
    """run CMD, holding FLOCK (flock(2), as flock(1) does) when asked: one hold per build
    or run. The result's .seconds counts from when the lock was had."""
    f = None
    if flock:
        f = open_lock(flock)
        fcntl.flock(f, fcntl.LOCK_EX)
    t0 = time.monotonic()
    try:
        try:
            r = subprocess.run(cmd, **kw)
        except subprocess.TimeoutExpired as e:
            r = subprocess.CompletedProcess(cmd, 125, "", f"no result within {e.timeout} s")
    finally:
        if f:
            f.close()
    r.seconds = time.monotonic() - t0
    return r


def build_commit(tree, rev, flock=None, dest=None, config=None):
    """build REV of TREE with bisect-kernel --build-only into DEST (default: under the cache,
    by commit and config); the checkout of TREE is restored after."""
    g = lambda *a: subprocess.run(["git", "-C", tree] + list(a), text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    r = g("rev-parse", "--verify", "-q", rev + "^{commit}")
    if r.returncode:
        raise Usage(f"commit:{rev}: no such commit in {tree}")
    commit = r.stdout.strip()
    if g("diff", "--quiet", "HEAD").returncode:
        raise Usage(f"{tree} has local changes")
    head = g("symbolic-ref", "-q", "--short", "HEAD").stdout.strip() or g("rev-parse", "HEAD").stdout.strip()
    dest = dest or os.path.join(CACHE, "kernels", "commit-" + commit[:12])
    if not os.path.isfile(os.path.join(dest, "bzImage")) or read(os.path.join(dest, "commit")) != commit:
        saved = None
        cfg = os.path.join(tree, ".config")
        if os.path.isfile(cfg):
            with open(cfg) as f:
                saved = f.read()
        env = dict(os.environ)
        if config:
            env["KREPRO_BISECT_CONFIG"] = os.path.abspath(config)
        try:
            g("checkout", "-q", "--detach", commit)
            r = locked([os.path.join(HERE, "vm", "bisect-kernel"), "--build-only", dest], flock,
                       cwd=tree, env=env)
        finally:
            g("checkout", "-q", head)
            if saved is not None:
                with open(cfg, "w") as f:
                    f.write(saved)
        if r.returncode:
            raise Usage(f"commit:{rev} ({commit[:12]}) does not build (exit {r.returncode})")
    k = built_dir(dest, rev)
    k["name"] = rev
    return k


# ---- one run --------------------------------------------------------------------------------------

def parse_report(stdout):
    """the program's JSON report in STDOUT (the last line that parses), or None"""
    text = stdout.strip()
    if text.startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            pass
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def run_once(side, prog, args, flock=None, timeout=900):
    """one run of PROG on SIDE (a dict: "kernel" from kernel_spec, or None for this machine,
    "vmrun" options): a result dict. A guest must boot the kernel it was given."""
    cmd_args = json_args(args + side.get("args", []))
    k = side.get("kernel")
    if k:
        cmd = [os.path.join(HERE, "vmrun"), "-v", "--kernel", k["image"]]
        if k.get("config"):
            cmd += ["--config", k["config"]]
        cmd += side.get("vmrun", []) + ["--", prog] + cmd_args
    else:
        cmd = [prog] + cmd_args
        if not any(a == "--wait" or a.startswith("--wait=") for a in cmd_args):
            cmd += ["--wait", "600"]
    p = locked(cmd, flock, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    code, out, err = p.returncode, p.stdout or "", p.stderr or ""
    res = {"exit_code": code, "seconds": round(p.seconds, 1), "verdict": word(code),
           "value": None, "verdict_line": None, "release": None, "reason": None}
    if k:
        # the last "booting ... with KVM|TCG" (vmrun falls back to TCG when KVM fails)
        acc = re.findall(r"^vmrun: booting \S+ with (KVM|TCG)", err, re.M)
        res["accel"] = acc[-1] if acc else None
        m = re.search(r"^vmrun: guest booted (\S+) in ", err, re.M)
        v = re.search(r"^vmrun: vmrun-guest: uname -v (.*)$", err, re.M)
        res["release"] = m.group(1) if m else None
        exp = k.get("expect")
        if m and exp and (m.group(1) != exp["release"] or
                          (v and exp.get("utsversion") and v.group(1) != exp["utsversion"])):
            raise Usage(f"the guest booted {m.group(1)} ({v.group(1) if v else '?'}), not the "
                        f"kernel built as {exp['release']} ({exp.get('utsversion')})")
    else:
        res["release"], res["accel"] = os.uname().release, "bare"
    rep = parse_report(out)
    if rep is None:
        tail = [l for l in err.strip().splitlines() if l.strip()][-1:] or ["no report"]
        # 124: vmrun's "the program started, then no exit code" (a hang, a panic)
        res.update(verdict={125: "SKIP", 124: "HANG"}.get(code, "ERROR"), reason=tail[0][:200])
        return res
    metric = rep.get("metric") or {}
    val = metric.get("value")
    res.update(verdict=rep.get("verdict") or word(code), exit_code=rep.get("exit_code", code),
               value=val if isinstance(val, (int, float)) and math.isfinite(val) else None,
               metric=metric.get("name"), unit=metric.get("unit") or "",
               threshold=rep.get("threshold"), rule=rep.get("rule"), reason=rep.get("reason"),
               fail_when=rep.get("fail_when"),
               verdict_line=rep.get("verdict_line"), program=rep.get("program"),
               measurements={k: v for k, v in (rep.get("measurements") or {}).items()
                             if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)},
               environment=rep.get("environment") or {},
               causes=rep.get("causes", rep.get("known_causes")) or [])
    return res


# ---- provenance: what measured, where, when --------------------------------------------------

def first_line(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    line = (p.stdout or "").strip().split("\n")[0].strip()
    return line if p.returncode == 0 and line else None


def revision():
    """krepro's revision (git describe --always --dirty), or "unknown" outside a checkout"""
    return first_line(["git", "-C", TOP, "describe", "--always", "--dirty"]) or "unknown"


def host_accelerator():
    """how this machine runs: "bare metal", or "a VM" (the hypervisor flag of /proc/cpuinfo)"""
    flags = re.search(r"^flags\s*:(.*)$", read("/proc/cpuinfo"), re.M)
    return "a VM" if flags and " hypervisor" in flags.group(1) else "bare metal"


def host_info():
    """the machine that ran the compare: name, kernel, CPU model and count, memory"""
    cpu = re.search(r"^model name\s*:\s*(.*)$", read("/proc/cpuinfo"), re.M)
    mem = re.search(r"^MemTotal:\s*(\d+) kB", read("/proc/meminfo"), re.M)
    u = os.uname()
    return {"name": u.nodename, "kernel": u.release, "machine": u.machine,
            "cpu": cpu.group(1).strip() if cpu else None, "cpus": os.cpu_count(),
            "memory_mib": int(mem.group(1)) // 1024 if mem else None, "runs_on": host_accelerator()}


def program_compiler(prog):
    """the compiler that built PROG (build/NAME/NAME): the one meson's build dir names,
    asked for its version"""
    intro = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(prog))),
                         "meson-info", "intro-targets.json")
    try:
        with open(intro) as f:
            cc = next(s["compiler"] for t in json.load(f) for s in t.get("target_sources", [])
                      if s.get("language") == "c" and s.get("compiler"))
    except (OSError, ValueError, KeyError, TypeError, StopIteration):
        return None
    return first_line(cc + ["--version"])


def kernel_compiler(k):
    """CONFIG_CC_VERSION_TEXT of kernel K's config (kernel_spec's dict), where its config
    is known: its "config", or a config-RELEASE beside a vmlinuz-RELEASE (Debian's /boot)"""
    if not isinstance(k, dict):
        return None
    config = k.get("config")
    img = k.get("image") or ""
    if not config and os.path.basename(img).startswith("vmlinuz-"):
        config = os.path.join(os.path.dirname(img), "config-" + os.path.basename(img)[len("vmlinuz-"):])
    m = re.search(r'^CONFIG_CC_VERSION_TEXT="(.*)"$', read(config) if config else "", re.M)
    return m.group(1) if m else None


def provenance(sides, prog=None, started=None, qemu="qemu-system-x86_64"):
    """what compare.json records of where and when it measured: krepro's revision, the
    timestamps, the host, each side's accelerator (KVM, TCG, or bare: this machine), the
    qemu and compiler versions where they are known (None where not)"""
    guests = any(s.get("kernel") for s in sides)
    accels = sorted({r.get("accel") or "unknown" for s in sides for r in s.get("runs", [])})
    return {"krepro": revision(), "started": started,
            "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": host_info(), "accelerator": "/".join(accels) if accels else None,
            "qemu": first_line([qemu, "--version"]) if guests else None,
            "compiler": program_compiler(prog) if prog else None,
            "kernel_compilers": [kernel_compiler(s.get("kernel")) for s in sides]}


# ---- statistics and the table --------------------------------------------------------------------

def trimmed(vals):
    """LKP's StatSummary of VALS: sorted, n >> 5 (at most 3) values cut off each end (none
    below 32 runs), and the min, median (the middle value, n // 2, as LKP's "mean") and max
    of what is left"""
    v = sorted(vals)
    cut = min(len(v) >> 5, 3)
    v = v[cut:len(v) - cut] if cut else v
    if not v:
        return None
    return {"n": len(v), "trimmed": cut, "min": v[0], "median": v[len(v) // 2], "max": v[-1],
            "integers": all(float(x).is_integer() for x in v)}


def stats(runs, metric=None, measurement=None):
    """counts per verdict, and mean, stddev (n-1), %stddev, min, max of the metric (or of
    one of the JSON's measurements) over the conclusive runs (PASS or FAIL with a value; a
    SKIP's precondition was not met); "lkp": the trimmed summary the rule reads"""
    counts = {}
    for r in runs:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    if measurement:
        vals = [r["measurements"][measurement] for r in runs if r["verdict"] in ("PASS", "FAIL")
                and (r.get("measurements") or {}).get(measurement) is not None]
    else:
        vals = [r["value"] for r in runs if r["verdict"] in ("PASS", "FAIL") and r.get("value") is not None
                and (metric is None or r.get("metric") == metric)]
    s = {"runs": len(runs), "counts": counts, "n": len(vals), "mean": None, "stddev": None,
         "stddev_pct": None, "min": None, "max": None, "lkp": trimmed(vals)}
    if vals:
        mean = sum(vals) / len(vals)
        sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else 0.0
        s.update(mean=mean, stddev=sd, min=min(vals), max=max(vals),
                 stddev_pct=100 * sd / abs(mean) if mean else None)
    return s


def judge(a, b, min_change=MIN_CHANGE, min_runs=None):
    """(separate, why) for the stats A and B: LKP's rule (see the top of this file), with
    why the words of the table's last line"""
    min_runs = MIN_RUNS if min_runs is None else min_runs
    if a["n"] < min_runs or b["n"] < min_runs:
        return False, "fewer than %d conclusive runs a side (%d, %d)" % (min_runs, a["n"], b["n"])
    la, lb = a["lkp"], b["lkp"]
    if not la or not lb:  # a record whose counts and summaries disagree
        return False, "no trimmed summary of the runs"
    lo, hi = (la, lb) if la["median"] <= lb["median"] else (lb, la)
    if hi["min"] <= lo["max"]:
        return False, "the ranges overlap"
    gap, diff = hi["min"] - lo["max"], hi["median"] - lo["median"]
    if gap * GAP_DISTANCE <= diff:
        return False, "gap %s <= 1/%d of the medians' distance %s" % (fmt(gap), GAP_DISTANCE, fmt(diff))
    if la["integers"] and lb["integers"] and gap == 1:
        return False, "integer counts 1 apart"
    ratio = hi["median"] / lo["median"] if lo["median"] > 0 else math.inf
    if ratio <= 1 + min_change:
        return False, "the medians differ by %.1f%%, not over %g%%" % (100 * (ratio - 1), 100 * min_change)
    return True, "gap %s > 1/%d of the medians' distance %s" % (fmt(gap), GAP_DISTANCE, fmt(diff))


def separate(a, b, min_change=MIN_CHANGE, min_runs=None):
    """LKP's rule: see judge()"""
    return judge(a, b, min_change, min_runs)[0]


def direction(cmp):
    """"regression", "improvement" (b against the base a, from the side the program's FAIL
    lies on), "change" (a program that declares none), or None (not separate)"""
    if not cmp.get("separate") or cmp.get("change_pct") is None:
        return None
    if not all(s["stats"].get("lkp") for s in cmp["sides"]):
        return "change"
    worse = (cmp.get("metric") or {}).get("worse")
    if worse not in ("higher", "lower"):
        return "change"
    up = cmp["sides"][1]["stats"]["lkp"]["median"] > cmp["sides"][0]["stats"]["lkp"]["median"]
    return "regression" if up == (worse == "higher") else "improvement"


def accelerators(cmp):
    """how each side ran: KVM, TCG or bare, from what vmrun said of each run, else (records
    from before) from --accel in the vmrun options or the guest's CPU name"""
    out = []
    for s in cmp["sides"]:
        acc = {r.get("accel") for r in s.get("runs", []) if r.get("accel")}
        if not acc:
            vm = " ".join(s.get("vmrun") or [])
            cpu = (s.get("environment") or {}).get("cpu") or ""
            acc = {"TCG"} if "--accel tcg" in vm or "TCG" in cpu else \
                {"KVM"} if "--accel kvm" in vm else {"bare"} if not s.get("kernel") else {"unknown"}
        out.append("/".join(sorted(acc)))
    return out


def change_pct(a, b):
    if a["mean"] is None or b["mean"] is None or a["mean"] == 0:
        return None
    return 100 * (b["mean"] - a["mean"]) / abs(a["mean"])


def compare(sides, metric=None):
    """the comparison of two sides' runs: a dict (written as JSON by scripts/compare)"""
    if metric is None:
        names = [r.get("metric") for s in sides for r in s["runs"] if r.get("metric")]
        metric = max(set(names), key=names.count) if names else None
    any_run = next((r for s in sides for r in s["runs"] if r.get("metric") == metric), {})
    # the program's declaration: FAIL below the threshold (lower is worse) or above it;
    # runs recorded before reports carried it: the side of the threshold their FAILs lie on
    fail_when = next((r["fail_when"] for s in sides for r in s["runs"] if r.get("fail_when")), None)
    if fail_when is None:
        fails = {"below" if r["value"] < r["threshold"] else "above" for s in sides for r in s["runs"]
                 if r["verdict"] == "FAIL" and r.get("metric") == metric and
                 isinstance(r.get("value"), (int, float)) and isinstance(r.get("threshold"), (int, float))
                 and r["value"] != r["threshold"]}
        fail_when = fails.pop() if len(fails) == 1 else None
    out = {"kind": "krepro-compare", "version": 2, "program": any_run.get("program"),
           "metric": {"name": metric, "unit": any_run.get("unit", ""),
                      "worse": {"below": "lower", "above": "higher"}.get(fail_when)},
           "threshold": any_run.get("threshold"), "rule": any_run.get("rule"),
           "separate_rule": "LKP's (lkp-tests lib/stats.rb): at least %d conclusive runs a side, "
                            "n/32 (at most 3) trimmed off each end, the ranges [min, max] apart by "
                            "more than 1/%d of the difference of the medians, and the medians more "
                            "than %g%% apart (%g%% for the other measurements)"
                            % (MIN_RUNS, GAP_DISTANCE, 100 * MIN_CHANGE, 100 * MIN_CHANGE_OTHER),
           "base": "a", "sides": []}
    for s in sides:
        st = stats(s["runs"], metric)
        causes = []
        for r in s["runs"]:
            for c in r.get("causes") or []:
                if c not in causes:
                    causes.append(c)
        env = next((r["environment"] for r in s["runs"] if r.get("environment")), {})
        out["sides"].append(dict({k: v for k, v in s.items() if k != "kernel"},
                                 kernel=(s.get("kernel") or {}).get("name"),
                                 image=(s.get("kernel") or {}).get("image"),
                                 commit=(s.get("kernel") or {}).get("commit"),
                                 stats=st, causes=causes, environment=env))
    a, b = out["sides"][0]["stats"], out["sides"][1]["stats"]
    out["change_pct"] = change_pct(a, b)
    out["separate"], out["separate_why"] = judge(a, b)
    out["direction"] = direction(out)
    out["accelerators"] = accelerators(out)
    # the other numbers the runs report (JSON measurements): those that changed, LKP-like
    out["measurements"] = []
    keys = []
    for s in sides:
        for r in s["runs"]:
            keys += [k for k in r.get("measurements") or {} if k not in keys]
    for k in keys:
        if k == metric:
            continue
        ma, mb = (stats(s["runs"], measurement=k) for s in sides)
        if ma["n"] and mb["n"]:
            out["measurements"].append({"name": k, "stats": [ma, mb], "change_pct": change_pct(ma, mb),
                                        "separate": separate(ma, mb, MIN_CHANGE_OTHER)})
    return out


def fmt(v):
    """three significant digits, as the programs print their metrics"""
    if v is None or not math.isfinite(v):
        return "n/a"
    a = abs(v)
    return ("%.0f" if a >= 100 else "%.1f" if a >= 10 else "%.2f" if a >= 1 or a == 0 else
            "%.3f" if a >= 0.1 else "%.3g") % v


def counts_text(st):
    c = st["counts"]
    if len(c) == 1:
        (w, n), = c.items()
        return f"{w} {n}/{st['runs']}"
    return " ".join(f"{w[0]}{c[w]}" for w in ORDER if w in c) + f" /{st['runs']}"


def cell(st):
    if st["mean"] is None:
        return "n/a"
    pct = st["stddev_pct"]
    return fmt(st["mean"]) + (" ± %2.0f%%" % pct if pct is not None and pct >= 0.5 else "")


def pct_text(chg):
    """%change as LKP prints it, without the tenths from 1000 % on: the column is 10 wide"""
    if chg is None:
        return "n/a"
    return ("%+.0f%%" if abs(chg) >= 1000 else "%+.1f%%") % chg


def side_label(s, width=27):
    """the side's title in WIDTH columns: a long one keeps its end, where two titles differ
    (rt-culprit~1 and rt-culprit, 6.1.0-56-amd64 and 6.1.0-57-amd64, two bzImage paths)"""
    lab = s.get("label") or s.get("kernel") or "this machine"
    return lab if len(lab) <= width else "~" + lab[-(width - 1):]


NAME_WIDTH = WIDTH - 46   # what a row leaves for the name after its three columns


def row_name(prog, name, unit=""):
    """LKP's program.metric; the bare metric where that does not fit (the header names the
    program), shortened with a ~ only where even that does not"""
    for n in (f"{prog}.{name}", name):
        full = n + (f" ({unit})" if unit else "")
        if len(full) <= NAME_WIDTH:
            return full
    return name if len(name) <= NAME_WIDTH else name[:NAME_WIDTH - 1] + "~"


def span(st, width=16):
    """min .. max within a column: without the spaces, then with two digits, where wider"""
    if not st["n"]:
        return "n/a"
    lo, hi = fmt(st["min"]), fmt(st["max"])
    for t in (f"{lo} .. {hi}", f"{lo}..{hi}", "%.2g..%.2g" % (st["min"], st["max"])):
        if len(t) <= width:
            return t
    return t


def table(cmp):
    """the LKP-style table of a comparison, every line within 72 columns"""
    a, b = cmp["sides"]
    sa, sb = a["stats"], b["stats"]
    m = cmp["metric"]
    prog = cmp.get("program") or "krepro"
    chg = cmp.get("change_pct")
    chg_t = pct_text(chg)
    row = lambda x, c, y, lab: f"{x:>16} {c:>10} {y:>16}  {lab}".rstrip()
    lines = []
    acc = cmp.get("accelerators") or accelerators(cmp)
    tcg = [t for t, x in zip("ab", acc) if "TCG" in x]
    if tcg:
        # the first thing a reader sees: these timings are an emulator's
        lines += ["TCG (%s): emulated CPUs, timings are not the hardware's" %
                  ("both sides" if len(tcg) == 2 else "side " + tcg[0] + " only")]
    lines += [f"{side_label(a, 16):>16} {side_label(b):>27}", "-" * 16 + " " + "-" * 27,
              row("%stddev", "%change", "%stddev", ""), row("\\", "|", "\\", ""),
              row(counts_text(sa), "", counts_text(sb), "verdicts"),
              row(cell(sa), chg_t, cell(sb), row_name(prog, m["name"], m.get("unit"))),
              row(span(sa), "", span(sb), "min .. max")]
    shown = [m for m in cmp.get("measurements") or [] if m["separate"]][:MAX_ROWS]
    for m in shown:
        c = m["change_pct"]
        lines.append(row(cell(m["stats"][0]), pct_text(c), cell(m["stats"][1]),
                         row_name(prog, m["name"])))
    lines = [l[:WIDTH] for l in lines]
    sep, why = cmp["separate"], cmp.get("separate_why")
    if why is None:
        sep, why = judge(sa, sb)
    runs = "%d and %d runs" % (sa["n"], sb["n"])
    lines += [""] + textwrap.wrap(("separate (%s): %s" if sep else "not separate (%s): %s") % (runs, why),
                                  WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    worse = cmp["metric"].get("worse")
    d = cmp.get("direction") if "direction" in cmp else direction(cmp)
    if d:
        name = cmp["metric"]["name"]
        what = (f"{d} ({'a ' + worse + ' ' + name + ' is worse' if worse else 'no direction declared'}"
                f"): {chg_t} on b ({side_label(b, 16)}) against the base a ({side_label(a, 16)})")
    else:
        what = f"no change called: b ({side_label(b, 16)}) against the base a ({side_label(a, 16)})"
    lines += textwrap.wrap(what, WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    return "\n".join(lines)


def header(cmp):
    """the lines above the table: each side (label, release, where, options), the verdicts"""
    sides = cmp["sides"]
    w = min(16, max(len(side_label(s, 16)) for s in sides))
    lines = []
    for tag, s in zip("ab", sides):
        rel = sorted({r["release"] for r in s["runs"] if r.get("release")})
        args = " ".join(s.get("args") or [])
        parts = [", ".join(rel)] + [s.get("where") or ""] + ["options " + args if args else ""] + \
            ["commit " + s["commit"][:12] if s.get("commit") and s["commit"][:12] != s.get("label") else ""]
        text = f"{tag}: {side_label(s, 16):<{w}}  " + ", ".join(p for p in parts if p)
        lines += textwrap.wrap(text, WIDTH, subsequent_indent=" " * (w + 5), break_on_hyphens=False)
    lines.append("verdict: %s -> %s (a is the base)" % (counts_text(sides[0]["stats"]),
                                                        counts_text(sides[1]["stats"])))
    return "\n".join(lines)
