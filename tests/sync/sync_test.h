/* SPDX-License-Identifier: MIT */
/*
 * tests/sync_test.h - shared by the tests of include/baton/sync.h
 * (test_sync.c: mutexes, outside tasks, arguments; test_sync_sem.c:
 * semaphores and wait groups). Every test runs in both coroutine models on
 * one and on two workers.
 *
 * Checks inside tasks are check.h's T_CHECK; run() asserts T_VERDICT once
 * the scheduler has returned.
 */
#ifndef BATON_TESTS_SYNC_TEST_H
#define BATON_TESTS_SYNC_TEST_H

#include "check.h"

#include <limits.h>

#include <baton/sync.h>

static UNUSED const struct cfg *cur;	/* the running test's configuration */
static UNUSED baton_sched_t *sched;

static UNUSED void spawn(baton_task_fn fn, void *arg)
{
	struct baton_task_attr a = BATON_TASK_ATTR_INIT;

	a.coro = *cur->attr;
	T_CHECK_RC(baton_sched_spawn(sched, &a, fn, arg), BATON_OK);
}

/* Run `main_fn` as the first task of a fresh scheduler with the test's
 * configuration, until every task has finished. */
static UNUSED void run(void **state, baton_task_fn main_fn, void *arg)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;

	harness_watchdog(30);
	cur = *state;
	st_reset();
	sa.workers = cur->workers;
	assert_int_equal(baton_sched_create(&sched, &sa), BATON_OK);
	spawn(main_fn, arg);
	assert_int_equal(baton_sched_run(sched), BATON_OK);
	assert_int_equal(baton_sched_destroy(sched), BATON_OK);
	T_VERDICT();
}

/* Counters shared by the tasks of one test. Relaxed: they only count and
 * are waited on by polling, ordered by nothing else. */
static UNUSED int arrived;

static UNUSED void arrive(void)
{
	__atomic_add_fetch(&arrived, 1, __ATOMIC_RELAXED);
}

/* From a task: wait until `n` tasks have arrived, then long enough for the
 * last one to reach its blocking call and park. On one worker it has parked
 * before we run again; on two it runs beside us and does nothing else in
 * between, so 20 ms is plenty unless its thread is preempted for that long. */
static UNUSED void await_arrivals(int n)
{
	while (__atomic_load_n(&arrived, __ATOMIC_RELAXED) < n)
		baton_sched_sleep(MS(1) / 2);
	baton_sched_sleep((cur->workers > 1 ? 20 : 5) * MS(1) * st_time_scale());
}

/* The primitives under test, and what they protect. */
static UNUSED baton_mutex_t *mu;
static UNUSED baton_sem_t *sm;
static UNUSED baton_wg_t *wg, *wg2;
static UNUSED long counter;	/* plain: protected by the primitive under test */
static UNUSED int inside;	/* tasks in the critical section now */

static UNUSED void excl_body(void)
{
	/* Plain read, yield, plain write: only exclusion keeps it exact. */
	long v = counter;

	T_CHECK(++inside == 1);
	baton_sched_yield();
	counter = v + 1;
	inside--;
}

/* Timed-out waiters still queued ("ghosts"), built as test_sync.c's
 * test_mutex_ghost explains: X is the time unit of that construction. */
static UNUSED int64_t ghost_x;

static UNUSED void ghost_spinner(void *arg)
{
	int64_t end = st_now() + 3 * ghost_x + MS(2);

	(void)arg;
	while (st_now() < end)
		; /* no yield: the worker does not poll its timers meanwhile */
}

#endif /* BATON_TESTS_SYNC_TEST_H */
