#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Description: runs fibtest for real on this machine (meson suite 'kernel'): the default run
# must PASS, --trigger must FAIL, JSON must parse, and the slice sysctl and cgroups must be as
# before after a normal run, after SIGINT mid-run, and after SIGKILL + --restore-only.
# Usage: kernel_test.sh PATH/TO/fibtest     (exit 77 = skip when not root)
set -u
prog=${1:?usage: kernel_test.sh PATH/TO/fibtest}
slice=/proc/sys/kernel/sched_cfs_bandwidth_slice_us
. "$(dirname "$0")/../tests/kernel_checks.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -e "$slice" ] || { echo "SKIP: no CONFIG_CFS_BANDWIDTH"; exit 77; }

state() { # what fibtest may change: the slice sysctl and its cgroups
	cat "$slice"
	ls -d /sys/fs/cgroup/*/krepro-fibtest-* /sys/fs/cgroup/krepro-fibtest-* \
		/sys/fs/cgroup/unified/krepro-fibtest-* 2>/dev/null
}
before=$(state)
# SKIP 125 "inconclusive": host steal or too few decisive windows, the machine's noise
settle_skip=inconclusive

expect 0 "default run PASSes" --quiet
expect 1 "--trigger FAILs" --quiet --trigger
expect 128 "bad --quota is a usage error" --quota 0
expect 128 "bad --workload is a usage error" --workload nope

# JSON parses and carries the figures
settled --format json
if python3 -c '
import json, sys
d = json.load(sys.stdin)
m = d["measurements"]
assert d["program"] == "fibtest" and d["verdict"] == "PASS", d["verdict"]
assert d["metric"]["name"] == "efficiency" and d["metric"]["value"] > 0.9, d["metric"]
assert 0 <= m["throttled_pct"] <= 100, m
' <<<"$out"; then ok "--format json parses"; else bad "--format json"; fi
check_state "--format json"

# --csv: one row per period
csvdir=$(mktemp -d /tmp/krepro-fibtest-csv.XXXXXX)
csv=$csvdir/samples.csv # a new file: a run replaces no file
"$prog" --wait 120 --quiet --csv "$csv" >/dev/null
rows=$(($(wc -l <"$csv") - 1))
if [ "$rows" -ge 90 ] && head -n 1 "$csv" | grep -q '^window,t_ms,'; then
	ok "--csv has $rows per-period rows"
else
	bad "--csv has $rows rows"
fi
rm -rf "$csvdir"

# SIGINT mid-run (while the slice is raised): restored by the supervisor
"$prog" --wait 120 --trigger --duration 3 --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 50); do [ "$(cat "$slice")" != "$(echo "$before" | head -n 1)" ] && break; sleep 0.1; done
kill -INT "$pid"; wait "$pid"; rc=$?
[ "$rc" = 128 ] && ok "SIGINT gives ERROR" || bad "SIGINT exit $rc"
check_state "SIGINT"

# SIGKILL of the supervisor: the next krepro run restores its journal
"$prog" --wait 120 --trigger --duration 3 --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 50); do [ "$(cat "$slice")" != "$(echo "$before" | head -n 1)" ] && break; sleep 0.1; done
kill -KILL "$pid"; wait "$pid" 2>/dev/null
sleep 0.2
"$prog" --wait 120 --restore-only 2>/dev/null
check_state "SIGKILL + --restore-only"
[ -e "/run/krepro/journal.$pid" ] && bad "journal.$pid left"

finish
