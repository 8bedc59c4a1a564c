/* SPDX-License-Identifier: MIT */
/**
 * @file baton/chan.h
 * channels: tasks hand each other messages, blocking until
 * the other side is ready (unbuffered) or the buffer has room (buffered).
 *
 * A message is one pointer, as with coroutines. A channel may be used by
 * tasks on any worker of any scheduler; operations block only the calling
 * task, never its worker. baton_chan_select() waits for the first of several
 * sends and receives.
 *
 * @code
 *     static void producer(void *arg)
 *     {
 *         baton_chan_t *ch = arg;
 *         for (long i = 1; i <= 3; i++)
 *             baton_chan_send(ch, (void *)i, -1);   // waits for a receiver
 *         baton_chan_close(ch);
 *     }
 *
 *     static void consumer(void *arg)
 *     {
 *         baton_chan_t *ch = arg;
 *         void *v;
 *         while (baton_chan_recv(ch, &v, -1) == BATON_OK)
 *             printf("%ld\n", (long)v);             // 1 2 3
 *         // BATON_ECLOSED: closed and drained
 *     }
 *
 *     baton_chan_t *ch;
 *     baton_chan_create(&ch, 0);                    // unbuffered
 *     baton_sched_spawn(s, NULL, producer, ch);
 *     baton_sched_spawn(s, NULL, consumer, ch);
 *     baton_sched_run(s);
 *     baton_chan_destroy(ch);
 * @endcode
 *
 * Single-receiver channels (baton_chan_create_single): any task or thread
 * sends, one task - the owner, the first task that receives from it -
 * receives, as with Erlang's and Pony's mailboxes, Rust's std::sync::mpsc
 * and tokio's mpsc. Everything else is as above: capacity and
 * back-pressure, timeouts, close, select (the owner's receive may be a
 * case), cancellation. A receive by any other task, or from outside a task
 * with timeout 0, returns BATON_ENOTOWNER. What it buys is the hop: the
 * owner waits in one slot (the channel's receive side is its alone), so a
 * send to a parked owner needs no search of a waiter queue, and a receive
 * that must wait parks with a few plain stores.
 *
 * Which channel to use:
 *  - a task's inbox (an actor, a ring member, a server's request queue,
 *    a reply channel): single-receiver; the error on a stray receive
 *    catches a design mistake early;
 *  - a work queue that several consumers drain, or a channel whose
 *    receiver changes over time (handed from task to task): ordinary;
 *  - one value, one waiter (a reply): either, capacity 1, so that the
 *    replier never blocks;
 *  - unbuffered (capacity 0) where the sender should wait for the
 *    receiver (a rendezvous); buffered where bursts should not block it.
 *
 * Timeouts: every blocking call takes timeout_ns: < 0 waits forever, 0 only
 * tries (BATON_EAGAIN if it would block), > 0 waits at most that long
 * (BATON_ETIMEDOUT).
 *
 * Cost: a channel belongs at first to the worker that uses it first, whose
 * tasks then lock it with plain stores (no atomic read-modify-write). The
 * first use from anywhere else (another worker, a plain thread, a select
 * there) hands it over for good, at the price of one process-wide memory
 * barrier (an interrupt to every CPU running the process, tens of
 * microseconds); from then on every operation takes a spinlock. So a
 * channel meant for one worker's tasks is cheapest when it stays there, and
 * one shared by many workers pays the hand-over once, not per message.
 *
 * Rules a caller must keep:
 *  1. Send, receive and select are called from tasks (BATON_ENOSCHED
 *     otherwise), except with timeout 0, which never blocks and works from
 *     any thread.
 *  2. A message is a pointer: what it points to must outlive its receipt,
 *     and must not be a local of a copy-stack task (see baton/coro.h).
 *  3. Closing wakes every waiting sender and receiver with BATON_ECLOSED.
 *     Receivers still get the buffered messages first; sending on a closed
 *     channel and closing twice return BATON_ECLOSED.
 *  4. Destroy a channel only when no task waits on it (BATON_EBUSY), and
 *     only once its last use is over: a destroy may read the channel without
 *     its lock, so a use still running elsewhere is a use after free.
 */
#ifndef BATON_CHAN_H
#define BATON_CHAN_H

#include <stddef.h>
#include <stdint.h>

#include <baton/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A channel (opaque). */
typedef struct baton_chan baton_chan_t;

/** The largest capacity baton_chan_create() takes. */
#define BATON_CHAN_MAX_CAPACITY ((size_t)1 << 30)

/** A channel buffering up to `capacity` messages (0: unbuffered).
 * @param out receives the new channel
 * @param capacity the messages it buffers (0: unbuffered)
 * @return BATON_OK, or an error: BATON_EINVAL (NULL out, capacity >
 * BATON_CHAN_MAX_CAPACITY), BATON_ENOMEM. */
BATON_API int baton_chan_create(baton_chan_t **out, size_t capacity);

/** A single-receiver channel buffering up to `capacity` messages (0:
 * unbuffered): any task or thread sends, and only its owner - the first
 * task that receives from it (baton_chan_recv, or a receive case of
 * baton_chan_select), bound for good - receives; any other receiver gets
 * BATON_ENOTOWNER. Closed, sent to, selected on and destroyed as any
 * channel. The owner is a task's record: a channel that outlives its owner
 * can still be sent to and closed, but not received from (destroy it).
 * @param out receives the new channel
 * @param capacity the messages it buffers (0: unbuffered)
 * @return BATON_OK, or an error: BATON_EINVAL (NULL out, capacity >
 * BATON_CHAN_MAX_CAPACITY), BATON_ENOMEM. */
BATON_API int baton_chan_create_single(baton_chan_t **out, size_t capacity);

/** Send `value`.
 * @param ch the channel
 * @param value the message
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_ECLOSED, BATON_EAGAIN
 * (timeout 0), BATON_ETIMEDOUT, BATON_ENOSCHED, BATON_ENOMEM. */
BATON_API int baton_chan_send(baton_chan_t *ch, void *value, int64_t timeout_ns);

/** Receive into *value (which may be NULL to discard).
 * @param ch the channel
 * @param value receives the message, or NULL to discard it
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: as send; BATON_ECLOSED once the channel is
 * closed and its buffer empty; BATON_ENOTOWNER (a single-receiver channel,
 * and the caller is not its owner task). */
BATON_API int baton_chan_recv(baton_chan_t *ch, void **value, int64_t timeout_ns);

/** Close: see rule 3.
 * @param ch the channel
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_ECLOSED (already). */
BATON_API int baton_chan_close(baton_chan_t *ch);

/** Messages buffered now, or BATON_EINVAL.
 * @param ch the channel
 * @return the number of messages buffered, or BATON_EINVAL */
BATON_API long baton_chan_len(baton_chan_t *ch);

/** Free the channel. NULL is a no-op.
 * @param ch the channel
 * @return BATON_OK, or an error: BATON_EBUSY (tasks wait). */
BATON_API int baton_chan_destroy(baton_chan_t *ch);

/* --- select ---------------------------------------------------------------- */
/** What a case of baton_chan_select() does. */
enum baton_chan_dir {
	BATON_CHAN_SEND = 0, /**< send value */
	BATON_CHAN_RECV = 1, /**< receive into value */
};

/** One case of baton_chan_select(). */
struct baton_chan_op {
	baton_chan_t *chan; /**< the channel */
	int dir;            /**< enum baton_chan_dir */
	void *value;        /**< send: the message; recv: set to the message received */
	int result;         /**< set for the completed case: BATON_OK or BATON_ECLOSED */
};

/** The most cases one baton_chan_select() takes. */
#define BATON_CHAN_SELECT_MAX 64

/** Complete exactly one of the n operations, the first that can proceed
 * (several ready at once: one chosen at random, so none starves); store its
 * position in *index and its outcome in ops[*index].result (BATON_OK, or
 * BATON_ECLOSED for a closed channel). A channel may appear in several ops.
 * @param ops the operations, one per case
 * @param n how many operations ops holds
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @param index receives the position of the completed operation
 * @return BATON_OK, or an error: BATON_EINVAL (NULL ops or index, n == 0 or >
 * BATON_CHAN_SELECT_MAX, a NULL chan, a bad dir), BATON_EAGAIN (timeout 0,
 * nothing ready), BATON_ETIMEDOUT, BATON_ENOSCHED, BATON_ENOMEM,
 * BATON_ENOTOWNER (a receive case on a single-receiver channel the caller
 * does not own; nothing was done). */
BATON_API int baton_chan_select(struct baton_chan_op *ops, size_t n, int64_t timeout_ns,
				size_t *index);

#ifdef __cplusplus
}
#endif

#endif /* BATON_CHAN_H */
