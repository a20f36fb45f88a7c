/* SPDX-License-Identifier: MIT */
/*
 * Memory of one FIB, accounted per object class.
 *
 * Small objects (up to MEM_SLAB_MAX bytes) come from size-class slabs of
 * 64 KiB chunks: no per-object header, so a 24-byte leaf costs 24 bytes.
 * Larger ones come from malloc. Every allocation names its class, so the
 * daemon can say where its memory is (the spirit of BIRD's `show memory`).
 *
 * Threads: mem_alloc() is for the one writer thread; mem_free() may be
 * called from any thread (the reclaimer frees what the writer retired).
 */
#ifndef LCFIB_MEM_H
#define LCFIB_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "lib/stats.h" /* enum mem_class, struct mem_stats */

#define MEM_SLAB_MAX 512 /* largest size served from slabs */

struct mem;

/* Returns NULL with errno set. */
struct mem *mem_new(void);
/* Frees every chunk; live objects become invalid. No concurrent users. */
void mem_destroy(struct mem *m);

/* Writer thread only. Returns NULL (errno ENOMEM) on failure. Memory is not zeroed. */
void *mem_alloc(struct mem *m, enum mem_class c, size_t size);
/* Any thread. @size must be the size passed to mem_alloc(). */
void mem_free(struct mem *m, enum mem_class c, void *p, size_t size);

void mem_get_stats(const struct mem *m, struct mem_stats *st);
const char *mem_class_name(enum mem_class c);

#endif
