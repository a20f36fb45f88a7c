// SPDX-License-Identifier: MIT
/*
 * The destination cache (lib/cache.h): answers equal the trie's, through
 * evictions, route changes and both modes; the LRU keeps hot keys; the
 * per-thread mode isolates a flood; the size floor and the empty-list
 * skip; batches; the flood guard; second-miss admission; and churn while
 * readers hit: a reader never gets an answer older than the last
 * completed edit, nor a nexthop that was freed.
 *
 * LCFIB_SEED reruns a failure; LCFIB_STRESS scales the churn (0.05 for
 * ThreadSanitizer).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "lib/cache.h"
#include "lib/fib.h"
#include "tests/tdata.h"

static uint64_t seed;
static double stress = 1;

static struct nh_path gw4(uint32_t n)
{
	struct nh_path p = { .ifindex = 1 };

	p.gw_family = AF_INET;
	p.gw.v4.s_addr = htonl(0x0a000000u | (n & 0xffffffu));
	return p;
}

static int route4(struct fib *f, int del, uint32_t addr, unsigned int plen, uint32_t metric,
		  uint32_t gw)
{
	struct nh_path p = gw4(gw);
	struct fib_rcfg rc = {
		.table = FIB_TABLE_MAIN,
		.type = FIB_RT_UNICAST,
		.metric = metric,
		.n_paths = 1,
		.paths = &p,
		.flags = FIB_F_CREATE | FIB_F_EXCL | FIB_F_EXACT_METRIC,
	};
	struct errbuf err;

	rc.dst.a.family = AF_INET;
	rc.dst.a.v4.s_addr = htonl(addr);
	rc.dst.plen = (uint8_t)plen;
	return del ? fib_route_del(f, &rc, &err) : fib_route_add(f, &rc, &err);
}

static struct cache *cache4(struct fib *f, uint32_t size, unsigned int threads,
			    enum cache_mode mode, unsigned int flags)
{
	struct cache_cfg cfg = { .size = size, .threads = threads, .mode = mode, .flags = flags };
	struct errbuf err;
	struct cache *c = cache_new(f, 0, AF_INET, &cfg, &err);

	if (!c)
		fail_msg("cache_new: %s", err.msg);
	return c;
}

/* The cache's answer against the trie's, for one address. */
static void expect_same4(struct cache *c, struct cache_thread *t, const struct fib_table *tb,
			 uint32_t addr)
{
	struct fib_route got;
	const struct fib_route *want;
	uint32_t want_metric;
	bool found, same;

	fib_read_lock();
	found = cache_lookup4_rcu(c, t, addr, &got);
	want = fib_lookup4_rcu(tb, addr);
	same = found == (want != NULL) && (!found || !memcmp(&got, want, sizeof(got)));
	want_metric = want ? want->metric : 0;
	fib_read_unlock();
	/* Outside the read-side section: a failure must not leave it held. */
	if (!same)
		fail_msg("address %08x: cache says %s (metric %u), the trie %s (metric %u)", addr,
			 found ? "a route" : "none", found ? got.metric : 0,
			 want ? "a route" : "none", want_metric);
}

static void test_cache_hit_equals_trie_and_counts(void **state)
{
	struct fib *f = fib_new();
	struct cache *c;
	struct cache_stats st;
	const struct fib_table *tb;

	(void)state;
	assert_int_equal(route4(f, 0, 0x0a000000, 8, 0, 1), 0);
	assert_int_equal(route4(f, 0, 0x0a010000, 16, 0, 2), 0);
	c = cache4(f, 64, 1, CACHE_COMMON, 0);
	tb = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET);
	for (int round = 0; round < 3; round++) {
		expect_same4(c, cache_thread(c, 0), tb, 0x0a010203); /* the /16 */
		expect_same4(c, cache_thread(c, 0), tb, 0x0a020304); /* the /8 */
		expect_same4(c, cache_thread(c, 0), tb, 0x0b000001); /* none: cached as none */
	}
	cache_get_stats(c, &st);
	assert_int_equal(st.misses, 3);
	assert_int_equal(st.fills, 3);
	assert_int_equal(st.hits, 6);
	cache_destroy(c);
	fib_destroy(f);
}

static void test_cache_route_change_invalidates(void **state)
{
	struct fib *f = fib_new();
	struct cache *c;
	struct cache_thread *t;
	struct cache_stats st;
	const struct fib_table *tb;
	struct fib_route got;
	bool found;

	(void)state;
	assert_int_equal(route4(f, 0, 0, 0, 0, 1), 0);
	c = cache4(f, 64, 1, CACHE_PERTHREAD, 0);
	t = cache_thread(c, 0);
	tb = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET);
	expect_same4(c, t, tb, 0xc0000201);
	expect_same4(c, t, tb, 0xc0000201);
	/* A more specific route: the cached default must not answer any more. */
	assert_int_equal(route4(f, 0, 0xc0000200, 24, 5, 2), 0);
	fib_read_lock();
	found = cache_lookup4_rcu(c, t, 0xc0000201, &got);
	fib_read_unlock();
	assert_true(found);
	assert_int_equal(got.plen, 24);
	expect_same4(c, t, tb, 0xc0000201);
	/* Deleted: back to the default; then no route at all. */
	assert_int_equal(route4(f, 1, 0xc0000200, 24, 5, 2), 0);
	expect_same4(c, t, tb, 0xc0000201);
	assert_int_equal(route4(f, 1, 0, 0, 0, 1), 0);
	fib_read_lock();
	found = cache_lookup4_rcu(c, t, 0xc0000201, &got);
	fib_read_unlock();
	assert_false(found);
	cache_get_stats(c, &st);
	assert_int_equal(st.invalidations, 3);
	assert_int_equal(st.hits, 2);
	cache_destroy(c);
	fib_destroy(f);
}

/*
 * The reference model: random edits of prefixes in a small space and
 * random lookups through a cache much smaller than the addresses looked
 * up (so that it evicts), every answer checked against the trie. Both
 * modes, one thread index after another.
 */
static void reference_model(enum cache_mode mode, unsigned int threads)
{
	struct fib *f = fib_new();
	struct cache *c = cache4(f, 32, threads, mode, 0);
	const struct fib_table *tb = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET);
	struct tdata_rng r;
	struct cache_stats st;

	tdata_rng_seed(&r, seed);
	for (unsigned int i = 0; i < 200000; i++) {
		uint64_t x = tdata_rng_next(&r);

		if (x % 8 == 0) {
			unsigned int plen = 8 + (unsigned int)(x >> 8) % 25;
			uint32_t a = 0x0a000000u | ((uint32_t)(x >> 16) & 0xffffu);

			a &= plen ? ~0u << (32 - plen) : 0;
			route4(f, (int)(x >> 60) & 1, a, plen, (uint32_t)(x >> 40) % 3,
			       (uint32_t)(x >> 50) % 7);
		} else {
			uint32_t a = 0x0a000000u | ((uint32_t)(x >> 16) % 16) << 8 |
				     (uint32_t)(x >> 24) % 8;

			expect_same4(c, cache_thread(c, (unsigned int)(x >> 4) % threads), tb, a);
		}
	}
	cache_get_stats(c, &st);
	assert_true(st.hits > 1000);
	assert_true(st.evictions > 1000);
	assert_true(st.invalidations > 100);
	cache_destroy(c);
	fib_destroy(f);
}

static void test_cache_reference_model_common(void **state)
{
	(void)state;
	reference_model(CACHE_COMMON, 1);
	reference_model(CACHE_COMMON, 3);
}

static void test_cache_reference_model_per_thread(void **state)
{
	(void)state;
	reference_model(CACHE_PERTHREAD, 1);
	reference_model(CACHE_PERTHREAD, 3);
}

static void test_cache_ipv6_answers_equal_trie(void **state)
{
	struct fib *f = fib_new();
	struct nh_path p = { .ifindex = 2 };
	struct fib_rcfg rc = {
		.type = FIB_RT_UNICAST, .n_paths = 1, .paths = &p, .flags = FIB_F_CREATE
	};
	struct cache_cfg cfg = { .size = 16, .threads = 1 };
	struct errbuf err;
	struct cache *c;
	const struct fib_table *tb;
	struct tdata_rng r;

	(void)state;
	assert_int_equal(addr_parse_prefix("2001:db8::/32", AF_INET6, &rc.dst, &err), 0);
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	c = cache_new(f, 0, AF_INET6, &cfg, &err);
	assert_non_null(c);
	tb = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET6);
	tdata_rng_seed(&r, seed);
	for (int i = 0; i < 20000; i++) {
		struct in6_addr a = { .s6_addr = { 0x20, 0x01, 0x0d, 0xb8 } };
		uint64_t x = tdata_rng_next(&r);
		struct fib_route got;
		const struct fib_route *want;
		bool found, same;

		a.s6_addr[3] ^= (uint8_t)(x & 1); /* half outside the /32 */
		a.s6_addr[15] = (uint8_t)(x >> 8) % 40;
		if (i % 1000 == 999) {
			rc.metric = (uint32_t)(i / 1000); /* a new first route... */
			rc.flags = FIB_F_CREATE | FIB_F_REPLACE;
			assert_int_equal(fib_route_add(f, &rc, &err), 0);
		}
		fib_read_lock();
		found = cache_lookup6_rcu(c, cache_thread(c, 0), &a, &got);
		want = fib_lookup6_rcu(tb, &a);
		same = found == (want != NULL) && (!found || !memcmp(&got, want, sizeof(got)));
		fib_read_unlock();
		if (!same)
			fail_msg("IPv6 lookup %d: the cache and the trie differ", i);
	}
	cache_destroy(c);
	fib_destroy(f);
}

static void test_cache_size_floor_and_settings(void **state)
{
	struct fib *f = fib_new();
	struct cache_cfg cfg = { .size = 1, .threads = 8 }, got;
	struct errbuf err;
	struct cache *c = cache_new(f, 0, AF_INET, &cfg, &err);

	(void)state;
	assert_non_null(c);
	cache_get_cfg(c, &got);
	assert_int_equal(got.size, 8 * CACHE_MIN_PER_THREAD);
	assert_int_equal(got.nr_scans, CACHE_NR_SCANS_COMMON);
	cache_destroy(c);
	cfg.nr_scans = 129;
	assert_null(cache_new(f, 0, AF_INET, &cfg, &err));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err.msg, "nr-scans 129"));
	cfg.nr_scans = 0;
	cfg.threads = 0;
	assert_null(cache_new(f, 0, AF_INET, &cfg, &err));
	assert_non_null(strstr(err.msg, "threads 0"));
	cfg.threads = 1;
	cfg.flags = 0x100;
	assert_null(cache_new(f, 0, AF_INET, &cfg, &err));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err.msg, "unknown flags 0x100"));
	fib_destroy(f);
}

/* Every other lookup is the hot key; the others never repeat. */
static unsigned int hot_hits(enum cache_mode mode)
{
	struct fib *f = fib_new();
	struct cache *c = cache4(f, 256, 1, mode, 0);
	struct cache_thread *t = cache_thread(c, 0);
	unsigned int hits = 0;
	struct cache_stats st;
	struct fib_route got;

	route4(f, 0, 0, 0, 0, 1);
	for (uint32_t i = 0; i < 20000; i++) {
		uint64_t before;

		cache_get_stats(c, &st);
		before = st.hits;
		fib_read_lock();
		cache_lookup4_rcu(c, t, 0x01020304, &got);
		cache_lookup4_rcu(c, t, 0x20000000 + i, &got);
		fib_read_unlock();
		cache_get_stats(c, &st);
		hits += st.hits > before;
	}
	cache_destroy(c);
	fib_destroy(f);
	return hits;
}

static void test_cache_lru_keeps_a_hot_key_through_a_scan(void **state)
{
	(void)state;
	assert_true(hot_hits(CACHE_COMMON) > 19900);
	assert_true(hot_hits(CACHE_PERTHREAD) > 19900);
}

/*
 * Thread 0 caches 16 keys, then 200 more (so that common mode's pending
 * list joins the LRU); thread 1 floods misses; how many of the 16 still hit.
 */
static unsigned int survivors_of_flood(enum cache_mode mode)
{
	struct fib *f = fib_new();
	struct cache *c = cache4(f, 1024, 2, mode, 0);
	struct cache_stats st;
	struct fib_route got;
	uint64_t before;

	route4(f, 0, 0, 0, 0, 1);
	fib_read_lock();
	for (uint32_t k = 0; k < 16; k++)
		cache_lookup4_rcu(c, cache_thread(c, 0), 0x01000000 + k, &got);
	for (uint32_t k = 0; k < 200; k++)
		cache_lookup4_rcu(c, cache_thread(c, 0), 0x02000000 + k, &got);
	for (uint32_t i = 0; i < 100000; i++)
		cache_lookup4_rcu(c, cache_thread(c, 1), 0x30000000 + i, &got);
	cache_get_stats(c, &st);
	before = st.hits;
	for (uint32_t k = 0; k < 16; k++)
		cache_lookup4_rcu(c, cache_thread(c, 0), 0x01000000 + k, &got);
	cache_get_stats(c, &st);
	fib_read_unlock();
	cache_destroy(c);
	fib_destroy(f);
	return (unsigned int)(st.hits - before);
}

static void test_cache_per_thread_mode_isolates_a_flood(void **state)
{
	(void)state;
	assert_int_equal(survivors_of_flood(CACHE_PERTHREAD), 16);
	assert_int_equal(survivors_of_flood(CACHE_COMMON), 0);
}

/* A small common cache over 4 thread indexes: steals check is_empty first. */
static void steal_counts(unsigned int flags, uint64_t *locks, uint64_t *skips)
{
	struct fib *f = fib_new();
	struct cache *c = cache4(f, 16, 4, CACHE_COMMON, flags);
	struct cache_stats st;
	struct fib_route got;

	route4(f, 0, 0, 0, 0, 1);
	fib_read_lock();
	for (uint32_t i = 0; i < 10000; i++)
		cache_lookup4_rcu(c, cache_thread(c, i % 2), 0x30000000 + i, &got);
	fib_read_unlock();
	cache_get_stats(c, &st);
	*locks = st.steal_locks;
	*skips = st.steal_skips;
	cache_destroy(c);
	fib_destroy(f);
}

static void test_cache_empty_lists_are_skipped_without_their_lock(void **state)
{
	uint64_t locks, skips, locks_noskip, skips_noskip;

	(void)state;
	steal_counts(0, &locks, &skips);
	steal_counts(CACHE_F_NO_EMPTY_SKIP, &locks_noskip, &skips_noskip);
	assert_true(skips > 1000);
	assert_int_equal(skips_noskip, 0);
	assert_true(locks_noskip > locks + skips / 2);
}

/* ---------------------------------------------------------------- churn */

/*
 * The writer moves each hot /24 to a new version: it adds the route of
 * metric BASE - v (lookups pick the lowest metric), then deletes the one of
 * version v - 1, and publishes v. Each version has its own gateway, so its
 * anonymous nexthop is freed (after a grace period) when it goes: a reader
 * using a stale copy would read freed memory (ASan) or a metric above
 * BASE - v (the check here).
 */
#define CHURN_HOT  64
#define CHURN_BASE 1000000000u

struct churn {
	struct fib *f;
	struct cache *c;
	uint32_t committed[CHURN_HOT];
	int stop;
	uint64_t checks, errors, fill_during;
};

static uint32_t churn_prefix(unsigned int i)
{
	return 0x0a000000u | (i * 7919u % 65536u) << 8;
}

struct churn_reader {
	struct churn *ch;
	unsigned int idx;
	uint64_t checks;
	char fail[160];
};

/*
 * Batches against the trie, one address at a time: both families and
 * modes, with and without second-miss admission, batches of every size up
 * to CACHE_BATCH_MAX, a cache small enough to evict, edits between the
 * batches (so that answers go stale), and a stretch of unique addresses
 * long enough for the flood guard to bypass (its batch path) and then let
 * go when the addresses repeat again.
 */
static void batch_model(int family, enum cache_mode mode, unsigned int flags)
{
	struct fib *f = fib_new();
	struct cache_cfg cfg = { .size = 64, .threads = 2, .mode = mode, .flags = flags };
	struct errbuf err;
	struct cache *c = cache_new(f, 0, family, &cfg, &err);
	const struct fib_table *tb = fib_table_get_rcu(f, FIB_TABLE_MAIN, family);
	struct tdata_rng r;
	struct cache_stats st;
	uint64_t bypassed_at_flood_end = 0, bypassed_at_5000 = 0;

	assert_non_null(c);
	tdata_rng_seed(&r, seed);
	for (unsigned int round = 0; round < 6000; round++) {
		unsigned int n = 1 + (unsigned int)(tdata_rng_next(&r) % CACHE_BATCH_MAX);
		bool flood = round >= 2000 && round < 4000;
		struct cache_thread *t = cache_thread(c, round % 2);
		uint32_t a4[CACHE_BATCH_MAX];
		struct in6_addr a6[CACHE_BATCH_MAX];
		struct fib_route out[CACHE_BATCH_MAX];
		const struct fib_route *want[CACHE_BATCH_MAX];
		uint64_t found;
		int bad = -1;

		/* Every 4th round, an edit: a /24 or /16 of 10/8 (a /32 or /24 of 2001::/16). */
		if (round % 4 == 0) {
			uint64_t x = tdata_rng_next(&r);
			unsigned int plen = x & 1 ? 24 : 16;
			struct nh_path p = gw4((uint32_t)(x >> 40) % 5);
			struct fib_rcfg rc = { .type = FIB_RT_UNICAST,
					       .n_paths = 1,
					       .paths = &p,
					       .metric = (uint32_t)(x >> 20) % 3,
					       .flags = FIB_F_CREATE | FIB_F_REPLACE };
			uint32_t net = 0x0a000000u | ((uint32_t)(x >> 8) & 0x0f0f00u);

			rc.dst.a.family = (sa_family_t)family;
			if (family == AF_INET) {
				rc.dst.a.v4.s_addr = htonl(net & ~0u << (32 - plen));
				rc.dst.plen = (uint8_t)plen;
			} else {
				p.gw_family = AF_INET6;
				p.gw.v6.s6_addr[0] = 0xfe;
				p.gw.v6.s6_addr[1] = 0x80;
				p.gw.v6.s6_addr[15] = (uint8_t)(x >> 40) % 5 + 1;
				rc.dst.a.v6.s6_addr[0] = 0x20;
				rc.dst.a.v6.s6_addr[1] = 0x01;
				rc.dst.a.v6.s6_addr[2] = (uint8_t)(net >> 16);
				rc.dst.a.v6.s6_addr[3] = plen == 24 ? (uint8_t)(net >> 8) : 0;
				/* 2001:NN00::/24, 2001:NNNN::/32 */
				rc.dst.plen = (uint8_t)(plen + 8);
			}
			if (x >> 63)
				fib_route_del(f, &rc, &err);
			else if (fib_route_add(f, &rc, &err))
				fail_msg("route add: %s", err.msg);
		}
		for (unsigned int i = 0; i < n; i++) {
			uint64_t x = tdata_rng_next(&r);
			/* 200 addresses that repeat, or (the flood) 4096 that 64 elements miss */
			uint32_t host = flood ? (uint32_t)x : (uint32_t)(x % 200) * 0x010101u;

			a4[i] = 0x0a000000u | (host & 0x0f0f0fu);
			memset(&a6[i], 0, sizeof(a6[i]));
			/* 10.A.B.C as 2001:AB::C: the caches' IPv6 slots are /32s */
			a6[i].s6_addr[0] = 0x20;
			a6[i].s6_addr[1] = 0x01;
			a6[i].s6_addr[2] = (uint8_t)(a4[i] >> 16);
			a6[i].s6_addr[3] = (uint8_t)(a4[i] >> 8);
			a6[i].s6_addr[15] = (uint8_t)a4[i];
		}
		fib_read_lock();
		if (family == AF_INET) {
			found = cache_lookup4_batch_rcu(c, t, a4, out, n);
			for (unsigned int i = 0; i < n; i++)
				want[i] = fib_lookup4_rcu(tb, a4[i]);
		} else {
			found = cache_lookup6_batch_rcu(c, t, a6, out, n);
			for (unsigned int i = 0; i < n; i++)
				want[i] = fib_lookup6_rcu(tb, &a6[i]);
		}
		for (unsigned int i = 0; i < n && bad < 0; i++) {
			bool got = found >> i & 1;

			if (got != (want[i] != NULL) ||
			    (got && memcmp(&out[i], want[i], sizeof(out[i]))))
				bad = (int)i;
		}
		fib_read_unlock();
		if (bad >= 0)
			fail_msg("family %d, mode %d, flags %x, round %u: batch answer %d of %u "
				 "differs from the trie",
				 family, (int)mode, flags, round, bad, n);
		if (n < 64 && found >> n)
			fail_msg("round %u: bits set past the batch (%u)", round, n);
		if (round == 3999 || round == 4999) {
			cache_get_stats(c, &st);
			*(round == 3999 ? &bypassed_at_flood_end : &bypassed_at_5000) = st.bypassed;
		}
	}
	cache_get_stats(c, &st);
	assert_true(st.hits > 10000);
	assert_true(st.invalidations > 0);
	/*
	 * The flood was bypassed (its ~65k lookups but a sample), and the
	 * guard let go once the sampled lookups hit again (slowly: 32
	 * elements a thread for 200 addresses), well before the end.
	 */
	assert_true(bypassed_at_flood_end > 40000);
	assert_int_equal(st.bypassed, bypassed_at_5000);
	if (flags & CACHE_F_ADMIT_SECOND)
		assert_true(st.first_misses > 0);
	else
		assert_int_equal(st.first_misses, 0);
	cache_destroy(c);
	fib_destroy(f);
}

static void test_cache_batch_answers_equal_the_trie(void **state)
{
	(void)state;
	for (int m = 0; m < 2; m++) {
		batch_model(AF_INET, m, 0);
		batch_model(AF_INET6, m, 0);
		batch_model(AF_INET, m, CACHE_F_ADMIT_SECOND);
		batch_model(AF_INET6, m, CACHE_F_ADMIT_SECOND);
	}
}

/*
 * The flood guard: a thread that looks up only new addresses stops
 * filling after a window of misses (each fill in a full cache rotates and
 * evicts), answers as the trie does meanwhile, keeps what it had cached,
 * and goes back to the cache once its lookups hit again. Without the
 * guard, every miss of the flood fills (the working set survives all the
 * same: it was referenced, and the active list keeps it through a scan).
 */
static void flood_guard(enum cache_mode mode, unsigned int flags, uint64_t *fills,
			unsigned int *kept, uint64_t *bypassed_after)
{
	struct fib *f = fib_new();
	struct cache *c = cache4(f, 8192, 1, mode, flags);
	struct cache_thread *t = cache_thread(c, 0);
	const struct fib_table *tb = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET);
	struct cache_stats st0, st;
	struct fib_route got;

	route4(f, 0, 0, 0, 0, 1);
	route4(f, 0, 0x30000000, 8, 0, 2);
	for (uint32_t k = 0; k < 500; k++) /* a working set, looked up twice */
		expect_same4(c, t, tb, 0x01000000 + k * 256);
	for (uint32_t k = 0; k < 500; k++)
		expect_same4(c, t, tb, 0x01000000 + k * 256);
	cache_get_stats(c, &st0);
	for (uint32_t i = 0; i < 100000; i++) { /* the flood, every 97th checked */
		struct fib_route r;

		if (i % 97 == 0) {
			expect_same4(c, t, tb, 0x30000000 + i * 7);
		} else {
			fib_read_lock();
			cache_lookup4_rcu(c, t, 0x30000000 + i * 7, &r);
			fib_read_unlock();
		}
	}
	cache_get_stats(c, &st);
	*fills = st.fills - st0.fills;
	/* The working set again: the guard lets go, and lookups hit. */
	fib_read_lock();
	for (uint32_t i = 0; i < 200000; i++)
		cache_lookup4_rcu(c, t, 0x01000000 + (i % 500) * 256, &got);
	fib_read_unlock();
	cache_get_stats(c, &st0);
	/* What the flood evicted of it misses once: the rest was kept. */
	*kept = 500 - (unsigned int)(st0.misses - st.misses < 500 ? st0.misses - st.misses : 500);
	fib_read_lock();
	for (uint32_t i = 0; i < 10000; i++)
		cache_lookup4_rcu(c, t, 0x01000000 + (i % 500) * 256, &got);
	fib_read_unlock();
	cache_get_stats(c, &st);
	*bypassed_after = st.bypassed - st0.bypassed;
	assert_int_equal(st.hits - st0.hits, 10000);
	cache_destroy(c);
	fib_destroy(f);
}

static void test_cache_flood_guard_bypasses_a_flood_and_lets_go(void **state)
{
	uint64_t fills, after;
	unsigned int kept;

	(void)state;
	for (int m = 0; m < 2; m++) {
		flood_guard(m, 0, &fills, &kept, &after);
		/* A window of misses filled, then about one in CACHE_FLOOD_SAMPLE. */
		/* (the first window holds the working set's lookups too: two of them) */
		assert_true(fills < 2 * CACHE_FLOOD_WINDOW + 100000 / CACHE_FLOOD_SAMPLE * 2);
		assert_true(fills > 100000 / CACHE_FLOOD_SAMPLE / 2);
		assert_int_equal(after, 0);
		assert_true(kept >= 490);
		flood_guard(m, CACHE_F_NO_FLOOD_GUARD, &fills, &kept, &after);
		assert_int_equal(fills, 100000);
	}
}

/* Second-miss admission: an address is stored at its second miss, not its first. */
static void test_cache_second_miss_admission_stores_at_the_second_miss(void **state)
{
	struct fib *f = fib_new();
	/* Without the flood guard, which would send most of the many below past the cache. */
	struct cache *c =
		cache4(f, 64, 1, CACHE_PERTHREAD, CACHE_F_ADMIT_SECOND | CACHE_F_NO_FLOOD_GUARD);
	struct cache_thread *t = cache_thread(c, 0);
	const struct fib_table *tb = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET);
	struct cache_stats st;

	(void)state;
	route4(f, 0, 0, 0, 0, 1);
	expect_same4(c, t, tb, 0xc0000201);
	cache_get_stats(c, &st);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.first_misses, 1);
	assert_int_equal(st.fills, 0);
	expect_same4(c, t, tb, 0xc0000201);
	cache_get_stats(c, &st);
	assert_int_equal(st.misses, 2);
	assert_int_equal(st.fills, 1);
	expect_same4(c, t, tb, 0xc0000201);
	cache_get_stats(c, &st);
	assert_int_equal(st.hits, 1);
	/* A stale answer is refreshed in place at its first miss. */
	assert_int_equal(route4(f, 0, 0xc0000200, 24, 0, 2), 0);
	expect_same4(c, t, tb, 0xc0000201);
	cache_get_stats(c, &st);
	assert_int_equal(st.invalidations, 1);
	assert_int_equal(st.fills, 2);
	expect_same4(c, t, tb, 0xc0000201);
	cache_get_stats(c, &st);
	assert_int_equal(st.hits, 2);
	/* Many first sightings: the bitmap is cleared as it fills, never full. */
	for (uint32_t i = 0; i < 100000; i++)
		expect_same4(c, t, tb, 0x30000000 + i);
	cache_get_stats(c, &st);
	assert_true(st.first_misses > 90000);
	assert_true(st.fills < 2 + 100000 / 8);
	cache_destroy(c);
	fib_destroy(f);
}

static void *churn_reader_main(void *arg)
{
	struct churn_reader *rd = arg;
	struct churn *ch = rd->ch;
	struct cache_thread *t = cache_thread(ch->c, rd->idx);
	struct tdata_rng r;

	fib_reader_register();
	tdata_rng_seed(&r, seed + rd->idx);
	while (!__atomic_load_n(&ch->stop, __ATOMIC_ACQUIRE)) {
		uint64_t x = tdata_rng_next(&r);
		unsigned int i = (unsigned int)(x % CHURN_HOT);
		uint32_t v = __atomic_load_n(&ch->committed[i], __ATOMIC_ACQUIRE);
		struct fib_route got;

		fib_read_lock();
		if (!cache_lookup4_rcu(ch->c, t, churn_prefix(i) | (uint32_t)(x >> 32) % 8, &got)) {
			snprintf(rd->fail, sizeof(rd->fail), "prefix %u: no route", i);
		} else if (got.metric > CHURN_BASE - v) {
			snprintf(rd->fail, sizeof(rd->fail),
				 "prefix %u: metric %u, older than version %u", i, got.metric, v);
		} else if (!nh_info_rcu(got.nh) || nh_info_rcu(got.nh)->n != 1) {
			snprintf(rd->fail, sizeof(rd->fail), "prefix %u: a bad nexthop", i);
		}
		fib_read_unlock();
		rd->checks++;
		if (rd->fail[0])
			break;
	}
	fib_reader_unregister();
	return NULL;
}

static void churn_run(enum cache_mode mode)
{
	enum { READERS = 3 };
	struct churn ch = { .f = fib_new() };
	struct churn_reader rd[READERS];
	pthread_t th[READERS];
	uint64_t edits = (uint64_t)(200000 * stress) + 100;
	struct tdata_rng r;
	struct cache_stats st;

	assert_int_equal(fib_set_sync_mem(ch.f, 64 * 1024), 0);
	for (unsigned int i = 0; i < CHURN_HOT; i++) {
		assert_int_equal(route4(ch.f, 0, churn_prefix(i), 24, CHURN_BASE, 0), 0);
		ch.committed[i] = 0;
	}
	ch.c = cache4(ch.f, 128, READERS, mode, 0);
	memset(rd, 0, sizeof(rd));
	for (unsigned int k = 0; k < READERS; k++) {
		rd[k].ch = &ch;
		rd[k].idx = k;
		assert_int_equal(pthread_create(&th[k], NULL, churn_reader_main, &rd[k]), 0);
	}
	tdata_rng_seed(&r, seed);
	for (uint64_t e = 0; e < edits; e++) {
		unsigned int i = (unsigned int)(tdata_rng_next(&r) % CHURN_HOT);
		uint32_t v = ch.committed[i] + 1;

		assert_int_equal(route4(ch.f, 0, churn_prefix(i), 24, CHURN_BASE - v, v), 0);
		assert_int_equal(route4(ch.f, 1, churn_prefix(i), 24, CHURN_BASE - v + 1, v - 1),
				 0);
		__atomic_store_n(&ch.committed[i], v, __ATOMIC_RELEASE);
		if (rd[0].fail[0] || rd[1].fail[0] || rd[2].fail[0])
			break;
	}
	__atomic_store_n(&ch.stop, 1, __ATOMIC_RELEASE);
	for (unsigned int k = 0; k < READERS; k++)
		pthread_join(th[k], NULL);
	cache_get_stats(ch.c, &st);
	printf("churn %s: %llu edits, %llu/%llu/%llu checks, hits %llu misses %llu "
	       "invalidations %llu fill skips %llu\n",
	       cache_mode_name(mode), (unsigned long long)edits, (unsigned long long)rd[0].checks,
	       (unsigned long long)rd[1].checks, (unsigned long long)rd[2].checks,
	       (unsigned long long)st.hits, (unsigned long long)st.misses,
	       (unsigned long long)st.invalidations, (unsigned long long)st.fill_skips);
	for (unsigned int k = 0; k < READERS; k++) {
		if (rd[k].fail[0])
			fail_msg("reader %u: %s", k, rd[k].fail);
	}
	assert_true(st.hits > 0);
	assert_true(st.invalidations > 0);
	cache_destroy(ch.c);
	fib_destroy(ch.f);
}

static void test_cache_churn_never_stale_common(void **state)
{
	(void)state;
	churn_run(CACHE_COMMON);
}

static void test_cache_churn_never_stale_per_thread(void **state)
{
	(void)state;
	churn_run(CACHE_PERTHREAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cache_hit_equals_trie_and_counts),
		cmocka_unit_test(test_cache_route_change_invalidates),
		cmocka_unit_test(test_cache_reference_model_common),
		cmocka_unit_test(test_cache_reference_model_per_thread),
		cmocka_unit_test(test_cache_ipv6_answers_equal_trie),
		cmocka_unit_test(test_cache_size_floor_and_settings),
		cmocka_unit_test(test_cache_lru_keeps_a_hot_key_through_a_scan),
		cmocka_unit_test(test_cache_per_thread_mode_isolates_a_flood),
		cmocka_unit_test(test_cache_empty_lists_are_skipped_without_their_lock),
		cmocka_unit_test(test_cache_batch_answers_equal_the_trie),
		cmocka_unit_test(test_cache_flood_guard_bypasses_a_flood_and_lets_go),
		cmocka_unit_test(test_cache_second_miss_admission_stores_at_the_second_miss),
		cmocka_unit_test(test_cache_churn_never_stale_common),
		cmocka_unit_test(test_cache_churn_never_stale_per_thread),
	};
	const char *s = getenv("LCFIB_STRESS");

	seed = tdata_seed(0x5eedcac4e);
	if (s)
		stress = strtod(s, NULL) > 0 ? strtod(s, NULL) : 1;
	fib_reader_register();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
