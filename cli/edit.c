/* SPDX-License-Identifier: MIT */
/*
 * set and delete: edits of the running configuration. Each is checked
 * here by libyang first, so a wrong value is refused with libyang's words
 * even when the daemon is not running; the daemon checks again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/ctl.h"

static int cli_edit_walk(struct cli *cli, int argc, char **argv, bool want_value,
			 struct cli_walk *w)
{
	if (argc < 2)
		return cli_usage(cli, "%s: which configuration? (try 'help %s')", argv[0], argv[0]);
	cli_walk_init(w, cli_schema_root(cli), "/lcfib:lcfib", CLI_F_CONFIG, want_value);
	return cli_walk_words(cli, w, argv[0], argc - 1, argv + 1);
}

static int cli_edit_send(struct cli *cli, unsigned int flags, const char *payload)
{
	char *reply;
	int ret;

	ret = cli_request(cli, CTL_EDIT, flags, payload, NULL, &reply);
	free(reply);
	return ret;
}

/* What set needs after its path: a value for a leaf, the keys of a list entry. */
static int cli_set_check(struct cli *cli, const struct cli_walk *w, const char **value)
{
	const struct lysc_node *n = w->node;

	*value = w->value;
	if (n->nodetype == LYS_LEAF && !w->value && cli_schema_is_bool(n))
		*value = "true"; /* `set feeds fpm enabled` */
	else if ((n->nodetype & (LYS_LEAF | LYS_LEAFLIST)) && !w->value)
		return cli_usage(cli, "set: %s needs a value (see 'help set')", n->name);
	else if (cli_walk_in_keys(w))
		return cli_usage(cli, "set: %s needs its %s", n->name,
				 cli_walk_pending_value(w)->name);
	else if (n->nodetype == LYS_CONTAINER)
		return cli_usage(cli, "set: %s holds values; name one (see 'help set %s')", n->name,
				 n->name);
	return 0;
}

/* Makes the edit's tree, checks it and prints it as JSON (*@json). */
static int cli_set_build(struct cli *cli, const struct cli_walk *w, const char *value, char **json)
{
	struct lyd_node *tree = NULL, *node;
	char conv[CLI_VALUE_MAX];
	int ret = 0;

	if (value)
		cli_value_convert(w->node, value, conv, sizeof(conv));
	if (lyd_new_path(NULL, cli->ctx, w->xpath, value ? conv : NULL, 0, &node))
		return cli_ly_error(cli, NULL);
	for (tree = node; lyd_parent(tree); tree = lyd_parent(tree))
		;
	/* printed before validation adds the defaults */
	if (lyd_print_mem(json, tree, LYD_JSON, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_SHRINK)) {
		ret = cli_ly_error(cli, NULL);
	} else if (lyd_validate_all(&tree, NULL, LYD_VALIDATE_NO_STATE, NULL)) {
		ret = cli_ly_error(cli, NULL);
		free(*json);
		*json = NULL;
	}
	lyd_free_all(tree);
	return ret;
}

int cli_cmd_set(struct cli *cli, int argc, char **argv)
{
	struct cli_walk w;
	const char *value;
	char *json = NULL;
	int ret;

	ret = cli_edit_walk(cli, argc, argv, true, &w);
	if (!ret)
		ret = cli_set_check(cli, &w, &value);
	if (!ret)
		ret = cli_set_build(cli, &w, value, &json);
	if (!ret)
		ret = cli_edit_send(cli, CTL_EDIT_MERGE, json);
	free(json);
	return ret;
}

int cli_cmd_delete(struct cli *cli, int argc, char **argv)
{
	struct cli_walk w;
	int ret;

	ret = cli_edit_walk(cli, argc, argv, false, &w);
	if (!ret)
		ret = cli_edit_send(cli, CTL_EDIT_DELETE, w.xpath);
	return ret;
}
