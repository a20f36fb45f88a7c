/* SPDX-License-Identifier: MIT */
/* lib/trie4.c as trie4s_*, inflating one step at a time: see tests/trie_stepwise.h. */
#include "tests/trie_stepwise.h"

#define trie4                 trie4s
#define trie_batch_min_leaves trie4s_batch_min_leaves
#define trie_rebuild_split_min trie4s_rebuild_split_min
#define INFLATE_STEPS_MAX     1
#include "lib/trie4.c"
