#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Description: what the programs change and restore where this host cannot show it, in
# Debian's 6.1 under scripts/vmrun (issue 42): hwts with real cpuidle states (--idle-states)
# and a NIC that takes SIOCSHWTSTAMP (--nic e1000e), and fibtest on a cgroup v2-only guest
# (--cgroup v2), each killed mid-run
# (tests/vm/restore_in_guest.sh runs inside). Two boots, ~40 s under TCG.
#   tests/vm/restore_guest.sh SOURCE_DIR BUILD_DIR [vmrun options]
set -u
src=${1:?usage: restore_guest.sh SOURCE_DIR BUILD_DIR [vmrun options]}
build=${2:?usage: restore_guest.sh SOURCE_DIR BUILD_DIR [vmrun options]}
shift 2
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
for p in qemu-system-x86_64 mkfs.ext4 /bin/busybox; do
	command -v $p >/dev/null || { echo "SKIP: no $p (scripts/deps test installs it)"; exit 77; }
done
kernel=$("$src/scripts/vm/debian-kernel" amd64) || { echo "SKIP: no Debian 6.1 kernel"; exit 77; }
# the static builds vm_test.sh and matrix_ci.sh share
static=$build/vm-static
if [ ! -f "$static/build.ninja" ]; then
	meson setup "$static" "$src" -Dstatic=true -Dtests=false >/dev/null || { echo "FAIL: meson setup -Dstatic=true"; exit 1; }
fi
ninja -C "$static" hwts/hwts fibtest/fibtest >/dev/null || { echo "FAIL: static build of hwts, fibtest"; exit 1; }
fails=0
cc -static -O2 -Wall -o "$static/hwtsctl" "$src/tests/vm/hwtsctl.c" || { echo "FAIL: cc -static hwtsctl.c"; exit 1; }
for shape in "idle,hwtstamp --idle-states --nic=e1000e" "cgv2 --cgroup=v2"; do
	what=${shape%% *}
	# shellcheck disable=SC2086
	"$src/scripts/vmrun" --wait 900 ${shape#* } "$@" --kernel "$kernel" \
		--file "$static/hwts/hwts" --file "$static/fibtest/fibtest" --file "$static/hwtsctl" \
		--file "$src/tests/vm/restore_in_guest.sh" \
		-- /bin/busybox sh /usr/bin/restore_in_guest.sh ${what//,/ }
	rc=$?
	[ $rc = 0 ] || { echo "FAIL: $what: vmrun exit $rc"; fails=$((fails + 1)); }
done
[ $fails = 0 ] || exit 1
echo "restores in guests: ok"
