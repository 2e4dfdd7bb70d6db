# SPDX-License-Identifier: GPL-2.0-only
"""What the Python tests here share: checks that collect their failures, and one way to end
(exit 1 with the count, so that meson shows the FAIL lines above it)."""
import contextlib
import fcntl
import importlib.machinery
import importlib.util
import os
import sys
import tempfile

FAILS = []


def check(cond, what):
    """Record and print what failed when cond is false; returns cond as a bool."""
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)
    return bool(cond)


def load_script(path):
    """A script of scripts/ (no .py suffix) as a module, for its functions."""
    name = os.path.basename(path).replace("-", "_")
    loader = importlib.machinery.SourceFileLoader(name, path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module


def finish():
    if FAILS:
        print(f"{len(FAILS)} check(s) failed")
        sys.exit(1)
    print("all checks passed")


@contextlib.contextmanager
def lock_held_elsewhere(prefix):
    """An environment whose KREPRO_RUNDIR is a private directory with its lock held, as if
    by another run of pid 4242: a program started in it takes the ERROR path (lock held)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as rundir:
        with open(os.path.join(rundir, "lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            lock.write("4242\n")
            lock.flush()
            yield dict(os.environ, KREPRO_RUNDIR=rundir)
