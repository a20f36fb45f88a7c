/* SPDX-License-Identifier: MIT */
/*
 * The counters of route updates, and the load in progress and the last:
 * counters that only grow are atomics (liburcu's uatomic); what is
 * read as a whole (a load's file, phase and progress) is under a lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu/uatomic.h>

#include "daemon/ingest.h"

struct ingest {
	uint64_t applied, rejected; /* uatomic */
	pthread_mutex_t lock;       /* everything below */
	uint64_t loads, loads_failed, loads_not_recorded;
	char last_error[512];
	const void *job;
	const char *phase; /* NULL: no load runs */
	struct timespec phase_start;
	char file[256];
	uint64_t done, total;
	char last_file[256];
	struct ingest_load last;
};

struct ingest *ingest_new(void)
{
	struct ingest *in = calloc(1, sizeof(*in));

	if (in)
		pthread_mutex_init(&in->lock, NULL);
	return in;
}

void ingest_free(struct ingest *in)
{
	if (!in)
		return;
	pthread_mutex_destroy(&in->lock);
	free(in);
}

void ingest_count(struct ingest *in, uint64_t applied, uint64_t rejected)
{
	if (applied)
		uatomic_add(&in->applied, applied);
	if (rejected)
		uatomic_add(&in->rejected, rejected);
}

uint64_t ingest_applied(const struct ingest *in)
{
	return uatomic_read(&in->applied);
}

void ingest_set_error(struct ingest *in, const char *msg)
{
	pthread_mutex_lock(&in->lock);
	snprintf(in->last_error, sizeof(in->last_error), "%s", msg);
	pthread_mutex_unlock(&in->lock);
}

void ingest_load_begin(struct ingest *in, const void *job, const char *file)
{
	pthread_mutex_lock(&in->lock);
	snprintf(in->file, sizeof(in->file), "%s", file);
	in->job = job;
	pthread_mutex_unlock(&in->lock);
}

void ingest_load_phase(struct ingest *in, const char *phase, uint64_t done, uint64_t total)
{
	pthread_mutex_lock(&in->lock);
	if (in->phase != phase)
		clock_gettime(CLOCK_MONOTONIC, &in->phase_start);
	in->phase = phase;
	in->done = done;
	in->total = total;
	pthread_mutex_unlock(&in->lock);
}

void ingest_load_end(struct ingest *in)
{
	pthread_mutex_lock(&in->lock);
	in->phase = NULL;
	in->job = NULL;
	pthread_mutex_unlock(&in->lock);
}

void ingest_load_failed(struct ingest *in, const char *error)
{
	pthread_mutex_lock(&in->lock);
	in->loads_failed++;
	snprintf(in->last_error, sizeof(in->last_error), "%s", error);
	pthread_mutex_unlock(&in->lock);
}

void ingest_load_succeeded(struct ingest *in, const char *file, const struct ingest_load *l)
{
	pthread_mutex_lock(&in->lock);
	in->loads++;
	snprintf(in->last_file, sizeof(in->last_file), "%s", file);
	in->last = *l;
	pthread_mutex_unlock(&in->lock);
}

void ingest_load_not_recorded(struct ingest *in)
{
	pthread_mutex_lock(&in->lock);
	in->loads_not_recorded++;
	pthread_mutex_unlock(&in->lock);
}

/* Units per second since @since. */
static uint64_t ingest_rate(uint64_t done, const struct timespec *since)
{
	struct timespec now;
	int64_t us;

	clock_gettime(CLOCK_MONOTONIC, &now);
	us = (int64_t)(now.tv_sec - since->tv_sec) * 1000000 +
	     (now.tv_nsec - since->tv_nsec) / 1000;
	return us > 0 ? (uint64_t)((double)done * 1e6 / (double)us) : 0;
}

void ingest_get(struct ingest *in, struct ingest_state *st)
{
	st->applied = uatomic_read(&in->applied);
	st->rejected = uatomic_read(&in->rejected);
	pthread_mutex_lock(&in->lock);
	st->loads = in->loads;
	st->loads_failed = in->loads_failed;
	st->loads_not_recorded = in->loads_not_recorded;
	memcpy(st->last_error, in->last_error, sizeof(st->last_error));
	st->job = in->job;
	st->phase = in->phase;
	memcpy(st->file, in->file, sizeof(st->file));
	st->done = in->done;
	st->total = in->total;
	st->rate = in->phase ? ingest_rate(in->done, &in->phase_start) : 0;
	memcpy(st->last_file, in->last_file, sizeof(st->last_file));
	st->last = in->last;
	pthread_mutex_unlock(&in->lock);
}
