#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: scripts/export's text rules, without a build: which calls the mail form
drops (the ones that do nothing there: CSV, JSON figures, progress) and which it must keep
because dropping them would change what runs or leave a name unused. Exit 0 pass, 1 fail."""
import os
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tests"))
from checks import check, finish, load_script  # noqa: E402

export = load_script(os.path.join(TOP, "scripts", "export"))

FUNC = """static int window(const struct kr_opts *o, int rep, double *v)
{
	int n = 0, seq = 0;

	kr_progress("window %d of %d", rep,
		    o->repeat); /* rep is used below too */
	kr_csv_row("%d,%.3f", rep, fmax(v[0], 0));
	if (o->trigger)
		kr_measure("x", v[0]);
	for (n = 0; n < 3; n++)
		kr_csv_row("%d", n);
	kr_measure("seq", seq++);
	kr_measure("first", v[n] = 1);
	kr_measure("more", more(v));
	kr_measure_str("why", "a ; b ) c");
	return rep + n + seq;
}

static void only_csv(int rep)
{
	kr_csv_row("%d", rep);
}
"""

out = export.drop_noop_calls(FUNC)
gone = ['kr_progress("window', 'kr_csv_row("%d,%.3f"', 'kr_measure_str("why"']
kept = ['if (o->trigger)\n\t\tkr_measure("x", v[0]);',  # an if's body: the if would take the next
        'kr_csv_row("%d", n);',  # a for's body
        'kr_measure("seq", seq++);', 'kr_measure("first", v[n] = 1);',  # side effects
        'kr_measure("more", more(v));',  # a call that may have some
        'kr_csv_row("%d", rep);\n}']  # rep would be an unused parameter (-Wextra)
for g in gone:
    check(g not in out, f"not dropped: {g}")
for k in kept:
    check(k in out, f"dropped: {k!r}")
check("return rep + n + seq;" in out and out.count("\n") == FUNC.count("\n") - 4,
      f"the rest changed:\n{out}")
check(export.drop_noop_calls("") == "", "empty text")

# a parameter given on the command line becomes the constant its initializer names; one
# the initializer leaves out goes in first (a run with --pages thp, where cfg named only
# .size, died with "must name its fields")
CFG = "static struct {\n\tlong size, pages;\n} cfg = { .size = 0 };\n"
out = export.set_initializer(CFG, "cfg.pages", "PAGES")
check("{ .pages = PAGES, .size = 0 }" in out, f"a field not initialized: {out!r}")
out = export.set_initializer(CFG, "cfg.size", "SIZE")
check("{ .size = SIZE}" in out, f"a field initialized: {out!r}")
# foreign(): the text as another architecture's compiler takes it, as far as the file's
# own conditionals go; KR_MAIL and other conditionals untouched
ARCH = """#include <stdlib.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#ifdef __aarch64__
int on_arm;
#else
int not_arm;
#endif
#ifndef KR_MAIL
int full;
#endif
"""
other = export.foreign(ARCH)
check("x86intrin" not in other and "not_arm" in other and "on_arm" not in other,
      "foreign(): %r" % other)
check("#ifndef KR_MAIL\nint full;\n#endif" in other, "foreign() resolved KR_MAIL: %r" % other)
# the program's struct kr_prog initializer keeps only what the mail form's struct has
# (krepro.h with KR_MAIL): the rule is in the form's first comment, the threshold a constant
HDR = open(os.path.join(TOP, "lib", "krepro.h")).read()
fields = export.prog_fields(HDR)
check({"name", "flags", "metric", "unit", "duration_s", "duration_max_s", "run"} <= fields
      and not fields & {"rule", "threshold", "threshold_max", "fail_below", "repeat"},
      "prog_fields(): %s" % sorted(fields))
PROG = """static const struct kr_prog prog = {
	.name = "x", .threshold = f(1, 2), .rule = "a, b"
		"c",
	.duration_s = 1, .run = run,
};
int after = 1;
"""
got = export.drop_prog_fields(PROG, fields)
check(got == """static const struct kr_prog prog = {
	.name = "x",
	.duration_s = 1, .run = run,
};
int after = 1;
""", "drop_prog_fields(): %r" % got)
# a reporter's parameter ends the C comment it is copied into (issue 42: '*/ code /*'
# was code in the form, run even on --help): held inside as text, no control characters
for typed in ("*/__attribute__((constructor)) static void x(void){system(\"id\");}/*",
              "a\nb\x1b[2J*/", "/* nested */"):
    got = export.comment_safe(typed)
    check("*/" not in got and "/*" not in got and not any(ord(c) < 32 for c in got),
          "comment_safe(%r): %r" % (typed, got))
block = export.params_block("fibtest", [("opts.duration_s", "3", "--duration 3")],
                            ["--csv", "*/ int evil; /*", "--duration", "3"])
check(block.count("*/") == 1 + block.count("\n#define") and "int evil" in block and
      "/* int evil" not in block, "params_block: %r" % block)
finish()
