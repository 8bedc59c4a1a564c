/*
 * The floating-point control state (rounding mode; on x86-64 also the x87
 * precision control) is callee-saved: a coroutine that changes it keeps the
 * change, and nobody else sees it.
 */
#include "harness.h"

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
	assert_int_equal(baton_coro_create(&a, ATTR(state), rounding_upward, up), BATON_OK);
	assert_int_equal(baton_coro_create(&b, ATTR(state), rounding_downward, down), BATON_OK);
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
	assert_int_equal(baton_coro_create(&co, ATTR(state), report_mode, &seen), BATON_OK);
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
	(void)arg; (void)in;
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

	assert_int_equal(baton_coro_create(&co, ATTR(state), x87_single_precision, NULL), BATON_OK);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(baton_coro_resume(co, NULL, NULL), BATON_OK);
		assert_int_equal(get_cw(), mine);
	}
	baton_coro_destroy(co);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		MODEL_TESTS(rounding_mode_stays_with_its_coroutine),
		MODEL_TESTS(new_coroutine_inherits_creator_mode),
#if defined(__x86_64__)
		MODEL_TESTS(x87_control_word_stays_with_its_coroutine),
#endif
	};

	harness_watchdog(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
