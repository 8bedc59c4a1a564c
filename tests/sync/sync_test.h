/* SPDX-License-Identifier: MIT */
/*
 * tests/sync_test.h - shared by the tests of include/baton/sync.h
 * (test_sync.c: mutexes, outside tasks, arguments; test_sync_sem.c:
 * semaphores and wait groups). Every test runs in both coroutine models on
 * one and on two workers.
 *
 * Checks inside tasks are check.h's TC_CHECK; run() asserts TC_VERDICT once
 * the scheduler has returned.
 */
#ifndef BATON_TESTS_SYNC_TEST_H
#define BATON_TESTS_SYNC_TEST_H

#include "check.h"

#include <limits.h>

#include <baton/sync.h>

static TC_UNUSED const struct tc_cfg *cur; /* the running test's configuration */
static TC_UNUSED baton_sched_t *sched;

static TC_UNUSED void spawn(baton_task_fn fn, void *arg)
{
	struct baton_task_attr a = BATON_TASK_ATTR_INIT;

	a.coro = *cur->attr;
	TC_CHECK_RC(baton_sched_spawn(sched, &a, fn, arg), BATON_OK);
}

/* Run `main_fn` as the first task of a fresh scheduler with the test's
 * configuration, until every task has finished. */
static TC_UNUSED void run(void **state, baton_task_fn main_fn, void *arg)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;

	tc_watchdog(30);
	cur = *state;
	tc_reset();
	sa.workers = cur->workers;
	assert_int_equal(baton_sched_create(&sched, &sa), BATON_OK);
	spawn(main_fn, arg);
	assert_int_equal(baton_sched_run(sched), BATON_OK);
	assert_int_equal(baton_sched_destroy(sched), BATON_OK);
	TC_VERDICT();
}

/* Counters shared by the tasks of one test. Relaxed: they only count and
 * are waited on by polling, ordered by nothing else. */
static TC_UNUSED int arrived;

static TC_UNUSED void arrive(void)
{
	__atomic_add_fetch(&arrived, 1, __ATOMIC_RELAXED);
}

/* From a task: wait until `n` tasks have arrived, then long enough for the
 * last one to reach its blocking call and park. On one worker it has parked
 * before we run again; on two it runs beside us and does nothing else in
 * between, so 20 ms is plenty unless its thread is preempted for that long. */
static TC_UNUSED void await_arrivals(int n)
{
	while (__atomic_load_n(&arrived, __ATOMIC_RELAXED) < n)
		baton_sched_sleep(TC_MS(1) / 2);
	baton_sched_sleep((cur->workers > 1 ? 20 : 5) * TC_MS(1) * tc_time_scale());
}

/* The primitives under test, and what they protect. */
static TC_UNUSED baton_mutex_t *mu;
static TC_UNUSED baton_sem_t *sm;
static TC_UNUSED baton_wg_t *wg, *wg2;
static TC_UNUSED long counter; /* plain: protected by the primitive under test */
static TC_UNUSED int inside;   /* tasks in the critical section now */

static TC_UNUSED void excl_body(void)
{
	/* Plain read, yield, plain write: only exclusion keeps it exact. */
	long v = counter;

	TC_CHECK(++inside == 1);
	baton_sched_yield();
	counter = v + 1;
	inside--;
}

/* Timed-out waiters still queued ("ghosts"), built as test_sync.c's
 * test_mutex_ghost explains: X is the time unit of that construction. */
static TC_UNUSED int64_t ghost_x;

static TC_UNUSED void ghost_spinner(void *arg)
{
	int64_t end = tc_now() + 3 * ghost_x + TC_MS(2);

	(void)arg;
	while (tc_now() < end)
		; /* no yield: the worker does not poll its timers meanwhile */
}

#endif /* BATON_TESTS_SYNC_TEST_H */
