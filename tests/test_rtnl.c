/* SPDX-License-Identifier: MIT */
/*
 * The netlink route/nexthop decoder and encoder (lib/rtnl.h) and FPM
 * framing (lib/fpm.h): round trips through the encoder, messages written
 * by hand (so that the decoder is not only checked against the encoder),
 * every malformed message refused with its reason, and a decoded route
 * applied to a FIB.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>

#include "lib/fib.h"
#include "lib/fpm.h"
#include "lib/rtnl.h"

/* ------------------------------------------------------------- helpers */

/* Netlink buffers are read through struct pointers: 4-byte aligned. */
union nlbuf {
	uint8_t b[16384];
	uint32_t align;
};

static struct nh_path path(const char *gw, uint32_t ifindex, uint16_t weight)
{
	struct nh_path p;
	struct addr a;
	struct errbuf err;

	memset(&p, 0, sizeof(p));
	if (gw) {
		assert_int_equal(addr_parse(gw, AF_UNSPEC, &a, &err), 0);
		p.gw_family = a.family;
		memcpy(&p.gw, a.b, a.family == AF_INET ? 4 : 16);
	}
	p.ifindex = ifindex;
	p.weight = weight;
	return p;
}

static void route_init(struct rtnl_route *r, const char *prefix)
{
	struct errbuf err;

	memset(r, 0, sizeof(*r));
	assert_int_equal(addr_parse_prefix(prefix, AF_UNSPEC, &r->rc.dst, &err), 0);
	r->rc.table = FIB_TABLE_MAIN;
	r->rc.type = FIB_RT_UNICAST;
	r->rc.paths = r->paths;
}

static void route_add_path(struct rtnl_route *r, struct nh_path p)
{
	r->paths[r->rc.n_paths++] = p;
}

static void assert_path_equal(const struct nh_path *a, const struct nh_path *b)
{
	assert_int_equal(a->gw_family, b->gw_family);
	if (a->gw_family)
		assert_memory_equal(&a->gw, &b->gw, a->gw_family == AF_INET ? 4 : 16);
	assert_int_equal(a->ifindex, b->ifindex);
	assert_int_equal(a->weight, b->weight);
	assert_int_equal(a->flags, b->flags);
	assert_null(b->member);
}

/* Everything a decode gives, but rc.flags and del, which come from the header. */
static void assert_route_equal(const struct rtnl_route *a, const struct rtnl_route *b)
{
	assert_int_equal(a->rc.dst.a.family, b->rc.dst.a.family);
	assert_int_equal(a->rc.dst.plen, b->rc.dst.plen);
	assert_memory_equal(a->rc.dst.a.b, b->rc.dst.a.b, 16);
	assert_int_equal(a->rc.table, b->rc.table);
	assert_int_equal(a->rc.type, b->rc.type);
	assert_int_equal(a->rc.proto, b->rc.proto);
	assert_int_equal(a->rc.scope, b->rc.scope);
	assert_int_equal(a->rc.metric, b->rc.metric);
	assert_int_equal(a->rc.nh_id, b->rc.nh_id);
	assert_int_equal(a->rc.n_paths, b->rc.n_paths);
	if (b->rc.n_paths)
		assert_ptr_equal(b->rc.paths, b->paths);
	else
		assert_null(b->rc.paths);
	for (unsigned int i = 0; i < a->rc.n_paths; i++) {
		struct nh_path want = a->rc.paths[i];

		/* RTA_PREFSRC goes with every path, as part of its identity */
		if (a->prefsrc_family) {
			want.flags |= NH_F_SRC;
			assert_memory_equal(&b->rc.paths[i].prefsrc, &a->prefsrc,
					    a->prefsrc_family == AF_INET ? 4 : 16);
		}
		assert_path_equal(&want, &b->rc.paths[i]);
	}
	assert_int_equal(a->prefsrc_family, b->prefsrc_family);
	assert_memory_equal(&a->prefsrc, &b->prefsrc, sizeof(a->prefsrc));
	assert_int_equal(a->rtm_flags, b->rtm_flags);
	assert_int_equal(a->tos, b->tos);
}

/* The one message of @len bytes in @buf, framed by rtnl_next(). */
static const struct nlmsghdr *only_message(const void *buf, size_t len)
{
	const struct nlmsghdr *nlh = NULL, *next;
	struct errbuf err;
	size_t off = 0;

	assert_int_not_equal(len, 0);
	assert_int_equal(rtnl_next(buf, len, &off, &nlh, &err), 0);
	assert_int_equal(nlh->nlmsg_len, len);
	assert_int_equal(rtnl_next(buf, len, &off, &next, &err), -ENODATA);
	return nlh;
}

/* The types (below 32) of a route message's attributes, as a mask. */
static uint32_t attr_types(const struct nlmsghdr *nlh)
{
	const uint8_t *p = (const uint8_t *)nlh;
	size_t off = NLMSG_SPACE(sizeof(struct rtmsg));
	uint32_t mask = 0;
	uint16_t len, type;

	while (off + 4 <= nlh->nlmsg_len) {
		memcpy(&len, p + off, 2);
		memcpy(&type, p + off + 2, 2);
		assert_true(len >= 4 && off + len <= nlh->nlmsg_len);
		if (type < 32)
			mask |= 1u << type;
		off += (len + 3u) & ~3u;
	}
	return mask;
}

/* Encodes @in as @type with @flags, decodes it into @out. */
static void route_round_trip(const struct rtnl_route *in, uint16_t type, uint16_t flags,
			     struct rtnl_route *out)
{
	union nlbuf buf;
	struct errbuf err;
	const struct nlmsghdr *nlh;
	size_t len;
	int ret;

	len = rtnl_encode_route(buf.b, sizeof(buf.b), type, flags, 42, in);
	nlh = only_message(buf.b, len);
	assert_int_equal(nlh->nlmsg_type, type);
	assert_int_equal(nlh->nlmsg_flags, flags);
	assert_int_equal(nlh->nlmsg_seq, 42);
	err_clear(&err);
	ret = rtnl_decode_route(nlh, out, &err);
	if (ret)
		fail_msg("decode: %d %s", ret, err.msg);
	assert_int_equal(out->del, type == RTM_DELROUTE);
}

static void nexthop_round_trip(const struct rtnl_nexthop *in, uint16_t type, uint16_t flags,
			       struct rtnl_nexthop *out)
{
	union nlbuf buf;
	struct errbuf err;
	size_t len;
	int ret;

	len = rtnl_encode_nexthop(buf.b, sizeof(buf.b), type, flags, 7, in);
	err_clear(&err);
	ret = rtnl_decode_nexthop(only_message(buf.b, len), out, &err);
	if (ret)
		fail_msg("decode: %d %s", ret, err.msg);
	assert_int_equal(out->del, type == RTM_DELNEXTHOP);
}

/*
 * Messages written by hand, field by field in host byte order as netlink
 * has them, so that the decoder is checked against the wire format and
 * not only against rtnl_encode_*().
 */
struct hb {
	union nlbuf buf;
	size_t len;
};

static void hb_bytes(struct hb *m, const void *p, size_t n)
{
	assert_true(m->len + n <= sizeof(m->buf.b));
	if (n)
		memcpy(m->buf.b + m->len, p, n);
	m->len += n;
}

static void hb_u8(struct hb *m, uint8_t v)
{
	hb_bytes(m, &v, 1);
}

static void hb_u16(struct hb *m, uint16_t v)
{
	hb_bytes(m, &v, 2);
}

static void hb_u32(struct hb *m, uint32_t v)
{
	hb_bytes(m, &v, 4);
}

static void hb_pad(struct hb *m)
{
	while (m->len % 4)
		hb_u8(m, 0);
}

static void hb_set_u16(struct hb *m, size_t at, uint16_t v)
{
	memcpy(m->buf.b + at, &v, 2);
}

/* nlmsghdr: len (patched by hb_done), type, flags, seq, pid. */
static void hb_nlmsg(struct hb *m, uint16_t type, uint16_t flags)
{
	m->len = 0;
	hb_u32(m, 0);
	hb_u16(m, type);
	hb_u16(m, flags);
	hb_u32(m, 9);
	hb_u32(m, 0);
}

/* rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags. */
static void hb_rtmsg(struct hb *m, uint8_t family, uint8_t dst_len, uint8_t table, uint8_t type)
{
	hb_u8(m, family);
	hb_u8(m, dst_len);
	hb_u8(m, 0);
	hb_u8(m, 0);
	hb_u8(m, table);
	hb_u8(m, RTPROT_STATIC);
	hb_u8(m, RT_SCOPE_UNIVERSE);
	hb_u8(m, type);
	hb_u32(m, 0);
}

/* nhmsg: family, scope, protocol, resvd, flags. */
static void hb_nhmsg(struct hb *m, uint8_t family)
{
	hb_u8(m, family);
	hb_u8(m, 0);
	hb_u8(m, RTPROT_STATIC);
	hb_u8(m, 0);
	hb_u32(m, 0);
}

/* An attribute with @len bytes of payload: nla_len, nla_type, payload, padding. */
static void hb_attr(struct hb *m, uint16_t type, const void *p, size_t len)
{
	hb_u16(m, (uint16_t)(4 + len));
	hb_u16(m, type);
	hb_bytes(m, p, len);
	hb_pad(m);
}

static void hb_attr_u32(struct hb *m, uint16_t type, uint32_t v)
{
	hb_attr(m, type, &v, 4);
}

static void hb_attr_addr(struct hb *m, uint16_t type, const char *s)
{
	struct addr a;
	struct errbuf err;

	assert_int_equal(addr_parse(s, AF_UNSPEC, &a, &err), 0);
	hb_attr(m, type, a.b, a.family == AF_INET ? 4 : 16);
}

/* struct rtvia: a 16-bit family, then @alen bytes of address. */
static void hb_attr_via(struct hb *m, uint16_t family, const void *addr, size_t alen)
{
	uint8_t via[2 + 16];

	memcpy(via, &family, 2);
	memcpy(via + 2, addr, alen);
	hb_attr(m, RTA_VIA, via, 2 + alen);
}

/* A nest's header; its length is patched by hb_nest_end(). */
static size_t hb_nest(struct hb *m, uint16_t type)
{
	size_t at = m->len;

	hb_u16(m, 0);
	hb_u16(m, type);
	return at;
}

static void hb_nest_end(struct hb *m, size_t at)
{
	hb_set_u16(m, at, (uint16_t)(m->len - at));
}

/* An rtnexthop (len patched by hb_nest_end), flags, hops, ifindex. */
static size_t hb_rtnh(struct hb *m, uint8_t hops, int ifindex)
{
	size_t at = m->len;

	hb_u16(m, 0);
	hb_u8(m, 0);
	hb_u8(m, hops);
	hb_bytes(m, &ifindex, 4);
	return at;
}

static const struct nlmsghdr *hb_done(struct hb *m)
{
	uint32_t len = (uint32_t)m->len;

	memcpy(m->buf.b, &len, 4);
	return (const struct nlmsghdr *)m->buf.b;
}

static void expect_route_error(struct hb *m, int want, const char *msg)
{
	struct rtnl_route r;
	struct errbuf err;
	int ret;

	err_clear(&err);
	ret = rtnl_decode_route(hb_done(m), &r, &err);
	if (ret != want || !strstr(err.msg, msg))
		fail_msg("got %d '%s', expected %d '%s'", ret, err.msg, want, msg);
}

static void expect_nexthop_error(struct hb *m, int want, const char *msg)
{
	struct rtnl_nexthop n;
	struct errbuf err;
	int ret;

	err_clear(&err);
	ret = rtnl_decode_nexthop(hb_done(m), &n, &err);
	if (ret != want || !strstr(err.msg, msg))
		fail_msg("got %d '%s', expected %d '%s'", ret, err.msg, want, msg);
}

static void expect_next_error(const void *buf, size_t len, const char *msg)
{
	const struct nlmsghdr *nlh;
	struct errbuf err;
	size_t off = 0;
	int ret;

	err_clear(&err);
	ret = rtnl_next(buf, len, &off, &nlh, &err);
	if (ret != -EBADMSG || !strstr(err.msg, msg))
		fail_msg("got %d '%s', expected -EBADMSG '%s'", ret, err.msg, msg);
	assert_int_equal(off, 0);
}

/* A valid IPv4 route of table main to 10.0.0.0/8, attributes to follow. */
static void hb_route4(struct hb *m)
{
	hb_nlmsg(m, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_CREATE);
	hb_rtmsg(m, AF_INET, 8, RT_TABLE_MAIN, RTN_UNICAST);
	hb_attr_addr(m, RTA_DST, "10.0.0.0");
}

/* -------------------------------------------------------- round trips */

static void test_rtnl_ipv4_route_round_trips_every_attribute(void **state)
{
	struct rtnl_route in, out;
	struct nh_path p = path("192.0.2.1", 3, 1);

	(void)state;
	route_init(&in, "10.1.0.0/16");
	p.flags = NH_F_ONLINK;
	route_add_path(&in, p);
	in.rc.proto = RTPROT_BGP;
	in.rc.scope = RT_SCOPE_UNIVERSE;
	in.rc.metric = 20;
	in.tos = 0x10;
	in.rtm_flags = RTNH_F_ONLINK; /* where a single path's onlink travels */
	in.prefsrc_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, "192.0.2.9", &in.prefsrc), 1);
	route_round_trip(&in, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL, &out);
	assert_route_equal(&in, &out);
	assert_int_equal(out.rc.flags, FIB_F_CREATE | FIB_F_EXCL);
}

static void test_rtnl_ipv6_route_round_trips_every_attribute(void **state)
{
	struct rtnl_route in, out;

	(void)state;
	route_init(&in, "2001:db8:1::/48");
	route_add_path(&in, path("fe80::1", 7, 1));
	in.rc.proto = RTPROT_ZEBRA;
	in.rc.metric = 1024;
	in.rc.table = 100;
	in.prefsrc_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::9", &in.prefsrc), 1);
	route_round_trip(&in, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_REPLACE, &out);
	assert_route_equal(&in, &out);
	assert_int_equal(out.rc.flags, FIB_F_REPLACE);
}

static void test_rtnl_multipath_keeps_weights_in_both_families(void **state)
{
	struct rtnl_route in, out;
	struct nh_path p;

	(void)state;
	route_init(&in, "198.51.100.0/24");
	route_add_path(&in, path("192.0.2.1", 3, 1));
	route_add_path(&in, path("192.0.2.2", 4, 256));
	p = path(NULL, 5, 10); /* a device alone */
	p.flags = NH_F_ONLINK;
	route_add_path(&in, p);
	route_add_path(&in, path("2001:db8::1", 6, 3)); /* RTA_VIA inside a hop */
	route_round_trip(&in, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_APPEND, &out);
	assert_route_equal(&in, &out);
	assert_int_equal(out.rc.flags, FIB_F_CREATE | FIB_F_APPEND);

	route_init(&in, "2001:db8:2::/64");
	for (unsigned int i = 0; i < NH_MAX_PATHS; i++) {
		char gw[ADDR_STRLEN];

		snprintf(gw, sizeof(gw), "fe80::%x", i + 1);
		route_add_path(&in, path(gw, i + 1, (uint16_t)(i + 1)));
	}
	route_round_trip(&in, RTM_NEWROUTE, NLM_F_CREATE, &out);
	assert_route_equal(&in, &out);
}

static void test_rtnl_ipv4_route_via_ipv6_gateway_round_trips(void **state)
{
	struct rtnl_route in, out;
	union nlbuf buf;
	size_t len;

	(void)state;
	route_init(&in, "203.0.113.0/24");
	route_add_path(&in, path("fe80::1", 2, 1));
	route_round_trip(&in, RTM_NEWROUTE, NLM_F_CREATE, &out);
	assert_route_equal(&in, &out);
	assert_int_equal(out.paths[0].gw_family, AF_INET6);

	/* On the wire: RTA_VIA, not RTA_GATEWAY. */
	len = rtnl_encode_route(buf.b, sizeof(buf.b), RTM_NEWROUTE, 0, 1, &in);
	assert_int_equal(attr_types(only_message(buf.b, len)),
			 1u << RTA_TABLE | 1u << RTA_DST | 1u << RTA_VIA | 1u << RTA_OIF);
}

static void test_rtnl_nh_id_and_table_above_255_round_trip(void **state)
{
	struct rtnl_route in, out;
	union nlbuf buf;
	const struct rtmsg *rtm;
	size_t len;

	(void)state;
	route_init(&in, "10.0.0.0/8");
	in.rc.nh_id = 12345;
	in.rc.table = 100000;
	route_round_trip(&in, RTM_NEWROUTE, NLM_F_CREATE, &out);
	assert_route_equal(&in, &out);
	assert_int_equal(out.rc.nh_id, 12345);
	assert_int_equal(out.rc.table, 100000);

	/* rtm_table cannot hold it: RT_TABLE_UNSPEC, and RTA_TABLE says which. */
	len = rtnl_encode_route(buf.b, sizeof(buf.b), RTM_NEWROUTE, 0, 1, &in);
	rtm = NLMSG_DATA(only_message(buf.b, len));
	assert_int_equal(rtm->rtm_table, RT_TABLE_UNSPEC);
	assert_true(attr_types(only_message(buf.b, len)) & 1u << RTA_TABLE);
}

static void test_rtnl_request_flags_map_to_fib_flags(void **state)
{
	static const struct {
		uint16_t nlm;
		unsigned int fib;
	} cases[] = {
		{ 0, 0 },
		{ NLM_F_CREATE, FIB_F_CREATE },
		{ NLM_F_EXCL, FIB_F_EXCL },
		{ NLM_F_REPLACE, FIB_F_REPLACE },
		{ NLM_F_APPEND, FIB_F_APPEND },
		{ NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
		  FIB_F_CREATE | FIB_F_EXCL },
		{ NLM_F_CREATE | NLM_F_REPLACE, FIB_F_CREATE | FIB_F_REPLACE },
		{ NLM_F_MULTI, 0 }, /* a dump's message */
	};
	struct rtnl_route in, out;

	(void)state;
	route_init(&in, "10.0.0.0/8");
	route_add_path(&in, path(NULL, 1, 1));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		route_round_trip(&in, RTM_NEWROUTE, cases[i].nlm, &out);
		assert_int_equal(out.rc.flags, cases[i].fib);
		assert_int_equal(
			rtnl_nlm_flags(cases[i].fib),
			cases[i].nlm & (NLM_F_CREATE | NLM_F_EXCL | NLM_F_REPLACE | NLM_F_APPEND));
	}
	/* A delete's bits mean other things (NLM_F_NONREC is NLM_F_REPLACE's). */
	route_round_trip(&in, RTM_DELROUTE, NLM_F_REQUEST | NLM_F_REPLACE, &out);
	assert_int_equal(out.rc.flags, 0);
}

static void test_rtnl_delete_round_trips_and_any_scope_matches_any(void **state)
{
	struct rtnl_route in, out;

	(void)state;
	route_init(&in, "10.0.0.0/8");
	route_add_path(&in, path("192.0.2.1", 0, 1));
	in.rc.scope = RT_SCOPE_LINK;
	in.rc.metric = 5;
	route_round_trip(&in, RTM_DELROUTE, NLM_F_REQUEST, &out);
	assert_true(out.del);
	assert_route_equal(&in, &out);

	/* iproute2's `ip route del` sends RT_SCOPE_NOWHERE: any scope. */
	in.rc.scope = RT_SCOPE_NOWHERE;
	route_round_trip(&in, RTM_DELROUTE, NLM_F_REQUEST, &out);
	assert_int_equal(out.rc.scope, 0);
	/* An add keeps what it says. */
	route_round_trip(&in, RTM_NEWROUTE, NLM_F_CREATE, &out);
	assert_int_equal(out.rc.scope, RT_SCOPE_NOWHERE);
}

static void test_rtnl_error_type_routes_round_trip_without_paths(void **state)
{
	struct rtnl_route in, out;

	(void)state;
	route_init(&in, "2001:db8::/32");
	in.rc.type = FIB_RT_BLACKHOLE;
	route_round_trip(&in, RTM_NEWROUTE, NLM_F_CREATE, &out);
	assert_route_equal(&in, &out);
	assert_int_equal(out.rc.type, RTN_BLACKHOLE);

	route_init(&in, "0.0.0.0/0");
	in.rc.type = FIB_RT_UNREACHABLE;
	in.rtm_flags = RTM_F_CLONED;
	route_round_trip(&in, RTM_NEWROUTE, 0, &out);
	assert_route_equal(&in, &out);
	assert_int_equal(out.rtm_flags, RTM_F_CLONED);
}

static void test_rtnl_nexthop_single_path_round_trips(void **state)
{
	struct rtnl_nexthop in, out;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.cfg.id = 10;
	in.cfg.family = AF_INET;
	in.cfg.path = path("192.0.2.1", 3, 1);
	in.cfg.path.flags = NH_F_ONLINK;
	nexthop_round_trip(&in, RTM_NEWNEXTHOP, NLM_F_CREATE | NLM_F_EXCL, &out);
	assert_int_equal(out.flags, FIB_F_CREATE | FIB_F_EXCL);
	assert_int_equal(out.cfg.id, 10);
	assert_int_equal(out.cfg.family, AF_INET);
	assert_int_equal(out.cfg.n_members, 0);
	assert_false(out.cfg.blackhole);
	assert_path_equal(&in.cfg.path, &out.cfg.path);

	in.cfg.id = 11;
	in.cfg.family = AF_INET6;
	in.cfg.path = path("2001:db8::1", 0, 1);
	nexthop_round_trip(&in, RTM_NEWNEXTHOP, NLM_F_REPLACE, &out);
	assert_int_equal(out.flags, FIB_F_REPLACE);
	assert_int_equal(out.cfg.family, AF_INET6);
	assert_path_equal(&in.cfg.path, &out.cfg.path);

	in.cfg.path = path(NULL, 9, 1); /* a device alone */
	nexthop_round_trip(&in, RTM_NEWNEXTHOP, 0, &out);
	assert_path_equal(&in.cfg.path, &out.cfg.path);
}

static void test_rtnl_nexthop_blackhole_round_trips(void **state)
{
	struct rtnl_nexthop in, out;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.cfg.id = 99;
	in.cfg.blackhole = 1;
	nexthop_round_trip(&in, RTM_NEWNEXTHOP, NLM_F_CREATE, &out);
	assert_int_equal(out.cfg.id, 99);
	assert_true(out.cfg.blackhole);
	assert_int_equal(out.cfg.path.gw_family, AF_UNSPEC);
	assert_int_equal(out.cfg.path.ifindex, 0);
}

static void test_rtnl_nexthop_group_keeps_weights(void **state)
{
	struct rtnl_nexthop in, out;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.cfg.id = 100;
	in.cfg.n_members = NH_MAX_PATHS;
	for (unsigned int i = 0; i < NH_MAX_PATHS; i++) {
		in.cfg.member[i].id = 1000 + i;
		in.cfg.member[i].weight = (uint16_t)(i * 4 + 1); /* 1 .. 253 */
	}
	in.cfg.member[1].weight = 256;
	nexthop_round_trip(&in, RTM_NEWNEXTHOP, NLM_F_CREATE, &out);
	assert_int_equal(out.cfg.id, 100);
	assert_int_equal(out.cfg.n_members, NH_MAX_PATHS);
	for (unsigned int i = 0; i < NH_MAX_PATHS; i++) {
		assert_int_equal(out.cfg.member[i].id, in.cfg.member[i].id);
		assert_int_equal(out.cfg.member[i].weight, in.cfg.member[i].weight);
	}
}

static void test_rtnl_nexthop_delete_round_trips(void **state)
{
	struct rtnl_nexthop in, out;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.cfg.id = 77;
	in.cfg.family = AF_INET;
	in.cfg.path = path("192.0.2.1", 3, 1); /* not sent with a delete */
	nexthop_round_trip(&in, RTM_DELNEXTHOP, NLM_F_REQUEST, &out);
	assert_true(out.del);
	assert_int_equal(out.cfg.id, 77);
	assert_int_equal(out.flags, 0);
	assert_int_equal(out.cfg.path.gw_family, AF_UNSPEC);
}

/* ------------------------------------------------ messages built by hand */

static void test_rtnl_nexthop_delete_needs_only_its_id(void **state)
{
	struct hb m;
	struct rtnl_nexthop n;
	struct errbuf err;

	(void)state;
	/* The kernel's notification carries the whole nexthop, even one a new one could not have.
	 */
	hb_nlmsg(&m, RTM_DELNEXTHOP, NLM_F_CREATE);
	hb_nhmsg(&m, AF_INET);
	hb_attr_u32(&m, NHA_ID, 31);
	hb_attr(&m, NHA_BLACKHOLE, NULL, 0);
	hb_attr_u32(&m, NHA_OIF, 2);
	assert_int_equal(rtnl_decode_nexthop(hb_done(&m), &n, &err), 0);
	assert_true(n.del);
	assert_int_equal(n.cfg.id, 31);
	assert_int_equal(n.flags, 0);
	assert_false(n.cfg.blackhole);
	assert_int_equal(n.cfg.path.ifindex, 0);
}

static void test_rtnl_table_attribute_wins_over_rtm_table(void **state)
{
	struct hb m;
	struct rtnl_route r;
	struct errbuf err;

	(void)state;
	hb_route4(&m);
	hb_attr_u32(&m, RTA_OIF, 2);
	hb_attr_u32(&m, RTA_TABLE, 4000);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(r.rc.table, 4000);

	/* Without RTA_TABLE, rtm_table. */
	hb_route4(&m);
	m.buf.b[16 + 4] = 200; /* rtm_table */
	hb_attr_u32(&m, RTA_OIF, 2);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(r.rc.table, 200);
}

static void test_rtnl_unknown_attributes_are_skipped(void **state)
{
	static const uint8_t junk[7] = { 1, 2, 3, 4, 5, 6, 7 };
	struct hb m;
	struct rtnl_route r;
	struct errbuf err;
	size_t nest;

	(void)state;
	hb_route4(&m);
	hb_attr(&m, 200, junk, sizeof(junk));           /* unknown, odd length */
	hb_attr(&m, RTA_CACHEINFO, junk, sizeof(junk)); /* known to netlink, not read here */
	nest = hb_nest(&m, RTA_METRICS | NLA_F_NESTED);
	hb_attr_u32(&m, RTAX_MTU, 1400);
	hb_nest_end(&m, nest);
	hb_attr(&m, RTA_PREF, junk, 1);
	hb_attr_addr(&m, RTA_GATEWAY, "192.0.2.1");
	hb_attr_u32(&m, RTA_PRIORITY, 30);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(r.rc.n_paths, 1);
	assert_int_equal(r.paths[0].gw_family, AF_INET);
	assert_int_equal(ntohl(r.paths[0].gw.v4.s_addr), 0xc0000201);
	assert_int_equal(r.rc.metric, 30);
	assert_int_equal(r.rc.dst.plen, 8);
	assert_int_equal(ntohl(r.rc.dst.a.v4.s_addr), 0x0a000000);
	assert_int_equal(r.rc.proto, RTPROT_STATIC);
}

static void test_rtnl_route_without_dst_is_the_default_route(void **state)
{
	struct hb m;
	struct rtnl_route r;
	struct errbuf err;
	const uint8_t zero[16] = { 0 };

	(void)state;
	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_rtmsg(&m, AF_INET6, 0, RT_TABLE_MAIN, RTN_UNICAST);
	hb_attr_addr(&m, RTA_GATEWAY, "fe80::1");
	hb_attr_u32(&m, RTA_OIF, 4);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(r.rc.dst.a.family, AF_INET6);
	assert_int_equal(r.rc.dst.plen, 0);
	assert_memory_equal(r.rc.dst.a.b, zero, 16);
	assert_int_equal(r.rc.table, RT_TABLE_MAIN);
	assert_int_equal(r.paths[0].ifindex, 4);
	assert_int_equal(r.paths[0].weight, 1);
}

static void test_rtnl_kernel_style_multipath_decodes(void **state)
{
	struct hb m;
	struct rtnl_route r;
	struct errbuf err;
	size_t mp, hop;

	(void)state;
	hb_route4(&m);
	mp = hb_nest(&m, RTA_MULTIPATH);
	hop = hb_rtnh(&m, 0, 3);
	hb_attr_addr(&m, RTA_GATEWAY, "192.0.2.1");
	hb_nest_end(&m, hop);
	hop = hb_rtnh(&m, 4, 5);
	hb_attr_u32(&m, RTA_FLOW, 1); /* skipped inside a hop too */
	hb_nest_end(&m, hop);
	hb_nest_end(&m, mp);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(r.rc.n_paths, 2);
	assert_int_equal(r.paths[0].ifindex, 3);
	assert_int_equal(r.paths[0].weight, 1);
	assert_int_equal(ntohl(r.paths[0].gw.v4.s_addr), 0xc0000201);
	assert_int_equal(r.paths[1].ifindex, 5);
	assert_int_equal(r.paths[1].weight, 5);
	assert_int_equal(r.paths[1].gw_family, AF_UNSPEC);
}

static void test_rtnl_route_through_an_object_keeps_only_its_id(void **state)
{
	struct hb m;
	struct rtnl_route r;
	struct errbuf err;
	size_t mp, hop;

	(void)state;
	/* `ip monitor` of "ip route add 10.0.0.0/8 nhid 5" in nexthop_compat_mode. */
	hb_route4(&m);
	hb_attr_u32(&m, RTA_NH_ID, 5);
	hb_attr_addr(&m, RTA_GATEWAY, "192.0.2.1");
	hb_attr_u32(&m, RTA_OIF, 2);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(r.rc.nh_id, 5);
	assert_int_equal(r.rc.n_paths, 0);
	assert_null(r.rc.paths);
	assert_int_equal(r.rc.type, RTN_UNICAST);

	/* A group's paths as RTA_MULTIPATH; a blackhole object makes it RTN_BLACKHOLE. */
	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_rtmsg(&m, AF_INET6, 0, RT_TABLE_MAIN, RTN_BLACKHOLE);
	hb_attr_u32(&m, RTA_NH_ID, 6);
	mp = hb_nest(&m, RTA_MULTIPATH);
	hop = hb_rtnh(&m, 0, 3);
	hb_attr_addr(&m, RTA_GATEWAY, "fe80::1");
	hb_nest_end(&m, hop);
	hb_nest_end(&m, mp);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(r.rc.nh_id, 6);
	assert_int_equal(r.rc.n_paths, 0);
	assert_int_equal(r.paths[0].gw_family, AF_UNSPEC);
	assert_int_equal(r.rc.type, RTN_UNICAST);

	/* The paths are still checked. */
	hb_route4(&m);
	hb_attr_u32(&m, RTA_NH_ID, 5);
	hb_attr(&m, RTA_GATEWAY, "\x01\x02", 2);
	expect_route_error(&m, -EINVAL, "RTA_GATEWAY of 2 bytes, expected 4");
}

static void test_rtnl_ipv6_reject_route_loses_the_kernels_dev_lo(void **state)
{
	struct hb m;
	struct rtnl_route r;
	struct errbuf err;

	(void)state;
	/* `ip -6 route add unreachable 2001:db8::/32` as the kernel reports it. */
	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_rtmsg(&m, AF_INET6, 32, RT_TABLE_MAIN, RTN_UNREACHABLE);
	hb_attr_addr(&m, RTA_DST, "2001:db8::");
	hb_attr_u32(&m, RTA_PRIORITY, 1024);
	hb_attr_u32(&m, RTA_OIF, 1);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(r.rc.type, RTN_UNREACHABLE);
	assert_int_equal(r.rc.n_paths, 0);
	assert_null(r.rc.paths);

	/* A gateway is not the kernel's doing: it stays, for the FIB to refuse. */
	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_rtmsg(&m, AF_INET6, 32, RT_TABLE_MAIN, RTN_PROHIBIT);
	hb_attr_addr(&m, RTA_DST, "2001:db8::");
	hb_attr_addr(&m, RTA_GATEWAY, "fe80::1");
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(r.rc.n_paths, 1);
	/* A unicast route keeps its device. */
	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_rtmsg(&m, AF_INET6, 32, RT_TABLE_MAIN, RTN_UNICAST);
	hb_attr_addr(&m, RTA_DST, "2001:db8::");
	hb_attr_u32(&m, RTA_OIF, 1);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(r.rc.n_paths, 1);
}

static void test_rtnl_unicast_without_nexthop_still_decodes(void **state)
{
	struct hb m;
	struct rtnl_route r;
	struct errbuf err;

	(void)state;
	hb_route4(&m);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(r.rc.n_paths, 0);
	assert_null(r.rc.paths);
	assert_int_equal(r.rc.type, RTN_UNICAST);
}

/* ---------------------------------------------------------- rejections */

static void test_rtnl_next_walks_messages_and_stops_at_the_end(void **state)
{
	struct hb m;
	const struct nlmsghdr *nlh;
	struct errbuf err;
	size_t off = 0;

	(void)state;
	hb_nlmsg(&m, NLMSG_NOOP, 0);
	hb_u8(&m, 1); /* 17 bytes, padded to 20 before the next */
	hb_done(&m);
	hb_pad(&m);
	hb_u32(&m, 16);
	hb_u16(&m, NLMSG_DONE);
	hb_u16(&m, 0);
	hb_u32(&m, 10);
	hb_u32(&m, 0);
	assert_int_equal(rtnl_next(m.buf.b, m.len, &off, &nlh, &err), 0);
	assert_int_equal(nlh->nlmsg_type, NLMSG_NOOP);
	assert_int_equal(off, 20);
	assert_int_equal(rtnl_next(m.buf.b, m.len, &off, &nlh, &err), 0);
	assert_int_equal(nlh->nlmsg_type, NLMSG_DONE);
	assert_int_equal(nlh->nlmsg_seq, 10);
	assert_int_equal(off, 36);
	assert_int_equal(rtnl_next(m.buf.b, m.len, &off, &nlh, &err), -ENODATA);

	/* The last message may come without its padding. */
	off = 0;
	assert_int_equal(rtnl_next(m.buf.b, 17, &off, &nlh, &err), 0);
	assert_int_equal(off, 17);
	assert_int_equal(rtnl_next(m.buf.b, 17, &off, &nlh, &err), -ENODATA);
}

static void test_rtnl_next_refuses_a_truncated_header(void **state)
{
	struct hb m;

	(void)state;
	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_done(&m);
	expect_next_error(m.buf.b, 15, "15 bytes, shorter than a header");
	expect_next_error(m.buf.b, 1, "1 bytes, shorter than a header");
}

static void test_rtnl_next_refuses_a_length_past_the_buffer(void **state)
{
	struct hb m;

	(void)state;
	hb_route4(&m);
	hb_done(&m);
	expect_next_error(m.buf.b, m.len - 1, "runs past the buffer");
}

static void test_rtnl_next_refuses_a_length_shorter_than_a_header(void **state)
{
	struct hb m;

	(void)state;
	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_u32(&m, 0);
	hb_done(&m);
	m.buf.b[0] = 12;
	expect_next_error(m.buf.b, m.len, "nlmsg_len 12 is shorter than a header");
	m.buf.b[0] = 0; /* would never advance */
	expect_next_error(m.buf.b, m.len, "nlmsg_len 0 is shorter than a header");
}

static void test_rtnl_next_refuses_a_misaligned_message(void **state)
{
	struct hb m;

	(void)state;
	m.len = 0;
	hb_u16(&m, 0);
	hb_u32(&m, 16); /* a whole NLMSG_DONE, 2 bytes into the buffer */
	hb_u16(&m, NLMSG_DONE);
	hb_u16(&m, 0);
	hb_u32(&m, 0);
	hb_u32(&m, 0);
	expect_next_error(m.buf.b + 2, 16, "not 4-byte aligned");
}

static void test_rtnl_refuses_a_message_too_short_for_its_header(void **state)
{
	struct hb m;

	(void)state;
	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_u32(&m, AF_INET); /* 4 of rtmsg's 12 bytes */
	expect_route_error(&m, -EINVAL, "too short for struct rtmsg");
	hb_nlmsg(&m, RTM_NEWNEXTHOP, 0);
	hb_u32(&m, AF_INET); /* 4 of nhmsg's 8 bytes */
	expect_nexthop_error(&m, -EINVAL, "too short for struct nhmsg");
}

static void test_rtnl_refuses_an_attribute_past_the_message(void **state)
{
	struct hb m;

	(void)state;
	hb_route4(&m);
	hb_attr_u32(&m, RTA_OIF, 2);
	hb_set_u16(&m, m.len - 8, 12); /* RTA_OIF's nla_len: 4 bytes too many */
	expect_route_error(&m, -EINVAL, "RTA_OIF with nla_len 12 runs past the end");

	hb_route4(&m);
	hb_attr_u32(&m, RTA_OIF, 2);
	hb_set_u16(&m, m.len - 8, 2);
	expect_route_error(&m, -EINVAL, "RTA_OIF with nla_len 2 is shorter than its header");

	hb_route4(&m);
	hb_u16(&m, 8); /* half an attribute header */
	expect_route_error(&m, -EINVAL, "2 stray bytes after the last attribute");

	hb_route4(&m);
	hb_attr_u32(&m, 300, 1);
	hb_set_u16(&m, m.len - 8, 9);
	expect_route_error(&m, -EINVAL, "attribute 300 with nla_len 9 runs past the end");
}

static void test_rtnl_refuses_a_gateway_of_the_wrong_length(void **state)
{
	struct hb m;

	(void)state;
	hb_route4(&m);
	hb_attr(&m, RTA_GATEWAY, "\xc0\x00\x02", 3);
	expect_route_error(&m, -EINVAL, "RTA_GATEWAY of 3 bytes, expected 4");

	hb_route4(&m);
	hb_attr_addr(&m, RTA_GATEWAY, "2001:db8::1"); /* an IPv6 one needs RTA_VIA */
	expect_route_error(&m, -EINVAL, "RTA_GATEWAY of 16 bytes, expected 4");

	hb_route4(&m);
	hb_attr_via(&m, AF_INET6, "\x01\x02\x03\x04", 4);
	expect_route_error(&m, -EINVAL, "RTA_VIA of 6 bytes, expected 18 for AF_INET6");

	hb_route4(&m);
	hb_attr_via(&m, AF_PACKET, "\x01\x02\x03\x04", 4);
	expect_route_error(&m, -EINVAL, "RTA_VIA of family 17, neither AF_INET nor AF_INET6");

	hb_route4(&m);
	hb_attr(&m, RTA_VIA, "\x02", 1);
	expect_route_error(&m, -EINVAL, "RTA_VIA of 1 bytes, shorter than its family");

	hb_route4(&m);
	hb_attr_addr(&m, RTA_GATEWAY, "192.0.2.1");
	hb_attr_via(&m, AF_INET, "\x01\x02\x03\x04", 4);
	expect_route_error(&m, -EINVAL, "RTA_GATEWAY and RTA_VIA together");

	hb_route4(&m);
	hb_attr(&m, RTA_PRIORITY, "\x01\x00", 2);
	expect_route_error(&m, -EINVAL, "RTA_PRIORITY of 2 bytes, expected 4");
}

static void test_rtnl_refuses_a_dst_of_the_wrong_length(void **state)
{
	struct hb m;

	(void)state;
	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_rtmsg(&m, AF_INET6, 64, RT_TABLE_MAIN, RTN_UNICAST);
	hb_attr_addr(&m, RTA_DST, "10.0.0.0");
	expect_route_error(&m, -EINVAL, "RTA_DST of 4 bytes, expected 16");

	hb_nlmsg(&m, RTM_DELROUTE, 0);
	hb_rtmsg(&m, AF_INET, 8, RT_TABLE_MAIN, RTN_UNICAST);
	hb_attr(&m, RTA_DST, "\x0a\x00\x00\x00\x00", 5);
	expect_route_error(&m, -EINVAL, "RTA_DST of 5 bytes, expected 4");
}

static void test_rtnl_refuses_a_dst_len_longer_than_the_family(void **state)
{
	struct hb m;

	(void)state;
	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_rtmsg(&m, AF_INET, 33, RT_TABLE_MAIN, RTN_UNICAST);
	expect_route_error(&m, -EINVAL, "rtm_dst_len 33 is longer than 32");

	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_rtmsg(&m, AF_INET6, 129, RT_TABLE_MAIN, RTN_UNICAST);
	expect_route_error(&m, -EINVAL, "rtm_dst_len 129 is longer than 128");
}

static void test_rtnl_refuses_host_bits_past_dst_len(void **state)
{
	struct hb m;

	(void)state;
	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_rtmsg(&m, AF_INET, 8, RT_TABLE_MAIN, RTN_UNICAST);
	hb_attr_addr(&m, RTA_DST, "10.0.0.1");
	expect_route_error(&m, -EINVAL, "RTA_DST 10.0.0.1 has host bits set past rtm_dst_len 8");
}

static void test_rtnl_refuses_a_bad_rtnexthop_length(void **state)
{
	struct hb m;
	size_t mp, hop;

	(void)state;
	/* rtnh_len shorter than struct rtnexthop */
	hb_route4(&m);
	mp = hb_nest(&m, RTA_MULTIPATH);
	hop = hb_rtnh(&m, 0, 3);
	hb_nest_end(&m, mp);
	hb_set_u16(&m, hop, 4);
	expect_route_error(&m, -EINVAL, "RTA_MULTIPATH nexthop 1: rtnh_len 4, expected 8 to 8");

	/* rtnh_len past the attribute (into the next one) */
	hb_route4(&m);
	mp = hb_nest(&m, RTA_MULTIPATH);
	hop = hb_rtnh(&m, 0, 3);
	hb_nest_end(&m, hop);
	hop = hb_rtnh(&m, 0, 4);
	hb_nest_end(&m, mp);
	hb_attr_u32(&m, RTA_PRIORITY, 1);
	hb_set_u16(&m, hop, 16);
	expect_route_error(&m, -EINVAL, "RTA_MULTIPATH nexthop 2: rtnh_len 16, expected 8 to 8");

	/* stray bytes after the last nexthop */
	hb_route4(&m);
	mp = hb_nest(&m, RTA_MULTIPATH);
	hop = hb_rtnh(&m, 0, 3);
	hb_nest_end(&m, hop);
	hb_u32(&m, 0);
	hb_nest_end(&m, mp);
	expect_route_error(&m, -EINVAL,
			   "RTA_MULTIPATH: 4 bytes left at nexthop 2, fewer than an rtnexthop (8)");

	/* an attribute inside a hop past its rtnh_len */
	hb_route4(&m);
	mp = hb_nest(&m, RTA_MULTIPATH);
	hop = hb_rtnh(&m, 0, 3);
	hb_attr_addr(&m, RTA_GATEWAY, "192.0.2.1");
	hb_nest_end(&m, hop);
	hb_nest_end(&m, mp);
	hb_set_u16(&m, hop, 12);
	expect_route_error(&m, -EINVAL,
			   "RTA_MULTIPATH nexthop 1: RTA_GATEWAY with nla_len 8 runs past the end");

	/* a hop's gateway of the wrong size */
	hb_route4(&m);
	mp = hb_nest(&m, RTA_MULTIPATH);
	hop = hb_rtnh(&m, 0, 3);
	hb_attr(&m, RTA_GATEWAY, "\x01\x02", 2);
	hb_nest_end(&m, hop);
	hb_nest_end(&m, mp);
	expect_route_error(&m, -EINVAL,
			   "RTA_MULTIPATH nexthop 1: RTA_GATEWAY of 2 bytes, expected 4");

	/* a hop that goes nowhere */
	hb_route4(&m);
	mp = hb_nest(&m, RTA_MULTIPATH);
	hop = hb_rtnh(&m, 0, 3);
	hb_nest_end(&m, hop);
	hop = hb_rtnh(&m, 0, 0);
	hb_attr_u32(&m, RTA_FLOW, 1);
	hb_nest_end(&m, hop);
	hb_nest_end(&m, mp);
	expect_route_error(&m, -EINVAL, "RTA_MULTIPATH nexthop 2: neither a gateway nor a device");

	/* none at all */
	hb_route4(&m);
	hb_attr(&m, RTA_MULTIPATH, NULL, 0);
	expect_route_error(&m, -EINVAL, "RTA_MULTIPATH without a nexthop");
}

static void test_rtnl_refuses_too_many_paths(void **state)
{
	struct hb m;
	struct rtnl_route r;
	struct errbuf err;
	size_t mp, hop;

	(void)state;
	hb_route4(&m);
	mp = hb_nest(&m, RTA_MULTIPATH);
	for (int i = 0; i < NH_MAX_PATHS; i++) {
		hop = hb_rtnh(&m, 0, i + 1);
		hb_nest_end(&m, hop);
	}
	hb_nest_end(&m, mp);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(r.rc.n_paths, NH_MAX_PATHS);

	hop = hb_rtnh(&m, 0, 100);
	hb_nest_end(&m, hop);
	hb_nest_end(&m, mp);
	expect_route_error(&m, -EINVAL, "RTA_MULTIPATH: more than 64 nexthops");
}

static void test_rtnl_refuses_multipath_beside_a_single_path(void **state)
{
	struct hb m;
	size_t mp, hop;

	(void)state;
	hb_route4(&m);
	hb_attr_u32(&m, RTA_OIF, 1);
	mp = hb_nest(&m, RTA_MULTIPATH);
	hop = hb_rtnh(&m, 0, 3);
	hb_nest_end(&m, hop);
	hb_nest_end(&m, mp);
	expect_route_error(&m, -EINVAL, "RTA_MULTIPATH with RTA_GATEWAY, RTA_VIA or RTA_OIF");
}

static void test_rtnl_nexthop_group_length_must_be_a_multiple_of_8(void **state)
{
	struct hb m;
	uint8_t grp[16] = { 0 };

	(void)state;
	hb_nlmsg(&m, RTM_NEWNEXTHOP, 0);
	hb_nhmsg(&m, AF_UNSPEC);
	hb_attr_u32(&m, NHA_ID, 5);
	hb_attr(&m, NHA_GROUP, grp, 12);
	expect_nexthop_error(&m, -EINVAL, "NHA_GROUP of 12 bytes, not a positive multiple of 8");

	hb_nlmsg(&m, RTM_NEWNEXTHOP, 0);
	hb_nhmsg(&m, AF_UNSPEC);
	hb_attr_u32(&m, NHA_ID, 5);
	hb_attr(&m, NHA_GROUP, grp, 0);
	expect_nexthop_error(&m, -EINVAL, "NHA_GROUP of 0 bytes");

	grp[5] = 1; /* resvd1: a 16-bit weight's high byte */
	hb_nlmsg(&m, RTM_NEWNEXTHOP, 0);
	hb_nhmsg(&m, AF_UNSPEC);
	hb_attr_u32(&m, NHA_ID, 5);
	hb_attr(&m, NHA_GROUP, grp, 16);
	expect_nexthop_error(&m, -EINVAL, "NHA_GROUP member 1: weight above 256");
}

static void test_rtnl_nexthop_refuses_what_the_kernel_refuses(void **state)
{
	struct hb m;
	uint8_t grp[8] = { 1 };

	(void)state;
	hb_nlmsg(&m, RTM_NEWNEXTHOP, 0);
	hb_nhmsg(&m, AF_INET);
	hb_attr_u32(&m, NHA_OIF, 1);
	expect_nexthop_error(&m, -EINVAL, "NHA_ID missing");

	hb_nlmsg(&m, RTM_NEWNEXTHOP, 0);
	hb_nhmsg(&m, AF_INET);
	hb_attr_u32(&m, NHA_ID, 0);
	expect_nexthop_error(&m, -EINVAL, "NHA_ID 0");

	hb_nlmsg(&m, RTM_NEWNEXTHOP, 0);
	hb_nhmsg(&m, AF_INET);
	hb_attr_u32(&m, NHA_ID, 1);
	hb_attr_addr(&m, NHA_GATEWAY, "2001:db8::1");
	expect_nexthop_error(&m, -EINVAL, "NHA_GATEWAY of 16 bytes, expected 4");

	hb_nlmsg(&m, RTM_NEWNEXTHOP, 0);
	hb_nhmsg(&m, AF_UNSPEC);
	hb_attr_u32(&m, NHA_ID, 1);
	hb_attr_addr(&m, NHA_GATEWAY, "192.0.2.1");
	expect_nexthop_error(&m, -EINVAL, "NHA_GATEWAY needs nh_family AF_INET or AF_INET6");

	hb_nlmsg(&m, RTM_NEWNEXTHOP, 0);
	hb_nhmsg(&m, AF_INET);
	hb_attr_u32(&m, NHA_ID, 1);
	hb_attr(&m, NHA_BLACKHOLE, NULL, 0);
	hb_attr_u32(&m, NHA_OIF, 1);
	expect_nexthop_error(&m, -EINVAL, "NHA_BLACKHOLE with NHA_GATEWAY or NHA_OIF");

	hb_nlmsg(&m, RTM_NEWNEXTHOP, 0);
	hb_nhmsg(&m, AF_UNSPEC);
	hb_attr_u32(&m, NHA_ID, 1);
	hb_attr(&m, NHA_GROUP, grp, 8);
	hb_attr(&m, NHA_BLACKHOLE, NULL, 0);
	expect_nexthop_error(&m, -EINVAL, "NHA_GROUP with NHA_GATEWAY, NHA_OIF or NHA_BLACKHOLE");
}

static void test_rtnl_refuses_an_unknown_family(void **state)
{
	struct hb m;

	(void)state;
	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_rtmsg(&m, AF_MPLS, 20, RT_TABLE_MAIN, RTN_UNICAST);
	hb_attr_u32(&m, RTA_DST, 0x100);
	expect_route_error(&m, -EAFNOSUPPORT, "rtm_family 28 is neither AF_INET nor AF_INET6");

	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_rtmsg(&m, AF_UNSPEC, 0, RT_TABLE_MAIN, RTN_UNICAST);
	expect_route_error(&m, -EAFNOSUPPORT, "rtm_family 0");

	hb_nlmsg(&m, RTM_NEWNEXTHOP, 0);
	hb_nhmsg(&m, AF_BRIDGE);
	hb_attr_u32(&m, NHA_ID, 1);
	expect_nexthop_error(&m, -EAFNOSUPPORT,
			     "nh_family 7 is not AF_UNSPEC, AF_INET or AF_INET6");
}

static void test_rtnl_refuses_other_messages_and_source_routes(void **state)
{
	struct hb m;

	(void)state;
	hb_nlmsg(&m, RTM_NEWLINK, 0);
	hb_rtmsg(&m, AF_INET, 0, RT_TABLE_MAIN, RTN_UNICAST);
	expect_route_error(&m, -EOPNOTSUPP, "message type 16 is not a route");
	expect_nexthop_error(&m, -EOPNOTSUPP, "message type 16 is not a nexthop");

	hb_nlmsg(&m, RTM_NEWROUTE, 0);
	hb_rtmsg(&m, AF_INET6, 0, RT_TABLE_MAIN, RTN_UNICAST);
	m.buf.b[16 + 2] = 64; /* rtm_src_len */
	expect_route_error(&m, -EOPNOTSUPP, "source-specific route (rtm_src_len 64)");
}

static void test_rtnl_err_prefix_names_the_message(void **state)
{
	struct hb m;
	struct rtnl_route r;
	struct errbuf err;

	(void)state;
	hb_route4(&m);
	hb_attr(&m, RTA_GATEWAY, "\xc0\x00\x02", 3);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), -EINVAL);
	rtnl_err_prefix(&err, hb_done(&m));
	assert_string_equal(err.msg, "RTM_NEWROUTE seq 9: RTA_GATEWAY of 3 bytes, expected 4");

	hb_nlmsg(&m, 999, 0);
	err_set(&err, "odd");
	rtnl_err_prefix(&err, hb_done(&m));
	assert_string_equal(err.msg, "message type 999 seq 9: odd");
}

static void test_rtnl_encoder_refuses_what_does_not_fit(void **state)
{
	struct rtnl_route r;
	struct rtnl_nexthop n;
	union nlbuf buf;
	size_t len;

	(void)state;
	route_init(&r, "2001:db8::/32");
	route_add_path(&r, path("fe80::1", 1, 1));
	route_add_path(&r, path("fe80::2", 2, 1));
	len = rtnl_encode_route(buf.b, sizeof(buf.b), RTM_NEWROUTE, 0, 1, &r);
	assert_int_not_equal(len, 0);
	/* Every smaller buffer is refused, and nothing is written past it. */
	for (size_t size = 0; size < len; size++) {
		memset(buf.b, 0xa5, sizeof(buf.b));
		assert_int_equal(rtnl_encode_route(buf.b, size, RTM_NEWROUTE, 0, 1, &r), 0);
		for (size_t i = size; i < len + 4; i++)
			assert_int_equal(buf.b[i], 0xa5);
	}
	/* RTA_VIA's 18 bytes are padded to 20: the padding must fit too. */
	route_init(&r, "10.0.0.0/8");
	route_add_path(&r, path("fe80::1", 0, 1));
	len = rtnl_encode_route(buf.b, sizeof(buf.b), RTM_NEWROUTE, 0, 1, &r);
	assert_int_not_equal(len, 0);
	for (size_t size = 0; size < len; size++) {
		memset(buf.b, 0xa5, sizeof(buf.b));
		assert_int_equal(rtnl_encode_route(buf.b, size, RTM_NEWROUTE, 0, 1, &r), 0);
		for (size_t i = size; i < len + 4; i++)
			assert_int_equal(buf.b[i], 0xa5);
	}
	r.rc.dst.a.family = AF_UNSPEC;
	assert_int_equal(rtnl_encode_route(buf.b, sizeof(buf.b), RTM_NEWROUTE, 0, 1, &r), 0);

	memset(&n, 0, sizeof(n));
	n.cfg.id = 1;
	n.cfg.family = AF_INET;
	n.cfg.path = path("2001:db8::1", 1, 1); /* the nexthop's family is the gateway's */
	assert_int_equal(rtnl_encode_nexthop(buf.b, sizeof(buf.b), RTM_NEWNEXTHOP, 0, 1, &n), 0);
	n.cfg.family = AF_INET6;
	len = rtnl_encode_nexthop(buf.b, sizeof(buf.b), RTM_NEWNEXTHOP, 0, 1, &n);
	assert_int_not_equal(len, 0);
	assert_int_equal(rtnl_encode_nexthop(buf.b, len - 1, RTM_NEWNEXTHOP, 0, 1, &n), 0);
}

/* ----------------------------------------------------------------- FPM */

/* One FPM frame with zebra's update: RTM_DELROUTE, then RTM_NEWROUTE. */
static size_t zebra_update_frame(uint8_t *frame, size_t size)
{
	union nlbuf nl;
	struct rtnl_route r;
	size_t len, n;

	route_init(&r, "10.0.0.0/8");
	route_add_path(&r, path("192.0.2.1", 2, 1));
	r.rc.proto = RTPROT_BGP;
	len = rtnl_encode_route(nl.b, sizeof(nl.b), RTM_DELROUTE, NLM_F_REQUEST, 1, &r);
	assert_int_not_equal(len, 0);
	r.paths[0] = path("192.0.2.2", 3, 1);
	n = rtnl_encode_route(nl.b + len, sizeof(nl.b) - len, RTM_NEWROUTE,
			      NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE, 2, &r);
	assert_int_not_equal(n, 0);
	len += n;
	n = fpm_frame_encode(frame, size, nl.b, len);
	assert_int_equal(n, FPM_HDR_LEN + len);
	return n;
}

static void test_fpm_frame_carries_several_netlink_messages(void **state)
{
	union nlbuf stream;
	const uint8_t *payload;
	const struct nlmsghdr *nlh;
	struct rtnl_route r;
	struct errbuf err;
	size_t flen, plen, off, pos = 0, total;

	(void)state;
	total = zebra_update_frame(stream.b, sizeof(stream.b));
	total += zebra_update_frame(stream.b + total, sizeof(stream.b) - total);
	assert_int_equal(stream.b[0], 1);
	assert_int_equal(stream.b[1], 1);
	assert_int_equal(stream.b[2] << 8 | stream.b[3], total / 2);

	for (int frame = 0; frame < 2; frame++) {
		assert_int_equal(
			fpm_frame_next(stream.b + pos, total - pos, &flen, &payload, &plen, &err),
			0);
		assert_int_equal(flen, total / 2);
		assert_ptr_equal(payload, stream.b + pos + FPM_HDR_LEN);
		off = 0;
		assert_int_equal(rtnl_next(payload, plen, &off, &nlh, &err), 0);
		assert_int_equal(rtnl_decode_route(nlh, &r, &err), 0);
		assert_true(r.del);
		assert_int_equal(ntohl(r.paths[0].gw.v4.s_addr), 0xc0000201);
		assert_int_equal(rtnl_next(payload, plen, &off, &nlh, &err), 0);
		assert_int_equal(rtnl_decode_route(nlh, &r, &err), 0);
		assert_false(r.del);
		assert_int_equal(r.rc.flags, FIB_F_CREATE | FIB_F_REPLACE);
		assert_int_equal(ntohl(r.paths[0].gw.v4.s_addr), 0xc0000202);
		assert_int_equal(rtnl_next(payload, plen, &off, &nlh, &err), -ENODATA);
		pos += flen;
	}
	assert_int_equal(pos, total);
	assert_int_equal(fpm_frame_next(stream.b + pos, 0, &flen, &payload, &plen, &err), -EAGAIN);
}

static void test_fpm_frame_split_across_reads_waits_for_the_rest(void **state)
{
	union nlbuf frame;
	const uint8_t *payload = NULL;
	struct errbuf err;
	size_t total, flen = 0, plen = 0;

	(void)state;
	total = zebra_update_frame(frame.b, sizeof(frame.b));
	for (size_t have = 0; have < total; have++) {
		err_clear(&err);
		assert_int_equal(fpm_frame_next(frame.b, have, &flen, &payload, &plen, &err),
				 -EAGAIN);
		assert_false(err_is_set(&err));
		assert_int_equal(flen, 0);
	}
	assert_int_equal(fpm_frame_next(frame.b, total, &flen, &payload, &plen, &err), 0);
	assert_int_equal(flen, total);
	assert_int_equal(plen, total - FPM_HDR_LEN);
}

static void expect_fpm_error(const uint8_t hdr[4], size_t len, const char *msg)
{
	union nlbuf buf;
	const uint8_t *payload;
	struct errbuf err;
	size_t flen, plen;
	int ret;

	memset(buf.b, 0, sizeof(buf.b));
	memcpy(buf.b, hdr, 4);
	err_clear(&err);
	ret = fpm_frame_next(buf.b, len, &flen, &payload, &plen, &err);
	if (ret != -EPROTO || !strstr(err.msg, msg))
		fail_msg("got %d '%s', expected -EPROTO '%s'", ret, err.msg, msg);
}

static void test_fpm_refuses_bad_version_type_and_length(void **state)
{
	(void)state;
	/* Judged on the header alone, before the frame's bytes are in. */
	expect_fpm_error((const uint8_t[]){ 2, 1, 0, 100 }, 4, "FPM version 2, expected 1");
	expect_fpm_error((const uint8_t[]){ 0, 1, 0, 100 }, 4, "FPM version 0, expected 1");
	expect_fpm_error((const uint8_t[]){ 1, 2, 0, 100 }, 4,
			 "FPM message type 2, expected 1 (netlink)");
	expect_fpm_error((const uint8_t[]){ 1, 1, 0, 3 }, 4, "FPM frame length 3");
	expect_fpm_error((const uint8_t[]){ 1, 1, 0, 0 }, 4, "FPM frame length 0");
	expect_fpm_error((const uint8_t[]){ 1, 1, 0, 22 }, 64,
			 "FPM frame length 22, expected a multiple of 4");
	expect_fpm_error((const uint8_t[]){ 1, 1, 0xff, 0xff }, 4, "FPM frame length 65535");
}

static void test_fpm_encode_refuses_what_does_not_fit(void **state)
{
	static union nlbuf payload;
	union nlbuf frame;
	uint8_t *big;
	const uint8_t *p;
	struct errbuf err;
	size_t flen, plen;

	(void)state;
	memset(payload.b, 7, sizeof(payload.b));
	assert_int_equal(fpm_frame_encode(frame.b, 4 + 15, payload.b, 16), 0);
	assert_int_equal(fpm_frame_encode(frame.b, sizeof(frame.b), payload.b, 6), 0);
	assert_int_equal(fpm_frame_encode(frame.b, 4, NULL, 0), 4);
	assert_int_equal(fpm_frame_next(frame.b, 4, &flen, &p, &plen, &err), 0);
	assert_int_equal(plen, 0);

	big = calloc(1, FPM_MAX_LEN + 8);
	assert_non_null(big);
	assert_int_equal(fpm_frame_encode(big, FPM_MAX_LEN + 8, big + 4, 65532), 0);
	assert_int_equal(fpm_frame_encode(big, FPM_MAX_LEN + 8, big + 4, 65528), 65532);
	assert_int_equal(fpm_frame_next(big, FPM_MAX_LEN, &flen, &p, &plen, &err), 0);
	assert_int_equal(flen, 65532);
	free(big);
}

/* ------------------------------------------------------------ the FIB */

static void test_rtnl_decoded_route_is_what_the_fib_takes(void **state)
{
	struct fib *f = fib_new();
	struct hb m;
	struct rtnl_route r;
	struct errbuf err;
	struct addr a;
	struct addr_prefix p;
	const struct fib_route *found;
	char gw[ADDR_STRLEN] = "";
	uint32_t metric = 0;
	int ret;

	(void)state;
	assert_non_null(f);
	fib_reader_register();
	hb_nlmsg(&m, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL);
	hb_rtmsg(&m, AF_INET, 16, 0, RTN_UNICAST);
	hb_attr_addr(&m, RTA_DST, "10.20.0.0");
	hb_attr_u32(&m, RTA_TABLE, 300);
	hb_attr_u32(&m, RTA_PRIORITY, 42);
	hb_attr_addr(&m, RTA_GATEWAY, "192.0.2.7");
	hb_attr_u32(&m, RTA_OIF, 3);
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	ret = fib_route_add(f, &r.rc, &err);
	if (ret)
		fail_msg("fib_route_add: %s", err.msg);

	assert_int_equal(addr_parse("10.20.30.40", AF_INET, &a, &err), 0);
	fib_read_lock();
	found = fib_match_rcu(f, 300, &a, &p);
	if (found) {
		const struct nh_info *info = nh_info_rcu(found->nh);

		metric = found->metric;
		inet_ntop(AF_INET, &info->path[0].gw, gw, sizeof(gw));
	}
	fib_read_unlock();
	assert_non_null(found);
	assert_int_equal(p.plen, 16);
	assert_int_equal(metric, 42);
	assert_string_equal(gw, "192.0.2.7");

	/* The same message as a delete takes it out again. */
	hb_set_u16(&m, 4, RTM_DELROUTE); /* nlmsg_type */
	assert_int_equal(rtnl_decode_route(hb_done(&m), &r, &err), 0);
	assert_int_equal(fib_route_del(f, &r.rc, &err), 0);
	fib_read_lock();
	found = fib_match_rcu(f, 300, &a, &p);
	fib_read_unlock();
	assert_null(found);

	assert_int_equal(fib_check(f, &err), 0);
	fib_reader_unregister();
	fib_destroy(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rtnl_ipv4_route_round_trips_every_attribute),
		cmocka_unit_test(test_rtnl_ipv6_route_round_trips_every_attribute),
		cmocka_unit_test(test_rtnl_multipath_keeps_weights_in_both_families),
		cmocka_unit_test(test_rtnl_ipv4_route_via_ipv6_gateway_round_trips),
		cmocka_unit_test(test_rtnl_nh_id_and_table_above_255_round_trip),
		cmocka_unit_test(test_rtnl_request_flags_map_to_fib_flags),
		cmocka_unit_test(test_rtnl_delete_round_trips_and_any_scope_matches_any),
		cmocka_unit_test(test_rtnl_error_type_routes_round_trip_without_paths),
		cmocka_unit_test(test_rtnl_nexthop_single_path_round_trips),
		cmocka_unit_test(test_rtnl_nexthop_blackhole_round_trips),
		cmocka_unit_test(test_rtnl_nexthop_group_keeps_weights),
		cmocka_unit_test(test_rtnl_nexthop_delete_round_trips),
		cmocka_unit_test(test_rtnl_nexthop_delete_needs_only_its_id),
		cmocka_unit_test(test_rtnl_table_attribute_wins_over_rtm_table),
		cmocka_unit_test(test_rtnl_unknown_attributes_are_skipped),
		cmocka_unit_test(test_rtnl_route_without_dst_is_the_default_route),
		cmocka_unit_test(test_rtnl_kernel_style_multipath_decodes),
		cmocka_unit_test(test_rtnl_route_through_an_object_keeps_only_its_id),
		cmocka_unit_test(test_rtnl_ipv6_reject_route_loses_the_kernels_dev_lo),
		cmocka_unit_test(test_rtnl_unicast_without_nexthop_still_decodes),
		cmocka_unit_test(test_rtnl_next_walks_messages_and_stops_at_the_end),
		cmocka_unit_test(test_rtnl_next_refuses_a_truncated_header),
		cmocka_unit_test(test_rtnl_next_refuses_a_length_past_the_buffer),
		cmocka_unit_test(test_rtnl_next_refuses_a_length_shorter_than_a_header),
		cmocka_unit_test(test_rtnl_next_refuses_a_misaligned_message),
		cmocka_unit_test(test_rtnl_refuses_a_message_too_short_for_its_header),
		cmocka_unit_test(test_rtnl_refuses_an_attribute_past_the_message),
		cmocka_unit_test(test_rtnl_refuses_a_gateway_of_the_wrong_length),
		cmocka_unit_test(test_rtnl_refuses_a_dst_of_the_wrong_length),
		cmocka_unit_test(test_rtnl_refuses_a_dst_len_longer_than_the_family),
		cmocka_unit_test(test_rtnl_refuses_host_bits_past_dst_len),
		cmocka_unit_test(test_rtnl_refuses_a_bad_rtnexthop_length),
		cmocka_unit_test(test_rtnl_refuses_too_many_paths),
		cmocka_unit_test(test_rtnl_refuses_multipath_beside_a_single_path),
		cmocka_unit_test(test_rtnl_nexthop_group_length_must_be_a_multiple_of_8),
		cmocka_unit_test(test_rtnl_nexthop_refuses_what_the_kernel_refuses),
		cmocka_unit_test(test_rtnl_refuses_an_unknown_family),
		cmocka_unit_test(test_rtnl_refuses_other_messages_and_source_routes),
		cmocka_unit_test(test_rtnl_err_prefix_names_the_message),
		cmocka_unit_test(test_rtnl_encoder_refuses_what_does_not_fit),
		cmocka_unit_test(test_fpm_frame_carries_several_netlink_messages),
		cmocka_unit_test(test_fpm_frame_split_across_reads_waits_for_the_rest),
		cmocka_unit_test(test_fpm_refuses_bad_version_type_and_length),
		cmocka_unit_test(test_fpm_encode_refuses_what_does_not_fit),
		cmocka_unit_test(test_rtnl_decoded_route_is_what_the_fib_takes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
