# SPDX-License-Identifier: GPL-2.0-only
# Description: what the kernel tests of the programs that reserve huge pages share
# (ktask_bench, clear_pages): verdict counting, the memory check after a run, and the
# SIGINT mid-run with the pool reserved. Sourced; sets fails, free0, shmem0, nodes0.
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $* (${SECONDS}s)"; }
mem() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
free0=$(mem MemAvailable)
shmem0=$(mem Shmem)
# every node's share of every hugetlb pool: a run restores them node by node
nodes() {
	cat /sys/devices/system/node/node*/hugepages/hugepages-*/nr_hugepages 2>/dev/null | tr '\n' ' '
}
nodes0=$(nodes)

# Each node's hugetlb pools as before, MemAvailable back within 400 MiB of the start (a
# region left behind would be >= 512 MiB; other work moves it too), shmem (tmpfs, memfd)
# not grown by 64 MiB, and nothing but the lock in /run/krepro. The kernel frees huge pages
# given back to the buddy allocator from a workqueue (hugetlb vmemmap): seconds here, and
# a cold run saw 469 MiB still missing after 10 s with every pool at 0: up to 30 s, and
# the failure says how it moved.
check_memory_and_journal() {
	local when=$1 free left seen=""
	[ "$(nodes)" = "$nodes0" ] || fail "$when: per-node hugetlb pools $(nodes), were $nodes0"
	for i in $(seq 150); do
		free=$(mem MemAvailable)
		[ $((free0 - free)) -lt 409600 ] && break
		[ $((i % 25)) = 1 ] && seen="$seen $(((free0 - free) / 1024))"
		sleep 0.2
	done
	[ $((free0 - free)) -lt 409600 ] || fail "$when: MemAvailable ${free} kB, was ${free0} kB" \
		"(MiB missing every 5 s:$seen; Shmem $(mem Shmem) kB, was $shmem0 kB)"
	[ $(($(mem Shmem) - shmem0)) -lt 65536 ] ||
		fail "$when: Shmem $(mem Shmem) kB, was $shmem0 kB (a tmpfs or memfd file left?)"
	left=$(ls /run/krepro 2>/dev/null | grep -v '^lock$')
	[ -z "$left" ] || fail "$when: left in /run/krepro: $left"
}

# sigint_midrun POOL NR0 PROGRAM ARGS...: SIGINT once POOL (an nr_hugepages file) differs
# from NR0, i.e. with the pool reserved; the run must end in ERROR (128)
sigint_midrun() {
	local pool=$1 nr0=$2 pid rc
	shift 2
	"$@" >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 1200); do   # up to 60 s: the clearing-speed probe and a busy host come first
		[ "$(cat "$pool")" != "$nr0" ] && break
		sleep 0.05
	done
	[ "$(cat "$pool")" != "$nr0" ] || fail "the pool was never reserved"
	sleep 0.5
	kill -INT $pid
	wait $pid; rc=$?
	[ $rc = 128 ] && ok "SIGINT: rc=128" || fail "SIGINT: rc=$rc, want 128"
}
