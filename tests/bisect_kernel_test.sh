#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Description: scripts/vm/bisect-kernel's build side without a kernel: a stand-in `make` in
# a PATH of its own, in a one-commit git tree. Checks: plain gcc when ccache is absent,
# `ccache gcc` when present, KREPRO_CC wins; every step starts from KREPRO_BISECT_CONFIG
# (the tree's .config is replaced by it; a tree without one builds too) and the step line
# names its sha256; a build that
# fails is 125 with a "does not build" step line; --build-only copies what it built.
# --runs 3: the majority verdict, each run's exit in the step line; --unanimous: all.
#   tests/bisect_kernel_test.sh SOURCE_DIR          (needs root: bisect-kernel does; else 77)
set -u
src=${1:?usage: bisect_kernel_test.sh SOURCE_DIR}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
. "$(dirname "$0")/checks.sh"
tmp=$(mktemp -d /tmp/krepro-bktest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$tmp/bin" "$tmp/tree/arch/x86/boot"
for t in sh git sed sha256sum cut date id nproc nice cp mktemp rm cat grep dirname head env mkdir echo stat sort chown; do
	p=$(command -v "$t") && ln -s "$p" "$tmp/bin/$t"
done
# make: logs its arguments; olddefconfig appends a line (as kconfig rewrites the file);
# a build fails when the tree has a file named FAIL
cat >"$tmp/bin/make" <<EOF
#!/bin/sh
echo "make \$*" >>"$tmp/make.log"
case "\$*" in
*kernelrelease*) echo 6.1.0-test ;;
*olddefconfig*) echo "# olddefconfig" >>.config ;;
*bzImage*) [ ! -e FAIL ] || exit 2; echo image >arch/x86/boot/bzImage ;;
esac
EOF
chmod +x "$tmp/bin/make"
cd "$tmp/tree" || exit 1
echo "# the tree's own" >.config
: >Makefile
git init -q && git add Makefile && git -c user.name=k -c user.email=k@l commit -qm "one commit"
printf 'CONFIG_HZ_250=y\n' >"$tmp/start.config"
step() { PATH=$tmp/bin KREPRO_BISECT_STEPS=$tmp/steps.txt KREPRO_BUILD_LOG=$tmp/build.log "$@" \
	"$src/scripts/vm/bisect-kernel" --build-only "$tmp/out" 2>>"$tmp/err"; }

step env KREPRO_BISECT_CONFIG="$tmp/start.config"
rc=$?
[ "$rc" = 0 ] && ok "--build-only: exit 0" || bad "--build-only: exit $rc: $(cat "$tmp/err")"
grep -q 'CC=gcc bzImage' "$tmp/make.log" && ok "no ccache: CC=gcc" || bad "no ccache: $(cat "$tmp/make.log")"
want=$(printf 'CONFIG_HZ_250=y\n# olddefconfig\n' | sha256sum | cut -c1-12)
grep -q "config $want build" "$tmp/steps.txt" && ok "the step built the start config ($want)" ||
	bad "step line: $(cat "$tmp/steps.txt"), want config $want"
grep -q '^# the tree' .config && bad "the tree's .config was used" || ok "the tree's .config was replaced"
[ "$(cat "$tmp/out/release" 2>/dev/null)" = 6.1.0-test ] && [ -f "$tmp/out/bzImage" ] &&
	[ -f "$tmp/out/config-6.1.0-test" ] && ok "--build-only: bzImage, config-RELEASE, release" ||
	bad "--build-only output: $(ls "$tmp/out" 2>&1)"

# without KREPRO_BUILD_LOG the log was /tmp/krepro-bisect-build.log, and a user's link
# there had root overwrite its target (issue 42 row 5): now a new file of its own
if [ ! -e /tmp/krepro-bisect-build.log ] && [ ! -L /tmp/krepro-bisect-build.log ]; then
	ln -s "$tmp/victim" /tmp/krepro-bisect-build.log
	PATH=$tmp/bin KREPRO_BISECT_STEPS=$tmp/steps.txt KREPRO_BISECT_CONFIG="$tmp/start.config" \
		"$src/scripts/vm/bisect-kernel" --build-only "$tmp/out" 2>>"$tmp/err"
	rc=$?
	[ $rc = 0 ] && [ ! -e "$tmp/victim" ] && ok "no KREPRO_BUILD_LOG: a link at the old name not followed" ||
		bad "no KREPRO_BUILD_LOG: exit $rc, $(ls -l "$tmp/victim" 2>&1)"
	rm -f /tmp/krepro-bisect-build.log
fi

printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/ccache" && chmod +x "$tmp/bin/ccache"
: >"$tmp/make.log"
step env KREPRO_BISECT_CONFIG="$tmp/start.config"
grep -q 'CC=ccache gcc bzImage' "$tmp/make.log" && ok "ccache present: CC='ccache gcc'" || bad "ccache: $(cat "$tmp/make.log")"
: >"$tmp/make.log"
step env KREPRO_CC=gcc-10
grep -q 'CC=gcc-10 bzImage' "$tmp/make.log" && ok "KREPRO_CC=gcc-10 wins" || bad "KREPRO_CC: $(cat "$tmp/make.log")"

# a fresh tree (no .config) with a start config: it builds; with neither: 128
rm -f .config FAIL
step env KREPRO_BISECT_CONFIG="$tmp/start.config"
rc=$?
[ "$rc" = 0 ] && [ -f .config ] && ok "no .config, a start config: builds" ||
	bad "no .config, a start config: exit $rc: $(tail -1 "$tmp/err")"
rm -f .config
step env
rc=$?
[ "$rc" = 128 ] && ok "no .config, no start config: 128" || bad "no .config, no start config: exit $rc"
echo "# the tree's own" >.config

touch FAIL
: >"$tmp/steps.txt"
step env KREPRO_BISECT_CONFIG="$tmp/start.config"
rc=$?
[ "$rc" = 125 ] && ok "a build that fails: 125" || bad "a build that fails: exit $rc"
grep -q 'does not build, skip (125)' "$tmp/steps.txt" && ok "its step line says so" || bad "step line: $(cat "$tmp/steps.txt")"
# the run side, with a stand-in vmrun beside a copy of bisect-kernel: a program's SKIP
# (125) is booted once more, once; the second verdict is the step's
rm -f FAIL
mkdir -p "$tmp/kr/scripts/vm"
cp "$src/scripts/vm/bisect-kernel" "$tmp/kr/scripts/vm/"
cat >"$tmp/kr/scripts/vmrun" <<EOF
#!/bin/sh
# the next exit code from the list; each boot appends one line to boots
code=\$(head -n1 "$tmp/codes"); sed -i 1d "$tmp/codes"; echo boot >>"$tmp/boots"
case "\$code" in 0) echo "prog: PASS" ;; 1) echo "prog: FAIL" ;; *) echo "prog: SKIP" ;; esac
exit "\$code"
EOF
chmod +x "$tmp/kr/scripts/vmrun"
for t in head wc tail sort printf; do p=$(command -v "$t") && ln -sf "$p" "$tmp/bin/$t"; done
runstep() { # CODES... -> the step's exit; boots counted in $tmp/boots
	printf '%s\n' "$@" >"$tmp/codes"
	: >"$tmp/boots"
	PATH=$tmp/bin KREPRO_BISECT_CONFIG="$tmp/start.config" KREPRO_BISECT_STEPS=$tmp/steps.txt \
		KREPRO_BUILD_LOG=$tmp/build.log "$tmp/kr/scripts/vm/bisect-kernel" ${RUNS:+--runs "$RUNS"} ${ALL:+--unanimous} \
		-- /bin/true >/dev/null 2>>"$tmp/err"
}
boots() { wc -l <"$tmp/boots" | tr -d ' '; }
runstep 125 0
rc=$?
[ "$rc" = 0 ] && [ "$(boots)" = 2 ] && ok "SKIP then PASS: booted twice, exit 0" ||
	bad "SKIP then PASS: exit $rc, $(boots) boots: $(tail -n3 "$tmp/err")"
tail -n1 "$tmp/steps.txt" | grep -q 'exit 125,0 ' && ok "its step line: exit 125,0" ||
	bad "step line: $(tail -n1 "$tmp/steps.txt")"
runstep 125 125 0
rc=$?
[ "$rc" = 125 ] && [ "$(boots)" = 2 ] && ok "SKIP twice: 125 after two boots" ||
	bad "SKIP twice: exit $rc, $(boots) boots"
runstep 1 0
rc=$?
[ "$rc" = 1 ] && [ "$(boots)" = 1 ] && ok "FAIL: one boot, exit 1" || bad "FAIL: exit $rc, $(boots) boots"
# --runs 3: the majority of three, each run's exit in the step line; --unanimous: all three
RUNS=3 runstep 1 0 1
rc=$?
[ "$rc" = 1 ] && [ "$(boots)" = 3 ] && tail -n1 "$tmp/steps.txt" | grep -q 'exit 1,0,1 (majority 2/3: 1) ' &&
	ok "--runs 3, FAIL PASS FAIL: FAIL by 2/3" || bad "--runs 3: exit $rc: $(tail -n1 "$tmp/steps.txt")"
RUNS=3 runstep 1 0 125
rc=$?
[ "$rc" = 125 ] && tail -n1 "$tmp/steps.txt" | grep -q 'exit 1,0,125 (no majority: 125) ' &&
	ok "--runs 3, FAIL PASS SKIP: no majority, 125" || bad "--runs 3 no majority: exit $rc: $(tail -n1 "$tmp/steps.txt")"
RUNS=3 ALL=1 runstep 1 0 1
rc=$?
[ "$rc" = 125 ] && ok "--runs 3 --unanimous, FAIL PASS FAIL: 125" || bad "--unanimous: exit $rc"
finish
