/* SPDX-License-Identifier: MIT */
/*
 * show: gets of state and config, and short names for common ones. Every
 * container of the state is a `show` word of its own (`show memory`), so a
 * new one in the module is a new word here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/ctl.h"
#include "lib/names.h"

#define CLI_STATE_XPATH "/lcfib:lcfib/state"

static const struct lysc_node *cli_state_node(struct cli *cli)
{
	return cli_schema_child(cli_schema_root(cli), "state", CLI_F_ANY);
}

/* Groups of consecutive matches print together, so a list's entries make one table. */
static void cli_show_matches(struct cli *cli, const struct ly_set *set)
{
	uint32_t i, j;

	if (set->count == 1 && set->dnodes[0]->schema->nodetype == LYS_CONTAINER) {
		cli_print_tree(cli, stdout, lyd_child(set->dnodes[0]), 0);
		return;
	}
	for (i = 0; i < set->count; i = j) {
		for (j = i + 1; j < set->count && set->dnodes[j - 1]->next == set->dnodes[j]; j++)
			;
		cli_print_span(cli, stdout, set->dnodes[i], set->dnodes[j - 1]->next, 0);
	}
}

static int cli_show_print(struct cli *cli, const struct lyd_node *tree, const char *xpath)
{
	struct ly_set *set;
	uint32_t count = 0;

	if (cli->json)
		return cli_print_json(cli, tree);
	if (tree) {
		if (lyd_find_xpath(tree, xpath, &set))
			return cli_ly_error(cli, "the daemon's reply");
		count = set->count;
		if (count)
			cli_show_matches(cli, set);
		ly_set_free(set, NULL);
	}
	if (!count && !cli->quiet)
		fprintf(stderr, "%s: nothing at %s\n", CLI_NAME, xpath);
	return 0;
}

static int cli_show_get(struct cli *cli, unsigned int flags, const char *xpath)
{
	struct lyd_node *tree = NULL;
	char *reply;
	int ret;

	ret = cli_request(cli, CTL_GET, flags, xpath, NULL, &reply);
	if (ret)
		return ret;
	if (lyd_parse_data_mem(cli->ctx, reply, LYD_JSON, LYD_PARSE_ONLY | LYD_PARSE_STRICT, 0,
			       &tree))
		ret = cli_ly_error(cli, "the daemon's reply");
	else
		ret = cli_show_print(cli, tree, xpath);
	lyd_free_all(tree);
	free(reply);
	return ret;
}

/* Walks @argc words from @w's start, then gets what they name. */
static int cli_show_walk(struct cli *cli, struct cli_walk *w, unsigned int flags, int argc,
			 char **argv)
{
	int ret = cli_walk_words(cli, w, "show", argc, argv);

	return ret ? ret : cli_show_get(cli, flags, w->xpath);
}

static int cli_show_state(struct cli *cli, int argc, char **argv)
{
	struct cli_walk w;

	cli_walk_init(&w, cli_state_node(cli), CLI_STATE_XPATH, CLI_F_ANY, false);
	return cli_show_walk(cli, &w, CTL_GET_STATE, argc - 2, argv + 2);
}

static int cli_show_config(struct cli *cli, int argc, char **argv)
{
	struct cli_walk w;

	cli_walk_init(&w, cli_schema_root(cli), "/lcfib:lcfib", CLI_F_CONFIG, false);
	return cli_show_walk(cli, &w, CTL_GET_CONFIG, argc - 2, argv + 2);
}

/* The number of table @name into @buf, or @name itself when it is no name (a number). */
static const char *cli_table_number(const char *name, char *buf, size_t size)
{
	uint32_t id;

	if (!names_lookup(&names_table, name, strlen(name), &id))
		return name;
	snprintf(buf, size, "%u", id);
	return buf;
}

/* `show trie [TABLE [FAMILY]]`: the state's table list, by name or number. */
static int cli_show_trie(struct cli *cli, int argc, char **argv)
{
	char *words[3] = { (char *)"table", NULL, NULL };
	char table[NAMES_NUMBER_LEN];
	struct cli_walk w;

	if (argc > 4)
		return cli_usage(cli, "show trie [TABLE [FAMILY]]: '%s' is one word too many",
				 argv[4]);
	if (argc > 2)
		words[1] = (char *)cli_table_number(argv[2], table, sizeof(table));
	if (argc > 3)
		words[2] = argv[3];
	cli_walk_init(&w, cli_state_node(cli), CLI_STATE_XPATH, CLI_F_ANY, false);
	return cli_show_walk(cli, &w, CTL_GET_STATE, argc - 1, words);
}

static int cli_show_routes(struct cli *cli, int argc, char **argv)
{
	return cli_cmd_rpc(cli, argc - 1, argv + 1);
}

static int cli_show_metrics(struct cli *cli, int argc, char **argv)
{
	if (argc > 2)
		return cli_usage(cli, "show metrics: '%s' is one word too many", argv[2]);
	return cli_cmd_rpc(cli, 1, argv + 1);
}

struct cli_show_sub {
	const char *name;
	const char *help;
	int (*run)(struct cli *cli, int argc, char **argv);
};

static const struct cli_show_sub cli_show_subs[] = {
	{ "state", "Operational state: all of it, or the part named ([NODE...]).", cli_show_state },
	{ "config", "The running configuration, or the part named ([NODE...]).", cli_show_config },
	{ "trie", "Each table's LC-trie, like /proc/net/fib_triestat ([TABLE [FAMILY]]).",
	  cli_show_trie },
	{ "routes",
	  "Routes, as 'ip route' lists them ([PREFIX] [table T] [limit N] [family F] "
	  "[protocol P] [interface D] [type T] [summary]).",
	  cli_show_routes },
	{ "metrics", "The state in Prometheus's text format, as the metrics endpoint serves it.",
	  cli_show_metrics },
	{ NULL, NULL, NULL },
};

static const struct cli_show_sub *cli_show_find(const char *name)
{
	const struct cli_show_sub *s;

	for (s = cli_show_subs; s->name; s++)
		if (!strcmp(s->name, name))
			return s;
	return NULL;
}

void cli_show_words(struct cli *cli, void (*fn)(void *arg, const char *word, const char *help),
		    void *arg)
{
	const struct lysc_node *n = NULL, *state = cli_state_node(cli);
	const struct cli_show_sub *s;
	char dsc[512];

	for (s = cli_show_subs; s->name; s++)
		fn(arg, s->name, s->help);
	while ((n = cli_schema_next(n, state, CLI_F_ANY)))
		if (!cli_show_find(n->name))
			fn(arg, n->name, cli_schema_dsc(n->dsc, true, dsc, sizeof(dsc)));
}

int cli_cmd_show(struct cli *cli, int argc, char **argv)
{
	const struct cli_show_sub *s;
	struct cli_walk w;

	if (argc < 2)
		return cli_usage(cli, "show what? (try 'help show')");
	s = cli_show_find(argv[1]);
	if (s)
		return s->run(cli, argc, argv);
	/* `show memory ...` is `show state memory ...` */
	if (!cli_schema_child(cli_state_node(cli), argv[1], CLI_F_ANY))
		return cli_usage(cli, "show: '%s' is not something to show (try 'help show')",
				 argv[1]);
	cli_walk_init(&w, cli_state_node(cli), CLI_STATE_XPATH, CLI_F_ANY, false);
	return cli_show_walk(cli, &w, CTL_GET_STATE, argc - 1, argv + 1);
}
