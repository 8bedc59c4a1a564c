/* SPDX-License-Identifier: MIT */
/* Copy-stack tasks in the scheduler (include/baton/sched.h rule 2,
 * docs/coroutines.md): a task that never blocks is never copied; a task
 * that parks at every depth up to near the shared stack's limit resumes
 * with every local intact; a pointer to a local, kept in a deeper frame,
 * still points at the local after a park (frames come back to the same
 * addresses); and a ring of parked tasks copies what its tasks used and
 * nothing more (baton_sched_stats.copied_bytes); tasks that end hand over
 * to new, parked and stackful tasks alike; parks with and without a
 * timeout (the solo wait takes the hop's one-switch copy, a timed wait
 * the general park); and a ring keeps its frames while signals land on
 * its worker at every instruction of the hop, the copies included. One
 * worker, so every hand-off between two copy-stack tasks copies. */
#include "check.h"
#include "internal.h"

#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct baton_task_attr cs_attr(void)
{
	struct baton_task_attr a = BATON_TASK_ATTR_INIT;

	a.coro.model = BATON_CORO_COPYSTACK;
	return a;
}

/* --- never blocks: nothing copied -------------------------------------- */
static long nb_ran;
static uint64_t nb_saves_before, nb_saves_after;

static void nb_task(void *arg)
{
	volatile char frame[2000];

	frame[0] = (char)(intptr_t)arg;
	frame[1999] = frame[0];
	nb_ran += frame[0] == frame[1999];
	nb_saves_after = baton__coro_thread_save_allocs();
}

static void nb_spawner(void *arg)
{
	baton_sched_t *s = arg;
	struct baton_task_attr a = cs_attr();

	nb_saves_before = baton__coro_thread_save_allocs();

	for (long i = 0; i < 1000; i++) {
		TC_CHECK_RC(baton_sched_spawn(s, &a, nb_task, (void *)(intptr_t)i), BATON_OK);
		if (i % 64 == 63)
			TC_CHECK_RC(baton_sched_yield(), BATON_OK);
	}
}

static void test_never_blocks_never_copied(void **state)
{
	baton_sched_t *s = tc_sched(1);
	struct baton_sched_stats st;

	(void)state;
	tc_reset();
	tc_watchdog_phase(60, "tasks that never block");
	nb_ran = 0;
	/* A stackful spawner: no copy-stack task but the ones measured. */
	assert_int_equal(baton_sched_spawn(s, NULL, nb_spawner, s), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(nb_ran, 1000);
	assert_int_equal(baton_sched_stats(s, &st), BATON_OK);
	/* Each ran to its end on the shared stack: none was saved, none
	 * copied back, and none got a save buffer (one worker: the same
	 * thread ran the spawner and every task). */
	assert_int_equal(st.copied_bytes, 0);
	assert_int_equal(nb_saves_after, nb_saves_before);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* The counter above counts: tasks that park get their save buffers, at
 * most one each (spare blocks may bring one from an earlier task). */
#define PK_N 100
static baton_chan_t *pk_ch;
static uint64_t pk_saves_before, pk_saves_after;

static void pk_parker(void *arg)
{
	void *v;

	(void)arg;
	TC_CHECK_RC(baton_chan_recv(pk_ch, &v, -1), BATON_OK);
}

static void pk_spawner(void *arg)
{
	baton_sched_t *s = arg;
	struct baton_task_attr a = cs_attr();

	pk_saves_before = baton__coro_thread_save_allocs();
	for (long i = 0; i < PK_N; i++)
		TC_CHECK_RC(baton_sched_spawn(s, &a, pk_parker, NULL), BATON_OK);
	TC_CHECK_RC(baton_sched_yield(), BATON_OK); /* all park */
	pk_saves_after = baton__coro_thread_save_allocs();
	for (long i = 0; i < PK_N; i++)
		TC_CHECK_RC(baton_chan_send(pk_ch, NULL, -1), BATON_OK);
}

static void test_parked_get_save_buffers(void **state)
{
	baton_sched_t *s = tc_sched(1);

	(void)state;
	tc_reset();
	tc_watchdog_phase(60, "tasks that park once");
	assert_int_equal(baton_chan_create(&pk_ch, 0), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, NULL, pk_spawner, s), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_true(pk_saves_after > pk_saves_before);
	assert_true(pk_saves_after - pk_saves_before <= PK_N);
	assert_int_equal(baton_chan_destroy(pk_ch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* --- parks at every depth --------------------------------------------------- */
/* A frame of ~1 KiB per level, filled with a pattern of (level, seed);
 * at the bottom the task parks (a channel receive its partner answers)
 * and every frame is checked on the way back up. */
#define DEEP_FRAME 1000
static baton_chan_t *dp_ping, *dp_pong;
static long dp_levels_max;     /* set from the frame size at the first dive */
static char *dp_frame_addr[2]; /* level 0's and level 1's frames */
static int64_t dp_timeout;     /* -1 (solo waits) or a bound */

static __attribute__((noinline)) bool deep(long level, long bottom, unsigned seed)
{
	volatile unsigned char frame[DEEP_FRAME];
	bool ok = true;

	for (size_t i = 0; i < sizeof(frame); i++)
		frame[i] = (unsigned char)(seed + (unsigned)level * 7u + i);
	if (level < 2)
		dp_frame_addr[level] = (char *)frame;
	if (level < bottom) {
		ok = deep(level + 1, bottom, seed);
	} else {
		void *v;

		TC_CHECK_RC(baton_chan_send(dp_ping, (void *)(intptr_t)level, dp_timeout),
			    BATON_OK);
		TC_CHECK_RC(baton_chan_recv(dp_pong, &v, dp_timeout), BATON_OK);
		TC_CHECK((intptr_t)v == level);
	}
	for (size_t i = 0; i < sizeof(frame); i++)
		if (frame[i] != (unsigned char)(seed + (unsigned)level * 7u + i))
			return false;
	return ok;
}

static void dp_diver(void *arg)
{
	(void)arg;
	for (long bottom = 0; bottom <= dp_levels_max; bottom += bottom < 16 ? 1 : 37) {
		if (bottom == 2) {
			/* The shared stack is 1 MiB: dive to about 900 KiB of
			 * frames (sanitizer builds have larger ones). */
			long frame = (long)(dp_frame_addr[0] - dp_frame_addr[1]);

			TC_CHECK(frame >= DEEP_FRAME);
			if (frame >= DEEP_FRAME)
				dp_levels_max = tc_scale(900 * 1024 / frame, 200);
		}
		if (!deep(0, bottom, (unsigned)bottom * 13u + 1u)) {
			TC_FAIL("a local changed across a park");
			break;
		}
	}
	TC_CHECK(dp_levels_max > 100);
	TC_CHECK_RC(baton_chan_close(dp_ping), BATON_OK);
}

/* The partner is copy-stack too: each park swaps the two through the
 * copier. */
static void dp_partner(void *arg)
{
	volatile unsigned char mine[300];
	void *v;

	(void)arg;
	for (size_t i = 0; i < sizeof(mine); i++)
		mine[i] = (unsigned char)(0xa5 ^ i);
	while (baton_chan_recv(dp_ping, &v, dp_timeout) == BATON_OK)
		TC_CHECK_RC(baton_chan_send(dp_pong, v, dp_timeout), BATON_OK);
	for (size_t i = 0; i < sizeof(mine); i++)
		TC_CHECK(mine[i] == (unsigned char)(0xa5 ^ i));
}

static void parks_at_every_depth(int64_t timeout)
{
	baton_sched_t *s = tc_sched(1);
	struct baton_task_attr a = cs_attr();

	tc_reset();
	dp_timeout = timeout;
	tc_watchdog_phase(120, "parking at every depth");
	dp_levels_max = 16; /* until the frame size is known */
	assert_int_equal(baton_chan_create(&dp_ping, 0), BATON_OK);
	assert_int_equal(baton_chan_create(&dp_pong, 0), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, &a, dp_diver, NULL), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, &a, dp_partner, NULL), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_chan_destroy(dp_ping), BATON_OK);
	assert_int_equal(baton_chan_destroy(dp_pong), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* Timed waits park through the general path. */
static void test_parks_at_every_depth(void **state)
{
	(void)state;
	parks_at_every_depth(TC_MS(20000));
}

/* Solo waits (no timeout) take the hop: one switch that copies on the
 * scratch stack, a save buffer trimmed at the first save and grown when
 * a park is deeper than any before. */
static void test_solo_parks_at_every_depth(void **state)
{
	(void)state;
	parks_at_every_depth(-1);
}

/* --- a pointer to a local across a park --------------------------------------- */
struct lp_state {
	baton_chan_t *ch;
	long *where[2]; /* the local's address before and after the park */
};

static __attribute__((noinline)) void lp_use(long *p, struct lp_state *ls, int who)
{
	*p += 1;
	/* Park in a deeper frame, with the pointer live in this one. */
	if (who == 0)
		TC_CHECK_RC(baton_chan_send(ls->ch, NULL, TC_MS(20000)), BATON_OK);
	else
		TC_CHECK_RC(baton_chan_recv(ls->ch, NULL, TC_MS(20000)), BATON_OK);
	*p += 10;
}

static void lp_task(void *arg)
{
	static struct lp_state ls;
	long local = 100;
	int who = (int)(intptr_t)arg;

	if (who == 0)
		ls.ch = NULL;
	if (ls.ch == NULL)
		TC_CHECK_RC(baton_chan_create(&ls.ch, 0), BATON_OK);
	ls.where[who] = &local;
	lp_use(&local, &ls, who);
	TC_CHECK(local == 111);
	TC_CHECK(ls.where[who] == &local); /* the same address after the park */
	if (who == 1) {
		TC_CHECK_RC(baton_chan_destroy(ls.ch), BATON_OK);
		ls.ch = NULL;
	}
}

static void test_local_pointer_across_park(void **state)
{
	baton_sched_t *s = tc_sched(1);
	struct baton_task_attr a = cs_attr();

	(void)state;
	tc_reset();
	tc_watchdog_phase(60, "a pointer to a local across a park");
	assert_int_equal(baton_sched_spawn(s, &a, lp_task, (void *)0), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, &a, lp_task, (void *)1), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* --- a ring copies what it uses ----------------------------------------------- */
#define RING_N 8
static baton_chan_t *rg_in[RING_N];
static long rg_rounds;

/* Round r of ring member i: pass the token on (the leader starts it). */
static void rg_round(long i, long r)
{
	void *v;

	if (i == 0) {
		TC_CHECK_RC(baton_chan_send(rg_in[1], (void *)(intptr_t)r, -1), BATON_OK);
		TC_CHECK_RC(baton_chan_recv(rg_in[0], &v, -1), BATON_OK);
	} else {
		TC_CHECK_RC(baton_chan_recv(rg_in[i], &v, -1), BATON_OK);
		TC_CHECK_RC(baton_chan_send(rg_in[(i + 1) % RING_N], v, -1), BATON_OK);
	}
	TC_CHECK((intptr_t)v == r);
}

static void rg_member(void *arg)
{
	for (long r = 0; r < rg_rounds; r++)
		rg_round((long)(intptr_t)arg, r);
}

static void test_ring_copies_what_it_uses(void **state)
{
	baton_sched_t *s = tc_sched(1);
	struct baton_task_attr a = cs_attr();
	struct baton_sched_stats st;
	double per_hop;

	(void)state;
	tc_reset();
	tc_watchdog_phase(60, "copy-stack ring");
	rg_rounds = 1000;
	for (int i = 0; i < RING_N; i++)
		assert_int_equal(baton_chan_create(&rg_in[i], 0), BATON_OK);
	for (intptr_t i = 0; i < RING_N; i++)
		assert_int_equal(baton_sched_spawn(s, &a, rg_member, (void *)i), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(baton_sched_stats(s, &st), BATON_OK);
	per_hop = (double)st.copied_bytes / (double)(RING_N * rg_rounds);
	/* Every hop saves the leaver and restores the newcomer: something
	 * is copied, and it is the task's few frames, not the whole 1 MiB
	 * shared stack nor a fixed slab (sanitizer builds have larger
	 * frames, hence the generous bound). */
	if (per_hop < 64 || per_hop > 16384)
		fail_msg("copied %.0f bytes per hop", per_hop);
	for (int i = 0; i < RING_N; i++)
		assert_int_equal(baton_chan_destroy(rg_in[i]), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* --- a ring under a signal storm ------------------------------------------- */
/* A timer signals the worker's thread every 20 us (1 ms under TSan) while
 * a copy-stack ring runs: handlers land inside the hop (on the shared
 * stack before the save, on the scratch stack during the copies, on the
 * entered frames after) and write a frame of their own on whatever stack
 * they find. Each member checks a frame of its own after every park. */
static volatile sig_atomic_t sg_count;

static void sg_handler(int sig)
{
	volatile unsigned char scribble[256];

	(void)sig;
	for (size_t i = 0; i < sizeof(scribble); i++)
		scribble[i] = (unsigned char)i;
	sg_count++;
}

static void sg_member(void *arg)
{
	long i = (long)(intptr_t)arg;
	volatile unsigned char mine[200];

	for (size_t k = 0; k < sizeof(mine); k++)
		mine[k] = (unsigned char)(i * 31 + (long)k);
	for (long r = 0; r < rg_rounds; r++) {
		rg_round(i, r);
		for (size_t k = 0; k < sizeof(mine); k++)
			if (mine[k] != (unsigned char)(i * 31 + (long)k)) {
				TC_FAIL("a frame changed across a park under signals");
				return;
			}
	}
}

static void test_ring_under_signals(void **state)
{
	baton_sched_t *s = tc_sched(1);
	struct baton_task_attr a = cs_attr();
	struct sigaction sa, old_sa;
	struct sigevent sev;
	/* TSan defers each signal to a point where it may run the handler,
	 * at a cost that a 20 us storm would turn into a livelock (and its
	 * builds take the copier, not the hop's scratch stack); ASan's
	 * handler entry costs tens of microseconds, so it gets 100 us. */
	long period_ns = TC_TSAN ? 1000000 : TC_ASAN ? 100000 : 20000;
	struct itimerspec its = { { 0, period_ns }, { 0, period_ns } };
	timer_t timer;

	(void)state;
	tc_reset();
	tc_watchdog_phase(120, "copy-stack ring under signals");
	rg_rounds = tc_scale(TC_TSAN ? 2000 : 20000, 2000);
	sg_count = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sg_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGURG, &sa, &old_sa), 0);
	/* To this thread, which runs the only worker. */
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGURG;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	assert_int_equal(timer_create(CLOCK_MONOTONIC, &sev, &timer), 0);
	for (int i = 0; i < RING_N; i++)
		assert_int_equal(baton_chan_create(&rg_in[i], 0), BATON_OK);
	for (intptr_t i = 0; i < RING_N; i++)
		assert_int_equal(baton_sched_spawn(s, &a, sg_member, (void *)i), BATON_OK);
	assert_int_equal(timer_settime(timer, 0, &its, NULL), 0);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(timer_delete(timer), 0);
	assert_int_equal(sigaction(SIGURG, &old_sa, NULL), 0);
	TC_VERDICT();
	/* The storm did land (the ring runs for milliseconds at least). */
	if (sg_count == 0)
		fail_msg("no signal arrived during the ring");
	for (int i = 0; i < RING_N; i++)
		assert_int_equal(baton_chan_destroy(rg_in[i]), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* --- tasks that end into every kind of next task ------------------------------- */
/* A copy-stack task that ends hands its worker to whatever runs next: one
 * that never ran (started at once over the dead frames), one that parked
 * (copied back through the copier) or the stackful spawner. Each kind
 * fills a frame with its own pattern and checks it at the end; a parked
 * one checks across its park. Mixed in every order the run queue gives. */
#define MX_TASKS 3000
static baton_chan_t *mx_ch;
static long mx_ok, mx_bad;

static bool mx_fill_check(volatile unsigned char *f, size_t n, unsigned seed, bool check)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char want = (unsigned char)(seed * 31u + i);

		if (!check)
			f[i] = want;
		else if (f[i] != want)
			return false;
	}
	return true;
}

static void mx_task(void *arg)
{
	long i = (long)(intptr_t)arg;
	volatile unsigned char frame[600 + (i % 7) * 100];
	void *v;
	bool ok;

	mx_fill_check(frame, sizeof(frame), (unsigned)i, false);
	switch (i % 3) {
	case 0: /* never blocks */
		break;
	case 1: /* parks until a later task sends */
		TC_CHECK_RC(baton_chan_recv(mx_ch, &v, TC_MS(20000)), BATON_OK);
		break;
	case 2: /* wakes an earlier one (it runs next) */
		TC_CHECK_RC(baton_chan_send(mx_ch, (void *)(intptr_t)i, TC_MS(20000)), BATON_OK);
		break;
	}
	ok = mx_fill_check(frame, sizeof(frame), (unsigned)i, true);
	/* Relaxed: read after the run. */
	__atomic_add_fetch(ok ? &mx_ok : &mx_bad, 1, __ATOMIC_RELAXED);
}

static void mx_spawner(void *arg)
{
	baton_sched_t *s = arg;
	struct baton_task_attr a = cs_attr();

	for (long i = 0; i < MX_TASKS; i++) {
		TC_CHECK_RC(baton_sched_spawn(s, &a, mx_task, (void *)(intptr_t)i), BATON_OK);
		if (i % 5 == 4)
			TC_CHECK_RC(baton_sched_yield(), BATON_OK);
	}
}

static void test_end_into_every_kind(void **state)
{
	baton_sched_t *s = tc_sched(1);

	(void)state;
	tc_reset();
	tc_watchdog_phase(60, "copy-stack tasks ending into every kind of next task");
	mx_ok = mx_bad = 0;
	assert_int_equal(baton_chan_create(&mx_ch, 0), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, NULL, mx_spawner, s), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(mx_bad, 0);
	assert_int_equal(mx_ok, MX_TASKS);
	assert_int_equal(baton_chan_destroy(mx_ch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

/* --- a reused record starts afresh ----------------------------------------
 * A copy-stack task's record and control block come back from the
 * thread's spares when it ends, and the next spawn on that worker takes
 * them: what the last task changed (its name, its handle and cancel flag,
 * its waits, its save buffer's contents) must not show in the next one. */
static int ru_bad, ru_ran, ru_reused;
static baton_coro_t *ru_first_co; /* the block the last ru_first ran in */

static void ru_first(void *arg)
{
	baton_task_t *self = baton_task_handle();

	(void)arg;
	ru_first_co = baton_coro_self();
	ru_bad += strcmp(baton_coro_name(baton_coro_self()), "first") != 0;
	ru_bad += baton_task_cancel(self) != BATON_OK;
	ru_bad += baton_task_cancelled() != 1;
	/* A timed park: waiters, timeout and the save buffer are used. */
	ru_bad += baton_sched_sleep(1000) != BATON_ECANCELED;
	ru_ran++;
}

static void ru_next(void *arg)
{
	baton_coro_t *co = baton_coro_self();

	(void)arg;
	ru_reused += co == ru_first_co; /* the first's block, taken back */
	ru_bad += strcmp(baton_coro_name(co), "") != 0;
	ru_bad += baton_coro_model(co) != BATON_CORO_COPYSTACK;
	ru_bad += baton_coro_stack_size(co) != 0; /* never saved */
	ru_bad += baton_task_cancelled() != 0;
	ru_bad += baton_sched_sleep(1000) != BATON_OK;
	ru_ran++;
}

static void ru_spawner(void *arg)
{
	baton_sched_t *s = arg;
	struct baton_task_attr a = cs_attr();

	for (int i = 0; i < 50; i++) {
		a.coro.name = "first";
		TC_CHECK_RC(baton_sched_spawn(s, &a, ru_first, NULL), BATON_OK);
		TC_CHECK_RC(baton_sched_sleep(100000), BATON_OK); /* it ends */
		a.coro.name = NULL;
		TC_CHECK_RC(baton_sched_spawn(s, &a, ru_next, NULL), BATON_OK);
		TC_CHECK_RC(baton_sched_sleep(100000), BATON_OK);
	}
}

static void test_reused_record_starts_afresh(void **state)
{
	baton_sched_t *s = tc_sched(1);

	(void)state;
	tc_reset();
	tc_watchdog_phase(60, "copy-stack tasks on reused records");
	ru_bad = ru_ran = ru_reused = 0;
	assert_int_equal(baton_sched_spawn(s, NULL, ru_spawner, s), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	TC_VERDICT();
	assert_int_equal(ru_bad, 0);
	assert_int_equal(ru_ran, 100);
	/* Else the checks above saw only new blocks and proved nothing. */
	assert_true(ru_reused > 0);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_never_blocks_never_copied),
		cmocka_unit_test(test_parked_get_save_buffers),
		cmocka_unit_test(test_parks_at_every_depth),
		cmocka_unit_test(test_solo_parks_at_every_depth),
		cmocka_unit_test(test_local_pointer_across_park),
		cmocka_unit_test(test_ring_copies_what_it_uses),
		cmocka_unit_test(test_ring_under_signals),
		cmocka_unit_test(test_end_into_every_kind),
		cmocka_unit_test(test_reused_record_starts_afresh),
	};

	return cmocka_run_group_tests_name("copystack_tasks", tests, NULL, NULL);
}
