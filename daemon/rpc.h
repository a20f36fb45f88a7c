/* SPDX-License-Identifier: MIT */
/*
 * The RPCs of the lcfib module (lookup, routes, route-add, load, ...).
 * Loop thread; changes go to the writer as jobs.
 */
#ifndef LCFIB_DAEMON_RPC_H
#define LCFIB_DAEMON_RPC_H

struct lcfibd;

/*
 * Loop thread, at start: checks that every RPC of the lcfib module has a
 * handler (-1 and a log line per RPC without one), and registers the
 * handlers with ctl.c.
 */
int rpc_init(struct lcfibd *d);

#endif
