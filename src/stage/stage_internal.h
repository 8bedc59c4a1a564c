/*
 * src/stage/stage_internal.h - what the stage, pass, pool and JSON files
 * share: the pool's layout (a stage reads its creation order and counts
 * itself as a user) and the stage's (stage.c hands items to tasks, pass.c
 * lets tasks through; both block with the wait protocol of
 * src/sched/sched_internal.h).
 */
#ifndef BATON_SRC_STAGE_INTERNAL_H
#define BATON_SRC_STAGE_INTERNAL_H

#include <baton/stage.h>

#include "../sync/units.h"

struct baton_pool {
	struct baton_units u;	     /* the units; u.lock guards users too */
	long users;		     /* stages that list it */
	uint64_t id;		     /* creation order: the acquisition order */
	char name[BATON_NAME_MAX + 1];
};

struct stage_entry {
	void *item;
	int64_t t0; /* accepted, CLOCK_MONOTONIC ns */
};

struct baton_stage {
	baton_spinlock_t lock;
	struct stage_entry *ring;	/* cap entries; count of them from head */
	size_t cap, head, count, limit;
	unsigned running, concurrency;
	bool closed;
	bool active;		/* a dispatcher task exists (or is spawning) */
	unsigned nrunners;	/* runner tasks alive (spawning included) */
	unsigned nidle;		/* of them, waiting in `runners` */
	unsigned next_worker;	/* round robin over the stage's workers */
	struct baton_waitq producers, dispatcher, drainers, runners;
	struct baton_waitq passers; /* tasks waiting to enter (fn NULL) */
	uint64_t submitted, rejected, completed, handler_ns, wait_ns, runners_started;

	/* Fixed at creation. */
	baton_sched_t *sched;
	baton_stage_fn fn;
	void *ctx;
	struct baton_task_attr task;
	int first_worker;	/* runners are pinned to these workers... */
	unsigned nworkers;	/* ...if nworkers > 0 */
	struct baton_stage_need needs[BATON_STAGE_MAX_NEEDS]; /* by pool id */
	size_t nneeds;
	char name[BATON_NAME_MAX + 1];
};

/* Nothing queued, running, dispatching, or alive to take an item. */
static inline bool baton__stage_idle(const struct baton_stage *st)
{
	return !st->active && st->count == 0 && st->passers.len == 0 && st->running == 0 &&
	       st->nrunners == 0;
}

/* Under the lock: claim the drainers into wl once the stage is idle. */
static inline void baton__stage_wake_drainers(struct baton_stage *st,
					      struct baton_wakelist *wl)
{
	if (baton__stage_idle(st))
		baton_waitq_wake_all(&st->drainers, wl, BATON_OK);
}

/* pass.c, under the lock: give free slots to waiting tasks, first come
 * first served, their wait ending at `now`. */
void baton__stage_admit_passers(struct baton_stage *st, int64_t now,
				struct baton_wakelist *wl);


#endif /* BATON_SRC_STAGE_INTERNAL_H */
