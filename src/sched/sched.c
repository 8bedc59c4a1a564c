/*
 * The scheduler: tasks, workers and the loop each worker runs.
 *
 * A task that blocks or yields switches straight to the next runnable task
 * of its worker (baton__sched_task_after): one switch per hop. What must
 * happen once its context is saved - release the locks it parked under,
 * requeue it, free it - is left in the worker as the after-switch hook and
 * done by whichever side runs next (baton_sched_after_switch). The worker's
 * own loop runs only when no task is runnable, and every 61 dispatches:
 * then it empties its inbox, fires due timers, polls the reactor and
 * answers a thief; with nothing at all to do it parks on its event count.
 *
 * Woken tasks run next (the worker's runnext slot) before the FIFO run
 * queue, at most BATON_SCHED_RUNNEXT_MAX times in a row, and a task woken
 * by a task of another worker of the same scheduler moves to the waker's
 * worker when it can (Go's runnext and ready do the same): partners that
 * talk to each other end up on one worker, and a stolen task pulls its
 * partners along as it wakes them.
 *
 * Worker 0 is the thread that calls baton_sched_run(). Workers 1..N-1 are
 * threads started by the first run and kept, parked, until destroy, so that
 * copy-stack tasks pinned to them can continue in a later run.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../coro/handoff.h"
#include "dispatch.h"
#include "queue.h"
#include "sched_internal.h"

__thread struct baton_worker *baton__worker_self
	__attribute__((tls_model("initial-exec")));

#if !defined(__x86_64__)
/* See sched_internal.h. noipa: no caller may learn that two calls return
 * the same value; the empty asm keeps the body opaque as well. */
__attribute__((noinline, noipa)) struct baton_worker *baton__worker_get(void)
{
	__asm__ __volatile__("" ::: "memory");
	return baton__worker_self;
}
#endif

static bool sched_stopping(struct baton_sched *s)
{
	/* Acquire: pairs with the release store in sched_set_stop, so a worker
	 * that sees stop also sees why (live == 0 or a stop request). */
	return __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE);
}

static void sched_set_stop(struct baton_sched *s)
{
	/* Release: see sched_stopping. */
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < s->nworkers; i++)
		baton__worker_wake(&s->workers[i]);
}

/* Make sure w notices what was just handed to it (its inbox, a stop or a
 * steal answer): bump its event count, and if it sleeps in its poller
 * instead, interrupt that. */
void baton__worker_wake(struct baton_worker *w)
{
	const struct baton_worker_hook *hook;

	baton_ec_inc(&w->ec);
	/* Acquire: the hook is published with its module's state. */
	hook = __atomic_load_n(&w->hook, __ATOMIC_ACQUIRE);
	if (hook == NULL)
		return;
	/* Seq_cst fence: orders what we handed over (inbox push) before the
	 * in_poll load; pairs with the worker's fence between setting in_poll
	 * and its last look at its inbox, so one of us sees the other. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&w->in_poll, __ATOMIC_RELAXED))
		hook->wake(w);
}

/* --- task life cycle ---------------------------------------------------- */
void baton__task_link(struct baton_task *t)
{
	struct baton_sched *s = t->sched;

	t->linked = true;
	baton__spin_lock(&s->all_lock);
	t->all_prev = NULL;
	t->all_next = s->all;
	if (s->all)
		s->all->all_prev = t;
	s->all = t;
	baton__spin_unlock(&s->all_lock);
}

static void all_unlink_locked(struct baton_sched *s, struct baton_task *t)
{
	if (t->all_prev)
		t->all_prev->all_next = t->all_next;
	else
		s->all = t->all_next;
	if (t->all_next)
		t->all_next->all_prev = t->all_prev;
}

/* Unlink the waiters a task still has in primitives' queues (a parked
 * task, or a woken select whose other cases are still linked), so that the
 * primitives can be destroyed later. */
static void unlink_waiters(struct baton_task *t)
{
	baton__wait_unlink_rest(t);
	t->nwaiters = 0;
	if (t->waiters != t->inline_waiters)
		baton__wait_free_many(t);
}

/* A task record: from the calling worker's spares, or new. */
static struct baton_task *task_alloc(void)
{
	struct baton_worker *w = baton__worker_get();
	struct baton_task *t;

	if (w && w->spare) {
		t = w->spare;
		w->spare = t->next;
		w->nspare--;
		return t;
	}
	/* Cache-line aligned: a hop touches the task's first two lines. */
	return baton__aligned(BATON_CACHELINE, sizeof(*t));
}

/* Keep a dead task's record on the calling worker (whatever scheduler it
 * came from: a record is only memory), or free it. Off a worker - a
 * destroy - it is freed. */
static void task_release(struct baton_task *t)
{
	struct baton_worker *w = baton__worker_get();

	if (w && w->nspare < BATON_WORKER_SPARE_TASKS) {
		t->next = w->spare;
		w->spare = t;
		w->nspare++;
		return;
	}
	baton__free(t);
}

/* Free a task that will not run again. */
static void task_free(struct baton_task *t)
{
	if (t->linked) {
		baton__spin_lock(&t->sched->all_lock);
		all_unlink_locked(t->sched, t);
		baton__spin_unlock(&t->sched->all_lock);
	}
	unlink_waiters(t);
	baton_coro_destroy(t->co);
	task_release(t);
}

/* Credits a worker takes from sched->live at a time (see its comment). */
#define LIVE_BATCH 64

/* Count a new task of s in s->live: from the spawning worker's credits
 * when it is one of s's. */
static void live_add(struct baton_sched *s)
{
	struct baton_worker *w = baton__worker_get();

	if (w && w->sched == s) {
		if (BATON_LIKELY(w->live_credit > 0)) {
			w->live_credit--;
			return;
		}
		/* Relaxed: as below; the batch only grows the count. */
		__atomic_add_fetch(&s->live, LIVE_BATCH, __ATOMIC_RELAXED);
		w->live_credit = LIVE_BATCH - 1;
		return;
	}
	/* Relaxed: the count's own modification order is all that matters;
	 * this increment precedes the push that lets the task run (and end). */
	__atomic_add_fetch(&s->live, 1, __ATOMIC_RELAXED);
}

/* Give back what w holds: before it sleeps, and when it leaves the run. */
static void live_return(struct baton_worker *w)
{
	int64_t n = w->live_credit;

	if (n == 0)
		return;
	w->live_credit = 0;
	/* Acq_rel: the decrement that reaches 0 must see every task's
	 * effects before it declares the run over (the caller of run reads
	 * them after it returns); each worker's return releases what its
	 * tasks did. */
	if (__atomic_sub_fetch(&w->sched->live, n, __ATOMIC_ACQ_REL) == 0)
		sched_set_stop(w->sched);
}

static void task_finish(struct baton_worker *w, struct baton_task *t)
{
	if (t->pinned)
		w->npinned--;
	task_free(t);
	w->live_credit++; /* returned by live_return */
}

/* A task woken by a task of another worker (or its poller, or its timers)
 * of the same scheduler comes to the waker's worker, unless it cannot
 * move: pinned copy-stack tasks, bound tasks, and tasks whose timeout is still on their
 * worker's heap (they remove it themselves once woken). */
static bool follows_waker(const struct baton_task *t,
			  const struct baton_worker *self)
{
	/* wait_timed, not timeout.index: the owner's timer heap writes the
	 * index as it fires, while we may be reading. */
	return self->sched == t->sched && !t->pinned && !t->bound && !t->wait_timed;
}

/* Make t runnable on its owner (or, woken, on the waker's worker). A task
 * woken by a running task of its worker runs next (the inline fast path,
 * baton__task_ready); the slot's previous occupant goes behind the queue.
 * New tasks, and batches woken by the loop (timers, poller), keep their
 * order in the queue. */
static void task_enqueue(struct baton_task *t, bool wake)
{
	struct baton_worker *self = baton__worker_get();
	struct baton_worker *owner = t->owner;

	if (wake && self != owner && self && follows_waker(t, self)) {
		t->owner = self;
		owner = self;
	}
	if (BATON_LIKELY(self == owner)) {
		if (wake && self->current != NULL) {
			struct baton_task *prev = self->runnext;

			self->runnext = t;
			if (prev)
				baton__runnext_displace(self, prev);
			return;
		}
		baton__runq_push(self, t);
		if (self->runq_len >= 2 && owner->sched->nworkers > 1)
			baton__steal_wake_idle(owner->sched);
		return;
	}
	if (self)
		self->stats.cross_wakes += wake;
	baton__inbox_push_chain(owner, t, t);
	baton__worker_wake(owner); /* after the push: see queue.h */
}

void baton__runnext_displace(struct baton_worker *w, struct baton_task *prev)
{
	baton__runq_push(w, prev);
	if (w->runq_len >= 2 && w->sched->nworkers > 1)
		baton__steal_wake_idle(w->sched);
}

void baton__task_ready_slow(struct baton_task *t)
{
	task_enqueue(t, true);
}

/* Contended: spin a little (the holder is usually a few dozen instructions
 * from releasing), then give the CPU away, since the holder may have been
 * preempted and spinning would only delay it. */
void baton__spin_lock_slow(baton_spinlock_t *l)
{
	for (unsigned spins = 0;; spins++) {
		/* Relaxed: spin on a plain load so the line stays shared; the
		 * acquiring exchange below is what takes the lock. */
		while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED)) {
			if (spins++ < 128)
				baton__cpu_relax();
			else
				sched_yield();
		}
		if (!__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
			return;
	}
}

/* A task is back on a worker's thread: do what the task that ran before
 * it there asked for once its context was saved. */
__attribute__((noinline)) void baton__after_switch_slow(struct baton_worker *w,
						      struct baton_task *t)
{
	switch (w->after_kind) {
	case BATON_AFTER_YIELD:
		baton__runq_push(w, t);
		break;
	case BATON_AFTER_PARK:
		/* Its context is saved: now wakers may have it. Once its last
		 * lock is released it may run elsewhere and start another wait,
		 * so read nothing of it after that: release from the last, and
		 * read count and array first. (While any of its locks is still
		 * held, it cannot get past unlinking its other waiters.) */
		{
			baton_spinlock_t **locks = t->locks;

			for (unsigned i = t->nlocks; i-- > 0;)
				baton__spin_unlock(locks[i]);
		}
		break;
	case BATON_AFTER_DONE:
		task_finish(w, t);
		break;
	default:
		break;
	}
}

void baton__sched_task_after(struct baton_task *t, enum baton_after after)
{
	baton__switch_away(t, after);
	/* Resumed, perhaps on another worker: t->owner is the one running
	 * us now (whoever dispatched us set it). */
	baton__after_switch(t->owner);
}

static void *task_main(void *arg, void *in)
{
	struct baton_task *t = arg;

	(void)in;
	baton__after_switch(t->owner);
	t->fn(t->arg);
	baton__switch_away(t, BATON_AFTER_DONE);
	return NULL;
}

static void run_task(struct baton_worker *w, struct baton_task *t)
{
	int rc;

	w->current = t;
	w->ticks++;
	rc = baton_coro_resume(t->co, NULL, NULL);
	w->current = NULL;
	if (BATON_UNLIKELY(rc != BATON_OK)) {
		/* Only a copy-stack save buffer that could not grow gets here
		 * (BATON_ENOMEM; run refuses a thread on which pinned tasks
		 * could not run): nothing ran; try again after the others. */
		baton__runq_push(w, t);
		return;
	}
	/* Whichever task switched back to us left its hook. */
	baton__after_switch(w);
}

/* --- the worker loop ------------------------------------------------------ */
/* The worker ends (the scheduler is destroyed): so does its hook's state. */
static void worker_hook_fini(struct baton_worker *w)
{
	if (w->hook)
		w->hook->fini(w); /* clears w->hook */
}

static bool runnable(const struct baton_worker *w)
{
	return w->runnext != NULL || w->runq_head != NULL;
}

static void poll_worker(struct baton_worker *w)
{
	w->ticks = 0;
	if (w->hook)
		w->hook->poll(w, 0); /* I/O edges make tasks runnable */
	baton__inbox_take(w);
	if (w->timers.len)
		baton__timer_heap_fire(&w->timers, baton__clock_now());
	/* Work arrived from elsewhere (spawns, wake-ups) while a worker
	 * sleeps: let it ask for some. */
	if (w->runq_len >= 2 && w->sched->nworkers > 1)
		baton__steal_wake_idle(w->sched);
}

static void worker_idle(struct baton_worker *w)
{
	struct baton_sched *s = w->sched;
	uint32_t version = baton_ec_value(&w->ec); /* before the last checks */
	int64_t timeout = -1, next;

	/* Answer (with nothing) a thief that asked while we ran dry. */
	if (__atomic_load_n(&w->steal_req, __ATOMIC_RELAXED))
		baton__steal_serve(w);
	if (!baton__inbox_empty(w) || sched_stopping(s))
		return;
	if (s->nworkers > 1) {
		baton__steal_idle(w); /* may post a request and wait briefly */
		/* Re-read the version before the last look at everything
		 * that bumps it (inbox, stop, steal answers): a stop raised
		 * between a look and a later read would leave us asleep on
		 * a version that already counts its bump. */
		version = baton_ec_value(&w->ec);
		if (!baton__inbox_empty(w) || runnable(w) || sched_stopping(s))
			return;
	}
	next = baton__timer_heap_next(&w->timers);
	if (next != INT64_MAX) {
		timeout = next - baton__clock_now();
		if (timeout <= 0)
			return;
	}
	/* Relaxed: parked/nparked are hints for wake_idle; a wake-up itself
	 * never depends on them, only on the event count (or poller). */
	__atomic_store_n(&w->parked, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->nparked, 1, __ATOMIC_RELAXED);
	if (w->hook) {
		__atomic_store_n(&w->in_poll, 1, __ATOMIC_RELAXED);
		/* Seq_cst fence: in_poll is visible before our last look at
		 * the inbox; pairs with the fence in baton__worker_wake. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (baton__inbox_empty(w) && !sched_stopping(s))
			w->hook->poll(w, timeout);
		__atomic_store_n(&w->in_poll, 0, __ATOMIC_RELAXED);
	} else {
		baton_ec_wait_mp(&w->ec, version, timeout);
	}
	__atomic_sub_fetch(&s->nparked, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&w->parked, 0, __ATOMIC_RELAXED);
}

static void worker_loop(struct baton_worker *w)
{
	struct baton_sched *s = w->sched;
	struct baton_worker *outer = baton__worker_get(); /* a run inside a task */
	uint64_t copied = baton__coro_thread_copied();
	struct baton_task *t;

	baton__worker_self = w;
	for (;;) {
		if (BATON_UNLIKELY(w->ticks >= BATON_POLL_TICKS ||
				   !runnable(w))) {
			poll_worker(w);
			if (sched_stopping(s))
				break;
			if (!runnable(w)) {
				live_return(w); /* may end the run */
				worker_idle(w);
				continue;
			}
		}
		/* Relaxed peek; baton__steal_serve takes the request with an
		 * acquiring exchange. */
		if (BATON_UNLIKELY(__atomic_load_n(&w->steal_req, __ATOMIC_RELAXED)))
			baton__steal_serve(w);
		t = baton__take_next(w);
		if (t)
			run_task(w, t);
	}
	if (__atomic_load_n(&w->steal_req, __ATOMIC_RELAXED))
		baton__steal_serve(w);
	live_return(w);
	w->stats.copied_bytes += baton__coro_thread_copied() - copied;
	baton__worker_self = outer;
}

/* Tasks still queued at destroy: runnable ones are in run queues and
 * inboxes; parked ones are known only to their primitives, so every task is
 * also counted in `live`, and destroy reports those it could not reach.
 * Each worker frees its own, on its own thread: a copy-stack task that ran
 * there can only be destroyed by that thread (its frames' home). */
static void free_queued(struct baton_worker *w)
{
	struct baton_task *t;

	baton__inbox_take(w);
	if (w->runnext) {
		baton__runq_push(w, w->runnext);
		w->runnext = NULL;
	}
	while ((t = baton__runq_pop(w)) != NULL) {
		if (t->timeout.index != SIZE_MAX)
			baton__timer_heap_remove(&w->timers, &t->timeout);
		task_free(t);
		/* Relaxed: destroy reads it after joining every worker. */
		__atomic_sub_fetch(&w->sched->live, 1, __ATOMIC_RELAXED);
	}
}

/*
 * At destroy: free the tasks that are blocked (parked on a primitive, on
 * I/O, asleep), released without running: their waiters leave the
 * primitives' queues and their stacks are freed without unwinding (rule 5
 * of sched.h). With `only`, just the copy-stack tasks pinned to that
 * worker (they must be freed on its thread: their frames live on its shared
 * stack); without, all that are left. No worker runs, and no other thread
 * may touch the tasks' primitives now (rule 5), so nobody claims them.
 */
static void free_blocked(struct baton_sched *s, struct baton_worker *only)
{
	struct baton_task *mine = NULL, *t, *next;

	baton__spin_lock(&s->all_lock);
	for (t = s->all; t; t = next) {
		next = t->all_next;
		if (only && !(t->pinned && t->owner == only))
			continue;
		all_unlink_locked(s, t);
		t->all_next = mine;
		mine = t;
	}
	baton__spin_unlock(&s->all_lock);
	for (t = mine; t; t = next) {
		next = t->all_next;
		/* The timer heaps are gone or going: forget the timeout. */
		t->timeout.index = SIZE_MAX;
		if (t->pinned)
			t->owner->npinned--;
		t->linked = false; /* unlinked above */
		task_free(t);
		/* Relaxed: destroy reads it after joining every worker. */
		__atomic_sub_fetch(&s->live, 1, __ATOMIC_RELAXED);
	}
}

/* --- worker threads ------------------------------------------------------- */
static void *worker_thread(void *arg)
{
	struct baton_worker *w = arg;
	struct baton_sched *s = w->sched;
	struct baton_sched_ctl *c = &s->ctl;
	int seen = 0;

	for (;;) {
		uint32_t v = baton_ec_value(&c->start);
		/* Acquire: pairs with run's release increment of generation,
		 * so this run's spawns and flags are visible. */
		int gen = __atomic_load_n(&c->generation, __ATOMIC_ACQUIRE);

		if (__atomic_load_n(&c->destroying, __ATOMIC_ACQUIRE)) {
			free_queued(w);
			free_blocked(s, w); /* its copy-stack tasks, on its thread */
			break; /* destroy ends its hook, once no task waits */
		}
		if (gen == seen) {
			baton_ec_wait_mp(&c->start, v, -1);
			continue;
		}
		seen = gen;
		worker_loop(w);
		/* Release: our tasks' effects happen before run returns. */
		__atomic_sub_fetch(&c->active, 1, __ATOMIC_RELEASE);
		baton_ec_inc(&c->done);
	}
	return NULL;
}

static int start_threads(struct baton_sched *s)
{
	for (unsigned i = 1; i < s->nworkers; i++) {
		struct baton_worker *w = &s->workers[i];

		if (w->has_thread)
			continue;
		if (pthread_create(&w->thread, NULL, worker_thread, w) != 0)
			return BATON_ESYS;
		w->has_thread = true;
	}
	return BATON_OK;
}

/* --- watches ---------------------------------------------------------------- */
/* Every scheduler's watch list: a stage's destroy may race its scheduler's,
 * and then only a lock that outlives both can say which came first. */
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;

void baton__sched_watch(struct baton_sched *s, struct baton_sched_watch *w)
{
	pthread_mutex_lock(&watch_lock);
	w->sched = s;
	w->prev = NULL;
	w->next = s->watches;
	if (s->watches)
		s->watches->prev = w;
	s->watches = w;
	pthread_mutex_unlock(&watch_lock);
}

void baton__sched_unwatch(struct baton_sched_watch *w)
{
	pthread_mutex_lock(&watch_lock);
	if (w->sched) {
		if (w->prev)
			w->prev->next = w->next;
		else
			w->sched->watches = w->next;
		if (w->next)
			w->next->prev = w->prev;
		w->sched = NULL;
	}
	pthread_mutex_unlock(&watch_lock);
}

/* Destroy, its tasks freed: tell the watchers. Under the lock, so that
 * none of them is freed (unwatched) while its `gone` runs. */
static void watches_gone(struct baton_sched *s)
{
	pthread_mutex_lock(&watch_lock);
	for (struct baton_sched_watch *w = s->watches, *next; w; w = next) {
		next = w->next;
		w->sched = NULL;
		w->gone(w);
	}
	s->watches = NULL;
	pthread_mutex_unlock(&watch_lock);
}

/* --- public API ----------------------------------------------------------- */
int baton_sched_create(baton_sched_t **out, const struct baton_sched_attr *attr)
{
	struct baton_sched *s;
	unsigned n = attr ? attr->workers : 1;

	if (out == NULL || n > BATON_SCHED_MAX_WORKERS ||
	    (attr && (attr->io_backend < 0 ||
		      attr->io_backend > BATON__IO_BACKEND_MAX)))
		return BATON_EINVAL;
	if (n == 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		n = cpus > 0 ? (unsigned)cpus : 1;
		if (n > BATON_SCHED_MAX_WORKERS)
			n = BATON_SCHED_MAX_WORKERS;
	}
	s = baton__calloc(1, sizeof(*s));
	if (s == NULL)
		return BATON_ENOMEM;
	if ((s->workers = baton__aligned(BATON_CACHELINE, n * sizeof(*s->workers))) == NULL) {
		baton__free(s);
		return BATON_ENOMEM;
	}
	memset(s->workers, 0, n * sizeof(*s->workers));
	s->nworkers = n;
	s->io_backend = attr ? attr->io_backend : 0;
	for (unsigned i = 0; i < n; i++) {
		s->workers[i].index = i;
		s->workers[i].sched = s;
		baton_ec_init(&s->workers[i].ec);
	}
	baton_ec_init(&s->ctl.start);
	baton_ec_init(&s->ctl.done);
	*out = s;
	return BATON_OK;
}

static struct baton_worker *pick_worker(struct baton_sched *s, int index)
{
	struct baton_worker *self = baton__worker_get();

	if (index >= 0)
		return &s->workers[index];
	if (self && self->sched == s)
		return self;
	/* Relaxed: only spreads spawns, orders nothing. */
	return &s->workers[__atomic_fetch_add(&s->next_worker, 1,
					      __ATOMIC_RELAXED) % s->nworkers];
}

int baton_sched_spawn(baton_sched_t *s, const struct baton_task_attr *attr,
		      baton_task_fn fn, void *arg)
{
	static const struct baton_task_attr defaults = BATON_TASK_ATTR_INIT;
	struct baton_task *t;
	int rc;

	if (s == NULL || fn == NULL)
		return BATON_EINVAL;
	if (attr == NULL)
		attr = &defaults;
	if (attr->worker < BATON_SCHED_ANY_WORKER ||
	    (attr->worker >= 0 && (unsigned)attr->worker >= s->nworkers) ||
	    (attr->flags & ~BATON_TASK_BOUND))
		return BATON_EINVAL;
	if (__atomic_load_n(&s->ctl.destroying, __ATOMIC_RELAXED))
		return BATON_ESHUTDOWN;
	if ((t = task_alloc()) == NULL)
		return BATON_ENOMEM;
	baton__zero(t, sizeof(*t));
	rc = baton_coro_create(&t->co, &attr->coro, task_main, t);
	if (rc != BATON_OK) {
		task_release(t);
		return rc;
	}
	/* At rest a task's waiters are its inline ones, each knowing its
	 * task and index (wait_add and the wide select's block set them
	 * again; baton__wait_one_inline counts on them). */
	t->waiters = t->inline_waiters;
	t->locks = t->inline_locks;
	for (unsigned i = 0; i < BATON_TASK_INLINE_WAITERS; i++) {
		t->inline_waiters[i].task = t;
		t->inline_waiters[i].index = (int)i;
	}
	t->sched = s;
	t->fn = fn;
	t->arg = arg;
	t->timeout.index = SIZE_MAX;
	t->copystack = attr->coro.model == BATON_CORO_COPYSTACK;
	t->owner = pick_worker(s, attr->worker);
	t->bound = (attr->flags & BATON_TASK_BOUND) != 0;
	live_add(s);
	task_enqueue(t, false);
	return BATON_OK;
}

int baton_sched_run(baton_sched_t *s)
{
	struct baton_sched_ctl *c;
	struct baton_worker *self;
	int rc;

	if (s == NULL)
		return BATON_EINVAL;
	self = baton__worker_get();
	if (self && self->sched == s)
		return BATON_EBUSY;
	c = &s->ctl;
	int expected = 0;
	/* Acquire: this run sees everything the previous run left. */
	if (!__atomic_compare_exchange_n(&s->running, &expected, 1, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return BATON_EBUSY;
	/* Copy-stack tasks that ran on worker 0 have their frames at the
	 * addresses of that thread's shared stack: only it can continue them. */
	if (s->workers[0].npinned > 0 && !pthread_equal(s->run_thread, pthread_self())) {
		__atomic_store_n(&s->running, 0, __ATOMIC_RELEASE);
		return BATON_ETHREAD;
	}
	s->run_thread = pthread_self();
	/* Relaxed: published to the helpers by the generation release below. */
	__atomic_store_n(&s->stop, __atomic_load_n(&s->live, __ATOMIC_ACQUIRE) == 0,
			 __ATOMIC_RELAXED);
	rc = start_threads(s);
	__atomic_store_n(&c->active, (int)s->nworkers - 1, __ATOMIC_RELAXED);
	/* Release: the helpers that see the new generation see stop/active. */
	__atomic_add_fetch(&c->generation, 1, __ATOMIC_RELEASE);
	baton_ec_inc(&c->start);
	/* Helpers that could not be started never decrement `active`. */
	for (unsigned i = 1; i < s->nworkers; i++)
		if (!s->workers[i].has_thread)
			__atomic_sub_fetch(&c->active, 1, __ATOMIC_RELAXED);
	worker_loop(&s->workers[0]);
	for (;;) {
		uint32_t v = baton_ec_value(&c->done);

		/* Acquire: pairs with each helper's release decrement. */
		if (__atomic_load_n(&c->active, __ATOMIC_ACQUIRE) == 0)
			break;
		baton_ec_wait_mp(&c->done, v, -1);
	}
	/* Release: pairs with the next run's acquiring CAS. */
	__atomic_store_n(&s->running, 0, __ATOMIC_RELEASE);
	return rc;
}

int baton_sched_stop(baton_sched_t *s)
{
	if (s == NULL)
		return BATON_EINVAL;
	sched_set_stop(s);
	return BATON_OK;
}

int baton_sched_stats(const baton_sched_t *s, struct baton_sched_stats *out)
{
	struct baton_sched_stats sum = { 0 };

	if (s == NULL || out == NULL)
		return BATON_EINVAL;
	/* Acquire: pairs with the release that ends a run, so the workers'
	 * plain counter updates are visible. */
	if (__atomic_load_n(&s->running, __ATOMIC_ACQUIRE))
		return BATON_EBUSY;
	for (unsigned i = 0; i < s->nworkers; i++) {
		const struct baton_sched_stats *w = &s->workers[i].stats;

		sum.dispatches += w->dispatches;
		sum.handoffs += w->handoffs;
		sum.cross_wakes += w->cross_wakes;
		sum.steals += w->steals;
		sum.fair_turns += w->fair_turns;
		sum.copied_bytes += w->copied_bytes;
	}
	*out = sum;
	return BATON_OK;
}

int baton_sched_workers(const baton_sched_t *s)
{
	return s ? (int)s->nworkers : BATON_EINVAL;
}

int baton_sched_destroy(baton_sched_t *s)
{
	struct baton_sched_ctl *c;

	if (s == NULL)
		return BATON_OK;
	if (__atomic_load_n(&s->running, __ATOMIC_ACQUIRE))
		return BATON_EBUSY;
	c = &s->ctl;
	/* Release: helpers that see destroying exit their outer loop. */
	__atomic_store_n(&c->destroying, 1, __ATOMIC_RELEASE);
	baton_ec_inc(&c->start);
	for (unsigned i = 1; i < s->nworkers; i++)
		if (s->workers[i].has_thread)
			pthread_join(s->workers[i].thread, NULL);
	for (unsigned i = 0; i < s->nworkers; i++)
		if (i == 0 || !s->workers[i].has_thread)
			free_queued(&s->workers[i]); /* the others freed theirs */
	/* The helpers freed their pinned copy-stack tasks; what is left
	 * (blocked stackful tasks, worker 0's copy-stack ones, copy-stack
	 * ones that never ran) is freed here, on the run's thread. */
	free_blocked(s, NULL);
	watches_gone(s); /* stages: their tasks are gone */
	/* Now no task waits on anything: the hooks (the reactors, which free
	 * the handles left open) can go, every worker's here. */
	for (unsigned i = 0; i < s->nworkers; i++) {
		struct baton_worker *w = &s->workers[i];

		worker_hook_fini(w);
		baton__timer_heap_fini(&w->timers);
		while (w->spare) {
			struct baton_task *t = w->spare;

			w->spare = t->next;
			baton__free(t);
		}
	}
	baton__free(s->workers);
	baton__free(s);
	return BATON_OK;
}

/* --- calls from tasks ----------------------------------------------------- */
int baton_sched_yield(void)
{
	struct baton_task *t = baton__task_self();

	if (t == NULL)
		return BATON_ENOSCHED;
	/* Alone on the worker: let the loop look at I/O, timers and the
	 * inbox before it runs us again; they may hold tasks that would
	 * otherwise wait for the next poll tick while we keep yielding. */
	if (!runnable(t->owner))
		t->owner->ticks = BATON_POLL_TICKS;
	/* Not alone: tasks sent here by other workers (a request handed to
	 * a compute worker whose handlers compute in slices) queue behind the
	 * yielders now, not after up to BATON_POLL_TICKS more slices. */
	else if (!baton__inbox_empty(t->owner))
		baton__inbox_take(t->owner);
	baton__sched_task_after(t, BATON_AFTER_YIELD);
	return BATON_OK;
}

baton_sched_t *baton_sched_self(void)
{
	struct baton_worker *w = baton__worker_get();

	return w && w->current ? w->sched : NULL;
}

int baton_sched_worker_index(void)
{
	struct baton_worker *w = baton__worker_get();

	return w && w->current ? (int)w->index : -1;
}
