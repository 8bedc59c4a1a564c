/* SPDX-License-Identifier: MIT */
/* The claims of baton/error.h a caller relies on that test_error does not
 * already check: codes are stable (none renumbered: each keeps the value
 * it has had since it was added, so a code inserted in the middle of the
 * list fails here even though the list stays dense); every code's text
 * and name are static and the same on every call; the extreme ints are
 * unknown codes, not out-of-range reads. */
#include "check.h"

#include <limits.h>

#include <baton/error.h>

static void test_values_pinned(void **state)
{
	(void)state;
	assert_int_equal(BATON_OK, 0);
	assert_int_equal(BATON_EINVAL, -1);
	assert_int_equal(BATON_ENOMEM, -2);
	assert_int_equal(BATON_EDEAD, -3);
	assert_int_equal(BATON_ERUNNING, -4);
	assert_int_equal(BATON_ENOTCORO, -5);
	assert_int_equal(BATON_ETHREAD, -6);
	assert_int_equal(BATON_ELOCALADDR, -7);
	assert_int_equal(BATON_ESTACK, -8);
	assert_int_equal(BATON_EDONE, -9);
	assert_int_equal(BATON_EBUSY, -10);
	assert_int_equal(BATON_ETIMEDOUT, -11);
	assert_int_equal(BATON_ECLOSED, -12);
	assert_int_equal(BATON_EPERM, -13);
	assert_int_equal(BATON_EAGAIN, -14);
	assert_int_equal(BATON_ENOSCHED, -15);
	assert_int_equal(BATON_EDEADLK, -16);
	assert_int_equal(BATON_ESYS, -17);
	assert_int_equal(BATON_ESHUTDOWN, -18);
	assert_int_equal(BATON_ECANCELED, -19);
	assert_int_equal(BATON_ENOTOWNER, -20);
}

static void test_static_texts(void **state)
{
	(void)state;
	for (int c = 0; c >= BATON_ENOTOWNER; c--) {
		assert_ptr_equal(baton_strerror(c), baton_strerror(c));
		assert_ptr_equal(baton_err_name(c), baton_err_name(c));
	}
}

static void test_extreme_unknown(void **state)
{
	const int odd[] = { INT_MIN, INT_MIN + 1, INT_MAX, -21, 1, -1000000 };

	(void)state;
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		assert_string_equal(baton_strerror(odd[i]), "unknown baton error code");
		assert_string_equal(baton_err_name(odd[i]), "UNKNOWN");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values_pinned),
		cmocka_unit_test(test_static_texts),
		cmocka_unit_test(test_extreme_unknown),
	};

	return cmocka_run_group_tests_name("promise_error", tests, NULL, NULL);
}
