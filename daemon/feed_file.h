/* SPDX-License-Identifier: MIT */
/*
 * Route files: the third source of routes, beside the kernel's and FPM's.
 * A file (or a client's stream of one) is parsed and applied by the writer
 * thread in one job, its progress and outcome counted (daemon/ingest.h),
 * and the result handed back to whoever asked, on the loop thread, in the
 * job's done(). What to reply, and whether to record the file in the
 * config, is the caller's (rpc.c) business.
 */
#ifndef LCFIB_DAEMON_FEED_FILE_H
#define LCFIB_DAEMON_FEED_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "daemon/writer.h"
#include "lib/err.h"
#include "lib/routefile.h"

struct lcfibd;

struct feed_file_job {
	struct writer_job job; /* first; job.conn and job.req_id are the caller's */
	/* what to load */
	char *path;     /* as the client named it */
	char *format;   /* auto, batch, plain */
	bool skip_bad;  /* skip-bad-lines */
	bool transient; /* the caller's: not to be recorded in the config */
	char *buf;      /* a streamed file (the job's), or NULL */
	size_t len;
	int fd; /* the file, opened with the client's rights (the job's); -1: open path */
	/*
	 * Loop thread, when the load is done, counted and logged: the
	 * caller's; it frees @j with feed_file_job_free().
	 */
	void (*done)(struct lcfibd *d, struct feed_file_job *j);
	/* the result, for done() */
	int ret; /* 0, or -errno with @err */
	struct errbuf err;
	struct routefile *rf; /* its bad lines: routefile_bad_line() */
	struct routefile_result res;
	uint64_t lines, duration_us, rate;
	uint64_t parse_ns; /* feed_file_parse()'s, before the apply */
	/* the load's own */
	struct timespec t0, last_kick;
};

/* Loop thread: a load of @path (format NULL: auto). NULL with errno set. */
struct feed_file_job *feed_file_job_new(const char *path, const char *format, bool skip_bad);
void feed_file_job_free(struct feed_file_job *j);
/*
 * Loop thread: reads and parses @j's file now (then the writer only
 * applies it), so that a config edit naming the file can fail with the
 * file's own error: a bad line (unless skip_bad), or what reading it
 * met. 0, or -errno with j->err set, counted and logged.
 */
int feed_file_parse(struct lcfibd *d, struct feed_file_job *j);
/*
 * Writer thread: applies @j (parsed by feed_file_parse()) inside a job of
 * the caller's (a config commit's): counted in state as a load. Returns
 * j->ret. Then, on the loop thread, feed_file_applied().
 */
int feed_file_apply(struct lcfibd *d, struct feed_file_job *j);
/*
 * Loop thread: logs and counts what feed_file_apply() did to @j, records
 * the file as loaded when it applied, and frees @j.
 */
void feed_file_applied(struct lcfibd *d, struct feed_file_job *j);
/* Loop thread: queues @j for the writer. */
void feed_file_submit(struct lcfibd *d, struct feed_file_job *j);
/*
 * The lines a load skipped: those that did not parse and those that did
 * not apply. The reply, the log and state all give this one count.
 */
uint64_t feed_file_skipped(const struct feed_file_job *j);

/*
 * Loop thread: loads a route file the config names (at start, or added by
 * an edit or SIGHUP), read with the daemon's rights; its result is only
 * counted and logged.
 */
void feed_file_load_configured(struct lcfibd *d, const char *path, const char *format,
			       bool skip_bad);
/* Loop thread: whether @path was loaded (or queued) already; a loaded file now is. */
bool feed_file_loaded(const struct lcfibd *d, const char *path);
void feed_file_loaded_add(struct lcfibd *d, const char *path);
void feed_file_loaded_free(struct lcfibd *d);

#endif
