/* SPDX-License-Identifier: MIT */
/*
 * Route files: the iproute2 batch syntax and the plain format line by
 * line, errors at the line and column they name, files applied as one
 * transaction (nothing on a bad line, an exact rollback on an apply-time
 * failure), feeding in pieces, interface names, and the real full table.
 *
 * Set LCFIB_ROUTEFILE_TIMING=1 to print the full table's parse and apply
 * times; nothing is asserted about them.
 *
 * The test thread is the FIB's writer and, between edits, a reader;
 * nothing is asserted inside a read-side critical section.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/fib.h"
#include "lib/ifname.h"
#include "lib/routefile.h"
#include "tests/ref.h"
#include "tests/tdata.h"

#define EXIT_SKIP 77 /* automake's test driver: the test was skipped */

static int rt_no_data;


/* ------------------------------------------------------------- helpers */

static void parse_ok(const char *line, int family, struct routefile_route *r)
{
	struct errbuf err = { "" };
	unsigned int col = 0;
	int ret = routefile_parse_route(line, family, r, &col, &err);

	if (ret)
		print_message("'%s': %s\n", line, err.msg);
	assert_int_equal(ret, 0);
}

/* The line fails at @col with a message that contains @what. */
static void parse_fails(const char *line, unsigned int col, const char *what)
{
	struct routefile_route r;
	struct errbuf err = { "" };
	unsigned int got = 0;
	char prefix[32];

	assert_int_equal(routefile_parse_route(line, AF_UNSPEC, &r, &got, &err), -EINVAL);
	if (got != col || !strstr(err.msg, what))
		print_message("'%s': column %u: %s\n", line, got, err.msg);
	assert_int_equal(got, col);
	snprintf(prefix, sizeof(prefix), "column %u: ", col);
	assert_true(strncmp(err.msg, prefix, strlen(prefix)) == 0);
	assert_non_null(strstr(err.msg, what));
}

static uint32_t ifindex_of(const char *name)
{
	uint32_t ifindex = 0;
	struct errbuf err;

	assert_int_equal(ifname_resolve(name, &ifindex, &err), 0);
	return ifindex;
}

static void assert_gw(const struct nh_path *p, const char *gw)
{
	char buf[INET6_ADDRSTRLEN];

	assert_non_null(inet_ntop(p->gw_family, &p->gw, buf, sizeof(buf)));
	assert_string_equal(buf, gw);
}

static void assert_prefix(const struct fib_rcfg *rc, const char *prefix)
{
	char buf[ADDR_STRLEN];

	assert_string_equal(addr_prefix_format(&rc->dst, buf, sizeof(buf)), prefix);
}

static struct routefile *rf_new(enum routefile_format format, int family, bool skip)
{
	struct routefile_opts o = {
		.format = format, .family = family, .skip_bad_lines = skip, .name = "t.routes"
	};
	struct routefile *rf = routefile_new(&o);

	assert_non_null(rf);
	return rf;
}

static struct routefile *rf_from(const char *text, enum routefile_format format, bool skip)
{
	struct routefile *rf = rf_new(format, AF_UNSPEC, skip);

	assert_int_equal(routefile_feed(rf, text, strlen(text), true), 0);
	return rf;
}

static const char *bad_msg(const struct routefile *rf, uint64_t i)
{
	const char *msg = NULL;

	assert_int_equal(routefile_bad_line(rf, i, NULL, NULL, &msg), 0);
	return msg;
}

/* Applies @text (batch or plain lines); returns the apply's result, message in @err. */
static int apply_text(struct fib *f, const char *text, bool skip, struct errbuf *err)
{
	struct routefile *rf = rf_from(text, ROUTEFILE_AUTO, skip);
	int ret = routefile_apply(rf, f, NULL, NULL, NULL, err);

	routefile_free(rf);
	return ret;
}

static void apply_ok(struct fib *f, const char *text)
{
	struct errbuf err = { "" };
	int ret = apply_text(f, text, false, &err);

	if (ret)
		print_message("%s\n", err.msg);
	assert_int_equal(ret, 0);
}

/* A text dump of every route of the tables the tests use, in order. */
struct dump {
	char *buf;
	size_t len, cap;
	uint32_t table;
};

static int dump_fn(void *ctx, const struct addr_prefix *p, const struct fib_route *r)
{
	struct dump *d = ctx;
	char line[512];
	int n;

	fib_route_format(p, r, line, sizeof(line));
	n = snprintf(NULL, 0, "table %u %s scope %u\n", d->table, line, r->scope);
	if (d->len + (size_t)n + 1 > d->cap) {
		d->cap = 2 * (d->len + (size_t)n + 1);
		d->buf = realloc(d->buf, d->cap);
		if (!d->buf)
			return -ENOMEM;
	}
	d->len += (size_t)snprintf(d->buf + d->len, d->cap - d->len, "table %u %s scope %u\n",
				   d->table, line, r->scope);
	return 0;
}

static const uint32_t dump_tables[] = { FIB_TABLE_MAIN, FIB_TABLE_LOCAL, 253, 100, 200 };

/* Caller frees. */
static char *fib_dump(struct fib *f)
{
	struct dump d = { calloc(1, 1), 0, 1, 0 };
	int ret = 0;

	assert_non_null(d.buf);
	fib_read_lock();
	for (size_t i = 0; i < sizeof(dump_tables) / sizeof(dump_tables[0]) && !ret; i++) {
		for (int fam = 0; fam < 2 && !ret; fam++) {
			const struct fib_table *tb =
				fib_table_get_rcu(f, dump_tables[i], fam ? AF_INET6 : AF_INET);

			d.table = dump_tables[i];
			if (tb)
				ret = fib_walk_rcu(tb, dump_fn, &d);
		}
	}
	fib_read_unlock();
	assert_int_equal(ret, 0);
	return d.buf;
}

static uint64_t fib_routes(struct fib *f)
{
	struct fib_state st;

	fib_get_state(f, &st);
	return st.routes4 + st.routes6;
}

static int setup(void **state)
{
	struct fib *f = fib_new();

	if (!f)
		return -1;
	fib_reader_register();
	*state = f;
	return 0;
}

/* Checks the FIB last, so that a failing check does not leave the thread registered. */
static int teardown(void **state)
{
	struct fib *f = *state;
	struct errbuf err;
	int ret = fib_check(f, &err);

	if (ret)
		print_message("fib_check: %s\n", err.msg);
	fib_reader_unregister();
	fib_destroy(f);
	ifname_reset();
	assert_int_equal(ret, 0);
	return 0;
}

/* ------------------------------------------------------- one line parses */

static void test_routefile_parses_every_keyword_into_rcfg(void **state)
{
	struct routefile_route r;

	(void)state;
	parse_ok("route add 10.0.0.0/8 via 192.0.2.1 dev lo metric 20 table 100 proto bgp "
		 "scope link onlink",
		 AF_UNSPEC, &r);
	assert_int_equal(r.op, ROUTEFILE_ADD);
	assert_prefix(&r.rc, "10.0.0.0/8");
	assert_int_equal(r.rc.flags, FIB_F_CREATE | FIB_F_EXCL);
	assert_int_equal(r.rc.type, FIB_RT_UNICAST);
	assert_int_equal(r.rc.metric, 20);
	assert_int_equal(r.rc.table, 100);
	assert_int_equal(r.rc.proto, 186);
	assert_int_equal(r.rc.scope, 253);
	assert_int_equal(r.rc.n_paths, 1);
	assert_ptr_equal(r.rc.paths, r.paths);
	assert_gw(&r.paths[0], "192.0.2.1");
	assert_int_equal(r.paths[0].ifindex, ifindex_of("lo"));
	assert_int_equal(r.paths[0].flags, NH_F_ONLINK);
	assert_int_equal(r.paths[0].weight, 1);

	/* Synonyms, a leading "ip" and family, 'to', table and scope names, numbers. */
	parse_ok("ip -4 route replace to unicast 10.1.0.0/16 oif rf-nowhere0 preference 7 "
		 "table main proto 42 scope host",
		 AF_UNSPEC, &r);
	assert_int_equal(r.rc.flags, FIB_F_CREATE | FIB_F_REPLACE);
	assert_prefix(&r.rc, "10.1.0.0/16");
	assert_int_equal(r.rc.metric, 7);
	assert_int_equal(r.rc.table, FIB_TABLE_MAIN);
	assert_int_equal(r.rc.proto, 42);
	assert_int_equal(r.rc.scope, 254);
	assert_int_equal(r.paths[0].gw_family, AF_UNSPEC);
	assert_true(ifname_is_virtual(r.paths[0].ifindex));
	parse_ok("append 10.2.0.0/16 dev lo priority 0x10 table local scope 200 proto 0", AF_UNSPEC,
		 &r);
	assert_int_equal(r.rc.flags, FIB_F_CREATE | FIB_F_APPEND);
	assert_int_equal(r.rc.metric, 16);
	assert_int_equal(r.rc.table, FIB_TABLE_LOCAL);
	assert_int_equal(r.rc.scope, 200);
	assert_int_equal(r.rc.proto, 0);
	parse_ok("route prepend 10.3.0.0/16 via 192.0.2.1 table default scope site", AF_INET, &r);
	assert_int_equal(r.rc.flags, FIB_F_CREATE);
	assert_int_equal(r.rc.table, 253);
	assert_int_equal(r.rc.scope, 200);
	assert_int_equal(r.rc.proto, ROUTEFILE_PROTO_BOOT); /* none named */
	parse_ok("route change 10.3.0.0/16 via 192.0.2.1 scope global", AF_UNSPEC, &r);
	assert_int_equal(r.rc.flags, FIB_F_REPLACE);
	assert_int_equal(r.rc.scope, 0);
	parse_ok("route add 10.4.0.0/16 nhid 7", AF_UNSPEC, &r);
	assert_int_equal(r.rc.nh_id, 7);
	assert_int_equal(r.rc.n_paths, 0);
}

static void test_routefile_protocol_names_are_iproute2s(void **state)
{
	static const struct {
		const char *name;
		uint8_t value;
	} protos[] = {
		{ "redirect", 1 }, { "kernel", 2 },      { "boot", 3 },   { "static", 4 },
		{ "gated", 8 },    { "ra", 9 },          { "mrt", 10 },   { "zebra", 11 },
		{ "bird", 12 },    { "dnrouted", 13 },   { "xorp", 14 },  { "ntk", 15 },
		{ "dhcp", 16 },    { "keepalived", 18 }, { "babel", 42 }, { "openr", 99 },
		{ "bgp", 186 },    { "isis", 187 },      { "ospf", 188 }, { "rip", 189 },
		{ "eigrp", 192 },  { "255", 255 },
	};
	char line[128];

	(void)state;
	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++) {
		struct routefile_route r;

		snprintf(line, sizeof(line), "route add 10.0.0.0/8 dev lo proto %s",
			 protos[i].name);
		parse_ok(line, AF_UNSPEC, &r);
		assert_int_equal(r.rc.proto, protos[i].value);
	}
	parse_fails("route add 10.0.0.0/8 dev lo proto 256", 35,
		    "expected a protocol name or 0..255 after 'proto', got '256'");
	parse_fails("route add 10.0.0.0/8 dev lo proto bgpd", 35, "got 'bgpd'");
}

static void test_routefile_commands_set_netlink_flags_and_del_matches_loosely(void **state)
{
	static const struct {
		const char *cmd;
		unsigned int flags;
		enum routefile_op op;
	} cmds[] = {
		{ "add", FIB_F_CREATE | FIB_F_EXCL, ROUTEFILE_ADD },
		{ "replace", FIB_F_CREATE | FIB_F_REPLACE, ROUTEFILE_ADD },
		{ "append", FIB_F_CREATE | FIB_F_APPEND, ROUTEFILE_ADD },
		{ "prepend", FIB_F_CREATE, ROUTEFILE_ADD },
		{ "change", FIB_F_REPLACE, ROUTEFILE_ADD },
		{ "del", 0, ROUTEFILE_DEL },
		{ "delete", 0, ROUTEFILE_DEL },
	};
	struct routefile_route r;
	char line[128];

	(void)state;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		snprintf(line, sizeof(line), "route %s 10.0.0.0/8 via 192.0.2.1", cmds[i].cmd);
		parse_ok(line, AF_UNSPEC, &r);
		assert_int_equal(r.op, cmds[i].op);
		assert_int_equal(r.rc.flags, cmds[i].flags);
	}
	/* A delete names only what it matches: zero is "any". */
	parse_ok("route del 10.0.0.0/8", AF_UNSPEC, &r);
	assert_int_equal(r.rc.type, 0);
	assert_int_equal(r.rc.proto, 0);
	assert_int_equal(r.rc.n_paths, 0);
	parse_ok("del blackhole 10.0.0.0/8 metric 5", AF_UNSPEC, &r);
	assert_int_equal(r.rc.type, FIB_RT_BLACKHOLE);
	assert_int_equal(r.rc.metric, 5);
}

static void test_routefile_multipath_keeps_weights_devices_and_flags(void **state)
{
	struct routefile_route r;

	(void)state;
	parse_ok("route add 10.0.0.0/8 metric 5 nexthop via 192.0.2.1 weight 3 "
		 "nexthop via 192.0.2.2 dev lo onlink nexthop dev rf-nowhere1 weight 256",
		 AF_UNSPEC, &r);
	assert_int_equal(r.rc.n_paths, 3);
	assert_int_equal(r.rc.metric, 5);
	assert_gw(&r.paths[0], "192.0.2.1");
	assert_int_equal(r.paths[0].weight, 3);
	assert_int_equal(r.paths[0].ifindex, 0);
	assert_int_equal(r.paths[0].flags, 0);
	assert_gw(&r.paths[1], "192.0.2.2");
	assert_int_equal(r.paths[1].weight, 1);
	assert_int_equal(r.paths[1].ifindex, ifindex_of("lo"));
	assert_int_equal(r.paths[1].flags, NH_F_ONLINK);
	assert_int_equal(r.paths[2].gw_family, AF_UNSPEC);
	assert_int_equal(r.paths[2].ifindex, ifindex_of("rf-nowhere1"));
	assert_int_equal(r.paths[2].weight, 256);
	/* Route attributes may follow the nexthops. */
	parse_ok("route add 2001:db8::/32 nexthop via fe80::1 dev lo nexthop via fe80::2 dev lo "
		 "table 100",
		 AF_UNSPEC, &r);
	assert_int_equal(r.rc.n_paths, 2);
	assert_int_equal(r.rc.table, 100);
	assert_gw(&r.paths[1], "fe80::2");
}

static void test_routefile_types_take_their_place_before_the_prefix(void **state)
{
	static const char *const types[] = { "unicast",     "local",     "broadcast",
					     "anycast",     "multicast", "blackhole",
					     "unreachable", "prohibit",  "throw" };
	struct routefile_route r;
	char line[128];

	(void)state;
	for (unsigned int i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		bool error_type = i + 1 >= FIB_RT_BLACKHOLE;

		snprintf(line, sizeof(line), "route add %s 10.0.0.0/8%s", types[i],
			 error_type ? "" : " dev lo");
		parse_ok(line, AF_UNSPEC, &r);
		assert_int_equal(r.rc.type, i + 1);
		assert_int_equal(r.rc.n_paths, error_type ? 0 : 1);
	}
	parse_ok("route add to prohibit 10.0.0.0/8", AF_UNSPEC, &r);
	assert_int_equal(r.rc.type, FIB_RT_PROHIBIT);
	parse_fails("route add blackhole 10.0.0.0/8 via 192.0.2.1", 11,
		    "a blackhole route takes no 'via', 'dev' or nexthop");
	parse_fails("route add 10.0.0.0/8", 21,
		    "expected 'via', 'dev', 'nexthop' or 'nhid' for a unicast route after "
		    "'10.0.0.0/8', got end of line");
}

static void test_routefile_default_and_host_prefixes(void **state)
{
	struct routefile_route r;

	(void)state;
	parse_ok("route add default via 192.0.2.1", AF_UNSPEC, &r);
	assert_prefix(&r.rc, "0.0.0.0/0");
	/* A default takes its family from -6, the family given, or its gateway. */
	parse_ok("route add default via 2001:db8::1", AF_UNSPEC, &r);
	assert_prefix(&r.rc, "::/0");
	parse_ok("-6 route add default dev lo", AF_UNSPEC, &r);
	assert_prefix(&r.rc, "::/0");
	parse_ok("route add default dev lo", AF_INET6, &r);
	assert_prefix(&r.rc, "::/0");
	parse_ok("route add default dev lo", AF_UNSPEC, &r);
	assert_prefix(&r.rc, "0.0.0.0/0");
	parse_ok("route add 192.0.2.7 via 192.0.2.1", AF_UNSPEC, &r);
	assert_prefix(&r.rc, "192.0.2.7/32");
	parse_ok("route add 2001:db8::7 dev lo", AF_UNSPEC, &r);
	assert_prefix(&r.rc, "2001:db8::7/128");
	parse_ok("route add 0.0.0.0/0 via 192.0.2.1", AF_UNSPEC, &r);
	assert_prefix(&r.rc, "0.0.0.0/0");
	assert_int_equal(
		routefile_parse_route("route add 10.0.0.0/8 dev lo", AF_INET6, &r, NULL, NULL),
		-EINVAL);
}

static void test_routefile_rfc5549_gateways_need_via_inet6(void **state)
{
	struct routefile_route r;

	(void)state;
	parse_ok("route add 10.0.0.0/8 via inet6 fe80::1 dev lo", AF_UNSPEC, &r);
	assert_int_equal(r.paths[0].gw_family, AF_INET6);
	assert_gw(&r.paths[0], "fe80::1");
	parse_ok("route add 10.0.0.0/8 nexthop via inet6 fe80::1 dev lo nexthop via inet "
		 "192.0.2.1",
		 AF_UNSPEC, &r);
	assert_int_equal(r.paths[0].gw_family, AF_INET6);
	assert_int_equal(r.paths[1].gw_family, AF_INET);
	parse_fails("route add 10.0.0.0/8 via fe80::1 dev lo", 26,
		    "an IPv6 gateway for an IPv4 route needs 'via inet6'");
	parse_fails("route add 2001:db8::/32 via 192.0.2.1", 29,
		    "an IPv4 gateway for an IPv6 route");
	parse_fails("route add 2001:db8::/32 via inet 192.0.2.1", 34,
		    "an IPv4 gateway for an IPv6 route");
	parse_fails("route add 10.0.0.0/8 via inet 2001:db8::1", 31,
		    "expected an IPv4 gateway after 'inet', got '2001:db8::1'");
}

/* lcfibd(8): a comment starts only at a word's beginning, never inside one. */
static void test_routefile_hash_inside_a_word_is_part_of_it(void **state)
{
	struct routefile_route r;
	char name[IF_NAMESIZE];

	(void)state;
	parse_ok("route add 10.51.0.0/16 via 192.0.2.1 dev eth#0", AF_UNSPEC, &r);
	assert_string_equal(ifname_name(r.paths[0].ifindex, name), "eth#0");
	parse_ok("route add 10.52.0.0/16 via 192.0.2.1 dev eth#0 #a comment", AF_UNSPEC, &r);
	assert_string_equal(ifname_name(r.paths[0].ifindex, name), "eth#0");
	parse_ok("route add 10.53.0.0/16 via 192.0.2.1 dev lo\t#comment", AF_UNSPEC, &r);
	assert_int_equal(r.paths[0].ifindex, ifindex_of("lo"));
}

static void test_routefile_errors_name_the_column_and_what_was_expected(void **state)
{
	struct routefile_route r;
	struct errbuf err;

	(void)state;
	parse_fails("route add xyz via 192.0.2.1", 11, "expected a prefix after 'add', got 'xyz'");
	parse_fails("route add 10.0.0.1/8 via 192.0.2.1", 11,
		    "'10.0.0.1/8' has host bits set past /8 (did you mean 10.0.0.0/8?)");
	parse_fails("route add 10.0.0.0/33 via 192.0.2.1", 20,
		    "expected a prefix length 0..32 after '/' in '10.0.0.0/33'");
	parse_fails("route add 10.0.0.0/8 via 192.0.2.1 foo 1", 36,
		    "expected a route attribute (via, dev, metric, table, proto, scope, onlink, "
		    "nexthop, nhid) after '192.0.2.1', got 'foo'");
	parse_fails("route add 10.0.0.0/8 via 192.0.2.1 mtu 1400", 36, "'mtu' is not supported");
	parse_fails("route add 10.0.0.0/8 src 192.0.2.9 via 192.0.2.1", 22,
		    "'src' is not supported");
	/* Before the prefix, and after a type: named as such, not as a bad prefix. */
	parse_fails("route add mtu 1400 10.0.0.0/8 via 192.0.2.1", 11, "'mtu' is not supported");
	parse_fails("route add blackhole realm 5 10.0.0.0/8", 21, "'realm' is not supported");
	parse_fails("route add 10.0.0.0/8 blackhole", 22, "after '10.0.0.0/8', got 'blackhole'");
	/* Words end at blanks only: a control byte is part of one, at any offset. */
	parse_fails("route add 10.0.0.0/8 via 192.0.2.1 abcdefg\001hijklmnop\tmetric 5", 36,
		    "got 'abcdefg\001hijklmnop'");
	parse_fails("route add 10.0.0.0/8 via 192.0.2.1 abcdefgh", 36, "got 'abcdefgh'");
	parse_fails("route add 10.0.0.0/8 via 192.0.2.1 abcdefghijklmno\vmetric 5", 36,
		    "got 'abcdefghijklmno'");
	parse_fails("route add 10.0.0.0/8 via 192.0.2.1 metric", 42,
		    "expected a metric 0..4294967295 after 'metric', got end of line");
	parse_fails("route add 10.0.0.0/8 via 192.0.2.1 metric 4294967296", 43, "got '4294967296'");
	parse_fails("route add 10.0.0.0/8 via 192.0.2.1 metric root:x:0:0:root:/root:/usr/bin/bash-xyz", 43,
		    "got 'root:x:0:0:root:/root:/usr/bi...'");
	parse_fails("route add 10.0.0.0/8 via", 25,
		    "expected a gateway address after 'via', got end of line");
	parse_fails("route add 10.0.0.0/8 via 192.0.2.256", 26,
		    "expected a gateway address after 'via', got '192.0.2.256'");
	parse_fails("route add 10.0.0.0/8 nexthop via 192.0.2.1 weight 0", 51,
		    "expected a weight 1..256 after 'weight', got '0'");
	parse_fails("route add 10.0.0.0/8 nexthop via 192.0.2.1 weight 257", 51, "got '257'");
	parse_fails("route add 10.0.0.0/8 via 192.0.2.1 weight 2", 36,
		    "'weight' belongs to a 'nexthop'");
	parse_fails("route add 10.0.0.0/8 via 192.0.2.1 nexthop via 192.0.2.2", 36,
		    "'nexthop' cannot follow the route's own 'via' or 'dev'");
	parse_fails("route add 10.0.0.0/8 nexthop weight 2 nexthop via 192.0.2.1", 22,
		    "expected 'via' or 'dev' in this 'nexthop'");
	parse_fails("route add 10.0.0.0/8 via 192.0.2.1 metric 1 metric 2", 45,
		    "'metric' is given twice");
	parse_fails("route add 10.0.0.0/8 dev 0123456789abcdef", 26,
		    "expected an interface name of 1 to 15 characters after 'dev'");
	parse_fails("route add 10.0.0.0/8 dev a/b", 26, "'a/b' is not an interface name");
	parse_fails("route add", 10, "expected a prefix after 'add', got end of line");
	parse_fails("route add 2001:db8::/32 nexthop via fe80::1 dev lo nexthop dev lo", 52,
		    "an IPv6 'nexthop' needs 'via' (the kernel refuses device-only nexthops in "
		    "an IPv6 multipath route)");
	parse_fails("route add 2001:db8::/32 nexthop via fe80::1 dev lo nexthop via fe80::1 dev lo "
		    "weight 2",
		    52, "the same 'nexthop' as nexthop 1");
	parse_fails(
		"route flush 10.0.0.0/8", 7,
		"expected a command (add, del, replace, append, prepend, change) after 'route', "
		"got 'flush'");
	parse_fails("ip addr add 10.0.0.1/8 dev lo", 4, "expected 'route' after 'ip', got 'addr'");
	parse_fails("-6 route add 10.0.0.0/8 dev lo", 14,
		    "expected an IPv6 prefix after 'add', got '10.0.0.0/8'");
	parse_fails("route add 10.0.0.0/8 10.1.0.0/16 dev lo", 22, "got '10.1.0.0/16'");
	parse_fails("route add 10.0.0.0/8 to 10.1.0.0/16 dev lo", 25, "a second prefix");
	parse_fails("route add 10.0.0.0/8 nhid 3 via 192.0.2.1", 29,
		    "'via' cannot be combined with 'nhid'");
	/* Tabs count as one column; a word starting with '#' ends the line. */
	parse_fails("route\tadd\txyz", 11, "got 'xyz'");
	parse_fails("route add 10.0.0.0/8 via # 192.0.2.1", 26, "got end of line");
	/* Inside a word '#' is part of it: the gateway is not cut to '192.0.2.1'. */
	parse_fails("route add 10.0.0.0/8 via 192.0.2.1#x", 26,
		    "expected a gateway address after 'via', got '192.0.2.1#x'");

	assert_int_equal(routefile_parse_route("", AF_UNSPEC, &r, NULL, &err), -ENODATA);
	assert_int_equal(routefile_parse_route("  # just a comment", AF_UNSPEC, &r, NULL, &err),
			 -ENODATA);
	assert_int_equal(routefile_parse_route(" \t\r", AF_UNSPEC, &r, NULL, &err), -ENODATA);
}

/* The hand-written dotted-quad parser takes exactly what inet_pton() takes. */
static void test_routefile_ipv4_parser_agrees_with_inet_pton(void **state)
{
	static const char *const addrs[] = {
		"1.2.3.4",   "0.0.0.0",        "255.255.255.255", "256.1.1.1", "1.2.3",
		"1.2.3.4.5", "01.2.3.4",       "1.2.3.04",        "00.1.1.1",  "1..2.3",
		"1.2.3.",    ".1.2.3",         "1234.1.1.1",      "1.2.3.4a",  "a.b.c.d",
		"1.2.3.255", "1.2.3.256",      "10.0.0.0",        "0x1.2.3.4", "1.2.-3.4",
		"::1.2.3.4", "::ffff:1.2.3.4",
	};
	char line[96];

	(void)state;
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		struct routefile_route r;
		struct in6_addr want6;
		struct in_addr want;
		int ok4 = inet_pton(AF_INET, addrs[i], &want) == 1;
		int ok6 = inet_pton(AF_INET6, addrs[i], &want6) == 1;
		int ret;

		snprintf(line, sizeof(line), "route add %s dev lo", addrs[i]);
		ret = routefile_parse_route(line, AF_UNSPEC, &r, NULL, NULL);
		if (ret != (ok4 || ok6 ? 0 : -EINVAL))
			print_message("'%s'\n", addrs[i]);
		assert_int_equal(ret, ok4 || ok6 ? 0 : -EINVAL);
		if (ok4)
			assert_memory_equal(&r.rc.dst.a.v4, &want, sizeof(want));
		else if (ok6)
			assert_memory_equal(&r.rc.dst.a.v6, &want6, sizeof(want6));
	}
}

/* As the kernel gives them to `ip -6 route add`: metric 0 or none is 1024, for adds only. */
static void test_routefile_ipv6_adds_without_a_metric_get_1024(void **state)
{
	struct routefile_route r;
	struct fib *f = *state;
	char *dump;

	parse_ok("route add 2001:db8::/32 via fe80::1 dev lo", AF_UNSPEC, &r);
	assert_int_equal(r.rc.metric, 1024);
	parse_ok("route replace 2001:db8::/32 via fe80::1 dev lo metric 0", AF_UNSPEC, &r);
	assert_int_equal(r.rc.metric, 1024);
	parse_ok("route add blackhole default", AF_INET6, &r);
	assert_int_equal(r.rc.metric, 1024);
	parse_ok("route append 2001:db8::/32 via fe80::1 dev lo metric 7", AF_UNSPEC, &r);
	assert_int_equal(r.rc.metric, 7);
	parse_ok("route del 2001:db8::/32", AF_UNSPEC, &r);
	assert_int_equal(r.rc.metric, 0); /* any */
	parse_ok("route add 10.0.0.0/8 via 192.0.2.1", AF_UNSPEC, &r);
	assert_int_equal(r.rc.metric, 0);
	apply_ok(f, "2001:db8:9::/48 2001:db8::1\n");
	dump = fib_dump(f);
	assert_string_equal(dump, "table 254 2001:db8:9::/48 via 2001:db8::1 proto 3 metric 1024 "
				  "scope 0\n");
	free(dump);
}

static void test_routefile_plain_lines_are_prefix_gateway_dev(void **state)
{
	struct routefile *rf = rf_from("10.0.0.0/8\n"
				       "10.1.0.0/16 192.0.2.1\n"
				       "10.2.0.0/16 192.0.2.1 dev lo\n"
				       "10.3.0.0/16 dev lo # a comment\n"
				       "2001:db8::/32 2001:db8::1\n"
				       "default 192.0.2.1\n"
				       "10.4.0.1/16\n"
				       "10.5.0.0/16 2001:db8::1\n"
				       "10.6.0.0/16 192.0.2.1 eth0\n",
				       ROUTEFILE_PLAIN, false);
	struct fib *f = *state;
	char *dump;

	assert_int_equal(routefile_lines(rf), 9);
	assert_int_equal(routefile_routes(rf), 6);
	assert_int_equal(routefile_bad_lines(rf), 3);
	assert_string_equal(bad_msg(rf, 0), "t.routes:7:1: '10.4.0.1/16' has host bits set past "
					    "/16 (did you mean 10.4.0.0/16?)");
	assert_string_equal(bad_msg(rf, 1), "t.routes:8:13: expected an IPv4 gateway after "
					    "'10.5.0.0/16', got '2001:db8::1'");
	assert_string_equal(bad_msg(rf, 2), "t.routes:9:23: expected 'dev' or end of line after "
					    "'192.0.2.1', got 'eth0'");
	routefile_free(rf);

	apply_ok(f, "10.0.0.0/8\n"
		    "10.1.0.0/16 192.0.2.1\n"
		    "10.3.0.0/16 dev lo\n"
		    "2001:db8::/32 2001:db8::1\n"
		    "default 192.0.2.1\n");
	dump = fib_dump(f);
	/* A bare prefix is a blackhole route; every route is proto boot. */
	assert_non_null(strstr(dump, "table 254 blackhole 10.0.0.0/8 proto 3 metric 0"));
	assert_non_null(strstr(dump, "table 254 10.1.0.0/16 via 192.0.2.1 proto 3 metric 0"));
	assert_non_null(strstr(dump, "table 254 0.0.0.0/0 via 192.0.2.1 proto 3"));
	assert_non_null(strstr(dump, "table 254 2001:db8::/32 via 2001:db8::1 proto 3"));
	free(dump);
}

static void test_routefile_auto_format_decides_per_line(void **state)
{
	struct routefile *rf = rf_from("10.0.0.0/8 192.0.2.1\n"
				       "route add 10.1.0.0/16 via 192.0.2.1\n"
				       "add 10.2.0.0/16 via 192.0.2.1\n"
				       "ip route add 10.3.0.0/16 via 192.0.2.1\n"
				       "-4 route del 10.0.0.0/8\n"
				       "2001:db8::/32 dev lo\n"
				       "delete 10.2.0.0/16\n",
				       ROUTEFILE_AUTO, false);
	struct fib *f = *state;
	struct errbuf err;

	assert_int_equal(routefile_bad_lines(rf), 0);
	assert_int_equal(routefile_routes(rf), 7);
	assert_int_equal(routefile_apply(rf, f, NULL, NULL, NULL, &err), 0);
	assert_int_equal(fib_routes(f), 3);
	routefile_free(rf);

	/* The same batch lines are errors in the plain format, and the other way round. */
	rf = rf_from("route add 10.1.0.0/16 via 192.0.2.1\n", ROUTEFILE_PLAIN, false);
	assert_string_equal(bad_msg(rf, 0), "t.routes:1:1: expected a prefix, got 'route'");
	routefile_free(rf);
	rf = rf_from("10.0.0.0/8 192.0.2.1\n", ROUTEFILE_BATCH, false);
	assert_string_equal(bad_msg(rf, 0), "t.routes:1:1: expected a command (add, del, replace, "
					    "append, prepend, change), got '10.0.0.0/8'");
	routefile_free(rf);
}

/* ------------------------------------------------------------ the file */

static void test_routefile_one_bad_line_applies_nothing(void **state)
{
	struct fib *f = *state;
	struct routefile_result res = { .applied = 99, .skipped = 99 };
	struct routefile *rf;
	struct errbuf err;
	char *before, *after;

	apply_ok(f, "route add 10.0.0.0/8 via 192.0.2.1\n");
	before = fib_dump(f);
	rf = rf_from("route add 10.1.0.0/16 via 192.0.2.1\n"
		     "route add 10.2.0.1/16 via 192.0.2.1\n"
		     "route add 10.3.0.0/16 via 192.0.2.1\n",
		     ROUTEFILE_AUTO, false);
	assert_int_equal(routefile_bad_lines(rf), 1);
	assert_int_equal(routefile_apply(rf, f, NULL, NULL, &res, &err), -EINVAL);
	assert_string_equal(err.msg, "t.routes:2:11: '10.2.0.1/16' has host bits set past /16 "
				     "(did you mean 10.2.0.0/16?)");
	assert_int_equal(res.applied, 0);
	assert_int_equal(fib_routes(f), 1);
	after = fib_dump(f);
	assert_string_equal(before, after);
	free(after);
	routefile_free(rf);

	/* More than one: the first, and how many more. */
	rf = rf_from("route add 10.1.0.0/16 via 192.0.2.1\n"
		     "route add 10.2.0.0/16 via 192.0.2.1 mtu 1400\n"
		     "route add 10.3.0.0/16 via\n"
		     "route add 10.4.0.0/16 via 192.0.2.1 metric x\n",
		     ROUTEFILE_AUTO, false);
	assert_int_equal(routefile_apply(rf, f, NULL, NULL, NULL, &err), -EINVAL);
	assert_string_equal(err.msg, "t.routes:2:37: 'mtu' is not supported (and 2 more errors)");
	routefile_free(rf);
	after = fib_dump(f);
	assert_string_equal(before, after);
	free(after);
	free(before);
}

static void test_routefile_skip_bad_lines_applies_the_rest_and_reports_each(void **state)
{
	static const char text[] = "route add 10.0.0.0/8 via 192.0.2.1\n"
				   "route add 10.0.0.1/8 via 192.0.2.1\n"
				   "10.1.0.0/16\n"
				   "route add 10.0.0.0/8 via 192.0.2.2\n"
				   "route del 10.9.0.0/16\n"
				   "route add 10.2.0.0/16 dev lo mtu 1400\n"
				   "10.3.0.0/16 192.0.2.1\n";
	struct fib *f = *state;
	struct routefile_result res;
	struct routefile *rf = rf_from(text, ROUTEFILE_AUTO, true);
	struct errbuf err;
	uint64_t line;
	unsigned int col;
	const char *msg;

	assert_int_equal(routefile_bad_lines(rf), 2);
	assert_int_equal(routefile_apply(rf, f, NULL, NULL, &res, &err), 0);
	assert_int_equal(res.applied, 3);
	assert_int_equal(res.skipped, 2);
	assert_int_equal(fib_routes(f), 3);
	assert_int_equal(routefile_bad_lines(rf), 4);
	/* Parse errors first, then apply errors; each in file order. */
	assert_int_equal(routefile_bad_line(rf, 0, &line, &col, &msg), 0);
	assert_int_equal(line, 2);
	assert_int_equal(col, 11);
	assert_non_null(strstr(msg, "t.routes:2:11: '10.0.0.1/8' has host bits"));
	assert_int_equal(routefile_bad_line(rf, 1, &line, &col, &msg), 0);
	assert_int_equal(line, 6);
	assert_string_equal(msg, "t.routes:6:30: 'mtu' is not supported");
	assert_int_equal(routefile_bad_line(rf, 2, &line, &col, &msg), 0);
	assert_int_equal(line, 4);
	assert_int_equal(col, 11); /* an apply error: the prefix's column */
	assert_string_equal(msg, "t.routes:4:11: 10.0.0.0/8 table 254 metric 0: route exists");
	assert_int_equal(routefile_bad_line(rf, 3, &line, &col, &msg), 0);
	assert_int_equal(line, 5);
	assert_string_equal(msg, "t.routes:5:11: 10.9.0.0/16 table 254 any metric: no such route");
	assert_int_equal(routefile_bad_line(rf, 4, &line, &col, &msg), -ENOENT);
	/* One apply per file. */
	assert_int_equal(routefile_apply(rf, f, NULL, NULL, &res, &err), -EALREADY);
	routefile_free(rf);
	/* Without skipping, the same file applies nothing. */
	rf = rf_from(text, ROUTEFILE_AUTO, false);
	assert_int_equal(routefile_apply(rf, f, NULL, NULL, &res, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "(and 1 more errors)"));
	assert_int_equal(fib_routes(f), 3);
	routefile_free(rf);
}

/* Routes of every kind the transaction touches: several per prefix, tables, both families. */
static const char rb_setup[] =
	"route add 10.0.0.0/8 via 192.0.2.1 metric 10\n"
	"route append 10.0.0.0/8 via 192.0.2.2 metric 10\n"
	"route append 10.0.0.0/8 via 192.0.2.3 metric 10\n"
	"route add 10.0.0.0/8 via 192.0.2.9 metric 20\n"
	"route add blackhole 10.1.0.0/16\n"
	"route add 10.2.0.0/16 nexthop via 192.0.2.1 weight 2 nexthop via 192.0.2.2\n"
	"route add 2001:db8::/32 via 2001:db8:ffff::1 dev lo table 100\n"
	"route add unreachable 172.16.0.0/12 table 100 proto bgp\n";

static const char rb_edits[] =
	"route replace 10.0.0.0/8 via 192.0.2.5 metric 10\n"
	"route prepend 10.0.0.0/8 via 192.0.2.6 metric 10\n"
	"route del 10.0.0.0/8 via 192.0.2.2 metric 10\n"
	"route append 10.0.0.0/8 via 192.0.2.7 metric 20\n"
	"route change 10.0.0.0/8 via 192.0.2.8 metric 20\n"
	"route del 10.1.0.0/16\n"
	"route add 10.1.0.0/16 via 192.0.2.1\n"
	"route del 2001:db8::/32 table 100\n"
	"route add 2001:db8::/32 via 2001:db8:ffff::2 table 100\n"
	"route add 10.3.0.0/16 via 192.0.2.1 table 200\n"
	"route replace 10.2.0.0/16 nexthop via 192.0.2.3 nexthop via 192.0.2.4 weight 5\n"
	"route replace 10.2.0.0/16 nexthop via 192.0.2.3 nexthop via 192.0.2.4 weight 5\n"
	"route delete 172.16.0.0/12 table 100\n"
	"route add 10.4.0.0/16 via inet6 fe80::1 dev lo\n";

/* The edits, then @last, which fails to apply: the FIB must be exactly as before. */
static void rollback_case(struct fib *f, const char *last, int expect, const char *msg)
{
	size_t len = strlen(rb_edits) + strlen(last) + 1;
	char *text = malloc(len), *before, *after;
	struct fib_state st0, st1;
	struct routefile_result res;
	struct errbuf err;
	struct routefile *rf;

	assert_non_null(text);
	snprintf(text, len, "%s%s", rb_edits, last);
	apply_ok(f, rb_setup);
	before = fib_dump(f);
	fib_get_state(f, &st0);
	rf = rf_from(text, ROUTEFILE_AUTO, false);
	assert_int_equal(routefile_apply(rf, f, NULL, NULL, &res, &err), expect);
	assert_string_equal(err.msg, msg);
	assert_int_equal(res.applied, 0);
	after = fib_dump(f);
	assert_string_equal(before, after);
	fib_get_state(f, &st1);
	assert_int_equal(st0.routes4, st1.routes4);
	assert_int_equal(st0.routes6, st1.routes6);
	assert_int_equal(st0.nh_anonymous, st1.nh_anonymous);
	assert_int_equal(fib_check(f, &err), 0);
	routefile_free(rf);
	free(after);
	free(before);
	free(text);
}

static void test_routefile_add_of_existing_route_rolls_back_exactly(void **state)
{
	rollback_case(*state, "route add 10.0.0.0/8 via 192.0.2.1 metric 10\n", -EEXIST,
		      "t.routes:15:11: 10.0.0.0/8 table 254 metric 10: route exists");
}

static void test_routefile_del_of_missing_route_rolls_back_exactly(void **state)
{
	rollback_case(*state, "route del 10.0.0.0/8 via 192.0.2.2 metric 10\n", -ESRCH,
		      "t.routes:15:11: 10.0.0.0/8 table 254 metric 10: no such route");
}

/*
 * IPv6 gateway routes of one prefix and metric are one multipath route,
 * as `ip -6 route` shows the kernel's siblings; a file that fails puts
 * them back as they were, paths and order.
 */
static void test_routefile_ipv6_siblings_merge_and_roll_back(void **state)
{
	static const char setup6[] = "route add 2001:db8:5::/48 via fe80::1 dev lo metric 1024\n"
				     "route append 2001:db8:5::/48 via fe80::2 dev lo metric 1024\n"
				     "route add 2001:db8:5::/48 dev lo metric 2048\n";
	static const char edits6[] =
		"route append 2001:db8:5::/48 nexthop via fe80::3 dev lo weight 4 nexthop via "
		"fe80::4 dev lo metric 1024\n"
		"route del 2001:db8:5::/48 via fe80::1 metric 1024\n"
		"route prepend 2001:db8:5::/48 via fe80::5 dev lo metric 1024\n";
	struct fib *f = *state;
	struct errbuf err;
	char *before, *after;
	char text[1024];

	apply_ok(f, setup6);
	before = fib_dump(f);
	assert_non_null(strstr(before,
			       "table 254 2001:db8:5::/48 nexthop via fe80::1 dev 1 weight 1 "
			       "nexthop via fe80::2 dev 1 weight 1 proto 3 metric 1024 "
			       "scope 0\ntable 254 2001:db8:5::/48 dev 1 proto 3 metric 2048"));
	snprintf(text, sizeof(text),
		 "%sroute append 2001:db8:5::/48 via fe80::4 dev lo metric 1024\n", edits6);
	assert_int_equal(apply_text(f, text, false, &err), -EEXIST);
	assert_string_equal(err.msg,
			    "t.routes:4:14: 2001:db8:5::/48 table 254 metric 1024: a route of this "
			    "metric has this nexthop already");
	after = fib_dump(f);
	assert_string_equal(before, after);
	free(after);
	apply_ok(f, edits6);
	after = fib_dump(f);
	assert_non_null(strstr(after,
			       "table 254 2001:db8:5::/48 nexthop via fe80::2 dev 1 weight 1 "
			       "nexthop via fe80::3 dev 1 weight 4 nexthop via fe80::4 dev 1 "
			       "weight 1 nexthop via fe80::5 dev 1 weight 1 proto 3 metric 1024 "
			       "scope 0\n"));
	assert_int_equal(fib_check(f, &err), 0);
	free(after);
	free(before);
}

/* What the edits do when nothing fails: so the rollback tests above undo real work. */
static void test_routefile_edits_of_the_rollback_tests_change_the_fib(void **state)
{
	struct fib *f = *state;
	char *before, *after;

	apply_ok(f, rb_setup);
	before = fib_dump(f);
	apply_ok(f, rb_edits);
	after = fib_dump(f);
	assert_string_not_equal(before, after);
	assert_non_null(
		strstr(after, "table 254 10.0.0.0/8 via 192.0.2.6 proto 3 metric 10 scope "
			      "0\ntable 254 10.0.0.0/8 via 192.0.2.5 proto 3 metric 10 scope "
			      "0\ntable 254 10.0.0.0/8 via 192.0.2.3 proto 3 metric 10 scope "
			      "0\ntable 254 10.0.0.0/8 via 192.0.2.8 proto 3 metric 20 scope "
			      "0\ntable 254 10.0.0.0/8 via 192.0.2.7 proto 3 metric 20 scope 0\n"));
	assert_non_null(strstr(after, "table 200 10.3.0.0/16 via 192.0.2.1"));
	assert_null(strstr(after, "172.16.0.0/12"));
	assert_non_null(strstr(after, "10.2.0.0/16 nexthop via 192.0.2.3 weight 1 nexthop via "
				      "192.0.2.4 weight 5"));
	free(after);
	free(before);
}

struct progress_log {
	char text[4096];
	uint64_t calls;
	const struct routefile *rf; /* if set: its routefile_mem() as the rebalancing starts */
	size_t mem_rebalancing;
};

static void progress_fn(void *ctx, const char *phase, uint64_t done, uint64_t total)
{
	struct progress_log *p = ctx;
	size_t n = strlen(p->text);

	if (p->rf && !strcmp(phase, "rebalancing") && !done)
		p->mem_rebalancing = routefile_mem(p->rf);
	p->calls++;
	snprintf(p->text + n, sizeof(p->text) - n, "%s %" PRIu64 "/%" PRIu64 "\n", phase, done,
		 total);
}

/*
 * A big file: bulk mode, progress, and a rollback of 70000 adds. Either
 * way the ops (32 bytes each) and the journal are let go before the
 * rebuild, the load's peak; the counts and messages stay.
 */
static void test_routefile_large_load_rolls_back_in_bulk_mode_with_progress(void **state)
{
	struct fib *f = *state;
	struct progress_log log = { .text = "" };
	size_t cap = 80000 * 40, len = 0;
	char *text = malloc(cap), *before, *after;
	struct routefile *rf;
	struct errbuf err;
	int ret;

	assert_non_null(text);
	apply_ok(f, "route add 10.200.0.0/16 via 192.0.2.1\n");
	before = fib_dump(f);
	for (unsigned int i = 0; i < 70000; i++)
		len += (size_t)snprintf(text + len, cap - len, "%u.%u.%u.0/24 192.0.2.%u\n",
					11 + (i >> 16), i >> 8 & 0xff, i & 0xff, 1 + i % 3);
	len += (size_t)snprintf(text + len, cap - len, "route add 10.200.0.0/16 via 192.0.2.1\n");
	rf = rf_new(ROUTEFILE_AUTO, AF_UNSPEC, false);
	assert_int_equal(routefile_feed(rf, text, len, true), 0);
	assert_int_equal(routefile_routes(rf), 70001);
	assert_true(routefile_mem(rf) >= 70001 * 32);
	log.rf = rf;
	assert_int_equal(routefile_apply(rf, f, progress_fn, &log, NULL, &err), -EEXIST);
	assert_true(log.mem_rebalancing < 70001 * 4);
	assert_int_equal(routefile_routes(rf), 70001);
	assert_string_equal(err.msg,
			    "t.routes:70001:11: 10.200.0.0/16 table 254 metric 0: route exists");
	assert_string_equal(log.text, "applying 0/70001\n"
				      "applying 65536/70001\n"
				      "rolling-back 0/70000\n"
				      "rolling-back 65536/70000\n"
				      "rolling-back 70000/70000\n"
				      "rebalancing 0/1\n"
				      "rebalancing 1/1\n");
	after = fib_dump(f);
	assert_string_equal(before, after);
	ret = fib_check(f, &err);
	if (ret)
		print_message("%s\n", err.msg);
	assert_int_equal(ret, 0);
	routefile_free(rf);
	free(after);

	/* Without the failing line it all goes in. */
	log.text[0] = '\0';
	rf = rf_new(ROUTEFILE_AUTO, AF_UNSPEC, false);
	assert_int_equal(routefile_feed(rf, text,
					len - strlen("route add 10.200.0.0/16 via "
						     "192.0.2.1\n"),
					true),
			 0);
	log.rf = rf;
	log.mem_rebalancing = SIZE_MAX;
	assert_int_equal(routefile_apply(rf, f, progress_fn, &log, NULL, &err), 0);
	assert_true(log.mem_rebalancing < 70000 * 4);
	assert_int_equal(routefile_routes(rf), 70000);
	assert_string_equal(log.text, "applying 0/70000\n"
				      "applying 65536/70000\n"
				      "applying 70000/70000\n"
				      "rebalancing 0/1\n"
				      "rebalancing 1/1\n");
	assert_int_equal(fib_routes(f), 70001);
	routefile_free(rf);
	free(before);
	free(text);
}

static void test_routefile_crlf_comments_and_missing_final_newline(void **state)
{
	static const char text[] = "route add 10.0.0.0/8 via 192.0.2.1\r\n"
				   "10.1.0.0/16\r\n"
				   "# a comment\r\n"
				   "\r\n"
				   "   \t\r\n"
				   "route add 10.2.0.0/16 via 192.0.2.1 # why\r\n"
				   "10.3.0.0/16 192.0.2.1";
	struct fib *f = *state;
	struct routefile *rf = rf_from(text, ROUTEFILE_AUTO, false);
	struct errbuf err;

	assert_int_equal(routefile_lines(rf), 7);
	assert_int_equal(routefile_routes(rf), 4);
	assert_int_equal(routefile_bad_lines(rf), 0);
	assert_int_equal(routefile_apply(rf, f, NULL, NULL, NULL, &err), 0);
	assert_int_equal(fib_routes(f), 4);
	routefile_free(rf);

	/* Not the last piece: the unterminated line waits. */
	rf = rf_new(ROUTEFILE_AUTO, AF_UNSPEC, false);
	assert_int_equal(routefile_feed(rf, text, sizeof(text) - 1, false), 0);
	assert_int_equal(routefile_routes(rf), 3);
	assert_int_equal(routefile_feed(rf, "", 0, true), 0);
	assert_int_equal(routefile_routes(rf), 4);
	assert_int_equal(routefile_lines(rf), 7);
	routefile_free(rf);
}

/* Everything a file yields: counts, bad lines, and the FIB it makes. */
static char *file_outcome(const char *text, size_t len, size_t chunk, bool skip)
{
	struct routefile *rf = rf_new(ROUTEFILE_AUTO, AF_UNSPEC, skip);
	struct fib *f = fib_new();
	struct errbuf err;
	char *dump, *out;
	size_t n = 0, cap;
	int ret;

	assert_non_null(f);
	for (size_t off = 0; off < len; off += chunk) {
		size_t k = len - off < chunk ? len - off : chunk;

		assert_int_equal(routefile_feed(rf, text + off, k, off + k == len), 0);
	}
	ret = routefile_apply(rf, f, NULL, NULL, NULL, &err);
	dump = fib_dump(f);
	cap = strlen(dump) + 256 + routefile_bad_lines(rf) * 512;
	out = malloc(cap);
	assert_non_null(out);
	n += (size_t)snprintf(out + n, cap - n, "ret %d lines %" PRIu64 " routes %" PRIu64 "\n",
			      ret, routefile_lines(rf), routefile_routes(rf));
	for (uint64_t i = 0; i < routefile_bad_lines(rf); i++)
		n += (size_t)snprintf(out + n, cap - n, "%s\n", bad_msg(rf, i));
	snprintf(out + n, cap - n, "%s", dump);
	free(dump);
	routefile_free(rf);
	fib_destroy(f);
	return out;
}

static void test_routefile_feeding_in_pieces_changes_nothing(void **state)
{
	static const char text[] =
		"route add 10.0.0.0/8 via 192.0.2.1 dev lo metric 7\r\n"
		"10.1.0.0/16\n"
		"route add 10.2.0.1/16 via 192.0.2.1\r\n"
		"# comment\n"
		"\n"
		"route add 2001:db8::/32 nexthop via fe80::1 dev lo weight 3 nexthop via fe80::2 "
		"dev rf-nowhere2\n"
		"route add 10.0.0.0/8 via 192.0.2.1 dev lo metric 7\n"
		"route add 10.3.0.0/16 via 192.0.2.1 mtu 9000\n"
		"10.4.0.0/16 192.0.2.3 dev lo";
	char *whole = file_outcome(text, sizeof(text) - 1, sizeof(text), true);

	(void)state;
	assert_non_null(strstr(whole, "ret 0 lines 9 routes 5\n"));
	assert_non_null(strstr(whole, "t.routes:8:37: 'mtu' is not supported\n"));
	assert_non_null(strstr(whole, "t.routes:7:11: 10.0.0.0/8 table 254 metric 7: route exists\n"));
	for (size_t chunk = 1; chunk < 12; chunk++) {
		char *pieces = file_outcome(text, sizeof(text) - 1, chunk, true);

		assert_string_equal(whole, pieces);
		free(pieces);
	}
	free(whole);
}

static void test_routefile_overlong_lines_are_bad_lines_however_fed(void **state)
{
	size_t len = ROUTEFILE_LINE_MAX + 200;
	char *text = malloc(len + 64);
	char *whole, *pieces;

	(void)state;
	assert_non_null(text);
	memset(text, ' ', len);
	memcpy(text, "10.0.0.0/8", 10);
	snprintf(text + len, 64, "\n10.1.0.0/16\n");
	whole = file_outcome(text, strlen(text), strlen(text), true);
	assert_non_null(strstr(whole, "lines 2 routes 1\nt.routes:1:1: the line is longer than "
				      "65536 bytes\n"));
	pieces = file_outcome(text, strlen(text), 1000, true);
	assert_string_equal(whole, pieces);
	free(pieces);
	free(whole);
	free(text);
}

static void test_routefile_read_file_reads_and_names_missing_files(void **state)
{
	char path[] = "/tmp/lcfib-routefile-XXXXXX";
	static const char text[] = "route add 10.0.0.0/8 via 192.0.2.1\n10.1.0.0/16\nbad\n";
	struct routefile *rf = rf_new(ROUTEFILE_AUTO, AF_UNSPEC, false);
	struct errbuf err;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	assert_int_equal(routefile_read_file(rf, path, &err), 0);
	assert_int_equal(routefile_lines(rf), 3);
	assert_int_equal(routefile_routes(rf), 2);
	assert_string_equal(bad_msg(rf, 0), "t.routes:3:1: expected a prefix, got 'bad'");
	assert_true(routefile_mem(rf) > 0);
	unlink(path);
	routefile_free(rf);

	rf = rf_new(ROUTEFILE_AUTO, AF_UNSPEC, false);
	assert_int_equal(routefile_read_file(rf, path, &err), -ENOENT);
	assert_non_null(strstr(err.msg, path));
	routefile_free(rf);
}

static void test_routefile_open_refuses_what_is_not_a_regular_file(void **state)
{
	char dir[] = "/tmp/lcfib-routefile-XXXXXX", fifo[64];
	static const struct {
		const char *path, *what;
	} bad[] = {
		{ NULL, "is a FIFO" }, /* the FIFO: the open must not wait for a writer */
		{ "/dev/zero", "is a character device" },
		{ "/tmp", "is a directory" },
		{ "/proc/version", "is on procfs" },
	};
	struct errbuf err;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *path = bad[i].path ? bad[i].path : fifo;

		err_clear(&err);
		assert_int_equal(routefile_open(path, 0, &err), -EINVAL);
		if (!strstr(err.msg, bad[i].what))
			print_message("%s: %s\n", path, err.msg);
		assert_non_null(strstr(err.msg, bad[i].what));
		assert_non_null(strstr(err.msg, path));
	}
	unlink(fifo);
	rmdir(dir);
}

static void test_routefile_max_size_bounds_a_file_and_a_feed(void **state)
{
	char path[] = "/tmp/lcfib-routefile-XXXXXX";
	static const char text[] = "10.0.0.0/8\n10.1.0.0/16\n"; /* 23 bytes */
	struct routefile_opts o = { .name = "t.routes", .max_size = 16 };
	struct routefile *rf = routefile_new(&o);
	struct errbuf err;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	assert_int_equal(routefile_open(path, 16, &err), -EFBIG);
	assert_non_null(strstr(err.msg, "is 23 bytes, more than the limit of 16"));
	fd = routefile_open(path, 23, &err);
	assert_true(fd >= 0);
	/* Bounded as it is read too: a file that grew after the open. */
	assert_int_equal(routefile_read_fd(rf, fd, &err), -EFBIG);
	assert_non_null(strstr(err.msg, "more than 16 bytes"));
	close(fd);
	routefile_free(rf);
	rf = routefile_new(&o);
	assert_int_equal(routefile_feed(rf, text, 10, false), 0);
	assert_int_equal(routefile_feed(rf, text + 10, sizeof(text) - 11, true), -EFBIG);
	routefile_free(rf);
	unlink(path);
}

/* 70000 host routes: more than ROUTEFILE_PROGRESS, so progress comes in the middle. */
static char *many_routes(void)
{
	char *text = malloc(70000 * 20), *p = text;

	assert_non_null(text);
	for (unsigned int i = 0; i < 70000; i++)
		p += sprintf(p, "10.%u.%u.%u/32\n", i >> 16, (i >> 8) & 255, i & 255);
	return text;
}

struct cancel_at {
	int *flag, value;
};

/* Sets the flag once the apply is under way. */
static void cancel_in_the_middle(void *ctx, const char *phase, uint64_t done, uint64_t total)
{
	struct cancel_at *c = ctx;

	(void)total;
	if (strcmp(phase, "applying") == 0 && done > 0)
		__atomic_store_n(c->flag, c->value, __ATOMIC_RELAXED);
}

static void test_routefile_cancel_stops_an_apply_and_rolls_it_back(void **state)
{
	struct fib *f = *state;
	char *text = many_routes(), *before;
	int flag = 0;
	struct routefile_opts o = { .name = "t.routes", .cancel = &flag };
	struct cancel_at c = { &flag, ROUTEFILE_CANCEL };
	struct routefile_result res;
	struct routefile *rf;
	struct errbuf err;

	apply_ok(f, "route add 192.0.2.0/24 via 198.51.100.1 dev lo\n");
	before = fib_dump(f);
	for (int load = 0; load < 2; load++) {
		char *after;
		int ret;

		flag = 0;
		rf = routefile_new(&o);
		if (load) { /* parsed while applied: the parser stops too */
			ret = routefile_load_buf(rf, text, strlen(text), f, cancel_in_the_middle,
						 &c, &res, &err);
		} else {
			assert_int_equal(routefile_feed(rf, text, strlen(text), true), 0);
			ret = routefile_apply(rf, f, cancel_in_the_middle, &c, &res, &err);
		}
		assert_int_equal(ret, -ECANCELED);
		assert_string_equal(err.msg, "t.routes: cancelled");
		assert_int_equal(res.applied, 0);
		after = fib_dump(f);
		assert_string_equal(after, before);
		free(after);
		routefile_free(rf);
	}
	/* Set before feeding: the parse stops too. */
	rf = routefile_new(&o);
	assert_int_equal(routefile_feed(rf, text, strlen(text), true), -ECANCELED);
	routefile_free(rf);
	free(before);
	free(text);
}

static void test_routefile_abandon_stops_at_once_and_keeps_what_is_applied(void **state)
{
	struct fib *f = *state;
	char *text = many_routes();
	int flag = 0;
	struct routefile_opts o = { .name = "t.routes", .cancel = &flag };
	struct cancel_at c = { &flag, ROUTEFILE_ABANDON };
	struct routefile_result res;
	struct routefile *rf = routefile_new(&o);
	struct errbuf err;

	assert_int_equal(routefile_feed(rf, text, strlen(text), true), 0);
	assert_int_equal(routefile_apply(rf, f, cancel_in_the_middle, &c, &res, &err), -ECANCELED);
	/* Stopped at the first look after the progress call: 65536 routes in, 70000 not. */
	assert_true(res.applied >= ROUTEFILE_PROGRESS && res.applied < 70000);
	assert_int_equal(fib_routes(f), res.applied);
	fib_bulk_end(f); /* left in bulk mode: teardown checks the FIB */
	routefile_free(rf);
	free(text);
}

/* ------------------------------------------- loads: parse and apply at once */

#ifdef TDATA_UNDER_TSAN
#define LOAD_ROUTES 20000 /* still in bulk mode, published in 5 batches */
#else
#define LOAD_ROUTES 80000 /* more than the applier takes at a time */
#endif

/*
 * LOAD_ROUTES routes over both families with 700 path sets (the parser's
 * path array grows while the applier reads it), some multipath, then @tail:
 * in key order in each family, so that the parser publishes them as it
 * goes (lines out of order wait for their chunk's end: see the test of
 * shuffled lines).
 */
static char *load_text(const char *tail, size_t *len)
{
	size_t cap = LOAD_ROUTES * 80 + strlen(tail) + 1, n = 0;
	char *text = malloc(cap);

	assert_non_null(text);
	for (unsigned int i = 0; i < LOAD_ROUTES; i++) {
		if (i % 10 == 9)
			n += (size_t)snprintf(text + n, cap - n,
					      "route add 2001:db8:%x:%x::/64 via fe80::%x dev lo\n",
					      i >> 16, i & 0xffff, 1 + i % 300);
		else if (i % 97 == 0)
			n += (size_t)snprintf(
				text + n, cap - n,
				"route add %u.%u.%u.1/32 nexthop via 192.0.2.1 dev lo "
				"nexthop via 198.51.100.%u dev lo weight 3\n",
				20 + (i >> 16), (i >> 8) & 255, i & 255, 1 + i % 200);
		else
			n += (size_t)snprintf(text + n, cap - n,
					      "%u.%u.%u.0/24 192.0.%u.%u dev lo\n", 20 + (i >> 16),
					      (i >> 8) & 255, i & 255, 2 + i % 2, 1 + i % 200);
	}
	n += (size_t)snprintf(text + n, cap - n, "%s", tail);
	*len = n;
	return text;
}

/* The temp file's path (to unlink) holding @len bytes of @text, open for reading. */
static int load_file(const char *text, size_t len, char path[static 32])
{
	int fd;

	strcpy(path, "/tmp/lcfib-load-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/* What a read and then an apply of @text into @f come to. */
static int read_then_apply(struct fib *f, const char *text, size_t len, bool skip,
			   struct routefile_result *res, struct errbuf *err)
{
	struct routefile *rf = rf_new(ROUTEFILE_AUTO, AF_UNSPEC, skip);
	int ret = routefile_feed(rf, text, len, true);

	assert_int_equal(ret, 0);
	ret = routefile_apply(rf, f, NULL, NULL, res, err);
	routefile_free(rf);
	return ret;
}

enum load_how { LOAD_FD, LOAD_BUF };

/* A load of @text into @f, from a file or from memory: its result, and the progress seen. */
static int load(struct fib *f, enum load_how how, const char *text, size_t len, bool skip,
		struct routefile_result *res, struct errbuf *err, struct progress_log *log)
{
	struct routefile *rf = rf_new(ROUTEFILE_AUTO, AF_UNSPEC, skip);
	char path[32];
	int fd, ret;

	if (how == LOAD_BUF) {
		ret = routefile_load_buf(rf, text, len, f, progress_fn, log, res, err);
	} else {
		fd = load_file(text, len, path);
		ret = routefile_load_fd(rf, fd, f, progress_fn, log, res, err);
		close(fd);
		unlink(path);
	}
	routefile_free(rf);
	return ret;
}

/*
 * An op's line, column and table are held by runs (consecutive lines, one
 * column, one table: struct rf_run in lib/routefile.c). Apply errors name
 * them right across each kind of break -- a comment, a blank line, a
 * shifted column, another table and back -- in a file read whole, and
 * loaded through the parser thread, where the error comes after several
 * published batches and the load rolls back.
 */
static void test_routefile_apply_errors_name_line_column_and_table(void **state)
{
	static const char text[] = "route add blackhole 10.0.0.0/8\n"
				   "route add blackhole 10.0.0.0/8\n"
				   "# a comment\n"
				   "\n"
				   "  route add blackhole 10.1.0.0/16\n"
				   "  route add blackhole 10.1.0.0/16\n"
				   "route add blackhole 10.2.0.0/16 table 100\n"
				   "route add blackhole 10.2.0.0/16 table 100\n"
				   "route add blackhole 10.2.0.0/16\n"
				   "route add blackhole 10.3.0.0/16\n"
				   "route add blackhole 10.3.0.0/16\n";
	struct fib *f = *state;
	struct routefile *rf = rf_from(text, ROUTEFILE_AUTO, true);
	struct progress_log log = { .text = "" };
	struct routefile_result res;
	struct errbuf err;
	size_t len = 0, cap = 64 * 10010;
	char *big = malloc(cap);

	assert_non_null(big);
	assert_int_equal(routefile_apply(rf, f, NULL, NULL, &res, &err), 0);
	assert_int_equal(res.applied, 5);
	assert_int_equal(res.skipped, 4);
	assert_string_equal(bad_msg(rf, 0),
			    "t.routes:2:21: 10.0.0.0/8 table 254 metric 0: route exists");
	assert_string_equal(bad_msg(rf, 1),
			    "t.routes:6:23: 10.1.0.0/16 table 254 metric 0: route exists");
	assert_string_equal(bad_msg(rf, 2),
			    "t.routes:8:21: 10.2.0.0/16 table 100 metric 0: route exists");
	assert_string_equal(bad_msg(rf, 3),
			    "t.routes:11:21: 10.3.0.0/16 table 254 metric 0: route exists");
	routefile_free(rf);
	fib_table_flush(f, 0, AF_UNSPEC);
	assert_int_equal(fib_routes(f), 0);

	for (unsigned int i = 0; i < 5000; i++)
		len += (size_t)snprintf(big + len, cap - len, "route add blackhole 10.%u.%u.0/24\n",
					i / 256, i % 256);
	len += (size_t)snprintf(big + len, cap - len, "# a comment\n\n");
	for (unsigned int i = 0; i < 5000; i++)
		len += (size_t)snprintf(big + len, cap - len,
					"  route add blackhole 11.%u.%u.0/24 table 100\n", i / 256,
					i % 256);
	len += (size_t)snprintf(big + len, cap - len,
				"route add blackhole 11.0.0.0/24 table 100\n");
	assert_int_equal(load(f, LOAD_BUF, big, len, false, &res, &err, &log), -EEXIST);
	assert_string_equal(err.msg,
			    "t.routes:10003:21: 11.0.0.0/24 table 100 metric 0: route exists");
	assert_int_equal(fib_routes(f), 0);
	free(big);
}

/* The route every load test's FIB holds before the load. */
static const char load_base[] = "route add 192.0.2.0/24 via 198.51.100.1 dev lo\n";

/*
 * A load into @f (holding load_base) ends as a read, then an apply, would:
 * the same routes, result and message.
 */
static void load_as_read_then_apply(struct fib *f, const char *tail, bool skip, int expect)
{
	struct fib *g = fib_new();
	struct routefile_result want, got;
	struct errbuf werr, gerr;
	size_t len;
	char *text = load_text(tail, &len), *before = fib_dump(f), *wdump;
	int ret;

	assert_non_null(g);
	apply_ok(g, load_base);
	ret = read_then_apply(g, text, len, skip, &want, &werr);
	if (ret != expect)
		print_message("%s\n", werr.msg);
	assert_int_equal(ret, expect);
	wdump = fib_dump(g);
	fib_destroy(g);
	for (enum load_how how = LOAD_FD; how <= LOAD_BUF; how++) {
		struct progress_log log = { .text = "" };
		struct timespec t0, t1;
		uint64_t took;
		char *after;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		ret = load(f, how, text, len, skip, &got, &gerr, &log);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		took = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t1.tv_nsec -
		       (uint64_t)t0.tv_nsec;
		if (ret != expect)
			print_message("%s\n", gerr.msg);
		assert_int_equal(ret, expect);
		if (expect)
			assert_string_equal(gerr.msg, werr.msg);
		assert_int_equal(got.applied, want.applied);
		assert_int_equal(got.skipped, want.skipped);
		/*
		 * Where the time went: the parse (on its own thread, or first
		 * with skip_bad_lines, when nothing waits for it), the apply's
		 * wait for it, bulk mode's end, each part of the load; a read
		 * then an apply has no parse of its own to count (and refuses a
		 * file with a bad line before bulk mode).
		 */
		assert_true(got.parse_ns > 0 && got.parse_ns <= took);
		assert_true(got.waited_ns <= took);
		if (skip)
			assert_int_equal(got.waited_ns, 0);
		assert_true(got.rebalance_ns > 0 && got.rebalance_ns <= took);
		assert_int_equal(want.parse_ns, 0);
		assert_int_equal(want.waited_ns, 0);
		if (!expect)
			assert_true(want.rebalance_ns > 0);
		after = fib_dump(f);
		assert_string_equal(after, expect ? before : wdump);
		free(after);
		assert_int_equal(fib_check(f, &gerr), 0);
		/* Applied, rolled back or not, then rebalanced: bulk mode has ended. */
		assert_non_null(strstr(log.text, "rebalancing 1/1\n"));
		if (!expect) { /* the last "applying" knows the total: every op, skipped or not */
			uint64_t ops = got.applied + got.skipped;
			char end[96];

			snprintf(end, sizeof(end),
				 "applying %" PRIu64 "/%" PRIu64
				 "\nrebalancing 0/1\nrebalancing 1/1\n",
				 ops, ops);
			assert_non_null(strstr(log.text, end));
		}
		if (!expect) {
			fib_table_flush(f, 0, AF_UNSPEC);
			apply_ok(f, load_base);
		}
	}
	free(wdump);
	free(before);
	free(text);
}

static void test_routefile_load_applies_as_a_read_then_an_apply(void **state)
{
	apply_ok(*state, load_base);
	load_as_read_then_apply(*state, "", false, 0);
	load_as_read_then_apply(*state, "route add 10.9.0.0/16 via 192.0.2.9 dev lo", false, 0);
}

/* A bad line the parser finds while routes go in: all of them come out again. */
static void test_routefile_load_undoes_the_routes_on_a_late_bad_line(void **state)
{
	apply_ok(*state, load_base);
	load_as_read_then_apply(*state, "bad\n", false, -EINVAL);
	load_as_read_then_apply(*state, "10.0.0.0/8 via\n10.1.0.0/16\nbad two\n", false, -EINVAL);
	/* An add that fails (load_base again), then a bad line: the bad line is what is said. */
	load_as_read_then_apply(*state, "route add 192.0.2.0/24 via 198.51.100.1 dev lo\nbad\n",
				false, -EINVAL);
	/* The add that fails alone. */
	load_as_read_then_apply(*state, load_base, false, -EEXIST);
	/* With skip_bad_lines: read first, then applied, each bad line skipped. */
	load_as_read_then_apply(*state, "route add 192.0.2.0/24 via 198.51.100.1 dev lo\nbad\n",
				true, 0);
	/* A bad line 100 before the first batch: the applier takes none of the 99 before it. */
	{
		struct progress_log log = { .text = "" };
		struct routefile_result res;
		struct errbuf err;
		size_t len;
		char *text = load_text("", &len), *line = text;

		for (int i = 1; i < 100; i++)
			line = strchr(line, '\n') + 1;
		memcpy(line, "bad", 3);
		assert_int_equal(load(*state, LOAD_FD, text, len, false, &res, &err, &log),
				 -EINVAL);
		assert_non_null(strstr(err.msg, "t.routes:100:1: expected a prefix, got 'bad"));
		/* Its total: 0 while the parse goes on, 99 if it had ended by then. */
		assert_true(strcmp(log.text,
				   "applying 0/0\nrolling-back 0/0\nrolling-back 0/0\n") == 0 ||
			    strcmp(log.text,
				   "applying 0/99\nrolling-back 0/0\nrolling-back 0/0\n") == 0);
		free(text);
	}
}

/*
 * A load applies lines that come out of key order sorted, a chunk of ops
 * at a time (rf_order() in lib/routefile.c), stably: the lines of one
 * prefix keep the file's order. 300,000 prefixes shuffled (IPv4 and IPv6),
 * more than one chunk, with an add, a delete and an add again of one route
 * far apart, and two lengths of one key: the FIB after the load is the one
 * the lines make in the file's order. Then the file with a second add of a
 * route at its end: the load fails on that line and takes back the rest.
 */
#define SHUFFLED_ROUTES 300000u

static void test_routefile_load_sorts_shuffled_lines_and_keeps_each_prefix_in_order(void **state)
{
	static const struct {
		unsigned int at;
		const char *line;
	} extra[] = {
		{ 500, "route add blackhole 10.98.0.0/24" },
		{ 1000, "route add blackhole 10.99.0.0/24 metric 5" },
		{ 150000, "route del blackhole 10.99.0.0/24 metric 5" },
		{ 280000, "route add blackhole 10.98.0.0/16" },
		{ 290000, "route add blackhole 10.99.0.0/24 metric 7" },
	};
	struct fib *f = *state, *g = fib_new();
	struct progress_log log = { .text = "" };
	size_t cap = SHUFFLED_ROUTES * 48 + 4096, len = 0, e = 0;
	char *text = malloc(cap), *want, *got;
	struct routefile_result res;
	struct errbuf err;

	assert_non_null(g);
	assert_non_null(text);
	for (unsigned int k = 0; k < SHUFFLED_ROUTES; k++) {
		/* 7919 is prime to SHUFFLED_ROUTES: each prefix once, far from its neighbours. */
		unsigned int i = (unsigned int)(((uint64_t)k * 7919 + 13) % SHUFFLED_ROUTES);

		if (e < sizeof(extra) / sizeof(extra[0]) && extra[e].at == k)
			len += (size_t)snprintf(text + len, cap - len, "%s\n", extra[e++].line);
		if (i % 10 == 9)
			len += (size_t)snprintf(text + len, cap - len,
						"route add blackhole 2001:db8:%x:%x::/64\n",
						i >> 16, i & 0xffff);
		else
			len += (size_t)snprintf(text + len, cap - len,
						"route add blackhole %u.%u.%u.0/24\n",
						20 + (i >> 16), (i >> 8) & 255, i & 255);
	}
	assert_int_equal(read_then_apply(g, text, len, false, &res, &err), 0);
	want = fib_dump(g);
	fib_destroy(g);
	assert_non_null(strstr(want, "10.99.0.0/24"));
	assert_int_equal(load(f, LOAD_FD, text, len, false, &res, &err, &log), 0);
	assert_int_equal(res.applied, SHUFFLED_ROUTES + 5);
	got = fib_dump(f);
	assert_string_equal(got, want);
	free(got);
	free(want);
	assert_int_equal(fib_check(f, &err), 0);
	fib_table_flush(f, 0, AF_UNSPEC);

	/* A second add of 10.98.0.0/24, on the last line. */
	len += (size_t)snprintf(text + len, cap - len, "route add blackhole 10.98.0.0/24\n");
	apply_ok(f, load_base);
	want = fib_dump(f);
	assert_int_equal(load(f, LOAD_FD, text, len, false, &res, &err, &log), -EEXIST);
	assert_string_equal(err.msg, "t.routes:300006:21: 10.98.0.0/24 table 254 metric 0: "
				     "route exists");
	got = fib_dump(f);
	assert_string_equal(got, want);
	assert_int_equal(fib_check(f, &err), 0);
	free(got);
	free(want);
	free(text);
}

static void test_routefile_family_option_constrains_prefixes(void **state)
{
	struct routefile *rf = rf_new(ROUTEFILE_AUTO, AF_INET6, false);
	static const char text[] = "2001:db8::/32 dev lo\n10.0.0.0/8\ndefault dev lo\n"
				   "-4 route add 10.0.0.0/8 dev lo\n";

	(void)state;
	assert_int_equal(routefile_feed(rf, text, sizeof(text) - 1, true), 0);
	assert_int_equal(routefile_routes(rf), 2);
	assert_string_equal(bad_msg(rf, 0),
			    "t.routes:2:1: expected an IPv6 prefix, got '10.0.0.0/8'");
	assert_string_equal(bad_msg(rf, 1),
			    "t.routes:4:1: '-4' contradicts the family given before");
	routefile_free(rf);
}

/* -------------------------------------------------------------- ifname */

static void test_ifname_unknown_names_get_stable_pseudo_indexes(void **state)
{
	char buf[IF_NAMESIZE];
	uint32_t a, b, c;
	struct errbuf err;

	(void)state;
	a = ifindex_of("rf-absent0");
	b = ifindex_of("rf-absent1");
	c = ifindex_of("rf-absent0");
	assert_true(a >= IFNAME_VIRT_BASE && b >= IFNAME_VIRT_BASE);
	assert_int_not_equal(a, b);
	assert_int_equal(a, c);
	assert_string_equal(ifname_name(a, buf), "rf-absent0");
	assert_string_equal(ifname_name(b, buf), "rf-absent1");
	assert_string_equal(ifname_name(IFNAME_VIRT_BASE + 1000, buf), "if4278191080");
	/* Many names: the table grows and rehashes, and keeps every one. */
	for (unsigned int i = 0; i < 300; i++) {
		char name[IF_NAMESIZE];

		snprintf(name, sizeof(name), "rf-many%u", i);
		assert_int_equal(ifname_name(ifindex_of(name), buf)[0], 'r');
		assert_string_equal(buf, name);
	}
	assert_int_equal(ifindex_of("rf-absent1"), b);
	if (if_nametoindex("lo")) {
		assert_int_equal(ifindex_of("lo"), if_nametoindex("lo"));
		assert_string_equal(ifname_name(if_nametoindex("lo"), buf), "lo");
	}
	assert_int_equal(ifname_resolve("", &a, &err), -EINVAL);
	assert_int_equal(ifname_resolve("0123456789abcdef", &a, &err), -EINVAL);
	assert_int_equal(ifname_resolve("a b", &a, &err), -EINVAL);
	assert_int_equal(ifname_resolve("a/b", &a, &err), -EINVAL);
	assert_int_equal(ifname_resolve("..", &a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'..' is not an interface name"));
	assert_true(ifname_valid("0123456789abcde"));
	ifname_reset();
	assert_string_equal(ifname_name(b, buf), "if4278190081");
}

/* ---------------------------------------------------------- full table */

static double rt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The decompressed full table, or NULL (-ENOENT: no data file). */
static char *read_fullview(size_t *len, int *ret)
{
	char cmd[4200], path[4096];
	size_t cap = 32u << 20, n = 0, k;
	char *buf;
	FILE *p;

	snprintf(path, sizeof(path), "%s/fullview-2024.txt.gz", tdata_dir());
	if (access(path, R_OK) != 0) {
		*ret = -ENOENT;
		return NULL;
	}
	snprintf(cmd, sizeof(cmd), "gzip -dc '%s'", path);
	p = popen(cmd, "r");
	buf = malloc(cap);
	if (!p || !buf) {
		*ret = -EIO;
		return NULL;
	}
	while ((k = fread(buf + n, 1, cap - n, p)) > 0) {
		n += k;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	*ret = pclose(p) == 0 ? 0 : -EIO;
	*len = n;
	return buf;
}

struct fv_check {
	const struct ref *ref4, *ref6;
	uint64_t seen, missing, not_blackhole;
};

static int fv_check_fn(void *ctx, const struct addr_prefix *p, const struct fib_route *r)
{
	struct fv_check *c = ctx;
	uint64_t v;

	c->seen++;
	if (ref_get(p->a.family == AF_INET ? c->ref4 : c->ref6, p, &v) != 1)
		c->missing++;
	if (r->type != FIB_RT_BLACKHOLE || r->proto != ROUTEFILE_PROTO_BOOT)
		c->not_blackhole++;
	return 0;
}

/* Random addresses: the FIB's match and the reference's agree on the prefix length. */
static uint64_t fv_lookups_disagreeing(struct fib *f, const struct ref *ref4,
				       const struct tdata_table *t, struct tdata_rng *rng)
{
	uint64_t bad = 0;

	for (unsigned int i = 0; i < 20000; i++) {
		const struct addr_prefix *p = &t->v4[tdata_rng_next(rng) % t->n4];
		struct addr a = p->a;
		struct addr_prefix got;
		unsigned int plen = 0;
		uint64_t v;
		const struct fib_route *r;
		int found;

		/* Somewhere inside the prefix, or anywhere at all. */
		a.v4.s_addr ^=
			htonl((uint32_t)tdata_rng_next(rng) &
			      (i % 2 ? UINT32_MAX : (p->plen == 32 ? 0 : UINT32_MAX >> p->plen)));
		found = ref_lookup(ref4, &a, &plen, &v);
		fib_read_lock();
		r = fib_match_rcu(f, 0, &a, &got);
		bad += (r != NULL) != (found != 0) || (r && got.plen != plen);
		fib_read_unlock();
	}
	return bad;
}

static void test_routefile_full_table_loads_every_prefix(void **state)
{
	struct fib *f = *state;
	struct tdata_table t;
	struct ref *ref4 = ref_new(AF_INET), *ref6 = ref_new(AF_INET6);
	struct fv_check c = { ref4, ref6, 0, 0, 0 };
	struct routefile_result res;
	struct tdata_rng rng;
	struct routefile *rf;
	struct errbuf err;
	double t0, t1, t2;
	size_t len;
	char *text;
	int ret;

#ifdef TDATA_UNDER_TSAN
	print_message("  skipped: a ThreadSanitizer build, where the full table's parse takes minutes\n");
	ref_free(ref4);
	ref_free(ref6);
	skip();
#endif
	text = read_fullview(&len, &ret);
	if (ret == -ENOENT) {
		rt_no_data = 1;
		print_message("  skipped: %s/fullview-2024.txt.gz is missing\n", tdata_dir());
		ref_free(ref4);
		ref_free(ref6);
		skip();
	}
	assert_int_equal(ret, 0);
	assert_int_equal(tdata_load_fullview(&t), 0);
	for (size_t i = 0; i < t.n4; i++)
		ref_set(ref4, &t.v4[i], 1);
	for (size_t i = 0; i < t.n6; i++)
		ref_set(ref6, &t.v6[i], 1);

	rf = rf_new(ROUTEFILE_AUTO, AF_UNSPEC, false);
	t0 = rt_now();
	assert_int_equal(routefile_feed(rf, text, len, true), 0);
	t1 = rt_now();
	assert_int_equal(routefile_bad_lines(rf), 0);
	assert_int_equal(routefile_routes(rf), t.n4 + t.n6);
	assert_int_equal(routefile_apply(rf, f, NULL, NULL, &res, &err), 0);
	t2 = rt_now();
	assert_int_equal(res.applied, t.n4 + t.n6);
	if (getenv("LCFIB_ROUTEFILE_TIMING"))
		print_message("  full table: %" PRIu64 " lines, parse %.1f ms (%.0f ns/line), "
			      "apply %.1f ms (%.2f M routes/s), %.1f MB held\n",
			      routefile_lines(rf), (t1 - t0) * 1e3,
			      (t1 - t0) * 1e9 / (double)routefile_lines(rf), (t2 - t1) * 1e3,
			      (double)res.applied / (t2 - t1) / 1e6,
			      (double)routefile_mem(rf) / 1e6);
	routefile_free(rf);
	free(text);

	fib_read_lock();
	fib_walk_rcu(fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET), fv_check_fn, &c);
	fib_walk_rcu(fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET6), fv_check_fn, &c);
	fib_read_unlock();
	assert_int_equal(c.seen, t.n4 + t.n6);
	assert_int_equal(c.missing, 0);
	assert_int_equal(c.not_blackhole, 0);
	tdata_rng_seed(&rng, tdata_seed(5549));
	assert_int_equal(fv_lookups_disagreeing(f, ref4, &t, &rng), 0);
	assert_int_equal(fib_check(f, &err), 0);
	tdata_free(&t);
	ref_free(ref4);
	ref_free(ref6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_routefile_parses_every_keyword_into_rcfg),
		T(test_routefile_protocol_names_are_iproute2s),
		T(test_routefile_commands_set_netlink_flags_and_del_matches_loosely),
		T(test_routefile_multipath_keeps_weights_devices_and_flags),
		T(test_routefile_types_take_their_place_before_the_prefix),
		T(test_routefile_default_and_host_prefixes),
		T(test_routefile_rfc5549_gateways_need_via_inet6),
		T(test_routefile_errors_name_the_column_and_what_was_expected),
		T(test_routefile_ipv4_parser_agrees_with_inet_pton),
		T(test_routefile_plain_lines_are_prefix_gateway_dev),
		T(test_routefile_ipv6_adds_without_a_metric_get_1024),
		T(test_routefile_auto_format_decides_per_line),
		T(test_routefile_one_bad_line_applies_nothing),
		T(test_routefile_skip_bad_lines_applies_the_rest_and_reports_each),
		T(test_routefile_apply_errors_name_line_column_and_table),
		T(test_routefile_add_of_existing_route_rolls_back_exactly),
		T(test_routefile_del_of_missing_route_rolls_back_exactly),
		T(test_routefile_edits_of_the_rollback_tests_change_the_fib),
		T(test_routefile_ipv6_siblings_merge_and_roll_back),
		T(test_routefile_large_load_rolls_back_in_bulk_mode_with_progress),
		T(test_routefile_crlf_comments_and_missing_final_newline),
		T(test_routefile_hash_inside_a_word_is_part_of_it),
		T(test_routefile_feeding_in_pieces_changes_nothing),
		T(test_routefile_overlong_lines_are_bad_lines_however_fed),
		T(test_routefile_read_file_reads_and_names_missing_files),
		T(test_routefile_load_applies_as_a_read_then_an_apply),
		T(test_routefile_load_undoes_the_routes_on_a_late_bad_line),
		T(test_routefile_load_sorts_shuffled_lines_and_keeps_each_prefix_in_order),
		T(test_routefile_family_option_constrains_prefixes),
		T(test_routefile_open_refuses_what_is_not_a_regular_file),
		T(test_routefile_max_size_bounds_a_file_and_a_feed),
		T(test_routefile_cancel_stops_an_apply_and_rolls_it_back),
		T(test_routefile_abandon_stops_at_once_and_keeps_what_is_applied),
		T(test_ifname_unknown_names_get_stable_pseudo_indexes),
		T(test_routefile_full_table_loads_every_prefix),
#undef T
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);

	return failed ? failed : rt_no_data ? EXIT_SKIP : 0;
}
