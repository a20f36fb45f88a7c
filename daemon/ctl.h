/* SPDX-License-Identifier: MIT */
/*
 * The control socket: framing, peers, get/edit of the config and state,
 * and replies. Loop thread.
 */
#ifndef LCFIB_DAEMON_CTL_H
#define LCFIB_DAEMON_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/err.h"

struct lcfibd;
struct ctl_conn;
struct lcfibd_peer;
struct writer_job;

int ctl_listen(struct lcfibd *d);
/*
 * Append @s to the JSON text *@out (*@len bytes in *@cap, NUL-terminated,
 * grown as needed) as a string, quoted, escaped, with bytes that are not
 * UTF-8 made U+FFFD. On want of memory the text stays as it was.
 */
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
 * A request whose input streams in after it (lookups): the data frames
 * that follow are handed to data() as the connection drains, in order,
 * and at the end frame end() queues the reply; free() drops @ctx then, or
 * when the peer is gone. data() answers some of @buf's @len bytes (whole
 * lines, as many as make a bounded answer, with ctl_reply_lines()) and
 * returns how many it took, all of them at the end of @buf (it keeps a
 * line cut by the frame's end), or -1 with @e: the reply, and the end of
 * the stream. A frame's bytes are copied, one frame at a time: the
 * stream needs a frame's memory and its answers', never the whole input's.
 * @c's requests other than data wait till the end.
 */
struct ctl_sink {
	ssize_t (*data)(struct lcfibd *d, struct ctl_conn *c, uint32_t id, void *ctx,
			const char *buf, size_t len, struct lcfibd_err *e);
	void (*end)(struct lcfibd *d, struct ctl_conn *c, uint32_t id, void *ctx);
	void (*free)(void *ctx);
};
void ctl_conn_sink(struct ctl_conn *c, uint32_t id, const struct ctl_sink *s, void *ctx);
/* Whole lines of a streamed answer (CTL_LINES). */
void ctl_reply_lines(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const char *text,
		     size_t len);

/*
 * Loop thread, after each round of events: gives every connection with
 * frames to serve (or a reply to go on with) one turn. Returns whether
 * some have more, so that the loop comes back without waiting.
 */
bool ctl_serve(struct lcfibd *d);
/*
 * Loop thread, after each round of events: frees the connections closed
 * during it. Until then a closed one stays in memory, deaf, because
 * epoll_wait() may have returned an event for it that the round has not
 * handled yet (its client went while the writer's progress or its job's
 * end closed it: a use after free, seen as a crash on a load's Ctrl-C).
 */
void ctl_reap(struct lcfibd *d);
/* Loop thread, every second: drops peers that left too much unread for too long. */
void ctl_tick(struct lcfibd *d);
/*
 * Serves @len bytes as if a peer had sent them on a connection of its
 * own (as root with @admin, else as a reader), until nothing is left to
 * do; the replies go nowhere. For fuzzing the requests without sockets:
 * its turns end after CTL_FRAMES_PER_TURN frames, never by the clock, so
 * that an input is cut in the same turns each time it is replayed (a busy
 * machine would cut it elsewhere).
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
/* What a load of "-" does with its file (callbacks of the handler that started it). */
struct ctl_stream {
	/*
	 * The file's bytes arrived: take them (ctl_conn_take_stream()) and
	 * queue the job. 0, or -1 with @e, which ctl.c sends as the reply.
	 */
	int (*end)(struct lcfibd *d, struct ctl_conn *c, struct lcfibd_err *e);
	/* The client went away before the end: drop @job (not queued yet). */
	void (*abort)(struct writer_job *job);
};
/* A load of "-": @c's next frames carry the file, @size bytes if known (0: not). */
void ctl_conn_set_stream(struct ctl_conn *c, struct writer_job *job, uint64_t size,
			 const struct ctl_stream *ops);

/*
 * The RPCs ctl.c dispatches, in one table that the layer above (rpc.c)
 * registers at start; ctl.c knows no handler by name.
 *
 * handler() runs the RPC @op (validated): 0 with *@reply (JSON, malloc'd,
 * NULL for an empty reply), 1 when the reply comes later (a writer job, a
 * listing made piece by piece), or -1 with @e. A @read_only RPC is served
 * to every client; the others to admins only.
 */
struct ctl_rpc {
	const char *name;
	int (*handler)(struct lcfibd *d, struct ctl_conn *c, uint32_t id, const struct lyd_node *op,
		       char **reply, struct lcfibd_err *e);
	bool read_only;
};
struct ctl_rpcs {
	const struct ctl_rpc *rpc;
	unsigned int n;
};
/* Loop thread, at start: the table (kept, not copied). */
void ctl_set_rpcs(struct lcfibd *d, const struct ctl_rpcs *rpcs);
/* @c's request went to the writer as @job: hold its later frames until the reply. */
void ctl_conn_set_busy(struct ctl_conn *c, struct writer_job *job);
/* Sends progress of running loads to their clients. */
void ctl_progress(struct lcfibd *d);

#endif
