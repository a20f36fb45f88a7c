/* SPDX-License-Identifier: MIT */
/*
 * A route as the trie stores it and as lookups return it. Public:
 * <lcfib/route.h>.
 */
#ifndef LCFIB_ROUTE_H
#define LCFIB_ROUTE_H

#include <stdint.h>

struct nh;

#define TRIE_LEAF_MAX 255 /* routes on one key (all prefix lengths of one address together) */

/* Route types; the values are the kernel's RTN_* so netlink maps one to one. */
enum fib_rtype {
	FIB_RT_UNSPEC = 0,
	FIB_RT_UNICAST = 1,
	FIB_RT_LOCAL = 2,
	FIB_RT_BROADCAST = 3,
	FIB_RT_ANYCAST = 4,
	FIB_RT_MULTICAST = 5,
	FIB_RT_BLACKHOLE = 6,
	FIB_RT_UNREACHABLE = 7,
	FIB_RT_PROHIBIT = 8,
	FIB_RT_THROW = 9,
	FIB_RT_MAX = FIB_RT_THROW,
};

/*
 * One route of one prefix: 16 bytes, stored inline in the trie's leaves.
 * Routes of one leaf are ordered longest prefix first, then by metric,
 * then in the order netlink's create/append/prepend semantics give; a
 * lookup returns the first route of the longest matching prefix, as the
 * kernel's fib_table_lookup does.
 */
struct fib_route {
	struct nh *nh;   /* shared nexthop or group; NULL for types without one */
	uint32_t metric; /* RTA_PRIORITY */
	uint8_t plen;    /* prefix length */
	uint8_t type;    /* enum fib_rtype */
	uint8_t proto;   /* RTPROT_* */
	uint8_t scope;   /* RT_SCOPE_* */
};

#endif
