/* SPDX-License-Identifier: MIT */
/*
 * tests/test_smr.c - safe memory reclamation (include/baton/smr.h): read
 * sections across a park and a move to another worker, retire and
 * synchronize from tasks and plain threads, the stalled reader (a bound
 * for hazard pointers, a timeout for read sections), argument checks and
 * the barrier mechanism the environment forces (BATON_BARRIER: CTest runs
 * this program once per mechanism).
 *
 * Objects carry a live flag that their free function clears before
 * freeing them: a reader that finds it clear (or ASan, the freed memory)
 * has seen a reclamation too early.
 */
#include "check.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

#include <baton/smr.h>
#include <baton/sync.h>

struct obj {
	int live; /* (atomic) 1 until freed */
	long value;
};

static long freed_count; /* (atomic) */

static void obj_free(void *p)
{
	struct obj *o = p;

	/* Relaxed: the free below is what a late reader would trip on. */
	__atomic_store_n(&o->live, 0, __ATOMIC_RELAXED);
	__atomic_fetch_add(&freed_count, 1, __ATOMIC_RELAXED);
	free(o);
}

static struct obj *obj_new(long v)
{
	struct obj *o = malloc(sizeof(*o));

	assert_non_null(o);
	o->live = 1;
	o->value = v;
	return o;
}

static int obj_live(struct obj *o)
{
	return __atomic_load_n(&o->live, __ATOMIC_RELAXED);
}

/* --- the mechanism ----------------------------------------------------- */

static void test_barrier_kind(void **state)
{
	const char *force = getenv("BATON_BARRIER");
	int k = baton_smr_barrier_kind();

	(void)state;
	print_message("barrier: %s (forced: %s)\n", baton_smr_barrier_name(k),
		      force ? force : "no");
	assert_true(k >= BATON_SMR_BARRIER_FENCE && k <= BATON_SMR_BARRIER_MPROTECT);
	assert_string_equal(baton_smr_barrier_name(99), "");
	if (TC_TSAN || (force && strcmp(force, "fence") == 0)) {
		assert_int_equal(k, BATON_SMR_BARRIER_FENCE);
	} else if (force && strcmp(force, "mprotect") == 0) {
#if defined(__x86_64__)
		assert_int_equal(k, BATON_SMR_BARRIER_MPROTECT);
#else
		assert_int_equal(k, BATON_SMR_BARRIER_FENCE);
#endif
	} else if (force && strcmp(force, "membarrier") == 0) {
		/* Refused by the kernel only in sandboxes: then a fallback. */
		assert_true(k == BATON_SMR_BARRIER_MEMBARRIER || k == BATON_SMR_BARRIER_MPROTECT ||
			    k == BATON_SMR_BARRIER_FENCE);
	}
	assert_int_equal(baton_smr_barrier_kind(), k); /* chosen once */
}

/* --- arguments ---------------------------------------------------------- */

static void test_args(void **state)
{
	baton_smr_t *d;
	baton_smr_hp_t *hp;
	int tok;
	void *p;
	struct baton_smr_stats st;

	(void)state;
	assert_int_equal(baton_smr_create(NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_create(&d), BATON_OK);
	assert_int_equal(baton_smr_read_lock(NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_read_unlock(NULL, 0), BATON_EINVAL);
	assert_int_equal(baton_smr_read_unlock(d, 2), BATON_EINVAL);
	assert_int_equal(baton_smr_read_unlock(d, -1), BATON_EINVAL);
	assert_int_equal(baton_smr_synchronize(NULL, -1), BATON_EINVAL);
	assert_int_equal(baton_smr_barrier(NULL, -1), BATON_EINVAL);
	assert_int_equal(baton_smr_poll(NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_retire(NULL, d, obj_free), BATON_EINVAL);
	assert_int_equal(baton_smr_retire(d, d, NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_retire(NULL, d, obj_free), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_retire(d, d, NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_acquire(NULL, &hp), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_acquire(d, NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_protect(NULL, &p, &p), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_clear(NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_release(NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_stats(NULL, &st), BATON_EINVAL);
	assert_int_equal(baton_smr_stats(d, NULL), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_acquire(d, &hp), BATON_OK);
	assert_int_equal(baton_smr_hp_protect(hp, NULL, &p), BATON_EINVAL);
	assert_int_equal(baton_smr_hp_protect(hp, &p, NULL), BATON_EINVAL);

	/* Busy while a slot is held or a section is open; unchanged. */
	assert_int_equal(baton_smr_destroy(d), BATON_EBUSY);
	assert_int_equal(baton_smr_hp_release(hp), BATON_OK);
	tok = baton_smr_read_lock(d);
	assert_true(tok == 0 || tok == 1);
	int tok2 = baton_smr_read_lock(d); /* nested */
	assert_true(tok2 == 0 || tok2 == 1);
	assert_int_equal(baton_smr_read_unlock(d, tok2), BATON_OK);
	assert_int_equal(baton_smr_destroy(d), BATON_EBUSY);
	/* A section open: a synchronize on the same domain times out. */
	assert_int_equal(baton_smr_synchronize(d, TC_MS(20)), BATON_ETIMEDOUT);
	assert_int_equal(baton_smr_read_unlock(d, tok), BATON_OK);
	assert_int_equal(baton_smr_synchronize(d, -1), BATON_OK);
	/* A slot is reused, not made again. */
	assert_int_equal(baton_smr_hp_acquire(d, &hp), BATON_OK);
	assert_int_equal(baton_smr_stats(d, &st), BATON_OK);
	assert_int_equal(st.hp_slots, 1);
	assert_int_equal(st.readers, 1);
	assert_int_equal(baton_smr_hp_release(hp), BATON_OK);
	assert_int_equal(baton_smr_destroy(d), BATON_OK);
	assert_int_equal(baton_smr_destroy(NULL), BATON_OK);
}

/* --- retire, poll, barrier, destroy ----------------------------------- */

static void test_retire_batches(void **state)
{
	baton_smr_t *d;
	struct baton_smr_stats st;
	long before = __atomic_load_n(&freed_count, __ATOMIC_RELAXED);
	int tok;

	(void)state;
	assert_int_equal(baton_smr_create(&d), BATON_OK);
	/* A reader holds everything back: nothing retired is freed. */
	tok = baton_smr_read_lock(d);
	assert_true(tok >= 0);
	for (int i = 0; i < 3 * BATON_SMR_BATCH + 5; i++)
		assert_int_equal(baton_smr_retire(d, obj_new(i), obj_free), BATON_OK);
	assert_int_equal(baton_smr_poll(d), BATON_OK);
	assert_int_equal(baton_smr_stats(d, &st), BATON_OK);
	assert_int_equal(st.retired, 3 * BATON_SMR_BATCH + 5);
	assert_int_equal(st.pending, 3 * BATON_SMR_BATCH + 5);
	assert_int_equal(baton_smr_barrier(d, TC_MS(10)), BATON_ETIMEDOUT);
	assert_int_equal(baton_smr_read_unlock(d, tok), BATON_OK);
	/* The shutdown barrier frees everything, the open batch too. */
	assert_int_equal(baton_smr_barrier(d, -1), BATON_OK);
	assert_int_equal(baton_smr_stats(d, &st), BATON_OK);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.freed, st.retired);
	assert_true(st.grace_periods >= 1);
	assert_int_equal(__atomic_load_n(&freed_count, __ATOMIC_RELAXED) - before,
			 3 * BATON_SMR_BATCH + 5);
	/* Destroy frees what is still retired. */
	for (int i = 0; i < 10; i++)
		assert_int_equal(baton_smr_retire(d, obj_new(i), obj_free), BATON_OK);
	for (int i = 0; i < 10; i++)
		assert_int_equal(baton_smr_hp_retire(d, obj_new(i), obj_free), BATON_OK);
	assert_int_equal(baton_smr_destroy(d), BATON_OK);
	assert_int_equal(__atomic_load_n(&freed_count, __ATOMIC_RELAXED) - before,
			 3 * BATON_SMR_BATCH + 25);
}

/* --- plain threads -------------------------------------------------------- */

struct shared {
	baton_smr_t *d;
	struct obj *cur; /* (atomic) */
	int stop;        /* (atomic) */
	long reads;      /* (atomic) */
	long replaced;
	int use_sync;   /* writer: synchronize+free instead of retire */
	int started;    /* readers past their first section (atomic) */
	unsigned rearm; /* > 0: each replacement re-arms the watchdog */
};

static void read_once(struct shared *sh)
{
	int tok = baton_smr_read_lock(sh->d);
	struct obj *o;

	TC_CHECK(tok == 0 || tok == 1);
	/* Acquire: the object's fields, published before the pointer. */
	o = __atomic_load_n(&sh->cur, __ATOMIC_ACQUIRE);
	for (int k = 0; k < 50; k++)
		TC_CHECK(obj_live(o));
	TC_CHECK(o->value >= 0);
	TC_CHECK_RC(baton_smr_read_unlock(sh->d, tok), BATON_OK);
	__atomic_fetch_add(&sh->reads, 1, __ATOMIC_RELAXED);
}

static void *reader_thread(void *arg)
{
	struct shared *sh = arg;

	read_once(sh);
	/* Relaxed: a count the starter polls before it lets writers go. */
	__atomic_fetch_add(&sh->started, 1, __ATOMIC_RELAXED);
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED))
		read_once(sh);
	return NULL;
}

static void replace_once(struct shared *sh, long v)
{
	/* Acq_rel: publishes the new object, takes the old one's fields. */
	struct obj *old = __atomic_exchange_n(&sh->cur, obj_new(v), __ATOMIC_ACQ_REL);

	if (sh->use_sync) {
		TC_CHECK_RC(baton_smr_synchronize(sh->d, -1), BATON_OK);
		obj_free(old);
	} else {
		TC_CHECK_RC(baton_smr_retire(sh->d, old, obj_free), BATON_OK);
	}
	if (sh->rearm)
		alarm(sh->rearm);
}

static void *writer_thread(void *arg)
{
	struct shared *sh = arg;

	for (long i = 0; i < sh->replaced; i++)
		replace_once(sh, i);
	return NULL;
}

static void run_threads(int use_sync)
{
	struct shared sh = { 0 };
	pthread_t r[3], w[2];
	long n = tc_scale(use_sync ? 2000 : 20000, 200);

	tc_reset();
	/* A hang is a writer that makes no progress: the watchdog counts
	 * from the last replacement. With synchronize the run takes 4000
	 * grace periods against spinning readers, each as long as the
	 * scheduler takes to run a reader preempted in its section: 2 s
	 * under TSan on an idle machine, over 80 s on a loaded one. */
	tc_watchdog_phase(120, use_sync ? "threads, synchronize" : "threads, retire");
	sh.rearm = 120 * (unsigned)tc_time_scale();
	assert_int_equal(baton_smr_create(&sh.d), BATON_OK);
	sh.cur = obj_new(0);
	sh.replaced = n;
	sh.use_sync = use_sync;
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&r[i], NULL, reader_thread, &sh), 0);
	/* Every reader has a record before the writers start: on a loaded
	 * machine the writers could otherwise be done before one ran. */
	while (__atomic_load_n(&sh.started, __ATOMIC_RELAXED) < 3)
		usleep(1000);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&w[i], NULL, writer_thread, &sh), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	alarm(sh.rearm); /* the rest, from here */
	__atomic_store_n(&sh.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 3; i++)
		pthread_join(r[i], NULL);
	assert_int_equal(baton_smr_barrier(sh.d, -1), BATON_OK);
	struct baton_smr_stats st;
	assert_int_equal(baton_smr_stats(sh.d, &st), BATON_OK);
	assert_int_equal(st.pending, 0);
	print_message("threads (%s): %ld reads, %lu grace periods, %lu readers\n",
		      use_sync ? "synchronize" : "retire", sh.reads,
		      (unsigned long)st.grace_periods, (unsigned long)st.readers);
	assert_true(st.readers >= 3);
	obj_free(sh.cur);
	assert_int_equal(baton_smr_destroy(sh.d), BATON_OK);
	TC_VERDICT();
}

static void test_threads_retire(void **state)
{
	(void)state;
	run_threads(0);
}

static void test_threads_synchronize(void **state)
{
	(void)state;
	run_threads(1);
}

/* --- tasks: a section across a park and a move ---------------------------- */

struct park {
	baton_smr_t *d;
	struct obj *cur;      /* (atomic) */
	baton_chan_t *held;   /* reader -> writer: "I hold cur" */
	baton_chan_t *req[2]; /* reader -> the waker bound to worker k */
	baton_chan_t *wake;   /* a waker -> reader */
	baton_chan_t *done;   /* writer -> reader: round over, section may begin */
	int ended;            /* (atomic) sections ended (set just before unlock) */
	int moved;            /* rounds where the section ended on another worker */
	int rounds;
};

/* Each round: a section that parks and is woken by a task bound to the
 * other worker, so that a task free to move ends it there. The next
 * section begins only once the writer is done with the round: a grace
 * period may also wait for a section that began after synchronize was
 * called (one that read the index before the period flipped it), so a
 * section that blocked on the writer (the `held` hand-over) while the
 * writer is still in the last round's synchronize would wait for itself. */
static void park_reader(void *arg)
{
	struct park *p = arg;

	for (int r = 0; r < p->rounds; r++) {
		int tok = baton_smr_read_lock(p->d);
		void *msg;
		struct obj *o;
		int w0;

		TC_CHECK(tok == 0 || tok == 1);
		w0 = baton_sched_worker_index();
		o = __atomic_load_n(&p->cur, __ATOMIC_ACQUIRE); /* as above */
		TC_CHECK_RC(baton_chan_send(p->held, o, -1), BATON_OK);
		TC_CHECK_RC(baton_chan_send(p->req[w0 ^ 1], NULL, -1), BATON_OK);
		TC_CHECK_RC(baton_chan_recv(p->wake, &msg, -1), BATON_OK);
		TC_CHECK(obj_live(o));
		if (baton_sched_worker_index() != w0)
			p->moved++;
		/* Relaxed: the unlock's release orders it for the writer. */
		__atomic_store_n(&p->ended, r + 1, __ATOMIC_RELAXED);
		TC_CHECK_RC(baton_smr_read_unlock(p->d, tok), BATON_OK);
		TC_CHECK_RC(baton_chan_recv(p->done, &msg, -1), BATON_OK);
	}
	baton_chan_close(p->req[0]);
	baton_chan_close(p->req[1]);
}

struct waker {
	struct park *p;
	int k;
};

static void park_waker(void *arg)
{
	struct waker *w = arg;
	void *msg;

	while (baton_chan_recv(w->p->req[w->k], &msg, -1) == BATON_OK) {
		baton_sched_sleep(TC_MS(5)); /* the writer waits meanwhile */
		TC_CHECK_RC(baton_chan_send(w->p->wake, NULL, -1), BATON_OK);
	}
}

static void park_writer(void *arg)
{
	struct park *p = arg;

	for (int r = 0; r < p->rounds; r++) {
		void *held;
		struct obj *old;

		TC_CHECK_RC(baton_chan_recv(p->held, &held, -1), BATON_OK);
		old = __atomic_exchange_n(&p->cur, obj_new(r), __ATOMIC_ACQ_REL);
		TC_CHECK(old == held);
		if (r % 2 == 0) {
			/* Parks this task until the reader, parked in its
			 * section on the other worker, has left it. */
			TC_CHECK_RC(baton_smr_synchronize(p->d, -1), BATON_OK);
			TC_CHECK(__atomic_load_n(&p->ended, __ATOMIC_ACQUIRE) >= r + 1);
			obj_free(old);
		} else {
			TC_CHECK_RC(baton_smr_retire(p->d, old, obj_free), BATON_OK);
			TC_CHECK_RC(baton_smr_poll(p->d), BATON_OK);
		}
		TC_CHECK_RC(baton_chan_send(p->done, NULL, -1), BATON_OK);
	}
	TC_CHECK_RC(baton_smr_barrier(p->d, -1), BATON_OK);
}

static void test_tasks_park_move(void **state)
{
	struct park p = { 0 };
	struct waker wk[2] = { { &p, 0 }, { &p, 1 } };
	baton_sched_t *s = tc_sched(2);

	tc_reset();
	tc_watchdog_phase(120, "tasks, section across a park and a move");
	p.rounds = (int)tc_scale(40, 10);
	assert_int_equal(baton_smr_create(&p.d), BATON_OK);
	assert_int_equal(baton_chan_create(&p.held, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&p.wake, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&p.done, 1), BATON_OK);
	for (int k = 0; k < 2; k++) {
		struct baton_task_attr a = tc_tattr(state, k);

		assert_int_equal(baton_chan_create(&p.req[k], 1), BATON_OK);
		a.flags = BATON_TASK_BOUND;
		assert_int_equal(baton_sched_spawn(s, &a, park_waker, &wk[k]), BATON_OK);
	}
	p.cur = obj_new(-1);
	tc_spawn(s, state, 0, park_reader, &p);
	tc_spawn(s, state, 1, park_writer, &p);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	print_message("%s: %d of %d sections ended on another worker\n", TC_ATTR(state)->name,
		      p.moved, p.rounds);
	/* A stackful task follows its waker; a copy-stack one stays. */
	if (TC_ATTR(state)->model == BATON_CORO_STACKFUL)
		assert_true(p.moved >= p.rounds / 2);
	obj_free(p.cur);
	assert_int_equal(baton_smr_destroy(p.d), BATON_OK);
	baton_chan_destroy(p.held);
	baton_chan_destroy(p.wake);
	baton_chan_destroy(p.done);
	baton_chan_destroy(p.req[0]);
	baton_chan_destroy(p.req[1]);
	baton_sched_destroy(s);
}

/* --- tasks and threads together ----------------------------------------- */

struct mixed {
	struct shared sh;
	baton_wg_t *wg; /* the writer tasks */
};

static void mixed_reader(void *arg)
{
	struct mixed *m = arg;

	while (!__atomic_load_n(&m->sh.stop, __ATOMIC_RELAXED)) {
		read_once(&m->sh);
		baton_sched_yield();
	}
}

static void mixed_writer(void *arg)
{
	struct mixed *m = arg;

	for (long i = 0; i < m->sh.replaced; i++) {
		replace_once(&m->sh, i);
		if (i % 16 == 0)
			TC_CHECK_RC(baton_smr_synchronize(m->sh.d, -1), BATON_OK);
	}
	TC_CHECK_RC(baton_wg_done(m->wg), BATON_OK);
}

static void mixed_boss(void *arg)
{
	struct mixed *m = arg;

	TC_CHECK_RC(baton_wg_wait(m->wg, -1), BATON_OK);
	/* Relaxed: the readers only need to notice eventually. */
	__atomic_store_n(&m->sh.stop, 1, __ATOMIC_RELAXED);
}

/* Writer tasks retire and synchronize while reader tasks, a reader thread
 * and a writer thread share the domain. */
static void test_tasks_and_threads(void **state)
{
	struct mixed m = { 0 };
	baton_sched_t *s = tc_sched(2);
	pthread_t rt, wt;

	tc_reset();
	tc_watchdog_phase(120, "tasks and threads retiring");
	m.sh.replaced = tc_scale(3000, 300);
	assert_int_equal(baton_smr_create(&m.sh.d), BATON_OK);
	assert_int_equal(baton_wg_create(&m.wg), BATON_OK);
	m.sh.cur = obj_new(0);
	assert_int_equal(baton_wg_add(m.wg, 2), BATON_OK);
	assert_int_equal(pthread_create(&rt, NULL, reader_thread, &m.sh), 0);
	assert_int_equal(pthread_create(&wt, NULL, writer_thread, &m.sh), 0);
	tc_spawn(s, state, 0, mixed_writer, &m);
	tc_spawn(s, state, 1, mixed_writer, &m);
	tc_spawn(s, state, 0, mixed_boss, &m);
	for (int i = 0; i < 4; i++)
		tc_spawn(s, state, i % 2, mixed_reader, &m);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	pthread_join(wt, NULL);
	pthread_join(rt, NULL);
	TC_VERDICT();
	assert_int_equal(baton_smr_barrier(m.sh.d, -1), BATON_OK);
	obj_free(m.sh.cur);
	assert_int_equal(baton_smr_destroy(m.sh.d), BATON_OK);
	baton_wg_destroy(m.wg);
	baton_sched_destroy(s);
}

/* --- hazard pointers: a reader stalled forever ------------------------------ */

struct stall {
	baton_smr_t *d;
	struct obj *cur; /* (atomic) */
	baton_smr_hp_t *stalled;
	struct obj *held;
	uint64_t max_pending, bound;
	int done;        /* (atomic) the writer has finished (soak readers stop) */
	int64_t soak_ns; /* how long the writer retired (soak) */
};

/* A task takes a slot, protects the current object and never clears it;
 * the writer (a plain thread here, tasks below) retires many objects. */
static void stall_reader(void *arg)
{
	struct stall *st = arg;
	void *p;

	TC_CHECK_RC(baton_smr_hp_acquire(st->d, &st->stalled), BATON_OK);
	TC_CHECK_RC(baton_smr_hp_protect(st->stalled, (void *const *)&st->cur, &p), BATON_OK);
	st->held = p;
	baton_sched_sleep(TC_MS(1)); /* parks holding it: the slot is the task's */
}

static long soak_seconds(void);

static void hp_reader(void *arg)
{
	struct stall *st = arg;
	baton_smr_hp_t *hp;
	int soak = soak_seconds() > 0;

	TC_CHECK_RC(baton_smr_hp_acquire(st->d, &hp), BATON_OK);
	/* A soak keeps the slots busy for as long as the writer retires.
	 * Relaxed: a stop flag, noticed eventually. */
	for (long i = 0; i < 2000 || (soak && !__atomic_load_n(&st->done, __ATOMIC_RELAXED)); i++) {
		void *p;

		TC_CHECK_RC(baton_smr_hp_protect(hp, (void *const *)&st->cur, &p), BATON_OK);
		for (int k = 0; k < 20; k++)
			TC_CHECK(obj_live(p));
		TC_CHECK_RC(baton_smr_hp_clear(hp), BATON_OK);
		if (i % 64 == 0)
			baton_sched_yield();
	}
	TC_CHECK_RC(baton_smr_hp_release(hp), BATON_OK);
}

/* BATON_SMR_SOAK_SECONDS=S: the soak of the bound (make soak-smr). main
 * then runs only the stalled-reader test, once per model, each retiring
 * for its share of S seconds instead of a fixed count while the hazard
 * readers keep protecting, and prints the summary line (soak_report). */
static long soak_seconds(void)
{
	const char *s = getenv("BATON_SMR_SOAK_SECONDS");

	return s && atol(s) > 0 ? atol(s) : 0;
}

/* The soak's figures, summed over its runs (one per model). */
static struct {
	unsigned runs;
	int64_t ns;                     /* the writers' time retiring */
	uint64_t retired, freed, slots; /* at each run's end */
	uint64_t max_pending, bound;    /* the most seen; the least bound */
} soak_sum;

/* The share of S seconds of the run about to start: S split between the
 * two models (TC_MODEL_TESTS), the remainder to the last. */
static int64_t soak_share_ns(void)
{
	long s = soak_seconds();

	return TC_MS(1000) * (soak_sum.runs == 0 ? s / 2 : s - s / 2);
}

static void hp_writer(void *arg)
{
	struct stall *st = arg;
	long n = soak_seconds() ? LONG_MAX : tc_scale(20000, 2000);
	int64_t t0 = tc_now();
	int64_t end = soak_seconds() ? t0 + soak_share_ns() : 0;

	for (long i = 0; i < n && (end == 0 || (i % 1024) || tc_now() < end); i++) {
		struct obj *old = __atomic_exchange_n(&st->cur, obj_new(i), __ATOMIC_ACQ_REL);
		struct baton_smr_stats s;

		TC_CHECK_RC(baton_smr_hp_retire(st->d, old, obj_free), BATON_OK);
		TC_CHECK_RC(baton_smr_stats(st->d, &s), BATON_OK);
		if (s.hp_pending > st->max_pending)
			st->max_pending = s.hp_pending;
		st->bound = s.hp_bound;
		TC_CHECK(s.hp_pending <= s.hp_bound);
		if (i % 128 == 0)
			baton_sched_yield();
	}
	st->soak_ns = tc_now() - t0;
	/* Relaxed: a stop flag; run's return orders the rest for the test. */
	__atomic_store_n(&st->done, 1, __ATOMIC_RELAXED);
}

/* Commas every three digits (the soak's counts run to billions). */
static const char *grouped(uint64_t v, char buf[32])
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v), o = 0;

	for (int i = 0; i < n; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
	return buf;
}

/* The soak's verdict, from the figures measured: held if every run ended
 * without a failure and no retire left more unreclaimed than the bound.
 * Returns the exit status. */
static int soak_report(int failed)
{
	char r[32], f[32];
	int held = !failed && soak_sum.runs == 2 && soak_sum.max_pending <= soak_sum.bound;

	printf("smr soak (%s): %lld s, %s retired, %s freed, unreclaimed at most %llu "
	       "(bound %llu = max(2 x %llu slots, %d)): %s\n",
	       baton_smr_barrier_name(baton_smr_barrier_kind()),
	       (long long)((soak_sum.ns + TC_MS(500)) / TC_MS(1000)), grouped(soak_sum.retired, r),
	       grouped(soak_sum.freed, f), (unsigned long long)soak_sum.max_pending,
	       (unsigned long long)soak_sum.bound, (unsigned long long)soak_sum.slots,
	       BATON_SMR_BATCH,
	       held                                            ? "held"
		       : soak_sum.max_pending > soak_sum.bound ? "EXCEEDED"
							       : "FAILED (see above)");
	fflush(stdout);
	return held ? 0 : 1;
}

static void test_hp_stalled_reader(void **state)
{
	struct stall st = { 0 };
	baton_sched_t *s = tc_sched(2);
	struct baton_smr_stats ss;

	tc_reset();
	tc_watchdog_phase(120 + (unsigned)soak_seconds(), "hazard pointers, stalled reader");
	assert_int_equal(baton_smr_create(&st.d), BATON_OK);
	st.cur = obj_new(-1);
	tc_spawn(s, state, 0, stall_reader, &st);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_ptr_not_equal(st.held, NULL);
	tc_spawn(s, state, 0, hp_reader, &st);
	tc_spawn(s, state, 1, hp_reader, &st);
	tc_spawn(s, state, 1, hp_writer, &st);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(baton_smr_stats(st.d, &ss), BATON_OK);
	/* Counted before any check can end the test: a failed soak still
	 * reports what it saw. */
	soak_sum.runs++;
	soak_sum.ns += st.soak_ns;
	soak_sum.retired += ss.retired;
	soak_sum.freed += ss.freed;
	soak_sum.slots = ss.hp_slots;
	if (st.max_pending > soak_sum.max_pending)
		soak_sum.max_pending = st.max_pending;
	if (soak_sum.bound == 0 || st.bound < soak_sum.bound)
		soak_sum.bound = st.bound;
	TC_VERDICT();
	/* The stalled slot still names its object: it is alive, retired,
	 * and the pending count stayed under the bound throughout. */
	assert_true(obj_live(st.held));
	print_message("%s: hazard slots %lu, bound %lu, most pending %lu, freed %lu\n",
		      TC_ATTR(state)->name, (unsigned long)ss.hp_slots, (unsigned long)st.bound,
		      (unsigned long)st.max_pending, (unsigned long)ss.freed);
	assert_true(st.max_pending <= st.bound);
	assert_true(ss.hp_bound ==
		    (ss.hp_slots * 2 > BATON_SMR_BATCH ? ss.hp_slots * 2 : BATON_SMR_BATCH));
	assert_true(ss.freed + ss.hp_pending == ss.retired);
	/* Released, the object goes with the domain. */
	assert_int_equal(baton_smr_destroy(st.d), BATON_EBUSY);
	assert_int_equal(baton_smr_hp_release(st.stalled), BATON_OK);
	obj_free(st.cur);
	assert_int_equal(baton_smr_destroy(st.d), BATON_OK);
	baton_sched_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_barrier_kind),        cmocka_unit_test(test_args),
		cmocka_unit_test(test_retire_batches),      cmocka_unit_test(test_threads_retire),
		cmocka_unit_test(test_threads_synchronize), TC_MODEL_TESTS(test_tasks_park_move),
		TC_MODEL_TESTS(test_tasks_and_threads),     TC_MODEL_TESTS(test_hp_stalled_reader),
	};
	const struct CMUnitTest smr_soak[] = {
		TC_MODEL_TESTS(test_hp_stalled_reader),
	};

	if (soak_seconds())
		return soak_report(cmocka_run_group_tests(smr_soak, NULL, NULL));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
