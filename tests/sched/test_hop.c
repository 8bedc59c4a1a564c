/* SPDX-License-Identifier: MIT */
/*
 * The scheduler's hop: a task that blocks, yields or finishes
 * switches straight to the next task of its worker and leaves an
 * after-switch hook (release its locks, requeue it, free it) for the side
 * that runs next.
 *
 *  - the runnext slot's fairness bound: a ping-pong pair keeps handing the
 *    worker to each other through runnext, and a task waiting in the FIFO
 *    queue must still run at least every BATON_SCHED_RUNNEXT_MAX hops;
 *  - hooks under migration: rings of tasks on two workers that park, yield,
 *    sleep, spawn and finish while idle workers steal and woken tasks follow
 *    their wakers (run under ThreadSanitizer: a hook that ran before the
 *    context was saved, or a task reached by two workers, is a race there);
 *  - the counters of baton_sched_stats and its errors.
 */
#include "check.h"

#include <stdbool.h>

/* --- the fairness bound ---------------------------------------------------- */

#define PP_ROUNDS 20000

static baton_chan_t *pp_a, *pp_b;
static long pp_hops;    /* hand-overs of the pair (one worker: plain) */
static long pp_max_gap; /* most pair hops between two bystander turns */
static long pp_turns;   /* bystander turns while the pair played */
static bool pp_done;

static void pp_ping(void *arg)
{
	void *v;

	(void)arg;
	for (long i = 0; i < PP_ROUNDS; i++) {
		TC_CHECK_RC(baton_chan_send(pp_a, (void *)i, -1), BATON_OK);
		pp_hops++;
		TC_CHECK_RC(baton_chan_recv(pp_b, &v, -1), BATON_OK);
		pp_hops++;
		TC_CHECK(v == (void *)i);
	}
	pp_done = true;
}

static void pp_pong(void *arg)
{
	void *v;

	(void)arg;
	for (long i = 0; i < PP_ROUNDS; i++) {
		TC_CHECK_RC(baton_chan_recv(pp_a, &v, -1), BATON_OK);
		TC_CHECK_RC(baton_chan_send(pp_b, v, -1), BATON_OK);
	}
}

/* Runnable in the FIFO queue the whole time: it yields, so it is always
 * behind whatever the pair displaces from runnext. */
static void pp_bystander(void *arg)
{
	long last = 0;

	(void)arg;
	while (!pp_done) {
		long gap = pp_hops - last;

		if (gap > pp_max_gap)
			pp_max_gap = gap;
		last = pp_hops;
		if (pp_hops > 0)
			pp_turns++;
		baton_sched_yield();
	}
}

static void test_runnext_fairness(void **state)
{
	baton_sched_t *s = tc_sched(1);
	struct baton_sched_stats st;

	tc_watchdog_phase(60, "runnext_fairness");
	tc_reset();
	pp_hops = pp_max_gap = pp_turns = 0;
	pp_done = false;
	assert_int_equal(baton_chan_create(&pp_a, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&pp_b, 0), BATON_OK);
	tc_spawn(s, state, BATON_SCHED_ANY_WORKER, pp_bystander, NULL);
	tc_spawn(s, state, BATON_SCHED_ANY_WORKER, pp_pong, NULL);
	tc_spawn(s, state, BATON_SCHED_ANY_WORKER, pp_ping, NULL);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	/* Each pair hop is one runnext dispatch; the bound is counted in
	 * dispatches, and a turn of the bystander costs the pair at most a
	 * couple of hops of slack (the one displaced, the one that yields). */
	assert_true(pp_max_gap <= BATON_SCHED_RUNNEXT_MAX + 4);
	/* It did run between the pair's hand-overs, not only after them. */
	assert_true(pp_turns >= 2L * PP_ROUNDS / (BATON_SCHED_RUNNEXT_MAX + 4) - 2);
	assert_int_equal(baton_sched_stats(s, &st), BATON_OK);
	assert_true(st.fair_turns > 0);
	assert_true(st.handoffs > 0 && st.handoffs <= st.dispatches);
	assert_int_equal(st.cross_wakes, 0); /* one worker */
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	assert_int_equal(baton_chan_destroy(pp_a), BATON_OK);
	assert_int_equal(baton_chan_destroy(pp_b), BATON_OK);
}

/* --- hooks under migration -------------------------------------------------- */

#define MG_RINGS 16
#define MG_N 4

static baton_chan_t *mg_ch[MG_RINGS * MG_N];
static long mg_rounds;
static long mg_sum;      /* messages that came back right (atomic) */
static long mg_children; /* short-lived tasks that ran (atomic) */
static int mg_seen[2];   /* a member ran on worker i (atomic) */
static void **mg_state;
static baton_sched_t *mg_s;

static void mg_child(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&mg_children, 1, __ATOMIC_RELAXED);
	/* Finishes at once: its DONE hook runs on whichever task is next. */
}

static void mg_note_worker(void)
{
	int w = baton_sched_worker_index();

	if (w == 0 || w == 1)
		__atomic_store_n(&mg_seen[w], 1, __ATOMIC_RELAXED);
}

static void mg_member(void *arg)
{
	long id = (long)arg, ring = id / MG_N, pos = id % MG_N;
	baton_chan_t *in = mg_ch[id];
	baton_chan_t *right = mg_ch[ring * MG_N + (pos + 1) % MG_N];
	void *v;

	for (long r = 0; r < mg_rounds; r++) {
		if (pos == 0) {
			TC_CHECK_RC(baton_chan_send(right, (void *)(r * 100), -1), BATON_OK);
			TC_CHECK_RC(baton_chan_recv(in, &v, -1), BATON_OK);
			if ((long)v == r * 100 + MG_N - 1)
				__atomic_add_fetch(&mg_sum, 1, __ATOMIC_RELAXED);
		} else {
			TC_CHECK_RC(baton_chan_recv(in, &v, -1), BATON_OK);
			switch ((r + pos) % 8) {
			case 0: /* YIELD hook, then go on */
				TC_CHECK_RC(baton_sched_yield(), BATON_OK);
				break;
			case 3: /* a timed park: its timer pins it meanwhile */
				TC_CHECK_RC(baton_sched_sleep(1000), BATON_OK);
				break;
			case 5: { /* a task that finishes on its own */
				struct baton_task_attr a =
					tc_tattr(mg_state, BATON_SCHED_ANY_WORKER);

				TC_CHECK_RC(baton_sched_spawn(mg_s, &a, mg_child, NULL), BATON_OK);
				break;
			}
			default:
				break;
			}
			TC_CHECK_RC(baton_chan_send(right, (void *)((long)v + 1), -1), BATON_OK);
		}
		mg_note_worker();
	}
}

static void test_hooks_under_migration(void **state)
{
	struct baton_sched_stats st;
	int64_t deadline = tc_now() + TC_MS(3000) * tc_time_scale();

	tc_watchdog_phase(120, "hooks_under_migration");
	tc_reset();
	mg_state = state;
	mg_rounds = tc_scale(TC_TSAN ? 300 : 2000, 100);
	for (int i = 0; i < MG_RINGS * MG_N; i++)
		assert_int_equal(baton_chan_create(&mg_ch[i], 0), BATON_OK);
	/* Until both workers have run members (a loaded machine may keep
	 * worker 1 off the CPU for a whole run), at most 3 s. */
	do {
		mg_sum = mg_children = 0;
		mg_seen[0] = mg_seen[1] = 0;
		mg_s = tc_sched(2);
		/* Everything starts on worker 0: worker 1 has to steal, and
		 * what it steals pulls its partners along as it wakes them. */
		for (long i = 0; i < MG_RINGS * MG_N; i++)
			tc_spawn(mg_s, state, 0, mg_member, (void *)i);
		assert_int_equal(baton_sched_run(mg_s), BATON_OK);
		TC_VERDICT();
		assert_int_equal(mg_sum, MG_RINGS * mg_rounds);
		assert_true(mg_children > 0);
		assert_int_equal(baton_sched_stats(mg_s, &st), BATON_OK);
		assert_true(st.handoffs > 0 && st.handoffs <= st.dispatches);
		assert_int_equal(baton_sched_destroy(mg_s), BATON_OK);
	} while (!(mg_seen[0] && mg_seen[1]) && tc_now() < deadline);
	/* Copy-stack tasks stay where they first ran: all on worker 0. */
	if (TC_ATTR(state)->model == BATON_CORO_STACKFUL && !(mg_seen[0] && mg_seen[1]))
		print_message("note: worker 1 never ran a member (machine busy?)\n");
	for (int i = 0; i < MG_RINGS * MG_N; i++)
		assert_int_equal(baton_chan_destroy(mg_ch[i]), BATON_OK);
}

/* --- the counters' API ------------------------------------------------------ */

static baton_sched_t *sb_s;
static int sb_rc;

static void sb_task(void *arg)
{
	struct baton_sched_stats st;

	(void)arg;
	sb_rc = baton_sched_stats(sb_s, &st);
}

static void test_stats_api(void **state)
{
	struct baton_sched_stats st;

	tc_watchdog_phase(20, "stats_api");
	sb_s = tc_sched(1);
	assert_int_equal(baton_sched_stats(NULL, &st), BATON_EINVAL);
	assert_int_equal(baton_sched_stats(sb_s, NULL), BATON_EINVAL);
	assert_int_equal(baton_sched_stats(sb_s, &st), BATON_OK);
	assert_int_equal(st.dispatches, 0);
	tc_spawn(sb_s, state, BATON_SCHED_ANY_WORKER, sb_task, NULL);
	assert_int_equal(baton_sched_run(sb_s), BATON_OK);
	assert_int_equal(sb_rc, BATON_EBUSY); /* asked while running */
	assert_int_equal(baton_sched_stats(sb_s, &st), BATON_OK);
	assert_int_equal(st.dispatches, 1);
	assert_int_equal(baton_sched_destroy(sb_s), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(test_runnext_fairness),
		TC_MODEL_TESTS(test_hooks_under_migration),
		TC_MODEL_TESTS(test_stats_api),
	};

	return cmocka_run_group_tests_name("hop", tests, NULL, NULL);
}
