/* SPDX-License-Identifier: MIT */
/* The claims of baton/seq.h a caller relies on, read from the header and
 * checked: the attribute init function gives the macro's defaults (K = 16)
 * and refuses NULL; a NULL attribute gives the defaults; create refuses a
 * NULL out and a stack outside coro.h's limits; call refuses NULL seq or
 * fn and runs fn on the dedicated stack; a name over 31 bytes is cut, a
 * missing one reads ""; destroy of NULL is a no-op and destroy from the
 * sequencer's own stack is refused with nothing freed. */
#include "check.h"

#include <baton/seq.h>

static void test_attr_init(void **state)
{
	const struct baton_seq_attr m = BATON_SEQ_ATTR_INIT;
	struct baton_seq_attr a;

	(void)state;
	memset(&a, 0x5a, sizeof(a));
	assert_int_equal(baton_seq_attr_init(&a), BATON_OK);
	assert_int_equal(a.stack_size, m.stack_size);
	assert_int_equal(a.batch, 16);
	assert_int_equal(a.batch, m.batch);
	assert_null(a.init);
	assert_null(a.init_arg);
	assert_null(a.name);
	assert_int_equal(baton_seq_attr_init(NULL), BATON_EINVAL);
}

static void *ps_where(void *arg)
{
	return (void *)(intptr_t)baton_seq_on_stack(arg);
}

static void *ps_destroy_self(void *arg)
{
	return (void *)(intptr_t)baton_seq_destroy(arg);
}

static void test_create_call_destroy(void **state)
{
	struct baton_seq_attr a;
	baton_seq_t *seq;
	void *res = NULL;

	(void)state;
	baton_seq_attr_init(&a);
	assert_int_equal(baton_seq_create(NULL, &a), BATON_EINVAL);
	a.stack_size = 1;
	assert_int_equal(baton_seq_create(&seq, &a), BATON_ESTACK);
	assert_int_equal(baton_seq_create(&seq, NULL), BATON_OK);
	assert_string_equal(baton_seq_name(seq), "");
	assert_int_equal(baton_seq_call(NULL, ps_where, NULL, &res), BATON_EINVAL);
	assert_int_equal(baton_seq_call(seq, NULL, NULL, &res), BATON_EINVAL);
	assert_int_equal(baton_seq_on_stack(seq), 0);
	assert_int_equal(baton_seq_on_stack(NULL), 0);
	assert_int_equal(baton_seq_call(seq, ps_where, seq, &res), BATON_OK);
	assert_int_equal((intptr_t)res, 1);
	assert_int_equal(baton_seq_call(seq, ps_destroy_self, seq, &res), BATON_OK);
	assert_int_equal((intptr_t)res, BATON_EBUSY);
	assert_int_equal(baton_seq_destroy(seq), BATON_OK);
	assert_int_equal(baton_seq_destroy(NULL), BATON_OK);

	baton_seq_attr_init(&a);
	a.name = "a-name-that-is-longer-than-thirty-one-bytes";
	assert_int_equal(baton_seq_create(&seq, &a), BATON_OK);
	assert_int_equal(strlen(baton_seq_name(seq)), 31);
	assert_int_equal(strncmp(baton_seq_name(seq), a.name, 31), 0);
	assert_int_equal(baton_seq_destroy(seq), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attr_init),
		cmocka_unit_test(test_create_call_destroy),
	};

	return cmocka_run_group_tests_name("promise_seq", tests, NULL, NULL);
}
