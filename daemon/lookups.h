/* SPDX-License-Identifier: MIT */
/*
 * Streamed lookups: the addresses come in data frames after the lookups
 * RPC, the answers go out in lines frames, in order, as the connection
 * drains. Loop thread; each lookup is a read-side section of its own.
 */
#ifndef LCFIB_DAEMON_LOOKUPS_H
#define LCFIB_DAEMON_LOOKUPS_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/err.h"

struct lcfibd;
struct ctl_conn;

/*
 * Starts the stream of request @id on @c: in table @table if @given, else
 * by the kernel's default rules; answers as JSON lines if @json, else as
 * text. 1 (the reply comes at the stream's end), or -1 with @e.
 */
int lookups_start(struct ctl_conn *c, uint32_t id, uint32_t table, bool given, bool json,
		  struct lcfibd_err *e);

#endif
