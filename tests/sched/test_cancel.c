/* SPDX-License-Identifier: MIT */
/*
 * Task cancellation (baton/sched.h): baton_task_cancel() wakes a task
 * blocked in every kind of blocking call with BATON_ECANCELED, in both
 * coroutine models, from a task of the same worker, of another worker and
 * from a plain thread; a task cancelled before it blocks fails its next
 * blocking call; and a cancel racing a wake-up either lets the value
 * through or cancels, never both and never neither.
 */
#include "check.h"

#include <sys/socket.h>
#include <unistd.h>

#include <baton/io.h>
#include <baton/stage.h>
#include <baton/sync.h>

enum op {
	OP_RECV,
	OP_SEND,
	OP_RECV_TIMED,
	OP_SELECT,
	OP_MUTEX,
	OP_SEM,
	OP_WG,
	OP_SLEEP,
	OP_IO,
	OP_GATE_ENTER,
	OP_POOL,
	OP_COUNT
};
static const char *const op_names[OP_COUNT] = {
	"chan recv",  "chan send",    "chan recv with timeout",
	"select",     "mutex",        "sem",
	"wait group", "sleep",        "io read",
	"gate enter", "pool acquire",
};

enum from { FROM_SAME_WORKER, FROM_OTHER_WORKER, FROM_THREAD };

struct blocked {
	enum op op;
	enum from from;
	baton_task_t *victim; /* published by the victim (atomic) */
	int held;             /* (atomic) the canceller holds mutex and slot */
	int cancel_made;      /* (atomic) the victim may return now */
	int rc;               /* the victim's blocking call's result */
	int done;             /* (atomic) */
	baton_chan_t *ch, *ch2;
	baton_mutex_t *mutex;
	baton_sem_t *sem;
	baton_wg_t *wg;
	baton_gate_t *gate;
	struct baton_gate_pass slot; /* the one the canceller keeps */
	baton_pool_t *pool;
	int sv[2];
};

static int block_in(struct blocked *b)
{
	void *v = NULL;

	switch (b->op) {
	case OP_RECV:
		return baton_chan_recv(b->ch, &v, -1);
	case OP_SEND:
		return baton_chan_send(b->ch, (void *)1, -1);
	case OP_RECV_TIMED:
		return baton_chan_recv(b->ch, &v, TC_MS(60000));
	case OP_SELECT: {
		struct baton_chan_op ops[2] = {
			{ .chan = b->ch, .dir = BATON_CHAN_RECV },
			{ .chan = b->ch2, .dir = BATON_CHAN_RECV },
		};
		size_t index = 9;
		int rc = baton_chan_select(ops, 2, -1, &index);

		TC_CHECK(rc != BATON_OK || index < 2);
		return rc;
	}
	case OP_MUTEX:
		return baton_mutex_lock(b->mutex, -1);
	case OP_SEM:
		return baton_sem_acquire(b->sem, 1, -1);
	case OP_WG:
		return baton_wg_wait(b->wg, -1);
	case OP_SLEEP:
		return baton_sched_sleep(TC_MS(60000));
	case OP_IO: {
		baton_io_t *io = NULL;
		char c;
		size_t n = 0;
		int rc = baton_io_open(&io, b->sv[0], false);

		if (rc != BATON_OK)
			return rc;
		rc = baton_io_read(io, &c, 1, -1, &n);
		baton_io_close(io);
		return rc;
	}
	case OP_GATE_ENTER: {
		struct baton_gate_pass p = BATON_GATE_PASS_INIT;
		int rc = baton_gate_enter(b->gate, &p, -1);

		if (rc == BATON_OK)
			baton_gate_leave(&p, NULL);
		return rc;
	}
	case OP_POOL:
		return baton_pool_acquire(b->pool, 1, -1);
	default:
		return BATON_EINVAL;
	}
}

static void victim_main(void *arg)
{
	struct blocked *b = arg;

	while (!__atomic_load_n(&b->held, __ATOMIC_ACQUIRE))
		baton_sched_sleep(TC_MS(1));
	/* Release: the canceller reads the handle, then cancels. */
	__atomic_store_n(&b->victim, baton_task_handle(), __ATOMIC_RELEASE);
	b->rc = block_in(b);
	TC_CHECK_RC(b->rc, BATON_ECANCELED);
	/* Sticky: the next blocking call fails at once, a try still works. */
	TC_CHECK_RC(baton_sched_sleep(TC_MS(60000)), BATON_ECANCELED);
	TC_CHECK(baton_task_cancelled() == 1);
	/* The handle must stay valid until both cancels are made (rule 2). */
	while (!__atomic_load_n(&b->cancel_made, __ATOMIC_ACQUIRE))
		baton_sched_yield();
	/* Release: the canceller checks the result after seeing done. */
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
}

static baton_task_t *wait_victim(struct blocked *b)
{
	baton_task_t *t;

	/* Acquire: pairs with the victim's release of its handle. */
	while ((t = __atomic_load_n(&b->victim, __ATOMIC_ACQUIRE)) == NULL) {
		if (b->from == FROM_THREAD)
			usleep(1000);
		else
			baton_sched_sleep(TC_MS(1));
	}
	return t;
}

static void pause_ms(struct blocked *b, int ms)
{
	if (b->from == FROM_THREAD)
		usleep((useconds_t)ms * 1000);
	else
		baton_sched_sleep(TC_MS(ms));
}

static void cancel_and_check(struct blocked *b)
{
	baton_task_t *t = wait_victim(b);
	int64_t deadline;

	pause_ms(b, 20); /* let it park (either way it must be cancelled) */
	TC_CHECK_RC(baton_task_cancel(t), BATON_OK);
	TC_CHECK_RC(baton_task_cancel(t), BATON_OK); /* a no-op, still fine */
	__atomic_store_n(&b->cancel_made, 1, __ATOMIC_RELEASE);
	deadline = tc_now() + TC_MS(10000) * tc_time_scale();
	while (!__atomic_load_n(&b->done, __ATOMIC_ACQUIRE)) {
		if (tc_now() > deadline) {
			TC_FAIL("the cancelled task did not wake");
			return;
		}
		pause_ms(b, 1);
	}
}

static void canceller_main(void *arg)
{
	struct blocked *b = arg;

	if (b->op == OP_GATE_ENTER)
		TC_CHECK_RC(baton_gate_enter(b->gate, &b->slot, 0), BATON_OK);
	if (b->op == OP_MUTEX)
		TC_CHECK_RC(baton_mutex_lock(b->mutex, 0), BATON_OK);
	__atomic_store_n(&b->held, 1, __ATOMIC_RELEASE);
	cancel_and_check(b);
	if (b->op == OP_GATE_ENTER)
		TC_CHECK_RC(baton_gate_leave(&b->slot, NULL), BATON_OK);
	if (b->op == OP_MUTEX) {
		TC_CHECK_RC(baton_mutex_unlock(b->mutex), BATON_OK);
		/* The cancelled waiter left the queue: the mutex is free. */
		TC_CHECK_RC(baton_mutex_lock(b->mutex, 0), BATON_OK);
		TC_CHECK_RC(baton_mutex_unlock(b->mutex), BATON_OK);
	}
	if (b->op == OP_SEND) /* the message was not delivered */
		TC_CHECK_RC(baton_chan_recv(b->ch, NULL, 0), BATON_EAGAIN);
	if (b->op == OP_SEM) {
		/* A unit released now is not taken by the gone waiter. */
		TC_CHECK_RC(baton_sem_release(b->sem, 1), BATON_OK);
		TC_CHECK(baton_sem_value(b->sem) == 1);
	}
}

static void *canceller_thread(void *arg)
{
	cancel_and_check(arg);
	return NULL;
}

static void run_blocked(void **state, enum op op, enum from from)
{
	struct blocked b = { .op = op, .from = from, .sv = { -1, -1 } };
	struct baton_gate_attr ga = BATON_GATE_ATTR_INIT;
	baton_sched_t *s = tc_sched(from == FROM_OTHER_WORKER ? 2 : 1);
	pthread_t th;

	tc_reset();
	assert_int_equal(baton_chan_create(&b.ch, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&b.ch2, 0), BATON_OK);
	assert_int_equal(baton_mutex_create(&b.mutex), BATON_OK);
	assert_int_equal(baton_sem_create(&b.sem, 0), BATON_OK);
	assert_int_equal(baton_wg_create(&b.wg), BATON_OK);
	assert_int_equal(baton_wg_add(b.wg, 1), BATON_OK);
	assert_int_equal(baton_pool_create(&b.pool, "cancel", 0), BATON_OK);
	ga.name = "cancel";
	ga.concurrency = 1;
	assert_int_equal(baton_gate_create(&b.gate, &ga), BATON_OK);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b.sv), 0);
	if (op == OP_MUTEX && from == FROM_THREAD) /* a thread holds it */
		assert_int_equal(baton_mutex_lock(b.mutex, 0), BATON_OK);
	if (op == OP_GATE_ENTER && from == FROM_THREAD)
		assert_int_equal(baton_gate_enter(b.gate, &b.slot, 0), BATON_OK);
	b.held = from == FROM_THREAD;

	tc_watchdog_phase(60, op_names[op]);
	tc_spawn(s, state, 0, victim_main, &b);
	if (from == FROM_THREAD)
		assert_int_equal(pthread_create(&th, NULL, canceller_thread, &b), 0);
	else
		tc_spawn(s, state, from == FROM_OTHER_WORKER ? 1 : 0, canceller_main, &b);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	if (from == FROM_THREAD) {
		pthread_join(th, NULL);
		if (op == OP_MUTEX)
			assert_int_equal(baton_mutex_unlock(b.mutex), BATON_OK);
		if (op == OP_GATE_ENTER)
			assert_int_equal(baton_gate_leave(&b.slot, NULL), BATON_OK);
	}
	alarm(0);
	if (tc_failed)
		fail_msg("%s, canceller %d: %s", op_names[op], (int)from, tc_fail_msg);
	assert_int_equal(b.rc, BATON_ECANCELED);
	assert_int_equal(baton_gate_close(b.gate), BATON_OK);
	assert_int_equal(baton_gate_destroy(b.gate), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	assert_int_equal(baton_wg_done(b.wg), BATON_OK);
	assert_int_equal(baton_wg_destroy(b.wg), BATON_OK);
	assert_int_equal(baton_pool_destroy(b.pool), BATON_OK);
	assert_int_equal(baton_sem_destroy(b.sem), BATON_OK);
	assert_int_equal(baton_mutex_destroy(b.mutex), BATON_OK);
	assert_int_equal(baton_chan_destroy(b.ch), BATON_OK);
	assert_int_equal(baton_chan_destroy(b.ch2), BATON_OK);
	close(b.sv[0]);
	close(b.sv[1]);
}

static void test_every_call_same_worker(void **state)
{
	for (int op = 0; op < OP_COUNT; op++)
		run_blocked(state, (enum op)op, FROM_SAME_WORKER);
}

static void test_every_call_other_worker(void **state)
{
	for (int op = 0; op < OP_COUNT; op++)
		run_blocked(state, (enum op)op, FROM_OTHER_WORKER);
}

static void test_every_call_from_thread(void **state)
{
	for (int op = 0; op < OP_COUNT; op++)
		run_blocked(state, (enum op)op, FROM_THREAD);
}

/* --- cancelled before it blocks ----------------------------------------- */
static void not_blocked_main(void *arg)
{
	baton_chan_t *ch = arg;
	void *v = NULL;

	TC_CHECK(baton_task_cancelled() == 0);
	TC_CHECK_RC(baton_task_cancel(baton_task_handle()), BATON_OK);
	TC_CHECK(baton_task_cancelled() == 1);
	/* A call that need not wait completes... */
	TC_CHECK_RC(baton_chan_send(ch, (void *)7, -1), BATON_OK);
	TC_CHECK_RC(baton_chan_recv(ch, &v, -1), BATON_OK);
	TC_CHECK(v == (void *)7);
	/* ...one that would wait fails at once, and takes nothing. */
	TC_CHECK_RC(baton_chan_recv(ch, &v, -1), BATON_ECANCELED);
	TC_CHECK_RC(baton_chan_recv(ch, &v, TC_MS(100)), BATON_ECANCELED);
	TC_CHECK_RC(baton_chan_recv(ch, &v, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_sched_sleep(TC_MS(1)), BATON_ECANCELED);
	TC_CHECK_RC(baton_sched_yield(), BATON_OK);
}

static void test_cancel_not_blocked(void **state)
{
	baton_sched_t *s = tc_sched(1);
	baton_chan_t *ch;

	tc_reset();
	assert_int_equal(baton_chan_create(&ch, 1), BATON_OK);
	tc_watchdog_phase(30, "cancel not blocked");
	tc_spawn(s, state, 0, not_blocked_main, ch);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	alarm(0);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	assert_int_equal(baton_chan_destroy(ch), BATON_OK);
}

/* --- a cancel racing a wake-up ------------------------------------------ */
struct race {
	baton_chan_t *ch; /* capacity 1: the sender never waits */
	baton_mutex_t *mutex;
	baton_task_t *victim; /* (atomic) */
	int go;               /* (atomic) both sides start together */
	int held;             /* (atomic) the waker holds the mutex */
	int cancel_made;      /* (atomic) the victim may return now */
	int rc;
	void *got;
	int done; /* (atomic) */
};

static void race_victim(void *arg)
{
	struct race *r = arg;

	if (r->mutex) /* the waker holds it first */
		while (!__atomic_load_n(&r->held, __ATOMIC_ACQUIRE))
			baton_sched_yield();
	__atomic_store_n(&r->victim, baton_task_handle(), __ATOMIC_RELEASE);
	if (r->mutex) {
		r->rc = baton_mutex_lock(r->mutex, -1);
		if (r->rc == BATON_OK)
			baton_mutex_unlock(r->mutex);
	} else {
		r->rc = baton_chan_recv(r->ch, &r->got, -1);
	}
	/* The handle must stay valid until the cancel is made (rule 2). */
	while (!__atomic_load_n(&r->cancel_made, __ATOMIC_ACQUIRE))
		baton_sched_yield();
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static void race_waker(void *arg)
{
	struct race *r = arg;

	if (r->mutex) {
		TC_CHECK_RC(baton_mutex_lock(r->mutex, 0), BATON_OK);
		__atomic_store_n(&r->held, 1, __ATOMIC_RELEASE);
	}
	while (!__atomic_load_n(&r->go, __ATOMIC_ACQUIRE))
		baton_sched_yield();
	if (r->mutex)
		TC_CHECK_RC(baton_mutex_unlock(r->mutex), BATON_OK);
	else
		TC_CHECK_RC(baton_chan_send(r->ch, (void *)42, -1), BATON_OK);
}

static void race_canceller(void *arg)
{
	struct race *r = arg;
	baton_task_t *t;

	while ((t = __atomic_load_n(&r->victim, __ATOMIC_ACQUIRE)) == NULL)
		baton_sched_yield();
	__atomic_store_n(&r->go, 1, __ATOMIC_RELEASE);
	TC_CHECK_RC(baton_task_cancel(t), BATON_OK);
	__atomic_store_n(&r->cancel_made, 1, __ATOMIC_RELEASE);
}

static void run_race(void **state, bool mutex, long rounds)
{
	baton_sched_t *s = tc_sched(2);
	int delivered = 0, cancelled = 0;

	tc_reset();
	tc_watchdog_phase(120, mutex ? "cancel racing an unlock" : "cancel racing a send");
	for (long i = 0; i < rounds; i++) {
		struct race r = { 0 };

		assert_int_equal(baton_chan_create(&r.ch, 1), BATON_OK);
		if (mutex)
			assert_int_equal(baton_mutex_create(&r.mutex), BATON_OK);
		tc_spawn(s, state, 0, race_victim, &r);
		tc_spawn(s, state, 1, race_waker, &r);
		tc_spawn(s, state, (int)(i & 1), race_canceller, &r);
		assert_int_equal(baton_sched_run(s), BATON_OK);
		TC_VERDICT();
		if (r.rc == BATON_OK) {
			delivered++;
			if (mutex) /* the victim took and gave back the lock */
				assert_int_equal(baton_mutex_lock(r.mutex, 0), BATON_OK);
			else /* the message reached it, once */
				assert_ptr_equal(r.got, (void *)42);
			assert_int_equal(baton_chan_len(r.ch), 0);
		} else {
			assert_int_equal(r.rc, BATON_ECANCELED);
			cancelled++;
			if (mutex) /* handed to nobody: free for us */
				assert_int_equal(baton_mutex_lock(r.mutex, 0), BATON_OK);
			else /* not lost: still in the channel */
				assert_int_equal(baton_chan_len(r.ch), 1);
		}
		if (mutex) {
			assert_int_equal(baton_mutex_unlock(r.mutex), BATON_OK);
			assert_int_equal(baton_mutex_destroy(r.mutex), BATON_OK);
		}
		assert_int_equal(baton_chan_destroy(r.ch), BATON_OK);
	}
	alarm(0);
	assert_int_equal(delivered + cancelled, rounds);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_race_send(void **state)
{
	run_race(state, false, tc_scale(TC_TSAN ? 300 : 3000, 200));
}

static void test_race_unlock(void **state)
{
	run_race(state, true, tc_scale(TC_TSAN ? 300 : 3000, 200));
}

static void test_bad_args(void **state)
{
	(void)state;
	assert_int_equal(baton_task_cancel(NULL), BATON_EINVAL);
	assert_ptr_equal(baton_task_handle(), NULL);
	assert_int_equal(baton_task_cancelled(), BATON_ENOSCHED);
	assert_string_equal(baton_err_name(BATON_ECANCELED), "ECANCELED");
	assert_string_not_equal(baton_strerror(BATON_ECANCELED), "unknown baton error code");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_every_call_same_worker),
		TC_MODEL_TESTS(test_every_call_other_worker),
		TC_MODEL_TESTS(test_every_call_from_thread),
		TC_MODEL_TESTS(test_cancel_not_blocked),
		TC_MODEL_TESTS(test_race_send),
		TC_MODEL_TESTS(test_race_unlock),
		cmocka_unit_test(test_bad_args),
	};

	if (getenv("BATON_TEST_FILTER"))
		cmocka_set_test_filter(getenv("BATON_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
