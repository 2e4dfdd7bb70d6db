#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Description: valgrind memcheck on the unit tests (every test_* built in BUILDDIR) and on
# one default run of each program (the supervisor and its forked measuring child; exec'd
# children too). A memcheck error makes valgrind exit 99, a code no krepro program uses, so
# it is told apart from the verdict. Programs run under /tmp/krepro-bench.lock; under
# valgrind they run 20-50x slower and valgrind runs one thread at a time, so their verdicts
# mean nothing here (and may be ERROR from the hard cap): only memcheck's finding counts.
# Usage: tests/valgrind.sh [--builddir DIR] [--no-programs] [--no-units] [PROGRAM...]
#   PROGRAM: a name, optionally name:ARGS ("hwts:--duration 1") to shorten a run.
#   Default: every program with --duration 1 (every phase, 2-5x shorter), ktask_bench and
#   clear_pages also --size 64M --repeat 1 (their defaults clear 512 MiB many times, which
#   memcheck cannot do within the 35 s hard cap), rt_starve one 100 ms window.
# Exit 0: memcheck clean; 1: memcheck errors (or a unit test failed); 77: no valgrind.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$top/build
units=1
programs=1
list=()
while [ $# -gt 0 ]; do
	case "$1" in
	--builddir) builddir=${2:?}; shift 2 ;;
	--no-programs) programs=0; shift ;;
	--no-units) units=0; shift ;;
	-h|--help) sed -n '3,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) echo "tests/valgrind.sh: unknown option $1" >&2; exit 128 ;;
	*) list+=("$1"); shift ;;
	esac
done
command -v valgrind >/dev/null || { echo "tests/valgrind.sh: SKIP: no valgrind" >&2; exit 77; }
logdir=$builddir/valgrind
mkdir -p "$logdir"
lock_held=0
python3 "$top/tests/benchlock.py" && lock_held=1
# made without following a link (a user's, in /tmp), then only read: flock(1) on fd 9
python3 "$top/tests/benchlock.py" --create || exit 1
vg=(valgrind --vgdb=no --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --trace-children=yes --child-silent-after-fork=no)
failed=()

# The findings of a failed run, for a CI log that keeps nothing else: each log with
# errors, without valgrind's banner and its closing advice
show_errors() {
	local f
	for f in "$@"; do
		grep -q 'ERROR SUMMARY: [1-9]' "$f" || continue
		echo "--- $f"
		sed -e '1,/Parent PID/d' -e '/LEAK SUMMARY/,$d' "$f" | head -n 60
	done
}

# one unit test under memcheck: its line, and exit 1 when it failed
unit() {
	local t=$1 n rc start took errs
	n=$(basename "$t")
	rm -f "$logdir/$n".*.log
	start=$(date +%s.%N)
	# tests look for their data relative to the source tree, as meson runs them
	(cd "$top" && timeout -s KILL 600 "${vg[@]}" --log-file="$logdir/$n.%p.log" "$t" >"$logdir/$n.out" 2>&1)
	rc=$?
	took=$(echo "$(date +%s.%N) - $start" | bc)
	errs=$(cat "$logdir/$n".*.log | sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' | sort -n | tail -n 1)
	if [ "$rc" = 0 ]; then
		printf 'unit     %-22s ok   %5.1f s, memcheck errors: %s\n' "$n" "$took" "${errs:-?}"
	else
		printf 'unit     %-22s FAIL exit %s, memcheck errors: %s (logs %s/%s.*)\n' "$n" "$rc" "${errs:-?}" "$logdir" "$n"
		show_errors "$logdir/$n".*.log
		return 1
	fi
}

if [ "$units" = 1 ]; then
	# memcheck runs a process on one CPU: the unit tests (no timing, no system state) one
	# per CPU at a time, each printing when all are done
	for t in "$builddir"/*/test_*; do
		[ -x "$t" ] && [ -f "$t" ] || continue
		while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
		n=$(basename "$t")
		{ unit "$t" >"$logdir/$n.line" 2>&1 || echo "$n" >"$logdir/$n.failed"; } &
	done
	wait
	for t in "$builddir"/*/test_*; do
		n=$(basename "$t")
		[ -f "$logdir/$n.line" ] || continue
		cat "$logdir/$n.line"
		[ -f "$logdir/$n.failed" ] && failed+=("$n")
		rm -f "$logdir/$n.line" "$logdir/$n.failed"
	done
fi

if [ "$programs" = 1 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "tests/valgrind.sh: programs skipped: not root"
	else
		[ ${#list[@]} -gt 0 ] || for d in "$builddir"/*/; do
			p=$(basename "$d")
			[ -x "$d/$p" ] || continue
			case "$p" in
			ktask_bench|clear_pages) list+=("$p:--duration 1 --size 64M --repeat 1") ;;
			# one short window: under memcheck 3 windows ran into the 30 s cap
			rt_starve) list+=("$p:--repeat 1 --window 100ms --burst 50") ;;
			*) list+=("$p:--duration 1") ;;
			esac
		done
		for item in "${list[@]}"; do
			p=${item%%:*}
			args=
			[ "$item" != "$p" ] && args=${item#*:}
			exe=$builddir/$p/$p
			[ -x "$exe" ] || { echo "tests/valgrind.sh: no $exe" >&2; failed+=("$p"); continue; }
			rm -f "$logdir/$p".*.log
			start=$(date +%s.%N)
			# the bench lock is held until /run/krepro is checked: a run after ours may
			# have a journal of its own
			# (not when an ancestor holds it, as in flock ... scripts/test: benchlock.py)
			exec 9</tmp/krepro-bench.lock
			[ "$lock_held" = 1 ] || flock 9
			# shellcheck disable=SC2086
			timeout -s INT 300 "${vg[@]}" --log-file="$logdir/$p.%p.log" \
				"$exe" --wait 120 $args >"$logdir/$p.out" 2>"$logdir/$p.err"
			rc=$?
			left=$(ls /run/krepro 2>/dev/null | grep -v '^lock$' | tr '\n' ' ')
			flock -u 9
			exec 9>&-
			took=$(echo "$(date +%s.%N) - $start" | bc)
			errs=$(cat "$logdir/$p".*.log | sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' | sort -n | tail -n 1)
			verdict=$(grep -v '^$' "$logdir/$p.out" | tail -n 1)
			if [ "$rc" = 99 ] || [ "${errs:-0}" != 0 ]; then
				printf 'program  %-22s FAIL memcheck errors: %s (logs %s/%s.*)\n' "$p $args" "${errs:-?}" "$logdir" "$p"
				show_errors "$logdir/$p".*.log
				failed+=("$p")
			elif [ -n "$left" ]; then
				printf 'program  %-22s FAIL left in /run/krepro: %s\n' "$p" "$left"
				failed+=("$p")
			else
				printf 'program  %-22s ok   %5.1f s, exit %s, memcheck errors: %s, %s\n' "$p $args" "$took" "$rc" "${errs:-?}" "$verdict"
			fi
		done
	fi
fi
if [ ${#failed[@]} -gt 0 ]; then
	echo "tests/valgrind.sh: failed: ${failed[*]}"
	exit 1
fi
echo "tests/valgrind.sh: memcheck clean"
