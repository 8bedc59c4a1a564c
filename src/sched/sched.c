/* SPDX-License-Identifier: MIT */
/*
 * The scheduler's life: create, run, stop, destroy, and what can be asked
 * of it (stats, its workers, the calling task's scheduler).
 *
 * Worker 0 is the thread that calls baton_sched_run(). Workers 1..N-1 are
 * threads started by the first run and kept, parked, until destroy, so that
 * copy-stack tasks pinned to them can continue in a later run. Each run is
 * a generation: the helpers wait on `ctl.start` for the next one (or for
 * destroy), run their worker loop (worker.c) and report on `ctl.done`.
 *
 * The other files of the scheduler (see sched_internal.h's map): a task's
 * life in task.c, the hop in hop.h and hop.c, the worker
 * loop in worker.c, idle workers and stealing in steal.c, waiting in wait.h
 * and wait.c, timers in timer.c, destroy's watchers in watch.c.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "sched_internal.h"

/* --- worker threads ------------------------------------------------------- */
static void *worker_thread(void *arg)
{
	struct baton_worker *w = arg;
	struct baton_sched *s = w->sched;
	struct baton_sched_ctl *c = &s->ctl;
	int seen = 0;

	for (;;) {
		uint32_t v = baton_ec_value(&c->start);
		/* Acquire: pairs with run's release increment of generation,
		 * so this run's spawns and flags are visible. */
		int gen = __atomic_load_n(&c->generation, __ATOMIC_ACQUIRE);

		if (__atomic_load_n(&c->destroying, __ATOMIC_ACQUIRE)) {
			baton__task_free_queued(w);
			baton__task_free_blocked(s, w); /* its copy-stack tasks, on its thread */
			break; /* destroy ends its hook, once no task waits */
		}
		if (gen == seen) {
			baton_ec_wait_mp(&c->start, v, -1);
			continue;
		}
		seen = gen;
		baton__worker_loop(w);
		/* Release: our tasks' effects happen before run returns. */
		__atomic_sub_fetch(&c->active, 1, __ATOMIC_RELEASE);
		baton_ec_inc(&c->done);
	}
	return NULL;
}

static int start_threads(struct baton_sched *s)
{
	for (unsigned i = 1; i < s->nworkers; i++) {
		struct baton_worker *w = &s->workers[i];

		if (w->has_thread)
			continue;
		if (pthread_create(&w->thread, NULL, worker_thread, w) != 0)
			return BATON_ESYS;
		w->has_thread = true;
	}
	return BATON_OK;
}

/* --- public API ----------------------------------------------------------- */
int baton_sched_create(baton_sched_t **out, const struct baton_sched_attr *attr)
{
	struct baton_sched *s;
	unsigned n = attr ? attr->workers : 1;

	if (out == NULL || n > BATON_SCHED_MAX_WORKERS)
		return BATON_EINVAL;
	if (n == 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		n = cpus > 0 ? (unsigned)cpus : 1;
		if (n > BATON_SCHED_MAX_WORKERS)
			n = BATON_SCHED_MAX_WORKERS;
	}
	s = baton__calloc(1, sizeof(*s));
	if (s == NULL)
		return BATON_ENOMEM;
	if ((s->workers = baton__aligned(BATON_CACHELINE, n * sizeof(*s->workers))) == NULL) {
		baton__free(s);
		return BATON_ENOMEM;
	}
	memset(s->workers, 0, n * sizeof(*s->workers));
	s->nworkers = n;
	for (unsigned i = 0; i < n; i++) {
		s->workers[i].index = i;
		s->workers[i].sched = s;
		baton_ec_init(&s->workers[i].ec);
	}
	baton_ec_init(&s->ctl.start);
	baton_ec_init(&s->ctl.done);
	*out = s;
	return BATON_OK;
}

int baton_sched_run(baton_sched_t *s)
{
	struct baton_sched_ctl *c;
	struct baton_worker *self;
	int rc;

	if (s == NULL)
		return BATON_EINVAL;
	self = baton__worker_get();
	if (self && self->sched == s)
		return BATON_EBUSY;
	c = &s->ctl;
	int expected = 0;
	/* Acquire: this run sees everything the previous run left. */
	if (!__atomic_compare_exchange_n(&s->running, &expected, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return BATON_EBUSY;
	/* Copy-stack tasks that ran on worker 0 have their frames at the
	 * addresses of that thread's shared stack: only it can continue them. */
	if (s->workers[0].npinned > 0 && !pthread_equal(s->run_thread, pthread_self())) {
		__atomic_store_n(&s->running, 0, __ATOMIC_RELEASE);
		return BATON_ETHREAD;
	}
	s->run_thread = pthread_self();
	/* Relaxed: published to the helpers by the generation release below. */
	__atomic_store_n(&s->stop, __atomic_load_n(&s->live, __ATOMIC_ACQUIRE) == 0,
			 __ATOMIC_RELAXED);
	rc = start_threads(s);
	__atomic_store_n(&c->active, (int)s->nworkers - 1, __ATOMIC_RELAXED);
	/* Release: the helpers that see the new generation see stop/active. */
	__atomic_add_fetch(&c->generation, 1, __ATOMIC_RELEASE);
	baton_ec_inc(&c->start);
	/* Helpers that could not be started never decrement `active`. */
	for (unsigned i = 1; i < s->nworkers; i++)
		if (!s->workers[i].has_thread)
			__atomic_sub_fetch(&c->active, 1, __ATOMIC_RELAXED);
	baton__worker_loop(&s->workers[0]);
	for (;;) {
		uint32_t v = baton_ec_value(&c->done);

		/* Acquire: pairs with each helper's release decrement. */
		if (__atomic_load_n(&c->active, __ATOMIC_ACQUIRE) == 0)
			break;
		baton_ec_wait_mp(&c->done, v, -1);
	}
	/* Release: pairs with the next run's acquiring CAS. */
	__atomic_store_n(&s->running, 0, __ATOMIC_RELEASE);
	return rc;
}

int baton_sched_stop(baton_sched_t *s)
{
	if (s == NULL)
		return BATON_EINVAL;
	baton__sched_set_stop(s);
	return BATON_OK;
}

int baton_sched_stats(const baton_sched_t *s, struct baton_sched_stats *out)
{
	struct baton_sched_stats sum = { 0 };

	if (s == NULL || out == NULL)
		return BATON_EINVAL;
	/* Acquire: pairs with the release that ends a run, so the workers'
	 * plain counter updates are visible. */
	if (__atomic_load_n(&s->running, __ATOMIC_ACQUIRE))
		return BATON_EBUSY;
	for (unsigned i = 0; i < s->nworkers; i++) {
		const struct baton_sched_stats *w = &s->workers[i].stats;

		/* A worker counts its loop's dispatches in `dispatches`, and
		 * a task's hops only once, in `handoffs` (the hop). */
		sum.dispatches += w->dispatches + w->handoffs;
		sum.handoffs += w->handoffs;
		sum.cross_wakes += w->cross_wakes;
		sum.steals += w->steals;
		sum.fair_turns += w->fair_turns;
		sum.copied_bytes += w->copied_bytes;
	}
	*out = sum;
	return BATON_OK;
}

int baton_sched_workers(const baton_sched_t *s)
{
	return s ? (int)s->nworkers : BATON_EINVAL;
}

/* The worker ends (the scheduler is destroyed): so does its hook's state. */
static void worker_hook_fini(struct baton_worker *w)
{
	if (w->hook)
		w->hook->fini(w); /* clears w->hook */
}

int baton_sched_destroy(baton_sched_t *s)
{
	struct baton_sched_ctl *c;

	if (s == NULL)
		return BATON_OK;
	if (__atomic_load_n(&s->running, __ATOMIC_ACQUIRE))
		return BATON_EBUSY;
	c = &s->ctl;
	/* Release: helpers that see destroying exit their outer loop. */
	__atomic_store_n(&c->destroying, 1, __ATOMIC_RELEASE);
	baton_ec_inc(&c->start);
	for (unsigned i = 1; i < s->nworkers; i++)
		if (s->workers[i].has_thread)
			pthread_join(s->workers[i].thread, NULL);
	for (unsigned i = 0; i < s->nworkers; i++)
		if (i == 0 || !s->workers[i].has_thread)
			baton__task_free_queued(&s->workers[i]); /* the others freed theirs */
	/* The helpers freed their pinned copy-stack tasks; what is left
	 * (blocked stackful tasks, worker 0's copy-stack ones, copy-stack
	 * ones that never ran) is freed here, on the run's thread. */
	baton__task_free_blocked(s, NULL);
	baton__sched_watches_gone(s); /* stages: their tasks are gone */
	/* Now no task waits on anything: the hooks (the reactors, which free
	 * the handles left open) can go, every worker's here. */
	for (unsigned i = 0; i < s->nworkers; i++) {
		struct baton_worker *w = &s->workers[i];

		worker_hook_fini(w);
		baton__timer_heap_fini(&w->timers);
	}
	baton__free(s->workers);
	baton__free(s);
	return BATON_OK;
}

/* --- calls from tasks ----------------------------------------------------- */
baton_sched_t *baton_sched_self(void)
{
	struct baton_worker *w = baton__worker_get();

	return w && w->current ? w->sched : NULL;
}

int baton_sched_worker_index(void)
{
	struct baton_worker *w = baton__worker_get();

	return w && w->current ? (int)w->index : -1;
}
