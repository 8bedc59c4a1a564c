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

/* The blocking step of a primitive that waits on one queue, out of line
 * (dispatch.h has it inline, and says what it does). */
int baton__wait_one_held(struct baton_task *t, struct baton_waitq *q,
			 baton_spinlock_t *lock, baton_spinlock_t *held,
			 long amount, void *value, void **received,
			 int64_t timeout_ns)
{
	return baton__wait_one_inline(t, q, lock, held, amount, value, received,
				      timeout_ns);
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
