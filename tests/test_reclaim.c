/* SPDX-License-Identifier: MIT */
/*
 * Reclamation bounded by sync-mem (lib/reclaim.h): the threshold's range,
 * the bound on pending bytes while grace periods are slow, a change of
 * sync-mem in the middle of a load, the byte accounting against the live
 * trie, and that nothing is freed while a reader may still hold it.
 *
 * Slow grace periods come from a reader thread that holds its read lock
 * about a millisecond at a time, as a busy dataplane thread would.
 * LCFIB_SEED reruns a failure.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <urcu/urcu-memb.h>

#include "lib/mem.h"
#include "lib/reclaim.h"
#include "lib/trie.h"
#include "tests/tdata.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static uint64_t seed;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_us(unsigned int us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static struct reclaim_stats stats(const struct reclaim *rc)
{
	struct reclaim_stats st;

	reclaim_get_stats(rc, &st);
	return st;
}

/* ------------------------------------------------------ route editing */

static int set4(struct trie4 *t, uint32_t key, unsigned int plen, uint32_t metric)
{
	struct tdata_edit req = { .metric = metric };

	return trie4_edit(t, key, plen, tdata_edit_set, &req);
}

static int del4(struct trie4 *t, uint32_t key, unsigned int plen)
{
	struct tdata_edit req = { .del = true };

	return trie4_edit(t, key, plen, tdata_edit_set, &req);
}

static int set6(struct trie6 *t, trie_key6 key, unsigned int plen, uint32_t metric)
{
	struct tdata_edit req = { .metric = metric };

	return trie6_edit(t, key, plen, tdata_edit_set, &req);
}

static int del6(struct trie6 *t, trie_key6 key, unsigned int plen)
{
	struct tdata_edit req = { .del = true };

	return trie6_edit(t, key, plen, tdata_edit_set, &req);
}

static uint32_t mask4(uint32_t key, unsigned int plen)
{
	return plen ? key & (uint32_t)(~0ull << (32 - plen)) : 0;
}

static trie_key6 mask6(trie_key6 key, unsigned int plen)
{
	if (plen == 0)
		return 0;
	return key & ~(((trie_key6)1 << (128 - plen)) - 1u);
}

/* ------------------------------------------------------- a slow reader */

/*
 * A reader that holds its read lock for @hold_us at a time, back to back,
 * so that every grace period lasts about that long and retired memory
 * piles up. While holding it looks up @t4 (when set), as a dataplane would.
 */
struct holder;
struct tuner;

struct slow_reader {
	pthread_t th;
	unsigned int hold_us;
	const struct trie4 *t4;
	atomic_bool stop;
	atomic_ulong holds;
	atomic_ulong bad; /* lookups that returned a route no edit made */
};

static void *slow_reader_main(void *arg)
{
	struct slow_reader *sr = arg;
	struct tdata_rng rng;

	tdata_rng_seed(&rng, seed ^ 0x51);
	urcu_memb_register_thread();
	while (!atomic_load(&sr->stop)) {
		urcu_memb_read_lock();
		if (sr->t4) {
			const struct fib_route *r = trie4_lookup_rcu(
				sr->t4, 0x0a000000u | (uint32_t)(tdata_rng_next(&rng) >> 40));

			if (r && (r->type != FIB_RT_UNICAST || r->plen > 32))
				atomic_fetch_add(&sr->bad, 1);
		}
		sleep_us(sr->hold_us);
		urcu_memb_read_unlock();
		atomic_fetch_add(&sr->holds, 1);
	}
	urcu_memb_unregister_thread();
	return NULL;
}

/*
 * The threads a test runs, so that its teardown can stop them when an
 * assertion leaves the test early: a reader left inside its critical
 * section would block every later grace period.
 */
static struct slow_reader *active_reader;
static struct holder *active_holder;
static struct tuner *active_tuner;

static void slow_reader_start(struct slow_reader *sr, unsigned int hold_us, const struct trie4 *t4)
{
	memset(sr, 0, sizeof(*sr));
	sr->hold_us = hold_us;
	sr->t4 = t4;
	assert_int_equal(pthread_create(&sr->th, NULL, slow_reader_main, sr), 0);
	active_reader = sr;
	while (atomic_load(&sr->holds) == 0)
		sched_yield();
}

static void slow_reader_stop(struct slow_reader *sr)
{
	atomic_store(&sr->stop, true);
	assert_int_equal(pthread_join(sr->th, NULL), 0);
	active_reader = NULL;
	assert_int_equal(atomic_load(&sr->bad), 0);
}

/* ------------------------------------------------------------- churn */

/*
 * Random prefixes in and out of one region, in waves: fill up to @cap
 * live prefixes, then drain to none, so that internal nodes inflate as
 * the region fills and halve and collapse as it empties. Every edit of a
 * live prefix, and every delete, retires a leaf.
 */
struct churn4 {
	struct trie4 *t;
	struct tdata_rng rng;
	uint32_t *key;
	uint8_t *plen;
	size_t n, cap;
	bool draining;
	uint64_t ops;
	unsigned int max_bits; /* widest internal node seen at a wave's crest */
};

static void churn4_init(struct churn4 *c, struct trie4 *t, size_t cap, uint64_t s)
{
	memset(c, 0, sizeof(*c));
	c->t = t;
	c->cap = cap;
	tdata_rng_seed(&c->rng, s);
	c->key = calloc(cap, sizeof(*c->key));
	c->plen = calloc(cap, sizeof(*c->plen));
	assert_non_null(c->key);
	assert_non_null(c->plen);
}

static void churn4_fini(struct churn4 *c)
{
	free(c->key);
	free(c->plen);
}

static void churn4_note_crest(struct churn4 *c)
{
	struct trie_stats ts;
	unsigned int bits;

	trie4_get_stats(c->t, &ts);
	bits = tdata_widest_bits(&ts);
	if (bits > c->max_bits)
		c->max_bits = bits;
}

/* One edit; asserts that the trie accepted it. */
static void churn4_step(struct churn4 *c)
{
	struct tdata_rng *rng = &c->rng;

	if (!c->draining) {
		uint64_t x = tdata_rng_next(rng);
		unsigned int plen = 16 + (unsigned int)(x % 17);
		uint32_t key = mask4(0x0a000000u | (uint32_t)(x >> 40), plen);

		assert_int_equal(set4(c->t, key, plen, 1 + (uint32_t)(x >> 50)), 0);
		c->key[c->n] = key;
		c->plen[c->n] = (uint8_t)plen;
		if (++c->n == c->cap) {
			churn4_note_crest(c);
			c->draining = true;
		}
	} else {
		size_t i = (size_t)(tdata_rng_next(rng) % c->n);

		assert_int_equal(del4(c->t, c->key[i], c->plen[i]), 0);
		c->n--;
		c->key[i] = c->key[c->n];
		c->plen[i] = c->plen[c->n];
		if (c->n == 0)
			c->draining = false;
	}
	c->ops++;
}

static void check_trie4(const struct trie4 *t)
{
	struct errbuf err = { { 0 } };
	int ret = trie4_check(t, &err);

	if (ret)
		print_error("trie4_check: %s\n", err.msg);
	assert_int_equal(ret, 0);
}

static void check_trie6(const struct trie6 *t)
{
	struct errbuf err = { { 0 } };
	int ret = trie6_check(t, &err);

	if (ret)
		print_error("trie6_check: %s\n", err.msg);
	assert_int_equal(ret, 0);
}

/* ----------------------------------------------------------- the tests */

static void test_reclaim_sync_mem_defaults_to_512k(void **state)
{
	struct mem *m = mem_new();
	struct reclaim *rc;

	(void)state;
	assert_non_null(m);
	rc = reclaim_new(m);
	assert_non_null(rc);
	assert_int_equal(reclaim_get_sync_mem(rc), 524288);
	assert_int_equal(RECLAIM_SYNC_MEM_DEFAULT, 524288);
	assert_int_equal(stats(rc).sync_mem, 524288);
	reclaim_destroy(rc);
	mem_destroy(m);
}

static void test_reclaim_sync_mem_out_of_range_changes_nothing(void **state)
{
	static const uint64_t bad[] = { 0, 1, 65535, 67108865, UINT64_MAX, 1ull << 32 };
	struct mem *m = mem_new();
	struct reclaim *rc = reclaim_new(m);

	(void)state;
	assert_non_null(rc);
	assert_int_equal(reclaim_set_sync_mem(rc, 1000000), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(reclaim_set_sync_mem(rc, bad[i]), -ERANGE);
		assert_int_equal(reclaim_get_sync_mem(rc), 1000000);
		assert_int_equal(stats(rc).sync_mem, 1000000);
	}
	reclaim_destroy(rc);
	mem_destroy(m);
}

static void test_reclaim_sync_mem_accepts_its_range(void **state)
{
	static const uint64_t good[] = { 65536, 67108864, 65537, 67108863, 524288, 1000000 };
	struct mem *m = mem_new();
	struct reclaim *rc = reclaim_new(m);

	(void)state;
	assert_non_null(rc);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(reclaim_set_sync_mem(rc, good[i]), 0);
		assert_int_equal(reclaim_get_sync_mem(rc), good[i]);
		assert_int_equal(stats(rc).sync_mem, good[i]);
	}
	reclaim_destroy(rc);
	mem_destroy(m);
}

/*
 * A reader inside its critical section from before any retire: it reads
 * every retired object (its pattern) until told to leave. Nothing may be
 * freed before it leaves: a freed slab object has its first word
 * overwritten, and a sanitizer build reports the use after free.
 */
#define HOLD_OBJ_SIZE 64
#define HOLD_OBJS     1024 /* 1024 * 64 = 65536 = RECLAIM_SYNC_MEM_MIN */

struct holder {
	pthread_t th;
	unsigned char *obj[HOLD_OBJS];
	atomic_uint published; /* objects in obj[] the reader may read */
	atomic_bool holding;
	_Atomic uint64_t release_at; /* leave the critical section at this time (0: not yet) */
	uint64_t left_at;
	unsigned long passes, corrupt;
};

static void fill_pattern(unsigned char *p, size_t size, unsigned int i)
{
	for (size_t k = 0; k < size; k++)
		p[k] = (unsigned char)(i * 31 + k * 7 + 1);
}

static unsigned long check_pattern(const unsigned char *p, size_t size, unsigned int i)
{
	unsigned long bad = 0;

	for (size_t k = 0; k < size; k++)
		bad += p[k] != (unsigned char)(i * 31 + k * 7 + 1);
	return bad;
}

static void holder_check_all(struct holder *h)
{
	unsigned int n = atomic_load_explicit(&h->published, memory_order_acquire);

	for (unsigned int i = 0; i < n; i++)
		h->corrupt += check_pattern(h->obj[i], HOLD_OBJ_SIZE, i) != 0;
	h->passes++;
}

static void *holder_main(void *arg)
{
	struct holder *h = arg;
	uint64_t until;

	urcu_memb_register_thread();
	urcu_memb_read_lock();
	atomic_store(&h->holding, true);
	for (;;) {
		holder_check_all(h);
		until = atomic_load(&h->release_at);
		if (until && now_ns() >= until)
			break;
		sleep_us(200);
	}
	holder_check_all(h);
	h->left_at = now_ns();
	urcu_memb_read_unlock();
	urcu_memb_unregister_thread();
	return NULL;
}

static void test_reclaim_waits_for_reader_when_pending_reaches_sync_mem(void **state)
{
	struct mem *m = mem_new();
	struct reclaim *rc = reclaim_new(m);
	struct holder *h = calloc(1, sizeof(*h));
	struct reclaim_stats st;
	struct mem_stats ms;
	uint64_t t0, t1;

	(void)state;
	assert_non_null(rc);
	assert_non_null(h);
	assert_int_equal(reclaim_set_sync_mem(rc, 65536), 0);
	for (unsigned int i = 0; i < HOLD_OBJS; i++) {
		h->obj[i] = mem_alloc(m, MEM_LEAF, HOLD_OBJ_SIZE);
		assert_non_null(h->obj[i]);
		fill_pattern(h->obj[i], HOLD_OBJ_SIZE, i);
	}
	atomic_store(&h->published, HOLD_OBJS);
	assert_int_equal(pthread_create(&h->th, NULL, holder_main, h), 0);
	active_holder = h;
	while (!atomic_load(&h->holding))
		sched_yield();

	/* 1023 * 64 = 65472 bytes: below sync-mem, so no wait, and the reader blocks any free. */
	for (unsigned int i = 0; i < HOLD_OBJS - 1; i++) {
		reclaim_retire(rc, h->obj[i], HOLD_OBJ_SIZE, MEM_LEAF);
		st = stats(rc);
		assert_int_equal(st.forced_waits, 0);
		assert_int_equal(st.pending_bytes, (uint64_t)(i + 1) * HOLD_OBJ_SIZE);
	}
	sleep_us(30000); /* past the background thread's linger: it may take a batch, not free it */
	st = stats(rc);
	assert_int_equal(st.freed_bytes, 0);
	assert_int_equal(st.pending_bytes, 65472);
	mem_get_stats(m, &ms);
	assert_int_equal(ms.cls[MEM_LEAF].objects, HOLD_OBJS);

	/* The 1024th brings pending to 65536 = sync-mem: this retire waits for the reader. */
	atomic_store(&h->release_at, now_ns() + 30 * 1000000ull);
	t0 = now_ns();
	reclaim_retire(rc, h->obj[HOLD_OBJS - 1], HOLD_OBJ_SIZE, MEM_LEAF);
	t1 = now_ns();
	assert_int_equal(pthread_join(h->th, NULL), 0);
	active_holder = NULL;

	st = stats(rc);
	assert_int_equal(st.forced_waits, 1);
	assert_true(t1 >= h->left_at);
	assert_true(st.wait_ns_max >= 10 * 1000000ull); /* the reader left 30 ms after t0 */
	assert_true(st.wait_ns_max <= t1 - t0);
	assert_int_equal(st.pending_bytes, 0);
	assert_int_equal(st.retired_bytes, 65536);
	assert_int_equal(st.freed_bytes, 65536);
	assert_int_equal(st.peak_pending, 65536);
	assert_int_equal(st.max_object, HOLD_OBJ_SIZE);
	assert_int_equal(st.retired_objects, HOLD_OBJS);
	mem_get_stats(m, &ms);
	assert_int_equal(ms.cls[MEM_LEAF].objects, 0);
	assert_int_equal(ms.cls[MEM_LEAF].bytes, 0);
	/* The reader saw every object intact until it left. */
	assert_true(h->passes >= 2);
	assert_int_equal(h->corrupt, 0);

	reclaim_destroy(rc);
	mem_destroy(m);
	free(h);
}

static void test_reclaim_object_of_sync_mem_or_more_is_waited_for(void **state)
{
	static const size_t size[] = { 65535, 65536, 100000, 300000 };
	struct mem *m = mem_new();
	struct reclaim *rc = reclaim_new(m);
	struct reclaim_stats st;
	uint64_t waits = 0;

	(void)state;
	assert_non_null(rc);
	assert_int_equal(reclaim_set_sync_mem(rc, 65536), 0);
	for (size_t i = 0; i < sizeof(size) / sizeof(size[0]); i++) {
		void *p;

		reclaim_barrier(rc);
		p = mem_alloc(m, MEM_LEAF, size[i]);
		assert_non_null(p);
		reclaim_retire(rc, p, size[i], MEM_LEAF);
		st = stats(rc);
		if (size[i] >= 65536) {
			waits++;
			assert_int_equal(st.pending_bytes, 0);
		} else {
			assert_true(st.pending_bytes <= size[i]);
		}
		assert_int_equal(st.forced_waits, waits);
		assert_true(st.peak_pending >= size[i]);
		assert_true(st.peak_pending <= st.sync_mem + st.max_object);
		assert_int_equal(st.max_object, size[i]);
	}
	reclaim_destroy(rc);
	mem_destroy(m);
}

/* Retires @n objects of assorted sizes (mostly small, a few over sync-mem) and checks each. */
static void retire_assorted(struct mem *m, struct reclaim *rc, unsigned int n, uint64_t s)
{
	struct tdata_rng rng;
	struct reclaim_stats st, prev = stats(rc);
	uint64_t sync_mem = reclaim_get_sync_mem(rc), sum = 0, max = 0;

	tdata_rng_seed(&rng, s);
	for (unsigned int i = 0; i < n; i++) {
		uint64_t x = tdata_rng_next(&rng);
		size_t size;
		void *p;

		switch (x % 16) {
		case 0:
			size = 4096 + (size_t)(x >> 40) % (3 * 65536); /* up to 200 KiB */
			break;
		case 1:
		case 2:
			size = 513 + (size_t)(x >> 40) % 8192; /* malloc'd */
			break;
		default:
			size = 1 + (size_t)(x >> 40) % 512; /* slab sizes, odd ones too */
			break;
		}
		p = mem_alloc(m, MEM_LEAF, size);
		assert_non_null(p);
		memset(p, 0xa5, size);
		reclaim_retire(rc, p, size, MEM_LEAF);
		sum += size;
		if (size > max)
			max = size;
		st = stats(rc);
		/* The retire that brings pending to sync-mem waits and frees it all. */
		assert_true(st.pending_bytes < sync_mem);
		assert_true(st.pending_bytes <= prev.pending_bytes + size);
		if (st.forced_waits != prev.forced_waits)
			assert_int_equal(st.pending_bytes, 0);
		if (size >= sync_mem)
			assert_int_equal(st.forced_waits, prev.forced_waits + 1);
		assert_true(st.peak_pending <= sync_mem + st.max_object);
		prev = st;
	}
	assert_int_equal(st.max_object, max);
	assert_int_equal(st.retired_bytes, sum);
	assert_int_equal(st.retired_objects, n);
}

static void test_reclaim_pending_stays_bounded_for_assorted_sizes(void **state)
{
	static const uint64_t sync_mems[] = { 65536, 1 * MIB };
	struct mem_stats ms;

	(void)state;
	for (size_t k = 0; k < sizeof(sync_mems) / sizeof(sync_mems[0]); k++) {
		struct mem *m = mem_new();
		struct reclaim *rc = reclaim_new(m);
		struct slow_reader sr;
		struct reclaim_stats st;

		assert_non_null(rc);
		assert_int_equal(reclaim_set_sync_mem(rc, sync_mems[k]), 0);
		slow_reader_start(&sr, 1000, NULL);
		retire_assorted(m, rc, 4000, seed + k);
		slow_reader_stop(&sr);
		st = stats(rc);
		/* At 64K, objects of 64K and more force a wait each; at 1M it depends on timing. */
		if (sync_mems[k] == 65536)
			assert_true(st.forced_waits > 0);
		assert_true(st.peak_pending <= st.sync_mem + st.max_object);

		reclaim_barrier(rc);
		st = stats(rc);
		assert_int_equal(st.pending_bytes, 0);
		assert_int_equal(st.freed_bytes, st.retired_bytes);
		mem_get_stats(m, &ms);
		assert_int_equal(ms.cls[MEM_LEAF].objects, 0);
		assert_int_equal(ms.cls[MEM_LEAF].bytes, 0);
		assert_int_equal(ms.cls[MEM_RECLAIM].bytes, 0);
		reclaim_destroy(rc);
		mem_destroy(m);
	}
}

/*
 * Churns a trie while the slow reader holds up grace periods; after every
 * edit checks the bound. Returns the highest pending_bytes sampled.
 */
static uint64_t churn_checking_bound(struct churn4 *c, struct reclaim *rc, uint64_t ops)
{
	uint64_t max_seen = 0;

	for (uint64_t i = 0; i < ops; i++) {
		struct reclaim_stats st;

		churn4_step(c);
		st = stats(rc);
		assert_true(st.pending_bytes <= st.sync_mem + st.max_object);
		assert_true(st.pending_bytes < st.sync_mem); /* the retire that reached it waited */
		if (st.pending_bytes > max_seen)
			max_seen = st.pending_bytes;
	}
	return max_seen;
}

static void test_reclaim_trie_churn_keeps_pending_under_sync_mem(void **state)
{
	struct mem *m = mem_new();
	struct reclaim *rc = reclaim_new(m);
	struct trie4 *t = trie4_new(m, rc);
	struct slow_reader sr;
	struct reclaim_stats st;
	struct mem_stats ms;
	struct churn4 c;

	(void)state;
	assert_non_null(t);
	assert_int_equal(reclaim_set_sync_mem(rc, 64 * KIB), 0);
	churn4_init(&c, t, 20000, seed);
	slow_reader_start(&sr, 1000, t);
	churn_checking_bound(&c, rc, 100000);
	slow_reader_stop(&sr);

	st = stats(rc);
	print_message("sync-mem 64K: %llu edits, %llu forced waits (%.1f ms), peak %llu, max "
		      "object %llu, "
		      "widest node %u bits, reader holds %lu\n",
		      (unsigned long long)c.ops, (unsigned long long)st.forced_waits,
		      st.wait_ns_total / 1e6, (unsigned long long)st.peak_pending,
		      (unsigned long long)st.max_object, c.max_bits, atomic_load(&sr.holds));
	assert_true(st.forced_waits > 0);
	assert_true(st.peak_pending <= st.sync_mem + st.max_object);
	check_trie4(t);

	/* The churn did reshape internal nodes: they were retired, and widened. */
	reclaim_barrier(rc);
	mem_get_stats(m, &ms);
	assert_true(ms.cls[MEM_TNODE].frees > 0);
	assert_true(ms.cls[MEM_LEAF].frees > 0);
	assert_true(c.max_bits >= 4);
	churn4_fini(&c);
	trie4_destroy(t);
	reclaim_destroy(rc);
	mem_destroy(m);
}

static void test_reclaim_sync_mem_lowered_mid_load_takes_effect(void **state)
{
	struct mem *m = mem_new();
	struct reclaim *rc = reclaim_new(m);
	struct trie4 *t = trie4_new(m, rc);
	struct slow_reader sr;
	struct reclaim_stats before, after;
	uint64_t max_after = 0, retired_at_change;
	struct churn4 c;

	(void)state;
	assert_non_null(t);
	assert_int_equal(reclaim_set_sync_mem(rc, 64 * MIB), 0);
	churn4_init(&c, t, 20000, seed + 7);
	slow_reader_start(&sr, 1000, t);
	churn_checking_bound(&c, rc, 60000);
	before = stats(rc);

	assert_int_equal(reclaim_set_sync_mem(rc, 64 * KIB), 0);
	retired_at_change = before.retired_objects;
	for (int i = 0; i < 60000; i++) {
		struct reclaim_stats st;

		churn4_step(&c);
		st = stats(rc);
		/* Honoured at the next retire: sample from the first one on. */
		if (st.retired_objects > retired_at_change && st.pending_bytes > max_after)
			max_after = st.pending_bytes;
	}
	slow_reader_stop(&sr);
	after = stats(rc);

	print_message("64M: forced waits %llu, peak %llu; then 64K: forced waits %llu, "
		      "highest pending %llu, max object %llu\n",
		      (unsigned long long)before.forced_waits,
		      (unsigned long long)before.peak_pending,
		      (unsigned long long)(after.forced_waits - before.forced_waits),
		      (unsigned long long)max_after, (unsigned long long)after.max_object);
	assert_true(after.retired_objects > retired_at_change);
	assert_true(max_after <= 64 * KIB + after.max_object);
	assert_true(max_after < 64 * KIB);
	assert_true(after.forced_waits > before.forced_waits);
	/* Under 64M the load ran with more memory in flight than 64K allows. */
	assert_true(before.peak_pending > 64 * KIB);
	check_trie4(t);
	churn4_fini(&c);
	trie4_destroy(t);
	reclaim_destroy(rc);
	mem_destroy(m);
}

static void test_reclaim_sync_mem_raised_mid_load_stops_waits(void **state)
{
	struct mem *m = mem_new();
	struct reclaim *rc = reclaim_new(m);
	struct trie4 *t = trie4_new(m, rc);
	struct slow_reader sr;
	struct reclaim_stats before, after;
	struct churn4 c;

	(void)state;
	assert_non_null(t);
	assert_int_equal(reclaim_set_sync_mem(rc, 64 * KIB), 0);
	churn4_init(&c, t, 20000, seed + 11);
	slow_reader_start(&sr, 1000, t);
	churn_checking_bound(&c, rc, 40000);
	before = stats(rc);
	assert_true(before.forced_waits > 0);

	assert_int_equal(reclaim_set_sync_mem(rc, 64 * MIB), 0);
	churn_checking_bound(&c, rc, 40000);
	slow_reader_stop(&sr);
	after = stats(rc);
	print_message("64K: forced waits %llu; then 64M: forced waits %llu, peak %llu\n",
		      (unsigned long long)before.forced_waits,
		      (unsigned long long)(after.forced_waits - before.forced_waits),
		      (unsigned long long)after.peak_pending);
	/* The background thread keeps up: the writer no longer waits. */
	assert_true(after.forced_waits - before.forced_waits < before.forced_waits / 4 + 1);
	churn4_fini(&c);
	trie4_destroy(t);
	reclaim_destroy(rc);
	mem_destroy(m);
}

/* After a barrier, what mem holds for leaves and internal nodes is exactly the live trie. */
static void check_accounting(struct mem *m, struct reclaim *rc, const struct trie_stats *ts)
{
	struct reclaim_stats st;
	struct mem_stats ms;

	reclaim_barrier(rc);
	st = stats(rc);
	assert_int_equal(st.pending_bytes, 0);
	assert_int_equal(st.freed_bytes, st.retired_bytes);
	mem_get_stats(m, &ms);
	assert_int_equal(ms.cls[MEM_LEAF].bytes, ts->leaf_bytes);
	assert_int_equal(ms.cls[MEM_TNODE].bytes, ts->tnode_bytes);
	assert_int_equal(ms.cls[MEM_FALLBACK].bytes, ts->fallback_bytes);
	/* Inline leaves have no object of their own; the routes they share have one each. */
	assert_int_equal(ms.cls[MEM_LEAF].objects,
			 ts->leaves - ts->inline_leaves + ts->shared_routes);
	assert_int_equal(ms.cls[MEM_TNODE].objects, ts->tnodes);
	assert_int_equal(ms.cls[MEM_RECLAIM].bytes, 0);
}

static void check_all_freed(struct mem *m)
{
	struct mem_stats ms;

	mem_get_stats(m, &ms);
	assert_int_equal(ms.cls[MEM_LEAF].bytes, 0);
	assert_int_equal(ms.cls[MEM_TNODE].bytes, 0);
	assert_int_equal(ms.cls[MEM_TABLE].bytes, 0);
	assert_int_equal(ms.cls[MEM_RECLAIM].bytes, 0);
	assert_int_equal(ms.live_bytes, 0);
}

static void test_reclaim_accounting_matches_live_trie4(void **state)
{
	struct mem *m = mem_new();
	struct reclaim *rc = reclaim_new(m);
	struct trie4 *t = trie4_new(m, rc);
	struct trie_stats ts;
	struct churn4 c;

	(void)state;
	assert_non_null(t);
	churn4_init(&c, t, 5000, seed + 3);
	/* Mid-wave: a full wave, then part of the next fill. */
	for (int i = 0; i < 12000; i++)
		churn4_step(&c);
	assert_true(c.n > 0);
	trie4_get_stats(t, &ts);
	assert_int_equal(ts.routes, trie4_routes(t));
	assert_true(ts.tnodes > 0);
	check_accounting(m, rc, &ts);
	check_trie4(t);

	/* Delete everything: every byte comes back. */
	while (c.n) {
		c.draining = true;
		churn4_step(&c);
	}
	trie4_get_stats(t, &ts);
	assert_int_equal(ts.leaves, 0);
	check_accounting(m, rc, &ts);
	churn4_fini(&c);
	trie4_destroy(t);
	reclaim_destroy(rc);
	check_all_freed(m);
	mem_destroy(m);
}

static void test_reclaim_accounting_matches_live_trie6(void **state)
{
	struct mem *m = mem_new();
	struct reclaim *rc = reclaim_new(m);
	struct trie6 *t = trie6_new(m, rc);
	const trie_key6 base = (trie_key6)0x20010db8u << 96;
	enum { N = 4000 };
	trie_key6 *key = calloc(N, sizeof(*key));
	uint8_t *plen = calloc(N, 1);
	struct tdata_rng rng;
	struct trie_stats ts;

	(void)state;
	assert_non_null(t);
	assert_non_null(key);
	assert_non_null(plen);
	tdata_rng_seed(&rng, seed + 5);
	for (int i = 0; i < N; i++) {
		uint64_t x = tdata_rng_next(&rng), y = tdata_rng_next(&rng);

		plen[i] = (uint8_t)(32 + x % 97);
		key[i] = mask6(base | ((trie_key6)(x >> 32) << 64) | y, plen[i]);
		assert_int_equal(set6(t, key[i], plen[i], 1 + (uint32_t)(y >> 54)), 0);
	}
	/* Replace some, delete some. */
	for (int i = 0; i < N; i += 3)
		assert_int_equal(set6(t, key[i], plen[i], 7), 0);
	for (int i = 1; i < N; i += 3)
		assert_int_equal(del6(t, key[i], plen[i]), 0);
	trie6_get_stats(t, &ts);
	assert_true(ts.tnodes > 0);
	check_accounting(m, rc, &ts);
	check_trie6(t);

	for (int i = 0; i < N; i++)
		assert_int_equal(del6(t, key[i], plen[i]), 0);
	trie6_get_stats(t, &ts);
	assert_int_equal(ts.leaves, 0);
	check_accounting(m, rc, &ts);
	trie6_destroy(t);
	reclaim_destroy(rc);
	check_all_freed(m);
	mem_destroy(m);
	free(key);
	free(plen);
}

/* Another thread tunes sync-mem while the writer loads. */
struct tuner {
	pthread_t th;
	struct reclaim *rc;
	atomic_bool stop;
	atomic_ulong sets; /* read by the churning thread while the tuner runs */
	unsigned long wrong; /* a set that failed, or a read that disagreed */
};

static void *tuner_main(void *arg)
{
	static const uint64_t vals[] = { 65536, 1 * MIB, 67108864, 200000, 524288 };
	struct tuner *tu = arg;
	struct reclaim_stats st;

	for (unsigned long i = 0; !atomic_load(&tu->stop); i++) {
		uint64_t v = vals[i % (sizeof(vals) / sizeof(vals[0]))];

		tu->wrong += reclaim_set_sync_mem(tu->rc, v) != 0;
		tu->wrong += reclaim_get_sync_mem(tu->rc) != v;
		tu->wrong += reclaim_set_sync_mem(tu->rc, 65535) != -ERANGE;
		tu->wrong += reclaim_set_sync_mem(tu->rc, 67108865) != -ERANGE;
		reclaim_get_stats(tu->rc, &st);
		tu->wrong += st.sync_mem != v;
		tu->sets++;
		sleep_us(100);
	}
	/* The last word: the smallest. */
	tu->wrong += reclaim_set_sync_mem(tu->rc, 65536) != 0;
	return NULL;
}

static void test_reclaim_sync_mem_set_from_another_thread(void **state)
{
	struct mem *m = mem_new();
	struct reclaim *rc = reclaim_new(m);
	struct trie4 *t = trie4_new(m, rc);
	struct slow_reader sr;
	struct tuner tu = { .rc = rc };
	struct reclaim_stats st, st0;
	struct churn4 c;
	uint64_t max_after = 0;

	(void)state;
	assert_non_null(t);
	churn4_init(&c, t, 20000, seed + 13);
	slow_reader_start(&sr, 500, t);
	assert_int_equal(pthread_create(&tu.th, NULL, tuner_main, &tu), 0);
	active_tuner = &tu;
	/* Churn while the tuner sets: a loaded machine may start it late. */
	for (int i = 0; i < 60000 || atomic_load(&tu.sets) < 10; i++)
		churn4_step(&c);
	atomic_store(&tu.stop, true);
	assert_int_equal(pthread_join(tu.th, NULL), 0);
	active_tuner = NULL;
	assert_int_equal(tu.wrong, 0);
	assert_true(tu.sets > 0);
	assert_int_equal(reclaim_get_sync_mem(rc), 65536);

	/* The tuner's last value is honoured from the next retire on. */
	st0 = stats(rc);
	for (int i = 0; i < 30000; i++) {
		churn4_step(&c);
		st = stats(rc);
		if (st.retired_objects > st0.retired_objects && st.pending_bytes > max_after)
			max_after = st.pending_bytes;
	}
	slow_reader_stop(&sr);
	st = stats(rc);
	print_message(
		"%lu sets from another thread; then forced waits %llu, highest pending %llu\n",
		atomic_load(&tu.sets), (unsigned long long)(st.forced_waits - st0.forced_waits),
		(unsigned long long)max_after);
	assert_int_equal(st.sync_mem, 65536);
	assert_true(max_after < 65536);
	assert_true(st.forced_waits > st0.forced_waits);
	check_trie4(t);
	churn4_fini(&c);
	trie4_destroy(t);
	reclaim_destroy(rc);
	mem_destroy(m);
}

/* Stops what a failed test left running (its memory is leaked, not freed under a thread). */
static int stop_threads(void **state)
{
	(void)state;
	if (active_reader) {
		atomic_store(&active_reader->stop, true);
		pthread_join(active_reader->th, NULL);
		active_reader = NULL;
	}
	if (active_holder) {
		atomic_store(&active_holder->release_at, 1);
		pthread_join(active_holder->th, NULL);
		active_holder = NULL;
	}
	if (active_tuner) {
		atomic_store(&active_tuner->stop, true);
		pthread_join(active_tuner->th, NULL);
		active_tuner = NULL;
	}
	return 0;
}

#define TEST(f) cmocka_unit_test_teardown(f, stop_threads)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(test_reclaim_sync_mem_defaults_to_512k),
		TEST(test_reclaim_sync_mem_out_of_range_changes_nothing),
		TEST(test_reclaim_sync_mem_accepts_its_range),
		TEST(test_reclaim_waits_for_reader_when_pending_reaches_sync_mem),
		TEST(test_reclaim_object_of_sync_mem_or_more_is_waited_for),
		TEST(test_reclaim_pending_stays_bounded_for_assorted_sizes),
		TEST(test_reclaim_trie_churn_keeps_pending_under_sync_mem),
		TEST(test_reclaim_sync_mem_lowered_mid_load_takes_effect),
		TEST(test_reclaim_sync_mem_raised_mid_load_stops_waits),
		TEST(test_reclaim_accounting_matches_live_trie4),
		TEST(test_reclaim_accounting_matches_live_trie6),
		TEST(test_reclaim_sync_mem_set_from_another_thread),
	};

	seed = tdata_seed(0x7ec1a1b5eedull);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
