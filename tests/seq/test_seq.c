/* SPDX-License-Identifier: MIT */
/*
 * Tests of the call sequencer (include/baton/seq.h): calls and results,
 * init on the dedicated stack, nested and cross-sequencer calls, the
 * EDEADLK cases, 8 threads with combining on and off (every result checked,
 * a non-atomic counter proves the calls were serialised), changing K at run
 * time, and the argument and destroy errors.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"

#include <baton/seq.h>

#define THREADS 8

static void *plus_one(void *arg)
{
	return (void *)((intptr_t)arg + 1);
}

static void test_single_thread(void **state)
{
	baton_seq_t *s;
	void *res = NULL;

	(void)state;
	tc_watchdog_phase(30, "calls from one thread");
	assert_int_equal(baton_seq_create(&s, NULL), BATON_OK);
	for (intptr_t i = 0; i < 1000; i++) {
		assert_int_equal(baton_seq_call(s, plus_one, (void *)i, &res), BATON_OK);
		assert_int_equal((intptr_t)res, i + 1);
	}
	assert_int_equal(baton_seq_call(s, plus_one, NULL, NULL), BATON_OK);
	assert_int_equal(baton_seq_on_stack(s), 0);
	assert_int_equal(baton_seq_destroy(s), BATON_OK);
}

static baton_seq_t *init_seq;
static int init_saw_stack = -1, init_runs;

static void *init_fn(void *arg)
{
	init_runs++;
	/* create stores *out before it runs init */
	init_saw_stack = baton_seq_on_stack(*(baton_seq_t **)arg);
	return NULL;
}

static void *on_stack_fn(void *arg)
{
	return (void *)(intptr_t)baton_seq_on_stack(arg);
}

static void test_init_on_stack(void **state)
{
	struct baton_seq_attr attr = BATON_SEQ_ATTR_INIT;
	void *res;

	(void)state;
	tc_watchdog_phase(30, "init on the dedicated stack");
	attr.init = init_fn;
	attr.init_arg = &init_seq;
	attr.name = "init-test";
	init_seq = NULL;
	init_saw_stack = -1;
	assert_int_equal(baton_seq_create(&init_seq, &attr), BATON_OK);
	assert_int_equal(init_runs, 1);
	assert_int_equal(init_saw_stack, 1);
	assert_string_equal(baton_seq_name(init_seq), "init-test");
	assert_int_equal(baton_seq_call(init_seq, on_stack_fn, init_seq, &res), BATON_OK);
	assert_int_equal((intptr_t)res, 1);
	assert_int_equal(baton_seq_on_stack(init_seq), 0);
	assert_int_equal(baton_seq_destroy(init_seq), BATON_OK);
}

/* init runs inside the sequencer's coroutine */
static void *init_checks_coro(void *arg)
{
	(void)arg;
	init_saw_stack = baton_coro_self() != NULL;
	return NULL;
}

static void test_init_runs_on_coroutine(void **state)
{
	struct baton_seq_attr attr = BATON_SEQ_ATTR_INIT;
	baton_seq_t *s;

	(void)state;
	tc_watchdog_phase(30, "init on the coroutine");
	attr.init = init_checks_coro;
	init_saw_stack = -1;
	assert_int_equal(baton_seq_create(&s, &attr), BATON_OK);
	assert_int_equal(init_saw_stack, 1);
	assert_int_equal(baton_seq_destroy(s), BATON_OK);
}

/* ---- re-entrancy ------------------------------------------------------------ */

struct nest {
	baton_seq_t *s;
	int depth;
	int rc;
};

static void *nested_fn(void *arg)
{
	struct nest *n = arg;
	void *res = NULL;

	if (!baton_seq_on_stack(n->s))
		return (void *)-1;
	if (n->depth == 0)
		return (void *)100;
	n->depth--;
	n->rc = baton_seq_call(n->s, nested_fn, n, &res);
	return (void *)((intptr_t)res + 1);
}

static void test_reentrant(void **state)
{
	baton_seq_t *s;
	struct nest n;
	void *res;

	(void)state;
	tc_watchdog_phase(30, "nested calls");
	assert_int_equal(baton_seq_create(&s, NULL), BATON_OK);
	n.s = s;
	n.depth = 5;
	n.rc = -99;
	assert_int_equal(baton_seq_call(s, nested_fn, &n, &res), BATON_OK);
	assert_int_equal(n.rc, BATON_OK);
	assert_int_equal((intptr_t)res, 105);
	assert_int_equal(baton_seq_destroy(s), BATON_OK);
}

/* fn resumes a coroutine that calls the same sequencer: off its stack */
static void *coro_calls_seq(void *arg, void *in)
{
	(void)in;
	return (void *)(intptr_t)baton_seq_call(arg, plus_one, NULL, NULL);
}

static void *resume_inside(void *arg)
{
	baton_coro_t *co;
	void *out = NULL;

	if (baton_coro_create(&co, NULL, coro_calls_seq, arg) != BATON_OK)
		return (void *)-1;
	baton_coro_resume(co, NULL, &out);
	baton_coro_destroy(co);
	return out;
}

static void test_edeadlk_off_stack(void **state)
{
	baton_seq_t *s;
	void *res;

	(void)state;
	tc_watchdog_phase(30, "EDEADLK off the dedicated stack");
	assert_int_equal(baton_seq_create(&s, NULL), BATON_OK);
	assert_int_equal(baton_seq_call(s, resume_inside, s, &res), BATON_OK);
	assert_int_equal((intptr_t)res, BATON_EDEADLK);
	assert_non_null(baton_strerror(BATON_EDEADLK));
	/* the sequencer still works */
	assert_int_equal(baton_seq_call(s, plus_one, (void *)1, &res), BATON_OK);
	assert_int_equal((intptr_t)res, 2);
	assert_int_equal(baton_seq_destroy(s), BATON_OK);
}

/* ---- two sequencers -------------------------------------------------------- */

struct cross {
	baton_seq_t *a, *b;
	_Atomic int holding;
	int rc[2];
};

static void *call_b(void *arg)
{
	struct cross *c = arg;
	void *res = NULL;

	if (baton_seq_call(c->b, plus_one, (void *)41, &res) != BATON_OK)
		return NULL;
	return res;
}

static void test_cross_seq(void **state)
{
	struct cross c;
	void *res;

	(void)state;
	tc_watchdog_phase(30, "a call into a second sequencer");
	assert_int_equal(baton_seq_create(&c.a, NULL), BATON_OK);
	assert_int_equal(baton_seq_create(&c.b, NULL), BATON_OK);
	assert_int_equal(baton_seq_call(c.a, call_b, &c, &res), BATON_OK);
	assert_int_equal((intptr_t)res, 42);
	assert_int_equal(baton_seq_destroy(c.a), BATON_OK);
	assert_int_equal(baton_seq_destroy(c.b), BATON_OK);
}

struct cycle_arg {
	struct cross *c;
	int me;
};

static void *cycle_inner(void *arg)
{
	struct cycle_arg *ca = arg;
	struct cross *c = ca->c;

	/* seq_cst: a test barrier; both threads hold their first sequencer */
	atomic_fetch_add(&c->holding, 1);
	while (atomic_load(&c->holding) < 2)
		sched_yield();
	c->rc[ca->me] = baton_seq_call(ca->me == 0 ? c->b : c->a, plus_one, NULL, NULL);
	return NULL;
}

static void *cycle_thread(void *arg)
{
	struct cycle_arg *ca = arg;

	baton_seq_call(ca->me == 0 ? ca->c->a : ca->c->b, cycle_inner, ca, NULL);
	return NULL;
}

static void test_cross_seq_cycle(void **state)
{
	struct cross c;
	struct cycle_arg ca[2] = { { &c, 0 }, { &c, 1 } };
	pthread_t t[2];
	struct baton_seq_attr attr = BATON_SEQ_ATTR_INIT;

	(void)state;
	tc_watchdog_phase(60, "two sequencers called in a cycle");
	attr.name = "cycle-a";
	assert_int_equal(baton_seq_create(&c.a, &attr), BATON_OK);
	attr.name = "cycle-b";
	assert_int_equal(baton_seq_create(&c.b, &attr), BATON_OK);
	atomic_init(&c.holding, 0);
	c.rc[0] = c.rc[1] = 1;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, cycle_thread, &ca[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	/* at least one saw the cycle; the other then got through */
	assert_true(c.rc[0] == BATON_EDEADLK || c.rc[1] == BATON_EDEADLK);
	assert_true(c.rc[0] == BATON_OK || c.rc[0] == BATON_EDEADLK);
	assert_true(c.rc[1] == BATON_OK || c.rc[1] == BATON_EDEADLK);
	assert_int_equal(baton_seq_destroy(c.a), BATON_OK);
	assert_int_equal(baton_seq_destroy(c.b), BATON_OK);
}

/* ---- many threads ------------------------------------------------------------ */

struct shared {
	baton_seq_t *s;
	long counter; /* not atomic on purpose: the sequencer serialises */
	long calls;   /* per thread */
	_Atomic long errors;
	_Atomic int stop_k;      /* set_batch test: a thread changes K while others call */
	pthread_barrier_t start; /* all threads call at once */
};

struct worker {
	struct shared *sh;
	long id;
};

struct count_req {
	struct shared *sh;
	long v;
};

static void *count_fn(void *arg)
{
	struct count_req *r = arg;

	r->sh->counter++;
	return (void *)(intptr_t)(r->v * 3 + 1);
}

static void *worker(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	/* the request argument lives on this thread's stack */
	struct count_req req = { sh, 0 };

	pthread_barrier_wait(&sh->start);
	for (long i = 0; i < sh->calls; i++) {
		void *res = NULL;

		req.v = w->id * 1000000 + i;
		if (baton_seq_call(sh->s, count_fn, &req, &res) != BATON_OK ||
		    (intptr_t)res != req.v * 3 + 1)
			atomic_fetch_add(&sh->errors, 1);
		if (w->id == 0 && i % 997 == 0 && atomic_load(&sh->stop_k))
			baton_seq_set_batch(sh->s,
					    (unsigned)(i / 997) % 3 == 0 ? 0
						    : (i / 997) % 3 == 1 ? 4
									 : 16);
	}
	return NULL;
}

static void run_threads(unsigned k, int vary_k)
{
	struct baton_seq_attr attr = BATON_SEQ_ATTR_INIT;
	struct shared sh;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	struct baton_seq_stats st;

	tc_watchdog_phase(120, "8 threads calling");
	attr.batch = k;
	assert_int_equal(baton_seq_create(&sh.s, &attr), BATON_OK);
	sh.counter = 0;
	sh.calls = tc_scale(20000, 2000);
	atomic_init(&sh.errors, 0);
	atomic_init(&sh.stop_k, vary_k);
	pthread_barrier_init(&sh.start, NULL, THREADS);
	for (long i = 0; i < THREADS; i++) {
		w[i].sh = &sh;
		w[i].id = i;
		assert_int_equal(pthread_create(&t[i], NULL, worker, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&sh.start);
	assert_int_equal(atomic_load(&sh.errors), 0);
	assert_int_equal(sh.counter, THREADS * sh.calls);
	assert_int_equal(baton_seq_stats(sh.s, &st), BATON_OK);
	assert_int_equal(st.calls, (uint64_t)(THREADS * sh.calls));
	fprintf(stderr, "k=%u%s: %llu calls, %llu switches, %llu combined, %llu sleeps\n", k,
		vary_k ? " (varied)" : "", (unsigned long long)st.calls,
		(unsigned long long)st.switches, (unsigned long long)st.combined,
		(unsigned long long)st.sleeps);
	if (k == 0 && !vary_k) {
		assert_int_equal(st.combined, 0);
		assert_int_equal(st.switches, st.calls);
	}
	assert_int_equal(st.switches + st.combined, st.calls);
	assert_int_equal(baton_seq_destroy(sh.s), BATON_OK);
}

static void test_threads_combining(void **state)
{
	(void)state;
	run_threads(16, 0);
}

static void test_threads_no_combining(void **state)
{
	(void)state;
	run_threads(0, 0);
}

static void test_set_batch_runtime(void **state)
{
	(void)state;
	run_threads(4, 1);
}

/* ---- combining, deterministically ------------------------------------------------ */

struct gate {
	baton_seq_t *s;
	_Atomic int entered;
	_Atomic long served; /* requests that ran */
	int waiters;
};

static void *gate_fn(void *arg)
{
	struct gate *g = arg;
	struct baton_seq_stats st;
	int spins = 0;

	/* seq_cst: test handshake with the main thread */
	atomic_store(&g->entered, 1);
	/* hold the lock until every waiter has published and gone to sleep
	 * (or 5 s passed, then the test still checks the results) */
	do {
		baton_seq_stats(g->s, &st);
		usleep(1000);
	} while (st.sleeps < (uint64_t)g->waiters && ++spins < 5000);
	return NULL;
}

static void *gate_request(void *arg)
{
	struct gate *g = arg;

	/* seq_cst: counted from whichever thread runs it */
	atomic_fetch_add(&g->served, 1);
	return (void *)7;
}

static void *gate_holder(void *arg)
{
	struct gate *g = arg;

	baton_seq_call(g->s, gate_fn, g, NULL);
	return NULL;
}

static void *gate_waiter(void *arg)
{
	struct gate *g = arg;
	void *res = NULL;

	if (baton_seq_call(g->s, gate_request, g, &res) != BATON_OK || res != (void *)7)
		return (void *)1;
	return NULL;
}

static void run_gate(unsigned k)
{
	struct baton_seq_attr attr = BATON_SEQ_ATTR_INIT;
	struct baton_seq_stats st;
	struct gate g;
	pthread_t holder, w[3];
	void *bad;

	tc_watchdog_phase(60, "combining for sleeping waiters");
	attr.batch = k;
	assert_int_equal(baton_seq_create(&g.s, &attr), BATON_OK);
	atomic_init(&g.entered, 0);
	atomic_init(&g.served, 0);
	g.waiters = 3;
	assert_int_equal(pthread_create(&holder, NULL, gate_holder, &g), 0);
	while (!atomic_load(&g.entered))
		sched_yield();
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&w[i], NULL, gate_waiter, &g), 0);
	for (int i = 0; i < 3; i++) {
		pthread_join(w[i], &bad);
		assert_null(bad);
	}
	pthread_join(holder, NULL);
	assert_int_equal(atomic_load(&g.served), 3);
	assert_int_equal(baton_seq_stats(g.s, &st), BATON_OK);
	fprintf(stderr, "gate k=%u: %llu switches, %llu combined, %llu sleeps\n", k,
		(unsigned long long)st.switches, (unsigned long long)st.combined,
		(unsigned long long)st.sleeps);
	/* the holder's batch ran min(K, 3) of the sleeping waiters' calls */
	if (st.sleeps >= 3)
		assert_true(st.combined >= (k < 3 ? k : 3));
	if (k == 0)
		assert_int_equal(st.combined, 0);
	assert_int_equal(st.calls, 4);
	assert_int_equal(baton_seq_destroy(g.s), BATON_OK);
}

static void test_combining_serves_sleepers(void **state)
{
	(void)state;
	run_gate(16);
	run_gate(1);
	run_gate(0);
}

/* ---- errors ------------------------------------------------------------------ */

/*
 * Sleepers against releases: every 16th call holds the lock for 200 us, so
 * the other threads spin and yield, and every 256th holds it until one of
 * them has gone to sleep, so that its release races with a waiter going
 * to sleep. A lost wake-up hangs (the watchdog fails the test). Run with
 * the releases' fence a compiler barrier against the sleepers' membarrier
 * (when the kernel has it), and with full fences on both sides (the
 * fallback), through src/seq/seq.c's knob baton__seq_asym (internal.h).
 */
struct nap_shared {
	baton_seq_t *s;
	long counter; /* only under the sequencer */
	_Atomic long errors;
	_Atomic int callers; /* workers not yet past their last call */
	pthread_barrier_t start;
};

/* Hold the lock (we run under it) until a waiter has gone to sleep: the
 * stats count a sleep just before the waiter sleeps, and while the lock is
 * held every other caller ends up asleep. Not a fixed nap: a waiter's 64
 * yields take longer than any nap on a loaded machine, and then no release
 * raced with a sleeper. While nobody has slept in this run, nobody is
 * asleep, so a waiter will: the first hold ends only then (run_naps
 * asserts the sleeper). Later the waiters may all be asleep already from
 * an earlier hold, and 20 ms ends it. Never when no other caller is left. */
static void hold_until_a_sleeper(struct nap_shared *sh)
{
	struct baton_seq_stats st;
	uint64_t before;
	int64_t end = tc_now() + TC_MS(20);

	baton_seq_stats(sh->s, &st);
	before = st.sleeps;
	/* seq_cst: test bookkeeping, read again on every round */
	while (atomic_load(&sh->callers) > 1 && (before == 0 || tc_now() < end)) {
		baton_seq_stats(sh->s, &st);
		if (st.sleeps > before)
			return;
		usleep(100);
	}
}

static void *nap_fn(void *arg)
{
	struct nap_shared *sh = ((void **)arg)[0];
	intptr_t i = (intptr_t)((void **)arg)[1];

	sh->counter++;
	/* Short naps, and now and then a hold until a waiter sleeps. */
	if (i % 256 == 0)
		hold_until_a_sleeper(sh);
	else if (i % 16 == 0)
		usleep(200);
	return (void *)(i + 1);
}

static void *nap_worker(void *arg)
{
	struct nap_shared *sh = arg;
	long calls = tc_scale(1500, 200);

	pthread_barrier_wait(&sh->start);
	for (intptr_t i = 0; i < calls; i++) {
		void *req[2] = { sh, (void *)i }, *res = NULL;

		if (baton_seq_call(sh->s, nap_fn, req, &res) != BATON_OK || res != (void *)(i + 1))
			atomic_fetch_add(&sh->errors, 1);
	}
	/* seq_cst: test bookkeeping (hold_until_a_sleeper) */
	atomic_fetch_sub(&sh->callers, 1);
	return NULL;
}

/* Four callers with naps; a lost wake-up hangs them (the watchdog names
 * the run). The test is about sleepers: there must have been some. */
static void run_naps(unsigned k, int asym, const char *phase)
{
	struct baton_seq_attr attr = BATON_SEQ_ATTR_INIT;
	struct baton_seq_stats st;
	struct nap_shared sh;
	pthread_t t[4];
	int saved;

	tc_watchdog_phase(120, phase);
	attr.batch = k;
	assert_int_equal(baton_seq_create(&sh.s, &attr), BATON_OK);
	/* no sequencer is in use now: the mode may change */
	saved = &baton__seq_asym ? __atomic_load_n(&baton__seq_asym, __ATOMIC_RELAXED) : -1;
	if (!asym && saved >= 0)
		__atomic_store_n(&baton__seq_asym, 0, __ATOMIC_RELAXED);
	sh.counter = 0;
	atomic_init(&sh.errors, 0);
	atomic_init(&sh.callers, 4);
	pthread_barrier_init(&sh.start, NULL, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, nap_worker, &sh), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&sh.start);
	if (saved >= 0)
		__atomic_store_n(&baton__seq_asym, saved, __ATOMIC_RELAXED);
	assert_int_equal(atomic_load(&sh.errors), 0);
	assert_int_equal(sh.counter, 4 * tc_scale(1500, 200));
	assert_int_equal(baton_seq_stats(sh.s, &st), BATON_OK);
	fprintf(stderr, "naps k=%u %s: %llu calls, %llu combined, %llu sleeps\n", k,
		saved < 0               ? "(library's mode)"
			: asym && saved ? "membarrier"
					: "fences",
		(unsigned long long)st.calls, (unsigned long long)st.combined,
		(unsigned long long)st.sleeps);
	assert_true(st.sleeps > 0);
	assert_int_equal(baton_seq_destroy(sh.s), BATON_OK);
}

static void test_sleepers_against_releases(void **state)
{
	(void)state;
	run_naps(0, 1, "sleepers against releases, K=0, membarrier");
	run_naps(16, 1, "sleepers against releases, K=16, membarrier");
	run_naps(0, 0, "sleepers against releases, K=0, fences");
	run_naps(16, 0, "sleepers against releases, K=16, fences");
}

/* A child forked after the first sequencer (so after the membarrier
 * registration) still has sleepers against releases: its heavy barrier
 * must not fail (it would abort). */
static void test_sleepers_after_fork(void **state)
{
	struct baton_seq_attr attr = BATON_SEQ_ATTR_INIT;
	baton_seq_t *first;
	pid_t pid;
	int status = -1;

	(void)state;
	tc_watchdog_phase(120, "sleepers against releases after fork (the parent)");
	assert_int_equal(baton_seq_create(&first, NULL), BATON_OK);
	assert_int_equal(baton_seq_destroy(first), BATON_OK);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct nap_shared sh;
		struct baton_seq_stats st;
		pthread_t t[4];

		/* the parent's alarm is not inherited */
		tc_watchdog_phase(110, "sleepers against releases after fork (the child)");
		attr.batch = 0;
		if (baton_seq_create(&sh.s, &attr) != BATON_OK)
			_exit(2);
		sh.counter = 0;
		atomic_init(&sh.errors, 0);
		atomic_init(&sh.callers, 4);
		pthread_barrier_init(&sh.start, NULL, 4);
		for (int i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, nap_worker, &sh) != 0)
				_exit(3);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&sh.start);
		if (atomic_load(&sh.errors) != 0 || sh.counter != 4 * tc_scale(1500, 200))
			_exit(4);
		baton_seq_stats(sh.s, &st);
		baton_seq_destroy(sh.s);
		_exit(st.sleeps > 0 ? 0 : 5); /* 5: nothing slept, nothing tested */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void *destroy_inside(void *arg)
{
	return (void *)(intptr_t)baton_seq_destroy(arg);
}

struct blocker {
	baton_seq_t *s;
	_Atomic int entered, release;
};

static void *block_fn(void *arg)
{
	struct blocker *b = arg;

	/* seq_cst: test handshake with the main thread */
	atomic_store(&b->entered, 1);
	while (!atomic_load(&b->release))
		sched_yield();
	return NULL;
}

static void *block_thread(void *arg)
{
	struct blocker *b = arg;

	baton_seq_call(b->s, block_fn, b, NULL);
	return NULL;
}

static void test_errors(void **state)
{
	struct baton_seq_attr attr = BATON_SEQ_ATTR_INIT;
	struct baton_seq_stats st;
	struct blocker b;
	baton_seq_t *s;
	pthread_t t;
	void *res;

	(void)state;
	tc_watchdog_phase(30, "errors, destroy while busy");
	assert_int_equal(baton_seq_create(NULL, NULL), BATON_EINVAL);
	attr.stack_size = 100;
	assert_int_equal(baton_seq_create(&s, &attr), BATON_ESTACK);
	assert_int_equal(baton_seq_create(&s, NULL), BATON_OK);
	assert_int_equal(baton_seq_call(NULL, plus_one, NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_seq_call(s, NULL, NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_seq_set_batch(NULL, 3), BATON_EINVAL);
	assert_int_equal(baton_seq_set_batch(s, 3), BATON_OK);
	assert_int_equal(baton_seq_stats(NULL, &st), BATON_EINVAL);
	assert_int_equal(baton_seq_stats(s, NULL), BATON_EINVAL);
	assert_int_equal(baton_seq_on_stack(NULL), 0);
	assert_string_equal(baton_seq_name(NULL), "");
	assert_int_equal(baton_seq_destroy(NULL), BATON_OK);

	/* destroy from inside a call, and while another thread is in one */
	assert_int_equal(baton_seq_call(s, destroy_inside, s, &res), BATON_OK);
	assert_int_equal((intptr_t)res, BATON_EBUSY);
	b.s = s;
	atomic_init(&b.entered, 0);
	atomic_init(&b.release, 0);
	assert_int_equal(pthread_create(&t, NULL, block_thread, &b), 0);
	while (!atomic_load(&b.entered))
		sched_yield();
	assert_int_equal(baton_seq_destroy(s), BATON_EBUSY);
	atomic_store(&b.release, 1);
	pthread_join(t, NULL);
	assert_int_equal(baton_seq_destroy(s), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_thread),
		cmocka_unit_test(test_init_on_stack),
		cmocka_unit_test(test_init_runs_on_coroutine),
		cmocka_unit_test(test_reentrant),
		cmocka_unit_test(test_edeadlk_off_stack),
		cmocka_unit_test(test_cross_seq),
		cmocka_unit_test(test_cross_seq_cycle),
		cmocka_unit_test(test_threads_combining),
		cmocka_unit_test(test_threads_no_combining),
		cmocka_unit_test(test_set_batch_runtime),
		cmocka_unit_test(test_combining_serves_sleepers),
		cmocka_unit_test(test_sleepers_against_releases),
		cmocka_unit_test(test_sleepers_after_fork),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
