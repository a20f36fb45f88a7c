/* SPDX-License-Identifier: MIT */
/*
 * The reference LPM: one open-addressing hash set per prefix length
 * (linear probing, deletion by backward shift, so no tombstones pile up
 * under millions of random edits). Keys are 128 bits wide for both
 * families; an IPv4 key is its 32-bit host-order value.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/ref.h"

typedef unsigned __int128 ref_key;

struct ref_slot {
	uint64_t hi, lo; /* the key, split so the slot stays 8-byte aligned */
	uint64_t value;
};

/* The prefixes of one length. */
struct ref_set {
	struct ref_slot *slot;
	uint8_t *used;
	uint64_t mask; /* slots - 1; slots is a power of two, or 0 */
	uint64_t count;
};

struct ref {
	int family;
	unsigned int bits;
	uint64_t count;
	struct ref_set len[129];
};

#define REF_MIN_SLOTS 16

static void *ref_calloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "ref: out of memory\n");
		abort();
	}
	return p;
}

/* A misuse is a bug in the test, not something to recover from. */
static void ref_misuse(const char *what)
{
	fprintf(stderr, "ref: %s\n", what);
	abort();
}

struct ref *ref_new(int family)
{
	struct ref *r;

	if (family != AF_INET && family != AF_INET6)
		ref_misuse("family must be AF_INET or AF_INET6");
	r = ref_calloc(1, sizeof(*r));
	r->family = family;
	r->bits = addr_bits(family);
	return r;
}

void ref_free(struct ref *r)
{
	if (!r)
		return;
	for (unsigned int i = 0; i <= r->bits; i++) {
		free(r->len[i].slot);
		free(r->len[i].used);
	}
	free(r);
}

static ref_key ref_addr_key(const struct ref *r, const struct addr *a)
{
	if (a->family != r->family)
		ref_misuse("address of the wrong family");
	return r->family == AF_INET ? (ref_key)addr_key4(a) : (ref_key)addr_key6(a);
}

/* The first @plen bits of @key (of @bits bits). */
static ref_key ref_mask(ref_key key, unsigned int plen, unsigned int bits)
{
	if (plen == 0)
		return 0;
	return key & (~(ref_key)0 << (bits - plen));
}

/* The key of a prefix, which must have no host bits. */
static ref_key ref_prefix_key(const struct ref *r, const struct addr_prefix *p)
{
	ref_key key = ref_addr_key(r, &p->a);

	if (p->plen > r->bits)
		ref_misuse("prefix length out of range");
	if (ref_mask(key, p->plen, r->bits) != key)
		ref_misuse("prefix with host bits set");
	return key;
}

/* A 128-to-64-bit mix (murmur3's finalizer over both halves). */
static uint64_t ref_hash(ref_key key)
{
	uint64_t h = (uint64_t)key ^ ((uint64_t)(key >> 64) * 0x9e3779b97f4a7c15ull);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static ref_key ref_slot_key(const struct ref_slot *s)
{
	return ((ref_key)s->hi << 64) | s->lo;
}

/* The slot holding @key, or the empty slot where it would go. */
static uint64_t ref_set_probe(const struct ref_set *s, ref_key key)
{
	uint64_t i = ref_hash(key) & s->mask;

	while (s->used[i] && ref_slot_key(&s->slot[i]) != key)
		i = (i + 1) & s->mask;
	return i;
}

static void ref_set_grow(struct ref_set *s)
{
	uint64_t n = s->mask ? 2 * (s->mask + 1) : REF_MIN_SLOTS;
	struct ref_set old = *s;

	s->slot = ref_calloc(n, sizeof(*s->slot));
	s->used = ref_calloc(n, 1);
	s->mask = n - 1;
	for (uint64_t i = 0; old.mask && i <= old.mask; i++) {
		uint64_t j;

		if (!old.used[i])
			continue;
		j = ref_set_probe(s, ref_slot_key(&old.slot[i]));
		s->slot[j] = old.slot[i];
		s->used[j] = 1;
	}
	free(old.slot);
	free(old.used);
}

void ref_set(struct ref *r, const struct addr_prefix *p, uint64_t value)
{
	ref_key key = ref_prefix_key(r, p);
	struct ref_set *s = &r->len[p->plen];
	uint64_t i;

	/* Keep the load at or under 3/4, so probe runs stay short. */
	if (!s->mask || 4 * (s->count + 1) > 3 * (s->mask + 1))
		ref_set_grow(s);
	i = ref_set_probe(s, key);
	if (!s->used[i]) {
		s->used[i] = 1;
		s->slot[i].hi = (uint64_t)(key >> 64);
		s->slot[i].lo = (uint64_t)key;
		s->count++;
		r->count++;
	}
	s->slot[i].value = value;
}

/*
 * Empties slot @i, then moves later slots of the run back where a probe
 * from their home slot still finds them (Knuth's algorithm R).
 */
static void ref_set_remove_at(struct ref_set *s, uint64_t i)
{
	uint64_t j = i;

	for (;;) {
		uint64_t home;

		j = (j + 1) & s->mask;
		if (!s->used[j])
			break;
		home = ref_hash(ref_slot_key(&s->slot[j])) & s->mask;
		/* j may move to i unless its home lies cyclically in (i, j]. */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		s->slot[i] = s->slot[j];
		i = j;
	}
	s->used[i] = 0;
	s->count--;
}

int ref_del(struct ref *r, const struct addr_prefix *p)
{
	ref_key key = ref_prefix_key(r, p);
	struct ref_set *s = &r->len[p->plen];
	uint64_t i;

	if (!s->count)
		return -ENOENT;
	i = ref_set_probe(s, key);
	if (!s->used[i])
		return -ENOENT;
	ref_set_remove_at(s, i);
	r->count--;
	return 0;
}

int ref_get(const struct ref *r, const struct addr_prefix *p, uint64_t *value)
{
	ref_key key = ref_prefix_key(r, p);
	const struct ref_set *s = &r->len[p->plen];
	uint64_t i;

	if (!s->count)
		return 0;
	i = ref_set_probe(s, key);
	if (!s->used[i])
		return 0;
	if (value)
		*value = s->slot[i].value;
	return 1;
}

int ref_lookup(const struct ref *r, const struct addr *a, unsigned int *plen, uint64_t *value)
{
	ref_key key = ref_addr_key(r, a);

	for (unsigned int len = r->bits + 1; len--;) {
		const struct ref_set *s = &r->len[len];
		uint64_t i;

		if (!s->count)
			continue;
		i = ref_set_probe(s, ref_mask(key, len, r->bits));
		if (!s->used[i])
			continue;
		if (plen)
			*plen = len;
		if (value)
			*value = s->slot[i].value;
		return 1;
	}
	return 0;
}

uint64_t ref_count(const struct ref *r)
{
	return r->count;
}
