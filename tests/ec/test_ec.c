/* SPDX-License-Identifier: MIT */
/* Event counts, single-threaded semantics: versions, increments, waits that
 * return at once or time out, argument checks, wrap-around of the 31-bit
 * version (tests/test_ec_threads.c has the sleepers and the stress test). */
#include "check.h"

#include <time.h>

#include <baton/ec.h>

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void init_gives_version_zero_without_sleepers(void **state)
{
	baton_ec_t ec = { 12345 | BATON_EC_FLAG }, st = BATON_EC_INITIALIZER;

	(void)state;
	assert_int_equal(baton_ec_init(&ec), BATON_OK);
	assert_int_equal(baton_ec_value(&ec), 0);
	assert_false(baton_ec_has_waiters(&ec));
	assert_int_equal(baton_ec_value(&st), 0);
}

static void null_arguments_are_einval(void **state)
{
	(void)state;
	assert_int_equal(baton_ec_init(NULL), BATON_EINVAL);
	assert_int_equal(baton_ec_inc(NULL), BATON_EINVAL);
	assert_int_equal(baton_ec_inc_sp(NULL), BATON_EINVAL);
	assert_int_equal(baton_ec_wait(NULL, 0, 0), BATON_EINVAL);
	assert_int_equal(baton_ec_wait(NULL, 0, -1), BATON_EINVAL);
	assert_int_equal(baton_ec_wait_mp(NULL, 0, -1), BATON_EINVAL);
	assert_int_equal(baton_ec_wake(NULL), BATON_EINVAL);
	assert_int_equal(baton_ec_value(NULL), 0);
	assert_false(baton_ec_has_waiters(NULL));
}

static void old_with_flag_bit_is_einval(void **state)
{
	baton_ec_t ec = BATON_EC_INITIALIZER;

	(void)state;
	assert_int_equal(baton_ec_wait(&ec, BATON_EC_FLAG, -1), BATON_EINVAL);
	assert_int_equal(baton_ec_wait_mp(&ec, 0xffffffffu, 0), BATON_EINVAL);
}

static void increments_advance_the_version(void **state)
{
	baton_ec_t ec = BATON_EC_INITIALIZER;

	(void)state;
	for (uint32_t i = 1; i <= 1000; i++) {
		assert_int_equal(i & 1 ? baton_ec_inc(&ec) : baton_ec_inc_sp(&ec), BATON_OK);
		assert_int_equal(baton_ec_value(&ec), i);
	}
	assert_false(baton_ec_has_waiters(&ec));
}

static void wait_returns_at_once_when_version_differs(void **state)
{
	baton_ec_t ec = BATON_EC_INITIALIZER;
	int64_t t0;

	(void)state;
	baton_ec_inc(&ec);
	t0 = mono_ns();
	assert_int_equal(baton_ec_wait(&ec, 0, -1), BATON_OK);
	assert_int_equal(baton_ec_wait_mp(&ec, 0, -1), BATON_OK);
	assert_int_equal(baton_ec_wait(&ec, 0, 0), BATON_OK);
	assert_int_equal(baton_ec_wait(&ec, 7, 1000000000), BATON_OK);
	assert_true(mono_ns() - t0 < 100000000); /* no sleep happened */
	assert_false(baton_ec_has_waiters(&ec));
}

static void zero_timeout_only_checks(void **state)
{
	baton_ec_t ec = BATON_EC_INITIALIZER;

	(void)state;
	assert_int_equal(baton_ec_wait(&ec, 0, 0), BATON_EAGAIN);
	assert_int_equal(baton_ec_wait_mp(&ec, 0, 0), BATON_EAGAIN);
	assert_false(baton_ec_has_waiters(&ec)); /* it did not announce itself */
}

static void check_times_out(int (*wait)(baton_ec_t *, uint32_t, int64_t))
{
	baton_ec_t ec = BATON_EC_INITIALIZER;
	int64_t t0, dt;

	tc_watchdog(30);
	baton_ec_inc(&ec);
	t0 = mono_ns();
	assert_int_equal(wait(&ec, 1, 10000000), BATON_ETIMEDOUT);
	dt = mono_ns() - t0;
	assert_true(dt >= 10000000);
	assert_int_equal(baton_ec_value(&ec), 1); /* a timeout changes no version */
	/* the flag may stay set; the next increment clears it (a spurious wake) */
	baton_ec_inc(&ec);
	assert_false(baton_ec_has_waiters(&ec));
	assert_int_equal(baton_ec_value(&ec), 2);
	/* a 30 ms timeout spans several of baton_ec_wait's slices */
	t0 = mono_ns();
	assert_int_equal(wait(&ec, 2, 30000000), BATON_ETIMEDOUT);
	assert_true(mono_ns() - t0 >= 30000000);
	alarm(0);
}

static void wait_with_10ms_timeout_times_out(void **state)
{
	(void)state;
	check_times_out(baton_ec_wait);
}

static void wait_mp_with_10ms_timeout_times_out(void **state)
{
	(void)state;
	check_times_out(baton_ec_wait_mp);
}

static void version_wraps_to_zero(void **state)
{
	int (*inc[2])(baton_ec_t *) = { baton_ec_inc, baton_ec_inc_sp };

	(void)state;
	for (int k = 0; k < 2; k++) {
		baton_ec_t ec = { BATON_EC_VERSION - 1 };

		inc[k](&ec);
		assert_int_equal(baton_ec_value(&ec), BATON_EC_VERSION);
		/* the carry into bit 31 looks like a sleepers flag: the
		 * version reads 0 and the flag is gone after the next one */
		inc[k](&ec);
		assert_int_equal(baton_ec_value(&ec), 0);
		assert_int_equal(baton_ec_wait(&ec, BATON_EC_VERSION, 0), BATON_OK);
		assert_int_equal(baton_ec_wait(&ec, 0, 0), BATON_EAGAIN);
		inc[k](&ec);
		assert_int_equal(baton_ec_value(&ec), 1);
		assert_false(baton_ec_has_waiters(&ec));
		assert_int_equal(ec.word, 1);
	}
}

static void flagged_increment_clears_the_flag(void **state)
{
	int (*inc[2])(baton_ec_t *) = { baton_ec_inc, baton_ec_inc_sp };

	(void)state;
	for (int k = 0; k < 2; k++) {
		/* a sleeper announced itself at the highest version and at 5 */
		baton_ec_t ec = { BATON_EC_FLAG | BATON_EC_VERSION }, e5 = { BATON_EC_FLAG | 5 };

		assert_true(baton_ec_has_waiters(&ec));
		inc[k](&ec);
		assert_int_equal(ec.word, 0);
		inc[k](&e5);
		assert_int_equal(e5.word, 6);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_gives_version_zero_without_sleepers),
		cmocka_unit_test(null_arguments_are_einval),
		cmocka_unit_test(old_with_flag_bit_is_einval),
		cmocka_unit_test(increments_advance_the_version),
		cmocka_unit_test(wait_returns_at_once_when_version_differs),
		cmocka_unit_test(zero_timeout_only_checks),
		cmocka_unit_test(wait_with_10ms_timeout_times_out),
		cmocka_unit_test(wait_mp_with_10ms_timeout_times_out),
		cmocka_unit_test(version_wraps_to_zero),
		cmocka_unit_test(flagged_increment_clears_the_flag),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
