/* SPDX-License-Identifier: MIT */
/* Errors meant for a client: set from a format, or from libyang's last error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/err.h"

void lcfibd_err_set(struct lcfibd_err *e, const char *tag, const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	e->tag = tag;
	snprintf(e->path, sizeof(e->path), "%s", path ? path : "");
}

/*
 * libyang's path reads 'Data location "/lcfib:lcfib/sync-mem", line number 4.':
 * the YANG path goes in @e->path, the rest joins the message.
 */
void lcfibd_err_from_ly(struct lcfibd_err *e, const struct ly_ctx *ly, const char *what)
{
	const struct ly_err_item *ei = ly_err_last(ly);
	const char *msg = ei && ei->msg ? ei->msg : "invalid data";
	const char *where = ei && ei->path ? ei->path : "";
	const char *q1 = strchr(where, '"'), *q2 = q1 ? strchr(q1 + 1, '"') : NULL;
	const char *line = strstr(where, "line number ");

	e->tag = ei && ei->apptag ? "invalid-value" : "invalid-value";
	if (ei && ei->apptag)
		e->tag = ei->apptag;
	e->path[0] = '\0';
	if (q1 && q2 && q2 - q1 - 1 < (long)sizeof(e->path))
		snprintf(e->path, sizeof(e->path), "%.*s", (int)(q2 - q1 - 1), q1 + 1);
	if (line)
		snprintf(e->msg, sizeof(e->msg), "%s%sline %d: %s", what ? what : "",
			 what ? ": " : "", atoi(line + 12), msg);
	else
		snprintf(e->msg, sizeof(e->msg), "%s%s%s", what ? what : "", what ? ": " : "", msg);
	ly_err_clean((struct ly_ctx *)ly, NULL);
}
