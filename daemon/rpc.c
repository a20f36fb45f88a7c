/* SPDX-License-Identifier: MIT */
/*
 * The RPCs of the lcfib module. Lookups and listings run on the loop
 * thread as RCU readers; everything that changes the FIB becomes a writer
 * job whose reply is sent when it is done.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/cfg.h"
#include "daemon/answer.h"
#include "daemon/ctl.h"
#include "daemon/dcache.h"
#include "daemon/err.h"
#include "daemon/feed.h"
#include "daemon/feed_file.h"
#include "daemon/ingest.h"
#include "daemon/lcfibd.h"
#include "daemon/log.h"
#include "daemon/lookups.h"
#include "daemon/peer.h"
#include "daemon/rpc.h"
#include "daemon/state.h"
#include "daemon/writer.h"
#include "lib/ctl.h"
#include "lib/ifname.h"
#include "lib/names.h"
#include "lib/routefile.h"

#define RPC_BAD_LINES_MAX 1000 /* bad lines listed in a reply */

/* ------------------------------------------------------------ values */

static const char *rpc_value(const struct lyd_node *op, const char *name)
{
	struct lyd_node *n = NULL;

	if (lyd_find_path(op, name, 0, &n) != LY_SUCCESS || !n)
		return NULL;
	return lyd_get_value(n);
}

static uint64_t rpc_u64(const struct lyd_node *op, const char *name, uint64_t dflt)
{
	const char *v = rpc_value(op, name);

	return v ? strtoull(v, NULL, 10) : dflt;
}

static bool rpc_bool(const struct lyd_node *op, const char *name)
{
	const char *v = rpc_value(op, name);

	return v && strcmp(v, "true") == 0;
}

/* A table-id value: a number or a name (the schema checked it); none is main. */
static uint32_t rpc_table(const char *v)
{
	uint32_t id = FIB_TABLE_MAIN;

	if (v)
		names_parse_str(&names_table, v, &id);
	return id;
}

enum rpc_format { RPC_JSON, RPC_TEXT, RPC_JSON_LINES };

/* The format leaf of routes (absent: json). */
static enum rpc_format rpc_format(const char *v)
{
	if (v && !strcmp(v, "text"))
		return RPC_TEXT;
	return v && !strcmp(v, "json-lines") ? RPC_JSON_LINES : RPC_JSON;
}

static int rpc_family(const char *v)
{
	if (!v)
		return AF_UNSPEC;
	return strcmp(v, "ipv6") == 0 ? AF_INET6 : AF_INET;
}

/* ------------------------------------------------------- route output */

static int rpc_term(struct lyd_node *parent, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int rpc_term(struct lyd_node *parent, const char *name, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return lyd_new_term(parent, NULL, name, buf, 1, NULL) == LY_SUCCESS ? 0 : -1;
}

/* A route copied out of the FIB, as the members of a libyang reply (@parent). */
static int rpc_route_out(struct lyd_node *parent, const struct answer_route *r)
{
	char buf[ADDR_STRLEN];
	int ret = 0;

	ret |= rpc_term(parent, "prefix", "%s", addr_prefix_format(&r->p, buf, sizeof(buf)));
	ret |= rpc_term(parent, "table", "%u", r->table);
	ret |= rpc_term(parent, "type", "%s", fib_rtype_name(r->type));
	ret |= rpc_term(parent, "protocol", "%u", r->proto);
	ret |= rpc_term(parent, "scope", "%u", r->scope);
	ret |= rpc_term(parent, "metric", "%u", r->metric);
	if (r->nh_id)
		ret |= rpc_term(parent, "nexthop-id", "%u", r->nh_id);
	for (unsigned int i = 0; i < r->n_paths && !ret; i++) {
		const struct nh_path *p = &r->path[i];
		struct lyd_node *nh;
		char name[IF_NAMESIZE];

		if (lyd_new_list(parent, NULL, "nexthop", 1, &nh) != LY_SUCCESS)
			return -1;
		if (p->gw_family) {
			inet_ntop(p->gw_family, &p->gw, buf, sizeof(buf));
			ret |= rpc_term(nh, "gateway", "%s", buf);
		}
		if (p->ifindex)
			ret |= rpc_term(nh, "interface", "%s", ifname_name(p->ifindex, name));
		if (r->n_paths > 1)
			ret |= rpc_term(nh, "weight", "%u", p->weight);
		if (answer_path_flags(p, buf, sizeof(buf)))
			ret |= rpc_term(nh, "flags", "%s", buf);
		if (p->flags & NH_F_SRC)
			ret |= rpc_term(nh, "source", "%s",
					answer_path_src(r, p, buf, sizeof(buf)));
	}
	return ret;
}

/* A reply as libyang prints it, onto an answer_buf (doubled as it grows). */
static ssize_t rpc_out_write(void *ctx, const void *data, size_t n)
{
	struct answer_buf *o = ctx;

	answer_mem(o, data, n);
	return o->nomem ? -1 : (ssize_t)n;
}

/*
 * Prints @op as the reply. Not lyd_print_mem(): its buffer grows by what
 * each write needs, and a realloc that moves (always, under ASan) makes
 * a reply of 30k routes cost minutes.
 */
static int rpc_print(struct lcfibd *d, struct lyd_node *op, char **reply, struct lcfibd_err *e)
{
	struct answer_buf o = { 0 };

	if (lyd_print_clb(rpc_out_write, &o, op, LYD_JSON, LYD_PRINT_SHRINK) != LY_SUCCESS ||
	    o.nomem || !o.s) {
		free(o.s);
		lcfibd_err_from_ly(e, d->ly, "reply");
		return -1;
	}
	*reply = o.s;
	return 0;
}

/* Starts a reply tree for the RPC @name. */
static struct lyd_node *rpc_reply_new(struct lcfibd *d, const char *name, struct lcfibd_err *e)
{
	struct lyd_node *out = NULL;
	char path[64];

	snprintf(path, sizeof(path), "/lcfib:%s", name);
	if (lyd_new_path(NULL, d->ly, path, NULL, 0, &out) != LY_SUCCESS) {
		lcfibd_err_from_ly(e, d->ly, name);
		return NULL;
	}
	return out;
}

/* --------------------------------------------------------------- lookup */

static int rpc_lookup(struct lcfibd *d, const struct lyd_node *op, char **reply,
		      struct lcfibd_err *e)
{
	const char *given = rpc_value(op, "table");
	uint32_t table = rpc_table(given);
	struct nh_path paths[NH_MAX_PATHS];
	struct answer_route r;
	struct addr_prefix p;
	struct errbuf err;
	struct lyd_node *out;
	struct addr a;
	char buf[ADDR_STRLEN];
	bool found = false;
	int ret;

	if (addr_parse(rpc_value(op, "address"), AF_UNSPEC, &a, &err)) {
		lcfibd_err_set(e, CTL_TAG_INVALID, "/lcfib:lookup/address", "%s", err.msg);
		return -1;
	}
	fib_read_lock();
	{
		/* No table: the kernel's default rules (local, main, default), as `ip route get`. */
		struct fib_route cached;
		const struct fib_route *fr =
			given ? dcache_match_rcu(d, table, &a, &p, &cached)
			      : dcache_match_rules_rcu(d, &a, &p, &table, &cached);

		if (fr) {
			answer_route_copy_rcu(&r, table, &p, fr, paths);
			found = true;
		}
	}
	fib_read_unlock();
	out = rpc_reply_new(d, "lookup", e);
	if (!out)
		return -1;
	ret = rpc_term(out, "address", "%s", addr_format(&a, buf, sizeof(buf)));
	ret |= rpc_term(out, "found", "%s", found ? "true" : "false");
	if (found && !ret)
		ret = rpc_route_out(out, &r);
	if (!ret)
		ret = rpc_print(d, out, reply, e);
	else
		lcfibd_err_from_ly(e, d->ly, "lookup reply");
	lyd_free_all(out);
	return ret;
}

/* --------------------------------------------------------------- routes */

/*
 * Routes per piece of a listing. Each piece is walked in a read-side
 * section of its own (about 0.2 ms), printed outside it, and sent once
 * the client has read most of the last one: a whole table never stretches
 * a grace period, nor takes more than a piece's memory.
 */
#define RPC_ROUTES_PIECE 1024

/* A listing in progress: what it lists, where it goes on, the piece at hand. */
struct rpc_walk {
	struct addr_prefix within;
	bool filter;
	uint32_t table;
	int family; /* AF_UNSPEC: IPv4, then IPv6 */
	int fam;    /* the family being walked; 0 when done */
	struct fib_walk_pos pos;
	uint64_t limit, n;
	bool truncated, opened; /* opened: a piece went out */
	/* filters: protocol (-1: any), a path through ifindex (0: any), type (0: any) */
	int proto;
	uint32_t ifindex;
	uint8_t type;
	unsigned int visited; /* routes this piece looked at, matching or not */
	/* summary: counts instead of routes */
	bool summary;
	uint64_t sum_routes, sum_proto[256], sum_plen[2][129];
	struct answer_route *r; /* this piece's routes */
	size_t n_r, cap;
	struct nh_path *paths; /* their paths, one after the other */
	size_t n_paths, cap_paths;
	enum rpc_format format;
	struct answer_buf out; /* this piece's JSON or lines */
};

static bool rpc_within(const struct addr_prefix *p, const struct addr_prefix *w)
{
	struct addr a = p->a;

	if (p->a.family != w->a.family || p->plen < w->plen)
		return false;
	addr_mask(&a, w->plen);
	return memcmp(&a.b, &w->a.b, addr_bits(a.family) / 8) == 0;
}

/* Whether @p lies after the block @w in a walk (which goes in address order). */
static bool rpc_past(const struct addr_prefix *p, const struct addr_prefix *w)
{
	struct addr a = p->a;

	if (p->a.family != w->a.family)
		return false;
	addr_mask(&a, w->plen);
	return memcmp(&a.b, &w->a.b, addr_bits(a.family) / 8) > 0;
}

/* Whether the route copied to @r passes the listing's filters. */
static bool rpc_walk_match(const struct rpc_walk *w, const struct answer_route *r)
{
	bool dev = !w->ifindex;

	if ((w->proto >= 0 && r->proto != w->proto) || (w->type && r->type != w->type))
		return false;
	for (unsigned int i = 0; !dev && i < r->n_paths; i++)
		dev = r->path[i].ifindex == w->ifindex;
	return dev;
}

/* 1 stops the listing: past the prefix, or at the limit. */
static int rpc_walk_fn(void *ctx, const struct addr_prefix *p, const struct fib_route *fr)
{
	struct rpc_walk *w = ctx;
	struct answer_route *o;

	w->visited++;
	if (w->filter && !rpc_within(p, &w->within))
		return rpc_past(p, &w->within) ? 1 : 0; /* nothing within comes later */
	if (w->n_r == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 256;
		struct answer_route *r = realloc(w->r, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		w->r = r;
		w->cap = cap;
	}
	if (w->cap_paths - w->n_paths < NH_MAX_PATHS) {
		size_t cap = w->cap_paths ? w->cap_paths * 2 : 4 * NH_MAX_PATHS;
		struct nh_path *paths = realloc(w->paths, cap * sizeof(*paths));

		if (!paths)
			return -ENOMEM;
		w->paths = paths;
		w->cap_paths = cap;
	}
	/* copied first, committed only if it matches (and fits under the limit) */
	o = &w->r[w->n_r];
	answer_route_copy_rcu(o, w->table, p, fr, w->paths + w->n_paths);
	if (!rpc_walk_match(w, o))
		return 0;
	if (w->summary) {
		w->sum_routes++;
		w->sum_proto[o->proto]++;
		w->sum_plen[p->a.family == AF_INET6][p->plen]++;
		return 0;
	}
	if (w->n == w->limit) {
		w->truncated = true;
		return 1;
	}
	o->path_off = w->n_paths;
	w->n_paths += o->n_paths;
	w->n_r++;
	w->n++;
	return 0;
}

/* The next family to walk, from its start (or the prefix's). */
static void rpc_walk_family(struct rpc_walk *w, int fam)
{
	w->fam = fam;
	memset(&w->pos, 0, sizeof(w->pos));
	if (w->filter)
		w->pos.from = w->within.a;
}

/* Walks the next piece in one read-side section: 1 when the listing is complete, or -ENOMEM. */
static int rpc_walk_piece(struct lcfibd *d, struct rpc_walk *w)
{
	int ret = 0;

	w->n_r = w->n_paths = 0;
	w->visited = 0;
	fib_read_lock();
	/* a piece ends after so many routes looked at, however few matched */
	while (w->fam && !ret && w->visited < RPC_ROUTES_PIECE) {
		const struct fib_table *tb = fib_table_get_rcu(d->fib, w->table, w->fam);
		int next = w->fam == AF_INET && w->family == AF_UNSPEC ? AF_INET6 : 0;

		if (tb)
			ret = fib_walk_from_rcu(tb, &w->pos, RPC_ROUTES_PIECE - w->visited,
						rpc_walk_fn, w);
		if (!ret && (!tb || w->pos.done))
			rpc_walk_family(w, next);
	}
	fib_read_unlock();
	return ret ? ret : !w->fam;
}

/* The summary's reply: {"lcfib:routes":{"summary":{...},"truncated":false}}. */
static void rpc_summary_json(struct rpc_walk *w)
{
	char buf[128];
	const char *sep = "";

	w->out.len = 0;
	snprintf(buf, sizeof(buf), "{\"lcfib:routes\":{\"summary\":{\"routes\":\"%" PRIu64 "\"",
		 w->sum_routes);
	answer_raw(&w->out, buf);
	for (unsigned int i = 0; i < 256; i++) {
		if (!w->sum_proto[i])
			continue;
		snprintf(buf, sizeof(buf), "%s{\"protocol\":%u,\"routes\":\"%" PRIu64 "\"}",
			 *sep ? sep : ",\"protocol\":[", i, w->sum_proto[i]);
		answer_raw(&w->out, buf);
		sep = ",";
	}
	if (*sep)
		answer_raw(&w->out, "]");
	sep = "";
	for (unsigned int f = 0; f < 2; f++) {
		for (unsigned int l = 0; l <= 128; l++) {
			if (!w->sum_plen[f][l])
				continue;
			snprintf(buf, sizeof(buf),
				 "%s{\"family\":\"%s\",\"length\":%u,\"routes\":\"%" PRIu64 "\"}",
				 *sep ? sep : ",\"prefix-length\":[", f ? "ipv6" : "ipv4", l,
				 w->sum_plen[f][l]);
			answer_raw(&w->out, buf);
			sep = ",";
		}
	}
	if (*sep)
		answer_raw(&w->out, "]");
	answer_raw(&w->out, "},\"truncated\":false}}");
}

/*
 * This piece's routes: in the reply's JSON ({"lcfib:routes":{"route":[
 * first, then routes; lib/ctl.h: the pieces concatenated are the reply),
 * or as lines of their own.
 */
static void rpc_piece_out(struct rpc_walk *w)
{
	uint64_t first = w->n - w->n_r + 1;
	char head[64];

	w->out.len = 0;
	for (size_t i = 0; i < w->n_r; i++) {
		const struct answer_route *r = &w->r[i];

		w->r[i].path = w->paths + w->r[i].path_off; /* the array has stopped moving */
		if (w->format == RPC_TEXT) {
			answer_route_text(&w->out, r);
			continue;
		}
		snprintf(head, sizeof(head), "%s{\"index\":%" PRIu64 ",",
			 w->format == RPC_JSON_LINES ? "" :
			 i || w->opened		     ? "," :
						       "{\"lcfib:routes\":{\"route\":[",
			 first + i);
		answer_route_json(&w->out, head, r);
		if (w->format == RPC_JSON_LINES)
			answer_raw(&w->out, "\n");
	}
	w->opened |= w->n_r > 0;
}

/* The end of the reply: the JSON's last piece, or the output after the lines. */
static void rpc_piece_close(struct rpc_walk *w)
{
	char tail[96];

	if (w->format != RPC_JSON) {
		snprintf(tail, sizeof(tail),
			 "{\"lcfib:routes\":{\"truncated\":%s,\"listed\":\"%" PRIu64 "\"}}",
			 w->truncated ? "true" : "false", w->n);
		w->out.len = 0;
		answer_raw(&w->out, tail);
		return;
	}
	answer_raw(&w->out, w->opened ? "]," : "{\"lcfib:routes\":{");
	answer_raw(&w->out, w->truncated ? "\"truncated\":true}}" : "\"truncated\":false}}");
}

static int rpc_routes_more(struct lcfibd *d, struct ctl_conn *c, uint32_t id, void *ctx)
{
	struct rpc_walk *w = ctx;
	int end = rpc_walk_piece(d, w);

	/* A summary sends nothing until done; each piece is a read-side section of its own. */
	while (w->summary && !end)
		end = rpc_walk_piece(d, w);
	if (w->summary && end > 0)
		rpc_summary_json(w);
	else if (end >= 0)
		rpc_piece_out(w);
	if (end < 0 || w->out.nomem) {
		struct lcfibd_err e = { 0 };

		lcfibd_err_set(&e, CTL_TAG_FAILED, NULL, "out of memory listing routes");
		ctl_reply_error(d, c, id, &e);
		return 1;
	}
	if (w->summary) {
		ctl_reply(d, c, id, w->out.s);
		return 1;
	}
	if (w->format != RPC_JSON && w->out.len)
		ctl_reply_lines(d, c, id, w->out.s, w->out.len);
	if (!end) {
		if (w->format == RPC_JSON)
			ctl_reply_part(d, c, id, w->out.s, w->out.len);
		return 0;
	}
	rpc_piece_close(w);
	ctl_reply(d, c, id, w->out.s);
	return 1;
}

static void rpc_routes_free(void *ctx)
{
	struct rpc_walk *w = ctx;

	free(w->r);
	free(w->paths);
	free(w->out.s);
	free(w);
}

static const struct ctl_producer rpc_routes_producer = { rpc_routes_more, rpc_routes_free };

static int rpc_routes(struct ctl_conn *c, uint32_t id, const struct lyd_node *op,
		      struct lcfibd_err *e)
{
	const char *prefix = rpc_value(op, "prefix");
	struct rpc_walk *w = calloc(1, sizeof(*w));
	struct errbuf err;

	if (!w) {
		lcfibd_err_set(e, CTL_TAG_FAILED, NULL, "out of memory listing routes");
		return -1;
	}
	w->table = rpc_table(rpc_value(op, "table"));
	w->family = rpc_family(rpc_value(op, "family"));
	w->limit = rpc_u64(op, "limit", 1000);
	w->proto = rpc_value(op, "protocol") ? (int)rpc_u64(op, "protocol", 0) : -1;
	w->summary = rpc_value(op, "summary") && !strcmp(rpc_value(op, "summary"), "true");
	w->format = rpc_format(rpc_value(op, "format"));
	if (rpc_value(op, "type") && fib_rtype_parse(rpc_value(op, "type"), &w->type)) {
		lcfibd_err_set(e, CTL_TAG_INVALID, "/lcfib:routes/type", "type '%s' is unknown",
			       rpc_value(op, "type"));
		free(w);
		return -1;
	}
	if (rpc_value(op, "interface") &&
	    ifname_resolve(rpc_value(op, "interface"), &w->ifindex, &err)) {
		lcfibd_err_set(e, CTL_TAG_INVALID, "/lcfib:routes/interface", "%s", err.msg);
		free(w);
		return -1;
	}
	if (prefix) {
		if (addr_parse_prefix(prefix, AF_UNSPEC, &w->within, &err)) {
			lcfibd_err_set(e, CTL_TAG_INVALID, "/lcfib:routes/prefix", "%s", err.msg);
			free(w);
			return -1;
		}
		w->filter = true;
		w->family = w->within.a.family;
	}
	rpc_walk_family(w, w->family == AF_UNSPEC ? AF_INET : w->family);
	ctl_conn_produce(c, id, &rpc_routes_producer, w);
	return 1;
}

/* ------------------------------------------------------- writer jobs */

enum rpc_job_kind { RPC_JOB_FLUSH, RPC_JOB_ROUTE };

/* A flush or a route's add or delete; a load is a feed_file_job. */
struct rpc_job {
	struct writer_job job; /* first */
	enum rpc_job_kind kind;
	int ret;
	struct errbuf err;
	/* flush */
	uint32_t table;
	int family;
	uint64_t removed;
	/* route-add / route-delete */
	struct routefile_route rt;
};

static struct rpc_job *rpc_job_new(enum rpc_job_kind kind, struct ctl_conn *c, uint32_t id,
				   void (*run)(struct lcfibd *, struct writer_job *),
				   void (*done)(struct lcfibd *, struct writer_job *))
{
	struct rpc_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->kind = kind;
	j->job.conn = c;
	j->job.req_id = id;
	j->job.run = run;
	j->job.done = done;
	return j;
}

/* Queues @j; its client's later requests wait for the reply. */
static void rpc_submit(struct lcfibd *d, struct writer_job *j)
{
	if (j->conn)
		ctl_conn_set_busy(j->conn, j);
	writer_submit(d->writer, j);
}

static void rpc_job_free(struct rpc_job *j)
{
	free(j);
}

/* Replies with the job's error message, or with @json. */
static void rpc_job_reply(struct lcfibd *d, struct rpc_job *j, const char *tag, const char *json)
{
	struct lcfibd_err e = { 0 };

	if (j->ret) {
		lcfibd_err_set(&e, tag, NULL, "%s", j->err.msg);
		ctl_reply_error(d, j->job.conn, j->job.req_id, &e);
	} else {
		ctl_reply(d, j->job.conn, j->job.req_id, json);
	}
	if (j->job.conn)
		ctl_conn_resume(d, j->job.conn);
}

/* flush */

static void rpc_flush_run(struct lcfibd *d, struct writer_job *wj)
{
	struct rpc_job *j = (struct rpc_job *)wj;
	struct fib_state before, after;

	fib_get_state(d->fib, &before);
	j->ret = fib_table_flush(d->fib, j->table, j->family);
	fib_get_state(d->fib, &after);
	j->removed = before.routes4 + before.routes6 - after.routes4 - after.routes6;
	/* Out of memory part way (fib.h): say how far it got; a second flush goes on. */
	if (j->ret) {
		char what[32] = "all tables";

		if (j->table)
			snprintf(what, sizeof(what), "table %u", j->table);
		err_set(&j->err, "flush of %s stopped after %llu routes: %s", what,
			(unsigned long long)j->removed, strerror(-j->ret));
	}
	ingest_count(d->ingest, j->removed, 0);
}

static void rpc_flush_done(struct lcfibd *d, struct writer_job *wj)
{
	struct rpc_job *j = (struct rpc_job *)wj;
	char json[128];

	snprintf(json, sizeof(json), "{\"lcfib:flush\":{\"removed\":\"%llu\"}}",
		 (unsigned long long)j->removed);
	if (!j->ret)
		log_notice("flushed %llu routes of %s", (unsigned long long)j->removed,
			   j->table ? "one table" : "all tables");
	rpc_job_reply(d, j, CTL_TAG_FAILED, json);
	rpc_job_free(j);
}

static int rpc_flush(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const struct lyd_node *op,
		     struct lcfibd_err *e)
{
	struct rpc_job *j = rpc_job_new(RPC_JOB_FLUSH, c, id, rpc_flush_run, rpc_flush_done);
	const char *t = rpc_value(op, "table");

	if (!j) {
		lcfibd_err_set(e, CTL_TAG_FAILED, NULL, "out of memory");
		return -1;
	}
	j->table = t && strcmp(t, "all") == 0 ? 0 : rpc_table(t);
	j->family = rpc_family(rpc_value(op, "family"));
	rpc_submit(d, &j->job);
	return 1;
}

/* route-add, route-delete */

static void rpc_route_run(struct lcfibd *d, struct writer_job *wj)
{
	struct rpc_job *j = (struct rpc_job *)wj;

	if (j->rt.op == ROUTEFILE_DEL)
		j->ret = fib_route_del(d->fib, &j->rt.rc, &j->err);
	else if (!(j->ret = feed_claim(d, &j->rt.rc, &j->err)))
		j->ret = fib_route_add(d->fib, &j->rt.rc, &j->err);
	ingest_count(d->ingest, !j->ret, !!j->ret);
	if (j->ret)
		ingest_set_error(d->ingest, j->err.msg);
}

static void rpc_route_done(struct lcfibd *d, struct writer_job *wj)
{
	struct rpc_job *j = (struct rpc_job *)wj;

	rpc_job_reply(d, j, CTL_TAG_FAILED, NULL);
	rpc_job_free(j);
}

/* The schema's operation (add when none) as its FIB_F_* flags. */
static unsigned int rpc_operation_flags(const char *op)
{
	uint32_t flags = FIB_F_CREATE | FIB_F_EXCL;

	if (op)
		names_lookup(&names_route_op, op, strlen(op), &flags);
	return flags;
}

static int rpc_path_in(const struct lyd_node *nh, struct nh_path *p, unsigned int n_paths,
		       struct lcfibd_err *e)
{
	const char *gw = rpc_value(nh, "gateway"), *dev = rpc_value(nh, "interface");
	const char *w = rpc_value(nh, "weight");
	struct errbuf err;
	struct addr a;

	memset(p, 0, sizeof(*p));
	p->weight = (uint16_t)(w ? atoi(w) : 1);
	if (gw) {
		if (addr_parse(gw, AF_UNSPEC, &a, &err))
			goto bad;
		p->gw_family = a.family;
		memcpy(&p->gw, a.b, a.family == AF_INET ? 4 : 16);
	}
	if (dev && ifname_resolve(dev, &p->ifindex, &err))
		goto bad;
	if (!gw && !dev) {
		lcfibd_err_set(e, CTL_TAG_INVALID, NULL,
			       "nexthop %u has neither gateway nor interface", n_paths + 1);
		return -1;
	}
	return 0;
bad:
	lcfibd_err_set(e, CTL_TAG_INVALID, NULL, "nexthop %u: %s", n_paths + 1, err.msg);
	return -1;
}

/*
 * The family to parse the prefix in: its own (AF_UNSPEC), but that of
 * "default" is its first gateway's, else IPv4 (as iproute2 does). Not the
 * gateway's for any prefix: an IPv6 delete or blackhole names none.
 */
static int rpc_default_family(const struct lyd_node *op)
{
	const char *p = rpc_value(op, "prefix"), *gw = rpc_value(op, "nexthop[1]/gateway");

	if (p && strcmp(p, "default") != 0 && strcmp(p, "any") != 0 && strcmp(p, "all") != 0)
		return AF_UNSPEC;
	return gw && strchr(gw, ':') ? AF_INET6 : AF_INET;
}

static int rpc_route_in(const struct lyd_node *op, bool del, struct routefile_route *rt,
			struct lcfibd_err *e)
{
	struct fib_rcfg *rc = &rt->rc;
	const char *type = rpc_value(op, "type");
	struct lyd_node *nh;
	struct errbuf err;

	memset(rt, 0, sizeof(*rt));
	rt->op = del ? ROUTEFILE_DEL : ROUTEFILE_ADD;
	if (addr_parse_prefix(rpc_value(op, "prefix"), rpc_default_family(op), &rc->dst, &err)) {
		char path[64];

		snprintf(path, sizeof(path), "/lcfib:%s/prefix", LYD_NAME(op));
		lcfibd_err_set(e, CTL_TAG_INVALID, path, "prefix: %s", err.msg);
		return -1;
	}
	rc->table = rpc_table(rpc_value(op, "table"));
	if (type && fib_rtype_parse(type, &rc->type)) {
		lcfibd_err_set(e, CTL_TAG_INVALID, NULL, "type '%s' is unknown", type);
		return -1;
	}
	rc->proto = (uint8_t)rpc_u64(op, "protocol", del ? 0 : ROUTEFILE_PROTO_BOOT);
	rc->scope = (uint8_t)rpc_u64(op, "scope", 0);
	rc->metric = (uint32_t)rpc_u64(op, "metric", 0);
	/* As the kernel gives it to `ip -6 route add`: 0 is 1024; a delete's 0 is any metric. */
	if (!del && rc->dst.a.family == AF_INET6 && !rc->metric)
		rc->metric = ROUTEFILE_METRIC6;
	if (!del)
		rc->flags = rpc_operation_flags(rpc_value(op, "operation"));
	LY_LIST_FOR(lyd_child(op), nh)
	{
		if (strcmp(LYD_NAME(nh), "nexthop") != 0)
			continue;
		if (rc->n_paths == NH_MAX_PATHS ||
		    rpc_path_in(nh, &rt->paths[rc->n_paths], rc->n_paths, e))
			return -1;
		rc->n_paths++;
	}
	rc->paths = rt->paths;
	if (!del && !rc->type)
		rc->type = rc->n_paths ? FIB_RT_UNICAST : FIB_RT_BLACKHOLE;
	return 0;
}

static int rpc_route(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const struct lyd_node *op,
		     bool del, struct lcfibd_err *e)
{
	struct rpc_job *j = rpc_job_new(RPC_JOB_ROUTE, c, id, rpc_route_run, rpc_route_done);

	if (!j) {
		lcfibd_err_set(e, CTL_TAG_FAILED, NULL, "out of memory");
		return -1;
	}
	if (rpc_route_in(op, del, &j->rt, e)) {
		rpc_job_free(j);
		return -1;
	}
	j->rt.rc.paths = j->rt.paths;
	rpc_submit(d, &j->job);
	return 1;
}

/* ----------------------------------------------------------------- load */

/* Saves a streamed file in the state directory, so the config can name it. */
static char *rpc_save_stream(struct lcfibd *d, const struct feed_file_job *j, struct lcfibd_err *e)
{
	char dir[4096], path[4200];
	struct timespec now;
	ssize_t n = 0;
	size_t off = 0;
	int fd;

	snprintf(dir, sizeof(dir), "%s/routes", d->state_dir);
	if (mkdir(dir, 0750) && errno != EEXIST)
		goto fail;
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(path, sizeof(path), "%s/stream-%lld-%u.routes", dir, (long long)now.tv_sec,
		 d->stream_seq++);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0)
		goto fail;
	while (off < j->len && (n = write(fd, j->buf + off, j->len - off)) > 0)
		off += (size_t)n;
	if (n < 0 || fsync(fd)) {
		close(fd);
		unlink(path);
		goto fail;
	}
	close(fd);
	return strdup(path);
fail:
	lcfibd_err_set(e, CTL_TAG_FAILED, NULL, "cannot keep the streamed file in %s: %s", dir,
		       strerror(errno));
	return NULL;
}

/*
 * Records a successful load in the running config, unless transient.
 * Returns 0, or -1 with why in @e: the routes are in, but a restart will
 * not load the file again (the reply, lcfibctl's status and state say so).
 */
static int rpc_load_record(struct lcfibd *d, struct feed_file_job *j, struct lcfibd_err *e)
{
	char *path = j->path;

	if (j->transient)
		return 0;
	if (j->buf) {
		path = rpc_save_stream(d, j, e);
		if (!path)
			goto fail;
	}
	feed_file_loaded_add(d, path);
	if (cfg_add_route_file(d, path, j->format, j->skip_bad, e) == 0) {
		if (path != j->path)
			free(path);
		return 0;
	}
	if (path != j->path)
		free(path);
fail:
	log_err("%s loaded, but not recorded in the config: %s", j->path, e->msg);
	ingest_load_not_recorded(d->ingest);
	return -1;
}

/* The bad lines of a load, as error items or as output list entries. */
static void rpc_load_fail_reply(struct lcfibd *d, struct feed_file_job *j)
{
	uint64_t n = j->rf ? routefile_bad_lines(j->rf) : 0,
		 k = n < RPC_BAD_LINES_MAX ? n : RPC_BAD_LINES_MAX;
	struct lcfibd_err *e = calloc(k + 1, sizeof(*e));
	unsigned int cnt = 0;

	if (!e) {
		ctl_reply(d, j->job.conn, j->job.req_id, NULL);
		return;
	}
	/*
	 * One bad line: its message. Several: a summary, then each (the
	 * library's message names only the first).
	 */
	if (n > 1)
		lcfibd_err_set(&e[cnt++], CTL_TAG_ROUTE_FILE, NULL,
			       "%s: %llu bad lines, nothing applied%s", j->path,
			       (unsigned long long)n, n > k ? " (the first ones follow)" : "");
	else
		lcfibd_err_set(&e[cnt++], CTL_TAG_ROUTE_FILE, NULL, "%s", j->err.msg);
	for (uint64_t i = 0; i < k && n > 1; i++) {
		uint64_t line;
		unsigned int col;
		const char *msg;

		if (routefile_bad_line(j->rf, i, &line, &col, &msg) == 0)
			lcfibd_err_set(&e[cnt++], CTL_TAG_ROUTE_FILE, NULL, "%s", msg);
	}
	ctl_reply_errors(d, j->job.conn, j->job.req_id, e, cnt);
	free(e);
}

static int rpc_load_out(struct lcfibd *d, struct feed_file_job *j, const char *not_recorded,
			char **json)
{
	struct lcfibd_err e = { 0 };
	struct lyd_node *out = rpc_reply_new(d, "load", &e);
	uint64_t n = feed_file_skipped(j);
	int ret;

	if (!out)
		return -1;
	ret = rpc_term(out, "lines", "%llu", (unsigned long long)j->lines);
	ret |= rpc_term(out, "applied", "%llu", (unsigned long long)j->res.applied);
	ret |= rpc_term(out, "skipped", "%llu", (unsigned long long)n);
	ret |= rpc_term(out, "duration", "%llu", (unsigned long long)j->duration_us);
	ret |= rpc_term(out, "rate", "%llu", (unsigned long long)j->rate);
	if (not_recorded)
		ret |= rpc_term(out, "not-recorded", "%s", not_recorded);
	for (uint64_t i = 0; i < n && i < RPC_BAD_LINES_MAX && !ret; i++) {
		struct lyd_node *bl;
		uint64_t line;
		unsigned int col;
		const char *msg;

		if (routefile_bad_line(j->rf, i, &line, &col, &msg))
			continue;
		ret = lyd_new_list(out, NULL, "bad-line", 1, &bl) != LY_SUCCESS;
		ret = ret ? ret : rpc_term(bl, "line", "%llu", (unsigned long long)line);
		ret = ret ? ret : rpc_term(bl, "column", "%u", col);
		ret = ret ? ret : rpc_term(bl, "message", "%s", msg);
	}
	if (!ret)
		ret = rpc_print(d, out, json, &e);
	lyd_free_all(out);
	return ret;
}

/* Loop thread: the load is counted and logged; the reply, and the config's record of it. */
static void rpc_load_done(struct lcfibd *d, struct feed_file_job *j)
{
	struct lcfibd_err e = { 0 };
	char *json = NULL;

	if (j->ret) {
		rpc_load_fail_reply(d, j);
	} else {
		/* Before the reply (it waits for the config's fsync), which says if it failed. */
		if (rpc_load_out(d, j, rpc_load_record(d, j, &e) ? e.msg : NULL, &json))
			log_warn("%s: cannot build the reply", __func__);
		ctl_reply(d, j->job.conn, j->job.req_id, json);
		free(json);
	}
	if (j->job.conn)
		ctl_conn_resume(d, j->job.conn);
	feed_file_job_free(j);
}

static struct feed_file_job *rpc_load_job(struct ctl_conn *c, uint32_t id, const char *path,
					  const char *format, bool skip_bad, bool transient)
{
	struct feed_file_job *j = feed_file_job_new(path, format, skip_bad);

	if (!j)
		return NULL;
	j->job.conn = c;
	j->job.req_id = id;
	j->transient = transient;
	j->done = rpc_load_done;
	return j;
}

/*
 * The file a client names, opened with the client's rights, never the
 * daemon's: the descriptor it passed (lcfibctl opens the file itself),
 * or the path opened as the client (a raw client). A load to be recorded
 * in the config must name a file the client may open, and the one it
 * passed: the daemon reads a recorded path again at every start with its
 * own rights.
 */
static int rpc_load_open(struct lcfibd *d, struct ctl_conn *c, struct feed_file_job *j,
			 struct lcfibd_err *e)
{
	const struct lcfibd_peer *p = ctl_conn_peer(c);
	int fd = ctl_conn_take_fd(c), ret = 0;
	struct errbuf err;

	if (fd >= 0) {
		ret = routefile_check_fd(fd, j->path, d->max_file_size, &err);
		if (!ret && !j->transient)
			ret = peer_same_file(fd, p, j->path, d->max_file_size, &err);
		if (ret)
			close(fd);
	} else {
		fd = peer_open(p, j->path, d->max_file_size, &err);
		ret = fd < 0 ? fd : 0;
	}
	if (ret) {
		/* The message names the file and why, never what it holds. */
		log_notice("load by pid %d uid %u refused: %s", (int)p->pid, (unsigned int)p->uid,
			   err.msg);
		const char *tag =
			ret == -EACCES || ret == -EPERM ? CTL_TAG_DENIED : CTL_TAG_ROUTE_FILE;

		lcfibd_err_set(e, tag, "/lcfib:load/path", "%s", err.msg);
		return -1;
	}
	j->fd = fd;
	return 0;
}

/* A streamed load's bytes arrived: queue it. */
static int rpc_load_stream_end(struct lcfibd *d, struct ctl_conn *c, struct lcfibd_err *e)
{
	struct writer_job *wj;
	struct feed_file_job *j;
	size_t len;
	char *buf = ctl_conn_take_stream(c, &len, &wj);

	if (!wj) {
		free(buf);
		lcfibd_err_set(e, CTL_TAG_FAILED, NULL, "no load of '-' is streaming");
		return -1;
	}
	j = (struct feed_file_job *)wj;
	j->buf = buf;
	j->len = len;
	rpc_submit(d, &j->job);
	return 0;
}

/* A streamed load's client went away before the end: drop the job. */
static void rpc_load_stream_abort(struct writer_job *wj)
{
	feed_file_job_free((struct feed_file_job *)wj);
}

static const struct ctl_stream rpc_load_stream = { rpc_load_stream_end, rpc_load_stream_abort };

static int rpc_load(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const struct lyd_node *op,
		    struct lcfibd_err *e)
{
	const char *path = rpc_value(op, "path");
	struct feed_file_job *j =
		rpc_load_job(c, id, path, rpc_value(op, "format"), rpc_bool(op, "skip-bad-lines"),
			     rpc_bool(op, "transient"));

	if (!j) {
		lcfibd_err_set(e, CTL_TAG_FAILED, NULL, "out of memory");
		return -1;
	}
	if (strcmp(path, "-") == 0) {
		/* The file follows in CTL_DATA frames; ctl.c collects them. */
		ctl_conn_set_stream(c, &j->job, rpc_u64(op, "size", 0), &rpc_load_stream);
		return 1;
	}
	if (path[0] != '/') {
		lcfibd_err_set(e, CTL_TAG_INVALID, "/lcfib:load/path",
			       "'%s' is not an absolute path (the daemon reads it)", path);
		feed_file_job_free(j);
		return -1;
	}
	if (rpc_load_open(d, c, j, e)) {
		feed_file_job_free(j);
		return -1;
	}
	rpc_submit(d, &j->job);
	return 1;
}

/* ------------------------------------------------------------ dispatch */

/* The handlers, as ctl.c calls them (struct ctl_rpc). */

static int rpc_do_lookup(struct lcfibd *d, struct ctl_conn *c, uint32_t id,
			 const struct lyd_node *op, char **reply, struct lcfibd_err *e)
{
	(void)c;
	(void)id;
	*reply = NULL;
	return rpc_lookup(d, op, reply, e);
}

static int rpc_do_lookups(struct lcfibd *d, struct ctl_conn *c, uint32_t id,
			  const struct lyd_node *op, char **reply, struct lcfibd_err *e)
{
	const char *table = rpc_value(op, "table"), *format = rpc_value(op, "format");

	(void)d;
	(void)reply;
	return lookups_start(c, id, rpc_table(table), table != NULL,
			     rpc_format(format) == RPC_JSON_LINES, e);
}

static int rpc_do_routes(struct lcfibd *d, struct ctl_conn *c, uint32_t id,
			 const struct lyd_node *op, char **reply, struct lcfibd_err *e)
{
	(void)d;
	*reply = NULL;
	return rpc_routes(c, id, op, e); /* in pieces, as @c drains */
}

static int rpc_do_flush(struct lcfibd *d, struct ctl_conn *c, uint32_t id,
			const struct lyd_node *op, char **reply, struct lcfibd_err *e)
{
	*reply = NULL;
	return rpc_flush(d, c, id, op, e);
}

static int rpc_do_route_add(struct lcfibd *d, struct ctl_conn *c, uint32_t id,
			    const struct lyd_node *op, char **reply, struct lcfibd_err *e)
{
	*reply = NULL;
	return rpc_route(d, c, id, op, false, e);
}

static int rpc_do_route_delete(struct lcfibd *d, struct ctl_conn *c, uint32_t id,
			       const struct lyd_node *op, char **reply, struct lcfibd_err *e)
{
	*reply = NULL;
	return rpc_route(d, c, id, op, true, e);
}

static int rpc_do_load(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const struct lyd_node *op,
		       char **reply, struct lcfibd_err *e)
{
	*reply = NULL;
	return rpc_load(d, c, id, op, e);
}

/* The state as Prometheus metrics: what the metrics endpoint serves. */
static int rpc_do_metrics(struct lcfibd *d, struct ctl_conn *c, uint32_t id,
			  const struct lyd_node *op, char **reply, struct lcfibd_err *e)
{
	struct lyd_node *out;
	char *text;
	size_t len;
	int ret;

	(void)c;
	(void)id;
	(void)op;
	*reply = NULL;
	if (state_metrics(d, &text, &len)) {
		lcfibd_err_set(e, CTL_TAG_FAILED, "/lcfib:metrics", "out of memory");
		return -1;
	}
	out = rpc_reply_new(d, "metrics", e);
	if (!out) {
		free(text);
		return -1;
	}
	if (lyd_new_term(out, NULL, "text", text, 1, NULL) == LY_SUCCESS) {
		ret = rpc_print(d, out, reply, e);
	} else {
		lcfibd_err_from_ly(e, d->ly, "metrics reply");
		ret = -1;
	}
	lyd_free_all(out);
	free(text);
	return ret;
}

/* Every RPC of the lcfib module: rpc_init() checks the module against it. */
static const struct ctl_rpc rpc_handlers[] = {
	{ "lookup", rpc_do_lookup, true },
	{ "lookups", rpc_do_lookups, true },
	{ "routes", rpc_do_routes, true },
	{ "flush", rpc_do_flush, false },
	{ "route-add", rpc_do_route_add, false },
	{ "route-delete", rpc_do_route_delete, false },
	{ "load", rpc_do_load, false },
	{ "metrics", rpc_do_metrics, true },
};

static const struct ctl_rpcs rpc_rpcs = { rpc_handlers,
					  sizeof(rpc_handlers) / sizeof(rpc_handlers[0]) };

static bool rpc_has_handler(const char *name)
{
	for (unsigned int i = 0; i < rpc_rpcs.n; i++) {
		if (strcmp(rpc_handlers[i].name, name) == 0)
			return true;
	}
	return false;
}

int rpc_init(struct lcfibd *d)
{
	unsigned int missing = 0;

	for (const struct lysc_node *n = (const struct lysc_node *)d->mod->compiled->rpcs; n;
	     n = n->next) {
		if (!rpc_has_handler(n->name)) {
			log_err("rpc /%s:%s has no handler in lcfibd", d->mod->name, n->name);
			missing++;
		}
	}
	if (missing)
		return -1;
	ctl_set_rpcs(d, &rpc_rpcs);
	return 0;
}
