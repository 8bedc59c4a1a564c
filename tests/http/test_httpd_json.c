/* SPDX-License-Identifier: MIT */
/* baton-httpd's /_stats writer (apps/httpd/stats_json.c): the snapshots as
 * JSON, strings escaped, measured in full when the buffer is too small. */
#include "check.h"

#include <string.h>

#include "admin.h"

static void test_exact_text(void **state)
{
	static const char want[] = "{\"stages\":[{\"name\":\"parse \\\"1\\\"\",\"queued\":3,"
				   "\"queue_limit\":3,\"running\":0,\"concurrency\":2,"
				   "\"closed\":false,\"submitted\":3,\"rejected\":1,"
				   "\"completed\":0,\"handler_ns\":0,\"wait_ns\":0,"
				   "\"runners\":0,\"runners_started\":0}],"
				   "\"pools\":[{\"name\":\"db\",\"capacity\":2,\"in_use\":0,"
				   "\"waiters\":0,\"acquired\":0,\"refused\":0}]}";
	struct baton_stage_stats st = {
		.name = "parse \"1\"",
		.queued = 3,
		.queue_limit = 3,
		.concurrency = 2,
		.submitted = 3,
		.rejected = 1,
	};
	struct baton_pool_stats p = { .name = "db", .capacity = 2 };
	char buf[512], small[16];
	size_t len;

	(void)state;
	assert_int_equal(httpd_stats_json(&st, 1, &p, 1, buf, sizeof(buf), &len), BATON_OK);
	assert_string_equal(buf, want);
	assert_int_equal(len, strlen(want));
	/* Measured only. */
	assert_int_equal(httpd_stats_json(&st, 1, &p, 1, NULL, 0, &len), BATON_OK);
	assert_int_equal(len, strlen(want));
	/* Too small: EINVAL, the whole length, a terminated prefix. */
	assert_int_equal(httpd_stats_json(&st, 1, &p, 1, small, sizeof(small), &len), BATON_EINVAL);
	assert_int_equal(len, strlen(want));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(httpd_stats_json(NULL, 0, NULL, 0, buf, sizeof(buf), &len), BATON_OK);
	assert_string_equal(buf, "{\"stages\":[],\"pools\":[]}");
}

static void test_control_bytes_escaped(void **state)
{
	struct baton_pool_stats p = { .name = "a\\b\x01" };
	char buf[256];
	size_t len;

	(void)state;
	assert_int_equal(httpd_stats_json(NULL, 0, &p, 1, buf, sizeof(buf), &len), BATON_OK);
	assert_non_null(strstr(buf, "\"name\":\"a\\\\b\\u0001\""));
}

static void test_bad_args(void **state)
{
	struct baton_pool_stats p = { .name = "x" };
	char buf[8];

	(void)state;
	assert_int_equal(httpd_stats_json(NULL, 0, NULL, 0, buf, sizeof(buf), NULL), BATON_EINVAL);
	assert_int_equal(httpd_stats_json(NULL, 1, NULL, 0, buf, sizeof(buf), &(size_t){ 0 }),
			 BATON_EINVAL);
	assert_int_equal(httpd_stats_json(NULL, 0, NULL, 1, buf, sizeof(buf), &(size_t){ 0 }),
			 BATON_EINVAL);
	assert_int_equal(httpd_stats_json(NULL, 0, &p, 1, NULL, 4, &(size_t){ 0 }), BATON_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_text),
		cmocka_unit_test(test_control_bytes_escaped),
		cmocka_unit_test(test_bad_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
