/* SPDX-License-Identifier: MIT */
/*
 * The operational state of the lcfib module, built on request from the
 * library's counters (loop thread, as an RCU reader).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "config.h"
#include "daemon/dcache.h"
#include "daemon/feed.h"
#include "daemon/feed_fpm.h"
#include "daemon/feed_kernel.h"
#include "daemon/http.h"
#include "daemon/ingest.h"
#include "daemon/lcfibd.h"
#include "daemon/metrics.h"
#include "daemon/state.h"

static const char *const state_mem_names[MEM_CLASS_MAX] = {
	[MEM_TNODE] = "tnode",     [MEM_LEAF] = "leaf",         [MEM_NH] = "nh",
	[MEM_NH_INFO] = "nh-info", [MEM_TABLE] = "table",       [MEM_HASH] = "hash",
	[MEM_RECLAIM] = "reclaim", [MEM_FALLBACK] = "fallback",
};

static int state_term(struct lyd_node *parent, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int state_term(struct lyd_node *parent, const char *name, const char *fmt, ...)
{
	char buf[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return lyd_new_term(parent, NULL, name, buf, 0, NULL) == LY_SUCCESS ? 0 : -1;
}

static int state_u64(struct lyd_node *parent, const char *name, uint64_t v)
{
	return state_term(parent, name, "%llu", (unsigned long long)v);
}

static struct lyd_node *state_inner(struct lyd_node *parent, const char *name)
{
	struct lyd_node *n = NULL;

	if (lyd_new_inner(parent, NULL, name, 0, &n) != LY_SUCCESS)
		return NULL;
	return n;
}

/* A yang:date-and-time leaf, in UTC. */
static int state_time(struct lyd_node *parent, const char *name, time_t t)
{
	char when[64];
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return state_term(parent, name, "%s", when);
}

static int state_daemon(struct lcfibd *d, struct lyd_node *st)
{
	struct lyd_node *n = state_inner(st, "daemon");
	struct timespec now;
	int ret;

	if (!n)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ret = state_term(n, "version", "%s", PACKAGE_VERSION);
	ret |= state_u64(n, "pid", (uint64_t)getpid());
	ret |= state_time(n, "started", time(NULL) - (now.tv_sec - d->started.tv_sec));
	ret |= state_u64(n, "uptime", (uint64_t)(now.tv_sec - d->started.tv_sec));
	return ret;
}

static int state_routes(struct lyd_node *st, const struct fib_state *fs)
{
	struct lyd_node *n = state_inner(st, "routes");
	int ret;

	if (!n)
		return -1;
	ret = state_u64(n, "ipv4", fs->routes4);
	ret |= state_u64(n, "ipv6", fs->routes6);
	ret |= state_u64(n, "tables", fs->tables);
	ret |= state_u64(n, "nexthops", fs->nh_anonymous);
	ret |= state_u64(n, "nexthop-objects", fs->nh_objects);
	return ret;
}

static int state_table(struct lyd_node *st, const struct fib_table *tb)
{
	struct trie_stats ts;
	struct lyd_node *n;
	int ret;

	char id[16];

	fib_table_stats_rcu(tb, &ts);
	snprintf(id, sizeof(id), "%u", tb->id);
	if (lyd_new_list(st, NULL, "table", 0, &n, id, tb->family == AF_INET ? "ipv4" : "ipv6") !=
	    LY_SUCCESS)
		return -1;
	ret = state_u64(n, "routes", ts.routes);
	ret |= state_u64(n, "prefixes", ts.prefixes);
	ret |= state_u64(n, "leaves", ts.leaves);
	ret |= state_u64(n, "inline-leaves", ts.inline_leaves);
	ret |= state_u64(n, "shared-routes", ts.shared_routes);
	ret |= state_u64(n, "internal-nodes", ts.tnodes);
	for (unsigned int b = 1; b <= TRIE_MAX_BITS && !ret; b++) {
		struct lyd_node *nb;
		char bits[8];

		if (!ts.nodes_by_bits[b])
			continue;
		snprintf(bits, sizeof(bits), "%u", b);
		ret = lyd_new_list(n, NULL, "nodes-by-bits", 0, &nb, bits) != LY_SUCCESS;
		ret = ret ? ret : state_u64(nb, "nodes", ts.nodes_by_bits[b]);
	}
	ret |= state_u64(n, "pointers", ts.pointers);
	ret |= state_u64(n, "null-pointers", ts.null_pointers);
	ret |= state_term(n, "average-depth", "%.2f",
			  ts.leaves ? (double)ts.total_depth / (double)ts.leaves : 0.0);
	ret |= state_u64(n, "max-depth", ts.max_depth);
	ret |= state_u64(n, "leaf-bytes", ts.leaf_bytes);
	ret |= state_u64(n, "internal-node-bytes", ts.tnode_bytes);
	ret |= state_u64(n, "fallback-bytes", ts.fallback_bytes);
	ret |= state_u64(n, "bytes", ts.leaf_bytes + ts.tnode_bytes + ts.fallback_bytes);
	return ret;
}

static int state_reclaim(struct lyd_node *st, const struct reclaim_stats *r)
{
	struct lyd_node *n = state_inner(st, "reclamation");
	int ret;

	if (!n)
		return -1;
	ret = state_u64(n, "sync-mem", r->sync_mem);
	ret |= state_u64(n, "forced-waits", r->forced_waits);
	ret |= state_u64(n, "wait-time", r->wait_ns_total / 1000);
	ret |= state_u64(n, "longest-wait", r->wait_ns_max / 1000);
	ret |= state_u64(n, "retired-bytes", r->retired_bytes);
	ret |= state_u64(n, "freed-bytes", r->freed_bytes);
	ret |= state_u64(n, "pending-bytes", r->pending_bytes);
	ret |= state_u64(n, "peak-pending-bytes", r->peak_pending);
	ret |= state_u64(n, "max-object", r->max_object);
	ret |= state_u64(n, "retired-objects", r->retired_objects);
	ret |= state_u64(n, "background-batches", r->background_batches);
	return ret;
}

/* Resident and peak resident bytes of this process. */
static void state_rss(uint64_t *rss, uint64_t *peak)
{
	unsigned long pages = 0, res = 0;
	struct rusage ru;
	FILE *f = fopen("/proc/self/statm", "r");

	*rss = *peak = 0;
	if (f) {
		if (fscanf(f, "%lu %lu", &pages, &res) == 2)
			*rss = (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
		fclose(f);
	}
	if (!getrusage(RUSAGE_SELF, &ru))
		*peak = (uint64_t)ru.ru_maxrss * 1024;
}

static int state_memory(struct lyd_node *st, const struct mem_stats *m)
{
	struct lyd_node *n = state_inner(st, "memory");
	uint64_t rss, peak;
	int ret = 0;

	if (!n)
		return -1;
	for (unsigned int c = 0; c < MEM_CLASS_MAX && !ret; c++) {
		struct lyd_node *cl;

		ret = lyd_new_list(n, NULL, "class", 0, &cl, state_mem_names[c]) != LY_SUCCESS;
		ret = ret ? ret : state_u64(cl, "bytes", m->cls[c].bytes);
		ret = ret ? ret : state_u64(cl, "objects", m->cls[c].objects);
	}
	state_rss(&rss, &peak);
	ret |= state_u64(n, "live-bytes", m->live_bytes);
	ret |= state_u64(n, "slab-bytes", m->slab_bytes);
	ret |= state_u64(n, "slab-free-bytes", m->slab_free_bytes);
	ret |= state_u64(n, "slab-released-bytes", m->slab_released_bytes);
	ret |= state_u64(n, "trims", m->trims);
	ret |= state_u64(n, "compactions", m->compactions);
	ret |= state_u64(n, "resident-bytes", rss);
	ret |= state_u64(n, "peak-resident-bytes", peak);
	return ret;
}

static int state_ingest(struct lcfibd *d, struct lyd_node *st)
{
	struct ingest_state s, *in = &s;
	struct lyd_node *n = state_inner(st, "ingest"), *l;
	int ret;

	if (!n)
		return -1;
	ingest_get(d->ingest, in);
	ret = state_u64(n, "updates-applied", in->applied);
	ret |= state_u64(n, "updates-rejected", in->rejected);
	ret |= state_u64(n, "rate", d->rate);
	ret |= state_u64(n, "loads", in->loads);
	ret |= state_u64(n, "loads-failed", in->loads_failed);
	ret |= state_u64(n, "loads-not-recorded", in->loads_not_recorded);
	if (in->last_error[0])
		ret |= state_term(n, "last-error", "%s", in->last_error);
	if (in->phase) {
		l = state_inner(n, "load");
		ret |= l ? 0 : -1;
		if (l) {
			ret |= state_term(l, "file", "%s", in->file);
			ret |= state_term(l, "phase", "%s", in->phase);
			ret |= state_u64(l, "done", in->done);
			ret |= state_u64(l, "total", in->total);
		}
	}
	if (in->last_file[0]) {
		l = state_inner(n, "last-load");
		ret |= l ? 0 : -1;
		if (l) {
			ret |= state_term(l, "file", "%s", in->last_file);
			ret |= state_u64(l, "routes", in->last.routes);
			ret |= state_u64(l, "skipped", in->last.skipped);
			ret |= state_u64(l, "duration", in->last.duration_us);
			ret |= state_u64(l, "rate", in->last.rate);
			ret |= state_u64(l, "parse-duration", in->last.parse_us);
			ret |= state_u64(l, "apply-waited", in->last.waited_us);
			ret |= state_u64(l, "rebalance-duration", in->last.rebalance_us);
		}
	}
	return ret;
}

static int state_control(struct lcfibd *d, struct lyd_node *st)
{
	struct lyd_node *n = state_inner(st, "control");
	int ret;

	if (!n)
		return -1;
	ret = state_u64(n, "clients", d->ctl.clients);
	ret |= state_u64(n, "requests", d->ctl.requests);
	ret |= state_u64(n, "errors", d->ctl.errors);
	ret |= state_u64(n, "bad-frames", d->ctl.bad_frames);
	ret |= state_u64(n, "streamed-lookups", d->ctl.lookups);
	ret |= state_u64(n, "bad-lookup-lines", d->ctl.bad_lookup_lines);
	ret |= state_u64(n, "denied", d->ctl.denied);
	ret |= state_u64(n, "refused", d->ctl.refused);
	ret |= state_u64(n, "dropped", d->ctl.dropped);
	ret |= state_u64(n, "config-writes", d->ctl.config_writes);
	return ret;
}

/* Whether @xpath may select the table list: a path above it, or one that names it. */
static bool state_wants_tables(const char *xpath)
{
	static const char *const above[] = { "", "/", "/lcfib:lcfib", "/lcfib:lcfib/state" };

	for (unsigned int i = 0; i < sizeof(above) / sizeof(above[0]); i++) {
		if (strcmp(xpath, above[i]) == 0)
			return true;
	}
	return strstr(xpath, "table") != NULL || strstr(xpath, "//") != NULL ||
	       strchr(xpath, '*') != NULL;
}

/* @fi: the FPM feed's own (NULL for the kernel's). */
static int state_feed(struct lyd_node *feeds, const char *name, bool running,
		      const struct feed_stats *fs, const struct feed_fpm_info *fi)
{
	struct lyd_node *n;
	int ret;

	if (lyd_new_list(feeds, NULL, "feed", 0, &n, name) != LY_SUCCESS)
		return -1;
	ret = state_term(n, "running", "%s", running ? "true" : "false");
	if (fi && fi->peer[0])
		ret |= state_term(n, "peer", "%s", fi->peer);
	if (fi && fi->since)
		ret |= state_time(n, "connected-since", fi->since);
	ret |= state_u64(n, "messages", fs->messages);
	ret |= state_u64(n, "routes", fs->routes);
	ret |= state_u64(n, "nexthop-objects", fs->nexthops);
	ret |= state_u64(n, "waiting-nexthop-objects", fs->wait_objects);
	ret |= state_u64(n, "waiting-routes", fs->wait_routes);
	ret |= state_u64(n, "route-updates", fs->route_updates);
	ret |= state_u64(n, "coalesced", fs->coalesced);
	ret |= state_u64(n, "skipped", fs->skipped);
	ret |= state_u64(n, "decode-errors", fs->decode_errors);
	ret |= state_u64(n, "apply-errors", fs->apply_errors);
	ret |= state_u64(n, "dumps", fs->dumps);
	ret |= state_term(n, "syncing", "%s", fs->syncing ? "true" : "false");
	ret |= state_u64(n, "swept", fs->swept);
	ret |= state_u64(n, "flushed", fs->flushed);
	if (!fi) {
		ret |= state_u64(n, "resyncs", fs->resyncs);
		ret |= state_u64(n, "enobufs", fs->enobufs);
	} else {
		ret |= state_u64(n, "connects", fs->connects);
		ret |= state_u64(n, "refused", fs->refused);
		ret |= state_u64(n, "backlog-waits", fs->backlog_waits);
		ret |= state_u64(n, "unauthorized", fi->unauthorized);
		ret |= state_u64(n, "dropped-silent", fi->dropped_silent);
		if (fi->listening[0])
			ret |= state_term(n, "listening", "%s", fi->listening);
		if (fi->listen_error[0])
			ret |= state_term(n, "listen-error", "%s", fi->listen_error);
	}
	if (fs->last_error[0])
		ret |= state_term(n, "last-error", "%s", fs->last_error);
	return ret;
}

static int state_feeds(struct lcfibd *d, struct lyd_node *st)
{
	struct lyd_node *n = state_inner(st, "feeds");
	struct feed_stats fs;
	struct feed_fpm_info fi;
	bool running;
	int ret;

	if (!n)
		return -1;
	memset(&fs, 0, sizeof(fs));
	running = feed_kernel_stats(d, &fs);
	ret = state_feed(n, "kernel", running, &fs, NULL);
	memset(&fs, 0, sizeof(fs));
	memset(&fi, 0, sizeof(fi));
	running = feed_fpm_stats(d, &fs, &fi);
	ret |= state_feed(n, "fpm", running, &fs, &fi);
	return ret;
}

static int state_http(struct lcfibd *d, struct lyd_node *st)
{
	struct lyd_node *n = state_inner(st, "metrics");
	struct http_stats hs;
	unsigned int conns;
	bool listening;
	int ret;

	if (!n)
		return -1;
	http_ep_state(d->metrics, &hs, &listening, &conns);
	ret = state_term(n, "listening", "%s", listening ? "true" : "false");
	ret |= state_u64(n, "connections", conns);
	ret |= state_u64(n, "scrapes", hs.scrapes);
	ret |= state_u64(n, "bad-requests", hs.bad_requests);
	ret |= state_u64(n, "refused", hs.refused);
	ret |= state_u64(n, "timed-out", hs.timed_out);
	return ret;
}

static int state_cache(struct lcfibd *d, struct lyd_node *st)
{
	struct lyd_node *n = state_inner(st, "cache");
	struct dcache_state s;
	int ret;

	if (!n)
		return -1;
	dcache_get_state(d, &s);
	ret = state_term(n, "enabled", "%s", s.cfg.enabled ? "true" : "false");
	ret |= state_term(n, "mode", "%s", cache_mode_name(s.cfg.mode));
	ret |= state_u64(n, "size", s.cfg.size);
	ret |= state_u64(n, "nr-scans", s.cfg.nr_scans);
	ret |= state_term(n, "admission", "%s", s.cfg.admit_second ? "second-miss" : "every-miss");
	ret |= state_u64(n, "caches", s.caches);
	ret |= state_u64(n, "hits", s.st.hits);
	ret |= state_u64(n, "misses", s.st.misses);
	ret |= state_u64(n, "fills", s.st.fills);
	ret |= state_u64(n, "evictions", s.st.evictions);
	ret |= state_u64(n, "invalidations", s.st.invalidations);
	ret |= state_u64(n, "rotations", s.st.rotations);
	ret |= state_u64(n, "bypassed", s.st.bypassed);
	ret |= state_u64(n, "first-misses", s.st.first_misses);
	return ret;
}

int state_metrics(struct lcfibd *d, char **text, size_t *len)
{
	struct lyd_node *top = NULL, *st = NULL;
	FILE *out;
	int ret = -1;

	*text = NULL;
	*len = 0;
	if (lyd_new_inner(NULL, d->mod, "lcfib", 0, &top) != LY_SUCCESS)
		return -1;
	if (state_build(d, top, "") == 0 && lyd_find_path(top, "state", 0, &st) == LY_SUCCESS) {
		out = open_memstream(text, len);
		if (out) {
			ret = metrics_write(st, out);
			if (fclose(out))
				ret = -1;
		}
	}
	lyd_free_all(top);
	if (ret) {
		free(*text);
		*text = NULL;
		*len = 0;
	}
	return ret ? -1 : 0;
}

int state_build(struct lcfibd *d, struct lyd_node *top, const char *xpath)
{
	struct lyd_node *st = state_inner(top, "state");
	struct fib_state fs;
	int ret;

	if (!st)
		return -1;
	fib_get_state(d->fib, &fs);
	ret = state_daemon(d, st);
	ret |= state_routes(st, &fs);
	fib_read_lock();
	for (unsigned int i = 0; !ret && state_wants_tables(xpath); i++) {
		const struct fib_table *tb = fib_table_at_rcu(d->fib, i);

		if (!tb)
			break;
		ret = state_table(st, tb);
	}
	fib_read_unlock();
	ret |= state_reclaim(st, &fs.reclaim);
	ret |= state_memory(st, &fs.mem);
	ret |= state_ingest(d, st);
	ret |= state_feeds(d, st);
	ret |= state_control(d, st);
	ret |= state_http(d, st);
	ret |= state_cache(d, st);
	return ret ? -1 : 0;
}
