/* SPDX-License-Identifier: MIT */
/*
 * The FPM feed: FRR zebra's dplane_fpm_nl connects to us over TCP and
 * sends the routes (and nexthop objects) it installs, as netlink messages
 * in FPM frames (lib/fpm.h). Frames are read and checked here, on the
 * loop thread; their messages go, a wake-up's worth at a time, to the
 * writer (daemon/feed.c), which decodes and applies them in order.
 *
 * One peer at a time: zebra has one FPM connection, so a second one is a
 * misconfiguration (two zebras, or a stray client) and is refused rather
 * than mixed into the first one's table.
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
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "daemon/feed.h"
#include "daemon/lcfibd.h"
#include "daemon/log.h"
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
/* "[" IPv6 "%" zone "]:" port */
#define FEED_FPM_NAME_LEN (INET6_ADDRSTRLEN + IF_NAMESIZE + 10)

struct feed_fpm;

/* A source on the loop that knows its feed (epoll's data.ptr points at src). */
struct feed_fpm_src {
	struct lcfibd_source src; /* first */
	struct feed_fpm *p;
};

struct feed_fpm {
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

	/* the replay's end: replay-settle of quiet after a connect */
	struct feed_fpm_src timer_src;
	int timer_fd;
	bool replaying;

	/* a batch held back while the writer is busy goes after FEED_FPM_HOLD_MS at most */
	struct feed_fpm_src hold_src;
	int hold_fd;
	bool holding;

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

	(void)events;
	/* Level-triggered: what is left after the budget wakes the loop again. */
	for (int i = 0; i < FEED_FPM_READS_PER_EVENT && ret > 0; i++)
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

/* A new connection: the peer, unless one is connected already. */
static void feed_fpm_take(struct lcfibd *d, struct feed_fpm *p, int fd, const char *name)
{
	int one = 1, idle = FEED_FPM_KEEPIDLE, intvl = FEED_FPM_KEEPINTVL, cnt = FEED_FPM_KEEPCNT;

	if (p->peer_fd >= 0) {
		log_warn("FPM peer %s refused: %s is connected", name, p->peer);
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
	log_notice("FPM peer %s connected; its replay settles after %u ms without a message",
		   p->peer, (unsigned int)p->cfg.replay_settle_ms);
}

static void feed_fpm_accept(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct feed_fpm *p = feed_fpm_of(s);

	(void)events;
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		char name[FEED_FPM_NAME_LEN];
		int fd = accept4(p->listen_fd, (struct sockaddr *)&ss, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn("FPM feed: accept on %s: %m", p->listen_name);
			return;
		}
		feed_fpm_name((struct sockaddr *)&ss, name, sizeof(name));
		feed_fpm_take(d, p, fd, name);
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
	feed_fpm_unlisten(d, p);
	if (lcfibd_watch(d, fd, EPOLLIN, &p->listen_src.src)) {
		log_err("FPM feed: cannot watch the listener: %m");
		feed_set_error(p->feed, "cannot watch the listener: %s", strerror(errno));
		close(fd);
		return;
	}
	p->listen_fd = fd;
	feed_fpm_cfg_name(where, p->listen_name, sizeof(p->listen_name));
	log_notice("FPM feed listening on %s", p->listen_name);
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
	fd = feed_fpm_listen(&p->cfg, &e);
	if (fd < 0) {
		log_err("FPM feed: %s: the feed has no listener", e.msg);
		return;
	}
	feed_fpm_listen_on(d, p, fd, &p->cfg);
	/* What we listen on, so that the next edit of the address tries again. */
	p->next.port = p->cfg.port;
	memcpy(p->next.address, p->cfg.address, sizeof(p->next.address));
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
	p->rbuf = malloc(FEED_FPM_RBUF);
	p->batch = malloc(FEED_FPM_BATCH);
	p->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	p->hold_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	p->feed = feed_new(d, "fpm");
	if (!p->rbuf || !p->batch || p->timer_fd < 0 || p->hold_fd < 0 || !p->feed)
		goto fail;
	return p;
fail:
	if (p->timer_fd >= 0)
		close(p->timer_fd);
	if (p->hold_fd >= 0)
		close(p->hold_fd);
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
	    lcfibd_watch(d, p->hold_fd, EPOLLIN, &p->hold_src.src)) {
		log_err("FPM feed: cannot watch its timers: %m; replays will not sweep");
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
	if (cfg->enabled && (p->listen_fd < 0 || !feed_fpm_same_place(cfg, &p->cfg))) {
		fd = feed_fpm_listen(cfg, e);
		if (fd == -EADDRINUSE && p->listen_fd >= 0 && p->cfg.port == cfg->port)
			p->next_rebind = true;
		else if (fd < 0)
			return fd;
		else
			p->next_fd = fd;
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
		p->cfg = p->next;
		return;
	}
	feed_fpm_watch_timers(d, p);
	if (p->next_rebind)
		feed_fpm_rebind(d, p);
	else if (p->next_fd >= 0)
		feed_fpm_listen_on(d, p, p->next_fd, &p->next);
	p->next_fd = -1;
	p->next_rebind = false;
	p->cfg = p->next;
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
	feed_free(p->feed);
	free(p->rbuf);
	free(p->batch);
	free(p);
	d->fpm = NULL;
}

bool feed_fpm_stats(struct lcfibd *d, struct feed_stats *st, char *peer, size_t peer_size,
		    time_t *connected_since)
{
	struct feed_fpm *p = d->fpm;

	if (!p || !p->cfg.enabled)
		return false;
	feed_get_stats(p->feed, st);
	snprintf(peer, peer_size, "%s", p->peer);
	*connected_since = p->since;
	return true;
}
