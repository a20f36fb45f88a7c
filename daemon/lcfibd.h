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
#include "daemon/feed.h"
#include "lib/fib.h"

struct ctl_conn;
struct writer;
struct writer_job;

/* Where a message for the client goes: text, YANG path, app-tag. */
struct lcfibd_err {
	char msg[1024];
	char path[512];
	const char *tag;
};

/* Counters of route updates from every source: written by the writer, read by anyone. */
struct lcfibd_ingest {
	uint64_t applied, rejected;
	uint64_t loads, loads_failed;
	uint64_t loads_not_recorded; /* under lock */
	/* the load in progress (phase NULL: none), under lock */
	pthread_mutex_t lock;
	const struct writer_job *job;
	const char *phase;
	struct timespec phase_start;
	char file[256];
	uint64_t done, total;
	/* the last load that finished, under lock */
	char last_file[256];
	uint64_t last_routes, last_skipped, last_duration_us, last_rate;
	char last_error[512];
};

/* A kind of log line kept to one per interval (ctl.c). */
struct ctl_ratelimit {
	time_t last;
	unsigned int suppressed;
};

/* Who is at the other end of a control connection, as it connected. */
struct lcfibd_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	gid_t *groups; /* supplementary (SO_PEERGROUPS), malloc'd */
	unsigned int n_groups;
};

struct lcfibd_ctl_stats {
	uint64_t requests, errors, bad_frames, denied, config_writes;
	uint64_t refused, dropped; /* connections refused (no slot), peers dropped (not reading) */
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
	struct feed *feeds; /* every feed that has run, for feed_claim(); writer only */
	/* the static routes applied (loop thread): their lines, in config order */
	char **static_lines;
	unsigned int n_static;

	/* the FIB; changed only by the writer */
	struct fib *fib;
	struct writer *writer;

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
	bool stop;
	struct timespec started;
	uint64_t rate_prev_applied, rate; /* ingest rate over the last whole second */
	struct lcfibd_ctl_stats ctl;
	struct lcfibd_ingest ingest;
	unsigned int stream_seq; /* names of saved streamed loads */
	char **loaded;           /* route files loaded or queued, by path */
	unsigned int n_loaded;
};

/* Loop thread: watches @fd for @events (EPOLLIN, ...); @s->fn is called with them. */
int lcfibd_watch(struct lcfibd *d, int fd, uint32_t events, struct lcfibd_source *s);

/* Sets a message (printf-style) with an app-tag and optional path. */
void lcfibd_err_set(struct lcfibd_err *e, const char *tag, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Fills @e from libyang's last error in @ly (message, path, app-tag); @what (may be NULL) prefixes
 * the message. */
void lcfibd_err_from_ly(struct lcfibd_err *e, const struct ly_ctx *ly, const char *what);

/* ------------------------------------------------------------- writer.c */

/*
 * A unit of work for the writer thread. run() executes there; done()
 * then runs on the loop thread. The loop allocates and frees jobs.
 */
struct writer_job {
	void (*run)(struct lcfibd *d, struct writer_job *j);
	void (*done)(struct lcfibd *d, struct writer_job *j);
	struct writer_job *next;
	struct ctl_conn *conn; /* who asked, or NULL (start-up, gone) */
	uint32_t req_id;
	/*
	 * ROUTEFILE_CANCEL: the client went away; ROUTEFILE_ABANDON: the
	 * daemon exits. Set by the loop (atomically), read by run().
	 */
	int cancel;
};

struct writer *writer_start(struct lcfibd *d);
/*
 * Loop thread, after every client is gone: runs the jobs still queued,
 * stops the thread, and finishes them (done() with no client). The
 * running job and the queued ones are marked ROUTEFILE_ABANDON first, so
 * a load in progress or waiting ends at once instead of delaying the exit.
 */
void writer_stop(struct writer *w);
void writer_submit(struct writer *w, struct writer_job *j);
/* The eventfd the loop polls for finished jobs and progress. */
int writer_event_fd(const struct writer *w);
/* Loop thread: calls done() of every finished job. */
void writer_reap(struct lcfibd *d);
/* Writer thread: wakes the loop (progress to report). */
void writer_kick(struct writer *w);
/* Whether jobs are queued or running. */
bool writer_busy(const struct writer *w);

/* ---------------------------------------------------------------- peer.c */

/* The credentials and groups of the peer of the unix socket @fd; 0 or -errno. */
int peer_get(int fd, struct lcfibd_peer *p);
void peer_free(struct lcfibd_peer *p);
/*
 * Opens the route file at @path with @p's rights (its fsuid, fsgid and
 * groups, no capabilities), then routefile_check_fd(). Returns the
 * descriptor, or a negative errno with a message naming @path.
 */
int peer_open(const struct lcfibd_peer *p, const char *path, uint64_t max_size, struct errbuf *err);
/* Whether @path, opened as @p, is the file open at @fd: 0, or -errno with a message. */
int peer_same_file(int fd, const struct lcfibd_peer *p, const char *path, uint64_t max_size,
		   struct errbuf *err);

/* ---------------------------------------------------------------- cfg.c */

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
/* Frees the configuration. */
void cfg_fini(struct lcfibd *d);

/* -------------------------------------------------------------- state.c */

/*
 * Adds the operational state under the lcfib container @top (loop thread).
 * The tries' statistics walk every trie: only when @xpath ("" or "/": all)
 * may select them.
 */
int state_build(struct lcfibd *d, struct lyd_node *top, const char *xpath);

/* ---------------------------------------------------------------- rpc.c */

/*
 * Runs the RPC in @tree (validated). Returns 0 with *@reply (JSON, malloc'd,
 * may be NULL for an empty reply), 1 when the RPC went to the writer (the
 * reply comes later), or -1 with @e.
 */
int rpc_run(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const struct lyd_node *op,
	    char **reply, struct lcfibd_err *e);
/* Whether the RPC named @name only reads. */
bool rpc_is_read_only(const char *name);
/* Loads the configured route files (start-up, SIGHUP); @only_new skips those loaded already. */
void rpc_load_configured(struct lcfibd *d, bool only_new);
/* A streamed load's bytes arrived: queue it. */
int rpc_load_stream_end(struct lcfibd *d, struct ctl_conn *c, struct lcfibd_err *e);
/* A streamed load's client went away before the end: drop the job. */
void rpc_load_stream_abort(struct writer_job *j);
void rpc_loaded_free(struct lcfibd *d);

/* ---------------------------------------------------------------- ctl.c */

int ctl_listen(struct lcfibd *d);
/*
 * Append @s to the JSON text *@out (*@len bytes in *@cap, NUL-terminated,
 * grown as needed): as it is (raw), or as a string, quoted, escaped, with
 * bytes that are not UTF-8 made U+FFFD (str). On want of memory the text
 * stays as it was.
 */
void ctl_json_raw(char **out, size_t *len, size_t *cap, const char *s);
void ctl_json_str(char **out, size_t *len, size_t *cap, const char *s);
void ctl_close_all(struct lcfibd *d);
/* Replies to @c (may be NULL: dropped). */
void ctl_reply(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const char *json);
void ctl_reply_error(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const struct lcfibd_err *e);
void ctl_reply_errors(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const struct lcfibd_err *e,
		      unsigned int n);
void ctl_notify(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const char *json);
/* A piece of a long reply (CTL_PART): @len bytes of JSON that the next pieces continue. */
void ctl_reply_part(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const char *json,
		    size_t len);

/*
 * A reply made piece by piece as the connection drains (a listing), so
 * that it never needs more memory than a piece. When little of @c's
 * output is left unsent, ctl.c calls more(), which queues the next piece
 * with ctl_reply_part() and returns 0, or queues the last with
 * ctl_reply() or ctl_reply_error() and returns 1. free() drops @ctx at
 * the end, or when the peer is gone. @c's later frames wait till the end.
 */
struct ctl_producer {
	int (*more)(struct lcfibd *d, struct ctl_conn *c, uint32_t id, void *ctx);
	void (*free)(void *ctx);
};
void ctl_conn_produce(struct ctl_conn *c, uint32_t id, const struct ctl_producer *p, void *ctx);
/*
 * Loop thread, after each round of events: gives every connection with
 * frames to serve (or a reply to go on with) one turn. Returns whether
 * some have more, so that the loop comes back without waiting.
 */
bool ctl_serve(struct lcfibd *d);
/* Loop thread, every second: drops peers that left too much unread for too long. */
void ctl_tick(struct lcfibd *d);
/*
 * Serves @len bytes as if a peer had sent them on a connection of its
 * own (as root with @admin, else as a reader), until nothing is left to
 * do; the replies go nowhere. For fuzzing the requests without sockets.
 */
void ctl_serve_bytes(struct lcfibd *d, bool admin, const uint8_t *buf, size_t len);
/* The request of @c is answered: read its next frames. */
void ctl_conn_resume(struct lcfibd *d, struct ctl_conn *c);
/* The stream buffer of @c (a load with path "-"), taken by the caller. */
char *ctl_conn_take_stream(struct ctl_conn *c, size_t *len, struct writer_job **job);
/* Who is at the other end of @c. */
const struct lcfibd_peer *ctl_conn_peer(const struct ctl_conn *c);
/* The descriptor passed with @c's current request (CTL_RPC_FD), now the caller's; -1: none. */
int ctl_conn_take_fd(struct ctl_conn *c);
/* A load of "-": @c's next frames carry the file, @size bytes if known (0: not). */
void ctl_conn_set_stream(struct ctl_conn *c, struct writer_job *job, uint64_t size);
/* @c's request went to the writer as @job: hold its later frames until the reply. */
void ctl_conn_set_busy(struct ctl_conn *c, struct writer_job *job);
/* Sends progress of running loads to their clients. */
void ctl_progress(struct lcfibd *d);

/* ------------------------------------------------------- feed_kernel.c */

/* The kernel feed's configuration (the lcfib module's feeds/kernel). */
struct feed_kernel_cfg {
	bool enabled;
	unsigned int n_tables; /* 0: every table */
	uint32_t tables[256];
	uint32_t receive_buffer; /* bytes */
};

/*
 * Config handlers' two phases. prepare() may fail (a socket that cannot
 * be opened or bound) and keeps what it made aside; apply() cannot fail:
 * it starts (dump, then events), restarts with the new settings, or stops
 * and flushes the feed's routes; abort() drops what prepare() made when
 * another handler refused the commit.
 */
int feed_kernel_prepare(struct lcfibd *d, const struct feed_kernel_cfg *cfg, struct lcfibd_err *e);
void feed_kernel_apply(struct lcfibd *d);
void feed_kernel_abort(struct lcfibd *d);
/* At exit: closes everything (the FIB is destroyed after). */
void feed_kernel_stop(struct lcfibd *d);
/* For the state: its counters; false when it is off. */
bool feed_kernel_stats(struct lcfibd *d, struct feed_stats *st);

/* ---------------------------------------------------------- feed_fpm.c */

/* At most this many allowed-user and allowed-remote entries. */
#define FEED_FPM_MAX_USERS  16
#define FEED_FPM_MAX_REMOTE 16

/* A user whose processes may connect: a uid, or a name this host does not have (yet). */
struct feed_fpm_user {
	char name[33]; /* as configured */
	bool known;    /* @uid is valid */
	uid_t uid;
};

/* A prefix of allowed-remote. */
struct feed_fpm_prefix {
	int family;
	uint8_t addr[16];
	uint8_t len;
};

struct feed_fpm_cfg {
	bool enabled;
	char address[64]; /* numeric IPv4 or IPv6 */
	uint16_t port;
	uint32_t replay_settle_ms; /* quiet time after a connect before the sweep */
	uint32_t hold_time_s;      /* an unfinished frame's peer is dropped after this */
	unsigned int n_users, n_remote;
	struct feed_fpm_user users[FEED_FPM_MAX_USERS];
	struct feed_fpm_prefix remote[FEED_FPM_MAX_REMOTE];
	/* the config file at start: a port that cannot be bound does not stop lcfibd */
	bool at_start;
};

/* What the state shows of the FPM feed besides the feeds' counters. */
struct feed_fpm_info {
	char peer[128];          /* "" when none */
	time_t since;            /* when it connected; 0: never */
	char listening[128];     /* "" when not listening */
	char listen_error[256];  /* why not, while it retries */
	uint64_t unauthorized;   /* connections refused because of who made them */
	uint64_t dropped_silent; /* peers dropped by the hold timer */
};

/* As feed_kernel_*: prepare() binds the listener. */
int feed_fpm_prepare(struct lcfibd *d, const struct feed_fpm_cfg *cfg, struct lcfibd_err *e);
void feed_fpm_apply(struct lcfibd *d);
void feed_fpm_abort(struct lcfibd *d);
void feed_fpm_stop(struct lcfibd *d);
/* For the state: false when the feed is off. */
bool feed_fpm_stats(struct lcfibd *d, struct feed_stats *st, struct feed_fpm_info *info);

#endif
