#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: krepro results as KernelCI's KCIDB I/O data, schema v4 (version 4.0, whose
fields every later 4.x accepts): one checkout and one build per kernel tested, and one test
per program run, with path "krepro.<program>", status PASS/FAIL/SKIP/ERROR, the metric,
threshold and rule under misc, and the program's environment under environment.misc.

Used by scripts/labcheck --kcidb FILE, and by anything else holding program reports:

    import kcidb
    doc = kcidb.from_results(results, origin="mylab")   # a dict, ready for json.dump

Each result is a program's --format json report (as labcheck keeps it), optionally with
"duration_s", "start_time" (ISO 8601, or seconds since the epoch), and "kernel" /
"kernel_version" / "arch" when it ran in another kernel than this machine's (a matrix over
guest kernels). The CLI converts a `labcheck --json` document:

    scripts/kcidb.py [--origin NAME] LABCHECK.json > kcidb.json     (then: kcidb-submit)
"""
import argparse, datetime, hashlib, json, os, re, socket, sys

import krinput

SCHEMA_VERSION = {"major": 4, "minor": 0}
ORIGIN_RE = re.compile(r"^[a-z0-9_]+$")  # the schema's origin pattern
STATUS = {"PASS": "PASS", "FAIL": "FAIL", "SKIP": "SKIP", "ERROR": "ERROR"}
LOG_EXCERPT_MAX = 16384  # the schema's maxLength


def check_origin(origin):
    if not ORIGIN_RE.match(origin or ""):
        raise ValueError(f"KCIDB origin '{origin}': lower-case letters, digits and _ only")
    return origin


def _no_nulls(v):
    """KCIDB: "no properties can be null", misc included."""
    if isinstance(v, dict):
        return {k: _no_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_no_nulls(x) for x in v if x is not None]
    return v


def _iso(t):
    if t is None:
        return None
    if isinstance(t, (int, float)):
        return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat()
    return t


def _slug(s):
    """The part of an ID after "origin:" is free text; keep it readable and path-safe."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", s)


def from_results(results, origin="krepro", run_id=None, host=None):
    """KCIDB v4 data (a dict) for a list of program reports."""
    check_origin(origin)
    uname = os.uname()
    host = host or socket.gethostname()
    run_id = run_id or datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    checkouts, builds, tests = {}, {}, []
    for n, r in enumerate(results):
        release = r.get("kernel") or uname.release
        version = r.get("kernel_version") or (uname.version if release == uname.release else "")
        arch = r.get("arch") or uname.machine
        # the kernel under test: its release and build stamp (uname -v) name one build
        kid = _slug(f"{release}-{hashlib.sha1(version.encode()).hexdigest()[:12]}")
        checkout_id, build_id = f"{origin}:{kid}", f"{origin}:{kid}.{_slug(arch)}"
        checkouts.setdefault(checkout_id, {
            "id": checkout_id, "origin": origin, "valid": True,
            "comment": f"Linux {release}",
            "misc": _no_nulls({"kernel_release": release, "kernel_version": version or None})})
        builds.setdefault(build_id, {
            "id": build_id, "checkout_id": checkout_id, "origin": origin, "valid": True,
            "architecture": re.sub(r"[^a-z0-9_]", "_", arch.lower()),
            "comment": f"the running kernel {release} {version}".strip(),
            "misc": _no_nulls({"kernel_release": release, "kernel_version": version or None})})
        name = r.get("program") or "unknown"
        status = STATUS.get(r.get("verdict"), "ERROR")
        text = "\n".join(r.get("text") or [])
        line = r.get("verdict_line") or f"{name}: {status} {r.get('reason') or ''}".strip()
        test = {
            "id": f"{origin}:{_slug(host)}.{run_id}.{n}.{_slug(name)}",
            "build_id": build_id, "origin": origin,
            "path": f"krepro.{re.sub(r'[^a-zA-Z0-9_-]', '_', name)}",
            "status": status,
            "comment": line,
            "start_time": _iso(r.get("start_time")),
            "duration": r.get("duration_s"),
            "log_excerpt": ((text + "\n" if text else "") + line)[-LOG_EXCERPT_MAX:],
            "environment": {"comment": f"{host}: {release} {arch}",
                            "misc": _no_nulls(dict({"host": host, "kernel_release": release, "arch": arch},
                                                   **(r.get("environment") or {})))},
            "misc": _no_nulls({
                "metric": r.get("metric"), "threshold": r.get("threshold"), "rule": r.get("rule"),
                "reason": r.get("reason") or None, "exit_code": r.get("exit_code"),
                "krepro_version": r.get("version"), "parameters": r.get("parameters"),
                "measurements": r.get("measurements"), "known_causes": r.get("known_causes") or None}),
        }
        tests.append(_no_nulls(test))
    return {"version": dict(SCHEMA_VERSION), "checkouts": list(checkouts.values()),
            "builds": list(builds.values()), "tests": tests}


def main():
    ap = argparse.ArgumentParser(description="labcheck --json document -> KCIDB v4 JSON")
    ap.add_argument("--origin", default="krepro", help="the CI system's KCIDB origin (default krepro)")
    ap.add_argument("labcheck_json", help="a scripts/labcheck --json FILE document (- for stdin)")
    a = ap.parse_args()
    try:  # someone else's document: checked before it is converted
        if a.labcheck_json == "-":
            data = sys.stdin.buffer.read(krinput.MAX_BYTES + 1)
            if len(data) > krinput.MAX_BYTES:
                raise krinput.BadInput("-", None, f"over {krinput.MAX_BYTES >> 20} MiB")
            doc = krinput.check(krinput.parse_json(data, "-"), krinput.LABCHECK, "-")
        else:
            doc = krinput.load_json(a.labcheck_json, krinput.LABCHECK)
    except krinput.BadInput as e:
        krinput.die_on(e, "kcidb")
    try:
        data = from_results(doc.get("results", []), origin=a.origin)
    except ValueError as e:
        print(f"kcidb: {e}", file=sys.stderr)
        sys.exit(128)
    json.dump(data, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
