/* SPDX-License-Identifier: MIT */
/*
 * The one table of names (lib/names.h): every number written reads back
 * as itself, and the YANG module's enumerations (yang/lcfib.yang, loaded
 * with libyang as lcfibd loads it) have the table's names and numbers, so
 * that lcfibd, lcfibctl and the route-file parser cannot drift apart.
 *
 * Needs LCFIB_SRCDIR (set by `make check`) to find the module.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libyang/libyang.h>

#include "lib/fib.h"
#include "lib/names.h"
#include "lib/nh.h"

static struct ly_ctx *names_ly;

static int names_setup(void **state)
{
	const char *src = getenv("LCFIB_SRCDIR");
	char dir[4096];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/yang", src ? src : ".");
	if (ly_ctx_new(dir, LY_CTX_DISABLE_SEARCHDIR_CWD, &names_ly) != LY_SUCCESS)
		return -1;
	if (!ly_ctx_load_module(names_ly, "lcfib", NULL, NULL)) {
		fprintf(stderr, "cannot load the lcfib module from %s\n", dir);
		return -1;
	}
	return 0;
}

static int names_teardown(void **state)
{
	(void)state;
	ly_ctx_destroy(names_ly);
	return 0;
}

/*
 * The type of the leaf at @path (an RPC's output when it has "/output/"), or
 * the member of type @base of a union.
 */
static const struct lysc_type *names_leaf_type(const char *path, LY_DATA_TYPE base)
{
	const char *io = strstr(path, "/output/") ? "/output/" : "/input/";
	char spath[256];
	const struct lysc_node *n;
	const char *at = strstr(path, io);

	/* a schema path names no input or output: lys_find_path's flag says which */
	if (at)
		snprintf(spath, sizeof(spath), "%.*s/%s", (int)(at - path), path, at + strlen(io));
	else
		snprintf(spath, sizeof(spath), "%s", path);
	n = lys_find_path(names_ly, NULL, spath, at && io[1] == 'o');
	const struct lysc_type *t;

	if (!n)
		fail_msg("%s: no such node in the module", path);
	t = ((const struct lysc_node_leaf *)n)->type;
	if (t->basetype == LY_TYPE_UNION) {
		const struct lysc_type_union *u = (const struct lysc_type_union *)t;
		LY_ARRAY_COUNT_TYPE i;

		LY_ARRAY_FOR(u->types, i)
		if (u->types[i]->basetype == base)
			return u->types[i];
		fail_msg("%s: the union has no member of type %d", path, (int)base);
	}
	if (t->basetype != base)
		fail_msg("%s: type %d, not %d", path, (int)t->basetype, (int)base);
	return t;
}

/*
 * Each enum (or bit) of the leaf at @path has a name of @n with its number
 * (@by_value) or its place in the table (the bits' positions); each name
 * of @n but @skip, an alias or one the module has no use for, is an enum.
 */
static void names_check_enums(const char *path, const struct names *n, bool bits, bool by_value,
			      const char *skip)
{
	const struct lysc_type *t = names_leaf_type(path, bits ? LY_TYPE_BITS : LY_TYPE_ENUM);
	const struct lysc_type_bitenum_item *items =
		bits ? ((const struct lysc_type_bits *)t)->bits
		     : ((const struct lysc_type_enum *)t)->enums;
	LY_ARRAY_COUNT_TYPE i, found = 0;

	LY_ARRAY_FOR(items, i)
	{
		const struct names_entry *e;
		uint32_t id, at = 0;

		if (!names_lookup(n, items[i].name, strlen(items[i].name), &id))
			fail_msg("%s: enum '%s' is not in lib/names.c", path, items[i].name);
		for (e = n->e; strcmp(e->name, items[i].name); e++)
			at++;
		if (by_value && (uint32_t)items[i].value != id)
			fail_msg("%s: enum '%s' is %d in the module, %u in lib/names.c", path,
				 items[i].name, items[i].value, id);
		if (bits && items[i].position != at)
			fail_msg("%s: bit '%s' is at %u in the module, %u in lib/names.c", path,
				 items[i].name, items[i].position, at);
		found++;
	}
	for (const struct names_entry *e = n->e; e->name; e++) {
		bool in = false;

		LY_ARRAY_FOR(items, i)
		in = in || !strcmp(items[i].name, e->name);
		if (!in && (!skip || strcmp(skip, e->name)))
			fail_msg("%s: '%s' of lib/names.c is not in the module", path, e->name);
	}
	assert_true(found > 0);
}

static void test_names_yang_enums_are_the_tables(void **state)
{
	(void)state;
	names_check_enums("/lcfib:route-add/input/table", &names_table, false, true, NULL);
	names_check_enums("/lcfib:route-add/input/type", &names_rtype, false, true, NULL);
	names_check_enums("/lcfib:lookup/output/type", &names_rtype, false, true, NULL);
	/* `change` is the route files' alone: the RPC has no such operation */
	names_check_enums("/lcfib:route-add/input/operation", &names_route_op, false, false,
			  "change");
	names_check_enums("/lcfib:lookup/output/nexthop/flags", &names_nh_flag, true, false, NULL);
}

/* Every number, named or not, is written as something that reads back as it. */
static void names_check_round_trip(const struct names *n, uint32_t upto)
{
	char buf[NAMES_NUMBER_LEN];

	for (uint32_t id = 0; id <= upto; id++) {
		const char *s = names_format(n, id, buf, sizeof(buf));
		uint32_t back = ~id;

		if (!names_parse_str(n, s, &back) || back != id)
			fail_msg("%s: %u is written '%s', which reads as %u", n->what, id, s, back);
	}
}

static void test_names_every_number_round_trips(void **state)
{
	char buf[NAMES_NUMBER_LEN];
	uint32_t id;

	(void)state;
	names_check_round_trip(&names_proto, 255);
	names_check_round_trip(&names_scope, 255);
	names_check_round_trip(&names_table, 65535);
	names_check_round_trip(&names_rtype, FIB_RT_MAX);
	assert_string_equal(names_format(&names_table, UINT32_MAX, buf, sizeof(buf)), "4294967295");
	assert_true(names_parse_str(&names_table, "4294967295", &id) && id == UINT32_MAX);
	/* RTPROT_MROUTED has no name in iproute2's rt_protos: written and read as 17 */
	assert_string_equal(names_format(&names_proto, 17, buf, sizeof(buf)), "17");
	assert_false(names_parse_str(&names_proto, "mrouted", &id));
	assert_false(names_parse_str(&names_proto, "256", &id));
	assert_true(names_parse_str(&names_scope, "universe", &id) && id == 0);
	assert_string_equal(names_name(&names_scope, 0), "global");
	assert_true(names_parse_str(&names_proto, "0xba", &id) && id == 186);
}

static void test_names_flags_are_written_in_the_tables_order(void **state)
{
	char buf[32];

	(void)state;
	assert_false(names_flags_format(&names_nh_flag, 0, buf, sizeof(buf)));
	assert_string_equal(buf, "");
	assert_true(names_flags_format(&names_nh_flag, NH_F_ONLINK | NH_F_DEAD | NH_F_SRC, buf,
				       sizeof(buf)));
	assert_string_equal(buf, "dead onlink");
	assert_true(names_flags_format(&names_nh_flag, NH_F_LINKDOWN, buf, sizeof(buf)));
	assert_string_equal(buf, "linkdown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_yang_enums_are_the_tables),
		cmocka_unit_test(test_names_every_number_round_trips),
		cmocka_unit_test(test_names_flags_are_written_in_the_tables_order),
	};

	return cmocka_run_group_tests(tests, names_setup, names_teardown);
}
