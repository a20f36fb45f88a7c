/* SPDX-License-Identifier: MIT */
/*
 * The daemon's error payloads are plain JSON, not YANG data:
 * {"errors":[{"message":"...","path":"...","app-tag":"..."}]}. This reads
 * just that shape, skipping members it does not know, and never trusts
 * the input: every read is bounded by the terminating NUL.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define CLI_JSON_DEPTH 32 /* nesting that skipped values may have */

struct cli_jp {
	const char *p;
};

static void cli_jp_ws(struct cli_jp *jp)
{
	while (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r')
		jp->p++;
}

static bool cli_jp_eat(struct cli_jp *jp, char c)
{
	cli_jp_ws(jp);
	if (*jp->p != c)
		return false;
	jp->p++;
	return true;
}

static int cli_hex4(const char *s, uint32_t *out)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -EBADMSG;
	}
	*out = v;
	return 0;
}

static size_t cli_utf8_put(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Reads the code point of a \u escape at @s (just past the "\u"), joining
 * a surrogate pair; returns how many bytes of input it took. A lone
 * surrogate, or U+0000 (which would cut a C string), becomes U+FFFD.
 */
static int cli_json_unicode(const char *s, uint32_t *cp)
{
	uint32_t lo;

	if (cli_hex4(s, cp))
		return -EBADMSG;
	if (*cp >= 0xd800 && *cp < 0xdc00 && s[4] == '\\' && s[5] == 'u' && !cli_hex4(s + 6, &lo) &&
	    lo >= 0xdc00 && lo < 0xe000) {
		*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
		return 10;
	}
	if ((*cp >= 0xd800 && *cp < 0xe000) || !*cp)
		*cp = 0xfffd;
	return 4;
}

static int cli_json_escape(const char **s, char *out, size_t *n)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e = strchr(from, **s);
	uint32_t cp;
	int used;

	if (**s && e) {
		out[(*n)++] = to[e - from];
		(*s)++;
		return 0;
	}
	if (**s != 'u')
		return -EBADMSG;
	used = cli_json_unicode(*s + 1, &cp);
	if (used < 0)
		return used;
	*n += cli_utf8_put(out + *n, cp);
	*s += 1 + used;
	return 0;
}

/*
 * Reads a string at the parser's place into *@out (malloc'd) or, with
 * @out NULL, skips it. The unescaped text is never longer than the
 * escaped one, so the raw length bounds the allocation.
 */
static int cli_jp_string(struct cli_jp *jp, char **out)
{
	const char *s, *end;
	char *buf;
	size_t n = 0;

	if (!cli_jp_eat(jp, '"'))
		return -EBADMSG;
	for (end = jp->p; *end && *end != '"'; end++)
		if (*end == '\\' && end[1])
			end++;
	if (*end != '"')
		return -EBADMSG;
	buf = malloc((size_t)(end - jp->p) + 1);
	if (!buf)
		return -ENOMEM;
	for (s = jp->p; s < end;) {
		if (*s != '\\') {
			buf[n++] = *s++;
			continue;
		}
		s++;
		if (cli_json_escape(&s, buf, &n)) {
			free(buf);
			return -EBADMSG;
		}
	}
	buf[n] = '\0';
	jp->p = end + 1;
	if (out)
		*out = buf;
	else
		free(buf);
	return 0;
}

static int cli_jp_skip(struct cli_jp *jp, int depth);

/* Skips the rest of an object or array whose opening bracket is read. */
static int cli_jp_skip_members(struct cli_jp *jp, char close, int depth)
{
	if (cli_jp_eat(jp, close))
		return 0;
	do {
		if (close == '}' && (cli_jp_string(jp, NULL) || !cli_jp_eat(jp, ':')))
			return -EBADMSG;
		if (cli_jp_skip(jp, depth + 1))
			return -EBADMSG;
	} while (cli_jp_eat(jp, ','));
	return cli_jp_eat(jp, close) ? 0 : -EBADMSG;
}

static int cli_jp_skip(struct cli_jp *jp, int depth)
{
	const char *start;

	if (depth > CLI_JSON_DEPTH)
		return -EBADMSG;
	cli_jp_ws(jp);
	if (*jp->p == '"')
		return cli_jp_string(jp, NULL);
	if (cli_jp_eat(jp, '{'))
		return cli_jp_skip_members(jp, '}', depth);
	if (cli_jp_eat(jp, '['))
		return cli_jp_skip_members(jp, ']', depth);
	/* a number, true, false or null */
	for (start = jp->p; *jp->p && strchr("+-.0123456789eEtrufalsn", *jp->p); jp->p++)
		;
	return jp->p > start ? 0 : -EBADMSG;
}

struct cli_jerr {
	char *message, *path, *apptag;
};

static void cli_jerr_free(struct cli_jerr *e)
{
	free(e->message);
	free(e->path);
	free(e->apptag);
	memset(e, 0, sizeof(*e));
}

/* The member's slot if it is one of ours and a string, else NULL (skip it). */
static char **cli_jerr_slot(struct cli_jerr *e, const char *name, const struct cli_jp *jp)
{
	char **slot = NULL;

	if (!strcmp(name, "message"))
		slot = &e->message;
	else if (!strcmp(name, "path"))
		slot = &e->path;
	else if (!strcmp(name, "app-tag"))
		slot = &e->apptag;
	if (!slot || *jp->p != '"')
		return NULL;
	free(*slot);
	*slot = NULL;
	return slot;
}

static int cli_jp_error(struct cli_jp *jp, struct cli_jerr *e)
{
	char *name;
	char **slot;
	int ret;

	if (!cli_jp_eat(jp, '{'))
		return -EBADMSG;
	if (cli_jp_eat(jp, '}'))
		return 0;
	do {
		ret = cli_jp_string(jp, &name);
		if (ret)
			return ret;
		if (!cli_jp_eat(jp, ':')) {
			free(name);
			return -EBADMSG;
		}
		cli_jp_ws(jp);
		slot = cli_jerr_slot(e, name, jp);
		free(name);
		ret = slot ? cli_jp_string(jp, slot) : cli_jp_skip(jp, 1);
		if (ret)
			return ret;
	} while (cli_jp_eat(jp, ','));
	return cli_jp_eat(jp, '}') ? 0 : -EBADMSG;
}

static int cli_jp_errors(struct cli_jp *jp, cli_errjson_fn fn, void *arg)
{
	struct cli_jerr e = { NULL, NULL, NULL };
	int n = 0, ret;

	if (!cli_jp_eat(jp, '['))
		return -EBADMSG;
	if (cli_jp_eat(jp, ']'))
		return 0;
	do {
		ret = cli_jp_error(jp, &e);
		if (!ret && !e.message)
			ret = -EBADMSG;
		if (ret) {
			cli_jerr_free(&e);
			return ret;
		}
		fn(arg, e.message, e.path, e.apptag);
		cli_jerr_free(&e);
		n++;
	} while (cli_jp_eat(jp, ','));
	return cli_jp_eat(jp, ']') ? n : -EBADMSG;
}

int cli_errjson_parse(const char *json, cli_errjson_fn fn, void *arg)
{
	struct cli_jp jp = { json };
	int n = -EBADMSG, ret;
	char *name;

	if (!cli_jp_eat(&jp, '{'))
		return -EBADMSG;
	do {
		ret = cli_jp_string(&jp, &name);
		if (ret)
			return ret;
		if (!cli_jp_eat(&jp, ':'))
			ret = -EBADMSG;
		else if (!strcmp(name, "errors"))
			ret = n = cli_jp_errors(&jp, fn, arg);
		else
			ret = cli_jp_skip(&jp, 1);
		free(name);
		if (ret < 0)
			return ret;
	} while (cli_jp_eat(&jp, ','));
	if (!cli_jp_eat(&jp, '}'))
		return -EBADMSG;
	cli_jp_ws(&jp);
	return *jp.p ? -EBADMSG : n;
}

void cli_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}
