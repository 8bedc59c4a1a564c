/* SPDX-License-Identifier: MIT */
/*
 * Tests of scheduler tasks waiting for a sequencer (include/baton/seq.h):
 * a task that finds the sequencer taken parks on its worker instead of
 * blocking the worker's thread, so the worker's other tasks keep running
 * while a long sequenced call is in flight; every parked caller is served
 * (by combining or by taking the lock itself) and gets its own result; the
 * calls stay serialised. Threads are involved: also run under TSan.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "check.h"

#include <baton/sched.h>
#include <baton/seq.h>

#define CALLERS 6

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct fixture {
	baton_sched_t *sched;
	baton_seq_t *seq;
	_Atomic int holding; /* the long call is running */
	_Atomic int holder_done;
	_Atomic long ticks;  /* the ticker's turns while `holding` */
	_Atomic long served; /* callers with the right result */
	long serial;         /* touched only on the dedicated stack */
	int64_t hold_ns;
	const struct baton_coro_attr *model; /* of the tasks; NULL: stackful */
};

static struct fixture fx;

/* The long call: runs on the dedicated stack, busy for hold_ns. */
static void *long_call(void *arg)
{
	int64_t end = now_ns() + fx.hold_ns;

	(void)arg;
	/* relaxed: a flag the ticker polls; it orders nothing */
	atomic_store_explicit(&fx.holding, 1, memory_order_relaxed);
	while (now_ns() < end)
		fx.serial++; /* races if two calls ever overlap (TSan) */
	atomic_store_explicit(&fx.holding, 0, memory_order_relaxed);
	return NULL;
}

static void *add_serial(void *arg)
{
	fx.serial++;
	return (void *)((intptr_t)arg * 3);
}

/* Worker 1: holds the sequencer for hold_ns. */
static void holder(void *arg)
{
	(void)arg;
	assert_int_equal(baton_seq_call(fx.seq, long_call, NULL, NULL), BATON_OK);
	atomic_store_explicit(&fx.holder_done, 1, memory_order_release);
}

/* Worker 0: wait until the holder runs, then call and check the result. */
static void caller(void *arg)
{
	void *res = NULL;

	while (!atomic_load_explicit(&fx.holding, memory_order_relaxed) &&
	       !atomic_load_explicit(&fx.holder_done, memory_order_acquire))
		baton_sched_sleep(100000);
	assert_int_equal(baton_seq_call(fx.seq, add_serial, arg, &res), BATON_OK);
	assert_int_equal((intptr_t)res, (intptr_t)arg * 3);
	atomic_fetch_add_explicit(&fx.served, 1, memory_order_relaxed);
}

/* Worker 0: counts its turns while the long call runs. */
static void ticker(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&fx.holder_done, memory_order_acquire)) {
		if (atomic_load_explicit(&fx.holding, memory_order_relaxed))
			atomic_fetch_add_explicit(&fx.ticks, 1, memory_order_relaxed);
		baton_sched_sleep(1000000);
	}
}

static void spawn_on(int worker, void (*fn)(void *), void *arg)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	if (fx.model)
		ta.coro = *fx.model;
	ta.worker = worker;
	ta.flags = BATON_TASK_BOUND;
	assert_int_equal(baton_sched_spawn(fx.sched, &ta, fn, arg), BATON_OK);
}

static void run_case(unsigned batch)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;
	struct baton_seq_attr qa = BATON_SEQ_ATTR_INIT;
	struct baton_seq_stats st;

	tc_watchdog(60);
	fx = (struct fixture){ .hold_ns = 200000000 };
	sa.workers = 2;
	qa.batch = batch;
	assert_int_equal(baton_sched_create(&fx.sched, &sa), BATON_OK);
	assert_int_equal(baton_seq_create(&fx.seq, &qa), BATON_OK);
	spawn_on(1, holder, NULL);
	spawn_on(0, ticker, NULL);
	for (intptr_t i = 1; i <= CALLERS; i++)
		spawn_on(0, caller, (void *)i);
	assert_int_equal(baton_sched_run(fx.sched), BATON_OK);

	assert_int_equal(atomic_load(&fx.served), CALLERS);
	assert_int_equal(baton_seq_stats(fx.seq, &st), BATON_OK);
	/* The callers parked: their worker's thread never slept in the
	 * sequencer, and the ticker on that worker kept getting turns during
	 * the 200 ms call (a blocked worker would give it none). */
	assert_true(st.parks >= 1);
	assert_int_equal(st.sleeps, 0);
	assert_true(atomic_load(&fx.ticks) >= 20);
	assert_int_equal(st.calls, CALLERS + 1);
	assert_int_equal(baton_seq_destroy(fx.seq), BATON_OK);
	assert_int_equal(baton_sched_destroy(fx.sched), BATON_OK);
}

static void test_tasks_park_combining(void **state)
{
	(void)state;
	run_case(16);
}

static void test_tasks_park_no_combining(void **state)
{
	(void)state;
	run_case(0);
}

/* Many tasks on both workers hammering one sequencer: every call returns
 * its own result and the calls never overlap. In both models: a copy-stack
 * task's request lies on its thread's shared stack. */
static void hammer(void *arg)
{
	for (intptr_t i = 0; i < 200; i++) {
		void *res = NULL;

		assert_int_equal(baton_seq_call(fx.seq, add_serial, (void *)i, &res), BATON_OK);
		assert_int_equal((intptr_t)res, i * 3);
		if (i % 16 == 0)
			baton_sched_yield();
	}
	(void)arg;
	atomic_fetch_add_explicit(&fx.served, 1, memory_order_relaxed);
}

static void test_tasks_hammer(void **state)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;

	tc_watchdog(120);
	fx = (struct fixture){ .model = TC_ATTR(state) };
	sa.workers = 2;
	assert_int_equal(baton_sched_create(&fx.sched, &sa), BATON_OK);
	assert_int_equal(baton_seq_create(&fx.seq, NULL), BATON_OK);
	for (int i = 0; i < 64; i++)
		spawn_on(i % 2, hammer, NULL);
	assert_int_equal(baton_sched_run(fx.sched), BATON_OK);
	assert_int_equal(atomic_load(&fx.served), 64);
	assert_int_equal(fx.serial, 64 * 200);
	assert_int_equal(baton_seq_destroy(fx.seq), BATON_OK);
	assert_int_equal(baton_sched_destroy(fx.sched), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tasks_park_combining),
		cmocka_unit_test(test_tasks_park_no_combining),
		TC_MODEL_TESTS(test_tasks_hammer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
