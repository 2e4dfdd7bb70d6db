# SPDX-License-Identifier: GPL-2.0-only
"""Description: how krepro's scripts read a file someone else made (a compare.json, a
bisect's result.json and members, a CSV of samples, a labcheck --json document): a
regular file, opened without following a link and without blocking on a FIFO, at most
MAX_BYTES, strict UTF-8; JSON without NaN or Infinity, at most MAX_DEPTH deep; then every
value the reader uses checked against its schema (check()). Whatever is wrong is one
BadInput: the file, the field, what is wrong, on one line, for the script to print and
exit 128 (issue 42 row 17: 50 tracebacks in 100 inputs, a /dev/zero result.json read
into memory, a 300 MB JSON read whole).

A schema is a dict (an object: its keys, opt(KEY) where one may be missing; other
keys are not read, so not checked), or a checker f(value, field): TEXT, LINES, NUM, INT,
BOOL, NAME, HEX, WORD, maybe(S) (S or null), items(S, most, least), mapping(S, most),
one_of(...), any_of(...), number(lo, hi), text(most, pattern, lines)."""
import errno, json, math, os, re, stat, sys

MAX_BYTES = 16 << 20  # every input: the largest recorded (a compare, 2 x 10 runs) is 40 KB
MAX_DEPTH = 32        # compare.json nests 6 deep
MAX_NUMBER = 1e18     # beyond it no measurement, and squares and sums stay finite
MAX_ITEMS = 100000    # a list or an object, unless its schema says fewer


class BadInput(Exception):
    def __init__(self, path, field, why):
        super().__init__(path, field, why)
        self.path, self.field, self.why = path, field, why

    def __str__(self):
        parts = [self.path] if self.path is not None else []
        parts += [self.field] if self.field else []
        return plain(": ".join(parts + [self.why]))


def plain(s, most=300):
    """S on one line of what prints: a file name or a value is someone else's"""
    s = "".join(c if c.isprintable() else "\\x%02x" % ord(c) if ord(c) < 256 else "?" for c in s)
    return s if len(s) <= most else s[:most - 3] + "..."


def read_bytes(path, missing_ok=False):
    """the bytes of PATH, a regular file of at most MAX_BYTES; None if it is missing and
    MISSING_OK"""
    try:
        # O_NOFOLLOW: not a link (to /dev/zero, /etc/shadow); O_NONBLOCK: a FIFO's open
        # would wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if missing_ok and e.errno == errno.ENOENT:
            return None
        raise BadInput(path, None, "a symbolic link (not followed)" if e.errno == errno.ELOOP
                       else e.strerror or str(e))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(path, None, "a directory, not a file" if stat.S_ISDIR(st.st_mode)
                           else "not a regular file")
        if st.st_size > MAX_BYTES:
            raise BadInput(path, None, f"{st.st_size} bytes, over {MAX_BYTES >> 20} MiB")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_BYTES + 1)  # a file that grows is cut here
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise BadInput(path, None, f"over {MAX_BYTES >> 20} MiB")
    return data


def decode(data, path):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(path, None, f"not UTF-8 (byte {e.start})")


def read_text(path, missing_ok=False):
    data = read_bytes(path, missing_ok)
    return None if data is None else decode(data, path)


def _no_constant(name):
    raise ValueError(f"{name} is not a number JSON has")


def _finite(s):
    v = float(s)
    if not math.isfinite(v):
        raise ValueError(f"{s} is not a finite number")
    return v


def parse_json(data, path):
    """DATA (bytes) as JSON, strictly: no NaN, Infinity or 1e400; at most MAX_DEPTH deep"""
    try:
        v = json.loads(decode(data, path), parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise BadInput(path, None, "nested too deep")
    except ValueError as e:  # JSONDecodeError, ours, an int of over 4300 digits
        raise BadInput(path, None, "not JSON: " + str(e))
    todo = [(v, 1)]
    while todo:
        x, d = todo.pop()
        if d > MAX_DEPTH:
            raise BadInput(path, None, f"nested over {MAX_DEPTH} deep")
        if isinstance(x, dict):
            todo += [(y, d + 1) for y in x.values()]
        elif isinstance(x, list):
            todo += [(y, d + 1) for y in x]
    return v


def load_json(path, schema=None, missing_ok=False):
    """PATH's JSON, checked against SCHEMA; None if missing and MISSING_OK"""
    data = read_bytes(path, missing_ok)
    if data is None:
        return None
    v = parse_json(data, path)
    return v if schema is None else check(v, schema, path)


# ---- schemas -----------------------------------------------------------------------------

class opt:
    """a key that may be missing: {opt("key"): SCHEMA}, or {"key": opt(SCHEMA)}"""
    def __init__(self, schema):
        self.schema = schema

    def __hash__(self):
        return hash(self.schema)

    def __eq__(self, other):
        return isinstance(other, opt) and other.schema == self.schema


def _at(field, key):
    return f"{field}[{key}]" if isinstance(key, int) else f"{field}.{key}" if field else key


def check(v, schema, path=None, field=""):
    """V, if it matches SCHEMA; else BadInput naming PATH and the field"""
    try:
        _check(v, schema, field)
    except BadInput as e:
        e.path = path if e.path is None else e.path
        raise
    return v


def _check(v, schema, field):
    if isinstance(schema, opt):
        schema = schema.schema
    if isinstance(schema, dict):
        if not isinstance(v, dict):
            raise BadInput(None, field or "the top level", "not an object")
        for k, sub in schema.items():
            optional = isinstance(sub, opt) or isinstance(k, opt)
            k = k.schema if isinstance(k, opt) else k
            if k in v:
                _check(v[k], sub, _at(field, k))
            elif not optional:
                raise BadInput(None, _at(field, k), "missing")
    else:
        schema(v, field)


def _bad(field, why):
    raise BadInput(None, field or "the top level", why)


def text(most=4096, pattern=None, lines=False, what=None):
    """a string of what prints: one line, or LINES (tabs too), at most MOST characters"""
    rx = re.compile(pattern) if pattern else None

    def f(v, field):
        if not isinstance(v, str):
            _bad(field, "not a string")
        if len(v) > most:
            _bad(field, f"longer than {most} characters")
        ok = all(l.replace("\t", " ").isprintable() for l in v.split("\n")) if lines \
            else v.isprintable()
        if not ok:
            _bad(field, "not plain text (a control character)")
        if rx and not rx.fullmatch(v):
            _bad(field, f"not {what or 'as expected'}: {v!r}")
    return f


def number(lo=-MAX_NUMBER, hi=MAX_NUMBER, integer=False):
    def f(v, field):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                (integer and not isinstance(v, int)):
            _bad(field, "not an integer" if integer else "not a number")
        if not (lo <= v <= hi):  # NaN fails too
            _bad(field, f"{plain(repr(v), 40)} is out of range [{lo:g}, {hi:g}]")
    return f


def BOOL(v, field):
    if not isinstance(v, bool):
        _bad(field, "not true or false")


def maybe(schema):
    def f(v, field):
        if v is not None:
            _check(v, schema, field)
    return f


def items(schema, most=MAX_ITEMS, least=0):
    def f(v, field):
        if not isinstance(v, list):
            _bad(field, "not a list")
        if not least <= len(v) <= most:
            _bad(field, f"{len(v)} items, not {least}" + (f" to {most}" if most != least else ""))
        for i, x in enumerate(v):
            _check(x, schema, _at(field, i))
    return f


def mapping(schema, most=MAX_ITEMS, keys=None):
    keys = keys or text(256)

    def f(v, field):
        if not isinstance(v, dict):
            _bad(field, "not an object")
        if len(v) > most:
            _bad(field, f"over {most} keys")
        for k, x in v.items():
            keys(k, _at(field, "(a key)"))
            _check(x, schema, _at(field, k))
    return f


def one_of(*values):
    def f(v, field):
        # by type too: 1 is not true
        if not any(type(v) is type(x) and v == x for x in values):
            _bad(field, f"not one of {', '.join(map(json.dumps, values))}")
    return f


def any_of(*schemas, what="a value"):
    def f(v, field):
        for s in schemas:
            try:
                _check(v, s, field)
                return
            except BadInput:
                pass
        _bad(field, f"not {what}")
    return f


TEXT = text()                              # a label, a unit, a path: one line
LINES = text(1 << 20, lines=True)          # a rule, a reason, a table
NUM = number()
INT = number(-(1 << 63), 1 << 63, integer=True)
COUNT = number(0, 1 << 63, integer=True)
NAME = text(64, r"[A-Za-z0-9_]+", what="a program's name")
HEX = text(64, r"[0-9a-f]{4,64}", what="a commit (hex)")
# a kernel spec (amd64, built:NAME, commit:REV, a path): one word for a shell
WORD = text(4096, r"[A-Za-z0-9_.,+:=@%/~^-]+", what="one word of letters, digits and ._,+:=@%/~^-")
SCALAR = maybe(any_of(LINES, NUM, BOOL, what="text, a number or true/false"))

VERDICT = one_of("PASS", "FAIL", "SKIP", "ERROR")
STRINGS = items(TEXT, 1000)
CAUSES = items(LINES, 1000)
ENVIRONMENT = mapping(SCALAR, 10000)
MEASUREMENTS = mapping(maybe(NUM), 10000)
WHEN = maybe(text(4096))                   # a date, as the record gives it
COUNTS = mapping(COUNT, 8, keys=VERDICT)

# ---- a program's --format json report (CONTRACT section 5), as labcheck --json keeps it

REPORT = {
    "program": NAME, "verdict": VERDICT,
    "metric": maybe({"name": maybe(TEXT), "value": maybe(NUM), opt("unit"): maybe(TEXT)}),
    opt("threshold"): maybe(NUM), opt("fail_when"): maybe(one_of("below", "above")),
    opt("version"): maybe(TEXT), opt("exit_code"): maybe(INT), opt("rule"): maybe(LINES),
    opt("reason"): maybe(LINES), opt("verdict_line"): maybe(LINES),
    opt("verdict_detail"): maybe(LINES), opt("parameters"): maybe(ENVIRONMENT),
    opt("environment"): maybe(ENVIRONMENT), opt("measurements"): maybe(MEASUREMENTS),
    opt("known_causes"): maybe(CAUSES), opt("text"): maybe(items(LINES, 100000)),
    opt("kernel"): maybe(TEXT), opt("kernel_version"): maybe(TEXT), opt("arch"): maybe(TEXT),
    opt("duration_s"): maybe(number(0, 1e9)),
    # seconds since the epoch, or ISO 8601 (scripts/kcidb.py's _iso)
    opt("start_time"): maybe(any_of(number(0, 1e11), text(64), what="a time")),
}
LABCHECK = {"results": items(REPORT, 1000), opt("kernel"): maybe(TEXT)}

# ---- scripts/compare --json (krcompare.compare()), version 1 and 2 -------------------------

LKP = {"n": COUNT, "trimmed": COUNT, "min": NUM, "median": NUM, "max": NUM, "integers": BOOL}
STATS = {"runs": COUNT, "counts": COUNTS, "n": COUNT, opt("mean"): maybe(NUM),
         opt("stddev"): maybe(NUM), opt("stddev_pct"): maybe(NUM), opt("min"): maybe(NUM),
         opt("max"): maybe(NUM), "lkp": maybe(LKP)}
RUN = {
    "verdict": VERDICT, opt("value"): maybe(NUM), opt("threshold"): maybe(NUM),
    opt("metric"): maybe(TEXT), opt("unit"): maybe(TEXT), opt("release"): maybe(TEXT),
    opt("fail_when"): maybe(one_of("below", "above")), opt("rule"): maybe(LINES),
    opt("measurements"): maybe(MEASUREMENTS), opt("environment"): maybe(ENVIRONMENT),
    opt("causes"): maybe(CAUSES), opt("exit_code"): maybe(INT), opt("seconds"): maybe(NUM),
    opt("verdict_line"): maybe(LINES), opt("reason"): maybe(LINES), opt("accel"): maybe(TEXT),
    opt("program"): maybe(NAME),
}
SIDE = {
    "runs": items(RUN, 10000, 1), "stats": STATS, opt("label"): maybe(TEXT),
    opt("kernel"): maybe(WORD), opt("image"): maybe(WORD), opt("commit"): maybe(HEX),
    opt("args"): maybe(STRINGS), opt("vmrun"): maybe(STRINGS), opt("where"): maybe(TEXT),
    opt("causes"): maybe(CAUSES), opt("environment"): maybe(ENVIRONMENT),
}
HOST = {opt(k): maybe(TEXT) for k in ("name", "kernel", "machine", "cpu", "runs_on")}
HOST.update({opt("cpus"): maybe(COUNT), opt("memory_mib"): maybe(COUNT)})
PROVENANCE = {opt("krepro"): maybe(TEXT), opt("started"): WHEN, opt("finished"): WHEN,
              opt("host"): maybe(HOST), opt("accelerator"): maybe(TEXT), opt("qemu"): maybe(TEXT),
              opt("compiler"): maybe(TEXT), opt("kernel_compilers"): maybe(items(maybe(TEXT), 100))}
COMPARE = {
    "program": NAME, "sides": items(SIDE, 2, 2),
    "metric": {"name": maybe(TEXT), opt("unit"): maybe(TEXT),
               opt("worse"): maybe(one_of("lower", "higher"))},
    "separate": BOOL, opt("threshold"): maybe(NUM), opt("change_pct"): maybe(NUM),
    opt("separate_why"): maybe(LINES), opt("direction"): maybe(one_of("regression", "improvement",
                                                                       "change")),
    opt("table"): maybe(LINES), opt("header"): maybe(LINES), opt("rule"): maybe(LINES),
    opt("command"): maybe(TEXT), opt("argv"): maybe(STRINGS),
    opt("runs_per_side"): maybe(number(1, 1e6, integer=True)), opt("provenance"): maybe(PROVENANCE),
    opt("measurements"): maybe(items({"name": TEXT, "stats": items(STATS, 2, 2),
                                      "change_pct": maybe(NUM), "separate": BOOL}, 10000)),
    opt("accelerators"): maybe(items(TEXT, 2, 2)),
}

# ---- scripts/vm/kernel-bisect's result.json --------------------------------------------------

VERIFY = {"what": TEXT, opt("want"): maybe(VERDICT), opt("commit"): maybe(HEX),
          opt("tag"): maybe(TEXT), opt("verdicts"): maybe(COUNTS), opt("runs"): maybe(COUNT),
          opt("confirmed"): maybe(BOOL), opt("outcome"): maybe(TEXT), opt("release"): maybe(TEXT),
          opt("note"): maybe(LINES)}
RESULT = {
    "program": NAME, "terms": {"old": TEXT, "new": TEXT}, "repo": TEXT, "old": TEXT, "new": TEXT,
    "old_commit": HEX, "new_commit": HEX,
    "first": maybe({"commit": HEX, "subject": TEXT, opt("author"): maybe(TEXT),
                    opt("date"): maybe(TEXT), opt("describe"): maybe(TEXT)}),
    opt("mode"): one_of("regression", "fix"), opt("program_args"): maybe(STRINGS),
    opt("vmrun"): maybe(STRINGS), opt("remote"): maybe(TEXT), opt("branch"): maybe(TEXT),
    opt("verified"): maybe(any_of(BOOL, one_of("partly", "flaky", "unavailable"),
                                  what="true, false, partly, flaky or unavailable")), opt("verify"): maybe(items(VERIFY, 100)),
    opt("verification"): maybe(TEXT), opt("verification_note"): maybe(LINES),
    opt("maintainers"): maybe({opt("command"): maybe(TEXT), opt("recipients"): maybe(STRINGS),
                               opt("note"): maybe(LINES)}),
    opt("machine"): maybe({**{opt(k): maybe(TEXT) for k in ("host", "host_cpu", "accelerator",
                                                              "qemu")},
                           **{opt(k): maybe(COUNT) for k in ("host_cpus", "vcpus", "memory_mib")}}),
    opt("compiler"): maybe({opt(k): maybe(TEXT) for k in ("cc", "version", "key")}),
    opt("hangs"): maybe({"commits": items(HEX, 10000), opt("counted"): maybe(TEXT)}),
    opt("seconds"): maybe(mapping(maybe(NUM), 100)), opt("steps"): maybe(items(LINES, 10000)),
    opt("runs"): maybe(number(1, 1000, integer=True)), opt("busy_seconds"): maybe(NUM),
    opt("started"): WHEN, opt("finished"): WHEN, opt("krepro"): maybe(TEXT),
    opt("start_config_sha256"): maybe(HEX),
    opt("bisect_end"): maybe({opt("how"): maybe(TEXT), opt("candidates"): maybe(items(HEX, 10000)),
                              opt("reason"): maybe(LINES)}),
}


def die_on(e, who):
    """BAD (a BadInput): its one line, as WHO's, and exit 128"""
    print(f"{who}: {e}", file=sys.stderr)
    sys.exit(128)


# the runs of a compare, for a reader that computes the rest again (compare --rejudge)
# or reads only the runs (plot): a record from before the statistics it would not read
def _without(schema, *names):
    return {k: v for k, v in schema.items() if getattr(k, "schema", k) not in names}


RUNS_SIDE = _without(SIDE, "stats")
COMPARE_RUNS = _without(COMPARE, "sides", "separate", "measurements")
COMPARE_RUNS.update({"sides": items(RUNS_SIDE, 2, 2), opt("separate"): BOOL})
