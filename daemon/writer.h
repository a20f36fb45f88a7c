/* SPDX-License-Identifier: MIT */
/*
 * The writer thread: the one thread that changes the FIB. The loop queues
 * jobs; they run in order; finished ones come back through an eventfd.
 */
#ifndef LCFIB_DAEMON_WRITER_H
#define LCFIB_DAEMON_WRITER_H

#include <stdbool.h>
#include <stdint.h>

struct lcfibd;
struct ctl_conn;
struct writer;

/*
 * A unit of work for the writer thread. run() executes there; done()
 * then runs on the loop thread. The loop allocates and frees jobs.
 */
struct writer_job {
	void (*run)(struct lcfibd *d, struct writer_job *j);
	void (*done)(struct lcfibd *d, struct writer_job *j);
	struct writer_job *next;
	struct ctl_conn *conn; /* who asked, or NULL (start-up, gone) */
	uint32_t req_id;
	/*
	 * ROUTEFILE_CANCEL: the client went away; ROUTEFILE_ABANDON: the
	 * daemon exits. Set by the loop (uatomic_or), read by run().
	 */
	int cancel;
};

struct writer *writer_start(struct lcfibd *d);
/*
 * Loop thread, after every client is gone: runs the jobs still queued,
 * stops the thread, and finishes them (done() with no client). The
 * running job and the queued ones are marked ROUTEFILE_ABANDON first, so
 * a load in progress or waiting ends at once instead of delaying the exit.
 */
void writer_stop(struct writer *w);
void writer_submit(struct writer *w, struct writer_job *j);
/* The eventfd the loop polls for finished jobs and progress. */
int writer_event_fd(const struct writer *w);
/* Loop thread: calls done() of every finished job. */
void writer_reap(struct lcfibd *d);
/* Writer thread: wakes the loop (progress to report). */
void writer_kick(struct writer *w);
/* Whether jobs are queued or running. */
bool writer_busy(const struct writer *w);

#endif
