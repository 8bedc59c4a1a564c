/*
 * src/sched/dispatch.h - the hop: how a task that stops hands its worker
 * to the next runnable task, and what the next one does first.
 *
 * These are the steps of every blocking call's fast path, inline so that
 * a primitive's wait (baton__wait_one_inline in wait.h, the channel's
 * receive) is one frame from the call to the switch: each function level
 * on that path costs its own saves and restores of registers that the
 * switch saves again anyway.
 */
#ifndef BATON_SRC_SCHED_DISPATCH_H
#define BATON_SRC_SCHED_DISPATCH_H

#include "../coro/handoff.h"
#include "queue.h"
#include "sched_internal.h"

/* How many dispatches may pass before the inbox and timers are polled even
 * though local work remains (a prime, so it does not beat with ring sizes). */
#define BATON_POLL_TICKS 61

void baton__after_switch_slow(struct baton_worker *w, struct baton_task *t);
/* The hook of a cancellable task that parked (wait.c, see wait.h): release
 * its locks and meet a cancellation's claim. */
void baton__wait_parked_cancellable(struct baton_worker *w,
				    struct baton_task *task);

/* The next task to run, or NULL when the worker's loop must run first: it
 * polls every BATON_POLL_TICKS dispatches and answers thieves. The woken
 * task in runnext goes first, within the fairness bound. */
static inline __attribute__((always_inline)) struct baton_task *
baton__take_next(struct baton_worker *w)
{
	struct baton_task *t = w->runnext;

	if (t) {
		w->runnext = NULL;
		if (BATON_LIKELY(w->runnext_streak < BATON_SCHED_RUNNEXT_MAX)) {
			w->runnext_streak++;
			goto run;
		}
		baton__runq_push(w, t); /* its turn is over: behind the rest */
		w->stats.fair_turns++;
	}
	w->runnext_streak = 0;
	t = baton__runq_pop(w);
	if (t == NULL)
		return NULL;
run:
	if (BATON_UNLIKELY(t->copystack && !t->pinned)) {
		t->pinned = true; /* its frames will live on this thread */
		w->npinned++;
	}
	w->stats.dispatches++;
	return t;
}

static inline __attribute__((always_inline)) struct baton_task *
baton__next_from_task(struct baton_worker *w)
{
	/* Relaxed peek at steal_req, as in the loop. */
	if (BATON_UNLIKELY(++w->ticks >= BATON_POLL_TICKS ||
			   __atomic_load_n(&w->steal_req, __ATOMIC_RELAXED)))
		return NULL;
	return baton__take_next(w);
}

static inline __attribute__((always_inline)) void
baton__after_switch(struct baton_worker *w)
{
	struct baton_task *t = w->after_task;

	if (t == NULL)
		return;
	w->after_task = NULL;
	/* The hop's case: parked under one lock. */
	if (BATON_LIKELY(w->after_kind == BATON_AFTER_PARK && t->nlocks == 1))
		baton__spin_unlock(t->locks[0]);
	else if (w->after_kind == BATON_AFTER_PARK_CANCELLABLE)
		baton__wait_parked_cancellable(w, t);
	else
		baton__after_switch_slow(w, t);
}

/* Switch from task t to the next runnable one of its worker, or back to
 * the worker's loop; leave `after` for the other side to carry out. */
static inline __attribute__((always_inline)) void
baton__switch_away(struct baton_task *t, enum baton_after after)
{
	struct baton_worker *w = t->owner;
	struct baton_task *next;

	/* Once stopped, destroy must be able to find it (sched->all). */
	if (after != BATON_AFTER_DONE && BATON_UNLIKELY(!t->linked))
		baton__task_link(t);
	next = baton__next_from_task(w);
	w->after_task = t;
	w->after_kind = (unsigned char)after;
	if (BATON_LIKELY(next != NULL)) {
		int rc;

		w->current = next;
		w->stats.handoffs++;
		if (after == BATON_AFTER_DONE)
			rc = baton__coro_handoff_exit(next->co); /* no return */
		else
			rc = baton__coro_handoff_inline(next->co);
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

#endif /* BATON_SRC_SCHED_DISPATCH_H */
