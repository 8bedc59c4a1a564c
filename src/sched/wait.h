/* SPDX-License-Identifier: MIT */
/*
 * src/sched/wait.h - the wait protocol: how a task blocks on a primitive
 * (a channel, a mutex, a semaphore, a wait group, a stage, an I/O handle,
 * the sequencer's lock) and how it is woken. Every primitive that blocks
 * includes this header and follows the steps below; the scheduler knows no
 * primitive, and a primitive knows no run queue.
 *
 * The parties:
 *  - the waiting task: links one waiter (struct baton_waiter, in its own
 *    record, never on its stack) per operation into the primitives' wait
 *    queues under their spinlocks, and parks;
 *  - claimants: whoever may complete the wait - a waker (a partner's send,
 *    an unlock, a close), the task's timeout on its worker's timer heap,
 *    another case of the same select, a canceller. Exactly one wins the
 *    claim (baton__wait_claim); only the winner writes the result and
 *    readies the task, the others leave the task alone;
 *  - the worker: once the parked task's context is saved, its after-switch
 *    hook (hop.h, enum baton_after) releases the locks the task parked
 *    under. Until then no waker can reach the task's waiters, so no task is
 *    readied before it has really stopped.
 *
 * The steps:
 *  1. The task calls baton__wait_begin(): a new wait generation, state WAITING.
 *  2. Under the primitive's spinlock it links one baton_waiter per operation
 *     into the primitive's wait queue, then calls baton__wait_park() with the
 *     lock(s) to release and an optional deadline. The locks are released by
 *     the worker only after the task's context is saved, so no waker can
 *     run the task before it has really stopped.
 *  3. A waker, holding the primitive's lock, unlinks a waiter and calls
 *     baton__wait_claim(): exactly one claimant (a waker, the timer, another
 *     case of a select) wins; the winner sets task->wait_index to the
 *     index of the waiter it unlinked (baton__waitq_claim_first does both),
 *     stores the result and queues the task on a wake list
 *     (baton__waiter_wake); baton__wakelist_run() makes the tasks ready
 *     after the lock is released. A waker that loses the claim skips that
 *     waiter.
 *  4. Back from park, the task unlinks the waiters still linked (timeout,
 *     the other cases of a select) under their primitives' locks.
 *  5. Cancellation (baton_task_cancel) is one more claimant, the only one
 *     that holds none of the task's locks. Only a task whose handle was
 *     taken can be cancelled (`cancellable`); its waits are never solo, so
 *     every claim of them is the compare-and-swap, and they park through
 *     baton__wait_park. The task, having published WAITING, fences and
 *     reads its `cancel` flag: set, it claims its own wait and parks not.
 *     The canceller sets the flag, fences, and tries the claim. Having
 *     won, it cannot know whether the task has switched away yet: of it
 *     and the worker parking the task (BATON_AFTER_PARK_CANCELLABLE),
 *     whoever comes second to `cancel_park` readies the task.
 * Waiters live in the task's heap block, never on the coroutine's stack: a
 * copy-stack coroutine's stack is not addressable while it is suspended.
 *
 * The common case is one queue and no timeout: baton__wait_one (below)
 * does steps 1-4 in one call. Its waiter has one possible claimant, the
 * waker that unlinks it under the queue's lock (`wait_solo`), so the claim
 * is a plain store and the task switches away and back in the caller's
 * frame (baton__wait_one_inline, the hop's path).
 */
#ifndef BATON_SRC_SCHED_WAIT_H
#define BATON_SRC_SCHED_WAIT_H

#include "hop.h"
#include "sched_internal.h"

/* task->wait_state: who may still claim the wake-up. */
enum baton_wait_state {
	BATON_WAIT_IDLE = 0,    /* not blocked */
	BATON_WAIT_WAITING = 1, /* blocked, nobody has claimed the wake-up */
	BATON_WAIT_CLAIMED = 2, /* a waker or the timer won; result is set */
};

/* What a waiter carries besides its task, for the waits that carry
 * something: the units a semaphore is asked for, the message offered (a
 * send, an item submitted), and where a message handed over lands on
 * success (a receive). baton__wait_one carries nothing. */
struct baton_wait_carry {
	long amount;
	void *value;
	void **received;
};

/* Tasks claimed under a lock, readied after it is released (so that a
 * futex wake-up system call never runs inside a spinlock). Linked through
 * task->next, which a claimed task does not use: it is in no queue. */
struct baton_wakelist {
	struct baton_task *head;
};
#define BATON_WAKELIST_INIT \
	{                   \
		NULL        \
	}

/* --- the calling task ---------------------------------------------------- */
/* The prologue of every call that may wait (baton/sync.h's convention):
 * *t gets the calling task; outside one, only timeout 0 (a try) is
 * allowed, and BATON_ENOSCHED is returned otherwise. */
static inline int baton__task_for_wait(struct baton_task **t, int64_t timeout_ns)
{
	*t = baton__task_self();
	return *t == NULL && timeout_ns != 0 ? BATON_ENOSCHED : BATON_OK;
}

/* The same, for a caller that also needs its worker (*w, NULL off any
 * worker): one look at thread-local storage for both. */
static inline int baton__task_for_wait_on(struct baton_task **t, struct baton_worker **w,
					  int64_t timeout_ns)
{
	struct baton_worker *self = baton__worker_get();
	struct baton_task *cur = self ? self->current : NULL;

	*w = self;
	*t = cur && baton__coro_running() == cur->co ? cur : NULL;
	return *t == NULL && timeout_ns != 0 ? BATON_ENOSCHED : BATON_OK;
}

/* --- wait queues: FIFOs of waiters, under the primitive's lock ------------ */
/* The waiter whose link is n (NULL for NULL). */
static inline struct baton_waiter *baton__waiter_of(struct baton_list_node *n)
{
	return n ? BATON_LIST_ENTRY(n, struct baton_waiter, link) : NULL;
}

static inline bool baton__waitq_empty(const struct baton_waitq *q)
{
	return baton__list_empty(&q->list);
}

/* The oldest waiter, or NULL. */
static inline struct baton_waiter *baton__waitq_first(const struct baton_waitq *q)
{
	return baton__waiter_of(baton__list_first(&q->list));
}

static inline void baton__waitq_push(struct baton_waitq *q, struct baton_waiter *w)
{
	baton__list_push_tail(&q->list, &w->link);
	q->len++;
	w->linked = true;
}

/* The same into q known to be empty (asserted in a debug build): no load
 * of the queue (a single-receiver channel's owner, chan.c). */
static inline void baton__waitq_push_only(struct baton_waitq *q, struct baton_waiter *w)
{
	baton__list_push_only(&q->list, &w->link);
	q->len = 1;
	w->linked = true;
}

static inline void baton__waitq_remove(struct baton_waitq *q, struct baton_waiter *w)
{
	baton__list_remove(&q->list, &w->link);
	q->len--;
	w->linked = false;
}

/* Unlink the oldest waiter and return it, or NULL. */
static inline struct baton_waiter *baton__waitq_pop(struct baton_waitq *q)
{
	struct baton_waiter *w = baton__waiter_of(baton__list_pop(&q->list));

	if (w) {
		q->len--;
		w->linked = false;
	}
	return w;
}

/* --- waking: a claimant, holding the primitive's lock ---------------------- */
/* The claim of a solo wait (t->wait_solo: one waiter, no timeout), by
 * whoever unlinked that waiter under its queue's lock: the only possible
 * claimant, so the claim is a store. */
static inline void baton__wait_claim_solo(struct baton_task *t)
{
	/* Relaxed: the queue's lock orders everything; sem and pool peek at
	 * the state under the same lock. */
	__atomic_store_n(&t->wait_state, BATON_WAIT_CLAIMED, __ATOMIC_RELAXED);
}

/* The claim of a wait with several possible claimants (a timeout, a
 * select's other cases, a canceller): true for exactly one of them. */
static inline bool baton__wait_claim_race(struct baton_task *t)
{
	uint32_t expected = BATON_WAIT_WAITING;

	/* Acq_rel: the winner's later writes of the result are ordered after
	 * its win, and it sees the task's state as the task left it. */
	return __atomic_compare_exchange_n(&t->wait_state, &expected, BATON_WAIT_CLAIMED, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Claim t's wake-up: true for exactly one claimant of each wait. */
static inline bool baton__wait_claim(struct baton_task *t)
{
	if (BATON_LIKELY(t->wait_solo)) {
		baton__wait_claim_solo(t);
		return true;
	}
	return baton__wait_claim_race(t);
}

/* Unlink waiters from the front until one's task can be claimed; return it
 * (claimed, unlinked, wait_index set) or NULL. Caller holds the lock. A
 * waiter whose task was already claimed (by its timeout or another case of
 * a select) is dropped: that task unlinks its other waiters itself. */
static inline struct baton_waiter *baton__waitq_claim_first(struct baton_waitq *q)
{
	struct baton_waiter *w;

	while ((w = baton__waitq_pop(q)) != NULL) {
		if (baton__wait_claim(w->task)) {
			w->task->wait_index = w->index;
			return w;
		}
	}
	return NULL;
}

static inline void baton__wakelist_run(struct baton_wakelist *wl)
{
	struct baton_task *t = wl->head, *next;

	for (; t; t = next) {
		next = t->next;
		baton__task_ready(t);
	}
	wl->head = NULL;
}

/* Ready `task` (claimed, result set) once the caller's locks are released. */
static inline void baton__wakelist_add(struct baton_wakelist *wl, struct baton_task *task)
{
	task->next = wl->head;
	wl->head = task;
}

/* Give a claimed waiter's task its result and ready it once the caller's
 * locks are released. */
static inline void baton__waiter_wake(struct baton_wakelist *wl, struct baton_waiter *w, int result)
{
	w->task->wait_result = result;
	baton__wakelist_add(wl, w->task);
}

/* Claim every waiter of q into wl with `result` (close, a count reaching
 * zero); returns how many. Caller holds the lock. */
static inline size_t baton__waitq_wake_all(struct baton_waitq *q, struct baton_wakelist *wl,
					   int result)
{
	struct baton_waiter *w;
	size_t n = 0;

	while ((w = baton__waitq_claim_first(q)) != NULL) {
		baton__waiter_wake(wl, w, result);
		n++;
	}
	return n;
}

/* --- waiting: the task, step by step (a select, a wide wait) --------------- */
int baton__wait_reserve_many(struct baton_task *task, unsigned n);
void baton__wait_free_many(struct baton_task *task);
/* Steps 2-4 (wait.c): with every waiter linked and their locks held,
 * arm the timeout (timeout_ns >= 0), switch away leaving the locks to the
 * after-switch hook, and once woken unlink the waiters nobody claimed.
 * Returns the winner's result (BATON_OK, BATON_ETIMEDOUT, BATON_ECLOSED,
 * BATON_ECANCELED, BATON_ENOMEM). */
int baton__wait_park(struct baton_task *task, int64_t timeout_ns);
/* Step 4 alone: unlink every waiter but the claimed one, each under its
 * lock (also the scheduler's destroy, for the tasks it frees). */
void baton__wait_unlink_rest(struct baton_task *task);

/* Room for n waiters: inline for up to BATON_TASK_INLINE_WAITERS. */
static inline int baton__wait_reserve(struct baton_task *t, unsigned n)
{
	t->nwaiters = 0;
	t->nlocks = 0;
	if (BATON_LIKELY(n <= BATON_TASK_INLINE_WAITERS)) {
		t->waiters = t->inline_waiters;
		t->locks = t->inline_locks;
		return BATON_OK;
	}
	return baton__wait_reserve_many(t, n);
}

/* Step 1 with the wait's claimants known: `solo` when its one waiter's
 * waker is the only one (no timeout, not cancellable: baton__wait_one). */
static inline void baton__wait_begin_as(struct baton_task *t, bool solo)
{
	t->wait_solo = solo;
	t->wait_result = BATON_OK;
	t->wait_index = -1;
	/* Release (a plain store on x86-64): wakers read the state only after
	 * taking the lock we release after parking, but a canceller takes no
	 * lock: its claim must see the result and index reset above. */
	__atomic_store_n(&t->wait_state, BATON_WAIT_WAITING, __ATOMIC_RELEASE);
}

/* Step 1: a new wait, WAITING, no claimant yet. */
static inline void baton__wait_begin(struct baton_task *t)
{
	baton__wait_begin_as(t, false);
}

/* Step 2's link of one waiter w (its task and index set) into q, which
 * `lock` guards, carrying c (nothing if NULL). */
static inline void baton__waiter_link(struct baton_waiter *w, struct baton_waitq *q,
				      baton_spinlock_t *lock, const struct baton_wait_carry *c)
{
	w->queue = q;
	w->lock = lock;
	w->value = c ? c->value : NULL;
	w->amount = c ? c->amount : 0;
	baton__waitq_push(q, w);
}

/* Step 2: link the task's next waiter into q; `lock` guards q, and is
 * released after the switch away (with the others, once each). */
static inline struct baton_waiter *baton__wait_add(struct baton_task *t, struct baton_waitq *q,
						   baton_spinlock_t *lock)
{
	struct baton_waiter *w = &t->waiters[t->nwaiters];

	w->task = t;
	w->index = (int)t->nwaiters++;
	baton__waiter_link(w, q, lock, NULL);
	for (unsigned i = 0; i < t->nlocks; i++)
		if (t->locks[i] == lock)
			return w;
	t->locks[t->nlocks++] = lock;
	return w;
}

/* After step 4, for a wait that used the inline waiters: the wait is
 * over, its waiters are the task's again. */
static inline void baton__wait_finish_inline(struct baton_task *t)
{
	t->nwaiters = 0;
	t->nlocks = 0;
	/* Relaxed: only this task reads or writes its state now. */
	__atomic_store_n(&t->wait_state, BATON_WAIT_IDLE, __ATOMIC_RELAXED);
}

/* The same for any wait (a wide one gives its block back). */
static inline void baton__wait_finish(struct baton_task *t)
{
	if (BATON_UNLIKELY(t->waiters != t->inline_waiters))
		baton__wait_free_many(t);
	baton__wait_finish_inline(t);
}

/* Steps 3-4 of a solo wait, its waiter linked, holding `lock`: switch
 * away leaving `lock` to the after-switch hook; once the claimant (who
 * unlinked the waiter) readied us, its result. */
static inline __attribute__((always_inline)) int baton__wait_park_solo(struct baton_task *t,
								       baton_spinlock_t *lock)
{
	baton__switch_away_unlock(t, BATON_AFTER_PARK, lock);
	/* Resumed, perhaps on another worker: t->owner runs us now. */
	baton__after_switch(t->owner);
	return t->wait_result;
}

/* --- waiting on one queue: steps 1-4 in one call ---------------------------- */
/* Steps 1-2 of a wait on one queue: link the task's first inline waiter
 * into q, which `lock` guards (what anybody but its claimant takes to
 * unlink it: the task after a timeout, a scheduler's destroy), carrying
 * c's amount and value (none if c is NULL). With no timeout, in a task
 * that is not cancellable, only a claimant - who unlinks the waiter - can
 * wake it (wait_solo). */
static inline __attribute__((always_inline)) void
baton__wait_one_link(struct baton_task *t, struct baton_waitq *q, baton_spinlock_t *lock,
		     const struct baton_wait_carry *c, int64_t timeout_ns)
{
	/* At rest, t->waiters and t->locks are the inline arrays, and the
	 * first inline waiter's task and index are t and 0 (spawn sets them,
	 * every other wait restores them): only what changes is written. */
	t->nwaiters = 1;
	/* A cancellable task's waits have two claimants (step 5). */
	baton__wait_begin_as(t, timeout_ns < 0 && !t->cancellable);
	baton__waiter_link(&t->inline_waiters[0], q, lock, c);
}

/* Steps 3-4 after baton__wait_one_link: park, leaving `lock` - the one
 * lock the caller holds - to be released once the task has stopped, and
 * return the claimant's result with the waiter unlinked; a message handed
 * over lands in *c->received (if c and it are not NULL) on success. A
 * solo wait switches away and back in the caller's frame, its lock going
 * to the after-switch hook directly (nothing reads its t->locks); a timed
 * or cancellable one parks through baton__wait_park. */
static inline __attribute__((always_inline)) int
baton__wait_one_park(struct baton_task *t, baton_spinlock_t *lock, const struct baton_wait_carry *c,
		     int64_t timeout_ns)
{
	int rc;

	if (BATON_LIKELY(t->wait_solo)) {
		rc = baton__wait_park_solo(t, lock);
	} else {
		t->inline_locks[0] = lock;
		t->nlocks = 1;
		rc = baton__wait_park(t, timeout_ns); /* releases lock once parked */
	}
	if (rc == BATON_OK && c && c->received)
		*c->received = t->inline_waiters[0].value;
	baton__wait_finish_inline(t);
	return rc;
}

/* The blocking step of every primitive that waits on one queue, inline
 * for the hop (baton__wait_one_carry is its out-of-line instance): called
 * with q's `lock` held, it links the task's first inline waiter and parks
 * (the two steps above), and returns the claimant's result with `lock`
 * released and the waiter unlinked. */
static inline __attribute__((always_inline)) int
baton__wait_one_inline(struct baton_task *t, struct baton_waitq *q, baton_spinlock_t *lock,
		       const struct baton_wait_carry *c, int64_t timeout_ns)
{
	baton__wait_one_link(t, q, lock, c, timeout_ns);
	return baton__wait_one_park(t, lock, c, timeout_ns);
}

/* The same, out of line (wait.c): the waiter carrying c (units, a
 * message, where one lands), for the waits off the hop's path. */
int baton__wait_one_carry(struct baton_task *task, struct baton_waitq *q, baton_spinlock_t *lock,
			  const struct baton_wait_carry *c, int64_t timeout_ns);

/* Wait on q, whose `lock` the caller holds, for a claimant's result: the
 * common case (a mutex, a wait group, a drain). */
static inline int baton__wait_one(struct baton_task *task, struct baton_waitq *q,
				  baton_spinlock_t *lock, int64_t timeout_ns)
{
	return baton__wait_one_carry(task, q, lock, NULL, timeout_ns);
}

#endif /* BATON_SRC_SCHED_WAIT_H */
