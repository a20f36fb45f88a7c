/* SPDX-License-Identifier: MIT */
/*
 * Deferred freeing of what the writer unlinks, bounded by sync-mem.
 *
 * The writer retires each object it unlinks (trie nodes, leaves, nexthops)
 * with its size. Retired bytes wait for an RCU grace period before they
 * are freed. Below sync-mem they are freed in batches by a background
 * thread, off the writer's path; when the pending bytes reach sync-mem the
 * writer itself waits for a grace period and frees them (a "forced wait"),
 * so pending memory stays below sync-mem plus the largest single object.
 * This is the user-space twin of the kernel's net.ipv4.fib_sync_mem, except
 * that everything is counted, not only replaced internal nodes, so a bulk
 * delete or a flush is bounded too.
 *
 * Threads: reclaim_retire(), reclaim_flush() and reclaim_barrier() belong
 * to the one writer thread, which must not be inside an RCU read-side
 * critical section.
 * reclaim_set_sync_mem(), reclaim_get_sync_mem() and reclaim_get_stats()
 * may be called from any thread at any time.
 */
#ifndef LCFIB_RECLAIM_H
#define LCFIB_RECLAIM_H

#include <stddef.h>
#include <stdint.h>

#include "lib/mem.h"
#include "lib/stats.h" /* struct reclaim_stats */

#define RECLAIM_SYNC_MEM_MIN     (64u * 1024) /* as net.ipv4.fib_sync_mem */
#define RECLAIM_SYNC_MEM_DEFAULT (512u * 1024)
#define RECLAIM_SYNC_MEM_MAX     (64u * 1024 * 1024)

struct reclaim;

/*
 * Starts the background freeing thread. Objects are freed into @m.
 * Returns NULL with errno set.
 */
struct reclaim *reclaim_new(struct mem *m);

/* Waits for a grace period, frees everything pending, stops the thread. */
void reclaim_destroy(struct reclaim *r);

/*
 * Writer only. @p (of class @c and @size bytes, as allocated from the mem)
 * was unlinked: no new reader can reach it. It is freed after a grace
 * period; if this retire brings the pending bytes to sync-mem, the call
 * waits for that grace period itself. Never fails.
 */
void reclaim_retire(struct reclaim *r, void *p, size_t size, enum mem_class c);

/*
 * Writer only: hands everything retired so far to the background thread.
 * Small retires are staged by the writer and handed over a few dozen at a
 * time; a writer that goes idle calls this so the last few are freed too.
 */
void reclaim_flush(struct reclaim *r);

/* Writer only: returns when everything retired before the call has been freed. */
void reclaim_barrier(struct reclaim *r);

/* Any thread: the bytes retired and not yet freed. */
uint64_t reclaim_pending_bytes(const struct reclaim *r);

/*
 * Any thread. Returns 0, or -ERANGE (nothing changed) when @bytes is
 * outside RECLAIM_SYNC_MEM_MIN..RECLAIM_SYNC_MEM_MAX. Honoured at the
 * writer's next retire.
 */
int reclaim_set_sync_mem(struct reclaim *r, uint64_t bytes);
uint64_t reclaim_get_sync_mem(const struct reclaim *r);

void reclaim_get_stats(const struct reclaim *r, struct reclaim_stats *st);

#endif
