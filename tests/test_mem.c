/* SPDX-License-Identifier: MIT */
/*
 * The allocator's trim (lib/mem.h): chunks whose objects are all free go
 * back to the system (their pages are no longer resident), chunks that
 * hold one live object stay, frees from another thread count, and given
 * back chunks are reused by other sizes without touching live objects;
 * mem_free_many() frees as mem_free() does; objects copied while
 * evacuating leave the old chunks wholly free. In a malloc-only (sanitizer)
 * build the trim gives nothing back and only counts itself.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/mem.h"

#define CHUNK   (64u * 1024)
#define OBJ     24u
#define NR_OBJS 400000u /* 146.5 chunks of 24-byte objects, in 5 blocks */

static uint64_t chunk_of(const void *p)
{
	return (uintptr_t)p / CHUNK;
}

static void fill(void *p, size_t size, uint64_t tag)
{
	uint64_t *w = p;

	for (size_t i = 0; i < size / sizeof(*w); i++)
		w[i] = tag * 0x9e3779b97f4a7c15u + i;
}

static bool holds(const void *p, size_t size, uint64_t tag)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < size / sizeof(*w); i++) {
		if (w[i] != tag * 0x9e3779b97f4a7c15u + i)
			return false;
	}
	return true;
}

static struct mem_stats stats(const struct mem *m)
{
	struct mem_stats st;

	mem_get_stats(m, &st);
	return st;
}

#ifndef LCFIB_MEM_MALLOC_ONLY
/* Whether any page of the 64 KiB chunk at @c is resident. */
static bool chunk_resident(const void *c)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char vec[CHUNK / 4096];
	void *start = (void *)((uintptr_t)c / CHUNK * CHUNK);

	assert_true(CHUNK / (size_t)page <= sizeof(vec));
	assert_int_equal(mincore(start, CHUNK, vec), 0);
	for (size_t i = 0; i < CHUNK / (size_t)page; i++) {
		if (vec[i] & 1)
			return true;
	}
	return false;
}
#endif

struct objs {
	struct mem *m;
	void *p[NR_OBJS];
	bool kept[NR_OBJS];
};

/* Fills NR_OBJS objects; frees every object of chunks with an even number, all but one of the rest.
 */
static struct objs *objs_alloc_and_free_pattern(bool free_here)
{
	struct objs *o = calloc(1, sizeof(*o));
	uint64_t last = UINT64_MAX;

	assert_non_null(o);
	o->m = mem_new();
	assert_non_null(o->m);
	for (unsigned int i = 0; i < NR_OBJS; i++) {
		o->p[i] = mem_alloc(o->m, MEM_LEAF, OBJ);
		assert_non_null(o->p[i]);
		fill(o->p[i], OBJ, i);
	}
	for (unsigned int i = 0; i < NR_OBJS; i++) {
		uint64_t c = chunk_of(o->p[i]);

		o->kept[i] = c % 2 && c != last; /* the first object of an odd chunk */
		if (c % 2)
			last = c;
		if (!o->kept[i] && free_here)
			mem_free(o->m, MEM_LEAF, o->p[i], OBJ);
	}
	return o;
}

#ifndef LCFIB_MEM_MALLOC_ONLY
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Chunks with no kept object: what a trim must give back. */
static uint64_t objs_free_chunks(const struct objs *o)
{
	uint64_t n = 0, seen = UINT64_MAX;

	for (unsigned int i = 0; i < NR_OBJS; i++) {
		uint64_t c = chunk_of(o->p[i]);

		if (c % 2 == 0 && c != seen)
			n++;
		if (c % 2 == 0)
			seen = c;
	}
	return n;
}
#endif

static void objs_check_kept(const struct objs *o)
{
	for (unsigned int i = 0; i < NR_OBJS; i++) {
		if (o->kept[i])
			assert_true(holds(o->p[i], OBJ, i));
	}
}

static void objs_destroy(struct objs *o)
{
	mem_destroy(o->m);
	free(o);
}

#ifndef LCFIB_MEM_MALLOC_ONLY
static void test_mem_trim_gives_back_wholly_free_chunks_only(void **state)
{
	struct objs *o = objs_alloc_and_free_pattern(true);
	uint64_t want = objs_free_chunks(o) * CHUNK;
	struct mem_stats before = stats(o->m), after;
	unsigned int freed_one = 0;

	(void)state;
	assert_true(want >= 8 * CHUNK);
	assert_true(mem_trim_due(o->m, 0));
	assert_int_equal(mem_trim(o->m), want);
	after = stats(o->m);
	assert_int_equal(after.slab_released_bytes, want);
	assert_int_equal(after.trimmed_bytes, want);
	assert_int_equal(after.trims, 1);
	assert_int_equal(after.slab_bytes, before.slab_bytes - want);
	assert_int_equal(after.slab_free_bytes, before.slab_free_bytes - want);
	assert_int_equal(after.live_bytes, before.live_bytes);
	assert_false(mem_trim_due(o->m, 0));
	/* Retired bytes on their way count as free: a trim would be due once they are. */
	assert_true(mem_trim_due(o->m, 64u << 20));
	/* The pages are gone; the chunks that keep an object are all there. */
	for (unsigned int i = 0; i < NR_OBJS; i++) {
		if (chunk_of(o->p[i]) % 2 == 0 && !freed_one++)
			assert_false(chunk_resident(o->p[i]));
		if (o->kept[i])
			assert_true(chunk_resident(o->p[i]));
	}
	objs_check_kept(o);
	/* Nothing more to give back: a second trim walks and finds nothing. */
	assert_int_equal(mem_trim(o->m), 0);
	assert_int_equal(stats(o->m).trims, 2);
	objs_destroy(o);
}

/* Given back chunks serve other sizes; nothing new lands on a kept object. */
static void test_mem_trim_chunks_are_reused_by_any_size(void **state)
{
	struct objs *o = objs_alloc_and_free_pattern(true);
	uint64_t released = mem_trim(o->m);
	unsigned int n = (unsigned int)(released / 200);
	void **q = calloc(n, sizeof(*q));
	struct mem_stats st;

	(void)state;
	assert_non_null(q);
	for (unsigned int i = 0; i < n; i++) {
		q[i] = mem_alloc(o->m, MEM_TNODE, 200);
		assert_non_null(q[i]);
		fill(q[i], 200, NR_OBJS + i);
	}
	st = stats(o->m);
	/* 327 objects of 200 bytes a chunk: every pooled chunk was taken (but a few). */
	assert_true(st.slab_released_bytes <= released / 100);
	assert_int_equal(st.trimmed_bytes, released);
	objs_check_kept(o);
	for (unsigned int i = 0; i < n; i++)
		assert_true(holds(q[i], 200, NR_OBJS + i));
	/* The 24-byte slab still works from its list and fresh chunks. */
	for (unsigned int i = 0; i < NR_OBJS; i++) {
		if (!o->kept[i]) {
			o->p[i] = mem_alloc(o->m, MEM_LEAF, OBJ);
			assert_non_null(o->p[i]);
			fill(o->p[i], OBJ, i);
		}
	}
	for (unsigned int i = 0; i < NR_OBJS; i++)
		assert_true(holds(o->p[i], OBJ, i));
	for (unsigned int i = 0; i < n; i++)
		assert_true(holds(q[i], 200, NR_OBJS + i));
	free(q);
	objs_destroy(o);
}

static void *free_not_kept(void *arg)
{
	struct objs *o = arg;

	for (unsigned int i = 0; i < NR_OBJS; i++) {
		if (!o->kept[i])
			mem_free(o->m, MEM_LEAF, o->p[i], OBJ);
	}
	return NULL;
}

/* The reclaimer's frees (another thread, the remote lists) are taken in. */
static void test_mem_trim_takes_frees_of_other_threads(void **state)
{
	struct objs *o = objs_alloc_and_free_pattern(false);
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, free_not_kept, o), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(mem_trim(o->m), objs_free_chunks(o) * CHUNK);
	objs_check_kept(o);
	objs_destroy(o);
}

/* A chunk that holds one live object, or the carving chunk, with objects not yet freed, stays. */
static void test_mem_trim_keeps_chunks_with_a_live_object(void **state)
{
	struct mem *m = mem_new();
	void *p[CHUNK / 64];

	(void)state;
	assert_non_null(m);
	for (unsigned int i = 0; i < CHUNK / 64; i++) {
		p[i] = mem_alloc(m, MEM_NH, 64);
		assert_non_null(p[i]);
		fill(p[i], 64, i);
	}
	for (unsigned int i = 1; i < CHUNK / 64; i++)
		mem_free(m, MEM_NH, p[i], 64);
	assert_int_equal(mem_trim(m), 0);
	assert_true(holds(p[0], 64, 0));
	mem_free(m, MEM_NH, p[0], 64);
	assert_int_equal(mem_trim(m), CHUNK);
	assert_int_equal(stats(m).slab_released_bytes, CHUNK);
	mem_destroy(m);
}

/* Whether chunk @c is one of the @n sorted chunks @v. */
static bool chunk_among(const uint64_t *v, size_t n, uint64_t c)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] == c)
			return true;
		if (v[mid] < c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * Compaction's half here: every chunk keeps an eighth of its objects, so
 * a trim gives nothing back; copies made while evacuating land in chunks
 * of their own, and once the originals are freed every old chunk goes back.
 */
static void test_mem_evacuation_empties_the_old_chunks(void **state)
{
	struct mem *m = mem_new();
	void **p = calloc(NR_OBJS, sizeof(*p)), **q = calloc(NR_OBJS / 8, sizeof(*q));
	uint64_t *old = calloc(NR_OBJS, sizeof(*old)), released;
	size_t n_old = 0;
	void *other;

	(void)state;
	assert_non_null(m);
	assert_non_null(p);
	assert_non_null(q);
	assert_non_null(old);
	for (unsigned int i = 0; i < NR_OBJS; i++) {
		p[i] = mem_alloc(m, MEM_TNODE, OBJ);
		assert_non_null(p[i]);
		fill(p[i], OBJ, i);
		/* Carved in address order within a chunk, chunks in no set order. */
		if (!n_old || old[n_old - 1] != chunk_of(p[i]))
			old[n_old++] = chunk_of(p[i]);
	}
	for (unsigned int i = 0; i < NR_OBJS; i++)
		if (i % 8)
			mem_free(m, MEM_TNODE, p[i], OBJ);
	assert_int_equal(mem_trim(m), 0);
	assert_true(mem_compact_due(m));
	qsort(old, n_old, sizeof(*old), cmp_u64);

	mem_evacuate_begin(m);
	for (unsigned int i = 0; i < NR_OBJS / 8; i++) {
		q[i] = mem_alloc(m, MEM_TNODE, OBJ);
		assert_non_null(q[i]);
		assert_false(chunk_among(old, n_old, chunk_of(q[i])));
		memcpy(q[i], p[8 * i], OBJ);
	}
	/* Frees meanwhile (the reclaimer's) are not taken either. */
	other = mem_alloc(m, MEM_TNODE, OBJ);
	mem_free(m, MEM_TNODE, other, OBJ);
	assert_ptr_not_equal(mem_alloc(m, MEM_TNODE, OBJ), other);
	mem_evacuate_end(m);

	for (unsigned int i = 0; i < NR_OBJS; i += 8)
		mem_free(m, MEM_TNODE, p[i], OBJ);
	released = mem_trim(m);
	assert_int_equal(released, n_old * CHUNK);
	for (unsigned int i = 0; i < NR_OBJS / 8; i++)
		assert_true(holds(q[i], OBJ, 8 * i));
	mem_compacted(m, true);
	assert_int_equal(stats(m).compactions, 1);
	assert_false(mem_compact_due(m));
	/* One that moved nothing is not counted. */
	mem_compacted(m, false);
	assert_int_equal(stats(m).compactions, 1);
	free(old);
	free(q);
	free(p);
	mem_destroy(m);
}
#else
static void test_mem_trim_gives_nothing_back_without_slabs(void **state)
{
	struct objs *o = objs_alloc_and_free_pattern(true);

	(void)state;
	assert_int_equal(mem_trim(o->m), 0);
	assert_int_equal(stats(o->m).trims, 1);
	assert_int_equal(stats(o->m).slab_released_bytes, 0);
	objs_check_kept(o);
	/* Without slabs, mem_destroy() does not know the objects still held. */
	for (unsigned int i = 0; i < NR_OBJS; i++) {
		if (o->kept[i])
			mem_free(o->m, MEM_LEAF, o->p[i], OBJ);
	}
	objs_destroy(o);
}
#endif

/*
 * An arena (mem_arena_new()): a second thread allocates from it while the
 * writer allocates too, three sizes each, both writing every object. No
 * object overlaps another (each still holds what its thread wrote), the
 * counts after mem_arena_end() are both threads' in their classes, and
 * once everything is freed a trim gives back every chunk that held one:
 * the tails of the arena's chunks went to the free lists, so a trim finds
 * those chunks whole.
 */
#define ARENA_OBJS 60000u

struct arena_run {
	struct mem_arena *a;
	void *p[ARENA_OBJS];
};

static size_t arena_size(unsigned int i)
{
	static const size_t size[] = { 24, 96, 200 };

	return size[i % 3];
}

static void *arena_fill(void *arg)
{
	struct arena_run *r = arg;

	for (unsigned int i = 0; i < ARENA_OBJS; i++) {
		r->p[i] = mem_arena_alloc(r->a, MEM_TNODE, arena_size(i));
		assert_non_null(r->p[i]);
		fill(r->p[i], arena_size(i), i);
	}
	return NULL;
}

static void test_mem_arena_allocates_beside_the_writer(void **state)
{
	struct mem *m = mem_new();
	struct arena_run *r = calloc(1, sizeof(*r)), *w = calloc(1, sizeof(*w));
	uint64_t bytes = 0;
	struct mem_stats st;
	pthread_t t;

	(void)state;
	assert_non_null(m);
	assert_non_null(r);
	assert_non_null(w);
	r->a = mem_arena_new(m);
	assert_non_null(r->a);
	assert_int_equal(pthread_create(&t, NULL, arena_fill, r), 0);
	for (unsigned int i = 0; i < ARENA_OBJS; i++) {
		w->p[i] = mem_alloc(m, MEM_LEAF, arena_size(i));
		assert_non_null(w->p[i]);
		fill(w->p[i], arena_size(i), ARENA_OBJS + i);
		bytes += arena_size(i);
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	mem_arena_end(r->a);
	for (unsigned int i = 0; i < ARENA_OBJS; i++) {
		assert_true(holds(r->p[i], arena_size(i), i));
		assert_true(holds(w->p[i], arena_size(i), ARENA_OBJS + i));
	}
	st = stats(m);
	assert_int_equal(st.cls[MEM_TNODE].objects, ARENA_OBJS);
	assert_int_equal(st.cls[MEM_TNODE].bytes, bytes);
	assert_int_equal(st.cls[MEM_LEAF].objects, ARENA_OBJS);
	assert_int_equal(st.cls[MEM_LEAF].bytes, bytes);
	assert_int_equal(st.live_bytes, 2 * bytes);
	for (unsigned int i = 0; i < ARENA_OBJS; i++) {
		mem_free(m, MEM_TNODE, r->p[i], arena_size(i));
		mem_free(m, MEM_LEAF, w->p[i], arena_size(i));
	}
	st = stats(m);
	assert_int_equal(st.live_bytes, 0);
#ifndef LCFIB_MEM_MALLOC_ONLY
	/* Every chunk that held an object is wholly free, the arena's included: all go back. */
	assert_true(mem_trim(m) > 0);
	for (unsigned int i = 0; i < ARENA_OBJS; i++) {
		assert_false(chunk_resident(r->p[i]));
		assert_false(chunk_resident(w->p[i]));
	}
#endif
	mem_destroy(m);
	free(r);
	free(w);
}

/*
 * mem_free_many(), the reclaimer's way to free, leaves what mem_free() of
 * each object would: the same counts, the same free memory (a trim gives
 * back as much), the kept objects untouched. Mixed classes and sizes, a
 * large one among them, freed from another thread in batches of 1023.
 */
struct many {
	struct mem *one, *many; /* freed by mem_free(), by mem_free_many() */
	struct mem_obj *v;      /* the objects of "many" to free */
	size_t n;
};

static void *free_many_batches(void *arg)
{
	struct many *w = arg;

	for (size_t i = 0; i < w->n; i += 1023)
		mem_free_many(w->many, w->v + i, w->n - i < 1023 ? w->n - i : 1023);
	return NULL;
}

static void test_mem_free_many_frees_as_mem_free_does(void **state)
{
	static const struct {
		enum mem_class cls;
		uint32_t size;
	} kind[] = { { MEM_LEAF, 24 }, { MEM_TNODE, 42 }, { MEM_NH, 64 }, { MEM_TNODE, 1176 } };
	const size_t n = 200000;
	struct many w = { .one = mem_new(), .many = mem_new() };
	void **a = calloc(n, sizeof(*a)), **b = calloc(n, sizeof(*b));
	struct mem_stats s1, s2;

	(void)state;
	w.v = calloc(n, sizeof(*w.v));
	assert_non_null(w.one);
	assert_non_null(w.many);
	assert_true(a && b && w.v);
	for (size_t i = 0; i < n; i++) {
		unsigned int k = (unsigned int)(i * 7 % 4);

		a[i] = mem_alloc(w.one, kind[k].cls, kind[k].size);
		b[i] = mem_alloc(w.many, kind[k].cls, kind[k].size);
		assert_true(a[i] && b[i]);
		fill(b[i], kind[k].size / 8 * 8, i);
	}
	/* Every object but one in a hundred goes. */
	for (size_t i = 0; i < n; i++) {
		unsigned int k = (unsigned int)(i * 7 % 4);

		if (i % 100 == 0)
			continue;
		mem_free(w.one, kind[k].cls, a[i], kind[k].size);
		w.v[w.n++] =
			(struct mem_obj){ .p = b[i], .size = kind[k].size, .cls = kind[k].cls };
	}
	{
		pthread_t t;

		assert_int_equal(pthread_create(&t, NULL, free_many_batches, &w), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
	}
	s1 = stats(w.one);
	s2 = stats(w.many);
	for (unsigned int c = 0; c < MEM_CLASS_MAX; c++) {
		assert_int_equal(s1.cls[c].objects, s2.cls[c].objects);
		assert_int_equal(s1.cls[c].bytes, s2.cls[c].bytes);
	}
	assert_int_equal(s1.live_bytes, s2.live_bytes);
	assert_int_equal(s1.slab_bytes, s2.slab_bytes);
	assert_int_equal(s1.slab_free_bytes, s2.slab_free_bytes);
	assert_int_equal(s1.large_bytes, s2.large_bytes);
	assert_int_equal(mem_trim(w.one), mem_trim(w.many));
	for (size_t i = 0; i < n; i += 100) {
		unsigned int k = (unsigned int)(i * 7 % 4);

		assert_true(holds(b[i], kind[k].size / 8 * 8, i));
		/* A malloc-only build's mem_destroy() does not know them. */
		mem_free(w.one, kind[k].cls, a[i], kind[k].size);
		mem_free(w.many, kind[k].cls, b[i], kind[k].size);
	}
	mem_destroy(w.one);
	mem_destroy(w.many);
	free(w.v);
	free(a);
	free(b);
}

/*
 * Objects of 2 MiB and more are mappings of their own: aligned to 2 MiB,
 * counted as large, and unmapped when freed, one at a time or in a batch.
 */
static void test_mem_huge_objects_are_mappings_of_their_own(void **state)
{
	const size_t size = (2u << 20) + 64, n = 4;
	struct mem *m = mem_new();
	struct mem_obj v[2];
	struct mem_stats st;
	void *p[4];

	(void)state;
	assert_non_null(m);
	for (size_t i = 0; i < n; i++) {
		p[i] = mem_alloc(m, MEM_FALLBACK, size);
		assert_non_null(p[i]);
		assert_int_equal((uintptr_t)p[i] % (2u << 20), 0);
		fill(p[i], size / 8 * 8, i);
	}
	st = stats(m);
	assert_int_equal(st.cls[MEM_FALLBACK].objects, n);
	assert_int_equal(st.cls[MEM_FALLBACK].bytes, n * size);
	assert_int_equal(st.large_bytes, n * size);
	for (size_t i = 0; i < n; i++)
		assert_true(holds(p[i], size / 8 * 8, i));
	mem_free(m, MEM_FALLBACK, p[0], size);
	mem_free(m, MEM_FALLBACK, p[1], size);
	v[0] = (struct mem_obj){ .p = p[2], .size = (uint32_t)size, .cls = MEM_FALLBACK };
	v[1] = (struct mem_obj){ .p = p[3], .size = (uint32_t)size, .cls = MEM_FALLBACK };
	mem_free_many(m, v, 2);
	st = stats(m);
	assert_int_equal(st.cls[MEM_FALLBACK].objects, 0);
	assert_int_equal(st.large_bytes, 0);
#ifndef LCFIB_MEM_MALLOC_ONLY
	/* Given back: no page of them is mapped any more (msync says ENOMEM). */
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(msync(p[i], 4096, MS_ASYNC), -1);
		assert_int_equal(errno, ENOMEM);
		assert_int_equal(msync((char *)p[i] + size - 1 - (size - 1) % 4096, 4096, MS_ASYNC),
				 -1);
	}
#endif
	mem_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mem_free_many_frees_as_mem_free_does),
		cmocka_unit_test(test_mem_huge_objects_are_mappings_of_their_own),
		cmocka_unit_test(test_mem_arena_allocates_beside_the_writer),
#ifndef LCFIB_MEM_MALLOC_ONLY
		cmocka_unit_test(test_mem_trim_gives_back_wholly_free_chunks_only),
		cmocka_unit_test(test_mem_trim_chunks_are_reused_by_any_size),
		cmocka_unit_test(test_mem_trim_takes_frees_of_other_threads),
		cmocka_unit_test(test_mem_trim_keeps_chunks_with_a_live_object),
		cmocka_unit_test(test_mem_evacuation_empties_the_old_chunks),
#else
		cmocka_unit_test(test_mem_trim_gives_nothing_back_without_slabs),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
