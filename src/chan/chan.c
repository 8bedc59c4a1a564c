/*
 * Channels: send, receive, close.
 *
 * Every operation takes the channel's spinlock, tries the non-blocking step
 * (hand the message to a waiting partner, or use the buffer) and, if that
 * would block, links a waiter and parks the task; the partner that later
 * completes the operation does it on the task's behalf and wakes it (the
 * wait protocol of src/sched/sched_internal.h). Messages waiting in a
 * waiter live in the task's heap block, never on a coroutine stack.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "chan_internal.h"

int baton_chan_create(baton_chan_t **out, size_t capacity)
{
	struct baton_chan *ch;

	if (out == NULL || capacity > BATON_CHAN_MAX_CAPACITY)
		return BATON_EINVAL;
	if ((ch = baton__aligned(BATON_CACHELINE, sizeof(*ch))) == NULL)
		return BATON_ENOMEM;
	memset(ch, 0, sizeof(*ch));
	if (capacity) {
		ch->buf = baton__malloc(capacity * sizeof(*ch->buf));
		if (ch->buf == NULL) {
			baton__free(ch);
			return BATON_ENOMEM;
		}
	}
	ch->cap = capacity;
	*out = ch;
	return BATON_OK;
}

int baton__chan_try_send_locked(struct baton_chan *ch, void *value,
			       struct baton_wakelist *wl)
{
	struct baton_waiter *w;

	if (ch->closed)
		return BATON_ECLOSED;
	w = baton_waitq_claim_first(&ch->recvq);
	if (w) { /* a receiver waits: hand over directly */
		w->value = value;
		baton_waiter_wake(wl, w, BATON_OK);
		return BATON_OK;
	}
	if (ch->len < ch->cap) {
		ch->buf[(ch->head + ch->len++) % ch->cap] = value;
		return BATON_OK;
	}
	return BATON_CHAN_BLOCK;
}

int baton__chan_try_recv_locked(struct baton_chan *ch, void **value,
			       struct baton_wakelist *wl)
{
	struct baton_waiter *w;

	if (ch->len) {
		*value = ch->buf[ch->head];
		ch->head = (ch->head + 1) % ch->cap;
		ch->len--;
		/* Room now: the oldest waiting sender fills it. */
		w = baton_waitq_claim_first(&ch->sendq);
		if (w) {
			ch->buf[(ch->head + ch->len++) % ch->cap] = w->value;
			baton_waiter_wake(wl, w, BATON_OK);
		}
		return BATON_OK;
	}
	w = baton_waitq_claim_first(&ch->sendq);
	if (w) { /* unbuffered: take it from the waiting sender */
		*value = w->value;
		baton_waiter_wake(wl, w, BATON_OK);
		return BATON_OK;
	}
	return ch->closed ? BATON_ECLOSED : BATON_CHAN_BLOCK;
}

/* The hop's case: a receiver waits with no timeout and no other case, so we
 * are its only possible claimant. Take it off the queue, hand the message
 * over, unlock, and make it run next. Returns NULL when the general path
 * must decide (nobody waits, a select or timed waiter, a closed channel). */
static inline struct baton_task *take_solo_receiver(struct baton_chan *ch,
						    void *value)
{
	struct baton_waiter *w = ch->recvq.head;
	struct baton_task *r;

	if (w == NULL || !w->task->wait_solo)
		return NULL;
	baton_waitq_remove(&ch->recvq, w);
	r = w->task;
	/* Relaxed: the channel's lock orders it (see baton_wait_claim). */
	__atomic_store_n(&r->wait_state, BATON_WAIT_CLAIMED, __ATOMIC_RELAXED);
	r->wait_index = w->index;
	w->value = value;
	return r; /* wait_result is BATON_OK from baton__wait_one */
}

/* The general steps, out of line so that the hop's paths above them need
 * no wake list on the stack. Called with ch->lock held. */
static __attribute__((noinline)) int send_general(struct baton_chan *ch,
						  struct baton_task *t,
						  void *value, int64_t timeout_ns)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	int rc = baton__chan_try_send_locked(ch, value, &wl);

	if (rc != BATON_CHAN_BLOCK || timeout_ns == 0) {
		baton_spin_unlock(&ch->lock);
		baton_wakelist_run(&wl);
		return rc == BATON_CHAN_BLOCK ? BATON_EAGAIN : rc;
	}
	return baton__wait_one(t, &ch->sendq, &ch->lock, 0, value, NULL, timeout_ns);
}

static __attribute__((noinline)) int recv_general(struct baton_chan *ch,
						  struct baton_task *t,
						  void **value, int64_t timeout_ns)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	void *v = NULL;
	int rc = baton__chan_try_recv_locked(ch, &v, &wl);

	if (rc == BATON_CHAN_BLOCK && timeout_ns != 0)
		return baton__wait_one(t, &ch->recvq, &ch->lock, 0, NULL, value, timeout_ns);
	baton_spin_unlock(&ch->lock);
	baton_wakelist_run(&wl);
	if (rc == BATON_CHAN_BLOCK)
		return BATON_EAGAIN;
	if (rc == BATON_OK && value)
		*value = v;
	return rc;
}

int baton_chan_send(baton_chan_t *ch, void *value, int64_t timeout_ns)
{
	struct baton_task *t, *r;
	int rc;

	if (ch == NULL)
		return BATON_EINVAL;
	if ((rc = baton_task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	baton_spin_lock(&ch->lock);
	/* A closed channel has no waiting receivers, so no check first. */
	if (BATON_LIKELY((r = take_solo_receiver(ch, value)) != NULL)) {
		baton_spin_unlock(&ch->lock);
		baton_task_ready(r);
		return BATON_OK;
	}
	return send_general(ch, t, value, timeout_ns);
}

int baton_chan_recv(baton_chan_t *ch, void **value, int64_t timeout_ns)
{
	struct baton_task *t;
	int rc;

	if (ch == NULL)
		return BATON_EINVAL;
	if ((rc = baton_task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	baton_spin_lock(&ch->lock);
	/* The hop's case: nothing to take, so wait (the general step would
	 * find the same, after more tests). The message lands in *value only
	 * on success. */
	if (BATON_LIKELY(ch->len == 0 && ch->sendq.head == NULL && !ch->closed &&
			 timeout_ns != 0))
		return baton__wait_one(t, &ch->recvq, &ch->lock, 0, NULL, value, timeout_ns);
	return recv_general(ch, t, value, timeout_ns);
}

int baton_chan_close(baton_chan_t *ch)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;

	if (ch == NULL)
		return BATON_EINVAL;
	baton_spin_lock(&ch->lock);
	if (ch->closed) {
		baton_spin_unlock(&ch->lock);
		return BATON_ECLOSED;
	}
	ch->closed = true;
	/* Waiting receivers exist only with an empty buffer: all get
	 * ECLOSED. Waiting senders will never be received: ECLOSED too. */
	baton_waitq_wake_all(&ch->recvq, &wl, BATON_ECLOSED);
	baton_waitq_wake_all(&ch->sendq, &wl, BATON_ECLOSED);
	baton_spin_unlock(&ch->lock);
	baton_wakelist_run(&wl);
	return BATON_OK;
}

long baton_chan_len(baton_chan_t *ch)
{
	long n;

	if (ch == NULL)
		return BATON_EINVAL;
	baton_spin_lock(&ch->lock);
	n = (long)ch->len;
	baton_spin_unlock(&ch->lock);
	return n;
}

int baton_chan_destroy(baton_chan_t *ch)
{
	bool busy;

	if (ch == NULL)
		return BATON_OK;
	baton_spin_lock(&ch->lock);
	busy = ch->sendq.head || ch->recvq.head;
	baton_spin_unlock(&ch->lock);
	if (busy)
		return BATON_EBUSY;
	baton__free(ch->buf);
	baton__free(ch);
	return BATON_OK;
}
