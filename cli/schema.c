/* SPDX-License-Identifier: MIT */
/*
 * The schema as commands see it: children by name, types for help and
 * completion, and the walk that turns words into an XPath.
 */
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

const struct lysc_node *cli_schema_root(const struct cli *cli)
{
	return lys_find_child(NULL, cli->mod, "lcfib", 0, LYS_CONTAINER, 0);
}

const struct lysc_node *cli_schema_rpc(const struct cli *cli, const char *name)
{
	const struct lysc_node_action *rpc;

	for (rpc = cli->mod->compiled->rpcs; rpc; rpc = (const struct lysc_node_action *)rpc->next)
		if (!strcmp(rpc->name, name))
			return &rpc->node;
	return NULL;
}

static bool cli_schema_passes(const struct lysc_node *node, enum cli_filter filter)
{
	if (node->nodetype & (LYS_RPC | LYS_ACTION | LYS_NOTIF))
		return false;
	return filter == CLI_F_ANY || !(node->flags & LYS_CONFIG_R);
}

const struct lysc_node *cli_schema_next(const struct lysc_node *last,
					const struct lysc_node *parent, enum cli_filter filter)
{
	const struct lysc_node *n = last;

	/* for an RPC, lys_getnext() walks its input */
	while ((n = lys_getnext(n, parent, NULL, 0)))
		if (cli_schema_passes(n, filter))
			return n;
	return NULL;
}

const struct lysc_node *cli_schema_child(const struct lysc_node *parent, const char *name,
					 enum cli_filter filter)
{
	const struct lysc_node *n = NULL;

	while ((n = cli_schema_next(n, parent, filter)))
		if (!strcmp(n->name, name))
			return n;
	return NULL;
}

static const struct lysc_type *cli_schema_type(const struct lysc_node *node)
{
	if (node->nodetype == LYS_LEAF)
		return ((const struct lysc_node_leaf *)node)->type;
	if (node->nodetype == LYS_LEAFLIST)
		return ((const struct lysc_node_leaflist *)node)->type;
	return NULL;
}

const char *cli_schema_units(const struct lysc_node *node)
{
	if (node->nodetype == LYS_LEAF)
		return ((const struct lysc_node_leaf *)node)->units;
	if (node->nodetype == LYS_LEAFLIST)
		return ((const struct lysc_node_leaflist *)node)->units;
	return NULL;
}

bool cli_schema_is_bool(const struct lysc_node *node)
{
	const struct lysc_type *t = cli_schema_type(node);

	return t && t->basetype == LY_TYPE_BOOL;
}

static bool cli_type_is_int(LY_DATA_TYPE t)
{
	return (t >= LY_TYPE_UINT8 && t <= LY_TYPE_UINT64) ||
	       (t >= LY_TYPE_INT8 && t <= LY_TYPE_INT64);
}

/* libyang keeps its own table of these names private. */
static const char *cli_basetype_name(LY_DATA_TYPE t)
{
	static const char *const names[] = {
		[LY_TYPE_UNKNOWN] = "unknown",   [LY_TYPE_BINARY] = "binary",
		[LY_TYPE_UINT8] = "uint8",       [LY_TYPE_UINT16] = "uint16",
		[LY_TYPE_UINT32] = "uint32",     [LY_TYPE_UINT64] = "uint64",
		[LY_TYPE_STRING] = "string",     [LY_TYPE_BITS] = "bits",
		[LY_TYPE_BOOL] = "boolean",      [LY_TYPE_DEC64] = "decimal64",
		[LY_TYPE_EMPTY] = "empty",       [LY_TYPE_ENUM] = "enumeration",
		[LY_TYPE_IDENT] = "identityref", [LY_TYPE_INST] = "instance-identifier",
		[LY_TYPE_LEAFREF] = "leafref",   [LY_TYPE_UNION] = "union",
		[LY_TYPE_INT8] = "int8",         [LY_TYPE_INT16] = "int16",
		[LY_TYPE_INT32] = "int32",       [LY_TYPE_INT64] = "int64",
	};

	return (unsigned int)t < sizeof(names) / sizeof(names[0]) && names[t] ? names[t] : "value";
}

bool cli_schema_is_number(const struct lysc_node *node)
{
	const struct lysc_type *t = cli_schema_type(node);

	return t && (cli_type_is_int(t->basetype) || t->basetype == LY_TYPE_DEC64);
}

static void cli_type_value_names(const struct lysc_type *t,
				 void (*fn)(void *arg, const char *name, const char *dsc),
				 void *arg)
{
	LY_ARRAY_COUNT_TYPE i;

	if (t->basetype == LY_TYPE_BOOL) {
		fn(arg, "true", NULL);
		fn(arg, "false", NULL);
	} else if (t->basetype == LY_TYPE_ENUM) {
		const struct lysc_type_enum *e = (const struct lysc_type_enum *)t;

		for (i = 0; i < LY_ARRAY_COUNT(e->enums); i++)
			fn(arg, e->enums[i].name, e->enums[i].dsc);
	} else if (t->basetype == LY_TYPE_UNION) {
		const struct lysc_type_union *u = (const struct lysc_type_union *)t;

		for (i = 0; i < LY_ARRAY_COUNT(u->types); i++)
			cli_type_value_names(u->types[i], fn, arg);
	}
}

void cli_schema_value_names(const struct lysc_node *node,
			    void (*fn)(void *arg, const char *name, const char *dsc), void *arg)
{
	const struct lysc_type *t = cli_schema_type(node);

	if (t)
		cli_type_value_names(t, fn, arg);
}

const char *cli_schema_default(const struct cli *cli, const struct lysc_node *node)
{
	const struct lysc_node_leaf *leaf = (const struct lysc_node_leaf *)node;

	if (node->nodetype != LYS_LEAF || !leaf->dflt)
		return NULL;
	return lyd_value_get_canonical(cli->ctx, leaf->dflt);
}

/* A growing string in a caller's buffer; output past the end is dropped. */
struct cli_sbuf {
	char *buf;
	size_t size, len;
};

static void cli_sbuf_add(struct cli_sbuf *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void cli_sbuf_add(struct cli_sbuf *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->len >= s->size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(s->buf + s->len, s->size - s->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		s->len += (size_t)n;
}

static void cli_range_text(struct cli_sbuf *s, const struct lysc_type *t)
{
	const struct lysc_range *r = ((const struct lysc_type_num *)t)->range;
	bool is_signed = t->basetype >= LY_TYPE_INT8;
	LY_ARRAY_COUNT_TYPE i;

	if (!r) {
		cli_sbuf_add(s, "%s", cli_basetype_name(t->basetype));
		return;
	}
	for (i = 0; i < LY_ARRAY_COUNT(r->parts); i++) {
		const char *sep = i ? ", " : "";

		if (is_signed)
			cli_sbuf_add(s, "%s%lld..%lld", sep, (long long)r->parts[i].min_64,
				     (long long)r->parts[i].max_64);
		else
			cli_sbuf_add(s, "%s%llu..%llu", sep,
				     (unsigned long long)r->parts[i].min_u64,
				     (unsigned long long)r->parts[i].max_u64);
	}
}

static void cli_enum_text(struct cli_sbuf *s, const struct lysc_type_enum *e)
{
	LY_ARRAY_COUNT_TYPE i;

	for (i = 0; i < LY_ARRAY_COUNT(e->enums); i++)
		cli_sbuf_add(s, "%s%s", i ? ", " : "", e->enums[i].name);
}

/* Whether a union has enum members: then its values are worth spelling out. */
static bool cli_union_has_enum(const struct lysc_type *t)
{
	const struct lysc_type_union *u = (const struct lysc_type_union *)t;
	LY_ARRAY_COUNT_TYPE i;

	for (i = 0; i < LY_ARRAY_COUNT(u->types); i++)
		if (u->types[i]->basetype == LY_TYPE_ENUM ||
		    (u->types[i]->basetype == LY_TYPE_UNION && cli_union_has_enum(u->types[i])))
			return true;
	return false;
}

static void cli_type_text(struct cli_sbuf *s, const struct lysc_type *t, const char *name)
{
	LY_ARRAY_COUNT_TYPE i;

	if (t->basetype == LY_TYPE_ENUM) {
		cli_enum_text(s, (const struct lysc_type_enum *)t);
	} else if (t->basetype == LY_TYPE_BOOL) {
		cli_sbuf_add(s, "true, false");
	} else if (cli_type_is_int(t->basetype)) {
		cli_range_text(s, t);
	} else if (t->basetype == LY_TYPE_UNION && cli_union_has_enum(t)) {
		const struct lysc_type_union *u = (const struct lysc_type_union *)t;

		for (i = 0; i < LY_ARRAY_COUNT(u->types); i++) {
			cli_sbuf_add(s, "%s", i ? ", " : "");
			cli_type_text(s, u->types[i], NULL);
		}
	} else {
		/* a typedef's name (inet:ip-prefix) says more than "union" or "string" */
		cli_sbuf_add(s, "%s", name ? name : cli_basetype_name(t->basetype));
	}
}

void cli_schema_type_text(const struct lysc_node *node, char *buf, size_t size)
{
	const struct lysc_type *t = cli_schema_type(node);
	/* the context keeps the parsed node in priv (LY_CTX_SET_PRIV_PARSED) */
	const struct lysp_node_leaf *p = node->priv;
	struct cli_sbuf s = { buf, size, 0 };

	buf[0] = '\0';
	if (!t)
		return;
	cli_type_text(&s, t, p && (p->nodetype & (LYS_LEAF | LYS_LEAFLIST)) ? p->type.name : NULL);
}

char *cli_schema_dsc(const char *dsc, bool first_sentence, char *buf, size_t size)
{
	size_t n = 0;
	bool space = false;

	for (; dsc && *dsc && n + 1 < size; dsc++) {
		if (isspace((unsigned char)*dsc)) {
			space = n > 0;
			if (first_sentence && n && buf[n - 1] == '.')
				break;
			continue;
		}
		if (space && n + 2 < size)
			buf[n++] = ' ';
		space = false;
		buf[n++] = *dsc;
	}
	buf[n] = '\0';
	return buf;
}

/*
 * Parses "16M", "512Ki", "1GB": powers of 1024; blanks around it are
 * dropped (a quoted "  16M"), as libyang drops them around a number.
 * False if @s is not a size.
 */
static bool cli_parse_size(const char *s, unsigned long long *out)
{
	static const char units[] = "KMGT";
	unsigned long long v;
	unsigned int shift = 0;
	const char *u;
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return false;
	if (*end && (u = strchr(units, toupper((unsigned char)*end)))) {
		shift = 10 * (unsigned int)(u - units + 1);
		end++;
		if (*end == 'i')
			end++;
		if (*end == 'B')
			end++;
	}
	while (isspace((unsigned char)*end))
		end++;
	if (*end || (shift && v > (~0ULL >> shift)))
		return false;
	*out = v << shift;
	return true;
}

void cli_value_convert(const struct lysc_node *node, const char *word, char *buf, size_t size)
{
	const struct lysc_type *t = cli_schema_type(node);
	const char *units = cli_schema_units(node);
	unsigned long long v;

	if (t && cli_type_is_int(t->basetype) && units && !strcmp(units, "bytes") &&
	    cli_parse_size(word, &v))
		snprintf(buf, size, "%llu", v);
	else
		snprintf(buf, size, "%s", word);
}

/* ------------------------------------------------------------------ walk */

void cli_walk_init(struct cli_walk *w, const struct lysc_node *root, const char *xpath,
		   enum cli_filter filter, bool want_value)
{
	memset(w, 0, sizeof(*w));
	w->node = root;
	w->filter = filter;
	w->want_value = want_value;
	snprintf(w->xpath, sizeof(w->xpath), "%s", xpath);
}

/* The list's @i-th key (keys come first among a list's children), or NULL. */
static const struct lysc_node *cli_list_key(const struct lysc_node *list, unsigned int i)
{
	const struct lysc_node *n;

	for (n = lysc_node_child(list); n && lysc_is_key(n); n = n->next)
		if (!i--)
			return n;
	return NULL;
}

const struct lysc_node *cli_walk_pending_value(const struct cli_walk *w)
{
	if (w->node->nodetype == LYS_LIST)
		return cli_list_key(w->node, w->key);
	if ((w->node->nodetype & (LYS_LEAF | LYS_LEAFLIST)) && !w->value)
		return w->node;
	return NULL;
}

bool cli_walk_in_keys(const struct cli_walk *w)
{
	return w->node->nodetype == LYS_LIST && cli_list_key(w->node, w->key);
}

static int cli_walk_append(struct cli_walk *w, char *msg, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int cli_walk_append(struct cli_walk *w, char *msg, size_t size, const char *fmt, ...)
{
	size_t len = strlen(w->xpath);
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(w->xpath + len, sizeof(w->xpath) - len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(w->xpath) - len) {
		snprintf(msg, size, "the path is too long");
		return -EINVAL;
	}
	return 0;
}

/*
 * Appends [NAME='VALUE'] for @node's value, quoting with whichever quote
 * the value lacks. A value libyang refuses is -EBADMSG, its message left
 * in the context for cli_ly_error().
 */
static int cli_walk_predicate(struct cli_walk *w, const struct lysc_node *node, const char *value,
			      char *msg, size_t size)
{
	const char *name = node == w->node ? "." : node->name;
	char q = strchr(value, '\'') ? '"' : '\'';
	LY_ERR lyret;

	lyret = lyd_value_validate(node->module->ctx, node, value, strlen(value), NULL, NULL, NULL);
	if (lyret && lyret != LY_EINCOMPLETE)
		return -EBADMSG;
	if (q == '"' && strchr(value, '"')) {
		snprintf(msg, size, "a key or value cannot hold both ' and \": %s", value);
		return -EINVAL;
	}
	return cli_walk_append(w, msg, size, "[%s=%c%s%c]", name, q, value, q);
}

static void cli_walk_names(const struct cli_walk *w, char *buf, size_t size)
{
	const struct lysc_node *n = NULL;
	size_t len = 0;

	buf[0] = '\0';
	while ((n = cli_schema_next(n, w->node, w->filter)) && len < size)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", n->name);
}

static int cli_walk_value(struct cli_walk *w, const char *word, char *msg, size_t size)
{
	char value[CLI_VALUE_MAX];

	if (w->value || (w->node->nodetype == LYS_LEAF && !w->want_value)) {
		snprintf(msg, size, "%s takes no more words, '%s' is one too many", w->node->name,
			 word);
		return -EINVAL;
	}
	w->value = word;
	if (w->want_value)
		return 0;
	/* a leaf-list's entry, as in `delete feeds kernel table 100` */
	cli_value_convert(w->node, word, value, sizeof(value));
	return cli_walk_predicate(w, w->node, value, msg, size);
}

int cli_walk_step(struct cli_walk *w, const char *word, char *msg, size_t size)
{
	const struct lysc_node *key = cli_walk_pending_value(w), *child;
	char names[512];

	if (key && w->node->nodetype == LYS_LIST) {
		char value[CLI_VALUE_MAX];

		cli_value_convert(key, word, value, sizeof(value));
		w->key++;
		return cli_walk_predicate(w, key, value, msg, size);
	}
	if (w->node->nodetype & (LYS_LEAF | LYS_LEAFLIST))
		return cli_walk_value(w, word, msg, size);
	child = cli_schema_child(w->node, word, w->filter);
	if (!child) {
		cli_walk_names(w, names, sizeof(names));
		snprintf(msg, size, "'%s' is not in %s (it holds: %s)", word, w->node->name,
			 names[0] ? names : "nothing");
		return -EINVAL;
	}
	w->node = child;
	w->key = 0;
	return cli_walk_append(w, msg, size, "/%s", child->name);
}

int cli_walk_words(struct cli *cli, struct cli_walk *w, const char *cmd, int argc, char **argv)
{
	char msg[1024];
	int i, ret;

	for (i = 0; i < argc; i++) {
		ret = cli_walk_step(w, argv[i], msg, sizeof(msg));
		if (ret == -EBADMSG)
			return cli_ly_error(cli, NULL);
		if (ret)
			return cli_usage(cli, "%s: %s", cmd, msg);
	}
	return 0;
}
