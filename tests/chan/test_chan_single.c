/* SPDX-License-Identifier: MIT */
/* Single-receiver channels (baton_chan_create_single, include/baton/chan.h):
 * the owner is the first task that receives, and any other receiver gets
 * BATON_ENOTOWNER (a task, a plain thread's try, a select's receive case);
 * bounded capacity with back-pressure; timeouts (0 tries once); close
 * waking the parked owner and the blocked senders; cancellation of a
 * parked owner and of a blocked sender; the owner's receive as a select
 * case; senders from plain threads and from tasks on both workers; a ring
 * of them (the hop's path); a scheduler destroyed under a parked owner.
 * Both coroutine models, 1 and 2 workers. */
#include "check.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>

/* --- outside tasks ---------------------------------------------------------- */

static void test_single_args(void **state)
{
	baton_chan_t *ch;
	void *v = (void *)7;

	(void)state;
	assert_int_equal(baton_chan_create_single(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_chan_create_single(&ch, BATON_CHAN_MAX_CAPACITY + 1), BATON_EINVAL);
	assert_int_equal(baton_chan_create_single(&ch, 2), BATON_OK);
	/* Sends work from anywhere; a plain thread is never the owner. */
	assert_int_equal(baton_chan_send(ch, (void *)1, 0), BATON_OK);
	assert_int_equal(baton_chan_send(ch, (void *)2, 0), BATON_OK);
	assert_int_equal(baton_chan_send(ch, (void *)3, 0), BATON_EAGAIN);
	assert_int_equal(baton_chan_len(ch), 2);
	assert_int_equal(baton_chan_recv(ch, &v, 0), BATON_ENOTOWNER);
	assert_ptr_equal(v, (void *)7);
	assert_int_equal(baton_chan_recv(ch, &v, -1), BATON_ENOSCHED);
	assert_string_equal(baton_err_name(BATON_ENOTOWNER), "ENOTOWNER");
	assert_int_equal(baton_chan_close(ch), BATON_OK);
	assert_int_equal(baton_chan_destroy(ch), BATON_OK);
}

/* --- two tasks: `first` on worker 0, `second` on the last worker ---------- */

static baton_sched_t *pair_sched(void **state, const char *phase)
{
	struct tc_cfg *c = *state;

	tc_reset();
	tc_watchdog_phase(30, phase);
	return tc_sched(c->workers);
}

static void pair_spawn(baton_sched_t *s, void **state, bool last, baton_task_fn fn, void *arg)
{
	struct tc_cfg *c = *state;
	struct baton_task_attr a = BATON_TASK_ATTR_INIT;

	a.coro = *c->attr;
	a.worker = last ? (int)c->workers - 1 : 0;
	assert_int_equal(baton_sched_spawn(s, &a, fn, arg), BATON_OK);
}

/* Run the two to their end; no task recorded a failure. */
static void run_pair(baton_sched_t *s, void **state, baton_task_fn first, baton_task_fn second,
		     void *arg)
{
	pair_spawn(s, state, false, first, arg);
	pair_spawn(s, state, true, second, arg);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
}

static void pair_done(baton_sched_t *s, baton_chan_t *ch)
{
	assert_int_equal(baton_chan_destroy(ch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	alarm(0);
}

/* --- the owner, and everyone else ------------------------------------------ */

/* A single-receiver channel, an ordinary one and a flag the first task
 * raises for the second (atomic). */
struct own {
	baton_chan_t *ch, *other;
	int stage;
};

/* Run first and second on them (the ordinary one of capacity other_cap). */
static void check_two(void **state, const char *phase, size_t other_cap, baton_task_fn first,
		      baton_task_fn second)
{
	baton_sched_t *s = pair_sched(state, phase);
	struct own o = { NULL, NULL, 0 };

	assert_int_equal(baton_chan_create_single(&o.ch, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&o.other, other_cap), BATON_OK);
	run_pair(s, state, first, second, &o);
	assert_int_equal(baton_chan_destroy(o.other), BATON_OK);
	pair_done(s, o.ch);
}

static void own_owner(void *arg)
{
	struct own *o = arg;
	void *v;

	TC_CHECK_RC(baton_chan_recv(o->ch, &v, 0), BATON_EAGAIN); /* binds */
	__atomic_store_n(&o->stage, 1, __ATOMIC_RELEASE);
	TC_CHECK_RC(baton_chan_recv(o->ch, &v, TC_MS(10000)), BATON_OK);
	TC_CHECK(v == (void *)42);
	TC_CHECK_RC(baton_chan_recv(o->ch, &v, -1), BATON_OK);
	TC_CHECK(v == (void *)43);
}

static void own_stranger(void *arg)
{
	struct own *o = arg;
	struct baton_chan_op ops[2];
	size_t idx = 99;
	void *v;

	while (!__atomic_load_n(&o->stage, __ATOMIC_ACQUIRE))
		baton_sched_yield();
	TC_CHECK_RC(baton_chan_recv(o->ch, &v, 0), BATON_ENOTOWNER);
	TC_CHECK_RC(baton_chan_recv(o->ch, &v, -1), BATON_ENOTOWNER);
	TC_CHECK_RC(baton_chan_recv(o->ch, &v, TC_MS(1)), BATON_ENOTOWNER);
	/* A select with the stranger's receive case does nothing at all, even
	 * with another case ready. */
	TC_CHECK_RC(baton_chan_send(o->other, (void *)5, 0), BATON_OK);
	ops[0] = (struct baton_chan_op){ o->other, BATON_CHAN_RECV, NULL, 0 };
	ops[1] = (struct baton_chan_op){ o->ch, BATON_CHAN_RECV, NULL, 0 };
	TC_CHECK_RC(baton_chan_select(ops, 2, -1, &idx), BATON_ENOTOWNER);
	TC_CHECK(idx == 99);
	TC_CHECK(baton_chan_len(o->other) == 1);
	/* Sending is anybody's. */
	TC_CHECK_RC(baton_chan_send(o->ch, (void *)42, -1), BATON_OK);
	ops[0] = (struct baton_chan_op){ o->ch, BATON_CHAN_SEND, (void *)43, 0 };
	TC_CHECK_RC(baton_chan_select(ops, 1, -1, &idx), BATON_OK);
	TC_CHECK(idx == 0 && ops[0].result == BATON_OK);
}

static void test_single_owner(void **state)
{
	check_two(state, "single owner", 1, own_owner, own_stranger);
}

/* --- capacity, back-pressure, timeouts, close ------------------------------ */

struct bp {
	baton_chan_t *ch;
	long sent;       /* sends completed (atomic) */
	int go;          /* the owner's timeouts are checked (atomic) */
	int full;        /* the owner filled the buffer again (atomic) */
	int closed_seen; /* blocked senders that got ECLOSED (atomic) */
};

static void bp_sender(void *arg)
{
	struct bp *b = arg;

	while (!__atomic_load_n(&b->go, __ATOMIC_ACQUIRE))
		baton_sched_yield();
	for (long i = 1; i <= 3; i++) {
		TC_CHECK_RC(baton_chan_send(b->ch, (void *)i, -1), BATON_OK);
		__atomic_store_n(&b->sent, i, __ATOMIC_RELEASE);
	}
	/* Once the owner filled the buffer (2) again: a try fails, a timed
	 * send times out, and a blocked one is woken by the close. */
	while (!__atomic_load_n(&b->full, __ATOMIC_ACQUIRE))
		baton_sched_yield();
	TC_CHECK_RC(baton_chan_send(b->ch, (void *)9, 0), BATON_EAGAIN);
	TC_CHECK_RC(baton_chan_send(b->ch, (void *)9, TC_MS(2)), BATON_ETIMEDOUT);
	TC_CHECK_RC(baton_chan_send(b->ch, (void *)9, -1), BATON_ECLOSED);
	__atomic_add_fetch(&b->closed_seen, 1, __ATOMIC_RELEASE);
}

static void bp_owner(void *arg)
{
	struct bp *b = arg;
	void *v;

	TC_CHECK_RC(baton_chan_recv(b->ch, &v, 0), BATON_EAGAIN); /* empty */
	TC_CHECK_RC(baton_chan_recv(b->ch, &v, TC_MS(2)), BATON_ETIMEDOUT);
	__atomic_store_n(&b->go, 1, __ATOMIC_RELEASE);
	/* Back-pressure: the sender gets 2 ahead and then waits. */
	while (__atomic_load_n(&b->sent, __ATOMIC_ACQUIRE) < 2)
		baton_sched_yield();
	for (int i = 0; i < 20; i++)
		baton_sched_yield();
	TC_CHECK(__atomic_load_n(&b->sent, __ATOMIC_ACQUIRE) == 2);
	TC_CHECK(baton_chan_len(b->ch) == 2);
	TC_CHECK_RC(baton_chan_recv(b->ch, &v, -1), BATON_OK);
	TC_CHECK(v == (void *)1);
	TC_CHECK_RC(baton_chan_recv(b->ch, &v, -1), BATON_OK);
	TC_CHECK(v == (void *)2);
	TC_CHECK_RC(baton_chan_recv(b->ch, &v, -1), BATON_OK);
	TC_CHECK(v == (void *)3);
	/* Refill to full with two of ours, let the sender block, close. */
	TC_CHECK_RC(baton_chan_send(b->ch, (void *)10, 0), BATON_OK);
	TC_CHECK_RC(baton_chan_send(b->ch, (void *)11, 0), BATON_OK);
	__atomic_store_n(&b->full, 1, __ATOMIC_RELEASE);
	baton_sched_sleep(TC_MS(20));
	TC_CHECK_RC(baton_chan_close(b->ch), BATON_OK);
	/* Buffered messages first, then ECLOSED for good. */
	TC_CHECK_RC(baton_chan_recv(b->ch, &v, -1), BATON_OK);
	TC_CHECK(v == (void *)10);
	TC_CHECK_RC(baton_chan_recv(b->ch, &v, 0), BATON_OK);
	TC_CHECK(v == (void *)11);
	TC_CHECK_RC(baton_chan_recv(b->ch, &v, -1), BATON_ECLOSED);
	TC_CHECK_RC(baton_chan_recv(b->ch, &v, 0), BATON_ECLOSED);
}

static void test_single_backpressure(void **state)
{
	baton_sched_t *s = pair_sched(state, "single back-pressure");
	struct bp b = { NULL, 0, 0, 0, 0 };

	assert_int_equal(baton_chan_create_single(&b.ch, 2), BATON_OK);
	run_pair(s, state, bp_owner, bp_sender, &b);
	assert_int_equal(b.closed_seen, 1);
	pair_done(s, b.ch);
}

/* A parked owner (the slot's wait: no timeout) is woken by a close. */
struct cw {
	baton_chan_t *ch;
	int parked; /* (atomic) */
};

static void cw_owner(void *arg)
{
	struct cw *w = arg;
	void *v = (void *)1;

	TC_CHECK_RC(baton_chan_recv(w->ch, &v, 0), BATON_EAGAIN);
	__atomic_store_n(&w->parked, 1, __ATOMIC_RELEASE);
	TC_CHECK_RC(baton_chan_recv(w->ch, &v, -1), BATON_ECLOSED);
	TC_CHECK(v == (void *)1);
}

static void cw_closer(void *arg)
{
	struct cw *w = arg;

	while (!__atomic_load_n(&w->parked, __ATOMIC_ACQUIRE))
		baton_sched_yield();
	baton_sched_sleep(TC_MS(5));
	TC_CHECK_RC(baton_chan_close(w->ch), BATON_OK);
}

static void test_single_close_owner(void **state)
{
	baton_sched_t *s = pair_sched(state, "single close");
	struct cw w = { NULL, 0 };

	assert_int_equal(baton_chan_create_single(&w.ch, 0), BATON_OK);
	run_pair(s, state, cw_owner, cw_closer, &w);
	pair_done(s, w.ch);
}

/* --- cancellation ------------------------------------------------------------ */

struct cx {
	baton_chan_t *ch;
	baton_task_t *owner, *sender; /* published just before parking (atomic) */
};

static void cx_owner(void *arg)
{
	struct cx *x = arg;
	void *v;

	TC_CHECK_RC(baton_chan_recv(x->ch, &v, 0), BATON_EAGAIN); /* binds */
	__atomic_store_n(&x->owner, baton_task_handle(), __ATOMIC_RELEASE);
	TC_CHECK_RC(baton_chan_recv(x->ch, &v, -1), BATON_ECANCELED);
}

static void cx_sender(void *arg)
{
	struct cx *x = arg;

	__atomic_store_n(&x->sender, baton_task_handle(), __ATOMIC_RELEASE);
	/* Unbuffered, and the owner is gone by now or cancelled: blocks. */
	TC_CHECK_RC(baton_chan_send(x->ch, (void *)1, -1), BATON_ECANCELED);
}

/* Wait for *slot's handle, give its task time to park, cancel it. */
static void cancel_when_published(baton_task_t **slot)
{
	baton_task_t *t;

	while ((t = __atomic_load_n(slot, __ATOMIC_ACQUIRE)) == NULL)
		baton_sched_yield();
	baton_sched_sleep(TC_MS(5));
	TC_CHECK_RC(baton_task_cancel(t), BATON_OK);
}

static void cx_cancel_owner(void *arg)
{
	cancel_when_published(&((struct cx *)arg)->owner);
}

static void cx_cancel_sender(void *arg)
{
	cancel_when_published(&((struct cx *)arg)->sender);
}

static void test_single_cancel(void **state)
{
	baton_sched_t *s = pair_sched(state, "single cancel");
	struct cx x = { NULL, NULL, NULL };

	assert_int_equal(baton_chan_create_single(&x.ch, 0), BATON_OK);
	run_pair(s, state, cx_owner, cx_cancel_owner, &x);
	/* The owner has returned: now a sender blocks until cancelled. */
	run_pair(s, state, cx_sender, cx_cancel_sender, &x);
	pair_done(s, x.ch);
}

/* --- select with the owner's receive as a case ----------------------------- */

static void sl_owner(void *arg)
{
	struct own *l = arg;
	struct baton_chan_op ops[2] = {
		{ l->other, BATON_CHAN_RECV, NULL, 0 },
		{ l->ch, BATON_CHAN_RECV, NULL, 0 },
	};
	size_t idx = 99;

	TC_CHECK_RC(baton_chan_select(ops, 2, 0, &idx), BATON_EAGAIN);
	__atomic_store_n(&l->stage, 1, __ATOMIC_RELEASE);
	TC_CHECK_RC(baton_chan_select(ops, 2, TC_MS(10000), &idx), BATON_OK);
	TC_CHECK(idx == 1 && ops[1].result == BATON_OK && ops[1].value == (void *)77);
	/* And the plain receive after a select. */
	TC_CHECK_RC(baton_chan_recv(l->ch, &ops[1].value, -1), BATON_OK);
	TC_CHECK(ops[1].value == (void *)78);
	TC_CHECK_RC(baton_chan_select(ops, 2, -1, &idx), BATON_OK);
	TC_CHECK(idx == 1 && ops[1].result == BATON_ECLOSED);
}

static void sl_sender(void *arg)
{
	struct own *l = arg;

	while (!__atomic_load_n(&l->stage, __ATOMIC_ACQUIRE))
		baton_sched_yield();
	baton_sched_sleep(TC_MS(2));
	TC_CHECK_RC(baton_chan_send(l->ch, (void *)77, -1), BATON_OK);
	TC_CHECK_RC(baton_chan_send(l->ch, (void *)78, -1), BATON_OK);
	TC_CHECK_RC(baton_chan_close(l->ch), BATON_OK);
}

static void test_single_select(void **state)
{
	check_two(state, "single select", 0, sl_owner, sl_sender);
}

/* --- many senders: plain threads and tasks on every worker ----------------- */

#define MANY_TASKS 4
#define MANY_THREADS 2

struct many {
	baton_chan_t *ch;
	long per;      /* messages per sender */
	long got, sum; /* the owner's */
};

static void many_task(void *arg)
{
	struct many *m = arg;

	for (long i = 1; i <= m->per; i++)
		TC_CHECK_RC(baton_chan_send(m->ch, (void *)(intptr_t)i, TC_MS(10000)), BATON_OK);
}

static void *many_thread(void *arg)
{
	struct many *m = arg;

	for (long i = 1; i <= m->per;) {
		int rc = baton_chan_send(m->ch, (void *)(intptr_t)i, 0);

		if (rc == BATON_OK)
			i++;
		else if (rc == BATON_EAGAIN)
			sched_yield();
		else {
			TC_FAIL("plain thread's send failed");
			break;
		}
	}
	return NULL;
}

static void many_owner(void *arg)
{
	struct many *m = arg;
	long total = m->per * (MANY_TASKS + MANY_THREADS);
	void *v;

	for (long i = 0; i < total; i++) {
		int rc = baton_chan_recv(m->ch, &v, TC_MS(10000));

		if (rc != BATON_OK) {
			TC_FAIL("owner's receive failed (lost wake-up?)");
			return;
		}
		m->got++;
		m->sum += (intptr_t)v;
	}
}

static void test_single_many_senders(void **state)
{
	struct tc_cfg *c = *state;
	baton_sched_t *s = tc_sched(c->workers);
	struct many m = { NULL, tc_scale(2000, 200), 0, 0 };
	struct baton_task_attr a = BATON_TASK_ATTR_INIT;
	pthread_t th[MANY_THREADS];

	tc_reset();
	tc_watchdog_phase(60, "single many senders");
	a.coro = *c->attr;
	assert_int_equal(baton_chan_create_single(&m.ch, 4), BATON_OK);
	a.worker = 0;
	assert_int_equal(baton_sched_spawn(s, &a, many_owner, &m), BATON_OK);
	for (int i = 0; i < MANY_TASKS; i++) {
		a.worker = i % (int)c->workers;
		assert_int_equal(baton_sched_spawn(s, &a, many_task, &m), BATON_OK);
	}
	for (int i = 0; i < MANY_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, many_thread, &m), 0);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	for (int i = 0; i < MANY_THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	TC_VERDICT();
	assert_int_equal(m.got, m.per * (MANY_TASKS + MANY_THREADS));
	assert_int_equal(m.sum, (MANY_TASKS + MANY_THREADS) * m.per * (m.per + 1) / 2);
	assert_int_equal(baton_chan_destroy(m.ch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	alarm(0);
}

/* --- a ring of them: the hop's path ---------------------------------------- */

#define RING_N 4
#define RINGS 3

struct rmember {
	baton_chan_t *in, *right;
	long index, rounds;
	long *bad;
};

static void ring_member(void *arg)
{
	struct rmember *m = arg;
	void *v = NULL;

	if (m->index == 0) {
		for (long r = 0; r < m->rounds; r++) {
			TC_CHECK_RC(baton_chan_send(m->right, (void *)(r * 100), -1), BATON_OK);
			TC_CHECK_RC(baton_chan_recv(m->in, &v, -1), BATON_OK);
			if ((long)v != r * 100 + RING_N - 1)
				__atomic_add_fetch(m->bad, 1, __ATOMIC_RELAXED);
		}
		return;
	}
	for (long r = 0; r < m->rounds; r++) {
		TC_CHECK_RC(baton_chan_recv(m->in, &v, -1), BATON_OK);
		TC_CHECK_RC(baton_chan_send(m->right, (void *)((long)v + 1), -1), BATON_OK);
	}
}

static void test_single_ring(void **state)
{
	struct tc_cfg *c = *state;
	baton_sched_t *s = tc_sched(c->workers);
	struct rmember m[RINGS * RING_N];
	struct baton_task_attr a = BATON_TASK_ATTR_INIT;
	long bad = 0;

	tc_reset();
	tc_watchdog_phase(60, "single ring");
	a.coro = *c->attr;
	for (int i = 0; i < RINGS * RING_N; i++)
		assert_int_equal(baton_chan_create_single(&m[i].in, 0), BATON_OK);
	for (int i = 0; i < RINGS * RING_N; i++) {
		int ring = i / RING_N, pos = i % RING_N;

		m[i] = (struct rmember){ m[i].in, m[ring * RING_N + (pos + 1) % RING_N].in, pos,
					 tc_scale(3000, 300), &bad };
		/* Ring 0 across the workers, the others each on one. */
		a.worker = (ring == 0 ? pos : ring) % (int)c->workers;
		assert_int_equal(baton_sched_spawn(s, &a, ring_member, &m[i]), BATON_OK);
	}
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(bad, 0);
	for (int i = 0; i < RINGS * RING_N; i++)
		assert_int_equal(baton_chan_destroy(m[i].in), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	alarm(0);
}

/* --- a scheduler destroyed while the owner waits in the slot --------------- */

static void parked_owner(void *arg)
{
	void *v;

	TC_CHECK_RC(baton_chan_recv(arg, &v, -1), BATON_OK);
	TC_FAIL("the parked owner ran again");
}

static void stopper(void *arg)
{
	baton_sched_sleep(TC_MS(5));
	TC_CHECK_RC(baton_sched_stop(arg), BATON_OK);
}

static void test_single_destroy_parked(void **state)
{
	baton_sched_t *s = pair_sched(state, "single destroy parked");
	baton_chan_t *ch;

	assert_int_equal(baton_chan_create_single(&ch, 0), BATON_OK);
	pair_spawn(s, state, false, parked_owner, ch);
	pair_spawn(s, state, true, stopper, s);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(baton_chan_destroy(ch), BATON_EBUSY);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	/* The owner's waiter was taken out: a send now finds nobody. */
	assert_int_equal(baton_chan_send(ch, NULL, 0), BATON_EAGAIN);
	assert_int_equal(baton_chan_destroy(ch), BATON_OK);
	TC_VERDICT();
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_args),       TC_CFG_TESTS(test_single_owner),
		TC_CFG_TESTS(test_single_backpressure),   TC_CFG_TESTS(test_single_close_owner),
		TC_CFG_TESTS(test_single_cancel),         TC_CFG_TESTS(test_single_select),
		TC_CFG_TESTS(test_single_many_senders),   TC_CFG_TESTS(test_single_ring),
		TC_CFG_TESTS(test_single_destroy_parked),
	};

	return cmocka_run_group_tests_name("chan_single", tests, NULL, NULL);
}
