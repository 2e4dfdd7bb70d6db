#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: KCIDB output (scripts/kcidb.py, scripts/labcheck --kcidb) against the
published KCIDB v4 schema's required fields and types (tests/kcidb_schema.json, the subset
krepro touches, checked with python3-jsonschema) plus what the schema states in words: no
null anywhere, date-time start times, IDs that start with the origin, links that resolve.

kcidb_test.py --build DIR              reports of real programs (SKIP: not root; ERROR: lock
                                       held) and PASS/FAIL variants of them; bad data and a
                                       bad origin must be rejected
kcidb_test.py --build DIR --labcheck   scripts/labcheck --kcidb on one program (needs root)
Exit 0 pass, 1 fail, 77 skip.
"""
import argparse, copy, datetime, json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
import kcidb  # noqa: E402

try:
    import jsonschema
except ImportError:
    # a python3 ahead of Debian's on PATH (pyenv) may lack it: Debian's has it (scripts/deps)
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and \
            os.access("/usr/bin/python3", os.X_OK):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("SKIP: no python3-jsonschema")
    sys.exit(77)

from checks import FAILS, check, finish, lock_held_elsewhere  # noqa: E402
with open(os.path.join(HERE, "kcidb_schema.json")) as f:
    VALIDATOR = jsonschema.Draft202012Validator(json.load(f))


def nulls(v, path=""):
    if v is None:
        return [path]
    if isinstance(v, dict):
        return [p for k, x in v.items() for p in nulls(x, f"{path}.{k}")]
    if isinstance(v, list):
        return [p for i, x in enumerate(v) for p in nulls(x, f"{path}[{i}]")]
    return []


def problems(doc):
    """Everything wrong with a KCIDB v4 document; [] when valid."""
    out = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(doc)]
    out += [f"null at {p}" for p in nulls(doc)]
    ids = {}
    for kind in ["checkouts", "builds", "tests"]:
        for o in doc.get(kind, []) if isinstance(doc.get(kind), list) else []:
            if not isinstance(o, dict):
                continue
            if not str(o.get("id", "")).startswith(f"{o.get('origin')}:"):
                out.append(f"{kind} id {o.get('id')!r} does not start with its origin")
            if o.get("id") in ids.setdefault(kind, set()):
                out.append(f"{kind}: duplicate id {o.get('id')}")
            ids[kind].add(o.get("id"))
            t = o.get("start_time")
            if t is not None:
                try:
                    if datetime.datetime.fromisoformat(str(t)).tzinfo is None:
                        out.append(f"{kind} start_time {t} has no time zone")
                except ValueError:
                    out.append(f"{kind} start_time {t!r} is not date-time")
    for b in doc.get("builds", []) if isinstance(doc.get("builds"), list) else []:
        if isinstance(b, dict) and b.get("checkout_id") not in ids.get("checkouts", set()):
            out.append(f"build {b.get('id')}: no checkout {b.get('checkout_id')}")
    for t in doc.get("tests", []) if isinstance(doc.get("tests"), list) else []:
        if isinstance(t, dict) and t.get("build_id") not in ids.get("builds", set()):
            out.append(f"test {t.get('id')}: no build {t.get('build_id')}")
    return out


def check_results(doc, results, origin, what):
    p = problems(doc)
    check(not p, f"{what}: not valid KCIDB v4: {p[:5]}")
    tests = doc.get("tests", [])
    check(len(tests) == len(results), f"{what}: {len(tests)} tests for {len(results)} results")
    for t, r in zip(tests, results):
        check(t.get("path") == "krepro." + r["program"], f"{what}: path {t.get('path')}")
        check(t.get("status") == r["verdict"], f"{what}: status {t.get('status')} for {r['verdict']}")
        check(t.get("origin") == origin, f"{what}: origin {t.get('origin')}")
        misc = t.get("misc", {})
        check(misc.get("exit_code") == r.get("exit_code"), f"{what}: misc.exit_code")
        check(misc.get("metric", {}).get("name") == r["metric"]["name"], f"{what}: misc.metric {misc.get('metric')}")
        if r["verdict"] in ("PASS", "FAIL"):
            check(isinstance(misc["metric"].get("value"), (int, float)), f"{what}: metric value")
        else:
            check(bool(misc.get("reason")), f"{what}: {r['verdict']} without misc.reason")
        check(bool(t.get("environment", {}).get("misc")), f"{what}: no environment.misc")
        check(t.get("comment") == r.get("verdict_line"), f"{what}: comment {t.get('comment')!r}")


def program_reports(build):
    """Real reports: SKIP (not root) and ERROR (lock held) of every program, and PASS and
    FAIL variants of one (a measured PASS/FAIL needs a real run: --labcheck)."""
    from krstate import PROGRAMS
    reports = []
    with lock_held_elsewhere("krepro-kcidb-") as env:
        for name in PROGRAMS:
            exe = os.path.join(build, name, name)
            for argv in (["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"], []):
                if argv and os.geteuid() != 0:
                    continue
                p = subprocess.run(argv + [exe, "--format", "json"], capture_output=True, text=True, env=env)
                d = json.loads(p.stdout)
                d["duration_s"], d["start_time"] = 0.1, 1795000000.0
                reports.append(d)
    base = reports[0]
    for verdict, value, code in [("PASS", 1.5, 0), ("FAIL", 84.1, 1)]:
        d = copy.deepcopy(base)
        d.update(verdict=verdict, exit_code=code, reason=None, verdict_line=f"{d['program']}: {verdict} x")
        d["metric"]["value"] = value
        d["start_time"] = "2026-11-23T16:33:09.123456+00:00"
        reports.append(d)
    return reports


def offline(build):
    results = program_reports(build)
    verdicts = sorted({r["verdict"] for r in results})
    check(verdicts == (["ERROR", "FAIL", "PASS", "SKIP"] if os.geteuid() == 0 else ["ERROR", "FAIL", "PASS"]),
          f"report verdicts {verdicts}")
    doc = kcidb.from_results(results, origin="krepro_ci")
    check_results(doc, results, "krepro_ci", "from_results")
    check(doc["version"] == {"major": 4, "minor": 0}, f"version {doc['version']}")
    check(len(doc["checkouts"]) == 1 and len(doc["builds"]) == 1, "one checkout and one build for one kernel")
    # a matrix: results from two kernels give two builds
    other = copy.deepcopy(results[0])
    other.update(kernel="6.1.0-31-amd64", kernel_version="#1 SMP Debian 6.1.128-1", arch="x86_64")
    doc2 = kcidb.from_results(results[:1] + [other], origin="krepro_ci")
    check(not problems(doc2) and len(doc2["builds"]) == 2 and len(doc2["checkouts"]) == 2,
          f"two kernels: {len(doc2['builds'])} builds, {problems(doc2)[:3]}")
    # the CLI on a labcheck --json document
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump({"kernel": os.uname().release, "results": results}, f)
        f.flush()
        p = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "kcidb.py"), "--origin", "lab_1", f.name],
                           capture_output=True, text=True)
        check(p.returncode == 0, f"kcidb.py exit {p.returncode}: {p.stderr}")
        if p.returncode == 0:
            check_results(json.loads(p.stdout), results, "lab_1", "kcidb.py CLI")
        p = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "kcidb.py"), "--origin", "Lab-1", f.name],
                           capture_output=True, text=True)
        check(p.returncode == 128 and "origin" in p.stderr, f"bad origin: exit {p.returncode} {p.stderr!r}")
    # the checker itself must reject what the schema rejects
    bad = {
        "status not in the enum": lambda d: d["tests"][0].update(status="BROKEN"),
        "no origin": lambda d: d["tests"][0].pop("origin"),
        "a null property": lambda d: d["tests"][0]["misc"].update(reason=None),
        "a path with a space": lambda d: d["tests"][0].update(path="krepro.fib test"),
        "an unknown property": lambda d: d["tests"][0].update(metric=1),
        "major version 5": lambda d: d["version"].update(major=5),
        "a dangling build_id": lambda d: d["tests"][0].update(build_id="krepro_ci:nope"),
        "duration as a string": lambda d: d["tests"][0].update(duration="1.0"),
        "a start_time without zone": lambda d: d["tests"][0].update(start_time="2026-11-23T16:33:09"),
        "an id of another origin": lambda d: d["builds"][0].update(id="other:1"),
    }
    for what, mutate in bad.items():
        d = copy.deepcopy(doc)
        mutate(d)
        check(problems(d), f"the checker accepted {what}")
    try:
        kcidb.from_results(results, origin="Krepro CI")
        check(False, "from_results accepted an origin with capitals and a space")
    except ValueError:
        pass


def labcheck(build):
    if os.geteuid() != 0:
        print("SKIP: labcheck needs root")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="krepro-kcidb-") as tmp:
        out, js = os.path.join(tmp, "kcidb.json"), os.path.join(tmp, "labcheck.json")
        p = subprocess.run([os.path.join(TOP, "scripts", "labcheck"), "--build", build, "--programs", "fibtest",
                            "--json", js, "--kcidb", out, "--kcidb-origin", "krepro_test"],
                           capture_output=True, text=True, timeout=600)
        print(p.stdout + p.stderr, end="")
        if not check(os.path.exists(out) and os.path.exists(js), "labcheck wrote no --kcidb/--json file"):
            return
        with open(out) as f:
            doc = json.load(f)
        with open(js) as f:
            results = json.load(f)["results"]
        # another krepro run holding the lock longer than labcheck waits is an ERROR, and
        # must come out as a valid KCIDB ERROR; anything else must be a verdict
        busy = all("holds /run/krepro/lock" in (r.get("reason") or "") for r in results)
        check(p.returncode in (0, 1) or (p.returncode == 128 and busy), f"labcheck exit {p.returncode}")
        check_results(doc, results, "krepro_test", "labcheck --kcidb")
        print(json.dumps(doc["tests"][0], indent=1)[:1500])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--labcheck", action="store_true")
    a = ap.parse_args()
    labcheck(a.build) if a.labcheck else offline(a.build)
    finish()


if __name__ == "__main__":
    main()
