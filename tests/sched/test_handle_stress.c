/* SPDX-License-Identifier: MIT */
/*
 * Task ids under a race (baton/sched.h, "tasks you can hold"): with a fixed
 * seed, four driver tasks on two workers and a plain thread share a table
 * of ids and, op after op, spawn (both coroutine models), abort, join
 * (try, timed, blocking from the thread), detach and ask the status of
 * tasks that are ending meanwhile, and open, cancel and close small groups
 * (collecting ones too, whose ends baton_group_next takes while the others
 * join, detach and abort the same ids).
 * Every call must give one of its documented answers, every join the
 * status and result its task left (or BATON_ECANCELED), and the run must
 * end with every task joined or detached: no lost wake-up, no slot read
 * after reuse (ASan), no race (TSan).
 *
 * The count of operations: BATON_HANDLE_STRESS_OPS (default 50000, 10000 under TSan: the
 * CTest's few seconds; the soak: 1000000). Prints ops and seconds.
 */
#include "check.h"

#include <stdbool.h>

#include <baton/chan.h>

#define NIDS 256
#define NDRIVERS 4

static baton_sched_t *S;
static baton_tid_t table[NIDS]; /* 0 = empty (atomic) */
static long ops_left;           /* (atomic) */
static long joined, aborted_ok; /* (atomic) counts for the report */
static baton_chan_t *never;

static int child(void *arg, void **result)
{
	uintptr_t a = (uintptr_t)arg;
	void *v;
	int rc;

	*result = arg;
	switch (a % 5) {
	case 0:
		break;
	case 1:
		for (unsigned i = 0; i < (a >> 8) % 4; i++)
			baton_sched_yield();
		break;
	case 2:
		if ((rc = baton_sched_sleep((int64_t)((a >> 8) % 50) * 1000)) != BATON_OK)
			return rc;
		break;
	default:
		rc = baton_chan_recv(never, &v, (int64_t)((a >> 8) % 2000 + 1) * 1000);
		if (rc != BATON_ETIMEDOUT)
			return rc; /* ECANCELED */
		break;
	}
	return (int)(a & 0xffff);
}

static void check_join(int rc, uintptr_t arg_seen, int status)
{
	if (rc != BATON_OK)
		return;
	/* Relaxed: a count. */
	__atomic_add_fetch(&joined, 1, __ATOMIC_RELAXED);
	if (status != (int)(arg_seen & 0xffff) && status != BATON_ECANCELED) {
		char m[96];

		snprintf(m, sizeof(m), "joined status %d for arg %#lx", status,
			 (unsigned long)arg_seen);
		TC_FAIL(m);
	}
}

/* Remove id from the table if it is still there. */
static void forget(int idx, baton_tid_t id)
{
	/* Relaxed: the table holds numbers; the ids' slots order themselves. */
	__atomic_compare_exchange_n(&table[idx], &id, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Put a new id in the table at idx if that place is free, or detach it. */
static void keep_id(int idx, baton_tid_t nid)
{
	baton_tid_t zero = 0;

	/* Relaxed: see forget. */
	if (!__atomic_compare_exchange_n(&table[idx], &zero, nid, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		TC_CHECK_RC(baton_task_detach(nid), BATON_OK);
}

static void group_op(uint64_t *rng, bool in_task)
{
	baton_group_t *g;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	unsigned n = 1 + tc_rand(rng) % 4;
	unsigned flags = (tc_rand(rng) % 2 ? BATON_GROUP_FAIL_FAST : 0) |
		(tc_rand(rng) % 2 ? BATON_GROUP_COLLECT : 0);
	bool collect = flags & BATON_GROUP_COLLECT;
	struct baton_task_end first;
	int rc;

	TC_CHECK_RC(baton_group_create(&g, S, flags), BATON_OK);
	for (unsigned i = 0; i < n; i++) {
		/* A collecting group's ids go to the table too: the others
		 * join, detach and abort them while next takes them. */
		baton_tid_t nid = 0;
		bool give = collect && tc_rand(rng) % 2;

		ta.coro.model = tc_rand(rng) % 2 ? BATON_CORO_COPYSTACK : BATON_CORO_STACKFUL;
		rc = baton_group_spawn(g, &ta, child, (void *)(uintptr_t)tc_rand(rng),
				       give ? &nid : NULL);
		TC_CHECK(rc == BATON_OK || rc == BATON_ECANCELED);
		if (rc == BATON_OK && give)
			keep_id((int)(tc_rand(rng) % NIDS), nid);
	}
	if (tc_rand(rng) % 2)
		TC_CHECK_RC(baton_group_cancel(g), BATON_OK);
	for (unsigned k = collect ? tc_rand(rng) % 4 : 0; k > 0; k--) {
		struct baton_task_end e;

		rc = baton_group_next(g, (int64_t)(tc_rand(rng) % 3) * (in_task ? 500000 : 1000000),
				      &e);
		TC_CHECK(rc == BATON_OK || rc == BATON_EDONE || rc == BATON_EAGAIN ||
			 rc == BATON_ETIMEDOUT);
		check_join(rc, (uintptr_t)e.result, e.status);
	}
	if (in_task && tc_rand(rng) % 2) {
		rc = baton_group_wait(g, (int64_t)(tc_rand(rng) % 3) * 500000, &first);
		TC_CHECK(rc == BATON_OK || rc == BATON_EAGAIN || rc == BATON_ETIMEDOUT);
	}
	TC_CHECK_RC(baton_group_close(g, &first), BATON_OK);
}

static void one_op(uint64_t *rng, bool in_task)
{
	uint64_t r = tc_rand(rng);
	int idx = (int)(r % NIDS), op = (int)((r >> 16) % 100), rc, status;
	/* Relaxed: see forget. */
	baton_tid_t id = __atomic_load_n(&table[idx], __ATOMIC_RELAXED);
	void *res = NULL;

	if (op >= 95) {
		group_op(rng, in_task);
		return;
	}
	if (id == 0) {
		struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
		baton_tid_t nid;

		ta.coro.model = r >> 40 & 1 ? BATON_CORO_COPYSTACK : BATON_CORO_STACKFUL;
		TC_CHECK_RC(baton_task_spawn(S, &ta, child, (void *)(uintptr_t)tc_rand(rng), &nid),
			    BATON_OK);
		keep_id(idx, nid);
		return;
	}
	if (op < 30) {
		rc = baton_task_abort(id);
		TC_CHECK(rc == BATON_OK || rc == BATON_EDEAD);
		if (rc == BATON_OK) /* Relaxed: a count. */
			__atomic_add_fetch(&aborted_ok, 1, __ATOMIC_RELAXED);
	} else if (op < 65) {
		int64_t to = in_task ? (int64_t)(r >> 24) % 3 * 300000
				     : (int64_t)(r >> 24) % 2 * 1000000;

		rc = baton_task_join(id, to, &status, &res);
		TC_CHECK(rc == BATON_OK || rc == BATON_EDEAD || rc == BATON_EAGAIN ||
			 rc == BATON_ETIMEDOUT);
		check_join(rc, (uintptr_t)res, status);
		if (rc == BATON_OK || rc == BATON_EDEAD)
			forget(idx, id);
	} else if (op < 75) {
		rc = baton_task_detach(id);
		TC_CHECK(rc == BATON_OK || rc == BATON_EDEAD);
		forget(idx, id);
	} else {
		rc = baton_task_status(id);
		TC_CHECK(rc == BATON_TASK_RUNNING || rc == BATON_TASK_ENDED || rc == BATON_EDEAD);
		if (rc == BATON_EDEAD)
			forget(idx, id);
	}
}

static void drive(uint64_t seed, bool in_task)
{
	uint64_t rng = seed;

	/* Relaxed: a budget shared by the drivers. */
	while (__atomic_sub_fetch(&ops_left, 1, __ATOMIC_RELAXED) >= 0) {
		one_op(&rng, in_task);
		if (in_task && tc_rand(&rng) % 8 == 0)
			baton_sched_yield();
	}
}

static void driver_task(void *arg)
{
	drive(0x5eed0000u + (uintptr_t)arg, true);
}

static int thread_done; /* (atomic) */

static void *driver_thread(void *arg)
{
	drive(0x5eedffffu, false);
	(void)arg;
	/* Release: orders nothing but the flag; the test joins the thread. */
	__atomic_store_n(&thread_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Keeps the run going while the thread drives: its group closes need
 * the workers. */
static void keeper(void *arg)
{
	(void)arg;
	/* Acquire: see driver_thread. */
	while (!__atomic_load_n(&thread_done, __ATOMIC_ACQUIRE))
		baton_sched_sleep(200000);
}

/* Once the drivers are done: whatever is left is aborted and joined. */
static void sweeper(void *arg)
{
	(void)arg;
	for (int i = 0; i < NIDS; i++) {
		/* Relaxed: see forget. */
		baton_tid_t id = __atomic_exchange_n(&table[i], 0, __ATOMIC_RELAXED);
		int rc, status;
		void *res;

		if (id == 0)
			continue;
		baton_task_abort(id);
		rc = baton_task_join(id, TC_MS(10000), &status, &res);
		TC_CHECK(rc == BATON_OK || rc == BATON_EDEAD);
		check_join(rc, (uintptr_t)res, status);
	}
}

static void test_stress(void **state)
{
	const char *env = getenv("BATON_HANDLE_STRESS_OPS");
	/* TSan runs it about a hundred times slower. */
	long ops = env && atol(env) > 0 ? atol(env) : tc_scale(TC_TSAN ? 10000 : 50000, 5000);
	pthread_t th;
	int64_t t0;

	(void)state;
	tc_reset();
	tc_watchdog_phase(ops > 100000 ? 3000 : 120, "handle stress");
	ops_left = ops;
	S = tc_sched(2);
	assert_int_equal(baton_chan_create(&never, 0), BATON_OK);
	for (uintptr_t i = 0; i < NDRIVERS; i++) {
		struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

		ta.worker = (int)(i % 2);
		assert_int_equal(baton_sched_spawn(S, &ta, driver_task, (void *)i), BATON_OK);
	}
	thread_done = 0;
	assert_int_equal(baton_sched_spawn(S, NULL, keeper, NULL), BATON_OK);
	t0 = tc_now();
	assert_int_equal(pthread_create(&th, NULL, driver_thread, NULL), 0);
	assert_int_equal(baton_sched_run(S), BATON_OK);
	pthread_join(th, NULL);
	assert_int_equal(baton_sched_spawn(S, NULL, sweeper, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(S), BATON_OK);
	printf("handle stress: %ld ops in %.2f s (%ld joins, %ld aborts delivered)\n", ops,
	       (double)(tc_now() - t0) / 1e9, joined, aborted_ok);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(S), BATON_OK);
	assert_int_equal(baton_chan_destroy(never), BATON_OK);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
