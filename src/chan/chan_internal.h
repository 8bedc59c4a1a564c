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

#include "../sched/sched_internal.h"

/* What a hand-off touches (the lock, both wait queues, the length and the
 * closed flag) fits in the first cache line; channels are allocated on a
 * line of their own, so two channels never share one. */
struct baton_chan {
	baton_spinlock_t lock;
	bool closed;
	size_t len;			/* messages in buf */
	struct baton_waitq sendq, recvq;
	size_t cap, head;		/* ring buffer of cap messages */
	void **buf;
} __attribute__((aligned(BATON_CACHELINE)));

/* Outcome of one non-blocking step. */
enum {
	BATON_CHAN_BLOCK = 1, /* would block: nothing happened */
};

/* Claimed partners are added to `wl`: ready them after unlocking. */
int baton__chan_try_send_locked(struct baton_chan *ch, void *value,
			       struct baton_wakelist *wl);
int baton__chan_try_recv_locked(struct baton_chan *ch, void **value,
			       struct baton_wakelist *wl);

#endif /* BATON_SRC_CHAN_INTERNAL_H */
