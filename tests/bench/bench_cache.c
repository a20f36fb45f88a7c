// SPDX-License-Identifier: MIT
/*
 * bench_cache: the destination cache (lib/cache.h), measured the way its
 * kernel ancestors (the BPF LRU hash map) were. Prints figures; no
 * assertion but the churn section's answer check. Sections:
 *
 *   update   fills/s with every lookup a miss, common vs per-thread LRU, at
 *            1, 2 and 4 threads (4 > the cores here): map_perf_test's LRU rows
 *   nrscans  nr-scans 16 vs 4, per-thread, large cache, mostly misses:
 *            fills/s and the hit ratio of each
 *   size     lookups/s of hits against cache size 2^9+1 .. 2^20+1,
 *            the inline hit path vs a call
 *   zipf     misses on zipf traces (100k keys, alpha 1.01 and 0.01, caches
 *            of 4000 and 40000) beside an exact LRU simulation: test_lru_dist
 *   full     the worst case with no free element: fills/s of a cache smaller
 *            than the size floor, with and without the empty-list skip, and
 *            with the floor, at 2 and 8 threads
 *   e2e      the full table: lookups/s of a zipf (alpha 1) stream of
 *            table-drawn destinations, trie vs cache (64k) vs rte_lpm bulk;
 *            a uniformly random flood
 *   flood    the full table: the flood target, the per-thread cache against
 *            the trie on uniformly random addresses, paired rounds (median)
 *   sweep    the full table: hit ratio and lookups/s against cache size
 *            per mode (the plots' data)
 *   churn    the zipf stream while routes of hot prefixes change at 10k/s:
 *            hit ratio, lookups/s, and a sample of answers checked
 *
 * Usage: bench_cache [--section NAME]... [--no-dpdk]; LCFIB_DATA names
 * tests/data. --no-dpdk leaves rte_lpm out of e2e (its load takes minutes).
 */
#define _GNU_SOURCE /* pthread_{get,set}affinity_np */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/cache.h"
#include "lib/fib.h"
#include "tests/tdata.h"

#ifdef HAVE_DPDK
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvla"
#pragma GCC diagnostic ignored "-Wundef"
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lpm.h>
#pragma GCC diagnostic pop
#endif

#define RUN_NS 300000000ull /* each timed run: 0.3 s */
#define ROUNDS 3            /* rounds, interleaved; the best is printed */
#define STREAM (1u << 22)   /* addresses in a lookup stream */
#define WARM   (1u << 20) /* the stream's last WARM fill a cache; timed runs read from its start */

static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "bench_cache: out of memory\n");
		exit(1);
	}
	return p;
}

static void title(const char *t)
{
	printf("\n== %s\n", t);
}

/* A spread-out IPv4 address for key @k (every one under the default route). */
static uint32_t key_addr(uint64_t k)
{
	return (uint32_t)((k + 1) * 2654435761u) ^ 0x5a5a0000u;
}

static struct fib *fib_default_only(void)
{
	struct nh_path p = { .gw_family = AF_INET, .ifindex = 1 };
	struct fib_rcfg rc = {
		.type = FIB_RT_UNICAST, .n_paths = 1, .paths = &p, .flags = FIB_F_CREATE
	};
	struct errbuf err;
	struct fib *f = fib_new();

	p.gw.v4.s_addr = htonl(0x0a000001);
	rc.dst.a.family = AF_INET;
	if (!f || fib_route_add(f, &rc, &err)) {
		fprintf(stderr, "bench_cache: cannot make the FIB\n");
		exit(1);
	}
	return f;
}

static struct cache *cache_or_die(struct fib *f, uint32_t size, unsigned int threads,
				  enum cache_mode mode, unsigned int nr_scans, unsigned int flags)
{
	struct cache_cfg cfg = {
		.size = size, .threads = threads, .mode = mode, .nr_scans = nr_scans, .flags = flags
	};
	struct errbuf err;
	struct cache *c = cache_new(f, 0, AF_INET, &cfg, &err);

	if (!c) {
		fprintf(stderr, "bench_cache: %s\n", err.msg);
		exit(1);
	}
	return c;
}

/* ------------------------------------------------------- zipf streams */

/* Ranks 0..n-1 with P(k) ~ 1/(k+1)^alpha: the inverse CDF by bisection. */
struct zipf {
	double *cdf;
	uint32_t n;
};

static void zipf_init(struct zipf *z, uint32_t n, double alpha)
{
	double sum = 0;

	z->n = n;
	z->cdf = xcalloc(n, sizeof(double));
	for (uint32_t k = 0; k < n; k++) {
		sum += 1.0 / pow((double)k + 1, alpha);
		z->cdf[k] = sum;
	}
	for (uint32_t k = 0; k < n; k++)
		z->cdf[k] /= sum;
}

static uint32_t zipf_next(const struct zipf *z, struct tdata_rng *r)
{
	double u = (double)(tdata_rng_next(r) >> 11) / 9007199254740992.0;
	uint32_t lo = 0, hi = z->n - 1;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (z->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---------------------------------------------------------- threaded runs */

struct job {
	struct cache *c;
	const struct fib_table *tb;
	unsigned int idx;
	const uint32_t *addr; /* a stream of STREAM addresses, or NULL: unique keys */
	uint32_t n_addr;
	int *stop;
	uint64_t ops;
	int kind; /* JOB_* */
};

enum { JOB_CACHE, JOB_CALL, JOB_TRIE, JOB_TRIE_BATCH, JOB_CACHE_BATCH };

static void job_chunk(struct job *j, uint64_t *pos)
{
	struct cache_thread *t = j->c ? cache_thread(j->c, j->idx) : NULL;
	const struct fib_route *rt;
	struct fib_route r;
	uint64_t s = 0;

	fib_read_lock();
	if (j->kind == JOB_TRIE_BATCH) {
		const struct fib_route *res[64];

		fib_lookup4_batch_rcu(j->tb, j->addr + *pos % j->n_addr, res, 64);
		for (int i = 0; i < 64; i++)
			s += res[i] ? res[i]->metric + 1 : 0;
		*pos += 64;
	} else if (j->kind == JOB_CACHE_BATCH) {
		struct fib_route out[64];
		uint64_t found =
			cache_lookup4_batch_rcu(j->c, t, j->addr + *pos % j->n_addr, out, 64);

		for (int i = 0; i < 64; i++)
			s += found >> i & 1 ? out[i].metric + 1 : 0;
		*pos += 64;
	} else {
		for (int i = 0; i < 64; i++, (*pos)++) {
			uint32_t a = j->addr ? j->addr[*pos % j->n_addr]
					     : key_addr(((uint64_t)j->idx << 40) + *pos);

			if (j->kind == JOB_CACHE)
				s += cache_lookup4_rcu(j->c, t, a, &r) ? r.metric + 1 : 0;
			else if (j->kind == JOB_CALL)
				s += cache_lookup4_call_rcu(j->c, t, a, &r) ? r.metric + 1 : 0;
			else /* the route read, as the cache's answer is a copy of it */
				s += (rt = fib_lookup4_rcu(j->tb, a)) ? rt->metric + 1 : 0;
		}
	}
	fib_read_unlock();
	sink += s;
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	uint64_t pos = (uint64_t)j->idx * 7777;

	fib_reader_register();
	while (!__atomic_load_n(j->stop, __ATOMIC_RELAXED)) {
		for (int k = 0; k < 16; k++)
			job_chunk(j, &pos);
		j->ops += 16 * 64;
	}
	fib_reader_unregister();
	return NULL;
}

/* @n threads of @proto (idx 0..n-1) for RUN_NS: operations per second, all threads. */
static double run_threads(const struct job *proto, unsigned int n)
{
	struct job jobs[16];
	pthread_t th[16];
	int stop = 0;
	uint64_t t0, ops = 0;

	for (unsigned int k = 0; k < n; k++) {
		jobs[k] = *proto;
		jobs[k].idx = k;
		jobs[k].stop = &stop;
		jobs[k].ops = 0;
	}
	t0 = now_ns();
	for (unsigned int k = 0; k < n; k++)
		pthread_create(&th[k], NULL, job_main, &jobs[k]);
	while (now_ns() - t0 < RUN_NS)
		usleep(10000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (unsigned int k = 0; k < n; k++) {
		pthread_join(th[k], NULL);
		ops += jobs[k].ops;
	}
	return (double)ops / ((double)(now_ns() - t0) / 1e9);
}

static double best(const double *v)
{
	double b = 0;

	for (int i = 0; i < ROUNDS; i++)
		b = v[i] > b ? v[i] : b;
	return b;
}

static double spread(const double *v)
{
	double lo = v[0], hi = v[0];

	for (int i = 1; i < ROUNDS; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	return hi > 0 ? (hi - lo) / hi * 100 : 0;
}

/* ------------------------------------------------------------ sections */

/* All misses (unique keys): fills/s; map_perf_test's LRU update rows. */
static void section_update(void)
{
	static const unsigned int threads[] = { 1, 2, 4 };
	double v[2][3][ROUNDS];
	struct fib *f = fib_default_only();

	title("update: fills/s, every lookup a miss (unique keys), 10000-element cache");
	for (int round = 0; round < ROUNDS; round++) {
		for (int m = 0; m < 2; m++) {
			for (int k = 0; k < 3; k++) {
				struct cache *c = cache_or_die(f, 10000, threads[k], m, 0,
							       CACHE_F_NO_FLOOD_GUARD);
				struct job j = { .c = c, .tb = c->tb, .kind = JOB_CACHE };

				v[m][k][round] = run_threads(&j, threads[k]);
				cache_destroy(c);
			}
		}
	}
	printf("%-10s %8s %14s %14s %12s\n", "mode", "threads", "M fills/s", "per thread",
	       "spread %");
	for (int m = 0; m < 2; m++) {
		for (int k = 0; k < 3; k++)
			printf("%-10s %8u %14.2f %14.2f %12.0f\n", cache_mode_name(m), threads[k],
			       best(v[m][k]) / 1e6, best(v[m][k]) / 1e6 / threads[k],
			       spread(v[m][k]));
	}
	printf("per-thread / common: 1 thread %.2f, 2 threads %.2f, 4 threads %.2f\n",
	       best(v[1][0]) / best(v[0][0]), best(v[1][1]) / best(v[0][1]),
	       best(v[1][2]) / best(v[0][2]));
	fib_destroy(f);
}

static uint32_t *zipf_stream(uint32_t keys, double alpha, uint32_t n, uint64_t seed)
{
	struct zipf z;
	struct tdata_rng r;
	uint32_t *a = xcalloc(n, sizeof(*a));

	zipf_init(&z, keys, alpha);
	tdata_rng_seed(&r, seed);
	for (uint32_t i = 0; i < n; i++)
		a[i] = key_addr(zipf_next(&z, &r));
	free(z.cdf);
	return a;
}

static double hit_ratio(const struct cache *c)
{
	struct cache_stats st;

	cache_get_stats(c, &st);
	return st.hits + st.misses ? (double)st.hits / (double)(st.hits + st.misses) : 0;
}

/* Lookups of the first @n of stream @a, untimed: the cache as in steady state. */
static void warm(struct cache *c, const uint32_t *a, uint32_t n, struct cache_stats *st)
{
	struct fib_route r;

	fib_read_lock();
	for (uint32_t i = 0; i < n; i++)
		cache_lookup4_rcu(c, cache_thread(c, 0), a[i], &r);
	fib_read_unlock();
	cache_get_stats(c, st);
}

static double hit_ratio_since(const struct cache *c, const struct cache_stats *st0)
{
	struct cache_stats st;
	uint64_t h, m;

	cache_get_stats(c, &st);
	h = st.hits - st0->hits;
	m = st.misses - st0->misses;
	return h + m ? (double)h / (double)(h + m) : 0;
}

/* Hit ratio of one thread over stream @a (deterministic: no timing). */
static double stream_hit_ratio(struct fib *f, const uint32_t *a, uint32_t n, uint32_t size,
			       enum cache_mode mode, unsigned int nr_scans)
{
	struct cache *c = cache_or_die(f, size, 1, mode, nr_scans, CACHE_F_NO_FLOOD_GUARD);
	struct fib_route r;
	double hr;

	fib_read_lock();
	for (uint32_t i = 0; i < n; i++)
		cache_lookup4_rcu(c, cache_thread(c, 0), a[i], &r);
	fib_read_unlock();
	hr = hit_ratio(c);
	cache_destroy(c);
	return hr;
}

static void section_nrscans(void)
{
	static const unsigned int scans[2] = { 16, 4 };
	uint32_t *a = zipf_stream(1u << 22, 0.8, STREAM, 11);
	struct fib *f = fib_default_only();
	double v[2][ROUNDS];

	title("nrscans: per-thread, 2^18 elements: fills/s of 2 threads missing every lookup; "
	      "hit ratio of a zipf 0.8 stream over 2^22 keys");
	for (int round = 0; round < ROUNDS; round++) {
		for (int s = 0; s < 2; s++) {
			struct cache *c = cache_or_die(f, 1u << 18, 2, CACHE_PERTHREAD, scans[s],
						       CACHE_F_NO_FLOOD_GUARD);
			struct job j = { .c = c, .tb = c->tb, .kind = JOB_CACHE };

			v[s][round] = run_threads(&j, 2);
			cache_destroy(c);
		}
	}
	printf("%-9s %12s %10s %10s\n", "nr-scans", "M fills/s", "spread %", "hit ratio");
	for (int s = 0; s < 2; s++)
		printf("%-9u %12.2f %10.0f %10.4f\n", scans[s], best(v[s]) / 1e6, spread(v[s]),
		       stream_hit_ratio(f, a, STREAM, 1u << 18, CACHE_PERTHREAD, scans[s]));
	printf("nr-scans 4 / 16: %.2f\n", best(v[1]) / best(v[0]));
	free(a);
	fib_destroy(f);
}

static void section_size(void)
{
	struct fib *f = fib_default_only();

	title("size: lookups/s of hits (1 thread), the inline hit path vs a call");
	printf("%-10s %14s %14s %10s\n", "elements", "inline M/s", "call M/s", "inline/call");
	for (unsigned int k = 9; k <= 20; k++) {
		uint32_t n = (1u << k) + 1;
		uint32_t *a = xcalloc(STREAM, sizeof(*a));
		struct tdata_rng r;
		double vi[ROUNDS], vc[ROUNDS];
		struct cache *c = cache_or_die(f, n, 1, CACHE_PERTHREAD, 0, 0);
		struct job j = { .c = c, .tb = c->tb, .addr = a, .n_addr = STREAM };
		struct cache_stats st;

		struct fib_route rt;
		uint64_t h0;

		tdata_rng_seed(&r, k);
		for (uint32_t i = 0; i < STREAM; i++)
			a[i] = key_addr(tdata_rng_next(&r) % n);
		/* Warm: every key in, so that the timed runs see hits only. */
		fib_read_lock();
		for (uint32_t i = 0; i < n; i++)
			cache_lookup4_rcu(c, cache_thread(c, 0), key_addr(i), &rt);
		fib_read_unlock();
		cache_get_stats(c, &st);
		h0 = st.misses;
		for (int round = 0; round < ROUNDS; round++) {
			j.kind = JOB_CACHE;
			vi[round] = run_threads(&j, 1);
			j.kind = JOB_CALL;
			vc[round] = run_threads(&j, 1);
		}
		cache_get_stats(c, &st);
		printf("%-10u %14.1f %14.1f %10.2f   (misses after warm-up: %llu)\n", n,
		       best(vi) / 1e6, best(vc) / 1e6, best(vi) / best(vc),
		       (unsigned long long)(st.misses - h0));
		cache_destroy(c);
		free(a);
	}
	fib_destroy(f);
}

/* An exact LRU of @cap over keys 0..n-1: misses of trace @k. */
static uint64_t exact_lru_misses(const uint32_t *k, uint32_t len, uint32_t n, uint32_t cap)
{
	uint32_t *prev = xcalloc(n + 1, 4), *next = xcalloc(n + 1, 4);
	uint8_t *in = xcalloc(n, 1);
	uint32_t head = n, size = 0; /* sentinel n: next = most recent */
	uint64_t misses = 0;

	prev[head] = next[head] = head;
	for (uint32_t i = 0; i < len; i++) {
		uint32_t x = k[i];

		if (in[x]) {
			next[prev[x]] = next[x];
			prev[next[x]] = prev[x];
		} else {
			misses++;
			if (size == cap) {
				uint32_t old = prev[head];

				next[prev[old]] = head;
				prev[head] = prev[old];
				in[old] = 0;
			} else {
				size++;
			}
			in[x] = 1;
		}
		next[x] = next[head];
		prev[x] = head;
		prev[next[head]] = x;
		next[head] = x;
	}
	free(prev);
	free(next);
	free(in);
	return misses;
}

static void section_zipf(void)
{
	static const double alphas[2] = { 1.01, 0.01 };
	static const uint32_t caps[2] = { 4000, 40000 };
	const uint32_t keys = 100000, len = 2000000;
	struct fib *f = fib_default_only();

	/*
	 * Without the flood guard: at alpha 0.01 it would send most lookups
	 * past the cache, and this compares the LRU itself. The last column:
	 * per-thread with second-miss admission.
	 */
	title("zipf: misses of a 2M-lookup trace over 100k keys (1 thread), beside an exact LRU");
	printf("%-6s %7s %12s %12s %12s %12s %9s %9s %9s\n", "alpha", "cache", "exact LRU",
	       "common", "per-thread", "pt 2nd-miss", "com/LRU", "pt/LRU", "2nd/LRU");
	for (int ai = 0; ai < 2; ai++) {
		struct zipf z;
		struct tdata_rng r;
		uint32_t *k = xcalloc(len, sizeof(*k));

		zipf_init(&z, keys, alphas[ai]);
		tdata_rng_seed(&r, 1234);
		for (uint32_t i = 0; i < len; i++)
			k[i] = zipf_next(&z, &r);
		free(z.cdf);
		for (int ci = 0; ci < 2; ci++) {
			uint64_t exact = exact_lru_misses(k, len, keys, caps[ci]), m[3];

			for (int mode = 0; mode < 3; mode++) {
				unsigned int flags = CACHE_F_NO_FLOOD_GUARD |
						     (mode == 2 ? CACHE_F_ADMIT_SECOND : 0);
				struct cache *c = cache_or_die(
					f, caps[ci], 1, mode ? CACHE_PERTHREAD : CACHE_COMMON, 0,
					flags);
				struct cache_stats st;
				struct fib_route rt;

				fib_read_lock();
				for (uint32_t i = 0; i < len; i++)
					cache_lookup4_rcu(c, cache_thread(c, 0), key_addr(k[i]),
							  &rt);
				fib_read_unlock();
				cache_get_stats(c, &st);
				m[mode] = st.misses;
				cache_destroy(c);
			}
			printf("%-6.2f %7u %12llu %12llu %12llu %12llu %9.3f %9.3f %9.3f\n",
			       alphas[ai], caps[ci], (unsigned long long)exact,
			       (unsigned long long)m[0], (unsigned long long)m[1],
			       (unsigned long long)m[2], (double)m[0] / (double)exact,
			       (double)m[1] / (double)exact, (double)m[2] / (double)exact);
		}
		free(k);
	}
	fib_destroy(f);
}

static void section_full(void)
{
	static const unsigned int threads[2] = { 2, 8 };
	static const char *const what[3] = { "no skip, no floor", "skip, no floor",
					     "skip + floor" };
	struct fib *f = fib_default_only();

	title("full: fills/s with no free element, common mode, all misses");
	printf("%-8s %-18s %9s %12s %14s %14s %9s\n", "threads", "variant", "elements", "M fills/s",
	       "locks/fill", "skips/fill", "spread %");
	for (int ti = 0; ti < 2; ti++) {
		unsigned int nt = threads[ti];
		double v[3][ROUNDS];
		struct cache_stats st[3];
		uint32_t size[3];

		for (int round = 0; round < ROUNDS; round++) {
			for (int w = 0; w < 3; w++) {
				unsigned int flags =
					w == 0   ? CACHE_F_NO_EMPTY_SKIP | CACHE_F_NO_FLOOR
					: w == 1 ? CACHE_F_NO_FLOOR
						 : 0;
				struct cache *c = cache_or_die(f, nt, nt, CACHE_COMMON, 0,
							       flags | CACHE_F_NO_FLOOD_GUARD);
				struct job j = { .c = c, .tb = c->tb, .kind = JOB_CACHE };

				v[w][round] = run_threads(&j, nt);
				cache_get_stats(c, &st[w]);
				size[w] = c->n;
				cache_destroy(c);
			}
		}
		for (int w = 0; w < 3; w++)
			printf("%-8u %-18s %9u %12.2f %14.2f %14.2f %9.0f\n", nt, what[w], size[w],
			       best(v[w]) / 1e6, (double)st[w].steal_locks / (double)st[w].fills,
			       (double)st[w].steal_skips / (double)st[w].fills, spread(v[w]));
	}
	fib_destroy(f);
}

/* ------------------------------------------------- the full table (e2e) */

struct table {
	struct tdata_table t;
	struct fib *f;
	const struct fib_table *tb;
	uint32_t *dest; /* one destination inside each IPv4 prefix, shuffled: rank order */
	size_t n;
};

static int table_load(struct table *tt)
{
	struct nh_path gw[8];
	struct fib_rcfg rc = { .table = FIB_TABLE_MAIN,
			       .type = FIB_RT_UNICAST,
			       .n_paths = 1,
			       .flags = FIB_F_CREATE | FIB_F_EXCL };
	struct errbuf err;
	struct tdata_rng r;
	uint64_t t0 = now_ns();
	int ret = tdata_load_fullview(&tt->t);

	if (ret) {
		fprintf(stderr, "bench_cache: cannot load the full table (%s); set LCFIB_DATA\n",
			strerror(-ret));
		return ret;
	}
	memset(gw, 0, sizeof(gw));
	for (int i = 0; i < 8; i++) {
		gw[i].gw_family = AF_INET;
		gw[i].gw.v4.s_addr = htonl(0xc0000201u + (uint32_t)i);
		gw[i].weight = 1;
	}
	tt->f = fib_new();
	fib_bulk_begin(tt->f);
	for (size_t i = 0; i < tt->t.n4; i++) {
		rc.dst = tt->t.v4[i];
		rc.paths = &gw[i % 8];
		fib_route_add(tt->f, &rc, &err);
	}
	fib_bulk_end(tt->f);
	tt->tb = fib_table_get_rcu(tt->f, FIB_TABLE_MAIN, AF_INET);
	tt->n = tt->t.n4;
	tt->dest = xcalloc(tt->n, sizeof(uint32_t));
	tdata_rng_seed(&r, 77);
	for (size_t i = 0; i < tt->n; i++) {
		const struct addr_prefix *p = &tt->t.v4[i];
		uint32_t host = p->plen == 32 ? 0 : (uint32_t)tdata_rng_next(&r) >> p->plen;

		tt->dest[i] = addr_key4(&p->a) | host;
	}
	tdata_shuffle32(tt->dest, tt->n, &r);
	printf("table: %zu IPv4 prefixes loaded in %.1f s\n", tt->n, (double)(now_ns() - t0) / 1e9);
	return 0;
}

/* A zipf stream of the table's destinations: rank k is dest[k]. */
static uint32_t *table_stream(const struct table *tt, double alpha, uint64_t seed)
{
	struct zipf z;
	struct tdata_rng r;
	uint32_t *a = xcalloc(STREAM, sizeof(*a));

	zipf_init(&z, (uint32_t)tt->n, alpha);
	tdata_rng_seed(&r, seed);
	for (uint32_t i = 0; i < STREAM; i++)
		a[i] = tt->dest[zipf_next(&z, &r)];
	free(z.cdf);
	return a;
}

#ifdef HAVE_DPDK
static struct rte_lpm *lpm;

static int lpm_build(const struct table *tt)
{
	char prefix[64];
	char *argv[] = { (char *)"bench_cache",
			 (char *)"--no-huge",
			 (char *)"-m",
			 (char *)"2048",
			 (char *)"--no-pci",
			 (char *)"--no-telemetry",
			 (char *)"--no-shconf",
			 (char *)"--log-level=lib.*:error",
			 (char *)"-l",
			 (char *)"0",
			 prefix,
			 NULL };
	struct rte_lpm_config cfg = { .max_rules = 1u << 21, .number_tbl8s = 1u << 16 };
	cpu_set_t cpus;
	uint64_t t0 = now_ns();

	snprintf(prefix, sizeof(prefix), "--file-prefix=bench_cache_%ld", (long)getpid());
	pthread_getaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	if (rte_eal_init(11, argv) < 0) {
		printf("DPDK: rte_eal_init failed: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	lpm = rte_lpm_create("bench_cache", 0, &cfg);
	if (!lpm)
		return -1;
	for (size_t i = 0; i < tt->n; i++)
		rte_lpm_add(lpm, addr_key4(&tt->t.v4[i].a), tt->t.v4[i].plen,
			    (uint32_t)(i % 8) + 1);
	printf("rte_lpm: %zu prefixes added in %.1f s\n", tt->n, (double)(now_ns() - t0) / 1e9);
	return 0;
}

/* rte_lpm_lookup_bulk over the stream, 64 at a time, 1 thread: lookups/s. */
static double lpm_rate(const uint32_t *a)
{
	uint32_t nh[64];
	uint64_t t0 = now_ns(), n = 0, s = 0;

	while (now_ns() - t0 < RUN_NS) {
		for (int k = 0; k < 64; k++, n += 64) {
			rte_lpm_lookup_bulk(lpm, a + n % STREAM, nh, 64);
			for (int i = 0; i < 64; i++)
				s += nh[i];
		}
	}
	sink += s;
	return (double)n / ((double)(now_ns() - t0) / 1e9);
}
#endif

static void e2e_row(const char *what, const double *v, double base)
{
	printf("%-34s %12.1f %10.2f %9.0f\n", what, best(v) / 1e6, base ? best(v) / base : 0,
	       spread(v));
}

/* The caches e2e compares: single lookups and batches of 64, each mode. */
static const struct e2e_variant {
	const char *name;
	enum cache_mode mode;
	int kind;
	unsigned int flags;
} e2e_variants[] = {
	{ "cache 64k, common", CACHE_COMMON, JOB_CACHE, 0 },
	{ "cache 64k, per-thread", CACHE_PERTHREAD, JOB_CACHE, 0 },
	{ "cache 64k batch, common", CACHE_COMMON, JOB_CACHE_BATCH, 0 },
	{ "cache 64k batch, per-thread", CACHE_PERTHREAD, JOB_CACHE_BATCH, 0 },
	{ "  ... no flood guard", CACHE_PERTHREAD, JOB_CACHE_BATCH, CACHE_F_NO_FLOOD_GUARD },
	{ "  ... second-miss admission", CACHE_PERTHREAD, JOB_CACHE_BATCH, CACHE_F_ADMIT_SECOND },
};
#define E2E_VARIANTS (sizeof(e2e_variants) / sizeof(e2e_variants[0]))

static void e2e_compare(struct table *tt, const uint32_t *a, const char *label)
{
	double trie[ROUNDS], batch[ROUNDS], v[E2E_VARIANTS][ROUNDS], lp[ROUNDS] = { 0 };
	struct cache *c[E2E_VARIANTS];
	struct cache_stats st0[E2E_VARIANTS];

	for (size_t m = 0; m < E2E_VARIANTS; m++) {
		c[m] = cache_or_die(tt->f, 65536, 1, e2e_variants[m].mode, 0,
				    e2e_variants[m].flags);
		warm(c[m], a + STREAM - WARM, WARM, &st0[m]);
	}
	printf("\n%s, 1 thread, caches warmed with the stream's last 2^20:\n%-34s %12s %10s %9s\n",
	       label, "lookup", "M/s", "/ trie", "spread %");
	for (int round = 0; round < ROUNDS; round++) {
		struct job j = { .tb = tt->tb, .addr = a, .n_addr = STREAM, .kind = JOB_TRIE };

		trie[round] = run_threads(&j, 1);
		j.kind = JOB_TRIE_BATCH;
		batch[round] = run_threads(&j, 1);
		for (size_t m = 0; m < E2E_VARIANTS; m++) {
			j.c = c[m];
			j.kind = e2e_variants[m].kind;
			v[m][round] = run_threads(&j, 1);
		}
#ifdef HAVE_DPDK
		if (lpm)
			lp[round] = lpm_rate(a);
#endif
	}
	e2e_row("fib_lookup4_rcu (trie)", trie, best(trie));
	e2e_row("fib_lookup4_batch_rcu (trie)", batch, best(trie));
	for (size_t m = 0; m < E2E_VARIANTS; m++) {
		bool b = e2e_variants[m].kind == JOB_CACHE_BATCH;
		struct cache_stats st;
		uint64_t looked;

		cache_get_stats(c[m], &st);
		looked = st.hits - st0[m].hits + st.misses - st0[m].misses + st.bypassed -
			 st0[m].bypassed;
		printf("%-34s %12.1f %10.2f %9.0f   hit ratio %.3f, fills/lookup %.3f, / trie %s "
		       "%.2f\n",
		       e2e_variants[m].name, best(v[m]) / 1e6, best(v[m]) / best(trie),
		       spread(v[m]), hit_ratio_since(c[m], &st0[m]),
		       looked ? (double)(st.fills - st0[m].fills) / (double)looked : 0,
		       b ? "batch" : "single", best(v[m]) / best(b ? batch : trie));
		cache_destroy(c[m]);
	}
	if (best(lp) > 0) {
		e2e_row("rte_lpm_lookup_bulk", lp, best(trie));
		printf("/ rte_lpm bulk: cache batch per-thread %.2f, common %.2f; trie batch "
		       "%.2f\n",
		       best(v[3]) / best(lp), best(v[2]) / best(lp), best(batch) / best(lp));
	}
}

/*
 * Hit ratio and lookups/s by cache size: single lookups in each mode,
 * batches of 64 per-thread, and the trie's batch beside them (measured
 * again at each size, so that the row's figures share the moment).
 */
static void e2e_sweep(struct table *tt, const uint32_t *a)
{
	printf("\nsweep: zipf 1.0 stream, 1 thread, warmed with the stream's last 2^20: hit ratio "
	       "and M lookups/s by cache size\n");
	printf("%-10s %10s %10s %10s %10s %12s %12s\n", "elements", "hit com", "M/s com", "hit pt",
	       "M/s pt", "M/s pt batch", "trie batch");
	for (unsigned int k = 9; k <= 20; k++) {
		struct job tj = {
			.tb = tt->tb, .addr = a, .n_addr = STREAM, .kind = JOB_TRIE_BATCH
		};
		double hr[2], v[3], trie;

		for (int m = 0; m < 3; m++) {
			struct cache *c = cache_or_die(tt->f, (1u << k) + 1, 1,
						       m ? CACHE_PERTHREAD : CACHE_COMMON, 0, 0);
			struct job j = { .c = c,
					 .tb = tt->tb,
					 .addr = a,
					 .n_addr = STREAM,
					 .kind = m == 2 ? JOB_CACHE_BATCH : JOB_CACHE };
			struct cache_stats st0;

			warm(c, a + STREAM - WARM, WARM, &st0);
			v[m] = run_threads(&j, 1);
			if (m < 2)
				hr[m] = hit_ratio_since(c, &st0);
			cache_destroy(c);
		}
		trie = run_threads(&tj, 1);
		printf("%-10u %10.3f %10.1f %10.3f %10.1f %12.1f %12.1f\n", (1u << k) + 1, hr[0],
		       v[0] / 1e6, hr[1], v[1] / 1e6, v[2] / 1e6, trie / 1e6);
	}
}

static void section_e2e(struct table *tt)
{
	uint32_t *z = table_stream(tt, 1.0, 5), *u = xcalloc(STREAM, sizeof(uint32_t));
	struct tdata_rng r;

	title("e2e: the full table");
	tdata_rng_seed(&r, 6);
	for (uint32_t i = 0; i < STREAM; i++)
		u[i] = (uint32_t)(tdata_rng_next(&r) >> 32);
	e2e_compare(tt, z, "zipf 1.0 over the table's destinations");
	e2e_compare(tt, u, "uniformly random addresses (a flood)");
	free(z);
	free(u);
}

/*
 * The flood target (per-thread mode, the guard on): the cache against the
 * trie on uniformly random addresses, batch against batch and single
 * against single, in FLOOD_ROUNDS rounds that pair the two back to back;
 * the median of the rounds' ratios, as one best-of-3 ratio moves by 20 %
 * on this machine from one run to the next.
 */
#define FLOOD_ROUNDS 11

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void flood_print(const char *what, double *r)
{
	qsort(r, FLOOD_ROUNDS, sizeof(*r), cmp_double);
	printf("%-30s %8.3f %8.3f %8.3f %8.3f %8.3f\n", what, r[0], r[FLOOD_ROUNDS / 4],
	       r[FLOOD_ROUNDS / 2], r[FLOOD_ROUNDS - 1 - FLOOD_ROUNDS / 4], r[FLOOD_ROUNDS - 1]);
}

/* One run of @trie_kind on the trie alone, then of @cache_kind through @c: their ratio. */
static double flood_ratio(struct job j, struct cache *c, int trie_kind, int cache_kind)
{
	double trie;

	j.c = NULL;
	j.kind = trie_kind;
	trie = run_threads(&j, 1);
	j.c = c;
	j.kind = cache_kind;
	return run_threads(&j, 1) / trie;
}

static void section_flood(struct table *tt)
{
	uint32_t *u = xcalloc(STREAM, sizeof(uint32_t));
	struct cache *c = cache_or_die(tt->f, 65536, 1, CACHE_PERTHREAD, 0, 0);
	double rb[FLOOD_ROUNDS], rs[FLOOD_ROUNDS];
	struct cache_stats st0, st;
	struct tdata_rng r;

	title("flood: uniformly random addresses, per-thread cache 64k (flood guard on) / trie");
	tdata_rng_seed(&r, 6);
	for (uint32_t i = 0; i < STREAM; i++)
		u[i] = (uint32_t)(tdata_rng_next(&r) >> 32);
	warm(c, u + STREAM - WARM, WARM, &st0);
	for (int round = 0; round < FLOOD_ROUNDS; round++) {
		struct job j = { .tb = tt->tb, .addr = u, .n_addr = STREAM };

		rb[round] = flood_ratio(j, c, JOB_TRIE_BATCH, JOB_CACHE_BATCH);
		rs[round] = flood_ratio(j, c, JOB_TRIE, JOB_CACHE);
	}
	cache_get_stats(c, &st);
	printf("%d rounds of 0.3 s each side; ratios cache / trie (1 - ratio: what the cache "
	       "costs)\n",
	       FLOOD_ROUNDS);
	printf("%-30s %8s %8s %8s %8s %8s\n", "lookup", "min", "q1", "median", "q3", "max");
	flood_print("batch of 64 / trie batch", rb);
	flood_print("single / trie single", rs);
	printf("bypassed by the guard: %.4f of lookups; fills %llu\n",
	       (double)(st.bypassed - st0.bypassed) /
		       (double)(st.bypassed - st0.bypassed + st.hits - st0.hits + st.misses -
				st0.misses),
	       (unsigned long long)(st.fills - st0.fills));
	cache_destroy(c);
	free(u);
}

/* ---------------------------------------------------------------- churn */

struct churn_w {
	struct table *tt;
	int stop;
	uint64_t edits;
};

/* Replaces the route of one of the 1000 hottest destinations' prefixes, 10000 times a second. */
static void *churn_writer(void *arg)
{
	struct churn_w *w = arg;
	struct nh_path gw = { .gw_family = AF_INET, .weight = 1 };
	struct fib_rcfg rc = { .table = FIB_TABLE_MAIN,
			       .type = FIB_RT_UNICAST,
			       .n_paths = 1,
			       .paths = &gw,
			       .flags = FIB_F_CREATE | FIB_F_REPLACE };
	struct errbuf err;
	struct tdata_rng r;
	uint64_t t0 = now_ns();

	tdata_rng_seed(&r, 9);
	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		struct addr a = { .family = AF_INET };
		struct addr_prefix p;

		a.v4.s_addr = htonl(w->tt->dest[tdata_rng_next(&r) % 1000]);
		fib_read_lock();
		if (!fib_match_rcu(w->tt->f, FIB_TABLE_MAIN, &a, &p)) {
			fib_read_unlock();
			continue;
		}
		fib_read_unlock();
		rc.dst = p;
		gw.gw.v4.s_addr = htonl(0xc0000201u + (uint32_t)(w->edits % 8));
		fib_route_add(w->tt->f, &rc, &err);
		w->edits++;
		/* Paced: edit k is due at k * 100 us. */
		while (now_ns() - t0 < w->edits * 100000ull &&
		       !__atomic_load_n(&w->stop, __ATOMIC_RELAXED))
			usleep(50);
	}
	return NULL;
}

static void section_sweep(struct table *tt)
{
	uint32_t *z = table_stream(tt, 1.0, 5);

	title("sweep: the full table");
	e2e_sweep(tt, z);
	free(z);
}

static void section_churn(struct table *tt)
{
	uint32_t *z = table_stream(tt, 1.0, 5);

	title("churn: zipf 1.0 stream, routes of the 1000 hottest prefixes replaced at 10k/s");
	printf("%-12s %12s %10s %14s %10s %10s\n", "mode", "M lookups/s", "hit ratio", "edits/s",
	       "checked", "wrong");
	for (int m = 0; m < 2; m++) {
		struct cache *c = cache_or_die(tt->f, 65536, 1, m, 0, 0);
		struct cache_thread *t = cache_thread(c, 0);
		struct churn_w w = { .tt = tt };
		pthread_t th;
		uint64_t t0, n = 0, checked = 0, wrong = 0, raced = 0;
		struct cache_stats st0;

		warm(c, z + STREAM - WARM, WARM, &st0);
		pthread_create(&th, NULL, churn_writer, &w);
		t0 = now_ns();
		while (now_ns() - t0 < 3 * RUN_NS) {
			fib_read_lock();
			for (int i = 0; i < 1024; i++, n++) {
				uint32_t a = z[n % STREAM];
				struct fib_route got;
				bool found;

				if (n % 64) {
					found = cache_lookup4_rcu(c, t, a, &got);
					sink += found ? got.metric : 0;
					continue;
				}
				/* The sample: the same answer as the trie, unless an edit
				 * overlapped. */
				uint32_t s1 = __atomic_load_n(&c->gens->seq, __ATOMIC_ACQUIRE);
				const struct fib_route *want;

				found = cache_lookup4_rcu(c, t, a, &got);
				want = fib_lookup4_rcu(tt->tb, a);
				CACHE_FENCE_ACQ();
				if ((s1 & 1) ||
				    __atomic_load_n(&c->gens->seq, __ATOMIC_RELAXED) != s1) {
					raced++;
					continue;
				}
				checked++;
				if (found != (want != NULL) ||
				    (found && memcmp(&got, want, sizeof(got))))
					wrong++;
			}
			fib_read_unlock();
		}
		double secs = (double)(now_ns() - t0) / 1e9;

		__atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
		pthread_join(th, NULL);
		printf("%-12s %12.1f %10.3f %14.0f %10llu %10llu   (%llu samples raced an edit)\n",
		       cache_mode_name(m), (double)n / secs / 1e6, hit_ratio_since(c, &st0),
		       (double)w.edits / secs, (unsigned long long)checked,
		       (unsigned long long)wrong, (unsigned long long)raced);
		if (wrong)
			printf("WRONG ANSWERS: the cache disagreed with the trie\n");
		cache_destroy(c);
	}
	free(z);
}

int main(int argc, char **argv)
{
	const char *want[9];
	int n_want = 0;
	struct table tt = { 0 };
	bool dpdk = true;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--section") && i + 1 < argc && n_want < 9) {
			want[n_want++] = argv[++i];
		} else if (!strcmp(argv[i], "--no-dpdk")) {
			dpdk = false; /* e2e without rte_lpm (its load takes minutes) */
		} else {
			fprintf(stderr, "usage: bench_cache [--section "
					"update|nrscans|size|zipf|full|e2e|sweep|churn|flood]... "
					"[--no-dpdk]\n");
			return 2;
		}
	}
	(void)dpdk; /* unused without DPDK */
	fib_reader_register();
	printf("bench_cache: %ld CPUs online; each figure the best of %d interleaved runs of "
	       "%.1f s, spread = (max - min) / max\n",
	       sysconf(_SC_NPROCESSORS_ONLN), ROUNDS, (double)RUN_NS / 1e9);
	{
		bool any = false;

		static const char *const names[9] = { "update", "nrscans", "size",  "zipf", "full",
						      "e2e",    "sweep",   "churn", "flood" };

		for (int s = 0; s < 9; s++) {
			bool on = n_want == 0;

			for (int k = 0; k < n_want; k++)
				on |= !strcmp(want[k], names[s]);
			if (!on)
				continue;
			any = true;
			switch (s) {
			case 0:
				section_update();
				break;
			case 1:
				section_nrscans();
				break;
			case 2:
				section_size();
				break;
			case 3:
				section_zipf();
				break;
			case 4:
				section_full();
				break;
			default:
				if (!tt.f && table_load(&tt))
					return 1;
#ifdef HAVE_DPDK
				if (s == 5 && dpdk && !lpm && lpm_build(&tt))
					printf("rte_lpm: not available\n");
#endif
				if (s == 5)
					section_e2e(&tt);
				else if (s == 6)
					section_sweep(&tt);
				else if (s == 7)
					section_churn(&tt);
				else
					section_flood(&tt);
			}
			fflush(stdout);
		}
		if (!any) {
			fprintf(stderr, "bench_cache: no such section\n");
			return 2;
		}
	}
	fib_reader_unregister();
	return 0;
}
