/* SPDX-License-Identifier: MIT */
/* lib/trie6.c as trie6s_*, inflating one step at a time: see tests/trie_stepwise.h. */
#include "tests/trie_stepwise.h"

#define trie6             trie6s
#define INFLATE_STEPS_MAX 1
#include "lib/trie6.c"
