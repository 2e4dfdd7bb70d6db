#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Description: config drift across bisect steps. A commit X adds a Kconfig option (default
# y) that the start config turns off; its parent does not know it. Steps X, parent, X with
# scripts/vm/bisect-kernel --build-only (real builds, the cache's tree from
# scripts/vm/build-kernels): X must get the same config hash both times. The same three
# steps the old way (make olddefconfig on the tree's .config in place) must not: the
# parent drops the option and X gets its default back, which is what this test guards.
# Off, not on: autoconf.h stays the parent's, so the builds are incremental (ccache), not
# the full rebuild a new =y symbol costs (18 min here).
#   tests/bisect_config_test.sh SOURCE_DIR      (needs root and the tree; else 77)
# The tree's checkout and .config are restored; the demo branch is deleted. KREPRO_FLOCK=FILE:
# hold FILE around each build (not when an ancestor holds it).
set -u
src=${1:?usage: bisect_config_test.sh SOURCE_DIR}
repo=${KREPRO_CACHE:-/var/cache/krepro}/src/linux-6.1
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
git -C "$repo" rev-parse -q --verify base >/dev/null 2>&1 ||
	{ echo "SKIP: no kernel tree $repo (scripts/vm/build-kernels)"; exit 77; }
git -C "$repo" diff --quiet HEAD || { echo "SKIP: $repo has local changes"; exit 77; }
lock=""
if [ -n "${KREPRO_FLOCK:-}" ] && ! python3 "$src/tests/benchlock.py" 2>/dev/null; then
	lock=$KREPRO_FLOCK
fi
locked() { if [ -n "$lock" ]; then flock "$lock" "$@"; else "$@"; fi; }
. "$(dirname "$0")/checks.sh"
tmp=$(mktemp -d /tmp/krepro-drift.XXXXXX)
head=$(git -C "$repo" symbolic-ref -q --short HEAD || git -C "$repo" rev-parse HEAD)
[ -f "$repo/.config" ] && cp "$repo/.config" "$tmp/saved.config"
g() { git -C "$repo" -c user.name=krepro -c user.email=krepro@localhost "$@"; }
cleanup() {
	g checkout -q -f "$head"
	g branch -D krepro-drift-demo >/dev/null 2>&1
	if [ -f "$tmp/saved.config" ]; then cp "$tmp/saved.config" "$repo/.config"; else rm -f "$repo/.config"; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# X = base + an option (default y) the start config turns off
g checkout -q -B krepro-drift-demo base
printf '\nconfig KREPRO_DRIFT_DEMO\n\tbool "krepro: a config-drift demonstration"\n\tdefault y\n' >>"$repo/init/Kconfig"
GIT_AUTHOR_DATE="2026-11-23T12:00:00+0000" GIT_COMMITTER_DATE="2026-11-23T12:00:00+0000" \
	g commit -q -a -m "krepro: a Kconfig option the parent does not know (config-drift test)"
x=$(g rev-parse --short=12 HEAD)
parent=$(g rev-parse --short=12 HEAD^)
"$src/scripts/vm/kernel-config" --defconfig -o "$tmp/start.config" "$repo" >/dev/null || { bad "kernel-config"; exit 1; }
echo "# CONFIG_KREPRO_DRIFT_DEMO is not set" >>"$tmp/start.config"

hash_of() { sha256sum "$1" | cut -c1-12; }
# the new way: each step from the start config
export KREPRO_BISECT_CONFIG="$tmp/start.config" KREPRO_BISECT_STEPS="$tmp/steps.txt" KREPRO_BUILD_LOG="$tmp/build.log"
for c in "$x" "$parent" "$x"; do
	g checkout -q --detach "$c"
	(cd "$repo" && locked "$src/scripts/vm/bisect-kernel" --build-only "$tmp/k") || bad "build of $c"
done
cat "$tmp/steps.txt"
h1=$(sed -n 1p "$tmp/steps.txt" | awk '{print $3}')
h2=$(sed -n 2p "$tmp/steps.txt" | awk '{print $3}')
h3=$(sed -n 3p "$tmp/steps.txt" | awk '{print $3}')
[ -n "$h1" ] && [ "$h1" = "$h3" ] && ok "$x built at steps 1 and 3 with one config ($h1)" ||
	bad "$x built with config $h1, then $h3"
[ "$h1" != "$h2" ] && ok "its parent's config differs ($h2): the option is unknown there" ||
	bad "the parent built the same config as $x: the test shows nothing"
grep -q '^# CONFIG_KREPRO_DRIFT_DEMO is not set' "$repo/.config" && ok "the option held at the last step" ||
	bad "the option did not hold at the last step"

# the old way: olddefconfig in place, the .config carried from step to step
unset KREPRO_BISECT_CONFIG
cp "$tmp/start.config" "$repo/.config"
old=""
for c in "$x" "$parent" "$x"; do
	g checkout -q --detach "$c"
	(cd "$repo" && make -s olddefconfig >/dev/null 2>&1) || bad "olddefconfig at $c"
	old="$old $(hash_of "$repo/.config")"
done
set -- $old
[ "$1" != "$3" ] && ok "in place, $x got two configs ($1, $3): the drift the new way avoids" ||
	bad "in place, $x kept its config: the test does not show the drift"
finish
