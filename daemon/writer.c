/* SPDX-License-Identifier: MIT */
/*
 * The writer thread: the one thread that changes the FIB. The loop queues
 * jobs; they run in order; finished ones go back through an eventfd.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <urcu/uatomic.h>

#include "daemon/lcfibd.h"
#include "daemon/log.h"
#include "daemon/writer.h"
#include "lib/routefile.h"

struct writer {
	struct lcfibd *d;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct writer_job *todo, **todo_tail; /* under lock */
	struct writer_job *done, **done_tail; /* under lock */
	struct writer_job *running;           /* under lock */
	unsigned int pending;                 /* queued or running (uatomic) */
	bool stopping;
	int evfd;
};

void writer_kick(struct writer *w)
{
	uint64_t one = 1;

	if (write(w->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("%s: eventfd: %m", __func__);
}

static struct writer_job *writer_next(struct writer *w)
{
	struct writer_job *j;

	pthread_mutex_lock(&w->lock);
	while (!w->todo && !w->stopping)
		pthread_cond_wait(&w->cond, &w->lock);
	j = w->todo;
	if (j) {
		w->todo = j->next;
		if (!w->todo)
			w->todo_tail = &w->todo;
	}
	w->running = j;
	pthread_mutex_unlock(&w->lock);
	return j;
}

static void writer_finish(struct writer *w, struct writer_job *j)
{
	bool idle;

	pthread_mutex_lock(&w->lock);
	w->running = NULL;
	j->next = NULL;
	*w->done_tail = j;
	w->done_tail = &j->next;
	idle = !w->todo;
	pthread_mutex_unlock(&w->lock);
	/* The job's answer first: the flush may trim the allocator (50 ms after a full load). */
	writer_kick(w);
	/* Going idle: the last few retired objects go to the background thread. */
	if (idle)
		fib_reclaim_flush(w->d->fib);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct writer_job *j;

	fib_reader_register();
	while ((j = writer_next(w))) {
		j->run(w->d, j);
		writer_finish(w, j);
	}
	fib_reader_unregister();
	return NULL;
}

struct writer *writer_start(struct lcfibd *d)
{
	struct writer *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return NULL;
	w->d = d;
	w->todo_tail = &w->todo;
	w->done_tail = &w->done;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->evfd < 0)
		goto free_w;
	ret = pthread_create(&w->thread, NULL, writer_main, w);
	if (ret) {
		errno = ret;
		goto close_fd;
	}
	return w;
close_fd:
	close(w->evfd);
free_w:
	free(w);
	return NULL;
}

void writer_stop(struct writer *w)
{
	pthread_mutex_lock(&w->lock);
	if (w->running)
		uatomic_or(&w->running->cancel, ROUTEFILE_ABANDON);
	for (struct writer_job *j = w->todo; j; j = j->next)
		uatomic_or(&j->cancel, ROUTEFILE_ABANDON);
	w->stopping = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	/* What finished after the loop stopped: done() with no client left to answer. */
	for (struct writer_job *j = w->done, *next; j; j = next) {
		next = j->next;
		j->done(w->d, j);
	}
	close(w->evfd);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w);
}

void writer_submit(struct writer *w, struct writer_job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&w->lock);
	*w->todo_tail = j;
	w->todo_tail = &j->next;
	uatomic_inc(&w->pending);
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int writer_event_fd(const struct writer *w)
{
	return w->evfd;
}

bool writer_busy(const struct writer *w)
{
	return uatomic_read(&w->pending) > 0;
}

void writer_reap(struct lcfibd *d)
{
	struct writer *w = d->writer;
	struct writer_job *j, *next;
	uint64_t n;

	if (read(w->evfd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn("%s: eventfd: %m", __func__);
	pthread_mutex_lock(&w->lock);
	j = w->done;
	w->done = NULL;
	w->done_tail = &w->done;
	pthread_mutex_unlock(&w->lock);
	for (; j; j = next) {
		next = j->next;
		uatomic_dec(&w->pending);
		j->done(d, j);
	}
}
