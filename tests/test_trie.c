/* SPDX-License-Identifier: MIT */
/*
 * The LC-trie against the brute-force reference (tests/ref.h), both key
 * widths, through the trie API itself: random edits skewed so that keys
 * collide and nodes inflate and halve, with the trie's own invariant check
 * after every batch, and the edge cases one at a time.
 *
 * The test thread is the writer and, between edits, a reader. It never
 * asserts inside a read-side critical section: a failed assertion jumps
 * out of the test, and a read lock left held would hang the grace period
 * that teardown waits for. Readers copy what they found, unlock, then check.
 *
 * LCFIB_SEED repeats a run; LCFIB_LONG=1 runs ten times the operations.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <urcu/urcu-memb.h>

#include "lib/addr.h"
#include "lib/mem.h"
#include "lib/reclaim.h"
#include "lib/route.h"
#include "lib/trie.h"
#include "tests/ref.h"
#include "tests/tdata.h"
#include "tests/trie_stepwise.h"

/* ------------------------------------------------ one trie of either family */

/* Keys of both families travel as 128-bit values; an IPv4 key is its low 32 bits. */
typedef trie_key6 tkey;

struct tt {
	int family;
	unsigned int bits;
	struct trie4 *t4;
	struct trie6 *t6;
};

struct fixture {
	struct mem *m;
	struct reclaim *rc;
	struct tt tt;
};

static int tt_edit(struct tt *tt, tkey key, unsigned int plen, trie_edit_fn *fn, void *ctx)
{
	if (tt->family == AF_INET)
		return trie4_edit(tt->t4, (uint32_t)key, plen, fn, ctx);
	return trie6_edit(tt->t6, key, plen, fn, ctx);
}

/* A lookup, copied out of the read-side section: returns whether a route matched. */
static int tt_lookup(const struct tt *tt, tkey addr, struct fib_route *out)
{
	const struct fib_route *r;

	urcu_memb_read_lock();
	if (tt->family == AF_INET)
		r = trie4_lookup_rcu(tt->t4, (uint32_t)addr);
	else
		r = trie6_lookup_rcu(tt->t6, addr);
	if (r)
		*out = *r;
	urcu_memb_read_unlock();
	return r != NULL;
}

#define TT_BATCH_MAX 256

/* @n batched lookups (n <= TT_BATCH_MAX); found[i] says whether out[i] is set. */
static void tt_lookup_batch(const struct tt *tt, const tkey *addr, unsigned int n,
			    struct fib_route *out, int *found)
{
	const struct fib_route *res[TT_BATCH_MAX];
	uint32_t a4[TT_BATCH_MAX];

	assert_true(n <= TT_BATCH_MAX);
	for (unsigned int i = 0; i < n; i++) {
		a4[i] = (uint32_t)addr[i];
		/* A slot the batch forgets to fill must not look like an answer. */
		res[i] = (const struct fib_route *)(uintptr_t)0x1;
	}
	urcu_memb_read_lock();
	if (tt->family == AF_INET)
		trie4_lookup_batch_rcu(tt->t4, a4, res, n);
	else
		trie6_lookup_batch_rcu(tt->t6, addr, res, n);
	for (unsigned int i = 0; i < n; i++) {
		found[i] = res[i] != NULL && res[i] != (const struct fib_route *)(uintptr_t)0x1;
		if (found[i])
			out[i] = *res[i];
		else if (res[i])
			found[i] = -1;
	}
	urcu_memb_read_unlock();
}

/* The routes of exactly @key/@plen copied to @out (up to @cap); returns their number. */
static unsigned int tt_find(const struct tt *tt, tkey key, unsigned int plen, struct fib_route *out,
			    unsigned int cap)
{
	const struct fib_route *r;
	unsigned int n = 0;

	urcu_memb_read_lock();
	if (tt->family == AF_INET)
		r = trie4_find_rcu(tt->t4, (uint32_t)key, plen, &n);
	else
		r = trie6_find_rcu(tt->t6, key, plen, &n);
	if (!r)
		n = 0;
	for (unsigned int i = 0; i < n && i < cap; i++)
		out[i] = r[i];
	urcu_memb_read_unlock();
	return n;
}

/* The leaf with the smallest key >= @from, copied; returns 0 or -ENOENT. */
static int tt_next(const struct tt *tt, tkey from, tkey *key, struct fib_route *out,
		   unsigned int *n)
{
	const struct fib_route *r = NULL;
	int ret;

	urcu_memb_read_lock();
	if (tt->family == AF_INET) {
		uint32_t k4 = 0;

		ret = trie4_next_rcu(tt->t4, (uint32_t)from, &k4, &r, n);
		*key = k4;
	} else {
		ret = trie6_next_rcu(tt->t6, from, key, &r, n);
	}
	if (!ret) {
		for (unsigned int i = 0; i < *n && i < TRIE_LEAF_MAX; i++)
			out[i] = r[i];
	}
	urcu_memb_read_unlock();
	return ret;
}

static int tt_check(const struct tt *tt, struct errbuf *err)
{
	if (tt->family == AF_INET)
		return trie4_check(tt->t4, err);
	return trie6_check(tt->t6, err);
}

static void tt_set_bulk(struct tt *tt, bool on)
{
	if (tt->family == AF_INET)
		trie4_set_bulk(tt->t4, on);
	else
		trie6_set_bulk(tt->t6, on);
}

static bool tt_compact(struct tt *tt)
{
	return tt->family == AF_INET ? trie4_compact(tt->t4) : trie6_compact(tt->t6);
}

static void tt_stats(const struct tt *tt, struct trie_stats *st)
{
	if (tt->family == AF_INET)
		trie4_get_stats(tt->t4, st);
	else
		trie6_get_stats(tt->t6, st);
}

static uint64_t tt_routes(const struct tt *tt)
{
	if (tt->family == AF_INET)
		return trie4_routes(tt->t4);
	return trie6_routes(tt->t6);
}

static void tt_dump(const struct tt *tt, FILE *f)
{
	if (tt->family == AF_INET)
		trie4_dump(tt->t4, f);
	else
		trie6_dump(tt->t6, f);
}

static tkey tt_all_ones(const struct tt *tt)
{
	return tt->family == AF_INET ? (tkey)UINT32_MAX : ~(tkey)0;
}

/* The first @plen bits of @key. */
static tkey tt_mask(const struct tt *tt, tkey key, unsigned int plen)
{
	if (plen == 0)
		return 0;
	return key & (~(tkey)0 << (tt->bits - plen)) & tt_all_ones(tt);
}

static void tt_addr(const struct tt *tt, tkey key, struct addr *a)
{
	if (tt->family == AF_INET)
		addr_from_key4(a, (uint32_t)key);
	else
		addr_from_key6(a, key);
}

static void tt_prefix(const struct tt *tt, tkey key, unsigned int plen, struct addr_prefix *p)
{
	tt_addr(tt, key, &p->a);
	p->plen = (uint8_t)plen;
}

/* For messages: "KEY/PLEN" in a static buffer (one of four, so a message may hold several). */
static const char *tt_str(const struct tt *tt, tkey key, int plen)
{
	static char buf[4][ADDR_STRLEN];
	static unsigned int next;
	char *b = buf[next++ % 4];
	struct addr_prefix p;

	tt_prefix(tt, key, plen < 0 ? 0 : (unsigned int)plen, &p);
	if (plen < 0)
		return addr_format(&p.a, b, ADDR_STRLEN);
	return addr_prefix_format(&p, b, ADDR_STRLEN);
}

/* --------------------------------------------------------------- fixtures */

static int tt_setup(void **state, int family)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->m = mem_new();
	f->rc = f->m ? reclaim_new(f->m) : NULL;
	if (!f->rc)
		return -1;
	f->tt.family = family;
	f->tt.bits = addr_bits(family);
	if (family == AF_INET)
		f->tt.t4 = trie4_new(f->m, f->rc);
	else
		f->tt.t6 = trie6_new(f->m, f->rc);
	if (!f->tt.t4 && !f->tt.t6)
		return -1;
	*state = f;
	return 0;
}

static int setup_v4(void **state)
{
	return tt_setup(state, AF_INET);
}

static int setup_v6(void **state)
{
	return tt_setup(state, AF_INET6);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (!f)
		return 0;
	/* A failed assertion cannot leave us inside a read-side section, but be sure. */
	while (urcu_memb_read_ongoing())
		urcu_memb_read_unlock();
	if (f->tt.family == AF_INET)
		trie4_destroy(f->tt.t4);
	else
		trie6_destroy(f->tt.t6);
	reclaim_destroy(f->rc);
	mem_destroy(f->m);
	free(f);
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	urcu_memb_register_thread();
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	urcu_memb_unregister_thread();
	return 0;
}

/* ------------------------------------------------------- the edit callback */

#define OLD_KEEP 8

/*
 * Sets a prefix's routes to @n routes of metrics @metric, @metric + 1, ...
 * (or @metrics[] when given), or returns @ret when it is an error. It
 * writes at most @cap routes but returns @n even when @n is larger, as a
 * callback that overflows the leaf would. It records what the trie passed.
 */
struct set_ctx {
	unsigned int n;
	uint32_t metric;
	const uint32_t *metrics;
	int ret;
	/* What the trie passed in. */
	unsigned int calls, n_old, cap;
	uint32_t old_metric[OLD_KEEP];
	uint8_t old_plen[OLD_KEEP];
};

/*
 * The trie never dereferences a route's nexthop: a value derived from the
 * metric lets a lookup prove it returned the whole route, not a metric alone.
 */
static struct nh *fake_nh(uint32_t metric)
{
	return (struct nh *)(uintptr_t)(((uint64_t)metric << 4) | 0x8);
}

static struct fib_route route_of(uint32_t metric)
{
	return (struct fib_route){
		.nh = fake_nh(metric),
		.metric = metric,
		.plen = 0xee, /* the trie sets it */
		.type = FIB_RT_UNICAST,
		.proto = 4,
		.scope = 0,
	};
}

static int set_routes(void *ctx, const struct fib_route *old, unsigned int n_old,
		      struct fib_route *out, unsigned int cap)
{
	struct set_ctx *c = ctx;

	c->calls++;
	c->n_old = n_old;
	c->cap = cap;
	for (unsigned int i = 0; i < n_old && i < OLD_KEEP; i++) {
		c->old_metric[i] = old[i].metric;
		c->old_plen[i] = old[i].plen;
	}
	if (c->ret)
		return c->ret;
	for (unsigned int i = 0; i < c->n && i < cap; i++)
		out[i] = route_of(c->metrics ? c->metrics[i] : c->metric + i);
	return (int)c->n;
}

/* Sets @key/@plen to @n routes from @metric; returns the edit's result. */
static int tt_set(struct tt *tt, tkey key, unsigned int plen, unsigned int n, uint32_t metric)
{
	struct set_ctx c = { .n = n, .metric = metric };

	return tt_edit(tt, key, plen, set_routes, &c);
}

static int tt_del(struct tt *tt, tkey key, unsigned int plen)
{
	return tt_set(tt, key, plen, 0, 0);
}

/* Whether @r is route i of a prefix set by set_routes with @metric, at @plen. */
static int route_is(const struct fib_route *r, unsigned int plen, uint32_t metric)
{
	return r->plen == plen && r->metric == metric && r->nh == fake_nh(metric) &&
	       r->type == FIB_RT_UNICAST && r->proto == 4 && r->scope == 0;
}

/* Asserts that @addr resolves to @plen with first metric @metric (plen < 0: to nothing). */
static void expect_lookup(const struct tt *tt, tkey addr, int plen, uint32_t metric)
{
	struct fib_route r, rb;
	int found, foundb;

	found = tt_lookup(tt, addr, &r);
	tt_lookup_batch(tt, &addr, 1, &rb, &foundb);
	if (plen < 0) {
		if (found || foundb)
			fail_msg("lookup %s: expected no match, got /%u (batch %d)",
				 tt_str(tt, addr, -1), found ? r.plen : rb.plen, foundb);
		return;
	}
	if (!found || !route_is(&r, (unsigned int)plen, metric))
		fail_msg("lookup %s: expected /%d metric %u, got %s/%u metric %u",
			 tt_str(tt, addr, -1), plen, metric, found ? "" : "nothing ",
			 found ? r.plen : 0, found ? r.metric : 0);
	if (foundb != 1 || !route_is(&rb, (unsigned int)plen, metric))
		fail_msg("batch lookup %s: expected /%d metric %u, got %d /%u metric %u",
			 tt_str(tt, addr, -1), plen, metric, foundb, rb.plen, rb.metric);
}

static void assert_trie_ok(const struct tt *tt)
{
	struct errbuf err = { { 0 } };
	int ret = tt_check(tt, &err);

	if (ret)
		fail_msg("trie check: %d: %s", ret, err.msg);
}

/* ------------------------------------------------------- the differential */

/* The reference stores a prefix's first metric and its route count. */
static uint64_t ref_value(uint32_t metric, unsigned int n)
{
	return metric | ((uint64_t)n << 32);
}

static uint32_t ref_value_metric(uint64_t v)
{
	return (uint32_t)v;
}

static unsigned int ref_value_count(uint64_t v)
{
	return (unsigned int)(v >> 32);
}

#define POOL_BASES 64
#define REGIONS    4

/*
 * The shape of the random workload. Pool bases have their low bits clear
 * from base_len on, so every prefix of them at least that long shares the
 * base's key (one leaf, several prefixes); regions are small spaces that
 * fill densely enough to inflate nodes, and empty again to halve them.
 */
struct workload {
	struct tt *tt;
	struct tdata_rng rng;
	tkey base[POOL_BASES];
	unsigned int base_len[POOL_BASES];
	tkey region[REGIONS];
	unsigned int region_len[REGIONS];
	tkey hosts[REGIONS];      /* blocks of 64 addresses, for nodes at the bottom of the key */
	unsigned int region_span; /* prefix lengths used in a region: region_len .. + span */
};

static tkey wl_random_key(struct workload *w)
{
	tkey k = ((tkey)tdata_rng_next(&w->rng) << 64) | tdata_rng_next(&w->rng);

	return k & tt_all_ones(w->tt);
}

static unsigned int wl_below(struct workload *w, unsigned int n)
{
	return (unsigned int)(tdata_rng_next(&w->rng) % n);
}

static void wl_init(struct workload *w, struct tt *tt, uint64_t seed)
{
	unsigned int bits = tt->bits;

	memset(w, 0, sizeof(*w));
	w->tt = tt;
	tdata_rng_seed(&w->rng, seed);
	/* Bases of /4../30 (/16../126): room for shorter and longer prefixes on their key. */
	for (unsigned int i = 0; i < POOL_BASES; i++) {
		w->base_len[i] = bits / 8 + wl_below(w, bits - bits / 8 - 1);
		w->base[i] = tt_mask(tt, wl_random_key(w), w->base_len[i]);
	}
	/* IPv4 regions of /8../15 holding prefixes up to 16 bits longer; IPv6 of /24../39. */
	w->region_span = 16;
	for (unsigned int i = 0; i < REGIONS; i++) {
		w->region_len[i] = bits == 32 ? 8 + wl_below(w, 8) : 24 + wl_below(w, 16);
		w->region[i] = tt_mask(tt, wl_random_key(w), w->region_len[i]);
		w->hosts[i] = tt_mask(tt, wl_random_key(w), bits - 6);
	}
}

/* A random prefix, skewed toward shared keys and dense regions. */
static void wl_prefix(struct workload *w, tkey *key, unsigned int *plen)
{
	unsigned int bits = w->tt->bits, r = wl_below(w, 100), i;

	if (r < 40) {
		i = wl_below(w, POOL_BASES);
		/* Half of them at least as long as the base: exactly the base's key. */
		if (r < 20)
			*plen = w->base_len[i] + wl_below(w, bits - w->base_len[i] + 1);
		else
			*plen = wl_below(w, bits + 1);
		*key = tt_mask(w->tt, w->base[i], *plen);
	} else if (r < 50) {
		/* Neighbouring host routes and /29../31s (/125../127s) in a block of 64. */
		i = wl_below(w, REGIONS);
		*plen = bits - wl_below(w, 7) / 2;
		*key = tt_mask(w->tt, w->hosts[i] | (wl_random_key(w) & 63), *plen);
	} else if (r < 85) {
		i = wl_below(w, REGIONS);
		/* Mostly a span of lengths that fills up; some anywhere below the region. */
		if (r < 55)
			*plen = w->region_len[i] + wl_below(w, bits - w->region_len[i] + 1);
		else
			*plen = w->region_len[i] + wl_below(w, w->region_span + 1);
		*key = tt_mask(w->tt, w->region[i] | wl_random_key(w), *plen);
	} else {
		*plen = wl_below(w, bits + 1);
		*key = tt_mask(w->tt, wl_random_key(w), *plen);
	}
}

/* A random address, near the prefixes most of the time. */
static tkey wl_addr(struct workload *w)
{
	unsigned int bits = w->tt->bits, r = wl_below(w, 100), i;
	tkey low = wl_random_key(w) & ~tt_mask(w->tt, tt_all_ones(w->tt), wl_below(w, bits + 1));

	if (r < 40) {
		i = wl_below(w, POOL_BASES);
		return w->base[i] ^ low;
	}
	if (r < 50)
		return w->hosts[wl_below(w, REGIONS)] | (wl_random_key(w) & 63);
	if (r < 80) {
		i = wl_below(w, REGIONS);
		return w->region[i] |
		       (wl_random_key(w) & ~tt_mask(w->tt, tt_all_ones(w->tt), w->region_len[i]));
	}
	return wl_random_key(w);
}

/* A prefix that was set, maybe deleted since (deleting it again must be harmless). */
struct live {
	tkey key;
	unsigned int plen;
};

struct diff {
	struct fixture *f;
	struct tt *tt;
	struct workload w;
	unsigned long op;
	struct ref *ref;  /* prefix -> ref_value() */
	struct ref *keys; /* key (as a host prefix) -> number of prefixes on it */
	uint64_t routes;
	struct live *live;
	size_t n_live, cap_live;
	/* What the differential exercised, so a test can prove it did its job. */
	unsigned long sets, dels, lookups, finds, batches, walks, rejected;
	unsigned int max_bits_seen;
	uint64_t max_prefixes, max_tnodes;
	unsigned int emptied;
	/* Out of memory: each edit first with one of its allocations failing (diff_edit()). */
	bool inject;
	unsigned long enomem, resize_failed;
};

static void diff_live_push(struct diff *d, tkey key, unsigned int plen)
{
	if (d->n_live == d->cap_live) {
		d->cap_live = d->cap_live ? 2 * d->cap_live : 4096;
		d->live = realloc(d->live, d->cap_live * sizeof(*d->live));
		assert_non_null(d->live);
	}
	d->live[d->n_live++] = (struct live){ key, plen };
}

static void diff_keys_add(struct diff *d, tkey key, int delta)
{
	struct addr_prefix kp;
	uint64_t n = 0;

	tt_prefix(d->tt, key, d->tt->bits, &kp);
	ref_get(d->keys, &kp, &n);
	n += (uint64_t)(int64_t)delta;
	if (n)
		ref_set(d->keys, &kp, n);
	else
		assert_int_equal(ref_del(d->keys, &kp), 0);
}

static void diff_find(struct diff *d, tkey key, unsigned int plen);

/* The trie's own check after an edit that met an allocation failure. */
static void diff_check_after(struct diff *d, tkey key, unsigned int plen, const char *what)
{
	struct errbuf err = { { 0 } };

	if (tt_check(d->tt, &err))
		fail_msg("op %lu: set %s %s: trie check: %s", d->op, tt_str(d->tt, key, (int)plen),
			 what, err.msg);
}

/*
 * The edit of diff_set(). When the differential injects failures, one of
 * the first eight allocations the edit makes fails first (mem_fail_after()):
 * an edit that fails so must say -ENOMEM and leave everything as it was,
 * and is made again; one whose failure fell in the resizes after it
 * succeeds, and the checks that follow find the trie whole (nodes kept
 * unresized, nothing leaked: diff_check_memory()).
 */
static int diff_edit(struct diff *d, tkey key, unsigned int plen, struct set_ctx *c)
{
	uint64_t failed;
	int ret;

	if (!d->inject)
		return tt_edit(d->tt, key, plen, set_routes, c);
	failed = mem_failed(d->f->m);
	mem_fail_after(d->f->m, wl_below(&d->w, 8), 1);
	ret = tt_edit(d->tt, key, plen, set_routes, c);
	mem_fail_after(d->f->m, 0, 0);
	if (ret != -ENOMEM) {
		if (mem_failed(d->f->m) != failed) {
			d->resize_failed++;
			diff_check_after(d, key, plen,
					 "succeeded, a resize or fallback without memory");
		}
		return ret;
	}
	assert_int_equal(mem_failed(d->f->m), failed + 1);
	d->enomem++;
	diff_find(d, key, plen);
	if (tt_routes(d->tt) != d->routes)
		fail_msg("op %lu: set %s failed for want of memory, yet the routes went from "
			 "%llu to %llu",
			 d->op, tt_str(d->tt, key, (int)plen), (unsigned long long)d->routes,
			 (unsigned long long)tt_routes(d->tt));
	diff_check_after(d, key, plen, "failed for want of memory");
	*c = (struct set_ctx){ .n = c->n, .metric = c->metric };
	return tt_edit(d->tt, key, plen, set_routes, c);
}

/* Sets @key/@plen to @n routes in the trie and the reference; checks what the trie passed. */
static void diff_set(struct diff *d, tkey key, unsigned int plen, unsigned int n, uint32_t metric)
{
	struct set_ctx c = { .n = n, .metric = metric };
	struct addr_prefix p;
	uint64_t old = 0;
	int had, ret;

	tt_prefix(d->tt, key, plen, &p);
	had = ref_get(d->ref, &p, &old);
	ret = diff_edit(d, key, plen, &c);
	if (ret)
		fail_msg("op %lu: set %s (%u routes): %d", d->op, tt_str(d->tt, key, (int)plen), n,
			 ret);
	assert_int_equal(c.calls, 1);
	if (c.n_old != (had ? ref_value_count(old) : 0))
		fail_msg("op %lu: set %s: callback got %u old routes, reference has %u", d->op,
			 tt_str(d->tt, key, (int)plen), c.n_old, had ? ref_value_count(old) : 0);
	if (had && (c.old_metric[0] != ref_value_metric(old) || c.old_plen[0] != plen))
		fail_msg("op %lu: set %s: callback got old /%u metric %u, reference metric %u",
			 d->op, tt_str(d->tt, key, (int)plen), c.old_plen[0], c.old_metric[0],
			 ref_value_metric(old));
	if (n == 0) {
		if (had) {
			assert_int_equal(ref_del(d->ref, &p), 0);
			diff_keys_add(d, key, -1);
			d->routes -= ref_value_count(old);
		}
		d->dels++;
		return;
	}
	ref_set(d->ref, &p, ref_value(metric, n));
	d->routes += n;
	d->routes -= had ? ref_value_count(old) : 0;
	if (!had) {
		diff_keys_add(d, key, 1);
		diff_live_push(d, key, plen);
	}
	d->sets++;
}

static void diff_compare_lookup(struct diff *d, tkey addr, int found, const struct fib_route *r,
				const char *how)
{
	struct addr a;
	unsigned int plen = 0;
	uint64_t v = 0;
	int want;

	tt_addr(d->tt, addr, &a);
	want = ref_lookup(d->ref, &a, &plen, &v);
	if (found < 0)
		fail_msg("op %lu: %s %s: result slot left unset", d->op, how,
			 tt_str(d->tt, addr, -1));
	if (!want && found)
		fail_msg("op %lu: %s %s: got /%u metric %u, reference has no match", d->op, how,
			 tt_str(d->tt, addr, -1), r->plen, r->metric);
	if (want && (!found || !route_is(r, plen, ref_value_metric(v))))
		fail_msg("op %lu: %s %s: got %s/%u metric %u, reference /%u metric %u", d->op, how,
			 tt_str(d->tt, addr, -1), found ? "" : "nothing ", found ? r->plen : 0,
			 found ? r->metric : 0, plen, ref_value_metric(v));
}

static void diff_lookup(struct diff *d)
{
	tkey addr = wl_addr(&d->w);
	struct fib_route r;
	int found = tt_lookup(d->tt, addr, &r);

	diff_compare_lookup(d, addr, found, &r, "lookup");
	d->lookups++;
}

static void diff_batch(struct diff *d)
{
	/* Not a multiple of the batch's lanes, so partial groups run too. */
	unsigned int n = 1 + wl_below(&d->w, TT_BATCH_MAX);
	tkey addr[TT_BATCH_MAX];
	struct fib_route r[TT_BATCH_MAX];
	int found[TT_BATCH_MAX];

	for (unsigned int i = 0; i < n; i++)
		addr[i] = wl_addr(&d->w);
	tt_lookup_batch(d->tt, addr, n, r, found);
	for (unsigned int i = 0; i < n; i++)
		diff_compare_lookup(d, addr[i], found[i], &r[i], "batch lookup");
	d->batches++;
}

static void diff_find(struct diff *d, tkey key, unsigned int plen)
{
	struct fib_route r[TRIE_LEAF_MAX];
	struct addr_prefix p;
	unsigned int n;
	uint64_t v = 0;
	int want;

	tt_prefix(d->tt, key, plen, &p);
	want = ref_get(d->ref, &p, &v);
	n = tt_find(d->tt, key, plen, r, TRIE_LEAF_MAX);
	if (n != (want ? ref_value_count(v) : 0))
		fail_msg("op %lu: find %s: %u routes, reference %u", d->op,
			 tt_str(d->tt, key, (int)plen), n, want ? ref_value_count(v) : 0);
	for (unsigned int i = 0; i < n; i++) {
		if (!route_is(&r[i], plen, ref_value_metric(v) + i))
			fail_msg("op %lu: find %s: route %u is /%u metric %u, expected metric %u",
				 d->op, tt_str(d->tt, key, (int)plen), i, r[i].plen, r[i].metric,
				 ref_value_metric(v) + i);
	}
	d->finds++;
}

/* Edits the trie must refuse without calling back and without changing anything. */
static void diff_rejected(struct diff *d)
{
	struct set_ctx c = { .n = 1, .metric = 7 };
	unsigned int bits = d->tt->bits, plen;
	tkey key;
	int ret;

	wl_prefix(&d->w, &key, &plen);
	if (plen < bits) {
		/* One host bit past the prefix. */
		tkey host = (tkey)1 << wl_below(&d->w, bits - plen);

		ret = tt_edit(d->tt, key | host, plen, set_routes, &c);
		if (ret != -EINVAL || c.calls)
			fail_msg("op %lu: edit %s with host bits: %d (calls %u), expected -EINVAL",
				 d->op, tt_str(d->tt, key | host, (int)plen), ret, c.calls);
	}
	/* A callback error on a random prefix, present or not. */
	c.ret = -EIO;
	ret = tt_edit(d->tt, key, plen, set_routes, &c);
	if (ret != -EIO)
		fail_msg("op %lu: edit %s with a failing callback: %d, expected -EIO", d->op,
			 tt_str(d->tt, key, (int)plen), ret);
	assert_int_equal(tt_routes(d->tt), d->routes);
	diff_find(d, key, plen);
	d->rejected++;
}

struct walk_leaf {
	tkey key;
	unsigned int n;
};

static int walk_leaf_cmp(const void *a, const void *b)
{
	const struct walk_leaf *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/*
 * Visits every leaf with next_rcu and checks each prefix against the
 * reference; returns the leaves in key order, for the next_rcu probes.
 */
static struct walk_leaf *diff_walk(struct diff *d, size_t *n_leaves)
{
	struct fib_route r[TRIE_LEAF_MAX];
	struct walk_leaf *leaf = NULL;
	size_t n = 0, cap = 0;
	uint64_t prefixes = 0, routes = 0;
	tkey from = 0, key, prev = 0;
	unsigned int nr;

	while (tt_next(d->tt, from, &key, r, &nr) == 0) {
		if (n && key <= prev)
			fail_msg("walk: key %s after %s, not ascending", tt_str(d->tt, key, -1),
				 tt_str(d->tt, prev, -1));
		if (key < from || nr == 0 || nr > TRIE_LEAF_MAX)
			fail_msg("walk from %s: key %s with %u routes", tt_str(d->tt, from, -1),
				 tt_str(d->tt, key, -1), nr);
		for (unsigned int i = 0; i < nr;) {
			unsigned int plen = r[i].plen, j = i;
			struct addr_prefix p;
			uint64_t v = 0;

			while (j < nr && r[j].plen == plen)
				j++;
			if (j < nr && r[j].plen > plen)
				fail_msg("walk: %s: /%u after /%u, not longest first",
					 tt_str(d->tt, key, -1), r[j].plen, plen);
			if (plen > d->tt->bits || tt_mask(d->tt, key, plen) != key)
				fail_msg("walk: leaf %s holds /%u", tt_str(d->tt, key, -1), plen);
			tt_prefix(d->tt, key, plen, &p);
			if (!ref_get(d->ref, &p, &v))
				fail_msg("walk: %s in the trie, not in the reference",
					 tt_str(d->tt, key, (int)plen));
			if (j - i != ref_value_count(v))
				fail_msg("walk: %s has %u routes, reference %u",
					 tt_str(d->tt, key, (int)plen), j - i, ref_value_count(v));
			for (unsigned int k = i; k < j; k++) {
				if (!route_is(&r[k], plen, ref_value_metric(v) + (k - i)))
					fail_msg("walk: %s route %u metric %u, expected %u",
						 tt_str(d->tt, key, (int)plen), k - i, r[k].metric,
						 ref_value_metric(v) + (k - i));
			}
			prefixes++;
			routes += j - i;
			i = j;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			leaf = realloc(leaf, cap * sizeof(*leaf));
			assert_non_null(leaf);
		}
		leaf[n++] = (struct walk_leaf){ key, nr };
		prev = key;
		if (key == tt_all_ones(d->tt))
			break;
		from = key + 1;
	}
	/* Every visited prefix is in the reference and distinct: equal counts make equal sets. */
	if (prefixes != ref_count(d->ref) || routes != d->routes || n != ref_count(d->keys))
		fail_msg("walk: %zu leaves, %llu prefixes, %llu routes; reference %llu, %llu, %llu",
			 n, (unsigned long long)prefixes, (unsigned long long)routes,
			 (unsigned long long)ref_count(d->keys),
			 (unsigned long long)ref_count(d->ref), (unsigned long long)d->routes);
	d->walks++;
	*n_leaves = n;
	return leaf;
}

/* next_rcu from arbitrary points must land on the first leaf at or above them. */
static void diff_probe_next(struct diff *d, const struct walk_leaf *leaf, size_t n)
{
	struct fib_route r[TRIE_LEAF_MAX];

	for (unsigned int i = 0; i < 64; i++) {
		tkey from = wl_addr(&d->w), key = 0;
		struct walk_leaf want = { from, 0 };
		const struct walk_leaf *lb;
		unsigned int nr = 0;
		size_t lo = 0, hi = n;
		int ret;

		if (n && i % 2) {
			/* Right at, just past or just before a leaf. */
			from = leaf[wl_below(&d->w, (unsigned int)n)].key;
			from = (from + wl_below(&d->w, 3) - 1) & tt_all_ones(d->tt);
			want.key = from;
		}
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (walk_leaf_cmp(&leaf[mid], &want) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		lb = lo < n ? &leaf[lo] : NULL;
		ret = tt_next(d->tt, from, &key, r, &nr);
		if (!lb && ret != -ENOENT)
			fail_msg("next from %s: %d key %s, expected -ENOENT",
				 tt_str(d->tt, from, -1), ret, tt_str(d->tt, key, -1));
		if (lb && (ret || key != lb->key || nr != lb->n))
			fail_msg("next from %s: %d key %s (%u routes), expected %s (%u)",
				 tt_str(d->tt, from, -1), ret, tt_str(d->tt, key, -1), nr,
				 tt_str(d->tt, lb->key, -1), lb->n);
	}
}

/* Memory of the trie as the allocator sees it, once nothing waits for a grace period. */
static void diff_check_memory(struct diff *d, const struct trie_stats *st)
{
	struct mem_stats ms;

	reclaim_barrier(d->f->rc);
	mem_get_stats(d->f->m, &ms);
	if (ms.cls[MEM_LEAF].bytes != st->leaf_bytes ||
	    ms.cls[MEM_TNODE].bytes != st->tnode_bytes ||
	    ms.cls[MEM_FALLBACK].bytes != st->fallback_bytes)
		fail_msg("op %lu: allocator holds leaf %llu tnode %llu fallback %llu bytes; the "
			 "trie "
			 "has %llu, %llu, %llu",
			 d->op, (unsigned long long)ms.cls[MEM_LEAF].bytes,
			 (unsigned long long)ms.cls[MEM_TNODE].bytes,
			 (unsigned long long)ms.cls[MEM_FALLBACK].bytes,
			 (unsigned long long)st->leaf_bytes, (unsigned long long)st->tnode_bytes,
			 (unsigned long long)st->fallback_bytes);
	/* Inline leaves have no object of their own; the routes they share have one each. */
	if (ms.cls[MEM_LEAF].objects != st->leaves - st->inline_leaves + st->shared_routes ||
	    ms.cls[MEM_TNODE].objects != st->tnodes)
		fail_msg("op %lu: allocator holds %llu leaf objects %llu tnodes; the trie has %llu "
			 "leaves (%llu inline, %llu shared routes), %llu tnodes",
			 d->op, (unsigned long long)ms.cls[MEM_LEAF].objects,
			 (unsigned long long)ms.cls[MEM_TNODE].objects,
			 (unsigned long long)st->leaves, (unsigned long long)st->inline_leaves,
			 (unsigned long long)st->shared_routes, (unsigned long long)st->tnodes);
}

/* Everything checkable at a batch boundary. */
static void diff_check_all(struct diff *d, int with_memory)
{
	struct trie_stats st;
	struct walk_leaf *leaf;
	uint64_t by_bits = 0;
	size_t n;

	assert_trie_ok(d->tt);
	tt_stats(d->tt, &st);
	if (st.leaves != ref_count(d->keys) || st.prefixes != ref_count(d->ref) ||
	    st.routes != d->routes || tt_routes(d->tt) != d->routes)
		fail_msg("op %lu: stats %llu leaves %llu prefixes %llu routes (count %llu); "
			 "reference %llu, %llu, %llu",
			 d->op, (unsigned long long)st.leaves, (unsigned long long)st.prefixes,
			 (unsigned long long)st.routes, (unsigned long long)tt_routes(d->tt),
			 (unsigned long long)ref_count(d->keys),
			 (unsigned long long)ref_count(d->ref), (unsigned long long)d->routes);
	for (unsigned int b = 0; b <= TRIE_MAX_BITS; b++) {
		by_bits += st.nodes_by_bits[b];
		if (st.nodes_by_bits[b] && b > d->max_bits_seen)
			d->max_bits_seen = b;
	}
	assert_int_equal(by_bits, st.tnodes);
	assert_int_equal(st.nodes_by_bits[0], 0);
	/* Every node but the root fills one child slot. */
	if (st.leaves + st.tnodes)
		assert_int_equal(st.pointers - st.null_pointers, st.leaves + st.tnodes - 1);
	assert_true(st.total_depth >= st.leaves);
	if (st.prefixes > d->max_prefixes)
		d->max_prefixes = st.prefixes;
	if (st.tnodes > d->max_tnodes)
		d->max_tnodes = st.tnodes;
	leaf = diff_walk(d, &n);
	diff_probe_next(d, leaf, n);
	free(leaf);
	if (with_memory)
		diff_check_memory(d, &st);
}

#define CHECK_EVERY 10000

static unsigned long ops_scaled(unsigned long dflt)
{
	const char *s = getenv("LCFIB_LONG");

	return s && *s && strcmp(s, "0") != 0 ? 10 * dflt : dflt;
}

/*
 * Phases of mostly inserts and mostly deletes, of random lengths, so that
 * nodes inflate as regions fill and halve and collapse as they empty; now
 * and then a delete phase runs until the trie is empty.
 */
static void differential(struct fixture *f, unsigned long ops, uint64_t seed, uint64_t max_size,
			 bool inject)
{
	struct diff d = { .f = f, .tt = &f->tt, .inject = inject };
	unsigned long phase_end = 0, checks = 0;
	int inserting = 0, emptying = 0;

	wl_init(&d.w, &f->tt, seed);
	d.ref = ref_new(f->tt.family);
	d.keys = ref_new(f->tt.family);
	for (d.op = 0; d.op < ops; d.op++) {
		unsigned int r = wl_below(&d.w, 1000), plen;
		tkey key;

		if (d.op >= phase_end && !emptying) {
			inserting = !inserting;
			/* Now and then a long phase, for a larger trie. */
			phase_end = d.op + 500 + wl_below(&d.w, wl_below(&d.w, 4) ? 20000 : 120000);
			emptying = !inserting && wl_below(&d.w, 4) == 0;
		}
		if (inserting && ref_count(d.ref) >= max_size) {
			inserting = 0;
			phase_end = d.op + 500 + wl_below(&d.w, 30000);
		}
		if (emptying && d.n_live == 0) {
			assert_int_equal(ref_count(d.ref), 0);
			diff_check_all(&d, 1);
			d.emptied++;
			emptying = 0;
			phase_end = d.op;
		}
		if (r < (inserting ? 550u : 100u)) {
			unsigned int n = wl_below(&d.w, 8) ? 1 : 2 + wl_below(&d.w, 3);

			wl_prefix(&d.w, &key, &plen);
			diff_set(&d, key, plen, n, (uint32_t)(tdata_rng_next(&d.w.rng) >> 34));
		} else if (r < (inserting ? 650u : emptying ? 850u : 700u)) {
			if (d.n_live && (!inserting || r & 1)) {
				size_t i = wl_below(&d.w, (unsigned int)d.n_live);

				key = d.live[i].key;
				plen = d.live[i].plen;
				d.live[i] = d.live[--d.n_live];
			} else {
				wl_prefix(&d.w, &key, &plen);
			}
			diff_set(&d, key, plen, 0, 0);
		} else if (r < 900) {
			diff_lookup(&d);
		} else if (r < 970) {
			if (d.n_live && r & 1) {
				size_t i = wl_below(&d.w, (unsigned int)d.n_live);

				diff_find(&d, d.live[i].key, d.live[i].plen);
			} else {
				wl_prefix(&d.w, &key, &plen);
				diff_find(&d, key, plen);
			}
		} else if (r < 995) {
			diff_rejected(&d);
		} else {
			diff_batch(&d);
		}
		if ((d.op + 1) % CHECK_EVERY == 0)
			diff_check_all(&d, ++checks % 8 == 0);
	}
	diff_check_all(&d, 1);
	/* However the phases fell, end empty: every leaf and node must go. */
	while (d.n_live) {
		d.n_live--;
		diff_set(&d, d.live[d.n_live].key, d.live[d.n_live].plen, 0, 0);
	}
	assert_int_equal(ref_count(d.ref), 0);
	assert_int_equal(tt_routes(d.tt), 0);
	diff_check_all(&d, 1);
	print_message("  %lu ops: %lu sets %lu dels %lu lookups %lu finds %lu batches %lu "
		      "rejected; up to %llu prefixes %llu tnodes, widest node %u bits; "
		      "emptied %u times\n",
		      ops, d.sets, d.dels, d.lookups, d.finds, d.batches, d.rejected,
		      (unsigned long long)d.max_prefixes, (unsigned long long)d.max_tnodes,
		      d.max_bits_seen, d.emptied);
	if (inject) {
		print_message("  out of memory: %lu edits failed and were made again, %lu "
			      "resizes or fallbacks went without\n",
			      d.enomem, d.resize_failed);
		assert_true(d.enomem > ops / 50 && d.resize_failed > ops / 500);
	}
	/* The workload must have reached the shapes it is meant to test. */
	assert_true(d.max_bits_seen >= 4);
	assert_true(d.sets > ops / 10 && d.dels > ops / 20 && d.lookups > ops / 10);
	free(d.live);
	ref_free(d.keys);
	ref_free(d.ref);
}

static void test_trie_differential_v4(void **state)
{
	differential(*state, ops_scaled(1200000), tdata_seed(20240404), 60000, false);
}

static void test_trie_differential_v6(void **state)
{
	differential(*state, ops_scaled(800000), tdata_seed(20240606) ^ 0x6, 60000, false);
}

/* The differential with every edit out of memory first (see diff_edit()). */
static void test_trie_out_of_memory_leaves_trie_whole_v4(void **state)
{
	differential(*state, ops_scaled(200000), tdata_seed(20241204), 4000, true);
}

static void test_trie_out_of_memory_leaves_trie_whole_v6(void **state)
{
	differential(*state, ops_scaled(200000), tdata_seed(20241206) ^ 0x6, 4000, true);
}

/* ---------------------------------------------------------------- edges */

/* Keys from text, for readable edge tests. */
static tkey K(const struct tt *tt, const char *s)
{
	struct addr a;
	struct errbuf err;

	if (addr_parse(s, tt->family, &a, &err))
		fail_msg("bad test address %s: %s", s, err.msg);
	return tt->family == AF_INET ? (tkey)addr_key4(&a) : addr_key6(&a);
}

static void expect_find(const struct tt *tt, tkey key, unsigned int plen, unsigned int n,
			uint32_t metric)
{
	struct fib_route r[TRIE_LEAF_MAX];
	unsigned int got = tt_find(tt, key, plen, r, TRIE_LEAF_MAX);

	if (got != n)
		fail_msg("find %s: %u routes, expected %u", tt_str(tt, key, (int)plen), got, n);
	for (unsigned int i = 0; i < n; i++) {
		if (!route_is(&r[i], plen, metric + i))
			fail_msg("find %s: route %u is /%u metric %u, expected metric %u",
				 tt_str(tt, key, (int)plen), i, r[i].plen, r[i].metric, metric + i);
	}
}

static void test_trie_empty_finds_nothing(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	struct fib_route r[TRIE_LEAF_MAX];
	struct trie_stats st;
	unsigned int n;
	tkey key;
	FILE *fp;

	expect_lookup(tt, 0, -1, 0);
	expect_lookup(tt, tt_all_ones(tt), -1, 0);
	assert_int_equal(tt_find(tt, 0, 0, r, TRIE_LEAF_MAX), 0);
	assert_int_equal(tt_next(tt, 0, &key, r, &n), -ENOENT);
	tt_stats(tt, &st);
	assert_int_equal(st.leaves + st.tnodes + st.prefixes + st.routes + st.pointers, 0);
	assert_int_equal(tt_routes(tt), 0);
	assert_trie_ok(tt);
	/* Deleting what is not there changes nothing. */
	assert_int_equal(tt_del(tt, 0, 0), 0);
	assert_int_equal(tt_routes(tt), 0);
	fp = tmpfile();
	assert_non_null(fp);
	tt_dump(tt, fp);
	assert_int_equal(ftell(fp), 0);
	fclose(fp);
}

/* Longest first, down a chain of nested prefixes, some on one key. */
static void test_trie_backtracks_to_shorter_prefix(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	int v4 = tt->family == AF_INET;
	/* Nested prefixes: IPv4 as written, IPv6 as 2001:db8 + the same bytes. */
	const char *p8 = v4 ? "10.0.0.0" : "2001:db8::";
	const char *p16 = v4 ? "10.1.0.0" : "2001:db8:100::";
	const char *p24 = v4 ? "10.1.1.0" : "2001:db8:101::";
	const char *p25 = v4 ? "10.1.1.128" : "2001:db8:101:8000::";
	unsigned int l8 = v4 ? 8 : 32, l16 = v4 ? 16 : 40, l24 = v4 ? 24 : 48, l25 = v4 ? 25 : 49;

	assert_int_equal(tt_set(tt, K(tt, p8), l8, 1, 8), 0);
	assert_int_equal(tt_set(tt, K(tt, p16), l16, 1, 16), 0);
	assert_int_equal(tt_set(tt, K(tt, p24), l24, 1, 24), 0);
	assert_int_equal(tt_set(tt, K(tt, p25), l25, 1, 25), 0);
	/* Two more prefixes on the key of the shortest: one leaf holds three. */
	assert_int_equal(tt_set(tt, K(tt, p8), l16, 1, 160), 0);
	assert_int_equal(tt_set(tt, K(tt, p8), l24, 1, 240), 0);
	assert_trie_ok(tt);

	expect_lookup(tt, K(tt, v4 ? "10.1.1.200" : "2001:db8:101:c000::1"), (int)l25, 25);
	expect_lookup(tt, K(tt, v4 ? "10.1.1.5" : "2001:db8:101:7fff::1"), (int)l24, 24);
	expect_lookup(tt, K(tt, v4 ? "10.1.2.3" : "2001:db8:102::1"), (int)l16, 16);
	expect_lookup(tt, K(tt, v4 ? "10.2.0.0" : "2001:db8:200::"), (int)l8, 8);
	expect_lookup(tt, K(tt, v4 ? "10.0.0.5" : "2001:db8::5"), (int)l24, 240);
	expect_lookup(tt, K(tt, v4 ? "10.0.1.5" : "2001:db8:1::5"), (int)l16, 160);
	expect_lookup(tt, K(tt, v4 ? "10.255.255.255" : "2001:db8:ffff:ffff::"), (int)l8, 8);
	expect_lookup(tt, K(tt, v4 ? "11.0.0.0" : "2001:db9::"), -1, 0);
	expect_lookup(tt, K(tt, v4 ? "9.255.255.255" : "2001:db7:ffff::"), -1, 0);

	/* Without the /16 the /8 covers it; without the middle prefix of the shared leaf too. */
	assert_int_equal(tt_del(tt, K(tt, p16), l16), 0);
	assert_int_equal(tt_del(tt, K(tt, p8), l16), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, K(tt, v4 ? "10.1.2.3" : "2001:db8:102::1"), (int)l8, 8);
	expect_lookup(tt, K(tt, v4 ? "10.0.1.5" : "2001:db8:1::5"), (int)l8, 8);
	expect_lookup(tt, K(tt, v4 ? "10.0.0.5" : "2001:db8::5"), (int)l24, 240);
	expect_lookup(tt, K(tt, v4 ? "10.1.1.5" : "2001:db8:101:7fff::1"), (int)l24, 24);
	expect_find(tt, K(tt, p8), l16, 0, 0);
	expect_find(tt, K(tt, p8), l24, 1, 240);
	expect_find(tt, K(tt, p8), l8, 1, 8);
}

/*
 * A lookup that finds nothing below the root takes its answer from the
 * root's fallbacks (lib/trie-tmpl.h, struct root_fb). They must follow
 * every change of a prefix short enough to be named there -- added,
 * replaced, removed, on a key shared with longer prefixes, the default
 * route -- and the root's own changes; the check compares every entry with
 * its definition after each step.
 */
static void test_trie_root_fallbacks_follow_short_prefixes(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	int v4 = tt->family == AF_INET;
	/* 10/8 (2001:db8::/32) holds 4096 long prefixes, one every 2^-12 of it. */
	tkey base = K(tt, v4 ? "10.0.0.0" : "2001:db8::");
	unsigned int lb = v4 ? 8 : 32, ll = lb + 16, sh = tt->bits - lb - 12;
	tkey outside = K(tt, v4 ? "11.0.0.1" : "2001:db9::1");
	/* Two prefixes with the top bit set, so that the root has no skipped bits. */
	tkey high = K(tt, v4 ? "200.1.0.0" : "fc00:1::"),
	     high_out = K(tt, v4 ? "240.2.0.0" : "fe00:2::");
	unsigned int lh = v4 ? 16 : 32;
	struct trie_stats st;

	for (unsigned int i = 0; i < 4096; i++)
		assert_int_equal(tt_set(tt, base | (tkey)i << sh, ll, 1, 24), 0);
	assert_trie_ok(tt);
	tt_stats(tt, &st);
	assert_true(st.fallback_bytes > 0);

	/* Probes between the long prefixes: in the second half of each 2^-12. */
#define PROBE(i) (base | (tkey)(i) << sh | (tkey)1 << (sh - 1))
#define EXPECT_ALL(lo_plen, lo_metric, hi_plen, hi_metric)                                         \
	do {                                                                                       \
		assert_trie_ok(tt);                                                                \
		for (unsigned int i = 0; i < 4096; i += 7) {                                       \
			expect_lookup(tt, base | (tkey)i << sh, (int)ll, 24);                      \
			if (i < 256)                                                               \
				expect_lookup(tt, PROBE(i), lo_plen, lo_metric);                   \
			else                                                                       \
				expect_lookup(tt, PROBE(i), hi_plen, hi_metric);                   \
		}                                                                                  \
	} while (0)

	EXPECT_ALL(-1, 0, -1, 0);
	/* The /8 (/32), then a /12 (/36) over the first 256. */
	assert_int_equal(tt_set(tt, base, lb, 1, 8), 0);
	EXPECT_ALL((int)lb, 8, (int)lb, 8);
	assert_int_equal(tt_set(tt, base, lb + 4, 1, 12), 0);
	EXPECT_ALL((int)lb + 4, 12, (int)lb, 8);
	/* Replaced: the leaf of all three is new. */
	assert_int_equal(tt_set(tt, base, lb, 1, 80), 0);
	EXPECT_ALL((int)lb + 4, 12, (int)lb, 80);
	/* None of the root's empty slots holds its answer: the root has skipped bits. */
	tt_stats(tt, &st);
	assert_int_equal(st.root_answers, 0);
	/* The default route changes the root: the fallbacks are made anew. */
	assert_int_equal(tt_set(tt, 0, 0, 1, 1), 0);
	expect_lookup(tt, outside, 0, 1);
	EXPECT_ALL((int)lb + 4, 12, (int)lb, 80);
	/*
	 * A prefix in the upper half: the root has no skipped bit any more, and
	 * answers for its empty children in their slots. One of its children
	 * comes where such an answer was, and goes again.
	 */
	assert_int_equal(tt_set(tt, high, lh, 1, 2), 0);
	tt_stats(tt, &st);
	assert_true(st.root_answers > 0);
	expect_lookup(tt, high, (int)lh, 2);
	expect_lookup(tt, high_out, 0, 1);
	EXPECT_ALL((int)lb + 4, 12, (int)lb, 80);
	assert_int_equal(tt_set(tt, high_out, lh, 1, 3), 0);
	expect_lookup(tt, high_out, (int)lh, 3);
	EXPECT_ALL((int)lb + 4, 12, (int)lb, 80);
	/* Bulk mode empties those slots with the fallbacks (no answer there stays right); its end
	 * fills them. */
	tt_set_bulk(tt, true);
	assert_trie_ok(tt);
	assert_int_equal(tt_del(tt, high_out, lh), 0);
	expect_lookup(tt, high_out, 0, 1);
	tt_set_bulk(tt, false);
	tt_stats(tt, &st);
	assert_true(st.root_answers > 0);
	assert_int_equal(tt_del(tt, high, lh), 0);
	expect_lookup(tt, high, 0, 1);
	EXPECT_ALL((int)lb + 4, 12, (int)lb, 80);
	/* A prefix on the shared key goes; the others stay named. */
	assert_int_equal(tt_del(tt, base, lb), 0);
	EXPECT_ALL((int)lb + 4, 12, 0, 1);
	assert_int_equal(tt_del(tt, base, lb + 4), 0);
	EXPECT_ALL(0, 1, 0, 1);
	assert_int_equal(tt_del(tt, 0, 0), 0);
	expect_lookup(tt, outside, -1, 0);
	EXPECT_ALL(-1, 0, -1, 0);
	/* In bulk mode there are none; its end builds them. */
	tt_set_bulk(tt, true);
	assert_int_equal(tt_set(tt, base, lb, 1, 8), 0);
	tt_stats(tt, &st);
	assert_int_equal(st.fallback_bytes, 0);
	assert_int_equal(st.root_answers, 0);
	EXPECT_ALL((int)lb, 8, (int)lb, 8);
	tt_set_bulk(tt, false);
	tt_stats(tt, &st);
	assert_true(st.fallback_bytes > 0);
	EXPECT_ALL((int)lb, 8, (int)lb, 8);
#undef EXPECT_ALL
#undef PROBE
}

/*
 * An empty child holds its answer (lib/trie-tmpl.h, SLOT_ROUTE): the
 * longest prefix in its node's subtree that covers it. Every change that
 * can move one -- a covering prefix added, replaced or removed, a child
 * going or coming, nodes made by a split or a resize, bulk mode -- must
 * set it again before a reader can see it wrong; the check compares each
 * one with exact-key finds after every step.
 */
static void test_trie_empty_children_hold_their_answers(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	int v4 = tt->family == AF_INET;
	tkey base = K(tt, v4 ? "10.0.0.0" : "2001:db8::");
	unsigned int ll = v4 ? 24 : 56, lb = ll - 2, sh = tt->bits - ll;
	struct trie_stats st;
#define AT(i) (base | (tkey)(i) << sh | 5)

	/*
	 * Sixteen /24s (/56s) but the third, and a /22 (/54) over the first
	 * four; a prefix elsewhere, so that their node is not the root (which
	 * inflates sooner) and indexes them by their own bits: /24s alone in
	 * their children.
	 */
	assert_int_equal(tt_set(tt, K(tt, v4 ? "192.168.0.0" : "2001:db9::"), v4 ? 16 : 32, 1, 16),
			 0);
	for (unsigned int i = 0; i < 16; i++)
		if (i != 2)
			assert_int_equal(tt_set(tt, base | (tkey)i << sh, ll, 1, 24), 0);
	assert_int_equal(tt_set(tt, base, lb, 1, 22), 0);
	assert_trie_ok(tt);
	tt_stats(tt, &st);
	assert_true(st.answers > 0);
	expect_lookup(tt, AT(2), (int)lb, 22);
	/* Children go: their slots get the /22, or nothing past it. */
	assert_int_equal(tt_del(tt, base | (tkey)3 << sh, ll), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, AT(3), (int)lb, 22);
	assert_int_equal(tt_del(tt, base | (tkey)9 << sh, ll), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, AT(9), -1, 0);
	/* The /22 replaced, a /23 under it, the /22 gone: the answers follow. */
	assert_int_equal(tt_set(tt, base, lb, 1, 44), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, AT(2), (int)lb, 44);
	assert_int_equal(tt_set(tt, base | (tkey)2 << sh, ll - 1, 1, 23), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, AT(3), (int)ll - 1, 23);
	assert_int_equal(tt_del(tt, base, lb), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, AT(1), (int)ll, 24);
	expect_lookup(tt, AT(3), (int)ll - 1, 23);
	/* A child comes where an answer was; the /23's key gets its /24 too. */
	assert_int_equal(tt_set(tt, base | (tkey)3 << sh, ll, 1, 3), 0);
	assert_int_equal(tt_set(tt, base | (tkey)2 << sh, ll, 1, 2), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, AT(3), (int)ll, 3);
	expect_lookup(tt, AT(2), (int)ll, 2);
	/* Most of them go (the node halves), then come back (it inflates). */
	for (unsigned int i = 4; i < 16; i++)
		if (i != 9)
			assert_int_equal(tt_del(tt, base | (tkey)i << sh, ll), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, AT(5), -1, 0);
	for (unsigned int i = 4; i < 16; i++)
		assert_int_equal(tt_set(tt, base | (tkey)i << sh, ll, 1, 24), 0);
	assert_int_equal(tt_set(tt, base | (tkey)8 << sh, ll - 3, 1, 21), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, AT(9), (int)ll, 24);
	/* Bulk mode keeps them right; its end's resize makes them anew. */
	tt_set_bulk(tt, true);
	assert_int_equal(tt_del(tt, base | (tkey)10 << sh, ll), 0);
	assert_int_equal(tt_set(tt, base | (tkey)12 << sh, ll - 2, 1, 22), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, AT(10), (int)ll - 3, 21);
	tt_set_bulk(tt, false);
	assert_trie_ok(tt);
	expect_lookup(tt, AT(10), (int)ll - 3, 21);
	expect_lookup(tt, AT(13), (int)ll, 24);
#undef AT
}

/*
 * Lookups descend on the index bits alone and compare skipped bits only at
 * the leaf they reach (lib/trie-tmpl.h, lookup_fast()): keys that
 * differ from a node's skipped bits must still get the kernel's answer,
 * whether the leaf reached covers them (a short prefix down the child-0
 * chain), covers nothing (backtracking finds a shorter prefix), or nothing
 * covers them at all.
 */
static void test_trie_lookup_across_skipped_bits(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	int v4 = tt->family == AF_INET;
	/* 10/8 (2001:db8::/32) on the key of 10.0.0.0/24; 10.0.1.0/24 and 10.0.1.128/25 beside. */
	const char *p0 = v4 ? "10.0.0.0" : "2001:db8::";
	const char *p1 = v4 ? "10.0.1.0" : "2001:db8:0:100::";
	const char *p2 = v4 ? "10.0.1.128" : "2001:db8:0:180::";
	unsigned int l8 = v4 ? 8 : 32, l24 = v4 ? 24 : 56, l25 = v4 ? 25 : 57;

	assert_int_equal(tt_set(tt, K(tt, p0), l8, 1, 8), 0);
	assert_int_equal(tt_set(tt, K(tt, p0), l24, 1, 24), 0);
	assert_int_equal(tt_set(tt, K(tt, p1), l24, 1, 124), 0);
	assert_int_equal(tt_set(tt, K(tt, p2), l25, 1, 125), 0);
	assert_trie_ok(tt);
	/* Inside the /24s and the /25, and the skipped bits equal: plain descents. */
	expect_lookup(tt, K(tt, v4 ? "10.0.0.9" : "2001:db8::9"), (int)l24, 24);
	expect_lookup(tt, K(tt, v4 ? "10.0.1.9" : "2001:db8:0:17f::9"), (int)l24, 124);
	expect_lookup(tt, K(tt, v4 ? "10.0.1.200" : "2001:db8:0:1c0::1"), (int)l25, 125);
	/* Skipped bits differ; the index bits lead to 10.0.0.0, whose /8 covers. */
	expect_lookup(tt, K(tt, v4 ? "10.7.0.9" : "2001:db8:7:0::9"), (int)l8, 8);
	/* Skipped bits differ; the index bits lead to the /24 or /25, which do not cover. */
	expect_lookup(tt, K(tt, v4 ? "10.7.1.9" : "2001:db8:7:100::9"), (int)l8, 8);
	expect_lookup(tt, K(tt, v4 ? "10.7.1.200" : "2001:db8:7:1c0::1"), (int)l8, 8);
	expect_lookup(tt, K(tt, v4 ? "10.0.2.1" : "2001:db8:0:200::1"), (int)l8, 8);
	/* Outside everything, with every index bit pattern. */
	expect_lookup(tt, K(tt, v4 ? "11.0.0.9" : "2001:db9::9"), -1, 0);
	expect_lookup(tt, K(tt, v4 ? "11.0.1.9" : "2001:db9:0:100::9"), -1, 0);
	expect_lookup(tt, K(tt, v4 ? "11.0.1.200" : "2001:db9:0:1c0::1"), -1, 0);
	/* The /8 gone: the same keys now have no answer, even where a leaf is reached. */
	assert_int_equal(tt_del(tt, K(tt, p0), l8), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, K(tt, v4 ? "10.7.0.9" : "2001:db8:7:0::9"), -1, 0);
	expect_lookup(tt, K(tt, v4 ? "10.7.1.200" : "2001:db8:7:1c0::1"), -1, 0);
	expect_lookup(tt, K(tt, v4 ? "10.0.0.9" : "2001:db8::9"), (int)l24, 24);
}

/*
 * Bulk mode with unsorted input: inserts that walk deep resize their path
 * at once (BULK_WALK_MAX in lib/trie-tmpl.h), and once the input shows
 * itself unsorted every insert does (BULK_UNSORTED_MIN), so the trie stays
 * shallow while bulk mode lasts instead of growing a binary trie that
 * every later insert walks down; lookups stay right, and after the end too.
 */
static void test_trie_unsorted_bulk_load_stays_shallow(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	int v4 = tt->family == AF_INET;
	unsigned int plen = v4 ? 24 : 48, shift = tt->bits - plen;
	struct tdata_rng rng;
	struct trie_stats st;
	tkey keys[64];

	tdata_rng_seed(&rng, tdata_seed(11));
	if (v4)
		trie4_set_bulk(tt->t4, true);
	else
		trie6_set_bulk(tt->t6, true);
	for (unsigned int i = 0; i < 20000; i++) {
		tkey key = ((tkey)tdata_rng_next(&rng) % ((tkey)1 << plen)) << shift;

		assert_int_equal(tt_set(tt, key, plen, 1, 1 + i % 1000), 0);
		if (i < 64)
			keys[i] = key;
	}
	assert_trie_ok(tt);
	if (v4) {
		trie4_get_stats(tt->t4, &st);
		print_message("  20000 unsorted in bulk mode: average depth %.2f, max %u\n",
			      (double)st.total_depth / (double)st.leaves, st.max_depth);
		/* A binary trie of 20000 random keys: average depth about 16, max over 30. */
		assert_true(st.total_depth < 10 * st.leaves);
	}
	for (unsigned int i = 0; i < 64; i++)
		expect_lookup(tt, keys[i] | 1, (int)plen, 1 + i % 1000);
	if (v4)
		trie4_set_bulk(tt->t4, false);
	else
		trie6_set_bulk(tt->t6, false);
	assert_trie_ok(tt);
	for (unsigned int i = 0; i < 64; i++)
		expect_lookup(tt, keys[i] | 1, (int)plen, 1 + i % 1000);
}

/* Orders prefixes by key, then length: the order of a sorted route file. */
static int live_cmp(const void *a, const void *b)
{
	const struct live *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->plen > y->plen) - (x->plen < y->plen);
}

/* The trie's shape, as its statistics tell it. */
static void assert_same_shape(const struct trie_stats *a, const struct trie_stats *b)
{
	assert_int_equal(a->tnodes, b->tnodes);
	assert_int_equal(a->leaves, b->leaves);
	assert_int_equal(a->total_depth, b->total_depth);
	assert_int_equal(a->null_pointers, b->null_pointers);
	for (unsigned int i = 0; i <= TRIE_MAX_BITS; i++)
		assert_int_equal(a->nodes_by_bits[i], b->nodes_by_bits[i]);
}

/*
 * The end of a bulk load that made at least half of the trie's leaves
 * builds the trie anew from them (rebuild() in lib/trie-tmpl.h) instead of
 * resizing it in place; on unsorted input, bulk mode turns eager and the
 * end has nothing left to do (BULK_UNSORTED_MIN). A load into a trie that
 * holds a fifth as much -- sorted, in four sorted runs, or shuffled; or
 * onto a fiftieth, two fifths sorted and the rest shuffled, so that wide
 * lazy nodes (BULK_NODE_BITS) are resized in place when the load turns
 * eager -- with several routes a prefix, replaces and deletes among the
 * adds and lookups between them: the reference's answers during the load
 * and after it, a sound trie, and one the in-place resize leaves as it is
 * (a bulk mode with no edits resizes every node: the shape stays); then a
 * small bulk load on top, which resizes in place.
 */
enum bulk_order { BULK_SORTED, BULK_RUNS, BULK_SHUFFLED, BULK_SORTED_SHUFFLED };

static void bulk_rebuild(struct fixture *f, enum bulk_order order, uint64_t seed, bool inject)
{
	static const char *const name[] = { "sorted", "in 4 sorted runs", "shuffled",
					    "sorted, then shuffled" };
	struct diff d = { .f = f, .tt = &f->tt, .inject = inject };
	/*
	 * A fifth of it under ThreadSanitizer, which runs it 30 times slower;
	 * half for sorted, then shuffled, whose shuffled part must still come
	 * below the key before BULK_UNSORTED_MIN times to turn eager.
	 */
#ifdef TDATA_UNDER_TSAN
	const size_t n = order == BULK_SORTED_SHUFFLED ? 12500 : 5000;
#else
	const size_t n = 25000;
#endif
	/* Sorted, then shuffled: onto a fiftieth, so that the sorted part makes most leaves. */
	const size_t pre = n / (order == BULK_SORTED_SHUFFLED ? 50 : 5);
	struct live *p = calloc(n, sizeof(*p));
	struct trie_stats st, again;
	uint64_t failed;

	assert_non_null(p);
	wl_init(&d.w, &f->tt, seed);
	d.ref = ref_new(f->tt.family);
	d.keys = ref_new(f->tt.family);
	for (size_t i = 0; i < pre; i++) {
		tkey key;
		unsigned int plen;

		wl_prefix(&d.w, &key, &plen);
		diff_set(&d, key, plen, 1, (uint32_t)i);
	}
	for (size_t i = 0; i < n; i++)
		wl_prefix(&d.w, &p[i].key, &p[i].plen);
	for (size_t i = 0; order != BULK_SHUFFLED && i < 4; i++)
		qsort(p + (order == BULK_RUNS ? i * n / 4 : 0), order == BULK_RUNS ? n / 4 : n,
		      sizeof(*p), live_cmp);
	/*
	 * Sorted, then shuffled: the sorted two fifths leave wide lazy nodes
	 * (see BULK_NODE_BITS); the shuffled rest turns the load eager, which
	 * resizes those in place.
	 */
	for (size_t i = n - 1; order == BULK_SORTED_SHUFFLED && i > 2 * n / 5; i--) {
		size_t j = 2 * n / 5 + wl_below(&d.w, (unsigned int)(i - 2 * n / 5 + 1));
		struct live x = p[i];

		p[i] = p[j];
		p[j] = x;
	}
	tt_set_bulk(d.tt, true);
	for (size_t i = 0; i < n; i++, d.op++) {
		unsigned int r = wl_below(&d.w, 100);

		if (order == BULK_SORTED_SHUFFLED && i == 2 * n / 5) {
			tt_stats(d.tt, &st);
			assert_true(st.nodes_by_bits[BULK_NODE_BITS] * 10 > st.tnodes);
		}

		diff_set(&d, p[i].key, p[i].plen, r < 10 ? 2 + r % 3 : 1, (uint32_t)(i + r));
		if (r < 3 && d.n_live) {
			size_t k = wl_below(&d.w, (unsigned int)d.n_live);

			diff_set(&d, d.live[k].key, d.live[k].plen, 0, 0);
			d.live[k] = d.live[--d.n_live];
		} else if (r < 6 && d.n_live) {
			size_t k = wl_below(&d.w, (unsigned int)d.n_live);

			diff_set(&d, d.live[k].key, d.live[k].plen, 1, (uint32_t)~i);
		}
		if (r < 20)
			diff_lookup(&d);
	}
	tt_stats(d.tt, &st);
	/*
	 * Sorted input leaves lazy nodes for the end: of 1 bit, and once the
	 * load made half the leaves, of up to BULK_NODE_BITS (a fifth or more
	 * of 1 bit here); unsorted input had them resized (no node of 1 bit).
	 */
	if (order == BULK_SHUFFLED || order == BULK_SORTED_SHUFFLED)
		assert_true(st.nodes_by_bits[1] * 10 < st.tnodes);
	else
		assert_true(st.nodes_by_bits[1] * 5 > st.tnodes);
	/*
	 * Out of memory at the end: one allocation of the build anew (sorted),
	 * or every one (in runs), fails. The build gives up, the resize in
	 * place does what it can, and the trie stays whole (lookups, the
	 * check, the memory). Then a bulk mode with no edits resizes it.
	 */
	failed = mem_failed(f->m);
	if (inject)
		mem_fail_after(f->m, wl_below(&d.w, 64), order == BULK_RUNS ? UINT64_MAX : 1);
	tt_set_bulk(d.tt, false);
	if (inject) {
		mem_fail_after(f->m, 0, 0);
		print_message("  out of memory: %lu edits failed and were made again; %llu "
			      "allocations of the end failed\n",
			      d.enomem, (unsigned long long)(mem_failed(f->m) - failed));
		assert_true(d.enomem > 0 && mem_failed(f->m) > failed);
	}
	diff_check_all(&d, 1);
	for (size_t i = 0; i < n; i++)
		diff_lookup(&d);
	if (inject) {
		tt_set_bulk(d.tt, true);
		tt_set_bulk(d.tt, false);
		diff_check_all(&d, 1);
	}
	tt_stats(d.tt, &st);
	tt_set_bulk(d.tt, true);
	tt_set_bulk(d.tt, false);
	assert_trie_ok(d.tt);
	tt_stats(d.tt, &again);
	assert_same_shape(&st, &again);
	print_message("  %zu %s in bulk mode on %zu: %llu leaves, %llu internal nodes, "
		      "average depth %.2f\n",
		      n, name[order], pre, (unsigned long long)st.leaves,
		      (unsigned long long)st.tnodes, (double)st.total_depth / (double)st.leaves);
	/* A small load on top: a tenth of the leaves, resized in place. */
	tt_set_bulk(d.tt, true);
	for (size_t i = 0; i < n / 10; i++, d.op++) {
		tkey key;
		unsigned int plen;

		wl_prefix(&d.w, &key, &plen);
		diff_set(&d, key, plen, 1, (uint32_t)i);
	}
	tt_set_bulk(d.tt, false);
	diff_check_all(&d, 1);
	for (size_t i = 0; i < n; i++)
		diff_lookup(&d);
	free(p);
	free(d.live);
	ref_free(d.keys);
	ref_free(d.ref);
}

static void test_trie_bulk_end_rebuilds_sorted_load(void **state)
{
	bulk_rebuild(*state, BULK_SORTED, tdata_seed(21), false);
}

static void test_trie_bulk_end_rebuilds_load_in_sorted_runs(void **state)
{
	bulk_rebuild(*state, BULK_RUNS, tdata_seed(23), false);
}

/* Bulk loads out of memory: their edits as diff_edit() makes them, and the end. */
static void test_trie_bulk_out_of_memory_leaves_trie_whole(void **state)
{
	bulk_rebuild(*state, BULK_SORTED, tdata_seed(31), true);
}

static void test_trie_bulk_end_with_no_memory_leaves_trie_whole(void **state)
{
	bulk_rebuild(*state, BULK_RUNS, tdata_seed(33), true);
}

/* One compaction of @d's trie (fib_mem_compact() without the trims): whether it was built anew. */
static bool diff_compact(struct diff *d)
{
	bool built;

	mem_evacuate_begin(d->f->m);
	built = tt_compact(d->tt);
	mem_evacuate_end(d->f->m);
	return built;
}

/*
 * Compaction (trie*_compact(), which fib_mem_compact() runs): a trie
 * edited one prefix at a time, a third of it deleted again, is built
 * anew, its leaves copied; every answer, the walk, the invariants and the
 * memory accounts stay the reference's, and the chunks the old trie held
 * go back. Out of memory at one of its allocations (copying the leaves,
 * or making the nodes), it gives up with the trie whole and nothing
 * leaked (diff_check_all() holds the allocator's counts to the trie's).
 */
static void test_trie_compact_moves_the_trie_and_gives_up_whole(void **state)
{
	struct fixture *f = *state;
	struct diff d = { .f = f, .tt = &f->tt };
#ifdef TDATA_UNDER_TSAN
	const size_t n = 5000;
#else
	const size_t n = 30000;
#endif
	struct trie_stats st, again;
	struct mem_stats before, after;
	uint64_t failed, released;

	wl_init(&d.w, &f->tt, tdata_seed(41));
	d.ref = ref_new(f->tt.family);
	d.keys = ref_new(f->tt.family);
	for (size_t i = 0; i < n; i++, d.op++) {
		tkey key;
		unsigned int plen;

		wl_prefix(&d.w, &key, &plen);
		diff_set(&d, key, plen, i % 7 ? 1 : 2, (uint32_t)i);
	}
	for (size_t i = 0; i < n / 3 && d.n_live; i++, d.op++) {
		size_t k = wl_below(&d.w, (unsigned int)d.n_live);

		diff_set(&d, d.live[k].key, d.live[k].plen, 0, 0);
		d.live[k] = d.live[--d.n_live];
	}
	diff_check_all(&d, 1);
	tt_stats(d.tt, &st);
	assert_true(st.leaves > st.inline_leaves && st.tnodes > 100);

	/* The k-th allocation fails: among the leaves' copies, then among the nodes. */
	failed = mem_failed(f->m);
	for (unsigned int i = 0; i < 4; i++) {
		uint64_t own = st.leaves - st.inline_leaves;
		uint64_t k = i < 2 ? wl_below(&d.w, (unsigned int)own)
				   : own + wl_below(&d.w, (unsigned int)st.tnodes);

		mem_fail_after(f->m, k, 1);
		assert_false(diff_compact(&d));
		mem_fail_after(f->m, 0, 0);
		diff_check_all(&d, 1);
		for (size_t j = 0; j < 2000; j++)
			diff_lookup(&d);
	}
	assert_int_equal(mem_failed(f->m), failed + 4);
	tt_stats(d.tt, &again);
	assert_same_shape(&st, &again);

	reclaim_barrier(f->rc);
	mem_trim(f->m);
	mem_get_stats(f->m, &before);
	assert_true(diff_compact(&d));
	reclaim_barrier(f->rc);
	/* The old chunks go back (in a malloc-only build there are none). */
	released = mem_trim(f->m);
	mem_get_stats(f->m, &after);
	print_message("  %llu leaves (%llu inline), %llu nodes: slab %llu bytes held, %llu free "
		      "before; %llu, %llu after\n",
		      (unsigned long long)st.leaves, (unsigned long long)st.inline_leaves,
		      (unsigned long long)st.tnodes, (unsigned long long)before.slab_bytes,
		      (unsigned long long)before.slab_free_bytes,
		      (unsigned long long)after.slab_bytes,
		      (unsigned long long)after.slab_free_bytes);
#ifndef LCFIB_MEM_MALLOC_ONLY
	assert_true(released > 0);
	assert_true(after.slab_free_bytes < before.slab_free_bytes);
#else
	(void)released;
#endif
	diff_check_all(&d, 1);
	for (size_t j = 0; j < n; j++)
		diff_lookup(&d);
	tt_stats(d.tt, &again);
	assert_int_equal(again.leaves, st.leaves);
	assert_int_equal(again.prefixes, st.prefixes);
	free(d.live);
	ref_free(d.keys);
	ref_free(d.ref);
}

static void test_trie_bulk_turns_eager_on_shuffled_load(void **state)
{
	bulk_rebuild(*state, BULK_SHUFFLED, tdata_seed(22), false);
}

static void test_trie_bulk_turns_eager_after_sorted_start(void **state)
{
	bulk_rebuild(*state, BULK_SORTED_SHUFFLED, tdata_seed(24), false);
}

/* The extremes: the default route, the all-ones host, and the zero host beside the default. */
/* ------------------------------------------- several inflate steps in one go */

/*
 * A trie of the fixture's family from tests/trie_stepwise.h, which inflates
 * one step at a time as the kernel does, with its own memory and
 * reclamation, so that what each trie retired can be told apart.
 */
struct stepwise {
	const struct tt *tt;
	struct mem *m;
	struct reclaim *rc;
	struct trie4s *t4;
	struct trie6s *t6;
};

static void stepwise_set(struct stepwise *s, const struct addr_prefix *p, bool del)
{
	struct tdata_edit e = { .metric = 1, .del = del };
	tkey key = s->tt->family == AF_INET ? (tkey)addr_key4(&p->a) : addr_key6(&p->a);

	assert_int_equal(tt_edit((struct tt *)s->tt, key, p->plen, tdata_edit_set, &e), 0);
	if (s->tt->family == AF_INET)
		assert_int_equal(trie4s_edit(s->t4, (uint32_t)key, p->plen, tdata_edit_set, &e), 0);
	else
		assert_int_equal(trie6s_edit(s->t6, key, p->plen, tdata_edit_set, &e), 0);
}

/* Both tries are sound and have one shape: the same nodes, depths, slots and answers. */
static void stepwise_same(const struct stepwise *s, const char *what)
{
	struct trie_stats a, b;
	struct errbuf err = { { 0 } };
	int ret;

	assert_trie_ok(s->tt);
	tt_stats(s->tt, &a);
	if (s->tt->family == AF_INET) {
		ret = trie4s_check(s->t4, &err);
		trie4s_get_stats(s->t4, &b);
	} else {
		ret = trie6s_check(s->t6, &err);
		trie6s_get_stats(s->t6, &b);
	}
	if (ret)
		fail_msg("stepwise trie check: %d: %s", ret, err.msg);
	assert_same_shape(&a, &b);
	assert_int_equal(a.answers, b.answers);
	assert_int_equal(a.root_answers, b.root_answers);
	assert_int_equal(a.tnode_bytes, b.tnode_bytes);
	print_message("  %s: %llu leaves, %llu internal nodes, average depth %.2f\n", what,
		      (unsigned long long)a.leaves, (unsigned long long)a.tnodes,
		      (double)a.total_depth / (double)a.leaves);
}

/*
 * The full view's prefixes of @tt's family, loaded into @t, and their
 * number in *@n: the first 40,000 under ThreadSanitizer (30 times slower),
 * whose keys already pass 16/8.
 */
static const struct addr_prefix *fullview_prefixes(const struct tt *tt, struct tdata_table *t,
						   size_t *n)
{
	assert_int_equal(tdata_load_fullview(t), 0);
	*n = tt->family == AF_INET ? t->n4 : t->n6;
#ifdef TDATA_UNDER_TSAN
	if (*n > 40000)
		*n = 40000;
#endif
	return tt->family == AF_INET ? t->v4 : t->v6;
}

/* Bytes retired so far (nodes and leaves). */
static uint64_t retired_bytes(struct reclaim *rc)
{
	struct reclaim_stats st;

	reclaim_barrier(rc);
	reclaim_get_stats(rc, &st);
	return st.retired_bytes;
}

/*
 * resize() makes the inflate steps a node takes in a row in one go
 * (census_unit() in lib/trie-tmpl.h); the kernel makes them one at a time.
 * Both must grow the same trie: the full view one route at a time in file
 * order (a node above the root's range comes in whenever the keys cross a
 * power of two, and inflates ten times in a row), then a random half
 * deleted (halves and collapses) and added back shuffled. Made in one go,
 * the steps retire a fifth fewer bytes or more (a third for IPv4, three
 * fifths for IPv6): else this test would not test them.
 */
static void test_trie_inflates_several_steps_as_one_at_a_time(void **state)
{
	struct fixture *f = *state;
	struct stepwise s = { .tt = &f->tt };
	struct tdata_table t = { 0 };
	const struct addr_prefix *v;
	struct tdata_rng r;
	uint64_t one_go, stepwise;
	uint32_t *idx;
	size_t n;

	v = fullview_prefixes(&f->tt, &t, &n);
	s.m = mem_new();
	assert_non_null(s.m);
	s.rc = reclaim_new(s.m);
	assert_non_null(s.rc);
	if (f->tt.family == AF_INET)
		s.t4 = trie4s_new(s.m, s.rc);
	else
		s.t6 = trie6s_new(s.m, s.rc);
	assert_true(s.t4 || s.t6);
	idx = malloc(n * sizeof(*idx));
	assert_non_null(idx);

	for (size_t i = 0; i < n; i++)
		stepwise_set(&s, &v[i], false);
	stepwise_same(&s, "the full view in file order");
	one_go = retired_bytes(f->rc);
	stepwise = retired_bytes(s.rc);
	print_message("  retired: %llu bytes in one go, %llu step by step\n",
		      (unsigned long long)one_go, (unsigned long long)stepwise);
	assert_true(one_go * 5 < stepwise * 4);

	tdata_rng_seed(&r, tdata_seed(20261206));
	for (size_t i = 0; i < n; i++)
		idx[i] = (uint32_t)i;
	tdata_shuffle32(idx, n, &r);
	for (size_t i = 0; i < n / 2; i++)
		stepwise_set(&s, &v[idx[i]], true);
	stepwise_same(&s, "a random half deleted");
	for (size_t i = n / 2; i-- > 0;)
		stepwise_set(&s, &v[idx[i]], false);
	stepwise_same(&s, "added back shuffled");

	free(idx);
	if (f->tt.family == AF_INET)
		trie4s_destroy(s.t4);
	else
		trie6s_destroy(s.t6);
	reclaim_destroy(s.rc);
	mem_destroy(s.m);
	tdata_free(&t);
}

/* ------------------------------------------- a build anew on two threads */

/* The full view's prefixes of the fixture's family as keys, sorted (fullview_prefixes()). */
static struct live *fullview_sorted(const struct fixture *f, struct tdata_table *t, size_t *n)
{
	const struct addr_prefix *v = fullview_prefixes(&f->tt, t, n);
	struct live *p = malloc(*n * sizeof(*p));

	assert_non_null(p);
	for (size_t i = 0; i < *n; i++) {
		p[i].key = f->tt.family == AF_INET ? (tkey)addr_key4(&v[i].a) : addr_key6(&v[i].a);
		p[i].plen = v[i].plen;
	}
	qsort(p, *n, sizeof(*p), live_cmp);
	return p;
}

/* A second trie of @tt's family beside the fixture's, with its own memory and reclamation. */
static void tt_open_apart(struct tt *tt, struct mem **m, struct reclaim **rc)
{
	*m = mem_new();
	assert_non_null(*m);
	*rc = reclaim_new(*m);
	assert_non_null(*rc);
	if (tt->family == AF_INET)
		tt->t4 = trie4_new(*m, *rc);
	else
		tt->t6 = trie6_new(*m, *rc);
	assert_true(tt->t4 || tt->t6);
}

/*
 * @a and @b give the same answer (the same prefix length) for @count
 * addresses: inside a prefix of @p (its host bits random), or anywhere.
 */
static void expect_same_answers(const struct tt *a, const struct tt *b, const struct live *p,
				size_t n, struct tdata_rng *r, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		const struct live *q = &p[tdata_rng_next(r) % n];
		tkey rnd = ((tkey)tdata_rng_next(r) << 64 | tdata_rng_next(r)) & tt_all_ones(a);
		tkey addr = i & 1 ? q->key | (rnd ^ tt_mask(a, rnd, q->plen)) : rnd;
		struct fib_route ra, rb;
		int fa = tt_lookup(a, addr, &ra), fb = tt_lookup(b, addr, &rb);

		assert_int_equal(fa, fb);
		if (fa)
			assert_int_equal(ra.plen, rb.plen);
	}
}

static void tt_close_apart(struct tt *tt, struct mem *m, struct reclaim *rc)
{
	if (tt->family == AF_INET)
		trie4_destroy(tt->t4);
	else
		trie6_destroy(tt->t6);
	reclaim_destroy(rc);
	mem_destroy(m);
}

/*
 * With two build threads (trie*_set_build_threads()), the end of a sorted
 * bulk load builds the upper half of the root's subtrees on a second
 * thread, its nodes from an arena (lib/mem.h), while the writer builds the
 * lower half. It must build the trie one thread builds: the full view
 * sorted (its first 40,000 prefixes under ThreadSanitizer), loaded in bulk
 * mode into the fixture's trie (one thread) and into a second trie with its
 * own memory (two); then the same nodes, answers and bytes, both sound, the
 * same answer for every address tried, and the same memory in each class.
 * A third of the prefixes first, then the rest on top: the second build
 * anew takes the first load's leaves in too.
 */
static void test_trie_builds_anew_on_two_threads_as_on_one(void **state)
{
	struct fixture *f = *state;
	struct tt two = { .family = f->tt.family, .bits = f->tt.bits };
	struct tdata_edit e = { .metric = 1 };
	struct tdata_table t = { 0 };
	struct trie_stats a, b;
	struct mem_stats ma, mb;
	struct tdata_rng r;
	struct live *p;
	struct mem *m;
	struct reclaim *rc;
	unsigned int split = trie_rebuild_split_min;
	size_t n;

	p = fullview_sorted(f, &t, &n);
	/* Both loads split, however many prefixes this is (the default asks for 16,384). */
	trie_rebuild_split_min = (unsigned int)(n / 8);
	tt_open_apart(&two, &m, &rc);
	if (two.family == AF_INET)
		trie4_set_build_threads(two.t4, 2);
	else
		trie6_set_build_threads(two.t6, 2);

	/* A third of the prefixes, then the rest on top: each load makes most of the leaves. */
	for (size_t half = 0; half < 2; half++) {
		tt_set_bulk(&f->tt, true);
		tt_set_bulk(&two, true);
		for (size_t i = 0; i < n; i++) {
			if ((i % 3 == 0) != (half == 0))
				continue;
			assert_int_equal(tt_edit(&f->tt, p[i].key, p[i].plen, tdata_edit_set, &e),
					 0);
			assert_int_equal(tt_edit(&two, p[i].key, p[i].plen, tdata_edit_set, &e), 0);
		}
		tt_set_bulk(&f->tt, false);
		tt_set_bulk(&two, false);
		assert_trie_ok(&f->tt);
		assert_trie_ok(&two);
		tt_stats(&f->tt, &a);
		tt_stats(&two, &b);
		assert_same_shape(&a, &b);
		assert_int_equal(a.answers, b.answers);
		assert_int_equal(a.root_answers, b.root_answers);
		assert_int_equal(a.tnode_bytes, b.tnode_bytes);
		assert_int_equal(a.split_builds, 0);
		assert_int_equal(b.split_builds, half + 1);
	}

	tdata_rng_seed(&r, tdata_seed(20261206));
	expect_same_answers(&f->tt, &two, p, n, &r, 200000);

	reclaim_barrier(f->rc);
	reclaim_barrier(rc);
	mem_get_stats(f->m, &ma);
	mem_get_stats(m, &mb);
	for (int c = 0; c < MEM_CLASS_MAX; c++) {
		assert_int_equal(ma.cls[c].objects, mb.cls[c].objects);
		assert_int_equal(ma.cls[c].bytes, mb.cls[c].bytes);
	}
	assert_int_equal(ma.live_bytes, mb.live_bytes);
	print_message("  %llu leaves, %llu internal nodes: the same on one thread and on two\n",
		      (unsigned long long)a.leaves, (unsigned long long)a.tnodes);

	tt_close_apart(&two, m, rc);
	free(p);
	tdata_free(&t);
	trie_rebuild_split_min = split;
}

/* ------------------------------------------------------ the root's size */

static int tt_set_root_threshold(struct tt *tt, unsigned int pct)
{
	if (tt->family == AF_INET)
		return trie4_set_root_threshold(tt->t4, pct);
	return trie6_set_root_threshold(tt->t6, pct);
}

/* The bits of the widest internal node: IPv4's root, on the full view. */
static unsigned int tt_widest_bits(const struct tt *tt)
{
	struct trie_stats st;

	tt_stats(tt, &st);
	return tdata_widest_bits(&st);
}

/*
 * trie*_set_root_threshold() in bulk mode takes effect at its end: the
 * full view sorted, loaded in bulk mode into the fixture's trie with the
 * threshold set to 10 % halfway, and into a second trie with the default
 * (TRIE_ROOT_THRESHOLD_DEFAULT). At the end the fixture's root is wider
 * (IPv4: 22 bits against 19; IPv6's widest node, 14 bits under a root of
 * 4, keeps its size), both tries are sound and answer alike. Set back to
 * the default outside bulk mode, the root shrinks at once to its size.
 */
static void test_trie_root_threshold_in_bulk_mode_waits_for_its_end(void **state)
{
	struct fixture *f = *state;
	struct tt plain = { .family = f->tt.family, .bits = f->tt.bits };
	struct tdata_edit e = { .metric = 1 };
	struct tdata_table t = { 0 };
	unsigned int wide, base;
	struct tdata_rng r;
	struct live *p;
	struct mem *m;
	struct reclaim *rc;
	size_t n;

	assert_int_equal(tt_set_root_threshold(&f->tt, TRIE_ROOT_THRESHOLD_MIN - 1), -EINVAL);
	assert_int_equal(tt_set_root_threshold(&f->tt, TRIE_ROOT_THRESHOLD_MAX + 1), -EINVAL);
	p = fullview_sorted(f, &t, &n);
	tt_open_apart(&plain, &m, &rc);

	tt_set_bulk(&f->tt, true);
	tt_set_bulk(&plain, true);
	for (size_t i = 0; i < n; i++) {
		if (i == n / 2) {
			unsigned int before = tt_widest_bits(&f->tt);

			assert_int_equal(tt_set_root_threshold(&f->tt, 10), 0);
			assert_int_equal(tt_widest_bits(&f->tt), before);
		}
		assert_int_equal(tt_edit(&f->tt, p[i].key, p[i].plen, tdata_edit_set, &e), 0);
		assert_int_equal(tt_edit(&plain, p[i].key, p[i].plen, tdata_edit_set, &e), 0);
	}
	tt_set_bulk(&f->tt, false);
	tt_set_bulk(&plain, false);
	assert_trie_ok(&f->tt);
	assert_trie_ok(&plain);
	wide = tt_widest_bits(&f->tt);
	base = tt_widest_bits(&plain);
	print_message("  widest node: %u bits at 10 %%, %u at the default\n", wide, base);
	if (f->tt.family == AF_INET && n > 100000)
		assert_true(wide > base);
	else
		assert_true(wide >= base);

	tdata_rng_seed(&r, tdata_seed(20261207));
	expect_same_answers(&f->tt, &plain, p, n, &r, 100000);
	/* Back to the default, outside bulk mode: at once. */
	assert_int_equal(tt_set_root_threshold(&f->tt, TRIE_ROOT_THRESHOLD_DEFAULT), 0);
	assert_trie_ok(&f->tt);
	assert_int_equal(tt_widest_bits(&f->tt), base);
	expect_same_answers(&f->tt, &plain, p, n, &r, 100000);

	tt_close_apart(&plain, m, rc);
	free(p);
	tdata_free(&t);
}

static void test_trie_default_and_all_ones_routes(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	unsigned int bits = tt->bits, n;
	tkey ones = tt_all_ones(tt), top = (tkey)1 << (bits - 1), key;
	struct fib_route r[TRIE_LEAF_MAX];
	struct trie_stats st;

	assert_int_equal(tt_set(tt, 0, 0, 1, 1), 0);
	assert_int_equal(tt_set(tt, ones, bits, 1, 2), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, ones, (int)bits, 2);
	expect_lookup(tt, ones - 1, 0, 1);
	expect_lookup(tt, 0, 0, 1);
	expect_lookup(tt, top, 0, 1);

	/* The zero host shares the default route's key, so its leaf. */
	assert_int_equal(tt_set(tt, 0, bits, 1, 3), 0);
	assert_trie_ok(tt);
	tt_stats(tt, &st);
	assert_int_equal(st.leaves, 2);
	assert_int_equal(st.prefixes, 3);
	expect_lookup(tt, 0, (int)bits, 3);
	expect_lookup(tt, 1, 0, 1);

	/* Iteration: the zero key with both prefixes, longest first, then the all-ones key. */
	assert_int_equal(tt_next(tt, 0, &key, r, &n), 0);
	assert_true(key == 0);
	assert_int_equal(n, 2);
	assert_true(route_is(&r[0], bits, 3) && route_is(&r[1], 0, 1));
	assert_int_equal(tt_next(tt, 1, &key, r, &n), 0);
	assert_true(key == ones);
	assert_int_equal(n, 1);
	assert_int_equal(tt_next(tt, ones, &key, r, &n), 0);
	assert_true(key == ones);

	/* The upper half, then no default. */
	assert_int_equal(tt_set(tt, top, 1, 1, 4), 0);
	expect_lookup(tt, top + 7, 1, 4);
	expect_lookup(tt, ones, (int)bits, 2);
	expect_lookup(tt, top - 1, 0, 1);
	assert_int_equal(tt_del(tt, 0, 0), 0);
	assert_trie_ok(tt);
	expect_lookup(tt, top - 1, -1, 0);
	expect_lookup(tt, 0, (int)bits, 3);
	expect_lookup(tt, ones - 1, 1, 4);
	assert_int_equal(tt_del(tt, top, 1), 0);
	expect_lookup(tt, ones - 1, -1, 0);
	expect_find(tt, ones, bits, 1, 2);
	expect_find(tt, 0, 0, 0, 0);
	assert_trie_ok(tt);
}

static void test_trie_rejects_host_bits_and_long_prefixes(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	unsigned int bits = tt->bits;
	tkey net = K(tt, tt->family == AF_INET ? "10.0.0.0" : "2001:db8::");
	unsigned int len = tt->family == AF_INET ? 8 : 32;
	struct {
		tkey key;
		unsigned int plen;
	} bad[] = {
		{ net | 1, len },                             /* the lowest host bit */
		{ net | ((tkey)1 << (bits - len - 1)), len }, /* the highest one */
		{ 1, 0 },                                     /* any bit under a default route */
		{ net, bits + 1 },
		{ 0, bits + 1 },
		{ 0, 255 },
		{ 0, 256 },
		{ 0, ~0u },
	};
	struct trie_stats before, after;
	struct mem_stats m0, m1;

	assert_int_equal(tt_set(tt, net, len, 1, 10), 0);
	tt_stats(tt, &before);
	mem_get_stats(f->m, &m0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct set_ctx c = { .n = 1, .metric = 99 };
		int ret = tt_edit(tt, bad[i].key, bad[i].plen, set_routes, &c);

		if (ret != -EINVAL || c.calls)
			fail_msg("edit %s/%u: %d with %u callbacks, expected -EINVAL and none",
				 tt_str(tt, bad[i].key, -1), bad[i].plen, ret, c.calls);
	}
	/* Nothing changed, nothing was allocated. */
	tt_stats(tt, &after);
	mem_get_stats(f->m, &m1);
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(m0.cls[MEM_LEAF].allocs, m1.cls[MEM_LEAF].allocs);
	assert_int_equal(m0.cls[MEM_TNODE].allocs, m1.cls[MEM_TNODE].allocs);
	expect_find(tt, net, len, 1, 10);
	expect_lookup(tt, net | 1, (int)len, 10);
	/* A lookup of a prefix length past the key finds nothing. */
	expect_find(tt, net, bits + 1, 0, 0);
	assert_trie_ok(tt);
}

/* A failing callback: whatever the prefix, the trie stays as it was. */
static void test_trie_callback_error_leaves_trie_unchanged(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	int v4 = tt->family == AF_INET;
	tkey net = K(tt, v4 ? "10.0.0.0" : "2001:db8::");
	tkey other = K(tt, v4 ? "192.168.0.0" : "fd00::");
	tkey absent = K(tt, v4 ? "172.16.0.0" : "fe80::");
	unsigned int a = v4 ? 8 : 32, b = v4 ? 16 : 48, c = v4 ? 24 : 64;
	struct {
		tkey key;
		unsigned int plen, n_old;
	} edits[] = {
		{ net, b, 1 },     /* the middle prefix of a leaf of three */
		{ net, a, 2 },     /* the shortest, with two routes */
		{ net, a + 4, 0 }, /* absent, on an existing leaf */
		{ absent, 12, 0 }, /* absent, no leaf */
		{ other, b, 1 },   /* alone on its leaf */
	};
	struct trie_stats before, after;
	struct mem_stats m0, m1;

	assert_int_equal(tt_set(tt, net, a, 2, 10), 0);
	assert_int_equal(tt_set(tt, net, b, 1, 20), 0);
	assert_int_equal(tt_set(tt, net, c, 1, 30), 0);
	assert_int_equal(tt_set(tt, other, b, 1, 40), 0);
	tt_stats(tt, &before);
	mem_get_stats(f->m, &m0);
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		struct set_ctx x = { .n = 3, .metric = 99, .ret = -EIO };
		int ret = tt_edit(tt, edits[i].key, edits[i].plen, set_routes, &x);

		if (ret != -EIO || x.calls != 1 || x.n_old != edits[i].n_old)
			fail_msg("edit %s: %d, %u calls with %u old routes; expected -EIO, 1, %u",
				 tt_str(tt, edits[i].key, (int)edits[i].plen), ret, x.calls,
				 x.n_old, edits[i].n_old);
		/* Any negative errno is the callback's to choose. */
		x.ret = -ENOMEM;
		assert_int_equal(tt_edit(tt, edits[i].key, edits[i].plen, set_routes, &x), -ENOMEM);
	}
	tt_stats(tt, &after);
	mem_get_stats(f->m, &m1);
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(m0.cls[MEM_LEAF].allocs, m1.cls[MEM_LEAF].allocs);
	assert_int_equal(m0.cls[MEM_TNODE].allocs, m1.cls[MEM_TNODE].allocs);
	expect_find(tt, net, a, 2, 10);
	expect_find(tt, net, b, 1, 20);
	expect_find(tt, net, c, 1, 30);
	expect_find(tt, other, b, 1, 40);
	expect_find(tt, absent, 12, 0, 0);
	expect_lookup(tt, absent, -1, 0);
	assert_trie_ok(tt);
}

/* One key holds at most TRIE_LEAF_MAX routes over all its prefixes; the callback is told so. */
static void test_trie_leaf_holds_at_most_leaf_max_routes(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	int v4 = tt->family == AF_INET;
	tkey net = K(tt, v4 ? "10.0.0.0" : "2001:db8::");
	unsigned int a = v4 ? 8 : 32, b = v4 ? 16 : 48, c = v4 ? 24 : 64, host = tt->bits;
	struct set_ctx x = { .n = 100, .metric = 1000 };
	struct trie_stats st;

	assert_int_equal(tt_edit(tt, net, a, set_routes, &x), 0);
	assert_int_equal(x.cap, TRIE_LEAF_MAX);
	x = (struct set_ctx){ .n = 100, .metric = 2000 };
	assert_int_equal(tt_edit(tt, net, b, set_routes, &x), 0);
	assert_int_equal(x.cap, TRIE_LEAF_MAX - 100);
	x = (struct set_ctx){ .n = TRIE_LEAF_MAX - 200, .metric = 3000 };
	assert_int_equal(tt_edit(tt, net, c, set_routes, &x), 0);
	assert_int_equal(x.cap, TRIE_LEAF_MAX - 200);
	tt_stats(tt, &st);
	assert_int_equal(st.leaves, 1);
	assert_int_equal(st.prefixes, 3);
	assert_int_equal(st.routes, TRIE_LEAF_MAX);

	/* The leaf is full: one more route on another prefix of the key does not fit. */
	x = (struct set_ctx){ .n = 1, .metric = 4000 };
	assert_int_equal(tt_edit(tt, net, host, set_routes, &x), -ENOSPC);
	assert_int_equal(x.cap, 0);
	/* Nor does growing a prefix, while replacing its routes one for one does. */
	x = (struct set_ctx){ .n = 101, .metric = 5000 };
	assert_int_equal(tt_edit(tt, net, a, set_routes, &x), -ENOSPC);
	assert_int_equal(x.cap, 100);
	expect_find(tt, net, host, 0, 0);
	expect_find(tt, net, a, 100, 1000);
	assert_int_equal(tt_routes(tt), TRIE_LEAF_MAX);
	assert_trie_ok(tt);
	x = (struct set_ctx){ .n = 100, .metric = 6000 };
	assert_int_equal(tt_edit(tt, net, a, set_routes, &x), 0);
	expect_find(tt, net, a, 100, 6000);
	expect_lookup(tt, net | 1, (int)c, 3000);

	/* Room again once a prefix goes. */
	assert_int_equal(tt_del(tt, net, c), 0);
	x = (struct set_ctx){ .n = TRIE_LEAF_MAX - 200, .metric = 7000 };
	assert_int_equal(tt_edit(tt, net, host, set_routes, &x), 0);
	assert_int_equal(x.cap, TRIE_LEAF_MAX - 200);
	expect_lookup(tt, net, (int)host, 7000);
	expect_lookup(tt, net | 1, (int)b, 2000);
	expect_find(tt, net, host, TRIE_LEAF_MAX - 200, 7000);
	expect_find(tt, net, b, 100, 2000);
	assert_int_equal(tt_routes(tt), TRIE_LEAF_MAX);
	assert_trie_ok(tt);
}

/* Several routes of one prefix stay in the order the callback gave; a lookup takes the first. */
static void test_trie_same_prefix_several_routes_lookup_returns_first(void **state)
{
	static const uint32_t three[] = { 30, 10, 20 }, two[] = { 5, 6 };
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	int v4 = tt->family == AF_INET;
	tkey net = K(tt, v4 ? "10.0.0.0" : "2001:db8::");
	unsigned int a = v4 ? 8 : 32, b = v4 ? 16 : 48, n;
	struct set_ctx x = { .n = 3, .metrics = three };
	struct fib_route r[TRIE_LEAF_MAX];
	tkey key;

	assert_int_equal(tt_edit(tt, net, a, set_routes, &x), 0);
	expect_lookup(tt, net | 0x1234, (int)a, 30);
	assert_int_equal(tt_find(tt, net, a, r, TRIE_LEAF_MAX), 3);
	for (unsigned int i = 0; i < 3; i++)
		assert_true(route_is(&r[i], a, three[i]));

	/* The next edit of the prefix sees them as they are, in that order. */
	x = (struct set_ctx){ .n = 3, .metrics = three };
	assert_int_equal(tt_edit(tt, net, a, set_routes, &x), 0);
	assert_int_equal(x.n_old, 3);
	for (unsigned int i = 0; i < 3; i++) {
		assert_int_equal(x.old_metric[i], three[i]);
		assert_int_equal(x.old_plen[i], a);
	}

	/* A longer prefix on the same key comes first in the leaf and in lookups below it. */
	x = (struct set_ctx){ .n = 2, .metrics = two };
	assert_int_equal(tt_edit(tt, net, b, set_routes, &x), 0);
	assert_int_equal(x.n_old, 0);
	expect_lookup(tt, net | 0x1, (int)b, 5);
	expect_lookup(tt, net | ((tkey)1 << (tt->bits - b)), (int)a, 30);
	assert_int_equal(tt_next(tt, 0, &key, r, &n), 0);
	assert_true(key == net);
	assert_int_equal(n, 5);
	assert_true(route_is(&r[0], b, 5) && route_is(&r[1], b, 6));
	for (unsigned int i = 0; i < 3; i++)
		assert_true(route_is(&r[2 + i], a, three[i]));
	assert_trie_ok(tt);
}

/*
 * A dense block of /24s (/56s) makes a wide node; emptying it down to four
 * must halve it back, not leave a mostly empty node behind.
 */
static void test_trie_inflates_dense_node_and_halves_it_back(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	int v4 = tt->family == AF_INET;
	tkey net = K(tt, v4 ? "10.1.0.0" : "2001:db8:1::");
	unsigned int len = v4 ? 24 : 56, shift = tt->bits - len, widest = 0;
	struct trie_stats st;

	assert_int_equal(tt_set(tt, net, len - 8, 1, 1), 0);
	for (unsigned int i = 0; i < 256; i++)
		assert_int_equal(tt_set(tt, net | ((tkey)i << shift), len, 1, 100 + i), 0);
	assert_trie_ok(tt);
	tt_stats(tt, &st);
	for (unsigned int b = 0; b <= TRIE_MAX_BITS; b++) {
		if (st.nodes_by_bits[b])
			widest = b;
	}
	print_message("  256 siblings: %llu tnodes, widest %u bits, %llu slots\n",
		      (unsigned long long)st.tnodes, widest, (unsigned long long)st.pointers);
	/* Binary nodes alone would need 255 of them. */
	assert_true(widest >= 8);
	assert_true(st.tnodes < 8);
	for (unsigned int i = 0; i < 256; i += 37)
		expect_lookup(tt, net | ((tkey)i << shift) | 1, (int)len, 100 + i);

	for (unsigned int i = 0; i < 256; i++) {
		if (i % 64)
			assert_int_equal(tt_del(tt, net | ((tkey)i << shift), len), 0);
	}
	assert_trie_ok(tt);
	tt_stats(tt, &st);
	print_message("  4 left: %llu tnodes, %llu slots (%llu empty)\n",
		      (unsigned long long)st.tnodes, (unsigned long long)st.pointers,
		      (unsigned long long)st.null_pointers);
	/* The covering prefix shares the first /24's key: four leaves. */
	assert_int_equal(st.leaves, 4);
	/*
	 * With the root's halve threshold of 12 % (half the default inflate
	 * threshold), a node of 64 slots or more holding four children would
	 * have halved (at the kernel's 15 %, one of 32 or more).
	 */
	assert_true(st.pointers <= 32);
	for (unsigned int b = 6; b <= TRIE_MAX_BITS; b++)
		assert_int_equal(st.nodes_by_bits[b], 0);
	expect_lookup(tt, net | ((tkey)64 << shift) | 1, (int)len, 164);
	expect_lookup(tt, net | ((tkey)65 << shift) | 1, (int)len - 8, 1);
}

/* The trie's inline leaves and shared routes (lib/trie-tmpl.h, slot_inline()). */
static void expect_inline(const struct tt *tt, uint64_t leaves, uint64_t inl, uint64_t shared)
{
	struct trie_stats st;

	assert_trie_ok(tt);
	tt_stats(tt, &st);
	if (st.leaves != leaves || st.inline_leaves != inl || st.shared_routes != shared)
		fail_msg("%llu leaves, %llu inline, %llu shared routes; expected %llu, %llu, %llu",
			 (unsigned long long)st.leaves, (unsigned long long)st.inline_leaves,
			 (unsigned long long)st.shared_routes, (unsigned long long)leaves,
			 (unsigned long long)inl, (unsigned long long)shared);
}

/*
 * A leaf of one route sits in its parent's slot while its prefix is no
 * longer than KEYLEN - the parent's pos, and shares its route with every
 * such leaf of the same route. 256 sibling prefixes of one route, added in
 * order, end under a node of their pos: those added into it are inline,
 * and so are those a split moved into a node of a lower pos; a leaf added
 * under a node of a higher pos and moved down by an inflate keeps its own
 * (one a doubling of the node, at most 8). A second route on a key takes
 * it out of the slot, one route again puts it back. Deleting most of them
 * halves the node until its pos is above theirs: the rest get leaves of
 * their own. Two hosts under a node of pos 0 are inline; with one deleted,
 * the other takes the root slot, where nothing is inline. The trie check
 * holds the rule after each step, and lookups answer.
 */
static void test_trie_inline_leaves_where_their_key_is_known(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	int v4 = tt->family == AF_INET;
	tkey net = K(tt, v4 ? "10.1.0.0" : "2001:db8:1::");
	tkey host = K(tt, v4 ? "10.9.0.6" : "2001:db8:9::6");
	unsigned int len = v4 ? 24 : 56, shift = tt->bits - len;
	struct trie_stats st;
	uint64_t inl;

	for (unsigned int i = 0; i < 256; i++)
		assert_int_equal(tt_set(tt, net | ((tkey)i << shift), len, 1, 7), 0);
	assert_trie_ok(tt);
	tt_stats(tt, &st);
	inl = st.inline_leaves;
	print_message("  256 siblings: %llu inline, %llu shared routes\n", (unsigned long long)inl,
		      (unsigned long long)st.shared_routes);
	assert_true(inl >= 256 - 8);
	expect_inline(tt, 256, inl, 1);
	/* The last one came into the node of their pos: inline. */
	assert_int_equal(tt_set(tt, net | ((tkey)255 << shift), len, 2, 7), 0);
	expect_inline(tt, 256, inl - 1, 1);
	assert_int_equal(tt_set(tt, net | ((tkey)255 << shift), len, 1, 8), 0);
	expect_inline(tt, 256, inl, 2);
	expect_lookup(tt, net | ((tkey)255 << shift) | 1, (int)len, 8);
	expect_lookup(tt, net | ((tkey)254 << shift) | 1, (int)len, 7);

	for (unsigned int i = 0; i < 256; i++) {
		if (i % 64)
			assert_int_equal(tt_del(tt, net | ((tkey)i << shift), len), 0);
	}
	/* Four left, under a node indexing the bits above theirs. */
	expect_inline(tt, 4, 0, 0);
	for (unsigned int i = 0; i < 256; i += 64)
		expect_lookup(tt, net | ((tkey)i << shift) | 1, (int)len, 7);
	expect_lookup(tt, net | ((tkey)65 << shift) | 1, -1, 0);
	for (unsigned int i = 0; i < 256; i += 64)
		assert_int_equal(tt_del(tt, net | ((tkey)i << shift), len), 0);
	expect_inline(tt, 0, 0, 0);

	assert_int_equal(tt_set(tt, host, tt->bits, 1, 3), 0);
	assert_int_equal(tt_set(tt, host | 1, tt->bits, 1, 3), 0);
	expect_inline(tt, 2, 2, 1);
	assert_int_equal(tt_del(tt, host, tt->bits), 0);
	expect_inline(tt, 1, 0, 0);
	expect_lookup(tt, host | 1, (int)tt->bits, 3);
	expect_lookup(tt, host, -1, 0);
	assert_int_equal(tt_del(tt, host | 1, tt->bits), 0);

	/*
	 * Routes that do not repeat (a metric a prefix): a new value is shared
	 * only while the table holds fewer than 64 and a quarter of the inline
	 * leaves (SHARED_FREE); the other leaves keep leaves of their own.
	 */
	for (unsigned int i = 0; i < 256; i++)
		assert_int_equal(tt_set(tt, net | ((tkey)i << shift), len, 1, 1000 + i), 0);
	assert_trie_ok(tt);
	tt_stats(tt, &st);
	print_message("  256 routes apart: %llu inline, %llu shared routes\n",
		      (unsigned long long)st.inline_leaves, (unsigned long long)st.shared_routes);
	assert_int_equal(st.shared_routes, st.inline_leaves);
	assert_true(st.shared_routes <= 64 + st.inline_leaves / 4 + 1);
	assert_true(st.inline_leaves < 100);
	for (unsigned int i = 0; i < 256; i += 51)
		expect_lookup(tt, net | ((tkey)i << shift) | 1, (int)len, 1000 + i);
}

/*
 * Adds @host and @host | 1 (they differ in the last bit), checks the trie
 * has @tnodes internal nodes, @ones of them of 1 bit, and both hosts' lookups.
 */
static void set_two_hosts(struct tt *tt, tkey host, uint64_t tnodes, uint64_t ones)
{
	struct trie_stats st;

	assert_int_equal(tt_set(tt, host, tt->bits, 1, 3), 0);
	assert_int_equal(tt_set(tt, host | 1, tt->bits, 1, 4), 0);
	assert_trie_ok(tt);
	tt_stats(tt, &st);
	assert_int_equal(st.tnodes, tnodes);
	assert_int_equal(st.nodes_by_bits[1], ones);
	expect_lookup(tt, host, (int)tt->bits, 3);
	expect_lookup(tt, host | 1, (int)tt->bits, 4);
}

/* @a/@len (route 1) and @b/@len (route 2) are joined by one node of @bits, the trie's only one. */
static void expect_joined(const struct tt *tt, tkey a, tkey b, unsigned int len, unsigned int bits)
{
	struct trie_stats st;

	assert_trie_ok(tt);
	tt_stats(tt, &st);
	assert_int_equal(st.tnodes, 1);
	assert_int_equal(st.nodes_by_bits[bits], 1);
	expect_lookup(tt, a | 1, (int)len, 1);
	expect_lookup(tt, b | 1, (int)len, 2);
}

/*
 * Two leaves are joined by the node the kernel's resize leaves: 2 bits when
 * they differ above the last bit (a node of 1 bit with both children used
 * inflates at once, and two of its four slots used, neither an internal
 * node, stay), 1 bit when they differ at the last bit (pos 0: nothing to
 * inflate into). lcfib makes the 2-bit node at once (leaf_insert()), outside
 * bulk mode. The node here is the root: the kernel's root threshold (30 %)
 * keeps it as every node below a root is kept; at the default (25 %) two
 * of four slots used inflate a root once more, to 3 bits.
 */
static void test_trie_joins_two_leaves_as_resize_leaves_them(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	int v4 = tt->family == AF_INET;
	tkey a = K(tt, v4 ? "10.1.0.0" : "2001:db8:1::");
	tkey b = K(tt, v4 ? "10.1.128.0" : "2001:db8:1:8000::");
	tkey host = K(tt, v4 ? "192.0.2.0" : "2001:db8:2::");
	unsigned int len = v4 ? 17 : 49; /* a and b differ in their last bit */

	assert_int_equal(tt_set_root_threshold(tt, 30), 0);
	assert_int_equal(tt_set(tt, a, len, 1, 1), 0);
	assert_int_equal(tt_set(tt, b, len, 1, 2), 0);
	expect_joined(tt, a, b, len, 2);

	/* Both gone, then two hosts that differ in the last bit. */
	assert_int_equal(tt_del(tt, a, len), 0);
	assert_int_equal(tt_del(tt, b, len), 0);
	set_two_hosts(tt, host, 1, 1);

	/*
	 * In bulk mode, where no resize follows: a load that made at least
	 * half the trie's leaves (rebuilt at its end) joins them with a node
	 * of BULK_NODE_BITS bits upwards from the first differing bit, so
	 * that sorted keys after them find a slot free; the end's rebuild
	 * makes it 2 bits.
	 */
	assert_int_equal(tt_del(tt, host, tt->bits), 0);
	assert_int_equal(tt_del(tt, host | 1, tt->bits), 0);
	tt_set_bulk(tt, true);
	assert_int_equal(tt_set(tt, a, len, 1, 1), 0);
	assert_int_equal(tt_set(tt, b, len, 1, 2), 0);
	expect_joined(tt, a, b, len, BULK_NODE_BITS);
	tt_set_bulk(tt, false);
	expect_joined(tt, a, b, len, 2);

	/*
	 * A load that made fewer (the two hosts onto a and b), resized in place
	 * at its end, joins with 1 bit (a size the finished trie hardly uses,
	 * whose slab chunks then come free whole). The first host joins the
	 * root at the top bit, where only 1 bit fits; the second joins the
	 * first at the last bit, where 4 would fit.
	 */
	tt_set_bulk(tt, true);
	set_two_hosts(tt, host, 3, 2);
	tt_set_bulk(tt, false);
	assert_trie_ok(tt);
	expect_lookup(tt, host, (int)tt->bits, 3);
	expect_lookup(tt, a | 1, (int)len, 1);

	/* At the default, a root joining two leaves has 3 bits. */
	assert_int_equal(tt_del(tt, host, tt->bits), 0);
	assert_int_equal(tt_del(tt, host | 1, tt->bits), 0);
	assert_int_equal(tt_del(tt, a, len), 0);
	assert_int_equal(tt_set_root_threshold(tt, TRIE_ROOT_THRESHOLD_DEFAULT), 0);
	assert_int_equal(tt_set(tt, a, len, 1, 1), 0);
	expect_joined(tt, a, b, len, 3);
}

/* Insert many, delete all: no leaf, no node, no byte of either left behind. */
static void test_trie_shrinks_back(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	struct workload w;
	struct live *p;
	struct trie_stats st;
	struct mem_stats ms;
	unsigned int n = 0, want = 30000;
	FILE *fp;

	p = calloc(want, sizeof(*p));
	assert_non_null(p);
	wl_init(&w, tt, tdata_seed(77) + (unsigned int)tt->family);
	/* Distinct prefixes only, so each one is deleted once, and the deletes truly empty it. */
	for (unsigned int tries = 0; n < want && tries < 10 * want; tries++) {
		struct fib_route r;

		wl_prefix(&w, &p[n].key, &p[n].plen);
		if (tt_find(tt, p[n].key, p[n].plen, &r, 1))
			continue;
		assert_int_equal(tt_set(tt, p[n].key, p[n].plen, 1 + n % 3, n), 0);
		n++;
	}
	assert_trie_ok(tt);
	tt_stats(tt, &st);
	mem_get_stats(f->m, &ms);
	assert_int_equal(st.prefixes, n);
	assert_true(st.tnodes > 100);
	assert_true(ms.cls[MEM_TNODE].bytes > 0 && ms.cls[MEM_LEAF].bytes > 0);

	/* Delete in an order unrelated to the inserts. */
	for (unsigned int i = n; i > 1; i--) {
		unsigned int j = (unsigned int)(tdata_rng_next(&w.rng) % i);
		struct live t = p[j];

		p[j] = p[i - 1];
		p[i - 1] = t;
	}
	for (unsigned int i = 0; i < n; i++) {
		assert_int_equal(tt_del(tt, p[i].key, p[i].plen), 0);
		if (i % 5000 == 0)
			assert_trie_ok(tt);
	}
	free(p);
	assert_trie_ok(tt);
	tt_stats(tt, &st);
	assert_int_equal(st.leaves, 0);
	assert_int_equal(st.tnodes, 0);
	assert_int_equal(st.prefixes, 0);
	assert_int_equal(st.routes, 0);
	assert_int_equal(tt_routes(tt), 0);
	expect_lookup(tt, 0, -1, 0);
	fp = tmpfile();
	assert_non_null(fp);
	tt_dump(tt, fp);
	assert_int_equal(ftell(fp), 0);
	fclose(fp);

	/* Once retired nodes are freed the allocator holds no leaf or node. */
	reclaim_barrier(f->rc);
	mem_get_stats(f->m, &ms);
	assert_int_equal(ms.cls[MEM_LEAF].bytes, 0);
	assert_int_equal(ms.cls[MEM_LEAF].objects, 0);
	assert_int_equal(ms.cls[MEM_TNODE].bytes, 0);
	assert_int_equal(ms.cls[MEM_TNODE].objects, 0);
	assert_true(ms.cls[MEM_TABLE].objects >= 1);
}

/* Counts a dump's lines by kind: leaves ("|-- KEY"), routes ("/LEN ..."), nodes ("+-- "). */
static void dump_count(FILE *fp, uint64_t *leaves, uint64_t *routes, uint64_t *tnodes)
{
	char line[512];

	*leaves = *routes = *tnodes = 0;
	rewind(fp);
	while (fgets(line, sizeof(line), fp)) {
		const char *s = line + strspn(line, " ");

		if (strncmp(s, "|-- ", 4) == 0)
			(*leaves)++;
		else if (strncmp(s, "+-- ", 4) == 0)
			(*tnodes)++;
		else if (*s == '/')
			(*routes)++;
	}
}

/* The statistics, the accounting and the dump agree with what was put in. */
static void test_trie_stats_and_dump_match_contents(void **state)
{
	struct fixture *f = *state;
	struct tt *tt = &f->tt;
	struct workload w;
	struct ref *ref = ref_new(tt->family), *keys = ref_new(tt->family);
	uint64_t routes = 0, dl, dr, dt, by_bits = 0;
	struct trie_stats st;
	struct mem_stats ms;
	FILE *fp;

	wl_init(&w, tt, tdata_seed(99) + (unsigned int)tt->family);
	for (unsigned int i = 0; i < 5000; i++) {
		struct addr_prefix p, kp;
		unsigned int plen, n = 1 + i % 4;
		uint64_t old;
		tkey key;

		wl_prefix(&w, &key, &plen);
		tt_prefix(tt, key, plen, &p);
		tt_prefix(tt, key, tt->bits, &kp);
		if (ref_get(ref, &p, &old))
			routes -= ref_value_count(old);
		assert_int_equal(tt_set(tt, key, plen, n, i), 0);
		ref_set(ref, &p, ref_value(i, n));
		ref_set(keys, &kp, 1);
		routes += n;
	}
	assert_trie_ok(tt);
	tt_stats(tt, &st);
	assert_int_equal(st.leaves, ref_count(keys));
	assert_int_equal(st.prefixes, ref_count(ref));
	assert_int_equal(st.routes, routes);
	assert_int_equal(tt_routes(tt), routes);
	for (unsigned int b = 0; b <= TRIE_MAX_BITS; b++)
		by_bits += st.nodes_by_bits[b];
	assert_int_equal(by_bits, st.tnodes);
	assert_int_equal(st.pointers - st.null_pointers, st.leaves + st.tnodes - 1);
	assert_true(st.max_depth >= 2 && st.total_depth >= 2 * st.leaves);
	assert_true(st.total_depth <= (uint64_t)st.max_depth * st.leaves);
	assert_true(st.leaf_bytes >= st.routes * sizeof(struct fib_route));

	reclaim_barrier(f->rc);
	mem_get_stats(f->m, &ms);
	assert_int_equal(ms.cls[MEM_LEAF].bytes, st.leaf_bytes);
	assert_int_equal(ms.cls[MEM_TNODE].bytes, st.tnode_bytes);
	assert_int_equal(ms.cls[MEM_FALLBACK].bytes, st.fallback_bytes);
	assert_true(st.fallback_bytes > 0);
	assert_int_equal(ms.cls[MEM_LEAF].objects, st.leaves);
	assert_int_equal(ms.cls[MEM_TNODE].objects, st.tnodes);

	fp = tmpfile();
	assert_non_null(fp);
	tt_dump(tt, fp);
	dump_count(fp, &dl, &dr, &dt);
	fclose(fp);
	assert_int_equal(dl, st.leaves);
	assert_int_equal(dr, st.routes);
	assert_int_equal(dt, st.tnodes);
	ref_free(keys);
	ref_free(ref);
}

#define T(fn)  cmocka_unit_test_setup_teardown(fn, setup_v4, teardown)
#define T6(fn) cmocka_unit_test_setup_teardown(fn, setup_v6, teardown)

int main(void)
{
	const struct CMUnitTest v4[] = {
		T(test_trie_empty_finds_nothing),
		T(test_trie_backtracks_to_shorter_prefix),
		T(test_trie_lookup_across_skipped_bits),
		T(test_trie_root_fallbacks_follow_short_prefixes),
		T(test_trie_empty_children_hold_their_answers),
		T(test_trie_unsorted_bulk_load_stays_shallow),
		T(test_trie_bulk_end_rebuilds_sorted_load),
		T(test_trie_bulk_end_rebuilds_load_in_sorted_runs),
		T(test_trie_bulk_out_of_memory_leaves_trie_whole),
		T(test_trie_compact_moves_the_trie_and_gives_up_whole),
		T(test_trie_bulk_end_with_no_memory_leaves_trie_whole),
		T(test_trie_bulk_turns_eager_on_shuffled_load),
		T(test_trie_inflates_several_steps_as_one_at_a_time),
		T(test_trie_builds_anew_on_two_threads_as_on_one),
		T(test_trie_root_threshold_in_bulk_mode_waits_for_its_end),
		T(test_trie_bulk_turns_eager_after_sorted_start),
		T(test_trie_default_and_all_ones_routes),
		T(test_trie_rejects_host_bits_and_long_prefixes),
		T(test_trie_callback_error_leaves_trie_unchanged),
		T(test_trie_leaf_holds_at_most_leaf_max_routes),
		T(test_trie_same_prefix_several_routes_lookup_returns_first),
		T(test_trie_inflates_dense_node_and_halves_it_back),
		T(test_trie_joins_two_leaves_as_resize_leaves_them),
		T(test_trie_inline_leaves_where_their_key_is_known),
		T(test_trie_stats_and_dump_match_contents),
		T(test_trie_shrinks_back),
		T(test_trie_differential_v4),
		T(test_trie_out_of_memory_leaves_trie_whole_v4),
	};
	const struct CMUnitTest v6[] = {
		T6(test_trie_empty_finds_nothing),
		T6(test_trie_backtracks_to_shorter_prefix),
		T6(test_trie_lookup_across_skipped_bits),
		T6(test_trie_root_fallbacks_follow_short_prefixes),
		T6(test_trie_empty_children_hold_their_answers),
		T6(test_trie_unsorted_bulk_load_stays_shallow),
		T6(test_trie_bulk_end_rebuilds_sorted_load),
		T6(test_trie_bulk_end_rebuilds_load_in_sorted_runs),
		T6(test_trie_bulk_out_of_memory_leaves_trie_whole),
		T6(test_trie_compact_moves_the_trie_and_gives_up_whole),
		T6(test_trie_bulk_end_with_no_memory_leaves_trie_whole),
		T6(test_trie_bulk_turns_eager_on_shuffled_load),
		T6(test_trie_bulk_turns_eager_after_sorted_start),
		T6(test_trie_inflates_several_steps_as_one_at_a_time),
		T6(test_trie_builds_anew_on_two_threads_as_on_one),
		T6(test_trie_root_threshold_in_bulk_mode_waits_for_its_end),
		T6(test_trie_default_and_all_ones_routes),
		T6(test_trie_rejects_host_bits_and_long_prefixes),
		T6(test_trie_callback_error_leaves_trie_unchanged),
		T6(test_trie_leaf_holds_at_most_leaf_max_routes),
		T6(test_trie_same_prefix_several_routes_lookup_returns_first),
		T6(test_trie_inflates_dense_node_and_halves_it_back),
		T6(test_trie_joins_two_leaves_as_resize_leaves_them),
		T6(test_trie_inline_leaves_where_their_key_is_known),
		T6(test_trie_stats_and_dump_match_contents),
		T6(test_trie_shrinks_back),
		T6(test_trie_differential_v6),
		T6(test_trie_out_of_memory_leaves_trie_whole_v6),
	};
	int failed;

	/* Small tries here: make batch lookups take the lanes anyway. */
	trie_batch_min_leaves = 0;
	failed = cmocka_run_group_tests_name("trie4", v4, group_setup, group_teardown);
	failed += cmocka_run_group_tests_name("trie6", v6, group_setup, group_teardown);
	return failed ? 1 : 0;
}
