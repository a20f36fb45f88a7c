/* SPDX-License-Identifier: MIT */
/*
 * The brute-force reference's answers for the e2e tests of streamed
 * lookups (tests/e2e/test_stream.sh): loads the full table into
 * tests/ref.c's hash sets, reads addresses from stdin, one a line, and
 * prints for each the prefix of its longest match, or "-" without one
 * ("!" for a line that is not an address; blank and # lines get nothing,
 * as lcfibd skips them). Not a test of its own.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/addr.h"
#include "lib/errbuf.h"
#include "tests/ref.h"
#include "tests/tdata.h"

static void lpm_ref_fill(struct ref *r, const struct addr_prefix *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ref_set(r, &p[i], i);
}

static void lpm_ref_answer(struct ref *v4, struct ref *v6, char *line)
{
	char buf[ADDR_STRLEN];
	struct addr_prefix p;
	struct errbuf err;
	unsigned int plen;
	uint64_t value;

	line[strcspn(line, "\r\n")] = '\0';
	if (!line[0] || line[0] == '#')
		return;
	if (addr_parse(line, AF_UNSPEC, &p.a, &err)) {
		puts("!");
		return;
	}
	if (!ref_lookup(p.a.family == AF_INET ? v4 : v6, &p.a, &plen, &value)) {
		puts("-");
		return;
	}
	p.plen = (uint8_t)plen;
	addr_mask(&p.a, plen);
	puts(addr_prefix_format(&p, buf, sizeof(buf)));
}

int main(void)
{
	struct tdata_table t;
	struct ref *v4, *v6;
	char line[256];

	if (tdata_load_fullview(&t))
		return 1;
	v4 = ref_new(AF_INET);
	v6 = ref_new(AF_INET6);
	lpm_ref_fill(v4, t.v4, t.n4);
	lpm_ref_fill(v6, t.v6, t.n6);
	while (fgets(line, sizeof(line), stdin))
		lpm_ref_answer(v4, v6, line);
	ref_free(v4);
	ref_free(v6);
	tdata_free(&t);
	return fflush(stdout) ? 1 : 0;
}
