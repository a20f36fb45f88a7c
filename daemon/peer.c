/* SPDX-License-Identifier: MIT */
/*
 * Who is at the other end of a control connection, and files opened with
 * that peer's rights rather than the daemon's.
 *
 * lcfibd usually runs as root; a client that names a route file must not
 * get it read with root's rights (/etc/shadow through a load's error
 * messages). lcfibctl opens the file itself and passes the descriptor;
 * for a path without one, peer_open() opens it as the peer would: in a
 * short-lived thread that takes the peer's fsuid, fsgid and groups and
 * drops every effective capability (CAP_SYS_PTRACE too: /proc/PID/maps
 * checks it, not file modes). Credentials are per thread in the kernel;
 * the raw system calls keep them so (glibc's setgroups() would change
 * every thread of the process).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/peer.h"
#include "lib/err.h"
#include "lib/routefile.h"

int peer_get(int fd, struct lcfibd_peer *p)
{
	socklen_t len = sizeof(struct ucred);
	struct ucred cr;
	gid_t *g = NULL;

	memset(p, 0, sizeof(*p));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len))
		return -errno;
	p->pid = cr.pid;
	p->uid = cr.uid;
	p->gid = cr.gid;
	/* The groups the peer had when it connected; ERANGE tells how many there are. */
	len = 0;
	for (int tries = 0; tries < 4; tries++) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) == 0) {
			p->groups = g;
			p->n_groups = len / sizeof(gid_t);
			return 0;
		}
		if (errno != ERANGE) {
			free(g);
			return -errno;
		}
		free(g);
		g = malloc(len ? len : sizeof(gid_t));
		if (!g)
			return -ENOMEM;
	}
	free(g);
	return -EAGAIN; /* the peer cannot change its groups: not reached */
}

void peer_free(struct lcfibd_peer *p)
{
	free(p->groups);
	p->groups = NULL;
	p->n_groups = 0;
}

struct peer_open_arg {
	const struct lcfibd_peer *p;
	const char *path;
	int fd;  /* the result */
	int err; /* errno: EPERM when the identity could not be taken */
};

/* This thread only: the peer's file system identity and groups, no capabilities. */
static int peer_become(const struct lcfibd_peer *p)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct cap[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_setgroups, (size_t)p->n_groups, p->groups))
		return -1;
	setfsgid(p->gid);
	if ((gid_t)setfsgid((gid_t)-1) != p->gid)
		return -1;
	setfsuid(p->uid);
	if ((uid_t)setfsuid((uid_t)-1) != p->uid)
		return -1;
	if (syscall(SYS_capget, &hdr, cap))
		return -1;
	for (unsigned int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		cap[i].effective = 0;
	return syscall(SYS_capset, &hdr, cap) ? -1 : 0;
}

static void *peer_open_thread(void *arg)
{
	struct peer_open_arg *a = arg;

	a->fd = -1;
	if (peer_become(a->p)) {
		a->err = EPERM;
		return NULL;
	}
	/* O_NONBLOCK: a FIFO must not block the open; routefile_check_fd() refuses it after. */
	a->fd = open(a->path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	a->err = a->fd < 0 ? errno : 0;
	return NULL;
}

int peer_open(const struct lcfibd_peer *p, const char *path, uint64_t max_size, struct errbuf *err)
{
	struct peer_open_arg a = { p, path, -1, 0 };
	pthread_t t;
	int ret;

	/* Root, or the daemon's own user: the daemon's rights are theirs. */
	if (p->uid == 0 || p->uid == geteuid())
		return routefile_open(path, max_size, err);
	ret = pthread_create(&t, NULL, peer_open_thread, &a);
	if (ret) {
		err_set(err, "%s: cannot open it as uid %u: %s", path, (unsigned int)p->uid,
			strerror(ret));
		return -ret;
	}
	pthread_join(t, NULL);
	if (a.fd < 0) {
		if (a.err == EPERM)
			err_set(err,
				"%s: lcfibd cannot take the identity of uid %u to open it "
				"(lcfibctl passes the file it opened; or stream it)",
				path, (unsigned int)p->uid);
		else
			err_set(err, "%s: %s", path, strerror(a.err));
		return -a.err;
	}
	ret = routefile_check_fd(a.fd, path, max_size, err);
	if (ret) {
		close(a.fd);
		return ret;
	}
	return a.fd;
}

int peer_same_file(int fd, const struct lcfibd_peer *p, const char *path, uint64_t max_size,
		   struct errbuf *err)
{
	struct stat a, b;
	int fd2 = peer_open(p, path, max_size, err), ret = 0;

	if (fd2 < 0)
		return fd2;
	if (fstat(fd, &a) || fstat(fd2, &b)) {
		ret = -errno;
		err_set(err, "%s: %s", path, strerror(errno));
	} else if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		ret = -EINVAL;
		err_set(err, "the descriptor passed with the load is not the file %s", path);
	}
	close(fd2);
	return ret;
}
