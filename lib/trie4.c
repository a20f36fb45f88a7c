/* SPDX-License-Identifier: MIT */
/* The LC-trie for IPv4: 32-bit keys. */
#include <arpa/inet.h>
#include <stdint.h>

#include "lib/trie.h"

#define TRIE   trie4
#define TKEY   uint32_t
#define KEYLEN 32

/* The shift by 32 is done in 64 bits, so it needs no branch. */
static inline uint32_t key_shr(uint32_t x, unsigned int s)
{
	return (uint32_t)((uint64_t)x >> s);
}

static inline unsigned int key_fls(uint32_t x)
{
	return 31u - (unsigned int)__builtin_clz(x);
}

static void key_format(uint32_t key, char *buf, size_t size)
{
	uint32_t be = htonl(key);

	inet_ntop(AF_INET, &be, buf, (socklen_t)size);
}

unsigned int trie_batch_min_leaves = 1u << 17;
unsigned int trie_rebuild_split_min = 1u << 14;

#ifdef TRIE_READ_STATS
__thread uint64_t trie_reads[TRIE_READ_KINDS];
#endif

#include "lib/trie-tmpl.h"
