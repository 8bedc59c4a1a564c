/* SPDX-License-Identifier: MIT */
/* Stackful coroutines may be resumed by different threads in turn (what
 * the schedulers' work stealing will do); each thread has its own state. */
#include "check.h"

#include <pthread.h>

#include <baton/coro.h>

static void *accumulate(void *arg, void *in)
{
	long sum = 0;

	(void)arg;
	for (;;) {
		sum += (long)in;
		baton_coro_yield((void *)sum, &in);
	}
}

struct turn {
	baton_coro_t *co;
	pthread_mutex_t lock;
	long rounds;
	long errors;
};

static void *take_turns(void *arg)
{
	struct turn *t = arg;

	for (long i = 0; i < t->rounds; i++) {
		void *v;

		pthread_mutex_lock(&t->lock);
		if (baton_coro_resume(t->co, (void *)1, &v) != BATON_OK)
			t->errors++;
		if (baton_coro_self() != NULL)
			t->errors++;
		pthread_mutex_unlock(&t->lock);
	}
	return NULL;
}

static void stackful_migrates_between_threads(void **state)
{
	struct turn t = { .lock = PTHREAD_MUTEX_INITIALIZER, .rounds = tc_scale(20000, 500) };
	pthread_t th[4];
	void *v;

	(void)state;
	assert_int_equal(baton_coro_create(&t.co, NULL, accumulate, NULL), BATON_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, take_turns, &t), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(t.errors, 0);
	assert_int_equal(baton_coro_resume(t.co, (void *)0, &v), BATON_OK);
	assert_int_equal((long)v, 4 * t.rounds);
	baton_coro_destroy(t.co);
}

static void *private_coroutines(void *arg)
{
	long n = (long)arg, bad = 0;
	baton_coro_t *co[16];

	for (int i = 0; i < 16; i++)
		if (baton_coro_create(&co[i], i % 2 ? NULL : &tc_copystack, accumulate, NULL))
			return (void *)-1L;
	for (long r = 1; r <= n; r++)
		for (int i = 0; i < 16; i++) {
			void *v;
			if (baton_coro_resume(co[i], (void *)2, &v) != BATON_OK || (long)v != 2 * r)
				bad++;
		}
	for (int i = 0; i < 16; i++)
		baton_coro_destroy(co[i]);
	return (void *)bad;
}

static void threads_run_their_own_coroutines(void **state)
{
	pthread_t th[4];
	void *bad;

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, private_coroutines,
						(void *)tc_scale(5000, 200)),
				 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], &bad);
		assert_int_equal((long)bad, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stackful_migrates_between_threads),
		cmocka_unit_test(threads_run_their_own_coroutines),
	};

	tc_watchdog(120);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
