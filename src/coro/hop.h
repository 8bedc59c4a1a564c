/* SPDX-License-Identifier: MIT */
/*
 * src/coro/hop.h - the one coroutine operation the scheduler needs
 * beyond the public resume and yield: a symmetric switch between two
 * coroutines that share a resumer (the tasks of one worker).
 *
 * Rules: called from the running coroutine (not from the thread's own
 * stack); `to` is suspended, is not the caller, and will be resumed on this
 * thread. For copy-stack coroutines the copier rules of docs/coroutines.md
 * apply as for resume: a copy-stack `to` runs only on its home thread.
 */
#ifndef BATON_SRC_CORO_HOP_H
#define BATON_SRC_CORO_HOP_H

#include <baton/coro.h>

#include "coro_internal.h"

/* The running coroutine of this thread, as baton_coro_self(), inline: the
 * scheduler asks on every blocking call whether the caller is a task's own
 * coroutine. Its callers may have moved to another thread since their last
 * call (a task woken elsewhere): x86-64 loads the field with one
 * %fs-relative load, which cannot go stale; elsewhere the thread's state is
 * found afresh (see baton__thread_get_after_switch). */
static inline baton_coro_t *baton__coro_running(void)
{
#if defined(__x86_64__)
	return baton__tls.current;
#else
	return baton__thread_get_after_switch()->current;
#endif
}

/* Suspend the running coroutine and run `to`, which takes over the
 * caller's resumer. Returns BATON_OK when someone switches back to the
 * caller; an error (BATON_ENOMEM, BATON_ETHREAD: copy-stack bookkeeping)
 * at once, with nothing switched. */
int baton__coro_hop(baton_coro_t *to);

/* baton__coro_hop, inline where it can be: the scheduler's hop.
 * Between two stackful coroutines without canaries that share the FP state
 * (every scheduler task but those spawned with BATON_TASK_OWN_FPENV), in a
 * build without switch hooks, nothing but the bookkeeping
 * (baton__coro_switch_mark) and the inline switch (baton__arch_hop) is
 * needed. On x86-64 the fields of this thread's state are read with one %fs-relative load each, which cannot go
 * stale; elsewhere the state is found afresh (the caller may have moved
 * to another thread since it last looked). Everything else takes the
 * out-of-line path. */
static inline int baton__coro_hop_inline(baton_coro_t *to)
{
#if BATON_ARCH_HAS_HOP && !BATON_SWITCH_HOOKS
#if defined(__x86_64__)
#define BATON_HOP_TLS (&baton__tls)
#else
	struct baton_thread *tls = baton__thread_get_after_switch();
#define BATON_HOP_TLS tls
#endif
	struct baton_coro *from = BATON_HOP_TLS->current;

	if (BATON_LIKELY(to->model == BATON_CORO_STACKFUL && !from->canary &&
			 (from->ctx.flags & to->ctx.flags & BATON_ARCH_SHARED_FP))) {
		baton__coro_switch_mark(BATON__SWITCH_HOP, from, to, &BATON_HOP_TLS->current, NULL);
		baton__arch_hop(&from->ctx, &to->ctx);
		return BATON_OK;
	}
#undef BATON_HOP_TLS
#endif
	return baton__coro_hop(to);
}

/* The same for a coroutine whose function is over: it becomes DEAD and is
 * never switched to again (its owner destroys it). Returns only on failure
 * (as baton__coro_hop), with the caller still RUNNING. */
int baton__coro_hop_exit(baton_coro_t *to);

#endif /* BATON_SRC_CORO_HOP_H */
