/* SPDX-License-Identifier: MIT */
/*
 * The brute-force reference the tests check the trie against: one hash
 * set per prefix length, a lookup tries every length from the longest
 * down. Slow and obviously right.
 */
#ifndef LCFIB_TESTS_REF_H
#define LCFIB_TESTS_REF_H

#include <stdint.h>

#include "lib/addr.h"

struct ref;

/* A reference for @family (AF_INET or AF_INET6). Aborts on no memory. */
struct ref *ref_new(int family);
void ref_free(struct ref *r);

/* Sets @p to @value (inserting or replacing). */
void ref_set(struct ref *r, const struct addr_prefix *p, uint64_t value);
/* Removes @p; returns 0, or -ENOENT when absent. */
int ref_del(struct ref *r, const struct addr_prefix *p);
/* Whether @p is present; its value in *@value. */
int ref_get(const struct ref *r, const struct addr_prefix *p, uint64_t *value);
/* Longest match for @a: returns 1 with its length and value, or 0. */
int ref_lookup(const struct ref *r, const struct addr *a, unsigned int *plen, uint64_t *value);
/* Number of prefixes held. */
uint64_t ref_count(const struct ref *r);

#endif
