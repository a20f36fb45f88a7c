/* SPDX-License-Identifier: MIT */
/*
 * The state tree as Prometheus metrics (daemon/metrics.c): names, types,
 * units and labels read off the YANG module (yang/lcfib.yang, loaded as
 * lcfibd loads it), one TYPE line per family with its samples together.
 * tests/e2e/test_metrics.sh scrapes a running lcfibd with a real parser.
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

#include "daemon/metrics.h"

static const char state_json[] =
	"{\"lcfib:lcfib\":{\"state\":{"
	"\"daemon\":{\"version\":\"0.1.0\",\"pid\":42,\"uptime\":\"7\"},"
	"\"routes\":{\"ipv4\":\"3\",\"ipv6\":\"1\"},"
	"\"table\":[{\"id\":254,\"family\":\"ipv4\",\"routes\":\"3\",\"bytes\":\"4096\","
	"\"leaf-bytes\":\"96\",\"average-depth\":\"1.5\",\"nodes-by-bits\":[{\"bits\":2,\"nodes\":\"1\"}]},"
	"{\"id\":254,\"family\":\"ipv6\",\"routes\":\"1\",\"bytes\":\"2048\"}],"
	"\"reclamation\":{\"sync-mem\":524288,\"forced-waits\":\"12\",\"wait-time\":\"1500000\","
	"\"longest-wait\":\"250\"},"
	"\"memory\":{\"class\":[{\"name\":\"tnode\",\"bytes\":\"64\",\"objects\":\"2\"}]}"
	"}}}";

static char *metrics_of(const char *json, const char **what)
{
	const char *src = getenv("LCFIB_SRCDIR");
	struct lyd_node *tree = NULL, *state = NULL;
	struct ly_ctx *ly;
	char dir[4096], *buf = NULL;
	size_t len = 0;
	FILE *out;

	*what = NULL;
	snprintf(dir, sizeof(dir), "%s/yang", src ? src : ".");
	assert_int_equal(ly_ctx_new(dir, LY_CTX_DISABLE_SEARCHDIR_CWD | LY_CTX_SET_PRIV_PARSED, &ly),
			 LY_SUCCESS);
	assert_non_null(ly_ctx_load_module(ly, "lcfib", NULL, NULL));
	assert_int_equal(lyd_parse_data_mem(ly, json, LYD_JSON, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0,
					    &tree),
			 LY_SUCCESS);
	assert_int_equal(lyd_find_path(tree, "/lcfib:lcfib/state", 0, &state), LY_SUCCESS);
	out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(metrics_write(state, out), 0);
	fclose(out);
	lyd_free_all(tree);
	ly_ctx_destroy(ly);
	return buf;
}

static unsigned int count(const char *hay, const char *needle)
{
	unsigned int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void has(const char *text, const char *line)
{
	if (!strstr(text, line))
		fail_msg("no line \"%s\" in:\n%s", line, text);
}

static void test_metrics_counters_gauges_units_and_labels(void **state)
{
	const char *what;
	char *m = metrics_of(state_json, &what);

	(void)state;
	/* yang:counter64 is a counter; microseconds are seconds */
	has(m, "# TYPE lcfib_reclamation_forced_waits_total counter\n"
	       "lcfib_reclamation_forced_waits_total 12\n");
	has(m, "\nlcfib_reclamation_wait_time_seconds_total 1.500000\n");
	/* a plain number is a gauge; bytes end the name once */
	has(m, "# TYPE lcfib_reclamation_longest_wait_seconds gauge\n"
	       "lcfib_reclamation_longest_wait_seconds 0.000250\n");
	has(m, "\nlcfib_reclamation_sync_mem_bytes 524288\n");
	has(m, "\nlcfib_table_bytes{table=\"254\",family=\"ipv4\"} 4096\n");
	has(m, "\nlcfib_table_leaf_bytes{table=\"254\",family=\"ipv4\"} 96\n");
	has(m, "\nlcfib_table_average_depth{table=\"254\",family=\"ipv4\"} 1.5\n");
	has(m, "\nlcfib_table_nodes_by_bits_nodes{table=\"254\",family=\"ipv4\",bits=\"2\"} 1\n");
	has(m, "\nlcfib_memory_class_objects{class=\"tnode\"} 2\n");
	has(m, "\nlcfib_daemon_uptime_seconds 7\n");
	has(m, "\nlcfib_daemon_info{version=\"0.1.0\"} 1\n");
	has(m, "# HELP lcfib_routes_ipv4 ");
	/* the two tables' samples under one TYPE line, together */
	assert_int_equal(count(m, "# TYPE lcfib_table_routes gauge\n"), 1);
	has(m, "# TYPE lcfib_table_routes gauge\n"
	       "lcfib_table_routes{table=\"254\",family=\"ipv4\"} 3\n"
	       "lcfib_table_routes{table=\"254\",family=\"ipv6\"} 1\n");
	/* keys are labels, not samples; strings other than the version are left out */
	assert_null(strstr(m, "lcfib_table_id"));
	assert_null(strstr(m, "lcfib_daemon_version"));
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_counters_gauges_units_and_labels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
