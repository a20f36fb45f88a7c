/* SPDX-License-Identifier: MIT */
/*
 * Test data: the real full BGP table of tests/data/fullview-2024.txt.gz
 * (see tests/data/LICENSE.fullview-2024), and random numbers that repeat.
 */
#ifndef LCFIB_TESTS_TDATA_H
#define LCFIB_TESTS_TDATA_H

#include <stddef.h>
#include <stdint.h>

#include "lib/addr.h"

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

#endif
