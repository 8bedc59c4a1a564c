/* SPDX-License-Identifier: MIT */
/*
 * baton_sched_destroy() frees every task that had not finished (sched.h
 * rule 5): runnable ones, and ones blocked on a channel (receive, send,
 * select), a mutex, a semaphore, a wait group, a gate, I/O, a sleep and a
 * timed wait. Afterwards the primitives have no waiter left and can be
 * destroyed (what a freed task held stays held, until the program
 * releases it), the handles left open are closed and freed, and (in the ASan
 * build) LeakSanitizer finds nothing: the test fails there if any task,
 * stack or handle leaked. A stage whose own tasks were freed (runners stuck
 * in its handler or idle, the dispatcher waiting for a slot, items queued,
 * a submitter waiting for room) is left idle and can be destroyed (stage.h
 * rule 5). Both coroutine models, one and two workers.
 */
#include "../sync/sync_test.h"

#include <sys/socket.h>
#include <unistd.h>

#include <baton/chan.h>
#include <baton/io.h>
#include <baton/stage.h>

#define FOREVER (-1)

struct world {
	baton_sched_t *s;
	baton_chan_t *recv_ch, *send_ch, *sel_a, *sel_b, *hold_ch, *timed_ch;
	baton_mutex_t *mutex;
	baton_sem_t *sem;
	baton_wg_t *wg;
	baton_gate_t *gate;
	int sv[2];
	int blocked;                 /* tasks that reached their wait (atomic) */
	struct baton_gate_pass hold; /* the holder's slot: the program's to end */
	baton_stage_t *work, *quick; /* with handlers: runners, a dispatcher */
	baton_chan_t *never_ch;      /* the stuck handlers wait here */
	int quick_done;              /* quick's items handled (atomic) */
};

static struct world W;

static void reached(void)
{
	/* Relaxed: a count the stopper polls. */
	__atomic_add_fetch(&W.blocked, 1, __ATOMIC_RELAXED);
}

static void on_recv(void *a)
{
	(void)a;
	reached();
	baton_chan_recv(W.recv_ch, NULL, FOREVER);
	TC_CHECK(0);
}
static void on_send(void *a)
{
	(void)a;
	reached();
	baton_chan_send(W.send_ch, NULL, FOREVER);
	TC_CHECK(0);
}
static void on_timed(void *a)
{
	(void)a;
	reached();
	baton_chan_recv(W.timed_ch, NULL, 60000000000LL);
	TC_CHECK(0);
}
static void on_sem(void *a)
{
	(void)a;
	reached();
	baton_sem_acquire(W.sem, 1, FOREVER);
	TC_CHECK(0);
}
static void on_wg(void *a)
{
	(void)a;
	reached();
	baton_wg_wait(W.wg, FOREVER);
	TC_CHECK(0);
}
static void on_sleep(void *a)
{
	(void)a;
	reached();
	baton_sched_sleep(60000000000LL);
	TC_CHECK(0);
}

static void on_select(void *a)
{
	struct baton_chan_op ops[2] = {
		{ W.sel_a, BATON_CHAN_RECV, NULL, 0 },
		{ W.sel_b, BATON_CHAN_RECV, NULL, 0 },
	};
	size_t i;

	(void)a;
	reached();
	baton_chan_select(ops, 2, FOREVER, &i);
	TC_CHECK(0);
}

/* Holds the gate's one slot, then waits forever. */
static void holder(void *a)
{
	(void)a;
	TC_CHECK_RC(baton_gate_enter(W.gate, &W.hold, FOREVER), BATON_OK);
	reached();
	baton_chan_recv(W.hold_ch, NULL, FOREVER);
	TC_CHECK(0);
}

static void on_mutex(void *a)
{
	(void)a;
	reached();
	baton_mutex_lock(W.mutex, FOREVER);
	TC_CHECK(0);
}

static void on_stage(void *a)
{
	struct baton_gate_pass p = BATON_GATE_PASS_INIT;

	(void)a;
	reached();
	baton_gate_enter(W.gate, &p, FOREVER);
	TC_CHECK(0);
}

static void on_io(void *a)
{
	baton_io_t *io;
	char c;
	size_t n;

	(void)a;
	TC_CHECK_RC(baton_io_open(&io, W.sv[0], true), BATON_OK); /* left open */
	reached();
	baton_io_read(io, &c, 1, FOREVER, &n);
	TC_CHECK(0);
}

static void on_never(void *a)
{
	(void)a;
	TC_CHECK(0);
} /* spawned after the stop */

static baton_task_fn const blockers[] = {
	on_recv, on_send, on_timed, on_sem, on_wg, on_sleep, on_select, holder, on_io,
};
#define NBLOCKERS (sizeof(blockers) / sizeof(blockers[0]))

/* Once every blocker waits (the mutex and gate waiters too), stop the run. */
static void stopper(void *a)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	const struct tc_cfg *c = a;

	ta.coro = *c->attr;
	/* After the holder took the slot. */
	while (__atomic_load_n(&W.blocked, __ATOMIC_RELAXED) < (int)NBLOCKERS)
		baton_sched_sleep(1000000);
	TC_CHECK_RC(baton_sched_spawn(W.s, &ta, on_mutex, NULL), BATON_OK);
	TC_CHECK_RC(baton_sched_spawn(W.s, &ta, on_stage, NULL), BATON_OK);
	while (__atomic_load_n(&W.blocked, __ATOMIC_RELAXED) < (int)NBLOCKERS + 2)
		baton_sched_sleep(1000000);
	baton_sched_sleep(20000000); /* let them all park */
	TC_CHECK_RC(baton_sched_stop(W.s), BATON_OK);
}

/* A fresh world and its scheduler with c's workers. */
static void begin(const struct tc_cfg *c)
{
	struct baton_sched_attr sa = BATON_SCHED_ATTR_INIT;

	tc_watchdog(60);
	tc_reset();
	memset(&W, 0, sizeof(W));
	sa.workers = c->workers;
	assert_int_equal(baton_sched_create(&W.s, &sa), BATON_OK);
}

static void test_destroy_frees_blocked(void **state)
{
	const struct tc_cfg *c = *state;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	struct baton_gate_attr ga = BATON_GATE_ATTR_INIT;

	begin(c);
	assert_int_equal(baton_chan_create(&W.recv_ch, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&W.send_ch, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&W.sel_a, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&W.sel_b, 4), BATON_OK);
	assert_int_equal(baton_chan_create(&W.hold_ch, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&W.timed_ch, 0), BATON_OK);
	assert_int_equal(baton_mutex_create(&W.mutex), BATON_OK);
	/* Held by this thread (outside tasks: a try), so on_mutex waits. */
	assert_int_equal(baton_mutex_lock(W.mutex, 0), BATON_OK);
	assert_int_equal(baton_sem_create(&W.sem, 0), BATON_OK);
	assert_int_equal(baton_wg_create(&W.wg), BATON_OK);
	assert_int_equal(baton_wg_add(W.wg, 1), BATON_OK);
	ga.name = "one at a time";
	ga.concurrency = 1;
	ga.queue_capacity = 4;
	assert_int_equal(baton_gate_create(&W.gate, &ga), BATON_OK);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, W.sv), 0);
	ta.coro = *c->attr;
	for (size_t i = 0; i < NBLOCKERS; i++)
		assert_int_equal(baton_sched_spawn(W.s, &ta, blockers[i], NULL), BATON_OK);
	assert_int_equal(baton_sched_spawn(W.s, &ta, stopper, (void *)c), BATON_OK);
	assert_int_equal(baton_sched_run(W.s), BATON_OK);
	TC_VERDICT();
	/* A runnable task that never ran is freed too. */
	assert_int_equal(baton_sched_spawn(W.s, &ta, on_never, NULL), BATON_OK);
	assert_int_equal(baton_sched_destroy(W.s), BATON_OK);
	/* No waiter is left in any primitive. */
	assert_int_equal(baton_chan_destroy(W.recv_ch), BATON_OK);
	assert_int_equal(baton_chan_destroy(W.send_ch), BATON_OK);
	assert_int_equal(baton_chan_destroy(W.sel_a), BATON_OK);
	assert_int_equal(baton_chan_destroy(W.sel_b), BATON_OK);
	assert_int_equal(baton_chan_destroy(W.hold_ch), BATON_OK);
	assert_int_equal(baton_chan_destroy(W.timed_ch), BATON_OK);
	assert_int_equal(baton_sem_destroy(W.sem), BATON_OK);
	assert_int_equal(baton_wg_destroy(W.wg), BATON_OK);
	/* Its waiter gone, the mutex is this thread's to unlock. */
	assert_int_equal(baton_mutex_unlock(W.mutex), BATON_OK);
	assert_int_equal(baton_mutex_destroy(W.mutex), BATON_OK);
	/* What a freed task held stays held (rule 5): the gate still counts
	 * the holder's slot until the program ends that passage itself. */
	assert_int_equal(baton_gate_destroy(W.gate), BATON_EBUSY);
	assert_int_equal(baton_gate_leave(&W.hold, NULL), BATON_OK);
	assert_int_equal(baton_gate_destroy(W.gate), BATON_OK);
	/* The handle left open was closed with its descriptor: the peer sees
	 * end of file. */
	{
		char ch;

		assert_int_equal(read(W.sv[1], &ch, 1), 0);
		close(W.sv[1]);
	}
	alarm(0);
}

/* --- a stage's own tasks ---------------------------------------------------- */
static void stuck_handler(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
	reached();
	baton_chan_recv(W.never_ch, NULL, FOREVER); /* freed here */
	TC_CHECK(0);
}

static void quick_handler(void *item, void *ctx)
{
	(void)item;
	(void)ctx;
	/* Relaxed: a count the feeder polls. */
	__atomic_add_fetch(&W.quick_done, 1, __ATOMIC_RELAXED);
}

/* Fills `work` (two runners stuck in the handler, two items queued behind
 * them with the dispatcher waiting for a slot, a fifth submit waiting for
 * room), gives `quick` an item (its runner then waits idle for the next),
 * and stops the run. */
static void feeder(void *a)
{
	(void)a;
	for (int i = 0; i < 4; i++)
		TC_CHECK_RC(baton_stage_submit(W.work, NULL, FOREVER), BATON_OK);
	while (__atomic_load_n(&W.blocked, __ATOMIC_RELAXED) < 2)
		baton_sched_sleep(1000000);
	baton_sched_sleep(5000000); /* the dispatcher waits for a slot */
	TC_CHECK_RC(baton_stage_submit(W.quick, NULL, 0), BATON_OK);
	while (__atomic_load_n(&W.quick_done, __ATOMIC_RELAXED) < 1)
		baton_sched_yield();
	/* Within the runner's idle wait (BATON_STAGE_RUNNER_IDLE_NS). */
	TC_CHECK_RC(baton_sched_stop(baton_sched_self()), BATON_OK);
	baton_stage_submit(W.work, NULL, FOREVER); /* full: waits */
	TC_CHECK(0);
}

static void test_destroy_leaves_stages_idle(void **state)
{
	const struct tc_cfg *c = *state;
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	struct baton_stage_attr st = BATON_STAGE_ATTR_INIT;
	struct baton_stage_stats ss;

	begin(c);
	assert_int_equal(baton_chan_create(&W.never_ch, 0), BATON_OK);
	st.name = "stuck";
	st.fn = stuck_handler;
	st.concurrency = 2;
	st.queue_capacity = 2;
	st.task.coro = *c->attr;
	assert_int_equal(baton_stage_create(&W.work, W.s, &st), BATON_OK);
	st.name = "quick";
	st.fn = quick_handler;
	assert_int_equal(baton_stage_create(&W.quick, W.s, &st), BATON_OK);
	ta.coro = *c->attr;
	assert_int_equal(baton_sched_spawn(W.s, &ta, feeder, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(W.s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_stage_snapshot(W.work, &ss), BATON_OK);
	assert_int_equal(ss.runners, 2);
	assert_int_equal(ss.running, 2);
	assert_int_equal(ss.queued, 2);
	/* Busy: the program must not destroy it under its tasks. */
	assert_int_equal(baton_stage_destroy(W.work), BATON_EBUSY);

	assert_int_equal(baton_sched_destroy(W.s), BATON_OK);
	/* The stage forgot its freed tasks and dropped what they left. */
	assert_int_equal(baton_stage_snapshot(W.work, &ss), BATON_OK);
	assert_int_equal(ss.runners, 0);
	assert_int_equal(ss.running, 0);
	assert_int_equal(ss.queued, 0);
	assert_int_equal(ss.closed, 1);
	assert_int_equal(ss.submitted, ss.completed);
	assert_int_equal(ss.rejected, 4);
	assert_int_equal(baton_stage_submit(W.work, NULL, 0), BATON_ESHUTDOWN);
	assert_int_equal(baton_stage_drain(W.work, 0), BATON_OK);
	assert_int_equal(baton_stage_destroy(W.work), BATON_OK);
	assert_int_equal(baton_stage_destroy(W.quick), BATON_OK);
	assert_int_equal(baton_chan_destroy(W.never_ch), BATON_OK);
	alarm(0);
}

/* A stage destroyed before its scheduler leaves nothing behind for the
 * scheduler's destroy to touch. */
static void test_stage_destroyed_first(void **state)
{
	struct baton_stage_attr st = BATON_STAGE_ATTR_INIT;
	baton_stage_t *a, *b;

	(void)state;
	assert_int_equal(baton_sched_create(&W.s, NULL), BATON_OK);
	st.name = "a";
	st.fn = quick_handler;
	assert_int_equal(baton_stage_create(&a, W.s, &st), BATON_OK);
	st.name = "b";
	assert_int_equal(baton_stage_create(&b, W.s, &st), BATON_OK);
	assert_int_equal(baton_stage_destroy(a), BATON_OK);
	assert_int_equal(baton_sched_destroy(W.s), BATON_OK);
	assert_int_equal(baton_stage_destroy(b), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_CFG_TESTS(test_destroy_frees_blocked),
		TC_CFG_TESTS(test_destroy_leaves_stages_idle),
		cmocka_unit_test(test_stage_destroyed_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
