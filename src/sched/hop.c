/* SPDX-License-Identifier: MIT */
/*
 * The hop's out-of-line half (hop.h is the inline one): a task
 * that parks or yields switches straight to the next runnable task of its
 * worker, one switch per hop, and what must happen once its context is
 * saved - release the locks it parked under, requeue it, free it - is
 * left in the worker as the after-switch hook, done by whichever side runs
 * next (baton__after_switch). Here: the hook's rarer cases, the switch a
 * blocking call makes (baton__sched_task_after), and baton_sched_yield.
 */
#include "hop.h"
#include "queue.h"
#include "sched_internal.h"

/* A task is back on a worker's thread: do what the task that ran before
 * it there asked for once its context was saved (`after`, a task and its
 * kind). */
__attribute__((noinline)) void baton__after_switch_slow(struct baton_worker *w, uintptr_t after)
{
	struct baton_task *t = (struct baton_task *)(after & ~BATON_AFTER_KIND_MASK);

	w->after = BATON_AFTER_NOTHING;
	switch ((enum baton_after)(after & BATON_AFTER_KIND_MASK)) {
	case BATON_AFTER_YIELD:
		baton__runq_push(w, t);
		break;
	case BATON_AFTER_PARK:
		/* Its context is saved: now wakers may have it. Once its last
		 * lock is released it may run elsewhere and start another wait,
		 * so read nothing of it after that: release from the last, and
		 * read count and array first. (While any of its locks is still
		 * held, it cannot get past unlinking its other waiters.) */
		{
			baton_spinlock_t **locks = t->locks;

			for (unsigned i = t->nlocks; i-- > 0;)
				baton__spin_unlock(locks[i]);
		}
		break;
	case BATON_AFTER_PARK_CANCELLABLE:
		baton__wait_parked_cancellable(w, t);
		break;
	case BATON_AFTER_DONE:
		baton__task_finish(w, t);
		break;
	}
}

void baton__sched_task_after(struct baton_task *t, enum baton_after after)
{
	baton__switch_away(t, after);
	/* Resumed, perhaps on another worker: t->owner is the one running
	 * us now (whoever dispatched us set it). */
	baton__after_switch(t->owner);
}

/* --- calls from tasks ----------------------------------------------------- */
int baton_sched_yield(void)
{
	struct baton_task *t = baton__task_self();

	if (t == NULL)
		return BATON_ENOSCHED;
	/* Alone on the worker: let the loop look at I/O, timers and the
	 * inbox before it runs us again; they may hold tasks that would
	 * otherwise wait for the next poll tick while we keep yielding. */
	if (!baton__worker_runnable(t->owner))
		t->owner->ticks = BATON_POLL_TICKS;
	/* Not alone: tasks sent here by other workers (a request handed to
	 * a compute worker whose handlers compute in slices) queue behind the
	 * yielders now, not after up to BATON_POLL_TICKS more slices. */
	else if (!baton__inbox_empty(t->owner))
		baton__inbox_take(t->owner);
	baton__sched_task_after(t, BATON_AFTER_YIELD);
	return BATON_OK;
}
