/* SPDX-License-Identifier: MIT */
/*
 * Interface names in routes ("dev eth0").
 *
 * A name that this host has resolves to its real ifindex. A name it does
 * not have (a route file written for another box, a device not up yet)
 * gets a stable pseudo-index from a process-wide table, numbered from
 * IFNAME_VIRT_BASE up: the route keeps the device by name, and the same
 * name always gives the same index for the life of the process (or until
 * ifname_reset()).
 *
 * Threads: every function may be called from any thread; the table is
 * guarded by a mutex. Not for readers' hot paths.
 */
#ifndef LCFIB_IFNAME_H
#define LCFIB_IFNAME_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/err.h"

/* Pseudo-indexes: far above any index the kernel hands out. */
#define IFNAME_VIRT_BASE 0xff000000u

static inline bool ifname_is_virtual(uint32_t ifindex)
{
	return ifindex >= IFNAME_VIRT_BASE;
}

/*
 * Whether @name is a valid interface name: 1 to IF_NAMESIZE - 1 bytes,
 * not "." or "..", no '/' and no blanks (the kernel's dev_valid_name,
 * except that ':' is allowed for alias labels).
 */
bool ifname_valid(const char *name);

/*
 * The ifindex of @name: the host's, else the name's pseudo-index (made on
 * first use). Returns 0, -EINVAL for an invalid name, -ENOSPC when the
 * pseudo-indexes run out, or -ENOMEM; the message in @err names the text.
 */
int ifname_resolve(const char *name, uint32_t *ifindex, struct errbuf *err);

/*
 * The name of @ifindex in @buf: the table's for a pseudo-index, the host's
 * for a real one, else "if<N>". Returns @buf.
 */
const char *ifname_name(uint32_t ifindex, char buf[IF_NAMESIZE]);

/*
 * Forgets every pseudo-index and frees the table (tests, shutdown).
 * Routes still holding pseudo-indexes then print as "if<N>" and the names
 * may get other indexes later.
 */
void ifname_reset(void);

#endif
