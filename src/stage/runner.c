/* SPDX-License-Identifier: MIT */
/*
 * The tasks of a stage with a handler: the dispatcher, which hands the head
 * item to a handler task (a "runner"), and the runners.
 *
 * The dispatcher, per item at the head of the ring, in this order:
 *   1. waits until fewer than `concurrency` handlers run (stage-local, so
 *      waiting here holds nothing another stage could want);
 *   2. acquires every pool the stage needs, in the pools' creation order
 *      (one global order: two dispatchers cannot each hold what the other
 *      waits for), blocking only itself;
 *   3. pops the item (its slot goes to the oldest waiting producer) and
 *      hands it to an idle runner or a new one: the task is spent last.
 * It exists only while items are queued: the submit that finds no
 * dispatcher (`active` false) spawns one, and it returns once the ring is
 * empty. Being the only acquirer, it may read the head before popping it;
 * runners pop too, but only in a stage without needs (can_take), where the
 * dispatcher pops without unlocking in between.
 *
 * A runner, after each item, takes the head itself when it may, else waits
 * as an idle runner for BATON_STAGE_RUNNER_IDLE_NS and ends: a scheduler's
 * run still ends soon after its stages are idle.
 *
 * All these tasks run on the stage's scheduler, so its destroy frees every
 * one of them that had not ended, wherever it was (waiting, in a handler,
 * not yet started), and leaves the counts they kept behind: the stage's
 * watch hears of it (baton__stage_sched_gone) and makes the stage idle.
 */
#include <stdlib.h>

#include "../common/alloc.h"
#include "stage_internal.h"

/* A runner's record, on the heap for the runner's life: its worker (slot)
 * and the item it is given (with its call's record, if the item was
 * called). Whoever hands an idle runner an item writes it here (the
 * runner's waiter value points at it): a copy-stack runner's stack is not
 * addressable while it waits. Listed in the stage, so that a runner freed
 * by the scheduler's destroy does not take its record with it. */
struct stage_runner {
	struct baton_list_node link; /* in st->runners, under st->lock */
	struct baton_stage *st;
	void *item;
	struct stage_call *call;
	baton_task_t *task; /* its handle (BATON_STAGE_CANCEL_ABANDONED) */
	unsigned slot;
};

/* Take the head item for a handler (it counts as running from now on);
 * producers waiting for room move in behind. *call: the item's call
 * record, or NULL. */
static void *pop(struct baton_stage *st, int64_t now, struct baton_wakelist *wl,
		 struct stage_call **call)
{
	void *item = st->ring[st->head].item;

	*call = st->ring[st->head].call;

	st->wait_ns += (uint64_t)(now - st->ring[st->head].t0);
	st->head = (st->head + 1) % st->cap;
	st->count--;
	st->popped++;
	st->running++;
	baton__stage_admit(st, now, wl);
	return item;
}

/* With no needs, a free handler may take the head item itself: nothing
 * must be acquired in the global order first, so the dispatcher (the only
 * acquirer) is not needed to keep that order. */
static bool can_take(const struct baton_stage *st)
{
	return st->nneeds == 0 && st->count > 0 && st->running < st->concurrency;
}

/* Under the lock: the worker (slot) a new item should go to: the fewest
 * busy runners, then one with an idle runner (no spawn); among equals,
 * round robin. `prefer` (a runner's own slot, or -1) wins when it is as
 * little busy as any: it goes on without a hand-off. */
static unsigned pick_slot(struct baton_stage *st, int prefer)
{
	unsigned best, key, k;

	if (st->nslots == 1)
		return 0;
	best = st->next_slot % st->nslots;
	key = 2 * st->slots[best].busy + (st->slots[best].nidle == 0);
	for (unsigned i = 1; i < st->nslots; i++) {
		unsigned s = (best + i) % st->nslots;

		k = 2 * st->slots[s].busy + (st->slots[s].nidle == 0);
		if (k < key)
			best = s, key = k;
	}
	if (prefer >= 0 && st->slots[prefer].busy <= st->slots[best].busy)
		return (unsigned)prefer;
	st->next_slot = best + 1;
	return best;
}

static void runner_task(void *arg);

struct stage_call *baton__stage_current_call(struct baton_stage *st, struct baton_task *t,
					     void *item)
{
	const struct stage_runner *rec;

	if (t->fn != runner_task)
		return NULL;
	/* Our own record: only this task changes its item and call once it
	 * runs a handler, so no lock is needed to read them here. */
	rec = t->arg;
	return rec->st == st && rec->item == item ? rec->call : NULL;
}

bool baton__stage_runners_linked(const struct baton_stage *st)
{
	for (unsigned i = 0; i < st->nslots; i++)
		if (!baton__waitq_empty(&st->slots[i].idle))
			return true;
	return false;
}

/* Tell every idle runner to end (a drainer wants them gone). */
void baton__stage_dismiss_idle(struct baton_stage *st, struct baton_wakelist *wl)
{
	for (unsigned i = 0; i < st->nslots; i++)
		st->slots[i].nidle -=
			(unsigned)baton__waitq_wake_all(&st->slots[i].idle, wl, BATON_ESHUTDOWN);
}

/* Run one item's handler, started at `start`, on a runner of `slot`, and
 * give back its needs; returns the time it ended. A runner that goes on
 * with the next item uses that time as the next start: a clock read costs
 * as much as the rest of a hand-off on some machines, so
 * an item pays for two, the submit's and this one. */
static int64_t run_one(struct baton_stage *st, unsigned slot, void *item, struct stage_call *call,
		       baton_task_t *task, int64_t start)
{
	int64_t end;

	/* A call whose caller has left is not handled: it ends here. */
	if (call == NULL || baton__stage_call_begin(call, task))
		st->fn(item, st->ctx);
	end = baton__clock_now();
	baton__needs_release(st->needs, st->nneeds, false);
	if (call != NULL)
		baton__stage_call_end(call, BATON_OK);
	baton__spin_lock(&st->lock);
	st->running--;
	st->slots[slot].busy--;
	st->completed++;
	st->handler_ns += (uint64_t)(end - start);
	baton__spin_unlock(&st->lock);
	return end;
}

/* The task attributes of a runner of `slot`: bound to that worker when the
 * stage has workers of its own. */
static struct baton_task_attr slot_task_attr(const struct baton_stage *st, unsigned slot)
{
	struct baton_task_attr ta = st->task;

	if (st->nworkers > 0) {
		ta.worker = st->first_worker + (int)slot;
		ta.flags |= BATON_TASK_BOUND;
	}
	return ta;
}

/* Under the lock, which it releases: give `item` (counted as running) to
 * a runner of `slot`: an idle one, or a new one. BATON_ENOMEM if none
 * could be spawned (the slot is not charged then). */
static int start_on_locked(struct baton_stage *st, unsigned slot, void *item,
			   struct stage_call *call)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct stage_slot *sl = &st->slots[slot];
	struct baton_waiter *w = baton__waitq_claim_first(&sl->idle);
	struct baton_task_attr ta;
	struct stage_runner *rec;

	sl->busy++;
	if (w != NULL) { /* one whose idle wait timed out is skipped: leaving */
		sl->nidle--;
		rec = w->value; /* the runner's record: its stack may be away */
		rec->item = item;
		rec->call = call;
		baton__waiter_wake(&wl, w, BATON_OK);
		baton__spin_unlock(&st->lock);
		baton__wakelist_run(&wl);
		return BATON_OK;
	}
	st->nrunners++;
	st->runners_started++;
	ta = slot_task_attr(st, slot);
	baton__spin_unlock(&st->lock);
	rec = baton__malloc(sizeof(*rec));
	if (rec != NULL) {
		rec->st = st;
		rec->item = item;
		rec->call = call;
		rec->slot = slot;
		baton__list_node_init(&rec->link);
		baton__spin_lock(&st->lock);
		baton__list_push_head(&st->runners, &rec->link);
		baton__spin_unlock(&st->lock);
		if (baton_sched_spawn(st->sched, &ta, runner_task, rec) == BATON_OK)
			return BATON_OK;
		baton__spin_lock(&st->lock);
		baton__list_remove(&st->runners, &rec->link);
		baton__spin_unlock(&st->lock);
		baton__free(rec);
	}
	baton__spin_lock(&st->lock);
	sl->busy--;
	st->nrunners--;
	st->runners_started--;
	baton__stage_wake_drainers(st, &wl);
	baton__spin_unlock(&st->lock);
	baton__wakelist_run(&wl);
	return BATON_ENOMEM;
}

int baton__stage_start_locked(struct baton_stage *st, void *item, struct stage_call *call)
{
	return start_on_locked(st, pick_slot(st, -1), item, call);
}

/*
 * After an item, with the lock: find the runner of `slot` its next item.
 * While the head may be taken without the dispatcher, the runner takes it
 * if its worker is as little busy as any, and otherwise starts it on the
 * less busy worker and looks again. Then it waits as an idle runner of its
 * worker. True with rec->item and rec->call set (counted running, charged
 * to the slot) and the lock released; false with the lock held: the runner
 * ends.
 */
static bool next_item(struct baton_stage *st, struct stage_runner *rec, int64_t *t)
{
	struct baton_task *self = baton__task_self();
	unsigned slot = rec->slot;
	struct stage_slot *sl = &st->slots[slot];
	int rc;

	for (;;) {
		struct baton_wakelist wl = BATON_WAKELIST_INIT;

		while (can_take(st)) {
			unsigned to = pick_slot(st, (int)slot);
			struct stage_call *call;
			void *it = pop(st, *t, &wl, &call);

			if (to == slot) {
				sl->busy++;
				rec->item = it;
				rec->call = call;
				baton__spin_unlock(&st->lock);
				baton__wakelist_run(&wl);
				return true;
			}
			baton__spin_unlock(&st->lock);
			baton__wakelist_run(&wl);
			baton__spin_lock(&st->lock);
			if (start_on_locked(st, to, it, call) != BATON_OK) {
				baton__spin_lock(&st->lock); /* no runner there: ours, then */
				sl->busy++;
				rec->item = it;
				rec->call = call;
				baton__spin_unlock(&st->lock);
				return true;
			}
			baton__spin_lock(&st->lock);
		}
		baton__stage_poke(st, &wl); /* a dispatcher waiting for a concurrency slot */
		if (sl->nidle >= st->concurrency) {
			baton__spin_unlock(&st->lock);
			baton__wakelist_run(&wl);
			baton__spin_lock(&st->lock);
			return false; /* enough wait already */
		}
		sl->nidle++;
		baton__spin_unlock(&st->lock);
		baton__wakelist_run(&wl);
		baton__spin_lock(&st->lock);
		if (can_take(st)) { /* arrived while we were unlocked */
			sl->nidle--;
			*t = baton__clock_now();
			continue;
		}
		rc = baton__wait_one_carry(self, &sl->idle, &st->lock,
					   &(struct baton_wait_carry){ .value = rec },
					   BATON_STAGE_RUNNER_IDLE_NS);
		if (rc == BATON_OK) {
			*t = baton__clock_now();
			return true; /* handed an item, counted running and charged */
		}
		baton__spin_lock(&st->lock);
		if (rc != BATON_ESHUTDOWN) /* timed out (or no timer): we left */
			sl->nidle--;
		return false;
	}
}

/*
 * A runner handles items until none comes for BATON_STAGE_RUNNER_IDLE_NS:
 * the item it was started with, then the head of the queue if it may take
 * it, else whatever the dispatcher or a submitter hands it while it waits
 * on its worker's idle queue. Spawning a task per item cost more than the
 * item's hand-off (docs/stages.md); a runner costs one wake-up per item,
 * none while the queue stays non-empty.
 */
static void runner_task(void *arg)
{
	struct stage_runner *rec = arg;
	struct baton_stage *st = rec->st;
	int64_t t = baton__clock_now();

	/* Cancellable: a caller that leaves cancels the handler it left. */
	rec->task = st->flags & BATON_STAGE_CANCEL_ABANDONED ? baton_task_handle() : NULL;
	for (;;) {
		t = run_one(st, rec->slot, rec->item, rec->call, rec->task, t);
		baton__spin_lock(&st->lock);
		rec->call = NULL; /* its handler returned: no more questions */
		/* Cancelled for good: every later wait would fail at once. A
		 * leaving caller cancels before the end's lock, so it is seen. */
		if (rec->task != NULL && baton_task_cancelled() == 1)
			break;
		if (!next_item(st, rec, &t))
			break;
	}
	/* With the lock: end this runner. */
	{
		struct baton_wakelist wl = BATON_WAKELIST_INIT;

		baton__list_remove(&st->runners, &rec->link);
		baton__free(rec); /* a plain free: nothing blocks under the lock */
		st->nrunners--;
		baton__stage_wake_drainers(st, &wl);
		/* Last touch of st: once it is idle, a drainer may destroy it. */
		baton__spin_unlock(&st->lock);
		baton__wakelist_run(&wl);
	}
}

/* Give the item (counted as running) to a runner on the least busy
 * worker; without a runner to be had, the caller (the dispatcher) runs
 * the handler itself. Called without the lock. */
static void start(struct baton_stage *st, void *item, struct stage_call *call)
{
	baton__spin_lock(&st->lock);
	if (baton__stage_start_locked(st, item, call) == BATON_OK)
		return;
	baton__spin_lock(&st->lock);
	st->slots[0].busy++; /* run_one gives it back */
	baton__spin_unlock(&st->lock);
	run_one(st, 0, item, call, NULL, baton__clock_now()); /* not cancellable */
}

/* Block the dispatcher until poked; called and returns with the lock. */
static void dispatcher_wait(struct baton_stage *st, struct baton_task *self)
{
	/* No timeout: no timer to allocate, so the only result is BATON_OK. */
	baton__wait_one(self, &st->dispatcher, &st->lock, -1);
	baton__spin_lock(&st->lock);
}

static void dispatch(void *arg)
{
	struct baton_stage *st = arg;
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_task *self = baton__task_self();
	struct stage_call *call;
	void *item;

	baton__spin_lock(&st->lock);
	for (;;) {
		if (st->count == 0)
			break; /* runners take it from here; a submit kicks again */
		if (st->running >= st->concurrency) {
			dispatcher_wait(st, self);
			continue;
		}
		if (st->nneeds > 0) {
			/* The only acquirer: the head stays put while we wait
			 * for its needs (runners pop only with no needs). */
			baton__spin_unlock(&st->lock);
			for (size_t i = 0; i < st->nneeds; i++)
				/* No timeout: the only result is BATON_OK. */
				baton_pool_acquire(st->needs[i].pool, st->needs[i].units, -1);
			baton__spin_lock(&st->lock);
			while (st->running >= st->concurrency) /* lowered meanwhile */
				dispatcher_wait(st, self);
		}
		item = pop(st, baton__clock_now(), &wl, &call);
		baton__spin_unlock(&st->lock);
		baton__wakelist_run(&wl);
		start(st, item, call);
		baton__spin_lock(&st->lock);
	}
	st->active = false;
	baton__stage_wake_drainers(st, &wl);
	/* Last touch of st: a drainer may destroy it once it has the lock. */
	baton__spin_unlock(&st->lock);
	baton__wakelist_run(&wl);
}

/* Spawn the dispatcher that kick() asked for. On failure nobody
 * dispatches: the next submit, close or drain kicks again. */
int baton__stage_spawn_dispatcher(struct baton_stage *st)
{
	struct baton_task_attr ta;
	int rc;

	/* On the least busy of the stage's workers: on one whose handler
	 * holds it, it would wait for that handler; on the submitter's, it
	 * would share that worker's copy stack with the submitter, whose
	 * item may live on it. */
	baton__spin_lock(&st->lock);
	ta = slot_task_attr(st, pick_slot(st, -1));
	baton__spin_unlock(&st->lock);
	rc = baton_sched_spawn(st->sched, &ta, dispatch, st);

	if (rc != BATON_OK) {
		baton__spin_lock(&st->lock);
		st->active = false;
		baton__spin_unlock(&st->lock);
	}
	return rc;
}

/*
 * The scheduler was destroyed (its watch, stage.h rule 5). Every task of
 * the stage went with it, freed without running on: the dispatcher, the
 * runners busy in a handler or waiting for an item, those not yet started
 * (their records are freed here). Nothing can run what is queued any more.
 * The stage forgets what those tasks counted, drops the queued items (they
 * and the ones whose handler never returned count as rejected), and is
 * closed and idle: it can be destroyed. The waiters of the freed tasks
 * already left its queues. Units of pools that the freed tasks held stay in
 * use (sched.h rule 5).
 */
void baton__stage_sched_gone(struct baton_sched_watch *w)
{
	struct baton_stage *st =
		(struct baton_stage *)((char *)w - offsetof(struct baton_stage, watch));
	struct baton_list runners;
	struct baton_list_node *n;
	size_t lost, head, ndropped;

	baton__spin_lock(&st->lock);
	/* Queued calls end once the lock is released (their callers hear
	 * BATON_ESHUTDOWN); a call whose handler was running went with its
	 * task, and its caller waits until its deadline or cancellation. The
	 * ring is not reused: the stage is closed. */
	head = st->head;
	ndropped = st->count;
	lost = st->count + st->running;
	st->submitted -= lost;
	st->rejected += lost;
	st->count = st->head = 0;
	st->running = 0;
	st->nrunners = 0;
	for (unsigned i = 0; i < st->nslots; i++)
		st->slots[i].nidle = st->slots[i].busy = 0;
	st->active = false;
	st->closed = true;
	st->sched = NULL;      /* freed: nothing may spawn on it */
	runners = st->runners; /* all of them (list.h rule 5) */
	baton__list_init(&st->runners);
	baton__spin_unlock(&st->lock);
	while ((n = baton__list_pop(&runners)) != NULL)
		baton__free(BATON_LIST_ENTRY(n, struct stage_runner, link));
	for (size_t i = 0; i < ndropped; i++) {
		struct stage_call *call = st->ring[(head + i) % st->cap].call;

		if (call != NULL)
			baton__stage_call_end(call, BATON_ESHUTDOWN);
	}
}
