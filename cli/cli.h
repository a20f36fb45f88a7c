/* SPDX-License-Identifier: MIT */
/*
 * lcfibctl: the command line and interactive shell of lcfibd. Its
 * commands come from the YANG module at run time: config leaves are `set`
 * paths, RPCs are commands, their input leaves are keywords, and their
 * descriptions are the help text.
 *
 * Errors. Command functions return 0 or a negative errno and have already
 * told the user what went wrong (cli_error()). Three errnos pick the exit
 * status: -EINVAL is a usage error (2), -ENOTCONN means the daemon could
 * not be reached (3), CLI_ENOTRECORDED a load that applied but is not in
 * the config (4), CLI_ENOTFOUND a lookup that found no route (5);
 * anything else is 1 (CLI_EXIT_*). Code here must not
 * pass a library's -EINVAL up unless it means "the command line is wrong".
 */
#ifndef LCFIB_CLI_H
#define LCFIB_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <libyang/libyang.h>

#define CLI_NAME "lcfibctl"

#define CLI_EXIT_OK           0
#define CLI_EXIT_ERROR        1
#define CLI_EXIT_USAGE        2
#define CLI_EXIT_CONNECT      3
#define CLI_EXIT_NOT_RECORDED 4
#define CLI_EXIT_NOT_FOUND    5

/* A lookup's answer was "no route": not an error, but not a route either. */
#define CLI_ENOTFOUND (-EHOSTUNREACH) /* "no route to host"; a unix socket never returns it */

/* A load's routes applied, but the daemon could not add it to its config. */
#define CLI_ENOTRECORDED (-ENOLINK) /* an errno nothing else here returns */

#define CLI_XPATH_MAX 4096
#define CLI_VALUE_MAX 256

struct cli {
	struct ly_ctx *ctx;
	const struct lys_module *mod;
	const char *sock_path;
	int fd; /* -1 until the first request; the shell keeps it open */
	uint32_t next_id;
	bool json;     /* print the daemon's JSON instead of tables */
	bool quiet;    /* no progress, no summaries */
	bool shell;    /* in the shell: quit and exit are commands */
	bool progress; /* draw a load's progress (a terminal, not --json/-q) */
	bool progress_drawn;
	bool mute;  /* completing: a failed request prints nothing */
	char *part; /* the pieces of a reply so far (CTL_PART) */
	size_t part_len;
};

/* ---------------------------------------------------------- lcfibctl.c */

/* A command with a fixed name; RPCs are commands too, found in the schema. */
struct cli_cands;
struct cli_cmd {
	const char *name;
	const char *synopsis;
	const char *help;
	int (*run)(struct cli *cli, int argc, char **argv);
	void (*complete)(struct cli *cli, int argc, char **argv, struct cli_cands *c);
};

/* The fixed commands, ending with a NULL name. */
extern const struct cli_cmd cli_cmds[];

const struct cli_cmd *cli_cmd_find(const char *name);

/* The status a command's return value maps to (see the top of this file). */
int cli_exit_status(int ret);

/* Runs one command line: argv[0] is the command. Returns 0 or -errno. */
int cli_run(struct cli *cli, int argc, char **argv);

/* ---------------------------------------------------------- error output */

/*
 * Reports an error as "lcfibctl: error: MESSAGE (path PATH) [APP-TAG]" on
 * stderr, or with --json as {"errors":[...]} on stdout. @path and @apptag
 * may be NULL. Returns nothing; callers return their own errno.
 */
void cli_error(struct cli *cli, const char *path, const char *apptag, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* cli_error() for a usage error; returns -EINVAL so callers can `return` it. */
int cli_usage(struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Reports libyang's last error in @cli->ctx, after "@what: " when @what is
 * not NULL. Returns -EBADMSG.
 */
int cli_ly_error(struct cli *cli, const char *what);

/* ------------------------------------------------------------- errjson.c */

/*
 * The daemon's error payload, {"errors":[{"message","path","app-tag"}]}.
 * Calls @fn once per error with unescaped strings (NULL when absent).
 * Returns the number of errors, or -EBADMSG if @json is not that shape.
 */
typedef void (*cli_errjson_fn)(void *arg, const char *message, const char *path,
			       const char *apptag);
int cli_errjson_parse(const char *json, cli_errjson_fn fn, void *arg);

/* Writes @s as a JSON string, quotes included. */
void cli_json_string(FILE *f, const char *s);

/* ---------------------------------------------------------------- conn.c */

/* Called for each CTL_NOTIFY frame that arrives while waiting for a reply. */
typedef void (*cli_notify_fn)(struct cli *cli, const char *payload);

/* Connects if not connected. Returns 0 or -ENOTCONN (reported). */
int cli_connect(struct cli *cli);
void cli_disconnect(struct cli *cli);

/* Sends a request and returns its id in *@id. Returns 0 or -errno (reported). */
int cli_send(struct cli *cli, unsigned int type, unsigned int flags, const char *payload,
	     size_t len, uint32_t *id);
/* cli_send() passing the descriptor @pass_fd along (SCM_RIGHTS); -1: none. */
int cli_send_fd(struct cli *cli, unsigned int type, unsigned int flags, const char *payload,
		size_t len, int pass_fd, uint32_t *id);

/*
 * Waits for the answer to request @id. A reply's payload is returned in
 * *@reply (malloc'd, NUL-terminated; the caller frees it). An error reply
 * is reported and gives -EREMOTEIO. Notifications go to @notify (may be
 * NULL). Returns 0 or -errno (reported).
 */
int cli_wait(struct cli *cli, uint32_t id, cli_notify_fn notify, char **reply);

/*
 * Reads one frame for request @id: a notification goes to @notify and
 * *@done stays false; the answer sets *@done (and *@reply, as cli_wait()).
 */
int cli_recv_one(struct cli *cli, uint32_t id, cli_notify_fn notify, char **reply, bool *done);

/* cli_send() then cli_wait(). */
int cli_request(struct cli *cli, unsigned int type, unsigned int flags, const char *payload,
		cli_notify_fn notify, char **reply);

/* -------------------------------------------------------------- schema.c */

/* The container all config and state lives in (lcfib:lcfib). */
const struct lysc_node *cli_schema_root(const struct cli *cli);

/* The RPC called @name, or NULL. */
const struct lysc_node *cli_schema_rpc(const struct cli *cli, const char *name);

/* Which children a walk sees: config nodes only, or all (state, RPC input). */
enum cli_filter {
	CLI_F_CONFIG,
	CLI_F_ANY,
};

/* The child of @parent named @name that passes @filter, or NULL. */
const struct lysc_node *cli_schema_child(const struct lysc_node *parent, const char *name,
					 enum cli_filter filter);

/* Iterates children of @parent passing @filter (input children for an RPC). */
const struct lysc_node *cli_schema_next(const struct lysc_node *last,
					const struct lysc_node *parent, enum cli_filter filter);

/* The leaf's units, or NULL. */
const char *cli_schema_units(const struct lysc_node *node);

/* Whether @node is a leaf or leaf-list of type boolean. */
bool cli_schema_is_bool(const struct lysc_node *node);

/* Whether values of @node are numbers (integers or decimal64). */
bool cli_schema_is_number(const struct lysc_node *node);

/* Calls @fn for each value name a leaf accepts: enum names, true/false. */
void cli_schema_value_names(const struct lysc_node *node,
			    void (*fn)(void *arg, const char *name, const char *dsc), void *arg);

/* A one-line description of the leaf's type, for help. */
void cli_schema_type_text(const struct lysc_node *node, char *buf, size_t size);

/* The default value's text, or NULL. */
const char *cli_schema_default(const struct cli *cli, const struct lysc_node *node);

/*
 * Writes @dsc with its whitespace folded; with @first_sentence, only up to
 * the first ". ". Returns @buf.
 */
char *cli_schema_dsc(const char *dsc, bool first_sentence, char *buf, size_t size);

/*
 * Converts a value as typed to the value libyang gets: for an integer leaf
 * whose units are bytes, "16M" is 16777216 (K, M, G, T and Ki, Mi, Gi,
 * Ti are powers of 1024). Other values are copied as they are.
 */
void cli_value_convert(const struct lysc_node *node, const char *word, char *buf, size_t size);

/*
 * A walk down the schema along command words: node names, list keys after
 * the list's name, a value after a leaf. Used by set, delete, show and
 * their completion.
 */
struct cli_walk {
	const struct lysc_node *node; /* the last node named */
	enum cli_filter filter;
	unsigned int key;  /* list: keys given so far */
	const char *value; /* leaf or leaf-list: the value given */
	bool want_value;   /* leaves take a value word */
	char xpath[CLI_XPATH_MAX];
};

void cli_walk_init(struct cli_walk *w, const struct lysc_node *root, const char *xpath,
		   enum cli_filter filter, bool want_value);

/*
 * Takes one word. Returns 0, -EINVAL with a message in @msg, or -EBADMSG
 * for a key or leaf-list value libyang refuses (its message in the context).
 */
int cli_walk_step(struct cli_walk *w, const char *word, char *msg, size_t size);

/* Takes @argc words, reporting a failure as "@cmd: message". Returns 0 or -errno. */
int cli_walk_words(struct cli *cli, struct cli_walk *w, const char *cmd, int argc, char **argv);

/* The leaf whose value (a key, or the leaf's own) comes next, or NULL. */
const struct lysc_node *cli_walk_pending_value(const struct cli_walk *w);

/* Whether the walk stopped inside a list's keys. */
bool cli_walk_in_keys(const struct cli_walk *w);

/* ---------------------------------------------------------------- edit.c */

int cli_cmd_set(struct cli *cli, int argc, char **argv);
int cli_cmd_delete(struct cli *cli, int argc, char **argv);

/* ----------------------------------------------------------------- rpc.c */

/*
 * Builds an RPC's input tree from keyword arguments (argv[0] is the
 * RPC's name). Returns 0 or -errno (reported); on success the caller
 * frees *@out with lyd_free_all().
 */
int cli_rpc_build(struct cli *cli, const struct lysc_node *rpc, int argc, char **argv,
		  struct lyd_node **out);

/* Validates and sends @rpc, waits for the reply and prints it. */
int cli_rpc_call(struct cli *cli, struct lyd_node *rpc, cli_notify_fn notify);

/* Runs an RPC command: `NAME ARGS...`. */
int cli_cmd_rpc(struct cli *cli, int argc, char **argv);

/* The input leaf that may be given without its keyword, or NULL. */
const struct lysc_node *cli_rpc_positional(const struct lysc_node *rpc);

/* Validates @rpc and prints it as the request's JSON (*@json, freed by the caller). */
int cli_rpc_prepare(struct cli *cli, struct lyd_node *rpc, char **json);

/* Parses the reply to @rpc and prints it (JSON, or the RPC's human form). */
int cli_rpc_output(struct cli *cli, const struct lyd_node *rpc, const char *reply);

/*
 * Parses @payload, the reply to the RPC @name: *@tree to free, *@op its
 * output (both NULL for an empty reply). Returns 0 or -errno (reported).
 */
int cli_rpc_parse_reply(struct cli *cli, const char *name, const char *payload,
			struct lyd_node **tree, struct lyd_node **op);

/* ------------------------------------------------------------- lookups.c */

/* `lookup -`, `lookup -f FILE`, `lookups`: streams the addresses, writes the answers. */
int cli_lookups_stream(struct cli *cli, int argc, char **argv);

/* The lookup @lookup (validated input) in text: the daemon's answer line, exit 5 without a route. */
int cli_lookup_one(struct cli *cli, const struct lyd_node *lookup);

/* ---------------------------------------------------------------- load.c */

/* The load RPC: resolves the path, streams stdin for "-", shows progress. */
int cli_load_call(struct cli *cli, struct lyd_node *rpc);

/* Clears the progress line, if one is drawn. */
void cli_progress_clear(struct cli *cli);

/* ---------------------------------------------------------------- show.c */

int cli_cmd_show(struct cli *cli, int argc, char **argv);

/* Words `show` takes first, with their help, for completion and help. */
void cli_show_words(struct cli *cli, void (*fn)(void *arg, const char *word, const char *help),
		    void *arg);

/* --------------------------------------------------------------- print.c */

/* Prints data nodes (@first and its siblings) as aligned text. */
void cli_print_tree(struct cli *cli, FILE *f, const struct lyd_node *first, int indent);

/* The same for the siblings from @first up to @stop (not included; NULL: the last). */
void cli_print_span(struct cli *cli, FILE *f, const struct lyd_node *first,
		    const struct lyd_node *stop, int indent);

/* Prints a tree as pretty JSON (--json), with its siblings. */
int cli_print_json(struct cli *cli, const struct lyd_node *tree);

/* Formats a term's value for people: sizes, durations and rates get units. */
char *cli_format_value(const struct lyd_node *node, char *buf, size_t size);

/* Bytes as "512 KiB"; microseconds as "12.5 ms". */
char *cli_format_bytes(uint64_t v, char *buf, size_t size);
char *cli_format_usec(uint64_t v, char *buf, size_t size);
/* Whole seconds as "45s", "3m 05s", "2h 03m 05s", "4d 02h 03m 05s". */
char *cli_format_secs(uint64_t s, char *buf, size_t size);

/* iproute2's name of protocol number @value (the number itself if none). */
const char *cli_proto_name(const char *value);

/* --------------------------------------------------------------- route.c */

/* `route add|del|replace|append|prepend|change ARGS...` in iproute2 syntax. */
int cli_cmd_route(struct cli *cli, int argc, char **argv);

/* The words after `route` that iproute2 accepts, for completion. */
extern const char *const cli_route_ops[];
/* Whether @w may come before the prefix: a route type (lib/names.h) or 'default'. */
bool cli_route_is_type(const char *w);
extern const char *const cli_route_attrs[]; /* after it */

/* ------------------------------------------------------------ complete.c */

/* A completion request: candidates are added if they start with @partial. */
struct cli_cands {
	const char *partial;
	void (*add)(struct cli_cands *c, const char *word, const char *help);
	void *arg;
	bool file; /* a file name fits here too */
};

/* Adds @word if it starts with the partial word. */
void cli_cand(struct cli_cands *c, const char *word, const char *help);

/* Completes the word after @argv (the words so far, command first). */
void cli_complete(struct cli *cli, int argc, char **argv, struct cli_cands *c);

/* `lcfibctl __complete WORDS...`: prints candidates, one per line. */
int cli_cmd_complete(struct cli *cli, int argc, char **argv);

/* Completion of each fixed command's arguments (argv[0] is the command). */
void cli_complete_set(struct cli *cli, int argc, char **argv, struct cli_cands *c);
void cli_complete_delete(struct cli *cli, int argc, char **argv, struct cli_cands *c);
void cli_complete_show(struct cli *cli, int argc, char **argv, struct cli_cands *c);
void cli_complete_route(struct cli *cli, int argc, char **argv, struct cli_cands *c);
void cli_complete_help(struct cli *cli, int argc, char **argv, struct cli_cands *c);
void cli_complete_rpc(struct cli *cli, int argc, char **argv, struct cli_cands *c);

/* ---------------------------------------------------------------- help.c */

int cli_cmd_help(struct cli *cli, int argc, char **argv);

/* Calls @fn with each command's name and one line of help. */
void cli_commands(struct cli *cli, void (*fn)(void *arg, const char *word, const char *help),
		  void *arg);

/* --------------------------------------------------------------- shell.c */

/* The interactive shell (or a script on stdin). Returns the exit status. */
int cli_shell(struct cli *cli);

/*
 * Splits @line into words as a shell does: blanks separate, '...' and
 * "..." quote, backslash escapes. Returns the count (words point into
 * @buf), or -EINVAL for an unterminated quote.
 */
int cli_split(const char *line, char *buf, size_t size, char **words, int max);

#endif
