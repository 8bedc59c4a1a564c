/* SPDX-License-Identifier: MIT */
/*
 * src/sched/hop.h - the hop: how a task that stops hands its worker
 * to the next runnable task, and what the next one does first.
 *
 * These are the steps of every blocking call's fast path, inline so that
 * a primitive's wait (baton__wait_one_inline in wait.h, the channel's
 * receive) is one frame from the call to the switch: each function level
 * on that path costs its own saves and restores of registers that the
 * switch saves again anyway.
 */
#ifndef BATON_SRC_SCHED_HOP_H
#define BATON_SRC_SCHED_HOP_H

#include "../coro/hop.h"
#include "queue.h"
#include "sched_internal.h"

/* How many dispatches may pass before the inbox and timers are polled even
 * though local work remains (a prime, so it does not beat with ring sizes). */
#define BATON_POLL_TICKS 61

void baton__after_switch_slow(struct baton_worker *w, uintptr_t after);
/* The hook of a cancellable task that parked (wait.c, see wait.h): release
 * its locks and meet a cancellation's claim. */
void baton__wait_parked_cancellable(struct baton_worker *w, struct baton_task *task);

/* The next task to run, or NULL if there is none: the woken task in
 * runnext first, within the fairness bound. (Counted here, per dispatch:
 * kept by the loop's polls instead, the bound cut chains a little shorter
 * and less evenly, and the ring at 400,000 tasks, where every chain starts
 * cold, lost a third of its pace.) A copy-stack task is pinned where it
 * first runs, in task_main. */
static inline __attribute__((always_inline)) struct baton_task *
baton__take_next(struct baton_worker *w)
{
	struct baton_task *t = w->runnext;

	if (t) {
		w->runnext = NULL;
		if (BATON_LIKELY(w->runnext_streak < BATON_SCHED_RUNNEXT_MAX)) {
			w->runnext_streak++;
			return t;
		}
		baton__runq_push(w, t); /* its turn is over: behind the rest */
		w->stats.fair_turns++;
	}
	w->runnext_streak = 0;
	return baton__runq_pop(w);
}

/* From a task that stops: the next task, or NULL every BATON_POLL_TICKS
 * dispatches, when the loop polls, takes the inbox and answers thieves (a
 * thief waits at most that long; the loop is also where tasks that ran
 * dry hand over). */
static inline __attribute__((always_inline)) struct baton_task *
baton__next_from_task(struct baton_worker *w)
{
	if (BATON_UNLIKELY(++w->ticks >= BATON_POLL_TICKS))
		return NULL;
	return baton__take_next(w);
}

/* What the task switched away from left for us (see enum baton_after):
 * the hop's case, a park under one lock (an even word), is only that lock
 * to release. */
static inline __attribute__((always_inline)) void baton__after_switch(struct baton_worker *w)
{
	uintptr_t a = w->after;

	if (BATON_LIKELY(!(a & 1))) {
		w->after = BATON_AFTER_NOTHING;
		baton__spin_unlock((baton_spinlock_t *)a);
		return;
	}
	if (a != BATON_AFTER_NOTHING)
		baton__after_switch_slow(w, a);
}

/* The inline hop in a function of its own: its asm makes the function it
 * is in save every callee-saved register, and that must not be the park
 * path's own frame, which a copy-stack task saves and restores at each hop
 * (32 bytes more each way, past memcpy's 256-byte size class). */
static __attribute__((noinline)) int baton__switch_hop(baton_coro_t *to)
{
	/* First, before any register is moved: a copy-stack `to` leaves at
	 * once (a tail call, with no frame of ours on its stack). */
	if (to->model != BATON_CORO_STACKFUL)
		return baton__coro_hop(to);
	return baton__coro_hop_inline(to);
}

/* Switch from task t to the next runnable one of its worker, or back to
 * the worker's loop; leave `after` for the other side to carry out - or,
 * with `unlock` (a park under that one lock, t->locks unused), only that
 * lock to release. */
static inline __attribute__((always_inline)) void
baton__switch_away_unlock(struct baton_task *t, enum baton_after after, baton_spinlock_t *unlock)
{
	struct baton_worker *w = t->owner;
	struct baton_task *next;

	/* Once stopped, destroy must be able to find it (sched->all). */
	if (after != BATON_AFTER_DONE && BATON_UNLIKELY(!t->linked))
		baton__task_link(t);
	w->after = unlock ? (uintptr_t)unlock : (uintptr_t)t | (uintptr_t)after;
	next = baton__next_from_task(w);
	if (BATON_LIKELY(next != NULL)) {
		int rc;

		w->current = next;
		w->stats.handoffs++; /* a dispatch too (see baton_sched_stats) */
		if (after == BATON_AFTER_DONE)
			rc = baton__coro_hop_exit(next->co); /* no return */
		else
			rc = baton__switch_hop(next->co);
		if (BATON_LIKELY(rc == BATON_OK))
			return;
		/* Copy-stack bookkeeping failed (BATON_ENOMEM): nothing was
		 * switched. Let the loop retry `next` after the others. */
		w->stats.handoffs--;
		w->current = t;
		baton__runq_push(w, next);
	}
	if (after != BATON_AFTER_DONE)
		baton_coro_yield(NULL, NULL);
	/* DONE: returning ends the coroutine; the loop finishes the task. */
}

static inline __attribute__((always_inline)) void baton__switch_away(struct baton_task *t,
								     enum baton_after after)
{
	baton__switch_away_unlock(t, after, NULL);
}

#endif /* BATON_SRC_SCHED_HOP_H */
