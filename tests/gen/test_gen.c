/* SPDX-License-Identifier: MIT */
/* Generators: values in order, exhaustion, misuse, yield_from, nesting
 * (the Catalan example counts every binary tree with n nodes). */
#include "check.h"

#include <baton/gen.h>

#include "../../examples/catalan.h"

static void upto(baton_gen_t *g, void *arg)
{
	for (long i = 0; i < (long)arg; i++)
		assert_int_equal(baton_gen_yield(g, (void *)i), BATON_OK);
}

static void yields_in_order_then_done(void **state)
{
	baton_gen_t *g;
	void *v;

	assert_int_equal(baton_gen_create(&g, TC_ATTR(state), upto, (void *)5), BATON_OK);
	for (long i = 0; i < 5; i++) {
		assert_int_equal(baton_gen_next(g, &v), BATON_OK);
		assert_int_equal((long)v, i);
	}
	assert_int_equal(baton_gen_next(g, &v), BATON_EDONE);
	assert_int_equal(baton_gen_next(g, &v), BATON_EDONE); /* stays done */
	assert_int_equal(baton_gen_destroy(g), BATON_OK);
}

static baton_gen_t *other;

static void misuse(baton_gen_t *g, void *arg)
{
	(void)arg;
	/* Yielding for another generator, or iterating oneself, is refused. */
	assert_int_equal(baton_gen_yield(other, NULL), BATON_EINVAL);
	assert_int_equal(baton_gen_next(g, NULL), BATON_ERUNNING);
	assert_int_equal(baton_gen_destroy(g), BATON_EBUSY);
	assert_int_equal(baton_gen_yield(NULL, NULL), BATON_EINVAL);
}

static void misuse_is_reported(void **state)
{
	baton_gen_t *g;

	assert_int_equal(baton_gen_create(&other, TC_ATTR(state), upto, (void *)1), BATON_OK);
	assert_int_equal(baton_gen_create(&g, TC_ATTR(state), misuse, NULL), BATON_OK);
	assert_int_equal(baton_gen_next(g, NULL), BATON_EDONE);
	assert_int_equal(baton_gen_yield(g, NULL), BATON_EINVAL); /* outside */
	assert_int_equal(baton_gen_next(NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_gen_create(NULL, NULL, upto, NULL), BATON_EINVAL);
	assert_int_equal(baton_gen_create(&g, NULL, NULL, NULL), BATON_EINVAL);
	baton_gen_destroy(other);
	baton_gen_destroy(g);
}

static void concat(baton_gen_t *g, void *arg)
{
	const struct baton_coro_attr *attr = arg;

	for (long n = 1; n <= 3; n++) {
		baton_gen_t *inner;
		assert_int_equal(baton_gen_create(&inner, attr, upto, (void *)n), BATON_OK);
		assert_int_equal(baton_gen_yield_from(g, inner), BATON_OK);
		baton_gen_destroy(inner);
	}
}

static void yield_from_delegates(void **state)
{
	static const long expect[] = { 0, 0, 1, 0, 1, 2 };
	baton_gen_t *g;
	void *v;
	size_t k = 0;

	assert_int_equal(baton_gen_create(&g, TC_ATTR(state), concat, (void *)TC_ATTR(state)),
			 BATON_OK);
	while (baton_gen_next(g, &v) == BATON_OK) {
		assert_true(k < 6);
		assert_int_equal((long)v, expect[k++]);
	}
	assert_int_equal(k, 6);
	baton_gen_destroy(g);
}

static void catalan_counts(void **state)
{
	static const long catalan[] = { 1,   1,    2,    5,     14,    42,    132,
					429, 1430, 4862, 16796, 58786, 208012 };
	/* Catalan(12) = 208,012 answers at n = 12; under ASan a copy-stack
	 * generator's switches cost many times their native price, so it
	 * stops at n = 9 (4,862), still nesting generators up to 9 deep. */
	long max = tc_scale(TC_ASAN ? 9 : 12, 7);

	for (long n = 0; n <= max; n++)
		assert_int_equal(catalan_count(n, TC_ATTR(state)->model, NULL), catalan[n]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(yields_in_order_then_done),
		TC_MODEL_TESTS(misuse_is_reported),
		TC_MODEL_TESTS(yield_from_delegates),
		TC_MODEL_TESTS(catalan_counts),
	};

	tc_watchdog(300);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
