/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif

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
#define MEM_BLOCK_SIZE       (2u * 1024 * 1024)
#define MEM_CHUNKS_PER_BLOCK (MEM_BLOCK_SIZE / MEM_CHUNK_SIZE)
#define MEM_CHUNK_SHIFT      16 /* log2(MEM_CHUNK_SIZE) */

/*
 * A trim runs by itself (mem_trim_due()) once the free slab bytes are more
 * than a fifth of the slab memory held -- resident memory above 1.25x
 * the live bytes -- and at least MEM_TRIM_STEP more than after the last
 * trim, so a writer whose free memory lies scattered in chunks that still
 * hold live objects does not walk its free lists over and over.
 */
#define MEM_TRIM_RATIO 5
#define MEM_TRIM_STEP  (4u * 1024 * 1024)

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

/* What a chunk of a block holds: a size class is its index + 1. */
enum {
	MEM_CHUNK_UNCARVED = 0,    /* not yet handed to a slab */
	MEM_CHUNK_DOOMED = 0xfe,   /* wholly free, being released by mem_trim() */
	MEM_CHUNK_RELEASED = 0xff, /* given back to the system, in the pool */
};

/*
 * A 2 MiB block, described outside itself so that each 64 KiB chunk is
 * page aligned and can be given back whole. Writer only.
 */
struct mem_block {
	char *base;                           /* MEM_BLOCK_SIZE aligned */
	uint8_t chunk[MEM_CHUNKS_PER_BLOCK];  /* MEM_CHUNK_* or size class + 1 */
	uint16_t nfree[MEM_CHUNKS_PER_BLOCK]; /* mem_trim()'s count of free objects */
	unsigned int released;                /* chunks given back */
	bool small_pages;                     /* huge pages declined: part is given back */
};

struct mem_slab {
	struct mem_free_obj *local;  /* writer's free list */
	struct mem_free_obj *remote; /* frees from any thread (uatomic) */
	char *carve, *carve_end;     /* unused tail of the newest chunk */
	struct mem_free_obj *aside;  /* mem_evacuate_begin(): the writer's list, set aside */
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
	uint64_t released_bytes; /* chunks given back, not reused yet */
	uint64_t trims, trimmed_bytes;
	uint64_t compactions;
};

struct mem_free_counts { /* uatomic_add from any thread */
	uint64_t objects[MEM_CLASS_MAX];
	uint64_t bytes[MEM_CLASS_MAX];
	uint64_t slab_bytes;
};

struct mem {
	struct mem_slab slab[MEM_NR_SIZES];
	/*
	 * Writer only, except for what a chunk's taking changes (the blocks,
	 * the pool, the carving block): an arena's thread takes chunks too,
	 * under this lock (see mem_chunk_take()).
	 */
	pthread_mutex_t chunk_lock;
	struct mem_block *blocks; /* sorted by base */
	unsigned int n_blocks, cap_blocks;
	char **pool; /* released chunks, for any size class; room for every chunk */
	unsigned int n_pool;
	char *block_carve, *block_end;
	uint64_t trim_mark; /* free slab bytes after the last trim, or fewer since */
	/* Free slab bytes after the last compaction, or fewer since (see mem_compact_due()). */
	uint64_t compact_mark;
	bool evacuating; /* mem_evacuate_begin() .. mem_evacuate_end() */
	/* mem_fail_after(): under chunk_lock; the flag and the count are read without it. */
	bool fail_on;
	uint64_t fail_skip, fail_count, failed;
	struct mem_alloc_counts a __attribute__((aligned(64)));
	struct mem_free_counts f __attribute__((aligned(64)));
};

/* The writer's counters: it alone adds, others read (uatomic_read). */
#define MEM_ADD(field, v) uatomic_set(&(field), (field) + (v))

static const char *const mem_class_names[MEM_CLASS_MAX] = {
	[MEM_TNODE] = "tnode",     [MEM_LEAF] = "leaf",         [MEM_NH] = "nexthop",
	[MEM_NH_INFO] = "nh-info", [MEM_TABLE] = "table",       [MEM_HASH] = "hash",
	[MEM_RECLAIM] = "reclaim", [MEM_FALLBACK] = "fallback",
};

const char *mem_class_name(enum mem_class c)
{
	return (unsigned int)c < MEM_CLASS_MAX ? mem_class_names[c] : "?";
}

struct mem *mem_new(void)
{
	struct mem *m = calloc(1, sizeof(struct mem));

	if (m)
		pthread_mutex_init(&m->chunk_lock, NULL);
	return m;
}

static void mem_huge_free(void *p, size_t size);

void mem_destroy(struct mem *m)
{
	if (!m)
		return;
	for (unsigned int i = 0; i < m->n_blocks; i++)
		mem_huge_free(m->blocks[i].base, MEM_BLOCK_SIZE);
	free(m->blocks);
	free(m->pool);
	pthread_mutex_destroy(&m->chunk_lock);
	free(m);
}

static size_t mem_round(size_t size)
{
	return (size + MEM_GRAIN - 1) & ~(size_t)(MEM_GRAIN - 1);
}

#ifndef LCFIB_MEM_MALLOC_ONLY
/* A mapping's length for @size bytes: whole chunks, so whole pages of any size. */
static size_t mem_map_len(size_t size)
{
	return (size + MEM_CHUNK_SIZE - 1) & ~(size_t)(MEM_CHUNK_SIZE - 1);
}

/*
 * Memory for big objects (MEM_BLOCK_SIZE and up), on huge pages where the
 * kernel has them: mapped at a MEM_BLOCK_SIZE boundary, and no more. Not
 * posix_memalign(): glibc maps twice the size and keeps its header in the
 * half before the object, which the kernel may back with a huge page of
 * its own (2 MiB resident for nothing, seen after a reload).
 */
static void *mem_huge_alloc(size_t size)
{
	size_t len = mem_map_len(size);
	char *p = mmap(NULL, len + MEM_BLOCK_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *q;

	if (p == MAP_FAILED)
		return NULL;
	q = (char *)(((uintptr_t)p + MEM_BLOCK_SIZE - 1) & ~(uintptr_t)(MEM_BLOCK_SIZE - 1));
	if (q > p)
		munmap(p, (size_t)(q - p));
	munmap(q + len, (size_t)(p + MEM_BLOCK_SIZE - q));
	madvise(q, len, MADV_HUGEPAGE); /* advice only: failure is harmless */
	return q;
}

static void mem_huge_free(void *p, size_t size)
{
	munmap(p, mem_map_len(size));
}
#else
/* Sanitizer builds: from malloc, so that ASan sees a use after free. */
static void *mem_huge_alloc(size_t size)
{
	void *p;

	return posix_memalign(&p, MEM_BLOCK_SIZE, size) ? NULL : p;
}

static void mem_huge_free(void *p, size_t size)
{
	(void)size;
	free(p);
}
#endif

/* A big object (over the slabs' sizes): its own mapping from MEM_BLOCK_SIZE up. */
static void *mem_big_alloc(size_t size)
{
	return size >= MEM_BLOCK_SIZE ? mem_huge_alloc(size) : malloc(size);
}

/* Frees a big object of mem_big_alloc(), by its @size. */
static void mem_big_free(void *p, size_t size)
{
	if (size >= MEM_BLOCK_SIZE)
		mem_huge_free(p, size);
	else
		free(p);
}

#if MEM_SLAB_LIMIT
static void mem_slab_free(struct mem *m, void *p, size_t size);
static void mem_slab_push(struct mem_slab *s, struct mem_free_obj *first,
			  struct mem_free_obj *last);

/* The block holding @p, which must be in one: a binary search by base. */
static struct mem_block *mem_block_of(struct mem *m, const void *p)
{
	uintptr_t base = (uintptr_t)p & ~(uintptr_t)(MEM_BLOCK_SIZE - 1);
	unsigned int lo = 0, hi = m->n_blocks;

	while (hi - lo > 1) {
		unsigned int mid = lo + (hi - lo) / 2;

		if ((uintptr_t)m->blocks[mid].base <= base)
			lo = mid;
		else
			hi = mid;
	}
	return &m->blocks[lo];
}

static unsigned int mem_chunk_index(const struct mem_block *b, const void *p)
{
	return (unsigned int)(((const char *)p - b->base) >> MEM_CHUNK_SHIFT);
}

/* Room for one more block in the block table and the pool. */
static int mem_blocks_reserve(struct mem *m)
{
	unsigned int cap = m->cap_blocks ? 2 * m->cap_blocks : 16;
	struct mem_block *blocks;
	char **pool;

	if (m->n_blocks < m->cap_blocks)
		return 0;
	blocks = realloc(m->blocks, cap * sizeof(*blocks));
	if (!blocks)
		return -ENOMEM;
	m->blocks = blocks;
	pool = realloc(m->pool, (size_t)cap * MEM_CHUNKS_PER_BLOCK * sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	m->pool = pool;
	m->cap_blocks = cap;
	return 0;
}

/* A fresh block to carve chunks from, entered in the table in base order. */
static int mem_block_add(struct mem *m)
{
	char *base;
	unsigned int i;

	if (mem_blocks_reserve(m) < 0)
		return -ENOMEM;
	base = mem_huge_alloc(MEM_BLOCK_SIZE);
	if (!base)
		return -ENOMEM;
	for (i = m->n_blocks; i > 0 && m->blocks[i - 1].base > base; i--)
		m->blocks[i] = m->blocks[i - 1];
	m->blocks[i] = (struct mem_block){ .base = base };
	m->n_blocks++;
	m->block_carve = base;
	m->block_end = base + MEM_BLOCK_SIZE;
	MEM_ADD(m->a.chunk_bytes, MEM_BLOCK_SIZE);
	return 0;
}

/*
 * A chunk for slab @idx, or NULL: a released one if any (its pages come
 * back zeroed), else a new one (while evacuating, always a new one). The
 * writer's and an arena's thread's.
 */
static char *mem_chunk_take(struct mem *m, unsigned int idx)
{
	struct mem_block *b;
	char *c = NULL;

	pthread_mutex_lock(&m->chunk_lock);
	/*
	 * Evacuating, from new blocks: the pooled chunks lie in blocks given
	 * back in part, on small pages, and a trie moved there ran batch
	 * lookups of the full view a third slower.
	 */
	if (m->n_pool && !m->evacuating) {
		c = m->pool[--m->n_pool];
		b = mem_block_of(m, c);
		MEM_ADD(m->a.released_bytes, -(uint64_t)MEM_CHUNK_SIZE);
		if (!--b->released && b->small_pages) {
			/* In use whole again: khugepaged may collapse it into a huge page. */
			madvise(b->base, MEM_BLOCK_SIZE, MADV_HUGEPAGE);
			b->small_pages = false;
		}
	} else if (m->block_carve != m->block_end || mem_block_add(m) == 0) {
		c = m->block_carve;
		m->block_carve += MEM_CHUNK_SIZE;
		b = mem_block_of(m, c);
	}
	if (c)
		b->chunk[mem_chunk_index(b, c)] = (uint8_t)(idx + 1);
	pthread_mutex_unlock(&m->chunk_lock);
	return c;
}

/* A new chunk for the writer's slab @idx to carve. */
static int mem_slab_grow(struct mem *m, unsigned int idx)
{
	struct mem_slab *s = &m->slab[idx];
	char *c = mem_chunk_take(m, idx);

	if (!c)
		return -ENOMEM;
	s->carve = c;
	s->carve_end = c + MEM_CHUNK_SIZE;
	return 0;
}

static void *mem_slab_alloc(struct mem *m, size_t size)
{
	unsigned int idx = (unsigned int)(size / MEM_GRAIN - 1);
	struct mem_slab *s = &m->slab[idx];
	struct mem_free_obj *o = s->local;
	void *p;

	if (!o) {
		/* Evacuating: from chunks not carved yet (see mem_evacuate_begin()). */
		if (!m->evacuating)
			o = uatomic_xchg(&s->remote, NULL); /* a full barrier: the pushes' stores */
		/* No chunk yet: carve is NULL, and NULL + size is undefined (so above). */
		if (!o && (!s->carve || s->carve + size > s->carve_end)) {
			/*
			 * The tail of the old chunk that cannot hold one more object
			 * stays unused: at most MEM_SLAB_MAX bytes per 64 KiB.
			 */
			if (mem_slab_grow(m, idx) < 0)
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

/* mem_fail_after()'s choice for this allocation: true to fail it. */
static bool mem_fail_slow(struct mem *m)
{
	bool fail = false;

	pthread_mutex_lock(&m->chunk_lock);
	if (m->fail_skip) {
		m->fail_skip--;
	} else if (m->fail_count) {
		fail = true;
		uatomic_set(&m->failed, m->failed + 1);
		if (!--m->fail_count)
			uatomic_set(&m->fail_on, false);
	}
	pthread_mutex_unlock(&m->chunk_lock);
	return fail;
}

static inline bool mem_fail_now(struct mem *m)
{
	return __builtin_expect(uatomic_read(&m->fail_on), 0) && mem_fail_slow(m);
}

void mem_fail_after(struct mem *m, uint64_t after, uint64_t count)
{
	pthread_mutex_lock(&m->chunk_lock);
	m->fail_skip = after;
	m->fail_count = count;
	uatomic_set(&m->fail_on, count > 0);
	pthread_mutex_unlock(&m->chunk_lock);
}

uint64_t mem_failed(const struct mem *m)
{
	return uatomic_read(&m->failed);
}

void *mem_alloc(struct mem *m, enum mem_class c, size_t size)
{
	void *p;

	if (mem_fail_now(m)) {
		errno = ENOMEM;
		return NULL;
	}
	size = mem_round(size ? size : 1);
#if MEM_SLAB_LIMIT
	if (size <= MEM_SLAB_LIMIT)
		p = mem_slab_alloc(m, size);
	else
#endif
		p = mem_big_alloc(size);
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
	mem_big_free(p, size);
}

/* ------------------------------------------------------------- arenas */

struct mem_arena {
	struct mem *m;
	/* Each size's carving chunk: the arena's own (chunks are taken whole). */
	struct {
		char *carve, *carve_end;
	} slab[MEM_NR_SIZES];
	/* Its counts, added to the writer's at mem_arena_end(). */
	uint64_t objects[MEM_CLASS_MAX], bytes[MEM_CLASS_MAX], slab_bytes;
};

#if MEM_SLAB_LIMIT
/*
 * Hands the objects not carved from a chunk of size @idx (*@carve up to
 * *@carve_end, an arena's or a slab's) to the slab's shared free list, as
 * frees from any thread go: the chunk is then carved whole, as mem_trim()
 * counts a chunk that no slab carves (each object live or free), and its
 * tail serves the writer.
 */
static void mem_give_tail(struct mem *m, unsigned int idx, char **carve, char **carve_end)
{
	size_t size = (idx + 1) * MEM_GRAIN;
	char *c = *carve, *end = *carve_end;
	struct mem_free_obj *first = NULL, *last = NULL;

	if (!c)
		return;
	for (; c + size <= end; c += size) {
		struct mem_free_obj *o = (struct mem_free_obj *)(void *)c;

		o->next = NULL;
		if (last)
			last->next = o;
		else
			first = o;
		last = o;
	}
	if (first)
		mem_slab_push(&m->slab[idx], first, last);
	*carve = *carve_end = NULL;
}

static void mem_arena_give_tail(struct mem_arena *a, unsigned int idx)
{
	mem_give_tail(a->m, idx, &a->slab[idx].carve, &a->slab[idx].carve_end);
}
#endif

struct mem_arena *mem_arena_new(struct mem *m)
{
	struct mem_arena *a = calloc(1, sizeof(*a));

	if (a)
		a->m = m;
	return a;
}

void *mem_arena_alloc(struct mem_arena *a, enum mem_class c, size_t size)
{
	void *p;

	if (mem_fail_now(a->m)) {
		errno = ENOMEM;
		return NULL;
	}
	size = mem_round(size ? size : 1);
#if MEM_SLAB_LIMIT
	if (size <= MEM_SLAB_LIMIT) {
		unsigned int idx = (unsigned int)(size / MEM_GRAIN - 1);

		if (!a->slab[idx].carve || a->slab[idx].carve + size > a->slab[idx].carve_end) {
			char *chunk = mem_chunk_take(a->m, idx);

			if (!chunk) {
				errno = ENOMEM;
				return NULL;
			}
			/* What is left of the old chunk goes to the free list now. */
			mem_arena_give_tail(a, idx);
			a->slab[idx].carve = chunk;
			a->slab[idx].carve_end = chunk + MEM_CHUNK_SIZE;
		}
		p = a->slab[idx].carve;
		a->slab[idx].carve += size;
		a->slab_bytes += size;
	} else
#endif
		p = mem_big_alloc(size);
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	a->objects[c]++;
	a->bytes[c] += size;
	return p;
}

void mem_arena_end(struct mem_arena *a)
{
	struct mem *m;

	if (!a)
		return;
	m = a->m;
#if MEM_SLAB_LIMIT
	for (unsigned int idx = 0; idx < MEM_NR_SIZES; idx++)
		mem_arena_give_tail(a, idx);
	MEM_ADD(m->a.slab_bytes, a->slab_bytes);
#endif
	for (unsigned int c = 0; c < MEM_CLASS_MAX; c++) {
		MEM_ADD(m->a.objects[c], a->objects[c]);
		MEM_ADD(m->a.bytes[c], a->bytes[c]);
	}
	free(a);
}

void mem_free_many(struct mem *m, const struct mem_obj *v, size_t n)
{
	uint64_t objects[MEM_CLASS_MAX] = { 0 }, bytes[MEM_CLASS_MAX] = { 0 };
#if MEM_SLAB_LIMIT
	/* Each size's objects are linked here, then pushed in one go. */
	struct mem_free_obj *head[MEM_NR_SIZES], *tail[MEM_NR_SIZES];
	uint16_t used[MEM_NR_SIZES];
	unsigned int n_used = 0;
	uint64_t slab = 0;

	memset(head, 0, sizeof(head));
#endif
	for (size_t i = 0; i < n; i++) {
		size_t size = mem_round(v[i].size ? v[i].size : 1);

		/* Retired objects are cold by the time they are freed. */
		if (i + 8 < n)
			__builtin_prefetch(v[i + 8].p, 1);
		objects[v[i].cls]++;
		bytes[v[i].cls] += size;
#if MEM_SLAB_LIMIT
		if (size <= MEM_SLAB_LIMIT) {
			unsigned int k = (unsigned int)(size / MEM_GRAIN - 1);
			struct mem_free_obj *o = v[i].p;

			if (!head[k]) {
				tail[k] = o;
				used[n_used++] = (uint16_t)k;
			}
			o->next = head[k];
			head[k] = o;
			slab += size;
			continue;
		}
#endif
		mem_big_free(v[i].p, size);
	}
	for (unsigned int c = 0; c < MEM_CLASS_MAX; c++) {
		if (objects[c]) {
			uatomic_add(&m->f.objects[c], objects[c]);
			uatomic_add(&m->f.bytes[c], bytes[c]);
		}
	}
#if MEM_SLAB_LIMIT
	for (unsigned int u = 0; u < n_used; u++)
		mem_slab_push(&m->slab[used[u]], head[used[u]], tail[used[u]]);
	if (slab)
		uatomic_add(&m->f.slab_bytes, slab);
#endif
}

#if MEM_SLAB_LIMIT
/* Pushes the linked objects @first .. @last on the shared free list of @s. */
static void mem_slab_push(struct mem_slab *s, struct mem_free_obj *first, struct mem_free_obj *last)
{
	struct mem_free_obj *head = uatomic_read(&s->remote), *seen;

	/* Push only; the writer takes the whole list at once, so there is no ABA. */
	for (;;) {
		last->next = head;
		seen = uatomic_cmpxchg(&s->remote, head,
				       first); /* a full barrier: last->next first */
		if (seen == head)
			break;
		head = seen;
	}
}

static void mem_slab_free(struct mem *m, void *p, size_t size)
{
	mem_slab_push(&m->slab[size / MEM_GRAIN - 1], p, p);
	uatomic_add(&m->f.slab_bytes, size);
}

/*
 * Counts the free objects of @list per chunk; returns its last object
 * (NULL when empty).
 */
static struct mem_free_obj *mem_trim_count(struct mem *m, struct mem_free_obj *list)
{
	struct mem_block *b = NULL;
	struct mem_free_obj *last = NULL;

	for (struct mem_free_obj *o = list; o; o = o->next) {
		if (!b || (uintptr_t)o - (uintptr_t)b->base >= MEM_BLOCK_SIZE)
			b = mem_block_of(m, o);
		b->nfree[mem_chunk_index(b, o)]++;
		last = o;
	}
	return last;
}

/* Objects carved so far from chunk @c of slab @idx. */
static unsigned int mem_chunk_carved(const struct mem *m, const char *c, unsigned int idx)
{
	const struct mem_slab *s = &m->slab[idx];
	size_t size = (idx + 1) * MEM_GRAIN;

	if (s->carve_end == c + MEM_CHUNK_SIZE)
		return (unsigned int)((size_t)(s->carve - c) / size);
	return (unsigned int)(MEM_CHUNK_SIZE / size);
}

/*
 * Marks MEM_CHUNK_DOOMED every chunk whose carved objects are all free,
 * and the slabs that own one in @doomed; clears the counts. Returns how
 * many chunks it marked.
 */
static unsigned int mem_trim_doom(struct mem *m, bool *doomed)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < m->n_blocks; i++) {
		struct mem_block *b = &m->blocks[i];

		for (unsigned int k = 0; k < MEM_CHUNKS_PER_BLOCK; k++) {
			unsigned int st = b->chunk[k];

			if (st >= 1 && st <= MEM_NR_SIZES &&
			    b->nfree[k] ==
				    mem_chunk_carved(m, b->base + k * MEM_CHUNK_SIZE, st - 1)) {
				b->chunk[k] = MEM_CHUNK_DOOMED;
				doomed[st - 1] = true;
				n++;
			}
			b->nfree[k] = 0;
		}
	}
	return n;
}

/* Takes the objects of doomed chunks off slab @idx's list, and its carving chunk if doomed. */
static void mem_trim_unlink(struct mem *m, unsigned int idx)
{
	struct mem_slab *s = &m->slab[idx];
	struct mem_free_obj **pp = &s->local, *o;
	struct mem_block *b = NULL;

	while ((o = *pp)) {
		if (!b || (uintptr_t)o - (uintptr_t)b->base >= MEM_BLOCK_SIZE)
			b = mem_block_of(m, o);
		if (b->chunk[mem_chunk_index(b, o)] == MEM_CHUNK_DOOMED)
			*pp = o->next;
		else
			pp = &o->next;
	}
	if (s->carve_end) {
		b = mem_block_of(m, s->carve_end - 1);
		if (b->chunk[mem_chunk_index(b, s->carve_end - 1)] == MEM_CHUNK_DOOMED)
			s->carve = s->carve_end = NULL;
	}
}

/*
 * Gives the doomed chunks of @b back to the system, a run of neighbours
 * in one call, and pools them. A block given back in part declines huge
 * pages, or khugepaged would fill its holes again; given back whole, it
 * takes them again for its next use.
 */
static uint64_t mem_trim_release(struct mem *m, struct mem_block *b)
{
	uint64_t bytes = 0;
	unsigned int k = 0, j;

	while (k < MEM_CHUNKS_PER_BLOCK) {
		if (b->chunk[k] != MEM_CHUNK_DOOMED) {
			k++;
			continue;
		}
		for (j = k; j < MEM_CHUNKS_PER_BLOCK && b->chunk[j] == MEM_CHUNK_DOOMED; j++) {
			b->chunk[j] = MEM_CHUNK_RELEASED;
			m->pool[m->n_pool++] = b->base + j * MEM_CHUNK_SIZE;
		}
		/* Failure (locked pages) leaves them resident: reused all the same. */
		madvise(b->base + k * MEM_CHUNK_SIZE, (j - k) * MEM_CHUNK_SIZE, MADV_DONTNEED);
		b->released += j - k;
		bytes += (j - k) * MEM_CHUNK_SIZE;
		k = j;
	}
	if (bytes && b->released < MEM_CHUNKS_PER_BLOCK && !b->small_pages) {
		madvise(b->base, MEM_BLOCK_SIZE, MADV_NOHUGEPAGE);
		b->small_pages = true;
	} else if (b->released == MEM_CHUNKS_PER_BLOCK && b->small_pages) {
		madvise(b->base, MEM_BLOCK_SIZE, MADV_HUGEPAGE);
		b->small_pages = false;
	}
	return bytes;
}

static uint64_t mem_slab_trim(struct mem *m)
{
	bool doomed[MEM_NR_SIZES] = { false };
	uint64_t bytes = 0;

	for (unsigned int i = 0; i < MEM_NR_SIZES; i++) {
		struct mem_slab *s = &m->slab[i];
		/* A full barrier: the pushes' stores are seen (as mem_slab_alloc()). */
		struct mem_free_obj *remote = uatomic_xchg(&s->remote, NULL);
		struct mem_free_obj *last = mem_trim_count(m, remote);

		mem_trim_count(m, s->local);
		if (last) {
			last->next = s->local;
			s->local = remote;
		}
	}
	if (!mem_trim_doom(m, doomed))
		return 0;
	for (unsigned int i = 0; i < MEM_NR_SIZES; i++) {
		if (doomed[i])
			mem_trim_unlink(m, i);
	}
	for (unsigned int i = 0; i < m->n_blocks; i++)
		bytes += mem_trim_release(m, &m->blocks[i]);
	return bytes;
}
#endif

/* Slab memory held (not given back), free in it, and live. */
static void mem_slab_figures(const struct mem *m, uint64_t *held, uint64_t *free_bytes,
			     uint64_t *live)
{
	uint64_t freed = uatomic_read(&m->f.slab_bytes);

	cmm_smp_rmb(); /* frees first: a free is never counted before its allocation */
	*live = uatomic_read(&m->a.slab_bytes) - freed;
	*held = uatomic_read(&m->a.chunk_bytes) - uatomic_read(&m->a.released_bytes);
	*free_bytes = *held > *live ? *held - *live : 0;
}

/*
 * Whether the free slab bytes, with @coming more, are over a fifth of the
 * slab memory held and MEM_TRIM_STEP more than *@mark (the free bytes
 * after the last trim or compaction, lowered when fewer are free).
 */
static bool mem_slack_due(struct mem *m, uint64_t *mark, uint64_t coming)
{
	uint64_t held, free_bytes, live;

	mem_slab_figures(m, &held, &free_bytes, &live);
	if (free_bytes < *mark)
		*mark = free_bytes;
	free_bytes += coming;
	return free_bytes > held / MEM_TRIM_RATIO && free_bytes >= *mark + MEM_TRIM_STEP;
}

bool mem_trim_due(struct mem *m, uint64_t coming)
{
	return mem_slack_due(m, &m->trim_mark, coming);
}

uint64_t mem_trim(struct mem *m)
{
	uint64_t bytes = 0, held, live;

#if MEM_SLAB_LIMIT
	bytes = mem_slab_trim(m);
	MEM_ADD(m->a.released_bytes, bytes);
	MEM_ADD(m->a.trimmed_bytes, bytes);
#ifdef __GLIBC__
	malloc_trim(0); /* the freed large nodes glibc keeps */
#endif
#endif
	MEM_ADD(m->a.trims, 1);
	mem_slab_figures(m, &held, &m->trim_mark, &live);
	return bytes;
}

void mem_evacuate_begin(struct mem *m)
{
#if MEM_SLAB_LIMIT
	for (unsigned int idx = 0; idx < MEM_NR_SIZES; idx++) {
		struct mem_slab *s = &m->slab[idx];

		s->aside = s->local;
		s->local = NULL;
		/* Its chunk holds old objects: the tail goes to the shared list, not taken either.
		 */
		mem_give_tail(m, idx, &s->carve, &s->carve_end);
	}
	m->evacuating = true;
#else
	(void)m;
#endif
}

void mem_evacuate_end(struct mem *m)
{
#if MEM_SLAB_LIMIT
	for (unsigned int idx = 0; idx < MEM_NR_SIZES; idx++) {
		struct mem_slab *s = &m->slab[idx];
		struct mem_free_obj *o = s->aside;

		if (!o)
			continue;
		/* Frees go to remote, so the writer's list stayed empty; if not, it follows. */
		if (s->local) {
			while (o->next)
				o = o->next;
			o->next = s->local;
		}
		s->local = s->aside;
		s->aside = NULL;
	}
	m->evacuating = false;
#else
	(void)m;
#endif
}

bool mem_compact_due(struct mem *m)
{
	return mem_slack_due(m, &m->compact_mark, 0);
}

void mem_compacted(struct mem *m, bool moved)
{
	uint64_t held, live;

	mem_slab_figures(m, &held, &m->compact_mark, &live);
	if (moved)
		MEM_ADD(m->a.compactions, 1);
}

void mem_get_stats(const struct mem *m, struct mem_stats *st)
{
	uint64_t slab_live;

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
	mem_slab_figures(m, &st->slab_bytes, &st->slab_free_bytes, &slab_live);
	st->slab_released_bytes = uatomic_read(&m->a.released_bytes);
	st->trims = uatomic_read(&m->a.trims);
	st->trimmed_bytes = uatomic_read(&m->a.trimmed_bytes);
	st->compactions = uatomic_read(&m->a.compactions);
	st->large_bytes = st->live_bytes > slab_live ? st->live_bytes - slab_live : 0;
}
