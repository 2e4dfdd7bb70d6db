// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the journal restore (kr_journal_restore_file) on journals built from the fuzz
 * bytes. A raw fuzzed journal could name any path (/proc/sys/..., a cgroup) or any task, and
 * restoring it as root would change the machine, so the bytes are decoded into entries whose
 * every path lies under this harness's temp dir and whose sched entries can only name
 * harmless tids (none, an unused pid, -1, 0 or this process) and non-RT policies. The values
 * written, the escapes, the field counts, the numbers and unknown or empty entries are fuzzed.
 * Checked: no memory error, and the restore never changes this process's own policy unless
 * an entry named this process with its real starttime (a journal entry naming tid 0 or a
 * starttime of 0 must not touch the restoring process).
 */
#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[512], workdir[600], journal[600];
static unsigned long long self_starttime;

struct bytes {
	const uint8_t *p;
	size_t n;
};

static unsigned take(struct bytes *b)
{
	if (!b->n)
		return 0;
	b->n--;
	return *b->p++;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void reset_workdir(void)
{
	char p[256];

	nftw(workdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (mkdir(workdir, 0700) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/f0", workdir);
	kr_write_file(p, "x"); /* fails: no O_CREAT, create below */
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "orig\n", 5) != 5)
		abort();
	close(fd);
	snprintf(p, sizeof(p), "%s/f1", workdir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	close(fd);
	snprintf(p, sizeof(p), "%s/d0", workdir);
	mkdir(p, 0700);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_quiet_stderr();
	/* tests/fuzz/run points KREPRO_FUZZ_TMP into its build directory and empties it: a
	 * crash (abort) leaves the directory behind */
	const char *base = getenv("KREPRO_FUZZ_TMP");
	snprintf(tmpdir, sizeof(tmpdir), "%s/krfuzz-journal-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir))
		abort();
	/* every path the harness writes starts with the work dir, untruncated */
	if (strlen(tmpdir) > 200)
		abort();
	snprintf(workdir, sizeof(workdir), "%s/w", tmpdir);
	snprintf(journal, sizeof(journal), "%s/journal.999999999", tmpdir);
	setenv("KREPRO_RUNDIR", tmpdir, 1);
	struct kr_taskstat t;
	if (kr_read_taskstat(getpid(), &t) < 0)
		abort();
	self_starttime = t.starttime;
	kr_set_sched(0, SCHED_OTHER, 0);
	return 0;
}

/* the temp dir goes when the fuzzer exits normally (-max_total_time, -runs) */
__attribute__((destructor)) static void cleanup(void)
{
	if (tmpdir[0])
		nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* a path under the work dir: a fixed name or a sanitised fuzzed one, never "." or ".." */
static void fuzz_path(struct bytes *b, char *out, size_t len)
{
	static const char *const fixed[] = { "f0", "f1", "d0", "d1", "missing" };
	unsigned k = take(b) % 7;
	if (k < 5) {
		snprintf(out, len, "%s/%s", workdir, fixed[k]);
		return;
	}
	char name[12] = "n";
	size_t l = 1 + take(b) % 8;
	for (size_t i = 1; i < l; i++)
		name[i] = "abcdefghij0123456789._-"[take(b) % 24];
	name[l] = 0;
	snprintf(out, len, "%s/%s", workdir, name);
}

/* a fuzzed field value: any byte but '\n' (a raw newline would start a line the harness did
 * not vet) and NUL; tabs and backslashes stay, so extra fields and escapes are exercised */
static void fuzz_value(struct bytes *b, char *out, size_t len)
{
	size_t l = take(b) % 48, o = 0;
	for (size_t i = 0; i < l && o + 1 < len; i++) {
		unsigned c = take(b);
		if (c == '\n' || c == 0)
			c = '\\';
		out[o++] = (char)c;
	}
	out[o] = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bytes b = { data, size };
	static char text[1 << 16];
	size_t o = 0;
	bool names_self = false;

	reset_workdir();
	bool verbose = take(&b) & 1;
	while (b.n && o + 512 < sizeof(text)) {
		char path[1024], val[64], val2[64];
		unsigned op = take(&b) % 9;
		switch (op) {
		case 0:
			fuzz_path(&b, path, sizeof(path));
			fuzz_value(&b, val, sizeof(val));
			o += (size_t)snprintf(text + o, sizeof(text) - o, "write\t%s\t%s\n", path, val);
			break;
		case 1:
			fuzz_path(&b, path, sizeof(path));
			o += (size_t)snprintf(text + o, sizeof(text) - o, "rmdir\t%s\n", path);
			break;
		case 2:
			fuzz_path(&b, path, sizeof(path));
			o += (size_t)snprintf(text + o, sizeof(text) - o, "unlink\t%s\n", path);
			break;
		case 3: {
			static const char *const tids[] = { "0", "-1", "999999999", "2147483647", "x", "" };
			static const char *const policies[] = { "0", "3", "5", "-1", "7", "1000", "" };
			unsigned k = take(&b) % 7, s = take(&b) % 3;
			char tid[16], st[32];
			if (k == 6)
				snprintf(tid, sizeof(tid), "%d", (int)getpid());
			else
				snprintf(tid, sizeof(tid), "%s", tids[k]);
			if (s == 0)
				snprintf(st, sizeof(st), "0");
			else if (s == 1)
				snprintf(st, sizeof(st), "%llu", self_starttime);
			else
				fuzz_value(&b, st, sizeof(st));
			if (k == 6 && s == 1)
				names_self = true;
			fuzz_value(&b, val2, sizeof(val2));
			/* the prio field is fuzzed; the policy never an RT or deadline one */
			o += (size_t)snprintf(text + o, sizeof(text) - o, "sched\t%s\t%s\t%s\t%s\n", tid,
					      st, policies[take(&b) % 7], val2);
			break;
		}
		case 4:
			fuzz_value(&b, val, sizeof(val));
			o += (size_t)snprintf(text + o, sizeof(text) - o, "child\t%s\n", val);
			break;
		case 5:
			fuzz_value(&b, val, sizeof(val));
			o += (size_t)snprintf(text + o, sizeof(text) - o, "krepro-journal\t%s\n", val);
			break;
		case 6: /* an unknown or mangled keyword: never one of the four actions */
			fuzz_value(&b, val, sizeof(val));
			if (!strncmp(val, "write", 5) || !strncmp(val, "rmdir", 5) ||
			    !strncmp(val, "unlink", 6) || !strncmp(val, "sched", 5))
				val[0] = '?';
			o += (size_t)snprintf(text + o, sizeof(text) - o, "%s\n", val);
			break;
		case 7:
			text[o++] = '\n';
			break;
		case 8: /* a last line without its newline (a torn write) */
			fuzz_path(&b, path, sizeof(path));
			o += (size_t)snprintf(text + o, sizeof(text) - o, "write\t%s", path);
			b.n = 0;
			break;
		}
	}
	int fd = open(journal, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, text, o) != (ssize_t)o)
		abort();
	close(fd);

	int failed = kr_journal_restore_file(journal, verbose);
	FUZZ_CHECK(failed >= 0);
	int pol = sched_getscheduler(0);
	if (pol != SCHED_OTHER) {
		kr_set_sched(0, SCHED_OTHER, 0);
		if (!names_self)
			fprintf(fuzz_err, "the restore of this journal set policy %d on the restoring "
				"process:\n%.*s\n", pol, (int)o, text);
		FUZZ_CHECK(names_self); /* only an entry naming this very task may change it */
	}
	return 0;
}
