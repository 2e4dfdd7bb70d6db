# SPDX-License-Identifier: GPL-2.0-only
# Description: the shell tests' checks, as tests/checks.py is the Python tests': ok and bad
# print one line each, finish exits 0 (PASS) when no check failed, else 1. Sourced.
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
finish() {
	[ "$fails" = 0 ] && echo "PASS" && exit 0
	echo "FAILED: $fails"
	exit 1
}
