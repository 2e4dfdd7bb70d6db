#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs ktask_bench for real: default PASS, --trigger FAIL, JSON, bad options, more threads
# than CPUs, and that vm.nr_hugepages, the hugetlb pool, memory and /run/krepro are as
# before after a normal run and after SIGINT mid-run. (How fast one thread of the kernel
# clears a huge page is clear_pages', its own program since issue 25.)
set -u
prog=${1:?usage: kernel_test.sh path/to/ktask_bench}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -w /proc/sys/vm/nr_hugepages ] || { echo "SKIP: no hugetlb"; exit 77; }

. "$(dirname "$0")/../tests/hugetlb_test_lib.sh"
nr0=$(cat /proc/sys/vm/nr_hugepages)
g1=/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages
g10=$(cat $g1 2>/dev/null)

check_state() { # what every run must leave as it found
	local when=$1 nr
	nr=$(cat /proc/sys/vm/nr_hugepages)
	[ "$nr" = "$nr0" ] || fail "$when: vm.nr_hugepages $nr, was $nr0"
	[ "$(mem HugePages_Total)" = "$nr0" ] || fail "$when: HugePages_Total $(mem HugePages_Total)"
	[ "$(cat $g1 2>/dev/null)" = "$g10" ] || fail "$when: 1 GiB pool $(cat $g1), was $g10"
	check_memory_and_journal "$when"
	ok "$when: state restored (nr_hugepages=$nr)"
}

# 1. default run: PASS (a run disturbed by other tasks may be inconclusive: retry)
for try in 1 2 3; do
	out=$("$prog" --wait 120); rc=$?
	[ $rc = 125 ] || break
done
# where memory bandwidth gives N threads less than 1.25x, serialised and parallel look
# alike: the program says so (SKIP 125 "memory bandwidth does not scale"), never a verdict
blind() { [ $rc = 125 ] && echo "$out" | tr "\n" " " | grep -Eq "bandwidth +does +not +scale"; }
# on a machine busy with other work (a CPU hog, a parallel build) every repeat may be
# disturbed: the program says so (SKIP 125), which is right; a FAIL here never is
busy() { [ $rc = 125 ] && echo "$out" | grep -q "repeat disturbed"; }
if [ $rc = 0 ] || blind || busy; then ok "default rc=$rc: $(echo "$out" | tail -1)"; else fail "default rc=$rc: $(echo "$out" | tail -1)"; fi
echo "$out" | grep -q '^hugetlb: ' && echo "$out" | grep -q '^thp: ' && echo "$out" | grep -q '^4k: ' ||
	fail "default run lacks a table of hugetlb, thp and 4k"
check_state "default run"

# 2. positive control: threads fallocate() one hugetlbfs file, serialised by inode_lock
out=$("$prog" --wait 120 --trigger --repeat 3); rc=$?
if [ $rc = 1 ] || blind; then ok "--trigger rc=$rc: $(echo "$out" | tail -1)"; else fail "--trigger rc=$rc: $(echo "$out" | tail -1)"; fi
check_state "--trigger run"

# 3. JSON parses, and says what it could not test with more threads than CPUs
out=$("$prog" --wait 120 --format=json --pages thp --threads 3 --repeat 2); rc=$?
echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "gain" in d["measurements"]' &&
	ok "json parses (rc=$rc)" || fail "json does not parse"
echo "$out" | grep -q 'oversubscribe' || fail "--threads 3 does not say it oversubscribes"
echo "$out" | grep -q 'NUMA placement not exercised' ||
	[ "$(ls -d /sys/devices/system/node/node* | wc -l)" -gt 1 ] || fail "one node not reported"
# the node count this host does not have: ktask_bench-rule's machine_shapes
# (test_ktask_bench.c) splits the region over tests/shapes/numa2-intel's two nodes
if [ "$(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)" -gt 1 ]; then
	echo "(shape: NUMA; one node: ktask_bench-rule machine_shapes, tests/shapes)"
else
	echo "(shape: one node; two: ktask_bench-rule machine_shapes, numa2-intel)"
fi

# 4. bad values: exit 128 before anything changes
for bad in "--size 3M" "--size 0" "--chunk 1M" "--chunk 17M" "--threads 1" "--pages 2M" \
	"--pages 1g" "--pages hugetlb,thp" "--measure clearing" "--method fallocate --pages thp" \
	"--trigger --pages 4k" "--trigger --method populate" "--size 64M --chunk 128M"; do
	# shellcheck disable=SC2086
	"$prog" --wait 120 $bad >/dev/null 2>&1; rc=$?
	[ $rc = 128 ] || fail "$bad: rc=$rc, want 128"
done
ok "bad options rejected"

# 5. SIGINT mid-run, with the hugetlb pool reserved
sigint_midrun /proc/sys/vm/nr_hugepages "$nr0" "$prog" --wait 120 --pages hugetlb --size 1G \
	--repeat 100 --duration 60
check_state "after SIGINT"

[ $fails = 0 ] || exit 1
