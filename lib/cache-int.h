/* SPDX-License-Identifier: MIT */
/*
 * The writer's side of the destination caches' generations (struct
 * cache_gens, lib/cache.h; the protocol is described there). For
 * lib/cache.c and lib/fib.c; not installed, not exported by liblcfib.so.
 */
#ifndef LCFIB_CACHE_INT_H
#define LCFIB_CACHE_INT_H

#include "lib/addr.h"
#include "lib/cache.h"

/* Writer (fib.c). NULL with errno set. */
struct cache_gens *cache_gens_new(int family);
void cache_gens_free(struct cache_gens *g);
/* Writer, around each trie edit of prefix @p (the protocol: lib/cache.h). NULL @g: no cache. */
void cache_gens_begin(struct cache_gens *g, const struct addr_prefix *p);
void cache_gens_end(struct cache_gens *g);

#endif
