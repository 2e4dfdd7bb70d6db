/* SPDX-License-Identifier: GPL-2.0-only */
/* Description: lib/-internal functions shared between its files (not for programs). */
#ifndef KREPRO_INTERNAL_H
#define KREPRO_INTERNAL_H
#include "krepro.h"

int kr_lock_take(double wait_s, pid_t *holder);
int kr_journal_finish(void);
int kr_journal_begin(void);
void kr_journal_detach(void);
int kr_journal_child(pid_t pid);
#endif
