#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Kernel test of dio_kworker: runs it for real. On kernels where iomap completes async
# direct writes in the per-sb dio workqueue (6.18 here) the default run must FAIL and
# --mitigate must PASS; nothing may be left behind after a run or a SIGINT in the RT phase.
set -u
prog=$(realpath "$1")
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }

fail=0
bad() { echo "FAIL: $*"; fail=1; }

# a work dir on the build tree's filesystem, the runs' current directory (tmpfs has no
# direct I/O: the program skips)
work=$(mktemp -d "$PWD/dio_kworker-test.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 99

kworkers_not_other() { ps -eLo cls=,comm= | awk '$2 ~ /^kworker\// && $1 != "TS"'; }
leftovers() {
	ls -A "$work"
	ls /run/krepro 2>/dev/null | grep -v '^lock$'
	kworkers_not_other
}
[ -z "$(kworkers_not_other)" ] || { echo "SKIP: kworkers already changed before the test"; exit 77; }

# tmpfs is refused before anything changes
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
	(cd /dev/shm && "$prog" --wait 120 --quiet >/dev/null)
	rc=$?
	[ $rc = 129 ] || bad "in /dev/shm: exit $rc, expected 129"
fi

# default: the RT submitter on the completion CPU starves its own completions
out=$("$prog" --wait 120 --format=json)
rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 129 ] && { echo "SKIP: $out"; exit 77; }
echo "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin); print("default:", j["verdict"], j["metric"])' ||
	bad "default: JSON does not parse"
[ $rc = 1 ] || bad "default: exit $rc, expected 1 (FAIL)"
[ -z "$(leftovers)" ] || bad "default: left behind: $(leftovers)"

# --mitigate: the completion CPU's kworkers above the submitter; restored after
out=$("$prog" --wait 120 --mitigate --quiet)
rc=$?
echo "mitigate: $out"
[ $rc = 0 ] || bad "--mitigate: exit $rc, expected 0 (PASS)"
[ -z "$(leftovers)" ] || bad "--mitigate: left behind: $(leftovers)"

# SIGINT in the RT test phase (after the 1 s baseline) of a --mitigate run
"$prog" --wait 120 --mitigate --duration 1 --quiet >/dev/null 2>&1 &
pid=$!
# the RT phase is when --mitigate has raised the kworkers: waited for (not a fixed 1.6 s,
# which a slow start would spend in the baseline), up to 60 s
n=0
while [ -z "$(kworkers_not_other)" ] && kill -0 $pid 2>/dev/null && [ $n -lt 600 ]; do
	sleep 0.1; n=$((n + 1))
done
[ -n "$(kworkers_not_other)" ] && echo "SIGINT in the RT phase, $((n / 10)).$((n % 10)) s after the start" ||
	bad "SIGINT: the RT phase (kworkers raised) not seen in $((n / 10)).$((n % 10)) s"
kill -INT $pid
wait $pid
rc=$?
[ $rc = 128 ] || bad "SIGINT: exit $rc, expected 128 (interrupted)"
[ -z "$(leftovers)" ] || bad "SIGINT: left behind: $(leftovers)"

[ $fail = 0 ] && echo "PASS"
exit $fail
