/* SPDX-License-Identifier: MIT */
/*
 * Counters of route updates from every source (the feeds, the control
 * socket, route files), and the route-file load in progress and the last
 * one, for the state and the load's progress notes. The one owner of
 * these: the writer writes them, the loop reads them, through this API.
 */
#ifndef LCFIB_DAEMON_INGEST_H
#define LCFIB_DAEMON_INGEST_H

#include <stdint.h>

struct ingest;

/* A load that finished: what state ingest/last-load shows. */
struct ingest_load {
	uint64_t routes, skipped, duration_us, rate;
	/* where the time went: see struct routefile_result */
	uint64_t parse_us, waited_us, rebalance_us;
};

/* What ingest_get() copies out. */
struct ingest_state {
	uint64_t applied, rejected;
	uint64_t loads, loads_failed, loads_not_recorded;
	char last_error[512];
	/* the load in progress (phase NULL: none) */
	const void *job; /* the writer job that runs it, to find who asked */
	const char *phase;
	char file[256];
	uint64_t done, total;
	uint64_t rate; /* of the current phase, units per second */
	/* the last load that finished ("" file: none yet) */
	char last_file[256];
	struct ingest_load last;
};

/* Loop thread. NULL with errno set. */
struct ingest *ingest_new(void);
void ingest_free(struct ingest *in);

/* Any thread: @applied and @rejected route updates more. */
void ingest_count(struct ingest *in, uint64_t applied, uint64_t rejected);
/* Any thread: the updates applied so far (for the rate). */
uint64_t ingest_applied(const struct ingest *in);
/* Any thread: why the last update or load failed. */
void ingest_set_error(struct ingest *in, const char *msg);

/*
 * Writer thread: a load of @file by @job starts; its phases ("parsing",
 * "applying") with @done of @total units; it ends (done or not).
 */
void ingest_load_begin(struct ingest *in, const void *job, const char *file);
void ingest_load_phase(struct ingest *in, const char *phase, uint64_t done, uint64_t total);
void ingest_load_end(struct ingest *in);
/* Loop thread: a load finished: counted, and kept as the last one, or its error. */
void ingest_load_failed(struct ingest *in, const char *error);
void ingest_load_succeeded(struct ingest *in, const char *file, const struct ingest_load *l);
/* Loop thread: a load succeeded but the config does not name its file. */
void ingest_load_not_recorded(struct ingest *in);

/* Any thread: a copy of everything above. */
void ingest_get(struct ingest *in, struct ingest_state *st);

#endif
