/* SPDX-License-Identifier: MIT */
/* Channels (include/baton/chan.h): argument checks, the try variants from a
 * plain thread, unbuffered hand-off, buffered FIFO order and capacity,
 * timeouts that leave the channel consistent (a timed-out message is never
 * received later), close waking every waiter, draining after close, destroy
 * with waiters, and many producers and consumers on 2 workers with every
 * message received exactly once. Both coroutine models, 1 and 2 workers. */
#include "check.h"

#include <stdbool.h>

/* --- argument checks and the try variants from a plain thread ------------- */

static void test_chan_args(void **state)
{
	baton_chan_t *ch;
	void *v;

	(void)state;
	assert_int_equal(baton_chan_create(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_chan_create(&ch, BATON_CHAN_MAX_CAPACITY + 1), BATON_EINVAL);
	assert_int_equal(baton_chan_send(NULL, NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_chan_recv(NULL, &v, 0), BATON_EINVAL);
	assert_int_equal(baton_chan_close(NULL), BATON_EINVAL);
	assert_int_equal(baton_chan_len(NULL), BATON_EINVAL);
	assert_int_equal(baton_chan_destroy(NULL), BATON_OK);
	assert_int_equal(baton_chan_create(&ch, 0), BATON_OK);
	/* Blocking calls outside a task. */
	assert_int_equal(baton_chan_send(ch, NULL, -1), BATON_ENOSCHED);
	assert_int_equal(baton_chan_recv(ch, &v, TC_MS(1)), BATON_ENOSCHED);
	assert_int_equal(baton_chan_destroy(ch), BATON_OK);
}

static void test_chan_try_plain_thread(void **state)
{
	baton_chan_t *ch;
	void *v = (void *)1;

	(void)state;
	assert_int_equal(baton_chan_create(&ch, 0), BATON_OK);
	assert_int_equal(baton_chan_send(ch, &v, 0), BATON_EAGAIN);
	assert_int_equal(baton_chan_recv(ch, &v, 0), BATON_EAGAIN);
	assert_ptr_equal(v, (void *)1); /* untouched on failure */
	assert_int_equal(baton_chan_len(ch), 0);
	assert_int_equal(baton_chan_destroy(ch), BATON_OK);

	assert_int_equal(baton_chan_create(&ch, 3), BATON_OK);
	for (intptr_t i = 1; i <= 3; i++)
		assert_int_equal(baton_chan_send(ch, (void *)i, 0), BATON_OK);
	assert_int_equal(baton_chan_len(ch), 3);
	assert_int_equal(baton_chan_send(ch, (void *)4, 0), BATON_EAGAIN);
	assert_int_equal(baton_chan_len(ch), 3);
	/* FIFO, around the ring a few times. */
	for (intptr_t i = 1; i <= 20; i++) {
		assert_int_equal(baton_chan_recv(ch, &v, 0), BATON_OK);
		assert_ptr_equal(v, (void *)i);
		assert_int_equal(baton_chan_send(ch, (void *)(i + 3), 0), BATON_OK);
	}
	assert_int_equal(baton_chan_recv(ch, NULL, 0), BATON_OK); /* discard */
	assert_int_equal(baton_chan_len(ch), 2);
	assert_int_equal(baton_chan_close(ch), BATON_OK);
	assert_int_equal(baton_chan_close(ch), BATON_ECLOSED);
	assert_int_equal(baton_chan_send(ch, NULL, 0), BATON_ECLOSED);
	assert_int_equal(baton_chan_recv(ch, &v, 0), BATON_OK);
	assert_ptr_equal(v, (void *)22);
	assert_int_equal(baton_chan_recv(ch, &v, 0), BATON_OK);
	assert_ptr_equal(v, (void *)23);
	assert_int_equal(baton_chan_recv(ch, &v, 0), BATON_ECLOSED);
	assert_int_equal(baton_chan_recv(ch, &v, -1), BATON_ENOSCHED);
	assert_int_equal(baton_chan_destroy(ch), BATON_OK);
}

/* --- unbuffered hand-off ------------------------------------------------- */

struct pc {
	baton_chan_t *ch;
	long n;
	long cap;
	long received; /* consumer's count (atomic) */
	long sum;
};

static void handoff_producer(void *arg)
{
	struct pc *p = arg;

	for (long i = 1; i <= p->n; i++) {
		TC_CHECK_RC(baton_chan_send(p->ch, (void *)(intptr_t)i, TC_MS(5000)), BATON_OK);
		/* Unbuffered: the receiver has taken it, so it has counted
		 * every earlier one; buffered: all but cap of them. */
		TC_CHECK(__atomic_load_n(&p->received, __ATOMIC_ACQUIRE) >= i - 1 - p->cap);
	}
}

static void handoff_consumer(void *arg)
{
	struct pc *p = arg;
	void *v;

	for (long i = 1; i <= p->n; i++) {
		int rc = baton_chan_recv(p->ch, &v, TC_MS(5000));

		if (rc != BATON_OK) {
			TC_FAIL("hand-off: recv failed (lost wake-up?)");
			return;
		}
		TC_CHECK((intptr_t)v == i);
		p->sum += (intptr_t)v;
		__atomic_store_n(&p->received, i, __ATOMIC_RELEASE);
		if (i % 7 == 0)
			baton_sched_yield();
	}
}

static void check_handoff(void **state, unsigned workers, size_t cap)
{
	baton_sched_t *s = tc_sched(workers);
	/* Cross-worker hand-offs cost a futex wake each on a loaded box. */
	struct pc p = { NULL, workers > 1 ? tc_scale(1000, 200) : tc_scale(5000, 500), (long)cap, 0,
			0 };

	tc_reset();
	tc_watchdog_phase(30, "handoff");
	assert_int_equal(baton_chan_create(&p.ch, cap), BATON_OK);
	/* On 2 workers, put them on different workers. */
	tc_spawn(s, state, 0, handoff_consumer, &p);
	tc_spawn(s, state, (int)workers - 1, handoff_producer, &p);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(p.sum, p.n * (p.n + 1) / 2);
	assert_int_equal(baton_chan_len(p.ch), 0);
	assert_int_equal(baton_chan_destroy(p.ch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_handoff_1(void **state)
{
	check_handoff(state, 1, 0);
}
static void test_handoff_2(void **state)
{
	check_handoff(state, 2, 0);
}
static void test_buffered_2(void **state)
{
	check_handoff(state, 2, 3);
}

/* --- buffered: capacity, FIFO, blocked sender fills the freed slot -------- */

static baton_chan_t *bch;
static int buf_log[16], buf_len;
static int buf_filled;

static void buf_sender(void *arg)
{
	(void)arg;
	for (intptr_t i = 1; i <= 4; i++)
		TC_CHECK_RC(baton_chan_send(bch, (void *)i, 0), BATON_OK);
	TC_CHECK_RC(baton_chan_send(bch, (void *)5, 0), BATON_EAGAIN);
	TC_CHECK(baton_chan_len(bch) == 4);
	__atomic_store_n(&buf_filled, 1, __ATOMIC_RELEASE);
	/* Blocks until the receiver makes room; 5 and 6 come after 1..4. */
	TC_CHECK_RC(baton_chan_send(bch, (void *)5, TC_MS(5000)), BATON_OK);
	TC_CHECK_RC(baton_chan_send(bch, (void *)6, TC_MS(5000)), BATON_OK);
	TC_CHECK_RC(baton_chan_close(bch), BATON_OK);
}

static void buf_receiver(void *arg)
{
	void *v;
	int rc;

	(void)arg;
	while (!__atomic_load_n(&buf_filled, __ATOMIC_ACQUIRE))
		baton_sched_sleep(100000);
	baton_sched_sleep(TC_MS(1)); /* the sender blocks meanwhile, or not */
	while ((rc = baton_chan_recv(bch, &v, TC_MS(5000))) == BATON_OK)
		buf_log[buf_len++] = (int)(intptr_t)v;
	TC_CHECK_RC(rc, BATON_ECLOSED);
}

static void check_buffered_fifo(void **state, unsigned workers)
{
	baton_sched_t *s = tc_sched(workers);

	tc_reset();
	tc_watchdog_phase(20, "buffered_fifo");
	buf_len = 0;
	buf_filled = 0;
	assert_int_equal(baton_chan_create(&bch, 4), BATON_OK);
	tc_spawn(s, state, 0, buf_sender, NULL);
	tc_spawn(s, state, (int)workers - 1, buf_receiver, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(buf_len, 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(buf_log[i], i + 1);
	assert_int_equal(baton_chan_destroy(bch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_buffered_fifo_1(void **state)
{
	check_buffered_fifo(state, 1);
}
static void test_buffered_fifo_2(void **state)
{
	check_buffered_fifo(state, 2);
}

/* --- timeouts -------------------------------------------------------------- */

static void timeout_task(void *arg)
{
	baton_chan_t *ch = arg;
	int64_t t0 = tc_now();
	void *v = (void *)7;

	TC_CHECK_RC(baton_chan_recv(ch, &v, TC_MS(5)), BATON_ETIMEDOUT);
	TC_CHECK(tc_now() - t0 >= TC_MS(5));
	TC_CHECK(v == (void *)7);
	t0 = tc_now();
	TC_CHECK_RC(baton_chan_send(ch, (void *)1, TC_MS(5)), BATON_ETIMEDOUT);
	TC_CHECK(tc_now() - t0 >= TC_MS(5));
	/* The timed-out message is gone: nothing to receive. */
	TC_CHECK_RC(baton_chan_recv(ch, &v, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_chan_recv(ch, &v, TC_MS(1)), BATON_ETIMEDOUT);
	TC_CHECK(baton_chan_len(ch) == 0);
}

static void test_timeouts(void **state)
{
	baton_sched_t *s = tc_sched(1);
	baton_chan_t *ch;

	tc_reset();
	tc_watchdog_phase(20, "timeouts");
	assert_int_equal(baton_chan_create(&ch, 0), BATON_OK);
	tc_spawn(s, state, 0, timeout_task, ch);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	/* No waiter left behind by the timeouts. */
	assert_int_equal(baton_chan_send(ch, NULL, 0), BATON_EAGAIN);
	assert_int_equal(baton_chan_destroy(ch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* Senders with short timeouts race receivers with short timeouts on 2
 * workers: a message whose send returned ETIMEDOUT is never received, and
 * every message whose send returned OK is received exactly once. */
#define TO_SENDERS 4
#define TO_MSGS 400

struct to_race {
	baton_chan_t *ch;
	baton_chan_t *never;                      /* a select's other case: nobody sends */
	unsigned char sent[TO_SENDERS * TO_MSGS]; /* 1 OK, 2 timed out */
	unsigned char got[TO_SENDERS * TO_MSGS];  /* times received */
	int senders_left;
	long n;
};

static struct to_race tor;

static void to_sender(void *arg)
{
	intptr_t id = (intptr_t)arg;
	uint64_t x = 0x9E3779B97F4A7C15ULL * (uint64_t)(id + 1);

	for (long i = 0; i < tor.n; i++) {
		long m = id * TO_MSGS + i;
		int rc = baton_chan_send(tor.ch, (void *)(intptr_t)(m + 1),
					 1 + (int64_t)(tc_rand(&x) % 200000));

		TC_CHECK(rc == BATON_OK || rc == BATON_ETIMEDOUT);
		tor.sent[m] = rc == BATON_OK ? 1 : 2;
	}
	if (__atomic_sub_fetch(&tor.senders_left, 1, __ATOMIC_ACQ_REL) == 0)
		TC_CHECK_RC(baton_chan_close(tor.ch), BATON_OK);
}

static void to_receiver(void *arg)
{
	uint64_t x = 0xD1B54A32D192ED03ULL * (uint64_t)((intptr_t)arg + 1);
	void *v;
	int rc;

	for (;;) {
		int64_t to = 1 + (int64_t)(tc_rand(&x) % 150000);

		if (tc_rand(&x) & 1) {
			rc = baton_chan_recv(tor.ch, &v, to);
		} else { /* a select's claim races the timer the same way */
			struct baton_chan_op ops[2] = {
				{ tor.never, BATON_CHAN_RECV, NULL, 0 },
				{ tor.ch, BATON_CHAN_RECV, NULL, 0 },
			};
			size_t idx = 9;

			rc = baton_chan_select(ops, 2, to, &idx);
			if (rc == BATON_OK) {
				TC_CHECK(idx == 1);
				rc = ops[1].result;
				v = ops[1].value;
			}
		}
		if (rc == BATON_ECLOSED)
			return;
		if (rc == BATON_ETIMEDOUT)
			continue;
		TC_CHECK_RC(rc, BATON_OK);
		if (rc == BATON_OK) {
			long m = (long)(intptr_t)v - 1;

			TC_CHECK(m >= 0 && m < TO_SENDERS * TO_MSGS);
			if (m >= 0 && m < TO_SENDERS * TO_MSGS)
				__atomic_add_fetch(&tor.got[m], 1, __ATOMIC_RELAXED);
		}
	}
}

static void check_timeout_race(void **state, size_t cap)
{
	baton_sched_t *s = tc_sched(2);
	long ok = 0, got = 0;

	tc_reset();
	tc_watchdog_phase(60, "timeout_race");
	memset(&tor, 0, sizeof(tor));
	tor.n = tc_scale(TO_MSGS, 60);
	tor.senders_left = TO_SENDERS;
	assert_int_equal(baton_chan_create(&tor.ch, cap), BATON_OK);
	assert_int_equal(baton_chan_create(&tor.never, 0), BATON_OK);
	for (intptr_t i = 0; i < TO_SENDERS; i++) {
		tc_spawn(s, state, (int)(i & 1), to_sender, (void *)i);
		tc_spawn(s, state, (int)(~i & 1), to_receiver, (void *)i);
	}
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	for (long m = 0; m < TO_SENDERS * TO_MSGS; m++) {
		if (tor.got[m] > 1)
			fail_msg("message %ld received %d times", m, tor.got[m]);
		if (tor.sent[m] == 2 && tor.got[m])
			fail_msg("message %ld: send timed out, yet it was "
				 "received",
				 m);
		if (tor.sent[m] == 1 && !tor.got[m])
			fail_msg("message %ld: send succeeded, never received", m);
		ok += tor.sent[m] == 1;
		got += tor.got[m];
	}
	assert_int_equal(ok, got);
	assert_int_equal(baton_chan_destroy(tor.ch), BATON_OK);
	assert_int_equal(baton_chan_destroy(tor.never), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_timeout_race_unbuffered(void **state)
{
	check_timeout_race(state, 0);
}
static void test_timeout_race_buffered(void **state)
{
	check_timeout_race(state, 2);
}

/* --- close ------------------------------------------------------------------ */

struct closing {
	baton_chan_t *rch, *sch; /* receivers block on rch, senders on sch */
	int waiting;             /* tasks about to block (atomic) */
	int eclosed;             /* tasks that got ECLOSED (atomic) */
	bool all_parked;         /* one worker: all blocked before the closer */
};

static struct closing cl;

static void cl_receiver(void *arg)
{
	void *v;

	(void)arg;
	__atomic_add_fetch(&cl.waiting, 1, __ATOMIC_RELAXED);
	TC_CHECK_RC(baton_chan_recv(cl.rch, &v, TC_MS(10000)), BATON_ECLOSED);
	__atomic_add_fetch(&cl.eclosed, 1, __ATOMIC_RELAXED);
}

static void cl_sender(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&cl.waiting, 1, __ATOMIC_RELAXED);
	TC_CHECK_RC(baton_chan_send(cl.sch, (void *)1, TC_MS(10000)), BATON_ECLOSED);
	__atomic_add_fetch(&cl.eclosed, 1, __ATOMIC_RELAXED);
}

static void cl_closer(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&cl.waiting, __ATOMIC_RELAXED) < 12)
		baton_sched_sleep(100000);
	baton_sched_sleep(TC_MS(2)); /* they are parked by now */
	/* Destroy refuses while tasks wait. */
	if (cl.all_parked) {
		TC_CHECK_RC(baton_chan_destroy(cl.rch), BATON_EBUSY);
		TC_CHECK_RC(baton_chan_destroy(cl.sch), BATON_EBUSY);
	}
	TC_CHECK_RC(baton_chan_close(cl.rch), BATON_OK);
	TC_CHECK_RC(baton_chan_close(cl.sch), BATON_OK);
	TC_CHECK_RC(baton_chan_close(cl.sch), BATON_ECLOSED);
	TC_CHECK_RC(baton_chan_send(cl.rch, NULL, TC_MS(1)), BATON_ECLOSED);
	TC_CHECK_RC(baton_chan_recv(cl.rch, NULL, TC_MS(1)), BATON_ECLOSED);
}

static void check_close_wakes_all(void **state, unsigned workers, size_t cap)
{
	baton_sched_t *s = tc_sched(workers);

	tc_reset();
	tc_watchdog_phase(30, "close_wakes_all");
	memset(&cl, 0, sizeof(cl));
	cl.all_parked = workers == 1;
	assert_int_equal(baton_chan_create(&cl.rch, cap), BATON_OK);
	assert_int_equal(baton_chan_create(&cl.sch, cap), BATON_OK);
	/* Fill the senders' channel so that they block. */
	for (size_t i = 0; i < cap; i++)
		assert_int_equal(baton_chan_send(cl.sch, NULL, 0), BATON_OK);
	for (int i = 0; i < 6; i++) {
		tc_spawn(s, state, i % (int)workers, cl_receiver, NULL);
		tc_spawn(s, state, (i + 1) % (int)workers, cl_sender, NULL);
	}
	tc_spawn(s, state, 0, cl_closer, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(cl.eclosed, 12);
	/* The buffered messages are still there after close. */
	assert_int_equal(baton_chan_len(cl.sch), (long)cap);
	assert_int_equal(baton_chan_destroy(cl.rch), BATON_OK);
	assert_int_equal(baton_chan_destroy(cl.sch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_close_wakes_all_1(void **state)
{
	check_close_wakes_all(state, 1, 0);
}
static void test_close_wakes_all_2(void **state)
{
	check_close_wakes_all(state, 2, 0);
}
static void test_close_wakes_all_buf(void **state)
{
	check_close_wakes_all(state, 2, 2);
}

/* --- many producers and consumers on 2 workers ---------------------------- */

#define MP_PROD 4
#define MP_CONS 4

struct mpmc {
	baton_chan_t *ch;
	long per;   /* messages per producer */
	int left;   /* producers not done (atomic) */
	long count; /* received (atomic) */
	long sum;   /* of received values (atomic) */
	unsigned char *seen;
};

static struct mpmc mp;

static void mp_producer(void *arg)
{
	long base = (long)(intptr_t)arg * mp.per;

	for (long i = 0; i < mp.per; i++) {
		if (baton_chan_send(mp.ch, (void *)(intptr_t)(base + i + 1), TC_MS(10000)) !=
		    BATON_OK) {
			TC_FAIL("producer: send failed (lost wake-up?)");
			break;
		}
		if ((i & 15) == 0)
			baton_sched_yield();
	}
	if (__atomic_sub_fetch(&mp.left, 1, __ATOMIC_ACQ_REL) == 0)
		TC_CHECK_RC(baton_chan_close(mp.ch), BATON_OK);
}

static void mp_consumer(void *arg)
{
	void *v;
	int rc;

	(void)arg;
	while ((rc = baton_chan_recv(mp.ch, &v, TC_MS(10000))) == BATON_OK) {
		long m = (long)(intptr_t)v - 1;

		if (m < 0 || m >= MP_PROD * mp.per) {
			TC_FAIL("consumer: value out of range");
			continue;
		}
		if (__atomic_fetch_add(&mp.seen[m], 1, __ATOMIC_RELAXED))
			TC_FAIL("a message was received twice");
		__atomic_add_fetch(&mp.count, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&mp.sum, m + 1, __ATOMIC_RELAXED);
	}
	if (rc != BATON_ECLOSED)
		TC_FAIL("consumer: recv timed out (lost wake-up?)");
}

static void check_mpmc(void **state, size_t cap)
{
	baton_sched_t *s = tc_sched(2);
	long n;

	tc_reset();
	tc_watchdog_phase(60, "mpmc");
	memset(&mp, 0, sizeof(mp));
	mp.per = tc_scale(20000, 1000);
	mp.left = MP_PROD;
	n = MP_PROD * mp.per;
	mp.seen = calloc((size_t)n, 1);
	assert_non_null(mp.seen);
	assert_int_equal(baton_chan_create(&mp.ch, cap), BATON_OK);
	for (intptr_t i = 0; i < MP_PROD; i++)
		tc_spawn(s, state, BATON_SCHED_ANY_WORKER, mp_producer, (void *)i);
	for (intptr_t i = 0; i < MP_CONS; i++)
		tc_spawn(s, state, BATON_SCHED_ANY_WORKER, mp_consumer, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(mp.count, n);
	assert_int_equal(mp.sum, n * (n + 1) / 2);
	free(mp.seen);
	assert_int_equal(baton_chan_destroy(mp.ch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_mpmc_unbuffered(void **state)
{
	check_mpmc(state, 0);
}
static void test_mpmc_buffered(void **state)
{
	check_mpmc(state, 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chan_args),
		cmocka_unit_test(test_chan_try_plain_thread),
		TC_MODEL_TESTS(test_handoff_1),
		TC_MODEL_TESTS(test_handoff_2),
		TC_MODEL_TESTS(test_buffered_2),
		TC_MODEL_TESTS(test_buffered_fifo_1),
		TC_MODEL_TESTS(test_buffered_fifo_2),
		TC_MODEL_TESTS(test_timeouts),
		TC_MODEL_TESTS(test_timeout_race_unbuffered),
		TC_MODEL_TESTS(test_timeout_race_buffered),
		TC_MODEL_TESTS(test_close_wakes_all_1),
		TC_MODEL_TESTS(test_close_wakes_all_2),
		TC_MODEL_TESTS(test_close_wakes_all_buf),
		TC_MODEL_TESTS(test_mpmc_unbuffered),
		TC_MODEL_TESTS(test_mpmc_buffered),
	};

	return cmocka_run_group_tests_name("chan", tests, NULL, NULL);
}
