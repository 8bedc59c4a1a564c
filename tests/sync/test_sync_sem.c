/* SPDX-License-Identifier: MIT */
/* Counting semaphores and wait groups (include/baton/sync.h): exclusion and
 * a bound on units out, strict FIFO across request sizes, timeouts and
 * ghosts at the head of the queue, try; a wait group over many tasks on
 * two workers, with several waiters, timeouts and its error codes.
 * Helpers: sync_test.h. */
#include "sync_test.h"

/* === semaphores ========================================================= */
/* At most `limit` units out at once, each task taking `need` of them. */
static long units_out, units_peak;

static void sem_excl_task(void *arg)
{
	long need = (long)arg, iters = tc_scale(100, 20);

	for (long i = 0; i < iters; i++) {
		TC_CHECK_RC(baton_sem_acquire(sm, need, -1), BATON_OK);
		/* Atomic: several tasks may hold units at once. */
		long out = __atomic_add_fetch(&units_out, need, __ATOMIC_RELAXED);
		if (out > __atomic_load_n(&units_peak, __ATOMIC_RELAXED))
			__atomic_store_n(&units_peak, out, __ATOMIC_RELAXED);
		TC_CHECK(out <= 3);
		baton_sched_yield();
		__atomic_sub_fetch(&units_out, need, __ATOMIC_RELAXED);
		TC_CHECK_RC(baton_sem_release(sm, need), BATON_OK);
	}
	TC_CHECK_RC(baton_wg_done(wg), BATON_OK);
}

/* A binary semaphore as a mutex, then three units shared by tasks taking
 * one or two. */
static void sem_bin_task(void *arg)
{
	long iters = (long)arg;

	for (long i = 0; i < iters; i++) {
		TC_CHECK_RC(baton_sem_acquire(sm, 1, -1), BATON_OK);
		excl_body();
		TC_CHECK_RC(baton_sem_release(sm, 1), BATON_OK);
	}
	TC_CHECK_RC(baton_wg_done(wg), BATON_OK);
}

static void sem_excl_main(void *arg)
{
	long tasks = tc_scale(12, 4), iters = tc_scale(200, 30), v;

	(void)arg;
	TC_CHECK_RC(baton_wg_add(wg, tasks), BATON_OK);
	for (long i = 0; i < tasks; i++)
		spawn(sem_bin_task, (void *)iters);
	TC_CHECK_RC(baton_wg_wait(wg, -1), BATON_OK);
	TC_CHECK(counter == tasks * iters);
	TC_CHECK_RC(baton_sem_release(sm, 2), BATON_OK); /* 3 units now */
	TC_CHECK_RC(baton_wg_add(wg, tasks), BATON_OK);
	for (long i = 0; i < tasks; i++)
		spawn(sem_excl_task, (void *)(1 + i % 2));
	TC_CHECK_RC(baton_wg_wait(wg, -1), BATON_OK);
	v = baton_sem_value(sm);
	TC_CHECK(v == 3);
	TC_CHECK(units_peak >= 2 && units_peak <= 3);
}

static void test_sem_exclusion(void **state)
{
	counter = units_out = units_peak = 0;
	inside = 0;
	assert_int_equal(baton_sem_create(&sm, 1), BATON_OK);
	assert_int_equal(baton_wg_create(&wg), BATON_OK);
	run(state, sem_excl_main, NULL);
	assert_int_equal(baton_sem_destroy(sm), BATON_OK);
	assert_int_equal(baton_wg_destroy(wg), BATON_OK);
}

/* --- FIFO: a large request at the head holds back small ones -------------
 * Which requests have been granted: a bit per request id. */
static unsigned got;

static unsigned got_now(void)
{
	/* Relaxed: polled; the semaphore orders what matters. */
	return __atomic_load_n(&got, __ATOMIC_RELAXED);
}

/* From a task: wait until the granted set is `want`, then a little longer
 * to see that nothing more is granted. */
static void expect_got(unsigned want)
{
	int64_t deadline = tc_now() + TC_MS(2000);

	while ((got_now() & want) != want && tc_now() < deadline)
		baton_sched_sleep(TC_MS(1) / 2);
	baton_sched_sleep(TC_MS(2));
	TC_CHECK(got_now() == want);
	if (got_now() != want)
		fprintf(stderr, "granted %#x, want %#x\n", got_now(), want);
}

struct sem_req {
	int id;
	long n;
	int64_t timeout;
	int want;
};

static void sem_fifo_waiter(void *arg)
{
	const struct sem_req *r = arg;

	arrive();
	TC_CHECK_RC(baton_sem_acquire(sm, r->n, r->timeout), r->want);
	if (r->want == BATON_OK)
		__atomic_or_fetch(&got, 1u << r->id, __ATOMIC_RELAXED);
}

static void sem_fifo_main(void *arg)
{
	/* Queue, in order: 0 asks 3, 1 asks 1, 2 asks 5 but gives up after
	 * 5 ms, 3 asks 1, 4 asks 2. */
	static const struct sem_req reqs[] = {
		{ 0, 3, -1, BATON_OK }, { 1, 1, -1, BATON_OK }, { 2, 5, TC_MS(5), BATON_ETIMEDOUT },
		{ 3, 1, -1, BATON_OK }, { 4, 2, -1, BATON_OK },
	};
	long v;

	(void)arg;
	for (int i = 0; i < 5; i++) {
		spawn(sem_fifo_waiter, (void *)&reqs[i]);
		await_arrivals(i + 1);
	}
	TC_CHECK_RC(baton_sem_destroy(sm), BATON_EBUSY);
	TC_CHECK_RC(baton_sem_acquire(sm, 1, 0), BATON_EAGAIN);
	/* Two units: not enough for 0 at the head, so 1 waits too, and so
	 * does a try for one unit. */
	TC_CHECK_RC(baton_sem_release(sm, 2), BATON_OK);
	expect_got(0);
	TC_CHECK_RC(baton_sem_acquire(sm, 1, 0), BATON_EAGAIN);
	v = baton_sem_value(sm);
	TC_CHECK(v == 2);
	/* Four: 0 takes 3 and 1 takes 1; 2 has timed out; 3 waits. */
	TC_CHECK_RC(baton_sem_release(sm, 2), BATON_OK);
	expect_got(0x3);
	TC_CHECK_RC(baton_sem_release(sm, 1), BATON_OK);
	expect_got(0xb);
	/* One unit free, but 4 at the head asks 2: a try for 1 must wait. */
	TC_CHECK_RC(baton_sem_release(sm, 1), BATON_OK);
	expect_got(0xb);
	TC_CHECK_RC(baton_sem_acquire(sm, 1, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_sem_release(sm, 1), BATON_OK);
	expect_got(0x1b);
	v = baton_sem_value(sm);
	TC_CHECK(v == 0);
}

static void test_sem_fifo(void **state)
{
	arrived = 0;
	got = 0;
	assert_int_equal(baton_sem_create(&sm, 0), BATON_OK);
	run(state, sem_fifo_main, NULL);
	assert_int_equal(got, 0x1b);
	assert_int_equal(baton_sem_destroy(sm), BATON_OK);
}

/* A timed-out head that held back a smaller request lets it through when it
 * leaves, without any release: 1 unit free, 0 asks 4 and gives up (after
 * 1 has queued behind it), 1 asks 1. */
static struct sem_req head_reqs[] = {
	{ 0, 4, 0 /* set below */, BATON_ETIMEDOUT },
	{ 1, 1, -1, BATON_OK },
};

static void sem_head_main(void *arg)
{
	int64_t t0 = tc_now();
	long v;

	(void)arg;
	head_reqs[0].timeout = TC_MS(100) * tc_time_scale();
	for (int i = 0; i < 2; i++) {
		spawn(sem_fifo_waiter, (void *)&head_reqs[i]);
		await_arrivals(i + 1);
	}
	/* 1 waits behind 0 though a unit is free (unless the machine was so
	 * slow that 0 has already given up). */
	if (tc_now() - t0 < head_reqs[0].timeout)
		TC_CHECK(got_now() == 0);
	expect_got(0x2);
	v = baton_sem_value(sm);
	TC_CHECK(v == 0);
	TC_CHECK_RC(baton_sem_release(sm, 2), BATON_OK);
	TC_CHECK_RC(baton_sem_acquire(sm, 2, 0), BATON_OK);     /* try, enough */
	TC_CHECK_RC(baton_sem_acquire(sm, 1, 0), BATON_EAGAIN); /* try, none */
	TC_CHECK_RC(baton_sem_acquire(sm, 1, TC_MS(5)), BATON_ETIMEDOUT);
	TC_CHECK_RC(baton_sem_release(sm, 1), BATON_OK);
	TC_CHECK_RC(baton_sem_acquire(sm, 1, TC_MS(5)), BATON_OK); /* usable */
}

static void test_sem_timeout(void **state)
{
	arrived = 0;
	got = 0;
	assert_int_equal(baton_sem_create(&sm, 1), BATON_OK);
	run(state, sem_head_main, NULL);
	assert_int_equal(got, 0x2);
	assert_int_equal(baton_sem_destroy(sm), BATON_OK);
}

/* A ghost at the head of a semaphore's queue (built as in test_mutex_ghost)
 * asks more than is free: it must not hold back a try that fits. */
static void ghost_sem_waiter(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_sem_acquire(sm, 3, 3 * ghost_x), BATON_ETIMEDOUT);
}

static void ghost_sem_main(void *arg)
{
	long v;

	(void)arg;
	spawn(ghost_sem_waiter, NULL);
	spawn(ghost_spinner, NULL);
	baton_sched_sleep(2 * ghost_x);
	TC_CHECK_RC(baton_sem_release(sm, 1), BATON_OK);
	if (cur->workers == 1)
		TC_CHECK_RC(baton_sem_acquire(sm, 1, 0), BATON_OK);
	else
		TC_CHECK_RC(baton_sem_acquire(sm, 1, -1), BATON_OK);
	v = baton_sem_value(sm);
	TC_CHECK(v == 0);
}

static void test_sem_ghost(void **state)
{
	ghost_x = TC_MS(5) * tc_time_scale();
	assert_int_equal(baton_sem_create(&sm, 0), BATON_OK);
	run(state, ghost_sem_main, NULL);
	assert_int_equal(baton_sem_destroy(sm), BATON_OK);
}
/* === wait groups ======================================================== */
static int finished;

static void wg_worker(void *arg)
{
	long naps = (long)arg;

	for (long i = 0; i < naps; i++)
		if (i % 2)
			baton_sched_yield();
		else
			baton_sched_sleep(10000 + (int64_t)i * 1000);
	/* Relaxed: the wait group's release orders it for the waiter. */
	__atomic_add_fetch(&finished, 1, __ATOMIC_RELAXED);
	TC_CHECK_RC(baton_wg_done(wg), BATON_OK);
}

static void wg_waiter(void *arg)
{
	long tasks = (long)arg;

	TC_CHECK_RC(baton_wg_wait(wg, -1), BATON_OK);
	TC_CHECK(__atomic_load_n(&finished, __ATOMIC_RELAXED) == tasks);
	TC_CHECK_RC(baton_wg_done(wg2), BATON_OK);
}

static void wg_many_main(void *arg)
{
	long tasks = tc_scale(400, 40), waiters = 4, n;

	(void)arg;
	TC_CHECK_RC(baton_wg_wait(wg, 0), BATON_OK); /* count 0 */
	TC_CHECK_RC(baton_wg_add(wg, tasks), BATON_OK);
	TC_CHECK_RC(baton_wg_wait(wg, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_wg_add(wg2, waiters), BATON_OK);
	for (long i = 0; i < waiters; i++)
		spawn(wg_waiter, (void *)tasks);
	for (long i = 0; i < tasks; i++)
		spawn(wg_worker, (void *)(i % 5));
	TC_CHECK_RC(baton_wg_wait(wg, -1), BATON_OK);
	TC_CHECK(__atomic_load_n(&finished, __ATOMIC_RELAXED) == tasks);
	n = baton_wg_count(wg);
	TC_CHECK(n == 0);
	TC_CHECK_RC(baton_wg_wait(wg2, -1), BATON_OK); /* all waiters woke */
	/* Reuse: count up and down again. */
	TC_CHECK_RC(baton_wg_add(wg, 2), BATON_OK);
	TC_CHECK_RC(baton_wg_wait(wg, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_wg_add(wg, -2), BATON_OK);
	TC_CHECK_RC(baton_wg_wait(wg, TC_MS(5)), BATON_OK);
}

static void test_wg_many(void **state)
{
	finished = 0;
	assert_int_equal(baton_wg_create(&wg), BATON_OK);
	assert_int_equal(baton_wg_create(&wg2), BATON_OK);
	run(state, wg_many_main, NULL);
	assert_int_equal(baton_wg_destroy(wg), BATON_OK);
	assert_int_equal(baton_wg_destroy(wg2), BATON_OK);
}

static void wg_timeout_waiter(void *arg)
{
	int64_t t0 = tc_now();

	(void)arg;
	arrive();
	TC_CHECK_RC(baton_wg_wait(wg, TC_MS(5)), BATON_ETIMEDOUT);
	TC_CHECK(tc_now() - t0 >= TC_MS(5));
	arrive();
	TC_CHECK_RC(baton_wg_wait(wg, -1), BATON_OK);
}

static void wg_timeout_main(void *arg)
{
	long n;

	(void)arg;
	TC_CHECK_RC(baton_wg_add(wg, 2), BATON_OK);
	TC_CHECK_RC(baton_wg_add(wg, -3), BATON_EINVAL); /* below zero */
	n = baton_wg_count(wg);
	TC_CHECK(n == 2);
	TC_CHECK_RC(baton_wg_add(wg, LONG_MAX), BATON_EINVAL); /* overflow */
	spawn(wg_timeout_waiter, NULL);
	await_arrivals(2); /* timed out, waiting again */
	TC_CHECK_RC(baton_wg_destroy(wg), BATON_EBUSY);
	TC_CHECK_RC(baton_wg_done(wg), BATON_OK);
	TC_CHECK_RC(baton_wg_done(wg), BATON_OK);
	TC_CHECK_RC(baton_wg_done(wg), BATON_EINVAL); /* would go below zero */
	n = baton_wg_count(wg);
	TC_CHECK(n == 0);
}

static void test_wg_timeout(void **state)
{
	arrived = 0;
	assert_int_equal(baton_wg_create(&wg), BATON_OK);
	run(state, wg_timeout_main, NULL);
	assert_int_equal(baton_wg_destroy(wg), BATON_OK);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_CFG_TESTS(test_sem_exclusion), TC_CFG_TESTS(test_sem_fifo),
		TC_CFG_TESTS(test_sem_timeout),   TC_CFG_TESTS(test_sem_ghost),
		TC_CFG_TESTS(test_wg_many),       TC_CFG_TESTS(test_wg_timeout),
	};

	/* e.g. BATON_TEST_FILTER='test_wg_*' to run a few while debugging */
	if (getenv("BATON_TEST_FILTER"))
		cmocka_set_test_filter(getenv("BATON_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
