/* SPDX-License-Identifier: MIT */
/*
 * Passing through a stage: the stage without handler, whose step is done
 * by the task that enters it (a connection task reading its own socket:
 * handing that to another task would cost a switch and a wake-up per
 * request, and buy nothing).
 *
 * The stage's lock guards the same fields as for items; the tasks waiting
 * are `passers` (its length is the stage's queue: a waiter that leaves it
 * any way, even freed by the scheduler's destroy, is counted out), and
 * `running` the tasks inside.
 * A task leaving hands its slot straight to the first waiter (it counts the
 * waiter as running before waking it), so nobody barges past the queue:
 * enter takes a free slot itself only when nobody waits.
 *
 * A waiting task's pass lives on its stack, which a copy-stack task does not
 * keep in place while it waits: the waker must not touch it. The waiter's
 * value carries the time the wait began, and the waker puts the admission
 * time in its place (baton__wait_one_carry hands it back to the waiter).
 */
#include "stage_internal.h"

_Static_assert(sizeof(void *) >= sizeof(int64_t), "a time travels in a waiter's value");

static void *time_value(int64_t t)
{
	return (void *)(intptr_t)t;
}

static int64_t value_time(void *v)
{
	return (int64_t)(intptr_t)v;
}

void baton__stage_admit_passers(struct baton_stage *st, int64_t now,
				struct baton_wakelist *wl)
{
	struct baton_waiter *w;

	while (st->running < st->concurrency &&
	       (w = baton__waitq_claim_first(&st->passers)) != NULL) {
		st->running++;
		st->wait_ns += (uint64_t)(now - value_time(w->value));
		w->value = time_value(now); /* the step starts once admitted */
		baton__waiter_wake(wl, w, BATON_OK);
	}
}

/* Give the slot back and serve the queue; `done`: the step ran (else it
 * was refused after its slot was taken: counted rejected). Returns with the
 * lock released: the stage may be destroyed once the wakelist has run. */
static void give_back(struct baton_stage *st, int64_t now, int64_t t0, bool done)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;

	baton__spin_lock(&st->lock);
	st->running--;
	if (done) {
		st->completed++;
		st->handler_ns += (uint64_t)(now - t0);
	} else {
		st->submitted--;
		st->rejected++;
	}
	baton__stage_admit_passers(st, now, &wl);
	baton__stage_wake_drainers(st, &wl);
	baton__spin_unlock(&st->lock);
	baton__wakelist_run(&wl);
}

/* With the slot: take every need in the pools' order within the time
 * left; on failure give back what was taken. */
static int take_needs(struct baton_stage *st, int64_t t0, int64_t timeout_ns)
{
	size_t i;
	int rc = BATON_OK;

	for (i = 0; i < st->nneeds; i++) {
		int64_t left = timeout_ns;

		if (timeout_ns > 0) {
			left = t0 + timeout_ns - baton__clock_now();
			if (left <= 0)
				left = 0; /* still try: a free unit is taken */
		}
		rc = baton_pool_acquire(st->needs[i].pool, st->needs[i].units, left);
		if (rc != BATON_OK)
			break;
	}
	if (rc == BATON_OK)
		return BATON_OK;
	while (i-- > 0)
		baton_pool_release(st->needs[i].pool, st->needs[i].units);
	return rc == BATON_EAGAIN && timeout_ns != 0 ? BATON_ETIMEDOUT : rc;
}

/* Queue the task (lock held, released on return) until a leaver gives it
 * a slot, the timeout passes or the stage closes. */
static int wait_for_slot(struct baton_stage *st, struct baton_task *t,
			 struct baton_stage_pass *p, int64_t timeout_ns)
{
	void *admitted = NULL;
	int rc;

	st->submitted++;
	rc = baton__wait_one_carry(t, &st->passers, &st->lock,
				   &(struct baton_wait_carry){ .value = time_value(p->t0),
							       .received = &admitted },
				   timeout_ns);
	if (rc == BATON_OK)
		p->t0 = value_time(admitted); /* counted by the waker */
	if (rc == BATON_OK || rc == BATON_ESHUTDOWN)
		return rc;
	/* Timed out, or no timer could be allocated: we unlinked ourselves. */
	baton__spin_lock(&st->lock);
	st->submitted--;
	if (rc == BATON_ETIMEDOUT)
		st->rejected++;
	{
		struct baton_wakelist wl = BATON_WAKELIST_INIT;

		baton__stage_wake_drainers(st, &wl);
		baton__spin_unlock(&st->lock);
		baton__wakelist_run(&wl);
	}
	return rc;
}

int baton_stage_enter(baton_stage_t *st, struct baton_stage_pass *p, int64_t timeout_ns)
{
	struct baton_task *t;
	int64_t t0;
	int rc;

	if (st == NULL || p == NULL || p->stage != NULL || st->fn != NULL)
		return BATON_EINVAL;
	if ((rc = baton__task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	t0 = p->t0 > 0 ? p->t0 : baton__clock_now();
	p->t0 = t0;
	baton__spin_lock(&st->lock);
	if (st->closed) {
		st->rejected++;
		baton__spin_unlock(&st->lock);
		return BATON_ESHUTDOWN;
	}
	if (st->passers.len == 0 && st->running < st->concurrency) {
		/* A free slot and nobody ahead: the common case, one lock. */
		st->running++;
		st->submitted++;
		baton__spin_unlock(&st->lock);
	} else if (timeout_ns == 0 || st->passers.len >= st->limit) {
		st->rejected++;
		baton__spin_unlock(&st->lock);
		return BATON_EAGAIN;
	} else {
		rc = wait_for_slot(st, t, p, timeout_ns);
		if (rc != BATON_OK)
			return rc;
		/* p->t0 is now the admission time; the deadline stays t0's. */
	}
	if (st->nneeds > 0 && (rc = take_needs(st, t0, timeout_ns)) != BATON_OK) {
		give_back(st, baton__clock_now(), p->t0, false);
		return rc;
	}
	p->stage = st;
	return BATON_OK;
}

int baton_stage_leave(struct baton_stage_pass *p, int64_t *end_ns)
{
	struct baton_stage *st;
	int64_t end;

	if (p == NULL || p->stage == NULL)
		return BATON_EINVAL;
	st = p->stage;
	p->stage = NULL;
	end = baton__clock_now();
	for (size_t i = st->nneeds; i-- > 0;)
		if (!(st->needs[i].flags & BATON_STAGE_KEEP))
			baton_pool_release(st->needs[i].pool, st->needs[i].units);
		else
			p->kept.stage = st; /* the KEEP units travel on in the pass */
	give_back(st, end, p->t0, true);
	if (end_ns != NULL)
		*end_ns = end;
	return BATON_OK;
}
