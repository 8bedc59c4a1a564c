/* SPDX-License-Identifier: MIT */
/* FIFO units (units.h): acquire, release, capacity, and the grant step. */
#include <limits.h>

#include "units.h"

void baton__units_init(struct baton_units *u, long capacity)
{
	*u = (struct baton_units){ .avail = capacity, .capacity = capacity };
}

/* Serve the head of the queue while its request fits. Caller holds the
 * lock, and runs `wl` once it has released it. */
static void grant(struct baton_units *u, struct baton_wakelist *wl)
{
	struct baton_waiter *w;

	while ((w = baton__waitq_first(&u->waiters)) != NULL) {
		struct baton_task *t = w->task;
		long amount = w->amount;

		if (amount > u->avail) {
			/* Relaxed: a waiter still linked is claimed only by its
			 * timer or a cancellation. Seeing the claim late only leaves the waiter
			 * for its task to unlink (and re-grant); seeing it, we
			 * unlink it so it stops holding the queue back. */
			if (__atomic_load_n(&t->wait_state, __ATOMIC_RELAXED) == BATON_WAIT_WAITING)
				break;
			baton__waitq_remove(&u->waiters, w);
			continue;
		}
		baton__waitq_remove(&u->waiters, w);
		if (!baton__wait_claim(t))
			continue; /* timed out meanwhile: skip it */
		t->wait_index = w->index;
		u->avail -= amount;
		u->acquired++;
		baton__waiter_wake(wl, w, BATON_OK);
	}
}

/* Run grant and release the lock, then ready whom it served. */
static void grant_unlock(struct baton_units *u)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;

	grant(u, &wl);
	baton__spin_unlock(&u->lock);
	baton__wakelist_run(&wl);
}

int baton__units_acquire(struct baton_units *u, long n, int64_t timeout_ns)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_task *t;
	int rc;

	if ((rc = baton__task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	for (;;) {
		baton__spin_lock(&u->lock);
		/* Drop timed-out heads, which may let earlier waiters through:
		 * those must be readied, outside the lock, before we decide. */
		grant(u, &wl);
		if (wl.head == NULL)
			break;
		baton__spin_unlock(&u->lock);
		baton__wakelist_run(&wl);
	}
	if (baton__waitq_empty(&u->waiters) && n <= u->avail) {
		u->avail -= n;
		u->acquired++;
		baton__spin_unlock(&u->lock);
		return BATON_OK;
	}
	if (timeout_ns == 0) {
		u->refused++;
		baton__spin_unlock(&u->lock);
		return BATON_EAGAIN;
	}
	rc = baton__wait_one_carry(t, &u->waiters, &u->lock,
				   &(struct baton_wait_carry){ .amount = n }, timeout_ns);
	if (rc != BATON_OK) {
		/* We were perhaps the head that held the others back. */
		baton__spin_lock(&u->lock);
		u->refused++;
		grant_unlock(u);
	}
	return rc;
}

bool baton__units_release(struct baton_units *u, long n)
{
	long avail;

	baton__spin_lock(&u->lock);
	if (__builtin_add_overflow(u->avail, n, &avail) || avail > u->capacity) {
		baton__spin_unlock(&u->lock);
		return false;
	}
	u->avail = avail;
	grant_unlock(u);
	return true;
}

void baton__units_set_capacity(struct baton_units *u, long capacity)
{
	baton__spin_lock(&u->lock);
	/* No overflow: avail <= the old capacity, both in [0, LONG_MAX]. */
	u->avail += capacity - u->capacity;
	u->capacity = capacity;
	grant_unlock(u);
}

long baton__units_waiting(const struct baton_units *u)
{
	const struct baton_waiter *w;
	long n = 0;

	BATON_LIST_FOR_EACH (w, &u->waiters.list, link)
		/* Relaxed: a timed-out waiter not yet unlinked is not counted;
		 * either reading is a state the units were in. */
		if (__atomic_load_n(&w->task->wait_state, __ATOMIC_RELAXED) == BATON_WAIT_WAITING)
			n++;
	return n;
}

bool baton__units_has_waiters(struct baton_units *u)
{
	bool busy;

	baton__spin_lock(&u->lock);
	busy = !baton__waitq_empty(&u->waiters);
	baton__spin_unlock(&u->lock);
	return busy;
}
