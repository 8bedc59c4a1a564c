/*
 * Calling a stage: submit an item and wait for its handler to return, and
 * the kept units that travel with an item to where it finishes.
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
 *     the item, and the record is freed there.
 */
#include "../common/alloc.h"
#include "stage_internal.h"

void baton__stage_release_kept(struct baton_stage *st)
{
	for (size_t i = st->nneeds; i-- > 0;)
		if (st->needs[i].flags & BATON_STAGE_KEEP)
			baton_pool_release(st->needs[i].pool, st->needs[i].units);
}

int baton_stage_kept_release(struct baton_stage_kept *k)
{
	if (k == NULL)
		return BATON_EINVAL;
	if (k->stage != NULL) {
		baton__stage_release_kept(k->stage);
		k->stage = NULL; /* exactly once */
	}
	return BATON_OK;
}

bool baton__stage_call_begin(struct stage_call *c)
{
	bool left;

	baton__spin_lock(&c->lock);
	left = (c->state & STAGE_CALL_LEFT) != 0;
	baton__spin_unlock(&c->lock);
	return !left;
}

void baton__stage_call_end(struct stage_call *c, int result)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_waiter *w;

	if (c->kept != NULL) { /* before the caller hears of the end */
		baton__stage_release_kept(c->kept);
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

/* The caller, its item queued: wait for the end until c->deadline. */
static int wait_result(struct baton_task *t, struct stage_call *rec, int64_t deadline)
{
	int rc = BATON_OK;

	baton__spin_lock(&rec->lock);
	if (!(rec->state & STAGE_CALL_DONE)) {
		int64_t left = time_left(deadline);

		if (left == 0) {
			rc = BATON_ETIMEDOUT;
		} else {
			rc = baton__wait_one(t, &rec->caller, &rec->lock, 0, NULL, NULL, left);
			/* Not woken by the end (timeout, cancel, no timer): we
			 * left the queue; the end may have come meanwhile. */
			baton__spin_lock(&rec->lock);
		}
	}
	if (rec->state & STAGE_CALL_DONE) {
		rc = rec->result;
		baton__spin_unlock(&rec->lock);
		baton__free(rec);
		return rc;
	}
	rec->state |= STAGE_CALL_LEFT; /* the item is the stage's now */
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
	if (st == NULL || st->fn == NULL)
		return BATON_EINVAL;
	/* It always waits for the handler: only a task can call. */
	if ((rc = baton__task_for_wait(&t, -1)) != BATON_OK)
		return rc;
	rec = baton__calloc(1, sizeof(*rec));
	if (rec == NULL)
		return BATON_ENOMEM;
	rec->item = c->item;
	rec->abandon = c->abandon;
	rec->kept = c->kept.stage;
	rc = baton__stage_queue(st, t, c->item, rec, timeout_ns);
	if (rc != BATON_OK) { /* refused: the item and its units stay ours */
		baton__free(rec);
		return rc;
	}
	c->kept.stage = NULL; /* handed on with the item */
	c->queued = 1;
	return wait_result(t, rec, c->deadline);
}
