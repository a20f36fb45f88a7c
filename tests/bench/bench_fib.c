/* SPDX-License-Identifier: MIT */
/*
 * bench_fib: figures for liblcfib on the real full BGP table, with DPDK's
 * rte_lpm and rte_fib beside it when DPDK is available. It prints figures
 * and never judges them; docs/BENCHMARKS.md records a run and reads it
 * against the targets.
 *
 *   bench_fib [--quick] [--cpu-time] [--section machine|full|dpdk|sweep|syncmem|lookups|loads]
 *
 * Sections:
 *   machine  random reads of 1, 4 and 64 MiB buffers: memory latency and
 *            throughput, which bound every lookup figure.
 *   full     load the full table (IPv4, then IPv6): load rate, accounted
 *            bytes per route, trie statistics; lookups/s on one reader;
 *            then the same load in bulk mode (fib_bulk_begin/end), and
 *            again with the end on two threads (fib_set_build_threads).
 *   dpdk     rte_lpm (DIR-24-8) and rte_fib (dir24_8) on the same table
 *            and the same addresses, and lcfib/DPDK ratios; rte_fib6
 *            likewise; and each family's batch beside DPDK's again on
 *            4096 addresses over and over, all in cache.
 *   sweep    tables of 2^k+1 random prefixes of the full IPv4 table.
 *   syncmem  the full IPv4 load while a reader holds its read lock ~1 ms
 *            at a time, at several sync-mem values (the kernel's
 *            fib_sync_mem experiment).
 *   lookups  only when named: the full table loaded as in full, then
 *            full's lookup rows alone, every pass printed. For A/B runs
 *            of two builds of the library (a minute less than full).
 *   loads    only when named: one route at a time alone (IPv4 in file
 *            order and shuffled, IPv6 in file order), each into a fresh
 *            FIB, with what it retired, then both families in bulk mode
 *            with fib_bulk_end() on one thread and on two: for A/B runs
 *            of loads, and for counting their instructions (valgrind
 *            --tool=callgrind --toggle-collect=fib_route_add).
 *   reads    only in tests/bench/bench_fib_reads (the library's lookups
 *            built with TRIE_READ_STATS), and only when named: the memory
 *            objects a lookup reads, counted by kind, on full's
 *            addresses, beside DIR-24-8's reads of the same IPv4 ones
 *            and rte_fib6's of the IPv6 ones (counted from the table).
 *
 * Lookup addresses are made before the clock starts and reused over
 * several passes; every result feeds a checksum, so no lookup can be
 * optimized away. Lookups run on their own registered reader thread,
 * which takes the read lock once per LOOKUP_CHUNK addresses.
 *
 * The seed of every random choice comes from $LCFIB_SEED (default 1);
 * the table from $LCFIB_DATA (default tests/data).
 */
#define _GNU_SOURCE /* pthread_{get,set}affinity_np */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <urcu/arch.h>

#include "lib/fib.h"
#include "lib/mem.h"  /* mem_class_name(): internal, linked in */
#include "lib/trie.h" /* the tries themselves: internal, linked in */
#include "tests/tdata.h"

#ifdef HAVE_DPDK
/* rte_lpm.h's inline bulk lookup declares a VLA; with clang, rte_ring tests an undefined macro. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvla"
#pragma GCC diagnostic ignored "-Wundef"
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_fib.h>
#include <rte_fib6.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <rte_vect.h>
#include <rte_version.h>
#pragma GCC diagnostic pop
#endif

#define LOOKUP_CHUNK 1024        /* addresses per read-side critical section */
#define WARMUP_MAX   (1u << 20)  /* addresses of the untimed first pass */
#define AGREE_MAX    (1u << 20)  /* addresses checked against DPDK */
#define N_GW         8           /* gateways the routes are spread over */
#define GW4_BASE     0xc0000201u /* 192.0.2.1 */

#define SWEEP_KMIN 9
#define SWEEP_KMAX 20

#define MIB (1024.0 * 1024.0)

/*
 * --cpu-time: lookup passes are timed by their thread's CPU time, not the
 * wall clock, for a machine shared with other work: the time a reader
 * spends descheduled is left out (what the other work does to the caches
 * is not). Loads are always timed by the wall clock.
 */
static bool cpu_time;

/* Results go here so that no lookup is dead code. */
static volatile uint64_t bench_sink;

enum { ADDR_UNIFORM, ADDR_INSIDE, ADDR_KINDS };
enum { API_SINGLE, API_BATCH, API_KINDS };

static const char *const addr_kind_name[ADDR_KINDS] = { "uniform random", "inside prefixes" };

/* One lookup measurement. */
#define LK_PASSES_MAX 16 /* passes whose figures are kept one by one */

struct lk_fig {
	double mps; /* million lookups per second */
	double ns;  /* nanoseconds per lookup */
	double hit; /* percent of addresses that matched */
	uint64_t hits_per_pass;
	bool done;
	unsigned int n_pass;
	double pass_mps[LK_PASSES_MAX]; /* each timed pass, in order */
};

/* One load of routes. */
struct load_fig {
	size_t routes;      /* added */
	size_t exist;       /* -EEXIST: duplicates in the input */
	size_t failed;      /* any other error */
	uint64_t create_ns; /* DPDK: making the empty table */
	uint64_t ns;        /* the adds */
	char first_err[ERR_MSG_MAX];
};

struct bench {
	bool quick;
	uint64_t seed;
	unsigned int passes;
	size_t n_addr4, n_addr6, n_sweep;
	unsigned int sweep_kmax;

	struct tdata_table t;
	uint8_t *gw4, *gw6; /* gateway of each prefix */
	bool have_table;

	uint32_t *a4[ADDR_KINDS];
	struct in6_addr *a6_inside, *a6_global;
	trie_key6 *k6_inside, *k6_global;

	/* lcfib's IPv4 figures, for the ratios of the dpdk section. */
	struct fib *fib4; /* holds the full IPv4 table (and IPv6 after section full) */
	struct load_fig lc_load4;
	uint64_t lc_bytes4;
	struct lk_fig lc4[ADDR_KINDS][API_KINDS];

	int eal; /* 0: not tried; 1: up; -1: failed */
#ifdef HAVE_DPDK
	char eal_dir[256];        /* EAL's runtime folder, removed at exit */
	struct rte_lpm *lpm_full; /* the full table, reused by the sweep */
#endif
};

static struct nh_path gw_path4[N_GW], gw_path6[N_GW];

/* ------------------------------------------------------------- helpers */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The clock of lookup passes: see cpu_time. */
static uint64_t lk_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(cpu_time ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double rate(size_t n, uint64_t ns)
{
	return ns ? (double)n * 1e9 / (double)ns : 0;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static uint64_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * The process's resident anonymous memory and the part of it in
 * transparent huge pages (/proc/self/smaps: Anonymous, AnonHugePages):
 * what the kernel did with the MADV_HUGEPAGE advice, not the advice.
 */
static void anon_huge_bytes(uint64_t *anon, uint64_t *huge)
{
	char line[256];
	unsigned long kb;
	FILE *f = fopen("/proc/self/smaps", "r");

	*anon = *huge = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Anonymous: %lu kB", &kb) == 1)
			*anon += (uint64_t)kb * 1024;
		else if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			*huge += (uint64_t)kb * 1024;
	}
	fclose(f);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "bench_fib: out of memory (%zu x %zu bytes)\n", n, size);
		exit(1);
	}
	return p;
}

static unsigned __int128 rng_next128(struct tdata_rng *r)
{
	unsigned __int128 hi = tdata_rng_next(r);

	return hi << 64 | tdata_rng_next(r);
}

static void print_title(const char *title)
{
	printf("\n== %s ==\n\n", title);
	fflush(stdout);
}

/* Progress for long steps, on stderr so that stdout stays the tables. */
static void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void progress(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("bench_fib: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ------------------------------------------------------ table and routes */

static void gw_init(void)
{
	for (unsigned int i = 0; i < N_GW; i++) {
		gw_path4[i].gw_family = AF_INET;
		gw_path4[i].gw.v4.s_addr = htonl(GW4_BASE + i);
		gw_path4[i].weight = 1;
		gw_path6[i].gw_family = AF_INET6;
		inet_pton(AF_INET6, "2001:db8::", &gw_path6[i].gw.v6);
		gw_path6[i].gw.v6.s6_addr[15] = (uint8_t)(i + 1);
		gw_path6[i].weight = 1;
	}
}

/* A gateway chosen by the prefix alone, so every subset and baseline agrees. */
static uint8_t gw_pick(const struct addr_prefix *p)
{
	unsigned int len = p->a.family == AF_INET6 ? 16 : 4;
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (unsigned int i = 0; i < len; i++)
		h = (h ^ p->a.b[i]) * 0x100000001b3ull;
	h = (h ^ p->plen) * 0x100000001b3ull;
	return (uint8_t)((h >> 32) % N_GW);
}

static int bench_table(struct bench *b)
{
	uint64_t t0;
	int ret;

	if (b->have_table)
		return 0;
	t0 = now_ns();
	ret = tdata_load_fullview(&b->t);
	if (ret) {
		fprintf(stderr, "bench_fib: cannot load the full table (%s); set LCFIB_DATA\n",
			strerror(-ret));
		return ret;
	}
	b->gw4 = xcalloc(b->t.n4, 1);
	b->gw6 = xcalloc(b->t.n6, 1);
	for (size_t i = 0; i < b->t.n4; i++)
		b->gw4[i] = gw_pick(&b->t.v4[i]);
	for (size_t i = 0; i < b->t.n6; i++)
		b->gw6[i] = gw_pick(&b->t.v6[i]);
	b->have_table = true;
	printf("table: %zu IPv4 + %zu IPv6 prefixes from %s/fullview-2024.txt.gz, "
	       "read in %.2f s\n",
	       b->t.n4, b->t.n6, tdata_dir(), (double)(now_ns() - t0) / 1e9);
	return 0;
}

/*
 * Adds prefixes p[idx[i]] (p[i] when @idx is NULL), i < @n, each as one
 * unicast route via its gateway, with @flags.
 */
static void load_prefixes_flags(struct fib *f, const struct addr_prefix *p, const uint8_t *gw,
				const uint32_t *idx, size_t n, unsigned int flags,
				struct load_fig *lf)
{
	struct fib_rcfg rc = {
		.table = FIB_TABLE_MAIN,
		.type = FIB_RT_UNICAST,
		.n_paths = 1,
		.flags = flags,
	};
	struct errbuf err;
	uint64_t t0;

	memset(lf, 0, sizeof(*lf));
	t0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		size_t k = idx ? idx[i] : i;
		int ret;

		rc.dst = p[k];
		rc.paths = p[k].a.family == AF_INET6 ? &gw_path6[gw[k]] : &gw_path4[gw[k]];
		err_clear(&err);
		ret = fib_route_add(f, &rc, &err);
		if (ret == 0) {
			lf->routes++;
		} else if (ret == -EEXIST) {
			lf->exist++;
		} else if (lf->failed++ == 0) {
			snprintf(lf->first_err, sizeof(lf->first_err), "%s (%s)", err.msg,
				 strerror(-ret));
		}
	}
	lf->ns = now_ns() - t0;
}

/* load_prefixes_flags() with FIB_F_CREATE | FIB_F_EXCL: a load into a fresh table. */
static void load_prefixes(struct fib *f, const struct addr_prefix *p, const uint8_t *gw,
			  const uint32_t *idx, size_t n, struct load_fig *lf)
{
	load_prefixes_flags(f, p, gw, idx, n, FIB_F_CREATE | FIB_F_EXCL, lf);
}

static void print_load_errors(const char *what, const struct load_fig *lf)
{
	if (lf->failed)
		printf("  %s: %zu routes failed; the first: %s\n", what, lf->failed, lf->first_err);
}

static struct fib *fib_new_or_die(void)
{
	struct fib *f = fib_new();

	if (!f) {
		fprintf(stderr, "bench_fib: fib_new: %s\n", strerror(errno));
		exit(1);
	}
	return f;
}

/* ------------------------------------------------------------ addresses */

static uint32_t host_mask4(unsigned int plen)
{
	return plen >= 32 ? 0 : ~0u >> plen;
}

static unsigned __int128 host_mask6(unsigned int plen)
{
	return plen >= 128 ? 0 : ~(unsigned __int128)0 >> plen;
}

/* An address inside a random one of @n prefixes (p[idx[i]] when @idx). */
static uint32_t addr4_inside(struct tdata_rng *r, const struct addr_prefix *p, const uint32_t *idx,
			     size_t n)
{
	uint64_t x = tdata_rng_next(r);
	size_t i = (size_t)((x >> 1) % n);
	const struct addr_prefix *q = &p[idx ? idx[i] : i];

	return addr_key4(&q->a) | ((uint32_t)tdata_rng_next(r) & host_mask4(q->plen));
}

static void fill_uniform4(uint32_t *a, size_t n, uint64_t seed)
{
	struct tdata_rng r;

	tdata_rng_seed(&r, seed);
	for (size_t i = 0; i < n; i++)
		a[i] = (uint32_t)(tdata_rng_next(&r) >> 32);
}

static void fill_inside4(uint32_t *a, size_t n, const struct addr_prefix *p, const uint32_t *idx,
			 size_t np, uint64_t seed)
{
	struct tdata_rng r;

	tdata_rng_seed(&r, seed);
	for (size_t i = 0; i < n; i++)
		a[i] = addr4_inside(&r, p, idx, np);
}

static void addr6_store(trie_key6 key, struct in6_addr *a, trie_key6 *k)
{
	struct addr tmp;

	addr_from_key6(&tmp, key);
	*a = tmp.v6;
	*k = key;
}

static void bench_addrs4(struct bench *b)
{
	if (b->a4[ADDR_UNIFORM])
		return;
	b->a4[ADDR_UNIFORM] = xcalloc(b->n_addr4, sizeof(uint32_t));
	b->a4[ADDR_INSIDE] = xcalloc(b->n_addr4, sizeof(uint32_t));
	fill_uniform4(b->a4[ADDR_UNIFORM], b->n_addr4, b->seed ^ 0x41);
	fill_inside4(b->a4[ADDR_INSIDE], b->n_addr4, b->t.v4, NULL, b->t.n4, b->seed ^ 0x42);
}

static void bench_addrs6(struct bench *b)
{
	struct tdata_rng r;

	if (b->a6_inside)
		return;
	b->a6_inside = xcalloc(b->n_addr6, sizeof(struct in6_addr));
	b->a6_global = xcalloc(b->n_addr6, sizeof(struct in6_addr));
	b->k6_inside = xcalloc(b->n_addr6, sizeof(trie_key6));
	b->k6_global = xcalloc(b->n_addr6, sizeof(trie_key6));
	tdata_rng_seed(&r, b->seed ^ 0x61);
	for (size_t i = 0; i < b->n_addr6; i++) {
		const struct addr_prefix *q = &b->t.v6[(tdata_rng_next(&r) >> 1) % b->t.n6];
		trie_key6 key = addr_key6(&q->a) | (rng_next128(&r) & host_mask6(q->plen));

		addr6_store(key, &b->a6_inside[i], &b->k6_inside[i]);
	}
	/* 2000::/3: the top three bits are 001. */
	tdata_rng_seed(&r, b->seed ^ 0x62);
	for (size_t i = 0; i < b->n_addr6; i++) {
		trie_key6 key = rng_next128(&r) >> 3 | (unsigned __int128)1 << 125;

		addr6_store(key, &b->a6_global[i], &b->k6_global[i]);
	}
}

/* -------------------------------------------------------------- lookups */

/*
 * A lookup measurement: @pass looks up the first @n addresses of @addr in
 * @ctx once, adding matches to @hits and results to @sum.
 */
struct lk_job {
	void (*pass)(struct lk_job *j, size_t n);
	const void *ctx;
	const void *addr;
	size_t n;
	unsigned int passes;
	uint64_t hits, sum;
	uint64_t best_ns; /* the fastest pass */
	uint64_t pass_ns[LK_PASSES_MAX];
};

static size_t chunk_end(size_t i, size_t n)
{
	return n - i < LOOKUP_CHUNK ? n : i + LOOKUP_CHUNK;
}

static void pass_lc4_single(struct lk_job *j, size_t n)
{
	const struct fib_table *tb = j->ctx;
	const uint32_t *a = j->addr;
	uint64_t hits = 0, sum = 0;

	for (size_t i = 0; i < n; i += LOOKUP_CHUNK) {
		size_t end = chunk_end(i, n);

		fib_read_lock();
		for (size_t k = i; k < end; k++) {
			const struct fib_route *r = fib_lookup4_rcu(tb, a[k]);

			hits += r != NULL;
			sum += (uintptr_t)r;
		}
		fib_read_unlock();
	}
	j->hits += hits;
	j->sum += sum;
}

static void pass_lc4_batch(struct lk_job *j, size_t n)
{
	const struct fib_table *tb = j->ctx;
	const uint32_t *a = j->addr;
	const struct fib_route *res[LOOKUP_CHUNK];
	uint64_t hits = 0, sum = 0;

	for (size_t i = 0; i < n; i += LOOKUP_CHUNK) {
		unsigned int m = (unsigned int)(chunk_end(i, n) - i);

		fib_read_lock();
		fib_lookup4_batch_rcu(tb, a + i, res, m);
		for (unsigned int k = 0; k < m; k++) {
			hits += res[k] != NULL;
			sum += (uintptr_t)res[k];
		}
		fib_read_unlock();
	}
	j->hits += hits;
	j->sum += sum;
}

static void pass_lc6_single(struct lk_job *j, size_t n)
{
	const struct fib_table *tb = j->ctx;
	const struct in6_addr *a = j->addr;
	uint64_t hits = 0, sum = 0;

	for (size_t i = 0; i < n; i += LOOKUP_CHUNK) {
		size_t end = chunk_end(i, n);

		fib_read_lock();
		for (size_t k = i; k < end; k++) {
			const struct fib_route *r = fib_lookup6_rcu(tb, &a[k]);

			hits += r != NULL;
			sum += (uintptr_t)r;
		}
		fib_read_unlock();
	}
	j->hits += hits;
	j->sum += sum;
}

/* IPv6 with keys converted beforehand: the trie without fib_lookup6_rcu's conversion. */
static void pass_lc6_key(struct lk_job *j, size_t n)
{
	const struct fib_table *tb = j->ctx;
	const trie_key6 *a = j->addr;
	uint64_t hits = 0, sum = 0;

	for (size_t i = 0; i < n; i += LOOKUP_CHUNK) {
		size_t end = chunk_end(i, n);

		fib_read_lock();
		for (size_t k = i; k < end; k++) {
			const struct fib_route *r = trie6_lookup_rcu(tb->t6, a[k]);

			hits += r != NULL;
			sum += (uintptr_t)r;
		}
		fib_read_unlock();
	}
	j->hits += hits;
	j->sum += sum;
}

static void pass_lc6_batch(struct lk_job *j, size_t n)
{
	const struct fib_table *tb = j->ctx;
	const struct in6_addr *a = j->addr;
	const struct fib_route *res[LOOKUP_CHUNK];
	uint64_t hits = 0, sum = 0;

	for (size_t i = 0; i < n; i += LOOKUP_CHUNK) {
		unsigned int m = (unsigned int)(chunk_end(i, n) - i);

		fib_read_lock();
		fib_lookup6_batch_rcu(tb, a + i, res, m);
		for (unsigned int k = 0; k < m; k++) {
			hits += res[k] != NULL;
			sum += (uintptr_t)res[k];
		}
		fib_read_unlock();
	}
	j->hits += hits;
	j->sum += sum;
}

/* The table's trie with keys converted beforehand: the batch without the conversion. */
static void pass_lc6_key_batch(struct lk_job *j, size_t n)
{
	const struct fib_table *tb = j->ctx;
	const trie_key6 *a = j->addr;
	const struct fib_route *res[LOOKUP_CHUNK];
	uint64_t hits = 0, sum = 0;

	for (size_t i = 0; i < n; i += LOOKUP_CHUNK) {
		unsigned int m = (unsigned int)(chunk_end(i, n) - i);

		fib_read_lock();
		trie6_lookup_batch_rcu(tb->t6, a + i, res, m);
		for (unsigned int k = 0; k < m; k++) {
			hits += res[k] != NULL;
			sum += (uintptr_t)res[k];
		}
		fib_read_unlock();
	}
	j->hits += hits;
	j->sum += sum;
}

static void *lk_thread(void *arg)
{
	struct lk_job *j = arg;
	uint64_t t0;

	fib_reader_register();
	j->pass(j, j->n < WARMUP_MAX ? j->n : WARMUP_MAX);
	j->hits = 0;
	j->best_ns = UINT64_MAX;
	for (unsigned int p = 0; p < j->passes; p++) {
		uint64_t ns;

		t0 = lk_clock_ns();
		j->pass(j, j->n);
		ns = lk_clock_ns() - t0;
		if (p < LK_PASSES_MAX)
			j->pass_ns[p] = ns;
		if (ns < j->best_ns)
			j->best_ns = ns;
	}
	fib_reader_unregister();
	return NULL;
}

/*
 * Runs one measurement on a fresh reader thread: one untimed pass over up
 * to WARMUP_MAX addresses, then @passes timed ones; the figure is the
 * fastest pass, the least disturbed by other work on the machine.
 */
static struct lk_fig lk_run(void (*pass)(struct lk_job *, size_t), const void *ctx,
			    const void *addr, size_t n, unsigned int passes)
{
	struct lk_job j = { .pass = pass, .ctx = ctx, .addr = addr, .n = n, .passes = passes };
	struct lk_fig fig = { .done = true };
	pthread_t th;
	int ret;

	ret = pthread_create(&th, NULL, lk_thread, &j);
	if (ret) {
		fprintf(stderr, "bench_fib: pthread_create: %s\n", strerror(ret));
		exit(1);
	}
	pthread_join(th, NULL);
	bench_sink += j.sum;
	fig.mps = (double)n * 1e3 / (double)j.best_ns;
	fig.ns = (double)j.best_ns / (double)n;
	fig.hit = 100.0 * (double)j.hits / ((double)n * passes);
	fig.hits_per_pass = j.hits / passes;
	fig.n_pass = passes < LK_PASSES_MAX ? passes : LK_PASSES_MAX;
	for (unsigned int p = 0; p < fig.n_pass; p++)
		fig.pass_mps[p] = (double)n * 1e3 / (double)j.pass_ns[p];
	return fig;
}

static void print_lk_header(void)
{
	printf("%-6s %-22s %-36s %11s %9s %7s\n", "family", "addresses", "API", "M lookups/s",
	       "ns/lookup", "hits %");
}

static void print_lk_row(const char *family, const char *addrs, const char *api,
			 const struct lk_fig *f)
{
	if (!f->done) {
		printf("%-6s %-22s %-36s %11s\n", family, addrs, api, "-");
		return;
	}
	printf("%-6s %-22s %-36s %11.1f %9.2f %7.2f\n", family, addrs, api, f->mps, f->ns, f->hit);
}

/* Single and batch lookups must find the same routes; say so when they do not. */
static void check_same_hits(const char *what, const struct lk_fig *a, const struct lk_fig *b)
{
	if (a->done && b->done && a->hits_per_pass != b->hits_per_pass)
		printf("  WARNING: %s: %" PRIu64 " vs %" PRIu64 " matches per pass\n", what,
		       a->hits_per_pass, b->hits_per_pass);
}

/* IPv4 lookups of section full, kept in b->lc4 for the dpdk section. */
static void measure_lc4(struct bench *b, const struct fib_table *tb)
{
	for (int k = 0; k < ADDR_KINDS; k++) {
		b->lc4[k][API_SINGLE] =
			lk_run(pass_lc4_single, tb, b->a4[k], b->n_addr4, b->passes);
		b->lc4[k][API_BATCH] = lk_run(pass_lc4_batch, tb, b->a4[k], b->n_addr4, b->passes);
		check_same_hits(addr_kind_name[k], &b->lc4[k][API_SINGLE], &b->lc4[k][API_BATCH]);
	}
}

static void print_lc4(const struct bench *b)
{
	for (int k = 0; k < ADDR_KINDS; k++) {
		print_lk_row("IPv4", addr_kind_name[k], "fib_lookup4_rcu", &b->lc4[k][API_SINGLE]);
		print_lk_row("IPv4", addr_kind_name[k], "fib_lookup4_batch_rcu",
			     &b->lc4[k][API_BATCH]);
	}
}

/* --------------------------------------------------------- section full */

static void print_mem_row(const char *name, uint64_t b0, uint64_t b1, uint64_t b2, size_t r4,
			  size_t r6)
{
	double d4 = (double)b1 - (double)b0, d6 = (double)b2 - (double)b1;

	printf("%-22s %14.0f %9.2f %14.0f %9.2f %14" PRIu64 "\n", name, d4,
	       r4 ? d4 / (double)r4 : 0, d6, r6 ? d6 / (double)r6 : 0, b2);
}

static void print_memory(const struct fib_state st[3], const uint64_t rss[3], size_t r4, size_t r6)
{
	printf("memory after each family's load and a reclaim barrier "
	       "(accounted by lib/mem.c; bytes)\n");
	printf("%-22s %14s %9s %14s %9s %14s\n", "class", "IPv4 bytes", "B/route", "IPv6 bytes",
	       "B/route", "total now");
	for (int c = 0; c < MEM_CLASS_MAX; c++)
		print_mem_row(mem_class_name(c), st[0].mem.cls[c].bytes, st[1].mem.cls[c].bytes,
			      st[2].mem.cls[c].bytes, r4, r6);
	print_mem_row("accounted (live)", st[0].mem.live_bytes, st[1].mem.live_bytes,
		      st[2].mem.live_bytes, r4, r6);
	print_mem_row("slab chunks held", st[0].mem.slab_bytes, st[1].mem.slab_bytes,
		      st[2].mem.slab_bytes, r4, r6);
	print_mem_row("  of which free (slack)", st[0].mem.slab_free_bytes,
		      st[1].mem.slab_free_bytes, st[2].mem.slab_free_bytes, r4, r6);
	print_mem_row("malloc'd (large)", st[0].mem.large_bytes, st[1].mem.large_bytes,
		      st[2].mem.large_bytes, r4, r6);
	print_mem_row("held (slabs + large)", st[0].mem.slab_bytes + st[0].mem.large_bytes,
		      st[1].mem.slab_bytes + st[1].mem.large_bytes,
		      st[2].mem.slab_bytes + st[2].mem.large_bytes, r4, r6);
	print_mem_row("process RSS", rss[0], rss[1], rss[2], r4, r6);
}

static void print_trie_stats(const struct trie_stats *s4, const struct trie_stats *s6)
{
	const struct trie_stats *s[2] = { s4, s6 };

	printf("trie statistics (as /proc/net/fib_triestat)\n");
	printf("%-26s %12s %12s\n", "", "IPv4", "IPv6");
#define ROW(label, field)                                                                          \
	printf("%-26s %12" PRIu64 " %12" PRIu64 "\n", label, (uint64_t)s[0]->field,                \
	       (uint64_t)s[1]->field)
	printf("%-26s %12.2f %12.2f\n", "average depth",
	       s[0]->leaves ? (double)s[0]->total_depth / (double)s[0]->leaves : 0,
	       s[1]->leaves ? (double)s[1]->total_depth / (double)s[1]->leaves : 0);
	ROW("max depth", max_depth);
	ROW("leaves", leaves);
	ROW("  of them inline", inline_leaves);
	ROW("shared routes", shared_routes);
	ROW("prefixes", prefixes);
	ROW("routes", routes);
	ROW("internal nodes", tnodes);
	for (int bits = 1; bits <= TRIE_MAX_BITS; bits++) {
		char label[32];

		if (!s[0]->nodes_by_bits[bits] && !s[1]->nodes_by_bits[bits])
			continue;
		snprintf(label, sizeof(label), "  with %d bits", bits);
		ROW(label, nodes_by_bits[bits]);
	}
	ROW("pointers", pointers);
	ROW("null pointers", null_pointers);
	printf("%-26s %11.1f%% %11.1f%%\n", "  null share",
	       s[0]->pointers ? 100.0 * (double)s[0]->null_pointers / (double)s[0]->pointers : 0,
	       s[1]->pointers ? 100.0 * (double)s[1]->null_pointers / (double)s[1]->pointers : 0);
	ROW("leaf bytes", leaf_bytes);
	ROW("internal node bytes", tnode_bytes);
	ROW("root fallback bytes", fallback_bytes);
	ROW("empty slots with answers", answers);
	ROW("  of them the root's", root_answers);
#undef ROW
}

static void print_reclaim(const struct reclaim_stats *r)
{
	printf("reclamation during the loads: sync-mem %" PRIu64 " B, %" PRIu64
	       " forced waits (%.1f ms, longest %.2f ms), %" PRIu64 " B retired in %" PRIu64
	       " objects, peak pending %" PRIu64 " B, %" PRIu64 " background batches\n",
	       r->sync_mem, r->forced_waits, (double)r->wait_ns_total / 1e6,
	       (double)r->wait_ns_max / 1e6, r->retired_bytes, r->retired_objects, r->peak_pending,
	       r->background_batches);
}

static void print_load_row(const char *what, const struct load_fig *lf)
{
	printf("%-8s %10zu %10zu %10.3f %12.0f %10.0f\n", what, lf->routes, lf->exist,
	       (double)lf->ns / 1e9, rate(lf->routes, lf->ns),
	       lf->routes ? (double)lf->ns / (double)lf->routes : 0);
}

/* Loads the IPv4 table into b->fib4; its state before and after in @st. */
static void load_full4(struct bench *b, struct fib_state st[2], uint64_t rss[2])
{
	b->fib4 = fib_new_or_die();
	fib_get_state(b->fib4, &st[0]);
	rss[0] = rss_bytes();
	load_prefixes(b->fib4, b->t.v4, b->gw4, NULL, b->t.n4, &b->lc_load4);
	fib_reclaim_barrier(b->fib4);
	fib_get_state(b->fib4, &st[1]);
	rss[1] = rss_bytes();
	b->lc_bytes4 = st[1].mem.live_bytes - st[0].mem.live_bytes;
}

static void section_full_lookups(struct bench *b, const struct fib_table *tb4,
				 const struct fib_table *tb6)
{
	const char *n6[2] = { "inside prefixes", "random in 2000::/3" };
	const struct in6_addr *a6[2];
	const trie_key6 *k6[2];
	struct lk_fig f6[2][4];

	progress("full: lookups");
	bench_addrs4(b);
	bench_addrs6(b);
	a6[0] = b->a6_inside;
	a6[1] = b->a6_global;
	k6[0] = b->k6_inside;
	k6[1] = b->k6_global;
	printf("lookups on one reader thread, read lock per %u addresses; IPv4: %zu addresses, "
	       "IPv6: %zu; the best of %u passes (after one untimed pass)\n",
	       LOOKUP_CHUNK, b->n_addr4, b->n_addr6, b->passes);
	measure_lc4(b, tb4);
	for (int k = 0; k < 2; k++) {
		f6[k][0] = lk_run(pass_lc6_single, tb6, a6[k], b->n_addr6, b->passes);
		f6[k][1] = lk_run(pass_lc6_key, tb6, k6[k], b->n_addr6, b->passes);
		f6[k][2] = lk_run(pass_lc6_batch, tb6, a6[k], b->n_addr6, b->passes);
		f6[k][3] = lk_run(pass_lc6_key_batch, tb6, k6[k], b->n_addr6, b->passes);
		check_same_hits(n6[k], &f6[k][0], &f6[k][2]);
		check_same_hits(n6[k], &f6[k][0], &f6[k][3]);
	}
	print_lk_header();
	print_lc4(b);
	for (int k = 0; k < 2; k++) {
		print_lk_row("IPv6", n6[k], "fib_lookup6_rcu", &f6[k][0]);
		print_lk_row("IPv6", n6[k], "trie6_lookup_rcu (key ready)", &f6[k][1]);
		print_lk_row("IPv6", n6[k], "fib_lookup6_batch_rcu", &f6[k][2]);
		print_lk_row("IPv6", n6[k], "trie6_lookup_batch_rcu (key ready)", &f6[k][3]);
	}
}

/* A reader that looks up batches, round and round an address array, until told to stop. */
struct dl_reader {
	const struct fib_table *tb;
	const uint32_t *addr;
	size_t n;
	uint64_t lookups; /* done so far (relaxed atomic) */
	int stop;         /* relaxed atomic */
	uint64_t sum;
};

static void *dl_thread(void *arg)
{
	struct dl_reader *r = arg;
	const struct fib_route *res[LOOKUP_CHUNK];
	size_t i = 0;

	fib_reader_register();
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		if (i + LOOKUP_CHUNK > r->n)
			i = 0;
		fib_read_lock();
		fib_lookup4_batch_rcu(r->tb, r->addr + i, res, LOOKUP_CHUNK);
		for (unsigned int k = 0; k < LOOKUP_CHUNK; k++)
			r->sum += (uintptr_t)res[k];
		fib_read_unlock();
		__atomic_fetch_add(&r->lookups, LOOKUP_CHUNK, __ATOMIC_RELAXED);
		i += LOOKUP_CHUNK;
	}
	fib_reader_unregister();
	return NULL;
}

/* Lookups per second of @r over the next @ns, or while @gw reloads the table (@gw set). */
static double dl_rate(struct dl_reader *r, struct bench *b, const uint8_t *gw, uint64_t ns,
		      struct load_fig *lf)
{
	uint64_t c0 = __atomic_load_n(&r->lookups, __ATOMIC_RELAXED), t0 = now_ns(), c1;

	if (gw) {
		load_prefixes_flags(b->fib4, b->t.v4, gw, NULL, b->t.n4, FIB_F_REPLACE, lf);
	} else {
		struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
				       .tv_nsec = (long)(ns % 1000000000u) };

		nanosleep(&ts, NULL);
	}
	c1 = __atomic_load_n(&r->lookups, __ATOMIC_RELAXED);
	return (double)(c1 - c0) * 1e3 / (double)(now_ns() - t0);
}

/* One row of the trim table: before, after, and both per live byte. */
static void print_trim_row(const char *name, uint64_t before, uint64_t after, uint64_t live0,
			   uint64_t live1)
{
	printf("%-26s %10.1f %10.1f %9.2f %9.2f\n", name, (double)before / MIB, (double)after / MIB,
	       live0 ? (double)before / (double)live0 : 0, live1 ? (double)after / (double)live1 : 0);
}

/*
 * Resident memory against live bytes before and after fib_mem_trim() (the
 * free slab chunks and glibc's free heap given back; after this load one
 * route at a time, a compaction too), with the huge pages
 * and the IPv4 batch lookups after it: a chunk given back splits the huge
 * page it was in. After the lookups, so that their rows above are the
 * untrimmed trie's (lcfibd trims at the end of a bulk load).
 */
static void section_full_trim(struct bench *b, const struct fib_table *tb4)
{
	struct fib_state st[2];
	uint64_t rss[2], anon[2], huge[2], t0, released, ns;

	fib_reclaim_barrier(b->fib4);
	fib_get_state(b->fib4, &st[0]);
	rss[0] = rss_bytes();
	anon_huge_bytes(&anon[0], &huge[0]);
	t0 = now_ns();
	released = fib_mem_trim(b->fib4);
	ns = now_ns() - t0;
	fib_get_state(b->fib4, &st[1]);
	rss[1] = rss_bytes();
	anon_huge_bytes(&anon[1], &huge[1]);
	printf("trim: fib_mem_trim() after the full load (both families) and the lookups: "
	       "%.1f ms, %.1f MiB of slab chunks given back, %" PRIu64 " compaction(s)\n",
	       (double)ns / 1e6, (double)released / MIB,
	       st[1].mem.compactions - st[0].mem.compactions);
	printf("%-26s %10s %10s %9s %9s\n", "MiB", "before", "after", "/live", "/live");
	print_trim_row("accounted (live)", st[0].mem.live_bytes, st[1].mem.live_bytes,
		       st[0].mem.live_bytes, st[1].mem.live_bytes);
	print_trim_row("slab chunks held", st[0].mem.slab_bytes, st[1].mem.slab_bytes,
		       st[0].mem.live_bytes, st[1].mem.live_bytes);
	print_trim_row("  of which free (slack)", st[0].mem.slab_free_bytes,
		       st[1].mem.slab_free_bytes, st[0].mem.live_bytes, st[1].mem.live_bytes);
	print_trim_row("slab given back", st[0].mem.slab_released_bytes,
		       st[1].mem.slab_released_bytes, st[0].mem.live_bytes, st[1].mem.live_bytes);
	print_trim_row("held (slabs + large)", st[0].mem.slab_bytes + st[0].mem.large_bytes,
		       st[1].mem.slab_bytes + st[1].mem.large_bytes, st[0].mem.live_bytes,
		       st[1].mem.live_bytes);
	print_trim_row("process RSS", rss[0], rss[1], st[0].mem.live_bytes, st[1].mem.live_bytes);
	print_trim_row("AnonHugePages", huge[0], huge[1], st[0].mem.live_bytes,
		       st[1].mem.live_bytes);
	for (int k = 0; k < ADDR_KINDS; k++) {
		struct lk_fig f = lk_run(pass_lc4_batch, tb4, b->a4[k], b->n_addr4, b->passes);

		printf("IPv4 %-16s fib_lookup4_batch_rcu: %.1f M/s before the trim, %.1f M/s "
		       "after\n",
		       addr_kind_name[k], b->lc4[k][API_BATCH].mps, f.mps);
	}
}

/*
 * Writer interference: a reader thread looks up the inside-prefix
 * addresses in batches, idle for a second, then while the writer replaces
 * every IPv4 route of the same table (each prefix moves to the next
 * gateway: every leaf is replaced and retired), then idle again; the
 * table is put back (untimed) for the sections that follow.
 */
static void section_full_during_load(struct bench *b, const struct fib_table *tb4)
{
	struct dl_reader r = { .tb = tb4, .addr = b->a4[ADDR_INSIDE], .n = b->n_addr4 };
	uint8_t *gw = xcalloc(b->t.n4, 1);
	double idle0, busy, idle1;
	struct load_fig lf, lf_back;
	pthread_t th;

	progress("full: lookups during a load");
	for (size_t i = 0; i < b->t.n4; i++)
		gw[i] = (uint8_t)((b->gw4[i] + 1) % N_GW);
	if (pthread_create(&th, NULL, dl_thread, &r)) {
		free(gw);
		return;
	}
	dl_rate(&r, b, NULL, 300000000u, NULL); /* warm up */
	idle0 = dl_rate(&r, b, NULL, 1000000000u, NULL);
	busy = dl_rate(&r, b, gw, 0, &lf);
	idle1 = dl_rate(&r, b, NULL, 1000000000u, NULL);
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	bench_sink += r.sum;
	load_prefixes_flags(b->fib4, b->t.v4, b->gw4, NULL, b->t.n4, FIB_F_REPLACE, &lf_back);
	fib_reclaim_barrier(b->fib4);
	printf("lookups during a load: one reader, fib_lookup4_batch_rcu on the IPv4 inside-prefix "
	       "addresses, while the writer replaces all %zu IPv4 routes (REPLACE, next gateway) "
	       "in %.3f s (%.0f routes/s)\n",
	       lf.routes, (double)lf.ns / 1e9, rate(lf.routes, lf.ns));
	print_load_errors("replace", &lf);
	printf("%-34s %12s\n", "reader", "M lookups/s");
	printf("%-34s %12.1f\n", "idle, before", idle0);
	printf("%-34s %12.1f\n", "during the load", busy);
	printf("%-34s %12.1f\n", "idle, after", idle1);
	printf("%-34s %12.2f\n", "during / idle (mean of both)", ratio(busy, (idle0 + idle1) / 2));
	free(gw);
}

static double trie_bytes_per_route(const struct trie_stats *ts)
{
	uint64_t bytes = ts->leaf_bytes + ts->tnode_bytes + ts->fallback_bytes;

	return ts->routes ? (double)bytes / (double)ts->routes : 0;
}

static double trie_depth(const struct trie_stats *ts)
{
	return ts->leaves ? (double)ts->total_depth / (double)ts->leaves : 0;
}

/* Both families into @f in bulk mode, timed: the adds, then fib_bulk_end(); *@all sums them. */
static void bulk_load(struct bench *b, struct fib *f, struct load_fig *l4, struct load_fig *l6,
		      struct load_fig *all, uint64_t *end_ns)
{
	uint64_t t0;

	fib_bulk_begin(f);
	load_prefixes(f, b->t.v4, b->gw4, NULL, b->t.n4, l4);
	load_prefixes(f, b->t.v6, b->gw6, NULL, b->t.n6, l6);
	t0 = now_ns();
	fib_bulk_end(f);
	*end_ns = now_ns() - t0;
	*all = *l4;
	all->routes += l6->routes;
	all->exist += l6->exist;
	all->ns += l6->ns + *end_ns;
}

/* The header of a table of print_load_row()s; @first names its first column. */
static void print_load_header(const char *first)
{
	printf("%-8s %10s %10s %10s %12s %10s\n", first, "routes", "duplicate", "seconds",
	       "routes/s", "ns/route");
}

static void print_bulk_rows(const struct load_fig *l4, const struct load_fig *l6,
			    const struct load_fig *all, uint64_t end_ns)
{
	print_load_header("step");
	print_load_row("IPv4", l4);
	print_load_row("IPv6", l6);
	printf("%-8s %10s %10s %10.3f\n", "end", "", "", (double)end_ns / 1e9);
	print_load_row("total", all);
	print_load_errors("IPv4", l4);
	print_load_errors("IPv6", l6);
}

/*
 * The same bulk load into another fresh FIB, after the first was
 * destroyed: its memory now comes from pages the process has touched (the
 * C library keeps the freed blocks), where the first load's came from
 * pages new to it, whose first touch the kernel zeroes (on a VM, a
 * large part of a load: see BENCHMARKS.md). The difference is that cost.
 */
static void section_full_bulk_again(struct bench *b)
{
	struct load_fig l4, l6, all;
	uint64_t end_ns;
	struct fib *f;

	progress("full: bulk load again");
	for (unsigned int threads = 1; threads <= 2; threads++) {
		f = fib_new_or_die();
		fib_set_build_threads(f, threads);
		bulk_load(b, f, &l4, &l6, &all, &end_ns);
		printf(threads == 1
			       ? "\nthe same bulk load again, into a fresh FIB after the first "
				 "was destroyed (memory the process has touched)\n"
			       : "and again with fib_set_build_threads(2): the end builds each "
				 "trie on two threads\n");
		print_bulk_rows(&l4, &l6, &all, end_ns);
		fib_destroy(f);
	}
	f = fib_new_or_die();
	load_prefixes(f, b->t.v4, b->gw4, NULL, b->t.n4, &l4);
	printf("and one route at a time (fib_route_add, file order), the same way\n");
	print_load_header("family");
	print_load_row("IPv4", &l4);
	print_load_errors("IPv4", &l4);
	fib_destroy(f);
}

/* The same table into a fresh FIB in bulk mode: fib_bulk_begin(), the adds, fib_bulk_end(). */
static void section_full_bulk(struct bench *b)
{
	struct fib *f = fib_new_or_die();
	struct load_fig l4, l6, all;
	struct trie_stats ts4, ts6;
	const struct fib_table *tb4, *tb6;
	struct lk_fig lk[ADDR_KINDS];
	struct fib_state s0, s1;
	uint64_t end_ns;

	progress("full: bulk load");
	fib_get_state(f, &s0);
	bulk_load(b, f, &l4, &l6, &all, &end_ns);
	fib_reclaim_barrier(f);
	fib_get_state(f, &s1);

	printf("bulk load into a fresh FIB: fib_bulk_begin(), the same adds, fib_bulk_end()\n");
	print_bulk_rows(&l4, &l6, &all, end_ns);
	tb4 = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET);
	tb6 = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET6);
	if (!tb4 || !tb6) {
		fib_destroy(f);
		return;
	}
	fib_table_stats_rcu(tb4, &ts4);
	fib_table_stats_rcu(tb6, &ts6);
	printf("after it: %.2f accounted B/route (both families); trie bytes per route IPv4 %.2f, "
	       "IPv6 %.2f;\naverage depth IPv4 %.2f (max %u), IPv6 %.2f (max %u); internal nodes "
	       "IPv4 %" PRIu64 ", IPv6 %" PRIu64 "\n",
	       all.routes ? (double)(s1.mem.live_bytes - s0.mem.live_bytes) / (double)all.routes
			  : 0,
	       trie_bytes_per_route(&ts4), trie_bytes_per_route(&ts6), trie_depth(&ts4),
	       ts4.max_depth, trie_depth(&ts6), ts6.max_depth, ts4.tnodes, ts6.tnodes);
	print_reclaim(&s1.reclaim);
	for (int k = 0; k < ADDR_KINDS; k++)
		lk[k] = lk_run(pass_lc4_batch, tb4, b->a4[k], b->n_addr4, b->passes);
	print_lk_header();
	for (int k = 0; k < ADDR_KINDS; k++)
		print_lk_row("IPv4", addr_kind_name[k], "fib_lookup4_batch_rcu (bulk-loaded)",
			     &lk[k]);
	fib_destroy(f);
	section_full_bulk_again(b);
}

static uint32_t *shuffled_indices(size_t n, uint64_t seed);

/* The IPv4 table in a random order: one route at a time, then in bulk mode, each into a fresh FIB. */
static void section_full_shuffled(struct bench *b)
{
	uint32_t *perm = shuffled_indices(b->t.n4, b->seed ^ 0x54f1);
	struct load_fig one, bulk;
	uint64_t t0, end_ns;
	struct fib *f;

	progress("full: shuffled loads");
	f = fib_new_or_die();
	load_prefixes(f, b->t.v4, b->gw4, perm, b->t.n4, &one);
	fib_destroy(f);
	f = fib_new_or_die();
	fib_bulk_begin(f);
	load_prefixes(f, b->t.v4, b->gw4, perm, b->t.n4, &bulk);
	t0 = now_ns();
	fib_bulk_end(f);
	end_ns = now_ns() - t0;
	fib_destroy(f);
	printf("the IPv4 table shuffled, into a fresh FIB: one at a time, and in bulk mode "
	       "(adds + fib_bulk_end)\n");
	printf("%-24s %10s %10s %12s\n", "mode", "routes", "seconds", "routes/s");
	printf("%-24s %10zu %10.3f %12.0f\n", "one at a time", one.routes, (double)one.ns / 1e9,
	       rate(one.routes, one.ns));
	printf("%-24s %10zu %10.3f %12.0f\n", "bulk (with end)", bulk.routes,
	       (double)(bulk.ns + end_ns) / 1e9, rate(bulk.routes, bulk.ns + end_ns));
	print_load_errors("shuffled", &one);
	print_load_errors("shuffled bulk", &bulk);
	free(perm);
}

/*
 * The full table into a fresh b->fib4, one route at a time: IPv4 (@st and
 * @rss [0] before it, [1] after), then IPv6 (@lf6; [2] after both). @what
 * names the section in progress lines.
 */
static int load_full_table(struct bench *b, const char *what, struct fib_state st[3],
			   uint64_t rss[3], struct load_fig *lf6)
{
	if (bench_table(b))
		return -1;
	if (b->fib4) {
		fib_destroy(b->fib4);
		b->fib4 = NULL;
	}
	progress("%s: loading %zu IPv4 routes", what, b->t.n4);
	load_full4(b, st, rss);
	progress("%s: loading %zu IPv6 routes", what, b->t.n6);
	load_prefixes(b->fib4, b->t.v6, b->gw6, NULL, b->t.n6, lf6);
	fib_reclaim_barrier(b->fib4);
	fib_get_state(b->fib4, &st[2]);
	rss[2] = rss_bytes();
	return 0;
}

/* The main tables of b->fib4, both families; -1 (said) when one is missing. */
static int main_tables(const struct bench *b, const struct fib_table **tb4,
		       const struct fib_table **tb6)
{
	*tb4 = fib_table_get_rcu(b->fib4, FIB_TABLE_MAIN, AF_INET);
	*tb6 = fib_table_get_rcu(b->fib4, FIB_TABLE_MAIN, AF_INET6);
	if (!*tb4 || !*tb6) {
		printf("no main table for %s; lookups skipped\n", *tb4 ? "IPv6" : "IPv4");
		return -1;
	}
	return 0;
}

static int section_full(struct bench *b)
{
	struct fib_state st[3];
	struct trie_stats ts4, ts6;
	struct load_fig lf6, all;
	const struct fib_table *tb4, *tb6;
	uint64_t rss[3];

	print_title("full: the real full table");
	if (load_full_table(b, "full", st, rss, &lf6))
		return -1;

	all = b->lc_load4;
	all.routes += lf6.routes;
	all.exist += lf6.exist;
	all.ns += lf6.ns;
	printf("load: fib_route_add, one unicast route per prefix via one of %d gateways, "
	       "CREATE|EXCL, sync-mem %" PRIu64 " B\n",
	       N_GW, st[2].reclaim.sync_mem);
	print_load_header("family");
	print_load_row("IPv4", &b->lc_load4);
	print_load_row("IPv6", &lf6);
	print_load_row("total", &all);
	print_load_errors("IPv4", &b->lc_load4);
	print_load_errors("IPv6", &lf6);
	printf("\n");
	print_reclaim(&st[2].reclaim);
	printf("\n");
	print_memory(st, rss, b->lc_load4.routes, lf6.routes);
	printf("nexthops: %" PRIu64 " anonymous, %" PRIu64 " objects\n", st[2].nh_anonymous,
	       st[2].nh_objects);
	{
		uint64_t anon, huge;

		anon_huge_bytes(&anon, &huge);
		printf("huge pages (/proc/self/smaps): AnonHugePages %.1f MiB of %.1f MiB anonymous "
		       "resident (%.0f%%), for %.1f MiB of slab chunks and large nodes\n",
		       (double)huge / MIB, (double)anon / MIB,
		       anon ? 100.0 * (double)huge / (double)anon : 0,
		       (double)(st[2].mem.slab_bytes + st[2].mem.large_bytes) / MIB);
	}
	printf("\n");

	if (main_tables(b, &tb4, &tb6))
		return -1;
	fib_table_stats_rcu(tb4, &ts4);
	fib_table_stats_rcu(tb6, &ts6);
	print_trie_stats(&ts4, &ts6);
	printf("\n");
	section_full_lookups(b, tb4, tb6);
	printf("\n");
	section_full_trim(b, tb4);
	printf("\n");
	section_full_during_load(b, tb4);
	printf("\n");
	section_full_bulk(b);
	printf("\n");
	section_full_shuffled(b);
	return 0;
}

/*
 * Section lookups: the table as section full loads it (one route at a time,
 * so the same trie), then its lookup rows, with every pass's figure of the
 * IPv4 batch rows, which show how much one run moves.
 */
static int section_lookups(struct bench *b)
{
	struct fib_state st[3];
	struct load_fig lf6;
	struct trie_stats ts4, ts6;
	const struct fib_table *tb4, *tb6;
	uint64_t rss[3];

	print_title("lookups: full's lookup rows alone");
	if (load_full_table(b, "lookups", st, rss, &lf6))
		return -1;
	if (main_tables(b, &tb4, &tb6))
		return -1;
	fib_table_stats_rcu(tb4, &ts4);
	fib_table_stats_rcu(tb6, &ts6);
	printf("average depth IPv4 %.2f, IPv6 %.2f\n", trie_depth(&ts4), trie_depth(&ts6));
	if (b->passes > 1)
		b->passes = 5; /* the spread of one run's passes is what it shows */
	section_full_lookups(b, tb4, tb6);
	for (int k = 0; k < ADDR_KINDS; k++) {
		const struct lk_fig *f = &b->lc4[k][API_BATCH];

		printf("IPv4 %s, fib_lookup4_batch_rcu, each pass (M/s):", addr_kind_name[k]);
		for (unsigned int p = 0; p < f->n_pass; p++)
			printf(" %.1f", f->pass_mps[p]);
		printf("\n");
	}
	return 0;
}

/*
 * Section loads: one route at a time alone, each table into a fresh FIB
 * (fib_route_add, CREATE|EXCL): IPv4 in file order and shuffled (as
 * full's shuffled load), IPv6 in file order.
 */
static int section_loads(struct bench *b)
{
	static const char *const what[3] = { "IPv4, file order", "IPv4, shuffled",
					     "IPv6, file order" };
	uint32_t *perm;

	if (bench_table(b))
		return -1;
	perm = shuffled_indices(b->t.n4, b->seed ^ 0x54f1);
	print_title("loads: one route at a time (fib_route_add), then in bulk mode, each into a "
		    "fresh FIB");
	printf("%-18s %10s %10s %12s %14s\n", "table", "routes", "seconds", "routes/s",
	       "retired B");
	for (int i = 0; i < 3; i++) {
		struct fib *f = fib_new_or_die();
		struct fib_state st;
		struct load_fig lf;

		progress("loads: %s", what[i]);
		if (i < 2)
			load_prefixes(f, b->t.v4, b->gw4, i ? perm : NULL, b->t.n4, &lf);
		else
			load_prefixes(f, b->t.v6, b->gw6, NULL, b->t.n6, &lf);
		fib_reclaim_barrier(f);
		fib_get_state(f, &st);
		printf("%-18s %10zu %10.3f %12.0f %14" PRIu64 "\n", what[i], lf.routes,
		       (double)lf.ns / 1e9, rate(lf.routes, lf.ns), st.reclaim.retired_bytes);
		print_load_errors(what[i], &lf);
		fib_destroy(f);
	}
	/* Both families in bulk mode, in file order, its end on one thread and on two. */
	for (unsigned int threads = 1; threads <= 2; threads++) {
		struct fib *f = fib_new_or_die();
		struct load_fig l4, l6, all;
		struct fib_state st;
		uint64_t end_ns;
		char name[32];

		progress("loads: bulk, end on %u thread(s)", threads);
		fib_set_build_threads(f, threads);
		bulk_load(b, f, &l4, &l6, &all, &end_ns);
		fib_reclaim_barrier(f);
		fib_get_state(f, &st);
		snprintf(name, sizeof(name), "bulk, %u thread%s", threads, threads > 1 ? "s" : "");
		printf("%-18s %10zu %10.3f %12.0f %14" PRIu64 "   (end %.3f s)\n", name, all.routes,
		       (double)all.ns / 1e9, rate(all.routes, all.ns), st.reclaim.retired_bytes,
		       (double)end_ns / 1e9);
		print_load_errors(name, &all);
		fib_destroy(f);
	}
	free(perm);
	return 0;
}

#ifdef TRIE_READ_STATS
/* ------------------------------------------------------- section reads */

static const char *const read_name[TRIE_READ_KINDS] = {
	[TRIE_READ_ROOT] = "root",     [TRIE_READ_SLOT] = "slot",   [TRIE_READ_LEAF] = "leaf",
	[TRIE_READ_HEADER] = "header", [TRIE_READ_FB] = "fallback", [TRIE_READ_TAIL] = "steps 2-3",
};

/* One row: the reads per lookup of @n lookups, by kind, and in all. */
static void print_reads_row(const char *family, const char *addrs, const char *api,
			    const uint64_t *reads, size_t n)
{
	uint64_t all = 0;

	printf("%-6s %-20s %-30s", family, addrs, api);
	for (int k = 0; k < TRIE_READ_KINDS; k++) {
		printf(" %9.3f", (double)reads[k] / (double)n);
		all += reads[k];
	}
	printf(" %9.3f\n", (double)all / (double)n);
}

/* What @pass reads, on this thread, in one pass over @n addresses. */
static void count_reads(void (*pass)(struct lk_job *, size_t), const void *ctx, const void *addr,
			size_t n, uint64_t *reads)
{
	struct lk_job j = { .ctx = ctx, .addr = addr, .n = n };

	memset(trie_reads, 0, sizeof(trie_reads));
	pass(&j, n);
	memcpy(reads, trie_reads, sizeof(trie_reads));
	bench_sink += j.sum;
}

/*
 * DIR-24-8 (rte_lpm, and rte_fib's dir24_8) reads one tbl24 entry per
 * lookup, and a tbl8 entry too where the address's /24 holds a prefix
 * longer than /24: the share of @a whose /24 does, from the table itself.
 */
static double dir24_reads(const struct bench *b, const uint32_t *a, size_t n)
{
	uint64_t *ext = xcalloc((1u << 24) / 64, sizeof(uint64_t));
	size_t twice = 0;

	for (size_t i = 0; i < b->t.n4; i++) {
		uint32_t k = addr_key4(&b->t.v4[i].a) >> 8;

		if (b->t.v4[i].plen > 24)
			ext[k / 64] |= (uint64_t)1 << (k % 64);
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t k = a[i] >> 8;

		twice += (ext[k / 64] >> (k % 64)) & 1;
	}
	free(ext);
	return 1.0 + (double)twice / (double)n;
}

/* rte_fib6's trie: a 24-bit table, then tables of 8 bits. */
struct fib6_ext {
	trie_key6 top; /* the first 24 + 8 (level - 1) bits, the rest cleared */
	unsigned int level;
};

static int cmp_fib6_ext(const void *pa, const void *pb)
{
	const struct fib6_ext *a = pa, *b = pb;

	if (a->level != b->level)
		return a->level < b->level ? -1 : 1;
	return a->top < b->top ? -1 : a->top > b->top;
}

static trie_key6 key6_top(trie_key6 k, unsigned int bits)
{
	return bits >= 128 ? k : k >> (128 - bits) << (128 - bits);
}

/*
 * The reads of rte_fib6's lookup of each address: the 24-bit table, then
 * one table of 8 bits for each level some longer prefix extends below
 * the address's path (lib/trie.h counts the same way: an object a read).
 */
static double fib6_reads(const struct bench *b, const struct in6_addr *a, size_t n)
{
	struct fib6_ext *ext;
	size_t n_ext = 0, more = 0;

	for (size_t i = 0; i < b->t.n6; i++)
		for (unsigned int l = 1; 24 + 8 * (l - 1) < b->t.v6[i].plen; l++)
			n_ext++;
	ext = xcalloc(n_ext ? n_ext : 1, sizeof(*ext));
	n_ext = 0;
	for (size_t i = 0; i < b->t.n6; i++) {
		trie_key6 k = addr_key6(&b->t.v6[i].a);

		for (unsigned int l = 1; 24 + 8 * (l - 1) < b->t.v6[i].plen; l++)
			ext[n_ext++] = (struct fib6_ext){ key6_top(k, 24 + 8 * (l - 1)), l };
	}
	qsort(ext, n_ext, sizeof(*ext), cmp_fib6_ext);
	for (size_t i = 0; i < n; i++) {
		trie_key6 k = addr_key6_raw(&a[i]);

		for (unsigned int l = 1; 24 + 8 * (l - 1) < 128; l++) {
			struct fib6_ext want = { key6_top(k, 24 + 8 * (l - 1)), l };

			if (!bsearch(&want, ext, n_ext, sizeof(*ext), cmp_fib6_ext))
				break;
			more++;
		}
	}
	free(ext);
	return 1.0 + (double)more / (double)n;
}

/*
 * Section reads (tests/bench/bench_fib_reads only, the library's lookups
 * built with TRIE_READ_STATS): how many memory objects a lookup reads, by
 * kind, on the full table and section full's addresses, beside what
 * DIR-24-8 reads for the same IPv4 addresses. Counts, not times: the
 * same on every machine for a table, a seed and a build.
 */
static int section_reads(struct bench *b)
{
	const char *n6[2] = { "inside prefixes", "random in 2000::/3" };
	static const unsigned int other[] = { 30, 20, 10, 5 };
	struct fib_state st[3];
	struct load_fig lf6;
	const struct fib_table *tb4, *tb6;
	uint64_t rss[3], reads[TRIE_READ_KINDS];

	print_title("reads: memory objects a lookup reads (counted, not timed)");
	if (load_full_table(b, "reads", st, rss, &lf6))
		return -1;
	if (main_tables(b, &tb4, &tb6))
		return -1;
	bench_addrs4(b);
	bench_addrs6(b);
	printf("one pass over IPv4: %zu addresses, IPv6: %zu; per lookup, by kind (lib/trie.h, "
	       "enum "
	       "trie_read)\n",
	       b->n_addr4, b->n_addr6);
	printf("%-6s %-20s %-30s", "family", "addresses", "API");
	for (int k = 0; k < TRIE_READ_KINDS; k++)
		printf(" %9s", read_name[k]);
	printf(" %9s\n", "all");
	fib_reader_register();
	for (int k = 0; k < ADDR_KINDS; k++) {
		count_reads(pass_lc4_single, tb4, b->a4[k], b->n_addr4, reads);
		print_reads_row("IPv4", addr_kind_name[k], "fib_lookup4_rcu", reads, b->n_addr4);
		count_reads(pass_lc4_batch, tb4, b->a4[k], b->n_addr4, reads);
		print_reads_row("IPv4", addr_kind_name[k], "fib_lookup4_batch_rcu", reads,
				b->n_addr4);
	}
	for (int k = 0; k < 2; k++) {
		const struct in6_addr *a6 = k ? b->a6_global : b->a6_inside;

		count_reads(pass_lc6_single, tb6, a6, b->n_addr6, reads);
		print_reads_row("IPv6", n6[k], "fib_lookup6_rcu", reads, b->n_addr6);
		count_reads(pass_lc6_batch, tb6, a6, b->n_addr6, reads);
		print_reads_row("IPv6", n6[k], "fib_lookup6_batch_rcu", reads, b->n_addr6);
	}
	/*
	 * Other roots (fib_set_root_threshold()), as section dpdk times them:
	 * the kernel's threshold, then wider ones; after the IPv6 rows (IPv6's
	 * root changes too); then the default.
	 */
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		char api[40];

		fib_set_root_threshold(b->fib4, other[i]);
		snprintf(api, sizeof(api), "batch, root threshold %u %%", other[i]);
		for (int k = 0; k < ADDR_KINDS; k++) {
			count_reads(pass_lc4_batch, tb4, b->a4[k], b->n_addr4, reads);
			print_reads_row("IPv4", addr_kind_name[k], api, reads, b->n_addr4);
		}
		for (int k = 0; k < 2; k++) {
			count_reads(pass_lc6_batch, tb6, k ? b->a6_global : b->a6_inside,
				    b->n_addr6, reads);
			print_reads_row("IPv6", n6[k], api, reads, b->n_addr6);
		}
	}
	fib_set_root_threshold(b->fib4, TRIE_ROOT_THRESHOLD_DEFAULT);
	fib_reader_unregister();
	for (int k = 0; k < ADDR_KINDS; k++)
		printf("DIR-24-8 (rte_lpm, rte_fib dir24_8), IPv4 %s: %.3f reads a lookup\n",
		       addr_kind_name[k], dir24_reads(b, b->a4[k], b->n_addr4));
	for (int k = 0; k < 2; k++)
		printf("rte_fib6 (trie, 24 then 8 bits a level), IPv6 %s: %.3f reads a lookup\n",
		       n6[k], fib6_reads(b, k ? b->a6_global : b->a6_inside, b->n_addr6));
	return 0;
}
#endif

/* --------------------------------------------------------- section dpdk */

#ifdef HAVE_DPDK

static void pass_lpm_single(struct lk_job *j, size_t n)
{
	const struct rte_lpm *lpm = j->ctx;
	const uint32_t *a = j->addr;
	uint64_t hits = 0, sum = 0;

	for (size_t k = 0; k < n; k++) {
		uint32_t nh;

		if (rte_lpm_lookup(lpm, a[k], &nh) == 0) {
			hits++;
			sum += nh;
		}
	}
	j->hits += hits;
	j->sum += sum;
}

static void pass_lpm_bulk(struct lk_job *j, size_t n)
{
	const struct rte_lpm *lpm = j->ctx;
	const uint32_t *a = j->addr;
	uint32_t nh[LOOKUP_CHUNK];
	uint64_t hits = 0, sum = 0;

	for (size_t i = 0; i < n; i += LOOKUP_CHUNK) {
		unsigned int m = (unsigned int)(chunk_end(i, n) - i);

		rte_lpm_lookup_bulk(lpm, a + i, nh, m);
		for (unsigned int k = 0; k < m; k++) {
			hits += (nh[k] & RTE_LPM_LOOKUP_SUCCESS) != 0;
			sum += nh[k];
		}
	}
	j->hits += hits;
	j->sum += sum;
}

/* Four at a time with SSE, as DPDK's l3fwd does. Next hops are 1..N_GW, so 0 is a miss. */
static void pass_lpm_x4(struct lk_job *j, size_t n)
{
	const struct rte_lpm *lpm = j->ctx;
	const uint32_t *a = j->addr;
	uint64_t hits = 0, sum = 0;
	size_t k;

	for (k = 0; k + 4 <= n; k += 4) {
		uint32_t hop[4];
		xmm_t ip = _mm_loadu_si128((const __m128i *)&a[k]);

		rte_lpm_lookupx4(lpm, ip, hop, 0);
		for (int q = 0; q < 4; q++) {
			hits += hop[q] != 0;
			sum += hop[q];
		}
	}
	for (; k < n; k++) {
		uint32_t nh;

		if (rte_lpm_lookup(lpm, a[k], &nh) == 0) {
			hits++;
			sum += nh;
		}
	}
	j->hits += hits;
	j->sum += sum;
}

static void pass_rtefib_bulk(struct lk_job *j, size_t n)
{
	struct rte_fib *fib = (struct rte_fib *)j->ctx;
	uint32_t *a = (uint32_t *)j->addr; /* rte_fib_lookup_bulk reads it only */
	uint64_t nh[LOOKUP_CHUNK];
	uint64_t hits = 0, sum = 0;

	for (size_t i = 0; i < n; i += LOOKUP_CHUNK) {
		int m = (int)(chunk_end(i, n) - i);

		rte_fib_lookup_bulk(fib, a + i, nh, m);
		for (int k = 0; k < m; k++) {
			hits += nh[k] != 0;
			sum += nh[k];
		}
	}
	j->hits += hits;
	j->sum += sum;
}

static void pass_rtefib6_bulk(struct lk_job *j, size_t n)
{
	struct rte_fib6 *fib = (struct rte_fib6 *)j->ctx;
	/* struct in6_addr is the 16 bytes rte_fib6 takes; it reads them only. */
	uint8_t(*a)[RTE_FIB6_IPV6_ADDR_SIZE] = (uint8_t(*)[RTE_FIB6_IPV6_ADDR_SIZE])j->addr;
	uint64_t nh[LOOKUP_CHUNK];
	uint64_t hits = 0, sum = 0;

	for (size_t i = 0; i < n; i += LOOKUP_CHUNK) {
		int m = (int)(chunk_end(i, n) - i);

		rte_fib6_lookup_bulk(fib, a + i, nh, m);
		for (int k = 0; k < m; k++) {
			hits += nh[k] != 0;
			sum += nh[k];
		}
	}
	j->hits += hits;
	j->sum += sum;
}

/*
 * EAL without hugepages, PCI or telemetry, and no files in /var/run
 * (--no-shconf). It pins the calling thread to lcore 0; the previous
 * affinity is restored, so lcfib's threads and the readers keep every CPU.
 */
static int eal_start(struct bench *b)
{
	char prefix[64];
	char *argv[] = {
		(char *)"bench_fib",
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
		NULL,
	};
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;
	cpu_set_t cpus;
	bool have_cpus;
	uint64_t t0;

	if (b->eal)
		return b->eal > 0 ? 0 : -1;
	snprintf(prefix, sizeof(prefix), "--file-prefix=bench_fib_%ld", (long)getpid());
	have_cpus = pthread_getaffinity_np(pthread_self(), sizeof(cpus), &cpus) == 0;
	t0 = now_ns();
	fflush(stdout);
	if (rte_eal_init(argc, argv) < 0) {
		printf("DPDK: rte_eal_init failed: %s; DPDK baselines skipped\n",
		       rte_strerror(rte_errno));
		b->eal = -1;
		return -1;
	}
	if (have_cpus)
		pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	b->eal = 1;
	snprintf(b->eal_dir, sizeof(b->eal_dir), "%s", rte_eal_get_runtime_dir());
	printf("DPDK: %s, EAL up in %.1f s (--no-huge -m 2048 --no-pci --no-shconf)\n",
	       rte_version(), (double)(now_ns() - t0) / 1e9);
	return 0;
}

static size_t dpdk_heap_bytes(void)
{
	struct rte_malloc_socket_stats s;

	if (rte_malloc_get_socket_stats(0, &s))
		return 0;
	return s.heap_allocsz_bytes;
}

static struct rte_lpm *lpm_build(const char *name, const struct addr_prefix *p, const uint8_t *gw,
				 const uint32_t *idx, size_t n, struct load_fig *lf, size_t *heap)
{
	struct rte_lpm_config cfg = { .max_rules = 1u << 21, .number_tbl8s = 1u << 16 };
	size_t h0 = dpdk_heap_bytes();
	struct rte_lpm *lpm;
	uint64_t t0;

	memset(lf, 0, sizeof(*lf));
	t0 = now_ns();
	lpm = rte_lpm_create(name, 0, &cfg);
	if (!lpm) {
		printf("rte_lpm_create: %s\n", rte_strerror(rte_errno));
		return NULL;
	}
	lf->create_ns = now_ns() - t0;
	t0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		size_t k = idx ? idx[i] : i;
		int ret = rte_lpm_add(lpm, addr_key4(&p[k].a), p[k].plen, gw[k] + 1u);

		if (ret == 0)
			lf->routes++;
		else if (lf->failed++ == 0)
			snprintf(lf->first_err, sizeof(lf->first_err), "%s", strerror(-ret));
	}
	lf->ns = now_ns() - t0;
	*heap = dpdk_heap_bytes() - h0;
	return lpm;
}

/* @idx: the prefixes to add, as indexes of @p, or NULL for p[0..n). */
static struct rte_fib *rtefib_build(const struct addr_prefix *p, const uint8_t *gw,
				    const uint32_t *idx, size_t n, struct load_fig *lf, size_t *heap)
{
	struct rte_fib_conf cfg = {
		.type = RTE_FIB_DIR24_8,
		.default_nh = 0,
		.max_routes = 1 << 21,
		.dir24_8 = { .nh_sz = RTE_FIB_DIR24_8_4B, .num_tbl8 = 1u << 16 },
	};
	size_t h0 = dpdk_heap_bytes();
	struct rte_fib *fib;
	uint64_t t0;

	memset(lf, 0, sizeof(*lf));
	t0 = now_ns();
	fib = rte_fib_create("bench_fib", 0, &cfg);
	if (!fib) {
		printf("rte_fib_create: %s\n", rte_strerror(rte_errno));
		return NULL;
	}
	lf->create_ns = now_ns() - t0;
	t0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		size_t k = idx ? idx[i] : i;
		int ret = rte_fib_add(fib, addr_key4(&p[k].a), p[k].plen, gw[k] + 1u);

		if (ret == 0)
			lf->routes++;
		else if (lf->failed++ == 0)
			snprintf(lf->first_err, sizeof(lf->first_err), "%s", strerror(-ret));
	}
	lf->ns = now_ns() - t0;
	*heap = dpdk_heap_bytes() - h0;
	return fib;
}

/* rte_fib6 (its trie: 24 bits, then 8-bit strides) with the IPv6 table. */
static struct rte_fib6 *rtefib6_build(const struct addr_prefix *p, const uint8_t *gw, size_t n,
				      struct load_fig *lf, size_t *heap)
{
	struct rte_fib6_conf cfg = {
		.type = RTE_FIB6_TRIE,
		.default_nh = 0,
		.max_routes = 1 << 20,
		.trie = { .nh_sz = RTE_FIB6_TRIE_4B, .num_tbl8 = 1u << 18 },
	};
	size_t h0 = dpdk_heap_bytes();
	struct rte_fib6 *fib;
	uint64_t t0;

	memset(lf, 0, sizeof(*lf));
	t0 = now_ns();
	fib = rte_fib6_create("bench_fib6", 0, &cfg);
	if (!fib) {
		printf("rte_fib6_create: %s\n", rte_strerror(rte_errno));
		return NULL;
	}
	lf->create_ns = now_ns() - t0;
	t0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		int ret = rte_fib6_add(fib, p[i].a.v6.s6_addr, p[i].plen, gw[i] + 1u);

		if (ret == 0)
			lf->routes++;
		else if (lf->failed++ == 0)
			snprintf(lf->first_err, sizeof(lf->first_err), "%s", strerror(-ret));
	}
	lf->ns = now_ns() - t0;
	*heap = dpdk_heap_bytes() - h0;
	return fib;
}

/* Next hop id (1..N_GW) of an lcfib route, as given to DPDK; 0 for none. */
static uint32_t lc_nh_id(const struct fib_route *r)
{
	const struct nh_info *ni;

	if (!r || !r->nh)
		return 0;
	ni = nh_info_rcu(r->nh);
	if (ni->n < 1)
		return 0;
	if (ni->path[0].gw_family == AF_INET6)
		return ni->path[0].gw.v6.s6_addr[15]; /* 2001:db8::1..8 */
	if (ni->path[0].gw_family != AF_INET)
		return 0;
	return ntohl(ni->path[0].gw.v4.s_addr) - GW4_BASE + 1;
}

struct agree6_job {
	const struct fib_table *tb;
	struct rte_fib6 *fib6;
	const struct in6_addr *addr;
	size_t n, same;
};

static void *agree6_thread(void *arg)
{
	struct agree6_job *j = arg;
	const struct fib_route *res[LOOKUP_CHUNK];
	uint64_t nh[LOOKUP_CHUNK];

	fib_reader_register();
	for (size_t i = 0; i < j->n; i += LOOKUP_CHUNK) {
		unsigned int m = (unsigned int)(chunk_end(i, j->n) - i);

		rte_fib6_lookup_bulk(j->fib6, (uint8_t(*)[RTE_FIB6_IPV6_ADDR_SIZE])(j->addr + i),
				     nh, (int)m);
		fib_read_lock();
		fib_lookup6_batch_rcu(j->tb, j->addr + i, res, m);
		for (unsigned int k = 0; k < m; k++)
			j->same += lc_nh_id(res[k]) == nh[k];
		fib_read_unlock();
	}
	fib_reader_unregister();
	return NULL;
}

struct agree_job {
	const struct fib_table *tb;
	const struct rte_lpm *lpm;
	struct rte_fib *fib;
	const uint32_t *addr;
	size_t n;
	size_t same_lpm, same_fib;
};

static void *agree_thread(void *arg)
{
	struct agree_job *j = arg;
	const struct fib_route *res[LOOKUP_CHUNK];
	uint32_t nh_lpm[LOOKUP_CHUNK];
	uint64_t nh_fib[LOOKUP_CHUNK];

	fib_reader_register();
	for (size_t i = 0; i < j->n; i += LOOKUP_CHUNK) {
		unsigned int m = (unsigned int)(chunk_end(i, j->n) - i);

		if (j->lpm)
			rte_lpm_lookup_bulk(j->lpm, j->addr + i, nh_lpm, m);
		if (j->fib)
			rte_fib_lookup_bulk(j->fib, (uint32_t *)(j->addr + i), nh_fib, (int)m);
		fib_read_lock();
		fib_lookup4_batch_rcu(j->tb, j->addr + i, res, m);
		for (unsigned int k = 0; k < m; k++) {
			uint32_t id = lc_nh_id(res[k]);
			uint32_t l = nh_lpm[k] & RTE_LPM_LOOKUP_SUCCESS ? nh_lpm[k] & 0xffffff : 0;

			j->same_lpm += j->lpm && id == l;
			j->same_fib += j->fib && id == nh_fib[k];
		}
		fib_read_unlock();
	}
	fib_reader_unregister();
	return NULL;
}

static void print_agreement(struct bench *b, const struct fib_table *tb, const struct rte_lpm *lpm,
			    struct rte_fib *fib)
{
	for (int k = 0; k < ADDR_KINDS; k++) {
		struct agree_job j = { .tb = tb, .lpm = lpm, .fib = fib, .addr = b->a4[k] };
		pthread_t th;

		j.n = b->n_addr4 < AGREE_MAX ? b->n_addr4 : AGREE_MAX;
		if (pthread_create(&th, NULL, agree_thread, &j))
			return;
		pthread_join(th, NULL);
		printf("agreement, first %zu %s addresses: same next hop as rte_lpm ", j.n,
		       addr_kind_name[k]);
		if (lpm)
			printf("%zu", j.same_lpm);
		else
			printf("-");
		printf(", as rte_fib ");
		if (fib)
			printf("%zu\n", j.same_fib);
		else
			printf("-\n");
	}
}

static void print_ratio(const char *what, const struct lk_fig *lc, const struct lk_fig *d)
{
	printf("%-44s", what);
	for (int k = 0; k < ADDR_KINDS; k++) {
		if (lc[k].done && d[k].done)
			printf(" %16.2f", ratio(lc[k].mps, d[k].mps));
		else
			printf(" %16s", "-");
	}
	printf("\n");
}

/* lcfib's IPv4 figures when section full did not run. */
static int lc4_ensure(struct bench *b)
{
	struct fib_state st[2];
	uint64_t rss[2];

	if (b->lc4[ADDR_UNIFORM][API_BATCH].done)
		return 0;
	progress("dpdk: lcfib IPv4 figures first (section full did not run)");
	load_full4(b, st, rss);
	print_load_errors("lcfib IPv4", &b->lc_load4);
	bench_addrs4(b);
	measure_lc4(b, fib_table_get_rcu(b->fib4, FIB_TABLE_MAIN, AF_INET));
	return 0;
}

static void print_dpdk_load(const char *what, const struct load_fig *lf, double mib,
			    const char *mem_what)
{
	printf("%-26s %9zu %9.3f %10.3f %12.0f %10.0f %9.1f %s\n", what, lf->routes,
	       (double)lf->create_ns / 1e9, (double)lf->ns / 1e9, rate(lf->routes, lf->ns),
	       lf->routes ? (double)lf->ns / (double)lf->routes : 0, mib, mem_what);
}

/*
 * The first HOT of @n addresses @a (of @size bytes each) over and over, @n
 * in all: lookups whose memory is all in cache, to tell what a lookup
 * computes from what it waits for.
 */
#define HOT 4096

static void *addrs_hot(const void *a, size_t n, size_t size)
{
	unsigned char *hot = xcalloc(n, size);

	for (size_t i = 0; i < n; i++)
		memcpy(hot + i * size, (const unsigned char *)a + i % HOT * size, size);
	return hot;
}

/* A batch lookup pass, lcfib's or DPDK's, on its table, and its name in the rows. */
struct in_cache_api {
	void (*pass)(struct lk_job *j, size_t n);
	const void *ctx; /* NULL: not measured */
	const char *name;
};

/*
 * Lookups of @family inside prefixes in cache (addrs_hot() of the @n
 * addresses @addr, of @size bytes each): lcfib's batch @lc beside DPDK's
 * @dp, and their ratio.
 */
static void in_cache_rows(const struct bench *b, const char *family, const void *addr, size_t n,
			  size_t size, const struct in_cache_api *lc, const struct in_cache_api *dp)
{
	void *hot = addrs_hot(addr, n, size);
	struct lk_fig f[2] = { 0 };
	char what[64];

	f[0] = lk_run(lc->pass, lc->ctx, hot, n, b->passes);
	if (dp->ctx)
		f[1] = lk_run(dp->pass, dp->ctx, hot, n, b->passes);
	free(hot);
	printf("the same, the first %u addresses inside prefixes over and over (what a lookup "
	       "computes, its memory in cache)\n",
	       HOT);
	print_lk_row(family, "inside, in cache", lc->name, &f[0]);
	print_lk_row(family, "inside, in cache", dp->name, &f[1]);
	snprintf(what, sizeof(what), "ratio in cache, batch / %s", dp->name);
	printf("%-44s %16.2f\n", what, ratio(f[0].mps, f[1].mps));
}

/* IPv6: the table into a fresh lcfib FIB and into rte_fib6; lookups inside prefixes. */
static void section_dpdk6(struct bench *b)
{
	struct fib *f = fib_new_or_die();
	struct load_fig lf_lc, lf_fib6;
	struct lk_fig lc[2] = { 0 }, f6b[2] = { 0 };
	struct fib_state st[2];
	struct agree6_job aj = { 0 };
	const struct fib_table *tb;
	struct rte_fib6 *fib6;
	size_t heap = 0;
	pthread_t th;

	progress("dpdk: IPv6: lcfib and rte_fib6 with %zu prefixes", b->t.n6);
	fib_get_state(f, &st[0]);
	load_prefixes(f, b->t.v6, b->gw6, NULL, b->t.n6, &lf_lc);
	print_load_errors("lcfib IPv6", &lf_lc);
	fib_reclaim_barrier(f);
	fib_get_state(f, &st[1]);
	tb = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET6);
	bench_addrs6(b);
	fib6 = rtefib6_build(b->t.v6, b->gw6, b->t.n6, &lf_fib6, &heap);
	print_load_errors("rte_fib6", &lf_fib6);
	printf("load (IPv6 full table)     %9s %9s %10s %12s %10s %9s\n", "routes", "create s",
	       "add s", "routes/s", "ns/route", "MiB");
	print_dpdk_load("lcfib", &lf_lc, (double)(st[1].mem.live_bytes - st[0].mem.live_bytes) / MIB,
			"accounted");
	if (fib6)
		print_dpdk_load("rte_fib6 (trie, 4 B nh)", &lf_fib6, (double)heap / MIB,
				"DPDK heap");
	printf("\n");
	lc[0] = lk_run(pass_lc6_single, tb, b->a6_inside, b->n_addr6, b->passes);
	lc[1] = lk_run(pass_lc6_batch, tb, b->a6_inside, b->n_addr6, b->passes);
	if (fib6)
		f6b[0] = f6b[1] =
			lk_run(pass_rtefib6_bulk, fib6, b->a6_inside, b->n_addr6, b->passes);
	printf("lookups, IPv6, one thread, the same %zu addresses, the best of %u passes\n",
	       b->n_addr6, b->passes);
	print_lk_header();
	print_lk_row("IPv6", "inside prefixes", "lcfib fib_lookup6_rcu", &lc[0]);
	print_lk_row("IPv6", "inside prefixes", "lcfib fib_lookup6_batch_rcu", &lc[1]);
	print_lk_row("IPv6", "inside prefixes", "rte_fib6_lookup_bulk", &f6b[0]);
	printf("%-44s %16.2f\n", "ratio fib_lookup6_batch_rcu / rte_fib6_lookup_bulk",
	       ratio(lc[1].mps, f6b[0].mps));
	printf("%-44s %16.2f\n", "ratio fib_lookup6_rcu / rte_fib6_lookup_bulk",
	       ratio(lc[0].mps, f6b[0].mps));
	in_cache_rows(b, "IPv6", b->a6_inside, b->n_addr6, sizeof(struct in6_addr),
		      &(struct in_cache_api){ pass_lc6_batch, tb, "lcfib fib_lookup6_batch_rcu" },
		      &(struct in_cache_api){ pass_rtefib6_bulk, fib6, "rte_fib6_lookup_bulk" });
	if (fib6) {
		aj = (struct agree6_job){ .tb = tb, .fib6 = fib6, .addr = b->a6_inside };
		aj.n = b->n_addr6 < AGREE_MAX ? b->n_addr6 : AGREE_MAX;
		if (pthread_create(&th, NULL, agree6_thread, &aj) == 0) {
			pthread_join(th, NULL);
			printf("agreement, first %zu IPv6 inside prefixes addresses: same next hop "
			       "as rte_fib6 %zu\n",
			       aj.n, aj.same);
		}
		rte_fib6_free(fib6);
	}
	printf("\n");
	fib_destroy(f);
}

/*
 * The same lcfib FIB with other roots (fib_set_root_threshold(), resized
 * in place: the kernel's 30 %, 18 bits on the full view, then the wider
 * 20, 22 and 24 bits), its lookups beside the DPDK figures of this run and
 * its answers checked against DPDK's; then back to the default (19 bits)
 * for the sections after this one.
 */
static void dpdk_other_roots(struct bench *b, const struct lk_fig *lpm1, const struct lk_fig *lpmb,
			     const struct rte_lpm *lpm, struct rte_fib *fib)
{
	static const unsigned int pct[] = { 30, 20, 10, 5 };
	const struct fib_table *tb = fib_table_get_rcu(b->fib4, FIB_TABLE_MAIN, AF_INET);
	struct trie_stats st, st0;
	struct fib_state fs0, fs;
	uint64_t rss0;

	/* The memory and depth before, to compare with after the way back. */
	fib_reclaim_barrier(b->fib4);
	fib_mem_trim(b->fib4);
	fib_get_state(b->fib4, &fs0);
	fib_table_stats_rcu(tb, &st0);
	rss0 = rss_bytes();
	printf("\nthe same lcfib FIB, its root resized by fib_set_root_threshold() "
	       "(default %u %%)\n",
	       TRIE_ROOT_THRESHOLD_DEFAULT);
	for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
		struct lk_fig lc[ADDR_KINDS][2];
		unsigned int bits;

		fib_set_root_threshold(b->fib4, pct[i]);
		fib_reclaim_barrier(b->fib4);
		tb = fib_table_get_rcu(b->fib4, FIB_TABLE_MAIN, AF_INET);
		fib_table_stats_rcu(tb, &st);
		bits = tdata_widest_bits(&st);
		for (int k = 0; k < ADDR_KINDS; k++) {
			lc[k][API_SINGLE] =
				lk_run(pass_lc4_single, tb, b->a4[k], b->n_addr4, b->passes);
			lc[k][API_BATCH] =
				lk_run(pass_lc4_batch, tb, b->a4[k], b->n_addr4, b->passes);
		}
		printf("root threshold %u %%: IPv4 root %u bits, trie %.2f B/route, "
		       "leaf depth %.2f\n",
		       pct[i], bits,
		       (double)(st.leaf_bytes + st.tnode_bytes + st.fallback_bytes) /
			       (double)st.routes,
		       (double)st.total_depth / (double)st.leaves);
		printf("  batch / rte_lpm_lookup_bulk %.2f %s, %.2f %s; single / rte_lpm_lookup "
		       "%.2f, %.2f\n",
		       ratio(lc[0][API_BATCH].mps, lpmb[0].mps), addr_kind_name[0],
		       ratio(lc[1][API_BATCH].mps, lpmb[1].mps), addr_kind_name[1],
		       ratio(lc[0][API_SINGLE].mps, lpm1[0].mps),
		       ratio(lc[1][API_SINGLE].mps, lpm1[1].mps));
		for (int k = 0; k < ADDR_KINDS; k++) {
			print_lk_row("IPv4", addr_kind_name[k], "  lcfib fib_lookup4_rcu",
				     &lc[k][API_SINGLE]);
			print_lk_row("IPv4", addr_kind_name[k], "  lcfib fib_lookup4_batch_rcu",
				     &lc[k][API_BATCH]);
		}
		print_agreement(b, tb, lpm, fib);
	}
	fib_set_root_threshold(b->fib4, TRIE_ROOT_THRESHOLD_DEFAULT);
	fib_reclaim_barrier(b->fib4);
	fib_mem_trim(b->fib4);
	fib_get_state(b->fib4, &fs);
	fib_table_stats_rcu(tb, &st);
	printf("back to %u %% (built anew), after fib_mem_trim(): leaf depth %.2f (%.2f before), "
	       "slab chunks held %.1f MiB (%.1f), process RSS %.1f MiB (%.1f)\n",
	       TRIE_ROOT_THRESHOLD_DEFAULT, (double)st.total_depth / (double)st.leaves,
	       (double)st0.total_depth / (double)st0.leaves, (double)fs.mem.slab_bytes / MIB,
	       (double)fs0.mem.slab_bytes / MIB, (double)rss_bytes() / MIB, (double)rss0 / MIB);
}

static int section_dpdk(struct bench *b)
{
	struct lk_fig lpm1[ADDR_KINDS] = { 0 }, lpmb[ADDR_KINDS] = { 0 }, lpm4[ADDR_KINDS] = { 0 };
	struct lk_fig fibb[ADDR_KINDS] = { 0 }, lcs[ADDR_KINDS], lcb[ADDR_KINDS];
	struct load_fig lf_lpm = { 0 }, lf_fib = { 0 };
	size_t heap_lpm = 0, heap_fib = 0;
	struct rte_lpm *lpm = NULL;
	struct rte_fib *fib;

	print_title("dpdk: DPDK rte_lpm and rte_fib on the same table and addresses");
	if (bench_table(b) || eal_start(b))
		return -1;
	lc4_ensure(b);
	if (b->quick) {
		printf("rte_lpm on the full table skipped with --quick "
		       "(its rte_lpm_add takes about a minute for it)\n");
	} else {
		progress("dpdk: rte_lpm_add of %zu prefixes (slow: about a minute)", b->t.n4);
		lpm = lpm_build("bench_fib_full", b->t.v4, b->gw4, NULL, b->t.n4, &lf_lpm,
				&heap_lpm);
		b->lpm_full = lpm;
		print_load_errors("rte_lpm", &lf_lpm);
	}
	progress("dpdk: rte_fib_add of %zu prefixes", b->t.n4);
	fib = rtefib_build(b->t.v4, b->gw4, NULL, b->t.n4, &lf_fib, &heap_fib);
	print_load_errors("rte_fib", &lf_fib);

	printf("load (IPv4 full table)     %9s %9s %10s %12s %10s %9s\n", "routes", "create s",
	       "add s", "routes/s", "ns/route", "MiB");
	print_dpdk_load("lcfib", &b->lc_load4, (double)b->lc_bytes4 / MIB, "accounted");
	if (lpm)
		print_dpdk_load("rte_lpm (DIR-24-8)", &lf_lpm, (double)heap_lpm / MIB, "DPDK heap");
	if (fib)
		print_dpdk_load("rte_fib (dir24_8, 4 B nh)", &lf_fib, (double)heap_fib / MIB,
				"DPDK heap");
	printf("\n");

	progress("dpdk: lookups");
	for (int k = 0; k < ADDR_KINDS; k++) {
		lcs[k] = b->lc4[k][API_SINGLE];
		lcb[k] = b->lc4[k][API_BATCH];
		if (lpm) {
			lpm1[k] = lk_run(pass_lpm_single, lpm, b->a4[k], b->n_addr4, b->passes);
			lpm4[k] = lk_run(pass_lpm_x4, lpm, b->a4[k], b->n_addr4, b->passes);
			lpmb[k] = lk_run(pass_lpm_bulk, lpm, b->a4[k], b->n_addr4, b->passes);
		}
		if (fib)
			fibb[k] = lk_run(pass_rtefib_bulk, fib, b->a4[k], b->n_addr4, b->passes);
	}
	printf("lookups, IPv4, one thread, the same %zu addresses, the best of %u passes\n",
	       b->n_addr4, b->passes);
	print_lk_header();
	for (int k = 0; k < ADDR_KINDS; k++) {
		print_lk_row("IPv4", addr_kind_name[k], "lcfib fib_lookup4_rcu", &lcs[k]);
		print_lk_row("IPv4", addr_kind_name[k], "lcfib fib_lookup4_batch_rcu", &lcb[k]);
		print_lk_row("IPv4", addr_kind_name[k], "rte_lpm_lookup", &lpm1[k]);
		print_lk_row("IPv4", addr_kind_name[k], "rte_lpm_lookupx4", &lpm4[k]);
		print_lk_row("IPv4", addr_kind_name[k], "rte_lpm_lookup_bulk", &lpmb[k]);
		print_lk_row("IPv4", addr_kind_name[k], "rte_fib_lookup_bulk", &fibb[k]);
	}
	printf("\nratios lcfib / DPDK (above 1: lcfib is faster) %16s %16s\n", addr_kind_name[0],
	       addr_kind_name[1]);
	print_ratio("fib_lookup4_batch_rcu / rte_lpm_lookup_bulk", lcb, lpmb);
	print_ratio("fib_lookup4_batch_rcu / rte_lpm_lookupx4", lcb, lpm4);
	print_ratio("fib_lookup4_batch_rcu / rte_fib_lookup_bulk", lcb, fibb);
	print_ratio("fib_lookup4_rcu / rte_lpm_lookup", lcs, lpm1);
	printf("%-44s %16.3f\n", "load rate lcfib / rte_lpm",
	       lpm ? ratio(rate(b->lc_load4.routes, b->lc_load4.ns), rate(lf_lpm.routes, lf_lpm.ns))
		   : 0);
	printf("%-44s %16.3f\n", "load rate lcfib / rte_fib",
	       fib ? ratio(rate(b->lc_load4.routes, b->lc_load4.ns), rate(lf_fib.routes, lf_fib.ns))
		   : 0);
	printf("\n");
	in_cache_rows(b, "IPv4", b->a4[ADDR_INSIDE], b->n_addr4, sizeof(uint32_t),
		      &(struct in_cache_api){ pass_lc4_batch,
					      fib_table_get_rcu(b->fib4, FIB_TABLE_MAIN, AF_INET),
					      "lcfib fib_lookup4_batch_rcu" },
		      &(struct in_cache_api){ pass_lpm_bulk, lpm, "rte_lpm_lookup_bulk" });
	dpdk_other_roots(b, lpm1, lpmb, lpm, fib);
	printf("\n");
	print_agreement(b, fib_table_get_rcu(b->fib4, FIB_TABLE_MAIN, AF_INET), lpm, fib);
	if (fib)
		rte_fib_free(fib);
	printf("\n");
	section_dpdk6(b);
	return 0;
}

#else /* !HAVE_DPDK */

static int section_dpdk(struct bench *b)
{
	(void)b;
	print_title("dpdk: DPDK rte_lpm and rte_fib on the same table and addresses");
	printf("built without DPDK (pkg-config libdpdk not found at configure time): skipped\n");
	return 0;
}

#endif

static void print_kernel_note(void)
{
	printf("\nLinux fib_trie, published figures (not measured here): ~50 ns per lookup on a "
	       "full view\n(~20 M lookups/s on one CPU), ~100-130 bytes per route (124 B/route on "
	       "this table, as the issue\nquotes), ip -batch loads ~140k routes/s on this kind of "
	       "machine.\n");
}

/* -------------------------------------------------------- section sweep */

struct sweep_row {
	unsigned int k;
	size_t prefixes;
	struct load_fig load;
	double bytes_per_route;
	double depth_avg;
	unsigned int depth_max;
	struct lk_fig lc[ADDR_KINDS][API_KINDS];
	struct lk_fig lpm[ADDR_KINDS][API_KINDS];
	struct lk_fig rtefib[ADDR_KINDS]; /* rte_fib_lookup_bulk */
	double lpm_load_s;
	bool lpm_reused;
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* A random order of 0..n-1 (Fisher-Yates). */
static uint32_t *shuffled_indices(size_t n, uint64_t seed)
{
	uint32_t *perm = xcalloc(n, sizeof(uint32_t));
	struct tdata_rng r;

	tdata_rng_seed(&r, seed);
	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	tdata_shuffle32(perm, n, &r);
	return perm;
}

static void sweep_lpm(struct bench *b, struct sweep_row *row, const uint32_t *idx,
		      uint32_t *const addr[ADDR_KINDS])
{
#ifdef HAVE_DPDK
	struct rte_lpm *lpm = NULL;
	struct load_fig lf;
	size_t heap;

	if (b->eal <= 0)
		return;
	if (row->prefixes == b->t.n4 && b->lpm_full) {
		lpm = b->lpm_full;
		row->lpm_reused = true;
	} else {
		char name[32];

		snprintf(name, sizeof(name), "bench_sweep_%u", row->k);
		lpm = lpm_build(name, b->t.v4, b->gw4, idx, row->prefixes, &lf, &heap);
		if (!lpm)
			return;
		row->lpm_load_s = (double)lf.ns / 1e9;
	}
	for (int k = 0; k < ADDR_KINDS; k++) {
		row->lpm[k][API_SINGLE] =
			lk_run(pass_lpm_single, lpm, addr[k], b->n_sweep, b->passes);
		row->lpm[k][API_BATCH] = lk_run(pass_lpm_bulk, lpm, addr[k], b->n_sweep, b->passes);
	}
	if (lpm != b->lpm_full)
		rte_lpm_free(lpm);
	{
		struct rte_fib *fib = rtefib_build(b->t.v4, b->gw4, idx, row->prefixes, &lf, &heap);

		if (!fib)
			return;
		for (int k = 0; k < ADDR_KINDS; k++)
			row->rtefib[k] =
				lk_run(pass_rtefib_bulk, fib, addr[k], b->n_sweep, b->passes);
		rte_fib_free(fib);
	}
#else
	(void)b;
	(void)row;
	(void)idx;
	(void)addr;
#endif
}

static void sweep_one(struct bench *b, struct sweep_row *row, const uint32_t *perm,
		      uint32_t *const addr[ADDR_KINDS])
{
	uint32_t *idx = xcalloc(row->prefixes, sizeof(uint32_t));
	struct fib_state s0, s1;
	struct trie_stats ts;
	const struct fib_table *tb;
	struct fib *f;

	/* The first 2^k+1 of a random order, loaded in file order. */
	memcpy(idx, perm, row->prefixes * sizeof(uint32_t));
	qsort(idx, row->prefixes, sizeof(uint32_t), cmp_u32);
	fill_inside4(addr[ADDR_INSIDE], b->n_sweep, b->t.v4, idx, row->prefixes,
		     b->seed ^ (0x5000 + row->k));

	f = fib_new_or_die();
	fib_get_state(f, &s0);
	load_prefixes(f, b->t.v4, b->gw4, idx, row->prefixes, &row->load);
	fib_reclaim_barrier(f);
	fib_get_state(f, &s1);
	row->bytes_per_route = row->load.routes ? (double)(s1.mem.live_bytes - s0.mem.live_bytes) /
							  (double)row->load.routes
						: 0;
	tb = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET);
	fib_table_stats_rcu(tb, &ts);
	row->depth_avg = ts.leaves ? (double)ts.total_depth / (double)ts.leaves : 0;
	row->depth_max = ts.max_depth;
	for (int k = 0; k < ADDR_KINDS; k++) {
		row->lc[k][API_SINGLE] =
			lk_run(pass_lc4_single, tb, addr[k], b->n_sweep, b->passes);
		row->lc[k][API_BATCH] = lk_run(pass_lc4_batch, tb, addr[k], b->n_sweep, b->passes);
		check_same_hits(addr_kind_name[k], &row->lc[k][API_SINGLE], &row->lc[k][API_BATCH]);
	}
	fib_destroy(f);
	sweep_lpm(b, row, idx, addr);
	free(idx);
}

static void print_sweep(const struct bench *b, const struct sweep_row *rows, unsigned int n)
{
	printf("%3s %9s %12s %9s %7s %5s %12s\n", "k", "prefixes", "load/s", "B/route", "depth",
	       "max", "rte_lpm s");
	for (unsigned int i = 0; i < n; i++) {
		const struct sweep_row *r = &rows[i];
		char lpm_s[32] = "-";

		if (r->lpm_reused)
			snprintf(lpm_s, sizeof(lpm_s), "(dpdk)");
		else if (r->lpm[0][0].done)
			snprintf(lpm_s, sizeof(lpm_s), "%.3f", r->lpm_load_s);
		printf("%3u %9zu %12.0f %9.2f %7.2f %5u %12s\n", r->k, r->prefixes,
		       rate(r->load.routes, r->load.ns), r->bytes_per_route, r->depth_avg,
		       r->depth_max, lpm_s);
	}
	for (int a = 0; a < ADDR_KINDS; a++) {
		printf("\nlookups, %s addresses (%zu, the best of %u passes), M lookups/s\n",
		       addr_kind_name[a], b->n_sweep, b->passes);
		printf("%3s %9s %10s %10s %10s %10s %11s %7s %10s\n", "k", "prefixes", "lc single",
		       "lc batch", "lpm single", "lpm bulk", "batch/bulk", "hits %", "fib bulk");
		for (unsigned int i = 0; i < n; i++) {
			const struct sweep_row *r = &rows[i];
			const struct lk_fig *l = r->lpm[a];

			printf("%3u %9zu %10.1f %10.1f", r->k, r->prefixes, r->lc[a][0].mps,
			       r->lc[a][1].mps);
			if (l[0].done)
				printf(" %10.1f %10.1f %11.2f", l[0].mps, l[1].mps,
				       l[1].mps > 0 ? r->lc[a][1].mps / l[1].mps : 0);
			else
				printf(" %10s %10s %11s", "-", "-", "-");
			printf(" %7.2f", r->lc[a][1].hit);
			if (r->rtefib[a].done)
				printf(" %10.1f\n", r->rtefib[a].mps);
			else
				printf(" %10s\n", "-");
		}
	}
}

static int section_sweep(struct bench *b)
{
	struct sweep_row rows[SWEEP_KMAX - SWEEP_KMIN + 1];
	uint32_t *addr[ADDR_KINDS];
	unsigned int n = 0;
	uint32_t *perm;

	print_title("sweep: tables of 2^k+1 random prefixes of the full IPv4 table");
	if (bench_table(b))
		return -1;
#ifdef HAVE_DPDK
	eal_start(b);
#endif
	perm = shuffled_indices(b->t.n4, b->seed ^ 0x5eed);
	addr[ADDR_UNIFORM] = xcalloc(b->n_sweep, sizeof(uint32_t));
	addr[ADDR_INSIDE] = xcalloc(b->n_sweep, sizeof(uint32_t));
	fill_uniform4(addr[ADDR_UNIFORM], b->n_sweep, b->seed ^ 0x41);
	memset(rows, 0, sizeof(rows));
	for (unsigned int k = SWEEP_KMIN; k <= b->sweep_kmax; k++) {
		struct sweep_row *row = &rows[n++];

		row->k = k;
		row->prefixes = ((size_t)1 << k) + 1;
		if (row->prefixes > b->t.n4) {
			printf("k = %u: 2^%u+1 exceeds the table's %zu IPv4 prefixes; "
			       "the whole table is used\n",
			       k, k, b->t.n4);
			row->prefixes = b->t.n4;
		}
		progress("sweep: k = %u (%zu prefixes)", k, row->prefixes);
		sweep_one(b, row, perm, addr);
	}
	printf("load into a fresh FIB (file order), accounted bytes per route, depth of leaves; "
	       "rte_lpm: its load time\n");
	print_sweep(b, rows, n);
	free(addr[ADDR_UNIFORM]);
	free(addr[ADDR_INSIDE]);
	free(perm);
	return 0;
}

/* ------------------------------------------------------ section syncmem */

#define SYNCMEM_HOLD_NS 1000000u /* the reader's read-side sections: 1 ms */
#define SYNCMEM_GAP_NS  1000u    /* and the gap between them */

struct hold_reader {
	pthread_t th;
	volatile int stop;
	uint64_t sections;
};

static void spin_until(uint64_t t)
{
	while (now_ns() < t)
		caa_cpu_relax();
}

static void *hold_thread(void *arg)
{
	struct hold_reader *h = arg;

	fib_reader_register();
	while (!CMM_LOAD_SHARED(h->stop)) {
		fib_read_lock();
		spin_until(now_ns() + SYNCMEM_HOLD_NS);
		fib_read_unlock();
		h->sections++;
		spin_until(now_ns() + SYNCMEM_GAP_NS);
	}
	fib_reader_unregister();
	return NULL;
}

struct syncmem_row {
	uint64_t sync_mem;
	bool reader;
	struct load_fig load;
	struct reclaim_stats rs;
	uint64_t sections;
};

static void syncmem_one(struct bench *b, struct syncmem_row *row, size_t n)
{
	struct hold_reader h = { 0 };
	struct fib_state st;
	struct fib *f = fib_new_or_die();
	int ret;

	ret = fib_set_sync_mem(f, row->sync_mem);
	if (ret)
		printf("fib_set_sync_mem(%" PRIu64 "): %s\n", row->sync_mem, strerror(-ret));
	if (row->reader && pthread_create(&h.th, NULL, hold_thread, &h)) {
		fprintf(stderr, "bench_fib: pthread_create failed\n");
		exit(1);
	}
	load_prefixes(f, b->t.v4, b->gw4, NULL, n, &row->load);
	if (row->reader) {
		CMM_STORE_SHARED(h.stop, 1);
		pthread_join(h.th, NULL);
		row->sections = h.sections;
	}
	fib_get_state(f, &st);
	row->rs = st.reclaim;
	fib_destroy(f);
}

static void print_syncmem(const struct syncmem_row *rows, unsigned int n)
{
	printf("%9s %6s %8s %10s %7s %10s %9s %10s %9s %12s %8s\n", "sync-mem", "reader", "seconds",
	       "routes/s", "waits", "waited ms", "max ms", "peak pend", "max obj", "retired",
	       "locked %");
	for (unsigned int i = 0; i < n; i++) {
		const struct syncmem_row *r = &rows[i];
		char sm[32], locked[16] = "-";

		if (r->sync_mem >= 1024 * 1024)
			snprintf(sm, sizeof(sm), "%" PRIu64 " MiB", r->sync_mem >> 20);
		else
			snprintf(sm, sizeof(sm), "%" PRIu64 " KiB", r->sync_mem >> 10);
		/* How much of the load the reader spent in its sections: 100 unless starved. */
		if (r->reader && r->load.ns)
			snprintf(locked, sizeof(locked), "%.0f",
				 100.0 * (double)r->sections * SYNCMEM_HOLD_NS /
					 (double)r->load.ns);
		printf("%9s %6s %8.3f %10.0f %7" PRIu64 " %10.1f %9.2f %10" PRIu64 " %9" PRIu64
		       " %12" PRIu64 " %8s\n",
		       sm, r->reader ? "1 ms" : "none", (double)r->load.ns / 1e9,
		       rate(r->load.routes, r->load.ns), r->rs.forced_waits,
		       (double)r->rs.wait_ns_total / 1e6, (double)r->rs.wait_ns_max / 1e6,
		       r->rs.peak_pending, r->rs.max_object, r->rs.retired_bytes, locked);
		print_load_errors("load", &r->load);
	}
}

static int section_syncmem(struct bench *b)
{
	static const uint64_t sync_mem[] = { 64u << 10, 512u << 10, 16u << 20, 64u << 20 };
	struct syncmem_row rows[2 * sizeof(sync_mem) / sizeof(sync_mem[0])];
	unsigned int n = 0;
	size_t routes;

	print_title("syncmem: the full IPv4 load while a reader holds its read lock");
	if (bench_table(b))
		return -1;
	routes = b->quick ? b->t.n4 / 8 : b->t.n4;
	printf("a fresh FIB per row; %zu IPv4 routes; reader: registered, busy for 1 ms inside "
	       "fib_read_lock() at a time, ~1 us between sections\n(locked %%: the share of the "
	       "load's time the reader spent in its sections; below ~100 it was starved of CPU)\n",
	       routes);
	memset(rows, 0, sizeof(rows));
	for (size_t i = 0; i < sizeof(sync_mem) / sizeof(sync_mem[0]); i++) {
		for (int reader = 0; reader < 2; reader++) {
			struct syncmem_row *row = &rows[n++];

			row->sync_mem = sync_mem[i];
			row->reader = reader;
			progress("syncmem: sync-mem %" PRIu64 ", %s", row->sync_mem,
				 reader ? "reader" : "no reader");
			syncmem_one(b, row, routes);
		}
	}
	print_syncmem(rows, n);
	return 0;
}

/* ------------------------------------------------------ section machine */

/*
 * Random reads of a buffer, to read the lookup figures by: "dependent"
 * follows a single random cycle (each read waits for the one before: the
 * memory latency), "independent" reads random slots whose indexes are known
 * beforehand (as many misses in flight as the core allows).
 */
static void machine_reads(size_t bytes, size_t steps, double *dep_ns, double *indep_ns)
{
	size_t n = bytes / sizeof(uint32_t);
	uint32_t *t = xcalloc(n, sizeof(uint32_t)), *idx = xcalloc(steps, sizeof(uint32_t));
	struct tdata_rng r;
	uint64_t t0, sum = 0;
	uint32_t x = 0;

	tdata_rng_seed(&r, 0x3a3a);
	for (size_t i = 0; i < n; i++)
		t[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) { /* Sattolo: one cycle through every slot */
		size_t j = (size_t)(tdata_rng_next(&r) % i);
		uint32_t v = t[i];

		t[i] = t[j];
		t[j] = v;
	}
	for (size_t i = 0; i < steps; i++)
		idx[i] = (uint32_t)(tdata_rng_next(&r) % n);
	t0 = now_ns();
	for (size_t i = 0; i < steps; i++)
		x = t[x];
	*dep_ns = (double)(now_ns() - t0) / (double)steps;
	t0 = now_ns();
	for (size_t i = 0; i < steps; i++)
		sum += t[idx[i]];
	*indep_ns = (double)(now_ns() - t0) / (double)steps;
	bench_sink += sum + x;
	free(t);
	free(idx);
}

static int section_machine(struct bench *b)
{
	static const size_t mib[] = { 1, 4, 64 };
	size_t steps = b->quick ? 1u << 20 : 1u << 22;

	print_title("machine: random reads of a buffer, for reading the lookup figures");
	printf("%8s %18s %20s\n", "buffer", "dependent ns/read", "independent ns/read");
	for (size_t i = 0; i < sizeof(mib) / sizeof(mib[0]); i++) {
		double dep, indep;

		machine_reads(mib[i] << 20, steps, &dep, &indep);
		printf("%4zu MiB %18.1f %20.1f\n", mib[i], dep, indep);
	}
	return 0;
}

/* ----------------------------------------------------------------- main */

static const struct {
	const char *name;
	int (*run)(struct bench *b);
	bool named_only; /* not in a run of every section */
} sections[] = {
	{ "machine", section_machine, false }, { "full", section_full, false },
	{ "dpdk", section_dpdk, false },       { "sweep", section_sweep, false },
	{ "syncmem", section_syncmem, false }, { "lookups", section_lookups, true },
	{ "loads", section_loads, true },
#ifdef TRIE_READ_STATS
	{ "reads", section_reads, true },
#endif
};

#define N_SECTIONS (sizeof(sections) / sizeof(sections[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_fib [--quick] [--cpu-time] [--section "
		"machine|full|dpdk|sweep|syncmem|lookups|loads]\n"
		"  --quick         smaller counts, for a CI smoke run\n"
		"  --cpu-time      time lookup passes by the thread's CPU time (a shared machine)\n"
		"  --section NAME  run one section (default: all)\n"
		"environment: LCFIB_DATA (folder of the table), LCFIB_SEED\n");
}

static void bench_init(struct bench *b, bool quick)
{
	memset(b, 0, sizeof(*b));
	b->quick = quick;
	b->seed = tdata_seed(1);
	if (quick) {
		b->passes = 1;
		b->n_addr4 = 1u << 20;
		b->n_addr6 = 1u << 18;
		b->n_sweep = 1u << 18;
		b->sweep_kmax = 14;
	} else {
		b->passes = 3;
		b->n_addr4 = 1u << 24;
		b->n_addr6 = 1u << 22;
		b->n_sweep = 1u << 22;
		b->sweep_kmax = SWEEP_KMAX;
	}
}

static void bench_fini(struct bench *b)
{
#ifdef HAVE_DPDK
	if (b->lpm_full)
		rte_lpm_free(b->lpm_full);
	if (b->eal > 0) {
		char *slash;

		rte_eal_cleanup();
		/* EAL leaves its (empty, with --no-shconf) runtime folder behind. */
		if (rmdir(b->eal_dir) == 0) {
			slash = strrchr(b->eal_dir, '/');
			if (slash && slash != b->eal_dir) {
				*slash = '\0';
				rmdir(b->eal_dir); /* the dpdk/ folder, if now empty */
			}
		}
	}
#endif
	if (b->fib4)
		fib_destroy(b->fib4);
	free(b->a4[ADDR_UNIFORM]);
	free(b->a4[ADDR_INSIDE]);
	free(b->a6_inside);
	free(b->a6_global);
	free(b->k6_inside);
	free(b->k6_global);
	free(b->gw4);
	free(b->gw6);
	if (b->have_table)
		tdata_free(&b->t);
}

/* What else the machine was doing: figures from a busy machine are not comparable. */
static void print_loadavg(const char *when)
{
	char line[128] = "?";
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (!fgets(line, sizeof(line), f))
			snprintf(line, sizeof(line), "?\n");
		fclose(f);
	}
	printf("load average %s: %s", when, line);
}

static void print_header(const struct bench *b)
{
	char host[64] = "?";

	gethostname(host, sizeof(host) - 1);
	printf("bench_fib: liblcfib on %s, %ld CPUs online, seed %" PRIu64 "%s%s\n", host,
	       sysconf(_SC_NPROCESSORS_ONLN), b->seed, b->quick ? ", --quick" : "",
	       cpu_time ? ", lookups timed by thread CPU time (--cpu-time)" : "");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "cpu-time", no_argument, NULL, 'c' },
		{ "section", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *only = NULL;
	bool quick = false;
	struct bench b;
	int c, failed = 0;

	while ((c = getopt_long(argc, argv, "qcs:h", opts, NULL)) != -1) {
		switch (c) {
		case 'q':
			quick = true;
			break;
		case 'c':
			cpu_time = true;
			break;
		case 's':
			only = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (only) {
		size_t i;

		for (i = 0; i < N_SECTIONS && strcmp(only, sections[i].name); i++)
			;
		if (i == N_SECTIONS) {
			fprintf(stderr, "bench_fib: no section '%s'\n", only);
			usage(stderr);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	gw_init();
	bench_init(&b, quick);
	print_header(&b);
	print_loadavg("at start");
	for (size_t i = 0; i < N_SECTIONS; i++) {
		if (only ? strcmp(only, sections[i].name) != 0 : sections[i].named_only)
			continue;
		if (sections[i].run(&b))
			failed = 1;
		if (!strcmp(sections[i].name, "dpdk"))
			print_kernel_note();
		fflush(stdout);
	}
	printf("\n");
	print_loadavg("at end");
	printf("(checksum %" PRIx64 ")\n", (uint64_t)bench_sink);
	bench_fini(&b);
	return failed;
}
