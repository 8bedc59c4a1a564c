/* SPDX-License-Identifier: MIT */
/*
 * Channels: send, receive, close.
 *
 * Every operation takes the channel's spinlock, tries the non-blocking step
 * (hand the message to a waiting partner, or use the buffer) and, if that
 * would block, links a waiter and parks the task; the partner that later
 * completes the operation does it on the task's behalf and wakes it (the
 * wait protocol of src/sched/wait.h). Messages waiting in a
 * waiter live in the task's heap block, never on a coroutine stack.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "chan_internal.h"

/* Every channel's memory: slots of 128 bytes, cache-line aligned, many
 * to a block (an aligned allocation of each would take 264). */
static struct baton_slab_pool chan_pool = BATON_SLAB_POOL_INIT(sizeof(struct baton_chan));

static int chan_new(baton_chan_t **out, size_t capacity, bool single)
{
	struct baton_chan *ch;
	struct baton_slab *slab;

	if (out == NULL || capacity > BATON_CHAN_MAX_CAPACITY)
		return BATON_EINVAL;
	if ((ch = baton__slab_get(&chan_pool, &slab)) == NULL)
		return BATON_ENOMEM;
	memset(ch, 0, sizeof(*ch));
	ch->slab = slab;
	if (capacity) {
		ch->buf = baton__malloc(capacity * sizeof(*ch->buf));
		if (ch->buf == NULL) {
			baton__slab_put(&chan_pool, slab, ch);
			return BATON_ENOMEM;
		}
	}
	ch->cap = capacity;
	ch->single = single;
	/* No coroutine's address: owner_recv's test fails until bound. */
	ch->owner_co = (baton_coro_t *)(uintptr_t)1;
	/* The worker that uses it alone first takes the bias (chan_internal.h),
	 * not its creator: a task often makes channels for others. */
	ch->bias = baton__barrier_available() ? BATON_CHAN_UNSET : BATON_CHAN_SHARED;
	*out = ch;
	return BATON_OK;
}

int baton_chan_create(baton_chan_t **out, size_t capacity)
{
	return chan_new(out, capacity, false);
}

int baton_chan_create_single(baton_chan_t **out, size_t capacity)
{
	return chan_new(out, capacity, true);
}

/* Spin, then give the CPU away (the other side may be preempted). */
static void bias_wait(unsigned *spins)
{
	if ((*spins)++ < 128)
		baton__cpu_relax();
	else
		sched_yield();
}

/* Turn a bias towards another worker off (see chan_internal.h). Returns
 * once the bias is SHARED. */
static void bias_revoke(struct baton_chan *ch, uintptr_t b)
{
	unsigned spins = 0;

	/* Acq_rel: one revoker wins; the others wait for SHARED below. */
	if (b != BATON_CHAN_REVOKING &&
	    __atomic_compare_exchange_n(&ch->bias, &b, BATON_CHAN_REVOKING, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		baton__barrier_heavy();
		/* Acquire: pairs with the bias worker's release of own, so its
		 * last operation's writes are ours. */
		while (__atomic_load_n(&ch->own.locked, __ATOMIC_ACQUIRE))
			bias_wait(&spins);
		/* Release: pairs with the acquire loads of bias below. */
		__atomic_store_n(&ch->bias, BATON_CHAN_SHARED, __ATOMIC_RELEASE);
		return;
	}
	/* Acquire: see the release above. */
	while (__atomic_load_n(&ch->bias, __ATOMIC_ACQUIRE) != BATON_CHAN_SHARED)
		bias_wait(&spins);
}

/* Under ch->lock, with the bias UNSET or a candidate: count this use. The
 * first sets the candidate; the candidate's own uses promote it to the
 * bias at BATON_CHAN_BIAS_AFTER (`want_bias`), anybody else's make the
 * channel SHARED. Nobody but a holder of `lock` writes these states. */
static void bias_count_use(struct baton_chan *ch, uintptr_t b, struct baton_worker *self,
			   bool want_bias)
{
	uintptr_t cand = (uintptr_t)self | BATON_CHAN_CANDIDATE;
	uintptr_t next;

	if (b == BATON_CHAN_UNSET && self) {
		next = cand;
		ch->bias_uses = 1;
	} else if (b == cand && self) {
		next = ++ch->bias_uses >= BATON_CHAN_BIAS_AFTER && want_bias ? (uintptr_t)self
									     : cand;
	} else {
		next = BATON_CHAN_SHARED; /* a second user, or a plain thread */
	}
	if (next != b)
		/* Release: pairs with the acquire loads of bias; the promoted
		 * worker's later uses of own come after this use's writes. */
		__atomic_store_n(&ch->bias, next, __ATOMIC_RELEASE);
}

/* Take `lock` on a channel that is not biased to self, with the state
 * settled: returns with `lock` held and the bias SHARED, or a candidate's
 * (this use counted), or self's (`want_bias` only: a use that promoted
 * it, which still holds `lock`). A bias of another worker is revoked
 * first. */
static void lock_unbiased(struct baton_chan *ch, struct baton_worker *self, bool want_bias)
{
	for (;;) {
		/* Acquire: a SHARED bias brings what its revoker took over. */
		uintptr_t b = __atomic_load_n(&ch->bias, __ATOMIC_ACQUIRE);

		if (b == BATON_CHAN_REVOKING ||
		    (b != BATON_CHAN_SHARED && b != BATON_CHAN_UNSET &&
		     !(b & BATON_CHAN_CANDIDATE) && b != (uintptr_t)self)) {
			bias_revoke(ch, b);
			continue;
		}
		baton__spin_lock(&ch->lock);
		/* Relaxed: under the lock, which every change of an unbiased
		 * state holds; a promotion while we waited shows here. */
		b = __atomic_load_n(&ch->bias, __ATOMIC_RELAXED);
		if (b == BATON_CHAN_SHARED)
			return;
		if (b == BATON_CHAN_UNSET || (b & BATON_CHAN_CANDIDATE)) {
			bias_count_use(ch, b, self, want_bias);
			return;
		}
		if (b == (uintptr_t)self && self)
			return;                /* ours: W's thread may take lock as well */
		baton__spin_unlock(&ch->lock); /* biased elsewhere meanwhile */
	}
}

/* Take ch->lock, the spinlock, with the bias settled so that it excludes
 * everybody else: SHARED, a candidate's (which only `lock` holders
 * change), or biased to self (whose thread may take `lock` as well). For
 * select, which holds several channels' spinlocks at once. */
void baton__chan_lock_spin(struct baton_chan *ch, struct baton_worker *self)
{
	lock_unbiased(ch, self, false);
}

int baton__chan_bias_state(const struct baton_chan *ch)
{
	/* Acquire: as any reader of bias. */
	uintptr_t b = __atomic_load_n(&ch->bias, __ATOMIC_ACQUIRE);

	return b == BATON_CHAN_UNSET         ? 0
		: b == BATON_CHAN_REVOKING   ? 2
		: b == BATON_CHAN_SHARED     ? 3
		: (b & BATON_CHAN_CANDIDATE) ? 4
					     : 1;
}

baton_spinlock_t *baton__chan_lock_slow(struct baton_chan *ch, struct baton_worker *self)
{
	lock_unbiased(ch, self, true);
	return &ch->lock;
}

int baton__chan_try_send_locked(struct baton_chan *ch, void *value, struct baton_wakelist *wl)
{
	struct baton_waiter *w;

	if (ch->closed)
		return BATON_ECLOSED;
	w = baton__waitq_claim_first(&ch->recvq);
	if (w) { /* a receiver waits: hand over directly */
		w->value = value;
		baton__waiter_wake(wl, w, BATON_OK);
		return BATON_OK;
	}
	if (ch->len < ch->cap) {
		ch->buf[(ch->head + ch->len++) % ch->cap] = value;
		return BATON_OK;
	}
	return BATON_CHAN_BLOCK;
}

int baton__chan_try_recv_locked(struct baton_chan *ch, void **value, struct baton_wakelist *wl)
{
	struct baton_waiter *w;

	if (ch->len) {
		*value = ch->buf[ch->head];
		ch->head = (ch->head + 1) % ch->cap;
		ch->len--;
		/* Room now: the oldest waiting sender fills it. */
		w = baton__waitq_claim_first(&ch->sendq);
		if (w) {
			ch->buf[(ch->head + ch->len++) % ch->cap] = w->value;
			baton__waiter_wake(wl, w, BATON_OK);
		}
		return BATON_OK;
	}
	w = baton__waitq_claim_first(&ch->sendq);
	if (w) { /* unbuffered: take it from the waiting sender */
		*value = w->value;
		baton__waiter_wake(wl, w, BATON_OK);
		return BATON_OK;
	}
	return ch->closed ? BATON_ECLOSED : BATON_CHAN_BLOCK;
}

/* The hop's case: a receiver waits with no timeout and no other case, so we
 * are its only possible claimant. Take it off the queue, hand the message
 * over, unlock, and make it run next. Returns NULL when the general path
 * must decide (nobody waits, a select or timed waiter, a closed channel). */
static inline struct baton_task *take_solo_receiver(struct baton_chan *ch, void *value)
{
	struct baton_waiter *w = baton__waitq_first(&ch->recvq);
	struct baton_task *r;

	if (w == NULL || !(r = w->task)->wait_solo)
		return NULL;
	/* Off the front, then claimed: solo, so ours. (Its wait_index is
	 * read by nobody after a solo wait: not set.) */
	baton__waitq_pop(&ch->recvq);
	baton__wait_claim_solo(r);
	w->value = value;
	return r; /* wait_result is BATON_OK from the wait */
}

/* Wait in q, one of ch's queues, holding `held` (baton__chan_lock's):
 * steps 1-4 of wait.h's one-queue wait. The waiter records `lock`, what
 * anybody but its claimant takes to unlink it (the task after a timeout,
 * a scheduler's destroy): the bias worker's `own`, which `held` may be,
 * keeps nobody out once the bias is revoked. `held` is released once the
 * task has stopped. */
static inline __attribute__((always_inline)) int
chan_wait(struct baton_chan *ch, baton_spinlock_t *held, struct baton_task *t,
	  struct baton_waitq *q, const struct baton_wait_carry *c, int64_t timeout_ns)
{
	baton__wait_one_link(t, q, &ch->lock, c, timeout_ns);
	return baton__wait_one_park(t, held, c, timeout_ns);
}

/* The same off the hop's path, out of line: for any timeout, in any
 * task. A cancellable task's waiter is unlinked by wait.c if it is
 * cancelled, under `lock`: see baton__chan_pin_waiter. */
static __attribute__((noinline)) int
chan_wait_general(struct baton_chan *ch, baton_spinlock_t *held, struct baton_task *t,
		  struct baton_waitq *q, const struct baton_wait_carry *c, int64_t timeout_ns)
{
	if (t->cancellable)
		baton__chan_pin_waiter(ch, t->owner, t);
	return chan_wait(ch, held, t, q, c, timeout_ns);
}

/* The general steps, out of line so that the hop's paths above them need
 * no wake list on the stack. Called with `held` (see baton__chan_lock). */
static __attribute__((noinline)) int send_general(struct baton_chan *ch, baton_spinlock_t *held,
						  struct baton_task *t, void *value,
						  int64_t timeout_ns)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	int rc = baton__chan_try_send_locked(ch, value, &wl);

	if (rc != BATON_CHAN_BLOCK || timeout_ns == 0) {
		baton__spin_unlock(held);
		baton__wakelist_run(&wl);
		return rc == BATON_CHAN_BLOCK ? BATON_EAGAIN : rc;
	}
	return chan_wait_general(ch, held, t, &ch->sendq,
				 &(struct baton_wait_carry){ .value = value }, timeout_ns);
}

static __attribute__((noinline)) int recv_general(struct baton_chan *ch, baton_spinlock_t *held,
						  struct baton_task *t, void **value,
						  int64_t timeout_ns)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	void *v = NULL;
	int rc = baton__chan_owner_check(ch, t);

	if (rc != BATON_OK) {
		baton__spin_unlock(held);
		return rc;
	}
	rc = baton__chan_try_recv_locked(ch, &v, &wl);
	if (rc == BATON_CHAN_BLOCK && timeout_ns != 0)
		return chan_wait_general(ch, held, t, &ch->recvq,
					 &(struct baton_wait_carry){ .received = value },
					 timeout_ns);
	baton__spin_unlock(held);
	baton__wakelist_run(&wl);
	if (rc == BATON_CHAN_BLOCK)
		return BATON_EAGAIN;
	if (rc == BATON_OK && value)
		*value = v;
	return rc;
}

/* Every send but the hop's: the calling task found, the lock taken however
 * it must be, then a solo receiver or the general steps. */
static __attribute__((noinline)) int send_slow(struct baton_chan *ch, void *value,
					       int64_t timeout_ns)
{
	struct baton_task *t, *r;
	struct baton_worker *w;
	baton_spinlock_t *held;
	int rc;

	if (ch == NULL)
		return BATON_EINVAL;
	if ((rc = baton__task_for_wait_on(&t, &w, timeout_ns)) != BATON_OK)
		return rc;
	held = baton__chan_lock(ch, w);
	/* A closed channel has no waiting receivers, so no check first. */
	if (BATON_LIKELY((r = take_solo_receiver(ch, value)) != NULL)) {
		baton__spin_unlock(held);
		baton__task_ready_from(w, r);
		return BATON_OK;
	}
	return send_general(ch, held, t, value, timeout_ns);
}

static __attribute__((noinline)) int ready_slow(struct baton_task *r)
{
	baton__task_ready_slow(r);
	return BATON_OK;
}

/* The hop's send: code running in a task of this worker (its own
 * coroutine or one it resumed: this path never blocks) hands the message to
 * a receiver parked alone. No call returns into this path (every way off it
 * is a tail call), so it keeps its values in scratch registers and saves
 * none: the register saves are the switch's. Anything else is send_slow. */
int baton_chan_send(baton_chan_t *ch, void *value, int64_t timeout_ns)
{
	struct baton_worker *w = baton__worker_get();
	struct baton_task *r;
	baton_spinlock_t *held;

	if (BATON_UNLIKELY(ch == NULL || w == NULL || w->current == NULL ||
			   (held = baton__chan_lock_try(ch, w)) == NULL))
		return send_slow(ch, value, timeout_ns);
	if (BATON_UNLIKELY((r = take_solo_receiver(ch, value)) == NULL)) {
		baton__spin_unlock(held);
		return send_slow(ch, value, timeout_ns);
	}
	baton__spin_unlock(held);
	if (BATON_UNLIKELY(r->owner != w))
		return ready_slow(r);
	baton__runnext_put(w, r); /* baton__task_ready_from's case */
	return BATON_OK;
}

/* The owner of a single-receiver channel parks in its one slot: the
 * channel's receive queue, which only the owner ever waits in, so it is
 * empty now and the owner's first inline waiter becomes its head and tail
 * with plain stores (no link to follow, no count to read). Otherwise a
 * solo wait as chan_wait's: one claimant, the sender (or a
 * close) that takes the waiter out under the lock, so no wait state is
 * published (nothing reads it: the task is not cancellable) and the claim
 * is the sender's plain store. The waiter stays a real one, so a
 * scheduler's destroy unlinks it as any other. Returns with `held`
 * released; the message lands in *value (if not NULL) on success. */
static inline __attribute__((always_inline)) int
owner_park(struct baton_chan *ch, baton_spinlock_t *held, struct baton_task *t, void **value)
{
	struct baton_waiter *w = &t->inline_waiters[0];
	int rc;

	/* At rest the first inline waiter's task and index are t and 0, and
	 * t->waiters is the inline array (see baton__wait_one_link). */
	t->nwaiters = 1;
	t->wait_result = BATON_OK;
	t->wait_index = -1;
	t->wait_solo = true;
	w->queue = &ch->recvq;
	w->lock = &ch->lock;
	baton__waitq_push_only(&ch->recvq, w);
	rc = baton__wait_park_solo(t, held);
	if (rc == BATON_OK && value)
		*value = w->value;
	t->nwaiters = 0;
	return rc;
}

/* A single-receiver channel's receive but the hop's case: the general
 * step, which checks (or binds) the owner first. */
static __attribute__((noinline)) int recv_slow(struct baton_chan *ch, void **value,
					       int64_t timeout_ns)
{
	struct baton_task *t;
	struct baton_worker *w;
	int rc;

	if ((rc = baton__task_for_wait_on(&t, &w, timeout_ns)) != BATON_OK)
		return rc;
	return recv_general(ch, baton__chan_lock(ch, w), t, value, timeout_ns);
}

/* A single-receiver channel's receive. The hop's case, its owner waiting
 * with no timeout, finds the owner from the channel: the running
 * coroutine is the owner's (compared before anything of the task is
 * read), whose task's worker is the one running it. Everything else is
 * recv_slow, which also binds the owner. */
static inline __attribute__((always_inline)) int owner_recv(struct baton_chan *ch, void **value,
							    int64_t timeout_ns)
{
	struct baton_task *t;
	baton_spinlock_t *held;

	/* Relaxed: a match is our own store (baton__chan_owner_check). */
	if (BATON_UNLIKELY(__atomic_load_n(&ch->owner_co, __ATOMIC_RELAXED) !=
				   baton__coro_running() ||
			   timeout_ns >= 0))
		return recv_slow(ch, value, timeout_ns);
	t = ch->owner;
	if (BATON_UNLIKELY(t->cancellable || (held = baton__chan_lock_try(ch, t->owner)) == NULL))
		return recv_slow(ch, value, timeout_ns);
	if (BATON_LIKELY(ch->len == 0 && baton__waitq_empty(&ch->sendq) && !ch->closed))
		return owner_park(ch, held, t, value);
	return recv_general(ch, held, t, value, timeout_ns);
}

/* An ordinary channel's receive. */
static inline __attribute__((always_inline)) int recv_any(struct baton_chan *ch, void **value,
							  int64_t timeout_ns)
{
	struct baton_task *t;
	struct baton_worker *w;
	baton_spinlock_t *held;
	int rc;

	if ((rc = baton__task_for_wait_on(&t, &w, timeout_ns)) != BATON_OK)
		return rc;
	held = baton__chan_lock(ch, w);
	/* The hop's case: nothing to take, so wait (the general step would
	 * find the same, after more tests). The message lands in *value only
	 * on success. (Unlike the send, this path keeps its values across the
	 * switch, in registers it saves: taking the wait out of line into a
	 * smaller frame measured 7 instructions more per hop, not fewer.) */
	if (BATON_LIKELY(ch->len == 0 && baton__waitq_empty(&ch->sendq) && !ch->closed &&
			 timeout_ns < 0 && !t->cancellable)) /* general: pins */
		return chan_wait(ch, held, t, &ch->recvq,
				 &(struct baton_wait_carry){ .received = value }, -1);
	return recv_general(ch, held, t, value, timeout_ns);
}

int baton_chan_close(baton_chan_t *ch)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	baton_spinlock_t *held;

	if (ch == NULL)
		return BATON_EINVAL;
	held = baton__chan_lock(ch, baton__worker_get());
	if (ch->closed) {
		baton__spin_unlock(held);
		return BATON_ECLOSED;
	}
	ch->closed = true;
	/* Waiting receivers exist only with an empty buffer: all get
	 * ECLOSED. Waiting senders will never be received: ECLOSED too. */
	baton__waitq_wake_all(&ch->recvq, &wl, BATON_ECLOSED);
	baton__waitq_wake_all(&ch->sendq, &wl, BATON_ECLOSED);
	baton__spin_unlock(held);
	baton__wakelist_run(&wl);
	return BATON_OK;
}

long baton_chan_len(baton_chan_t *ch)
{
	baton_spinlock_t *held;
	long n;

	if (ch == NULL)
		return BATON_EINVAL;
	held = baton__chan_lock(ch, baton__worker_get());
	n = (long)ch->len;
	baton__spin_unlock(held);
	return n;
}

int baton_chan_destroy(baton_chan_t *ch)
{
	bool busy;

	if (ch == NULL)
		return BATON_OK;
	/* A channel that is not SHARED is read without its lock: taking it
	 * could turn a bias off (a heavy barrier) only to free the channel, and
	 * would count a use of a candidate's. Whoever
	 * used it last is ordered before us by the caller (the end of a run,
	 * a join), as destroying anything in use requires. Acquire: pairs
	 * with the release that made it SHARED. */
	if (__atomic_load_n(&ch->bias, __ATOMIC_ACQUIRE) == BATON_CHAN_SHARED) {
		baton__spin_lock(&ch->lock);
		busy = !baton__waitq_empty(&ch->sendq) || !baton__waitq_empty(&ch->recvq);
		baton__spin_unlock(&ch->lock);
	} else {
		busy = !baton__waitq_empty(&ch->sendq) || !baton__waitq_empty(&ch->recvq);
	}
	if (busy)
		return BATON_EBUSY;
	baton__free(ch->buf);
	baton__slab_put(&chan_pool, ch->slab, ch);
	return BATON_OK;
}

int baton_chan_recv(baton_chan_t *ch, void **value, int64_t timeout_ns)
{
	if (ch == NULL)
		return BATON_EINVAL;
	/* Immutable: read without the lock. */
	if (BATON_UNLIKELY(ch->single))
		return owner_recv(ch, value, timeout_ns);
	return recv_any(ch, value, timeout_ns);
}
