/* SPDX-License-Identifier: MIT */
/*
 * Streamed lookups (lookups.h). The client sends addresses, one a line, in
 * data frames of up to 1 MiB; ctl.c hands a frame over as the connection
 * drains, and each call answers at most LOOKUPS_TURN lines, so that a
 * turn stays short for the other clients and its answers small. A line
 * cut by a frame's end waits in the stream for its rest.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/answer.h"
#include "daemon/ctl.h"
#include "daemon/dcache.h"
#include "daemon/lcfibd.h"
#include "daemon/lookups.h"
#include "lib/ctl.h"
#include "lib/fib.h"

/* The longest line that can be an address ("ffff:...:255.255.255.255" is 45 bytes). */
#define LOOKUPS_LINE_MAX 64
/* Lines answered per turn: about 1 ms, and 600 KiB of JSON at most. */
#define LOOKUPS_TURN 4096

struct lookups {
	uint32_t table;
	bool given, json;
	uint64_t line, answered, found, bad;
	char tail[LOOKUPS_LINE_MAX + 1]; /* a line cut by the frame's end */
	size_t tail_len;
	bool tail_long; /* the cut line is longer than LOOKUPS_LINE_MAX */
	struct answer_buf out;
};

/* A bad line's answer: its number and the bad token, made printable, never more. */
static void lookups_bad(struct lcfibd *d, struct lookups *l, const char *tok, size_t n,
			bool too_long)
{
	char msg[LOOKUPS_LINE_MAX + 96], clean[LOOKUPS_LINE_MAX + 1];
	size_t i;

	l->bad++;
	d->ctl.bad_lookup_lines++;
	for (i = 0; i < n && i < LOOKUPS_LINE_MAX; i++)
		clean[i] = tok[i] >= 0x20 && tok[i] < 0x7f ? tok[i] : '?';
	clean[i] = '\0';
	if (too_long)
		snprintf(msg, sizeof(msg), "line %" PRIu64 ": longer than %d bytes, not an address",
			 l->line, LOOKUPS_LINE_MAX);
	else
		snprintf(msg, sizeof(msg), "line %" PRIu64 ": '%s' is not an IP address", l->line,
			 clean);
	if (!l->json) {
		answer_raw(&l->out, "error: ");
		answer_raw(&l->out, msg);
		answer_raw(&l->out, "\n");
		return;
	}
	answer_raw(&l->out, "{\"lcfib:lookup\":{\"found\":false,\"error\":");
	answer_str(&l->out, msg);
	answer_raw(&l->out, "}}\n");
}

static void lookups_answer(struct lcfibd *d, struct lookups *l, const struct addr *a)
{
	struct nh_path paths[NH_MAX_PATHS];
	struct answer_route r;
	const struct fib_route *fr;
	struct fib_route cached;
	struct addr_prefix p;
	uint32_t table = l->table;
	char addr[ADDR_STRLEN], head[ADDR_STRLEN + 64];

	fib_read_lock();
	fr = l->given ? dcache_match_rcu(d, table, a, &p, &cached)
		      : dcache_match_rules_rcu(d, a, &p, &table, &cached);
	if (fr)
		answer_route_copy_rcu(&r, table, &p, fr, paths);
	fib_read_unlock();
	l->found += fr != NULL;
	addr_format(a, addr, sizeof(addr));
	if (!l->json) {
		if (fr) {
			answer_route_text(&l->out, &r);
		} else {
			answer_raw(&l->out, "no route to ");
			answer_raw(&l->out, addr);
			answer_raw(&l->out, "\n");
		}
		return;
	}
	snprintf(head, sizeof(head), "{\"lcfib:lookup\":{\"address\":\"%s\",\"found\":%s", addr,
		 fr ? "true," : "false");
	if (fr) {
		answer_route_json(&l->out, head, &r);
		answer_raw(&l->out, "}\n");
	} else {
		answer_raw(&l->out, head);
		answer_raw(&l->out, "}}\n");
	}
}

/* A line of input: an address, answered; a bad line, answered with why; blank, # lines skipped. */
static void lookups_line(struct lcfibd *d, struct lookups *l, const char *s, size_t n,
			 bool too_long)
{
	char tok[LOOKUPS_LINE_MAX + 1];
	struct errbuf err;
	struct addr a;

	l->line++;
	while (n && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	if (!too_long && (!n || *s == '#'))
		return;
	l->answered++;
	d->ctl.lookups++; /* counted as answered: a client that leaves early counts too */
	if (too_long || n > LOOKUPS_LINE_MAX) {
		lookups_bad(d, l, "", 0, true);
		return;
	}
	memcpy(tok, s, n);
	tok[n] = '\0';
	if (memchr(s, '\0', n) || addr_parse(tok, AF_UNSPEC, &a, &err))
		lookups_bad(d, l, tok, n, false);
	else
		lookups_answer(d, l, &a);
}

/* Takes the start of a line cut by the frame's end (its rest comes in the next). */
static void lookups_keep(struct lookups *l, const char *s, size_t n)
{
	if (l->tail_long || l->tail_len + n > LOOKUPS_LINE_MAX) {
		l->tail_long = true;
		return;
	}
	memcpy(l->tail + l->tail_len, s, n);
	l->tail_len += n;
}

/* A line whose start was cut: the start kept, and @s, @n its rest. */
static void lookups_joined(struct lcfibd *d, struct lookups *l, const char *s, size_t n)
{
	lookups_keep(l, s, n);
	lookups_line(d, l, l->tail, l->tail_len, l->tail_long);
	l->tail_len = 0;
	l->tail_long = false;
}

static ssize_t lookups_data(struct lcfibd *d, struct ctl_conn *c, uint32_t id, void *ctx,
			    const char *buf, size_t len, struct lcfibd_err *e)
{
	struct lookups *l = ctx;
	size_t pos = 0;
	unsigned int lines = 0;

	l->out.len = 0;
	while (pos < len && lines < LOOKUPS_TURN) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n;

		if (!nl) {
			lookups_keep(l, buf + pos, len - pos);
			pos = len;
			break;
		}
		n = (size_t)(nl - (buf + pos));
		if (l->tail_len || l->tail_long)
			lookups_joined(d, l, buf + pos, n);
		else
			lookups_line(d, l, buf + pos, n, false);
		pos += n + 1;
		lines++;
	}
	if (l->out.nomem) {
		lcfibd_err_set(e, CTL_TAG_FAILED, NULL, "out of memory answering lookups");
		return -1;
	}
	if (l->out.len)
		ctl_reply_lines(d, c, id, l->out.s, l->out.len);
	return (ssize_t)pos;
}

static void lookups_end(struct lcfibd *d, struct ctl_conn *c, uint32_t id, void *ctx)
{
	struct lookups *l = ctx;
	char reply[192];

	/* the last line, without its newline */
	l->out.len = 0;
	if (l->tail_len || l->tail_long)
		lookups_joined(d, l, "", 0);
	if (l->out.nomem) {
		struct lcfibd_err e = { 0 };

		lcfibd_err_set(&e, CTL_TAG_FAILED, NULL, "out of memory answering lookups");
		ctl_reply_error(d, c, id, &e);
		return;
	}
	if (l->out.len)
		ctl_reply_lines(d, c, id, l->out.s, l->out.len);
	snprintf(reply, sizeof(reply),
		 "{\"lcfib:lookups\":{\"addresses\":\"%" PRIu64 "\",\"found\":\"%" PRIu64
		 "\",\"bad-lines\":\"%" PRIu64 "\"}}",
		 l->answered, l->found, l->bad);
	ctl_reply(d, c, id, reply);
}

static void lookups_free(void *ctx)
{
	struct lookups *l = ctx;

	free(l->out.s);
	free(l);
}

static const struct ctl_sink lookups_sink = { lookups_data, lookups_end, lookups_free };

int lookups_start(struct ctl_conn *c, uint32_t id, uint32_t table, bool given, bool json,
		  struct lcfibd_err *e)
{
	struct lookups *l = calloc(1, sizeof(*l));

	if (!l) {
		lcfibd_err_set(e, CTL_TAG_FAILED, NULL, "out of memory for lookups");
		return -1;
	}
	l->table = table;
	l->given = given;
	l->json = json;
	ctl_conn_sink(c, id, &lookups_sink, l);
	return 1;
}
