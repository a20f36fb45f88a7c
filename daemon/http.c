/* SPDX-License-Identifier: MIT */
/*
 * The metrics endpoint: GET /metrics on a loopback TCP port answers the
 * state tree in Prometheus's text format (daemon/metrics.c). Off unless
 * the config's metrics/enabled is true.
 *
 * A scrape is one request per connection (HTTP/1.0 and 1.1, no
 * keep-alive): the request is read whole (at most HTTP_REQ_MAX bytes), the
 * answer built and written as the peer reads it, then the connection is
 * closed. Bounded: HTTP_CONNS connections at once (one more is closed at
 * accept and counted), each closed HTTP_TIMEOUT_S after it came, however
 * slowly it reads or writes; a connection's memory is its request buffer
 * and one answer. The answer is made at most once a second (the scrapes
 * of the next second get a copy), so that scrapes in a loop cost the loop
 * thread one state build a second however many come. Read-only, and what it shows is what any local user
 * reads with `lcfibctl show state`: loopback only, no peer check.
 *
 * Loop thread, all of it.
 */
#define _GNU_SOURCE /* accept4, asprintf */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon/http.h"
#include "daemon/lcfibd.h"
#include "daemon/loop.h"
#include "daemon/log.h"
#include "lib/ctl.h"

#define HTTP_CONNS     8
#define HTTP_REQ_MAX   4096
#define HTTP_TIMEOUT_S 5
#define HTTP_CACHE_MS  1000 /* an answer serves the scrapes of the next second */

struct http_conn {
	struct lcfibd_source src; /* first: the loop's pointer is the connection's */
	struct http *h;
	int fd;              /* -1: a free slot */
	time_t started;      /* CLOCK_MONOTONIC seconds */
	char req[HTTP_REQ_MAX];
	size_t req_len;
	char *out;           /* the answer, once the request is read */
	size_t out_len, out_off;
};

/* One listener and its connections. */
struct http {
	struct lcfibd_source lsrc, tsrc;
	struct lcfibd *d;
	http_body_fn body;
	int lfd, tfd;
	struct http_conn c[HTTP_CONNS];
	struct http_stats *st; /* the caller's: they outlive an endpoint turned off and on */
	char *cache;           /* the last answer's body, made at cache_ms */
	size_t cache_len;
	long long cache_ms;
};

/* The endpoint as the config has it: the listener, and the one an edit prepared. */
struct http_ep {
	struct lcfibd *d;
	http_body_fn body;
	struct http *cur, *next;
	bool prepared;      /* an edit's prepare ran: apply makes next current */
	struct http_stats st;
	char addr[INET6_ADDRSTRLEN], next_addr[INET6_ADDRSTRLEN];
	uint16_t port, next_port;
};

static struct http *http_open(struct lcfibd *d, const char *addr, uint16_t port, http_body_fn body,
			      struct http_stats *st, char *err, size_t err_size);
static void http_close_all(struct http *h);
static int http_watch(struct http *h);

static time_t http_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec;
}

static long long http_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The metrics, from the cache when it is younger than HTTP_CACHE_MS: *@body is the caller's. */
static int http_body(struct http *h, char **body, size_t *len)
{
	long long now = http_now_ms();

	if (!h->cache || now - h->cache_ms >= HTTP_CACHE_MS) {
		char *fresh;
		size_t n;

		if (h->body(h->d, &fresh, &n))
			return -1;
		free(h->cache);
		h->cache = fresh;
		h->cache_len = n;
		h->cache_ms = now;
	}
	*body = malloc(h->cache_len + 1);
	if (!*body)
		return -1;
	memcpy(*body, h->cache, h->cache_len);
	(*body)[h->cache_len] = '\0';
	*len = h->cache_len;
	return 0;
}

static void http_close(struct http_conn *c)
{
	if (c->fd < 0)
		return;
	close(c->fd); /* leaves the epoll set with it */
	c->fd = -1;
	free(c->out);
	c->out = NULL;
	c->req_len = c->out_len = c->out_off = 0;
}

/* The answer to the request in c->req: status line, headers, body. */
static void http_answer(struct http_conn *c)
{
	struct http *h = c->h;
	char method[8] = "", path[64] = "", version[2], *body = NULL;
	const char *status = "200 OK", *type = "text/plain; version=0.0.4; charset=utf-8";
	size_t body_len = 0;
	FILE *out;

	if (sscanf(c->req, "%7[A-Z] %63s HTTP/1.%1[01]", method, path, version) != 3) {
		status = "400 Bad Request";
		h->st->bad_requests++;
	} else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		status = "405 Method Not Allowed";
		h->st->bad_requests++;
	} else if (strcmp(path, "/metrics") != 0 && strncmp(path, "/metrics?", 9) != 0) {
		status = "404 Not Found";
		h->st->bad_requests++;
	} else if (http_body(h, &body, &body_len)) {
		status = "500 Internal Server Error";
		body = NULL;
		body_len = 0;
	} else {
		h->st->scrapes++;
	}
	if (strncmp(status, "200", 3) != 0) {
		type = "text/plain; charset=utf-8";
		free(body);
		if (asprintf(&body, "%s\n", status + 4) < 0)
			body = NULL;
		body_len = body ? strlen(body) : 0;
	}
	out = open_memstream(&c->out, &c->out_len);
	if (!out) {
		free(body);
		http_close(c);
		return;
	}
	fprintf(out,
		"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		"Connection: close\r\n\r\n",
		status, type, body_len);
	if (body && strcmp(method, "HEAD") != 0)
		fwrite(body, 1, body_len, out);
	free(body);
	if (fclose(out)) {
		c->out = NULL;
		http_close(c);
	}
}

/* Writes what the peer takes of the answer; closes when all is written or it failed. */
static void http_write(struct http_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			http_close(c);
			return;
		}
		c->out_off += (size_t)n;
	}
	shutdown(c->fd, SHUT_WR);
	http_close(c);
}

static void http_conn_event(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct http_conn *c = (struct http_conn *)s;
	struct epoll_event ev = { .events = EPOLLOUT };

	(void)d;
	if (c->out) {
		http_write(c);
		return;
	}
	if (events & (EPOLLERR | EPOLLHUP)) {
		http_close(c);
		return;
	}
	for (;;) {
		ssize_t n = recv(c->fd, c->req + c->req_len, sizeof(c->req) - 1 - c->req_len, 0);

		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			http_close(c);
			return;
		}
		c->req_len += (size_t)n;
		c->req[c->req_len] = '\0';
		if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n"))
			break;
		if (c->req_len == sizeof(c->req) - 1) {
			/* No end of headers in 4 KiB: a scraper's request is a few lines. */
			snprintf(c->req, sizeof(c->req), "TOO-LONG");
			break;
		}
	}
	http_answer(c);
	if (c->fd < 0)
		return;
	ev.data.ptr = &c->src;
	if (epoll_ctl(c->h->d->epfd, EPOLL_CTL_MOD, c->fd, &ev)) {
		http_close(c);
		return;
	}
	http_write(c);
}

static void http_accept(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct http *h = (struct http *)((char *)s - offsetof(struct http, lsrc));

	(void)events;
	for (;;) {
		struct http_conn *c = NULL;
		int fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		for (unsigned int i = 0; i < HTTP_CONNS && !c; i++)
			if (h->c[i].fd < 0)
				c = &h->c[i];
		if (!c) {
			h->st->refused++;
			close(fd);
			continue;
		}
		c->fd = fd;
		c->started = http_now();
		c->src.fn = http_conn_event;
		if (lcfibd_watch(d, fd, EPOLLIN | EPOLLRDHUP, &c->src)) {
			close(fd);
			c->fd = -1;
		}
	}
}

/* Once a second: a connection older than HTTP_TIMEOUT_S is closed. */
static void http_timer(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct http *h = (struct http *)((char *)s - offsetof(struct http, tsrc));
	time_t now = http_now();
	uint64_t ticks;

	(void)d;
	(void)events;
	if (read(h->tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		log_warn("metrics endpoint: timer: %s", strerror(errno));
	for (unsigned int i = 0; i < HTTP_CONNS; i++)
		if (h->c[i].fd >= 0 && now - h->c[i].started >= HTTP_TIMEOUT_S) {
			h->st->timed_out++;
			http_close(&h->c[i]);
		}
}

static bool http_addr_is_loopback(const char *addr)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, addr, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, addr, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

static struct http *http_open(struct lcfibd *d, const char *addr, uint16_t port, http_body_fn body,
			      struct http_stats *st, char *err, size_t err_size)
{
	struct itimerspec its = { { 1, 0 }, { 1, 0 } };
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	socklen_t len;
	struct http *h;
	int one = 1;

	if (!http_addr_is_loopback(addr)) {
		snprintf(err, err_size, "%s is not a loopback address: the metrics endpoint serves "
			 "127.0.0.0/8 or ::1 only", addr);
		return NULL;
	}
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		len = sizeof(*s4);
	} else {
		inet_pton(AF_INET6, addr, &s6->sin6_addr);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		len = sizeof(*s6);
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	h->d = d;
	h->body = body;
	h->st = st;
	h->tfd = -1;
	for (unsigned int i = 0; i < HTTP_CONNS; i++) {
		h->c[i].fd = -1;
		h->c[i].h = h;
	}
	h->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->lfd < 0 || setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(h->lfd, (struct sockaddr *)&ss, len) || listen(h->lfd, HTTP_CONNS)) {
		snprintf(err, err_size, "cannot listen on %s port %u: %s", addr, port, strerror(errno));
		goto fail;
	}
	h->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (h->tfd < 0 || timerfd_settime(h->tfd, 0, &its, NULL)) {
		snprintf(err, err_size, "timerfd: %s", strerror(errno));
		goto fail;
	}
	h->lsrc.fn = http_accept;
	h->tsrc.fn = http_timer;
	return h;
fail:
	http_close_all(h);
	return NULL;
}

/* On the loop: a listener opened at start is made before the loop is. */
static int http_watch(struct http *h)
{
	return lcfibd_watch(h->d, h->lfd, EPOLLIN, &h->lsrc) ||
	       lcfibd_watch(h->d, h->tfd, EPOLLIN, &h->tsrc);
}

static void http_close_all(struct http *h)
{
	if (!h)
		return;
	for (unsigned int i = 0; i < HTTP_CONNS; i++)
		http_close(&h->c[i]);
	if (h->lfd >= 0)
		close(h->lfd);
	if (h->tfd >= 0)
		close(h->tfd);
	free(h->cache);
	free(h);
}

struct http_ep *http_ep_new(struct lcfibd *d, http_body_fn body)
{
	struct http_ep *ep = calloc(1, sizeof(*ep));

	if (ep) {
		ep->d = d;
		ep->body = body;
	}
	return ep;
}

void http_ep_free(struct http_ep *ep)
{
	if (!ep)
		return;
	http_close_all(ep->cur);
	http_close_all(ep->next);
	free(ep);
}

int http_ep_prepare(struct http_ep *ep, bool enabled, const char *addr, uint16_t port,
		    bool open_now, struct lcfibd_err *e)
{
	char err[256];

	http_close_all(ep->next);
	ep->next = NULL;
	ep->prepared = false;
	if (!http_addr_is_loopback(addr)) {
		lcfibd_err_set(e, CTL_TAG_INVALID, HTTP_CFG "/address",
			       "%s is not a loopback address: the metrics endpoint serves 127.0.0.0/8 "
			       "or ::1 only", addr);
		return -1;
	}
	ep->prepared = true;
	snprintf(ep->next_addr, sizeof(ep->next_addr), "%s", enabled ? addr : "");
	ep->next_port = enabled ? port : 0;
	if (!enabled || !open_now)
		return 0;
	if (ep->cur && strcmp(ep->addr, addr) == 0 && ep->port == port)
		return 0; /* as it is: the listener stays */
	ep->next = http_open(ep->d, addr, port, ep->body, &ep->st, err, sizeof(err));
	if (!ep->next) {
		lcfibd_err_set(e, CTL_TAG_FAILED, HTTP_CFG "/port", "metrics endpoint: %s", err);
		ep->prepared = false;
		return -1;
	}
	return 0;
}

void http_ep_apply(struct http_ep *ep)
{
	if (!ep->prepared)
		return;
	ep->prepared = false;
	if (!ep->next_addr[0]) {
		if (ep->cur)
			log_notice("metrics endpoint: off");
		http_close_all(ep->cur);
		ep->cur = NULL;
	} else if (ep->next) {
		http_close_all(ep->cur);
		ep->cur = ep->next;
		if (http_watch(ep->cur)) {
			log_err("metrics endpoint: epoll: %s: off", strerror(errno));
			http_close_all(ep->cur);
			ep->cur = NULL;
			ep->next = NULL;
			return;
		}
		log_notice("metrics endpoint: serving http://%s%s%s:%u/metrics",
			   strchr(ep->next_addr, ':') ? "[" : "", ep->next_addr,
			   strchr(ep->next_addr, ':') ? "]" : "", ep->next_port);
	}
	ep->next = NULL;
	if (ep->cur) {
		snprintf(ep->addr, sizeof(ep->addr), "%s", ep->next_addr);
		ep->port = ep->next_port;
	}
}

void http_ep_abort(struct http_ep *ep)
{
	http_close_all(ep->next);
	ep->next = NULL;
	ep->prepared = false;
}

void http_ep_state(const struct http_ep *ep, struct http_stats *st, bool *listening,
		   unsigned int *connections)
{
	*st = ep->st;
	*listening = ep->cur != NULL;
	*connections = 0;
	for (unsigned int i = 0; ep->cur && i < HTTP_CONNS; i++)
		*connections += ep->cur->c[i].fd >= 0;
}
