/* SPDX-License-Identifier: MIT */
/* Calling a stage and handing kept units on (include/baton/stage.h, rules
 * 7 and 8): the handler's result in the item, timeout 0 and a timeout for
 * room, a deadline for the result with the item abandoned (handled if it
 * had started, skipped if still queued), a caller cancelled while the
 * handler runs (its frame gone, the item freed once, ASan watching), kept
 * units released exactly once (pool counters), and the errors of the
 * calls. See stage_test.h. */
#include "stage_test.h"

#include <time.h>

#include <baton/sync.h>

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* An item: the handler doubles `in` into `out` after `sleep_ns`, or,
 * with `gate`, waits until the gate opens. */
struct job {
	int in, out;
	int64_t sleep_ns;
	int *gate;  /* open when *gate != 0 (atomic) */
	int ran;    /* the handler ran (atomic) */
	int *freed; /* counts abandon calls (atomic) */
};

static int ran_total; /* handler runs, all jobs (atomic) */
/* A gate and an abandon count the handlers reach: not in a task's frame,
 * which a copy-stack task does not keep in place while it waits. */
static int gate, freed;

static void job_handler(void *item, void *ctx)
{
	struct job *j = item;

	(void)ctx;
	if (j->sleep_ns > 0)
		baton_sched_sleep(j->sleep_ns);
	/* Acquire: the opener's stores before it opened. */
	while (j->gate && !__atomic_load_n(j->gate, __ATOMIC_ACQUIRE))
		baton_sched_sleep(TC_MS(1) / 4);
	j->out = 2 * j->in;
	/* Relaxed: counts, read after the handler's end is waited for. */
	__atomic_store_n(&j->ran, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ran_total, 1, __ATOMIC_RELAXED);
}

/* The abandon function: counts, then frees the heap job. */
static void job_abandon(void *item)
{
	struct job *j = item;

	/* Relaxed: a count, read after a drain (which orders it). */
	__atomic_add_fetch(j->freed, 1, __ATOMIC_RELAXED);
	free(j);
}

static struct job *job_new(int in, int64_t sleep_ns, int *gate, int *freed)
{
	struct job *j = calloc(1, sizeof(*j));

	assert_non_null(j);
	j->in = in;
	j->sleep_ns = sleep_ns;
	j->gate = gate;
	j->freed = freed;
	return j;
}

static void open_gate(int *gate)
{
	/* Release: pairs with the handler's acquire. */
	__atomic_store_n(gate, 1, __ATOMIC_RELEASE);
}

static struct baton_pool_stats pool_stats(baton_pool_t *p)
{
	struct baton_pool_stats s;

	TC_CHECK_RC(baton_pool_snapshot(p, &s), BATON_OK);
	return s;
}

/* --- the result: many callers at once ---------------------------------------- */
#define RES_CALLERS 8
static baton_stage_t *res_st;
static baton_wg_t *res_wg;

static void res_caller(void *arg)
{
	struct job j = { (int)(intptr_t)arg, -1, (TC_MS(1) / 2), NULL, 0, NULL };
	struct baton_stage_call c = BATON_STAGE_CALL_INIT;

	/* A stackful caller may lend its frame: it stays until OK. The
	 * copy-stack one must not (its stack moves while it waits). */
	struct job *item = cur->attr == &tc_copystack ? job_new(j.in, j.sleep_ns, NULL, NULL) : &j;

	c.item = item;
	TC_CHECK_RC(baton_stage_call(res_st, &c, patience()), BATON_OK);
	TC_CHECK(c.queued == 1);
	TC_CHECK(item->out == 2 * item->in);
	TC_CHECK(item->ran == 1);
	if (item != &j)
		free(item);
	baton_wg_done(res_wg);
}

static void res_main(void *arg)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	struct baton_stage_stats s;

	(void)arg;
	ta.coro = *cur->attr;
	TC_CHECK_RC(baton_wg_create(&res_wg), BATON_OK);
	baton_wg_add(res_wg, RES_CALLERS);
	for (int i = 0; i < RES_CALLERS; i++)
		TC_CHECK_RC(baton_sched_spawn(sched, &ta, res_caller, (void *)(intptr_t)(i + 1)),
			    BATON_OK);
	TC_CHECK_RC(baton_wg_wait(res_wg, patience()), BATON_OK);
	baton_wg_destroy(res_wg);
	close_drain(res_st);
	stats(res_st, &s);
	TC_CHECK(s.submitted == RES_CALLERS && s.completed == RES_CALLERS);
	TC_CHECK(s.rejected == 0 && s.running == 0 && s.queued == 0);
}

static void test_call_result(void **state)
{
	setup(state);
	res_st = make_stage("result", job_handler, NULL, RES_CALLERS, 2, NULL, 0);
	run(res_main, NULL);
	assert_int_equal(baton_stage_destroy(res_st), BATON_OK);
}

/* --- no room: timeout 0 and a timeout ---------------------------------------- */
static baton_stage_t *room_st;

static void room_main(void *arg)
{
	gate = freed = 0;
	struct job *busy = job_new(1, 0, &gate, &freed), *queued = job_new(2, 0, NULL, &freed);
	struct job *mine = job_new(3, 0, NULL, &freed);
	struct baton_stage_call c = BATON_STAGE_CALL_INIT;
	struct baton_stage_stats s;

	(void)arg;
	TC_CHECK_RC(baton_stage_submit(room_st, busy, 0), BATON_OK);   /* runs, held */
	TC_CHECK_RC(baton_stage_submit(room_st, queued, 0), BATON_OK); /* fills the queue */
	c.item = mine;
	c.queued = 7;
	TC_CHECK_RC(baton_stage_call(room_st, &c, 0), BATON_EAGAIN);
	TC_CHECK(c.queued == 0);
	TC_CHECK_RC(baton_stage_call(room_st, &c, TC_MS(2)), BATON_ETIMEDOUT);
	TC_CHECK(c.queued == 0);
	stats(room_st, &s);
	TC_CHECK(s.rejected == 2 && s.submitted == 2);
	open_gate(&gate);
	/* Now there is room, and the result comes. */
	TC_CHECK_RC(baton_stage_call(room_st, &c, patience()), BATON_OK);
	TC_CHECK(c.queued == 1 && mine->out == 6);
	close_drain(room_st);
	TC_CHECK(busy->out == 2 && queued->out == 4);
	TC_CHECK(freed == 0); /* nothing was abandoned */
	free(busy);
	free(queued);
	free(mine);
}

static void test_call_room(void **state)
{
	setup(state);
	room_st = make_stage("room", job_handler, NULL, 1, 1, NULL, 0);
	run(room_main, NULL);
	assert_int_equal(baton_stage_destroy(room_st), BATON_OK);
}

/* --- the deadline: the item abandoned, handled or skipped --------------------- */
static baton_stage_t *dl_st;

static void dl_main(void *arg)
{
	gate = freed = 0;
	struct job *first = job_new(1, 0, &gate, &freed), *second = job_new(2, 0, NULL, &freed);
	struct baton_stage_call c1 = BATON_STAGE_CALL_INIT, c2 = BATON_STAGE_CALL_INIT;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	struct baton_stage_stats s;
	int64_t t0 = now_ns();

	(void)arg;
	ta.coro = *cur->attr;
	/* first's handler runs (held by the gate) past our deadline. */
	c1.item = first;
	c1.abandon = job_abandon;
	c1.deadline = t0 + TC_MS(3);
	TC_CHECK_RC(baton_stage_call(dl_st, &c1, patience()), BATON_ETIMEDOUT);
	TC_CHECK(c1.queued == 1);
	TC_CHECK(now_ns() >= c1.deadline);
	/* second waits in the queue behind it past its deadline: its caller
	 * leaves before its handler starts, so it is never handled. */
	c2.item = second;
	c2.abandon = job_abandon;
	c2.deadline = now_ns() + TC_MS(2);
	TC_CHECK_RC(baton_stage_call(dl_st, &c2, patience()), BATON_ETIMEDOUT);
	TC_CHECK(c2.queued == 1);
	/* Relaxed: a count; the handler is still held, nothing ended. */
	TC_CHECK(__atomic_load_n(&freed, __ATOMIC_RELAXED) == 0);
	open_gate(&gate);
	close_drain(dl_st);
	/* Both ended on the stage's side, once each; only first was handled. */
	TC_CHECK(freed == 2);
	TC_CHECK(ran_total == 1);
	stats(dl_st, &s);
	TC_CHECK(s.submitted == 2 && s.completed == 2 && s.running == 0 && s.queued == 0);
}

static void test_call_deadline(void **state)
{
	setup(state);
	ran_total = 0;
	dl_st = make_stage("deadline", job_handler, NULL, 4, 1, NULL, 0);
	run(dl_main, NULL);
	assert_int_equal(baton_stage_destroy(dl_st), BATON_OK);
}

/* --- the caller cancelled while the handler runs ------------------------------- */
static baton_stage_t *cn_st;
static baton_task_t *cn_caller_task; /* published before the caller waits */
static int cn_rc, cn_queued, cn_freed, cn_gate, cn_caller_done;

static void cn_caller(void *arg)
{
	/* Its record in its frame: the stage must not touch it once it left. */
	struct baton_stage_call c = BATON_STAGE_CALL_INIT;

	(void)arg;
	/* Release: the handle, to the canceller's acquire. */
	__atomic_store_n(&cn_caller_task, baton_task_handle(), __ATOMIC_RELEASE);
	c.item = job_new(5, 0, &cn_gate, &cn_freed);
	c.abandon = job_abandon;
	cn_rc = baton_stage_call(cn_st, &c, patience());
	cn_queued = c.queued;
	/* Release: the results above, to the main task's acquire; after
	 * this store the handle may not be used (the task returns). */
	__atomic_store_n(&cn_caller_done, 1, __ATOMIC_RELEASE);
}

static void cn_main(void *arg)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	struct baton_stage_stats s;
	baton_task_t *t;
	int64_t waited = 0;

	(void)arg;
	ta.coro = *cur->attr;
	TC_CHECK_RC(baton_sched_spawn(sched, &ta, cn_caller, NULL), BATON_OK);
	/* Wait until the handler runs: the caller is then waiting for it. */
	for (stats(cn_st, &s); s.running == 0 && waited < patience(); stats(cn_st, &s)) {
		baton_sched_sleep(TC_MS(1) / 4);
		waited += (TC_MS(1) / 4);
	}
	TC_CHECK(s.running == 1);
	/* Acquire: the caller's handle store. */
	t = __atomic_load_n(&cn_caller_task, __ATOMIC_ACQUIRE);
	TC_CHECK(t != NULL);
	TC_CHECK_RC(baton_task_cancel(t), BATON_OK); /* it cannot have returned: held */
	/* Acquire: the caller's results. */
	for (waited = 0; !__atomic_load_n(&cn_caller_done, __ATOMIC_ACQUIRE) && waited < patience();
	     waited += (TC_MS(1) / 4))
		baton_sched_sleep(TC_MS(1) / 4);
	TC_CHECK(cn_rc == BATON_ECANCELED && cn_queued == 1);
	baton_sched_sleep(TC_MS(2)); /* the caller's task has ended: its frame is gone */
	/* Relaxed: a count; nothing ended yet, the handler is held. */
	TC_CHECK(__atomic_load_n(&cn_freed, __ATOMIC_RELAXED) == 0);
	open_gate(&cn_gate); /* the handler writes into its (heap) item, then it ends */
	close_drain(cn_st);
	TC_CHECK(cn_freed == 1 && ran_total == 1);
}

static void test_call_cancel(void **state)
{
	setup(state);
	ran_total = 0;
	cn_caller_task = NULL;
	cn_rc = cn_queued = cn_freed = cn_gate = cn_caller_done = 0;
	cn_st = make_stage("cancel", job_handler, NULL, 4, 1, NULL, 0);
	run(cn_main, NULL);
	assert_int_equal(baton_stage_destroy(cn_st), BATON_OK);
}

/* --- kept units: released exactly once ------------------------------------------ */
static baton_pool_t *kp_pool;
static baton_gate_t *kp_read;
static baton_stage_t *kp_work;

/* Pass through the read gate: its KEEP unit comes out in p->kept. */
static void kp_read_step(struct baton_gate_pass *p)
{
	*p = (struct baton_gate_pass)BATON_GATE_PASS_INIT;
	TC_CHECK_RC(baton_gate_enter(kp_read, p, patience()), BATON_OK);
	TC_CHECK_RC(baton_gate_leave(p, NULL), BATON_OK);
	TC_CHECK(p->kept.gate == kp_read);
	TC_CHECK(pool_stats(kp_pool).in_use == 1);
}

static void kp_main(void *arg)
{
	struct baton_gate_pass p;
	struct baton_stage_call c = BATON_STAGE_CALL_INIT;
	struct baton_pool_stats ps;
	gate = freed = 0;
	struct job *j = job_new(4, 0, NULL, &freed);

	(void)arg;
	/* Released by hand: once, the second time a no-op. */
	kp_read_step(&p);
	TC_CHECK_RC(baton_stage_kept_release(&p.kept), BATON_OK);
	TC_CHECK(p.kept.gate == NULL && pool_stats(kp_pool).in_use == 0);
	TC_CHECK_RC(baton_stage_kept_release(&p.kept), BATON_OK);
	TC_CHECK(pool_stats(kp_pool).in_use == 0);

	/* Handed to a call: released by the time it returns. */
	kp_read_step(&p);
	c.item = j;
	c.kept = p.kept;
	TC_CHECK_RC(baton_stage_call(kp_work, &c, patience()), BATON_OK);
	TC_CHECK(c.kept.gate == NULL && j->out == 8);
	TC_CHECK(pool_stats(kp_pool).in_use == 0);
	TC_CHECK_RC(baton_stage_kept_release(&c.kept), BATON_OK); /* emptied: no-op */

	/* A refused call keeps them with the caller. */
	kp_read_step(&p);
	TC_CHECK_RC(baton_stage_set_queue_limit(kp_work, 1), BATON_OK);
	{
		struct job *hold = job_new(1, 0, &gate, &freed),
			   *fill = job_new(2, 0, NULL, &freed);

		TC_CHECK_RC(baton_stage_submit(kp_work, hold, 0), BATON_OK);
		TC_CHECK_RC(baton_stage_submit(kp_work, fill, 0), BATON_OK);
		c = (struct baton_stage_call)BATON_STAGE_CALL_INIT;
		c.item = j;
		c.kept = p.kept;
		TC_CHECK_RC(baton_stage_call(kp_work, &c, 0), BATON_EAGAIN);
		TC_CHECK(c.queued == 0 && c.kept.gate == kp_read);
		TC_CHECK(pool_stats(kp_pool).in_use == 1);

		/* Abandoned: released where the item finishes, not before. */
		open_gate(&gate);
		TC_CHECK_RC(baton_stage_drain(kp_work, patience()), BATON_OK);
		gate = 0;
		TC_CHECK_RC(baton_stage_submit(kp_work, hold, 0), BATON_OK); /* held again */
		j->gate = &gate;
		c.abandon = job_abandon;
		c.deadline = now_ns() + TC_MS(2);
		TC_CHECK_RC(baton_stage_call(kp_work, &c, patience()), BATON_ETIMEDOUT);
		TC_CHECK(c.queued == 1 && c.kept.gate == NULL);
		TC_CHECK(pool_stats(kp_pool).in_use == 1); /* the item is still queued */
		open_gate(&gate);
		TC_CHECK_RC(baton_stage_drain(kp_work, patience()), BATON_OK);
		free(hold);
		free(fill);
	}
	ps = pool_stats(kp_pool);
	TC_CHECK(ps.in_use == 0 && ps.acquired == 3 && freed == 1);
	TC_CHECK_RC(baton_stage_close(kp_work), BATON_OK);
	TC_CHECK_RC(baton_gate_close(kp_read), BATON_OK);
}

static void test_call_kept(void **state)
{
	struct baton_stage_need need;

	setup(state);
	assert_int_equal(baton_pool_create(&kp_pool, "units", 1), BATON_OK);
	need = (struct baton_stage_need){ kp_pool, 1, BATON_STAGE_KEEP };
	kp_read = make_gate("read", 4, 1, &need, 1);
	kp_work = make_stage("work", job_handler, NULL, 4, 1, NULL, 0);
	run(kp_main, NULL);
	assert_int_equal(baton_stage_destroy(kp_work), BATON_OK);
	assert_int_equal(baton_gate_destroy(kp_read), BATON_OK);
	assert_int_equal(baton_pool_destroy(kp_pool), BATON_OK);
}

/* --- questions: the handler borrows the caller's task ---------------------------- */
static baton_stage_t *ask_st;
static baton_task_t *ask_caller; /* the task that must answer */

struct question {
	int n;
	int asked_in_caller; /* fn ran in the caller's task */
};

static int ask_double(void *arg)
{
	struct question *q = arg;

	q->asked_in_caller = baton_task_handle() == ask_caller;
	return 2 * q->n;
}

/* Asks twice; the answers (and where they were given) go into the job. */
static void ask_handler(void *item, void *ctx)
{
	struct job *j = item;
	struct question *q = malloc(sizeof(*q)); /* not in this (maybe copy-stack) frame */

	(void)ctx;
	if (q == NULL)
		return;
	q->n = j->in;
	/* Handed its own call only: not an item it does not handle. */
	TC_CHECK_RC(baton_stage_ask(ask_st, q, ask_double, q), BATON_EINVAL);
	j->out = baton_stage_ask(ask_st, j, ask_double, q);
	j->ran = q->asked_in_caller;
	q->n = j->out;
	j->out = baton_stage_ask(ask_st, j, ask_double, q);
	j->ran += q->asked_in_caller;
	free(q);
	if (j->gate == NULL)
		return;
	/* Held past the caller's deadline: the next question is refused. */
	while (!__atomic_load_n(j->gate, __ATOMIC_ACQUIRE)) /* Acquire: see open_gate */
		baton_sched_sleep(TC_MS(1) / 4);
	j->in = baton_stage_ask(ask_st, j, ask_double, &j->out);
	__atomic_add_fetch(&ran_total, 1, __ATOMIC_RELAXED); /* Relaxed: a count */
}

static void ask_main(void *arg)
{
	struct baton_stage_call c = BATON_STAGE_CALL_INIT;
	struct job *j;

	(void)arg;
	gate = freed = 0;
	ask_caller = baton_task_handle();
	j = job_new(3, 0, NULL, &freed);
	c.item = j;
	TC_CHECK_RC(baton_stage_call(ask_st, &c, patience()), BATON_OK);
	TC_CHECK(j->out == 12 && j->ran == 2);
	/* Not a called item being handled: refused. */
	TC_CHECK_RC(baton_stage_ask(ask_st, j, ask_double, NULL), BATON_EINVAL);
	TC_CHECK_RC(baton_stage_ask(NULL, j, ask_double, NULL), BATON_EINVAL);
	TC_CHECK_RC(baton_stage_ask(ask_st, j, NULL, NULL), BATON_EINVAL);
	/* The caller leaves before the third question: ECANCELED for it. */
	j->gate = &gate;
	j->freed = &freed;
	c = (struct baton_stage_call)BATON_STAGE_CALL_INIT;
	c.item = j;
	c.deadline = now_ns() + TC_MS(3);
	TC_CHECK_RC(baton_stage_call(ask_st, &c, patience()), BATON_ETIMEDOUT);
	open_gate(&gate);
	TC_CHECK_RC(baton_stage_drain(ask_st, patience()), BATON_OK);
	TC_CHECK(ran_total == 1 && j->in == BATON_ECANCELED);
	free(j); /* no abandon function: it is ours to free once it ended */
	TC_CHECK_RC(baton_stage_close(ask_st), BATON_OK);
}

static void test_call_ask(void **state)
{
	setup(state);
	ran_total = 0;
	ask_st = make_stage("ask", ask_handler, NULL, 4, 1, NULL, 0);
	run(ask_main, NULL);
	assert_int_equal(baton_stage_destroy(ask_st), BATON_OK);
}

/* --- BATON_STAGE_CANCEL_ABANDONED: the handler stops --------------------------------- */
static baton_stage_t *ca_st;
static int ca_sleep_rc;

/* Sleeps "for ever"; a cancel ends it early. */
static void ca_handler(void *item, void *ctx)
{
	struct job *j = item;

	(void)ctx;
	ca_sleep_rc = baton_sched_sleep(patience());
	j->out = 1;
	__atomic_add_fetch(&ran_total, 1, __ATOMIC_RELAXED); /* Relaxed: a count */
}

static void ca_main(void *arg)
{
	struct baton_stage_call c = BATON_STAGE_CALL_INIT;
	struct baton_stage_stats s;
	int64_t t0 = now_ns();

	(void)arg;
	gate = freed = 0;
	c.item = job_new(1, 0, NULL, &freed);
	c.abandon = job_abandon;
	c.deadline = t0 + TC_MS(3);
	TC_CHECK_RC(baton_stage_call(ca_st, &c, patience()), BATON_ETIMEDOUT);
	/* Cancelled: it ends long before its sleep would have. */
	TC_CHECK_RC(baton_stage_drain(ca_st, patience() / 2), BATON_OK);
	TC_CHECK(ca_sleep_rc == BATON_ECANCELED && freed == 1 && ran_total == 1);
	/* The cancelled runner ended; a new one serves the next call. */
	c = (struct baton_stage_call)BATON_STAGE_CALL_INIT;
	c.item = job_new(1, 0, NULL, &freed);
	c.deadline = now_ns() + TC_MS(3);
	TC_CHECK_RC(baton_stage_call(ca_st, &c, patience()), BATON_ETIMEDOUT);
	TC_CHECK_RC(baton_stage_drain(ca_st, patience() / 2), BATON_OK);
	TC_CHECK(ran_total == 2);
	free(c.item); /* ended, no abandon function */
	stats(ca_st, &s);
	TC_CHECK(s.runners_started == 2 && s.completed == 2);
	TC_CHECK_RC(baton_stage_close(ca_st), BATON_OK);
}

static void test_call_cancel_abandoned(void **state)
{
	struct baton_stage_attr a;

	setup(state);
	ran_total = 0;
	a = stage_attr("cancels", ca_handler, NULL, 4, 1);
	a.flags = BATON_STAGE_CANCEL_ABANDONED;
	assert_int_equal(baton_stage_create(&ca_st, sched, &a), BATON_OK);
	run(ca_main, NULL);
	assert_int_equal(baton_stage_destroy(ca_st), BATON_OK);
}

/* --- bad arguments ------------------------------------------------------------- */
static void test_call_bad_args(void **state)
{
	struct baton_stage_call c = BATON_STAGE_CALL_INIT;
	baton_stage_t *pass, *items;

	setup(state);
	pass = make_stage("pass", NULL, NULL, 4, 1, NULL, 0);
	items = make_stage("items", nop_handler, NULL, 4, 1, NULL, 0);
	assert_int_equal(baton_stage_call(NULL, &c, 0), BATON_EINVAL);
	assert_int_equal(baton_stage_call(items, NULL, 0), BATON_EINVAL);
	c.queued = 3;
	assert_int_equal(baton_stage_call(pass, &c, 0), BATON_EINVAL); /* no handler */
	assert_int_equal(c.queued, 0);
	/* Outside a task it cannot wait for the handler, whatever the timeout. */
	assert_int_equal(baton_stage_call(items, &c, 0), BATON_ENOSCHED);
	assert_int_equal(baton_stage_call(items, &c, -1), BATON_ENOSCHED);
	assert_int_equal(c.queued, 0);
	assert_int_equal(baton_stage_kept_release(NULL), BATON_EINVAL);
	assert_int_equal(baton_stage_ask(items, NULL, ask_double, NULL), BATON_ENOSCHED);
	{
		struct baton_stage_attr a = stage_attr("flags", NULL, NULL, 4, 1);

		a.flags = BATON_STAGE_CANCEL_ABANDONED; /* no handler to cancel */
		assert_int_equal(baton_stage_create(&items, sched, &a), BATON_EINVAL);
		a = stage_attr("flags", nop_handler, NULL, 4, 1);
		a.flags = 2;
		assert_int_equal(baton_stage_create(&items, sched, &a), BATON_EINVAL);
	}
	assert_int_equal(baton_stage_destroy(pass), BATON_OK);
	assert_int_equal(baton_stage_destroy(items), BATON_OK);
	assert_int_equal(baton_sched_destroy(sched), BATON_OK);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_CFG_TESTS(test_call_result),
		TC_CFG_TESTS(test_call_room),
		TC_CFG_TESTS(test_call_deadline),
		TC_CFG_TESTS(test_call_cancel),
		TC_CFG_TESTS(test_call_kept),
		TC_CFG_TESTS(test_call_ask),
		TC_CFG_TESTS(test_call_cancel_abandoned),
		cmocka_unit_test_prestate(test_call_bad_args, &tc_cfg_sf1),
	};

	if (getenv("BATON_TEST_FILTER"))
		cmocka_set_test_filter(getenv("BATON_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
