/*
 * How a task blocks and is woken: the wait protocol of sched_internal.h.
 *
 * The claim is the heart of it: a blocked task can be woken by several
 * parties at once (a channel operation on any worker, its timeout on its own
 * worker, another case of a select), and exactly one of them must deliver a
 * result. They race on one compare-and-swap of task->wait_state; the loser
 * leaves the task alone.
 */
#include <stdlib.h>

#include "../common/alloc.h"
#include "dispatch.h"
#include "queue.h"
#include "sched_internal.h"

/* More waiters than fit in the task (a wide select): one block holds the
 * waiters and room for as many locks (at most one per waiter). */
int baton__wait_reserve_many(struct baton_task *t, unsigned n)
{
	char *block = baton__malloc(n * (sizeof(*t->waiters) + sizeof(*t->locks)));

	if (block == NULL)
		return BATON_ENOMEM;
	t->waiters = (struct baton_waiter *)block;
	t->locks = (baton_spinlock_t **)(block + n * sizeof(*t->waiters));
	return BATON_OK;
}

void baton__wait_free_many(struct baton_task *t)
{
	baton__free(t->waiters);
	t->waiters = t->inline_waiters;
	t->locks = t->inline_locks;
}

static void timeout_fire(struct baton_timer_node *n)
{
	struct baton_task *t = (struct baton_task *)((char *)n -
				offsetof(struct baton_task, timeout));

	if (baton_wait_claim(t)) {
		t->wait_result = BATON_ETIMEDOUT;
		baton_task_ready(t);
	}
}

/* Unlink the waiters nobody claimed, each under its own lock. The claimed
 * one (wait_index) was unlinked by its claimant: skipping it keeps the
 * common wake-up, one waiter claimed by a waker, free of a second lock
 * (and its primitive may be gone already). Also the scheduler's destroy,
 * for the tasks it frees. */
void baton__wait_unlink_rest(struct baton_task *t)
{
	for (unsigned i = 0; i < t->nwaiters; i++) {
		struct baton_waiter *w = &t->waiters[i];

		if (w->index == t->wait_index)
			continue;
		baton_spin_lock(w->lock);
		if (w->linked)
			baton_waitq_remove(w->queue, w);
		baton_spin_unlock(w->lock);
	}
}

/* The blocking step of every primitive that waits on one queue: called with
 * `held` taken - q's `lock`, or for a biased channel the lock its worker
 * takes instead (src/chan/chan_internal.h) - returns with it released and
 * the waiter unlinked; `lock` is what unlinking after a timeout takes. A
 * message handed over by the claimant lands in *received. This is every
 * hop's path, so it sets the wait up in place rather than through
 * reserve/begin/add: one inline waiter, one lock. */
int baton__wait_one_held(struct baton_task *t, struct baton_waitq *q,
			 baton_spinlock_t *lock, baton_spinlock_t *held,
			 long amount, void *value, void **received,
			 int64_t timeout_ns)
{
	struct baton_waiter *w = &t->inline_waiters[0];
	int rc;

	if (BATON_LIKELY(timeout_ns < 0 && amount == 0))
		return baton__wait_solo(t, q, lock, held, value, received);
	t->waiters = t->inline_waiters;
	t->locks = t->inline_locks;
	t->inline_locks[0] = held;
	t->nlocks = 1;
	t->nwaiters = 1;
	t->wait_result = BATON_OK;
	t->wait_index = -1;
	t->wait_solo = timeout_ns < 0; /* nobody but a waker can claim it */
	/* Relaxed: as in baton_wait_begin. */
	__atomic_store_n(&t->wait_state, BATON_WAIT_WAITING, __ATOMIC_RELAXED);
	w->task = t;
	w->index = 0;
	w->queue = q;
	w->lock = lock;
	w->value = value;
	w->amount = amount;
	baton_waitq_push(q, w);
	if (timeout_ns < 0) {
		/* Only a claimant, which unlinked the waiter, wakes us. */
		baton__sched_task_after(t, BATON_AFTER_PARK);
		rc = t->wait_result;
	} else {
		rc = baton__wait_park(t, timeout_ns); /* releases lock once parked */
	}
	if (rc == BATON_OK && received)
		*received = w->value;
	t->nwaiters = 0;
	t->nlocks = 0;
	/* Relaxed: only this task reads or writes its state now. */
	__atomic_store_n(&t->wait_state, BATON_WAIT_IDLE, __ATOMIC_RELAXED);
	return rc;
}

int baton__wait_park(struct baton_task *t, int64_t timeout_ns)
{
	struct baton_worker *w = t->owner;

	t->wait_timed = timeout_ns >= 0;
	if (timeout_ns >= 0) {
		t->timeout.deadline = baton__deadline_after(timeout_ns);
		t->timeout.fire = timeout_fire;
		if (baton__timer_heap_add(&w->timers, &t->timeout) != BATON_OK) {
			/* Not parked yet: take the wake-up ourselves. */
			if (baton_wait_claim(t))
				t->wait_result = BATON_ENOMEM;
			for (unsigned i = 0; i < t->nlocks; i++)
				baton_spin_unlock(t->locks[i]);
			goto done;
		}
	}
	baton__sched_task_after(t, BATON_AFTER_PARK);
	/* Woken: on the same worker (a task with an armed timeout is never
	 * handed to a thief), so the heap is ours. */
	if (t->timeout.index != SIZE_MAX)
		baton__timer_heap_remove(&t->owner->timers, &t->timeout);
done:
	t->wait_timed = false;
	baton__wait_unlink_rest(t);
	return t->wait_result;
}
