/* SPDX-License-Identifier: MIT */
/*
 * The names of route tables, protocols, scopes, route types, route
 * operations and nexthop flags (lib/names.h).
 */
#include <stdio.h>
#include <string.h>

#include "lib/fib.h"
#include "lib/names.h"
#include "lib/nh.h"
#include "lib/route.h"

/* /etc/iproute2/rt_tables; 0 (unspec) is left out: to lcfib it means "not given", main. */
static const struct names_entry names_tables[] = {
	{ "main", FIB_TABLE_MAIN },
	{ "local", FIB_TABLE_LOCAL },
	{ "default", 253 }, /* RT_TABLE_DEFAULT */
	{ NULL, 0 },
};

/* /etc/iproute2/rt_protos of iproute2 6.1, the kernel's RTPROT_* values. */
static const struct names_entry names_protos[] = {
	{ "unspec", 0 }, { "redirect", 1 }, { "kernel", 2 },      { "boot", 3 },
	{ "static", 4 }, { "gated", 8 },    { "ra", 9 },          { "mrt", 10 },
	{ "zebra", 11 }, { "bird", 12 },    { "dnrouted", 13 },   { "xorp", 14 },
	{ "ntk", 15 },   { "dhcp", 16 },    { "keepalived", 18 }, { "babel", 42 },
	{ "openr", 99 }, { "bgp", 186 },    { "isis", 187 },      { "ospf", 188 },
	{ "rip", 189 },  { "eigrp", 192 },  { NULL, 0 },
};

/* /etc/iproute2/rt_scopes; "universe" is the kernel's name of 0, read as well. */
static const struct names_entry names_scopes[] = {
	{ "global", 0 }, { "universe", 0 },  { "site", 200 }, { "link", 253 },
	{ "host", 254 }, { "nowhere", 255 }, { NULL, 0 },
};

/* iproute2's rtnl_rtntype names, of the types the FIB keeps (RTN_UNSPEC is none). */
static const struct names_entry names_rtypes[] = {
	{ "unicast", FIB_RT_UNICAST },
	{ "local", FIB_RT_LOCAL },
	{ "broadcast", FIB_RT_BROADCAST },
	{ "anycast", FIB_RT_ANYCAST },
	{ "multicast", FIB_RT_MULTICAST },
	{ "blackhole", FIB_RT_BLACKHOLE },
	{ "unreachable", FIB_RT_UNREACHABLE },
	{ "prohibit", FIB_RT_PROHIBIT },
	{ "throw", FIB_RT_THROW },
	{ NULL, 0 },
};

/* The NLM_F_* that `ip route` sends for each (ip/iproute.c, do_iproute). */
static const struct names_entry names_route_ops[] = {
	{ "add", FIB_F_CREATE | FIB_F_EXCL },
	{ "replace", FIB_F_CREATE | FIB_F_REPLACE },
	{ "append", FIB_F_CREATE | FIB_F_APPEND },
	{ "prepend", FIB_F_CREATE },
	{ "change", FIB_F_REPLACE },
	{ NULL, 0 },
};

/* In the order ip route prints RTNH_F_* (and the YANG module's bit positions). */
static const struct names_entry names_nh_flags[] = {
	{ "dead", NH_F_DEAD },
	{ "linkdown", NH_F_LINKDOWN },
	{ "onlink", NH_F_ONLINK },
	{ NULL, 0 },
};

const struct names names_table = { "a table (main, local, default or 0..4294967295)", UINT32_MAX,
				   names_tables };
const struct names names_proto = { "a protocol name or 0..255", 255, names_protos };
const struct names names_scope = { "a scope (global, site, link, host, nowhere or 0..255)", 255,
				   names_scopes };
const struct names names_rtype = { "a route type", FIB_RT_MAX, names_rtypes };
const struct names names_route_op = { "add, replace, append, prepend or change", UINT32_MAX,
				      names_route_ops };
const struct names names_nh_flag = { "dead, linkdown or onlink", UINT32_MAX, names_nh_flags };

const char *names_name(const struct names *n, uint32_t id)
{
	for (const struct names_entry *e = n->e; e->name; e++)
		if (e->id == id)
			return e->name;
	return NULL;
}

const char *names_format(const struct names *n, uint32_t id, char *buf, size_t size)
{
	const char *name = names_name(n, id);

	if (name)
		return name;
	snprintf(buf, size, "%u", id);
	return buf;
}

/* Whether the name @name is the @len bytes at @s (which may hold a NUL: it is no match). */
static bool names_eq(const char *name, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!name[i] || name[i] != s[i])
			return false;
	return !name[len];
}

/* Each word of a route file's line asks this: a loop, no strlen() or memcmp() calls. */
bool names_lookup(const struct names *n, const char *s, size_t len, uint32_t *id)
{
	for (const struct names_entry *e = n->e; e->name; e++) {
		if (names_eq(e->name, s, len)) {
			*id = e->id;
			return true;
		}
	}
	return false;
}

bool names_number(const char *s, size_t len, uint32_t max, uint32_t *out)
{
	const char *end = s + len;
	unsigned int base = 10;
	uint64_t v = 0;

	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (s == end)
		return false;
	for (; s < end; s++) {
		unsigned int d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned int)(*s - '0');
		else if (base == 16 && ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f'))
			d = (unsigned int)((*s | 0x20) - 'a' + 10);
		else
			return false;
		v = v * base + d;
		if (v > max)
			return false;
	}
	*out = (uint32_t)v;
	return true;
}

bool names_parse(const struct names *n, const char *s, size_t len, uint32_t *id)
{
	return names_lookup(n, s, len, id) || names_number(s, len, n->max, id);
}

bool names_parse_str(const struct names *n, const char *s, uint32_t *id)
{
	return names_parse(n, s, strlen(s), id);
}

bool names_flags_format(const struct names *n, uint32_t flags, char *buf, size_t size)
{
	size_t len = 0;

	if (size)
		buf[0] = '\0';
	for (const struct names_entry *e = n->e; e->name; e++) {
		if ((flags & e->id) && len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "",
						e->name);
	}
	return len > 0;
}
