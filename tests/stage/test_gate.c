/* SPDX-License-Identifier: MIT */
/* Gates that tasks pass through (include/baton/stage.h, rule 6): the
 * concurrency limit with tasks queued in arrival order, refusals (queue
 * full, timeout, close) and their counts, needs taken on enter (KEEP ones
 * kept past leave), a raised limit that admits the queue, drain, the
 * errors of the calls, and the deprecated stage without handler that
 * forwards to a gate. See stage_test.h. */
#include "stage_test.h"

#include <string.h>

#include <baton/sync.h>

/* --- the limit, and the queue in arrival order ------------------------------ */
#define LIM_TASKS 12
static struct gauge lim_gauge;
static baton_gate_t *lim_st;
static baton_wg_t *lim_wg;

static void lim_task(void *arg)
{
	struct baton_gate_pass p = BATON_GATE_PASS_INIT;

	(void)arg;
	TC_CHECK_RC(baton_gate_enter(lim_st, &p, patience()), BATON_OK);
	TC_CHECK(p.gate == lim_st);
	gauge_enter(&lim_gauge);
	baton_sched_sleep(TC_MS(1));
	gauge_leave(&lim_gauge);
	TC_CHECK_RC(baton_gate_leave(&p, NULL), BATON_OK);
	TC_CHECK(p.gate == NULL);
	baton_wg_done(lim_wg);
}

static void lim_main(void *arg)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	struct baton_stage_stats s;

	(void)arg;
	ta.coro = *cur->attr;
	TC_CHECK_RC(baton_wg_create(&lim_wg), BATON_OK);
	baton_wg_add(lim_wg, LIM_TASKS);
	for (int i = 0; i < LIM_TASKS; i++)
		TC_CHECK_RC(baton_sched_spawn(sched, &ta, lim_task, NULL), BATON_OK);
	TC_CHECK_RC(baton_wg_wait(lim_wg, patience()), BATON_OK);
	baton_wg_destroy(lim_wg);
	gate_stats(lim_st, &s);
	TC_CHECK(s.submitted == LIM_TASKS && s.completed == LIM_TASKS);
	TC_CHECK(s.rejected == 0 && s.running == 0 && s.queued == 0);
	TC_CHECK(s.handler_ns >= (uint64_t)TC_MS(LIM_TASKS));
	TC_CHECK(s.wait_ns > 0);                            /* ten of them waited for a slot */
	TC_CHECK(s.runners == 0 && s.runners_started == 0); /* no task of its own */
}

static void test_gate_limit(void **state)
{
	setup(state);
	lim_gauge = (struct gauge){ 0, 0 };
	lim_st = make_gate("limit", LIM_TASKS, 2, NULL, 0);
	run(lim_main, NULL);
	assert_int_equal(gauge_max(&lim_gauge), 2);
	assert_int_equal(baton_gate_destroy(lim_st), BATON_OK);
}

/* Who holds the one slot, in the order they got it. */
#define FIFO_TASKS 6
static baton_gate_t *fifo_st;
static int fifo_order[FIFO_TASKS], fifo_n;

static void fifo_task(void *arg)
{
	struct baton_gate_pass p = BATON_GATE_PASS_INIT;

	TC_CHECK_RC(baton_gate_enter(fifo_st, &p, patience()), BATON_OK);
	fifo_order[fifo_n++] = (int)(intptr_t)arg; /* one at a time: no race */
	baton_sched_sleep(TC_MS(1) / 4);
	TC_CHECK_RC(baton_gate_leave(&p, NULL), BATON_OK);
}

static void fifo_main(void *arg)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	struct baton_gate_pass p = BATON_GATE_PASS_INIT;
	struct baton_stage_stats s;

	(void)arg;
	ta.coro = *cur->attr;
	ta.worker = 0; /* one worker: they queue in spawn order */
	ta.flags = BATON_TASK_BOUND;
	TC_CHECK_RC(baton_gate_enter(fifo_st, &p, 0), BATON_OK); /* hold it */
	for (intptr_t i = 0; i < FIFO_TASKS; i++) {
		TC_CHECK_RC(baton_sched_spawn(sched, &ta, fifo_task, (void *)i), BATON_OK);
		/* Let it queue before the next one is spawned. */
		for (;;) {
			gate_stats(fifo_st, &s);
			if (s.queued == (size_t)i + 1)
				break;
			baton_sched_yield();
		}
	}
	TC_CHECK_RC(baton_gate_leave(&p, NULL), BATON_OK);
	TC_CHECK_RC(baton_gate_drain(fifo_st, patience()), BATON_OK);
	for (int i = 0; i < FIFO_TASKS; i++)
		TC_CHECK(fifo_order[i] == i);
}

static void test_gate_fifo(void **state)
{
	setup(state);
	fifo_n = 0;
	fifo_st = make_gate("fifo", FIFO_TASKS, 1, NULL, 0);
	run(fifo_main, NULL);
	assert_int_equal(fifo_n, FIFO_TASKS);
	assert_int_equal(baton_gate_destroy(fifo_st), BATON_OK);
}

/* --- refusals: queue full, timeout 0, timed out, closed ------------------- */
static baton_gate_t *ref_st;

static void ref_waiter(void *arg)
{
	struct baton_gate_pass p = BATON_GATE_PASS_INIT;

	/* Queued behind the holder until the gate closes. */
	TC_CHECK_RC(baton_gate_enter(ref_st, &p, patience()), (int)(intptr_t)arg);
	TC_CHECK(p.gate == NULL);
}

static void ref_main(void *arg)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	struct baton_gate_pass p = BATON_GATE_PASS_INIT, q = BATON_GATE_PASS_INIT;
	struct baton_stage_stats s;

	(void)arg;
	ta.coro = *cur->attr;
	TC_CHECK_RC(baton_gate_enter(ref_st, &p, 0), BATON_OK);
	/* The slot is taken: timeout 0 is refused, a timeout runs out. */
	TC_CHECK_RC(baton_gate_enter(ref_st, &q, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_gate_enter(ref_st, &q, TC_MS(1)), BATON_ETIMEDOUT);
	gate_stats(ref_st, &s);
	TC_CHECK(s.rejected == 2 && s.submitted == 1 && s.queued == 0 && s.running == 1);
	/* One waits (the queue holds one): a third is refused at once. */
	TC_CHECK_RC(baton_sched_spawn(sched, &ta, ref_waiter, (void *)(intptr_t)BATON_ESHUTDOWN),
		    BATON_OK);
	do {
		baton_sched_yield();
		gate_stats(ref_st, &s);
	} while (s.queued == 0);
	TC_CHECK_RC(baton_gate_enter(ref_st, &q, patience()), BATON_EAGAIN);
	TC_CHECK(q.gate == NULL);
	/* Close refuses the waiter, not the holder. */
	TC_CHECK_RC(baton_gate_close(ref_st), BATON_OK);
	TC_CHECK_RC(baton_gate_enter(ref_st, &q, 0), BATON_ESHUTDOWN);
	TC_CHECK_RC(baton_gate_drain(ref_st, 0), BATON_EAGAIN); /* p is inside */
	TC_CHECK_RC(baton_gate_leave(&p, NULL), BATON_OK);
	TC_CHECK_RC(baton_gate_leave(&p, NULL), BATON_EINVAL); /* twice */
	TC_CHECK_RC(baton_gate_drain(ref_st, patience()), BATON_OK);
	gate_stats(ref_st, &s);
	/* EAGAIN, ETIMEDOUT, EAGAIN (full), the waiter, ESHUTDOWN. */
	TC_CHECK(s.rejected == 5 && s.submitted == 1 && s.completed == 1);
	TC_CHECK(s.queued == 0 && s.running == 0 && s.closed);
}

static void test_gate_refusals(void **state)
{
	setup(state);
	ref_st = make_gate("refusals", 1, 1, NULL, 0);
	run(ref_main, NULL);
	assert_int_equal(baton_gate_destroy(ref_st), BATON_OK);
}

/* --- needs: taken on enter, released on leave unless KEEP ------------------- */
static baton_pool_t *need_db, *need_conn;
static baton_gate_t *need_st;

static long in_use(baton_pool_t *p)
{
	struct baton_pool_stats ps;

	TC_CHECK_RC(baton_pool_snapshot(p, &ps), BATON_OK);
	return ps.in_use;
}

static void need_main(void *arg)
{
	struct baton_gate_pass p = BATON_GATE_PASS_INIT, q = BATON_GATE_PASS_INIT;
	struct baton_stage_stats s;
	int64_t end = 0;

	(void)arg;
	TC_CHECK_RC(baton_gate_enter(need_st, &p, patience()), BATON_OK);
	TC_CHECK(in_use(need_db) == 1 && in_use(need_conn) == 1);
	/* A slot is free, the db pool (capacity 1) is not: refused, and the
	 * connection unit it took first is given back. */
	TC_CHECK_RC(baton_gate_enter(need_st, &q, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_gate_enter(need_st, &q, TC_MS(1)), BATON_ETIMEDOUT);
	TC_CHECK(in_use(need_conn) == 1);
	gate_stats(need_st, &s);
	TC_CHECK(s.running == 1 && s.rejected == 2 && s.submitted == 1);
	TC_CHECK_RC(baton_gate_leave(&p, &end), BATON_OK);
	TC_CHECK(end > 0);
	/* db went back, the KEEP connection unit did not. */
	TC_CHECK(in_use(need_db) == 0 && in_use(need_conn) == 1);
	TC_CHECK_RC(baton_pool_release(need_conn, 1), BATON_OK);
	/* The step's start given by the caller: no clock read, same count. */
	q.t0 = end;
	TC_CHECK_RC(baton_gate_enter(need_st, &q, 0), BATON_OK);
	TC_CHECK(q.t0 == end);
	TC_CHECK_RC(baton_gate_leave(&q, NULL), BATON_OK);
	TC_CHECK_RC(baton_pool_release(need_conn, 1), BATON_OK);
	gate_stats(need_st, &s);
	TC_CHECK(s.completed == 2 && s.running == 0);
}

static void test_gate_needs(void **state)
{
	struct baton_stage_need needs[2];

	setup(state);
	assert_int_equal(baton_pool_create(&need_conn, "connections", 4), BATON_OK);
	assert_int_equal(baton_pool_create(&need_db, "db", 1), BATON_OK);
	/* Listed out of order: taken in creation order all the same. */
	needs[0] = (struct baton_stage_need){ need_db, 1, 0 };
	needs[1] = (struct baton_stage_need){ need_conn, 1, BATON_STAGE_KEEP };
	need_st = make_gate("needs", 4, 2, needs, 2);
	run(need_main, NULL);
	assert_int_equal(baton_gate_destroy(need_st), BATON_OK);
	assert_int_equal(baton_pool_destroy(need_db), BATON_OK);
	assert_int_equal(baton_pool_destroy(need_conn), BATON_OK);
}

/* --- raising the limit admits the queue at once ------------------------------ */
static baton_gate_t *raise_st;
static baton_wg_t *raise_wg;

static void raise_task(void *arg)
{
	struct baton_gate_pass p = BATON_GATE_PASS_INIT;

	(void)arg;
	TC_CHECK_RC(baton_gate_enter(raise_st, &p, patience()), BATON_OK);
	baton_wg_done(raise_wg);
	TC_CHECK_RC(baton_wg_wait(raise_wg, patience()), BATON_OK); /* all inside */
	TC_CHECK_RC(baton_gate_leave(&p, NULL), BATON_OK);
}

static void raise_main(void *arg)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	struct baton_stage_stats s;

	(void)arg;
	ta.coro = *cur->attr;
	TC_CHECK_RC(baton_wg_create(&raise_wg), BATON_OK);
	baton_wg_add(raise_wg, 4);
	for (int i = 0; i < 4; i++)
		TC_CHECK_RC(baton_sched_spawn(sched, &ta, raise_task, NULL), BATON_OK);
	do {
		baton_sched_yield();
		gate_stats(raise_st, &s);
	} while (s.queued < 3);
	TC_CHECK(s.running == 1);
	/* Four must be inside at once to pass the wait group. */
	TC_CHECK_RC(baton_gate_set_concurrency(raise_st, 4), BATON_OK);
	TC_CHECK_RC(baton_gate_drain(raise_st, patience()), BATON_OK);
	baton_wg_destroy(raise_wg);
}

static void test_gate_raise(void **state)
{
	setup(state);
	raise_st = make_gate("raise", 8, 1, NULL, 0);
	run(raise_main, NULL);
	assert_int_equal(baton_gate_destroy(raise_st), BATON_OK);
}

/* --- the calls' errors ------------------------------------------------------ */
static void test_gate_bad_args(void **state)
{
	struct baton_gate_pass p = BATON_GATE_PASS_INIT;
	struct baton_gate_attr a;
	struct baton_stage_stats s;
	baton_gate_t *g;

	setup(state);
	assert_int_equal(baton_gate_attr_init(NULL), BATON_EINVAL);
	assert_int_equal(baton_gate_attr_init(&a), BATON_OK);
	assert_int_equal(baton_gate_create(&g, &a), BATON_EINVAL); /* no name */
	a.name = "bad";
	assert_int_equal(baton_gate_create(NULL, &a), BATON_EINVAL);
	assert_int_equal(baton_gate_create(&g, NULL), BATON_EINVAL);
	a.concurrency = 0;
	assert_int_equal(baton_gate_create(&g, &a), BATON_EINVAL);
	a.concurrency = 1;
	a.queue_capacity = 0;
	assert_int_equal(baton_gate_create(&g, &a), BATON_EINVAL);
	a.queue_capacity = BATON_STAGE_MAX_CAPACITY + 1;
	assert_int_equal(baton_gate_create(&g, &a), BATON_EINVAL);
	a.queue_capacity = 4;
	a.nneeds = 1; /* needs NULL */
	assert_int_equal(baton_gate_create(&g, &a), BATON_EINVAL);
	g = make_gate("pass", 4, 1, NULL, 0);
	assert_int_equal(baton_gate_enter(NULL, &p, 0), BATON_EINVAL);
	assert_int_equal(baton_gate_enter(g, NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_gate_leave(NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_gate_leave(&p, NULL), BATON_EINVAL);
	assert_int_equal(baton_gate_close(NULL), BATON_EINVAL);
	assert_int_equal(baton_gate_drain(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_gate_set_concurrency(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_gate_set_concurrency(g, 0), BATON_EINVAL);
	assert_int_equal(baton_gate_set_queue_limit(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_gate_set_queue_limit(g, 0), BATON_EINVAL);
	assert_int_equal(baton_gate_set_queue_limit(g, 5), BATON_EINVAL); /* > capacity */
	assert_int_equal(baton_gate_set_queue_limit(g, 2), BATON_OK);
	assert_int_equal(baton_gate_snapshot(NULL, &s), BATON_EINVAL);
	assert_int_equal(baton_gate_snapshot(g, NULL), BATON_EINVAL);
	/* Outside a task: timeout 0 only. */
	assert_int_equal(baton_gate_enter(g, &p, 1), BATON_ENOSCHED);
	assert_int_equal(baton_gate_drain(g, 1), BATON_ENOSCHED);
	assert_int_equal(baton_gate_enter(g, &p, 0), BATON_OK);
	assert_int_equal(baton_gate_enter(g, &p, 0), BATON_EINVAL); /* in use */
	assert_int_equal(baton_gate_drain(g, 0), BATON_EAGAIN);
	assert_int_equal(baton_gate_destroy(g), BATON_EBUSY);
	assert_int_equal(baton_gate_leave(&p, NULL), BATON_OK);
	assert_int_equal(baton_gate_drain(g, 0), BATON_OK);
	assert_int_equal(baton_gate_snapshot(g, &s), BATON_OK);
	assert_true(s.completed == 1 && s.submitted == 1 && s.queue_limit == 2);
	assert_true(s.runners == 0 && s.runners_started == 0 && strcmp(s.name, "pass") == 0);
	assert_int_equal(baton_gate_close(g), BATON_OK);
	assert_int_equal(baton_gate_close(g), BATON_ESHUTDOWN);
	assert_int_equal(baton_gate_enter(g, &p, 0), BATON_ESHUTDOWN);
	assert_int_equal(baton_gate_destroy(g), BATON_OK);
	assert_int_equal(baton_gate_destroy(NULL), BATON_OK);
	assert_int_equal(baton_sched_destroy(sched), BATON_OK);
	alarm(0);
}

/* --- deprecated: a stage without handler, a front for a gate ------------------ */
static void test_stage_without_handler(void **state)
{
	struct baton_stage_pass p = BATON_STAGE_PASS_INIT;
	struct baton_stage_need need;
	struct baton_stage_attr a;
	struct baton_stage_stats s;
	struct baton_stage_call c = BATON_STAGE_CALL_INIT;
	baton_pool_t *pool;
	baton_stage_t *st, *items;
	int64_t end = 0;

	setup(state);
	assert_int_equal(baton_pool_create(&pool, "kept", 1), BATON_OK);
	need = (struct baton_stage_need){ pool, 1, BATON_STAGE_KEEP };
	st = make_stage("old", NULL, NULL, 4, 1, &need, 1); /* still accepted */
	items = make_stage("items", nop_handler, NULL, 4, 1, NULL, 0);
	assert_int_equal(baton_stage_submit(st, NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_call(st, &c, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_enter(items, &p, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_enter(NULL, &p, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_enter(st, NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_leave(NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_stage_leave(&p, NULL), BATON_EINVAL);
	assert_int_equal(baton_stage_enter(st, &p, 1), BATON_ENOSCHED);
	assert_int_equal(baton_stage_enter(st, &p, 0), BATON_OK);
	assert_true(p.stage == st && p.t0 > 0);
	assert_int_equal(baton_stage_enter(st, &p, 0), BATON_EINVAL); /* in use */
	assert_int_equal(baton_stage_destroy(st), BATON_EBUSY);
	assert_int_equal(baton_stage_set_concurrency(st, 2), BATON_OK);
	assert_int_equal(baton_stage_set_queue_limit(st, 5), BATON_EINVAL);
	assert_int_equal(baton_stage_set_queue_limit(st, 3), BATON_OK);
	assert_int_equal(baton_stage_snapshot(st, &s), BATON_OK);
	assert_true(s.running == 1 && s.concurrency == 2 && s.queue_limit == 3);
	assert_int_equal(baton_stage_leave(&p, &end), BATON_OK);
	/* The KEEP unit comes out in the token, released once. */
	assert_true(p.stage == NULL && p.kept.gate != NULL && end >= p.t0);
	assert_int_equal(baton_pool_destroy(pool), BATON_EBUSY);
	assert_int_equal(baton_stage_kept_release(&p.kept), BATON_OK);
	assert_true(p.kept.gate == NULL);
	assert_int_equal(baton_stage_drain(st, 0), BATON_OK);
	assert_int_equal(baton_stage_close(st), BATON_OK);
	assert_int_equal(baton_stage_close(st), BATON_ESHUTDOWN);
	assert_int_equal(baton_stage_snapshot(st, &s), BATON_OK);
	assert_true(s.completed == 1 && s.closed && strcmp(s.name, "old") == 0);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	/* Without handler: no workers, no handler flags. */
	a = stage_attr("workers", NULL, NULL, 4, 1);
	a.nworkers = 1;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a = stage_attr("flags", NULL, NULL, 4, 1);
	a.flags = BATON_STAGE_CANCEL_ABANDONED;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	assert_int_equal(baton_stage_destroy(items), BATON_OK);
	assert_int_equal(baton_pool_destroy(pool), BATON_OK);
	assert_int_equal(baton_sched_destroy(sched), BATON_OK);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_CFG_TESTS(test_gate_limit),
		TC_CFG_TESTS(test_gate_fifo),
		TC_CFG_TESTS(test_gate_refusals),
		TC_CFG_TESTS(test_gate_needs),
		TC_CFG_TESTS(test_gate_raise),
		cmocka_unit_test_prestate(test_gate_bad_args, &tc_cfg_sf1),
		cmocka_unit_test_prestate(test_stage_without_handler, &tc_cfg_sf1),
	};

	if (getenv("BATON_TEST_FILTER"))
		cmocka_set_test_filter(getenv("BATON_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
