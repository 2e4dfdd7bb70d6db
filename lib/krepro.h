/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Description: the krepro program contract (../shared/CONTRACT.md), implemented once.
 *
 * A program describes itself in a struct kr_prog and calls kr_main(). kr_main parses the
 * options every program shares (and the program's own, through a callback), takes the
 * single-run lock, restores journals left by killed runs, and then runs the measurement in a
 * child process. The parent restores every journaled change when the child ends, however it
 * ends, and exits with the child's code. Inside the child, the program reports with kr_say(),
 * kr_param(), kr_measure() and ends with kr_verdict(), kr_skip() or kr_error().
 *
 * Nothing program-specific lives here.
 */
#ifndef KREPRO_H
#define KREPRO_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define KR_VERSION "0.1.0"
#define KR_TEXT_WIDTH 72 /* the text report and --help fit an email line */

/* ---- exit codes (CONTRACT.md section 2) ---- */
enum kr_exit {
	KR_EXIT_PASS = 0,
	KR_EXIT_FAIL = 1,
	KR_EXIT_SKIP = 125,	   /* the kernel cannot run it, or inconclusive: bisect skip */
	KR_EXIT_ERROR = 128,	   /* bad usage or tool failure: bisect abort */
	KR_EXIT_SKIP_MACHINE = 129, /* this machine/user cannot run it: bisect abort */
};
#ifndef KR_MAIL
#define KR_EXIT_KSFT_SKIP 4 /* kselftest mode only: 125 and 129 become kselftest's SKIP */
#endif

enum kr_verdict { KR_PASS, KR_FAIL, KR_SKIP, KR_ERROR };

#ifndef KR_MAIL /* the mail form (lib/mail.c) prints text only */
enum kr_format { KR_FMT_TEXT, KR_FMT_JSON, KR_FMT_TAP };
#endif

/* ---- CPU sets: ascending CPU numbers, any count ----
 * The kernel's nr_cpu_ids can exceed glibc's cpu_set_t (1024 CPUs): a set is a list, and
 * affinity calls are sized to the kernel's cpumask. */
struct kr_cpus {
	int n;		/* how many */
	int *cpu;	/* ascending CPU numbers, each once; malloc'd (kr_cpus_free) */
};
#define KR_MAX_CPUS 8192 /* the kernel's largest NR_CPUS (x86_64 MAXSMP) */

/* ---- program description ---- */
enum {
	KR_NEEDS_ROOT = 1 << 0,	 /* SKIP 129 when not root */
	KR_OPT_CPU = 1 << 1,	 /* program takes --cpu N */
	KR_OPT_CPUS = 1 << 2,	 /* program takes --cpus LIST */
	KR_OPT_SEED = 1 << 3,	 /* program takes --seed N */
	KR_OPT_TRIGGER = 1 << 4, /* program takes --trigger */
	KR_OPT_MITIGATE = 1 << 5,/* program takes --mitigate */
	KR_OPT_REPEAT = 1 << 6,	 /* program takes --repeat N */
	/* SKIP 129 where kernel threads are not visible (a PID namespace of its own, as in a
	 * container: ksoftirqd/N, kworkers, napi threads are not in its /proc), before
	 * anything changes: always, or only with --mitigate (it changes kernel threads) */
	KR_NEEDS_KTHREADS = 1 << 7,
	KR_MITIGATE_NEEDS_KTHREADS = 1 << 8,
};

/* The shared options (CONTRACT.md section 6). */
struct kr_opts {
	double duration_s, threshold;
	int repeat;
	int cpu;		  /* -1 when not given */
	struct kr_cpus cpus;	  /* n == 0 when not given */
	unsigned long long seed;  /* 0 when not given */
	bool trigger, mitigate, quiet;
#ifndef KR_MAIL
	bool duration_set, threshold_set;
	const char *csv;
	bool restore_only;
	double wait_s;
	enum kr_format format;
	bool format_set;
	/* --kselftest, or run by the kernel's kselftest runner (kselftest/runner.sh exports
	 * kselftest_timeout to every test): TAP by default, SKIP exits 4 */
	bool kselftest;
#endif
};

/* The phenomenon: what both harnesses need (lib's full one, and the mail form's). */
struct kr_prog {
	const char *name;		  /* "fibtest" */
	unsigned flags;			  /* KR_NEEDS_ROOT | KR_OPT_... */
	const char *metric, *unit;	  /* of the verdict: "efficiency", "" */
	double duration_s, duration_max_s; /* the default, and the hard cap without --duration */
#ifndef KR_MAIL /* the mail form has them as constants, and the rule in its first comment */
	double threshold, threshold_min, threshold_max; /* the default, and its range */
	/* FAIL lies below the threshold (else above): the verdict line's metric is on the
	 * PASS side of it in a PASS, on the FAIL side in a FAIL */
	bool fail_below;
	const char *rule;		  /* "FAIL when efficiency <= threshold ..." */
	int repeat;			  /* default --repeat (with KR_OPT_REPEAT) */
#endif
	/* The measurement. Returns an exit code from kr_verdict()/kr_skip()/kr_error(). */
	int (*run)(const struct kr_opts *o);
};

#ifndef KR_MAIL
/* ---- the full program's command line (lib/main.c; not in the mail form) ---- */

/* A program option. A typed one sets its variable (a field of the program's parameters),
 * range-checked, and --mail-params prints it back as C for the mail form's constants;
 * KR_ARGT_CUSTOM ones go to cli->parse. Declare them with the KR_ARG_ macros, which check
 * the variable's type at compile time. */
enum kr_arg_type {
	KR_ARGT_CUSTOM, KR_ARGT_FLAG, KR_ARGT_LONG, KR_ARGT_DOUBLE, KR_ARGT_TIME, KR_ARGT_SIZE,
	KR_ARGT_CHOICE
};
struct kr_option {
	const char *name;
	const char *argname;	/* NULL: a flag; KR_ARGT_CHOICE: the words, "a|b|c" */
	const char *help;
	enum kr_arg_type type;
	void *var;
	const char *field;	/* the variable as C ("cfg.quota_ns"), for the mail form */
	double min, max;	/* LONG, DOUBLE; TIME in ns; SIZE in bytes */
	const char *unit;	/* TIME: the unit of a bare number ("s", "ms", "us", "ns") */
};
#define KR_ARG_(t, ty, name, arg, var, min, max, unit, help) \
	{ name, arg, help, KR_ARGT_##t, _Generic(&(var), ty *: &(var)), #var, min, max, unit }
/* bool var = true */
#define KR_ARG_FLAG(name, var, help) KR_ARG_(FLAG, bool, name, NULL, var, 0, 1, NULL, help)
/* long var in [min, max] */
#define KR_ARG_LONG(name, arg, var, min, max, help) \
	KR_ARG_(LONG, long, name, arg, var, min, max, NULL, help)
/* double var in [min, max] */
#define KR_ARG_DOUBLE(name, arg, var, min, max, help) \
	KR_ARG_(DOUBLE, double, name, arg, var, min, max, NULL, help)
/* int64_t var: a duration in ns in [min, max] ("500ms"; a bare number is in unit) */
#define KR_ARG_TIME(name, var, unit, min, max, help) \
	KR_ARG_(TIME, int64_t, name, "TIME", var, min, max, unit, help)
/* uint64_t var: a size in bytes in [min, max] ("4k", "2M", "1G") */
#define KR_ARG_SIZE(name, var, min, max, help) \
	KR_ARG_(SIZE, uint64_t, name, "SIZE", var, min, max, NULL, help)
/* int var: the index of the word in choices ("fibtest|workers") */
#define KR_ARG_CHOICE(name, choices, var, help) \
	KR_ARG_(CHOICE, int, name, choices, var, 0, 0, NULL, help)
/* the option's value goes to cli->parse(index, arg); argname NULL: a flag */
#define KR_ARG_CUSTOM(name, arg, help) { name, arg, help, KR_ARGT_CUSTOM, NULL, NULL, 0, 0, NULL }

/* What only the full program has: --help's text and the program's own options. */
struct kr_cli {
	const char *summary;	 /* one line: what phenomenon */
	const char *description; /* --help body: what is measured, the verdict rule, kernels */
	const char *example;	 /* one example command line */
	const struct kr_option *options; /* terminated by { NULL } */
	/* KR_ARGT_CUSTOM options: return 0, or -1 after kr_usage_error() */
	int (*parse)(int index, const char *arg);
	/* Optional: checked after all options, before anything changes. Return 0 or -1. */
	int (*validate)(const struct kr_opts *o);
	/* Optional: on FAIL, before the report is printed: kr_cause() for each known cause
	 * this run does not rule out, the ones it saw first (the mail form names them in
	 * its header comment instead) */
	void (*causes)(const struct kr_opts *o);
	/* Whom a FAIL concerns (scripts/report's mail, JSON "subsystem"): the subject's
	 * prefix as the subsystem's commits spell it ("sched/fair"), the kernel file of the
	 * mechanism (get_maintainer.pl -f, given a tree) and the list MAINTAINERS names */
	const char *subsystem, *kernel_file, *mail_list;
};

/* Entry point of the full program: returns the process exit code. */
int kr_main(const struct kr_prog *prog, const struct kr_cli *cli, int argc, char **argv);
const struct kr_cli *kr_cli(void);

/* ---- strict value parsing: print "prog: --opt: ..." and return -1 on bad input ---- */
int kr_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int kr_parse_long(const char *opt, const char *s, long min, long max, long *out);
int kr_parse_double(const char *opt, const char *s, double min, double max, double *out);
/* "500ms", "2s", "10us", "1500ns"; a bare number takes default_unit ("s", "ms", "us", "ns") */
int kr_parse_duration_ns(const char *opt, const char *s, const char *default_unit,
			 int64_t min_ns, int64_t max_ns, int64_t *out);
/* "4096", "4k", "2M", "1G", "1T" (binary multiples) */
int kr_parse_size(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* "0-3,5,7-8" of the usable CPUs (prints the usage error) */
int kr_parse_cpulist(const char *opt, const char *s, struct kr_cpus *out);
/* value must be one of the '|' separated words ("fibtest|workers"); returns its index */
int kr_parse_choice(const char *opt, const char *s, const char *choices);
/* --cpu N check: online and inside the affinity, else one usage line and -1 */
int kr_cpu_check(const char *opt, int cpu);
#endif /* !KR_MAIL */

/* Entry point of the mail form (lib/mail.c): opts are the reporter's parameters; argv may
 * say --trigger or --mitigate. */
int kr_mail_main(const struct kr_prog *prog, struct kr_opts *opts, int argc, char **argv);
/* The options of this run, after parsing (valid inside run() and parse callbacks). */
const struct kr_opts *kr_options(void);
const struct kr_prog *kr_program(void);
/* Seconds after which the run is killed (ERROR): a run must size its work below. */
double kr_hard_cap_s(void);

/* ---- report (buffered; printed by kr_verdict/kr_skip/kr_error) ----
 * kr_say() adds lines of human text (a blank line: kr_say("%s", "")); kr_measure() the same
 * numbers raw for JSON; keep text within 72 columns so it pastes into an email. */
void kr_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void kr_param(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* several parameters at once: "key=value key=value ..." (values without spaces) */
void kr_params(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* printf into a malloc'd string (aborts when out of memory) */
char *kr_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *kr_vstrf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
/* in a function (..., const char *fmt, ...): its arguments as a kr_strf() string */
#define KR_VSTRF(fmt) __extension__({ va_list ap_; va_start(ap_, fmt); \
	char *s_ = kr_vstrf(fmt, ap_); va_end(ap_); s_; })
/* a metric's value as the verdict line prints it: "0.995", "20.0", "100", "n/a" */
const char *kr_format_value(double v, char *buf, size_t len);
/* a known cause printed on FAIL, like LTP's kernel-fix tags */
void kr_cause(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Ends the report: prints it in the chosen format and returns the exit code.
 * extra: " key=value ..." appended to the verdict line (may be NULL). */
int kr_verdict(enum kr_verdict v, double value, const char *extra_fmt, ...)
	__attribute__((format(printf, 3, 4)));
int kr_skip(int code, const char *reason_fmt, ...) __attribute__((format(printf, 2, 3)));
int kr_error(const char *reason_fmt, ...) __attribute__((format(printf, 1, 2)));
/* An inconclusive measurement: SKIP 125 with the metric shown. */
int kr_inconclusive(double value, const char *reason_fmt, ...) __attribute__((format(printf, 2, 3)));
/* diagnostics to stderr, always */
void kr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Verdict of several repeats: PASS or FAIL when all conclusive repeats agree;
 * KR_SKIP (inconclusive) when they straddle the threshold or none is conclusive. */
enum kr_verdict kr_vote(const enum kr_verdict *v, int n, int *npass, int *nfail);


/* ---- what only the full program reports: JSON's raw figures, CSV samples (--csv), the
 * environment of a bug report, progress; the mail form has none of them (and these calls
 * do nothing there) ---- */
#ifndef KR_MAIL
void kr_env(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kr_measure(const char *key, double value);
void kr_measure_str(const char *key, const char *value);
/* progress to stderr, only when stderr is a terminal */
void kr_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Opens --csv (if given) and writes the header line; no-op without --csv. */
int kr_csv_open(const char *header);
void kr_csv_row(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void kr_csv_close(void);
#else
static inline void kr_env(const char *k, const char *f, ...) { (void)k, (void)f; }
static inline void kr_measure(const char *k, double v) { (void)k, (void)v; }
static inline void kr_measure_str(const char *k, const char *v) { (void)k, (void)v; }
static inline void kr_progress(const char *f, ...) { (void)f; }
static inline int kr_csv_open(const char *h) { return (void)h, 0; }
static inline void kr_csv_row(const char *f, ...) { (void)f; }
static inline void kr_csv_close(void) {}
#endif


/* ---- time ---- */
int64_t kr_now_ns(void);	  /* CLOCK_MONOTONIC */
void kr_sleep_ns(int64_t ns);
void kr_sleep_until_ns(int64_t t); /* absolute CLOCK_MONOTONIC */

/* ---- statistics ---- */
struct kr_stats {
	size_t n;
	double min, max, mean, stdev, median;
};
/* Sorts v in place. stdev is the sample standard deviation (n-1). */
void kr_stats(double *v, size_t n, struct kr_stats *s);
/* Nearest-rank percentile of a sorted array: the value at rank ceil(p/100 * n) (1-based);
 * p <= 0 gives the minimum. NAN when n == 0. */
double kr_percentile(const double *sorted, size_t n, double p);
/* Linear histogram of v into nbins bins over [lo, hi); values outside go to the edge bins. */
void kr_histogram(const double *v, size_t n, double lo, double hi, size_t nbins, size_t *bins);

/* ---- files, /proc and /sys ---- */
/* read a whole file into buf, up to EOF (NUL-terminated, trailing newlines stripped);
 * returns the length (0 for an empty file), or -1 with errno: EFBIG when it does not fit
 * in len - 1 bytes (buf then holds the first len - 1); files of any size: kr_read_text */
int kr_read_file(const char *path, char *buf, size_t len);
int kr_read_u64(const char *path, uint64_t *out);
int kr_write_file(const char *path, const char *value); /* one write(); -1 with errno */
int kr_unlink_file(const char *path); /* its extents merged first: one discard */
/* "key value" lines (cpu.stat, /proc/meminfo style "Key:   123 kB"): value of key, -1 if absent */
int kr_kv_get(const char *text, const char *key, uint64_t *out);

struct kr_cpu_times { /* /proc/stat, in USER_HZ ticks */
	uint64_t user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice;
};
/* Parses /proc/stat text: all = the "cpu" line, per[cpu] = "cpuN" lines; returns the number
 * of per-CPU lines parsed (the highest N + 1), or -1 when the "cpu" line is missing. */
int kr_parse_proc_stat(const char *text, struct kr_cpu_times *all, struct kr_cpu_times *per,
		       int maxcpus);
int kr_read_proc_stat(struct kr_cpu_times *all, struct kr_cpu_times *per, int maxcpus);
uint64_t kr_cpu_times_total(const struct kr_cpu_times *t);
long kr_user_hz(void);

/* /proc/PID/task/TID/schedstat: run_ns (on CPU), wait_ns (runnable, waiting), timeslices */
struct kr_schedstat {
	uint64_t run_ns, wait_ns, slices;
};
int kr_parse_schedstat(const char *text, struct kr_schedstat *s);
int kr_read_schedstat(pid_t pid, pid_t tid, struct kr_schedstat *s); /* tid 0: the process */

/* /proc/PID/stat fields we need: state, ppid, flags, policy, rt_priority, processor,
 * starttime */
struct kr_taskstat {
	char comm[64], state;
	int ppid, policy, rt_priority, processor;
	unsigned long flags; /* PF_*: PF_KTHREAD 0x00200000 */
	unsigned long long starttime;
};
int kr_parse_taskstat(const char *text, struct kr_taskstat *t);
int kr_read_taskstat(pid_t tid, struct kr_taskstat *t);

/* Tasks (threads) whose comm matches a glob (fnmatch), e.g. "ksoftirqd/1", "kworker/1:*".
 * Returns the number found (at most max) */
int kr_find_tasks(const char *glob, pid_t *tids, int max);
/* The same among kernel threads only (children of kthreadd from /proc/2/task/2/children,
 * else processes with PF_KTHREAD): cheap enough to repeat on hosts with 10k threads. */
int kr_find_kthreads(const char *glob, pid_t *tids, int max);
/* Kernel threads are visible: PID 2 is kthreadd, a child of the idle task (ppid 0). Not
 * in a PID namespace of its own: its PID 2 is one of its processes, or none. */
bool kr_kthreads_visible(void);
/* KR_NEEDS_KTHREADS, KR_MITIGATE_NEEDS_KTHREADS: NULL when prog with opts may go on, else
 * the reason of its SKIP 129, with what to do said (both harnesses, before any change) */
const char *kr_kthreads_missing(const struct kr_prog *prog, const struct kr_opts *opts);

/* a whole file of any size (/proc files report size 0): malloc'd, NUL-terminated; NULL
 * with errno */
char *kr_read_text(const char *path);

/* ---- interrupts: /sys/kernel/irq/N/ first, /proc/interrupts where it is missing ---- */
/* IRQ numbers, ascending; returns how many (at most max), -1 when neither is readable */
int kr_irq_list(int *irqs, int max);
/* the action name(s) of an IRQ ("virtio1-req.0", "nvme0q1"), cut to len; -1 when it has
 * none */
int kr_irq_name(int irq, char *buf, size_t len);
/* interrupt counts of an IRQ by CPU number (per_cpu[cpu], max entries, zeroed first) */
int kr_irq_counts(int irq, uint64_t *per_cpu, int max);
/* parsers (tests): per_cpu_count "0,15,3" -> per_cpu[]; returns the number of CPUs */
int kr_parse_per_cpu_count(const char *text, uint64_t *per_cpu, int max);
/* /proc/interrupts header "  CPU0 CPU2 ..." -> col_cpu[column] = CPU; returns columns */
int kr_interrupts_header(const char *line, int *col_cpu, int max);
/* one line: irq (-1 for NMI, LOC...), per_cpu[col_cpu[i]] (may be NULL), the last word
 * (the action) into name (may be NULL); returns the count columns read, -1 if no "N:" */
int kr_interrupts_line(const char *line, const int *col_cpu, int ncol, int *irq,
		       uint64_t *per_cpu, int max, char *name, size_t nlen);

/* cmdline (/proc/cmdline's text) has word as a whole parameter ("threadirqs",
 * "tsc=noirqtime"), not inside another ("foo.threadirqs", "threadirqs=0"), nor after "--"
 * (init's arguments) */
bool kr_cmdline_has(const char *cmdline, const char *word);
/* The running kernel as it describes itself (tests describe recorded ones): release is
 * uname -r ("6.12.117+deb12-rt-amd64"), version uname -v ("#1 SMP PREEMPT_RT Debian
 * 6.12.117-1~deb12u1 ..."), cmdline /proc/cmdline, realtime /sys/kernel/realtime (the RT
 * patch queue's only; NULL: absent), config its config text (kr_kconfig_text; NULL: none
 * readable) */
struct kr_kernel {
	const char *release, *version, *cmdline, *realtime, *config;
};
const struct kr_kernel *kr_kernel_self(void);
/* PREEMPT_RT: where the kernel says so ("uname -v", "/sys/kernel/realtime",
 * "CONFIG_PREEMPT_RT=y"), else NULL. Mainline RT (6.12+) has no /sys/kernel/realtime. */
const char *kr_preempt_rt(const struct kr_kernel *k);
/* When every softirq of this kernel runs in a thread (ksoftirqd, not irq exit), the cause in
 * words ("PREEMPT_RT (uname -v): ...", "threadirqs: ..."), else NULL: PREEMPT_RT, or
 * threadirqs on the command line (an early parameter: any value; IRQ_FORCED_THREADING) */
const char *kr_softirq_threaded(void);
const char *kr_softirq_threaded_from(const struct kr_kernel *k);
/* When the RPS backlog of this kernel runs in the backlog_napi/N threads, not in NET_RX,
 * the cause in words ("PREEMPT_RT (...): ...", "thread_backlog_napi: ..."), else NULL:
 * v6.10+ with PREEMPT_RT or thread_backlog_napi on the command line (net/core/dev.c,
 * use_backlog_threads()). Where kernel threads are visible, backlog_napi/N must exist. */
const char *kr_backlog_threaded(void);
const char *kr_backlog_threaded_from(const struct kr_kernel *k);

/* Kernel config: value of "CONFIG_X" ("y", "m", "250", ...) into buf; returns 1 if set, 0 if
 * "is not set" or absent, -1 if no config is readable (/proc/config.gz, /boot/config-R). */
int kr_kconfig(const char *option, char *buf, size_t len);
/* parse the same from config text (for tests) */
int kr_kconfig_parse(const char *text, const char *option, char *buf, size_t len);
/* the whole config text of the running kernel, read once; NULL if none is readable */
const char *kr_kconfig_text(void);

/* ---- memory the kernel clears (lib/mem.c) ---- */
#define KR_HPAGE_POOL "/sys/kernel/mm/hugepages/hugepages-2048kB/" /* the 2 MiB pool */
/* Fills n bytes (a multiple of 32) at p with a non-zero byte, so that the next clear
 * zeroes data: x86-64 rep stosb, the string store of the kernel's clear_page_erms, or
 * with nt movnti (non-temporal: no read for ownership); memset elsewhere. */
void kr_fill(void *p, size_t n, bool nt);
/* "Key: N kB" of a /proc file (/proc/meminfo, /proc/self/smaps_rollup): N, -1 if absent */
long long kr_proc_kb(const char *path, const char *key);
/* Makes npages of the 2 MiB hugetlb pool free, raising vm.nr_hugepages; each NUMA node's
 * count is journaled (without NUMA the global one) and restored node by node after the
 * run, on a signal, after a crash; 0, or -1 with errno (ENOMEM: the pool could not grow
 * that far, memory fragmented). npages 0: gives the pool back (each node's count). */
int kr_hugetlb_reserve(uint64_t npages);
/* The same on one NUMA node (its own nr_hugepages), for memory bound to that node: the
 * global count spreads pages evenly, not as a bound region needs them. Journaled and
 * given back as kr_hugetlb_reserve's (kr_hugetlb_reserve(0) gives back every node). */
int kr_hugetlb_reserve_node(int node, uint64_t npages);
/* Seconds per GiB for one thread to fault in fresh anonymous memory (THP where huge,
 * else 4 KiB pages) and rep stosb over it: the faster of two warm passes over 32 MiB.
 * Under TCG 10-50x the host's. NAN when it cannot map. */
double kr_clear_s_per_gib(bool huge);
/* The largest multiple of unit, at most size, whose work at s_per_gib seconds per GiB
 * fits budget seconds: size when s_per_gib is unknown, 0 when not even unit fits. */
uint64_t kr_fit_size(uint64_t size, uint64_t unit, double s_per_gib, double budget);
/* The memory a run clears, fitted to its time budget before anything changes, from
 * clear_s (kr_clear_s_per_gib) and the passes over it the run needs at least: *size 0
 * takes dflt, shrunk to what fits budget seconds in multiples of unit (the report says
 * so); a size given stays unless it would near the hard cap. 0, or an exit code: SKIP
 * 125 (not even 2 units fit, or the size given would meet the cap), 129 (less memory
 * available than the size and 512 MiB). */
int kr_mem_budget(uint64_t *size, uint64_t dflt, uint64_t unit, double clear_s, double passes,
		  double budget);

/* ---- cpuidle (of one CPU: the one a phenomenon is measured on, not cpu0) ---- */
#define KR_MAX_IDLE_STATES 16
struct kr_idle_state {
	char name[32], disable[8]; /* disable: the raw file ("0", "1"), "?" if unreadable */
	long latency_us, residency_us; /* exit latency, target residency; -1 if unreadable */
	uint64_t usage;		/* entries so far */
};
/* The cpuidle states of cpu under sysdir (NULL: /sys/devices/system/cpu), at most max;
 * returns how many (0: no cpuidle states). */
int kr_cpuidle_states(const char *sysdir, int cpu, struct kr_idle_state *st, int max);
/* path of one state file ("usage", "disable", ...) of cpu's state k */
void kr_cpuidle_path(const char *sysdir, int cpu, int k, const char *file, char *buf,
		     size_t len);
/* cpuidle driver and governor, "none" when absent */
void kr_cpuidle_driver(const char *sysdir, char *drv, size_t dlen, char *gov, size_t glen);

/* ---- CPU sets (struct kr_cpus, above) ---- */
/* a kernel CPU list ("0-3,5\n" as sysfs and /proc/irq print it; "" is empty): returns the
 * count, or -1 (EINVAL) if malformed */
int kr_cpus_parse(const char *list, struct kr_cpus *out);
void kr_cpus_free(struct kr_cpus *s);
bool kr_cpus_has(const struct kr_cpus *s, int cpu);
int kr_cpus_add(struct kr_cpus *s, int cpu); /* -1 out of memory */
/* the CPUs in both a and b; returns the count */
int kr_cpus_and(const struct kr_cpus *a, const struct kr_cpus *b, struct kr_cpus *out);
/* as a list "0-3,5" (truncated to len) */
char *kr_cpus_list(const struct kr_cpus *s, char *buf, size_t len);
/* As a mask as sysfs reads and prints it (rps_cpus, smp_affinity): comma-separated 32-bit
 * hex words, most significant first, for nbits CPUs (<= 0: kr_nr_cpu_ids()), widened to
 * hold the highest CPU. NULL (ENOSPC) when len is too small; KR_CPUMASK_LEN suffices. */
#define KR_CPUMASK_LEN (KR_MAX_CPUS / 32 * 9 + 1)
char *kr_cpus_mask(const struct kr_cpus *s, int nbits, char *buf, size_t len);
/* a thread's CPU affinity (tid 0: the caller), however many CPUs the kernel has */
int kr_affinity_get(pid_t tid, struct kr_cpus *out);
int kr_affinity_set(pid_t tid, const struct kr_cpus *s);
int kr_pin(pid_t tid, int cpu); /* to one CPU; tid 0: the calling thread */
int kr_online_cpus(struct kr_cpus *out); /* sysfs; without it, the process affinity */
int kr_nr_cpus_online(void);
/* highest possible CPU + 1 (the kernel's nr_cpu_ids) */
int kr_nr_cpu_ids(void);

/* ---- scheduling ---- */
int kr_set_sched(pid_t tid, int policy, int prio); /* own threads: no journal */
const char *kr_policy_name(int policy);	 /* "SCHED_FIFO" */
const char *kr_policy_short(int policy); /* "FF", as ps -o cls */
/* start a thread pinned to cpu (-1: the usable CPUs) with policy/prio set before it runs */
int kr_thread_start(pthread_t *t, int cpu, int policy, int prio, void *(*fn)(void *), void *arg);
pid_t kr_gettid(void);

/* ---- which CPUs a run may use ----
 * Usable CPUs: the process affinity when the run started (cpusets, containers, taskset),
 * which the kernel gives of the active CPUs only (holes left out). Never "online count
 * - 1". */
void kr_cpus_init(void); /* the harness calls it first: records the start affinity */
int kr_usable_cpus(struct kr_cpus *out); /* returns the count */
/* The victim (the CPU a phenomenon is provoked on): want when >= 0, else the highest
 * usable CPU; other: the lowest usable CPU that is not the victim (-1: none). Returns -1
 * when want is not in usable or usable is empty. */
int kr_cpu_pick(const struct kr_cpus *usable, int want, int *victim, int *other);
/* the same, the default victim chosen outside avoid when possible (kr_cpu_pick avoids the
 * nohz_full and isolated CPUs: the kernel refuses RPS to isolated ones) */
int kr_cpu_pick_avoiding(const struct kr_cpus *usable, const struct kr_cpus *avoid, int want,
			 int *victim, int *other);
/* why a run has fewer CPUs than are online: "usable CPUs 0, online 0-1 (affinity: cpuset,
 * taskset, isolcpus); isolated 1; nohz_full 1", for SKIP reasons */
const char *kr_cpus_unusable(char *buf, size_t len);
/* "nohz_full", "isolated", "nohz_full,isolated" or "" (from /sys/devices/system/cpu/) */
const char *kr_cpu_isolation(int cpu, char *buf, size_t len);
const char *kr_cpu_isolation_from(int cpu, const char *nohz_full, const char *isolated,
				  char *buf, size_t len);

/* Watchdog for RT busy loops: a SCHED_FIFO 99 thread that demotes tid to SCHED_OTHER if it is
 * still running its RT loop deadline_ns (absolute, monotonic) + grace. */
struct kr_watchdog;
struct kr_watchdog *kr_watchdog_arm(pid_t tid, int64_t deadline_ns);
/* returns 1 if the watchdog had to fire */
int kr_watchdog_disarm(struct kr_watchdog *w);

/* ---- the save/restore journal (CONTRACT.md section 5) ---- */
/* Write value to a sysctl/sysfs file, journaling its current content first. */
int kr_journal_write(const char *path, const char *value);
/* Write value to path; on restore write undo instead (for files whose undo is not their old
 * content, e.g. cgroup.subtree_control "+cpu" / "-cpu"). value NULL: journal the undo
 * only, for a file that another write changes (a node's share of the hugetlb pool). */
int kr_journal_write_undo(const char *path, const char *value, const char *undo);
/* mkdir a directory (cgroup or temp dir), journaled as rmdir (kr_cgroup_remove). */
int kr_journal_mkdir(const char *path, mode_t mode);
/* Journal that path must be unlinked on restore (call before creating it). */
int kr_journal_unlink(const char *path);
/* Set another task's policy/prio, journaling the old one (matched by starttime on restore). */
int kr_journal_sched(pid_t tid, int policy, int prio);
#ifndef KR_MAIL
/* SIOCSHWTSTAMP on a NIC of the root namespace, journaling its current config: 0, -1
 * (errno) when it fails, -2 (errno of SIOCGHWTSTAMP) when the driver cannot report its
 * current config: then nothing is changed (restoring a guess would break ptp4l, chrony) */
int kr_journal_hwtstamp(const char *ifname, int tx_type, int rx_filter);
#else /* the mail form leaves out hardware timestamping (CONTRACT.md section 8) */
static inline int kr_journal_hwtstamp(const char *i, int t, int r)
{
	return (void)i, (void)t, (void)r, errno = EOPNOTSUPP, -1;
}
#endif
/* Restore everything journaled so far, in reverse, then close and remove the journal file
 * (kept when an entry could not be restored). Returns the number of such entries. */
int kr_journal_restore(void);
/* Restore journals of dead krepro processes; returns how many were found (-1 on error);
 * failed (may be NULL): how many of them could not be restored completely (kept). */
int kr_journal_restore_stale(int *failed);
/* Restore one journal file (exposed for tests); verbose: say each step on stderr */
int kr_journal_restore_file(const char *path, bool verbose);
/* Directory used for the journal and lock (default /run/krepro; KREPRO_RUNDIR overrides, for
 * tests only). */
const char *kr_rundir(void);

/* ---- cgroups ---- */
struct kr_cgroups {
	/* where each is mounted, "" if nowhere: cgroup2, the v1 hierarchy holding "cpu", the
	 * one holding "cpuacct" (may be the same) */
	char v2[256], v1_cpu[256], v1_cpuacct[256];
	/* the directory of the hierarchy each is mounted from: "/", or in a container
	 * "/docker/ID" (/proc/self/cgroup's paths are the hierarchy's, not the mount's) */
	char v2_root[256], v1_cpu_root[256];
	bool v2_cpu; /* cpu controller available on v2 */
};
/* from /proc/self/mountinfo (text given for tests; NULL reads the real one); of mounts at
 * one place, the last (it hides the others) */
int kr_cgroups_parse(const char *mountinfo, struct kr_cgroups *cg);
int kr_cgroups_find(struct kr_cgroups *cg);
/* mkdir the group, journaled; checks that it is a real cgroup (cgroup.procs exists) */
int kr_cgroup_create(const char *path);
/* enable a v2 controller in parent's subtree_control (journaled as "-ctrl" if it was off) */
int kr_cgroup_enable(const char *parent, const char *controller);
/* rmdir a directory we made; for a cgroup, SIGKILL what is left in it first (only we put
 * tasks there), and retry while the last exit settles (2 s). Async-signal-safe. */
int kr_cgroup_remove(const char *path);
/* move a thread into a group (v1: "tasks"; v2: "cgroup.threads", threaded groups only) */
int kr_cgroup_attach_tid(const char *path, pid_t tid);
int kr_cgroup_attach_pid(const char *path, pid_t pid);
/* A group with a CPU quota for a run, krepro-NAME-PID (journaled): under v2 when its root
 * has (or is given, journaled) the cpu controller, else in the v1 cpu hierarchy; the
 * largest weight, quota_us per period_us. 0, or the run's exit: SKIP 125 without a cpu
 * controller, SKIP 129 in a container's cgroup root that holds processes, ERROR. */
int kr_cpu_group(char *group, size_t len, const char *name, long long quota_us,
		 long long period_us);

/* ---- may this process run SCHED_FIFO threads? ----
 * kr_rt_check starts a SCHED_FIFO prio thread that exits at once. 0: it can. Else an
 * exit code and reason: 129 when refused (EPERM) because cpu.rt_runtime_us is 0 in the
 * caller's cgroup (CONFIG_RT_GROUP_SCHED; v1 groups start at 0; v2 groups have none) or
 * for want of CAP_SYS_NICE; 128 on other errors. Call it before changing anything. */
int kr_rt_check(int prio, char *reason, size_t len);
/* the cpu.rt_runtime_us file of the caller's group from /proc/self/cgroup text: returns 1
 * (v1 cpu hierarchy), 2 (v2: the file may not exist) or -1 (also when the group is outside
 * the mounted part of the hierarchy, or the path does not fit flen); group: its path */
int kr_rt_runtime_file(const char *proc_cgroup, const struct kr_cgroups *cg, char *file,
		       size_t flen, char *group, size_t glen);

/* ---- network lab: anonymous network namespaces and veth (no ip/ethtool binaries) ----
 * Namespaces are held by file descriptors only, never mounted, so they vanish with the
 * process, even after SIGKILL. */
int kr_netns_new(void);		       /* returns an fd of a new, empty network namespace */
int kr_netns_socket(int nsfd, int domain, int type, int proto); /* a socket in nsfd */
/* veth pair: name_a in ns_a, name_b in ns_b; addresses "10.1.2.1/24" (may be NULL);
 * both ends and lo up. */
int kr_veth_create(int ns_a, const char *name_a, const char *addr_a, int ns_b,
		   const char *name_b, const char *addr_b);
/* write a sysfs file as seen from inside nsfd (e.g. "class/net/veth1/queues/rx-0/rps_cpus");
 * a glob ("rx-*") writes every match (read: the first); -1 ENOENT when none */
int kr_netns_sysfs_write(int nsfd, const char *relpath, const char *value);
int kr_netns_sysfs_read(int nsfd, const char *relpath, char *buf, size_t len);
/* SIOCETHTOOL on ifname in nsfd; cmd points to an ethtool command struct */
int kr_netns_ethtool(int nsfd, const char *ifname, void *cmd);

/* ---- environment ---- */
/* Adds the standard header: kernel release, CPU model and count, and the given knobs
 * ("sysctl:kernel.x", "file:/sys/...", "config:CONFIG_X", or a group of the bug-report
 * environment: "group:config", "group:cmdline", "group:sched_features", "group:cpuidle",
 * "group:cpufreq", "group:rt_throttling", "group:irq_affinity", "group:thread_policies",
 * "group:cgroup", "group:memory", "group:numa", "group:virt") to the report environment. */
void kr_env_standard(const char *const *knobs);
extern const char *const kr_env_groups[]; /* every group: what scripts/envinfo prints */
#ifndef KR_MAIL
/* the CPU model from /proc/cpuinfo's text: "model name" (x86), else arm64's implementer and
 * part ("ARM Neoverse-N1"), other architectures' lines, the device tree's model (dt_model:
 * /sys/firmware/devicetree/base/model, may be NULL); "unknown" */
char *kr_cpu_model_from(const char *cpuinfo, const char *dt_model, char *buf, size_t len);
/* "nodes 0-1,70; node0:cpus 0-3 node1:cpus none node70:cpus 4-7": every node of dir (NULL:
 * /sys/devices/system/node), numbers sparse and of any size; malloc'd, NULL if unreadable */
char *kr_numa_summary(const char *dir);
/* The CPU a phenomenon is measured on: "group:cpuidle" and "group:cpufreq" describe it
 * (default cpu0). Call before kr_env_standard. */
void kr_env_cpu(int cpu);
/* print the environment collected so far: "key: value" lines, or one JSON object */
void kr_env_print(FILE *f, bool json);
void kr_kmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#else
static inline void kr_env_cpu(int cpu) { (void)cpu; }
#endif

#endif
