/* SPDX-License-Identifier: MIT */
/*
 * How a call gets onto the sequencer's dedicated stack and back
 * (src/coro/jump.h): on x86-64 the lock holder enters baton_coro_resume,
 * and the dedicated coroutine baton_coro_yield, by a jmp with a return
 * address pushed by hand. Whatever path a build takes, fn must find its
 * stack aligned as at any call, and the caller must find its values where
 * it left them (an asm that declared a register unclobbered which resume
 * or yield may change fails here): these tests call from the thread's
 * own stack, from a coroutine and from inside fn (nested), with many
 * integer and floating-point values live across each call and an fn that
 * dirties every register class the ABI lets a callee change. And the
 * floating-point control state: fn runs in its caller's (seq.h rule 1), and
 * never changes the caller's.
 */
#define _GNU_SOURCE
#include <fenv.h>
#include <stdint.h>

#include "check.h"

#include <baton/seq.h>

/* fn: check the alignment a call site guarantees (the frame address is
 * 16-byte aligned on x86-64 and AArch64 when the caller's stack was), then
 * clobber what a callee may clobber. */
static __attribute__((noinline)) void *aligned_fn(void *arg)
{
	volatile double d[8];
	uintptr_t fa = (uintptr_t)__builtin_frame_address(0);

	for (int i = 0; i < 8; i++)
		d[i] = (double)i * 1.5 + (double)(intptr_t)arg;
	if (fa % 16 != 0)
		return (void *)(intptr_t)-1;
	return (void *)((intptr_t)arg + (intptr_t)((d[7] - d[0]) * 2));
}

/* Many values live across each call: the compiler keeps some in
 * callee-saved registers and spills the rest; a switch or an entry that
 * lost one would change the sums. fn must return arg + 21, as aligned_fn
 * does. */
static __attribute__((noinline)) long busy_caller_fn(baton_seq_t *s, long rounds, baton_seq_fn fn)
{
	unsigned long a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8;
	double x = 0.5, y = 1.5, z = 2.5, w = 3.5;
	long bad = 0;

	for (long i = 0; i < rounds; i++) {
		void *res = NULL;

		if (baton_seq_call(s, fn, (void *)i, &res) != BATON_OK || (intptr_t)res != i + 21)
			bad++;
		a += b;
		b += c;
		c += d;
		d += e;
		e += f;
		f += g;
		g += h;
		h += 1;
		x += y;
		y += z;
		z += w;
		w += 0.25;
	}
	/* the sums a loop without calls computes */
	{
		unsigned long ea = 1, eb = 2, ec = 3, ed = 4, ee = 5, ef = 6, eg = 7, eh = 8;
		double ex = 0.5, ey = 1.5, ez = 2.5, ew = 3.5;

		for (long i = 0; i < rounds; i++) {
			ea += eb;
			eb += ec;
			ec += ed;
			ed += ee;
			ee += ef;
			ef += eg;
			eg += eh;
			eh += 1;
			ex += ey;
			ey += ez;
			ez += ew;
			ew += 0.25;
		}
		if (a != ea || b != eb || c != ec || d != ed || e != ee || f != ef || g != eg ||
		    h != eh || x != ex || y != ey || z != ez || w != ew)
			bad += 1000;
	}
	return bad;
}

static long busy_caller(baton_seq_t *s, long rounds)
{
	return busy_caller_fn(s, rounds, aligned_fn);
}

static void test_thread_stack(void **state)
{
	baton_seq_t *s;

	(void)state;
	tc_watchdog(10);
	assert_int_equal(baton_seq_create(&s, NULL), BATON_OK);
	assert_int_equal(busy_caller(s, 10000), 0);
	assert_int_equal(baton_seq_destroy(s), BATON_OK);
}

static void *coro_body(void *arg, void *in)
{
	(void)in;
	return (void *)busy_caller(arg, 2000);
}

/* The caller is a coroutine: resume's `from` is it, not the thread. */
static void test_from_coroutine(void **state)
{
	baton_coro_t *co;
	baton_seq_t *s;
	void *out = (void *)(intptr_t)-1;

	(void)state;
	tc_watchdog(10);
	assert_int_equal(baton_seq_create(&s, NULL), BATON_OK);
	assert_int_equal(baton_coro_create(&co, NULL, coro_body, s), BATON_OK);
	assert_int_equal(baton_coro_resume(co, NULL, &out), BATON_OK);
	assert_int_equal((intptr_t)out, 0);
	assert_int_equal(baton_coro_destroy(co), BATON_OK);
	assert_int_equal(baton_seq_destroy(s), BATON_OK);
}

/* fn calls the same sequencer (runs directly) and resumes a coroutine that
 * yields back: the dedicated coroutine switches away and back inside fn. */
static baton_seq_t *nest_seq;

static void *yielder(void *arg, void *in)
{
	(void)arg;
	(void)in;
	for (;;)
		baton_coro_yield((void *)(intptr_t)aligned_fn((void *)5), NULL);
	return NULL;
}

static void *nesting_fn(void *arg)
{
	baton_coro_t *co = arg;
	void *out = NULL;
	long bad = busy_caller(nest_seq, 50);

	if (baton_coro_resume(co, NULL, &out) != BATON_OK || (intptr_t)out != 26)
		bad++;
	return (void *)bad;
}

static void test_nested_and_resuming(void **state)
{
	baton_coro_t *co;
	void *res = NULL;

	(void)state;
	tc_watchdog(10);
	assert_int_equal(baton_seq_create(&nest_seq, NULL), BATON_OK);
	assert_int_equal(baton_coro_create(&co, NULL, yielder, NULL), BATON_OK);
	for (int i = 0; i < 20; i++) {
		assert_int_equal(baton_seq_call(nest_seq, nesting_fn, co, &res), BATON_OK);
		assert_int_equal((intptr_t)res, 0);
	}
	assert_int_equal(baton_coro_destroy(co), BATON_OK);
	assert_int_equal(baton_seq_destroy(nest_seq), BATON_OK);
}

/* The caller is a copy-stack coroutine and fn resumes another copy-stack
 * coroutine of the same thread, which takes the shared stack from the
 * caller: the way back must copy the caller's frames back first (the
 * general yield, not the sequencer's own switch), and every value the
 * caller keeps across the call must survive. */
static baton_coro_t *evictor;

static void *evicting_fn(void *arg)
{
	void *out = NULL;

	if (baton_coro_resume(evictor, NULL, &out) != BATON_OK || (intptr_t)out != 26)
		return (void *)(intptr_t)-1;
	return aligned_fn(arg);
}

static void *evicted_body(void *arg, void *in)
{
	(void)in;
	return (void *)busy_caller_fn(arg, 300, evicting_fn);
}

static void test_copystack_caller_evicted(void **state)
{
	struct baton_coro_attr ca = BATON_CORO_ATTR_INIT;
	baton_coro_t *caller;
	baton_seq_t *s;
	void *out = (void *)(intptr_t)-1;

	(void)state;
	tc_watchdog(10);
	ca.model = BATON_CORO_COPYSTACK;
	assert_int_equal(baton_seq_create(&s, NULL), BATON_OK);
	assert_int_equal(baton_coro_create(&evictor, &ca, yielder, NULL), BATON_OK);
	assert_int_equal(baton_coro_create(&caller, &ca, evicted_body, s), BATON_OK);
	assert_int_equal(baton_coro_resume(caller, NULL, &out), BATON_OK);
	assert_int_equal((intptr_t)out, 0);
	assert_int_equal(baton_coro_destroy(caller), BATON_OK);
	assert_int_equal(baton_coro_destroy(evictor), BATON_OK);
	assert_int_equal(baton_seq_destroy(s), BATON_OK);
}

/* --- the floating-point control state ----------------------------------- */

#ifndef BATON_TEST_UCONTEXT
#define BATON_TEST_UCONTEXT 0
#endif

/* 1/3 in the current rounding mode (differs between upward and downward) */
static double third(void)
{
	volatile double one = 1.0, three = 3.0;

	return one / three;
}

static double seen_third;

static void *rounding_fn(void *arg)
{
	(void)arg;
	seen_third = third();
	return (void *)(intptr_t)fegetround();
}

/* Breaks rule 1 on purpose: the caller must not see it. */
static void *changes_rounding(void *arg)
{
	(void)arg;
	fesetround(FE_TOWARDZERO);
	return NULL;
}

static void test_fpenv_is_the_callers(void **state)
{
	static const int modes[] = { FE_UPWARD, FE_DOWNWARD, FE_TONEAREST, FE_UPWARD };
	baton_seq_t *s;
	void *res;

	(void)state;
	tc_watchdog(10);
	assert_int_equal(fesetround(FE_TONEAREST), 0);
	assert_int_equal(baton_seq_create(&s, NULL), BATON_OK);
	for (unsigned i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		assert_int_equal(fesetround(modes[i]), 0);
		assert_int_equal(baton_seq_call(s, rounding_fn, NULL, &res), BATON_OK);
		/* (the ucontext switch keeps every context's own state: there
		 * fn runs in the sequencer's, whatever the last fn left) */
		if (!BATON_TEST_UCONTEXT) {
			assert_int_equal((intptr_t)res, modes[i]);
			assert_true(seen_third == third());
		}
		assert_int_equal(fegetround(), modes[i]);
		assert_int_equal(baton_seq_call(s, changes_rounding, NULL, NULL), BATON_OK);
		assert_int_equal(fegetround(), modes[i]);
	}
	assert_int_equal(fesetround(FE_TONEAREST), 0);
	assert_int_equal(baton_seq_destroy(s), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_stack),
		cmocka_unit_test(test_from_coroutine),
		cmocka_unit_test(test_nested_and_resuming),
		cmocka_unit_test(test_copystack_caller_evicted),
		cmocka_unit_test(test_fpenv_is_the_callers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
