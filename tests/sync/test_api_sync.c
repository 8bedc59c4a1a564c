/* SPDX-License-Identifier: MIT */
/* The claims of baton/sync.h a caller relies on, read from the header and
 * checked: every call refuses what it lists (EINVAL), a failed add or
 * release changes nothing, destroy(NULL) is a no-op and destroy refuses a
 * held or waited-on primitive (EBUSY); outside tasks a call that would
 * block says ENOSCHED, timeout 0 works from any thread, and wg_add/done,
 * unlock and release work from any thread; a mutex is not recursive
 * (EDEADLK), is unlocked only by its owner (EPERM), passes to its oldest
 * waiter on unlock (no barging); a semaphore serves strictly in arrival
 * order (a large request at the head holds back small ones); a timed-out
 * lock or acquire has taken nothing; a wait group's wait returns at once
 * at 0 and a count raised again does not recall released waiters. */
#include "check.h"

#include <limits.h>
#include <pthread.h>

#include <baton/sync.h>

static void test_bad_input(void **state)
{
	baton_wg_t *wg;
	baton_mutex_t *m;
	baton_sem_t *s;

	(void)state;
	assert_int_equal(baton_wg_create(NULL), BATON_EINVAL);
	assert_int_equal(baton_wg_add(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_wg_done(NULL), BATON_EINVAL);
	assert_int_equal(baton_wg_wait(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_wg_count(NULL), BATON_EINVAL);
	assert_int_equal(baton_wg_destroy(NULL), BATON_OK);
	assert_int_equal(baton_mutex_create(NULL), BATON_EINVAL);
	assert_int_equal(baton_mutex_lock(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_mutex_unlock(NULL), BATON_EINVAL);
	assert_int_equal(baton_mutex_destroy(NULL), BATON_OK);
	assert_int_equal(baton_sem_create(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_sem_create(&s, -1), BATON_EINVAL);
	assert_int_equal(baton_sem_acquire(NULL, 1, 0), BATON_EINVAL);
	assert_int_equal(baton_sem_release(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_sem_value(NULL), BATON_EINVAL);
	assert_int_equal(baton_sem_destroy(NULL), BATON_OK);

	/* wait group: below 0 or past LONG_MAX refused, count unchanged */
	assert_int_equal(baton_wg_create(&wg), BATON_OK);
	assert_int_equal(baton_wg_count(wg), 0);
	assert_int_equal(baton_wg_done(wg), BATON_EINVAL);
	assert_int_equal(baton_wg_add(wg, 2), BATON_OK);
	assert_int_equal(baton_wg_add(wg, -3), BATON_EINVAL);
	assert_int_equal(baton_wg_count(wg), 2);
	assert_int_equal(baton_wg_add(wg, LONG_MAX), BATON_EINVAL);
	assert_int_equal(baton_wg_count(wg), 2);
	assert_int_equal(baton_wg_add(wg, LONG_MIN), BATON_EINVAL);
	assert_int_equal(baton_wg_count(wg), 2);
	assert_int_equal(baton_wg_wait(wg, 0), BATON_EAGAIN);
	assert_int_equal(baton_wg_wait(wg, TC_MS(1)), BATON_ENOSCHED);
	assert_int_equal(baton_wg_add(wg, -2), BATON_OK);
	/* at 0 the wait returns at once, outside tasks too */
	assert_int_equal(baton_wg_wait(wg, 0), BATON_OK);
	assert_int_equal(baton_wg_destroy(wg), BATON_OK);

	/* semaphore: n < 1 refused, overflow refused with nothing released */
	assert_int_equal(baton_sem_create(&s, 2), BATON_OK);
	assert_int_equal(baton_sem_acquire(s, 0, 0), BATON_EINVAL);
	assert_int_equal(baton_sem_acquire(s, -1, 0), BATON_EINVAL);
	assert_int_equal(baton_sem_release(s, 0), BATON_EINVAL);
	assert_int_equal(baton_sem_release(s, -5), BATON_EINVAL);
	assert_int_equal(baton_sem_release(s, LONG_MAX), BATON_EINVAL);
	assert_int_equal(baton_sem_value(s), 2);
	assert_int_equal(baton_sem_acquire(s, 3, 0), BATON_EAGAIN);
	assert_int_equal(baton_sem_value(s), 2);
	assert_int_equal(baton_sem_acquire(s, 3, TC_MS(1)), BATON_ENOSCHED);
	assert_int_equal(baton_sem_acquire(s, 2, 0), BATON_OK);
	assert_int_equal(baton_sem_value(s), 0);
	assert_int_equal(baton_sem_destroy(s), BATON_OK);

	/* mutex outside tasks: timeout 0 takes it; the thread that took it
	 * unlocks; not recursive; unlocking a free mutex is EPERM */
	assert_int_equal(baton_mutex_create(&m), BATON_OK);
	assert_int_equal(baton_mutex_unlock(m), BATON_EPERM);
	assert_int_equal(baton_mutex_lock(m, 0), BATON_OK);
	assert_int_equal(baton_mutex_lock(m, 0), BATON_EDEADLK);
	assert_int_equal(baton_mutex_destroy(m), BATON_EBUSY);
	assert_int_equal(baton_mutex_unlock(m), BATON_OK);
	assert_int_equal(baton_mutex_unlock(m), BATON_EPERM);
	assert_int_equal(baton_mutex_lock(m, TC_MS(1)), BATON_ENOSCHED);
	assert_int_equal(baton_mutex_destroy(m), BATON_OK);
}

/* Rule 1 and 2 across threads: a mutex taken by one plain thread is held
 * for another (EAGAIN) and only its owner unlocks it (EPERM). */
static baton_mutex_t *t_mu;

static void *other_thread(void *arg)
{
	long bad = 0;

	(void)arg;
	bad += baton_mutex_lock(t_mu, 0) != BATON_EAGAIN;
	bad += baton_mutex_unlock(t_mu) != BATON_EPERM;
	return (void *)bad;
}

static void test_mutex_threads(void **state)
{
	pthread_t th;
	void *bad;

	(void)state;
	assert_int_equal(baton_mutex_create(&t_mu), BATON_OK);
	assert_int_equal(baton_mutex_lock(t_mu, 0), BATON_OK);
	assert_int_equal(pthread_create(&th, NULL, other_thread, NULL), 0);
	assert_int_equal(pthread_join(th, &bad), 0);
	assert_null(bad);
	assert_int_equal(baton_mutex_unlock(t_mu), BATON_OK);
	assert_int_equal(baton_mutex_destroy(t_mu), BATON_OK);
}

/* Mutex FIFO hand-off, no barging, EPERM from a non-owner task, EDEADLK
 * from the owner, EBUSY while held or waited on, a timed-out lock that
 * took nothing and is no longer queued. */
static baton_mutex_t *mu;
static int order[4], norder;

static void pm_waiter(void *arg)
{
	TC_CHECK_RC(baton_mutex_lock(mu, -1), BATON_OK);
	order[norder++] = (int)(intptr_t)arg;
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK);
}

static void pm_timed(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_mutex_lock(mu, TC_MS(2)), BATON_ETIMEDOUT);
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_EPERM);
}

static void pm_owner(void *arg)
{
	baton_sched_t *s = baton_sched_self();

	(void)arg;
	TC_CHECK_RC(baton_mutex_lock(mu, -1), BATON_OK);
	TC_CHECK_RC(baton_mutex_lock(mu, -1), BATON_EDEADLK);
	TC_CHECK_RC(baton_sched_spawn(s, NULL, pm_timed, NULL), BATON_OK);
	TC_CHECK_RC(baton_sched_sleep(TC_MS(10)), BATON_OK);
	for (intptr_t i = 1; i <= 3; i++) {
		TC_CHECK_RC(baton_sched_spawn(s, NULL, pm_waiter, (void *)i), BATON_OK);
		TC_CHECK_RC(baton_sched_yield(), BATON_OK);
	}
	TC_CHECK_RC(baton_sched_sleep(TC_MS(2)), BATON_OK);
	TC_CHECK_RC(baton_mutex_destroy(mu), BATON_EBUSY);
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK);
	/* ownership passed to waiter 1 at once: no barging back in */
	TC_CHECK_RC(baton_mutex_lock(mu, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_EPERM);
	TC_CHECK_RC(baton_sched_sleep(TC_MS(5)), BATON_OK);
	TC_CHECK(norder == 3);
	TC_CHECK(order[0] == 1 && order[1] == 2 && order[2] == 3);
	TC_CHECK_RC(baton_mutex_lock(mu, 0), BATON_OK);
	TC_CHECK_RC(baton_mutex_unlock(mu), BATON_OK);
}

static void test_mutex_fifo(void **state)
{
	(void)state;
	norder = 0;
	assert_int_equal(baton_mutex_create(&mu), BATON_OK);
	tc_run_one("mutex fifo", pm_owner, NULL);
	assert_int_equal(baton_mutex_destroy(mu), BATON_OK);
}

/* Semaphore: strict arrival order (a request of 3 at the head holds back
 * a later request of 1 while 1 unit is free, timeout 0 included); a
 * timed-out acquire took nothing and left the queue; release from a plain
 * thread wakes a task and serves the head first; destroy refuses while waited on. */
static baton_sem_t *sem;
static int got_big, got_small;

static void ps_big(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_sem_acquire(sem, 3, -1), BATON_OK);
	got_big = 1;
}

static void ps_small(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_sem_acquire(sem, 1, -1), BATON_OK);
	got_small = 1;
}

static void *releaser(void *arg)
{
	(void)arg;
	usleep(20000);
	return (void *)(intptr_t)baton_sem_release(sem, 2);
}

static void ps_main(void *arg)
{
	baton_sched_t *s = baton_sched_self();
	pthread_t th;
	void *rc;

	(void)arg;
	/* one unit free, a timed-out request for 2 takes nothing */
	TC_CHECK_RC(baton_sem_acquire(sem, 2, TC_MS(2)), BATON_ETIMEDOUT);
	TC_CHECK(baton_sem_value(sem) == 1);
	TC_CHECK_RC(baton_sched_spawn(s, NULL, ps_big, NULL), BATON_OK);
	TC_CHECK_RC(baton_sched_sleep(TC_MS(2)), BATON_OK);
	TC_CHECK_RC(baton_sched_spawn(s, NULL, ps_small, NULL), BATON_OK);
	TC_CHECK_RC(baton_sched_sleep(TC_MS(2)), BATON_OK);
	/* 1 unit is free, but the request of 3 is ahead */
	TC_CHECK(baton_sem_value(sem) == 1);
	TC_CHECK(got_small == 0);
	TC_CHECK_RC(baton_sem_acquire(sem, 1, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_sem_destroy(sem), BATON_EBUSY);
	TC_CHECK(pthread_create(&th, NULL, releaser, NULL) == 0);
	TC_CHECK_RC(baton_sched_sleep(TC_MS(60)), BATON_OK);
	TC_CHECK(pthread_join(th, &rc) == 0);
	TC_CHECK(rc == (void *)(intptr_t)BATON_OK);
	/* 3 free: the head's 3 granted, nothing left for the later 1 */
	TC_CHECK(got_big == 1 && got_small == 0);
	TC_CHECK(baton_sem_value(sem) == 0);
	TC_CHECK_RC(baton_sem_release(sem, 1), BATON_OK);
	TC_CHECK_RC(baton_sched_sleep(TC_MS(2)), BATON_OK);
	TC_CHECK(got_small == 1);
	TC_CHECK(baton_sem_value(sem) == 0);
}

static void test_sem_order(void **state)
{
	(void)state;
	got_big = got_small = 0;
	assert_int_equal(baton_sem_create(&sem, 1), BATON_OK);
	tc_run_one("sem order", ps_main, NULL);
	assert_int_equal(baton_sem_destroy(sem), BATON_OK);
}

/* Wait group: add/done from a plain thread release a waiting task; a
 * count raised again after 0 does not recall the released waiter; destroy
 * refuses while a task waits. */
static baton_wg_t *wg;
static int released;

static void pw_waiter(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_wg_wait(wg, -1), BATON_OK);
	released++;
}

static void *doner(void *arg)
{
	(void)arg;
	usleep(10000);
	return (void *)(intptr_t)baton_wg_done(wg);
}

static void pw_main(void *arg)
{
	baton_sched_t *s = baton_sched_self();
	pthread_t th;
	void *rc;
	int64_t t0;

	(void)arg;
	TC_CHECK_RC(baton_wg_add(wg, 1), BATON_OK);
	t0 = tc_now();
	TC_CHECK_RC(baton_wg_wait(wg, TC_MS(5)), BATON_ETIMEDOUT);
	TC_CHECK(tc_now() - t0 >= TC_MS(5));
	TC_CHECK_RC(baton_sched_spawn(s, NULL, pw_waiter, NULL), BATON_OK);
	TC_CHECK_RC(baton_sched_spawn(s, NULL, pw_waiter, NULL), BATON_OK);
	TC_CHECK_RC(baton_sched_sleep(TC_MS(2)), BATON_OK);
	TC_CHECK_RC(baton_wg_destroy(wg), BATON_EBUSY);
	TC_CHECK(pthread_create(&th, NULL, doner, NULL) == 0);
	/* the count reaches 0 in the thread; raise it at once from here */
	TC_CHECK(pthread_join(th, &rc) == 0);
	TC_CHECK(rc == (void *)(intptr_t)BATON_OK);
	TC_CHECK_RC(baton_wg_add(wg, 1), BATON_OK);
	TC_CHECK_RC(baton_sched_sleep(TC_MS(5)), BATON_OK);
	TC_CHECK(released == 2);
	TC_CHECK_RC(baton_wg_done(wg), BATON_OK);
}

static void test_wg(void **state)
{
	(void)state;
	released = 0;
	assert_int_equal(baton_wg_create(&wg), BATON_OK);
	tc_run_one("wait group", pw_main, NULL);
	assert_int_equal(baton_wg_count(wg), 0);
	assert_int_equal(baton_wg_destroy(wg), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_input),  cmocka_unit_test(test_mutex_threads),
		cmocka_unit_test(test_mutex_fifo), cmocka_unit_test(test_sem_order),
		cmocka_unit_test(test_wg),
	};

	return cmocka_run_group_tests_name("promise_sync", tests, NULL, NULL);
}
