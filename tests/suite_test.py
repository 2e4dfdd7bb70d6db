#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: the test suite's own contract (issue 33), so that the README's test
command is green on the next machine, not only on the last one:

- every test() in every meson.build declares its timeout (meson's default of 30 s is
  nobody's measurement: a cold or loaded machine takes longer, and a test killed at a
  default timeout fails for no reason of its own);
- every test that runs a program for real, or whose result depends on timing (the
  suites below, and any test given a built program as an argument), runs alone
  (is_parallel : false): meson then starts nothing beside it;
- no test installs anything: no apt-get install, dpkg -i or scripts/deps in a test's
  files (killed at its timeout, dpkg is left half-done on the user's machine);
- docs/tests.md lists every test of the default run with its timeout.

suite_test.py SOURCE_DIR BUILD_DIR      exit 0 pass, 1 fail
"""
import json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
from checks import check, finish  # noqa: E402
from krstate import PROGRAMS  # noqa: E402

# suites whose tests run programs for real or time something: alone, always
ALONE = {"kernel", "kernel-full", "fault", "valgrind", "soak", "soak-10", "bisect", "fuzz"}
# what a test may not do: call the package manager or scripts/deps (a shell command at
# the start of a line or after ; && || $( ; Python's argument lists)
SH_INSTALLS = re.compile(r"(^|[;&|(]\s*)\s*(\S+=\S+\s+)*(\S*/)?(apt-get|apt|dpkg|scripts/deps|"
                         r"deps)\b(?!-)(.*\binstall\b|\s+-i\b|.*--install\b|\s*$|\s+(lab|test)\b)")
PY_INSTALLS = re.compile(r"[\"']apt-get[\"'],.*[\"']install[\"']|[\"']dpkg[\"'],\s*[\"']-i|"
                         r"[\"']scripts[\"'],\s*[\"']deps[\"']|scripts/deps[\"']")


def calls(text, name):
    """the argument text of each call name(...) in a meson.build (comments removed)"""
    text = re.sub(r"#[^\n]*", "", text)
    out = []
    for m in re.finditer(r"(?<![\w.])%s\s*\(" % name, text):
        depth, k = 1, m.end()
        while k < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            k += 1
        out.append((text.count("\n", 0, m.start()) + 1, text[m.end():k - 1]))
    return out


def meson_files(src):
    for d, dirs, files in os.walk(src):
        dirs[:] = [x for x in dirs if not x.startswith((".", "build")) and x != "subprojects"]
        if "meson.build" in files:
            yield os.path.join(d, "meson.build")


def test_files(src, intro):
    """the files the tests run: their commands' scripts in the source tree, and what
    those import or source from tests/"""
    seen = set()
    for t in intro:
        for a in t["cmd"]:
            a = os.path.realpath(a)
            if a.startswith(src + "/") and os.path.isfile(a) and not a.endswith((".c", ".h")):
                seen.add(a)
    for f in os.listdir(os.path.join(src, "tests")):
        if f.endswith((".py", ".sh")) or f == "run":
            seen.add(os.path.realpath(os.path.join(src, "tests", f)))
    return sorted(seen)


def main():
    src, build = (os.path.realpath(a) for a in sys.argv[1:3])
    # 1. an explicit timeout in every test()
    n = 0
    for path in meson_files(src):
        for line, args in calls(open(path).read(), "test"):
            n += 1
            check(re.search(r"\btimeout\s*:", args),
                  f"{os.path.relpath(path, src)}:{line}: test({args.split(',')[0]}, ...) "
                  "declares no timeout (meson's default 30 s)")
    check(n > 20, f"only {n} test() calls found: the parser is broken")
    intro = json.load(open(os.path.join(build, "meson-info", "intro-tests.json")))
    progs = {os.path.realpath(os.path.join(build, p, p)) for p in PROGRAMS}
    # 2. alone: by suite, or given a program to run
    for t in intro:
        suites = {s.split(":")[-1] for s in t["suite"]}
        # a built program is named relative to the build directory, where meson runs tests
        runs_program = any(os.path.realpath(os.path.join(build, a)) in progs for a in t["cmd"][1:])
        if suites & ALONE or runs_program:
            check(not t["is_parallel"], f"test {t['name']} (suite {','.join(sorted(suites))}"
                  f"{', runs a program' if runs_program else ''}) is parallel: set "
                  "is_parallel : false")
    # 3. no installs in what the tests run
    for f in test_files(src, intro):
        text = open(f, errors="replace").read()
        py = f.endswith(".py") or text.startswith("#!/usr/bin/env python3") or \
            text.startswith("#!/usr/bin/python3")
        for k, line in enumerate(text.split("\n"), 1):
            code = line.split("#", 1)[0]
            if not py:  # what a shell line quotes is said, not run
                code = re.sub(r"\"[^\"]*\"|'[^']*'", '""', code)
            if (PY_INSTALLS if py else SH_INSTALLS).search(code):
                check(False, f"{os.path.relpath(f, src)}:{k}: installs something: "
                      f"{line.strip()[:80]}")
    # 4. docs/tests.md names every default test with its timeout
    doc = open(os.path.join(src, "docs", "tests.md")).read()
    for t in intro:
        suites = {s.split(":")[-1] for s in t["suite"]}
        if suites & {"unit", "contract", "kernel", "fault", "valgrind", "fuzz", "soak"}:
            check(re.search(r"\|\s*%s\s*\|[^\n]*\|\s*%d\s*\|" % (re.escape(t["name"]), t["timeout"]), doc),
                  f"docs/tests.md has no row for {t['name']} with its timeout {t['timeout']}")
    print(f"{n} test() calls, {len(intro)} tests checked")
    finish()


if __name__ == "__main__":
    main()
