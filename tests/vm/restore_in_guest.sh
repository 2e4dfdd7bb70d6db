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
# stop_run PROG SIG PID [CHECK]: SIGKILL leaves the run's journal (CHECK, shell code, runs
# then), and PROG --restore-only undoes it; another signal is ERROR 128, the run's own undo
stop_run() {
	kill -$2 $3; wait $3
	rc=$?
	if [ $2 = KILL ]; then
		check "SIGKILL: exit" 137 $rc
		sleep 0.5 # the measuring child dies with its supervisor (PR_SET_PDEATHSIG)
		check "after SIGKILL: journaled" "journal.$3 " "$(left)"
		eval "${4:-}"
		$1 --restore-only 2>/dev/null
		check "--restore-only: exit" 0 $?
	else
		check "SIG$2: exit" 128 $rc
	fi
}

idle() {
	d=/sys/devices/system/cpu/cpu1/cpuidle/state1/disable
	# reading /dev/cpu_dma_latency gives the current PM QoS limit (4 bytes)
	qos() { hexdump -e '1/4 "%d"' /dev/cpu_dma_latency; }
	check "cpuidle driver" acpi_idle "$(cat /sys/devices/system/cpu/cpuidle/current_driver)"
	check "C1 enabled before" 0 "$(cat $d)"
	q0=$(qos)
	# --per-state disables C1 (journaled), SIGKILLed and SIGINTed meanwhile
	for sig in KILL INT; do
		hwts --per-state --cpu 1 >/dev/null 2>&1 &
		pid=$!
		wait_for '[ "$(cat $d)" = 1 ]'
		check "--per-state disabled C1" 1 "$(cat $d)"
		# (after SIGKILL: C1 still disabled; PM QoS already released with the fd)
		stop_run hwts $sig $pid 'check "C1 disabled, PM QoS free" "1 $q0" "$(cat $d) $(qos)"'
		check "$sig: C1 enabled, no journal" "0 " "$(cat $d) $(left)"
	done
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
		stop_run hwts $sig $pid 'check "after SIGKILL: still on" "1 1" "$(hwtsctl eth0)"'
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
		stop_run fibtest $sig $pid
		check "$sig: no group, the slice, the root's controllers, no journal" "no $s0 $ctl0 " \
			"$([ -n "$(grp)" ] && echo yes || echo no) $(cat $s) $(cat /sys/fs/cgroup/cgroup.subtree_control) $(left)"
	done
}

for what in "$@"; do "$what"; done
echo "restore_in_guest $*: $fails failed"
[ $fails = 0 ]
