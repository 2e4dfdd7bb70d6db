#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Description: kernel-suite test of scripts/vmrun. Boots Debian's own kernel (fetched by
# scripts/vm/debian-kernel) under qemu with static builds of fibtest and rt_starve inside, and
# checks that every exit code comes back: 0 (fibtest PASS, --format=json parsed), 1 (fibtest
# --trigger FAIL), 129 (rt_starve on a 1-CPU guest), 125 (fibtest without the cpu controller),
# 128 (a bad option inside); and vmrun's own: 125 on a panic and on --timeout, 128 on bad
# arguments, 130 on SIGINT with qemu and the temp dir gone (after SIGKILL: at the next run);
# the big-host options (--possible-cpus, --tcg-thread) reach qemu and the kernel.
# No check depends on how fast a guest boots: each run has vmrun's --timeout (300 s, 13x
# the slowest, the silent-boot one, 22 s), the --timeout 3 one 60 s (3-4 s). 129 s in all
# under TCG here (2026-11-26).
#   tests/vm_test.sh SOURCE_DIR BUILD_DIR
# Exit 0 pass, 1 fail, 77 skip (not root, or no Debian kernel to be had).
set -u
src=${1:?usage: vm_test.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: vm_test.sh SOURCE_DIR BUILD_DIR}
vmrun=$src/scripts/vmrun
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (packages, the krepro lock)"; exit 77; }

. "$(dirname "$0")/checks.sh"

# what the test needs, from Debian (scripts/deps test): a test installs nothing
for p in qemu-system-x86 busybox-static e2fsprogs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		{ echo "SKIP: $p is not installed (scripts/deps test installs it)"; exit 77; }
done
kernel=$("$src/scripts/vm/debian-kernel") || { echo "SKIP: no Debian kernel image"; exit 77; }
echo "kernel: $kernel"

# static builds in their own directory inside the build directory
static=$build/vm-static
if [ ! -f "$static/build.ninja" ]; then
	meson setup "$static" "$src" -Dstatic=true -Dtests=false >/dev/null || { bad "meson setup -Dstatic=true"; exit 1; }
fi
ninja -C "$static" fibtest/fibtest rt_starve/rt_starve >/dev/null || { bad "static build of fibtest, rt_starve"; exit 1; }
fibtest=$static/fibtest/fibtest
rt_starve=$static/rt_starve/rt_starve

# the temp dirs of vmrun runs of this test (each holds its vmrun's pid): others may run vmrun too
our_tmps() { for f in /tmp/krepro-vmrun-*/pid; do [ -f "$f" ] && grep -qx "$1" "$f" && dirname "$f"; done; }
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

# run NAME EXPECTED_CODE VMRUN_ARGS... : one boot (or none, for argument errors)
run() {
	local name=$1 want=$2 t0 rc
	shift 2
	t0=$(date +%s)
	"$vmrun" --wait 300 "$@" >"$out" 2>"$err"
	rc=$?
	if case "|$want|" in *"|$rc|"*) true ;; *) false ;; esac; then   # want: a code, or A|B
		ok "$name: exit $rc ($(($(date +%s) - t0)) s) $(tail -n1 "$out" | cut -c1-90)"
	else
		bad "$name: exit $rc, expected $want"
		sed 's/^/  stdout: /' "$out"
		tail -n 20 "$err" | sed 's/^/  stderr: /'
	fi
}

# vmrun's own argument errors: 128, nothing booted
run "no program" 128 --kernel "$kernel"
run "--cpus 0" 128 --kernel "$kernel" --cpus 0 -- "$fibtest"
run "missing kernel" 128 --kernel /nonexistent -- "$fibtest"
run "dynamic program" 128 --kernel "$kernel" -- /bin/true
run "missing qemu" 128 --kernel "$kernel" --qemu /nonexistent/qemu -- "$fibtest"
# the matrix shapes' options: bad values are refused before anything boots
run "--offline 0 (the boot CPU)" 128 --kernel "$kernel" --cpus 4 --offline 0 -- "$fibtest"
run "--offline beyond --cpus" 128 --kernel "$kernel" --cpus 2 --offline 2 -- "$fibtest"
run "--taskset not a list" 128 --kernel "$kernel" --taskset 0-x -- "$fibtest"
run "--taskset all offline" 128 --kernel "$kernel" --cpus 4 --offline 2-3 --taskset 2-3 -- "$fibtest"
run "--nvme without a disk" 128 --kernel "$kernel" --nvme --disk-size 0 -- "$fibtest"
run "--possible-cpus below --cpus" 128 --kernel "$kernel" --cpus 4 --possible-cpus 2 -- "$fibtest"
run "--tcg-thread neither" 128 --kernel "$kernel" --tcg-thread many -- "$fibtest"
run "--numa 1" 128 --kernel "$kernel" --numa 1 -- "$fibtest"
run "--numa beyond --cpus" 128 --kernel "$kernel" --cpus 2 --numa 3 -- "$fibtest"
run "--numa: under 128 MiB a node" 128 --kernel "$kernel" --cpus 4 --mem 256 --numa 4 -- "$fibtest"
run "--numa-memory-node without --numa" 128 --kernel "$kernel" --numa-memory-node -- "$fibtest"
# the big-host shape's options reach qemu and the kernel (a stand-in qemu records its
# arguments and exits: no boot)
fq=$(mktemp -d)
printf '#!/bin/sh\necho "$*" >"%s/args"\n' "$fq" >"$fq/qemu"
chmod +x "$fq/qemu"
run "--cpus 64 --possible-cpus 128 --tcg-thread single: qemu exits, 125" 125 --accel tcg \
	--boot-retries 0 --cpus 64 --possible-cpus 128 --tcg-thread single --kernel "$kernel" \
	--qemu "$fq/qemu" -- "$fibtest"
grep -q -- "-smp 64 " "$fq/args" && grep -q "possible_cpus=128" "$fq/args" &&
	grep -q -- "-accel tcg,thread=single" "$fq/args" &&
	ok "qemu got -smp 64, possible_cpus=128, thread=single" || bad "qemu arguments: $(cat "$fq/args")"
# the NUMA shape: a RAM backend per node, the CPUs split in order, a memory-only node
: >"$fq/args"
run "--numa 2 --numa-memory-node: qemu exits, 125" 125 --accel tcg --boot-retries 0 --cpus 3 \
	--mem 1500 --numa 2 --numa-memory-node --kernel "$kernel" --qemu "$fq/qemu" -- "$fibtest"
grep -q -- "-m 1500 -object memory-backend-ram,id=m0,size=500M -numa node,nodeid=0,memdev=m0,cpus=0-1 \
-object memory-backend-ram,id=m1,size=500M -numa node,nodeid=1,memdev=m1,cpus=2-2 \
-object memory-backend-ram,id=m2,size=500M -numa node,nodeid=2,memdev=m2 " "$fq/args" &&
	ok "qemu got 3 nodes: CPUs 0-1, 2, none; 500 MiB each" || bad "qemu NUMA arguments: $(cat "$fq/args")"
rm -rf "$fq"

# qemu+KVM that hangs silently (as on some hosts): vmrun gives up on KVM after --kvm-silence,
# boots TCG, records the host, and the next boot goes straight to TCG. A stand-in qemu hangs
# when asked for KVM, so this runs the same on every host with a usable /dev/kvm.
if { : <>/dev/kvm; } 2>/dev/null; then
	fq=$(mktemp -d)
	cat >"$fq/qemu" <<EOF
#!/bin/sh
echo "\$*" >>"$fq/calls"
case " \$* " in *" -accel kvm "*) exec sleep 600 ;; esac
exec qemu-system-x86_64 "\$@"
EOF
	chmod +x "$fq/qemu"
	KREPRO_CACHE=$fq run "KVM hangs: TCG after --kvm-silence" 0 --kernel "$kernel" --qemu "$fq/qemu" \
		--kvm-silence 5 -- "$fibtest" --version
	grep -q "trying TCG" "$err" && [ -s "$fq/vmrun-kvm.txt" ] &&
		ok "hang noticed, host recorded: $(cut -f2 "$fq/vmrun-kvm.txt")" ||
		bad "no fallback note or no record ($(cat "$fq/vmrun-kvm.txt" 2>/dev/null))"
	# the silence rule ended the KVM boot, not --timeout (what vmrun says, not how long it took)
	grep -q "KVM did not boot the guest (no console output and no /init within 5 s)" "$err" &&
		ok "the KVM boot was given up after --kvm-silence" ||
		bad "the KVM boot was not ended by --kvm-silence"
	: >"$fq/calls"
	# this boot is also the JSON one below (one boot fewer, ~10 s under TCG)
	KREPRO_CACHE=$fq run "KVM recorded as broken: straight to TCG, fibtest PASS (json)" 0 \
		--kernel "$kernel" --qemu "$fq/qemu" -- "$fibtest" --wait 120 --format=json
	! grep -q -- "-accel kvm" "$fq/calls" && grep -q "using TCG" "$err" &&
		ok "no KVM attempt the second time" || bad "KVM tried again despite the record"
	rm -rf "$fq"
else
	echo "(no usable /dev/kvm: the KVM-hang fallback is not exercised)"
	run "fibtest PASS (json)" 0 --kernel "$kernel" -- "$fibtest" --wait 120 --format=json
fi

# the program's exit codes, from inside the guest (the JSON run: just above)
if python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["verdict"]=="PASS", d["verdict"]; r=d["environment"]["kernel"]; assert r.startswith("6.1."), r' <"$out"; then
	ok "json report parses, verdict PASS, measured on the guest kernel"
else
	bad "json report of the guest run"
fi
grep -q $'\r' "$out" && bad "carriage returns in the program's output" || ok "output is byte-exact (no \\r)"
grep -q "TCG\|KVM" "$err" && ok "vmrun says which accelerator: $(grep -o 'with [A-Z]*' "$err" | tail -n1)" || bad "vmrun did not say KVM or TCG"
run "fibtest --trigger FAIL" 1 --kernel "$kernel" -- "$fibtest" --wait 120 --trigger --quiet
run "rt_starve on 1 CPU: SKIP machine" 129 --kernel "$kernel" --cpus 1 -- "$rt_starve" --wait 120 --quiet
run "fibtest without the cpu controller: SKIP kernel" 125 --kernel "$kernel" --append cgroup_disable=cpu -- "$fibtest" --wait 120 --quiet
run "fibtest bad option inside" 128 --kernel "$kernel" -- "$fibtest" --duration -1

# A stand-in qemu whose first call does $1 (dies, or hangs, without a word) and whose
# second does $2 (default: nothing) before it runs the real one; later calls run the real one.
fq=$(mktemp -d)
standin() {
	rm -f "$fq/called" "$fq/called2"
	cat >"$fq/qemu" <<EOF
#!/bin/sh
[ -e "$fq/called" ] || { : >"$fq/called"; $1; }
[ -e "$fq/called2" ] || { : >"$fq/called2"; ${2:-:}; }
exec qemu-system-x86_64 "\$@"
EOF
	chmod +x "$fq/qemu"
}
# a TCG guest that dies before /init (multi-threaded TCG sometimes kills an SMP guest early):
# booted once more, since nothing ran yet. The boots of vmrun's own failure paths run
# `fibtest --version` (exit 0 at once): what they test is the boot, and a real run inside
# costs 3-5 s of TCG each
standin "exit 0"
run "TCG guest dead before /init: booted again" 0 --accel tcg --kernel "$kernel" --qemu "$fq/qemu" \
	-- "$fibtest" --version
grep -q "booting it again" "$err" && ok "the retry is said on stderr" || bad "no retry note"
standin "exit 0"
run "--boot-retries 0: no second boot" 125 --accel tcg --boot-retries 0 --kernel "$kernel" \
	--qemu "$fq/qemu" -- "$fibtest" --version
# a TCG qemu that hangs without a word (once, 300 s, on a loaded host): booted again after
# --tcg-silence, not left to --timeout. The boot after it is not held to --tcg-silence (a
# cold or loaded host may take longer than that to print a first line; issue 26): the
# stand-in keeps it silent for twice the limit before the real qemu even starts.
standin "exec sleep 600" "sleep 6"
run "TCG guest silent: booted again" 0 --accel tcg --tcg-silence 3 --kernel "$kernel" \
	--qemu "$fq/qemu" -- "$fibtest" --version
grep -q "hung before /init (no console output and no /init within 3 s)" "$err" &&
	ok "the silent boot was ended by --tcg-silence and said on stderr" || bad "no hang note"
grep -q "no silence limit now" "$err" && ok "the boot after it: --timeout only" ||
	bad "the boot after the silent one was held to --tcg-silence"
rm -rf "$fq"

# a kernel that cannot boot, and one that does not answer in time: 125 (--boot-retries 0:
# a panic before /init is booted again like any early death, checked above; 22 s -> 8)
run "kernel panic" 125 --boot-retries 0 --kernel "$kernel" --append rdinit=/nonexistent -- "$fibtest"
grep -q "Kernel panic" "$err" && ok "the panic is named on stderr" || bad "no panic line on stderr"
# start vmrun in the background and find its qemu (a child of vmrun)
# (TCG: no KVM attempt whose qemu could be the one found). It waits for the qemu as long
# as vmrun lives, however slow packing the initramfs and the disk are; a TCG boot takes
# seconds, so the signal lands mid-boot.
start_bg() {
	"$vmrun" --wait 300 --accel tcg --kernel "$kernel" -- "$fibtest" --wait 120 >"$out" 2>"$err" &
	pid=$!
	qpid=""
	while kill -0 "$pid" 2>/dev/null; do
		qpid=$(ps -o pid= --ppid "$pid" | tr -d ' ' | head -n1)
		[ -n "$qpid" ] && grep -q qemu "/proc/$qpid/comm" 2>/dev/null && break
		qpid=""
		sleep 0.1
	done
}
gone() { ! kill -0 "$1" 2>/dev/null || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
# the kernel SIGKILLs qemu when vmrun dies (PDEATHSIG): gone within milliseconds; waited
# for up to 30 s, so that only a qemu that stays is a failure
qemu_gone() {
	[ -n "$qpid" ] || return 1
	for _ in $(seq 300); do gone "$qpid" && return 0; sleep 0.1; done
	return 1
}

# SIGINT mid-boot: 130, qemu gone, temp dir gone
start_bg
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" = 130 ] && ok "SIGINT: exit 130" || bad "SIGINT: exit $rc, expected 130"
qemu_gone && ok "qemu (pid $qpid) gone after SIGINT" || bad "qemu '$qpid' still there after SIGINT"
[ -z "$(our_tmps "$pid")" ] && ok "temp dir removed on SIGINT" || bad "temp dir left after SIGINT: $(our_tmps "$pid")"

# SIGKILL mid-boot: qemu dies with vmrun (PDEATHSIG); the next vmrun removes the temp dir
start_bg
kill -KILL "$pid"
wait "$pid" 2>/dev/null
killed=$pid
qemu_gone && ok "qemu (pid $qpid) gone after SIGKILL of vmrun" || bad "qemu '$qpid' still there after SIGKILL of vmrun"

t0=$(date +%s)
# 125 when the guest had not started the program by then, 124 when it had (a fast KVM boot)
run "--timeout 3" "125|124" --kernel "$kernel" --timeout 3 -- "$fibtest"
t1=$(date +%s)
grep -q "no exit code within --timeout 3 s" "$err" && ok "--timeout 3 is what ended it" ||
	bad "--timeout 3: not ended by the timeout"
# packing, mkfs.ext4 and 3 s of qemu: 3-4 s measured; only a vmrun that does not stop
# qemu at its timeout takes longer
[ $((t1 - t0)) -le 60 ] && ok "--timeout 3 ended in $((t1 - t0)) s" || bad "--timeout 3 took $((t1 - t0)) s"
grep -q "booting it again" "$err" && bad "--timeout 3 booted again (only a dead or silent guest is)" ||
	ok "--timeout 3: not booted again"

[ -z "$(our_tmps "$killed")" ] && ok "the killed vmrun's temp dir was removed by the next run" ||
	bad "temp dir of the killed vmrun left: $(our_tmps "$killed")"

finish
