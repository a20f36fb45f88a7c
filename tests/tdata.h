/* SPDX-License-Identifier: MIT */
/*
 * Test data: the real full BGP table of tests/data/fullview-2024.txt.gz
 * (see tests/data/LICENSE.fullview-2024), and random numbers that repeat.
 */
#ifndef LCFIB_TESTS_TDATA_H
#define LCFIB_TESTS_TDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/addr.h"
#include "lib/route.h"
#include "lib/stats.h"

/*
 * TDATA_UNDER_TSAN: built with ThreadSanitizer (gcc or clang), where the
 * one-threaded full-table tests take minutes and are skipped, saying so.
 */
#if defined(__SANITIZE_THREAD__)
#define TDATA_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TDATA_UNDER_TSAN 1
#endif
#endif

/* The bits of the widest internal node the statistics count (IPv4's root, on a full view), or 0. */
static inline unsigned int tdata_widest_bits(const struct trie_stats *st)
{
	unsigned int bits = 0;

	for (unsigned int b = 0; b <= TRIE_MAX_BITS; b++)
		bits = st->nodes_by_bits[b] ? b : bits;
	return bits;
}

struct tdata_table {
	struct addr_prefix *v4;
	size_t n4;
	struct addr_prefix *v6;
	size_t n6;
};

/* The folder of the test data: $LCFIB_DATA, else "tests/data". */
const char *tdata_dir(void);

/*
 * Loads the full table (read through `gzip -dc`), in file order. Returns 0,
 * or a negative errno with a message on stderr naming the file and line.
 */
int tdata_load_fullview(struct tdata_table *t);
void tdata_free(struct tdata_table *t);

/*
 * The trie edit most tests make: the prefix gets exactly one unicast route
 * of metric @metric, or (del) none. Pass a struct tdata_edit as the context
 * of trie*_edit() with tdata_edit_set as the callback.
 */
struct tdata_edit {
	uint32_t metric;
	bool del;
};

int tdata_edit_set(void *ctx, const struct fib_route *old, unsigned int n_old,
		   struct fib_route *out, unsigned int cap);

/* A small, fast, seeded generator (xorshift64*), so failures repeat. */
struct tdata_rng {
	uint64_t s;
};

static inline void tdata_rng_seed(struct tdata_rng *r, uint64_t seed)
{
	r->s = seed ? seed : 0x9e3779b97f4a7c15ull;
}

static inline uint64_t tdata_rng_next(struct tdata_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

/* The seed from $LCFIB_SEED, else @dflt; printed so a failure can be rerun. */
uint64_t tdata_seed(uint64_t dflt);

/* Shuffles @v[0..n) in place with @r (Fisher-Yates): every order as likely. */
void tdata_shuffle32(uint32_t *v, size_t n, struct tdata_rng *r);

#endif
