#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Description: the optional `bisect` suite (never in default CI: about an hour under TCG).
# Builds Debian's linux-source-6.1 and krepro's bisect history (scripts/vm/build-kernels
# --history, annotated tags), then three whole bisects with scripts/vm/kernel-bisect, each
# between annotated tags (the release carries no -gHASH there):
#   rt_starve, a regression over rt-good..rt-bad       must name rt-culprit
#   fibtest, a regression over fib-good..fib-bad       must name fib-culprit (4 CPUs)
#   rt_starve, a fix (--fix) over fib-bad..rt-fixed    must name rt-fix, the re-applied revert
# and checks for each: the culprit verified (itself 3/3, its parent 3/3, the bad endpoint
# with it reverted 3/3), and one config hash for every commit built twice (the culprit and
# its parent are built again for the check). Also: a bad option or a non-root run makes
# bisect-kernel abort (>= 128) before it builds anything.
#   tests/bisect_test.sh SOURCE_DIR BUILD_DIR [VMRUN-OPTIONS...]   (default: --accel tcg)
# Records: BUILD_DIR/bisect-NAME/ (kernel-bisect's). KREPRO_FLOCK=FILE: hold FILE around each
# build and guest run (not when an ancestor holds it). Exit 0 pass, 1 fail, 77 skip.
set -u
src=${1:?usage: bisect_test.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: bisect_test.sh SOURCE_DIR BUILD_DIR}
shift 2
[ $# -gt 0 ] || set -- --accel tcg
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (packages, the krepro lock)"; exit 77; }
. "$(dirname "$0")/checks.sh"
lock=""
if [ -n "${KREPRO_FLOCK:-}" ] && ! python3 "$src/tests/benchlock.py" 2>/dev/null; then
	lock=$KREPRO_FLOCK
fi
locked() { if [ -n "$lock" ]; then flock "$lock" "$@"; else "$@"; fi; }

static=$build/vm-static
if [ ! -f "$static/build.ninja" ]; then
	meson setup "$static" "$src" -Dstatic=true -Dtests=false >/dev/null || { bad "meson setup -Dstatic=true"; exit 1; }
fi
ninja -C "$static" fibtest/fibtest rt_starve/rt_starve >/dev/null || { bad "static build"; exit 1; }
locked "$src/scripts/vm/build-kernels" --history base || { bad "build-kernels"; exit 1; }
repo=${KREPRO_CACHE:-/var/cache/krepro}/src/linux-6.1
git -C "$repo" checkout -q --detach base
for t in rt-good rt-bad fib-good fib-bad rt-fixed; do
	[ "$(git -C "$repo" cat-file -t "$t")" = tag ] || bad "$t is not an annotated tag"
done

# aborts, before any build: a bad option, a non-root run
(cd "$repo" && "$src/scripts/vm/bisect-kernel" "$@" -- "$static/rt_starve/rt_starve" --window 5 2>/dev/null)
rc=$?
[ "$rc" = 128 ] && ok "bad option: bisect-kernel 128" || bad "bad option: bisect-kernel $rc, want 128"
if command -v setpriv >/dev/null; then
	(cd "$repo" && setpriv --reuid=65534 --regid=65534 --clear-groups "$src/scripts/vm/bisect-kernel" "$@" -- "$static/rt_starve/rt_starve" 2>/dev/null)
	rc=$?
	[ "$rc" -ge 128 ] && ok "non-root: bisect-kernel $rc" || bad "non-root: bisect-kernel $rc, want >= 128"
fi

# the guest must run this build: another build of the same release (an annotated tag's
# release has no -gHASH) is told apart by uname -v (build number and time): abort, 128
git -C "$repo" checkout -q --detach rt-good
(cd "$repo" && KREPRO_BISECT_STEPS= locked "$src/scripts/vm/bisect-kernel" "$@" -- "$static/rt_starve/rt_starve" --quiet >/dev/null 2>&1)
cp "$repo/arch/x86/boot/bzImage" "$build/bisect-older-bzImage"
touch "$repo/kernel/softirq.c"
(cd "$repo" && locked "$src/scripts/vm/bisect-kernel" "$@" --kernel "$build/bisect-older-bzImage" -- "$static/rt_starve/rt_starve" --quiet)
rc=$?
[ "$rc" = 128 ] && ok "an older build of the same release: 128" || bad "an older build of the same release: exit $rc, want 128"
rm -f "$build/bisect-older-bzImage"
git -C "$repo" checkout -q --detach base

check() { # NAME TERM-NEW CULPRIT KERNEL-BISECT-ARGS...
	name=$1 term=$2 culprit=$3
	shift 3
	out=$build/bisect-$name
	"$src/scripts/vm/kernel-bisect" ${lock:+--flock "$lock"} --out "$out" "$@"
	rc=$?
	first=$(sed -n "s/^# first $term commit: \[\([0-9a-f]*\)\].*/\1/p" "$out/bisect.log" 2>/dev/null)
	want=$(git -C "$repo" rev-parse "$culprit^{commit}")
	[ "$first" = "$want" ] && ok "$name: first $term commit is $culprit" ||
		bad "$name: first $term commit ${first:-none}, want $culprit $want"
	[ "$rc" = 0 ] && grep -q '^verify: the culprit is confirmed' "$out/summary.txt" &&
		ok "$name: the culprit is verified" || bad "$name: kernel-bisect exit $rc, not verified"
	grep -E '^verify: ' "$out/summary.txt"
	grep -q 'does not build' "$out/steps.txt" && ok "$name: the unbuildable commit was skipped" ||
		echo "note: $name: the bisect did not meet the unbuildable commit"
	# a commit built twice (bisect and check) must have been built with one config
	drift=$(awk '$2 == "config" && $3 != "none" {print $1, $3}' "$out/steps.txt" | sort -u |
		awk '{n[$1]++} n[$1] == 2 {print $1}')
	twice=$(awk '$2 == "config" {print $1}' "$out/steps.txt" | sort | uniq -d | wc -l)
	[ -z "$drift" ] && ok "$name: one config per commit ($twice built twice)" ||
		bad "$name: built with two configs: $drift"
}
vmopts="$* --wait 900"
# shellcheck disable=SC2086
check rt_starve bad rt-culprit rt-good rt-bad $vmopts -- "$static/rt_starve/rt_starve" --quiet
# fibtest's default run in a 4-CPU guest: the re-created expiry strands up to 1 ms per CPU
# that holds leftover runtime each period, so with 3 slow CPUs a bad kernel loses 25-32 %
# of the quota (0.68-0.77, 10/10 FAIL; good 0.95-1.00, 18/18 PASS); on 2 vCPUs (one slow
# CPU) it lost only 7-22 %, and the default 0.90 rule FAILed 6 of 10
# shellcheck disable=SC2086
check fibtest bad fib-culprit fib-good fib-bad $vmopts --cpus 4 -- "$static/fibtest/fibtest" --quiet
# the fix: which commit made rt_starve PASS again
# shellcheck disable=SC2086
check rt_starve-fix fixed rt-fix --fix --term-old broken --term-new fixed fib-bad rt-fixed $vmopts \
	-- "$static/rt_starve/rt_starve" --quiet
finish
