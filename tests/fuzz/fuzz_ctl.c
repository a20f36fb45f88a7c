/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: what a peer writes to lcfibd's control socket, served
 * by the daemon's own framing and request dispatcher (daemon/ctl.c: gets
 * through libyang's XPath, the RPCs of rpc.c, the state of state.c) on a
 * daemon whose state lives in memory: the lcfib module, the default
 * configuration, and a FIB with a few routes. The peer is a reader, as
 * any local user who can reach the socket; edits and loads are refused
 * before they reach the writer. Checked beyond the sanitizers: the
 * connection is gone and counted out after each input, and the FIB's
 * invariants hold.
 *
 * Environment: LCFIB_YANG_DIR, the directory of lcfib.yang (run.sh sets it).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "daemon/cfg.h"
#include "daemon/ctl.h"
#include "daemon/dcache.h"
#include "daemon/http.h"
#include "daemon/ingest.h"
#include "daemon/lcfibd.h"
#include "daemon/rpc.h"
#include "daemon/state.h"
#include "daemon/log.h"
#include "lib/routefile.h"
#include "tests/fuzz/fuzz-assert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Routes to list and look up: each kind the listing prints differently. */
static const char fuzz_routes[] = "route add 10.0.0.0/8 via 192.0.2.1 dev lo\n"
				  "route add blackhole 10.1.0.0/16 metric 5\n"
				  "route add 10.2.0.0/16 nexthop via 192.0.2.1 dev lo weight 2 "
				  "nexthop via 192.0.2.2 dev lo\n"
				  "route add 2001:db8::/32 dev lo\n"
				  "route add unreachable 2001:db8:1::/48\n"
				  "route add local 127.0.0.0/8 dev lo table local\n";

static struct lcfibd *fuzz_daemon(void)
{
	static struct lcfibd d = { .epfd = -1, .sigfd = -1, .timerfd = -1, .listen_fd = -1 };
	struct routefile_opts o = { .format = ROUTEFILE_BATCH, .family = AF_UNSPEC };
	struct errbuf err;
	struct routefile *rf;

	if (d.ly)
		return &d;
	log_set_level(LOG_EMERG); /* each bad frame is a warning: not millions of them */
	d.yang_dir = getenv("LCFIB_YANG_DIR");
	d.config_path = "/nonexistent/lcfibd.json"; /* the defaults */
	d.state_dir = "/nonexistent";
	d.socket_path = "/nonexistent/sock";
	d.ingest = ingest_new();
	FUZZ_ASSERT(d.ingest);
	d.metrics = http_ep_new(&d, state_metrics); /* off: the config's default */
	FUZZ_ASSERT(d.metrics);
	FUZZ_ASSERT(dcache_init(&d) == 0); /* disabled: the config's default */
	clock_gettime(CLOCK_MONOTONIC, &d.started);
	ly_log_options(LY_LOSTORE_LAST);
	FUZZ_ASSERT(d.yang_dir);
	FUZZ_ASSERT(ly_ctx_new(d.yang_dir, LY_CTX_DISABLE_SEARCHDIR_CWD | LY_CTX_SET_PRIV_PARSED,
			       &d.ly) == LY_SUCCESS);
	d.mod = ly_ctx_load_module(d.ly, "lcfib", NULL, NULL);
	FUZZ_ASSERT(d.mod);
	FUZZ_ASSERT(rpc_init(&d) == 0);
	FUZZ_ASSERT(cfg_init(&d, false) == 0);
	/* This thread is the FIB's writer (here) and the loop, a reader. */
	fib_reader_register();
	d.fib = fib_new();
	FUZZ_ASSERT(d.fib);
	rf = routefile_new(&o);
	FUZZ_ASSERT(rf);
	FUZZ_ASSERT(routefile_feed(rf, fuzz_routes, sizeof(fuzz_routes) - 1, true) == 0);
	if (routefile_apply(rf, d.fib, NULL, NULL, NULL, &err)) {
		fprintf(stderr, "fuzz_ctl: the routes: %s\n", err.msg);
		abort();
	}
	routefile_free(rf);
	return &d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lcfibd *d = fuzz_daemon();
	struct errbuf err;

	ctl_serve_bytes(d, false, data, size);
	FUZZ_ASSERT(d->conns == NULL && d->ctl.clients == 0);
	FUZZ_ASSERT(fib_check(d->fib, &err) == 0);
	return 0;
}
