/* SPDX-License-Identifier: MIT */
/*
 * Calling a stage: submit an item and wait for its handler to return,
 * answering the handler's questions meanwhile; and the kept units (of a
 * gate, gate.c) that travel with an item to where it finishes.
 *
 * A call's record (struct stage_call) is on the heap, not in the caller's
 * frame: a copy-stack caller's stack is not addressable while it waits,
 * and a caller may leave before its item finishes (its timeout, or its
 * task cancelled). The record is shared by the caller and the stage's
 * side, its lock decides who ends it:
 *   - the item finishes (its handler returned, or it was dropped by the
 *     scheduler's destroy): the kept units go back, then DONE and the
 *     caller is woken with the result; the caller frees the record.
 *   - the caller leaves first: LEFT; the item is the stage's from then on.
 *     Its handler does not run if it had not started; where the item
 *     finishes, the kept units go back, the caller's abandon function gets
 *     the item, and the record is freed there. With
 *     BATON_STAGE_CANCEL_ABANDONED the caller cancels the handler's task
 *     as it leaves.
 *   - a question (baton_stage_ask): the handler sets ASKED and wakes the
 *     caller, which runs the question's function in its own task
 *     (SERVING), stores the answer and wakes the handler. A caller that
 *     leaves answers a waiting question with BATON_ECANCELED; it never
 *     leaves while SERVING.
 */
#include "../common/alloc.h"
#include "stage_internal.h"

bool baton__stage_call_begin(struct stage_call *c, baton_task_t *task)
{
	bool left;

	baton__spin_lock(&c->lock);
	left = (c->state & STAGE_CALL_LEFT) != 0;
	c->task = task; /* valid until the end: the runner ends it */
	baton__spin_unlock(&c->lock);
	return !left;
}

void baton__stage_call_end(struct stage_call *c, int result)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_waiter *w;

	if (c->kept != NULL) { /* before the caller hears of the end */
		baton__needs_release(c->kept->needs, c->kept->nneeds, true);
		c->kept = NULL;
	}
	baton__spin_lock(&c->lock);
	if (c->state & STAGE_CALL_LEFT) {
		baton__spin_unlock(&c->lock);
		if (c->abandon != NULL)
			c->abandon(c->item);
		baton__free(c);
		return;
	}
	c->state |= STAGE_CALL_DONE;
	c->result = result;
	w = baton__waitq_claim_first(&c->caller);
	if (w != NULL)
		baton__waiter_wake(&wl, w, BATON_OK);
	/* Last touch of c: once we unlock, the caller may free it. */
	baton__spin_unlock(&c->lock);
	baton__wakelist_run(&wl);
}

/* The time left until `deadline` (< 0: none) as a timeout; 0 once past. */
static int64_t time_left(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - baton__clock_now();
	return left > 0 ? left : 0;
}

/* The caller, lock held: leave the call (its timeout, its cancel). A
 * question still waiting gets BATON_ECANCELED; the handler is cancelled if
 * the stage asks for it. The cancel is the one wake-up made under the
 * record's lock: the handler's task stays valid only while its end waits
 * for this lock. Releases the lock. */
static void leave(struct stage_call *rec)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;

	rec->state |= STAGE_CALL_LEFT; /* the item is the stage's now */
	if (rec->state & STAGE_CALL_ASKED) {
		struct baton_waiter *w = baton__waitq_claim_first(&rec->asker);

		rec->state &= ~STAGE_CALL_ASKED;
		rec->ask_rc = BATON_ECANCELED;
		if (w != NULL)
			baton__waiter_wake(&wl, w, BATON_OK);
	}
	if (rec->task != NULL)
		(void)baton_task_cancel(rec->task);
	baton__spin_unlock(&rec->lock);
	baton__wakelist_run(&wl);
}

/* The caller, lock held: answer the handler's question in this task, then
 * wake it. Returns with the lock held. */
static void serve(struct stage_call *rec)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_waiter *w;
	int rc;

	rec->state |= STAGE_CALL_SERVING;
	baton__spin_unlock(&rec->lock);
	rc = rec->ask_fn(rec->ask_arg);
	baton__spin_lock(&rec->lock);
	rec->ask_rc = rc;
	rec->state &= ~(STAGE_CALL_ASKED | STAGE_CALL_SERVING);
	w = baton__waitq_claim_first(&rec->asker);
	if (w != NULL)
		baton__waiter_wake(&wl, w, BATON_OK);
	baton__spin_unlock(&rec->lock);
	baton__wakelist_run(&wl);
	baton__spin_lock(&rec->lock);
}

/* The caller, its item queued: answer the handler's questions and wait
 * for the end, until `deadline`. */
static int wait_result(struct baton_task *t, struct stage_call *rec, int64_t deadline)
{
	int rc = BATON_OK;

	baton__spin_lock(&rec->lock);
	for (;;) {
		int64_t left = time_left(deadline);

		if (rec->state & STAGE_CALL_DONE) {
			rc = rec->result;
			baton__spin_unlock(&rec->lock);
			baton__free(rec);
			return rc;
		}
		if (left == 0 || rc != BATON_OK) /* past the deadline: no more answers */
			break;
		if (rec->state & STAGE_CALL_ASKED) {
			serve(rec);
			continue;
		}
		rc = baton__wait_one(t, &rec->caller, &rec->lock, left);
		/* Woken by the end or a question, or not (timeout, cancel):
		 * then we left the queue; either may have come meanwhile. */
		baton__spin_lock(&rec->lock);
		if (rc == BATON_ENOMEM) { /* no timer: wait without the deadline */
			deadline = -1;
			rc = BATON_OK;
		}
	}
	if (rc == BATON_OK)
		rc = BATON_ETIMEDOUT;
	leave(rec);
	return rc;
}

int baton_stage_ask(baton_stage_t *st, void *item, int (*fn)(void *arg), void *arg)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct stage_call *rec;
	struct baton_waiter *w;
	struct baton_task *t;
	int rc;

	if (st == NULL || fn == NULL)
		return BATON_EINVAL;
	if ((rc = baton__task_for_wait(&t, -1)) != BATON_OK)
		return rc;
	/* Handed to us by our runner, alive until its handler returns, which
	 * is after we do. */
	rec = baton__stage_current_call(st, t, item);
	if (rec == NULL)
		return BATON_EINVAL;
	baton__spin_lock(&rec->lock);
	if (rec->state & (STAGE_CALL_LEFT | STAGE_CALL_ASKED)) {
		rc = rec->state & STAGE_CALL_LEFT ? BATON_ECANCELED : BATON_EBUSY;
		baton__spin_unlock(&rec->lock);
		return rc;
	}
	rec->ask_fn = fn;
	rec->ask_arg = arg;
	rec->state |= STAGE_CALL_ASKED;
	w = baton__waitq_claim_first(&rec->caller);
	if (w != NULL)
		baton__waiter_wake(&wl, w, BATON_OK);
	baton__spin_unlock(&rec->lock);
	baton__wakelist_run(&wl);
	baton__spin_lock(&rec->lock);
	while (rec->state & STAGE_CALL_ASKED) {
		if (rec->state & STAGE_CALL_SERVING) {
			/* Being answered: wait for it, even cancelled (the caller
			 * is reading what arg points to). */
			rc = baton__wait_one(t, &rec->asker, &rec->lock, -1);
			baton__spin_lock(&rec->lock);
			if (rc != BATON_OK && (rec->state & STAGE_CALL_SERVING)) {
				baton__spin_unlock(&rec->lock);
				baton_sched_yield(); /* cancelled: waits fail at once */
				baton__spin_lock(&rec->lock);
			}
			continue;
		}
		rc = baton__wait_one(t, &rec->asker, &rec->lock, -1);
		baton__spin_lock(&rec->lock);
		if (rc != BATON_OK && (rec->state & STAGE_CALL_ASKED) &&
		    !(rec->state & STAGE_CALL_SERVING)) {
			rec->state &= ~STAGE_CALL_ASKED; /* withdrawn, unanswered */
			baton__spin_unlock(&rec->lock);
			return rc;
		}
	}
	rc = rec->ask_rc;
	baton__spin_unlock(&rec->lock);
	return rc;
}

int baton_stage_call(baton_stage_t *st, struct baton_stage_call *c, int64_t timeout_ns)
{
	struct stage_call *rec;
	struct baton_task *t;
	int rc;

	if (c == NULL)
		return BATON_EINVAL;
	c->queued = 0;
	if (st == NULL || st->gate != NULL)
		return BATON_EINVAL;
	/* It always waits for the handler: only a task can call. */
	if ((rc = baton__task_for_wait(&t, -1)) != BATON_OK)
		return rc;
	rec = baton__calloc(1, sizeof(*rec));
	if (rec == NULL)
		return BATON_ENOMEM;
	rec->item = c->item;
	rec->abandon = c->abandon;
	rec->kept = c->kept.gate;
	rc = baton__stage_queue(st, t, c->item, rec, timeout_ns);
	if (rc != BATON_OK) { /* refused: the item and its units stay ours */
		baton__free(rec);
		return rc;
	}
	c->kept.gate = NULL; /* handed on with the item */
	c->queued = 1;
	return wait_result(t, rec, c->deadline);
}
