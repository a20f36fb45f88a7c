/* SPDX-License-Identifier: MIT */
/*
 * The FIB's route semantics, as netlink defines them (the kernel's
 * fib_table_insert and fib_table_delete), nexthop objects and groups,
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

#include "lib/fib.h"
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

static void test_fib_random_churn_keeps_fib_consistent(void **state)
{
	static const unsigned int flag_sets[] = {
		FIB_F_CREATE | FIB_F_EXCL,    FIB_F_CREATE,  FIB_F_CREATE | FIB_F_APPEND,
		FIB_F_CREATE | FIB_F_REPLACE, FIB_F_REPLACE, 0,
	};
	struct fib *f = *state;
	struct tdata_rng rng;
	struct errbuf err;
	int ok = 0, failed = 0;

	tdata_rng_seed(&rng, tdata_seed(11));
	for (int op = 0; op < 60000; op++) {
		uint64_t x = tdata_rng_next(&rng);
		unsigned int kind = (unsigned int)(x % 16);
		char prefix[32], gw[32];
		int ret;

		snprintf(prefix, sizeof(prefix), "10.%u.%u.0/%u", (unsigned int)(x >> 8) % 4,
			 (unsigned int)(x >> 16) % 4 * 64, 16 + (unsigned int)(x >> 24) % 3 * 4);
		/* Host bits may be set by the length chosen: those adds must fail cleanly. */
		snprintf(gw, sizeof(gw), "192.0.2.%u", 1 + (unsigned int)(x >> 32) % 6);
		if (kind < 7) {
			struct nh_path p = gw4(gw);
			struct fib_rcfg rc;

			memset(&rc, 0, sizeof(rc));
			if (addr_parse_prefix(prefix, AF_INET, &rc.dst, &err))
				continue;
			rc.metric = (uint32_t)(x >> 40) % 3;
			rc.flags = flag_sets[(x >> 44) % 6];
			rc.type = (x >> 48) % 5 == 0 ? FIB_RT_BLACKHOLE : FIB_RT_UNICAST;
			if (rc.type == FIB_RT_UNICAST) {
				if ((x >> 52) % 3 == 0)
					rc.nh_id = 1 + (uint32_t)(x >> 54) % 8;
				else {
					rc.n_paths = 1;
					rc.paths = &p;
				}
			}
			ret = fib_route_add(f, &rc, &err);
		} else if (kind < 11) {
			struct fib_rcfg rc;

			memset(&rc, 0, sizeof(rc));
			if (addr_parse_prefix(prefix, AF_INET, &rc.dst, &err))
				continue;
			rc.metric = (x >> 40) % 2 ? (uint32_t)(x >> 41) % 3 : 0;
			ret = fib_route_del(f, &rc, &err);
		} else if (kind < 14) {
			/* Objects 1..4 single paths, 5..8 groups of them. */
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
			ret = fib_nh_set(
				f, &cfg,
				(x >> 50) % 2 ? FIB_F_CREATE | FIB_F_REPLACE : FIB_F_CREATE, &err);
		} else if (kind < 15) {
			ret = fib_nh_del(f, 1 + (uint32_t)(x >> 40) % 8, &err);
		} else {
			ret = (x >> 40) % 50 ? 0 : fib_table_flush(f, 0, AF_UNSPEC);
		}
		if (ret)
			failed++;
		else
			ok++;
		if (op % 500 == 0) {
			int c = fib_check(f, &err);

			if (c)
				fail_msg("op %d: %s", op, err.msg);
		}
	}
	assert_int_equal(fib_check(f, &err), 0);
	/* Both outcomes must have happened, or the churn tested little. */
	assert_true(ok > 1000 && failed > 1000);
	assert_int_equal(fib_table_flush(f, 0, AF_UNSPEC), 0);
	for (uint32_t id = 5; id <= 8; id++)
		fib_nh_del(f, id, &err);
	for (uint32_t id = 1; id <= 4; id++)
		fib_nh_del(f, id, &err);
	assert_int_equal(fib_check(f, &err), 0);
	fib_reclaim_barrier(f);
	{
		struct fib_state st;

		fib_get_state(f, &st);
		assert_int_equal(st.routes4, 0);
		assert_int_equal(st.nh_anonymous + st.nh_objects, 0);
		assert_int_equal(st.mem.cls[MEM_NH].bytes, 0);
		assert_int_equal(st.mem.cls[MEM_NH_INFO].bytes, 0);
		assert_int_equal(st.mem.cls[MEM_LEAF].bytes, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_fib_exclusive_create_refuses_existing_route),
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
		T(test_fib_ipv6_routes_and_fibmatch_prefix),
		T(test_fib_sync_mem_range_is_enforced),
		T(test_fib_bulk_mode_stays_correct),
		T(test_fib_bulk_deletes_leave_a_valid_trie),
		T(test_fib_exact_metric_delete_and_find),
		T(test_fib_random_churn_keeps_fib_consistent),
		T(test_fib_undo_reverts_edits_exactly),
		T(test_fib_undo_release_keeps_edits),
		T(test_addr_parses_masks_and_refuses_host_bits),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
