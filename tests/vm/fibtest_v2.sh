#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Description: fibtest on cgroup v2 for real, in Debian's kernel under scripts/vmrun --cgroup v2
# (this host's v2 has no cpu controller): the default run and --trigger give their verdicts
# with exactly the workload threads in the limited (threaded) group, and a container's view
# (tests/vm/fibtest_container.c) gives SKIP 129. Three boots, 2-4 minutes under TCG.
#   tests/vm/fibtest_v2.sh SOURCE_DIR STATIC_BUILD_DIR [vmrun options, e.g. --accel tcg]
set -u
src=${1:?usage: fibtest_v2.sh SOURCE_DIR STATIC_BUILD_DIR [vmrun options]}
build=${2:?usage: fibtest_v2.sh SOURCE_DIR STATIC_BUILD_DIR [vmrun options]}
shift 2
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
kernel=$("$src/scripts/vm/debian-kernel") || { echo "SKIP: no Debian kernel"; exit 77; }
tmp=$(mktemp -d /tmp/krepro-fibv2.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi; }
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1" 2>&1; }

cc -static -O2 -pthread -D_GNU_SOURCE -I"$src/lib" -I"$src/fibtest" -o "$tmp/fibtest_container" \
	"$src/tests/vm/fibtest_container.c" "$build/lib/libkrepro.a" -lm 2>/dev/null ||
	{ echo "FAIL: cannot build fibtest_container"; exit 1; }

"$src/scripts/vmrun" --wait 900 --cgroup v2 "$@" --kernel "$kernel" -- "$build/fibtest/fibtest" --format json >"$tmp/d.json"
check "default: PASS (the fix de53fd7aedb1 is in 6.1)" 0 $?
check "default: only the 2 workload threads in the group" 2 "$(json "$tmp/d.json" "int(j['measurements']['threads_in_group'])")"
"$src/scripts/vmrun" --wait 900 --cgroup v2 "$@" --kernel "$kernel" -- "$build/fibtest/fibtest" --trigger --format json >"$tmp/t.json"
check "--trigger: FAIL" 1 $?
check "--trigger: only the 8 workers in the group" 8 "$(json "$tmp/t.json" "int(j['measurements']['threads_in_group'])")"
"$src/scripts/vmrun" --wait 900 --cgroup v2 "$@" --kernel "$kernel" -- "$tmp/fibtest_container" --format json >"$tmp/c.json"
check "container: SKIP 129" 129 $?
check "container: the reason" True "$(json "$tmp/c.json" "'processes in it' in j['reason']")"
[ $fails = 0 ] || exit 1
echo "fibtest v2 in a guest: ok"
