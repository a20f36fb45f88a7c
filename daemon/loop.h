/* SPDX-License-Identifier: MIT */
/*
 * The event loop's registration: an fd and what to call when it is ready.
 * Loop thread. The loop itself runs in main.c (it serves the control
 * connections after each round of events).
 */
#ifndef LCFIB_DAEMON_LOOP_H
#define LCFIB_DAEMON_LOOP_H

#include <stdint.h>

struct lcfibd;

/* An fd on the event loop: epoll's data.ptr points at one. */
struct lcfibd_source {
	void (*fn)(struct lcfibd *d, struct lcfibd_source *s, uint32_t events);
};

/* Loop thread: watches @fd for @events (EPOLLIN, ...); @s->fn is called with them. */
int lcfibd_watch(struct lcfibd *d, int fd, uint32_t events, struct lcfibd_source *s);

#endif
