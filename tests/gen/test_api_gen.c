/* SPDX-License-Identifier: MIT */
/* The claims of baton/gen.h a caller relies on, read from the header and
 * checked, in both coroutine models: create refuses a NULL out or body;
 * next refuses NULL, stores a value only when there is one (value may be
 * NULL), says EDONE once the body returned and again on every later call,
 * and ERUNNING from inside the generator's own body (or while it resumes
 * another); yield refuses NULL and any caller but g's body; yield_from
 * yields every value of the inner generator, then OK, and, called from
 * anywhere but g's body, refuses without taking a value from the inner
 * one (a failed call changes nothing); destroy(NULL) is a no-op, destroy
 * refuses while the body runs (EBUSY) and abandons an unfinished body
 * (the sanitizer builds check that nothing leaks). */
#include "check.h"

#include <baton/gen.h>

static void upto(baton_gen_t *g, void *arg)
{
	for (intptr_t i = 0; i < (intptr_t)arg; i++)
		if (baton_gen_yield(g, (void *)i) != BATON_OK)
			return;
}

static void nop(baton_gen_t *g, void *arg)
{
	(void)g;
	(void)arg;
}

static void test_bad_input(void **state)
{
	baton_gen_t *g;

	assert_int_equal(baton_gen_create(NULL, TC_ATTR(state), nop, NULL), BATON_EINVAL);
	assert_int_equal(baton_gen_create(&g, TC_ATTR(state), NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_gen_next(NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_gen_yield(NULL, NULL), BATON_EINVAL);
	assert_null(baton_gen_coro(NULL));
	assert_int_equal(baton_gen_destroy(NULL), BATON_OK);
	/* yield from outside any body */
	assert_int_equal(baton_gen_create(&g, TC_ATTR(state), upto, (void *)2), BATON_OK);
	assert_int_equal(baton_gen_yield(g, NULL), BATON_EINVAL);
	assert_int_equal(baton_gen_yield_from(NULL, g), BATON_EINVAL);
	assert_non_null(baton_gen_coro(g));
	assert_int_equal(baton_gen_destroy(g), BATON_OK);
}

static void test_next_done(void **state)
{
	baton_gen_t *g;
	void *v = (void *)-1;

	assert_int_equal(baton_gen_create(&g, TC_ATTR(state), upto, (void *)2), BATON_OK);
	assert_int_equal(baton_gen_next(g, NULL), BATON_OK); /* value 0 dropped */
	assert_int_equal(baton_gen_next(g, &v), BATON_OK);
	assert_ptr_equal(v, (void *)1);
	v = (void *)-1;
	assert_int_equal(baton_gen_next(g, &v), BATON_EDONE);
	assert_ptr_equal(v, (void *)-1); /* no value stored */
	assert_int_equal(baton_gen_next(g, &v), BATON_EDONE);
	assert_int_equal(baton_gen_next(g, NULL), BATON_EDONE);
	assert_int_equal(baton_gen_destroy(g), BATON_OK);
}

/* From inside a body: next on itself is ERUNNING, destroy of itself is
 * EBUSY, a yield on another generator is EINVAL; the outer generator,
 * while it resumes this one, is ERUNNING and EBUSY too. */
static baton_gen_t *outer, *inner, *other;
static int in_rc[6];

static void inner_body(baton_gen_t *g, void *arg)
{
	(void)arg;
	in_rc[0] = baton_gen_next(g, NULL);
	in_rc[1] = baton_gen_destroy(g);
	in_rc[2] = baton_gen_yield(other, NULL);
	in_rc[3] = baton_gen_next(outer, NULL);
	in_rc[4] = baton_gen_destroy(outer);
	in_rc[5] = baton_gen_yield_from(other, g);
	baton_gen_yield(g, (void *)7);
}

static void outer_body(baton_gen_t *g, void *arg)
{
	void *v;

	(void)arg;
	while (baton_gen_next(inner, &v) == BATON_OK)
		baton_gen_yield(g, v);
}

static void test_inside_body(void **state)
{
	void *v = NULL;

	assert_int_equal(baton_gen_create(&other, TC_ATTR(state), upto, (void *)1), BATON_OK);
	assert_int_equal(baton_gen_create(&inner, TC_ATTR(state), inner_body, NULL), BATON_OK);
	assert_int_equal(baton_gen_create(&outer, TC_ATTR(state), outer_body, NULL), BATON_OK);
	assert_int_equal(baton_gen_next(outer, &v), BATON_OK);
	assert_ptr_equal(v, (void *)7);
	assert_int_equal(in_rc[0], BATON_ERUNNING);
	assert_int_equal(in_rc[1], BATON_EBUSY);
	assert_int_equal(in_rc[2], BATON_EINVAL);
	assert_int_equal(in_rc[3], BATON_ERUNNING);
	assert_int_equal(in_rc[4], BATON_EBUSY);
	assert_int_equal(in_rc[5], BATON_EINVAL);
	assert_int_equal(baton_gen_next(outer, &v), BATON_EDONE);
	assert_int_equal(baton_gen_destroy(outer), BATON_OK);
	assert_int_equal(baton_gen_destroy(inner), BATON_OK);
	/* other gave nothing away to the refused yield_from */
	assert_int_equal(baton_gen_next(other, &v), BATON_OK);
	assert_ptr_equal(v, (void *)0);
	assert_int_equal(baton_gen_destroy(other), BATON_OK);
}

/* yield_from: every value of inner, then OK; refused from outside g's
 * body, with inner untouched. */
static int yf_rc = 99;

static void delegate(baton_gen_t *g, void *arg)
{
	yf_rc = baton_gen_yield_from(g, arg);
	baton_gen_yield(g, (void *)100);
}

static void test_yield_from(void **state)
{
	baton_gen_t *g, *in;
	void *v;
	intptr_t want = 0;

	assert_int_equal(baton_gen_create(&in, TC_ATTR(state), upto, (void *)3), BATON_OK);
	assert_int_equal(baton_gen_create(&g, TC_ATTR(state), delegate, in), BATON_OK);
	/* from main: refused, and in keeps its first value */
	assert_int_equal(baton_gen_yield_from(g, in), BATON_EINVAL);
	while (baton_gen_next(g, &v) == BATON_OK) {
		if (want < 3)
			assert_ptr_equal(v, (void *)want);
		else
			assert_ptr_equal(v, (void *)100);
		want++;
	}
	assert_int_equal(want, 4);
	assert_int_equal(yf_rc, BATON_OK);
	assert_int_equal(baton_gen_destroy(g), BATON_OK);
	assert_int_equal(baton_gen_destroy(in), BATON_OK);
}

/* An unfinished generator is destroyed; its body is abandoned. */
static void test_destroy_unfinished(void **state)
{
	baton_gen_t *g;
	void *v;

	assert_int_equal(baton_gen_create(&g, TC_ATTR(state), upto, (void *)1000), BATON_OK);
	assert_int_equal(baton_gen_next(g, &v), BATON_OK);
	assert_int_equal(baton_gen_destroy(g), BATON_OK);
	/* NULL attr: the default model */
	assert_int_equal(baton_gen_create(&g, NULL, upto, (void *)1), BATON_OK);
	assert_int_equal(baton_coro_status(baton_gen_coro(g)), BATON_CORO_SUSPENDED);
	assert_int_equal(baton_gen_destroy(g), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_bad_input),          TC_MODEL_TESTS(test_next_done),
		TC_MODEL_TESTS(test_inside_body),        TC_MODEL_TESTS(test_yield_from),
		TC_MODEL_TESTS(test_destroy_unfinished),
	};

	return cmocka_run_group_tests_name("promise_gen", tests, NULL, NULL);
}
