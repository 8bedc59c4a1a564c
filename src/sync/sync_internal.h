/*
 * src/sync/sync_internal.h - what the wait group, mutex and semaphore
 * share: who the caller is, and how a task blocks on one wait queue (the
 * wait protocol of src/sched/sched_internal.h, one waiter per call, as
 * src/chan/chan.c does it).
 */
#ifndef BATON_SRC_SYNC_INTERNAL_H
#define BATON_SRC_SYNC_INTERNAL_H

#include <baton/coro.h>
#include <baton/sync.h>

#include "../sched/sched_internal.h"

/* The task the caller may park: it must be running in the task's own
 * coroutine. From a coroutine the task resumed (a generator, say), parking
 * would yield that coroutine to the task instead of the task to its worker,
 * so such callers, like plain threads, get NULL (BATON_ENOSCHED). */
static inline struct baton_task *baton_sync_parkable(void)
{
	struct baton_task *t = baton_task_self();

	return t && baton_coro_self() == t->co ? t : NULL;
}

/* Hand a claimed waiter's task its result; it is made runnable by
 * baton_wakelist_run() once the caller has released its spinlock (a wake-up
 * may be a system call, which must not run inside a spinlock). */
static inline void baton_sync_wake(struct baton_wakelist *wl,
				   struct baton_waiter *w, int result)
{
	w->task->wait_result = result;
	baton_wakelist_add(wl, w->task);
}

/* Block task t on q, asking for `amount` (semaphores; 0 otherwise). Called
 * with `lock` (q's lock) held; returns with it released, with the waiter
 * unlinked and with the result its claimant stored: BATON_OK (woken by the
 * primitive), BATON_ETIMEDOUT or BATON_ENOMEM. */
int baton_sync_block(struct baton_task *t, struct baton_waitq *q,
		     baton_spinlock_t *lock, long amount, int64_t timeout_ns);

#endif /* BATON_SRC_SYNC_INTERNAL_H */
