// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the report of one run and its verdict, in text, JSON or TAP
 * (CONTRACT.md section 3). Everything is buffered and printed once, at the verdict, so a
 * JSON or TAP consumer never sees partial output and the verdict line is always last.
 * The mail form has its own, plainer harness (mail.c).
 */
#include "krepro.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

struct kr_kv {
	char *key;
	char *str; /* NULL for a number */
	double num;
};

struct kr_kvlist {
	struct kr_kv *v;
	size_t n;
};

static struct {
	char **lines, **causes;
	size_t nlines, ncauses;
	struct kr_kvlist params, env;
	struct kr_kvlist meas;
} kr_rep;

/* appends s to the array *a of *n strings */
static void append(char ***a, size_t *n, char *s)
{
	if (!(*a = realloc(*a, (*n + 1) * sizeof(**a))))
		abort();
	(*a)[(*n)++] = s;
}

static void kvlist_set(struct kr_kvlist *l, const char *key, char *str, double num)
{
	size_t i = 0;

	while (i < l->n && strcmp(l->v[i].key, key))
		i++;
	if (i == l->n) {
		if (!(l->v = realloc(l->v, ++l->n * sizeof(*l->v))))
			abort();
		l->v[i].key = kr_strf("%s", key);
	} else {
		free(l->v[i].str);
	}
	l->v[i].str = str;
	l->v[i].num = num;
}

/* one entry per line, so TAP can prefix each */
void kr_say(const char *fmt, ...)
{
	char *s = KR_VSTRF(fmt), *l = s, *nl;
	size_t len = strlen(s);

	if (len && s[len - 1] == '\n')
		s[len - 1] = 0;
	for (; (nl = strchr(l, '\n')); l = nl + 1)
		append(&kr_rep.lines, &kr_rep.nlines, kr_strf("%.*s", (int)(nl - l), l));
	append(&kr_rep.lines, &kr_rep.nlines, kr_strf("%s", l));
	free(s);
}

void kr_param(const char *key, const char *fmt, ...)
{
	kvlist_set(&kr_rep.params, key, KR_VSTRF(fmt), 0);
}

void kr_params(const char *fmt, ...)
{
	char *text = KR_VSTRF(fmt), *eq;

	for (char *kv = strtok(text, " "); kv; kv = strtok(NULL, " "))
		if ((eq = strchr(kv, '=')))
			*eq = 0, kr_param(kv, "%s", eq + 1);
	free(text);
}

void kr_env(const char *key, const char *fmt, ...)
{
	kvlist_set(&kr_rep.env, key, KR_VSTRF(fmt), 0);
}

void kr_measure(const char *key, double value)
{
	kvlist_set(&kr_rep.meas, key, NULL, value);
}

void kr_measure_str(const char *key, const char *value)
{
	kvlist_set(&kr_rep.meas, key, kr_strf("%s", value ? value : ""), 0);
}

void kr_cause(const char *fmt, ...)
{
	append(&kr_rep.causes, &kr_rep.ncauses, KR_VSTRF(fmt));
}

/* "prog: message" on stderr, when show */
static void warn_str(char *s, bool show)
{
	if (show)
		fprintf(stderr, "%s: %s\n", kr_program() ? kr_program()->name : "krepro", s);
	free(s);
}

void kr_progress(const char *fmt, ...)
{
	warn_str(KR_VSTRF(fmt), isatty(STDERR_FILENO));
}

void kr_warn(const char *fmt, ...)
{
	warn_str(KR_VSTRF(fmt), true);
}

int kr_usage_error(const char *fmt, ...)
{
	warn_str(KR_VSTRF(fmt), true);
	return -1;
}

/* ---- JSON ---- */
static void json_string(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

static void json_number(FILE *f, double v)
{
	if (!isfinite(v))
		fputs("null", f);
	else if (v == floor(v) && fabs(v) < 1e15)
		fprintf(f, "%.0f", v);
	else
		fprintf(f, "%.6g", v);
}

static void json_object(FILE *f, const struct kr_kvlist *l)
{
	fputc('{', f);
	for (size_t i = 0; i < l->n; i++) {
		fputs(i ? "," : "", f);
		json_string(f, l->v[i].key);
		fputc(':', f);
		if (l->v[i].str)
			json_string(f, l->v[i].str);
		else
			json_number(f, l->v[i].num);
	}
	fputc('}', f);
}

static void json_array(FILE *f, char **s, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? "," : "", f);
		json_string(f, s[i]);
	}
	fputc(']', f);
}

static void report_json(FILE *f, enum kr_verdict v, int code, double value, double threshold,
			const char *reason, const char *line, const char *detail)
{
	static const char *const words[] = { "PASS", "FAIL", "SKIP", "ERROR" };
	const struct kr_prog *p = kr_program();

	fputs("{\"program\":", f);
	json_string(f, p ? p->name : "krepro");
	fputs(",\"version\":", f);
	json_string(f, KR_VERSION);
	fputs(",\"verdict\":", f);
	json_string(f, words[v]);
	fprintf(f, ",\"exit_code\":%d,\"metric\":{\"name\":", code);
	json_string(f, p ? p->metric : NULL);
	fputs(",\"value\":", f);
	json_number(f, value);
	fputs(",\"unit\":", f);
	json_string(f, p && p->unit ? p->unit : "");
	fputs("},\"threshold\":", f);
	json_number(f, threshold);
	fprintf(f, ",\"fail_when\":\"%s\"", p && p->fail_below ? "below" : "above");
	fputs(",\"rule\":", f);
	json_string(f, p ? p->rule : NULL);
	fputs(",\"reason\":", f);
	json_string(f, (v == KR_SKIP || v == KR_ERROR) ? reason : NULL);
	/* the line the text report ends on (72 columns), and what it left out */
	fputs(",\"verdict_line\":", f);
	json_string(f, line);
	fputs(",\"verdict_detail\":", f);
	json_string(f, detail);
	fputs(",\"parameters\":", f);
	json_object(f, &kr_rep.params);
	fputs(",\"environment\":", f);
	json_object(f, &kr_rep.env);
	fputs(",\"measurements\":", f);
	json_object(f, &kr_rep.meas);
	if (kr_cli() && kr_cli()->subsystem) {
		fputs(",\"subsystem\":{\"prefix\":", f);
		json_string(f, kr_cli()->subsystem);
		fputs(",\"file\":", f);
		json_string(f, kr_cli()->kernel_file);
		fputs(",\"list\":", f);
		json_string(f, kr_cli()->mail_list);
		fputs("}", f);
	}
	fputs(",\"known_causes\":", f);
	json_array(f, kr_rep.causes, v == KR_FAIL ? kr_rep.ncauses : 0);
	fputs(",\"text\":", f);
	json_array(f, kr_rep.lines, kr_rep.nlines);
	fputs("}\n", f);
}

/* 84.1, 20.0, 0.974, 500, 0.004: three significant digits without exponent noise */

/* columns of s: UTF-8 continuation bytes take none */
static size_t text_width(const char *s, size_t len)
{
	size_t w = 0;

	for (size_t i = 0; i < len && s[i]; i++)
		w += ((unsigned char)s[i] & 0xc0) != 0x80;
	return w;
}

/* The column continuation lines of a line start at: after a gap of two spaces in its
 * first 40 columns ("  --opt ARG    help", "  row label    1.0   2.0"), else its own
 * indent + 2. */
static size_t auto_indent(const char *line)
{
	size_t lead = strspn(line, " ");
	const char *gap = strstr(line + lead, "  ");

	if (gap && gap - line < 40 && gap[strspn(gap, " ")])
		return (size_t)(gap + strspn(gap, " ") - line);
	return lead + 2;
}

void kr_print_wrapped(FILE *f, const char *prefix, const char *line, int indent)
{
	size_t pw = text_width(prefix, strlen(prefix));
	size_t ind = indent < 0 ? auto_indent(line) : (size_t)indent;

	if (pw + ind > KR_TEXT_WIDTH / 2)
		ind = 4;
	for (bool first = true;; first = false) {
		size_t room = KR_TEXT_WIDTH - pw - (first ? 0 : ind);
		size_t len = strlen(line), cut = len;
		if (text_width(line, len) > room) {
			/* the last space that leaves the head within room, else a hard cut */
			size_t w = 0, space = 0;
			for (cut = 0; cut < len && w + (((unsigned char)line[cut] & 0xc0) != 0x80) <= room; cut++) {
				w += ((unsigned char)line[cut] & 0xc0) != 0x80;
				if (line[cut] == ' ' && cut > 0 && line[cut - 1] != ' ')
					space = cut;
			}
			if (line[cut] == ' ') /* the head ends exactly at the limit */
				space = cut;
			while (cut < len && ((unsigned char)line[cut] & 0xc0) == 0x80)
				cut--; /* never inside a character */
			if (space > strspn(line, " "))
				cut = space;
		}
		fprintf(f, "%s%*s", prefix, first ? 0 : (int)ind, "");
		/* on one line: control characters (a newline in a parameter) become spaces */
		for (size_t i = 0; i < cut; i++)
			fputc((unsigned char)line[i] < 0x20 ? ' ' : line[i], f);
		fputc('\n', f);
		line += cut;
		line += strspn(line, " ");
		if (!*line)
			return;
	}
}

/* "key: value", a long value (IRQ affinities, the command line) wrapped and indented */
static void report_print_env(FILE *f, const char *prefix)
{
	for (size_t i = 0; i < kr_rep.env.n; i++) {
		char *line = kr_strf("%s: %s", kr_rep.env.v[i].key, kr_rep.env.v[i].str);
		kr_print_wrapped(f, prefix, line, 4);
		free(line);
	}
}

void kr_env_print(FILE *f, bool json)
{
	if (json) {
		json_object(f, &kr_rep.env);
		fputc('\n', f);
		return;
	}
	(void)json;
	report_print_env(f, "");
}

/* The text report: the header, the environment, the parameters as "key=value" pairs
 * within 72 columns, kr_say's lines and, on FAIL, the known causes; prefix: "# " in TAP */
static void report_text(FILE *f, const char *prefix, bool fail)
{
	const struct kr_prog *p = kr_program();
	const struct kr_cli *c = kr_cli();
	char *s = kr_strf("%s %s: %s", p ? p->name : "krepro", KR_VERSION, c ? c->summary : "");
	size_t col = 0;

	kr_print_wrapped(f, prefix, s, 2);
	free(s);
	report_print_env(f, prefix);
	for (size_t i = 0; i < kr_rep.params.n; i++) {
		struct kr_kv *kv = &kr_rep.params.v[i];
		size_t w = strlen(kv->key) + 1 + strlen(kv->str);
		if (col == 0 || col + 1 + w > KR_TEXT_WIDTH) {
			if (col)
				fputc('\n', f);
			col = (size_t)fprintf(f, "%s%-7s", prefix, col ? "" : "params:");
		}
		col += (size_t)fprintf(f, " %s=", kv->key) + strlen(kv->str);
		for (const char *c = kv->str; *c; c++)
			fputc((unsigned char)*c < 0x20 ? ' ' : *c, f);
	}
	if (col)
		fputc('\n', f);
	for (size_t i = 0; i < kr_rep.nlines; i++) {
		if (!*kr_rep.lines[i])
			fprintf(f, "%.1s\n", prefix);
		else
			kr_print_wrapped(f, prefix, kr_rep.lines[i], -1);
	}
	for (size_t i = 0; fail && i < kr_rep.ncauses; i++) {
		s = kr_strf("known cause: %s", kr_rep.causes[i]);
		kr_print_wrapped(f, prefix, s, 2);
		free(s);
	}
}

/* Prints the report and returns code. The verdict line fits an email line: the verdict,
 * the metric and its limit (or the start of the reason); what does not fit goes into a
 * "verdict: ..." line above it. --quiet prints the whole verdict line alone. */
static int report_finish(enum kr_verdict v, int code, double value, const char *reason_in,
			 const char *extra)
{
	static const char *const words[] = { "PASS", "FAIL", "SKIP", "ERROR" };
	const struct kr_prog *p = kr_program();
	const struct kr_opts *o = kr_options();
	const char *name = p ? p->name : "krepro", *unit = p && p->unit ? p->unit : "";
	const char *x = extra ? extra : "", *pre = "";
	static int causes_named;
	/* the program names its causes now, from what this run saw (cli->causes) */
	if (v == KR_FAIL && kr_cli() && kr_cli()->causes && !causes_named++)
		kr_cli()->causes(o);
	double threshold = o && o->threshold_set ? o->threshold : (p ? p->threshold : NAN);
	bool metric = v == KR_PASS || v == KR_FAIL || (v == KR_SKIP && isfinite(value));
	char vbuf[32], tbuf[32], *m = NULL, *line, *shortline = NULL, *detail = NULL;
	/* a reason is one line in every format (it ends up in the verdict and TAP lines) */
	char *reason = reason_in ? kr_strf("%s", reason_in) : NULL, *r = reason ? reason : "";
	FILE *f = stdout;

	for (char *c = r; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
	kr_format_value(value, vbuf, sizeof(vbuf));
	kr_format_value(threshold, tbuf, sizeof(tbuf));
	if (metric) {
		m = kr_strf("%s=%s%s (limit %s%s)", p && p->metric ? p->metric : "metric", vbuf,
			    unit, tbuf, unit);
		line = kr_strf("%s: %s %s%s%s%s%s", name, words[v], r, reason ? " " : "", m,
			       *x ? " " : "", x);
	} else {
		line = kr_strf("%s: %s %s", name, words[v], r);
	}
	if (text_width(line, strlen(line)) > KR_TEXT_WIDTH && metric) {
		shortline = kr_strf("%s: %s %s%s", name, words[v], v == KR_SKIP ? "inconclusive " : "", m);
		detail = kr_strf("verdict: %s%s%s", r, reason && *x ? " " : "", x);
	} else if (text_width(line, strlen(line)) > KR_TEXT_WIDTH) {
		size_t cut = 0, hard = 0, head = strlen(name) + strlen(words[v]) + 3;
		for (size_t i = 0; line[i] && text_width(line, i + 1) <= KR_TEXT_WIDTH - 4; i++) {
			if (line[i] == ' ')
				cut = i;
			if (((unsigned char)line[i + 1] & 0xc0) != 0x80)
				hard = i + 1; /* never inside a character */
		}
		if (cut < head) /* a reason with no space to break at (a path): cut in it */
			cut = hard;
		shortline = kr_strf("%.*s ...", (int)cut, line);
		detail = kr_strf("%s: %s", words[v], r);
	}
	bool ksft = o && o->kselftest, tap = o && o->format == KR_FMT_TAP;
	/* kselftest counts every exit but 0 and 4 as a failure */
	if (ksft && (code == KR_EXIT_SKIP || code == KR_EXIT_SKIP_MACHINE))
		code = KR_EXIT_KSFT_SKIP;
	kr_csv_close();
	if (o && o->format == KR_FMT_JSON) { /* the line the text report ends on */
		report_json(f, v, code, value, threshold, reason, shortline ? shortline : line,
			    detail);
		goto done;
	}
	if (tap) {
		pre = "# ";
		/* as kselftest.h: no version line when nested (KSFT_TAP_LEVEL set) */
		if (!(ksft && getenv("KSFT_TAP_LEVEL")))
			fputs("TAP version 13\n", f);
		fputs("1..1\n", f);
	}
	if (!(o && o->quiet)) {
		report_text(f, pre, v == KR_FAIL);
		if (detail)
			kr_print_wrapped(f, pre, detail, 2);
	} else if (detail) { /* --quiet: the verdict line alone on stdout, within 72 columns
			     * too (issue 43: 140 here); what it leaves out goes to stderr */
		char *d = kr_strf("%s: %s", name, detail);
		fflush(f);
		kr_print_wrapped(stderr, "", d, 2);
		free(d);
	}
	fprintf(f, "%s%s\n", pre, shortline ? shortline : line);
	if (tap) {
		if (v == KR_PASS || v == KR_FAIL)
			fprintf(f, "%sok 1 %s\n", v == KR_FAIL ? "not " : "", name);
		else
			fprintf(f, "%s 1 %s # %s %s\n", v == KR_SKIP ? "ok" : "not ok", name,
				v == KR_SKIP ? "SKIP" : "error:", r);
		/* kselftest.h's ksft_print_cnts() line, which kselftest parsers read */
		if (ksft)
			fprintf(f, "# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:%d\n",
				v == KR_PASS, v == KR_FAIL, v == KR_SKIP, v == KR_ERROR);
	}
done:
	fflush(f);
	free(m);
	free(line);
	free(shortline);
	free(detail);
	free(reason);
	return code;
}

int kr_verdict(enum kr_verdict v, double value, const char *extra_fmt, ...)
{
	static const int codes[] = { KR_EXIT_PASS, KR_EXIT_FAIL, KR_EXIT_SKIP, KR_EXIT_ERROR };
	char *extra = extra_fmt ? KR_VSTRF(extra_fmt) : NULL;
	int r = report_finish(v, codes[v], value, v == KR_SKIP ? "inconclusive" : NULL, extra);

	free(extra);
	return r;
}

/* SKIP and ERROR: the reason is why placed in around ("%s") */
static int finish_reason(enum kr_verdict v, int code, double value, const char *around,
			 char *why)
{
	char *reason = kr_strf(around, why);
	int r = report_finish(v, code, value, reason, NULL);

	free(reason);
	free(why);
	return r;
}

int kr_skip(int code, const char *reason_fmt, ...)
{
	return finish_reason(KR_SKIP, code == KR_EXIT_SKIP_MACHINE ? code : KR_EXIT_SKIP, NAN,
			     "%s", KR_VSTRF(reason_fmt));
}

int kr_error(const char *reason_fmt, ...)
{
	return finish_reason(KR_ERROR, KR_EXIT_ERROR, NAN, "%s", KR_VSTRF(reason_fmt));
}

/* SKIP 125 with the metric shown; without a value there is no "metric=value" to introduce */
int kr_inconclusive(double value, const char *reason_fmt, ...)
{
	return finish_reason(KR_SKIP, KR_EXIT_SKIP, value, isfinite(value) ?
			     "inconclusive (%s):" : "inconclusive (%s)", KR_VSTRF(reason_fmt));
}


/* ---- CSV ----
 * --csv FILE is created before the lock and anything else (issue 42: a bad path was found
 * after the run, a symlink followed as root): a new regular file, never through a link,
 * never one that exists. The measuring child writes it; the supervisor removes it again
 * if nothing was written (a SKIP, an ERROR), so a file is there only with samples. */
static FILE *kr_csv_file;
static int kr_csv_fd = -1;
static struct stat kr_csv_st;

int kr_csv_create(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

	if (fd < 0)
		return -1;
	if (fstat(fd, &kr_csv_st) < 0) {
		int e = errno;
		close(fd);
		unlink(path);
		errno = e;
		return -1;
	}
	kr_csv_fd = fd;
	return 0;
}

void kr_csv_finish(const char *path)
{
	struct stat now, st;

	if (kr_csv_fd < 0)
		return;
	/* still empty and still the file made: nobody else's name is removed */
	if (fstat(kr_csv_fd, &now) == 0 && now.st_size == 0 && lstat(path, &st) == 0 &&
	    st.st_dev == kr_csv_st.st_dev && st.st_ino == kr_csv_st.st_ino)
		unlink(path);
	close(kr_csv_fd);
	kr_csv_fd = -1;
}

int kr_csv_open(const char *header)
{
	const struct kr_opts *o = kr_options();

	if (!o || !o->csv)
		return 0;
	if (kr_csv_file) { /* a second header: the file starts again */
		fflush(kr_csv_file);
		if (ftruncate(fileno(kr_csv_file), 0) < 0)
			goto fail;
		rewind(kr_csv_file);
	} else {
		int fd = kr_csv_fd >= 0 ? dup(kr_csv_fd) : (kr_csv_create(o->csv) < 0 ? -1
							    : dup(kr_csv_fd));
		if (fd < 0 || !(kr_csv_file = fdopen(fd, "w"))) {
			if (fd >= 0)
				close(fd);
			goto fail;
		}
	}
	fprintf(kr_csv_file, "%s\n", header);
	return 0;
fail:
	kr_warn("--csv %s: %s", o->csv, strerror(errno));
	return -1;
}

void kr_csv_row(const char *fmt, ...)
{
	va_list ap;

	if (kr_csv_file) {
		va_start(ap, fmt);
		vfprintf(kr_csv_file, fmt, ap);
		va_end(ap);
		fputc('\n', kr_csv_file);
	}
}

void kr_csv_close(void)
{
	if (kr_csv_file)
		fclose(kr_csv_file);
	kr_csv_file = NULL;
}
