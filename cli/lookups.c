/* SPDX-License-Identifier: MIT */
/*
 * Streamed lookups: `lookup -` and `lookups` read addresses from standard
 * input, `lookup -f FILE` from a file, one a line, and write an answer for
 * each as it comes; a plain `lookup ADDRESS` in text is a stream of one,
 * so that the daemon's is the one text form of a route. A thread sends
 * the input while this one writes the answers out: neither side waits on
 * a full socket, and lcfibctl holds a chunk of each, never the whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lib/ctl.h"

#define CLI_LOOKUP_CHUNK (64u << 10) /* bytes of a CTL_DATA frame */

/* What the sending thread sends: @in to its end, or the one address @one. */
struct cli_feed {
	int sock, in;
	uint32_t id;
	const char *one;
	int read_err, send_err; /* errnos, 0: none */
};

static int cli_feed_in(struct cli_feed *f, char *buf)
{
	for (;;) {
		ssize_t n = read(f->in, buf, CLI_LOOKUP_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			f->read_err = errno;
			return 0; /* the end: what came is answered */
		}
		if (n == 0)
			return 0;
		f->send_err = -ctl_send(f->sock, CTL_DATA, 0, f->id, buf, (size_t)n);
		if (f->send_err)
			return -1;
	}
}

static void *cli_feed_run(void *arg)
{
	struct cli_feed *f = arg;
	char *buf;

	if (f->one) {
		f->send_err = -ctl_send(f->sock, CTL_DATA, 0, f->id, f->one, strlen(f->one));
	} else {
		buf = malloc(CLI_LOOKUP_CHUNK);
		if (!buf) {
			f->read_err = ENOMEM;
		} else if (cli_feed_in(f, buf)) {
			free(buf);
			return NULL;
		}
		free(buf);
	}
	if (!f->send_err)
		f->send_err = -ctl_send(f->sock, CTL_END, 0, f->id, NULL, 0);
	return NULL;
}

static uint64_t cli_out_u64(const struct lyd_node *op, const char *name)
{
	struct lyd_node *n = NULL;

	if (lyd_find_path(op, name, 1, &n) || !n)
		return 0;
	return strtoull(lyd_get_value(n), NULL, 10);
}

/* The counts that end the stream: bad lines are an error (1), no route for `lookup ADDRESS` 5. */
static int cli_lookups_done(struct cli *cli, const char *reply, const char *what, bool one)
{
	struct lyd_node *tree, *op;
	uint64_t bad, n, found;
	int ret;

	ret = cli_rpc_parse_reply(cli, "lookups", reply, &tree, &op);
	if (ret || !op) {
		lyd_free_all(tree);
		return ret ? ret : -EBADMSG;
	}
	bad = cli_out_u64(op, "bad-lines");
	n = cli_out_u64(op, "addresses");
	found = cli_out_u64(op, "found");
	lyd_free_all(tree);
	if (bad) {
		cli_error(cli, NULL, NULL,
			  "%s: %llu of %llu lines are not addresses (see 'error:' above)", what,
			  (unsigned long long)bad, (unsigned long long)n);
		return -EIO;
	}
	return one && !found ? CLI_ENOTFOUND : 0;
}

/*
 * Sends @rpc (lookups), then the input (@in to its end, or @one), and
 * writes the answers to stdout. @what names the input in messages.
 */
static int cli_lookups_run(struct cli *cli, struct lyd_node *rpc, int in, const char *one,
			   const char *what)
{
	struct cli_feed f = { .in = in, .one = one };
	char *json = NULL, *reply = NULL;
	pthread_t th;
	int ret;

	ret = cli_rpc_prepare(cli, rpc, &json);
	if (!ret)
		ret = cli_send(cli, CTL_RPC, 0, json, strlen(json), &f.id);
	free(json);
	if (ret)
		return ret;
	f.sock = cli->fd;
	ret = -pthread_create(&th, NULL, cli_feed_run, &f);
	if (ret) {
		cli_error(cli, NULL, NULL, "cannot start a thread: %s", strerror(-ret));
		cli_disconnect(cli);
		return -EIO;
	}
	ret = cli_wait(cli, f.id, NULL, &reply);
	/* An error ended it early: the sender must not wait on a daemon that stopped reading. */
	if (ret && cli->fd >= 0)
		shutdown(cli->fd, SHUT_RDWR);
	pthread_join(th, NULL);
	if (ret) {
		cli_disconnect(cli);
	} else if (f.read_err) {
		cli_error(cli, NULL, NULL, "reading %s: %s (the lines before are answered)", what,
			  strerror(f.read_err));
		ret = -EIO;
	} else {
		ret = cli_lookups_done(cli, reply, what, one != NULL);
	}
	free(reply);
	return ret;
}

/* The lookups RPC from the words after the input's: `[table T] [format F]`. */
static int cli_lookups_rpc(struct cli *cli, int argc, char **argv, struct lyd_node **rpc)
{
	const struct lysc_node *s = cli_schema_rpc(cli, "lookups");
	struct lyd_node *match;
	int ret;

	if (!s)
		return cli_usage(cli, "the daemon's module has no lookups RPC");
	ret = cli_rpc_build(cli, s, argc, argv, rpc);
	if (ret)
		return ret;
	if (cli->json && lyd_find_path(*rpc, "format", 0, &match) &&
	    lyd_new_term(*rpc, NULL, "format", "json-lines", 0, NULL)) {
		lyd_free_all(*rpc);
		return cli_ly_error(cli, NULL);
	}
	return 0;
}

int cli_lookups_stream(struct cli *cli, int argc, char **argv)
{
	const char *file = NULL, *what = "standard input";
	struct lyd_node *rpc;
	char **words = calloc((size_t)argc + 1, sizeof(*words));
	int n = 1, in = STDIN_FILENO, ret;

	if (!words)
		return -ENOMEM;
	/* `lookup - [WORDS]`, `lookup -f FILE [WORDS]`, `lookups [WORDS]` */
	words[0] = (char *)"lookups";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[0], "lookup") && i == 1 && !strcmp(argv[i], "-"))
			continue;
		if (!strcmp(argv[0], "lookup") && i == 1 && !strcmp(argv[i], "-f")) {
			if (i + 1 >= argc) {
				free(words);
				return cli_usage(cli, "lookup -f: which file?");
			}
			file = what = argv[++i];
			continue;
		}
		words[n++] = argv[i];
	}
	ret = cli_lookups_rpc(cli, n, words, &rpc);
	free(words);
	if (ret)
		return ret;
	if (file) {
		/* opened here, with the rights of whoever runs lcfibctl */
		in = open(file, O_RDONLY | O_CLOEXEC);
		if (in < 0) {
			cli_error(cli, NULL, NULL, "cannot open %s: %s", file, strerror(errno));
			lyd_free_all(rpc);
			return -EIO;
		}
	}
	ret = cli_lookups_run(cli, rpc, in, NULL, what);
	if (file)
		close(in);
	lyd_free_all(rpc);
	return ret;
}

int cli_lookup_one(struct cli *cli, const struct lyd_node *lookup)
{
	struct lyd_node *rpc = NULL, *addr = NULL, *table = NULL;
	char line[CLI_VALUE_MAX + 2];
	int ret;

	if (lyd_find_path(lookup, "address", 0, &addr) || !addr)
		return cli_usage(cli, "lookup: address is missing");
	snprintf(line, sizeof(line), "%s\n", lyd_get_value(addr));
	if (lyd_new_inner(NULL, cli->mod, "lookups", 0, &rpc))
		return cli_ly_error(cli, NULL);
	if (!lyd_find_path(lookup, "table", 0, &table) && table &&
	    lyd_new_term(rpc, NULL, "table", lyd_get_value(table), 0, NULL)) {
		lyd_free_all(rpc);
		return cli_ly_error(cli, NULL);
	}
	ret = cli_lookups_run(cli, rpc, -1, line, "the address");
	lyd_free_all(rpc);
	return ret;
}
