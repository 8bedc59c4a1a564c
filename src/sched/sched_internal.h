/* SPDX-License-Identifier: MIT */
/*
 * src/sched/sched_internal.h - what every part of the scheduler, and every
 * layer built on it, needs: the spinlock, tasks, workers, the scheduler
 * record, and how to find the running task and ready another. The wait
 * protocol that blocking primitives follow is in wait.h.
 *
 * Files behind include/baton/sched.h:
 *   sched.c     the scheduler's life: create / run / stop / destroy, stats
 *   task.c      a task's life: spawn, made runnable, its end and free
 *   hop.h  the hop, inline: next task, switch away, after-switch hook
 *   hop.c  the hop's out-of-line half: the hook's rare cases, yield
 *   worker.c    the worker loop: poll, idle, run; waking a worker, stop
 *   steal.c     idle workers: parking, steal requests, hand-over
 *   wait.h      the wait protocol: claim, wake, park, the one-queue wait
 *   wait.c      its out-of-line steps: park, timeouts, cancellation
 *   timer.c     the per-worker timer heap and the clock (timeouts, sleep)
 *   queue.h     the local run queue and the multi-producer inbox
 *   watch.c     what a higher layer hears of a destroy (watches)
 *   handle.h    task ids and groups: the slot table, the lock order
 *   handle.c    task ids: spawn with one, a task's end, join, abort, detach
 *   group.c     task groups: spawn into, wait, cancel, close, nesting
 */
#ifndef BATON_SRC_SCHED_INTERNAL_H
#define BATON_SRC_SCHED_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pthread.h>

#include <baton/coro.h>
#include <baton/ec.h>
#include <baton/sched.h>

#include "../common/list.h"
#include "../common/prelude.h"
#include "../coro/hop.h"

/* --- spinlock ---------------------------------------------------------------
 * Guards wait queues and channel buffers for a few dozen instructions; a
 * task never blocks while holding one (park releases it after the switch). */
typedef struct baton_spinlock {
	int locked;
} baton_spinlock_t;

void baton__spin_lock_slow(baton_spinlock_t *l);

static inline void baton__spin_lock(baton_spinlock_t *l)
{
	/* Acquire: the critical section's loads happen after we own it. */
	if (BATON_UNLIKELY(__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE)))
		baton__spin_lock_slow(l);
}

static inline void baton__spin_unlock(baton_spinlock_t *l)
{
	/* Release: the critical section's stores are visible to the next owner. */
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

/* --- tasks ------------------------------------------------------------------ */
struct baton_worker;
struct baton_task;

/* One blocked operation of a task, linked in a primitive's wait queue
 * (the records the task embeds; the protocol that uses them is wait.h). */
struct baton_waiter {
	struct baton_list_node link; /* in queue->list, under the primitive's
				      * lock; first, so the record is the link */
	struct baton_task *task;
	void *value; /* channel: the message sent or received */
	long amount; /* semaphore: units asked for */
	int index;   /* select: which case this waiter is */
	bool linked; /* in a wait queue (guarded by its lock) */
	/* The queue it is linked in and its lock, so the task can unlink it
	 * after a timeout without knowing the primitive. */
	struct baton_waitq *queue;
	baton_spinlock_t *lock;
};

/* A FIFO of waiters, guarded by the owning primitive's spinlock; read
 * through wait.h (baton__waitq_empty, _first, _pop). */
struct baton_waitq {
	struct baton_list list; /* of baton_waiter.link */
	size_t len;             /* waiters linked, timed-out ones not yet unlinked too */
};

/* What must happen once a task's context is saved: the after-switch hook.
 * The task that stops records it in its worker's `after` word and the side
 * that runs next - the next task, or the worker's loop - carries it out
 * first thing (baton__after_switch, hop.h). Until then nobody else can
 * reach the task: a parked task's wait queues stay locked, a yielding one
 * is in no queue.
 *
 * One word, tagged by its low bit. Even: the hop's case, a park under one
 * lock, is that lock's address (spinlocks are int-aligned), so the
 * landing side releases it with one load, a test and two stores, as with a
 * word for it alone. Odd: a task's address (8-byte aligned at least) with
 * one of the odd kinds below in its low three bits; BATON_AFTER_NOTHING is
 * the kind with no task. */
enum baton_after {
	BATON_AFTER_YIELD = 1, /* runnable again: back of the run queue */
	BATON_AFTER_PARK = 3,  /* blocked: release its locks */
	BATON_AFTER_DONE = 5,  /* its function returned: free it */
	/* blocked, and its handle was taken: release its locks and meet a
	 * cancellation's claim (baton__wait_parked_cancellable) */
	BATON_AFTER_PARK_CANCELLABLE = 7,
};
#define BATON_AFTER_KIND_MASK ((uintptr_t)7)
/* The word when there is nothing to do: a kind with no task. */
#define BATON_AFTER_NOTHING ((uintptr_t)BATON_AFTER_YIELD)

#define BATON_TASK_INLINE_WAITERS 2

struct baton_timer_node {
	int64_t deadline; /* CLOCK_MONOTONIC, ns */
	size_t index;     /* position in the heap; SIZE_MAX when not armed */
	void (*fire)(struct baton_timer_node *node); /* runs on the worker */
};

/* The fields a hop touches come first: with the coroutine's control block
 * and the first inline waiter, a same-worker hop reads and writes the
 * first two cache lines of a stackful task's record (allocated
 * cache-line aligned; see docs/sched.md). What only timed and wide waits
 * touch comes after the inline waiters. A copy-stack task's record shares
 * one allocation with its coroutine's control block (16-byte aligned, no
 * alignment waste): a parked one's memory is mostly these two and its
 * saved frames. */
struct baton_task {
	struct baton_task *next; /* run queue or inbox link */
	baton_coro_t *co;
	struct baton_worker *owner; /* the worker that runs it next */
	uint32_t wait_state;        /* enum baton_wait_state (wait.h) */
	bool wait_solo;             /* one waiter, no timeout: one claimant */
	bool wait_timed;            /* parked with a timeout on owner's heap, or
				     * pinned there until its waiters are
				     * unlinked (wait.c): not moved */
	bool pinned;                /* copy-stack and started: cannot migrate */
	bool bound;                 /* BATON_TASK_BOUND: never migrates */
	bool copystack;             /* its coroutine's model */
	bool linked;                /* in sched->all (from its first stop on) */
	bool cancellable;           /* its handle was taken: no solo waits */
	uint8_t cancel;             /* baton_task_cancel'ed (atomic, sticky) */
	uint8_t cancel_park;        /* cancel's claim meets the park (atomic) */
	int wait_result;            /* BATON_OK, BATON_ETIMEDOUT, BATON_ECLOSED,
				       BATON_ECANCELED */
	int wait_index;             /* select: the case that completed */
	unsigned nlocks;
	unsigned nwaiters;
	baton_spinlock_t **locks; /* nlocks of them, released after park */

	struct baton_waiter inline_waiters[BATON_TASK_INLINE_WAITERS];
	baton_spinlock_t *inline_locks[BATON_TASK_INLINE_WAITERS];
	struct baton_waiter *waiters;    /* nwaiters of them */
	struct baton_timer_node timeout; /* on owner's heap while armed */
	/* Its scheduler is its owner's (a task moves only between the
	 * workers of its scheduler). */
	baton_task_fn fn;
	void *arg;
	/* sched->all, under all_lock: the tasks destroy must find. A task is
	 * linked when it first stops running (baton__switch_away); one that
	 * runs to its end without stopping never takes the lock. */
	struct baton_list_node all_link;
	/* The groups it created and has not closed (group.c): written by the
	 * task under glock, walked under glock by whoever cancels it. Both
	 * zero at rest (closed at its end): a reused record needs no reset. */
	struct baton_group *groups;
	baton_spinlock_t glock;
};

/* The hop's fields fill the first line; the first waiter is the second. */
_Static_assert(offsetof(struct baton_task, inline_waiters) == BATON_CACHELINE,
	       "the inline waiters open the task's second cache line");
/* The after-switch word's tags (enum baton_after): a lock's address is
 * even, a task's leaves room for a kind. */
_Static_assert(_Alignof(struct baton_task) > BATON_AFTER_KIND_MASK, "a task's low bits are free");
_Static_assert(_Alignof(baton_spinlock_t) % 2 == 0, "a lock's address is even");

/* --- workers ---------------------------------------------------------------- */
struct baton_timer_heap {
	struct baton_timer_node **nodes;
	size_t len, cap;
};

struct baton_worker {
	/* Owner-only: the hop path (no lock, no atomic read-modify-write). */
	struct baton_task *runnext; /* woken here: runs before the queue */
	struct baton_task *runq_head, *runq_tail;
	size_t runq_len;
	struct baton_task *current;
	uintptr_t after;                /* the after-switch hook (see enum baton_after) */
	unsigned runnext_streak;        /* runnext dispatches in a row */
	unsigned ticks;                 /* dispatches since inbox/timers were polled */
	struct baton_sched_stats stats; /* this worker's share */

	/* Owner-only, colder. */
	struct baton_timer_heap timers;
	size_t npinned;      /* live copy-stack tasks that ran here */
	int64_t live_credit; /* counted in sched->live, no task's: see
				       baton_sched.live */
	unsigned index;
	struct baton_sched *sched;
	pthread_t thread;
	bool has_thread;
	/* Free task-id slots kept for this worker's spawns (handle.c): no
	 * atomic on a spawn's or a join's slot. Given back at destroy. */
	unsigned ntslots;
	struct baton_tslot *tslots[128];

	/* Read by other workers. */
	size_t runq_len_pub __attribute__((aligned(BATON_CACHELINE)));

	/* Written by other workers. */
	struct baton_task *inbox __attribute__((aligned(BATON_CACHELINE)));
	struct baton_worker *steal_req; /* a thief asking for work, or NULL */
	int parked;                     /* 1 while waiting on ec with nothing to do */
	baton_ec_t ec;                  /* bumped after every push into inbox */
	int in_poll;                    /* 1 while asleep in the hook (atomic) */
	/* Where the worker sleeps instead of on ec, installed by a higher
	 * layer (the reactor of src/io/) on this worker's thread; read by
	 * wakers (atomic pointer). hook_data is that layer's, per worker. */
	const struct baton_worker_hook *hook;
	void *hook_data;
};

/*
 * A worker's idle hook: what the worker does instead of sleeping on its
 * event count, once a higher layer installed it (the reactor does on the
 * first handle opened on the worker, as libuv's loop calls uv__io_poll and
 * ae.c calls aeApiPoll). The scheduler knows no more of that layer than
 * these three calls.
 */
struct baton_worker_hook {
	/* On the worker: wait up to timeout_ns (0: just look, < 0: no limit)
	 * and ready the tasks whose events came. Ends early on wake(). */
	void (*poll)(struct baton_worker *w, int64_t timeout_ns);
	/* Any thread: end a poll in progress on w. */
	void (*wake)(struct baton_worker *w);
	/* The worker ends: free hook_data, clear hook. */
	void (*fini)(struct baton_worker *w);
};

/*
 * What a higher layer builds on a scheduler and must hear of its destroy:
 * a stage, whose dispatcher and handler tasks the destroy frees (they leave
 * the stage's counts behind). Linked by baton__sched_watch; `gone` is
 * called by baton_sched_destroy once every task is freed, after which the
 * scheduler's pointer must not be used. Unlinked by baton__sched_unwatch
 * (a no-op once gone was called). One process-wide lock guards every
 * scheduler's list, so that a destroy of each racing the other is safe.
 */
struct baton_sched_watch {
	struct baton_list_node link; /* in sched->watches */
	struct baton_sched *sched;   /* NULL once unwatched or gone */
	void (*gone)(struct baton_sched_watch *w);
};

/* watch.c */
void baton__sched_watch(struct baton_sched *s, struct baton_sched_watch *w);
void baton__sched_unwatch(struct baton_sched_watch *w);
void baton__sched_watches_gone(struct baton_sched *s);

/* Starting and ending runs of the helper workers (threads 1..N-1). */
struct baton_sched_ctl {
	int generation;   /* bumped by each run (atomic) */
	int destroying;   /* (atomic) */
	int active;       /* helper workers inside a run (atomic) */
	baton_ec_t start; /* bumped to start a run or to destroy */
	baton_ec_t done;  /* bumped by each helper worker leaving a run */
};

struct baton_sched {
	unsigned nworkers;
	struct baton_worker *workers;
	/* Tasks spawned and not yet finished, plus the credits the workers
	 * hold (atomic). A worker takes credits in batches and spends one per
	 * spawn; a task that ends gives one back to the worker it ends on;
	 * a worker returns what it holds before it sleeps and when it leaves
	 * the run. So spawns and ends on a worker take no atomic
	 * read-modify-write of their own, and live reaches 0 only once every
	 * task has ended and every worker has returned its credits. */
	int64_t live;
	int stop;             /* run must return (atomic) */
	int running;          /* inside baton_sched_run (atomic) */
	int nparked;          /* workers parked (atomic, a hint) */
	unsigned next_worker; /* round-robin for spawns from outside */
	pthread_t run_thread; /* worker 0 of the last run */
	int io_backend;       /* the reactor's: baton_io_set_backend's choice (a
				   baton_io_backend_t of baton/io.h, atomic) */
	struct baton_sched_ctl ctl;
	/* Every task not yet freed, so that destroy finds the blocked ones
	 * (a primitive knows its waiters, nothing else knows them all).
	 * Linked at spawn, unlinked when freed: off the hop path. */
	baton_spinlock_t all_lock;
	struct baton_list all;     /* of baton_task.all_link */
	struct baton_list watches; /* of baton_sched_watch.link, under the
				    * watch lock (watch.c) */
};

/* The worker running on this thread, or NULL. Read it only through
 * baton__worker_get(); only the worker loop writes it. */
extern __thread struct baton_worker *baton__worker_self __attribute__((tls_model("initial-exec")));

/*
 * The worker of the thread running now, read afresh. A task may block and
 * resume on another worker's thread within one function, and a compiler
 * may keep a thread-local variable's address in a register across that
 * call: on AArch64 GCC reads TPIDR_EL0 once per function, so a task woken
 * on worker 0 would go on using worker 1's fields (its run queue, from the
 * wrong thread). x86-64 reads a thread-local pointer with one
 * %fs-relative load each time, which cannot go stale; elsewhere the read
 * is out of line (worker.c), where it cannot be folded into the caller.
 */
#if defined(__x86_64__)
static inline struct baton_worker *baton__worker_get(void)
{
	return baton__worker_self;
}
#else
struct baton_worker *baton__worker_get(void);
#endif

/* The task the calling thread's worker is running (its coroutine or one it
 * resumed), or NULL: an identity, e.g. a mutex's owner. */
static inline struct baton_task *baton__task_current(void)
{
	struct baton_worker *w = baton__worker_get();

	return w ? w->current : NULL;
}

/* The task whose own coroutine is running, or NULL: also NULL inside a
 * plain coroutine that a task resumed (parking there would suspend that
 * coroutine, not the task). */
static inline struct baton_task *baton__task_self(void)
{
	struct baton_worker *w = baton__worker_get();
	struct baton_task *t = w ? w->current : NULL;

	return t && baton__coro_running() == t->co ? t : NULL;
}

/* worker.c */
void baton__worker_wake(struct baton_worker *w);
void baton__worker_loop(struct baton_worker *w);
void baton__sched_set_stop(struct baton_sched *s);

/* task.c */
void baton__task_ready_slow(struct baton_task *task);
void baton__runnext_displace(struct baton_worker *w, struct baton_task *prev);
void baton__task_finish(struct baton_worker *w, struct baton_task *t);
void baton__task_free_queued(struct baton_worker *w);
void baton__task_free_blocked(struct baton_sched *s, struct baton_worker *only);
/* Ready t behind the tasks already runnable (a joiner, by a task's end). */
void baton__task_ready_back(struct baton_task *t);

/* Make t run next on w, from w's thread while a task of w runs: the
 * runnext slot, whose previous occupant goes behind the run queue. */
static inline void baton__runnext_put(struct baton_worker *w, struct baton_task *t)
{
	struct baton_task *prev = w->runnext;

	w->runnext = t;
	if (BATON_UNLIKELY(prev != NULL))
		baton__runnext_displace(w, prev);
}

/* Make a claimed task runnable. Inline, the hop's case: woken by a running
 * task of its own worker, it takes the runnext slot (owner-only fields,
 * plain stores); everything else - another worker, a thread that is no
 * worker, a wake-up from the loop - goes through baton__task_ready_slow. */
static inline void baton__task_ready_from(struct baton_worker *self, struct baton_task *t)
{
	if (BATON_LIKELY(self == t->owner && self != NULL && self->current != NULL)) {
		baton__runnext_put(self, t);
		return;
	}
	baton__task_ready_slow(t);
}

/* baton__task_ready_from the calling thread's worker. */
static inline void baton__task_ready(struct baton_task *t)
{
	baton__task_ready_from(baton__worker_get(), t);
}

/* Link a task that stops for the first time into sched->all. */
void baton__task_link(struct baton_task *t);

/* hop.c */
void baton__sched_task_after(struct baton_task *task, enum baton_after after);

/* timer.c */
int64_t baton__deadline_after(int64_t timeout_ns);
int baton__timer_heap_add(struct baton_timer_heap *h, struct baton_timer_node *n);
void baton__timer_heap_remove(struct baton_timer_heap *h, struct baton_timer_node *n);
int64_t baton__timer_heap_next(const struct baton_timer_heap *h);
void baton__timer_heap_fire(struct baton_timer_heap *h, int64_t now);
void baton__timer_heap_fini(struct baton_timer_heap *h);

/* steal.c */
void baton__steal_serve(struct baton_worker *w);
void baton__steal_idle(struct baton_worker *w);
void baton__steal_wake_idle(struct baton_sched *s);

#endif /* BATON_SRC_SCHED_INTERNAL_H */
