/* SPDX-License-Identifier: MIT */
/*
 * tests/check.h - shared by every cmocka test of baton (tests/<module>/,
 * bindings/<language>/tests/): what a test needs whatever module it tests.
 *
 * - A watchdog, so that a test that hangs fails with a message naming what
 *   it waited for instead of waiting for CTest's timeout.
 * - The two coroutine models as cmocka states (TC_MODEL_TESTS), and models
 *   times worker counts (TC_CFG_TESTS).
 * - Checks inside tasks. Tasks run on worker threads and on coroutine
 *   stacks, where a cmocka assertion (a longjmp to the test's frame) must
 *   not be made: they check with TC_CHECK() and TC_CHECK_RC(), which print
 *   the failure and count it; the test asserts TC_VERDICT() once the
 *   scheduler has returned (tc_reset() before the next run).
 * - Time: tc_now(), TC_MS(n) nanoseconds, the slowness allowed for this run
 *   (tc_time_scale(), tc_scale() for the light loops under valgrind
 *   and qemu), and small helpers to make a scheduler and spawn on it.
 *
 * One prefix for all it defines: tc_ (functions, state, struct tc_cfg)
 * and TC_ (macros).
 *
 * Helpers for one module only stay beside its tests (sync/sync_test.h,
 * stage/stage_test.h, fault/fault_test.h).
 *
 * Declarations only for what has state: the watchdog's phase, the models'
 * attributes and the failure count live in tests/check.c, linked into
 * every test program by baton_add_test (cmake/BatonTest.cmake), so that a
 * program has one copy of them whatever number of its files include this.
 */
#ifndef BATON_TESTS_CHECK_H
#define BATON_TESTS_CHECK_H

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <baton/chan.h>
#include <baton/coro.h>
#include <baton/sched.h>

#define TC_UNUSED __attribute__((unused))

/* --- time ------------------------------------------------------------- */

static inline int64_t tc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* How much slower than native this run is allowed to be (valgrind, qemu). */
static inline int64_t tc_time_scale(void)
{
	const char *s = getenv("BATON_TEST_TIME_SCALE");

	return s && atoi(s) > 0 ? atoi(s) : 1;
}

#define TC_MS(x) ((int64_t)(x)*1000000)

/* Heavy loops are cut down under valgrind/qemu (BATON_TEST_LIGHT=1). */
static inline long tc_scale(long normal, long light)
{
	return getenv("BATON_TEST_LIGHT") ? light : normal;
}

/* --- the watchdog ------------------------------------------------------ */

/* The phase the watchdog names when it fires (NULL: none). */
extern const char *volatile tc_phase;

/* Kill the test binary with a message after `seconds` (times the scale). */
void tc_watchdog(unsigned seconds);

/* The same, naming the phase the test is in. */
void tc_watchdog_phase(unsigned seconds, const char *phase);

/* --- the coroutine models and worker counts ---------------------------- */

extern struct baton_coro_attr tc_stackful;
extern struct baton_coro_attr tc_copystack;

/* A cmocka test run once per model: the state is the attr to create with. */
#define TC_MODEL_TESTS(fn) \
	cmocka_unit_test_prestate(fn, &tc_stackful), cmocka_unit_test_prestate(fn, &tc_copystack)

#define TC_ATTR(state) ((const struct baton_coro_attr *)*(state))

/* A model and a worker count: the state of TC_CFG_TESTS. */
struct tc_cfg {
	const struct baton_coro_attr *attr;
	unsigned workers;
};

extern struct tc_cfg tc_cfg_sf1, tc_cfg_sf2, tc_cfg_cs1, tc_cfg_cs2;

/* One cmocka test per model and worker count, named after both. */
#define TC_CFG_TESTS(fn)                                              \
	{ #fn " stackful 1w", fn, NULL, NULL, &tc_cfg_sf1 },          \
		{ #fn " stackful 2w", fn, NULL, NULL, &tc_cfg_sf2 },  \
		{ #fn " copystack 1w", fn, NULL, NULL, &tc_cfg_cs1 }, \
	{                                                             \
#fn " copystack 2w", fn, NULL, NULL, &tc_cfg_cs2      \
	}

/* --- checks inside tasks ----------------------------------------------- */

/* The first failure's message, and the count of failures of this run. */
extern char tc_fail_msg[256];
extern int tc_failed;

/* Print a failure (the first 20 of a run) and count it; the first is kept
 * for TC_VERDICT's message. */
void tc_record(const char *file, int line, const char *what);

#define TC_CHECK(cond)                                                         \
	do {                                                                   \
		if (!(cond))                                                   \
			tc_record(__FILE__, __LINE__, "check failed: " #cond); \
	} while (0)

#define TC_CHECK_RC(expr, want)                                                              \
	do {                                                                                 \
		int rc_ = (expr);                                                            \
		if (rc_ != (want)) {                                                         \
			char m_[200];                                                        \
			snprintf(m_, sizeof(m_), "%s returned %d (%s), want %s", #expr, rc_, \
				 baton_strerror(rc_), #want);                                \
			tc_record(__FILE__, __LINE__, m_);                                   \
		}                                                                            \
	} while (0)

#define TC_FAIL(msg) tc_record(__FILE__, __LINE__, msg)

/* Forget the failures of the previous run. */
void tc_reset(void);

#define TC_VERDICT()                                                                           \
	do {                                                                                   \
		if (__atomic_load_n(&tc_failed, __ATOMIC_RELAXED))                             \
			fail_msg("%d failure(s) in tasks, first: %s", tc_failed, tc_fail_msg); \
	} while (0)

/* --- schedulers and tasks ---------------------------------------------- */

/* A task attribute for the model of the cmocka state. */
static inline struct baton_task_attr tc_tattr(void **state, int worker)
{
	struct baton_task_attr a = BATON_TASK_ATTR_INIT;

	a.coro = *TC_ATTR(state);
	a.worker = worker;
	return a;
}

static inline baton_sched_t *tc_sched(unsigned workers)
{
	struct baton_sched_attr a = BATON_SCHED_ATTR_INIT;
	baton_sched_t *s = NULL;

	a.workers = workers;
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
	return s;
}

static inline void tc_spawn(baton_sched_t *s, void **state, int worker, baton_task_fn fn, void *arg)
{
	struct baton_task_attr a = tc_tattr(state, worker);

	assert_int_equal(baton_sched_spawn(s, &a, fn, arg), BATON_OK);
}

/* Run fn(arg) as the one first task of a one-worker scheduler (default
 * attributes), under a 60 s watchdog named `phase`, and fail the test if
 * a task recorded a failure. */
static inline void tc_run_one(const char *phase, baton_task_fn fn, void *arg)
{
	baton_sched_t *s;

	tc_reset();
	tc_watchdog_phase(60, phase);
	s = tc_sched(1);
	assert_int_equal(baton_sched_spawn(s, NULL, fn, arg), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	alarm(0);
}

/* TSan gives every coroutine a fiber with its own trace mapping: tens of
 * thousands of live tasks exhaust the address space it reserves. */
#if defined(__SANITIZE_THREAD__)
#define TC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TC_TSAN 1
#endif
#endif
#ifndef TC_TSAN
#define TC_TSAN 0
#endif

/* AddressSanitizer: every signal delivery and every copied stack costs
 * many times its native price, so the storms and the deepest searches
 * are smaller there (their point is a behaviour, shown at any size). */
#if defined(__SANITIZE_ADDRESS__)
#define TC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TC_ASAN 1
#endif
#endif
#ifndef TC_ASAN
#define TC_ASAN 0
#endif

/* Tiny per-thread PRNG for the stress tests (xorshift64*). */
static inline uint64_t tc_rand(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1DULL;
}

#endif
