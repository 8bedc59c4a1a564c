/* SPDX-License-Identifier: MIT */
/*
 * src/common/sanitizer.h - telling AddressSanitizer, ThreadSanitizer and
 * Valgrind about stack switches. Every hook compiles to nothing when its
 * tool is not in use, so release builds pay nothing for them.
 *
 * AddressSanitizer: __sanitizer_start_switch_fiber() right before a switch,
 * with the target's stack bounds, and __sanitizer_finish_switch_fiber() as
 * the first thing after it, on the new stack (calling it earlier leaves ASan
 * believing it is forever "switching"). A context that will never run again
 * passes NULL for its fake-stack slot so ASan frees its fake frames.
 *
 * ThreadSanitizer: one fiber per context, __tsan_switch_to_fiber() right
 * before the switch; flag 0 makes the switch a synchronisation point.
 *
 * Valgrind: every stack is registered, so memcheck takes a jump of the stack
 * pointer into it for a switch, not for a huge frame.
 */
#ifndef BATON_SRC_SANITIZER_H
#define BATON_SRC_SANITIZER_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "prelude.h" /* BATON_ASAN, BATON_TSAN */

/* 1 when switches must go through baton__coro_switch() to tell a sanitizer */
#if BATON_ASAN || BATON_TSAN
#define BATON_SWITCH_HOOKS 1
#else
#define BATON_SWITCH_HOOKS 0
#endif

#if BATON_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if BATON_TSAN
#include <sanitizer/tsan_interface.h>
#endif
#if BATON_HAVE_VALGRIND
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#endif

struct baton_sanitizer_fiber {
#if BATON_ASAN
	void *asan_fake;
#endif
#if BATON_TSAN
	void *tsan_fiber;
	bool tsan_owned; /* created by us, so destroyed by us */
#endif
	char unused_; /* keeps the struct non-empty in plain builds */
};

static inline void baton__sanitizer_switch_begin(struct baton_sanitizer_fiber *from,
						 struct baton_sanitizer_fiber *to, char *to_lo,
						 char *to_hi, bool from_dies)
{
#if BATON_ASAN
	__sanitizer_start_switch_fiber(from_dies ? NULL : &from->asan_fake, to_lo,
				       (size_t)(to_hi - to_lo));
#endif
#if BATON_TSAN
	__tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
	(void)from;
	(void)to;
	(void)to_lo;
	(void)to_hi;
	(void)from_dies;
}

static inline void baton__sanitizer_switch_end(struct baton_sanitizer_fiber *self)
{
#if BATON_ASAN
	__sanitizer_finish_switch_fiber(self->asan_fake, NULL, NULL);
#endif
	(void)self;
}

/* First thing a new context does: finish the switch that started it. */
static inline void baton__sanitizer_entered(void)
{
#if BATON_ASAN
	__sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
}

static inline void baton__sanitizer_fiber_init(struct baton_sanitizer_fiber *f, bool is_thread_root)
{
#if BATON_ASAN
	f->asan_fake = NULL;
#endif
#if BATON_TSAN
	f->tsan_owned = !is_thread_root;
	f->tsan_fiber = is_thread_root ? __tsan_get_current_fiber() : __tsan_create_fiber(0);
#endif
	(void)f;
	(void)is_thread_root;
}

static inline void baton__sanitizer_fiber_fini(struct baton_sanitizer_fiber *f)
{
#if BATON_TSAN
	if (f->tsan_owned && f->tsan_fiber)
		__tsan_destroy_fiber(f->tsan_fiber);
	f->tsan_fiber = NULL;
#endif
	(void)f;
}

static inline unsigned baton__sanitizer_stack_register(char *lo, char *hi)
{
#if BATON_HAVE_VALGRIND
	return VALGRIND_STACK_REGISTER(lo, hi);
#else
	(void)lo;
	(void)hi;
	return 0;
#endif
}

static inline void baton__sanitizer_stack_deregister(unsigned id)
{
#if BATON_HAVE_VALGRIND
	VALGRIND_STACK_DEREGISTER(id);
#else
	(void)id;
#endif
}

#if BATON_HAVE_VALGRIND
/* Whether the process runs under valgrind, asked once: the question is a
 * client request as long as the one it spares (a few dependent rotates),
 * and copy-stack hops make it twice each. */
static inline bool baton__sanitizer_on_valgrind(void)
{
	static int state; /* 0 unknown, 1 no, 2 yes (atomic) */
	/* Relaxed: every thread computes the same answer. */
	int s = __atomic_load_n(&state, __ATOMIC_RELAXED);

	if (BATON_UNLIKELY(s == 0)) {
		s = RUNNING_ON_VALGRIND ? 2 : 1;
		__atomic_store_n(&state, s, __ATOMIC_RELAXED);
	}
	return s == 2;
}
#endif

/* Stack memory that frames own again (copied back onto the shared stack):
 * clear stale redzones and tell memcheck it is addressable. */
static inline void baton__sanitizer_unpoison(const void *p, size_t n)
{
#if BATON_ASAN
	ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
#if BATON_HAVE_VALGRIND
	/* memcheck made the stack below the last stack pointer seen on it
	 * inaccessible; copying frames back there is a legitimate write. */
	if (baton__sanitizer_on_valgrind())
		(void)VALGRIND_MAKE_MEM_UNDEFINED(p, n);
#endif
	(void)p;
	(void)n;
}

#endif /* BATON_SRC_SANITIZER_H */
