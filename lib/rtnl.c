/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>

#include "lib/addr.h"
#include "lib/rtnl.h"

/* An attribute found by rtnl_attrs_parse(): its payload lies within the message. */
struct rtnl_attr {
	const uint8_t *data; /* NULL: absent */
	uint16_t len;        /* payload bytes */
};

/* The attributes read here; others are skipped, whatever their number. */
#define RTNL_RTA_MAX RTA_NH_ID
#define RTNL_NHA_MAX NHA_GATEWAY

static const char *const rtnl_rta_names[RTNL_RTA_MAX + 1] = {
	[RTA_DST] = "RTA_DST",         [RTA_OIF] = "RTA_OIF",
	[RTA_GATEWAY] = "RTA_GATEWAY", [RTA_PRIORITY] = "RTA_PRIORITY",
	[RTA_PREFSRC] = "RTA_PREFSRC", [RTA_MULTIPATH] = "RTA_MULTIPATH",
	[RTA_TABLE] = "RTA_TABLE",     [RTA_VIA] = "RTA_VIA",
	[RTA_NH_ID] = "RTA_NH_ID",
};

static const char *const rtnl_nha_names[RTNL_NHA_MAX + 1] = {
	[NHA_ID] = "NHA_ID",   [NHA_GROUP] = "NHA_GROUP",     [NHA_BLACKHOLE] = "NHA_BLACKHOLE",
	[NHA_OIF] = "NHA_OIF", [NHA_GATEWAY] = "NHA_GATEWAY",
};

/* What the walker needs to know of one attribute space. */
struct rtnl_space {
	const char *const *names;
	unsigned int max;
};

static const struct rtnl_space rtnl_rta = { rtnl_rta_names, RTNL_RTA_MAX };
static const struct rtnl_space rtnl_nha = { rtnl_nha_names, RTNL_NHA_MAX };

/* Attribute @type's name, or "attribute N" in @buf. */
static const char *rtnl_attr_name(const struct rtnl_space *sp, unsigned int type, char *buf,
				  size_t size)
{
	if (type <= sp->max && sp->names[type])
		return sp->names[type];
	snprintf(buf, size, "attribute %u", type);
	return buf;
}

static size_t rtnl_addr_len(int family)
{
	return family == AF_INET6 ? 16 : 4;
}

static const char *rtnl_family_name(int family)
{
	return family == AF_INET6 ? "AF_INET6" : "AF_INET";
}

/*
 * Walks the attributes in @p (@len bytes) into @tb (indexed by type, sp->max
 * + 1 entries): every header and payload must lie within @len, which leaves
 * no stray bytes at the end. As in the kernel's nla_parse(), the last of a
 * type wins and the NLA_F_NESTED/NLA_F_NET_BYTEORDER bits are not part of
 * the type. @where names the container in messages.
 */
static int rtnl_attrs_parse(const uint8_t *p, size_t len, const struct rtnl_space *sp,
			    struct rtnl_attr *tb, const char *where, struct errbuf *err)
{
	size_t off = 0;

	memset(tb, 0, (sp->max + 1) * sizeof(*tb));
	while (off < len) {
		size_t left = len - off;
		struct nlattr a;
		unsigned int type;
		char name[32];

		if (left < sizeof(a)) {
			err_set(err, "%zu stray bytes after the last attribute of %s", left, where);
			return -EINVAL;
		}
		memcpy(&a, p + off, sizeof(a));
		type = a.nla_type & NLA_TYPE_MASK;
		if (a.nla_len < sizeof(a) || a.nla_len > left) {
			err_set(err, "%s with nla_len %u %s (%zu bytes left in %s)",
				rtnl_attr_name(sp, type, name, sizeof(name)), a.nla_len,
				a.nla_len < sizeof(a) ? "is shorter than its header"
						      : "runs past the end",
				left, where);
			return -EINVAL;
		}
		if (type <= sp->max) {
			tb[type].data = p + off + NLA_HDRLEN;
			tb[type].len = (uint16_t)(a.nla_len - NLA_HDRLEN);
		}
		off += NLA_ALIGN(a.nla_len);
	}
	return 0;
}

/* Whether @a has exactly @want bytes; else -EINVAL naming it. */
static int rtnl_attr_size(const struct rtnl_attr *a, const char *name, size_t want,
			  struct errbuf *err)
{
	if (a->len == want)
		return 0;
	err_set(err, "%s of %u bytes, expected %zu", name, a->len, want);
	return -EINVAL;
}

/* A u32 attribute into *@v when present; *@v untouched when absent. */
static int rtnl_attr_u32(const struct rtnl_attr *a, const char *name, uint32_t *v,
			 struct errbuf *err)
{
	int ret;

	if (!a->data)
		return 0;
	ret = rtnl_attr_size(a, name, sizeof(*v), err);
	if (ret)
		return ret;
	memcpy(v, a->data, sizeof(*v));
	return 0;
}

/* An address of @family into @dst (4 or 16 bytes) when present. */
static int rtnl_attr_addr(const struct rtnl_attr *a, const char *name, int family, void *dst,
			  struct errbuf *err)
{
	int ret;

	if (!a->data)
		return 0;
	ret = rtnl_attr_size(a, name, rtnl_addr_len(family), err);
	if (ret)
		return ret;
	memcpy(dst, a->data, a->len);
	return 0;
}

/* RTA_VIA (struct rtvia: a family, then an address of that family) as @p's gateway. */
static int rtnl_attr_via(const struct rtnl_attr *a, struct nh_path *p, struct errbuf *err)
{
	uint16_t family;
	size_t want;

	if (a->len < sizeof(family)) {
		err_set(err, "RTA_VIA of %u bytes, shorter than its family (2)", a->len);
		return -EINVAL;
	}
	memcpy(&family, a->data, sizeof(family));
	if (family != AF_INET && family != AF_INET6) {
		err_set(err, "RTA_VIA of family %u, neither AF_INET nor AF_INET6", family);
		return -EINVAL;
	}
	want = sizeof(family) + rtnl_addr_len(family);
	if (a->len != want) {
		err_set(err, "RTA_VIA of %u bytes, expected %zu for %s", a->len, want,
			rtnl_family_name(family));
		return -EINVAL;
	}
	memcpy(&p->gw, a->data + sizeof(family), rtnl_addr_len(family));
	p->gw_family = (uint8_t)family;
	return 0;
}

/* A path's gateway from RTA_GATEWAY (of the route's @family) or RTA_VIA, at most one of them. */
static int rtnl_path_gateway(const struct rtnl_attr *tb, int family, struct nh_path *p,
			     struct errbuf *err)
{
	int ret;

	if (tb[RTA_GATEWAY].data && tb[RTA_VIA].data) {
		err_set(err, "RTA_GATEWAY and RTA_VIA together");
		return -EINVAL;
	}
	if (tb[RTA_VIA].data)
		return rtnl_attr_via(&tb[RTA_VIA], p, err);
	if (!tb[RTA_GATEWAY].data)
		return 0;
	ret = rtnl_attr_addr(&tb[RTA_GATEWAY], "RTA_GATEWAY", family, &p->gw, err);
	if (ret)
		return ret;
	p->gw_family = (uint8_t)family;
	return 0;
}

/* One rtnexthop of RTA_MULTIPATH: its fixed part @nh and the attributes after it. */
/* The RTNH_F_* the FIB keeps: onlink, and dead and linkdown, which lookups heed. */
static uint8_t rtnl_nh_flags(unsigned int rtnh_flags)
{
	return (uint8_t)((rtnh_flags & RTNH_F_ONLINK ? NH_F_ONLINK : 0) |
			 (rtnh_flags & RTNH_F_DEAD ? NH_F_DEAD : 0) |
			 (rtnh_flags & RTNH_F_LINKDOWN ? NH_F_LINKDOWN : 0));
}

/* The other way: what a path's flags say as RTNH_F_* (the encoder's). */
static unsigned int rtnl_rtnh_flags(uint8_t nh_flags)
{
	return (nh_flags & NH_F_ONLINK ? RTNH_F_ONLINK : 0) |
	       (nh_flags & NH_F_DEAD ? RTNH_F_DEAD : 0) |
	       (nh_flags & NH_F_LINKDOWN ? RTNH_F_LINKDOWN : 0);
}

static int rtnl_hop(const struct rtnexthop *nh, const uint8_t *attrs, int family, struct nh_path *p,
		    struct errbuf *err)
{
	struct rtnl_attr tb[RTNL_RTA_MAX + 1];
	int ret;

	ret = rtnl_attrs_parse(attrs, nh->rtnh_len - sizeof(*nh), &rtnl_rta, tb, "the nexthop",
			       err);
	if (ret)
		return ret;
	ret = rtnl_path_gateway(tb, family, p, err);
	if (ret)
		return ret;
	if (!p->gw_family && !nh->rtnh_ifindex) {
		err_set(err, "neither a gateway nor a device");
		return -EINVAL;
	}
	/* rtnh_ifindex is an int; a negative one names no device the FIB could know. */
	p->ifindex = (uint32_t)nh->rtnh_ifindex;
	p->weight = (uint16_t)(nh->rtnh_hops + 1);
	p->flags |= rtnl_nh_flags(nh->rtnh_flags);
	return 0;
}

/*
 * RTA_MULTIPATH: rtnexthops back to back, each rtnh_len long (at least
 * its fixed part, within what is left), the next at RTNH_ALIGN of it. As
 * in the kernel's fib_count_nexthops(), bytes left over that cannot be a
 * nexthop make the whole attribute invalid.
 */
static int rtnl_multipath(const struct rtnl_attr *mp, int family, struct rtnl_route *out,
			  struct errbuf *err)
{
	unsigned int n = 0;
	size_t off = 0;
	int ret;

	while (off < mp->len) {
		size_t left = mp->len - off;
		struct rtnexthop nh;

		if (left < sizeof(nh)) {
			err_set(err,
				"RTA_MULTIPATH: %zu bytes left at nexthop %u, fewer than an "
				"rtnexthop (%zu)",
				left, n + 1, sizeof(nh));
			return -EINVAL;
		}
		memcpy(&nh, mp->data + off, sizeof(nh));
		if (nh.rtnh_len < sizeof(nh) || nh.rtnh_len > left) {
			err_set(err, "RTA_MULTIPATH nexthop %u: rtnh_len %u, expected %zu to %zu",
				n + 1, nh.rtnh_len, sizeof(nh), left);
			return -EINVAL;
		}
		if (n == NH_MAX_PATHS) {
			err_set(err, "RTA_MULTIPATH: more than %u nexthops", NH_MAX_PATHS);
			return -EINVAL;
		}
		ret = rtnl_hop(&nh, mp->data + off + sizeof(nh), family, &out->paths[n], err);
		if (ret) {
			err_prefix(err, "RTA_MULTIPATH nexthop %u", n + 1);
			return ret;
		}
		n++;
		off += RTNH_ALIGN(nh.rtnh_len);
	}
	if (!n) {
		err_set(err, "RTA_MULTIPATH without a nexthop");
		return -EINVAL;
	}
	out->rc.n_paths = n;
	return 0;
}

/* The route's paths: RTA_MULTIPATH, or one from RTA_GATEWAY/RTA_VIA and RTA_OIF. */
static int rtnl_route_paths(const struct rtnl_attr *tb, int family, struct rtnl_route *out,
			    struct errbuf *err)
{
	struct nh_path *p = &out->paths[0];
	int ret;

	if (tb[RTA_MULTIPATH].data) {
		/* The kernel never sends both; which one would be meant is a guess. */
		if (tb[RTA_GATEWAY].data || tb[RTA_VIA].data || tb[RTA_OIF].data) {
			err_set(err, "RTA_MULTIPATH with RTA_GATEWAY, RTA_VIA or RTA_OIF");
			return -EINVAL;
		}
		ret = rtnl_multipath(&tb[RTA_MULTIPATH], family, out, err);
	} else {
		ret = rtnl_path_gateway(tb, family, p, err);
		if (!ret)
			ret = rtnl_attr_u32(&tb[RTA_OIF], "RTA_OIF", &p->ifindex, err);
		if (!ret && (p->gw_family || p->ifindex)) {
			p->weight = 1;
			/* a single path's RTNH_F_* are the route's rtm_flags */
			p->flags |= rtnl_nh_flags(out->rtm_flags);
			out->rc.n_paths = 1;
		}
	}
	if (!ret && out->rc.n_paths)
		out->rc.paths = out->paths;
	return ret;
}

static unsigned int rtnl_fib_flags(uint16_t nlm_flags)
{
	unsigned int flags = 0;

	if (nlm_flags & NLM_F_CREATE)
		flags |= FIB_F_CREATE;
	if (nlm_flags & NLM_F_EXCL)
		flags |= FIB_F_EXCL;
	if (nlm_flags & NLM_F_REPLACE)
		flags |= FIB_F_REPLACE;
	if (nlm_flags & NLM_F_APPEND)
		flags |= FIB_F_APPEND;
	return flags;
}

uint16_t rtnl_nlm_flags(unsigned int fib_flags)
{
	uint16_t flags = 0;

	if (fib_flags & FIB_F_CREATE)
		flags |= NLM_F_CREATE;
	if (fib_flags & FIB_F_EXCL)
		flags |= NLM_F_EXCL;
	if (fib_flags & FIB_F_REPLACE)
		flags |= NLM_F_REPLACE;
	if (fib_flags & FIB_F_APPEND)
		flags |= NLM_F_APPEND;
	return flags;
}

/*
 * @nlh's fixed header (struct rtmsg, struct nhmsg) of @hdr_len bytes into
 * @hdr, and where its attributes are (from NLMSG_SPACE of it to
 * nlmsg_len), once nlmsg_len is known to cover the header.
 */
static int rtnl_fixed_header(const struct nlmsghdr *nlh, void *hdr, size_t hdr_len,
			     const char *name, const uint8_t **attrs, size_t *attrs_len,
			     struct errbuf *err)
{
	if (nlh->nlmsg_len < NLMSG_SPACE(hdr_len)) {
		err_set(err, "nlmsg_len %u is too short for struct %s (%zu bytes needed)",
			nlh->nlmsg_len, name, (size_t)NLMSG_SPACE(hdr_len));
		return -EINVAL;
	}
	memcpy(hdr, NLMSG_DATA(nlh), hdr_len);
	*attrs = (const uint8_t *)nlh + NLMSG_SPACE(hdr_len);
	*attrs_len = nlh->nlmsg_len - NLMSG_SPACE(hdr_len);
	return 0;
}

/* Checks what struct rtmsg says before any attribute is read. */
static int rtnl_rtmsg_check(const struct rtmsg *rtm, struct errbuf *err)
{
	if (rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6) {
		err_set(err, "rtm_family %u is neither AF_INET nor AF_INET6", rtm->rtm_family);
		return -EAFNOSUPPORT;
	}
	if (rtm->rtm_dst_len > addr_bits(rtm->rtm_family)) {
		err_set(err, "rtm_dst_len %u is longer than %u", rtm->rtm_dst_len,
			addr_bits(rtm->rtm_family));
		return -EINVAL;
	}
	if (rtm->rtm_src_len) {
		err_set(err, "source-specific route (rtm_src_len %u) is not supported",
			rtm->rtm_src_len);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* The destination: RTA_DST (or the zero address) with rtm_dst_len, no host bits. */
static int rtnl_route_dst(const struct rtnl_attr *tb, const struct rtmsg *rtm,
			  struct rtnl_route *out, struct errbuf *err)
{
	struct addr_prefix *dst = &out->rc.dst;
	char buf[ADDR_STRLEN];
	int ret;

	dst->a.family = rtm->rtm_family;
	dst->plen = rtm->rtm_dst_len;
	ret = rtnl_attr_addr(&tb[RTA_DST], "RTA_DST", rtm->rtm_family, dst->a.b, err);
	if (ret)
		return ret;
	if (addr_has_host_bits(&dst->a, dst->plen)) {
		err_set(err, "RTA_DST %s has host bits set past rtm_dst_len %u",
			addr_format(&dst->a, buf, sizeof(buf)), dst->plen);
		return -EINVAL;
	}
	return 0;
}

/* The attributes of a route but its destination and paths. */
static int rtnl_route_attrs(const struct rtnl_attr *tb, int family, struct rtnl_route *out,
			    struct errbuf *err)
{
	int ret;

	ret = rtnl_attr_u32(&tb[RTA_TABLE], "RTA_TABLE", &out->rc.table, err);
	if (!ret)
		ret = rtnl_attr_u32(&tb[RTA_PRIORITY], "RTA_PRIORITY", &out->rc.metric, err);
	if (!ret)
		ret = rtnl_attr_u32(&tb[RTA_NH_ID], "RTA_NH_ID", &out->rc.nh_id, err);
	if (!ret && tb[RTA_PREFSRC].data) {
		ret = rtnl_attr_addr(&tb[RTA_PREFSRC], "RTA_PREFSRC", family, &out->prefsrc, err);
		if (!ret)
			out->prefsrc_family = (uint8_t)family;
	}
	return ret;
}

static void rtnl_route_drop_paths(struct rtnl_route *out)
{
	memset(out->paths, 0, out->rc.n_paths * sizeof(out->paths[0]));
	out->rc.n_paths = 0;
	out->rc.paths = NULL;
}

/*
 * What the kernel reports beside what was added, dropped once checked so
 * that the route is the one that was added and what fib_route_add()
 * takes (fib_dump_info(), rt6_fill_node()):
 *  - in its default nexthop_compat_mode, a route through a nexthop object
 *    comes with the object's paths after RTA_NH_ID, and as RTN_BLACKHOLE
 *    when the object is a blackhole: the object alone says where it goes;
 *  - an IPv6 blackhole, unreachable or prohibit route comes with
 *    RTA_OIF of the loopback device, which such a route does not have.
 */
static void rtnl_route_unreport(struct rtnl_route *out)
{
	uint8_t type = out->rc.type;

	if (out->rc.nh_id) {
		rtnl_route_drop_paths(out);
		if (type == RTN_BLACKHOLE)
			out->rc.type = RTN_UNICAST;
		return;
	}
	if ((type == RTN_BLACKHOLE || type == RTN_UNREACHABLE || type == RTN_PROHIBIT ||
	     type == RTN_THROW) &&
	    out->rc.n_paths == 1 && out->paths[0].gw_family == AF_UNSPEC)
		rtnl_route_drop_paths(out);
}

int rtnl_decode_route(const struct nlmsghdr *nlh, struct rtnl_route *out, struct errbuf *err)
{
	struct rtnl_attr tb[RTNL_RTA_MAX + 1];
	const uint8_t *attrs;
	size_t attrs_len;
	struct rtmsg rtm;
	int ret;

	memset(out, 0, sizeof(*out));
	if (nlh->nlmsg_type != RTM_NEWROUTE && nlh->nlmsg_type != RTM_DELROUTE) {
		err_set(err, "message type %u is not a route", nlh->nlmsg_type);
		return -EOPNOTSUPP;
	}
	ret = rtnl_fixed_header(nlh, &rtm, sizeof(rtm), "rtmsg", &attrs, &attrs_len, err);
	if (ret)
		return ret;
	ret = rtnl_rtmsg_check(&rtm, err);
	if (ret)
		return ret;
	ret = rtnl_attrs_parse(attrs, attrs_len, &rtnl_rta, tb, "the message", err);
	if (ret)
		return ret;

	out->del = nlh->nlmsg_type == RTM_DELROUTE;
	out->tos = rtm.rtm_tos;
	out->rtm_flags = rtm.rtm_flags;
	out->rc.table = rtm.rtm_table;
	out->rc.type = rtm.rtm_type;
	out->rc.proto = rtm.rtm_protocol;
	out->rc.scope = out->del && rtm.rtm_scope == RT_SCOPE_NOWHERE ? 0 : rtm.rtm_scope;
	out->rc.flags = out->del ? 0 : rtnl_fib_flags(nlh->nlmsg_flags);

	ret = rtnl_route_dst(tb, &rtm, out, err);
	if (!ret)
		ret = rtnl_route_attrs(tb, rtm.rtm_family, out, err);
	if (!ret)
		ret = rtnl_route_paths(tb, rtm.rtm_family, out, err);
	/* The route's preferred source goes with each path (as the kernel's fib_info has it). */
	for (unsigned int i = 0; !ret && out->prefsrc_family && i < out->rc.n_paths; i++) {
		out->paths[i].flags |= NH_F_SRC;
		memcpy(&out->paths[i].prefsrc, &out->prefsrc,
		       out->prefsrc_family == AF_INET ? 4 : 16);
	}
	if (!ret)
		rtnl_route_unreport(out);
	return ret;
}

/* NHA_GROUP: an array of struct nexthop_grp, 1 to NH_MAX_PATHS of them. */
static int rtnl_nh_group(const struct rtnl_attr *a, struct nh_obj_cfg *cfg, struct errbuf *err)
{
	size_t n = a->len / sizeof(struct nexthop_grp);

	if (a->len % sizeof(struct nexthop_grp) || !n) {
		err_set(err, "NHA_GROUP of %u bytes, not a positive multiple of %zu", a->len,
			sizeof(struct nexthop_grp));
		return -EINVAL;
	}
	if (n > NH_MAX_PATHS) {
		err_set(err, "NHA_GROUP of %zu members, more than %u", n, NH_MAX_PATHS);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		struct nexthop_grp g;

		memcpy(&g, a->data + i * sizeof(g), sizeof(g));
		/* Newer kernels carry the high byte of a 16-bit weight in resvd1. */
		if (g.resvd1) {
			err_set(err, "NHA_GROUP member %zu: weight above 256", i + 1);
			return -EINVAL;
		}
		cfg->member[i].id = g.id;
		cfg->member[i].weight = (uint16_t)(g.weight + 1);
	}
	cfg->n_members = (uint16_t)n;
	return 0;
}

/* A single path: NHA_GATEWAY of the nexthop's family, NHA_OIF, RTNH_F_ONLINK. */
static int rtnl_nh_path(const struct rtnl_attr *tb, const struct nhmsg *nhm, struct nh_path *p,
			struct errbuf *err)
{
	int ret;

	if (tb[NHA_GATEWAY].data) {
		if (nhm->nh_family != AF_INET && nhm->nh_family != AF_INET6) {
			err_set(err, "NHA_GATEWAY needs nh_family AF_INET or AF_INET6, not %u",
				nhm->nh_family);
			return -EINVAL;
		}
		ret = rtnl_attr_addr(&tb[NHA_GATEWAY], "NHA_GATEWAY", nhm->nh_family, &p->gw, err);
		if (ret)
			return ret;
		p->gw_family = nhm->nh_family;
	}
	ret = rtnl_attr_u32(&tb[NHA_OIF], "NHA_OIF", &p->ifindex, err);
	if (ret)
		return ret;
	p->weight = 1;
	if (nhm->nh_flags & RTNH_F_ONLINK)
		p->flags |= NH_F_ONLINK;
	return 0;
}

/* What a new nexthop is: a group, a blackhole, or a path; never two of them. */
static int rtnl_nh_body(const struct rtnl_attr *tb, const struct nhmsg *nhm, struct nh_obj_cfg *cfg,
			struct errbuf *err)
{
	bool path = tb[NHA_GATEWAY].data || tb[NHA_OIF].data;

	if (tb[NHA_GROUP].data) {
		if (path || tb[NHA_BLACKHOLE].data) {
			err_set(err, "NHA_GROUP with NHA_GATEWAY, NHA_OIF or NHA_BLACKHOLE");
			return -EINVAL;
		}
		return rtnl_nh_group(&tb[NHA_GROUP], cfg, err);
	}
	if (tb[NHA_BLACKHOLE].data) {
		if (path) {
			err_set(err, "NHA_BLACKHOLE with NHA_GATEWAY or NHA_OIF");
			return -EINVAL;
		}
		if (tb[NHA_BLACKHOLE].len) {
			err_set(err, "NHA_BLACKHOLE of %u bytes, expected 0",
				tb[NHA_BLACKHOLE].len);
			return -EINVAL;
		}
		cfg->blackhole = 1;
		return 0;
	}
	return rtnl_nh_path(tb, nhm, &cfg->path, err);
}

int rtnl_decode_nexthop(const struct nlmsghdr *nlh, struct rtnl_nexthop *out, struct errbuf *err)
{
	struct rtnl_attr tb[RTNL_NHA_MAX + 1];
	const uint8_t *attrs;
	size_t attrs_len;
	struct nhmsg nhm;
	int ret;

	memset(out, 0, sizeof(*out));
	if (nlh->nlmsg_type != RTM_NEWNEXTHOP && nlh->nlmsg_type != RTM_DELNEXTHOP) {
		err_set(err, "message type %u is not a nexthop", nlh->nlmsg_type);
		return -EOPNOTSUPP;
	}
	ret = rtnl_fixed_header(nlh, &nhm, sizeof(nhm), "nhmsg", &attrs, &attrs_len, err);
	if (ret)
		return ret;
	if (nhm.nh_family != AF_UNSPEC && nhm.nh_family != AF_INET && nhm.nh_family != AF_INET6) {
		err_set(err, "nh_family %u is not AF_UNSPEC, AF_INET or AF_INET6", nhm.nh_family);
		return -EAFNOSUPPORT;
	}
	ret = rtnl_attrs_parse(attrs, attrs_len, &rtnl_nha, tb, "the message", err);
	if (ret)
		return ret;
	if (!tb[NHA_ID].data) {
		err_set(err, "NHA_ID missing");
		return -EINVAL;
	}
	ret = rtnl_attr_u32(&tb[NHA_ID], "NHA_ID", &out->cfg.id, err);
	if (ret)
		return ret;
	if (!out->cfg.id) {
		err_set(err, "NHA_ID 0: a nexthop object needs an id");
		return -EINVAL;
	}
	out->del = nlh->nlmsg_type == RTM_DELNEXTHOP;
	out->cfg.family = nhm.nh_family;
	if (out->del)
		return 0;
	out->flags = rtnl_fib_flags(nlh->nlmsg_flags);
	return rtnl_nh_body(tb, &nhm, &out->cfg, err);
}

int rtnl_next(const void *buf, size_t len, size_t *off, const struct nlmsghdr **nlh,
	      struct errbuf *err)
{
	size_t left = *off < len ? len - *off : 0;
	const uint8_t *p;
	struct nlmsghdr h;

	if (!left)
		return -ENODATA;
	p = (const uint8_t *)buf + *off;
	if ((uintptr_t)p % NLMSG_ALIGNTO) {
		err_set(err, "netlink message at offset %zu is not 4-byte aligned", *off);
		return -EBADMSG;
	}
	if (left < sizeof(h)) {
		err_set(err,
			"netlink message at offset %zu: %zu bytes, shorter than a header (%zu)",
			*off, left, sizeof(h));
		return -EBADMSG;
	}
	memcpy(&h, p, sizeof(h));
	if (h.nlmsg_len < sizeof(h)) {
		err_set(err, "netlink message at offset %zu: nlmsg_len %u is shorter than a header",
			*off, h.nlmsg_len);
		return -EBADMSG;
	}
	if (h.nlmsg_len > left) {
		err_set(err,
			"netlink message at offset %zu: nlmsg_len %u runs past the buffer "
			"(%zu bytes left)",
			*off, h.nlmsg_len, left);
		return -EBADMSG;
	}
	*nlh = (const struct nlmsghdr *)p;
	/* The last message of a buffer may come without its padding. */
	*off += NLMSG_ALIGN(h.nlmsg_len) < left ? NLMSG_ALIGN(h.nlmsg_len) : left;
	return 0;
}

static const char *rtnl_type_name(uint16_t type)
{
	switch (type) {
	case NLMSG_NOOP:
		return "NLMSG_NOOP";
	case NLMSG_ERROR:
		return "NLMSG_ERROR";
	case NLMSG_DONE:
		return "NLMSG_DONE";
	case RTM_NEWROUTE:
		return "RTM_NEWROUTE";
	case RTM_DELROUTE:
		return "RTM_DELROUTE";
	case RTM_NEWNEXTHOP:
		return "RTM_NEWNEXTHOP";
	case RTM_DELNEXTHOP:
		return "RTM_DELNEXTHOP";
	case RTM_NEWLINK:
		return "RTM_NEWLINK";
	case RTM_DELLINK:
		return "RTM_DELLINK";
	case RTM_NEWADDR:
		return "RTM_NEWADDR";
	case RTM_DELADDR:
		return "RTM_DELADDR";
	}
	return NULL;
}

void rtnl_err_prefix(struct errbuf *err, const struct nlmsghdr *nlh)
{
	const char *name = rtnl_type_name(nlh->nlmsg_type);

	if (name)
		err_prefix(err, "%s seq %u", name, nlh->nlmsg_seq);
	else
		err_prefix(err, "message type %u seq %u", nlh->nlmsg_type, nlh->nlmsg_seq);
}

/* ------------------------------------------------------------------ encoding */

/* The netlink header and the fixed header after it, or NULL when @size cannot hold them. */
static struct nlmsghdr *rtnl_put_header(void *buf, size_t size, uint16_t type, uint16_t flags,
					uint32_t seq, const void *hdr, size_t hdr_len)
{
	struct nlmsghdr *nlh;

	if (size < NLMSG_SPACE(hdr_len))
		return NULL;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	nlh->nlmsg_seq = seq;
	memcpy(mnl_nlmsg_put_extra_header(nlh, hdr_len), hdr, hdr_len);
	return nlh;
}

/* A gateway as RTA_GATEWAY when of the route's @family, else as RTA_VIA. */
static bool rtnl_put_gateway(struct nlmsghdr *nlh, size_t size, int family, const struct nh_path *p)
{
	struct {
		uint16_t family;
		uint8_t addr[16];
	} via;

	if (p->gw_family == AF_UNSPEC)
		return true;
	if (p->gw_family == family)
		return mnl_attr_put_check(nlh, size, RTA_GATEWAY, rtnl_addr_len(family), &p->gw);
	if (p->gw_family != AF_INET && p->gw_family != AF_INET6)
		return false;
	via.family = p->gw_family;
	memcpy(via.addr, &p->gw, rtnl_addr_len(p->gw_family));
	return mnl_attr_put_check(nlh, size, RTA_VIA,
				  sizeof(via.family) + rtnl_addr_len(p->gw_family), &via);
}

/* One rtnexthop of RTA_MULTIPATH, with its gateway. */
static bool rtnl_put_hop(struct nlmsghdr *nlh, size_t size, int family, const struct nh_path *p)
{
	struct rtnexthop *nh = mnl_nlmsg_get_payload_tail(nlh);

	if (nlh->nlmsg_len + RTNH_ALIGN(sizeof(*nh)) > size || !p->weight || p->weight > 256)
		return false;
	memset(nh, 0, sizeof(*nh));
	nh->rtnh_hops = (uint8_t)(p->weight - 1);
	nh->rtnh_ifindex = (int)p->ifindex;
	nh->rtnh_flags = (unsigned char)rtnl_rtnh_flags(p->flags);
	nlh->nlmsg_len += RTNH_ALIGN(sizeof(*nh));
	if (!rtnl_put_gateway(nlh, size, family, p))
		return false;
	nh->rtnh_len = (uint16_t)((uint8_t *)mnl_nlmsg_get_payload_tail(nlh) - (uint8_t *)nh);
	return true;
}

static bool rtnl_put_paths(struct nlmsghdr *nlh, size_t size, int family, const struct fib_rcfg *rc)
{
	struct nlattr *mp;

	if (rc->n_paths == 1)
		return rtnl_put_gateway(nlh, size, family, &rc->paths[0]) &&
		       (!rc->paths[0].ifindex ||
			mnl_attr_put_u32_check(nlh, size, RTA_OIF, rc->paths[0].ifindex));
	mp = mnl_attr_nest_start_check(nlh, size, RTA_MULTIPATH);
	if (!mp)
		return false;
	for (unsigned int i = 0; i < rc->n_paths; i++) {
		if (!rtnl_put_hop(nlh, size, family, &rc->paths[i]))
			return false;
	}
	mnl_attr_nest_end(nlh, mp);
	return true;
}

static bool rtnl_route_encodable(const struct rtnl_route *r)
{
	const struct fib_rcfg *rc = &r->rc;

	return (rc->dst.a.family == AF_INET || rc->dst.a.family == AF_INET6) &&
	       rc->dst.plen <= addr_bits(rc->dst.a.family) && rc->n_paths <= NH_MAX_PATHS &&
	       (!rc->n_paths || rc->paths) &&
	       (!r->prefsrc_family || r->prefsrc_family == rc->dst.a.family);
}

size_t rtnl_encode_route(void *buf, size_t size, uint16_t type, uint16_t flags, uint32_t seq,
			 const struct rtnl_route *r)
{
	const struct fib_rcfg *rc = &r->rc;
	int family = rc->dst.a.family;
	struct nlmsghdr *nlh;
	struct rtmsg rtm;
	bool ok;

	if (!rtnl_route_encodable(r))
		return 0;
	memset(&rtm, 0, sizeof(rtm));
	rtm.rtm_family = (uint8_t)family;
	rtm.rtm_dst_len = rc->dst.plen;
	rtm.rtm_tos = r->tos;
	rtm.rtm_table = rc->table < 256 ? (uint8_t)rc->table : RT_TABLE_UNSPEC;
	rtm.rtm_protocol = rc->proto;
	rtm.rtm_scope = rc->scope;
	rtm.rtm_type = rc->type;
	rtm.rtm_flags = r->rtm_flags;
	if (rc->n_paths == 1)
		rtm.rtm_flags |= rtnl_rtnh_flags(rc->paths[0].flags);
	nlh = rtnl_put_header(buf, size, type, flags, seq, &rtm, sizeof(rtm));
	if (!nlh)
		return 0;
	ok = mnl_attr_put_u32_check(nlh, size, RTA_TABLE, rc->table);
	if (ok && rc->dst.plen)
		ok = mnl_attr_put_check(nlh, size, RTA_DST, rtnl_addr_len(family), rc->dst.a.b);
	if (ok && rc->metric)
		ok = mnl_attr_put_u32_check(nlh, size, RTA_PRIORITY, rc->metric);
	if (ok && r->prefsrc_family)
		ok = mnl_attr_put_check(nlh, size, RTA_PREFSRC, rtnl_addr_len(family), &r->prefsrc);
	if (ok && rc->nh_id)
		ok = mnl_attr_put_u32_check(nlh, size, RTA_NH_ID, rc->nh_id);
	if (ok && rc->n_paths)
		ok = rtnl_put_paths(nlh, size, family, rc);
	return ok ? nlh->nlmsg_len : 0;
}

/* The body of a new nexthop: NHA_GROUP, NHA_BLACKHOLE, or NHA_GATEWAY and NHA_OIF. */
static bool rtnl_put_nh_body(struct nlmsghdr *nlh, size_t size, const struct nh_obj_cfg *cfg)
{
	struct nexthop_grp grp[NH_MAX_PATHS];
	const struct nh_path *p = &cfg->path;

	if (cfg->n_members) {
		if (cfg->n_members > NH_MAX_PATHS)
			return false;
		memset(grp, 0, sizeof(grp));
		for (unsigned int i = 0; i < cfg->n_members; i++) {
			if (!cfg->member[i].weight || cfg->member[i].weight > 256)
				return false;
			grp[i].id = cfg->member[i].id;
			grp[i].weight = (uint8_t)(cfg->member[i].weight - 1);
		}
		return mnl_attr_put_check(nlh, size, NHA_GROUP, cfg->n_members * sizeof(grp[0]),
					  grp);
	}
	if (cfg->blackhole)
		return mnl_attr_put_check(nlh, size, NHA_BLACKHOLE, 0, "");
	if (p->gw_family &&
	    !mnl_attr_put_check(nlh, size, NHA_GATEWAY, rtnl_addr_len(p->gw_family), &p->gw))
		return false;
	return !p->ifindex || mnl_attr_put_u32_check(nlh, size, NHA_OIF, p->ifindex);
}

size_t rtnl_encode_nexthop(void *buf, size_t size, uint16_t type, uint16_t flags, uint32_t seq,
			   const struct rtnl_nexthop *n)
{
	const struct nh_obj_cfg *cfg = &n->cfg;
	bool del = type == RTM_DELNEXTHOP;
	struct nlmsghdr *nlh;
	struct nhmsg nhm;

	/* A gateway's family is the nexthop's: NHA_GATEWAY has no family of its own. */
	if (!del && !cfg->n_members && !cfg->blackhole && cfg->path.gw_family &&
	    cfg->path.gw_family != cfg->family)
		return 0;
	memset(&nhm, 0, sizeof(nhm));
	nhm.nh_family = cfg->family;
	if (!del && cfg->path.flags & NH_F_ONLINK)
		nhm.nh_flags = RTNH_F_ONLINK;
	nlh = rtnl_put_header(buf, size, type, flags, seq, &nhm, sizeof(nhm));
	if (!nlh || !mnl_attr_put_u32_check(nlh, size, NHA_ID, cfg->id))
		return 0;
	if (!del && !rtnl_put_nh_body(nlh, size, cfg))
		return 0;
	return nlh->nlmsg_len;
}
