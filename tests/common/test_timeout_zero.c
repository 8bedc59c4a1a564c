/* One rule for every blocking call of baton: a timeout of 0 only tries, and
 * a call that would have to wait returns BATON_EAGAIN, never
 * BATON_ETIMEDOUT (that is for a wait whose time ran out). Checked here for
 * each module, in a task of either coroutine model: channels (send,
 * receive, select), sync (mutex, semaphore, wait group), pools and stages
 * (acquire, submit, enter, drain), I/O (read, write) and the event count.
 * None of these calls may park the task: the test's task is the only one
 * that could wake it. */
#include "check.h"

#include <sys/socket.h>
#include <unistd.h>

#include <baton/ec.h>
#include <baton/io.h>
#include <baton/stage.h>
#include <baton/sync.h>

static void tz_chan(void)
{
	baton_chan_t *unbuf, *full;
	struct baton_chan_op ops[2];
	size_t idx;
	void *v;

	T_CHECK_RC(baton_chan_create(&unbuf, 0), BATON_OK);
	T_CHECK_RC(baton_chan_create(&full, 1), BATON_OK);
	T_CHECK_RC(baton_chan_send(full, NULL, 0), BATON_OK);
	T_CHECK_RC(baton_chan_recv(unbuf, &v, 0), BATON_EAGAIN);
	T_CHECK_RC(baton_chan_send(unbuf, NULL, 0), BATON_EAGAIN);
	T_CHECK_RC(baton_chan_send(full, NULL, 0), BATON_EAGAIN);
	ops[0] = (struct baton_chan_op){ .chan = unbuf, .dir = BATON_CHAN_RECV };
	ops[1] = (struct baton_chan_op){ .chan = full, .dir = BATON_CHAN_SEND };
	T_CHECK_RC(baton_chan_select(ops, 2, 0, &idx), BATON_EAGAIN);
	T_CHECK_RC(baton_chan_destroy(unbuf), BATON_OK);
	T_CHECK_RC(baton_chan_destroy(full), BATON_OK);
}

static void tz_sync(void)
{
	baton_mutex_t *m;
	baton_sem_t *sem;
	baton_wg_t *wg;

	T_CHECK_RC(baton_mutex_create(&m), BATON_OK);
	T_CHECK_RC(baton_mutex_lock(m, 0), BATON_OK);
	/* Held by us: EDEADLK is the answer there, whatever the timeout;
	 * the contended case is covered by test_sync. */
	T_CHECK_RC(baton_mutex_unlock(m), BATON_OK);
	T_CHECK_RC(baton_mutex_destroy(m), BATON_OK);
	T_CHECK_RC(baton_sem_create(&sem, 0), BATON_OK);
	T_CHECK_RC(baton_sem_acquire(sem, 1, 0), BATON_EAGAIN);
	T_CHECK_RC(baton_sem_destroy(sem), BATON_OK);
	T_CHECK_RC(baton_wg_create(&wg), BATON_OK);
	T_CHECK_RC(baton_wg_add(wg, 1), BATON_OK);
	T_CHECK_RC(baton_wg_wait(wg, 0), BATON_EAGAIN);
	T_CHECK_RC(baton_wg_done(wg), BATON_OK);
	T_CHECK_RC(baton_wg_wait(wg, 0), BATON_OK);
	T_CHECK_RC(baton_wg_destroy(wg), BATON_OK);
}

static void tz_count(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
}

static void tz_stage(baton_sched_t *s)
{
	struct baton_stage_attr a = BATON_STAGE_ATTR_INIT;
	struct baton_stage_pass p1 = BATON_STAGE_PASS_INIT, p2 = BATON_STAGE_PASS_INIT;
	baton_stage_t *st, *pass;
	baton_pool_t *pool;

	T_CHECK_RC(baton_pool_create(&pool, "tz", 1), BATON_OK);
	T_CHECK_RC(baton_pool_acquire(pool, 1, 0), BATON_OK);
	T_CHECK_RC(baton_pool_acquire(pool, 1, 0), BATON_EAGAIN);
	T_CHECK_RC(baton_pool_release(pool, 1), BATON_OK);
	T_CHECK_RC(baton_pool_destroy(pool), BATON_OK);

	/* A handler slot and a one-item queue fill up: handlers run only once
	 * this task lets the worker go. */
	a.name = "tz";
	a.fn = tz_count;
	a.queue_capacity = 1;
	T_CHECK_RC(baton_stage_create(&st, s, &a), BATON_OK);
	int rc = BATON_OK;
	for (int i = 0; i < 8 && rc == BATON_OK; i++)
		rc = baton_stage_submit(st, NULL, 0);
	T_CHECK_RC(rc, BATON_EAGAIN);
	T_CHECK_RC(baton_stage_close(st), BATON_OK);
	T_CHECK_RC(baton_stage_drain(st, 0), BATON_EAGAIN);
	T_CHECK_RC(baton_stage_drain(st, MS(20000)), BATON_OK);
	T_CHECK_RC(baton_stage_destroy(st), BATON_OK);

	a = (struct baton_stage_attr)BATON_STAGE_ATTR_INIT;
	a.name = "tz-pass";
	T_CHECK_RC(baton_stage_create(&pass, s, &a), BATON_OK);
	T_CHECK_RC(baton_stage_enter(pass, &p1, 0), BATON_OK);
	T_CHECK_RC(baton_stage_enter(pass, &p2, 0), BATON_EAGAIN);
	T_CHECK_RC(baton_stage_leave(&p1, NULL), BATON_OK);
	T_CHECK_RC(baton_stage_destroy(pass), BATON_OK);
}

static void tz_io(void)
{
	static char chunk[65536];
	baton_io_t *a, *b;
	int sv[2];
	size_t n;
	int rc = BATON_OK;

	T_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	T_CHECK_RC(baton_io_open(&a, sv[0], true), BATON_OK);
	T_CHECK_RC(baton_io_open(&b, sv[1], true), BATON_OK);
	T_CHECK_RC(baton_io_read(a, chunk, sizeof(chunk), 0, &n), BATON_EAGAIN);
	/* Fill the socket's buffers: a bounded number of tries. */
	for (int i = 0; i < 1000 && rc == BATON_OK; i++)
		rc = baton_io_write(a, chunk, sizeof(chunk), 0, &n);
	T_CHECK_RC(rc, BATON_EAGAIN);
	T_CHECK_RC(baton_io_close(a), BATON_OK);
	T_CHECK_RC(baton_io_close(b), BATON_OK);
}

static void tz_ec(void)
{
	baton_ec_t ec;

	T_CHECK_RC(baton_ec_init(&ec), BATON_OK);
	T_CHECK_RC(baton_ec_wait(&ec, baton_ec_value(&ec), 0), BATON_EAGAIN);
	T_CHECK_RC(baton_ec_wait_mp(&ec, baton_ec_value(&ec), 0), BATON_EAGAIN);
}

static void tz_task(void *arg)
{
	tz_chan();
	tz_sync();
	tz_stage(arg);
	tz_io();
	tz_ec();
}

static void test_timeout_zero_is_eagain(void **state)
{
	baton_sched_t *s = st_sched(1);

	st_reset();
	st_watchdog(60, "timeout 0 in every module");
	st_spawn(s, state, 0, tz_task, s);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	T_VERDICT();
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		MODEL_TESTS(test_timeout_zero_is_eagain),
	};

	return cmocka_run_group_tests_name("timeout_zero", tests, NULL, NULL);
}
