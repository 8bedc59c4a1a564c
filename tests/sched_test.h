/*
 * tests/sched_test.h - shared by the scheduler, channel and select tests.
 *
 * Tasks run on worker threads and on coroutine stacks, where a cmocka
 * assertion (a longjmp to the test's frame) must not be made. Tasks check
 * with T_CHECK(), which records the first failure; the test asserts
 * T_VERDICT() after baton_sched_run() returned.
 *
 * The watchdog here names the phase a test is in, so that a hang reports
 * what was waited for ("lost wake-up in ...") instead of just a timeout.
 */
#ifndef BATON_TESTS_SCHED_TEST_H
#define BATON_TESTS_SCHED_TEST_H

#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <baton/chan.h>
#include <baton/sched.h>

static const char *volatile st_phase = "?";
static char st_fail_msg[256];
static int st_failed;

static inline void st_on_alarm(int sig)
{
	char buf[320];
	int n;

	(void)sig;
	n = snprintf(buf, sizeof(buf),
		     "FAIL: watchdog expired in \"%s\": a hang, probably a "
		     "lost wake-up\n", st_phase);
	(void)!write(STDERR_FILENO, buf, (size_t)n);
	_exit(124);
}

/* harness_watchdog with a phase name in the message. */
static inline void st_watchdog(unsigned seconds, const char *phase)
{
	harness_watchdog(seconds);
	st_phase = phase;
	signal(SIGALRM, st_on_alarm);
}

static inline void st_record(const char *file, int line, const char *what)
{
	/* Relaxed is enough: only the first message matters and the test
	 * reads it after run returned (which orders the tasks' effects). */
	if (__atomic_fetch_add(&st_failed, 1, __ATOMIC_RELAXED) == 0)
		snprintf(st_fail_msg, sizeof(st_fail_msg), "%s:%d: %s", file,
			 line, what);
}

#define T_CHECK(cond)                                                     \
	do {                                                              \
		if (!(cond))                                              \
			st_record(__FILE__, __LINE__, "check failed: " #cond); \
	} while (0)

#define T_CHECK_RC(expr, want)                                            \
	do {                                                              \
		int rc_ = (expr);                                         \
		if (rc_ != (want)) {                                      \
			char m_[200];                                     \
			snprintf(m_, sizeof(m_), "%s returned %d (%s), want %s", \
				 #expr, rc_, baton_strerror(rc_), #want); \
			st_record(__FILE__, __LINE__, m_);                \
		}                                                         \
	} while (0)

#define T_FAIL(msg) st_record(__FILE__, __LINE__, msg)

static inline void st_reset(void)
{
	__atomic_store_n(&st_failed, 0, __ATOMIC_RELAXED);
	st_fail_msg[0] = 0;
}

#define T_VERDICT()                                                       \
	do {                                                              \
		if (__atomic_load_n(&st_failed, __ATOMIC_RELAXED))        \
			fail_msg("%d failure(s) in tasks, first: %s",     \
				 st_failed, st_fail_msg);                 \
	} while (0)

static inline int64_t st_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* How much slower than native this run is allowed to be. */
static inline int64_t st_time_scale(void)
{
	const char *s = getenv("BATON_TEST_TIME_SCALE");

	return s && atoi(s) > 0 ? atoi(s) : 1;
}

#define MS(x) ((int64_t)(x) * 1000000)

/* A task attribute for the model of the cmocka state. */
static inline struct baton_task_attr st_tattr(void **state, int worker)
{
	struct baton_task_attr a = BATON_TASK_ATTR_INIT;

	a.coro = *ATTR(state);
	a.worker = worker;
	return a;
}

static inline baton_sched_t *st_sched(unsigned workers)
{
	struct baton_sched_attr a = BATON_SCHED_ATTR_INIT;
	baton_sched_t *s = NULL;

	a.workers = workers;
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
	return s;
}

static inline void st_spawn(baton_sched_t *s, void **state, int worker,
			    baton_task_fn fn, void *arg)
{
	struct baton_task_attr a = st_tattr(state, worker);

	assert_int_equal(baton_sched_spawn(s, &a, fn, arg), BATON_OK);
}

/* TSan gives every coroutine a fiber with its own trace mapping: tens of
 * thousands of live tasks exhaust the address space it reserves. */
#if defined(__SANITIZE_THREAD__)
#define ST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ST_TSAN 1
#endif
#endif
#ifndef ST_TSAN
#define ST_TSAN 0
#endif

/* Tiny per-thread PRNG for the stress tests (xorshift64*). */
static inline uint64_t st_rand(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1DULL;
}

#endif
