/*
 * src/sched/sched_internal.h - what the scheduler shares with the blocking
 * primitives built on it (src/chan/, src/sync/): tasks, workers, the wait
 * protocol and the spinlock that guards every wait queue.
 *
 * Files behind include/baton/sched.h:
 *   sched.c     create / spawn / run / destroy, the worker loop
 *   steal.c     idle workers: parking, steal requests, hand-over
 *   wait.c      park / claim / ready: how a task blocks and is woken
 *   dispatch.h  the hop, inline: next task, switch away, after-switch hook,
 *               and the one-queue wait (baton__wait_one_inline)
 *   timer.c     the per-worker timer heap and the clock (timeouts, sleep)
 *   queue.h     the local run queue and the multi-producer inbox
 *
 * The wait protocol (every primitive follows it):
 *  1. The task calls baton__wait_begin(): a new wait generation, state WAITING.
 *  2. Under the primitive's spinlock it links one baton_waiter per operation
 *     into the primitive's wait queue, then calls baton__wait_park() with the
 *     lock(s) to release and an optional deadline. The locks are released by
 *     the worker only after the task's context is saved, so no waker can
 *     run the task before it has really stopped.
 *  3. A waker, holding the primitive's lock, unlinks a waiter and calls
 *     baton__wait_claim(): exactly one claimant (a waker, the timer, another
 *     case of a select) wins; the winner sets task->wait_index to the index of the waiter it
 *     unlinked (baton__waitq_claim_first does both), stores the result and
 *     calls baton__task_ready(). A waker that loses the claim skips that waiter.
 *  4. Back from park, the task unlinks the waiters still linked (timeout,
 *     the other cases of a select) under their primitives' locks.
 *  5. Cancellation (baton_task_cancel) is one more claimant, the only one
 *     that holds none of the task's locks. Only a task whose handle was
 *     taken can be cancelled (`cancellable`); its waits are never solo, so
 *     every claim of them is the compare-and-swap, and they park through
 *     baton__wait_park. The task, having published WAITING, fences and
 *     reads its `cancel` flag: set, it claims its own wait and parks not.
 *     The canceller sets the flag, fences, and tries the claim. Having
 *     won, it cannot know whether the task has switched away yet: of it
 *     and the worker parking the task (BATON_AFTER_PARK_CANCELLABLE),
 *     whoever comes second to `cancel_park` readies the task.
 * Waiters live in the task's heap block, never on the coroutine's stack: a
 * copy-stack coroutine's stack is not addressable while it is suspended.
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

#include "../common/prelude.h"
#include "../coro/handoff.h"


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

/* Tasks claimed under a lock, readied after it is released (so that a
 * futex wake-up system call never runs inside a spinlock). Linked through
 * task->next, which a claimed task does not use: it is in no queue. */
struct baton_wakelist {
	struct baton_task *head;
};
#define BATON_WAKELIST_INIT { NULL }

/* One blocked operation of a task, linked in a primitive's wait queue. */
struct baton_waiter {
	struct baton_waiter *next, *prev; /* guarded by the primitive's lock */
	struct baton_task *task;
	void *value;	  /* channel: the message sent or received */
	long amount;	  /* semaphore: units asked for */
	int index;	  /* select: which case this waiter is */
	bool linked;	  /* in a wait queue (guarded by its lock) */
	/* The queue it is linked in and its lock, so the task can unlink it
	 * after a timeout without knowing the primitive. */
	struct baton_waitq *queue;
	baton_spinlock_t *lock;
};

/* A FIFO of waiters, guarded by the owning primitive's spinlock. */
struct baton_waitq {
	struct baton_waiter *head, *tail;
	size_t len; /* waiters linked, timed-out ones not yet unlinked too */
};

enum baton_wait_state {
	BATON_WAIT_IDLE = 0,	/* not blocked */
	BATON_WAIT_WAITING = 1, /* blocked, nobody has claimed the wake-up */
	BATON_WAIT_CLAIMED = 2, /* a waker or the timer won; result is set */
};

/* What must happen once a task's context is saved: the after-switch hook.
 * The task that stops records it in its worker (after_task, after_kind)
 * and the side that runs next - the next task, or the worker's loop -
 * carries it out first thing (baton_sched_after_switch). Until then nobody
 * else can reach the task: a parked task's wait queues stay locked, a
 * yielding one is in no queue. */
enum baton_after {
	BATON_AFTER_NONE = 0,
	BATON_AFTER_YIELD = 1, /* runnable again: back of the run queue */
	BATON_AFTER_PARK = 2,  /* blocked: release its locks */
	BATON_AFTER_DONE = 3,  /* its function returned: free it */
	/* blocked, and its handle was taken: release its locks and meet a
	 * cancellation's claim (baton__wait_parked_cancellable) */
	BATON_AFTER_PARK_CANCELLABLE = 4,
};

#define BATON_TASK_INLINE_WAITERS 4

struct baton_timer_node {
	int64_t deadline;      /* CLOCK_MONOTONIC, ns */
	size_t index;	       /* position in the heap; SIZE_MAX when not armed */
	void (*fire)(struct baton_timer_node *node); /* runs on the worker */
};

/* The fields a hop touches come first: with the coroutine's control block
 * and the first inline waiter, a same-worker hand-off reads and writes the
 * first two cache lines of the task (see docs/sched.md). What only timed
 * and wide waits touch comes after the inline waiters, so that the record
 * is 448 bytes, not 512: a parked task's memory is mostly this record. */
struct baton_task {
	struct baton_task *next; /* run queue or inbox link */
	baton_coro_t *co;
	struct baton_worker *owner; /* the worker that runs it next */
	uint32_t wait_state;	    /* enum baton_wait_state (see claim) */
	bool wait_solo;		    /* one waiter, no timeout: one claimant */
	bool wait_timed;	    /* parked with a timeout on owner's heap */
	bool pinned;		    /* copy-stack and started: cannot migrate */
	bool bound;		    /* BATON_TASK_BOUND: never migrates */
	bool copystack;		    /* its coroutine's model */
	bool linked;		    /* in sched->all (from its first stop on) */
	bool cancellable;	    /* its handle was taken: no solo waits */
	uint8_t cancel;		    /* baton_task_cancel'ed (atomic, sticky) */
	uint8_t cancel_park;	    /* cancel's claim meets the park (atomic) */
	int wait_result;	    /* BATON_OK, BATON_ETIMEDOUT, BATON_ECLOSED,
				       BATON_ECANCELED */
	int wait_index;		    /* select: the case that completed */
	unsigned nlocks;
	unsigned nwaiters;
	baton_spinlock_t **locks; /* nlocks of them, released after park */

	struct baton_waiter inline_waiters[BATON_TASK_INLINE_WAITERS]
		__attribute__((aligned(BATON_CACHELINE)));
	baton_spinlock_t *inline_locks[BATON_TASK_INLINE_WAITERS];
	struct baton_waiter *waiters;	 /* nwaiters of them */
	struct baton_timer_node timeout; /* on owner's heap while armed */
	struct baton_sched *sched;
	baton_task_fn fn;
	void *arg;
	/* sched->all, under all_lock: the tasks destroy must find. A task is
	 * linked when it first stops running (baton__switch_away); one that
	 * runs to its end without stopping never takes the lock. */
	struct baton_task *all_prev, *all_next;
};

/* --- workers ---------------------------------------------------------------- */
/* Task records a worker keeps for reuse: a burst of short tasks spawned and
 * ended on one worker then costs no trip through the allocator's slow paths
 * (an aligned allocation has no per-thread cache in glibc). */
#define BATON_WORKER_SPARE_TASKS 256

struct baton_timer_heap {
	struct baton_timer_node **nodes;
	size_t len, cap;
};

struct baton_worker {
	/* Owner-only: the hop path (no lock, no atomic read-modify-write). */
	struct baton_task *runnext;	/* woken here: runs before the queue */
	struct baton_task *runq_head, *runq_tail;
	size_t runq_len;
	struct baton_task *current;
	struct baton_task *after_task;	/* the after-switch hook's task */
	unsigned char after_kind;	/* enum baton_after */
	unsigned runnext_streak;	/* runnext dispatches in a row */
	unsigned ticks;		    /* dispatches since inbox/timers were polled */
	struct baton_sched_stats stats; /* this worker's share */

	/* Owner-only, colder. */
	struct baton_timer_heap timers;
	struct baton_task *spare;   /* freed task records, linked by next */
	unsigned nspare;	    /* at most BATON_WORKER_SPARE_TASKS */
	size_t npinned;		    /* live copy-stack tasks that ran here */
	int64_t live_credit;	    /* counted in sched->live, no task's: see
				       baton_sched.live */
	unsigned index;
	struct baton_sched *sched;
	pthread_t thread;
	bool has_thread;

/* Read by other workers. */
	size_t runq_len_pub __attribute__((aligned(BATON_CACHELINE)));

	/* Written by other workers. */
	struct baton_task *inbox __attribute__((aligned(BATON_CACHELINE)));
	struct baton_worker *steal_req; /* a thief asking for work, or NULL */
	int parked;		    /* 1 while waiting on ec with nothing to do */
	baton_ec_t ec;		    /* bumped after every push into inbox */
	int in_poll;		    /* 1 while asleep in the hook (atomic) */
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
	struct baton_sched_watch *prev, *next;
	struct baton_sched *sched; /* NULL once unwatched or gone */
	void (*gone)(struct baton_sched_watch *w);
};

void baton__sched_watch(struct baton_sched *s, struct baton_sched_watch *w);
void baton__sched_unwatch(struct baton_sched_watch *w);

/* Starting and ending runs of the helper workers (threads 1..N-1). */
struct baton_sched_ctl {
	int generation;	  /* bumped by each run (atomic) */
	int destroying;	  /* (atomic) */
	int active;	  /* helper workers inside a run (atomic) */
	baton_ec_t start; /* bumped to start a run or to destroy */
	baton_ec_t done;  /* bumped by each helper worker leaving a run */
};

/* The largest baton_io_backend_t value (baton/io.h owns the type, above
 * this layer; src/io/io.c asserts that they agree). */
#define BATON__IO_BACKEND_MAX 2

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
	int stop;		/* run must return (atomic) */
	int running;		/* inside baton_sched_run (atomic) */
	int nparked;		/* workers parked (atomic, a hint) */
	unsigned next_worker;	/* round-robin for spawns from outside */
	pthread_t run_thread;	/* worker 0 of the last run */
	int io_backend;		/* 0..BATON__IO_BACKEND_MAX (a baton_io_backend_t,
				   atomic), for the reactor to read */
	struct baton_sched_ctl ctl;
	/* Every task not yet freed, so that destroy finds the blocked ones
	 * (a primitive knows its waiters, nothing else knows them all).
	 * Linked at spawn, unlinked when freed: off the hop path. */
	baton_spinlock_t all_lock;
	struct baton_task *all;
	struct baton_sched_watch *watches; /* under the watch lock (sched.c) */
};

/* The worker running on this thread, or NULL. Read it only through
 * baton__worker_get(); only the worker loop writes it. */
extern __thread struct baton_worker *baton__worker_self
	__attribute__((tls_model("initial-exec")));

/*
 * The worker of the thread running now, read afresh. A task may block and
 * resume on another worker's thread within one function, and a compiler
 * may keep a thread-local variable's address in a register across that
 * call: on AArch64 GCC reads TPIDR_EL0 once per function, so a task woken
 * on worker 0 would go on using worker 1's fields (its run queue, from the
 * wrong thread). x86-64 reads a thread-local pointer with one
 * %fs-relative load each time, which cannot go stale; elsewhere the read
 * is out of line (sched.c), where it cannot be folded into the caller.
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

/* The same, for a caller that also needs its worker (*w, NULL off any
 * worker): one look at thread-local storage for both. */
static inline int baton__task_for_wait_on(struct baton_task **t,
					 struct baton_worker **w,
					 int64_t timeout_ns)
{
	struct baton_worker *self = baton__worker_get();
	struct baton_task *cur = self ? self->current : NULL;

	*w = self;
	*t = cur && baton__coro_running() == cur->co ? cur : NULL;
	return *t == NULL && timeout_ns != 0 ? BATON_ENOSCHED : BATON_OK;
}

/* The prologue of every call that may wait (baton/sync.h's convention):
 * *t gets the calling task; outside one, only timeout 0 (a try) is
 * allowed, and BATON_ENOSCHED is returned otherwise. */
static inline int baton__task_for_wait(struct baton_task **t, int64_t timeout_ns)
{
	*t = baton__task_self();
	return *t == NULL && timeout_ns != 0 ? BATON_ENOSCHED : BATON_OK;
}

/* sched.c */
void baton__worker_wake(struct baton_worker *w);
void baton__task_ready_slow(struct baton_task *task);
void baton__runnext_displace(struct baton_worker *w, struct baton_task *prev);

/* Make a claimed task runnable. Inline, the hop's case: woken by a running
 * task of its own worker, it takes the runnext slot (owner-only fields,
 * plain stores); everything else - another worker, a thread that is no
 * worker, a wake-up from the loop - goes through baton__task_ready_slow. */
static inline void baton__task_ready_from(struct baton_worker *self,
					 struct baton_task *t)
{
	if (BATON_LIKELY(self == t->owner && self != NULL && self->current != NULL)) {
		struct baton_task *prev = self->runnext;

		self->runnext = t;
		if (BATON_UNLIKELY(prev != NULL))
			baton__runnext_displace(self, prev);
		return;
	}
	baton__task_ready_slow(t);
}

/* baton__task_ready_from the calling thread's worker. */
static inline void baton__task_ready(struct baton_task *t)
{
	baton__task_ready_from(baton__worker_get(), t);
}

static inline void baton__wakelist_run(struct baton_wakelist *wl)
{
	struct baton_task *t = wl->head, *next;

	for (; t; t = next) {
		next = t->next;
		baton__task_ready(t);
	}
	wl->head = NULL;
}

/* Ready `task` (claimed, result set) once the caller's locks are released. */
static inline void baton__wakelist_add(struct baton_wakelist *wl,
				      struct baton_task *task)
{
	task->next = wl->head;
	wl->head = task;
}

/* Give a claimed waiter's task its result and ready it once the caller's
 * locks are released. */
static inline void baton__waiter_wake(struct baton_wakelist *wl,
				     struct baton_waiter *w, int result)
{
	w->task->wait_result = result;
	baton__wakelist_add(wl, w->task);
}
void baton__sched_task_after(struct baton_task *task, enum baton_after after);
/* Link a task that stops for the first time into sched->all. */
void baton__task_link(struct baton_task *t);

/* wait.c (the short steps are inline below: they are every hop's path) */
int baton__wait_park(struct baton_task *task, int64_t timeout_ns);
void baton__wait_parked_cancellable(struct baton_worker *w,
				    struct baton_task *task);
void baton__wait_unlink_rest(struct baton_task *task);
int baton__wait_one_held(struct baton_task *task, struct baton_waitq *q,
			 baton_spinlock_t *lock, baton_spinlock_t *held,
			 long amount, void *value, void **received,
			 int64_t timeout_ns);

/* baton__wait_one_held with q's own lock taken. */
static inline int baton__wait_one(struct baton_task *task, struct baton_waitq *q,
				  baton_spinlock_t *lock, long amount, void *value,
				  void **received, int64_t timeout_ns)
{
	return baton__wait_one_held(task, q, lock, lock, amount, value, received,
				    timeout_ns);
}
int baton__wait_reserve_many(struct baton_task *task, unsigned n);
void baton__wait_free_many(struct baton_task *task);

static inline void baton__waitq_push(struct baton_waitq *q,
				    struct baton_waiter *w)
{
	w->next = NULL;
	w->prev = q->tail;
	if (q->tail)
		q->tail->next = w;
	else
		q->head = w;
	q->tail = w;
	q->len++;
	w->linked = true;
}

static inline void baton__waitq_remove(struct baton_waitq *q,
				      struct baton_waiter *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		q->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		q->tail = w->prev;
	w->next = w->prev = NULL;
	q->len--;
	w->linked = false;
}

static inline bool baton__wait_claim(struct baton_task *t)
{
	uint32_t expected = BATON_WAIT_WAITING;

	if (BATON_LIKELY(t->wait_solo)) {
		/* One waiter and no timeout: whoever unlinks that waiter,
		 * under its queue's lock, is the only possible claimant, and
		 * the lock orders everything. Relaxed: sem and pool peek at
		 * the state under the same lock. */
		__atomic_store_n(&t->wait_state, BATON_WAIT_CLAIMED,
				 __ATOMIC_RELAXED);
		return true;
	}
	/* Acq_rel: the winner's later writes of the result are ordered after
	 * its win, and it sees the task's state as the task left it. */
	return __atomic_compare_exchange_n(&t->wait_state, &expected,
					   BATON_WAIT_CLAIMED, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Unlink waiters from the front until one's task can be claimed; return it
 * (claimed, unlinked, wait_index set) or NULL. Caller holds the lock. A
 * waiter whose task was already claimed (by its timeout or another case of
 * a select) is dropped: that task unlinks its other waiters itself. */
static inline struct baton_waiter *baton__waitq_claim_first(struct baton_waitq *q)
{
	struct baton_waiter *w;

	while ((w = q->head) != NULL) {
		baton__waitq_remove(q, w);
		if (baton__wait_claim(w->task)) {
			w->task->wait_index = w->index;
			return w;
		}
	}
	return NULL;
}

/* Claim every waiter of q into wl with `result` (close, a count reaching
 * zero); returns how many. Caller holds the lock. */
static inline size_t baton__waitq_wake_all(struct baton_waitq *q, struct baton_wakelist *wl,
					  int result)
{
	struct baton_waiter *w;
	size_t n = 0;

	while ((w = baton__waitq_claim_first(q)) != NULL) {
		baton__waiter_wake(wl, w, result);
		n++;
	}
	return n;
}

/* Room for n waiters: inline for up to BATON_TASK_INLINE_WAITERS. */
static inline int baton__wait_reserve(struct baton_task *t, unsigned n)
{
	t->nwaiters = 0;
	t->nlocks = 0;
	if (BATON_LIKELY(n <= BATON_TASK_INLINE_WAITERS)) {
		t->waiters = t->inline_waiters;
		t->locks = t->inline_locks;
		return BATON_OK;
	}
	return baton__wait_reserve_many(t, n);
}

static inline void baton__wait_begin(struct baton_task *t)
{
	t->wait_solo = false; /* baton__wait_one says when it is */
	t->wait_result = BATON_OK;
	t->wait_index = -1;
	/* Release (a plain store on x86-64): wakers read the state only after
	 * taking the lock we release after parking, but a canceller takes no
	 * lock: its claim must see the result and index reset above. */
	__atomic_store_n(&t->wait_state, BATON_WAIT_WAITING, __ATOMIC_RELEASE);
}

static inline struct baton_waiter *baton__wait_add(struct baton_task *t,
						  struct baton_waitq *q,
						  baton_spinlock_t *lock)
{
	struct baton_waiter *w = &t->waiters[t->nwaiters];

	w->task = t;
	w->index = (int)t->nwaiters++;
	w->queue = q;
	w->lock = lock;
	w->value = NULL;
	w->amount = 0;
	baton__waitq_push(q, w);
	for (unsigned i = 0; i < t->nlocks; i++)
		if (t->locks[i] == lock)
			return w;
	t->locks[t->nlocks++] = lock;
	return w;
}

static inline void baton__wait_finish(struct baton_task *t)
{
	if (BATON_UNLIKELY(t->waiters != t->inline_waiters))
		baton__wait_free_many(t);
	t->nwaiters = 0;
	t->nlocks = 0;
	/* Relaxed: only this task reads or writes its state now. */
	__atomic_store_n(&t->wait_state, BATON_WAIT_IDLE, __ATOMIC_RELAXED);
}

/* timer.c */
int64_t baton__deadline_after(int64_t timeout_ns);
int baton__timer_heap_add(struct baton_timer_heap *h,
			 struct baton_timer_node *n);
void baton__timer_heap_remove(struct baton_timer_heap *h,
			     struct baton_timer_node *n);
int64_t baton__timer_heap_next(const struct baton_timer_heap *h);
void baton__timer_heap_fire(struct baton_timer_heap *h, int64_t now);
void baton__timer_heap_fini(struct baton_timer_heap *h);


/* steal.c */
void baton__steal_serve(struct baton_worker *w);
void baton__steal_idle(struct baton_worker *w);
void baton__steal_wake_idle(struct baton_sched *s);

#endif /* BATON_SRC_SCHED_INTERNAL_H */
