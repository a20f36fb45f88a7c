/* SPDX-License-Identifier: MIT */
/* The state tree as Prometheus metrics (text format 0.0.4). */
#ifndef LCFIB_DAEMON_METRICS_H
#define LCFIB_DAEMON_METRICS_H

#include <stdio.h>

struct lyd_node;

/*
 * Loop thread. Writes the metrics of @state, the lcfib:lcfib/state
 * container of a data tree, to @out. 0, or -ENOMEM, or -EIO when @out
 * failed. Counters are told from gauges only when the context was made
 * with LY_CTX_SET_PRIV_PARSED.
 */
int metrics_write(const struct lyd_node *state, FILE *out);

#endif
