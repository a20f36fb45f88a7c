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
#include <urcu/uatomic.h>
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
 * The shared counters' idiom, uatomic: on x86 liburcu 0.13 makes uatomic_read
 * and uatomic_set volatile accesses (plain ones to TSan) and the adds asm
 * (invisible to it). Here they are the built-ins with liburcu's orderings:
 * none for reads, sets and adds, a full barrier for xchg and cmpxchg.
 */
#undef uatomic_read
#define uatomic_read(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#undef uatomic_set
#define uatomic_set(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#undef uatomic_add
#define uatomic_add(p, v) ((void)__atomic_fetch_add((p), (v), __ATOMIC_RELAXED))
#undef uatomic_inc
#define uatomic_inc(p) uatomic_add((p), 1)
#undef uatomic_dec
#define uatomic_dec(p) ((void)__atomic_fetch_sub((p), 1, __ATOMIC_RELAXED))
#undef uatomic_or
#define uatomic_or(p, v) ((void)__atomic_fetch_or((p), (v), __ATOMIC_RELAXED))
#undef uatomic_and
#define uatomic_and(p, v) ((void)__atomic_fetch_and((p), (v), __ATOMIC_RELAXED))
#undef uatomic_add_return
#define uatomic_add_return(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#undef uatomic_xchg
#define uatomic_xchg(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#undef uatomic_cmpxchg
#define uatomic_cmpxchg(p, old, new)                                                               \
	({                                                                                         \
		__typeof__(*(p)) _uatomic_old = (old);                                             \
		__atomic_compare_exchange_n((p), &_uatomic_old, (new), 0, __ATOMIC_SEQ_CST,        \
					    __ATOMIC_SEQ_CST);                                     \
		_uatomic_old;                                                                      \
	})

#endif
