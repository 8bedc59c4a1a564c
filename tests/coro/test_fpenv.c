/* SPDX-License-Identifier: MIT */
/*
 * The floating-point control state (rounding mode; on x86-64 also the x87
 * precision control) is callee-saved: a coroutine that changes it keeps the
 * change, and nobody else sees it.
 */
#include "check.h"

#include <fenv.h>

#include <baton/coro.h>

/* 1/3 rounded with the current mode: differs between FE_UPWARD and
 * FE_DOWNWARD, so it shows the mode the arithmetic really used. */
static double third(void)
{
	volatile double one = 1.0, three = 3.0;

	return one / three;
}

static void *rounding_upward(void *arg, void *in)
{
	double *seen = arg;

	(void)in;
	assert_int_equal(fesetround(FE_UPWARD), 0);
	for (int i = 0; i < 3; i++) {
		seen[i] = third();
		assert_int_equal(fegetround(), FE_UPWARD);
		baton_coro_yield(NULL, NULL);
	}
	return NULL;
}

static void *rounding_downward(void *arg, void *in)
{
	double *seen = arg;

	(void)in;
	assert_int_equal(fesetround(FE_DOWNWARD), 0);
	for (int i = 0; i < 3; i++) {
		seen[i] = third();
		assert_int_equal(fegetround(), FE_DOWNWARD);
		baton_coro_yield(NULL, NULL);
	}
	return NULL;
}

static void rounding_mode_stays_with_its_coroutine(void **state)
{
	double up[3], down[3];
	baton_coro_t *a, *b;
	double nearest;

	assert_int_equal(fegetround(), FE_TONEAREST);
	nearest = third();
	assert_int_equal(baton_coro_create(&a, TC_ATTR(state), rounding_upward, up), BATON_OK);
	assert_int_equal(baton_coro_create(&b, TC_ATTR(state), rounding_downward, down), BATON_OK);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(baton_coro_resume(a, NULL, NULL), BATON_OK);
		assert_int_equal(fegetround(), FE_TONEAREST); /* no leak to us */
		assert_int_equal(baton_coro_resume(b, NULL, NULL), BATON_OK);
		assert_int_equal(fegetround(), FE_TONEAREST);
		assert_true(third() == nearest);
	}
	for (int i = 0; i < 3; i++) {
		assert_true(up[i] > down[i]); /* the modes really differed */
		assert_true(up[i] == up[0] && down[i] == down[0]);
	}
	baton_coro_destroy(a);
	baton_coro_destroy(b);
}

/* A coroutine started by a thread in FE_UPWARD inherits it, as a thread
 * created with that mode would; it does not alter the creator's later. */
static void *report_mode(void *arg, void *in)
{
	(void)in;
	*(int *)arg = fegetround();
	fesetround(FE_TOWARDZERO);
	return NULL;
}

static void new_coroutine_inherits_creator_mode(void **state)
{
	baton_coro_t *co;
	int seen = -1;

	fesetround(FE_UPWARD);
	assert_int_equal(baton_coro_create(&co, TC_ATTR(state), report_mode, &seen), BATON_OK);
	assert_int_equal(baton_coro_resume(co, NULL, NULL), BATON_OK);
	assert_int_equal(seen, FE_UPWARD);
	assert_int_equal(fegetround(), FE_UPWARD);
	fesetround(FE_TONEAREST);
	baton_coro_destroy(co);
}

#if defined(__x86_64__)
/* The x87 control word is separate from MXCSR: precision control set with
 * fldcw inside a coroutine stays there. */
static unsigned short get_cw(void)
{
	unsigned short cw;

	__asm__ volatile("fnstcw %0" : "=m"(cw));
	return cw;
}

static void set_cw(unsigned short cw)
{
	__asm__ volatile("fldcw %0" : : "m"(cw));
}

static void *x87_single_precision(void *arg, void *in)
{
	(void)arg;
	(void)in;
	set_cw((unsigned short)(get_cw() & ~0x300u)); /* PC = 00: single */
	for (;;) {
		assert_int_equal(get_cw() & 0x300u, 0);
		baton_coro_yield(NULL, NULL);
	}
}

static void x87_control_word_stays_with_its_coroutine(void **state)
{
	unsigned short mine = get_cw();
	baton_coro_t *co;

	assert_int_equal(baton_coro_create(&co, TC_ATTR(state), x87_single_precision, NULL),
			 BATON_OK);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(baton_coro_resume(co, NULL, NULL), BATON_OK);
		assert_int_equal(get_cw(), mine);
	}
	baton_coro_destroy(co);
}
#endif

/* --- BATON_CORO_SHARED_FPENV ------------------------------------------------
 * A shared coroutine inherits the state of whoever switched to it; an
 * own-state coroutine keeps its own whatever shared ones are in between.
 * On the ucontext backend swapcontext saves every context's state, so the
 * flag is accepted and a shared coroutine keeps its own state (a program
 * that keeps the flag's rules cannot tell); only the promises that hold
 * there are checked then. */
#ifndef BATON_TEST_UCONTEXT
#define BATON_TEST_UCONTEXT 0
#endif
#define INHERITS(got, want)                          \
	do {                                         \
		if (!BATON_TEST_UCONTEXT)            \
			assert_int_equal(got, want); \
	} while (0)

static struct baton_coro_attr shared_attr(void **state)
{
	struct baton_coro_attr a = *TC_ATTR(state);

	a.flags |= BATON_CORO_SHARED_FPENV;
	return a;
}

static void *report_each_resume(void *arg, void *in)
{
	int *seen = arg;

	(void)in;
	for (int i = 0;; i++) {
		seen[i] = fegetround();
		baton_coro_yield(NULL, NULL);
	}
	return NULL;
}

static void shared_coroutine_inherits_resumer_state(void **state)
{
	struct baton_coro_attr a = shared_attr(state);
	baton_coro_t *s;
	int seen[2] = { -1, -1 };

	assert_int_equal(baton_coro_create(&s, &a, report_each_resume, seen), BATON_OK);
	fesetround(FE_UPWARD);
	assert_int_equal(baton_coro_resume(s, NULL, NULL), BATON_OK);
	fesetround(FE_DOWNWARD);
	assert_int_equal(baton_coro_resume(s, NULL, NULL), BATON_OK);
	INHERITS(seen[0], FE_UPWARD);
	INHERITS(seen[1], FE_DOWNWARD);
	assert_int_equal(fegetround(), FE_DOWNWARD); /* ours, intact */
	fesetround(FE_TONEAREST);
	baton_coro_destroy(s);
}

/* C (own) sets FE_UPWARD and yields; the thread (own, FE_TONEAREST)
 * resumes a shared S, which resumes C: C must find FE_UPWARD, S and the
 * thread must see the thread's mode afterwards. (A rule that skipped the FP
 * work whenever either side is shared would hand C the thread's mode.) */
static baton_coro_t *own_c;

static void *own_upward(void *arg, void *in)
{
	int *seen = arg;

	(void)in;
	fesetround(FE_UPWARD);
	baton_coro_yield(NULL, NULL);
	seen[0] = fegetround();
	baton_coro_yield(NULL, NULL);
	return NULL;
}

static void *shared_resumes_own(void *arg, void *in)
{
	int *seen = arg;

	(void)in;
	seen[1] = fegetround();
	baton_coro_resume(own_c, NULL, NULL);
	seen[2] = fegetround(); /* C yielded to us: its mode is ours now */
	return NULL;
}

static void own_state_survives_shared_resumer(void **state)
{
	struct baton_coro_attr a = shared_attr(state);
	int seen[3] = { -1, -1, -1 };
	baton_coro_t *s;

	assert_int_equal(baton_coro_create(&own_c, TC_ATTR(state), own_upward, seen), BATON_OK);
	assert_int_equal(baton_coro_resume(own_c, NULL, NULL), BATON_OK);
	assert_int_equal(fegetround(), FE_TONEAREST);
	assert_int_equal(baton_coro_create(&s, &a, shared_resumes_own, seen), BATON_OK);
	assert_int_equal(baton_coro_resume(s, NULL, NULL), BATON_OK);
	assert_int_equal(seen[0], FE_UPWARD);         /* C kept its own */
	INHERITS(seen[1], FE_TONEAREST);              /* S inherited ours */
	INHERITS(seen[2], FE_UPWARD);                 /* S then inherited C's */
	assert_int_equal(fegetround(), FE_TONEAREST); /* ours restored */
	baton_coro_destroy(s);
	baton_coro_destroy(own_c);
}

/* The thread's own context declared shared: round trips with a shared
 * coroutine do no FP work, and the state stays what it was. */
static void thread_shared_round_trips(void **state)
{
	struct baton_coro_attr a = shared_attr(state);
	int seen[4] = { -1, -1, -1, -1 };
	baton_coro_t *s;

	assert_int_equal(baton_coro_thread_share_fpenv(1), BATON_OK);
	assert_int_equal(baton_coro_create(&s, &a, report_each_resume, seen), BATON_OK);
	fesetround(FE_UPWARD);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(baton_coro_resume(s, NULL, NULL), BATON_OK);
		assert_int_equal(fegetround(), FE_UPWARD);
	}
	for (int i = 0; i < 4; i++)
		INHERITS(seen[i], FE_UPWARD);
	fesetround(FE_TONEAREST);
	assert_int_equal(baton_coro_thread_share_fpenv(0), BATON_OK);
	baton_coro_destroy(s);
}

static void *try_share_inside(void *arg, void *in)
{
	(void)in;
	*(int *)arg = baton_coro_thread_share_fpenv(1);
	return NULL;
}

static void shared_flag_errors(void **state)
{
	struct baton_coro_attr a = *TC_ATTR(state);
	baton_coro_t *co;
	int rc = 0;

	a.flags = 0x80u; /* unknown */
	assert_int_equal(baton_coro_create(&co, &a, report_mode, NULL), BATON_EINVAL);
	assert_int_equal(baton_coro_create(&co, TC_ATTR(state), try_share_inside, &rc), BATON_OK);
	assert_int_equal(baton_coro_resume(co, NULL, NULL), BATON_OK);
	assert_int_equal(rc, BATON_EBUSY);
	baton_coro_destroy(co);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(shared_coroutine_inherits_resumer_state),
		TC_MODEL_TESTS(own_state_survives_shared_resumer),
		TC_MODEL_TESTS(thread_shared_round_trips),
		TC_MODEL_TESTS(shared_flag_errors),
		TC_MODEL_TESTS(rounding_mode_stays_with_its_coroutine),
		TC_MODEL_TESTS(new_coroutine_inherits_creator_mode),
#if defined(__x86_64__)
		TC_MODEL_TESTS(x87_control_word_stays_with_its_coroutine),
#endif
	};

	tc_watchdog(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
