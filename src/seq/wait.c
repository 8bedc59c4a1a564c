/* SPDX-License-Identifier: MIT */
/*
 * Waiting for a taken sequencer (see seq.c and docs/seq.md): claim a slot,
 * publish the request, spin / yield / sleep until a holder served it, the
 * lock was handed to us or we could take it; the nested and the deadlock
 * cases.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>

#include "seq_internal.h"

/* Spreads the threads' first slot choice; orders nothing. */
static unsigned seq_next_hint;

static struct seq_slot *claim_slot(struct baton_seq *s)
{
	struct seq_thread *me = baton__seq_self_get();

	if (!me->hinted) {
		/* relaxed: only spreads threads over slots */
		me->hint = __atomic_fetch_add(&seq_next_hint, 1, __ATOMIC_RELAXED) % SEQ_SLOTS;
		me->hinted = true;
	}
	for (unsigned j = 0; j < SEQ_SLOTS; j++) {
		unsigned i = (me->hint + j) % SEQ_SLOTS;
		struct seq_slot *sl = &s->slots[i];
		unsigned zero = 0;
		unsigned hwm;

		/* relaxed peek, then acquire CAS: pairs with the previous
		 * owner's release of the slot, so its last use is over */
		if (__atomic_load_n(&sl->owner, __ATOMIC_RELAXED) != 0 ||
		    !__atomic_compare_exchange_n(&sl->owner, &zero, 1, false, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		me->hint = i;
		/* relaxed load, release CAS: holders that see the new hwm
		 * (acquire) see the slot as we leave it */
		hwm = __atomic_load_n(&s->hwm, __ATOMIC_RELAXED);
		while (hwm <= i &&
		       !__atomic_compare_exchange_n(&s->hwm, &hwm, i + 1, true, __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED))
			;
		return sl;
	}
	return NULL;
}

static void release_slot(struct seq_slot *sl)
{
	/* release: our last reads of the slot happen before its next owner's
	 * acquire CAS */
	__atomic_store_n(&sl->owner, 0, __ATOMIC_RELEASE);
}

/* Is there a cycle: we wait for s, whose holder waits for ..., held by us? */
static bool would_deadlock(struct baton_seq *s)
{
	struct seq_thread *me = baton__seq_self_get();

	/* seq_cst store then seq_cst loads: of two threads closing a cycle
	 * at the same time, at least one sees the other's waiting_for */
	__atomic_store_n(&me->waiting_for, s, __ATOMIC_SEQ_CST);
	for (int depth = 0; s != NULL && depth < SEQ_CHAIN; depth++) {
		struct seq_thread *h = __atomic_load_n(&s->holder, __ATOMIC_SEQ_CST);

		if (h == me)
			return true;
		if (h == NULL)
			return false;
		s = __atomic_load_n(&h->waiting_for, __ATOMIC_SEQ_CST);
	}
	return false;
}

/* Give up with BATON_EDEADLK (the library prints nothing; the comment at
 * each call says which case it is). */
static int deadlock(void)
{
	/* relaxed: our own variable; nobody needs to see this in order */
	__atomic_store_n(&baton__seq_self_get()->waiting_for, NULL, __ATOMIC_RELAXED);
	return BATON_EDEADLK;
}

/* Let others run: the worker's other tasks if we are a task, else the
 * CPU's other threads. */
static void yield_cpu(struct baton_task *self)
{
	if (self == NULL || baton_sched_yield() != BATON_OK)
		sched_yield();
}

/* Park the task `self` until baton__seq_slot_wake(sl), unless the version moved
 * past v: the check under park_lock pairs with the wake's increment before
 * it takes the lock (see baton__seq_slot_wake). */
static void park(struct baton_seq *s, struct seq_slot *sl, uint32_t v, struct baton_task *self)
{
	baton__spin_lock(&sl->park_lock);
	if (baton_ec_value(&sl->ec) != v) {
		baton__spin_unlock(&sl->park_lock);
		return;
	}
	/* relaxed: only a count */
	__atomic_fetch_add(&s->parks, 1, __ATOMIC_RELAXED);
	/* No timeout: no timer to allocate, so the result is BATON_OK; the
	 * wait releases park_lock once the task is off its stack. */
	baton__wait_one(self, &sl->parked, &sl->park_lock, -1);
}

/* Wait until our request in `sl` was served, or we hold the lock. A task
 * that holds no sequencer parks on its scheduler instead of sleeping, so
 * its worker runs other tasks meanwhile; inside a sequenced call (check)
 * the caller is on a dedicated stack and cannot park, so it sleeps. */
static enum wait_outcome wait_slot(struct baton_seq *s, struct seq_slot *sl, bool check)
{
	struct baton_task *self = check ? NULL : baton__task_self();

	/* A waiter that can be served keeps off the lock line most of the
	 * time, so that the holder's lock and unlock stay local to its core;
	 * one that cannot (K = 0, or LOCKONLY) watches the lock all along.
	 * relaxed: K is a tuning knob */
	unsigned every = !check && __atomic_load_n(&s->batch, __ATOMIC_RELAXED) > 0 ? SEQ_LOCK_EVERY
										    : 1;

	for (unsigned n = 0;; n++) {
		unsigned st;
		uint32_t v;

		/* acquire: pairs with the server's release of IDLE (the
		 * result is ours to read) or the releaser's of GRANTED (its
		 * run happens before ours) */
		st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		if (st == SLOT_IDLE)
			return WAIT_SERVED;
		if (st == SLOT_GRANTED) {
			became_holder(s, baton__seq_self_get());
			return WAIT_LOCKED;
		}
		/* relaxed peek before the CAS, to keep the line shared */
		if (n % every == every - 1 && __atomic_load_n(&s->lock, __ATOMIC_RELAXED) == 0 &&
		    try_lock(s, baton__seq_self_get()))
			return WAIT_LOCKED;
		if (check && would_deadlock(s))
			return WAIT_DEADLOCK;
		if (n < SEQ_SPIN) {
			if (n == 0)
				/* relaxed: a hint for unlock's hand-off choice */
				__atomic_store_n(&sl->hot, 1, __ATOMIC_RELAXED);
			baton__cpu_relax();
			continue;
		}
		if (n == SEQ_SPIN)
			/* relaxed: as above */
			__atomic_store_n(&sl->hot, 0, __ATOMIC_RELAXED);
		if (n < SEQ_SPIN + SEQ_YIELDS) {
			yield_cpu(self);
			continue;
		}
		/* relaxed RMW + heavy fence: our half of the Dekker pair with
		 * the release (seq.c); the loads below cannot pass the fence */
		__atomic_fetch_add(&s->sleepers, 1, __ATOMIC_RELAXED);
		baton__seq_fence_heavy();
		v = baton_ec_value(&sl->ec);
		/* acquire: as above. relaxed lock load: the fence orders it;
		 * if it is still held, its holder will see us in sleepers */
		st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		if (waiting(st) && __atomic_load_n(&s->lock, __ATOMIC_RELAXED) != 0) {
			if (self != NULL) {
				park(s, sl, v, self);
			} else {
				/* relaxed: only a count */
				__atomic_fetch_add(&s->sleeps, 1, __ATOMIC_RELAXED);
				/* with a lock held we re-check for cycles now and then */
				baton_ec_wait_mp(&sl->ec, v, check ? 1000000 : -1);
			}
		}
		/* relaxed: only a count; the loop re-reads state and lock */
		__atomic_fetch_sub(&s->sleepers, 1, __ATOMIC_RELAXED);
		n = 0;
	}
}

/* The lock is taken: publish, wait, and get served or take the lock. */
int baton__seq_call_slow(struct baton_seq *s, baton_seq_fn fn, void *arg, void **result)
{
	struct seq_req r = { fn, arg, NULL };
	bool check = baton__seq_self_get()->held > 0;
	struct seq_slot *sl;
	enum wait_outcome out;

	if (baton_coro_self() == s->co) {
		/* nested: we are the holder, on the stack; run it directly */
		r.result = fn(arg);
		goto done;
	}
	/* relaxed: if it is us, we wrote it ourselves (and only a thread
	 * that holds some lock can be its holder: keep off the lock line) */
	if (check && __atomic_load_n(&s->holder, __ATOMIC_RELAXED) == baton__seq_self_get())
		/* called off the dedicated stack by the thread that holds it
		 * (from a coroutine resumed inside a sequenced call) */
		return deadlock();
	while ((sl = claim_slot(s)) == NULL) {
		/* more waiters than slots: wait for the lock without one */
		if (try_lock(s, baton__seq_self_get())) {
			baton__seq_run_locked(s, &r);
			goto done;
		}
		if (check && would_deadlock(s))
			return deadlock(); /* a cycle of sequencers waiting for each other */
		yield_cpu(check ? NULL : baton__task_self());
	}
	sl->req.fn = fn;
	sl->req.arg = arg;
	/* release: fn and arg are visible to a holder that sees PENDING */
	__atomic_store_n(&sl->state, check ? SLOT_LOCKONLY : SLOT_PENDING, __ATOMIC_RELEASE);
	out = wait_slot(s, sl, check);
	/* relaxed: as in wait_slot */
	__atomic_store_n(&sl->hot, 0, __ATOMIC_RELAXED);
	/* next time, publish at once if combining served us this time */
	baton__seq_self_get()->contended = out == WAIT_SERVED ? s : NULL;
	if (out == WAIT_LOCKED) {
		/* acquire: as in wait_slot; under the lock nobody else can
		 * serve the slot now, so IDLE means a previous holder did */
		if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != SLOT_IDLE) {
			/* relaxed: we hold the lock; no holder scans now */
			__atomic_store_n(&sl->state, SLOT_IDLE, __ATOMIC_RELAXED);
			baton__seq_run_locked(s, &r);
		} else {
			r.result = sl->req.result;
			baton__seq_unlock(s);
		}
	} else if (out == WAIT_SERVED) {
		r.result = sl->req.result;
	} else {
		unsigned st = SLOT_LOCKONLY;

		/* relaxed: withdraw; it fails only if a releaser granted us
		 * the lock meanwhile (acquire then: its run before ours), and
		 * then there is no deadlock any more: run as a holder */
		if (!__atomic_compare_exchange_n(&sl->state, &st, SLOT_IDLE, false,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			became_holder(s, baton__seq_self_get());
			__atomic_store_n(&sl->state, SLOT_IDLE, __ATOMIC_RELAXED);
			baton__seq_run_locked(s, &r);
			goto out;
		}
		release_slot(sl);
		return deadlock(); /* a cycle of sequencers waiting for each other */
	}
out:
	release_slot(sl);
	if (check)
		/* relaxed: our own variable, re-set before every check */
		__atomic_store_n(&baton__seq_self_get()->waiting_for, NULL, __ATOMIC_RELAXED);
done:
	if (result)
		*result = r.result;
	return BATON_OK;
}
