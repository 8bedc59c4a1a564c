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

#include "queue.h"
#include "sched_internal.h"

void baton_waitq_push(struct baton_waitq *q, struct baton_waiter *w)
{
	w->next = NULL;
	w->prev = q->tail;
	if (q->tail)
		q->tail->next = w;
	else
		q->head = w;
	q->tail = w;
	w->linked = true;
}

void baton_waitq_remove(struct baton_waitq *q, struct baton_waiter *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		q->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		q->tail = w->prev;
	w->next = w->prev = NULL;
	w->linked = false;
}

/* Unlink waiters from the front until one's task can be claimed; return it
 * (claimed, unlinked) or NULL. Caller holds the queue's lock. */
struct baton_waiter *baton_waitq_claim_first(struct baton_waitq *q)
{
	struct baton_waiter *w;

	while ((w = q->head) != NULL) {
		baton_waitq_remove(q, w);
		if (baton_wait_claim(w->task)) {
			w->task->wait_index = w->index;
			return w;
		}
		/* Lost to its timeout or to another case: the task unlinks
		 * the rest of its waiters itself when it runs. */
	}
	return NULL;
}

int baton_wait_reserve(struct baton_task *t, unsigned n)
{
	t->nwaiters = 0;
	t->nlocks = 0;
	if (n <= BATON_TASK_INLINE_WAITERS) {
		t->waiters = t->inline_waiters;
		return BATON_OK;
	}
	t->waiters = malloc(n * sizeof(*t->waiters));
	return t->waiters ? BATON_OK : BATON_ENOMEM;
}

void baton_wait_begin(struct baton_task *t)
{
	t->wait_result = BATON_OK;
	t->wait_index = -1;
	t->wait_value = NULL;
	/* Relaxed: wakers read the state only after finding a waiter in a
	 * queue, i.e. after taking the lock we release after parking. */
	__atomic_store_n(&t->wait_state, BATON_WAIT_WAITING, __ATOMIC_RELAXED);
}

bool baton_wait_claim(struct baton_task *t)
{
	uint32_t expected = BATON_WAIT_WAITING;

	/* Acq_rel: the winner's later writes of the result are ordered after
	 * its win, and it sees the task's state as the task left it. */
	return __atomic_compare_exchange_n(&t->wait_state, &expected,
					   BATON_WAIT_CLAIMED, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

struct baton_waiter *baton_wait_add(struct baton_task *t, struct baton_waitq *q,
				    baton_spinlock_t *lock)
{
	struct baton_waiter *w = &t->waiters[t->nwaiters];

	w->task = t;
	w->index = (int)t->nwaiters++;
	w->queue = q;
	w->lock = lock;
	w->value = NULL;
	w->amount = 0;
	baton_waitq_push(q, w);
	for (unsigned i = 0; i < t->nlocks; i++)
		if (t->locks[i] == lock)
			return w;
	t->locks[t->nlocks++] = lock;
	return w;
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
 * common wake-up, one waiter claimed by a waker, free of a second lock. */
static void unlink_rest(struct baton_task *t)
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

void baton_wait_finish(struct baton_task *t)
{
	if (t->waiters != t->inline_waiters)
		free(t->waiters);
	t->waiters = NULL;
	t->nwaiters = 0;
	t->nlocks = 0;
	/* Relaxed: only this task reads or writes its state now. */
	__atomic_store_n(&t->wait_state, BATON_WAIT_IDLE, __ATOMIC_RELAXED);
}

int baton_wait_park(struct baton_task *t, int64_t timeout_ns)
{
	struct baton_worker *w = t->owner;

	if (timeout_ns >= 0) {
		t->timeout.deadline = baton_deadline_after(timeout_ns);
		t->timeout.fire = timeout_fire;
		if (baton_timer_heap_add(&w->timers, &t->timeout) != BATON_OK) {
			/* Not parked yet: take the wake-up ourselves. */
			if (baton_wait_claim(t))
				t->wait_result = BATON_ENOMEM;
			for (unsigned i = 0; i < t->nlocks; i++)
				baton_spin_unlock(t->locks[i]);
			goto done;
		}
	}
	baton_sched_task_after(t, BATON_AFTER_PARK);
	/* Woken: on the same worker (a task with an armed timeout is never
	 * handed to a thief), so the heap is ours. */
	if (t->timeout.index != SIZE_MAX)
		baton_timer_heap_remove(&t->owner->timers, &t->timeout);
done:
	unlink_rest(t);
	return t->wait_result;
}
