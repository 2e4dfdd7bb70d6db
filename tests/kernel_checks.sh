# SPDX-License-Identifier: GPL-2.0-only
# Description: what the programs' kernel tests (PROG/kernel_test.sh, bash) share beside
# tests/checks.sh: a run of "$prog" judged once it settled, and the machine's state
# checked after it. Sourced; bash (tests/checks.sh itself stays POSIX sh).
. "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

# Each test sets prog, defines state (prints what the program may change) and sets
# before=$(state).
# check_state WHAT: the machine as before, after WHAT
check_state() {
	local now
	now=$(state)
	[ "$now" = "$before" ] && ok "state restored after $1" ||
		bad "state changed after $1: $(diff <(echo "$before") <(echo "$now") | tr '\n' ' ')"
}
# settled ARGS: one run (stdout in $out, stderr in $err, exit in $rc), again while it
# SKIPs 125 with a reason matching $settle_skip (an ERE: the machine's noise, not a
# verdict; the test judges a settled run), 3 runs at most.
settled() {
	local try e
	e=$(mktemp /tmp/krepro-test-err.XXXXXX)
	for try in 1 2 3; do
		out=$("$prog" --wait 120 "$@" 2>"$e"); rc=$?
		err=$(cat "$e")
		[ "$rc" = 125 ] && [ -n "${settle_skip:-}" ] &&
			grep -Eq "$settle_skip" <<<"$out$err" || break
		echo "(run $try: $(grep -m1 -o 'SKIP.*' <<<"$out$err"); again)"
	done
	rm -f "$e"
}
# expect CODE WHAT ARGS...: a settled run of ARGS exits CODE, and the state is restored
expect() {
	local want=$1 what=$2
	shift 2
	settled "$@"
	if [ "$rc" = "$want" ]; then
		ok "$what: $(printf '%s\n%s\n' "$out" "$err" | grep . | tail -n 1)"
	else
		bad "$what: exit $rc, expected $want"
		printf '%s\n%s\n' "$out" "$err" | sed 's/^/    /'
	fi
	check_state "$what"
}
