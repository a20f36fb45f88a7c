/* SPDX-License-Identifier: MIT */
/* The event loop's registration (the loop runs in main.c). */
#include <sys/epoll.h>

#include "daemon/lcfibd.h"
#include "daemon/loop.h"

int lcfibd_watch(struct lcfibd *d, int fd, uint32_t events, struct lcfibd_source *s)
{
	struct epoll_event ev = { .events = events, .data.ptr = s };

	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
}
