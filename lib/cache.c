// SPDX-License-Identifier: MIT
/*
 * The destination cache: see lib/cache.h for the design and the
 * invalidation protocol. The LRU follows kernel/bpf/bpf_lru_list.c: lists
 * of element indexes (active, inactive, free; per thread in common mode a
 * local free and a pending list), a ref bit that a hit sets and rotation
 * clears, the inactive list rotated nr_scans elements at a time.
 *
 * Lock order: a thread's local lists, then the LRU, then a hash bucket.
 * No code holds two local lists' locks.
 */
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/uatomic.h>

#include "lib/cache.h"
#include "lib/cache-int.h"
#include "lib/err.h"

#define CACHE_HUGE_PAGE (2u << 20)

/* List types: the LRU's, then a thread's local lists (common mode). */
enum {
	CACHE_T_ACTIVE,
	CACHE_T_INACTIVE,
	CACHE_T_FREE,
	CACHE_T_LFREE,
	CACHE_T_LPENDING,
	CACHE_T_NONE,
};

struct cache_lru {
	uint32_t lock;
	uint32_t head[3]; /* sentinels: active, inactive, free */
	uint32_t count[3];
	uint32_t next_inactive_rotation;
} __attribute__((aligned(64)));

struct cache_loc {
	uint32_t lock;
	uint32_t head[2];  /* sentinels: local free, pending */
	uint32_t is_empty; /* the local free list is empty; read without the lock */
	uint32_t next_steal;
} __attribute__((aligned(64)));

/* ------------------------------------------------------------ spinlocks */

/* Test and test-and-set; yields after a while, as threads may outnumber cores. */
static void cache_lock(uint32_t *l)
{
	unsigned int spins = 0;

	for (;;) {
		if (!CACHE_LOAD(*l) && !__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
			return;
		if (++spins % 64 == 0)
			sched_yield();
		else
			__builtin_ia32_pause();
	}
}

static void cache_unlock(uint32_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------ generations */

struct cache_gens *cache_gens_new(int family)
{
	struct cache_gens *g = aligned_alloc(64, sizeof(*g));

	if (!g) {
		errno = ENOMEM;
		return NULL;
	}
	memset(g, 0, sizeof(*g));
	g->family = (uint32_t)family;
	return g;
}

void cache_gens_free(struct cache_gens *g)
{
	free(g);
}

static void cache_gens_bump(struct cache_gens *g, uint32_t slot)
{
	CACHE_STORE_REL(g->slot[slot], g->slot[slot] + 1);
}

void cache_gens_begin(struct cache_gens *g, const struct addr_prefix *p)
{
	/* The slots hash the first 24 (IPv4) or 32 (IPv6) bits. */
	unsigned int kbits = g ? (g->family == AF_INET6 ? 32 : 24) : 0;
	uint32_t top, span;

	if (!g)
		return;
	CACHE_STORE(g->seq, g->seq + 1);
	/* Odd before any slot moves: a fill that reads a new slot sees the edit. */
	CACHE_FENCE_REL();
	top = g->family == AF_INET6 ? (uint32_t)(addr_key6(&p->a) >> 96) : addr_key4(&p->a) >> 8;
	if (p->plen >= kbits) {
		cache_gens_bump(g, cache_gen_slot(top));
		CACHE_STORE(g->bumps, g->bumps + 1);
		return;
	}
	span = kbits - p->plen >= CACHE_GEN_BITS ? CACHE_GEN_SLOTS : 1u << (kbits - p->plen);
	if (span >= CACHE_GEN_SLOTS) {
		/* A short prefix: every slot (a few thousand stores; rare). */
		for (uint32_t s = 0; s < CACHE_GEN_SLOTS; s++)
			cache_gens_bump(g, s);
	} else {
		for (uint32_t i = 0; i < span; i++)
			cache_gens_bump(g, cache_gen_slot(top | i));
	}
	CACHE_STORE(g->bumps, g->bumps + span);
}

void cache_gens_end(struct cache_gens *g)
{
	if (g)
		CACHE_STORE_REL(g->seq, g->seq + 1);
}

/* ------------------------------------------------------------ index lists */

static struct cache_link *cache_link(struct cache *c, uint32_t i)
{
	return i < c->n ? &c->nodes[i].l : &c->heads[i - c->n];
}

static void cache_list_init(struct cache *c, uint32_t head)
{
	struct cache_link *h = cache_link(c, head);

	h->prev = h->next = head;
}

static bool cache_list_empty(struct cache *c, uint32_t head)
{
	return cache_link(c, head)->next == head;
}

static void cache_list_del(struct cache *c, uint32_t i)
{
	struct cache_link *l = cache_link(c, i);

	cache_link(c, l->prev)->next = l->next;
	cache_link(c, l->next)->prev = l->prev;
	l->prev = l->next = i;
}

static void cache_list_add(struct cache *c, uint32_t head, uint32_t i)
{
	struct cache_link *h = cache_link(c, head), *l = cache_link(c, i);

	l->next = h->next;
	l->prev = head;
	cache_link(c, h->next)->prev = i;
	h->next = i;
}

/* The oldest element (the tail), or @head when empty. */
static uint32_t cache_list_tail(struct cache *c, uint32_t head)
{
	return cache_link(c, head)->prev;
}

/* -------------------------------------------------------------- the hash */

static struct cache_bucket *cache_bucket(struct cache *c, uint32_t hash)
{
	return &c->buckets[hash & c->bucket_mask];
}

/* With the bucket locked: where the chain points at @i (or at @k's element). */
static uint32_t *cache_chain_find(struct cache *c, struct cache_bucket *b, uint32_t i)
{
	uint32_t *pp = &b->first;

	while (!(*pp & CACHE_NULLS)) {
		if (*pp == i)
			return pp;
		pp = &c->elems[*pp].next;
	}
	return NULL;
}

static struct cache_elem *cache_chain_key(struct cache *c, struct cache_bucket *b, uint64_t k0,
					  uint64_t k1)
{
	for (uint32_t i = b->first; !(i & CACHE_NULLS); i = c->elems[i].next) {
		struct cache_elem *e = &c->elems[i];

		if (e->key[0] == k0 && e->key[1] == k1)
			return e;
	}
	return NULL;
}

/*
 * Takes element @i out of the hash, to be reused (the kernel's
 * del_from_htab); false when it is not in it (being filled). Its seqcount
 * goes odd, so a reader on it sees a miss.
 */
static bool cache_del_from_hash(struct cache *c, struct cache_thread *t, uint32_t i)
{
	struct cache_elem *e = &c->elems[i];
	struct cache_bucket *b = cache_bucket(c, CACHE_LOAD(c->nodes[i].hash));
	uint32_t *pp;

	cache_lock(&b->lock);
	pp = cache_chain_find(c, b, i);
	if (pp) {
		CACHE_STORE(*pp, e->next);
		CACHE_STORE(e->seq, e->seq + 1);
	}
	cache_unlock(&b->lock);
	if (pp)
		CACHE_INC(t->st.evictions);
	return pp != NULL;
}

/* Writes the answer into an element that readers may be reading. */
static void cache_elem_write(struct cache_elem *e, const uint64_t v[2], int found, uint32_t gen)
{
	/* After the odd seqcount, before the data: a reader that sees new data sees odd. */
	CACHE_FENCE_REL();
	CACHE_STORE(e->val[0], v[0]);
	CACHE_STORE(e->val[1], v[1]);
	CACHE_STORE(e->found, (uint8_t)found);
	CACHE_STORE(e->gen, gen);
}

/* Refreshes element @e in place (its key is in the hash). Bucket locked. */
static void cache_elem_rewrite(struct cache_elem *e, const uint64_t v[2], int found, uint32_t gen)
{
	uint32_t s = e->seq;

	CACHE_STORE(e->seq, s + 1);
	cache_elem_write(e, v, found, gen);
	CACHE_STORE_REL(e->seq, s + 2);
}

/* ----------------------------------------------------------------- LRU */

static bool cache_lru_type(uint8_t type)
{
	return type <= CACHE_T_FREE;
}

/* Moves @i to the head of @l's list @tgt, clearing its ref (bpf_lru's __bpf_lru_node_move). */
static void cache_lru_move(struct cache *c, struct cache_lru *l, uint32_t i, uint8_t tgt)
{
	struct cache_node *e = &c->nodes[i];

	if (cache_lru_type(e->type))
		l->count[e->type]--;
	if (i == l->next_inactive_rotation)
		l->next_inactive_rotation = e->l.prev;
	cache_list_del(c, i);
	CACHE_STORE(e->ref, 0);
	e->type = tgt;
	cache_list_add(c, l->head[tgt], i);
	l->count[tgt]++;
}

/* Moves @i from @l to another list (a local free list), not counted in @l. */
static void cache_lru_move_out(struct cache *c, struct cache_lru *l, uint32_t i, uint32_t head,
			       uint8_t tgt)
{
	struct cache_node *e = &c->nodes[i];

	if (cache_lru_type(e->type))
		l->count[e->type]--;
	if (i == l->next_inactive_rotation)
		l->next_inactive_rotation = e->l.prev;
	cache_list_del(c, i);
	CACHE_STORE(e->ref, 0);
	e->type = tgt;
	cache_list_add(c, head, i);
}

/* The oldest nr_scans of the active list: referenced ones stay (ref cleared), others go inactive.
 */
static void cache_rotate_active(struct cache *c, struct cache_lru *l)
{
	uint32_t head = l->head[CACHE_T_ACTIVE];
	uint32_t first = cache_link(c, head)->next;
	uint32_t i = cache_list_tail(c, head);

	for (unsigned int n = 0; i != head;) {
		uint32_t prev = c->nodes[i].l.prev;
		bool last = i == first;

		cache_lru_move(c, l, i,
			       CACHE_LOAD(c->nodes[i].ref) ? CACHE_T_ACTIVE : CACHE_T_INACTIVE);
		if (++n == c->cfg.nr_scans || last)
			break;
		i = prev;
	}
}

/*
 * nr_scans of the inactive list from where the last rotation stopped:
 * referenced ones go active. The list is not reordered otherwise, so the
 * next eviction still starts at the oldest.
 */
static void cache_rotate_inactive(struct cache *c, struct cache_lru *l)
{
	uint32_t head = l->head[CACHE_T_INACTIVE];
	uint32_t cur = l->next_inactive_rotation, last, next = head;

	if (cache_list_empty(c, head))
		return;
	last = cache_link(c, cur)->next;
	if (last == head)
		last = cache_link(c, last)->next;
	for (unsigned int n = 0; n < c->cfg.nr_scans;) {
		if (cur == head) {
			cur = cache_link(c, cur)->prev;
			continue;
		}
		next = c->nodes[cur].l.prev;
		if (CACHE_LOAD(c->nodes[cur].ref))
			cache_lru_move(c, l, cur, CACHE_T_ACTIVE);
		if (cur == last)
			break;
		cur = next;
		n++;
	}
	l->next_inactive_rotation = next;
}

static void cache_rotate(struct cache *c, struct cache_thread *t, struct cache_lru *l)
{
	if (l->count[CACHE_T_INACTIVE] < l->count[CACHE_T_ACTIVE])
		cache_rotate_active(c, l);
	cache_rotate_inactive(c, l);
	CACHE_INC(t->st.rotations);
}

/*
 * Evicts up to @want unreferenced elements from the oldest nr_scans of the
 * inactive list into list @head (type @tgt); if none, forces one out of
 * the inactive (else active) list ignoring ref. Returns how many.
 */
static unsigned int cache_shrink(struct cache *c, struct cache_thread *t, struct cache_lru *l,
				 unsigned int want, uint32_t head, uint8_t tgt)
{
	uint32_t ih = l->head[CACHE_T_INACTIVE];
	uint32_t i = cache_list_tail(c, ih), force;
	unsigned int done = 0;

	for (unsigned int n = 0; i != ih && n < c->cfg.nr_scans; n++) {
		uint32_t prev = c->nodes[i].l.prev;

		if (CACHE_LOAD(c->nodes[i].ref)) {
			cache_lru_move(c, l, i, CACHE_T_ACTIVE);
		} else if (cache_del_from_hash(c, t, i)) {
			cache_lru_move_out(c, l, i, head, tgt);
			if (++done == want)
				break;
		}
		i = prev;
	}
	if (done)
		return done;
	force = cache_list_empty(c, ih) ? l->head[CACHE_T_ACTIVE] : ih;
	for (i = cache_list_tail(c, force); i != force; i = c->nodes[i].l.prev) {
		if (cache_del_from_hash(c, t, i)) {
			cache_lru_move_out(c, l, i, head, tgt);
			return 1;
		}
	}
	return 0;
}

/* Into @l's free list (per-thread mode, or common mode's global free list). */
static uint32_t cache_lru_pop_free(struct cache *c, struct cache_lru *l)
{
	uint32_t fh = l->head[CACHE_T_FREE];
	uint32_t i = cache_link(c, fh)->next;

	return i == fh ? UINT32_MAX : i;
}

/* ------------------------------------------------------- per-thread mode */

/* The kernel's bpf_percpu_lru_pop_free: rotate, take a free one, else shrink. */
static uint32_t cache_pt_pop_free(struct cache *c, struct cache_thread *t)
{
	struct cache_lru *l = &c->lru[t->idx];
	uint32_t i;

	cache_lock(&l->lock);
	cache_rotate(c, t, l);
	i = cache_lru_pop_free(c, l);
	if (i == UINT32_MAX &&
	    cache_shrink(c, t, l, CACHE_MIN_PER_THREAD, l->head[CACHE_T_FREE], CACHE_T_FREE))
		i = cache_lru_pop_free(c, l);
	if (i != UINT32_MAX)
		cache_lru_move(c, l, i, CACHE_T_INACTIVE);
	cache_unlock(&l->lock);
	return i;
}

static void cache_pt_push_free(struct cache *c, struct cache_thread *t, uint32_t i)
{
	struct cache_lru *l = &c->lru[t->idx];

	cache_lock(&l->lock);
	cache_lru_move(c, l, i, CACHE_T_FREE);
	cache_unlock(&l->lock);
}

/* ------------------------------------------------------------ common mode */

static void cache_loc_update_empty(struct cache *c, struct cache_loc *loc)
{
	CACHE_STORE(loc->is_empty,
		    cache_list_empty(c, loc->head[0]) && cache_list_empty(c, loc->head[1]));
}

static uint32_t cache_loc_pop_free(struct cache *c, struct cache_loc *loc)
{
	uint32_t i = cache_link(c, loc->head[0])->next;

	if (i == loc->head[0])
		return UINT32_MAX;
	cache_list_del(c, i);
	return i;
}

/* A pending element of @loc taken out of the hash: unreferenced first, then any. */
static uint32_t cache_loc_pop_pending(struct cache *c, struct cache_thread *t,
				      struct cache_loc *loc)
{
	uint32_t ph = loc->head[1];

	for (int force = 0; force < 2; force++) {
		for (uint32_t i = cache_list_tail(c, ph); i != ph; i = c->nodes[i].l.prev) {
			if ((force || !CACHE_LOAD(c->nodes[i].ref)) &&
			    cache_del_from_hash(c, t, i)) {
				cache_list_del(c, i);
				return i;
			}
		}
	}
	return UINT32_MAX;
}

static void cache_loc_add_pending(struct cache *c, struct cache_loc *loc, uint32_t i,
				  unsigned int owner)
{
	struct cache_node *e = &c->nodes[i];

	e->type = CACHE_T_LPENDING;
	e->owner = (uint16_t)owner;
	CACHE_STORE(e->ref, 0);
	cache_list_add(c, loc->head[1], i);
}

/*
 * The kernel's bpf_lru_list_pop_free_to_local: under the LRU's lock, the
 * thread's pending elements join the LRU (active if referenced), the LRU
 * rotates, and up to target_free free elements (evicted ones when there
 * are none) move to the thread's local free list. Local list locked.
 */
static void cache_loc_refill(struct cache *c, struct cache_thread *t, struct cache_loc *loc)
{
	struct cache_lru *l = c->lru;
	uint32_t ph = loc->head[1], i;
	unsigned int nfree = 0;

	cache_lock(&l->lock);
	while ((i = cache_list_tail(c, ph)) != ph) {
		struct cache_node *e = &c->nodes[i];
		uint8_t tgt = CACHE_LOAD(e->ref) ? CACHE_T_ACTIVE : CACHE_T_INACTIVE;

		cache_list_del(c, i);
		CACHE_STORE(e->ref, 0);
		e->type = tgt;
		cache_list_add(c, l->head[tgt], i);
		l->count[tgt]++;
	}
	cache_rotate(c, t, l);
	while (nfree < c->target_free && (i = cache_lru_pop_free(c, l)) != UINT32_MAX) {
		cache_lru_move_out(c, l, i, loc->head[0], CACHE_T_LFREE);
		nfree++;
	}
	if (nfree < c->target_free)
		cache_shrink(c, t, l, c->target_free - nfree, loc->head[0], CACHE_T_LFREE);
	cache_unlock(&l->lock);
}

/* One pass over the other threads' local free lists (percpu_freelist's pop): no eviction. */
static uint32_t cache_steal_free(struct cache *c, struct cache_thread *t)
{
	unsigned int nt = c->cfg.threads;
	bool skip = !(c->cfg.flags & CACHE_F_NO_EMPTY_SKIP);

	for (unsigned int k = 1; k < nt; k++) {
		struct cache_loc *o = &c->loc[(t->idx + k) % nt];
		uint32_t i;

		if (skip && CACHE_LOAD(o->is_empty)) {
			CACHE_INC(t->st.steal_skips);
			continue;
		}
		CACHE_INC(t->st.steal_locks);
		cache_lock(&o->lock);
		i = cache_loc_pop_free(c, o);
		cache_loc_update_empty(c, o);
		cache_unlock(&o->lock);
		if (i != UINT32_MAX)
			return i;
	}
	return UINT32_MAX;
}

/* Last resort: evict a pending element of another thread (the kernel's steal). */
static uint32_t cache_steal_pending(struct cache *c, struct cache_thread *t)
{
	unsigned int nt = c->cfg.threads;
	struct cache_loc *me = &c->loc[t->idx];
	unsigned int first = me->next_steal % nt, s = first;
	uint32_t i = UINT32_MAX;

	do {
		struct cache_loc *o = &c->loc[s];

		CACHE_INC(t->st.steal_locks);
		cache_lock(&o->lock);
		i = cache_loc_pop_free(c, o);
		if (i == UINT32_MAX)
			i = cache_loc_pop_pending(c, t, o);
		cache_loc_update_empty(c, o);
		cache_unlock(&o->lock);
		s = (s + 1) % nt;
	} while (i == UINT32_MAX && s != first);
	me->next_steal = s;
	return i;
}

static uint32_t cache_common_pop_free(struct cache *c, struct cache_thread *t)
{
	struct cache_loc *loc = &c->loc[t->idx];
	uint32_t i;

	cache_lock(&loc->lock);
	i = cache_loc_pop_free(c, loc);
	cache_unlock(&loc->lock);
	if (i == UINT32_MAX && c->cfg.threads > 1)
		i = cache_steal_free(c, t);
	cache_lock(&loc->lock);
	if (i == UINT32_MAX) {
		cache_loc_refill(c, t, loc);
		i = cache_loc_pop_free(c, loc);
	}
	if (i != UINT32_MAX)
		cache_loc_add_pending(c, loc, i, t->idx);
	cache_loc_update_empty(c, loc);
	cache_unlock(&loc->lock);
	if (i != UINT32_MAX)
		return i;
	i = cache_steal_pending(c, t);
	if (i != UINT32_MAX) {
		cache_lock(&loc->lock);
		cache_loc_add_pending(c, loc, i, t->idx);
		cache_loc_update_empty(c, loc);
		cache_unlock(&loc->lock);
	}
	return i;
}

/* An element popped by this thread that it did not use: back to its own free list. */
static void cache_common_push_free(struct cache *c, struct cache_thread *t, uint32_t i)
{
	struct cache_loc *loc = &c->loc[t->idx];
	struct cache_node *e = &c->nodes[i];

	cache_lock(&loc->lock);
	if (e->type == CACHE_T_LPENDING && e->owner == t->idx) {
		cache_list_del(c, i);
		e->type = CACHE_T_LFREE;
		cache_list_add(c, loc->head[0], i);
		cache_loc_update_empty(c, loc);
		cache_unlock(&loc->lock);
		return;
	}
	cache_unlock(&loc->lock);
	/* Joined the LRU since (a refill flushed it): free it there. */
	cache_lock(&c->lru->lock);
	cache_lru_move(c, c->lru, i, CACHE_T_FREE);
	cache_unlock(&c->lru->lock);
}

/* ---------------------------------------------------------------- fills */

/*
 * Second-miss admission (CACHE_F_ADMIT_SECOND): whether a key of hash @h,
 * not in the cache, is stored now; if not, it is remembered.
 */
static bool cache_door_admit(struct cache_thread *t, uint32_t h)
{
	/* Other bits of the hash than the bucket's low ones. */
	uint32_t b = ((h >> 16) | (h << 16)) & t->door_mask;
	uint64_t *w = &t->door[b / 64], bit = 1ull << (b % 64);

	if (*w & bit)
		return true;
	if (!t->door_left--) {
		memset(t->door, 0, ((size_t)t->door_mask + 1) / 8);
		t->door_left = (t->door_mask + 1) / 8;
	}
	*w |= bit;
	return false;
}

/*
 * Stores an answer for key (@k0, @k1). @absent: the reader's probe walked
 * the whole chain without meeting the key, so it is not looked for before
 * an element is taken (another thread may store it meanwhile: the second
 * look, under the bucket's lock, settles that).
 */
static void cache_fill(struct cache *c, struct cache_thread *t, uint64_t k0, uint64_t k1,
		       const uint64_t v[2], int found, uint32_t gen, bool absent)
{
	uint32_t h = cache_hash(k0, k1), i;
	struct cache_bucket *b = cache_bucket(c, h);
	struct cache_elem *e, *x = NULL;

	/* The key may be there with an old generation: refresh it in place. */
	if (!absent) {
		cache_lock(&b->lock);
		x = cache_chain_key(c, b, k0, k1);
		if (x)
			cache_elem_rewrite(x, v, found, gen);
		cache_unlock(&b->lock);
		if (x)
			goto filled;
	}

	if (t->door && !cache_door_admit(t, h)) {
		CACHE_INC(t->st.first_misses);
		return;
	}
	i = c->cfg.mode == CACHE_PERTHREAD ? cache_pt_pop_free(c, t) : cache_common_pop_free(c, t);
	if (i == UINT32_MAX) {
		CACHE_INC(t->st.fill_skips);
		return;
	}
	e = &c->elems[i];
	/* Odd since it left the hash (or since the start): readers of its old self miss. */
	CACHE_STORE(e->key[0], k0);
	CACHE_STORE(e->key[1], k1);
	CACHE_STORE(c->nodes[i].hash, h);
	cache_elem_write(e, v, found, gen);

	cache_lock(&b->lock);
	x = cache_chain_key(c, b, k0, k1);
	if (x) {
		/* Another thread filled it meanwhile. */
		cache_elem_rewrite(x, v, found, gen);
	} else {
		CACHE_STORE(e->next, b->first);
		CACHE_STORE_REL(e->seq, e->seq + 1);
		CACHE_STORE_REL(b->first, i);
	}
	cache_unlock(&b->lock);
	if (x) {
		if (c->cfg.mode == CACHE_PERTHREAD)
			cache_pt_push_free(c, t, i);
		else
			cache_common_push_free(c, t, i);
	}
filled:
	CACHE_INC(t->st.fills);
}

/* The flood guard (lib/cache.h): the end of a window, whether the thread bypasses the cache. */
static void cache_flood_window_end(struct cache_thread *t)
{
	uint64_t hits = CACHE_LOAD(t->st.hits) - t->win_hits;

	/* hits / (hits + misses) < 1 / CACHE_FLOOD_RATIO: a flood */
	if (hits * CACHE_FLOOD_RATIO >= hits + t->win_misses)
		t->flood = 0;
	else if (!t->flood)
		t->flood = (uint32_t)CACHE_LOAD(t->st.misses) * 0x9e3779b1u | 1; /* a seed, not 0 */
	t->win_hits = CACHE_LOAD(t->st.hits);
	t->win_misses = 0;
}

/* At every miss that probed the cache: a window is CACHE_FLOOD_WINDOW of them. */
static void cache_flood_watch(const struct cache *c, struct cache_thread *t)
{
	if (!(c->cfg.flags & CACHE_F_NO_FLOOD_GUARD) && ++t->win_misses >= CACHE_FLOOD_WINDOW)
		cache_flood_window_end(t);
}

/*
 * While bypassing, after a sampled lookup: enough hits end the window
 * early. Without this, a thread whose traffic came back to a cached set
 * would count too few misses ever to end it.
 */
static void cache_flood_watch_hits(struct cache_thread *t)
{
	if (t->flood && CACHE_LOAD(t->st.hits) - t->win_hits >= CACHE_FLOOD_HITS)
		cache_flood_window_end(t);
}

/*
 * While the guard is on: whether this lookup bypasses the cache. One in
 * CACHE_FLOOD_SAMPLE does not, drawn at random (xorshift): every 256th
 * would sample the same addresses of a stream that repeats with a period
 * of a multiple of 64, and find them cached.
 */
static bool cache_bypass(struct cache_thread *t)
{
	uint32_t x = t->flood;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	t->flood = x;
	return x % CACHE_FLOOD_SAMPLE != 0;
}

/*
 * The miss path's ordering (see lib/cache.h): sequence, generation, trie,
 * sequence. Returns whether a route matched, with it in *@out.
 */
static bool cache_resolve(struct cache *c, struct cache_thread *t, uint64_t k0, uint64_t k1,
			  const struct fib_route *r, uint32_t s1, uint32_t gen,
			  struct fib_route *out, bool absent)
{
	uint64_t v[2] = { 0, 0 };

	if (r) {
		memcpy(v, r, sizeof(v));
		*out = *r;
	}
	cache_flood_watch(c, t);
	CACHE_FENCE_ACQ();
	if (!(s1 & 1) && CACHE_LOAD(c->gens->seq) == s1)
		cache_fill(c, t, k0, k1, v, r != NULL, gen, absent);
	else
		CACHE_INC(t->st.fill_skips);
	return r != NULL;
}

_Static_assert(sizeof(struct fib_route) == 2 * sizeof(uint64_t), "a route is two words");

bool cache_miss4_rcu(struct cache *c, struct cache_thread *t, uint32_t addr, struct fib_route *out)
{
	uint32_t slot = cache_gen_slot4(addr);
	uint32_t s1 = CACHE_LOAD_ACQ(c->gens->seq);
	uint32_t gen = CACHE_LOAD_ACQ(c->gens->slot[slot]);

	CACHE_INC(t->st.misses);
	return cache_resolve(c, t, addr, 0, fib_lookup4_rcu(c->tb, addr), s1, gen, out, false);
}

bool cache_miss6_rcu(struct cache *c, struct cache_thread *t, const struct in6_addr *addr,
		     struct fib_route *out)
{
	trie_key6 k = addr_key6_raw(addr);
	uint64_t hi = (uint64_t)(k >> 64);
	uint32_t slot = cache_gen_slot6(hi);
	uint32_t s1 = CACHE_LOAD_ACQ(c->gens->seq);
	uint32_t gen = CACHE_LOAD_ACQ(c->gens->slot[slot]);

	CACHE_INC(t->st.misses);
	return cache_resolve(c, t, hi, (uint64_t)k, fib_lookup6_rcu(c->tb, addr), s1, gen, out,
			     false);
}

/*
 * A batch's probes (cache_lookup4_batch_rcu()): every key's bucket is
 * fetched, then every first element, then the chains are walked. Hits go
 * to out[] and *@found; the misses' indexes to @miss (their number is
 * returned), and whether each key's chain ended without it to @absent.
 */
static unsigned int cache_batch_probe(struct cache *c, struct cache_thread *t, const uint64_t *k0,
				      const uint64_t *k1, const uint32_t *slot,
				      struct fib_route *out, uint64_t *found, uint8_t *miss,
				      bool *absent, unsigned int n)
{
	uint32_t first[CACHE_BATCH_MAX];
	unsigned int nm = 0;

	for (unsigned int i = 0; i < n; i++) {
		first[i] = cache_hash(k0[i], k1[i]) & c->bucket_mask;
		__builtin_prefetch(&c->buckets[first[i]]);
		__builtin_prefetch(&c->gens->slot[slot[i]]);
	}
	for (unsigned int i = 0; i < n; i++) {
		first[i] = CACHE_LOAD_ACQ(c->buckets[first[i]].first);
		if (!(first[i] & CACHE_NULLS)) {
			__builtin_prefetch(&c->elems[first[i]]);
			__builtin_prefetch(&c->nodes[first[i]]);
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		int r = cache_chain_hit_rcu(c, t, first[i], k0[i], k1[i], slot[i], &out[i]);

		if (r > 0) {
			*found |= 1ull << i;
		} else if (r < 0) {
			absent[nm] = r == -2;
			miss[nm++] = (uint8_t)i;
		}
	}
	return nm;
}

/*
 * While the guard is on, a sampled lookup of @a4 (or @a6): through the
 * cache as always (probe, then miss and fill), and it counts toward the
 * end of the flood.
 */
static bool cache_sampled(struct cache *c, struct cache_thread *t, const uint32_t *a4,
			  const struct in6_addr *a6, struct fib_route *out)
{
	int hit;

	if (a4) {
		hit = cache_hit_rcu(c, t, *a4, 0, cache_gen_slot4(*a4), out);
		if (hit < 0)
			hit = cache_miss4_rcu(c, t, *a4, out);
	} else {
		trie_key6 k = addr_key6_raw(a6);

		hit = cache_hit_rcu(c, t, (uint64_t)(k >> 64), (uint64_t)k,
				    cache_gen_slot6((uint64_t)(k >> 64)), out);
		if (hit < 0)
			hit = cache_miss6_rcu(c, t, a6, out);
	}
	cache_flood_watch_hits(t);
	return hit;
}

static bool cache_copy(const struct fib_route *r, struct fib_route *out)
{
	if (r)
		*out = *r;
	return r != NULL;
}

/*
 * A batch while the flood guard is on: the trie's answers in @res, but for
 * the sampled lookups, which go through the cache (@a4 or @a6 their addresses).
 */
static uint64_t cache_batch_bypass(struct cache *c, struct cache_thread *t, const uint32_t *a4,
				   const struct in6_addr *a6, const struct fib_route **res,
				   struct fib_route *out, unsigned int n)
{
	uint64_t found = 0, bypassed = 0;
	bool hit;

	/* Copied below: their leaves (which the walk may not have read) all at once. */
	for (unsigned int i = 0; i < n; i++)
		if (res[i])
			__builtin_prefetch(res[i]);
	for (unsigned int i = 0; i < n; i++) {
		if (t->flood && cache_bypass(t)) {
			hit = cache_copy(res[i], &out[i]);
			bypassed++;
		} else { /* sampled, or the guard went off */
			hit = cache_sampled(c, t, a4 ? &a4[i] : NULL, a4 ? NULL : &a6[i], &out[i]);
		}
		found |= (uint64_t)hit << i;
	}
	CACHE_STORE(t->st.bypassed, CACHE_LOAD(t->st.bypassed) + bypassed);
	return found;
}

/* The trie's answers for @n addresses of @a4 (or @a6), those at @idx[] when not NULL. */
static void cache_trie_batch(const struct cache *c, const uint32_t *a4, const struct in6_addr *a6,
			     const uint8_t *idx, const struct fib_route **res, unsigned int n)
{
	uint32_t m4[CACHE_BATCH_MAX];
	struct in6_addr m6[CACHE_BATCH_MAX];

	if (a4) {
		for (unsigned int j = 0; idx && j < n; j++)
			m4[j] = a4[idx[j]];
		fib_lookup4_batch_rcu(c->tb, idx ? m4 : a4, res, n);
	} else {
		for (unsigned int j = 0; idx && j < n; j++)
			m6[j] = a6[idx[j]];
		fib_lookup6_batch_rcu(c->tb, idx ? m6 : a6, res, n);
	}
}

/* cache_lookup4_batch_rcu() with @a4, or cache_lookup6_batch_rcu() with @a6. */
static uint64_t cache_batch(struct cache *c, struct cache_thread *t, const uint32_t *a4,
			    const struct in6_addr *a6, struct fib_route *out, unsigned int n)
{
	uint64_t k0[CACHE_BATCH_MAX], k1[CACHE_BATCH_MAX], found = 0;
	uint32_t slot[CACHE_BATCH_MAX], gen[CACHE_BATCH_MAX], s1;
	const struct fib_route *res[CACHE_BATCH_MAX];
	uint8_t miss[CACHE_BATCH_MAX];
	bool absent[CACHE_BATCH_MAX];
	unsigned int nm;

	if (n > CACHE_BATCH_MAX)
		n = CACHE_BATCH_MAX;
	if (t->flood) {
		cache_trie_batch(c, a4, a6, NULL, res, n);
		return cache_batch_bypass(c, t, a4, a6, res, out, n);
	}
	for (unsigned int i = 0; i < n; i++) {
		trie_key6 k = a4 ? a4[i] : addr_key6_raw(&a6[i]);

		k0[i] = a4 ? (uint64_t)k : (uint64_t)(k >> 64);
		k1[i] = a4 ? 0 : (uint64_t)k;
		slot[i] = a4 ? cache_gen_slot4(a4[i]) : cache_gen_slot6(k0[i]);
	}
	nm = cache_batch_probe(c, t, k0, k1, slot, out, &found, miss, absent, n);
	if (!nm)
		return found;
	/* The miss path's order, for all of them at once: sequence, generations, trie. */
	s1 = CACHE_LOAD_ACQ(c->gens->seq);
	for (unsigned int j = 0; j < nm; j++)
		gen[j] = CACHE_LOAD_ACQ(c->gens->slot[slot[miss[j]]]);
	CACHE_STORE(t->st.misses, CACHE_LOAD(t->st.misses) + nm);
	cache_trie_batch(c, a4, a6, miss, res, nm);
	/* The routes are copied: their leaves (which the walk may not have read) all at once. */
	for (unsigned int j = 0; j < nm; j++)
		if (res[j])
			__builtin_prefetch(res[j]);
	for (unsigned int j = 0; j < nm; j++) {
		unsigned int i = miss[j];

		if (cache_resolve(c, t, k0[i], k1[i], res[j], s1, gen[j], &out[i], absent[j]))
			found |= 1ull << i;
	}
	return found;
}

uint64_t cache_lookup4_batch_rcu(struct cache *c, struct cache_thread *t, const uint32_t *addr,
				 struct fib_route *out, unsigned int n)
{
	return cache_batch(c, t, addr, NULL, out, n);
}

uint64_t cache_lookup6_batch_rcu(struct cache *c, struct cache_thread *t,
				 const struct in6_addr *addr, struct fib_route *out, unsigned int n)
{
	return cache_batch(c, t, NULL, addr, out, n);
}

bool cache_flood4_rcu(struct cache *c, struct cache_thread *t, uint32_t addr, struct fib_route *out)
{
	if (!cache_bypass(t))
		return cache_sampled(c, t, &addr, NULL, out);
	CACHE_INC(t->st.bypassed);
	return cache_copy(fib_lookup4_rcu(c->tb, addr), out);
}

bool cache_flood6_rcu(struct cache *c, struct cache_thread *t, const struct in6_addr *addr,
		      struct fib_route *out)
{
	if (!cache_bypass(t))
		return cache_sampled(c, t, NULL, addr, out);
	CACHE_INC(t->st.bypassed);
	return cache_copy(fib_lookup6_rcu(c->tb, addr), out);
}

bool cache_lookup4_call_rcu(struct cache *c, struct cache_thread *t, uint32_t addr,
			    struct fib_route *out)
{
	return cache_lookup4_rcu(c, t, addr, out);
}

/* ----------------------------------------------------------- lifecycle */

static int cache_cfg_check(const struct cache_cfg *in, struct cache_cfg *cfg, struct errbuf *err)
{
	*cfg = *in;
	if (cfg->threads < 1 || cfg->threads > CACHE_MAX_THREADS) {
		err_set(err, "cache: threads %u out of range 1..%u", cfg->threads,
			CACHE_MAX_THREADS);
		return -EINVAL;
	}
	if (cfg->flags & ~(unsigned int)CACHE_F_ALL) {
		err_set(err, "cache: unknown flags 0x%x", cfg->flags & ~(unsigned int)CACHE_F_ALL);
		return -EINVAL;
	}
	if (cfg->mode != CACHE_COMMON && cfg->mode != CACHE_PERTHREAD) {
		err_set(err, "cache: unknown mode %d", (int)cfg->mode);
		return -EINVAL;
	}
	if (!cfg->nr_scans)
		cfg->nr_scans = cfg->mode == CACHE_PERTHREAD ? CACHE_NR_SCANS_PERTHREAD
							     : CACHE_NR_SCANS_COMMON;
	if (cfg->nr_scans > CACHE_NR_SCANS_MAX) {
		err_set(err, "cache: nr-scans %u out of range 1..%u", cfg->nr_scans,
			CACHE_NR_SCANS_MAX);
		return -EINVAL;
	}
	if (!(cfg->flags & CACHE_F_NO_FLOOR) && cfg->size < CACHE_MIN_PER_THREAD * cfg->threads)
		cfg->size = CACHE_MIN_PER_THREAD * cfg->threads;
	if (cfg->size < cfg->threads || cfg->size >= CACHE_NULLS / 2) {
		err_set(err, "cache: size %u out of range %u..%u", cfg->size, cfg->threads,
			CACHE_NULLS / 2 - 1);
		return -EINVAL;
	}
	return 0;
}

static void cache_lru_init(struct cache *c, struct cache_lru *l, uint32_t *next_head)
{
	for (int k = 0; k < 3; k++) {
		l->head[k] = (*next_head)++;
		cache_list_init(c, l->head[k]);
	}
	l->next_inactive_rotation = l->head[CACHE_T_INACTIVE];
}

/* Hands out the elements: all to the common free list, or an even share per thread. */
static void cache_populate(struct cache *c)
{
	unsigned int nt = c->cfg.threads;

	for (uint32_t i = 0; i < c->n; i++) {
		struct cache_node *e = &c->nodes[i];
		unsigned int owner = c->cfg.mode == CACHE_PERTHREAD
					     ? (unsigned int)((uint64_t)i * nt / c->n)
					     : 0;
		struct cache_lru *l = &c->lru[owner];

		c->elems[i].seq = 1;
		e->owner = (uint16_t)owner;
		cache_list_add(c, l->head[CACHE_T_FREE], i);
		e->type = CACHE_T_FREE;
		l->count[CACHE_T_FREE]++;
	}
}

static uint32_t cache_roundup_pow2(uint32_t x)
{
	uint32_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

/*
 * The arrays a probe reads (buckets, elements, nodes): on huge pages where
 * the kernel has them, as a probe is one random read of each and a TLB
 * miss would cost as much as the read. Zeroed.
 */
static void *cache_array_alloc(size_t size)
{
	size_t align = size >= CACHE_HUGE_PAGE ? CACHE_HUGE_PAGE : 64;
	void *p;

	if (posix_memalign(&p, align, size))
		return NULL;
	if (align == CACHE_HUGE_PAGE)
		madvise(p, size, MADV_HUGEPAGE); /* advice only: failure is harmless */
	memset(p, 0, size);
	return p;
}

/* Second-miss admission's bitmaps: 8 bits an element of a thread's share (at least 4096). */
static int cache_door_alloc(struct cache *c)
{
	unsigned int nt = c->cfg.threads;
	uint64_t want = 8ull * (c->n / nt + 1);
	uint32_t bits = cache_roundup_pow2(want < 4096       ? 4096
					   : want > 1u << 31 ? 1u << 31
							     : (uint32_t)want);
	size_t words;

	words = bits / 64;
	c->door = cache_array_alloc(nt * words * sizeof(uint64_t));
	if (!c->door)
		return -ENOMEM;
	for (unsigned int k = 0; k < nt; k++) {
		c->thr[k].door = c->door + k * words;
		c->thr[k].door_mask = bits - 1;
		c->thr[k].door_left = bits / 8;
	}
	return 0;
}

static int cache_alloc(struct cache *c)
{
	unsigned int nt = c->cfg.threads;
	unsigned int n_lru = c->cfg.mode == CACHE_PERTHREAD ? nt : 1;
	uint32_t nb = cache_roundup_pow2(c->n), next_head = c->n;

	c->elems = cache_array_alloc((size_t)c->n * sizeof(*c->elems));
	c->nodes = cache_array_alloc((size_t)c->n * sizeof(*c->nodes));
	c->buckets = cache_array_alloc((size_t)nb * sizeof(*c->buckets));
	c->thr = aligned_alloc(64, nt * sizeof(*c->thr));
	c->lru = aligned_alloc(64, n_lru * sizeof(*c->lru));
	c->loc = c->cfg.mode == CACHE_COMMON ? aligned_alloc(64, nt * sizeof(*c->loc)) : NULL;
	c->heads = calloc(3 * n_lru + 2 * nt, sizeof(*c->heads));
	if (!c->elems || !c->nodes || !c->buckets || !c->thr || !c->lru || !c->heads ||
	    (c->cfg.mode == CACHE_COMMON && !c->loc))
		return -ENOMEM;
	memset(c->thr, 0, nt * sizeof(*c->thr));
	memset(c->lru, 0, n_lru * sizeof(*c->lru));
	c->bucket_mask = nb - 1;
	for (uint32_t b = 0; b < nb; b++)
		c->buckets[b].first = CACHE_NULLS | b;
	for (unsigned int k = 0; k < nt; k++)
		c->thr[k].idx = k;
	if ((c->cfg.flags & CACHE_F_ADMIT_SECOND) && cache_door_alloc(c))
		return -ENOMEM;
	for (unsigned int k = 0; k < n_lru; k++)
		cache_lru_init(c, &c->lru[k], &next_head);
	if (c->loc) {
		memset(c->loc, 0, nt * sizeof(*c->loc));
		for (unsigned int k = 0; k < nt; k++) {
			c->loc[k].head[0] = next_head++;
			c->loc[k].head[1] = next_head++;
			cache_list_init(c, c->loc[k].head[0]);
			cache_list_init(c, c->loc[k].head[1]);
			c->loc[k].is_empty = 1;
			c->loc[k].next_steal = k;
		}
	}
	cache_populate(c);
	return 0;
}

struct cache *cache_new(struct fib *f, uint32_t table, int family, const struct cache_cfg *cfg,
			struct errbuf *err)
{
	struct cache *c;
	int ret;

	err_clear(err);
	if (family != AF_INET && family != AF_INET6) {
		err_set(err, "cache: family %d is neither IPv4 nor IPv6", family);
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	ret = cache_cfg_check(cfg, &c->cfg, err);
	if (ret) {
		free(c);
		errno = -ret;
		return NULL;
	}
	c->n = c->cfg.size;
	c->family = family;
	c->target_free = c->n / c->cfg.threads / 2;
	if (c->target_free > CACHE_LOCAL_FREE_TARGET)
		c->target_free = CACHE_LOCAL_FREE_TARGET;
	if (c->target_free < 1)
		c->target_free = 1;
	c->tb = fib_table_cache(f, table ? table : FIB_TABLE_MAIN, family);
	if (!c->tb || cache_alloc(c)) {
		cache_destroy(c);
		goto nomem;
	}
	c->gens = c->tb->gens;
	return c;
nomem:
	err_set(err, "cache: out of memory for %u elements", cfg->size);
	errno = ENOMEM;
	return NULL;
}

void cache_destroy(struct cache *c)
{
	if (!c)
		return;
	free(c->elems);
	free(c->nodes);
	free(c->door);
	free(c->buckets);
	free(c->thr);
	free(c->lru);
	free(c->loc);
	free(c->heads);
	free(c);
}

void cache_get_cfg(const struct cache *c, struct cache_cfg *cfg)
{
	*cfg = c->cfg;
}

void cache_get_stats(const struct cache *c, struct cache_stats *st)
{
	uint64_t *sum = (uint64_t *)st;

	memset(st, 0, sizeof(*st));
	for (unsigned int k = 0; k < c->cfg.threads; k++) {
		const uint64_t *v = (const uint64_t *)&c->thr[k].st;

		for (size_t j = 0; j < sizeof(*st) / sizeof(uint64_t); j++)
			sum[j] += uatomic_read(&v[j]);
	}
}

const char *cache_mode_name(enum cache_mode m)
{
	return m == CACHE_PERTHREAD ? "per-thread" : "common";
}
