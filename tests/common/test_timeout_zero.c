/* SPDX-License-Identifier: MIT */
/* One rule for every blocking call of baton: a timeout of 0 only tries, and
 * a call that would have to wait returns BATON_EAGAIN, never
 * BATON_ETIMEDOUT (that is for a wait whose time ran out). Checked here for
 * each module, in a task of either coroutine model: channels (send,
 * receive, select), sync (mutex held by another task, semaphore short of
 * units, wait group), pools, stages and gates (acquire, submit, enter, drain),
 * I/O (read, write, accept, wait, connect), the event count, the
 * reclamation domain (synchronize, barrier) and the scheduler (sleep 0
 * only yields). None of these calls may park the task: the test's task is
 * the only one that could wake it. The calls that work outside tasks with
 * timeout 0 (channels, sync, event counts, smr) are checked from a plain
 * thread too. */
#include "check.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <baton/ec.h>
#include <baton/io.h>
#include <baton/smr.h>
#include <baton/stage.h>
#include <baton/sync.h>

static void tz_chan(void)
{
	baton_chan_t *unbuf, *full;
	struct baton_chan_op ops[2];
	size_t idx;
	void *v;

	TC_CHECK_RC(baton_chan_create(&unbuf, 0), BATON_OK);
	TC_CHECK_RC(baton_chan_create(&full, 1), BATON_OK);
	TC_CHECK_RC(baton_chan_send(full, NULL, 0), BATON_OK);
	TC_CHECK_RC(baton_chan_recv(unbuf, &v, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_chan_send(unbuf, NULL, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_chan_send(full, NULL, 0), BATON_EAGAIN);
	ops[0] = (struct baton_chan_op){ .chan = unbuf, .dir = BATON_CHAN_RECV };
	ops[1] = (struct baton_chan_op){ .chan = full, .dir = BATON_CHAN_SEND };
	TC_CHECK_RC(baton_chan_select(ops, 2, 0, &idx), BATON_EAGAIN);
	TC_CHECK_RC(baton_chan_destroy(unbuf), BATON_OK);
	TC_CHECK_RC(baton_chan_destroy(full), BATON_OK);
}

static void tz_sync(void)
{
	baton_mutex_t *m;
	baton_sem_t *sem;
	baton_wg_t *wg;

	TC_CHECK_RC(baton_mutex_create(&m), BATON_OK);
	TC_CHECK_RC(baton_mutex_lock(m, 0), BATON_OK);
	/* Held by us: EDEADLK is the answer there, whatever the timeout;
	 * held by another task: tz_mutex_held. */
	TC_CHECK_RC(baton_mutex_unlock(m), BATON_OK);
	TC_CHECK_RC(baton_mutex_destroy(m), BATON_OK);
	TC_CHECK_RC(baton_sem_create(&sem, 0), BATON_OK);
	TC_CHECK_RC(baton_sem_acquire(sem, 1, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_sem_release(sem, 1), BATON_OK);
	/* Units: one there, two asked: none taken. */
	TC_CHECK_RC(baton_sem_acquire(sem, 2, 0), BATON_EAGAIN);
	TC_CHECK(baton_sem_value(sem) == 1);
	TC_CHECK_RC(baton_sem_acquire(sem, 1, 0), BATON_OK);
	TC_CHECK_RC(baton_sem_destroy(sem), BATON_OK);
	TC_CHECK_RC(baton_wg_create(&wg), BATON_OK);
	TC_CHECK_RC(baton_wg_add(wg, 1), BATON_OK);
	TC_CHECK_RC(baton_wg_wait(wg, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_wg_done(wg), BATON_OK);
	TC_CHECK_RC(baton_wg_wait(wg, 0), BATON_OK);
	TC_CHECK_RC(baton_wg_destroy(wg), BATON_OK);
}

/* The mutex held by another task: this one only tries. */
struct tz_held {
	baton_mutex_t *m;
	baton_sem_t *go;
};

static void tz_holder(void *arg)
{
	struct tz_held *h = arg;

	TC_CHECK_RC(baton_mutex_lock(h->m, -1), BATON_OK);
	TC_CHECK_RC(baton_sem_acquire(h->go, 1, TC_MS(20000)), BATON_OK);
	TC_CHECK_RC(baton_mutex_unlock(h->m), BATON_OK);
	TC_CHECK_RC(baton_sem_release(h->go, 1), BATON_OK);
}

static void tz_mutex_held(baton_sched_t *s)
{
	struct tz_held h;
	struct baton_task_attr ta;

	baton_task_attr_init(&ta);
	TC_CHECK_RC(baton_mutex_create(&h.m), BATON_OK);
	TC_CHECK_RC(baton_sem_create(&h.go, 0), BATON_OK);
	TC_CHECK_RC(baton_sched_spawn(s, &ta, tz_holder, &h), BATON_OK);
	for (int i = 0; i < 1000 && baton_mutex_lock(h.m, 0) == BATON_OK; i++) {
		TC_CHECK_RC(baton_mutex_unlock(h.m), BATON_OK); /* not taken yet */
		TC_CHECK_RC(baton_sched_yield(), BATON_OK);
	}
	TC_CHECK_RC(baton_mutex_lock(h.m, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_sem_release(h.go, 1), BATON_OK);
	TC_CHECK_RC(baton_sem_acquire(h.go, 1, TC_MS(20000)), BATON_OK);
	TC_CHECK_RC(baton_mutex_destroy(h.m), BATON_OK);
	TC_CHECK_RC(baton_sem_destroy(h.go), BATON_OK);
}

static void tz_count(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
}

static void tz_stage(baton_sched_t *s)
{
	struct baton_stage_attr a = BATON_STAGE_ATTR_INIT;
	struct baton_gate_attr ga = BATON_GATE_ATTR_INIT;
	struct baton_gate_pass p1 = BATON_GATE_PASS_INIT, p2 = BATON_GATE_PASS_INIT;
	baton_stage_t *st;
	baton_gate_t *pass;
	baton_pool_t *pool;

	TC_CHECK_RC(baton_pool_create(&pool, "tz", 1), BATON_OK);
	TC_CHECK_RC(baton_pool_acquire(pool, 1, 0), BATON_OK);
	TC_CHECK_RC(baton_pool_acquire(pool, 1, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_pool_release(pool, 1), BATON_OK);
	TC_CHECK_RC(baton_pool_destroy(pool), BATON_OK);

	/* A handler slot and a one-item queue fill up: handlers run only once
	 * this task lets the worker go. */
	a.name = "tz";
	a.fn = tz_count;
	a.queue_capacity = 1;
	TC_CHECK_RC(baton_stage_create(&st, s, &a), BATON_OK);
	int rc = BATON_OK;
	for (int i = 0; i < 8 && rc == BATON_OK; i++)
		rc = baton_stage_submit(st, NULL, 0);
	TC_CHECK_RC(rc, BATON_EAGAIN);
	TC_CHECK_RC(baton_stage_close(st), BATON_OK);
	TC_CHECK_RC(baton_stage_drain(st, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_stage_drain(st, TC_MS(20000)), BATON_OK);
	TC_CHECK_RC(baton_stage_destroy(st), BATON_OK);

	ga.name = "tz-pass";
	TC_CHECK_RC(baton_gate_create(&pass, &ga), BATON_OK);
	TC_CHECK_RC(baton_gate_enter(pass, &p1, 0), BATON_OK);
	TC_CHECK_RC(baton_gate_enter(pass, &p2, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_gate_leave(&p1, NULL), BATON_OK);
	TC_CHECK_RC(baton_gate_drain(pass, 0), BATON_OK);
	TC_CHECK_RC(baton_gate_destroy(pass), BATON_OK);
}

static void tz_io(void)
{
	static char chunk[65536];
	baton_io_t *a, *b;
	int sv[2];
	size_t n;
	int rc = BATON_OK;

	TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	TC_CHECK_RC(baton_io_open(&a, sv[0], true), BATON_OK);
	TC_CHECK_RC(baton_io_open(&b, sv[1], true), BATON_OK);
	TC_CHECK_RC(baton_io_read(a, chunk, sizeof(chunk), 0, &n), BATON_EAGAIN);
	/* Fill the socket's buffers: a bounded number of tries. */
	for (int i = 0; i < 1000 && rc == BATON_OK; i++)
		rc = baton_io_write(a, chunk, sizeof(chunk), 0, &n);
	TC_CHECK_RC(rc, BATON_EAGAIN);
	TC_CHECK_RC(baton_io_wait(b, BATON_IO_WRITABLE, 0), BATON_OK);
	TC_CHECK_RC(baton_io_close(a), BATON_OK);
	TC_CHECK_RC(baton_io_close(b), BATON_OK);

	TC_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	TC_CHECK_RC(baton_io_open(&a, sv[0], true), BATON_OK);
	TC_CHECK_RC(baton_io_wait(a, BATON_IO_READABLE, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_io_close(a), BATON_OK);
	close(sv[1]);
}

/* accept with nothing pending; connect to a listener whose queue is full
 * (it accepts nobody), so that a handshake stays in progress. */
static void tz_io_tcp(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	baton_io_t *lis, *c[16];
	unsigned short port = 0;
	int fd, again = 0, rc;

	TC_CHECK_RC(baton_io_listen_socket("127.0.0.1", &port, 1, &fd), BATON_OK);
	TC_CHECK_RC(baton_io_open(&lis, fd, true), BATON_OK);
	TC_CHECK_RC(baton_io_accept(lis, &fd, 0), BATON_EAGAIN);
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (int i = 0; i < 16; i++) {
		int cfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

		TC_CHECK(cfd >= 0);
		TC_CHECK_RC(baton_io_open(&c[i], cfd, true), BATON_OK);
		rc = baton_io_connect(c[i], (struct sockaddr *)&sin, sizeof(sin), 0);
		TC_CHECK(rc == BATON_OK || rc == BATON_EAGAIN);
		again += rc == BATON_EAGAIN;
	}
	TC_CHECK(again > 0); /* the queue holds two at most */
	for (int i = 0; i < 16; i++)
		TC_CHECK_RC(baton_io_close(c[i]), BATON_OK);
	TC_CHECK_RC(baton_io_close(lis), BATON_OK);
}

static void tz_ec(void)
{
	baton_ec_t ec;

	TC_CHECK_RC(baton_ec_init(&ec), BATON_OK);
	TC_CHECK_RC(baton_ec_wait(&ec, baton_ec_value(&ec), 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_ec_wait_mp(&ec, baton_ec_value(&ec), 0), BATON_EAGAIN);
}

/* A reader that stays in its section until told: a grace period cannot
 * end meanwhile. */
struct tz_reader {
	baton_smr_t *d;
	int in, leave; /* atomic */
};

static void *tz_read(void *arg)
{
	struct tz_reader *r = arg;
	int tok = baton_smr_read_lock(r->d);

	/* Release/acquire: the waiter sees the section begun. */
	__atomic_store_n(&r->in, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&r->leave, __ATOMIC_ACQUIRE))
		usleep(1000);
	baton_smr_read_unlock(r->d, tok);
	return NULL;
}

static void tz_smr(void)
{
	struct tz_reader r = { NULL, 0, 0 };
	pthread_t th;

	TC_CHECK_RC(baton_smr_create(&r.d), BATON_OK);
	TC_CHECK(pthread_create(&th, NULL, tz_read, &r) == 0);
	for (int i = 0; i < 20000 && !__atomic_load_n(&r.in, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	TC_CHECK_RC(baton_smr_synchronize(r.d, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_smr_retire(r.d, malloc(16), free), BATON_OK);
	TC_CHECK_RC(baton_smr_barrier(r.d, 0), BATON_EAGAIN);
	__atomic_store_n(&r.leave, 1, __ATOMIC_RELEASE);
	TC_CHECK(pthread_join(th, NULL) == 0);
	TC_CHECK_RC(baton_smr_synchronize(r.d, TC_MS(20000)), BATON_OK);
	TC_CHECK_RC(baton_smr_destroy(r.d), BATON_OK);
}

static void tz_task(void *arg)
{
	tz_chan();
	tz_sync();
	tz_mutex_held(arg);
	tz_stage(arg);
	tz_io();
	tz_io_tcp();
	tz_ec();
	tz_smr();
	TC_CHECK_RC(baton_sched_sleep(0), BATON_OK); /* 0 yields */
}

static void test_timeout_zero_is_eagain(void **state)
{
	baton_sched_t *s = tc_sched(1);

	tc_reset();
	tc_watchdog_phase(60, "timeout 0 in every module");
	tc_spawn(s, state, 0, tz_task, s);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* Outside tasks: the calls that take timeout 0 from any thread (the same
 * checks, recorded the same way). */
static void test_timeout_zero_outside_tasks(void **state)
{
	(void)state;
	tc_reset();
	tz_chan();
	tz_sync();
	tz_ec();
	tz_smr();
	TC_VERDICT();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_timeout_zero_is_eagain),
		cmocka_unit_test(test_timeout_zero_outside_tasks),
	};

	return cmocka_run_group_tests_name("timeout_zero", tests, NULL, NULL);
}
