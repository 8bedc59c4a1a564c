/*
 * tests/sync_test.h - shared by the tests of include/baton/sync.h
 * (test_sync.c: mutexes, outside tasks, arguments; test_sync_sem.c:
 * semaphores and wait groups). Every test runs in both coroutine models on
 * one and on two workers.
 *
 * Checks made inside tasks cannot use cmocka's asserts (they longjmp out of
 * the coroutine): CHECK counts failures and prints them; run() asserts the
 * count is zero once the scheduler has returned.
 */
#ifndef BATON_TESTS_SYNC_TEST_H
#define BATON_TESTS_SYNC_TEST_H

#include "harness.h"

#include <limits.h>
#include <stdio.h>
#include <time.h>

#include <baton/sched.h>
#include <baton/sync.h>

#define UNUSED __attribute__((unused))

static UNUSED int failures;

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			/* Relaxed: only counted, read after the run. */   \
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n",       \
				__FILE__, __LINE__, #cond);                \
		}                                                          \
	} while (0)

#define CHECK_RC(call, want)                                               \
	do {                                                               \
		int rc_ = (call);                                          \
		if (rc_ != (want)) {                                       \
			/* Relaxed: only counted, read after the run. */   \
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); \
			fprintf(stderr, "%s:%d: %s returned %d (%s), "     \
				"want %s\n", __FILE__, __LINE__, #call, rc_, \
				baton_strerror(rc_), #want);               \
		}                                                          \
	} while (0)

struct cfg {
	const struct baton_coro_attr *attr;
	unsigned workers;
};

static UNUSED struct cfg cfg_sf1 = { &harness_stackful, 1 };
static UNUSED struct cfg cfg_sf2 = { &harness_stackful, 2 };
static UNUSED struct cfg cfg_cs1 = { &harness_copystack, 1 };
static UNUSED struct cfg cfg_cs2 = { &harness_copystack, 2 };

/* One cmocka test per model and worker count, named after both. */
#define SYNC_TESTS(fn)                                          \
	{ #fn " stackful 1w", fn, NULL, NULL, &cfg_sf1 },       \
	{ #fn " stackful 2w", fn, NULL, NULL, &cfg_sf2 },       \
	{ #fn " copystack 1w", fn, NULL, NULL, &cfg_cs1 },      \
	{ #fn " copystack 2w", fn, NULL, NULL, &cfg_cs2 }

static UNUSED const struct cfg *cur;	/* the running test's configuration */
static UNUSED baton_sched_t *sched;

static UNUSED int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static UNUSED int64_t time_scale(void)
{
	const char *s = getenv("BATON_TEST_TIME_SCALE");

	return s && atoi(s) > 0 ? atoi(s) : 1;
}

#define MS 1000000LL

static UNUSED void spawn(baton_task_fn fn, void *arg)
{
	struct baton_task_attr a = BATON_TASK_ATTR_INIT;

	a.coro = *cur->attr;
	CHECK_RC(baton_sched_spawn(sched, &a, fn, arg), BATON_OK);
}

/* Run `main_fn` as the first task of a fresh scheduler with the test's
 * configuration, until every task has finished. */
static UNUSED void run(void **state, baton_task_fn main_fn, void *arg)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;

	harness_watchdog(30);
	cur = *state;
	failures = 0;
	sa.workers = cur->workers;
	assert_int_equal(baton_sched_create(&sched, &sa), BATON_OK);
	spawn(main_fn, arg);
	assert_int_equal(baton_sched_run(sched), BATON_OK);
	assert_int_equal(baton_sched_destroy(sched), BATON_OK);
	assert_int_equal(failures, 0);
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
		baton_sched_sleep(MS / 2);
	baton_sched_sleep((cur->workers > 1 ? 20 : 5) * MS * time_scale());
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

	CHECK(++inside == 1);
	baton_sched_yield();
	counter = v + 1;
	inside--;
}

/* Timed-out waiters still queued ("ghosts"), built as test_sync.c's
 * test_mutex_ghost explains: X is the time unit of that construction. */
static UNUSED int64_t ghost_x;

static UNUSED void ghost_spinner(void *arg)
{
	int64_t end = mono_ns() + 3 * ghost_x + 2 * MS;

	(void)arg;
	while (mono_ns() < end)
		; /* no yield: the worker does not poll its timers meanwhile */
}

#endif /* BATON_TESTS_SYNC_TEST_H */
