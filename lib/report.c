// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: the report of one run and its verdict, in text, JSON or TAP
 * (CONTRACT.md section 3). Everything is buffered and printed once, at the verdict, so a
 * JSON or TAP consumer never sees partial output and the verdict line is always last.
 * KR_EXPORT_MINIMAL (scripts/export) leaves out JSON, TAP and CSV: the text report only.
 */
#include "krepro.h"
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct kr_kv {
	char *key;
	char *str; /* NULL for a number */
	double num;
};

struct kr_kvlist {
	struct kr_kv *v;
	size_t n, cap;
};

static struct {
	char **lines;
	size_t nlines, cap;
	struct kr_kvlist params, env, meas;
	char **causes;
	size_t ncauses;
	bool done;
} kr_rep;

static char *kr_vfmt(const char *fmt, va_list ap)
{
	char *s = NULL;

	if (vasprintf(&s, fmt, ap) < 0) {
		perror("krepro: out of memory");
		abort();
	}
	return s;
}

static void *kr_xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		perror("krepro: out of memory");
		abort();
	}
	return p;
}

static void kvlist_set(struct kr_kvlist *l, const char *key, char *str, double num)
{
	for (size_t i = 0; i < l->n; i++) {
		if (!strcmp(l->v[i].key, key)) {
			free(l->v[i].str);
			l->v[i].str = str;
			l->v[i].num = num;
			return;
		}
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = kr_xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = (struct kr_kv){ strdup(key), str, num };
}

static void report_add_line(const char *text)
{
	if (kr_rep.nlines == kr_rep.cap) {
		kr_rep.cap = kr_rep.cap ? 2 * kr_rep.cap : 64;
		kr_rep.lines = kr_xrealloc(kr_rep.lines, kr_rep.cap * sizeof(char *));
	}
	kr_rep.lines[kr_rep.nlines++] = strdup(text);
}

void kr_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	char *s = kr_vfmt(fmt, ap);
	va_end(ap);
	size_t len = strlen(s);
	if (len && s[len - 1] == '\n')
		s[len - 1] = 0;
	/* one entry per line, so TAP can prefix each */
	for (char *p = s;;) {
		char *nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		report_add_line(p);
		if (!nl)
			break;
		p = nl + 1;
	}
	free(s);
}

void kr_param(const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kvlist_set(&kr_rep.params, key, kr_vfmt(fmt, ap), 0);
	va_end(ap);
}

void kr_env(const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kvlist_set(&kr_rep.env, key, kr_vfmt(fmt, ap), 0);
	va_end(ap);
}

void kr_measure(const char *key, double value)
{
#ifndef KR_EXPORT_MINIMAL /* measurements are JSON only */
	kvlist_set(&kr_rep.meas, key, NULL, value);
#else
	(void)key, (void)value;
#endif
}

void kr_measure_str(const char *key, const char *value)
{
#ifndef KR_EXPORT_MINIMAL
	kvlist_set(&kr_rep.meas, key, strdup(value ? value : ""), 0);
#else
	(void)key, (void)value;
#endif
}

void kr_cause(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kr_rep.causes = kr_xrealloc(kr_rep.causes, (kr_rep.ncauses + 1) * sizeof(char *));
	kr_rep.causes[kr_rep.ncauses++] = kr_vfmt(fmt, ap);
	va_end(ap);
}

void kr_progress(const char *fmt, ...)
{
	va_list ap;

	if (!isatty(STDERR_FILENO))
		return;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", kr_program() ? kr_program()->name : "krepro");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void kr_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", kr_program() ? kr_program()->name : "krepro");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

#ifndef KR_EXPORT_MINIMAL
/* ---- JSON ---- */
void kr_json_string(FILE *f, const char *s)
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

void kr_json_number(FILE *f, double v)
{
	if (!isfinite(v))
		fputs("null", f);
	else if (v == floor(v) && fabs(v) < 1e15)
		fprintf(f, "%.0f", v);
	else
		fprintf(f, "%.6g", v);
}

static void json_write_object(FILE *f, const struct kr_kvlist *l)
{
	fputc('{', f);
	for (size_t i = 0; i < l->n; i++) {
		if (i)
			fputc(',', f);
		kr_json_string(f, l->v[i].key);
		fputc(':', f);
		if (l->v[i].str)
			kr_json_string(f, l->v[i].str);
		else
			kr_json_number(f, l->v[i].num);
	}
	fputc('}', f);
}
#endif

/* 84.1, 20.0, 0.974, 500, 0.004: three significant digits without exponent noise */
static void format_value(char *buf, size_t len, double v)
{
	double a = fabs(v);

	if (!isfinite(v))
		snprintf(buf, len, "n/a");
	else if (a >= 100)
		snprintf(buf, len, "%.0f", v);
	else if (a >= 10)
		snprintf(buf, len, "%.1f", v);
	else if (a >= 1 || a == 0)
		snprintf(buf, len, "%.2f", v);
	else if (a >= 0.1)
		snprintf(buf, len, "%.3f", v); /* 0.9996 is "1.000", never a bare "1" */
	else
		snprintf(buf, len, "%.3g", v);
}

static const char *verdict_word(enum kr_verdict v)
{
	static const char *const names[] = { "PASS", "FAIL", "SKIP", "ERROR" };
	return names[v];
}

/* a value on one line: control characters (a newline in a parameter) become spaces */
static size_t put_one_line_n(FILE *f, const char *s, size_t max)
{
	size_t n = 0;

	for (; s && *s && n < max; s++, n++)
		fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
	return n;
}

static size_t put_one_line(FILE *f, const char *s)
{
	return put_one_line_n(f, s, SIZE_MAX);
}

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
		put_one_line_n(f, line, cut);
		fputc('\n', f);
		line += cut;
		line += strspn(line, " ");
		if (!*line)
			return;
	}
}

/* print lines of "key=value" pairs wrapped at 72 columns */
static void report_print_pairs(FILE *f, const char *prefix, const char *title, const struct kr_kvlist *l)
{
	size_t col = 0;

	for (size_t i = 0; i < l->n; i++) {
		size_t w = strlen(l->v[i].key) + 1 + strlen(l->v[i].str ? l->v[i].str : "");
		if (col == 0 || col + 1 + w > KR_TEXT_WIDTH) {
			if (col)
				fputc('\n', f);
			col = (size_t)fprintf(f, "%s%-7s", prefix, col ? "" : title);
		}
		col += (size_t)fprintf(f, " %s=", l->v[i].key);
		col += put_one_line(f, l->v[i].str);
	}
	if (col)
		fputc('\n', f);
}

/* "key: value", a long value (IRQ affinities, the command line) wrapped and indented */
static void report_print_env(FILE *f, const char *prefix)
{
	for (size_t i = 0; i < kr_rep.env.n; i++) {
		char *line = NULL;
		if (asprintf(&line, "%s: %s", kr_rep.env.v[i].key, kr_rep.env.v[i].str) < 0)
			abort();
		for (char *c = line; *c; c++)
			if ((unsigned char)*c < 0x20)
				*c = ' ';
		kr_print_wrapped(f, prefix, line, 4);
		free(line);
	}
}

void kr_env_print(FILE *f, bool json)
{
#ifndef KR_EXPORT_MINIMAL
	if (json) {
		json_write_object(f, &kr_rep.env);
		fputc('\n', f);
	} else {
		report_print_env(f, "");
	}
#else
	(void)json;
	report_print_env(f, "");
#endif
}

static int report_finish(enum kr_verdict v, int code, double value, const char *reason_in, const char *extra)
{
	/* a reason is one line in every format (it ends up in the verdict and TAP test lines) */
	char reason_buf[512], *reason = NULL;
	if (reason_in) {
		snprintf(reason_buf, sizeof(reason_buf), "%s", reason_in);
		for (char *c = reason_buf; *c; c++)
			if ((unsigned char)*c < 0x20)
				*c = ' ';
		reason = reason_buf;
	}
	const struct kr_prog *p = kr_program();
	const struct kr_opts *o = kr_options();
	enum kr_format fmt = o ? o->format : KR_FMT_TEXT;
	bool quiet = o && o->quiet;
	bool ksft = o && o->kselftest;
	const char *name = p ? p->name : "krepro";
	const char *unit = p && p->unit ? p->unit : "";
	double threshold = o && o->threshold_set ? o->threshold : (p ? p->threshold : NAN);
	char line[1024], vbuf[32], tbuf[32];
	FILE *f = stdout;

	/* kselftest counts every exit but 0 and 4 as a failure */
	if (ksft && (code == KR_EXIT_SKIP || code == KR_EXIT_SKIP_MACHINE))
		code = KR_EXIT_KSFT_SKIP;
	format_value(vbuf, sizeof(vbuf), value);
	format_value(tbuf, sizeof(tbuf), threshold);
	if ((v == KR_PASS || v == KR_FAIL) || (v == KR_SKIP && isfinite(value)))
		snprintf(line, sizeof(line), "%s: %s %s%s%s=%s%s (limit %s%s)%s%s", name,
			 verdict_word(v), reason ? reason : "", reason ? " " : "",
			 p && p->metric ? p->metric : "metric", vbuf, unit, tbuf, unit,
			 extra && *extra ? " " : "", extra ? extra : "");
	else
		snprintf(line, sizeof(line), "%s: %s %s", name, verdict_word(v),
			 reason ? reason : "");
	/* The text report's verdict line fits in an email line: verdict, metric and limit
	 * (or the start of the reason); what does not fit goes into the body above it. */
	char shortline[1024], detail[1100] = "";
	snprintf(shortline, sizeof(shortline), "%s", line);
	if (text_width(line, sizeof(line)) > KR_TEXT_WIDTH) {
		if ((v == KR_PASS || v == KR_FAIL) || (v == KR_SKIP && isfinite(value))) {
			snprintf(shortline, sizeof(shortline), "%s: %s %s%s=%s%s (limit %s%s)", name,
				 verdict_word(v), v == KR_SKIP ? "inconclusive " : "",
				 p && p->metric ? p->metric : "metric", vbuf, unit, tbuf, unit);
			snprintf(detail, sizeof(detail), "verdict: %s%s%s", reason ? reason : "",
				 reason && extra && *extra ? " " : "", extra ? extra : "");
		} else {
			size_t room = KR_TEXT_WIDTH - 3, cut = 0;
			for (size_t i = 0; line[i] && text_width(line, i + 1) <= room; i++)
				if (line[i] == ' ')
					cut = i;
			snprintf(shortline, sizeof(shortline), "%.*s ...", (int)cut, line);
			snprintf(detail, sizeof(detail), "%s: %s", verdict_word(v), reason ? reason : "");
		}
	}

#ifndef KR_EXPORT_MINIMAL
	if (fmt == KR_FMT_JSON) {
		fputs("{\"program\":", f);
		kr_json_string(f, name);
		fputs(",\"version\":", f);
		kr_json_string(f, KR_VERSION);
		fputs(",\"verdict\":", f);
		kr_json_string(f, verdict_word(v));
		fprintf(f, ",\"exit_code\":%d,\"metric\":{\"name\":", code);
		kr_json_string(f, p ? p->metric : NULL);
		fputs(",\"value\":", f);
		kr_json_number(f, value);
		fputs(",\"unit\":", f);
		kr_json_string(f, unit);
		fputs("},\"threshold\":", f);
		kr_json_number(f, threshold);
		fputs(",\"rule\":", f);
		kr_json_string(f, p ? p->rule : NULL);
		fputs(",\"reason\":", f);
		kr_json_string(f, (v == KR_SKIP || v == KR_ERROR) ? reason : NULL);
		fputs(",\"verdict_line\":", f);
		kr_json_string(f, line);
		fputs(",\"parameters\":", f);
		json_write_object(f, &kr_rep.params);
		fputs(",\"environment\":", f);
		json_write_object(f, &kr_rep.env);
		fputs(",\"measurements\":", f);
		json_write_object(f, &kr_rep.meas);
		fputs(",\"known_causes\":[", f);
		for (size_t i = 0; v == KR_FAIL && i < kr_rep.ncauses; i++) {
			if (i)
				fputc(',', f);
			kr_json_string(f, kr_rep.causes[i]);
		}
		fputs("],\"text\":[", f);
		for (size_t i = 0; i < kr_rep.nlines; i++) {
			if (i)
				fputc(',', f);
			kr_json_string(f, kr_rep.lines[i]);
		}
		fputs("]}\n", f);
	} else
#endif
	{
		const char *pre = fmt == KR_FMT_TAP ? "# " : "";
		/* as kselftest.h: no version line when nested (KSFT_TAP_LEVEL set) */
		if (fmt == KR_FMT_TAP && !(ksft && getenv("KSFT_TAP_LEVEL")))
			fputs("TAP version 13\n", f);
		if (fmt == KR_FMT_TAP)
			fputs("1..1\n", f);
		if (!quiet) {
			char *head = NULL;
			if (asprintf(&head, "%s %s: %s", name, KR_VERSION, p ? p->summary : "") < 0)
				abort();
			kr_print_wrapped(f, pre, head, 2);
			free(head);
			report_print_env(f, pre);
			report_print_pairs(f, pre, "params:", &kr_rep.params);
			for (size_t i = 0; i < kr_rep.nlines; i++) {
				if (!*kr_rep.lines[i])
					fprintf(f, "%s\n", fmt == KR_FMT_TAP ? "#" : "");
				else
					kr_print_wrapped(f, pre, kr_rep.lines[i], -1);
			}
			for (size_t i = 0; v == KR_FAIL && i < kr_rep.ncauses; i++) {
				char *cause = NULL;
				if (asprintf(&cause, "known cause: %s", kr_rep.causes[i]) < 0)
					abort();
				kr_print_wrapped(f, pre, cause, 2);
				free(cause);
			}
			if (*detail)
				kr_print_wrapped(f, pre, detail, 2);
		}
		if (quiet) /* one line for a bisect log: all of it */
			snprintf(shortline, sizeof(shortline), "%s", line);
		if (fmt == KR_FMT_TAP) {
			fprintf(f, "# %s\n", shortline);
			if (v == KR_PASS)
				fprintf(f, "ok 1 %s\n", name);
			else if (v == KR_SKIP)
				fprintf(f, "ok 1 %s # SKIP %s\n", name, reason ? reason : "");
			else if (v == KR_FAIL)
				fprintf(f, "not ok 1 %s\n", name);
			else
				fprintf(f, "not ok 1 %s # error: %s\n", name, reason ? reason : "");
			/* kselftest.h's ksft_print_cnts() line, which kselftest parsers read */
			if (ksft)
				fprintf(f, "# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:%d\n",
					v == KR_PASS, v == KR_FAIL, v == KR_SKIP, v == KR_ERROR);
		} else {
			fprintf(f, "%s\n", shortline);
		}
	}
	fflush(f);
	kr_rep.done = true;
	kr_csv_close();
	return code;
}

static int report_finishv(enum kr_verdict v, int code, double value, const char *reason_fmt,
		   va_list ap, const char *extra)
{
	char *reason = reason_fmt ? kr_vfmt(reason_fmt, ap) : NULL;
	int r = report_finish(v, code, value, reason, extra);
	free(reason);
	return r;
}

int kr_verdict(enum kr_verdict v, double value, const char *extra_fmt, ...)
{
	char *extra = NULL;
	va_list ap;

	if (extra_fmt) {
		va_start(ap, extra_fmt);
		extra = kr_vfmt(extra_fmt, ap);
		va_end(ap);
	}
	int code = v == KR_PASS ? KR_EXIT_PASS : v == KR_FAIL ? KR_EXIT_FAIL : v == KR_SKIP ? KR_EXIT_SKIP : KR_EXIT_ERROR;
	int r = report_finish(v, code, value, v == KR_SKIP ? "inconclusive" : NULL, extra);
	free(extra);
	return r;
}

int kr_skip(int code, const char *reason_fmt, ...)
{
	va_list ap;

	if (code != KR_EXIT_SKIP && code != KR_EXIT_SKIP_MACHINE)
		code = KR_EXIT_SKIP;
	va_start(ap, reason_fmt);
	int r = report_finishv(KR_SKIP, code, NAN, reason_fmt, ap, NULL);
	va_end(ap);
	return r;
}

int kr_error(const char *reason_fmt, ...)
{
	va_list ap;

	va_start(ap, reason_fmt);
	int r = report_finishv(KR_ERROR, KR_EXIT_ERROR, NAN, reason_fmt, ap, NULL);
	va_end(ap);
	return r;
}

int kr_inconclusive(double value, const char *reason_fmt, ...)
{
	va_list ap;
	char *why;

	va_start(ap, reason_fmt);
	why = kr_vfmt(reason_fmt, ap);
	va_end(ap);
	char *reason = NULL;
	/* without a value there is no "metric=value" to introduce */
	if (asprintf(&reason, isfinite(value) ? "inconclusive (%s):" : "inconclusive (%s)", why) < 0)
		abort();
	int r = report_finish(KR_SKIP, KR_EXIT_SKIP, value, reason, NULL);
	free(reason);
	free(why);
	return r;
}

enum kr_verdict kr_vote(const enum kr_verdict *v, int n, int *npass, int *nfail)
{
	int p = 0, f = 0;

	for (int i = 0; i < n; i++) {
		p += v[i] == KR_PASS;
		f += v[i] == KR_FAIL;
	}
	if (npass)
		*npass = p;
	if (nfail)
		*nfail = f;
	if (p && !f)
		return KR_PASS;
	if (f && !p)
		return KR_FAIL;
	return KR_SKIP;
}

/* ---- CSV ---- */
#ifndef KR_EXPORT_MINIMAL
static FILE *kr_csv_file;

int kr_csv_open(const char *header)
{
	const struct kr_opts *o = kr_options();

	if (!o || !o->csv)
		return 0;
	if (kr_csv_file)
		fclose(kr_csv_file);
	kr_csv_file = fopen(o->csv, "w");
	if (!kr_csv_file) {
		kr_warn("--csv %s: %s", o->csv, strerror(errno));
		return -1;
	}
	fprintf(kr_csv_file, "%s\n", header);
	return 0;
}

void kr_csv_row(const char *fmt, ...)
{
	va_list ap;

	if (!kr_csv_file)
		return;
	va_start(ap, fmt);
	vfprintf(kr_csv_file, fmt, ap);
	va_end(ap);
	fputc('\n', kr_csv_file);
}

void kr_csv_close(void)
{
	if (kr_csv_file)
		fclose(kr_csv_file);
	kr_csv_file = NULL;
}
#else
int kr_csv_open(const char *header)
{
	(void)header;
	return 0;
}

void kr_csv_row(const char *fmt, ...)
{
	(void)fmt;
}

void kr_csv_close(void)
{
}
#endif
