/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu/arch.h>
#include <urcu/uatomic.h>
#include <urcu/urcu-memb.h>

#include "lib/reclaim.h"

/*
 * Retired objects are recorded in batches outside the objects themselves,
 * so nothing in the trie pays for an rcu_head: 16 bytes of bookkeeping
 * exist only while an object waits for its grace period (a struct
 * mem_obj each, what mem_free_many() takes).
 */
#define RECLAIM_BATCH_ITEMS 1023 /* a batch is 16 KiB */

struct reclaim_batch {
	struct reclaim_batch *next;
	uint32_t n;
	struct mem_obj item[RECLAIM_BATCH_ITEMS];
};

/*
 * The writer stages small retires and moves them to the shared list this
 * many at a time, so the lock is not taken per object; bigger objects, a
 * forced wait, a flush or a barrier move them at once. At most
 * RECLAIM_STAGE_ITEMS small objects wait for the writer's next retire.
 */
#define RECLAIM_STAGE_ITEMS 32
#define RECLAIM_STAGE_BIG 4096

/* Background freeing starts once this share of sync-mem waits, or after RECLAIM_LINGER_NS. */
#define RECLAIM_WAKE_DIVISOR 2
#define RECLAIM_LINGER_NS    (10 * 1000 * 1000)

struct reclaim {
	struct mem *mem;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* background thread: work, flush or stop */
	pthread_cond_t done; /* a taken list was freed */

	/* Under lock. */
	struct reclaim_batch *open; /* retired, not yet taken; head is being filled */
	uint64_t open_bytes;
	unsigned int inflight; /* lists taken and not yet freed, by any thread */

	/* Writer only. */
	struct mem_obj stage[RECLAIM_STAGE_ITEMS];
	unsigned int n_stage;
	bool flush;            /* take the open list now */
	bool stop;

	/* Written by the writer (sync_mem by any thread); read anywhere: uatomic. */
	uint64_t sync_mem __attribute__((aligned(64)));
	uint64_t forced_waits, wait_ns_total, wait_ns_max;
	uint64_t retired_bytes, peak_pending, max_object, retired_objects;
	/* Written by whoever frees, on a line of its own: uatomic. */
	uint64_t freed_bytes __attribute__((aligned(64)));
	uint64_t background_batches;
};

static uint64_t reclaim_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void reclaim_count_freed(struct reclaim *r, uint64_t bytes)
{
	uatomic_add(&r->freed_bytes, bytes);
}

/* Call after a grace period that began after every object in @b was retired. */
static void reclaim_free_batches(struct reclaim *r, struct reclaim_batch *b)
{
	struct reclaim_batch *next;
	uint64_t bytes = 0;

	for (; b; b = next) {
		next = b->next;
		for (uint32_t i = 0; i < b->n; i++)
			bytes += b->item[i].size;
		mem_free_many(r->mem, b->item, b->n);
		mem_free(r->mem, MEM_RECLAIM, b, sizeof(*b));
	}
	reclaim_count_freed(r, bytes);
}

/* Takes the open list, to free after a grace period. Call with the lock held. */
static struct reclaim_batch *reclaim_take_locked(struct reclaim *r)
{
	struct reclaim_batch *b = r->open;

	r->open = NULL;
	r->open_bytes = 0;
	r->flush = false;
	if (b)
		r->inflight++;
	return b;
}

/*
 * Writer, after a grace period: frees what is still staged (what moving to
 * the shared list could not take for want of memory).
 */
static void reclaim_free_stage(struct reclaim *r)
{
	uint64_t bytes = 0;

	for (unsigned int i = 0; i < r->n_stage; i++)
		bytes += r->stage[i].size;
	mem_free_many(r->mem, r->stage, r->n_stage);
	r->n_stage = 0;
	reclaim_count_freed(r, bytes);
}

/*
 * Writer: moves the staged items to the open list. Call with the lock
 * held. Items that find no room (no memory for a batch) stay staged, for
 * reclaim_free_stage() after a forced grace period; returns -ENOMEM then.
 */
static int reclaim_unstage_locked(struct reclaim *r)
{
	unsigned int i;

	for (i = 0; i < r->n_stage; i++) {
		struct reclaim_batch *b = r->open;

		if (!b || b->n == RECLAIM_BATCH_ITEMS) {
			b = mem_alloc(r->mem, MEM_RECLAIM, sizeof(*b));
			if (!b)
				break;
			b->n = 0;
			b->next = r->open;
			r->open = b;
		}
		b->item[b->n++] = r->stage[i];
		r->open_bytes += r->stage[i].size;
	}
	r->n_stage -= i;
	memmove(r->stage, r->stage + i, r->n_stage * sizeof(r->stage[0]));
	return r->n_stage ? -ENOMEM : 0;
}

/* A taken list was freed. Call with the lock held. */
static void reclaim_done_locked(struct reclaim *r)
{
	r->inflight--;
	pthread_cond_broadcast(&r->done);
}

/*
 * Waits for a grace period, frees @b (taken with reclaim_take_locked(), or
 * NULL), then waits for every list other threads took: everything retired
 * before the call is then freed.
 */
static void reclaim_sync_and_free(struct reclaim *r, struct reclaim_batch *b)
{
	urcu_memb_synchronize_rcu();
	reclaim_free_batches(r, b);
	reclaim_free_stage(r);
	pthread_mutex_lock(&r->lock);
	if (b)
		reclaim_done_locked(r);
	while (r->inflight)
		pthread_cond_wait(&r->done, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

static void *reclaim_thread(void *arg)
{
	struct reclaim *r = arg;
	struct reclaim_batch *b;
	struct timespec until;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (!r->stop && !r->open)
			pthread_cond_wait(&r->wake, &r->lock);
		if (r->stop)
			break;
		/* Let a batch gather, unless enough waits already or a flush asks. */
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += RECLAIM_LINGER_NS;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (!r->stop && !r->flush && r->open &&
		       r->open_bytes < uatomic_read(&r->sync_mem) / RECLAIM_WAKE_DIVISOR) {
			if (pthread_cond_timedwait(&r->wake, &r->lock, &until) == ETIMEDOUT)
				break;
		}
		if (r->stop)
			break;
		b = reclaim_take_locked(r);
		if (!b)
			continue;
		pthread_mutex_unlock(&r->lock);

		urcu_memb_synchronize_rcu();
		reclaim_free_batches(r, b);
		uatomic_inc(&r->background_batches);

		pthread_mutex_lock(&r->lock);
		reclaim_done_locked(r);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

struct reclaim *reclaim_new(struct mem *m)
{
	struct reclaim *r = calloc(1, sizeof(*r));
	pthread_condattr_t ca;
	int err;

	if (!r)
		return NULL;
	r->mem = m;
	r->sync_mem = RECLAIM_SYNC_MEM_DEFAULT;
	pthread_mutex_init(&r->lock, NULL);
	/* The background thread's timed waits count in CLOCK_MONOTONIC. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&r->done, NULL);
	err = pthread_create(&r->thread, NULL, reclaim_thread, r);
	if (err) {
		pthread_cond_destroy(&r->done);
		pthread_cond_destroy(&r->wake);
		pthread_mutex_destroy(&r->lock);
		free(r);
		errno = err;
		return NULL;
	}
	return r;
}

/* The writer waits for readers and frees @b itself, and what the background thread holds. */
static void reclaim_forced_wait(struct reclaim *r, struct reclaim_batch *b)
{
	uint64_t t0 = reclaim_now_ns(), dt, max;

	reclaim_sync_and_free(r, b);

	dt = reclaim_now_ns() - t0;
	uatomic_inc(&r->forced_waits);
	uatomic_add(&r->wait_ns_total, dt);
	max = uatomic_read(&r->wait_ns_max);
	if (dt > max)
		uatomic_set(&r->wait_ns_max, dt);
}

/* Writer: counts a retire. Its counters have one writer: a set, not an add, suffices. */
static void reclaim_note_retired(struct reclaim *r, size_t size)
{
	uint64_t retired = r->retired_bytes + size;
	uint64_t pending;

	uatomic_set(&r->retired_bytes, retired);
	uatomic_set(&r->retired_objects, r->retired_objects + 1);
	pending = retired - uatomic_read(&r->freed_bytes);
	if (pending > r->peak_pending)
		uatomic_set(&r->peak_pending, pending);
	if (size > r->max_object)
		uatomic_set(&r->max_object, size);
}

/* Freed first: what is freed was retired before, so the difference is never negative. */
uint64_t reclaim_pending_bytes(const struct reclaim *r)
{
	uint64_t freed = uatomic_read(&r->freed_bytes);

	cmm_smp_rmb();
	return uatomic_read(&r->retired_bytes) - freed;
}

void reclaim_retire(struct reclaim *r, void *p, size_t size, enum mem_class c)
{
	uint64_t sync_mem = uatomic_read(&r->sync_mem);
	struct reclaim_batch *b;
	bool over, was_empty;

	r->stage[r->n_stage++] = (struct mem_obj){ .p = p, .size = (uint32_t)size, .cls = c };
	reclaim_note_retired(r, size);
	over = reclaim_pending_bytes(r) >= sync_mem;
	if (!over && r->n_stage < RECLAIM_STAGE_ITEMS && size < RECLAIM_STAGE_BIG)
		return;

	pthread_mutex_lock(&r->lock);
	was_empty = !r->open;
	if (reclaim_unstage_locked(r) || over) {
		/* At sync-mem, or no memory to record it: wait for readers, free it all. */
		b = reclaim_take_locked(r);
		pthread_mutex_unlock(&r->lock);
		reclaim_forced_wait(r, b);
		return;
	}
	if (was_empty || r->open_bytes >= sync_mem / RECLAIM_WAKE_DIVISOR)
		pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
}

void reclaim_flush(struct reclaim *r)
{
	pthread_mutex_lock(&r->lock);
	if (reclaim_unstage_locked(r)) {
		struct reclaim_batch *b = reclaim_take_locked(r);

		pthread_mutex_unlock(&r->lock);
		reclaim_forced_wait(r, b);
		return;
	}
	if (r->open) {
		r->flush = true;
		pthread_cond_signal(&r->wake);
	}
	pthread_mutex_unlock(&r->lock);
}

void reclaim_barrier(struct reclaim *r)
{
	struct reclaim_batch *b;

	pthread_mutex_lock(&r->lock);
	reclaim_unstage_locked(r); /* what finds no room is freed after the grace period */
	b = reclaim_take_locked(r);
	pthread_mutex_unlock(&r->lock);
	reclaim_sync_and_free(r, b);
}

void reclaim_destroy(struct reclaim *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	reclaim_barrier(r);
	pthread_cond_destroy(&r->done);
	pthread_cond_destroy(&r->wake);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

int reclaim_set_sync_mem(struct reclaim *r, uint64_t bytes)
{
	if (bytes < RECLAIM_SYNC_MEM_MIN || bytes > RECLAIM_SYNC_MEM_MAX)
		return -ERANGE;
	uatomic_set(&r->sync_mem, bytes);
	return 0;
}

uint64_t reclaim_get_sync_mem(const struct reclaim *r)
{
	return uatomic_read(&r->sync_mem);
}

void reclaim_get_stats(const struct reclaim *r, struct reclaim_stats *st)
{
	uint64_t freed = uatomic_read(&r->freed_bytes);

	cmm_smp_rmb(); /* freed first, as reclaim_pending_bytes() */
	st->retired_bytes = uatomic_read(&r->retired_bytes);
	st->freed_bytes = freed;
	st->pending_bytes = st->retired_bytes - freed;
	st->sync_mem = uatomic_read(&r->sync_mem);
	st->forced_waits = uatomic_read(&r->forced_waits);
	st->wait_ns_total = uatomic_read(&r->wait_ns_total);
	st->wait_ns_max = uatomic_read(&r->wait_ns_max);
	st->peak_pending = uatomic_read(&r->peak_pending);
	st->max_object = uatomic_read(&r->max_object);
	st->retired_objects = uatomic_read(&r->retired_objects);
	st->background_batches = uatomic_read(&r->background_batches);
}
