/* SPDX-License-Identifier: MIT */
/*
 * The FPM feed: routes from FRR's zebra over the Forwarding Plane
 * Manager protocol. Loop thread.
 */
#ifndef LCFIB_DAEMON_FEED_FPM_H
#define LCFIB_DAEMON_FEED_FPM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "daemon/err.h"
#include "daemon/feed.h"

struct lcfibd;

/* At most this many allowed-user and allowed-remote entries. */
#define FEED_FPM_MAX_USERS  16
#define FEED_FPM_MAX_REMOTE 16

/* A user whose processes may connect: a uid, or a name this host does not have (yet). */
struct feed_fpm_user {
	char name[33]; /* as configured */
	bool known;    /* @uid is valid */
	uid_t uid;
};

/* A prefix of allowed-remote. */
struct feed_fpm_prefix {
	int family;
	uint8_t addr[16];
	uint8_t len;
};

struct feed_fpm_cfg {
	bool enabled;
	char address[64]; /* numeric IPv4 or IPv6 */
	uint16_t port;
	uint32_t replay_settle_ms; /* quiet time after a connect before the sweep */
	uint32_t hold_time_s;      /* an unfinished frame's peer is dropped after this */
	unsigned int n_users, n_remote;
	struct feed_fpm_user users[FEED_FPM_MAX_USERS];
	struct feed_fpm_prefix remote[FEED_FPM_MAX_REMOTE];
	/* the config file at start: a port that cannot be bound does not stop lcfibd */
	bool at_start;
};

/* What the state shows of the FPM feed besides the feeds' counters. */
struct feed_fpm_info {
	char peer[128];          /* "" when none */
	time_t since;            /* when it connected; 0: never */
	char listening[128];     /* "" when not listening */
	char listen_error[256];  /* why not, while it retries */
	uint64_t unauthorized;   /* connections refused because of who made them */
	uint64_t dropped_silent; /* peers dropped by the hold timer */
};

/* As feed_kernel_*: prepare() binds the listener. */
int feed_fpm_prepare(struct lcfibd *d, const struct feed_fpm_cfg *cfg, struct lcfibd_err *e);
void feed_fpm_apply(struct lcfibd *d);
void feed_fpm_abort(struct lcfibd *d);
void feed_fpm_stop(struct lcfibd *d);
/* For the state: false when the feed is off. */
bool feed_fpm_stats(struct lcfibd *d, struct feed_stats *st, struct feed_fpm_info *info);

#endif
