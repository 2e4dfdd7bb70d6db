// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the save/restore journal: reverse-order restore, idempotence, awkward
 * paths, a simulated crash (a process that changed things and died without restoring),
 * and the scheduling-policy entry. Works on files in a temp dir, never on real sysctls.
 */
#include "krepro.h"
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

static char dir[] = "/tmp/krepro-journal-test-XXXXXX";
static char rundir[600];

static void put(const char *name, const char *value)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(value, f);
	fclose(f);
}

static const char *get(const char *name)
{
	static char buf[256];
	char p[700];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (kr_read_file(p, buf, sizeof(buf)) < 0)
		return NULL;
	return buf;
}

static const char *path(const char *name)
{
	static char p[4][700];
	static int i;
	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static void test_restore_in_reverse(void **state)
{
	(void)state;
	put("knob", "5000");
	/* two changes of one file: the restore must end at the first original value */
	assert_int_equal(kr_journal_write(path("knob"), "7000"), 0);
	assert_int_equal(kr_journal_write(path("knob"), "9000"), 0);
	assert_string_equal(get("knob"), "9000");
	assert_int_equal(kr_journal_mkdir(path("group"), 0755), 0);
	assert_int_equal(kr_journal_mkdir(path("group/sub"), 0755), 0); /* rmdir order matters */
	assert_int_equal(kr_journal_unlink(path("group/sub/tmpfile")), 0);
	put("group/sub/tmpfile", "data");
	put("ctl", "");
	assert_int_equal(kr_journal_write_undo(path("ctl"), "+cpu", "-cpu"), 0);
	assert_string_equal(get("ctl"), "+cpu");
	assert_int_equal(kr_journal_restore(), 0);
	assert_string_equal(get("ctl"), "-cpu"); /* the undo value, not the old content */
	assert_string_equal(get("knob"), "5000");
	assert_null(get("group/sub/tmpfile"));
	assert_int_equal(access(path("group"), F_OK), -1);
	/* restoring again is harmless: the journal is empty now */
	assert_int_equal(kr_journal_restore(), 0);
	assert_string_equal(get("knob"), "5000");
}

static void test_awkward_values(void **state)
{
	(void)state;
	/* a value may hold tabs and backslashes: it is the last field of its line */
	put("we ird name", "a\tb\\c");
	assert_int_equal(kr_journal_write(path("we ird name"), "x"), 0);
	assert_int_equal(kr_journal_restore(), 0);
	assert_string_equal(get("we ird name"), "a\tb\\c");
	/* a newline in a value or a tab in a path is refused before anything changes */
	put("multi", "a\nb");
	assert_int_equal(kr_journal_write(path("multi"), "x"), -1);
	assert_int_equal(errno, EINVAL);
	assert_string_equal(get("multi"), "a\nb");
	put("ta\tb", "1");
	assert_int_equal(kr_journal_write(path("ta\tb"), "2"), -1);
	assert_int_equal(kr_journal_mkdir(path("tab\tdir"), 0700), -1);
	assert_int_equal(access(path("tab\tdir"), F_OK), -1);
	assert_string_equal(get("ta\tb"), "1");
	assert_int_equal(kr_journal_restore(), 0);
}

static void test_crash_then_stale_restore(void **state)
{
	(void)state;
	put("slice", "5000");
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* a run of its own that changes things and is killed before it restores */
		kr_journal_detach();
		if (kr_journal_write(path("slice"), "1000000") || kr_journal_mkdir(path("cg"), 0755))
			_exit(1);
		raise(SIGKILL);
	}
	int st;
	waitpid(pid, &st, 0);
	assert_true(WIFSIGNALED(st));
	assert_string_equal(get("slice"), "1000000");
	assert_int_equal(access(path("cg"), F_OK), 0);
	char jpath[700];
	snprintf(jpath, sizeof(jpath), "%s/journal.%d", rundir, (int)pid);
	assert_int_equal(access(jpath, F_OK), 0);
	/* the next run finds it, restores it and removes it */
	assert_int_equal(kr_journal_restore_stale(NULL), 1);
	assert_string_equal(get("slice"), "5000");
	assert_int_equal(access(path("cg"), F_OK), -1);
	assert_int_equal(access(jpath, F_OK), -1);
	assert_int_equal(kr_journal_restore_stale(NULL), 0);
}

static void test_live_journal_is_left_alone(void **state)
{
	int pipefd[2];
	(void)state;
	put("live", "1");
	assert_int_equal(pipe(pipefd), 0);
	pid_t pid = fork();
	if (pid == 0) {
		kr_journal_detach();
		if (kr_journal_write(path("live"), "2"))
			_exit(1);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause(); /* alive until killed */
	}
	char c;
	close(pipefd[1]); /* a child that dies early gives EOF, not a hang */
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	/* the owner is alive: its journal is not ours to restore */
	assert_int_equal(kr_journal_restore_stale(NULL), 0);
	assert_string_equal(get("live"), "2");
	close(pipefd[0]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(kr_journal_restore_stale(NULL), 1);
	assert_string_equal(get("live"), "1");
}

/* A run started in one directory with a relative path and killed; the restore runs from
 * another directory (as `--restore-only` from / did): the path was journaled absolute. */
static void test_relative_path_restored_elsewhere(void **state)
{
	char cwd[PATH_MAX];
	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	put("rel", "");
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		kr_journal_detach();
		if (chdir(dir) || kr_journal_mkdir("./reldir", 0700) ||
		    kr_journal_unlink("reldir/data") || kr_journal_write("rel", "changed"))
			_exit(1);
		FILE *f = fopen("reldir/data", "w");
		if (!f)
			_exit(1);
		fclose(f);
		raise(SIGKILL);
	}
	int st, failed = -1;
	waitpid(pid, &st, 0);
	assert_true(WIFSIGNALED(st));
	assert_string_equal(get("reldir/data"), "");
	assert_string_equal(get("rel"), "changed");
	assert_int_equal(chdir("/"), 0);
	int found = kr_journal_restore_stale(&failed);
	assert_int_equal(chdir(cwd), 0);
	assert_int_equal(found, 1);
	assert_int_equal(failed, 0);
	assert_null(get("reldir/data"));
	assert_int_equal(access(path("reldir"), F_OK), -1);
	assert_string_equal(get("rel"), "");
}

/* A journal of an older krepro with a relative path: not restorable from here, and the
 * restore says so instead of reporting it done; the journal is kept. */
static void test_relative_entry_is_a_failure(void **state)
{
	char jpath[700], text[256];
	(void)state;
	assert_int_equal(mkdir(rundir, 0700) == 0 || errno == EEXIST, 1);
	/* pid 1 is alive: use a pid that is not (a dead run); starttime 1 never matches */
	snprintf(jpath, sizeof(jpath), "%s/journal.%d", rundir, 999999);
	snprintf(text, sizeof(text), "krepro-journal\t999999\t1\tdio_kworker\n"
		 "rmdir\t./krepro-dio_kworker-584\nunlink\t./krepro-dio_kworker-584/data\n");
	FILE *f = fopen(jpath, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(kr_journal_restore_file(jpath, true), 2);
	int failed = -1;
	assert_int_equal(kr_journal_restore_stale(&failed), 1);
	assert_int_equal(failed, 1);
	assert_int_equal(access(jpath, F_OK), 0); /* kept for the user */
	unlink(jpath);
}

/* The unlink undo zeroes a file before unlinking it (its extents merged): never through a
 * symlink into another file, and never blocking on a FIFO. */
static void test_unlink_entry(void **state)
{
	(void)state;
	put("target", "keep");
	assert_int_equal(symlink(path("target"), path("link")), 0);
	assert_int_equal(mkfifo(path("fifo"), 0600), 0);
	put("data", "written data");
	assert_int_equal(kr_journal_unlink(path("link")), 0);
	assert_int_equal(kr_journal_unlink(path("fifo")), 0);
	assert_int_equal(kr_journal_unlink(path("data")), 0);
	assert_int_equal(kr_journal_restore(), 0);
	assert_int_equal(access(path("link"), F_OK), -1);
	assert_int_equal(access(path("fifo"), F_OK), -1);
	assert_int_equal(access(path("data"), F_OK), -1);
	assert_string_equal(get("target"), "keep");
	unlink(path("target"));
}

/* Gone things are not failures (a task that exited, a file removed with its namespace, a
 * NIC unplugged); an entry this version does not know is one, and a value keeps its tabs. */
static void test_gone_and_unknown_entries(void **state)
{
	char jpath[700];
	(void)state;
	put("tabbed", "old");
	snprintf(jpath, sizeof(jpath), "%s/journal.test", dir);
	FILE *f = fopen(jpath, "w");
	assert_non_null(f);
	fprintf(f, "krepro-journal\t1\t1\tx\nsched\t999999\t12345\t0\t0\n"
		"write\t/nonexistent-krepro-dir/x\tv\nhwtstamp\tkrepro-nonic0\t0\t0\n"
		"bogus\tx\nwrite\t%s/tabbed\ta\tb\n\n", dir);
	fclose(f);
	assert_int_equal(kr_journal_restore_file(jpath, true), 1);
	assert_string_equal(get("tabbed"), "a\tb");
	unlink(jpath);
}

/* A dead run's journal naming a live child is restored at once: the caller holds the lock,
 * which the child inherits, so a child still alive cannot be the dead run's (here: us). */
/* A journal partly restored keeps only what could not be undone (issue 42: the entries
 * undone were replayed by every later run, undoing an admin's own changes made since) */
static void test_partly_failed_keeps_only_the_failures(void **state)
{
	char jpath[700], *left;
	(void)state;
	put("slice2", "1000000");
	snprintf(jpath, sizeof(jpath), "%s/journal.partial", dir);
	FILE *f = fopen(jpath, "w");
	assert_non_null(f);
	fprintf(f, "krepro-journal\t1\t1\tx\nwrite\t%s/slice2\t5000\nbogus\tone\nbogus\ttwo\n", dir);
	fclose(f);
	assert_int_equal(kr_journal_restore_file(jpath, false), 2);
	assert_string_equal(get("slice2"), "5000");
	assert_non_null(left = kr_read_text(jpath));
	assert_string_equal(left, "krepro-journal\t1\t1\tx\nbogus\tone\nbogus\ttwo\n");
	free(left);
	put("slice2", "7000"); /* the admin's own change, after */
	assert_int_equal(kr_journal_restore_file(jpath, false), 2);
	assert_string_equal(get("slice2"), "7000");
	unlink(jpath);
}

/* A dead run's journal under our own pid (reused) is a dead run's all the same: its
 * starttime is not ours (issue 42: skipped, then truncated by our journal) */
static void test_own_pid_dead_run_restored(void **state)
{
	char jpath[700];
	(void)state;
	put("slice3", "1000000");
	snprintf(jpath, sizeof(jpath), "%s/journal.%d", rundir, (int)getpid());
	FILE *f = fopen(jpath, "w");
	assert_non_null(f);
	fprintf(f, "krepro-journal\t%d\t1\tfibtest\nwrite\t%s/slice3\t5000\n", (int)getpid(), dir);
	fclose(f);
	kr_journal_detach(); /* this process's own journal is not open */
	assert_int_equal(kr_journal_restore_stale(NULL), 1);
	assert_string_equal(get("slice3"), "5000");
	assert_int_equal(access(jpath, F_OK), -1);
}

static void test_child_entry_not_waited_for(void **state)
{
	char jpath[700];
	(void)state;
	put("kid", "changed");
	assert_int_equal(mkdir(rundir, 0700) == 0 || errno == EEXIST, 1);
	snprintf(jpath, sizeof(jpath), "%s/journal.%d", rundir, 999999);
	FILE *f = fopen(jpath, "w");
	assert_non_null(f);
	fprintf(f, "krepro-journal\t999999\t1\tfibtest\nchild\t%d\t1\nwrite\t%s/kid\told\n",
		(int)getpid(), dir);
	fclose(f);
	int64_t t0 = kr_now_ns();
	assert_int_equal(kr_journal_restore_stale(NULL), 1);
	assert_true(kr_now_ns() - t0 < 1000000000);
	assert_string_equal(get("kid"), "old");
	assert_int_equal(access(jpath, F_OK), -1);
}

static void *idle_thread(void *arg)
{
	int *stop = arg;
	while (!__atomic_load_n(stop, __ATOMIC_RELAXED))
		kr_sleep_ns(1000000);
	return NULL;
}

static void test_sched_entry(void **state)
{
	pthread_t t;
	static int stop; /* static: a failed assert must not leave the thread a dead stack */
	pid_t tid;
	char comm[64];
	(void)state;
	/* SCHED_OTHER <-> SCHED_BATCH needs no privilege */
	assert_int_equal(kr_thread_start(&t, -1, SCHED_OTHER, 0, idle_thread, &stop), 0);
	kr_sleep_ns(10000000);
	pid_t tids[64];
	/* our own comm: under valgrind it is not "test_journal" */
	assert_true(kr_read_file("/proc/self/comm", comm, sizeof(comm)) > 0);
	int n = kr_find_tasks(comm, tids, 64);
	assert_true(n >= 2);
	tid = tids[0] == getpid() ? tids[1] : tids[0];
	assert_int_equal(kr_journal_sched(tid, SCHED_BATCH, 0), 0);
	assert_int_equal(sched_getscheduler(tid), SCHED_BATCH);
	assert_int_equal(kr_journal_restore(), 0);
	assert_int_equal(sched_getscheduler(tid), SCHED_OTHER);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(rundir, sizeof(rundir), "%s/run", dir);
	setenv("KREPRO_RUNDIR", rundir, 1);
	return 0;
}

static int teardown(void **state)
{
	char cmd[700];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* A NIC whose driver cannot report its stamping config (SIOCGHWTSTAMP: lo has none) is
 * left alone: -2, nothing journaled. Before, "off" was journaled as a guess and set back
 * on restore, under ptp4l or chrony where the config was on. */
static void test_hwtstamp_unknown_config_refused(void **state)
{
	char jf[700], text[4096] = "";
	(void)state;
	snprintf(jf, sizeof(jf), "%s/journal.%d", rundir, (int)getpid());
	errno = 0;
	assert_int_equal(kr_journal_hwtstamp("lo", 1, 1), -2);
	assert_true(errno == EOPNOTSUPP || errno == EINVAL || errno == ENOTTY);
	assert_int_equal(kr_journal_hwtstamp("krepro-nonic0", 1, 1), -2);
	assert_int_equal(errno, ENODEV);
	if (access(jf, F_OK) == 0)
		assert_true(kr_read_file(jf, text, sizeof(text)) >= 0);
	assert_null(strstr(text, "hwtstamp"));
	assert_int_equal(kr_journal_restore(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restore_in_reverse),
		cmocka_unit_test(test_awkward_values),
		cmocka_unit_test(test_crash_then_stale_restore),
		cmocka_unit_test(test_live_journal_is_left_alone),
		cmocka_unit_test(test_sched_entry),
		cmocka_unit_test(test_relative_path_restored_elsewhere),
		cmocka_unit_test(test_relative_entry_is_a_failure),
		cmocka_unit_test(test_gone_and_unknown_entries),
		cmocka_unit_test(test_unlink_entry),
		cmocka_unit_test(test_child_entry_not_waited_for),
		cmocka_unit_test(test_partly_failed_keeps_only_the_failures),
		cmocka_unit_test(test_own_pid_dead_run_restored),
		cmocka_unit_test(test_hwtstamp_unknown_config_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
