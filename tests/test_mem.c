// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: lib/mem.c's hugetlb pool against a sysfs tree of plain files in a temp
 * dir: the pool grows through the global count and comes back node by node, each node
 * to the count it had (a DPDK or KVM host sets them per node), by the journal and by the
 * give-back (npages 0); or grows on each node by what memory bound there needs. The test
 * plays the kernel's part: after the global write it spreads the new pages over the
 * nodes as the kernel does (interleaved).
 */
#include "krepro.h"
#include "internal.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#define POOL "kernel/mm/hugepages/hugepages-2048kB/"
#define NODE(n) "devices/system/node/node" #n "/hugepages/hugepages-2048kB/nr_hugepages"

static char dir[] = "/tmp/krepro-mem-test-XXXXXX";

static const char *path(const char *name)
{
	static char p[2][700];
	static int i;

	i = !i;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static void put(const char *name, const char *value)
{
	assert_int_equal(kr_write_file(path(name), value), 0);
}

static const char *get(const char *name)
{
	static char buf[64];

	assert_true(kr_read_file(path(name), buf, sizeof(buf)) >= 0);
	return buf;
}

static void write_new(const char *name, const char *value)
{
	FILE *f = fopen(path(name), "w");

	assert_non_null(f);
	fputs(value, f);
	fclose(f);
}

/* a fresh tree: the global pool (free_hugepages follows nr_hugepages: every page of it
 * free, as the kernel's would be after it grew) and the given nodes' counts */
static void tree(int nnodes, const char *const *nodes, const char *global)
{
	char cmd[900], d[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s/kernel %s/devices && mkdir -p %s/" POOL, dir, dir,
		 dir);
	assert_int_equal(system(cmd), 0);
	for (int n = 0; n < nnodes; n++) {
		snprintf(d, sizeof(d), "devices/system/node/node%d/hugepages/hugepages-2048kB", n);
		snprintf(cmd, sizeof(cmd), "mkdir -p %s/%s", dir, d);
		assert_int_equal(system(cmd), 0);
		strcat(d, "/nr_hugepages");
		write_new(d, nodes[n]);
	}
	write_new(POOL "nr_hugepages", global);
	write_new(POOL "resv_hugepages", "0");
	assert_int_equal(symlink("nr_hugepages", path(POOL "free_hugepages")), 0);
}

/* node0 0, node1 512 (a DPDK host's pool on node 1): 256 more pages for the run, the
 * kernel adds them interleaved (128 each); afterwards each node has its own count back */
static void test_nodes_restored_by_the_journal(void **state)
{
	(void)state;
	tree(2, (const char *const[]){ "0", "512" }, "512");
	assert_int_equal(kr_hugetlb_reserve(768), 0);
	assert_string_equal(get(POOL "nr_hugepages"), "768");
	put(NODE(0), "128"); /* the kernel's part: the new pages interleaved */
	put(NODE(1), "640");
	assert_int_equal(kr_journal_restore(), 0);
	/* restoring the global count alone left 128/640 here, 256/256 on a kernel */
	assert_string_equal(get(NODE(0)), "0");
	assert_string_equal(get(NODE(1)), "512");
	assert_int_equal(kr_hugetlb_reserve(0), 0); /* a run's end: the same counts */
	assert_string_equal(get(NODE(1)), "512");
}

/* the give-back between page kinds (ktask_bench) does the same, and the journal after
 * it finds nothing left to change */
static void test_nodes_restored_by_the_give_back(void **state)
{
	(void)state;
	tree(3, (const char *const[]){ "16", "0", "300" }, "316");
	assert_int_equal(kr_hugetlb_reserve(400), 0);
	put(NODE(0), "44");
	put(NODE(1), "28");
	put(NODE(2), "328");
	assert_int_equal(kr_hugetlb_reserve(0), 0);
	assert_string_equal(get(NODE(0)), "16");
	assert_string_equal(get(NODE(1)), "0");
	assert_string_equal(get(NODE(2)), "300");
	assert_int_equal(kr_journal_restore(), 0);
	assert_string_equal(get(NODE(0)), "16");
	assert_string_equal(get(NODE(1)), "0");
	assert_string_equal(get(NODE(2)), "300");
}

/* without NUMA (no node directories) the global count is restored */
static void test_global_without_nodes(void **state)
{
	(void)state;
	tree(0, NULL, "7");
	assert_int_equal(kr_hugetlb_reserve(20), 0);
	assert_string_equal(get(POOL "nr_hugepages"), "20");
	assert_int_equal(kr_journal_restore(), 0);
	assert_string_equal(get(POOL "nr_hugepages"), "7");
	assert_int_equal(kr_hugetlb_reserve(0), 0);
}

/* enough free pages: nothing is changed or journaled */
static void test_enough_free_changes_nothing(void **state)
{
	(void)state;
	tree(2, (const char *const[]){ "10", "10" }, "20");
	assert_int_equal(kr_hugetlb_reserve(20), 0);
	put(NODE(0), "3"); /* someone else's change after ours: not ours to undo */
	assert_int_equal(kr_journal_restore(), 0);
	assert_int_equal(kr_hugetlb_reserve(0), 0);
	assert_string_equal(get(NODE(0)), "3");
}

/* memory bound to each node (ktask_bench on NUMA): each node's own count grows by what
 * its part needs beyond its free pages, and comes back to what it was, as above (a TCG
 * guest of 2 nodes: the global count gave 20 and 20 where the parts needed 16 and 24,
 * and the bound fault on node 1 failed with EFAULT) */
static void test_per_node_reserve(void **state)
{
	char free_path[128];

	(void)state;
	tree(2, (const char *const[]){ "0", "3" }, "3");
	for (int n = 0; n < 2; n++) { /* every page of a node free, as the kernel's after it grew */
		snprintf(free_path, sizeof(free_path), "devices/system/node/node%d/hugepages/"
			 "hugepages-2048kB/free_hugepages", n);
		assert_int_equal(symlink("nr_hugepages", path(free_path)), 0);
	}
	assert_int_equal(kr_hugetlb_reserve_node(0, 16), 0);
	assert_int_equal(kr_hugetlb_reserve_node(1, 24), 0);
	assert_string_equal(get(NODE(0)), "16");
	assert_string_equal(get(NODE(1)), "24");
	assert_int_equal(kr_hugetlb_reserve_node(1, 2), 0); /* free enough: unchanged */
	assert_string_equal(get(NODE(1)), "24");
	assert_int_equal(kr_journal_restore(), 0);
	assert_string_equal(get(NODE(0)), "0");
	assert_string_equal(get(NODE(1)), "3");
	assert_int_equal(kr_hugetlb_reserve_node(0, 4), 0);
	assert_int_equal(kr_hugetlb_reserve(0), 0); /* the give-back: every node */
	assert_string_equal(get(NODE(0)), "0");
	assert_int_equal(kr_hugetlb_reserve_node(7, 1), -1); /* no such node */
}

static int setup(void **state)
{
	char rundir[700];

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(rundir, sizeof(rundir), "%s/run", dir);
	setenv("KREPRO_RUNDIR", rundir, 1);
	kr_sysfs = dir;
	return 0;
}

static int teardown(void **state)
{
	char cmd[800];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nodes_restored_by_the_journal),
		cmocka_unit_test(test_nodes_restored_by_the_give_back),
		cmocka_unit_test(test_global_without_nodes),
		cmocka_unit_test(test_per_node_reserve),
		cmocka_unit_test(test_enough_free_changes_nothing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
