/* SPDX-License-Identifier: MIT */
/*
 * Filling the user's error buffer (struct errbuf, lib/errbuf.h): for the
 * library, lcfibd and lcfibctl. Not installed, not exported by liblcfib.so.
 */
#ifndef LCFIB_ERR_H
#define LCFIB_ERR_H

#include "lib/errbuf.h"

/* Sets the message (printf-style). @e may be NULL: the message is dropped. */
void err_set(struct errbuf *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepends "@fmt: " to the message already in @e (for callers adding a place). */
void err_prefix(struct errbuf *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
