/* SPDX-License-Identifier: MIT */
/* The claims of baton/ec.h a caller relies on, read from the header and
 * checked: init, wait, wait_mp, inc and inc_sp refuse NULL (EINVAL), wait
 * refuses an `old` with bit 31 set; value and has_waiters say 0 for NULL;
 * wait returns at once when the version already differs, says EAGAIN at
 * timeout 0 and ETIMEDOUT after a timeout > 0; the version wraps from
 * 0x7fffffff to 0 (the documented layout); wake is harmless at any time;
 * a thread sleeping in wait is woken by another thread's increment, and
 * what that thread wrote before incrementing is visible to it. */
#include "check.h"

#include <pthread.h>

#include <baton/ec.h>

static void test_bad_input(void **state)
{
	baton_ec_t ec = BATON_EC_INITIALIZER;

	(void)state;
	assert_int_equal(baton_ec_init(NULL), BATON_EINVAL);
	assert_int_equal(baton_ec_wait(NULL, 0, 0), BATON_EINVAL);
	assert_int_equal(baton_ec_wait_mp(NULL, 0, 0), BATON_EINVAL);
	assert_int_equal(baton_ec_wait(&ec, BATON_EC_FLAG, 0), BATON_EINVAL);
	assert_int_equal(baton_ec_wait_mp(&ec, BATON_EC_FLAG | 1, 0), BATON_EINVAL);
	assert_int_equal(baton_ec_inc(NULL), BATON_EINVAL);
	assert_int_equal(baton_ec_inc_sp(NULL), BATON_EINVAL);
	assert_int_equal(baton_ec_value(NULL), 0);
	assert_int_equal(baton_ec_has_waiters(NULL), 0);
	/* the NULL increments touched nothing of ec */
	assert_int_equal(baton_ec_value(&ec), 0);
}

static void test_values_and_timeouts(void **state)
{
	baton_ec_t ec;
	int64_t t0;

	(void)state;
	memset(&ec, 0x5a, sizeof(ec));
	assert_int_equal(baton_ec_init(&ec), BATON_OK);
	assert_int_equal(baton_ec_value(&ec), 0);
	assert_false(baton_ec_has_waiters(&ec));
	assert_int_equal(baton_ec_wait(&ec, 0, 0), BATON_EAGAIN);
	assert_int_equal(baton_ec_wait_mp(&ec, 0, 0), BATON_EAGAIN);
	t0 = tc_now();
	assert_int_equal(baton_ec_wait(&ec, 0, TC_MS(5)), BATON_ETIMEDOUT);
	assert_true(tc_now() - t0 >= TC_MS(5));
	t0 = tc_now();
	assert_int_equal(baton_ec_wait_mp(&ec, 0, TC_MS(5)), BATON_ETIMEDOUT);
	assert_true(tc_now() - t0 >= TC_MS(5));
	assert_int_equal(baton_ec_inc(&ec), BATON_OK);
	assert_int_equal(baton_ec_value(&ec), 1);
	assert_int_equal(baton_ec_inc_sp(&ec), BATON_OK);
	assert_int_equal(baton_ec_value(&ec), 2);
	/* the version differs from `old`: OK at once, whatever the timeout */
	assert_int_equal(baton_ec_wait(&ec, 0, 0), BATON_OK);
	assert_int_equal(baton_ec_wait(&ec, 1, -1), BATON_OK);
	assert_int_equal(baton_ec_wait_mp(&ec, 1, -1), BATON_OK);
	/* wake with nobody asleep: harmless */
	assert_int_equal(baton_ec_wake(&ec), BATON_OK);
	assert_int_equal(baton_ec_value(&ec), 2);
}

static void test_wrap(void **state)
{
	baton_ec_t ec = { BATON_EC_VERSION };

	(void)state;
	assert_int_equal(baton_ec_value(&ec), BATON_EC_VERSION);
	assert_int_equal(baton_ec_inc(&ec), BATON_OK);
	assert_int_equal(baton_ec_value(&ec), 0);
	assert_int_equal(baton_ec_inc(&ec), BATON_OK);
	assert_int_equal(baton_ec_value(&ec), 1);
	assert_int_equal(baton_ec_wait(&ec, BATON_EC_VERSION, 0), BATON_OK);
	ec.word = BATON_EC_VERSION;
	assert_int_equal(baton_ec_inc_sp(&ec), BATON_OK);
	assert_int_equal(baton_ec_value(&ec), 0);
	assert_int_equal(baton_ec_inc_sp(&ec), BATON_OK);
	assert_int_equal(baton_ec_value(&ec), 1);
}

/* Another thread's increment wakes a sleeping waiter, in both waits, and
 * the data it wrote first is seen. */
static baton_ec_t x_ec = BATON_EC_INITIALIZER;
static long x_data;
static int x_sp;

static void *producer(void *arg)
{
	(void)arg;
	usleep(20000);
	x_data = 42; /* plain store, published by the increment */
	if (x_sp)
		baton_ec_inc_sp(&x_ec);
	else
		baton_ec_inc(&x_ec);
	return NULL;
}

static void wake_round(int sp, int mp)
{
	pthread_t th;
	uint32_t v;

	baton_ec_init(&x_ec);
	x_data = 0;
	x_sp = sp;
	v = baton_ec_value(&x_ec);
	assert_int_equal(pthread_create(&th, NULL, producer, NULL), 0);
	if (mp)
		assert_int_equal(baton_ec_wait_mp(&x_ec, v, -1), BATON_OK);
	else
		assert_int_equal(baton_ec_wait(&x_ec, v, -1), BATON_OK);
	assert_int_equal(x_data, 42);
	assert_int_equal(pthread_join(th, NULL), 0);
}

static void test_cross_thread_wake(void **state)
{
	(void)state;
	tc_watchdog(60);
	wake_round(0, 0);
	wake_round(0, 1);
	wake_round(1, 0);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_values_and_timeouts),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_cross_thread_wake),
	};

	return cmocka_run_group_tests_name("promise_ec", tests, NULL, NULL);
}
