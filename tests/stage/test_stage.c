/* SPDX-License-Identifier: MIT */
/* Stages and resource pools (include/baton/stage.h): items through a
 * two-stage pipeline with exact accounting, the concurrency limit, a pool
 * shared by two stages, resources held exactly around the handler (and
 * KEEP past it), limits changed at run time, handler tasks reused across
 * items, and handlers pinned to the stage's workers. See stage_test.h. */
#include "stage_test.h"

#include <stdint.h>
#include <time.h>

/* --- a two-stage pipeline, exact accounting -------------------------------- */
#define PIPE_N 2000
static long pipe_items[PIPE_N];
static long pipe_sum;
static baton_stage_t *pipe_a, *pipe_b;

static void pipe_double(void *item, void *ctx)
{
	long *v = item;

	*v *= 2;
	if ((*v & 6) == 0)
		baton_sched_yield(); /* some handlers overlap */
	TC_CHECK_RC(baton_stage_submit(ctx, v, -1), BATON_OK);
}

static void pipe_add(void *item, void *ctx)
{
	(void)ctx;
	/* Relaxed: a sum read after the run. */
	__atomic_add_fetch(&pipe_sum, *(long *)item, __ATOMIC_RELAXED);
}

static void pipe_main(void *arg)
{
	struct baton_stage_stats a, b;

	(void)arg;
	for (long i = 0; i < PIPE_N; i++) {
		pipe_items[i] = i;
		TC_CHECK_RC(baton_stage_submit(pipe_a, &pipe_items[i], -1), BATON_OK);
	}
	close_drain(pipe_a); /* a's handlers have all submitted to b */
	close_drain(pipe_b);
	stats(pipe_a, &a);
	stats(pipe_b, &b);
	TC_CHECK(a.submitted == PIPE_N && a.completed == PIPE_N);
	TC_CHECK(b.submitted == PIPE_N && b.completed == PIPE_N);
	TC_CHECK(a.rejected == 0 && b.rejected == 0);
	TC_CHECK(a.queued == 0 && a.running == 0 && b.queued == 0 && b.running == 0);
	TC_CHECK(a.closed && b.closed);
}

static void test_pipeline(void **state)
{
	setup(state);
	pipe_sum = 0;
	pipe_b = make_stage("add", pipe_add, NULL, 4, 2, NULL, 0);
	pipe_a = make_stage("double", pipe_double, pipe_b, 8, 4, NULL, 0);
	run(pipe_main, NULL);
	assert_int_equal(pipe_sum, (long)PIPE_N * (PIPE_N - 1));
	assert_int_equal(baton_stage_destroy(pipe_a), BATON_OK);
	assert_int_equal(baton_stage_destroy(pipe_b), BATON_OK);
}

/* --- the concurrency limit --------------------------------------------------- */
static struct gauge conc_gauge;

static void conc_handler(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
	gauge_enter(&conc_gauge);
	baton_sched_sleep(TC_MS(1));
	gauge_leave(&conc_gauge);
}

static void conc_main(void *arg)
{
	baton_stage_t *st = arg;

	for (int i = 0; i < 30; i++)
		TC_CHECK_RC(baton_stage_submit(st, NULL, -1), BATON_OK);
	close_drain(st);
}

static void test_concurrency_limit(void **state)
{
	baton_stage_t *st;

	setup(state);
	memset(&conc_gauge, 0, sizeof(conc_gauge));
	st = make_stage("limited", conc_handler, NULL, 4, 3, NULL, 0);
	run(conc_main, st);
	assert_int_equal(gauge_max(&conc_gauge), 3);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
}

/* --- two stages share a pool of 2 "db connections" ----------------------------- */
static struct gauge db_gauge;
static baton_pool_t *db_pool;

static void db_handler(void *item, void *ctx)
{
	struct baton_pool_stats ps;

	(void)item;
	(void)ctx;
	gauge_enter(&db_gauge);
	TC_CHECK_RC(baton_pool_snapshot(db_pool, &ps), BATON_OK);
	TC_CHECK(ps.in_use >= 1 && ps.in_use <= 2); /* ours is held */
	baton_sched_sleep(TC_MS(1) / 2);
	gauge_leave(&db_gauge);
}

static void db_main(void *arg)
{
	baton_stage_t **st = arg;
	struct baton_pool_stats ps;

	for (int i = 0; i < 20; i++) {
		TC_CHECK_RC(baton_stage_submit(st[0], NULL, -1), BATON_OK);
		TC_CHECK_RC(baton_stage_submit(st[1], NULL, -1), BATON_OK);
	}
	close_drain(st[0]);
	close_drain(st[1]);
	TC_CHECK_RC(baton_pool_snapshot(db_pool, &ps), BATON_OK);
	TC_CHECK(ps.in_use == 0 && ps.waiters == 0 && ps.acquired == 40);
}

static void test_shared_pool(void **state)
{
	baton_stage_t *st[2];
	struct baton_stage_need need = { NULL, 1, 0 };

	setup(state);
	memset(&db_gauge, 0, sizeof(db_gauge));
	assert_int_equal(baton_pool_create(&db_pool, "db connections", 2), BATON_OK);
	need.pool = db_pool;
	st[0] = make_stage("reads", db_handler, NULL, 8, 4, &need, 1);
	st[1] = make_stage("writes", db_handler, NULL, 8, 4, &need, 1);
	run(db_main, st);
	assert_int_equal(gauge_max(&db_gauge), 2);
	assert_int_equal(baton_pool_destroy(db_pool), BATON_EBUSY); /* listed */
	assert_int_equal(baton_stage_destroy(st[0]), BATON_OK);
	assert_int_equal(baton_stage_destroy(st[1]), BATON_OK);
	assert_int_equal(baton_pool_destroy(db_pool), BATON_OK);
}

/* --- resources held around the handler, and KEEP ------------------------------- */
static baton_pool_t *res_p1, *res_p2, *res_keep;

static void res_handler(void *item, void *ctx)
{
	struct baton_pool_stats a, b, k;

	(void)ctx;
	TC_CHECK_RC(baton_pool_snapshot(res_p1, &a), BATON_OK);
	TC_CHECK_RC(baton_pool_snapshot(res_p2, &b), BATON_OK);
	TC_CHECK_RC(baton_pool_snapshot(res_keep, &k), BATON_OK);
	TC_CHECK(a.in_use == 2 && b.in_use == 1);       /* concurrency 1: ours only */
	TC_CHECK(k.in_use == (long)(intptr_t)item + 1); /* kept from before */
}

static void res_main(void *arg)
{
	baton_stage_t *st = arg;
	struct baton_pool_stats a, b, k;

	for (intptr_t i = 0; i < 5; i++)
		TC_CHECK_RC(baton_stage_submit(st, (void *)i, -1), BATON_OK);
	close_drain(st);
	TC_CHECK_RC(baton_pool_snapshot(res_p1, &a), BATON_OK);
	TC_CHECK_RC(baton_pool_snapshot(res_p2, &b), BATON_OK);
	TC_CHECK_RC(baton_pool_snapshot(res_keep, &k), BATON_OK);
	TC_CHECK(a.in_use == 0 && b.in_use == 0 && k.in_use == 5);
	TC_CHECK_RC(baton_pool_release(res_keep, 6), BATON_EPERM);
	TC_CHECK_RC(baton_pool_release(res_keep, 5), BATON_OK);
}

static void test_resources_around_handler(void **state)
{
	baton_stage_t *st;
	struct baton_stage_need needs[3];

	setup(state);
	/* Created in an order different from the needs list's. */
	assert_int_equal(baton_pool_create(&res_p2, "p2", 1), BATON_OK);
	assert_int_equal(baton_pool_create(&res_keep, "inflight", 100), BATON_OK);
	assert_int_equal(baton_pool_create(&res_p1, "p1", 4), BATON_OK);
	needs[0] = (struct baton_stage_need){ res_p1, 2, 0 };
	needs[1] = (struct baton_stage_need){ res_keep, 1, BATON_STAGE_KEEP };
	needs[2] = (struct baton_stage_need){ res_p2, 1, 0 };
	st = make_stage("held", res_handler, NULL, 8, 1, needs, 3);
	run(res_main, st);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_pool_destroy(res_p1), BATON_OK);
	assert_int_equal(baton_pool_destroy(res_p2), BATON_OK);
	assert_int_equal(baton_pool_destroy(res_keep), BATON_OK);
}

/* --- limits changed at run time ------------------------------------------------ */
static struct gauge rt_gauge[2];
static int rt_phase;

static void rt_handler(void *item, void *ctx)
{
	/* Relaxed: the phase is set by the test task between observations;
	 * a handler that reads the old phase entered before the change. */
	struct gauge *g = &rt_gauge[__atomic_load_n(&rt_phase, __ATOMIC_RELAXED)];

	(void)item;
	(void)ctx;
	gauge_enter(g);
	baton_sched_sleep(TC_MS(3));
	gauge_leave(g);
}

static void rt_conc_main(void *arg)
{
	baton_stage_t *st = arg;

	for (int i = 0; i < 16; i++)
		TC_CHECK_RC(baton_stage_submit(st, NULL, -1), BATON_OK);
	wait_completed(st, 2);
	/* Relaxed: see rt_handler. */
	__atomic_store_n(&rt_phase, 1, __ATOMIC_RELAXED);
	TC_CHECK_RC(baton_stage_set_concurrency(st, 4), BATON_OK);
	close_drain(st);
}

static void test_raise_concurrency(void **state)
{
	baton_stage_t *st;

	setup(state);
	memset(rt_gauge, 0, sizeof(rt_gauge));
	rt_phase = 0;
	st = make_stage("raised", rt_handler, NULL, 16, 1, NULL, 0);
	run(rt_conc_main, st);
	assert_int_equal(gauge_max(&rt_gauge[0]), 1);
	assert_int_equal(gauge_max(&rt_gauge[1]), 4);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
}

static baton_pool_t *rt_pool;

static void rt_pool_main(void *arg)
{
	baton_stage_t *st = arg;
	struct baton_pool_stats ps;
	int64_t waited = 0;

	for (int i = 0; i < 24; i++)
		TC_CHECK_RC(baton_stage_submit(st, NULL, -1), BATON_OK);
	wait_completed(st, 3);
	TC_CHECK_RC(baton_pool_set_capacity(rt_pool, 1), BATON_OK);
	/* The holders from before finish; from then on one at a time. */
	do {
		TC_CHECK_RC(baton_pool_snapshot(rt_pool, &ps), BATON_OK);
		TC_CHECK(ps.capacity == 1);
		if (ps.in_use <= 1)
			break;
		baton_sched_sleep(TC_MS(1) / 2);
		waited += TC_MS(1) / 2;
	} while (waited < patience());
	/* Relaxed: see rt_handler. */
	__atomic_store_n(&rt_phase, 1, __ATOMIC_RELAXED);
	close_drain(st);
}

static void test_shrink_pool(void **state)
{
	baton_stage_t *st;
	struct baton_stage_need need = { NULL, 1, 0 };

	setup(state);
	memset(rt_gauge, 0, sizeof(rt_gauge));
	rt_phase = 0;
	assert_int_equal(baton_pool_create(&rt_pool, "slots", 3), BATON_OK);
	need.pool = rt_pool;
	st = make_stage("shrunk", rt_handler, NULL, 32, 8, &need, 1);
	run(rt_pool_main, st);
	assert_int_equal(gauge_max(&rt_gauge[0]), 3);
	assert_int_equal(gauge_max(&rt_gauge[1]), 1);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_pool_destroy(rt_pool), BATON_OK);
}

/* --- handler tasks are reused, and run where the stage says ------------------ */
#define REUSE_N 2000
static long reuse_done;

static void reuse_handler(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
	/* Relaxed: only counted, read after the run. */
	if (__atomic_add_fetch(&reuse_done, 1, __ATOMIC_RELAXED) % 7 == 0)
		baton_sched_yield();
}

static void reuse_main(void *arg)
{
	baton_stage_t *st = arg;
	struct baton_stage_stats ss;

	for (int i = 0; i < REUSE_N; i++)
		TC_CHECK_RC(baton_stage_submit(st, NULL, -1), BATON_OK);
	TC_CHECK_RC(baton_stage_drain(st, patience()), BATON_OK);
	TC_CHECK_RC(baton_stage_snapshot(st, &ss), BATON_OK);
	TC_CHECK(ss.completed == REUSE_N && ss.running == 0 && ss.runners == 0);
	/* A task per item would be REUSE_N; runners wait for the next item. */
	TC_CHECK(ss.runners_started >= 1 && ss.runners_started <= REUSE_N / 20);
	TC_CHECK_RC(baton_stage_close(st), BATON_OK);
}

static void test_runners_reused(void **state)
{
	baton_stage_t *st;

	setup(state);
	reuse_done = 0;
	st = make_stage("reused", reuse_handler, NULL, 64, 4, NULL, 0);
	run(reuse_main, st);
	assert_int_equal(reuse_done, REUSE_N);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
}

/* Three workers; the stage's handlers may run on workers 1 and 2 only. */
static int pin_seen[3];

static void pin_handler(void *item, void *ctx)
{
	int w = baton_sched_worker_index();

	(void)item;
	(void)ctx;
	TC_CHECK(w == 1 || w == 2);
	if (w >= 0 && w < 3)
		__atomic_add_fetch(&pin_seen[w], 1, __ATOMIC_RELAXED);
	baton_sched_sleep(TC_MS(1) / 10); /* keep several busy at once */
}

static void pin_main(void *arg)
{
	baton_stage_t *st = arg;

	for (int i = 0; i < 200; i++)
		TC_CHECK_RC(baton_stage_submit(st, NULL, -1), BATON_OK);
	close_drain(st);
}

static void test_pinned_workers(void **state)
{
	struct baton_stage_attr a;
	baton_stage_t *st;

	setup_workers(state, 3); /* whatever the configuration says */
	memset(pin_seen, 0, sizeof(pin_seen));
	a = stage_attr("pinned", pin_handler, NULL, 16, 8);
	a.first_worker = 1;
	a.nworkers = 3; /* past the last worker */
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a.first_worker = -1;
	a.nworkers = 1;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a.first_worker = 1;
	a.nworkers = 2;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_OK);
	run(pin_main, st);
	assert_int_equal(pin_seen[0], 0);
	assert_true(pin_seen[1] > 0 && pin_seen[2] > 0);
	assert_int_equal(pin_seen[1] + pin_seen[2], 200);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
}

/* Handlers that hold their worker (they compute, never yield): two items
 * go to the stage's two workers and run at the same time, though the first
 * worker is busy when the second item arrives and nothing on it could run
 * (a dispatcher or a runner pinned there would wait for the first handler
 * to return). The test tells "at the same time" from the handlers' own
 * clock readings, not from a duration. */
#define HOLD_NS (TC_MS(150))
static int64_t hold_start[2], hold_end[2];
static int hold_worker[2];

static void hold_handler(void *item, void *ctx)
{
	long i = (long)(intptr_t)item;
	int64_t t0 = tc_now();

	(void)ctx;
	/* Relaxed, then release: hold_main's acquire of hold_start sees both. */
	__atomic_store_n(&hold_worker[i], baton_sched_worker_index(), __ATOMIC_RELAXED);
	__atomic_store_n(&hold_start[i], t0, __ATOMIC_RELEASE);
	while (tc_now() - t0 < HOLD_NS)
		; /* computing: the worker's other tasks cannot run */
	/* Relaxed: read after the run, which orders it (the drain). */
	__atomic_store_n(&hold_end[i], tc_now(), __ATOMIC_RELAXED);
}

static void hold_main(void *arg)
{
	baton_stage_t *st = arg;
	struct baton_stage_stats ss;

	TC_CHECK_RC(baton_stage_submit(st, (void *)(intptr_t)0, -1), BATON_OK);
	/* The first handler is under way (on its worker) before the second
	 * item is submitted. */
	while (__atomic_load_n(&hold_start[0], __ATOMIC_ACQUIRE) ==
	       0) /* pairs with the handler's release */
		baton_sched_sleep(TC_MS(1) / 10);
	TC_CHECK_RC(baton_stage_submit(st, (void *)(intptr_t)1, -1), BATON_OK);
	TC_CHECK_RC(baton_stage_drain(st, patience()), BATON_OK);
	TC_CHECK_RC(baton_stage_snapshot(st, &ss), BATON_OK);
	TC_CHECK(ss.completed == 2 && ss.runners_started == 2);
	TC_CHECK_RC(baton_stage_close(st), BATON_OK);
}

static void test_spread_over_workers(void **state)
{
	struct baton_stage_attr a;
	baton_stage_t *st;

	setup_workers(state, 3); /* worker 0 submits; 1 and 2 are the stage's */
	memset(hold_start, 0, sizeof(hold_start));
	a = stage_attr("spread", hold_handler, NULL, 16, 8);
	a.first_worker = 1;
	a.nworkers = 2;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_OK);
	run(hold_main, st);
	{
		/* Relaxed: the run is over; its end orders the handlers' stores. */
		int w0 = __atomic_load_n(&hold_worker[0], __ATOMIC_RELAXED);
		int w1 = __atomic_load_n(&hold_worker[1], __ATOMIC_RELAXED);

		assert_true(w0 >= 1 && w0 <= 2);
		assert_true(w1 >= 1 && w1 <= 2);
		assert_int_not_equal(w0, w1);
		/* the second did not wait for the first */
		assert_true(__atomic_load_n(&hold_start[1], __ATOMIC_RELAXED) <
			    __atomic_load_n(&hold_end[0], __ATOMIC_RELAXED));
	}
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_CFG_TESTS(test_pipeline),
		TC_CFG_TESTS(test_concurrency_limit),
		TC_CFG_TESTS(test_shared_pool),
		TC_CFG_TESTS(test_resources_around_handler),
		TC_CFG_TESTS(test_raise_concurrency),
		TC_CFG_TESTS(test_shrink_pool),
		TC_CFG_TESTS(test_runners_reused),
		TC_CFG_TESTS(test_pinned_workers),
		TC_CFG_TESTS(test_spread_over_workers),
	};

	/* e.g. BATON_TEST_FILTER='*1w' to run a few while debugging */
	if (getenv("BATON_TEST_FILTER"))
		cmocka_set_test_filter(getenv("BATON_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
