/* SPDX-License-Identifier: MIT */
/*
 * Route files as a source of routes: one writer job per file parses it
 * and applies it (lib/routefile.h), reports progress, and hands the result
 * back to the loop, where it is counted and logged before the caller's
 * done() sees it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/feed.h"
#include "daemon/feed_file.h"
#include "daemon/ingest.h"
#include "daemon/lcfibd.h"
#include "daemon/log.h"
#include "daemon/writer.h"

static uint64_t feed_file_now_us(const struct timespec *since)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)(t.tv_sec - since->tv_sec) * 1000000u +
	       (uint64_t)((t.tv_nsec - since->tv_nsec) / 1000);
}

static enum routefile_format feed_file_format(const char *s)
{
	if (s && strcmp(s, "batch") == 0)
		return ROUTEFILE_BATCH;
	if (s && strcmp(s, "plain") == 0)
		return ROUTEFILE_PLAIN;
	return ROUTEFILE_AUTO;
}

struct feed_file_progress {
	struct lcfibd *d;
	struct feed_file_job *j;
};

/* Writer thread: records progress and wakes the loop, at most ten times a second. */
static void feed_file_progress(void *ctx, const char *phase, uint64_t done, uint64_t total)
{
	struct feed_file_progress *p = ctx;
	struct timespec now;

	ingest_load_phase(p->d->ingest, phase, done, total);
	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - p->j->last_kick.tv_sec) * 1000000000L + now.tv_nsec -
		    p->j->last_kick.tv_nsec <
	    100000000L)
		return;
	p->j->last_kick = now;
	writer_kick(p->d->writer);
}

uint64_t feed_file_skipped(const struct feed_file_job *j)
{
	return j->rf ? routefile_bad_lines(j->rf) : 0;
}

/* A route file's add: refused on a key a feed holds, as a control-socket add is. */
static int feed_file_claim(void *ctx, const struct fib_rcfg *rc, struct errbuf *err)
{
	return feed_claim(ctx, rc, err);
}

static struct routefile *feed_file_rf_new(struct lcfibd *d, struct feed_file_job *j)
{
	struct routefile_opts o = {
		.format = feed_file_format(j->format),
		.family = AF_UNSPEC,
		.skip_bad_lines = j->skip_bad,
		.name = j->path,
		.max_size = d->max_file_size,
		.cancel = &j->job.cancel,
		.claim = feed_file_claim,
		.claim_ctx = d,
	};

	return routefile_new(&o);
}

/* Reads and parses the file of @j (a stream, a descriptor or its path) into j->rf. */
static int feed_file_read(struct lcfibd *d, struct feed_file_job *j)
{
	j->rf = feed_file_rf_new(d, j);
	if (!j->rf) {
		err_set(&j->err, "%s: out of memory", j->path);
		return -ENOMEM;
	}
	if (j->buf) {
		int ret = routefile_feed(j->rf, j->buf, j->len, true);

		if (ret == -ECANCELED)
			err_set(&j->err, "%s: cancelled", j->path);
		else if (ret)
			err_set(&j->err, "%s: %s", j->path, strerror(-ret));
		return ret;
	}
	if (j->fd >= 0)
		return routefile_read_fd(j->rf, j->fd, &j->err);
	/* A configured file: the config is root's (see rpc.c's rpc_load_open()). */
	return routefile_read_file(j->rf, j->path, &j->err);
}

/*
 * Reads, parses and applies the file of @j (a stream, a descriptor or its
 * path) into j->rf: the parse on a thread of its own, the routes applied
 * as they are parsed (routefile_load_fd()).
 */
static int feed_file_load(struct lcfibd *d, struct feed_file_job *j, struct feed_file_progress *p)
{
	int fd, ret;

	ingest_load_phase(d->ingest, "parsing", 0, 0);
	writer_kick(d->writer);
	j->rf = feed_file_rf_new(d, j);
	if (!j->rf) {
		err_set(&j->err, "%s: out of memory", j->path);
		return -ENOMEM;
	}
	if (j->buf)
		return routefile_load_buf(j->rf, j->buf, j->len, d->fib, feed_file_progress, p,
					  &j->res, &j->err);
	if (j->fd >= 0)
		return routefile_load_fd(j->rf, j->fd, d->fib, feed_file_progress, p, &j->res,
					 &j->err);
	/* A configured file: the config is root's (see rpc.c's rpc_load_open()). */
	fd = routefile_open(j->path, d->max_file_size, &j->err);
	if (fd < 0)
		return fd;
	ret = routefile_load_fd(j->rf, fd, d->fib, feed_file_progress, p, &j->res, &j->err);
	close(fd);
	return ret;
}

static void feed_file_run(struct lcfibd *d, struct writer_job *wj)
{
	struct feed_file_job *j = (struct feed_file_job *)wj;
	struct feed_file_progress p = { d, j };

	ingest_load_begin(d->ingest, wj, j->path);
	if (j->rf) /* parsed by feed_file_parse() */
		j->ret = routefile_apply(j->rf, d->fib, feed_file_progress, &p, &j->res, &j->err);
	else
		j->ret = feed_file_load(d, j, &p);
	j->lines = j->rf ? routefile_lines(j->rf) : 0;
	j->duration_us = feed_file_now_us(&j->t0);
	if (j->ret)
		ingest_count(d->ingest, 0, feed_file_skipped(j) ? feed_file_skipped(j) : 1);
	else
		ingest_count(d->ingest, j->res.applied, feed_file_skipped(j));
	ingest_load_end(d->ingest);
}

int feed_file_parse(struct lcfibd *d, struct feed_file_job *j)
{
	struct timespec t0;
	uint64_t bad;
	const char *msg;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = feed_file_read(d, j);
	j->parse_ns = feed_file_now_us(&t0) * 1000;

	if (!ret && !j->skip_bad && (bad = routefile_bad_lines(j->rf)) > 0) {
		/* What routefile_apply() would refuse the whole file for, said now. */
		if (routefile_bad_line(j->rf, 0, NULL, NULL, &msg))
			msg = "(not kept)";
		if (bad == 1)
			err_set(&j->err, "%s", msg);
		else
			err_set(&j->err, "%s: %llu bad lines, nothing applied; the first: %s",
				j->path, (unsigned long long)bad, msg);
		ret = -EINVAL;
	}
	if (ret) {
		ingest_count(d->ingest, 0, feed_file_skipped(j) ? feed_file_skipped(j) : 1);
		ingest_load_failed(d->ingest, j->err.msg);
		log_err("load of %s refused: %s", j->path, j->err.msg);
	}
	return ret;
}

int feed_file_apply(struct lcfibd *d, struct feed_file_job *j)
{
	feed_file_run(d, &j->job);
	return j->ret;
}

static void feed_file_configured_done(struct lcfibd *d, struct feed_file_job *j);

/* Loop thread: counts and logs the load, then gives it to the caller. */
static void feed_file_done(struct lcfibd *d, struct writer_job *wj)
{
	struct feed_file_job *j = (struct feed_file_job *)wj;

	j->rate = j->duration_us ? j->res.applied * 1000000u / j->duration_us : 0;
	if (j->ret) {
		ingest_load_failed(d->ingest, j->err.msg);
		log_err("load of %s applied nothing: %s", j->path, j->err.msg);
	} else {
		struct ingest_load l = {
			.routes = j->res.applied,
			.skipped = feed_file_skipped(j),
			.duration_us = j->duration_us,
			.rate = j->rate,
			/* Parsed before the apply (a config edit), or as it ran. */
			.parse_us = (j->parse_ns ? j->parse_ns : j->res.parse_ns) / 1000,
			.waited_us = j->res.waited_ns / 1000,
			.rebalance_us = j->res.rebalance_ns / 1000,
		};

		ingest_load_succeeded(d->ingest, j->path, &l);
		log_notice("loaded %s: %llu routes in %.3f s (%llu/s), %llu bad lines skipped",
			   j->path, (unsigned long long)j->res.applied, j->duration_us / 1e6,
			   (unsigned long long)j->rate, (unsigned long long)feed_file_skipped(j));
	}
	j->done(d, j);
}

struct feed_file_job *feed_file_job_new(const char *path, const char *format, bool skip_bad)
{
	struct feed_file_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->fd = -1;
	j->job.run = feed_file_run;
	j->job.done = feed_file_done;
	clock_gettime(CLOCK_MONOTONIC, &j->t0);
	j->path = strdup(path);
	j->format = strdup(format ? format : "auto");
	j->skip_bad = skip_bad;
	if (!j->path || !j->format) {
		feed_file_job_free(j);
		errno = ENOMEM;
		return NULL;
	}
	return j;
}

void feed_file_job_free(struct feed_file_job *j)
{
	routefile_free(j->rf);
	if (j->fd >= 0)
		close(j->fd);
	free(j->path);
	free(j->format);
	free(j->buf);
	free(j);
}

void feed_file_submit(struct lcfibd *d, struct feed_file_job *j)
{
	writer_submit(d->writer, &j->job);
}

void feed_file_loaded_add(struct lcfibd *d, const char *path)
{
	char **v = realloc(d->loaded, (d->n_loaded + 1) * sizeof(*v));

	if (!v)
		return;
	d->loaded = v;
	v[d->n_loaded] = strdup(path);
	if (v[d->n_loaded])
		d->n_loaded++;
}

bool feed_file_loaded(const struct lcfibd *d, const char *path)
{
	for (unsigned int i = 0; i < d->n_loaded; i++) {
		if (strcmp(d->loaded[i], path) == 0)
			return true;
	}
	return false;
}

void feed_file_loaded_free(struct lcfibd *d)
{
	for (unsigned int i = 0; i < d->n_loaded; i++)
		free(d->loaded[i]);
	free(d->loaded);
	d->loaded = NULL;
	d->n_loaded = 0;
}

/* A configured load's result is counted and logged already. */
static void feed_file_configured_done(struct lcfibd *d, struct feed_file_job *j)
{
	(void)d;
	feed_file_job_free(j);
}

void feed_file_applied(struct lcfibd *d, struct feed_file_job *j)
{
	j->transient = true;
	j->done = feed_file_configured_done;
	if (!j->ret)
		feed_file_loaded_add(d, j->path);
	feed_file_done(d, &j->job);
}

/* A load of a configured file: @j, made by feed_file_job_new() (and maybe parsed), is taken. */
static void feed_file_submit_configured(struct lcfibd *d, struct feed_file_job *j)
{
	j->transient = true;
	j->done = feed_file_configured_done;
	feed_file_loaded_add(d, j->path);
	log_info("loading configured route file %s", j->path);
	feed_file_submit(d, j);
}

void feed_file_load_configured(struct lcfibd *d, const char *path, const char *format,
			       bool skip_bad)
{
	struct feed_file_job *j = feed_file_job_new(path, format, skip_bad);

	if (!j) {
		log_err("out of memory queueing %s", path);
		return;
	}
	feed_file_submit_configured(d, j);
}
