/* SPDX-License-Identifier: MIT */
/*
 * Task groups (include/baton/sched.h, "tasks you can hold"): a group
 * counts its live children, keeps their slots in a list to cancel them,
 * records the first failure, and wakes its waiters (tasks on a wait queue,
 * plain threads on an event count) when the last child ends. A group is
 * owned by the task that created it (in that task's `groups`, under its
 * glock): cancelling the task cancels the group, and so down the tree.
 *
 * A collecting group (BATON_GROUP_COLLECT) also queues its children as
 * they end, in the order they ended, in a `done` list (through the
 * slots' glink, which the live list no longer uses), for
 * baton_group_next to take one at a time; its waiters (`nextq`, and
 * plain threads on the event count) are woken at each end.
 */
#include <sched.h>

#include "../common/alloc.h"
#include "handle.h"

struct baton_group {
	baton_spinlock_t lock;
	unsigned flags;
	bool cancelled;         /* sticky */
	bool failed;            /* `first` is set */
	unsigned nthreads;      /* plain threads waiting (on ec) */
	size_t nlive;           /* children not ended */
	struct baton_list live; /* their slots (glink) */
	struct baton_list done; /* collecting: ended, not taken (glink) */
	struct baton_task_end first;
	struct baton_waitq waiters; /* tasks waiting for nlive == 0 */
	struct baton_waitq nextq;   /* tasks waiting in baton_group_next */
	baton_ec_t ec;
	struct baton_sched *sched;
	/* The task that created it, NULL from a plain thread; its place in
	 * the owner's list (under the owner's glock). */
	struct baton_task *owner;
	/* Hand-linked, not a list.h list: the owner's head is one pointer
	 * (struct baton_task's `groups`), where a list's two would grow every
	 * task record for the few that open groups. */
	struct baton_group *oprev, *onext;
};

static void cancel_locked(struct baton_group *g, struct baton_wakelist *wl)
{
	g->cancelled = true;
	struct baton_tslot *sl;

	BATON_LIST_FOR_EACH (sl, &g->live, glink) {
		baton__spin_lock(&sl->lock);
		baton__tslot_cancel_locked(sl, wl);
		baton__spin_unlock(&sl->lock);
	}
}

void baton__group_cancel_into(struct baton_group *g, struct baton_wakelist *wl)
{
	baton__spin_lock(&g->lock);
	cancel_locked(g, wl);
	baton__spin_unlock(&g->lock);
}

void baton__task_cancel_tree(struct baton_task *t, struct baton_wakelist *wl)
{
	if (!baton__task_cancel_claim(t, wl))
		return; /* cancelled before: its groups were, or were born so */
	baton__spin_lock(&t->glock);
	for (struct baton_group *g = t->groups; g; g = g->onext)
		baton__group_cancel_into(g, wl);
	baton__spin_unlock(&t->glock);
}

static void unlink_child(struct baton_group *g, struct baton_tslot *sl)
{
	baton__list_remove(&g->live, &sl->glink);
}

/* One child fewer (`queued`: now in the done list): with none left, wake
 * the waiters; next's waiters hear of every end. Lock held. The event
 * count is bumped under the lock: once it is released a waiter may free
 * the group. */
static void child_gone_locked(struct baton_group *g, struct baton_wakelist *wl, bool wake,
			      bool queued)
{
	bool last = --g->nlive == 0;

	if (wake && last)
		baton__waitq_wake_all(&g->waiters, wl, BATON_OK);
	if (!last && !queued)
		return;
	if (wake)
		baton__waitq_wake_all(&g->nextq, wl, BATON_OK);
	if (g->nthreads)
		baton_ec_inc(&g->ec);
}

/* Collecting: queue an ended child's slot behind the others, unless its
 * result was taken or dropped already (a join or detach since its end).
 * The group's lock held. */
static bool queue_done(struct baton_group *g, struct baton_tslot *sl)
{
	bool queued;

	baton__spin_lock(&sl->lock);
	queued = sl->queued = !sl->detached;
	baton__spin_unlock(&sl->lock);
	if (!queued)
		return false;
	baton__list_push_tail(&g->done, &sl->glink);
	return true;
}

/* Take the oldest slot off the done list, locked and no longer queued. */
static struct baton_tslot *pop_done(struct baton_group *g)
{
	struct baton_list_node *n = baton__list_pop(&g->done);
	struct baton_tslot *sl;

	if (n == NULL)
		return NULL;
	sl = BATON_LIST_ENTRY(n, struct baton_tslot, glink);
	baton__spin_lock(&sl->lock);
	sl->queued = false;
	return sl;
}

/* A slot off the done list, its lock held (released): freed, unless its
 * end has not let go of it yet (slot_end frees it then). */
static void done_release_locked(struct baton_tslot *sl)
{
	if (sl->group == NULL) {
		baton__tslot_free_locked(sl);
		return;
	}
	sl->detached = true;
	baton__spin_unlock(&sl->lock);
}

void baton__group_child_end(struct baton_group *g, struct baton_tslot *sl, uint64_t id, int status,
			    void *result, bool wake)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT; /* the cancelled */
	struct baton_wakelist waiters = BATON_WAKELIST_INIT;

	bool queued;

	baton__spin_lock(&g->lock);
	unlink_child(g, sl);
	queued = (g->flags & BATON_GROUP_COLLECT) && queue_done(g, sl);
	if (status != 0 && !g->failed) {
		g->failed = true;
		g->first.tid = id;
		g->first.status = status;
		g->first.result = result;
		if ((g->flags & BATON_GROUP_FAIL_FAST) && !g->cancelled && wake)
			cancel_locked(g, &wl);
	}
	child_gone_locked(g, &waiters, wake, queued);
	baton__spin_unlock(&g->lock);
	baton__wakelist_run(&wl);
	baton__wakelist_run_back(&waiters);
}

/* The owner's list, under its glock. */
static void owner_unlink(struct baton_group *g)
{
	struct baton_task *t = g->owner;

	if (t == NULL)
		return;
	baton__spin_lock(&t->glock);
	if (g->oprev)
		g->oprev->onext = g->onext;
	else if (t->groups == g)
		t->groups = g->onext;
	if (g->onext)
		g->onext->oprev = g->oprev;
	g->owner = NULL;
	baton__spin_unlock(&t->glock);
}

struct baton_group *baton__group_forget_owner(struct baton_group *g)
{
	struct baton_group *next = g->onext;

	g->owner = NULL;
	g->oprev = g->onext = NULL;
	return next;
}

/* --- the public calls -------------------------------------------------------- */
int baton_group_create(baton_group_t **out, baton_sched_t *s, unsigned flags)
{
	struct baton_group *g;
	struct baton_task *t = baton__task_self();

	if (out == NULL || s == NULL || (flags & ~(BATON_GROUP_FAIL_FAST | BATON_GROUP_COLLECT)))
		return BATON_EINVAL;
	if ((g = baton__calloc(1, sizeof(*g))) == NULL)
		return BATON_ENOMEM;
	g->flags = flags;
	g->sched = s;
	if (t != NULL) {
		g->owner = t;
		baton__spin_lock(&t->glock);
		g->onext = t->groups;
		if (t->groups)
			t->groups->oprev = g;
		t->groups = g;
		/* Relaxed: a canceller sets the flag before it takes glock to
		 * walk our groups; we read it under glock (handle.h). */
		g->cancelled = __atomic_load_n(&t->cancel, __ATOMIC_RELAXED) != 0;
		baton__spin_unlock(&t->glock);
	}
	*out = g;
	return BATON_OK;
}

int baton_group_spawn(baton_group_t *g, const struct baton_task_attr *attr, baton_task_result_fn fn,
		      void *arg, baton_tid_t *tid)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_tslot *sl;
	uint64_t id;
	int rc;

	if (g == NULL || fn == NULL)
		return BATON_EINVAL;
	if ((sl = baton__tslot_alloc(fn, arg)) == NULL)
		return BATON_ENOMEM;
	id = baton__tslot_id(sl);
	baton__spin_lock(&sl->lock); /* as baton__tslot_alloc's writes */
	/* Without an id only the group hears of its end; a collecting group
	 * keeps its result for baton_group_next all the same. */
	sl->detached = tid == NULL && !(g->flags & BATON_GROUP_COLLECT);
	sl->group = g;
	sl->watched = true; /* its end tells the group */
	baton__spin_unlock(&sl->lock);
	baton__spin_lock(&g->lock);
	if (g->cancelled) {
		baton__spin_unlock(&g->lock);
		rc = BATON_ECANCELED;
		goto fail;
	}
	baton__list_push_head(&g->live, &sl->glink);
	g->nlive++;
	baton__spin_unlock(&g->lock);
	if ((rc = baton__task_spawn_held(g->sched, attr, sl)) != BATON_OK) {
		baton__spin_lock(&g->lock);
		unlink_child(g, sl);
		child_gone_locked(g, &wl, true, false);
		baton__spin_unlock(&g->lock);
		baton__wakelist_run(&wl);
		goto fail;
	}
	if (tid)
		*tid = id;
	return BATON_OK;
fail:
	baton__spin_lock(&sl->lock);
	sl->group = NULL;
	sl->cancel_pending = false; /* never passed on: false in a free slot */
	baton__tslot_free_locked(sl);
	return rc;
}

int baton_group_cancel(baton_group_t *g)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;

	if (g == NULL)
		return BATON_EINVAL;
	baton__group_cancel_into(g, &wl);
	baton__wakelist_run(&wl);
	return BATON_OK;
}

/* What is left of a wait's time before its next turn: BATON_OK (in
 * *timeout_ns), BATON_EAGAIN (a try) or BATON_ETIMEDOUT. */
static int time_left(int64_t *timeout_ns, int64_t deadline)
{
	if (*timeout_ns == 0)
		return BATON_EAGAIN;
	if (*timeout_ns > 0 && (*timeout_ns = deadline - baton__clock_now()) <= 0)
		return BATON_ETIMEDOUT;
	return BATON_OK;
}

/* One turn of a wait on q (a task) or the event count (a plain thread),
 * lock held (and held again on return). A thread's timeout is BATON_OK:
 * the caller's deadline says. */
static int wait_turn(struct baton_group *g, struct baton_waitq *q, struct baton_task *self,
		     int64_t timeout_ns)
{
	int rc;

	if (self != NULL) {
		/* Releases the lock; taken again below either way. */
		rc = baton__wait_one(self, q, &g->lock, timeout_ns);
		baton__spin_lock(&g->lock);
		return rc;
	}
	return baton__thread_wait_locked(&g->lock, &g->ec, &g->nthreads, timeout_ns);
}

/* Wait for g's last child, lock held (and held again on return). With
 * `shield` (a close) the caller's own cancellation does not stop it: a
 * cancelled task waits by yielding, its children having been cancelled. */
static int wait_empty_locked(struct baton_group *g, int64_t timeout_ns, bool shield)
{
	struct baton_task *self = baton__task_self();
	int64_t deadline = timeout_ns > 0 ? baton__deadline_after(timeout_ns) : 0;
	int rc;

	while (g->nlive != 0) {
		if ((rc = time_left(&timeout_ns, deadline)) != BATON_OK)
			return rc;
		rc = wait_turn(g, &g->waiters, self, timeout_ns);
		if (rc == BATON_ECANCELED && shield) {
			baton__spin_unlock(&g->lock);
			baton_sched_yield();
			baton__spin_lock(&g->lock);
			rc = BATON_OK;
		}
		if (rc != BATON_OK)
			return rc;
	}
	return BATON_OK;
}

int baton_group_wait(baton_group_t *g, int64_t timeout_ns, struct baton_task_end *failure)
{
	int rc;

	if (g == NULL)
		return BATON_EINVAL;
	if (timeout_ns != 0 && baton__task_self() == NULL && baton_sched_self() != NULL)
		return BATON_ENOSCHED; /* a plain coroutine a task resumed */
	baton__spin_lock(&g->lock);
	rc = wait_empty_locked(g, timeout_ns, false);
	if (rc == BATON_OK && failure) {
		struct baton_task_end none = { BATON_TID_NONE, 0, NULL };

		*failure = g->failed ? g->first : none;
	}
	baton__spin_unlock(&g->lock);
	return rc;
}

int baton_group_next(baton_group_t *g, int64_t timeout_ns, struct baton_task_end *end)
{
	struct baton_task *self;
	struct baton_tslot *sl;
	int64_t deadline;
	int rc = BATON_OK;

	if (g == NULL || end == NULL || !(g->flags & BATON_GROUP_COLLECT))
		return BATON_EINVAL;
	self = baton__task_self();
	if (timeout_ns != 0 && self == NULL && baton_sched_self() != NULL)
		return BATON_ENOSCHED; /* a plain coroutine a task resumed */
	deadline = timeout_ns > 0 ? baton__deadline_after(timeout_ns) : 0;
	baton__spin_lock(&g->lock);
	for (;;) {
		while ((sl = pop_done(g)) != NULL) {
			if (sl->detached) { /* joined or detached since its end */
				done_release_locked(sl);
				continue;
			}
			*end = (struct baton_task_end){ baton__tslot_id(sl), sl->status,
							sl->result };
			done_release_locked(sl); /* taken: the id goes stale */
			baton__spin_unlock(&g->lock);
			return BATON_OK;
		}
		if (g->nlive == 0) {
			rc = BATON_EDONE;
			break;
		}
		if ((rc = time_left(&timeout_ns, deadline)) != BATON_OK ||
		    (rc = wait_turn(g, &g->nextq, self, timeout_ns)) != BATON_OK)
			break;
	}
	baton__spin_unlock(&g->lock);
	return rc;
}

int baton_group_close(baton_group_t *g, struct baton_task_end *failure)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_task *self = baton__task_self();

	if (g == NULL)
		return BATON_OK;
	if (self == NULL && baton_sched_self() != NULL)
		return BATON_ENOSCHED; /* a plain coroutine a task resumed */
	/* First off the owner's list: nobody walks to it from now on. */
	owner_unlink(g);
	baton__spin_lock(&g->lock);
	cancel_locked(g, &wl);
	baton__spin_unlock(&g->lock);
	baton__wakelist_run(&wl);
	baton__spin_lock(&g->lock);
	(void)wait_empty_locked(g, -1, true);
	/* Results nobody took: dropped, their ids stale. */
	for (struct baton_tslot *sl; (sl = pop_done(g)) != NULL;)
		done_release_locked(sl);
	/* Waiters that timed out unlink themselves once they run, threads
	 * leave the event count: then nothing refers to the group. */
	while (!baton__waitq_empty(&g->waiters) || !baton__waitq_empty(&g->nextq) ||
	       g->nthreads != 0) {
		baton__spin_unlock(&g->lock);
		if (self)
			baton_sched_yield();
		else
			sched_yield();
		baton__spin_lock(&g->lock);
	}
	if (failure) {
		struct baton_task_end none = { BATON_TID_NONE, 0, NULL };

		*failure = g->failed ? g->first : none;
	}
	baton__spin_unlock(&g->lock);
	baton__free(g);
	return BATON_OK;
}

void baton__task_close_groups(struct baton_task *t)
{
	while (t->groups != NULL)
		(void)baton_group_close(t->groups, NULL);
}
