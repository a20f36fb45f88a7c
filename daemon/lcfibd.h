/* SPDX-License-Identifier: MIT */
/*
 * lcfibd's parts and what they share.
 *
 * Two threads touch the FIB. The event loop (main.c, ctl.c) owns the
 * control socket, the configuration (cfg.c) and every reply; it reads the
 * FIB as an RCU reader (lookups, state), so it never waits for a change.
 * The writer thread (writer.c) makes every change: jobs queued by the loop
 * run there one after the other, and come back to the loop when done.
 */
#ifndef LCFIB_DAEMON_LCFIBD_H
#define LCFIB_DAEMON_LCFIBD_H

#include <libyang/libyang.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "lib/err.h"
#include "lib/fib.h"

struct cfg_commit;
struct cfg_edit;
struct cfg_static_job;
struct ctl_conn;
struct ctl_rpcs;
struct dcache;
struct feed;
struct feed_file_job;
struct feed_fpm;
struct http_ep;
struct feed_kernel;
struct ingest;
struct lcfibd_peer;
struct writer;
struct writer_job;

/* A kind of log line kept to one per interval (ctl.c). */
struct ctl_ratelimit {
	time_t last;
	unsigned int suppressed;
};

struct lcfibd_ctl_stats {
	uint64_t requests, errors, bad_frames, denied, config_writes;
	uint64_t refused, dropped; /* connections refused (no slot), peers dropped (not reading) */
	uint64_t lookups, bad_lookup_lines; /* lines of lookups streams answered, and bad */
	unsigned int clients;
	struct ctl_ratelimit log_refused, log_dropped, log_bad;
};

struct lcfibd {
	/* command line */
	const char *config_path;
	const char *socket_path;
	const char *state_dir;
	const char *pidfile;
	const char *yang_dir;
	const char *socket_group;
	bool socket_dir_ours; /* lcfibd made the socket's directory */
	int log_level_opt;    /* -1: the configured one */
	bool foreground;
	bool check_only; /* -t: the config's prepare() opens no socket */

	/* the feeds (NULL: off) */
	struct feed_kernel *kernel;
	struct feed_fpm *fpm;
	struct http_ep *metrics; /* the metrics endpoint (on or off) */
	struct feed *feeds;      /* every feed that has run, for feed_claim(); writer only */
	/* the static routes applied (loop thread): their lines, in config order */
	char **static_lines;
	unsigned int n_static;
	/*
	 * A config commit (cfg.c, loop thread). Between its prepare and its
	 * apply or abort: the static routes it makes running and the job
	 * that changes the FIB to them, and the route files it adds, parsed.
	 * Those go to the writer in one job (@inflight) and the commit ends
	 * when it is done; edits that come meanwhile wait in @queue, and a
	 * SIGHUP in @reload.
	 */
	struct cfg_pending {
		char **static_next;
		unsigned int n_static_next;
		bool static_prepared;
		bool static_undone; /* its job refused an add and undid itself */
		struct cfg_static_job *static_job;
		struct feed_file_job **rf_jobs;
		unsigned int n_rf_jobs;
		struct cfg_commit *inflight;
		struct cfg_edit *queue, **queue_tail;
		bool reload;
	} pending;

	/* the FIB; changed only by the writer */
	struct fib *fib;
	struct writer *writer;
	struct dcache *dcache; /* the destination caches of lookups (dcache.c) */

	/* configuration (loop thread) */
	struct ly_ctx *ly;
	const struct lys_module *mod;
	struct lyd_node *running; /* with defaults */
	bool has_admin_group;
	gid_t admin_gid;
	uint64_t max_file_size; /* max-route-file-size: bytes of a route file or stream */
	/* The client whose edit is being committed (NULL: the daemon's own, at start or SIGHUP). */
	const struct lcfibd_peer *editor;

	/* the event loop */
	int epfd, sigfd, timerfd, listen_fd;
	struct ctl_conn *conns;
	/*
	 * Connections closed during this round of events, freed after it
	 * (ctl_reap()): a later event of the same round may still name one.
	 */
	struct ctl_conn *closed;
	const struct ctl_rpcs *rpcs; /* the RPCs ctl.c dispatches (rpc.c's table) */
	bool stop;
	struct timespec started;
	uint64_t rate_prev_applied, rate; /* ingest rate over the last whole second */
	struct lcfibd_ctl_stats ctl;
	struct ingest *ingest;   /* counters of updates, loads */
	unsigned int stream_seq; /* names of saved streamed loads */
	char **loaded;           /* route files loaded or queued, by path */
	unsigned int n_loaded;
};

#endif
