/* SPDX-License-Identifier: MIT */
/*
 * Gates: a step done by the task that passes through (a connection task
 * reading its own socket: handing that to another task would cost a
 * switch and a wake-up per request, and buy nothing), bounded as a stage
 * is, without the stage's queue of items and its tasks.
 *
 * The gate's lock guards everything mutable; the tasks waiting are
 * `passers`, the tasks inside `running`.
 * A task leaving hands its slot straight to the first waiter (it counts the
 * waiter as running before waking it), so nobody barges past the queue:
 * enter takes a free slot itself only when nobody waits.
 *
 * A waiting task's pass lives on its stack, which a copy-stack task does not
 * keep in place while it waits: the waker must not touch it. The waiter's
 * value carries the time the wait began, and the waker puts the admission
 * time in its place (baton__wait_one_carry hands it back to the waiter).
 */
#include <string.h>

#include "../common/alloc.h"
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

/* Nobody waiting or inside. */
static bool idle(const struct baton_gate *g)
{
	return g->passers.len == 0 && g->running == 0;
}

/* Under the lock: claim the drainers into wl once the gate is idle. */
static void wake_drainers(struct baton_gate *g, struct baton_wakelist *wl)
{
	if (idle(g))
		baton__waitq_wake_all(&g->drainers, wl, BATON_OK);
}

/* Under the lock: give free slots to waiting tasks, first come first
 * served, their wait ending at `now`. */
static void admit(struct baton_gate *g, int64_t now, struct baton_wakelist *wl)
{
	struct baton_waiter *w;

	while (g->running < g->concurrency && (w = baton__waitq_claim_first(&g->passers)) != NULL) {
		g->running++;
		g->wait_ns += (uint64_t)(now - value_time(w->value));
		w->value = time_value(now); /* the step starts once admitted */
		baton__waiter_wake(wl, w, BATON_OK);
	}
}

/* Give the slot back and serve the queue; `done`: the step ran (else it
 * was refused after its slot was taken: counted rejected). Returns with the
 * lock released: the gate may be destroyed once the wakelist has run. */
static void give_back(struct baton_gate *g, int64_t now, int64_t t0, bool done)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;

	baton__spin_lock(&g->lock);
	g->running--;
	if (done) {
		g->completed++;
		g->handler_ns += (uint64_t)(now - t0);
	} else {
		g->submitted--;
		g->rejected++;
	}
	admit(g, now, &wl);
	wake_drainers(g, &wl);
	baton__spin_unlock(&g->lock);
	baton__wakelist_run(&wl);
}

/* With the slot: take every need in the pools' order within the time
 * left; on failure give back what was taken. */
static int take_needs(struct baton_gate *g, int64_t t0, int64_t timeout_ns)
{
	size_t i;
	int rc = BATON_OK;

	for (i = 0; i < g->nneeds; i++) {
		int64_t left = timeout_ns;

		if (timeout_ns > 0) {
			left = t0 + timeout_ns - baton__clock_now();
			if (left <= 0)
				left = 0; /* still try: a free unit is taken */
		}
		rc = baton_pool_acquire(g->needs[i].pool, g->needs[i].units, left);
		if (rc != BATON_OK)
			break;
	}
	if (rc == BATON_OK)
		return BATON_OK;
	while (i-- > 0)
		baton_pool_release(g->needs[i].pool, g->needs[i].units);
	return rc == BATON_EAGAIN && timeout_ns != 0 ? BATON_ETIMEDOUT : rc;
}

/* Queue the task (lock held, released on return) until a leaver gives it
 * a slot, the timeout passes or the gate closes. */
static int wait_for_slot(struct baton_gate *g, struct baton_task *t, struct baton_gate_pass *p,
			 int64_t timeout_ns)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	void *admitted = NULL;
	int rc;

	g->submitted++;
	rc = baton__wait_one_carry(
		t, &g->passers, &g->lock,
		&(struct baton_wait_carry){ .value = time_value(p->t0), .received = &admitted },
		timeout_ns);
	if (rc == BATON_OK)
		p->t0 = value_time(admitted); /* counted by the waker */
	if (rc == BATON_OK || rc == BATON_ESHUTDOWN)
		return rc;
	/* Timed out, or no timer could be allocated: we unlinked ourselves. */
	baton__spin_lock(&g->lock);
	g->submitted--;
	if (rc == BATON_ETIMEDOUT)
		g->rejected++;
	wake_drainers(g, &wl);
	baton__spin_unlock(&g->lock);
	baton__wakelist_run(&wl);
	return rc;
}

/* --- the public calls ---------------------------------------------------------- */

int baton_gate_create(baton_gate_t **out, const struct baton_gate_attr *attr)
{
	struct baton_gate *g;
	struct baton_stage_need needs[BATON_STAGE_MAX_NEEDS];

	if (out == NULL || attr == NULL || attr->queue_capacity == 0 ||
	    attr->queue_capacity > BATON_STAGE_MAX_CAPACITY || attr->concurrency == 0 ||
	    !baton__needs_sort(needs, attr->needs, attr->nneeds))
		return BATON_EINVAL;
	g = baton__calloc(1, sizeof(*g));
	if (g == NULL)
		return BATON_ENOMEM;
	if (!baton__name_copy(g->name, sizeof(g->name), attr->name)) { /* refused */
		baton__free(g);
		return BATON_EINVAL;
	}
	g->cap = g->limit = attr->queue_capacity;
	g->concurrency = attr->concurrency;
	memcpy(g->needs, needs, attr->nneeds * sizeof(needs[0]));
	g->nneeds = attr->nneeds;
	for (size_t i = 0; i < g->nneeds; i++)
		g->keeps |= (g->needs[i].flags & BATON_STAGE_KEEP) != 0;
	baton__needs_use(g->needs, g->nneeds, 1);
	*out = g;
	return BATON_OK;
}

int baton_gate_enter(baton_gate_t *g, struct baton_gate_pass *p, int64_t timeout_ns)
{
	struct baton_task *t;
	int64_t t0;
	int rc;

	if (g == NULL || p == NULL || p->gate != NULL)
		return BATON_EINVAL;
	if ((rc = baton__task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	t0 = p->t0 > 0 ? p->t0 : baton__clock_now();
	p->t0 = t0;
	baton__spin_lock(&g->lock);
	if (g->closed) {
		g->rejected++;
		baton__spin_unlock(&g->lock);
		return BATON_ESHUTDOWN;
	}
	if (g->passers.len == 0 && g->running < g->concurrency) {
		/* A free slot and nobody ahead: the common case, one lock. */
		g->running++;
		g->submitted++;
		baton__spin_unlock(&g->lock);
	} else if (timeout_ns == 0 || g->passers.len >= g->limit) {
		g->rejected++;
		baton__spin_unlock(&g->lock);
		return BATON_EAGAIN;
	} else {
		rc = wait_for_slot(g, t, p, timeout_ns);
		if (rc != BATON_OK)
			return rc;
		/* p->t0 is now the admission time; the deadline stays t0's. */
	}
	if (g->nneeds > 0 && (rc = take_needs(g, t0, timeout_ns)) != BATON_OK) {
		give_back(g, baton__clock_now(), p->t0, false);
		return rc;
	}
	p->gate = g;
	return BATON_OK;
}

int baton_gate_leave(struct baton_gate_pass *p, int64_t *end_ns)
{
	struct baton_gate *g;
	int64_t end;

	if (p == NULL || p->gate == NULL)
		return BATON_EINVAL;
	g = p->gate;
	p->gate = NULL;
	end = baton__clock_now();
	if (g->nneeds > 0) {
		baton__needs_release(g->needs, g->nneeds, false);
		if (g->keeps)
			p->kept.gate = g; /* the KEEP units travel on in the pass */
	}
	give_back(g, end, p->t0, true);
	if (end_ns != NULL)
		*end_ns = end;
	return BATON_OK;
}

int baton_gate_close(baton_gate_t *g)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	size_t n;

	if (g == NULL)
		return BATON_EINVAL;
	baton__spin_lock(&g->lock);
	if (g->closed) {
		baton__spin_unlock(&g->lock);
		return BATON_ESHUTDOWN;
	}
	g->closed = true;
	/* Tasks waiting to pass through have not started their step. */
	n = baton__waitq_wake_all(&g->passers, &wl, BATON_ESHUTDOWN);
	g->submitted -= n;
	g->rejected += n;
	wake_drainers(g, &wl);
	baton__spin_unlock(&g->lock);
	baton__wakelist_run(&wl);
	return BATON_OK;
}

int baton_gate_drain(baton_gate_t *g, int64_t timeout_ns)
{
	struct baton_task *t;
	int rc;

	if (g == NULL)
		return BATON_EINVAL;
	if ((rc = baton__task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	baton__spin_lock(&g->lock);
	if (idle(g)) {
		baton__spin_unlock(&g->lock);
		return BATON_OK;
	}
	if (timeout_ns == 0) {
		baton__spin_unlock(&g->lock);
		return BATON_EAGAIN;
	}
	return baton__wait_one(t, &g->drainers, &g->lock, timeout_ns);
}

int baton_gate_set_concurrency(baton_gate_t *g, unsigned n)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;

	if (g == NULL || n == 0)
		return BATON_EINVAL;
	baton__spin_lock(&g->lock);
	g->concurrency = n;
	admit(g, baton__clock_now(), &wl);
	baton__spin_unlock(&g->lock);
	baton__wakelist_run(&wl);
	return BATON_OK;
}

int baton_gate_set_queue_limit(baton_gate_t *g, size_t n)
{
	if (g == NULL || n == 0 || n > g->cap)
		return BATON_EINVAL;
	baton__spin_lock(&g->lock);
	g->limit = n; /* read by enter: the tasks waiting stay */
	baton__spin_unlock(&g->lock);
	return BATON_OK;
}

int baton_gate_snapshot(baton_gate_t *g, struct baton_stage_stats *out)
{
	if (g == NULL || out == NULL)
		return BATON_EINVAL;
	baton__spin_lock(&g->lock);
	*out = (struct baton_stage_stats){
		.name = g->name,
		.queued = g->passers.len,
		.queue_limit = g->limit,
		.running = g->running,
		.concurrency = g->concurrency,
		.closed = g->closed,
		.submitted = g->submitted,
		.rejected = g->rejected,
		.completed = g->completed,
		.handler_ns = g->handler_ns,
		.wait_ns = g->wait_ns,
	};
	baton__spin_unlock(&g->lock);
	return BATON_OK;
}

int baton_gate_destroy(baton_gate_t *g)
{
	bool busy;

	if (g == NULL)
		return BATON_OK;
	baton__spin_lock(&g->lock);
	/* Waiters that timed out too: they take the lock to unlink. */
	busy = !idle(g) || !baton__waitq_empty(&g->passers) || !baton__waitq_empty(&g->drainers);
	baton__spin_unlock(&g->lock);
	if (busy)
		return BATON_EBUSY;
	baton__needs_use(g->needs, g->nneeds, -1);
	baton__free(g);
	return BATON_OK;
}

/* --- kept units ------------------------------------------------------------- */

int baton_stage_kept_release(struct baton_stage_kept *k)
{
	if (k == NULL)
		return BATON_EINVAL;
	if (k->gate != NULL) {
		baton__needs_release(k->gate->needs, k->gate->nneeds, true);
		k->gate = NULL; /* exactly once */
	}
	return BATON_OK;
}
