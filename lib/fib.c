/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <urcu/pointer.h>

#include "lib/cache-int.h"
#include "lib/err.h"
#include "lib/fib-int.h"
#include "lib/mem.h"
#include "lib/nh-int.h"
#include "lib/reclaim.h"
#include "lib/trie.h"

#include "lib/cache.h"
#include "lib/fib.h"
#include "lib/names.h"

/* The tables, published as a whole: adding one copies the array. */
struct fib_tables {
	unsigned int n;
	struct fib_table *t[];
};

struct fib {
	struct mem *mem;
	struct reclaim *rc;
	struct nh_table *nt;
	struct fib_tables *tables; /* RCU */
	unsigned int bulk;         /* writer: fib_bulk_begin()s not yet ended */
	unsigned int build_threads; /* fib_set_build_threads() */
	unsigned int root_threshold; /* fib_set_root_threshold(), or 0: the tries' default */
};

/* The names are lib/names.h's; RTN_UNSPEC, which no route has, is "unspec" here. */
const char *fib_rtype_name(unsigned int type)
{
	const char *name = names_name(&names_rtype, type);

	return name ? name : type == FIB_RT_UNSPEC ? "unspec" : "?";
}

int fib_rtype_parse(const char *s, uint8_t *type)
{
	uint32_t v;

	if (!names_lookup(&names_rtype, s, strlen(s), &v))
		return -EINVAL;
	*type = (uint8_t)v;
	return 0;
}

/* Types that drop or refuse the packet: they take no nexthop (fib_props[].error). */
static bool fib_rtype_is_error(unsigned int type)
{
	return type == FIB_RT_BLACKHOLE || type == FIB_RT_UNREACHABLE || type == FIB_RT_PROHIBIT ||
	       type == FIB_RT_THROW;
}

/* ---------------------------------------------------------------- tables */

static struct fib_tables *fib_tables_alloc(struct fib *f, unsigned int n)
{
	struct fib_tables *ts = mem_alloc(f->mem, MEM_TABLE, sizeof(*ts) + n * sizeof(ts->t[0]));

	if (ts)
		ts->n = n;
	return ts;
}

static size_t fib_tables_size(const struct fib_tables *ts)
{
	return sizeof(*ts) + ts->n * sizeof(ts->t[0]);
}

const struct fib_table *fib_table_get_rcu(const struct fib *f, uint32_t id, int family)
{
	const struct fib_tables *ts = rcu_dereference(f->tables);

	for (unsigned int i = 0; i < ts->n; i++) {
		if (ts->t[i]->id == id && ts->t[i]->family == family)
			return ts->t[i];
	}
	return NULL;
}

const struct fib_table *fib_table_at_rcu(const struct fib *f, unsigned int i)
{
	const struct fib_tables *ts = rcu_dereference(f->tables);

	return i < ts->n ? ts->t[i] : NULL;
}

static struct fib_table *fib_table_get(struct fib *f, uint32_t id, int family)
{
	return (struct fib_table *)fib_table_get_rcu(f, id, family);
}

static void fib_table_set_bulk(struct fib_table *tb, bool on)
{
	if (tb->family == AF_INET)
		trie4_set_bulk(tb->t4, on);
	else
		trie6_set_bulk(tb->t6, on);
}

void fib_bulk_begin(struct fib *f)
{
	if (f->bulk++)
		return;
	for (unsigned int i = 0; i < f->tables->n; i++)
		fib_table_set_bulk(f->tables->t[i], true);
}

/*
 * Writer, at a quiet point (a flush, going idle): gives free slab chunks
 * back when enough is free, counting what waits for its grace period (at
 * most sync-mem). A trim waits for that first: the last nodes a flush or
 * a load retired lie spread over chunks otherwise free, and a trim before
 * their grace period kept those chunks until as much again was freed
 * (`flush family ipv4` of a full view left 6 MiB of free chunks resident).
 * A trim is due after a table's worth of frees, so the wait is as rare.
 * Not at a bulk load's end: after a full table the trim's walk over the
 * free objects takes 50 ms, a fifth of fib_bulk_end(), and the writer's
 * next idle point is soon enough.
 */
static uint64_t fib_compact_if_due(struct fib *f);

static void fib_mem_trim_if_due(struct fib *f)
{
	if (mem_trim_due(f->mem, reclaim_pending_bytes(f->rc))) {
		reclaim_barrier(f->rc);
		mem_trim(f->mem);
		fib_compact_if_due(f);
	}
}

/*
 * Writer, right after a trim: compaction (fib_compact_if_due(): when the
 * trim left more than a fifth of the slab memory free, mem_compact_due()).
 * Freed one by one, a trie's nodes leave holes in chunks that still hold
 * live nodes, which no trim gives back: the full view loaded one route at
 * a time held 1.38 times its live bytes, its root's last inflates having
 * split every node below it. So every trie is built anew from its leaves,
 * as bulk mode's end does, into chunks not used before, its leaves copied
 * there too (mem_evacuate_begin(), trie*_compact()); after the old trie's
 * grace period, its chunks are wholly free and go back. Readers meanwhile
 * walk the old trie, then the new one: same answers. Costs the writer
 * about a bulk end's build (0.3-0.4 s for the full view) and, for a
 * while, the new trie's memory beside the old. Routes shared by inline
 * leaves, nexthops and the other objects stay where they are. Returns the
 * bytes the second trim gave back.
 */
static uint64_t fib_compact(struct fib *f)
{
	bool built = false;
	uint64_t bytes = 0;

	mem_evacuate_begin(f->mem);
	for (unsigned int i = 0; i < f->tables->n; i++) {
		struct fib_table *tb = f->tables->t[i];

		built |= tb->family == AF_INET ? trie4_compact(tb->t4) : trie6_compact(tb->t6);
	}
	mem_evacuate_end(f->mem);
	if (built) {
		reclaim_barrier(f->rc);
		bytes = mem_trim(f->mem);
	}
	mem_compacted(f->mem, built);
	return bytes;
}

static uint64_t fib_compact_if_due(struct fib *f)
{
	return mem_compact_due(f->mem) ? fib_compact(f) : 0;
}

void fib_bulk_end(struct fib *f)
{
	if (!f->bulk || --f->bulk)
		return;
	for (unsigned int i = 0; i < f->tables->n; i++) {
		struct fib_table *tb = f->tables->t[i];

		if (tb->family == AF_INET)
			trie4_set_build_threads(tb->t4, f->build_threads);
		else
			trie6_set_build_threads(tb->t6, f->build_threads);
		fib_table_set_bulk(tb, false);
	}
}

void fib_set_build_threads(struct fib *f, unsigned int n)
{
	f->build_threads = n;
}

/* Writer: the root threshold, if one was set, on @tb's trie. */
static void fib_table_set_root(const struct fib *f, struct fib_table *tb)
{
	if (!f->root_threshold)
		return;
	if (tb->family == AF_INET)
		trie4_set_root_threshold(tb->t4, f->root_threshold);
	else
		trie6_set_root_threshold(tb->t6, f->root_threshold);
}

int fib_set_root_threshold(struct fib *f, unsigned int percent)
{
	if (percent < TRIE_ROOT_THRESHOLD_MIN || percent > TRIE_ROOT_THRESHOLD_MAX)
		return -EINVAL;
	f->root_threshold = percent;
	for (unsigned int i = 0; i < f->tables->n; i++)
		fib_table_set_root(f, f->tables->t[i]);
	return 0;
}

/* Writer: the table, made if new. NULL when out of memory. */
static struct fib_table *fib_table_obtain(struct fib *f, uint32_t id, int family)
{
	struct fib_table *tb = fib_table_get(f, id, family);
	struct fib_tables *old = f->tables, *ts;

	if (tb)
		return tb;
	tb = mem_alloc(f->mem, MEM_TABLE, sizeof(*tb));
	if (!tb)
		return NULL;
	memset(tb, 0, sizeof(*tb));
	tb->id = id;
	tb->family = (uint8_t)family;
	if (family == AF_INET)
		tb->t4 = trie4_new(f->mem, f->rc);
	else
		tb->t6 = trie6_new(f->mem, f->rc);
	ts = fib_tables_alloc(f, old->n + 1);
	if (!ts || !tb->t4) {
		if (ts)
			mem_free(f->mem, MEM_TABLE, ts, fib_tables_size(ts));
		if (family == AF_INET)
			trie4_destroy(tb->t4);
		else
			trie6_destroy(tb->t6);
		mem_free(f->mem, MEM_TABLE, tb, sizeof(*tb));
		return NULL;
	}
	fib_table_set_root(f, tb);
	if (f->bulk)
		fib_table_set_bulk(tb, true);
	memcpy(ts->t, old->t, old->n * sizeof(ts->t[0]));
	ts->t[old->n] = tb;
	rcu_assign_pointer(f->tables, ts);
	reclaim_retire(f->rc, old, fib_tables_size(old), MEM_TABLE);
	return tb;
}

const struct fib_table *fib_table_cache(struct fib *f, uint32_t id, int family)
{
	struct fib_table *tb = fib_table_obtain(f, id, family);

	if (tb && !tb->gens) {
		struct cache_gens *g = cache_gens_new(family);

		if (!g)
			return NULL;
		rcu_assign_pointer(tb->gens, g);
	}
	return tb;
}

/* -------------------------------------------------------------- the fib */

struct fib *fib_new(void)
{
	struct fib *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->mem = mem_new();
	if (!f->mem)
		goto free_fib;
	f->rc = reclaim_new(f->mem);
	if (!f->rc)
		goto free_mem;
	f->nt = nh_table_new(f->mem, f->rc);
	if (!f->nt)
		goto free_reclaim;
	f->tables = fib_tables_alloc(f, 0);
	if (!f->tables)
		goto free_nt;
	return f;
free_nt:
	nh_table_destroy(f->nt);
free_reclaim:
	reclaim_destroy(f->rc);
free_mem:
	mem_destroy(f->mem);
free_fib:
	free(f);
	errno = ENOMEM;
	return NULL;
}

void fib_destroy(struct fib *f)
{
	if (!f)
		return;
	reclaim_barrier(f->rc);
	for (unsigned int i = 0; i < f->tables->n; i++) {
		struct fib_table *tb = f->tables->t[i];

		if (tb->family == AF_INET)
			trie4_destroy(tb->t4);
		else
			trie6_destroy(tb->t6);
		cache_gens_free(tb->gens);
		mem_free(f->mem, MEM_TABLE, tb, sizeof(*tb));
	}
	mem_free(f->mem, MEM_TABLE, f->tables, fib_tables_size(f->tables));
	nh_table_destroy(f->nt);
	reclaim_destroy(f->rc);
	mem_destroy(f->mem);
	free(f);
}

int fib_set_sync_mem(struct fib *f, uint64_t bytes)
{
	return reclaim_set_sync_mem(f->rc, bytes);
}

uint64_t fib_get_sync_mem(const struct fib *f)
{
	return reclaim_get_sync_mem(f->rc);
}

void fib_reclaim_barrier(struct fib *f)
{
	reclaim_barrier(f->rc);
}

void fib_reclaim_flush(struct fib *f)
{
	reclaim_flush(f->rc);
	fib_mem_trim_if_due(f);
}

struct mem *fib_mem(struct fib *f)
{
	return f->mem;
}

uint64_t fib_mem_trim(struct fib *f)
{
	uint64_t bytes;

	reclaim_barrier(f->rc);
	bytes = mem_trim(f->mem);
	return bytes + fib_compact_if_due(f);
}

uint64_t fib_mem_compact(struct fib *f)
{
	uint64_t bytes;

	reclaim_barrier(f->rc);
	bytes = mem_trim(f->mem);
	return bytes + fib_compact(f);
}

/* ------------------------------------------------------------ route edits */

/* What one trie edit asks of the routes of one prefix, and what it took out. */
struct fib_edit {
	const struct fib_rcfg *rc;
	struct fib_route route; /* add: the new route */
	unsigned int n_removed; /* routes in removed[] */
	unsigned int at; /* add, del: where in the prefix's routes the route went in or out */
	struct errbuf *err;
	bool (*pred)(void *ctx, const struct fib_route *r); /* filter edits */
	void *pred_ctx;
	/* IPv6 edits that change a route's paths (siblings merged or taken out). */
	struct nh_table *nt;
	struct nh *made; /* the nexthop made for the route that went in (a reference) */
	bool has_added;  /* del: a route went in (what is left of the one taken out) */
	/* Last, and left as it is by fib_edit_init(): only [0, n_removed) is read. */
	struct fib_route removed[TRIE_LEAF_MAX];
};

/*
 * Zeroes @ed up to its removed routes: zeroing them too wrote 4 KiB for
 * every route added or deleted (a tenth of the instructions of a load one
 * route at a time; docs/BENCHMARKS.md, issue 9's fifteenth round).
 */
static void fib_edit_init(struct fib_edit *ed)
{
	memset(ed, 0, offsetof(struct fib_edit, removed));
}

/* Where a route of @metric goes: after those with a lower metric. */
static unsigned int fib_metric_pos(const struct fib_route *run, unsigned int n, uint32_t metric)
{
	unsigned int i = 0;

	while (i < n && run[i].metric < metric)
		i++;
	return i;
}

static unsigned int fib_insert_at(const struct fib_route *old, unsigned int n, unsigned int at,
				  const struct fib_route *r, struct fib_route *out)
{
	/* @old is NULL for a new prefix. */
	if (at)
		memcpy(out, old, at * sizeof(*out));
	out[at] = *r;
	if (n > at)
		memcpy(out + at + 1, old + at, (n - at) * sizeof(*out));
	return n + 1;
}

/* @ed's route in the place of old[@i]: the edit takes that one out. */
static int fib_put_at(struct fib_edit *ed, const struct fib_route *old, unsigned int n,
		      struct fib_route *out, unsigned int i)
{
	memcpy(out, old, n * sizeof(*out));
	ed->removed[ed->n_removed++] = old[i];
	out[i] = ed->route;
	ed->at = i;
	return (int)n;
}

/*
 * The kernel's fib_table_insert on one prefix's routes, ordered by metric:
 * routes of one metric are one "key"; EXCL refuses it, REPLACE replaces
 * its first route, APPEND adds after it, plain CREATE before it. An
 * identical route (type and nexthop) is -EEXIST, or nothing to do for a
 * REPLACE (-EALREADY, turned into success by the caller).
 */
static int fib_add_fn(void *ctx, const struct fib_route *old, unsigned int n, struct fib_route *out,
		      unsigned int cap)
{
	struct fib_edit *ed = ctx;
	const struct fib_route *r = &ed->route;
	unsigned int flags = ed->rc->flags;
	unsigned int fa = fib_metric_pos(old, n, r->metric), end = fa, i;

	while (end < n && old[end].metric == r->metric)
		end++;
	if (fa < end) {
		const struct fib_route *match = NULL;

		if (flags & FIB_F_EXCL) {
			err_set(ed->err, "route exists");
			return -EEXIST;
		}
		for (i = fa; i < end && !match; i++) {
			if (old[i].type == r->type && old[i].nh == r->nh)
				match = &old[i];
		}
		if (flags & FIB_F_REPLACE)
			return match ? -EALREADY : fib_put_at(ed, old, n, out, fa);
		if (match) {
			err_set(ed->err, "an identical route exists");
			return -EEXIST;
		}
		if (!(flags & FIB_F_CREATE)) {
			err_set(ed->err, "no such route (and no create flag)");
			return -ENOENT;
		}
		if (n >= cap)
			goto full;
		ed->at = (flags & FIB_F_APPEND) ? end : fa;
		return (int)fib_insert_at(old, n, ed->at, r, out);
	}
	if (!(flags & FIB_F_CREATE)) {
		err_set(ed->err, "no such route (and no create flag)");
		return -ENOENT;
	}
	if (n >= cap)
		goto full;
	ed->at = fa;
	return (int)fib_insert_at(old, n, fa, r, out);
full:
	err_set(ed->err, "more than %u routes share this key", TRIE_LEAF_MAX);
	return -ENOSPC;
}

/* Whether the nexthop @nh matches the paths a delete names (the kernel's fib_nh_match). */
static bool fib_nh_match(const struct fib_rcfg *rc, const struct nh *nh)
{
	const struct nh_info *info;

	if (rc->nh_id)
		return nh && nh->id == rc->nh_id;
	if (!rc->n_paths)
		return true;
	if (!nh || nh->id)
		return false;
	info = nh->info;
	if (info->n != rc->n_paths)
		return false;
	for (unsigned int i = 0; i < rc->n_paths; i++) {
		const struct nh_path *want = &rc->paths[i], *have = &info->path[i];

		if (want->ifindex && want->ifindex != have->ifindex)
			return false;
		if (want->gw_family == AF_INET &&
		    (have->gw_family != AF_INET || want->gw.v4.s_addr != have->gw.v4.s_addr))
			return false;
		if (want->gw_family == AF_INET6 &&
		    (have->gw_family != AF_INET6 ||
		     memcmp(&want->gw.v6, &have->gw.v6, sizeof(want->gw.v6)) != 0))
			return false;
	}
	return true;
}

static bool fib_del_match(const struct fib_rcfg *rc, const struct fib_route *r)
{
	return (!rc->type || r->type == rc->type) && (!rc->proto || r->proto == rc->proto) &&
	       (!rc->scope || r->scope == rc->scope) &&
	       ((!rc->metric && !(rc->flags & FIB_F_EXACT_METRIC)) || r->metric == rc->metric) &&
	       fib_nh_match(rc, r->nh);
}

/* The kernel's fib_table_delete on one prefix: the first route that matches goes. */
static int fib_del_fn(void *ctx, const struct fib_route *old, unsigned int n, struct fib_route *out,
		      unsigned int cap)
{
	struct fib_edit *ed = ctx;

	(void)cap;
	for (unsigned int i = 0; i < n; i++) {
		if (!fib_del_match(ed->rc, &old[i]))
			continue;
		ed->removed[ed->n_removed++] = old[i];
		ed->at = i;
		memcpy(out, old, i * sizeof(*out));
		memcpy(out + i, old + i + 1, (n - i - 1) * sizeof(*out));
		return (int)n - 1;
	}
	err_set(ed->err, "no such route");
	return -ESRCH;
}

/* Keeps the routes @ed->pred refuses; takes out the others. */
static int fib_filter_fn(void *ctx, const struct fib_route *old, unsigned int n,
			 struct fib_route *out, unsigned int cap)
{
	struct fib_edit *ed = ctx;
	unsigned int k = 0;

	(void)cap;
	for (unsigned int i = 0; i < n; i++) {
		if (ed->pred(ed->pred_ctx, &old[i]))
			ed->removed[ed->n_removed++] = old[i];
		else
			out[k++] = old[i];
	}
	return k == n ? -EALREADY : (int)k;
}

/* ------------------------------------------------ IPv6: siblings */

/*
 * IPv6 as the kernel keeps it (fib6_add_rt2node, ip6_route_del): there
 * every route has one path, and the gateway routes of one prefix and
 * metric are "siblings" that `ip -6 route` shows and lookups use as one
 * multipath route, in the order they came. Here they are that one route:
 * in the place of the first sibling, with its type, protocol and scope;
 * a new sibling's paths go after the others, and a delete naming a
 * gateway takes its path out. The kernel puts a new route after those of
 * its metric whatever its flags (prepend appends).
 */

bool fib_route_merges6(const struct fib_route *r)
{
	const struct nh_info *info;

	if (r->type != FIB_RT_UNICAST || !r->nh || r->nh->id)
		return false;
	info = nh_info_rcu(r->nh);
	for (unsigned int i = 0; i < info->n; i++) {
		if (!info->path[i].gw_family)
			return false;
	}
	return true;
}

bool fib_rcfg_merges6(const struct fib_rcfg *rc)
{
	if (rc->dst.a.family != AF_INET6 || (rc->type && rc->type != FIB_RT_UNICAST) || rc->nh_id ||
	    !rc->n_paths)
		return false;
	for (unsigned int i = 0; i < rc->n_paths; i++) {
		if (!rc->paths[i].gw_family)
			return false;
	}
	return true;
}

/*
 * Whether @a and @b have a nexthop in common, as rt6_duplicate_nexthop()
 * compares the kernel's one-path routes: a path of the same gateway and
 * device, or the same object; routes without a nexthop (blackhole,
 * unreachable, prohibit, throw) all go through "dev lo" there, and clash.
 */
static bool fib6_dup(const struct fib_route *a, const struct fib_route *b)
{
	const struct nh_info *ia, *ib;

	if ((a->nh && a->nh->id) || (b->nh && b->nh->id))
		return a->nh == b->nh;
	if (!a->nh || !b->nh)
		return !a->nh && !b->nh;
	ia = a->nh->info;
	ib = b->nh->info;
	for (unsigned int i = 0; i < ia->n; i++) {
		for (unsigned int j = 0; j < ib->n; j++) {
			if (nh_path_same(&ia->path[i], &ib->path[j]))
				return true;
		}
	}
	return false;
}

/* old[@i] with @ed's route's paths after its own: one multipath route. */
static int fib6_merge(struct fib_edit *ed, const struct fib_route *old, unsigned int n,
		      struct fib_route *out, unsigned int i)
{
	const struct nh_info *have = old[i].nh->info, *add = ed->route.nh->info;
	struct nh_path paths[NH_MAX_PATHS];
	struct nh *nh;
	int ret;

	if (have->n + add->n > NH_MAX_PATHS) {
		err_set(ed->err, "the multipath route would have more than %u nexthops",
			NH_MAX_PATHS);
		return -ENOSPC;
	}
	memcpy(paths, have->path, have->n * sizeof(paths[0]));
	memcpy(paths + have->n, add->path, add->n * sizeof(paths[0]));
	nh = nh_get_paths(ed->nt, paths, have->n + add->n, &ret, ed->err);
	if (!nh)
		return ret;
	ed->made = nh;
	ed->route = old[i];
	ed->route.nh = nh;
	return fib_put_at(ed, old, n, out, i);
}

/* Where an IPv6 REPLACE goes in [@fa, @end): the first route that merges as @r does, else @fa. */
static unsigned int fib6_replace_at(const struct fib_route *old, unsigned int fa, unsigned int end,
				    const struct fib_route *r)
{
	bool merges = fib_route_merges6(r);

	for (unsigned int i = fa; i < end; i++) {
		if (fib_route_merges6(&old[i]) == merges)
			return i;
	}
	return fa;
}

/* fib6_add_rt2node on one prefix's routes (see fib_route_add()). */
static int fib6_add_fn(void *ctx, const struct fib_route *old, unsigned int n,
		       struct fib_route *out, unsigned int cap)
{
	struct fib_edit *ed = ctx;
	const struct fib_route *r = &ed->route;
	unsigned int flags = ed->rc->flags;
	unsigned int fa = fib_metric_pos(old, n, r->metric), end = fa, i;

	while (end < n && old[end].metric == r->metric)
		end++;
	if ((flags & FIB_F_REPLACE) && fa < end) {
		i = fib6_replace_at(old, fa, end, r);
		if (old[i].type == r->type && old[i].nh == r->nh)
			return -EALREADY;
		return fib_put_at(ed, old, n, out, i);
	}
	if (fa < end && (flags & FIB_F_EXCL)) {
		err_set(ed->err, "route exists");
		return -EEXIST;
	}
	for (i = fa; i < end; i++) {
		if (fib6_dup(&old[i], r)) {
			err_set(ed->err, "a route of this metric has this nexthop already");
			return -EEXIST;
		}
	}
	if (!(flags & FIB_F_CREATE)) {
		err_set(ed->err, "no such route (and no create flag)");
		return -ENOENT;
	}
	for (i = fa; i < end && fib_route_merges6(r); i++) {
		if (fib_route_merges6(&old[i]))
			return fib6_merge(ed, old, n, out, i);
	}
	if (n >= cap) {
		err_set(ed->err, "more than %u routes share this key", TRIE_LEAF_MAX);
		return -ENOSPC;
	}
	ed->at = end;
	return (int)fib_insert_at(old, n, end, r, out);
}

/* Whether path @want of a delete matches @have: what it names of gateway and device. */
static bool fib6_path_match(const struct nh_path *want, const struct nh_path *have)
{
	struct nh_path w = *want;

	if (!w.ifindex)
		w.ifindex = have->ifindex;
	if (!w.gw_family) {
		w.gw_family = have->gw_family;
		w.gw = have->gw;
	}
	return nh_path_same(&w, have);
}

/*
 * Marks in *@drop the paths of @info that the paths @rc names take out,
 * each its own; false when one of them finds none.
 */
static bool fib6_del_paths(const struct fib_rcfg *rc, const struct nh_info *info, uint64_t *drop)
{
	*drop = 0;
	for (unsigned int i = 0; i < rc->n_paths; i++) {
		unsigned int j;

		for (j = 0; j < info->n; j++) {
			if (!(*drop & (1ull << j)) &&
			    fib6_path_match(&rc->paths[i], &info->path[j]))
				break;
		}
		if (j == info->n)
			return false;
		*drop |= 1ull << j;
	}
	return true;
}

/* What is left of old[@i] once the paths in @drop are out: the route goes with its last path. */
static int fib6_del_at(struct fib_edit *ed, const struct fib_route *old, unsigned int n,
		       struct fib_route *out, unsigned int i, uint64_t drop)
{
	const struct nh_info *info = old[i].nh->info;
	struct nh_path paths[NH_MAX_PATHS];
	unsigned int k = 0;
	struct nh *nh;
	int ret;

	for (unsigned int j = 0; j < info->n; j++) {
		if (!(drop & (1ull << j)))
			paths[k++] = info->path[j];
	}
	if (!k) {
		ed->removed[ed->n_removed++] = old[i];
		ed->at = i;
		memcpy(out, old, i * sizeof(*out));
		memcpy(out + i, old + i + 1, (n - i - 1) * sizeof(*out));
		return (int)n - 1;
	}
	nh = nh_get_paths(ed->nt, paths, k, &ret, ed->err);
	if (!nh)
		return ret;
	ed->made = nh;
	ed->has_added = true;
	ed->route = old[i];
	ed->route.nh = nh;
	return fib_put_at(ed, old, n, out, i);
}

/* Whether an IPv6 delete names gateways: it takes siblings out, not routes. */
static bool fib6_del_by_gateway(const struct fib_rcfg *rc)
{
	if (rc->nh_id || !rc->n_paths || (rc->flags & FIB_F_EXACT))
		return false;
	for (unsigned int i = 0; i < rc->n_paths; i++) {
		if (rc->paths[i].gw_family)
			return true;
	}
	return false;
}

/* ip6_route_del on one prefix's routes (see fib_route_del()). */
static int fib6_del_fn(void *ctx, const struct fib_route *old, unsigned int n,
		       struct fib_route *out, unsigned int cap)
{
	struct fib_edit *ed = ctx;
	const struct fib_rcfg *rc = ed->rc;
	bool by_gw = fib6_del_by_gateway(rc);
	uint64_t drop;

	if (!by_gw && (rc->n_paths != 1 || (rc->flags & FIB_F_EXACT)))
		return fib_del_fn(ctx, old, n, out, cap);
	/* Gateways, or a device alone: a path through it marks its route. */
	for (unsigned int i = 0; i < n; i++) {
		struct fib_rcfg any = *rc;

		any.n_paths = 0;
		if (!old[i].nh || old[i].nh->id || !fib_del_match(&any, &old[i]) ||
		    !fib6_del_paths(rc, old[i].nh->info, &drop))
			continue;
		if (!by_gw)
			drop = ~0ull;
		return fib6_del_at(ed, old, n, out, i, drop);
	}
	err_set(ed->err, "no such route");
	return -ESRCH;
}

/*
 * Every trie edit goes through here. The caches' generations move around
 * it, and the callers drop what the edit took out only after it returns
 * (the protocol of lib/cache.h).
 */
static int fib_table_edit(struct fib_table *tb, const struct addr_prefix *p, trie_edit_fn *fn,
			  void *ctx)
{
	int ret;

	cache_gens_begin(tb->gens, p);
	if (tb->family == AF_INET)
		ret = trie4_edit(tb->t4, addr_key4(&p->a), p->plen, fn, ctx);
	else
		ret = trie6_edit(tb->t6, addr_key6(&p->a), p->plen, fn, ctx);
	cache_gens_end(tb->gens);
	return ret;
}

static void fib_release_removed(struct fib *f, struct fib_edit *ed)
{
	for (unsigned int i = 0; i < ed->n_removed; i++) {
		if (ed->removed[i].nh)
			nh_put(f->nt, ed->removed[i].nh);
	}
	ed->n_removed = 0;
}

/*
 * An IPv6 multipath route is siblings to the kernel, each a gateway
 * route: a path without a gateway is refused (as ip6_route_multipath_add
 * does), and so is a path given twice (as ip6_route_info_append does).
 */
static int fib6_rcfg_check_paths(const struct fib_rcfg *rc, struct errbuf *err)
{
	for (unsigned int i = 0; rc->n_paths > 1 && i < rc->n_paths; i++) {
		if (!rc->paths[i].gw_family) {
			err_set(err,
				"nexthop %u: an IPv6 multipath route needs a gateway in "
				"every nexthop",
				i + 1);
			return -EINVAL;
		}
		for (unsigned int j = 0; j < i; j++) {
			if (nh_path_same(&rc->paths[i], &rc->paths[j])) {
				err_set(err, "nexthop %u: the same as nexthop %u", i + 1, j + 1);
				return -EEXIST;
			}
		}
	}
	return 0;
}

/* Checks what a route add or delete names before anything changes. */
static int fib_rcfg_check(const struct fib_rcfg *rc, bool add, struct errbuf *err)
{
	const struct addr_prefix *p = &rc->dst;

	if (p->a.family != AF_INET && p->a.family != AF_INET6) {
		err_set(err, "address family %u is neither IPv4 nor IPv6", p->a.family);
		return -EAFNOSUPPORT;
	}
	if (p->plen > addr_bits(p->a.family)) {
		err_set(err, "prefix length %u is longer than %u", p->plen, addr_bits(p->a.family));
		return -EINVAL;
	}
	if (addr_has_host_bits(&p->a, p->plen)) {
		err_set(err, "host bits set past the prefix length");
		return -EINVAL;
	}
	if (rc->type > FIB_RT_MAX) {
		err_set(err, "route type %u is unknown", rc->type);
		return -EINVAL;
	}
	if (!add)
		return 0;
	if (rc->nh_id && rc->n_paths) {
		err_set(err, "a nexthop id and gateways cannot be given together");
		return -EINVAL;
	}
	if (fib_rtype_is_error(rc->type) && (rc->nh_id || rc->n_paths)) {
		err_set(err, "a %s route takes no gateway, device or nexthop",
			fib_rtype_name(rc->type));
		return -EINVAL;
	}
	if ((rc->type == FIB_RT_UNICAST || rc->type == FIB_RT_UNSPEC) && !rc->nh_id &&
	    !rc->n_paths) {
		err_set(err, "a unicast route needs a gateway, a device or a nexthop id");
		return -EINVAL;
	}
	return p->a.family == AF_INET6 ? fib6_rcfg_check_paths(rc, err) : 0;
}

/* Prefixes the message in @err with the route it is about (a delete's metric 0 is any). */
static void fib_err_where(struct errbuf *err, const struct fib_rcfg *rc, uint32_t table, bool del)
{
	char p[ADDR_STRLEN];

	addr_prefix_format(&rc->dst, p, sizeof(p));
	if (del && !rc->metric)
		err_prefix(err, "%s table %u any metric", p, table);
	else
		err_prefix(err, "%s table %u metric %u", p, table, rc->metric);
}

/*
 * Fills @u with what an edit of @rc changed: the route that went in (its
 * nexthop reference now belongs to the trie) and the one that came out (the
 * undo record keeps its reference, so the nexthop outlives the edit).
 */
static void fib_undo_record(struct fib_undo *u, const struct fib_rcfg *rc, uint32_t table,
			    const struct fib_edit *ed, const struct fib_route *added)
{
	u->dst = rc->dst;
	u->table = table;
	u->at = (uint8_t)ed->at;
	u->has_added = added != NULL;
	if (added)
		u->added = *added;
	u->has_removed = ed->n_removed > 0;
	if (ed->n_removed)
		u->removed = ed->removed[0];
}

static int fib_route_add_rec(struct fib *f, const struct fib_rcfg *rc, struct fib_undo *u,
			     struct errbuf *err)
{
	uint32_t table = rc->table ? rc->table : FIB_TABLE_MAIN;
	struct fib_edit ed;
	struct fib_table *tb;
	struct nh *nh = NULL;
	int ret;

	err_clear(err);
	ret = fib_rcfg_check(rc, true, err);
	if (ret)
		goto out;
	if (rc->nh_id)
		nh = nh_get_id(f->nt, rc->nh_id, &ret, err);
	else if (rc->n_paths)
		nh = nh_get_paths(f->nt, rc->paths, rc->n_paths, &ret, err);
	if (ret)
		goto out;
	/* Without CREATE nothing can be added to a table that does not exist: make none. */
	if (!(rc->flags & FIB_F_CREATE) && !fib_table_get(f, table, rc->dst.a.family)) {
		err_set(err, "no such route (and no create flag)");
		ret = -ENOENT;
		goto put_nh;
	}
	tb = fib_table_obtain(f, table, rc->dst.a.family);
	if (!tb) {
		err_set(err, "out of memory for table %u", table);
		ret = -ENOMEM;
		goto put_nh;
	}
	fib_edit_init(&ed);
	ed.rc = rc;
	ed.err = err;
	ed.nt = f->nt;
	ed.route = (struct fib_route){
		.nh = nh,
		.metric = rc->metric,
		.plen = rc->dst.plen,
		.type = rc->type ? rc->type : FIB_RT_UNICAST,
		.proto = rc->proto,
		.scope = rc->scope,
	};
	ret = fib_table_edit(tb, &rc->dst, rc->dst.a.family == AF_INET6 ? fib6_add_fn : fib_add_fn,
			     &ed);
	if (ed.made && ret) {
		nh_put(f->nt, ed.made); /* the trie refused the merged route after all */
	} else if (ed.made) {
		/* The route merged: the trie holds the merged nexthop, not the one asked for. */
		if (nh)
			nh_put(f->nt, nh);
		nh = NULL;
	}
	if (ret == -EALREADY) {
		if (u)
			*u = (struct fib_undo){ .dst = rc->dst, .table = table };
		ret = 0;
		goto put_nh;
	}
	if (ret)
		goto put_nh;
	if (u) {
		ed.route.plen = rc->dst.plen;
		fib_undo_record(u, rc, table, &ed, &ed.route);
		ed.n_removed = 0; /* the record holds the reference */
	}
	fib_release_removed(f, &ed);
	return 0;
put_nh:
	if (nh)
		nh_put(f->nt, nh);
out:
	if (ret == -ENOMEM && !err_is_set(err))
		err_set(err, "out of memory");
	if (ret)
		fib_err_where(err, rc, table, false);
	return ret;
}

static int fib_route_del_rec(struct fib *f, const struct fib_rcfg *rc, struct fib_undo *u,
			     struct errbuf *err)
{
	uint32_t table = rc->table ? rc->table : FIB_TABLE_MAIN;
	struct fib_edit ed;
	struct fib_table *tb;
	int ret;

	err_clear(err);
	ret = fib_rcfg_check(rc, false, err);
	if (ret)
		goto out;
	tb = fib_table_get(f, table, rc->dst.a.family);
	if (!tb) {
		err_set(err, "no such route (no table %u)", table);
		ret = -ESRCH;
		goto out;
	}
	fib_edit_init(&ed);
	ed.rc = rc;
	ed.err = err;
	ed.nt = f->nt;
	ret = fib_table_edit(tb, &rc->dst, rc->dst.a.family == AF_INET6 ? fib6_del_fn : fib_del_fn,
			     &ed);
	if (ret) {
		if (ed.made)
			nh_put(f->nt, ed.made);
		goto out;
	}
	if (u) {
		fib_undo_record(u, rc, table, &ed, ed.has_added ? &ed.route : NULL);
		ed.n_removed = 0;
	}
	fib_release_removed(f, &ed);
	return 0;
out:
	fib_err_where(err, rc, table, true);
	return ret;
}

int fib_route_add(struct fib *f, const struct fib_rcfg *rc, struct errbuf *err)
{
	return fib_route_add_rec(f, rc, NULL, err);
}

int fib_route_del(struct fib *f, const struct fib_rcfg *rc, struct errbuf *err)
{
	return fib_route_del_rec(f, rc, NULL, err);
}

int fib_route_add_undo(struct fib *f, const struct fib_rcfg *rc, struct fib_undo *u,
		       struct errbuf *err)
{
	return fib_route_add_rec(f, rc, u, err);
}

int fib_route_del_undo(struct fib *f, const struct fib_rcfg *rc, struct fib_undo *u,
		       struct errbuf *err)
{
	return fib_route_del_rec(f, rc, u, err);
}

static bool fib_route_same(const struct fib_route *a, const struct fib_route *b)
{
	return a->nh == b->nh && a->metric == b->metric && a->type == b->type &&
	       a->proto == b->proto && a->scope == b->scope;
}

/* Puts one prefix's routes back as they were before the edit @ctx recorded. */
static int fib_undo_fn(void *ctx, const struct fib_route *old, unsigned int n,
		       struct fib_route *out, unsigned int cap)
{
	struct fib_undo *u = ctx;
	unsigned int k = n;

	if (n)
		memcpy(out, old, n * sizeof(*out));
	if (u->has_added) {
		if (u->at >= k || !fib_route_same(&out[u->at], &u->added))
			return -ESTALE;
		memmove(out + u->at, out + u->at + 1, (k - u->at - 1) * sizeof(*out));
		k--;
	}
	if (u->has_removed) {
		if (u->at > k || k >= cap)
			return -ESTALE;
		memmove(out + u->at + 1, out + u->at, (k - u->at) * sizeof(*out));
		out[u->at] = u->removed;
		k++;
	}
	return (int)k;
}

int fib_undo_revert(struct fib *f, struct fib_undo *u, struct errbuf *err)
{
	struct fib_table *tb;
	int ret;

	if (!u->has_added && !u->has_removed)
		return 0;
	tb = fib_table_get(f, u->table, u->dst.a.family);
	ret = tb ? fib_table_edit(tb, &u->dst, fib_undo_fn, u) : -ESTALE;
	if (ret) {
		char p[ADDR_STRLEN];

		err_set(err, "%s table %u: cannot undo the edit: %s",
			addr_prefix_format(&u->dst, p, sizeof(p)), u->table,
			ret == -ESTALE ? "the routes changed since" : strerror(-ret));
		return ret;
	}
	/* The trie took the removed route's reference back and let the added one's go. */
	if (u->has_added && u->added.nh)
		nh_put(f->nt, u->added.nh);
	u->has_added = u->has_removed = false;
	return 0;
}

void fib_undo_release(struct fib *f, struct fib_undo *u)
{
	if (u->has_removed && u->removed.nh)
		nh_put(f->nt, u->removed.nh);
	u->has_added = u->has_removed = false;
}

/* Where an iteration over one table's leaves stands. */
struct fib_cursor {
	trie_key6 from; /* an IPv4 key in the low 32 bits */
	bool done;
};

/* Reader or writer: the next leaf at or after @c: its key as an address, and its routes. */
static int fib_next_leaf_rcu(const struct fib_table *tb, struct fib_cursor *c, struct addr *a,
			     const struct fib_route **routes, unsigned int *n)
{
	if (c->done)
		return -ENOENT;
	if (tb->family == AF_INET) {
		uint32_t key;

		if (trie4_next_rcu(tb->t4, (uint32_t)c->from, &key, routes, n))
			return -ENOENT;
		addr_from_key4(a, key);
		c->done = key == UINT32_MAX;
		c->from = (trie_key6)key + 1;
	} else {
		trie_key6 key;

		if (trie6_next_rcu(tb->t6, c->from, &key, routes, n))
			return -ENOENT;
		addr_from_key6(a, key);
		c->done = key == ~(trie_key6)0;
		c->from = key + 1;
	}
	return 0;
}

/* Writer: the routes of @tb that @pred picks go; leaf by leaf, prefix by prefix. */
static int fib_table_filter(struct fib *f, struct fib_table *tb,
			    bool (*pred)(void *ctx, const struct fib_route *r), void *ctx)
{
	struct fib_edit ed;
	struct fib_cursor c = { 0 };
	const struct fib_route *routes;
	struct addr_prefix p;
	unsigned int n;
	int ret;

	fib_edit_init(&ed);
	ed.pred = pred;
	ed.pred_ctx = ctx;
	while (fib_next_leaf_rcu(tb, &c, &p.a, &routes, &n) == 0) {
		/* Each edit replaces the leaf: note its prefix lengths first. */
		uint8_t plens[TRIE_LEAF_MAX];
		unsigned int np = 0;

		for (unsigned int i = 0; i < n; i++) {
			if (pred(ctx, &routes[i]) && (np == 0 || plens[np - 1] != routes[i].plen))
				plens[np++] = routes[i].plen;
		}
		for (unsigned int i = 0; i < np; i++) {
			p.plen = plens[i];
			ret = fib_table_edit(tb, &p, fib_filter_fn, &ed);
			if (ret == -ENOMEM) {
				/*
				 * Taking some of a leaf's prefixes out copies the leaf.
				 * What the removals so far retired, freed once readers
				 * are done, may well hold the copy: once more then.
				 */
				ed.n_removed = 0;
				reclaim_barrier(f->rc);
				ret = fib_table_edit(tb, &p, fib_filter_fn, &ed);
			}
			if (ret && ret != -EALREADY)
				return ret;
			fib_release_removed(f, &ed);
		}
	}
	return 0;
}

static bool fib_pred_all(void *ctx, const struct fib_route *r)
{
	(void)ctx;
	(void)r;
	return true;
}

int fib_table_flush(struct fib *f, uint32_t table, int family)
{
	for (unsigned int i = 0; i < f->tables->n; i++) {
		struct fib_table *tb = f->tables->t[i];
		int ret;

		if ((table && tb->id != table) || (family != AF_UNSPEC && tb->family != family))
			continue;
		ret = fib_table_filter(f, tb, fib_pred_all, NULL);
		if (ret)
			return ret;
	}
	fib_mem_trim_if_due(f);
	return 0;
}

/* ------------------------------------------------------ nexthop objects */

int fib_nh_set(struct fib *f, const struct nh_obj_cfg *cfg, unsigned int flags, struct errbuf *err)
{
	err_clear(err);
	return nh_obj_set(f->nt, cfg, flags, err);
}

struct fib_nh_doomed {
	struct nh *nh[1 + NH_MAX_PATHS * 4];
	unsigned int n;
	struct nh *victim;
};

static bool fib_pred_uses(void *ctx, const struct fib_route *r)
{
	const struct fib_nh_doomed *d = ctx;

	for (unsigned int i = 0; i < d->n; i++) {
		if (r->nh == d->nh[i])
			return true;
	}
	return false;
}

/* Groups whose only member is the victim: they go with it. */
static void fib_nh_collect_emptied(void *ctx, struct nh *g)
{
	struct fib_nh_doomed *d = ctx;
	const struct nh_info *gi = g->info;

	if (gi->kind == NH_KIND_GROUP && gi->n == 1 && gi->path[0].member == d->victim &&
	    d->n < sizeof(d->nh) / sizeof(d->nh[0]))
		d->nh[d->n++] = g;
}

int fib_nh_del(struct fib *f, uint32_t id, struct errbuf *err)
{
	struct fib_nh_doomed *d;
	struct nh *nh = nh_find_id(f->nt, id);
	unsigned int n_emptied;
	int ret = 0;

	err_clear(err);
	if (!nh) {
		err_set(err, "nexthop id %u does not exist", id);
		return -ENOENT;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		err_set(err, "out of memory deleting nexthop %u", id);
		return -ENOMEM;
	}
	d->victim = nh;
	d->nh[d->n++] = nh;
	nh_for_each_obj(f->nt, fib_nh_collect_emptied, d);
	if (d->n > nh->nr_groups + 1u || d->n == sizeof(d->nh) / sizeof(d->nh[0])) {
		err_set(err, "nexthop %u: too many groups to empty at once", id);
		ret = -ENOSPC;
		goto out;
	}
	/* The routes go first, then the objects: nothing may point at a deleted one. */
	for (unsigned int i = 0; i < f->tables->n; i++) {
		ret = fib_table_filter(f, f->tables->t[i], fib_pred_uses, d);
		if (ret) {
			err_set(err, "nexthop %u: could not remove its routes (%s)", id,
				strerror(-ret));
			goto out;
		}
	}
	ret = nh_obj_del(f->nt, nh, d->nh + 1, d->n - 1, &n_emptied, err);
	for (unsigned int i = 0; !ret && i < n_emptied; i++) {
		unsigned int none;

		ret = nh_obj_del(f->nt, d->nh[1 + i], NULL, 0, &none, err);
	}
out:
	free(d);
	return ret;
}

/* --------------------------------------------------------------- readers */

/*
 * Keys converted per call of the trie's batch. Each call fills its lanes
 * and drains them at its end: with 64 a call, batches inside prefixes ran
 * 10-20 % slower than the trie's own batch on ready keys, with 256 as fast
 * (docs/BENCHMARKS.md, issue 9's thirteenth round). 4 KiB of stack.
 */
#define FIB_LOOKUP6_CHUNK 256

void fib_lookup6_batch_rcu(const struct fib_table *tb, const struct in6_addr *addr,
			   const struct fib_route **res, unsigned int n)
{
	trie_key6 key[FIB_LOOKUP6_CHUNK];

	for (unsigned int i = 0; i < n; i += FIB_LOOKUP6_CHUNK) {
		unsigned int k = n - i < FIB_LOOKUP6_CHUNK ? n - i : FIB_LOOKUP6_CHUNK;

		for (unsigned int j = 0; j < k; j++)
			key[j] = addr_key6_raw(&addr[i + j]);
		trie6_lookup_batch_rcu(tb->t6, key, res + i, k);
	}
}

const struct fib_route *fib_find_rcu(const struct fib *f, uint32_t table,
				     const struct addr_prefix *p, unsigned int *n)
{
	const struct fib_table *tb =
		fib_table_get_rcu(f, table ? table : FIB_TABLE_MAIN, p->a.family);

	*n = 0;
	if (!tb)
		return NULL;
	if (tb->family == AF_INET)
		return trie4_find_rcu(tb->t4, addr_key4(&p->a), p->plen, n);
	return trie6_find_rcu(tb->t6, addr_key6(&p->a), p->plen, n);
}

/* Whether every path of @r is dead: the kernel's lookup passes such a route by. */
static bool fib_route_dead(const struct fib_route *r)
{
	return r->nh && r->nh->dead;
}

/*
 * The rare case of fib_match_rcu(): the route the trie found (of length
 * @plen) is dead. The next route of that prefix, or of a shorter one, that
 * is not, as fib_table_lookup() goes on past a dead fib_info. The trie
 * itself never reads a nexthop, so this looks each shorter prefix up.
 */
static const struct fib_route *fib_match_alive_rcu(const struct fib *f, uint32_t table,
						   const struct addr *a, unsigned int plen)
{
	for (int len = (int)plen; len >= 0; len--) {
		struct addr_prefix p = { .a = *a, .plen = (uint8_t)len };
		const struct fib_route *r;
		unsigned int n;

		addr_mask(&p.a, (unsigned int)len);
		r = fib_find_rcu(f, table, &p, &n);
		for (unsigned int i = 0; r && i < n; i++)
			if (!fib_route_dead(&r[i]))
				return &r[i];
	}
	return NULL;
}

const struct fib_route *fib_match_rcu(const struct fib *f, uint32_t table, const struct addr *a,
				      struct addr_prefix *prefix)
{
	const struct fib_table *tb =
		fib_table_get_rcu(f, table ? table : FIB_TABLE_MAIN, a->family);
	const struct fib_route *r;

	if (!tb)
		return NULL;
	if (a->family == AF_INET)
		r = trie4_lookup_rcu(tb->t4, addr_key4(a));
	else
		r = trie6_lookup_rcu(tb->t6, addr_key6(a));
	if (r && fib_route_dead(r))
		r = fib_match_alive_rcu(f, table, a, r->plen);
	if (r && prefix) {
		prefix->a = *a;
		prefix->plen = r->plen;
		addr_mask(&prefix->a, r->plen);
	}
	return r;
}

size_t fib_rule_tables(int family, const uint32_t **tables)
{
	/*
	 * The rules of a namespace nobody changed: `ip rule` 0, 32766 and
	 * 32767; IPv6 has no rule for the default table (`ip -6 rule`).
	 */
	static const uint32_t rules[] = { FIB_TABLE_LOCAL, FIB_TABLE_MAIN, FIB_TABLE_DEFAULT };

	*tables = rules;
	return family == AF_INET ? 3 : 2;
}

const struct fib_route *fib_match_rules_rcu(const struct fib *f, const struct addr *a,
					    struct addr_prefix *prefix, uint32_t *table)
{
	const uint32_t *rules;
	size_t n = fib_rule_tables(a->family, &rules);

	for (size_t i = 0; i < n; i++) {
		const struct fib_route *r = fib_match_rcu(f, rules[i], a, prefix);

		if (!r || r->type == FIB_RT_THROW)
			continue;
		if (table)
			*table = rules[i];
		return r;
	}
	return NULL;
}

int fib_walk_rcu(const struct fib_table *tb,
		 int (*fn)(void *ctx, const struct addr_prefix *p, const struct fib_route *r),
		 void *ctx)
{
	struct fib_walk_pos pos = { .done = false };

	return fib_walk_from_rcu(tb, &pos, UINT_MAX, fn, ctx);
}

int fib_walk_from_rcu(const struct fib_table *tb, struct fib_walk_pos *pos, unsigned int max,
		      int (*fn)(void *ctx, const struct addr_prefix *p, const struct fib_route *r),
		      void *ctx)
{
	struct fib_cursor c = { .done = pos->done };
	const struct fib_route *routes;
	struct addr_prefix p;
	unsigned int n, seen = 0;
	int ret = 0;

	if (pos->from.family == AF_INET)
		c.from = addr_key4(&pos->from);
	else if (pos->from.family == AF_INET6)
		c.from = addr_key6(&pos->from);
	while (!ret && seen < max && fib_next_leaf_rcu(tb, &c, &p.a, &routes, &n) == 0) {
		for (unsigned int i = 0; i < n && !ret; i++) {
			p.plen = routes[i].plen;
			ret = fn(ctx, &p, &routes[i]);
		}
		seen += n;
	}
	/* The cursor went past every leaf it returned, or found none after it. */
	if (seen < max && !ret)
		c.done = true;
	pos->done = c.done;
	if (!c.done) {
		if (tb->family == AF_INET)
			addr_from_key4(&pos->from, (uint32_t)c.from);
		else
			addr_from_key6(&pos->from, c.from);
	}
	return ret;
}

void fib_get_state(const struct fib *f, struct fib_state *st)
{
	const struct fib_tables *ts;

	memset(st, 0, sizeof(*st));
	urcu_memb_read_lock();
	ts = rcu_dereference(f->tables);
	st->tables = ts->n;
	for (unsigned int i = 0; i < ts->n; i++) {
		if (ts->t[i]->family == AF_INET)
			st->routes4 += trie4_routes(ts->t[i]->t4);
		else
			st->routes6 += trie6_routes(ts->t[i]->t6);
	}
	urcu_memb_read_unlock();
	nh_table_counts(f->nt, &st->nh_anonymous, &st->nh_objects);
	reclaim_get_stats(f->rc, &st->reclaim);
	mem_get_stats(f->mem, &st->mem);
}

void fib_table_stats_rcu(const struct fib_table *tb, struct trie_stats *st)
{
	if (tb->family == AF_INET)
		trie4_get_stats(tb->t4, st);
	else
		trie6_get_stats(tb->t6, st);
}

static int fib_count_nh_ref(void *ctx, const struct addr_prefix *p, const struct fib_route *r)
{
	(void)ctx;
	(void)p;
	if (r->nh)
		r->nh->check_refs++;
	return 0;
}

void fib_table_dump_rcu(const struct fib_table *tb, FILE *f)
{
	if (tb->family == AF_INET)
		trie4_dump(tb->t4, f);
	else
		trie6_dump(tb->t6, f);
}

int fib_check(const struct fib *f, struct errbuf *err)
{
	for (unsigned int i = 0; i < f->tables->n; i++) {
		const struct fib_table *tb = f->tables->t[i];
		int ret =
			tb->family == AF_INET ? trie4_check(tb->t4, err) : trie6_check(tb->t6, err);

		if (ret) {
			err_prefix(err, "table %u %s", tb->id,
				   tb->family == AF_INET ? "inet" : "inet6");
			return ret;
		}
	}
	/* Every nexthop's refcnt is the routes, groups and table that hold it. */
	nh_check_begin(f->nt);
	for (unsigned int i = 0; i < f->tables->n; i++)
		fib_walk_rcu(f->tables->t[i], fib_count_nh_ref, NULL);
	return nh_check_end(f->nt, err);
}

/* ------------------------------------------------------------- printing */

static size_t fib_path_format(const struct nh_path *p, char *buf, size_t size)
{
	char gw[ADDR_STRLEN];
	size_t n = 0;

	if (p->gw_family == AF_INET || p->gw_family == AF_INET6) {
		inet_ntop(p->gw_family, &p->gw, gw, sizeof(gw));
		n += (size_t)snprintf(buf + n, size - n, " via %s", gw);
	}
	if (p->ifindex && n < size)
		n += (size_t)snprintf(buf + n, size - n, " dev %u", p->ifindex);
	return n < size ? n : size - 1;
}

void fib_route_format(const struct addr_prefix *p, const struct fib_route *r, char *buf,
		      size_t size)
{
	char pfx[ADDR_STRLEN];
	size_t n = 0;

	addr_prefix_format(p, pfx, sizeof(pfx));
	if (r->type != FIB_RT_UNICAST)
		n += (size_t)snprintf(buf + n, size - n, "%s ", fib_rtype_name(r->type));
	n += (size_t)snprintf(buf + n, size - n, "%s", pfx);
	if (r->nh && n < size) {
		const struct nh_info *info = nh_info_rcu(r->nh);

		if (r->nh->id)
			n += (size_t)snprintf(buf + n, size - n, " nhid %u", r->nh->id);
		if (info->kind == NH_KIND_BLACKHOLE && n < size)
			n += (size_t)snprintf(buf + n, size - n, " blackhole");
		else if (info->n == 1 && n < size)
			n += fib_path_format(&info->path[0], buf + n, size - n);
		for (unsigned int i = 0; info->n > 1 && i < info->n && n < size; i++) {
			n += (size_t)snprintf(buf + n, size - n, " nexthop");
			if (n < size)
				n += fib_path_format(&info->path[i], buf + n, size - n);
			if (n < size)
				n += (size_t)snprintf(buf + n, size - n, " weight %u",
						      info->path[i].weight);
		}
	}
	if (n < size)
		snprintf(buf + n, size - n, " proto %u metric %u", r->proto, r->metric);
}
