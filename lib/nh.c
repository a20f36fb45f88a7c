/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <urcu/pointer.h>
#include <urcu/uatomic.h>

#include "lib/nh-int.h"
#include "lib/nh.h"

/* Two chained hash tables, writer only: objects by id, anonymous nexthops by value. */
struct nh_hash {
	struct nh **bucket;
	uint32_t mask; /* buckets - 1 */
	uint64_t count;
};

struct nh_table {
	struct mem *mem;
	struct reclaim *rc;
	struct nh_hash by_id;
	struct nh_hash by_val;
};

#define NH_HASH_INITIAL 64

_Static_assert(sizeof(struct nh_info) % 8 == 0 && sizeof(struct nh_path) % 8 == 0,
	       "nh_info_hash() reads whole words");

static size_t nh_info_size(unsigned int n)
{
	return sizeof(struct nh_info) + n * sizeof(struct nh_path);
}

/*
 * Hashes an info a word at a time (infos are whole 8-byte words, zeroed
 * where unused): every route add of a full-table load comes through here.
 */
static uint32_t nh_info_hash(const struct nh_info *info)
{
	size_t words = nh_info_size(info->n) / sizeof(uint64_t);
	uint64_t h = 0x9e3779b97f4a7c15ull, w;

	for (size_t i = 0; i < words; i++) {
		memcpy(&w, (const char *)info + i * sizeof(w), sizeof(w));
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return (uint32_t)h;
}

static uint32_t nh_id_hash(uint32_t id)
{
	return id * 2654435761u;
}

static int nh_hash_init(struct nh_table *nt, struct nh_hash *h)
{
	h->bucket = mem_alloc(nt->mem, MEM_HASH, NH_HASH_INITIAL * sizeof(*h->bucket));
	if (!h->bucket)
		return -ENOMEM;
	memset(h->bucket, 0, NH_HASH_INITIAL * sizeof(*h->bucket));
	h->mask = NH_HASH_INITIAL - 1;
	h->count = 0;
	return 0;
}

static struct nh **nh_next(struct nh *nh, bool by_id)
{
	return by_id ? &nh->next_id : &nh->next_val;
}

static uint32_t nh_key(const struct nh *nh, bool by_id)
{
	return by_id ? nh_id_hash(nh->id) : nh->hash;
}

/* Doubles @h when it is full; a failure only leaves the chains longer. */
static void nh_hash_grow(struct nh_table *nt, struct nh_hash *h, bool by_id)
{
	uint32_t size = (h->mask + 1) * 2;
	struct nh **b;

	if (h->count < h->mask + 1u)
		return;
	b = mem_alloc(nt->mem, MEM_HASH, size * sizeof(*b));
	if (!b)
		return;
	memset(b, 0, size * sizeof(*b));
	for (uint32_t i = 0; i <= h->mask; i++) {
		struct nh *nh, *next;

		for (nh = h->bucket[i]; nh; nh = next) {
			next = *nh_next(nh, by_id);
			*nh_next(nh, by_id) = b[nh_key(nh, by_id) & (size - 1)];
			b[nh_key(nh, by_id) & (size - 1)] = nh;
		}
	}
	mem_free(nt->mem, MEM_HASH, h->bucket, (h->mask + 1) * sizeof(*b));
	h->bucket = b;
	h->mask = size - 1;
}

static void nh_hash_add(struct nh_table *nt, struct nh_hash *h, struct nh *nh, bool by_id)
{
	struct nh **head;

	nh_hash_grow(nt, h, by_id);
	head = &h->bucket[nh_key(nh, by_id) & h->mask];
	*nh_next(nh, by_id) = *head;
	*head = nh;
	/* Counts are read by any thread (fib_get_state()). */
	uatomic_set(&h->count, h->count + 1);
}

static void nh_hash_del(struct nh_hash *h, struct nh *nh, bool by_id)
{
	struct nh **pp = &h->bucket[nh_key(nh, by_id) & h->mask];

	for (; *pp; pp = nh_next(*pp, by_id)) {
		if (*pp == nh) {
			*pp = *nh_next(nh, by_id);
			uatomic_set(&h->count, h->count - 1);
			return;
		}
	}
}

struct nh_table *nh_table_new(struct mem *m, struct reclaim *rc)
{
	struct nh_table *nt = mem_alloc(m, MEM_TABLE, sizeof(*nt));

	if (!nt)
		return NULL;
	memset(nt, 0, sizeof(*nt));
	nt->mem = m;
	nt->rc = rc;
	if (nh_hash_init(nt, &nt->by_id) || nh_hash_init(nt, &nt->by_val)) {
		if (nt->by_id.bucket)
			mem_free(m, MEM_HASH, nt->by_id.bucket,
				 NH_HASH_INITIAL * sizeof(*nt->by_id.bucket));
		mem_free(m, MEM_TABLE, nt, sizeof(*nt));
		errno = ENOMEM;
		return NULL;
	}
	return nt;
}

static void nh_free_now(struct nh_table *nt, struct nh *nh)
{
	mem_free(nt->mem, MEM_NH_INFO, nh->info, nh_info_size(nh->info->n));
	mem_free(nt->mem, MEM_NH, nh, sizeof(*nh));
}

static void nh_hash_free(struct nh_table *nt, struct nh_hash *h, bool by_id)
{
	for (uint32_t i = 0; i <= h->mask; i++) {
		struct nh *nh, *next;

		for (nh = h->bucket[i]; nh; nh = next) {
			next = *nh_next(nh, by_id);
			nh_free_now(nt, nh);
		}
	}
	mem_free(nt->mem, MEM_HASH, h->bucket, (h->mask + 1) * sizeof(*h->bucket));
}

void nh_table_destroy(struct nh_table *nt)
{
	if (!nt)
		return;
	nh_hash_free(nt, &nt->by_id, true);
	nh_hash_free(nt, &nt->by_val, false);
	mem_free(nt->mem, MEM_TABLE, nt, sizeof(*nt));
}

/* Copies @in into @out with every byte not in use zeroed, so equal paths compare equal. */
static int nh_path_normalize(const struct nh_path *in, struct nh_path *out, struct errbuf *err)
{
	memset(out, 0, sizeof(*out));
	out->ifindex = in->ifindex;
	out->flags = in->flags;
	if (in->flags & NH_F_SRC)
		out->prefsrc = in->prefsrc;
	out->gw_family = in->gw_family;
	out->weight = in->weight ? in->weight : 1;
	if (out->weight > 256) {
		err_set(err, "nexthop weight %u is out of range 1..256", in->weight);
		return -EINVAL;
	}
	switch (in->gw_family) {
	case AF_UNSPEC:
		if (!in->ifindex) {
			err_set(err, "nexthop has neither a gateway nor a device");
			return -EINVAL;
		}
		break;
	case AF_INET:
		out->gw.v4 = in->gw.v4;
		break;
	case AF_INET6:
		out->gw.v6 = in->gw.v6;
		break;
	default:
		err_set(err, "nexthop gateway family %u is neither IPv4 nor IPv6", in->gw_family);
		return -EINVAL;
	}
	return 0;
}

static struct nh *nh_new(struct nh_table *nt, uint32_t id, struct nh_info *info)
{
	struct nh *nh = mem_alloc(nt->mem, MEM_NH, sizeof(*nh));

	if (!nh)
		return NULL;
	memset(nh, 0, sizeof(*nh));
	nh->id = id;
	nh->refcnt = 1;
	nh->info = info;
	nh->hash = nh_info_hash(info);
	return nh;
}

static struct nh_info *nh_info_new(struct nh_table *nt, uint8_t kind, uint8_t family,
				   unsigned int n)
{
	struct nh_info *info = mem_alloc(nt->mem, MEM_NH_INFO, nh_info_size(n));

	if (!info)
		return NULL;
	memset(info, 0, nh_info_size(n));
	info->kind = kind;
	info->family = family;
	info->n = (uint16_t)n;
	return info;
}

struct nh *nh_get_paths(struct nh_table *nt, const struct nh_path *paths, unsigned int n, int *ret,
			struct errbuf *err)
{
	struct {
		struct nh_info info;
		struct nh_path path[NH_MAX_PATHS];
	} key;
	struct nh_info *info;
	struct nh *nh;
	uint32_t hash;

	if (n == 0 || n > NH_MAX_PATHS) {
		err_set(err, "a route needs 1 to %u nexthops, not %u", NH_MAX_PATHS, n);
		*ret = -EINVAL;
		return NULL;
	}
	/* Only what is hashed and compared: the header and the @n paths. */
	memset(&key, 0, nh_info_size(n));
	key.info.kind = n == 1 ? NH_KIND_PATH : NH_KIND_MULTIPATH;
	key.info.n = (uint16_t)n;
	for (unsigned int i = 0; i < n; i++) {
		*ret = nh_path_normalize(&paths[i], &key.path[i], err);
		if (*ret) {
			if (n > 1)
				err_prefix(err, "nexthop %u", i + 1);
			return NULL;
		}
	}
	hash = nh_info_hash(&key.info);
	for (nh = nt->by_val.bucket[hash & nt->by_val.mask]; nh; nh = nh->next_val) {
		if (nh->hash == hash && nh->info->n == n &&
		    memcmp(nh->info, &key.info, nh_info_size(n)) == 0) {
			nh->refcnt++;
			return nh;
		}
	}
	info = nh_info_new(nt, key.info.kind, AF_UNSPEC, n);
	if (!info)
		goto nomem;
	memcpy(info, &key.info, nh_info_size(n));
	nh = nh_new(nt, 0, info);
	if (!nh) {
		mem_free(nt->mem, MEM_NH_INFO, info, nh_info_size(n));
		goto nomem;
	}
	nh->dead = 1;
	for (unsigned int i = 0; i < n && nh->dead; i++)
		nh->dead = !nh_path_alive(&info->path[i]);
	nh_hash_add(nt, &nt->by_val, nh, false);
	return nh;
nomem:
	err_set(err, "out of memory for a nexthop");
	*ret = -ENOMEM;
	return NULL;
}

bool nh_path_same(const struct nh_path *a, const struct nh_path *b)
{
	if (a->ifindex != b->ifindex || a->gw_family != b->gw_family)
		return false;
	if (a->gw_family == AF_INET)
		return a->gw.v4.s_addr == b->gw.v4.s_addr;
	if (a->gw_family == AF_INET6)
		return memcmp(&a->gw.v6, &b->gw.v6, sizeof(a->gw.v6)) == 0;
	return true;
}

struct nh *nh_find_id(const struct nh_table *nt, uint32_t id)
{
	struct nh *nh = nt->by_id.bucket[nh_id_hash(id) & nt->by_id.mask];

	while (nh && nh->id != id)
		nh = nh->next_id;
	return nh;
}

struct nh *nh_get_id(struct nh_table *nt, uint32_t id, int *ret, struct errbuf *err)
{
	struct nh *nh = nh_find_id(nt, id);

	if (!nh) {
		err_set(err, "nexthop id %u does not exist", id);
		*ret = -ENOENT;
		return NULL;
	}
	nh->refcnt++;
	return nh;
}

void nh_hold(struct nh *nh)
{
	nh->refcnt++;
}

static void nh_retire_info(struct nh_table *nt, struct nh_info *info)
{
	reclaim_retire(nt->rc, info, nh_info_size(info->n), MEM_NH_INFO);
}

/* Drops the references a group's info holds on its members. */
static void nh_group_release(struct nh_table *nt, const struct nh_info *info)
{
	if (info->kind != NH_KIND_GROUP)
		return;
	for (unsigned int i = 0; i < info->n; i++) {
		info->path[i].member->nr_groups--;
		nh_put(nt, info->path[i].member);
	}
}

void nh_put(struct nh_table *nt, struct nh *nh)
{
	struct nh_info *info;

	if (--nh->refcnt)
		return;
	if (nh->id)
		nh_hash_del(&nt->by_id, nh, true);
	else
		nh_hash_del(&nt->by_val, nh, false);
	info = nh->info;
	nh_group_release(nt, info);
	nh_retire_info(nt, info);
	reclaim_retire(nt->rc, nh, sizeof(*nh), MEM_NH);
}

/*
 * A group's info from its members and weights: each member's path,
 * flattened, so a reader follows one pointer. Takes no references.
 */
static struct nh_info *nh_group_info(struct nh_table *nt, struct nh *const *members,
				     const uint16_t *weights, unsigned int n, uint8_t family)
{
	struct nh_info *info = nh_info_new(nt, NH_KIND_GROUP, family, n);

	if (!info)
		return NULL;
	for (unsigned int i = 0; i < n; i++) {
		info->path[i] = members[i]->info->path[0];
		info->path[i].weight = weights[i];
		info->path[i].member = members[i];
	}
	return info;
}

/* Validates @cfg and builds the info it describes; members in @members (no references yet). */
static int nh_obj_info(struct nh_table *nt, const struct nh_obj_cfg *cfg, struct nh **members,
		       struct nh_info **out, struct errbuf *err)
{
	uint16_t weights[NH_MAX_PATHS];
	struct nh_info *info;
	int ret;

	if (cfg->n_members) {
		if (cfg->n_members > NH_MAX_PATHS) {
			err_set(err, "nexthop group %u has %u members, more than %u", cfg->id,
				cfg->n_members, NH_MAX_PATHS);
			return -EINVAL;
		}
		for (unsigned int i = 0; i < cfg->n_members; i++) {
			members[i] = nh_find_id(nt, cfg->member[i].id);
			if (!members[i]) {
				err_set(err, "nexthop group %u: member id %u does not exist",
					cfg->id, cfg->member[i].id);
				return -EINVAL;
			}
			if (members[i]->info->kind != NH_KIND_PATH || members[i]->id == cfg->id) {
				err_set(err, "nexthop group %u: member %u is not a single nexthop",
					cfg->id, cfg->member[i].id);
				return -EINVAL;
			}
			for (unsigned int j = 0; j < i; j++) {
				if (members[j] == members[i]) {
					err_set(err, "nexthop group %u: member %u appears twice",
						cfg->id, cfg->member[i].id);
					return -EINVAL;
				}
			}
			weights[i] = cfg->member[i].weight ? cfg->member[i].weight : 1;
			if (weights[i] > 256) {
				err_set(err, "nexthop group %u: weight %u is out of range 1..256",
					cfg->id, cfg->member[i].weight);
				return -EINVAL;
			}
		}
		info = nh_group_info(nt, members, weights, cfg->n_members, cfg->family);
	} else if (cfg->blackhole) {
		info = nh_info_new(nt, NH_KIND_BLACKHOLE, cfg->family, 0);
	} else {
		struct nh_path p;

		ret = nh_path_normalize(&cfg->path, &p, err);
		if (ret) {
			err_prefix(err, "nexthop %u", cfg->id);
			return ret;
		}
		info = nh_info_new(nt, NH_KIND_PATH, cfg->family, 1);
		if (info)
			info->path[0] = p;
	}
	if (!info) {
		err_set(err, "out of memory for nexthop %u", cfg->id);
		return -ENOMEM;
	}
	*out = info;
	return 0;
}

static void nh_take_members(struct nh_info *info)
{
	if (info->kind != NH_KIND_GROUP)
		return;
	for (unsigned int i = 0; i < info->n; i++) {
		info->path[i].member->refcnt++;
		info->path[i].member->nr_groups++;
	}
}

struct nh_regroup {
	struct nh *group;
	struct nh_info *info;
};

/* The groups holding @member, with new infos built for after its change. */
static int nh_regroup_prepare(struct nh_table *nt, const struct nh *member, struct nh_regroup *rg,
			      unsigned int *n)
{
	*n = 0;
	for (uint32_t b = 0; b <= nt->by_id.mask && *n < member->nr_groups; b++) {
		for (struct nh *g = nt->by_id.bucket[b]; g; g = g->next_id) {
			struct nh *members[NH_MAX_PATHS];
			uint16_t weights[NH_MAX_PATHS];
			const struct nh_info *gi = g->info;
			bool holds = false;

			if (gi->kind != NH_KIND_GROUP)
				continue;
			for (unsigned int i = 0; i < gi->n; i++) {
				members[i] = gi->path[i].member;
				weights[i] = gi->path[i].weight;
				holds |= members[i] == member;
			}
			if (!holds)
				continue;
			rg[*n].group = g;
			rg[*n].info = nh_group_info(nt, members, weights, gi->n, gi->family);
			if (!rg[*n].info) {
				for (unsigned int i = 0; i < *n; i++)
					mem_free(nt->mem, MEM_NH_INFO, rg[i].info,
						 nh_info_size(rg[i].info->n));
				return -ENOMEM;
			}
			(*n)++;
		}
	}
	return 0;
}

int nh_obj_set(struct nh_table *nt, const struct nh_obj_cfg *cfg, unsigned int flags,
	       struct errbuf *err)
{
	struct nh *members[NH_MAX_PATHS];
	struct nh *nh = nh_find_id(nt, cfg->id);
	struct nh_regroup *rg = NULL;
	struct nh_info *info, *old;
	unsigned int nrg = 0;
	int ret;

	if (cfg->id == 0) {
		err_set(err, "nexthop id 0 is reserved");
		return -EINVAL;
	}
	if (nh && !(flags & 0x4 /* FIB_F_REPLACE */)) {
		err_set(err, "nexthop id %u already exists", cfg->id);
		return -EEXIST;
	}
	ret = nh_obj_info(nt, cfg, members, &info, err);
	if (ret)
		return ret;
	if (nh && (nh->info->kind == NH_KIND_GROUP) != (info->kind == NH_KIND_GROUP)) {
		err_set(err, "nexthop %u: a group and a single nexthop cannot replace each other",
			cfg->id);
		ret = -EINVAL;
		goto free_info;
	}
	if (nh && nh->nr_groups && info->kind != NH_KIND_PATH) {
		err_set(err, "nexthop %u is in a group and must stay a single path", cfg->id);
		ret = -EINVAL;
		goto free_info;
	}

	if (!nh) {
		nh = nh_new(nt, cfg->id, info);
		if (!nh) {
			err_set(err, "out of memory for nexthop %u", cfg->id);
			ret = -ENOMEM;
			goto free_info;
		}
		nh_take_members(info);
		nh_hash_add(nt, &nt->by_id, nh, true);
		return 0;
	}

	/* Replace: the groups holding it are rebuilt around the new info. */
	if (nh->nr_groups) {
		rg = calloc(nh->nr_groups, sizeof(*rg));
		if (!rg || nh_regroup_prepare(nt, nh, rg, &nrg)) {
			free(rg);
			err_set(err, "out of memory replacing nexthop %u", cfg->id);
			ret = -ENOMEM;
			goto free_info;
		}
	}
	nh_take_members(info);
	old = nh->info;
	rcu_assign_pointer(nh->info, info);
	for (unsigned int i = 0; i < nrg; i++) {
		for (unsigned int j = 0; j < rg[i].info->n; j++) {
			if (rg[i].info->path[j].member == nh) {
				rg[i].info->path[j] = info->path[0];
				rg[i].info->path[j].weight = rg[i].group->info->path[j].weight;
				rg[i].info->path[j].member = nh;
			}
		}
		struct nh_info *gold = rg[i].group->info;

		rcu_assign_pointer(rg[i].group->info, rg[i].info);
		nh_retire_info(nt, gold);
	}
	free(rg);
	nh_group_release(nt, old);
	nh_retire_info(nt, old);
	return 0;
free_info:
	mem_free(nt->mem, MEM_NH_INFO, info, nh_info_size(info->n));
	return ret;
}

/* The groups that hold @member, at most @cap of them. */
static unsigned int nh_groups_of(const struct nh_table *nt, const struct nh *member,
				 struct nh **groups, unsigned int cap)
{
	unsigned int n = 0;

	for (uint32_t b = 0; b <= nt->by_id.mask; b++) {
		for (struct nh *g = nt->by_id.bucket[b]; g && n < cap; g = g->next_id) {
			if (g->info->kind != NH_KIND_GROUP)
				continue;
			for (unsigned int i = 0; i < g->info->n; i++) {
				if (g->info->path[i].member == member) {
					groups[n++] = g;
					break;
				}
			}
		}
	}
	return n;
}

int nh_obj_del(struct nh_table *nt, struct nh *nh, struct nh **emptied, unsigned int cap,
	       unsigned int *n_emptied, struct errbuf *err)
{
	unsigned int n = nh->nr_groups;
	struct nh **groups = NULL;

	*n_emptied = 0;
	if (!nh->id) {
		err_set(err, "an anonymous nexthop is not an object");
		return -EINVAL;
	}
	if (n) {
		groups = malloc(n * sizeof(*groups));
		if (!groups) {
			err_set(err, "out of memory deleting nexthop %u", nh->id);
			return -ENOMEM;
		}
		n = nh_groups_of(nt, nh, groups, n);
	}
	/*
	 * A group left with no member is handed back for the caller to delete
	 * (with its routes); it keeps its reference on @nh until then. The
	 * others drop @nh from their info.
	 */
	for (unsigned int k = 0; k < n; k++) {
		struct nh *g = groups[k];
		struct nh_info *gi, *gold = g->info;

		if (gold->n == 1) {
			if (*n_emptied == cap) {
				err_set(err, "nexthop %u: too many groups to empty at once",
					nh->id);
				free(groups);
				return -ENOSPC;
			}
			emptied[(*n_emptied)++] = g;
			continue;
		}
		gi = nh_info_new(nt, NH_KIND_GROUP, gold->family, gold->n - 1u);
		if (!gi) {
			err_set(err, "out of memory deleting nexthop %u", nh->id);
			free(groups);
			return -ENOMEM;
		}
		for (unsigned int i = 0, j = 0; i < gold->n; i++) {
			if (gold->path[i].member != nh)
				gi->path[j++] = gold->path[i];
		}
		rcu_assign_pointer(g->info, gi);
		nh_retire_info(nt, gold);
		nh->nr_groups--;
		nh_put(nt, nh);
	}
	free(groups);
	/* No new route can name it; the table's own reference goes. */
	nh_hash_del(&nt->by_id, nh, true);
	nh_put(nt, nh);
	return 0;
}

static void nh_hash_each(const struct nh_hash *h, bool by_id, void (*fn)(void *ctx, struct nh *nh),
			 void *ctx);

void nh_for_each_obj(const struct nh_table *nt, void (*fn)(void *ctx, struct nh *nh), void *ctx)
{
	nh_hash_each(&nt->by_id, true, fn, ctx);
}

static void nh_hash_each(const struct nh_hash *h, bool by_id, void (*fn)(void *ctx, struct nh *nh),
			 void *ctx)
{
	for (uint32_t b = 0; b <= h->mask; b++) {
		for (struct nh *nh = h->bucket[b]; nh; nh = *nh_next(nh, by_id))
			fn(ctx, nh);
	}
}

static void nh_check_zero(void *ctx, struct nh *nh)
{
	(void)ctx;
	nh->check_refs = 0;
}

static void nh_check_own(void *ctx, struct nh *nh)
{
	(void)ctx;
	nh->check_refs++; /* the id table's own reference */
	if (nh->info->kind == NH_KIND_GROUP) {
		for (unsigned int i = 0; i < nh->info->n; i++)
			nh->info->path[i].member->check_refs++;
	}
}

void nh_check_begin(struct nh_table *nt)
{
	nh_hash_each(&nt->by_id, true, nh_check_zero, NULL);
	nh_hash_each(&nt->by_val, false, nh_check_zero, NULL);
	nh_hash_each(&nt->by_id, true, nh_check_own, NULL);
}

struct nh_check_ctx {
	struct errbuf *err;
	int ret;
};

static void nh_check_one(void *ctx, struct nh *nh)
{
	struct nh_check_ctx *c = ctx;

	if (c->ret || nh->check_refs == nh->refcnt)
		return;
	err_set(c->err, "nexthop %u (%s): refcnt %u, but %u references found", nh->id,
		nh->id ? "object" : "anonymous", nh->refcnt, nh->check_refs);
	c->ret = -EUCLEAN;
}

int nh_check_end(const struct nh_table *nt, struct errbuf *err)
{
	struct nh_check_ctx c = { .err = err };

	nh_hash_each(&nt->by_id, true, nh_check_one, &c);
	nh_hash_each(&nt->by_val, false, nh_check_one, &c);
	return c.ret;
}

void nh_table_counts(const struct nh_table *nt, uint64_t *anonymous, uint64_t *objects)
{
	*anonymous = uatomic_read(&nt->by_val.count);
	*objects = uatomic_read(&nt->by_id.count);
}
