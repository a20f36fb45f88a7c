/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/ctl.h"

void ctl_hdr_encode(const struct ctl_hdr *h, uint8_t *buf)
{
	uint32_t len = htonl(h->len), id = htonl(h->id);
	uint16_t flags = htons(h->flags);

	memcpy(buf, &len, 4);
	buf[4] = h->version;
	buf[5] = h->type;
	memcpy(buf + 6, &flags, 2);
	memcpy(buf + 8, &id, 4);
}

static int ctl_type_known(unsigned int type)
{
	return (type >= CTL_GET && type <= CTL_END) || (type >= CTL_REPLY && type <= CTL_LINES);
}

int ctl_hdr_decode(const uint8_t *buf, uint32_t max, struct ctl_hdr *h, struct errbuf *err)
{
	uint32_t len, id;
	uint16_t flags;

	memcpy(&len, buf, 4);
	memcpy(&flags, buf + 6, 2);
	memcpy(&id, buf + 8, 4);
	h->len = ntohl(len);
	h->version = buf[4];
	h->type = buf[5];
	h->flags = ntohs(flags);
	h->id = ntohl(id);
	if (h->version != CTL_VERSION) {
		err_set(err, "frame version %u, expected %u", h->version, CTL_VERSION);
		return -EPROTO;
	}
	if (!ctl_type_known(h->type)) {
		err_set(err, "frame type %u is unknown", h->type);
		return -EPROTO;
	}
	if (h->len > max) {
		err_set(err, "frame of %u bytes is larger than the limit of %u", h->len, max);
		return -EMSGSIZE;
	}
	return 0;
}

const char *ctl_type_name(unsigned int type)
{
	switch (type) {
	case CTL_GET:
		return "get";
	case CTL_EDIT:
		return "edit";
	case CTL_RPC:
		return "rpc";
	case CTL_DATA:
		return "data";
	case CTL_END:
		return "end";
	case CTL_REPLY:
		return "reply";
	case CTL_ERROR:
		return "error";
	case CTL_NOTIFY:
		return "notify";
	case CTL_PART:
		return "part";
	case CTL_LINES:
		return "lines";
	}
	return "unknown";
}

static int ctl_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Sends the header's bytes with @pass_fd (SCM_RIGHTS); 0 or -errno. */
static int ctl_send_hdr_fd(int fd, const uint8_t *hdr, int pass_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)hdr, .iov_len = CTL_HDR_LEN };
	struct msghdr m = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	ssize_t n;

	memset(&u, 0, sizeof(u));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	do
		n = sendmsg(fd, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* The descriptor went with the first byte; the rest of the header, if cut, follows. */
	return ctl_write_all(fd, hdr + n, CTL_HDR_LEN - (size_t)n);
}

int ctl_send_fd(int fd, unsigned int type, unsigned int flags, uint32_t id, const void *payload,
		size_t len, int pass_fd)
{
	struct ctl_hdr h = {
		.len = (uint32_t)len,
		.version = CTL_VERSION,
		.type = (uint8_t)type,
		.flags = (uint16_t)flags,
		.id = id,
	};
	uint8_t buf[CTL_HDR_LEN];
	int ret;

	if (len > UINT32_MAX)
		return -EMSGSIZE;
	ctl_hdr_encode(&h, buf);
	ret = pass_fd >= 0 ? ctl_send_hdr_fd(fd, buf, pass_fd)
			   : ctl_write_all(fd, buf, sizeof(buf));
	if (!ret && len)
		ret = ctl_write_all(fd, payload, len);
	return ret;
}

int ctl_send(int fd, unsigned int type, unsigned int flags, uint32_t id, const void *payload,
	     size_t len)
{
	return ctl_send_fd(fd, type, flags, id, payload, len, -1);
}

/* Reads exactly @len bytes: 0, -ECONNRESET on EOF, or -errno. */
static int ctl_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ctl_recv(int fd, uint32_t max, struct ctl_hdr *h, char **payload, struct errbuf *err)
{
	uint8_t buf[CTL_HDR_LEN];
	char *p;
	int ret;

	*payload = NULL;
	ret = ctl_read_all(fd, buf, sizeof(buf));
	if (ret) {
		if (ret == -ECONNRESET)
			err_set(err, "the daemon closed the connection");
		else
			err_set(err, "reading from the daemon: %s", strerror(-ret));
		return ret;
	}
	ret = ctl_hdr_decode(buf, max, h, err);
	if (ret)
		return ret;
	p = malloc((size_t)h->len + 1);
	if (!p) {
		err_set(err, "out of memory for a frame of %u bytes", h->len);
		return -ENOMEM;
	}
	ret = ctl_read_all(fd, p, h->len);
	if (ret) {
		free(p);
		err_set(err, "the daemon's frame was cut short: %s",
			ret == -ECONNRESET ? "connection closed" : strerror(-ret));
		return ret;
	}
	p[h->len] = '\0';
	*payload = p;
	return 0;
}

int ctl_default_run_dir(char *buf, size_t size)
{
	const char *run = getenv("XDG_RUNTIME_DIR");
	int n;

	if (geteuid() == 0)
		n = snprintf(buf, size, "%s", CTL_RUN_DIR_ROOT);
	else if (run && *run)
		n = snprintf(buf, size, "%s/lcfib", run);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
