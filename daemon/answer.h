/* SPDX-License-Identifier: MIT */
/*
 * A route as lcfibd answers with it: copied out of the FIB under the read
 * lock, then written as RFC 7951 JSON (the module's route-fields) or as
 * text in the syntax of `ip route`. Listings and streamed lookups write
 * them by hand, a million a second; a single lookup's reply goes through
 * libyang (rpc.c), and the tests hold the two to the same JSON.
 */
#ifndef LCFIB_DAEMON_ANSWER_H
#define LCFIB_DAEMON_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/addr.h"
#include "lib/nh.h"
#include "lib/route.h"

struct answer_route {
	struct addr_prefix p;
	uint32_t table, metric, nh_id;
	uint8_t type, proto, scope;
	uint16_t n_paths;
	size_t path_off;            /* a listing's: where its paths start in the walk's array */
	const struct nh_path *path; /* n_paths of them */
};

/* Text that grows (NUL-terminated); on want of memory it stays as it was and @nomem is set. */
struct answer_buf {
	char *s;
	size_t len, cap;
	bool nomem;
};

/* Reader: copies @r (of @table, prefix @p), its paths into @paths (room for NH_MAX_PATHS). */
void answer_route_copy_rcu(struct answer_route *o, uint32_t table, const struct addr_prefix *p,
			   const struct fib_route *r, struct nh_path *paths);
/* A path's flags as the module's bits ("dead linkdown"); false when none. */
bool answer_path_flags(const struct nh_path *p, char *buf, size_t size);
/* A path's preferred source, of the route's family. */
const char *answer_path_src(const struct answer_route *r, const struct nh_path *p, char *buf,
			    size_t size);

void answer_raw(struct answer_buf *b, const char *s);
/* @s as a JSON string (ctl_json_str()); on want of memory @b->nomem is set. */
void answer_str(struct answer_buf *b, const char *s);
void answer_mem(struct answer_buf *b, const char *s, size_t n);
/*
 * The route's fields as JSON members, after @head ("{" and what comes
 * before them): "prefix":..., "table":..., ..., "nexthop":[...], and the
 * closing brace.
 */
void answer_route_json(struct answer_buf *b, const char *head, const struct answer_route *r);
/*
 * The route as `ip route` prints it: a line, and for a multipath route a
 * line for each next hop, beginning with a tab.
 */
void answer_route_text(struct answer_buf *b, const struct answer_route *r);

#endif
