/* SPDX-License-Identifier: MIT */
/*
 * Nexthops: shared, reference-counted, addressable by id.
 *
 * A route points at one struct nh. Two kinds exist:
 *  - anonymous nexthops (id 0), made from a route's own gateway(s)
 *    (RTA_GATEWAY/RTA_OIF or RTA_MULTIPATH) and shared by value: the ~1M
 *    routes of a full table share a handful of them;
 *  - nexthop objects (id > 0) made by RTM_NEWNEXTHOP, which routes name
 *    with RTA_NH_ID: a single path, a blackhole, or a group of other
 *    objects with weights (NHA_GROUP).
 * What a reader sees is the nh's info: immutable once published, replaced
 * whole when an object is replaced, so a route follows its object.
 *
 * Threads: everything but nh_info_rcu() belongs to the writer.
 */
#ifndef LCFIB_NH_H
#define LCFIB_NH_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/err.h"
#include "lib/mem.h"
#include "lib/reclaim.h"

#define NH_MAX_PATHS 64 /* paths of one multipath route or group */

enum nh_kind {
	NH_KIND_PATH = 1,  /* one path (gateway and/or interface) */
	NH_KIND_MULTIPATH, /* anonymous ECMP: a route's RTA_MULTIPATH */
	NH_KIND_GROUP,     /* object group: paths are its members', flattened */
	NH_KIND_BLACKHOLE, /* object with NHA_BLACKHOLE */
};

#define NH_F_ONLINK   0x1 /* RTNH_F_ONLINK */
#define NH_F_DEAD     0x2 /* RTNH_F_DEAD: the kernel does not use this path */
#define NH_F_LINKDOWN 0x4 /* RTNH_F_LINKDOWN: its device has no carrier */
#define NH_F_SRC      0x8 /* prefsrc holds RTA_PREFSRC, of the route's family */

/*
 * The flags and the preferred source are part of a path's identity: two
 * routes share an anonymous nexthop only if they agree on them too.
 */
struct nh_path {
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} gw;
	uint32_t ifindex;  /* 0: none */
	uint16_t weight;   /* 1..256: netlink's rtnh_hops + 1, or NHA_GROUP weight + 1 */
	uint8_t gw_family; /* AF_UNSPEC (no gateway), AF_INET or AF_INET6 */
	uint8_t flags;     /* NH_F_* */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} prefsrc;         /* with NH_F_SRC: RTA_PREFSRC (the kernel's "src") */
	struct nh *member; /* group: the object this path comes from; else NULL */
};

/* Whether a lookup may choose @p: the kernel skips dead paths (fib_select_multipath). */
static inline bool nh_path_alive(const struct nh_path *p)
{
	return !(p->flags & NH_F_DEAD);
}

struct nh_info {
	uint8_t kind;   /* enum nh_kind */
	uint8_t family; /* AF_INET/AF_INET6 of an object, AF_UNSPEC otherwise */
	uint16_t n;     /* paths */
	struct nh_path path[];
};

struct nh {
	struct nh_info *info; /* RCU: readers use nh_info_rcu() */
	uint32_t id;          /* 0: anonymous */
	uint32_t refcnt;      /* writer only */
	uint32_t hash;        /* writer only: of the info, for anonymous ones */
	uint32_t nr_groups;   /* writer only: groups that hold this object */
	uint32_t check_refs;  /* writer only: references counted by fib_check() */
	/*
	 * Anonymous: every path is NH_F_DEAD, so lookups pass the route by as
	 * the kernel's fib_table_lookup() does. Set before the nh is published
	 * and never changed (its info never is), so readers read it plainly.
	 */
	uint8_t dead;
	struct nh *next_id; /* writer only: hash chains */
	struct nh *next_val;
};

/* A nexthop object as RTM_NEWNEXTHOP describes it. */
struct nh_obj_cfg {
	uint32_t id;
	uint8_t family;
	uint8_t blackhole;
	uint16_t n_members;  /* > 0: a group of these objects */
	struct nh_path path; /* single path (no members, no blackhole) */
	struct {
		uint32_t id;
		uint16_t weight; /* 1..256 */
	} member[NH_MAX_PATHS];
};

struct nh_table;

/* Returns NULL with errno set. */
struct nh_table *nh_table_new(struct mem *m, struct reclaim *rc);
/* Frees every nexthop now: no readers, no routes left. */
void nh_table_destroy(struct nh_table *nt);

/*
 * The shared anonymous nexthop for @n paths (1: a single path, more:
 * multipath), with a reference taken; made if new. NULL with -errno in
 * *@ret and a message on bad paths (no gateway nor device, weight 0,
 * too many) or no memory.
 */
struct nh *nh_get_paths(struct nh_table *nt, const struct nh_path *paths, unsigned int n, int *ret,
			struct errbuf *err);
/* The object @id with a reference taken, or NULL (-ENOENT in *@ret, message). */
struct nh *nh_get_id(struct nh_table *nt, uint32_t id, int *ret, struct errbuf *err);
/* Takes another reference. */
void nh_hold(struct nh *nh);
/*
 * Whether @a and @b lead to the same place: the same gateway (family and
 * address) and device; weights and flags apart (the kernel's
 * rt6_duplicate_nexthop).
 */
bool nh_path_same(const struct nh_path *a, const struct nh_path *b);
/* Drops a reference; the last one unlinks the nexthop and retires it. */
void nh_put(struct nh_table *nt, struct nh *nh);

/* The object @id or NULL; no reference taken. */
struct nh *nh_find_id(const struct nh_table *nt, uint32_t id);

/*
 * RTM_NEWNEXTHOP. @flags are FIB_F_* (lib/fib.h): without REPLACE an
 * existing id is -EEXIST; with it the object's info is replaced, and the
 * groups holding it follow. Members of a group must exist and must not be
 * groups (-EINVAL). On error nothing changed.
 */
int nh_obj_set(struct nh_table *nt, const struct nh_obj_cfg *cfg, unsigned int flags,
	       struct errbuf *err);

/*
 * RTM_DELNEXTHOP, after the caller has removed the routes that use @nh:
 * drops it from every group that holds it (groups left empty are returned
 * through @emptied, up to @cap of them, for the caller to remove their
 * routes and delete them in turn) and drops the object's own reference.
 */
int nh_obj_del(struct nh_table *nt, struct nh *nh, struct nh **emptied, unsigned int cap,
	       unsigned int *n_emptied, struct errbuf *err);

/* Calls @fn for every nexthop object (id > 0), in no order. Writer. */
void nh_for_each_obj(const struct nh_table *nt, void (*fn)(void *ctx, struct nh *nh), void *ctx);

/*
 * Writer, for invariant checks: nh_check_begin() counts the references
 * that objects and groups hold; the caller adds one per route (check_refs)
 * and nh_check_end() compares with every refcnt: -EUCLEAN and a message on
 * the first difference.
 */
void nh_check_begin(struct nh_table *nt);
int nh_check_end(const struct nh_table *nt, struct errbuf *err);

/* Number of live nexthops: anonymous and objects. */
void nh_table_counts(const struct nh_table *nt, uint64_t *anonymous, uint64_t *objects);

/* Reader (RCU read lock held), or writer. Valid until rcu_read_unlock. */
static inline const struct nh_info *nh_info_rcu(const struct nh *nh)
{
	return __atomic_load_n(&nh->info, __ATOMIC_CONSUME);
}

#endif
