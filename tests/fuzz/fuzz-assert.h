/* SPDX-License-Identifier: MIT */
/* The fuzz targets' own checks: a violation aborts, which libFuzzer reports with its input. */
#ifndef LCFIB_FUZZ_ASSERT_H
#define LCFIB_FUZZ_ASSERT_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_ASSERT(cond)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#endif
