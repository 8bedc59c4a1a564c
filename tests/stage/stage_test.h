/* SPDX-License-Identifier: MIT */
/*
 * tests/stage_test.h - shared by the stage and gate tests (test_stage.c:
 * flow and limits; test_stage_flow.c: backpressure, close, counters, JSON,
 * errors; test_stage_call.c: calls; test_gate.c: gates).
 *
 * Checks inside tasks are check.h's TC_CHECK; run() asserts TC_VERDICT once
 * the scheduler has returned. Each test runs in both coroutine models on
 * one and on two workers (TC_CFG_TESTS).
 */
#ifndef BATON_TESTS_STAGE_TEST_H
#define BATON_TESTS_STAGE_TEST_H

#include "check.h"

#include <baton/stage.h>

static const struct tc_cfg *cur;
static baton_sched_t *sched;

/* A generous deadline for waits that should end soon. */
static inline int64_t patience(void)
{
	return TC_MS(10000) * tc_time_scale();
}

static inline struct baton_stage_attr stage_attr(const char *name, baton_stage_fn fn, void *ctx,
						 size_t cap, unsigned conc)
{
	struct baton_stage_attr a = BATON_STAGE_ATTR_INIT;

	a.name = name;
	a.fn = fn;
	a.ctx = ctx;
	a.queue_capacity = cap;
	a.concurrency = conc;
	a.task.coro = *cur->attr;
	return a;
}

static inline baton_stage_t *make_stage(const char *name, baton_stage_fn fn, void *ctx, size_t cap,
					unsigned conc, const struct baton_stage_need *needs,
					size_t nneeds)
{
	struct baton_stage_attr a = stage_attr(name, fn, ctx, cap, conc);
	baton_stage_t *st = NULL;

	a.needs = needs;
	a.nneeds = nneeds;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_OK);
	return st;
}

static inline baton_gate_t *make_gate(const char *name, size_t cap, unsigned conc,
				      const struct baton_stage_need *needs, size_t nneeds)
{
	struct baton_gate_attr a = BATON_GATE_ATTR_INIT;
	baton_gate_t *g = NULL;

	a.name = name;
	a.queue_capacity = cap;
	a.concurrency = conc;
	a.needs = needs;
	a.nneeds = nneeds;
	assert_int_equal(baton_gate_create(&g, &a), BATON_OK);
	return g;
}

/* The scheduler of this test with `workers` workers, before its stages
 * are made. */
static inline void setup_workers(void **state, unsigned workers)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;

	cur = *state;
	tc_watchdog(60);
	tc_reset();
	sa.workers = workers;
	assert_int_equal(baton_sched_create(&sched, &sa), BATON_OK);
}

/* The same with the configuration's workers. */
static inline void setup(void **state)
{
	setup_workers(state, ((const struct tc_cfg *)*state)->workers);
}

/* Run `main_fn` as a task until the scheduler returns, check, free it. */
static inline void run(baton_task_fn main_fn, void *arg)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	ta.coro = *cur->attr;
	if (main_fn)
		assert_int_equal(baton_sched_spawn(sched, &ta, main_fn, arg), BATON_OK);
	assert_int_equal(baton_sched_run(sched), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(sched), BATON_OK);
	alarm(0);
}

/* How many handlers run at once: enter() returns the new count and raises
 * the recorded maximum. */
struct gauge {
	int now, max;
};

static inline void gauge_enter(struct gauge *g)
{
	/* Relaxed: a count; the maximum is read after the run or after a
	 * drain, which orders it (scheduler hand-offs are acq/rel). */
	int n = __atomic_add_fetch(&g->now, 1, __ATOMIC_RELAXED);
	int m = __atomic_load_n(&g->max, __ATOMIC_RELAXED);

	/* Relaxed: as above; the CAS only keeps the largest value. */
	while (n > m &&
	       !__atomic_compare_exchange_n(&g->max, &m, n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static inline void gauge_leave(struct gauge *g)
{
	/* Relaxed: a count, see gauge_enter. */
	__atomic_sub_fetch(&g->now, 1, __ATOMIC_RELAXED);
}

static inline int gauge_max(struct gauge *g)
{
	/* Relaxed: see gauge_enter. */
	return __atomic_load_n(&g->max, __ATOMIC_RELAXED);
}

static inline void stats(baton_stage_t *st, struct baton_stage_stats *s)
{
	TC_CHECK_RC(baton_stage_snapshot(st, s), BATON_OK);
}

static inline void gate_stats(baton_gate_t *g, struct baton_stage_stats *s)
{
	TC_CHECK_RC(baton_gate_snapshot(g, s), BATON_OK);
}

/* Poll (sleeping) until the stage has completed at least n items. */
static inline void wait_completed(baton_stage_t *st, uint64_t n)
{
	struct baton_stage_stats s;
	int64_t waited = 0;

	for (;;) {
		stats(st, &s);
		if (s.completed >= n || waited > patience())
			break;
		baton_sched_sleep(TC_MS(1) / 2);
		waited += TC_MS(1) / 2;
	}
	TC_CHECK(s.completed >= n);
}

static inline void close_drain(baton_stage_t *st)
{
	TC_CHECK_RC(baton_stage_close(st), BATON_OK);
	TC_CHECK_RC(baton_stage_drain(st, patience()), BATON_OK);
}

static inline void nop_handler(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
}

#endif /* BATON_TESTS_STAGE_TEST_H */
