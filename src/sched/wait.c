/* SPDX-License-Identifier: MIT */
/*
 * How a task blocks and is woken: the wait protocol of wait.h.
 *
 * The claim is the heart of it: a blocked task can be woken by several
 * parties at once (a channel operation on any worker, its timeout on its own
 * worker, another case of a select), and exactly one of them must deliver a
 * result. They race on one compare-and-swap of task->wait_state; the loser
 * leaves the task alone.
 */
#include <sched.h>
#include <stdlib.h>

#include "../common/alloc.h"
#include "hop.h"
#include "handle.h"
#include "sched_internal.h"
#include "wait.h"

/* More waiters than fit in the task (a wide select): one block holds the
 * waiters and room for as many locks (at most one per waiter). Zeroed:
 * its waiters are in no list yet (list.h rule 3). */
int baton__wait_reserve_many(struct baton_task *t, unsigned n)
{
	char *block = baton__calloc(n, sizeof(*t->waiters) + sizeof(*t->locks));

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
	struct baton_task *t =
		(struct baton_task *)((char *)n - offsetof(struct baton_task, timeout));

	if (baton__wait_claim(t)) {
		t->wait_result = BATON_ETIMEDOUT;
		baton__task_ready(t);
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
		baton__spin_lock(w->lock);
		if (w->linked)
			baton__waitq_remove(w->queue, w);
		baton__spin_unlock(w->lock);
	}
}

/* The blocking step of a primitive that waits on one queue, out of line
 * (wait.h has it inline, and says what it does). */
int baton__wait_one_carry(struct baton_task *t, struct baton_waitq *q, baton_spinlock_t *lock,
			  const struct baton_wait_carry *c, int64_t timeout_ns)
{
	return baton__wait_one_inline(t, q, lock, c, timeout_ns);
}

/* A cancellation's claim of t's wait (the task's own or its canceller's):
 * true if it won, the result then ECANCELED and no waiter claimed. */
static bool claim_cancelled(struct baton_task *t)
{
	if (!baton__wait_claim_race(t))
		return false;
	t->wait_result = BATON_ECANCELED;
	t->wait_index = -1;
	return true;
}

/* A cancellable task, its waiters linked under the locks it holds and
 * WAITING published: was it cancelled meanwhile? If so, and the claim is
 * ours, it leaves its queues and does not park. If the canceller claimed
 * first, the task parks as usual and the two meet at cancel_park. */
static bool cancelled_before_park(struct baton_task *t)
{
	/* Seq_cst fence: orders the store of WAITING before the load of the
	 * flag; pairs with the fence in baton_task_cancel between its store
	 * of the flag and its claim (one of the two sees the other). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* Relaxed: the fence above orders it. */
	if (!__atomic_load_n(&t->cancel, __ATOMIC_RELAXED))
		return false;
	if (!claim_cancelled(t))
		return false;
	/* We hold every lock our waiters are linked under. */
	for (unsigned i = 0; i < t->nwaiters; i++)
		if (t->waiters[i].linked)
			baton__waitq_remove(t->waiters[i].queue, &t->waiters[i]);
	for (unsigned i = t->nlocks; i-- > 0;)
		baton__spin_unlock(t->locks[i]);
	return true;
}

/* After the switch away from a cancellable task that parked: release its
 * locks, and ready it if a canceller claimed it before it had stopped. */
void baton__wait_parked_cancellable(struct baton_worker *w, struct baton_task *t)
{
	baton_spinlock_t **locks = t->locks;
	unsigned n = t->nlocks;
	/* Acq_rel, before the locks go (after them the task may run and end):
	 * the canceller's claim and result, if it came first, are ours to
	 * hand on; if we come first, it sees the task stopped. */
	bool claimed = __atomic_exchange_n(&t->cancel_park, 1, __ATOMIC_ACQ_REL) != 0;

	while (n-- > 0)
		baton__spin_unlock(locks[n]);
	if (claimed)
		baton__task_ready_from(w, t);
}

int baton__wait_park(struct baton_task *t, int64_t timeout_ns)
{
	struct baton_worker *w = t->owner;
	/* A primitive may have set wait_timed already (false at rest): its
	 * waiters must be unlinked on this worker (baton__chan_pin_waiter). */
	bool pinned = t->wait_timed;

	t->wait_timed = pinned || timeout_ns >= 0;
	if (BATON_UNLIKELY(t->cancellable) && cancelled_before_park(t))
		goto done;
	if (timeout_ns >= 0) {
		t->timeout.deadline = baton__deadline_after(timeout_ns);
		t->timeout.fire = timeout_fire;
		if (baton__timer_heap_add(&w->timers, &t->timeout) != BATON_OK) {
			/* Not parked yet: take the wake-up ourselves. Only a
			 * canceller can have claimed it first (we hold the
			 * locks): then park untimed and meet it there. */
			if (baton__wait_claim(t)) {
				t->wait_result = BATON_ENOMEM;
				for (unsigned i = 0; i < t->nlocks; i++)
					baton__spin_unlock(t->locks[i]);
				goto done;
			}
			t->wait_timed = pinned;
		}
	}
	baton__sched_task_after(t,
				t->cancellable ? BATON_AFTER_PARK_CANCELLABLE : BATON_AFTER_PARK);
	/* Relaxed: both sides of the meeting are past it (whoever came second
	 * readied us), so nobody else touches it before our next WAITING. */
	__atomic_store_n(&t->cancel_park, 0, __ATOMIC_RELAXED);
	/* Woken: on the same worker (a task with an armed timeout is never
	 * handed to a thief), so the heap is ours. */
	if (t->timeout.index != SIZE_MAX)
		baton__timer_heap_remove(&t->owner->timers, &t->timeout);
done:
	t->wait_timed = false;
	baton__wait_unlink_rest(t);
	return t->wait_result;
}

/* --- the spinlock's contended path ----------------------------------------- */
/* Contended: spin a little (the holder is usually a few dozen instructions
 * from releasing), then give the CPU away, since the holder may have been
 * preempted and spinning would only delay it. */
void baton__spin_lock_slow(baton_spinlock_t *l)
{
	for (unsigned spins = 0;; spins++) {
		/* Relaxed: spin on a plain load so the line stays shared; the
		 * acquiring exchange below is what takes the lock. */
		while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED)) {
			if (spins++ < 128)
				baton__cpu_relax();
			else
				sched_yield();
		}
		if (!__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
			return;
	}
}

/* --- cancellation (baton/sched.h) ----------------------------------------- */
baton_task_t *baton_task_handle(void)
{
	struct baton_task *t = baton__task_self();

	if (t)
		t->cancellable = true; /* only this task reads it, in its waits */
	return t;
}

/* Set t's cancel flag and claim its wait; t goes on wl if readying it is
 * ours (handle.h). */
bool baton__task_cancel_claim(struct baton_task *t, struct baton_wakelist *wl)
{
	/* Relaxed: the fence below orders it before the claim. Sticky: a
	 * second cancel has nothing more to do. */
	if (__atomic_exchange_n(&t->cancel, 1, __ATOMIC_RELAXED))
		return false;
	/* Seq_cst fence: pairs with the task's fence between WAITING and its
	 * load of the flag (cancelled_before_park). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* Lost (not WAITING): the task runs, or was woken with its result;
	 * its next wait sees the flag. */
	if (!claim_cancelled(t))
		return true;
	/* Acq_rel: our result before the worker's ready, or its switch before
	 * ours (see baton__wait_parked_cancellable). */
	if (__atomic_exchange_n(&t->cancel_park, 1, __ATOMIC_ACQ_REL))
		baton__wakelist_add(wl, t);
	return true;
}

int baton_task_cancel(baton_task_t *t)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;

	if (t == NULL || !t->cancellable)
		return BATON_EINVAL;
	baton__task_cancel_tree(t, &wl); /* and the groups it owns */
	baton__wakelist_run(&wl);
	return BATON_OK;
}

int baton_task_cancelled(void)
{
	struct baton_task *t = baton__task_self();

	if (t == NULL)
		return BATON_ENOSCHED;
	/* Relaxed: a flag polled by the task; its waits order it themselves. */
	return __atomic_load_n(&t->cancel, __ATOMIC_RELAXED) ? 1 : 0;
}
