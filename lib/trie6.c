/* SPDX-License-Identifier: MIT */
/* The LC-trie for IPv6: 128-bit keys. */
#include <arpa/inet.h>
#include <stdint.h>

#include "lib/trie.h"

#define TRIE   trie6
#define TKEY   trie_key6
#define KEYLEN 128

static inline trie_key6 key_shr(trie_key6 x, unsigned int s)
{
	return s >= 128 ? 0 : x >> s;
}

static inline unsigned int key_fls(trie_key6 x)
{
	uint64_t hi = (uint64_t)(x >> 64);

	if (hi)
		return 127u - (unsigned int)__builtin_clzll(hi);
	return 63u - (unsigned int)__builtin_clzll((uint64_t)x);
}

static void key_format(trie_key6 key, char *buf, size_t size)
{
	unsigned char a[16];

	for (int i = 0; i < 16; i++)
		a[i] = (unsigned char)(key >> (8 * (15 - i)));
	inet_ntop(AF_INET6, a, buf, (socklen_t)size);
}

/*
 * Every IPv6 node takes the thresholds the kernel keeps for the root
 * (inflate 30 %, halve 15 %; IPv4's other nodes have 50 % and 25 %): IPv6
 * prefixes are sparse (a full view has 160 k of them spread over
 * 2000::/3), so the kernel's thresholds leave its nodes small and a lookup
 * walks twice IPv4's levels. On the full view: 6.57 -> 5.80 levels on
 * average, 6.78 -> 5.97 objects read by a lookup inside a prefix, for
 * 68.5 -> 72.5 accounted bytes a route (docs/BENCHMARKS.md, issue 9's
 * fourteenth round). The halve threshold moves with the inflate one: with
 * 30 % and 25 %, resizing a resized trie again changed it (test_trie).
 * INFLATE_THRESHOLD6 and HALVE_THRESHOLD6 set them at build time;
 * INFLATE_THRESHOLD and HALVE_THRESHOLD set both families'. The root
 * itself has IPv4's root thresholds (TRIE_ROOT_THRESHOLD_DEFAULT, 25 %):
 * on the full view it keeps its 4 bits either way.
 */
#ifndef INFLATE_THRESHOLD6
#define INFLATE_THRESHOLD6 30
#endif
#ifndef HALVE_THRESHOLD6
#define HALVE_THRESHOLD6 15
#endif
#ifndef INFLATE_THRESHOLD
#define INFLATE_THRESHOLD INFLATE_THRESHOLD6
#endif
#ifndef HALVE_THRESHOLD
#define HALVE_THRESHOLD HALVE_THRESHOLD6
#endif

#include "lib/trie-tmpl.h"
