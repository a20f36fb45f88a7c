/* SPDX-License-Identifier: MIT */
/*
 * The peer of a control connection: its credentials, and files opened
 * with its rights rather than the daemon's.
 */
#ifndef LCFIB_DAEMON_PEER_H
#define LCFIB_DAEMON_PEER_H

#include <stdint.h>
#include <sys/types.h>

struct errbuf;

/* Who is at the other end of a control connection, as it connected. */
struct lcfibd_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	gid_t *groups; /* supplementary (SO_PEERGROUPS), malloc'd */
	unsigned int n_groups;
};

/* The credentials and groups of the peer of the unix socket @fd; 0 or -errno. */
int peer_get(int fd, struct lcfibd_peer *p);
void peer_free(struct lcfibd_peer *p);
/*
 * Opens the route file at @path with @p's rights (its fsuid, fsgid and
 * groups, no capabilities), then routefile_check_fd(). Returns the
 * descriptor, or a negative errno with a message naming @path.
 */
int peer_open(const struct lcfibd_peer *p, const char *path, uint64_t max_size, struct errbuf *err);
/* Whether @path, opened as @p, is the file open at @fd: 0, or -errno with a message. */
int peer_same_file(int fd, const struct lcfibd_peer *p, const char *path, uint64_t max_size,
		   struct errbuf *err);

#endif
