/* SPDX-License-Identifier: MIT */
/*
 * The state tree in the Prometheus text exposition format (version
 * 0.0.4), the names and types read off the YANG module, so that a leaf
 * added to the state shows as a metric without code here:
 *
 *   state/reclamation/forced-waits (yang:counter64, units "grace periods")
 *     -> lcfib_reclamation_forced_waits_total 12
 *   state/table[id=254][family=ipv4]/bytes (yang:gauge64, units "bytes")
 *     -> lcfib_table_bytes{table="254",family="ipv4"} 30457600
 *
 * A container's name joins the metric's, a list's name too (once, when
 * the container is its plural: feeds/feed), with its keys as labels (a key called "id" or "name" takes the list's name: table,
 * feed, class). yang:counter* are counters (_total), other numbers gauges;
 * microseconds and milliseconds are given in seconds and bytes and seconds
 * end the name, as Prometheus's conventions ask. A boolean is 0 or 1, an
 * enumeration a gauge of 1 with its value as a label, the version an
 * lcfib_daemon_info of 1; other strings are left out. HELP is the first
 * sentence of the leaf's description. Samples of one family are printed
 * together (lists would interleave them), families in order of their names.
 *
 * Needs the context made with LY_CTX_SET_PRIV_PARSED: the compiled schema
 * does not keep the typedef (counter or gauge), the parsed one does;
 * without it every number is a gauge. Loop thread.
 */
#define _GNU_SOURCE /* vasprintf */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libyang/libyang.h>

#include "daemon/metrics.h"

#define METRICS_NAME_MAX   160
#define METRICS_LABELS_MAX 512

struct metrics_sample {
	char *family; /* the name in # TYPE and # HELP */
	char *line;   /* the sample: name{labels} value */
	const char *type;
	const char *dsc;
	size_t seq; /* order of the walk, to keep it within a family */
};

struct metrics {
	struct metrics_sample *s;
	size_t n, cap;
	int err;
};

static void metrics_add(struct metrics *m, const char *family, const char *type,
			const char *dsc, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void metrics_add(struct metrics *m, const char *family, const char *type,
			const char *dsc, const char *fmt, ...)
{
	struct metrics_sample *s;
	va_list ap;

	if (m->err)
		return;
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 128;

		s = realloc(m->s, cap * sizeof(*s));
		if (!s) {
			m->err = -ENOMEM;
			return;
		}
		m->s = s;
		m->cap = cap;
	}
	s = &m->s[m->n];
	s->family = strdup(family);
	va_start(ap, fmt);
	if (vasprintf(&s->line, fmt, ap) < 0)
		s->line = NULL;
	va_end(ap);
	if (!s->family || !s->line) {
		free(s->family);
		free(s->line);
		m->err = -ENOMEM;
		return;
	}
	s->type = type;
	s->dsc = dsc;
	s->seq = m->n++;
}

/* @out = @prefix "_" @name, with '-' as '_'; "" when it does not fit. */
static void metrics_join(char *out, size_t size, const char *prefix, const char *name)
{
	int n = snprintf(out, size, "%s_%s", prefix, name);

	if (n < 0 || (size_t)n >= size) {
		out[0] = '\0';
		return;
	}
	for (char *c = out; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_' && *c != ':')
			*c = '_';
}

static bool metrics_ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), e = strlen(end);

	return n >= e && strcmp(s + n - e, end) == 0;
}

/* A label value, escaped as the format asks, appended to @labels. */
static void metrics_label(char *labels, size_t size, const char *name, const char *value)
{
	size_t n = strlen(labels);
	char key[METRICS_NAME_MAX];

	metrics_join(key, sizeof(key), "", name);
	n += (size_t)snprintf(labels + n, n < size ? size - n : 0, "%s%s=\"", n ? "," : "", key + 1);
	for (; *value && n + 3 < size; value++) {
		if (*value == '\\' || *value == '"' || *value == '\n') {
			labels[n++] = '\\';
			labels[n++] = *value == '\n' ? 'n' : *value;
		} else {
			labels[n++] = *value;
		}
	}
	if (n + 2 < size) {
		labels[n++] = '"';
		labels[n] = '\0';
	} else {
		labels[0] = '\0'; /* too long to be right: no labels rather than wrong ones */
	}
}

/* The parsed type's name (yang:counter64), when the context keeps it. */
static const char *metrics_typedef(const struct lysc_node *sn)
{
	const struct lysp_node_leaf *p = sn->priv;

	return p && (p->nodetype & LYS_LEAF) ? p->type.name : NULL;
}

static void metrics_leaf(struct metrics *m, const struct lyd_node *node, const char *prefix,
			 const char *labels)
{
	const struct lysc_node_leaf *sl = (const struct lysc_node_leaf *)node->schema;
	const char *value = lyd_get_value(node), *td = metrics_typedef(node->schema);
	const char *units = sl->units ? sl->units : "", *type = "gauge";
	char name[METRICS_NAME_MAX], family[METRICS_NAME_MAX], l[METRICS_LABELS_MAX];
	double scale = 1;

	metrics_join(name, sizeof(name), prefix, sl->name);
	if (!name[0] || !value)
		return;
	switch (sl->type->basetype) {
	case LY_TYPE_UINT8:
	case LY_TYPE_UINT16:
	case LY_TYPE_UINT32:
	case LY_TYPE_UINT64:
	case LY_TYPE_INT8:
	case LY_TYPE_INT16:
	case LY_TYPE_INT32:
	case LY_TYPE_INT64:
	case LY_TYPE_DEC64:
		break;
	case LY_TYPE_BOOL:
		metrics_add(m, name, "gauge", sl->dsc, "%s%s%s%s %d", name, *labels ? "{" : "",
			    labels, *labels ? "}" : "", strcmp(value, "true") == 0);
		return;
	case LY_TYPE_ENUM:
		snprintf(l, sizeof(l), "%s", labels);
		metrics_label(l, sizeof(l), sl->name, value);
		metrics_add(m, name, "gauge", sl->dsc, "%s{%s} 1", name, l);
		return;
	default:
		if (strcmp(sl->name, "version") == 0) {
			metrics_join(family, sizeof(family), prefix, "info");
			snprintf(l, sizeof(l), "%s", labels);
			metrics_label(l, sizeof(l), "version", value);
			metrics_add(m, family, "gauge", "lcfibd's version.", "%s{%s} 1", family, l);
		}
		return;
	}
	if (strcmp(units, "microseconds") == 0)
		scale = 1e-6;
	else if (strcmp(units, "milliseconds") == 0)
		scale = 1e-3;
	if (scale != 1 || strcmp(units, "seconds") == 0) {
		if (!metrics_ends_with(name, "_seconds"))
			strncat(name, "_seconds", sizeof(name) - strlen(name) - 1);
	} else if (strcmp(units, "bytes") == 0 && !metrics_ends_with(name, "_bytes")) {
		strncat(name, "_bytes", sizeof(name) - strlen(name) - 1);
	}
	if (td && (metrics_ends_with(td, "counter64") || metrics_ends_with(td, "counter32"))) {
		type = "counter";
		strncat(name, "_total", sizeof(name) - strlen(name) - 1);
	}
	if (scale != 1)
		metrics_add(m, name, type, sl->dsc, "%s%s%s%s %.6f", name, *labels ? "{" : "",
			    labels, *labels ? "}" : "", strtod(value, NULL) * scale);
	else
		metrics_add(m, name, type, sl->dsc, "%s%s%s%s %s", name, *labels ? "{" : "",
			    labels, *labels ? "}" : "", value);
}

static void metrics_walk(struct metrics *m, const struct lyd_node *parent, const char *prefix,
			 const char *labels)
{
	const struct lyd_node *node;

	LY_LIST_FOR(lyd_child(parent), node) {
		const struct lysc_node *sn = node->schema;
		char name[METRICS_NAME_MAX], l[METRICS_LABELS_MAX];

		if (!sn)
			continue;
		switch (sn->nodetype) {
		case LYS_LEAF:
			if (!lysc_is_key(sn))
				metrics_leaf(m, node, prefix, labels);
			break;
		case LYS_CONTAINER:
			metrics_join(name, sizeof(name), prefix, sn->name);
			if (name[0])
				metrics_walk(m, node, name, labels);
			break;
		case LYS_LIST: {
			const struct lyd_node *k;
			char plural[METRICS_NAME_MAX];

			/* feeds/feed[name=fpm]/routes: lcfib_feed_routes{feed="fpm"} */
			metrics_join(plural, sizeof(plural), "", sn->name);
			strncat(plural, "s", sizeof(plural) - strlen(plural) - 1);
			if (metrics_ends_with(prefix, plural))
				snprintf(plural, sizeof(plural), "%.*s",
					 (int)(strlen(prefix) - strlen(plural)), prefix);
			else
				snprintf(plural, sizeof(plural), "%s", prefix);
			metrics_join(name, sizeof(name), plural, sn->name);
			snprintf(l, sizeof(l), "%s", labels);
			LY_LIST_FOR(lyd_child(node), k) {
				const char *kn;

				if (!k->schema || !lysc_is_key(k->schema))
					continue;
				kn = k->schema->name;
				if (strcmp(kn, "id") == 0 || strcmp(kn, "name") == 0)
					kn = sn->name;
				metrics_label(l, sizeof(l), kn, lyd_get_value(k));
			}
			if (name[0] && l[0])
				metrics_walk(m, node, name, l);
			break;
		}
		default:
			break; /* leaf-lists, and what a state tree does not have */
		}
	}
}

static int metrics_cmp(const void *a, const void *b)
{
	const struct metrics_sample *x = a, *y = b;
	int c = strcmp(x->family, y->family);

	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* HELP's text: the description's first sentence on one line, escaped. */
static void metrics_help(FILE *out, const char *family, const char *dsc)
{
	bool space = false;
	size_t n = 0;

	fprintf(out, "# HELP %s ", family);
	for (; dsc && *dsc && n < 200; dsc++) {
		if (isspace((unsigned char)*dsc)) {
			if (n && dsc[-1] == '.')
				break;
			space = n > 0;
			continue;
		}
		if (space)
			fputc(' ', out), n++;
		space = false;
		if (*dsc == '\\')
			fputs("\\\\", out);
		else
			fputc(*dsc, out);
		n++;
	}
	fputc('\n', out);
}

int metrics_write(const struct lyd_node *state, FILE *out)
{
	struct metrics m = { NULL, 0, 0, 0 };
	const char *last = "";

	metrics_walk(&m, state, "lcfib", "");
	if (!m.err) {
		qsort(m.s, m.n, sizeof(*m.s), metrics_cmp);
		for (size_t i = 0; i < m.n; i++) {
			if (strcmp(m.s[i].family, last)) {
				metrics_help(out, m.s[i].family, m.s[i].dsc);
				fprintf(out, "# TYPE %s %s\n", m.s[i].family, m.s[i].type);
				last = m.s[i].family;
			}
			fprintf(out, "%s\n", m.s[i].line);
		}
		if (ferror(out))
			m.err = -EIO;
	}
	for (size_t i = 0; i < m.n; i++) {
		free(m.s[i].family);
		free(m.s[i].line);
	}
	free(m.s);
	return m.err;
}
