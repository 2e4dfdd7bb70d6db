/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Description: the shape catalogue (tests/shapes/, its README) for a program's unit test:
 * each machine shape's recorded /sys and /proc files replayed through lib's kr_root, and
 * its expect lines checked against the program's decisions before any measurement.
 * A test includes it after its PROG.c and cmocka.h, with KR_SHAPES the catalogue.
 */
#include "internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct shape {
	char name[64], dir[512], root[600];
	char *expect, *absent;		/* the shape's files ("" when absent) */
	char *version, *cmdline, *config, *cpuinfo; /* as the machine described itself */
	char release[64], realtime[16];
	struct kr_kernel k;		/* from those: kr_*_from(&s->k) */
	const char *prog;
	int failed;
	bool used[64];			/* the expect lines checked */
};

static char *shape_text(const char *dir, const char *file)
{
	char p[800];
	char *t;

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	t = kr_read_text(p);
	return t ? t : strdup("");
}

static void shape_fail(struct shape *s, const char *fmt, ...)
{
	char *m = KR_VSTRF(fmt);

	print_error("shape %s: %s\n", s->name, m);
	free(m);
	s->failed++;
}

/* the files a program's decisions read (under root/): each must be in the shape unless
 * its `absent` file names it (recorded as absent on that machine) */
static __attribute__((unused)) void shape_needs(struct shape *s, const char *const *files)
{
	char p[900], line[300];
	struct stat st;

	for (; *files; files++) {
		snprintf(p, sizeof(p), "%s/%s", s->root, *files);
		snprintf(line, sizeof(line), "\n%s\n", *files);
		char *a = kr_strf("\n%s\n", s->absent);
		if (stat(p, &st) < 0 && !strstr(a, line))
			shape_fail(s, "lacks root/%s (%s reads it: capture it, or list it in "
				   "%s/absent)", *files, s->prog, s->name);
		free(a);
	}
}

/* the expect line "PROG KEY TEXT" for key (NULL: the decision's class), its number into *i
 * and TEXT; NULL if there is none */
static const char *shape_line(struct shape *s, const char *key, int *i, char *text,
			      size_t len)
{
	char p[64], k[64], line[400];
	int n = 0, off = 0;

	for (const char *l = s->expect; *l; l += strcspn(l, "\n"), l += *l == '\n', n++) {
		size_t ll = strcspn(l, "\n");
		ll = ll < sizeof(line) ? ll : sizeof(line) - 1;
		memcpy(line, l, ll), line[ll] = 0;
		if (*l == '#' || sscanf(line, "%63s %63s %n", p, k, &off) < 2 || strcmp(p, s->prog))
			continue;
		bool cls = !strcmp(k, "go") || !strncmp(k, "skip-", 5);
		if (key ? strcmp(k, key) : !cls)
			continue;
		snprintf(text, len, "%s%s%s", key ? "" : k, key || !line[off] ? "" : " ",
			 line + off);
		return *i = n, text;
	}
	return NULL;
}

static const char *class_of(int code)
{
	return code == 0 ? "go" : code == 125 ? "skip-125" : code == 129 ? "skip-129" : "error";
}

/* the program's decision before measuring: code (0 go, 125, 129) and its reason */
static void shape_decision(struct shape *s, int code, const char *reason)
{
	char want[300], got[300], cls[16] = "";
	int i, off = 0;

	snprintf(got, sizeof(got), "%s %s", class_of(code), reason ? reason : "");
	if (!shape_line(s, NULL, &i, want, sizeof(want))) {
		shape_fail(s, "expect has no class line for %s; this run: %s %s", s->prog,
			   s->prog, got);
		return;
	}
	s->used[i % 64] = true;
	sscanf(want, "%15s %n", cls, &off);
	if (strcmp(cls, class_of(code)) || !strstr(got, want + off))
		shape_fail(s, "%s decided \"%s\", expected \"%s\"", s->prog, got, want);
}

/* a named fact of the decisions ("numa", "cause"): its expect line's text is a substring */
static __attribute__((unused)) void shape_fact(struct shape *s, const char *key, const char *value)
{
	char want[300];
	int i;

	if (!shape_line(s, key, &i, want, sizeof(want))) {
		shape_fail(s, "expect has no line \"%s %s\"; this run: %s", s->prog, key, value);
		return;
	}
	s->used[i % 64] = true;
	if (!strstr(value, want))
		shape_fail(s, "%s %s is \"%s\", expected \"%s\"", s->prog, key, value, want);
}

/* the same with a printf reason or value */
static __attribute__((unused, format(printf, 3, 4))) void shape_decisionf(struct shape *s,
	int code, const char *fmt, ...)
{
	char *r = KR_VSTRF(fmt);

	shape_decision(s, code, r);
	free(r);
}

static __attribute__((unused, format(printf, 3, 4))) void shape_factf(struct shape *s,
	const char *key, const char *fmt, ...)
{
	char *v = KR_VSTRF(fmt);

	shape_fact(s, key, v);
	free(v);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* each shape of the catalogue with kr_root at its tree, in name order: decide(s) makes the
 * program's decisions and checks them; every expect line of prog must be checked. Returns
 * the number of shapes. */
static int shapes_each(const char *prog, void (*decide)(struct shape *s))
{
	DIR *d = opendir(KR_SHAPES);
	struct dirent *e;
	char *names[64];
	int n = 0, failed = 0;

	assert_non_null(d);
	while ((e = readdir(d)) && n < 64)
		if (e->d_name[0] != '.' && e->d_type == DT_DIR)
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, (size_t)n, sizeof(*names), cmp_name);
	for (int j = 0; j < n; j++) {
		static struct shape s;
		char rt[700];
		int l = 0;

		memset(&s, 0, sizeof(s));
		s.prog = prog;
		snprintf(s.name, sizeof(s.name), "%s", names[j]);
		snprintf(s.dir, sizeof(s.dir), "%s/%s", KR_SHAPES, names[j]);
		snprintf(s.root, sizeof(s.root), "%s/root", s.dir);
		s.expect = shape_text(s.dir, "expect");
		s.absent = shape_text(s.dir, "absent");
		s.config = shape_text(s.dir, "kernel-config");
		s.version = shape_text(s.root, "proc/version");
		s.cmdline = shape_text(s.root, "proc/cmdline");
		s.cpuinfo = shape_text(s.root, "proc/cpuinfo");
		if (!*s.expect)
			shape_fail(&s, "no expect file");
		/* "Linux version RELEASE (builder) (compiler) #1 SMP ...": uname -r and -v */
		sscanf(s.version, "Linux version %63s", s.release);
		const char *v = strstr(s.version, ") #");
		snprintf(rt, sizeof(rt), "%s/sys/kernel/realtime", s.root);
		kr_read_file(rt, s.realtime, sizeof(s.realtime));
		s.k = (struct kr_kernel){ .release = s.release, .version = v ? v + 2 : "",
			.cmdline = s.cmdline, .config = *s.config ? s.config : NULL,
			.realtime = *s.realtime ? s.realtime : NULL };
		kr_root = s.root;
		kr_cpus_init(); /* the usable CPUs: the shape's online ones */
		decide(&s);
		kr_root = NULL;
		kr_cpus_init();
		for (const char *p = s.expect; *p; p += strcspn(p, "\n"), p += *p == '\n', l++) {
			char w[64];
			if (sscanf(p, "%63s", w) == 1 && !strcmp(w, prog) && !s.used[l % 64])
				shape_fail(&s, "expect line not checked: %.*s", (int)strcspn(p, "\n"), p);
		}
		failed += s.failed;
		free(s.expect), free(s.absent), free(s.config), free(s.version);
		free(s.cmdline), free(s.cpuinfo), free(names[j]);
	}
	assert_int_equal(failed, 0);
	return n;
}
