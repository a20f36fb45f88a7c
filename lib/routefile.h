/* SPDX-License-Identifier: MIT */
/*
 * Route files: iproute2's batch syntax (`ip -batch`: "route add 10.0.0.0/8
 * via 192.0.2.1 dev eth0 metric 20") and a plain format (a prefix per
 * line), parsed whole, then applied to a FIB as one transaction.
 *
 * Batch lines:
 *   [ip] [-4|-6] [route] CMD [TYPE] [to] PREFIX [ATTR...]
 *   CMD   add (create, exclusive) | replace (create or replace) | append |
 *         prepend (create) | change (replace, no create) | del | delete
 *   TYPE  unicast | local | broadcast | anycast | multicast | blackhole |
 *         unreachable | prohibit | throw
 *   PREFIX ADDR/LEN, ADDR (a host route), or default (any, all); a
 *         default's family is that of -4/-6, else of its first gateway,
 *         else IPv4
 *   ATTR  via [inet|inet6] GW | dev|oif IF | metric|preference|priority N |
 *         table ID|main|local|default | proto NAME|N | scope NAME|N |
 *         onlink | nhid ID | nexthop via GW [dev IF] [weight 1..256]
 *         [onlink] (repeated: a multipath route; an IPv6 one needs 'via'
 *         in every nexthop and no nexthop twice, as the kernel's siblings)
 * An IPv4 route may have an IPv6 gateway only as "via inet6 GW" (RFC
 * 5549). Attributes this FIB does not model (src, mtu, realm, ...) are
 * errors rather than silently dropped.
 *
 * Plain lines: PREFIX [GATEWAY] [dev IF]. A line with neither a gateway
 * nor a device is a blackhole route: a list of bare prefixes loads as
 * routes that exist (for lookups and tests) but forward nothing.
 *
 * Both: '#' starts a comment that runs to the end of the line; blank lines
 * and CRLF line ends are fine; a route that names no proto gets "boot" (3),
 * as `ip route` gives it; an IPv6 route added with no metric (or metric 0)
 * gets 1024, as the kernel gives it to `ip -6 route add`; deletes match
 * what they name (see struct fib_rcfg), no metric any. In the auto format each line is batch if its first word is a
 * command word (ip, route, -4, -6, or a CMD), else plain.
 *
 * Threads: a struct routefile belongs to one thread at a time;
 * routefile_apply() runs on the FIB's writer thread, and so do
 * routefile_load_fd() and routefile_load_buf(), which also run a parser
 * thread of their own for the call's duration. routefile_parse_route()
 * may run on any thread.
 *
 * Public (<lcfib/routefile.h>), by choice: an embedder loads the files
 * lcfibd loads, with the same messages and the same all-or-nothing apply.
 */
#ifndef LCFIB_ROUTEFILE_H
#define LCFIB_ROUTEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errbuf.h"
#include "fib.h"
#include "nh.h"

#define ROUTEFILE_LINE_MAX   65536  /* longer lines are bad lines */
#define ROUTEFILE_BAD_KEEP   100000 /* bad lines kept with their message; more are counted */
#define ROUTEFILE_BULK_OPS   4096   /* loads of more ops run in bulk mode */
#define ROUTEFILE_PROGRESS   65536  /* ops between progress calls */
#define ROUTEFILE_PROTO_BOOT 3      /* RTPROT_BOOT: the proto of a route that names none */
#define ROUTEFILE_METRIC6    1024   /* IP6_RT_PRIO_USER: an IPv6 route added with metric 0 */

enum routefile_format {
	ROUTEFILE_AUTO,
	ROUTEFILE_BATCH,
	ROUTEFILE_PLAIN,
};

enum routefile_op {
	ROUTEFILE_ADD,
	ROUTEFILE_DEL,
};

/* One parsed line, as a CLI's `route add ...` needs it. */
struct routefile_route {
	enum routefile_op op;
	struct fib_rcfg rc; /* rc.paths points into paths[] */
	struct nh_path paths[NH_MAX_PATHS];
};

/*
 * Parses one line of batch syntax (without its line end). @family is
 * AF_UNSPEC, or AF_INET/AF_INET6 as `ip -4`/`ip -6`: the family the
 * prefix must have. Returns 0, -ENODATA for a blank or comment-only line,
 * or -EINVAL with *@col (1-based; past the end for a missing word) and a
 * message "column N: expected ..., got '...'" (-ENOMEM likewise, from the
 * interface name table). Interface names resolve through ifname_resolve().
 * rc.table is 0 (main) unless given. @col and @err may be NULL.
 */
int routefile_parse_route(const char *line, int family, struct routefile_route *out,
			  unsigned int *col, struct errbuf *err);

/* Values of *routefile_opts.cancel (bits: another thread sets them). */
#define ROUTEFILE_CANCEL  0x1 /* stop; an apply rolls back: nothing applied */
#define ROUTEFILE_ABANDON 0x2 /* stop at once, keep what is applied, no rebalancing */

struct routefile_opts {
	enum routefile_format format;
	int family;          /* AF_UNSPEC, or the family every prefix must have */
	bool skip_bad_lines; /* apply what is good; see routefile_apply() */
	const char *name;    /* for messages ("-" for stdin); NULL: "-" */
	/*
	 * Bytes a file may have (0: no bound): more, read or fed, and the
	 * parse stops with -EFBIG and a message. A file that grows while it
	 * is read is caught too, not only one whose size was too big at open.
	 */
	uint64_t max_size;
	/*
	 * NULL, or a flag another thread may set (atomically, ROUTEFILE_*):
	 * read between chunks of a read, every 65536 lines of a feed and
	 * every ROUTEFILE_CANCEL_OPS ops of an apply or a rollback. Set, the
	 * work ends with -ECANCELED: with ROUTEFILE_CANCEL an apply rolls
	 * back first (the FIB is as before); ROUTEFILE_ABANDON ends even a
	 * rollback, keeps the edits made so far and leaves the FIB in bulk
	 * mode: only for a FIB about to be destroyed (at exit), which it
	 * leaves at once.
	 */
	const int *cancel;
	/*
	 * May be NULL. Called by routefile_apply() before each add: non-zero
	 * (a negative errno, with @err set) refuses the add as the FIB would.
	 * lcfibd refuses a key another source holds.
	 */
	int (*claim)(void *ctx, const struct fib_rcfg *rc, struct errbuf *err);
	void *claim_ctx;
};

#define ROUTEFILE_CANCEL_OPS 4096 /* ops between looks at the cancel flag */

/* The parsed ops of one file, its bad lines, and its progress through apply. */
struct routefile;

/* Returns NULL with errno set (ENOMEM, EINVAL for a bad format or family). */
struct routefile *routefile_new(const struct routefile_opts *o);
/* Frees @rf (NULL is fine); the routes it applied stay in the FIB. */
void routefile_free(struct routefile *rf);

/*
 * Parses @len bytes of the file. A line cut by the end of @buf is kept
 * until the next call; @last says the file ends with @buf (a last line
 * without a line end counts). Bad lines are recorded, not fatal. Returns
 * 0, -ENOMEM, -EFBIG (opts.max_size) or -ECANCELED (opts.cancel); after
 * an error the parse is incomplete and cannot be applied. Call before
 * routefile_apply().
 */
int routefile_feed(struct routefile *rf, const char *buf, size_t len, bool last);

/*
 * Opens the route file at @path for reading: O_NONBLOCK, so that a FIFO
 * cannot block the open, then routefile_check_fd(). Returns the
 * descriptor, or a negative errno with a message naming @path.
 */
int routefile_open(const char *path, uint64_t max_size, struct errbuf *err);

/*
 * Whether @fd (named @name in messages) may be read as a route file: a
 * regular file (not a FIFO, device, socket or directory, which can block
 * a reader forever or never end), not on a kernel pseudo file system
 * (/proc, /sys, debugfs, ...: their files claim to be regular, have no
 * size, and may block or leak what the kernel shows the opener), of at
 * most @max_size bytes (0: any). Clears O_NONBLOCK. Returns 0, -EINVAL
 * (not such a file), -EFBIG or another -errno, with a message.
 */
int routefile_check_fd(int fd, const char *name, uint64_t max_size, struct errbuf *err);

/*
 * Feeds everything @fd has to read, read() in 4 MiB chunks: a file or a
 * pipe alike, and no SIGBUS if the file shrinks meanwhile. @fd stays
 * open. Returns 0, -ECANCELED, -EFBIG (opts.max_size) or another negative
 * errno, with a message naming the file.
 */
int routefile_read_fd(struct routefile *rf, int fd, struct errbuf *err);

/*
 * Feeds the whole file at @path: routefile_open() then routefile_read_fd();
 * "-" reads standard input as it is. Returns as routefile_read_fd().
 */
int routefile_read_file(struct routefile *rf, const char *path, struct errbuf *err);

uint64_t routefile_lines(const struct routefile *rf);
/* Route ops parsed (every good line but blank and comment ones). */
uint64_t routefile_routes(const struct routefile *rf);
/* Lines that failed to parse, and with skip_bad_lines those that failed to apply. */
uint64_t routefile_bad_lines(const struct routefile *rf);

/*
 * The @i-th bad line: parse errors first, in file order, then apply errors
 * in file order. *@col is where the error is (an apply error's: the
 * prefix's). *@msg reads "NAME:LINE:COL: what was expected or wrong"
 * and is valid until @rf next changes. Returns 0, or -ENOENT
 * past the ROUTEFILE_BAD_KEEP kept (they are counted all the same).
 * Any pointer argument but @rf may be NULL.
 */
int routefile_bad_line(const struct routefile *rf, uint64_t i, uint64_t *line, unsigned int *col,
		       const char **msg);

/* Bytes @rf holds (ops, paths, messages, buffers), for the daemon's memory report. */
size_t routefile_mem(const struct routefile *rf);

/*
 * Progress of an apply: @phase is "applying", "rebalancing" or
 * "rolling-back"; @done of @total ops (rebalancing: 0 of 1, then 1 of 1;
 * applying during routefile_load_fd(): @total is 0 until the whole file
 * is parsed).
 * Runs on the writer thread, between edits: it must not edit the FIB.
 */
typedef void routefile_progress_fn(void *ctx, const char *phase, uint64_t done, uint64_t total);

struct routefile_result {
	uint64_t applied; /* ops that changed the FIB (or found it as they want it) */
	uint64_t skipped; /* ops that failed to apply, with skip_bad_lines */
	/*
	 * Where the time went, in nanoseconds. parse_ns: the read and parse
	 * of routefile_load_fd() and routefile_load_buf(), on their own
	 * thread (from its start to its end) or before the apply when they
	 * read first; 0 from routefile_apply() of a file read by the caller.
	 * waited_ns: the apply waiting for the parse on its thread (near
	 * parse_ns when the parse sets the pace); rebalance_ns: bulk mode's
	 * end (fib_bulk_end()), 0 without bulk mode.
	 */
	uint64_t parse_ns, waited_ns, rebalance_ns;
};

/*
 * Writer thread of @f. Applies the file's ops in file order as one
 * transaction; @rf can be applied once (-EALREADY after).
 *
 * With bad lines and without skip_bad_lines nothing is applied: -EINVAL
 * and "NAME:LINE:COL: msg (and N more errors)". When an op fails to apply
 * (an add of a route that exists: -EEXIST; a delete of one that does not:
 * -ESRCH; ...), without skip_bad_lines every op applied so far is undone,
 * last first, so the routes of the FIB are exactly as before, and the
 * error returns with "NAME:LINE:COL: the FIB's message" (the prefix's
 * column); with skip_bad_lines
 * the op is recorded as a bad line and the apply goes on. -ENOMEM can end
 * an apply too (rolled back likewise, skip_bad_lines or not). Only if
 * undoing itself fails (memory) is the result -ENOTRECOVERABLE: the FIB
 * then keeps some of the file's edits, and the message says which line.
 *
 * More than ROUTEFILE_BULK_OPS ops run in bulk mode (fib_bulk_begin()).
 * @progress (may be NULL) is called at each phase's start and end and
 * every ROUTEFILE_PROGRESS ops. @res (may be NULL) is filled either way
 * (applied is 0 after a rollback); @err may be NULL.
 * The undo journal costs 16 bytes per applied op while the apply runs;
 * it and the parsed ops (32 bytes each) are let go when the apply ends,
 * before bulk mode's rebuild: @rf then keeps its counts and bad lines
 * (routefile_routes(), routefile_bad_line()), and cannot be applied again.
 *
 * opts.cancel set ends the apply with -ECANCELED and "NAME: cancelled":
 * ROUTEFILE_CANCEL after a rollback (applied is 0), ROUTEFILE_ABANDON at
 * once (see struct routefile_opts).
 */
int routefile_apply(struct routefile *rf, struct fib *f, routefile_progress_fn *progress, void *ctx,
		    struct routefile_result *res, struct errbuf *err);

/*
 * Writer thread of @f: reads the regular file @fd and applies it, as
 * routefile_read_fd() and then routefile_apply() on a fresh @rf would,
 * with the same result, but on both cores: a thread of its own, started
 * and joined here, reads and parses the file while this one applies the
 * routes parsed so far. In a load of more than ROUTEFILE_BULK_OPS ops,
 * lines that come out of key order (family, then address) are applied in
 * key order, 2^18 at a time, and the lines of one prefix in the file's
 * order: bulk mode loads sorted input faster (a shuffled full view a
 * quarter faster so). So where more than one line would fail to apply,
 * the message names the first to fail in that order, not always the
 * first in the file. A bad line or a read error found after routes went
 * in undoes them, last first, as a route that fails to apply does;
 * readers may see those routes meanwhile (a read, then an apply, refuses
 * such a file before any route goes in). The ops array (32 bytes an op),
 * its runs of lines, the apply order (4 bytes an op) and the journal (16
 * bytes an op) are mapped for the most routes the file's size can hold,
 * backed only as they fill; a file that grows past that while it is read
 * fails ("grew while it was read"). With skip_bad_lines, an @rf already
 * fed, an @fd that is not a regular file, or when the mappings or the
 * thread cannot be made, it reads first, then applies.
 * @fd stays open.
 */
int routefile_load_fd(struct routefile *rf, int fd, struct fib *f, routefile_progress_fn *progress,
		      void *ctx, struct routefile_result *res, struct errbuf *err);

/* routefile_load_fd() for a whole file's @len bytes at @buf (kept until it returns). */
int routefile_load_buf(struct routefile *rf, const char *buf, size_t len, struct fib *f,
		       routefile_progress_fn *progress, void *ctx, struct routefile_result *res,
		       struct errbuf *err);

#endif
