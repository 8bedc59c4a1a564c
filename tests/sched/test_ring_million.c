/* SPDX-License-Identifier: MIT */
/*
 * A million tasks: the ring benchmark's protocol (docs/ring.md) with
 * 1,000,000 tasks in rings of 8 on one worker, one round, in each coroutine
 * model. Stackful tasks get the default 64 KiB stacks, so this also checks
 * that the number of live stackful coroutines is not bounded by the
 * kernel's mapping limit (vm.max_map_count). Bounded by a watchdog; built
 * only without sanitizers (their shadow memory would need tens of GiB).
 *
 * BATON_TEST_RING_TASKS overrides the count (e.g. for a quick local run).
 */
#include "check.h"

#define RING_N 8

struct member {
	baton_chan_t *in, *right;
	long index;
};

static struct member *members;
static long bad; /* messages that came back wrong */

static void member_main(void *arg)
{
	struct member *m = arg;
	void *v = NULL;

	if (m->index == 0) {
		TC_CHECK_RC(baton_chan_send(m->right, (void *)1000L, -1), BATON_OK);
		TC_CHECK_RC(baton_chan_recv(m->in, &v, -1), BATON_OK);
		if ((long)v != 1000 + RING_N - 1)
			bad++;
		return;
	}
	TC_CHECK_RC(baton_chan_recv(m->in, &v, -1), BATON_OK);
	TC_CHECK_RC(baton_chan_send(m->right, (void *)((long)v + 1), -1), BATON_OK);
}

static long task_count(void)
{
	const char *e = getenv("BATON_TEST_RING_TASKS");
	long n = e ? atol(e) : 1000000;

	return n < RING_N ? RING_N : n / RING_N * RING_N;
}

static void test_million_ring(void **state)
{
	long c = task_count();
	baton_sched_t *s = tc_sched(1);
	struct baton_sched_stats st;

	tc_watchdog_phase(300, "million_ring");
	tc_reset();
	bad = 0;
	members = calloc((size_t)c, sizeof(*members));
	assert_non_null(members);
	for (long i = 0; i < c; i++)
		assert_int_equal(baton_chan_create(&members[i].in, 0), BATON_OK);
	for (long i = 0; i < c; i++) {
		long ring = i / RING_N, pos = i % RING_N;
		struct baton_task_attr a = tc_tattr(state, BATON_SCHED_ANY_WORKER);
		int rc;

		members[i].index = pos;
		members[i].right = members[ring * RING_N + (pos + 1) % RING_N].in;
		rc = baton_sched_spawn(s, &a, member_main, &members[i]);
		if (rc != BATON_OK)
			fail_msg("spawn %ld of %ld: %s", i, c, baton_strerror(rc));
	}
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(bad, 0);
	assert_int_equal(baton_sched_stats(s, &st), BATON_OK);
	assert_true(st.dispatches >= (uint64_t)c);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	for (long i = 0; i < c; i++)
		assert_int_equal(baton_chan_destroy(members[i].in), BATON_OK);
	free(members);
	baton_coro_pool_trim();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_million_ring),
	};

	return cmocka_run_group_tests_name("ring_million", tests, NULL, NULL);
}
