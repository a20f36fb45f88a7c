/* SPDX-License-Identifier: MIT */
/*
 * The operational state (the lcfib module's config false nodes). Loop thread.
 */
#ifndef LCFIB_DAEMON_STATE_H
#define LCFIB_DAEMON_STATE_H

#include <stddef.h>

struct lcfibd;
struct lyd_node;

/*
 * Adds the operational state under the lcfib container @top (loop thread).
 * The tries' statistics walk every trie: only when @xpath ("" or "/": all)
 * may select them.
 */
int state_build(struct lcfibd *d, struct lyd_node *top, const char *xpath);

/*
 * The whole state in Prometheus's text format (daemon/metrics.c): the
 * metrics endpoint's answer and the metrics RPC's. *@text is malloc'd,
 * *@len bytes. 0, or -1 without memory. Loop thread.
 */
int state_metrics(struct lcfibd *d, char **text, size_t *len);

#endif
