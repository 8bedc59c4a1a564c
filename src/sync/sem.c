/*
 * Counting semaphores, served strictly in arrival order.
 *
 * Invariant (under the lock), apart from waiters whose timeout has already
 * claimed them: the queue is empty, or its head asks for more units than
 * are free. Every change restores it through grant(): release adds units,
 * and a task whose wait failed (timeout, ENOMEM) runs grant() after it has
 * unlinked itself, since it may have been the head holding others back.
 * An acquire takes units directly only when nobody is queued.
 */
#include <stdlib.h>

#include "sync_internal.h"

struct baton_sem {
	baton_spinlock_t lock;
	long value;		     /* free units, >= 0; under lock */
	struct baton_waitq waiters; /* tasks in baton_sem_acquire, FIFO */
};

/* Serve the head of the queue while its request fits. Caller holds the
 * lock, and runs `wl` once it has released it. */
static void grant(struct baton_sem *s, struct baton_wakelist *wl)
{
	struct baton_waiter *w;

	while ((w = s->waiters.head) != NULL) {
		struct baton_task *t = w->task;
		long amount = w->amount;

		if (amount > s->value) {
			/* Relaxed: a waiter still linked is claimed only by its
			 * timer. Seeing the claim late only leaves the waiter
			 * for its task to unlink (and re-grant); seeing it, we
			 * unlink it so it stops holding the queue back. */
			if (__atomic_load_n(&t->wait_state, __ATOMIC_RELAXED) ==
			    BATON_WAIT_WAITING)
				break;
			baton_waitq_remove(&s->waiters, w);
			continue;
		}
		baton_waitq_remove(&s->waiters, w);
		if (!baton_wait_claim(t))
			continue; /* timed out meanwhile: skip it */
		t->wait_index = w->index;
		s->value -= amount;
		baton_waiter_wake(wl, w, BATON_OK);
	}
}

int baton_sem_create(baton_sem_t **out, long initial)
{
	struct baton_sem *s;

	if (out == NULL || initial < 0)
		return BATON_EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return BATON_ENOMEM;
	s->value = initial;
	*out = s;
	return BATON_OK;
}

int baton_sem_acquire(baton_sem_t *s, long n, int64_t timeout_ns)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_task *t;
	int rc;

	if (s == NULL || n < 1)
		return BATON_EINVAL;
	t = baton_task_self();
	if (t == NULL && timeout_ns != 0)
		return BATON_ENOSCHED;
	for (;;) {
		baton_spin_lock(&s->lock);
		/* Drop timed-out heads, which may let earlier waiters through:
		 * those must be readied, outside the lock, before we decide. */
		grant(s, &wl);
		if (wl.head == NULL)
			break;
		baton_spin_unlock(&s->lock);
		baton_wakelist_run(&wl);
	}
	if (s->waiters.head == NULL && s->value >= n) {
		s->value -= n;
		baton_spin_unlock(&s->lock);
		return BATON_OK;
	}
	if (timeout_ns == 0) {
		baton_spin_unlock(&s->lock);
		return BATON_EAGAIN;
	}
	rc = baton_wait_one(t, &s->waiters, &s->lock, n, NULL, NULL, timeout_ns);
	if (rc != BATON_OK) {
		/* We were perhaps the head that held the others back. */
		baton_spin_lock(&s->lock);
		grant(s, &wl);
		baton_spin_unlock(&s->lock);
		baton_wakelist_run(&wl);
	}
	return rc;
}

int baton_sem_release(baton_sem_t *s, long n)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	long value;

	if (s == NULL || n < 1)
		return BATON_EINVAL;
	baton_spin_lock(&s->lock);
	if (__builtin_add_overflow(s->value, n, &value)) {
		baton_spin_unlock(&s->lock);
		return BATON_EINVAL;
	}
	s->value = value;
	grant(s, &wl);
	baton_spin_unlock(&s->lock);
	baton_wakelist_run(&wl);
	return BATON_OK;
}

int baton_sem_value(baton_sem_t *s, long *out)
{
	if (s == NULL || out == NULL)
		return BATON_EINVAL;
	baton_spin_lock(&s->lock);
	*out = s->value;
	baton_spin_unlock(&s->lock);
	return BATON_OK;
}

int baton_sem_destroy(baton_sem_t *s)
{
	bool busy;

	if (s == NULL)
		return BATON_OK;
	baton_spin_lock(&s->lock);
	busy = s->waiters.head != NULL; /* timed-out waiters too: see wg.c */
	baton_spin_unlock(&s->lock);
	if (busy)
		return BATON_EBUSY;
	free(s);
	return BATON_OK;
}
