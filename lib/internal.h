/* SPDX-License-Identifier: GPL-2.0-only */
/* Description: lib/-internal functions shared between its files (not for programs). */
#ifndef KREPRO_INTERNAL_H
#define KREPRO_INTERNAL_H
#include "krepro.h"

#include <signal.h>

/* SIGINT/SIGTERM/SIGHUP received before the run starts (while waiting for the lock):
 * kr_lock_take gives up with EINTR */
extern volatile sig_atomic_t kr_pre_run_signal;
int kr_lock_take(double wait_s, pid_t *holder);
int kr_journal_finish(void);
int kr_journal_begin(void);
void kr_journal_detach(void);
/* --csv FILE made new before the run (-1 with errno: EEXIST, ELOOP...); removed again at
 * the end if nothing was written to it */
int kr_csv_create(const char *path);
void kr_csv_finish(const char *path);
/* Print text broken at spaces into lines of at most KR_TEXT_WIDTH columns (prefix
 * included); continuation lines indented by indent (-1: under a "key   value" gap, else the
 * line's own indent + 2). */
void kr_print_wrapped(FILE *f, const char *prefix, const char *text, int indent);
/* where sysfs is mounted for lib/mem.c's hugetlb pool ("/sys"; tests: a tree of files) */
extern const char *kr_sysfs;
/* Unit tests only, never from an option or the environment (the programs run as root): a
 * recorded machine's tree (tests/shapes/NAME/root) from which lib's readers take the files
 * of "/sys/..." and "/proc/...", and its online CPUs as the usable ones. NULL: this machine. */
extern const char *kr_root;
/* path under kr_root where it is set and path is in /sys or /proc (into buf), else path */
const char *kr_rooted(const char *path, char *buf, size_t len);
#endif
