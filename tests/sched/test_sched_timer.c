/* SPDX-License-Identifier: MIT */
/* The scheduler's timers and balancing (include/baton/sched.h): sleep lasts
 * at least what was asked and not absurdly longer, sleepers wake in
 * deadline order, idle workers take work from busy ones (the steal path),
 * copy-stack tasks stay on the worker they first ran on, and the run
 * control's corner cases (a run from another thread, a run of another
 * scheduler from a task, many short runs). */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include "check.h"

/* --- sleep ------------------------------------------------------------------ */

static int64_t sleep_ns[] = { 1000, 1000000, 5000000, 20000000 };
static int64_t slept[4];

static void sleep_task(void *arg)
{
	intptr_t i = (intptr_t)arg;
	int64_t t0 = tc_now();

	TC_CHECK_RC(baton_sched_sleep(sleep_ns[i]), BATON_OK);
	slept[i] = tc_now() - t0;
}

static void check_sleep(void **state, unsigned workers)
{
	baton_sched_t *s = tc_sched(workers);
	/* Loose: a loaded 2-core CI machine (other jobs' threads preempt the
	 * worker for tens of ms), or qemu (time scale). */
	int64_t slack = TC_MS(1000) * tc_time_scale();

	tc_reset();
	tc_watchdog_phase(20, "sleep");
	for (intptr_t i = 0; i < 4; i++)
		tc_spawn(s, state, BATON_SCHED_ANY_WORKER, sleep_task, (void *)i);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	for (int i = 0; i < 4; i++) {
		if (slept[i] < sleep_ns[i])
			fail_msg("sleep(%lld) returned after %lld ns", (long long)sleep_ns[i],
				 (long long)slept[i]);
		if (slept[i] > sleep_ns[i] + slack)
			fail_msg("sleep(%lld) took %lld ns", (long long)sleep_ns[i],
				 (long long)slept[i]);
	}
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_sleep_1(void **state)
{
	check_sleep(state, 1);
}
static void test_sleep_2(void **state)
{
	check_sleep(state, 2);
}

/* --- many sleepers wake in deadline order ---------------------------------- */

#define SLEEPERS 40

static int wake_log[SLEEPERS];
static int wake_len;
static int64_t deadline[SLEEPERS];

static void order_task(void *arg)
{
	int d = (int)(intptr_t)arg;

	deadline[d] = tc_now() + TC_MS(2) * (d + 1);
	TC_CHECK_RC(baton_sched_sleep(TC_MS(2) * (d + 1)), BATON_OK);
	wake_log[wake_len++] = d;
}

/* One worker, sleepers started in a shuffled order wake sorted by
 * deadline. A preempted worker thread can shift a deadline, so the check
 * allows inversions only between deadlines closer than a margin. */
static void test_sleep_order(void **state)
{
	baton_sched_t *s = tc_sched(1);
	int perm[SLEEPERS];
	uint64_t x = 88172645463325252ULL;
	int64_t margin = TC_MS(10) * tc_time_scale();

	tc_reset();
	tc_watchdog_phase(20, "sleep_order");
	for (int i = 0; i < SLEEPERS; i++)
		perm[i] = i;
	for (int i = SLEEPERS - 1; i > 0; i--) {
		int j = (int)(tc_rand(&x) % (uint64_t)(i + 1)), tmp = perm[i];

		perm[i] = perm[j];
		perm[j] = tmp;
	}
	wake_len = 0;
	for (int i = 0; i < SLEEPERS; i++)
		tc_spawn(s, state, 0, order_task, (void *)(intptr_t)perm[i]);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(wake_len, SLEEPERS);
	for (int i = 0; i < SLEEPERS; i++)
		for (int j = i + 1; j < SLEEPERS; j++) {
			int a = wake_log[i], b = wake_log[j];

			if (deadline[a] > deadline[b] + margin)
				fail_msg("sleeper %d (deadline +%lld us) woke before "
					 "sleeper %d (deadline +%lld us)",
					 a, (long long)(deadline[a] - deadline[0]) / 1000, b,
					 (long long)(deadline[b] - deadline[0]) / 1000);
		}
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* A long sleep cut short by stop, then continued by the next run. */
static int long_woke;

static void long_sleeper(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_sched_sleep(TC_MS(100)), BATON_OK);
	long_woke = 1;
}

static void stopper_task(void *arg)
{
	(void)arg;
	baton_sched_yield();
	baton_sched_stop(baton_sched_self());
}

static void check_sleep_across_stop(void **state, unsigned workers)
{
	baton_sched_t *s = tc_sched(workers);
	int64_t t0 = tc_now();

	tc_reset();
	tc_watchdog_phase(20, "sleep_across_stop");
	long_woke = 0;
	tc_spawn(s, state, (int)workers - 1, long_sleeper, NULL);
	tc_spawn(s, state, 0, stopper_task, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(long_woke, 0);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(long_woke, 1);
	assert_true(tc_now() - t0 >= TC_MS(100));
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_sleep_across_stop_1(void **state)
{
	check_sleep_across_stop(state, 1);
}
static void test_sleep_across_stop_2(void **state)
{
	check_sleep_across_stop(state, 2);
}

/* --- balancing ------------------------------------------------------------ */

#define BAL_TASKS 8

struct bal {
	int model;
	int first[BAL_TASKS];   /* worker of the first dispatch */
	int seen[BAL_TASKS][2]; /* dispatches seen on worker 0 / 1 */
	int moved_after_start;  /* copy-stack task changed worker */
	long iters;
	int stolen;    /* some dispatch ran on worker 1 (atomic) */
	int64_t until; /* stackful: keep going until stolen or then */
};

static struct bal bal;

static void bal_task(void *arg)
{
	int id = (int)(intptr_t)arg;
	int w = baton_sched_worker_index();

	bal.first[id] = w;
	/* A loaded machine may keep worker 1 off the CPU for a while: the
	 * stackful run goes on until it was stolen from, or time is up. */
	for (long i = 0; i < bal.iters ||
	     (bal.model == BATON_CORO_STACKFUL && !__atomic_load_n(&bal.stolen, __ATOMIC_RELAXED) &&
	      tc_now() < bal.until);
	     i++) {
		w = baton_sched_worker_index();
		if (w < 0 || w > 1) {
			TC_FAIL("worker index out of range");
			return;
		}
		bal.seen[id][w]++;
		if (w == 1)
			__atomic_store_n(&bal.stolen, 1, __ATOMIC_RELAXED);
		if (bal.model == BATON_CORO_COPYSTACK && w != bal.first[id])
			__atomic_store_n(&bal.moved_after_start, 1, __ATOMIC_RELAXED);
		/* Some work between yields, so that worker 0 stays busy. */
		for (volatile int k = 0; k < 200; k++)
			;
		baton_sched_yield();
	}
}

static void bal_check(void **state)
{
	int on1 = 0;

	for (int i = 0; i < BAL_TASKS; i++)
		on1 += bal.seen[i][1] > 0;
	assert_int_equal(bal.moved_after_start, 0);
	if (TC_ATTR(state)->model == BATON_CORO_STACKFUL && on1 == 0)
		fail_msg("%d tasks spawned on worker 0 yielded for 3 s, none "
			 "ever ran on idle worker 1: no steal",
			 BAL_TASKS);
}

/* Tasks spawned on worker 0 before the run. */
static void test_steal_spawned_before_run(void **state)
{
	baton_sched_t *s = tc_sched(2);

	tc_reset();
	tc_watchdog_phase(30, "steal_before_run");
	memset(&bal, 0, sizeof(bal));
	bal.model = TC_ATTR(state)->model;
	bal.iters = tc_scale(20000, 2000);
	bal.until = tc_now() + TC_MS(3000) * tc_time_scale();
	for (intptr_t i = 0; i < BAL_TASKS; i++)
		tc_spawn(s, state, 0, bal_task, (void *)i);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	bal_check(state);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* Worker 1 has gone idle (parked) before the work arrives on worker 0 from
 * another thread, and the only task it had (blocked on a channel) is then
 * woken from that thread too: worker 1 must still get some of the work. */
struct late {
	void **state;
	baton_sched_t *s;
	baton_chan_t *ch;
};

static void late_keeper(void *arg)
{
	struct late *l = arg;

	TC_CHECK_RC(baton_chan_recv(l->ch, NULL, TC_MS(10000)), BATON_OK);
}

static void *late_spawner(void *arg)
{
	struct late *l = arg;
	struct baton_task_attr a = tc_tattr(l->state, 0);

	usleep(20000); /* worker 1 finds nothing and parks */
	for (intptr_t i = 0; i < BAL_TASKS; i++)
		TC_CHECK_RC(baton_sched_spawn(l->s, &a, bal_task, (void *)i), BATON_OK);
	/* Timeout 0 works from any thread: retry until the keeper waits. */
	while (baton_chan_send(l->ch, NULL, 0) == BATON_EAGAIN)
		usleep(100);
	return NULL;
}

static void test_steal_after_park(void **state)
{
	struct late l = { state, tc_sched(2), NULL };
	pthread_t th;

	tc_reset();
	tc_watchdog_phase(30, "steal_after_park");
	memset(&bal, 0, sizeof(bal));
	bal.model = TC_ATTR(state)->model;
	bal.iters = tc_scale(20000, 2000);
	bal.until = tc_now() + TC_MS(3000) * tc_time_scale();
	assert_int_equal(baton_chan_create(&l.ch, 0), BATON_OK);
	tc_spawn(l.s, state, 0, late_keeper, &l);
	assert_int_equal(pthread_create(&th, NULL, late_spawner, &l), 0);
	assert_int_equal(baton_sched_run(l.s), BATON_OK);
	pthread_join(th, NULL);
	TC_VERDICT();
	bal_check(state);
	assert_int_equal(baton_chan_destroy(l.ch), BATON_OK);
	assert_int_equal(baton_sched_destroy(l.s), BATON_OK);
}

/* --- run control corner cases -------------------------------------------- */

/* Many short runs on 2 workers: every run must end, i.e. the stop that the
 * last task's end raises must reach the other worker wherever it is in its
 * idle path (parked, or asking worker 0 for work). Bounded in time. */
static void short_task(void *arg)
{
	for (intptr_t i = 0; i < (intptr_t)arg; i++)
		baton_sched_yield();
}

static void test_many_short_runs(void **state)
{
	baton_sched_t *s = tc_sched(2);
	int64_t until = tc_now() + TC_MS(700) * tc_time_scale();
	long r;

	tc_watchdog_phase(60,
			  "many_short_runs (a run never returned: the stop "
			  "did not reach an idle worker)");
	for (r = 0; r < 200 || tc_now() < until; r++) {
		switch (r % 3) {
		case 0:
			tc_spawn(s, state, (int)(r & 1), short_task, NULL);
			break;
		case 1: /* worker 1 asks worker 0 for work as these end */
			tc_spawn(s, state, 0, short_task, (void *)2);
			tc_spawn(s, state, 0, short_task, (void *)3);
			break;
		default:
			tc_spawn(s, state, 1, short_task, (void *)1);
			tc_spawn(s, state, 0, short_task, (void *)4);
			break;
		}
		assert_int_equal(baton_sched_run(s), BATON_OK);
	}
	if (getenv("BATON_TEST_VERBOSE"))
		fprintf(stderr, "%ld short runs\n", r);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* A scheduler run from a task of another scheduler: the outer task is still
 * a task of the outer scheduler afterwards. */
struct nest {
	void **state;
	baton_sched_t *outer, *inner;
	int inner_ran;
};

static void inner_task(void *arg)
{
	struct nest *n = arg;

	TC_CHECK(baton_sched_self() == n->inner);
	n->inner_ran = 1;
}

static void outer_task(void *arg)
{
	struct nest *n = arg;

	TC_CHECK_RC(baton_sched_run(n->inner), BATON_OK);
	TC_CHECK(n->inner_ran);
	TC_CHECK(baton_sched_self() == n->outer);
	TC_CHECK_RC(baton_sched_yield(), BATON_OK);
}

static void test_nested_run(void **state)
{
	struct nest n = { state, tc_sched(1), tc_sched(1), 0 };

	tc_reset();
	tc_watchdog_phase(20, "nested_run");
	tc_spawn(n.inner, state, 0, inner_task, &n);
	tc_spawn(n.outer, state, 0, outer_task, &n);
	assert_int_equal(baton_sched_run(n.outer), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(n.inner), BATON_OK);
	assert_int_equal(baton_sched_destroy(n.outer), BATON_OK);
}

/* The second run is made by another thread than the first: stackful tasks
 * that started in the first continue there; copy-stack ones cannot (their
 * frames are on the first thread's shared stack), so that run returns
 * BATON_ETHREAD and a run from the first thread finishes them. It must not
 * spin forever. */
static int cont_steps;

static void cont_task(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++) {
		if (i == 0)
			baton_sched_stop(baton_sched_self());
		cont_steps++;
		baton_sched_yield();
	}
}

static void *run_thread(void *arg)
{
	static int rc;

	rc = baton_sched_run(arg);
	return &rc;
}

static void test_run_from_other_thread(void **state)
{
	baton_sched_t *s = tc_sched(1);
	pthread_t th;
	struct timespec ts;
	void *ret;

	tc_watchdog_phase(20, "run_from_other_thread");
	cont_steps = 0;
	tc_spawn(s, state, 0, cont_task, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_true(cont_steps < 1000); /* stopped before it finished */
	assert_int_equal(pthread_create(&th, NULL, run_thread, s), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 3 * tc_time_scale();
	if (pthread_timedjoin_np(th, &ret, &ts) != 0) {
		/* Cannot recover the spinning worker: end the program. */
		fprintf(stderr,
			"FAIL: run from a second thread never returned "
			"(a %s task started by the first run's thread is "
			"re-queued forever)\n",
			TC_ATTR(state)->name);
		_exit(1);
	}
	if (TC_ATTR(state)->model == BATON_CORO_COPYSTACK) {
		assert_int_equal(*(int *)ret, BATON_ETHREAD);
		assert_true(cont_steps < 1000); /* nothing ran */
		while (cont_steps < 1000)
			assert_int_equal(baton_sched_run(s), BATON_OK);
	} else {
		assert_int_equal(*(int *)ret, BATON_OK);
	}
	assert_int_equal(cont_steps, 1000);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_sleep_1),
		TC_MODEL_TESTS(test_sleep_2),
		TC_MODEL_TESTS(test_sleep_order),
		TC_MODEL_TESTS(test_sleep_across_stop_1),
		TC_MODEL_TESTS(test_sleep_across_stop_2),
		TC_MODEL_TESTS(test_steal_spawned_before_run),
		TC_MODEL_TESTS(test_steal_after_park),
		TC_MODEL_TESTS(test_many_short_runs),
		TC_MODEL_TESTS(test_nested_run),
		/* last: a failure here ends the program */
		TC_MODEL_TESTS(test_run_from_other_thread),
	};

	return cmocka_run_group_tests_name("sched_timer", tests, NULL, NULL);
}
