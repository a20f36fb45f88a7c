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

enum mem_class {
	MEM_TNODE,   /* trie internal nodes */
	MEM_LEAF,    /* trie leaves with their routes */
	MEM_NH,      /* nexthop objects */
	MEM_NH_INFO, /* nexthop contents (paths, group members) */
	MEM_TABLE,   /* tables and their tries */
	MEM_HASH,    /* nexthop hash tables */
	MEM_RECLAIM, /* bookkeeping of retired objects */
	MEM_CLASS_MAX,
};

#define MEM_SLAB_MAX 512 /* largest size served from slabs */

struct mem;

struct mem_class_stats {
	uint64_t objects; /* live objects */
	uint64_t bytes;   /* live bytes (sizes rounded to the 8-byte slab grain) */
	uint64_t allocs;
	uint64_t frees;
};

struct mem_stats {
	struct mem_class_stats cls[MEM_CLASS_MAX];
	uint64_t live_bytes;      /* sum of cls[].bytes */
	uint64_t slab_bytes;      /* slab chunks held (live + free objects) */
	uint64_t slab_free_bytes; /* free objects inside slab chunks */
	uint64_t large_bytes;     /* live objects served by malloc */
};

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
