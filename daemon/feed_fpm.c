/* SPDX-License-Identifier: MIT */
/*
 * The FPM feed: FRR zebra's dplane_fpm_nl connects to us over TCP and
 * sends the routes (and nexthop objects) it installs, as netlink messages
 * in FPM frames (lib/fpm.h). Frames are read and checked here, on the
 * loop thread; their messages go, a wake-up's worth at a time, to the
 * writer (daemon/feed.c), which decodes and applies them in order.
 *
 * Who may connect: a process of this host must belong to allowed-user
 * (root and frr by default): the kernel tells the owner of the socket at
 * the connection's other end (sock_diag). A peer that is no process of
 * this host (another host, another network namespace) has no owner we can
 * see, so its address must be in allowed-remote (none by default). Anyone
 * else is refused before it can add a route or start a replay's sweep.
 *
 * One peer at a time: zebra has one FPM connection, so a second one is a
 * misconfiguration (two zebras, or a stray client) and is refused rather
 * than mixed into the first one's table (replacing the first would let two
 * zebras take turns sweeping each other's routes). A peer that leaves a
 * frame unfinished for hold-time is dropped, so that it cannot hold the
 * slot; between frames it may be silent for ever, as an idle zebra is.
 *
 * A listener that cannot be bound when lcfibd starts (another process took
 * the port) does not stop lcfibd: the feed says why in its state and tries
 * again every FEED_FPM_RETRY_MS.
 *
 * zebra replays its whole table on every connect and never says when the
 * replay ends. A connect starts a sync (feed_sync_begin); when no message
 * has arrived for replay-settle the replay is taken as complete and the
 * sweep removes what the feed held and zebra did not replay. A disconnect
 * keeps the routes: traffic keeps flowing while zebra restarts, and its
 * next replay reconciles. A bad frame means the stream can no longer be
 * framed, so that connection is closed; zebra reconnects and replays.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <ifaddrs.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "daemon/err.h"
#include "daemon/feed.h"
#include "daemon/feed_fpm.h"
#include "daemon/lcfibd.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/writer.h"
#include "lib/ctl.h"
#include "lib/fpm.h"

/* The read buffer: room for a whole frame of the largest size behind a partial one. */
#define FEED_FPM_RBUF (256u << 10)
/*
 * Messages go to the writer a wake-up's worth at a time, up to this much:
 * zebra writes a few frames at a time, and a writer job per read would
 * cost more than the routes in it. ~10,000 routes (70-200 bytes each).
 */
#define FEED_FPM_BATCH (1u << 20)
/*
 * zebra writes as its RIB walk goes, a few frames at a time, more slowly
 * than the writer applies them: a writer job per wake-up would cost more
 * than the routes in it (a wake-up of the writer and one of the loop). So
 * while the writer is busy, small batches wait for more, up to
 * FEED_FPM_JOB_MIN bytes or FEED_FPM_HOLD_MS.
 */
#define FEED_FPM_JOB_MIN (64u << 10)
#define FEED_FPM_HOLD_MS 2
/* Reads per wake-up before the loop serves its other sources again (~4 MiB). */
#define FEED_FPM_READS_PER_EVENT 16
/* Dead peers (no FIN: a pulled cable, a hung host) are noticed within ~1 min. */
#define FEED_FPM_KEEPIDLE  30
#define FEED_FPM_KEEPINTVL 10
#define FEED_FPM_KEEPCNT   3
/* A listener that could not be bound is tried again this often. */
#define FEED_FPM_RETRY_MS 2000
/* Refused connections: one log line per this many seconds at most. */
#define FEED_FPM_REFUSAL_LOG_S 10
/* "[" IPv6 "%" zone "]:" port */
#define FEED_FPM_NAME_LEN (INET6_ADDRSTRLEN + IF_NAMESIZE + 10)

struct feed_fpm;

/* A source on the loop that knows its feed (epoll's data.ptr points at src). */
struct feed_fpm_src {
	struct lcfibd_source src; /* first */
	struct feed_fpm *p;
};

struct feed_fpm {
	struct lcfibd *d;
	struct feed *feed;
	struct feed_fpm_cfg cfg; /* applied */

	/* what prepare() set aside for apply() */
	bool prepared;
	struct feed_fpm_cfg next;
	int next_fd;      /* a new listener, bound and listening; -1: none */
	bool next_rebind; /* the new address overlaps ours: bind at apply */

	/* the listener */
	struct feed_fpm_src listen_src;
	int listen_fd;
	char listen_name[FEED_FPM_NAME_LEN];

	/* the peer */
	struct feed_fpm_src peer_src;
	int peer_fd;
	char peer[FEED_FPM_NAME_LEN];
	time_t since;            /* wall clock, for the state */
	struct timespec started; /* monotonic, for the log */
	uint64_t frames, bytes;  /* of this connection */
	struct timespec last_read;
	uint8_t *rbuf; /* FEED_FPM_RBUF */
	size_t rlen;
	uint8_t *batch; /* FEED_FPM_BATCH: whole messages for the writer */
	size_t blen;
	bool paused; /* not reading: the writer is behind (feed_backlogged()) */

	/* the replay's end: replay-settle of quiet after a connect */
	struct feed_fpm_src timer_src;
	int timer_fd;
	bool replaying;

	/* a batch held back while the writer is busy goes after FEED_FPM_HOLD_MS at most */
	struct feed_fpm_src hold_src;
	int hold_fd;
	bool holding;

	/*
	 * One timer for two waits: a peer's unfinished frame (hold-time after
	 * its last byte) and the next try of a listener that could not be
	 * bound. Reads only note their time, as for the settle timer.
	 */
	struct feed_fpm_src check_src;
	int check_fd;
	bool check_armed;
	char listen_error[256];      /* why it does not listen: "" when it does, or is off */
	struct timespec listen_down; /* since when (monotonic) */

	/* prepare() could not bind at start, or the feed retries already: apply() keeps trying */
	bool next_retry;
	char next_error[256];

	/* connections refused because of who made them, peers dropped by the hold timer */
	uint64_t unauthorized, dropped_silent;
	bool refusal_logged;
	struct timespec refusal_log_time;
	unsigned long refusals_unlogged;

	bool timers_watched;
};

static struct feed_fpm *feed_fpm_of(struct lcfibd_source *s)
{
	return ((struct feed_fpm_src *)s)->p;
}

/* ------------------------------------------------------------ addresses */

/* "127.0.0.1:2620", "[::1]:2620". */
static void feed_fpm_name(const struct sockaddr *sa, char *buf, size_t size)
{
	char host[NI_MAXHOST], port[NI_MAXSERV];

	if (getnameinfo(sa,
			sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						  : sizeof(struct sockaddr_in),
			host, sizeof(host), port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(buf, size, "?");
		return;
	}
	snprintf(buf, size, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

static void feed_fpm_cfg_name(const struct feed_fpm_cfg *cfg, char *buf, size_t size)
{
	snprintf(buf, size, strchr(cfg->address, ':') ? "[%s]:%u" : "%s:%u", cfg->address,
		 (unsigned int)cfg->port);
}

/*
 * A TCP socket listening on @cfg's address and port: the fd, or a negative
 * errno with @e naming the address. Non-blocking, so that accept() on the
 * loop never waits; SO_REUSEADDR, so that a restarted lcfibd binds while
 * the last one's connections sit in TIME_WAIT.
 */
static int feed_fpm_listen(const struct feed_fpm_cfg *cfg, struct lcfibd_err *e)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	char port[8], name[FEED_FPM_NAME_LEN];
	int fd = -1, one = 1, ret;

	feed_fpm_cfg_name(cfg, name, sizeof(name));
	snprintf(port, sizeof(port), "%u", (unsigned int)cfg->port);
	ret = getaddrinfo(cfg->address, port, &hints, &ai);
	if (ret) {
		lcfibd_err_set(e, CTL_TAG_INVALID, "/lcfib:lcfib/feeds/fpm/address",
			       "cannot listen on %s: %s", name, gai_strerror(ret));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 8)) {
		ret = -errno;
		lcfibd_err_set(e, ret == -EADDRINUSE ? CTL_TAG_BUSY : CTL_TAG_FAILED,
			       "/lcfib:lcfib/feeds/fpm/address", "cannot listen on %s: %s", name,
			       strerror(-ret));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return ret;
	}
	freeaddrinfo(ai);
	return fd;
}

/* ------------------------------------------------------------- the peer */

/* One-shot in @ms (0: off). */
static void feed_fpm_arm(int fd, uint64_t ms)
{
	struct itimerspec its = { .it_value = { (time_t)(ms / 1000),
						(long)(ms % 1000) * 1000000 } };

	if (timerfd_settime(fd, 0, &its, NULL))
		log_err("FPM feed: timer: %m");
}

static void feed_fpm_timer_set(struct feed_fpm *p, uint64_t ms)
{
	feed_fpm_arm(p->timer_fd, ms);
}

static uint64_t feed_fpm_ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)(now.tv_sec - t->tv_sec) * 1000 +
	       (uint64_t)((now.tv_nsec - t->tv_nsec) / 1000000);
}

/* Whether the peer's socket holds bytes the loop has not read, or its reading is paused. */
static bool feed_fpm_unread(const struct feed_fpm *p)
{
	int unread = 0;

	return p->paused ||
	       (p->peer_fd >= 0 && ioctl(p->peer_fd, SIOCINQ, &unread) == 0 && unread > 0);
}

/*
 * The replay is over once nothing has arrived for replay-settle: then the
 * sweep. Reads only note their time (a timerfd_settime per read would cost
 * a system call per few frames); the timer, when it fires early, is set
 * again for what is left.
 */
static void feed_fpm_settle_check(struct feed_fpm *p)
{
	uint64_t quiet;

	if (!p->replaying)
		return;
	quiet = feed_fpm_ms_since(&p->last_read);
	/* Bytes the loop has not read yet (it was busy, or paused) are no quiet. */
	if (quiet >= p->cfg.replay_settle_ms && feed_fpm_unread(p))
		quiet = 0;
	if (quiet < p->cfg.replay_settle_ms) {
		feed_fpm_timer_set(p, p->cfg.replay_settle_ms - quiet);
		return;
	}
	p->replaying = false;
	log_notice("FPM peer %s: replay settled (%u ms without a message, %llu frames); removing "
		   "what it did not replay",
		   p->peer, (unsigned int)p->cfg.replay_settle_ms, (unsigned long long)p->frames);
	feed_sync_end(p->feed);
}

/*
 * The writer is behind by feed_backlogged()'s worth of our messages: the
 * loop stops reading the peer, which waits in TCP (its socket buffers
 * fill) instead of in our memory, until half of them are applied.
 */
static void feed_fpm_pause(struct feed_fpm *p)
{
	struct epoll_event ev = { .events = 0, .data.ptr = &p->peer_src.src };

	if (p->paused || p->peer_fd < 0 || epoll_ctl(p->d->epfd, EPOLL_CTL_MOD, p->peer_fd, &ev))
		return; /* cannot pause: reads on, the backlog grows */
	p->paused = true;
	feed_wait_drain(p->feed);
}

/* Hands the batched messages to the writer: 0, or -ENOMEM (the connection must go). */
static int feed_fpm_submit(struct feed_fpm *p)
{
	int ret;

	if (p->holding) {
		feed_fpm_arm(p->hold_fd, 0);
		p->holding = false;
	}
	if (!p->blen)
		return 0;
	ret = feed_submit(p->feed, p->batch, p->blen);
	if (!ret && feed_backlogged(p->feed))
		feed_fpm_pause(p);
	if (ret) {
		feed_set_error(p->feed, "peer %s: out of memory queueing %zu bytes", p->peer,
			       p->blen);
		log_err("FPM peer %s: out of memory queueing %zu bytes", p->peer, p->blen);
	}
	p->blen = 0;
	return ret;
}

/*
 * Closes the peer's connection (@why: "disconnected", ...); the frames
 * read before go to the writer first. Its routes stay until the next
 * replay says otherwise (@keep), unless the caller flushes them.
 */
static void feed_fpm_peer_close(struct lcfibd *d, struct feed_fpm *p, const char *why, bool keep)
{
	struct timespec now;

	if (p->peer_fd < 0)
		return;
	feed_fpm_submit(p);
	clock_gettime(CLOCK_MONOTONIC, &now);
	log_notice("FPM peer %s %s after %lld s (%llu frames, %llu bytes%s)%s", p->peer, why,
		   (long long)(now.tv_sec - p->started.tv_sec), (unsigned long long)p->frames,
		   (unsigned long long)p->bytes,
		   p->replaying ? ", in the middle of its replay" : "",
		   keep ? "; its routes stay until it replays" : "");
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, p->peer_fd, NULL);
	close(p->peer_fd);
	p->peer_fd = -1;
	p->peer[0] = '\0';
	p->since = 0;
	p->rlen = 0;
	p->paused = false;
	/*
	 * A replay cut short must not sweep: what zebra had not sent yet
	 * would go. The next connect starts a new sync.
	 */
	if (p->replaying) {
		p->replaying = false;
		feed_fpm_timer_set(p, 0);
		feed_sync_cut(p->feed);
	}
}

/* feed_on_drained(): the writer caught up; reading goes on. */
static void feed_fpm_drained(void *ctx)
{
	struct feed_fpm *p = ctx;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &p->peer_src.src };

	if (!p->paused)
		return;
	p->paused = false;
	if (p->peer_fd >= 0 && epoll_ctl(p->d->epfd, EPOLL_CTL_MOD, p->peer_fd, &ev))
		feed_fpm_peer_close(p->d, p, "dropped: cannot watch its socket again", true);
}

/* The stream cannot be framed any more: drop the connection, say why. */
static void feed_fpm_bad_frame(struct lcfibd *d, struct feed_fpm *p, const char *why)
{
	log_warn("FPM peer %s: bad frame after %llu good ones: %s; closing the connection", p->peer,
		 (unsigned long long)p->frames, why);
	feed_count(p->feed, FEED_DECODE_ERROR);
	feed_set_error(p->feed, "peer %s: bad frame: %s", p->peer, why);
	feed_fpm_peer_close(d, p, "dropped", true);
}

/*
 * Frames the read buffer: each whole frame's netlink messages join the
 * batch; the bytes of a partial frame move to the front. Returns 0, or
 * -EPROTO (with @err) at a bad header: the frames before it are batched.
 */
static int feed_fpm_frame(struct feed_fpm *p, struct errbuf *err)
{
	size_t off = 0, flen, plen;
	const uint8_t *payload;
	int ret;

	while ((ret = fpm_frame_next(p->rbuf + off, p->rlen - off, &flen, &payload, &plen, err)) ==
	       0) {
		/* Payloads are whole netlink messages, 4-byte multiples: they stay aligned. */
		memcpy(p->batch + p->blen, payload, plen);
		p->blen += plen;
		off += flen;
		p->frames++;
	}
	memmove(p->rbuf, p->rbuf + off, p->rlen - off);
	p->rlen -= off;
	return ret == -EAGAIN ? 0 : ret;
}

static void feed_fpm_check_arm(struct feed_fpm *p, uint64_t ms)
{
	feed_fpm_arm(p->check_fd, ms);
	p->check_armed = ms != 0;
}

/*
 * The listener cannot be bound (@why): the state says so, the check timer
 * tries again. Logged when the reason changes, not at every try.
 */
static void feed_fpm_retry_later(struct feed_fpm *p, const char *why)
{
	char now[sizeof(p->listen_error)];

	snprintf(now, sizeof(now), "%.200s", why);
	if (!p->listen_error[0]) {
		clock_gettime(CLOCK_MONOTONIC, &p->listen_down);
		log_err("FPM feed: %s; the feed is not listening and tries again every %u s", now,
			FEED_FPM_RETRY_MS / 1000);
	} else if (strcmp(p->listen_error, now) != 0) {
		log_err("FPM feed: %s; still trying every %u s", now, FEED_FPM_RETRY_MS / 1000);
	}
	memcpy(p->listen_error, now, sizeof(now));
	if (!p->check_armed)
		feed_fpm_check_arm(p, FEED_FPM_RETRY_MS);
}

static void feed_fpm_listen_on(struct lcfibd *d, struct feed_fpm *p, int fd,
			       const struct feed_fpm_cfg *where);

/*
 * The check timer: drops a peer whose frame stayed unfinished for
 * hold-time, tries the listener again; then waits for the sooner of the
 * two.
 */
static void feed_fpm_check(struct lcfibd *d, struct feed_fpm *p)
{
	uint64_t next = 0, hold = (uint64_t)p->cfg.hold_time_s * 1000;

	p->check_armed = false;
	if (p->peer_fd >= 0 && p->rlen) {
		uint64_t quiet = feed_fpm_ms_since(&p->last_read);

		/* Bytes the loop has not read yet (it was busy, or paused) are no silence. */
		if (quiet >= hold && feed_fpm_unread(p))
			quiet = 0;
		if (quiet >= hold) {
			log_warn("FPM peer %s sent %zu bytes of a frame and nothing more for %u s "
				 "(hold-time); dropping it",
				 p->peer, p->rlen, (unsigned int)p->cfg.hold_time_s);
			p->dropped_silent++;
			feed_set_error(p->feed, "peer %s: a frame left unfinished for %u s",
				       p->peer, (unsigned int)p->cfg.hold_time_s);
			feed_fpm_peer_close(d, p, "dropped", true);
		} else {
			next = hold - quiet;
		}
	}
	if (p->cfg.enabled && p->listen_fd < 0 && p->listen_error[0]) {
		struct lcfibd_err e = { 0 };
		int fd = feed_fpm_listen(&p->cfg, &e);

		if (fd >= 0) {
			feed_fpm_listen_on(d, p, fd, &p->cfg);
		} else {
			feed_fpm_retry_later(p, e.msg);
			if (!next || next > FEED_FPM_RETRY_MS)
				next = FEED_FPM_RETRY_MS;
		}
	}
	feed_fpm_check_arm(p, next);
}

static void feed_fpm_check_event(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct feed_fpm *p = feed_fpm_of(s);
	uint64_t n;

	(void)events;
	if (read(p->check_fd, &n, sizeof(n)) == sizeof(n))
		feed_fpm_check(d, p);
}

/* One read: 1 to read on, 0 when drained, -1 when the connection went. */
static int feed_fpm_read_once(struct lcfibd *d, struct feed_fpm *p)
{
	struct errbuf err = { 0 };
	ssize_t n;

	n = read(p->peer_fd, p->rbuf + p->rlen, FEED_FPM_RBUF - p->rlen);
	if (n < 0 && errno == EINTR)
		return 1;
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n < 0) {
		char why[96];

		snprintf(why, sizeof(why), "failed: %s", strerror(errno));
		feed_fpm_peer_close(d, p, why, true);
		return -1;
	}
	if (n == 0) {
		/* Not a framing error: zebra stopped mid-write; its next replay mends it. */
		feed_fpm_peer_close(
			d, p, p->rlen ? "left in the middle of a frame" : "disconnected", true);
		return -1;
	}
	p->rlen += (size_t)n;
	p->bytes += (uint64_t)n;
	clock_gettime(CLOCK_MONOTONIC, &p->last_read);
	if (feed_fpm_frame(p, &err)) {
		feed_fpm_bad_frame(d, p, err.msg);
		return -1;
	}
	/* An unfinished frame: the peer owes its rest within hold-time. */
	if (p->rlen && !p->check_armed)
		feed_fpm_check_arm(p, (uint64_t)p->cfg.hold_time_s * 1000);
	/* Room for another full read's payloads, or off to the writer. */
	if (p->blen > FEED_FPM_BATCH - FEED_FPM_RBUF && feed_fpm_submit(p)) {
		feed_fpm_peer_close(d, p, "dropped", true);
		return -1;
	}
	return 1;
}

static void feed_fpm_peer_event(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct feed_fpm *p = feed_fpm_of(s);
	int ret = 1;

	/*
	 * Level-triggered: what is left after the budget wakes the loop again.
	 * Paused, it reads only to take an error or hang-up, which epoll
	 * reports whatever it was asked for (else the loop would spin on it).
	 */
	for (int i = 0; i < FEED_FPM_READS_PER_EVENT && ret > 0 &&
			(!p->paused || (events & (EPOLLERR | EPOLLHUP)));
	     i++)
		ret = feed_fpm_read_once(d, p);
	if (ret < 0 || !p->blen)
		return;
	if (p->blen < FEED_FPM_JOB_MIN && writer_busy(d->writer)) {
		if (!p->holding) {
			feed_fpm_arm(p->hold_fd, FEED_FPM_HOLD_MS);
			p->holding = true;
		}
		return;
	}
	if (feed_fpm_submit(p))
		feed_fpm_peer_close(d, p, "dropped", true);
}

static void feed_fpm_hold_event(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct feed_fpm *p = feed_fpm_of(s);
	uint64_t n;

	(void)events;
	if (read(p->hold_fd, &n, sizeof(n)) != sizeof(n) || !p->holding)
		return;
	if (feed_fpm_submit(p))
		feed_fpm_peer_close(d, p, "dropped", true);
}

static void feed_fpm_timer_event(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct feed_fpm *p = feed_fpm_of(s);
	uint64_t n;

	(void)d;
	(void)events;
	if (read(p->timer_fd, &n, sizeof(n)) == sizeof(n))
		feed_fpm_settle_check(p);
}

/* ------------------------------------------------------ who connects */

/* One end of a connection as sock_diag takes it: an IPv4-mapped IPv6 address as IPv4. */
struct feed_fpm_end {
	int family;
	uint8_t addr[16];
	uint16_t port; /* network order */
	uint32_t scope;
};

static void feed_fpm_end_of(const struct sockaddr_storage *ss, struct feed_fpm_end *x)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

	memset(x, 0, sizeof(*x));
	if (ss->ss_family == AF_INET) {
		x->family = AF_INET;
		memcpy(x->addr, &s4->sin_addr, 4);
		x->port = s4->sin_port;
		return;
	}
	x->port = s6->sin6_port;
	if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		x->family = AF_INET;
		memcpy(x->addr, s6->sin6_addr.s6_addr + 12, 4);
		return;
	}
	x->family = AF_INET6;
	memcpy(x->addr, &s6->sin6_addr, 16);
	x->scope = s6->sin6_scope_id;
}

static size_t feed_fpm_alen(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* What sock_diag says of the socket at the peer's end of a connection. */
struct feed_fpm_owner {
	const struct feed_fpm_end *peer, *me;
	bool found;
	uint8_t state;
	uint32_t uid, inode;
};

static int feed_fpm_diag_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct inet_diag_msg *m = mnl_nlmsg_get_payload(nlh);
	struct feed_fpm_owner *o = data;
	size_t alen = feed_fpm_alen(o->peer->family);

	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY || mnl_nlmsg_get_payload_len(nlh) < sizeof(*m))
		return MNL_CB_OK;
	/*
	 * Exactly that end: a lookup that finds no connection may fall back
	 * to a listener on the peer's address and port, which is not it.
	 */
	if (m->idiag_family != o->peer->family || m->id.idiag_sport != o->peer->port ||
	    m->id.idiag_dport != o->me->port || memcmp(m->id.idiag_src, o->peer->addr, alen) ||
	    memcmp(m->id.idiag_dst, o->me->addr, alen))
		return MNL_CB_OK;
	o->found = true;
	o->state = m->idiag_state;
	o->uid = m->idiag_uid;
	o->inode = m->idiag_inode;
	return MNL_CB_OK;
}

/*
 * Looks up the socket of this network namespace whose local end is
 * @peer and remote end @me (the other end of our connection), by its
 * exact 4-tuple: 0 with @o->found set or not, or a negative errno when
 * the kernel cannot be asked.
 */
static int feed_fpm_peer_owner(struct feed_fpm_owner *o)
{
	union {
		char buf[8192]; /* one inet_diag_msg: far less */
		struct nlmsghdr align;
	} u;
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(u.buf);
	struct inet_diag_req_v2 *req;
	struct mnl_socket *nl;
	ssize_t n;
	int ret = 0;

	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nlh->nlmsg_seq = 1;
	req = mnl_nlmsg_put_extra_header(nlh, sizeof(*req));
	req->sdiag_family = (uint8_t)o->peer->family;
	req->sdiag_protocol = IPPROTO_TCP;
	req->idiag_states = ~0u;
	req->id.idiag_sport = o->peer->port;
	req->id.idiag_dport = o->me->port;
	memcpy(req->id.idiag_src, o->peer->addr, sizeof(req->id.idiag_src));
	memcpy(req->id.idiag_dst, o->me->addr, sizeof(req->id.idiag_dst));
	req->id.idiag_if = o->peer->scope;
	req->id.idiag_cookie[0] = req->id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	/* Non-blocking: the kernel answers within sendto(); no answer is an error, not a wait. */
	nl = mnl_socket_open2(NETLINK_SOCK_DIAG, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) ||
	    mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	n = mnl_socket_recvfrom(nl, u.buf, sizeof(u.buf));
	if (n < 0) {
		ret = -errno;
		goto out;
	}
	/* No such socket: an NLMSG_ERROR of ENOENT. */
	if (mnl_cb_run(u.buf, (size_t)n, 1, mnl_socket_get_portid(nl), feed_fpm_diag_cb, o) < 0 &&
	    errno != ENOENT)
		ret = -errno;
out:
	mnl_socket_close(nl);
	return ret;
}

/* Whether @x is an address of this host: loopback, or one of its interfaces'. */
static bool feed_fpm_local_address(const struct feed_fpm_end *x)
{
	static const uint8_t lo6[16] = { [15] = 1 };
	struct ifaddrs *ifa, *i;
	bool local = false;

	if ((x->family == AF_INET && x->addr[0] == 127) ||
	    (x->family == AF_INET6 && memcmp(x->addr, lo6, 16) == 0))
		return true;
	if (getifaddrs(&ifa))
		return true; /* cannot tell: the caller refuses */
	for (i = ifa; i && !local; i = i->ifa_next) {
		struct feed_fpm_end a;

		if (!i->ifa_addr ||
		    (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
			continue;
		feed_fpm_end_of((const struct sockaddr_storage *)(const void *)i->ifa_addr, &a);
		local = a.family == x->family &&
			memcmp(a.addr, x->addr, feed_fpm_alen(a.family)) == 0;
	}
	freeifaddrs(ifa);
	return local;
}

static bool feed_fpm_prefix_has(const struct feed_fpm_prefix *pf, const struct feed_fpm_end *x)
{
	unsigned int full = pf->len / 8, rest = pf->len % 8;

	if (pf->family != x->family || memcmp(pf->addr, x->addr, full))
		return false;
	return !rest || !((pf->addr[full] ^ x->addr[full]) & (0xff00u >> rest) & 0xffu);
}

/*
 * Whether @uid is an allowed user. A name this host did not know at the
 * last config change (a default "frr" before FRR was installed) is looked
 * up again now.
 */
static bool feed_fpm_user_allowed(const struct feed_fpm_cfg *c, uid_t uid)
{
	for (unsigned int i = 0; i < c->n_users; i++) {
		if (c->users[i].known && c->users[i].uid == uid)
			return true;
	}
	for (unsigned int i = 0; i < c->n_users; i++) {
		struct passwd pw, *found = NULL;
		char buf[1024];

		if (!c->users[i].known &&
		    getpwnam_r(c->users[i].name, &pw, buf, sizeof(buf), &found) == 0 && found &&
		    found->pw_uid == uid)
			return true;
	}
	return false;
}

/* "uid 65534 (nobody)" */
static void feed_fpm_uid_name(uid_t uid, char *buf, size_t size)
{
	struct passwd pw, *found = NULL;
	char pbuf[1024];

	if (getpwuid_r(uid, &pw, pbuf, sizeof(pbuf), &found) == 0 && found)
		snprintf(buf, size, "uid %u (%s)", (unsigned int)uid, found->pw_name);
	else
		snprintf(buf, size, "uid %u", (unsigned int)uid);
}

/*
 * Whether the peer of @fd may feed the FIB: a process of this host (the
 * kernel knows the socket at the other end) of an allowed user, or a peer
 * elsewhere whose address is in allowed-remote. @who (@size bytes) says
 * who it is, @why (@size bytes) why it may not.
 */
static bool feed_fpm_allowed(const struct feed_fpm *p, int fd, char *who, char *why, size_t size)
{
	struct sockaddr_storage me_ss, peer_ss;
	socklen_t me_len = sizeof(me_ss), peer_len = sizeof(peer_ss);
	struct feed_fpm_end me, peer;
	struct feed_fpm_owner o = { &peer, &me, false, 0, 0, 0 };
	int ret;

	snprintf(who, size, "owner unknown");

	if (getsockname(fd, (struct sockaddr *)&me_ss, &me_len) ||
	    getpeername(fd, (struct sockaddr *)&peer_ss, &peer_len)) {
		snprintf(why, size, "its addresses cannot be read: %s", strerror(errno));
		return false;
	}
	feed_fpm_end_of(&me_ss, &me);
	feed_fpm_end_of(&peer_ss, &peer);
	ret = feed_fpm_peer_owner(&o);
	if (ret) {
		snprintf(why, size, "its owner cannot be checked: sock_diag: %s", strerror(-ret));
		return false;
	}
	if (o.found) {
		/*
		 * A socket its process closed is no one's file (inode 0). If
		 * it still has data or its FIN to send (FIN_WAIT1, CLOSING,
		 * LAST_ACK: a zebra killed in the middle of its replay) it is
		 * still the full socket, with its creator's uid; once that is
		 * done it is a TIME_WAIT socket, which reports uid 0 whoever
		 * made it: no owner to believe.
		 */
		if (!o.inode && o.state != TCP_FIN_WAIT1 && o.state != TCP_CLOSING &&
		    o.state != TCP_LAST_ACK) {
			snprintf(why, size,
				 "it closed its socket before its owner could be checked");
			return false;
		}
		feed_fpm_uid_name((uid_t)o.uid, who, size);
		if (feed_fpm_user_allowed(&p->cfg, (uid_t)o.uid))
			return true;
		snprintf(why, size, "%.100s is not an allowed-user", who);
		return false;
	}
	/* No socket here has that end; an address of ours means a process that reset it at once. */
	if (feed_fpm_local_address(&peer)) {
		snprintf(why, size,
			 "its socket on this host is gone before its owner could be checked");
		return false;
	}
	snprintf(who, size, "not on this host");
	for (unsigned int i = 0; i < p->cfg.n_remote; i++) {
		if (feed_fpm_prefix_has(&p->cfg.remote[i], &peer))
			return true;
	}
	snprintf(why, size, "not a process of this host, and its address is not in allowed-remote");
	return false;
}

/* A refused connection's log line, one per FEED_FPM_REFUSAL_LOG_S at most. */
static void feed_fpm_log_refusal(struct feed_fpm *p, const char *name, const char *why)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (p->refusal_logged && now.tv_sec - p->refusal_log_time.tv_sec < FEED_FPM_REFUSAL_LOG_S) {
		p->refusals_unlogged++;
		return;
	}
	if (p->refusals_unlogged)
		log_warn(
			"FPM peer %s refused: %s (and %lu more refused, not logged, since the last "
			"line)",
			name, why, p->refusals_unlogged);
	else
		log_warn("FPM peer %s refused: %s", name, why);
	p->refusal_logged = true;
	p->refusal_log_time = now;
	p->refusals_unlogged = 0;
}

/* A new connection (@who owns it): the peer, unless one is connected already. */
static void feed_fpm_take(struct lcfibd *d, struct feed_fpm *p, int fd, const char *name,
			  const char *who)
{
	int one = 1, idle = FEED_FPM_KEEPIDLE, intvl = FEED_FPM_KEEPINTVL, cnt = FEED_FPM_KEEPCNT;

	if (p->peer_fd >= 0) {
		char why[FEED_FPM_NAME_LEN + 16];

		snprintf(why, sizeof(why), "%s is connected", p->peer);
		feed_fpm_log_refusal(p, name, why);
		feed_count(p->feed, FEED_REFUSED);
		close(fd);
		return;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)))
		log_warn("FPM peer %s: keepalive: %m", name);
	if (lcfibd_watch(d, fd, EPOLLIN, &p->peer_src.src)) {
		log_err("FPM peer %s: cannot watch the connection: %m; closing", name);
		close(fd);
		return;
	}
	p->peer_fd = fd;
	snprintf(p->peer, sizeof(p->peer), "%s", name);
	p->since = time(NULL);
	clock_gettime(CLOCK_MONOTONIC, &p->started);
	p->frames = p->bytes = 0;
	p->rlen = p->blen = 0;
	p->last_read = p->started;
	feed_count(p->feed, FEED_CONNECT);
	feed_count(p->feed, FEED_DUMP);
	/* zebra replays everything it has: what it does not is stale. */
	feed_sync_begin(p->feed);
	p->replaying = true;
	feed_fpm_timer_set(p, p->cfg.replay_settle_ms);
	log_notice("FPM peer %s connected (%s); its replay settles after %u ms without a message",
		   p->peer, who, (unsigned int)p->cfg.replay_settle_ms);
}

static void feed_fpm_accept(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct feed_fpm *p = feed_fpm_of(s);

	(void)events;
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		char name[FEED_FPM_NAME_LEN], who[160], why[160];
		int fd = accept4(p->listen_fd, (struct sockaddr *)&ss, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn("FPM feed: accept on %s: %m", p->listen_name);
			return;
		}
		feed_fpm_name((struct sockaddr *)&ss, name, sizeof(name));
		if (!feed_fpm_allowed(p, fd, who, why, sizeof(why))) {
			p->unauthorized++;
			feed_fpm_log_refusal(p, name, why);
			close(fd);
			continue;
		}
		feed_fpm_take(d, p, fd, name, who);
	}
}

/* ------------------------------------------------------- the listener */

static void feed_fpm_unlisten(struct lcfibd *d, struct feed_fpm *p)
{
	if (p->listen_fd < 0)
		return;
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, p->listen_fd, NULL);
	close(p->listen_fd);
	p->listen_fd = -1;
	log_info("FPM feed: no longer listening on %s", p->listen_name);
}

/* Takes @fd, listening on @where, as the listener (closing the one before). */
static void feed_fpm_listen_on(struct lcfibd *d, struct feed_fpm *p, int fd,
			       const struct feed_fpm_cfg *where)
{
	char why[96];

	feed_fpm_unlisten(d, p);
	if (lcfibd_watch(d, fd, EPOLLIN, &p->listen_src.src)) {
		snprintf(why, sizeof(why), "cannot watch the listener: %s", strerror(errno));
		close(fd);
		feed_fpm_retry_later(p, why);
		return;
	}
	p->listen_fd = fd;
	feed_fpm_cfg_name(where, p->listen_name, sizeof(p->listen_name));
	if (p->listen_error[0])
		log_notice("FPM feed listening on %s, after %llu s without a listener",
			   p->listen_name,
			   (unsigned long long)(feed_fpm_ms_since(&p->listen_down) / 1000));
	else
		log_notice("FPM feed listening on %s", p->listen_name);
	p->listen_error[0] = '\0';
}

/*
 * A new address that overlaps ours (0.0.0.0 or :: on the same port) can
 * be bound only once ours is closed; if it still cannot, ours comes back.
 */
static void feed_fpm_rebind(struct lcfibd *d, struct feed_fpm *p)
{
	struct lcfibd_err e = { 0 };
	int fd;

	feed_fpm_unlisten(d, p);
	fd = feed_fpm_listen(&p->next, &e);
	if (fd >= 0) {
		feed_fpm_listen_on(d, p, fd, &p->next);
		return;
	}
	log_err("FPM feed: %s; back to %s", e.msg, p->listen_name);
	feed_set_error(p->feed, "%s", e.msg);
	/* What we listen on (or try to), so that the next edit of the address tries again. */
	p->next.port = p->cfg.port;
	memcpy(p->next.address, p->cfg.address, sizeof(p->next.address));
	fd = feed_fpm_listen(&p->cfg, &e);
	if (fd < 0) {
		feed_fpm_retry_later(p, e.msg);
		return;
	}
	feed_fpm_listen_on(d, p, fd, &p->cfg);
}

static bool feed_fpm_same_place(const struct feed_fpm_cfg *a, const struct feed_fpm_cfg *b)
{
	return a->port == b->port && strcmp(a->address, b->address) == 0;
}

static struct feed_fpm *feed_fpm_new(struct lcfibd *d)
{
	struct feed_fpm *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->listen_fd = p->peer_fd = p->next_fd = -1;
	p->listen_src = (struct feed_fpm_src){ { feed_fpm_accept }, p };
	p->peer_src = (struct feed_fpm_src){ { feed_fpm_peer_event }, p };
	p->timer_src = (struct feed_fpm_src){ { feed_fpm_timer_event }, p };
	p->hold_src = (struct feed_fpm_src){ { feed_fpm_hold_event }, p };
	p->check_src = (struct feed_fpm_src){ { feed_fpm_check_event }, p };
	p->rbuf = malloc(FEED_FPM_RBUF);
	p->batch = malloc(FEED_FPM_BATCH);
	p->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	p->hold_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	p->check_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	p->d = d;
	p->feed = feed_new(d, "fpm");
	if (p->feed)
		feed_on_drained(p->feed, feed_fpm_drained, p);
	if (!p->rbuf || !p->batch || p->timer_fd < 0 || p->hold_fd < 0 || p->check_fd < 0 ||
	    !p->feed)
		goto fail;
	return p;
fail:
	if (p->timer_fd >= 0)
		close(p->timer_fd);
	if (p->hold_fd >= 0)
		close(p->hold_fd);
	if (p->check_fd >= 0)
		close(p->check_fd);
	feed_free(p->feed);
	free(p->rbuf);
	free(p->batch);
	free(p);
	return NULL;
}

/* The timers join the loop once it runs (prepare() may come before it). */
static void feed_fpm_watch_timers(struct lcfibd *d, struct feed_fpm *p)
{
	if (p->timers_watched)
		return;
	if (lcfibd_watch(d, p->timer_fd, EPOLLIN, &p->timer_src.src) ||
	    lcfibd_watch(d, p->hold_fd, EPOLLIN, &p->hold_src.src) ||
	    lcfibd_watch(d, p->check_fd, EPOLLIN, &p->check_src.src)) {
		log_err("FPM feed: cannot watch its timers: %m; replays will not sweep, unfinished "
			"frames not be dropped, a listener not be tried again");
		feed_set_error(p->feed, "cannot watch its timers: %s", strerror(errno));
		return;
	}
	p->timers_watched = true;
}

/* ------------------------------------------------------------- the API */

/*
 * Loop thread. Sets @cfg aside for apply(); binds a listener when the feed
 * turns on or moves. Called again before apply() (several leaves changed,
 * or another edit was refused) it replaces what it set aside.
 */
int feed_fpm_prepare(struct lcfibd *d, const struct feed_fpm_cfg *cfg, struct lcfibd_err *e)
{
	struct feed_fpm *p = d->fpm;
	int fd;

	if (!p && !cfg->enabled)
		return 0;
	if (!p) {
		p = feed_fpm_new(d);
		if (!p) {
			lcfibd_err_set(e, CTL_TAG_FAILED, "/lcfib:lcfib/feeds/fpm/enabled",
				       "cannot start the FPM feed: %s", strerror(errno));
			return -ENOMEM;
		}
		d->fpm = p;
	}
	feed_fpm_abort(d);
	if (cfg->enabled && p->cfg.enabled && p->listen_fd < 0 && p->listen_error[0] &&
	    feed_fpm_same_place(cfg, &p->cfg)) {
		/* Tries go on there already: another leaf's edit does not wait for them. */
		p->next_retry = true;
	} else if (cfg->enabled && (p->listen_fd < 0 || !feed_fpm_same_place(cfg, &p->cfg))) {
		fd = feed_fpm_listen(cfg, e);
		if (fd == -EADDRINUSE && p->listen_fd >= 0 && p->cfg.port == cfg->port) {
			p->next_rebind = true;
		} else if (fd >= 0) {
			p->next_fd = fd;
		} else if (cfg->at_start) {
			/* Anyone may take a port first: lcfibd starts, the feed tries again. */
			p->next_retry = true;
			snprintf(p->next_error, sizeof(p->next_error), "%.200s", e->msg);
			memset(e, 0, sizeof(*e));
		} else {
			return fd;
		}
	}
	p->next = *cfg;
	p->prepared = true;
	return 0;
}

/* Loop thread, with the loop and the writer running; cannot fail. */
void feed_fpm_apply(struct lcfibd *d)
{
	struct feed_fpm *p = d->fpm;

	if (!p || !p->prepared)
		return;
	p->prepared = false;
	if (!p->next.enabled) {
		if (p->cfg.enabled) {
			feed_fpm_peer_close(d, p, "disconnected: the feed is off", false);
			feed_fpm_unlisten(d, p);
			feed_flush(p->feed);
			log_notice("FPM feed off: its routes and nexthop objects are removed");
		}
		p->listen_error[0] = '\0';
		feed_fpm_check_arm(p, 0);
		p->cfg = p->next;
		return;
	}
	feed_fpm_watch_timers(d, p);
	if (p->next_rebind)
		feed_fpm_rebind(d, p);
	else if (p->next_fd >= 0)
		feed_fpm_listen_on(d, p, p->next_fd, &p->next);
	else if (p->next_retry && p->next_error[0])
		feed_fpm_retry_later(p, p->next_error);
	p->next_fd = -1;
	p->next_rebind = false;
	p->next_retry = false;
	p->next_error[0] = '\0';
	p->cfg = p->next;
	/* A new hold-time counts from the last read too. */
	if (p->peer_fd >= 0 && p->rlen)
		feed_fpm_check(d, p);
	/* A new settle time counts from the last read. */
	feed_fpm_settle_check(p);
}

void feed_fpm_abort(struct lcfibd *d)
{
	struct feed_fpm *p = d->fpm;

	if (!p)
		return;
	if (p->next_fd >= 0)
		close(p->next_fd);
	p->next_fd = -1;
	p->next_rebind = false;
	p->next_retry = false;
	p->next_error[0] = '\0';
	p->prepared = false;
}

/*
 * At exit, after writer_stop() (the feed's queued messages refer to it)
 * and before fib_destroy(): closes the sockets and frees the feed. The
 * FIB's routes go with the FIB.
 */
void feed_fpm_stop(struct lcfibd *d)
{
	struct feed_fpm *p = d->fpm;

	if (!p)
		return;
	feed_fpm_abort(d);
	p->blen = 0; /* the writer is gone: what was not queued goes with the FIB */
	p->holding = false;
	if (p->peer_fd >= 0)
		feed_fpm_peer_close(d, p, "disconnected: lcfibd is stopping", false);
	feed_fpm_unlisten(d, p);
	close(p->timer_fd);
	close(p->hold_fd);
	close(p->check_fd);
	feed_free(p->feed);
	free(p->rbuf);
	free(p->batch);
	free(p);
	d->fpm = NULL;
}

bool feed_fpm_stats(struct lcfibd *d, struct feed_stats *st, struct feed_fpm_info *info)
{
	struct feed_fpm *p = d->fpm;

	if (!p)
		return false;
	/* an off feed keeps its totals (counter64: they never go back to 0) */
	feed_get_stats(p->feed, st);
	if (!p->cfg.enabled)
		return false;
	snprintf(info->peer, sizeof(info->peer), "%s", p->peer);
	info->since = p->since;
	snprintf(info->listening, sizeof(info->listening), "%s",
		 p->listen_fd >= 0 ? p->listen_name : "");
	snprintf(info->listen_error, sizeof(info->listen_error), "%s", p->listen_error);
	info->unauthorized = p->unauthorized;
	info->dropped_silent = p->dropped_silent;
	return true;
}
