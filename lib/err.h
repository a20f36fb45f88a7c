/* SPDX-License-Identifier: MIT */
/*
 * A small buffer for messages meant for the user, in the spirit of
 * netlink's extack: the function that fails says what was wrong and
 * where; its caller decides where the text goes.
 */
#ifndef LCFIB_ERR_H
#define LCFIB_ERR_H

#include <stdbool.h>
#include <stddef.h>

#define ERR_MSG_MAX 256

struct errbuf {
	char msg[ERR_MSG_MAX];
};

/* Sets the message (printf-style). @e may be NULL: the message is dropped. */
void err_set(struct errbuf *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepends "@fmt: " to the message already in @e (for callers adding a place). */
void err_prefix(struct errbuf *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline bool err_is_set(const struct errbuf *e)
{
	return e && e->msg[0];
}

static inline void err_clear(struct errbuf *e)
{
	if (e)
		e->msg[0] = '\0';
}

#endif
