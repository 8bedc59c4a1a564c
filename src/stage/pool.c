/*
 * Resource pools: a counting semaphore whose capacity may change, served
 * strictly in arrival order (as src/sync/sem.c, which it follows).
 *
 * The pool keeps the units in use, not the units free, so that a capacity
 * below the use is simply a state where nothing fits: shrinking takes
 * nothing back, and acquisitions resume once releases bring the use under
 * the new capacity.
 *
 * Invariant (under the lock), apart from waiters whose timeout has already
 * claimed them: the queue is empty, or its head does not fit
 * (in_use + amount > capacity). Every change restores it through grant().
 */
#include <stdlib.h>
#include <string.h>

#include "stage_internal.h"

static uint64_t next_pool_id;

bool baton_stage_name_copy(char *dst, const char *src)
{
	size_t n;

	if (src == NULL)
		return false;
	n = strnlen(src, BATON_NAME_MAX + 1);
	if (n == 0 || n > BATON_NAME_MAX)
		return false;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return true;
}

static bool fits(const struct baton_pool *p, long amount)
{
	long sum;

	return !__builtin_add_overflow(p->in_use, amount, &sum) &&
	       sum <= p->capacity;
}

/* Serve the head of the queue while its request fits. Caller holds the
 * lock, and runs `wl` once it has released it. */
static void grant(struct baton_pool *p, struct baton_wakelist *wl)
{
	struct baton_waiter *w;

	while ((w = p->waiters.head) != NULL) {
		struct baton_task *t = w->task;
		long amount = w->amount;

		if (!fits(p, amount)) {
			/* Relaxed: a waiter still linked is claimed only by its
			 * timer; seeing that late only leaves the waiter for its
			 * task to unlink (and re-grant). */
			if (__atomic_load_n(&t->wait_state, __ATOMIC_RELAXED) ==
			    BATON_WAIT_WAITING)
				break;
			baton_waitq_remove(&p->waiters, w);
			continue;
		}
		baton_waitq_remove(&p->waiters, w);
		if (!baton_wait_claim(t))
			continue; /* timed out meanwhile: skip it */
		t->wait_index = w->index;
		p->in_use += amount;
		p->acquired++;
		baton_waiter_wake(wl, w, BATON_OK);
	}
}

int baton_pool_create(baton_pool_t **out, const char *name, long capacity)
{
	struct baton_pool *p;

	if (out == NULL || capacity < 0)
		return BATON_EINVAL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return BATON_ENOMEM;
	if (!baton_stage_name_copy(p->name, name)) {
		free(p);
		return BATON_EINVAL;
	}
	p->capacity = capacity;
	/* Relaxed: only uniqueness and order of the ids matter. */
	p->id = __atomic_fetch_add(&next_pool_id, 1, __ATOMIC_RELAXED);
	*out = p;
	return BATON_OK;
}

int baton_pool_acquire(baton_pool_t *p, long n, int64_t timeout_ns)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_task *t;
	int rc;

	if (p == NULL || n < 1)
		return BATON_EINVAL;
	t = baton_task_self();
	if (t == NULL && timeout_ns != 0)
		return BATON_ENOSCHED;
	for (;;) {
		baton_spin_lock(&p->lock);
		/* Drop timed-out heads, which may let earlier waiters through:
		 * those are readied, outside the lock, before we decide. */
		grant(p, &wl);
		if (wl.head == NULL)
			break;
		baton_spin_unlock(&p->lock);
		baton_wakelist_run(&wl);
	}
	if (p->waiters.head == NULL && fits(p, n)) {
		p->in_use += n;
		p->acquired++;
		baton_spin_unlock(&p->lock);
		return BATON_OK;
	}
	if (timeout_ns == 0) {
		p->refused++;
		baton_spin_unlock(&p->lock);
		return BATON_EAGAIN;
	}
	rc = baton_wait_one(t, &p->waiters, &p->lock, n, NULL, NULL, timeout_ns);
	if (rc != BATON_OK) {
		/* We were perhaps the head that held the others back. */
		baton_spin_lock(&p->lock);
		p->refused++;
		grant(p, &wl);
		baton_spin_unlock(&p->lock);
		baton_wakelist_run(&wl);
	}
	return rc;
}

int baton_pool_release(baton_pool_t *p, long n)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;

	if (p == NULL || n < 1)
		return BATON_EINVAL;
	baton_spin_lock(&p->lock);
	if (n > p->in_use) {
		baton_spin_unlock(&p->lock);
		return BATON_EPERM;
	}
	p->in_use -= n;
	grant(p, &wl);
	baton_spin_unlock(&p->lock);
	baton_wakelist_run(&wl);
	return BATON_OK;
}

int baton_pool_set_capacity(baton_pool_t *p, long capacity)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;

	if (p == NULL || capacity < 0)
		return BATON_EINVAL;
	baton_spin_lock(&p->lock);
	p->capacity = capacity;
	grant(p, &wl);
	baton_spin_unlock(&p->lock);
	baton_wakelist_run(&wl);
	return BATON_OK;
}

int baton_pool_snapshot(baton_pool_t *p, struct baton_pool_stats *out)
{
	long waiters = 0;

	if (p == NULL || out == NULL)
		return BATON_EINVAL;
	baton_spin_lock(&p->lock);
	for (struct baton_waiter *w = p->waiters.head; w; w = w->next)
		/* Relaxed: a timed-out waiter not yet unlinked is not counted;
		 * either reading is a state the pool was in. */
		if (__atomic_load_n(&w->task->wait_state, __ATOMIC_RELAXED) ==
		    BATON_WAIT_WAITING)
			waiters++;
	out->name = p->name;
	out->capacity = p->capacity;
	out->in_use = p->in_use;
	out->waiters = waiters;
	out->acquired = p->acquired;
	out->refused = p->refused;
	baton_spin_unlock(&p->lock);
	return BATON_OK;
}

int baton_pool_destroy(baton_pool_t *p)
{
	bool busy;

	if (p == NULL)
		return BATON_OK;
	baton_spin_lock(&p->lock);
	/* Timed-out waiters too: they take the lock to unlink themselves. */
	busy = p->in_use > 0 || p->users > 0 || p->waiters.head != NULL;
	baton_spin_unlock(&p->lock);
	if (busy)
		return BATON_EBUSY;
	free(p);
	return BATON_OK;
}
