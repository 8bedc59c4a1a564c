/* SPDX-License-Identifier: MIT */
/* The claims of baton/stage.h's attributes, read from the header and
 * checked: baton_stage_attr_init gives the macro's defaults (queue 64,
 * concurrency 1, no needs, default tasks) and refuses NULL; create refuses
 * a NULL attribute and, with the defaults, a missing name. The same for a
 * gate's (baton_gate_attr_init: queue 64, concurrency 1, no needs). */
#include "check.h"

#include <baton/stage.h>

static void test_attr_init(void **state)
{
	const struct baton_stage_attr m = BATON_STAGE_ATTR_INIT;
	struct baton_stage_attr a;
	baton_stage_t *st;
	baton_sched_t *s;

	(void)state;
	memset(&a, 0x5a, sizeof(a));
	assert_int_equal(baton_stage_attr_init(&a), BATON_OK);
	assert_null(a.name);
	assert_null(a.fn);
	assert_null(a.ctx);
	assert_int_equal(a.queue_capacity, 64);
	assert_int_equal(a.queue_capacity, m.queue_capacity);
	assert_int_equal(a.concurrency, 1);
	assert_null(a.needs);
	assert_int_equal(a.nneeds, 0);
	assert_int_equal(a.task.worker, BATON_SCHED_ANY_WORKER);
	assert_int_equal(a.task.coro.model, m.task.coro.model);
	assert_int_equal(a.first_worker, 0);
	assert_int_equal(a.nworkers, 0);
	assert_int_equal(baton_stage_attr_init(NULL), BATON_EINVAL);

	assert_int_equal(baton_sched_create(&s, NULL), BATON_OK);
	assert_int_equal(baton_stage_create(&st, s, NULL), BATON_EINVAL);
	assert_int_equal(baton_stage_create(&st, s, &a), BATON_EINVAL);
	a.name = "promise";
	assert_int_equal(baton_stage_create(&st, s, &a), BATON_OK);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_gate_attr_init(void **state)
{
	const struct baton_gate_attr m = BATON_GATE_ATTR_INIT;
	struct baton_gate_attr a;
	baton_gate_t *g;

	(void)state;
	memset(&a, 0x5a, sizeof(a));
	assert_int_equal(baton_gate_attr_init(&a), BATON_OK);
	assert_null(a.name);
	assert_int_equal(a.queue_capacity, 64);
	assert_int_equal(a.queue_capacity, m.queue_capacity);
	assert_int_equal(a.concurrency, 1);
	assert_int_equal(a.concurrency, m.concurrency);
	assert_null(a.needs);
	assert_int_equal(a.nneeds, 0);
	assert_int_equal(baton_gate_attr_init(NULL), BATON_EINVAL);

	assert_int_equal(baton_gate_create(&g, NULL), BATON_EINVAL);
	assert_int_equal(baton_gate_create(&g, &a), BATON_EINVAL);
	a.name = "promise";
	assert_int_equal(baton_gate_create(&g, &a), BATON_OK);
	assert_int_equal(baton_gate_destroy(g), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attr_init),
		cmocka_unit_test(test_gate_attr_init),
	};

	return cmocka_run_group_tests_name("promise_stage", tests, NULL, NULL);
}
