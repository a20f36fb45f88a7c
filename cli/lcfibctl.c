/* SPDX-License-Identifier: MIT */
/*
 * lcfibctl: options, the schema, the command table, and error output.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cli/cli.h"
#include "lib/ctl.h"

#ifndef LCFIB_YANG_DIR
#define LCFIB_YANG_DIR "/usr/local/share/lcfib/yang"
#endif

const struct cli_cmd cli_cmds[] = {
	{ "set", "PATH... VALUE",
	  "Changes a configuration value (the path is the schema's node names, list keys after "
	  "the list's name).",
	  cli_cmd_set, cli_complete_set },
	{ "delete", "PATH...",
	  "Removes configuration: a leaf (back to its default), a list entry, or a subtree.",
	  cli_cmd_delete, cli_complete_delete },
	{ "unset", "PATH...", "Same as delete.", cli_cmd_delete, cli_complete_delete },
	{ "show", "state|config|trie|routes|memory|... [ARGS...]",
	  "Shows operational state, the running configuration, the tries or routes.", cli_cmd_show,
	  cli_complete_show },
	{ "route", "add|del|replace|append|prepend|change ROUTE | show [FILTERS] | get ADDRESS",
	  "Adds or deletes a route, in the syntax of 'ip route'; 'route show' is 'routes' "
	  "(proto, dev, type, table, PREFIX), 'route get' is 'lookup'.",
	  cli_cmd_route, cli_complete_route },
	{ "help", "[COMMAND [WORDS...]]", "Lists the commands, or a command's keywords.",
	  cli_cmd_help, cli_complete_help },
	{ "?", "[COMMAND]", "Same as help.", cli_cmd_help, cli_complete_help },
	{ NULL, NULL, NULL, NULL, NULL },
};

const struct cli_cmd *cli_cmd_find(const char *name)
{
	const struct cli_cmd *cmd;

	for (cmd = cli_cmds; cmd->name; cmd++)
		if (!strcmp(cmd->name, name))
			return cmd;
	return NULL;
}

int cli_run(struct cli *cli, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);

	if (cmd)
		return cmd->run(cli, argc, argv);
	if (cli_schema_rpc(cli, argv[0]))
		return cli_cmd_rpc(cli, argc, argv);
	return cli_usage(cli, "unknown command '%s' (try 'help')", argv[0]);
}

int cli_exit_status(int ret)
{
	if (!ret)
		return CLI_EXIT_OK;
	if (ret == -EINVAL)
		return CLI_EXIT_USAGE;
	if (ret == -ENOTCONN)
		return CLI_EXIT_CONNECT;
	if (ret == CLI_ENOTRECORDED)
		return CLI_EXIT_NOT_RECORDED;
	if (ret == CLI_ENOTFOUND)
		return CLI_EXIT_NOT_FOUND;
	return CLI_EXIT_ERROR;
}

/* ---------------------------------------------------------------- errors */

/* With --json an error is a JSON document too, on stderr: stdout holds only results. */
static void cli_error_json(const char *msg, const char *path, const char *apptag)
{
	fputs("{\"errors\":[{\"message\":", stderr);
	cli_json_string(stderr, msg);
	if (path) {
		fputs(",\"path\":", stderr);
		cli_json_string(stderr, path);
	}
	if (apptag) {
		fputs(",\"app-tag\":", stderr);
		cli_json_string(stderr, apptag);
	}
	fputs("}]}\n", stderr);
}

static void cli_error_v(struct cli *cli, const char *path, const char *apptag, const char *fmt,
			va_list ap) __attribute__((format(printf, 4, 0)));

static void cli_error_v(struct cli *cli, const char *path, const char *apptag, const char *fmt,
			va_list ap)
{
	char msg[1024];

	if (cli->mute)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	cli_progress_clear(cli);
	if (cli->json) {
		fflush(stdout);
		cli_error_json(msg, path, apptag);
		return;
	}
	fflush(stdout);
	fprintf(stderr, "%s: error: %s", CLI_NAME, msg);
	if (path)
		fprintf(stderr, " (path %s)", path);
	if (apptag)
		fprintf(stderr, " [%s]", apptag);
	fputc('\n', stderr);
}

void cli_error(struct cli *cli, const char *path, const char *apptag, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_error_v(cli, path, apptag, fmt, ap);
	va_end(ap);
}

int cli_usage(struct cli *cli, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_error_v(cli, NULL, NULL, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* libyang's paths read `Schema location "/a/b".`: the part in quotes is the path. */
static const char *cli_ly_path(const char *path, char *buf, size_t size)
{
	const char *q, *end;

	if (!path)
		return NULL;
	q = strchr(path, '"');
	end = q ? strchr(q + 1, '"') : NULL;
	if (!end)
		return path;
	snprintf(buf, size, "%.*s", (int)(end - q - 1), q + 1);
	return buf;
}

int cli_ly_error(struct cli *cli, const char *what)
{
	const struct ly_err_item *e = ly_err_last(cli->ctx);
	char path[CLI_XPATH_MAX];

	if (!e)
		cli_error(cli, NULL, NULL, "%s%slibyang failed", what ? what : "",
			  what ? ": " : "");
	else
		cli_error(cli, cli_ly_path(e->path, path, sizeof(path)), e->apptag, "%s%s%s",
			  what ? what : "", what ? ": " : "", e->msg);
	ly_err_clean(cli->ctx, NULL);
	return -EBADMSG;
}

/* ------------------------------------------------------------ start-up */

static void cli_help_options(FILE *f)
{
	fprintf(f,
		"usage: %s [-s|--socket PATH] [-j|--json] [-y|--yang-dir DIR] [-q|--quiet]\n"
		"       %*s [COMMAND ARGS...]\n"
		"Controls lcfibd. Without a command, starts a shell; 'help' lists the commands.\n"
		"  -s, --socket PATH   the daemon's control socket\n"
		"  -j, --json          print the daemon's JSON (RFC 7951) instead of tables\n"
		"  -y, --yang-dir DIR  where the lcfib YANG module is (default %s)\n"
		"  -q, --quiet         no progress bar, no load summary\n"
		"  -h, --help          this text\n"
		"  -V, --version       the version\n",
		CLI_NAME, (int)strlen(CLI_NAME), "", LCFIB_YANG_DIR);
}

/*
 * $LCFIB_SOCKET, else lcfibd's default (ctl_default_run_dir(), the rule
 * lcfibd follows): the system daemon's socket for root, the user's own
 * daemon's for anyone else. NULL when there is none: cli_connect() says why.
 */
static const char *cli_default_socket(char *buf, size_t size)
{
	const char *env = getenv("LCFIB_SOCKET");
	size_t n;

	if (env && *env)
		return env;
	if (ctl_default_run_dir(buf, size))
		return NULL;
	n = strlen(buf);
	snprintf(buf + n, size - n, "/%s", CTL_SOCK_NAME);
	return buf;
}

static const char *cli_default_yang_dir(void)
{
	const char *env = getenv("LCFIB_YANG_DIR");

	return env && *env ? env : LCFIB_YANG_DIR;
}

static int cli_load_schema(struct cli *cli, const char *dir)
{
	/* stored, not printed: each failure is reported once, our way */
	ly_log_options(LY_LOSTORE_LAST);
	if (ly_ctx_new(dir,
		       LY_CTX_NO_YANGLIBRARY | LY_CTX_SET_PRIV_PARSED |
			       LY_CTX_DISABLE_SEARCHDIR_CWD,
		       &cli->ctx)) {
		cli_error(cli, NULL, NULL,
			  "cannot use %s for YANG modules (give -y DIR or set LCFIB_YANG_DIR)",
			  dir);
		return -ENOENT;
	}
	cli->mod = ly_ctx_load_module(cli->ctx, "lcfib", NULL, NULL);
	if (!cli->mod || !cli_schema_root(cli)) {
		char what[PATH_MAX + 64];

		snprintf(what, sizeof(what), "cannot load the YANG module lcfib from %s", dir);
		return cli_ly_error(cli, what);
	}
	return 0;
}

struct cli_opts {
	const char *sock;
	const char *yang_dir;
};

/* Returns the index of the first command word, or -1 to exit with *@status. */
static int cli_parse_options(struct cli *cli, struct cli_opts *o, int argc, char **argv,
			     int *status)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "yang-dir", required_argument, NULL, 'y' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	/* '+': options end at the command, whose own words may start with '-' */
	while ((c = getopt_long(argc, argv, "+s:jy:qhV", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o->sock = optarg;
			break;
		case 'j':
			cli->json = true;
			break;
		case 'y':
			o->yang_dir = optarg;
			break;
		case 'q':
			cli->quiet = true;
			break;
		case 'h':
			cli_help_options(stdout);
			*status = CLI_EXIT_OK;
			return -1;
		case 'V':
			printf("%s %s\n", CLI_NAME, PACKAGE_VERSION);
			*status = CLI_EXIT_OK;
			return -1;
		default:
			cli_help_options(stderr);
			*status = CLI_EXIT_USAGE;
			return -1;
		}
	}
	return optind;
}

/* The argument of option @w when it is one of @name or @longname: "-y D", "-yD", "--yang-dir=D". */
static int cli_opt_arg(char **argv, int i, int n, const char *name, const char *longname,
		       const char **arg)
{
	size_t len = strlen(longname);

	if (!strcmp(argv[i], name) || !strcmp(argv[i], longname)) {
		*arg = i + 1 < n ? argv[i + 1] : NULL;
		return 2;
	}
	if (!strncmp(argv[i], name, 2) && argv[i][2] != '-' && argv[i][2]) {
		*arg = argv[i] + 2;
		return 1;
	}
	if (!strncmp(argv[i], longname, len) && argv[i][len] == '=') {
		*arg = argv[i] + len + 1;
		return 1;
	}
	return 0;
}

/*
 * `__complete` gets the words a shell saw after the program's name, options
 * included: takes -s and -y from them (the schema to complete from may be
 * another one) and returns how many words they were, or -1 when the word
 * being completed is an option's argument.
 */
static int cli_complete_options(struct cli_opts *o, int argc, char **argv)
{
	int i = 1, n;

	/* the last word is the one being completed: never an option here */
	while (i < argc - 1) {
		if (!strcmp(argv[i], "--"))
			return i;
		n = cli_opt_arg(argv, i, argc - 1, "-s", "--socket", &o->sock);
		if (!n)
			n = cli_opt_arg(argv, i, argc - 1, "-y", "--yang-dir", &o->yang_dir);
		if (!n && argv[i][0] == '-' && argv[i][1])
			n = 1; /* -j, -q, -jq, --json, --quiet */
		if (!n)
			break;
		i += n;
	}
	return i > argc - 1 ? -1 : i - 1;
}

int main(int argc, char **argv)
{
	struct cli cli = { .fd = -1, .next_id = 1 };
	struct cli_opts o = { NULL, NULL };
	char sock[PATH_MAX];
	int first, status = CLI_EXIT_OK;

	first = cli_parse_options(&cli, &o, argc, argv, &status);
	if (first < 0)
		return status;
	if (first < argc && !strcmp(argv[first], "__complete")) {
		int skip = cli_complete_options(&o, argc - first, argv + first);

		if (skip < 0)
			return CLI_EXIT_OK;
		first += skip;
		argv[first] = (char *)"__complete";
	}
	cli.sock_path = o.sock ? o.sock : cli_default_socket(sock, sizeof(sock));
	if (cli_load_schema(&cli, o.yang_dir ? o.yang_dir : cli_default_yang_dir())) {
		status = CLI_EXIT_ERROR;
		goto out_ctx;
	}
	if (first == argc)
		status = cli_shell(&cli);
	else if (!strcmp(argv[first], "__complete"))
		status = cli_exit_status(cli_cmd_complete(&cli, argc - first, argv + first));
	else
		status = cli_exit_status(cli_run(&cli, argc - first, argv + first));
	cli_disconnect(&cli);
out_ctx:
	ly_ctx_destroy(cli.ctx);
	if (fflush(stdout) && !status)
		status = CLI_EXIT_ERROR;
	return status;
}
