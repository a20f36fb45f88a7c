/* SPDX-License-Identifier: MIT */
/*
 * The LC-trie algorithm, written once for both key widths. Included by
 * lib/trie4.c and lib/trie6.c, which define:
 *
 *   TRIE         the public name prefix (trie4, trie6)
 *   TKEY         the key type (uint32_t, trie_key6)
 *   KEYLEN       bits in a key (32, 128)
 *   key_shr()    x >> s for 0 <= s <= KEYLEN (the shift by KEYLEN gives 0)
 *   key_fls()    index of the highest set bit of a nonzero key
 *
 * The design is the kernel's fib_trie (see net/ipv4/fib_trie.c for the
 * derivations of the thresholds and of the lookup); the code is our own.
 * Differences from the kernel, each for compactness:
 *  - a leaf holds its routes inline (16 bytes each) and is replaced, RCU
 *    style, when they change, instead of carrying an hlist of aliases;
 *  - a leaf of one route whose key its parent's key and index give sits in
 *    the parent's slot, its route shared with every such leaf of the same
 *    route (see slot_inline());
 *  - leaves have no parent pointer and nothing embeds an rcu_head: the
 *    writer knows the path it walked, and retired objects are recorded by
 *    lib/reclaim.c outside the objects.
 */

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <urcu/pointer.h>
#include <urcu/system.h>
#include <urcu/uatomic.h>

#include "lib/trie.h"

#define TRIE_CAT2(a, b) a##_##b
#define TRIE_CAT(a, b)  TRIE_CAT2(a, b)
#define TN(name)        TRIE_CAT(TRIE, name)

/*
 * The header common to leaves and internal nodes. A child index of an
 * internal node is the key's bits [pos, pos + bits); its key holds the bits
 * above those, zeros below. A leaf has pos = bits = 0 and its exact key.
 * slen is the largest suffix length (KEYLEN - plen) of any prefix below,
 * and at least pos; readers load it racily, so the writer updates it with
 * single stores.
 */
struct node {
	TKEY key;
	uint8_t pos;
	uint8_t bits;
	uint8_t slen;
	uint8_t nr; /* leaf: number of routes; internal node: 0 or TNODE_INFLATED (writer only) */
};

/* An internal node inflate() made inflated already: resize() owes its full children theirs. */
#define TNODE_INFLATED 1

struct leaf {
	struct node n;
	struct fib_route r[]; /* longest prefix first */
};

/*
 * An internal node. After its 2^bits child pointers come 2^bits bytes:
 * each child's slen, so that backtracking can tell which children may
 * hold a shorter prefix without touching them (64 children a cache line
 * instead of one). The writer keeps each byte at least the child's slen
 * whenever a reader can see the child.
 */
struct tnode {
	struct node n;
	uint32_t empty_children; /* writer only, as below */
	uint32_t full_children;  /* children with no skipped bits (see tnode_full()) */
	struct tnode *parent;    /* read by lookups while backtracking */
	uintptr_t child[];       /* slots: see slot_node() */
};

/*
 * The root's fallbacks: for each child index i of the root node, the first
 * route of the longest prefix that covers the whole of child i's range and
 * is no longer than the root's index (plen <= KEYLEN - pos), or 0. Such a
 * prefix sits at the first key of some child j <= i, on j's child-0 chain.
 * A lookup whose descent found nothing below the root takes its answer
 * from here, one read, instead of backtracking through the root's 2^bits
 * children, where random addresses spent most of their time.
 *
 * Kept by the writer for the root it names: rebuilt whole when the root
 * node changes (the old table is retired before the old root), updated in
 * place for the range of a leaf with such a prefix before that leaf is
 * retired, so an entry never names a leaf reclamation may free. None in
 * bulk mode, where the root is rebuilt at the end. Readers use a table only
 * under the root it names, and only for keys inside that root: a key that
 * differs in the root's skipped bits is not in child i's range, and only a
 * prefix shorter than the root's range can cover it (such lookups, and
 * those that descended another root, backtrack as the kernel does).
 * Memory class MEM_FALLBACK.
 */
struct root_fb {
	struct tnode *root; /* the root node these entries are for */
	TKEY key;           /* its key, pos and bits: the keys inside it */
	uint8_t pos, bits;
	bool in_slots;     /* the root's empty slots hold the entries, none too (SLOT_ROUTE) */
	bool routes;       /* route[] is there: see FB_ROUTES_MAX_BITS */
	uintptr_t route[]; /* const struct fib_route * in a leaf, loaded as slots are */
};

/*
 * A root of more bits than this whose empty slots hold the entries (a
 * low root threshold, trie*_set_root_threshold(): 5 % gives the full
 * view 24 bits) keeps no route[]: its empty slots answer, and nearly
 * every lookup ends at the root (at 24 bits, one read a lookup; one in
 * ten thousand random addresses finds nothing below it), while the array
 * would take 8 bytes a slot, 128 MiB at 24 bits. Readers see no
 * fallbacks then (fb_reader()): a lookup that finds nothing below the
 * root backtracks through it, as the kernel's does. The writer keeps the
 * root's slots as ever.
 */
#define FB_ROUTES_MAX_BITS 22

/* Whether the fallbacks of a root of @bits keep route[] (FB_ROUTES_MAX_BITS). */
static inline bool fb_keeps_routes(bool in_slots, unsigned int bits)
{
	return !in_slots || bits <= FB_ROUTES_MAX_BITS;
}

/*
 * The routes of inline leaves (see slot_inline()), one copy of each value,
 * with the number of inline leaves that hold it: an open-addressing table,
 * writer only. A route is retired, as a leaf is, when its last leaf goes.
 */
struct shared_ent {
	struct fib_route *r; /* NULL: a free entry */
	uint64_t refs;
};

struct shared {
	struct shared_ent *v;
	size_t cap; /* a power of two, or 0 */
	size_t n;
	uint64_t refs; /* the inline leaves: the sum of the entries' refs */
};

/*
 * A new value is shared only while the table holds fewer than this plus a
 * quarter of the inline leaves. A shared route (16 bytes, and 16 or 32 of
 * table) pays for itself from two leaves (24 bytes each as leaves of their
 * own); where routes hardly repeat (a metric a prefix, say), the leaves
 * keep leaves of their own, and the table stays small. The full view
 * shares 153 values among 597,537 leaves.
 */
#define SHARED_FREE 64

struct TRIE {
	uintptr_t root;     /* a slot, as the children's */
	struct root_fb *fb; /* the root's fallbacks (rcu), or NULL */
	bool fb_stale;      /* writer: the root changed since fb was built */
	struct mem *mem;
	struct reclaim *rc;
	/* Writer-maintained counts; other threads read them with relaxed loads. */
	uint64_t nr_routes;
	uint64_t nr_leaves;
	uint64_t nr_tnodes;
	/*
	 * Bulk mode (writer only): edits leave resizing to trie*_rebalance(),
	 * and start from the node of the previous insert (the finger), which
	 * makes a sorted load cheap. An insert that had to walk more than
	 * BULK_WALK_MAX levels (unsorted input, or a jump in sorted input)
	 * resizes its path as outside bulk mode and drops the finger; no other
	 * internal node is unlinked in bulk mode, so the finger stays in the trie.
	 */
	bool deferred;
	bool top_down; /* trie*_set_bulk() resizes parents first: no eager child resizes */
	struct tnode *finger;
	uint64_t
		bulk_leaves; /* leaves its lazy inserts made since bulk mode began: see rebuild() */
	/* Bulk mode's order so far: see BULK_UNSORTED_MIN. */
	bool eager;
	TKEY bulk_last;
	uint64_t bulk_descents;
	unsigned int build_threads; /* threads a rebuild may use (1: the writer alone) */
	/* The root's thresholds, in percent: trie*_set_root_threshold(). */
	uint8_t inflate_root, halve_root;
	bool root_refit;            /* set in bulk mode: resize the root to them at its end */
	uint64_t split_builds;      /* rebuilds a second thread helped with (trie_stats) */
	struct shared shared;       /* the routes of inline leaves */
	uint64_t nr_shared;         /* shared.n, for trie_stats */
};

/*
 * Thresholds of fib_trie.c, in percent. A node inflates when its nonempty
 * children plus its full children (which inflating splits in two) reach
 * inflate_threshold percent of twice its size: 50 * used >= threshold *
 * size. It halves when its nonempty children fall under halve_threshold
 * percent of its size. The root is kept larger, as it is always visited.
 * Each can be set at build time (CPPFLAGS=-DINFLATE_THRESHOLD=65) to measure
 * another trade; an inflate threshold must stay above its halve threshold,
 * or a node halves right after it inflates, and back (see docs/BENCHMARKS.md,
 * issue 9's sixth round: none of those tried beat these for IPv4).
 * lib/trie6.c sets IPv6's before this: the root's pair for every node.
 *
 * The root's are not the kernel's (inflate 30 %, halve 15 %) but 25 % and
 * half that, TRIE_ROOT_THRESHOLD_DEFAULT, as fib_set_root_threshold()
 * pairs them: the IPv4 full view's root has 19 bits instead of 18, for
 * 36.7 accounted bytes a route instead of 33.0 (issue 9 allows 40), and
 * its leaves sit at 3.09 levels instead of 3.23. Batches of lookups ran
 * 16 % faster inside table prefixes and 26 % faster on uniformly random
 * addresses, single lookups 12-13 % faster (medians of six runs each;
 * docs/BENCHMARKS.md, issue 9's twenty-third round). Every threshold from
 * 21 to 26 % gives those 19 bits, loaded one route at a time or in bulk;
 * 25 leaves the table room to grow before its root takes 20 (at 20 %
 * today: 45.3 bytes a route, over the 40) and to shrink before it is back
 * at 18 (a bulk load at 27 %).
 */
#ifndef HALVE_THRESHOLD
#define HALVE_THRESHOLD 25
#endif
#ifndef INFLATE_THRESHOLD
#define INFLATE_THRESHOLD 50
#endif
#ifndef INFLATE_THRESHOLD_ROOT
#define INFLATE_THRESHOLD_ROOT TRIE_ROOT_THRESHOLD_DEFAULT
#endif
#ifndef HALVE_THRESHOLD_ROOT
#define HALVE_THRESHOLD_ROOT (INFLATE_THRESHOLD_ROOT / 2)
#endif
#if INFLATE_THRESHOLD <= HALVE_THRESHOLD || INFLATE_THRESHOLD_ROOT <= HALVE_THRESHOLD_ROOT
#error "an inflate threshold at or below its halve threshold: nodes would inflate and halve in turn"
#endif
/*
 * Bulk mode: an insert whose walk from the finger (or the root) went down
 * more levels than this resizes its path at once. Unsorted input would
 * otherwise grow a binary trie, tens of levels deep, that every later
 * insert walks down (a shuffled full table loaded slower in bulk mode than
 * one route at a time); sorted input walks a level or two from the finger
 * and never pays for it. 6 rather than 8: shuffled bulk loads 10-40 %
 * faster in 4 of 5 paired rounds, sorted ones the same (4 was no better).
 */
#define BULK_WALK_MAX 6
/*
 * Bulk mode on unsorted input: once this many of its inserts came below
 * the one before, and at least a quarter of them did (a shuffled table:
 * half), the rest of the load resizes as it goes, as outside bulk mode
 * (the trie is "eager"). Leaving the resize to the end pays where the
 * finger saves the walk, on sorted input; on shuffled input the one-bit
 * nodes left behind are walked through by later inserts and inflated
 * anyway, and bulk mode was slower than one route at a time. Sorted input
 * goes down only where a run begins anew (a second file, say).
 */
#define BULK_UNSORTED_MIN 1024
/*
 * Whether a lookup that found nothing on its descent backtracks from where
 * the descent ended (the key still inside that node), or walks again from
 * the root as the kernel does: see TN(lookup_rcu)().
 */
#define RESUME_DESCENT (KEYLEN == 32)
/* Inflate or halve steps per node per resize: bounds the work of one update. */
#define MAX_WORK 10
/*
 * Inflate steps made in one go (see census_unit()). tests/trie4_stepwise.c
 * builds the tries again with 1, the kernel's way, for test_trie to check
 * that both give the same trie.
 */
#ifndef INFLATE_STEPS_MAX
#define INFLATE_STEPS_MAX MAX_WORK
#endif

/* The trie's counters: the writer alone adds, any thread reads (uatomic_read). */
#define STAT_ADD(field, v) uatomic_set(&(field), (field) + (v))

/*
 * slen and its per-child copies change in place while readers look: single
 * relaxed atomic accesses (plain moves on x86, and visible as such to TSan).
 * The writer's own reads need none.
 */
#define SLEN_LOAD(x)     __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define SLEN_STORE(x, v) __atomic_store_n(&(x), (uint8_t)(v), __ATOMIC_RELAXED)

static inline bool node_is_leaf(const struct node *n)
{
	return n->bits == 0;
}

static inline struct tnode *node_tnode(const struct node *n)
{
	return (struct tnode *)n;
}

static inline struct leaf *node_leaf(const struct node *n)
{
	return (struct leaf *)n;
}

/*
 * A child slot holds the child's address with the child's pos in bits
 * 48-55 and its bits in bits 56-63 (0 for a leaf; 0 for an empty slot), so
 * a lookup computes its index in the child from the slot alone: one
 * dependent miss per level (the slot) instead of two (the child's header,
 * then its slot). A node's pos and bits never change after it is made
 * (inflate and halve make new nodes), so a slot is written once per child
 * and stays right. User-space addresses of x86-64 and arm64 fit in 48 bits;
 * node_alloc_check() refuses one that does not.
 */
#define SLOT_ADDR_BITS 48
_Static_assert(sizeof(uintptr_t) == 8, "slots need 64-bit pointers");

/*
 * An empty slot may hold an answer instead of 0: a route's address with
 * bit 0 set, which no node's address has. In an internal node N, empty
 * child i holds the longest prefix that covers all of child i's range and
 * whose leaf is in N's subtree (at the first key of a child j <= i), if
 * there is one: for a key inside N that comes down to child i, that is the
 * kernel's answer (a longer prefix covering the key would sit in child i,
 * and a prefix whose leaf is outside N covers all of N, so it is shorter).
 * A descent that came down without skipping a bit (each node's index right
 * below its parent's, the root's at the top) has a key inside every node it
 * passed, and ends there with the answer in the one slot it read, where
 * backtracking took three or four more dependent reads; one that skipped
 * bits reads N's header to tell (key_inside()): IPv6's paths nearly all
 * skip bits. Without such a prefix the slot stays 0. The root, while its
 * fallbacks are published and if it has no skipped bits (pos + bits =
 * KEYLEN, so that the prefixes in it are all there are), holds its
 * fallback entries in its empty slots, none included (bit 0 alone): the
 * same routes, and the full answer.
 *
 * The writer keeps every answer right whenever a reader can see it (set
 * before a new node is published, set again when a prefix that can be named
 * changes, before its leaf is retired; see answers_fill()). To every other
 * reader (backtracking, finds, walks) and to the writer's structure such a
 * slot is empty: slot_node() gives NULL, and the writer reads slots
 * through slot_writer(). An inline leaf (slot_inline()) has the same tag,
 * and its prefix length in the pos byte, where an answer has 0.
 */
#define SLOT_ROUTE ((uintptr_t)1)
_Static_assert(_Alignof(struct fib_route) > 1, "a route's address leaves bit 0 free");

/* A slot's address bits. */
#define SLOT_ADDR_MASK (((uintptr_t)1 << SLOT_ADDR_BITS) - 1)

static inline unsigned int slot_pos(uintptr_t s)
{
	return (unsigned int)(s >> SLOT_ADDR_BITS) & 0xff;
}

static inline unsigned int slot_bits(uintptr_t s)
{
	return (unsigned int)(s >> (SLOT_ADDR_BITS + 8));
}

/*
 * A leaf of one route may sit in its parent's slot instead of a leaf of
 * its own (an inline leaf): SLOT_ROUTE, the address of the route, and the
 * prefix length plus one in the pos byte (an answer's is 0). Its key is
 * not stored: the leaf is alone in child i of a node N of pos p only if
 * its prefix is no longer than KEYLEN - p, so that the key's bits below p
 * are host bits, all zero, and the key is N's key | i << p
 * (inline_key()). Its route is one of the trie's shared routes (struct
 * shared): leaves with the same route (next hop, metric, prefix length and
 * the rest) hold one copy, so an inline leaf costs no memory but its slot,
 * where a leaf of its own took 24 bytes (IPv4) or 40 (IPv6).
 *
 * To a lookup that comes down to it, the slot is what an answer in an
 * empty slot is (the route, if the key is inside N), and it is read the
 * same way (slot_done(), slot_answer()); backtracking and the kernel's walk
 * check its prefix against the key (inline_covers()). The writer sees a
 * leaf (struct lview), and keeps the rule on the way: a node that takes it
 * with a larger pos (halve(), collapse(), a piece an inflate moves up, the
 * root slot, a rebuild) gets a leaf of its own instead (materialized).
 */
static inline bool slot_inline(uintptr_t s)
{
	return (s & SLOT_ROUTE) && slot_pos(s);
}

/*
 * The route an answer slot holds (NULL: the root's, where no prefix covers
 * the child), or an inline leaf's.
 */
static inline const struct fib_route *slot_route(uintptr_t s)
{
	return (const struct fib_route *)((s & SLOT_ADDR_MASK) - SLOT_ROUTE);
}

/* An inline leaf's slot, for the shared route @r. */
static inline uintptr_t inline_slot(const struct fib_route *r)
{
	return (uintptr_t)r | SLOT_ROUTE | (uintptr_t)(r->plen + 1u) << SLOT_ADDR_BITS;
}

/* The prefix length of the inline leaf in slot @s. */
static inline unsigned int inline_plen(uintptr_t s)
{
	return slot_pos(s) - 1;
}

/*
 * Whether the slot @s, an inline leaf, may sit inline under a node of pos
 * @pos (KEYLEN + 1 for the trie's root slot, which holds none).
 */
static inline bool inline_fits(uintptr_t s, unsigned int pos)
{
	return inline_plen(s) + pos <= KEYLEN;
}

static inline struct node *slot_node(uintptr_t s)
{
	/* 0 for a route: (s & SLOT_ROUTE) - 1 masks everything out when the bit is set. */
	return (struct node *)(s & SLOT_ADDR_MASK & ((s & SLOT_ROUTE) - 1));
}

/*
 * The internal node of a slot that has slot_bits(), for lookups: such a
 * slot has no route tag to mask out (slot_node() costs three instructions
 * more a level).
 */
static inline struct tnode *slot_tnode(uintptr_t s)
{
	return node_tnode((struct node *)(s & SLOT_ADDR_MASK));
}

/*
 * The slot @s as the writer's structure sees it: an answer (SLOT_ROUTE, pos
 * byte 0) is an empty slot; an inline leaf is a leaf.
 */
static inline uintptr_t slot_writer(uintptr_t s)
{
	return (s & SLOT_ROUTE) && !slot_pos(s) ? 0 : s;
}

/*
 * Writer: the answer @v (a route in a leaf, or 0) in child @j's slot of
 * @tn, if that child is empty; @full: @v is the full answer (the root's
 * fallbacks), so none is stored too.
 */
static void answer_set(struct tnode *tn, unsigned long j, uintptr_t v, bool full)
{
	uintptr_t *p = &tn->child[j], want = v || full ? v | SLOT_ROUTE : 0;

	/* Only where it changes: a reader may be loading the slot. */
	if (!slot_writer(*p) && *p != want)
		__atomic_store_n(p, want, __ATOMIC_RELEASE);
}

/*
 * A leaf's slot has bits 0 and, in the pos byte, the length of the leaf's
 * longest prefix plus one (a leaf never changes: a new one replaces it). A
 * lookup that came down without skipping a bit (each node's index right
 * below its parent's, the root's at the top) to a node of pos p has a key
 * that agrees with the leaf above p; if that longest prefix is no longer
 * than KEYLEN - p it covers the key, and it is the answer (the slot holds
 * only this leaf, and a longer prefix covering the key would be in it), so
 * the lookup ends without reading the leaf: the route is at a known offset.
 */
static inline unsigned int slot_leaf_plen1(uintptr_t s)
{
	return slot_pos(s);
}

/*
 * Reader: whether the slot @s, not an internal node's, ends a descent that
 * came down to a node of pos @above without skipping a bit, with its
 * answer in one read: an answer in an empty slot (SLOT_ROUTE), or a leaf
 * whose longest prefix covers the key (slot_leaf_plen1()), inline or not.
 * An answer slot has 0 in the pos byte, so the second test holds for it;
 * an inline leaf's prefix is no longer than KEYLEN - above, so it holds
 * for that too (slot_answer() gives either's route). Tested as one,
 * the two ends take one branch, not two that tell them apart: IPv4's
 * batch ran 10-20 % faster. (The caller tests first that no bit was
 * skipped: IPv6's descents nearly all skip some, and that one test kept
 * its batch as fast as before.)
 */
static inline bool slot_done(uintptr_t s, unsigned int above)
{
	return (s != 0) & (slot_pos(s) + above <= KEYLEN + 1);
}

/* Reader: the answer of a slot that slot_done() holds, without a branch. */
static inline const struct fib_route *slot_answer(uintptr_t s)
{
	uintptr_t route = s & SLOT_ROUTE;

	return (const struct fib_route *)((s & SLOT_ADDR_MASK) - route +
					  (route ^ 1) * offsetof(struct leaf, r));
}

static inline uintptr_t node_slot(const struct node *n)
{
	if (!n)
		return 0;
	if (node_is_leaf(n))
		return (uintptr_t)n | (uintptr_t)(((const struct leaf *)n)->r[0].plen + 1u)
					      << SLOT_ADDR_BITS;
	return (uintptr_t)n | (uintptr_t)n->pos << SLOT_ADDR_BITS |
	       (uintptr_t)n->bits << (SLOT_ADDR_BITS + 8);
}

/* Reader: the slot at @p, with the ordering of rcu_dereference(). */
static inline uintptr_t slot_load(const uintptr_t *p)
{
	return __atomic_load_n(p, __ATOMIC_CONSUME);
}

/* Writer: publishes @n at @p, with the ordering of rcu_assign_pointer(). */
static inline void slot_publish(uintptr_t *p, const struct node *n)
{
	__atomic_store_n(p, node_slot(n), __ATOMIC_RELEASE);
}

/* Writer: child @i of @tn. */
static inline struct node *child_get(const struct tnode *tn, unsigned long i)
{
	return slot_node(tn->child[i]);
}

/* Reader: child @i of @tn. */
static inline const struct node *child_rcu(const struct tnode *tn, unsigned long i)
{
	return slot_node(slot_load(&tn->child[i]));
}

static inline unsigned long child_length(const struct node *n)
{
	return 1ul << n->bits;
}

/* The key's bits from n->pos up, relative to n's key: below 2^bits iff the key is inside n. */
static inline TKEY get_cindex(TKEY key, const struct node *n)
{
	return (key ^ n->key) >> n->pos;
}

/* The child index of @key in @n; only for keys known to be inside n. */
static inline unsigned long get_index(TKEY key, const struct node *n)
{
	return (unsigned long)((key ^ n->key) >> n->pos);
}

/* Whether the bits of @key above the lowest set bit of n's key differ from n's. */
static inline bool prefix_mismatch(TKEY key, const struct node *n)
{
	TKEY prefix = n->key;

	return ((key ^ prefix) & (prefix | -prefix)) != 0;
}

/*
 * Reader: whether @key is inside @tn (agrees with its key above its index
 * bits). An answer in an empty slot of tn holds for such a key (see
 * SLOT_ROUTE) however the descent came to tn.
 */
static inline bool key_inside(const struct tnode *tn, TKEY key)
{
	return !key_shr(key ^ tn->n.key, tn->n.pos + tn->n.bits);
}

/* Whether @n is an internal node directly under @tn with no skipped bits. */
static inline bool tnode_full(const struct tnode *tn, const struct node *n)
{
	return n && !node_is_leaf(n) && n->pos + n->bits == tn->n.pos;
}

/* tnode_full() read off a slot of @tn: the child itself is not touched. */
static inline bool slot_full(const struct tnode *tn, uintptr_t s)
{
	return slot_bits(s) && slot_pos(s) + slot_bits(s) == tn->n.pos;
}

static inline size_t leaf_size(unsigned int nr)
{
	return sizeof(struct leaf) + nr * sizeof(struct fib_route);
}

static inline size_t tnode_size(unsigned int bits)
{
	/* Rounded as the allocator rounds, so statistics and accounting agree. */
	return (sizeof(struct tnode) + ((sizeof(uintptr_t) + 1) << bits) + 7) & ~(size_t)7;
}

static inline uint8_t *child_slen(const struct tnode *tn)
{
	return (uint8_t *)&tn->child[child_length(&tn->n)];
}

/* Sets tn's slen, and the copy its parent keeps. */
static inline void tnode_set_slen(struct tnode *tn, unsigned int slen)
{
	SLEN_STORE(tn->n.slen, slen);
	if (tn->parent)
		SLEN_STORE(child_slen(tn->parent)[get_index(tn->n.key, &tn->parent->n)], slen);
}

static inline TKEY key_mask_low(TKEY key, unsigned int shift)
{
	return shift >= KEYLEN ? 0 : (key >> shift) << shift;
}

/* Whether @key has bits set past a prefix length of @plen (or @plen is too long). */
static inline bool key_has_host_bits(TKEY key, unsigned int plen)
{
	return plen > KEYLEN || key_mask_low(key, KEYLEN - plen) != key;
}

/* ---------------------------------------------------------------- nodes */

/*
 * @p, just allocated, or NULL: an address a slot cannot hold is freed
 * and refused (never seen on x86-64 or arm64 Linux).
 */
static void *node_fits(struct TRIE *t, enum mem_class c, void *p, size_t size)
{
	if (p && ((uintptr_t)p >> SLOT_ADDR_BITS)) {
		mem_free(t->mem, c, p, size);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

static void *node_alloc(struct TRIE *t, enum mem_class c, size_t size)
{
	return node_fits(t, c, mem_alloc(t->mem, c, size), size);
}

/* Makes @tn, of tnode_size(@bits) bytes, an empty node of @key's bits above @pos + @bits. */
static void tnode_init(struct tnode *tn, TKEY key, unsigned int pos, unsigned int bits)
{
	memset(tn, 0, tnode_size(bits));
	tn->n.key = key_mask_low(key, pos + bits);
	tn->n.pos = (uint8_t)pos;
	tn->n.bits = (uint8_t)bits;
	tn->n.slen = (uint8_t)pos;
	tn->empty_children = (uint32_t)(1ul << bits);
}

static struct tnode *tnode_new(struct TRIE *t, TKEY key, unsigned int pos, unsigned int bits)
{
	struct tnode *tn = node_alloc(t, MEM_TNODE, tnode_size(bits));

	if (!tn)
		return NULL;
	tnode_init(tn, key, pos, bits);
	STAT_ADD(t->nr_tnodes, 1);
	return tn;
}

/* Makes @l, of leaf_size(@nr) bytes, the leaf of @key with the routes @r[@nr]; returns its slot. */
static uintptr_t leaf_fill(struct leaf *l, TKEY key, const struct fib_route *r, unsigned int nr)
{
	l->n = (struct node){ .key = key,
			      .slen = (uint8_t)(KEYLEN - r[nr - 1].plen),
			      .nr = (uint8_t)nr };
	memcpy(l->r, r, nr * sizeof(l->r[0]));
	return node_slot(&l->n);
}

/* Frees a node no reader has seen (an unwind path). */
static void node_free_unpublished(struct TRIE *t, struct node *n)
{
	if (node_is_leaf(n)) {
		mem_free(t->mem, MEM_LEAF, n, leaf_size(n->nr));
	} else {
		STAT_ADD(t->nr_tnodes, -1);
		mem_free(t->mem, MEM_TNODE, n, tnode_size(n->bits));
	}
}

/* Hands an unlinked node to reclamation: it is freed after a grace period. */
static void node_retire(struct TRIE *t, struct node *n)
{
	if (node_is_leaf(n)) {
		reclaim_retire(t->rc, n, leaf_size(n->nr), MEM_LEAF);
	} else {
		STAT_ADD(t->nr_tnodes, -1);
		reclaim_retire(t->rc, n, tnode_size(n->bits), MEM_TNODE);
	}
}

/* ------------------------------------------------------- shared routes */

static inline size_t shared_hash(const struct fib_route *r)
{
	uint64_t w[2];

	_Static_assert(sizeof(*r) == sizeof(w), "a route is two words, no padding");
	memcpy(w, r, sizeof(w));
	w[0] = (w[0] ^ (w[1] * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
	return (size_t)(w[0] ^ w[0] >> 31);
}

/* The entry of the route value @r, or the free entry where it would go. */
static struct shared_ent *shared_slot(const struct shared *sh, const struct fib_route *r)
{
	size_t mask = sh->cap - 1;

	for (size_t i = shared_hash(r) & mask;; i = (i + 1) & mask)
		if (!sh->v[i].r || !memcmp(sh->v[i].r, r, sizeof(*r)))
			return &sh->v[i];
}

/* Doubles the table (or makes it); false without the memory. */
static bool shared_grow(struct TRIE *t)
{
	struct shared *sh = &t->shared;
	size_t cap = sh->cap ? 2 * sh->cap : 64;
	struct shared old = *sh;
	struct shared_ent *v = mem_alloc(t->mem, MEM_HASH, cap * sizeof(*v));

	if (!v)
		return false;
	memset(v, 0, cap * sizeof(*v));
	sh->v = v;
	sh->cap = cap;
	for (size_t i = 0; i < old.cap; i++)
		if (old.v[i].r)
			*shared_slot(sh, old.v[i].r) = old.v[i];
	if (old.v)
		mem_free(t->mem, MEM_HASH, old.v, old.cap * sizeof(*old.v));
	return true;
}

/*
 * Writer: the shared copy of the route @r for one more inline leaf; NULL
 * without the memory, or if a new value would not pay (SHARED_FREE): the
 * leaf has a leaf of its own then.
 */
static const struct fib_route *shared_get(struct TRIE *t, const struct fib_route *r)
{
	struct shared *sh = &t->shared;
	struct shared_ent *e;

	if (2 * (sh->n + 1) > sh->cap && !shared_grow(t))
		return NULL;
	e = shared_slot(sh, r);
	if (!e->r) {
		if (sh->n >= SHARED_FREE + sh->refs / 4)
			return NULL;
		e->r = node_alloc(t, MEM_LEAF, sizeof(*r));
		if (!e->r)
			return NULL;
		*e->r = *r;
		e->refs = 0;
		sh->n++;
		STAT_ADD(t->nr_shared, 1);
	}
	e->refs++;
	sh->refs++;
	return e->r;
}

/*
 * Writer: one inline leaf less holds the shared route of value @r; the last
 * one retires it (readers may be reading it).
 */
static void shared_put(struct TRIE *t, const struct fib_route *r)
{
	struct shared *sh = &t->shared;
	struct shared_ent *e = shared_slot(sh, r);
	size_t mask = sh->cap - 1, i, j;

	sh->refs--;
	if (--e->refs)
		return;
	reclaim_retire(t->rc, e->r, sizeof(*e->r), MEM_LEAF);
	sh->n--;
	STAT_ADD(t->nr_shared, -1);
	/* Linear probing's deletion: later entries of the run move back where they may. */
	i = (size_t)(e - sh->v);
	e->r = NULL;
	for (j = (i + 1) & mask; sh->v[j].r; j = (j + 1) & mask) {
		size_t home = shared_hash(sh->v[j].r) & mask;

		if (((j - home) & mask) >= ((j - i) & mask)) {
			sh->v[i] = sh->v[j];
			sh->v[j].r = NULL;
			i = j;
		}
	}
}

/* The number of inline leaves that hold the shared route @r (0: it is not shared). */
static uint64_t shared_refs(const struct TRIE *t, const struct fib_route *r)
{
	const struct shared_ent *e = t->shared.cap ? shared_slot(&t->shared, r) : NULL;

	return e && e->r == r ? e->refs : 0;
}

/* Frees every shared route and the table (the trie's end: no reader is left). */
static void shared_destroy(struct TRIE *t)
{
	struct shared *sh = &t->shared;

	for (size_t i = 0; i < sh->cap; i++)
		if (sh->v[i].r)
			mem_free(t->mem, MEM_LEAF, sh->v[i].r, sizeof(*sh->v[i].r));
	if (sh->v)
		mem_free(t->mem, MEM_HASH, sh->v, sh->cap * sizeof(*sh->v));
	memset(sh, 0, sizeof(*sh));
}

/* -------------------------------------------------------- leaves' views */

/* Writer: a leaf as its slot shows it, a leaf of its own or inline (slot_inline()). */
struct lview {
	TKEY key;
	unsigned int nr;
	const struct fib_route *r; /* its routes, longest prefix first */
	uintptr_t slot;            /* its slot */
};

/*
 * *@v for the slot @s; @key is the key an inline leaf there has
 * (inline_key()). False if @s holds no leaf (empty, an answer, a node).
 */
static inline bool lv_set(struct lview *v, uintptr_t s, TKEY key)
{
	if (slot_inline(s)) {
		v->key = key;
		v->nr = 1;
		v->r = slot_route(s);
	} else if (s && !slot_bits(s) && !(s & SLOT_ROUTE)) {
		const struct leaf *l = node_leaf(slot_node(s));

		v->key = l->n.key;
		v->nr = l->n.nr;
		v->r = l->r;
	} else {
		return false;
	}
	v->slot = s;
	return true;
}

/* The key of the inline leaf in child @i of @tn. */
static inline TKEY inline_key(const struct tnode *tn, unsigned long i)
{
	return tn->n.key | (TKEY)i << tn->n.pos;
}

/* lv_set() of child @i of @tn. */
static inline bool lv_child(struct lview *v, const struct tnode *tn, unsigned long i)
{
	return lv_set(v, slot_writer(tn->child[i]), inline_key(tn, i));
}

static inline unsigned int lv_slen(const struct lview *v)
{
	return KEYLEN - v->r[v->nr - 1].plen;
}

/* The slen of the leaf or node in the nonempty slot @s (an inline leaf's from its slot). */
static inline unsigned int slot_slen(uintptr_t s)
{
	return slot_inline(s) ? KEYLEN - inline_plen(s) : slot_node(s)->slen;
}

/* Reader: whether the inline leaf in slot @s, child @i of @tn, covers @key. */
static inline bool inline_covers(uintptr_t s, const struct tnode *tn, unsigned long i, TKEY key)
{
	return !key_shr(key ^ inline_key(tn, i), KEYLEN + 1 - slot_pos(s));
}

/*
 * Writer: the slot of a new leaf of @key with the routes @r[@nr], longest
 * prefix first, in a node of pos @pos (KEYLEN + 1: the root slot): inline
 * if it may be (see slot_inline()), else a leaf of its own; 0 without the
 * memory.
 */
static uintptr_t leaf_make(struct TRIE *t, TKEY key, const struct fib_route *r, unsigned int nr,
			   unsigned int pos)
{
	struct leaf *l;

	if (nr == 1 && r[0].plen + pos <= KEYLEN) {
		const struct fib_route *sr = shared_get(t, &r[0]);

		if (sr)
			return inline_slot(sr);
	}
	l = node_alloc(t, MEM_LEAF, leaf_size(nr));
	return l ? leaf_fill(l, key, r, nr) : 0;
}

/*
 * Writer: a leaf of its own for the inline leaf of @key in slot @s, to go
 * where it may not stay inline; 0 without the memory. The caller puts it
 * in place, then calls leaf_reformed().
 */
static uintptr_t leaf_materialize(struct TRIE *t, uintptr_t s, TKEY key)
{
	return leaf_make(t, key, slot_route(s), 1, KEYLEN + 1);
}

static void answers_leaf_changed(struct TRIE *t, struct tnode *tp, const struct lview *old,
				 const struct lview *l);

/* Writer: frees a new leaf's slot no reader has seen (an unwind path). */
static void leaf_slot_free(struct TRIE *t, uintptr_t s)
{
	if (slot_inline(s))
		shared_put(t, slot_route(s));
	else
		mem_free(t->mem, MEM_LEAF, slot_node(s), leaf_size(slot_node(s)->nr));
}

/* Writer: hands the leaf of slot @s, unlinked, to reclamation. */
static void leaf_slot_retire(struct TRIE *t, uintptr_t s)
{
	if (slot_inline(s))
		shared_put(t, slot_route(s));
	else
		node_retire(t, slot_node(s));
}

/*
 * Writer: the slot @s, of slen @slen, moves from a node of pos @from (KEYLEN
 * + 1: the root slot) into a new one of pos @pos: an inline slot for it if
 * it is a leaf of one route that may be inline there and could not be where
 * it was, else @s. Its old leaf stays until leaf_reformed(). The leaf is
 * read only if its slot (its longest prefix) and @slen (its shortest) show
 * one prefix length that fits @pos and not @from.
 *
 * The split of leaf_insert() calls it: a leaf made where it could not be
 * inline (the first in a region of the root, most often) goes inline when
 * a second key joins it under a node of a lower pos. An inflate that moves
 * leaves under a lower pos could do the same, but on the full view loaded
 * one route at a time it made IPv4 loads 4 % slower and IPv6 ones 15 %,
 * for 3 bytes a route (docs/BENCHMARKS.md, issue 9's nineteenth round).
 */
static uintptr_t leaf_to_inline(struct TRIE *t, uintptr_t s, unsigned int slen, unsigned int from,
				unsigned int pos)
{
	unsigned int plen = slot_leaf_plen1(s) - 1;
	const struct leaf *l;
	const struct fib_route *sr;

	if (!s || slot_bits(s) || (s & SLOT_ROUTE) || plen != KEYLEN - slen ||
	    plen + pos > KEYLEN || plen + from <= KEYLEN)
		return s;
	l = node_leaf(slot_node(s));
	if (l->n.nr != 1 || l->r[0].plen + pos > KEYLEN)
		return s;
	sr = shared_get(t, &l->r[0]);
	return sr ? inline_slot(sr) : s;
}

/*
 * Writer: the leaf of @key in slot @s is in slot @ns now, the same routes
 * in the other form (inline, or a leaf of its own), published under @tp:
 * the answers that named the old routes name the new, and the old form
 * goes (retired, or its shared route loses a leaf).
 */
static void leaf_reformed(struct TRIE *t, struct tnode *tp, uintptr_t s, uintptr_t ns, TKEY key)
{
	struct lview old, l;

	lv_set(&old, s, key);
	lv_set(&l, ns, key);
	answers_leaf_changed(t, tp, &old, &l);
	leaf_slot_retire(t, s);
}

/*
 * Sets child @i of @tn to the node of slot @s (0: none), whose slen is
 * @slen, keeping the counts and slen; publishes it to readers. Reads
 * nothing of the child: inflate and halve move children by their slots
 * and their old parent's slen copies, so a resize does not miss on every
 * grandchild it moves.
 */
static void put_slot(struct tnode *tn, unsigned long i, uintptr_t s, unsigned int slen)
{
	uintptr_t old = slot_writer(tn->child[i]);
	bool wasfull = slot_full(tn, old), isfull = slot_full(tn, s);

	if (!s && old)
		tn->empty_children++;
	else if (s && !old)
		tn->empty_children--;
	if (wasfull && !isfull)
		tn->full_children--;
	else if (!wasfull && isfull)
		tn->full_children++;
	if (s && tn->n.slen < slen)
		SLEN_STORE(tn->n.slen, slen);
	/* The slen copy never says less than what a reader may find there. */
	if (s && slen > child_slen(tn)[i])
		SLEN_STORE(child_slen(tn)[i], slen);
	__atomic_store_n(&tn->child[i], s, __ATOMIC_RELEASE);
	if (!s || slen < child_slen(tn)[i])
		SLEN_STORE(child_slen(tn)[i], s ? slen : 0);
}

/* Counts the nonempty slot @s, of slen @slen, in the header of @tn, a node no reader has seen. */
static inline void fill_count(struct tnode *tn, uintptr_t s, unsigned int slen)
{
	tn->empty_children--;
	tn->full_children += slot_full(tn, s);
	if (tn->n.slen < slen)
		tn->n.slen = (uint8_t)slen;
}

/*
 * put_slot() into @tn, a node no reader has seen yet, whose child @i is
 * still empty: plain stores, and no old slot to undo (a fifth of a load
 * one route at a time went to put_slot(), most of it from inflates).
 */
static inline void fill_slot(struct tnode *tn, unsigned long i, uintptr_t s, unsigned int slen)
{
	if (!s)
		return;
	fill_count(tn, s, slen);
	child_slen(tn)[i] = (uint8_t)slen;
	tn->child[i] = s;
}

/* Moves child @j of @from to child @i of @tn, a node no reader has seen yet (fill_slot()). */
static inline void fill_child(struct tnode *tn, unsigned long i, const struct tnode *from,
			      unsigned long j)
{
	fill_slot(tn, i, slot_writer(from->child[j]), child_slen(from)[j]);
}

/* put_child() of @n, not NULL, into a node no reader has seen yet (fill_slot()). */
static inline void fill_node(struct tnode *tn, unsigned long i, const struct node *n)
{
	fill_slot(tn, i, node_slot(n), n->slen);
}

static void fb_drop(struct TRIE *t);
static void fb_build(struct TRIE *t);
static void answer_refill(struct TRIE *t, struct tnode *tn, unsigned long j);
static void answers_new(struct tnode *tn);
struct rebuild;
static void rebuild_answers(const struct rebuild *rb, struct tnode *tn, size_t lo, size_t hi);
static unsigned long fb_span(const struct tnode *root, unsigned int plen);

/* Puts the slot @s (of slen @slen) where @key belongs under @tp, or at the root when @tp is NULL.
 */
static void put_slot_root(struct TRIE *t, struct tnode *tp, TKEY key, uintptr_t s,
			  unsigned int slen)
{
	if (tp) {
		unsigned long i = get_index(key, &tp->n);

		put_slot(tp, i, s, slen);
		if (!s)
			answer_refill(t, tp, i);
	} else {
		/* The fallbacks go first: the caller may retire the old root next. */
		fb_drop(t);
		__atomic_store_n(&t->root, s, __ATOMIC_RELEASE);
	}
}

/* Puts @n where @key belongs under @tp, or at the root when @tp is NULL. */
static void put_child_root(struct TRIE *t, struct tnode *tp, TKEY key, struct node *n)
{
	put_slot_root(t, tp, key, node_slot(n), n ? n->slen : 0);
}

static void node_set_parent(struct node *n, struct tnode *tp)
{
	if (n && !node_is_leaf(n))
		rcu_assign_pointer(node_tnode(n)->parent, tp);
}

/* The child of @tp at @cindex, or the root when @tp is NULL. */
static struct node *slot_get(const struct TRIE *t, const struct tnode *tp, unsigned long cindex)
{
	return tp ? child_get(tp, cindex) : slot_node(t->root);
}

/* ------------------------------------------------------- suffix lengths */

/*
 * Recomputes tn's slen from its children. A child at index i holds only
 * keys whose bits [pos, pos + ctz(i)) are zero, so a prefix with suffix
 * length s > pos can sit only at an index that is a multiple of
 * 2^(s - pos): having found slen s, only multiples of 2^(s + 1 - pos) can
 * do better. The result is never above the old slen (callers only lower).
 */
static unsigned int update_suffix(struct tnode *tn)
{
	unsigned int pos = tn->n.pos, bits = tn->n.bits, slen = pos, old = tn->n.slen;
	unsigned long stride = 2, len = child_length(&tn->n);

	for (unsigned long i = 0; i < len; i += stride) {
		unsigned int cs = child_slen(tn)[i];

		if (cs <= slen)
			continue;
		slen = cs;
		if (slen >= old || slen + 1 - pos > bits)
			break;
		stride = 1ul << (slen + 1 - pos);
		i &= ~(stride - 1);
	}
	tnode_set_slen(tn, slen);
	return slen;
}

/* Something of suffix length @slen is about to appear under @tn: raise the path. */
static void node_push_suffix(struct tnode *tn, unsigned int slen)
{
	while (tn && tn->n.slen < slen) {
		tnode_set_slen(tn, slen);
		tn = tn->parent;
	}
}

/* A child of @tn no longer has suffix length @old (it has less): lower the path. */
static void node_pull_suffix(struct tnode *tn, unsigned int old)
{
	while (tn && tn->n.slen == old && old > tn->n.pos) {
		if (update_suffix(tn) == old)
			break;
		tn = tn->parent;
	}
}

/* --------------------------------------------------------------- resize */

/*
 * The kernel's test: a node of @pos and @bits with @used children
 * nonempty plus full inflates under the inflate @threshold (percent).
 */
static bool should_inflate(unsigned int pos, unsigned int bits, unsigned long threshold,
			   unsigned long used)
{
	return used > 1 && pos && bits < TRIE_MAX_BITS && 50 * used >= threshold << bits;
}

static bool should_halve(const struct TRIE *t, const struct tnode *tp, const struct tnode *tn)
{
	unsigned long size = child_length(&tn->n);
	unsigned long threshold = size * (tp ? HALVE_THRESHOLD : t->halve_root);
	unsigned long used = size - tn->empty_children;

	return used > 1 && tn->n.bits > 1 && 100 * used < threshold;
}

static bool should_collapse(const struct tnode *tn)
{
	return child_length(&tn->n) - tn->empty_children < 2;
}

/*
 * Points the children of the new node @tn at it. New internal nodes made
 * by inflate or halve already point at @tn; their children still point at
 * the node being replaced and are moved over.
 */
static void update_children(struct tnode *tn)
{
	const unsigned long len = child_length(&tn->n);

	for (unsigned long i = 0; i < len; i++) {
		uintptr_t s = tn->child[i];
		struct tnode *c = node_tnode(slot_node(s));

		/* Leaves have no parent pointer: their slots say so (bits 0). */
		if (!slot_bits(s))
			continue;
		if (c->parent == tn)
			update_children(c);
		else
			rcu_assign_pointer(c->parent, tn);
	}
}

/*
 * Unwinds a failed inflate or halve: @tn and the new nodes under it were
 * never published. Only internal nodes are read (a slot's bits tell them):
 * the leaves the unwind made may be freed already.
 */
static void tnode_free_new(struct TRIE *t, struct tnode *tn)
{
	const unsigned long len = child_length(&tn->n);

	for (unsigned long i = 0; i < len; i++) {
		uintptr_t s = slot_writer(tn->child[i]);

		if (slot_bits(s) && node_tnode(slot_node(s))->parent == tn)
			tnode_free_new(t, node_tnode(slot_node(s)));
	}
	node_free_unpublished(t, &tn->n);
}

/*
 * Publishes @tn in place of @oldtn. Every pointer a reader can follow from
 * @tn, parent pointers included, is set before @tn becomes reachable. The
 * caller retires @oldtn after its last read of it: a retire may free.
 */
static void replace(struct TRIE *t, struct tnode *oldtn, struct tnode *tn)
{
	tn->parent = oldtn->parent;
	update_children(tn);
	put_child_root(t, tn->parent, tn->n.key, &tn->n);
}

static struct tnode *resize(struct TRIE *t, struct tnode *tn);

/*
 * After resize() inflated or halved @tn: its full children may now deserve
 * resizing too. The kernel resizes them after each step (in replace()); a
 * node that inflates k times in a row would have its children split and
 * inflated back k times, each time splitting their full children in turn.
 * Once, after the last step, gives them the same counts to go by (a step
 * splits every full child into halves that are full too, so the parent's
 * thresholds see the same numbers either way): one route at a time in file
 * order retired 369 MB of nodes for 21 MB kept, 290 MB now, and loaded
 * 15-25 % faster; the trie has the same depth within 0.01 (docs/BENCHMARKS.md,
 * issue 9's twelfth round).
 */
static void resize_full_children(struct TRIE *t, struct tnode *tn)
{
	if (t->top_down)
		return;
	for (unsigned long i = child_length(&tn->n); i;) {
		uintptr_t s = tn->child[--i];

		if (slot_full(tn, s))
			resize(t, node_tnode(slot_node(s)));
	}
}

/*
 * Nonempty children of @tn in [lo, hi); *@only is the index of the last
 * one seen, *@full the number of them with no bits skipped below tn's pos
 * (full children of a piece of tn).
 */
static unsigned long children_used(const struct tnode *tn, unsigned long lo, unsigned long hi,
				   unsigned long *only, unsigned long *full)
{
	unsigned long used = 0;

	*full = 0;
	for (unsigned long j = lo; j < hi; j++) {
		uintptr_t s = slot_writer(tn->child[j]);

		if (s) {
			*only = j;
			used++;
			*full += slot_full(tn, s);
		}
	}
	return used;
}

/*
 * Inflating a node k times in a row, as the kernel does, builds k - 1
 * nodes only to split them again: each step halves every full child (a
 * child with no skipped bits) and makes the halves of two or more
 * children nodes, full in their turn. The result of the k steps can be
 * made in one: the node of k more bits takes each unit of the old one
 * where its key puts it. A unit is a leaf, or a node whose bits all lie
 * below the new node's (it moves as it is); or a node whose top m bits
 * the new node absorbs (top = its pos + bits, m = top - the new pos),
 * split into 2^m pieces where it has more bits than that, or else
 * dissolved, each of its children a unit in turn. A piece of two or more
 * children is a new node; one of one is that child, moved up (a half of
 * one child gets no node in a step either). A one route at a time load in
 * file order built, step by step, a third of the nodes it retired only
 * to split them at the next step (docs/BENCHMARKS.md, issue 9's fifteenth
 * round). And where resize_full_children() would inflate a piece right
 * after, the piece is made inflated (piece_inflated()): in a sorted load
 * the lower half of a dense node is denser than the node.
 *
 * What each step would see is counted first, without building: the
 * nonempty plus full children that a unit makes in a node of pos @p
 * (census_unit()). A piece of two children or more counts two (a full
 * node), of one child one (that child has skipped bits there).
 */
static unsigned long census_unit(uintptr_t s, unsigned int p);

/* census_unit() of node @u, whose top bits a node of pos @p absorbs. */
static unsigned long census_node(const struct tnode *u, unsigned int p)
{
	const unsigned long len = child_length(&u->n);
	unsigned int m = u->n.pos + u->n.bits - p;
	unsigned long used = 0, size;

	if (m >= u->n.bits) {
		for (unsigned long i = 0; i < len; i++)
			used += census_unit(slot_writer(u->child[i]), p);
		return used;
	}
	size = len >> m;
	for (unsigned long lo = 0; lo < len; lo += size) {
		unsigned long n = 0;

		/* Two children make a full node: the rest of the piece need not be read. */
		for (unsigned long j = lo; j < lo + size && n < 2; j++)
			n += slot_writer(u->child[j]) != 0;
		used += n;
	}
	return used;
}

static inline unsigned long census_unit(uintptr_t s, unsigned int p)
{
	unsigned int b = slot_bits(s), top = slot_pos(s) + b;

	if (!s)
		return 0;
	if (!b || top < p)
		return 1;
	if (top == p)
		return 2;
	return census_node(node_tnode(slot_node(s)), p);
}

/*
 * How many times in a row resize() inflates a node of pos @pos and @bits
 * whose slots are @slot, with @used of them nonempty plus full, under the
 * inflate @threshold, at most @max: should_inflate() of the node each
 * step would make, from the census of what that node would hold (counted
 * up to what the test needs).
 */
static unsigned int inflate_steps_at(const uintptr_t *slot, unsigned int pos, unsigned int bits,
				     unsigned long threshold, unsigned long used, unsigned int max)
{
	unsigned int k;

	if (!max || !should_inflate(pos, bits, threshold, used))
		return 0;
	for (k = 1; k < max; k++) {
		/* Step k + 1 needs this many (and two at least): counting stops there. */
		unsigned long need = ((threshold << (bits + k)) + 49) / 50;

		used = 0;
		for (unsigned long i = 0; i < 1ul << bits && (used < need || used < 2); i++)
			used += census_unit(slot_writer(slot[i]), pos - k);
		if (!should_inflate(pos - k, bits + k, threshold, used))
			break;
	}
	return k;
}

/* inflate_steps_at() of @tn under @tp: how many times resize() inflates it. */
static unsigned int inflate_steps(const struct TRIE *t, const struct tnode *tp,
				  const struct tnode *tn, unsigned int max)
{
	return inflate_steps_at(tn->child, tn->n.pos, tn->n.bits,
				tp ? INFLATE_THRESHOLD : t->inflate_root,
				child_length(&tn->n) - tn->empty_children + tn->full_children, max);
}

/*
 * One inflate(): whether it may make pieces inflated at once (its steps
 * are the node's last, so that nothing splits the pieces before
 * resize_full_children() comes to them), and the nodes it splits or
 * dissolves, retired once the new node is published (a few on the stack,
 * more on the heap).
 */
struct inflation {
	bool pieces_at_once;
	struct node **v;
	size_t n, cap;
	struct node *first[32];
	/* Inline leaves moved up that may not stay so: their slots, and their leaves now. */
	struct inflation_made {
		uintptr_t s, ns;
		TKEY key;
	} * made;
	size_t n_made, cap_made;
};

/* Records in @c that the leaf of slot @s (of @key) moved as slot @ns; false without the memory. */
static bool inflation_made(struct inflation *c, uintptr_t s, uintptr_t ns, TKEY key)
{
	if (c->n_made == c->cap_made) {
		size_t cap = c->cap_made ? 2 * c->cap_made : 16;
		struct inflation_made *v = realloc(c->made, cap * sizeof(*v));

		if (!v)
			return false;
		c->made = v;
		c->cap_made = cap;
	}
	c->made[c->n_made++] = (struct inflation_made){ .s = s, .ns = ns, .key = key };
	return true;
}

static int consumed_add(struct inflation *c, const struct tnode *u)
{
	if (c->n == c->cap) {
		size_t cap = c->cap * 2;
		struct node **v = c->v == c->first ? malloc(cap * sizeof(*v))
						   : realloc(c->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		if (c->v == c->first)
			memcpy(v, c->first, sizeof(c->first));
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = (struct node *)&u->n;
	return 0;
}

/*
 * Writer: the answers of @piece, a node inflate() made of piece @q of the
 * 2^@m pieces of @in, copied from in's (see SLOT_ROUTE): the children are
 * the same, so is the longest prefix that covers one, except where its
 * leaf is outside @piece. A prefix no wider than the piece sits in it. A
 * wider one sits at the first key of its range, which starts a piece: in
 * @piece only if that piece is q. One that starts an earlier piece hangs
 * down the child-0 chain of that piece's first child, so the slen copies
 * of the earlier pieces' first children (@wide: the largest) tell whether
 * there can be one; without one, every answer is kept without reading its
 * route. answers_new() found the same by reading down every child: a
 * sixth of a load one route at a time in file order, a tenth now.
 */
static void answers_split(struct tnode *piece, const struct tnode *in, unsigned long q,
			  unsigned int m, unsigned int wide)
{
	unsigned int top = piece->n.pos + piece->n.bits;
	unsigned long lo = q << piece->n.bits, len = child_length(&piece->n);
	uintptr_t last = 0;
	bool keep = false;

	for (unsigned long j = 0; j < len; j++) {
		uintptr_t s = in->child[lo + j];

		/* An answer in in's slot: the child is empty there, and so in @piece. */
		if (slot_writer(s) || s == SLOT_ROUTE || !s)
			continue;
		/* Runs of children share an answer: its route is read once a run. */
		if (s != last) {
			unsigned int span = KEYLEN - slot_route(s)->plen;

			last = s;
			keep = wide <= top || span <= top ||
			       !(q & ((1ul << (span - top < m ? span - top : m)) - 1));
		}
		/* @piece is not published yet (see fill_slot()): plain stores. */
		if (keep && !piece->child[j])
			piece->child[j] = s;
	}
}

static int place_range(struct TRIE *t, struct tnode *tn, const struct tnode *u, unsigned long lo,
		       unsigned long hi, struct inflation *c);

/*
 * fill_child() of child @j of @u into @tn, whose pos is larger: an inline
 * leaf that may not stay so there gets a leaf of its own, recorded in @c
 * (inflate() calls leaf_reformed() once it is published).
 */
static int fill_up(struct TRIE *t, struct tnode *tn, unsigned long i, const struct tnode *u,
		   unsigned long j, struct inflation *c)
{
	uintptr_t s = slot_writer(u->child[j]), ns;

	if (!slot_inline(s) || inline_fits(s, tn->n.pos)) {
		fill_child(tn, i, u, j);
		return 0;
	}
	ns = leaf_materialize(t, s, inline_key(u, j));
	if (!ns)
		return -ENOMEM;
	if (!inflation_made(c, s, ns, inline_key(u, j))) {
		leaf_slot_free(t, ns);
		return -ENOMEM;
	}
	fill_slot(tn, i, ns, child_slen(u)[j]);
	return 0;
}

/*
 * A node inflate() made for a piece of children [@lo, @lo + 2^@bits) of
 * @u, @used of them nonempty plus full, that resize() would inflate right
 * after (resize_full_children()), if by fewer than MAX_WORK steps: made
 * with those steps' bits at once, its answers found anew, and marked so
 * that its own full children are resized when it is (see resize()). NULL
 * if the piece stays as it is (*@err 0), or on failure (*@err < 0).
 */
static struct tnode *piece_inflated(struct TRIE *t, struct tnode *tn, const struct tnode *u,
				    unsigned long lo, unsigned int bits, unsigned long used,
				    TKEY key, struct inflation *c, int *err)
{
	unsigned long size = 1ul << bits;
	unsigned int k;
	struct tnode *piece;

	*err = 0;
	if (!c->pieces_at_once)
		return NULL;
	k = inflate_steps_at(u->child + lo, u->n.pos, bits, INFLATE_THRESHOLD, used, MAX_WORK);
	if (!k || k == MAX_WORK)
		return NULL;
	piece = tnode_new(t, key, u->n.pos - k, bits + k);
	if (!piece) {
		*err = -ENOMEM;
		return NULL;
	}
	piece->parent = tn;
	*err = place_range(t, piece, u, lo, lo + size, c);
	if (*err) {
		tnode_free_new(t, piece);
		return NULL;
	}
	answers_new(piece);
	piece->n.nr = TNODE_INFLATED;
	return piece;
}

/*
 * Splits @u, whose top @m bits @tn absorbs, into its 2^m pieces under
 * @tn (see census_unit()).
 */
static int place_pieces(struct TRIE *t, struct tnode *tn, const struct tnode *u, unsigned int m,
			struct inflation *c)
{
	unsigned int bits = u->n.bits - m, wide = 0;
	unsigned long size = 1ul << bits;
	int err = consumed_add(c, u);

	for (unsigned long q = 0; !err && q < 1ul << m; q++) {
		unsigned long lo = q << bits, only = 0, full,
			      used = children_used(u, lo, lo + size, &only, &full);
		TKEY key = u->n.key | (TKEY)q << (u->n.pos + bits);
		struct tnode *piece;

		if (used == 1)
			err = fill_up(t, tn, get_index(u->n.key | (TKEY)only << u->n.pos, &tn->n),
				      u, only, c);
		if (used >= 2) {
			piece = piece_inflated(t, tn, u, lo, bits, used + full, key, c, &err);
			if (!piece && !err) {
				piece = tnode_new(t, key, u->n.pos, bits);
				if (!piece)
					return -ENOMEM;
				piece->parent = tn;
				for (unsigned long j = 0; j < size; j++)
					fill_child(piece, j, u, lo + j);
				answers_split(piece, u, q, m, wide);
			}
			if (piece)
				fill_node(tn, get_index(key, &tn->n), &piece->n);
		}
		if (child_slen(u)[lo] > wide)
			wide = child_slen(u)[lo];
	}
	return err;
}

/*
 * Puts children [@lo, @hi) of @u under @tn as units (see census_unit()):
 * all of them when @u is dissolved; a piece of them when @tn is that
 * piece, inflated at once (piece_inflated()).
 */
static int place_range(struct TRIE *t, struct tnode *tn, const struct tnode *u, unsigned long lo,
		       unsigned long hi, struct inflation *c)
{
	unsigned int p = tn->n.pos;

	for (unsigned long i = hi; i > lo;) {
		uintptr_t s = slot_writer(u->child[--i]);
		unsigned int b = slot_bits(s), top = slot_pos(s) + b;
		const struct tnode *in = node_tnode(slot_node(s));
		int err;
		TKEY key;

		if (!s)
			continue;
		if (b && top > p) {
			/* tn absorbs its top bits: all of them (dissolved), or some (split). */
			if (top - p >= b) {
				err = consumed_add(c, in);
				if (!err)
					err = place_range(t, tn, in, 0, child_length(&in->n), c);
			} else {
				err = place_pieces(t, tn, in, top - p, c);
			}
			if (err)
				return err;
			continue;
		}
		/*
		 * Moves as it is. Its key is known above u's pos; below, the node
		 * has it, or it is inline, and all zeros.
		 */
		key = p >= u->n.pos || slot_inline(s) ? u->n.key | (TKEY)i << u->n.pos
						      : slot_node(s)->key;
		fill_child(tn, get_index(key, &tn->n), u, i);
	}
	return 0;
}

/*
 * Inflates @oldtn @k times (see census_unit()): one new node of k more
 * bits. @pieces_at_once: no step follows, so the pieces
 * resize_full_children() would inflate next may be made inflated
 * (piece_inflated()); not in bulk mode's parents-first resizes, which
 * resize no children.
 */
static int inflate(struct TRIE *t, struct tnode *oldtn, unsigned int k, bool pieces_at_once)
{
	struct tnode *tn = tnode_new(t, oldtn->n.key, oldtn->n.pos - k, oldtn->n.bits + k);
	struct inflation c = {
		.pieces_at_once = pieces_at_once && !t->top_down,
		.v = c.first,
		.cap = 32,
	};
	int err;

	if (!tn)
		return -ENOMEM;
	tn->parent = oldtn->parent;
	err = place_range(t, tn, oldtn, 0, child_length(&oldtn->n), &c);
	if (!err) {
		answers_new(tn);
		replace(t, oldtn, tn);
		for (size_t i = 0; i < c.n_made; i++)
			leaf_reformed(t, tn, c.made[i].s, c.made[i].ns, c.made[i].key);
		/* The children split or dissolved go too, after their last read. */
		for (size_t i = 0; i < c.n; i++)
			node_retire(t, c.v[i]);
		node_retire(t, &oldtn->n);
	} else {
		for (size_t i = 0; i < c.n_made; i++)
			leaf_slot_free(t, c.made[i].ns);
		tnode_free_new(t, tn);
	}
	if (c.v != c.first)
		free(c.v);
	free(c.made);
	return err;
}

/* Whether halve() gave child @i of @oldtn, inline, a leaf of its own in @tn. */
static bool halve_materialized(const struct tnode *tn, const struct tnode *oldtn, unsigned long i)
{
	uintptr_t s = oldtn->child[i], ns = tn->child[i / 2];

	return slot_inline(s) && ns && !slot_bits(ns) && ns != s;
}

/* Unwinds a failed halve() of @oldtn into @tn: the leaves it made go too. */
static void halve_unwind(struct TRIE *t, struct tnode *tn, const struct tnode *oldtn)
{
	for (unsigned long i = 0; i < child_length(&oldtn->n); i++)
		if (halve_materialized(tn, oldtn, i))
			leaf_slot_free(t, tn->child[i / 2]);
	tnode_free_new(t, tn);
}

static int halve(struct TRIE *t, struct tnode *oldtn)
{
	struct tnode *tn = tnode_new(t, oldtn->n.key, oldtn->n.pos + 1u, oldtn->n.bits - 1u);

	if (!tn)
		return -ENOMEM;
	tn->parent = oldtn->parent;
	for (unsigned long i = child_length(&oldtn->n); i;) {
		uintptr_t s1 = slot_writer(oldtn->child[--i]);
		uintptr_t s0 = slot_writer(oldtn->child[--i]);
		struct tnode *in;

		/*
		 * At most one of the pair: it moves up as it is, or, inline where
		 * it may not stay so, as a leaf of its own (leaf_reformed() below).
		 */
		if (!s1 || !s0) {
			unsigned long j = s1 ? i + 1 : i;
			uintptr_t s = s1 | s0, ns;

			if (slot_inline(s) && !inline_fits(s, tn->n.pos)) {
				ns = leaf_materialize(t, s, inline_key(oldtn, j));
				if (!ns) {
					halve_unwind(t, tn, oldtn);
					return -ENOMEM;
				}
				fill_slot(tn, i / 2, ns, child_slen(oldtn)[j]);
			} else if (s) {
				fill_child(tn, i / 2, oldtn, j);
			}
			continue;
		}
		/* Both: a new node of one bit keeps them apart (key: oldtn's, index i). */
		in = tnode_new(t, oldtn->n.key | (TKEY)i << oldtn->n.pos, oldtn->n.pos, 1);
		if (!in) {
			halve_unwind(t, tn, oldtn);
			return -ENOMEM;
		}
		in->parent = tn;
		fill_child(in, 1, oldtn, i + 1);
		fill_child(in, 0, oldtn, i);
		fill_node(tn, i / 2, &in->n);
	}
	answers_new(tn);
	replace(t, oldtn, tn);
	/* The inline leaves that have leaves of their own now (above). */
	for (unsigned long i = 0; i < child_length(&oldtn->n); i++)
		if (halve_materialized(tn, oldtn, i))
			leaf_reformed(t, tn, oldtn->child[i], tn->child[i / 2],
				      inline_key(oldtn, i));
	node_retire(t, &oldtn->n);
	return 0;
}

/*
 * @oldtn has at most one child left: put the child in its place. An
 * inline leaf that may not stay so there gets a leaf of its own (without
 * the memory, @oldtn stays). Returns the parent.
 */
static struct tnode *collapse(struct TRIE *t, struct tnode *oldtn)
{
	struct tnode *tp = oldtn->parent;
	uintptr_t s = 0, ns;
	unsigned long i;

	for (i = child_length(&oldtn->n); !s && i;)
		s = slot_writer(oldtn->child[--i]);
	ns = s;
	if (slot_inline(s) && !inline_fits(s, tp ? tp->n.pos : KEYLEN + 1)) {
		ns = leaf_materialize(t, s, inline_key(oldtn, i));
		if (!ns)
			return tp;
	}
	if (slot_bits(s))
		node_set_parent(slot_node(s), tp);
	put_slot_root(t, tp, oldtn->n.key, ns, ns ? slot_slen(ns) : 0);
	if (ns != s)
		leaf_reformed(t, tp, s, ns, inline_key(oldtn, i));
	node_retire(t, &oldtn->n);
	return tp;
}

/* Resizes @tn as the kernel does; returns its parent (NULL above the root). */
static struct tnode *resize(struct TRIE *t, struct tnode *tn)
{
	struct tnode *tp = tn->parent;
	unsigned long cindex = tp ? get_index(tn->n.key, &tp->n) : 0;
	unsigned int steps = 0, k;
	int max_work = MAX_WORK;
	/* Made inflated by its parent's inflate (piece_inflated()), as if right here. */
	bool inflated = tn->n.nr == TNODE_INFLATED;

	/* Stored only when set: readers share the header's cache line. */
	if (inflated)
		tn->n.nr = 0;
	while (steps < MAX_WORK) {
		bool at_once;

		k = inflate_steps(t, tp, tn, MAX_WORK - steps);
		if (!k)
			break;
		/*
		 * Its pieces are made inflated at once only when these steps are
		 * its last; never in the step-by-step build, which is the kernel's.
		 */
		at_once = INFLATE_STEPS_MAX > 1 && k <= INFLATE_STEPS_MAX;
		if (k > INFLATE_STEPS_MAX)
			k = INFLATE_STEPS_MAX;
		if (inflate(t, tn, k, at_once) < 0)
			break;
		steps += k;
		tn = node_tnode(slot_get(t, tp, cindex));
	}
	/*
	 * Inflating never leaves a node to halve or collapse, but for one an
	 * allocation failure left unresized: a node of 1 bit with a leaf and
	 * a full child, whose leaf goes, inflates with one child left.
	 */
	if (steps || inflated) {
		resize_full_children(t, tn);
		return should_collapse(tn) ? collapse(t, tn) : tp;
	}
	while (should_halve(t, tp, tn) && max_work) {
		if (halve(t, tn) < 0)
			break;
		max_work--;
		tn = node_tnode(slot_get(t, tp, cindex));
	}
	if (max_work != MAX_WORK)
		resize_full_children(t, tn);
	if (should_collapse(tn))
		return collapse(t, tn);
	return tp;
}

static void rebalance(struct TRIE *t, struct tnode *tn)
{
	while (tn)
		tn = resize(t, tn);
}

/*
 * Resizes every node below and including @tn, parents first: a parent
 * that inflates absorbs its full children's levels, so resizing children
 * first would only build nodes for the parent to split again. Each node is
 * resized until stable (one far from its size needs more than MAX_WORK).
 */
static void rebalance_subtree(struct TRIE *t, struct tnode *tn)
{
	struct tnode *tp = tn->parent;
	unsigned long cindex = tp ? get_index(tn->n.key, &tp->n) : 0;
	struct node *n;

	for (int k = 0; k < KEYLEN; k++) {
		resize(t, tn);
		n = slot_get(t, tp, cindex);
		if (!n || node_is_leaf(n))
			return;
		if (n == &tn->n)
			break;
		tn = node_tnode(n);
	}
	for (unsigned long i = 0; i < child_length(&tn->n); i++) {
		struct node *c = child_get(tn, i);

		if (c && !node_is_leaf(c))
			rebalance_subtree(t, node_tnode(c));
	}
	/*
	 * Deletes in bulk mode leave emptied nodes in place; those children
	 * collapsed just now, which can leave @tn with one child or none.
	 */
	if (should_collapse(tn))
		collapse(t, tn);
}

/*
 * The end of a bulk load that made at least half of the trie's leaves
 * (REBUILD_SHARE): the trie is built anew from its leaves instead of
 * resized in place. Resizing the bulk-built trie, binary where the load
 * was sorted, inflates each node a bit at a time from one bit to its
 * final size, and every step makes new nodes and retires the old ones
 * (67 MB retired for a full view's 21 MB of internal nodes); the build
 * makes each final node once. It gives the nodes the resize gives them:
 * inflating a node of b bits splits its full children in two, so the
 * node's used children (nonempty plus full) are the leaves' distinct
 * values of b + 1 bits, and a node inflates while those pass the
 * threshold (no such node then halves: see should_halve()).
 *
 * The leaves stay where they are (they have no parent pointer; compaction
 * copies them, rebuild_move_leaves()); the new internal nodes are made and
 * filled unseen by readers, published at the root in one store, and the
 * old ones retired after it. Lookups meanwhile walk the old trie,
 * untouched. Without the memory for it (the leaves'
 * slots and keys and the old nodes' slots, 14 bytes a leaf and 8 a node
 * for IPv4, 8 more a leaf when compacting, or any new node), the trie is
 * resized in place as before.
 */
#define REBUILD_SHARE 2 /* rebuild when bulk_leaves * 2 >= leaves */

/* Bulk mode: whether its end would build the trie anew, as things stand. */
static inline bool bulk_rebuilds(const struct TRIE *t)
{
	return t->bulk_leaves * REBUILD_SHARE >= t->nr_leaves;
}

struct rebuild {
	struct TRIE *t;
	size_t n;            /* leaves */
	size_t n_old;        /* the old internal nodes: nr_tnodes */
	uintptr_t *slot;     /* the leaves' slots, in key order */
	TKEY *key;           /* their keys */
	uint8_t *slen;       /* their slens */
	uint8_t *diff;       /* diff[i]: the highest bit where key[i] and key[i + 1] differ */
	uint8_t *made_leaf;  /* made_leaf[i]: leaf i was inline, slot[i] is its own leaf now */
	uintptr_t *old;      /* the old internal nodes' slots, to retire */
	uintptr_t *moved;    /* moved[i]: leaf i's old slot, if it was copied (rebuild()), or 0 */
	size_t n_leaf, n_tn; /* collected so far */
	/* The building thread's: where its nodes come from (NULL: the writer's mem), how many. */
	struct mem_arena *arena;
	uint64_t made;
};

/*
 * Collects the leaves under @tn (slot @s) in key order, their slens (the
 * slen copies of their parents: a leaf's is exact), and the internal
 * nodes; false if there are more than the counts say.
 */
static bool rebuild_collect(struct rebuild *rb, uintptr_t s)
{
	const struct tnode *tn = node_tnode(slot_node(s));
	unsigned long len = child_length(&tn->n);

	if (rb->n_tn == rb->n_old)
		return false;
	rb->old[rb->n_tn++] = s;
	for (unsigned long i = 0; i < len; i++) {
		uintptr_t c = slot_writer(tn->child[i]);

		if (!c)
			continue;
		if (slot_bits(c)) {
			/* The next sibling is read after this child's subtree: start it now. */
			for (unsigned long j = i + 1; j < len; j++) {
				if (slot_bits(tn->child[j])) {
					__builtin_prefetch(slot_node(tn->child[j]));
					break;
				}
			}
			if (!rebuild_collect(rb, c))
				return false;
			continue;
		}
		if (rb->n_leaf == rb->n)
			return false;
		/* An inline leaf's key is known here; a leaf's is read from it (rebuild()). */
		if (slot_inline(c))
			rb->key[rb->n_leaf] = inline_key(tn, i);
		rb->slen[rb->n_leaf] = child_slen(tn)[i];
		rb->slot[rb->n_leaf++] = c;
	}
	return true;
}

/* A new node for the rebuild @rb, counted in rb->made; NULL without the memory. */
/* Memory for the rebuild @rb: from its thread's arena, or the writer's mem. */
static void *rebuild_alloc(struct rebuild *rb, enum mem_class c, size_t size)
{
	return rb->arena ? node_fits(rb->t, c, mem_arena_alloc(rb->arena, c, size), size)
			 : node_alloc(rb->t, c, size);
}

static struct tnode *rebuild_tnode(struct rebuild *rb, TKEY key, unsigned int pos,
				   unsigned int bits)
{
	struct tnode *tn = rebuild_alloc(rb, MEM_TNODE, tnode_size(bits));

	if (!tn)
		return NULL;
	tnode_init(tn, key, pos, bits);
	rb->made++;
	return tn;
}

/* Frees @tn and the internal nodes under it, none ever published (all new). */
static void rebuild_free(struct rebuild *rb, struct tnode *tn)
{
	for (unsigned long i = 0; i < child_length(&tn->n); i++) {
		uintptr_t s = slot_writer(tn->child[i]);

		if (slot_bits(s))
			rebuild_free(rb, node_tnode(slot_node(s)));
	}
	rb->made--;
	mem_free(rb->t->mem, MEM_TNODE, tn, tnode_size(tn->n.bits));
}

static struct tnode *rebuild_node(struct rebuild *rb, struct tnode *tp, size_t lo, size_t hi);

/*
 * Builds the children of @tn over leaves [@lo, @hi) and puts them in its
 * slots; false without the memory (the children made so far are in the
 * slots). @alone: no other thread fills @tn meanwhile, so each slot is
 * counted in tn's header as it is filled; otherwise only the slots and
 * their slen copies are written, and the writer counts them after
 * (rebuild_count()).
 */
static bool rebuild_children(struct rebuild *rb, struct tnode *tn, size_t lo, size_t hi, bool alone)
{
	unsigned int pos = tn->n.pos;

	for (size_t a = lo, c; a < hi; a = c) {
		unsigned long j = get_index(rb->key[a], &tn->n);
		uintptr_t s;
		unsigned int slen;

		for (c = a + 1; c < hi && rb->diff[c - 1] < pos; c++)
			;
		if (c - a == 1) {
			s = rb->slot[a];
			slen = rb->slen[a];
			if (slot_inline(s) && !inline_fits(s, pos)) {
				/* It may not stay inline here: a leaf of its own (see rebuild()).
				 */
				struct leaf *l = rebuild_alloc(rb, MEM_LEAF, leaf_size(1));

				if (!l)
					return false;
				s = leaf_fill(l, rb->key[a], slot_route(s), 1);
				rb->slot[a] = s;
				rb->made_leaf[a] = 1;
			}
		} else {
			struct tnode *in = rebuild_node(rb, tn, a, c);

			if (!in)
				return false;
			s = node_slot(&in->n);
			slen = in->n.slen;
		}
		if (alone) {
			fill_slot(tn, j, s, slen);
		} else {
			child_slen(tn)[j] = (uint8_t)slen;
			tn->child[j] = s;
		}
	}
	return true;
}

/* Counts the children of @tn, filled by rebuild_children() not alone, in its header. */
static void rebuild_count(struct tnode *tn)
{
	const unsigned long len = child_length(&tn->n);

	for (unsigned long j = 0; j < len; j++)
		if (tn->child[j])
			fill_count(tn, tn->child[j], child_slen(tn)[j]);
}

/* A second thread's part of a rebuild: children [lo, hi) of @tn. */
struct rebuild_half {
	struct rebuild rb; /* the writer's, with the arena of this thread */
	struct tnode *tn;
	size_t lo, hi;
	bool ok;
};

static void *rebuild_half_main(void *arg)
{
	struct rebuild_half *h = arg;

	h->ok = rebuild_children(&h->rb, h->tn, h->lo, h->hi, false);
	return NULL;
}

/*
 * rebuild_children() of the root @tn, its children from the middle leaf
 * on built by a second thread: the two halves of the root's subtrees are
 * built at once, each thread filling its own slots. The second thread's
 * nodes come from an arena (lib/mem.h), and its count joins the
 * writer's. Without a thread or an arena, the writer builds them all.
 */
static bool rebuild_children_split(struct rebuild *rb, struct tnode *tn, size_t lo, size_t hi)
{
	struct rebuild_half h = { .rb = *rb, .tn = tn, .hi = hi };
	size_t mid = lo + (hi - lo) / 2;
	sigset_t all, old;
	pthread_t thread;
	bool ok;
	int ret;

	/* The first leaf of a child: the halves share no slot. */
	while (mid < hi && rb->diff[mid - 1] < tn->n.pos)
		mid++;
	h.lo = mid;
	h.rb.made = 0;
	h.rb.arena = mem_arena_new(rb->t->mem);
	if (mid == hi || !h.rb.arena) {
		mem_arena_end(h.rb.arena);
		return rebuild_children(rb, tn, lo, hi, true);
	}
	/* Signals are the caller's threads' to take. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(&thread, NULL, rebuild_half_main, &h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		mem_arena_end(h.rb.arena);
		return rebuild_children(rb, tn, lo, hi, true);
	}
	ok = rebuild_children(rb, tn, lo, mid, false);
	pthread_join(thread, NULL);
	STAT_ADD(rb->t->split_builds, 1);
	mem_arena_end(h.rb.arena);
	rb->made += h.rb.made;
	rebuild_count(tn);
	return ok && h.ok;
}

/*
 * The node over leaves [lo, hi) (two or more) under @tp, and the nodes
 * under it, or NULL when out of memory (nothing made is left).
 */
static struct tnode *rebuild_node(struct rebuild *rb, struct tnode *tp, size_t lo, size_t hi)
{
	unsigned int top = key_fls(rb->key[lo] ^ rb->key[hi - 1]), bits = 1, pos;
	unsigned long threshold = tp ? INFLATE_THRESHOLD : rb->t->inflate_root;
	/* below[k]: neighbours whose first difference is k bits below top */
	unsigned long below[TRIE_MAX_BITS + 1] = { 0 };
	/* The root's subtrees of a big build may be built on two threads. */
	bool split = !tp && rb->t->build_threads > 1 && hi - lo >= trie_rebuild_split_min;
	struct tnode *tn;

	for (size_t i = lo; i + 1 < hi; i++)
		if (top - rb->diff[i] <= TRIE_MAX_BITS)
			below[top - rb->diff[i]]++;
	/* The distinct values of the leaves' bits [top - bits, top + 1): used if it inflated. */
	for (unsigned long distinct = 1 + below[0];; bits++) {
		unsigned long used = distinct + below[bits];

		if (!(used > 1 && top + 1 > bits && bits < TRIE_MAX_BITS &&
		      50 * used >= (threshold << bits)))
			break;
		distinct = used;
	}
	pos = top + 1 - bits;
	tn = rebuild_tnode(rb, rb->key[lo], pos, bits);
	if (!tn)
		return NULL;
	tn->parent = tp;
	if (!(split ? rebuild_children_split(rb, tn, lo, hi)
		    : rebuild_children(rb, tn, lo, hi, true))) {
		rebuild_free(rb, tn);
		return NULL;
	}
	rebuild_answers(rb, tn, lo, hi);
	return tn;
}

/*
 * Copies each leaf of its own (not inline) that @rb collected into a new
 * one, for the new trie: the old leaves stay for the old trie's readers,
 * and are retired with its nodes. False without the memory (the copies
 * made are freed).
 */
static bool rebuild_move_leaves(struct rebuild *rb)
{
	for (size_t i = 0; i < rb->n; i++) {
		const struct leaf *l;
		struct leaf *nl;

		rb->moved[i] = 0;
		if (slot_inline(rb->slot[i]))
			continue;
		if (i + 8 < rb->n && !slot_inline(rb->slot[i + 8]))
			__builtin_prefetch(slot_node(rb->slot[i + 8]));
		l = node_leaf(slot_node(rb->slot[i]));
		nl = node_alloc(rb->t, MEM_LEAF, leaf_size(l->n.nr));
		if (!nl) {
			while (i--)
				if (rb->moved[i])
					leaf_slot_free(rb->t, rb->slot[i]);
			return false;
		}
		rb->moved[i] = rb->slot[i];
		rb->slot[i] = leaf_fill(nl, l->n.key, l->r, l->n.nr);
	}
	return true;
}

/*
 * Builds the trie anew from its leaves, as above; false (nothing changed)
 * without the memory. @move_leaves: its leaves of their own are copied too
 * (compaction: TN(compact)()).
 */
static bool rebuild(struct TRIE *t, bool move_leaves)
{
	struct rebuild rb = { .t = t, .n = t->nr_leaves, .n_old = t->nr_tnodes };
	size_t per = sizeof(TKEY) + sizeof(uintptr_t) + 3 + (move_leaves ? sizeof(uintptr_t) : 0),
	       len;
	uintptr_t old = t->root;
	struct tnode *root;
	void *mem;

	/* No overflow: the leaves and nodes counted take more memory than this. */
	if (rb.n < 2)
		return false;
	/*
	 * Mapped, not malloc'd: freeing a block this big would raise glibc's
	 * mmap threshold, and later large nodes would come from its heap.
	 */
	len = rb.n * per + rb.n_old * sizeof(uintptr_t) + 8;
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return false;
	/* 20 MB for a full view: in small pages, 5,000 faults. */
	madvise(mem, len, MADV_HUGEPAGE);
	/* The slots first, then the keys: neither needs more than 8-byte alignment. */
	_Static_assert(_Alignof(TKEY) <= _Alignof(uintptr_t), "the keys follow the slots");
	rb.slot = mem;
	rb.old = rb.slot + rb.n;
	rb.key = (TKEY *)(rb.old + rb.n_old);
	rb.slen = (uint8_t *)(rb.key + rb.n);
	rb.diff = rb.slen + rb.n;
	rb.made_leaf = rb.diff + rb.n;
	if (!rebuild_collect(&rb, old) || rb.n_leaf != rb.n) {
		munmap(mem, len);
		return false;
	}
	/* After the bytes, aligned (len has room for it). */
	if (move_leaves)
		rb.moved = (uintptr_t *)(((uintptr_t)(rb.made_leaf + rb.n) + 7) & ~(uintptr_t)7);
	for (size_t i = 0; i < rb.n; i++) {
		/* The leaves are far apart after a shuffled load: keep a few reads in flight. */
		if (i + 8 < rb.n)
			__builtin_prefetch(slot_node(rb.slot[i + 8]));
		if (!slot_inline(rb.slot[i]))
			rb.key[i] = slot_node(rb.slot[i])->key;
		if (i)
			rb.diff[i - 1] = (uint8_t)key_fls(rb.key[i - 1] ^ rb.key[i]);
	}
	if (move_leaves && !rebuild_move_leaves(&rb)) {
		munmap(mem, len);
		return false;
	}
	root = rebuild_node(&rb, NULL, 0, rb.n);
	/*
	 * The inline leaves that a node with a larger pos took have leaves of
	 * their own: once published, their shared routes lose them (the old
	 * nodes, which readers may be in, are retired); else the leaves go.
	 */
	for (size_t i = 0; !root && i < rb.n; i++) {
		if (rb.made_leaf[i])
			mem_free(t->mem, MEM_LEAF, slot_node(rb.slot[i]), leaf_size(1));
		if (rb.moved && rb.moved[i])
			leaf_slot_free(t, rb.slot[i]);
	}
	if (root) {
		STAT_ADD(t->nr_tnodes, rb.made);
		put_child_root(t, NULL, root->n.key, &root->n);
		/* As node_retire(), without reading them: their slots have their sizes. */
		for (size_t i = 0; i < rb.n_tn; i++) {
			STAT_ADD(t->nr_tnodes, -1);
			reclaim_retire(t->rc, slot_node(rb.old[i]),
				       tnode_size(slot_bits(rb.old[i])), MEM_TNODE);
		}
		for (size_t i = 0; i < rb.n; i++) {
			if (rb.made_leaf[i])
				shared_put(t, &node_leaf(slot_node(rb.slot[i]))->r[0]);
			if (rb.moved && rb.moved[i])
				node_retire(t, slot_node(rb.moved[i]));
		}
	}
	munmap(mem, len);
	return root != NULL;
}

/* Resizes every node, parents first (bulk mode's end, or its input found unsorted). */
static void bulk_resize_all(struct TRIE *t)
{
	struct node *root = slot_node(t->root);

	if (root && !node_is_leaf(root)) {
		t->top_down = true;
		rebalance_subtree(t, node_tnode(root));
		t->top_down = false;
	}
}

void TN(set_build_threads)(struct TRIE *t, unsigned int n)
{
	t->build_threads = n;
}

/*
 * Whether the root @tn, halved, would not inflate back under the root's
 * threshold: a pair of children becomes one slot, and a node of 1 bit
 * where both were nonempty, which inflating splits (a full child).
 */
static bool root_too_wide(const struct TRIE *t, const struct tnode *tn)
{
	unsigned long used = 0;

	if (tn->n.bits < 2)
		return false;
	for (unsigned long i = 0; i < child_length(&tn->n); i += 2) {
		bool a = slot_writer(tn->child[i]) != 0, b = slot_writer(tn->child[i + 1]) != 0;

		used += (unsigned long)(a || b) + (unsigned long)(a && b);
	}
	return !should_inflate(tn->n.pos + 1, tn->n.bits - 1, t->inflate_root, used);
}

/* Writer: the root resized to its thresholds, both ways (trie*_set_root_threshold()). */
static void root_fit(struct TRIE *t)
{
	struct node *root = slot_node(t->root);

	/*
	 * Narrower: resize() halves a root only under the halve threshold, so
	 * that one grown under a lower threshold would keep its size. It is
	 * built anew from the leaves, as at bulk mode's end, to the size the
	 * threshold grows it to. Halved step by step instead (without the
	 * memory for that), while it would not inflate back, it leaves nodes of
	 * one bit for resize() to join again, a deeper trie, and chunks of
	 * memory half used: 30 MiB more resident after 24 bits and back, on
	 * the full view.
	 */
	if (root && !node_is_leaf(root) && root_too_wide(t, node_tnode(root)) &&
	    !rebuild(t, false)) {
		while (root_too_wide(t, node_tnode(root)) && halve(t, node_tnode(root)) == 0)
			root = slot_node(t->root);
		resize_full_children(t, node_tnode(root));
	}
	root = slot_node(t->root);
	/* Wider: resized until stable, as 18 bits to 24 takes more than MAX_WORK steps. */
	for (int k = 0; k < KEYLEN && root && !node_is_leaf(root); k++) {
		resize(t, node_tnode(root));
		if (slot_node(t->root) == root)
			break;
		root = slot_node(t->root);
	}
}

int TN(set_root_threshold)(struct TRIE *t, unsigned int inflate)
{
	if (inflate < TRIE_ROOT_THRESHOLD_MIN || inflate > TRIE_ROOT_THRESHOLD_MAX)
		return -EINVAL;
	t->inflate_root = (uint8_t)inflate;
	t->halve_root = (uint8_t)(inflate / 2);
	/* In bulk mode, at its end (the root has no fallbacks until then). */
	if (t->deferred) {
		t->root_refit = true;
		return 0;
	}
	root_fit(t);
	if (t->fb_stale)
		fb_build(t);
	return 0;
}

bool TN(compact)(struct TRIE *t)
{
	struct node *root = slot_node(t->root);

	/* In bulk mode its end builds it anew (or resizes it) anyway. */
	if (t->deferred || !root || node_is_leaf(root) || !rebuild(t, true))
		return false;
	t->finger = NULL; /* set in bulk mode only; its node is retired now */
	if (t->fb_stale)
		fb_build(t);
	return true;
}

void TN(set_bulk)(struct TRIE *t, bool on)
{
	struct node *root = slot_node(t->root);
	bool eager = t->eager;

	t->deferred = on;
	t->finger = NULL;
	t->eager = false;
	if (on) {
		/* Kept in place, they would be set again for every prefix the load adds. */
		fb_drop(t);
		t->bulk_leaves = t->bulk_descents = 0;
		return;
	}
	/* An eager load left nothing to resize. */
	if (!eager && (!root || node_is_leaf(root) || !bulk_rebuilds(t) || !rebuild(t, false)))
		bulk_resize_all(t);
	if (t->root_refit) {
		t->root_refit = false;
		root_fit(t);
	}
	if (!t->fb || t->fb_stale)
		fb_build(t);
}

/* ------------------------------------------------- the root's fallbacks */

static inline size_t fb_size(unsigned int bits, bool routes)
{
	return sizeof(struct root_fb) + (routes ? sizeof(uintptr_t) << bits : 0);
}

static inline size_t fb_bytes(const struct root_fb *fb)
{
	return fb_size(fb->bits, fb->routes);
}

/* Writer: the length of the shortest prefix of @l a fallback of @root can name, or -1. */
static int fb_plen(const struct tnode *root, const struct lview *l)
{
	unsigned int plen;

	if (!l)
		return -1;
	plen = l->r[l->nr - 1].plen;
	return plen + root->n.pos <= KEYLEN ? (int)plen : -1;
}

/* Writer: the length of the longest prefix of @l a fallback of @root can name, or -1. */
static int fb_longest(const struct tnode *root, const struct lview *l)
{
	for (unsigned int i = 0; l && i < l->nr; i++)
		if (l->r[i].plen + root->n.pos <= KEYLEN)
			return l->r[i].plen;
	return -1;
}

/* Writer: the leaf of exactly @key in *@v; false if there is none. */
static bool leaf_exact(const struct TRIE *t, TKEY key, struct lview *v)
{
	uintptr_t s = t->root;

	while (slot_bits(s)) {
		const struct tnode *tn = node_tnode(slot_node(s));
		TKEY index = get_cindex(key, &tn->n);

		if (index >> tn->n.bits)
			return false;
		if (!lv_child(v, tn, (unsigned long)index)) {
			s = slot_writer(tn->child[(unsigned long)index]);
			continue;
		}
		return v->key == key;
	}
	return lv_set(v, s, 0) && v->key == key;
}

/*
 * Writer: the leaf at the first key of child @j of @root if it holds a
 * prefix a fallback can name: it is at the end of j's child-0 chain, and
 * only where the slen copies show a suffix as long as the root's pos.
 */
static const struct lview *fb_leaf_at(const struct tnode *root, unsigned long j, struct lview *v)
{
	TKEY key = root->n.key | (TKEY)j << root->n.pos;
	const struct tnode *tn = root;
	unsigned long i = j;
	uintptr_t s;

	if (child_slen(root)[j] < root->n.pos)
		return NULL;
	s = slot_writer(root->child[j]);
	while (slot_bits(s)) {
		const struct node *n = slot_node(s);

		if (n->slen < root->n.pos || (get_cindex(key, n) >> n->bits))
			return NULL;
		tn = node_tnode(n);
		i = 0;
		s = slot_writer(tn->child[0]);
	}
	return lv_set(v, s, inline_key(tn, i)) && v->key == key && fb_plen(root, v) >= 0 ? v : NULL;
}

/* Writer: children of @root a prefix of @plen covers (a power of two), capped at all of them. */
static unsigned long fb_span(const struct tnode *root, unsigned int plen)
{
	unsigned int b = KEYLEN - root->n.pos - plen;

	return b >= root->n.bits ? 1ul << root->n.bits : 1ul << b;
}

/* Writer: the first route of @l whose prefix covers all of child @j of @root (there is one). */
static const struct fib_route *fb_route(const struct tnode *root, const struct lview *l,
					unsigned long j)
{
	TKEY x = (root->n.key | (TKEY)j << root->n.pos) ^ l->key;
	unsigned int i = 0;

	while (l->r[i].plen + root->n.pos > KEYLEN || key_shr(x, KEYLEN - l->r[i].plen))
		i++;
	return &l->r[i];
}

/* A prefix open while answers are set: its route, and the first child past its range. */
struct fb_open {
	unsigned long end;
	const struct fib_route *r;
};

/*
 * Opens on @st (at *@sp) the prefixes of leaf @l at child @j of @tn that
 * cover whole children: shortest first (each length's first route), so
 * the longer nest above.
 */
static void fb_open_leaf(struct fb_open *st, int *sp, const struct tnode *tn, unsigned long j,
			 const struct lview *l)
{
	for (unsigned int i = l ? l->nr : 0; i-- > 0;) {
		unsigned int plen = l->r[i].plen;

		if (plen + tn->n.pos > KEYLEN)
			break;
		if (i == 0 || l->r[i - 1].plen != plen)
			st[(*sp)++] =
				(struct fb_open){ .end = j + fb_span(tn, plen), .r = &l->r[i] };
	}
}

/* The end and the route of the innermost prefix open on @st, or ULONG_MAX and 0 if none. */
static inline void fb_top(const struct fb_open *st, int sp, unsigned long *end, uintptr_t *v)
{
	*end = sp ? st[sp - 1].end : ULONG_MAX;
	*v = sp ? (uintptr_t)st[sp - 1].r : 0;
}

static inline __attribute__((always_inline)) void
answers_fill_in(struct tnode *tn, struct root_fb *fb, unsigned long lo, unsigned long hi,
		const struct lview *outer, unsigned int shadow, bool fresh)
{
	bool full = fb && fb->in_slots;
	unsigned int pos = tn->n.pos;
	uintptr_t *child = tn->child;
	const uint8_t *slens = child_slen(tn);
	struct fb_open st[KEYLEN + 2];
	int sp = 0;
	/* The innermost open prefix, read off the stack only when it changes. */
	unsigned long end = ULONG_MAX;
	uintptr_t v = 0;

	if (outer) {
		st[sp++] = (struct fb_open){ .end = hi, .r = fb_route(tn, outer, lo) };
		fb_top(st, sp, &end, &v);
	}
	for (unsigned long j = lo; j < hi; j++) {
		uintptr_t s = slot_writer(child[j]);
		unsigned int sl = slens[j], plen = KEYLEN - sl;
		const struct lview *l;
		struct lview lv;

		if (j >= end) {
			do
				sp--;
			while (sp && st[sp - 1].end <= j);
			fb_top(st, sp, &end, &v);
		}
		if (s && !slot_bits(s) && slot_leaf_plen1(s) - 1 == plen) {
			/*
			 * A leaf of one prefix length (its longest, in its slot, is its
			 * shortest, in the slen copy), or inline: its first route,
			 * without a read (slot_answer()).
			 */
			if (plen + pos <= KEYLEN) {
				if (plen > shadow) {
					j += fb_span(tn, plen) - 1;
					continue;
				}
				st[sp++] = (struct fb_open){ .end = j + fb_span(tn, plen),
							     .r = slot_answer(s) };
				fb_top(st, sp, &end, &v);
			}
		} else if (fb || sl > pos) {
			/*
			 * Otherwise the leaf at the child's first key, if it holds a
			 * prefix covering a whole child; only the fallbacks name one
			 * that covers just its own child (the slen copy tells).
			 */
			l = fb_leaf_at(tn, j, &lv);
			if (l && (unsigned int)fb_plen(tn, l) > shadow) {
				j += fb_span(tn, (unsigned int)fb_plen(tn, l)) - 1;
				continue;
			}
			fb_open_leaf(st, &sp, tn, j, l);
			fb_top(st, sp, &end, &v);
		}
		if (fresh) {
			/* No reader has seen @tn: its empty slots are 0, each set once here. */
			if (!s && v)
				child[j] = v | SLOT_ROUTE;
			continue;
		}
		/* Stores only where it changes: a reader may be loading the entry. */
		if (fb && fb->routes && fb->route[j] != v)
			__atomic_store_n(&fb->route[j], v, __ATOMIC_RELEASE);
		answer_set(tn, j, v, full);
	}
}

/*
 * Writer: sets the answers of children [lo, hi) of @tn (see SLOT_ROUTE):
 * for each, the longest prefix in tn's subtree that covers all of it, in
 * its slot if it is empty, and in the entries of @fb if @tn is the root
 * they are for (or NULL). @outer is the leaf of the
 * longest prefix covering all of them that starts before lo, or NULL. The
 * prefixes met nest, so a stack of the open ones (each longer than the one
 * below it: at most one a length) gives each entry the innermost. A leaf
 * whose shortest prefix is longer than @shadow outranks, over its whole
 * range, every prefix that changed (none is longer than @shadow), so its
 * range is skipped: what is there stays right (KEYLEN: nothing skipped).
 */
static void answers_fill(struct tnode *tn, struct root_fb *fb, unsigned long lo, unsigned long hi,
			 const struct lview *outer, unsigned int shadow)
{
	answers_fill_in(tn, fb, lo, hi, outer, shadow, false);
}

/*
 * Writer: the leaf of the longest prefix in @tn's subtree that covers all
 * of child @lo and sits at the first key of a child before lo, or NULL.
 * Such a child's index is lo with some of its low set bits cleared; the
 * nearest one with a prefix that reaches lo holds the longest.
 */
static const struct lview *node_outer(const struct tnode *tn, unsigned long lo, struct lview *v)
{
	for (unsigned long j = lo & (lo - 1);; j &= j - 1) {
		const struct lview *l =
			j < lo && child_slen(tn)[j] > tn->n.pos ? fb_leaf_at(tn, j, v) : NULL;

		for (unsigned int i = 0; l && i < l->nr; i++)
			if (l->r[i].plen + tn->n.pos <= KEYLEN &&
			    lo - j < fb_span(tn, l->r[i].plen))
				return l;
		if (!j)
			return NULL;
	}
}

/*
 * Writer: the answers of all the empty children of @tn, a node not yet
 * published: plain stores, as fill_slot() (a fifth of a load one route at
 * a time went to answers_fill(), most of it here).
 */
static void answers_new(struct tnode *tn)
{
	if (tn->empty_children)
		answers_fill_in(tn, NULL, 0, child_length(&tn->n), NULL, KEYLEN, true);
}

/*
 * answers_new() for a node rebuild_node() made over the leaves [lo, hi),
 * with the same answers, found in the sorted leaves rather than by a walk
 * down each child: the leaf at a child's first key is the first leaf of
 * its group, and only a leaf whose slen (exact for a leaf) is at least
 * tn's pos holds a prefix covering a whole child (its key then has no bit
 * set below pos). A run of empty children between groups takes the
 * innermost open prefix in one loop, up to where that prefix ends.
 */
static void rebuild_answers(const struct rebuild *rb, struct tnode *tn, size_t lo, size_t hi)
{
	unsigned long size = child_length(&tn->n), j = 0;
	unsigned int pos = tn->n.pos;
	struct fb_open st[KEYLEN + 2];
	int sp = 0;

	if (!tn->empty_children)
		return;
	for (size_t a = lo, c;; a = c) {
		unsigned long next = a < hi ? get_index(rb->key[a], &tn->n) : size;
		struct lview l;
		unsigned int plen;

		/* The empty children before the next group (new, so their slots are 0). */
		while (j < next) {
			unsigned long stop = next;

			while (sp && st[sp - 1].end <= j)
				sp--;
			if (!sp) {
				j = next;
				break;
			}
			if (st[sp - 1].end < stop)
				stop = st[sp - 1].end;
			for (; j < stop; j++)
				tn->child[j] = (uintptr_t)st[sp - 1].r | SLOT_ROUTE;
		}
		if (a == hi)
			return;
		for (c = a + 1; c < hi && rb->diff[c - 1] < pos; c++)
			;
		/* Child j holds the group [a, c): its prefixes that cover whole children open. */
		while (sp && st[sp - 1].end <= j)
			sp--;
		if (rb->slen[a] >= pos) {
			plen = KEYLEN - rb->slen[a];
			/*
			 * One prefix length (the slot has its longest, the slen its
			 * shortest), or inline.
			 */
			if (slot_leaf_plen1(rb->slot[a]) - 1 == plen) {
				st[sp++] = (struct fb_open){ .end = j + fb_span(tn, plen),
							     .r = slot_answer(rb->slot[a]) };
			} else {
				lv_set(&l, rb->slot[a], rb->key[a]);
				fb_open_leaf(st, &sp, tn, j, &l);
			}
		}
		j++;
	}
}

/* Writer: child @j of @tn has just become empty: its answer. */
static void answer_refill(struct TRIE *t, struct tnode *tn, unsigned long j)
{
	struct root_fb *fb = t->fb;

	struct lview v;

	if (fb && tn == fb->root && fb->routes)
		answer_set(tn, j, fb->route[j], fb->in_slots);
	else
		answers_fill(tn, fb && tn == fb->root ? fb : NULL, j, j + 1, node_outer(tn, j, &v),
			     KEYLEN);
}

/*
 * Writer: the leaf of the longest prefix shorter than @plen that covers
 * @key, or NULL: the leaf of key & mask(q), for q from plen - 1 down, is
 * the first to hold a route of length <= q (a shorter one on another key
 * would have that key's bits at q clear, and so be that leaf's).
 */
static const struct lview *fb_outer(const struct TRIE *t, TKEY key, unsigned int plen,
				    struct lview *v)
{
	for (unsigned int q = plen; q-- > 0;) {
		if (leaf_exact(t, key_mask_low(key, KEYLEN - q), v) && v->r[v->nr - 1].plen <= q)
			return v;
	}
	return NULL;
}

/* Writer: builds the fallbacks of the current root and publishes them. */
static void fb_build(struct TRIE *t)
{
	const struct node *rn = slot_node(t->root);
	struct root_fb *fb;
	bool in_slots, routes;

	t->fb_stale = false;
	if (!rn || node_is_leaf(rn))
		return;
	in_slots = rn->pos + rn->bits == KEYLEN;
	routes = fb_keeps_routes(in_slots, rn->bits);
	fb = mem_alloc(t->mem, MEM_FALLBACK, fb_size(rn->bits, routes));
	if (!fb) {
		/* Lookups backtrack at the root meanwhile; the next edit tries again. */
		t->fb_stale = true;
		return;
	}
	if (routes)
		memset(fb->route, 0, sizeof(uintptr_t) << rn->bits);
	fb->root = node_tnode(rn);
	fb->key = rn->key;
	fb->pos = rn->pos;
	fb->bits = rn->bits;
	fb->in_slots = in_slots;
	fb->routes = routes;
	answers_fill(fb->root, fb, 0, 1ul << rn->bits, NULL, KEYLEN);
	rcu_assign_pointer(t->fb, fb);
}

/* Writer: unpublishes the fallbacks (the root is about to change) and retires them. */
static void fb_drop(struct TRIE *t)
{
	struct root_fb *fb = t->fb;

	t->fb_stale = true;
	if (!fb)
		return;
	/* Without them a root's "none" is not an answer (see SLOT_ROUTE); its routes stay right. */
	for (unsigned long j = 0; fb->in_slots && j < 1ul << fb->bits; j++)
		if (fb->root->child[j] == SLOT_ROUTE)
			__atomic_store_n(&fb->root->child[j], 0, __ATOMIC_RELAXED);
	rcu_assign_pointer(t->fb, NULL);
	reclaim_retire(t->rc, fb, fb_bytes(fb), MEM_FALLBACK);
}

/*
 * Writer, after leaf @old was replaced by @l at the same key (either may
 * be NULL) and before @old is retired: the entries they can be named in
 * are set again.
 */
static void fb_leaf_changed(struct TRIE *t, const struct lview *old, const struct lview *l)
{
	struct root_fb *fb = t->fb;
	int po, pl, p;
	unsigned int shadow;
	TKEY key;
	unsigned long lo;
	struct lview outer;

	if (!fb)
		return;
	po = fb_plen(fb->root, old);
	pl = fb_plen(fb->root, l);
	p = po < 0 ? pl : pl < 0 ? po : po < pl ? po : pl;
	if (p < 0)
		return;
	shadow = (unsigned int)(fb_longest(fb->root, old) > fb_longest(fb->root, l)
					? fb_longest(fb->root, old)
					: fb_longest(fb->root, l));
	key = (old ? old : l)->key;
	lo = get_index(key, &fb->root->n);
	answers_fill(fb->root, fb, lo, lo + fb_span(fb->root, (unsigned int)p),
		     fb_outer(t, key, (unsigned int)p, &outer), shadow);
}

/*
 * Writer, as fb_leaf_changed(), for leaf @old replaced by @l (either may
 * be NULL) under @tp (NULL: at the root): the root's fallbacks, then the
 * answers of tp and its ancestors that can name a prefix of either. A
 * node's parent has a pos of at least the node's pos + bits, so once
 * neither leaf holds a prefix that covers that much, none above can name
 * one (most leaves stop at tp, and tp's parent is not read).
 */
static void answers_leaf_changed(struct TRIE *t, struct tnode *tp, const struct lview *old,
				 const struct lview *l)
{
	TKEY key = (old ? old : l)->key;
	struct lview outer;

	fb_leaf_changed(t, old, l);
	for (struct tnode *a = tp; a && !(t->fb && a == t->fb->root); a = a->parent) {
		int po = fb_plen(a, old), pl = fb_plen(a, l);
		int p = po < 0 ? pl : pl < 0 ? po : po < pl ? po : pl;
		int so = fb_longest(a, old), sl = fb_longest(a, l);
		unsigned long lo;

		if (p < 0)
			return;
		/* A prefix of just its own child changes no answer: the child is there. */
		if (fb_span(a, (unsigned int)p) > 1) {
			lo = get_index(key, &a->n);
			answers_fill(a, NULL, lo, lo + fb_span(a, (unsigned int)p),
				     node_outer(a, lo, &outer), (unsigned int)(so > sl ? so : sl));
		}
		/* The parent's pos is at least a's pos + bits: stop without reading it. */
		if ((unsigned int)p + a->n.pos + a->n.bits > KEYLEN)
			return;
	}
}

/* ------------------------------------------------------------- updates */

/*
 * Writer. The leaf with exactly @key in *@v (false: none); *@tpp is the
 * last internal node on the path (NULL when the root slot itself holds
 * the answer), and *@walk the internal nodes walked down.
 */
static bool find_leaf(const struct TRIE *t, TKEY key, struct tnode **tpp, unsigned int *walk,
		      struct lview *v)
{
	struct tnode *tp = NULL;
	uintptr_t s = t->root;
	unsigned long i = 0;

	/* In bulk mode, climb from the finger to the first node that holds @key. */
	for (struct tnode *f = t->finger; f; f = f->parent) {
		if (!(get_cindex(key, &f->n) >> f->n.bits)) {
			s = node_slot(&f->n);
			break;
		}
	}

	while (slot_bits(s)) {
		struct tnode *tn = node_tnode(slot_node(s));
		TKEY index = get_cindex(key, &tn->n);

		if (index >> tn->n.bits)
			break;
		tp = tn;
		i = (unsigned long)index;
		s = slot_writer(tn->child[i]);
		(*walk)++;
	}
	*tpp = tp;
	return !slot_bits(s) && lv_set(v, s, tp ? inline_key(tp, i) : 0) && v->key == key;
}

/* Bulk mode, and its input sorted so far: resizes wait for its end (see BULK_UNSORTED_MIN). */
static inline bool bulk_lazy(const struct TRIE *t)
{
	return t->deferred && !t->eager;
}

/*
 * Bulk mode, after the lazy insert of the new key @key (counted in
 * bulk_leaves): turns eager if the input is unsorted (returns true then:
 * the trie was resized).
 */
static bool bulk_note_order(struct TRIE *t, TKEY key)
{
	if (t->bulk_leaves > 1 && key < t->bulk_last)
		t->bulk_descents++;
	t->bulk_last = key;
	if (t->bulk_descents < BULK_UNSORTED_MIN || 4 * t->bulk_descents < t->bulk_leaves)
		return false;
	/* What was left for the end is resized now: the end then has nothing to do. */
	t->eager = true;
	t->finger = NULL;
	bulk_resize_all(t);
	return true;
}

/*
 * Publishes a new leaf of @key with the routes @r[@nr] where no leaf of its
 * key exists; @tp and @walk from find_leaf().
 */
static int leaf_insert(struct TRIE *t, struct tnode *tp, TKEY key, const struct fib_route *r,
		       unsigned int nr, unsigned int walk)
{
	unsigned long idx = tp ? get_index(key, &tp->n) : 0;
	uintptr_t s = tp ? slot_writer(tp->child[idx]) : t->root, ns;
	unsigned int slen = KEYLEN - r[nr - 1].plen;
	struct lview l;

	if (s) {
		/*
		 * Something else sits in the slot: a new node splits at the first
		 * differing bit. Between two leaves, one of 1 bit would inflate at
		 * once (2 of 2 children used) to 2 bits, and stay so (2 of 4, no
		 * full child): it is made so, not made and copied. Not in bulk
		 * mode, where no resize follows: there the node lasts until the
		 * end's resize, and nodes of 1 bit are a size the finished trie
		 * hardly uses, so their slab chunks come free whole and go back
		 * to the system (of 2 bits, they left the chunks of the trie's
		 * own 2-bit nodes a third free: RSS 1.54x the live bytes after a
		 * full view loaded in lcfibd, against 1.15x).
		 *
		 * A bulk load that made at least half of the leaves, which its
		 * end builds anew (rebuild()) and whose nodes it retires whole,
		 * joins them wider: BULK_NODE_BITS bits from the differing one
		 * up, as many as fit under the parent, so that the sorted keys
		 * after them find a slot free instead of a node each.
		 */
		TKEY nkey = slot_inline(s) ? inline_key(tp, idx) : slot_node(s)->key;
		unsigned int pos = key_fls(key ^ nkey), bits = 1;
		struct tnode *tn;
		uintptr_t moved;

		if (pos && !slot_bits(s) && !bulk_lazy(t)) {
			pos--;
			bits = 2;
		} else if (bulk_lazy(t) && bulk_rebuilds(t)) {
			unsigned int top = tp ? tp->n.pos : KEYLEN;

			bits = top - pos < BULK_NODE_BITS ? top - pos : BULK_NODE_BITS;
		}
		tn = tnode_new(t, key, pos, bits);
		if (!tn)
			return -ENOMEM;
		ns = leaf_make(t, key, r, nr, tn->n.pos);
		if (!ns) {
			node_free_unpublished(t, &tn->n);
			return -ENOMEM;
		}
		tn->parent = tp;
		moved = leaf_to_inline(t, s, slot_slen(s), tp ? tp->n.pos : KEYLEN + 1, tn->n.pos);
		fill_slot(tn, get_index(nkey, &tn->n), moved, slot_slen(s));
		fill_slot(tn, get_index(key, &tn->n), ns, slen);
		answers_new(tn);
		if (slot_bits(s))
			node_set_parent(slot_node(s), tn);
		node_push_suffix(tp, tn->n.slen);
		put_child_root(t, tp, key, &tn->n);
		if (moved != s)
			leaf_reformed(t, tn, s, moved, nkey);
		tp = tn;
	} else {
		ns = leaf_make(t, key, r, nr, tp ? tp->n.pos : KEYLEN + 1);
		if (!ns)
			return -ENOMEM;
		node_push_suffix(tp, slen);
		put_slot_root(t, tp, key, ns, slen);
	}
	lv_set(&l, ns, key);
	answers_leaf_changed(t, tp, NULL, &l);
	STAT_ADD(t->nr_leaves, 1);
	if (bulk_lazy(t)) {
		t->bulk_leaves++;
		/* Turned eager: the whole trie was resized just now. */
		if (bulk_note_order(t, key))
			return 0;
		if (walk <= BULK_WALK_MAX) {
			t->finger = tp;
			return 0;
		}
	}
	/* The resize may unlink the finger's nodes. */
	t->finger = NULL;
	rebalance(t, tp);
	return 0;
}

/* Replaces the leaf @old under @tp by one with the routes @r[@nr]. */
static int leaf_replace(struct TRIE *t, struct tnode *tp, const struct lview *old,
			const struct fib_route *r, unsigned int nr)
{
	unsigned int old_slen = lv_slen(old), slen = KEYLEN - r[nr - 1].plen;
	uintptr_t ns = leaf_make(t, old->key, r, nr, tp ? tp->n.pos : KEYLEN + 1);
	struct lview l;

	if (!ns)
		return -ENOMEM;
	lv_set(&l, ns, old->key);
	node_push_suffix(tp, slen);
	put_slot_root(t, tp, old->key, ns, slen);
	answers_leaf_changed(t, tp, old, &l);
	leaf_slot_retire(t, old->slot);
	if (slen < old_slen)
		node_pull_suffix(tp, old_slen);
	return 0;
}

static void leaf_remove(struct TRIE *t, struct tnode *tp, const struct lview *l)
{
	unsigned int old_slen = lv_slen(l);

	put_slot_root(t, tp, l->key, 0, 0);
	answers_leaf_changed(t, tp, l, NULL);
	leaf_slot_retire(t, l->slot);
	STAT_ADD(t->nr_leaves, -1);
	node_pull_suffix(tp, old_slen);
	if (!bulk_lazy(t))
		rebalance(t, tp);
}

/* The routes of @l with prefix length @plen are l->r[*lo .. *hi). */
static void leaf_run(const struct lview *l, unsigned int plen, unsigned int *lo, unsigned int *hi)
{
	unsigned int i = 0;

	if (!l) {
		*lo = *hi = 0;
		return;
	}
	while (i < l->nr && l->r[i].plen > plen)
		i++;
	*lo = i;
	while (i < l->nr && l->r[i].plen == plen)
		i++;
	*hi = i;
}

static int edit_leaf(struct TRIE *t, TKEY key, unsigned int plen, trie_edit_fn *fn, void *ctx)
{
	struct fib_route run[TRIE_LEAF_MAX], all[TRIE_LEAF_MAX];
	struct tnode *tp;
	struct lview old, *po = NULL;
	unsigned int lo, hi, nr_old, nr_new, nr, walk = 0;
	int ret;

	if (key_has_host_bits(key, plen))
		return -EINVAL;
	if (find_leaf(t, key, &tp, &walk, &old))
		po = &old;
	leaf_run(po, plen, &lo, &hi);
	nr_old = po ? old.nr : 0;
	ret = fn(ctx, po ? &old.r[lo] : NULL, hi - lo, run, TRIE_LEAF_MAX - (nr_old - (hi - lo)));
	if (ret < 0)
		return ret;
	nr_new = (unsigned int)ret;
	if (nr_new > TRIE_LEAF_MAX - (nr_old - (hi - lo)))
		return -ENOSPC;
	nr = nr_old - (hi - lo) + nr_new;
	for (unsigned int i = 0; i < nr_new; i++)
		run[i].plen = (uint8_t)plen;
	/* Nothing new, nothing to publish. */
	if (nr_new == hi - lo && (!nr_new || !memcmp(run, &old.r[lo], nr_new * sizeof(run[0]))))
		return 0;
	if (nr == 0) {
		leaf_remove(t, tp, po);
		STAT_ADD(t->nr_routes, -(uint64_t)nr_old);
		return 0;
	}

	if (po)
		memcpy(all, old.r, lo * sizeof(all[0]));
	memcpy(all + lo, run, nr_new * sizeof(all[0]));
	if (po)
		memcpy(all + lo + nr_new, old.r + hi, (nr_old - hi) * sizeof(all[0]));
	ret = po ? leaf_replace(t, tp, po, all, nr) : leaf_insert(t, tp, key, all, nr, walk);
	if (ret < 0)
		return ret;
	STAT_ADD(t->nr_routes, (uint64_t)nr - nr_old);
	return 0;
}

int TN(edit)(struct TRIE *t, TKEY key, unsigned int plen, trie_edit_fn *fn, void *ctx)
{
	int ret = edit_leaf(t, key, plen, fn, ctx);

	/* The root changed: its fallbacks are made anew (in bulk mode, at its end). */
	if (t->fb_stale && !t->deferred)
		fb_build(t);
	return ret;
}

/* -------------------------------------------------------------- lookups */

/* The first route of the longest prefix on @l that covers @key. */
static inline const struct fib_route *leaf_match(const struct leaf *l, TKEY key)
{
	TKEY x = key ^ l->n.key;

	for (unsigned int i = 0; i < l->n.nr; i++) {
		if (key_shr(x, KEYLEN - l->r[i].plen) == 0)
			return &l->r[i];
	}
	return NULL;
}

/*
 * Backtracking (step 2 of the kernel's lookup): clear the lowest set bit
 * of our index in @pn, climbing when the index is spent; each step tries a
 * shorter prefix. Returns the next child slot that may hold a prefix
 * covering the key, or NULL when none is left; updates *@pnp and *@cip.
 * Climbing into @stop (the root the fallbacks are for, or NULL) ends it
 * too, with *@pnp = @stop and *@cip our index there: the caller reads the
 * answer from the fallbacks.
 */
static const uintptr_t *backtrack(const struct tnode **pnp, unsigned long *cip,
				  const struct tnode *stop)
{
	const struct tnode *pn = *pnp;
	unsigned long cindex = *cip;
	unsigned int j;

	for (;;) {
		/*
		 * Clearing bit j can only reach a prefix whose suffix covers bit
		 * pos + j: none exists below pn when its slen is not above that,
		 * and higher bits need longer suffixes still, so climb.
		 */
		while (!cindex ||
		       pn->n.pos + (unsigned int)__builtin_ctzl(cindex) >= SLEN_LOAD(pn->n.slen)) {
			const struct tnode *pp;

			if (!pn)
				return NULL;
			TRIE_READ(TRIE_READ_TAIL);
			pp = rcu_dereference(pn->parent);
			if (!pp)
				return NULL;
			cindex = get_index(pn->n.key, &pp->n);
			pn = pp;
			if (pn == stop) {
				*pnp = pn;
				*cip = cindex;
				return NULL;
			}
		}
		/* The child with bit j cleared helps only if its slen copy covers pos + j. */
		j = (unsigned int)__builtin_ctzl(cindex);
		cindex &= cindex - 1;
		if (SLEN_LOAD(child_slen(pn)[cindex]) > pn->n.pos + j)
			break;
	}
	*pnp = pn;
	*cip = cindex;
	return &pn->child[cindex];
}

enum tail_step {
	TAIL_FOUND,     /* *r is the answer */
	TAIL_BACKTRACK, /* nothing here: try a shorter prefix */
	TAIL_DESCEND,   /* shorter prefixes lie down the all-zeros side: child 0 */
};

/* Steps 2 and 3 at node @n, reached by descent or by backtracking. */
static inline enum tail_step tail_visit(TKEY key, const struct node *n, const struct fib_route **r)
{
	/*
	 * A leaf of exactly our key: every route on it covers the key. Else the
	 * key may still match a prefix in n only if n's key agrees with it above
	 * n's lowest set bit, and n holds a prefix shorter than its index bits.
	 */
	if (!(node_is_leaf(n) && n->key == key) &&
	    (prefix_mismatch(key, n) || SLEN_LOAD(n->slen) == n->pos))
		return TAIL_BACKTRACK;
	if (!node_is_leaf(n))
		return TAIL_DESCEND;
	/* Step 3: the leaf's routes, longest first. */
	*r = leaf_match(node_leaf(n), key);
	return *r ? TAIL_FOUND : TAIL_BACKTRACK;
}

/*
 * Reader: the node in slot @s, child @i of @tn, to visit next; NULL for
 * none, or for an inline leaf, whose route goes to *@r if it covers @key
 * (a leaf's visit, without the leaf).
 */
static inline const struct node *slot_visit(uintptr_t s, const struct tnode *tn, unsigned long i,
					    TKEY key, const struct fib_route **r)
{
	if (slot_inline(s)) {
		if (inline_covers(s, tn, i, key))
			*r = slot_route(s);
		return NULL;
	}
	return slot_node(s);
}

/* Reader: the answer from entry @i of the root's fallbacks (for a key fb_for() accepts). */
static inline const struct fib_route *fb_match(const struct root_fb *fb, unsigned long i)
{
	return (const struct fib_route *)slot_load(&fb->route[i]);
}

/* Reader: the root's fallbacks, if they have their entries (FB_ROUTES_MAX_BITS). */
static inline const struct root_fb *fb_reader(const struct TRIE *t)
{
	const struct root_fb *fb = rcu_dereference(t->fb);

	return fb && fb->routes ? fb : NULL;
}

/* Reader: @fb if it can answer for @key (see struct root_fb), else NULL. */
static inline const struct root_fb *fb_for(const struct root_fb *fb, TKEY key)
{
	return fb && !key_shr(key ^ fb->key, fb->pos + fb->bits) ? fb : NULL;
}

static inline const struct tnode *fb_root(const struct root_fb *fb)
{
	return fb ? fb->root : NULL;
}

/*
 * Steps 2 and 3: @n is the next node to visit (NULL: none, backtrack at
 * once), @pn the internal node to backtrack in and @cindex our index in it
 * (see lookup_fast() for where they come from); @fb the root's fallbacks
 * if they can answer for @key (fb_for()), or NULL.
 */
static const struct fib_route *lookup_tail(TKEY key, const struct node *n, const struct tnode *pn,
					   unsigned long cindex, const struct root_fb *fb)
{
	const uintptr_t *slot;
	const struct fib_route *r = NULL;

	for (;;) {
		if (n) {
			enum tail_step step;

			TRIE_READ(TRIE_READ_TAIL);
			step = tail_visit(key, n, &r);

			if (step == TAIL_FOUND)
				return r;
			if (step == TAIL_DESCEND) {
				TRIE_READ(TRIE_READ_TAIL);
				n = slot_visit(slot_load(&node_tnode(n)->child[0]), node_tnode(n),
					       0, key, &r);
				if (r)
					return r;
				continue;
			}
		}
		/* At the root, the fallbacks answer (the kernel's descent may stop there). */
		if (fb && pn == fb->root) {
			TRIE_READ(TRIE_READ_FB);
			return fb_match(fb, cindex);
		}
		slot = backtrack(&pn, &cindex, fb_root(fb));
		if (!slot) {
			if (!fb || pn != fb->root)
				return NULL;
			TRIE_READ(TRIE_READ_FB);
			return fb_match(fb, cindex);
		}
		TRIE_READ(TRIE_READ_TAIL);
		n = slot_visit(slot_load(slot), pn, cindex, key, &r);
		if (r)
			return r;
	}
}

/* The kernel's lookup from the root node @n, step by step: every header on the path is read. */
static const struct fib_route *lookup_full_at(const struct node *n, TKEY key,
					      const struct root_fb *fb)
{
	const struct tnode *pn = NULL;
	unsigned long cindex = 0;
	const struct fib_route *r = NULL;

	/* Step 1: descend while the key is inside the node. */
	while (n) {
		TKEY index = get_cindex(key, n);

		if ((index >> n->bits) || node_is_leaf(n))
			break;
		/* Its header (where the loop stops, lookup_tail() counts it), then the slot. */
		TRIE_READ(TRIE_READ_TAIL);
		/* Remember where backtracking may find a shorter prefix. */
		if (SLEN_LOAD(n->slen) > n->pos) {
			pn = node_tnode(n);
			cindex = (unsigned long)index;
		}
		TRIE_READ(TRIE_READ_TAIL);
		n = slot_visit(slot_load(&node_tnode(n)->child[(unsigned long)index]),
			       node_tnode(n), (unsigned long)index, key, &r);
		if (r)
			return r;
	}
	return lookup_tail(key, n, pn, cindex, fb);
}

static const struct fib_route *lookup_full(const struct TRIE *t, TKEY key, const struct root_fb *fb)
{
	return lookup_full_at(slot_node(slot_load(&t->root)), key, fb);
}

/* The index of @key in the internal node whose slot is @s. */
static inline unsigned long slot_index(uintptr_t s, TKEY key)
{
	return (unsigned long)(key >> slot_pos(s)) & ((1ul << slot_bits(s)) - 1);
}

/*
 * The lookup in two parts. First, the fast descent: down by the key's
 * index bits alone, reading only the slots (their tags give each child's
 * pos and bits), to a leaf or an empty slot; no header is read and skipped
 * bits are not compared on the way. If the leaf reached holds a prefix
 * covering the key, its longest such prefix is the kernel's answer: the
 * leaf agrees with the key on every index bit, so if it differs at bit b,
 * b lies in some node's skipped bits; the kernel's descent stops at the
 * first node whose skipped bits hold b, and a prefix of the leaf covering
 * the key has its host bits at b and below all zero, so the leaf sits down
 * that node's child-0 chain, which is where the kernel's steps 2-3 go next
 * and find it first (the routes of one leaf are longest first).
 *
 * Otherwise (an empty slot, or no prefix of the leaf covers the key), the
 * kernel's steps 2-3 can run from the last internal node of the descent,
 * @pn, at the key's index @cindex in it: backtracking, which needs no
 * header below pn (TN(lookup_rcu)() says when they do, and when the
 * kernel's walk from the root is cheaper). Starting there is right even
 * where the key left the kernel's exact path higher up (a skipped bit
 * differs), only slower: every prefix that covers
 * the key sits at an index of some node of the path that backtracking
 * reaches by clearing low index bits, in the order of decreasing length
 * (a prefix found after clearing bit j of a node has its host bits at and
 * below pos + j, and one found later needs a host bit at a higher set bit,
 * which its key would have set), and every pruning test (slen, the prefix
 * check of tail_visit(), leaf_match()) only drops what cannot cover the key.
 * Nodes below the kernel's stopping point only cost their visit. When
 * backtracking reaches the root (or the descent ended there), the root's
 * fallbacks (struct root_fb) hold the answer.
 */
struct fast_end {
	const struct leaf *l;      /* the leaf reached, or NULL */
	const struct tnode *pn;    /* the last internal node passed, or NULL */
	unsigned long cindex;      /* the key's index in pn */
	const struct fib_route *r; /* the answer, if routed */
	unsigned int pos;          /* pn's pos */
	bool routed;               /* the slot reached gave it (slot_done(), or SLOT_ROUTE) */
};

static inline struct fast_end lookup_fast(const struct TRIE *t, TKEY key)
{
	uintptr_t s = slot_load(&t->root);
	unsigned int above = KEYLEN;
	bool whole = true;
	struct fast_end e = { 0 };

	while (slot_bits(s)) {
		TRIE_READ(e.pn ? TRIE_READ_SLOT : TRIE_READ_ROOT);
		whole &= slot_pos(s) + slot_bits(s) == above;
		above = slot_pos(s);
		e.pn = slot_tnode(s);
		e.cindex = slot_index(s, key);
		e.pos = slot_pos(s);
		s = slot_load(&e.pn->child[e.cindex]);
	}
	if (whole) {
		if (slot_done(s, above)) {
			e.routed = true;
			e.r = slot_answer(s);
			return e;
		}
	} else if (s & SLOT_ROUTE) {
		/*
		 * An answer, if the key is inside the node (see SLOT_ROUTE): a
		 * bit was skipped on the way down to it, so as its header says
		 * (a read, where backtracking would take many); else an empty
		 * slot.
		 */
		TRIE_READ(TRIE_READ_HEADER);
		e.routed = key_inside(e.pn, key);
		e.r = slot_route(s);
		return e;
	}
	e.l = node_leaf(slot_node(s));
	return e;
}

const struct fib_route *TN(lookup_rcu)(const struct TRIE *t, TKEY key)
{
	struct fast_end e = lookup_fast(t, key);
	const struct root_fb *fb;
	const struct fib_route *r;

	if (e.routed)
		return e.r;
	if (e.l) {
		TRIE_READ(TRIE_READ_LEAF);
		r = leaf_match(e.l, key);
		if (r)
			return r;
	}
	/* No internal node: the root is the one leaf, or the trie is empty. */
	if (!e.pn)
		return NULL;
	fb = fb_for(fb_reader(t), key);
	if (fb && e.pn == fb->root) {
		TRIE_READ(TRIE_READ_FB);
		return fb_match(fb, e.cindex);
	}
	/*
	 * Where the key left the kernel's path above pn (a skipped bit
	 * differs), climbing back from pn would visit every node below the
	 * kernel's stopping point: the kernel's walk from the root stops there.
	 * The leaf agrees with every node of the path. Without one, finding
	 * out would cost pn's header, another miss: the walk from the root it
	 * is (mostly addresses no prefix covers, which leave early). So it is
	 * for IPv6 always: its trie is twice as deep, and climbing back costs
	 * a header a level where the walk down reads headers near the root
	 * that are in cache (measured: resuming made IPv6 lookups 10-15 %
	 * slower, IPv4 ones faster).
	 */
	if (!RESUME_DESCENT || !e.l || key_shr(key ^ e.l->n.key, e.pos) != 0)
		return lookup_full(t, key, fb);
	TRIE_READ(TRIE_READ_TAIL); /* pn's header and slen bytes, as the batch prefetches them */
	return lookup_tail(key, NULL, e.pn, e.cindex, fb);
}

#define BATCH_LANES 32
#define FAST_LANES  16

/* Where one lane of the batch's steps 2-3 stands: the memory it waits for was prefetched. */
enum lane_phase {
	LANE_DESC_NODE, /* the kernel's descent from the root: read the node's header */
	LANE_DESC_SLOT, /* the kernel's descent: read the child slot */
	LANE_BACKTRACK, /* start: backtrack from pn at cindex */
	LANE_TAIL_NODE, /* visit the node */
	LANE_TAIL_SLOT, /* read the slot backtracking (or the descent) chose */
	LANE_FB,        /* read the root's fallback at cindex */
	LANE_DONE,
};

struct lane {
	const struct root_fb *fb; /* fb_for() the lane's key */
	const struct node *n;
	const struct tnode *pn;
	unsigned long cindex;
	const uintptr_t *slot;
	const struct tnode *sn; /* the node whose child slot is */
	enum lane_phase phase;
};

/* Lane @l has reached the root the fallbacks @fb are for: its answer is there. */
static inline void lane_to_fb(struct lane *l, const struct root_fb *fb)
{
	l->slot = &fb->route[l->cindex];
	l->phase = LANE_FB;
	TRIE_READ(TRIE_READ_FB);
	__builtin_prefetch(l->slot);
}

/* Lane @l starts over with the kernel's descent from @root. */
static inline void lane_to_root(struct lane *l, const struct node *root)
{
	TRIE_READ(TRIE_READ_TAIL); /* the root's header, as lookup_full_at() counts it */
	l->n = root;
	l->pn = NULL;
	l->cindex = 0;
	l->phase = LANE_DESC_NODE;
}

/*
 * Moves lane @l by one memory access; returns true when it has its answer
 * in *@res. @root: the root node.
 */
static inline bool lane_step(struct lane *l, TKEY key, const struct fib_route **res,
			     const struct node *root)
{
	const struct node *x;
	TKEY index;

	switch (l->phase) {
	case LANE_DESC_NODE:
		x = l->n;
		index = get_cindex(key, x);
		if ((index >> x->bits) || node_is_leaf(x)) {
			l->phase = LANE_TAIL_NODE;
			return lane_step(l, key, res, root); /* the header is here already */
		}
		if (SLEN_LOAD(x->slen) > x->pos) {
			l->pn = node_tnode(x);
			l->cindex = (unsigned long)index;
		}
		l->slot = &node_tnode(x)->child[(unsigned long)index];
		l->sn = node_tnode(x);
		l->phase = LANE_DESC_SLOT;
		TRIE_READ(TRIE_READ_TAIL);
		__builtin_prefetch(l->slot);
		return false;
	case LANE_DESC_SLOT:
	case LANE_TAIL_SLOT:
		*res = NULL;
		x = slot_visit(slot_load(l->slot), l->sn, (unsigned long)(l->slot - l->sn->child),
			       key, res);
		if (*res) {
			l->phase = LANE_DONE;
			return true;
		}
		if (x) {
			l->n = x;
			l->phase = l->phase == LANE_DESC_SLOT ? LANE_DESC_NODE : LANE_TAIL_NODE;
			TRIE_READ(TRIE_READ_TAIL);
			__builtin_prefetch(x);
			return false;
		}
		break;
	case LANE_FB:
		*res = (const struct fib_route *)slot_load(l->slot);
		l->phase = LANE_DONE;
		return true;
	case LANE_TAIL_NODE:
		switch (tail_visit(key, l->n, res)) {
		case TAIL_FOUND:
			l->phase = LANE_DONE;
			return true;
		case TAIL_DESCEND:
			l->slot = &node_tnode(l->n)->child[0];
			l->sn = node_tnode(l->n);
			l->phase = LANE_TAIL_SLOT;
			TRIE_READ(TRIE_READ_TAIL);
			__builtin_prefetch(l->slot);
			return false;
		case TAIL_BACKTRACK:
			break;
		}
		break;
	case LANE_BACKTRACK:
		break;
	case LANE_DONE:
		return true;
	}
	/* Backtrack: pn and its slen bytes were prefetched, or read on our way. */
	if (l->fb && l->pn == l->fb->root) {
		lane_to_fb(l, l->fb);
		return false;
	}
	l->slot = backtrack(&l->pn, &l->cindex, fb_root(l->fb));
	if (!l->slot) {
		if (l->fb && l->pn == l->fb->root) {
			lane_to_fb(l, l->fb);
			return false;
		}
		*res = NULL;
		l->phase = LANE_DONE;
		return true;
	}
	l->sn = l->pn;
	l->phase = LANE_TAIL_SLOT;
	TRIE_READ(TRIE_READ_TAIL);
	__builtin_prefetch(l->slot);
	return false;
}

/*
 * The lookups of the batch's descent() that need steps 2-3, up to
 * BATCH_LANES at once, each lane a small state machine that prefetches what
 * it needs next and lets the other lanes run while that arrives.
 */
struct slow_set {
	const struct node *root;
	const struct root_fb *fb;
	unsigned int n;
	unsigned int idx[BATCH_LANES];
	struct lane lane[BATCH_LANES];
};

static void slow_flush(struct slow_set *ss, const TKEY *key, const struct fib_route **res)
{
	uint32_t active = ss->n >= 32 ? ~0u : (1u << ss->n) - 1;

	while (active) {
		for (uint32_t m = active; m; m &= m - 1) {
			unsigned int j = (unsigned int)__builtin_ctz(m);
			unsigned int i = ss->idx[j];

			if (lane_step(&ss->lane[j], key[i], &res[i], ss->root))
				active &= ~(1u << j);
		}
	}
	ss->n = 0;
}

/*
 * Lookup @i goes to steps 2-3 from @pn (of pos @pos) at @cindex, where its
 * descent found the leaf @lf that does not cover it, or an empty slot (@lf
 * NULL); as in lookup_rcu(), a key outside pn takes the kernel's walk from
 * the root. What comes first (the fallback, or pn's header) is fetched now.
 */
static inline void slow_add(struct slow_set *ss, const TKEY *key, const struct fib_route **res,
			    unsigned int i, const struct tnode *pn, unsigned long cindex,
			    const struct leaf *lf, unsigned int pos)
{
	struct lane *l = &ss->lane[ss->n];

	*l = (struct lane){
		.fb = fb_for(ss->fb, key[i]), .pn = pn, .cindex = cindex, .phase = LANE_BACKTRACK
	};
	if (l->fb && pn == l->fb->root) {
		lane_to_fb(l, l->fb);
	} else if (!RESUME_DESCENT || !lf || key_shr(key[i] ^ lf->n.key, pos)) {
		/*
		 * IPv6 walks from the root at once: its lanes' bookkeeping cost
		 * more than the walk, whose headers near the root are in cache
		 * (IPv6 batches 8-20 % faster; IPv4's inside prefixes 10-15 %
		 * slower, so they keep their lanes).
		 */
		if (!RESUME_DESCENT) {
			res[i] = lookup_full_at(ss->root, key[i], l->fb);
			return;
		}
		lane_to_root(l, ss->root);
	} else {
		TRIE_READ(TRIE_READ_TAIL);
		__builtin_prefetch(pn);
	}
	ss->idx[ss->n++] = i;
	if (ss->n == BATCH_LANES)
		slow_flush(ss, key, res);
}

/*
 * The batch's fast descent (lookup_fast() for many keys). The root's slots
 * are read in address order, each prefetched ROOT_AHEAD addresses ahead:
 * an address whose descent ends there (an answer in an empty slot, a leaf
 * whose prefix covers it: most uniformly random IPv4 addresses) takes no
 * lane. The others go on in one of FAST_LANES lanes (AMAC): a lane only
 * goes down, one slot a step, prefetching the next slot and yielding to
 * the others, in a loop with no phase to switch on. A descent that ends
 * at a slot alone (slot_done(): it came down without skipping a bit) has
 * its answer at once; any other end (a leaf to read, a header to check,
 * an empty slot) waits in a queue (struct desc_end), and the lane takes
 * the next address at once. The queue's DESC_ENDS ends are finished
 * together, each with its last read: loads of their own that the core
 * overlaps, with nothing in the lanes' way. Lookups that need steps 2-3
 * below the root are gathered in a struct slow_set. Against lanes that
 * switched on their phase (slot, leaf, header, fallback) at every step,
 * with the same answers and reads: the IPv6 batch inside table prefixes
 * took 30 % less time, the IPv4 batch 20-27 % less (docs/BENCHMARKS.md,
 * issue 9's twenty-first and twenty-second rounds).
 */
#define ROOT_AHEAD 8
#define DESC_ENDS  16

struct desc_end {
	const struct tnode *pn; /* the node whose slot ended the descent */
	const uintptr_t *p;     /* that slot */
	uintptr_t s;            /* what it held: not an internal node */
	unsigned int i;         /* the address */
	unsigned int pos;       /* pn's pos */
};

/*
 * The end @e found no answer (at the leaf @lf, or NULL): the root's
 * fallbacks give it, or steps 2-3 do, in @ss.
 */
static void desc_end_miss(const struct desc_end *e, const struct leaf *lf, const struct root_fb *fb,
			  const TKEY *key, struct slow_set *ss, const struct fib_route **res)
{
	unsigned long cindex = (unsigned long)(e->p - e->pn->child);

	if (e->pn == fb_root(fb) && fb_for(fb, key[e->i])) {
		TRIE_READ(TRIE_READ_FB);
		res[e->i] = fb_match(fb, cindex);
		return;
	}
	slow_add(ss, key, res, e->i, e->pn, cindex, lf, e->pos);
}

/* The last read of each of the @n ends @q: the answer, or desc_end_miss(). */
static void desc_ends(const struct desc_end *q, unsigned int n, const struct root_fb *fb,
		      const TKEY *key, struct slow_set *ss, const struct fib_route **res)
{
	for (unsigned int j = 0; j < n; j++) {
		const struct desc_end *e = &q[j];
		const struct leaf *l;

		if (e->s & SLOT_ROUTE) {
			/* A bit skipped on the way: pn's header says whether the answer holds. */
			TRIE_READ(TRIE_READ_HEADER);
			if (key_inside(e->pn, key[e->i])) {
				res[e->i] = slot_route(e->s);
				continue;
			}
			desc_end_miss(e, NULL, fb, key, ss, res);
		} else if (e->s) {
			TRIE_READ(TRIE_READ_LEAF);
			l = node_leaf(slot_node(e->s));
			res[e->i] = leaf_match(l, key[e->i]);
			if (!res[e->i])
				desc_end_miss(e, l, fb, key, ss, res);
		} else {
			desc_end_miss(e, NULL, fb, key, ss, res);
		}
	}
}

/*
 * A lane's @above: pos of the last node it passed, or'ed with DESC_SKIPPED
 * once a bit was skipped on the way (then slot_done() never holds: pos +
 * above is more than KEYLEN + 1).
 */
#define DESC_SKIPPED 0x100u
#define DESC_POS     0xffu

/* The batch's state: the root, the lanes, the queue of ends. */
struct descent {
	const struct tnode *root;
	unsigned long rmask; /* the root's index mask */
	unsigned int rpos;   /* its pos */
	unsigned int rabove; /* a descent's above at the root */
	const struct root_fb *fb;
	const TKEY *key;
	const struct fib_route **res;
	unsigned int n, next, ahead; /* the addresses; the next to take, and to prefetch */
	unsigned int nq;             /* ends queued */
	/* Lane k is at slot p[k] of pn[k], for address li[k]. */
	const uintptr_t *p[FAST_LANES];
	const struct tnode *pn[FAST_LANES];
	unsigned int li[FAST_LANES];
	unsigned int above[FAST_LANES];
	struct desc_end q[DESC_ENDS];
	struct slow_set ss;
};

#define DESC_INLINE inline __attribute__((always_inline))

/*
 * slot_index() of the root, its pos and mask taken out of the slot once a
 * batch: slot_index() at every address cost 8 instructions a lookup more,
 * and IPv4 batches in cache 3-4 % more time.
 */
static DESC_INLINE const uintptr_t *desc_root_slot(const struct descent *d, TKEY key)
{
	return &d->root->child[(unsigned long)(key >> d->rpos) & d->rmask];
}

/*
 * The descent of address @i ended at the slot @p of @pn, which holds @s
 * (not an internal node): its answer, or a queued end. @whole: the root
 * has no skipped bits (else no descent is whole, and none is tested).
 */
static DESC_INLINE void desc_end(struct descent *d, const struct tnode *pn, const uintptr_t *p,
				 uintptr_t s, unsigned int i, unsigned int above, bool whole)
{
	if (whole && slot_done(s, above)) {
		d->res[i] = slot_answer(s);
		return;
	}
	d->q[d->nq++] =
		(struct desc_end){ .pn = pn, .p = p, .s = s, .i = i, .pos = above & DESC_POS };
	if (d->nq == DESC_ENDS) {
		desc_ends(d->q, d->nq, d->fb, d->key, &d->ss, d->res);
		d->nq = 0;
	}
}

/* Lane @k, at a node of @above, goes down to the internal node whose slot is @s. */
static DESC_INLINE void desc_down(struct descent *d, unsigned int k, uintptr_t s, TKEY key,
				  unsigned int above, bool whole)
{
	unsigned int pos = slot_pos(s);

	TRIE_READ(TRIE_READ_SLOT);
	/* Once skipped, above is DESC_SKIPPED or more, which no pos + bits equals. */
	d->above[k] = pos | (whole && pos + slot_bits(s) == above ? 0 : DESC_SKIPPED);
	d->pn[k] = slot_tnode(s);
	d->p[k] = &d->pn[k]->child[slot_index(s, key)];
	__builtin_prefetch(d->p[k]);
}

/*
 * Lane @k takes the next address whose descent goes on below the root;
 * those that end at the root are done on the way. Returns false when no
 * address is left.
 */
static DESC_INLINE bool desc_take(struct descent *d, unsigned int k, bool whole)
{
	while (d->next < d->n) {
		unsigned int i = d->next++;
		const uintptr_t *p = desc_root_slot(d, d->key[i]);
		uintptr_t s;

		if (d->ahead < d->n) {
			TRIE_READ(TRIE_READ_ROOT);
			__builtin_prefetch(desc_root_slot(d, d->key[d->ahead++]));
		}
		s = slot_load(p);
		if (slot_bits(s)) {
			desc_down(d, k, s, d->key[i], d->rabove, whole);
			d->li[k] = i;
			return true;
		}
		desc_end(d, d->root, p, s, i, d->rabove, whole);
	}
	return false;
}

/* The batch from the root slot @root (an internal node); @whole: it has no skipped bits. */
static DESC_INLINE void descent(uintptr_t root, const struct root_fb *fb, const TKEY *key,
				const struct fib_route **res, unsigned int n, bool whole)
{
	struct descent d;
	unsigned int nl = 0;

	d.root = slot_tnode(root);
	d.rmask = (1ul << slot_bits(root)) - 1;
	d.rpos = slot_pos(root);
	d.rabove = d.rpos | (whole ? 0 : DESC_SKIPPED);
	d.fb = fb;
	d.key = key;
	d.res = res;
	d.n = n;
	d.next = 0;
	d.ahead = 0;
	d.nq = 0;
	d.ss.root = &d.root->n;
	d.ss.fb = fb;
	d.ss.n = 0;
	for (; d.ahead < ROOT_AHEAD && d.ahead < n; d.ahead++) {
		TRIE_READ(TRIE_READ_ROOT);
		__builtin_prefetch(desc_root_slot(&d, key[d.ahead]));
	}
	while (nl < FAST_LANES && desc_take(&d, nl, whole))
		nl++;
	while (nl) {
		for (unsigned int k = 0; k < nl;) {
			uintptr_t s = slot_load(d.p[k]);

			if (slot_bits(s)) {
				desc_down(&d, k, s, key[d.li[k]], d.above[k], whole);
				k++;
				continue;
			}
			/* The descent is over: its end is done or queued, the lane goes on. */
			desc_end(&d, d.pn[k], d.p[k], s, d.li[k], d.above[k], whole);
			if (desc_take(&d, k, whole)) {
				k++;
			} else {
				nl--;
				d.p[k] = d.p[nl];
				d.pn[k] = d.pn[nl];
				d.li[k] = d.li[nl];
				d.above[k] = d.above[nl];
			}
		}
	}
	desc_ends(d.q, d.nq, fb, key, &d.ss, res);
	if (d.ss.n)
		slow_flush(&d.ss, key, res);
}

/*
 * descent() made twice, so that each tests only what it needs: a root
 * with skipped bits (IPv6's on the full view, whose routes all lie in
 * 2000::/3) has no whole descent below it, and every end is queued.
 */
static void descent_whole(uintptr_t root, const struct root_fb *fb, const TKEY *key,
			  const struct fib_route **res, unsigned int n)
{
	descent(root, fb, key, res, n, true);
}

static void descent_skipped(uintptr_t root, const struct root_fb *fb, const TKEY *key,
			    const struct fib_route **res, unsigned int n)
{
	descent(root, fb, key, res, n, false);
}

void TN(lookup_batch_rcu)(const struct TRIE *t, const TKEY *key, const struct fib_route **res,
			  unsigned int n)
{
	uintptr_t root = slot_load(&t->root);

	/*
	 * A counter read on the lookup's fast path: the relaxed built-in, as
	 * uatomic_read()'s volatile load makes GCC lay out the branches anew.
	 */
	if (slot_bits(root) &&
	    __atomic_load_n(&t->nr_leaves, __ATOMIC_RELAXED) >= trie_batch_min_leaves) {
		if (slot_pos(root) + slot_bits(root) == KEYLEN)
			descent_whole(root, fb_reader(t), key, res, n);
		else
			descent_skipped(root, fb_reader(t), key, res, n);
		return;
	}
	for (unsigned int i = 0; i < n; i++)
		res[i] = TN(lookup_rcu)(t, key[i]);
}

const struct fib_route *TN(find_rcu)(const struct TRIE *t, TKEY key, unsigned int plen,
				     unsigned int *nr)
{
	uintptr_t s = slot_load(&t->root);
	const struct tnode *tn = NULL;
	unsigned long i = 0;
	const struct leaf *l;
	unsigned int lo, hi;
	struct lview v;

	while (slot_bits(s)) {
		TKEY index;

		tn = node_tnode(slot_node(s));
		index = get_cindex(key, &tn->n);
		if (index >> tn->n.bits)
			return NULL;
		i = (unsigned long)index;
		s = slot_load(&tn->child[i]);
	}
	if (plen > KEYLEN || !s || ((s & SLOT_ROUTE) && !slot_pos(s)))
		return NULL;
	if (slot_inline(s)) {
		if (inline_key(tn, i) != key || inline_plen(s) != plen)
			return NULL;
		*nr = 1;
		return slot_route(s);
	}
	l = node_leaf(slot_node(s));
	if (l->n.key != key)
		return NULL;
	v = (struct lview){ .key = key, .nr = l->n.nr, .r = l->r };
	leaf_run(&v, plen, &lo, &hi);
	if (lo == hi)
		return NULL;
	*nr = hi - lo;
	return &l->r[lo];
}

/* Reader: whether the slot @s holds a leaf (of its own, or inline). */
static inline bool slot_leaf(uintptr_t s)
{
	return s && !slot_bits(s) && (!(s & SLOT_ROUTE) || slot_pos(s));
}

int TN(next_rcu)(const struct TRIE *t, TKEY from, TKEY *key, const struct fib_route **routes,
		 unsigned int *nr)
{
	struct {
		const struct tnode *tn;
		unsigned long i; /* next child to visit */
	} st[KEYLEN + 1];
	int sp = 0;
	uintptr_t s = slot_load(&t->root);
	const struct tnode *tn = NULL; /* the node whose child s is, at index i */
	unsigned long i = 0;

	/* Descend toward @from, stacking the larger siblings still to visit. */
	while (s) {
		const struct node *n;
		TKEY index;

		if (!slot_bits(s)) {
			if (slot_leaf(s) &&
			    (slot_inline(s) ? inline_key(tn, i) : slot_node(s)->key) >= from)
				goto found;
			break;
		}
		n = slot_node(s);
		index = get_cindex(from, n);
		if (index >> n->bits) {
			/* @from is outside n: all of n is above it, or all below. */
			if (n->key > from) {
				st[sp].tn = node_tnode(n);
				st[sp++].i = 0;
			}
			break;
		}
		st[sp].tn = node_tnode(n);
		st[sp++].i = (unsigned long)index + 1;
		tn = node_tnode(n);
		i = (unsigned long)index;
		s = slot_load(&tn->child[i]);
	}
	/* The first leaf in what is left, in order. */
	while (sp > 0) {
		tn = st[sp - 1].tn;
		if (st[sp - 1].i >= child_length(&tn->n)) {
			sp--;
			continue;
		}
		i = st[sp - 1].i++;
		s = slot_load(&tn->child[i]);
		if (slot_leaf(s))
			goto found;
		if (!slot_bits(s))
			continue;
		st[sp].tn = node_tnode(slot_node(s));
		st[sp++].i = 0;
	}
	return -ENOENT;
found:
	if (slot_inline(s)) {
		*key = inline_key(tn, i);
		*routes = slot_route(s);
		*nr = 1;
	} else {
		*key = slot_node(s)->key;
		*routes = node_leaf(slot_node(s))->r;
		*nr = slot_node(s)->nr;
	}
	return 0;
}

/* --------------------------------------------------- life and statistics */

struct TRIE *TN(new)(struct mem *m, struct reclaim *rc)
{
	struct TRIE *t = mem_alloc(m, MEM_TABLE, sizeof(*t));

	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	t->mem = m;
	t->rc = rc;
	t->inflate_root = INFLATE_THRESHOLD_ROOT;
	t->halve_root = HALVE_THRESHOLD_ROOT;
	return t;
}

/* Frees the nodes and leaves under @n; inline leaves' routes go with the shared table. */
static void node_free_tree(struct TRIE *t, struct node *n)
{
	if (!n)
		return;
	if (!node_is_leaf(n)) {
		for (unsigned long i = 0; i < child_length(n); i++)
			node_free_tree(t, child_get(node_tnode(n), i));
	}
	node_free_unpublished(t, n);
}

void TN(destroy)(struct TRIE *t)
{
	if (!t)
		return;
	node_free_tree(t, slot_node(t->root));
	shared_destroy(t);
	if (t->fb)
		mem_free(t->mem, MEM_FALLBACK, t->fb, fb_bytes(t->fb));
	mem_free(t->mem, MEM_TABLE, t, sizeof(*t));
}

uint64_t TN(routes)(const struct TRIE *t)
{
	return uatomic_read(&t->nr_routes);
}

/* trie_stats of an inline leaf (its bytes are the shared routes', counted once). */
static void stats_inline(unsigned int depth, struct trie_stats *st)
{
	st->leaves++;
	st->routes++;
	st->prefixes++;
	st->inline_leaves++;
	st->total_depth += depth;
	if (depth > st->max_depth)
		st->max_depth = depth;
}

static void stats_walk(const struct node *n, unsigned int depth, struct trie_stats *st)
{
	if (node_is_leaf(n)) {
		const struct leaf *l = node_leaf(n);

		st->leaves++;
		st->routes += l->n.nr;
		for (unsigned int i = 0; i < l->n.nr; i++)
			st->prefixes += i == 0 || l->r[i].plen != l->r[i - 1].plen;
		st->leaf_bytes += leaf_size(l->n.nr);
		st->total_depth += depth;
		if (depth > st->max_depth)
			st->max_depth = depth;
		return;
	}
	st->tnodes++;
	st->nodes_by_bits[n->bits]++;
	st->pointers += child_length(n);
	st->tnode_bytes += tnode_size(n->bits);
	for (unsigned long i = 0; i < child_length(n); i++) {
		uintptr_t s = slot_load(&node_tnode(n)->child[i]);

		if (slot_inline(s)) {
			stats_inline(depth + 1, st);
		} else if (slot_node(s)) {
			stats_walk(slot_node(s), depth + 1, st);
		} else {
			st->null_pointers++;
			st->answers += s != 0;
		}
	}
}

void TN(get_stats)(const struct TRIE *t, struct trie_stats *st)
{
	const struct node *root = slot_node(slot_load(&t->root));
	const struct root_fb *fb;

	memset(st, 0, sizeof(*st));
	if (root)
		stats_walk(root, 1, st);
	st->shared_routes = uatomic_read(&t->nr_shared);
	st->leaf_bytes += st->shared_routes * sizeof(struct fib_route);
	fb = rcu_dereference(t->fb);
	if (fb)
		st->fallback_bytes = fb_bytes(fb);
	for (unsigned long j = 0; fb && fb->in_slots && j < 1ul << fb->bits; j++) {
		uintptr_t s = slot_load(&fb->root->child[j]);

		st->root_answers += (s & SLOT_ROUTE) && !slot_pos(s);
	}
	st->split_builds = uatomic_read(&t->split_builds);
}

static int check_leaf(const struct leaf *l, struct errbuf *err)
{
	unsigned int minplen = KEYLEN;

	if (l->n.nr == 0)
		goto bad;
	for (unsigned int i = 0; i < l->n.nr; i++) {
		unsigned int plen = l->r[i].plen;

		if (key_has_host_bits(l->n.key, plen) || (i && plen > l->r[i - 1].plen))
			goto bad;
		if (plen < minplen)
			minplen = plen;
	}
	if (l->n.slen != KEYLEN - minplen)
		goto bad;
	return 0;
bad:
	err_set(err, "leaf %#llx: %u routes out of order, with host bits or wrong slen %u",
		(unsigned long long)l->n.key, l->n.nr, l->n.slen);
	return -EUCLEAN;
}

/*
 * check_node()'s reference for the answer of empty child @i of @tn (see
 * SLOT_ROUTE), found another way: exact-key finds of the child's first key
 * masked to each length, longest first, while that key stays inside tn.
 */
static const struct fib_route *check_answer(const struct TRIE *t, const struct tnode *tn,
					    unsigned long i)
{
	TKEY first = tn->n.key | (TKEY)i << tn->n.pos;

	for (unsigned int q = KEYLEN - tn->n.pos + 1; q-- > 0;) {
		TKEY key = key_mask_low(first, KEYLEN - q);
		struct lview l;

		if (key_shr(key ^ tn->n.key, tn->n.pos + tn->n.bits))
			return NULL;
		if (!leaf_exact(t, key, &l))
			continue;
		for (unsigned int r = 0; r < l.nr; r++)
			if (l.r[r].plen == q)
				return &l.r[r];
	}
	return NULL;
}

/* check_node()'s counts: leaves (inline ones too, and apart), routes, internal nodes. */
struct check_counts {
	uint64_t leaves, inline_leaves, routes, tnodes;
};

/* An inline leaf, child @i of @tn: the rule of slot_inline(), its slen copy, its shared route. */
static int check_inline(const struct TRIE *t, const struct tnode *tn, unsigned long i,
			struct errbuf *err)
{
	uintptr_t s = tn->child[i];
	unsigned int plen = inline_plen(s);
	const struct fib_route *r = slot_route(s);

	if (plen + tn->n.pos > KEYLEN || r->plen != plen || child_slen(tn)[i] != KEYLEN - plen ||
	    !shared_refs(t, r)) {
		err_set(err,
			"tnode %#llx/pos %u: inline leaf %lu /%u: too long for the node, route "
			"/%u, "
			"slen copy %u, or its route not shared",
			(unsigned long long)tn->n.key, tn->n.pos, i, plen, r->plen,
			child_slen(tn)[i]);
		return -EUCLEAN;
	}
	return 0;
}

/*
 * Whether @tn, of one child, is what a collapse without memory leaves:
 * its child an inline leaf that @parent's slot could not hold inline, so
 * the collapse needed a leaf for it (collapse()). A later resize tries again.
 */
static bool check_collapse_failed(const struct tnode *tn, const struct tnode *parent)
{
	for (unsigned long i = 0; i < child_length(&tn->n); i++) {
		uintptr_t s = slot_writer(tn->child[i]);

		if (s)
			return slot_inline(s) &&
			       !inline_fits(s, parent ? parent->n.pos : KEYLEN + 1);
	}
	return false;
}

static int check_node(const struct TRIE *t, const struct node *n, const struct tnode *parent,
		      bool deferred, struct check_counts *cnt, struct errbuf *err)
{
	const struct tnode *tn;
	unsigned long empty = 0, full = 0, used;
	unsigned int slen;

	if (node_is_leaf(n)) {
		cnt->leaves++;
		cnt->routes += n->nr;
		return check_leaf(node_leaf(n), err);
	}
	cnt->tnodes++;
	tn = node_tnode(n);
	slen = n->pos;
	if (tn->parent != parent || n->pos + n->bits > KEYLEN || n->bits > TRIE_MAX_BITS ||
	    key_mask_low(n->key, n->pos + n->bits) != n->key) {
		err_set(err, "tnode %#llx/pos %u/bits %u: wrong parent, width or key",
			(unsigned long long)n->key, n->pos, n->bits);
		return -EUCLEAN;
	}
	for (unsigned long i = 0; i < child_length(n); i++) {
		const struct node *c = child_get(tn, i);
		int ret;

		if (slot_inline(tn->child[i])) {
			ret = check_inline(t, tn, i, err);
			if (ret)
				return ret;
			cnt->leaves++;
			cnt->inline_leaves++;
			cnt->routes++;
			if (child_slen(tn)[i] > slen)
				slen = child_slen(tn)[i];
			continue;
		}
		if (!c) {
			/* Its answer, if any (the root's fallbacks in it: check_fb() checks them).
			 */
			uintptr_t want = (uintptr_t)check_answer(t, tn, i);

			want = want ? want | SLOT_ROUTE : 0;
			if (!(t->fb && t->fb->root == tn && t->fb->in_slots) &&
			    tn->child[i] != want) {
				err_set(err,
					"tnode %#llx/pos %u: empty child %lu holds %#llx, its "
					"answer "
					"is %#llx",
					(unsigned long long)n->key, n->pos, i,
					(unsigned long long)tn->child[i], (unsigned long long)want);
				return -EUCLEAN;
			}
			if (child_slen(tn)[i]) {
				err_set(err, "tnode %#llx/pos %u: empty child %lu has slen copy %u",
					(unsigned long long)n->key, n->pos, i, child_slen(tn)[i]);
				return -EUCLEAN;
			}
			empty++;
			continue;
		}
		if (get_cindex(c->key, n) != i || c->pos + c->bits > n->pos ||
		    slot_writer(tn->child[i]) != node_slot(c)) {
			err_set(err,
				"tnode %#llx/pos %u: child %lu (key %#llx) misplaced or mistagged",
				(unsigned long long)n->key, n->pos, i, (unsigned long long)c->key);
			return -EUCLEAN;
		}
		if (child_slen(tn)[i] != c->slen) {
			err_set(err, "tnode %#llx/pos %u: child %lu has slen %u, its copy says %u",
				(unsigned long long)n->key, n->pos, i, c->slen, child_slen(tn)[i]);
			return -EUCLEAN;
		}
		full += tnode_full(tn, c);
		if (c->slen > slen)
			slen = c->slen;
		ret = check_node(t, c, tn, deferred, cnt, err);
		if (ret)
			return ret;
	}
	used = child_length(n) - empty;
	if (empty != tn->empty_children || full != tn->full_children || slen != n->slen ||
	    (used < 2 && !deferred && !check_collapse_failed(tn, parent))) {
		err_set(err,
			"tnode %#llx/pos %u/bits %u: counts empty %u (is %lu) full %u (is %lu), "
			"slen %u (is %u), %lu children",
			(unsigned long long)n->key, n->pos, n->bits, tn->empty_children, empty,
			tn->full_children, full, n->slen, slen, used);
		return -EUCLEAN;
	}
	return 0;
}

/* check_fb()'s reference: a prefix a fallback can name, and where it starts among the root's
 * children. */
struct fb_ref {
	unsigned long start;
	const struct fib_route *r;
};

struct fb_refs {
	struct fb_ref *v;
	size_t n, cap;
};

static int fb_ref_cmp(const void *a, const void *b)
{
	unsigned int pa = ((const struct fb_ref *)a)->r->plen,
		     pb = ((const struct fb_ref *)b)->r->plen;

	return pa < pb ? -1 : pa > pb;
}

/* Collects, from every leaf below @n, the first route of each prefix no longer than @root's index.
 */
static int fb_refs_collect(uintptr_t s, TKEY key, const struct tnode *root, struct fb_refs *refs)
{
	struct lview l;

	if (slot_bits(s)) {
		const struct tnode *tn = node_tnode(slot_node(s));

		for (unsigned long i = 0; i < child_length(&tn->n); i++)
			if (fb_refs_collect(slot_writer(tn->child[i]), inline_key(tn, i), root,
					    refs))
				return -ENOMEM;
		return 0;
	}
	if (!lv_set(&l, s, key))
		return 0;
	for (unsigned int i = 0; i < l.nr; i++) {
		const struct fib_route *r = &l.r[i];

		if (r->plen + root->n.pos > KEYLEN || (i && r[-1].plen == r->plen))
			continue;
		if (refs->n == refs->cap) {
			size_t cap = refs->cap ? 2 * refs->cap : 256;
			struct fb_ref *v = realloc(refs->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			refs->v = v;
			refs->cap = cap;
		}
		refs->v[refs->n++] = (struct fb_ref){ .start = get_index(l.key, &root->n), .r = r };
	}
	return 0;
}

/*
 * The fallbacks against their definition, computed another way: every
 * prefix they can name, from a walk of the whole trie, painted over the
 * children it covers, shorter prefixes first, so each child ends with the
 * longest that covers it.
 */
static int check_fb(const struct TRIE *t, struct errbuf *err)
{
	const struct node *rn = slot_node(t->root);
	const struct root_fb *fb = t->fb;
	struct fb_refs refs = { 0 };
	const struct fib_route **want;
	unsigned long len;
	int ret = 0;

	if (!fb) {
		if (rn && !node_is_leaf(rn) && !t->deferred && !t->fb_stale) {
			err_set(err, "root %#llx/bits %u: no fallbacks",
				(unsigned long long)rn->key, rn->bits);
			return -EUCLEAN;
		}
		return 0;
	}
	if (t->deferred || &fb->root->n != rn || fb->bits != rn->bits || fb->key != rn->key ||
	    fb->pos != rn->pos) {
		err_set(err, "fallbacks for root %p/bits %u, the root is %p%s",
			(const void *)fb->root, fb->bits, (const void *)rn,
			t->deferred ? " (bulk mode)" : "");
		return -EUCLEAN;
	}
	if (fb->routes != fb_keeps_routes(fb->in_slots, fb->bits)) {
		err_set(err, "root %#llx/bits %u: fallback entries %s", (unsigned long long)rn->key,
			rn->bits, fb->routes ? "kept" : "missing");
		return -EUCLEAN;
	}
	len = 1ul << rn->bits;
	want = calloc(len, sizeof(*want));
	if (!want || fb_refs_collect(t->root, 0, fb->root, &refs)) {
		err_set(err, "checking the fallbacks: out of memory");
		ret = -ENOMEM;
		goto out;
	}
	if (refs.n)
		qsort(refs.v, refs.n, sizeof(refs.v[0]), fb_ref_cmp);
	for (size_t k = 0; k < refs.n; k++) {
		unsigned long end = refs.v[k].start + fb_span(fb->root, refs.v[k].r->plen);

		for (unsigned long j = refs.v[k].start; j < end; j++)
			want[j] = refs.v[k].r;
	}
	for (unsigned long j = 0; j < len; j++) {
		uintptr_t s = fb->root->child[j];

		if (fb->routes && fb->route[j] != (uintptr_t)want[j]) {
			err_set(err, "root %#llx/pos %u: fallback %lu is %#llx, should be %#llx",
				(unsigned long long)rn->key, rn->pos, j,
				(unsigned long long)fb->route[j],
				(unsigned long long)(uintptr_t)want[j]);
			ret = -EUCLEAN;
			break;
		}
		/* Where the root has no skipped bit, an empty child's slot holds its fallback. */
		if (fb->in_slots != (rn->pos + rn->bits == KEYLEN) ||
		    (fb->in_slots && !slot_writer(s) && s != ((uintptr_t)want[j] | SLOT_ROUTE))) {
			err_set(err,
				"root %#llx/pos %u: empty slot %lu holds %#llx, fallback %#llx",
				(unsigned long long)rn->key, rn->pos, j, (unsigned long long)s,
				(unsigned long long)(uintptr_t)want[j]);
			ret = -EUCLEAN;
			break;
		}
	}
out:
	free(refs.v);
	free(want);
	return ret;
}

/* The shared routes against the inline leaves counted (@inline_leaves): every one in use, no more.
 */
static int check_shared(const struct TRIE *t, uint64_t inline_leaves, struct errbuf *err)
{
	const struct shared *sh = &t->shared;
	uint64_t refs = 0, n = 0;

	for (size_t i = 0; i < sh->cap; i++) {
		if (!sh->v[i].r)
			continue;
		n++;
		refs += sh->v[i].refs;
		if (!sh->v[i].refs || shared_slot(sh, sh->v[i].r) != &sh->v[i]) {
			err_set(err, "shared route %zu: %llu leaves, or not where its value leads",
				i, (unsigned long long)sh->v[i].refs);
			return -EUCLEAN;
		}
	}
	if (refs != inline_leaves || refs != sh->refs || n != sh->n || n != t->nr_shared) {
		err_set(err,
			"shared routes: %llu (counted %zu), held by %llu inline leaves (is %llu)",
			(unsigned long long)n, sh->n, (unsigned long long)refs,
			(unsigned long long)inline_leaves);
		return -EUCLEAN;
	}
	return 0;
}

int TN(check)(const struct TRIE *t, struct errbuf *err)
{
	struct check_counts cnt = { 0 };
	int ret = 0;

	if (t->root && t->root != node_slot(slot_node(t->root))) {
		err_set(err, "root slot %#llx: its tag is not the root's pos and bits",
			(unsigned long long)t->root);
		return -EUCLEAN;
	}
	if (t->root)
		ret = check_node(t, slot_node(t->root), NULL, t->deferred, &cnt, err);
	if (!ret)
		ret = check_shared(t, cnt.inline_leaves, err);
	if (ret)
		return ret;
	if (cnt.leaves != t->nr_leaves || cnt.routes != t->nr_routes ||
	    cnt.tnodes != t->nr_tnodes) {
		err_set(err,
			"counts: leaves %llu (is %llu), routes %llu (is %llu), tnodes %llu (is "
			"%llu)",
			(unsigned long long)t->nr_leaves, (unsigned long long)cnt.leaves,
			(unsigned long long)t->nr_routes, (unsigned long long)cnt.routes,
			(unsigned long long)t->nr_tnodes, (unsigned long long)cnt.tnodes);
		return -EUCLEAN;
	}
	return check_fb(t, err);
}

/* A leaf of @key with the routes @r[@nr] at @depth (@how: "", or " (inline)"). */
static void dump_leaf(TKEY key, const struct fib_route *r, unsigned int nr, const char *how,
		      unsigned int depth, FILE *f)
{
	char buf[64];

	key_format(key, buf, sizeof(buf));
	fprintf(f, "%*s|-- %s%s\n", (int)depth * 3, "", buf, how);
	for (unsigned int i = 0; i < nr; i++)
		fprintf(f, "%*s/%u type %u proto %u metric %u\n", (int)depth * 3 + 7, "", r[i].plen,
			r[i].type, r[i].proto, r[i].metric);
}

static void dump_node(const struct node *n, unsigned int depth, FILE *f)
{
	char key[64];

	if (node_is_leaf(n)) {
		dump_leaf(n->key, node_leaf(n)->r, n->nr, "", depth, f);
		return;
	}
	key_format(n->key, key, sizeof(key));
	fprintf(f, "%*s+-- %s/%u %u %u %u\n", (int)depth * 3, "", key, KEYLEN - n->pos - n->bits,
		n->bits, node_tnode(n)->full_children, node_tnode(n)->empty_children);
	for (unsigned long i = 0; i < child_length(n); i++) {
		uintptr_t s = slot_load(&node_tnode(n)->child[i]);

		if (slot_inline(s))
			dump_leaf(inline_key(node_tnode(n), i), slot_route(s), 1, " (inline)",
				  depth + 1, f);
		else if (slot_node(s))
			dump_node(slot_node(s), depth + 1, f);
	}
}

void TN(dump)(const struct TRIE *t, FILE *f)
{
	const struct node *root = slot_node(slot_load(&t->root));

	if (root)
		dump_node(root, 0, f);
}
