/* SPDX-License-Identifier: MIT */
/* Stress: a token handed around a ring of tasks spread over 2 workers
 * (and moved between them by the steal path) hundreds of thousands of
 * times, with random yields, sleeps and selects in between. Every wait has
 * a timeout, so a lost wake-up fails as "lost wake-up" with the hop it
 * happened at instead of hanging; the watchdog catches anything worse. */
#include "check.h"

#include <stdbool.h>

#define RING 6

struct ring {
	baton_chan_t *ch[RING];
	baton_chan_t *never; /* no one ever sends here: a select decoy */
	long hops;           /* the token's last value */
	long passes;         /* hand-overs done (atomic) */
	long cross;          /* hand-overs between workers (atomic) */
	int last_worker;     /* worker of the last holder (atomic) */
	int64_t wait_ns;
	long total;    /* hops before the poison goes round */
	int64_t until; /* ... or when this time has passed */
};

static struct ring rg;

/* Receive from our channel: plain recv, or a select with a decoy case. */
static int ring_recv(int id, intptr_t *v, uint64_t *x)
{
	void *p = NULL;
	int rc;

	if ((tc_rand(x) & 3) == 0) {
		struct baton_chan_op ops[2] = {
			{ rg.never, BATON_CHAN_RECV, NULL, 0 },
			{ rg.ch[id], BATON_CHAN_RECV, NULL, 0 },
		};
		size_t idx = 9;

		rc = baton_chan_select(ops, 2, rg.wait_ns, &idx);
		if (rc == BATON_OK) {
			if (idx != 1) {
				TC_FAIL("select completed the decoy case");
				return BATON_EINVAL;
			}
			rc = ops[1].result;
			p = ops[1].value;
		}
	} else {
		rc = baton_chan_recv(rg.ch[id], &p, rg.wait_ns);
	}
	*v = (intptr_t)p;
	return rc;
}

static void ring_send(int id, intptr_t v, uint64_t *x)
{
	baton_chan_t *next = rg.ch[(id + 1) % RING];
	int rc;

	if ((tc_rand(x) & 3) == 0) {
		struct baton_chan_op ops[2] = {
			{ next, BATON_CHAN_SEND, (void *)v, 0 },
			{ rg.never, BATON_CHAN_RECV, NULL, 0 },
		};
		size_t idx = 9;

		rc = baton_chan_select(ops, 2, rg.wait_ns, &idx);
		if (rc == BATON_OK && idx != 0)
			TC_FAIL("select completed the decoy case");
	} else {
		rc = baton_chan_send(next, (void *)v, rg.wait_ns);
	}
	if (rc == BATON_ETIMEDOUT) {
		char m[96];

		snprintf(m, sizeof(m),
			 "lost wake-up: send of token %ld was "
			 "never taken",
			 (long)v);
		TC_FAIL(m);
	} else if (rc != BATON_OK) {
		TC_CHECK_RC(rc, BATON_OK);
	}
}

static void ring_task(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t x = 0x2545F4914F6CDD1DULL * (uint64_t)(id + 7);
	bool initiator = false;

	if (id == 0)
		ring_send(id, 1, &x); /* the token starts */
	for (;;) {
		intptr_t v;
		int rc = ring_recv(id, &v, &x);
		uint64_t r;
		int w;

		if (rc == BATON_ETIMEDOUT) {
			char m[120];

			snprintf(m, sizeof(m),
				 "lost wake-up: task %d waited "
				 "%lld ms for the token after hop %ld",
				 id, (long long)(rg.wait_ns / 1000000),
				 __atomic_load_n(&rg.passes, __ATOMIC_RELAXED));
			TC_FAIL(m);
			return;
		}
		if (rc != BATON_OK) {
			TC_CHECK_RC(rc, BATON_OK);
			return;
		}
		if (v < 0) { /* poison: pass it on once around, then leave */
			if (!initiator)
				ring_send(id, -1, &x);
			return;
		}
		w = baton_sched_worker_index();
		if (__atomic_exchange_n(&rg.last_worker, w, __ATOMIC_RELAXED) != w)
			__atomic_add_fetch(&rg.cross, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&rg.passes, 1, __ATOMIC_RELAXED);
		if (v != __atomic_load_n(&rg.hops, __ATOMIC_RELAXED) + 1)
			TC_FAIL("token value skipped or repeated");
		__atomic_store_n(&rg.hops, v, __ATOMIC_RELAXED);
		r = tc_rand(&x);
		if ((r & 7) == 0)
			baton_sched_yield();
		else if ((r & 255) == 1)
			baton_sched_sleep((int64_t)((r >> 8) % 50000));
		if (v >= rg.total || tc_now() > rg.until) {
			initiator = true;
			ring_send(id, -1, &x);
		} else {
			ring_send(id, v + 1, &x);
		}
	}
}

static void check_ring(void **state, size_t cap)
{
	baton_sched_t *s = tc_sched(2);
	int64_t t0 = tc_now();

	tc_reset();
	tc_watchdog_phase(120, "token ring (a wait without timeout hung)");
	memset(&rg, 0, sizeof(rg));
	rg.total = tc_scale(200000, 5000);
	rg.wait_ns = TC_MS(3000) * tc_time_scale();
	/* Bounded in time too: on a loaded 2-core machine a hand-over between
	 * workers can cost milliseconds (the woken worker waits for a CPU). */
	rg.until = t0 + TC_MS(800) * tc_time_scale();
	rg.last_worker = -1;
	for (int i = 0; i < RING; i++)
		assert_int_equal(baton_chan_create(&rg.ch[i], cap), BATON_OK);
	assert_int_equal(baton_chan_create(&rg.never, 0), BATON_OK);
	/* Round robin from outside: the ring alternates between workers. */
	for (intptr_t i = 0; i < RING; i++)
		tc_spawn(s, state, BATON_SCHED_ANY_WORKER, ring_task, (void *)i);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(rg.hops, rg.passes);
	assert_true(rg.passes >= 100);
	if (getenv("BATON_TEST_VERBOSE"))
		fprintf(stderr,
			"ring cap %zu: %ld hops, %ld across workers, "
			"%.1f ms\n",
			cap, rg.passes, rg.cross, (double)(tc_now() - t0) / 1e6);
	for (int i = 0; i < RING; i++)
		assert_int_equal(baton_chan_destroy(rg.ch[i]), BATON_OK);
	assert_int_equal(baton_chan_destroy(rg.never), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

static void test_ring_unbuffered(void **state)
{
	check_ring(state, 0);
}
static void test_ring_buffered(void **state)
{
	check_ring(state, 1);
}

/* Wake-ups racing timeouts: pairs of tasks on different workers ping-pong
 * with timeouts close to the hand-over latency, so that the timer and the
 * waker often claim the same wait. A timed-out wait is retried; what must
 * hold is that no message is lost or duplicated. */
struct pp {
	baton_chan_t *ping, *pong;
	long n;
	long got;
	int64_t until; /* the first side stops pinging after this */
};

static struct pp pps[2];

static void pp_side(void *arg)
{
	struct pp *p = &pps[(intptr_t)arg >> 1];
	bool first = ((intptr_t)arg & 1) == 0;
	baton_chan_t *in = first ? p->pong : p->ping;
	baton_chan_t *out = first ? p->ping : p->pong;
	uint64_t x = 0x9E3779B97F4A7C15ULL * (uint64_t)((intptr_t)arg + 3);
	int64_t deadline = tc_now() + TC_MS(20000) * tc_time_scale();

	for (long i = 1; i <= p->n; i++) {
		void *v = NULL;
		int rc;

		if (first && tc_now() > p->until)
			i = -1; /* the last ping: both sides stop after it */
		if (first) {
			while ((rc = baton_chan_send(out, (void *)(intptr_t)i,
						     (int64_t)(1 + tc_rand(&x) % 20000))) ==
			       BATON_ETIMEDOUT)
				if (tc_now() > deadline) {
					TC_FAIL("lost wake-up: ping never taken");
					return;
				}
			TC_CHECK_RC(rc, BATON_OK);
		}
		while ((rc = baton_chan_recv(in, &v, (int64_t)(1 + tc_rand(&x) % 20000))) ==
		       BATON_ETIMEDOUT)
			if (tc_now() > deadline) {
				TC_FAIL("lost wake-up: answer never came");
				return;
			}
		TC_CHECK_RC(rc, BATON_OK);
		if (!first && v == (void *)(intptr_t)-1)
			i = -1;
		TC_CHECK(v == (void *)(intptr_t)i);
		if (!first) {
			while ((rc = baton_chan_send(out, v, (int64_t)(1 + tc_rand(&x) % 20000))) ==
			       BATON_ETIMEDOUT)
				if (tc_now() > deadline) {
					TC_FAIL("lost wake-up: pong never taken");
					return;
				}
			TC_CHECK_RC(rc, BATON_OK);
		} else {
			p->got++;
		}
		if (i < 0)
			return;
	}
}

static void test_pingpong_timeouts(void **state)
{
	baton_sched_t *s = tc_sched(2);

	tc_reset();
	tc_watchdog_phase(120, "ping-pong with timeouts");
	for (int k = 0; k < 2; k++) {
		pps[k].n = tc_scale(20000, 500);
		pps[k].got = 0;
		pps[k].until = tc_now() + TC_MS(600) * tc_time_scale();
		assert_int_equal(baton_chan_create(&pps[k].ping, 0), BATON_OK);
		assert_int_equal(baton_chan_create(&pps[k].pong, 0), BATON_OK);
	}
	for (intptr_t i = 0; i < 4; i++)
		tc_spawn(s, state, (int)((i ^ (i >> 1)) & 1), pp_side, (void *)i);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	for (int k = 0; k < 2; k++) {
		/* Every ping was answered (the run ended, nobody is left
		 * waiting); the count is what fit in the time. */
		assert_true(pps[k].got >= 10);
		if (getenv("BATON_TEST_VERBOSE"))
			fprintf(stderr, "ping-pong %d: %ld round trips\n", k, pps[k].got);
		assert_int_equal(baton_chan_destroy(pps[k].ping), BATON_OK);
		assert_int_equal(baton_chan_destroy(pps[k].pong), BATON_OK);
	}
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_ring_unbuffered),
		TC_MODEL_TESTS(test_ring_buffered),
		TC_MODEL_TESTS(test_pingpong_timeouts),
	};

	return cmocka_run_group_tests_name("stress_sched", tests, NULL, NULL);
}
