/* SPDX-License-Identifier: MIT */
/*
 * liblcfib: a FIB of routes in LC-tries, one per (table id, family), with
 * shared nexthops, netlink's route semantics, lock-free readers, and
 * reclamation bounded by sync-mem.
 *
 * Threads. One writer thread makes every change (fib_new, fib_route_*,
 * fib_nh_*, fib_table_flush, fib_destroy). Readers are threads registered
 * with fib_reader_register(); they call the *_rcu functions between
 * fib_read_lock() and fib_read_unlock(), never take a lock, and never wait
 * for the writer. What a reader gets is valid until its fib_read_unlock().
 * fib_set_sync_mem(), fib_get_sync_mem() and fib_get_state() may be called
 * from any thread.
 *
 * Public: an embedder includes <lcfib/fib.h> (docs/LIBRARY.md, "Embedding").
 */
#ifndef LCFIB_FIB_H
#define LCFIB_FIB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <urcu/urcu-memb.h>

/* Public headers include each other by name: that works in the tree and installed (<lcfib/...>). */
#include "addr.h"
#include "errbuf.h"
#include "nh.h"
#include "route.h"
#include "stats.h"

/* Netlink's request flags, with the same meaning (NLM_F_*). */
#define FIB_F_CREATE  0x1
#define FIB_F_EXCL    0x2
#define FIB_F_REPLACE 0x4
#define FIB_F_APPEND  0x8
/* Delete only: a zero metric matches metric 0 only, not any (netlink has no such flag). */
#define FIB_F_EXACT_METRIC 0x100
/*
 * Delete only: the route whose nexthop is exactly the paths given (IPv4's
 * rule), in either family: no IPv6 sibling goes alone, and a device names
 * only a route of that one path (netlink has no such flag).
 */
#define FIB_F_EXACT 0x200

#define FIB_TABLE_DEFAULT 253 /* RT_TABLE_DEFAULT */
#define FIB_TABLE_MAIN    254 /* RT_TABLE_MAIN */
#define FIB_TABLE_LOCAL   255 /* RT_TABLE_LOCAL */

struct fib;
struct cache_gens;

struct fib_table {
	uint32_t id;
	uint8_t family; /* AF_INET or AF_INET6 */
	union {
		struct trie4 *t4;
		struct trie6 *t6;
	};
	struct cache_gens *gens; /* the destination caches' generations (lib/cache.h), or NULL */
};

/*
 * A route to add or delete, as netlink describes it (the kernel's
 * fib_config). For a delete, as in the kernel, zero fields match
 * anything: type, proto, scope, metric, and the nexthop when nh_id and
 * n_paths are 0; a path's zero gateway family or zero ifindex match any.
 */
struct fib_rcfg {
	struct addr_prefix dst;
	uint32_t table;  /* 0: main */
	uint8_t type;    /* enum fib_rtype; 0: unicast on add */
	uint8_t proto;   /* RTPROT_*; 0 on add: boot */
	uint8_t scope;   /* RT_SCOPE_*; on add 0 is universe */
	uint32_t metric; /* RTA_PRIORITY */
	uint32_t nh_id;  /* RTA_NH_ID: use this nexthop object */
	unsigned int n_paths;
	const struct nh_path *paths; /* RTA_GATEWAY/RTA_OIF (1) or RTA_MULTIPATH */
	unsigned int flags;          /* FIB_F_* */
};

struct fib_state {
	uint64_t routes4, routes6;
	uint64_t tables;
	uint64_t nh_anonymous, nh_objects;
	struct reclaim_stats reclaim;
	struct mem_stats mem;
};

/* Returns NULL with errno set. */
struct fib *fib_new(void);
/* Frees everything. Writer; no reader may still use the FIB. */
void fib_destroy(struct fib *f);

/* Any thread. Returns 0 or -ERANGE (64 KiB..64 MiB), nothing changed. */
int fib_set_sync_mem(struct fib *f, uint64_t bytes);
uint64_t fib_get_sync_mem(const struct fib *f);

/*
 * Writer. Adds a route with netlink's semantics, those of the kernel of
 * its family. Routes are identified by prefix and metric.
 *
 * IPv4 (fib_table_insert): EXCL fails with -EEXIST on a route of the
 * metric, REPLACE replaces the first (or creates with CREATE), APPEND adds
 * after the routes of the same metric, no flag adds before them; a
 * duplicate of type and nexthop is -EEXIST.
 *
 * IPv6 (ip6_route_add, fib6_add_rt2node): a unicast route through
 * anonymous gateways (fib_route_merges6()) merges with the prefix's route
 * of its metric that is one too: its paths go after that route's
 * ("siblings", one multipath route, which keeps its place, type, protocol
 * and scope), whatever the flags but EXCL and REPLACE. Any other route
 * goes after the routes of its metric, APPEND or not. EXCL fails with
 * -EEXIST on a route of the metric; a route of the metric with a path of
 * the new one (same gateway and device; or both without a nexthop, or the
 * same nexthop object) is -EEXIST. REPLACE replaces the first route of the
 * metric that merges as the new one does (else the first of the metric),
 * a multipath route whole. A multipath route needs a gateway in every path
 * (-EINVAL) and no path twice (-EEXIST).
 *
 * Both: without CREATE a missing route is -ENOENT; a REPLACE by the very
 * route (type and nexthop) changes nothing. Other errors: -EINVAL (bad
 * prefix, type, paths), -ENOENT (no nexthop object), -ENOSPC, -ENOMEM. On
 * error nothing changed and @err says why.
 */
int fib_route_add(struct fib *f, const struct fib_rcfg *rc, struct errbuf *err);
/*
 * Writer. Deletes the first route that matches (see struct fib_rcfg);
 * -ESRCH when none. IPv6 as ip6_route_del(): a delete that names gateways
 * takes those paths out of the first route that holds them all (the route
 * goes with its last path), and one that names only a device takes the
 * first route with a path through it, whole (unless FIB_F_EXACT).
 */
int fib_route_del(struct fib *f, const struct fib_rcfg *rc, struct errbuf *err);
/*
 * Whether an IPv6 route merges with others of its prefix and metric into
 * one multipath route (the kernel's rt6_qualify_for_ecmp): unicast,
 * through anonymous paths that all have a gateway. Reader or writer.
 */
bool fib_route_merges6(const struct fib_route *r);
/* The same for a route to add (@rc of either family: false for IPv4). */
bool fib_rcfg_merges6(const struct fib_rcfg *rc);
/*
 * What one route edit changed, so that it can be undone: route files apply
 * as one transaction. A record holds a reference to the nexthop of the
 * route the edit took out until it is reverted or released.
 */
struct fib_undo {
	struct addr_prefix dst;
	uint32_t table;
	struct fib_route added;   /* the route that went in */
	struct fib_route removed; /* the route that came out (replace, delete) */
	uint8_t at;               /* their place among the prefix's routes */
	bool has_added, has_removed;
};

/*
 * Writer. fib_route_add() and fib_route_del() that also fill @u (on
 * success) with what they changed. Every record must end in
 * fib_undo_revert() or fib_undo_release(); fib_check() counts the
 * references routes hold, so run it with no record outstanding.
 */
int fib_route_add_undo(struct fib *f, const struct fib_rcfg *rc, struct fib_undo *u,
		       struct errbuf *err);
int fib_route_del_undo(struct fib *f, const struct fib_rcfg *rc, struct fib_undo *u,
		       struct errbuf *err);
/*
 * Writer. Puts the routes of @u's prefix back as they were before its
 * edit; revert records in the reverse order of their edits. Returns 0, or
 * -ENOMEM, or -ESTALE when the prefix's routes changed otherwise since
 * (nothing changed then, and @u still holds its reference).
 */
int fib_undo_revert(struct fib *f, struct fib_undo *u, struct errbuf *err);
/* Writer. Keeps the edit: drops the reference @u holds. */
void fib_undo_release(struct fib *f, struct fib_undo *u);

/*
 * Writer. Removes every route of @table (0: all tables) and @family
 * (AF_UNSPEC: both). Returns 0, or -ENOMEM when a leaf that keeps some of
 * its prefixes could not be copied even after a grace period freed what
 * the flush retired: the routes before it are gone, the rest whole; a
 * second flush goes on.
 */
int fib_table_flush(struct fib *f, uint32_t table, int family);

/*
 * Writer. Bulk mode for large loads: between fib_bulk_begin() and
 * fib_bulk_end(), route edits skip the tries' resizing (and a sorted load
 * starts each insert where the last one ended); fib_bulk_end() resizes
 * every table once, or builds anew a trie the load made at least half of
 * (see docs/LIBRARY.md). Input that comes unsorted is resized as it comes
 * instead. Lookups stay correct throughout, only slower, since the tries
 * are deeper until the end. Calls nest (a route file loaded while a feed
 * syncs): bulk mode ends with the last begin's end. Returns nothing;
 * cannot fail (without the memory to build anew, it resizes in place).
 */
void fib_bulk_begin(struct fib *f);
void fib_bulk_end(struct fib *f);
/*
 * Writer. Threads fib_bulk_end() may use to build a trie anew: with 2 or
 * more, a trie of 16,384 leaves or more built anew has half of its root's
 * subtrees built on a thread started for the build, at the same time as
 * the writer builds the other half (signals blocked in it); the trie is
 * the same. 1, the default, keeps the build on the calling thread.
 * Lookups are not affected either way.
 */
void fib_set_build_threads(struct fib *f, unsigned int n);
/*
 * Writer. The size of every table's root node, a trade of memory for
 * lookup speed: the root inflates when its used children reach @percent
 * of its size, and halves when they fall under half that. The default,
 * TRIE_ROOT_THRESHOLD_DEFAULT (25; the kernel's is 30, which gives 18
 * bits), gives the IPv4 full view a root of 19 bits; 20 gives it 20 bits,
 * 10 gives 22 and 5 gives 24 (DIR-24-8's first level: a lookup
 * reads one slot), each bit doubling the root (9 bytes a slot) and, up
 * to 22 bits, its fallbacks (8 bytes a slot), so that more lookups end at
 * the root (docs/LIBRARY.md, The trie, has the measured trade). Applies
 * to tables made later too. The roots are resized now, readers looking
 * on (in bulk mode, at its end): a root too wide for @percent has its
 * trie built anew, as at bulk mode's end. Returns 0, or -EINVAL outside
 * TRIE_ROOT_THRESHOLD_MIN..TRIE_ROOT_THRESHOLD_MAX (2..100); without the
 * memory to resize, a root stays as it is.
 */
int fib_set_root_threshold(struct fib *f, unsigned int percent);

/* Writer. Nexthop objects (RTM_NEWNEXTHOP / RTM_DELNEXTHOP). */
int fib_nh_set(struct fib *f, const struct nh_obj_cfg *cfg, unsigned int flags, struct errbuf *err);
/*
 * Deletes object @id and every route that uses it, directly or through a
 * group. Without the memory, -ENOMEM may come after some of those routes
 * went (the FIB is sound); a second delete goes on.
 */
int fib_nh_del(struct fib *f, uint32_t id, struct errbuf *err);

/* Reader or writer. The table, or NULL. Tables live as long as the FIB. */
const struct fib_table *fib_table_get_rcu(const struct fib *f, uint32_t id, int family);

/*
 * Writer. The table (made if new) with the generations its destination
 * caches validate against (lib/cache.h). NULL when out of memory.
 */
const struct fib_table *fib_table_cache(struct fib *f, uint32_t id, int family);

/*
 * Reader or writer. The @i-th table (from 0), or NULL past the last: to
 * list them. Tables are only ever added, at the end.
 */
const struct fib_table *fib_table_at_rcu(const struct fib *f, unsigned int i);

/*
 * The trie's lookups, which the inline ones below call: exported for them,
 * not to be called directly (lib/trie.h declares them too; lib/fib.c
 * includes both, so the compiler checks that the two agree).
 */
struct trie4;
struct trie6;
const struct fib_route *trie4_lookup_rcu(const struct trie4 *t, uint32_t addr);
void trie4_lookup_batch_rcu(const struct trie4 *t, const uint32_t *addr,
			    const struct fib_route **res, unsigned int n);
const struct fib_route *trie6_lookup_rcu(const struct trie6 *t, trie_key6 addr);

/* Reader: lookups in one table. IPv4 addresses in host byte order. */
static inline const struct fib_route *fib_lookup4_rcu(const struct fib_table *tb, uint32_t addr)
{
	return trie4_lookup_rcu(tb->t4, addr);
}

static inline void fib_lookup4_batch_rcu(const struct fib_table *tb, const uint32_t *addr,
					 const struct fib_route **res, unsigned int n)
{
	trie4_lookup_batch_rcu(tb->t4, addr, res, n);
}

static inline const struct fib_route *fib_lookup6_rcu(const struct fib_table *tb,
						      const struct in6_addr *addr)
{
	return trie6_lookup_rcu(tb->t6, addr_key6_raw(addr));
}

/* Reader: @n IPv6 lookups, interleaved; res[i] is as from fib_lookup6_rcu(). */
void fib_lookup6_batch_rcu(const struct fib_table *tb, const struct in6_addr *addr,
			   const struct fib_route **res, unsigned int n);

/*
 * Reader: the route a lookup of @a in table @table picks and its prefix
 * (`ip route get fibmatch`). Returns NULL when nothing matches.
 */
const struct fib_route *fib_match_rcu(const struct fib *f, uint32_t table, const struct addr *a,
				      struct addr_prefix *prefix);

/*
 * Reader: the route the kernel's default rules pick for @a (`ip route get
 * fibmatch` without a table): the local table, then main, then (IPv4
 * only, as `ip -6 rule` has no such rule) default; a throw route ends the
 * lookup in its table and the next one is asked. Its
 * table in *@table when not NULL. Returns NULL when no table has a route
 * (or only throw routes).
 */
const struct fib_route *fib_match_rules_rcu(const struct fib *f, const struct addr *a,
					    struct addr_prefix *prefix, uint32_t *table);
/*
 * The tables fib_match_rules_rcu() asks for @family, in order, in
 * *@tables; returns how many (3 for AF_INET, 2 for AF_INET6).
 */
size_t fib_rule_tables(int family, const uint32_t **tables);

/*
 * Reader or writer: the routes of exactly @p in table @table (*@n of them,
 * in lookup order), or NULL.
 */
const struct fib_route *fib_find_rcu(const struct fib *f, uint32_t table,
				     const struct addr_prefix *p, unsigned int *n);

/*
 * Reader: iteration in prefix order, tolerant of concurrent updates. Calls
 * @fn for each route of @tb from the start; a nonzero return stops the
 * walk and is returned.
 */
int fib_walk_rcu(const struct fib_table *tb,
		 int (*fn)(void *ctx, const struct addr_prefix *p, const struct fib_route *r),
		 void *ctx);
/* Where a walk goes on: the key of the next leaf to visit. */
struct fib_walk_pos {
	struct addr from; /* of the table's family; zero (any family): the start */
	bool done;        /* the walk has passed the last leaf */
};
/*
 * Reader: as fib_walk_rcu, from @pos, leaf by leaf, until at least @max
 * routes went to @fn (a leaf is never split), so that a long listing can
 * go on in a later read-side section. Updates @pos; 0 at the end of the
 * table or when @max was reached (->done tells which), or what @fn returned.
 */
int fib_walk_from_rcu(const struct fib_table *tb, struct fib_walk_pos *pos, unsigned int max,
		      int (*fn)(void *ctx, const struct addr_prefix *p, const struct fib_route *r),
		      void *ctx);

/* Any thread. Counters, reclamation and memory. */
void fib_get_state(const struct fib *f, struct fib_state *st);
/* Reader or writer. Trie statistics of one table (as /proc/net/fib_triestat). */
void fib_table_stats_rcu(const struct fib_table *tb, struct trie_stats *st);
/* Reader or writer. The trie of one table, node by node (as /proc/net/fib_trie). */
void fib_table_dump_rcu(const struct fib_table *tb, FILE *f);
/*
 * Writer. Checks the invariants of every trie, and that each nexthop's
 * reference count is what routes, groups and objects hold: -EUCLEAN with
 * a message naming the first violation.
 */
int fib_check(const struct fib *f, struct errbuf *err);
/* Writer: waits until everything retired so far is freed (tests, shutdown). */
void fib_reclaim_barrier(struct fib *f);
/*
 * Writer, when it goes idle: hands the last few retired objects (staged by
 * the writer, at most 32 small ones) to the background thread to free, and
 * trims the allocator if enough of its memory is free, counting what waits
 * for its grace period; then it waits for that grace period first, as
 * fib_mem_trim() does (fib_table_flush() does the same). After a bulk load
 * (fib_bulk_end() leaves it) this is where the memory the load freed goes
 * back.
 */
void fib_reclaim_flush(struct fib *f);
/*
 * Writer: waits until everything retired is freed (a grace period), then
 * gives the allocator's wholly free 64 KiB slab chunks back to the system
 * (madvise MADV_DONTNEED; they are reused for any object size later) and
 * glibc's free memory (malloc_trim). Takes time in proportion to the free
 * slab objects (tens of ms after a full-table load). Returns the slab bytes
 * given back; fib_get_state() counts them (mem.slab_released_bytes, trims).
 */
uint64_t fib_mem_trim(struct fib *f);
/*
 * Writer: compaction. A trim gives back only wholly free chunks, and
 * nodes freed one by one (a table loaded or churned one route at a time)
 * leave chunks part used: the full view loaded one route at a time held
 * 1.38 times its live bytes, 1.04 after compaction. Waits for the retired
 * memory and trims, as fib_mem_trim(), then builds every table's trie
 * anew from its leaves, as fib_bulk_end() does, into 64 KiB chunks of new
 * blocks, its leaves copied there too; once the old trie's grace period is
 * over, its chunks are wholly free and go back. Readers go on meanwhile,
 * in the old trie then the new one, with the same answers. Costs about
 * what a bulk load's end costs (0.3-0.4 s for the full view) and, until
 * the old trie is freed, its memory beside the new (37 MB for the full
 * view). fib_mem_trim(), fib_reclaim_flush() and
 * fib_table_flush() compact by themselves when their trim leaves more than
 * a fifth of the slab memory free, and 4 MiB more than after the last
 * compaction. No trie is built anew in bulk mode. Returns the slab bytes
 * given back; fib_get_state() counts compactions (mem.compactions).
 */
uint64_t fib_mem_compact(struct fib *f);

/* Prints a route ("10.0.0.0/8 via 192.0.2.1 dev 3 proto static metric 20"). Reader. */
void fib_route_format(const struct addr_prefix *p, const struct fib_route *r, char *buf,
		      size_t size);
const char *fib_rtype_name(unsigned int type);
/* Parses a type name ("unicast", "blackhole", ...); -EINVAL when unknown. */
int fib_rtype_parse(const char *s, uint8_t *type);

/* Readers: RCU registration and read-side sections (liburcu memb flavour). */
static inline void fib_reader_register(void)
{
	urcu_memb_register_thread();
}

static inline void fib_reader_unregister(void)
{
	urcu_memb_unregister_thread();
}

static inline void fib_read_lock(void)
{
	urcu_memb_read_lock();
}

static inline void fib_read_unlock(void)
{
	urcu_memb_read_unlock();
}

#endif
