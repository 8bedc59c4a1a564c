/*
 * src/stage/stage_internal.h - what the stage, pool and JSON files share:
 * the pool's layout (a stage reads its creation order and counts itself as
 * a user) and the one blocking step, the wait protocol of
 * src/sched/sched_internal.h with one waiter that carries a value.
 */
#ifndef BATON_SRC_STAGE_INTERNAL_H
#define BATON_SRC_STAGE_INTERNAL_H

#include <baton/stage.h>

#include "../sync/sync_internal.h"

struct baton_pool {
	baton_spinlock_t lock;
	long capacity;		     /* units it may hand out; under lock */
	long in_use;		     /* units held; under lock */
	long users;		     /* stages that list it; under lock */
	struct baton_waitq waiters; /* tasks in baton_pool_acquire, FIFO */
	uint64_t acquired, refused; /* counters; under lock */
	uint64_t id;		     /* creation order: the acquisition order */
	char name[BATON_NAME_MAX + 1];
};

/* Copy a name of 1..BATON_NAME_MAX bytes; false if it is not one. */
bool baton_stage_name_copy(char *dst, const char *src);

#endif /* BATON_SRC_STAGE_INTERNAL_H */
