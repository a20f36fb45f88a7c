/* SPDX-License-Identifier: MIT */
/* Errors meant for a client: set from a format, or from libyang's last error. */
#include <ctype.h>
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

/* A character of an XPath name or QName (non-ASCII bytes count, as UTF-8 letters). */
static int xpath_name_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '-' || c == '.' || c == ':' || c >= 0x80;
}

/*
 * The functions a client's XPath may call: XPath 1.0's core library and
 * YANG's current(). libyang 2.1.30 dies of YANG's deref() on a leaf that
 * is not a leafref (a NULL dereference: any reader could kill lcfibd) and
 * leaks 64 bytes at each re-match() whose pattern does not compile (a
 * reader could grow lcfibd without bound). The other YANG functions
 * (derived-from(), derived-from-or-self(), enum-value(), bit-is-set()) did
 * no harm when tried, but this module has no identityref to test, and an
 * enum or a bit compares by its name: they are refused with the unknown,
 * rather than trusted. node(), text(), comment() and
 * processing-instruction() are node tests, not calls.
 */
static const char *const xpath_functions[] = {
	"boolean",
	"ceiling",
	"comment",
	"concat",
	"contains",
	"count",
	"current",
	"false",
	"floor",
	"id",
	"lang",
	"last",
	"local-name",
	"name",
	"namespace-uri",
	"node",
	"normalize-space",
	"not",
	"number",
	"position",
	"processing-instruction",
	"round",
	"starts-with",
	"string",
	"string-length",
	"substring",
	"substring-after",
	"substring-before",
	"sum",
	"text",
	"translate",
	"true",
};

/* Whether @name (@len bytes), called as a function, is in xpath_functions. */
static int xpath_function_ok(const unsigned char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(xpath_functions) / sizeof(xpath_functions[0]); i++)
		if (strlen(xpath_functions[i]) == len && !memcmp(xpath_functions[i], name, len))
			return 1;
	return 0;
}

/*
 * The length of the operator name @p begins with, after an operand: libyang
 * 2.1 takes one by its prefix, whatever follows ("x divy" is x div y).
 */
static size_t xpath_operator_len(const unsigned char *p)
{
	if (!strncmp((const char *)p, "and", 3) || !strncmp((const char *)p, "div", 3))
		return 3;
	return !strncmp((const char *)p, "or", 2) ? 2 : 0;
}

/*
 * Walks @xpath as XPath 1.0's lexer does, knowing after each token whether
 * an operand just ended: a name there is an operator name, and libyang
 * takes one that begins with "mod" for the operator whatever follows
 * ("x modod 0" is x mod od), so any is refused; after "and", "div" or "or"
 * the rest of the name is a token of its own. Elsewhere a name is a node
 * or function name ("mode", "modules" pass); one followed by '(' is a call,
 * refused unless in xpath_functions.
 */
int lcfibd_err_xpath(struct lcfibd_err *e, const char *xpath)
{
	const unsigned char *p = (const unsigned char *)xpath;
	int operand = 0; /* the last token ended an operand */

	while (*p) {
		if (isspace(*p)) {
			p++;
		} else if (*p == '\'' || *p == '"') {
			const char *q = strchr((const char *)p + 1, *p);

			if (!q)
				return 0; /* libyang refuses the open literal itself */
			p = (const unsigned char *)q + 1;
			operand = 1;
		} else if (isdigit(*p) || (*p == '.' && isdigit(p[1]))) {
			while (isdigit(*p) || *p == '.')
				p++;
			operand = 1;
		} else if (isalpha(*p) || *p == '_' || *p >= 0x80) {
			const unsigned char *name = p, *q;
			size_t op = operand ? xpath_operator_len(p) : 0;

			if (operand && !strncmp((const char *)p, "mod", 3)) {
				lcfibd_err_set(
					e, "invalid-value", xpath,
					"the XPath operator 'mod' is not supported (in %.64s%s)",
					xpath, strlen(xpath) > 64 ? "..." : "");
				return -1;
			}
			if (op) {
				/* libyang reads the operator and goes on: "1 divx" is 1 div x */
				p += op;
				operand = 0;
				continue;
			}
			while (xpath_name_char(*p)) {
				/* After an axis ("child::node()"), the node test or call */
				if (p[0] == ':' && p[1] == ':')
					name = p + 2;
				p++;
			}
			for (q = p; isspace(*q); q++)
				;
			if (*q == '(' && !xpath_function_ok(name, (size_t)(p - name))) {
				lcfibd_err_set(
					e, "invalid-value", xpath,
					"the XPath function '%.*s' is not supported (in %.64s%s)",
					(int)(p - name > 64 ? 64 : p - name), (const char *)name,
					xpath, strlen(xpath) > 64 ? "..." : "");
				return -1;
			}
			operand = 1;
		} else if (*p == ')' || *p == ']' || *p == '.') {
			p++;
			operand = 1;
		} else if (*p == '*') {
			p++;
			operand = !operand; /* a name test, or the multiplication */
		} else {
			p++;
			operand = 0;
		}
	}
	return 0;
}
