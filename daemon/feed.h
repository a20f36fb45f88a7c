/* SPDX-License-Identifier: MIT */
/*
 * What every netlink feed (the kernel's routes, FRR's FPM) shares: the
 * messages a feed reads on the loop thread go, whole and in order, to the
 * writer thread, which decodes them (lib/rtnl.h) and applies them to the
 * FIB. A feed owns the routes and nexthop objects it added: a resync
 * (after lost events) or a replay (after zebra reconnects) marks what is
 * announced again, and the sweep at its end removes the rest.
 */
#ifndef LCFIB_DAEMON_FEED_H
#define LCFIB_DAEMON_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lcfibd;
struct feed;

/* What the operational state shows of a feed. */
struct feed_stats {
	uint64_t messages;      /* netlink messages received */
	uint64_t routes;        /* routes this feed holds in the FIB now */
	uint64_t nexthops;      /* nexthop objects it holds */
	uint64_t wait_objects;  /* objects routes or groups wait for (in a sync) */
	uint64_t wait_routes;   /* routes that wait for their object */
	uint64_t route_updates; /* route adds and deletes applied */
	uint64_t coalesced;     /* deletes an add of the same key replaced (feed_del_replaced) */
	uint64_t skipped;       /* messages not for us: other tables, cache routes, families */
	uint64_t decode_errors; /* malformed messages (counted, skipped) */
	uint64_t apply_errors;  /* well-formed updates the FIB refused */
	uint64_t dumps;         /* dumps (kernel) or replays (FPM) started */
	uint64_t resyncs;       /* dumps started because events were lost or links changed */
	uint64_t enobufs;       /* ENOBUFS seen: events lost */
	uint64_t swept;         /* routes and objects removed by sweeps */
	uint64_t flushed;       /* routes and objects removed by turning the feed off */
	uint64_t connects;      /* FPM: connections accepted */
	uint64_t refused;       /* FPM: second peers refused */
	uint64_t backlog_waits; /* FPM: reading paused until the writer caught up */
	bool syncing;           /* a dump or replay runs (the FIB is in bulk mode) */
	char last_error[256];
};

/* Loop thread. Returns NULL with errno set. @name names it in logs and state. */
struct feed *feed_new(struct lcfibd *d, const char *name);
/* Loop thread, at exit; the writer must be stopped. */
void feed_free(struct feed *f);
const char *feed_name(const struct feed *f);

/*
 * Loop thread: the tables to mirror (none: all). Routes of other tables
 * are skipped (and counted) from the next message on.
 */
void feed_set_tables(struct feed *f, const uint32_t *ids, unsigned int n);

/*
 * Loop thread: @len bytes of whole netlink messages (nlmsghdr-framed) for
 * the writer to decode and apply in order; copied. Messages of other types
 * (links, addresses, NLMSG_DONE) are skipped there. Returns 0 or -ENOMEM.
 */
int feed_submit(struct feed *f, const void *msgs, size_t len);

/*
 * Loop thread: whether the messages submitted and not yet applied reach
 * 4 MiB. A feed that can wait (FPM: TCP holds the peer back) then stops
 * reading and calls feed_wait_drain(); @fn, set once by
 * feed_on_drained(), is called (loop thread) once they are down to half.
 */
bool feed_backlogged(const struct feed *f);
void feed_on_drained(struct feed *f, void (*fn)(void *ctx), void *ctx);
void feed_wait_drain(struct feed *f);

/*
 * Loop thread: a full dump or replay starts. Every route and nexthop
 * object the feed announces from now on is marked; feed_sync_end() then
 * removes what the feed holds and did not announce again. Queued in order
 * with the messages.
 */
void feed_sync_begin(struct feed *f);
void feed_sync_end(struct feed *f);
/*
 * Loop thread: the source went away in the middle of a sync. Nothing is
 * swept (what it had yet to send would go); what waited for missing
 * objects is dropped, and the FIB leaves bulk mode. The next sync sweeps
 * what neither announced.
 */
void feed_sync_cut(struct feed *f);

/*
 * Writer thread: another source (the control socket, a route file) is
 * about to add @rc. Returns -EBUSY, with @err naming the feed, when a feed
 * holds its key (table, prefix, metric) and its route is in the FIB; a
 * feed that holds the key but whose route is gone (deleted by the
 * operator) gives the key up. 0: the key is free.
 */
struct fib_rcfg;
struct errbuf;
int feed_claim(struct lcfibd *d, const struct fib_rcfg *rc, struct errbuf *err);

/* Loop thread: removes every route and nexthop object of the feed (it was turned off). */
void feed_flush(struct feed *f);

/* Loop thread: counts an event of the loop's side (dumps, resyncs, ENOBUFS, ...). */
enum feed_counter {
	FEED_DUMP,
	FEED_RESYNC,
	FEED_ENOBUFS,
	FEED_CONNECT,
	FEED_REFUSED,
	FEED_DECODE_ERROR, /* a framing error seen by the loop (FPM) */
};
void feed_count(struct feed *f, enum feed_counter c);
/* Any thread: the last error, for the state (and the log, by the caller). */
void feed_set_error(struct feed *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Any thread. The counters only grow, across turning the feed off and on. */
void feed_get_stats(const struct feed *f, struct feed_stats *st);

#endif
