/* SPDX-License-Identifier: MIT */
/**
 * @file baton/seq.h
 * the call sequencer: many native threads calling into one
 * single-threaded runtime (CHICKEN Scheme, Lua, ...) that must always run
 * on the same stack, one call at a time.
 *
 * A sequencer owns a dedicated stack (a stackful baton coroutine) and a
 * lock. baton_seq_call() may be made from any thread: it takes the lock,
 * switches onto the dedicated stack, runs fn(arg) there, switches back,
 * releases the lock and hands back fn's result. No thread is spent on the
 * runtime and no message is serialised: a call costs a lock and a context
 * switch in each direction.
 *
 * @code
 *     static void *boot(void *arg)  { runtime_init(); return NULL; }
 *     static void *work(void *arg)  { return runtime_eval(arg); }
 *
 *     struct baton_seq_attr attr;
 *     baton_seq_t *seq;
 *     void *res;
 *     baton_seq_attr_init(&attr);
 *     attr.init = boot;                       // runs on the dedicated stack
 *     if (baton_seq_create(&seq, &attr) != BATON_OK)
 *         abort();
 *     baton_seq_call(seq, work, "(+ 1 2)", &res);   // from any thread
 *     baton_seq_destroy(seq);
 * @endcode
 *
 * Flat combining. A thread that finds the lock taken publishes its request
 * in a per-thread record of the sequencer and waits (it spins briefly, then
 * sleeps on an event count). A caller that is a scheduler task (baton/
 * sched.h) yields to its worker's other tasks instead, then parks, so a long
 * sequenced call never holds up a worker thread. The thread holding the lock serves its own call
 * and then up to `batch` (K) published requests while it is still on the
 * dedicated stack, so one switch pays for a whole batch; each served waiter
 * gets its result without ever taking the lock. K = 0 turns combining off
 * (a plain spin-then-sleep lock). A waiter that was not served takes the
 * lock itself once it is free, so with K >= 1 every published request is
 * served within a bounded number of lock holdings (docs/seq.md).
 *
 * Rules a caller must keep:
 *  1. fn runs on the dedicated stack, but not necessarily on the calling
 *     thread: with combining, another waiting thread may run it for you.
 *     fn must not depend on the caller's thread-local storage or thread id,
 *     nor on its floating-point control state (rounding mode, exception
 *     masks): fn runs in that of the thread that runs it (in builds with
 *     the ucontext switch, in the one the sequencer was created in), and
 *     must leave it as it found it, as the ABI asks of any function.
 *  2. A call made from inside fn (fn -> C -> baton_seq_call on the same
 *     sequencer) runs directly, nested, on the dedicated stack. A call made
 *     from a coroutine that fn resumed is not on the dedicated stack and
 *     fails with BATON_EDEADLK instead of hanging.
 *  3. fn may call into another sequencer. If that would close a cycle
 *     (thread A holds S1 and wants S2 while thread B holds S2 and wants S1)
 *     the call that detects it returns BATON_EDEADLK; no call ever hangs on
 *     such a cycle.
 *  4. fn must return normally: no longjmp out of it, no pthread_exit, no
 *     yield of the dedicated coroutine.
 *  5. Destroy only when no call is in flight; the runtime's own shutdown
 *     should be run through baton_seq_call() first (destroy does not unwind
 *     the dedicated stack).
 */
#ifndef BATON_SEQ_H
#define BATON_SEQ_H

#include <stddef.h>
#include <stdint.h>

#include <baton/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A call sequencer (opaque). */
typedef struct baton_seq baton_seq_t;

/** A sequenced function: runs on the dedicated stack with the lock held. */
typedef void *(*baton_seq_fn)(void *arg);

/** Attributes of a sequencer: baton_seq_attr_init() sets the defaults. */
struct baton_seq_attr {
	size_t stack_size; /**< dedicated stack size; 0 = BATON_SEQ_STACK_DEFAULT */
	unsigned
		batch; /**< K: waiting calls a lock holder serves after its own; 0 = no combining */
	baton_seq_fn init; /**< if not NULL, run once on the dedicated stack by create */
	void *init_arg;    /**< init's argument */
	const char *name;  /**< for diagnostics; copied (truncated to 31 bytes) */
};

/** The defaults of struct baton_seq_attr, as an initialiser. */
#define BATON_SEQ_ATTR_INIT             \
	{                               \
		0, 16, NULL, NULL, NULL \
	}

/** The defaults (a BATON_SEQ_STACK_DEFAULT stack, K = 16, no init, no
 * name) in *a: the attribute convention of every module
 * (docs/architecture.md).
 * @param a the attributes to set to the defaults
 * @return BATON_OK, or an error: BATON_EINVAL (NULL a). */
static inline int baton_seq_attr_init(struct baton_seq_attr *a)
{
	const struct baton_seq_attr d = BATON_SEQ_ATTR_INIT;

	if (a == NULL)
		return BATON_EINVAL;
	*a = d;
	return BATON_OK;
}

/** The dedicated stack's size unless baton_seq_attr.stack_size says. */
#define BATON_SEQ_STACK_DEFAULT (1024u * 1024u)

/** Waiting threads that can publish requests at the same time; more
 * concurrent callers still work, the extra ones just wait for the lock
 * without being combined. */
#define BATON_SEQ_MAX_WAITERS 128u

/** Counters of a sequencer (read with baton_seq_stats). */
struct baton_seq_stats {
	uint64_t calls;    /**< calls run on the dedicated stack (nested ones excluded) */
	uint64_t switches; /**< times a lock holder switched onto the stack */
	uint64_t combined; /**< calls a lock holder ran for a waiting thread */
	uint64_t sleeps;   /**< times a waiting thread blocked on its event count */
	uint64_t parks;    /**< times a waiting scheduler task parked (its worker ran others) */
};

/** Create a sequencer: map its stack, store it in *out, then run
 * attr->init(attr->init_arg) on it if given (init may use *out). `attr` may be NULL for the defaults (1 MiB, K = 16).
 * @param out receives the new sequencer
 * @param attr the attributes, or NULL for the defaults
 * @return BATON_OK, or an error: BATON_EINVAL (NULL out), BATON_ESTACK (stack
 * size outside the limits of baton/coro.h), BATON_ENOMEM. */
BATON_API int baton_seq_create(baton_seq_t **out, const struct baton_seq_attr *attr);

/** Run fn(arg) on the dedicated stack under the lock, from any thread; store
 * its return value in *result if result is not NULL.
 * @param seq the sequencer
 * @param fn the function to run on the dedicated stack
 * @param arg passed to `fn`
 * @param result receives fn's return value, or NULL
 * @return BATON_OK, or an error: BATON_EINVAL (NULL seq or fn), BATON_EDEADLK
 * (see rules 2 and 3; fn was not run). */
BATON_API int baton_seq_call(baton_seq_t *seq, baton_seq_fn fn, void *arg, void **result);

/** Change K at run time; it applies from the next batch on.
 * @param seq the sequencer
 * @param k the new K
 * @return BATON_OK, or an error: BATON_EINVAL (NULL seq). */
BATON_API int baton_seq_set_batch(baton_seq_t *seq, unsigned k);

/** 1 if the caller runs on seq's dedicated stack now, else 0 (also for NULL).
 * @param seq the sequencer
 * @return 1 or 0 */
BATON_API int baton_seq_on_stack(const baton_seq_t *seq);

/** Copy the counters into *st. They are updated under the lock; read them
 * when the sequencer is idle for exact figures.
 * @param seq the sequencer
 * @param st filled with the statistics
 * @return BATON_OK, or an error: BATON_EINVAL (NULL argument). */
BATON_API int baton_seq_stats(const baton_seq_t *seq, struct baton_seq_stats *st);

/** The name given at creation ("" if none or NULL).
 * @param seq the sequencer
 * @return the name, static for the sequencer's life; never NULL */
BATON_API const char *baton_seq_name(const baton_seq_t *seq);

/** Free the sequencer and its stack. NULL is a no-op.
 * @param seq the sequencer
 * @return BATON_OK, or an error: BATON_EBUSY (a call is in flight, or the
 * caller runs on its stack); nothing is freed then. */
BATON_API int baton_seq_destroy(baton_seq_t *seq);

#ifdef __cplusplus
}
#endif

#endif /* BATON_SEQ_H */
