#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Description: scripts/vm/kernel-bisect end to end without a kernel: a stand-in `make` whose
# bzImage says whether the tree holds the file BUG, and a stand-in vmrun that FAILs such an
# image, in a git tree with annotated tags. Checks: a regression bisect and a fix bisect
# (--term-old/--term-new) name their commit and verify it (itself, its parent, the new
# endpoint with it reverted, 3 boots each); every commit gets one config hash; summary.txt
# is within 72 columns; an old endpoint that does not build stops the bisect before git
# bisect starts, naming the build's error; the tree's checkout and .config are restored.
# A culprit whose revert does not apply, or NEW being the culprit: "partly verified", exit 3,
# in summary.txt, result.json and the mail; --no-verify: the mail says not checked.
# Only skipped commits left: the candidates listed; a step aborting (128) mid-run: the
# abort and its reason, exit 128. A kernel that started the program and gave no verdict
# (vmrun's 124): bad by default, named in steps.txt, summary.txt and the mail; --hang-is skip.
# The endpoints run 3 times; a flaky check runs again up to 9 and says so (exit 4); a
# contradicted one says so (exit 2).
# A tree owned by another user (uid 4242): git and make as its owner, out of tree (O=) in
# the bisect's own worktree; after it, nothing root-owned in the tree, git status clean,
# no worktree left; the "tree:" line names the tree's own remote; a build log per step;
# result.json's compiler, machine and times. Killed (SIGKILL) mid-bisect, --resume OUT
# names the same culprit. --runs 3: three verdicts a step, the majority. The check's
# kernels keyed by start config: two configs, two kernels; the same again, reused.
# The mail as LKP writes it (scripts/report): the verdict flip and the change, the commit,
# tree, compiler, machine, parameters, config, Reported-by/Closes to fill, To: the author,
# Cc: the tree's own get_maintainer.pl (a stand-in that wants --no-git).
#   tests/kernel_bisect_test.sh SOURCE_DIR          (needs root: bisect-kernel does; else 77)
set -u
src=${1:?usage: kernel_bisect_test.sh SOURCE_DIR}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
. "$(dirname "$0")/checks.sh"
tmp=$(mktemp -d /tmp/krepro-kbtest.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT INT TERM
# a step SIGKILLed on purpose (the resume check) cannot remove its mktemp files: keep
# them in this test's directory
export TMPDIR="$tmp"
mkdir -p "$tmp/bin" "$tmp/kr/scripts/vm"
cp "$src/scripts/vm/kernel-bisect" "$src/scripts/vm/bisect-kernel" "$tmp/kr/scripts/vm/"
cp "$src/scripts/krcompare.py" "$tmp/kr/scripts/"
# make (first in PATH): olddefconfig rewrites .config; a tree holding NOBUILD does not
# build; the image says BUG when the tree holds BUG; the release carries no -gHASH, as at
# an annotated tag
cat >"$tmp/bin/make" <<'EOF'
#!/bin/sh
echo "make $* (uid $(id -u))" >>"$MAKE_LOG"
o=.
for a; do case "$a" in O=*) o=${a#O=} ;; esac; done
# what kbuild refuses: O= on a source tree built in
[ "$o" = . ] || [ ! -e .config ] || { echo "The source tree is not clean"; exit 2; }
img=$o/arch/x86/boot/bzImage
case "$*" in
*kernelrelease*) echo 6.1.0-test ;;
*olddefconfig*) echo "# olddefconfig" >>"$o/.config" ;;
*bzImage*)
	[ ! -e NOBUILD ] || { echo "drivers/x.c:1:1: error: expected ';'"; exit 2; }
	mkdir -p "$o/arch/x86/boot"
	if [ -e BUG ] || [ -e BUG2 ]; then echo BUG; else echo fine; fi >"$img"
	[ ! -e FLAKY ] || echo FLAKY >>"$img"
	[ ! -e NOBOOT ] || echo NOBOOT >>"$img"
	[ ! -e ABORT ] || echo ABORT >>"$img"
	[ ! -e HANG ] || echo HANG >>"$img" ;;
esac
EOF
# vmrun: "boots" the image (the -v line naming the release), "runs the program": FAIL on
# a BUG image, with the --format json report scripts/krcompare.py reads when asked for one
cat >"$tmp/kr/scripts/vmrun" <<'EOF'
#!/bin/sh
image="" json=0
while [ $# -gt 0 ]; do
	case "$1" in --kernel) image=$2; shift ;; json) json=1 ;; esac
	shift
done
# NOBOOT: in the culprit check's runs (--format json), the kernel never reaches the program
if [ "$json" = 1 ] && grep -q NOBOOT "$image"; then
	echo "vmrun: no exit code within --timeout 300 s: exit 125 (bisect: skip this commit)" >&2; exit 125
fi
echo "vmrun: guest booted 6.1.0-test in 1 s" >&2
echo boot >>"$BOOTS"
# STOP_AT=N: the bisect is killed (SIGKILL, no cleanup) at the Nth boot
if [ -n "${STOP_AT:-}" ] && [ "$(wc -l <"$BOOTS")" = "$STOP_AT" ]; then kill -KILL "$(cat "$KB_PID")"; exit 1; fi
if grep -q HANG "$image"; then
	echo "vmrun: the program started, then no exit code within --timeout 300 s: exit 124" >&2; exit 124
fi
# FLAKY: every other run a SKIP, in the culprit check's runs only (--format json)
if [ "$json" = 1 ] && grep -q FLAKY "$image"; then
	echo x >>"$BOOTS.flaky"
	if [ $(($(wc -l <"$BOOTS.flaky") % 2)) = 1 ]; then
		echo '{"program":"standin","verdict":"SKIP","exit_code":125,"metric":{"name":"in_p50","value":null,"unit":"ms"},"threshold":20}'
		exit 125
	fi
fi
if grep -q ABORT "$image"; then echo "standin-vmrun: the host's disk is full" >&2; exit 128; fi
if grep -q BUG "$image"; then v=FAIL rc=1 x=240; else v=PASS rc=0 x=0.4; fi
if [ "$json" = 1 ]; then
	printf '{"program":"standin","verdict":"%s","exit_code":%s,"metric":{"name":"in_p50","value":%s,"unit":"ms"},"threshold":20}\n' "$v" "$rc" "$x"
else
	echo "standin: $v in_p50=${x}ms"
fi
exit "$rc"
EOF
chmod +x "$tmp/bin/make" "$tmp/kr/scripts/vmrun"
export MAKE_LOG="$tmp/make.log" BOOTS="$tmp/boots"

tree=$tmp/tree
mkdir "$tree" && cd "$tree" || exit 1
: >Makefile
# the tree's own get_maintainer.pl: the mail's Cc: (it must be asked without git)
mkdir scripts && cat >scripts/get_maintainer.pl <<'EOF'
my $args = join(" ", @ARGV);
my $patch = join("", <STDIN>);
exit 2 unless $args =~ /--no-git\b/ && $patch =~ /^Subject: /m;
print "Ann Maintainer <ann\@example.org>\nlinux-test\@vger.kernel.org\n";
EOF
g() { git -c user.name=k -c user.email=k@l "$@"; }
commit() { g add -A && g commit -qm "$1"; }
git init -q -b master && commit "one"
g tag -a -m "good" v-good
echo 1 >filler && commit "a filler"
touch BUG && commit "the culprit"
echo 2 >filler && commit "a filler after it"
echo 3 >filler && commit "another"
g tag -a -m "bad" v-bad
culprit=$(git rev-parse v-bad~2)
rm BUG && commit "the fix"
echo 4 >filler && commit "a filler after the fix"
g tag -a -m "fixed" v-fixed
fix=$(git rev-parse v-fixed~1)
git checkout -q -b side v-good && touch NOBUILD && commit "does not build" && g tag -a -m nb v-nobuild
echo 5 >filler && commit "still does not build"
# a culprit that does not revert cleanly on its NEW endpoint: a later commit changes BUG
git checkout -q -b conflict v-good && echo 6 >filler && commit "a filler" && touch BUG &&
	commit "the culprit, changed later" && echo later >BUG && commit "changes BUG" && g tag -a -m bad2 v-bad2
culprit2=$(git rev-parse v-bad2~1)
# only skipped commits left: the culprit does not build, nor its successor's parent
git checkout -q -b skips v-good && echo 7 >filler && commit "a filler" && touch BUG NOBUILD &&
	commit "the culprit, does not build" && echo 8 >filler && commit "still does not build" &&
	rm NOBUILD && commit "builds again" && g tag -a -m bad3 v-bad3
# a step that aborts (exit 128) in the middle of the range
git checkout -q -b aborts v-good && touch ABORT && commit "aborts" && echo 9 >filler &&
	commit "aborts too" && touch BUG && commit "aborts, the culprit" && rm ABORT && commit "no abort" &&
	g tag -a -m bad4 v-bad4
# a culprit whose kernel starts the program and never gives a verdict (vmrun's 124)
git checkout -q -b hangs v-good && echo 10 >filler && commit "a filler" && touch HANG &&
	commit "the culprit, hangs" && echo 11 >filler && commit "a filler after it" && g tag -a -m bad5 v-bad5
culprit5=$(git rev-parse v-bad5~1)
# a culprit whose kernel is flaky in the check (SKIP every other run)
git checkout -q -b flaky v-good && echo 12 >filler && commit "a filler" && touch BUG FLAKY &&
	commit "the culprit, flaky" && echo 13 >filler && commit "a filler after it" && g tag -a -m bad6 v-bad6
# a second bug after the culprit: NEW with the culprit reverted still FAILs
git checkout -q -b second v-good && echo 14 >filler && commit "a filler" && touch BUG &&
	commit "the culprit" && touch BUG2 && commit "a second bug" && g tag -a -m bad7 v-bad7
# a culprit whose kernel does not boot in the check
git checkout -q -b noboot v-good && echo 15 >filler && commit "a filler" && touch BUG NOBOOT &&
	commit "the culprit, does not boot" && echo 16 >filler && commit "a filler after it" && g tag -a -m bad8 v-bad8
git checkout -q master
echo "# the tree's own" >.config
printf 'CONFIG_HZ_250=y\n' >"$tmp/start.config"

kb() { # OUT KERNEL-BISECT-ARGS...: exit code in $rc (--repo "$repo", default $tree)
	out=$tmp/$1
	shift
	: >"$BOOTS"
	# --verify-runs 3 (fewer stand-in boots) unless $vr is set: vr= for the default
	# shellcheck disable=SC2086
	PATH=$tmp/bin:$PATH sh -c 'echo $$ >"$KB_PID"; exec "$@"' kb "$tmp/kr/scripts/vm/kernel-bisect" \
		--repo "${repo:-$tree}" --config "$tmp/start.config" --out "$out" ${vr---verify-runs 3} "$@" \
		-- /bin/true >"$tmp/kb.log" 2>&1
	rc=$?
}
export KB_PID="$tmp/kb.pid"
first() { sed -n "s/^# first $1 commit: \[\([0-9a-f]*\)\].*/\1/p" "$out/bisect.log"; }
same_tree() {
	[ "$(git -C "$tree" symbolic-ref --short HEAD)" = master ] && grep -q "^# the tree's own" "$tree/.config" &&
		[ ! -f "$(git -C "$tree" rev-parse --git-dir)/BISECT_START" ] &&
		ok "$1: the tree's checkout and .config restored" || bad "$1: the tree was left changed"
}

vr= kb reg v-good v-bad # the default --verify-runs: 5
unset vr
[ "$rc" = 0 ] && ok "regression: exit 0" || bad "regression: exit $rc: $(tail -n5 "$tmp/kb.log")"
[ "$(first bad)" = "$culprit" ] && ok "regression: the first bad commit is the culprit" ||
	bad "regression: first bad $(first bad), want $culprit"
grep -q '^verify: the culprit is confirmed' "$out/summary.txt" &&
	grep -q "^verify: v-bad with ${culprit%"${culprit#????????????}"} reverted: PASS 5/5" "$out/summary.txt" &&
	ok "regression: verified 5 times each (the default), the revert too" || bad "regression: $(cat "$out/summary.txt")"
awk 'length($0) > 72 { bad = 1 } END { exit bad }' "$out/summary.txt" &&
	ok "summary.txt within 72 columns" || bad "summary.txt: $(cat "$out/summary.txt")"
# one hash over all steps (so none for a commit built twice, the culprit and its parent)
hashes=$(awk '$2 == "config" {print $3}' "$out/steps.txt" | sort -u)
[ "$(echo "$hashes" | wc -l)" = 1 ] && [ -n "$hashes" ] && ok "one config hash for every step" ||
	bad "config hashes: $hashes"
grep -q "PASS 5/5 -> FAIL 5/5\|PASS 5/5 *FAIL 5/5" "$out/compare.txt" && ok "compare.txt: parent against culprit" ||
	bad "compare.txt: $(cat "$out/compare.txt")"
same_tree regression

# with --flock (the worktree's checkout, builds and runs under it)
kb fix --fix --term-old broken --term-new fixed --flock "$tmp/bench.lock" v-bad v-fixed
[ "$rc" = 0 ] && [ "$(first fixed)" = "$fix" ] && ok "fix bisect (--flock): names the fix, exit 0" ||
	bad "fix bisect: exit $rc, first fixed $(first fixed), want $fix: $(tail -n5 "$tmp/kb.log")"
grep -q '^verify: the culprit is confirmed' "$out/summary.txt" && ok "fix bisect: verified" ||
	bad "fix bisect: $(cat "$out/summary.txt")"

# the revert does not apply: partly verified, exit 3, never "confirmed" (here and in result.json)
kb norevert v-good v-bad2
[ "$rc" = 3 ] && [ "$(first bad)" = "$culprit2" ] && ok "a culprit that does not revert: named, exit 3" ||
	bad "does not revert: exit $rc, first bad $(first bad), want $culprit2: $(tail -n5 "$tmp/kb.log")"
sed 's/^ *//' "$out/summary.txt" | tr '\n' ' ' | grep -q "verify: partly verified: revert not run (.*does not revert cleanly" &&
	! grep -q confirmed "$out/summary.txt" && ok "does not revert: summary.txt says partly verified" ||
	bad "does not revert: $(cat "$out/summary.txt")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(not (r["verification"] == "partly" and r["verified"] == "partly" and "revert not run" in r["verification_note"]))' \
	"$out/result.json" && ok "does not revert: result.json says partly" || bad "does not revert: result.json"
same_tree "does not revert"
# the mail (scripts/report reads result.json): no stronger than the checks
"$src/scripts/report" --out "$tmp/mail-norevert" --bisect "$out" >/dev/null 2>&1
m=$(tr '\n' ' ' <"$tmp/mail-norevert/mail.txt" 2>/dev/null)
echo "$m" | grep -q "partly checked: revert not run" && ! echo "$m" | grep -q "KernelCI does\|confirmed" &&
	ok "does not revert: the mail says partly checked" || bad "does not revert: mail: $m"

# NEW is the culprit: its revert is not run either
kb newculprit v-good "$culprit"
[ "$rc" = 3 ] && grep -q "partly verified: revert not run" "$out/summary.txt" && ! grep -q confirmed "$out/summary.txt" &&
	ok "NEW is the culprit: partly verified, exit 3" || bad "NEW is the culprit: exit $rc: $(cat "$out/summary.txt")"

# git stops with only skipped commits left: the candidates as git lists them
kb skips v-good v-bad3
c1=$(git -C "$tree" rev-parse --short=12 v-bad3~2) c2=$(git -C "$tree" rev-parse --short=12 v-bad3~1)
s=$(tr '\n' ' ' <"$out/summary.txt" | tr -s ' ')
[ "$rc" = 1 ] && echo "$s" | grep -q "only skipped commits left; the first bad commit could be any of:" &&
	echo "$s" | grep -q "$c1 the culprit, does not build" && echo "$s" | grep -q "$c2 still does not build" &&
	ok "only skipped commits left: exit 1, the candidates listed" || bad "skipped: exit $rc: $s ($c1 $c2)"
same_tree "skipped"

# a step that aborts (128) mid-run: the abort and its reason, exit 128
kb aborts v-good v-bad4
s=$(tr '\n' ' ' <"$out/summary.txt" | tr -s ' ')
[ "$rc" = 128 ] && echo "$s" | grep -q "bisect aborted: the step at [0-9a-f]* exited 128: .*disk is full" &&
	! echo "$s" | grep -q "no first bad" && ok "an abort mid-run: exit 128, the abort and its reason" ||
	bad "abort: exit $rc: $s"
same_tree "abort"

# a hang (started, no verdict) counts as bad: the culprit named, the hang said
kb hang v-good v-bad5
s=$(tr '\n' ' ' <"$out/summary.txt" | tr -s ' ')
[ "$rc" = 0 ] && [ "$(first bad)" = "$culprit5" ] && ok "a hanging culprit: named (a hang counts bad), exit 0" ||
	bad "hang: exit $rc, first bad $(first bad), want $culprit5: $s"
grep -q " HANG: the program started, no verdict (counted bad)" "$out/steps.txt" &&
	echo "$s" | grep -q "hangs: [0-9]* steps* started the program and got no verdict" &&
	ok "a hang: named in steps.txt and summary.txt" || bad "hang: $(cat "$out/steps.txt") $s"
"$src/scripts/report" --out "$tmp/mail-hang" --bisect "$out" >/dev/null 2>&1
tr '\n' ' ' <"$tmp/mail-hang/mail.txt" | tr -s ' ' | grep -q "gave no verdict (a hang, a panic, a lost console), counted as bad" &&
	ok "a hang: said in the mail" || bad "hang: mail: $(cat "$tmp/mail-hang/mail.txt")"
# --hang-is skip: NEW hangs too, so the endpoint is a SKIP, not a FAIL
kb hangskip --hang-is skip v-good v-bad5
[ "$rc" = 1 ] && grep -q "HANG: the program started, no verdict (--hang-is skip: 125)" "$out/steps.txt" &&
	ok "--hang-is skip: a hanging endpoint is skipped" || bad "--hang-is skip: exit $rc: $(cat "$out/steps.txt")"

# the endpoints are checked N times too (--verify-runs, default 5), not once
head -n1 "$tmp/reg/steps.txt" | grep -q " exit 0,0,0,0,0 " && sed -n 2p "$tmp/reg/steps.txt" | grep -q " exit 1,1,1,1,1 " &&
	ok "the endpoints run 5 times each" || bad "endpoints: $(head -n2 "$tmp/reg/steps.txt")"

# a check with SKIPs: flaky, run again up to --verify-max-runs (9), then said; exit 4
kb flaky v-good v-bad6
s=$(tr '\n' ' ' <"$out/summary.txt" | tr -s ' ')
echo "$s" | grep -q "verify: first bad [0-9a-f]*: FAIL [0-9]/9, SKIP [0-9]/9: flaky (SKIPs or mixed verdicts in 9 runs" &&
	echo "$s" | grep -q "NOT confirmed: flaky" && [ "$rc" = 4 ] && ! echo "$s" | grep -q "contradicted\|is confirmed" &&
	ok "a flaky check: run to 9, said flaky, exit 4" || bad "flaky: exit $rc: $s"

# the revert still FAILs (a second bug): contradicted, exit 2
kb second v-good v-bad7
s=$(tr '\n' ' ' <"$out/summary.txt" | tr -s ' ')
[ "$rc" = 2 ] && echo "$s" | grep -q "reverted: PASS 0/3, FAIL 3/3: contradicted (FAIL every time)" &&
	echo "$s" | grep -q "NOT confirmed: contradicted" && ok "a contradicted check: said, exit 2" ||
	bad "contradicted: exit $rc: $s"

# the culprit's kernel never reaches the program in the check: unavailable, exit 4
kb noboot v-good v-bad8
s=$(tr '\n' ' ' <"$out/summary.txt" | tr -s ' ')
[ "$rc" = 4 ] && echo "$s" | grep -q "FAIL 0/3, SKIP 3/3: unavailable (no run reached the program" &&
	echo "$s" | grep -q "NOT confirmed: unavailable" && ok "an unavailable check: said, exit 4" ||
	bad "unavailable: exit $rc: $s"

# --no-verify: the mail says the culprit was not checked
kb noverify --no-verify v-good v-bad
"$src/scripts/report" --out "$tmp/mail-noverify" --bisect "$out" >/dev/null 2>&1
m=$(tr '\n' ' ' <"$tmp/mail-noverify/mail.txt" 2>/dev/null)
[ "$rc" = 0 ] && echo "$m" | grep -q "not checked (kernel-bisect --no-verify)" && ! echo "$m" | grep -q "KernelCI does" &&
	ok "--no-verify: exit 0, the mail says not checked" || bad "--no-verify: exit $rc, mail: $m"

# into the regression's OUT: its record must not be left to read as this run's
kb reg v-bad v-fixed
[ "$rc" = 1 ] && grep -q -- "--fix" "$tmp/kb.log" && ok "a fix run as a regression: exit 1, names --fix" ||
	bad "a fix as a regression: exit $rc: $(tail -n3 "$tmp/kb.log")"
[ ! -e "$out/bisect.log" ] && [ ! -e "$out/verify.txt" ] && ok "the earlier bisect's record is gone" ||
	bad "an earlier record left in OUT: $(ls "$out")"

: >"$MAKE_LOG"
kb nobuild v-nobuild side
builds=$(grep -c bzImage "$MAKE_LOG")
[ "$rc" = 1 ] && [ "$builds" = 1 ] && ok "an old endpoint that does not build: exit 1, one build" ||
	bad "does not build: exit $rc, $builds builds"
sed 's/^ *//' "$out/summary.txt" | tr '\n' ' ' | grep -q "does not build: drivers/x.c:1:1: error" && ok "the message names the build's error" ||
	bad "message: $(tail -n3 "$tmp/kb.log")"
[ ! -s "$out/bisect.log" ] && [ ! -e "$out/bisect-run.txt" ] && ok "git bisect did not start" ||
	bad "git bisect ran: $(cat "$out/bisect.log")"
same_tree "does not build"

# a tree of someone else's (uid 4242, no passwd entry needed): git and make run as its
# owner, out of tree, in the bisect's own worktree; nothing root-owned is left in the tree
chmod 755 "$tmp"
utree=$tmp/utree
git clone -q "$tree" "$utree" && git -C "$utree" remote set-url origin https://example.org/someones/linux.git &&
	git -C "$utree" checkout -q -b mine v-bad && echo "# theirs" >"$utree/.config" &&
	echo .config >>"$utree/.git/info/exclude" &&
	for t in v-good v-bad; do git -C "$utree" tag -f -a -m "$t" "$t" "$t^{commit}" >/dev/null; done
chown -R 4242:4242 "$utree"
ug() { setpriv --reuid=4242 --regid=4242 --clear-groups env HOME="$tmp" git -C "$utree" "$@"; }
: >"$MAKE_LOG"
repo=$utree kb user v-good v-bad
[ "$rc" = 0 ] && [ "$(first bad)" = "$culprit" ] && ok "a user's tree: the culprit named, exit 0" ||
	bad "a user's tree: exit $rc, first bad $(first bad): $(tail -n5 "$tmp/kb.log")"
[ -z "$(find "$utree" -uid 0)" ] && ok "a user's tree: nothing in it is root's" ||
	bad "a user's tree: root-owned: $(find "$utree" -uid 0 | head -n5)"
st=$(ug status --porcelain)
[ -z "$st" ] && [ "$(ug symbolic-ref --short HEAD)" = mine ] &&
	[ "$(ug worktree list | wc -l)" = 1 ] && grep -qx "# theirs" "$utree/.config" &&
	ok "a user's tree: git status clean, its branch, .config and no worktree left" ||
	bad "a user's tree: status '$st', $(ug worktree list)"
grep "bzImage\|olddefconfig" "$MAKE_LOG" | grep -qv "O=$out/work/obj .*(uid 4242)" &&
	bad "a user's tree: make not as 4242 out of tree: $(grep -v 'uid 4242' "$MAKE_LOG" | head -n3)" ||
	ok "a user's tree: every make as its owner, O=OUT/work/obj"
grep -qv "^[0-9a-f]\{12\} config [0-9a-f]\{12\} " "$out/steps.txt" &&
	bad "a user's tree: a step line without its commit: $(cat "$out/steps.txt")" ||
	ok "a user's tree: every step line names its commit and config"
grep -q "^tree: https://example.org/someones/linux.git" "$out/summary.txt" &&
	ok "a user's tree: the tree: line names its own remote" || bad "tree: line: $(grep tree: "$out/summary.txt")"
ls "$out"/logs/*.log >/dev/null 2>&1 && [ "$(ls "$out/logs" | wc -l)" -ge "$(wc -l <"$out/steps.txt")" ] &&
	ok "a build log kept for every step ($(ls "$out/logs" | wc -l))" || bad "logs: $(ls "$out/logs")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(not (r["compiler"]["version"] and r["machine"]["vcpus"] and "krepro" in r and r["started"] and r["finished"]))' \
	"$out/result.json" && ok "result.json: compiler, machine, krepro revision, times" || bad "result.json provenance"

# the mail as LKP writes it: the change, the commit, the machine, the compiler, the
# parameters, the config, Reported-by/Closes to fill, Cc: from the tree's get_maintainer.pl
"$src/scripts/report" --out "$tmp/mail-user" --bisect "$out" >/dev/null 2>"$tmp/report.err"
m=$(cat "$tmp/mail-user/mail.txt" 2>/dev/null)
for want in '^krepro noticed "standin: PASS -> FAIL", \(a +59900% regression of \)\{0,1\}in_p50 0.400 -> 240ms' \
	'^measured by:  krepro .*, 20[0-9][0-9]-' \
	"^commit: ${culprit%"${culprit#????????????}"} (\"the culprit\")" '^tree:   https://example.org/someones/linux.git' \
	'^compiler:     gcc ' '^test machine: 2 vCPUs, 1024 MiB memory: a qemu guest (KVM expected\|TCG)' '^config:       start.config (attached)' \
	'^  program:   standin' '^| Reported-by: NAME <EMAIL>$' '^| Closes: URL-OF-THIS-REPORT$' '^To: k <k@l>$' \
	'^Cc: Ann Maintainer <ann@example.org>, linux-test@vger.kernel.org$' 'O=/tmp/krepro-'; do
	echo "$m" | grep -q -- "$want" || { bad "the mail: no line '$want': $m $(cat "$tmp/report.err")"; break; }
done && ok "the mail: headline, commit, tree, compiler, machine, parameters, tags, recipients"
awk 'length($0) > 72 { bad = 1 } END { exit bad }' "$tmp/mail-user/mail.txt" && ok "the mail within 72 columns" ||
	bad "the mail: lines over 72 columns"

# killed (SIGKILL) in the middle: --resume OUT replays bisect.log and names the same culprit
STOP_AT=8 repo=$utree kb resume v-good v-bad
n=$(grep -c "^git bisect \(good\|bad\|skip\)" "$out/bisect.log")
[ "$rc" = 137 ] && [ "$n" -ge 1 ] && ok "killed after $n bisect step(s): bisect.log has them" ||
	bad "killed: exit $rc, bisect.log: $(cat "$out/bisect.log")"
before=$(wc -l <"$out/steps.txt")
: >"$BOOTS"
PATH=$tmp/bin:$PATH "$tmp/kr/scripts/vm/kernel-bisect" --resume "$out" >"$tmp/kb.log" 2>&1
rc=$?
[ "$rc" = 0 ] && [ "$(first bad)" = "$culprit" ] && grep -q "resumed" "$tmp/kb.log" &&
	[ "$(wc -l <"$out/steps.txt")" -gt "$before" ] && ok "--resume: the same culprit, exit 0" ||
	bad "--resume: exit $rc, first bad $(first bad): $(tail -n5 "$tmp/kb.log")"
[ -z "$(find "$utree" -uid 0)" ] && [ "$(ug worktree list | wc -l)" = 1 ] &&
	ok "--resume: the tree left as it was" || bad "--resume: $(ug worktree list)"

# --runs 3: each step boots 3 times, every verdict in steps.txt
kb runs --runs 3 --no-verify v-good v-bad
sed -n '3,$p' "$out/steps.txt" | grep -qv " exit [0-9]*,[0-9]*,[0-9]* (majority [23]/3: [01]) " &&
	bad "--runs 3: $(cat "$out/steps.txt")" || ok "--runs 3: each step's three verdicts and majority"

# the check's kernels are keyed by start config: two configs, two kernels each
kb cache1 --work "$tmp/cachework" v-good v-bad
printf 'CONFIG_HZ_1000=y\n' >"$tmp/start.config"
kb cache2 --work "$tmp/cachework" v-good v-bad
k=$(ls "$tmp/cachework/kernels" | grep -c "^${culprit%"${culprit#????????????}"}-")
[ "$k" = 2 ] && ok "the kernel cache: two configs, two kernels of the culprit" ||
	bad "the kernel cache: $(ls "$tmp/cachework/kernels")"
kb cache3 --work "$tmp/cachework" v-good v-bad
grep -q "built already" "$tmp/kb.log" && ok "the same config again: built already" || bad "no reuse"
printf 'CONFIG_HZ_250=y\n' >"$tmp/start.config"

finish
