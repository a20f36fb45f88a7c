/* SPDX-License-Identifier: MIT */
/*
 * The configuration (the lcfib YANG module's config nodes): loaded,
 * validated, prepared, applied by one table of handlers, persisted.
 * Loop thread.
 */
#ifndef LCFIB_DAEMON_CFG_H
#define LCFIB_DAEMON_CFG_H

#include <stdbool.h>

#include "daemon/err.h"
#include "daemon/writer.h"

struct lcfibd;
struct lcfibd_peer;

/* Loads the config file (or the defaults when it does not exist); 0 or -1 with a message logged. */
int cfg_init(struct lcfibd *d, bool check_only);
/* Checks that every config leaf of the module has a handler; -1 and a log line when not. */
int cfg_check_handlers(const struct lcfibd *d);
/* Applies the running config at start (every handler), once the loop and the writer run. */
void cfg_apply_all(struct lcfibd *d);
/*
 * SIGHUP: re-reads the file and applies what changed; on error keeps the
 * running config. While an edit is being applied, after it.
 */
void cfg_reload(struct lcfibd *d);
/*
 * An edit from the control socket, as a request: @mode CTL_EDIT_*; @data
 * JSON or, for a delete, an XPath. The caller's until done() (job.conn
 * and job.req_id are the client's; a client that goes sets job.conn
 * NULL, and an edit not started yet is then dropped).
 */
struct cfg_edit {
	struct writer_job job;            /* first: its conn and req_id */
	const struct lcfibd_peer *editor; /* the client, whose rights open route files */
	unsigned int mode;
	char *data;
	/*
	 * Loop thread: the edit ended, 0 or -1 with @e; @later: not inside
	 * cfg_edit_submit() (the client waited for the writer, or for edits
	 * before it).
	 */
	void (*done)(struct lcfibd *d, struct cfg_edit *ed, int ret, const struct lcfibd_err *e,
		     bool later);
	struct cfg_edit *next;
};

/*
 * Validates, prepares, applies and persists @ed, now or after the edits
 * before it. An edit that changes the FIB (static routes, route files it
 * adds) is applied by the writer, behind the jobs queued before it, and
 * ends when that is done: its reply waits, the loop does not. The edit
 * fails, and the config and the FIB stay as they were, when the FIB
 * refuses a static route or a route file's routes (route files loaded
 * before the one refused stay loaded, not configured: the error says).
 */
void cfg_edit_submit(struct lcfibd *d, struct cfg_edit *ed);
/* Records a loaded route file in the running config and persists it. */
int cfg_add_route_file(struct lcfibd *d, const char *path, const char *format, bool skip_bad,
		       struct lcfibd_err *e);
/* Loads the route files the running config names (at start, once the writer runs). */
void cfg_load_route_files(struct lcfibd *d);
/* Frees the configuration. */
void cfg_fini(struct lcfibd *d);

#endif
