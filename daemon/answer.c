/* SPDX-License-Identifier: MIT */
/*
 * Routes as answers: JSON and `ip route` text, written by hand (see
 * answer.h). Loop thread.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/answer.h"
#include "daemon/ctl.h"
#include "lib/fib.h"
#include "lib/ifname.h"
#include "lib/names.h"

void answer_route_copy_rcu(struct answer_route *o, uint32_t table, const struct addr_prefix *p,
			   const struct fib_route *r, struct nh_path *paths)
{
	o->p = *p;
	o->table = table;
	o->metric = r->metric;
	o->type = r->type;
	o->proto = r->proto;
	o->scope = r->scope;
	o->nh_id = r->nh ? r->nh->id : 0;
	o->n_paths = 0;
	o->path = paths;
	if (r->nh) {
		const struct nh_info *info = nh_info_rcu(r->nh);

		o->n_paths = info->n > NH_MAX_PATHS ? NH_MAX_PATHS : info->n;
		memcpy(paths, info->path, o->n_paths * sizeof(paths[0]));
	}
}

bool answer_path_flags(const struct nh_path *p, char *buf, size_t size)
{
	return names_flags_format(&names_nh_flag, p->flags, buf, size);
}

const char *answer_path_src(const struct answer_route *r, const struct nh_path *p, char *buf,
			    size_t size)
{
	return inet_ntop(r->p.a.family, &p->prefsrc, buf, (socklen_t)size);
}

void answer_mem(struct answer_buf *b, const char *s, size_t n)
{
	if (b->cap - b->len <= n) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap - b->len <= n)
			cap *= 2;
		p = realloc(b->s, cap);
		if (!p) {
			b->nomem = true;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void answer_raw(struct answer_buf *b, const char *s)
{
	answer_mem(b, s, strlen(s));
}

void answer_str(struct answer_buf *b, const char *s)
{
	size_t len = b->len;

	ctl_json_str(&b->s, &b->len, &b->cap, s);
	b->nomem |= b->len == len;
}

/* printf() onto @b (an answer's pieces are short: 256 bytes at most). */
static void answer_fmt(struct answer_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void answer_fmt(struct answer_buf *b, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		answer_mem(b, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static void answer_path_json(struct answer_buf *b, const struct answer_route *r,
			     const struct nh_path *nh)
{
	const char *sep = "{";
	char p[ADDR_STRLEN], name[IF_NAMESIZE];

	if (nh->gw_family) {
		answer_fmt(b, "{\"gateway\":\"%s\"",
			   inet_ntop(nh->gw_family, &nh->gw, p, sizeof(p)));
		sep = ",";
	}
	if (nh->ifindex) {
		answer_fmt(b, "%s\"interface\":", sep);
		answer_str(b, ifname_name(nh->ifindex, name));
		sep = ",";
	}
	if (r->n_paths > 1) {
		answer_fmt(b, "%s\"weight\":%u", sep, nh->weight);
		sep = ",";
	}
	if (answer_path_flags(nh, p, sizeof(p))) {
		answer_fmt(b, "%s\"flags\":\"%s\"", sep, p);
		sep = ",";
	}
	if (nh->flags & NH_F_SRC) {
		answer_fmt(b, "%s\"source\":\"%s\"", sep, answer_path_src(r, nh, p, sizeof(p)));
		sep = ",";
	}
	answer_raw(b, sep[0] == '{' ? "{}" : "}");
}

void answer_route_json(struct answer_buf *b, const char *head, const struct answer_route *r)
{
	char p[ADDR_STRLEN];

	answer_fmt(b,
		   "%s\"prefix\":\"%s\",\"table\":%u,\"type\":\"%s\",\"protocol\":%u,"
		   "\"scope\":%u,\"metric\":%u",
		   head, addr_prefix_format(&r->p, p, sizeof(p)), r->table, fib_rtype_name(r->type),
		   r->proto, r->scope, r->metric);
	if (r->nh_id)
		answer_fmt(b, ",\"nexthop-id\":%u", r->nh_id);
	for (unsigned int i = 0; i < r->n_paths; i++) {
		answer_raw(b, i ? "," : ",\"nexthop\":[");
		answer_path_json(b, r, &r->path[i]);
	}
	answer_raw(b, r->n_paths ? "]}" : "}");
}

/* A number of the module as its name (lib/names.h), or the number. */
static void answer_name(struct answer_buf *b, const char *word, const struct names *names,
			uint32_t v)
{
	const char *name = names_name(names, v);

	if (name)
		answer_fmt(b, " %s %s", word, name);
	else
		answer_fmt(b, " %s %u", word, v);
}

/* An IPv6 gateway of an IPv4 route (RFC 5549) is "via inet6 ADDR", as ip route writes it. */
static void answer_path_text(struct answer_buf *b, const struct answer_route *r,
			     const struct nh_path *nh, bool multipath)
{
	char p[ADDR_STRLEN], name[IF_NAMESIZE];

	if (nh->gw_family)
		answer_fmt(b, " via %s%s",
			   r->p.a.family == AF_INET && nh->gw_family == AF_INET6 ? "inet6 " : "",
			   inet_ntop(nh->gw_family, &nh->gw, p, sizeof(p)));
	if (nh->ifindex)
		answer_fmt(b, " dev %s", ifname_name(nh->ifindex, name));
	if (multipath)
		answer_fmt(b, " weight %u", nh->weight);
}

/* A path's flags, last on its line as ip route prints them ("dead linkdown"). */
static void answer_flags_text(struct answer_buf *b, const struct nh_path *nh)
{
	char flags[ADDR_STRLEN];

	if (answer_path_flags(nh, flags, sizeof(flags)))
		answer_fmt(b, " %s", flags);
}

void answer_route_text(struct answer_buf *b, const struct answer_route *r)
{
	char p[ADDR_STRLEN];
	const struct nh_path *src = NULL;

	/* the route's preferred source, which each path carries */
	for (unsigned int i = 0; i < r->n_paths && !src; i++)
		if (r->path[i].flags & NH_F_SRC)
			src = &r->path[i];
	if (r->type != FIB_RT_UNICAST)
		answer_fmt(b, "%s ", fib_rtype_name(r->type));
	/* as ip route writes the default route */
	answer_raw(b, r->p.plen ? addr_prefix_format(&r->p, p, sizeof(p)) : "default");
	if (r->nh_id)
		answer_fmt(b, " nhid %u", r->nh_id);
	if (r->n_paths == 1)
		answer_path_text(b, r, &r->path[0], false);
	if (r->table != FIB_TABLE_MAIN)
		answer_name(b, "table", &names_table, r->table);
	if (r->proto)
		answer_name(b, "proto", &names_proto, r->proto);
	if (r->scope)
		answer_name(b, "scope", &names_scope, r->scope);
	if (src)
		answer_fmt(b, " src %s", answer_path_src(r, src, p, sizeof(p)));
	if (r->metric)
		answer_fmt(b, " metric %u", r->metric);
	if (r->n_paths == 1)
		answer_flags_text(b, &r->path[0]);
	answer_raw(b, "\n");
	for (unsigned int i = 0; r->n_paths > 1 && i < r->n_paths; i++) {
		answer_raw(b, "\tnexthop");
		answer_path_text(b, r, &r->path[i], true);
		answer_flags_text(b, &r->path[i]);
		answer_raw(b, "\n");
	}
}
