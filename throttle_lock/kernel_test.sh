#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Description: runs throttle_lock for real on this machine (meson suite 'kernel'): the
# default run FAILs before 6.18 and PASSes from 6.18 on (the throttle model is the
# kernel's, by its version), --mitigate PASSes and --trigger FAILs everywhere, JSON
# parses, and the cgroups are as before after a normal run, after SIGINT mid-run and
# after SIGKILL + --restore-only.
# Usage: kernel_test.sh PATH/TO/throttle_lock     (exit 77 = skip when not root)
set -u
prog=${1:?usage: kernel_test.sh PATH/TO/throttle_lock}
. "$(dirname "$0")/../tests/kernel_checks.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -e /proc/sys/kernel/sched_cfs_bandwidth_slice_us ] || { echo "SKIP: no CFS_BANDWIDTH"; exit 77; }

state() { # what throttle_lock may change: its cgroups, cpu in the v2 root's subtree
	cat /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
	ls -d /sys/fs/cgroup/*/krepro-throttle_lock-* /sys/fs/cgroup/krepro-throttle_lock-* \
		/sys/fs/cgroup/unified/krepro-throttle_lock-* 2>/dev/null
}
before=$(state)
# SKIP 125 "no read waited", "never throttled": the machine's noise, run again
settle_skip="no read waited|never throttled"

IFS=. read -r major minor _ <<<"$(uname -r)"
if [ $((major * 1000 + ${minor%%[!0-9]*})) -ge 6018 ]; then
	echo "(kernel $(uname -r): the task-based throttle, 6.18+: PASS expected)"
	expect 0 "default run PASSes (6.18+)" --quiet
else
	echo "(kernel $(uname -r): throttled in the kernel, before 6.18: FAIL expected)"
	expect 1 "default run FAILs (before 6.18)" --quiet
fi
expect 0 "--mitigate PASSes" --quiet --mitigate
expect 1 "--trigger FAILs (a user-space lock: any kernel)" --quiet --trigger
expect 128 "--quota not below --period is a usage error" --quota 100ms
expect 128 "bad --size is a usage error" --size 1

settled --format json --mitigate
if python3 -c '
import json, sys
d = json.load(sys.stdin)
m = d["measurements"]
assert d["program"] == "throttle_lock" and d["verdict"] == "PASS", d["verdict"]
assert d["metric"]["name"] == "stall" and 0 <= d["metric"]["value"] < 0.5, d["metric"]
assert m["reads"] > 1000 and 0 < m["waited_reads"] <= m["reads"], m
assert m["wait_max_us"] >= m["wait_p99_us"] > 0, m
' <<<"$out"; then ok "--format json parses"; else bad "--format json"; fi
check_state "--format json"

# SIGINT mid-run (the group made): restored by the supervisor
"$prog" --wait 120 --duration 5 --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 50); do [ "$(state)" != "$before" ] && break; sleep 0.1; done
kill -INT "$pid"; wait "$pid"; rc=$?
[ "$rc" = 128 ] && ok "SIGINT gives ERROR" || bad "SIGINT exit $rc"
check_state "SIGINT"

# SIGKILL of the supervisor: the next krepro run restores its journal
"$prog" --wait 120 --duration 5 --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 50); do [ "$(state)" != "$before" ] && break; sleep 0.1; done
kill -KILL "$pid"; wait "$pid" 2>/dev/null
sleep 0.2
"$prog" --wait 120 --restore-only 2>/dev/null
check_state "SIGKILL + --restore-only"
[ -e "/run/krepro/journal.$pid" ] && bad "journal.$pid left"
finish
