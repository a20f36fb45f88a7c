/* SPDX-License-Identifier: MIT */
/*
 * Included first in every file of a --enable-tsan build (never otherwise):
 * makes liburcu 0.13's RCU visible to ThreadSanitizer. Its
 * rcu_assign_pointer() is an asm fence plus a volatile store, which TSan
 * does not see as a release, and its grace periods happen inside the
 * uninstrumented liburcu-memb.so. Here publication becomes a release store,
 * and a grace period acquires what every reader released at unlock. See
 * docs/TSAN.md.
 */
#ifndef LCFIB_TESTS_TSAN_URCU_H
#define LCFIB_TESTS_TSAN_URCU_H

/* Included before anything else: the feature macros of the files that follow. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define _LGPL_SOURCE 1
#include <sanitizer/tsan_interface.h>
#include <urcu/pointer.h>
#include <urcu/urcu-memb.h>

#undef rcu_assign_pointer
#define rcu_assign_pointer(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELEASE)
#undef urcu_memb_read_unlock
#define urcu_memb_read_unlock() (__tsan_release(&urcu_memb_gp), _urcu_memb_read_unlock())
#define urcu_memb_synchronize_rcu()                                                                \
	do {                                                                                       \
		urcu_memb_synchronize_rcu();                                                       \
		__tsan_acquire(&urcu_memb_gp);                                                     \
	} while (0)

/*
 * uatomic_set() and uatomic_read() are a volatile store and load, which
 * TSan takes for plain accesses: the counters one thread sets and another
 * reads (daemon/feed.c, the log level) would be reported. Here they are the
 * relaxed atomics they stand for. (uatomic_add() and the like are locked
 * instructions in asm, which TSan does not see at all.)
 */
#include <urcu/uatomic.h>
#undef uatomic_set
#define uatomic_set(addr, v) __atomic_store_n((addr), (v), __ATOMIC_RELAXED)
#undef uatomic_read
#define uatomic_read(addr) __atomic_load_n((addr), __ATOMIC_RELAXED)

#endif
