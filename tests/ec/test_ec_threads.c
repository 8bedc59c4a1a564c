/* SPDX-License-Identifier: MIT */
/* Event counts across threads: an increment wakes a sleeper promptly and
 * clears the flag, and a token handed between threads with nothing but
 * increments and waits is never lost. A lost wake-up fails as a wait that
 * times out ("lost wake-up"), and the watchdog catches anything worse. */
#include "check.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <baton/ec.h>

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t time_scale(void)
{
	const char *s = getenv("BATON_TEST_TIME_SCALE");

	return s && atoi(s) > 0 ? atoi(s) : 1;
}

/* --- a sleeper is woken by the increment ---------------------------------- */

struct sleeper {
	baton_ec_t ec;
	int (*wait)(baton_ec_t *, uint32_t, int64_t);
	int rc;
	int64_t woke;
};

static void *sleep_on_zero(void *arg)
{
	struct sleeper *s = arg;

	/* 10 s (scaled): long past the quiet second, and a lost wake-up
	 * shows as BATON_ETIMEDOUT instead of a hang */
	s->rc = s->wait(&s->ec, 0, INT64_C(10000000000) * time_scale());
	s->woke = mono_ns();
	return NULL;
}

static void check_wakes_sleeper(int (*wait)(baton_ec_t *, uint32_t, int64_t),
				int (*inc)(baton_ec_t *), useconds_t delay)
{
	struct sleeper s = { BATON_EC_INITIALIZER, wait, -99, 0 };
	pthread_t th;
	int64_t t0;

	tc_watchdog(60);
	assert_int_equal(pthread_create(&th, NULL, sleep_on_zero, &s), 0);
	while (!baton_ec_has_waiters(&s.ec))
		sched_yield();
	/* past the flag the sleeper is in FUTEX_WAIT or about to be; give it
	 * time to get there (1.1 s takes baton_ec_wait past its quiet second
	 * into the unbounded sleep: only the wake can end that one) */
	usleep(delay);
	t0 = mono_ns();
	assert_int_equal(inc(&s.ec), BATON_OK);
	pthread_join(th, NULL);
	/* prompt: the thread only has to be scheduled (generous for
	 * sanitizers and qemu); a wait that ran into its timeout, or
	 * returned only when it did, was not woken */
	if (s.rc == BATON_ETIMEDOUT || s.woke - t0 > 200000000 * time_scale())
		fail_msg("lost wake-up: the sleeper returned %s %lld ns after the increment",
			 baton_strerror(s.rc), (long long)(s.woke - t0));
	assert_int_equal(s.rc, BATON_OK);
	assert_false(baton_ec_has_waiters(&s.ec));
	assert_int_equal(baton_ec_value(&s.ec), 1);
	alarm(0);
}

static void inc_wakes_sleeper_in_wait(void **state)
{
	(void)state;
	check_wakes_sleeper(baton_ec_wait, baton_ec_inc, 1100000);
}

static void inc_sp_wakes_sleeper_in_wait(void **state)
{
	(void)state;
	check_wakes_sleeper(baton_ec_wait, baton_ec_inc_sp, 20000);
}

static void inc_wakes_sleeper_in_wait_mp(void **state)
{
	(void)state;
	check_wakes_sleeper(baton_ec_wait_mp, baton_ec_inc, 20000);
}

/* --- the token ------------------------------------------------------------ */

/*
 * n threads share one ec; thread i holds the token while version % n == i.
 * The holder checks and bumps `data` (plain memory, ordered only by the
 * ec's release/acquire: TSan sees a race if that ordering is missing),
 * spins a random short while, and passes the token on by incrementing.
 * The game ends after `rounds` hand-overs, or earlier when the time budget
 * runs out (a loaded machine makes each hand-over a context switch): the
 * holder then lowers `rounds` to the version it is about to publish.
 */
struct token {
	baton_ec_t ec;
	int (*inc)(baton_ec_t *);
	int (*wait)(baton_ec_t *, uint32_t, int64_t);
	int n;
	uint32_t rounds; /* atomic: the holder may lower it */
	long data;
	int64_t timeout_ns;
	int64_t budget_end;
	char failure[160];
};

struct player {
	struct token *t;
	int id;
	unsigned seed;
};

static void short_delay(unsigned *seed)
{
	unsigned r = rand_r(seed);
	volatile unsigned spin;

	if ((r & 1023) == 0) {
		usleep(50); /* long enough that the others go to sleep */
		return;
	}
	for (spin = r % 64; spin > 0; spin--)
		;
}

/* After a failure: release the others so that the test ends now. */
static void end_game(struct token *t)
{
	uint32_t end = __atomic_load_n(&t->rounds, __ATOMIC_RELAXED);

	__atomic_store_n(&t->ec.word, end, __ATOMIC_RELEASE);
	baton_ec_wake(&t->ec);
}

static void *play(void *arg)
{
	struct player *p = arg;
	struct token *t = p->t;

	for (;;) {
		uint32_t v = baton_ec_value(&t->ec);

		/* relaxed: ordered after the version's acquire; a lowered
		 * value was stored before the increment that published v */
		if (v >= __atomic_load_n(&t->rounds, __ATOMIC_RELAXED))
			return NULL;
		if ((int)(v % (uint32_t)t->n) != p->id) {
			int64_t t0 = mono_ns();
			int rc = t->wait(&t->ec, v, t->timeout_ns);

			/* the holder passes the token on within microseconds:
			 * a wait that lasts its whole timeout missed the wake-up
			 * (it may still return OK: the version did change) */
			if (rc == BATON_ETIMEDOUT || mono_ns() - t0 >= t->timeout_ns) {
				snprintf(t->failure, sizeof(t->failure),
					 "lost wake-up: thread %d waited %lld ms for version %u to "
					 "change (now %u)",
					 p->id, (long long)((mono_ns() - t0) / 1000000), v,
					 baton_ec_value(&t->ec));
				end_game(t);
				return NULL;
			}
			if (rc != BATON_OK) {
				snprintf(t->failure, sizeof(t->failure), "wait: %s",
					 baton_strerror(rc));
				return NULL;
			}
			continue;
		}
		if (t->data != (long)v) {
			snprintf(t->failure, sizeof(t->failure),
				 "thread %d saw data %ld at version %u", p->id, t->data, v);
			end_game(t);
			return NULL;
		}
		t->data++;
		short_delay(&p->seed);
		if ((v & 4095) == 0 && mono_ns() > t->budget_end)
			/* relaxed: the increment below is the release for it */
			__atomic_store_n(&t->rounds, v + 1, __ATOMIC_RELAXED);
		t->inc(&t->ec);
	}
}

static void pass_token(int n, int (*inc)(baton_ec_t *),
		       int (*wait)(baton_ec_t *, uint32_t, int64_t), long rounds)
{
	struct token t = { BATON_EC_INITIALIZER,
			   inc,
			   wait,
			   n,
			   (uint32_t)tc_scale(rounds, rounds / 20),
			   0,
			   INT64_C(2000000000) * time_scale(),
			   0,
			   "" };
	struct player p[4];
	pthread_t th[4];
	int64_t t0 = mono_ns();
	uint32_t planned = t.rounds;

	t.budget_end = t0 + INT64_C(3000000000) * time_scale();
	tc_watchdog(120);
	for (int i = 0; i < n; i++) {
		p[i] = (struct player){ &t, i, 12345u + (unsigned)i };
		assert_int_equal(pthread_create(&th[i], NULL, play, &p[i]), 0);
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (t.failure[0])
		fail_msg("%s", t.failure);
	assert_int_equal(t.data, (long)t.rounds);
	assert_int_equal(baton_ec_value(&t.ec), t.rounds);
	assert_true(t.rounds >= 4096);
	print_message("%u hand-overs between %d threads in %.2f s%s\n", t.rounds, n,
		      (double)(mono_ns() - t0) / 1e9,
		      t.rounds < planned ? " (stopped by the 3 s budget)" : "");
	alarm(0);
}

static void token_two_threads_inc(void **state)
{
	(void)state;
	pass_token(2, baton_ec_inc, baton_ec_wait, 1000000);
}

static void token_two_threads_inc_wait_mp(void **state)
{
	(void)state;
	pass_token(2, baton_ec_inc, baton_ec_wait_mp, 200000);
}

/* One producer at a time, each after seeing the other's increment: the
 * single-producer rule holds. */
static void token_two_threads_inc_sp(void **state)
{
	(void)state;
	pass_token(2, baton_ec_inc_sp, baton_ec_wait, 1000000);
}

/* Two sleepers at once on one version: the wake must reach both. */
static void token_three_threads_inc(void **state)
{
	(void)state;
	pass_token(3, baton_ec_inc, baton_ec_wait_mp, 200000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(inc_wakes_sleeper_in_wait_mp),
		cmocka_unit_test(inc_wakes_sleeper_in_wait),
		cmocka_unit_test(inc_sp_wakes_sleeper_in_wait),
		cmocka_unit_test(token_two_threads_inc),
		cmocka_unit_test(token_two_threads_inc_wait_mp),
		cmocka_unit_test(token_two_threads_inc_sp),
		cmocka_unit_test(token_three_threads_inc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
