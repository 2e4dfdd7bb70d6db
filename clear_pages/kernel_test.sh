#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs clear_pages for real: the default run and --mitigate (a verdict that agrees with
# its own figures; the two metrics printed side by side), JSON, THP,
# bad options, and that vm.nr_hugepages, memory and /run/krepro are as before after a
# normal run and after SIGINT mid-run.
set -u
prog=${1:?usage: kernel_test.sh path/to/clear_pages}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -w /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages ] || { echo "SKIP: no hugetlb"; exit 77; }

. "$(dirname "$0")/../tests/hugetlb_test_lib.sh"
pool=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
nr0=$(cat $pool)

check_state() { # what every run must leave as it found
	local when=$1
	[ "$(cat $pool)" = "$nr0" ] || fail "$when: 2 MiB pool $(cat $pool), was $nr0"
	check_memory_and_journal "$when"
	ok "$when: state restored (nr_hugepages=$(cat $pool))"
}

# the verdict line says "clearing=M (limit L)": FAIL exactly when M < L
agrees() {
	local line=$1 rc=$2 m l
	m=$(echo "$line" | sed -n 's/.*clearing=\([0-9.]*\) (limit \([0-9.]*\)).*/\1/p')
	l=$(echo "$line" | sed -n 's/.*clearing=\([0-9.]*\) (limit \([0-9.]*\)).*/\2/p')
	[ -n "$m" ] || return 1
	case $rc in
	0) awk -v m="$m" -v l="$l" 'BEGIN { exit !(m >= l) }' ;;
	1) awk -v m="$m" -v l="$l" 'BEGIN { exit !(m < l) }' ;;
	125) true ;;
	*) false ;;
	esac
}
metric() { echo "$1" | sed -n 's/.*clearing=\([0-9.]*\).*/\1/p'; }
# SKIP 125 with one of the program's three reasons is a verdict it may give on any
# machine: every pass disturbed (a CPU hog, a parallel build), a metric within the margin
# of the limit (a memory system where the kernel clears at ~0.6 of the ceiling), or a
# slow default run whose last-byte control is as slow (a CI host where the kernel clears
# at 0.57 of rep stosb in either order: the memory, not the order); a wrong verdict or
# another reason never is
busy() {
	[ "$2" = 125 ] && echo "$1" | grep -Eq \
		"passes disturbed|within [0-9.]+ of the limit|last-byte control as slow"
}

# 1. default, then --mitigate: a verdict (a run disturbed by other tasks may be
# inconclusive: retried), with the three bandwidths, that agrees with its metric
for mode in "" --mitigate; do
	for try in 1 2 3; do
		# shellcheck disable=SC2086
		out=$("$prog" --wait 120 $mode); rc=$?
		[ $rc = 125 ] || break
	done
	last=$(echo "$out" | tail -1)
	if { [ $rc -le 1 ] && agrees "$last" $rc; } || busy "$out" $rc; then
		ok "${mode:-default} rc=$rc: $last"
	else fail "${mode:-default} rc=$rc: $last"; fi
	busy "$out" $rc ||
	echo "$out" | grep -q '^GiB/s, medians:  kernel [0-9.]*  rep stosb [0-9.]*  movnti' ||
		fail "${mode:-default}: no bandwidths in the report"
	check_state "${mode:-default} run"
	eval "m${mode:+_mitigate}=\$(metric \"\$last\")"
done
# bottom-up (fault at the last byte) against top-down: a figure, not a check (two timed
# runs; which is faster depends on the kernel, and the noise on the machine)
[ -n "$m" ] && [ -n "$m_mitigate" ] && echo "note: clearing at the first byte $m, at the last $m_mitigate"

# 2. JSON: the metric and the measurements
out=$("$prog" --wait 120 --format=json --repeat 1); rc=$?
if busy "$out" $rc; then
	ok "json rc=$rc: disturbed"
elif echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
m = d["measurements"]
assert d["metric"]["name"] == "clearing", d["metric"]
for f in ("kernel_gib_s", "stosb_gib_s", "movnti_gib_s", "vs_movnti"):
    assert m[f] > 0, f
assert abs(m["clearing"] - d["metric"]["value"]) < 1e-9
print("clearing %.2f, kernel %.1f rep stosb %.1f movnti %.1f GiB/s" % (
    m["clearing"], m["kernel_gib_s"], m["stosb_gib_s"], m["movnti_gib_s"]))'
then
	ok "json rc=$rc"
else
	fail "json (rc=$rc)"
fi
check_state "json run"

# 3. THP (129 where memory is too fragmented for them, 125 where THP is off)
out=$("$prog" --wait 120 --pages thp); rc=$?
last=$(echo "$out" | tail -1)
if agrees "$last" $rc || busy "$out" $rc || [ $rc = 129 ] || { [ $rc = 125 ] && echo "$last" | grep -q THP; }; then
	ok "--pages thp rc=$rc: $last"
else fail "--pages thp rc=$rc: $last"; fi
check_state "--pages thp"

# 4. bad values: exit 128 before anything changes
for bad in "--size 3M" "--size 16M" "--pages 4k" "--pages 1g" "--trigger" "--threads 2" \
	"--cpu 4096" "--threshold 3"; do
	# shellcheck disable=SC2086
	"$prog" --wait 120 $bad >/dev/null 2>&1; rc=$?
	[ $rc = 128 ] || fail "$bad: rc=$rc, want 128"
done
ok "bad options rejected"

# 5. SIGINT mid-run, with the hugetlb pool reserved
sigint_midrun $pool "$nr0" "$prog" --wait 120 --size 1G --repeat 100 --duration 60
check_state "after SIGINT"

[ $fails = 0 ] || exit 1
