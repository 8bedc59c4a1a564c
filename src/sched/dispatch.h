/*
 * src/sched/dispatch.h - the hop: how a task that stops hands its worker
 * to the next runnable task, and what the next one does first.
 *
 * These are the steps of every blocking call's fast path, inline so that
 * a primitive's wait (src/sched/wait.c, the channel's receive) is one
 * frame from the call to the switch: each function level on that path
 * costs its own saves and restores of registers that the switch saves
 * again anyway.
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

/* The blocking step of every primitive that waits on one queue, inline
 * for the hop (baton__wait_one_held is its out-of-line instance): called
 * with `held` taken - q's `lock`, or what a biased channel takes instead
 * (src/chan/chan_internal.h) - it links the task's first inline waiter,
 * parks, and returns the claimant's result with `held` released and the
 * waiter unlinked; `lock` is what unlinking after a timeout takes. A
 * message handed over lands in *received (if not NULL) on success. With
 * no timeout only a claimant, which unlinked the waiter, can wake us
 * (wait_solo), and the task switches away and back in this frame; with a
 * timeout, or in a cancellable task, baton__wait_park parks it. */
static inline __attribute__((always_inline)) int
baton__wait_one_inline(struct baton_task *t, struct baton_waitq *q,
		       baton_spinlock_t *lock, baton_spinlock_t *held,
		       long amount, void *value, void **received,
		       int64_t timeout_ns)
{
	struct baton_waiter *w = &t->inline_waiters[0];
	int rc;

	/* At rest, t->waiters and t->locks are the inline arrays, and the
	 * first inline waiter's task and index are t and 0 (spawn sets them,
	 * every other wait restores them): only what changes is written. */
	t->inline_locks[0] = held;
	t->nlocks = 1;
	t->nwaiters = 1;
	t->wait_result = BATON_OK;
	t->wait_index = -1;
	/* A cancellable task's waits have two claimants (sched_internal.h). */
	t->wait_solo = timeout_ns < 0 && !t->cancellable;
	/* Release: as in baton__wait_begin. */
	__atomic_store_n(&t->wait_state, BATON_WAIT_WAITING, __ATOMIC_RELEASE);
	w->queue = q;
	w->lock = lock;
	w->value = value;
	w->amount = amount;
	baton__waitq_push(q, w);
	if (BATON_LIKELY(t->wait_solo)) {
		baton__switch_away(t, BATON_AFTER_PARK);
		/* Resumed, perhaps on another worker: t->owner runs us now. */
		baton__after_switch(t->owner);
		rc = t->wait_result;
	} else {
		rc = baton__wait_park(t, timeout_ns); /* releases held once parked */
	}
	if (rc == BATON_OK && received)
		*received = w->value;
	t->nwaiters = 0;
	t->nlocks = 0;
	/* Relaxed: only this task reads or writes its state now. */
	__atomic_store_n(&t->wait_state, BATON_WAIT_IDLE, __ATOMIC_RELAXED);
	return rc;
}

#endif /* BATON_SRC_SCHED_DISPATCH_H */
