#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Description: runs irqacct for real. Without CONFIG_IRQ_TIME_ACCOUNTING the default run must
# FAIL (irq time charged to the interrupted task), with it PASS; the JSON must parse; nothing
# (processes, journal, ksoftirqd's policy) may be left after a normal run and after SIGINT
# mid-run. (Its network namespace is held by its fds only: it cannot outlive it.)
set -u
prog=${1:?usage: kernel_test.sh PATH/TO/irqacct}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# ksoftirqd of the victim CPU (the last one) runs at SCHED_FIFO during a run: journaled
victim=$(($(nproc) - 1))
ksoftirqd_policy() { chrt -p "$(pgrep -x "ksoftirqd/$victim")" 2>/dev/null | tr '\n' ' '; }
policy_before=$(ksoftirqd_policy)

leftovers() { # $1: supervisor pid
	[ "$(ksoftirqd_policy)" = "$policy_before" ] ||
		bad "ksoftirqd/$victim not restored: $(ksoftirqd_policy), was $policy_before"
	ls /run/krepro 2>/dev/null | grep -qw -- "journal.$1" && bad "journal of pid $1 left in /run/krepro"
	# system-wide: another user's short run may come and go (a contract test outside the
	# bench lock): waited for up to 30 s, only one that stays is a failure
	local n=0
	while pgrep -x irqacct >/dev/null && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
	pgrep -a -x irqacct && bad "an irqacct process is still running"
}

if zcat /proc/config.gz 2>/dev/null | grep -q '^CONFIG_IRQ_TIME_ACCOUNTING=y' ||
   grep -qs '^CONFIG_IRQ_TIME_ACCOUNTING=y' "/boot/config-$(uname -r)"; then
	want=0 # precise irq time accounting: PASS
else
	want=1
fi

# 1. default run, JSON: the verdict this kernel must show (one retry when inconclusive:
#    other tasks on the victim CPU make a run SKIP 125, never a wrong verdict)
tmp=$(mktemp /tmp/irqacct-kt.XXXXXX)
trap 'rm -f "$tmp"' EXIT
for try in 1 2 3; do
	"$prog" --wait 120 --format json >"$tmp" &
	pid=$!
	wait "$pid"; rc=$?
	[ "$rc" = 125 ] || break
done
out=$(cat "$tmp")
skipped=0
if [ "$rc" = 125 ]; then
	echo "default run inconclusive 3 times (other load on the victim CPU?)"; skipped=1
else
	[ "$rc" = "$want" ] || bad "default run: exit $rc, expected $want"
fi
echo "$out" | python3 -c 'import json,sys
d=json.load(sys.stdin); m=d["measurements"]
assert d["program"] == "irqacct" and d["exit_code"] == '"$rc"', d["verdict_line"]
for k in ("hidden", "lost_ms_per_s", "stat_softirq_ratio_busy", "stat_softirq_ratio_idle"):
    assert k in m, k
print(d["verdict_line"])' || bad "JSON output does not parse or lacks fields"
leftovers "$pid"

# 2. --quiet: only the verdict line; bad usage is ERROR 128 before anything changes
n=$("$prog" --wait 120 --quiet --duration 3 | wc -l)
[ "$n" = 1 ] || bad "--quiet printed $n lines"
"$prog" --rate 12x >/dev/null 2>&1; [ $? = 128 ] || bad "--rate 12x: not exit 128"
"$prog" --threshold 2 >/dev/null 2>&1; [ $? = 128 ] || bad "--threshold 2: not exit 128"

# 3. SIGINT mid-run: ERROR 128, and nothing left behind
"$prog" --wait 120 --duration 5 >/dev/null 2>&1 &
pid=$!
sleep 3
kill -INT "$pid"
wait "$pid"; rc=$?
[ "$rc" = 128 ] || bad "SIGINT: exit $rc, expected 128"
sleep 0.5
leftovers "$pid"

[ "$fail" = 0 ] || exit 1
[ "$skipped" = 0 ] || exit 77
echo "irqacct kernel test: ok"
