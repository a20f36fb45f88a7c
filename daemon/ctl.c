/* SPDX-License-Identifier: MIT */
/*
 * The control socket: a unix stream socket carrying lib/ctl.h frames.
 * Each connection is read into a buffer, framed, and served in order:
 * a request that goes to the writer holds the connection's later frames
 * until its reply is sent. Bad frames are answered, counted and logged,
 * and the peer is dropped when the stream can no longer be trusted.
 */
#define _GNU_SOURCE /* struct ucred */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>
#include <urcu/uatomic.h>

#include "daemon/cfg.h"
#include "daemon/ctl.h"
#include "daemon/err.h"
#include "daemon/ingest.h"
#include "daemon/lcfibd.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/peer.h"
#include "daemon/state.h"
#include "daemon/writer.h"
#include "lib/ctl.h"
#include "lib/routefile.h"

#define CTL_STREAM_MAX  (4ull << 30) /* a streamed route file, whatever max-route-file-size says */
#define CTL_CLIENTS_MAX 256
/*
 * Slots: the last CTL_ADMIN_SLOTS are kept for peers that may edit, and
 * one read-only user holds at most CTL_CLIENTS_PER_UID, so that readers
 * can neither lock root out nor each other.
 */
#define CTL_ADMIN_SLOTS     16
#define CTL_CLIENTS_PER_UID 32
#define CTL_REFUSED_LOG_S   10 /* one log line per this many seconds of refusals */

/*
 * Fairness: a connection has at most CTL_FRAMES_PER_TURN frames, or those
 * begun in its first CTL_TURN_US, or one piece of a listing, served before
 * every other ready connection had its turn. A connection with more than
 * CTL_OUT_MAX bytes of replies unsent is neither read nor served until its
 * peer reads; one that stays so for CTL_STALL_S seconds is dropped. A
 * listing's next piece is made when less than CTL_OUT_LOW is left to send.
 */
#define CTL_FRAMES_PER_TURN 8
#define CTL_TURN_US         2000
#define CTL_OUT_MAX         (1u << 20)
#define CTL_OUT_LOW         (256u << 10)
#define CTL_STALL_S         10
#define CTL_CONN_FDS        4 /* descriptors passed and not yet taken by a request */

struct ctl_conn {
	struct lcfibd_source src; /* first: epoll's data.ptr */
	int fd;
	pid_t pid;
	uid_t uid;
	struct lcfibd_peer peer; /* pid, uid, gid, groups */
	bool admin;
	bool untimed;          /* turns end by CTL_FRAMES_PER_TURN alone (ctl_serve_bytes()) */
	int fds[CTL_CONN_FDS]; /* passed (SCM_RIGHTS), oldest first */
	unsigned int n_fds;
	int rpc_fd; /* the current request's, until rpc.c takes it; -1: none */
	uint8_t *rbuf;
	size_t rlen, rcap;
	uint8_t *wbuf;
	size_t wlen, woff, wcap;
	struct writer_job *busy;   /* the request waiting for the writer */
	struct writer_job *stream; /* a load receiving its file */
	const struct ctl_stream *stream_ops;
	uint32_t stream_id;
	char *sbuf;             /* the file so far */
	uint64_t stotal;        /* its size, when the client said */
	struct timespec sstart; /* when it started */
	size_t slen, scap, last_note;
	const struct ctl_producer *prod; /* a reply made piece by piece */
	void *prod_ctx;
	uint32_t prod_id;
	const struct ctl_sink *sink; /* a request whose input streams in */
	void *sink_ctx;
	uint32_t sink_id;
	char *kbuf;              /* the data frame it is answering */
	size_t klen, koff, kcap; /* its bytes, how far the answers are */
	bool sink_end;           /* the end frame came */
	time_t over_since;       /* when unsent replies went over CTL_OUT_MAX (0: they are not) */
	bool closing;            /* close once the replies are out */
	bool dead;               /* the peer is gone: close at the end of this event */
	struct ctl_conn *next;
};

/* ---------------------------------------------------------------- JSON */

/*
 * The length of the well-formed UTF-8 sequence at @s (RFC 3629: no
 * overlong forms, no surrogates), or 0.
 */
static size_t ctl_utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	}
	return n;
}

/*
 * A syntax check of JSON (RFC 8259) before libyang parses it: libyang
 * 2.1 leaks the nodes it parsed when the text ends badly after them (an
 * RPC followed by anything but its closing brace), which would let any
 * reader grow the daemon a few hundred bytes a frame.
 */
struct ctl_jp {
	const unsigned char *p;
	unsigned int depth;
};

#define CTL_JSON_DEPTH 64

static void ctl_jp_ws(struct ctl_jp *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static bool ctl_jp_skip(struct ctl_jp *j, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp((const char *)j->p, lit, n) != 0)
		return false;
	j->p += n;
	return true;
}

static bool ctl_jp_string(struct ctl_jp *j)
{
	/* j->p never passes the NUL, so that whoever reads on after a failure stays inside. */
	if (*j->p != '"')
		return false;
	j->p++;
	for (;;) {
		size_t n = 1;

		if (*j->p == '"') {
			j->p++;
			return true;
		}
		if (*j->p < 0x20)
			return false; /* a control character, or the end */
		if (*j->p == '\\') {
			j->p++;
			if (*j->p == 'u') {
				for (n = 1; n <= 4; n++) {
					if (!isxdigit(j->p[n]))
						return false;
				}
			} else if (!*j->p || !strchr("\"\\/bfnrt", *j->p)) {
				return false;
			}
		} else if (*j->p >= 0x80 && !(n = ctl_utf8_len(j->p))) {
			return false;
		}
		j->p += n;
	}
}

static bool ctl_jp_digits(struct ctl_jp *j)
{
	const unsigned char *p = j->p;

	while (isdigit(*j->p))
		j->p++;
	return j->p > p;
}

static bool ctl_jp_number(struct ctl_jp *j)
{
	ctl_jp_skip(j, "-");
	if (!ctl_jp_skip(j, "0") && !ctl_jp_digits(j))
		return false;
	if (ctl_jp_skip(j, ".") && !ctl_jp_digits(j))
		return false;
	if (*j->p == 'e' || *j->p == 'E') {
		j->p++;
		if (*j->p == '+' || *j->p == '-')
			j->p++;
		return ctl_jp_digits(j);
	}
	return true;
}

static bool ctl_jp_value(struct ctl_jp *j);

/* An object's members or an array's values, after its opening bracket. */
static bool ctl_jp_members(struct ctl_jp *j, char close, bool named)
{
	bool ok = true;

	if (++j->depth > CTL_JSON_DEPTH)
		return false;
	ctl_jp_ws(j);
	if (*j->p == close) {
		j->p++;
		j->depth--;
		return true;
	}
	do {
		ctl_jp_ws(j);
		if (named) {
			ok = ctl_jp_string(j);
			ctl_jp_ws(j);
			ok = ok && ctl_jp_skip(j, ":");
		}
		ok = ok && ctl_jp_value(j);
		ctl_jp_ws(j);
	} while (ok && ctl_jp_skip(j, ","));
	j->depth--;
	return ok && *j->p == close && j->p++;
}

static bool ctl_jp_value(struct ctl_jp *j)
{
	ctl_jp_ws(j);
	switch (*j->p) {
	case '{':
		j->p++;
		return ctl_jp_members(j, '}', true);
	case '[':
		j->p++;
		return ctl_jp_members(j, ']', false);
	case '"':
		return ctl_jp_string(j);
	case 't':
		return ctl_jp_skip(j, "true");
	case 'f':
		return ctl_jp_skip(j, "false");
	case 'n':
		return ctl_jp_skip(j, "null");
	default:
		return ctl_jp_number(j);
	}
}

/* Whether the NUL-terminated @s is one JSON value; *@at: where it stops being one. */
static bool ctl_json_valid(const char *s, size_t *at)
{
	struct ctl_jp j = { (const unsigned char *)s, 0 };
	bool ok = ctl_jp_value(&j);

	ctl_jp_ws(&j);
	*at = (size_t)((const char *)j.p - s);
	return ok && !*j.p;
}

/*
 * Appends @s to @out as a JSON string. Messages may quote what a client
 * sent: bytes that are not UTF-8 become U+FFFD, so the reply stays JSON.
 */
void ctl_json_str(char **out, size_t *len, size_t *cap, const char *s)
{
	size_t need = *len + strlen(s) * 6 + 3;

	if (need > *cap) {
		char *p = realloc(*out, need * 2);

		if (!p)
			return;
		*out = p;
		*cap = need * 2;
	}
	(*out)[(*len)++] = '"';
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\') {
			(*out)[(*len)++] = '\\';
			(*out)[(*len)++] = (char)ch;
		} else if (ch < 0x20) {
			*len += (size_t)sprintf(*out + *len, "\\u%04x", ch);
		} else if (ch >= 0x80) {
			size_t n = ctl_utf8_len((const unsigned char *)s);

			if (!n) {
				*len += (size_t)sprintf(*out + *len, "\\ufffd");
				continue;
			}
			memcpy(*out + *len, s, n);
			*len += n;
			s += n - 1;
		} else {
			(*out)[(*len)++] = (char)ch;
		}
	}
	(*out)[(*len)++] = '"';
	(*out)[*len] = '\0';
}

/* ctl_json_str()'s twin for @s as it is (already JSON). */
static void ctl_json_raw(char **out, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);

	if (*len + n + 1 > *cap) {
		char *p = realloc(*out, (*len + n + 1) * 2);

		if (!p)
			return;
		*out = p;
		*cap = (*len + n + 1) * 2;
	}
	memcpy(*out + *len, s, n + 1);
	*len += n;
}

/* {"errors":[{"message":...,"path":...,"app-tag":...},...]} */
static char *ctl_errors_json(const struct lcfibd_err *e, unsigned int n)
{
	char *out = NULL;
	size_t len = 0, cap = 0;

	ctl_json_raw(&out, &len, &cap, "{\"errors\":[");
	for (unsigned int i = 0; i < n; i++) {
		ctl_json_raw(&out, &len, &cap, i ? ",{\"message\":" : "{\"message\":");
		ctl_json_str(&out, &len, &cap, e[i].msg);
		if (e[i].path[0]) {
			ctl_json_raw(&out, &len, &cap, ",\"path\":");
			ctl_json_str(&out, &len, &cap, e[i].path);
		}
		if (e[i].tag) {
			ctl_json_raw(&out, &len, &cap, ",\"app-tag\":");
			ctl_json_str(&out, &len, &cap, e[i].tag);
		}
		ctl_json_raw(&out, &len, &cap, "}");
	}
	ctl_json_raw(&out, &len, &cap, "]}");
	return out;
}

/* ----------------------------------------------------------- sending */

static void ctl_conn_close(struct lcfibd *d, struct ctl_conn *c);

static time_t ctl_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec;
}

/* Microseconds since @t0. */
static int64_t ctl_us_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)(t.tv_sec - t0->tv_sec) * 1000000 + (t.tv_nsec - t0->tv_nsec) / 1000;
}

/*
 * Whether a warning may go to the log now: one per CTL_REFUSED_LOG_S
 * seconds of each kind; *@suppressed then says how many were left out.
 */
static bool ctl_log_ok(struct ctl_ratelimit *rl, unsigned int *suppressed)
{
	time_t now = ctl_now();

	if (rl->last && now - rl->last < CTL_REFUSED_LOG_S) {
		rl->suppressed++;
		return false;
	}
	rl->last = now;
	*suppressed = rl->suppressed;
	rl->suppressed = 0;
	return true;
}

static size_t ctl_unsent(const struct ctl_conn *c)
{
	return c->wlen - c->woff;
}

/* Whether a stream's data frame is still being answered. */
static bool ctl_sink_pending(const struct ctl_conn *c)
{
	return c->sink && c->koff < c->klen;
}

/* Whether @c's next frame may be served now: replies go out in order, and are read. */
static bool ctl_may_serve(const struct ctl_conn *c)
{
	return !c->dead && !c->closing && (!c->busy || c->stream) && !c->prod &&
	       !ctl_sink_pending(c) && ctl_unsent(c) <= CTL_OUT_MAX;
}

/* Whether a whole frame (or a header that cannot be framed) waits in the read buffer. */
static bool ctl_has_frame(const struct ctl_conn *c)
{
	struct errbuf err;
	struct ctl_hdr h;

	if (c->rlen < CTL_HDR_LEN)
		return false;
	if (ctl_hdr_decode(c->rbuf, CTL_REQ_MAX, &h, &err))
		return true;
	return c->rlen >= CTL_HDR_LEN + (size_t)h.len;
}

/* Whether @c has work for the next turn of ctl_serve(). */
static bool ctl_conn_ready(const struct ctl_conn *c)
{
	if (c->dead || c->closing)
		return false;
	if (c->prod || ctl_sink_pending(c))
		return ctl_unsent(c) < CTL_OUT_LOW;
	return ctl_may_serve(c) && ctl_has_frame(c);
}

static int ctl_conn_events(struct lcfibd *d, struct ctl_conn *c)
{
	struct epoll_event ev = { .data.ptr = c };

	/*
	 * Read only what can be served: not while a request waits (unless a
	 * stream is coming in), nor while frames read already wait their
	 * turn, nor while the peer leaves its replies unread.
	 */
	if (ctl_may_serve(c) && !ctl_has_frame(c))
		ev.events |= EPOLLIN;
	if (ctl_unsent(c))
		ev.events |= EPOLLOUT;
	return epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void ctl_flush(struct ctl_conn *c)
{
	while (c->woff < c->wlen && c->fd >= 0) {
		ssize_t n = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			log_info("control client pid %d: %m; closing", (int)c->pid);
			c->dead = true;
			return;
		}
		c->woff += (size_t)n;
	}
	if (c->fd < 0) /* a detached connection (ctl_conn_detached): replies go nowhere */
		c->woff = c->wlen;
	if (c->woff < c->wlen)
		return;
	c->woff = c->wlen = 0;
	/* A long reply is out: give its buffer back. */
	if (c->wcap > CTL_OUT_MAX) {
		free(c->wbuf);
		c->wbuf = NULL;
		c->wcap = 0;
	}
}

/*
 * The one place a connection is closed, at the end of whatever touched
 * it: when its peer is gone, or it was told to close and has nothing left
 * to send or wait for. Otherwise notes when its peer stopped reading and
 * updates what epoll watches.
 */
static void ctl_conn_settle(struct lcfibd *d, struct ctl_conn *c)
{
	if (c->dead || (c->closing && !ctl_unsent(c) && !c->busy && !c->prod)) {
		ctl_conn_close(d, c);
		return;
	}
	if (ctl_unsent(c) <= CTL_OUT_MAX)
		c->over_since = 0;
	else if (!c->over_since)
		c->over_since = ctl_now();
	if (c->fd >= 0)
		ctl_conn_events(d, c);
}

static void ctl_queue_len(struct ctl_conn *c, unsigned int type, uint32_t id, const char *payload,
			  size_t len)
{
	struct ctl_hdr h = {
		.len = (uint32_t)len, .version = CTL_VERSION, .type = (uint8_t)type, .id = id
	};

	if (!c || c->dead)
		return;
	/* What was sent makes room: the buffer holds only what is unsent. */
	if (c->woff) {
		memmove(c->wbuf, c->wbuf + c->woff, c->wlen - c->woff);
		c->wlen -= c->woff;
		c->woff = 0;
	}
	if (c->wlen + CTL_HDR_LEN + len > c->wcap) {
		size_t cap = (c->wlen + CTL_HDR_LEN + len) * 2;
		uint8_t *p = realloc(c->wbuf, cap);

		if (!p) {
			log_err("out of memory for a reply to pid %d; closing", (int)c->pid);
			c->dead = true;
			return;
		}
		c->wbuf = p;
		c->wcap = cap;
	}
	ctl_hdr_encode(&h, c->wbuf + c->wlen);
	memcpy(c->wbuf + c->wlen + CTL_HDR_LEN, payload ? payload : "", len);
	c->wlen += CTL_HDR_LEN + len;
	ctl_flush(c);
}

static void ctl_queue(struct ctl_conn *c, unsigned int type, uint32_t id, const char *payload)
{
	ctl_queue_len(c, type, id, payload, payload ? strlen(payload) : 0);
}

void ctl_reply_part(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const char *json, size_t len)
{
	(void)d;
	ctl_queue_len(c, CTL_PART, id, json, len);
}

void ctl_reply_lines(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const char *text,
		     size_t len)
{
	(void)d;
	ctl_queue_len(c, CTL_LINES, id, text, len);
}

void ctl_reply(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const char *json)
{
	(void)d;
	ctl_queue(c, CTL_REPLY, id, json);
}

void ctl_reply_errors(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const struct lcfibd_err *e,
		      unsigned int n)
{
	char *json = ctl_errors_json(e, n);

	d->ctl.errors++;
	ctl_queue(c, CTL_ERROR, id, json ? json : "{\"errors\":[]}");
	free(json);
}

void ctl_reply_error(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const struct lcfibd_err *e)
{
	ctl_reply_errors(d, c, id, e, 1);
}

void ctl_notify(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const char *json)
{
	(void)d;
	ctl_queue(c, CTL_NOTIFY, id, json);
}

/* ---------------------------------------------------------- requests */

/* A bad frame: answer, count, log; @fatal when the stream can't be framed any more. */
static void ctl_bad_frame(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const char *msg,
			  bool fatal)
{
	struct lcfibd_err e = { 0 };

	unsigned int more;

	d->ctl.bad_frames++;
	if (ctl_log_ok(&d->ctl.log_bad, &more))
		log_warn("control client pid %d uid %u: bad frame: %s%s (and %u more not logged)",
			 (int)c->pid, (unsigned int)c->uid, msg, fatal ? "; closing" : "", more);
	lcfibd_err_set(&e, CTL_TAG_MALFORMED, NULL, "bad frame: %s", msg);
	ctl_reply_error(d, c, id, &e);
	if (fatal)
		c->closing = true;
}

static bool ctl_may_edit(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const char *what)
{
	struct lcfibd_err e = { 0 };

	if (c->admin)
		return true;
	d->ctl.denied++;
	log_notice("control client pid %d uid %u may only read: %s refused", (int)c->pid,
		   (unsigned int)c->uid, what);
	lcfibd_err_set(&e, CTL_TAG_DENIED, NULL,
		       "%s needs root%s: this connection (uid %u) may only read", what,
		       d->has_admin_group ? " or the admin group" : "", (unsigned int)c->uid);
	ctl_reply_error(d, c, id, &e);
	return false;
}

static int ctl_get_config(struct lcfibd *d, struct lyd_node **top)
{
	if (!d->running)
		return 0;
	return lyd_dup_siblings(d->running, NULL, LYD_DUP_RECURSIVE, top) == LY_SUCCESS ? 0 : -1;
}

/* The datastore for a get: config and/or state, then what @xpath selects of it. */
static int ctl_get(struct lcfibd *d, const struct ctl_hdr *h, const char *xpath, char **json,
		   struct lcfibd_err *e)
{
	unsigned int what = h->flags & (CTL_GET_CONFIG | CTL_GET_STATE);
	struct lyd_node *tree = NULL, *top = NULL, *result = NULL;
	struct ly_set *set = NULL;
	int ret = -1;

	if (lcfibd_err_xpath(e, xpath))
		return -1;
	if (!what)
		what = CTL_GET_CONFIG | CTL_GET_STATE;
	if ((what & CTL_GET_CONFIG) && ctl_get_config(d, &tree))
		goto ly_fail;
	if (!tree && lyd_new_inner(NULL, d->mod, "lcfib", 0, &tree) != LY_SUCCESS)
		goto ly_fail;
	top = tree;
	if ((what & CTL_GET_STATE) && state_build(d, top, xpath))
		goto ly_fail;
	if (!(what & CTL_GET_CONFIG)) {
		/* State only: drop the config children the container was made with. */
		struct lyd_node *n, *next;

		LY_LIST_FOR_SAFE(lyd_child(top), next, n)
		{
			if (strcmp(LYD_NAME(n), "state") != 0)
				lyd_free_tree(n);
		}
	}
	if (!xpath[0] || strcmp(xpath, "/") == 0) {
		result = tree;
		tree = NULL;
	} else {
		if (lyd_find_xpath(tree, xpath, &set) != LY_SUCCESS)
			goto ly_fail;
		for (uint32_t i = 0; i < set->count; i++) {
			struct lyd_node *dup = NULL;

			if (lyd_dup_single(set->dnodes[i], NULL,
					   LYD_DUP_RECURSIVE | LYD_DUP_WITH_PARENTS, &dup))
				goto ly_fail;
			while (lyd_parent(dup))
				dup = lyd_parent(dup);
			if (lyd_merge_siblings(&result, dup, LYD_MERGE_DESTRUCT))
				goto ly_fail;
		}
	}
	if (lyd_print_mem(json, result, LYD_JSON, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_WD_ALL))
		goto ly_fail;
	if (!*json)
		*json = strdup("{}");
	ret = 0;
	goto out;
ly_fail:
	lcfibd_err_from_ly(e, d->ly, xpath[0] ? xpath : "get");
out:
	ly_set_free(set, NULL);
	lyd_free_all(tree);
	lyd_free_all(result);
	return ret;
}

static void ctl_do_get(struct lcfibd *d, struct ctl_conn *c, const struct ctl_hdr *h,
		       const char *payload)
{
	struct lcfibd_err e = { 0 };
	char *json = NULL;

	if (ctl_get(d, h, payload, &json, &e))
		ctl_reply_error(d, c, h->id, &e);
	else
		ctl_reply(d, c, h->id, json);
	free(json);
}

/*
 * Loop thread: the edit of a client ended. Its later frames waited for
 * this reply (c->busy): they are served again; inside cfg_edit_submit()
 * ctl_parse() goes on with them itself.
 */
static void ctl_edit_done(struct lcfibd *d, struct cfg_edit *ed, int ret,
			  const struct lcfibd_err *e, bool later)
{
	struct ctl_conn *c = ed->job.conn;

	if (ret)
		log_info("config edit from pid %d refused: %s", c ? (int)c->pid : 0, e->msg);
	else if (c)
		log_notice("config changed by pid %d uid %u", (int)c->pid, (unsigned int)c->uid);
	else
		log_notice("config changed (its client has gone)");
	if (c) {
		if (ret)
			ctl_reply_error(d, c, ed->job.req_id, e);
		else
			ctl_reply(d, c, ed->job.req_id, NULL);
		c->busy = NULL;
		if (later)
			ctl_conn_settle(d, c);
	}
	free(ed->data);
	free(ed);
}

static void ctl_do_edit(struct lcfibd *d, struct ctl_conn *c, const struct ctl_hdr *h,
			const char *payload)
{
	struct lcfibd_err e = { 0 };
	struct cfg_edit *ed;

	if (!ctl_may_edit(d, c, h->id, "changing the configuration"))
		return;
	if (h->flags > CTL_EDIT_DELETE) {
		ctl_bad_frame(d, c, h->id, "edit mode is none of merge, replace, delete", false);
		return;
	}
	ed = calloc(1, sizeof(*ed));
	if (ed)
		ed->data = strdup(payload);
	if (!ed || !ed->data) {
		free(ed);
		lcfibd_err_set(&e, CTL_TAG_RESOURCE, NULL, "out of memory");
		ctl_reply_error(d, c, h->id, &e);
		return;
	}
	ed->job.conn = c;
	ed->job.req_id = h->id;
	ed->editor = &c->peer;
	ed->mode = h->flags;
	ed->done = ctl_edit_done;
	/* Its next frames wait for the reply: after the edits before it, and the writer. */
	c->busy = &ed->job;
	cfg_edit_submit(d, ed);
}

void ctl_set_rpcs(struct lcfibd *d, const struct ctl_rpcs *rpcs)
{
	d->rpcs = rpcs;
}

static const struct ctl_rpc *ctl_rpc_find(const struct lcfibd *d, const char *name)
{
	for (unsigned int i = 0; d->rpcs && i < d->rpcs->n; i++) {
		if (strcmp(d->rpcs->rpc[i].name, name) == 0)
			return &d->rpcs->rpc[i];
	}
	return NULL;
}

/*
 * The RPC a request (valid JSON) names with its first member,
 * {"lcfib:NAME":...}, or NULL. Checked before libyang parses it: given
 * data that is not an operation, lyd_parse_op() leaks what it parsed.
 */
static const struct ctl_rpc *ctl_rpc_named(const struct lcfibd *d, const char *payload)
{
	struct ctl_jp j = { .p = (const unsigned char *)payload };
	const unsigned char *name;
	char buf[64];
	size_t n;

	ctl_jp_ws(&j);
	if (*j.p != '{')
		return NULL;
	j.p++;
	ctl_jp_ws(&j);
	name = j.p + 1;
	if (!ctl_jp_string(&j))
		return NULL;
	n = (size_t)(j.p - 1 - name);
	if (n <= 6 || n - 6 >= sizeof(buf) || memcmp(name, "lcfib:", 6))
		return NULL;
	memcpy(buf, name + 6, n - 6);
	buf[n - 6] = '\0';
	return ctl_rpc_find(d, buf);
}

static void ctl_do_rpc(struct lcfibd *d, struct ctl_conn *c, const struct ctl_hdr *h,
		       const char *payload)
{
	const struct ctl_rpc *rpc;
	struct lyd_node *tree = NULL, *op = NULL;
	struct lcfibd_err e = { 0 };
	struct ly_in *in = NULL;
	char *reply = NULL;
	size_t at;
	int ret;

	/* Flagged without a descriptor: as if unflagged (a load opens its path as the peer). */
	if ((h->flags & CTL_RPC_FD) && c->n_fds) {
		c->rpc_fd = c->fds[0];
		memmove(c->fds, c->fds + 1, --c->n_fds * sizeof(c->fds[0]));
	}
	if (!ctl_json_valid(payload, &at)) {
		lcfibd_err_set(&e, CTL_TAG_MALFORMED, NULL, "rpc: the input is not JSON (byte %zu)",
			       at + 1);
		ctl_reply_error(d, c, h->id, &e);
		goto out;
	}
	if (!ctl_rpc_named(d, payload)) {
		lcfibd_err_set(&e, CTL_TAG_UNSUPPORTED, NULL,
			       "rpc: the input names no operation of the lcfib module "
			       "(it is {\"lcfib:NAME\":{...}}, NAME an RPC)");
		ctl_reply_error(d, c, h->id, &e);
		goto out;
	}
	if (ly_in_new_memory(payload, &in) ||
	    lyd_parse_op(d->ly, NULL, in, LYD_JSON, LYD_TYPE_RPC_YANG, &tree, &op) ||
	    lyd_validate_op(tree, NULL, LYD_TYPE_RPC_YANG, NULL)) {
		lcfibd_err_from_ly(&e, d->ly, "rpc");
		ctl_reply_error(d, c, h->id, &e);
		goto out;
	}
	if (!op)
		goto out;
	rpc = ctl_rpc_find(d, LYD_NAME(op));
	if (!(rpc && rpc->read_only) && !ctl_may_edit(d, c, h->id, LYD_NAME(op)))
		goto out;
	if (rpc) {
		ret = rpc->handler(d, c, h->id, op, &reply, &e);
	} else {
		lcfibd_err_set(&e, CTL_TAG_UNSUPPORTED, NULL,
			       "operation %s has no handler in lcfibd", LYD_NAME(op));
		ret = -1;
	}
	if (ret < 0)
		ctl_reply_error(d, c, h->id, &e);
	else if (ret == 0)
		ctl_reply(d, c, h->id, reply);
	free(reply);
out:
	if (c->rpc_fd >= 0) /* passed with a request that does not read files */
		close(c->rpc_fd);
	c->rpc_fd = -1;
	ly_in_free(in, 0);
	lyd_free_all(tree);
}

/* Units per second since @since. */
static uint64_t ctl_rate(uint64_t done, const struct timespec *since)
{
	int64_t us = ctl_us_since(since);

	return us > 0 ? (uint64_t)((double)done * 1e6 / (double)us) : 0;
}

/* A chunk of a streamed file, or its end. */
static void ctl_do_stream(struct lcfibd *d, struct ctl_conn *c, const struct ctl_hdr *h,
			  const uint8_t *payload)
{
	struct lcfibd_err e = { 0 };

	if (!c->stream) {
		ctl_bad_frame(d, c, h->id,
			      "data without a load of '-' or a lookups stream before it", false);
		return;
	}
	if (h->type == CTL_END) {
		uint32_t id = c->stream_id;

		if (c->stream_ops->end(d, c, &e)) {
			ctl_reply_error(d, c, id, &e);
			ctl_conn_resume(d, c);
		}
		return;
	}
	if (c->slen + h->len > CTL_STREAM_MAX || c->slen + h->len > d->max_file_size) {
		char msg[160];

		snprintf(msg, sizeof(msg),
			 "the streamed file is larger than %llu bytes (max-route-file-size)",
			 (unsigned long long)(d->max_file_size < CTL_STREAM_MAX ? d->max_file_size
										: CTL_STREAM_MAX));
		ctl_bad_frame(d, c, c->stream_id, msg, true);
		return;
	}
	if (c->slen + h->len + 1 > c->scap) {
		size_t cap = c->scap ? c->scap : (1u << 20);
		char *p;

		while (cap < c->slen + h->len + 1)
			cap *= 2;
		p = realloc(c->sbuf, cap);
		if (!p) {
			ctl_bad_frame(d, c, c->stream_id, "out of memory for the streamed file",
				      true);
			return;
		}
		c->sbuf = p;
		c->scap = cap;
	}
	memcpy(c->sbuf + c->slen, payload, h->len);
	c->slen += h->len;
	/* Progress every 8 MiB received. */
	if (c->slen - c->last_note >= (8u << 20)) {
		char json[200];

		c->last_note = c->slen;
		snprintf(json, sizeof(json),
			 "{\"lcfib:load-progress\":{\"file\":\"-\",\"phase\":\"receiving\","
			 "\"done\":\"%zu\",\"total\":\"%llu\",\"rate\":\"%llu\"}}",
			 c->slen, (unsigned long long)c->stotal,
			 (unsigned long long)ctl_rate(c->slen, &c->sstart));
		ctl_notify(d, c, c->stream_id, json);
	}
}

/* -------------------------------------------------------- the sink */

void ctl_conn_sink(struct ctl_conn *c, uint32_t id, const struct ctl_sink *s, void *ctx)
{
	c->sink = s;
	c->sink_ctx = ctx;
	c->sink_id = id;
	c->klen = c->koff = 0;
	c->sink_end = false;
}

static void ctl_sink_done(struct ctl_conn *c)
{
	c->sink->free(c->sink_ctx);
	c->sink = NULL;
	c->sink_ctx = NULL;
	c->klen = c->koff = 0;
}

/*
 * Answers more of the data frame at hand (a turn's worth: the sink stops
 * at a bounded answer), and ends the stream when its end frame came and
 * all is answered.
 */
static void ctl_sink_feed(struct lcfibd *d, struct ctl_conn *c)
{
	struct lcfibd_err e = { 0 };

	if (c->koff < c->klen) {
		ssize_t n = c->sink->data(d, c, c->sink_id, c->sink_ctx, c->kbuf + c->koff,
					  c->klen - c->koff, &e);

		if (n < 0) {
			ctl_reply_error(d, c, c->sink_id, &e);
			ctl_sink_done(c);
			return;
		}
		c->koff += (size_t)n;
	}
	if (c->koff == c->klen && c->sink_end) {
		c->sink->end(d, c, c->sink_id, c->sink_ctx);
		ctl_sink_done(c);
	}
}

/* A data frame (copied: the read buffer moves on) or the end of a stream. */
static void ctl_sink_take(struct lcfibd *d, struct ctl_conn *c, const struct ctl_hdr *h,
			  const uint8_t *payload)
{
	if (h->type == CTL_END) {
		c->sink_end = true;
	} else if (h->len) {
		if (h->len > c->kcap) {
			char *p = realloc(c->kbuf, h->len);

			if (!p) {
				ctl_bad_frame(d, c, c->sink_id, "out of memory for the lookups",
					      true);
				return;
			}
			c->kbuf = p;
			c->kcap = h->len;
		}
		memcpy(c->kbuf, payload, h->len);
		c->klen = h->len;
		c->koff = 0;
	}
	ctl_sink_feed(d, c);
}

static void ctl_dispatch(struct lcfibd *d, struct ctl_conn *c, const struct ctl_hdr *h,
			 uint8_t *payload)
{
	/* Text payloads end in a NUL the reader left room for. */
	payload[h->len] = '\0';
	if (h->type != CTL_DATA)
		d->ctl.requests++;
	if ((c->stream || c->sink) && h->type != CTL_DATA && h->type != CTL_END) {
		ctl_bad_frame(d, c, h->id,
			      c->sink ? "a request in the middle of a stream of lookups"
				      : "a request in the middle of a streamed load",
			      true);
		return;
	}
	switch (h->type) {
	case CTL_GET:
		ctl_do_get(d, c, h, (const char *)payload);
		break;
	case CTL_EDIT:
		ctl_do_edit(d, c, h, (const char *)payload);
		break;
	case CTL_RPC:
		ctl_do_rpc(d, c, h, (const char *)payload);
		break;
	case CTL_DATA:
	case CTL_END:
		if (c->sink)
			ctl_sink_take(d, c, h, payload);
		else
			ctl_do_stream(d, c, h, payload);
		break;
	default:
		ctl_bad_frame(d, c, h->id, "a reply type sent as a request", false);
	}
}

/* Serves a turn's whole frames of the read buffer (at most @budget), while nothing waits. */
static void ctl_parse(struct lcfibd *d, struct ctl_conn *c, unsigned int budget)
{
	struct timespec t0;
	size_t off = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (budget && ctl_may_serve(c) && c->rlen - off >= CTL_HDR_LEN &&
	       (c->untimed || ctl_us_since(&t0) < CTL_TURN_US)) {
		struct ctl_hdr h;
		struct errbuf err;

		if (ctl_hdr_decode(c->rbuf + off, CTL_REQ_MAX, &h, &err)) {
			ctl_bad_frame(d, c, h.id, err.msg, true);
			break;
		}
		if (c->rlen - off < CTL_HDR_LEN + h.len) {
			/* Room for the rest and a NUL. */
			if (c->rcap < CTL_HDR_LEN + h.len + 1) {
				uint8_t *p;

				memmove(c->rbuf, c->rbuf + off, c->rlen - off);
				c->rlen -= off;
				off = 0;
				p = realloc(c->rbuf, CTL_HDR_LEN + h.len + 1);
				if (!p) {
					ctl_bad_frame(d, c, h.id, "out of memory", true);
					break;
				}
				c->rbuf = p;
				c->rcap = CTL_HDR_LEN + h.len + 1;
			}
			break;
		}
		/* The payload's NUL goes where the next header starts: save that byte. */
		{
			size_t end = off + CTL_HDR_LEN + h.len;
			uint8_t saved = end < c->rlen ? c->rbuf[end] : 0;

			if (end == c->rcap) {
				uint8_t *p = realloc(c->rbuf, c->rcap + 1);

				if (!p) {
					ctl_bad_frame(d, c, h.id, "out of memory", true);
					break;
				}
				c->rbuf = p;
				c->rcap++;
			}
			ctl_dispatch(d, c, &h, c->rbuf + off + CTL_HDR_LEN);
			if (end < c->rlen)
				c->rbuf[end] = saved;
			off = end;
			budget--;
		}
	}
	memmove(c->rbuf, c->rbuf + off, c->rlen - off);
	c->rlen -= off;
}

/*
 * read() that also takes descriptors passed with the bytes (SCM_RIGHTS):
 * they wait in c->fds for the request that says it has one. More than
 * CTL_CONN_FDS waiting, or a truncated set, is a protocol error: -1 with
 * errno EPROTO (the descriptors are closed).
 */
static ssize_t ctl_conn_recv(struct ctl_conn *c, void *buf, size_t len)
{
	union {
		char buf[CMSG_SPACE(CTL_CONN_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr m = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = sizeof(u.buf),
	};
	bool bad = false;
	ssize_t n = recvmsg(c->fd, &m, MSG_CMSG_CLOEXEC);

	if (n < 0)
		return n;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->n_fds < CTL_CONN_FDS) {
				c->fds[c->n_fds++] = fd;
			} else {
				close(fd);
				bad = true;
			}
		}
	}
	if (bad || (m.msg_flags & MSG_CTRUNC)) {
		errno = EPROTO;
		return -1;
	}
	return n;
}

/* Reads what the socket has (up to a buffer's room), then serves a turn's frames. */
static void ctl_read(struct lcfibd *d, struct ctl_conn *c)
{
	ssize_t n;

	if (c->rcap - c->rlen < 65536) {
		size_t cap = c->rcap ? c->rcap * 2 : 131072;
		uint8_t *p = realloc(c->rbuf, cap);

		if (!p) {
			log_err("out of memory reading from pid %d; closing", (int)c->pid);
			c->dead = true;
			return;
		}
		c->rbuf = p;
		c->rcap = cap;
	}
	do
		n = ctl_conn_recv(c, c->rbuf + c->rlen, c->rcap - c->rlen);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n < 0 && errno == EPROTO) {
		ctl_bad_frame(d, c, 0, "more descriptors passed than requests that take them",
			      true);
		return;
	}
	if (n <= 0) {
		unsigned int more;

		if (c->rlen) {
			d->ctl.bad_frames++;
			if (ctl_log_ok(&d->ctl.log_bad, &more))
				log_warn("control client pid %d left in the middle of a frame (%zu "
					 "bytes; %u more bad frames not logged)",
					 (int)c->pid, c->rlen, more);
		}
		c->dead = true;
		return;
	}
	c->rlen += (size_t)n;
	ctl_parse(d, c, CTL_FRAMES_PER_TURN);
}

static void ctl_conn_event(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct ctl_conn *c = (struct ctl_conn *)s;

	if (events & EPOLLOUT)
		ctl_flush(c);
	/*
	 * The peer closed: nobody will read the replies, so what it sent and
	 * what it asked for go too (a job with the writer finishes unanswered).
	 */
	if (events & (EPOLLHUP | EPOLLERR))
		c->dead = true;
	else if (!c->dead && (events & EPOLLIN) && ctl_may_serve(c))
		ctl_read(d, c);
	ctl_conn_settle(d, c);
}

/* One piece of @c's reply in the making. */
static void ctl_produce(struct lcfibd *d, struct ctl_conn *c)
{
	if (c->prod->more(d, c, c->prod_id, c->prod_ctx) == 0)
		return;
	c->prod->free(c->prod_ctx);
	c->prod = NULL;
	c->prod_ctx = NULL;
}

void ctl_conn_produce(struct ctl_conn *c, uint32_t id, const struct ctl_producer *p, void *ctx)
{
	c->prod = p;
	c->prod_ctx = ctx;
	c->prod_id = id;
}

bool ctl_serve(struct lcfibd *d)
{
	bool more = false;

	for (struct ctl_conn *c = d->conns, *next; c; c = next) {
		next = c->next;
		if (!ctl_conn_ready(c))
			continue;
		if (c->prod)
			ctl_produce(d, c);
		else if (ctl_sink_pending(c))
			ctl_sink_feed(d, c);
		else
			ctl_parse(d, c, CTL_FRAMES_PER_TURN);
		more |= ctl_conn_ready(c);
		ctl_conn_settle(d, c);
	}
	return more;
}

void ctl_tick(struct lcfibd *d)
{
	time_t now = ctl_now();

	for (struct ctl_conn *c = d->conns, *next; c; c = next) {
		unsigned int more;

		next = c->next;
		if (!c->over_since || now - c->over_since < CTL_STALL_S)
			continue;
		d->ctl.dropped++;
		if (ctl_log_ok(&d->ctl.log_dropped, &more))
			log_warn(
				"control client pid %d uid %u left %zu bytes of replies unread for "
				"%d s: dropping it (and %u more not logged)",
				(int)c->pid, (unsigned int)c->uid, ctl_unsent(c), CTL_STALL_S,
				more);
		c->dead = true;
		ctl_conn_settle(d, c);
	}
}

/* -------------------------------------------------------- the stream */

void ctl_conn_set_stream(struct ctl_conn *c, struct writer_job *job, uint64_t size,
			 const struct ctl_stream *ops)
{
	c->stream = job;
	c->stream_ops = ops;
	c->stotal = size;
	clock_gettime(CLOCK_MONOTONIC, &c->sstart);
	c->stream_id = job->req_id;
	c->busy = job;
	c->slen = c->last_note = 0;
}

const struct lcfibd_peer *ctl_conn_peer(const struct ctl_conn *c)
{
	return &c->peer;
}

int ctl_conn_take_fd(struct ctl_conn *c)
{
	int fd = c->rpc_fd;

	c->rpc_fd = -1;
	return fd;
}

void ctl_conn_set_busy(struct ctl_conn *c, struct writer_job *job)
{
	c->busy = job;
}

char *ctl_conn_take_stream(struct ctl_conn *c, size_t *len, struct writer_job **job)
{
	char *buf = c->sbuf;

	*len = c->slen;
	*job = c->stream;
	c->stream = NULL;
	c->sbuf = NULL;
	c->slen = c->scap = 0;
	return buf;
}

void ctl_conn_resume(struct lcfibd *d, struct ctl_conn *c)
{
	c->busy = NULL;
	ctl_conn_settle(d, c); /* its next frames wait for ctl_serve(), in turn */
}

/* ---------------------------------------------------- connections */

/* The event of a connection closed earlier in the same round: nothing to do. */
static void ctl_conn_deaf(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	(void)d;
	(void)s;
	(void)events;
}

static void ctl_conn_close(struct lcfibd *d, struct ctl_conn *c)
{
	struct ctl_conn **pp;

	for (pp = &d->conns; *pp && *pp != c; pp = &(*pp)->next)
		;
	if (!*pp)
		return;
	*pp = c->next;
	if (c->stream) {
		c->stream_ops->abort(c->stream); /* not queued yet: ours to free */
	} else if (c->busy) {
		/* The writer has it: its reply goes nowhere, and a load stops (Ctrl-C). */
		c->busy->conn = NULL;
		uatomic_or(&c->busy->cancel, ROUTEFILE_CANCEL);
	}
	if (c->prod)
		c->prod->free(c->prod_ctx);
	if (c->sink)
		c->sink->free(c->sink_ctx);
	for (unsigned int i = 0; i < c->n_fds; i++)
		close(c->fds[i]);
	peer_free(&c->peer);
	if (c->fd >= 0) {
		epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	d->ctl.clients--;
	log_info("control client pid %d disconnected", (int)c->pid);
	free(c->rbuf);
	free(c->wbuf);
	free(c->sbuf);
	free(c->kbuf);
	c->rbuf = c->wbuf = NULL;
	c->sbuf = NULL;
	c->kbuf = NULL;
	c->src.fn = ctl_conn_deaf;
	c->dead = true; /* never ready, and settling it again does nothing */
	c->next = d->closed;
	d->closed = c;
}

void ctl_reap(struct lcfibd *d)
{
	while (d->closed) {
		struct ctl_conn *c = d->closed;

		d->closed = c->next;
		free(c);
	}
}

/*
 * Whether the peer may change things: root, our own user, or the admin
 * group by the peer's own credentials at connect(): its gid, or one of the
 * supplementary groups the kernel reports (SO_PEERGROUPS). Not the group
 * database: a member's process that dropped its groups (setgroups(0),
 * setpriv --clear-groups) is not in the group any more.
 */
static bool ctl_peer_is_admin(const struct lcfibd *d, const struct lcfibd_peer *p)
{
	if (p->uid == 0 || p->uid == geteuid())
		return true;
	if (!d->has_admin_group)
		return false;
	if (p->gid == d->admin_gid)
		return true;
	for (unsigned int i = 0; i < p->n_groups; i++) {
		if (p->groups[i] == d->admin_gid)
			return true;
	}
	return false;
}

/* Whether a peer of @uid may take a slot (see CTL_ADMIN_SLOTS); @why says why not. */
static bool ctl_slot_free(const struct lcfibd *d, uid_t uid, bool admin, const char **why)
{
	unsigned int same = 0;

	*why = "all connection slots are taken";
	if (d->ctl.clients >= CTL_CLIENTS_MAX)
		return false;
	if (admin)
		return true;
	*why = "the slots left are kept for administrators";
	if (d->ctl.clients >= CTL_CLIENTS_MAX - CTL_ADMIN_SLOTS)
		return false;
	for (const struct ctl_conn *c = d->conns; c; c = c->next)
		same += c->uid == uid;
	*why = "this user has as many connections as a read-only user may";
	return same < CTL_CLIENTS_PER_UID;
}

/* Tells a peer why it gets no slot (one error frame, id 0), counts, logs now and then. */
static void ctl_refuse(struct lcfibd *d, int fd, const struct lcfibd_peer *cr, const char *why)
{
	struct lcfibd_err e = { 0 };
	uint8_t hdr[CTL_HDR_LEN];
	struct ctl_hdr h = { .version = CTL_VERSION, .type = CTL_ERROR };
	unsigned int more;
	char *json;

	d->ctl.refused++;
	if (ctl_log_ok(&d->ctl.log_refused, &more))
		log_warn("control socket: refused pid %d uid %u: %s (%u clients; %u more refusals "
			 "not logged)",
			 (int)cr->pid, (unsigned int)cr->uid, why, d->ctl.clients, more);
	lcfibd_err_set(&e, CTL_TAG_RESOURCE, NULL, "lcfibd refused the connection: %s (%u clients)",
		       why, d->ctl.clients);
	json = ctl_errors_json(&e, 1);
	if (json) {
		struct iovec iov[2] = { { hdr, sizeof(hdr) }, { json, strlen(json) } };
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };

		h.len = (uint32_t)iov[1].iov_len;
		ctl_hdr_encode(&h, hdr);
		/* A new socket's buffer takes it whole, or the peer misses the reason. */
		if (sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			log_debug("control socket: telling pid %d why: %m", (int)cr->pid);
		free(json);
	}
	close(fd);
}

static void ctl_accept(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	(void)s;
	(void)events;
	for (;;) {
		int fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN };
		struct lcfibd_peer peer;
		const char *why;
		struct ctl_conn *c;
		bool admin;
		int ret;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				log_warn("accept on the control socket: %m");
			return;
		}
		ret = peer_get(fd, &peer);
		if (ret) {
			log_warn("control socket: cannot read a client's credentials: %s",
				 strerror(-ret));
			close(fd);
			continue;
		}
		admin = ctl_peer_is_admin(d, &peer);
		if (!ctl_slot_free(d, peer.uid, admin, &why)) {
			ctl_refuse(d, fd, &peer, why);
			peer_free(&peer);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			log_warn("control socket: cannot take a client: %m");
			peer_free(&peer);
			close(fd);
			continue;
		}
		c->src.fn = ctl_conn_event;
		c->fd = fd;
		c->rpc_fd = -1;
		c->peer = peer;
		c->pid = peer.pid;
		c->uid = peer.uid;
		c->admin = admin;
		ev.data.ptr = c;
		if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			log_warn("control socket: epoll: %m");
			peer_free(&c->peer);
			free(c);
			close(fd);
			continue;
		}
		c->next = d->conns;
		d->conns = c;
		d->ctl.clients++;
		log_info("control client pid %d uid %u connected (%s)", (int)c->pid,
			 (unsigned int)c->uid, c->admin ? "may edit" : "read only");
	}
}

void ctl_serve_bytes(struct lcfibd *d, bool admin, const uint8_t *buf, size_t len)
{
	struct ctl_conn *c = calloc(1, sizeof(*c)), *i;

	if (!c || !(c->rbuf = malloc(len + 1))) {
		free(c);
		return;
	}
	memcpy(c->rbuf, buf, len);
	c->rlen = len;
	c->rcap = len + 1;
	c->fd = -1;
	c->rpc_fd = -1;
	c->pid = getpid();
	c->uid = admin ? 0 : 65534;
	c->peer.pid = c->pid;
	c->peer.uid = c->uid;
	c->peer.gid = c->uid;
	c->admin = admin;
	c->untimed = true;
	c->next = d->conns;
	d->conns = c;
	d->ctl.clients++;
	while (ctl_serve(d))
		;
	for (i = d->conns; i && i != c; i = i->next)
		;
	if (i)
		ctl_conn_close(d, c);
}

int ctl_listen(struct lcfibd *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static struct lcfibd_source src_listen = { ctl_accept };
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &src_listen };
	struct group *g = NULL;
	mode_t old;
	int fd;

	if (strlen(d->socket_path) >= sizeof(sa.sun_path)) {
		log_err("socket path %s is too long", d->socket_path);
		return -1;
	}
	if (d->socket_group && !(g = getgrnam(d->socket_group))) {
		log_err("socket group %s: no such group", d->socket_group);
		return -1;
	}
	strcpy(sa.sun_path, d->socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("control socket: %m");
		return -1;
	}
	/* A stale socket from a daemon that died; a live one answers connect(). */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		log_err("another lcfibd is listening on %s", d->socket_path);
		goto fail;
	}
	unlink(d->socket_path);
	old = umask(0117); /* srw-rw----: never world-accessible */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		umask(old);
		log_err("bind %s: %m", d->socket_path);
		goto fail;
	}
	umask(old);
	if (g && chown(d->socket_path, (uid_t)-1, g->gr_gid))
		log_warn("chown %s to group %s: %m", d->socket_path, d->socket_group);
	/* The group must reach the socket: its directory too, when it is ours. */
	if (g && d->socket_dir_ours) {
		char dir[sizeof(sa.sun_path)], *slash;

		snprintf(dir, sizeof(dir), "%s", d->socket_path);
		slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			if (chown(dir, (uid_t)-1, g->gr_gid) || chmod(dir, 0750))
				log_warn("chown %s to group %s: %m", dir, d->socket_group);
		}
	}
	if (listen(fd, 64) || epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		log_err("listen %s: %m", d->socket_path);
		goto fail;
	}
	d->listen_fd = fd;
	return 0;
fail:
	close(fd);
	return -1;
}

void ctl_close_all(struct lcfibd *d)
{
	while (d->conns)
		ctl_conn_close(d, d->conns);
	ctl_reap(d);
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		unlink(d->socket_path);
		d->listen_fd = -1;
	}
}

void ctl_progress(struct lcfibd *d)
{
	struct ingest_state in;
	char json[600];

	ingest_get(d->ingest, &in);
	if (!in.phase)
		return;
	for (struct ctl_conn *c = d->conns, *next; c; c = next) {
		char *f = NULL;
		size_t len = 0, cap = 0;

		next = c->next;
		if (!in.job || c->busy != in.job || c->stream)
			continue;
		ctl_json_str(&f, &len, &cap, in.file);
		snprintf(json, sizeof(json),
			 "{\"lcfib:load-progress\":{\"file\":%s,\"phase\":\"%s\",\"done\":\"%llu\","
			 "\"total\":\"%llu\",\"rate\":\"%llu\"}}",
			 f ? f : "\"\"", in.phase, (unsigned long long)in.done,
			 (unsigned long long)in.total, (unsigned long long)in.rate);
		free(f);
		ctl_notify(d, c, c->busy->req_id, json);
		ctl_conn_settle(d, c);
	}
}
