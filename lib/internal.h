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
/* Print text broken at spaces into lines of at most KR_TEXT_WIDTH columns (prefix
 * included); continuation lines indented by indent (-1: under a "key   value" gap, else the
 * line's own indent + 2). */
void kr_print_wrapped(FILE *f, const char *prefix, const char *text, int indent);
/* where sysfs is mounted for lib/mem.c's hugetlb pool ("/sys"; tests: a tree of files) */
extern const char *kr_sysfs;
#endif
