/* SPDX-License-Identifier: MIT */
/*
 * load: we open a named file ourselves and pass the descriptor with the
 * request, so the daemon (root, usually) reads it with our rights, not
 * its own; the path goes out absolute, for the config. `load -` streams
 * our standard input in CTL_DATA frames. While the daemon works,
 * load-progress notifications draw a progress line.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lib/ctl.h"

#define CLI_CHUNK   (256u << 10) /* bytes of a CTL_DATA frame */
#define CLI_BAR_LEN 24

static struct lyd_node *cli_load_leaf(struct lyd_node *rpc, const char *name)
{
	struct lyd_node *n;

	for (n = lyd_child(rpc); n; n = n->next)
		if (!strcmp(n->schema->name, name))
			return n;
	return NULL;
}

/*
 * A relative path means ours, not the daemon's working directory. Opens
 * the file into *@fd: O_NONBLOCK, so that a FIFO cannot hang us (the
 * daemon refuses what is not a regular file).
 */
static int cli_load_path(struct cli *cli, struct lyd_node *path, int *fd)
{
	const char *p = lyd_get_value(path);
	char abs[PATH_MAX];
	LY_ERR lyret;
	int err;

	if (!realpath(p, abs)) {
		err = errno;
		cli_error(cli, NULL, NULL, "%s: %s", p, strerror(err));
		return err == EINVAL ? -EIO : -err;
	}
	*fd = open(abs, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (*fd < 0) {
		err = errno;
		cli_error(cli, NULL, NULL, "%s: %s", abs, strerror(err));
		return err == EINVAL ? -EIO : -err;
	}
	/* LY_EEXIST and LY_ENOT: the path was absolute already */
	lyret = lyd_change_term(path, abs);
	if (lyret && lyret != LY_EEXIST && lyret != LY_ENOT)
		return cli_ly_error(cli, NULL);
	return 0;
}

/* For a stream that is a regular file, its size lets the daemon show progress. */
static int cli_load_size(struct cli *cli, struct lyd_node *rpc)
{
	struct stat st;
	char size[32];

	if (cli_load_leaf(rpc, "size") || fstat(STDIN_FILENO, &st) || !S_ISREG(st.st_mode))
		return 0;
	snprintf(size, sizeof(size), "%lld", (long long)st.st_size);
	if (lyd_new_term(rpc, NULL, "size", size, 0, NULL))
		return cli_ly_error(cli, NULL);
	return 0;
}

/* --------------------------------------------------------------- progress */

struct cli_progress {
	const char *phase;
	uint64_t done, total, rate;
};

static uint64_t cli_notif_u64(const struct lyd_node *op, const char *name)
{
	const struct lyd_node *n;

	for (n = lyd_child(op); n; n = n->next)
		if (!strcmp(n->schema->name, name))
			return strtoull(lyd_get_value(n), NULL, 10);
	return 0;
}

static int cli_term_width(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) || ws.ws_col < 20)
		return 80;
	return ws.ws_col;
}

/* "12.0 MiB" for the byte phases, a plain count for routes. */
static char *cli_progress_amount(const struct cli_progress *p, uint64_t v, char *buf, size_t size)
{
	bool bytes = !strcmp(p->phase, "receiving") || !strcmp(p->phase, "parsing");

	if (bytes)
		return cli_format_bytes(v, buf, size);
	snprintf(buf, size, "%" PRIu64, v);
	return buf;
}

static void cli_progress_line(const struct cli_progress *p, char *line, size_t size)
{
	char done[32], total[32], rate[32], eta[32] = "";
	size_t n;

	n = (size_t)snprintf(line, size, "%-12s", p->phase);
	cli_progress_amount(p, p->done, done, sizeof(done));
	cli_progress_amount(p, p->rate, rate, sizeof(rate));
	if (p->total && p->done <= p->total) {
		unsigned int fill = (unsigned int)(p->done * CLI_BAR_LEN / p->total);
		char bar[CLI_BAR_LEN + 1];

		memset(bar, '#', fill);
		memset(bar + fill, '-', CLI_BAR_LEN - fill);
		bar[CLI_BAR_LEN] = '\0';
		if (p->rate)
			cli_format_secs((p->total - p->done + p->rate - 1) / p->rate, eta,
					sizeof(eta));
		n += (size_t)snprintf(line + n, size - n, " [%s] %3u%%  %s/%s", bar,
				      (unsigned int)(p->done * 100 / p->total), done,
				      cli_progress_amount(p, p->total, total, sizeof(total)));
	} else {
		n += (size_t)snprintf(line + n, size - n, " %s", done);
	}
	if (n < size && p->rate)
		n += (size_t)snprintf(line + n, size - n, "  %s/s", rate);
	if (n < size && eta[0])
		snprintf(line + n, size - n, "  ETA %s", eta);
}

static void cli_progress_draw(struct cli *cli, const struct cli_progress *p)
{
	char line[256];
	int width = cli_term_width();

	cli_progress_line(p, line, sizeof(line));
	/* one column short of the edge, or the terminal wraps the line */
	if ((int)strlen(line) >= width)
		line[width - 1] = '\0';
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	cli->progress_drawn = true;
}

void cli_progress_clear(struct cli *cli)
{
	if (!cli->progress_drawn)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	cli->progress_drawn = false;
}

/* A notification that does not parse is dropped: it must not fail the load. */
static void cli_load_notify(struct cli *cli, const char *payload)
{
	struct lyd_node *tree = NULL, *op = NULL;
	struct cli_progress p;
	struct ly_in *in;

	if (!cli->progress || ly_in_new_memory(payload, &in))
		return;
	if (!lyd_parse_op(cli->ctx, NULL, in, LYD_JSON, LYD_TYPE_NOTIF_YANG, &tree, &op) && op &&
	    !strcmp(op->schema->name, "load-progress")) {
		const struct lyd_node *phase = cli_load_leaf(op, "phase");

		p.phase = phase ? lyd_get_value(phase) : "loading";
		p.done = cli_notif_u64(op, "done");
		p.total = cli_notif_u64(op, "total");
		p.rate = cli_notif_u64(op, "rate");
		cli_progress_draw(cli, &p);
	}
	ly_err_clean(cli->ctx, NULL);
	lyd_free_all(tree);
	ly_in_free(in, 0);
}

/* ----------------------------------------------------------------- stream */

/* Sends one chunk of stdin, or CTL_END at its end (*@eof). */
static int cli_stream_chunk(struct cli *cli, uint32_t id, char *buf, bool *eof)
{
	ssize_t n;
	int ret;

	do
		n = read(STDIN_FILENO, buf, CLI_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		ret = -errno;
		cli_error(cli, NULL, NULL, "reading standard input: %s", strerror(errno));
		return ret == -EINVAL ? -EIO : ret;
	}
	*eof = n == 0;
	ret = ctl_send(cli->fd, *eof ? CTL_END : CTL_DATA, 0, id, buf, (size_t)n);
	if (ret) {
		cli_error(cli, NULL, NULL, "sending to %s: %s", cli->sock_path, strerror(-ret));
		cli_disconnect(cli);
		return -EIO;
	}
	return 0;
}

/*
 * Streams stdin while reading what the daemon sends meanwhile, so neither
 * side blocks on a full socket. The daemon may answer before the end
 * (an error, say): then *@reply or the error ends the stream.
 */
static int cli_load_stream(struct cli *cli, uint32_t id, char **reply, bool *answered)
{
	struct pollfd pfd = { .fd = cli->fd, .events = POLLIN | POLLOUT };
	char *buf = malloc(CLI_CHUNK);
	bool eof = false;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (!ret && !eof && !*answered) {
		if (poll(&pfd, 1, -1) < 0) {
			ret = errno == EINTR ? 0 : -errno;
			continue;
		}
		if (pfd.revents & (POLLIN | POLLHUP | POLLERR))
			ret = cli_recv_one(cli, id, cli_load_notify, reply, answered);
		else if (pfd.revents & POLLOUT)
			ret = cli_stream_chunk(cli, id, buf, &eof);
	}
	free(buf);
	return ret;
}

static int cli_load_send(struct cli *cli, struct lyd_node *rpc, bool stream, int fd, char **reply)
{
	bool answered = false;
	char *json = NULL;
	uint32_t id;
	int ret;

	ret = cli_rpc_prepare(cli, rpc, &json);
	if (!ret)
		ret = cli_send_fd(cli, CTL_RPC, fd >= 0 ? CTL_RPC_FD : 0, json, strlen(json), fd,
				  &id);
	free(json);
	if (!ret && stream)
		ret = cli_load_stream(cli, id, reply, &answered);
	if (!ret && !answered)
		ret = cli_wait(cli, id, cli_load_notify, reply);
	cli_progress_clear(cli);
	return ret;
}

int cli_load_call(struct cli *cli, struct lyd_node *rpc)
{
	struct lyd_node *path = cli_load_leaf(rpc, "path");
	bool stream = path && !strcmp(lyd_get_value(path), "-");
	char *reply = NULL;
	int ret, fd = -1;

	ret = stream ? cli_load_size(cli, rpc) : path ? cli_load_path(cli, path, &fd) : 0;
	if (ret) {
		if (fd >= 0)
			close(fd);
		return ret;
	}
	cli->progress = isatty(STDOUT_FILENO) && !cli->json && !cli->quiet;
	ret = cli_load_send(cli, rpc, stream, fd, &reply);
	if (fd >= 0)
		close(fd);
	cli->progress = false;
	if (!ret)
		ret = cli_rpc_output(cli, rpc, reply);
	free(reply);
	return ret;
}
