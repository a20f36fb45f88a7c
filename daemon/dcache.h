/* SPDX-License-Identifier: MIT */
/*
 * lcfibd's destination caches (lib/cache.h): one per table and family
 * looked up, in front of the trie, for the lookups the daemon answers
 * (the lookup RPC, streamed lookups). Set by the config's cache container.
 *
 * Threads. Lookups run on the loop thread only: it is the caches' one
 * reader, with thread index 0. The caches are made and destroyed by the
 * writer thread (cache_new() may add the table's generations), in jobs the
 * loop queues: a cache is asked for at a table's first lookup and used
 * once made (the trie answers meanwhile). The loop publishes a new set of
 * caches with rcu_assign_pointer(); the old set goes to the writer, which
 * waits for a grace period before it frees it.
 */
#ifndef LCFIB_DAEMON_DCACHE_H
#define LCFIB_DAEMON_DCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/addr.h"
#include "lib/cache.h"
#include "lib/fib.h"

struct lcfibd;

/* The settings, as the config has them. */
struct dcache_cfg {
	bool enabled;
	uint32_t size;
	enum cache_mode mode;
	unsigned int nr_scans; /* 0: the mode's default */
	bool admit_second;     /* admission second-miss (CACHE_F_ADMIT_SECOND) */
};

/* What state/cache shows. */
struct dcache_state {
	struct dcache_cfg cfg; /* in effect: the size after the floor, nr_scans never 0 */
	unsigned int caches;
	struct cache_stats st; /* over every cache made, retired ones too */
};

/* Loop thread, at start: d->dcache, disabled. -1 without memory. */
int dcache_init(struct lcfibd *d);
/* Loop thread, after the writer stopped: frees the caches. */
void dcache_free(struct lcfibd *d);

/*
 * Loop thread: the config's settings. Disabled: lookups go to the trie
 * at once and the caches are freed after a grace period. Another mode,
 * size, nr-scans or admission: new caches are made for the tables cached; the old
 * ones answer until they are in place. Cannot fail (a cache that cannot
 * be made is logged, and its table answered by the trie).
 */
void dcache_configure(struct lcfibd *d, const struct dcache_cfg *cfg);

/*
 * Loop thread, between fib_read_lock() and fib_read_unlock(): what
 * fib_match_rcu() returns, through the table's cache when there is one.
 * A cached answer is copied to *@buf and @buf returned; valid until
 * fib_read_unlock().
 */
const struct fib_route *dcache_match_rcu(struct lcfibd *d, uint32_t table, const struct addr *a,
					 struct addr_prefix *prefix, struct fib_route *buf);
/* Loop thread, as above: what fib_match_rules_rcu() returns. */
const struct fib_route *dcache_match_rules_rcu(struct lcfibd *d, const struct addr *a,
					       struct addr_prefix *prefix, uint32_t *table,
					       struct fib_route *buf);

/* Loop thread. */
void dcache_get_state(struct lcfibd *d, struct dcache_state *s);

#endif
