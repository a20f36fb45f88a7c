/* SPDX-License-Identifier: MIT */
/*
 * Memory of one FIB, accounted per object class.
 *
 * Small objects (up to MEM_SLAB_MAX bytes) come from size-class slabs of
 * 64 KiB chunks: no per-object header, so a 24-byte leaf costs 24 bytes.
 * Larger ones come from malloc, and those of 2 MiB and more from mappings
 * of their own, on huge pages. Every allocation names its class, so the
 * daemon can say where its memory is (the spirit of BIRD's `show memory`).
 * mem_trim() gives the chunks whose objects are all free back to the
 * system (madvise MADV_DONTNEED) and keeps them for reuse by any size.
 *
 * Threads: mem_alloc() is for the one writer thread; mem_free() may be
 * called from any thread (the reclaimer frees what the writer retired);
 * mem_trim() and mem_trim_due() are the writer's too. An arena lets one
 * more thread allocate for a while (mem_arena_new()).
 */
#ifndef LCFIB_MEM_H
#define LCFIB_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/stats.h" /* enum mem_class, struct mem_stats */

/*
 * The largest size served from slabs: an IPv4 node of 6 bits (600 bytes)
 * too, of which the full view has thousands. From glibc's arenas, those a
 * flush freed were not all given back, and a reload kept 1 MiB more.
 */
#define MEM_SLAB_MAX 1024

struct mem;

/* Returns NULL with errno set. */
struct mem *mem_new(void);
/* Frees every chunk; live objects become invalid. No concurrent users. */
void mem_destroy(struct mem *m);

/* Writer thread only. Returns NULL (errno ENOMEM) on failure. Memory is not zeroed. */
void *mem_alloc(struct mem *m, enum mem_class c, size_t size);
/* Any thread. @size must be the size passed to mem_alloc(). */
void mem_free(struct mem *m, enum mem_class c, void *p, size_t size);

/* An object to free: what mem_free() takes. */
struct mem_obj {
	void *p;
	uint32_t size;
	uint32_t cls; /* enum mem_class */
};

/*
 * Any thread. mem_free() of each of @n objects, with the shared counters
 * and each size's free list updated once per call rather than once per
 * object (the reclaimer frees a million retired nodes after a full load).
 */
void mem_free_many(struct mem *m, const struct mem_obj *v, size_t n);

/*
 * Writer. Gives back every slab chunk whose objects are all free (only
 * objects past their grace period are on the free lists, so no reader can
 * reach them), and malloc's free memory (glibc's malloc_trim). Walks the
 * free lists: time in proportion to the free objects. Returns the bytes
 * given back. In a malloc-only (sanitizer) build it only counts the call.
 */
uint64_t mem_trim(struct mem *m);
/*
 * Writer: whether a trim is worth its walk -- free slab bytes over a fifth
 * of the slab memory held, and 4 MiB more than after the last trim --
 * once @coming more bytes are freed (retired ones waiting for readers).
 */
bool mem_trim_due(struct mem *m, uint64_t coming);

/*
 * Writer: compaction. A trim gives back only wholly free chunks; objects
 * freed one by one leave chunks part used (a full table loaded one route
 * at a time held 1.38 times its live bytes). Between mem_evacuate_begin()
 * and mem_evacuate_end(), slab objects come only from chunks of new 2 MiB
 * blocks (not the given back ones: they lie in blocks given back in part,
 * on small pages): the free objects wait aside, with the tails of the
 * chunks being carved. Whatever the writer copies meanwhile
 * (lib/trie-tmpl.h builds each trie anew) leaves the old chunks to its old
 * objects and the free ones; once the old objects are freed (a grace
 * period), mem_trim() gives those chunks back. No mem_trim() in between.
 */
void mem_evacuate_begin(struct mem *m);
void mem_evacuate_end(struct mem *m);
/*
 * Writer: whether a compaction is worth it after a trim -- free slab
 * bytes still over a fifth of the slab memory held, and 4 MiB more than
 * after the last compaction (so one that could not help, the free objects
 * being of what it does not move, is not run again for nothing).
 */
bool mem_compact_due(struct mem *m);
/*
 * Writer: a compaction ended, having @moved something (then counted);
 * mem_compact_due() starts from here either way.
 */
void mem_compacted(struct mem *m, bool moved);
/*
 * A second thread's allocations while the writer allocates too (a bulk
 * load's end builds part of a trie on a helper thread). The writer makes
 * the arena and ends it; in between, one other thread allocates from it
 * with mem_arena_alloc(). The arena takes whole slab chunks, under a lock
 * the writer takes too when it needs a chunk (once per 64 KiB), and
 * carves them alone. mem_arena_end(), by the writer once the other thread
 * is done, adds the arena's counts to the writer's and gives the tails of
 * its chunks to the free lists. Objects from an arena are freed as any
 * other. No mem_trim() while an arena is open.
 */
struct mem_arena;

/* Writer. NULL (errno ENOMEM) on failure. */
struct mem_arena *mem_arena_new(struct mem *m);
/* The arena's thread. As mem_alloc(). */
void *mem_arena_alloc(struct mem_arena *a, enum mem_class c, size_t size);
/* Writer, after the arena's thread made its last call. NULL: nothing. */
void mem_arena_end(struct mem_arena *a);

void mem_get_stats(const struct mem *m, struct mem_stats *st);
const char *mem_class_name(enum mem_class c);

/*
 * Tests: of the allocations after the next @after (mem_alloc() and
 * mem_arena_alloc(), from any thread), the next @count fail (NULL, errno
 * ENOMEM), as if the memory had run out; 0, 0 ends it. Costs the paths a
 * predicted branch when off.
 */
void mem_fail_after(struct mem *m, uint64_t after, uint64_t count);
/* Tests: the allocations mem_fail_after() made fail, in all. */
uint64_t mem_failed(const struct mem *m);

#endif
