/* SPDX-License-Identifier: MIT */
/*
 * The connection to lcfibd: requests and their answers (lib/ctl.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lib/ctl.h"

int cli_connect(struct cli *cli)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, err;

	if (cli->fd >= 0)
		return 0;
	if (!cli->sock_path) {
		cli_error(cli, NULL, NULL,
			  "no control socket: " CTL_NO_RUN_DIR "; give -s PATH or set LCFIB_SOCKET "
			  "(the system's daemon: -s " CTL_RUN_DIR_ROOT "/" CTL_SOCK_NAME ")");
		return -ENOTCONN;
	}
	if (strlen(cli->sock_path) >= sizeof(sun.sun_path)) {
		cli_error(cli, NULL, NULL, "cannot connect to %s: the path is too long",
			  cli->sock_path);
		return -ENOTCONN;
	}
	strcpy(sun.sun_path, cli->sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		err = errno;
		if (fd >= 0)
			close(fd);
		cli_error(cli, NULL, NULL, "cannot connect to %s: %s", cli->sock_path,
			  strerror(err));
		return -ENOTCONN;
	}
	cli->fd = fd;
	return 0;
}

void cli_disconnect(struct cli *cli)
{
	if (cli->fd >= 0)
		close(cli->fd);
	cli->fd = -1;
	free(cli->part);
	cli->part = NULL;
	cli->part_len = 0;
}

/* A connection the daemon closed since our last request: it restarted, say. */
static bool cli_stale(int err)
{
	return err == -EPIPE || err == -ECONNRESET || err == -ENOTCONN;
}

static int cli_report_errors(struct cli *cli, const char *payload);

/*
 * Whether the daemon refused the connection: it then wrote one error
 * (id 0) and closed, so sending failed; the error says why.
 */
static bool cli_refused(struct cli *cli)
{
	struct errbuf err = { "" };
	struct ctl_hdr h;
	char *payload;

	if (ctl_recv(cli->fd, CTL_REQ_MAX, &h, &payload, &err))
		return false;
	if (h.id != 0 || h.type != CTL_ERROR) {
		free(payload);
		return false;
	}
	cli_report_errors(cli, payload);
	free(payload);
	cli_disconnect(cli);
	return true;
}

int cli_send(struct cli *cli, unsigned int type, unsigned int flags, const char *payload,
	     size_t len, uint32_t *id)
{
	return cli_send_fd(cli, type, flags, payload, len, -1, id);
}

int cli_send_fd(struct cli *cli, unsigned int type, unsigned int flags, const char *payload,
		size_t len, int pass_fd, uint32_t *id)
{
	bool reused = cli->fd >= 0;
	int ret;

	if (len > CTL_REQ_MAX) {
		cli_error(cli, NULL, NULL, "the request is %zu bytes, more than the limit of %u",
			  len, CTL_REQ_MAX);
		return -EMSGSIZE;
	}
	ret = cli_connect(cli);
	if (ret)
		return ret;
	*id = cli->next_id++;
	ret = ctl_send_fd(cli->fd, type, flags, *id, payload, len, pass_fd);
	if (ret && reused && cli_stale(ret)) {
		/* nothing reached the daemon, so sending again on a new connection is safe */
		cli_disconnect(cli);
		ret = cli_connect(cli);
		if (ret)
			return ret;
		ret = ctl_send_fd(cli->fd, type, flags, *id, payload, len, pass_fd);
	}
	if (ret && cli_stale(ret) && cli_refused(cli))
		return -EREMOTEIO;
	if (ret) {
		cli_error(cli, NULL, NULL, "sending to %s: %s", cli->sock_path, strerror(-ret));
		/* the shell reconnects at its next command */
		cli_disconnect(cli);
	}
	return ret == -ENOTCONN || ret == -EINVAL ? -EIO : ret;
}

struct cli_errs {
	struct cli *cli;
	int n;
};

static void cli_daemon_error(void *arg, const char *message, const char *path, const char *apptag)
{
	struct cli_errs *e = arg;

	cli_error(e->cli, path, apptag, "%s", message);
	e->n++;
}

/* With --json the daemon's error goes out as it came; else one line per error. */
static int cli_report_errors(struct cli *cli, const char *payload)
{
	struct cli_errs e = { cli, 0 };
	bool json = cli->json;

	if (json) {
		printf("%s\n", payload);
		return -EREMOTEIO;
	}
	if (cli_errjson_parse(payload, cli_daemon_error, &e) < 0 && !e.n)
		cli_error(cli, NULL, NULL, "%s", payload[0] ? payload : "the daemon failed");
	else if (!e.n)
		cli_error(cli, NULL, NULL, "the daemon failed without saying why");
	return -EREMOTEIO;
}

/*
 * A piece of a long reply, or the reply that ends it: the payloads
 * concatenated are the reply (lib/ctl.h).
 */
static int cli_part_add(struct cli *cli, const struct ctl_hdr *h, char **payload, char **reply,
			bool *done)
{
	char *p;

	if (!cli->part && h->type == CTL_REPLY) {
		*reply = *payload;
		*done = true;
		return 0;
	}
	if (cli->part_len + h->len > CTL_REPLY_MAX ||
	    !(p = realloc(cli->part, cli->part_len + h->len + 1))) {
		cli_error(cli, NULL, NULL, "the daemon's reply is larger than %u bytes",
			  CTL_REPLY_MAX);
		free(*payload);
		cli_disconnect(cli);
		return -EMSGSIZE;
	}
	memcpy(p + cli->part_len, *payload, (size_t)h->len + 1);
	cli->part = p;
	cli->part_len += h->len;
	free(*payload);
	if (h->type == CTL_REPLY) {
		*reply = cli->part;
		*done = true;
		cli->part = NULL;
		cli->part_len = 0;
	}
	return 0;
}

int cli_recv_one(struct cli *cli, uint32_t id, cli_notify_fn notify, char **reply, bool *done)
{
	struct errbuf err = { "" };
	struct ctl_hdr h;
	char *payload;
	int ret;

	*done = false;
	ret = ctl_recv(cli->fd, CTL_REPLY_MAX, &h, &payload, &err);
	if (ret) {
		cli_error(cli, NULL, NULL, "%s", err.msg);
		cli_disconnect(cli);
		return ret == -ENOTCONN || ret == -EINVAL ? -EIO : ret;
	}
	if (h.type == CTL_NOTIFY) {
		if (notify)
			notify(cli, payload);
		free(payload);
		return 0;
	}
	if (h.id == 0 && h.type == CTL_ERROR) {
		/* about the connection itself: the daemon refused it */
		ret = cli_report_errors(cli, payload);
		free(payload);
		cli_disconnect(cli);
		return ret;
	}
	if (h.id == id && h.type == CTL_LINES) {
		/* a streamed answer: out as it comes */
		fwrite(payload, 1, h.len, stdout);
		free(payload);
		return 0;
	}
	if (h.id == id && (h.type == CTL_PART || h.type == CTL_REPLY))
		return cli_part_add(cli, &h, &payload, reply, done);
	if (h.id != id || (h.type != CTL_REPLY && h.type != CTL_ERROR)) {
		/* an answer to a request we gave up on: not ours to print */
		free(payload);
		return 0;
	}
	*done = true;
	if (h.type == CTL_ERROR) {
		free(cli->part); /* a listing that failed half-way */
		cli->part = NULL;
		cli->part_len = 0;
		ret = cli_report_errors(cli, payload);
		free(payload);
		return ret;
	}
	*reply = payload;
	return 0;
}

int cli_wait(struct cli *cli, uint32_t id, cli_notify_fn notify, char **reply)
{
	bool done = false;
	int ret = 0;

	*reply = NULL;
	while (!ret && !done)
		ret = cli_recv_one(cli, id, notify, reply, &done);
	cli_progress_clear(cli);
	return ret;
}

int cli_request(struct cli *cli, unsigned int type, unsigned int flags, const char *payload,
		cli_notify_fn notify, char **reply)
{
	uint32_t id;
	int ret;

	*reply = NULL;
	ret = cli_send(cli, type, flags, payload, strlen(payload), &id);
	if (ret)
		return ret;
	return cli_wait(cli, id, notify, reply);
}
