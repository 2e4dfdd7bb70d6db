#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Description: kernel-suite test: the reduced matrix (scripts/matrix --ci: the lines of
# tests/matrix-expect.txt tagged ci, a few kernel x shape cells, under 3 minutes with TCG).
# The full matrix is `scripts/matrix` (about an hour under TCG).
#   tests/matrix_ci.sh SOURCE_DIR BUILD_DIR
# Exit 0 pass, 1 a cell differs from its expectation, 77 skip (not root, no qemu/kernel).
set -u
src=${1:?usage: matrix_ci.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: matrix_ci.sh SOURCE_DIR BUILD_DIR}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (packages, the krepro lock)"; exit 77; }
for p in qemu-system-x86 busybox-static e2fsprogs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		{ echo "SKIP: $p not installed (scripts/deps installs it)"; exit 77; }
done
for f in amd64 6.12-amd64 6.12-rt-amd64; do
	"$src/scripts/vm/debian-kernel" "$f" >/dev/null || { echo "SKIP: no Debian kernel $f"; exit 77; }
done
# static builds in their own directory inside the build directory (shared with vm_test.sh)
static=$build/vm-static
if [ ! -f "$static/build.ninja" ]; then
	meson setup "$static" "$src" -Dstatic=true -Dtests=false >/dev/null || { echo "FAIL: meson setup -Dstatic=true"; exit 1; }
fi
ninja -C "$static" >/dev/null || { echo "FAIL: static build"; exit 1; }
"$src/scripts/matrix" --ci --build "$static" --wait 600
rc=$?
[ "$rc" = 0 ] && exit 0
exit 1
