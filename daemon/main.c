/* SPDX-License-Identifier: MIT */
/*
 * lcfibd: options, start-up, the event loop, and a clean exit.
 */
#define _GNU_SOURCE /* vasprintf */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "config.h"
#include "daemon/cfg.h"
#include "daemon/ctl.h"
#include "daemon/dcache.h"
#include "daemon/feed_file.h"
#include "daemon/feed_fpm.h"
#include "daemon/feed_kernel.h"
#include "daemon/http.h"
#include "daemon/ingest.h"
#include "daemon/lcfibd.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/rpc.h"
#include "daemon/state.h"
#include "daemon/writer.h"
#include "lib/ctl.h"
#include "lib/ifname.h"

#ifndef LCFIB_YANG_DIR
#define LCFIB_YANG_DIR "/usr/local/share/lcfib/yang"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: lcfibd [OPTIONS]\n"
		"A routing daemon whose forwarding table lives in user space.\n\n"
		"  -f, --foreground         stay in the foreground, log to stderr\n"
		"  -c, --config FILE        running-config file (default STATEDIR/lcfibd.json)\n"
		"  -s, --socket PATH        control socket\n"
		"  -S, --state-dir DIR      state directory\n"
		"  -p, --pidfile FILE       pid file\n"
		"  -y, --yang-dir DIR       where lcfib.yang is (default %s)\n"
		"  -G, --socket-group GROUP group that may connect to the socket (and read)\n"
		"  -d, --log-level LEVEL    error, warning, notice, info or debug\n"
		"      --syslog, --stderr   where the log goes\n"
		"  -t, --check-config       validate the config file and exit\n"
		"  -V, --version            print the version and exit\n"
		"  -h, --help               this text\n"
		"Defaults as root: /run/lcfib/lcfibd.sock, /run/lcfib/lcfibd.pid, /var/lib/lcfib;\n"
		"otherwise $XDG_RUNTIME_DIR/lcfib/ and ${XDG_STATE_HOME:-~/.local/state}/lcfib\n"
		"(without XDG_RUNTIME_DIR: no default, give -s and -p).\n",
		LCFIB_YANG_DIR);
}

struct opts {
	bool check_only;
	int log_dest; /* 0 default, 1 syslog, 2 stderr */
	char *owned[6];
};

static char *xasprintf(struct opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A default path, freed at exit. */
static char *xasprintf(struct opts *o, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		fprintf(stderr, "lcfibd: out of memory\n");
		exit(1);
	}
	for (unsigned int i = 0; i < 6; i++) {
		if (!o->owned[i]) {
			o->owned[i] = s;
			break;
		}
	}
	return s;
}

/*
 * The defaults of what the options did not give. Returns -1 (having said
 * why) when the socket or the pid file has none: a user other than root
 * without XDG_RUNTIME_DIR, where lcfibctl finds no default either.
 */
static int defaults(struct lcfibd *d, struct opts *o)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char rundir[4096];
	int ret = ctl_default_run_dir(rundir, sizeof(rundir));

	if (!d->state_dir && geteuid() == 0)
		d->state_dir = "/var/lib/lcfib";
	else if (!d->state_dir && state)
		d->state_dir = xasprintf(o, "%s/lcfib", state);
	else if (!d->state_dir)
		d->state_dir = xasprintf(o, "%s/.local/state/lcfib", home ? home : "/tmp");
	if (ret && !o->check_only && (!d->socket_path || !d->pidfile)) {
		fprintf(stderr, "lcfibd: %s socket and pid file: give -s PATH and -p FILE, %s\n",
			ret == -ENOENT ? CTL_NO_RUN_DIR : "XDG_RUNTIME_DIR is too long: no default",
			"or set XDG_RUNTIME_DIR (lcfibctl then finds the socket too)");
		return -1;
	}
	if (!d->socket_path)
		d->socket_path = ret ? "" : xasprintf(o, "%s/%s", rundir, CTL_SOCK_NAME);
	if (!d->pidfile)
		d->pidfile = ret ? "" : xasprintf(o, "%s/%s", rundir, CTL_PID_NAME);
	if (!d->config_path)
		d->config_path = xasprintf(o, "%s/lcfibd.json", d->state_dir);
	if (!d->yang_dir)
		d->yang_dir = getenv("LCFIB_YANG_DIR") ? getenv("LCFIB_YANG_DIR") : LCFIB_YANG_DIR;
	return 0;
}

static int parse_args(struct lcfibd *d, struct opts *o, int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "yang-dir", required_argument, NULL, 'y' },
		{ "socket-group", required_argument, NULL, 'G' },
		{ "log-level", required_argument, NULL, 'd' },
		{ "syslog", no_argument, NULL, 1 },
		{ "stderr", no_argument, NULL, 2 },
		{ "check-config", no_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "fc:s:S:p:y:G:d:tVh", lopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			d->foreground = true;
			break;
		case 'c':
			d->config_path = optarg;
			break;
		case 's':
			d->socket_path = optarg;
			break;
		case 'S':
			d->state_dir = optarg;
			break;
		case 'p':
			d->pidfile = optarg;
			break;
		case 'y':
			d->yang_dir = optarg;
			break;
		case 'G':
			d->socket_group = optarg;
			break;
		case 'd':
			d->log_level_opt = log_level_parse(optarg);
			if (d->log_level_opt < 0) {
				fprintf(stderr,
					"lcfibd: --log-level %s: expected error, warning, "
					"notice, info or debug\n",
					optarg);
				return -1;
			}
			break;
		case 1:
		case 2:
			o->log_dest = c;
			break;
		case 't':
			o->check_only = true;
			break;
		case 'V':
			printf("lcfibd %s\n", PACKAGE_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "lcfibd: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* Makes the directory of @path (and its parents), mode 0750; 1 when it made the last one. */
static int mkdir_for(const char *path)
{
	char buf[4096], *slash;

	snprintf(buf, sizeof(buf), "%s", path);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return 0;
	*slash = '\0';
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(buf, 0750);
		*p = '/';
	}
	if (mkdir(buf, 0750) == 0)
		return 1;
	if (errno != EEXIST) {
		log_err("mkdir %s: %m", buf);
		return -1;
	}
	return 0;
}

static int yang_init(struct lcfibd *d)
{
	ly_log_options(LY_LOSTORE_LAST);
	/* PRIV_PARSED: the metrics tell counters from gauges by the parsed typedef. */
	if (ly_ctx_new(d->yang_dir, LY_CTX_DISABLE_SEARCHDIR_CWD | LY_CTX_SET_PRIV_PARSED, &d->ly) !=
	    LY_SUCCESS) {
		log_err("libyang: cannot make a context for %s", d->yang_dir);
		return -1;
	}
	d->mod = ly_ctx_load_module(d->ly, "lcfib", NULL, NULL);
	if (!d->mod) {
		const struct ly_err_item *ei = ly_err_last(d->ly);

		log_err("cannot load the lcfib YANG module from %s: %s", d->yang_dir,
			ei && ei->msg ? ei->msg : "not found");
		return -1;
	}
	return 0;
}

/*
 * Takes the pid file: opens it without truncating, locks it (flock, held
 * until exit by the descriptor, which the daemon keeps), then writes our
 * pid. A file another lcfibd holds is left alone: this one refuses to
 * start, naming that daemon's pid. Returns the descriptor, or -1.
 */
static int pidfile_take(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	int n;

	if (fd < 0) {
		log_err("pid file %s: %m", path);
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno == EWOULDBLOCK) {
			n = (int)pread(fd, buf, sizeof(buf) - 1, 0);
			buf[n > 0 ? n : 0] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			log_err("pid file %s is locked by a running lcfibd (pid %s): not starting",
				path, buf[0] ? buf : "unknown");
		} else {
			log_err("pid file %s: lock: %m", path);
		}
		close(fd);
		return -1;
	}
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)n, 0) != n) {
		log_err("pid file %s: %m", path);
		unlink(path);
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * A path given on the command line (-s, -p, -c): its directory must
 * exist. Only the defaults' directories are made (/run/lcfib, the state
 * directory): a typo in an option must not make a tree of directories.
 */
static int dir_given_exists(const char *opt, const char *path)
{
	char buf[4096], *slash;
	struct stat st;

	snprintf(buf, sizeof(buf), "%s", path);
	slash = strrchr(buf, '/');
	if (!slash)
		return 0;
	slash[slash == buf] = '\0';
	if (stat(buf, &st))
		log_err("%s %s: the directory %s: %m (lcfibd makes only its default directories)",
			opt, path, buf);
	else if (!S_ISDIR(st.st_mode))
		log_err("%s %s: %s is not a directory", opt, path, buf);
	else
		return 0;
	return -1;
}

/* The signals the loop reads from a signalfd. */
static void signals_of_the_loop(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

/* Blocked in every thread: so before any starts (the FIB's reclaim thread, the writer). */
static void signals_block(sigset_t *set)
{
	signals_of_the_loop(set);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/*
 * Backgrounds the daemon: fork, setsid, fork. Called before anything starts
 * a thread or registers with liburcu (the FIB's reclamation thread, the
 * writer): a forked child keeps only the thread that forked, so whatever
 * ran before would be gone in the daemon, and reclaim_destroy() would wait
 * for it forever at exit. The parent exits once the child says it is
 * serving, with the status the child sends (daemon_ready()), or 1 when the
 * child dies first: `lcfibd && lcfibctl ...` works, and systemd's
 * Type=forking start fails as the daemon's start-up does. Standard error
 * stays the caller's until then, so start-up errors reach it.
 */
static int daemonize(int *ready_fd)
{
	int p[2];
	pid_t pid;
	unsigned char st = 1;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0) {
		sigset_t set;

		/* The parent only waits: Ctrl-C or timeout(1) may end it. */
		signals_of_the_loop(&set);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		close(p[1]);
		if (read(p[0], &st, 1) != 1)
			st = 1;
		_exit(st);
	}
	close(p[0]);
	setsid();
	pid = fork();
	if (pid < 0)
		_exit(1);
	if (pid > 0)
		_exit(0);
	if (chdir("/"))
		_exit(1);
	{
		int fd = open("/dev/null", O_RDWR);

		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			if (fd > 2)
				close(fd);
		}
	}
	*ready_fd = p[1];
	return 0;
}

/* Tells the waiting parent (if any) to exit with @status: 0 once serving. */
static void daemon_ready(int *ready_fd, unsigned char status, bool keep_stderr)
{
	int fd;

	if (*ready_fd < 0)
		return;
	if (write(*ready_fd, &status, 1) != 1)
		log_warn("cannot tell the parent we are ready: %m");
	close(*ready_fd);
	*ready_fd = -1;
	log_errors_to_stderr(false);
	/* --stderr in the background: the caller redirected it; otherwise nobody reads it now. */
	fd = keep_stderr ? -1 : open("/dev/null", O_WRONLY);
	if (fd >= 0) {
		dup2(fd, 2);
		close(fd);
	}
}

static void on_signal(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	struct signalfd_siginfo si;

	(void)s;
	(void)events;
	while (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			log_notice("SIGHUP: reloading %s", d->config_path);
			cfg_reload(d);
		} else {
			log_notice("%s: exiting", strsignal((int)si.ssi_signo));
			d->stop = true;
		}
	}
}

static void on_timer(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	uint64_t n, applied = ingest_applied(d->ingest);

	(void)s;
	(void)events;
	if (read(d->timerfd, &n, sizeof(n)) < 0)
		return;
	d->rate = n ? (applied - d->rate_prev_applied) / n : 0;
	d->rate_prev_applied = applied;
	ctl_progress(d);
	ctl_tick(d);
}

static void on_writer(struct lcfibd *d, struct lcfibd_source *s, uint32_t events)
{
	(void)s;
	(void)events;
	writer_reap(d);
	ctl_progress(d); /* the writer wakes the loop for progress too */
}

static struct lcfibd_source src_signal = { on_signal }, src_timer = { on_timer },
			    src_writer = { on_writer };

static int loop_init(struct lcfibd *d)
{
	struct itimerspec one_second = { { 1, 0 }, { 1, 0 } };
	sigset_t set;

	signals_block(&set);
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	d->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	d->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (d->epfd < 0 || d->sigfd < 0 || d->timerfd < 0 ||
	    timerfd_settime(d->timerfd, 0, &one_second, NULL) ||
	    lcfibd_watch(d, d->sigfd, EPOLLIN, &src_signal) ||
	    lcfibd_watch(d, d->timerfd, EPOLLIN, &src_timer)) {
		log_err("event loop: %m");
		return -1;
	}
	return 0;
}

static void loop_run(struct lcfibd *d)
{
	struct epoll_event ev[32];

	bool more = false; /* connections with frames left to serve: do not wait */

	while (!d->stop) {
		int n = epoll_wait(d->epfd, ev, 32, more ? 0 : -1);

		if (n < 0 && errno != EINTR) {
			log_err("epoll_wait: %m");
			break;
		}
		for (int i = 0; i < n; i++) {
			struct lcfibd_source *src = ev[i].data.ptr;

			src->fn(d, src, ev[i].events);
		}
		more = ctl_serve(d);
		ctl_reap(d); /* after the round: its events may name a connection it closed */
	}
}

static void shutdown_all(struct lcfibd *d, struct opts *o)
{
	if (d->listen_fd >= 0 || d->conns)
		ctl_close_all(d);
	if (d->writer) {
		/* Jobs that finished after the loop stopped: their clients are gone. */
		writer_stop(d->writer);
		d->writer = NULL; /* what the feeds ask for as they close is dropped (feed.c) */
	}
	/*
	 * The feeds' jobs have run (what they ask for now is dropped): their
	 * sockets close and their books go, before the FIB.
	 */
	feed_kernel_stop(d);
	feed_fpm_stop(d);
	http_ep_free(d->metrics);
	dcache_free(d); /* the writer has stopped and the loop reads no more */
	if (d->fib) {
		fib_reclaim_barrier(d->fib);
		fib_destroy(d->fib);
	}
	feed_file_loaded_free(d);
	cfg_fini(d);
	if (d->ly)
		ly_ctx_destroy(d->ly);
	for (int *fd = &d->epfd; fd <= &d->timerfd; fd++) {
		if (*fd >= 0)
			close(*fd);
	}
	ifname_reset();
	ingest_free(d->ingest);
	for (unsigned int i = 0; i < 6; i++)
		free(o->owned[i]);
}

int main(int argc, char **argv)
{
	struct lcfibd d = {
		.log_level_opt = -1, .epfd = -1, .sigfd = -1, .timerfd = -1, .listen_fd = -1
	};
	struct opts o = { 0 };
	int ready_fd = -1, status = 1, ret;
	bool socket_given, pidfile_given, config_given;
	int pid_fd = -1;

	sigset_t set;

	signals_block(&set);
	if (parse_args(&d, &o, argc, argv))
		return 2;
	d.check_only = o.check_only;
	socket_given = d.socket_path != NULL;
	pidfile_given = d.pidfile != NULL;
	config_given = d.config_path != NULL;
	if (defaults(&d, &o)) {
		for (unsigned int i = 0; i < 6; i++)
			free(o.owned[i]);
		return 1;
	}
	log_open(o.log_dest == 1 || (o.log_dest == 0 && !d.foreground && !o.check_only));
	/* Logging to syslog: start-up errors also go to the caller (not twice to journald). */
	if (o.log_dest != 2 && !d.foreground && !getenv("JOURNAL_STREAM"))
		log_errors_to_stderr(true);
	if (d.log_level_opt >= 0)
		log_set_level(d.log_level_opt);
	/*
	 * Until daemonize(): no thread, no liburcu registration (see there).
	 * libyang's context, the config's checks and the sockets a feed opens
	 * in prepare() are plain memory and descriptors: they survive the fork.
	 */
	d.ingest = ingest_new();
	d.metrics = http_ep_new(&d, state_metrics);
	if (!d.ingest || !d.metrics || dcache_init(&d)) {
		log_err("out of memory");
		goto out;
	}
	if (yang_init(&d) || cfg_check_handlers(&d) || rpc_init(&d) || cfg_init(&d, o.check_only))
		goto out;
	if (o.check_only) {
		status = 0;
		goto out;
	}
	if ((socket_given && dir_given_exists("-s", d.socket_path)) ||
	    (pidfile_given && dir_given_exists("-p", d.pidfile)) ||
	    (config_given && dir_given_exists("-c", d.config_path)))
		goto out;
	ret = mkdir_for(d.socket_path);
	d.socket_dir_ours = ret > 0 || (!socket_given && ret == 0);
	if (ret < 0 || mkdir_for(d.pidfile) < 0 || mkdir_for(d.config_path) < 0)
		goto out;
	if (!d.foreground && daemonize(&ready_fd)) {
		log_err("cannot go to the background: %m");
		goto out;
	}
	/* The FIB starts its reclamation thread: in the process that serves. */
	d.fib = fib_new();
	if (!d.fib) {
		log_err("cannot make the FIB: %m");
		goto out;
	}
	/*
	 * A bulk load's end builds the new trie on two threads where there
	 * are two CPUs: a route file's parser thread is done by then.
	 */
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1)
		fib_set_build_threads(d.fib, 2);
	clock_gettime(CLOCK_MONOTONIC, &d.started);
	/* The pid file first: a second lcfibd given it stops before touching the socket. */
	pid_fd = pidfile_take(d.pidfile);
	if (pid_fd < 0 || loop_init(&d) || ctl_listen(&d))
		goto out;
	d.writer = writer_start(&d);
	if (!d.writer || lcfibd_watch(&d, writer_event_fd(d.writer), EPOLLIN, &src_writer)) {
		log_err("cannot start the writer thread: %m");
		goto out;
	}
	fib_reader_register();
	/* The feeds need the loop and the writer: the config applies once both run. */
	cfg_apply_all(&d);
	log_notice("lcfibd %s serving on %s (state %s, sync-mem %llu)", PACKAGE_VERSION,
		   d.socket_path, d.state_dir, (unsigned long long)fib_get_sync_mem(d.fib));
	cfg_load_route_files(&d);
	daemon_ready(&ready_fd, 0, o.log_dest == 2);
	loop_run(&d);
	status = 0;
	ctl_close_all(&d);
	fib_reader_unregister();
out:
	daemon_ready(&ready_fd, (unsigned char)status, o.log_dest == 2);
	if (pid_fd >= 0) {
		unlink(d.pidfile); /* still locked: no other lcfibd took it meanwhile */
		close(pid_fd);
	}
	shutdown_all(&d, &o);
	log_close();
	return status;
}
