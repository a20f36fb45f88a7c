/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a buffer of netlink messages, as a NETLINK_ROUTE
 * socket's read gives it, framed by rtnl_next() and decoded message by
 * message (see fuzz-check.h for what is checked).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/fuzz/fuzz-check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_netlink(data, size);
	return 0;
}
