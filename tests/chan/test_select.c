/* SPDX-License-Identifier: MIT */
/* Select (baton_chan_select in include/baton/chan.h): argument checks, a
 * ready case is taken, a random choice among several ready cases, blocking
 * until one case is ready with the other cases' waiters removed afterwards,
 * timeouts, closed channels, the same channel in two cases, more distinct
 * channels than fit one lock set, and selects racing on 2 workers over
 * shared channels with exact message accounting. */
#include "check.h"

#include <stdbool.h>

static struct baton_chan_op op(baton_chan_t *ch, int dir, void *value)
{
	struct baton_chan_op o = { ch, dir, value, 12345 };

	return o;
}

/* --- arguments, try-selects from a plain thread --------------------------- */

static void test_select_args(void **state)
{
	baton_chan_t *a, *b;
	struct baton_chan_op ops[BATON_CHAN_SELECT_MAX + 1];
	size_t idx = 99;

	(void)state;
	assert_int_equal(baton_chan_create(&a, 1), BATON_OK);
	assert_int_equal(baton_chan_create(&b, 0), BATON_OK);
	for (int i = 0; i <= BATON_CHAN_SELECT_MAX; i++)
		ops[i] = op(b, BATON_CHAN_RECV, NULL);
	assert_int_equal(baton_chan_select(NULL, 1, 0, &idx), BATON_EINVAL);
	assert_int_equal(baton_chan_select(ops, 1, 0, NULL), BATON_EINVAL);
	assert_int_equal(baton_chan_select(ops, 0, 0, &idx), BATON_EINVAL);
	assert_int_equal(baton_chan_select(ops, BATON_CHAN_SELECT_MAX + 1, 0, &idx), BATON_EINVAL);
	assert_int_equal(baton_chan_select(ops, BATON_CHAN_SELECT_MAX, 0, &idx), BATON_EAGAIN);
	ops[1].chan = NULL;
	assert_int_equal(baton_chan_select(ops, 2, 0, &idx), BATON_EINVAL);
	ops[1] = op(a, 2, NULL);
	assert_int_equal(baton_chan_select(ops, 2, 0, &idx), BATON_EINVAL);
	ops[1] = op(a, -1, NULL);
	assert_int_equal(baton_chan_select(ops, 2, 0, &idx), BATON_EINVAL);
	/* Blocking outside a task. */
	ops[1] = op(a, BATON_CHAN_RECV, NULL);
	assert_int_equal(baton_chan_select(ops, 2, -1, &idx), BATON_ENOSCHED);
	assert_int_equal(baton_chan_select(ops, 2, TC_MS(1), &idx), BATON_ENOSCHED);
	assert_int_equal(idx, 99);
	/* A try-select that completes: the send into a's buffer. */
	ops[0] = op(b, BATON_CHAN_RECV, NULL);
	ops[1] = op(a, BATON_CHAN_SEND, (void *)5);
	assert_int_equal(baton_chan_select(ops, 2, 0, &idx), BATON_OK);
	assert_int_equal(idx, 1);
	assert_int_equal(ops[1].result, BATON_OK);
	assert_int_equal(baton_chan_len(a), 1);
	/* Now a's receive is ready. */
	ops[1] = op(a, BATON_CHAN_RECV, NULL);
	assert_int_equal(baton_chan_select(ops, 2, 0, &idx), BATON_OK);
	assert_int_equal(idx, 1);
	assert_int_equal(ops[1].result, BATON_OK);
	assert_ptr_equal(ops[1].value, (void *)5);
	/* A closed channel's case is ready: result ECLOSED. */
	assert_int_equal(baton_chan_close(b), BATON_OK);
	ops[0] = op(b, BATON_CHAN_RECV, NULL);
	assert_int_equal(baton_chan_select(ops, 2, 0, &idx), BATON_OK);
	assert_int_equal(idx, 0);
	assert_int_equal(ops[0].result, BATON_ECLOSED);
	ops[0] = op(b, BATON_CHAN_SEND, NULL);
	assert_int_equal(baton_chan_select(ops, 1, 0, &idx), BATON_OK);
	assert_int_equal(ops[0].result, BATON_ECLOSED);
	assert_int_equal(baton_chan_destroy(a), BATON_OK);
	assert_int_equal(baton_chan_destroy(b), BATON_OK);
}

/* Several cases ready: each gets picked over many selects. */
static void test_select_random(void **state)
{
	baton_chan_t *ch[3];
	int picked[3] = { 0, 0, 0 };
	size_t idx;

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_int_equal(baton_chan_create(&ch[i], 1), BATON_OK);
	for (int it = 0; it < 600; it++) {
		struct baton_chan_op ops[3];

		for (int i = 0; i < 3; i++) {
			if (baton_chan_len(ch[i]) == 0)
				assert_int_equal(
					baton_chan_send(ch[i], (void *)(intptr_t)(i + 1), 0),
					BATON_OK);
			ops[i] = op(ch[i], BATON_CHAN_RECV, NULL);
		}
		assert_int_equal(baton_chan_select(ops, 3, 0, &idx), BATON_OK);
		assert_true(idx < 3);
		assert_ptr_equal(ops[idx].value, (void *)(intptr_t)(idx + 1));
		picked[idx]++;
	}
	for (int i = 0; i < 3; i++) {
		if (picked[i] < 100)
			fail_msg("case %d picked %d times of 600", i, picked[i]);
		assert_int_equal(baton_chan_destroy(ch[i]), BATON_OK);
	}
}

/* A select's receive on a full buffered channel with a blocked sender
 * takes the oldest message, and the sender's message joins the buffer at
 * its end: FIFO holds across select and plain send. */
static baton_chan_t *fullch;

static void full_sender(void *arg)
{
	(void)arg;
	for (intptr_t i = 1; i <= 2; i++)
		TC_CHECK_RC(baton_chan_send(fullch, (void *)i, 0), BATON_OK);
	TC_CHECK_RC(baton_chan_send(fullch, (void *)3, TC_MS(10000)), BATON_OK);
}

static void full_receiver(void *arg)
{
	baton_chan_t *other;
	size_t idx;

	(void)arg;
	while (baton_chan_len(fullch) < 2)
		baton_sched_yield();
	baton_sched_sleep(TC_MS(1)); /* the sender blocks on the full buffer */
	TC_CHECK_RC(baton_chan_create(&other, 0), BATON_OK);
	for (intptr_t want = 1; want <= 3; want++) {
		struct baton_chan_op ops[2] = { op(other, BATON_CHAN_RECV, NULL),
						op(fullch, BATON_CHAN_RECV, NULL) };

		TC_CHECK_RC(baton_chan_select(ops, 2, TC_MS(10000), &idx), BATON_OK);
		TC_CHECK(idx == 1);
		TC_CHECK(ops[1].value == (void *)want);
	}
	TC_CHECK(baton_chan_len(fullch) == 0);
	TC_CHECK_RC(baton_chan_destroy(other), BATON_OK);
}

static void check_full_buffer(void **state, unsigned workers)
{
	baton_sched_t *s = tc_sched(workers);

	tc_reset();
	tc_watchdog_phase(20, "select_full_buffer");
	assert_int_equal(baton_chan_create(&fullch, 2), BATON_OK);
	tc_spawn(s, state, 0, full_sender, NULL);
	tc_spawn(s, state, (int)workers - 1, full_receiver, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_chan_destroy(fullch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_full_buffer_1(void **state)
{
	check_full_buffer(state, 1);
}
static void test_full_buffer_2(void **state)
{
	check_full_buffer(state, 2);
}

/* --- blocking selects --------------------------------------------------- */

struct blk {
	baton_chan_t *a, *b, *c;
	int phase; /* selector is about to block (atomic) */
};

static struct blk bk;

/* Receives on a or b; b becomes ready. Afterwards a's waiter must be gone:
 * a try-send on a finds no receiver. */
static void blk_recv_selector(void *arg)
{
	struct baton_chan_op ops[2] = { op(bk.a, BATON_CHAN_RECV, NULL),
					op(bk.b, BATON_CHAN_RECV, NULL) };
	size_t idx = 99;

	(void)arg;
	__atomic_store_n(&bk.phase, 1, __ATOMIC_RELEASE);
	TC_CHECK_RC(baton_chan_select(ops, 2, TC_MS(10000), &idx), BATON_OK);
	TC_CHECK(idx == 1);
	TC_CHECK(ops[1].result == BATON_OK);
	TC_CHECK(ops[1].value == (void *)42);
	TC_CHECK(ops[0].result == 12345); /* untouched */
	TC_CHECK_RC(baton_chan_send(bk.a, (void *)1, 0), BATON_EAGAIN);

	/* Send on a or b; a receiver takes b. b's... a's waiter must go. */
	ops[0] = op(bk.a, BATON_CHAN_SEND, (void *)7);
	ops[1] = op(bk.b, BATON_CHAN_SEND, (void *)8);
	__atomic_store_n(&bk.phase, 2, __ATOMIC_RELEASE);
	TC_CHECK_RC(baton_chan_select(ops, 2, TC_MS(10000), &idx), BATON_OK);
	TC_CHECK(idx == 1);
	TC_CHECK(ops[1].result == BATON_OK);
	TC_CHECK_RC(baton_chan_recv(bk.a, NULL, 0), BATON_EAGAIN);

	/* Timeout: nothing comes; no waiter stays behind. */
	ops[0] = op(bk.a, BATON_CHAN_RECV, NULL);
	ops[1] = op(bk.c, BATON_CHAN_SEND, (void *)9);
	int64_t t0 = tc_now();
	TC_CHECK_RC(baton_chan_select(ops, 2, TC_MS(5), &idx), BATON_ETIMEDOUT);
	TC_CHECK(tc_now() - t0 >= TC_MS(5));
	TC_CHECK_RC(baton_chan_send(bk.a, NULL, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_chan_recv(bk.c, NULL, 0), BATON_EAGAIN);

	/* A close wakes the select: result ECLOSED on that case. */
	ops[0] = op(bk.a, BATON_CHAN_RECV, NULL);
	ops[1] = op(bk.c, BATON_CHAN_RECV, NULL);
	__atomic_store_n(&bk.phase, 3, __ATOMIC_RELEASE);
	TC_CHECK_RC(baton_chan_select(ops, 2, TC_MS(10000), &idx), BATON_OK);
	TC_CHECK(idx == 1);
	TC_CHECK(ops[1].result == BATON_ECLOSED);
	TC_CHECK_RC(baton_chan_send(bk.a, NULL, 0), BATON_EAGAIN);
	__atomic_store_n(&bk.phase, 4, __ATOMIC_RELEASE);
}

static void wait_phase(int p)
{
	while (__atomic_load_n(&bk.phase, __ATOMIC_ACQUIRE) < p)
		baton_sched_sleep(100000);
	baton_sched_sleep(TC_MS(1)); /* it has blocked by now, or will soon */
}

static void blk_partner(void *arg)
{
	void *v = NULL;

	(void)arg;
	wait_phase(1);
	TC_CHECK_RC(baton_chan_send(bk.b, (void *)42, TC_MS(10000)), BATON_OK);
	wait_phase(2);
	TC_CHECK_RC(baton_chan_recv(bk.b, &v, TC_MS(10000)), BATON_OK);
	TC_CHECK(v == (void *)8);
	wait_phase(3);
	TC_CHECK_RC(baton_chan_close(bk.c), BATON_OK);
}

static void check_blocking(void **state, unsigned workers)
{
	baton_sched_t *s = tc_sched(workers);

	tc_reset();
	tc_watchdog_phase(30, "select_blocking");
	memset(&bk, 0, sizeof(bk));
	assert_int_equal(baton_chan_create(&bk.a, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&bk.b, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&bk.c, 0), BATON_OK);
	tc_spawn(s, state, 0, blk_recv_selector, NULL);
	tc_spawn(s, state, (int)workers - 1, blk_partner, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(bk.phase, 4);
	assert_int_equal(baton_chan_destroy(bk.a), BATON_OK);
	assert_int_equal(baton_chan_destroy(bk.b), BATON_OK);
	assert_int_equal(baton_chan_destroy(bk.c), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_blocking_1(void **state)
{
	check_blocking(state, 1);
}
static void test_blocking_2(void **state)
{
	check_blocking(state, 2);
}

/* --- the same channel in two cases --------------------------------------- */

static baton_chan_t *same;
static int same_done;

static void same_selector(void *arg)
{
	struct baton_chan_op ops[3] = { op(same, BATON_CHAN_RECV, NULL),
					op(same, BATON_CHAN_RECV, NULL),
					op(same, BATON_CHAN_SEND, (void *)3) };
	size_t idx = 99;

	(void)arg;
	/* A send and a receive on one unbuffered channel must not pair up
	 * with each other: nothing else is there, so it times out. */
	TC_CHECK_RC(baton_chan_select(&ops[1], 2, TC_MS(3), &idx), BATON_ETIMEDOUT);
	/* Two receive cases on one channel: one takes the message. */
	__atomic_store_n(&same_done, 1, __ATOMIC_RELEASE);
	TC_CHECK_RC(baton_chan_select(ops, 2, TC_MS(10000), &idx), BATON_OK);
	TC_CHECK(idx < 2);
	if (idx < 2)
		TC_CHECK(ops[idx].value == (void *)77);
	/* The other case's waiter is gone. */
	TC_CHECK_RC(baton_chan_send(same, NULL, 0), BATON_EAGAIN);
	__atomic_store_n(&same_done, 2, __ATOMIC_RELEASE);
}

static void same_sender(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&same_done, __ATOMIC_ACQUIRE) < 1)
		baton_sched_sleep(100000);
	TC_CHECK_RC(baton_chan_send(same, (void *)77, TC_MS(10000)), BATON_OK);
}

static void check_same_channel(void **state, unsigned workers)
{
	baton_sched_t *s = tc_sched(workers);

	tc_reset();
	tc_watchdog_phase(20, "same_channel");
	same_done = 0;
	assert_int_equal(baton_chan_create(&same, 0), BATON_OK);
	tc_spawn(s, state, 0, same_selector, NULL);
	tc_spawn(s, state, (int)workers - 1, same_sender, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(same_done, 2);
	assert_int_equal(baton_chan_destroy(same), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_same_channel_1(void **state)
{
	check_same_channel(state, 1);
}
static void test_same_channel_2(void **state)
{
	check_same_channel(state, 2);
}

/* --- many distinct channels ----------------------------------------------- */

#define WIDE 16

static baton_chan_t *wide[WIDE];

static void wide_selector(void *arg)
{
	struct baton_chan_op ops[WIDE];
	size_t idx = 99;

	(void)arg;
	for (int i = 0; i < WIDE; i++)
		ops[i] = op(wide[i], BATON_CHAN_RECV, NULL);
	/* The header allows up to BATON_CHAN_SELECT_MAX cases. */
	TC_CHECK_RC(baton_chan_select(ops, WIDE, TC_MS(10000), &idx), BATON_OK);
	TC_CHECK(idx == WIDE - 1);
}

static void wide_sender(void *arg)
{
	(void)arg;
	baton_sched_sleep(TC_MS(1));
	TC_CHECK_RC(baton_chan_send(wide[WIDE - 1], (void *)1, TC_MS(200)), BATON_OK);
}

static void test_wide_select(void **state)
{
	baton_sched_t *s = tc_sched(1);

	tc_reset();
	tc_watchdog_phase(20, "wide_select");
	for (int i = 0; i < WIDE; i++)
		assert_int_equal(baton_chan_create(&wide[i], 0), BATON_OK);
	tc_spawn(s, state, 0, wide_selector, NULL);
	tc_spawn(s, state, 0, wide_sender, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	for (int i = 0; i < WIDE; i++)
		assert_int_equal(baton_chan_destroy(wide[i]), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	TC_VERDICT();
}

/* --- selects racing on 2 workers ------------------------------------------ */

/* Producers select-send onto two channels, consumers select-receive from
 * both (plus a short timeout); a message is received exactly once, and no
 * select consumes a message for a case it did not complete. */
#define RS_PROD 3
#define RS_CONS 3

struct race {
	baton_chan_t *ch[2];
	long per;
	int left;
	long count, sum;
	unsigned char *seen;
};

static struct race rs;

static void rs_producer(void *arg)
{
	long base = (long)(intptr_t)arg * rs.per;

	for (long i = 0; i < rs.per; i++) {
		void *m = (void *)(intptr_t)(base + i + 1);
		struct baton_chan_op ops[2] = { op(rs.ch[0], BATON_CHAN_SEND, m),
						op(rs.ch[1], BATON_CHAN_SEND, m) };
		size_t idx;
		int rc;

		while ((rc = baton_chan_select(ops, 2, TC_MS(1), &idx)) == BATON_ETIMEDOUT)
			;
		if (rc != BATON_OK || ops[idx].result != BATON_OK) {
			TC_FAIL("producer: select-send failed");
			break;
		}
	}
	if (__atomic_sub_fetch(&rs.left, 1, __ATOMIC_ACQ_REL) == 0) {
		TC_CHECK_RC(baton_chan_close(rs.ch[0]), BATON_OK);
		TC_CHECK_RC(baton_chan_close(rs.ch[1]), BATON_OK);
	}
}

static void rs_consumer(void *arg)
{
	bool open[2] = { true, true };
	int spins = 0;

	(void)arg;
	while (open[0] || open[1]) {
		struct baton_chan_op ops[2];
		size_t n = 0, idx;
		int rc;

		for (int i = 0; i < 2; i++)
			if (open[i])
				ops[n++] = op(rs.ch[i], BATON_CHAN_RECV, NULL);
		rc = baton_chan_select(ops, n, TC_MS(2), &idx);
		if (rc == BATON_ETIMEDOUT) {
			if (++spins > 5000) {
				TC_FAIL("consumer: nothing for 10 s (lost wake-up?)");
				return;
			}
			continue;
		}
		spins = 0;
		if (rc != BATON_OK) {
			TC_FAIL("consumer: select failed");
			return;
		}
		if (ops[idx].result == BATON_ECLOSED) {
			open[ops[idx].chan == rs.ch[1]] = false;
			continue;
		}
		long m = (long)(intptr_t)ops[idx].value - 1;

		if (m < 0 || m >= RS_PROD * rs.per) {
			TC_FAIL("consumer: value out of range");
			continue;
		}
		if (__atomic_fetch_add(&rs.seen[m], 1, __ATOMIC_RELAXED))
			TC_FAIL("a message was received twice");
		__atomic_add_fetch(&rs.count, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&rs.sum, m + 1, __ATOMIC_RELAXED);
	}
}

static void check_race(void **state, size_t cap)
{
	baton_sched_t *s = tc_sched(2);
	long n;

	tc_reset();
	tc_watchdog_phase(60, "select_race");
	memset(&rs, 0, sizeof(rs));
	rs.per = tc_scale(5000, 300);
	rs.left = RS_PROD;
	n = RS_PROD * rs.per;
	rs.seen = calloc((size_t)n, 1);
	assert_non_null(rs.seen);
	for (int i = 0; i < 2; i++)
		assert_int_equal(baton_chan_create(&rs.ch[i], cap), BATON_OK);
	for (intptr_t i = 0; i < RS_PROD; i++)
		tc_spawn(s, state, (int)(i & 1), rs_producer, (void *)i);
	for (intptr_t i = 0; i < RS_CONS; i++)
		tc_spawn(s, state, (int)(~i & 1), rs_consumer, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(rs.count, n);
	assert_int_equal(rs.sum, n * (n + 1) / 2);
	free(rs.seen);
	for (int i = 0; i < 2; i++)
		assert_int_equal(baton_chan_destroy(rs.ch[i]), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_race_unbuffered(void **state)
{
	check_race(state, 0);
}
static void test_race_buffered(void **state)
{
	check_race(state, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_select_args),   cmocka_unit_test(test_select_random),
		TC_MODEL_TESTS(test_full_buffer_1),   TC_MODEL_TESTS(test_full_buffer_2),
		TC_MODEL_TESTS(test_blocking_1),      TC_MODEL_TESTS(test_blocking_2),
		TC_MODEL_TESTS(test_same_channel_1),  TC_MODEL_TESTS(test_same_channel_2),
		TC_MODEL_TESTS(test_race_unbuffered), TC_MODEL_TESTS(test_race_buffered),
		TC_MODEL_TESTS(test_wide_select),
	};

	return cmocka_run_group_tests_name("select", tests, NULL, NULL);
}
