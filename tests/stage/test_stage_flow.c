/* SPDX-License-Identifier: MIT */
/* Stages (include/baton/stage.h): backpressure, close and drain,
 * snapshot arithmetic while producers race, items queued before the
 * scheduler runs, and the argument checks. See stage_test.h. */
#include "stage_test.h"

/* --- backpressure ------------------------------------------------------------ */
static baton_pool_t *bp_gate;
static int bp_done;

static void bp_blocked(void *arg)
{
	/* Waits for room: admitted once the gate opens. */
	TC_CHECK_RC(baton_stage_submit(arg, NULL, -1), BATON_OK);
	/* Relaxed: a flag read after the drain. */
	__atomic_store_n(&bp_done, 1, __ATOMIC_RELAXED);
}

static void bp_main(void *arg)
{
	baton_stage_t *st = arg;
	struct baton_stage_stats s;
	struct baton_pool_stats ps;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	/* The gate has no units: the head item waits for it, queued. */
	TC_CHECK_RC(baton_stage_submit(st, NULL, 0), BATON_OK);
	TC_CHECK_RC(baton_stage_submit(st, NULL, 0), BATON_OK);
	TC_CHECK_RC(baton_stage_submit(st, NULL, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_stage_submit(st, NULL, TC_MS(5)), BATON_ETIMEDOUT);
	stats(st, &s);
	TC_CHECK(s.queued == 2 && s.running == 0 && s.submitted == 2 && s.rejected == 2);
	ta.coro = *cur->attr;
	TC_CHECK_RC(baton_sched_spawn(sched, &ta, bp_blocked, st), BATON_OK);
	baton_sched_sleep(TC_MS(2)); /* it is now blocked in submit */
	TC_CHECK_RC(baton_pool_snapshot(bp_gate, &ps), BATON_OK);
	TC_CHECK(ps.waiters == 1 && ps.in_use == 0); /* the dispatcher */
	/* Relaxed: see bp_blocked. */
	TC_CHECK(__atomic_load_n(&bp_done, __ATOMIC_RELAXED) == 0);
	stats(st, &s);
	TC_CHECK(s.queued == 2 && s.rejected == 2);
	TC_CHECK_RC(baton_pool_set_capacity(bp_gate, 1), BATON_OK);
	/* Not closed yet: a close now would refuse the waiting producer. */
	wait_completed(st, 3);
	close_drain(st);
	stats(st, &s);
	TC_CHECK(s.submitted == 3 && s.completed == 3 && s.rejected == 2);
}

static void test_backpressure(void **state)
{
	baton_stage_t *st;
	struct baton_stage_need need = { NULL, 1, 0 };

	setup(state);
	bp_done = 0;
	assert_int_equal(baton_pool_create(&bp_gate, "gate", 0), BATON_OK);
	need.pool = bp_gate;
	st = make_stage("gated", nop_handler, NULL, 2, 1, &need, 1);
	run(bp_main, st);
	assert_int_equal(bp_done, 1);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_pool_destroy(bp_gate), BATON_OK);
}

/* --- close while full: waiting producers are refused, queued items run ------- */
static int cd_refused;

static void cd_blocked(void *arg)
{
	TC_CHECK_RC(baton_stage_submit(arg, NULL, -1), BATON_ESHUTDOWN);
	/* Relaxed: a count read after the drain. */
	__atomic_add_fetch(&cd_refused, 1, __ATOMIC_RELAXED);
}

static void cd_main(void *arg)
{
	baton_stage_t *st = arg;
	struct baton_stage_stats s;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	for (int i = 0; i < 3; i++)
		TC_CHECK_RC(baton_stage_submit(st, NULL, 0), BATON_OK);
	TC_CHECK_RC(baton_stage_submit(st, NULL, 0), BATON_EAGAIN);
	ta.coro = *cur->attr;
	for (int i = 0; i < 2; i++)
		TC_CHECK_RC(baton_sched_spawn(sched, &ta, cd_blocked, st), BATON_OK);
	baton_sched_sleep(TC_MS(2));
	TC_CHECK_RC(baton_stage_set_queue_limit(st, 2), BATON_OK); /* below 3 */
	stats(st, &s);
	TC_CHECK(s.queued == 3 && s.queue_limit == 2);
	TC_CHECK_RC(baton_stage_drain(st, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_stage_drain(st, TC_MS(2)), BATON_ETIMEDOUT);
	TC_CHECK_RC(baton_stage_close(st), BATON_OK);
	TC_CHECK_RC(baton_stage_close(st), BATON_ESHUTDOWN);
	TC_CHECK_RC(baton_stage_submit(st, NULL, -1), BATON_ESHUTDOWN);
	TC_CHECK_RC(baton_pool_set_capacity(bp_gate, 1), BATON_OK);
	TC_CHECK_RC(baton_stage_drain(st, patience()), BATON_OK);
	stats(st, &s);
	TC_CHECK(s.submitted == 3 && s.completed == 3 && s.queued == 0);
	TC_CHECK(s.rejected == 4); /* EAGAIN, 2 refused waiters, 1 after close */
}

static void test_close_drains(void **state)
{
	baton_stage_t *st;
	struct baton_stage_need need = { NULL, 1, 0 };

	setup(state);
	cd_refused = 0;
	assert_int_equal(baton_pool_create(&bp_gate, "gate", 0), BATON_OK);
	need.pool = bp_gate;
	st = make_stage("closing", nop_handler, NULL, 3, 4, &need, 1);
	run(cd_main, st);
	assert_int_equal(cd_refused, 2);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_pool_destroy(bp_gate), BATON_OK);
}

/* --- counters add up while producers race ---------------------------------- */
#define ACC_PRODUCERS 4
static long acc_calls, acc_ok;
static int acc_producing;

static void acc_handler(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
	if (((uintptr_t)item & 3) == 0)
		baton_sched_yield();
}

static void acc_producer(void *arg)
{
	long n = tc_scale(3000, 300);

	for (long i = 0; i < n; i++) {
		int rc = baton_stage_submit(arg, (void *)(uintptr_t)i, 0);

		TC_CHECK(rc == BATON_OK || rc == BATON_EAGAIN);
		/* Relaxed: counts read after every producer is done. */
		__atomic_add_fetch(&acc_calls, 1, __ATOMIC_RELAXED);
		if (rc == BATON_OK)
			__atomic_add_fetch(&acc_ok, 1, __ATOMIC_RELAXED);
		if ((i & 7) == 0)
			baton_sched_yield();
	}
	/* Release: the monitor's acquire load then sees our counts. */
	__atomic_sub_fetch(&acc_producing, 1, __ATOMIC_RELEASE);
}

static void acc_main(void *arg)
{
	baton_stage_t *st = arg;
	struct baton_stage_stats s;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	ta.coro = *cur->attr;
	acc_producing = ACC_PRODUCERS;
	for (int i = 0; i < ACC_PRODUCERS; i++)
		TC_CHECK_RC(baton_sched_spawn(sched, &ta, acc_producer, st), BATON_OK);
	/* Acquire: pairs with each producer's release. */
	while (__atomic_load_n(&acc_producing, __ATOMIC_ACQUIRE) > 0) {
		stats(st, &s);
		TC_CHECK(s.submitted == s.completed + s.running + s.queued);
		TC_CHECK(s.running <= s.concurrency && s.queued <= s.queue_limit);
		baton_sched_yield();
	}
	close_drain(st);
	stats(st, &s);
	TC_CHECK(s.completed == s.submitted);
	TC_CHECK(s.submitted == (uint64_t)acc_ok);
	TC_CHECK(s.submitted + s.rejected == (uint64_t)acc_calls);
	TC_CHECK(s.rejected > 0); /* a queue of 4 is full now and then */
}

static void test_snapshot_adds_up(void **state)
{
	baton_stage_t *st;

	setup(state);
	acc_calls = acc_ok = 0;
	st = make_stage("racy", acc_handler, NULL, 4, 2, NULL, 0);
	run(acc_main, st);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
}

/* --- JSON of a deterministic case; items queued before the run ------------- */
/* Items submitted before the scheduler runs wait, and flow once it runs. */
static void test_before_run(void **state)
{
	baton_stage_t *st;
	baton_pool_t *p;
	struct baton_stage_stats s;

	assert_int_equal(baton_pool_create(&p, "db", 2), BATON_OK);
	struct baton_stage_need need = { p, 1, 0 };
	setup(state);
	st = make_stage("parse \"1\"", nop_handler, NULL, 3, 2, &need, 1);
	/* From the test thread, before the scheduler runs: try only. */
	for (int i = 0; i < 3; i++)
		assert_int_equal(baton_stage_submit(st, NULL, 0), BATON_OK);
	assert_int_equal(baton_stage_submit(st, NULL, 0), BATON_EAGAIN);
	assert_int_equal(baton_stage_submit(st, NULL, TC_MS(1)), BATON_ENOSCHED);
	assert_int_equal(baton_stage_drain(st, TC_MS(1)), BATON_ENOSCHED);
	assert_int_equal(baton_stage_drain(st, 0), BATON_EAGAIN);
	assert_int_equal(baton_stage_destroy(st), BATON_EBUSY);
	assert_int_equal(baton_stage_snapshot(st, &s), BATON_OK);
	assert_int_equal(s.queued, 3);
	assert_int_equal(s.rejected, 1);
	/* The run processes what was queued, then returns. */
	run(NULL, NULL);
	assert_int_equal(baton_stage_snapshot(st, &s), BATON_OK);
	assert_int_equal(s.completed, 3);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_pool_destroy(p), BATON_OK);
}

/* --- argument checks --------------------------------------------------------- */
static void test_bad_args(void **state)
{
	struct baton_stage_attr a;
	struct baton_stage_need needs[2];
	struct baton_stage_stats s;
	struct baton_pool_stats ps;
	baton_stage_t *st;
	baton_pool_t *p;
	char longname[BATON_NAME_MAX + 2];

	cur = *state;
	tc_watchdog(60);
	assert_int_equal(baton_sched_create(&sched, NULL), BATON_OK);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(baton_pool_create(NULL, "p", 1), BATON_EINVAL);
	assert_int_equal(baton_pool_create(&p, NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_pool_create(&p, "", 1), BATON_EINVAL);
	assert_int_equal(baton_pool_create(&p, longname, 1), BATON_EINVAL);
	assert_int_equal(baton_pool_create(&p, "p", -1), BATON_EINVAL);
	assert_int_equal(baton_pool_create(&p, "p", 1), BATON_OK);
	assert_int_equal(baton_pool_acquire(NULL, 1, 0), BATON_EINVAL);
	assert_int_equal(baton_pool_acquire(p, 0, 0), BATON_EINVAL);
	assert_int_equal(baton_pool_acquire(p, 1, TC_MS(1)), BATON_ENOSCHED);
	assert_int_equal(baton_pool_acquire(p, 1, 0), BATON_OK);
	assert_int_equal(baton_pool_acquire(p, 1, 0), BATON_EAGAIN);
	assert_int_equal(baton_pool_destroy(p), BATON_EBUSY); /* in use */
	assert_int_equal(baton_pool_release(p, 2), BATON_EPERM);
	assert_int_equal(baton_pool_release(p, 0), BATON_EINVAL);
	assert_int_equal(baton_pool_release(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_pool_set_capacity(p, -1), BATON_EINVAL);
	assert_int_equal(baton_pool_set_capacity(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_pool_snapshot(p, NULL), BATON_EINVAL);
	assert_int_equal(baton_pool_snapshot(p, &ps), BATON_OK);
	assert_int_equal(ps.in_use, 1);
	assert_int_equal(ps.acquired, 1);
	assert_int_equal(ps.refused, 1);
	assert_int_equal(baton_pool_release(p, 1), BATON_OK);

	a = stage_attr("s", nop_handler, NULL, 4, 1);
	assert_int_equal(baton_stage_create(NULL, sched, &a), BATON_EINVAL);
	assert_int_equal(baton_stage_create(&st, NULL, &a), BATON_EINVAL);
	assert_int_equal(baton_stage_create(&st, sched, NULL), BATON_EINVAL);
	a.fn = NULL; /* a stage to pass through has no workers of its own */
	a.nworkers = 1;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a = stage_attr(NULL, nop_handler, NULL, 4, 1);
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a = stage_attr("s", nop_handler, NULL, 0, 1);
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a = stage_attr("s", nop_handler, NULL, BATON_STAGE_MAX_CAPACITY + 1, 1);
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a = stage_attr("s", nop_handler, NULL, 4, 0);
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a = stage_attr("s", nop_handler, NULL, 4, 1);
	a.nneeds = 1;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	needs[0] = (struct baton_stage_need){ p, 1, 0 };
	needs[1] = (struct baton_stage_need){ p, 1, 0 };
	a.needs = needs;
	a.nneeds = 2; /* the same pool twice */
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a.nneeds = BATON_STAGE_MAX_NEEDS + 1;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a.nneeds = 1;
	needs[0].units = 0;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	needs[0].units = 1;
	needs[0].flags = 2;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	needs[0].flags = 0;
	needs[0].pool = NULL;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	needs[0].pool = p;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_OK);

	assert_int_equal(baton_stage_submit(NULL, NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_close(NULL), BATON_EINVAL);
	assert_int_equal(baton_stage_drain(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_drain(st, 0), BATON_OK); /* idle */
	assert_int_equal(baton_stage_set_concurrency(st, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_set_concurrency(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_stage_set_queue_limit(st, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_set_queue_limit(st, 5), BATON_EINVAL);
	assert_int_equal(baton_stage_set_queue_limit(st, 4), BATON_OK);
	assert_int_equal(baton_stage_snapshot(st, NULL), BATON_EINVAL);
	assert_int_equal(baton_stage_snapshot(NULL, &s), BATON_EINVAL);
	assert_int_equal(baton_stage_close(st), BATON_OK);
	assert_int_equal(baton_stage_submit(st, NULL, 0), BATON_ESHUTDOWN);
	assert_int_equal(baton_pool_destroy(p), BATON_EBUSY); /* listed */
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_stage_destroy(NULL), BATON_OK);
	assert_int_equal(baton_pool_destroy(p), BATON_OK);
	assert_int_equal(baton_pool_destroy(NULL), BATON_OK);
	assert_int_equal(baton_sched_destroy(sched), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_CFG_TESTS(test_backpressure),
		TC_CFG_TESTS(test_close_drains),
		TC_CFG_TESTS(test_snapshot_adds_up),
		TC_CFG_TESTS(test_before_run),
		cmocka_unit_test_prestate(test_bad_args, &tc_cfg_sf1),
	};

	/* e.g. BATON_TEST_FILTER='*1w' to run a few while debugging */
	if (getenv("BATON_TEST_FILTER"))
		cmocka_set_test_filter(getenv("BATON_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
