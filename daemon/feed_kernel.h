/* SPDX-License-Identifier: MIT */
/*
 * The kernel feed: mirrors the kernel's routes (rtnetlink dump, then
 * events) into the FIB. Loop thread.
 */
#ifndef LCFIB_DAEMON_FEED_KERNEL_H
#define LCFIB_DAEMON_FEED_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/err.h"
#include "daemon/feed.h"

struct lcfibd;

/* The kernel feed's configuration (the lcfib module's feeds/kernel). */
struct feed_kernel_cfg {
	bool enabled;
	unsigned int n_tables; /* 0: every table */
	uint32_t tables[256];
	uint32_t receive_buffer; /* bytes */
};

/*
 * Config handlers' two phases. prepare() may fail (a socket that cannot
 * be opened or bound) and keeps what it made aside; apply() cannot fail:
 * it starts (dump, then events), restarts with the new settings, or stops
 * and flushes the feed's routes; abort() drops what prepare() made when
 * another handler refused the commit.
 */
int feed_kernel_prepare(struct lcfibd *d, const struct feed_kernel_cfg *cfg, struct lcfibd_err *e);
void feed_kernel_apply(struct lcfibd *d);
void feed_kernel_abort(struct lcfibd *d);
/* At exit: closes everything (the FIB is destroyed after). */
void feed_kernel_stop(struct lcfibd *d);
/* For the state: its counters; false when it is off. */
bool feed_kernel_stats(struct lcfibd *d, struct feed_stats *st);

#endif
