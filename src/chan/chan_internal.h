/* SPDX-License-Identifier: MIT */
/*
 * src/chan/chan_internal.h - the channel structure and the two non-blocking
 * steps that send, receive and select share. Both run with ch->lock held.
 *
 * Invariant (under the lock): a channel never has both a buffered message
 * and a waiting receiver, nor both free buffer space and a waiting sender.
 */
#ifndef BATON_SRC_CHAN_INTERNAL_H
#define BATON_SRC_CHAN_INTERNAL_H

#include <baton/chan.h>

#include "../common/barrier.h"
#include "../common/slab.h"
#include "../sched/wait.h"

/*
 * Biased locking. A channel whose users all run on one worker - the ring's
 * channels, a pipeline's step on its worker - needs no atomic
 * read-modify-write: once one worker W has used it alone for a while, W's
 * thread takes `own` with a plain store, then checks that the bias still
 * holds (a compiler barrier between the two). Everybody else takes `lock`,
 * the spinlock:
 *
 *   UNSET --first use--> CANDIDATE(W) --W's BATON_CHAN_BIAS_AFTER-th use--> W
 *   CANDIDATE(W) --a use by anyone else--> SHARED
 *   W --first use elsewhere--> REVOKING --W's `own` seen free--> SHARED
 *
 * While UNSET or a candidate, the channel is used under `lock` and the
 * state changes under it, for free: a channel that several workers use
 * from the start (a pipeline's, a channel that tasks migrating at start-up
 * pass around) never costs more than the spinlock. Once biased, the first
 * use from elsewhere revokes the bias for good: the revoker stores
 * REVOKING, runs the asymmetric barrier (barrier.h) on every thread of the
 * process and waits for `own` to read 0. After the barrier, W either sees
 * REVOKING on its check (and backs out to the slow path) or its store of
 * own = 1 is visible, so the revoker waits for the operation to end; its
 * release of `own` hands the channel's state over. tests/model/chan_bias.pml
 * checks this with Spin (TSO with W's store buffer), and that leaving out
 * the barrier or W's re-check breaks it.
 *
 * Invariant: while the bias is W, only W's thread touches the channel,
 * under `own` or `lock` (which it may also take: select, unlinking after a
 * timeout); in every other state everybody takes `lock`, and one who saw
 * an unbiased state re-checks it once it holds `lock` (W may have been
 * promoted meanwhile). A parked waiter keeps `own` (or `lock`) until its
 * worker has switched away, as with the spinlock alone. Where the barrier
 * is unavailable (and in ThreadSanitizer builds) every channel starts
 * SHARED.
 *
 * W is a worker, which runs on one thread at a time; its pointer can be
 * reused only after its scheduler was destroyed and its threads joined.
 * Workers are cache-line aligned: the low bits of `bias` say which state.
 */
#define BATON_CHAN_UNSET ((uintptr_t)1)
#define BATON_CHAN_REVOKING ((uintptr_t)2)
#define BATON_CHAN_SHARED ((uintptr_t)3)
#define BATON_CHAN_CANDIDATE ((uintptr_t)4) /* or'ed into a worker's address */
#define BATON_CHAN_BIAS_AFTER 64

/* What a hop touches (the locks, the bias, both wait queues, the
 * length and the closed flag) fits in the first cache line; channels are
 * slots of a slab pool (src/common/slab.h), cache-line aligned, so two
 * channels never share a line and each costs its 128 bytes. */
struct baton_chan {
	baton_spinlock_t lock; /* all but W's own uses (see above) */
	baton_spinlock_t own;  /* the bias worker's: plain stores */
	uintptr_t bias;        /* BATON_CHAN_* or the worker (atomic) */
	unsigned bias_uses;    /* a candidate's uses so far (lock) */
	bool closed;
	bool single; /* baton_chan_create_single (immutable) */
	size_t len;  /* messages in buf */
	struct baton_waitq sendq, recvq;
	size_t cap, head; /* ring buffer of cap messages */
	void **buf;
	/* A single-receiver channel's owner: the one task that may receive,
	 * bound by its first receive (under the lock), never changed; and
	 * its coroutine, which the owner's receive compares with the running
	 * one before it reads anything of the task (atomic: read unlocked). */
	struct baton_task *owner;
	baton_coro_t *owner_co;
	struct baton_slab *slab; /* the block its slot is in */
} __attribute__((aligned(BATON_CACHELINE)));

/* Two lines, filled: a field more would cost a third. */
_Static_assert(sizeof(struct baton_chan) == 2 * BATON_CACHELINE, "a channel is two lines");

/* Under the lock: may task t (NULL: not a task's own coroutine) receive
 * from ch? A single-receiver channel is bound to its first receiver here.
 * BATON_OK or BATON_ENOTOWNER. */
static inline int baton__chan_owner_check(struct baton_chan *ch, struct baton_task *t)
{
	if (BATON_LIKELY(!ch->single))
		return BATON_OK;
	if (t == NULL)
		return BATON_ENOTOWNER;
	if (ch->owner == NULL) {
		ch->owner = t;
		/* Relaxed: only the owner's own receive acts on a match, and
		 * it is the thread that stores it here. */
		__atomic_store_n(&ch->owner_co, t->co, __ATOMIC_RELAXED);
	}
	return ch->owner == t ? BATON_OK : BATON_ENOTOWNER;
}

/* For tests: 0 unset, 1 biased to a worker, 2 being revoked, 3 shared,
 * 4 a worker's candidate. */
int baton__chan_bias_state(const struct baton_chan *ch);

baton_spinlock_t *baton__chan_lock_slow(struct baton_chan *ch, struct baton_worker *self);
/* Take ch->lock for a select by the thread of worker `self` (or none),
 * with the bias settled so that `lock` excludes everybody else. */
void baton__chan_lock_spin(struct baton_chan *ch, struct baton_worker *self);

/* The bias worker's lock: no atomic read-modify-write, no fence. Returns
 * NULL when the bias moved meanwhile (nothing is held then). */
static inline baton_spinlock_t *baton__chan_lock_biased(struct baton_chan *ch, uintptr_t b)
{
	/* Relaxed: a revoker reads it only after its heavy barrier. */
	__atomic_store_n(&ch->own.locked, 1, __ATOMIC_RELAXED);
	baton__barrier_light();
	/* Relaxed: the revoker's heavy barrier orders its store of
	 * REVOKING before this load, or our store above before its
	 * load of own (barrier.h). */
	if (BATON_LIKELY(__atomic_load_n(&ch->bias, __ATOMIC_RELAXED) == b))
		return &ch->own;
	/* Release: as every release of own (nothing was done). */
	__atomic_store_n(&ch->own.locked, 0, __ATOMIC_RELEASE);
	return NULL;
}

/* Lock ch for the calling thread, whose worker is `self` (NULL off any
 * worker); returns the lock taken, to be released with baton__spin_unlock
 * (or after a park). The bias worker's case is inline: no atomic
 * read-modify-write, no fence. */
static inline baton_spinlock_t *baton__chan_lock(struct baton_chan *ch, struct baton_worker *self)
{
	/* Acquire: a SHARED bias brings what its revoker took over; a bias of
	 * self was stored by this thread. */
	uintptr_t b = __atomic_load_n(&ch->bias, __ATOMIC_ACQUIRE);
	baton_spinlock_t *held;

	if (BATON_LIKELY(b == (uintptr_t)self)) {
		if (BATON_LIKELY((held = baton__chan_lock_biased(ch, b)) != NULL))
			return held;
	} else if (BATON_LIKELY(b == BATON_CHAN_SHARED)) {
		baton__spin_lock(&ch->lock); /* SHARED is for good: no re-check */
		return &ch->lock;
	}
	return baton__chan_lock_slow(ch, self);
}

/* baton__chan_lock's cases that make no call: the bias worker's lock, or
 * the shared lock if it is free at the first try. NULL when the caller must
 * take the general path (nothing is held then). */
static inline baton_spinlock_t *baton__chan_lock_try(struct baton_chan *ch,
						     struct baton_worker *self)
{
	/* Acquire: as in baton__chan_lock. */
	uintptr_t b = __atomic_load_n(&ch->bias, __ATOMIC_ACQUIRE);

	if (BATON_LIKELY(b == (uintptr_t)self))
		return baton__chan_lock_biased(ch, b);
	/* Acquire: as in baton__spin_lock (the critical section after it). */
	if (b == BATON_CHAN_SHARED && !__atomic_exchange_n(&ch->lock.locked, 1, __ATOMIC_ACQUIRE))
		return &ch->lock;
	return NULL;
}

/* Before a task of worker `self` parks through baton__wait_park (a select,
 * a timed or cancellable wait) with a waiter in ch, ch's lock held: if ch
 * is biased to self, or self's candidate (which only self can promote),
 * keep the task on self until its waiters are unlinked. Its cleanup (step
 * 4 of wait.h) takes the raw `lock`, which only self's thread may do on a
 * channel biased to self: self's tasks hold `own` instead, and a task that
 * followed its waker to worker V would edit the wait queues alongside
 * them. Every other state is settled (SHARED) or becomes SHARED at
 * anybody else's use, under `lock`, which then excludes everybody. */
static inline void baton__chan_pin_waiter(struct baton_chan *ch, struct baton_worker *self,
					  struct baton_task *t)
{
	/* Relaxed: under `lock` or `own`; only self's thread stores self or
	 * self's candidate, and only self can turn the candidate into self. */
	uintptr_t b = __atomic_load_n(&ch->bias, __ATOMIC_RELAXED);

	if (self && (b == (uintptr_t)self || b == ((uintptr_t)self | BATON_CHAN_CANDIDATE)))
		t->wait_timed = true; /* wait.c: not moved before step 4 */
}

/* Outcome of one non-blocking step. */
enum {
	BATON_CHAN_BLOCK = 1, /* would block: nothing happened */
};

/* Claimed partners are added to `wl`: ready them after unlocking. */
int baton__chan_try_send_locked(struct baton_chan *ch, void *value, struct baton_wakelist *wl);
int baton__chan_try_recv_locked(struct baton_chan *ch, void **value, struct baton_wakelist *wl);

#endif /* BATON_SRC_CHAN_INTERNAL_H */
