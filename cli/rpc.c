/* SPDX-License-Identifier: MIT */
/*
 * RPCs as commands: `NAME [VALUE] [KEYWORD VALUE]... [FLAG]...`, where the
 * keywords are the input's leaves, a boolean leaf alone means true, and a
 * list's name starts a new entry whose own keywords follow it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/ctl.h"

#define CLI_RPC_DEPTH 8 /* nesting of lists and containers in an input */

const struct lysc_node *cli_rpc_positional(const struct lysc_node *rpc)
{
	const struct lysc_node *n = NULL, *first = NULL;

	while ((n = cli_schema_next(n, rpc, CLI_F_ANY))) {
		if (n->nodetype != LYS_LEAF)
			continue;
		if (n->flags & LYS_MAND_TRUE)
			return n;
		if (!first)
			first = n;
	}
	return first;
}

/* Where the next keyword's node goes: the innermost entry that knows it. */
struct cli_argp {
	struct cli *cli;
	const char *cmd;
	struct lyd_node *data[CLI_RPC_DEPTH];
	int depth;
};

static const struct lysc_node *cli_argp_find(struct cli_argp *ap, const char *word)
{
	const struct lysc_node *s;
	int d;

	for (d = ap->depth; d >= 0; d--) {
		s = cli_schema_child(ap->data[d]->schema, word, CLI_F_ANY);
		if (s) {
			ap->depth = d;
			return s;
		}
	}
	return NULL;
}

static bool cli_is_bool_word(const char *w)
{
	return w && (!strcmp(w, "true") || !strcmp(w, "false"));
}

static int cli_argp_term(struct cli_argp *ap, const struct lysc_node *s, const char *word)
{
	struct lyd_node *parent = ap->data[ap->depth], *match;
	char value[CLI_VALUE_MAX];

	if (s->nodetype == LYS_LEAF && !lyd_find_sibling_val(lyd_child(parent), s, NULL, 0, &match))
		return cli_usage(ap->cli, "%s: %s is given twice", ap->cmd, s->name);
	cli_value_convert(s, word, value, sizeof(value));
	if (lyd_new_term(parent, NULL, s->name, value, 0, NULL))
		return cli_ly_error(ap->cli, NULL);
	return 0;
}

/* A keyed list's entry takes its keys from the words after its name. */
static int cli_argp_list(struct cli_argp *ap, const struct lysc_node *s, int argc, char **argv,
			 int *i)
{
	const struct lysc_node *k;
	struct lyd_node *entry;
	char keys[CLI_XPATH_MAX] = "";
	size_t len = 0;

	if (ap->depth + 1 >= CLI_RPC_DEPTH)
		return cli_usage(ap->cli, "%s: %s is nested too deep", ap->cmd, s->name);
	for (k = lysc_node_child(s); k && lysc_is_key(k); k = k->next) {
		if (*i >= argc)
			return cli_usage(ap->cli, "%s: %s needs its %s", ap->cmd, s->name, k->name);
		len += (size_t)snprintf(keys + len, sizeof(keys) - len, "[%s='%s']", k->name,
					argv[(*i)++]);
		if (len >= sizeof(keys))
			return cli_usage(ap->cli, "%s: %s's keys are too long", ap->cmd, s->name);
	}
	if (lyd_new_list2(ap->data[ap->depth], NULL, s->name, keys, 0, &entry))
		return cli_ly_error(ap->cli, NULL);
	ap->data[++ap->depth] = entry;
	return 0;
}

static int cli_argp_inner(struct cli_argp *ap, const struct lysc_node *s)
{
	struct lyd_node *inner;

	if (ap->depth + 1 >= CLI_RPC_DEPTH)
		return cli_usage(ap->cli, "%s: %s is nested too deep", ap->cmd, s->name);
	if (lyd_new_inner(ap->data[ap->depth], NULL, s->name, 0, &inner))
		return cli_ly_error(ap->cli, NULL);
	ap->data[++ap->depth] = inner;
	return 0;
}

/* Takes the keyword argv[*i - 1] (node @s) and the words it needs. */
static int cli_argp_keyword(struct cli_argp *ap, const struct lysc_node *s, int argc, char **argv,
			    int *i)
{
	const char *next = *i < argc ? argv[*i] : NULL;

	if (s->nodetype == LYS_LIST)
		return cli_argp_list(ap, s, argc, argv, i);
	if (s->nodetype == LYS_CONTAINER)
		return cli_argp_inner(ap, s);
	if (cli_schema_is_bool(s) && !cli_is_bool_word(next))
		return cli_argp_term(ap, s, "true");
	if (!next)
		return cli_usage(ap->cli, "%s: %s needs a value", ap->cmd, s->name);
	(*i)++;
	return cli_argp_term(ap, s, next);
}

static int cli_rpc_missing(struct cli *cli, const struct lysc_node *rpc, struct lyd_node *tree)
{
	const struct lysc_node *n = NULL;
	struct lyd_node *match;

	while ((n = cli_schema_next(n, rpc, CLI_F_ANY)))
		if ((n->flags & LYS_MAND_TRUE) &&
		    lyd_find_sibling_val(lyd_child(tree), n, NULL, 0, &match))
			return cli_usage(cli, "%s: %s is missing (see 'help %s')", rpc->name,
					 n->name, rpc->name);
	return 0;
}

static int cli_rpc_words(struct cli_argp *ap, const struct lysc_node *rpc, int argc, char **argv)
{
	const struct lysc_node *pos = cli_rpc_positional(rpc), *s;
	int i = 1, ret = 0;

	while (!ret && i < argc) {
		const char *w = argv[i++];

		s = cli_argp_find(ap, w);
		if (s)
			ret = cli_argp_keyword(ap, s, argc, argv, &i);
		else if (i == 2 && pos)
			ret = cli_argp_term(ap, pos, w); /* `lookup 192.0.2.1` */
		else
			ret = cli_usage(ap->cli, "%s: '%s' is not a keyword here (see 'help %s')",
					rpc->name, w, rpc->name);
	}
	return ret;
}

int cli_rpc_build(struct cli *cli, const struct lysc_node *rpc, int argc, char **argv,
		  struct lyd_node **out)
{
	struct cli_argp ap = { .cli = cli, .cmd = rpc->name };
	int ret;

	if (lyd_new_inner(NULL, cli->mod, rpc->name, 0, &ap.data[0]))
		return cli_ly_error(cli, NULL);
	ret = cli_rpc_words(&ap, rpc, argc, argv);
	if (!ret)
		ret = cli_rpc_missing(cli, rpc, ap.data[0]);
	if (ret) {
		lyd_free_all(ap.data[0]);
		return ret;
	}
	*out = ap.data[0];
	return 0;
}

int cli_rpc_prepare(struct cli *cli, struct lyd_node *rpc, char **json)
{
	if (lyd_validate_op(rpc, NULL, LYD_TYPE_RPC_YANG, NULL))
		return cli_ly_error(cli, NULL);
	/* implicit defaults stay out: the daemon fills them in */
	if (lyd_print_mem(json, rpc, LYD_JSON, LYD_PRINT_SHRINK | LYD_PRINT_WD_EXPLICIT))
		return cli_ly_error(cli, NULL);
	return 0;
}

/* ---------------------------------------------------------------- replies */

static bool cli_blank(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return !*s;
}

/* The reply is {"lcfib:NAME":{...output...}}: parsed on its own, then matched. */
int cli_rpc_parse_reply(struct cli *cli, const char *name, const char *payload,
			struct lyd_node **tree, struct lyd_node **op)
{
	struct ly_in *in;
	LY_ERR lyret;

	*tree = *op = NULL;
	if (cli_blank(payload))
		return 0;
	if (ly_in_new_memory(payload, &in))
		return -ENOMEM;
	lyret = lyd_parse_op(cli->ctx, NULL, in, LYD_JSON, LYD_TYPE_REPLY_YANG, tree, op);
	ly_in_free(in, 0);
	if (lyret)
		return cli_ly_error(cli, "the daemon's reply");
	if (!*op || strcmp((*op)->schema->name, name)) {
		cli_error(cli, NULL, NULL, "the daemon's reply is not for %s", name);
		lyd_free_all(*tree);
		*tree = *op = NULL;
		return -EBADMSG;
	}
	return 0;
}

static const char *cli_child_value(const struct lyd_node *parent, const char *name)
{
	const struct lyd_node *n;

	for (n = lyd_child(parent); n; n = n->next)
		if (n->schema && !strcmp(n->schema->name, name))
			return lyd_get_value(n);
	return NULL;
}

static bool cli_child_true(const struct lyd_node *parent, const char *name)
{
	const char *v = cli_child_value(parent, name);

	return v && !strcmp(v, "true");
}

/* The count of a list entry's child @name, or "0". */
static const char *cli_child_or_0(const struct lyd_node *parent, const char *name)
{
	const char *v = cli_child_value(parent, name);

	return v ? v : "0";
}

/* `routes summary`, as vtysh's `show ip route summary`: per protocol, then per prefix length. */
static void cli_print_summary(const struct lyd_node *sum)
{
	const struct lyd_node *n;

	printf("%-20s %s\n", "protocol", "routes");
	for (n = lyd_child(sum); n; n = n->next)
		if (n->schema && !strcmp(n->schema->name, "protocol"))
			printf("%-20s %s\n", cli_proto_name(cli_child_value(n, "protocol")),
			       cli_child_or_0(n, "routes"));
	printf("%-20s %s\n\n%-20s %s\n", "total", cli_child_or_0(sum, "routes"), "prefix length",
	       "routes");
	for (n = lyd_child(sum); n; n = n->next) {
		char len[32];

		if (!n->schema || strcmp(n->schema->name, "prefix-length"))
			continue;
		snprintf(len, sizeof(len), "%s /%s", cli_child_value(n, "family"),
			 cli_child_value(n, "length"));
		printf("%-20s %s\n", len, cli_child_or_0(n, "routes"));
	}
}

/*
 * The routes came as lines (format text); the output ends them. A cut
 * listing says so on stdout, where a script or a pager reads it, as its
 * last line (JSON lines: on stderr, cli_rpc_output()).
 */
static void cli_print_routes(struct cli *cli, const struct lyd_node *rpc,
			     const struct lyd_node *out)
{
	const struct lyd_node *n;

	(void)cli;
	for (n = lyd_child(out); n; n = n->next)
		if (n->schema && !strcmp(n->schema->name, "summary"))
			cli_print_summary(n);
	if (cli_child_true(out, "truncated")) {
		const char *limit = cli_child_value(rpc, "limit");

		printf("# truncated: more routes match than the limit of %s (raise it with "
		       "'limit N')\n",
		       limit ? limit : "1000");
	}
}

/* Whether @rpc asked for its answer in lines (routes with format text or json-lines). */
static bool cli_rpc_lines(const struct lyd_node *rpc)
{
	const char *format = cli_child_value(rpc, "format");

	return format && strcmp(format, "json");
}

static void cli_print_load(struct cli *cli, const struct lyd_node *rpc, const struct lyd_node *out)
{
	const struct lyd_node *n, *bad = NULL;

	(void)rpc;
	/* the counts, then each bad line as the compiler-style message it carries */
	for (n = lyd_child(out); n; n = n->next) {
		if (n->schema && n->schema->nodetype == LYS_LIST) {
			bad = n;
			break;
		}
	}
	if (!cli->quiet)
		cli_print_span(cli, stdout, lyd_child(out), bad, 0);
	for (n = bad; n; n = n->next) {
		const char *msg = cli_child_value(n, "message");

		if (n->schema && n->schema->nodetype == LYS_LIST)
			printf("%s\n", msg ? msg : "bad line");
	}
}

/* `metrics`: the text as a scraper reads it. */
static void cli_print_metrics(struct cli *cli, const struct lyd_node *rpc,
			      const struct lyd_node *out)
{
	const char *text = cli_child_value(out, "text");

	(void)cli;
	(void)rpc;
	if (text)
		fputs(text, stdout);
}

struct cli_rpc_printer {
	const char *name;
	void (*print)(struct cli *cli, const struct lyd_node *rpc, const struct lyd_node *out);
};

/* RPCs with a form of their own; the others print as a tree. */
static const struct cli_rpc_printer cli_rpc_printers[] = {
	{ "routes", cli_print_routes },
	{ "load", cli_print_load },
	{ "metrics", cli_print_metrics },
};

static void cli_rpc_print(struct cli *cli, const struct lyd_node *rpc, const struct lyd_node *out)
{
	size_t i;

	for (i = 0; i < sizeof(cli_rpc_printers) / sizeof(cli_rpc_printers[0]); i++) {
		if (!strcmp(cli_rpc_printers[i].name, rpc->schema->name)) {
			cli_rpc_printers[i].print(cli, rpc, out);
			return;
		}
	}
	cli_print_tree(cli, stdout, lyd_child(out), 0);
}

int cli_rpc_output(struct cli *cli, const struct lyd_node *rpc, const char *reply)
{
	struct lyd_node *tree, *op;
	int ret;

	ret = cli_rpc_parse_reply(cli, rpc->schema->name, reply, &tree, &op);
	if (ret)
		return ret;
	if (cli->json && cli_rpc_lines(rpc)) {
		/* JSON lines are out: a cut listing says so where they are not */
		if (op && cli_child_true(op, "truncated"))
			cli_error(cli, NULL, NULL,
				  "more routes match than the limit of %s (raise it with 'limit N')",
				  cli_child_value(rpc, "limit") ? cli_child_value(rpc, "limit") :
								   "1000");
	} else if (cli->json) {
		ret = cli_print_json(cli, tree);
	} else if (op) {
		cli_rpc_print(cli, rpc, op);
	}
	/* A load whose routes are in, but that a restart will not load again. */
	if (!ret && op && cli_child_value(op, "not-recorded")) {
		if (!cli->json)
			cli_error(cli, NULL, NULL,
				  "the routes are applied, but the daemon could not add the file "
				  "to its config, so a restart will not load it: %s",
				  cli_child_value(op, "not-recorded"));
		ret = CLI_ENOTRECORDED;
	}
	/* `ip route get` exits non-zero without a route; so does a lookup (5) */
	if (!ret && op && !strcmp(rpc->schema->name, "lookup") && !cli_child_true(op, "found"))
		ret = CLI_ENOTFOUND;
	lyd_free_all(tree);
	return ret;
}

int cli_rpc_call(struct cli *cli, struct lyd_node *rpc, cli_notify_fn notify)
{
	char *json = NULL, *reply = NULL;
	int ret;

	ret = cli_rpc_prepare(cli, rpc, &json);
	if (!ret)
		ret = cli_request(cli, CTL_RPC, 0, json, notify, &reply);
	if (!ret)
		ret = cli_rpc_output(cli, rpc, reply);
	free(json);
	free(reply);
	return ret;
}

/*
 * A listing comes as lines that go straight out (text, or JSON lines with
 * --json), unless the format was asked for: lcfibctl neither keeps nor
 * parses a million routes.
 */
static int cli_routes_call(struct cli *cli, struct lyd_node *rpc)
{
	if (!cli_child_value(rpc, "format") &&
	    lyd_new_term(rpc, NULL, "format", cli->json ? "json-lines" : "text", 0, NULL))
		return cli_ly_error(cli, NULL);
	return cli_rpc_call(cli, rpc, NULL);
}

int cli_cmd_rpc(struct cli *cli, int argc, char **argv)
{
	const struct lysc_node *s = cli_schema_rpc(cli, argv[0]);
	struct lyd_node *rpc;
	int ret;

	if (!strcmp(s->name, "lookups") ||
	    (!strcmp(s->name, "lookup") && argc > 1 &&
	     (!strcmp(argv[1], "-") || !strcmp(argv[1], "-f"))))
		return cli_lookups_stream(cli, argc, argv);
	ret = cli_rpc_build(cli, s, argc, argv, &rpc);
	if (ret)
		return ret;
	if (!strcmp(s->name, "load"))
		ret = cli_load_call(cli, rpc);
	else if (!strcmp(s->name, "lookup") && !cli->json)
		ret = cli_lookup_one(cli, rpc);
	else if (!strcmp(s->name, "routes") && !cli_child_true(rpc, "summary"))
		ret = cli_routes_call(cli, rpc);
	else
		ret = cli_rpc_call(cli, rpc, NULL);
	lyd_free_all(rpc);
	return ret;
}
