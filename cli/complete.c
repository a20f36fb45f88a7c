/* SPDX-License-Identifier: MIT */
/*
 * Completion: what may come next after the words so far. One engine for
 * the shell's TAB and `lcfibctl __complete` (for a bash completion
 * script), so both offer the same words.
 */
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/ctl.h"
#include "lib/names.h"

void cli_cand(struct cli_cands *c, const char *word, const char *help)
{
	if (!strncmp(word, c->partial, strlen(c->partial)))
		c->add(c, word, help);
}

static void cli_cand_fn(void *arg, const char *word, const char *help)
{
	cli_cand(arg, word, help);
}

static void cli_cand_list(struct cli_cands *c, const char *const *words)
{
	for (; *words; words++)
		cli_cand(c, *words, NULL);
}

/* The names of @n (lib/names.h), without the aliases. */
static void cli_cand_names(struct cli_cands *c, const struct names *n)
{
	for (const struct names_entry *e = n->e; e->name; e++)
		if (names_name(n, e->id) == e->name)
			cli_cand(c, e->name, NULL);
}

static void cli_cand_children(struct cli_cands *c, const struct lysc_node *parent,
			      enum cli_filter filter)
{
	const struct lysc_node *n = NULL;
	char dsc[512];

	while ((n = cli_schema_next(n, parent, filter)))
		if (!lysc_is_key(n))
			cli_cand(c, n->name, cli_schema_dsc(n->dsc, true, dsc, sizeof(dsc)));
}

static void cli_cand_values(struct cli_cands *c, const struct lysc_node *leaf)
{
	if (!leaf)
		return;
	cli_schema_value_names(leaf, cli_cand_fn, c);
	/* a leaf named path takes a file name */
	if (!strcmp(leaf->name, "path"))
		c->file = true;
}

/* Files and directories that start with the partial word (directories end in '/'), sorted. */
static void cli_cand_files(struct cli_cands *c)
{
	const char *slash = strrchr(c->partial, '/'), *base;
	char dir[4096], word[4096 + 256];
	struct dirent **names;
	int n, i;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - c->partial + 1) : 0, c->partial);
	base = slash ? slash + 1 : c->partial;
	n = scandir(dir[0] ? dir : ".", &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		const struct dirent *d = names[i];

		if (!strncmp(d->d_name, base, strlen(base)) && strcmp(d->d_name, ".") &&
		    strcmp(d->d_name, "..") && (d->d_name[0] != '.' || base[0] == '.')) {
			snprintf(word, sizeof(word), "%s%s%s", dir, d->d_name,
				 d->d_type == DT_DIR ? "/" : "");
			cli_cand(c, word, NULL);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

/* ------------------------------------------------------------ set/delete */

/* The walk along @argc words from @root; false if a word does not fit. */
static bool cli_complete_walk(struct cli_walk *w, int argc, char **argv)
{
	char msg[512];
	int i;

	for (i = 0; i < argc; i++)
		if (cli_walk_step(w, argv[i], msg, sizeof(msg)))
			return false;
	return true;
}

/*
 * The values key @key has in the running config's entries of the list at
 * @xpath: what a delete can name. No daemon, no candidates (and no message
 * in the middle of the line being typed).
 */
static void cli_cand_entries(struct cli *cli, struct cli_cands *c, const char *xpath,
			     const struct lysc_node *key)
{
	struct lyd_node *tree = NULL, *k;
	struct ly_set *set = NULL;
	char *reply = NULL;
	uint32_t i;

	cli->mute = true;
	if (!cli_request(cli, CTL_GET, CTL_GET_CONFIG, xpath, NULL, &reply) &&
	    !lyd_parse_data_mem(cli->ctx, reply, LYD_JSON, LYD_PARSE_ONLY, 0, &tree) && tree &&
	    !lyd_find_xpath(tree, xpath, &set)) {
		for (i = 0; i < set->count; i++)
			if (!lyd_find_sibling_val(lyd_child(set->dnodes[i]), key, NULL, 0, &k))
				cli_cand(c, lyd_get_value(k), NULL);
	}
	cli->mute = false;
	ly_set_free(set, NULL);
	lyd_free_all(tree);
	free(reply);
}

/* @existing: a delete, which names what the config has, not what could be set. */
static void cli_complete_path(struct cli *cli, struct cli_cands *c, struct cli_walk *w, int argc,
			      char **argv, bool existing)
{
	const struct lysc_node *pending;

	if (!cli_complete_walk(w, argc, argv))
		return;
	pending = cli_walk_pending_value(w);
	if (pending && existing && w->node->nodetype == LYS_LIST)
		cli_cand_entries(cli, c, w->xpath, pending);
	else if (pending && (w->want_value || w->node->nodetype == LYS_LIST))
		cli_cand_values(c, pending);
	else if (w->node->nodetype & (LYS_CONTAINER | LYS_LIST))
		cli_cand_children(c, w->node, w->filter);
}

void cli_complete_set(struct cli *cli, int argc, char **argv, struct cli_cands *c)
{
	struct cli_walk w;

	cli_walk_init(&w, cli_schema_root(cli), "/lcfib:lcfib", CLI_F_CONFIG, true);
	cli_complete_path(cli, c, &w, argc - 1, argv + 1, false);
}

void cli_complete_delete(struct cli *cli, int argc, char **argv, struct cli_cands *c)
{
	struct cli_walk w;

	cli_walk_init(&w, cli_schema_root(cli), "/lcfib:lcfib", CLI_F_CONFIG, false);
	cli_complete_path(cli, c, &w, argc - 1, argv + 1, true);
}

/* ------------------------------------------------------------------ show */

static void cli_complete_trie(struct cli *cli, int argc, struct cli_cands *c)
{
	const struct lysc_node *state = cli_schema_child(cli_schema_root(cli), "state", CLI_F_ANY);
	const struct lysc_node *list = cli_schema_child(state, "table", CLI_F_ANY);

	if (argc == 2)
		cli_cand_names(c, &names_table);
	else if (argc == 3 && list)
		cli_cand_values(c, cli_schema_child(list, "family", CLI_F_ANY));
}

void cli_complete_show(struct cli *cli, int argc, char **argv, struct cli_cands *c)
{
	const struct lysc_node *state = cli_schema_child(cli_schema_root(cli), "state", CLI_F_ANY);
	struct cli_walk w;

	if (argc == 1) {
		cli_show_words(cli, cli_cand_fn, c);
	} else if (!strcmp(argv[1], "routes")) {
		cli_complete_rpc(cli, argc - 1, argv + 1, c);
	} else if (!strcmp(argv[1], "trie")) {
		cli_complete_trie(cli, argc, c);
	} else if (!strcmp(argv[1], "config")) {
		cli_walk_init(&w, cli_schema_root(cli), "/lcfib:lcfib", CLI_F_CONFIG, false);
		cli_complete_path(cli, c, &w, argc - 2, argv + 2, false);
	} else {
		/* `show state X` and `show X` walk the same tree */
		bool st = !strcmp(argv[1], "state");

		cli_walk_init(&w, state, "/lcfib:lcfib/state", CLI_F_ANY, false);
		cli_complete_path(cli, c, &w, argc - (st ? 2 : 1), argv + (st ? 2 : 1), false);
	}
}

/* ----------------------------------------------------------------- route */

static void cli_cand_ifnames(struct cli_cands *c)
{
	struct if_nameindex *ifs = if_nameindex(), *i;

	if (!ifs)
		return;
	for (i = ifs; i->if_index; i++)
		cli_cand(c, i->if_name, NULL);
	if_freenameindex(ifs);
}

/* What may come before the prefix: the prefix 'default', or a type. */
static void cli_route_type_cands(struct cli_cands *c)
{
	cli_cand(c, "default", NULL);
	cli_cand_names(c, &names_rtype);
}

/* Whether the words after `route OP` hold the prefix: 'default', or neither a type nor 'to'. */
static bool cli_route_has_prefix(int argc, char **argv)
{
	int i;

	for (i = 2; i < argc; i++)
		if (!strcmp(argv[i], "default") ||
		    (strcmp(argv[i], "to") && !cli_route_is_type(argv[i])))
			return true;
	return false;
}

void cli_complete_route(struct cli *cli, int argc, char **argv, struct cli_cands *c)
{
	const char *prev = argv[argc - 1];

	(void)cli;
	if (argc == 1)
		cli_cand_list(c, cli_route_ops);
	else if (!strcmp(prev, "proto"))
		cli_cand_names(c, &names_proto);
	else if (!strcmp(prev, "scope"))
		cli_cand_names(c, &names_scope);
	else if (!strcmp(prev, "table"))
		cli_cand_names(c, &names_table);
	else if (!strcmp(prev, "dev"))
		cli_cand_ifnames(c);
	else if (!strcmp(prev, "via") || !strcmp(prev, "metric") || !strcmp(prev, "weight"))
		return;
	/* types come before the prefix (ip-route(8)'s TYPE PREFIX), attributes after */
	else if (cli_route_has_prefix(argc, argv))
		cli_cand_list(c, cli_route_attrs);
	else
		cli_route_type_cands(c);
}

/* ------------------------------------------------------------------ help */

void cli_complete_help(struct cli *cli, int argc, char **argv, struct cli_cands *c)
{
	if (argc == 1)
		cli_commands(cli, cli_cand_fn, c);
	else if (!strcmp(argv[1], "set") || !strcmp(argv[1], "delete") ||
		 !strcmp(argv[1], "unset") || !strcmp(argv[1], "show"))
		cli_complete(cli, argc - 1, argv + 1, c);
}

/* ------------------------------------------------------------------ RPCs */

#define CLI_RPC_LEVELS 8
#define CLI_RPC_GIVEN  64

/* Where the words of an RPC leave us: the entries open, and a keyword that wants a value. */
struct cli_rpc_state {
	const struct lysc_node *level[CLI_RPC_LEVELS];
	int depth;
	const struct lysc_node *given[CLI_RPC_GIVEN]; /* the RPC's own leaves given so far */
	int n_given;
	const struct lysc_node *want; /* a keyword whose value comes next */
	bool maybe_bool;              /* ... or a flag, after which true/false may come */
	bool bad;                     /* a word fits nowhere: offer nothing */
};

static const struct lysc_node *cli_rpc_find(struct cli_rpc_state *st, const char *word)
{
	const struct lysc_node *s;
	int d;

	for (d = st->depth; d >= 0; d--) {
		s = cli_schema_child(st->level[d], word, CLI_F_ANY);
		if (s) {
			st->depth = d;
			return s;
		}
	}
	return NULL;
}

/* A leaf of the RPC itself is given once; an entry's leaves come again in the next entry. */
static void cli_rpc_give(struct cli_rpc_state *st, const struct lysc_node *s)
{
	if (s->nodetype == LYS_LEAF && st->depth == 0 && st->n_given < CLI_RPC_GIVEN)
		st->given[st->n_given++] = s;
}

static bool cli_rpc_given(const struct cli_rpc_state *st, const struct lysc_node *s)
{
	int i;

	for (i = 0; i < st->n_given; i++)
		if (st->given[i] == s)
			return true;
	return false;
}

static void cli_rpc_word(struct cli_rpc_state *st, const struct lysc_node *rpc, const char *w,
			 int i)
{
	const struct lysc_node *s, *pos = cli_rpc_positional(rpc);
	bool was_bool = st->maybe_bool;

	st->maybe_bool = false;
	if (st->want) {
		st->want = NULL;
		return;
	}
	if (was_bool && (!strcmp(w, "true") || !strcmp(w, "false")))
		return;
	s = cli_rpc_find(st, w);
	if (!s) {
		if (i == 1 && pos)
			cli_rpc_give(st, pos); /* its value, without the keyword */
		else
			st->bad = true;
		return;
	}
	cli_rpc_give(st, s);
	if (s->nodetype & (LYS_LIST | LYS_CONTAINER)) {
		if (st->depth + 1 < CLI_RPC_LEVELS)
			st->level[++st->depth] = s;
	} else if (cli_schema_is_bool(s)) {
		st->maybe_bool = true;
	} else {
		st->want = s;
	}
}

static void cli_rpc_keywords(struct cli_cands *c, const struct cli_rpc_state *st)
{
	const struct lysc_node *n;
	char dsc[512];
	int d;

	for (d = st->depth; d >= 0; d--) {
		for (n = NULL; (n = cli_schema_next(n, st->level[d], CLI_F_ANY));)
			if (!lysc_is_key(n) && !(d == 0 && cli_rpc_given(st, n)))
				cli_cand(c, n->name,
					 cli_schema_dsc(n->dsc, true, dsc, sizeof(dsc)));
	}
}

void cli_complete_rpc(struct cli *cli, int argc, char **argv, struct cli_cands *c)
{
	const struct lysc_node *rpc = cli_schema_rpc(cli, argv[0]), *pos;
	struct cli_rpc_state st = { .level = { rpc } };
	int i;

	if (!rpc)
		return;
	for (i = 1; i < argc && !st.bad; i++)
		cli_rpc_word(&st, rpc, argv[i], i);
	if (st.bad)
		return;
	if (st.want) {
		cli_cand_values(c, st.want);
		return;
	}
	pos = cli_rpc_positional(rpc);
	if (argc == 1 && pos)
		cli_cand_values(c, pos);
	if (st.maybe_bool) {
		cli_cand(c, "true", NULL);
		cli_cand(c, "false", NULL);
	}
	cli_rpc_keywords(c, &st);
}

/* ----------------------------------------------------------------- entry */

void cli_complete(struct cli *cli, int argc, char **argv, struct cli_cands *c)
{
	const struct cli_cmd *cmd;

	c->file = false;
	if (argc == 0) {
		cli_commands(cli, cli_cand_fn, c);
		return;
	}
	cmd = cli_cmd_find(argv[0]);
	if (cmd)
		cmd->complete(cli, argc, argv, c);
	else if (cli_schema_rpc(cli, argv[0]))
		cli_complete_rpc(cli, argc, argv, c);
	if (c->file)
		cli_cand_files(c);
}

static void cli_print_cand(struct cli_cands *c, const char *word, const char *help)
{
	(void)c;
	(void)help;
	printf("%s\n", word);
}

int cli_cmd_complete(struct cli *cli, int argc, char **argv)
{
	struct cli_cands c = { .add = cli_print_cand };

	/* argv: "__complete", the words so far, and the one being typed (maybe "") */
	c.partial = argc > 1 ? argv[argc - 1] : "";
	cli_complete(cli, argc > 1 ? argc - 2 : 0, argv + 1, &c);
	return 0;
}
