/* SPDX-License-Identifier: MIT */
/*
 * src/sync/sync_internal.h - what the wait group, mutex and semaphore
 * build on: the wait protocol of src/sched/wait.h (a task blocks
 * with baton__wait_one, a waker readies it with baton__waiter_wake).
 */
#ifndef BATON_SRC_SYNC_INTERNAL_H
#define BATON_SRC_SYNC_INTERNAL_H

#include <baton/coro.h>
#include <baton/sync.h>

#include "../sched/wait.h"

#endif /* BATON_SRC_SYNC_INTERNAL_H */
