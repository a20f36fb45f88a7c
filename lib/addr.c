/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/addr.h"
#include "lib/err.h"

int addr_parse(const char *s, int family, struct addr *out, struct errbuf *err)
{
	memset(out, 0, sizeof(*out));
	if ((family == AF_UNSPEC || family == AF_INET) && inet_pton(AF_INET, s, &out->v4) == 1) {
		out->family = AF_INET;
		return 0;
	}
	if ((family == AF_UNSPEC || family == AF_INET6) && inet_pton(AF_INET6, s, &out->v6) == 1) {
		out->family = AF_INET6;
		return 0;
	}
	err_set(err, "'%s' is not an %saddress", s,
		family == AF_INET    ? "IPv4 "
		: family == AF_INET6 ? "IPv6 "
				     : "IP ");
	return -EINVAL;
}

bool addr_has_host_bits(const struct addr *a, unsigned int plen)
{
	unsigned int bytes = addr_bits(a->family) / 8, i = plen / 8;

	if (plen >= bytes * 8)
		return false;
	/* The partial byte, then every byte after it. */
	if (a->b[i] & (0xffu >> (plen % 8)))
		return true;
	while (++i < bytes) {
		if (a->b[i])
			return true;
	}
	return false;
}

void addr_mask(struct addr *a, unsigned int plen)
{
	unsigned int bytes = addr_bits(a->family) / 8, i = plen / 8;

	if (plen >= bytes * 8)
		return;
	a->b[i] &= (uint8_t) ~(0xffu >> (plen % 8));
	while (++i < bytes)
		a->b[i] = 0;
}

int addr_parse_prefix(const char *s, int family, struct addr_prefix *out, struct errbuf *err)
{
	char buf[ADDR_STRLEN];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned long plen;
	char *end;
	int ret;

	memset(out, 0, sizeof(*out));
	if (strcmp(s, "default") == 0 || strcmp(s, "any") == 0 || strcmp(s, "all") == 0) {
		if (family != AF_INET && family != AF_INET6) {
			err_set(err, "'%s' needs an address family", s);
			return -EINVAL;
		}
		out->a.family = (uint8_t)family;
		return 0;
	}
	if (alen >= sizeof(buf)) {
		err_set(err, "'%.*s...' is too long for an address", 20, s);
		return -EINVAL;
	}
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	ret = addr_parse(buf, family, &out->a, err);
	if (ret) {
		if (slash)
			err_prefix(err, "'%s'", s);
		return ret;
	}
	if (!slash) {
		out->plen = (uint8_t)addr_bits(out->a.family);
		return 0;
	}
	errno = 0;
	plen = strtoul(slash + 1, &end, 10);
	if (!slash[1] || *end || errno || plen > addr_bits(out->a.family) || slash[1] == '-' ||
	    slash[1] == '+' || slash[1] == ' ') {
		err_set(err, "'%s': prefix length must be 0..%u", s, addr_bits(out->a.family));
		return -EINVAL;
	}
	out->plen = (uint8_t)plen;
	if (addr_has_host_bits(&out->a, out->plen)) {
		struct addr_prefix p = *out;

		addr_mask(&p.a, p.plen);
		addr_prefix_format(&p, buf, sizeof(buf));
		err_set(err, "'%s' has host bits set past /%u (did you mean %s?)", s, out->plen,
			buf);
		return -EINVAL;
	}
	return 0;
}

char *addr_format(const struct addr *a, char *buf, size_t size)
{
	if (!inet_ntop(a->family, a->b, buf, (socklen_t)size))
		snprintf(buf, size, "?");
	return buf;
}

char *addr_prefix_format(const struct addr_prefix *p, char *buf, size_t size)
{
	size_t n;

	addr_format(&p->a, buf, size);
	n = strlen(buf);
	snprintf(buf + n, size - n, "/%u", p->plen);
	return buf;
}

void addr_from_key4(struct addr *a, uint32_t key)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->v4.s_addr = htonl(key);
}

void addr_from_key6(struct addr *a, trie_key6 key)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET6;
	for (int i = 15; i >= 0; i--) {
		a->b[i] = (uint8_t)key;
		key >>= 8;
	}
}
