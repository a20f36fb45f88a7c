/* SPDX-License-Identifier: MIT */
/*
 * The figures a FIB reports: its memory per object class and its
 * reclamation (fib_get_state()), and one table's trie (fib_table_stats_rcu()).
 * Public (installed as <lcfib/stats.h>); the modules that count them
 * (lib/mem.h, lib/reclaim.h, lib/trie.h) are not.
 */
#ifndef LCFIB_STATS_H
#define LCFIB_STATS_H

#include <stdint.h>

enum mem_class {
	MEM_TNODE,    /* trie internal nodes */
	MEM_LEAF,     /* trie leaves with their routes */
	MEM_NH,       /* nexthop objects */
	MEM_NH_INFO,  /* nexthop contents (paths, group members) */
	MEM_TABLE,    /* tables and their tries */
	MEM_HASH,     /* hash tables: the nexthops', the tries' shared routes' */
	MEM_RECLAIM,  /* bookkeeping of retired objects */
	MEM_FALLBACK, /* the tries' root fallbacks (a table per root, lib/trie-tmpl.h) */
	MEM_CLASS_MAX,
};

struct mem_class_stats {
	uint64_t objects; /* live objects */
	uint64_t bytes;   /* live bytes (sizes rounded to the 8-byte slab grain) */
	uint64_t allocs;
	uint64_t frees;
};

struct mem_stats {
	struct mem_class_stats cls[MEM_CLASS_MAX];
	uint64_t live_bytes;          /* sum of cls[].bytes */
	uint64_t slab_bytes;          /* slab chunks held (live + free objects) */
	uint64_t slab_free_bytes;     /* free objects inside slab chunks */
	uint64_t large_bytes;         /* live objects served by malloc */
	uint64_t slab_released_bytes; /* chunks given back to the system, not reused yet */
	uint64_t trims;               /* trims run (fib_mem_trim(), bulk ends, flushes, idle) */
	uint64_t trimmed_bytes;       /* chunk bytes given back by them, in all */
	uint64_t compactions;         /* the tries built anew to empty chunks (fib_mem_trim()) */
};

struct reclaim_stats {
	uint64_t sync_mem;      /* threshold in force */
	uint64_t forced_waits;  /* grace periods the writer waited for */
	uint64_t wait_ns_total; /* time the writer spent in them */
	uint64_t wait_ns_max;   /* longest single wait */
	uint64_t retired_bytes; /* since creation */
	uint64_t freed_bytes;
	uint64_t pending_bytes; /* retired, not yet freed */
	uint64_t peak_pending;  /* highest pending_bytes seen */
	uint64_t max_object;    /* largest single object retired */
	uint64_t retired_objects;
	uint64_t background_batches; /* batches freed off the writer's path */
};

#define TRIE_MAX_BITS 24 /* widest internal node: 2^24 children, 128 MiB */
/*
 * fib_set_root_threshold(): the root's inflate threshold, in percent. The
 * default, 25, gives the IPv4 full view a root of 19 bits (lib/trie-tmpl.h,
 * INFLATE_THRESHOLD_ROOT, says why not the kernel's 30).
 */
#define TRIE_ROOT_THRESHOLD_DEFAULT 25
#define TRIE_ROOT_THRESHOLD_MIN     2
#define TRIE_ROOT_THRESHOLD_MAX     100

/* Statistics in the spirit of /proc/net/fib_triestat. */
struct trie_stats {
	uint64_t leaves;
	uint64_t inline_leaves; /* of them, in their parent's slot (lib/trie-tmpl.h, slot_inline())
				 */
	uint64_t shared_routes; /* the routes inline leaves share, one copy each */
	uint64_t prefixes;      /* distinct (key, plen) */
	uint64_t routes;
	uint64_t tnodes;
	uint64_t nodes_by_bits[TRIE_MAX_BITS + 1]; /* internal nodes by bits */
	uint64_t pointers;                         /* child slots of all internal nodes */
	uint64_t null_pointers;                    /* empty ones */
	uint64_t leaf_bytes; /* leaves of their own, and the routes inline leaves share */
	uint64_t tnode_bytes;
	uint64_t fallback_bytes; /* the root's fallback table, 8 bytes a root child */
	uint64_t answers;        /* empty slots that hold their answer (root's included) */
	uint64_t root_answers;   /* those of the root, where they are its fallbacks */
	uint64_t total_depth;    /* sum of leaf depths (root = depth 1 for a lone leaf) */
	unsigned int max_depth;
	uint64_t split_builds; /* builds anew split between two threads */
};

#endif
