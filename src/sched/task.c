/* SPDX-License-Identifier: MIT */
/*
 * A task's life: spawned (its record, from the worker's spares; its place
 * in sched->live and, once it stops, in sched->all), made runnable (its
 * worker's runnext slot, the run queue, or another worker's inbox), and
 * ended (freed on its worker, or by the scheduler's destroy while blocked
 * or queued). How it switches away and back is hop.h and hop.c.
 */
#include "../common/alloc.h"
#include "hop.h"
#include "handle.h"
#include "queue.h"
#include "sched_internal.h"
#include "wait.h"

/* --- records, counts, the end ---------------------------------------------- */
void baton__task_link(struct baton_task *t)
{
	struct baton_sched *s = t->owner->sched;

	t->linked = true;
	baton__spin_lock(&s->all_lock);
	baton__list_push_head(&s->all, &t->all_link);
	baton__spin_unlock(&s->all_lock);
}

/* Unlink the waiters a task still has in primitives' queues (a parked
 * task, or a woken select whose other cases are still linked), so that the
 * primitives can be destroyed later. */
static void unlink_waiters(struct baton_task *t)
{
	if (t->nwaiters != 0)
		baton__wait_unlink_rest(t);
	t->nwaiters = 0;
	if (t->waiters != t->inline_waiters)
		baton__wait_free_many(t);
}

/* A task's record is the head of its coroutine (see
 * baton__coro_create_headed): the size of that head. A copy-stack one is
 * in the coroutine's heap block, where 16 bytes align it; a stackful one
 * is at the top of the stack, where it starts a cache line of its own. */
#define TASK_HEAD ((sizeof(struct baton_task) + 15) & ~(size_t)15)
#define TASK_HEAD_STACKFUL \
	((sizeof(struct baton_task) + BATON_CACHELINE - 1) & ~(size_t)(BATON_CACHELINE - 1))

/* A copy-stack task's record, new (zero) or as its last task left it
 * (task_free): made to read as zeroed where spawn counts on it - the hop's
 * line, whose flags and counts a life changed - without clearing the rest.
 * The waiters' other fields are set by every wait that links them
 * (wait.h); the timeout's, by every arming; the links in sched->all, by
 * baton__task_link; and a freed task has no waiters left (unlink_waiters).
 * Spawn sets what remains. (A stackful task's record is cleared whole: a
 * recycled stack's top holds whatever its last coroutine left there.) */
static void task_renew(struct baton_task *t)
{
	baton__zero(t, offsetof(struct baton_task, inline_waiters));
}

/* Free a task that will not run again. Its record goes with its
 * coroutine. */
static __attribute__((noinline)) void task_free_general(struct baton_task *t)
{
	if (t->linked) {
		struct baton_sched *s = t->owner->sched;

		baton__spin_lock(&s->all_lock);
		baton__list_remove(&s->all, &t->all_link);
		baton__spin_unlock(&s->all_lock);
	}
	unlink_waiters(t);
	baton_coro_destroy(t->co);
}

/* The common end of a task that never stopped (not in sched->all, no
 * waiters): only its coroutine to give back, in a tail call. */
static inline void task_free(struct baton_task *t)
{
	if (BATON_LIKELY(!t->linked && t->nwaiters == 0 && t->waiters == t->inline_waiters)) {
		(void)baton_coro_destroy(t->co);
		return;
	}
	task_free_general(t);
}

/* Credits a worker takes from sched->live at a time (see its comment). */
#define LIVE_BATCH 64

/* Count a new task of s in s->live: from the spawning worker's credits
 * when it is one of s's. */
static inline __attribute__((always_inline)) void live_add(struct baton_sched *s)
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

/* Its function returned and it has switched away for good (the
 * after-switch hook, hop.c): free it on w. */
void baton__task_finish(struct baton_worker *w, struct baton_task *t)
{
	if (t->pinned)
		w->npinned--;
	w->live_credit++; /* returned by live_return */
	task_free(t);
}

/* Tasks still queued at destroy: runnable ones are in run queues and
 * inboxes; parked ones are known only to their primitives, so every task is
 * also counted in `live`, and destroy reports those it could not reach.
 * Each worker frees its own, on its own thread: a copy-stack task that ran
 * there can only be destroyed by that thread (its frames' home). */
void baton__task_free_queued(struct baton_worker *w)
{
	struct baton_task *t;

	baton__tslot_cache_flush(w); /* its spare task-id slots */
	baton__inbox_take(w);
	if (w->runnext) {
		baton__runq_push(w, w->runnext);
		w->runnext = NULL;
	}
	while ((t = baton__runq_pop(w)) != NULL) {
		if (t->timeout.index != SIZE_MAX)
			baton__timer_heap_remove(&w->timers, &t->timeout);
		baton__task_abandon(t); /* its id and groups */
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
void baton__task_free_blocked(struct baton_sched *s, struct baton_worker *only)
{
	struct baton_list mine = BATON_LIST_INIT;
	struct baton_list_node *n;
	struct baton_task *t, *next;

	baton__spin_lock(&s->all_lock);
	BATON_LIST_FOR_EACH_SAFE (t, next, &s->all, all_link) {
		if (only && !(t->pinned && t->owner == only))
			continue;
		baton__list_remove(&s->all, &t->all_link);
		baton__list_push_head(&mine, &t->all_link);
	}
	baton__spin_unlock(&s->all_lock);
	while ((n = baton__list_pop(&mine)) != NULL) {
		t = BATON_LIST_ENTRY(n, struct baton_task, all_link);
		/* The timer heaps are gone or going: forget the timeout. */
		t->timeout.index = SIZE_MAX;
		if (t->pinned)
			t->owner->npinned--;
		t->linked = false;      /* unlinked above */
		baton__task_abandon(t); /* its id and groups */
		task_free(t);
		/* Relaxed: destroy reads it after joining every worker. */
		__atomic_sub_fetch(&s->live, 1, __ATOMIC_RELAXED);
	}
}

/* --- runnable --------------------------------------------------------------
 * Woken tasks run next (the worker's runnext slot) before the FIFO run
 * queue, at most BATON_SCHED_RUNNEXT_MAX times in a row, and a task woken
 * by a task of another worker of the same scheduler moves to the waker's
 * worker when it can (Go's runnext and ready do the same): partners that
 * talk to each other end up on one worker, and a stolen task pulls its
 * partners along as it wakes them. */
/* A task woken by a task of another worker (or its poller, or its timers)
 * of the same scheduler comes to the waker's worker, unless it cannot
 * move: pinned copy-stack tasks, bound tasks, and tasks whose timeout is still on their
 * worker's heap (they remove it themselves once woken). */
static bool follows_waker(const struct baton_task *t, const struct baton_worker *self)
{
	/* wait_timed, not timeout.index: the owner's timer heap writes the
	 * index as it fires, while we may be reading. */
	return self->sched == t->owner->sched && !t->pinned && !t->bound && !t->wait_timed;
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
			baton__runnext_put(self, t);
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

void baton__task_ready_back(struct baton_task *t)
{
	task_enqueue(t, false);
}

/* --- spawn ----------------------------------------------------------------- */
static void *task_main(void *arg, void *in)
{
	struct baton_task *t = arg;

	(void)in;
	baton__after_switch(t->owner);
	if (t->copystack) {
		t->pinned = true; /* its frames live on this thread from now */
		t->owner->npinned++;
	}
	t->fn(t->arg);
	if (BATON_UNLIKELY(t->groups != NULL))
		baton__task_close_groups(t); /* its groups end before it does */
	baton__switch_away(t, BATON_AFTER_DONE);
	return NULL;
}

static inline __attribute__((always_inline)) struct baton_worker *pick_worker(struct baton_sched *s,
									      int index)
{
	struct baton_worker *self = baton__worker_get();

	if (index >= 0)
		return &s->workers[index];
	if (self && self->sched == s)
		return self;
	/* Relaxed: only spreads spawns, orders nothing. */
	return &s->workers[__atomic_fetch_add(&s->next_worker, 1, __ATOMIC_RELAXED) % s->nworkers];
}

/* The task's coroutine: sharing its worker's FP state unless the task
 * asks for its own, which is then confined to it (sched.h rule 6). */
static inline __attribute__((always_inline)) int
create_task_coro(baton_coro_t **co, const struct baton_task_attr *attr, bool copystack)
{
	struct baton_coro_attr ca = attr->coro;

	if (attr->flags & BATON_TASK_OWN_FPENV) {
		if (ca.flags & BATON_CORO_SHARED_FPENV)
			return BATON_EINVAL;
		ca.flags |= BATON__CORO_FP_CONFINED;
	} else {
		ca.flags |= BATON_CORO_SHARED_FPENV;
	}
	return baton__coro_create_headed(co, &ca, task_main,
					 copystack ? TASK_HEAD : TASK_HEAD_STACKFUL);
}

/* The first half of a spawn: the task made, not yet runnable (nothing else
 * can reach it); task_start is the second. Split for a spawn with an id,
 * which gives the slot its task in between (baton__task_spawn_held). */
static inline __attribute__((always_inline)) int task_create(baton_sched_t *s,
							     const struct baton_task_attr *attr,
							     baton_task_fn fn, void *arg,
							     struct baton_task **out)
{
	static const struct baton_task_attr defaults = BATON_TASK_ATTR_INIT;
	struct baton_task *t;
	baton_coro_t *co;
	bool copystack;
	int rc;

	if (s == NULL || fn == NULL)
		return BATON_EINVAL;
	if (attr == NULL)
		attr = &defaults;
	if (attr->worker < BATON_SCHED_ANY_WORKER ||
	    (attr->worker >= 0 && (unsigned)attr->worker >= s->nworkers) ||
	    (attr->flags & ~(BATON_TASK_BOUND | BATON_TASK_OWN_FPENV)))
		return BATON_EINVAL;
	if (__atomic_load_n(&s->ctl.destroying, __ATOMIC_RELAXED))
		return BATON_ESHUTDOWN;
	/* The record is the head of its coroutine: one block with the
	 * control block (copy-stack), or at the top of the stack, by the
	 * frames a hop touches (stackful). */
	copystack = attr->coro.model == BATON_CORO_COPYSTACK;
	rc = create_task_coro(&co, attr, copystack);
	if (rc != BATON_OK)
		return rc;
	t = (struct baton_task *)co->arg;
	if (copystack)
		task_renew(t);
	else
		baton__zero(t, sizeof(*t));
	t->co = co;
	t->copystack = copystack;
	/* At rest a task's waiters are its inline ones, each knowing its
	 * task and index (wait_add and the wide select's block set them
	 * again; baton__wait_one_inline counts on them). */
	t->waiters = t->inline_waiters;
	t->locks = t->inline_locks;
	for (unsigned i = 0; i < BATON_TASK_INLINE_WAITERS; i++) {
		t->inline_waiters[i].task = t;
		t->inline_waiters[i].index = (int)i;
	}
	t->fn = fn;
	t->arg = arg;
	t->timeout.index = SIZE_MAX;
	t->owner = pick_worker(s, attr->worker);
	t->bound = (attr->flags & BATON_TASK_BOUND) != 0;
	*out = t;
	return BATON_OK;
}

/* The second half: counted live and made runnable. */
static inline void task_start(baton_sched_t *s, struct baton_task *t)
{
	live_add(s);
	task_enqueue(t, false);
}

/* A spawn with an id: the task is made, given to its slot (handle.h),
 * then made runnable. Two copies, `own` a constant in each. */
static inline __attribute__((always_inline)) int
spawn_held(baton_sched_t *s, const struct baton_task_attr *attr, struct baton_tslot *sl, bool own)
{
	struct baton_task *t;
	int rc = task_create(s, attr, baton__tslot_main, sl, &t);

	if (BATON_UNLIKELY(rc != BATON_OK)) {
		if (own)
			baton__tslot_unspawned(sl);
		return rc;
	}
	baton__tslot_set_task(sl, t);
	task_start(s, t);
	return BATON_OK;
}

int baton__task_spawn_held(baton_sched_t *s, const struct baton_task_attr *attr,
			   struct baton_tslot *sl)
{
	return spawn_held(s, attr, sl, false);
}

int baton__task_spawn_own(baton_sched_t *s, const struct baton_task_attr *attr,
			  struct baton_tslot *sl)
{
	return spawn_held(s, attr, sl, true);
}

int baton_sched_spawn(baton_sched_t *s, const struct baton_task_attr *attr, baton_task_fn fn,
		      void *arg)
{
	struct baton_task *t;
	int rc = task_create(s, attr, fn, arg, &t);

	if (rc == BATON_OK)
		task_start(s, t);
	return rc;
}
