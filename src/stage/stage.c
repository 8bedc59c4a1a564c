/* SPDX-License-Identifier: MIT */
/*
 * Stages: a bounded ring of items and its counters, behind the public
 * calls; the stage's tasks (the dispatcher and the runners) are in
 * runner.c, calls in call.c. A deprecated stage without handler is a front
 * for a gate (pass.c): each public call forwards to it first thing.
 *
 * Everything mutable lives under the stage's spinlock; a task blocks on one
 * of the wait queues of the stage (the wait protocol of
 * src/sched/wait.h, through baton__wait_one):
 *   producers   submitters finding the queue full; the waiter carries the
 *               item, and whoever frees a slot moves that item into the
 *               ring and wakes its producer (FIFO hand-off: nobody barges)
 *   dispatcher  the dispatcher, waiting for a concurrency slot
 *   drainers    tasks in baton_stage_drain, woken when the stage is idle
 *   idle        per worker of the stage (slots), its idle runners;
 *               whoever hands one an item puts it in the waiter (count it
 *               running first)
 */
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "stage_internal.h"

/* True if the caller must spawn a dispatcher once the lock is released. */
static bool kick(struct baton_stage *st)
{
	if (st->active || st->count == 0)
		return false;
	st->active = true;
	return true;
}

/* --- the public calls ---------------------------------------------------------- */

int baton_stage_create(baton_stage_t **out, baton_sched_t *s, const struct baton_stage_attr *attr)
{
	struct baton_stage *st;
	struct baton_stage_need needs[BATON_STAGE_MAX_NEEDS];
	size_t n;

	if (out == NULL || s == NULL || attr == NULL ||
	    (attr->fn == NULL && (attr->nworkers > 0 || attr->flags != 0)) ||
	    (attr->flags & ~BATON_STAGE_CANCEL_ABANDONED) || attr->queue_capacity == 0 ||
	    attr->queue_capacity > BATON_STAGE_MAX_CAPACITY || attr->concurrency == 0 ||
	    (attr->nworkers > 0 &&
	     (attr->first_worker < 0 ||
	      attr->first_worker + (long)attr->nworkers > baton_sched_workers(s))))
		return BATON_EINVAL;
	if (attr->fn == NULL) /* deprecated (stage.h rule 6): a gate's front */
		return baton__stage_create_gated(out, attr);
	n = attr->nneeds;
	if (!baton__needs_sort(needs, attr->needs, n))
		return BATON_EINVAL;
	st = baton__calloc(1, sizeof(*st));
	if (st == NULL)
		return BATON_ENOMEM;
	if (!baton__name_copy(st->name, sizeof(st->name), attr->name)) { /* refused */
		baton__free(st);
		return BATON_EINVAL;
	}
	st->ring = baton__calloc(attr->queue_capacity, sizeof(*st->ring));
	if (st->ring == NULL) {
		baton__free(st);
		return BATON_ENOMEM;
	}
	st->cap = st->limit = attr->queue_capacity;
	st->concurrency = attr->concurrency;
	st->sched = s;
	st->fn = attr->fn;
	st->ctx = attr->ctx;
	/* The dispatcher runs where it is spawned (the submitter's worker):
	 * pinned to one of the stage's workers, it would wait behind a long
	 * handler there while the other workers stand idle. */
	st->task = attr->task;
	st->first_worker = attr->first_worker;
	st->nworkers = attr->nworkers;
	st->flags = attr->flags;
	st->nslots = attr->nworkers > 0 ? attr->nworkers : 1;
	st->slots = baton__calloc(st->nslots, sizeof(*st->slots));
	if (st->slots == NULL) {
		baton__free(st->ring);
		baton__free(st);
		return BATON_ENOMEM;
	}
	memcpy(st->needs, needs, n * sizeof(needs[0]));
	st->nneeds = n;
	/* Its tasks die with the scheduler: hear of it. */
	st->watch.gone = baton__stage_sched_gone;
	baton__sched_watch(s, &st->watch);
	baton__needs_use(st->needs, n, 1);
	*out = st;
	return BATON_OK;
}

/* A submit whose dispatcher could not be spawned takes its item back,
 * item number `nr` of all pushed, unless a handler task has taken it
 * meanwhile (runners take the head without a dispatcher): then it runs,
 * and the submit succeeded. Only the head moves while it waits, so an
 * item still queued is at position nr - popped. */
static bool unsubmit(struct baton_stage *st, uint64_t nr)
{
	size_t pos;

	baton__spin_lock(&st->lock);
	if (nr < st->popped) {
		baton__spin_unlock(&st->lock);
		return false;
	}
	pos = (size_t)(nr - st->popped);
	for (size_t i = pos; i + 1 < st->count; i++)
		st->ring[(st->head + i) % st->cap] = st->ring[(st->head + i + 1) % st->cap];
	st->count--;
	st->submitted--;
	baton__spin_unlock(&st->lock);
	return true;
}

/* Queue `item` (of `call`, or NULL: a plain submit) for the calling task
 * t: submit's and call's common part. */
int baton__stage_queue(struct baton_stage *st, struct baton_task *t, void *item,
		       struct stage_call *call, int64_t timeout_ns)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	bool spawn;
	int rc;

	baton__spin_lock(&st->lock);
	if (st->closed) {
		st->rejected++;
		baton__spin_unlock(&st->lock);
		return BATON_ESHUTDOWN;
	}
	/* A free slot, nothing to acquire and nothing ahead of us: hand the
	 * item to a runner on the least busy worker ourselves (an idle one, or
	 * a new one), without the dispatcher. */
	if (st->count == 0 && st->nneeds == 0 && st->running < st->concurrency) {
		st->submitted++;
		st->running++;
		if (baton__stage_start_locked(st, item, call) == BATON_OK)
			return BATON_OK;
		/* No runner could be spawned: queue it for the dispatcher. */
		baton__spin_lock(&st->lock);
		st->submitted--;
		st->running--;
		if (st->closed) {
			st->rejected++;
			baton__spin_unlock(&st->lock);
			return BATON_ESHUTDOWN;
		}
	}
	if (st->count < st->limit) {
		uint64_t nr = st->popped + st->count;

		baton__stage_push(st, item, call, baton__clock_now());
		if (st->count == 1)
			baton__stage_poke(st, &wl); /* a dispatcher idle between handlers */
		spawn = kick(st);
		baton__spin_unlock(&st->lock);
		baton__wakelist_run(&wl);
		if (spawn && (rc = baton__stage_spawn_dispatcher(st)) != BATON_OK &&
		    unsubmit(st, nr))
			return rc;
		return BATON_OK;
	}
	if (timeout_ns == 0) {
		st->rejected++;
		baton__spin_unlock(&st->lock);
		return BATON_EAGAIN;
	}
	/* Full: wait for a slot; the one who frees it moves our item in (a
	 * call's record: amount 1, see baton__stage_admit). */
	rc = baton__wait_one_carry(
		t, &st->producers, &st->lock,
		&(struct baton_wait_carry){ .amount = call != NULL,
					    .value = call ? (void *)call : item },
		timeout_ns);
	if (rc == BATON_ETIMEDOUT) {
		baton__spin_lock(&st->lock);
		st->rejected++;
		baton__spin_unlock(&st->lock);
	}
	return rc; /* ESHUTDOWN: close counted it */
}

int baton_stage_submit(baton_stage_t *st, void *item, int64_t timeout_ns)
{
	struct baton_task *t;
	int rc;

	if (st == NULL || st->gate != NULL)
		return BATON_EINVAL;
	if ((rc = baton__task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	return baton__stage_queue(st, t, item, NULL, timeout_ns);
}

int baton_stage_close(baton_stage_t *st)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	bool spawn;

	if (st == NULL)
		return BATON_EINVAL;
	if (st->gate != NULL)
		return baton_gate_close(st->gate);
	baton__spin_lock(&st->lock);
	if (st->closed) {
		baton__spin_unlock(&st->lock);
		return BATON_ESHUTDOWN;
	}
	st->closed = true;
	st->rejected += baton__waitq_wake_all(&st->producers, &wl, BATON_ESHUTDOWN);
	baton__stage_wake_drainers(st, &wl);
	spawn = kick(st);
	baton__spin_unlock(&st->lock);
	baton__wakelist_run(&wl);
	if (spawn)
		baton__stage_spawn_dispatcher(st); /* on failure, drain kicks again */
	return BATON_OK;
}

int baton_stage_drain(baton_stage_t *st, int64_t timeout_ns)
{
	struct baton_task *t;
	int rc;

	if (st == NULL)
		return BATON_EINVAL;
	if (st->gate != NULL)
		return baton_gate_drain(st->gate, timeout_ns);
	if ((rc = baton__task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	baton__spin_lock(&st->lock);
	if (baton__stage_idle(st)) {
		baton__spin_unlock(&st->lock);
		return BATON_OK;
	}
	{
		/* Idle runners would linger; a drainer wants them gone. */
		struct baton_wakelist wl = BATON_WAKELIST_INIT;

		baton__stage_dismiss_idle(st, &wl);
		baton__spin_unlock(&st->lock);
		baton__wakelist_run(&wl);
		baton__spin_lock(&st->lock);
	}
	if (kick(st)) { /* items left by a failed spawn */
		baton__spin_unlock(&st->lock);
		if ((rc = baton__stage_spawn_dispatcher(st)) != BATON_OK)
			return rc;
		baton__spin_lock(&st->lock);
	}
	if (timeout_ns == 0) {
		baton__spin_unlock(&st->lock);
		return BATON_EAGAIN;
	}
	if (baton__stage_idle(st)) { /* the new dispatcher may already have finished */
		baton__spin_unlock(&st->lock);
		return BATON_OK;
	}
	return baton__wait_one(t, &st->drainers, &st->lock, timeout_ns);
}

int baton_stage_set_concurrency(baton_stage_t *st, unsigned n)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;

	if (st == NULL || n == 0)
		return BATON_EINVAL;
	if (st->gate != NULL)
		return baton_gate_set_concurrency(st->gate, n);
	baton__spin_lock(&st->lock);
	st->concurrency = n;
	baton__stage_poke(st, &wl);
	baton__spin_unlock(&st->lock);
	baton__wakelist_run(&wl);
	return BATON_OK;
}

int baton_stage_set_queue_limit(baton_stage_t *st, size_t n)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	bool spawn;

	if (st != NULL && st->gate != NULL)
		return baton_gate_set_queue_limit(st->gate, n);
	if (st == NULL || n == 0 || n > st->cap)
		return BATON_EINVAL;
	baton__spin_lock(&st->lock);
	st->limit = n;
	baton__stage_admit(st, baton__clock_now(), &wl);
	baton__stage_poke(st, &wl);
	spawn = kick(st);
	baton__spin_unlock(&st->lock);
	baton__wakelist_run(&wl);
	if (spawn)
		baton__stage_spawn_dispatcher(st); /* on failure, the next call kicks */
	return BATON_OK;
}

int baton_stage_snapshot(baton_stage_t *st, struct baton_stage_stats *out)
{
	if (st == NULL || out == NULL)
		return BATON_EINVAL;
	if (st->gate != NULL)
		return baton_gate_snapshot(st->gate, out);
	baton__spin_lock(&st->lock);
	out->name = st->name;
	out->queued = st->count;
	out->queue_limit = st->limit;
	out->running = st->running;
	out->concurrency = st->concurrency;
	out->closed = st->closed;
	out->submitted = st->submitted;
	out->rejected = st->rejected;
	out->completed = st->completed;
	out->handler_ns = st->handler_ns;
	out->wait_ns = st->wait_ns;
	out->runners = st->nrunners;
	out->runners_started = st->runners_started;
	baton__spin_unlock(&st->lock);
	return BATON_OK;
}

int baton_stage_destroy(baton_stage_t *st)
{
	bool busy;

	if (st == NULL)
		return BATON_OK;
	if (st->gate != NULL) {
		int rc = baton_gate_destroy(st->gate);

		if (rc == BATON_OK)
			baton__free(st);
		return rc;
	}
	baton__spin_lock(&st->lock);
	/* Waiters that timed out too: they take the lock to unlink. */
	busy = !baton__stage_idle(st) || !baton__waitq_empty(&st->producers) ||
		!baton__waitq_empty(&st->drainers) || !baton__waitq_empty(&st->dispatcher) ||
		baton__stage_runners_linked(st);
	baton__spin_unlock(&st->lock);
	if (busy)
		return BATON_EBUSY;
	baton__sched_unwatch(&st->watch);
	baton__needs_use(st->needs, st->nneeds, -1);
	baton__free(st->slots);
	baton__free(st->ring);
	baton__free(st);
	return BATON_OK;
}
