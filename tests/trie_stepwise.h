/* SPDX-License-Identifier: MIT */
/*
 * The tries again, built to inflate one step at a time as the kernel does
 * (INFLATE_STEPS_MAX 1 in lib/trie-tmpl.h), under the names trie4s_* and
 * trie6s_*: test_trie checks that the library, which makes several steps
 * in one go, grows the same tries.
 */
#ifndef LCFIB_TESTS_TRIE_STEPWISE_H
#define LCFIB_TESTS_TRIE_STEPWISE_H

#include "lib/trie.h"

TRIE_DECLARE(trie4s, uint32_t)
TRIE_DECLARE(trie6s, trie_key6)

#endif
