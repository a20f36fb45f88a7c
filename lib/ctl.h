/* SPDX-License-Identifier: MIT */
/*
 * The control protocol between lcfibd and its clients (lcfibctl): frames
 * on a unix stream socket, each a 12-byte header and a payload.
 *
 *   get    payload: an XPath into the lcfib module ("" or "/": all of it);
 *          flags: CTL_GET_CONFIG and/or CTL_GET_STATE. Reply: RFC 7951 JSON.
 *   edit   payload: RFC 7951 JSON of config data (merge, replace) or an
 *          XPath (delete); flags: one CTL_EDIT_*. Reply: empty.
 *   rpc    payload: RFC 7951 JSON of an RPC's input, {"lcfib:NAME":{...}}.
 *          Reply: the RPC's output as JSON, {"lcfib:NAME":{...}} (or
 *          empty). A load with path "-" is followed by CTL_DATA frames
 *          carrying the file and one CTL_END; load-progress notifications
 *          (CTL_NOTIFY) may come before the reply. A load of a named file
 *          may carry the file's open descriptor (SCM_RIGHTS, sent with the
 *          frame's bytes; flag CTL_RPC_FD): the daemon reads that, with the
 *          rights of whoever opened it, instead of opening the path.
 *   error  payload: {"errors":[{"message":"...","path":"...","app-tag":"..."}]}
 *          (path and app-tag may be absent).
 *
 *   part   a piece of a long reply (a routes listing): the payloads of the
 *          parts and of the reply that ends them, concatenated, are the
 *          reply's JSON. The daemon makes the next piece only once the
 *          client has read the last ones.
 *   lines  whole lines of a streamed answer (text or JSON lines), before
 *          the reply that ends them: the answers of a lookups stream (whose
 *          addresses come in CTL_DATA frames and one CTL_END, as a load's
 *          file does), a listing asked for as text or json-lines. A client
 *          writes them out as they come and keeps none.
 *
 * Every reply carries the id of its request. Requests are answered in
 * order. A peer that sends a bad header is answered with an error and
 * disconnected; the daemon keeps serving everyone else. A connection the
 * daemon refuses (too many clients) gets one error with id 0, then EOF.
 */
#ifndef LCFIB_CTL_H
#define LCFIB_CTL_H

#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

#define CTL_VERSION 1
#define CTL_HDR_LEN 12

/* Payload limits: a request (and a CTL_DATA chunk), and a reply. */
#define CTL_REQ_MAX   (1u << 20)
#define CTL_REPLY_MAX (1u << 30)

enum ctl_type {
	/* requests */
	CTL_GET = 1,
	CTL_EDIT = 2,
	CTL_RPC = 3,
	CTL_DATA = 4, /* a chunk of a streamed load */
	CTL_END = 5,  /* the end of a streamed load */
	/* replies */
	CTL_REPLY = 64,
	CTL_ERROR = 65,
	CTL_NOTIFY = 66,
	CTL_PART = 67,  /* a piece of the reply with the same id */
	CTL_LINES = 68, /* whole lines of a streamed answer (lookups, a listing) */
};

/* CTL_GET flags: what to return (none: both). */
#define CTL_GET_CONFIG 0x1
#define CTL_GET_STATE  0x2

/* CTL_RPC flags. */
#define CTL_RPC_FD 0x1 /* a descriptor (SCM_RIGHTS) came with this frame */

/* CTL_EDIT flags: one of these. */
#define CTL_EDIT_MERGE   0
#define CTL_EDIT_REPLACE 1
#define CTL_EDIT_DELETE  2

/* Error reply app-tags the daemon uses (libyang's own tags pass through too). */
#define CTL_TAG_MALFORMED   "malformed-message"
#define CTL_TAG_INVALID     "invalid-value"
#define CTL_TAG_DENIED      "access-denied"
#define CTL_TAG_ROUTE_FILE  "route-file-error"
#define CTL_TAG_FAILED      "operation-failed"
#define CTL_TAG_BUSY        "in-use"
#define CTL_TAG_UNSUPPORTED "operation-not-supported"
#define CTL_TAG_RESOURCE    "resource-denied"

struct ctl_hdr {
	uint32_t len; /* payload bytes after the header */
	uint8_t version;
	uint8_t type; /* enum ctl_type */
	uint16_t flags;
	uint32_t id; /* request id; replies echo it */
};

/* Writes @h to @buf (CTL_HDR_LEN bytes, big-endian fields). */
void ctl_hdr_encode(const struct ctl_hdr *h, uint8_t *buf);

/*
 * Reads a header from @buf (CTL_HDR_LEN bytes). Returns 0, or -EPROTO
 * (bad version or type) or -EMSGSIZE (len > @max) with a message.
 */
int ctl_hdr_decode(const uint8_t *buf, uint32_t max, struct ctl_hdr *h, struct errbuf *err);

/* The type's name ("get", "reply", ...), or "unknown". */
const char *ctl_type_name(unsigned int type);

/*
 * Blocking helpers for clients. ctl_send() writes one frame; returns 0 or
 * -errno. ctl_recv() reads one frame whose payload is at most @max bytes
 * into a malloc'd, NUL-terminated *@payload (the caller frees it); returns
 * 0, -ECONNRESET on EOF, or another -errno with a message.
 */
int ctl_send(int fd, unsigned int type, unsigned int flags, uint32_t id, const void *payload,
	     size_t len);
/* ctl_send() with @pass_fd sent along (SCM_RIGHTS, with the header's bytes); -1: none. */
int ctl_send_fd(int fd, unsigned int type, unsigned int flags, uint32_t id, const void *payload,
		size_t len, int pass_fd);
int ctl_recv(int fd, uint32_t max, struct ctl_hdr *h, char **payload, struct errbuf *err);

/* The daemon's run directory and the names of its socket and pid file in it. */
#define CTL_RUN_DIR_ROOT "/run/lcfib"
#define CTL_SOCK_NAME    "lcfibd.sock"
#define CTL_PID_NAME     "lcfibd.pid"

/* Why there may be no default: for lcfibd's and lcfibctl's errors. */
#define CTL_NO_RUN_DIR "not root and XDG_RUNTIME_DIR is unset: there is no default"

/*
 * The default directory of lcfibd's socket and pid file, one rule for
 * lcfibd and lcfibctl so that they meet: CTL_RUN_DIR_ROOT for root,
 * $XDG_RUNTIME_DIR/lcfib for anyone else. Returns 0, or -ENOENT when there
 * is none (not root and XDG_RUNTIME_DIR unset or empty: a shared temporary
 * directory would let another user's daemon answer), or -ENAMETOOLONG.
 */
int ctl_default_run_dir(char *buf, size_t size);

#endif
