#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Description: is the shared bench lock (/tmp/krepro-bench.lock) held by one of our
ancestors, as in `flock /tmp/krepro-bench.lock scripts/test`? Then the fault and valgrind
tests must not take it again: flock(2) on a new open of the file would wait for ever.
KREPRO_BENCH_LOCK_HELD=1 says so explicitly. Exit 0 held by an ancestor, 1 not."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import krcompare  # noqa: E402

BENCH_LOCK = "/tmp/krepro-bench.lock"


def open_lock(path=BENCH_LOCK):
    """the bench lock opened as root in /tmp: never through a link (krcompare.open_lock)"""
    return krcompare.open_lock(path)


def _ancestors():
    pids, pid = set(), os.getppid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def held_by_ancestor(path=BENCH_LOCK):
    if os.environ.get("KREPRO_BENCH_LOCK_HELD") == "1":
        return True
    try:
        st = os.stat(path)
        with open("/proc/locks") as f:
            locks = [line.split() for line in f]
    except OSError:
        return False
    ancestors = _ancestors()
    for f in locks:  # "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; waiters have "->"
        if len(f) < 6 or f[1] != "FLOCK" or not f[4].isdigit():
            continue
        dev = f[5].split(":")
        if len(dev) == 3 and int(dev[2]) == st.st_ino and \
                os.makedev(int(dev[0], 16), int(dev[1], 16)) == st.st_dev and \
                int(f[4]) in ancestors:
            return True
    return False


if __name__ == "__main__":
    if sys.argv[1:] == ["--create"]:  # for shell: made safely, then opened read-only
        try:
            open_lock().close()
        except krcompare.Usage as e:
            sys.exit(f"benchlock: {e}")
        sys.exit(0)
    sys.exit(0 if held_by_ancestor() else 1)
