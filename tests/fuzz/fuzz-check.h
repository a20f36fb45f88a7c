/* SPDX-License-Identifier: MIT */
/*
 * What the fuzz targets check of every netlink message they reach, beyond
 * the sanitizers' own checks: a refusal always says why; a decoded message
 * is within the limits the FIB relies on; and encoding it again and
 * decoding that gives the same thing back (up to what the wire form of a
 * single path cannot carry). A violation aborts, which libFuzzer reports
 * as a crash with the input that caused it.
 */
#ifndef LCFIB_FUZZ_CHECK_H
#define LCFIB_FUZZ_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/rtnetlink.h>

#include "lib/rtnl.h"
#include "tests/fuzz/fuzz-assert.h"


/* Big enough for any message rtnl_encode_*() writes (64 paths of 32 bytes and the rest). */
union fuzz_buf {
	uint8_t b[8192];
	uint32_t align;
};

static void fuzz_refused(int ret, const struct errbuf *err)
{
	FUZZ_ASSERT(ret < 0);
	FUZZ_ASSERT(err->msg[0] != '\0');
	FUZZ_ASSERT(memchr(err->msg, '\0', sizeof(err->msg)));
}

/*
 * A single path's weight and onlink flag do not survive the wire as such:
 * the weight is always 1, and onlink travels in rtm_flags. Merges them so
 * that two decodes of the same route compare equal.
 */
static void fuzz_route_canonical(struct rtnl_route *r)
{
	r->rc.paths = NULL;
	if (r->rc.n_paths != 1)
		return;
	static const struct {
		unsigned int rtnh;
		uint8_t nh;
	} same[] = { { RTNH_F_ONLINK, NH_F_ONLINK },
		     { RTNH_F_DEAD, NH_F_DEAD },
		     { RTNH_F_LINKDOWN, NH_F_LINKDOWN } };

	r->paths[0].weight = 1;
	/* A single path's flags and the route's rtm_flags say the same. */
	for (unsigned int i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		if (r->rtm_flags & same[i].rtnh)
			r->paths[0].flags |= same[i].nh;
		if (r->paths[0].flags & same[i].nh)
			r->rtm_flags |= same[i].rtnh;
	}
}

static void fuzz_route_same(struct rtnl_route a, struct rtnl_route b)
{
	fuzz_route_canonical(&a);
	fuzz_route_canonical(&b);
	FUZZ_ASSERT(a.del == b.del);
	FUZZ_ASSERT(a.rc.dst.a.family == b.rc.dst.a.family && a.rc.dst.plen == b.rc.dst.plen);
	FUZZ_ASSERT(!memcmp(a.rc.dst.a.b, b.rc.dst.a.b, 16));
	FUZZ_ASSERT(a.rc.table == b.rc.table && a.rc.type == b.rc.type);
	FUZZ_ASSERT(a.rc.proto == b.rc.proto && a.rc.scope == b.rc.scope);
	FUZZ_ASSERT(a.rc.metric == b.rc.metric && a.rc.nh_id == b.rc.nh_id);
	FUZZ_ASSERT(a.rc.flags == b.rc.flags && a.rc.n_paths == b.rc.n_paths);
	for (unsigned int i = 0; i < a.rc.n_paths; i++) {
		const struct nh_path *p = &a.paths[i], *q = &b.paths[i];

		FUZZ_ASSERT(p->gw_family == q->gw_family && !memcmp(&p->gw, &q->gw, 16));
		FUZZ_ASSERT(p->ifindex == q->ifindex && p->weight == q->weight);
		FUZZ_ASSERT(p->flags == q->flags);
	}
	FUZZ_ASSERT(a.prefsrc_family == b.prefsrc_family);
	FUZZ_ASSERT(!memcmp(&a.prefsrc, &b.prefsrc, sizeof(a.prefsrc)));
	FUZZ_ASSERT(a.rtm_flags == b.rtm_flags && a.tos == b.tos);
}

static void fuzz_route(const struct nlmsghdr *nlh)
{
	static union fuzz_buf buf;
	struct rtnl_route r, again;
	struct errbuf err;
	uint16_t flags;
	size_t len;
	int ret;

	err.msg[0] = '\0';
	ret = rtnl_decode_route(nlh, &r, &err);
	if (ret) {
		fuzz_refused(ret, &err);
		return;
	}
	FUZZ_ASSERT(r.rc.dst.plen <= addr_bits(r.rc.dst.a.family));
	FUZZ_ASSERT(!addr_has_host_bits(&r.rc.dst.a, r.rc.dst.plen));
	FUZZ_ASSERT(r.rc.n_paths <= NH_MAX_PATHS && !(r.rc.nh_id && r.rc.n_paths));
	FUZZ_ASSERT(r.rc.n_paths ? r.rc.paths == r.paths : r.rc.paths == NULL);
	for (unsigned int i = 0; i < r.rc.n_paths; i++)
		FUZZ_ASSERT(r.paths[i].weight >= 1 && r.paths[i].weight <= 256);

	flags = r.del ? 0 : rtnl_nlm_flags(r.rc.flags);
	len = rtnl_encode_route(buf.b, sizeof(buf.b), r.del ? RTM_DELROUTE : RTM_NEWROUTE, flags,
				nlh->nlmsg_seq, &r);
	FUZZ_ASSERT(len > 0);
	ret = rtnl_decode_route((const struct nlmsghdr *)buf.b, &again, &err);
	if (ret)
		fprintf(stderr, "re-decode: %s\n", err.msg);
	FUZZ_ASSERT(ret == 0);
	fuzz_route_same(r, again);
}

static void fuzz_nexthop_same(const struct rtnl_nexthop *a, const struct rtnl_nexthop *b)
{
	const struct nh_path *p = &a->cfg.path, *q = &b->cfg.path;

	FUZZ_ASSERT(a->del == b->del && a->flags == b->flags);
	FUZZ_ASSERT(a->cfg.id == b->cfg.id && a->cfg.family == b->cfg.family);
	FUZZ_ASSERT(a->cfg.blackhole == b->cfg.blackhole && a->cfg.n_members == b->cfg.n_members);
	for (unsigned int i = 0; i < a->cfg.n_members; i++) {
		FUZZ_ASSERT(a->cfg.member[i].id == b->cfg.member[i].id);
		FUZZ_ASSERT(a->cfg.member[i].weight == b->cfg.member[i].weight);
	}
	FUZZ_ASSERT(p->gw_family == q->gw_family && !memcmp(&p->gw, &q->gw, 16));
	FUZZ_ASSERT(p->ifindex == q->ifindex && p->weight == q->weight && p->flags == q->flags);
}

static void fuzz_nexthop(const struct nlmsghdr *nlh)
{
	static union fuzz_buf buf;
	struct rtnl_nexthop n, again;
	struct errbuf err;
	size_t len;
	int ret;

	err.msg[0] = '\0';
	ret = rtnl_decode_nexthop(nlh, &n, &err);
	if (ret) {
		fuzz_refused(ret, &err);
		return;
	}
	FUZZ_ASSERT(n.cfg.id != 0 && n.cfg.n_members <= NH_MAX_PATHS);
	for (unsigned int i = 0; i < n.cfg.n_members; i++)
		FUZZ_ASSERT(n.cfg.member[i].weight >= 1 && n.cfg.member[i].weight <= 256);

	len = rtnl_encode_nexthop(buf.b, sizeof(buf.b), n.del ? RTM_DELNEXTHOP : RTM_NEWNEXTHOP,
				  rtnl_nlm_flags(n.flags), nlh->nlmsg_seq, &n);
	FUZZ_ASSERT(len > 0);
	ret = rtnl_decode_nexthop((const struct nlmsghdr *)buf.b, &again, &err);
	if (ret)
		fprintf(stderr, "re-decode: %s\n", err.msg);
	FUZZ_ASSERT(ret == 0);
	fuzz_nexthop_same(&n, &again);
}

/* Walks @len bytes of netlink messages and decodes each route and nexthop. */
static void fuzz_netlink(const uint8_t *data, size_t len)
{
	const struct nlmsghdr *nlh;
	struct errbuf err;
	size_t off = 0, last;
	int ret;

	for (;;) {
		last = off;
		err.msg[0] = '\0';
		ret = rtnl_next(data, len, &off, &nlh, &err);
		if (ret == -ENODATA)
			return;
		if (ret) {
			FUZZ_ASSERT(ret == -EBADMSG && off == last);
			fuzz_refused(ret, &err);
			return;
		}
		FUZZ_ASSERT(off > last && off <= len);
		FUZZ_ASSERT((const uint8_t *)nlh == data + last);
		FUZZ_ASSERT(nlh->nlmsg_len >= sizeof(*nlh) && nlh->nlmsg_len <= len - last);
		switch (nlh->nlmsg_type) {
		case RTM_NEWROUTE:
		case RTM_DELROUTE:
			fuzz_route(nlh);
			break;
		case RTM_NEWNEXTHOP:
		case RTM_DELNEXTHOP:
			fuzz_nexthop(nlh);
			break;
		}
	}
}

#endif
