/* SPDX-License-Identifier: MIT */
/*
 * The metrics endpoint: GET /metrics on a loopback TCP port, set by the
 * config's metrics container (prepare, apply, abort as cfg.c calls them).
 * Loop thread.
 */
#ifndef LCFIB_DAEMON_HTTP_H
#define LCFIB_DAEMON_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/err.h"

struct lcfibd;
struct http_ep;

/* Where the endpoint's leaves are, for the errors' paths. */
#define HTTP_CFG "/lcfib:lcfib/metrics"

/* What the endpoint counts, over every listener it had. */
struct http_stats {
	uint64_t scrapes;      /* answered with the metrics */
	uint64_t bad_requests; /* not a GET or HEAD of /metrics, or not HTTP */
	uint64_t refused;      /* closed at accept: every slot taken */
	uint64_t timed_out;    /* closed while reading or writing, after the timeout */
};

/* Makes the answer's body: *@text (malloc'd) of *@len bytes; 0 or -1. */
typedef int (*http_body_fn)(struct lcfibd *d, char **text, size_t *len);

/* An endpoint serving what @body makes, off until an edit turns it on; NULL without memory. */
struct http_ep *http_ep_new(struct lcfibd *d, http_body_fn body);
void http_ep_free(struct http_ep *ep);

/*
 * An edit's prepare: on (@enabled) at @addr (loopback only) and @port, or
 * off. Opens the new listener now when @open_now (so that a port taken
 * fails the edit), beside the old one. 0, or -1 with the reason in @e.
 */
int http_ep_prepare(struct http_ep *ep, bool enabled, const char *addr, uint16_t port,
		    bool open_now, struct lcfibd_err *e);
/* The edit's commit: the prepared listener serves, the old one closes. */
void http_ep_apply(struct http_ep *ep);
/* The edit failed elsewhere: the prepared listener closes. */
void http_ep_abort(struct http_ep *ep);

/* The counters, whether it listens, and the connections open now. */
void http_ep_state(const struct http_ep *ep, struct http_stats *st, bool *listening,
		   unsigned int *connections);

#endif
