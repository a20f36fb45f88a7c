/* SPDX-License-Identifier: MIT */
/*
 * What of a FIB the tests reach beyond lib/fib.h. For lib/fib.c and the
 * tests; not installed, not exported by liblcfib.so.
 */
#ifndef LCFIB_FIB_INT_H
#define LCFIB_FIB_INT_H

#include "lib/fib.h"
#include "lib/mem.h"

/* @f's allocator, for mem_fail_after() (lib/mem.h). */
struct mem *fib_mem(struct fib *f);

#endif
