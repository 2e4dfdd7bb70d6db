# SPDX-License-Identifier: GPL-2.0-only
# Description: run by busybox sh inside a scripts/vmrun guest (tests/vm/restore_guest.sh):
# the restores this host cannot make happen, each after a kill mid-run. "idle": hwts with
# real cpuidle states (vmrun --idle-states: acpi_idle, POLL and C1), a state disabled by
# --per-state, PM QoS held by --mitigate. "hwtstamp": hwts --iface's SIOCSHWTSTAMP on qemu's
# e1000e (vmrun --nic e1000e). "cgv2": fibtest --trigger on a v2-only guest,
# its group, its cpu controller and the slice sysctl. Prints ok:/FAIL: lines; exit 0 or 1.
set -u
fails=0
check() {
	if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}
# poll for CONDITION (shell code) up to 20 s
wait_for() {
	i=0
	while [ $i -lt 400 ]; do eval "$1" && return 0; sleep 0.05; i=$((i + 1)); done
	return 1
}
left() { ls /run/krepro 2>/dev/null | grep -v '^lock$' | tr '\n' ' '; }

idle() {
	d=/sys/devices/system/cpu/cpu1/cpuidle/state1/disable
	# reading /dev/cpu_dma_latency gives the current PM QoS limit (4 bytes)
	qos() { hexdump -e '1/4 "%d"' /dev/cpu_dma_latency; }
	check "cpuidle driver" acpi_idle "$(cat /sys/devices/system/cpu/cpuidle/current_driver)"
	check "C1 enabled before" 0 "$(cat $d)"
	q0=$(qos)
	# SIGKILL while --per-state has C1 disabled: the journal keeps it, --restore-only undoes it
	hwts --per-state --cpu 1 >/dev/null 2>&1 &
	pid=$!
	wait_for '[ "$(cat $d)" = 1 ]'
	check "--per-state disabled C1" 1 "$(cat $d)"
	kill -KILL $pid; wait $pid
	check "SIGKILL: exit" 137 $?
	sleep 0.5 # the measuring child dies with its supervisor (PR_SET_PDEATHSIG)
	check "after SIGKILL: C1 still disabled, journaled" "1 journal.$pid " "$(cat $d) $(left)"
	check "after SIGKILL: PM QoS released with the fd" "$q0" "$(qos)"
	hwts --restore-only 2>/dev/null
	check "--restore-only: exit" 0 $?
	check "--restore-only: C1 enabled, no journal" "0 " "$(cat $d) $(left)"
	# SIGINT: the run restores it itself, ERROR 128
	hwts --per-state --cpu 1 >/dev/null 2>&1 &
	pid=$!
	wait_for '[ "$(cat $d)" = 1 ]'
	kill -INT $pid; wait $pid
	check "SIGINT: exit" 128 $?
	check "SIGINT: C1 enabled, no journal" "0 " "$(cat $d) $(left)"
	# --mitigate holds PM QoS at 0 for the whole run; SIGKILL: the limit comes back
	hwts --mitigate >/dev/null 2>&1 &
	pid=$!
	wait_for '[ "$(qos)" = 0 ]'
	check "--mitigate holds PM QoS 0" 0 "$(qos)"
	kill -KILL $pid; wait $pid
	sleep 0.5
	check "after SIGKILL: PM QoS back" "$q0" "$(qos)"
	hwts --restore-only 2>/dev/null
	check "no journal left" "" "$(left)"
}

# --iface: SIOCSHWTSTAMP turns the NIC's stamping on (qemu's e1000e takes it), journaled;
# with no host reflecting (--peer 10.0.2.2, qemu's user network) the run ends in ERROR
hwtstamp() {
	ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0
	check "e1000e stamping off before" "0 0" "$(hwtsctl eth0)"
	for sig in KILL INT; do
		hwts --iface eth0 --peer 10.0.2.2 --duration 20 >/dev/null 2>&1 &
		pid=$!
		wait_for '[ "$(hwtsctl eth0)" = "1 1" ]'
		check "--iface: stamping on during the run" "1 1" "$(hwtsctl eth0)"
		kill -$sig $pid; wait $pid
		rc=$?
		if [ $sig = KILL ]; then
			sleep 0.5
			check "after SIGKILL: still on, journaled" "1 1 journal.$pid " "$(hwtsctl eth0) $(left)"
			hwts --restore-only 2>/dev/null
			check "--restore-only: exit" 0 $?
		else
			check "SIGINT: exit" 128 $rc
		fi
		check "$sig: stamping off again, no journal" "0 0 " "$(hwtsctl eth0) $(left)"
	done
}

cgv2() {
	s=/proc/sys/kernel/sched_cfs_bandwidth_slice_us
	s0=$(cat $s)
	ctl0=$(cat /sys/fs/cgroup/cgroup.subtree_control)
	check "v2 only" "cgroup2" "$(awk '$3 ~ /^cgroup/ {print $3}' /proc/mounts | sort -u | tr '\n' ' ' | sed 's/ $//')"
	grp() { find /sys/fs/cgroup -name 'krepro-fibtest-*' -type d | head -n 1; }
	for sig in KILL TERM; do
		fibtest --trigger >/dev/null 2>&1 &
		pid=$!
		wait_for '[ -n "$(grp)" ] && [ "$(cat $s)" != "$s0" ]'
		g=$(grp)
		check "--trigger: its group, the slice 1 s" "yes 1000000" "$([ -n "$g" ] && echo yes) $(cat $s)"
		check "--trigger: limited" yes "$(grep -qv '^max ' "$g/cpu.max" && echo yes)"
		kill -$sig $pid; wait $pid
		rc=$?
		if [ $sig = KILL ]; then
			check "SIGKILL: exit" 137 $rc
			sleep 0.5
			check "after SIGKILL: journaled" "journal.$pid " "$(left)"
			fibtest --restore-only 2>/dev/null
			check "--restore-only: exit" 0 $?
		else
			check "SIGTERM: exit" 128 $rc
		fi
		check "$sig: no group, the slice, the root's controllers, no journal" "no $s0 $ctl0 " \
			"$([ -n "$(grp)" ] && echo yes || echo no) $(cat $s) $(cat /sys/fs/cgroup/cgroup.subtree_control) $(left)"
	done
}

for what in "$@"; do "$what"; done
echo "restore_in_guest $*: $fails failed"
[ $fails = 0 ]
