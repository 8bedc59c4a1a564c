/* SPDX-License-Identifier: MIT */
/*
 * tests/check.c - the state of tests/check.h, one copy per test program:
 * the watchdog's phase, the coroutine models' attributes and their
 * configurations with worker counts, and the failures recorded by tasks.
 * Linked into every program baton_add_test builds (cmake/BatonTest.cmake).
 */
#include "check.h"

const char *volatile st_phase;

struct baton_coro_attr harness_stackful = { BATON_CORO_STACKFUL, 0, "stackful", 0 };
struct baton_coro_attr harness_copystack = { BATON_CORO_COPYSTACK, 0, "copystack", 0 };

struct cfg cfg_sf1 = { &harness_stackful, 1 };
struct cfg cfg_sf2 = { &harness_stackful, 2 };
struct cfg cfg_cs1 = { &harness_copystack, 1 };
struct cfg cfg_cs2 = { &harness_copystack, 2 };

char st_fail_msg[256];
int st_failed;

/* SIGALRM: say what the test waited for and exit (async-signal-safe:
 * snprintf of a string, write, _exit). */
static void harness_on_alarm(int sig)
{
	char buf[320];
	int n;

	(void)sig;
	if (st_phase)
		n = snprintf(buf, sizeof(buf), "FAIL: watchdog expired in \"%s\": a hang, "
			     "probably a lost wake-up\n", st_phase);
	else
		n = snprintf(buf, sizeof(buf), "FAIL: test timed out (watchdog), probably a hang\n");
	(void)!write(STDERR_FILENO, buf, (size_t)n);
	_exit(124);
}

void harness_watchdog(unsigned seconds)
{
	st_phase = NULL;
	signal(SIGALRM, harness_on_alarm);
	alarm(seconds * (unsigned)st_time_scale());
}

void st_watchdog(unsigned seconds, const char *phase)
{
	harness_watchdog(seconds);
	st_phase = phase;
}

void st_record(const char *file, int line, const char *what)
{
	/* Relaxed: a count; the test reads it after run returned (which
	 * orders the tasks' effects). */
	int n = __atomic_fetch_add(&st_failed, 1, __ATOMIC_RELAXED);

	if (n == 0)
		snprintf(st_fail_msg, sizeof(st_fail_msg), "%s:%d: %s", file, line, what);
	if (n < 20)
		fprintf(stderr, "%s:%d: %s\n", file, line, what);
}

void st_reset(void)
{
	/* Relaxed: no task of the next run has started. */
	__atomic_store_n(&st_failed, 0, __ATOMIC_RELAXED);
	st_fail_msg[0] = 0;
}
