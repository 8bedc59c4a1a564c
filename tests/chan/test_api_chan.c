/* SPDX-License-Identifier: MIT */
/* The claims of baton/chan.h a caller relies on, read from the header and
 * checked: create, send, receive, close, len, destroy and select refuse
 * what they list (EINVAL), destroy(NULL) is a no-op; outside tasks a call
 * that would block says BATON_ENOSCHED while timeout 0 works from any
 * thread (EAGAIN when it would block); a receive may discard; closing
 * wakes every waiter with BATON_ECLOSED, receivers drain the buffer first,
 * sending on or closing a closed channel says BATON_ECLOSED; destroy
 * refuses while a task waits (BATON_EBUSY); a timeout > 0 ends in
 * BATON_ETIMEDOUT; select reports ECLOSED in the op, accepts a channel in
 * several ops, and chooses at random among ready ops. */
#include "check.h"

#include <pthread.h>

#include <baton/chan.h>

static void test_bad_input(void **state)
{
	struct baton_chan_op op = { NULL, BATON_CHAN_RECV, NULL, 0 };
	struct baton_chan_op ops[BATON_CHAN_SELECT_MAX + 1];
	baton_chan_t *ch;
	size_t idx;
	void *v;

	(void)state;
	assert_int_equal(baton_chan_create(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_chan_create(&ch, BATON_CHAN_MAX_CAPACITY + 1), BATON_EINVAL);
	assert_int_equal(baton_chan_send(NULL, NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_chan_recv(NULL, &v, 0), BATON_EINVAL);
	assert_int_equal(baton_chan_close(NULL), BATON_EINVAL);
	assert_int_equal(baton_chan_len(NULL), BATON_EINVAL);
	assert_int_equal(baton_chan_destroy(NULL), BATON_OK);

	assert_int_equal(baton_chan_create(&ch, 1), BATON_OK);
	assert_int_equal(baton_chan_select(NULL, 1, 0, &idx), BATON_EINVAL);
	op.chan = ch;
	assert_int_equal(baton_chan_select(&op, 1, 0, NULL), BATON_EINVAL);
	assert_int_equal(baton_chan_select(&op, 0, 0, &idx), BATON_EINVAL);
	for (size_t i = 0; i < BATON_CHAN_SELECT_MAX + 1; i++)
		ops[i] = op;
	assert_int_equal(baton_chan_select(ops, BATON_CHAN_SELECT_MAX + 1, 0, &idx), BATON_EINVAL);
	/* the largest n allowed is accepted (nothing ready: EAGAIN) */
	assert_int_equal(baton_chan_select(ops, BATON_CHAN_SELECT_MAX, 0, &idx), BATON_EAGAIN);
	op.chan = NULL;
	assert_int_equal(baton_chan_select(&op, 1, 0, &idx), BATON_EINVAL);
	op.chan = ch;
	op.dir = 2;
	assert_int_equal(baton_chan_select(&op, 1, 0, &idx), BATON_EINVAL);
	op.dir = -1;
	assert_int_equal(baton_chan_select(&op, 1, 0, &idx), BATON_EINVAL);
	/* a failed call changed nothing */
	assert_int_equal(baton_chan_len(ch), 0);
	assert_int_equal(baton_chan_destroy(ch), BATON_OK);
}

/* Rule 1: timeout 0 never blocks and works from any thread; a call that
 * would block says ENOSCHED outside tasks. */
static void *plain_thread(void *arg)
{
	baton_chan_t *ch = arg;
	void *v = NULL;
	long bad = 0;

	bad += baton_chan_recv(ch, &v, 0) != BATON_OK || v != (void *)7;
	bad += baton_chan_recv(ch, &v, 0) != BATON_EAGAIN;
	bad += baton_chan_send(ch, (void *)8, 0) != BATON_OK;
	bad += baton_chan_send(ch, (void *)9, 0) != BATON_EAGAIN;
	bad += baton_chan_recv(ch, &v, TC_MS(1)) != BATON_ENOSCHED;
	return (void *)bad;
}

static void test_outside_tasks(void **state)
{
	struct baton_chan_op op;
	baton_chan_t *ch, *un;
	pthread_t th;
	void *bad, *v = NULL;
	size_t idx = 99;

	(void)state;
	assert_int_equal(baton_chan_create(&ch, 1), BATON_OK);
	assert_int_equal(baton_chan_create(&un, 0), BATON_OK);
	assert_int_equal(baton_chan_send(ch, (void *)7, 0), BATON_OK);
	assert_int_equal(baton_chan_send(ch, (void *)7, -1), BATON_ENOSCHED);
	assert_int_equal(baton_chan_len(ch), 1);
	assert_int_equal(pthread_create(&th, NULL, plain_thread, ch), 0);
	assert_int_equal(pthread_join(th, &bad), 0);
	assert_null(bad);
	assert_int_equal(baton_chan_len(ch), 1);
	/* a receive may discard: value NULL */
	assert_int_equal(baton_chan_recv(ch, NULL, 0), BATON_OK);
	assert_int_equal(baton_chan_len(ch), 0);
	/* unbuffered, nobody on the other side: timeout 0 says EAGAIN */
	assert_int_equal(baton_chan_send(un, (void *)1, 0), BATON_EAGAIN);
	assert_int_equal(baton_chan_recv(un, &v, 0), BATON_EAGAIN);
	assert_int_equal(baton_chan_recv(un, &v, TC_MS(1)), BATON_ENOSCHED);
	op = (struct baton_chan_op){ un, BATON_CHAN_RECV, NULL, 0 };
	assert_int_equal(baton_chan_select(&op, 1, TC_MS(1), &idx), BATON_ENOSCHED);
	assert_int_equal(baton_chan_select(&op, 1, 0, &idx), BATON_EAGAIN);
	assert_int_equal(baton_chan_destroy(ch), BATON_OK);
	assert_int_equal(baton_chan_destroy(un), BATON_OK);
}

/* Rule 3 on a buffer, from a plain thread (timeout 0): the buffered
 * messages first, then ECLOSED; send and a second close say ECLOSED. */
static void test_close_drains(void **state)
{
	baton_chan_t *ch;
	void *v = NULL;

	(void)state;
	assert_int_equal(baton_chan_create(&ch, 4), BATON_OK);
	assert_int_equal(baton_chan_send(ch, (void *)1, 0), BATON_OK);
	assert_int_equal(baton_chan_send(ch, (void *)2, 0), BATON_OK);
	assert_int_equal(baton_chan_close(ch), BATON_OK);
	assert_int_equal(baton_chan_send(ch, (void *)3, 0), BATON_ECLOSED);
	assert_int_equal(baton_chan_close(ch), BATON_ECLOSED);
	assert_int_equal(baton_chan_len(ch), 2);
	assert_int_equal(baton_chan_recv(ch, &v, 0), BATON_OK);
	assert_ptr_equal(v, (void *)1);
	assert_int_equal(baton_chan_recv(ch, &v, 0), BATON_OK);
	assert_ptr_equal(v, (void *)2);
	assert_int_equal(baton_chan_recv(ch, &v, 0), BATON_ECLOSED);
	assert_int_equal(baton_chan_recv(ch, &v, 0), BATON_ECLOSED);
	assert_int_equal(baton_chan_destroy(ch), BATON_OK);
}

/* Rule 3 and rule 4 with tasks: a receiver and a sender wait; destroy
 * says EBUSY meanwhile; close wakes both with ECLOSED; a timeout > 0 ends
 * in ETIMEDOUT. */
static baton_chan_t *w_un, *w_full;
static int woke;

static void pc_recv_waiter(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_chan_recv(w_un, NULL, -1), BATON_ECLOSED);
	woke++;
}

static void pc_send_waiter(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_chan_send(w_full, (void *)2, -1), BATON_ECLOSED);
	woke++;
}

static void pc_closer(void *arg)
{
	int64_t t0;

	(void)arg;
	TC_CHECK_RC(baton_chan_send(w_full, (void *)1, 0), BATON_OK);
	t0 = tc_now();
	TC_CHECK_RC(baton_chan_send(w_full, (void *)1, TC_MS(10)), BATON_ETIMEDOUT);
	TC_CHECK(tc_now() - t0 >= TC_MS(10));
	TC_CHECK_RC(baton_chan_recv(w_un, NULL, TC_MS(1)), BATON_ETIMEDOUT);
	TC_CHECK_RC(baton_sched_spawn(baton_sched_self(), NULL, pc_recv_waiter, NULL), BATON_OK);
	TC_CHECK_RC(baton_sched_spawn(baton_sched_self(), NULL, pc_send_waiter, NULL), BATON_OK);
	TC_CHECK_RC(baton_sched_sleep(TC_MS(5)), BATON_OK);
	TC_CHECK_RC(baton_chan_destroy(w_un), BATON_EBUSY);
	TC_CHECK_RC(baton_chan_destroy(w_full), BATON_EBUSY);
	TC_CHECK(woke == 0);
	TC_CHECK_RC(baton_chan_close(w_un), BATON_OK);
	TC_CHECK_RC(baton_chan_close(w_full), BATON_OK);
	TC_CHECK_RC(baton_sched_sleep(TC_MS(5)), BATON_OK);
	TC_CHECK(woke == 2);
}

static void test_close_wakes_waiters(void **state)
{
	void *v;

	(void)state;
	woke = 0;
	assert_int_equal(baton_chan_create(&w_un, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&w_full, 1), BATON_OK);
	tc_run_one("chan close wakes waiters", pc_closer, NULL);
	assert_int_equal(woke, 2);
	/* the message buffered before the close is still there */
	assert_int_equal(baton_chan_recv(w_full, &v, 0), BATON_OK);
	assert_ptr_equal(v, (void *)1);
	assert_int_equal(baton_chan_destroy(w_un), BATON_OK);
	assert_int_equal(baton_chan_destroy(w_full), BATON_OK);
}

/* Select: a closed channel completes its op with result ECLOSED; the same
 * channel in two ops; several ready ops: each is chosen some of the time. */
static void test_select(void **state)
{
	baton_chan_t *a, *b;
	struct baton_chan_op ops[2];
	size_t idx, hits[2] = { 0, 0 };
	int rounds = 400;

	(void)state;
	assert_int_equal(baton_chan_create(&a, 1), BATON_OK);
	assert_int_equal(baton_chan_create(&b, 1), BATON_OK);
	/* one channel twice: a send and a receive on an empty buffer; only
	 * the send can proceed */
	ops[0] = (struct baton_chan_op){ a, BATON_CHAN_RECV, NULL, 99 };
	ops[1] = (struct baton_chan_op){ a, BATON_CHAN_SEND, (void *)5, 99 };
	assert_int_equal(baton_chan_select(ops, 2, 0, &idx), BATON_OK);
	assert_int_equal(idx, 1);
	assert_int_equal(ops[1].result, BATON_OK);
	assert_int_equal(baton_chan_len(a), 1);
	/* now only the receive can */
	assert_int_equal(baton_chan_select(ops, 2, 0, &idx), BATON_OK);
	assert_int_equal(idx, 0);
	assert_int_equal(ops[0].result, BATON_OK);
	assert_ptr_equal(ops[0].value, (void *)5);
	/* two ready receives: both chosen over many rounds */
	for (int i = 0; i < rounds; i++) {
		assert_int_equal(baton_chan_send(a, (void *)1, 0), BATON_OK);
		assert_int_equal(baton_chan_send(b, (void *)2, 0), BATON_OK);
		ops[0] = (struct baton_chan_op){ a, BATON_CHAN_RECV, NULL, 99 };
		ops[1] = (struct baton_chan_op){ b, BATON_CHAN_RECV, NULL, 99 };
		assert_int_equal(baton_chan_select(ops, 2, 0, &idx), BATON_OK);
		assert_true(idx < 2);
		assert_ptr_equal(ops[idx].value, (void *)(uintptr_t)(idx + 1));
		hits[idx]++;
		assert_int_equal(baton_chan_recv(idx ? a : b, NULL, 0), BATON_OK);
	}
	assert_true(hits[0] > rounds / 10 && hits[1] > rounds / 10);
	/* a closed channel completes the op, with ECLOSED as its result */
	assert_int_equal(baton_chan_close(b), BATON_OK);
	ops[0] = (struct baton_chan_op){ a, BATON_CHAN_RECV, NULL, 99 };
	ops[1] = (struct baton_chan_op){ b, BATON_CHAN_SEND, (void *)3, 99 };
	assert_int_equal(baton_chan_select(ops, 2, 0, &idx), BATON_OK);
	assert_int_equal(idx, 1);
	assert_int_equal(ops[1].result, BATON_ECLOSED);
	ops[1].dir = BATON_CHAN_RECV;
	assert_int_equal(baton_chan_select(ops, 2, 0, &idx), BATON_OK);
	assert_int_equal(idx, 1);
	assert_int_equal(ops[1].result, BATON_ECLOSED);
	assert_int_equal(baton_chan_destroy(a), BATON_OK);
	assert_int_equal(baton_chan_destroy(b), BATON_OK);
}

/* Select with a timeout in a task: ETIMEDOUT when nothing comes. */
static void pc_select_timeout(void *arg)
{
	struct baton_chan_op op = { arg, BATON_CHAN_RECV, NULL, 0 };
	size_t idx;
	int64_t t0 = tc_now();

	TC_CHECK_RC(baton_chan_select(&op, 1, TC_MS(10), &idx), BATON_ETIMEDOUT);
	TC_CHECK(tc_now() - t0 >= TC_MS(10));
}

static void test_select_timeout(void **state)
{
	baton_chan_t *ch;

	(void)state;
	assert_int_equal(baton_chan_create(&ch, 0), BATON_OK);
	tc_run_one("select timeout", pc_select_timeout, ch);
	assert_int_equal(baton_chan_destroy(ch), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_input),    cmocka_unit_test(test_outside_tasks),
		cmocka_unit_test(test_close_drains), cmocka_unit_test(test_close_wakes_waiters),
		cmocka_unit_test(test_select),       cmocka_unit_test(test_select_timeout),
	};

	return cmocka_run_group_tests_name("promise_chan", tests, NULL, NULL);
}
