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

#include "lib/trie-tmpl.h"
