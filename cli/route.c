/* SPDX-License-Identifier: MIT */
/*
 * `route add|del|... ROUTE`: iproute2's syntax, parsed by the route-file
 * parser the daemon uses (so a line of a route file and a command read
 * the same), then sent as a route-add or route-delete RPC.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/addr.h"
#include "lib/ifname.h"
#include "lib/names.h"
#include "lib/routefile.h"

const char *const cli_route_ops[] = {
	"add", "del", "delete", "replace", "append", "prepend", "show", "list", "get", NULL,
};

bool cli_route_is_type(const char *w)
{
	uint32_t type;

	return !strcmp(w, "default") || names_lookup(&names_rtype, w, strlen(w), &type);
}

/* What may come after it. */
const char *const cli_route_attrs[] = {
	"via", "dev", "metric", "table", "proto", "scope", "nexthop", "weight", NULL,
};

/* The RPC's operation for the parser's FIB_F_* flags, or NULL for `change`, which it has not. */
static const char *cli_route_operation(unsigned int flags)
{
	const char *op = names_name(&names_route_op, flags);

	return op && strcmp(op, "change") ? op : NULL;
}

/* The number of protocol @name into @buf (@name itself if it is no name: the RPC refuses it). */
static void cli_proto_number(const char *name, char *buf, size_t size)
{
	uint32_t id;

	if (names_lookup(&names_proto, name, strlen(name), &id))
		snprintf(buf, size, "%u", id);
	else
		snprintf(buf, size, "%s", name);
}

static int cli_route_term(struct cli *cli, struct lyd_node *parent, const char *name,
			  const char *value)
{
	if (lyd_new_term(parent, NULL, name, value, 0, NULL))
		return cli_ly_error(cli, NULL);
	return 0;
}

static int cli_route_uint(struct cli *cli, struct lyd_node *parent, const char *name,
			  unsigned long v)
{
	char buf[24];

	if (!v)
		return 0; /* zero: the RPC's default on an add, any route on a delete */
	snprintf(buf, sizeof(buf), "%lu", v);
	return cli_route_term(cli, parent, name, buf);
}

static int cli_route_path(struct cli *cli, struct lyd_node *rpc, const struct nh_path *p,
			  bool multipath)
{
	struct lyd_node *nh;
	char buf[INET6_ADDRSTRLEN > IF_NAMESIZE ? INET6_ADDRSTRLEN : IF_NAMESIZE];
	int ret = 0;

	if (p->flags & NH_F_ONLINK)
		return cli_usage(cli, "route: 'onlink' is not something the daemon takes");
	if (lyd_new_list(rpc, NULL, "nexthop", 0, &nh))
		return cli_ly_error(cli, NULL);
	if (p->gw_family && inet_ntop(p->gw_family, &p->gw, buf, sizeof(buf)))
		ret = cli_route_term(cli, nh, "gateway", buf);
	if (!ret && p->ifindex)
		ret = cli_route_term(cli, nh, "interface", ifname_name(p->ifindex, buf));
	if (!ret && multipath)
		ret = cli_route_uint(cli, nh, "weight", p->weight);
	return ret;
}

static int cli_route_fields(struct cli *cli, struct lyd_node *rpc, const struct fib_rcfg *rc)
{
	char prefix[ADDR_STRLEN];
	unsigned int i;
	int ret;

	if (rc->nh_id)
		return cli_usage(cli, "route: 'nhid' is not something the daemon takes");
	ret = cli_route_term(cli, rpc, "prefix",
			     addr_prefix_format(&rc->dst, prefix, sizeof(prefix)));
	if (!ret)
		ret = cli_route_uint(cli, rpc, "table", rc->table);
	if (!ret && names_name(&names_rtype, rc->type))
		ret = cli_route_term(cli, rpc, "type", names_name(&names_rtype, rc->type));
	if (!ret)
		ret = cli_route_uint(cli, rpc, "protocol", rc->proto);
	if (!ret)
		ret = cli_route_uint(cli, rpc, "scope", rc->scope);
	if (!ret)
		ret = cli_route_uint(cli, rpc, "metric", rc->metric);
	for (i = 0; !ret && i < rc->n_paths; i++)
		ret = cli_route_path(cli, rpc, &rc->paths[i], rc->n_paths > 1);
	return ret;
}

static int cli_route_build(struct cli *cli, const struct routefile_route *r, struct lyd_node **out)
{
	const char *name = r->op == ROUTEFILE_DEL ? "route-delete" : "route-add";
	const char *op = cli_route_operation(r->rc.flags);
	struct lyd_node *rpc;
	int ret;

	if (r->op == ROUTEFILE_ADD && !op)
		return cli_usage(cli, "route change: the daemon has no change-only edit; use "
				      "'route replace'");
	if (lyd_new_inner(NULL, cli->mod, name, 0, &rpc))
		return cli_ly_error(cli, NULL);
	ret = cli_route_fields(cli, rpc, &r->rc);
	if (!ret && r->op == ROUTEFILE_ADD)
		ret = cli_route_term(cli, rpc, "operation", op);
	if (ret) {
		lyd_free_all(rpc);
		return ret;
	}
	*out = rpc;
	return 0;
}

/* Joins the words into one batch line, "route add ...". */
static int cli_route_line(struct cli *cli, int argc, char **argv, char *line, size_t size)
{
	size_t len = (size_t)snprintf(line, size, "route");
	int i;

	for (i = 1; i < argc && len < size; i++)
		len += (size_t)snprintf(line + len, size - len, " %s", argv[i]);
	if (len >= size)
		return cli_usage(cli, "route: the route is too long");
	return 0;
}

/*
 * `route show|list [PREFIX] [table T] [proto P] [dev D] [type T] ...` is
 * `routes` (ip-route(8)'s words: proto NAME and dev for the RPC's protocol
 * and interface, root for the prefix); `route get ADDRESS [table T]` is
 * `lookup` (fibmatch and to are what a lookup does anyway).
 */
static int cli_route_alias(struct cli *cli, int argc, char **argv)
{
	bool get = !strcmp(argv[1], "get");
	char *words[128], proto[16];
	int i, n = 0;

	if (argc + 1 > (int)(sizeof(words) / sizeof(words[0])))
		return cli_usage(cli, "route %s: too many words", argv[1]);
	words[n++] = (char *)(get ? "lookup" : "routes");
	for (i = 2; i < argc; i++) {
		const char *w = argv[i];

		if (get) {
			if (strcmp(w, "fibmatch") && strcmp(w, "to"))
				words[n++] = argv[i];
		} else if (!strcmp(w, "proto") && i + 1 < argc) {
			cli_proto_number(argv[++i], proto, sizeof(proto));
			words[n++] = (char *)"protocol";
			words[n++] = proto;
		} else if (!strcmp(w, "dev")) {
			words[n++] = (char *)"interface";
		} else if ((!strcmp(w, "root") || !strcmp(w, "match")) && i + 1 < argc) {
			words[n++] = (char *)"prefix";
			words[n++] = argv[++i];
		} else if (strchr(w, '/') || strchr(w, '.') || strchr(w, ':')) {
			words[n++] = (char *)"prefix"; /* a bare prefix */
			words[n++] = argv[i];
		} else {
			words[n++] = argv[i];
		}
	}
	words[n] = NULL;
	return cli_cmd_rpc(cli, n, words);
}

int cli_cmd_route(struct cli *cli, int argc, char **argv)
{
	static struct routefile_route r; /* 64 paths: too big for a shell's stack frame */
	struct errbuf err = { "" };
	struct lyd_node *rpc = NULL;
	char line[4096];
	int ret;

	if (argc < 2)
		return cli_usage(cli,
				 "route add|del|replace|append|prepend ROUTE (try 'help route')");
	if (!strcmp(argv[1], "show") || !strcmp(argv[1], "list") || !strcmp(argv[1], "get"))
		return cli_route_alias(cli, argc, argv);
	ret = cli_route_line(cli, argc, argv, line, sizeof(line));
	if (ret)
		return ret;
	ret = routefile_parse_route(line, AF_UNSPEC, &r, NULL, &err);
	if (ret == -ENODATA)
		return cli_usage(cli, "route %s: which route?", argv[1]);
	if (ret == -EINVAL)
		return cli_usage(cli, "%s: %s", line, err.msg);
	if (ret) {
		cli_error(cli, NULL, NULL, "route: %s", err.msg[0] ? err.msg : strerror(-ret));
		return -EIO;
	}
	ret = cli_route_build(cli, &r, &rpc);
	if (ret)
		return ret;
	ret = cli_rpc_call(cli, rpc, NULL);
	lyd_free_all(rpc);
	return ret;
}
