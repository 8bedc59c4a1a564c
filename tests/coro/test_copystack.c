/* SPDX-License-Identifier: MIT */
/*
 * Copy-stack coroutines: their frames survive being copied off and back on
 * the shared stack, at any depth, interleaved and nested; the debug build
 * rejects the addresses of their locals; they stay on their thread.
 */
#include "check.h"

#include <pthread.h>

#include <baton/coro.h>

#ifndef BATON_TEST_DEBUG
#define BATON_TEST_DEBUG 0
#endif

static const struct baton_coro_attr copystack = { BATON_CORO_COPYSTACK, 0, "cs", 0 };

static unsigned char pattern(long id, int depth, int i)
{
	return (unsigned char)(id * 131 + depth * 17 + i);
}

/* Recurse `depth` levels, each with a local array, yield at the bottom
 * `times` times, then check every level's array on the way up. */
static void descend(long id, int depth, int times)
{
	unsigned char buf[200];

	for (int i = 0; i < (int)sizeof(buf); i++)
		buf[i] = pattern(id, depth, i);
	if (depth > 0) {
		descend(id, depth - 1, times);
	} else {
		for (int t = 0; t < times; t++)
			assert_int_equal(baton_coro_yield((void *)id, NULL), BATON_OK);
	}
	for (int i = 0; i < (int)sizeof(buf); i++)
		if (buf[i] != pattern(id, depth, i))
			fail_msg("coroutine %ld: frame at depth %d corrupted", id, depth);
}

struct job {
	long id;
	int depth;
	int times;
};

static void *descender(void *arg, void *in)
{
	struct job *j = arg;

	(void)in;
	descend(j->id, j->depth, j->times);
	return NULL;
}

static void frames_survive_interleaving(void **state)
{
	enum { N = 64, TIMES = 20 };
	static struct job jobs[N];
	baton_coro_t *co[N];
	size_t used[N];

	(void)state;
	for (long i = 0; i < N; i++) {
		jobs[i] = (struct job){ i, (int)(i % 13), TIMES };
		assert_int_equal(baton_coro_create(&co[i], &copystack, descender, &jobs[i]),
				 BATON_OK);
	}
	for (int t = 0; t <= TIMES; t++) {
		for (long i = 0; i < N; i++) {
			void *v;
			assert_int_equal(baton_coro_resume(co[i], NULL, &v), BATON_OK);
			if (t < TIMES)
				assert_int_equal((long)v, i);
		}
		if (t == 0) /* every coroutine has left the shared stack once */
			for (long i = 0; i < N; i++)
				used[i] = baton_coro_stack_size(co[i]);
	}
	for (long i = 0; i < N; i++) {
		assert_int_equal(baton_coro_status(co[i]), BATON_CORO_DEAD);
		baton_coro_destroy(co[i]);
	}
	/* The save buffer follows the depth: 13 levels of 200+ bytes. */
	assert_true(used[12] > used[0] + 12 * 200);
	assert_true(used[1] < 2048);
}

/* A chain of copy-stack coroutines, each resuming the next: every switch
 * moves a running coroutine off the shared stack (the copier's job). */
static void *chain_link(void *arg, void *in)
{
	long level = (long)arg;
	unsigned char mine[64];
	baton_coro_t *next = NULL;
	void *v = NULL;

	(void)in;
	memset(mine, (int)level, sizeof(mine));
	if (level > 0)
		assert_int_equal(
			baton_coro_create(&next, &copystack, chain_link, (void *)(level - 1)),
			BATON_OK);
	for (int round = 0; round < 5; round++) {
		if (next) {
			assert_int_equal(baton_coro_resume(next, NULL, &v), BATON_OK);
			assert_int_equal((long)v, level - 1);
		}
		for (size_t i = 0; i < sizeof(mine); i++)
			assert_int_equal(mine[i], (unsigned char)level);
		assert_int_equal(baton_coro_yield((void *)level, NULL), BATON_OK);
	}
	if (next) { /* let it finish, so it frees its own successor */
		assert_int_equal(baton_coro_resume(next, NULL, NULL), BATON_OK);
		assert_int_equal(baton_coro_status(next), BATON_CORO_DEAD);
		baton_coro_destroy(next);
	}
	return NULL;
}

static void nested_copystack_chain(void **state)
{
	baton_coro_t *top;
	void *v;

	(void)state;
	assert_int_equal(baton_coro_create(&top, &copystack, chain_link, (void *)10), BATON_OK);
	for (int round = 0; round < 5; round++) {
		assert_int_equal(baton_coro_resume(top, NULL, &v), BATON_OK);
		assert_int_equal((long)v, 10);
	}
	assert_int_equal(baton_coro_resume(top, NULL, NULL), BATON_OK);
	assert_int_equal(baton_coro_status(top), BATON_CORO_DEAD);
	baton_coro_destroy(top);
}

static void *yield_local(void *arg, void *in)
{
	int local = 5;

	(void)arg;
	(void)in;
	*(int *)arg = baton_coro_yield(&local, NULL);
	return NULL;
}

static void local_address_rejected_in_debug(void **state)
{
	baton_coro_t *co;
	int rc = 1;

	(void)state;
	assert_int_equal(baton_coro_create(&co, &copystack, yield_local, &rc), BATON_OK);
	assert_int_equal(baton_coro_resume(co, NULL, NULL), BATON_OK);
	if (BATON_TEST_DEBUG)
		assert_int_equal(rc, BATON_ELOCALADDR);
	else
		assert_int_equal(baton_coro_status(co), BATON_CORO_SUSPENDED);
	baton_coro_destroy(co);
}

/* The argument of a copy-stack coroutine being created must not point
 * into the shared stack either (rule 2): by the time it runs, the
 * creator's frames are copied out. */
static void *create_with_local(void *arg, void *in)
{
	int local = 42;
	baton_coro_t *inner;
	int rc = baton_coro_create(&inner, &copystack, yield_local, &local);

	(void)arg;
	(void)in;
	if (rc == BATON_OK)
		baton_coro_destroy(inner);
	return (void *)(intptr_t)rc;
}

static void create_local_arg_rejected_in_debug(void **state)
{
	baton_coro_t *co;
	void *rc;

	(void)state;
	assert_int_equal(baton_coro_create(&co, &copystack, create_with_local, NULL), BATON_OK);
	assert_int_equal(baton_coro_resume(co, NULL, &rc), BATON_OK);
	assert_int_equal((intptr_t)rc, BATON_TEST_DEBUG ? BATON_ELOCALADDR : BATON_OK);
	baton_coro_destroy(co);
}

static void *forever(void *arg, void *in)
{
	(void)arg;
	(void)in;
	for (;;)
		baton_coro_yield(NULL, NULL);
}

static void *resume_elsewhere(void *arg)
{
	baton_coro_t *co = arg;
	long rc[2];

	rc[0] = baton_coro_resume(co, NULL, NULL);
	rc[1] = baton_coro_destroy(co);
	return (void *)(rc[0] * 100 + rc[1]);
}

static void stays_on_its_thread(void **state)
{
	baton_coro_t *co;
	pthread_t th;
	void *rc;

	(void)state;
	assert_int_equal(baton_coro_create(&co, &copystack, forever, NULL), BATON_OK);
	assert_int_equal(baton_coro_resume(co, NULL, NULL), BATON_OK);
	assert_int_equal(pthread_create(&th, NULL, resume_elsewhere, co), 0);
	assert_int_equal(pthread_join(th, &rc), 0);
	assert_int_equal((long)rc, BATON_ETHREAD * 100 + BATON_ETHREAD);
	assert_int_equal(baton_coro_resume(co, NULL, NULL), BATON_OK);
	assert_int_equal(baton_coro_destroy(co), BATON_OK);
}

static void idle_coroutines_keep_little(void **state)
{
	long n = tc_scale(20000, 2000);
	baton_coro_t **co = calloc((size_t)n, sizeof(*co));
	size_t total = 0;

	(void)state;
	assert_non_null(co);
	for (long i = 0; i < n; i++) {
		assert_int_equal(baton_coro_create(&co[i], &copystack, forever, NULL), BATON_OK);
		assert_int_equal(baton_coro_resume(co[i], NULL, NULL), BATON_OK);
	}
	for (long i = 0; i < n - 1; i++) /* the last one still owns the stack */
		total += baton_coro_stack_size(co[i]);
	assert_true(total / (size_t)(n - 1) < 1024);
	for (long i = 0; i < n; i++)
		baton_coro_destroy(co[i]);
	free(co);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(frames_survive_interleaving),
		cmocka_unit_test(nested_copystack_chain),
		cmocka_unit_test(local_address_rejected_in_debug),
		cmocka_unit_test(create_local_arg_rejected_in_debug),
		cmocka_unit_test(stays_on_its_thread),
		cmocka_unit_test(idle_coroutines_keep_little),
	};

	tc_watchdog(120);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
