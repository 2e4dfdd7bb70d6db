#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: the LAVA definitions (lava/) with LAVA's own code (Debian's lava-common and
lava-dispatcher, 2023.01), run by Debian's /usr/bin/python3 where those modules live.

lava_test.py --build DIR         the test definition and the example job against LAVA's
                                 schemas (lava_common.schemas, strict), and the definition's
                                 run steps executed with stub programs and a stub
                                 lava-test-case: exit codes -> pass/fail/skip, metric ->
                                 --measurement/--units
lava_test.py --build DIR --run   the example job through lava-run: Debian's kernel
                                 (scripts/vm/debian-kernel), lava/make-ramdisk with a static
                                 build, the device dictionary rendered with lava-server's own
                                 qemu.jinja2 (apt-get download, not installed), file:// images,
                                 the definition inline; checks one LAVA result per program
Exit 0 pass, 1 fail, 77 skip (no LAVA, not root, no kernel).
"""
import argparse, copy, os, re, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krstate import PROGRAMS  # noqa: E402

LAVA_PACKAGES = "lava-dispatcher lava-common"  # ~100 packages: scripts/deps test
try:
    import yaml
    import lava_common.schemas as lava_schemas
    from lava_common.schemas.test import testdef as lava_testdef
except ImportError as e:
    # a test installs nothing (killed at its timeout, apt would leave dpkg half-done)
    print(f"SKIP: LAVA's python modules are not here ({e}): scripts/deps test "
          f"(apt-get install {LAVA_PACKAGES})")
    sys.exit(77)

from checks import FAILS, check, finish  # noqa: E402
TESTDEF = os.path.join(TOP, "lava", "krepro.yaml")
JOB = os.path.join(TOP, "lava", "job-qemu.yaml")


def load(path):
    with open(path) as f:
        return yaml.safe_load(f)


def schema_ok(fn, data, what):
    try:
        fn(data)
        return True
    except Exception as e:  # voluptuous.Invalid and friends
        return check(False, f"{what}: {type(e).__name__}: {e}")


def local_job(kernel_url, ramdisk_url, params):
    """The example job with local images and the definition inline (no network)."""
    job = load(JOB)
    images = job["actions"][0]["deploy"]["images"]
    images["kernel"]["url"], images["ramdisk"]["url"] = kernel_url, ramdisk_url
    td = load(TESTDEF)
    td["params"].update(params)
    job["actions"][2]["test"]["definitions"] = [
        {"from": "inline", "name": "krepro", "path": "inline/krepro.yaml", "repository": td}]
    return job


def validate():
    td = load(TESTDEF)
    schema_ok(lava_testdef.validate, td, "lava/krepro.yaml (Lava-Test Test Definition 1.0)")
    check(set(td.get("params", {})) >= {"PROGRAMS", "KREPRO_BIN", "KREPRO_ARGS"}, "definition params")
    check(td["params"]["PROGRAMS"].split() == PROGRAMS, f"definition PROGRAMS {td['params']['PROGRAMS']}")
    job = load(JOB)
    schema_ok(lambda d: lava_schemas.validate(d, strict=True), job, "lava/job-qemu.yaml")
    check("-accel tcg,thread=multi" in job["context"]["extra_options"] and job["context"].get("no_kvm"),
          "the job must use TCG (qemu+KVM hangs on the lab machines)")
    schema_ok(lambda d: lava_schemas.validate(d, strict=True),
              local_job("file:///k", "file:///r.cpio.gz", {"KREPRO_ARGS": "--duration 1"}), "the local job")
    # the checker is not vacuous: LAVA's schema rejects a broken job and definition
    bad = copy.deepcopy(job)
    bad["actions"][1]["boot"]["method"] = "no-such-method"
    try:
        lava_schemas.validate(bad, strict=True)
        check(False, "LAVA's schema accepted boot method 'no-such-method'")
    except Exception:
        pass
    bad = copy.deepcopy(td)
    bad["metadata"]["format"] = "Lava-Test Test Definition 2.0"
    try:
        lava_testdef.validate(bad)
        check(False, "LAVA's schema accepted format 2.0")
    except Exception:
        pass
    run_steps_with_stubs(td)


STUB = """#!/bin/sh
case "$1" in
--help) echo "  metric {metric}, default threshold 1" ; exit 0 ;;
esac
echo "{name} 0.1.0: a stub report line"
echo "{line}"
exit {rc}
"""


def run_steps_with_stubs(td):
    """The definition's steps in sh, as LAVA's run.sh runs them, against stub programs."""
    cases = {  # name: (exit code, verdict line, metric, expected lava-test-case arguments)
        "p_pass": (0, "p_pass: PASS throttled=12.5% (limit 20.0%) efficiency=1.00", "throttled",
                   ["p_pass", "--result", "pass", "--measurement", "12.5", "--units", "%"]),
        "p_fail": (1, "p_fail: FAIL in_max=498ms (limit 20.0ms) out_p99=4.1ms", "in_max",
                   ["p_fail", "--result", "fail", "--measurement", "498", "--units", "ms"]),
        "p_ratio": (1, "p_ratio: FAIL ratio=0.000907 (limit 0.500) test=20", "ratio",
                    ["p_ratio", "--result", "fail", "--measurement", "0.000907", "--units", "ratio"]),
        "p_neg": (0, "p_neg: PASS added_by_idle=-5.52us (limit 100us)", "added_by_idle",
                  ["p_neg", "--result", "pass", "--measurement", "-5.52", "--units", "us"]),
        "p_skip": (129, "p_skip: SKIP needs root (it changes x=1 settings)", "hidden",
                   ["p_skip", "--result", "skip"]),
        "p_incon": (125, "p_incon: SKIP inconclusive (noisy): hidden=0.5 (limit 0.7)", "hidden",
                    ["p_incon", "--result", "skip", "--measurement", "0.5", "--units", "hidden"]),
        "p_ksft": (4, "p_ksft: SKIP no cpu controller", "throttled", ["p_ksft", "--result", "skip"]),
        "p_error": (128, "p_error: ERROR another krepro run (pid 1) holds /run/krepro/lock", "x",
                    ["p_error", "--result", "fail"]),
        "p_missing": (None, None, None, ["p_missing", "--result", "fail"]),
        # KREPRO_ARGS_<program> reaches that program only: the stub exits with its argument
        "p_own": ("${1:-7}", "p_own: SKIP own arguments", "x", ["p_own", "--result", "skip"]),
    }
    with tempfile.TemporaryDirectory(prefix="krepro-lava-") as tmp:
        bindir, stubs = os.path.join(tmp, "bin"), os.path.join(tmp, "stubs")
        os.makedirs(bindir)
        os.makedirs(stubs)
        for name, (rc, line, metric, _) in cases.items():
            if rc is None:
                continue
            path = os.path.join(bindir, name)
            with open(path, "w") as f:
                f.write(STUB.format(name=name, line=line, rc=rc, metric=metric))
            os.chmod(path, 0o755)
        record = os.path.join(tmp, "cases")
        with open(os.path.join(stubs, "lava-test-case"), "w") as f:
            f.write('#!/bin/sh\nfor a in "$@"; do printf "%s\\037" "$a"; done >> "$LAVA_CASES"\necho >> "$LAVA_CASES"\n')
        os.chmod(os.path.join(stubs, "lava-test-case"), 0o755)
        # run.sh as LAVA writes it: the params as shell variables, then the steps
        script = "".join(f"{k}='{v}'\n" for k, v in dict(td["params"], PROGRAMS=" ".join(cases),
                                                          KREPRO_BIN=bindir, KREPRO_ARGS_p_own="129").items())
        script += "\n".join(td["run"]["steps"]) + "\n"
        env = dict(os.environ, PATH=stubs + ":" + os.environ["PATH"], LAVA_CASES=record)
        # as lava-test-runner runs run.sh: ${SHELL} -e
        with open(os.path.join(tmp, "run.sh"), "w") as f:
            f.write(script)
        p = subprocess.run(["sh", "-e", os.path.join(tmp, "run.sh")], capture_output=True, text=True,
                           env=env, cwd=tmp)
        check(p.returncode == 0, f"the run steps exit {p.returncode}: {p.stderr[-300:]}")
        got = []
        if os.path.exists(record):
            with open(record) as f:
                got = [l.rstrip("\n").split("\x1f")[:-1] for l in f if l.strip()]
        want = [c[3] for c in cases.values()]
        check(got == want, "lava-test-case calls:\n  got  %s\n  want %s" % (got, want))
        check("p_pass: PASS throttled=12.5%" in p.stdout, "the report is in the LAVA log")


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def run(build):
    if os.geteuid() != 0:
        print("SKIP: the lava-run job needs root (programs, qemu)")
        sys.exit(77)
    for tool in ["lava-run", "qemu-system-x86_64", "apt-get", "dpkg-deb"]:
        if not shutil.which(tool):
            print(f"SKIP: no {tool}")
            sys.exit(77)
    if not os.path.exists("/bin/busybox"):
        print("SKIP: no busybox-static")
        sys.exit(77)
    p = sh([os.path.join(TOP, "scripts", "vm", "debian-kernel")])
    if p.returncode:
        print("SKIP: no Debian kernel image: " + p.stderr.strip())
        sys.exit(77)
    kernel = p.stdout.strip()
    static = os.path.join(build, "lava-static")
    if not os.path.exists(os.path.join(static, "build.ninja")):
        p = sh(["meson", "setup", static, TOP, "-Dstatic=true", "-Dtests=false"])
        if not check(p.returncode == 0, "meson setup of the static build: " + p.stdout[-300:] + p.stderr[-300:]):
            return
    p = sh(["ninja", "-C", static])
    if not check(p.returncode == 0, "static build: " + p.stdout[-500:]):
        return
    with tempfile.TemporaryDirectory(prefix="krepro-lava-") as tmp:
        # lava-server's device-type templates, from its package (not installed)
        p = sh(["apt-get", "download", "lava-server"], cwd=tmp)
        debs = [f for f in os.listdir(tmp) if f.startswith("lava-server_") and f.endswith(".deb")]
        if not debs:
            print("SKIP: apt-get download lava-server failed: " + p.stderr.strip()[-300:])
            sys.exit(77)
        sh(["dpkg-deb", "-x", os.path.join(tmp, debs[0]), os.path.join(tmp, "srv")])
        templates = os.path.join(tmp, "srv", "usr", "share", "lava-server", "device-types")
        ramdisk = os.path.join(tmp, "krepro-ramdisk.cpio.gz")
        p = sh([os.path.join(TOP, "lava", "make-ramdisk"), "--kernel", kernel, "--build", static, ramdisk])
        print(p.stdout + p.stderr, end="")
        if not check(p.returncode == 0, "make-ramdisk"):
            return
        # a short run of every program: TCG, and the job must fit the CI budget (clearing
        # 512 MiB of emulated memory exceeds ktask_bench's hard cap)
        job = local_job("file://" + kernel, "file://" + ramdisk,
                        {"KREPRO_ARGS": "--duration 1", "KREPRO_ARGS_ktask_bench": "--size 128M"})
        with open(os.path.join(tmp, "job.yaml"), "w") as f:
            yaml.safe_dump(job, f, sort_keys=False)
        with open(os.path.join(TOP, "lava", "qemu-tcg.jinja2")) as f:
            devdict = f.read()
        import jinja2
        env = jinja2.Environment(loader=jinja2.FileSystemLoader([templates]), trim_blocks=True,
                                 autoescape=False)
        device = env.from_string(devdict).render(**job["context"])
        with open(os.path.join(tmp, "device.yaml"), "w") as f:
            f.write(device)
        out = os.path.join(tmp, "out")
        os.makedirs(out)
        p = sh(["lava-run", "--job-id", "1", "--output-dir", out, "--device", os.path.join(tmp, "device.yaml"),
                os.path.join(tmp, "job.yaml")], timeout=1800)
        results, target = lava_results(p.stdout + p.stderr)
        print("--- the programs' output as LAVA logged it (target lines)")
        print("\n".join(l for l in target if l.startswith(("krepro", *PROGRAMS)) or ": PASS" in l
                        or ": FAIL" in l or ": SKIP" in l or ": ERROR" in l))
        if p.returncode:  # the console's end: where a boot or a run stopped
            print("--- the last console lines (target)")
            print("\n".join(target[-25:]))
        print(f"--- lava-run exit {p.returncode}; results LAVA recorded:")
        for r in results:
            print("  %-14s %-22s %-5s %s %s" % (r.get("definition"), r.get("case"), r.get("result"),
                                              r.get("measurement", ""), r.get("units", "")))
        ours = {r["case"]: r for r in results if r.get("definition") == "0_krepro"}
        check(sorted(ours) == sorted(PROGRAMS), f"LAVA results for {sorted(ours)}, expected every program")
        exits = dict(re.findall(r"^krepro: (\S+) exit (\d+) -> ", "\n".join(target), re.M))
        for name, r in ours.items():
            check(r.get("result") in ("pass", "fail", "skip"), f"{name}: result {r.get('result')}")
            # a measured verdict (PASS 0, FAIL 1) comes with its metric
            if exits.get(name) in ("0", "1"):
                check("measurement" in r, f"{name}: exit {exits[name]} without a measurement")
        job_result = [r for r in results if r.get("definition") == "lava" and r.get("case") == "job"]
        check(job_result and job_result[0].get("result") == "pass", f"LAVA job result {job_result}")


def lava_results(log):
    """lava-run's log lines: the results and the target's console lines."""
    results, target = [], []
    for line in log.split("\n"):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:  # YAML flow mappings, not JSON: measurements are tagged, e.g. ! "100.0"
            d = yaml.safe_load(line)
        except yaml.YAMLError:
            continue
        if not isinstance(d, dict):
            continue
        if d.get("lvl") == "results" and isinstance(d.get("msg"), dict):
            results.append(d["msg"])
        elif d.get("lvl") == "target" and isinstance(d.get("msg"), str):
            target.append(d["msg"])
    return results, target


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--run", action="store_true", help="run the example job through lava-run")
    a = ap.parse_args()
    run(os.path.abspath(a.build)) if a.run else validate()
    finish()


if __name__ == "__main__":
    main()
