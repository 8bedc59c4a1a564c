/* SPDX-License-Identifier: MIT */
/*
 * Select: complete the first of several channel operations.
 *
 * 1. Lock every distinct channel, in address order (so two selects over the
 *    same channels cannot deadlock).
 * 2. Try each operation's non-blocking step, starting at a random case so
 *    that a case always ready cannot starve the others.
 * 3. If none can proceed, link one waiter per case and park; the locks are
 *    released after the switch. The first partner to claim the task
 *    completes its case; the task unlinks the other waiters when it runs.
 */
#include <stdlib.h>

#include "chan_internal.h"

static int ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

/* The distinct channels of ops, sorted; returns how many. */
static size_t lock_order(const struct baton_chan_op *ops, size_t n,
			 struct baton_chan **out)
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

static int validate(const struct baton_chan_op *ops, size_t n, size_t *index)
{
	if (ops == NULL || index == NULL || n == 0 || n > BATON_CHAN_SELECT_MAX)
		return BATON_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (ops[i].chan == NULL ||
		    (ops[i].dir != BATON_CHAN_SEND && ops[i].dir != BATON_CHAN_RECV))
			return BATON_EINVAL;
	return BATON_OK;
}

static void unlock_all(struct baton_chan **chans, size_t m)
{
	for (size_t i = m; i-- > 0;)
		baton__spin_unlock(&chans[i]->lock);
}

/* One pass of non-blocking steps, from a random start. Returns the case
 * that completed, or n. */
static size_t try_all(struct baton_chan_op *ops, size_t n,
		      struct baton_wakelist *wl)
{
	size_t start = next_random() % n;

	for (size_t k = 0; k < n; k++) {
		size_t i = (start + k) % n;
		struct baton_chan_op *op = &ops[i];
		void *v = NULL;
		int rc;

		if (op->dir == BATON_CHAN_SEND)
			rc = baton__chan_try_send_locked(op->chan, op->value, wl);
		else
			rc = baton__chan_try_recv_locked(op->chan, &v, wl);
		if (rc == BATON_CHAN_BLOCK)
			continue;
		op->result = rc;
		if (op->dir == BATON_CHAN_RECV && rc == BATON_OK)
			op->value = v;
		return i;
	}
	return n;
}

int baton_chan_select(struct baton_chan_op *ops, size_t n, int64_t timeout_ns,
		      size_t *index)
{
	struct baton_chan *chans[BATON_CHAN_SELECT_MAX];
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_task *t;
	size_t m, done;
	int rc;

	rc = validate(ops, n, index);
	if (rc != BATON_OK)
		return rc;
	if ((rc = baton__task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	m = lock_order(ops, n, chans);
	/* Lock each in order, its bias settled first: SHARED, a candidate's
	 * or our worker's (whose thread may take `lock` too), so that `lock`
	 * alone excludes everybody else. */
	for (size_t i = 0; i < m; i++)
		baton__chan_lock_spin(chans[i], baton__worker_get());
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
	for (size_t i = 0; i < n; i++) {
		struct baton_chan *ch = ops[i].chan;
		struct baton_waiter *w = baton__wait_add(
			t, ops[i].dir == BATON_CHAN_SEND ? &ch->sendq : &ch->recvq,
			&ch->lock);

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
