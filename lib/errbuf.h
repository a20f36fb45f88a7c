/* SPDX-License-Identifier: MIT */
/*
 * A small buffer for messages meant for the user, in the spirit of
 * netlink's extack: the function that fails says what was wrong and
 * where; its caller decides where the text goes.
 *
 * Public (installed as <lcfib/errbuf.h>): the functions that fill it are
 * the library's own (lib/err.h).
 */
#ifndef LCFIB_ERRBUF_H
#define LCFIB_ERRBUF_H

#include <stdbool.h>
#include <stddef.h>

#define ERR_MSG_MAX 256

struct errbuf {
	char msg[ERR_MSG_MAX];
};

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
