/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a route file, as lcfibd reads one (lib/routefile.c).
 * The first byte picks the format and skip-bad-lines; the second, where
 * the file is cut in two feeds (a line cut across them must read as
 * whole). Then the file is applied to a FIB. Checked beyond the
 * sanitizers: every bad line has a message naming the file and line; a
 * file with bad lines and no skip-bad-lines applies nothing; a failed
 * apply leaves the FIB's routes as they were; the tries' invariants and
 * the nexthops' reference counts hold after every apply.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/fib.h"
#include "lib/routefile.h"
#include "tests/fuzz/fuzz-assert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t fuzz_routes(struct fib *f)
{
	struct fib_state st;

	fib_get_state(f, &st);
	return st.routes4 + st.routes6;
}

static void fuzz_bad_lines(const struct routefile *rf)
{
	uint64_t n = routefile_bad_lines(rf);

	for (uint64_t i = 0; i < n; i++) {
		unsigned int col;
		const char *msg;
		uint64_t line;

		if (routefile_bad_line(rf, i, &line, &col, &msg))
			break; /* past those kept */
		FUZZ_ASSERT(line >= 1 && line <= routefile_lines(rf) + 1);
		FUZZ_ASSERT(msg && strncmp(msg, "fuzz:", 5) == 0 && strlen(msg) > 6);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fib *f;
	struct routefile_opts o = { .family = AF_UNSPEC, .name = "fuzz" };
	struct routefile_result res;
	struct routefile *rf;
	struct errbuf err;
	uint64_t before;
	size_t cut;
	int ret;

	if (size < 2)
		return 0;
	if (!f) {
		fib_reader_register();
		f = fib_new(); /* this thread is its writer, for the whole run */
	}
	FUZZ_ASSERT(f);
	o.format = (const enum routefile_format[]){ ROUTEFILE_AUTO, ROUTEFILE_BATCH,
						    ROUTEFILE_PLAIN }[data[0] % 3];
	o.skip_bad_lines = data[0] & 0x80;
	cut = size > 2 ? data[1] % (size - 2) : 0;
	data += 2;
	size -= 2;
	rf = routefile_new(&o);
	FUZZ_ASSERT(rf);
	FUZZ_ASSERT(routefile_feed(rf, (const char *)data, cut, false) == 0);
	FUZZ_ASSERT(routefile_feed(rf, (const char *)data + cut, size - cut, true) == 0);
	FUZZ_ASSERT(routefile_routes(rf) <= routefile_lines(rf));
	fuzz_bad_lines(rf);
	before = fuzz_routes(f);
	err.msg[0] = '\0';
	ret = routefile_apply(rf, f, NULL, NULL, &res, &err);
	if (ret) {
		FUZZ_ASSERT(ret < 0 && ret != -ENOTRECOVERABLE && err.msg[0]);
		FUZZ_ASSERT(fuzz_routes(f) == before && res.applied == 0);
	}
	if (routefile_bad_lines(rf) && !o.skip_bad_lines)
		FUZZ_ASSERT(ret == -EINVAL);
	fuzz_bad_lines(rf);
	FUZZ_ASSERT(fib_check(f, &err) == 0);
	routefile_free(rf);
	/* Each input starts from an empty FIB. */
	FUZZ_ASSERT(fib_table_flush(f, 0, AF_UNSPEC) == 0);
	FUZZ_ASSERT(fuzz_routes(f) == 0);
	return 0;
}
