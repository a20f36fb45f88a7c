/* SPDX-License-Identifier: MIT */
/*
 * The writer's side of every netlink feed: batches of messages decoded
 * (lib/rtnl.h) and applied, in order, by the writer thread; and the
 * bookkeeping of what a feed owns, so that a resync or a replay can sweep
 * what was not announced again.
 *
 * Ownership is kept per route key (table, prefix, metric) and per nexthop
 * object id, each with the generation that last announced it. A sync
 * starts a new generation; its end deletes every key of an older one.
 * Within a key, a kernel dump's routes of each prefix are reconciled with
 * the FIB's as they arrive (feed_pending_flush): routes of a key that
 * the dump no longer lists go even when others of the key stay.
 * Only the writer touches the sets; the loop talks to it through jobs.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <urcu/uatomic.h>

#include "daemon/feed.h"
#include "daemon/ingest.h"
#include "daemon/lcfibd.h"
#include "daemon/log.h"
#include "daemon/writer.h"
#include "lib/rtnl.h"

#define FEED_SET_MIN   1024
#define FEED_HUGE_PAGE (2u << 20)

/*
 * A set grows (doubles) when it would be more than 3/4 full. Every growth
 * maps new zeroed pages, which cost more to fault in than the rehash;
 * at 1/2, the full view (1,062,046 keys) just passed 2^20 and took 2^22
 * slots, 128 MiB, 256 MiB faulted in over its growths; at 3/4 it takes
 * 2^21 slots, 64 MiB. Linear probing 1/2 to 3/4 full reads 1.5 to 2.5
 * slots to find a key, 2.5 to 8.5 to find it absent, two to a cache line.
 */
#define FEED_SET_LOAD_NUM 3
#define FEED_SET_LOAD_DEN 4

/*
 * Message jobs of FEED_SPARE_MIN bytes up to FEED_SPARE_SIZE (an FPM
 * peer's batches, a MiB each while it sends fast) take their buffer from
 * the few the feed keeps: a MiB from malloc each was new pages to fault
 * in, a tenth of an FPM replay's time. A feed whose queued messages reach
 * FEED_BACKLOG_MAX is backlogged (feed_backlogged()): the FPM feed stops
 * reading until they are down to half, so a peer that sends faster than
 * the writer applies waits in TCP, not in our memory, and the spares
 * cover what is queued. Only the loop thread counts and takes them.
 */
#define FEED_SPARE_MIN   (64u << 10)
#define FEED_SPARE_SIZE  (1u << 20)
#define FEED_SPARES      4
#define FEED_BACKLOG_MAX ((size_t)FEED_SPARES * FEED_SPARE_SIZE)

struct feed_pending;

/* A route key the feed owns; gen 0 marks an empty slot. */
struct feed_key {
	uint8_t addr[16];
	uint32_t table;
	uint32_t metric;
	uint32_t gen;
	uint8_t plen;
	uint8_t family;
};

struct feed_set {
	struct feed_key *k;
	size_t cap, n; /* cap: a power of two */
};

/* Nexthop object ids the feed owns. */
struct feed_ids {
	uint32_t *id, *gen;
	size_t cap, n;
};

enum feed_job_kind {
	FEED_JOB_MSGS,
	FEED_JOB_SYNC_BEGIN,
	FEED_JOB_SYNC_END,
	FEED_JOB_SYNC_CUT,
	FEED_JOB_FLUSH,
	FEED_JOB_TABLES
};

/*
 * A route that waits for its nexthop object: applied when the object goes
 * in, unless an update of its key (table, prefix, metric) came after it
 * and superseded it.
 */
struct feed_wait_route {
	struct feed_wait_route *next;
	struct fib_rcfg rc; /* through rc.nh_id: no paths */
	uint32_t seq;       /* its mark in feed.wait_keys while it is the key's latest */
};

struct feed_job {
	struct writer_job job; /* first */
	struct feed *f;
	enum feed_job_kind kind;
	bool spare; /* FEED_SPARE_SIZE bytes of data, to keep for the next */
	size_t len;
	uint8_t data[]; /* messages, or FEED_JOB_TABLES' table ids */
};

struct feed {
	struct lcfibd *d;
	char name[16];
	/* writer only */
	struct feed *next; /* in d->feeds, linked by its first job */
	bool listed;
	struct feed_set set;
	struct feed_ids ids;
	struct feed_pending *pending; /* a dumped prefix's routes, not yet applied */
	uint32_t gen;
	uint32_t *tables;
	unsigned int n_tables;
	bool syncing; /* between a sync's begin and its end; uatomic: the state reads it */
	/* The loop thread's: spare job buffers, bytes queued, who waits for them to drain. */
	struct feed_job *spares[FEED_SPARES];
	unsigned int n_spares;
	size_t queued;
	void (*drained)(void *ctx);
	void *drained_ctx;
	bool drain_wait;
	struct feed_wait_obj *waiting; /* objects routes or groups wait for, newest first */
	unsigned int n_waiting;
	struct feed_set wait_keys; /* keys of waiting routes; gen: the latest one's seq */
	uint32_t wait_seq;
	uint64_t n_wait_records;               /* waiting routes, superseded ones too */
	uint64_t waited_routes, waited_groups; /* that waited in this sync, for its end's log */
	/* counters: uatomic, written by the writer (and loop for its own), read by anyone */
	uint64_t messages, routes, nexthops, route_updates, coalesced, skipped, decode_errors,
		apply_errors;
	uint64_t dumps, resyncs, enobufs, swept, flushed, connects, refused, backlog_waits;
	uint64_t wait_objects, wait_routes;
	pthread_mutex_t lock; /* last_error */
	char last_error[256];
};

static void feed_inc(uint64_t *c, uint64_t n)
{
	uatomic_add(c, n);
}

static void feed_dec(uint64_t *c, uint64_t n)
{
	uatomic_sub(c, n);
}

/* ------------------------------------------------------------ key sets */

/* splitmix64's finaliser: every input bit reaches every output bit. */
static uint64_t feed_mix(uint64_t h)
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static uint64_t feed_key_hash(const struct feed_key *k)
{
	uint64_t a, b;

	memcpy(&a, k->addr, 8);
	memcpy(&b, k->addr + 8, 8);
	a = feed_mix(a ^ ((uint64_t)k->table << 32 | k->metric));
	return feed_mix(a ^ b ^ ((uint64_t)k->plen << 8 | k->family) << 48);
}

static bool feed_key_eq(const struct feed_key *a, const struct feed_key *b)
{
	return a->table == b->table && a->metric == b->metric && a->plen == b->plen &&
	       a->family == b->family && memcmp(a->addr, b->addr, 16) == 0;
}

/* The slot of @k, or the empty slot where it would go. */
static struct feed_key *feed_set_slot(const struct feed_set *s, const struct feed_key *k)
{
	size_t i = feed_key_hash(k) & (s->cap - 1);

	while (s->k[i].gen && !feed_key_eq(&s->k[i], k))
		i = (i + 1) & (s->cap - 1);
	return &s->k[i];
}

/*
 * A set's slots: zeroed pages from mmap, in huge pages where the kernel
 * has them (THP "madvise"). A full table's set is 64 MiB probed at
 * random, once per route: with 4 KiB pages nearly every probe also missed
 * the TLB, and the set cost more than the FIB (42% of an FPM replay).
 */
static struct feed_key *feed_set_alloc(size_t cap)
{
	size_t size = cap * sizeof(struct feed_key);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (size >= FEED_HUGE_PAGE)
		madvise(p, size, MADV_HUGEPAGE); /* a hint: fine if refused */
	return p;
}

static void feed_set_free(struct feed_set *s)
{
	if (s->k)
		munmap(s->k, s->cap * sizeof(*s->k));
	s->k = NULL;
	s->cap = s->n = 0;
}

static int feed_set_grow(struct feed_set *s)
{
	struct feed_set n = { .cap = s->cap ? s->cap * 2 : FEED_SET_MIN };

	n.k = feed_set_alloc(n.cap);
	if (!n.k)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		if (s->k[i].gen)
			*feed_set_slot(&n, &s->k[i]) = s->k[i];
	}
	n.n = s->n;
	feed_set_free(s);
	*s = n;
	return 0;
}

static int feed_set_mark(struct feed_set *s, const struct feed_key *k, uint32_t gen)
{
	struct feed_key *slot;

	if ((s->n + 1) * FEED_SET_LOAD_DEN > s->cap * FEED_SET_LOAD_NUM && feed_set_grow(s))
		return -ENOMEM;
	slot = feed_set_slot(s, k);
	if (!slot->gen)
		s->n++;
	*slot = *k;
	slot->gen = gen;
	return 0;
}

/* Removes the slot at @i, moving later ones of its run back (linear probing). */
static void feed_set_remove_at(struct feed_set *s, size_t i)
{
	size_t j = i;

	s->k[i].gen = 0;
	s->n--;
	for (;;) {
		size_t home;

		j = (j + 1) & (s->cap - 1);
		if (!s->k[j].gen)
			return;
		home = feed_key_hash(&s->k[j]) & (s->cap - 1);
		/* Move back unless its home lies cyclically in (i, j]. */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		s->k[i] = s->k[j];
		s->k[j].gen = 0;
		i = j;
	}
}

static uint32_t *feed_ids_slot(const struct feed_ids *s, uint32_t id)
{
	size_t i = ((uint64_t)id * 0x9e3779b97f4a7c15ull >> 32) & (s->cap - 1);

	while (s->gen[i] && s->id[i] != id)
		i = (i + 1) & (s->cap - 1);
	return &s->id[i];
}

static int feed_ids_mark(struct feed_ids *s, uint32_t id, uint32_t gen)
{
	uint32_t *slot;

	if ((s->n + 1) * 2 > s->cap) {
		struct feed_ids n = { .cap = s->cap ? s->cap * 2 : 64 };

		n.id = calloc(n.cap, sizeof(*n.id));
		n.gen = calloc(n.cap, sizeof(*n.gen));
		if (!n.id || !n.gen) {
			free(n.id);
			free(n.gen);
			return -ENOMEM;
		}
		for (size_t i = 0; i < s->cap; i++) {
			if (s->gen[i]) {
				slot = feed_ids_slot(&n, s->id[i]);
				*slot = s->id[i];
				n.gen[slot - n.id] = s->gen[i];
			}
		}
		n.n = s->n;
		free(s->id);
		free(s->gen);
		*s = n;
	}
	slot = feed_ids_slot(s, id);
	if (!s->gen[slot - s->id])
		s->n++;
	*slot = id;
	s->gen[slot - s->id] = gen;
	return 0;
}

/* Forgets @id (nothing happens when it is not there); rebuilds the run after it. */
static void feed_ids_forget(struct feed_ids *s, uint32_t id)
{
	size_t i;

	if (!s->cap)
		return;
	i = (size_t)(feed_ids_slot(s, id) - s->id);
	if (!s->gen[i])
		return;
	s->gen[i] = 0;
	s->n--;
	for (size_t j = (i + 1) & (s->cap - 1); s->gen[j]; j = (j + 1) & (s->cap - 1)) {
		uint32_t rid = s->id[j], rgen = s->gen[j];

		s->gen[j] = 0;
		s->n--;
		feed_ids_mark(s, rid, rgen);
	}
}

/* ------------------------------------------------------------- applying */

static void feed_error(struct feed *f, uint64_t *counter, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void feed_error(struct feed *f, uint64_t *counter, const char *fmt, ...)
{
	va_list ap;

	feed_inc(counter, 1);
	pthread_mutex_lock(&f->lock);
	va_start(ap, fmt);
	vsnprintf(f->last_error, sizeof(f->last_error), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&f->lock);
	if (log_get_level() >= LOG_INFO)
		log_info("%s feed: %s", f->name, f->last_error);
}

static bool feed_wants_table(const struct feed *f, uint32_t table)
{
	if (!f->n_tables)
		return true;
	for (unsigned int i = 0; i < f->n_tables; i++) {
		if (f->tables[i] == table)
			return true;
	}
	return false;
}

static void feed_key_of(struct feed_key *k, const struct fib_rcfg *rc)
{
	memset(k, 0, sizeof(*k));
	memcpy(k->addr, rc->dst.a.b, 16);
	k->table = rc->table ? rc->table : FIB_TABLE_MAIN;
	k->metric = rc->metric;
	k->plen = rc->dst.plen;
	k->family = rc->dst.a.family;
}

/*
 * What the kernel sends (Linux 6.1, seen with a netlink listener), and
 * what the mirror makes of it:
 *
 *   operation            IPv4 RTM_NEWROUTE flags   IPv6 RTM_NEWROUTE flags
 *   ip route add         CREATE|EXCL               CREATE|EXCL
 *   ip route append      CREATE|APPEND             CREATE|APPEND (CREATE|EXCL|APPEND
 *                                                  when the prefix had no route)
 *   ip route prepend     CREATE                    CREATE
 *   ip route replace     REPLACE (CREATE|EXCL when it created the route)
 *   a dump               NLM_F_MULTI only          NLM_F_MULTI only
 *
 * IPv4 keeps every route of a (table, prefix, metric) apart; so does IPv6
 * for routes without a gateway (fe80::/64 on every link). But IPv6 merges
 * gateway routes of one prefix and metric into one multipath route (its
 * "siblings"), and so does the FIB (fib_route_add()): an add, prepend or
 * append of a gateway to a prefix that has one is announced as the whole
 * merged route (RTA_MULTIPATH, CREATE or CREATE|APPEND), the new sibling
 * first and the others after it, while `ip -6 route` lists the new one
 * last; `ip -6 route del PREFIX via GW` of one sibling comes as an
 * RTM_DELROUTE of that gateway alone, which the FIB's delete takes out
 * of the route as the kernel does. So an announced IPv6 gateway route
 * that holds the FIB's route of its metric and more adds just the new
 * paths, which the FIB puts last, as the kernel does (feed_route6_add);
 * one that differs otherwise (zebra sends whole routes) replaces it.
 *
 * Events apply with their own flags, except that an add (CREATE|EXCL)
 * replaces what the mirror may still hold of the prefix and metric. A
 * dump has no flags to go by: the routes it lists of one prefix are
 * gathered and reconciled with the FIB's at once (feed_pending_flush).
 */
static unsigned int feed_add_flags(unsigned int nl)
{
	if (nl & FIB_F_APPEND)
		return FIB_F_CREATE | FIB_F_APPEND;
	if ((nl & (FIB_F_CREATE | FIB_F_EXCL | FIB_F_REPLACE)) == FIB_F_CREATE)
		return FIB_F_CREATE;
	return FIB_F_CREATE | FIB_F_REPLACE;
}

/* Whether @a and @b are the same path: gateway, device, weight and flags. */
static bool feed_path_eq(const struct nh_path *a, const struct nh_path *b)
{
	return nh_path_same(a, b) && (a->weight ? a->weight : 1) == (b->weight ? b->weight : 1) &&
	       a->flags == b->flags;
}

/*
 * Whether the FIB's route @r is @rc: type, protocol, scope, metric and
 * nexthop, its paths in order (a dump fixes a multipath route's order),
 * weights too.
 */
static bool feed_route_is(const struct fib_route *r, const struct fib_rcfg *rc)
{
	const struct nh_info *info;

	if (r->metric != rc->metric || r->type != (rc->type ? rc->type : FIB_RT_UNICAST) ||
	    r->proto != rc->proto || r->scope != rc->scope)
		return false;
	if (rc->nh_id)
		return r->nh && r->nh->id == rc->nh_id;
	if (!rc->n_paths)
		return !r->nh;
	if (!r->nh || r->nh->id)
		return false;
	info = r->nh->info;
	if (info->n != rc->n_paths)
		return false;
	for (unsigned int i = 0; i < rc->n_paths; i++) {
		if (!feed_path_eq(&rc->paths[i], &info->path[i]))
			return false;
	}
	return true;
}

/* The routes of @rc's prefix now (a copy: the FIB's array goes with the next edit). */
static unsigned int feed_view(struct feed *f, const struct fib_rcfg *rc, struct fib_route *out)
{
	const struct fib_route *r;
	unsigned int n = 0;

	r = fib_find_rcu(f->d->fib, rc->table ? rc->table : FIB_TABLE_MAIN, &rc->dst, &n);
	if (!r)
		return 0;
	if (n > TRIE_LEAF_MAX)
		n = TRIE_LEAF_MAX;
	memcpy(out, r, n * sizeof(*r));
	return n;
}

/* A delete that matches @r of @like's prefix exactly; @paths: room for its paths. */
static void feed_rcfg_of(struct fib_rcfg *rc, const struct fib_rcfg *like,
			 const struct fib_route *r, struct nh_path *paths)
{
	memset(rc, 0, sizeof(*rc));
	rc->dst = like->dst;
	rc->table = like->table;
	rc->type = r->type;
	rc->proto = r->proto;
	rc->scope = r->scope;
	rc->metric = r->metric;
	rc->flags = FIB_F_EXACT_METRIC | FIB_F_EXACT;
	if (r->nh && r->nh->id) {
		rc->nh_id = r->nh->id;
	} else if (r->nh) {
		rc->n_paths = r->nh->info->n;
		memcpy(paths, r->nh->info->path, rc->n_paths * sizeof(*paths));
		for (unsigned int i = 0; i < rc->n_paths; i++)
			paths[i].member = NULL;
		rc->paths = paths;
	}
}

/* Marks @rc's key as announced in this generation. */
static void feed_mark(struct feed *f, const struct fib_rcfg *rc)
{
	struct feed_key k;

	feed_key_of(&k, rc);
	if (feed_set_mark(&f->set, &k, f->gen))
		feed_error(f, &f->apply_errors, "out of memory for the feed's route set");
}

static void feed_applied(struct feed *f)
{
	feed_inc(&f->route_updates, 1);
	ingest_count(f->d->ingest, 1, 0);
}

static void feed_refused(struct feed *f, const struct errbuf *err)
{
	feed_error(f, &f->apply_errors, "%s", err->msg);
	ingest_count(f->d->ingest, 0, 1);
}

/* fib_route_add_undo() of @rc with FIB_F_* @flags, counted. */
static int feed_fib_add_once(struct feed *f, struct fib_rcfg *rc, unsigned int flags, bool *changed,
			     struct errbuf *err)
{
	struct fib *fib = f->d->fib;
	struct fib_undo u;
	int ret;

	err_clear(err);
	rc->flags = flags;
	ret = fib_route_add_undo(fib, rc, &u, err);
	if (ret)
		return ret;
	/* A record says whether a route went in and whether one came out. */
	if (u.has_added && !u.has_removed)
		feed_inc(&f->routes, 1);
	*changed = u.has_added || u.has_removed;
	fib_undo_release(fib, &u);
	return 0;
}

/*
 * The route of @rc's prefix and metric whose type and nexthop are @rc's
 * (the FIB's identity of a route) but whose protocol or scope are not:
 * its index in @v, or @n.
 */
static unsigned int feed_conflict_of(const struct fib_route *v, unsigned int n,
				     const struct fib_rcfg *rc)
{
	for (unsigned int i = 0; i < n; i++) {
		struct fib_rcfg same = *rc;

		same.proto = v[i].proto;
		same.scope = v[i].scope;
		if (feed_route_is(&v[i], &same) && !feed_route_is(&v[i], rc))
			return i;
	}
	return n;
}

static int feed_fib_del(struct feed *f, const struct fib_rcfg *like, const struct fib_route *r);
/*
 * Adds @rc with FIB_F_* @flags, counted; marks its key. The FIB knows a
 * route by its type and nexthop: one that differs from @rc only in its
 * protocol or scope makes the add a no-op (a replace) or -EEXIST; it then
 * goes, and @rc is added after the others of its metric (the one place
 * where readers may miss a prefix for a moment: the FIB has no edit that
 * changes a route's protocol alone). Returns
 * fib_route_add()'s result.
 */
static int feed_fib_add(struct feed *f, struct fib_rcfg *rc, unsigned int flags)
{
	struct fib_route v[TRIE_LEAF_MAX];
	bool changed = true;
	struct errbuf err;
	unsigned int n, i;
	int ret;

	ret = feed_fib_add_once(f, rc, flags, &changed, &err);
	if ((ret == -EEXIST && !(flags & FIB_F_EXCL)) || (!ret && !changed)) {
		n = feed_view(f, rc, v);
		i = feed_conflict_of(v, n, rc);
		if (i < n && feed_fib_del(f, rc, &v[i]) == 0)
			ret = feed_fib_add_once(f, rc, FIB_F_CREATE | (flags & FIB_F_APPEND),
						&changed, &err);
	}
	if (ret == -EEXIST && !(flags & FIB_F_EXCL)) {
		/*
		 * The very route is there: announced again, as zebra's replay
		 * does with IPv6 routes, which it adds without NLM_F_REPLACE.
		 * It stays, and counts as announced in this generation.
		 */
		feed_mark(f, rc);
		feed_inc(&f->skipped, 1);
		return 0;
	}
	if (ret) {
		feed_refused(f, &err);
		return ret;
	}
	feed_mark(f, rc);
	feed_applied(f);
	return 0;
}

/* Deletes the FIB's route @r of @like's prefix, counted. */
static int feed_fib_del(struct feed *f, const struct fib_rcfg *like, const struct fib_route *r)
{
	struct nh_path paths[NH_MAX_PATHS];
	struct fib_rcfg rc;
	struct errbuf err;
	int ret;

	err_clear(&err);
	feed_rcfg_of(&rc, like, r, paths);
	ret = fib_route_del(f->d->fib, &rc, &err);
	if (ret)
		return ret;
	feed_dec(&f->routes, 1);
	feed_applied(f);
	return 0;
}

/* The index in @v of the first route of @metric, or @n. */
static unsigned int feed_first_of(const struct fib_route *v, unsigned int n, uint32_t metric)
{
	unsigned int i = 0;

	while (i < n && v[i].metric != metric)
		i++;
	return i;
}

/* The index in @v of the IPv6 route of @metric that gateway routes merge into, or @n. */
static unsigned int feed_gw6_of(const struct fib_route *v, unsigned int n, uint32_t metric)
{
	for (unsigned int i = 0; i < n; i++) {
		if (v[i].metric == metric && fib_route_merges6(&v[i]))
			return i;
	}
	return n;
}

/*
 * When @rc holds every path of the FIB's route @r as it is (weight and
 * flags), with @r's protocol and scope: the number of its other paths,
 * copied to @add in their order. Otherwise -1.
 */
static int feed_paths_beyond(const struct fib_route *r, const struct fib_rcfg *rc,
			     struct nh_path *add)
{
	const struct nh_info *info = r->nh->info;
	unsigned int k = 0, held = 0;

	if (r->proto != rc->proto || r->scope != rc->scope)
		return -1;
	for (unsigned int i = 0; i < rc->n_paths; i++) {
		unsigned int j = 0;

		while (j < info->n && !nh_path_same(&rc->paths[i], &info->path[j]))
			j++;
		if (j == info->n)
			add[k++] = rc->paths[i];
		else if (!feed_path_eq(&rc->paths[i], &info->path[j]))
			return -1;
		else
			held++;
	}
	return held == info->n ? (int)k : -1;
}

/*
 * An IPv6 gateway route announced other than by a replace: the whole of
 * its prefix and metric's merged route. When it holds the FIB's route
 * and more, the new paths are added: the FIB merges them last, where
 * `ip -6 route` lists them (the kernel's message lists the new sibling
 * first). Held already, it was announced again (zebra's replay); any
 * other difference (zebra sends whole routes) replaces the FIB's route.
 */
static void feed_route6_add(struct feed *f, struct fib_rcfg *rc, unsigned int flags)
{
	struct fib_route v[TRIE_LEAF_MAX];
	struct nh_path add[NH_MAX_PATHS];
	unsigned int n = feed_view(f, rc, v), i = feed_gw6_of(v, n, rc->metric);
	struct fib_rcfg more;
	int k;

	if (i == n) {
		feed_fib_add(f, rc, flags);
		return;
	}
	k = feed_paths_beyond(&v[i], rc, add);
	if (k == 0) {
		feed_mark(f, rc);
		feed_inc(&f->skipped, 1);
		return;
	}
	if (k < 0) {
		feed_fib_add(f, rc, FIB_F_CREATE | FIB_F_REPLACE);
		return;
	}
	more = *rc;
	more.paths = add;
	more.n_paths = (unsigned int)k;
	feed_fib_add(f, &more, FIB_F_CREATE | FIB_F_APPEND);
}

static bool feed_held_elsewhere(const struct feed *f, const struct fib_rcfg *rc);
static void feed_shadowed(struct feed *f, const struct fib_rcfg *rc);

static void feed_route_add(struct feed *f, struct rtnl_route *r)
{
	unsigned int flags = feed_add_flags(r->rc.flags);

	if (feed_held_elsewhere(f, &r->rc)) {
		feed_shadowed(f, &r->rc);
		return;
	}

	if (!(flags & FIB_F_REPLACE) && fib_rcfg_merges6(&r->rc))
		feed_route6_add(f, &r->rc, flags);
	else
		feed_fib_add(f, &r->rc, flags);
}

static bool feed_owns(const struct feed *f, const struct fib_rcfg *like, uint32_t metric);

/*
 * Whether the delete @rc is of a key the feed owns. Metric 0 matches any
 * metric in a delete (as in the kernel): it then names the first route of
 * the prefix whose key the feed owns, made exact so that another source's
 * route of another metric is not the one that goes.
 */
static bool feed_owns_del(const struct feed *f, struct fib_rcfg *rc)
{
	const struct fib_route *r;
	unsigned int n = 0;

	if (feed_owns(f, rc, rc->metric)) {
		rc->flags |= FIB_F_EXACT_METRIC;
		return true;
	}
	if (rc->metric)
		return false;
	r = fib_find_rcu(f->d->fib, rc->table ? rc->table : FIB_TABLE_MAIN, &rc->dst, &n);
	for (unsigned int i = 0; r && i < n; i++) {
		if (feed_owns(f, rc, r[i].metric)) {
			rc->metric = r[i].metric;
			rc->flags |= FIB_F_EXACT_METRIC;
			return true;
		}
	}
	return false;
}

/* A delete as the kernel announced it: an IPv6 sibling's takes its path out of the route. */
static void feed_route_del(struct feed *f, struct rtnl_route *r, struct errbuf *err)
{
	struct fib_undo u;
	int ret;

	r->rc.flags = 0;
	if (!feed_owns_del(f, &r->rc)) {
		/* Not ours (another source's, or gone): left alone. */
		feed_inc(&f->skipped, 1);
		return;
	}
	ret = fib_route_del_undo(f->d->fib, &r->rc, &u, err);
	if (ret == -ESRCH) {
		/* Already gone (a flush, a sweep, or a route we never had). */
		feed_inc(&f->skipped, 1);
		return;
	}
	if (ret) {
		feed_refused(f, err);
		return;
	}
	/* A route less, unless what is left of it went back in. */
	if (!u.has_added)
		feed_dec(&f->routes, 1);
	fib_undo_release(f->d->fib, &u);
	feed_applied(f);
}

/* --------------------------------------------------------------- dumps */

/*
 * The routes a dump lists of one prefix come one after the other (both
 * families' dumps walk their tries prefix by prefix, every metric of a
 * prefix together), so they are gathered here until the next prefix and
 * then reconciled with what the FIB holds of it: a route held as listed
 * stays untouched, one missing is added (in the place of a stale one of
 * its metric when there is one, atomically), and then the routes the dump
 * did not list go, of the keys the feed owns. Readers never see the
 * prefix missing while the kernel has it. An IPv6 dump the kernel
 * restarted may list a prefix twice; such a dump is redone anyway
 * (feed_kernel.c), and the prefix's routes are reconciled again.
 */
struct feed_pending {
	struct rtnl_route *r;
	unsigned int n, cap;
};

static bool feed_same_prefix(const struct fib_rcfg *a, const struct fib_rcfg *b)
{
	return (a->table ? a->table : FIB_TABLE_MAIN) == (b->table ? b->table : FIB_TABLE_MAIN) &&
	       a->dst.plen == b->dst.plen && a->dst.a.family == b->dst.a.family &&
	       memcmp(a->dst.a.b, b->dst.a.b, 16) == 0;
}

/* Whether the FIB's route @r is one of the pending ones. */
static bool feed_pending_has(const struct feed_pending *p, const struct fib_route *r)
{
	for (unsigned int i = 0; i < p->n; i++) {
		if (feed_route_is(r, &p->r[i].rc))
			return true;
	}
	return false;
}

static bool feed_owns(const struct feed *f, const struct fib_rcfg *like, uint32_t metric)
{
	struct feed_key k;
	struct fib_rcfg rc = *like;

	if (!f->set.cap)
		return false;
	rc.metric = metric;
	feed_key_of(&k, &rc);
	return feed_set_slot(&f->set, &k)->gen != 0;
}

/* Whether the FIB has a route of @rc's key (table, prefix, metric). */
static bool feed_fib_has_key(const struct feed *f, const struct fib_rcfg *rc)
{
	const struct fib_route *r;
	unsigned int n = 0;

	r = fib_find_rcu(f->d->fib, rc->table ? rc->table : FIB_TABLE_MAIN, &rc->dst, &n);
	for (unsigned int i = 0; r && i < n; i++) {
		if (r[i].metric == rc->metric)
			return true;
	}
	return false;
}

/*
 * Whether another source holds @rc's key (table, prefix, metric): the FIB
 * has a route of it that @f does not own. A key has one owner, the first
 * source whose route went in (docs/DAEMON.md, "Ownership"); a feed leaves
 * the others' keys alone.
 */
static bool feed_held_elsewhere(const struct feed *f, const struct fib_rcfg *rc)
{
	return !feed_owns(f, rc, rc->metric) && feed_fib_has_key(f, rc);
}

/* A route of a key another source holds: not applied, counted, said in the log's debug. */
static void feed_shadowed(struct feed *f, const struct fib_rcfg *rc)
{
	char p[ADDR_STRLEN + 4];

	feed_inc(&f->skipped, 1);
	if (log_get_level() >= LOG_DEBUG) {
		addr_prefix_format(&rc->dst, p, sizeof(p));
		log_debug("%s feed: %s table %u metric %u is held by another source: left alone",
			  f->name, p, rc->table ? rc->table : FIB_TABLE_MAIN, rc->metric);
	}
}

/* Makes the FIB hold of one prefix what the dump listed of it (see above). */
static void feed_pending_flush(struct feed *f)
{
	struct feed_pending *p = f->pending;
	struct fib_route v[TRIE_LEAF_MAX];
	unsigned int n, i;
	bool owned;

	if (!p || !p->n)
		return;
	for (unsigned int d = 0; d < p->n; d++) {
		struct fib_rcfg *rc = &p->r[d].rc;

		rc->paths = p->r[d].paths;
		if (feed_held_elsewhere(f, rc)) {
			feed_shadowed(f, rc);
			continue;
		}
		n = feed_view(f, rc, v);
		for (i = 0; i < n && !feed_route_is(&v[i], rc); i++)
			;
		if (i < n) {
			feed_mark(f, rc);
			continue;
		}
		if (fib_rcfg_merges6(rc)) {
			/* Its metric's merged route, whole: replaces the FIB's, or merges. */
			i = feed_gw6_of(v, n, rc->metric);
			owned = i < n && feed_owns(f, rc, rc->metric);
		} else if (rc->dst.a.family == AF_INET) {
			/* In a stale route's place (a replace takes the first of the metric). */
			i = feed_first_of(v, n, rc->metric);
			owned = i < n && !feed_pending_has(p, &v[i]) &&
				feed_owns(f, rc, rc->metric);
		} else {
			owned = false; /* an IPv6 replace may take another: after them, then */
		}
		feed_fib_add(f, rc, FIB_F_CREATE | (owned ? FIB_F_REPLACE : FIB_F_APPEND));
	}
	/* What the dump did not list goes; one at a time, the view changing with each. */
	for (;;) {
		n = feed_view(f, &p->r[0].rc, v);
		for (i = 0; i < n; i++) {
			if (!feed_pending_has(p, &v[i]) && feed_owns(f, &p->r[0].rc, v[i].metric))
				break;
		}
		if (i == n || feed_fib_del(f, &p->r[0].rc, &v[i]))
			break;
	}
	p->n = 0;
}

/* Gathers a dumped route of the prefix being dumped (or of the next one). */
static void feed_pending_add(struct feed *f, const struct rtnl_route *r)
{
	struct feed_pending *p = f->pending;

	if (!p) {
		p = f->pending = calloc(1, sizeof(*p));
		if (!p)
			goto nomem;
	}
	if (p->n && !feed_same_prefix(&p->r[0].rc, &r->rc))
		feed_pending_flush(f);
	if (p->n == p->cap) {
		unsigned int cap = p->cap ? p->cap * 2 : 4;
		struct rtnl_route *nr;

		if (cap > TRIE_LEAF_MAX) {
			feed_error(f, &f->apply_errors, "more than %u routes of one prefix",
				   TRIE_LEAF_MAX);
			return;
		}
		nr = realloc(p->r, cap * sizeof(*nr));
		if (!nr)
			goto nomem;
		p->r = nr;
		p->cap = cap;
	}
	p->r[p->n++] = *r;
	return;
nomem:
	feed_error(f, &f->apply_errors, "out of memory gathering a dumped prefix");
}

/* --------------------------------------- objects that routes wait for */

/*
 * During a dump or a replay, objects can come after what needs them.
 * zebra's replay walks its hash of nexthop groups, so a group may come
 * before some of its members; and zebra goes on sending the routes it
 * learns while its replay has not yet sent their groups. The kernel
 * dumps objects in id order, a group before members of higher ids. The
 * FIB (like the kernel) would refuse both. So, while a sync runs, such a
 * group waits here until the feed holds all its members, and such a
 * route waits for its object (whose record stays unknown until it comes);
 * when the object goes in, so do its routes, in the order they came. A
 * new sync drops what waits (the dump or replay sends it again); the end
 * of one drops what still waits as errors: an object or a member that
 * never came. Outside syncs sources send objects first, and a reference
 * to a missing one is an error at once, as in the kernel. The state
 * shows what waits (waiting-nexthop-objects, waiting-routes).
 */

/* A reference to an object that does not exist while a sync runs, from a route or a group. */
struct feed_wait_obj {
	struct feed_wait_obj *next;
	struct feed_wait_route *routes, **tail; /* in the order they came */
	uint64_t n_routes;
	bool known; /* cfg came: a group that waits for members; else only routes named it */
	struct nh_obj_cfg cfg;
};

/* More than this is a peer gone wrong, not a replay: refused, counted. */
#define FEED_WAIT_OBJS_MAX   65536
#define FEED_WAIT_ROUTES_MAX (4u << 20)

static bool feed_ids_has(const struct feed_ids *s, uint32_t id)
{
	return s->cap && s->gen[feed_ids_slot(s, id) - s->id];
}

/* The first member of @c the feed does not hold, or 0 when it holds them all. */
static uint32_t feed_group_missing(const struct feed *f, const struct nh_obj_cfg *c)
{
	for (unsigned int i = 0; i < c->n_members; i++) {
		if (!feed_ids_has(&f->ids, c->member[i].id))
			return c->member[i].id;
	}
	return 0;
}

static bool feed_group_names(const struct nh_obj_cfg *c, uint32_t id)
{
	for (unsigned int i = 0; i < c->n_members; i++) {
		if (c->member[i].id == id)
			return true;
	}
	return false;
}

static struct feed_wait_obj **feed_wait_find(struct feed *f, uint32_t id)
{
	struct feed_wait_obj **po = &f->waiting;

	while (*po && (*po)->cfg.id != id)
		po = &(*po)->next;
	return po;
}

static void feed_wait_counts(struct feed *f)
{
	uatomic_set(&f->wait_objects, (uint64_t)f->n_waiting);
	uatomic_set(&f->wait_routes, (uint64_t)f->wait_keys.n);
}

/* Whether @w is still the latest update of its key; the key is forgotten if so. */
static bool feed_wait_take_key(struct feed *f, const struct feed_wait_route *w)
{
	struct feed_key k, *slot;

	if (!f->wait_keys.n)
		return false;
	feed_key_of(&k, &w->rc);
	slot = feed_set_slot(&f->wait_keys, &k);
	if (slot->gen != w->seq)
		return false;
	feed_set_remove_at(&f->wait_keys, (size_t)(slot - f->wait_keys.k));
	return true;
}

/* A later update of @rc's key supersedes the route waiting there, if any. */
static void feed_wait_supersede(struct feed *f, const struct fib_rcfg *rc)
{
	struct feed_key k, *slot;

	if (!f->wait_keys.n)
		return;
	feed_key_of(&k, rc);
	slot = feed_set_slot(&f->wait_keys, &k);
	if (!slot->gen)
		return;
	feed_set_remove_at(&f->wait_keys, (size_t)(slot - f->wait_keys.k));
	feed_wait_counts(f);
}

/* Unlinks *@po and frees it; returns how many of its routes were still waiting. */
static uint64_t feed_wait_remove(struct feed *f, struct feed_wait_obj **po)
{
	struct feed_wait_obj *o = *po;
	struct feed_wait_route *w, *next;
	uint64_t live = 0;

	*po = o->next;
	f->n_waiting--;
	for (w = o->routes; w; w = next) {
		next = w->next;
		live += feed_wait_take_key(f, w);
		free(w);
	}
	f->n_wait_records -= o->n_routes;
	free(o);
	feed_wait_counts(f);
	return live;
}

/* The record of @id, made (unknown) if there is none; NULL (counted) when full. */
static struct feed_wait_obj *feed_wait_get(struct feed *f, uint32_t id)
{
	struct feed_wait_obj *o = *feed_wait_find(f, id);

	if (o)
		return o;
	if (f->n_waiting >= FEED_WAIT_OBJS_MAX) {
		feed_error(f, &f->apply_errors,
			   "nexthop id %u does not exist, and %u others are awaited already: "
			   "refused",
			   id, f->n_waiting);
		return NULL;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		feed_error(f, &f->apply_errors, "out of memory awaiting nexthop id %u", id);
		return NULL;
	}
	o->cfg.id = id;
	o->tail = &o->routes;
	o->next = f->waiting;
	f->waiting = o;
	f->n_waiting++;
	feed_wait_counts(f);
	return o;
}

/* @cfg names a member the feed does not hold (@missing): it waits. */
static void feed_wait_group(struct feed *f, const struct nh_obj_cfg *cfg, uint32_t missing)
{
	struct feed_wait_obj *o = feed_wait_get(f, cfg->id);

	if (!o)
		return;
	if (!o->known)
		f->waited_groups++;
	o->cfg = *cfg;
	o->known = true;
	if (log_get_level() >= LOG_DEBUG)
		log_debug("%s feed: nexthop group %u waits for member %u", f->name, cfg->id,
			  missing);
}

/*
 * A route through an object that does not exist, while a sync runs: it
 * waits for it (true). False when @rc can go in now, or fail as it is.
 */
static bool feed_wait_route(struct feed *f, const struct fib_rcfg *rc)
{
	struct feed_wait_obj *o;
	struct feed_wait_route *w;
	struct feed_key k;

	if (!f->syncing || !rc->nh_id || feed_ids_has(&f->ids, rc->nh_id))
		return false;
	if (f->n_wait_records >= FEED_WAIT_ROUTES_MAX) {
		feed_error(f, &f->apply_errors,
			   "a route through nexthop id %u, which does not exist yet: %u routes "
			   "wait already: refused",
			   rc->nh_id, FEED_WAIT_ROUTES_MAX);
		return true;
	}
	o = feed_wait_get(f, rc->nh_id);
	w = o ? malloc(sizeof(*w)) : NULL;
	if (!w) {
		if (o)
			feed_error(f, &f->apply_errors, "out of memory for a waiting route");
		return true;
	}
	w->next = NULL;
	w->rc = *rc;
	w->rc.paths = NULL;
	w->rc.n_paths = 0;
	if (!++f->wait_seq) /* 0 means an empty slot */
		f->wait_seq = 1;
	w->seq = f->wait_seq;
	feed_key_of(&k, rc);
	if (feed_set_mark(&f->wait_keys, &k, w->seq)) {
		free(w);
		feed_error(f, &f->apply_errors, "out of memory for a waiting route");
		return true;
	}
	*o->tail = w;
	o->tail = &w->next;
	o->n_routes++;
	f->n_wait_records++;
	f->waited_routes++;
	feed_wait_counts(f);
	return true;
}

/*
 * Drops what waits. @why NULL: silently (a new sync sends it again, or
 * the feed is off); else each object and route is an apply error, and
 * the log says what never came.
 */
static void feed_wait_drop(struct feed *f, const char *why)
{
	while (f->waiting) {
		uint32_t id = f->waiting->cfg.id, missing = feed_group_missing(f, &f->waiting->cfg);
		bool known = f->waiting->known;
		unsigned long long live = feed_wait_remove(f, &f->waiting);

		if (!why)
			continue;
		if (known)
			feed_error(f, &f->apply_errors,
				   "nexthop group %u: member %u never came (%s); dropped with the "
				   "%llu routes through it",
				   id, missing, why, live);
		else
			feed_error(f, &f->apply_errors,
				   "nexthop id %u never came (%s); dropped the %llu routes through "
				   "it",
				   id, why, live);
		feed_inc(&f->apply_errors, live);
	}
}

/* ------------------------------------------------------------- messages */

enum feed_msg_kind {
	FEED_MSG_NONE,  /* skipped or malformed: counted */
	FEED_MSG_DUMP,  /* a route a dump lists: see feed_pending_flush() */
	FEED_MSG_EVENT, /* an add or delete to apply */
};

/* Decodes a route message into @r, counting what it skips; nothing else changes. */
static enum feed_msg_kind feed_route_decode(struct feed *f, const struct nlmsghdr *nlh,
					    struct rtnl_route *r)
{
	struct errbuf err;
	int ret = rtnl_decode_route(nlh, r, &err);

	if (ret == -EAFNOSUPPORT) {
		feed_inc(&f->skipped, 1);
		return FEED_MSG_NONE;
	}
	if (ret) {
		feed_error(f, &f->decode_errors, "%s", err.msg);
		return FEED_MSG_NONE;
	}
	r->rc.paths = r->paths;
	if ((r->rtm_flags & RTM_F_CLONED) ||
	    !feed_wants_table(f, r->rc.table ? r->rc.table : FIB_TABLE_MAIN)) {
		feed_inc(&f->skipped, 1);
		return FEED_MSG_NONE;
	}
	/* A dump's message (NLM_F_MULTI) carries no request flags: see feed_pending_flush(). */
	if (!r->del && (nlh->nlmsg_flags & NLM_F_MULTI))
		return FEED_MSG_DUMP;
	return FEED_MSG_EVENT;
}

static void feed_route_apply(struct feed *f, struct rtnl_route *r)
{
	struct errbuf err;

	feed_pending_flush(f);
	feed_wait_supersede(f, &r->rc);
	if (r->del)
		feed_route_del(f, r, &err);
	else if (!feed_wait_route(f, &r->rc))
		feed_route_add(f, r);
}

/*
 * zebra sends a route's update as its RTM_DELROUTE and then the new
 * RTM_NEWROUTE, in one frame (dplane_fpm_nl). Applied one after the other,
 * the prefix would be missing from the FIB between the two, and lookups
 * would fall to a shorter prefix (or none); and the delete costs a trie
 * edit of its own. Whether the delete @d, followed at once by the add
 * @n, can be left out, the add alone making the FIB what both would:
 * the same key (table, prefix, metric), the feed's; an add that replaces
 * the key's route (not an IPv6 sibling appended or prepended), goes in
 * now (no nexthop object to wait for) and finds at most one route of the
 * key, which the delete would take out (or find nothing to take) and the
 * replace takes out just the same.
 */
static bool feed_del_replaced(struct feed *f, const struct rtnl_route *d,
			      const struct rtnl_route *n)
{
	uint32_t table = d->rc.table ? d->rc.table : FIB_TABLE_MAIN;
	const struct fib_route *r;
	unsigned int nr = 0, same = 0;

	if (!feed_same_prefix(&d->rc, &n->rc) || d->rc.metric != n->rc.metric ||
	    !(feed_add_flags(n->rc.flags) & FIB_F_REPLACE) ||
	    (f->syncing && n->rc.nh_id && !feed_ids_has(&f->ids, n->rc.nh_id)) ||
	    !feed_owns(f, &d->rc, d->rc.metric))
		return false;
	r = fib_find_rcu(f->d->fib, table, &d->rc.dst, &nr);
	for (unsigned int i = 0; r && i < nr; i++)
		same += r[i].metric == d->rc.metric;
	return same <= 1;
}

/* Sets object @c (a mirror replaces what it had) and marks it the feed's. */
static int feed_nh_set(struct feed *f, const struct nh_obj_cfg *c, struct errbuf *err)
{
	/* Dumps carry no flags; a mirror replaces what it had. */
	int ret = fib_nh_set(f->d->fib, c, FIB_F_CREATE | FIB_F_REPLACE, err);

	if (ret) {
		feed_error(f, &f->apply_errors, "%s", err->msg);
		return ret;
	}
	if (feed_ids_mark(&f->ids, c->id, f->gen))
		feed_error(f, &f->apply_errors, "out of memory for the feed's nexthop set");
	uatomic_set(&f->nexthops, f->ids.n);
	return 0;
}

/* Object @c went in or failed (counted): the routes that waited for it follow. */
static void feed_wait_apply(struct feed *f, struct feed_wait_obj **po)
{
	struct feed_wait_route *w;
	struct rtnl_route r;

	for (w = (*po)->routes; w; w = w->next) {
		if (!feed_wait_take_key(f, w))
			continue; /* superseded */
		memset(&r, 0, sizeof(r));
		r.rc = w->rc;
		/* Fails, counted, if the object did not go in. */
		feed_route_add(f, &r);
	}
	feed_wait_remove(f, po);
}

/* Object @id came: the waiting groups it completes go in, then their routes. */
static void feed_wait_release(struct feed *f, uint32_t id, struct errbuf *err)
{
	struct feed_wait_obj **po = &f->waiting;

	while (*po) {
		struct feed_wait_obj *o = *po;

		if (!o->known || !feed_group_names(&o->cfg, id) || feed_group_missing(f, &o->cfg)) {
			po = &o->next;
			continue;
		}
		feed_nh_set(f, &o->cfg, err);
		feed_wait_apply(f, po);
	}
}

static void feed_nexthop(struct feed *f, const struct nlmsghdr *nlh)
{
	struct feed_wait_obj **po;
	struct rtnl_nexthop n;
	struct errbuf err;
	uint32_t missing;
	int ret = rtnl_decode_nexthop(nlh, &n, &err);

	if (ret == -EAFNOSUPPORT) {
		feed_inc(&f->skipped, 1);
		return;
	}
	if (ret) {
		feed_error(f, &f->decode_errors, "%s", err.msg);
		return;
	}
	po = feed_wait_find(f, n.cfg.id);
	if (n.del) {
		/* As in the kernel, the routes through it go with it. */
		if (*po)
			feed_wait_remove(f, po);
		ret = fib_nh_del(f->d->fib, n.cfg.id, &err);
		if (!ret) {
			feed_ids_forget(&f->ids, n.cfg.id);
			uatomic_set(&f->nexthops, f->ids.n);
		} else if (ret != -ENOENT) {
			feed_error(f, &f->apply_errors, "%s", err.msg);
		}
		return;
	}
	missing = f->syncing ? feed_group_missing(f, &n.cfg) : 0;
	if (missing) {
		feed_wait_group(f, &n.cfg, missing);
		return;
	}
	ret = feed_nh_set(f, &n.cfg, &err);
	if (*po)
		feed_wait_apply(f, po);
	if (!ret && !n.cfg.n_members && f->waiting)
		feed_wait_release(f, n.cfg.id, &err);
}

/*
 * Applies the messages of @buf in order. A route's delete waits for the
 * next message: an add that replaces it is applied alone
 * (feed_del_replaced()), and the delete after it only if the FIB refused
 * the add, which then changed nothing.
 */
static void feed_apply_msgs(struct feed *f, const uint8_t *buf, size_t len)
{
	struct rtnl_route r[2], *held = NULL;
	const struct nlmsghdr *nlh;
	struct errbuf err;
	size_t off = 0;
	int ret;

	while ((ret = rtnl_next(buf, len, &off, &nlh, &err)) == 0) {
		struct rtnl_route *cur = held == &r[0] ? &r[1] : &r[0], *del = NULL;
		enum feed_msg_kind kind = FEED_MSG_NONE;
		uint64_t refused;

		feed_inc(&f->messages, 1);
		if (nlh->nlmsg_type == RTM_NEWROUTE || nlh->nlmsg_type == RTM_DELROUTE)
			kind = feed_route_decode(f, nlh, cur);
		if (held) {
			if (kind == FEED_MSG_EVENT && !cur->del && feed_del_replaced(f, held, cur))
				del = held;
			else
				feed_route_apply(f, held);
			held = NULL;
		}
		switch (kind) {
		case FEED_MSG_EVENT:
			if (cur->del) {
				held = cur;
				break;
			}
			refused = uatomic_read(&f->apply_errors);
			feed_route_apply(f, cur);
			/* An add the FIB refused changed nothing: its delete applies as sent. */
			if (del && uatomic_read(&f->apply_errors) != refused)
				feed_route_apply(f, del);
			else if (del)
				feed_inc(&f->coalesced, 1);
			break;
		case FEED_MSG_DUMP:
			feed_pending_add(f, cur);
			break;
		case FEED_MSG_NONE:
			if (nlh->nlmsg_type == RTM_NEWNEXTHOP ||
			    nlh->nlmsg_type == RTM_DELNEXTHOP) {
				feed_pending_flush(f);
				feed_nexthop(f, nlh);
			}
			/* Links, addresses, NLMSG_DONE: the loop's business. */
			break;
		}
	}
	if (held)
		feed_route_apply(f, held);
	if (ret != -ENODATA)
		feed_error(f, &f->decode_errors, "%s", err.msg);
}

/* Deletes every route of @k; returns how many went. */
static uint64_t feed_key_delete(struct feed *f, const struct feed_key *k)
{
	struct fib_rcfg rc;
	uint64_t n = 0;

	memset(&rc, 0, sizeof(rc));
	rc.dst.a.family = k->family;
	memcpy(rc.dst.a.b, k->addr, 16);
	rc.dst.plen = k->plen;
	rc.table = k->table;
	rc.metric = k->metric;
	rc.flags = FIB_F_EXACT_METRIC;
	while (fib_route_del(f->d->fib, &rc, NULL) == 0)
		n++;
	return n;
}

/*
 * Removes what generation @keep did not announce (all of it when @keep is 0:
 * the feed was turned off, and that counts in flushed, not swept).
 */
static void feed_sweep(struct feed *f, uint32_t keep)
{
	uint64_t routes = 0, objects = 0;
	struct errbuf err;

	for (size_t i = 0; i < f->set.cap;) {
		struct feed_key *k = &f->set.k[i];

		if (!k->gen || k->gen == keep) {
			i++;
			continue;
		}
		routes += feed_key_delete(f, k);
		/* Removing shifts a later key into slot i: look at it again. */
		feed_set_remove_at(&f->set, i);
	}
	for (size_t i = 0; i < f->ids.cap; i++) {
		uint32_t id = f->ids.id[i];

		if (!f->ids.gen[i] || f->ids.gen[i] == keep)
			continue;
		if (fib_nh_del(f->d->fib, id, &err) == 0)
			objects++;
		feed_ids_forget(&f->ids, id);
		i = (size_t)-1; /* the table moved: start over (sweeps are rare) */
	}
	feed_dec(&f->routes, routes > f->routes ? f->routes : routes);
	uatomic_set(&f->nexthops, f->ids.n);
	feed_inc(keep ? &f->swept : &f->flushed, routes + objects);
	if (routes + objects)
		log_notice("%s feed: %s %llu routes and %llu nexthop objects%s", f->name,
			   keep ? "swept" : "flushed", (unsigned long long)routes,
			   (unsigned long long)objects,
			   keep ? " not announced again" : ": the feed is off");
}

/*
 * What a sync's begin and end, a cut and a flush share: the last prefix a
 * dump listed is applied, and what waits for nexthop objects is dropped:
 * logged and counted as lost when @why says why, quietly when it comes
 * again (@why NULL).
 */
static void feed_settle(struct feed *f, const char *why)
{
	feed_pending_flush(f);
	feed_wait_drop(f, why);
	if (why && (f->waited_routes || f->waited_groups))
		log_info("%s feed: in this dump or replay %llu routes and %llu groups came "
			 "before their nexthop objects and waited for them",
			 f->name, (unsigned long long)f->waited_routes,
			 (unsigned long long)f->waited_groups);
	f->waited_routes = f->waited_groups = 0;
}

/* The sync, if one runs, is over: the FIB leaves its bulk mode. */
static void feed_sync_leave(struct feed *f)
{
	if (f->syncing)
		fib_bulk_end(f->d->fib);
	uatomic_set(&f->syncing, false);
}

static void feed_job_run(struct lcfibd *d, struct writer_job *wj)
{
	struct feed_job *j = (struct feed_job *)wj;
	struct feed *f = j->f;

	if (!f->listed) {
		/* Listed by the writer, which alone reads the list (feed_claim()). */
		f->next = d->feeds;
		d->feeds = f;
		f->listed = true;
	}
	switch (j->kind) {
	case FEED_JOB_MSGS:
		feed_apply_msgs(f, j->data, j->len);
		break;
	case FEED_JOB_SYNC_BEGIN:
		feed_settle(f, NULL); /* the dump or replay sends again what waits */
		/* A dump or replay is a large load: the tries resize once, at its end. */
		if (!f->syncing)
			fib_bulk_begin(f->d->fib);
		uatomic_set(&f->syncing, true);
		f->gen++;
		if (!f->gen) /* 0 means an empty slot */
			f->gen = 1;
		break;
	case FEED_JOB_SYNC_END:
		feed_settle(f, "by the end of a dump or replay");
		feed_sweep(f, f->gen);
		feed_sync_leave(f);
		break;
	case FEED_JOB_SYNC_CUT:
		feed_settle(f, NULL); /* sent again by the next sync */
		feed_sync_leave(f);
		break;
	case FEED_JOB_FLUSH:
		feed_settle(f, NULL);
		feed_sweep(f, 0);
		feed_sync_leave(f);
		uatomic_set(&f->routes, 0);
		break;
	case FEED_JOB_TABLES:
		free(f->tables);
		f->n_tables = (unsigned int)(j->len / sizeof(uint32_t));
		f->tables = f->n_tables ? malloc(j->len) : NULL;
		if (f->tables)
			memcpy(f->tables, j->data, j->len);
		else
			f->n_tables = 0;
		break;
	}
}

static void feed_job_done(struct lcfibd *d, struct writer_job *wj)
{
	struct feed_job *j = (struct feed_job *)wj;
	struct feed *f = j->f;

	(void)d;
	if (j->kind == FEED_JOB_MSGS)
		f->queued -= j->len;
	if (j->spare && f->n_spares < FEED_SPARES)
		f->spares[f->n_spares++] = j;
	else
		free(j);
	if (f->drain_wait && f->queued <= FEED_BACKLOG_MAX / 2) {
		f->drain_wait = false;
		f->drained(f->drained_ctx);
	}
}

static int feed_queue(struct feed *f, enum feed_job_kind kind, const void *data, size_t len)
{
	struct feed_job *j;
	bool spare;

	/*
	 * The writer has stopped: lcfibd is exiting, and a feed closing its
	 * peer (an FPM peer's sweep) changes a FIB that goes with it.
	 */
	if (!f->d->writer)
		return 0;
	spare = kind == FEED_JOB_MSGS && len >= FEED_SPARE_MIN && len <= FEED_SPARE_SIZE;
	if (spare && f->n_spares)
		j = f->spares[--f->n_spares];
	else
		j = malloc(sizeof(*j) + (spare ? FEED_SPARE_SIZE : len));
	if (!j) {
		feed_error(f, &f->apply_errors, "out of memory queueing %zu bytes", len);
		return -ENOMEM;
	}
	memset(j, 0, sizeof(*j));
	j->job.run = feed_job_run;
	j->job.done = feed_job_done;
	j->f = f;
	j->kind = kind;
	j->spare = spare;
	j->len = len;
	if (len)
		memcpy(j->data, data, len);
	if (kind == FEED_JOB_MSGS)
		f->queued += len;
	writer_submit(f->d->writer, &j->job);
	return 0;
}

/* ------------------------------------------------------------ the API */

int feed_claim(struct lcfibd *d, const struct fib_rcfg *rc, struct errbuf *err)
{
	char p[ADDR_STRLEN + 4];

	for (struct feed *f = d->feeds; f; f = f->next) {
		struct feed_key k;
		struct feed_key *slot;

		if (!f->set.cap)
			continue;
		feed_key_of(&k, rc);
		slot = feed_set_slot(&f->set, &k);
		if (!slot->gen)
			continue;
		if (feed_fib_has_key(f, rc)) {
			addr_prefix_format(&rc->dst, p, sizeof(p));
			err_set(err, "%s table %u metric %u: held by the %s feed", p, k.table,
				k.metric, f->name);
			return -EBUSY;
		}
		/* Its route is gone (deleted by the operator): the key changes hands. */
		feed_set_remove_at(&f->set, (size_t)(slot - f->set.k));
		if (uatomic_read(&f->routes))
			feed_dec(&f->routes, 1);
	}
	return 0;
}

struct feed *feed_new(struct lcfibd *d, const char *name)
{
	struct feed *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->d = d;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->gen = 1;
	pthread_mutex_init(&f->lock, NULL);
	return f;
}

void feed_free(struct feed *f)
{
	if (!f)
		return;
	if (f->pending)
		free(f->pending->r);
	free(f->pending);
	while (f->waiting)
		feed_wait_remove(f, &f->waiting);
	feed_set_free(&f->wait_keys);
	feed_set_free(&f->set);
	free(f->ids.id);
	free(f->ids.gen);
	free(f->tables);
	while (f->n_spares)
		free(f->spares[--f->n_spares]);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

const char *feed_name(const struct feed *f)
{
	return f->name;
}

void feed_set_tables(struct feed *f, const uint32_t *ids, unsigned int n)
{
	feed_queue(f, FEED_JOB_TABLES, ids, n * sizeof(*ids));
}

int feed_submit(struct feed *f, const void *msgs, size_t len)
{
	return len ? feed_queue(f, FEED_JOB_MSGS, msgs, len) : 0;
}

bool feed_backlogged(const struct feed *f)
{
	return f->queued >= FEED_BACKLOG_MAX;
}

void feed_on_drained(struct feed *f, void (*fn)(void *ctx), void *ctx)
{
	f->drained = fn;
	f->drained_ctx = ctx;
}

void feed_wait_drain(struct feed *f)
{
	if (!f->drained)
		return;
	f->drain_wait = true;
	feed_inc(&f->backlog_waits, 1);
}

void feed_sync_begin(struct feed *f)
{
	feed_queue(f, FEED_JOB_SYNC_BEGIN, NULL, 0);
}

void feed_sync_end(struct feed *f)
{
	feed_queue(f, FEED_JOB_SYNC_END, NULL, 0);
}

void feed_sync_cut(struct feed *f)
{
	feed_queue(f, FEED_JOB_SYNC_CUT, NULL, 0);
}

void feed_flush(struct feed *f)
{
	feed_queue(f, FEED_JOB_FLUSH, NULL, 0);
}

void feed_count(struct feed *f, enum feed_counter c)
{
	uint64_t *const counters[] = {
		[FEED_DUMP] = &f->dumps,      [FEED_RESYNC] = &f->resyncs,
		[FEED_ENOBUFS] = &f->enobufs, [FEED_CONNECT] = &f->connects,
		[FEED_REFUSED] = &f->refused, [FEED_DECODE_ERROR] = &f->decode_errors,
	};

	feed_inc(counters[c], 1);
}

void feed_set_error(struct feed *f, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&f->lock);
	va_start(ap, fmt);
	vsnprintf(f->last_error, sizeof(f->last_error), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&f->lock);
}

void feed_get_stats(const struct feed *f, struct feed_stats *st)
{
	struct feed *mf = (struct feed *)f;

#define FEED_LOAD(x) uatomic_read(&f->x)
	st->messages = FEED_LOAD(messages);
	st->routes = FEED_LOAD(routes);
	st->nexthops = FEED_LOAD(nexthops);
	st->route_updates = FEED_LOAD(route_updates);
	st->coalesced = FEED_LOAD(coalesced);
	st->skipped = FEED_LOAD(skipped);
	st->decode_errors = FEED_LOAD(decode_errors);
	st->apply_errors = FEED_LOAD(apply_errors);
	st->dumps = FEED_LOAD(dumps);
	st->resyncs = FEED_LOAD(resyncs);
	st->enobufs = FEED_LOAD(enobufs);
	st->swept = FEED_LOAD(swept);
	st->flushed = FEED_LOAD(flushed);
	st->connects = FEED_LOAD(connects);
	st->refused = FEED_LOAD(refused);
	st->backlog_waits = FEED_LOAD(backlog_waits);
	st->wait_objects = FEED_LOAD(wait_objects);
	st->wait_routes = FEED_LOAD(wait_routes);
	st->syncing = FEED_LOAD(syncing);
#undef FEED_LOAD
	pthread_mutex_lock(&mf->lock);
	memcpy(st->last_error, f->last_error, sizeof(st->last_error));
	pthread_mutex_unlock(&mf->lock);
}
