/* SPDX-License-Identifier: MIT */
/* Biased channels (src/chan/chan_internal.h): a channel used by the tasks
 * of one worker alone for a while is taken with plain stores; a second
 * user before that makes it shared without ceremony; the first use from
 * anywhere else after that turns the bias off for good, and nothing is
 * lost on the way: the
 * hand-over with a receiver parked on the bias worker, a sender arriving
 * while the bias worker's tasks hammer the channel, a plain thread's try,
 * a select from the other worker, and close from another worker. Both
 * coroutine models; the bias needs the asymmetric barrier, so where the
 * kernel refuses it (and under ThreadSanitizer) every channel is shared
 * from the start and the tests check that instead. */
#include "check.h"
#include "internal.h"

#include <stdbool.h>

enum { UNSET = 0, BIASED = 1, REVOKING = 2, SHARED = 3, CANDIDATE = 4 };

static int want_after_local_use(void)
{
	return baton__barrier_available() ? BIASED : SHARED;
}

static struct baton_task_attr bound(void **state, int worker)
{
	struct baton_task_attr a = tc_tattr(state, worker);

	a.flags = BATON_TASK_BOUND;
	return a;
}

/* Use ch alone from the calling task long enough to have it biased to
 * this task's worker (tries that find nothing count as uses). */
static void warm(baton_chan_t *ch)
{
	for (int i = 0; i < 100; i++)
		TC_CHECK_RC(baton_chan_recv(ch, NULL, 0), BATON_EAGAIN);
	if (baton__barrier_available())
		TC_CHECK(baton__chan_bias_state(ch) == BIASED);
}

/* --- a second user before the bias: shared, no barrier -------------------- */
static baton_chan_t *early_ch;

static void early_user(void *arg)
{
	(void)arg;
	TC_CHECK_RC(baton_chan_recv(early_ch, NULL, 0), BATON_EAGAIN);
}

static void test_second_user_early(void **state)
{
	baton_sched_t *s = tc_sched(2);
	struct baton_task_attr a0 = bound(state, 0), a1 = bound(state, 1);

	tc_reset();
	tc_watchdog_phase(60, "a second user before the bias");
	assert_int_equal(baton_chan_create(&early_ch, 0), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, &a0, early_user, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(baton__chan_bias_state(early_ch),
			 baton__barrier_available() ? CANDIDATE : SHARED);
	assert_int_equal(baton_sched_spawn(s, &a1, early_user, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton__chan_bias_state(early_ch), SHARED);
	assert_int_equal(baton_chan_destroy(early_ch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* --- tasks of one worker keep the bias ------------------------------------- */
static baton_chan_t *lc_a, *lc_b;
static long lc_rounds;

static void lc_ping(void *arg)
{
	void *v;

	(void)arg;
	for (long i = 0; i < lc_rounds; i++) {
		TC_CHECK_RC(baton_chan_send(lc_a, (void *)(intptr_t)(i + 1), TC_MS(10000)),
			    BATON_OK);
		TC_CHECK_RC(baton_chan_recv(lc_b, &v, TC_MS(10000)), BATON_OK);
		TC_CHECK((intptr_t)v == i + 2);
	}
}

static void lc_pong(void *arg)
{
	void *v;

	(void)arg;
	for (long i = 0; i < lc_rounds; i++) {
		TC_CHECK_RC(baton_chan_recv(lc_a, &v, -1), BATON_OK);
		TC_CHECK_RC(baton_chan_send(lc_b, (void *)((intptr_t)v + 1), -1), BATON_OK);
	}
}

static void test_local_keeps_bias(void **state)
{
	baton_sched_t *s = tc_sched(2);
	struct baton_task_attr a = bound(state, 0);

	tc_reset();
	tc_watchdog_phase(60, "local ping-pong");
	lc_rounds = tc_scale(20000, 500);
	assert_int_equal(baton_chan_create(&lc_a, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&lc_b, 0), BATON_OK);
	assert_int_equal(baton__chan_bias_state(lc_a), baton__barrier_available() ? UNSET : SHARED);
	assert_int_equal(baton_sched_spawn(s, &a, lc_ping, NULL), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, &a, lc_pong, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton__chan_bias_state(lc_a), want_after_local_use());
	assert_int_equal(baton__chan_bias_state(lc_b), want_after_local_use());
	/* Destroyed from the main thread: no revocation needed for that. */
	assert_int_equal(baton_chan_destroy(lc_a), BATON_OK);
	assert_int_equal(baton_chan_destroy(lc_b), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* --- a task of another worker arrives ------------------------------------- */
/* Worker 0: a pair hammers `local` (biased to worker 0) and a receiver
 * drains `shared`; worker 1: a sender starts sending into `shared`, which
 * the receiver on worker 0 made biased, and into `local` too, at some
 * point of the pair's exchange. Every message must arrive once. */
static baton_chan_t *ho_shared, *ho_local;
static long ho_msgs;
static int ho_recv_parked; /* atomic */
static long ho_local_seen; /* atomic */

static void ho_receiver(void *arg)
{
	void *v;

	(void)arg;
	warm(ho_shared);
	for (long i = 0; i < ho_msgs; i++) {
		if (i == 0)
			__atomic_store_n(&ho_recv_parked, 1, __ATOMIC_RELEASE);
		if (baton_chan_recv(ho_shared, &v, TC_MS(10000)) != BATON_OK) {
			TC_FAIL("receiver: recv failed (lost wake-up?)");
			return;
		}
		TC_CHECK((intptr_t)v == i + 1); /* one sender: in order */
	}
}

static void ho_sender(void *arg)
{
	(void)arg;
	/* Let the receiver take the bias and park first, most runs. */
	while (!__atomic_load_n(&ho_recv_parked, __ATOMIC_ACQUIRE))
		baton_sched_sleep(TC_MS(1) / 10);
	for (long i = 0; i < ho_msgs; i++) {
		if (baton_chan_send(ho_shared, (void *)(intptr_t)(i + 1), TC_MS(10000)) !=
		    BATON_OK) {
			TC_FAIL("sender: send failed (lost wake-up?)");
			return;
		}
		if (i == ho_msgs / 2)
			TC_CHECK_RC(baton_chan_send(ho_local, (void *)(intptr_t)-1, TC_MS(10000)),
				    BATON_OK);
	}
}

static void ho_local_a(void *arg)
{
	(void)arg;
	for (long i = 0; i < ho_msgs; i++)
		if (baton_chan_send(ho_local, (void *)(intptr_t)(i + 1), TC_MS(10000)) !=
		    BATON_OK) {
			TC_FAIL("local sender: send failed");
			return;
		}
}

static void ho_local_b(void *arg)
{
	void *v;

	(void)arg;
	for (long i = 0; i < ho_msgs + 1; i++) {
		if (baton_chan_recv(ho_local, &v, TC_MS(10000)) != BATON_OK) {
			TC_FAIL("local receiver: recv failed (lost wake-up?)");
			return;
		}
		__atomic_add_fetch(&ho_local_seen, (intptr_t)v, __ATOMIC_RELAXED);
	}
}

static void test_handover(void **state)
{
	int reps = (int)tc_scale(20, 4);

	for (int rep = 0; rep < reps; rep++) {
		baton_sched_t *s = tc_sched(2);
		struct baton_task_attr a0 = bound(state, 0), a1 = bound(state, 1);

		tc_reset();
		tc_watchdog_phase(60, "hand-over to another worker");
		ho_msgs = tc_scale(2000, 200);
		ho_recv_parked = 0;
		ho_local_seen = 0;
		assert_int_equal(baton_chan_create(&ho_shared, 0), BATON_OK);
		assert_int_equal(baton_chan_create(&ho_local, rep % 2 ? 4 : 0), BATON_OK);
		assert_int_equal(baton_sched_spawn(s, &a0, ho_receiver, NULL), BATON_OK);
		assert_int_equal(baton_sched_spawn(s, &a0, ho_local_b, NULL), BATON_OK);
		assert_int_equal(baton_sched_spawn(s, &a0, ho_local_a, NULL), BATON_OK);
		assert_int_equal(baton_sched_spawn(s, &a1, ho_sender, NULL), BATON_OK);
		assert_int_equal(baton_sched_run(s), BATON_OK);
		TC_VERDICT();
		assert_int_equal(ho_local_seen, ho_msgs * (ho_msgs + 1) / 2 - 1);
		assert_int_equal(baton__chan_bias_state(ho_shared), SHARED);
		assert_int_equal(baton__chan_bias_state(ho_local), SHARED);
		assert_int_equal(baton_chan_destroy(ho_shared), BATON_OK);
		assert_int_equal(baton_chan_destroy(ho_local), BATON_OK);
		assert_int_equal(baton_sched_destroy(s), BATON_OK);
	}
}

/* --- a plain thread's try, a select and a close from the other worker ----- */
static baton_chan_t *pt_ch, *sel_ch, *cl_ch;
static int pt_parked; /* atomic */

static void *pt_thread(void *arg)
{
	int64_t give_up = tc_now() + TC_MS(20000) * tc_time_scale();

	(void)arg;
	while (!__atomic_load_n(&pt_parked, __ATOMIC_ACQUIRE))
		sched_yield();
	/* The receiver parks right after it says so: retry until it has. */
	while (baton_chan_send(pt_ch, (void *)(intptr_t)42, 0) == BATON_EAGAIN) {
		if (tc_now() > give_up) {
			TC_FAIL("plain thread: try-send never found the receiver");
			break;
		}
		sched_yield();
	}
	return NULL;
}

static void pt_receiver(void *arg)
{
	void *v = NULL;

	(void)arg;
	/* Take the biases first, then wait. */
	warm(pt_ch);
	warm(sel_ch);
	warm(cl_ch);
	__atomic_store_n(&pt_parked, 1, __ATOMIC_RELEASE);
	TC_CHECK_RC(baton_chan_recv(pt_ch, &v, TC_MS(20000)), BATON_OK);
	TC_CHECK((intptr_t)v == 42);
	/* sel_ch: biased here by a receive that waits for the select. */
	TC_CHECK_RC(baton_chan_recv(sel_ch, &v, TC_MS(20000)), BATON_OK);
	TC_CHECK((intptr_t)v == 7);
	/* cl_ch: biased here, closed from worker 1 while we wait. */
	TC_CHECK_RC(baton_chan_recv(cl_ch, &v, TC_MS(20000)), BATON_ECLOSED);
}

static void other_worker(void *arg)
{
	struct baton_chan_op ops[1] = { { sel_ch, BATON_CHAN_SEND, (void *)(intptr_t)7, 0 } };
	size_t index = 9;

	(void)arg;
	/* After the receiver biased the channels (most runs). */
	while (!__atomic_load_n(&pt_parked, __ATOMIC_ACQUIRE))
		baton_sched_sleep(TC_MS(1) / 10);
	TC_CHECK_RC(baton_chan_select(ops, 1, TC_MS(20000), &index), BATON_OK);
	TC_CHECK(index == 0);
	TC_CHECK(ops[0].result == BATON_OK);
	baton_sched_sleep(TC_MS(5));
	TC_CHECK_RC(baton_chan_close(cl_ch), BATON_OK);
}

static void test_foreign_users(void **state)
{
	baton_sched_t *s = tc_sched(2);
	struct baton_task_attr a0 = bound(state, 0), a1 = bound(state, 1);
	pthread_t th;

	tc_reset();
	tc_watchdog_phase(60, "plain thread, select and close from elsewhere");
	pt_parked = 0;
	assert_int_equal(baton_chan_create(&pt_ch, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&sel_ch, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&cl_ch, 0), BATON_OK);
	assert_int_equal(pthread_create(&th, NULL, pt_thread, NULL), 0);
	assert_int_equal(baton_sched_spawn(s, &a0, pt_receiver, NULL), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, &a1, other_worker, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(pthread_join(th, NULL), 0);
	TC_VERDICT();
	assert_int_equal(baton__chan_bias_state(pt_ch), SHARED);
	assert_int_equal(baton__chan_bias_state(sel_ch), SHARED);
	assert_int_equal(baton__chan_bias_state(cl_ch), SHARED);
	assert_int_equal(baton_chan_destroy(pt_ch), BATON_OK);
	assert_int_equal(baton_chan_destroy(sel_ch), BATON_OK);
	assert_int_equal(baton_chan_destroy(cl_ch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* --- a waiter in a channel biased to its worker is unlinked there --------- */
/* A task parked in an untimed select with a waiter in a channel biased to
 * its worker W0, woken through another channel from W1, must not follow
 * its waker to W1: it unlinks its waiter under the raw `lock`, while W0's
 * tasks take the biased `own` (baton__chan_pin_waiter). The same for a
 * cancellable receive cancelled from W1. A task of W0 hammers the biased
 * channel meanwhile. Meaningful where channels are biased (not under
 * TSan, where everything is shared and the task may move). */
static baton_chan_t *pin_a, *pin_b;
static baton_task_t *pin_cancel_me;
static int pin_phase, pin_done;
static struct baton_worker *pin_w0, *pin_after_select, *pin_after_cancel;

static void pin_hammer(void *arg)
{
	(void)arg;
	/* Acquire/relaxed: a flag polled across workers. */
	while (!__atomic_load_n(&pin_done, __ATOMIC_ACQUIRE)) {
		TC_CHECK_RC(baton_chan_recv(pin_a, NULL, 0), BATON_EAGAIN);
		baton_sched_yield();
	}
}

static void pin_selector(void *arg)
{
	struct baton_chan_op ops[2] = {
		{ .chan = pin_a, .dir = BATON_CHAN_RECV },
		{ .chan = pin_b, .dir = BATON_CHAN_RECV },
	};
	size_t idx = 9;

	(void)arg;
	pin_w0 = baton__worker_get();
	warm(pin_a);
	TC_CHECK_RC(baton_chan_select(ops, 2, -1, &idx), BATON_OK);
	TC_CHECK(idx == 1 && ops[1].result == BATON_OK);
	pin_after_select = baton__worker_get();
	/* Now a cancellable untimed receive on the biased channel. */
	pin_cancel_me = baton_task_handle();
	__atomic_store_n(&pin_phase, 1, __ATOMIC_RELEASE);
	TC_CHECK_RC(baton_chan_recv(pin_a, NULL, -1), BATON_ECANCELED);
	pin_after_cancel = baton__worker_get();
	__atomic_store_n(&pin_done, 1, __ATOMIC_RELEASE);
}

static void pin_waker(void *arg)
{
	(void)arg;
	/* An unbuffered try send succeeds only once the selector is parked. */
	while (baton_chan_send(pin_b, (void *)1, 0) != BATON_OK)
		baton_sched_yield();
	while (!__atomic_load_n(&pin_phase, __ATOMIC_ACQUIRE))
		baton_sched_yield();
	/* Let it park (a cancel before the park is seen by it as well). */
	for (int i = 0; i < 1000; i++)
		baton_sched_yield();
	TC_CHECK_RC(baton_task_cancel(pin_cancel_me), BATON_OK);
}

static void test_waiter_stays_with_bias(void **state)
{
	baton_sched_t *s = tc_sched(2);
	struct baton_task_attr a0 = tc_tattr(state, 0);
	struct baton_task_attr b0 = bound(state, 0), b1 = bound(state, 1);

	tc_reset();
	tc_watchdog_phase(60, "select and cancel woken from another worker");
	pin_phase = pin_done = 0;
	pin_w0 = pin_after_select = pin_after_cancel = NULL;
	assert_int_equal(baton_chan_create(&pin_a, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&pin_b, 0), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, &a0, pin_selector, NULL), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, &b0, pin_hammer, NULL), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, &b1, pin_waker, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	if (baton__barrier_available()) {
		assert_ptr_equal(pin_after_select, pin_w0);
		assert_ptr_equal(pin_after_cancel, pin_w0);
		assert_int_equal(baton__chan_bias_state(pin_a), BIASED);
	}
	assert_int_equal(baton_chan_destroy(pin_a), BATON_OK);
	assert_int_equal(baton_chan_destroy(pin_b), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_local_keeps_bias),
		TC_MODEL_TESTS(test_second_user_early),
		TC_MODEL_TESTS(test_handover),
		TC_MODEL_TESTS(test_foreign_users),
		TC_MODEL_TESTS(test_waiter_stays_with_bias),
	};

	return cmocka_run_group_tests_name("chan_bias", tests, NULL, NULL);
}
