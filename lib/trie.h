/* SPDX-License-Identifier: MIT */
/*
 * The LC-trie of Linux net/ipv4/fib_trie.c, in user space, for one
 * (table, family): path compression, level compression with the kernel's
 * inflate/halve thresholds, collapse, bounded work per resize, and suffix
 * lengths (slen) so that a lookup backtracks only where a shorter prefix
 * may exist. All prefixes sharing a key sit on one leaf, longest first.
 *
 * One algorithm source (lib/trie-tmpl.h) is compiled twice: trie4_* with
 * 32-bit keys and trie6_* with 128-bit keys, so IPv4 never pays for IPv6.
 * Keys are addresses in host byte order (the first address byte is the
 * most significant).
 *
 * Threads: one writer (trie*_new, _edit, _destroy, _check); any number
 * of readers (*_rcu) inside an RCU read-side critical section (liburcu
 * memb flavour), which never take a lock and never wait for the writer.
 * What a reader gets is valid until its rcu read unlock.
 *
 * Internal: liblcfib.so exports only the lookups that lib/fib.h's inline
 * functions call (declared there again).
 */
#ifndef LCFIB_TRIE_H
#define LCFIB_TRIE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/addr.h" /* trie_key6 */
#include "lib/err.h"
#include "lib/mem.h"
#include "lib/reclaim.h"
#include "lib/route.h" /* struct fib_route, TRIE_LEAF_MAX */
#include "lib/stats.h" /* struct trie_stats, TRIE_MAX_BITS */

/*
 * Computes the new routes of one prefix from its current ones. @old holds
 * @n_old routes (0 when the prefix is absent), in lookup order. Write at
 * most @cap routes to @out, in lookup order, and return their number (0
 * removes the prefix), or return a negative errno to leave the trie as it
 * was. The plen field of @out is set by the trie.
 */
typedef int trie_edit_fn(void *ctx, const struct fib_route *old, unsigned int n_old,
			 struct fib_route *out, unsigned int cap);

/*
 * Bulk mode, a load that will be rebuilt at its end: the bits of the node
 * that joins a new key to the trie (leaf_insert() in lib/trie-tmpl.h;
 * here for test_trie, which looks for such nodes). A sorted full view then
 * builds 299,392 nodes (21.6 MB) for its end to retire, not 901,898 nodes
 * of 1 bit (41.9 MB, a binary trie), and walks fewer levels from the
 * finger; the trie built at the end is the same. 3 was as fast, 5 and 6
 * slower (docs/BENCHMARKS.md, issue 9's ninth round).
 */
#ifndef BULK_NODE_BITS
#define BULK_NODE_BITS 4
#endif

/*
 * Below this many leaves, batch lookups run as plain lookups one after the
 * other: a trie that small sits in cache, and the lanes' bookkeeping costs
 * more than it hides (tests/bench's size sweep crosses over between 2^17 and
 * 2^18 prefixes on our machine, since lookups that find nothing below the
 * root read the root's fallbacks; between 2^15 and 2^16 before). Default
 * 2^17; tests set 0 to exercise the lanes on small tries. Set it before
 * readers start.
 */
extern unsigned int trie_batch_min_leaves;

/*
 * A build anew of at least this many leaves, in a trie that may use two
 * threads (trie*_set_build_threads()), builds the upper half of its
 * root's children on the second (default 2^14, not tuned: a small build
 * takes too little time for a thread to pay). Tests set it lower. Set it
 * before the writer starts.
 */
extern unsigned int trie_rebuild_split_min;

/*
 * What a lookup reads, counted by kind on the calling thread, in a build
 * with TRIE_READ_STATS defined (tests/bench/bench_fib_reads: the
 * library's lookups compiled again with it); other builds count nothing.
 * Each count is one memory object a lookup waits for, where the batch
 * prefetches (the root's slot of an address, each slot below it, a leaf,
 * a header, a fallback entry), and in steps 2-3 each node, slot or parent
 * read: the dependent misses a lookup can take, if none is in cache. The
 * counts do not depend on where objects lie (a header counts even where
 * it shares a cache line with the slot just read), so a table, a seed and
 * a build give the same counts on any machine.
 */
enum trie_read {
	TRIE_READ_ROOT,   /* the root node's slot for the key */
	TRIE_READ_SLOT,   /* a slot further down, in the descent by index bits */
	TRIE_READ_LEAF,   /* a leaf whose prefixes are compared with the key */
	TRIE_READ_HEADER, /* a node's header: is the key inside it (an answer slot's test) */
	TRIE_READ_FB,     /* an entry of the root's fallbacks */
	TRIE_READ_TAIL,   /* steps 2-3: a header, a slot or a climb to a parent */
	TRIE_READ_KINDS
};

#ifdef TRIE_READ_STATS
extern __thread uint64_t trie_reads[TRIE_READ_KINDS];
#define TRIE_READ(kind) ((void)trie_reads[kind]++)
#else
#define TRIE_READ(kind) ((void)0)
#endif

#define TRIE_DECLARE(T, KEY)                                                                       \
	struct T;                                                                                  \
	/* Returns NULL with errno set. Nodes come from @m and are retired to @rc. */              \
	struct T *T##_new(struct mem *m, struct reclaim *rc);                                      \
	/* Frees every node now: call when no reader can reach the trie any more. */               \
	void T##_destroy(struct T *t);                                                             \
	/*                                                                                         \
	 * Writer. Edits the routes of prefix @key/@plen through @fn. Returns 0, the               \
	 * negative errno of @fn, -EINVAL (plen too long, host bits set), -ENOSPC (more            \
	 * than TRIE_LEAF_MAX routes on one key) or -ENOMEM; on error nothing changed.             \
	 */                                                                                        \
	int T##_edit(struct T *t, KEY key, unsigned int plen, trie_edit_fn *fn, void *ctx);        \
	/* Longest-prefix match: the route the kernel would pick, or NULL. */                      \
	const struct fib_route *T##_lookup_rcu(const struct T *t, KEY addr);                       \
	/* @n lookups, interleaved to hide memory latency; res[i] is as from _lookup_rcu. */       \
	void T##_lookup_batch_rcu(const struct T *t, const KEY *addr,                              \
				  const struct fib_route **res, unsigned int n);                   \
	/* The routes of exactly @key/@plen (count in *@n), or NULL. */                            \
	const struct fib_route *T##_find_rcu(const struct T *t, KEY key, unsigned int plen,        \
					     unsigned int *n);                                     \
	/*                                                                                         \
	 * Iteration in key order that tolerates concurrent updates: the leaf with                 \
	 * the smallest key >= @from. Sets *@key and its routes (*@n of them,                      \
	 * longest prefix first) and returns 0, or returns -ENOENT. Continue from                  \
	 * *@key + 1 (stop after the all-ones key).                                                \
	 */                                                                                        \
	int T##_next_rcu(const struct T *t, KEY from, KEY *key, const struct fib_route **routes,   \
			 unsigned int *n);                                                         \
	/* Writer, or reader (figures may then be mid-update). */                                  \
	void T##_get_stats(const struct T *t, struct trie_stats *st);                              \
	/* Route count, cheap, any thread. */                                                      \
	uint64_t T##_routes(const struct T *t);                                                    \
	/*                                                                                         \
	 * Writer. Bulk mode on: edits skip resizing and start from the previous                   \
	 * insert's place, so sorted loads are cheap; readers still get correct                    \
	 * answers from a deeper trie; unsorted input is resized as it comes.                      \
	 * Off: the whole trie is resized once, or built anew from its leaves                      \
	 * if the load made at least half of them.                                                 \
	 */                                                                                        \
	void T##_set_bulk(struct T *t, bool on);                                                   \
	/*                                                                                         \
	 * Writer. A build anew at bulk mode's end may use @n threads: with 2                      \
	 * or more, it builds half of the root's subtrees on a thread it starts                    \
	 * for the build (default 1: the writer alone).                                            \
	 */                                                                                        \
	void T##_set_build_threads(struct T *t, unsigned int n);                                   \
	/*                                                                                         \
	 * Writer. The root inflates when its used children reach @inflate                         \
	 * percent of its size and halves under half that (25 and 12 by                            \
	 * default); the root is resized to them now (in bulk mode, at its end).                   \
	 * -EINVAL outside TRIE_ROOT_THRESHOLD_MIN..MAX.                                           \
	 */                                                                                        \
	int T##_set_root_threshold(struct T *t, unsigned int inflate);                             \
	/*                                                                                         \
	 * Writer. Builds the trie anew from its leaves, as bulk mode's end does,                  \
	 * into new internal nodes and copies of its leaves (mem_evacuate_begin()                  \
	 * puts them in new chunks); the old ones are retired. False when nothing                  \
	 * changed: in bulk mode, a trie of one leaf or none, or without the memory.               \
	 */                                                                                        \
	bool T##_compact(struct T *t);                                                             \
	/* Writer: checks every structural invariant; -EUCLEAN with the first violation. */        \
	int T##_check(const struct T *t, struct errbuf *err);                                      \
	/* A dump in the spirit of /proc/net/fib_trie. Writer, or reader. */                       \
	void T##_dump(const struct T *t, FILE *f);

TRIE_DECLARE(trie4, uint32_t)
TRIE_DECLARE(trie6, trie_key6)
/* TRIE_DECLARE stays defined: tests/trie_stepwise.h declares two more. */

#endif
