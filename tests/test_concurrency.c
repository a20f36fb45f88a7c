/* SPDX-License-Identifier: MIT */
/*
 * Lock-free readers against one churning writer, both families.
 *
 * Sentinel prefixes (a default route, short ones like 10.0.0.0/8, long
 * ones down to host routes) are set once and never change. Reader threads
 * look up probe addresses whose longest match is a sentinel, one by one
 * and in batches, and check every answer (prefix length and metric),
 * while the writer churns random prefixes in and out around the probes:
 * leaves of the sentinels' keys are replaced, and the nodes on their
 * paths inflate, halve and collapse. A churned prefix never covers a probe
 * more specifically than its sentinel, so the right answer never changes;
 * a lookup that needs a short sentinel must backtrack past the churn.
 *
 * In two runs each wave rises in one bulk load, sorted: its end builds the
 * trie anew, half of it on a second thread, and swaps it in under the
 * readers. Every 50,000 edits from the 25,000th, compaction does the same
 * (fib_mem_compact(): the trie built anew into new chunks).
 *
 * Readers also look up random addresses near the probes and check that
 * whatever comes back is a route some edit made (type, metric, length),
 * which catches reads of freed or half-built nodes in a normal build; the
 * sanitizer builds catch them directly.
 *
 * LCFIB_SEED reruns a failure; LCFIB_STRESS=N runs N times as many edits (a
 * fraction runs fewer, as under ThreadSanitizer).
 */
#include <arpa/inet.h>
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

typedef unsigned __int128 u128;

#define NR_READERS          2
#define PROBES_PER_SENTINEL 4
#define MAX_SENTINELS       24
#define MAX_PROBES          (MAX_SENTINELS * PROBES_PER_SENTINEL)
#define SENTINEL_METRIC     1000 /* sentinel i has metric 1000 + i; churned routes are below */
#define CHURN_METRIC_MAX    999

static uint64_t seed;
static double stress = 1; /* LCFIB_STRESS: scales the edits (0.05 for ThreadSanitizer) */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------ the two families, one face */

struct fam {
	const char *name;
	unsigned int bits;
	void *(*new_trie)(struct mem *m, struct reclaim *rc);
	void (*destroy)(void *t);
	int (*edit)(void *t, u128 key, unsigned int plen, trie_edit_fn *fn, void *ctx);
	const struct fib_route *(*lookup)(const void *t, u128 key);
	void (*batch)(const void *t, const u128 *key, const struct fib_route **res, unsigned int n);
	int (*check)(const void *t, struct errbuf *err);
	void (*get_stats)(const void *t, struct trie_stats *st);
	void (*set_bulk)(void *t, bool on);
	bool (*compact)(void *t);
	int (*parse)(const char *s, u128 *key);
	void (*format)(u128 key, char *buf, size_t size);
};

#define BATCH_MAX 128

/* Each trie may build anew on two threads: the bulk runs' ends then do (see main()). */
static void *fam4_new(struct mem *m, struct reclaim *rc)
{
	struct trie4 *t = trie4_new(m, rc);

	if (t)
		trie4_set_build_threads(t, 2);
	return t;
}

static void fam4_destroy(void *t)
{
	trie4_destroy(t);
}

static int fam4_edit(void *t, u128 key, unsigned int plen, trie_edit_fn *fn, void *ctx)
{
	return trie4_edit(t, (uint32_t)key, plen, fn, ctx);
}

static const struct fib_route *fam4_lookup(const void *t, u128 key)
{
	return trie4_lookup_rcu(t, (uint32_t)key);
}

static void fam4_batch(const void *t, const u128 *key, const struct fib_route **res, unsigned int n)
{
	uint32_t k4[BATCH_MAX];

	for (unsigned int i = 0; i < n; i++)
		k4[i] = (uint32_t)key[i];
	trie4_lookup_batch_rcu(t, k4, res, n);
}

static int fam4_check(const void *t, struct errbuf *err)
{
	return trie4_check(t, err);
}

static void fam4_get_stats(const void *t, struct trie_stats *st)
{
	trie4_get_stats(t, st);
}

static void fam4_set_bulk(void *t, bool on)
{
	trie4_set_bulk(t, on);
}

static bool fam4_compact(void *t)
{
	return trie4_compact(t);
}

static int fam4_parse(const char *s, u128 *key)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -EINVAL;
	*key = ntohl(a.s_addr);
	return 0;
}

static void fam4_format(u128 key, char *buf, size_t size)
{
	struct in_addr a = { .s_addr = htonl((uint32_t)key) };

	inet_ntop(AF_INET, &a, buf, (socklen_t)size);
}

static void *fam6_new(struct mem *m, struct reclaim *rc)
{
	struct trie6 *t = trie6_new(m, rc);

	if (t)
		trie6_set_build_threads(t, 2);
	return t;
}

static void fam6_destroy(void *t)
{
	trie6_destroy(t);
}

static int fam6_edit(void *t, u128 key, unsigned int plen, trie_edit_fn *fn, void *ctx)
{
	return trie6_edit(t, key, plen, fn, ctx);
}

static const struct fib_route *fam6_lookup(const void *t, u128 key)
{
	return trie6_lookup_rcu(t, key);
}

static void fam6_batch(const void *t, const u128 *key, const struct fib_route **res, unsigned int n)
{
	trie_key6 k6[BATCH_MAX];

	for (unsigned int i = 0; i < n; i++)
		k6[i] = key[i];
	trie6_lookup_batch_rcu(t, k6, res, n);
}

static int fam6_check(const void *t, struct errbuf *err)
{
	return trie6_check(t, err);
}

static void fam6_get_stats(const void *t, struct trie_stats *st)
{
	trie6_get_stats(t, st);
}

static void fam6_set_bulk(void *t, bool on)
{
	trie6_set_bulk(t, on);
}

static bool fam6_compact(void *t)
{
	return trie6_compact(t);
}

static int fam6_parse(const char *s, u128 *key)
{
	struct in6_addr a;
	u128 k = 0;

	if (inet_pton(AF_INET6, s, &a) != 1)
		return -EINVAL;
	for (int i = 0; i < 16; i++)
		k = (k << 8) | a.s6_addr[i];
	*key = k;
	return 0;
}

static void fam6_format(u128 key, char *buf, size_t size)
{
	struct in6_addr a;

	for (int i = 0; i < 16; i++)
		a.s6_addr[i] = (uint8_t)(key >> (8 * (15 - i)));
	inet_ntop(AF_INET6, &a, buf, (socklen_t)size);
}

static const struct fam fam4 = {
	.name = "ipv4",
	.bits = 32,
	.new_trie = fam4_new,
	.destroy = fam4_destroy,
	.edit = fam4_edit,
	.lookup = fam4_lookup,
	.batch = fam4_batch,
	.check = fam4_check,
	.get_stats = fam4_get_stats,
	.set_bulk = fam4_set_bulk,
	.compact = fam4_compact,
	.parse = fam4_parse,
	.format = fam4_format,
};

static const struct fam fam6 = {
	.name = "ipv6",
	.bits = 128,
	.new_trie = fam6_new,
	.destroy = fam6_destroy,
	.edit = fam6_edit,
	.lookup = fam6_lookup,
	.batch = fam6_batch,
	.check = fam6_check,
	.get_stats = fam6_get_stats,
	.set_bulk = fam6_set_bulk,
	.compact = fam6_compact,
	.parse = fam6_parse,
	.format = fam6_format,
};

/* The lowest @n bits set, 0 <= n <= 128. */
static u128 low_bits(unsigned int n)
{
	return n >= 128 ? ~(u128)0 : ((u128)1 << n) - 1u;
}

/* Keys of @bits bits with the bits past @plen cleared. */
static u128 key_mask(u128 key, unsigned int bits, unsigned int plen)
{
	return key & ~low_bits(bits - plen);
}

static bool covers(u128 key, unsigned int plen, u128 addr, unsigned int bits)
{
	return key_mask(addr, bits, plen) == key;
}

static u128 rng128(struct tdata_rng *rng)
{
	u128 hi = tdata_rng_next(rng);

	return (hi << 64) | tdata_rng_next(rng);
}

/* --------------------------------------------------- sentinels and probes */

static const char *const sentinels4[] = {
	"0.0.0.0/0",      "10.0.0.0/8",     "10.1.0.0/16",      "10.1.2.0/24",      "10.1.2.3/32",
	"10.64.0.0/10",   "10.128.0.0/9",   "10.200.0.0/13",    "172.16.0.0/12",    "172.20.5.0/24",
	"192.168.0.0/16", "192.168.1.0/24", "192.168.1.128/25", "192.168.1.255/32", "100.64.0.0/10",
	"1.2.3.4/32",     "203.0.113.0/24", "128.0.0.0/1",      "64.0.0.0/2",       "198.18.0.0/15",
};

static const char *const sentinels6[] = {
	"::/0",
	"2000::/3",
	"2001:db8::/32",
	"2001:db8:1::/48",
	"2001:db8:1:2::/64",
	"2001:db8:1:2::1/128",
	"2001:db8:8000::/33",
	"2001:db8:ff00::/40",
	"2001::/16",
	"2a00::/12",
	"2a00:1450::/32",
	"2a00:1450:4001::/48",
	"fd00::/8",
	"fd12:3456:789a::/48",
	"fe80::/10",
	"2400:cb00::/32",
	"2606:4700::/32",
	"2606:4700:10::/44",
	"3fff::/20",
	"2001:db8:1:2:3:4:5:6/128",
};

struct sentinel {
	u128 key;
	unsigned int plen;
	uint32_t metric;
};

struct probe {
	u128 addr;
	unsigned int plen; /* of its sentinel: the answer */
	uint32_t metric;
};

struct run;

struct reader {
	pthread_t th;
	struct run *r;
	unsigned int id;
	atomic_ulong rounds;
	unsigned long lookups, batch_lookups, random_lookups;
	unsigned long failures;
	char first_failure[256];
};

/* One run: the trie, its sentinels and probes, and what the threads share. */
struct run {
	const struct fam *f;
	void *t;
	struct mem *m;
	struct reclaim *rc;
	struct sentinel sen[MAX_SENTINELS];
	unsigned int nsen;
	struct probe probe[MAX_PROBES];
	unsigned int nprobe;
	atomic_bool stop;
	struct reader rd[NR_READERS];
	unsigned int nr_started;
};

/* The run whose readers a failed test leaves running; its teardown stops them. */
static struct run *active_run;

static void parse_sentinel(const struct fam *f, const char *s, struct sentinel *out)
{
	char buf[64];
	char *slash;

	snprintf(buf, sizeof(buf), "%s", s);
	slash = strchr(buf, '/');
	assert_non_null(slash);
	*slash = '\0';
	assert_int_equal(f->parse(buf, &out->key), 0);
	out->plen = (unsigned int)atoi(slash + 1);
	assert_true(out->plen <= f->bits);
	assert_true(key_mask(out->key, f->bits, out->plen) == out->key);
}

/* The sentinel that is the longest match of @addr. */
static const struct sentinel *sentinel_lpm(const struct run *r, u128 addr)
{
	const struct sentinel *best = NULL;

	for (unsigned int i = 0; i < r->nsen; i++) {
		const struct sentinel *s = &r->sen[i];

		if (covers(s->key, s->plen, addr, r->f->bits) && (!best || s->plen > best->plen))
			best = s;
	}
	return best;
}

/* Probes: addresses inside each sentinel whose longest match is that sentinel. */
static void make_probes(struct run *r, struct tdata_rng *rng)
{
	unsigned int bits = r->f->bits;

	for (unsigned int i = 0; i < r->nsen; i++) {
		const struct sentinel *s = &r->sen[i];
		unsigned int want = s->plen == bits ? 1 : PROBES_PER_SENTINEL, got = 0;

		for (int tries = 0; got < want && tries < 100000; tries++) {
			u128 host = rng128(rng) & low_bits(bits - s->plen);
			u128 a = s->key | host;

			if (sentinel_lpm(r, a) != s)
				continue;
			r->probe[r->nprobe++] =
				(struct probe){ .addr = a, .plen = s->plen, .metric = s->metric };
			got++;
		}
		assert_int_equal(got, want);
	}
}

/* Whether the prefix would change the answer of a probe (or replace a sentinel). */
static bool hides_probe(const struct run *r, u128 key, unsigned int plen)
{
	for (unsigned int i = 0; i < r->nprobe; i++) {
		if (plen >= r->probe[i].plen && covers(key, plen, r->probe[i].addr, r->f->bits))
			return true;
	}
	return false;
}

/* ----------------------------------------------------------- readers */

static void reader_fail(struct reader *rd, const char *how, const struct probe *p,
			const struct fib_route *got)
{
	char a[INET6_ADDRSTRLEN];

	if (rd->failures++)
		return;
	rd->r->f->format(p->addr, a, sizeof(a));
	if (got)
		snprintf(rd->first_failure, sizeof(rd->first_failure),
			 "%s lookup of %s: want /%u metric %u, got /%u metric %u type %u", how, a,
			 p->plen, p->metric, got->plen, got->metric, got->type);
	else
		snprintf(rd->first_failure, sizeof(rd->first_failure),
			 "%s lookup of %s: want /%u metric %u, got no route", how, a, p->plen,
			 p->metric);
}

static bool answer_ok(const struct probe *p, const struct fib_route *got)
{
	return got && got->plen == p->plen && got->metric == p->metric &&
	       got->type == FIB_RT_UNICAST;
}

/* Whatever a lookup returns must be a route an edit made. */
static bool route_sane(const struct run *r, const struct fib_route *got)
{
	if (!got)
		return true;
	if (got->type != FIB_RT_UNICAST || got->plen > r->f->bits || got->nh || got->proto ||
	    got->scope)
		return false;
	if (got->metric >= SENTINEL_METRIC)
		return got->metric < SENTINEL_METRIC + r->nsen &&
		       r->sen[got->metric - SENTINEL_METRIC].plen == got->plen;
	return got->metric >= 1;
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct run *r = rd->r;
	const struct fam *f = r->f;
	struct tdata_rng rng;
	u128 key[BATCH_MAX];
	const struct fib_route *res[BATCH_MAX];

	tdata_rng_seed(&rng, seed ^ (0x1000u + rd->id));
	for (unsigned int i = 0; i < r->nprobe; i++)
		key[i] = r->probe[i].addr;
	urcu_memb_register_thread();
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		unsigned long round = atomic_load_explicit(&rd->rounds, memory_order_relaxed);
		/* Batches of every size up to all the probes, so partial lane groups run too. */
		unsigned int nb = round % 2 ? r->nprobe : 1 + (unsigned int)(round % r->nprobe);

		urcu_memb_read_lock();
		for (unsigned int i = 0; i < r->nprobe; i++) {
			const struct fib_route *got = f->lookup(r->t, r->probe[i].addr);

			if (!answer_ok(&r->probe[i], got))
				reader_fail(rd, "single", &r->probe[i], got);
		}
		rd->lookups += r->nprobe;

		memset(res, 0, sizeof(res));
		f->batch(r->t, key, res, nb);
		for (unsigned int i = 0; i < nb; i++) {
			if (!answer_ok(&r->probe[i], res[i]))
				reader_fail(rd, "batch", &r->probe[i], res[i]);
		}
		rd->batch_lookups += nb;

		for (int i = 0; i < 16; i++) {
			const struct probe *p = &r->probe[tdata_rng_next(&rng) % r->nprobe];
			u128 a = p->addr ^ (rng128(&rng) >>
					    (tdata_rng_next(&rng) % f->bits + (128 - f->bits)));
			const struct fib_route *got = f->lookup(r->t, a);

			/* Sentinels never go: the answer is at least as long as theirs. */
			if (!route_sane(r, got) || !got || got->plen < sentinel_lpm(r, a)->plen) {
				const struct sentinel *s = sentinel_lpm(r, a);
				struct probe any = { .addr = a,
						     .plen = s->plen,
						     .metric = s->metric };

				reader_fail(rd, "random (want at least)", &any, got);
			}
		}
		rd->random_lookups += 16;
		urcu_memb_read_unlock();
		atomic_store_explicit(&rd->rounds, round + 1, memory_order_relaxed);
		/* Two readers and the writer share two cores: let a waiting writer in. */
		if (round % 4 == 3)
			sched_yield();
	}
	urcu_memb_unregister_thread();
	return NULL;
}

/* ------------------------------------------------------------ writer */

/*
 * Churned prefixes, in waves: fill to @cap live prefixes (three inserts to
 * a delete), then drain (three deletes to an insert), so the nodes on the
 * probes' paths grow by inflating and shrink by halving and collapsing.
 */
struct churn {
	struct run *r;
	struct tdata_rng rng;
	u128 *key;
	uint8_t *plen;
	size_t n, cap;
	bool draining;
	uint64_t inserts, deletes, rejected;
	uint64_t bulk_loads; /* waves risen in bulk mode (churn_bulk_fill()) */
	unsigned int max_bits;
};

/* A prefix near a probe, or on a sentinel's key, or anywhere; never one that hides a probe. */
static void churn_pick(struct churn *c, u128 *key, unsigned int *plen)
{
	const struct run *r = c->r;
	unsigned int bits = r->f->bits;

	for (;;) {
		uint64_t x = tdata_rng_next(&c->rng);
		unsigned int mode = (unsigned int)(x % 8), pl;
		u128 k;

		if (mode < 5) {
			/* Near a probe: share its top bits, differ below bit @near. */
			const struct probe *p = &r->probe[(x >> 8) % r->nprobe];
			unsigned int near = 1 + (unsigned int)((x >> 24) % (bits == 32 ? 24 : 96));

			k = p->addr ^ (rng128(&c->rng) & low_bits(near));
			pl = bits - near + (unsigned int)((x >> 40) % (near + 1));
		} else if (mode < 7) {
			/* On a sentinel's key, longer: replaces the leaf a sentinel lives on. */
			const struct sentinel *s = &r->sen[(x >> 8) % r->nsen];

			if (s->plen == bits)
				continue;
			k = s->key;
			pl = s->plen + 1 + (unsigned int)((x >> 24) % (bits - s->plen));
		} else {
			k = bits == 32 ? (u128)(uint32_t)(x >> 16) : rng128(&c->rng);
			pl = 8 + (unsigned int)((x >> 48) % (bits - 7));
		}
		if (pl > bits)
			pl = bits;
		k = key_mask(k, bits, pl);
		if (hides_probe(r, k, pl)) {
			c->rejected++;
			continue;
		}
		*key = k;
		*plen = pl;
		return;
	}
}

static void churn_note_crest(struct churn *c)
{
	struct trie_stats ts;
	unsigned int bits;

	c->r->f->get_stats(c->r->t, &ts);
	bits = tdata_widest_bits(&ts);
	if (bits > c->max_bits)
		c->max_bits = bits;
}

static void churn_step(struct churn *c)
{
	const struct fam *f = c->r->f;
	uint64_t x = tdata_rng_next(&c->rng);
	bool insert = c->n == 0 || (c->n < c->cap && (c->draining ? x % 4 == 0 : x % 4 != 0));

	if (insert) {
		struct tdata_edit req = { .metric = 1 + (uint32_t)((x >> 8) % CHURN_METRIC_MAX) };
		unsigned int plen;
		u128 key;

		churn_pick(c, &key, &plen);
		assert_int_equal(f->edit(c->r->t, key, plen, tdata_edit_set, &req), 0);
		c->key[c->n] = key;
		c->plen[c->n] = (uint8_t)plen;
		c->n++;
		c->inserts++;
	} else {
		struct tdata_edit req = { .del = true };
		size_t i = (size_t)((x >> 8) % c->n);

		assert_int_equal(f->edit(c->r->t, c->key[i], c->plen[i], tdata_edit_set, &req), 0);
		c->n--;
		c->key[i] = c->key[c->n];
		c->plen[i] = c->plen[c->n];
		c->deletes++;
	}
	if (!c->draining && c->n == c->cap) {
		churn_note_crest(c);
		c->draining = true;
	} else if (c->draining && c->n < c->cap / 16) {
		c->draining = false;
	}
}

struct pick {
	u128 key;
	unsigned int plen;
};

static int pick_cmp(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->plen > y->plen) - (x->plen < y->plen);
}

/*
 * A wave's whole rise at once, in bulk mode and in key order, as a route
 * file loads: the end of such a load builds the trie anew and publishes
 * it in one store (rebuild() in lib/trie-tmpl.h) while the readers look.
 * Returns the edits made.
 */
static uint64_t churn_bulk_fill(struct churn *c)
{
	const struct fam *f = c->r->f;
	size_t k = c->cap - c->n;
	struct pick *p = calloc(k, sizeof(*p));

	assert_non_null(p);
	for (size_t i = 0; i < k; i++)
		churn_pick(c, &p[i].key, &p[i].plen);
	qsort(p, k, sizeof(*p), pick_cmp);
	f->set_bulk(c->r->t, true);
	for (size_t i = 0; i < k; i++) {
		struct tdata_edit req = { .metric = 1 + (uint32_t)(i % CHURN_METRIC_MAX) };

		assert_int_equal(f->edit(c->r->t, p[i].key, p[i].plen, tdata_edit_set, &req), 0);
		c->key[c->n] = p[i].key;
		c->plen[c->n] = (uint8_t)p[i].plen;
		c->n++;
	}
	f->set_bulk(c->r->t, false);
	free(p);
	c->inserts += k;
	c->bulk_loads++;
	churn_note_crest(c);
	c->draining = true;
	return k;
}

static void check_trie(const struct run *r)
{
	struct errbuf err = { { 0 } };
	int ret = r->f->check(r->t, &err);

	if (ret)
		print_error("%s check: %s\n", r->f->name, err.msg);
	assert_int_equal(ret, 0);
}

/* Every probe, single-threaded: the sentinels are all there. */
static void check_probes_quiet(const struct run *r)
{
	urcu_memb_register_thread();
	urcu_memb_read_lock();
	for (unsigned int i = 0; i < r->nprobe; i++)
		assert_true(answer_ok(&r->probe[i], r->f->lookup(r->t, r->probe[i].addr)));
	urcu_memb_read_unlock();
	urcu_memb_unregister_thread();
}

/* ------------------------------------------------------------- a run */

struct params {
	const struct fam *f;
	uint64_t sync_mem;
	uint64_t ops; /* edits, times LCFIB_STRESS */
	size_t cap;   /* live churned prefixes at a wave's crest */
	bool toggle;  /* the writer flips sync-mem between 64K and 64M as it goes */
	bool bulk;    /* each wave rises in one sorted bulk load (churn_bulk_fill()) */
};

static void run_concurrency(const struct params *pa)
{
	const struct fam *f = pa->f;
	const char *const *names = f == &fam4 ? sentinels4 : sentinels6;
	unsigned int nnames = f == &fam4 ? sizeof(sentinels4) / sizeof(sentinels4[0])
					 : sizeof(sentinels6) / sizeof(sentinels6[0]);
	struct run *r = calloc(1, sizeof(*r));
	struct reader *rd;
	struct churn c;
	struct tdata_rng rng;
	struct reclaim_stats st;
	struct mem_stats ms;
	unsigned long lookups = 0, batch = 0, randoms = 0, failures = 0, rounds_at_end = 0;
	unsigned long compactions = 0;
	uint64_t ops = (uint64_t)((double)pa->ops * stress), t0, t1;

	assert_non_null(r);
	r->f = f;
	r->m = mem_new();
	assert_non_null(r->m);
	r->rc = reclaim_new(r->m);
	assert_non_null(r->rc);
	assert_int_equal(reclaim_set_sync_mem(r->rc, pa->sync_mem), 0);
	r->t = f->new_trie(r->m, r->rc);
	assert_non_null(r->t);

	assert_true(nnames <= MAX_SENTINELS);
	for (unsigned int i = 0; i < nnames; i++) {
		struct tdata_edit req = { .metric = SENTINEL_METRIC + i };

		parse_sentinel(f, names[i], &r->sen[i]);
		r->sen[i].metric = SENTINEL_METRIC + i;
		assert_int_equal(f->edit(r->t, r->sen[i].key, r->sen[i].plen, tdata_edit_set, &req),
				 0);
	}
	r->nsen = nnames;
	tdata_rng_seed(&rng, seed);
	make_probes(r, &rng);
	check_probes_quiet(r);

	memset(&c, 0, sizeof(c));
	c.r = r;
	/* At least one wave's crest and ebb, however few the edits. */
	c.cap = pa->cap < ops / 6 ? pa->cap : (size_t)(ops / 6);
	if (c.cap < 100)
		c.cap = 100;
	tdata_rng_seed(&c.rng, seed + 1);
	c.key = calloc(c.cap, sizeof(*c.key));
	c.plen = calloc(c.cap, sizeof(*c.plen));
	assert_non_null(c.key);
	assert_non_null(c.plen);

	rd = r->rd;
	active_run = r;
	for (unsigned int i = 0; i < NR_READERS; i++) {
		rd[i].r = r;
		rd[i].id = i;
		assert_int_equal(pthread_create(&rd[i].th, NULL, reader_main, &rd[i]), 0);
		r->nr_started++;
	}
	for (unsigned int i = 0; i < NR_READERS; i++) {
		while (atomic_load(&rd[i].rounds) == 0)
			sched_yield();
	}

	t0 = now_ns();
	for (uint64_t i = 0; i < ops; i++) {
		if (pa->bulk && !c.draining) {
			i += churn_bulk_fill(&c) - 1;
			continue;
		}
		churn_step(&c);
		if (pa->toggle && i % 5000 == 4999)
			assert_int_equal(
				reclaim_set_sync_mem(r->rc, (i / 5000) % 2 ? 64u << 10 : 64u << 20),
				0);
		if (i % 100000 == 99999)
			check_trie(r);
		/* Compaction (fib_mem_compact()): the trie built anew under the readers. */
		if (i % 50000 == 24999) {
			mem_evacuate_begin(r->m);
			compactions += f->compact(r->t);
			mem_evacuate_end(r->m);
		}
	}
	t1 = now_ns();
	churn_note_crest(&c);
	for (unsigned int i = 0; i < NR_READERS; i++)
		rounds_at_end += atomic_load(&rd[i].rounds);
	atomic_store(&r->stop, true);
	active_run = NULL;
	for (unsigned int i = 0; i < NR_READERS; i++) {
		assert_int_equal(pthread_join(rd[i].th, NULL), 0);
		lookups += rd[i].lookups;
		batch += rd[i].batch_lookups;
		randoms += rd[i].random_lookups;
		failures += rd[i].failures;
		if (rd[i].failures)
			print_error("reader %u: %lu failures; first: %s\n", i, rd[i].failures,
				    rd[i].first_failure);
	}
	reclaim_get_stats(r->rc, &st);
	print_message("%s sync-mem %llu%s: %llu edits (%llu in, %llu out, %llu bulk loads, %lu "
		      "compactions) in %.2f s; "
		      "widest node %u bits; readers: %lu lookups, %lu batched, %lu random, %lu "
		      "failures; forced waits %llu (%.1f ms), peak pending %llu\n",
		      f->name, (unsigned long long)pa->sync_mem, pa->toggle ? " toggled" : "",
		      (unsigned long long)ops, (unsigned long long)c.inserts,
		      (unsigned long long)c.deletes, (unsigned long long)c.bulk_loads, compactions,
		      (t1 - t0) / 1e9, c.max_bits, lookups, batch, randoms, failures,
		      (unsigned long long)st.forced_waits, st.wait_ns_total / 1e6,
		      (unsigned long long)st.peak_pending);

	assert_int_equal(failures, 0);
	/* Every churn of 25,000 edits or more built the trie anew at least once. */
	if (ops >= 25000 && !pa->bulk)
		assert_true(compactions > 0);
	if (pa->bulk) {
		struct trie_stats ts;

		assert_true(c.bulk_loads >= 2);
		f->get_stats(r->t, &ts);
		assert_true(ts.split_builds >= 2);
	}
	/* Readers ran during the churn, not only before or after it. */
	assert_true(rounds_at_end > 2 * NR_READERS);
	assert_true(lookups > 0);
	assert_true(batch > 0);
	check_trie(r);
	check_probes_quiet(r);
	/* An object of sync-mem or more always waits (how often smaller ones do is timing). */
	if (st.max_object >= pa->sync_mem && !pa->toggle)
		assert_true(st.forced_waits > 0);
	assert_true(st.peak_pending <= RECLAIM_SYNC_MEM_MAX + st.max_object);
	/* The churn reshaped the sentinels' paths: internal nodes were widened and retired. */
	assert_true(c.max_bits >= 3);
	reclaim_barrier(r->rc);
	mem_get_stats(r->m, &ms);
	assert_true(ms.cls[MEM_TNODE].frees > 0);

	f->destroy(r->t);
	reclaim_destroy(r->rc);
	mem_destroy(r->m);
	free(c.key);
	free(c.plen);
	free(r);
}

static const struct params v4_64k = { &fam4, 64u << 10, 800000, 30000, false, false };
static const struct params v4_64m = { &fam4, 64u << 20, 800000, 30000, false, false };
static const struct params v4_toggle = { &fam4, 64u << 10, 400000, 30000, true, false };
static const struct params v6_64k = { &fam6, 64u << 10, 500000, 20000, false, false };
static const struct params v6_64m = { &fam6, 64u << 20, 500000, 20000, false, false };
static const struct params v4_bulk = { &fam4, 64u << 10, 400000, 30000, false, true };
static const struct params v6_bulk = { &fam6, 64u << 10, 250000, 20000, false, true };

static void test_concurrency_v4_readers_see_sentinels_sync_mem_64k(void **state)
{
	(void)state;
	run_concurrency(&v4_64k);
}

static void test_concurrency_v4_readers_see_sentinels_sync_mem_64m(void **state)
{
	(void)state;
	run_concurrency(&v4_64m);
}

static void test_concurrency_v4_readers_see_sentinels_sync_mem_toggled(void **state)
{
	(void)state;
	run_concurrency(&v4_toggle);
}

static void test_concurrency_v6_readers_see_sentinels_sync_mem_64k(void **state)
{
	(void)state;
	run_concurrency(&v6_64k);
}

static void test_concurrency_v6_readers_see_sentinels_sync_mem_64m(void **state)
{
	(void)state;
	run_concurrency(&v6_64m);
}

static void test_concurrency_v4_readers_see_sentinels_through_bulk_loads(void **state)
{
	(void)state;
	run_concurrency(&v4_bulk);
}

static void test_concurrency_v6_readers_see_sentinels_through_bulk_loads(void **state)
{
	(void)state;
	run_concurrency(&v6_bulk);
}

/* Stops the readers of a failed test (its run is leaked, not freed under them). */
static int stop_readers(void **state)
{
	struct run *r = active_run;

	(void)state;
	if (!r)
		return 0;
	atomic_store(&r->stop, true);
	for (unsigned int i = 0; i < r->nr_started; i++)
		pthread_join(r->rd[i].th, NULL);
	active_run = NULL;
	return 0;
}

#define TEST(f) cmocka_unit_test_teardown(f, stop_readers)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(test_concurrency_v4_readers_see_sentinels_sync_mem_64k),
		TEST(test_concurrency_v4_readers_see_sentinels_sync_mem_64m),
		TEST(test_concurrency_v4_readers_see_sentinels_sync_mem_toggled),
		TEST(test_concurrency_v6_readers_see_sentinels_sync_mem_64k),
		TEST(test_concurrency_v6_readers_see_sentinels_sync_mem_64m),
		TEST(test_concurrency_v4_readers_see_sentinels_through_bulk_loads),
		TEST(test_concurrency_v6_readers_see_sentinels_through_bulk_loads),
	};
	const char *s = getenv("LCFIB_STRESS");

	if (s && *s) {
		char *end;

		stress = strtod(s, &end);
		if (*end || !(stress > 0)) {
			fprintf(stderr, "LCFIB_STRESS='%s' is not a positive number\n", s);
			return 2;
		}
	}
	seed = tdata_seed(0xc0ffee5eedull);
	/* Small tries here: make batch lookups take the lanes, and builds anew split, anyway. */
	trie_batch_min_leaves = 0;
	trie_rebuild_split_min = 256;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
