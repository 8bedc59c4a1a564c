/* SPDX-License-Identifier: MIT */
/*
 * tests/check.c - the state of tests/check.h, one copy per test program:
 * the watchdog's phase, the coroutine models' attributes and their
 * configurations with worker counts, and the failures recorded by tasks.
 * Linked into every program baton_add_test builds (cmake/BatonTest.cmake).
 */
#include "check.h"

const char *volatile tc_phase;

struct baton_coro_attr tc_stackful = { BATON_CORO_STACKFUL, 0, "stackful", 0 };
struct baton_coro_attr tc_copystack = { BATON_CORO_COPYSTACK, 0, "copystack", 0 };

struct tc_cfg tc_cfg_sf1 = { &tc_stackful, 1 };
struct tc_cfg tc_cfg_sf2 = { &tc_stackful, 2 };
struct tc_cfg tc_cfg_cs1 = { &tc_copystack, 1 };
struct tc_cfg tc_cfg_cs2 = { &tc_copystack, 2 };

char tc_fail_msg[256];
int tc_failed;

/* SIGALRM: say what the test waited for and exit (async-signal-safe:
 * snprintf of a string, write, _exit). */
static void tc_on_alarm(int sig)
{
	char buf[320];
	int n;

	(void)sig;
	if (tc_phase)
		n = snprintf(buf, sizeof(buf),
			     "FAIL: watchdog expired in \"%s\": a hang, "
			     "probably a lost wake-up\n",
			     tc_phase);
	else
		n = snprintf(buf, sizeof(buf),
			     "FAIL: test timed out (watchdog), probably a hang\n");
	(void)!write(STDERR_FILENO, buf, (size_t)n);
	_exit(124);
}

void tc_watchdog(unsigned seconds)
{
	tc_phase = NULL;
	signal(SIGALRM, tc_on_alarm);
	alarm(seconds * (unsigned)tc_time_scale());
}

void tc_watchdog_phase(unsigned seconds, const char *phase)
{
	tc_watchdog(seconds);
	tc_phase = phase;
}

void tc_record(const char *file, int line, const char *what)
{
	/* Relaxed: a count; the test reads it after run returned (which
	 * orders the tasks' effects). */
	int n = __atomic_fetch_add(&tc_failed, 1, __ATOMIC_RELAXED);

	if (n == 0)
		snprintf(tc_fail_msg, sizeof(tc_fail_msg), "%s:%d: %s", file, line, what);
	if (n < 20)
		fprintf(stderr, "%s:%d: %s\n", file, line, what);
}

void tc_reset(void)
{
	/* Relaxed: no task of the next run has started. */
	__atomic_store_n(&tc_failed, 0, __ATOMIC_RELAXED);
	tc_fail_msg[0] = 0;
}
