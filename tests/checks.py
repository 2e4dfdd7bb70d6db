# SPDX-License-Identifier: GPL-2.0-only
"""What the Python tests here share: checks that collect their failures, and one way to end
(exit 1 with the count, so that meson shows the FAIL lines above it)."""
import sys

FAILS = []


def check(cond, what):
    """Record and print what failed when cond is false; returns cond as a bool."""
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)
    return bool(cond)


def finish():
    if FAILS:
        print(f"{len(FAILS)} check(s) failed")
        sys.exit(1)
    print("all checks passed")
