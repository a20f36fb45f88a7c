/* SPDX-License-Identifier: MIT */
/*
 * The configuration datastore: the running config as a libyang tree, a
 * handler per config leaf (validate/prepare may fail, apply may not), and
 * its file, written atomically after every committed edit.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <grp.h>
#include <libgen.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <urcu/uatomic.h>

#include "daemon/cfg.h"
#include "daemon/dcache.h"
#include "daemon/err.h"
#include "daemon/feed.h"
#include "daemon/feed_fpm.h"
#include "daemon/feed_kernel.h"
#include "daemon/http.h"
#include "daemon/lcfibd.h"
#include "daemon/log.h"
#include "daemon/peer.h"
#include "daemon/feed_file.h"
#include "daemon/writer.h"
#include "lib/ctl.h"
#include "lib/names.h"
#include "lib/routefile.h"

/*
 * One config leaf's handler. @tree is the candidate config (with
 * defaults). prepare() may refuse and may set things aside (a bound
 * socket); apply() cannot fail; abort() drops what prepare() set aside
 * when the commit fails after it.
 */
struct cfg_handler {
	const char *path; /* schema path, as lysc_path(LYSC_PATH_DATA) prints it */
	int (*prepare)(struct lcfibd *d, const struct lyd_node *tree, struct lcfibd_err *e);
	void (*apply)(struct lcfibd *d, const struct lyd_node *tree, bool at_start);
	void (*abort)(struct lcfibd *d);
};

#define CFG_TOP           "/lcfib:lcfib"
#define CFG_MAX_FILE_SIZE (1ull << 30) /* max-route-file-size's default */

/* The value of the leaf at @path (relative to the top container), or NULL. */
static const char *cfg_value(const struct lyd_node *tree, const char *path)
{
	struct lyd_node *n = NULL;
	char xp[256];

	snprintf(xp, sizeof(xp), CFG_TOP "/%s", path);
	if (lyd_find_path(tree, xp, 0, &n) != LY_SUCCESS || !n)
		return NULL;
	return lyd_get_value(n);
}

static void cfg_apply_sync_mem(struct lcfibd *d, const struct lyd_node *tree, bool at_start)
{
	const char *v = cfg_value(tree, "sync-mem");
	uint64_t bytes = v ? strtoull(v, NULL, 10) : 524288;

	/* The schema's range is the library's: this cannot fail. */
	if (fib_set_sync_mem(d->fib, bytes))
		log_err("sync-mem %s refused by the library: schema and library disagree", v);
	else if (!at_start)
		log_notice("sync-mem set to %llu bytes", (unsigned long long)bytes);
}

static void cfg_apply_log_level(struct lcfibd *d, const struct lyd_node *tree, bool at_start)
{
	const char *v = cfg_value(tree, "log-level");
	int level = v ? log_level_parse(v) : LOG_NOTICE;

	(void)at_start;
	if (d->log_level_opt < 0 && level >= 0)
		log_set_level(level);
}

static int cfg_prepare_admin_group(struct lcfibd *d, const struct lyd_node *tree,
				   struct lcfibd_err *e)
{
	const char *v = cfg_value(tree, "admin-group");

	(void)d;
	if (v && !getgrnam(v)) {
		lcfibd_err_set(e, CTL_TAG_INVALID, CFG_TOP "/admin-group",
			       "admin-group: no group '%s' on this host", v);
		return -1;
	}
	return 0;
}

static void cfg_apply_admin_group(struct lcfibd *d, const struct lyd_node *tree, bool at_start)
{
	const char *v = cfg_value(tree, "admin-group");
	struct group *g = v ? getgrnam(v) : NULL;

	(void)at_start;
	d->has_admin_group = g != NULL;
	d->admin_gid = g ? g->gr_gid : 0;
}

static void cfg_apply_max_file_size(struct lcfibd *d, const struct lyd_node *tree, bool at_start)
{
	const char *v = cfg_value(tree, "max-route-file-size");

	d->max_file_size = v ? strtoull(v, NULL, 10) : CFG_MAX_FILE_SIZE;
	if (!at_start)
		log_notice("max-route-file-size set to %llu bytes",
			   (unsigned long long)d->max_file_size);
}

/* A table-id: a number, or the name of a well-known table (the schema's enum). */
static uint32_t cfg_table_id(const char *v)
{
	uint32_t id = 0;

	names_parse_str(&names_table, v, &id);
	return id;
}

/* The kernel feed's settings in @tree (validated: the values are in range). */
static int cfg_kernel(const struct lyd_node *tree, struct feed_kernel_cfg *kc, struct lcfibd_err *e)
{
	const char *v = cfg_value(tree, "feeds/kernel/enabled");
	struct ly_set *set = NULL;

	memset(kc, 0, sizeof(*kc));
	kc->enabled = v && strcmp(v, "true") == 0;
	v = cfg_value(tree, "feeds/kernel/receive-buffer");
	kc->receive_buffer = v ? (uint32_t)strtoul(v, NULL, 10) : 33554432;
	if (lyd_find_xpath(tree, CFG_TOP "/feeds/kernel/table", &set) != LY_SUCCESS) {
		lcfibd_err_set(e, CTL_TAG_FAILED, CFG_TOP "/feeds/kernel/table",
			       "cannot read the kernel feed's tables");
		return -1;
	}
	if (set->count > sizeof(kc->tables) / sizeof(kc->tables[0])) {
		lcfibd_err_set(e, CTL_TAG_INVALID, CFG_TOP "/feeds/kernel/table",
			       "the kernel feed mirrors at most %zu tables (or all: none given)",
			       sizeof(kc->tables) / sizeof(kc->tables[0]));
		ly_set_free(set, NULL);
		return -1;
	}
	for (uint32_t i = 0; i < set->count; i++)
		kc->tables[kc->n_tables++] = cfg_table_id(lyd_get_value(set->dnodes[i]));
	ly_set_free(set, NULL);
	return 0;
}

static int cfg_prepare_kernel(struct lcfibd *d, const struct lyd_node *tree, struct lcfibd_err *e)
{
	struct feed_kernel_cfg kc;

	if (cfg_kernel(tree, &kc, e))
		return -1;
	/* lcfibd -t checks the config; it opens no socket (a running daemon has them). */
	if (d->check_only)
		return 0;
	return feed_kernel_prepare(d, &kc, e) ? -1 : 0;
}

static void cfg_apply_kernel(struct lcfibd *d, const struct lyd_node *tree, bool at_start)
{
	(void)tree;
	(void)at_start;
	feed_kernel_apply(d);
}

/*
 * feeds/fpm/allowed-user: uids, and names looked up now. A name set by
 * hand must exist (a typo would lock zebra out); a default one may not (no
 * frr user yet): the feed looks it up again when someone connects.
 */
static int cfg_fpm_users(const struct lyd_node *tree, struct feed_fpm_cfg *c, struct lcfibd_err *e)
{
	struct ly_set *set = NULL;
	int ret = 0;

	if (lyd_find_xpath(tree, CFG_TOP "/feeds/fpm/allowed-user", &set) != LY_SUCCESS) {
		lcfibd_err_set(e, CTL_TAG_FAILED, CFG_TOP "/feeds/fpm/allowed-user",
			       "cannot read the FPM feed's allowed users");
		return -1;
	}
	if (set->count > FEED_FPM_MAX_USERS) {
		lcfibd_err_set(e, CTL_TAG_INVALID, CFG_TOP "/feeds/fpm/allowed-user",
			       "allowed-user: at most %d users", FEED_FPM_MAX_USERS);
		ly_set_free(set, NULL);
		return -1;
	}
	for (uint32_t i = 0; i < set->count && !ret; i++) {
		const char *v = lyd_get_value(set->dnodes[i]);
		struct feed_fpm_user *u = &c->users[c->n_users++];
		struct passwd pw, *found = NULL;
		char buf[1024];

		if (!v)
			continue;
		memcpy(u->name, v, strnlen(v, sizeof(u->name) - 1));
		if (v[0] >= '0' && v[0] <= '9') {
			unsigned long long uid = strtoull(v, NULL, 10);

			u->known = uid < (uid_t)-1;
			u->uid = (uid_t)uid;
			if (!u->known) {
				lcfibd_err_set(e, CTL_TAG_INVALID,
					       CFG_TOP "/feeds/fpm/allowed-user",
					       "allowed-user: %s is not a uid (0..%u)", v,
					       (unsigned int)(uid_t)-2);
				ret = -1;
			}
			continue;
		}
		if (getpwnam_r(v, &pw, buf, sizeof(buf), &found) == 0 && found) {
			u->known = true;
			u->uid = found->pw_uid;
		} else if (!(set->dnodes[i]->flags & LYD_DEFAULT)) {
			lcfibd_err_set(e, CTL_TAG_INVALID, CFG_TOP "/feeds/fpm/allowed-user",
				       "allowed-user: no user '%s' on this host", v);
			ret = -1;
		}
	}
	ly_set_free(set, NULL);
	return ret;
}

/* feeds/fpm/allowed-remote: "ADDRESS/LENGTH" each (the schema checked the form). */
static int cfg_fpm_remote(const struct lyd_node *tree, struct feed_fpm_cfg *c, struct lcfibd_err *e)
{
	struct ly_set *set = NULL;

	if (lyd_find_xpath(tree, CFG_TOP "/feeds/fpm/allowed-remote", &set) != LY_SUCCESS) {
		lcfibd_err_set(e, CTL_TAG_FAILED, CFG_TOP "/feeds/fpm/allowed-remote",
			       "cannot read the FPM feed's allowed remote peers");
		return -1;
	}
	if (set->count > FEED_FPM_MAX_REMOTE) {
		lcfibd_err_set(e, CTL_TAG_INVALID, CFG_TOP "/feeds/fpm/allowed-remote",
			       "allowed-remote: at most %d prefixes", FEED_FPM_MAX_REMOTE);
		ly_set_free(set, NULL);
		return -1;
	}
	for (uint32_t i = 0; i < set->count; i++) {
		struct feed_fpm_prefix *pf = &c->remote[c->n_remote++];
		char addr[64], *slash;

		snprintf(addr, sizeof(addr), "%s", lyd_get_value(set->dnodes[i]));
		slash = strchr(addr, '/');
		if (slash)
			*slash = '\0';
		pf->family = strchr(addr, ':') ? AF_INET6 : AF_INET;
		pf->len = (uint8_t)(slash ? strtoul(slash + 1, NULL, 10) : 0);
		if (inet_pton(pf->family, addr, pf->addr) != 1) {
			lcfibd_err_set(e, CTL_TAG_INVALID, CFG_TOP "/feeds/fpm/allowed-remote",
				       "allowed-remote: %s is not a prefix",
				       lyd_get_value(set->dnodes[i]));
			ly_set_free(set, NULL);
			return -1;
		}
	}
	ly_set_free(set, NULL);
	return 0;
}

/* feeds/fpm from the candidate @tree (with defaults). */
static int cfg_fpm_read(const struct lyd_node *tree, struct feed_fpm_cfg *c, struct lcfibd_err *e)
{
	const char *v;

	memset(c, 0, sizeof(*c));
	v = cfg_value(tree, "feeds/fpm/enabled");
	c->enabled = v && strcmp(v, "true") == 0;
	v = cfg_value(tree, "feeds/fpm/address");
	snprintf(c->address, sizeof(c->address), "%s", v ? v : "127.0.0.1");
	v = cfg_value(tree, "feeds/fpm/port");
	c->port = (uint16_t)(v ? strtoul(v, NULL, 10) : 2620);
	v = cfg_value(tree, "feeds/fpm/replay-settle");
	c->replay_settle_ms = (uint32_t)(v ? strtoul(v, NULL, 10) : 3000);
	v = cfg_value(tree, "feeds/fpm/hold-time");
	c->hold_time_s = (uint32_t)(v ? strtoul(v, NULL, 10) : 30);
	return cfg_fpm_users(tree, c, e) || cfg_fpm_remote(tree, c, e) ? -1 : 0;
}

/* Every feeds/fpm leaf: the feed binds its listener here, so a port in use refuses the edit. */
static int cfg_prepare_fpm(struct lcfibd *d, const struct lyd_node *tree, struct lcfibd_err *e)
{
	struct feed_fpm_cfg c;

	if (cfg_fpm_read(tree, &c, e))
		return -1;
	/* lcfibd -t: a port a running daemon holds must not fail the check. */
	if (d->check_only)
		return 0;
	/* No running config yet: cfg_init() at start, where a taken port must not stop lcfibd. */
	c.at_start = !d->running;
	return feed_fpm_prepare(d, &c, e) ? -1 : 0;
}

static void cfg_apply_fpm(struct lcfibd *d, const struct lyd_node *tree, bool at_start)
{
	(void)tree;
	(void)at_start;
	feed_fpm_apply(d);
}

/* metrics/{enabled,address,port}: the new listener opens in prepare, so a taken port fails the
 * edit. */
static int cfg_prepare_metrics(struct lcfibd *d, const struct lyd_node *tree, struct lcfibd_err *e)
{
	const char *on = cfg_value(tree, "metrics/enabled"),
		   *addr = cfg_value(tree, "metrics/address");
	const char *port = cfg_value(tree, "metrics/port");

	return http_ep_prepare(d->metrics, on && strcmp(on, "true") == 0, addr ? addr : "127.0.0.1",
			       (uint16_t)(port ? strtoul(port, NULL, 10) : 9717), !d->check_only,
			       e);
}

static void cfg_apply_metrics(struct lcfibd *d, const struct lyd_node *tree, bool at_start)
{
	(void)tree;
	(void)at_start;
	http_ep_apply(d->metrics);
}

static void cfg_abort_metrics(struct lcfibd *d)
{
	http_ep_abort(d->metrics);
}

/* Whether @tree's route-files list has an entry for @path. */
static bool cfg_has_route_file(const struct lyd_node *tree, const char *path)
{
	struct ly_set *set = NULL;
	bool found = false;

	if (lyd_find_xpath(tree, CFG_TOP "/route-files/route-file/path", &set) != LY_SUCCESS)
		return false;
	for (uint32_t i = 0; i < set->count && !found; i++)
		found = strcmp(lyd_get_value(set->dnodes[i]), path) == 0;
	ly_set_free(set, NULL);
	return found;
}

/* The value of @name under @n, or NULL. */
static const char *cfg_child_value(const struct lyd_node *n, const char *name)
{
	struct lyd_node *c = NULL;

	if (lyd_find_path(n, name, 0, &c) != LY_SUCCESS || !c)
		return NULL;
	return lyd_get_value(c);
}

/*
 * The loads of the route files an edit adds (d->pending): prepared (read
 * and parsed) by cfg_prepare_route_files(), applied in the commit's job
 * (cfg_commit_run()), dropped by the abort of a commit that failed before.
 */
static void cfg_abort_route_files(struct lcfibd *d)
{
	for (unsigned int i = 0; i < d->pending.n_rf_jobs; i++)
		feed_file_job_free(d->pending.rf_jobs[i]);
	free(d->pending.rf_jobs);
	d->pending.rf_jobs = NULL;
	d->pending.n_rf_jobs = 0;
}

/*
 * Opens and parses the route file of entry @rf, as the editing client
 * when there is one, and keeps its load for the apply. 0, or -1 with @e.
 */
static int cfg_prepare_route_file(struct lcfibd *d, const struct lyd_node *rf, struct lcfibd_err *e)
{
	const char *path = cfg_child_value(rf, "path"),
		   *skip = cfg_child_value(rf, "skip-bad-lines");
	struct feed_file_job *j, **v;
	struct errbuf err;
	char xp[4200];
	int fd;

	fd = d->editor ? peer_open(d->editor, path, d->max_file_size, &err)
		       : routefile_open(path, d->max_file_size, &err);
	if (fd < 0) {
		if (d->editor)
			log_notice("config edit by pid %d uid %u refused: %s", (int)d->editor->pid,
				   (unsigned int)d->editor->uid, err.msg);
		lcfibd_err_set(e,
			       fd == -EACCES || fd == -EPERM ? CTL_TAG_DENIED : CTL_TAG_ROUTE_FILE,
			       lyd_path(rf, LYD_PATH_STD, xp, sizeof(xp)), "%s", err.msg);
		return -1;
	}
	j = feed_file_job_new(path, cfg_child_value(rf, "format"),
			      skip && strcmp(skip, "true") == 0);
	v = j ? realloc(d->pending.rf_jobs, (d->pending.n_rf_jobs + 1) * sizeof(*v)) : NULL;
	if (!v) {
		if (j)
			feed_file_job_free(j);
		close(fd);
		lcfibd_err_set(e, CTL_TAG_RESOURCE, NULL, "%s: out of memory", path);
		return -1;
	}
	d->pending.rf_jobs = v;
	d->pending.rf_jobs[d->pending.n_rf_jobs++] = j;
	j->fd = fd; /* the job's now */
	if (feed_file_parse(d, j)) {
		lcfibd_err_set(e, CTL_TAG_ROUTE_FILE, lyd_path(rf, LYD_PATH_STD, xp, sizeof(xp)),
			       "%s", j->err.msg);
		return -1;
	}
	return 0;
}

/*
 * A route file added by an edit (or a reload) is read and parsed here,
 * before the commit: what would make its load fail for want of the file
 * or for a bad line (unless skip-bad-lines) fails the edit, with the
 * reason, instead of only in the log, and the config stays as it was.
 * The writer then applies the parsed file in the commit's job: a refusal
 * there (a route a feed holds) fails the edit too, as a load's, also in
 * the log and in state (ingest/last-load). The file must also be one the editing client may
 * read: the daemon reads it with its own rights (root) at every start,
 * so here it is opened as the client (peer_open(); root's and our own
 * user's rights are the daemon's). At start a missing or bad file does
 * not stop lcfibd: its load fails and says so; on SIGHUP the config is
 * root's own file, opened with the daemon's rights.
 */
static int cfg_prepare_route_files(struct lcfibd *d, const struct lyd_node *tree,
				   struct lcfibd_err *e)
{
	struct ly_set *set = NULL;
	int ret = 0;

	cfg_abort_route_files(d); /* none left, but be sure */
	if (!d->running)
		return 0;
	if (lyd_find_xpath(tree, CFG_TOP "/route-files/route-file", &set) != LY_SUCCESS) {
		lcfibd_err_set(e, CTL_TAG_FAILED, CFG_TOP "/route-files",
			       "cannot read the route files");
		return -1;
	}
	for (uint32_t i = 0; i < set->count && !ret; i++) {
		const char *path = cfg_child_value(set->dnodes[i], "path");

		/* There before this edit, or loaded by the load RPC that records it. */
		if (!path || cfg_has_route_file(d->running, path) || feed_file_loaded(d, path))
			continue;
		ret = cfg_prepare_route_file(d, set->dnodes[i], e);
	}
	ly_set_free(set, NULL);
	if (ret)
		cfg_abort_route_files(d);
	return ret;
}

/* Loads the route files of the running config; @only_new: those not loaded yet. */
static void cfg_load_files(struct lcfibd *d, bool only_new)
{
	struct ly_set *set = NULL;

	if (lyd_find_xpath(d->running, CFG_TOP "/route-files/route-file", &set) != LY_SUCCESS)
		return;
	for (uint32_t i = 0; i < set->count; i++) {
		const struct lyd_node *rf = set->dnodes[i];
		const char *path = cfg_child_value(rf, "path"),
			   *skip = cfg_child_value(rf, "skip-bad-lines");

		if (only_new && feed_file_loaded(d, path))
			continue;
		feed_file_load_configured(d, path, cfg_child_value(rf, "format"),
					  skip && strcmp(skip, "true") == 0);
	}
	ly_set_free(set, NULL);
}

void cfg_load_route_files(struct lcfibd *d)
{
	cfg_load_files(d, false);
}

/*
 * The route files an edit adds were applied in its commit's job, before
 * this; any other entry not loaded yet is loaded now. At start main.c
 * loads them all.
 */
static void cfg_apply_route_files(struct lcfibd *d, const struct lyd_node *tree, bool at_start)
{
	(void)tree;
	if (!at_start)
		cfg_load_files(d, true);
}

/* ------------------------------------------------------- static routes */

static void cfg_static_free(struct lcfibd *d);

/*
 * A static route's line ("10.2.0.0/16 via 192.0.2.1") parsed as the batch
 * line "route add LINE". Returns 0 or -EINVAL with @err set.
 */
static int cfg_static_parse(const char *line, struct routefile_route *rt, struct errbuf *err)
{
	char buf[1100];
	int ret;

	snprintf(buf, sizeof(buf), "route add %s", line);
	ret = routefile_parse_route(buf, AF_UNSPEC, rt, NULL, err);
	if (ret == -ENODATA) {
		err_set(err, "no route");
		return -EINVAL;
	}
	return ret;
}

/* One static route's add or delete, for the writer. */
struct cfg_static_op {
	bool del;
	bool done;          /* applied: to undo if a later op fails */
	unsigned int flags; /* the add's, as parsed */
	struct routefile_route rt;
	char *line;
};

/*
 * The static routes a commit changes, in one job of the writer: an
 * edit's (@edit) runs inside the commit's job (struct cfg_commit), fails
 * when an add is refused, and then nothing stays applied; at start, and
 * for an undo, it runs alone and a refusal is only logged.
 */
struct cfg_static_job {
	struct writer_job job; /* first */
	bool edit;             /* an edit's: undone on refusal */
	int ret;
	struct errbuf err;
	unsigned int n;
	struct cfg_static_op ops[];
};

/* Writer thread: applies @op; 0 or -errno with @err. */
static int cfg_static_op_run(struct lcfibd *d, struct cfg_static_op *op, bool del,
			     struct errbuf *err)
{
	int ret;

	op->rt.rc.paths = op->rt.paths;
	/* A delete takes exactly the route the entry added: not another of its prefix. */
	op->rt.rc.flags = del ? FIB_F_EXACT_METRIC | FIB_F_EXACT : op->flags;
	/* A feed's key is not the entry's: neither its add nor its delete touches it. */
	ret = feed_claim(d, &op->rt.rc, err);
	if (!ret)
		ret = del ? fib_route_del(d->fib, &op->rt.rc, err)
			  : fib_route_add(d->fib, &op->rt.rc, err);
	if (ret)
		log_err("static route '%s': %s: %s", op->line, del ? "delete" : "add", err->msg);
	else
		log_info("static route '%s' %s", op->line, del ? "deleted" : "added");
	return ret;
}

/* Writer thread: undoes the ops of @j applied so far, last first. */
static void cfg_static_undo(struct lcfibd *d, struct cfg_static_job *j)
{
	struct errbuf err;

	for (unsigned int i = j->n; i-- > 0;) {
		if (j->ops[i].done)
			cfg_static_op_run(d, &j->ops[i], !j->ops[i].del, &err);
		j->ops[i].done = false;
	}
}

/*
 * A delete that fails (the operator deleted the route already) is only
 * logged: the entry goes all the same. A refused add fails the job,
 * after undoing what it did, when an edit waits for it.
 */
static void cfg_static_run(struct lcfibd *d, struct writer_job *wj)
{
	struct cfg_static_job *j = (struct cfg_static_job *)wj;

	for (unsigned int i = 0; i < j->n; i++) {
		struct cfg_static_op *op = &j->ops[i];
		struct errbuf err = { "" };
		int ret = cfg_static_op_run(d, op, op->del, &err);

		op->done = !ret;
		if (ret && !op->del && j->edit) {
			err_set(&j->err, "static route '%s': %s", op->line, err.msg);
			j->ret = ret;
			cfg_static_undo(d, j);
			break;
		}
	}
}

static void cfg_static_job_free(struct cfg_static_job *j)
{
	if (!j)
		return;
	for (unsigned int i = 0; i < j->n; i++)
		free(j->ops[i].line);
	free(j);
}

static void cfg_static_done(struct lcfibd *d, struct writer_job *wj)
{
	(void)d;
	cfg_static_job_free((struct cfg_static_job *)wj);
}

static struct cfg_static_job *cfg_static_job_new(unsigned int cap, bool edit)
{
	struct cfg_static_job *j = calloc(1, sizeof(*j) + cap * sizeof(j->ops[0]));

	if (!j)
		return NULL;
	j->edit = edit;
	j->job.run = cfg_static_run;
	j->job.done = cfg_static_done;
	return j;
}

/* Adds to @j the add or delete of @line; -1 with @err when it does not parse or for memory. */
static int cfg_static_job_add(struct cfg_static_job *j, const char *line, bool del,
			      struct errbuf *err)
{
	struct cfg_static_op *op = &j->ops[j->n];

	if (cfg_static_parse(line, &op->rt, err))
		return -1;
	op->flags = op->rt.rc.flags;
	op->line = strdup(line);
	if (!op->line) {
		err_set(err, "out of memory");
		return -1;
	}
	op->del = del;
	j->n++;
	return 0;
}

static void cfg_lines_free(char **v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/*
 * The static-routes lines of @tree, in config order, each checked to
 * parse; *@n of them. 0, or -1 with @e.
 */
static int cfg_static_lines(const struct lyd_node *tree, char ***lines, unsigned int *n,
			    struct lcfibd_err *e)
{
	static struct routefile_route rt; /* loop thread only; large */
	struct ly_set *set = NULL;
	struct errbuf err = { "" };
	char **v = NULL;
	int ret = 0;

	*lines = NULL;
	*n = 0;
	if (lyd_find_xpath(tree, CFG_TOP "/static-routes/route", &set) != LY_SUCCESS)
		return 0;
	if (set->count && !(v = calloc(set->count, sizeof(*v)))) {
		lcfibd_err_set(e, CTL_TAG_RESOURCE, CFG_TOP "/static-routes", "out of memory");
		ret = -1;
	}
	for (uint32_t i = 0; !ret && i < set->count; i++) {
		const char *line = lyd_get_value(lyd_child(set->dnodes[i]));

		if (cfg_static_parse(line, &rt, &err)) {
			lcfibd_err_set(e, CTL_TAG_INVALID, CFG_TOP "/static-routes/route",
				       "static-routes route '%s': %s", line, err.msg);
			ret = -1;
		} else if (!(v[(*n)++] = strdup(line))) {
			lcfibd_err_set(e, CTL_TAG_RESOURCE, CFG_TOP "/static-routes",
				       "out of memory");
			ret = -1;
		}
	}
	ly_set_free(set, NULL);
	if (ret) {
		cfg_lines_free(v, *n);
		*n = 0;
		return -1;
	}
	*lines = v;
	return 0;
}

static bool cfg_static_has(char *const *lines, unsigned int n, const char *line)
{
	for (unsigned int i = 0; i < n; i++) {
		if (strcmp(lines[i], line) == 0)
			return true;
	}
	return false;
}

/*
 * The job taking the FIB from static routes @from to @to: deletes of the
 * lines gone, then adds of the new ones, in config order. NULL for
 * memory (every line parsed before).
 */
static struct cfg_static_job *cfg_static_diff(char *const *from, unsigned int nfrom,
					      char *const *to, unsigned int nto, bool edit)
{
	struct cfg_static_job *j = cfg_static_job_new(nfrom + nto, edit);
	struct errbuf err;
	int ret = 0;

	for (unsigned int i = 0; j && i < nfrom && !ret; i++) {
		if (!cfg_static_has(to, nto, from[i]))
			ret = cfg_static_job_add(j, from[i], true, &err);
	}
	for (unsigned int i = 0; j && i < nto && !ret; i++) {
		if (!cfg_static_has(from, nfrom, to[i]))
			ret = cfg_static_job_add(j, to[i], false, &err);
	}
	if (ret) {
		cfg_static_job_free(j);
		return NULL;
	}
	return j;
}

/*
 * An edit's static routes: prepare checks the lines and makes the job
 * that takes the FIB to them (d->pending.static_job), which the writer
 * runs in the commit's job (cfg_commit_run()); the edit fails with the
 * FIB's reason when it refuses an add, and then nothing of it stays
 * applied. The lines it makes running wait in d->pending for apply (or
 * abort, which takes the routes out again). At start (no running config
 * yet, no writer) the lines are only checked; apply adds them and a
 * refusal is only logged.
 */
static int cfg_prepare_static(struct lcfibd *d, const struct lyd_node *tree, struct lcfibd_err *e)
{
	struct cfg_static_job *j;
	char **now;
	unsigned int n;

	if (cfg_static_lines(tree, &now, &n, e))
		return -1;
	if (!d->running) {
		cfg_lines_free(now, n);
		return 0;
	}
	j = cfg_static_diff(d->static_lines, d->n_static, now, n, true);
	if (!j) {
		cfg_lines_free(now, n);
		lcfibd_err_set(e, CTL_TAG_RESOURCE, CFG_TOP "/static-routes", "out of memory");
		return -1;
	}
	if (!j->n)
		cfg_static_job_free(j);
	else
		d->pending.static_job = j;
	d->pending.static_next = now;
	d->pending.n_static_next = n;
	d->pending.static_prepared = true;
	return 0;
}

static void cfg_static_free(struct lcfibd *d)
{
	cfg_lines_free(d->static_lines, d->n_static);
	d->static_lines = NULL;
	d->n_static = 0;
}

/* At start the static routes are added now; after an edit, its commit job added them. */
static void cfg_apply_static(struct lcfibd *d, const struct lyd_node *tree, bool at_start)
{
	struct lcfibd_err e = { 0 };
	struct cfg_static_job *j;

	cfg_static_free(d);
	if (!at_start && d->pending.static_prepared) {
		d->static_lines = d->pending.static_next;
		d->n_static = d->pending.n_static_next;
		d->pending.static_next = NULL;
		d->pending.n_static_next = 0;
		d->pending.static_prepared = false;
		return;
	}
	if (cfg_static_lines(tree, &d->static_lines, &d->n_static, &e)) {
		log_err("static routes not applied: %s", e.msg);
		return;
	}
	j = cfg_static_diff(NULL, 0, d->static_lines, d->n_static, false);
	if (!j) {
		log_err("static routes: out of memory: not applied");
		return;
	}
	writer_submit(d->writer, &j->job);
}

/*
 * The commit failed after prepare. Before its job ran (d->pending.static_job
 * still there), or when the job undid itself, nothing is to undo; after
 * it ran (the config could not be saved), the routes it added go and
 * those it deleted come back.
 */
static void cfg_abort_static(struct lcfibd *d)
{
	struct cfg_static_job *j;

	if (!d->pending.static_prepared)
		return;
	if (d->pending.static_job) {
		cfg_static_job_free(d->pending.static_job);
		d->pending.static_job = NULL;
	} else if (!d->pending.static_undone) {
		j = cfg_static_diff(d->pending.static_next, d->pending.n_static_next,
				    d->static_lines, d->n_static, false);
		if (j)
			writer_submit(d->writer, &j->job);
		else
			log_err("static routes: out of memory: the FIB keeps those of a failed "
				"edit");
	}
	d->pending.static_undone = false;
	cfg_lines_free(d->pending.static_next, d->pending.n_static_next);
	d->pending.static_next = NULL;
	d->pending.n_static_next = 0;
	d->pending.static_prepared = false;
}

/*
 * cache/{enabled,size,mode,nr-scans,admission}: the schema checks the
 * values; they apply on this thread.
 */
static void cfg_apply_cache(struct lcfibd *d, const struct lyd_node *tree, bool at_start)
{
	const char *on = cfg_value(tree, "cache/enabled"), *size = cfg_value(tree, "cache/size");
	const char *mode = cfg_value(tree, "cache/mode"),
		   *scans = cfg_value(tree, "cache/nr-scans"),
		   *admission = cfg_value(tree, "cache/admission");
	struct dcache_cfg c = {
		.enabled = on && strcmp(on, "true") == 0,
		.size = size ? (uint32_t)strtoul(size, NULL, 10) : 65536,
		.mode = mode && strcmp(mode, "common") == 0 ? CACHE_COMMON : CACHE_PERTHREAD,
		.nr_scans = scans ? (unsigned int)strtoul(scans, NULL, 10) : 0,
		.admit_second = admission && strcmp(admission, "second-miss") == 0,
	};

	if (!at_start)
		log_notice("cache %s, size %u, mode %s, nr-scans %s, admission %s",
			   c.enabled ? "on" : "off", c.size, cache_mode_name(c.mode),
			   scans ? scans : "the mode's",
			   c.admit_second ? "second-miss" : "every-miss");
	dcache_configure(d, &c);
}

static const struct cfg_handler cfg_handlers[] = {
	{ CFG_TOP "/sync-mem", NULL, cfg_apply_sync_mem, NULL },
	{ CFG_TOP "/log-level", NULL, cfg_apply_log_level, NULL },
	{ CFG_TOP "/admin-group", cfg_prepare_admin_group, cfg_apply_admin_group, NULL },
	{ CFG_TOP "/feeds/kernel/enabled", cfg_prepare_kernel, cfg_apply_kernel,
	  feed_kernel_abort },
	{ CFG_TOP "/feeds/kernel/table", cfg_prepare_kernel, cfg_apply_kernel, feed_kernel_abort },
	{ CFG_TOP "/feeds/kernel/receive-buffer", cfg_prepare_kernel, cfg_apply_kernel,
	  feed_kernel_abort },
	{ CFG_TOP "/feeds/fpm/enabled", cfg_prepare_fpm, cfg_apply_fpm, feed_fpm_abort },
	{ CFG_TOP "/feeds/fpm/address", cfg_prepare_fpm, cfg_apply_fpm, feed_fpm_abort },
	{ CFG_TOP "/feeds/fpm/port", cfg_prepare_fpm, cfg_apply_fpm, feed_fpm_abort },
	{ CFG_TOP "/feeds/fpm/replay-settle", cfg_prepare_fpm, cfg_apply_fpm, feed_fpm_abort },
	{ CFG_TOP "/feeds/fpm/allowed-user", cfg_prepare_fpm, cfg_apply_fpm, feed_fpm_abort },
	{ CFG_TOP "/feeds/fpm/allowed-remote", cfg_prepare_fpm, cfg_apply_fpm, feed_fpm_abort },
	{ CFG_TOP "/feeds/fpm/hold-time", cfg_prepare_fpm, cfg_apply_fpm, feed_fpm_abort },
	{ CFG_TOP "/max-route-file-size", NULL, cfg_apply_max_file_size, NULL },
	{ CFG_TOP "/metrics/enabled", cfg_prepare_metrics, cfg_apply_metrics, cfg_abort_metrics },
	{ CFG_TOP "/metrics/address", cfg_prepare_metrics, cfg_apply_metrics, cfg_abort_metrics },
	{ CFG_TOP "/metrics/port", cfg_prepare_metrics, cfg_apply_metrics, cfg_abort_metrics },
	{ CFG_TOP "/cache/enabled", NULL, cfg_apply_cache, NULL },
	{ CFG_TOP "/cache/size", NULL, cfg_apply_cache, NULL },
	{ CFG_TOP "/cache/mode", NULL, cfg_apply_cache, NULL },
	{ CFG_TOP "/cache/nr-scans", NULL, cfg_apply_cache, NULL },
	{ CFG_TOP "/cache/admission", NULL, cfg_apply_cache, NULL },
	{ CFG_TOP "/route-files/route-file/path", cfg_prepare_route_files, cfg_apply_route_files,
	  cfg_abort_route_files },
	{ CFG_TOP "/route-files/route-file/format", NULL, cfg_apply_route_files, NULL },
	{ CFG_TOP "/route-files/route-file/skip-bad-lines", NULL, cfg_apply_route_files, NULL },
	{ CFG_TOP "/static-routes/route/line", cfg_prepare_static, cfg_apply_static,
	  cfg_abort_static },
};

#define CFG_N_HANDLERS (sizeof(cfg_handlers) / sizeof(cfg_handlers[0]))

static int cfg_handler_index(const struct lysc_node *snode)
{
	char path[512];

	if (!lysc_path(snode, LYSC_PATH_DATA, path, sizeof(path)))
		return -1;
	for (unsigned int i = 0; i < CFG_N_HANDLERS; i++) {
		if (strcmp(cfg_handlers[i].path, path) == 0)
			return (int)i;
	}
	return -1;
}

static LY_ERR cfg_check_node(struct lysc_node *snode, void *ctx, ly_bool *dfs_continue)
{
	unsigned int *missing = ctx;
	char path[512];

	*dfs_continue = 0;
	if (!(snode->flags & LYS_CONFIG_W)) {
		*dfs_continue = 1; /* state: no handler, nor below */
		return LY_SUCCESS;
	}
	if (!(snode->nodetype & (LYS_LEAF | LYS_LEAFLIST)))
		return LY_SUCCESS;
	if (cfg_handler_index(snode) < 0) {
		lysc_path(snode, LYSC_PATH_DATA, path, sizeof(path));
		log_err("config node %s has no handler in lcfibd", path);
		(*missing)++;
	}
	return LY_SUCCESS;
}

int cfg_check_handlers(const struct lcfibd *d)
{
	unsigned int missing = 0;

	lysc_module_dfs_full(d->mod, cfg_check_node, &missing);
	return missing ? -1 : 0;
}

/* Marks in @which the handlers of every node of @diff (libyang's diff of two configs). */
static void cfg_changed(const struct lyd_node *diff, bool *which)
{
	const struct lyd_node *root, *n;

	LY_LIST_FOR(diff, root)
	{
		LYD_TREE_DFS_BEGIN(root, n)
		{
			int i = cfg_handler_index(n->schema);

			if (i >= 0)
				which[i] = true;
			LYD_TREE_DFS_END(root, n);
		}
	}
}

/* Calls abort() of the prepared handlers before @upto, each once. */
static void cfg_abort(struct lcfibd *d, const bool *which, unsigned int upto)
{
	void (*last)(struct lcfibd *) = NULL;

	for (unsigned int i = 0; i < upto; i++) {
		if (which[i] && cfg_handlers[i].abort && cfg_handlers[i].abort != last) {
			cfg_handlers[i].abort(d);
			last = cfg_handlers[i].abort;
		}
	}
}

static int cfg_prepare(struct lcfibd *d, const bool *which, const struct lyd_node *tree,
		       struct lcfibd_err *e)
{
	int (*last)(struct lcfibd *, const struct lyd_node *, struct lcfibd_err *) = NULL;

	for (unsigned int i = 0; i < CFG_N_HANDLERS; i++) {
		/* A handler shared by several leaves prepares once. */
		if (!which[i] || !cfg_handlers[i].prepare || cfg_handlers[i].prepare == last)
			continue;
		last = cfg_handlers[i].prepare;
		if (cfg_handlers[i].prepare(d, tree, e)) {
			cfg_abort(d, which, i);
			return -1;
		}
	}
	return 0;
}

static void cfg_apply(struct lcfibd *d, const bool *which, const struct lyd_node *tree,
		      bool at_start)
{
	void (*last)(struct lcfibd *, const struct lyd_node *, bool) = NULL;

	for (unsigned int i = 0; i < CFG_N_HANDLERS; i++) {
		/* A handler shared by several leaves runs once. */
		if (which[i] && cfg_handlers[i].apply != last) {
			cfg_handlers[i].apply(d, tree, at_start);
			last = cfg_handlers[i].apply;
		}
	}
}

void cfg_apply_all(struct lcfibd *d)
{
	bool all[CFG_N_HANDLERS];

	memset(all, 1, sizeof(all));
	cfg_apply(d, all, d->running, true);
}

/* mkdir -p for the directory of @path, mode 0750. */
static int cfg_mkdirs(const char *dir)
{
	char buf[4096];

	snprintf(buf, sizeof(buf), "%s", dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0750) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0750) && errno != EEXIST)
		return -errno;
	return 0;
}

static int cfg_write_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes @tree's explicit nodes to the config file: temp file, fsync, rename, fsync the directory.
 */
static int cfg_persist(struct lcfibd *d, const struct lyd_node *tree, struct lcfibd_err *e)
{
	char tmp[4096], dirbuf[4096], *json = NULL, *dir;
	int fd, dfd, ret;

	if (lyd_print_mem(&json, tree, LYD_JSON, LYD_PRINT_WITHSIBLINGS | LYD_PRINT_WD_EXPLICIT)) {
		lcfibd_err_from_ly(e, d->ly, "printing the config");
		return -1;
	}
	if (!json)
		json = strdup("{}\n");
	snprintf(dirbuf, sizeof(dirbuf), "%s", d->config_path);
	dir = dirname(dirbuf);
	ret = cfg_mkdirs(dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", d->config_path, (long)getpid());
	fd = ret ? ret : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		ret = ret ? ret : -errno;
		goto fail;
	}
	ret = cfg_write_all(fd, json, strlen(json));
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, d->config_path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		goto fail;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	free(json);
	d->ctl.config_writes++;
	return 0;
fail:
	free(json);
	lcfibd_err_set(e, CTL_TAG_FAILED, NULL, "cannot save the config to %s: %s", d->config_path,
		       strerror(-ret));
	return -1;
}

/* Parses and validates the config file; *@tree NULL when there is none. */
static int cfg_read_file(struct lcfibd *d, struct lyd_node **tree, struct lcfibd_err *e)
{
	struct stat st;

	*tree = NULL;
	if (stat(d->config_path, &st) && errno == ENOENT)
		return 0;
	if (!st.st_size) {
		lcfibd_err_set(e, CTL_TAG_INVALID, NULL,
			       "the file is empty (an empty configuration is '{}')");
		return -1;
	}
	if (lyd_parse_data_path(d->ly, d->config_path, LYD_JSON,
				LYD_PARSE_STRICT | LYD_PARSE_NO_STATE, LYD_VALIDATE_NO_STATE,
				tree) != LY_SUCCESS) {
		lcfibd_err_from_ly(e, d->ly, NULL);
		lyd_free_all(*tree);
		*tree = NULL;
		return -1;
	}
	return 0;
}

/* Adds the default nodes. */
static int cfg_complete(struct lcfibd *d, struct lyd_node **tree, struct lcfibd_err *e)
{
	if (lyd_validate_all(tree, d->ly, LYD_VALIDATE_NO_STATE, NULL) != LY_SUCCESS) {
		lcfibd_err_from_ly(e, d->ly, "config");
		return -1;
	}
	return 0;
}

/*
 * Removes the temp files cfg_persist() left when a daemon died while
 * writing the config (CONFIG.tmp.PID, PID no longer running): nothing
 * else ever would.
 */
static void cfg_remove_stale_tmp(const struct lcfibd *d)
{
	char dirbuf[4096], prefix[512], path[4608];
	const char *base = strrchr(d->config_path, '/'), *dn;
	size_t plen;
	struct dirent *de;
	DIR *dir;

	snprintf(dirbuf, sizeof(dirbuf), "%s", d->config_path);
	base = base ? base + 1 : d->config_path;
	plen = (size_t)snprintf(prefix, sizeof(prefix), "%s.tmp.", base);
	dn = dirname(dirbuf);
	dir = opendir(dn);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char *end;
		long pid;

		if (strncmp(de->d_name, prefix, plen) != 0)
			continue;
		errno = 0;
		pid = strtol(de->d_name + plen, &end, 10);
		if (errno || *end || end == de->d_name + plen || pid <= 0 ||
		    (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue; /* not ours, or its writer still runs */
		snprintf(path, sizeof(path), "%s/%s", dn, de->d_name);
		if (unlink(path) == 0)
			log_notice("removed %s, left by a daemon that died writing the config",
				   path);
		else
			log_warn("cannot remove %s, left by a daemon that died: %m", path);
	}
	closedir(dir);
}

int cfg_init(struct lcfibd *d, bool check_only)
{
	struct lcfibd_err e = { 0 };
	struct lyd_node *tree;
	bool all[CFG_N_HANDLERS];

	if (!check_only)
		cfg_remove_stale_tmp(d);
	if (cfg_read_file(d, &tree, &e) || cfg_complete(d, &tree, &e))
		goto fail;
	memset(all, 1, sizeof(all));
	if (cfg_prepare(d, all, tree, &e))
		goto fail_tree;
	d->running = tree;
	if (check_only) {
		cfg_abort(d, all, CFG_N_HANDLERS); /* what prepare() opened */
		printf("%s: valid\n", d->config_path);
	}
	return 0;
fail_tree:
	lyd_free_all(tree);
fail:
	log_err("config %s: %s%s%s", d->config_path, e.msg, e.path[0] ? " at " : "", e.path);
	return -1;
}

/*
 * A commit whose routes the writer applies: the edit's static routes,
 * then the route files it adds, in one job, so that a refusal anywhere
 * undoes the static routes before the commit ends.
 */
struct cfg_commit {
	struct writer_job job; /* first */
	struct lyd_node *cand;
	bool which[CFG_N_HANDLERS];
	bool persist;
	struct cfg_edit *edit; /* the client's, or NULL (SIGHUP) */
	struct cfg_static_job *statics;
	struct feed_file_job **files;
	unsigned int n_files;
	/* the writer's result */
	int ret;
	unsigned int applied; /* files applied; the one refused is files[applied] */
};

static void cfg_commit_end(struct lcfibd *d, struct cfg_commit *cm, bool later);
static void cfg_next(struct lcfibd *d);
static int cfg_quote(const char *s, char *buf, size_t size);

/* Writer thread: the static routes, then each route file; a refusal undoes the static routes. */
static void cfg_commit_run(struct lcfibd *d, struct writer_job *wj)
{
	struct cfg_commit *cm = (struct cfg_commit *)wj;

	if (cm->statics) {
		cfg_static_run(d, &cm->statics->job);
		cm->ret = cm->statics->ret;
	}
	while (!cm->ret && cm->applied < cm->n_files) {
		struct feed_file_job *f = cm->files[cm->applied];

		/* lcfibd exits: a load in progress ends at once. */
		uatomic_or(&f->job.cancel, uatomic_read(&wj->cancel));
		cm->ret = feed_file_apply(d, f);
		if (!cm->ret)
			cm->applied++;
		else if (cm->statics)
			cfg_static_undo(d, cm->statics);
	}
}

/* Loop thread: the writer applied (or refused) the commit's routes; the commit ends. */
static void cfg_commit_done(struct lcfibd *d, struct writer_job *wj)
{
	cfg_commit_end(d, (struct cfg_commit *)wj, true);
}

static void cfg_commit_free(struct cfg_commit *cm)
{
	for (unsigned int i = 0; i < cm->n_files; i++) {
		if (cm->files[i])
			feed_file_job_free(cm->files[i]);
	}
	free(cm->files);
	cfg_static_job_free(cm->statics);
	lyd_free_all(cm->cand);
	free(cm);
}

/*
 * The refusal of @cm's routes as the edit's error: the static route's, or
 * the route file's (and which files it loaded before, which stay).
 */
static void cfg_commit_error(struct lcfibd *d, struct cfg_commit *cm, struct lcfibd_err *e)
{
	char xp[4200];
	struct feed_file_job *f;
	size_t len;

	if (cm->statics && cm->statics->ret) {
		lcfibd_err_set(e, cm->statics->ret == -EBUSY ? CTL_TAG_BUSY : CTL_TAG_FAILED,
			       CFG_TOP "/static-routes/route", "%s", cm->statics->err.msg);
		return;
	}
	f = cm->files[cm->applied];
	if (cfg_quote(f->path, xp, sizeof(xp)))
		xp[0] = '\0';
	lcfibd_err_set(e, f->ret == -ECANCELED ? CTL_TAG_FAILED : CTL_TAG_ROUTE_FILE, NULL, "%s%s",
		       f->ret == -ECANCELED ? "lcfibd is stopping: " : "", f->err.msg);
	if (xp[0])
		snprintf(e->path, sizeof(e->path), CFG_TOP "/route-files/route-file[path=%s]", xp);
	for (unsigned int i = 0; i < cm->applied; i++) {
		len = strlen(e->msg);
		snprintf(e->msg + len, sizeof(e->msg) - len, "%s%s",
			 i ? ", " : "; loaded before it and kept loaded, not configured: ",
			 cm->files[i]->path);
	}
	(void)d;
}

/*
 * Loop thread: ends @cm, whose routes are applied (or refused): saves and
 * applies the config, or aborts it; tells whoever asked; then starts what
 * waited for it. @later: not inside cfg_edit_submit().
 */
static void cfg_commit_end(struct lcfibd *d, struct cfg_commit *cm, bool later)
{
	struct lcfibd_err e = { 0 };
	struct cfg_edit *ed = cm->edit;
	int ret = cm->ret;

	if (d->pending.inflight == cm)
		d->pending.inflight = NULL;
	if (ret)
		cfg_commit_error(d, cm, &e);
	/* The files applied count and log as loads; the one refused says why. */
	for (unsigned int i = 0; i < cm->n_files; i++) {
		if (i <= cm->applied && (i < cm->applied || cm->files[i]->ret))
			feed_file_applied(d, cm->files[i]);
		else
			feed_file_job_free(cm->files[i]);
		cm->files[i] = NULL;
	}
	if (ret) {
		d->pending.static_undone = true; /* the job undid them */
		cfg_abort(d, cm->which, CFG_N_HANDLERS);
	} else if (cm->persist && cfg_persist(d, cm->cand, &e)) {
		cfg_abort(d, cm->which, CFG_N_HANDLERS);
		ret = -1;
	} else {
		lyd_free_all(d->running);
		d->running = cm->cand;
		cm->cand = NULL;
		cfg_apply(d, cm->which, d->running, false);
	}
	if (ed)
		ed->done(d, ed, ret ? -1 : 0, &e, later);
	else if (ret)
		log_err("reload of %s failed, the running config stays: %s%s%s", d->config_path,
			e.msg, e.path[0] ? " at " : "", e.path);
	else
		log_notice("config reloaded from %s", d->config_path);
	cfg_commit_free(cm);
	if (later)
		cfg_next(d);
}

/*
 * Makes @cand the running config: prepare, apply what changed; @cand is
 * taken. Returns 0 (done), 1 (the writer applies its routes: the commit
 * ends in cfg_commit_end(), which tells @ed) or -1 with @e.
 */
static int cfg_commit(struct lcfibd *d, struct lyd_node *cand, bool persist, struct cfg_edit *ed,
		      struct lcfibd_err *e)
{
	bool which[CFG_N_HANDLERS] = { false };
	struct lyd_node *diff = NULL;
	struct cfg_commit *cm;

	if (lyd_diff_siblings(d->running, cand, LYD_DIFF_DEFAULTS, &diff) != LY_SUCCESS) {
		lcfibd_err_from_ly(e, d->ly, "config diff");
		goto fail;
	}
	cfg_changed(diff, which);
	lyd_free_all(diff);
	if (cfg_prepare(d, which, cand, e))
		goto fail;
	if (!d->pending.static_job && !d->pending.n_rf_jobs) {
		/* Nothing for the writer: the commit ends now. */
		if (persist && cfg_persist(d, cand, e)) {
			cfg_abort(d, which, CFG_N_HANDLERS);
			goto fail;
		}
		lyd_free_all(d->running);
		d->running = cand;
		cfg_apply(d, which, cand, false);
		return 0;
	}
	cm = calloc(1, sizeof(*cm));
	if (!cm) {
		cfg_abort(d, which, CFG_N_HANDLERS);
		lcfibd_err_set(e, CTL_TAG_RESOURCE, NULL, "out of memory");
		goto fail;
	}
	memcpy(cm->which, which, sizeof(which));
	cm->cand = cand;
	cm->persist = persist;
	cm->edit = ed;
	cm->statics = d->pending.static_job;
	cm->files = d->pending.rf_jobs;
	cm->n_files = d->pending.n_rf_jobs;
	d->pending.static_job = NULL;
	d->pending.rf_jobs = NULL;
	d->pending.n_rf_jobs = 0;
	cm->job.run = cfg_commit_run;
	cm->job.done = cfg_commit_done;
	d->pending.inflight = cm;
	writer_submit(d->writer, &cm->job);
	return 1;
fail:
	lyd_free_all(cand);
	return -1;
}

/* The config file's, as SIGHUP asks: now, or after the edit being applied. */
static void cfg_reload_now(struct lcfibd *d)
{
	struct lcfibd_err e = { 0 };
	struct lyd_node *tree;
	int ret;

	ret = cfg_read_file(d, &tree, &e);
	if (!ret)
		ret = cfg_complete(d, &tree, &e);
	if (!ret)
		ret = cfg_commit(d, tree, false, NULL, &e);
	else
		lyd_free_all(tree);
	if (ret < 0)
		log_err("reload of %s failed, the running config stays: %s%s%s", d->config_path,
			e.msg, e.path[0] ? " at " : "", e.path);
	else if (ret == 0)
		log_notice("config reloaded from %s", d->config_path);
}

void cfg_reload(struct lcfibd *d)
{
	if (d->pending.inflight) {
		log_notice("the reload waits for the config edit being applied");
		d->pending.reload = true;
		return;
	}
	cfg_reload_now(d);
}
static int cfg_delete(struct lcfibd *d, struct lyd_node *cand, const char *xpath,
		      struct lcfibd_err *e)
{
	struct ly_set *set = NULL;

	if (lcfibd_err_xpath(e, xpath))
		return -1;
	if (lyd_find_xpath(cand, xpath, &set) != LY_SUCCESS) {
		lcfibd_err_from_ly(e, d->ly, "delete");
		return -1;
	}
	if (!set->count) {
		lcfibd_err_set(e, "data-missing", xpath, "nothing to delete at %s", xpath);
		ly_set_free(set, NULL);
		return -1;
	}
	for (uint32_t i = 0; i < set->count; i++) {
		if (set->dnodes[i]->schema && !(set->dnodes[i]->schema->flags & LYS_CONFIG_W)) {
			lcfibd_err_set(e, CTL_TAG_INVALID, xpath, "%s is not configuration", xpath);
			ly_set_free(set, NULL);
			return -1;
		}
	}
	for (uint32_t i = 0; i < set->count; i++)
		lyd_free_tree(set->dnodes[i]);
	ly_set_free(set, NULL);
	return 0;
}

/* Makes the candidate of @ed and commits it: as cfg_commit() returns. */
static int cfg_edit(struct lcfibd *d, struct cfg_edit *ed, struct lcfibd_err *e)
{
	unsigned int mode = ed->mode;
	const char *data = ed->data;
	struct lyd_node *cand = NULL, *edit = NULL;

	if (mode != CTL_EDIT_REPLACE &&
	    lyd_dup_siblings(d->running, NULL, LYD_DUP_RECURSIVE, &cand) != LY_SUCCESS) {
		lcfibd_err_from_ly(e, d->ly, "config");
		return -1;
	}
	if (mode == CTL_EDIT_DELETE) {
		if (cfg_delete(d, cand, data, e))
			goto fail;
	} else {
		if (lyd_parse_data_mem(d->ly, data, LYD_JSON,
				       LYD_PARSE_STRICT | LYD_PARSE_NO_STATE | LYD_PARSE_ONLY, 0,
				       &edit) != LY_SUCCESS) {
			lcfibd_err_from_ly(e, d->ly, "edit");
			goto fail;
		}
		if (mode == CTL_EDIT_REPLACE) {
			cand = edit;
			edit = NULL;
		} else if (lyd_merge_siblings(&cand, edit, LYD_MERGE_DEFAULTS) != LY_SUCCESS) {
			lcfibd_err_from_ly(e, d->ly, "edit");
			goto fail;
		}
	}
	lyd_free_all(edit);
	edit = NULL;
	if (cfg_complete(d, &cand, e))
		goto fail;
	return cfg_commit(d, cand, true, ed, e);
fail:
	lyd_free_all(edit);
	lyd_free_all(cand);
	return -1;
}

/* Starts @ed, whose turn it is; @later: not inside cfg_edit_submit(). */
static void cfg_edit_start(struct lcfibd *d, struct cfg_edit *ed, bool later)
{
	struct lcfibd_err e = { 0 };
	int ret;

	if (!ed->job.conn) {
		/* Its client went before its turn: nobody asks for it now. */
		lcfibd_err_set(&e, CTL_TAG_FAILED, NULL, "the client went away");
		ed->done(d, ed, -1, &e, later);
		return;
	}
	d->editor = ed->editor; /* route files it adds must be files it may read */
	ret = cfg_edit(d, ed, &e);
	d->editor = NULL;
	if (ret <= 0)
		ed->done(d, ed, ret, &e, later);
}

/* Loop thread: after a commit the writer applied, what waited for it, in order. */
static void cfg_next(struct lcfibd *d)
{
	while (!d->pending.inflight && d->pending.queue) {
		struct cfg_edit *ed = d->pending.queue;

		d->pending.queue = ed->next;
		if (!d->pending.queue)
			d->pending.queue_tail = &d->pending.queue;
		if (d->stop)
			ed->job.conn = NULL; /* lcfibd exits: no new work for the writer */
		cfg_edit_start(d, ed, true);
	}
	if (!d->pending.inflight && d->pending.reload && !d->stop) {
		d->pending.reload = false;
		cfg_reload_now(d);
	}
}

void cfg_edit_submit(struct lcfibd *d, struct cfg_edit *ed)
{
	ed->next = NULL;
	if (d->pending.inflight || d->pending.queue) {
		if (!d->pending.queue)
			d->pending.queue_tail = &d->pending.queue;
		*d->pending.queue_tail = ed;
		d->pending.queue_tail = &ed->next;
		return;
	}
	cfg_edit_start(d, ed, false);
}

/* Quotes @s for an XPath predicate: '...' unless it holds a quote. */
static int cfg_quote(const char *s, char *buf, size_t size)
{
	char q = strchr(s, '\'') ? '"' : '\'';

	if (strchr(s, '\'') && strchr(s, '"'))
		return -1;
	snprintf(buf, size, "%c%s%c", q, s, q);
	return 0;
}

/* Adds to @tree the route-files entry of @path (quoted @q). */
static LY_ERR cfg_route_file_entry(struct lcfibd *d, struct lyd_node *tree, const char *q,
				   const char *format, bool skip_bad)
{
	char xp[4400];
	LY_ERR ret;

	snprintf(xp, sizeof(xp), CFG_TOP "/route-files/route-file[path=%s]/format", q);
	ret = lyd_new_path(tree, d->ly, xp, format, LYD_NEW_PATH_UPDATE, NULL);
	if (ret != LY_SUCCESS)
		return ret;
	snprintf(xp, sizeof(xp), CFG_TOP "/route-files/route-file[path=%s]/skip-bad-lines", q);
	return lyd_new_path(tree, d->ly, xp, skip_bad ? "true" : "false", LYD_NEW_PATH_UPDATE,
			    NULL);
}

/*
 * The file is loaded already, so the commit has nothing for the writer
 * and ends now, even while an edit is being applied: that edit's
 * candidate gets the entry too, or its commit would drop it.
 */
int cfg_add_route_file(struct lcfibd *d, const char *path, const char *format, bool skip_bad,
		       struct lcfibd_err *e)
{
	struct lyd_node *cand = NULL;
	char q[4200];
	int ret;

	if (cfg_quote(path, q, sizeof(q))) {
		lcfibd_err_set(e, CTL_TAG_INVALID, NULL, "a path with both kinds of quote: %s",
			       path);
		return -1;
	}
	if (lyd_dup_siblings(d->running, NULL, LYD_DUP_RECURSIVE, &cand) != LY_SUCCESS ||
	    cfg_route_file_entry(d, cand, q, format, skip_bad) != LY_SUCCESS) {
		lcfibd_err_from_ly(e, d->ly, "recording the route file");
		lyd_free_all(cand);
		return -1;
	}
	if (cfg_complete(d, &cand, e)) {
		lyd_free_all(cand);
		return -1;
	}
	ret = cfg_commit(d, cand, true, NULL, e);
	if (ret > 0) { /* cannot be: its file is loaded (feed_file_loaded()) */
		log_err("recording %s in the config loads it again", path);
		ret = 0;
	}
	if (!ret && d->pending.inflight &&
	    (cfg_route_file_entry(d, d->pending.inflight->cand, q, format, skip_bad) !=
		     LY_SUCCESS ||
	     lyd_validate_all(&d->pending.inflight->cand, d->ly, LYD_VALIDATE_NO_STATE, NULL) !=
		     LY_SUCCESS))
		log_err("%s is recorded now, but the config edit being applied will drop it: %s",
			path, ly_errmsg(d->ly));
	return ret;
}

void cfg_fini(struct lcfibd *d)
{
	/* Edits still waiting: their clients are gone (ctl_close_all()). */
	while (d->pending.queue) {
		struct cfg_edit *ed = d->pending.queue;
		struct lcfibd_err e = { 0 };

		d->pending.queue = ed->next;
		ed->job.conn = NULL;
		lcfibd_err_set(&e, CTL_TAG_FAILED, NULL, "lcfibd is stopping");
		ed->done(d, ed, -1, &e, true);
	}
	cfg_static_free(d);
	lyd_free_all(d->running);
	d->running = NULL;
}
