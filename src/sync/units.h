/* SPDX-License-Identifier: MIT */
/*
 * src/sync/units.h - FIFO units: a count of units handed out strictly in
 * arrival order, the one protocol behind the counting semaphore
 * (src/sync/sem.c) and the resource pool (src/stage/pool.c).
 *
 * `avail` is what may be handed out now: a semaphore's value, a pool's
 * capacity minus its use. It may go below zero (a pool shrunk below its
 * use), which is simply a state where nothing fits.
 *
 * Invariant (under the lock), apart from waiters whose timeout has already
 * claimed them: the queue is empty, or its head asks for more than `avail`.
 * Every change restores it through the grant step: a release or a larger
 * capacity serves the head while it fits, and a task whose wait failed
 * (timeout, ENOMEM) runs it after unlinking itself, since it may have been
 * the head holding the others back. An acquire takes units directly only
 * when nobody is queued, so nobody barges.
 */
#ifndef BATON_SRC_SYNC_UNITS_H
#define BATON_SRC_SYNC_UNITS_H

#include "sync_internal.h"

struct baton_units {
	baton_spinlock_t lock;
	long avail;                 /* units that may be handed out now */
	long capacity;              /* avail + units held; LONG_MAX: no bound */
	struct baton_waitq waiters; /* tasks in acquire, FIFO */
	uint64_t acquired, refused; /* counters, under lock */
};

/* `capacity` units, all free; LONG_MAX for a count with no bound. */
void baton__units_init(struct baton_units *u, long capacity);

/* Take n (>= 1) units behind earlier acquirers, waiting up to timeout_ns
 * (baton/sync.h's convention). Errors: BATON_EAGAIN (timeout 0), the
 * wait's (BATON_ETIMEDOUT, BATON_ENOMEM), BATON_ENOSCHED (outside a task
 * with a timeout). The caller validates n. */
int baton__units_acquire(struct baton_units *u, long n, int64_t timeout_ns);

/* Give back n (>= 1) units and serve the waiters that now fit. False, and
 * nothing changes, if that would free more than the capacity (a pool's
 * release beyond its use, a semaphore's overflow). */
bool baton__units_release(struct baton_units *u, long n);

/* Set the capacity (>= 0); the units held stay held. */
void baton__units_set_capacity(struct baton_units *u, long capacity);

/* Under the lock: tasks still waiting (not those whose timeout fired). */
long baton__units_waiting(const struct baton_units *u);

/* Nothing may be freed while a task waits or a timed-out waiter has not
 * unlinked itself yet (it takes the lock to do so). */
bool baton__units_has_waiters(struct baton_units *u);

#endif /* BATON_SRC_SYNC_UNITS_H */
