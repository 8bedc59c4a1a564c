/* SPDX-License-Identifier: MIT */
/*
 * Select: complete the first of several channel operations.
 *
 * 1. Try one case, picked at random, with its channel locked alone. When
 *    every case of a busy select is ready most of the time (its channels'
 *    buffers seldom empty), most selects end here, having held one lock.
 *    (Not with a receive case on a single-receiver channel: its owner is
 *    checked in step 2, before any case is tried.)
 * 2. Otherwise lock every distinct channel, in address order (so two
 *    selects over the same channels cannot deadlock), and try each case,
 *    starting at a random one so that a case always ready cannot starve
 *    the others.
 * 3. If none can proceed, link one waiter per case and park; the locks are
 *    released after the switch. The first partner to claim the task
 *    completes its case; the task unlinks the other waiters when it runs.
 *
 * Why step 1: when every select locked all its channels, it held them
 * while it waited for the next one's lock, and the tasks of the other
 * workers sending on any of them waited for it in turn, so that on two
 * busy workers most of a select was spent in locks and the time a run took
 * depended on how often the two workers met there. In the select suite
 * (docs/select.md: 8 producers filling 4 buffered channels, 2 consumers
 * selecting over all 4, 2 workers), 40 runs alternated with and without
 * step 1 took a contended lock 24,700 times against 145,000 at the median
 * and ran at 8.2 M messages per second against 3.8 M.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "chan_internal.h"

static int ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;

	return x < y ? -1 : x > y;
}

/* The distinct channels of ops, sorted; returns how many. */
static size_t lock_order(const struct baton_chan_op *ops, size_t n, struct baton_chan **out)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		out[i] = ops[i].chan;
	qsort(out, n, sizeof(*out), ptr_cmp);
	for (size_t i = 0; i < n; i++)
		if (m == 0 || out[m - 1] != out[i])
			out[m++] = out[i];
	return m;
}

static unsigned next_random(void)
{
	static __thread uint32_t state;

	if (state == 0)
		state = (uint32_t)(uintptr_t)&state | 1u;
	state ^= state << 13; /* xorshift32 */
	state ^= state >> 17;
	state ^= state << 5;
	return state;
}

/* BATON_EINVAL for bad arguments. *needs_owner is set when a case
 * receives from a single-receiver channel (`single` is fixed at creation:
 * read unlocked), whose owner check needs every channel locked (step 2). */
static int validate(const struct baton_chan_op *ops, size_t n, size_t *index, bool *needs_owner)
{
	if (ops == NULL || index == NULL || n == 0 || n > BATON_CHAN_SELECT_MAX)
		return BATON_EINVAL;
	*needs_owner = false;
	for (size_t i = 0; i < n; i++) {
		if (ops[i].chan == NULL ||
		    (ops[i].dir != BATON_CHAN_SEND && ops[i].dir != BATON_CHAN_RECV))
			return BATON_EINVAL;
		*needs_owner |= ops[i].dir == BATON_CHAN_RECV && ops[i].chan->single;
	}
	return BATON_OK;
}

static void unlock_all(struct baton_chan **chans, size_t m)
{
	for (size_t i = m; i-- > 0;)
		baton__spin_unlock(&chans[i]->lock);
}

/* Case i's non-blocking step, its channel locked by the caller: BATON_OK
 * or BATON_ECLOSED in ops[i] (and the message received), or
 * BATON_CHAN_BLOCK. */
static int try_one(struct baton_chan_op *op, struct baton_wakelist *wl)
{
	void *v = NULL;
	int rc;

	if (op->dir == BATON_CHAN_SEND)
		rc = baton__chan_try_send_locked(op->chan, op->value, wl);
	else
		rc = baton__chan_try_recv_locked(op->chan, &v, wl);
	if (rc == BATON_CHAN_BLOCK)
		return rc;
	op->result = rc;
	if (op->dir == BATON_CHAN_RECV && rc == BATON_OK)
		op->value = v;
	return rc;
}

/* One pass of non-blocking steps from a random start, every channel
 * already locked (step 2). Returns the case that completed, or n. */
static size_t try_all(struct baton_chan_op *ops, size_t n, struct baton_wakelist *wl)
{
	size_t start = next_random() % n;

	for (size_t k = 0; k < n; k++) {
		size_t i = (start + k) % n;

		if (try_one(&ops[i], wl) != BATON_CHAN_BLOCK)
			return i;
	}
	return n;
}

/* Step 1: one case picked at random, its channel locked alone (its bias
 * settled as for step 2, so that a select biases no channel). Returns the
 * case if it completed, or n. */
static size_t try_first(struct baton_chan_op *ops, size_t n, struct baton_worker *self)
{
	size_t i = next_random() % n;
	struct baton_chan *ch = ops[i].chan;
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	int rc;

	baton__chan_lock_spin(ch, self);
	rc = try_one(&ops[i], &wl);
	baton__spin_unlock(&ch->lock);
	if (rc == BATON_CHAN_BLOCK)
		return n;
	baton__wakelist_run(&wl);
	return i;
}

int baton_chan_select(struct baton_chan_op *ops, size_t n, int64_t timeout_ns, size_t *index)
{
	struct baton_chan *chans[BATON_CHAN_SELECT_MAX];
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_worker *self;
	struct baton_task *t;
	size_t m, done;
	bool needs_owner;
	int rc;

	rc = validate(ops, n, index, &needs_owner);
	if (rc != BATON_OK)
		return rc;
	if ((rc = baton__task_for_wait_on(&t, &self, timeout_ns)) != BATON_OK)
		return rc;
	/* Step 1, unless a receive case needs its owner checked: a select
	 * with another task's receive case does nothing at all. */
	if (!needs_owner && (done = try_first(ops, n, self)) < n) {
		*index = done;
		return BATON_OK;
	}
	m = lock_order(ops, n, chans);
	/* Lock each in order, its bias settled first: SHARED, a candidate's
	 * or our worker's (whose thread may take `lock` too), so that `lock`
	 * alone excludes everybody else. */
	for (size_t i = 0; i < m; i++)
		baton__chan_lock_spin(chans[i], self);
	/* A single-receiver channel's receive is its owner's case only. */
	for (size_t i = 0; i < n; i++)
		if (ops[i].dir == BATON_CHAN_RECV &&
		    (rc = baton__chan_owner_check(ops[i].chan, t)) != BATON_OK) {
			unlock_all(chans, m);
			return rc;
		}
	done = try_all(ops, n, &wl);
	if (done < n || timeout_ns == 0) {
		unlock_all(chans, m);
		baton__wakelist_run(&wl);
		if (done == n)
			return BATON_EAGAIN;
		*index = done;
		return BATON_OK;
	}
	if (baton__wait_reserve(t, (unsigned)n) != BATON_OK) {
		unlock_all(chans, m);
		return BATON_ENOMEM;
	}
	baton__wait_begin(t);
	/* Our waiters are unlinked after the park under each channel's raw
	 * `lock` (wait.c): not on another worker while one is biased to us. */
	for (size_t i = 0; i < m; i++)
		baton__chan_pin_waiter(chans[i], self, t);
	for (size_t i = 0; i < n; i++) {
		struct baton_chan *ch = ops[i].chan;
		struct baton_waiter *w = baton__wait_add(
			t, ops[i].dir == BATON_CHAN_SEND ? &ch->sendq : &ch->recvq, &ch->lock);

		w->value = ops[i].dir == BATON_CHAN_SEND ? ops[i].value : NULL;
	}
	rc = baton__wait_park(t, timeout_ns);
	if (rc == BATON_OK || rc == BATON_ECLOSED) {
		size_t i = (size_t)t->wait_index;

		ops[i].result = rc;
		if (ops[i].dir == BATON_CHAN_RECV && rc == BATON_OK)
			ops[i].value = t->waiters[i].value;
		*index = i;
		rc = BATON_OK;
	}
	baton__wait_finish(t);
	return rc;
}
