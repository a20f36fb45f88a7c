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
 * Public (installed as <lcfib/nh.h>): what routes and lookups show of
 * nexthops. Objects are made and deleted with fib_nh_set() and
 * fib_nh_del() (lib/fib.h); the writer's table of nexthops is
 * lib/nh-int.h.
 */
#ifndef LCFIB_NH_H
#define LCFIB_NH_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

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

/*
 * Whether @a and @b lead to the same place: the same gateway (family and
 * address) and device; weights and flags apart (the kernel's
 * rt6_duplicate_nexthop). Any thread.
 */
bool nh_path_same(const struct nh_path *a, const struct nh_path *b);

/* Reader (RCU read lock held), or writer. Valid until rcu_read_unlock. */
static inline const struct nh_info *nh_info_rcu(const struct nh *nh)
{
	return __atomic_load_n(&nh->info, __ATOMIC_CONSUME);
}

#endif
