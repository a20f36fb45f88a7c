/* SPDX-License-Identifier: MIT */
/*
 * Netlink route and nexthop messages (NETLINK_ROUTE), decoded into what
 * the FIB takes and encoded back: one decoder for every feed (the kernel,
 * FRR zebra over FPM, tools), so that every feed is checked the same way.
 *
 * Decoding follows OpenBGPD's rule: every length is checked before the
 * bytes it covers are read. A message that fails a check is refused whole
 * with a message naming the field ("RTA_GATEWAY of 3 bytes, expected 4");
 * nothing is ever read outside [nlh, nlh + nlmsg_len). Attributes this
 * module does not know are skipped; those it knows must have their exact
 * size.
 *
 * Values are in host byte order, as netlink has them (addresses stay in
 * network byte order, as struct addr keeps them).
 *
 * Threads: no state; any thread. Nothing here depends on the FIB's code,
 * only on its types, so that a feed or a fuzz target links this alone.
 */
#ifndef LCFIB_RTNL_H
#define LCFIB_RTNL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/netlink.h>

#include "lib/err.h"
#include "lib/fib.h"
#include "lib/nh.h"

/*
 * A route message decoded: what fib_route_add() and fib_route_del() take.
 *
 * rc.dst: RTA_DST with rtm_dst_len (no RTA_DST: the zero address, so the
 *   default route when rtm_dst_len is 0); host bits past the length are
 *   refused, as the kernel never sends them.
 * rc.table: RTA_TABLE when present, else rtm_table (0 stays 0: main).
 * rc.type, proto, scope: rtm_type, rtm_protocol, rtm_scope, except that a
 *   delete's RT_SCOPE_NOWHERE (iproute2's "any scope") becomes 0, which
 *   fib_route_del() matches as any.
 * rc.metric: RTA_PRIORITY.
 * rc.paths: one path from RTA_GATEWAY or RTA_VIA and RTA_OIF (weight 1,
 *   NH_F_ONLINK from rtm_flags), or one per rtnexthop of RTA_MULTIPATH
 *   (weight rtnh_hops + 1, rtnh_ifindex, NH_F_ONLINK from rtnh_flags, a
 *   per-hop RTA_GATEWAY or RTA_VIA; a hop with neither a gateway nor a
 *   device is refused); rc.paths points at paths[] (NULL when there is
 *   none). A unicast route with no path and no nh_id still decodes: the
 *   FIB says what is wrong with it. A blackhole, unreachable, prohibit or
 *   throw route's device without a gateway (the kernel reports IPv6 ones
 *   with "dev lo") is checked, then dropped.
 * rc.nh_id: RTA_NH_ID. The kernel (in its default nexthop_compat_mode)
 *   sends the object's paths beside it, and RTN_BLACKHOLE for a route
 *   through a blackhole object: such paths are checked, then dropped, and
 *   the type is RTN_UNICAST, so that the route is the one that was added
 *   ("nhid N") and what fib_route_add() takes.
 * rc.flags: FIB_F_* from NLM_F_CREATE/EXCL/REPLACE/APPEND of an
 *   RTM_NEWROUTE (0 for a delete, whose bits mean other things).
 */
struct rtnl_route {
	bool del; /* RTM_DELROUTE */
	struct fib_rcfg rc;
	struct nh_path paths[NH_MAX_PATHS];
	/* RTA_PREFSRC, kept though the FIB does not store it: an IPv4 one in s6_addr[0..3]. */
	struct in6_addr prefsrc;
	uint8_t prefsrc_family; /* AF_UNSPEC: none */
	uint32_t rtm_flags;     /* RTM_F_CLONED etc.: the caller skips cache routes */
	uint8_t tos;            /* rtm_tos */
};

/*
 * An RTM_NEWNEXTHOP or RTM_DELNEXTHOP decoded, for fib_nh_set() and
 * fib_nh_del(). cfg.family is nh_family; NHA_ID (required, not 0) is
 * cfg.id; NHA_GROUP (struct nexthop_grp, weight + 1) fills cfg.member;
 * NHA_BLACKHOLE sets cfg.blackhole; otherwise NHA_GATEWAY (of nh_family's
 * size), NHA_OIF and nh_flags' RTNH_F_ONLINK fill cfg.path (weight 1). A
 * delete keeps NHA_ID only. flags: FIB_F_* as for routes.
 */
struct rtnl_nexthop {
	bool del;           /* RTM_DELNEXTHOP */
	unsigned int flags; /* FIB_F_* */
	struct nh_obj_cfg cfg;
};

/*
 * The next netlink message of @buf (@len bytes) at *@off: returns 0 with
 * *@nlh, whose nlmsg_len bytes lie within the buffer, and *@off moved past
 * it (and its padding); -ENODATA at the end; -EBADMSG with a message when
 * the header is cut short, its nlmsg_len is shorter than a header or runs
 * past the buffer, or the message does not start on a 4-byte boundary
 * (@buf must be 4-byte aligned). After -EBADMSG the rest of the buffer
 * cannot be framed: *@off is unchanged. Message types are not looked at
 * (NLMSG_DONE, NLMSG_ERROR and the rest come back like any other).
 */
int rtnl_next(const void *buf, size_t len, size_t *off, const struct nlmsghdr **nlh,
	      struct errbuf *err);

/*
 * Decodes an RTM_NEWROUTE or RTM_DELROUTE whose nlmsg_len bytes are
 * readable (as rtnl_next() gives them). Returns 0 with *@out filled;
 * -EAFNOSUPPORT with a message for a family other than AF_INET and
 * AF_INET6 (the caller skips those); -EOPNOTSUPP for another message type
 * or a source-specific route (rtm_src_len), which the FIB cannot hold;
 * -EINVAL with a message for anything malformed.
 */
int rtnl_decode_route(const struct nlmsghdr *nlh, struct rtnl_route *out, struct errbuf *err);

/*
 * Decodes an RTM_NEWNEXTHOP or RTM_DELNEXTHOP (readable as above).
 * Returns 0; -EAFNOSUPPORT for an nh_family other than AF_UNSPEC,
 * AF_INET and AF_INET6; -EOPNOTSUPP for another message type; -EINVAL
 * with a message for anything malformed, or a group of more than
 * NH_MAX_PATHS members or a weight above 256.
 */
int rtnl_decode_nexthop(const struct nlmsghdr *nlh, struct rtnl_nexthop *out, struct errbuf *err);

/*
 * Prepends the message's type and sequence number to the message in @err
 * ("RTM_NEWROUTE seq 42: RTA_GATEWAY of 3 bytes, expected 4"), for the
 * caller of a decoder that failed.
 */
void rtnl_err_prefix(struct errbuf *err, const struct nlmsghdr *nlh);

/* The NLM_F_* request flags that say what FIB_F_* @fib_flags say. */
uint16_t rtnl_nlm_flags(unsigned int fib_flags);

/*
 * Writes one @type (RTM_NEWROUTE or RTM_DELROUTE) message for @r into
 * @buf (4-byte aligned), with @flags as its nlmsg_flags (NLM_F_*;
 * r->rc.flags and r->del are not looked at) and @seq. As the kernel does:
 * rtm_table is the table when below 256, else RT_TABLE_UNSPEC, and
 * RTA_TABLE always carries it; RTA_DST only for a prefix length above 0;
 * RTA_PRIORITY, RTA_NH_ID and RTA_PREFSRC only when set; one path as
 * RTA_GATEWAY, or RTA_VIA for a gateway of the other family, and RTA_OIF
 * (its NH_F_ONLINK in rtm_flags); several as RTA_MULTIPATH with their
 * weights. Returns the message's length, or 0 when @size is too small or
 * @r cannot be written (a family or path count out of range).
 */
size_t rtnl_encode_route(void *buf, size_t size, uint16_t type, uint16_t flags, uint32_t seq,
			 const struct rtnl_route *r);

/*
 * Writes one @type (RTM_NEWNEXTHOP or RTM_DELNEXTHOP) message for @n: for
 * a delete NHA_ID only, else NHA_ID and NHA_GROUP, NHA_BLACKHOLE, or
 * NHA_GATEWAY and NHA_OIF. Returns the length, or 0 as above.
 */
size_t rtnl_encode_nexthop(void *buf, size_t size, uint16_t type, uint16_t flags, uint32_t seq,
			   const struct rtnl_nexthop *n);

#endif
