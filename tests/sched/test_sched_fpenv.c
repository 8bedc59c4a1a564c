/* SPDX-License-Identifier: MIT */
/*
 * sched.h rule 6: tasks share their worker's floating-point control state
 * by default and do no FP work when they switch; a task spawned with
 * BATON_TASK_OWN_FPENV keeps its own across its blocking calls, yields and
 * moves between workers, and nobody else ever sees it.
 */
#include "check.h"
#include "internal.h" /* baton__coro_fp_shared: 1 if the coroutine shares the FP state */

#include <fenv.h>

#include <baton/chan.h>
#include <baton/sched.h>

#ifndef BATON_TEST_UCONTEXT
#define BATON_TEST_UCONTEXT 0
#endif

static baton_sched_t *make_sched(unsigned workers)
{
	struct baton_sched_attr a;
	baton_sched_t *s;

	baton_sched_attr_init(&a);
	a.workers = workers;
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
	return s;
}

/* --- default tasks ------------------------------------------------------- */
static int default_modes[8], default_shared;

static void report_default(void *arg)
{
	int *seen = arg;

	default_shared = baton__coro_fp_shared(baton_coro_self());
	for (int i = 0; i < 4; i++) {
		seen[i] = fegetround();
		baton_sched_yield();
	}
}

/* The worker's state is the state of the thread that runs the scheduler:
 * a task finds it, and its coroutine shares it (no FP work). */
static void default_task_runs_in_worker_state(void **state)
{
	baton_sched_t *s = make_sched(1);

	(void)state;
	assert_int_equal(fesetround(FE_DOWNWARD), 0);
	assert_int_equal(baton_sched_spawn(s, NULL, report_default, default_modes), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(fegetround(), FE_DOWNWARD);
	assert_int_equal(fesetround(FE_TONEAREST), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(default_modes[i], FE_DOWNWARD);
	assert_int_equal(default_shared, 1);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* No FP work between default tasks, seen from the outside: a task that
 * breaks rule 6 and changes the mode hands it to the next task of its
 * worker (nothing stored it away or loaded another one). Only with the
 * hand-written switch: swapcontext keeps every context's own state. */
static int leaked_mode;

static void breaks_the_rule(void *arg)
{
	(void)arg;
	fesetround(FE_UPWARD);
	baton_sched_yield();
	fesetround(FE_TONEAREST); /* put back what it found */
}

static void sees_the_leak(void *arg)
{
	(void)arg;
	leaked_mode = fegetround();
}

static void default_tasks_do_no_fp_work(void **state)
{
	baton_sched_t *s = make_sched(1);

	(void)state;
	assert_int_equal(baton_sched_spawn(s, NULL, breaks_the_rule, NULL), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, NULL, sees_the_leak, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	if (!BATON_TEST_UCONTEXT)
		assert_int_equal(leaked_mode, FE_UPWARD);
	assert_int_equal(fegetround(), FE_TONEAREST);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* --- own-state tasks ----------------------------------------------------- */
#define ROUNDS 200

struct own_run {
	baton_chan_t *to_own, *to_peer;
	int mode; /* the own task's mode */
	int wrong_own, wrong_peer, wrong_bystander;
	int workers_seen; /* bit i: the own task ran on worker i */
	int own_shared;
	int done; /* atomic: the own task ends */
};

/* Sets its mode, then passes a token back and forth with a peer bound to
 * worker 1: woken from there, it moves to that worker when it can. */
static void own_task(void *arg)
{
	struct own_run *r = arg;
	void *v;

	r->own_shared = baton__coro_fp_shared(baton_coro_self());
	assert_int_equal(fesetround(r->mode), 0);
	for (int i = 0; i < ROUNDS; i++) {
		r->workers_seen |= 1 << baton_sched_worker_index();
		if (fegetround() != r->mode)
			r->wrong_own++;
		assert_int_equal(baton_chan_send(r->to_peer, NULL, -1), BATON_OK);
		assert_int_equal(baton_chan_recv(r->to_own, &v, -1), BATON_OK);
		if (fegetround() != r->mode)
			r->wrong_own++;
		baton_sched_yield();
		r->workers_seen |= 1 << baton_sched_worker_index();
	}
	/* Release: pairs with the bystander's acquire (only the flag is
	 * read there; TSan wants the pairing). */
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static void peer_task(void *arg)
{
	struct own_run *r = arg;
	void *v;

	for (int i = 0; i < ROUNDS; i++) {
		assert_int_equal(baton_chan_recv(r->to_peer, &v, -1), BATON_OK);
		if (fegetround() != FE_TONEAREST)
			r->wrong_peer++;
		assert_int_equal(baton_chan_send(r->to_own, NULL, -1), BATON_OK);
		if (fegetround() != FE_TONEAREST)
			r->wrong_peer++;
	}
}

/* A default task on worker 0, switching with the own one while it is
 * there. */
static void bystander_task(void *arg)
{
	struct own_run *r = arg;

	/* Acquire: see own_task. */
	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
		if (fegetround() != FE_TONEAREST)
			r->wrong_bystander++;
		baton_sched_yield();
	}
}

static void spawn_on(baton_sched_t *s, int worker, unsigned flags, baton_task_fn fn, void *arg)
{
	struct baton_task_attr a;

	baton_task_attr_init(&a);
	a.worker = worker;
	a.flags = flags;
	assert_int_equal(baton_sched_spawn(s, &a, fn, arg), BATON_OK);
}

static void own_task_keeps_its_mode(void **state)
{
	baton_sched_t *s = make_sched(2);
	struct own_run up = { .mode = FE_UPWARD }, down = { .mode = FE_DOWNWARD };
	struct own_run *runs[] = { &up, &down };

	(void)state;
	assert_int_equal(fegetround(), FE_TONEAREST);
	for (int k = 0; k < 2; k++) {
		struct own_run *r = runs[k];

		assert_int_equal(baton_chan_create(&r->to_own, 0), BATON_OK);
		assert_int_equal(baton_chan_create(&r->to_peer, 0), BATON_OK);
		spawn_on(s, 0, BATON_TASK_OWN_FPENV, own_task, r);
		spawn_on(s, 1, BATON_TASK_BOUND, peer_task, r);
		spawn_on(s, 0, BATON_TASK_BOUND, bystander_task, r);
	}
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(fegetround(), FE_TONEAREST); /* the worker's, intact */
	for (int k = 0; k < 2; k++) {
		struct own_run *r = runs[k];

		assert_int_equal(r->own_shared, 0);
		assert_int_equal(r->wrong_own, 0);
		assert_int_equal(r->wrong_peer, 0);
		assert_int_equal(r->wrong_bystander, 0);
		/* spawned on worker 0, it ran on 1 (its waker's) too */
		assert_true(r->workers_seen & 2);
		baton_chan_destroy(r->to_own);
		baton_chan_destroy(r->to_peer);
	}
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* An own-state task asks for its own state: its coroutine may not share. */
static void own_and_shared_refused(void **state)
{
	baton_sched_t *s = make_sched(1);
	struct baton_task_attr a;

	(void)state;
	baton_task_attr_init(&a);
	a.flags = BATON_TASK_OWN_FPENV;
	a.coro.flags = BATON_CORO_SHARED_FPENV;
	assert_int_equal(baton_sched_spawn(s, &a, sees_the_leak, NULL), BATON_EINVAL);
	a.flags = 0x80u; /* unknown */
	a.coro.flags = 0;
	assert_int_equal(baton_sched_spawn(s, &a, sees_the_leak, NULL), BATON_EINVAL);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(default_task_runs_in_worker_state),
		cmocka_unit_test(default_tasks_do_no_fp_work),
		cmocka_unit_test(own_task_keeps_its_mode),
		cmocka_unit_test(own_and_shared_refused),
	};

	tc_watchdog(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
