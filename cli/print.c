/* SPDX-License-Identifier: MIT */
/*
 * Human output. Data trees print in the reply's order with aligned names;
 * lists of plain values print as tables. Sizes, durations and rates get
 * units; everything else prints as the daemon sent it, so the same reply
 * always prints the same text.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/names.h"

#define CLI_INDENT      2
#define CLI_TABLE_COLS  16
#define CLI_TABLE_WIDTH 100 /* a wider table prints entry by entry */

/* ------------------------------------------------------------- values */

char *cli_format_bytes(uint64_t v, char *buf, size_t size)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned int k = 0, shift = 10;
	uint64_t whole, tenths;

	if (v < 1024) {
		snprintf(buf, size, "%" PRIu64 " B", v);
		return buf;
	}
	while (k + 1 < 6 && v >> (shift + 10))
		k++, shift += 10;
	whole = v >> shift;
	/* rounded to a tenth; the remainder is below 2^60, so * 10 fits */
	tenths = ((v & ((1ULL << shift) - 1)) * 10 + (1ULL << (shift - 1))) >> shift;
	if (tenths == 10)
		whole++, tenths = 0;
	if (whole == 1024 && k + 1 < 6)
		k++, whole = 1;
	if (tenths)
		snprintf(buf, size, "%" PRIu64 ".%" PRIu64 " %s", whole, tenths, units[k]);
	else
		snprintf(buf, size, "%" PRIu64 " %s", whole, units[k]);
	return buf;
}

char *cli_format_secs(uint64_t s, char *buf, size_t size)
{
	uint64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60;

	s %= 60;
	if (d)
		snprintf(buf, size, "%" PRIu64 "d %02" PRIu64 "h %02" PRIu64 "m %02" PRIu64 "s", d,
			 h, m, s);
	else if (h)
		snprintf(buf, size, "%" PRIu64 "h %02" PRIu64 "m %02" PRIu64 "s", h, m, s);
	else if (m)
		snprintf(buf, size, "%" PRIu64 "m %02" PRIu64 "s", m, s);
	else
		snprintf(buf, size, "%" PRIu64 "s", s);
	return buf;
}

char *cli_format_usec(uint64_t v, char *buf, size_t size)
{
	uint64_t r;

	if (v < 1000) {
		snprintf(buf, size, "%" PRIu64 " us", v);
	} else if (v < 999950) {
		r = (v + 50) / 100; /* tenths of a millisecond */
		if (r % 10)
			snprintf(buf, size, "%" PRIu64 ".%" PRIu64 " ms", r / 10, r % 10);
		else
			snprintf(buf, size, "%" PRIu64 " ms", r / 10);
	} else if (v < 59995000) {
		r = (v + 5000) / 10000; /* hundredths of a second */
		snprintf(buf, size, "%" PRIu64 ".%02" PRIu64 " s", r / 100, r % 100);
	} else {
		cli_format_secs((v + 500000) / 1000000, buf, size);
	}
	return buf;
}

static bool cli_parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !errno && !*end;
}

/* "routes per second" reads "routes/s"; "per second" alone "/s". */
static char *cli_format_rate(const char *value, const char *units, char *buf, size_t size)
{
	size_t n = strlen(units) - strlen("per second");

	while (n && units[n - 1] == ' ')
		n--;
	snprintf(buf, size, "%s%s%.*s/s", value, n ? " " : "", (int)n, units);
	return buf;
}

static bool cli_ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a >= b && !strcmp(s + a - b, tail);
}

char *cli_format_value(const struct lyd_node *node, char *buf, size_t size)
{
	const char *value = lyd_get_value(node), *units = cli_schema_units(node->schema);
	uint64_t v;

	if (!value)
		value = "";
	if (!units || !cli_parse_u64(value, &v))
		snprintf(buf, size, "%s", value);
	else if (!strcmp(units, "bytes"))
		cli_format_bytes(v, buf, size);
	else if (!strcmp(units, "microseconds"))
		cli_format_usec(v, buf, size);
	else if (!strcmp(units, "seconds"))
		cli_format_secs(v, buf, size);
	else if (cli_ends_with(units, "per second"))
		cli_format_rate(value, units, buf, size);
	else
		snprintf(buf, size, "%s", value);
	return buf;
}

/* -------------------------------------------------------------- shapes */

/* The first sibling after @n of another schema node, or @stop. */
static const struct lyd_node *cli_next_kind(const struct lyd_node *n, const struct lyd_node *stop)
{
	const struct lysc_node *s = n->schema;

	while (n && n != stop && n->schema == s)
		n = n->next;
	return n;
}

/* A list of a key and one more leaf (nodes-by-bits) prints on one line. */
static bool cli_is_map(const struct lysc_node *s)
{
	const struct lysc_node *k = lysc_node_child(s);

	return s->nodetype == LYS_LIST && k && lysc_is_key(k) && k->next && !lysc_is_key(k->next) &&
	       k->next->nodetype == LYS_LEAF && !k->next->next;
}

/* A list whose entries are leaves only prints as a table. */
static bool cli_is_flat(const struct lysc_node *s)
{
	const struct lysc_node *c;

	if (s->nodetype != LYS_LIST)
		return false;
	for (c = lysc_node_child(s); c; c = c->next)
		if (c->nodetype != LYS_LEAF)
			return false;
	return true;
}

static bool cli_is_line(const struct lyd_node *n)
{
	return n->schema &&
	       ((n->schema->nodetype & (LYS_LEAF | LYS_LEAFLIST)) || cli_is_map(n->schema));
}

/* "KEY: VALUE" of a map's entry; an entry may lack its value. */
static int cli_map_pair(const struct lyd_node *e, char *buf, size_t size)
{
	const struct lyd_node *k = lyd_child(e), *v = k ? k->next : NULL;
	char kb[CLI_VALUE_MAX], vb[CLI_VALUE_MAX];

	return snprintf(buf, size, "%s: %s", k ? cli_format_value(k, kb, sizeof(kb)) : "?",
			v ? cli_format_value(v, vb, sizeof(vb)) : "-");
}

/* The value of a line: a leaf's, a leaf-list's joined, a map's "k: v" pairs. */
static void cli_line_value(const struct lyd_node *n, const struct lyd_node *stop, char *buf,
			   size_t size)
{
	const struct lyd_node *end = cli_next_kind(n, stop);
	char v[CLI_VALUE_MAX];
	size_t len = 0;
	bool map = n->schema->nodetype == LYS_LIST;
	int w;

	buf[0] = '\0';
	for (; n != end && len < size; n = n->next) {
		if (len)
			len += (size_t)snprintf(buf + len, size - len, map ? "  " : ", ");
		if (len >= size)
			break;
		if (map)
			w = cli_map_pair(n, buf + len, size - len);
		else
			w = snprintf(buf + len, size - len, "%s",
				     cli_format_value(n, v, sizeof(v)));
		len += w > 0 ? (size_t)w : 0;
	}
}

/* ------------------------------------------------------------- printers */

static const struct lyd_node *cli_print_range(struct cli *cli, FILE *f, const struct lyd_node *n,
					      const struct lyd_node *stop, int indent);

/* A run of lines, names padded to the longest; returns the node after it. */
static const struct lyd_node *cli_print_lines(FILE *f, const struct lyd_node *first,
					      const struct lyd_node *stop, int indent)
{
	const struct lyd_node *n;
	char value[4096];
	int width = 0;

	for (n = first; n && n != stop && cli_is_line(n); n = cli_next_kind(n, stop))
		if ((int)strlen(n->schema->name) > width)
			width = (int)strlen(n->schema->name);
	for (n = first; n && n != stop && cli_is_line(n); n = cli_next_kind(n, stop)) {
		cli_line_value(n, stop, value, sizeof(value));
		fprintf(f, "%*s%-*s  %s\n", indent, "", width, n->schema->name, value);
	}
	return n;
}

struct cli_table {
	const struct lysc_node *col[CLI_TABLE_COLS];
	int width[CLI_TABLE_COLS];
	bool right[CLI_TABLE_COLS];
	int n;
};

static const struct lyd_node *cli_entry_field(const struct lyd_node *entry,
					      const struct lysc_node *col)
{
	const struct lyd_node *c;

	for (c = lyd_child(entry); c; c = c->next)
		if (c->schema == col)
			return c;
	return NULL;
}

static const char *cli_cell(const struct lyd_node *entry, const struct lysc_node *col, char *buf,
			    size_t size)
{
	const struct lyd_node *c = cli_entry_field(entry, col);

	return c ? cli_format_value(c, buf, size) : "-";
}

/* Columns: the list's leaves that some entry has, in schema order. */
static void cli_table_columns(struct cli_table *t, const struct lyd_node *first,
			      const struct lyd_node *end)
{
	const struct lysc_node *c;
	const struct lyd_node *e;
	char buf[CLI_VALUE_MAX];
	int w;

	t->n = 0;
	for (c = lysc_node_child(first->schema); c && t->n < CLI_TABLE_COLS; c = c->next) {
		for (e = first; e != end && !cli_entry_field(e, c); e = e->next)
			;
		if (e == end)
			continue;
		t->col[t->n] = c;
		t->right[t->n] = cli_schema_is_number(c);
		t->width[t->n] = (int)strlen(c->name);
		for (e = first; e != end; e = e->next) {
			w = (int)strlen(cli_cell(e, c, buf, sizeof(buf)));
			if (w > t->width[t->n])
				t->width[t->n] = w;
		}
		t->n++;
	}
}

static void cli_table_row(FILE *f, const struct cli_table *t, const char *const *cells, int indent)
{
	int i;

	fprintf(f, "%*s", indent, "");
	for (i = 0; i < t->n; i++) {
		const char *sep = i ? "  " : "";

		if (t->right[i])
			fprintf(f, "%s%*s", sep, t->width[i], cells[i]);
		else if (i + 1 < t->n)
			fprintf(f, "%s%-*s", sep, t->width[i], cells[i]);
		else
			fprintf(f, "%s%s", sep, cells[i]); /* no trailing blanks */
	}
	fputc('\n', f);
}

static const struct lyd_node *cli_print_table(FILE *f, const struct lyd_node *first,
					      const struct lyd_node *stop, int indent)
{
	const struct lyd_node *end = cli_next_kind(first, stop), *e;
	char cell[CLI_TABLE_COLS][CLI_VALUE_MAX];
	const char *cells[CLI_TABLE_COLS] = { 0 };
	struct cli_table t;
	int i;

	cli_table_columns(&t, first, end);
	fprintf(f, "%*s%s\n", indent, "", first->schema->name);
	for (i = 0; i < t.n; i++)
		cells[i] = t.col[i]->name;
	cli_table_row(f, &t, cells, indent + CLI_INDENT);
	for (e = first; e != end; e = e->next) {
		for (i = 0; i < t.n; i++)
			cells[i] = cli_cell(e, t.col[i], cell[i], sizeof(cell[i]));
		cli_table_row(f, &t, cells, indent + CLI_INDENT);
	}
	return end;
}

/* Whether a flat list's table fits in CLI_TABLE_WIDTH; wider ones print entry by entry. */
static bool cli_table_fits(const struct lyd_node *first, const struct lyd_node *stop, int indent)
{
	struct cli_table t;
	int width = indent + CLI_INDENT;

	cli_table_columns(&t, first, cli_next_kind(first, stop));
	for (int i = 0; i < t.n; i++)
		width += (i ? 2 : 0) + t.width[i];
	return width <= CLI_TABLE_WIDTH;
}

/* An entry of a list with more inside: "NAME KEY..." and its other nodes below. */
static void cli_print_entry(struct cli *cli, FILE *f, const struct lyd_node *e, int indent)
{
	const struct lyd_node *c = lyd_child(e);
	char v[CLI_VALUE_MAX];

	fprintf(f, "%*s%s", indent, "", e->schema->name);
	for (; c && c->schema && lysc_is_key(c->schema); c = c->next)
		fprintf(f, " %s", cli_format_value(c, v, sizeof(v)));
	fputc('\n', f);
	cli_print_range(cli, f, c, NULL, indent + CLI_INDENT);
}

static const struct lyd_node *cli_print_range(struct cli *cli, FILE *f, const struct lyd_node *n,
					      const struct lyd_node *stop, int indent)
{
	while (n && n != stop) {
		if (!n->schema) {
			n = n->next; /* opaque nodes have no schema to print by */
		} else if (cli_is_line(n)) {
			n = cli_print_lines(f, n, stop, indent);
		} else if (cli_is_flat(n->schema) && cli_table_fits(n, stop, indent)) {
			n = cli_print_table(f, n, stop, indent);
		} else if (n->schema->nodetype == LYS_LIST) {
			cli_print_entry(cli, f, n, indent);
			n = n->next;
		} else {
			fprintf(f, "%*s%s\n", indent, "", n->schema->name);
			cli_print_range(cli, f, lyd_child(n), NULL, indent + CLI_INDENT);
			n = n->next;
		}
	}
	return n;
}

void cli_print_tree(struct cli *cli, FILE *f, const struct lyd_node *first, int indent)
{
	cli_print_range(cli, f, first, NULL, indent);
}

void cli_print_span(struct cli *cli, FILE *f, const struct lyd_node *first,
		    const struct lyd_node *stop, int indent)
{
	cli_print_range(cli, f, first, stop, indent);
}

int cli_print_json(struct cli *cli, const struct lyd_node *tree)
{
	if (!tree)
		return 0;
	if (lyd_print_file(stdout, tree, LYD_JSON, LYD_PRINT_WITHSIBLINGS))
		return cli_ly_error(cli, NULL);
	return 0;
}

/* --------------------------------------------------------------- routes */

/* A number of the module as its name in lib/names.h, or the number itself. */
static const char *cli_name_of(const struct names *names, const char *value)
{
	uint64_t v;
	const char *name;

	if (!cli_parse_u64(value, &v) || v > UINT32_MAX)
		return value;
	name = names_name(names, (uint32_t)v);
	return name ? name : value;
}

const char *cli_proto_name(const char *value)
{
	return cli_name_of(&names_proto, value);
}
