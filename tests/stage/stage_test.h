/*
 * tests/stage_test.h - shared by the stage tests (test_stage.c: flow and
 * limits; test_stage_flow.c: backpressure, close, counters, JSON, errors).
 *
 * Checks made inside tasks cannot use cmocka's asserts (they longjmp out of
 * the coroutine): CHECK counts failures and prints them; the test asserts
 * the count is zero once the scheduler has returned. Each test runs in both
 * coroutine models on one and on two workers (STAGE_TESTS).
 */
#ifndef BATON_TESTS_STAGE_TEST_H
#define BATON_TESTS_STAGE_TEST_H

#include "harness.h"

#include <stdio.h>

#include <baton/sched.h>
#include <baton/stage.h>

static int failures;

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

static struct cfg cfg_sf1 = { &harness_stackful, 1 };
static struct cfg cfg_sf2 = { &harness_stackful, 2 };
static struct cfg cfg_cs1 = { &harness_copystack, 1 };
static struct cfg cfg_cs2 = { &harness_copystack, 2 };

#define STAGE_TESTS(fn)                                         \
	{ #fn " stackful 1w", fn, NULL, NULL, &cfg_sf1 },       \
	{ #fn " stackful 2w", fn, NULL, NULL, &cfg_sf2 },       \
	{ #fn " copystack 1w", fn, NULL, NULL, &cfg_cs1 },      \
	{ #fn " copystack 2w", fn, NULL, NULL, &cfg_cs2 }

static const struct cfg *cur;
static baton_sched_t *sched;

#define MS 1000000LL

static inline int64_t time_scale(void)
{
	const char *s = getenv("BATON_TEST_TIME_SCALE");

	return s && atoi(s) > 0 ? atoi(s) : 1;
}

/* A generous deadline for waits that should end soon. */
static inline int64_t patience(void)
{
	return 10000 * MS * time_scale();
}

static inline struct baton_stage_attr stage_attr(const char *name,
						 baton_stage_fn fn, void *ctx,
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

static inline baton_stage_t *make_stage(const char *name, baton_stage_fn fn,
					void *ctx, size_t cap, unsigned conc,
					const struct baton_stage_need *needs,
					size_t nneeds)
{
	struct baton_stage_attr a = stage_attr(name, fn, ctx, cap, conc);
	baton_stage_t *st = NULL;

	a.needs = needs;
	a.nneeds = nneeds;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_OK);
	return st;
}

/* The scheduler of this test with `workers` workers, before its stages
 * are made. */
static inline void setup_workers(void **state, unsigned workers)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;

	cur = *state;
	harness_watchdog(60);
	failures = 0;
	sa.workers = workers;
	assert_int_equal(baton_sched_create(&sched, &sa), BATON_OK);
}

/* The same with the configuration's workers. */
static inline void setup(void **state)
{
	setup_workers(state, ((const struct cfg *)*state)->workers);
}

/* Run `main_fn` as a task until the scheduler returns, check, free it. */
static inline void run(baton_task_fn main_fn, void *arg)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	ta.coro = *cur->attr;
	if (main_fn)
		assert_int_equal(baton_sched_spawn(sched, &ta, main_fn, arg),
				 BATON_OK);
	assert_int_equal(baton_sched_run(sched), BATON_OK);
	assert_int_equal(failures, 0);
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
	while (n > m && !__atomic_compare_exchange_n(&g->max, &m, n, 1,
						     __ATOMIC_RELAXED,
						     __ATOMIC_RELAXED))
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
	CHECK_RC(baton_stage_snapshot(st, s), BATON_OK);
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
		baton_sched_sleep(MS / 2);
		waited += MS / 2;
	}
	CHECK(s.completed >= n);
}

static inline void close_drain(baton_stage_t *st)
{
	CHECK_RC(baton_stage_close(st), BATON_OK);
	CHECK_RC(baton_stage_drain(st, patience()), BATON_OK);
}

static inline void nop_handler(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
}

#endif /* BATON_TESTS_STAGE_TEST_H */
