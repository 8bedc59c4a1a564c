/* SPDX-License-Identifier: MIT */
/*
 * The allocation-failure mode (src/common/fault.h, docs/testing.md) on the
 * coroutines, generators, the scheduler with channels, select and the
 * synchronisation primitives, and the sequencer: every allocation each
 * scenario makes is failed in turn, then every N-th (fault_test.h). Calls
 * succeed or return BATON_ENOMEM, nothing crashes or hangs, nothing leaks.
 * Built only with BATON_FAULT_INJECTION (the asan and tsan presets).
 */
#include "fault_test.h"

#include <baton/chan.h>
#include <baton/gen.h>
#include <baton/sched.h>
#include <baton/seq.h>
#include <baton/sync.h>

#define SEC 1000000000LL
#define FOREVER (-1)

/* --- coroutines and generators -------------------------------------------- */

static void *leaf(void *arg, void *in)
{
	(void)arg;
	baton_coro_yield(NULL, NULL);
	return in;
}

/* Resume until it yields or ends; a BATON_ENOMEM means nothing ran. */
static int resume(baton_coro_t *co)
{
	return RETRY(baton_coro_resume(co, NULL, NULL));
}

/* Runs a coroutine of its own model to its end and frees it before each
 * yield, so that destroying it suspended leaks nothing. A copy-stack one
 * resumes another through the copier (both want the shared stack). */
static void *outer(void *arg, void *in)
{
	const struct baton_coro_attr *a = arg;
	baton_coro_t *inner;

	(void)in;
	for (int round = 0; round < 2; round++) {
		if (ALLOWED(baton_coro_create(&inner, a, leaf, NULL)) == BATON_OK) {
			while (baton_coro_status(inner) != BATON_CORO_DEAD &&
			       resume(inner) == BATON_OK)
				;
			TC_CHECK(baton_coro_destroy(inner) == BATON_OK);
		}
		baton_coro_yield(NULL, NULL);
	}
	return NULL;
}

/* A stackful coroutine between two copy-stack ones: B (stackful, resumed
 * by the copy-stack A) starts the copy-stack C, which takes the shared
 * stack from A and keeps it when it yields. B's end goes back to A, whose
 * frames must come back: C's must be saved first. */
struct chain {
	const struct baton_coro_attr *copystack;
	baton_coro_t *c;
};

static void *chain_b(void *arg, void *in)
{
	struct chain *ch = arg;

	(void)in;
	if (ALLOWED(baton_coro_create(&ch->c, ch->copystack, leaf, NULL)) == BATON_OK &&
	    resume(ch->c) != BATON_OK) {
		TC_CHECK(baton_coro_destroy(ch->c) == BATON_OK);
		ch->c = NULL;
	}
	return NULL;
}

static void *chain_a(void *arg, void *in)
{
	struct chain *ch = arg;
	baton_coro_t *b;

	(void)in;
	if (ALLOWED(baton_coro_create(&b, &tc_stackful, chain_b, ch)) == BATON_OK) {
		TC_CHECK(resume(b) == BATON_OK || baton_coro_status(b) != BATON_CORO_DEAD);
		TC_CHECK(baton_coro_destroy(b) == BATON_OK);
	}
	TC_CHECK(baton_coro_destroy(ch->c) == BATON_OK);
	return NULL;
}

static void counting(baton_gen_t *g, void *arg)
{
	(void)arg;
	for (intptr_t i = 1; i <= 3; i++)
		if (baton_gen_yield(g, (void *)i) != BATON_OK)
			break;
}

static void scenario_coro(const struct baton_coro_attr *a, unsigned param)
{
	baton_coro_t *co, *other = NULL;
	baton_gen_t *g;
	void *v;

	(void)param;
	if (ALLOWED(baton_coro_create(&co, a, outer, (void *)a)) == BATON_OK) {
		/* A second one takes the shared stack between the first's
		 * turns, so that each resume has frames to save and restore. */
		if (ALLOWED(baton_coro_create(&other, a, leaf, NULL)) != BATON_OK)
			other = NULL;
		while (baton_coro_status(co) != BATON_CORO_DEAD && resume(co) == BATON_OK)
			if (other && baton_coro_status(other) != BATON_CORO_DEAD)
				resume(other);
		TC_CHECK(baton_coro_destroy(co) == BATON_OK);
		TC_CHECK(baton_coro_destroy(other) == BATON_OK);
	}
	if (a->model == BATON_CORO_COPYSTACK &&
	    ALLOWED(baton_coro_create(&co, a, chain_a, &(struct chain){ a, NULL })) == BATON_OK) {
		while (baton_coro_status(co) != BATON_CORO_DEAD && resume(co) == BATON_OK)
			;
		TC_CHECK(baton_coro_destroy(co) == BATON_OK);
	}
	if (ALLOWED(baton_gen_create(&g, a, counting, NULL)) == BATON_OK) {
		int rc;

		while ((rc = baton_gen_next(g, &v)) == BATON_OK)
			;
		TC_CHECK(rc == BATON_EDONE || rc == BATON_ENOMEM);
		TC_CHECK(baton_gen_destroy(g) == BATON_OK);
	}
	baton_coro_pool_trim(); /* the next run makes its arena again */
}

static void test_coro(void **state)
{
	tc_watchdog_phase(120, "coroutines");
	fault_sweep("coroutines and generators", scenario_coro, TC_ATTR(state), 0);
}

/* --- the scheduler, channels, select, wait groups, mutexes ----------------- */

struct world {
	const struct baton_coro_attr *model;
	baton_chan_t *ch;     /* producers -> main */
	baton_chan_t *sel[5]; /* a select wider than a task's inline room */
	baton_wg_t *wg;
	baton_mutex_t *mutex;
	baton_sem_t *sem;
	unsigned next_worker; /* of the next spawn */
};

/* Spread over the workers: wake-ups cross between them. */
static int spawn(struct world *w, baton_task_fn fn, void *arg)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	baton_sched_t *s = baton_sched_self();

	ta.coro = *w->model;
	ta.worker = (int)(w->next_worker++ % (unsigned)baton_sched_workers(s));
	return ALLOWED(baton_sched_spawn(s, &ta, fn, arg));
}

/* A wait that may need a timer: without memory for it, wait untimed. */
#define TIMED(call_timeout, call_forever)                        \
	({                                                       \
		int r_ = ALLOWED(call_timeout);                  \
		r_ == BATON_ENOMEM ? ALLOWED(call_forever) : r_; \
	})

static void producer(void *arg)
{
	struct world *w = arg;

	TC_CHECK(TIMED(baton_chan_send(w->ch, w, SEC), baton_chan_send(w->ch, w, FOREVER)) ==
		 BATON_OK);
}

static void selected(void *arg)
{
	struct world *w = arg;

	ALLOWED(baton_sched_sleep(1000000));
	TC_CHECK(baton_chan_send(w->sel[3], w, 0) == BATON_OK); /* room for one */
}

static void worker_done(void *arg)
{
	struct world *w = arg;

	if (TIMED(baton_mutex_lock(w->mutex, SEC), baton_mutex_lock(w->mutex, FOREVER)) == BATON_OK)
		TC_CHECK(baton_mutex_unlock(w->mutex) == BATON_OK);
	TC_CHECK(baton_sem_release(w->sem, 1) == BATON_OK);
	TC_CHECK(baton_wg_done(w->wg) == BATON_OK);
}

static void channels(struct world *w)
{
	int spawned = 0;

	if (ALLOWED(baton_chan_create(&w->ch, 0)) != BATON_OK)
		return;
	for (int i = 0; i < 3; i++)
		spawned += spawn(w, producer, w) == BATON_OK;
	for (int i = 0; i < spawned; i++) {
		void *v = NULL;

		TC_CHECK(TIMED(baton_chan_recv(w->ch, &v, SEC),
			       baton_chan_recv(w->ch, &v, FOREVER)) == BATON_OK);
		TC_CHECK(v == w);
	}
	TC_CHECK(baton_chan_close(w->ch) == BATON_OK);
	TC_CHECK(baton_chan_destroy(w->ch) == BATON_OK);
}

static void select_wide(struct world *w)
{
	struct baton_chan_op ops[5];
	size_t made = 0, index = 0;
	int rc;

	for (; made < 5; made++)
		if (ALLOWED(baton_chan_create(&w->sel[made], 1)) != BATON_OK)
			break;
	if (made == 5) {
		for (size_t i = 0; i < 5; i++)
			ops[i] = (struct baton_chan_op){ w->sel[i], BATON_CHAN_RECV, NULL, 0 };
		if (spawn(w, selected, w) != BATON_OK)
			selected(w); /* no task: send it ourselves */
		rc = RETRY(baton_chan_select(ops, 5, 10 * SEC, &index));
		if (rc == BATON_OK)
			TC_CHECK(index == 3 && ops[3].value == w);
		else /* the sender's value must be taken before the free */
			TC_CHECK(baton_chan_recv(w->sel[3], NULL, FOREVER) == BATON_OK);
	}
	while (made > 0)
		TC_CHECK(baton_chan_destroy(w->sel[--made]) == BATON_OK);
}

static void sync_group(struct world *w)
{
	int spawned = 0;

	if (ALLOWED(baton_wg_create(&w->wg)) != BATON_OK)
		return;
	if (ALLOWED(baton_mutex_create(&w->mutex)) == BATON_OK) {
		if (ALLOWED(baton_sem_create(&w->sem, 0)) == BATON_OK) {
			TC_CHECK(baton_wg_add(w->wg, 3) == BATON_OK);
			/* Hold the mutex so that the workers queue on it. */
			TC_CHECK(baton_mutex_lock(w->mutex, FOREVER) == BATON_OK);
			for (int i = 0; i < 3; i++)
				if (spawn(w, worker_done, w) == BATON_OK)
					spawned++;
				else
					TC_CHECK(baton_wg_done(w->wg) == BATON_OK);
			ALLOWED(baton_sched_sleep(1000000));
			TC_CHECK(baton_mutex_unlock(w->mutex) == BATON_OK);
			TC_CHECK(TIMED(baton_wg_wait(w->wg, SEC), baton_wg_wait(w->wg, FOREVER)) ==
				 BATON_OK);
			if (spawned > 0)
				TC_CHECK(baton_sem_acquire(w->sem, spawned, 0) == BATON_OK);
			TC_CHECK(baton_sem_destroy(w->sem) == BATON_OK);
		}
		TC_CHECK(baton_mutex_destroy(w->mutex) == BATON_OK);
	}
	TC_CHECK(baton_wg_destroy(w->wg) == BATON_OK);
}

static void sleeper(void *arg)
{
	(void)arg;
	ALLOWED(baton_sched_sleep(2000000));
}

/* More timers at once than a worker's first heap holds: it must grow.
 * (Not under TSan, where each coroutine costs a fiber: races need few.) */
#define SLEEPERS (TC_TSAN ? 8 : 70)

static void main_task(void *arg)
{
	struct world *w = arg;

	channels(w);
	select_wide(w);
	sync_group(w);
	for (int i = 0; i < SLEEPERS; i++)
		spawn(w, sleeper, NULL);
}

static void scenario_sched(const struct baton_coro_attr *a, unsigned workers)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	struct world w = { .model = a };
	baton_sched_t *s;

	sa.workers = workers;
	if (ALLOWED(baton_sched_create(&s, &sa)) != BATON_OK)
		return;
	ta.coro = *a;
	if (ALLOWED(baton_sched_spawn(s, &ta, main_task, &w)) == BATON_OK)
		TC_CHECK(baton_sched_run(s) == BATON_OK);
	TC_CHECK(baton_sched_destroy(s) == BATON_OK);
}

static void test_sched(void **state)
{
	tc_watchdog_phase(300, "scheduler");
	fault_sweep("scheduler, one worker", scenario_sched, TC_ATTR(state), 1);
	fault_sweep("scheduler, two workers", scenario_sched, TC_ATTR(state), 2);
}

/* --- the sequencer ---------------------------------------------------------- */

static void *add_one(void *arg)
{
	/* On the dedicated stack, under the sequencer's lock. */
	++*(long *)arg;
	return arg;
}

struct seq_world {
	baton_seq_t *seq;
	long n;
};

static void *seq_caller(void *arg)
{
	struct seq_world *sw = arg;

	for (int i = 0; i < 50; i++)
		TC_CHECK(baton_seq_call(sw->seq, add_one, &sw->n, NULL) == BATON_OK);
	return NULL;
}

static void seq_task(void *arg)
{
	seq_caller(arg);
}

static void scenario_seq(const struct baton_coro_attr *a, unsigned param)
{
	struct baton_seq_attr attr = BATON_SEQ_ATTR_INIT;
	struct seq_world sw = { NULL, 0 };
	pthread_t th;
	long expect = 0;
	baton_sched_t *s;

	(void)param;
	attr.init = add_one;
	attr.init_arg = &sw.n;
	if (ALLOWED(baton_seq_create(&sw.seq, &attr)) != BATON_OK)
		return;
	expect = 1; /* init ran */
	TC_CHECK(pthread_create(&th, NULL, seq_caller, &sw) == 0);
	seq_caller(&sw);
	pthread_join(th, NULL);
	expect += 100;
	if (ALLOWED(baton_sched_create(&s, NULL)) == BATON_OK) {
		struct baton_task_attr ta = BATON_TASK_ATTR_INIT;

		ta.coro = *a;
		for (int i = 0; i < 2; i++)
			if (ALLOWED(baton_sched_spawn(s, &ta, seq_task, &sw)) == BATON_OK)
				expect += 50;
		TC_CHECK(baton_sched_run(s) == BATON_OK);
		TC_CHECK(baton_sched_destroy(s) == BATON_OK);
	}
	TC_CHECK(sw.n == expect);
	TC_CHECK(baton_seq_destroy(sw.seq) == BATON_OK);
}

static void test_seq(void **state)
{
	tc_watchdog_phase(120, "sequencer");
	fault_sweep("sequencer", scenario_seq, TC_ATTR(state), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_coro),
		TC_MODEL_TESTS(test_sched),
		TC_MODEL_TESTS(test_seq),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
