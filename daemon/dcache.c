/* SPDX-License-Identifier: MIT */
/*
 * The daemon's destination caches (dcache.h). The loop keeps the settings
 * and the (table, family) pairs looked up; a set of caches is made by the
 * writer for the pairs it lacks (a build job), or for all of them under new
 * settings (a rebuild), and published by the loop when the job is done. A
 * set replaced goes back to the writer (a retire job), which waits for a
 * grace period and frees it and the caches no later set holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/urcu-memb.h>

#include "daemon/dcache.h"
#include "daemon/lcfibd.h"
#include "daemon/log.h"
#include "daemon/writer.h"
#include "lib/errbuf.h"

#define DCACHE_THREADS 1 /* the loop thread: the daemon's one reader of the caches */

struct dcache_key {
	uint32_t table; /* never 0: main is FIB_TABLE_MAIN */
	int family;
};

struct dcache_one {
	struct dcache_key k;
	struct cache *c;
};

/* What readers reach: immutable once published. */
struct dcache_set {
	unsigned int n;
	struct dcache_one one[];
};

struct dcache {
	struct dcache_cfg want;  /* the config */
	struct dcache_cfg built; /* what the published set was made with */
	struct dcache_set *set;  /* RCU; NULL: none */
	struct dcache_key *keys; /* pairs looked up while enabled */
	unsigned int n_keys;
	bool busy;                  /* a build job is queued or running */
	struct cache_stats retired; /* counters of the caches retired */
};

struct dcache_build_job {
	struct writer_job job;
	struct dcache_cfg cfg;
	bool rebuild; /* every key, under new settings; else the ones the set lacks */
	unsigned int n;
	struct dcache_one one[]; /* keys in; caches out (NULL: not made) */
};

struct dcache_retire_job {
	struct writer_job job;
	struct dcache_set *set;
	bool caches; /* its caches go too (no later set holds them) */
};

static bool dcache_cfg_same(const struct dcache_cfg *a, const struct dcache_cfg *b)
{
	return a->enabled == b->enabled && a->size == b->size && a->mode == b->mode &&
	       a->nr_scans == b->nr_scans && a->admit_second == b->admit_second;
}

static void dcache_stats_add(struct cache_stats *sum, const struct cache_stats *st)
{
	uint64_t *s = (uint64_t *)sum;
	const uint64_t *v = (const uint64_t *)st;

	for (size_t i = 0; i < sizeof(*st) / sizeof(uint64_t); i++)
		s[i] += v[i];
}

static void dcache_set_free(struct dcache_set *s, bool caches)
{
	if (!s)
		return;
	for (unsigned int i = 0; caches && i < s->n; i++)
		cache_destroy(s->one[i].c);
	free(s);
}

/* ------------------------------------------------------------- retiring */

static void dcache_retire_run(struct lcfibd *d, struct writer_job *j)
{
	struct dcache_retire_job *r = (struct dcache_retire_job *)j;

	(void)d;
	urcu_memb_synchronize_rcu(); /* no reader holds the set or its caches after this */
	dcache_set_free(r->set, r->caches);
	r->set = NULL;
}

static void dcache_retire_done(struct lcfibd *d, struct writer_job *j)
{
	(void)d;
	free(j);
}

/*
 * Loop thread, @s unpublished: freed after a grace period, with its caches
 * when @caches (their counters, final now that only this thread reads
 * them, are kept). Without the writer (start, shutdown) no reader is left.
 */
static void dcache_retire(struct lcfibd *d, struct dcache_set *s, bool caches)
{
	struct dcache_retire_job *r;

	if (!s)
		return;
	for (unsigned int i = 0; caches && i < s->n; i++) {
		struct cache_stats st;

		cache_get_stats(s->one[i].c, &st);
		dcache_stats_add(&d->dcache->retired, &st);
	}
	r = d->writer && !d->stop ? calloc(1, sizeof(*r)) : NULL;
	if (!r) {
		if (d->writer && !d->stop)
			urcu_memb_synchronize_rcu();
		dcache_set_free(s, caches);
		return;
	}
	r->job.run = dcache_retire_run;
	r->job.done = dcache_retire_done;
	r->set = s;
	r->caches = caches;
	writer_submit(d->writer, &r->job);
}

/* ------------------------------------------------------------- building */

static void dcache_build_run(struct lcfibd *d, struct writer_job *j)
{
	struct dcache_build_job *b = (struct dcache_build_job *)j;
	struct cache_cfg cc = {
		.size = b->cfg.size,
		.threads = DCACHE_THREADS,
		.mode = b->cfg.mode,
		.nr_scans = b->cfg.nr_scans,
		.flags = b->cfg.admit_second ? CACHE_F_ADMIT_SECOND : 0,
	};
	struct errbuf err;

	for (unsigned int i = 0; i < b->n; i++) {
		b->one[i].c = cache_new(d->fib, b->one[i].k.table, b->one[i].k.family, &cc, &err);
		if (!b->one[i].c)
			log_err("cache of table %u %s not made: %s", b->one[i].k.table,
				b->one[i].k.family == AF_INET ? "ipv4" : "ipv6", err.msg);
	}
}

static bool dcache_set_has(const struct dcache_set *s, const struct dcache_key *k)
{
	for (unsigned int i = 0; s && i < s->n; i++) {
		if (s->one[i].k.table == k->table && s->one[i].k.family == k->family)
			return true;
	}
	return false;
}

static void dcache_kick(struct lcfibd *d);

/* Loop thread: caches of the job not to be published, to the writer to destroy. */
static void dcache_build_drop(struct lcfibd *d, struct dcache_build_job *b)
{
	struct dcache_set *s = malloc(sizeof(*s) + b->n * sizeof(s->one[0]));

	if (!s) {
		for (unsigned int i = 0; i < b->n; i++)
			cache_destroy(b->one[i].c); /* never published: no reader has them */
		return;
	}
	s->n = 0;
	for (unsigned int i = 0; i < b->n; i++) {
		if (b->one[i].c)
			s->one[s->n++] = b->one[i];
	}
	dcache_retire(d, s, true);
}

/*
 * Loop thread: the job's caches join the set (or replace it, after a
 * rebuild). Made under settings that changed since, they go at once.
 */
static void dcache_build_done(struct lcfibd *d, struct writer_job *j)
{
	struct dcache_build_job *b = (struct dcache_build_job *)j;
	struct dcache *dc = d->dcache;
	struct dcache_set *old = dc->set, *s;
	unsigned int n = 0, keep;

	dc->busy = false;
	if (!dc->want.enabled || !dcache_cfg_same(&b->cfg, &dc->want)) {
		dcache_build_drop(d, b);
		goto next;
	}
	keep = b->rebuild || !old ? 0 : old->n;
	s = malloc(sizeof(*s) + (keep + b->n) * sizeof(s->one[0]));
	if (!s) {
		log_err("cache: out of memory: lookups of new tables go to the trie");
		dcache_build_drop(d, b);
		goto next;
	}
	for (unsigned int i = 0; i < keep; i++)
		s->one[n++] = old->one[i];
	for (unsigned int i = 0; i < b->n; i++) {
		if (b->one[i].c)
			s->one[n++] = b->one[i];
	}
	s->n = n;
	rcu_assign_pointer(dc->set, s);
	dc->built = b->cfg;
	dcache_retire(d, old, b->rebuild);
next:
	free(b);
	dcache_kick(d);
}

/* Loop thread: a build job for what the set lacks, unless one is under way. */
static void dcache_kick(struct lcfibd *d)
{
	struct dcache *dc = d->dcache;
	bool rebuild = dc->set && !dcache_cfg_same(&dc->built, &dc->want);
	struct dcache_build_job *b;
	unsigned int n = 0;

	if (dc->busy || !dc->want.enabled || !d->writer || d->stop)
		return;
	b = calloc(1, sizeof(*b) + dc->n_keys * sizeof(b->one[0]));
	if (!b)
		return; /* tried again at the next change of settings, or a new table */
	for (unsigned int i = 0; i < dc->n_keys; i++) {
		if (rebuild || !dcache_set_has(dc->set, &dc->keys[i]))
			b->one[n++].k = dc->keys[i];
	}
	if (!n) {
		free(b);
		return;
	}
	b->job.run = dcache_build_run;
	b->job.done = dcache_build_done;
	b->cfg = dc->want;
	b->rebuild = rebuild;
	b->n = n;
	dc->busy = true;
	writer_submit(d->writer, &b->job);
}

/* Loop thread: a table looked up that has no cache yet. */
static void dcache_want(struct lcfibd *d, uint32_t table, int family)
{
	struct dcache *dc = d->dcache;
	struct dcache_key *k;

	for (unsigned int i = 0; i < dc->n_keys; i++) {
		if (dc->keys[i].table == table && dc->keys[i].family == family)
			return; /* asked for: a job is under way */
	}
	k = realloc(dc->keys, (dc->n_keys + 1) * sizeof(*k));
	if (!k)
		return;
	dc->keys = k;
	dc->keys[dc->n_keys].table = table;
	dc->keys[dc->n_keys].family = family;
	dc->n_keys++;
	dcache_kick(d);
}

/* ------------------------------------------------------------- settings */

int dcache_init(struct lcfibd *d)
{
	d->dcache = calloc(1, sizeof(*d->dcache));
	return d->dcache ? 0 : -1;
}

void dcache_free(struct lcfibd *d)
{
	struct dcache *dc = d->dcache;

	if (!dc)
		return;
	dcache_set_free(dc->set, true);
	free(dc->keys);
	free(dc);
	d->dcache = NULL;
}

void dcache_configure(struct lcfibd *d, const struct dcache_cfg *cfg)
{
	struct dcache *dc = d->dcache;
	struct dcache_set *old = dc->set;

	if (dcache_cfg_same(cfg, &dc->want))
		return;
	dc->want = *cfg;
	if (!cfg->enabled) {
		rcu_assign_pointer(dc->set, NULL);
		dcache_retire(d, old, true);
		free(dc->keys);
		dc->keys = NULL;
		dc->n_keys = 0;
		return;
	}
	dcache_kick(d); /* the old set answers until the new one is in place */
}

/* ------------------------------------------------------------- lookups */

static struct cache *dcache_find_rcu(struct dcache *dc, uint32_t table, int family)
{
	struct dcache_set *s = rcu_dereference(dc->set);

	for (unsigned int i = 0; s && i < s->n; i++) {
		if (s->one[i].k.table == table && s->one[i].k.family == family)
			return s->one[i].c;
	}
	return NULL;
}

/* The cache's answer for @a: true with a route in *@buf, false when none matches. */
static bool dcache_lookup_rcu(struct cache *c, const struct addr *a, struct fib_route *buf)
{
	struct cache_thread *t = cache_thread(c, 0);

	if (a->family == AF_INET)
		return cache_lookup4_rcu(c, t, addr_key4(a), buf);
	return cache_lookup6_rcu(c, t, &a->v6, buf);
}

const struct fib_route *dcache_match_rcu(struct lcfibd *d, uint32_t table, const struct addr *a,
					 struct addr_prefix *prefix, struct fib_route *buf)
{
	uint32_t id = table ? table : FIB_TABLE_MAIN;
	struct cache *c;

	if (!d->dcache || !d->dcache->want.enabled)
		return fib_match_rcu(d->fib, table, a, prefix);
	c = dcache_find_rcu(d->dcache, id, a->family);
	if (!c) {
		/* Only a table that exists: a lookup does not make one. */
		if (fib_table_get_rcu(d->fib, id, a->family))
			dcache_want(d, id, a->family);
		return fib_match_rcu(d->fib, table, a, prefix);
	}
	if (!dcache_lookup_rcu(c, a, buf))
		return NULL;
	/* A dead route is passed by (fib_match_rcu()): rare, and not cached as such. */
	if (buf->nh && buf->nh->dead)
		return fib_match_rcu(d->fib, table, a, prefix);
	if (prefix) {
		prefix->a = *a;
		prefix->plen = buf->plen;
		addr_mask(&prefix->a, buf->plen);
	}
	return buf;
}

const struct fib_route *dcache_match_rules_rcu(struct lcfibd *d, const struct addr *a,
					       struct addr_prefix *prefix, uint32_t *table,
					       struct fib_route *buf)
{
	/* fib_match_rules_rcu()'s tables, each through its cache. */
	const uint32_t *rules;
	size_t n = fib_rule_tables(a->family, &rules);

	if (!d->dcache || !d->dcache->want.enabled)
		return fib_match_rules_rcu(d->fib, a, prefix, table);
	for (size_t i = 0; i < n; i++) {
		const struct fib_route *r = dcache_match_rcu(d, rules[i], a, prefix, buf);

		if (!r || r->type == FIB_RT_THROW)
			continue;
		if (table)
			*table = rules[i];
		return r;
	}
	return NULL;
}

/* ------------------------------------------------------------- state */

void dcache_get_state(struct lcfibd *d, struct dcache_state *s)
{
	struct dcache *dc = d->dcache;
	struct dcache_set *set;
	struct cache_cfg cc;

	memset(s, 0, sizeof(*s));
	s->cfg = dc->want;
	s->st = dc->retired;
	if (s->cfg.size < CACHE_MIN_PER_THREAD * DCACHE_THREADS)
		s->cfg.size = CACHE_MIN_PER_THREAD * DCACHE_THREADS;
	if (!s->cfg.nr_scans)
		s->cfg.nr_scans = s->cfg.mode == CACHE_PERTHREAD ? CACHE_NR_SCANS_PERTHREAD
								 : CACHE_NR_SCANS_COMMON;
	fib_read_lock();
	set = rcu_dereference(dc->set);
	for (unsigned int i = 0; set && i < set->n; i++) {
		struct cache_stats st;

		cache_get_stats(set->one[i].c, &st);
		dcache_stats_add(&s->st, &st);
		s->caches++;
		/* The set's settings, until a rebuild puts the new ones in place. */
		cache_get_cfg(set->one[i].c, &cc);
		s->cfg.size = cc.size;
		s->cfg.mode = cc.mode;
		s->cfg.nr_scans = cc.nr_scans;
		s->cfg.admit_second = cc.flags & CACHE_F_ADMIT_SECOND;
	}
	fib_read_unlock();
}
