/* SPDX-License-Identifier: MIT */
/*
 * Tasks you can hold (baton/sched.h): task ids, join, abort, detach,
 * status, and groups, in both coroutine models on one and two workers.
 * A join gets the body's status and result once; every call on an id
 * whose task is gone gets BATON_EDEAD (the ASan build checks that no
 * freed memory is read meanwhile); abort cancels a task that never took
 * its handle; a fail-fast group cancels the rest at its first failure
 * and reports it; closing a group cancels and waits; cancelling a task
 * cancels the groups it owns, down the tree; a plain thread joins and
 * waits for a group; a task's open groups close when it returns; destroy
 * ends the ids of the tasks it frees with BATON_ESHUTDOWN; a collecting
 * group hands its children's ends out one at a time (baton_group_next),
 * in the order they ended, to a task or a plain thread; a close of
 * hundreds of children from a task cancels and waits for every one.
 */
#include "check.h"

#include <stdbool.h>

#include <baton/chan.h>

static struct baton_task_attr T_ATTR; /* the model of the running test */
static baton_chan_t *never;           /* nobody sends: receivers block */

static int ret_arg(void *arg, void **result)
{
	*result = arg;
	return (int)(intptr_t)arg;
}

/* Blocks until cancelled; returns what its wait returned. */
static int block(void *arg, void **result)
{
	void *v;

	*result = arg;
	return baton_chan_recv(never, &v, -1);
}

static int yield_then_ret(void *arg, void **result)
{
	baton_sched_yield();
	return ret_arg(arg, result);
}

static baton_sched_t *S;

static void setup(void **state, const char *phase)
{
	struct tc_cfg *c = *state;

	tc_reset();
	tc_watchdog_phase(60, phase);
	T_ATTR = (struct baton_task_attr)BATON_TASK_ATTR_INIT;
	T_ATTR.coro = *c->attr;
	S = tc_sched(c->workers);
	assert_int_equal(baton_chan_create(&never, 0), BATON_OK);
}

static void finish(void)
{
	assert_int_equal(baton_sched_run(S), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(S), BATON_OK);
	assert_int_equal(baton_chan_destroy(never), BATON_OK);
	alarm(0);
}

/* --- join ------------------------------------------------------------------ */
#define K 64

static void joiner(void *arg)
{
	baton_tid_t ids[K];
	int status;
	void *res;

	(void)arg;
	TC_CHECK(baton_task_id() == BATON_TID_NONE); /* spawned without one */
	for (intptr_t i = 0; i < K; i++)
		TC_CHECK_RC(baton_task_spawn(S, &T_ATTR, i % 2 ? ret_arg : yield_then_ret,
					     (void *)(i + 1), &ids[i]),
			    BATON_OK);
	for (int i = 0; i < K; i++) {
		status = -1;
		res = NULL;
		TC_CHECK_RC(baton_task_join(ids[i], -1, &status, &res), BATON_OK);
		TC_CHECK(status == i + 1 && res == (void *)(intptr_t)(i + 1));
		/* Spent: every call on it now has the defined answer. */
		TC_CHECK_RC(baton_task_join(ids[i], -1, &status, &res), BATON_EDEAD);
		TC_CHECK_RC(baton_task_join(ids[i], 0, NULL, NULL), BATON_EDEAD);
		TC_CHECK_RC(baton_task_abort(ids[i]), BATON_EDEAD);
		TC_CHECK_RC(baton_task_status(ids[i]), BATON_EDEAD);
		TC_CHECK_RC(baton_task_detach(ids[i]), BATON_EDEAD);
	}
}

static void test_join(void **state)
{
	setup(state, "join");
	assert_int_equal(baton_sched_spawn(S, &T_ATTR, joiner, NULL), BATON_OK);
	finish();
}

/* --- the answers after the end -------------------------------------------- */
static int self_id_check(void *arg, void **result)
{
	baton_tid_t me = baton_task_id();

	(void)arg;
	(void)result;
	TC_CHECK(me != BATON_TID_NONE);
	TC_CHECK_RC(baton_task_status(me), BATON_TASK_RUNNING);
	TC_CHECK_RC(baton_task_join(me, -1, NULL, NULL), BATON_EDEADLK);
	return 7;
}

static void after_end(void *arg)
{
	baton_tid_t id, id2;
	int status = 0;

	(void)arg;
	TC_CHECK_RC(baton_task_spawn(S, &T_ATTR, self_id_check, NULL, &id), BATON_OK);
	TC_CHECK_RC(baton_task_status(id), BATON_TASK_RUNNING);
	TC_CHECK_RC(baton_task_join(id, 0, NULL, NULL), BATON_EAGAIN);
	while (baton_task_status(id) == BATON_TASK_RUNNING)
		baton_sched_yield();
	/* Ended, not joined: abort has nothing to do, the result waits. */
	TC_CHECK_RC(baton_task_status(id), BATON_TASK_ENDED);
	TC_CHECK_RC(baton_task_abort(id), BATON_OK);
	TC_CHECK_RC(baton_task_join(id, 0, &status, NULL), BATON_OK);
	TC_CHECK(status == 7);
	/* Its slot is reused now, under another generation: the old id
	 * still names nothing. */
	TC_CHECK_RC(baton_task_spawn(S, &T_ATTR, block, NULL, &id2), BATON_OK);
	TC_CHECK(id2 != id);
	TC_CHECK_RC(baton_task_abort(id), BATON_EDEAD);
	TC_CHECK_RC(baton_task_status(id), BATON_EDEAD);
	TC_CHECK_RC(baton_task_join(id, TC_MS(1), NULL, NULL), BATON_EDEAD);
	TC_CHECK_RC(baton_task_join(id2, TC_MS(1), NULL, NULL), BATON_ETIMEDOUT);
	/* Abort a task that never took its handle. */
	TC_CHECK_RC(baton_task_abort(id2), BATON_OK);
	TC_CHECK_RC(baton_task_abort(id2), BATON_OK);
	TC_CHECK_RC(baton_task_join(id2, -1, &status, NULL), BATON_OK);
	TC_CHECK(status == BATON_ECANCELED);
	/* Detach: running, then gone at its end. */
	TC_CHECK_RC(baton_task_spawn(S, &T_ATTR, yield_then_ret, (void *)1, &id), BATON_OK);
	TC_CHECK_RC(baton_task_detach(id), BATON_OK);
	TC_CHECK_RC(baton_task_join(id, -1, NULL, NULL), BATON_EDEAD);
	while (baton_task_status(id) == BATON_TASK_RUNNING)
		baton_sched_yield();
	TC_CHECK_RC(baton_task_status(id), BATON_EDEAD);
	TC_CHECK_RC(baton_task_abort(id), BATON_EDEAD);
	/* Nonsense ids. */
	TC_CHECK_RC(baton_task_status(BATON_TID_NONE), BATON_EDEAD);
	TC_CHECK_RC(baton_task_abort((baton_tid_t)1 << 32 | 0xfffffff0u), BATON_EDEAD);
	TC_CHECK_RC(baton_task_join(~(baton_tid_t)0, 0, NULL, NULL), BATON_EDEAD);
}

static void test_after_end(void **state)
{
	setup(state, "after end");
	assert_int_equal(baton_sched_spawn(S, &T_ATTR, after_end, NULL), BATON_OK);
	finish();
}

/* --- a plain thread joins and waits ------------------------------------ */
struct th {
	baton_tid_t id;
	baton_group_t *g;
	int join_rc, wait_rc, status;
	struct baton_task_end first;
};

static void *thread_joins(void *arg)
{
	struct th *th = arg;

	th->join_rc = baton_task_join(th->id, TC_MS(30000), &th->status, NULL);
	th->wait_rc = baton_group_wait(th->g, TC_MS(30000), &th->first);
	return NULL;
}

static int sleep_then_fail(void *arg, void **result)
{
	(void)result;
	baton_sched_sleep(TC_MS(20));
	return (int)(intptr_t)arg;
}

static void test_thread_join(void **state)
{
	struct th th = { 0 };
	pthread_t p;
	baton_tid_t gid;

	setup(state, "thread join");
	assert_int_equal(baton_task_spawn(S, &T_ATTR, sleep_then_fail, (void *)5, &th.id),
			 BATON_OK);
	assert_int_equal(baton_task_join(th.id, 0, NULL, NULL), BATON_EAGAIN);
	assert_int_equal(baton_group_create(&th.g, S, 0), BATON_OK);
	assert_int_equal(baton_group_spawn(th.g, &T_ATTR, sleep_then_fail, (void *)9, &gid),
			 BATON_OK);
	assert_int_equal(baton_group_spawn(th.g, &T_ATTR, ret_arg, (void *)0, NULL), BATON_OK);
	assert_int_equal(baton_group_wait(th.g, 0, NULL), BATON_EAGAIN);
	assert_int_equal(pthread_create(&p, NULL, thread_joins, &th), 0);
	assert_int_equal(baton_sched_run(S), BATON_OK);
	pthread_join(p, NULL);
	assert_int_equal(th.join_rc, BATON_OK);
	assert_int_equal(th.status, 5);
	assert_int_equal(th.wait_rc, BATON_OK);
	assert_true(th.first.tid == gid);
	assert_int_equal(th.first.status, 9);
	assert_int_equal(baton_task_join(gid, 0, NULL, NULL), BATON_OK);
	assert_int_equal(baton_group_close(th.g, NULL), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(S), BATON_OK);
	assert_int_equal(baton_chan_destroy(never), BATON_OK);
	alarm(0);
}

/* --- groups --------------------------------------------------------------- */
#define NG 16

static void fail_fast(void *arg)
{
	baton_group_t *g;
	baton_tid_t bad;
	struct baton_task_end first;

	(void)arg;
	TC_CHECK_RC(baton_group_create(&g, S, BATON_GROUP_FAIL_FAST), BATON_OK);
	for (int i = 0; i < NG; i++)
		TC_CHECK_RC(baton_group_spawn(g, &T_ATTR, block, NULL, NULL), BATON_OK);
	TC_CHECK_RC(baton_group_spawn(g, &T_ATTR, sleep_then_fail, (void *)42, &bad), BATON_OK);
	TC_CHECK_RC(baton_group_wait(g, TC_MS(30000), &first), BATON_OK);
	TC_CHECK(first.tid == bad && first.status == 42);
	/* Cancelled by the failure: nothing more is spawned. */
	TC_CHECK_RC(baton_group_spawn(g, &T_ATTR, block, NULL, NULL), BATON_ECANCELED);
	TC_CHECK_RC(baton_task_join(bad, 0, NULL, NULL), BATON_OK);
	TC_CHECK_RC(baton_group_close(g, &first), BATON_OK);
	TC_CHECK(first.status == 42);
}

static void test_group_fail_fast(void **state)
{
	setup(state, "group fail fast");
	assert_int_equal(baton_sched_spawn(S, &T_ATTR, fail_fast, NULL), BATON_OK);
	finish();
}

static void collect_all(void *arg)
{
	baton_group_t *g;
	baton_tid_t ids[NG];
	struct baton_task_end first;

	(void)arg;
	TC_CHECK_RC(baton_group_create(&g, S, 0), BATON_OK);
	for (intptr_t i = 0; i < NG; i++)
		TC_CHECK_RC(baton_group_spawn(g, &T_ATTR, i % 3 ? ret_arg : yield_then_ret,
					      (void *)i, &ids[i]),
			    BATON_OK);
	for (intptr_t i = 0; i < NG; i++) {
		int status = -1;
		void *res = NULL;

		TC_CHECK_RC(baton_task_join(ids[i], -1, &status, &res), BATON_OK);
		TC_CHECK(status == i && res == (void *)i);
	}
	TC_CHECK_RC(baton_group_wait(g, 0, &first), BATON_OK);
	TC_CHECK(first.tid != BATON_TID_NONE && first.status != 0); /* 1..NG-1 fail */
	TC_CHECK_RC(baton_group_close(g, NULL), BATON_OK);
}

static void test_group_collect(void **state)
{
	setup(state, "group collect");
	assert_int_equal(baton_sched_spawn(S, &T_ATTR, collect_all, NULL), BATON_OK);
	finish();
}

/* --- next: a collecting group's ends, one at a time ------------------------ */
static int yield_n(void *arg, void **result)
{
	for (intptr_t i = 0; i < (intptr_t)arg; i++)
		baton_sched_yield();
	*result = arg;
	return (int)(intptr_t)arg;
}

static void collect_next(void *arg)
{
	baton_group_t *g;
	baton_tid_t ids[NG + 1] = { 0 }, joined, dropped, b, k;
	struct baton_task_end e;
	bool seen[NG + 1] = { false };
	int n = 0, last = 0, status = 0;
	bool one_worker = (intptr_t)arg == 1;

	TC_CHECK_RC(baton_group_create(&g, S, BATON_GROUP_COLLECT), BATON_OK);
	TC_CHECK_RC(baton_group_next(g, 0, &e), BATON_EDONE); /* nothing spawned */
	/* Child i yields i times: on one worker they end in that order.
	 * Even ones give their id, odd ones do not. */
	for (intptr_t i = NG; i >= 1; i--)
		TC_CHECK_RC(
			baton_group_spawn(g, &T_ATTR, yield_n, (void *)i, i % 2 ? NULL : &ids[i]),
			BATON_OK);
	/* One joined and one detached before next sees them: never its. */
	TC_CHECK_RC(baton_group_spawn(g, &T_ATTR, ret_arg, (void *)100, &joined), BATON_OK);
	TC_CHECK_RC(baton_group_spawn(g, &T_ATTR, yield_n, (void *)200, &dropped), BATON_OK);
	TC_CHECK_RC(baton_task_detach(dropped), BATON_OK);
	TC_CHECK_RC(baton_task_join(joined, -1, &status, NULL), BATON_OK);
	TC_CHECK(status == 100);
	while (baton_group_next(g, -1, &e) == BATON_OK) {
		int i = e.status;

		TC_CHECK(i >= 1 && i <= NG && !seen[i] && e.result == (void *)(intptr_t)i);
		if (i < 1 || i > NG)
			break;
		seen[i] = true;
		TC_CHECK(i % 2 ? e.tid != BATON_TID_NONE : e.tid == ids[i]);
		if (one_worker)
			TC_CHECK(i > last);
		last = i;
		n++;
		/* Taken: the id is stale, as after a join. */
		TC_CHECK_RC(baton_task_join(e.tid, 0, NULL, NULL), BATON_EDEAD);
	}
	TC_CHECK(n == NG);
	TC_CHECK_RC(baton_group_next(g, 0, &e), BATON_EDONE);
	/* A child that blocks: a try, a timeout, then its end once aborted. */
	TC_CHECK_RC(baton_group_spawn(g, &T_ATTR, block, NULL, &b), BATON_OK);
	TC_CHECK_RC(baton_group_next(g, 0, &e), BATON_EAGAIN);
	TC_CHECK_RC(baton_group_next(g, TC_MS(2), &e), BATON_ETIMEDOUT);
	TC_CHECK_RC(baton_task_abort(b), BATON_OK);
	TC_CHECK_RC(baton_group_next(g, -1, &e), BATON_OK);
	TC_CHECK(e.tid == b && e.status == BATON_ECANCELED);
	/* An end nobody took is dropped by the close: its id goes stale. */
	TC_CHECK_RC(baton_group_spawn(g, &T_ATTR, ret_arg, (void *)3, &k), BATON_OK);
	while (baton_task_status(k) == BATON_TASK_RUNNING)
		baton_sched_yield();
	TC_CHECK_RC(baton_group_close(g, NULL), BATON_OK);
	TC_CHECK_RC(baton_task_join(k, 0, NULL, NULL), BATON_EDEAD);
}

static void test_group_next(void **state)
{
	struct tc_cfg *c = *state;

	setup(state, "group next");
	assert_int_equal(baton_sched_spawn(S, &T_ATTR, collect_next, (void *)(intptr_t)c->workers),
			 BATON_OK);
	finish();
}

/* A plain thread takes the ends as they come. */
struct next_th {
	baton_group_t *g;
	int rc[4], status[4];
};

static void *thread_next(void *arg)
{
	struct next_th *th = arg;
	struct baton_task_end e = { 0 };

	for (int i = 0; i < 4; i++) {
		th->rc[i] = baton_group_next(th->g, TC_MS(30000), &e);
		th->status[i] = e.status;
	}
	return NULL;
}

static void test_group_next_thread(void **state)
{
	struct next_th th = { 0 };
	pthread_t p;

	setup(state, "group next thread");
	assert_int_equal(baton_group_create(&th.g, S, BATON_GROUP_COLLECT), BATON_OK);
	for (int i = 0; i < 3; i++)
		assert_int_equal(baton_group_spawn(th.g, &T_ATTR, sleep_then_fail, (void *)7, NULL),
				 BATON_OK);
	assert_int_equal(pthread_create(&p, NULL, thread_next, &th), 0);
	assert_int_equal(baton_sched_run(S), BATON_OK);
	pthread_join(p, NULL);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(th.rc[i], BATON_OK);
		assert_int_equal(th.status[i], 7);
	}
	assert_int_equal(th.rc[3], BATON_EDONE);
	assert_int_equal(baton_group_close(th.g, NULL), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(S), BATON_OK);
	assert_int_equal(baton_chan_destroy(never), BATON_OK);
	alarm(0);
}

/* A child that opens a group of blocked grandchildren and blocks itself;
 * when cancelled it closes its group (which waits for them). */
static long grand_ended; /* (atomic) */

static int grandchild(void *arg, void **result)
{
	int rc = block(arg, result);

	TC_CHECK(rc == BATON_ECANCELED);
	/* Relaxed: a count read after the close that waited for us. */
	__atomic_add_fetch(&grand_ended, 1, __ATOMIC_RELAXED);
	return rc;
}

static int child_with_group(void *arg, void **result)
{
	baton_group_t *g;
	int rc;

	(void)result;
	TC_CHECK_RC(baton_group_create(&g, S, 0), BATON_OK);
	for (int i = 0; i < 4; i++)
		TC_CHECK_RC(baton_group_spawn(g, &T_ATTR, grandchild, NULL, NULL), BATON_OK);
	rc = block(arg, result);
	TC_CHECK(rc == BATON_ECANCELED);
	if ((intptr_t)arg == 1)
		TC_CHECK_RC(baton_group_close(g, NULL), BATON_OK);
	/* else: left open, closed at our return */
	return rc;
}

static void nested(void *arg)
{
	baton_group_t *g;
	baton_tid_t id;
	int status = 0;

	(void)arg;
	grand_ended = 0;
	TC_CHECK_RC(baton_group_create(&g, S, 0), BATON_OK);
	for (intptr_t i = 0; i < 4; i++)
		TC_CHECK_RC(baton_group_spawn(g, &T_ATTR, child_with_group, (void *)(i % 2), NULL),
			    BATON_OK);
	baton_sched_sleep(TC_MS(5));
	TC_CHECK_RC(baton_group_close(g, NULL), BATON_OK);
	TC_CHECK(__atomic_load_n(&grand_ended, __ATOMIC_RELAXED) == 16);
	/* Cancelling a task by its id cancels the groups it owns. */
	grand_ended = 0;
	TC_CHECK_RC(baton_task_spawn(S, &T_ATTR, child_with_group, (void *)1, &id), BATON_OK);
	baton_sched_sleep(TC_MS(5));
	TC_CHECK_RC(baton_task_abort(id), BATON_OK);
	TC_CHECK_RC(baton_task_join(id, -1, &status, NULL), BATON_OK);
	TC_CHECK(status == BATON_ECANCELED);
	TC_CHECK(__atomic_load_n(&grand_ended, __ATOMIC_RELAXED) == 4);
}

static void test_group_nested(void **state)
{
	setup(state, "group nested");
	assert_int_equal(baton_sched_spawn(S, &T_ATTR, nested, NULL), BATON_OK);
	finish();
}

/* A close of many children from a task: every child is cancelled, some
 * end only a few yields after their cancel, and the close returns once
 * the last has ended. */
#define CM_N 300
static long cm_ended; /* (atomic) */

static int cm_child(void *arg, void **result)
{
	int rc = block(arg, result);

	TC_CHECK(rc == BATON_ECANCELED);
	for (intptr_t i = 0; i < (intptr_t)arg % 4; i++)
		baton_sched_yield(); /* ends after the batches behind it began */
	/* Relaxed: a count read after the close that waited for us. */
	__atomic_add_fetch(&cm_ended, 1, __ATOMIC_RELAXED);
	return rc;
}

static void close_many(void *arg)
{
	struct baton_task_end first;
	baton_group_t *g;

	(void)arg;
	cm_ended = 0;
	TC_CHECK_RC(baton_group_create(&g, S, 0), BATON_OK);
	for (intptr_t i = 0; i < CM_N; i++)
		TC_CHECK_RC(baton_group_spawn(g, &T_ATTR, cm_child, (void *)i, NULL), BATON_OK);
	baton_sched_sleep(TC_MS(5)); /* all block */
	TC_CHECK_RC(baton_group_close(g, &first), BATON_OK);
	TC_CHECK(__atomic_load_n(&cm_ended, __ATOMIC_RELAXED) == CM_N);
	TC_CHECK(first.tid != BATON_TID_NONE && first.status == BATON_ECANCELED);
}

static void test_group_close_many(void **state)
{
	setup(state, "group close of many");
	assert_int_equal(baton_sched_spawn(S, &T_ATTR, close_many, NULL), BATON_OK);
	finish();
}

/* baton_task_cancel on a task that took its handle cancels its groups. */
static baton_task_t *owner_handle; /* (atomic) */

static void owner_task(void *arg)
{
	baton_group_t *g;
	void *v;

	(void)arg;
	TC_CHECK_RC(baton_group_create(&g, S, 0), BATON_OK);
	for (int i = 0; i < 4; i++)
		TC_CHECK_RC(baton_group_spawn(g, &T_ATTR, grandchild, NULL, NULL), BATON_OK);
	/* Release: the handle to the canceller's acquire. */
	__atomic_store_n(&owner_handle, baton_task_handle(), __ATOMIC_RELEASE);
	TC_CHECK_RC(baton_chan_recv(never, &v, -1), BATON_ECANCELED);
	/* The group is closed at our return. */
}

static void canceller(void *arg)
{
	baton_task_t *h;

	(void)arg;
	/* Acquire: see owner_task. */
	while ((h = __atomic_load_n(&owner_handle, __ATOMIC_ACQUIRE)) == NULL)
		baton_sched_yield();
	TC_CHECK_RC(baton_task_cancel(h), BATON_OK);
}

static void test_cancel_owner(void **state)
{
	setup(state, "cancel owner");
	grand_ended = 0;
	owner_handle = NULL;
	assert_int_equal(baton_sched_spawn(S, &T_ATTR, owner_task, NULL), BATON_OK);
	assert_int_equal(baton_sched_spawn(S, &T_ATTR, canceller, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(S), BATON_OK);
	assert_int_equal(__atomic_load_n(&grand_ended, __ATOMIC_RELAXED), 4);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(S), BATON_OK);
	assert_int_equal(baton_chan_destroy(never), BATON_OK);
	alarm(0);
}

/* --- destroy ends the ids of the tasks it frees ------------------------ */
static void stopper(void *arg)
{
	(void)arg;
	baton_sched_sleep(TC_MS(5));
	baton_sched_stop(S);
}

static void test_destroy(void **state)
{
	baton_tid_t a, b;
	int status = 0;

	setup(state, "destroy");
	assert_int_equal(baton_task_spawn(S, &T_ATTR, block, NULL, &a), BATON_OK);
	assert_int_equal(baton_sched_spawn(S, &T_ATTR, stopper, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(S), BATON_OK);
	assert_int_equal(baton_task_spawn(S, &T_ATTR, block, NULL, &b), BATON_OK); /* never runs */
	assert_int_equal(baton_sched_destroy(S), BATON_OK);
	assert_int_equal(baton_task_join(a, 0, &status, NULL), BATON_OK);
	assert_int_equal(status, BATON_ESHUTDOWN);
	assert_int_equal(baton_task_join(b, 0, &status, NULL), BATON_OK);
	assert_int_equal(status, BATON_ESHUTDOWN);
	assert_int_equal(baton_task_join(b, 0, &status, NULL), BATON_EDEAD);
	assert_int_equal(baton_chan_destroy(never), BATON_OK);
	alarm(0);
}

static void test_errors(void **state)
{
	baton_group_t *g;
	baton_tid_t id;

	(void)state;
	assert_int_equal(baton_task_spawn(NULL, NULL, ret_arg, NULL, &id), BATON_EINVAL);
	assert_int_equal(baton_group_create(NULL, NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_group_create(&g, NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_group_spawn(NULL, NULL, ret_arg, NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_group_wait(NULL, 0, NULL), BATON_EINVAL);
	assert_int_equal(baton_group_cancel(NULL), BATON_EINVAL);
	assert_int_equal(baton_group_close(NULL, NULL), BATON_OK);
	assert_int_equal(baton_group_next(NULL, 0, NULL), BATON_EINVAL);
	baton_sched_t *s = tc_sched(1);
	struct baton_task_end e;

	assert_int_equal(baton_group_create(&g, s, 0), BATON_OK);
	assert_int_equal(baton_group_next(g, 0, &e), BATON_EINVAL); /* does not collect */
	assert_int_equal(baton_group_close(g, NULL), BATON_OK);
	assert_int_equal(baton_group_create(&g, s, BATON_GROUP_COLLECT), BATON_OK);
	assert_int_equal(baton_group_next(g, 0, NULL), BATON_EINVAL);
	assert_int_equal(baton_group_close(g, NULL), BATON_OK);
	assert_int_equal(baton_group_create(&g, s, 4), BATON_EINVAL);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	assert_true(baton_task_id() == BATON_TID_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errors),      TC_CFG_TESTS(test_join),
		TC_CFG_TESTS(test_after_end),       TC_CFG_TESTS(test_thread_join),
		TC_CFG_TESTS(test_group_fail_fast), TC_CFG_TESTS(test_group_collect),
		TC_CFG_TESTS(test_group_next),      TC_CFG_TESTS(test_group_next_thread),
		TC_CFG_TESTS(test_group_nested),    TC_CFG_TESTS(test_cancel_owner),
		TC_CFG_TESTS(test_destroy),         TC_CFG_TESTS(test_group_close_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
