/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/err.h"

void err_set(struct errbuf *e, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
}

void err_prefix(struct errbuf *e, const char *fmt, ...)
{
	char old[ERR_MSG_MAX];
	size_t n;
	va_list ap;

	if (!e)
		return;
	memcpy(old, e->msg, sizeof(old));
	va_start(ap, fmt);
	n = (size_t)vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	if (n < sizeof(e->msg))
		snprintf(e->msg + n, sizeof(e->msg) - n, ": %s", old);
}
