/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <urcu/arch.h>
#include <urcu/uatomic.h>

#include "lib/mem.h"

#define MEM_GRAIN      8
#define MEM_NR_SIZES   (MEM_SLAB_MAX / MEM_GRAIN)
#define MEM_CHUNK_SIZE (64 * 1024)
/*
 * Chunks are carved from 2 MiB blocks, aligned and advised for
 * transparent huge pages: a lookup's random walk over ~40 MB of nodes
 * then misses the TLB far less. Objects of a node class that big get the
 * same treatment.
 */
#define MEM_BLOCK_SIZE (2u * 1024 * 1024)

/*
 * Sanitizer builds send everything to malloc, so that ASan sees each
 * object's lifetime (a use after a grace period is then a report, not a
 * silent read of a recycled slab object).
 */
#ifdef LCFIB_MEM_MALLOC_ONLY
#define MEM_SLAB_LIMIT 0
#else
#define MEM_SLAB_LIMIT MEM_SLAB_MAX
#endif

/* A free object: its first word links the free list. */
struct mem_free_obj {
	struct mem_free_obj *next;
};

/* The head of every block; the blocks of a mem form a list for mem_destroy(). */
struct mem_block {
	struct mem_block *next;
	uint64_t pad; /* keeps chunks 16-byte aligned */
};

struct mem_slab {
	struct mem_free_obj *local;  /* writer's free list */
	struct mem_free_obj *remote; /* frees from any thread (uatomic) */
	char *carve, *carve_end;     /* unused tail of the newest chunk */
};

/*
 * Counters are split by who writes them, so the writer and the reclaimer
 * never share a cache line on the hot path: allocations are counted by
 * the writer alone, frees (from any thread) on lines of their own.
 */
struct mem_alloc_counts {
	uint64_t objects[MEM_CLASS_MAX];
	uint64_t bytes[MEM_CLASS_MAX];
	uint64_t slab_bytes; /* served from slabs */
	uint64_t chunk_bytes;
};

struct mem_free_counts { /* uatomic_add from any thread */
	uint64_t objects[MEM_CLASS_MAX];
	uint64_t bytes[MEM_CLASS_MAX];
	uint64_t slab_bytes;
};

struct mem {
	struct mem_slab slab[MEM_NR_SIZES];
	struct mem_block *blocks; /* writer only */
	char *block_carve, *block_end;
	struct mem_alloc_counts a __attribute__((aligned(64)));
	struct mem_free_counts f __attribute__((aligned(64)));
};

/* The writer's counters: it alone adds, others read (uatomic_read). */
#define MEM_ADD(field, v) uatomic_set(&(field), (field) + (v))

static const char *const mem_class_names[MEM_CLASS_MAX] = {
	[MEM_TNODE] = "tnode",     [MEM_LEAF] = "leaf",   [MEM_NH] = "nexthop",
	[MEM_NH_INFO] = "nh-info", [MEM_TABLE] = "table", [MEM_HASH] = "nh-hash",
	[MEM_RECLAIM] = "reclaim",
};

const char *mem_class_name(enum mem_class c)
{
	return (unsigned int)c < MEM_CLASS_MAX ? mem_class_names[c] : "?";
}

struct mem *mem_new(void)
{
	return calloc(1, sizeof(struct mem));
}

void mem_destroy(struct mem *m)
{
	struct mem_block *b, *next;

	if (!m)
		return;
	for (b = m->blocks; b; b = next) {
		next = b->next;
		free(b);
	}
	free(m);
}

static size_t mem_round(size_t size)
{
	return (size + MEM_GRAIN - 1) & ~(size_t)(MEM_GRAIN - 1);
}

/* Memory for big objects, on huge pages where the kernel has them. */
static void *mem_huge_alloc(size_t size)
{
	void *p;

	/* posix_memalign: aligned_alloc() wants the size a multiple of the alignment. */
	if (posix_memalign(&p, MEM_BLOCK_SIZE, size))
		return NULL;
	madvise(p, size, MADV_HUGEPAGE); /* advice only: failure is harmless */
	return p;
}

#if MEM_SLAB_LIMIT
static void mem_slab_free(struct mem *m, void *p, size_t size);

/* Gives the slab a fresh chunk to carve from. */
static int mem_slab_grow(struct mem *m, struct mem_slab *s)
{
	if (!m->block_carve || m->block_carve + MEM_CHUNK_SIZE > m->block_end) {
		struct mem_block *b = mem_huge_alloc(MEM_BLOCK_SIZE);

		if (!b)
			return -ENOMEM;
		b->next = m->blocks;
		m->blocks = b;
		m->block_carve = (char *)(b + 1);
		m->block_end = (char *)b + MEM_BLOCK_SIZE;
		MEM_ADD(m->a.chunk_bytes, MEM_BLOCK_SIZE - sizeof(*b));
	}
	s->carve = m->block_carve;
	s->carve_end = m->block_carve + MEM_CHUNK_SIZE;
	m->block_carve += MEM_CHUNK_SIZE;
	return 0;
}

static void *mem_slab_alloc(struct mem *m, size_t size)
{
	struct mem_slab *s = &m->slab[size / MEM_GRAIN - 1];
	struct mem_free_obj *o = s->local;
	void *p;

	if (!o) {
		o = uatomic_xchg(&s->remote, NULL); /* a full barrier: the pushes' stores */
		/* No chunk yet: carve is NULL, and NULL + size is undefined (so above). */
		if (!o && (!s->carve || s->carve + size > s->carve_end)) {
			/*
			 * The tail of the old chunk that cannot hold one more object
			 * stays unused: at most MEM_SLAB_MAX bytes per 64 KiB.
			 */
			if (mem_slab_grow(m, s) < 0)
				return NULL;
		}
	}
	if (o) {
		s->local = o->next;
		/* Free objects are cold: warm the next one for the next call. */
		__builtin_prefetch(s->local, 1);
		p = o;
	} else {
		p = s->carve;
		s->carve += size;
	}
	MEM_ADD(m->a.slab_bytes, size);
	return p;
}
#endif

void *mem_alloc(struct mem *m, enum mem_class c, size_t size)
{
	void *p;

	size = mem_round(size ? size : 1);
#if MEM_SLAB_LIMIT
	if (size <= MEM_SLAB_LIMIT)
		p = mem_slab_alloc(m, size);
	else
#endif
		p = size >= MEM_BLOCK_SIZE ? mem_huge_alloc(size) : malloc(size);
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	MEM_ADD(m->a.objects[c], 1);
	MEM_ADD(m->a.bytes[c], size);
	return p;
}

void mem_free(struct mem *m, enum mem_class c, void *p, size_t size)
{
	if (!p)
		return;
	size = mem_round(size ? size : 1);
	uatomic_inc(&m->f.objects[c]);
	uatomic_add(&m->f.bytes[c], size);
#if MEM_SLAB_LIMIT
	if (size <= MEM_SLAB_LIMIT) {
		mem_slab_free(m, p, size);
		return;
	}
#endif
	free(p);
}

#if MEM_SLAB_LIMIT
static void mem_slab_free(struct mem *m, void *p, size_t size)
{
	struct mem_slab *s = &m->slab[size / MEM_GRAIN - 1];
	struct mem_free_obj *o = p;
	struct mem_free_obj *head = uatomic_read(&s->remote), *seen;

	/* Push only; the writer takes the whole list at once, so there is no ABA. */
	for (;;) {
		o->next = head;
		seen = uatomic_cmpxchg(&s->remote, head, o); /* a full barrier: o->next first */
		if (seen == head)
			break;
		head = seen;
	}
	uatomic_add(&m->f.slab_bytes, size);
}
#endif

void mem_get_stats(const struct mem *m, struct mem_stats *st)
{
	uint64_t slab_live, slab_freed;

	memset(st, 0, sizeof(*st));
	for (int c = 0; c < MEM_CLASS_MAX; c++) {
		/* Frees first: a free is never counted before its allocation. */
		uint64_t fo = uatomic_read(&m->f.objects[c]);
		uint64_t fb = uatomic_read(&m->f.bytes[c]);

		cmm_smp_rmb();
		st->cls[c].allocs = uatomic_read(&m->a.objects[c]);
		st->cls[c].frees = fo;
		st->cls[c].objects = st->cls[c].allocs - fo;
		st->cls[c].bytes = uatomic_read(&m->a.bytes[c]) - fb;
		st->live_bytes += st->cls[c].bytes;
	}
	slab_freed = uatomic_read(&m->f.slab_bytes);
	cmm_smp_rmb();
	slab_live = uatomic_read(&m->a.slab_bytes) - slab_freed;
	st->slab_bytes = uatomic_read(&m->a.chunk_bytes);
	st->slab_free_bytes = st->slab_bytes > slab_live ? st->slab_bytes - slab_live : 0;
	st->large_bytes = st->live_bytes > slab_live ? st->live_bytes - slab_live : 0;
}
