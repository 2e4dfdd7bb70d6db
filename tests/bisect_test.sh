#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Description: the optional `bisect` suite (never in default CI: 30-60 min under TCG). Builds
# Debian's linux-source-6.1 and krepro's bisect history (scripts/vm/build-kernels --history),
# then bisects rt_starve over rt-good..rt-bad and fibtest over fib-good..fib-bad with
# scripts/vm/kernel-bisect, and checks that each names its culprit tag, that the unbuildable
# commit met on the way was skipped (125), and that a bad option or a non-root run makes
# bisect-kernel abort (>= 128) before it builds anything.
#   tests/bisect_test.sh SOURCE_DIR BUILD_DIR [VMRUN-OPTIONS...]   (default: --accel tcg)
# Records: BUILD_DIR/bisect-rt_starve/, BUILD_DIR/bisect-fibtest/. Exit 0 pass, 1 fail, 77 skip.
set -u
src=${1:?usage: bisect_test.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: bisect_test.sh SOURCE_DIR BUILD_DIR}
shift 2
[ $# -gt 0 ] || set -- --accel tcg
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (packages, the krepro lock)"; exit 77; }
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

static=$build/vm-static
if [ ! -f "$static/build.ninja" ]; then
	meson setup "$static" "$src" -Dstatic=true -Dtests=false >/dev/null || { bad "meson setup -Dstatic=true"; exit 1; }
fi
ninja -C "$static" fibtest/fibtest rt_starve/rt_starve >/dev/null || { bad "static build"; exit 1; }
"$src/scripts/vm/build-kernels" --history base || { bad "build-kernels"; exit 1; }
repo=${KREPRO_CACHE:-/var/cache/krepro}/src/linux-6.1
git -C "$repo" checkout -q --detach base

# aborts, before any build: a bad option, a non-root run
(cd "$repo" && "$src/scripts/vm/bisect-kernel" "$@" -- "$static/rt_starve/rt_starve" --window 5 2>/dev/null)
rc=$?
[ "$rc" = 128 ] && ok "bad option: bisect-kernel 128" || bad "bad option: bisect-kernel $rc, want 128"
if command -v setpriv >/dev/null; then
	(cd "$repo" && setpriv --reuid=65534 --regid=65534 --clear-groups "$src/scripts/vm/bisect-kernel" "$@" -- "$static/rt_starve/rt_starve" 2>/dev/null)
	rc=$?
	[ "$rc" -ge 128 ] && ok "non-root: bisect-kernel $rc" || bad "non-root: bisect-kernel $rc, want >= 128"
fi

check() { # NAME GOOD BAD CULPRIT PROGRAM ARGS...
	name=$1 good=$2 badc=$3 culprit=$4
	shift 4
	out=$build/bisect-$name
	"$src/scripts/vm/kernel-bisect" --out "$out" "$good" "$badc" $vmopts -- "$@"
	first=$(sed -n 's/^# first bad commit: \[\([0-9a-f]*\)\].*/\1/p' "$out/bisect.log" 2>/dev/null)
	want=$(git -C "$repo" rev-parse "$culprit")
	[ "$first" = "$want" ] && ok "$name: first bad commit is $culprit" ||
		bad "$name: first bad commit ${first:-none}, want $culprit $want"
	grep -q 'does not build' "$out/steps.txt" && ok "$name: the unbuildable commit was skipped" ||
		echo "note: $name: the bisect did not meet the unbuildable commit"
}
vmopts="$* --wait 900"
check rt_starve rt-good rt-bad rt-culprit "$static/rt_starve/rt_starve" --quiet
# fibtest's default run in a 4-CPU guest: the re-created expiry strands up to 1 ms per CPU
# that holds leftover runtime each period, so with 3 slow CPUs a bad kernel loses 25-32 %
# of the quota (0.68-0.77, 10/10 FAIL; good 0.95-1.00, 18/18 PASS); on 2 vCPUs (one slow
# CPU) it lost only 7-22 %, and the default 0.90 rule FAILed 6 of 10
vmopts="$vmopts --cpus 4"
check fibtest fib-good fib-bad fib-culprit "$static/fibtest/fibtest" --quiet
[ "$fails" = 0 ] && echo "PASS" && exit 0
echo "FAILED: $fails"
exit 1
