/* SPDX-License-Identifier: MIT */
/*
 * The kernel feed: lcfibd mirrors the kernel's routing tables.
 *
 * Two NETLINK_ROUTE sockets, both read on the loop thread. The event
 * socket joins the route, nexthop, link and address groups before
 * anything is dumped, so that no change falls between a dump and the
 * events. The dump socket asks for the nexthop objects, then the IPv4 and
 * the IPv6 routes, one after the other (a netlink socket runs one dump at
 * a time). Route and nexthop messages go, whole and unchanged, to
 * feed_submit(): the writer decodes and applies them, in the order they
 * were read.
 *
 * Events read while a dump runs are held, and submitted after its end: a
 * route that an event deleted would otherwise come back with a dump
 * message read after the event. Replaying an event the dump already
 * reflects is harmless (an add of what is there, a delete of what is
 * not). Events that wait on the socket when a dump is asked for are held
 * too, not dropped: the kernel announces an IPv4 route's deletion before
 * it takes the route out of its trie (fib_table_delete), and the IPv4
 * dump of a recent kernel takes no lock against it (RCU only), so a dump
 * asked for after the event was read can still list the route. Held
 * events are kept across a dump done again.
 *
 * Unless events were lost (ENOBUFS, or more held than
 * FEED_KERNEL_HELD_MAX): the events held and queued then have a hole, and
 * replaying one from before the hole could undo a change whose event fell
 * in it (a delete replayed over the add that was lost). The next dump
 * drops them instead, and one more dump follows its sweep, for the
 * deletions announced but not yet made when they were dropped.
 *
 * Resyncs. The kernel says when it dropped events (ENOBUFS: we leave
 * NETLINK_NO_ENOBUFS off to hear it), but it removes IPv4 routes without
 * a word when their link goes down or their source address goes away.
 * Either way a full dump between feed_sync_begin() and feed_sync_end()
 * adds what is missing and sweeps what the kernel no longer has. Link
 * and address changes are debounced: a burst gives one resync.
 *
 * Everything here runs on the loop thread.
 */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>

#include "daemon/err.h"
#include "daemon/feed.h"
#include "daemon/feed_kernel.h"
#include "daemon/lcfibd.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/writer.h"
#include "lib/ctl.h"

#define feed_kernel_of(ptr, member)                                                                \
	((struct feed_kernel *)((char *)(ptr)-offsetof(struct feed_kernel, member)))

/*
 * Messages go to the writer in batches of about this size: large enough
 * that a job's cost vanishes against its routes (~10k), small enough that
 * the writer applies one while the loop reads the next.
 */
#define FEED_KERNEL_BATCH (1u << 20)
/*
 * Room for one datagram. The kernel builds dump datagrams of at most 32
 * KiB (netlink_recvmsg caps max_recvmsg_len there) and events are
 * smaller: twice that, so that a datagram is never truncated.
 */
#define FEED_KERNEL_RX (64u << 10)
/*
 * After a read, the event socket is left alone this long. Events come a
 * datagram at a time, and the kernel wakes a waiting reader for each one,
 * at the writer's (`ip`'s, zebra's) cost: an IPI per route on a VM, which
 * doubled `ip -batch`'s time. Paused, the socket queues them, and the
 * next read takes them all, as one job for the writer.
 */
#define FEED_KERNEL_PAUSE_NS (1000L * 1000)
/* Held events beyond this are dropped and the dump is done again, which has them all. */
#define FEED_KERNEL_HELD_MAX (64u << 20)
/* A burst of link and address changes gives one resync, this long after its first change. */
#define FEED_KERNEL_DEBOUNCE_NS (200L * 1000 * 1000)
/* Dumps the kernel's changes interrupted, redone before sweeping anyway. */
#define FEED_KERNEL_INTR_TRIES 3
/* A dump that failed is tried again after this long. */
#define FEED_KERNEL_RETRY_S 1
/* Datagrams dropped at most before a dump: bounded, so that a storm of events cannot stall it. */
#define FEED_KERNEL_DRAIN_MAX 100000

/* A run of whole netlink messages, 4-byte aligned. */
struct feed_kernel_buf {
	char *data;
	size_t len, cap;
};

enum feed_kernel_state {
	FEED_KERNEL_OFF,
	FEED_KERNEL_PENDING, /* sockets taken, waiting for the loop and the writer to run */
	FEED_KERNEL_RUNNING,
};

/* What the dump socket is doing: the dumps in their order. */
enum feed_kernel_phase {
	FEED_KERNEL_IDLE,
	FEED_KERNEL_DUMP_NH,
	FEED_KERNEL_DUMP_V4,
	FEED_KERNEL_DUMP_V6,
};

struct feed_kernel {
	struct lcfibd *d;
	struct feed *feed; /* made at the first start, freed at exit */
	struct feed_kernel_cfg cfg;
	enum feed_kernel_state state;
	struct mnl_socket *ev, *dump;
	int timerfd, pausefd; /* resyncs; the event socket's pause */
	struct lcfibd_source ev_src, dump_src, timer_src, pause_src;

	/* what prepare() made, for apply() or abort() */
	struct feed_kernel_cfg next;
	bool has_next;
	struct mnl_socket *next_ev, *next_dump;

	/* the dump in progress, and the one asked for while it runs */
	enum feed_kernel_phase phase;
	uint32_t seq;
	bool interrupted; /* the kernel's table changed under the dump (see feed_kernel_note) */
	unsigned int intr_tries;
	bool held_dropped; /* too many events held: the dump is done again */
	bool again_lost;   /* events were lost: the next dump drops what is held and queued */
	bool settle;       /* one more dump after this one's sweep (see the top) */
	bool again, again_resync;
	bool timer_armed, paused;
	char timer_why[64]; /* why the timer will dump */
	struct timespec dump_started;

	struct feed_kernel_buf batch;  /* read, for the writer */
	struct feed_kernel_buf held;   /* events read since a dump was asked for */
	struct feed_kernel_buf groups; /* nexthop groups: after every object they name */
};

/* -------------------------------------------------------------- buffers */

static int feed_kernel_reserve(struct feed_kernel_buf *b, size_t room)
{
	size_t cap = b->cap ? b->cap : FEED_KERNEL_RX;
	char *p;

	if (b->cap - b->len >= room)
		return 0;
	while (cap - b->len < room)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

static void feed_kernel_buf_free(struct feed_kernel_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* Moves @nlh down to @w (w <= nlh) and pads it to 4 bytes; returns where the next one goes. */
static char *feed_kernel_keep(char *w, const struct nlmsghdr *nlh)
{
	size_t len = nlh->nlmsg_len;

	if (w != (const char *)nlh)
		memmove(w, nlh, len);
	memset(w + len, 0, MNL_ALIGN(len) - len);
	return w + MNL_ALIGN(len);
}

static int feed_kernel_append(struct feed_kernel_buf *b, const struct nlmsghdr *nlh)
{
	if (feed_kernel_reserve(b, MNL_ALIGN(nlh->nlmsg_len)))
		return -ENOMEM;
	b->len = (size_t)(feed_kernel_keep(b->data + b->len, nlh) - b->data);
	return 0;
}

/* Hands @b's messages to the writer. */
static void feed_kernel_submit(struct feed_kernel *k, struct feed_kernel_buf *b)
{
	if (!b->len)
		return;
	if (feed_submit(k->feed, b->data, b->len)) {
		/* The routes are lost with the batch: only a dump can bring them back. */
		log_err("kernel feed: out of memory queueing %zu bytes of messages: resync",
			b->len);
		feed_set_error(k->feed, "out of memory queueing messages");
		k->again = k->again_resync = true;
	}
	b->len = 0;
}

/* ----------------------------------------------------------- sockets */

static const unsigned int feed_kernel_groups[] = {
	RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE,  RTNLGRP_NEXTHOP,
	RTNLGRP_LINK,       RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR,
};

static void feed_kernel_close(struct mnl_socket **nl)
{
	if (*nl)
		mnl_socket_close(*nl);
	*nl = NULL;
}

static int feed_kernel_open(struct mnl_socket **nl, const char *what, struct lcfibd_err *e)
{
	*nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (*nl && mnl_socket_bind(*nl, 0, MNL_SOCKET_AUTOPID) == 0)
		return 0;
	lcfibd_err_set(e, CTL_TAG_FAILED, "/lcfib:lcfib/feeds/kernel/enabled",
		       "kernel feed: cannot %s the NETLINK_ROUTE %s socket: %s",
		       *nl ? "bind" : "open", what, strerror(errno));
	feed_kernel_close(nl);
	return -1;
}

/*
 * The event socket's receive buffer: beyond net.core.rmem_max only with
 * CAP_NET_ADMIN (SO_RCVBUFFORCE), else capped there (SO_RCVBUF); *@how
 * names the option that set it. Returns what the kernel gave (twice the
 * request: it counts its bookkeeping), or -errno.
 */
static int feed_kernel_set_rcvbuf(struct mnl_socket *nl, uint32_t bytes, const char **how)
{
	int fd = mnl_socket_get_fd(nl), v = bytes > INT_MAX / 2 ? INT_MAX / 2 : (int)bytes, got = 0;
	socklen_t len = sizeof(got);

	*how = "SO_RCVBUFFORCE";
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v))) {
		*how = "SO_RCVBUF";
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)))
			return -errno;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len))
		return -errno;
	return got;
}

/* Sets the running event socket's receive buffer and says how it went. */
static void feed_kernel_rcvbuf(const struct feed_kernel *k)
{
	const char *how;
	int got = feed_kernel_set_rcvbuf(k->ev, k->cfg.receive_buffer, &how);

	if (got < 0)
		log_warn("kernel feed: cannot set the receive buffer: %s", strerror(-got));
	else if ((uint64_t)got < 2 * (uint64_t)k->cfg.receive_buffer)
		log_notice("kernel feed: receive buffer %d bytes by %s, not the %u asked for: "
			   "net.core.rmem_max caps it without CAP_NET_ADMIN",
			   got, how, k->cfg.receive_buffer);
	else
		log_notice("kernel feed: receive buffer %d bytes by %s", got, how);
}

/*
 * The event socket, subscribed. NETLINK_NO_ENOBUFS stays off: lost events
 * must be heard of, to resync.
 */
static int feed_kernel_open_events(struct feed_kernel *k, uint32_t rcvbuf, struct lcfibd_err *e)
{
	const char *how;
	int ret;

	if (feed_kernel_open(&k->next_ev, "event", e))
		return -1;
	for (unsigned int i = 0; i < sizeof(feed_kernel_groups) / sizeof(feed_kernel_groups[0]);
	     i++) {
		int g = (int)feed_kernel_groups[i];

		if (mnl_socket_setsockopt(k->next_ev, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g))) {
			lcfibd_err_set(e, CTL_TAG_FAILED, "/lcfib:lcfib/feeds/kernel/enabled",
				       "kernel feed: cannot join netlink group %d: %s", g,
				       strerror(errno));
			feed_kernel_close(&k->next_ev);
			return -1;
		}
	}
	ret = feed_kernel_set_rcvbuf(k->next_ev, rcvbuf, &how);
	if (ret < 0) {
		lcfibd_err_set(e, CTL_TAG_FAILED, "/lcfib:lcfib/feeds/kernel/receive-buffer",
			       "kernel feed: cannot set the receive buffer to %u bytes: %s", rcvbuf,
			       strerror(-ret));
		feed_kernel_close(&k->next_ev);
		return -1;
	}
	return 0;
}

/* Receives one datagram at the end of @b: its length, 0 when none waits, or -errno. */
static ssize_t feed_kernel_recv(struct mnl_socket *nl, struct feed_kernel_buf *b)
{
	ssize_t n;

	if (feed_kernel_reserve(b, FEED_KERNEL_RX))
		return -ENOMEM;
	n = mnl_socket_recvfrom(nl, b->data + b->len, FEED_KERNEL_RX);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	return n;
}

/* ------------------------------------------------------------- dumps */

static void feed_kernel_arm(struct feed_kernel *k, time_t s, long ns, const char *why);
static void feed_kernel_dump(struct feed_kernel *k, bool resync);

static void feed_kernel_take_events(struct feed_kernel *k, struct feed_kernel_buf *b, size_t n);

/*
 * Drops the held events and the route messages waiting on the event
 * socket (and a pending ENOBUFS), after events were lost: the dump about
 * to be asked for reflects them, and the dump after it the deletions not
 * yet made. Link and address changes still count: the kernel sends them
 * before it drops the routes they take away, so the dump may not reflect
 * those yet.
 */
static void feed_kernel_drain(struct feed_kernel *k)
{
	k->held.len = 0;
	for (unsigned int i = 0; i < FEED_KERNEL_DRAIN_MAX; i++) {
		ssize_t n = feed_kernel_recv(k->ev, &k->held);

		if (n == 0 ||
		    (n < 0 && n != -ENOBUFS && n != -ENOSPC && n != -EINTR && n != -ESRCH))
			break;
		if (n > 0)
			feed_kernel_take_events(k, &k->held, (size_t)n);
		k->held.len = 0;
	}
}

/* Asks the kernel to dump @type (RTM_GETNEXTHOP, RTM_GETROUTE) of @family. */
static int feed_kernel_request(struct feed_kernel *k, uint16_t type, uint8_t family)
{
	union {
		char buf[128];
		struct nlmsghdr align;
	} u;
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(u.buf);

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = ++k->seq;
	if (type == RTM_GETNEXTHOP) {
		struct nhmsg *nhm = mnl_nlmsg_put_extra_header(nlh, sizeof(*nhm));

		nhm->nh_family = family;
	} else {
		struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));

		rtm->rtm_family = family;
	}
	if (mnl_socket_sendto(k->dump, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	return 0;
}

static const char *feed_kernel_phase_name(enum feed_kernel_phase p)
{
	switch (p) {
	case FEED_KERNEL_DUMP_NH:
		return "nexthop";
	case FEED_KERNEL_DUMP_V4:
		return "IPv4 route";
	case FEED_KERNEL_DUMP_V6:
		return "IPv6 route";
	default:
		return "no";
	}
}

/*
 * The dump failed: nothing is swept (the routes it did not reach are not
 * gone), and a new one starts in a while, with its own feed_sync_begin().
 */
static void feed_kernel_dump_failed(struct feed_kernel *k, int err)
{
	log_err("kernel feed: the %s dump failed: %s; again in %d s",
		feed_kernel_phase_name(k->phase), strerror(err), FEED_KERNEL_RETRY_S);
	feed_set_error(k->feed, "%s dump: %s", feed_kernel_phase_name(k->phase), strerror(err));
	k->batch.len = 0;
	k->groups.len = 0;
	k->phase = FEED_KERNEL_IDLE;
	feed_kernel_submit(k, &k->held);
	k->held_dropped = false;
	k->again = false;
	feed_kernel_arm(k, FEED_KERNEL_RETRY_S, 0, "a dump failed");
}

/* Asks for the dump of @phase. */
static void feed_kernel_phase_start(struct feed_kernel *k, enum feed_kernel_phase phase)
{
	static const struct {
		uint16_t type;
		uint8_t family;
	} req[] = {
		[FEED_KERNEL_DUMP_NH] = { RTM_GETNEXTHOP, AF_UNSPEC },
		[FEED_KERNEL_DUMP_V4] = { RTM_GETROUTE, AF_INET },
		[FEED_KERNEL_DUMP_V6] = { RTM_GETROUTE, AF_INET6 },
	};
	int ret;

	k->phase = phase;
	ret = feed_kernel_request(k, req[phase].type, req[phase].family);
	if (ret)
		feed_kernel_dump_failed(k, -ret);
}

/*
 * Starts a full dump, or asks for one after the running one. @resync: it
 * is one because events were lost or links changed (counted apart).
 */
static void feed_kernel_dump(struct feed_kernel *k, bool resync)
{
	if (k->state != FEED_KERNEL_RUNNING)
		return;
	if (k->phase != FEED_KERNEL_IDLE) {
		k->again = true;
		k->again_resync |= resync;
		return;
	}
	/*
	 * What was read before goes first: the writer applies it before the
	 * mark. What waits on the event socket is read from now on into the
	 * held events, which go after the dump; after a loss, it is dropped.
	 */
	feed_kernel_submit(k, &k->batch);
	if (k->again_lost) {
		feed_kernel_drain(k);
		k->again_lost = false;
		k->settle = true;
	}
	k->held_dropped = false;
	k->again = k->again_resync = false;
	k->interrupted = false;
	k->groups.len = 0;
	feed_count(k->feed, FEED_DUMP);
	if (resync)
		feed_count(k->feed, FEED_RESYNC);
	feed_sync_begin(k->feed);
	clock_gettime(CLOCK_MONOTONIC, &k->dump_started);
	feed_kernel_phase_start(k, FEED_KERNEL_DUMP_NH);
}

/*
 * A dump asked for while none ran (a failed allocation or timer) starts
 * at the end of the read that asked for it, not in the middle of it.
 */
static void feed_kernel_dump_if_asked(struct feed_kernel *k)
{
	if (k->again && k->phase == FEED_KERNEL_IDLE)
		feed_kernel_dump(k, k->again_resync);
}

/* The IPv6 dump ended: sweep, then the events held meanwhile. */
static void feed_kernel_dump_done(struct feed_kernel *k)
{
	struct timespec now;

	k->phase = FEED_KERNEL_IDLE;
	if (k->interrupted && k->intr_tries < FEED_KERNEL_INTR_TRIES) {
		/* A route the dump skipped would be swept: do it all again, then sweep. */
		log_info("kernel feed: the kernel's tables changed under the dump: again");
		k->intr_tries++;
		feed_kernel_dump(k, false); /* the held events go after it */
		return;
	}
	/* Changes that never stop: sweep, and one more dump brings back what was skipped. */
	k->again |= k->interrupted || k->settle;
	k->settle = false;
	k->intr_tries = 0;
	feed_sync_end(k->feed);
	clock_gettime(CLOCK_MONOTONIC, &now);
	log_info("kernel feed: dump done in %ld ms",
		 (long)((now.tv_sec - k->dump_started.tv_sec) * 1000 +
			(now.tv_nsec - k->dump_started.tv_nsec) / 1000000));
	if (k->again) {
		/*
		 * The held events go after the next dump: one read before its
		 * request may be a deletion the kernel has announced but not made.
		 */
		feed_kernel_dump(k, k->again_resync);
		return;
	}
	feed_kernel_submit(k, &k->held);
	if (k->held.cap > 4 * FEED_KERNEL_RX) /* a burst's buffer is not kept */
		feed_kernel_buf_free(&k->held);
}

/* NLMSG_DONE or NLMSG_ERROR @nlh ended the current dump: on to the next one. */
static void feed_kernel_phase_end(struct feed_kernel *k, const struct nlmsghdr *nlh)
{
	int err = 0;

	if (nlh->nlmsg_len >= MNL_NLMSG_HDRLEN + sizeof(int))
		err = *(const int *)mnl_nlmsg_get_payload(nlh);
	else
		err = -EBADMSG;
	if (k->phase == FEED_KERNEL_DUMP_NH && (err == -EOPNOTSUPP || err == -EINVAL)) {
		/* A kernel before 5.3 has no nexthop objects: routes carry their nexthops. */
		log_info("kernel feed: no nexthop objects in this kernel (%s)", strerror(-err));
		err = 0;
	}
	if (err) {
		feed_kernel_dump_failed(k, -err);
		return;
	}
	feed_kernel_submit(k, &k->batch);
	switch (k->phase) {
	case FEED_KERNEL_DUMP_NH:
		feed_kernel_submit(k, &k->groups);
		feed_kernel_phase_start(k, FEED_KERNEL_DUMP_V4);
		break;
	case FEED_KERNEL_DUMP_V4:
		feed_kernel_phase_start(k, FEED_KERNEL_DUMP_V6);
		break;
	default:
		feed_kernel_dump_done(k);
		break;
	}
}

static int feed_kernel_group_attr(const struct nlattr *a, void *data)
{
	if (mnl_attr_get_type(a) != NHA_GROUP)
		return MNL_CB_OK;
	*(bool *)data = true;
	return MNL_CB_STOP;
}

/*
 * A nexthop group whose members have higher ids comes first in the dump
 * (it is ordered by id): groups go after every object instead.
 */
static bool feed_kernel_is_group(const struct nlmsghdr *nlh)
{
	bool group = false;

	if (nlh->nlmsg_type != RTM_NEWNEXTHOP ||
	    nlh->nlmsg_len < MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(struct nhmsg)))
		return false;
	mnl_attr_parse(nlh, sizeof(struct nhmsg), feed_kernel_group_attr, &group);
	return group;
}

/*
 * The @n bytes just received at the end of the batch, from the dump
 * socket: keeps the dump's messages in place, holds back nexthop groups,
 * and ends the phase at its NLMSG_DONE (or error).
 */
static void feed_kernel_take_dump(struct feed_kernel *k, size_t n)
{
	const struct nlmsghdr *nlh = (const void *)(k->batch.data + k->batch.len);
	unsigned int portid = mnl_socket_get_portid(k->dump);
	char *w = k->batch.data + k->batch.len;
	int left = (int)n;

	for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
		/* Not ours, or left from a dump given up on. */
		if (nlh->nlmsg_seq != k->seq || nlh->nlmsg_pid != portid ||
		    k->phase == FEED_KERNEL_IDLE)
			continue;
		if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
			k->interrupted = true;
		if (nlh->nlmsg_type == NLMSG_DONE || nlh->nlmsg_type == NLMSG_ERROR) {
			k->batch.len = (size_t)(w - k->batch.data);
			feed_kernel_phase_end(k, nlh);
			return;
		}
		if (feed_kernel_is_group(nlh)) {
			if (feed_kernel_append(&k->groups, nlh))
				k->again = k->again_resync = true;
			continue;
		}
		w = feed_kernel_keep(w, nlh);
	}
	if (left)
		log_warn("kernel feed: %d bytes of a dump datagram do not frame", left);
	k->batch.len = (size_t)(w - k->batch.data);
}

static void feed_kernel_on_dump(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct feed_kernel *k = feed_kernel_of(s, dump_src);
	ssize_t n;

	(void)d;
	(void)events;
	/* Up to a batch per wakeup: the control socket and the events get their turn. */
	while (k->dump && k->batch.len < FEED_KERNEL_BATCH) {
		n = feed_kernel_recv(k->dump, &k->batch);
		if (n == 0)
			break;
		if (n == -EINTR || n == -ESRCH) /* ESRCH: not from the kernel */
			continue;
		if (n < 0) {
			if (k->phase != FEED_KERNEL_IDLE)
				feed_kernel_dump_failed(k, (int)-n);
			break;
		}
		feed_kernel_take_dump(k, (size_t)n);
	}
	feed_kernel_submit(k, &k->batch);
	feed_kernel_dump_if_asked(k);
}

/* ------------------------------------------------------------ events */

/* Resyncs (at once, or when a dump runs, after it): the kernel's changes were not all heard. */
static void feed_kernel_resync(struct feed_kernel *k, const char *why)
{
	log_notice("kernel feed: resync: %s", why);
	feed_kernel_dump(k, true);
}

static void feed_kernel_arm(struct feed_kernel *k, time_t s, long ns, const char *why)
{
	struct itimerspec its = { .it_value = { s, ns } };

	if (k->timer_armed)
		return;
	if (timerfd_settime(k->timerfd, 0, &its, NULL)) {
		/* No timer: the end of this read starts the resync. */
		log_warn("kernel feed: timerfd_settime: %s", strerror(errno));
		k->again = k->again_resync = true;
		return;
	}
	k->timer_armed = true;
	snprintf(k->timer_why, sizeof(k->timer_why), "%s", why);
}

static void feed_kernel_on_timer(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct feed_kernel *k = feed_kernel_of(s, timer_src);
	uint64_t n;

	(void)d;
	(void)events;
	if (read(k->timerfd, &n, sizeof(n)) != sizeof(n))
		return;
	k->timer_armed = false;
	feed_kernel_resync(k, k->timer_why);
}

/*
 * A link went down or up, or went away: the kernel dropped the IPv4
 * routes and nexthop objects through it without telling. A new link
 * (ifi_change all ones) has no routes yet.
 */
static void feed_kernel_link(struct feed_kernel *k, const struct nlmsghdr *nlh)
{
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	char why[64];

	if (nlh->nlmsg_len < MNL_NLMSG_HDRLEN + sizeof(*ifi))
		return;
	if (nlh->nlmsg_type == RTM_DELLINK)
		snprintf(why, sizeof(why), "link %d removed", ifi->ifi_index);
	else if ((ifi->ifi_change & IFF_UP) && ifi->ifi_change != ~0u)
		snprintf(why, sizeof(why), "link %d %s", ifi->ifi_index,
			 ifi->ifi_flags & IFF_UP ? "up" : "down");
	else
		return;
	feed_kernel_arm(k, 0, FEED_KERNEL_DEBOUNCE_NS, why);
}

/*
 * An IPv6 route changed while the IPv6 dump runs. When its tree changes,
 * the kernel restarts the walk from the root and skips as many routes as
 * it has sent (fib6_dump_table): a route that did not change can be
 * skipped, and NLM_F_DUMP_INTR does not say so. The nexthop dump sets
 * that flag; the IPv4 one resumes at the key where it stopped.
 */
static void feed_kernel_note(struct feed_kernel *k, const struct nlmsghdr *nlh)
{
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);

	if (k->phase == FEED_KERNEL_DUMP_V6 && nlh->nlmsg_len >= MNL_NLMSG_HDRLEN + sizeof(*rtm) &&
	    rtm->rtm_family == AF_INET6)
		k->interrupted = true;
}

/*
 * The @n bytes just received at the end of @b, from the event socket:
 * keeps the route and nexthop messages in place, drops the rest, and
 * notes link and address changes.
 */
static void feed_kernel_take_events(struct feed_kernel *k, struct feed_kernel_buf *b, size_t n)
{
	const struct nlmsghdr *nlh = (const void *)(b->data + b->len);
	char *w = b->data + b->len;
	int left = (int)n;

	for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
		switch (nlh->nlmsg_type) {
		case RTM_NEWROUTE:
		case RTM_DELROUTE:
			feed_kernel_note(k, nlh);
			w = feed_kernel_keep(w, nlh);
			break;
		case RTM_NEWNEXTHOP:
		case RTM_DELNEXTHOP:
			w = feed_kernel_keep(w, nlh);
			break;
		case RTM_NEWLINK:
		case RTM_DELLINK:
			feed_kernel_link(k, nlh);
			break;
		case RTM_NEWADDR:
		case RTM_DELADDR:
			/* Routes with the address as their source go with it, silently. */
			feed_kernel_arm(k, 0, FEED_KERNEL_DEBOUNCE_NS, "an address changed");
			break;
		default:
			break;
		}
	}
	if (left)
		log_warn("kernel feed: %d bytes of an event datagram do not frame", left);
	b->len = (size_t)(w - b->data);
}

static int feed_kernel_listen(struct feed_kernel *k, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = &k->ev_src };

	return epoll_ctl(k->d->epfd, EPOLL_CTL_MOD, mnl_socket_get_fd(k->ev), &ev);
}

/* Stops listening to the event socket for FEED_KERNEL_PAUSE_NS (see there). */
static void feed_kernel_pause(struct feed_kernel *k)
{
	struct itimerspec its = { .it_value = { 0, FEED_KERNEL_PAUSE_NS } };

	if (k->paused || !k->ev)
		return;
	if (timerfd_settime(k->pausefd, 0, &its, NULL) || feed_kernel_listen(k, 0))
		return;
	k->paused = true;
}

static void feed_kernel_on_pause(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct feed_kernel *k = feed_kernel_of(s, pause_src);
	uint64_t n;

	(void)d;
	(void)events;
	if (read(k->pausefd, &n, sizeof(n)) != sizeof(n) || !k->paused)
		return;
	k->paused = false;
	/* Level-triggered: what queued meanwhile is read at once. */
	if (k->ev && feed_kernel_listen(k, EPOLLIN))
		log_err("kernel feed: cannot listen to the event socket again: %s",
			strerror(errno));
}

/* Events were lost: the socket's buffer overflowed (ENOBUFS), or a datagram was cut. */
static void feed_kernel_lost(struct feed_kernel *k, int err)
{
	int got = 0;
	socklen_t len = sizeof(got);

	getsockopt(mnl_socket_get_fd(k->ev), SOL_SOCKET, SO_RCVBUF, &got, &len);
	log_warn("kernel feed: events lost (%s, receive buffer %d bytes)", strerror(err), got);
	feed_count(k->feed, FEED_ENOBUFS);
	feed_set_error(k->feed, "events lost: %s", strerror(err));
	k->again_lost = true;
	feed_kernel_resync(k, "events were lost");
}

/* Too many events held during a dump: they go, and the dump is done again. */
static void feed_kernel_drop_held(struct feed_kernel *k)
{
	log_warn("kernel feed: more than %u bytes of events during a dump: dumping again",
		 FEED_KERNEL_HELD_MAX);
	feed_kernel_buf_free(&k->held);
	k->held_dropped = true;
	k->again_lost = true;
	k->again = k->again_resync = true;
}

static void feed_kernel_on_events(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct feed_kernel *k = feed_kernel_of(s, ev_src);
	size_t budget = FEED_KERNEL_BATCH;

	(void)d;
	(void)events;
	while (k->ev && budget) {
		struct feed_kernel_buf *b = k->phase == FEED_KERNEL_IDLE ? &k->batch : &k->held;
		size_t before = b->len;
		ssize_t n = feed_kernel_recv(k->ev, b);

		if (n == 0)
			break;
		if (n == -EINTR || n == -ESRCH)
			continue;
		if (n == -ENOBUFS || n == -ENOSPC) {
			feed_kernel_lost(k, (int)-n);
			continue;
		}
		if (n < 0) {
			log_err("kernel feed: receiving events: %s", strerror((int)-n));
			feed_set_error(k->feed, "receiving events: %s", strerror((int)-n));
			break;
		}
		budget -= (size_t)n < budget ? (size_t)n : budget;
		feed_kernel_take_events(k, b, (size_t)n);
		if (b == &k->held && k->held_dropped)
			b->len = before;
		else if (b == &k->held && b->len > FEED_KERNEL_HELD_MAX)
			feed_kernel_drop_held(k);
		else if (b == &k->batch && b->len >= FEED_KERNEL_BATCH)
			feed_kernel_submit(k, b);
	}
	feed_kernel_submit(k, &k->batch);
	feed_kernel_dump_if_asked(k);
	if (budget < FEED_KERNEL_BATCH)
		feed_kernel_pause(k);
}

/* ------------------------------------------------------- start, stop */

static bool feed_kernel_loop_ready(const struct lcfibd *d)
{
	return d->epfd >= 0 && d->writer;
}

/* Takes the feed's fds off the loop; those that were not on it are left as they are. */
static void feed_kernel_unwatch(struct feed_kernel *k)
{
	int epfd = k->d->epfd;

	if (epfd < 0)
		return;
	if (k->ev)
		epoll_ctl(epfd, EPOLL_CTL_DEL, mnl_socket_get_fd(k->ev), NULL);
	if (k->dump)
		epoll_ctl(epfd, EPOLL_CTL_DEL, mnl_socket_get_fd(k->dump), NULL);
	if (k->timerfd >= 0)
		epoll_ctl(epfd, EPOLL_CTL_DEL, k->timerfd, NULL);
	if (k->pausefd >= 0)
		epoll_ctl(epfd, EPOLL_CTL_DEL, k->pausefd, NULL);
}

/*
 * Closes the sockets and forgets the dump in progress; the routes stay.
 * The sources stay allocated: an event of this epoll round may still
 * name them, and they then find nothing to read.
 */
static void feed_kernel_halt(struct feed_kernel *k)
{
	struct itimerspec off = { { 0, 0 }, { 0, 0 } };

	feed_kernel_unwatch(k);
	feed_kernel_close(&k->ev);
	feed_kernel_close(&k->dump);
	if (k->timerfd >= 0)
		timerfd_settime(k->timerfd, 0, &off, NULL);
	if (k->pausefd >= 0)
		timerfd_settime(k->pausefd, 0, &off, NULL);
	k->timer_armed = k->paused = false;
	k->phase = FEED_KERNEL_IDLE;
	k->again = k->again_resync = k->interrupted = k->held_dropped = false;
	k->again_lost = k->settle = false;
	k->intr_tries = 0;
	feed_kernel_buf_free(&k->batch);
	feed_kernel_buf_free(&k->held);
	feed_kernel_buf_free(&k->groups);
	k->state = FEED_KERNEL_OFF;
}

static void feed_kernel_tables_text(const struct feed_kernel_cfg *cfg, char *buf, size_t size)
{
	size_t off = 0;

	if (!cfg->n_tables) {
		snprintf(buf, size, "all");
		return;
	}
	buf[0] = '\0';
	for (unsigned int i = 0; i < cfg->n_tables && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%u", i ? "," : "",
					cfg->tables[i]);
}

/* The sockets prepare() opened are on the loop from here on; the first dump starts. */
static void feed_kernel_start(struct feed_kernel *k)
{
	struct lcfibd *d = k->d;
	char tables[256];

	if (!k->feed)
		k->feed = feed_new(d, "kernel");
	if (!k->feed || lcfibd_watch(d, mnl_socket_get_fd(k->ev), EPOLLIN, &k->ev_src) ||
	    lcfibd_watch(d, mnl_socket_get_fd(k->dump), EPOLLIN, &k->dump_src) ||
	    lcfibd_watch(d, k->timerfd, EPOLLIN, &k->timer_src) ||
	    lcfibd_watch(d, k->pausefd, EPOLLIN, &k->pause_src)) {
		/* apply() cannot fail: the feed stays off and says why. */
		log_err("kernel feed: cannot start: %s", strerror(errno));
		if (k->feed)
			feed_set_error(k->feed, "cannot start: %s", strerror(errno));
		feed_kernel_halt(k);
		return;
	}
	feed_set_tables(k->feed, k->cfg.tables, k->cfg.n_tables);
	k->state = FEED_KERNEL_RUNNING;
	feed_kernel_tables_text(&k->cfg, tables, sizeof(tables));
	log_notice("kernel feed: started (tables %s)", tables);
	feed_kernel_rcvbuf(k);
	feed_kernel_dump(k, false);
}

static bool feed_kernel_same_tables(const struct feed_kernel_cfg *a,
				    const struct feed_kernel_cfg *b)
{
	return a->n_tables == b->n_tables &&
	       !memcmp(a->tables, b->tables, a->n_tables * sizeof(a->tables[0]));
}

/* New settings for the running feed: no new sockets, no event lost. */
static void feed_kernel_reconfigure(struct feed_kernel *k, const struct feed_kernel_cfg *old)
{
	char tables[256];

	if (k->cfg.receive_buffer != old->receive_buffer && k->ev)
		feed_kernel_rcvbuf(k);
	if (feed_kernel_same_tables(&k->cfg, old) || !k->feed)
		return;
	feed_set_tables(k->feed, k->cfg.tables, k->cfg.n_tables);
	/* The dump brings the tables added; its sweep takes out those dropped. */
	feed_kernel_tables_text(&k->cfg, tables, sizeof(tables));
	log_notice("kernel feed: tables %s: dumping", tables);
	feed_kernel_dump(k, false);
}

/* The feed's two timers, made once and kept until exit. */
static int feed_kernel_timers(struct feed_kernel *k, struct lcfibd_err *e)
{
	if (k->timerfd < 0)
		k->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (k->pausefd < 0)
		k->pausefd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (k->timerfd >= 0 && k->pausefd >= 0)
		return 0;
	lcfibd_err_set(e, CTL_TAG_FAILED, "/lcfib:lcfib/feeds/kernel/enabled",
		       "kernel feed: timerfd_create: %s", strerror(errno));
	return -1;
}

int feed_kernel_prepare(struct lcfibd *d, const struct feed_kernel_cfg *cfg, struct lcfibd_err *e)
{
	struct feed_kernel *k = d->kernel;

	if (!k && !cfg->enabled)
		return 0; /* off, and never on: nothing to keep */
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k) {
			lcfibd_err_set(e, CTL_TAG_FAILED, NULL, "kernel feed: out of memory");
			return -1;
		}
		k->d = d;
		k->timerfd = k->pausefd = -1;
		k->ev_src.fn = feed_kernel_on_events;
		k->dump_src.fn = feed_kernel_on_dump;
		k->timer_src.fn = feed_kernel_on_timer;
		k->pause_src.fn = feed_kernel_on_pause;
		d->kernel = k;
	}
	/* A prepare that was neither applied nor aborted (a commit that failed later). */
	feed_kernel_abort(d);
	k->next = *cfg;
	k->has_next = true;
	if (!cfg->enabled || k->state != FEED_KERNEL_OFF)
		return 0;
	/* Subscribed from now on: what changes until the dump is in the dump or in the events. */
	if (feed_kernel_timers(k, e) || feed_kernel_open_events(k, cfg->receive_buffer, e) ||
	    feed_kernel_open(&k->next_dump, "dump", e))
		goto fail;
	return 0;
fail:
	feed_kernel_abort(d);
	return -1;
}

void feed_kernel_abort(struct lcfibd *d)
{
	struct feed_kernel *k = d->kernel;

	if (!k)
		return;
	feed_kernel_close(&k->next_ev);
	feed_kernel_close(&k->next_dump);
	k->has_next = false;
}

void feed_kernel_apply(struct lcfibd *d)
{
	struct feed_kernel *k = d->kernel;
	struct feed_kernel_cfg old;

	if (!k)
		return;
	if (k->has_next) {
		old = k->cfg;
		k->cfg = k->next;
		k->has_next = false;
		if (!k->cfg.enabled) {
			if (k->state != FEED_KERNEL_OFF) {
				feed_kernel_halt(k);
				if (k->feed)
					feed_flush(k->feed);
				log_notice("kernel feed: stopped; its routes are flushed");
			}
		} else if (k->state == FEED_KERNEL_OFF) {
			k->ev = k->next_ev;
			k->dump = k->next_dump;
			k->next_ev = k->next_dump = NULL;
			k->state = FEED_KERNEL_PENDING;
		} else {
			feed_kernel_reconfigure(k, &old);
		}
	}
	/* main.c applies the config once the loop and the writer run; before, it waits for them. */
	if (k->state == FEED_KERNEL_PENDING && feed_kernel_loop_ready(d))
		feed_kernel_start(k);
}

void feed_kernel_stop(struct lcfibd *d)
{
	struct feed_kernel *k = d->kernel;

	if (!k)
		return;
	feed_kernel_abort(d);
	feed_kernel_halt(k);
	if (k->timerfd >= 0)
		close(k->timerfd);
	if (k->pausefd >= 0)
		close(k->pausefd);
	if (k->feed)
		feed_free(k->feed);
	free(k);
	d->kernel = NULL;
}

bool feed_kernel_stats(struct lcfibd *d, struct feed_stats *st)
{
	const struct feed_kernel *k = d->kernel;

	/* an off feed keeps its totals (counter64: they never go back to 0) */
	if (k && k->feed)
		feed_get_stats(k->feed, st);
	return k && k->state == FEED_KERNEL_RUNNING && k->feed;
}
