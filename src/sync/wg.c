/* SPDX-License-Identifier: MIT */
/*
 * Wait groups: a count under a spinlock and a queue of tasks waiting for it
 * to reach zero. The add that brings the count to zero claims every waiter
 * while it still holds the lock (and readies them after releasing it), so a
 * wait that starts later sees either the new count or is among those woken.

 */
#include <stdlib.h>

#include "../common/alloc.h"
#include "sync_internal.h"

struct baton_wg {
	baton_spinlock_t lock;
	long count;                 /* >= 0, guarded by lock */
	struct baton_waitq waiters; /* tasks in baton_wg_wait */
};

int baton_wg_create(baton_wg_t **out)
{
	struct baton_wg *wg;

	if (out == NULL)
		return BATON_EINVAL;
	wg = baton__calloc(1, sizeof(*wg));
	if (wg == NULL)
		return BATON_ENOMEM;
	*out = wg;
	return BATON_OK;
}

int baton_wg_add(baton_wg_t *wg, long delta)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	long count;

	if (wg == NULL)
		return BATON_EINVAL;
	baton__spin_lock(&wg->lock);
	if (__builtin_add_overflow(wg->count, delta, &count) || count < 0) {
		baton__spin_unlock(&wg->lock);
		return BATON_EINVAL;
	}
	wg->count = count;
	if (count == 0)
		baton__waitq_wake_all(&wg->waiters, &wl, BATON_OK);
	baton__spin_unlock(&wg->lock);
	baton__wakelist_run(&wl);
	return BATON_OK;
}

int baton_wg_done(baton_wg_t *wg)
{
	return baton_wg_add(wg, -1);
}

int baton_wg_wait(baton_wg_t *wg, int64_t timeout_ns)
{
	struct baton_task *t;
	int rc;

	if (wg == NULL)
		return BATON_EINVAL;
	if ((rc = baton__task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	baton__spin_lock(&wg->lock);
	if (wg->count == 0 || timeout_ns == 0) {
		rc = wg->count == 0 ? BATON_OK : BATON_EAGAIN;
		baton__spin_unlock(&wg->lock);
		return rc;
	}
	return baton__wait_one(t, &wg->waiters, &wg->lock, timeout_ns);
}

long baton_wg_count(baton_wg_t *wg)
{
	long n;

	if (wg == NULL)
		return BATON_EINVAL;
	baton__spin_lock(&wg->lock);
	n = wg->count;
	baton__spin_unlock(&wg->lock);
	return n;
}

int baton_wg_destroy(baton_wg_t *wg)
{
	bool busy;

	if (wg == NULL)
		return BATON_OK;
	/* A waiter that timed out is still linked until its task has run: it
	 * will take the lock to unlink itself, so it counts as busy too. */
	baton__spin_lock(&wg->lock);
	busy = !baton__waitq_empty(&wg->waiters);
	baton__spin_unlock(&wg->lock);
	if (busy)
		return BATON_EBUSY;
	baton__free(wg);
	return BATON_OK;
}
