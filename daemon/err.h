/* SPDX-License-Identifier: MIT */
/*
 * Errors meant for a client of lcfibd: a message, the YANG path it is
 * about, and the NETCONF-style app-tag. Any thread.
 */
#ifndef LCFIB_DAEMON_ERR_H
#define LCFIB_DAEMON_ERR_H

#include <libyang/libyang.h>

/* Where a message for the client goes: text, YANG path, app-tag. */
struct lcfibd_err {
	char msg[1024];
	char path[512];
	const char *tag;
};

/* Sets a message (printf-style) with an app-tag and optional path. */
void lcfibd_err_set(struct lcfibd_err *e, const char *tag, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Fills @e from libyang's last error in @ly (message, path, app-tag); @what (may be NULL) prefixes
 * the message. */
void lcfibd_err_from_ly(struct lcfibd_err *e, const struct ly_ctx *ly, const char *what);
/*
 * Whether a client's XPath may go to libyang: 0, or -1 with @e set. libyang
 * 2.1 evaluates `mod` as an integer remainder and dies of SIGFPE on a zero
 * (or NaN) divisor, so `x mod y` in a get would kill lcfibd: the operator
 * `mod`, outside a literal, is refused outright (names with "mod" in them,
 * such as "mode", pass). It dies too of deref() on a node that is not a
 * leafref, and leaks on re-match() with a bad pattern: a call of any
 * function but XPath 1.0's own and current() is refused.
 */
int lcfibd_err_xpath(struct lcfibd_err *e, const char *xpath);

#endif
