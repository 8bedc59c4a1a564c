/* SPDX-License-Identifier: MIT */
/**
 * @file baton/sync.h
 * wait groups, mutexes and counting semaphores for tasks:
 * each blocks the calling task, never its worker thread, so the worker runs
 * other tasks meanwhile (see baton/sched.h).
 *
 *  - A wait group counts outstanding work: add(n) before starting n pieces,
 *    done() as each finishes, wait() until the count is back to zero.
 *  - A mutex is owned by one task at a time. Ownership belongs to the task,
 *    not to a thread: a task that moves to another worker while holding it
 *    still holds it. On unlock, ownership passes directly to the oldest
 *    waiter (FIFO hand-off): a task that arrives later cannot barge in
 *    between, so no waiter starves, at the price of throughput under heavy
 *    contention (the new owner must be scheduled before anyone proceeds).
 *  - A semaphore holds a count of units. acquire(n) takes n units at once,
 *    release(n) gives n back. Waiters are served strictly in arrival order:
 *    a large request at the head of the queue holds back later small ones
 *    even when enough units for those are free, so a large request cannot
 *    be starved by a stream of small ones.
 *
 * @code
 *     static baton_wg_t *wg;
 *     static baton_mutex_t *mu;
 *     static long total;
 *
 *     static void worker(void *arg)
 *     {
 *         baton_mutex_lock(mu, -1);
 *         total += (long)arg;          // may block or yield in here
 *         baton_mutex_unlock(mu);
 *         baton_wg_done(wg);
 *     }
 *
 *     static void boss(void *s)
 *     {
 *         baton_wg_add(wg, 10);
 *         for (long i = 0; i < 10; i++)
 *             baton_sched_spawn(s, NULL, worker, (void *)i);
 *         baton_wg_wait(wg, -1);       // total == 45 now
 *     }
 *
 *     baton_wg_create(&wg);
 *     baton_mutex_create(&mu);
 *     baton_sched_spawn(s, NULL, boss, s);
 *     baton_sched_run(s);
 *     baton_mutex_destroy(mu);
 *     baton_wg_destroy(wg);
 * @endcode
 *
 * Timeouts, as in baton/chan.h: every blocking call takes timeout_ns: < 0
 * waits forever, 0 only tries (BATON_EAGAIN if it would block), > 0 waits at
 * most that long (BATON_ETIMEDOUT). A call that fails, times out included,
 * changes nothing: a timed-out lock or acquire has taken nothing and is no
 * longer queued.
 *
 * Rules a caller must keep:
 *  1. wg_wait, mutex_lock and sem_acquire block only in a task's own
 *     coroutine (not in a coroutine the task resumed); elsewhere they return
 *     BATON_ENOSCHED, except with timeout 0, which never blocks and works
 *     from any thread. wg_add, wg_done, mutex_unlock and sem_release never
 *     block and work from any thread.
 *  2. A mutex is unlocked by its owner: the task that locked it (also from
 *     a coroutine that task resumed), or, for a mutex taken with timeout 0
 *     outside any task, the thread that took it. Not recursive: locking a
 *     mutex the caller holds returns BATON_EDEADLK. A task must unlock what
 *     it holds before it returns.
 *  3. Destroy a primitive only when no task waits on it and, for a mutex,
 *     nobody holds it (BATON_EBUSY otherwise). A task that timed out stays
 *     counted as a waiter until it has run again.
 *  4. The primitives may be shared by tasks of several schedulers and by
 *     plain threads; they hold no reference to any scheduler.
 */
#ifndef BATON_SYNC_H
#define BATON_SYNC_H

#include <stdint.h>

#include <baton/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- wait groups ----------------------------------------------------------- */
/** A wait group (opaque). */
typedef struct baton_wg baton_wg_t;

/** A wait group with count 0.
 * @param out receives the new wait group
 * @return BATON_OK, or an error: BATON_EINVAL (NULL out), BATON_ENOMEM. */
BATON_API int baton_wg_create(baton_wg_t **out);

/** Add delta (may be negative) to the count; when it reaches 0, every task
 * in baton_wg_wait returns.
 * @param wg the wait group
 * @param delta added to the count (may be negative)
 * @return BATON_OK, or an error: BATON_EINVAL (NULL wg, or the count would go
 * below 0 or overflow a long; the count is then unchanged). */
BATON_API int baton_wg_add(baton_wg_t *wg, long delta);

/** baton_wg_add(wg, -1).
 * @param wg the wait group
 * @return as baton_wg_add() */
BATON_API int baton_wg_done(baton_wg_t *wg);

/** Wait until the count is 0 (at once if it is). A count raised again after
 * reaching 0 does not recall the tasks it already released.
 * @param wg the wait group
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_EAGAIN (timeout 0 and
 * count > 0), BATON_ETIMEDOUT, BATON_ENOSCHED, BATON_ENOMEM. */
BATON_API int baton_wg_wait(baton_wg_t *wg, int64_t timeout_ns);

/** The count now (>= 0), or BATON_EINVAL (NULL wg).
 * @param wg the wait group
 * @return the count, or BATON_EINVAL */
BATON_API long baton_wg_count(baton_wg_t *wg);

/** Free it. NULL is a no-op.
 * @param wg the wait group
 * @return BATON_OK, or an error: BATON_EBUSY (tasks wait on it). */
BATON_API int baton_wg_destroy(baton_wg_t *wg);

/* --- mutexes --------------------------------------------------------------- */
/** A mutex for tasks (opaque). */
typedef struct baton_mutex baton_mutex_t;

/** An unlocked mutex.
 * @param out receives the new mutex
 * @return BATON_OK, or an error: BATON_EINVAL (NULL out), BATON_ENOMEM. */
BATON_API int baton_mutex_create(baton_mutex_t **out);

/** Lock: take the mutex, waiting behind the tasks already queued (FIFO).
 * @param m the mutex
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_EDEADLK (the caller holds
 * it), BATON_EAGAIN (timeout 0 and held), BATON_ETIMEDOUT, BATON_ENOSCHED,
 * BATON_ENOMEM. */
BATON_API int baton_mutex_lock(baton_mutex_t *m, int64_t timeout_ns);

/** Unlock; the oldest waiter, if any, becomes the owner at once.
 * @param m the mutex
 * @return BATON_OK, or an error: BATON_EINVAL, BATON_EPERM (the caller does
 * not hold it, including when nobody does). */
BATON_API int baton_mutex_unlock(baton_mutex_t *m);

/** Free it. NULL is a no-op.
 * @param m the mutex
 * @return BATON_OK, or an error: BATON_EBUSY (held or waited on). */
BATON_API int baton_mutex_destroy(baton_mutex_t *m);

/* --- counting semaphores --------------------------------------------------- */
/** A counting semaphore (opaque). */
typedef struct baton_sem baton_sem_t;

/** A semaphore holding `initial` units.
 * @param out receives the new semaphore
 * @param initial the units it holds at first (>= 0)
 * @return BATON_OK, or an error: BATON_EINVAL (NULL out, initial < 0),
 * BATON_ENOMEM. */
BATON_API int baton_sem_create(baton_sem_t **out, long initial);

/** Take n units (n >= 1) at once, waiting in FIFO order behind earlier
 * requests, whatever their size.
 * @param s the semaphore
 * @param n units to take (>= 1)
 * @param timeout_ns < 0 waits forever, 0 only tries, > 0 waits at most
 * that many nanoseconds
 * @return BATON_OK, or an error: BATON_EINVAL (NULL s, n < 1), BATON_EAGAIN
 * (timeout 0 and not grantable now), BATON_ETIMEDOUT, BATON_ENOSCHED,
 * BATON_ENOMEM. */
BATON_API int baton_sem_acquire(baton_sem_t *s, long n, int64_t timeout_ns);

/** Give back n units (n >= 1) and wake the waiters at the head of the queue
 * that can now be served.
 * @param s the semaphore
 * @param n units to give back (>= 1)
 * @return BATON_OK, or an error: BATON_EINVAL (NULL s, n < 1, or the count
 * would overflow a long; nothing is released then). */
BATON_API int baton_sem_release(baton_sem_t *s, long n);

/** The units free now (>= 0; not counting what waiters ask for), or
 * BATON_EINVAL (NULL s).
 * @param s the semaphore
 * @return the free units, or BATON_EINVAL */
BATON_API long baton_sem_value(baton_sem_t *s);

/** Free it. NULL is a no-op.
 * @param s the semaphore
 * @return BATON_OK, or an error: BATON_EBUSY (tasks wait on it). */
BATON_API int baton_sem_destroy(baton_sem_t *s);

#ifdef __cplusplus
}
#endif

#endif /* BATON_SYNC_H */
