/* SPDX-License-Identifier: MIT */
/*
 * The one table of the names routes are written with: route tables,
 * protocols, scopes and route types as iproute2 names them
 * (/etc/iproute2/rt_tables, rt_protos, rt_scopes; the kernel's RT_TABLE_*,
 * RTPROT_*, RT_SCOPE_*, RTN_*), the route operations of `ip route` and the
 * nexthop flags. The route-file parser, lcfibd and lcfibctl all read and
 * write names here, and tests/test_names.c checks the YANG module's
 * enumerations against it, so a name one of them writes is one the others
 * read.
 *
 * A number without a name is written as the number, and every name or
 * number written is read back to the same number.
 *
 * Threads: the tables are constant; every function may be called from any
 * thread.
 */
#ifndef LCFIB_NAMES_H
#define LCFIB_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct names_entry {
	const char *name;
	uint32_t id;
};

/*
 * One kind of name. @e ends with a NULL name; of two names of one id the
 * first is the one written, the later an alias that is only read.
 */
struct names {
	const char *what; /* for errors: "a protocol name or 0..255" */
	uint32_t max;     /* the largest number the kind takes */
	const struct names_entry *e;
};

/* RT_TABLE_*: main, local, default. */
extern const struct names names_table;
/* RTPROT_*, as rt_protos names them (17, RTPROT_MROUTED, has no name there). */
extern const struct names names_proto;
/* RT_SCOPE_*: global (alias universe), site, link, host, nowhere. */
extern const struct names names_scope;
/* RTN_* that the FIB keeps (enum fib_rtype), unicast to throw. */
extern const struct names names_rtype;
/* `ip route add|replace|append|prepend|change`: the FIB_F_* flags of each. */
extern const struct names names_route_op;
/* The NH_F_* flags printed with a path, in the order ip route prints them. */
extern const struct names names_nh_flag;

/* How long a number written by names_format() can be, with its NUL. */
#define NAMES_NUMBER_LEN 11

/* The name of @id, or NULL when it has none. */
const char *names_name(const struct names *n, uint32_t id);
/* The name of @id, or @id written in decimal into @buf (NAMES_NUMBER_LEN at least). */
const char *names_format(const struct names *n, uint32_t id, char *buf, size_t size);
/* The id named by @s[0..@len): true, or false when no entry has that name. */
bool names_lookup(const struct names *n, const char *s, size_t len, uint32_t *id);
/* @s[0..@len) as a name or a number (names_number) up to n->max; false when it is neither. */
bool names_parse(const struct names *n, const char *s, size_t len, uint32_t *id);
/* names_parse() of a NUL-terminated string. */
bool names_parse_str(const struct names *n, const char *s, uint32_t *id);
/* A decimal (or 0x hexadecimal) number up to @max, as iproute2's get_u32 takes it. */
bool names_number(const char *s, size_t len, uint32_t max, uint32_t *out);
/*
 * The names of the bits set in @flags, space-separated ("dead linkdown") in the
 * table's order, into @buf; false when none is set. Bits without a name are left out.
 */
bool names_flags_format(const struct names *n, uint32_t flags, char *buf, size_t size);

#endif
