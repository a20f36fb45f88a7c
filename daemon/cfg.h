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

struct lcfibd;

/* Loads the config file (or the defaults when it does not exist); 0 or -1 with a message logged. */
int cfg_init(struct lcfibd *d, bool check_only);
/* Checks that every config leaf of the module has a handler; -1 and a log line when not. */
int cfg_check_handlers(const struct lcfibd *d);
/* Applies the running config at start (every handler), once the loop and the writer run. */
void cfg_apply_all(struct lcfibd *d);
/* SIGHUP: re-reads the file and applies what changed; on error keeps the running config. */
void cfg_reload(struct lcfibd *d);
/*
 * An edit from the control socket: @mode CTL_EDIT_*; @data JSON or, for a
 * delete, an XPath. Validates, prepares, applies, persists. 0 or -1 with @e.
 */
int cfg_edit(struct lcfibd *d, unsigned int mode, const char *data, struct lcfibd_err *e);
/* Records a loaded route file in the running config and persists it. */
int cfg_add_route_file(struct lcfibd *d, const char *path, const char *format, bool skip_bad,
		       struct lcfibd_err *e);
/* Loads the route files the running config names (at start, once the writer runs). */
void cfg_load_route_files(struct lcfibd *d);
/* Frees the configuration. */
void cfg_fini(struct lcfibd *d);

#endif
