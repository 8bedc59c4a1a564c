/*
 * tests/harness.h - shared by the cmocka tests: a watchdog so that a test
 * that hangs fails with a message instead of waiting for CTest's timeout,
 * and the two coroutine models as cmocka states.
 */
#ifndef BATON_TESTS_HARNESS_H
#define BATON_TESTS_HARNESS_H

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <baton/coro.h>

static inline void harness_on_alarm(int sig)
{
	static const char msg[] = "FAIL: test timed out (watchdog), probably a hang\n";

	(void)sig;
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	_exit(124);
}

/* Kill the test binary with a message after `seconds` (scaled up when the
 * environment says the run is slow: valgrind or qemu). */
static inline void harness_watchdog(unsigned seconds)
{
	const char *scale = getenv("BATON_TEST_TIME_SCALE");

	if (scale)
		seconds *= (unsigned)atoi(scale) > 0 ? (unsigned)atoi(scale) : 1;
	signal(SIGALRM, harness_on_alarm);
	alarm(seconds);
}

static struct baton_coro_attr harness_stackful = { BATON_CORO_STACKFUL, 0, "stackful", 0 };
static struct baton_coro_attr harness_copystack = { BATON_CORO_COPYSTACK, 0, "copystack", 0 };

/* A cmocka test run once per model: the state is the attr to create with. */
#define MODEL_TESTS(fn) \
	cmocka_unit_test_prestate(fn, &harness_stackful), \
	cmocka_unit_test_prestate(fn, &harness_copystack)

#define ATTR(state) ((const struct baton_coro_attr *)*(state))

/* Heavy loops are cut down under valgrind/qemu (BATON_TEST_LIGHT=1). */
static inline long harness_scale(long normal, long light)
{
	return getenv("BATON_TEST_LIGHT") ? light : normal;
}

#endif
