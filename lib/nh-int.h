/* SPDX-License-Identifier: MIT */
/*
 * The writer's table of nexthops (struct nh, lib/nh.h): anonymous ones
 * shared by value through a hash, objects by id, groups, references.
 * For lib/nh.c and lib/fib.c; not installed, not exported by liblcfib.so.
 *
 * Threads: everything here belongs to the writer.
 */
#ifndef LCFIB_NH_INT_H
#define LCFIB_NH_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/err.h"
#include "lib/mem.h"
#include "lib/nh.h"
#include "lib/reclaim.h"

struct nh_table;

/* Returns NULL with errno set. */
struct nh_table *nh_table_new(struct mem *m, struct reclaim *rc);
/* Frees every nexthop now: no readers, no routes left. */
void nh_table_destroy(struct nh_table *nt);

/*
 * The shared anonymous nexthop for @n paths (1: a single path, more:
 * multipath), with a reference taken; made if new. NULL with -errno in
 * *@ret and a message on bad paths (no gateway nor device, weight 0,
 * too many) or no memory.
 */
struct nh *nh_get_paths(struct nh_table *nt, const struct nh_path *paths, unsigned int n, int *ret,
			struct errbuf *err);
/* The object @id with a reference taken, or NULL (-ENOENT in *@ret, message). */
struct nh *nh_get_id(struct nh_table *nt, uint32_t id, int *ret, struct errbuf *err);
/* Takes another reference. */
void nh_hold(struct nh *nh);
/* Drops a reference; the last one unlinks the nexthop and retires it. */
void nh_put(struct nh_table *nt, struct nh *nh);

/* The object @id or NULL; no reference taken. */
struct nh *nh_find_id(const struct nh_table *nt, uint32_t id);

/*
 * RTM_NEWNEXTHOP. @flags are FIB_F_* (lib/fib.h): without REPLACE an
 * existing id is -EEXIST; with it the object's info is replaced, and the
 * groups holding it follow. Members of a group must exist and must not be
 * groups (-EINVAL). On error nothing changed.
 */
int nh_obj_set(struct nh_table *nt, const struct nh_obj_cfg *cfg, unsigned int flags,
	       struct errbuf *err);

/*
 * RTM_DELNEXTHOP, after the caller has removed the routes that use @nh:
 * drops it from every group that holds it (groups left empty are returned
 * through @emptied, up to @cap of them, for the caller to remove their
 * routes and delete them in turn) and drops the object's own reference.
 */
int nh_obj_del(struct nh_table *nt, struct nh *nh, struct nh **emptied, unsigned int cap,
	       unsigned int *n_emptied, struct errbuf *err);

/* Calls @fn for every nexthop object (id > 0), in no order. Writer. */
void nh_for_each_obj(const struct nh_table *nt, void (*fn)(void *ctx, struct nh *nh), void *ctx);

/*
 * Writer, for invariant checks: nh_check_begin() counts the references
 * that objects and groups hold; the caller adds one per route (check_refs)
 * and nh_check_end() compares with every refcnt: -EUCLEAN and a message on
 * the first difference.
 */
void nh_check_begin(struct nh_table *nt);
int nh_check_end(const struct nh_table *nt, struct errbuf *err);

/* Number of live nexthops: anonymous and objects. */
void nh_table_counts(const struct nh_table *nt, uint64_t *anonymous, uint64_t *objects);

#endif
