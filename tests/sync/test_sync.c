/* SPDX-License-Identifier: MIT */
/* Mutexes (include/baton/sync.h): mutual exclusion, FIFO hand-off, timeouts
 * that leave nothing queued, ghosts, try; then every primitive called from
 * outside tasks and with bad arguments. Helpers: sync_test.h. */
#include "sync_test.h"

/* Order in which tasks got the mutex, written while holding it. */
static int order[16], norder;

/* === mutexes ============================================================ */
static void mutex_excl_task(void *arg)
{
	long iters = (long)arg;

	for (long i = 0; i < iters; i++) {
		TC_CHECK_RC(baton_mutex_lock(mu, -1), BATON_OK);
		excl_body();
		TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK);
		if (i % 7 == 0)
			baton_sched_yield();
	}
	TC_CHECK_RC(baton_wg_done(wg), BATON_OK);
}

static void mutex_excl_main(void *arg)
{
	long tasks = tc_scale(16, 6), iters = tc_scale(200, 30);

	(void)arg;
	TC_CHECK_RC(baton_wg_add(wg, tasks), BATON_OK);
	for (long i = 0; i < tasks; i++)
		spawn(mutex_excl_task, (void *)iters);
	TC_CHECK_RC(baton_wg_wait(wg, -1), BATON_OK);
	TC_CHECK(counter == tasks * iters);
}

static void test_mutex_exclusion(void **state)
{
	counter = 0;
	inside = 0;
	assert_int_equal(baton_mutex_create(&mu), BATON_OK);
	assert_int_equal(baton_wg_create(&wg), BATON_OK);
	run(state, mutex_excl_main, NULL);
	assert_int_equal(baton_mutex_destroy(mu), BATON_OK);
	assert_int_equal(baton_wg_destroy(wg), BATON_OK);
}

/* --- FIFO hand-off; a timed-out waiter is skipped -------------------------
 * The holder queues waiters 0..5 one after another; waiter 3 gives up after
 * 5 ms. On unlock the mutex must pass to 0, 1, 2, 4, 5 in that order, never
 * to 3, and never be free in between: the holder's own try-lock right after
 * its unlock fails, because ownership has already passed. */
static void fifo_waiter(void *arg)
{
	long id = (long)arg;
	int64_t t0 = tc_now();

	arrive();
	if (id == 3) {
		TC_CHECK_RC(baton_mutex_lock(mu, TC_MS(5)), BATON_ETIMEDOUT);
		TC_CHECK(tc_now() - t0 >= TC_MS(5));
		TC_CHECK_RC(baton_mutex_unlock(mu), BATON_EPERM);
		return;
	}
	TC_CHECK_RC(baton_mutex_lock(mu, -1), BATON_OK);
	order[norder++] = (int)id;
	baton_sched_yield();
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK);
}

static void mutex_fifo_main(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_mutex_lock(mu, -1), BATON_OK);
	for (long i = 0; i < 6; i++) {
		spawn(fifo_waiter, (void *)i);
		await_arrivals((int)i + 1);
	}
	/* Waiter 3 has timed out by now (5 ms after it queued). */
	baton_sched_sleep(TC_MS(5));
	TC_CHECK_RC(baton_mutex_destroy(mu), BATON_EBUSY); /* held, waited on */
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK);
	TC_CHECK_RC(baton_mutex_lock(mu, 0), BATON_EAGAIN); /* no barging */
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_EPERM);   /* not ours now */
	TC_CHECK_RC(baton_mutex_lock(mu, -1), BATON_OK);    /* after the rest */
	TC_CHECK(norder == 5);
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK);
}

static void test_mutex_fifo(void **state)
{
	static const int want[] = { 0, 1, 2, 4, 5 };

	arrived = norder = 0;
	assert_int_equal(baton_mutex_create(&mu), BATON_OK);
	run(state, mutex_fifo_main, NULL);
	assert_int_equal(norder, 5);
	assert_memory_equal(order, want, sizeof(want));
	assert_int_equal(baton_mutex_destroy(mu), BATON_OK);
}

/* --- timeouts and try ----------------------------------------------------- */
static void timeout_waiter(void *arg)
{
	int64_t t0 = tc_now();

	(void)arg;
	arrive();
	TC_CHECK_RC(baton_mutex_lock(mu, TC_MS(5)), BATON_ETIMEDOUT);
	TC_CHECK(tc_now() - t0 >= TC_MS(5));
	TC_CHECK_RC(baton_mutex_lock(mu, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_EPERM); /* held by another */
	arrive();
	/* Still usable: this one gets it once the holder lets go. */
	TC_CHECK_RC(baton_mutex_lock(mu, -1), BATON_OK);
	TC_CHECK_RC(baton_mutex_lock(mu, 0), BATON_EDEADLK);
	TC_CHECK_RC(baton_mutex_lock(mu, -1), BATON_EDEADLK);
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK);
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_EPERM); /* not any more */
}

static void mutex_timeout_main(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_EPERM); /* never locked */
	TC_CHECK_RC(baton_mutex_lock(mu, 0), BATON_OK);   /* try, free */
	spawn(timeout_waiter, NULL);
	await_arrivals(2); /* it timed out and queued again */
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK);
}

static void test_mutex_timeout(void **state)
{
	arrived = 0;
	assert_int_equal(baton_mutex_create(&mu), BATON_OK);
	run(state, mutex_timeout_main, NULL);
	assert_int_equal(baton_mutex_destroy(mu), BATON_OK);
}
/* --- a waiter whose timeout fired but which has not run yet --------------
 * Its waiter is still linked (a "ghost") when the holder unlocks: unlock
 * must skip it, not hand it the mutex. On one worker this is built without
 * relying on timing: the holder parks first with a 2X timeout, the waiter
 * after it with 3X, so the holder's deadline is the earlier; then a task
 * spins (no yield, so the worker cannot poll its timers) until both are
 * past. The next poll fires both in deadline order: the holder runs first
 * and finds the ghost. On two workers the tasks may be stolen and the ghost
 * may not form; the test then checks only that the outcome is consistent. */
static int64_t ghost_x;
static int ghost_rc;
static int ghost_rc;

static void ghost_mutex_waiter(void *arg)
{
	(void)arg;
	ghost_rc = baton_mutex_lock(mu, 3 * ghost_x);
	TC_CHECK(ghost_rc == BATON_ETIMEDOUT || (cur->workers > 1 && ghost_rc == BATON_OK));
	if (ghost_rc == BATON_OK)
		TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK);
}
static void ghost_mutex_main(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_mutex_lock(mu, -1), BATON_OK);
	spawn(ghost_mutex_waiter, NULL);
	spawn(ghost_spinner, NULL);
	baton_sched_sleep(2 * ghost_x); /* the waiter queues, then the spin */
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK);
	if (cur->workers == 1)
		TC_CHECK_RC(baton_mutex_lock(mu, 0), BATON_OK); /* not the ghost's */
	else
		TC_CHECK_RC(baton_mutex_lock(mu, -1), BATON_OK);
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK);
}

static void test_mutex_ghost(void **state)
{
	ghost_x = TC_MS(5) * tc_time_scale();
	assert_int_equal(baton_mutex_create(&mu), BATON_OK);
	run(state, ghost_mutex_main, NULL);
	assert_int_equal(baton_mutex_destroy(mu), BATON_OK); /* nobody owns it */
}
/* === outside tasks, bad arguments ======================================= */
static void *nested_body(void *arg, void *in)
{
	(void)arg;
	(void)in;
	/* In a coroutine the task resumed: acts for the task, cannot park. */
	TC_CHECK_RC(baton_mutex_lock(mu, -1), BATON_ENOSCHED);
	TC_CHECK_RC(baton_sem_acquire(sm, 1, TC_MS(5)), BATON_ENOSCHED);
	TC_CHECK_RC(baton_wg_wait(wg, -1), BATON_ENOSCHED);
	TC_CHECK_RC(baton_mutex_lock(mu, 0), BATON_OK);
	return NULL;
}

static void nested_main(void *arg)
{
	baton_coro_t *co;

	(void)arg;
	/* The task's own model: a copy-stack coroutine resumed from a
	 * copy-stack task goes through the copier. (That path once drew a
	 * rare ASan report in copy_in: stale redzones of an unmapped stack;
	 * test_copystack_asan_repeat runs it many times.) */
	TC_CHECK_RC(baton_coro_create(&co, cur->attr, nested_body, NULL), BATON_OK);
	TC_CHECK_RC(baton_coro_resume(co, NULL, NULL), BATON_OK);
	TC_CHECK_RC(baton_coro_destroy(co), BATON_OK);
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK); /* the task's own lock */
}

static void mutex_thread_owned(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_EPERM); /* the thread's */
	TC_CHECK_RC(baton_mutex_lock(mu, 0), BATON_EAGAIN);
}

static void test_outside_tasks(void **state)
{
	long v;

	cur = *state;
	tc_reset();
	assert_int_equal(baton_mutex_create(&mu), BATON_OK);
	assert_int_equal(baton_sem_create(&sm, 1), BATON_OK);
	assert_int_equal(baton_wg_create(&wg), BATON_OK);
	assert_int_equal(baton_wg_add(wg, 1), BATON_OK);

	assert_int_equal(baton_mutex_lock(mu, -1), BATON_ENOSCHED);
	assert_int_equal(baton_mutex_lock(mu, TC_MS(5)), BATON_ENOSCHED);
	assert_int_equal(baton_sem_acquire(sm, 1, -1), BATON_ENOSCHED);
	assert_int_equal(baton_wg_wait(wg, TC_MS(5)), BATON_ENOSCHED);
	assert_int_equal(baton_wg_wait(wg, 0), BATON_EAGAIN);
	assert_int_equal(baton_wg_done(wg), BATON_OK);
	assert_int_equal(baton_wg_wait(wg, 0), BATON_OK);
	assert_int_equal(baton_wg_wait(wg, -1), BATON_ENOSCHED);

	/* Try-lock works from a thread, which then owns the mutex. */
	assert_int_equal(baton_mutex_unlock(mu), BATON_EPERM);
	assert_int_equal(baton_mutex_lock(mu, 0), BATON_OK);
	assert_int_equal(baton_mutex_lock(mu, 0), BATON_EDEADLK);
	assert_int_equal(baton_mutex_destroy(mu), BATON_EBUSY);
	run(state, mutex_thread_owned, NULL);
	assert_int_equal(baton_mutex_unlock(mu), BATON_OK);
	assert_int_equal(baton_mutex_unlock(mu), BATON_EPERM);

	assert_int_equal(baton_sem_acquire(sm, 1, 0), BATON_OK);
	assert_int_equal(baton_sem_acquire(sm, 1, 0), BATON_EAGAIN);
	assert_int_equal(baton_sem_release(sm, 1), BATON_OK);
	v = baton_sem_value(sm);
	assert_int_equal(v, 1);

	run(state, nested_main, NULL);
	assert_int_equal(baton_mutex_destroy(mu), BATON_OK);
	assert_int_equal(baton_sem_destroy(sm), BATON_OK);
	assert_int_equal(baton_wg_destroy(wg), BATON_OK);
}

static void test_bad_args(void **state)
{
	baton_sem_t *s;
	long v;

	(void)state;
	assert_int_equal(baton_wg_create(NULL), BATON_EINVAL);
	assert_int_equal(baton_wg_add(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_wg_done(NULL), BATON_EINVAL);
	assert_int_equal(baton_wg_wait(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_wg_count(NULL), BATON_EINVAL);
	assert_int_equal(baton_wg_destroy(NULL), BATON_OK);
	assert_int_equal(baton_wg_create(&wg), BATON_OK);
	assert_int_equal(baton_wg_count(wg), 0);
	assert_int_equal(baton_wg_done(wg), BATON_EINVAL);
	assert_int_equal(baton_wg_add(wg, -1), BATON_EINVAL);
	assert_int_equal(baton_wg_add(wg, LONG_MAX), BATON_OK);
	assert_int_equal(baton_wg_add(wg, 1), BATON_EINVAL);
	assert_int_equal(baton_wg_add(wg, LONG_MIN), BATON_EINVAL);
	assert_int_equal(baton_wg_add(wg, -LONG_MAX), BATON_OK);
	assert_int_equal(baton_wg_destroy(wg), BATON_OK);

	assert_int_equal(baton_mutex_create(NULL), BATON_EINVAL);
	assert_int_equal(baton_mutex_lock(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_mutex_lock(NULL, -1), BATON_EINVAL);
	assert_int_equal(baton_mutex_unlock(NULL), BATON_EINVAL);
	assert_int_equal(baton_mutex_destroy(NULL), BATON_OK);

	assert_int_equal(baton_sem_create(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_sem_create(&s, -1), BATON_EINVAL);
	assert_int_equal(baton_sem_acquire(NULL, 1, 0), BATON_EINVAL);
	assert_int_equal(baton_sem_release(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_sem_value(NULL), BATON_EINVAL);
	assert_int_equal(baton_sem_destroy(NULL), BATON_OK);
	assert_int_equal(baton_sem_create(&s, LONG_MAX), BATON_OK);
	assert_int_equal(baton_sem_acquire(s, 0, 0), BATON_EINVAL);
	assert_int_equal(baton_sem_acquire(s, -2, 0), BATON_EINVAL);
	assert_int_equal(baton_sem_release(s, 0), BATON_EINVAL);
	assert_int_equal(baton_sem_release(s, -1), BATON_EINVAL);
	assert_int_equal(baton_sem_release(s, 1), BATON_EINVAL); /* overflow */
	v = baton_sem_value(s);
	assert_int_equal(v, LONG_MAX);
	assert_int_equal(baton_sem_acquire(s, LONG_MAX, 0), BATON_OK);
	assert_int_equal(baton_sem_acquire(s, 1, 0), BATON_EAGAIN);
	assert_int_equal(baton_sem_destroy(s), BATON_OK);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_CFG_TESTS(test_mutex_exclusion), TC_CFG_TESTS(test_mutex_fifo),
		TC_CFG_TESTS(test_mutex_timeout),   TC_CFG_TESTS(test_mutex_ghost),
		TC_CFG_TESTS(test_outside_tasks),   cmocka_unit_test(test_bad_args),
	};

	/* e.g. BATON_TEST_FILTER='*ghost*' to run a few while debugging */
	if (getenv("BATON_TEST_FILTER"))
		cmocka_set_test_filter(getenv("BATON_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
