/* SPDX-License-Identifier: MIT */
/*
 * The worker loop: what a worker does between tasks, and its thread-local
 * identity. A worker runs tasks one after another through the hop
 * (hop.h); its loop runs only when no task is runnable and every
 * BATON_POLL_TICKS dispatches: then it empties its inbox, fires due
 * timers, polls its idle hook (the reactor) and answers a thief; with
 * nothing at all to do it returns its run credits and parks on its event
 * count (or in its hook). Also here: waking a worker, and raising the
 * scheduler's stop flag that ends every worker's loop.
 */
#include "../coro/hop.h"
#include "hop.h"
#include "queue.h"
#include "sched_internal.h"

__thread struct baton_worker *baton__worker_self __attribute__((tls_model("initial-exec")));

#if !defined(__x86_64__)
/* See sched_internal.h. noipa: no caller may learn that two calls return
 * the same value; the empty asm keeps the body opaque as well. */
__attribute__((noinline, noipa)) struct baton_worker *baton__worker_get(void)
{
	__asm__ __volatile__("" ::: "memory");
	return baton__worker_self;
}
#endif

static bool sched_stopping(struct baton_sched *s)
{
	/* Acquire: pairs with the release store in baton__sched_set_stop, so a worker
	 * that sees stop also sees why (live == 0 or a stop request). */
	return __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE);
}

void baton__sched_set_stop(struct baton_sched *s)
{
	/* Release: see sched_stopping. Also baton_sched_stop. */
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < s->nworkers; i++)
		baton__worker_wake(&s->workers[i]);
}

/* Make sure w notices what was just handed to it (its inbox, a stop or a
 * steal answer): bump its event count, and if it sleeps in its poller
 * instead, interrupt that. */
void baton__worker_wake(struct baton_worker *w)
{
	const struct baton_worker_hook *hook;

	baton_ec_inc(&w->ec);
	/* Acquire: the hook is published with its module's state. */
	hook = __atomic_load_n(&w->hook, __ATOMIC_ACQUIRE);
	if (hook == NULL)
		return;
	/* Seq_cst fence: orders what we handed over (inbox push) before the
	 * in_poll load; pairs with the worker's fence between setting in_poll
	 * and its last look at its inbox, so one of us sees the other. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&w->in_poll, __ATOMIC_RELAXED))
		hook->wake(w);
}

/* Give back what w holds: before it sleeps, and when it leaves the run. */
static void live_return(struct baton_worker *w)
{
	int64_t n = w->live_credit;

	if (n == 0)
		return;
	w->live_credit = 0;
	/* Acq_rel: the decrement that reaches 0 must see every task's
	 * effects before it declares the run over (the caller of run reads
	 * them after it returns); each worker's return releases what its
	 * tasks did. */
	if (__atomic_sub_fetch(&w->sched->live, n, __ATOMIC_ACQ_REL) == 0)
		baton__sched_set_stop(w->sched);
}

/* --- the loop ------------------------------------------------------------ */
static void run_task(struct baton_worker *w, struct baton_task *t)
{
	int rc;

	w->current = t;
	w->ticks++;
	w->stats.dispatches++; /* the hops count apart (sched.c) */
	rc = baton_coro_resume(t->co, NULL, NULL);
	w->current = NULL;
	if (BATON_UNLIKELY(rc != BATON_OK)) {
		/* Only a copy-stack save buffer that could not grow gets here
		 * (BATON_ENOMEM; run refuses a thread on which pinned tasks
		 * could not run): nothing ran; try again after the others. */
		baton__runq_push(w, t);
		return;
	}
	/* Whichever task switched back to us left its hook. */
	baton__after_switch(w);
}

static void poll_worker(struct baton_worker *w)
{
	w->ticks = 0;
	if (w->hook)
		w->hook->poll(w, 0); /* I/O edges make tasks runnable */
	baton__inbox_take(w);
	if (w->timers.len)
		baton__timer_heap_fire(&w->timers, baton__clock_now());
	/* Work arrived from elsewhere (spawns, wake-ups) while a worker
	 * sleeps: let it ask for some. */
	if (w->runq_len >= 2 && w->sched->nworkers > 1)
		baton__steal_wake_idle(w->sched);
}

static void worker_idle(struct baton_worker *w)
{
	struct baton_sched *s = w->sched;
	uint32_t version = baton_ec_value(&w->ec); /* before the last checks */
	int64_t timeout = -1, next;

	/* Answer (with nothing) a thief that asked while we ran dry. */
	if (__atomic_load_n(&w->steal_req, __ATOMIC_RELAXED))
		baton__steal_serve(w);
	if (!baton__inbox_empty(w) || sched_stopping(s))
		return;
	if (s->nworkers > 1) {
		baton__steal_idle(w); /* may post a request and wait briefly */
		/* Re-read the version before the last look at everything
		 * that bumps it (inbox, stop, steal answers): a stop raised
		 * between a look and a later read would leave us asleep on
		 * a version that already counts its bump. */
		version = baton_ec_value(&w->ec);
		if (!baton__inbox_empty(w) || baton__worker_runnable(w) || sched_stopping(s))
			return;
	}
	next = baton__timer_heap_next(&w->timers);
	if (next != INT64_MAX) {
		timeout = next - baton__clock_now();
		if (timeout <= 0)
			return;
	}
	/* Relaxed: parked/nparked are hints for wake_idle; a wake-up itself
	 * never depends on them, only on the event count (or poller). */
	__atomic_store_n(&w->parked, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->nparked, 1, __ATOMIC_RELAXED);
	if (w->hook) {
		__atomic_store_n(&w->in_poll, 1, __ATOMIC_RELAXED);
		/* Seq_cst fence: in_poll is visible before our last look at
		 * the inbox; pairs with the fence in baton__worker_wake. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (baton__inbox_empty(w) && !sched_stopping(s))
			w->hook->poll(w, timeout);
		__atomic_store_n(&w->in_poll, 0, __ATOMIC_RELAXED);
	} else {
		baton_ec_wait_mp(&w->ec, version, timeout);
	}
	__atomic_sub_fetch(&s->nparked, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&w->parked, 0, __ATOMIC_RELAXED);
}

/* Run w's tasks until the scheduler stops: worker 0 inside baton_sched_run,
 * the helpers in their threads (sched.c). */
void baton__worker_loop(struct baton_worker *w)
{
	struct baton_sched *s = w->sched;
	struct baton_worker *outer = baton__worker_get(); /* a run inside a task */
	uint64_t copied = baton__coro_thread_copied();
	/* The worker's own context shares the FP state with its tasks
	 * (sched.h rule 6): resuming a task and its yield back do no FP
	 * work. Not in a run inside a task, whose coroutine is not ours to
	 * declare. */
	int fp_was_shared = outer ? -1 : baton__coro_thread_fp_shared();
	struct baton_task *t;

	if (fp_was_shared == 0)
		baton_coro_thread_share_fpenv(1);
	baton__worker_self = w;
	w->after = BATON_AFTER_NOTHING; /* no switch to land from yet */
	for (;;) {
		if (BATON_UNLIKELY(w->ticks >= BATON_POLL_TICKS || !baton__worker_runnable(w))) {
			poll_worker(w);
			if (sched_stopping(s))
				break;
			if (!baton__worker_runnable(w)) {
				live_return(w); /* may end the run */
				worker_idle(w);
				continue;
			}
		}
		/* Relaxed peek; baton__steal_serve takes the request with an
		 * acquiring exchange. */
		if (BATON_UNLIKELY(__atomic_load_n(&w->steal_req, __ATOMIC_RELAXED)))
			baton__steal_serve(w);
		t = baton__take_next(w);
		if (t)
			run_task(w, t);
	}
	if (__atomic_load_n(&w->steal_req, __ATOMIC_RELAXED))
		baton__steal_serve(w);
	live_return(w);
	w->stats.copied_bytes += baton__coro_thread_copied() - copied;
	if (fp_was_shared == 0)
		baton_coro_thread_share_fpenv(0);
	baton__worker_self = outer;
}
