/* SPDX-License-Identifier: MIT */
/*
 * src/sched/handle.h - task ids and groups (the "tasks you can hold"
 * section of include/baton/sched.h): what handle.c and group.c share.
 *
 * A task id names a slot of one process-wide table: the slot's index in
 * the low 32 bits, its generation in the high 32. The table's chunks are
 * never freed, so any id, however stale, can be looked up without touching
 * freed memory; the generation, compared under the slot's lock, says
 * whether the id still names the slot's task. A slot is freed (its
 * generation bumped) when its result is taken (join) or, detached, when
 * its task ends.
 *
 * Locks, outermost first, never taken the other way: a group's lock, then
 * its children's slot locks, then a child task's glock (the groups it
 * owns), then those groups' locks, and so on down the tree. A task's end
 * takes its slot's lock and releases it before it takes its group's.
 *
 * A slot is freed by the last of those that refer to it: its end's group
 * step (which clears `group`), and, in a collecting group, the group's
 * `done` list (`queued`); a join or detach meanwhile only marks it
 * detached.
 */
#ifndef BATON_SRC_SCHED_HANDLE_H
#define BATON_SRC_SCHED_HANDLE_H

#include "sched_internal.h"
#include "wait.h"

enum baton_tslot_state {
	BATON_TSLOT_FREE = 0,
	BATON_TSLOT_LIVE = 1,  /* spawned, not ended */
	BATON_TSLOT_ENDED = 2, /* ended, result not taken */
};

struct baton_group;

struct baton_tslot {
	baton_spinlock_t lock;
	unsigned nthreads; /* plain threads waiting in join (on ec) */
	/* The id of this use: its generation (odd: 1, 3, ..., wrapping to
	 * 1, so never 0) above the slot's index, bumped as a whole. */
	uint64_t id;
	uint8_t state; /* enum baton_tslot_state */
	bool detached; /* nobody will join: freed at the end */
	bool queued;   /* ended, in its group's `done` list (next) */
	/* A group holds it, or somebody waited for its end (joiners, nthreads):
	 * its end takes the general path. Set under the lock, cleared at the
	 * next spawn; it may outlive the waiters. */
	bool watched;
	bool cancel_pending;     /* cancelled before it had its task (false when free) */
	int status;              /* the body's return, once ENDED */
	void *result;            /* the body's *result, once ENDED */
	struct baton_task *task; /* LIVE and started: the task */
	baton_task_result_fn fn;
	void *arg;
	struct baton_waitq joiners; /* tasks waiting in join */
	baton_ec_t ec;              /* bumped at the end when nthreads > 0 */
	uint32_t next_free;         /* free list link: index + 1 (atomic) */
	uint32_t index;             /* its place in the table (constant) */
	/* The group it was spawned into (until it ends), and its place in
	 * the group's list of live children, then (queued) of ended ones
	 * (under the group's lock). */
	struct baton_group *group;
	struct baton_list_node glink;
} __attribute__((aligned(BATON_CACHELINE)));

/* Ready the tasks of wl behind the tasks already runnable: what a task's
 * end does to its joiners and its group's waiters, so that one that waits
 * for many collects them in one go. */
static inline void baton__wakelist_run_back(struct baton_wakelist *wl)
{
	for (struct baton_task *t = wl->head, *next; t; t = next) {
		next = t->next;
		baton__task_ready_back(t);
	}
	wl->head = NULL;
}

/* A plain thread's turn of a wait on ec, lock held (and held again on
 * return), counted in *nthreads meanwhile (whoever ends the wait bumps ec
 * only when some thread waits). A timeout is BATON_OK: the caller's
 * deadline says. */
static inline int baton__thread_wait_locked(baton_spinlock_t *lock, baton_ec_t *ec,
					    unsigned *nthreads, int64_t timeout_ns)
{
	uint32_t v = baton_ec_value(ec);
	int rc;

	(*nthreads)++;
	baton__spin_unlock(lock);
	rc = baton_ec_wait_mp(ec, v, timeout_ns);
	baton__spin_lock(lock);
	(*nthreads)--;
	return rc == BATON_ETIMEDOUT ? BATON_OK : rc;
}

/* handle.c */
struct baton_tslot *baton__tslot_alloc(baton_task_result_fn fn, void *arg);
void baton__tslot_free_locked(struct baton_tslot *sl);
void baton__tslot_cache_flush(struct baton_worker *w);
uint64_t baton__tslot_id(const struct baton_tslot *sl);
/* Cancel the task of a LIVE slot, its lock held: claims into wl. */
void baton__tslot_cancel_locked(struct baton_tslot *sl, struct baton_wakelist *wl);
/* wait.c: set t's cancel flag and claim its wait; t is readied through
 * wl (after the caller's locks are released) if it is ours to ready.
 * False if t was cancelled before (nothing done). */
bool baton__task_cancel_claim(struct baton_task *t, struct baton_wakelist *wl);
/* Cancel t (alive: the caller holds what keeps it so) and the groups it
 * owns, readying through wl. */
void baton__task_cancel_tree(struct baton_task *t, struct baton_wakelist *wl);

/* group.c */
/* A child of g ended (its slot already ENDED): g's counts, its first
 * failure, fail-fast. */
void baton__group_child_end(struct baton_group *g, struct baton_tslot *sl, uint64_t id, int status,
			    void *result, bool wake);
/* Cancel g and its children, readying through wl; g's lock not held. */
void baton__group_cancel_into(struct baton_group *g, struct baton_wakelist *wl);
/* Clear g's owner (the owner's glock held); returns the owner's next. */
struct baton_group *baton__group_forget_owner(struct baton_group *g);
/* t returns with groups still open: close them (cancel, wait, free). */
void baton__task_close_groups(struct baton_task *t);
/* The scheduler's destroy frees t unfinished: its slot ends with
 * BATON_ESHUTDOWN and its groups forget their owner. */
void baton__task_abandon(struct baton_task *t);
/* The body of a task spawned with an id (handle.c): its arg is the slot. */
void baton__tslot_main(void *arg);

/* Give sl its task t, made but not yet runnable, under the slot's lock
 * (which publishes the slot's setup too: tslot_alloc in handle.c). So the
 * task is cancellable from its first instruction and an abort always
 * finds it; an abort that came first (a group's cancel, while the slot
 * was listed without its task yet) is passed on to it here. */
static inline void baton__tslot_set_task(struct baton_tslot *sl, struct baton_task *t)
{
	baton__spin_lock(&sl->lock);
	sl->task = t;
	t->cancellable = true; /* read by the task alone, once it runs */
	if (BATON_UNLIKELY(sl->cancel_pending)) {
		struct baton_wakelist wl = BATON_WAKELIST_INIT;

		baton__task_cancel_claim(t, &wl); /* not waiting: claims nothing */
		sl->cancel_pending = false;       /* passed on: the slot's next use */
	}
	baton__spin_unlock(&sl->lock);
}

/* task.c: spawn sl's task (baton__tslot_main), given to sl before it can
 * run (baton__tslot_set_task). Failed, the caller frees sl (held) or sl
 * is freed (own: baton__tslot_unspawned). */
int baton__task_spawn_held(baton_sched_t *s, const struct baton_task_attr *attr,
			   struct baton_tslot *sl);
int baton__task_spawn_own(baton_sched_t *s, const struct baton_task_attr *attr,
			  struct baton_tslot *sl);
/* handle.c: free the slot of a spawn that failed. */
void baton__tslot_unspawned(struct baton_tslot *sl);

#endif /* BATON_SRC_SCHED_HANDLE_H */
