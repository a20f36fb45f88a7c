/* SPDX-License-Identifier: MIT */
/*
 * help: the commands, and each one's words with their types, units,
 * defaults and descriptions, all read from the schema.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "cli/cli.h"

#define CLI_HELP_WIDTH 79
#define CLI_DSC_MAX    2048

/* A blank that does not break a line: it keeps "[table TABLE]" together. */
#define CLI_NBSP '\x01'

static void cli_help_word(FILE *f, const char *w, int n)
{
	int i;

	for (i = 0; i < n; i++)
		fputc(w[i] == CLI_NBSP ? ' ' : w[i], f);
}

/* Prints @text from column @col, wrapping at words onto lines indented to @col. */
static void cli_help_wrap(FILE *f, const char *text, int col)
{
	int at = col;

	while (*text) {
		int n = (int)strcspn(text, " ");

		if (at > col && at + 1 + n > CLI_HELP_WIDTH) {
			fprintf(f, "\n%*s", col, "");
			at = col;
		} else if (at > col) {
			fputc(' ', f);
			at++;
		}
		cli_help_word(f, text, n);
		at += n;
		text += n;
		while (*text == ' ')
			text++;
	}
	fputc('\n', f);
}

struct cli_help_list {
	FILE *f;
	int width;
};

static void cli_help_item(void *arg, const char *word, const char *help)
{
	struct cli_help_list *l = arg;

	fprintf(l->f, "  %-*s  ", l->width, word);
	cli_help_wrap(l->f, help ? help : "", l->width + 4);
}

void cli_commands(struct cli *cli, void (*fn)(void *arg, const char *word, const char *help),
		  void *arg)
{
	const struct lysc_node_action *rpc;
	const struct cli_cmd *cmd;
	char dsc[CLI_DSC_MAX];

	for (cmd = cli_cmds; cmd->name; cmd++)
		if (strcmp(cmd->name, "?"))
			fn(arg, cmd->name, cmd->help);
	for (rpc = cli->mod->compiled->rpcs; rpc; rpc = (const struct lysc_node_action *)rpc->next)
		fn(arg, rpc->name, cli_schema_dsc(rpc->dsc, true, dsc, sizeof(dsc)));
	if (cli->shell) {
		fn(arg, "quit", "Leaves the shell.");
		fn(arg, "exit", "Leaves the shell.");
	}
}

static int cli_help_list(struct cli *cli)
{
	struct cli_help_list l = { stdout, 12 };

	printf("Commands:\n");
	cli_commands(cli, cli_help_item, &l);
	printf("\n'help COMMAND' shows a command's words; TAB completes them in the shell.\n");
	return 0;
}

/* ------------------------------------------------------------ keywords */

static void cli_upper(const char *s, char *buf, size_t size)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < size; i++)
		buf[i] = (char)toupper((unsigned char)s[i]);
	buf[i] = '\0';
}

/* "65536..67108864 bytes (K, M, G suffixes); default 524288; mandatory" */
static void cli_help_type(struct cli *cli, const struct lysc_node *n, char *buf, size_t size)
{
	const char *units = cli_schema_units(n), *dflt = cli_schema_default(cli, n);
	size_t len;

	cli_schema_type_text(n, buf, size);
	len = strlen(buf);
	/* what the user types (config, an RPC's input) takes sizes with suffixes */
	if (units && len < size)
		len += (size_t)snprintf(buf + len, size - len, " %s%s", units,
					!strcmp(units, "bytes") && !(n->flags & LYS_CONFIG_R)
						? " (K, M, G, T suffixes)"
						: "");
	if (dflt && len < size)
		len += (size_t)snprintf(buf + len, size - len, "; default %s", dflt);
	if ((n->flags & LYS_MAND_TRUE) && len < size)
		snprintf(buf + len, size - len, "; mandatory");
}

static void cli_help_node(struct cli *cli, const struct lysc_node *n, const char *words, int indent)
{
	char type[CLI_DSC_MAX], dsc[CLI_DSC_MAX];

	printf("%*s%s\n", indent, "", words);
	if (n->nodetype & (LYS_LEAF | LYS_LEAFLIST)) {
		cli_help_type(cli, n, type, sizeof(type));
		printf("%*s", indent + 4, "");
		cli_help_wrap(stdout, type, indent + 4);
	}
	if (n->dsc) {
		printf("%*s", indent + 4, "");
		cli_help_wrap(stdout, cli_schema_dsc(n->dsc, false, dsc, sizeof(dsc)), indent + 4);
	}
}

/* The words of a list: its name, then its keys as placeholders. */
static void cli_list_words(const struct lysc_node *list, char *buf, size_t size)
{
	const struct lysc_node *k;
	char up[64];
	size_t len = strlen(buf);

	for (k = lysc_node_child(list); k && lysc_is_key(k) && len < size; k = k->next) {
		cli_upper(k->name, up, sizeof(up));
		len += (size_t)snprintf(buf + len, size - len, " %s", up);
	}
}

/* Every leaf under @parent as the words that reach it (`feeds fpm port VALUE`). */
static void cli_help_tree(struct cli *cli, const struct lysc_node *parent, enum cli_filter filter,
			  const char *prefix, bool values)
{
	const struct lysc_node *n = NULL;
	char words[512];

	while ((n = cli_schema_next(n, parent, filter))) {
		if (lysc_is_key(n))
			continue;
		snprintf(words, sizeof(words), "%s%s%s", prefix, *prefix ? " " : "", n->name);
		if (n->nodetype == LYS_LIST) {
			cli_list_words(n, words, sizeof(words));
			cli_help_node(cli, n, words, 2);
		}
		if (n->nodetype & (LYS_CONTAINER | LYS_LIST)) {
			cli_help_tree(cli, n, filter, words, values);
			continue;
		}
		if (values)
			strncat(words, " VALUE", sizeof(words) - strlen(words) - 1);
		cli_help_node(cli, n, words, 2);
	}
}

/* `help set [PATH...]`, `help delete`, `help show state [NODE...]`. */
static int cli_help_paths(struct cli *cli, const struct lysc_node *root, const char *xpath,
			  enum cli_filter filter, bool values, int argc, char **argv)
{
	char prefix[512] = "";
	size_t len = 0;
	struct cli_walk w;
	int i, ret;

	cli_walk_init(&w, root, xpath, filter, false);
	ret = cli_walk_words(cli, &w, "help", argc, argv);
	if (ret)
		return ret;
	for (i = 0; i < argc; i++) {
		len += (size_t)snprintf(prefix + len, sizeof(prefix) - len, "%s%s", i ? " " : "",
					argv[i]);
		if (len >= sizeof(prefix))
			return cli_usage(cli, "help: the path is too long");
	}
	if (w.node->nodetype & (LYS_LEAF | LYS_LEAFLIST)) {
		if (values)
			strncat(prefix, " VALUE", sizeof(prefix) - strlen(prefix) - 1);
		cli_help_node(cli, w.node, prefix, 2);
		return 0;
	}
	cli_help_tree(cli, w.node, filter, prefix, values);
	return 0;
}

static int cli_help_edit(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	bool set = !strcmp(cmd->name, "set");

	printf("%s %s\n  ", cmd->name, cmd->synopsis);
	cli_help_wrap(stdout, cmd->help, 2);
	if (set)
		printf("  A boolean alone means true; sizes take K, M, G, T (powers of 1024).\n");
	printf("\n");
	return cli_help_paths(cli, cli_schema_root(cli), "/lcfib:lcfib", CLI_F_CONFIG, set,
			      argc - 2, argv + 2);
}

static int cli_help_show(struct cli *cli, int argc, char **argv)
{
	const struct lysc_node *state = cli_schema_child(cli_schema_root(cli), "state", CLI_F_ANY);
	struct cli_help_list l = { stdout, 12 };

	if (argc > 2 && !strcmp(argv[2], "state"))
		return cli_help_paths(cli, state, "/lcfib:lcfib/state", CLI_F_ANY, false, argc - 3,
				      argv + 3);
	if (argc > 2 && !strcmp(argv[2], "config"))
		return cli_help_paths(cli, cli_schema_root(cli), "/lcfib:lcfib", CLI_F_CONFIG,
				      false, argc - 3, argv + 3);
	printf("show WHAT [ARGS...]\n");
	cli_show_words(cli, cli_help_item, &l);
	printf("\n'help show state [NODE...]' and 'help show config' list what they hold.\n");
	return 0;
}

static int cli_help_route(void)
{
	printf("route add|del|replace|append|prepend [TYPE] PREFIX [via GW] [dev IF] [metric N]\n"
	       "      [table ID] [proto P] [scope S] [nexthop via GW [dev IF] [weight W]]...\n");
	printf("  ");
	cli_help_wrap(stdout,
		      "Adds or deletes a route in the syntax of 'ip route' (and of route files): "
		      "add fails if a route of the prefix and metric exists, replace replaces it, "
		      "append and prepend add after or before it; del deletes the first route "
		      "that matches what is given. Runtime-only, as with 'ip route': a restart "
		      "forgets these edits (recorded route files load again). A key (table, "
		      "prefix, metric) the kernel or FPM feed holds is refused, naming the "
		      "feed; a feed never touches the operator's routes. TYPE is unicast (the default), local, "
		      "broadcast, anycast, multicast, blackhole, unreachable, prohibit or throw; "
		      "PREFIX may be 'default'. It runs the route-add or route-delete operation.",
		      2);
	return 0;
}

/* ----------------------------------------------------------------- RPCs */

static void cli_rpc_synopsis(const struct lysc_node *rpc, char *buf, size_t size)
{
	const struct lysc_node *pos = cli_rpc_positional(rpc), *n = NULL;
	size_t len = (size_t)snprintf(buf, size, "%s", rpc->name);
	char up[64];

	while ((n = cli_schema_next(n, rpc, CLI_F_ANY)) && len < size) {
		bool opt = !(n->flags & LYS_MAND_TRUE);

		cli_upper(n->name, up, sizeof(up));
		if (n == pos)
			len += (size_t)snprintf(buf + len, size - len, opt ? " [%s]" : " %s", up);
		else if (n->nodetype & (LYS_LIST | LYS_CONTAINER))
			len += (size_t)snprintf(buf + len, size - len, " [%s\x01...]%s", n->name,
						n->nodetype == LYS_LIST ? "..." : "");
		else if (cli_schema_is_bool(n))
			len += (size_t)snprintf(buf + len, size - len, " [%s]", n->name);
		else
			len += (size_t)snprintf(buf + len, size - len,
						opt ? " [%s\x01%s]" : " %s\x01%s", n->name, up);
	}
}

static void cli_help_inputs(struct cli *cli, const struct lysc_node *parent,
			    const struct lysc_node *pos, int indent)
{
	const struct lysc_node *n = NULL;
	char words[256], up[64];

	while ((n = cli_schema_next(n, parent, CLI_F_ANY))) {
		cli_upper(n->name, up, sizeof(up));
		if (n->nodetype & (LYS_LIST | LYS_CONTAINER))
			snprintf(words, sizeof(words), "%s ...%s", n->name,
				 n->nodetype == LYS_LIST ? " (each starts an entry)" : "");
		else if (cli_schema_is_bool(n))
			snprintf(words, sizeof(words), "%s [true|false]", n->name);
		else
			snprintf(words, sizeof(words), "%s %s%s", n->name, up,
				 n == pos ? " (first, the keyword may be left out)" : "");
		cli_help_node(cli, n, words, indent);
		if (n->nodetype & (LYS_LIST | LYS_CONTAINER))
			cli_help_inputs(cli, n, NULL, indent + 4);
	}
}

static int cli_help_rpc(struct cli *cli, const struct lysc_node *rpc)
{
	char buf[1024];

	cli_rpc_synopsis(rpc, buf, sizeof(buf));
	cli_help_wrap(stdout, buf, 4);
	printf("  ");
	cli_help_wrap(stdout, cli_schema_dsc(rpc->dsc, false, buf, sizeof(buf)), 2);
	printf("\n");
	cli_help_inputs(cli, rpc, cli_rpc_positional(rpc), 2);
	return 0;
}

int cli_cmd_help(struct cli *cli, int argc, char **argv)
{
	const struct cli_cmd *cmd;
	const struct lysc_node *rpc;

	if (argc < 2)
		return cli_help_list(cli);
	rpc = cli_schema_rpc(cli, argv[1]);
	cmd = cli_cmd_find(argv[1]);
	if (cmd && cmd->run == cli_cmd_set)
		return cli_help_edit(cli, cmd, argc, argv);
	if (cmd && cmd->run == cli_cmd_delete)
		return cli_help_edit(cli, cmd, argc, argv);
	if (cmd && cmd->run == cli_cmd_show)
		return cli_help_show(cli, argc, argv);
	if (cmd && cmd->run == cli_cmd_route)
		return cli_help_route();
	if (cmd) {
		printf("%s %s\n  ", cmd->name, cmd->synopsis);
		cli_help_wrap(stdout, cmd->help, 2);
		return 0;
	}
	if (rpc)
		return cli_help_rpc(cli, rpc);
	if (cli->shell && (!strcmp(argv[1], "quit") || !strcmp(argv[1], "exit"))) {
		printf("%s\n  Leaves the shell.\n", argv[1]);
		return 0;
	}
	return cli_usage(cli, "help: no command '%s' (try 'help')", argv[1]);
}
