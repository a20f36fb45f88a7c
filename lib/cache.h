/* SPDX-License-Identifier: MIT */
/*
 * A destination cache in front of one table's trie: an LRU hash map from
 * address to the answer of fib_lookup4_rcu() / fib_lookup6_rcu(), on the
 * design of the Linux BPF LRU hash map (kernel/bpf/bpf_lru_list.c,
 * hashtab.c, percpu_freelist.c).
 *
 * Modes, as in the kernel:
 *  - CACHE_COMMON: one LRU (active, inactive and free lists, a ref bit per
 *    element) shared by all threads, and per thread a local free list and
 *    pending list: a thread takes up to CACHE_LOCAL_FREE_TARGET free
 *    elements at a time, so that most fills take no shared lock.
 *  - CACHE_PERTHREAD (BPF_F_NO_COMMON_LRU): each thread owns its lists and
 *    a share of the elements, which never move between threads, so a flood
 *    of misses on one thread evicts only that thread's elements.
 * Eviction rotates the inactive list scanning nr_scans elements (the
 * kernel's 16, and 4 for per-CPU lists; here a setting, 1..128).
 *
 * Elements are allocated when the cache is made (at least
 * CACHE_MIN_PER_THREAD per thread). A fill whose own free list is empty
 * tries the other threads' local free lists (common mode), skipping those
 * flagged empty without taking their lock; only then does it evict.
 * Public: <lcfib/cache.h>.
 *
 * Threads. cache_new() and cache_destroy() belong to the FIB's writer.
 * Readers (registered with fib_reader_register()) call the *_rcu functions
 * between fib_read_lock() and fib_read_unlock(), each with its own
 * struct cache_thread (index 0..threads-1: one thread per index at a time).
 * A hit takes no lock and writes nothing shared but the element's ref bit,
 * and that only when it is clear. A miss looks the trie up and fills,
 * taking the cache's spinlocks (never a lock of the writer).
 *
 * Invalidation protocol (why a cached answer is never stale nor dangling):
 *  1. The cached value is a copy of the struct fib_route, not a pointer
 *     into a leaf; its nh pointer is protected as the trie's is.
 *  2. Each table has generations (struct cache_gens, made by the first
 *     cache of the table): one per slot, a slot being a hash of the
 *     address's first 24 (IPv4) or 32 (IPv6) bits, and a change sequence.
 *  3. For every prefix it edits, the writer (fib.c) calls
 *     cache_gens_begin(): the sequence goes odd, then every slot the
 *     prefix covers gets a new generation; then it edits the trie; then
 *     cache_gens_end() makes the sequence even. Only after that does it
 *     drop the references of what it took out (retire, free after a grace
 *     period).
 *  4. A hit compares the element's generation with its slot's, inside the
 *     read-side section. Equal means the slot had not been bumped when the
 *     reader read it, so the reader's section began before anything of
 *     the change was retired: the copy and its nexthop are valid until
 *     fib_read_unlock(), and the answer is the one a trie lookup just
 *     before the change gave.
 *  5. A fill reads the sequence, then its slot's generation, then the
 *     trie, then the sequence again; it stores the answer only if the
 *     sequence was even and unchanged (no edit overlapped), tagged with
 *     the generation it read. A later edit of a covering prefix bumps the
 *     slot, and the element no longer hits.
 * Elements are reused without a grace period (as in the kernel); a reader
 * validates each element with its seqcount, so a reused element reads as
 * a miss, never as another key's answer.
 */
#ifndef LCFIB_CACHE_H
#define LCFIB_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "addr.h"
#include "errbuf.h"
#include "fib.h"
#include "route.h"

enum cache_mode {
	CACHE_COMMON = 0,
	CACHE_PERTHREAD = 1,
};

#define CACHE_MAX_THREADS        1024
#define CACHE_MIN_PER_THREAD     4   /* the size floor: elements per thread */
#define CACHE_LOCAL_FREE_TARGET  128 /* common mode: free elements a thread takes at once */
#define CACHE_NR_SCANS_MAX       128
#define CACHE_NR_SCANS_COMMON    16 /* the kernel's LRU default */
#define CACHE_NR_SCANS_PERTHREAD 4  /* the kernel's PERCPU_NR_SCANS */

/*
 * Benchmarks only: switch off the lock-free empty-list skip, the size
 * floor, or the flood guard (below).
 */
#define CACHE_F_NO_EMPTY_SKIP  0x1
#define CACHE_F_NO_FLOOR       0x2
#define CACHE_F_NO_FLOOD_GUARD 0x4
/*
 * Second-miss admission (a choice, not the kernel's): a miss stores a new
 * address only if the thread missed on it once before, recently. Each
 * thread keeps a bitmap of the addresses it missed (a TinyLFU doorkeeper:
 * 8 bits an element of its share, cleared once it has taken as many
 * addresses as the share has elements, so at most one bit in 8 is set). On
 * skewed traffic most misses are first and only sightings: they cost a
 * bit instead of a fill (which rotates and evicts), and they no longer
 * push out destinations that come back.
 */
#define CACHE_F_ADMIT_SECOND 0x8
#define CACHE_F_ALL          0xf

/*
 * The flood guard. A thread whose lookups mostly miss (a scan of random
 * destinations, an attack) gains nothing from the cache and pays for it:
 * a miss probes a cold bucket and element before the trie walk, and a
 * fill in a full cache costs several trie lookups (it rotates and evicts:
 * cold elements and buckets, two locks), evicting destinations not yet
 * seen twice (the active list keeps those) for addresses never seen
 * again. So each thread looks at its last CACHE_FLOOD_WINDOW misses: when
 * the hits among them were fewer than one lookup in CACHE_FLOOD_RATIO, its
 * lookups go to the trie alone, but for one in CACHE_FLOOD_SAMPLE, which
 * goes through the cache (probe, and fill on a miss) as always. Those keep
 * measuring the hit ratio, so a window with hits again ends the bypass;
 * the cached destinations stay, and a destination that comes often still
 * gets in. Traffic with a working set (a hit ratio above
 * 1 / CACHE_FLOOD_RATIO) never sees the guard.
 */
#define CACHE_FLOOD_WINDOW 1024 /* misses */
#define CACHE_FLOOD_RATIO  16   /* a flood: hits < lookups / 16 in the window */
#define CACHE_FLOOD_SAMPLE 256  /* then 1 lookup in 256, at random, goes through the cache */
#define CACHE_FLOOD_HITS   16   /* sampled hits that end a window early (the flood is over) */

struct cache_cfg {
	uint32_t size;        /* elements; raised to CACHE_MIN_PER_THREAD * threads */
	unsigned int threads; /* reader thread indexes, 1..CACHE_MAX_THREADS */
	enum cache_mode mode;
	unsigned int nr_scans; /* 1..128; 0: 16 common, 4 per-thread */
	unsigned int flags;    /* CACHE_F_*: the benchmarks' switches, second-miss admission */
};

struct cache_stats {
	uint64_t hits;
	uint64_t misses;        /* lookups that went to the trie */
	uint64_t invalidations; /* misses that found the key with an old generation */
	uint64_t fills;         /* elements written (new or refreshed) */
	uint64_t fill_skips;    /* misses not stored: an edit overlapped, or no element */
	uint64_t evictions;     /* elements taken out of the hash to be reused */
	uint64_t rotations;     /* LRU rotations */
	uint64_t steal_locks;   /* other threads' lists locked looking for an element */
	uint64_t steal_skips;   /* ... and skipped as empty without their lock */
	uint64_t bypassed;      /* lookups the flood guard sent to the trie alone */
	uint64_t first_misses;  /* misses not stored: first sightings (CACHE_F_ADMIT_SECOND) */
};

/* ----------------------------------------------- generations (per table) */

#define CACHE_GEN_BITS  12
#define CACHE_GEN_SLOTS (1u << CACHE_GEN_BITS)

struct cache_gens {
	uint32_t seq; /* odd while the writer edits the table */
	uint32_t family;
	uint64_t bumps; /* slots bumped (writer) */
	uint32_t slot[CACHE_GEN_SLOTS] __attribute__((aligned(64)));
};

/* The writer (lib/fib.c) makes and bumps them through lib/cache-int.h. */

static inline uint32_t cache_gen_slot(uint32_t top)
{
	return (top * 0x9e3779b1u) >> (32 - CACHE_GEN_BITS);
}

/* The slot of an IPv4 address (its first 24 bits) and of an IPv6 key's high half (first 32). */
static inline uint32_t cache_gen_slot4(uint32_t addr)
{
	return cache_gen_slot(addr >> 8);
}

static inline uint32_t cache_gen_slot6(uint64_t hi)
{
	return cache_gen_slot((uint32_t)(hi >> 32));
}

/* ------------------------------------------------------------ the cache */

/* Private: the layout the inline hit path reads. Use the functions. */
struct cache_link {
	uint32_t prev, next;
};

/* An element's answer: one cache line, what a hit reads. */
struct cache_elem {
	uint32_t seq;  /* seqcount: odd while free or being written */
	uint32_t gen;  /* the slot's generation the answer was read under */
	uint32_t next; /* hash chain: element index, or CACHE_NULLS | bucket */
	uint8_t found; /* 0: no route matched (a negative answer) */
	uint8_t pad[3];
	uint64_t key[2]; /* IPv4: key[0] = address; IPv6: high, low halves */
	uint64_t val[2]; /* a struct fib_route, copied */
} __attribute__((aligned(64)));

/*
 * An element's LRU part, in an array of its own (16 bytes, 4 a cache
 * line): rotations and evictions walk the lists in it without reading the
 * elements' lines, which are cold at the inactive end. The kernel embeds
 * the node in the element; apart, a walk costs a quarter of the lines.
 */
struct cache_node {
	struct cache_link l; /* LRU list links */
	uint32_t hash;       /* the key's, to find its bucket when evicted */
	uint8_t ref;         /* set by a hit when clear; cleared by the LRU */
	uint8_t type;        /* the list it is on (under that list's lock) */
	uint16_t owner;      /* its thread's lists (pending, or per-thread mode) */
};

struct cache_bucket {
	uint32_t first;
	uint32_t lock;
};

struct cache_thread {
	struct cache_stats st;
	unsigned int idx;
	/* The flood guard (only the thread itself uses these). */
	uint32_t flood;      /* 0, or bypassing: the sampler's state (never 0) */
	uint32_t win_misses; /* misses in the window */
	uint64_t win_hits;   /* st.hits when the window began */
	/* Second-miss admission's bitmap (NULL without it): addresses missed. */
	uint64_t *door;
	uint32_t door_mask; /* bits - 1 */
	uint32_t door_left; /* addresses it takes before it is cleared */
} __attribute__((aligned(64)));

struct cache_lru;
struct cache_loc;

struct cache {
	struct cache_elem *elems;
	struct cache_node *nodes; /* the elements' LRU parts, same index */
	uint64_t *door;           /* second-miss admission's bitmaps, a slice a thread */
	struct cache_bucket *buckets;
	uint32_t bucket_mask;
	uint32_t n; /* elements */
	struct cache_gens *gens;
	const struct fib_table *tb;
	struct cache_thread *thr;
	struct cache_lru *lru; /* one (common) or one per thread */
	struct cache_loc *loc; /* common mode: one per thread */
	struct cache_link *heads;
	struct cache_cfg cfg; /* as in effect (size after the floor, nr_scans) */
	uint32_t target_free;
	int family;
};

#define CACHE_NULLS     0x80000000u
#define CACHE_CHAIN_MAX 32 /* a longer walk is a reader lost in reused elements: a miss */

#define CACHE_LOAD(x)         __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define CACHE_LOAD_ACQ(x)     __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define CACHE_STORE(x, v)     __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define CACHE_STORE_REL(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
/*
 * The seqcount's fences. ThreadSanitizer does not model fences (GCC refuses
 * them under -Werror=tsan); every access they order is atomic, so it sees
 * no race, and a compiler barrier keeps the code's shape.
 */
#if defined(__SANITIZE_THREAD__)
#define CACHE_FENCE_ACQ() __asm__ __volatile__("" ::: "memory")
#define CACHE_FENCE_REL() __asm__ __volatile__("" ::: "memory")
#else
#define CACHE_FENCE_ACQ() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define CACHE_FENCE_REL() __atomic_thread_fence(__ATOMIC_RELEASE)
#endif
/* A counter of one thread, read by others: no lock prefix, no torn reads. */
#define CACHE_INC(x) CACHE_STORE(x, CACHE_LOAD(x) + 1)

static inline uint32_t cache_hash(uint64_t k0, uint64_t k1)
{
	uint64_t h = (k0 ^ (k1 * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return (uint32_t)(h >> 32);
}

/*
 * The hit path from a bucket's first element @i: 1 (a route, copied to
 * *@out), 0 (no route), -1 (a miss: being rewritten, or of an old
 * generation), -2 (a miss: the chain ended without the key).
 */
static inline int cache_chain_hit_rcu(const struct cache *c, struct cache_thread *t, uint32_t i,
				      uint64_t k0, uint64_t k1, uint32_t slot,
				      struct fib_route *out)
{
	for (unsigned int n = 0; n < CACHE_CHAIN_MAX && !(i & CACHE_NULLS); n++) {
		struct cache_elem *e = &c->elems[i];
		uint32_t s = CACHE_LOAD_ACQ(e->seq);
		uint32_t next = CACHE_LOAD(e->next);

		if (s & 1)
			return -1;
		if (CACHE_LOAD(e->key[0]) == k0 && CACHE_LOAD(e->key[1]) == k1) {
			uint64_t v[2] = { CACHE_LOAD(e->val[0]), CACHE_LOAD(e->val[1]) };
			uint32_t gen = CACHE_LOAD(e->gen);
			int found = CACHE_LOAD(e->found);

			CACHE_FENCE_ACQ();
			if (CACHE_LOAD(e->seq) != s)
				return -1;
			if (gen != CACHE_LOAD_ACQ(c->gens->slot[slot])) {
				CACHE_INC(t->st.invalidations);
				return -1;
			}
			/* Only when clear: a hot element's line is not written on every hit. */
			if (!CACHE_LOAD(c->nodes[i].ref))
				CACHE_STORE(c->nodes[i].ref, 1);
			CACHE_INC(t->st.hits);
			memcpy(out, v, sizeof(*out));
			return found;
		}
		CACHE_FENCE_ACQ();
		if (CACHE_LOAD(e->seq) != s)
			return -1;
		i = next;
	}
	return i & CACHE_NULLS ? -2 : -1;
}

/* The hit path: as cache_chain_hit_rcu(), from the key's bucket. */
static inline int cache_hit_rcu(const struct cache *c, struct cache_thread *t, uint64_t k0,
				uint64_t k1, uint32_t slot, struct fib_route *out)
{
	uint32_t h = cache_hash(k0, k1);

	return cache_chain_hit_rcu(c, t, CACHE_LOAD_ACQ(c->buckets[h & c->bucket_mask].first), k0,
				   k1, slot, out);
}

/*
 * Out of line: the miss path (trie lookup, then fill), and a lookup while
 * the flood guard is on. Use the functions below.
 */
bool cache_miss4_rcu(struct cache *c, struct cache_thread *t, uint32_t addr, struct fib_route *out);
bool cache_miss6_rcu(struct cache *c, struct cache_thread *t, const struct in6_addr *addr,
		     struct fib_route *out);
bool cache_flood4_rcu(struct cache *c, struct cache_thread *t, uint32_t addr,
		      struct fib_route *out);
bool cache_flood6_rcu(struct cache *c, struct cache_thread *t, const struct in6_addr *addr,
		      struct fib_route *out);

/*
 * Reader. What fib_lookup4_rcu() on the cache's table returns, copied to
 * *@out: true, or false when no route matches. The copy's nh is valid until
 * fib_read_unlock(). @addr in host byte order.
 */
static inline bool cache_lookup4_rcu(struct cache *c, struct cache_thread *t, uint32_t addr,
				     struct fib_route *out)
{
	int r;

	if (__builtin_expect(t->flood != 0, 0))
		return cache_flood4_rcu(c, t, addr, out);
	r = cache_hit_rcu(c, t, addr, 0, cache_gen_slot4(addr), out);
	if (r >= 0)
		return r;
	return cache_miss4_rcu(c, t, addr, out);
}

/* Reader. As cache_lookup4_rcu(), for IPv6. */
static inline bool cache_lookup6_rcu(struct cache *c, struct cache_thread *t,
				     const struct in6_addr *addr, struct fib_route *out)
{
	trie_key6 k = addr_key6_raw(addr);
	int r;

	if (__builtin_expect(t->flood != 0, 0))
		return cache_flood6_rcu(c, t, addr, out);
	r = cache_hit_rcu(c, t, (uint64_t)(k >> 64), (uint64_t)k,
			  cache_gen_slot6((uint64_t)(k >> 64)), out);
	if (r >= 0)
		return r;
	return cache_miss6_rcu(c, t, addr, out);
}

#define CACHE_BATCH_MAX 64

/*
 * Reader. @n lookups as cache_lookup4_rcu(), interleaved so that their
 * memory reads overlap: every address's bucket, then its element, then the
 * misses' trie walks together (fib_lookup4_batch_rcu()), then their fills.
 * out[i] is as cache_lookup4_rcu()'s *out; the result has bit i set when a
 * route matched addr[i]. Each copy's nh is valid until fib_read_unlock().
 * At most CACHE_BATCH_MAX: only the first CACHE_BATCH_MAX of a larger @n
 * are looked up.
 */
uint64_t cache_lookup4_batch_rcu(struct cache *c, struct cache_thread *t, const uint32_t *addr,
				 struct fib_route *out, unsigned int n);
/* Reader. As cache_lookup4_batch_rcu(), for IPv6. */
uint64_t cache_lookup6_batch_rcu(struct cache *c, struct cache_thread *t,
				 const struct in6_addr *addr, struct fib_route *out,
				 unsigned int n);

/* Reader. cache_lookup4_rcu() as a call, not inlined (benchmarks: what inlining saves). */
bool cache_lookup4_call_rcu(struct cache *c, struct cache_thread *t, uint32_t addr,
			    struct fib_route *out);

/*
 * Writer. A cache in front of table @table (0: main) of @family, made if
 * new. NULL with errno set and @err saying why (-EINVAL: a setting out of
 * range; -ENOMEM).
 */
struct cache *cache_new(struct fib *f, uint32_t table, int family, const struct cache_cfg *cfg,
			struct errbuf *err);
/* When no reader can reach it any more (after a grace period). */
void cache_destroy(struct cache *c);

/* The state of reader thread index @i (< cfg.threads). */
static inline struct cache_thread *cache_thread(struct cache *c, unsigned int i)
{
	return &c->thr[i];
}

/* Any thread. The settings in effect (the size after the floor). */
void cache_get_cfg(const struct cache *c, struct cache_cfg *cfg);
/* Any thread. Counters summed over the threads. */
void cache_get_stats(const struct cache *c, struct cache_stats *st);
const char *cache_mode_name(enum cache_mode m);

#endif
