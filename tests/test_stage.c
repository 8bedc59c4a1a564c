/* Stages and resource pools (include/baton/stage.h), each test run in both
 * coroutine models on one and on two workers: a two-stage pipeline with
 * exact accounting, the concurrency limit, a pool shared by two stages,
 * resources held exactly around the handler (and KEEP), limits changed at
 * run time, backpressure, close and drain, snapshot arithmetic under
 * contention, and the JSON text of a deterministic case.
 *
 * Checks made inside tasks cannot use cmocka's asserts (they longjmp out of
 * the coroutine): CHECK counts failures and prints them; the test asserts
 * the count is zero once the scheduler has returned. */
#include "harness.h"

#include <stdio.h>

#include <baton/sched.h>
#include <baton/stage.h>

static int failures;

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			/* Relaxed: only counted, read after the run. */   \
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n",       \
				__FILE__, __LINE__, #cond);                \
		}                                                          \
	} while (0)

#define CHECK_RC(call, want)                                               \
	do {                                                               \
		int rc_ = (call);                                          \
		if (rc_ != (want)) {                                       \
			/* Relaxed: only counted, read after the run. */   \
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); \
			fprintf(stderr, "%s:%d: %s returned %d (%s), "     \
				"want %s\n", __FILE__, __LINE__, #call, rc_, \
				baton_strerror(rc_), #want);               \
		}                                                          \
	} while (0)

struct cfg {
	const struct baton_coro_attr *attr;
	unsigned workers;
};

static struct cfg cfg_sf1 = { &harness_stackful, 1 };
static struct cfg cfg_sf2 = { &harness_stackful, 2 };
static struct cfg cfg_cs1 = { &harness_copystack, 1 };
static struct cfg cfg_cs2 = { &harness_copystack, 2 };

#define STAGE_TESTS(fn)                                         \
	{ #fn " stackful 1w", fn, NULL, NULL, &cfg_sf1 },       \
	{ #fn " stackful 2w", fn, NULL, NULL, &cfg_sf2 },       \
	{ #fn " copystack 1w", fn, NULL, NULL, &cfg_cs1 },      \
	{ #fn " copystack 2w", fn, NULL, NULL, &cfg_cs2 }

static const struct cfg *cur;
static baton_sched_t *sched;

#define MS 1000000LL

static int64_t time_scale(void)
{
	const char *s = getenv("BATON_TEST_TIME_SCALE");

	return s && atoi(s) > 0 ? atoi(s) : 1;
}

/* A generous deadline for waits that should end soon. */
static int64_t patience(void)
{
	return 10000 * MS * time_scale();
}

static struct baton_stage_attr stage_attr(const char *name, baton_stage_fn fn,
					  void *ctx, size_t cap, unsigned conc)
{
	struct baton_stage_attr a = BATON_STAGE_ATTR_INIT;

	a.name = name;
	a.fn = fn;
	a.ctx = ctx;
	a.queue_capacity = cap;
	a.concurrency = conc;
	a.task.coro = *cur->attr;
	return a;
}

static baton_stage_t *make_stage(const char *name, baton_stage_fn fn,
				 void *ctx, size_t cap, unsigned conc,
				 const struct baton_stage_need *needs,
				 size_t nneeds)
{
	struct baton_stage_attr a = stage_attr(name, fn, ctx, cap, conc);
	baton_stage_t *st = NULL;

	a.needs = needs;
	a.nneeds = nneeds;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_OK);
	return st;
}

/* The scheduler of this test, before its stages are made. */
static void setup(void **state)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;

	cur = *state;
	harness_watchdog(60);
	failures = 0;
	sa.workers = cur->workers;
	assert_int_equal(baton_sched_create(&sched, &sa), BATON_OK);
}

/* Run `main_fn` as a task until the scheduler returns, check, free it. */
static void run(baton_task_fn main_fn, void *arg)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	ta.coro = *cur->attr;
	if (main_fn)
		assert_int_equal(baton_sched_spawn(sched, &ta, main_fn, arg),
				 BATON_OK);
	assert_int_equal(baton_sched_run(sched), BATON_OK);
	assert_int_equal(failures, 0);
	assert_int_equal(baton_sched_destroy(sched), BATON_OK);
	alarm(0);
}

/* How many handlers run at once: enter() returns the new count and raises
 * the recorded maximum. */
struct gauge {
	int now, max;
};

static void gauge_enter(struct gauge *g)
{
	/* Relaxed: a count; the maximum is read after the run or after a
	 * drain, which orders it (scheduler hand-offs are acq/rel). */
	int n = __atomic_add_fetch(&g->now, 1, __ATOMIC_RELAXED);
	int m = __atomic_load_n(&g->max, __ATOMIC_RELAXED);

	/* Relaxed: as above; the CAS only keeps the largest value. */
	while (n > m && !__atomic_compare_exchange_n(&g->max, &m, n, 1,
						     __ATOMIC_RELAXED,
						     __ATOMIC_RELAXED))
		;
}

static void gauge_leave(struct gauge *g)
{
	/* Relaxed: a count, see gauge_enter. */
	__atomic_sub_fetch(&g->now, 1, __ATOMIC_RELAXED);
}

static int gauge_max(struct gauge *g)
{
	/* Relaxed: see gauge_enter. */
	return __atomic_load_n(&g->max, __ATOMIC_RELAXED);
}

static void stats(baton_stage_t *st, struct baton_stage_stats *s)
{
	CHECK_RC(baton_stage_snapshot(st, s), BATON_OK);
}

/* Poll (sleeping) until the stage has completed at least n items. */
static void wait_completed(baton_stage_t *st, uint64_t n)
{
	struct baton_stage_stats s;
	int64_t waited = 0;

	for (;;) {
		stats(st, &s);
		if (s.completed >= n || waited > patience())
			break;
		baton_sched_sleep(MS / 2);
		waited += MS / 2;
	}
	CHECK(s.completed >= n);
}

static void close_drain(baton_stage_t *st)
{
	CHECK_RC(baton_stage_close(st), BATON_OK);
	CHECK_RC(baton_stage_drain(st, patience()), BATON_OK);
}

/* --- a two-stage pipeline, exact accounting -------------------------------- */
#define PIPE_N 2000
static long pipe_items[PIPE_N];
static long pipe_sum;
static baton_stage_t *pipe_a, *pipe_b;

static void pipe_double(void *item, void *ctx)
{
	long *v = item;

	*v *= 2;
	if ((*v & 6) == 0)
		baton_sched_yield(); /* some handlers overlap */
	CHECK_RC(baton_stage_submit(ctx, v, -1), BATON_OK);
}

static void pipe_add(void *item, void *ctx)
{
	(void)ctx;
	/* Relaxed: a sum read after the run. */
	__atomic_add_fetch(&pipe_sum, *(long *)item, __ATOMIC_RELAXED);
}

static void pipe_main(void *arg)
{
	struct baton_stage_stats a, b;

	(void)arg;
	for (long i = 0; i < PIPE_N; i++) {
		pipe_items[i] = i;
		CHECK_RC(baton_stage_submit(pipe_a, &pipe_items[i], -1),
			 BATON_OK);
	}
	close_drain(pipe_a); /* a's handlers have all submitted to b */
	close_drain(pipe_b);
	stats(pipe_a, &a);
	stats(pipe_b, &b);
	CHECK(a.submitted == PIPE_N && a.completed == PIPE_N);
	CHECK(b.submitted == PIPE_N && b.completed == PIPE_N);
	CHECK(a.rejected == 0 && b.rejected == 0);
	CHECK(a.queued == 0 && a.running == 0 && b.queued == 0 &&
	      b.running == 0);
	CHECK(a.closed && b.closed);
}

static void test_pipeline(void **state)
{
	setup(state);
	pipe_sum = 0;
	pipe_b = make_stage("add", pipe_add, NULL, 4, 2, NULL, 0);
	pipe_a = make_stage("double", pipe_double, pipe_b, 8, 4, NULL, 0);
	run(pipe_main, NULL);
	assert_int_equal(pipe_sum, (long)PIPE_N * (PIPE_N - 1));
	assert_int_equal(baton_stage_destroy(pipe_a), BATON_OK);
	assert_int_equal(baton_stage_destroy(pipe_b), BATON_OK);
}

/* --- the concurrency limit --------------------------------------------------- */
static struct gauge conc_gauge;

static void conc_handler(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
	gauge_enter(&conc_gauge);
	baton_sched_sleep(MS);
	gauge_leave(&conc_gauge);
}

static void conc_main(void *arg)
{
	baton_stage_t *st = arg;

	for (int i = 0; i < 30; i++)
		CHECK_RC(baton_stage_submit(st, NULL, -1), BATON_OK);
	close_drain(st);
}

static void test_concurrency_limit(void **state)
{
	baton_stage_t *st;

	setup(state);
	memset(&conc_gauge, 0, sizeof(conc_gauge));
	st = make_stage("limited", conc_handler, NULL, 4, 3, NULL, 0);
	run(conc_main, st);
	assert_int_equal(gauge_max(&conc_gauge), 3);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
}

/* --- two stages share a pool of 2 "db connections" ----------------------------- */
static struct gauge db_gauge;
static baton_pool_t *db_pool;

static void db_handler(void *item, void *ctx)
{
	struct baton_pool_stats ps;

	(void)item;
	(void)ctx;
	gauge_enter(&db_gauge);
	CHECK_RC(baton_pool_snapshot(db_pool, &ps), BATON_OK);
	CHECK(ps.in_use >= 1 && ps.in_use <= 2); /* ours is held */
	baton_sched_sleep(MS / 2);
	gauge_leave(&db_gauge);
}

static void db_main(void *arg)
{
	baton_stage_t **st = arg;
	struct baton_pool_stats ps;

	for (int i = 0; i < 20; i++) {
		CHECK_RC(baton_stage_submit(st[0], NULL, -1), BATON_OK);
		CHECK_RC(baton_stage_submit(st[1], NULL, -1), BATON_OK);
	}
	close_drain(st[0]);
	close_drain(st[1]);
	CHECK_RC(baton_pool_snapshot(db_pool, &ps), BATON_OK);
	CHECK(ps.in_use == 0 && ps.waiters == 0 && ps.acquired == 40);
}

static void test_shared_pool(void **state)
{
	baton_stage_t *st[2];
	struct baton_stage_need need = { NULL, 1, 0 };

	setup(state);
	memset(&db_gauge, 0, sizeof(db_gauge));
	assert_int_equal(baton_pool_create(&db_pool, "db connections", 2),
			 BATON_OK);
	need.pool = db_pool;
	st[0] = make_stage("reads", db_handler, NULL, 8, 4, &need, 1);
	st[1] = make_stage("writes", db_handler, NULL, 8, 4, &need, 1);
	run(db_main, st);
	assert_int_equal(gauge_max(&db_gauge), 2);
	assert_int_equal(baton_pool_destroy(db_pool), BATON_EBUSY); /* listed */
	assert_int_equal(baton_stage_destroy(st[0]), BATON_OK);
	assert_int_equal(baton_stage_destroy(st[1]), BATON_OK);
	assert_int_equal(baton_pool_destroy(db_pool), BATON_OK);
}

/* --- resources held around the handler, and KEEP ------------------------------- */
static baton_pool_t *res_p1, *res_p2, *res_keep;

static void res_handler(void *item, void *ctx)
{
	struct baton_pool_stats a, b, k;

	(void)ctx;
	CHECK_RC(baton_pool_snapshot(res_p1, &a), BATON_OK);
	CHECK_RC(baton_pool_snapshot(res_p2, &b), BATON_OK);
	CHECK_RC(baton_pool_snapshot(res_keep, &k), BATON_OK);
	CHECK(a.in_use == 2 && b.in_use == 1); /* concurrency 1: ours only */
	CHECK(k.in_use == (long)(intptr_t)item + 1); /* kept from before */
}

static void res_main(void *arg)
{
	baton_stage_t *st = arg;
	struct baton_pool_stats a, b, k;

	for (intptr_t i = 0; i < 5; i++)
		CHECK_RC(baton_stage_submit(st, (void *)i, -1), BATON_OK);
	close_drain(st);
	CHECK_RC(baton_pool_snapshot(res_p1, &a), BATON_OK);
	CHECK_RC(baton_pool_snapshot(res_p2, &b), BATON_OK);
	CHECK_RC(baton_pool_snapshot(res_keep, &k), BATON_OK);
	CHECK(a.in_use == 0 && b.in_use == 0 && k.in_use == 5);
	CHECK_RC(baton_pool_release(res_keep, 6), BATON_EPERM);
	CHECK_RC(baton_pool_release(res_keep, 5), BATON_OK);
}

static void test_resources_around_handler(void **state)
{
	baton_stage_t *st;
	struct baton_stage_need needs[3];

	setup(state);
	/* Created in an order different from the needs list's. */
	assert_int_equal(baton_pool_create(&res_p2, "p2", 1), BATON_OK);
	assert_int_equal(baton_pool_create(&res_keep, "inflight", 100),
			 BATON_OK);
	assert_int_equal(baton_pool_create(&res_p1, "p1", 4), BATON_OK);
	needs[0] = (struct baton_stage_need){ res_p1, 2, 0 };
	needs[1] = (struct baton_stage_need){ res_keep, 1, BATON_STAGE_KEEP };
	needs[2] = (struct baton_stage_need){ res_p2, 1, 0 };
	st = make_stage("held", res_handler, NULL, 8, 1, needs, 3);
	run(res_main, st);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_pool_destroy(res_p1), BATON_OK);
	assert_int_equal(baton_pool_destroy(res_p2), BATON_OK);
	assert_int_equal(baton_pool_destroy(res_keep), BATON_OK);
}

/* --- limits changed at run time ------------------------------------------------ */
static struct gauge rt_gauge[2];
static int rt_phase;

static void rt_handler(void *item, void *ctx)
{
	/* Relaxed: the phase is set by the test task between observations;
	 * a handler that reads the old phase entered before the change. */
	struct gauge *g = &rt_gauge[__atomic_load_n(&rt_phase, __ATOMIC_RELAXED)];

	(void)item;
	(void)ctx;
	gauge_enter(g);
	baton_sched_sleep(3 * MS);
	gauge_leave(g);
}

static void rt_conc_main(void *arg)
{
	baton_stage_t *st = arg;

	for (int i = 0; i < 16; i++)
		CHECK_RC(baton_stage_submit(st, NULL, -1), BATON_OK);
	wait_completed(st, 2);
	/* Relaxed: see rt_handler. */
	__atomic_store_n(&rt_phase, 1, __ATOMIC_RELAXED);
	CHECK_RC(baton_stage_set_concurrency(st, 4), BATON_OK);
	close_drain(st);
}

static void test_raise_concurrency(void **state)
{
	baton_stage_t *st;

	setup(state);
	memset(rt_gauge, 0, sizeof(rt_gauge));
	rt_phase = 0;
	st = make_stage("raised", rt_handler, NULL, 16, 1, NULL, 0);
	run(rt_conc_main, st);
	assert_int_equal(gauge_max(&rt_gauge[0]), 1);
	assert_int_equal(gauge_max(&rt_gauge[1]), 4);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
}

static baton_pool_t *rt_pool;

static void rt_pool_main(void *arg)
{
	baton_stage_t *st = arg;
	struct baton_pool_stats ps;
	int64_t waited = 0;

	for (int i = 0; i < 24; i++)
		CHECK_RC(baton_stage_submit(st, NULL, -1), BATON_OK);
	wait_completed(st, 3);
	CHECK_RC(baton_pool_set_capacity(rt_pool, 1), BATON_OK);
	/* The holders from before finish; from then on one at a time. */
	do {
		CHECK_RC(baton_pool_snapshot(rt_pool, &ps), BATON_OK);
		CHECK(ps.capacity == 1);
		if (ps.in_use <= 1)
			break;
		baton_sched_sleep(MS / 2);
		waited += MS / 2;
	} while (waited < patience());
	/* Relaxed: see rt_handler. */
	__atomic_store_n(&rt_phase, 1, __ATOMIC_RELAXED);
	close_drain(st);
}

static void test_shrink_pool(void **state)
{
	baton_stage_t *st;
	struct baton_stage_need need = { NULL, 1, 0 };

	setup(state);
	memset(rt_gauge, 0, sizeof(rt_gauge));
	rt_phase = 0;
	assert_int_equal(baton_pool_create(&rt_pool, "slots", 3), BATON_OK);
	need.pool = rt_pool;
	st = make_stage("shrunk", rt_handler, NULL, 32, 8, &need, 1);
	run(rt_pool_main, st);
	assert_int_equal(gauge_max(&rt_gauge[0]), 3);
	assert_int_equal(gauge_max(&rt_gauge[1]), 1);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_pool_destroy(rt_pool), BATON_OK);
}

/* --- backpressure ------------------------------------------------------------ */
static baton_pool_t *bp_gate;
static int bp_done;

static void nop_handler(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
}

static void bp_blocked(void *arg)
{
	/* Waits for room: admitted once the gate opens. */
	CHECK_RC(baton_stage_submit(arg, NULL, -1), BATON_OK);
	/* Relaxed: a flag read after the drain. */
	__atomic_store_n(&bp_done, 1, __ATOMIC_RELAXED);
}

static void bp_main(void *arg)
{
	baton_stage_t *st = arg;
	struct baton_stage_stats s;
	struct baton_pool_stats ps;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	/* The gate has no units: the head item waits for it, queued. */
	CHECK_RC(baton_stage_submit(st, NULL, 0), BATON_OK);
	CHECK_RC(baton_stage_submit(st, NULL, 0), BATON_OK);
	CHECK_RC(baton_stage_submit(st, NULL, 0), BATON_EAGAIN);
	CHECK_RC(baton_stage_submit(st, NULL, 5 * MS), BATON_ETIMEDOUT);
	stats(st, &s);
	CHECK(s.queued == 2 && s.running == 0 && s.submitted == 2 &&
	      s.rejected == 2);
	ta.coro = *cur->attr;
	CHECK_RC(baton_sched_spawn(sched, &ta, bp_blocked, st), BATON_OK);
	baton_sched_sleep(2 * MS); /* it is now blocked in submit */
	CHECK_RC(baton_pool_snapshot(bp_gate, &ps), BATON_OK);
	CHECK(ps.waiters == 1 && ps.in_use == 0); /* the dispatcher */
	/* Relaxed: see bp_blocked. */
	CHECK(__atomic_load_n(&bp_done, __ATOMIC_RELAXED) == 0);
	stats(st, &s);
	CHECK(s.queued == 2 && s.rejected == 2);
	CHECK_RC(baton_pool_set_capacity(bp_gate, 1), BATON_OK);
	/* Not closed yet: a close now would refuse the waiting producer. */
	wait_completed(st, 3);
	close_drain(st);
	stats(st, &s);
	CHECK(s.submitted == 3 && s.completed == 3 && s.rejected == 2);
}

static void test_backpressure(void **state)
{
	baton_stage_t *st;
	struct baton_stage_need need = { NULL, 1, 0 };

	setup(state);
	bp_done = 0;
	assert_int_equal(baton_pool_create(&bp_gate, "gate", 0), BATON_OK);
	need.pool = bp_gate;
	st = make_stage("gated", nop_handler, NULL, 2, 1, &need, 1);
	run(bp_main, st);
	assert_int_equal(bp_done, 1);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_pool_destroy(bp_gate), BATON_OK);
}

/* --- close while full: waiting producers are refused, queued items run ------- */
static int cd_refused;

static void cd_blocked(void *arg)
{
	CHECK_RC(baton_stage_submit(arg, NULL, -1), BATON_ESHUTDOWN);
	/* Relaxed: a count read after the drain. */
	__atomic_add_fetch(&cd_refused, 1, __ATOMIC_RELAXED);
}

static void cd_main(void *arg)
{
	baton_stage_t *st = arg;
	struct baton_stage_stats s;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	for (int i = 0; i < 3; i++)
		CHECK_RC(baton_stage_submit(st, NULL, 0), BATON_OK);
	CHECK_RC(baton_stage_submit(st, NULL, 0), BATON_EAGAIN);
	ta.coro = *cur->attr;
	for (int i = 0; i < 2; i++)
		CHECK_RC(baton_sched_spawn(sched, &ta, cd_blocked, st),
			 BATON_OK);
	baton_sched_sleep(2 * MS);
	CHECK_RC(baton_stage_set_queue_limit(st, 2), BATON_OK); /* below 3 */
	stats(st, &s);
	CHECK(s.queued == 3 && s.queue_limit == 2);
	CHECK_RC(baton_stage_drain(st, 0), BATON_EAGAIN);
	CHECK_RC(baton_stage_drain(st, 2 * MS), BATON_ETIMEDOUT);
	CHECK_RC(baton_stage_close(st), BATON_OK);
	CHECK_RC(baton_stage_close(st), BATON_ESHUTDOWN);
	CHECK_RC(baton_stage_submit(st, NULL, -1), BATON_ESHUTDOWN);
	CHECK_RC(baton_pool_set_capacity(bp_gate, 1), BATON_OK);
	CHECK_RC(baton_stage_drain(st, patience()), BATON_OK);
	stats(st, &s);
	CHECK(s.submitted == 3 && s.completed == 3 && s.queued == 0);
	CHECK(s.rejected == 4); /* EAGAIN, 2 refused waiters, 1 after close */
}

static void test_close_drains(void **state)
{
	baton_stage_t *st;
	struct baton_stage_need need = { NULL, 1, 0 };

	setup(state);
	cd_refused = 0;
	assert_int_equal(baton_pool_create(&bp_gate, "gate", 0), BATON_OK);
	need.pool = bp_gate;
	st = make_stage("closing", nop_handler, NULL, 3, 4, &need, 1);
	run(cd_main, st);
	assert_int_equal(cd_refused, 2);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_pool_destroy(bp_gate), BATON_OK);
}

/* --- counters add up while producers race ---------------------------------- */
#define ACC_PRODUCERS 4
static long acc_calls, acc_ok;
static int acc_producing;

static void acc_handler(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
	if (((uintptr_t)item & 3) == 0)
		baton_sched_yield();
}

static void acc_producer(void *arg)
{
	long n = harness_scale(3000, 300);

	for (long i = 0; i < n; i++) {
		int rc = baton_stage_submit(arg, (void *)(uintptr_t)i, 0);

		CHECK(rc == BATON_OK || rc == BATON_EAGAIN);
		/* Relaxed: counts read after every producer is done. */
		__atomic_add_fetch(&acc_calls, 1, __ATOMIC_RELAXED);
		if (rc == BATON_OK)
			__atomic_add_fetch(&acc_ok, 1, __ATOMIC_RELAXED);
		if ((i & 7) == 0)
			baton_sched_yield();
	}
	/* Release: the monitor's acquire load then sees our counts. */
	__atomic_sub_fetch(&acc_producing, 1, __ATOMIC_RELEASE);
}

static void acc_main(void *arg)
{
	baton_stage_t *st = arg;
	struct baton_stage_stats s;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

	ta.coro = *cur->attr;
	acc_producing = ACC_PRODUCERS;
	for (int i = 0; i < ACC_PRODUCERS; i++)
		CHECK_RC(baton_sched_spawn(sched, &ta, acc_producer, st),
			 BATON_OK);
	/* Acquire: pairs with each producer's release. */
	while (__atomic_load_n(&acc_producing, __ATOMIC_ACQUIRE) > 0) {
		stats(st, &s);
		CHECK(s.submitted == s.completed + s.running + s.queued);
		CHECK(s.running <= s.concurrency && s.queued <= s.queue_limit);
		baton_sched_yield();
	}
	close_drain(st);
	stats(st, &s);
	CHECK(s.completed == s.submitted);
	CHECK(s.submitted == (uint64_t)acc_ok);
	CHECK(s.submitted + s.rejected == (uint64_t)acc_calls);
	CHECK(s.rejected > 0); /* a queue of 4 is full now and then */
}

static void test_snapshot_adds_up(void **state)
{
	baton_stage_t *st;

	setup(state);
	acc_calls = acc_ok = 0;
	st = make_stage("racy", acc_handler, NULL, 4, 2, NULL, 0);
	run(acc_main, st);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
}

/* --- JSON of a deterministic case; items queued before the run ------------- */
static void test_json(void **state)
{
	static const char want[] =
		"{\"stages\":[{\"name\":\"parse \\\"1\\\"\",\"queued\":3,"
		"\"queue_limit\":3,\"running\":0,\"concurrency\":2,"
		"\"closed\":false,\"submitted\":3,\"rejected\":1,"
		"\"completed\":0,\"handler_ns\":0,\"wait_ns\":0}],"
		"\"pools\":[{\"name\":\"db\",\"capacity\":2,\"in_use\":0,"
		"\"waiters\":0,\"acquired\":0,\"refused\":0}]}";
	char buf[512], small[16];
	baton_stage_t *st;
	baton_pool_t *p;
	struct baton_stage_stats s;
	size_t len;

	assert_int_equal(baton_pool_create(&p, "db", 2), BATON_OK);
	struct baton_stage_need need = { p, 1, 0 };
	setup(state);
	st = make_stage("parse \"1\"", nop_handler, NULL, 3, 2, &need, 1);
	/* From the test thread, before the scheduler runs: try only. */
	for (int i = 0; i < 3; i++)
		assert_int_equal(baton_stage_submit(st, NULL, 0), BATON_OK);
	assert_int_equal(baton_stage_submit(st, NULL, 0), BATON_EAGAIN);
	assert_int_equal(baton_stage_submit(st, NULL, MS), BATON_ENOSCHED);
	assert_int_equal(baton_stage_drain(st, MS), BATON_ENOSCHED);
	assert_int_equal(baton_stage_drain(st, 0), BATON_EAGAIN);
	assert_int_equal(baton_stage_destroy(st), BATON_EBUSY);
	assert_int_equal(baton_stage_json(&st, 1, &p, 1, buf, sizeof(buf),
					  &len), BATON_OK);
	assert_string_equal(buf, want);
	assert_int_equal(len, strlen(want));
	assert_int_equal(baton_stage_json(&st, 1, &p, 1, NULL, 0, &len),
			 BATON_OK);
	assert_int_equal(len, strlen(want));
	assert_int_equal(baton_stage_json(&st, 1, &p, 1, small, sizeof(small),
					  &len), BATON_EINVAL);
	assert_int_equal(len, strlen(want));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(baton_stage_json(NULL, 0, NULL, 0, buf, sizeof(buf),
					  &len), BATON_OK);
	assert_string_equal(buf, "{\"stages\":[],\"pools\":[]}");
	/* The run processes what was queued, then returns. */
	run(NULL, NULL);
	assert_int_equal(baton_stage_snapshot(st, &s), BATON_OK);
	assert_int_equal(s.completed, 3);
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_pool_destroy(p), BATON_OK);
}

/* --- argument checks --------------------------------------------------------- */
static void test_bad_args(void **state)
{
	struct baton_stage_attr a;
	struct baton_stage_need needs[2];
	struct baton_stage_stats s;
	struct baton_pool_stats ps;
	baton_stage_t *st;
	baton_pool_t *p;
	char longname[BATON_NAME_MAX + 2];

	cur = *state;
	harness_watchdog(60);
	assert_int_equal(baton_sched_create(&sched, NULL), BATON_OK);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(baton_pool_create(NULL, "p", 1), BATON_EINVAL);
	assert_int_equal(baton_pool_create(&p, NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_pool_create(&p, "", 1), BATON_EINVAL);
	assert_int_equal(baton_pool_create(&p, longname, 1), BATON_EINVAL);
	assert_int_equal(baton_pool_create(&p, "p", -1), BATON_EINVAL);
	assert_int_equal(baton_pool_create(&p, "p", 1), BATON_OK);
	assert_int_equal(baton_pool_acquire(NULL, 1, 0), BATON_EINVAL);
	assert_int_equal(baton_pool_acquire(p, 0, 0), BATON_EINVAL);
	assert_int_equal(baton_pool_acquire(p, 1, MS), BATON_ENOSCHED);
	assert_int_equal(baton_pool_acquire(p, 1, 0), BATON_OK);
	assert_int_equal(baton_pool_acquire(p, 1, 0), BATON_EAGAIN);
	assert_int_equal(baton_pool_destroy(p), BATON_EBUSY); /* in use */
	assert_int_equal(baton_pool_release(p, 2), BATON_EPERM);
	assert_int_equal(baton_pool_release(p, 0), BATON_EINVAL);
	assert_int_equal(baton_pool_release(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_pool_set_capacity(p, -1), BATON_EINVAL);
	assert_int_equal(baton_pool_set_capacity(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_pool_snapshot(p, NULL), BATON_EINVAL);
	assert_int_equal(baton_pool_snapshot(p, &ps), BATON_OK);
	assert_int_equal(ps.in_use, 1);
	assert_int_equal(ps.acquired, 1);
	assert_int_equal(ps.refused, 1);
	assert_int_equal(baton_pool_release(p, 1), BATON_OK);

	a = stage_attr("s", nop_handler, NULL, 4, 1);
	assert_int_equal(baton_stage_create(NULL, sched, &a), BATON_EINVAL);
	assert_int_equal(baton_stage_create(&st, NULL, &a), BATON_EINVAL);
	assert_int_equal(baton_stage_create(&st, sched, NULL), BATON_EINVAL);
	a.fn = NULL;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a = stage_attr(NULL, nop_handler, NULL, 4, 1);
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a = stage_attr("s", nop_handler, NULL, 0, 1);
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a = stage_attr("s", nop_handler, NULL, BATON_STAGE_MAX_CAPACITY + 1, 1);
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a = stage_attr("s", nop_handler, NULL, 4, 0);
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a = stage_attr("s", nop_handler, NULL, 4, 1);
	a.nneeds = 1;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	needs[0] = (struct baton_stage_need){ p, 1, 0 };
	needs[1] = (struct baton_stage_need){ p, 1, 0 };
	a.needs = needs;
	a.nneeds = 2; /* the same pool twice */
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a.nneeds = BATON_STAGE_MAX_NEEDS + 1;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	a.nneeds = 1;
	needs[0].units = 0;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	needs[0].units = 1;
	needs[0].flags = 2;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	needs[0].flags = 0;
	needs[0].pool = NULL;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_EINVAL);
	needs[0].pool = p;
	assert_int_equal(baton_stage_create(&st, sched, &a), BATON_OK);

	assert_int_equal(baton_stage_submit(NULL, NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_close(NULL), BATON_EINVAL);
	assert_int_equal(baton_stage_drain(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_drain(st, 0), BATON_OK); /* idle */
	assert_int_equal(baton_stage_set_concurrency(st, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_set_concurrency(NULL, 1), BATON_EINVAL);
	assert_int_equal(baton_stage_set_queue_limit(st, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_set_queue_limit(st, 5), BATON_EINVAL);
	assert_int_equal(baton_stage_set_queue_limit(st, 4), BATON_OK);
	assert_int_equal(baton_stage_snapshot(st, NULL), BATON_EINVAL);
	assert_int_equal(baton_stage_snapshot(NULL, &s), BATON_EINVAL);
	assert_int_equal(baton_stage_json(&st, 1, NULL, 0, NULL, 0, NULL),
			 BATON_EINVAL);
	assert_int_equal(baton_stage_json(NULL, 1, NULL, 0, NULL, 0, &(size_t){ 0 }),
			 BATON_EINVAL);
	assert_int_equal(baton_stage_close(st), BATON_OK);
	assert_int_equal(baton_stage_submit(st, NULL, 0), BATON_ESHUTDOWN);
	assert_int_equal(baton_pool_destroy(p), BATON_EBUSY); /* listed */
	assert_int_equal(baton_stage_destroy(st), BATON_OK);
	assert_int_equal(baton_stage_destroy(NULL), BATON_OK);
	assert_int_equal(baton_pool_destroy(p), BATON_OK);
	assert_int_equal(baton_pool_destroy(NULL), BATON_OK);
	assert_int_equal(baton_sched_destroy(sched), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		STAGE_TESTS(test_pipeline),
		STAGE_TESTS(test_concurrency_limit),
		STAGE_TESTS(test_shared_pool),
		STAGE_TESTS(test_resources_around_handler),
		STAGE_TESTS(test_raise_concurrency),
		STAGE_TESTS(test_shrink_pool),
		STAGE_TESTS(test_backpressure),
		STAGE_TESTS(test_close_drains),
		STAGE_TESTS(test_snapshot_adds_up),
		STAGE_TESTS(test_json),
		cmocka_unit_test_prestate(test_bad_args, &cfg_sf1),
	};

	/* e.g. BATON_TEST_FILTER='*1w' to run a few while debugging */
	if (getenv("BATON_TEST_FILTER"))
		cmocka_set_test_filter(getenv("BATON_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
