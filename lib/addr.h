/* SPDX-License-Identifier: MIT */
/*
 * IPv4 and IPv6 addresses and prefixes: parsing, printing, and the
 * host-order keys the tries use. Public: <lcfib/addr.h>.
 */
#ifndef LCFIB_ADDR_H
#define LCFIB_ADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "errbuf.h"

#define ADDR_STRLEN 64 /* an IPv6 address, "/128" and a NUL, with room */

/* An IPv6 trie key: 128 bits, 8-byte aligned so that IPv6 trie nodes stay compact. */
typedef unsigned __int128 trie_key6 __attribute__((aligned(8)));

struct addr {
	uint8_t family; /* AF_INET or AF_INET6 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
		uint8_t b[16];
	};
};

struct addr_prefix {
	struct addr a;
	uint8_t plen;
};

/*
 * Parses an address of @family (AF_UNSPEC: either). Returns 0 or -EINVAL
 * with a message naming the text.
 */
int addr_parse(const char *s, int family, struct addr *out, struct errbuf *err);

/*
 * Parses "ADDR/LEN", "ADDR" (a host prefix) or "default" (needs @family).
 * Host bits past the prefix length are an error (-EINVAL), as is a length
 * out of range.
 */
int addr_parse_prefix(const char *s, int family, struct addr_prefix *out, struct errbuf *err);

/* Writes the address or prefix to @buf (ADDR_STRLEN bytes suffice); returns @buf. */
char *addr_format(const struct addr *a, char *buf, size_t size);
char *addr_prefix_format(const struct addr_prefix *p, char *buf, size_t size);

/* Whether bits past @plen are set. */
bool addr_has_host_bits(const struct addr *a, unsigned int plen);
/* Clears the bits past @plen. */
void addr_mask(struct addr *a, unsigned int plen);

static inline unsigned int addr_bits(int family)
{
	return family == AF_INET6 ? 128 : 32;
}

static inline uint32_t addr_key4(const struct addr *a)
{
	return ntohl(a->v4.s_addr);
}

/* be64toh(), which <endian.h> declares only outside strict ISO C (-std=c11). */
static inline uint64_t addr_be64_to_host(uint64_t x)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return __builtin_bswap64(x);
#else
	return x;
#endif
}

static inline trie_key6 addr_key6_raw(const struct in6_addr *a)
{
	uint64_t hi, lo;

	memcpy(&hi, a->s6_addr, 8);
	memcpy(&lo, a->s6_addr + 8, 8);
	return (trie_key6)addr_be64_to_host(hi) << 64 | addr_be64_to_host(lo);
}

static inline trie_key6 addr_key6(const struct addr *a)
{
	return addr_key6_raw(&a->v6);
}

void addr_from_key4(struct addr *a, uint32_t key);
void addr_from_key6(struct addr *a, trie_key6 key);

#endif
