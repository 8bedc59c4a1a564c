/*
 * Stages: a bounded ring of items, a dispatcher task that hands the head
 * item to a handler task (a "runner"), the runners, and the counters.
 *
 * Everything mutable lives under the stage's spinlock; a task blocks on one
 * of four wait queues of the stage (the wait protocol of
 * src/sched/sched_internal.h, through baton__wait_one):
 *   producers   submitters finding the queue full; the waiter carries the
 *               item, and whoever frees a slot moves that item into the
 *               ring and wakes its producer (FIFO hand-off: nobody barges)
 *   dispatcher  the dispatcher, waiting for a concurrency slot
 *   drainers    tasks in baton_stage_drain, woken when the stage is idle
 *   runners     idle runners; whoever hands one an item puts it in the
 *               waiter (count it running first)
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
 */
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "stage_internal.h"

/* A handler task's argument. */
struct job {
	struct baton_stage *st;
	void *item;
};

/* --- under the lock ---------------------------------------------------------- */

static void push(struct baton_stage *st, void *item, int64_t now)
{
	struct stage_entry *e = &st->ring[(st->head + st->count) % st->cap];

	e->item = item;
	e->t0 = now;
	st->count++;
	st->submitted++;
}

/* The helpers that wake tasks claim them into `wl`; the caller readies
 * them with baton_wakelist_run() once it has released the lock. */

/* Wake the dispatcher if it waits: it re-checks what it waits for. */
static void poke(struct baton_stage *st, struct baton_wakelist *wl)
{
	struct baton_waiter *w = baton_waitq_claim_first(&st->dispatcher);

	if (w)
		baton_waiter_wake(wl, w, BATON_OK);
}

/* Move waiting producers' items into free slots, oldest first. */
static void admit(struct baton_stage *st, int64_t now,
		  struct baton_wakelist *wl)
{
	struct baton_waiter *w;

	while (!st->closed && st->count < st->limit &&
	       (w = baton_waitq_claim_first(&st->producers)) != NULL) {
		push(st, w->value, now);
		baton_waiter_wake(wl, w, BATON_OK);
	}
}

/* True if the caller must spawn a dispatcher once the lock is released. */
static bool kick(struct baton_stage *st)
{
	if (st->fn == NULL || st->active || st->count == 0) /* fn NULL: no ring */
		return false;
	st->active = true;
	return true;
}


/* --- runners: long-lived handler tasks ---------------------------------------- */

/* Take the head item for a handler (it counts as running from now on);
 * producers waiting for room move in behind. */
static void *pop(struct baton_stage *st, int64_t now, struct baton_wakelist *wl)
{
	void *item = st->ring[st->head].item;

	st->wait_ns += (uint64_t)(now - st->ring[st->head].t0);
	st->head = (st->head + 1) % st->cap;
	st->count--;
	st->running++;
	admit(st, now, wl);
	return item;
}

/* With no needs, a free handler may take the head item itself: nothing
 * must be acquired in the global order first, so the dispatcher (the only
 * acquirer) is not needed to keep that order. */
static bool can_take(const struct baton_stage *st)
{
	return st->nneeds == 0 && st->count > 0 && st->running < st->concurrency;
}


/* Hand `item` to an idle runner; false if none waits (one whose idle wait
 * timed out is skipped: the claim fails, it decrements nidle itself). The
 * caller counts the item as running. */
static bool hand_to_idle(struct baton_stage *st, void *item, struct baton_wakelist *wl)
{
	struct baton_waiter *w = baton_waitq_claim_first(&st->runners);

	if (w == NULL)
		return false;
	st->nidle--;
	w->value = item;
	baton_waiter_wake(wl, w, BATON_OK);
	return true;
}

/* Tell every idle runner to end (a drainer wants them gone). */
static void dismiss_idle(struct baton_stage *st, struct baton_wakelist *wl)
{
	st->nidle -= (unsigned)baton_waitq_wake_all(&st->runners, wl, BATON_ESHUTDOWN);
}

/* Run one item's handler, started at `start`, and give back its needs;
 * returns the time it ended. A runner that goes on with the next item uses
 * that time as the next start: a clock read costs as much as the rest of a
 * hand-off on some machines (29 ns in a VM), so an item pays for two, the
 * submit's and this one. */
static int64_t run_one(struct baton_stage *st, void *item, int64_t start)
{
	int64_t end;

	st->fn(item, st->ctx);
	end = baton__clock_now();
	for (size_t i = st->nneeds; i-- > 0;)
		if (!(st->needs[i].flags & BATON_STAGE_KEEP))
			baton_pool_release(st->needs[i].pool, st->needs[i].units);
	baton_spin_lock(&st->lock);
	st->running--;
	st->completed++;
	st->handler_ns += (uint64_t)(end - start);
	baton_spin_unlock(&st->lock);
	return end;
}

/*
 * A runner handles items until none comes for BATON_STAGE_RUNNER_IDLE_NS:
 * the item it was started with, then the head of the queue if it may take
 * it, else whatever the dispatcher or a submitter hands it while it waits
 * on `runners`. Spawning a task per item cost more than the item's hand-off
 * (docs/stages.md); a runner costs one wake-up per item, none while the
 * queue stays non-empty.
 */
static void runner_task(void *arg)
{
	struct job job = *(struct job *)arg;
	struct baton_stage *st = job.st;
	void *item = job.item;
	struct baton_task *self = baton_task_self();
	int64_t t = baton__clock_now();
	int rc;

	baton__free(arg);
	for (;;) {
		struct baton_wakelist wl = BATON_WAKELIST_INIT;

		t = run_one(st, item, t);
		baton_spin_lock(&st->lock);
		if (can_take(st)) {
			item = pop(st, t, &wl);
			baton_spin_unlock(&st->lock);
			baton_wakelist_run(&wl);
			continue;
		}
		poke(st, &wl); /* a dispatcher waiting for a concurrency slot */
		if (st->nidle >= st->concurrency)
			break; /* enough wait already */
		st->nidle++;
		baton_spin_unlock(&st->lock);
		baton_wakelist_run(&wl);
		baton_spin_lock(&st->lock);
		if (can_take(st)) { /* arrived while we were unlocked */
			st->nidle--;
			t = baton__clock_now();
			item = pop(st, t, &wl);
			baton_spin_unlock(&st->lock);
			baton_wakelist_run(&wl);
			continue;
		}
		rc = baton__wait_one(self, &st->runners, &st->lock, 0, NULL, &item,
				    BATON_STAGE_RUNNER_IDLE_NS);
		if (rc == BATON_OK) {
			t = baton__clock_now();
			continue; /* handed an item, counted as running */
		}
		baton_spin_lock(&st->lock);
		if (rc != BATON_ESHUTDOWN) /* timed out (or no timer): we left */
			st->nidle--;
		break;
	}
	/* With the lock: end this runner. */
	{
		struct baton_wakelist wl = BATON_WAKELIST_INIT;

		st->nrunners--;
		baton__stage_wake_drainers(st, &wl);
		/* Last touch of st: once it is idle, a drainer may destroy it. */
		baton_spin_unlock(&st->lock);
		baton_wakelist_run(&wl);
	}
}

/* The task attributes of the stage's next task: pinned round robin over
 * the stage's workers when it has some. */
static struct baton_task_attr next_task_attr(struct baton_stage *st)
{
	struct baton_task_attr ta = st->task;

	if (st->nworkers > 0) {
		ta.worker = st->first_worker + (int)(st->next_worker++ % st->nworkers);
		ta.flags |= BATON_TASK_BOUND;
	}
	return ta;
}

/* Give the item (counted as running) to an idle runner or a new one;
 * without memory for a runner, the caller runs the handler itself. Called
 * without the lock. */
static void start(struct baton_stage *st, void *item)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_task_attr ta;
	struct job *job;
	bool handed;

	baton_spin_lock(&st->lock);
	handed = hand_to_idle(st, item, &wl);
	if (!handed) {
		st->nrunners++;
		st->runners_started++;
	}
	ta = next_task_attr(st);
	baton_spin_unlock(&st->lock);
	baton_wakelist_run(&wl);
	if (handed)
		return;
	job = baton__malloc(sizeof(*job));
	if (job != NULL) {
		job->st = st;
		job->item = item;
		if (baton_sched_spawn(st->sched, &ta, runner_task, job) == BATON_OK)
			return;
		baton__free(job);
	}
	run_one(st, item, baton__clock_now());
	baton_spin_lock(&st->lock);
	st->nrunners--;
	baton_spin_unlock(&st->lock);
}

/* Block the dispatcher until poked; called and returns with the lock. */
static void dispatcher_wait(struct baton_stage *st, struct baton_task *self)
{
	/* No timeout: no timer to allocate, so the only result is BATON_OK. */
	baton__wait_one(self, &st->dispatcher, &st->lock, 0, NULL, NULL, -1);
	baton_spin_lock(&st->lock);
}

static void dispatch(void *arg)
{
	struct baton_stage *st = arg;
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_task *self = baton_task_self();
	void *item;

	baton_spin_lock(&st->lock);
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
			baton_spin_unlock(&st->lock);
			for (size_t i = 0; i < st->nneeds; i++)
				/* No timeout: the only result is BATON_OK. */
				baton_pool_acquire(st->needs[i].pool,
						   st->needs[i].units, -1);
			baton_spin_lock(&st->lock);
			while (st->running >= st->concurrency) /* lowered meanwhile */
				dispatcher_wait(st, self);
		}
		item = pop(st, baton__clock_now(), &wl);
		baton_spin_unlock(&st->lock);
		baton_wakelist_run(&wl);
		start(st, item);
		baton_spin_lock(&st->lock);
	}
	st->active = false;
	baton__stage_wake_drainers(st, &wl);
	/* Last touch of st: a drainer may destroy it once it has the lock. */
	baton_spin_unlock(&st->lock);
	baton_wakelist_run(&wl);
}

/* Spawn the dispatcher that kick() asked for. On failure nobody
 * dispatches: the next submit, close or drain kicks again. */
static int spawn_dispatcher(struct baton_stage *st)
{
	int rc = baton_sched_spawn(st->sched, &st->task, dispatch, st);

	if (rc != BATON_OK) {
		baton_spin_lock(&st->lock);
		st->active = false;
		baton_spin_unlock(&st->lock);
	}
	return rc;
}

/* --- the public calls ---------------------------------------------------------- */

int baton_stage_create(baton_stage_t **out, baton_sched_t *s,
		       const struct baton_stage_attr *attr)
{
	struct baton_stage *st;
	struct baton_stage_need needs[BATON_STAGE_MAX_NEEDS];
	size_t n;

	if (out == NULL || s == NULL || attr == NULL ||
	    (attr->fn == NULL && attr->nworkers > 0) || attr->queue_capacity == 0 ||
	    attr->queue_capacity > BATON_STAGE_MAX_CAPACITY ||
	    attr->concurrency == 0 || attr->nneeds > BATON_STAGE_MAX_NEEDS ||
	    (attr->nneeds > 0 && attr->needs == NULL) ||
	    (attr->nworkers > 0 && (attr->first_worker < 0 ||
				    attr->first_worker + (long)attr->nworkers >
					    baton_sched_workers(s))))
		return BATON_EINVAL;
	n = attr->nneeds;
	/* Sort by creation id (insertion sort: at most 8) and check each. */
	for (size_t i = 0; i < n; i++) {
		struct baton_stage_need nd = attr->needs[i];
		size_t j = i;

		if (nd.pool == NULL || nd.units < 1 ||
		    (nd.flags & ~BATON_STAGE_KEEP))
			return BATON_EINVAL;
		for (; j > 0 && needs[j - 1].pool->id > nd.pool->id; j--)
			needs[j] = needs[j - 1];
		needs[j] = nd;
	}
	for (size_t i = 1; i < n; i++)
		if (needs[i].pool == needs[i - 1].pool)
			return BATON_EINVAL;
	st = baton__calloc(1, sizeof(*st));
	if (st == NULL)
		return BATON_ENOMEM;
	if (!baton__name_copy(st->name, sizeof(st->name), attr->name)) { /* refused */
		baton__free(st);
		return BATON_EINVAL;
	}
	/* A stage without handler queues tasks, in `passers`: no ring. */
	st->ring = attr->fn ? baton__calloc(attr->queue_capacity, sizeof(*st->ring)) : NULL;
	if (attr->fn && st->ring == NULL) {
		baton__free(st);
		return BATON_ENOMEM;
	}
	st->cap = st->limit = attr->queue_capacity;
	st->concurrency = attr->concurrency;
	st->sched = s;
	st->fn = attr->fn;
	st->ctx = attr->ctx;
	st->task = attr->task;
	st->first_worker = attr->first_worker;
	st->nworkers = attr->nworkers;
	if (st->nworkers > 0) { /* the dispatcher too: it hands items to runners */
		st->task.worker = st->first_worker;
		st->task.flags |= BATON_TASK_BOUND;
	}
	memcpy(st->needs, needs, n * sizeof(needs[0]));
	st->nneeds = n;
	for (size_t i = 0; i < n; i++) {
		baton_spin_lock(&needs[i].pool->u.lock);
		needs[i].pool->users++;
		baton_spin_unlock(&needs[i].pool->u.lock);
	}
	*out = st;
	return BATON_OK;
}

/* A submit whose dispatcher could not be spawned takes its item back. No
 * dispatcher ran since the submit pushed it (it set `active` itself and
 * only a dispatcher pops or clears it), so the ring only grew at the tail
 * and the item is still at position `pos`. */
static void unsubmit(struct baton_stage *st, size_t pos)
{
	baton_spin_lock(&st->lock);
	for (size_t i = pos; i + 1 < st->count; i++)
		st->ring[(st->head + i) % st->cap] =
			st->ring[(st->head + i + 1) % st->cap];
	st->count--;
	st->submitted--;
	baton_spin_unlock(&st->lock);
}

int baton_stage_submit(baton_stage_t *st, void *item, int64_t timeout_ns)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_task *t;
	size_t pos;
	bool spawn;
	int rc;

	if (st == NULL || st->fn == NULL)
		return BATON_EINVAL;
	if ((rc = baton_task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	baton_spin_lock(&st->lock);
	if (st->closed) {
		st->rejected++;
		baton_spin_unlock(&st->lock);
		return BATON_ESHUTDOWN;
	}
	/* An idle runner and nothing ahead of us: hand it over. (A runner
	 * whose idle wait just timed out is skipped: it is leaving.) */
	if (st->count == 0 && st->nneeds == 0 && st->running < st->concurrency &&
	    hand_to_idle(st, item, &wl)) {
		st->submitted++;
		st->running++;
		baton_spin_unlock(&st->lock);
		baton_wakelist_run(&wl);
		return BATON_OK;
	}
	if (st->count < st->limit) {
		pos = st->count;
		push(st, item, baton__clock_now());
		if (pos == 0)
			poke(st, &wl); /* a dispatcher idle between handlers */
		spawn = kick(st);
		baton_spin_unlock(&st->lock);
		baton_wakelist_run(&wl);
		if (spawn && (rc = spawn_dispatcher(st)) != BATON_OK) {
			unsubmit(st, pos);
			return rc;
		}
		return BATON_OK;
	}
	if (timeout_ns == 0) {
		st->rejected++;
		baton_spin_unlock(&st->lock);
		return BATON_EAGAIN;
	}
	/* Full: wait for a slot; the one who frees it moves our item in. */
	rc = baton__wait_one(t, &st->producers, &st->lock, 0, item, NULL,
			       timeout_ns);
	if (rc == BATON_ETIMEDOUT) {
		baton_spin_lock(&st->lock);
		st->rejected++;
		baton_spin_unlock(&st->lock);
	}
	return rc; /* ESHUTDOWN: close counted it */
}

int baton_stage_close(baton_stage_t *st)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	size_t n;
	bool spawn;

	if (st == NULL)
		return BATON_EINVAL;
	baton_spin_lock(&st->lock);
	if (st->closed) {
		baton_spin_unlock(&st->lock);
		return BATON_ESHUTDOWN;
	}
	st->closed = true;
	st->rejected += baton_waitq_wake_all(&st->producers, &wl, BATON_ESHUTDOWN);
	/* Tasks waiting to pass through have not started their step. */
	n = baton_waitq_wake_all(&st->passers, &wl, BATON_ESHUTDOWN);
	st->submitted -= n;
	st->rejected += n;
	baton__stage_wake_drainers(st, &wl);
	spawn = kick(st);
	baton_spin_unlock(&st->lock);
	baton_wakelist_run(&wl);
	if (spawn)
		spawn_dispatcher(st); /* on failure, drain kicks again */
	return BATON_OK;
}

int baton_stage_drain(baton_stage_t *st, int64_t timeout_ns)
{
	struct baton_task *t;
	int rc;

	if (st == NULL)
		return BATON_EINVAL;
	if ((rc = baton_task_for_wait(&t, timeout_ns)) != BATON_OK)
		return rc;
	baton_spin_lock(&st->lock);
	if (baton__stage_idle(st)) {
		baton_spin_unlock(&st->lock);
		return BATON_OK;
	}
	{
		/* Idle runners would linger; a drainer wants them gone. */
		struct baton_wakelist wl = BATON_WAKELIST_INIT;

		dismiss_idle(st, &wl);
		baton_spin_unlock(&st->lock);
		baton_wakelist_run(&wl);
		baton_spin_lock(&st->lock);
	}
	if (kick(st)) { /* items left by a failed spawn */
		baton_spin_unlock(&st->lock);
		if ((rc = spawn_dispatcher(st)) != BATON_OK)
			return rc;
		baton_spin_lock(&st->lock);
	}
	if (timeout_ns == 0) {
		baton_spin_unlock(&st->lock);
		return BATON_EAGAIN;
	}
	if (baton__stage_idle(st)) { /* the new dispatcher may already have finished */
		baton_spin_unlock(&st->lock);
		return BATON_OK;
	}
	return baton__wait_one(t, &st->drainers, &st->lock, 0, NULL, NULL, timeout_ns);
}

int baton_stage_set_concurrency(baton_stage_t *st, unsigned n)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;

	if (st == NULL || n == 0)
		return BATON_EINVAL;
	baton_spin_lock(&st->lock);
	st->concurrency = n;
	poke(st, &wl);
	if (st->fn == NULL)
		baton__stage_admit_passers(st, baton__clock_now(), &wl);
	baton_spin_unlock(&st->lock);
	baton_wakelist_run(&wl);
	return BATON_OK;
}

int baton_stage_set_queue_limit(baton_stage_t *st, size_t n)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	bool spawn;

	if (st == NULL || n == 0 || n > st->cap)
		return BATON_EINVAL;
	baton_spin_lock(&st->lock);
	st->limit = n;
	admit(st, baton__clock_now(), &wl);
	poke(st, &wl);
	spawn = kick(st);
	baton_spin_unlock(&st->lock);
	baton_wakelist_run(&wl);
	if (spawn)
		spawn_dispatcher(st); /* on failure, the next call kicks */
	return BATON_OK;
}

int baton_stage_snapshot(baton_stage_t *st, struct baton_stage_stats *out)
{
	if (st == NULL || out == NULL)
		return BATON_EINVAL;
	baton_spin_lock(&st->lock);
	out->name = st->name;
	out->queued = st->count + st->passers.len; /* items, or waiting tasks */
	out->queue_limit = st->limit;
	out->running = st->running;
	out->concurrency = st->concurrency;
	out->closed = st->closed;
	out->submitted = st->submitted;
	out->rejected = st->rejected;
	out->completed = st->completed;
	out->handler_ns = st->handler_ns;
	out->wait_ns = st->wait_ns;
	out->runners = st->nrunners;
	out->runners_started = st->runners_started;
	baton_spin_unlock(&st->lock);
	return BATON_OK;
}

int baton_stage_destroy(baton_stage_t *st)
{
	bool busy;

	if (st == NULL)
		return BATON_OK;
	baton_spin_lock(&st->lock);
	/* Waiters that timed out too: they take the lock to unlink. */
	busy = !baton__stage_idle(st) || st->producers.head != NULL || st->drainers.head != NULL ||
	       st->dispatcher.head != NULL || st->runners.head != NULL ||
	       st->passers.head != NULL;
	baton_spin_unlock(&st->lock);
	if (busy)
		return BATON_EBUSY;
	for (size_t i = 0; i < st->nneeds; i++) {
		baton_spin_lock(&st->needs[i].pool->u.lock);
		st->needs[i].pool->users--;
		baton_spin_unlock(&st->needs[i].pool->u.lock);
	}
	baton__free(st->ring);
	baton__free(st);
	return BATON_OK;
}
