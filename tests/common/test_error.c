/* SPDX-License-Identifier: MIT */
/* The public contract's mechanical parts (include/baton/error.h,
 * include/baton/common.h): every error code has one distinct name and
 * description, unknown codes get the fallbacks, and the version the headers
 * give is the library's and the build's. */
#include "check.h"

#include <string.h>

#include <baton/error.h>

struct code {
	int value;
	const char *name;
};

#define CODE_(name, value, text) { BATON_##name, #name },
static const struct code codes[] = { BATON_ERRORS(CODE_) };
#undef CODE_
#define NCODES (sizeof(codes) / sizeof(codes[0]))

static void test_codes_are_dense_and_named(void **state)
{
	(void)state;
	/* Stable numbering: 0, -1, -2, ... with no gap, in list order. */
	for (size_t i = 0; i < NCODES; i++) {
		assert_int_equal(codes[i].value, -(int)i);
		assert_string_equal(baton_err_name(codes[i].value), codes[i].name);
	}
	assert_string_equal(baton_err_name(BATON_OK), "OK");
	assert_string_equal(baton_err_name(BATON_EINVAL), "EINVAL");
	assert_string_equal(baton_err_name(BATON_ESHUTDOWN), "ESHUTDOWN");
}

static void test_descriptions_distinct(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCODES; i++) {
		const char *a = baton_strerror(codes[i].value);

		assert_non_null(a);
		assert_true(strlen(a) > 5);
		assert_string_not_equal(a, "unknown baton error code");
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(a, baton_strerror(codes[j].value));
	}
}

static void test_unknown_codes(void **state)
{
	(void)state;
	assert_string_equal(baton_strerror(1), "unknown baton error code");
	assert_string_equal(baton_strerror(-(int)NCODES), "unknown baton error code");
	assert_string_equal(baton_err_name(-1000), "UNKNOWN");
	assert_string_equal(baton_err_name(42), "UNKNOWN");
}

static void test_version(void **state)
{
	(void)state;
	assert_string_equal(baton_version(), BATON_VERSION_STRING);
	assert_string_equal(baton_version(), BATON_TEST_PROJECT_VERSION); /* CMake's */
	assert_int_equal(baton_version_number(), BATON_VERSION_NUMBER);
	assert_true(BATON_VERSION_NUMBER ==
		    BATON_VERSION_ENCODE(BATON_VERSION_MAJOR, BATON_VERSION_MINOR,
					 BATON_VERSION_PATCH));
	assert_true(BATON_VERSION_ENCODE(0, 10, 0) > BATON_VERSION_ENCODE(0, 9, 99));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_codes_are_dense_and_named),
		cmocka_unit_test(test_descriptions_distinct),
		cmocka_unit_test(test_unknown_codes),
		cmocka_unit_test(test_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
