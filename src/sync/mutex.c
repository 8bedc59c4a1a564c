/* SPDX-License-Identifier: MIT */
/*
 * Mutexes with FIFO hand-off. The owner is recorded under the spinlock as
 * the task that locked it (or, for a try-lock outside any task, a tag of
 * the calling thread). Unlock claims the oldest waiter that can still be
 * claimed and makes its task the owner before waking it, so the mutex is
 * never free while tasks wait: a late arrival finds it held and queues.
 *
 * Invariant (under the lock): owner == NULL implies an empty queue. Waiters
 * are linked only while the mutex is held, and the unlock that finds no
 * claimable waiter has unlinked every one (those that timed out included).
 */
#include <stdlib.h>

#include "../common/alloc.h"
#include "sync_internal.h"

struct baton_mutex {
	baton_spinlock_t lock;
	const void *owner;          /* task, thread tag, or NULL; under lock */
	struct baton_waitq waiters; /* tasks in baton_mutex_lock */
};

/* Identifies a thread that holds a mutex outside any task. Its address is
 * distinct from every live task block and every other thread's tag. */
static __thread char thread_tag;

/* Who the caller is, as an owner: its task (also from a coroutine the task
 * resumed, so that the task keeps one identity), else its thread. */
static const void *caller(void)
{
	struct baton_task *t = baton__task_current();

	return t ? (const void *)t : (const void *)&thread_tag;
}

int baton_mutex_create(baton_mutex_t **out)
{
	struct baton_mutex *m;

	if (out == NULL)
		return BATON_EINVAL;
	m = baton__calloc(1, sizeof(*m));
	if (m == NULL)
		return BATON_ENOMEM;
	*out = m;
	return BATON_OK;
}

int baton_mutex_lock(baton_mutex_t *m, int64_t timeout_ns)
{
	struct baton_task *t;
	const void *me;
	int rc;

	if (m == NULL)
		return BATON_EINVAL;
	if ((rc = baton__task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	me = caller();
	baton__spin_lock(&m->lock);
	if (m->owner == NULL) {
		m->owner = me;
		baton__spin_unlock(&m->lock);
		return BATON_OK;
	}
	if (m->owner == me || timeout_ns == 0) {
		rc = m->owner == me ? BATON_EDEADLK : BATON_EAGAIN;
		baton__spin_unlock(&m->lock);
		return rc;
	}
	/* BATON_OK: the unlocker made us the owner before waking us. Any
	 * other result: we were never made the owner, and are unlinked. */
	return baton__wait_one(t, &m->waiters, &m->lock, timeout_ns);
}

int baton_mutex_unlock(baton_mutex_t *m)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_waiter *w;

	if (m == NULL)
		return BATON_EINVAL;
	baton__spin_lock(&m->lock);
	if (m->owner != caller()) {
		baton__spin_unlock(&m->lock);
		return BATON_EPERM;
	}
	/* Skips (and unlinks) waiters whose timeout already claimed them. */
	w = baton__waitq_claim_first(&m->waiters);
	m->owner = w ? w->task : NULL;
	if (w)
		baton__waiter_wake(&wl, w, BATON_OK);
	baton__spin_unlock(&m->lock);
	baton__wakelist_run(&wl);
	return BATON_OK;
}

int baton_mutex_destroy(baton_mutex_t *m)
{
	bool busy;

	if (m == NULL)
		return BATON_OK;
	baton__spin_lock(&m->lock);
	busy = m->owner != NULL || !baton__waitq_empty(&m->waiters);
	baton__spin_unlock(&m->lock);
	if (busy)
		return BATON_EBUSY;
	baton__free(m);
	return BATON_OK;
}
