/* SPDX-License-Identifier: MIT */
/* The scheduler (include/baton/sched.h): life cycle, argument checks, spawns
 * from tasks and from other threads, run/stop/run again, yield order, the
 * in-task calls and their ENOSCHED outside tasks, sleep, the timer heap's
 * order, many tasks, and balancing between two workers (the steal path,
 * with the rule that a copy-stack task never moves once it has run). Each
 * behaviour runs in both coroutine models, with 1 and 2 workers where the
 * number matters. */
#include "check.h"

/* --- create / destroy / argument checks ---------------------------------- */

static void test_create_destroy(void **state)
{
	struct baton_sched_attr a = BATON_SCHED_ATTR_INIT;
	baton_sched_t *s = NULL;

	(void)state;
	tc_watchdog_phase(20, "create_destroy");
	assert_int_equal(baton_sched_create(&s, NULL), BATON_OK);
	assert_int_equal(baton_sched_workers(s), 1);
	assert_int_equal(baton_sched_run(s), BATON_OK); /* no tasks: returns */
	assert_int_equal(baton_sched_destroy(s), BATON_OK);

	a.workers = 0; /* one per CPU */
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
	assert_true(baton_sched_workers(s) >= 1);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);

	a.workers = 2; /* destroy without ever running: no threads to join */
	assert_int_equal(baton_sched_create(&s, &a), BATON_OK);
	assert_int_equal(baton_sched_workers(s), 2);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);

	a.workers = BATON_SCHED_MAX_WORKERS + 1;
	assert_int_equal(baton_sched_create(&s, &a), BATON_EINVAL);
	assert_int_equal(baton_sched_create(NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_sched_destroy(NULL), BATON_OK);
	assert_int_equal(baton_sched_workers(NULL), BATON_EINVAL);
	assert_int_equal(baton_sched_run(NULL), BATON_EINVAL);
	assert_int_equal(baton_sched_stop(NULL), BATON_EINVAL);
}

static void nop(void *arg)
{
	(void)arg;
}

static void test_spawn_validation(void **state)
{
	baton_sched_t *s = tc_sched(2);
	struct baton_task_attr a = tc_tattr(state, 2);

	tc_watchdog_phase(20, "spawn_validation");
	assert_int_equal(baton_sched_spawn(NULL, NULL, nop, NULL), BATON_EINVAL);
	assert_int_equal(baton_sched_spawn(s, NULL, NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_sched_spawn(s, &a, nop, NULL), BATON_EINVAL);
	a.worker = -2;
	assert_int_equal(baton_sched_spawn(s, &a, nop, NULL), BATON_EINVAL);
	a.worker = 1000;
	assert_int_equal(baton_sched_spawn(s, &a, nop, NULL), BATON_EINVAL);
	a.worker = BATON_SCHED_ANY_WORKER;
	a.coro.model = 7;
	assert_int_equal(baton_sched_spawn(s, &a, nop, NULL), BATON_EINVAL);
	a = tc_tattr(state, 1); /* the last worker is a valid index */
	assert_int_equal(baton_sched_spawn(s, &a, nop, NULL), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, NULL, nop, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* --- run until all finished; spawns from tasks ---------------------------- */

struct tree {
	void **state;
	long count; /* tasks that ran (atomic) */
};

struct node {
	struct tree *tree;
	int depth;
};

static struct node nodes[1 << 12];
static long node_next;

static void tree_task(void *arg)
{
	struct node *n = arg;
	struct tree *t = n->tree;

	__atomic_add_fetch(&t->count, 1, __ATOMIC_RELAXED);
	TC_CHECK(baton_sched_self() != NULL);
	baton_sched_yield();
	if (n->depth == 0)
		return;
	for (int i = 0; i < 3; i++) {
		long k = __atomic_fetch_add(&node_next, 1, __ATOMIC_RELAXED);
		struct baton_task_attr a = tc_tattr(t->state, BATON_SCHED_ANY_WORKER);

		nodes[k].tree = t;
		nodes[k].depth = n->depth - 1;
		TC_CHECK_RC(baton_sched_spawn(baton_sched_self(), &a, tree_task, &nodes[k]),
			    BATON_OK);
		if (i == 1)
			baton_sched_yield();
	}
}

/* A ternary tree of depth 6 spawned from inside tasks: 1093 tasks. run
 * returns only when the last leaf has finished. */
static void check_spawn_tree(void **state, unsigned workers)
{
	baton_sched_t *s = tc_sched(workers);
	struct tree t = { state, 0 };
	int depth = TC_TSAN ? 4 : 6; /* TSan: each fiber costs milliseconds */
	long total = 1;

	for (int d = 0; d < depth; d++)
		total = total * 3 + 1; /* 1 + 3 + 9 + ... */

	tc_reset();
	tc_watchdog_phase(30, "spawn_tree");
	node_next = 1;
	nodes[0].tree = &t;
	nodes[0].depth = depth;
	tc_spawn(s, state, BATON_SCHED_ANY_WORKER, tree_task, &nodes[0]);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(t.count, total);
	assert_int_equal(node_next, total);
	/* Run again with new spawns. */
	t.count = 0;
	node_next = 1;
	tc_spawn(s, state, BATON_SCHED_ANY_WORKER, tree_task, &nodes[0]);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(t.count, total);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_spawn_tree_1(void **state)
{
	check_spawn_tree(state, 1);
}
static void test_spawn_tree_2(void **state)
{
	check_spawn_tree(state, 2);
}

/* --- in-task calls and their errors -------------------------------------- */

struct selfcheck {
	baton_sched_t *s;
	unsigned workers;
	int ran;
};

static void self_task(void *arg)
{
	struct selfcheck *c = arg;
	int w = baton_sched_worker_index();

	TC_CHECK(baton_sched_self() == c->s);
	TC_CHECK(w >= 0 && (unsigned)w < c->workers);
	TC_CHECK_RC(baton_sched_run(c->s), BATON_EBUSY);
	TC_CHECK_RC(baton_sched_destroy(c->s), BATON_EBUSY);
	TC_CHECK_RC(baton_sched_sleep(-1), BATON_EINVAL);
	TC_CHECK_RC(baton_sched_sleep(0), BATON_OK);
	TC_CHECK_RC(baton_sched_yield(), BATON_OK);
	TC_CHECK_RC(baton_sched_sleep(1000), BATON_OK);
	TC_CHECK(baton_sched_self() == c->s);
	__atomic_add_fetch(&c->ran, 1, __ATOMIC_RELAXED);
}

static void check_self(void **state, unsigned workers)
{
	struct selfcheck c = { tc_sched(workers), workers, 0 };

	tc_reset();
	tc_watchdog_phase(20, "self");
	for (int i = 0; i < 8; i++)
		tc_spawn(c.s, state, BATON_SCHED_ANY_WORKER, self_task, &c);
	assert_int_equal(baton_sched_run(c.s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(c.ran, 8);
	/* Outside any task. */
	assert_null(baton_sched_self());
	assert_int_equal(baton_sched_worker_index(), -1);
	assert_int_equal(baton_sched_yield(), BATON_ENOSCHED);
	assert_int_equal(baton_sched_sleep(1000), BATON_ENOSCHED);
	assert_int_equal(baton_sched_destroy(c.s), BATON_OK);
}

static void test_self_1(void **state)
{
	check_self(state, 1);
}
static void test_self_2(void **state)
{
	check_self(state, 2);
}

/* A plain coroutine that is not a task gets ENOSCHED too. */
static void *plain_coro(void *arg, void *in)
{
	int *rc = arg;

	(void)in;
	rc[0] = baton_sched_yield();
	rc[1] = baton_sched_sleep(1000);
	return NULL;
}

static void test_enosched_in_plain_coro(void **state)
{
	baton_coro_t *co;
	int rc[2] = { 99, 99 };

	assert_int_equal(baton_coro_create(&co, TC_ATTR(state), plain_coro, rc), BATON_OK);
	assert_int_equal(baton_coro_resume(co, NULL, NULL), BATON_OK);
	assert_int_equal(rc[0], BATON_ENOSCHED);
	assert_int_equal(rc[1], BATON_ENOSCHED);
	baton_coro_destroy(co);
}

/* --- yield order ----------------------------------------------------------- */

#define RR_TASKS 5
#define RR_ROUNDS 40

static int rr_log[RR_TASKS * RR_ROUNDS];
static int rr_len;

static void rr_task(void *arg)
{
	for (int i = 0; i < RR_ROUNDS; i++) {
		rr_log[rr_len++] = (int)(intptr_t)arg;
		baton_sched_yield();
	}
}

/* One worker: tasks take turns in spawn order, round after round (the run
 * queue is FIFO, a yield goes to its back). */
static void test_yield_round_robin(void **state)
{
	baton_sched_t *s = tc_sched(1);

	tc_watchdog_phase(20, "yield_round_robin");
	rr_len = 0;
	for (intptr_t i = 0; i < RR_TASKS; i++)
		tc_spawn(s, state, BATON_SCHED_ANY_WORKER, rr_task, (void *)i);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(rr_len, RR_TASKS * RR_ROUNDS);
	for (int i = 0; i < rr_len; i++)
		if (rr_log[i] != i % RR_TASKS)
			fail_msg("dispatch %d ran task %d, round robin wants %d", i, rr_log[i],
				 i % RR_TASKS);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* --- stop, run again ----------------------------------------------------- */

struct stopper {
	long steps;  /* yields done by all tasks (atomic) */
	long done;   /* tasks finished (atomic) */
	int worker0; /* copy-stack: the worker each ran on first */
	int moved;   /* a copy-stack task changed worker (atomic) */
	int model;
};

static struct stopper stp;

static void stop_task(void *arg)
{
	int first = baton_sched_worker_index();

	for (int i = 0; i < 200; i++) {
		if (__atomic_add_fetch(&stp.steps, 1, __ATOMIC_RELAXED) >= 150 && arg) {
			TC_CHECK_RC(baton_sched_stop(baton_sched_self()), BATON_OK);
			arg = NULL;
		}
		if (i % 50 == 7)
			baton_sched_sleep(100000);
		else
			baton_sched_yield();
		if (stp.model == BATON_CORO_COPYSTACK && baton_sched_worker_index() != first)
			__atomic_store_n(&stp.moved, 1, __ATOMIC_RELAXED);
	}
	__atomic_add_fetch(&stp.done, 1, __ATOMIC_RELAXED);
}

/* A task stops the scheduler: run returns with tasks unfinished, and runs
 * after that continue them (copy-stack ones on the worker they started on)
 * until all have finished. */
static void check_stop_continue(void **state, unsigned workers)
{
	baton_sched_t *s = tc_sched(workers);
	int runs = 0;

	tc_reset();
	tc_watchdog_phase(30, "stop_continue");
	memset(&stp, 0, sizeof(stp));
	stp.model = TC_ATTR(state)->model;
	for (intptr_t i = 0; i < 8; i++)
		tc_spawn(s, state, BATON_SCHED_ANY_WORKER, stop_task, (void *)(intptr_t)(i == 3));
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_true(stp.steps >= 150);
	assert_true(stp.done < 8);
	while (stp.done < 8 && runs++ < 100)
		assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(stp.done, 8);
	assert_int_equal(stp.steps, 8 * 200);
	assert_int_equal(stp.moved, 0);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_stop_continue_1(void **state)
{
	check_stop_continue(state, 1);
}
static void test_stop_continue_2(void **state)
{
	check_stop_continue(state, 2);
}

/* baton_sched_stop from another thread; destroy frees the tasks that were
 * still runnable (ASan/valgrind would report a leak otherwise). */
static long spin_count;

static void spin_task(void *arg)
{
	(void)arg;
	for (;;) {
		__atomic_add_fetch(&spin_count, 1, __ATOMIC_RELAXED);
		baton_sched_yield();
	}
}

static void *stop_later(void *arg)
{
	while (__atomic_load_n(&spin_count, __ATOMIC_RELAXED) < 1000)
		sched_yield();
	baton_sched_stop(arg);
	return NULL;
}

static void check_stop_from_thread(void **state, unsigned workers)
{
	baton_sched_t *s = tc_sched(workers);
	pthread_t th;

	tc_watchdog_phase(30, "stop_from_thread");
	spin_count = 0;
	for (int i = 0; i < 4; i++)
		tc_spawn(s, state, BATON_SCHED_ANY_WORKER, spin_task, NULL);
	assert_int_equal(pthread_create(&th, NULL, stop_later, s), 0);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	pthread_join(th, NULL);
	assert_true(spin_count >= 1000);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_stop_from_thread_1(void **state)
{
	check_stop_from_thread(state, 1);
}
static void test_stop_from_thread_2(void **state)
{
	check_stop_from_thread(state, 2);
}

/* --- spawn from another thread while running ------------------------------ */

struct ext {
	void **state;
	baton_sched_t *s;
	baton_chan_t *ch;
	long sum;
	int n;
	int started; /* the keeper runs (atomic) */
};

static void ext_child(void *arg)
{
	struct ext *e = baton_sched_self() ? arg : NULL;

	TC_CHECK(e != NULL);
	baton_sched_yield();
	TC_CHECK_RC(baton_chan_send(e->ch, (void *)(intptr_t)1, TC_MS(5000)), BATON_OK);
}

static void ext_keeper(void *arg)
{
	struct ext *e = arg;
	void *v;

	__atomic_store_n(&e->started, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < e->n; i++) {
		int rc = baton_chan_recv(e->ch, &v, TC_MS(5000));

		if (rc != BATON_OK) {
			TC_FAIL("keeper: message from a thread-spawned task lost");
			return;
		}
		e->sum += (intptr_t)v;
	}
}

static void *ext_spawner(void *arg)
{
	struct ext *e = arg;
	struct baton_task_attr a = tc_tattr(e->state, BATON_SCHED_ANY_WORKER);

	while (!__atomic_load_n(&e->started, __ATOMIC_ACQUIRE))
		usleep(100);
	/* It is running (the keeper waits for our children): a second run
	 * and a destroy from here are refused. */
	TC_CHECK_RC(baton_sched_run(e->s), BATON_EBUSY);
	TC_CHECK_RC(baton_sched_destroy(e->s), BATON_EBUSY);
	for (int i = 0; i < e->n; i++) {
		if (i % 10 == 0)
			usleep(100);
		TC_CHECK_RC(baton_sched_spawn(e->s, &a, ext_child, e), BATON_OK);
	}
	return NULL;
}

static void check_spawn_from_thread(void **state, unsigned workers)
{
	struct ext e = { state, tc_sched(workers), NULL, 0, 200, 0 };
	pthread_t th;

	tc_reset();
	tc_watchdog_phase(30, "spawn_from_thread");
	assert_int_equal(baton_chan_create(&e.ch, 0), BATON_OK);
	tc_spawn(e.s, state, BATON_SCHED_ANY_WORKER, ext_keeper, &e);
	assert_int_equal(pthread_create(&th, NULL, ext_spawner, &e), 0);
	assert_int_equal(baton_sched_run(e.s), BATON_OK);
	pthread_join(th, NULL);
	TC_VERDICT();
	assert_int_equal(e.sum, e.n);
	assert_int_equal(baton_chan_destroy(e.ch), BATON_OK);
	assert_int_equal(baton_sched_destroy(e.s), BATON_OK);
}

static void test_spawn_from_thread_1(void **state)
{
	check_spawn_from_thread(state, 1);
}
static void test_spawn_from_thread_2(void **state)
{
	check_spawn_from_thread(state, 2);
}

/* --- many tasks ------------------------------------------------------------ */

static long many_done;

static void many_task(void *arg)
{
	(void)arg;
	baton_sched_yield();
	__atomic_add_fetch(&many_done, 1, __ATOMIC_RELAXED);
}

static void check_many(void **state, unsigned workers)
{
	baton_sched_t *s = tc_sched(workers);
	long n = TC_TSAN ? 1000 : tc_scale(10000, 1000);

	tc_watchdog_phase(60, "many_tasks");
	many_done = 0;
	for (long i = 0; i < n; i++)
		tc_spawn(s, state, BATON_SCHED_ANY_WORKER, many_task, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(many_done, n);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_many_1(void **state)
{
	check_many(state, 1);
}
static void test_many_2(void **state)
{
	check_many(state, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_destroy),
		TC_MODEL_TESTS(test_spawn_validation),
		TC_MODEL_TESTS(test_spawn_tree_1),
		TC_MODEL_TESTS(test_spawn_tree_2),
		TC_MODEL_TESTS(test_self_1),
		TC_MODEL_TESTS(test_self_2),
		TC_MODEL_TESTS(test_enosched_in_plain_coro),
		TC_MODEL_TESTS(test_yield_round_robin),
		TC_MODEL_TESTS(test_stop_continue_1),
		TC_MODEL_TESTS(test_stop_continue_2),
		TC_MODEL_TESTS(test_stop_from_thread_1),
		TC_MODEL_TESTS(test_stop_from_thread_2),
		TC_MODEL_TESTS(test_spawn_from_thread_1),
		TC_MODEL_TESTS(test_spawn_from_thread_2),
		TC_MODEL_TESTS(test_many_1),
		TC_MODEL_TESTS(test_many_2),
	};

	return cmocka_run_group_tests_name("sched", tests, NULL, NULL);
}
