/* SPDX-License-Identifier: MIT */
/*
 * The FIB's route semantics, as netlink defines them (the kernel's
 * fib_table_insert and fib_table_delete; for IPv6 its siblings:
 * fib6_add_rt2node and ip6_route_del), nexthop objects and groups,
 * tables, bulk mode and the errors a caller sees.
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
#include <unistd.h>

#include <cmocka.h>

#include "lib/fib-int.h"
#include "tests/ref.h"
#include "tests/tdata.h"

static struct nh_path gw4(const char *s)
{
	struct nh_path p;

	memset(&p, 0, sizeof(p));
	p.gw_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, s, &p.gw.v4), 1);
	p.weight = 1;
	return p;
}

static struct fib_rcfg rcfg(const char *prefix, const struct nh_path *path, uint32_t metric,
			    unsigned int flags)
{
	struct fib_rcfg rc;
	struct errbuf err;

	memset(&rc, 0, sizeof(rc));
	assert_int_equal(addr_parse_prefix(prefix, AF_UNSPEC, &rc.dst, &err), 0);
	rc.table = FIB_TABLE_MAIN;
	rc.type = FIB_RT_UNICAST;
	rc.metric = metric;
	rc.flags = flags;
	if (path) {
		rc.n_paths = 1;
		rc.paths = path;
	}
	return rc;
}

static int add(struct fib *f, const char *prefix, const char *gw, uint32_t metric,
	       unsigned int flags)
{
	struct nh_path p;
	struct fib_rcfg rc;
	struct errbuf err;

	if (gw)
		p = gw4(gw);
	rc = rcfg(prefix, gw ? &p : NULL, metric, flags);
	return fib_route_add(f, &rc, &err);
}

#define CREATE (FIB_F_CREATE)
#define EXCL   (FIB_F_CREATE | FIB_F_EXCL)

/* Copies what a lookup found, so that no assertion runs inside a read-side section. */
struct found {
	bool hit;
	uint8_t plen, type;
	uint32_t metric;
	char gw[ADDR_STRLEN];
	unsigned int n_paths;
	uint32_t nh_id;
};

static struct found lookup(struct fib *f, uint32_t table, const char *addr)
{
	struct found out;
	struct addr a;
	struct addr_prefix p;
	struct errbuf err;
	const struct fib_route *r;

	memset(&out, 0, sizeof(out));
	assert_int_equal(addr_parse(addr, AF_UNSPEC, &a, &err), 0);
	fib_read_lock();
	r = fib_match_rcu(f, table, &a, &p);
	if (r) {
		out.hit = true;
		out.plen = r->plen;
		out.type = r->type;
		out.metric = r->metric;
		if (r->nh) {
			const struct nh_info *info = nh_info_rcu(r->nh);

			out.n_paths = info->n;
			out.nh_id = r->nh->id;
			if (info->n && info->path[0].gw_family)
				inet_ntop(info->path[0].gw_family, &info->path[0].gw, out.gw,
					  sizeof(out.gw));
		}
	}
	fib_read_unlock();
	return out;
}

/* The gateways of one prefix's routes, in lookup order, joined by spaces. */
struct collect {
	const char *prefix;
	char out[512];
};

static int collect_fn(void *ctx, const struct addr_prefix *p, const struct fib_route *r)
{
	struct collect *c = ctx;
	char buf[ADDR_STRLEN];
	size_t n = strlen(c->out);

	addr_prefix_format(p, buf, sizeof(buf));
	if (strcmp(buf, c->prefix) != 0)
		return 0;
	if (r->nh && nh_info_rcu(r->nh)->n)
		inet_ntop(AF_INET, &nh_info_rcu(r->nh)->path[0].gw, buf, sizeof(buf));
	else
		snprintf(buf, sizeof(buf), "%s", fib_rtype_name(r->type));
	snprintf(c->out + n, sizeof(c->out) - n, "%s%s/%u", n ? " " : "", buf, r->metric);
	return 0;
}

static const char *routes_of(struct fib *f, const char *prefix, struct collect *c)
{
	const struct fib_table *tb;

	memset(c, 0, sizeof(*c));
	c->prefix = prefix;
	fib_read_lock();
	tb = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET);
	if (tb)
		fib_walk_rcu(tb, collect_fn, c);
	fib_read_unlock();
	return c->out;
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

static int teardown(void **state)
{
	struct fib *f = *state;
	struct errbuf err;

	assert_int_equal(fib_check(f, &err), 0);
	fib_reader_unregister();
	fib_destroy(f);
	return 0;
}

static void test_fib_exclusive_create_refuses_existing_route(void **state)
{
	struct fib *f = *state;
	struct nh_path p = gw4("192.0.2.1");
	struct fib_rcfg rc = rcfg("10.0.0.0/8", &p, 0, EXCL);
	struct errbuf err;

	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	assert_int_equal(fib_route_add(f, &rc, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "10.0.0.0/8"));
	assert_non_null(strstr(err.msg, "exists"));
}

/*
 * A route whose every path is dead is passed by, as the kernel's
 * fib_table_lookup() does: the next route of the prefix, then a shorter
 * prefix. One live path is enough; flags make a nexthop of their own.
 */
static void test_fib_lookups_pass_routes_whose_every_path_is_dead_by(void **state)
{
	struct fib *f = *state;
	struct nh_path live = gw4("192.0.2.1"), dead = gw4("192.0.2.2"), mp[2];
	struct fib_rcfg rc;
	struct errbuf err;
	struct found r;

	dead.flags = NH_F_DEAD | NH_F_LINKDOWN;
	rc = rcfg("10.0.0.0/8", &live, 0, EXCL);
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	rc = rcfg("10.1.0.0/16", &dead, 0, EXCL);
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	r = lookup(f, 0, "10.1.2.3");
	assert_true(r.hit);
	assert_int_equal(r.plen, 8);
	/* a live route of the same prefix, behind the dead one */
	rc = rcfg("10.1.0.0/16", &live, 5, EXCL);
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	r = lookup(f, 0, "10.1.2.3");
	assert_int_equal(r.plen, 16);
	assert_int_equal(r.metric, 5);
	/* a multipath route with one live path is used */
	mp[0] = dead;
	mp[1] = gw4("192.0.2.3");
	rc = rcfg("10.2.0.0/16", NULL, 0, EXCL);
	rc.paths = mp;
	rc.n_paths = 2;
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	r = lookup(f, 0, "10.2.0.1");
	assert_int_equal(r.plen, 16);
	assert_int_equal(r.n_paths, 2);
	/* only dead, and nothing shorter: no route */
	rc = rcfg("172.16.0.0/12", &dead, 0, EXCL);
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	assert_false(lookup(f, 0, "172.16.0.1").hit);
}

static void test_fib_create_prepends_and_append_appends(void **state)
{
	struct fib *f = *state;
	struct collect c;

	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.1", 5, EXCL), 0);
	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.2", 5, CREATE), 0);
	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.3", 5, CREATE | FIB_F_APPEND), 0);
	assert_string_equal(routes_of(f, "10.0.0.0/8", &c), "192.0.2.2/5 192.0.2.1/5 192.0.2.3/5");
	assert_string_equal(lookup(f, 0, "10.1.2.3").gw, "192.0.2.2");
}

static void test_fib_identical_route_is_eexist_and_identical_replace_is_noop(void **state)
{
	struct fib *f = *state;
	struct collect c;

	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.1", 0, EXCL), 0);
	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.1", 0, CREATE), -EEXIST);
	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.1", 0, CREATE | FIB_F_REPLACE), 0);
	assert_string_equal(routes_of(f, "10.0.0.0/8", &c), "192.0.2.1/0");
}

static void test_fib_replace_replaces_first_route_of_its_metric(void **state)
{
	struct fib *f = *state;
	struct collect c;
	struct fib_state st;

	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.1", 10, EXCL), 0);
	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.2", 10, CREATE | FIB_F_APPEND), 0);
	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.9", 20, EXCL), 0);
	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.3", 10, CREATE | FIB_F_REPLACE), 0);
	assert_string_equal(routes_of(f, "10.0.0.0/8", &c),
			    "192.0.2.3/10 192.0.2.2/10 192.0.2.9/20");
	/* The replaced route's nexthop went with it. */
	fib_get_state(f, &st);
	assert_int_equal(st.nh_anonymous, 3);
	assert_int_equal(st.routes4, 3);
}

static void test_fib_change_without_create_needs_an_existing_route(void **state)
{
	struct fib *f = *state;
	struct nh_path p = gw4("192.0.2.1");
	struct fib_rcfg rc = rcfg("10.0.0.0/8", &p, 0, FIB_F_REPLACE);
	struct errbuf err;
	struct fib_state st;

	assert_int_equal(fib_route_add(f, &rc, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no such route"));
	fib_get_state(f, &st);
	assert_int_equal(st.routes4, 0);
	assert_int_equal(st.nh_anonymous, 0);
	assert_int_equal(st.tables, 0); /* and no empty table was made for it */
}

static void test_fib_lower_metric_wins_until_deleted(void **state)
{
	struct fib *f = *state;
	struct fib_rcfg rc = rcfg("10.0.0.0/8", NULL, 10, 0);
	struct errbuf err;

	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.1", 100, EXCL), 0);
	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.2", 10, EXCL), 0);
	assert_int_equal(lookup(f, 0, "10.9.9.9").metric, 10);
	assert_string_equal(lookup(f, 0, "10.9.9.9").gw, "192.0.2.2");
	assert_int_equal(fib_route_del(f, &rc, &err), 0);
	assert_int_equal(lookup(f, 0, "10.9.9.9").metric, 100);
}

static void test_fib_delete_matches_the_fields_given(void **state)
{
	struct fib *f = *state;
	struct nh_path other = gw4("192.0.2.99"), right = gw4("192.0.2.2");
	struct fib_rcfg rc;
	struct errbuf err;
	struct collect c;

	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.1", 0, EXCL), 0);
	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.2", 0, CREATE | FIB_F_APPEND), 0);
	rc = rcfg("10.0.0.0/8", &other, 0, 0);
	assert_int_equal(fib_route_del(f, &rc, &err), -ESRCH);
	assert_non_null(strstr(err.msg, "no such route"));
	rc = rcfg("10.0.0.0/8", NULL, 7, 0);
	assert_int_equal(fib_route_del(f, &rc, &err), -ESRCH);
	rc = rcfg("10.0.0.0/8", NULL, 0, 0);
	rc.type = FIB_RT_BLACKHOLE;
	assert_int_equal(fib_route_del(f, &rc, &err), -ESRCH);
	rc = rcfg("10.0.0.0/8", &right, 0, 0);
	assert_int_equal(fib_route_del(f, &rc, &err), 0);
	assert_string_equal(routes_of(f, "10.0.0.0/8", &c), "192.0.2.1/0");
	/* Nothing named but the prefix: the first route goes. */
	rc = rcfg("10.0.0.0/8", NULL, 0, 0);
	assert_int_equal(fib_route_del(f, &rc, &err), 0);
	assert_false(lookup(f, 0, "10.0.0.1").hit);
	assert_int_equal(fib_route_del(f, &rc, &err), -ESRCH);
}

static void test_fib_error_types_take_no_nexthop_and_unicast_needs_one(void **state)
{
	struct fib *f = *state;
	struct nh_path p = gw4("192.0.2.1");
	struct fib_rcfg rc = rcfg("10.0.0.0/8", &p, 0, EXCL);
	struct errbuf err;
	struct found fd;

	rc.type = FIB_RT_BLACKHOLE;
	assert_int_equal(fib_route_add(f, &rc, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "blackhole"));
	rc = rcfg("10.0.0.0/8", NULL, 0, EXCL);
	assert_int_equal(fib_route_add(f, &rc, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unicast"));
	rc.type = FIB_RT_UNREACHABLE;
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	fd = lookup(f, 0, "10.1.1.1");
	assert_true(fd.hit);
	assert_int_equal(fd.type, FIB_RT_UNREACHABLE);
	assert_int_equal(fd.n_paths, 0);
}

static void test_fib_rejects_host_bits_and_bad_families(void **state)
{
	struct fib *f = *state;
	struct nh_path p = gw4("192.0.2.1");
	struct fib_rcfg rc = rcfg("10.0.0.0/8", &p, 0, EXCL);
	struct errbuf err;
	struct fib_state st;

	rc.dst.a.b[3] = 1; /* 10.0.0.1/8 */
	assert_int_equal(fib_route_add(f, &rc, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "host bits"));
	rc = rcfg("10.0.0.0/8", &p, 0, EXCL);
	rc.dst.a.family = 99;
	assert_int_equal(fib_route_add(f, &rc, &err), -EAFNOSUPPORT);
	rc = rcfg("10.0.0.0/8", &p, 0, EXCL);
	rc.dst.plen = 33;
	assert_int_equal(fib_route_add(f, &rc, &err), -EINVAL);
	rc = rcfg("10.0.0.0/8", &p, 0, EXCL);
	rc.type = 42;
	assert_int_equal(fib_route_add(f, &rc, &err), -EINVAL);
	fib_get_state(f, &st);
	assert_int_equal(st.routes4, 0);
	assert_int_equal(st.nh_anonymous, 0);
}

static void test_fib_routes_share_nexthops_by_value(void **state)
{
	struct fib *f = *state;
	struct fib_state st;
	char prefix[32];

	for (int i = 0; i < 1000; i++) {
		snprintf(prefix, sizeof(prefix), "10.%d.%d.0/24", i / 256, i % 256);
		assert_int_equal(add(f, prefix, i % 2 ? "192.0.2.1" : "192.0.2.2", 0, EXCL), 0);
	}
	fib_get_state(f, &st);
	assert_int_equal(st.routes4, 1000);
	assert_int_equal(st.nh_anonymous, 2);
	assert_int_equal(fib_table_flush(f, FIB_TABLE_MAIN, AF_INET), 0);
	fib_get_state(f, &st);
	assert_int_equal(st.routes4, 0);
	assert_int_equal(st.nh_anonymous, 0);
	/* A flush hands everything to the background thread, which frees it by itself. */
	fib_reclaim_flush(f);
	for (int i = 0; i < 500 && st.reclaim.pending_bytes; i++) {
		usleep(10000);
		fib_get_state(f, &st);
	}
	assert_int_equal(st.reclaim.pending_bytes, 0);
	fib_reclaim_barrier(f);
	fib_get_state(f, &st);
	assert_int_equal(st.mem.cls[MEM_NH].bytes, 0);
	assert_int_equal(st.mem.cls[MEM_LEAF].bytes, 0);
	assert_int_equal(st.mem.cls[MEM_TNODE].bytes, 0);
}

static void nh_obj(struct fib *f, uint32_t id, const char *gw, int expect)
{
	struct nh_obj_cfg cfg;
	struct errbuf err;

	memset(&cfg, 0, sizeof(cfg));
	cfg.id = id;
	cfg.family = AF_INET;
	cfg.path = gw4(gw);
	assert_int_equal(fib_nh_set(f, &cfg, FIB_F_CREATE | FIB_F_REPLACE, &err), expect);
}

static void test_fib_nexthop_objects_groups_replace_and_delete(void **state)
{
	struct fib *f = *state;
	struct nh_obj_cfg grp;
	struct fib_rcfg rc = rcfg("10.0.0.0/8", NULL, 0, EXCL);
	struct errbuf err;
	struct fib_state st;
	struct found fd;

	nh_obj(f, 1, "192.0.2.1", 0);
	nh_obj(f, 2, "192.0.2.2", 0);
	memset(&grp, 0, sizeof(grp));
	grp.id = 10;
	grp.n_members = 2;
	grp.member[0].id = 1;
	grp.member[0].weight = 1;
	grp.member[1].id = 2;
	grp.member[1].weight = 3;
	assert_int_equal(fib_nh_set(f, &grp, FIB_F_CREATE, &err), 0);
	assert_int_equal(fib_nh_set(f, &grp, FIB_F_CREATE | FIB_F_EXCL, &err), -EEXIST);
	grp.id = 11;
	grp.member[1].id = 99;
	assert_int_equal(fib_nh_set(f, &grp, FIB_F_CREATE, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "99"));

	rc.nh_id = 10;
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	rc = rcfg("172.16.0.0/12", NULL, 0, EXCL);
	rc.nh_id = 2;
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	rc.nh_id = 77;
	rc.flags = CREATE;
	assert_int_equal(fib_route_add(f, &rc, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "77"));

	fd = lookup(f, 0, "10.0.0.1");
	assert_int_equal(fd.nh_id, 10);
	assert_int_equal(fd.n_paths, 2);
	assert_string_equal(fd.gw, "192.0.2.1");

	/* Replacing a member: the group, and the route through it, follow. */
	nh_obj(f, 1, "192.0.2.111", 0);
	assert_string_equal(lookup(f, 0, "10.0.0.1").gw, "192.0.2.111");

	/* Deleting a member shrinks the group; deleting the last takes its routes. */
	assert_int_equal(fib_nh_del(f, 1, &err), 0);
	fd = lookup(f, 0, "10.0.0.1");
	assert_int_equal(fd.n_paths, 1);
	assert_string_equal(fd.gw, "192.0.2.2");
	assert_int_equal(fib_nh_del(f, 2, &err), 0);
	assert_false(lookup(f, 0, "10.0.0.1").hit);
	assert_false(lookup(f, 0, "172.16.0.1").hit);
	assert_int_equal(fib_nh_del(f, 10, &err), -ENOENT);
	fib_get_state(f, &st);
	assert_int_equal(st.nh_objects, 0);
	assert_int_equal(st.routes4, 0);
}

/* What fib_match_rules_rcu() found for @addr: its prefix length and table (0: nothing). */
static uint32_t rules_lookup(struct fib *f, const char *addr, uint8_t *plen)
{
	const struct fib_route *r;
	struct errbuf err;
	struct addr a;
	uint32_t table = 0;

	assert_int_equal(addr_parse(addr, AF_UNSPEC, &a, &err), 0);
	fib_read_lock();
	r = fib_match_rules_rcu(f, &a, NULL, &table);
	*plen = r ? r->plen : 0;
	fib_read_unlock();
	return r ? table : 0;
}

/* As the kernel's default rules: local, main, default; a throw goes on to the next. */
static void test_fib_rules_ask_local_main_default_and_throw_goes_on(void **state)
{
	struct fib *f = *state;
	struct nh_path p = gw4("192.0.2.7");
	struct fib_rcfg rc;
	struct errbuf err;
	uint8_t plen;

	rc = rcfg("127.0.0.0/8", NULL, 0, EXCL);
	rc.table = FIB_TABLE_LOCAL;
	rc.type = FIB_RT_LOCAL;
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	rc = rcfg("0.0.0.0/0", &p, 0, EXCL);
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	rc = rcfg("10.6.0.0/16", NULL, 0, EXCL);
	rc.type = FIB_RT_THROW;
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	rc = rcfg("10.6.0.0/15", &p, 0, EXCL);
	rc.table = FIB_TABLE_DEFAULT;
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	rc = rcfg("10.9.0.0/16", NULL, 0, EXCL);
	rc.type = FIB_RT_THROW;
	assert_int_equal(fib_route_add(f, &rc, &err), 0);

	/* The local table answers first, though main's default route matches too. */
	assert_int_equal(rules_lookup(f, "127.0.0.5", &plen), FIB_TABLE_LOCAL);
	assert_int_equal(plen, 8);
	assert_int_equal(rules_lookup(f, "198.51.100.1", &plen), FIB_TABLE_MAIN);
	assert_int_equal(plen, 0);
	/* main's throw: the default table's route, not main's default route. */
	assert_int_equal(rules_lookup(f, "10.6.1.1", &plen), FIB_TABLE_DEFAULT);
	assert_int_equal(plen, 15);
	/* A throw and nothing after it: no route. */
	assert_int_equal(rules_lookup(f, "10.9.1.1", &plen), 0);
	/* IPv6 has no rule for the default table: its routes are not asked. */
	rc = rcfg("2001:db8:5::/48", NULL, 0, EXCL);
	rc.table = FIB_TABLE_DEFAULT;
	rc.type = FIB_RT_BLACKHOLE;
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	assert_int_equal(rules_lookup(f, "2001:db8:5::1", &plen), 0);
	/* One table asked: its throw route is what matches. */
	assert_int_equal(lookup(f, FIB_TABLE_MAIN, "10.6.1.1").type, FIB_RT_THROW);
}

static void test_fib_tables_are_separate(void **state)
{
	struct fib *f = *state;
	struct nh_path p = gw4("192.0.2.7");
	struct fib_rcfg rc = rcfg("10.0.0.0/8", &p, 0, EXCL);
	struct errbuf err;
	struct fib_state st;

	rc.table = 100;
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	assert_int_equal(add(f, "10.0.0.0/16", "192.0.2.1", 0, EXCL), 0);
	assert_int_equal(lookup(f, 100, "10.0.1.1").plen, 8);
	assert_int_equal(lookup(f, 0, "10.0.1.1").plen, 16);
	assert_false(lookup(f, 0, "10.1.1.1").hit);
	{
		/* The dump shows the routes of the table asked for, and only those. */
		char *buf = NULL;
		size_t len = 0;
		FILE *mf = open_memstream(&buf, &len);

		assert_non_null(mf);
		fib_read_lock();
		fib_table_dump_rcu(fib_table_get_rcu(f, 100, AF_INET), mf);
		fib_read_unlock();
		fclose(mf);
		assert_non_null(strstr(buf, "10.0.0.0"));
		assert_non_null(strstr(buf, "/8 type 1"));
		assert_null(strstr(buf, "/16"));
		free(buf);
	}
	assert_int_equal(fib_table_flush(f, 100, AF_UNSPEC), 0);
	assert_false(lookup(f, 100, "10.0.1.1").hit);
	fib_get_state(f, &st);
	assert_int_equal(st.routes4, 1);
	assert_int_equal(st.tables, 2);
}

static void test_fib_ipv6_routes_and_fibmatch_prefix(void **state)
{
	struct fib *f = *state;
	struct nh_path p;
	struct fib_rcfg rc;
	struct errbuf err;
	struct addr a;
	struct addr_prefix pfx;
	char buf[ADDR_STRLEN];
	const struct fib_route *r;

	memset(&p, 0, sizeof(p));
	p.gw_family = AF_INET6;
	inet_pton(AF_INET6, "fe80::1", &p.gw.v6);
	p.ifindex = 2;
	rc = rcfg("2001:db8::/32", &p, 1024, EXCL);
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	rc = rcfg("::/0", &p, 1024, EXCL);
	assert_int_equal(fib_route_add(f, &rc, &err), 0);
	assert_int_equal(addr_parse("2001:db8:1::5", AF_INET6, &a, &err), 0);
	fib_read_lock();
	r = fib_match_rcu(f, 0, &a, &pfx);
	snprintf(buf, sizeof(buf), "none");
	if (r)
		addr_prefix_format(&pfx, buf, sizeof(buf));
	fib_read_unlock();
	assert_string_equal(buf, "2001:db8::/32");
	assert_int_equal(lookup(f, 0, "2002::1").plen, 0);
}

static void test_fib_sync_mem_range_is_enforced(void **state)
{
	struct fib *f = *state;

	assert_int_equal(fib_get_sync_mem(f), 524288);
	assert_int_equal(fib_set_sync_mem(f, 65535), -ERANGE);
	assert_int_equal(fib_set_sync_mem(f, 67108865), -ERANGE);
	assert_int_equal(fib_get_sync_mem(f), 524288);
	assert_int_equal(fib_set_sync_mem(f, 65536), 0);
	assert_int_equal(fib_get_sync_mem(f), 65536);
	assert_int_equal(fib_set_sync_mem(f, 67108864), 0);
}

/* Bulk mode: lookups are right while the tries are unbalanced, and after. */
static void test_fib_bulk_mode_stays_correct(void **state)
{
	struct fib *f = *state;
	struct ref *ref = ref_new(AF_INET);
	struct tdata_rng rng;
	struct nh_path p = gw4("192.0.2.1");
	struct errbuf err;
	int bad = 0;

	tdata_rng_seed(&rng, tdata_seed(7));
	fib_bulk_begin(f);
	for (int i = 0; i < 50000; i++) {
		uint64_t x = tdata_rng_next(&rng);
		unsigned int plen = 8 + (unsigned int)(x % 25);
		struct fib_rcfg rc;

		rc = rcfg("0.0.0.0/0", &p, (uint32_t)i, CREATE | FIB_F_REPLACE);
		rc.dst.plen = (uint8_t)plen;
		rc.dst.a.v4.s_addr = htonl((uint32_t)(x >> 32) & (uint32_t)(~0ull << (32 - plen)));
		assert_int_equal(fib_route_add(f, &rc, &err), 0);
		ref_set(ref, &rc.dst, (uint64_t)i);
		if (i % 5000 == 0)
			assert_int_equal(fib_check(f, &err), 0);
	}
	for (int pass = 0; pass < 2; pass++) {
		for (int q = 0; q < 20000; q++) {
			struct addr a;
			unsigned int plen;
			uint64_t val;
			const struct fib_route *r;
			int want;

			addr_from_key4(&a, (uint32_t)tdata_rng_next(&rng));
			want = ref_lookup(ref, &a, &plen, &val);
			fib_read_lock();
			r = fib_match_rcu(f, 0, &a, NULL);
			/* Several metrics may share a prefix: the lowest (first) wins. */
			bad += want ? !r || r->plen != plen || r->metric > val : r != NULL;
			fib_read_unlock();
		}
		if (pass == 0)
			fib_bulk_end(f);
	}
	assert_int_equal(bad, 0);
	assert_int_equal(fib_check(f, &err), 0);
	ref_free(ref);
}

static void test_addr_parses_masks_and_refuses_host_bits(void **state)
{
	static const struct {
		const char *text;
		int ret;
		const char *masked; /* the prefix with host bits cleared */
	} cases[] = {
		{ "10.0.0.0/8", 0, "10.0.0.0/8" },
		{ "10.0.0.1/8", -EINVAL, "10.0.0.0/8" },
		{ "10.128.0.0/9", 0, "10.128.0.0/9" },
		{ "10.192.0.0/9", -EINVAL, "10.128.0.0/9" },
		{ "0.0.0.0/0", 0, "0.0.0.0/0" },
		{ "255.255.255.255/32", 0, "255.255.255.255/32" },
		{ "1.2.3.4", 0, "1.2.3.4/32" },
		{ "1.2.3.4/33", -EINVAL, NULL },
		{ "1.2.3/24", -EINVAL, NULL },
		{ "2001:db8::/32", 0, "2001:db8::/32" },
		{ "2001:db8::1/127", -EINVAL, "2001:db8::/127" },
		{ "2001:db8:8000::/33", 0, "2001:db8:8000::/33" },
		{ "::/0", 0, "::/0" },
		{ "::1/129", -EINVAL, NULL },
		{ "10.0.0.0/", -EINVAL, NULL },
		{ "10.0.0.0/-1", -EINVAL, NULL },
	};
	struct addr_prefix p;
	struct errbuf err;
	char buf[ADDR_STRLEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret = addr_parse_prefix(cases[i].text, AF_UNSPEC, &p, &err);

		if (ret != cases[i].ret)
			fail_msg("%s: %d, expected %d (%s)", cases[i].text, ret, cases[i].ret,
				 err.msg);
		if (ret)
			assert_non_null(strstr(err.msg, cases[i].text));
		if (!cases[i].masked)
			continue;
		addr_mask(&p.a, p.plen);
		assert_false(addr_has_host_bits(&p.a, p.plen));
		assert_string_equal(addr_prefix_format(&p, buf, sizeof(buf)), cases[i].masked);
	}
	assert_int_equal(addr_parse_prefix("default", AF_INET6, &p, &err), 0);
	assert_int_equal(p.plen, 0);
	assert_int_equal(addr_parse_prefix("default", AF_UNSPEC, &p, &err), -EINVAL);
}

/*
 * Random route and nexthop churn, with every kind of edit and flag, checked
 * by fib_check() (trie invariants and every nexthop's reference count)
 * as it goes; ASan adds leaks and use after free. Errors are expected and
 * must leave the FIB consistent.
 */
/* The whole main table as text: every route in lookup order, with its nexthop pointer. */
static int dump_fn(void *ctx, const struct addr_prefix *p, const struct fib_route *r)
{
	char **out = ctx, line[160], buf[ADDR_STRLEN];
	size_t n = *out ? strlen(*out) : 0, k;

	k = (size_t)snprintf(line, sizeof(line), "%s %p %u %u %u %u\n",
			     addr_prefix_format(p, buf, sizeof(buf)), (void *)r->nh, r->metric,
			     r->type, r->proto, r->scope);
	*out = realloc(*out, n + k + 1);
	memcpy(*out + n, line, k + 1);
	return 0;
}

static char *dump_main(struct fib *f)
{
	const struct fib_table *tb;
	char *out = NULL;

	fib_read_lock();
	tb = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET);
	if (tb)
		fib_walk_rcu(tb, dump_fn, &out);
	fib_read_unlock();
	return out ? out : strdup("");
}

static void test_fib_undo_reverts_edits_exactly(void **state)
{
	static const unsigned int flag_sets[] = {
		FIB_F_CREATE | FIB_F_EXCL,    FIB_F_CREATE,  FIB_F_CREATE | FIB_F_APPEND,
		FIB_F_CREATE | FIB_F_REPLACE, FIB_F_REPLACE,
	};
	enum { N = 4000 };
	struct fib *f = *state;
	struct fib_undo *u = calloc(N, sizeof(*u));
	struct tdata_rng rng;
	struct errbuf err;
	unsigned int n = 0, replaced = 0, deleted = 0;
	char *before, *after;

	assert_non_null(u);
	tdata_rng_seed(&rng, tdata_seed(12));
	/* Something to replace and delete, kept in a dump to compare with. */
	for (int i = 0; i < 2000; i++) {
		uint64_t x = tdata_rng_next(&rng);
		char prefix[32], gw[32];

		snprintf(prefix, sizeof(prefix), "10.%u.%u.0/24", (unsigned int)x % 8,
			 (unsigned int)(x >> 8) % 8);
		snprintf(gw, sizeof(gw), "192.0.2.%u", 1 + (unsigned int)(x >> 16) % 5);
		add(f, prefix, gw, (uint32_t)(x >> 24) % 3, FIB_F_CREATE | FIB_F_APPEND);
	}
	before = dump_main(f);
	while (n < N) {
		uint64_t x = tdata_rng_next(&rng);
		char prefix[32], gw[32];
		struct nh_path p;
		struct fib_rcfg rc;
		int ret;

		snprintf(prefix, sizeof(prefix), "10.%u.%u.0/24", (unsigned int)x % 8,
			 (unsigned int)(x >> 8) % 8);
		snprintf(gw, sizeof(gw), "192.0.2.%u", 1 + (unsigned int)(x >> 16) % 5);
		p = gw4(gw);
		rc = rcfg(prefix, (x >> 40) % 3 ? &p : NULL, (uint32_t)(x >> 24) % 3,
			  flag_sets[(x >> 32) % 5]);
		if (!rc.n_paths)
			rc.type = (x >> 44) % 2 ? FIB_RT_BLACKHOLE : 0;
		if ((x >> 48) % 3 == 0) {
			ret = fib_route_del_undo(f, &rc, &u[n], &err);
			deleted += !ret;
		} else {
			ret = fib_route_add_undo(f, &rc, &u[n], &err);
			replaced += !ret && u[n].has_removed;
		}
		if (!ret)
			n++;
	}
	assert_true(replaced > 100 && deleted > 100);
	after = dump_main(f);
	assert_string_not_equal(before, after);
	free(after);
	while (n--) {
		int ret = fib_undo_revert(f, &u[n], &err);

		if (ret)
			fail_msg("undo %u: %s", n, err.msg);
	}
	after = dump_main(f);
	assert_string_equal(before, after);
	assert_int_equal(fib_check(f, &err), 0);
	free(before);
	free(after);
	free(u);
}

static void test_fib_undo_release_keeps_edits(void **state)
{
	struct fib *f = *state;
	struct nh_path p = gw4("192.0.2.1");
	struct fib_rcfg rc = rcfg("10.0.0.0/8", &p, 0, EXCL);
	struct fib_undo u;
	struct errbuf err;
	struct collect c;

	assert_int_equal(fib_route_add_undo(f, &rc, &u, &err), 0);
	fib_undo_release(f, &u);
	assert_string_equal(routes_of(f, "10.0.0.0/8", &c), "192.0.2.1/0");
	rc.flags = 0;
	assert_int_equal(fib_route_del_undo(f, &rc, &u, &err), 0);
	/* The record holds the deleted route's nexthop: nothing to share it with now. */
	fib_reclaim_barrier(f);
	assert_int_equal(fib_undo_revert(f, &u, &err), 0);
	assert_string_equal(routes_of(f, "10.0.0.0/8", &c), "192.0.2.1/0");
	assert_int_equal(fib_check(f, &err), 0);
	assert_int_equal(fib_route_del_undo(f, &rc, &u, &err), 0);
	fib_undo_release(f, &u);
	assert_string_equal(routes_of(f, "10.0.0.0/8", &c), "");
}

/*
 * Deletes in bulk mode empty whole subtrees; the one rebalance at the end
 * resizes parents before children, so a parent whose subtree vanished
 * under it must still collapse.
 */
static void test_fib_bulk_deletes_leave_a_valid_trie(void **state)
{
	struct fib *f = *state;
	struct nh_path p = gw4("192.0.2.1");
	struct errbuf err;
	char prefix[32];

	for (int round = 0; round < 8; round++) {
		unsigned int keep = (unsigned int)round; /* how many of 10/8 stay */

		fib_bulk_begin(f);
		for (unsigned int i = 0; i < 600; i++) {
			snprintf(prefix, sizeof(prefix), "%u.%u.%u.0/24", i % 2 ? 10 : 20,
				 (i / 2 * 37) % 256, i / 512);
			add(f, prefix, "192.0.2.1", 0, CREATE);
		}
		for (unsigned int i = 0; i < 600; i++) {
			struct fib_rcfg rc;

			if (i % 2 && i / 2 < keep)
				continue;
			snprintf(prefix, sizeof(prefix), "%u.%u.%u.0/24", i % 2 ? 10 : 20,
				 (i / 2 * 37) % 256, i / 512);
			rc = rcfg(prefix, &p, 0, 0);
			assert_int_equal(fib_route_del(f, &rc, &err), 0);
		}
		fib_bulk_end(f);
		if (fib_check(f, &err))
			fail_msg("round %d: %s", round, err.msg);
		assert_int_equal(fib_table_flush(f, 0, AF_UNSPEC), 0);
	}
}

static void test_fib_exact_metric_delete_and_find(void **state)
{
	struct fib *f = *state;
	struct nh_path p = gw4("192.0.2.1");
	struct fib_rcfg rc = rcfg("10.0.0.0/8", &p, 0, 0);
	struct errbuf err;
	unsigned int n;

	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.1", 5, EXCL), 0);
	assert_int_equal(add(f, "10.0.0.0/8", "192.0.2.2", 7, EXCL), 0);
	rc.n_paths = 0;
	rc.flags = FIB_F_EXACT_METRIC;
	assert_int_equal(fib_route_del(f, &rc, &err), -ESRCH);
	fib_read_lock();
	assert_non_null(fib_find_rcu(f, 0, &rc.dst, &n));
	fib_read_unlock();
	assert_int_equal(n, 2);
	rc.flags = 0; /* netlink's delete: metric 0 matches any, the first goes */
	assert_int_equal(fib_route_del(f, &rc, &err), 0);
	fib_read_lock();
	{
		const struct fib_route *r = fib_find_rcu(f, 0, &rc.dst, &n);

		assert_int_equal(n, 1);
		assert_int_equal(r->metric, 7);
	}
	fib_read_unlock();
	rc.dst.plen = 9;
	fib_read_lock();
	assert_null(fib_find_rcu(f, 0, &rc.dst, &n));
	fib_read_unlock();
	assert_int_equal(n, 0);
}

static const unsigned int churn_flags[] = {
	FIB_F_CREATE | FIB_F_EXCL,    FIB_F_CREATE,  FIB_F_CREATE | FIB_F_APPEND,
	FIB_F_CREATE | FIB_F_REPLACE, FIB_F_REPLACE, 0,
};

/*
 * One edit of the churn, chosen by @x: a route of 10.0-3.x/16-24 added
 * or deleted, a nexthop object (1..4 paths, 5..8 groups of them) set or
 * deleted, and now and then a flush. Returns what the FIB said, or 1 when
 * @x names a prefix with host bits (nothing was asked).
 */
static int churn_op(struct fib *f, uint64_t x, struct errbuf *err)
{
	unsigned int kind = (unsigned int)(x % 16);
	char prefix[32], gw[32];

	snprintf(prefix, sizeof(prefix), "10.%u.%u.0/%u", (unsigned int)(x >> 8) % 4,
		 (unsigned int)(x >> 16) % 4 * 64, 16 + (unsigned int)(x >> 24) % 3 * 4);
	snprintf(gw, sizeof(gw), "192.0.2.%u", 1 + (unsigned int)(x >> 32) % 6);
	if (kind < 7) {
		struct nh_path p = gw4(gw);
		struct fib_rcfg rc;

		memset(&rc, 0, sizeof(rc));
		if (addr_parse_prefix(prefix, AF_INET, &rc.dst, err))
			return 1;
		rc.metric = (uint32_t)(x >> 40) % 3;
		rc.flags = churn_flags[(x >> 44) % 6];
		rc.type = (x >> 48) % 5 == 0 ? FIB_RT_BLACKHOLE : FIB_RT_UNICAST;
		if (rc.type == FIB_RT_UNICAST) {
			if ((x >> 52) % 3 == 0) {
				rc.nh_id = 1 + (uint32_t)(x >> 54) % 8;
			} else {
				rc.n_paths = 1;
				rc.paths = &p;
			}
		}
		return fib_route_add(f, &rc, err);
	}
	if (kind < 11) {
		struct fib_rcfg rc;

		memset(&rc, 0, sizeof(rc));
		if (addr_parse_prefix(prefix, AF_INET, &rc.dst, err))
			return 1;
		rc.metric = (x >> 40) % 2 ? (uint32_t)(x >> 41) % 3 : 0;
		return fib_route_del(f, &rc, err);
	}
	if (kind < 14) {
		struct nh_obj_cfg cfg;
		uint32_t id = 1 + (uint32_t)(x >> 40) % 8;

		memset(&cfg, 0, sizeof(cfg));
		cfg.id = id;
		cfg.family = AF_INET;
		if (id <= 4) {
			cfg.path = gw4(gw);
		} else {
			cfg.n_members = (uint16_t)(1 + (x >> 44) % 3);
			for (unsigned int i = 0; i < cfg.n_members; i++) {
				cfg.member[i].id = 1 + (uint32_t)(i + (x >> 46)) % 4;
				cfg.member[i].weight = (uint16_t)(1 + i);
			}
		}
		return fib_nh_set(f, &cfg,
				  (x >> 50) % 2 ? FIB_F_CREATE | FIB_F_REPLACE : FIB_F_CREATE, err);
	}
	if (kind < 15)
		return fib_nh_del(f, 1 + (uint32_t)(x >> 40) % 8, err);
	return (x >> 40) % 50 ? 0 : fib_table_flush(f, 0, AF_UNSPEC);
}

/* Deletes what the churn made; its memory is then the empty FIB's. */
static void churn_clean(struct fib *f)
{
	struct errbuf err;
	struct fib_state st;

	assert_int_equal(fib_check(f, &err), 0);
	assert_int_equal(fib_table_flush(f, 0, AF_UNSPEC), 0);
	for (uint32_t id = 5; id <= 8; id++)
		fib_nh_del(f, id, &err);
	for (uint32_t id = 1; id <= 4; id++)
		fib_nh_del(f, id, &err);
	assert_int_equal(fib_check(f, &err), 0);
	fib_reclaim_barrier(f);
	fib_get_state(f, &st);
	assert_int_equal(st.routes4, 0);
	assert_int_equal(st.nh_anonymous + st.nh_objects, 0);
	assert_int_equal(st.mem.cls[MEM_NH].bytes, 0);
	assert_int_equal(st.mem.cls[MEM_NH_INFO].bytes, 0);
	assert_int_equal(st.mem.cls[MEM_LEAF].bytes, 0);
}

static void test_fib_random_churn_keeps_fib_consistent(void **state)
{
	struct fib *f = *state;
	struct tdata_rng rng;
	struct errbuf err;
	int ok = 0, failed = 0;

	tdata_rng_seed(&rng, tdata_seed(11));
	for (int op = 0; op < 60000; op++) {
		int ret = churn_op(f, tdata_rng_next(&rng), &err);

		/* Host bits may be set by the length chosen: those adds must fail cleanly. */
		if (ret == 1)
			continue;
		if (ret)
			failed++;
		else
			ok++;
		if (op % 500 == 0 && fib_check(f, &err))
			fail_msg("op %d: %s", op, err.msg);
	}
	/* Both outcomes must have happened, or the churn tested little. */
	assert_true(ok > 1000 && failed > 1000);
	churn_clean(f);
}

/* Every route of the main IPv4 table, as `ip route` prints them, hashed (FNV-1a). */
static int digest_fn(void *ctx, const struct addr_prefix *p, const struct fib_route *r)
{
	uint64_t *h = ctx;
	char buf[256];

	fib_route_format(p, r, buf, sizeof(buf));
	for (const char *c = buf; *c; c++)
		*h = (*h ^ (unsigned char)*c) * 0x100000001b3ull;
	*h = (*h ^ '\n') * 0x100000001b3ull;
	return 0;
}

static uint64_t fib_digest(struct fib *f)
{
	const struct fib_table *tb;
	uint64_t h = 0xcbf29ce484222325ull;

	fib_read_lock();
	tb = fib_table_get_rcu(f, FIB_TABLE_MAIN, AF_INET);
	if (tb)
		fib_walk_rcu(tb, digest_fn, &h);
	fib_read_unlock();
	return h;
}

/*
 * The churn out of memory: each edit first with one of its first six
 * allocations failing (mem_fail_after()). An edit that fails so says
 * -ENOMEM, with a message, and leaves the FIB as it was (its routes, its
 * counts, fib_check()); made again, it does what it would have. One whose
 * failure fell after its change (a resize, the root's fallbacks) leaves a
 * sound FIB. Nothing leaks: emptied, its memory is the empty FIB's.
 */
static void test_fib_out_of_memory_leaves_fib_as_it_was(void **state)
{
	struct fib *f = *state;
	struct mem *m = fib_mem(f);
	struct tdata_rng rng;
	struct errbuf err;
	unsigned int enomem = 0, later = 0;

	tdata_rng_seed(&rng, tdata_seed(13));
	for (int op = 0; op < 30000; op++) {
		uint64_t x = tdata_rng_next(&rng), h = fib_digest(f), failed = mem_failed(m);
		struct fib_state a, b;
		int ret;

		fib_get_state(f, &a);
		mem_fail_after(m, tdata_rng_next(&rng) % 6, 1);
		err.msg[0] = 0;
		ret = churn_op(f, x, &err);
		mem_fail_after(m, 0, 0);
		if (ret == -ENOMEM) {
			enomem++;
			fib_get_state(f, &b);
			/* A removal of many (a flush, a nexthop's routes) may stop part way. */
			if (x % 16 >= 14 ? b.routes4 > a.routes4
					 : fib_digest(f) != h || a.routes4 != b.routes4 ||
						   a.nh_objects != b.nh_objects ||
						   a.nh_anonymous != b.nh_anonymous)
				fail_msg("op %d: out of memory (%s), yet the FIB changed: %llu "
					 "routes "
					 "before, %llu after",
					 op, err.msg, (unsigned long long)a.routes4,
					 (unsigned long long)b.routes4);
			assert_true(x % 16 == 15 || err.msg[0] != 0);
			if (fib_check(f, &err))
				fail_msg("op %d: after a failure for want of memory: %s", op,
					 err.msg);
			ret = churn_op(f, x, &err);
		} else if (mem_failed(m) != failed) {
			later++;
			if (fib_check(f, &err))
				fail_msg("op %d: after an allocation failed past the edit: %s", op,
					 err.msg);
		}
		assert_int_not_equal(ret, -ENOMEM);
	}
	print_message("  %u edits failed for want of memory and were made again; in %u, "
		      "an allocation past the edit failed\n",
		      enomem, later);
	assert_true(enomem > 1000 && later > 0);
	churn_clean(f);
}

/* ------------------------------------------------ IPv6: siblings */

static struct nh_path gw6(const char *s, uint32_t ifindex)
{
	struct nh_path p;

	memset(&p, 0, sizeof(p));
	if (s) {
		p.gw_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, s, &p.gw.v6), 1);
	}
	p.ifindex = ifindex;
	p.weight = 1;
	return p;
}

/* An IPv6 route through @n paths @p (types without a nexthop: @n 0). */
static int add6(struct fib *f, uint8_t type, const struct nh_path *p, unsigned int n,
		uint32_t metric, unsigned int flags)
{
	struct fib_rcfg rc = rcfg("2001:db8:1::/64", NULL, metric, flags);
	struct errbuf err;

	rc.type = type;
	rc.paths = p;
	rc.n_paths = n;
	return fib_route_add(f, &rc, &err);
}

static int add6_gw(struct fib *f, const char *gw, uint32_t metric, unsigned int flags)
{
	struct nh_path p = gw6(gw, 2);

	return add6(f, FIB_RT_UNICAST, &p, 1, metric, flags);
}

static int del6(struct fib *f, const struct nh_path *p, unsigned int n, uint32_t metric)
{
	struct fib_rcfg rc = rcfg("2001:db8:1::/64", NULL, metric, 0);
	struct errbuf err;

	rc.type = 0;
	rc.paths = p;
	rc.n_paths = n;
	return fib_route_del(f, &rc, &err);
}

/* 2001:db8:1::/64's routes as `ip -6 route` lists them, on one line. */
static const char *show6(struct fib *f, char *buf, size_t size)
{
	struct addr_prefix p;
	struct errbuf err;
	const struct fib_route *r;
	unsigned int n;
	size_t k = 0;

	buf[0] = '\0';
	assert_int_equal(addr_parse_prefix("2001:db8:1::/64", AF_INET6, &p, &err), 0);
	fib_read_lock();
	r = fib_find_rcu(f, 0, &p, &n);
	for (unsigned int i = 0; r && i < n && k < size; i++) {
		const struct nh_info *info = r[i].nh ? nh_info_rcu(r[i].nh) : NULL;

		k += (size_t)snprintf(buf + k, size - k, "%s%s %u", k ? " | " : "",
				      fib_rtype_name(r[i].type), r[i].metric);
		for (unsigned int j = 0; info && j < info->n && k < size; j++) {
			char gw[ADDR_STRLEN] = "-";

			if (info->path[j].gw_family)
				inet_ntop(AF_INET6, &info->path[j].gw.v6, gw, sizeof(gw));
			k += (size_t)snprintf(buf + k, size - k, " %s@%u", gw,
					      info->path[j].ifindex);
		}
	}
	fib_read_unlock();
	return buf;
}

#define APPEND  (FIB_F_CREATE | FIB_F_APPEND)
#define REPLACE (FIB_F_CREATE | FIB_F_REPLACE)

static void test_fib6_gateway_routes_merge_in_the_order_they_came(void **state)
{
	struct fib *f = *state;
	struct nh_path mp[2] = { gw6("fe80::6", 2), gw6("fe80::7", 3) };
	char buf[512];
	struct fib_state st;

	assert_int_equal(add6_gw(f, "fe80::2", 1024, EXCL), 0);
	/* ip -6 route add: any route of the metric is in the way. */
	assert_int_equal(add6_gw(f, "fe80::3", 1024, EXCL), -EEXIST);
	assert_int_equal(add6_gw(f, "fe80::3", 1024, APPEND), 0);
	/* prepend (no flag but CREATE) appends, as in the kernel. */
	assert_int_equal(add6_gw(f, "fe80::4", 1024, CREATE), 0);
	assert_int_equal(add6(f, FIB_RT_UNICAST, mp, 2, 1024, APPEND), 0);
	/* A sibling again, or a multipath route holding one, is refused whole. */
	assert_int_equal(add6_gw(f, "fe80::3", 1024, APPEND), -EEXIST);
	mp[0] = gw6("fe80::8", 2), mp[1] = gw6("fe80::2", 2);
	assert_int_equal(add6(f, FIB_RT_UNICAST, mp, 2, 1024, APPEND), -EEXIST);
	/* Another metric is another route. */
	assert_int_equal(add6_gw(f, "fe80::9", 10, EXCL), 0);
	assert_string_equal(show6(f, buf, sizeof(buf)),
			    "unicast 10 fe80::9@2 | unicast 1024 fe80::2@2 fe80::3@2 fe80::4@2 "
			    "fe80::6@2 fe80::7@3");
	fib_get_state(f, &st);
	assert_int_equal(st.routes6, 2);
	/* The nexthops of the routes merged away went with them. */
	fib_reclaim_barrier(f);
	fib_get_state(f, &st);
	assert_int_equal(st.nh_anonymous, 2);
}

static void test_fib6_deleting_a_gateway_takes_out_its_sibling(void **state)
{
	struct fib *f = *state;
	struct nh_path p[2] = { gw6("fe80::3", 0), gw6("fe80::5", 2) };
	char buf[512];

	for (unsigned int i = 2; i <= 5; i++) {
		char gw[16];

		snprintf(gw, sizeof(gw), "fe80::%u", i);
		assert_int_equal(add6_gw(f, gw, 1024, APPEND), 0);
	}
	assert_int_equal(add6_gw(f, "fe80::9", 10, EXCL), 0);
	/* A gateway with no device given matches it on any. */
	assert_int_equal(del6(f, p, 1, 0), 0);
	assert_string_equal(show6(f, buf, sizeof(buf)),
			    "unicast 10 fe80::9@2 | unicast 1024 fe80::2@2 fe80::4@2 fe80::5@2");
	assert_int_equal(del6(f, p, 1, 0), -ESRCH);
	/* Several named: all of them out of one route, or nothing. */
	p[0] = gw6("fe80::4", 2);
	p[1] = gw6("fe80::8", 2);
	assert_int_equal(del6(f, p, 2, 0), -ESRCH);
	p[1] = gw6("fe80::5", 2);
	assert_int_equal(del6(f, p, 2, 0), 0);
	assert_string_equal(show6(f, buf, sizeof(buf)),
			    "unicast 10 fe80::9@2 | unicast 1024 fe80::2@2");
	/* No gateway: the first route matching goes whole; a device names any of its paths. */
	assert_int_equal(add6_gw(f, "fe80::3", 10, APPEND), 0);
	p[0] = gw6(NULL, 2);
	assert_int_equal(del6(f, p, 1, 10), 0);
	assert_string_equal(show6(f, buf, sizeof(buf)), "unicast 1024 fe80::2@2");
	assert_int_equal(del6(f, NULL, 0, 0), 0);
	assert_string_equal(show6(f, buf, sizeof(buf)), "");
}

static void test_fib6_device_routes_and_error_types_stay_apart(void **state)
{
	struct fib *f = *state;
	struct nh_path dev2 = gw6(NULL, 2), dev3 = gw6(NULL, 3);
	char buf[512];

	assert_int_equal(add6(f, FIB_RT_UNICAST, &dev2, 1, 1024, EXCL), 0);
	assert_int_equal(add6(f, FIB_RT_UNICAST, &dev3, 1, 1024, EXCL), -EEXIST);
	assert_int_equal(add6(f, FIB_RT_UNICAST, &dev3, 1, 1024, APPEND), 0);
	assert_int_equal(add6(f, FIB_RT_UNICAST, &dev2, 1, 1024, APPEND), -EEXIST);
	/* Gateways merge with each other only, after the device routes. */
	assert_int_equal(add6_gw(f, "fe80::2", 1024, APPEND), 0);
	assert_int_equal(add6_gw(f, "fe80::3", 1024, CREATE), 0);
	/* Types without a nexthop never merge, and clash with each other (all "dev lo"). */
	assert_int_equal(add6(f, FIB_RT_BLACKHOLE, NULL, 0, 1024, APPEND), 0);
	assert_int_equal(add6(f, FIB_RT_UNREACHABLE, NULL, 0, 1024, APPEND), -EEXIST);
	assert_int_equal(add6(f, FIB_RT_BLACKHOLE, NULL, 0, 1024, APPEND), -EEXIST);
	assert_string_equal(show6(f, buf, sizeof(buf)),
			    "unicast 1024 -@2 | unicast 1024 -@3 | unicast 1024 fe80::2@2 "
			    "fe80::3@2 | blackhole 1024");
	/* The first device route is the one a lookup picks. */
	assert_int_equal(lookup(f, 0, "2001:db8:1::1").n_paths, 1);
	assert_string_equal(lookup(f, 0, "2001:db8:1::1").gw, "");
}

static void test_fib6_replace_takes_the_route_that_merges_alike(void **state)
{
	struct fib *f = *state;
	struct nh_path dev2 = gw6(NULL, 2), dev4 = gw6(NULL, 4);
	struct nh_path mp[2] = { gw6("fe80::7", 2), gw6("fe80::8", 2) };
	char buf[512];

	assert_int_equal(add6(f, FIB_RT_UNICAST, &dev2, 1, 1024, EXCL), 0);
	assert_int_equal(add6_gw(f, "fe80::2", 1024, APPEND), 0);
	assert_int_equal(add6_gw(f, "fe80::3", 1024, APPEND), 0);
	/* A gateway route replaces the multipath route whole. */
	assert_int_equal(add6(f, FIB_RT_UNICAST, mp, 2, 1024, REPLACE), 0);
	assert_string_equal(show6(f, buf, sizeof(buf)),
			    "unicast 1024 -@2 | unicast 1024 fe80::7@2 fe80::8@2");
	/* The same again changes nothing. */
	assert_int_equal(add6(f, FIB_RT_UNICAST, mp, 2, 1024, REPLACE), 0);
	/* A device route replaces the first device route. */
	assert_int_equal(add6(f, FIB_RT_UNICAST, &dev4, 1, 1024, REPLACE), 0);
	assert_string_equal(show6(f, buf, sizeof(buf)),
			    "unicast 1024 -@4 | unicast 1024 fe80::7@2 fe80::8@2");
	/* With none alike, the first of the metric goes. */
	assert_int_equal(del6(f, mp, 2, 1024), 0);
	assert_int_equal(add6_gw(f, "fe80::2", 1024, REPLACE), 0);
	assert_string_equal(show6(f, buf, sizeof(buf)), "unicast 1024 fe80::2@2");
	assert_int_equal(add6(f, FIB_RT_UNICAST, &dev2, 1, 1024, REPLACE), 0);
	assert_string_equal(show6(f, buf, sizeof(buf)), "unicast 1024 -@2");
}

static void test_fib6_multipath_needs_gateways_and_distinct_paths(void **state)
{
	struct fib *f = *state;
	struct nh_path mp[2] = { gw6("fe80::2", 2), gw6(NULL, 3) };
	struct fib_rcfg rc = rcfg("2001:db8:1::/64", NULL, 1024, EXCL);
	struct errbuf err;
	struct fib_state st;

	rc.paths = mp;
	rc.n_paths = 2;
	assert_int_equal(fib_route_add(f, &rc, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "nexthop 2"));
	assert_non_null(strstr(err.msg, "2001:db8:1::/64"));
	mp[1] = gw6("fe80::2", 2);
	mp[1].weight = 5;
	assert_int_equal(fib_route_add(f, &rc, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "the same as nexthop 1"));
	fib_get_state(f, &st);
	assert_int_equal(st.routes6 + st.nh_anonymous, 0);
}

static void test_fib6_undo_puts_siblings_back(void **state)
{
	struct fib *f = *state;
	struct nh_path p = gw6("fe80::3", 2), mp[2] = { gw6("fe80::4", 2), gw6("fe80::2", 2) };
	struct fib_rcfg rc = rcfg("2001:db8:1::/64", &p, 1024, APPEND);
	struct fib_undo u[3];
	struct errbuf err;
	char before[512], buf[512];

	assert_int_equal(add6_gw(f, "fe80::2", 1024, EXCL), 0);
	assert_int_equal(add6_gw(f, "fe80::9", 1024, APPEND), 0);
	show6(f, before, sizeof(before));
	assert_int_equal(fib_route_add_undo(f, &rc, &u[0], &err), 0);
	rc.paths = mp;
	rc.n_paths = 1;
	assert_int_equal(fib_route_add_undo(f, &rc, &u[1], &err), 0);
	rc.paths = &mp[1];
	rc.flags = 0;
	assert_int_equal(fib_route_del_undo(f, &rc, &u[2], &err), 0);
	assert_string_equal(show6(f, buf, sizeof(buf)),
			    "unicast 1024 fe80::9@2 fe80::3@2 fe80::4@2");
	for (int i = 2; i >= 0; i--)
		assert_int_equal(fib_undo_revert(f, &u[i], &err), 0);
	assert_string_equal(show6(f, buf, sizeof(buf)), before);
}

/*
 * A brute-force model of the kernel's IPv6 routes of a few prefixes, as
 * the table in docs/LIBRARY.md records what `ip -6 route` does: a list of
 * routes per prefix, each with its paths (siblings) in order. Random edits
 * go to it and to the FIB; both must answer alike and hold the same
 * routes, and lookups must find the model's first route of the longest
 * prefix (tests/ref.c).
 */
#define M6_PREFIXES 5
#define M6_ROUTES   16

struct m6_route {
	uint32_t metric, nh_id;
	uint8_t type, n;
	struct nh_path path[NH_MAX_PATHS];
};

struct m6_prefix {
	struct addr_prefix p;
	struct m6_route r[M6_ROUTES];
	unsigned int n;
};

static bool m6_merges(const struct m6_route *r)
{
	if (r->type != FIB_RT_UNICAST || r->nh_id || !r->n)
		return false;
	for (unsigned int i = 0; i < r->n; i++) {
		if (!r->path[i].gw_family)
			return false;
	}
	return true;
}

static bool m6_path_eq(const struct nh_path *a, const struct nh_path *b)
{
	return a->ifindex == b->ifindex && a->gw_family == b->gw_family &&
	       (!a->gw_family || memcmp(&a->gw.v6, &b->gw.v6, 16) == 0);
}

/* The kernel's rt6_duplicate_nexthop, sibling by sibling. */
static bool m6_dup(const struct m6_route *a, const struct m6_route *b)
{
	if (a->nh_id || b->nh_id)
		return a->nh_id == b->nh_id;
	if (!a->n || !b->n)
		return !a->n && !b->n;
	for (unsigned int i = 0; i < a->n; i++) {
		for (unsigned int j = 0; j < b->n; j++) {
			if (m6_path_eq(&a->path[i], &b->path[j]))
				return true;
		}
	}
	return false;
}

static int m6_add(struct m6_prefix *m, const struct m6_route *r, unsigned int flags)
{
	unsigned int fa = 0, end, i;

	for (i = 0; r->n > 1 && i < r->n; i++) {
		if (!r->path[i].gw_family)
			return -EINVAL;
		for (unsigned int j = 0; j < i; j++) {
			if (m6_path_eq(&r->path[i], &r->path[j]))
				return -EEXIST;
		}
	}
	while (fa < m->n && m->r[fa].metric < r->metric)
		fa++;
	for (end = fa; end < m->n && m->r[end].metric == r->metric; end++)
		;
	if ((flags & FIB_F_REPLACE) && fa < end) {
		for (i = fa; i < end && m6_merges(&m->r[i]) != m6_merges(r); i++)
			;
		m->r[i < end ? i : fa] = *r;
		return 0;
	}
	if (fa < end && (flags & FIB_F_EXCL))
		return -EEXIST;
	for (i = fa; i < end; i++) {
		if (m6_dup(&m->r[i], r))
			return -EEXIST;
	}
	if (!(flags & FIB_F_CREATE))
		return -ENOENT;
	for (i = fa; i < end && m6_merges(r); i++) {
		if (m6_merges(&m->r[i])) {
			memcpy(&m->r[i].path[m->r[i].n], r->path, r->n * sizeof(r->path[0]));
			m->r[i].n = (uint8_t)(m->r[i].n + r->n);
			return 0;
		}
	}
	if (m->n == M6_ROUTES)
		return -ENOSPC;
	memmove(&m->r[end + 1], &m->r[end], (m->n - end) * sizeof(m->r[0]));
	m->r[end] = *r;
	m->n++;
	return 0;
}

static void m6_remove(struct m6_prefix *m, unsigned int i)
{
	memmove(&m->r[i], &m->r[i + 1], (m->n - i - 1) * sizeof(m->r[0]));
	m->n--;
}

/* Whether a delete's path @w names @h: its gateway, and its device when it gives one. */
static bool m6_del_match(const struct nh_path *w, const struct nh_path *h)
{
	if (w->ifindex && w->ifindex != h->ifindex)
		return false;
	return !w->gw_family ||
	       (h->gw_family == w->gw_family && memcmp(&w->gw.v6, &h->gw.v6, 16) == 0);
}

static bool m6_contains(const struct addr_prefix *p, const struct addr *a)
{
	struct addr c = *a;

	addr_mask(&c, p->plen);
	return memcmp(c.b, p->a.b, 16) == 0;
}

/* ip6_route_del, but all named paths from one route (what the FIB does). */
static int m6_del(struct m6_prefix *m, const struct m6_route *d, bool any_metric)
{
	bool gw = d->n && d->path[0].gw_family;

	for (unsigned int i = 0; i < m->n; i++) {
		struct m6_route *r = &m->r[i];
		bool taken[NH_MAX_PATHS] = { false };
		unsigned int k, j;

		if ((!any_metric && r->metric != d->metric) || (d->type && r->type != d->type))
			continue;
		if (d->nh_id) {
			if (r->nh_id != d->nh_id)
				continue;
			m6_remove(m, i);
			return 0;
		}
		if (!d->n) {
			m6_remove(m, i);
			return 0;
		}
		if (r->nh_id || !r->n)
			continue;
		for (k = 0; k < d->n; k++) {
			for (j = 0; j < r->n; j++) {
				if (!taken[j] && m6_del_match(&d->path[k], &r->path[j]))
					break;
			}
			if (j == r->n)
				break;
			taken[j] = true;
		}
		if (k < d->n)
			continue;
		if (!gw) {
			m6_remove(m, i);
			return 0;
		}
		for (j = k = 0; j < r->n; j++) {
			if (!taken[j])
				r->path[k++] = r->path[j];
		}
		r->n = (uint8_t)k;
		if (!k)
			m6_remove(m, i);
		return 0;
	}
	return -ESRCH;
}

/* The FIB holds the model's routes of @m, in order. */
static void m6_check(struct fib *f, const struct m6_prefix *m, int op)
{
	const struct fib_route *r;
	char why[128] = "";
	unsigned int n;

	fib_read_lock();
	r = fib_find_rcu(f, 0, &m->p, &n);
	if (n != m->n)
		snprintf(why, sizeof(why), "%u routes, not %u", n, m->n);
	for (unsigned int i = 0; !why[0] && i < n; i++) {
		const struct m6_route *w = &m->r[i];
		const struct nh_info *info = r[i].nh ? nh_info_rcu(r[i].nh) : NULL;

		if (r[i].metric != w->metric || r[i].type != w->type ||
		    (r[i].nh ? r[i].nh->id : 0) != w->nh_id)
			snprintf(why, sizeof(why), "route %u: metric, type or nexthop id", i);
		else if (!w->nh_id && (info ? info->n : 0) != w->n)
			snprintf(why, sizeof(why), "route %u: %u paths, not %u", i,
				 info ? info->n : 0, w->n);
		for (unsigned int j = 0; !why[0] && !w->nh_id && j < w->n; j++) {
			if (!m6_path_eq(&info->path[j], &w->path[j]) ||
			    info->path[j].weight != w->path[j].weight)
				snprintf(why, sizeof(why), "route %u: path %u", i, j);
		}
	}
	fib_read_unlock();
	if (why[0]) {
		char p[ADDR_STRLEN];

		fail_msg("op %d: %s: %s", op, addr_prefix_format(&m->p, p, sizeof(p)), why);
	}
}

static void m6_random_route(struct tdata_rng *rng, struct m6_route *r, bool del)
{
	uint64_t x = tdata_rng_next(rng);

	memset(r, 0, sizeof(*r));
	r->metric = (x & 1) ? 1024 : 10;
	r->type = FIB_RT_UNICAST;
	switch ((x >> 1) % 8) {
	case 0:
		r->type = (x >> 4) % 2 ? FIB_RT_BLACKHOLE : FIB_RT_UNREACHABLE;
		return;
	case 1:
		r->nh_id = 1 + (uint32_t)(x >> 4) % 2;
		return;
	case 2: /* a device route */
		r->n = 1;
		r->path[0] = gw6(NULL, 1 + (uint32_t)(x >> 4) % 2);
		return;
	default:
		break;
	}
	r->n = (uint8_t)(1 + (x >> 4) % (del ? 2 : 3));
	for (unsigned int i = 0; i < r->n; i++) {
		char gw[16];
		uint64_t y = tdata_rng_next(rng);

		snprintf(gw, sizeof(gw), "fe80::%u", 1 + (unsigned int)(y % 5));
		r->path[i] = gw6(gw, del && y % 3 == 0 ? 0 : 1 + (uint32_t)(y >> 8) % 2);
		if (!del)
			r->path[i].weight = (uint16_t)(1 + (y >> 12) % 2);
	}
	if (!del && (x >> 8) % 16 == 0)
		r->path[r->n - 1] = gw6(NULL, 1); /* refused in a multipath route */
}

static void test_fib6_random_edits_match_the_kernel_model(void **state)
{
	static const char *const prefixes[M6_PREFIXES] = {
		"::/0", "2001:db8::/32", "2001:db8:1::/48", "2001:db8:1:1::/64", "2001:db8:2::/48",
	};
	static const unsigned int flag_sets[] = {
		FIB_F_CREATE | FIB_F_EXCL,    FIB_F_CREATE,  FIB_F_CREATE | FIB_F_APPEND,
		FIB_F_CREATE | FIB_F_REPLACE, FIB_F_REPLACE,
	};
	struct fib *f = *state;
	struct m6_prefix *m = calloc(M6_PREFIXES, sizeof(*m));
	struct ref *ref = ref_new(AF_INET6);
	struct tdata_rng rng;
	struct errbuf err;
	int merged = 0, split = 0;

	assert_non_null(m);
	for (uint32_t id = 1; id <= 2; id++) {
		struct nh_obj_cfg cfg;

		memset(&cfg, 0, sizeof(cfg));
		cfg.id = id;
		cfg.family = AF_INET6;
		cfg.path = gw6(id == 1 ? "fe80::1" : "fe80::9", 1);
		assert_int_equal(fib_nh_set(f, &cfg, FIB_F_CREATE, &err), 0);
	}
	for (unsigned int i = 0; i < M6_PREFIXES; i++)
		assert_int_equal(addr_parse_prefix(prefixes[i], AF_INET6, &m[i].p, &err), 0);
	tdata_rng_seed(&rng, tdata_seed(17));
	for (int op = 0; op < 40000; op++) {
		uint64_t x = tdata_rng_next(&rng);
		struct m6_prefix *mp = &m[x % M6_PREFIXES];
		bool del = (x >> 8) % 3 == 0, any_metric = (x >> 10) % 4 == 0;
		struct m6_route r;
		struct fib_rcfg rc;
		unsigned int before = 0;
		int want, got;

		m6_random_route(&rng, &r, del);
		memset(&rc, 0, sizeof(rc));
		rc.dst = mp->p;
		rc.metric = any_metric && del ? 0 : r.metric;
		rc.type = r.type;
		rc.nh_id = r.nh_id;
		rc.paths = r.path;
		rc.n_paths = r.n;
		rc.proto = 3;
		if (mp->n)
			before = mp->r[0].n;
		if (del) {
			if ((x >> 12) % 2)
				rc.type = r.type = 0; /* any type */
			want = m6_del(mp, &r, any_metric);
			got = fib_route_del(f, &rc, &err);
		} else {
			rc.flags = flag_sets[(x >> 12) % 5];
			want = m6_add(mp, &r, rc.flags);
			got = fib_route_add(f, &rc, &err);
		}
		if (got != want)
			fail_msg("op %d (%s): the FIB says %d, the model %d (%s)", op,
				 del ? "del" : "add", got, want, got ? err.msg : "");
		m6_check(f, mp, op);
		if (mp->n) {
			merged += !del && !want && mp->r[0].n > before && before;
			split += del && !want && mp->r[0].n && mp->r[0].n < before;
			ref_set(ref, &mp->p, 1);
		} else {
			ref_del(ref, &mp->p);
		}
		if (op % 64 == 0) {
			/* Lookups: the first route of the longest prefix the model holds. */
			struct addr a = mp->p.a;
			unsigned int plen;
			uint64_t v;
			struct found got_r;
			char s[ADDR_STRLEN];

			a.b[15] ^= (uint8_t)(x >> 20);
			a.b[5] ^= (uint8_t)((x >> 28) & 1);
			addr_format(&a, s, sizeof(s));
			got_r = lookup(f, 0, s);
			if (ref_lookup(ref, &a, &plen, &v)) {
				const struct m6_prefix *lm = NULL;

				for (unsigned int i = 0; i < M6_PREFIXES; i++) {
					if (m[i].p.plen == plen && m[i].n &&
					    m6_contains(&m[i].p, &a))
						lm = &m[i];
				}
				assert_non_null(lm);
				assert_true(got_r.hit);
				assert_int_equal(got_r.plen, plen);
				assert_int_equal(got_r.metric, lm->r[0].metric);
				assert_int_equal(got_r.type, lm->r[0].type);
			} else {
				assert_false(got_r.hit);
			}
		}
		if (op % 1000 == 0 && fib_check(f, &err))
			fail_msg("op %d: %s", op, err.msg);
	}
	/* Both kinds of sibling edits must have happened, or the test tested little. */
	assert_true(merged > 100 && split > 100);
	ref_free(ref);
	free(m);
	assert_int_equal(fib_table_flush(f, 0, AF_UNSPEC), 0);
	assert_int_equal(fib_nh_del(f, 1, &err), 0);
	assert_int_equal(fib_nh_del(f, 2, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_fib_exclusive_create_refuses_existing_route),
		T(test_fib_lookups_pass_routes_whose_every_path_is_dead_by),
		T(test_fib_create_prepends_and_append_appends),
		T(test_fib_identical_route_is_eexist_and_identical_replace_is_noop),
		T(test_fib_replace_replaces_first_route_of_its_metric),
		T(test_fib_change_without_create_needs_an_existing_route),
		T(test_fib_lower_metric_wins_until_deleted),
		T(test_fib_delete_matches_the_fields_given),
		T(test_fib_error_types_take_no_nexthop_and_unicast_needs_one),
		T(test_fib_rejects_host_bits_and_bad_families),
		T(test_fib_routes_share_nexthops_by_value),
		T(test_fib_nexthop_objects_groups_replace_and_delete),
		T(test_fib_tables_are_separate),
		T(test_fib_rules_ask_local_main_default_and_throw_goes_on),
		T(test_fib_ipv6_routes_and_fibmatch_prefix),
		T(test_fib_sync_mem_range_is_enforced),
		T(test_fib_bulk_mode_stays_correct),
		T(test_fib_bulk_deletes_leave_a_valid_trie),
		T(test_fib_exact_metric_delete_and_find),
		T(test_fib_random_churn_keeps_fib_consistent),
		T(test_fib_out_of_memory_leaves_fib_as_it_was),
		T(test_fib_undo_reverts_edits_exactly),
		T(test_fib_undo_release_keeps_edits),
		T(test_addr_parses_masks_and_refuses_host_bits),
		T(test_fib6_gateway_routes_merge_in_the_order_they_came),
		T(test_fib6_deleting_a_gateway_takes_out_its_sibling),
		T(test_fib6_device_routes_and_error_types_stay_apart),
		T(test_fib6_replace_takes_the_route_that_merges_alike),
		T(test_fib6_multipath_needs_gateways_and_distinct_paths),
		T(test_fib6_undo_puts_siblings_back),
		T(test_fib6_random_edits_match_the_kernel_model),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
