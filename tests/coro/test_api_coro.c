/* SPDX-License-Identifier: MIT */
/* The claims of baton/coro.h a caller relies on, each read from the header
 * and checked: the attribute init function gives the macro's defaults and
 * refuses NULL; the cost of an idle copy-stack coroutine and of a parked
 * copy-stack task (control block, save buffer of the bytes used plus 16,
 * about 220 bytes of frames for a task in a channel receive, about 650
 * bytes of heap per such task). Heap sizes are read with mallinfo2, so the cost
 * checks are skipped under sanitizers (their allocator is not glibc's). */
#include <malloc.h>

#include "check.h"

#include <baton/chan.h>
#include <baton/sched.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PC_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PC_SANITIZED 1
#endif
#endif
#ifndef PC_SANITIZED
#define PC_SANITIZED 0
#endif
/* coro.h's figures are those of x86-64's hand-written switch: the
 * ucontext fallback saves a ucontext_t with each coroutine's frames, and
 * other architectures save other frames. */
#if BATON_TEST_UCONTEXT || !defined(__x86_64__)
#define PC_FIGURES 0
#else
#define PC_FIGURES !PC_SANITIZED
#endif

#define PC_N 2000

static void test_attr_init(void **state)
{
	const struct baton_coro_attr m = BATON_CORO_ATTR_INIT;
	struct baton_coro_attr a;

	(void)state;
	memset(&a, 0x5a, sizeof(a));
	assert_int_equal(baton_coro_attr_init(&a), BATON_OK);
	assert_int_equal(a.model, m.model);
	assert_int_equal(a.model, BATON_CORO_STACKFUL);
	assert_int_equal(a.stack_size, m.stack_size);
	assert_null(a.name);
	assert_int_equal(a.flags, m.flags);
	assert_int_equal(baton_coro_attr_init(NULL), BATON_EINVAL);
}

static void *pc_yield_once(void *arg, void *in)
{
	(void)in;
	baton_coro_yield(NULL, NULL);
	return arg;
}

/* "An idle coroutine costs its control block (under 200 bytes) and a
 * buffer of the bytes it used when first saved plus 16 ... a bare
 * coroutine parked in a yield, under 400 bytes of heap in all." */
static void test_copystack_idle_cost(void **state)
{
	static baton_coro_t *co[PC_N];
	struct baton_coro_attr a;
	struct mallinfo2 m0, m1;
	size_t per;

	(void)state;
	if (!PC_FIGURES)
		skip();
	baton_coro_attr_init(&a);
	a.model = BATON_CORO_COPYSTACK;
	/* The first one maps the thread's shared stack: outside the count. */
	assert_int_equal(baton_coro_create(&co[0], &a, pc_yield_once, NULL), BATON_OK);
	assert_int_equal(baton_coro_resume(co[0], NULL, NULL), BATON_OK);
	m0 = mallinfo2();
	for (int i = 1; i < PC_N; i++) {
		assert_int_equal(baton_coro_create(&co[i], &a, pc_yield_once, NULL), BATON_OK);
		assert_int_equal(baton_coro_resume(co[i], NULL, NULL), BATON_OK);
	}
	m1 = mallinfo2();
	per = (m1.uordblks - m0.uordblks) / (PC_N - 1);
	assert_true(per < 400);
	/* The buffer holds what it used: its stack size is that, and the
	 * control block and the 16 bytes come on top of it. */
	assert_true(baton_coro_stack_size(co[1]) + 16 < per);
	for (int i = 0; i < PC_N; i++) {
		assert_int_equal(baton_coro_resume(co[i], NULL, NULL), BATON_OK);
		assert_int_equal(baton_coro_destroy(co[i]), BATON_OK);
	}
}

struct pc_ring {
	baton_chan_t *ch;
	size_t heap_per_task;
};

static void pc_parked(void *arg)
{
	void *v;

	(void)!baton_chan_recv(arg, &v, -1);
}

static void pc_spawner(void *arg)
{
	struct pc_ring *r = arg;
	struct baton_task_attr ta;
	struct mallinfo2 m0, m1;

	baton_task_attr_init(&ta);
	ta.coro.model = BATON_CORO_COPYSTACK;
	m0 = mallinfo2();
	for (int i = 0; i < PC_N; i++)
		if (baton_sched_spawn(baton_sched_self(), &ta, pc_parked, r->ch) != BATON_OK)
			return;
	baton_sched_yield(); /* each runs and parks in its receive */
	m1 = mallinfo2();
	r->heap_per_task = (m1.uordblks - m0.uordblks) / PC_N;
	baton_chan_close(r->ch);
}

/* "A copy-stack task parked in a channel receive saves about 220 bytes of
 * stack and costs about 650 bytes of heap." */
static void test_copystack_task_cost(void **state)
{
	struct pc_ring r = { NULL, 0 };
	struct baton_sched_stats st;
	baton_sched_t *s;
	double per_copy;

	(void)state;
	if (!PC_FIGURES)
		skip();
	tc_watchdog(60);
	assert_int_equal(baton_sched_create(&s, NULL), BATON_OK);
	assert_int_equal(baton_chan_create(&r.ch, 0), BATON_OK);
	assert_int_equal(baton_sched_spawn(s, NULL, pc_spawner, &r), BATON_OK);
	assert_int_equal(baton_sched_run(s), BATON_OK);
	assert_int_equal(baton_sched_stats(s, &st), BATON_OK);
	/* Each task's frames are copied off once (it parks) and back once. */
	per_copy = (double)st.copied_bytes / (2.0 * PC_N);
	assert_true(per_copy > 150 && per_copy < 300);
	assert_true(r.heap_per_task > 500 && r.heap_per_task < 800);
	assert_int_equal(baton_chan_destroy(r.ch), BATON_OK);
	assert_int_equal(baton_sched_destroy(s), BATON_OK);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attr_init),
		cmocka_unit_test(test_copystack_idle_cost),
		cmocka_unit_test(test_copystack_task_cost),
	};

	return cmocka_run_group_tests_name("promise_coro", tests, NULL, NULL);
}
