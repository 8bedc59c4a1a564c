/* SPDX-License-Identifier: MIT */
/* The coroutine API: values in and out, status, nesting, every error code. */
#include "check.h"
#include "internal.h"

#include <baton/coro.h>

static void *echo_twice(void *arg, void *in)
{
	void *next;

	*(int *)arg += 1;
	assert_int_equal(baton_coro_yield((char *)in + 1, &next), BATON_OK);
	assert_int_equal(baton_coro_yield((char *)next + 1, &next), BATON_OK);
	return (char *)next + 100;
}

static void values_travel_both_ways(void **state)
{
	static char base[1000];
	baton_coro_t *co;
	void *out = NULL;
	int ran = 0;

	assert_int_equal(baton_coro_create(&co, TC_ATTR(state), echo_twice, &ran), BATON_OK);
	assert_int_equal(baton_coro_status(co), BATON_CORO_SUSPENDED);
	assert_int_equal(ran, 0); /* created suspended */
	assert_int_equal(baton_coro_resume(co, base, &out), BATON_OK);
	assert_ptr_equal(out, base + 1);
	assert_int_equal(ran, 1);
	assert_int_equal(baton_coro_resume(co, base + 10, &out), BATON_OK);
	assert_ptr_equal(out, base + 11);
	assert_int_equal(baton_coro_status(co), BATON_CORO_SUSPENDED);
	assert_int_equal(baton_coro_resume(co, base + 20, &out), BATON_OK);
	assert_ptr_equal(out, base + 120);
	assert_int_equal(baton_coro_status(co), BATON_CORO_DEAD);
	assert_int_equal(baton_coro_resume(co, NULL, &out), BATON_EDEAD);
	assert_int_equal(baton_coro_destroy(co), BATON_OK);
}

static baton_coro_t *seen_self;

static void *check_self(void *arg, void *in)
{
	(void)in;
	seen_self = baton_coro_self();
	assert_int_equal(baton_coro_status(seen_self), BATON_CORO_RUNNING);
	/* Resuming oneself is an error, not a deadlock. */
	assert_int_equal(baton_coro_resume(seen_self, NULL, NULL), BATON_ERUNNING);
	return arg;
}

static void self_and_running_status(void **state)
{
	baton_coro_t *co;
	void *out;

	assert_null(baton_coro_self());
	assert_int_equal(baton_coro_create(&co, TC_ATTR(state), check_self, (void *)7), BATON_OK);
	assert_int_equal(baton_coro_resume(co, NULL, &out), BATON_OK);
	assert_ptr_equal(seen_self, co);
	assert_ptr_equal(out, (void *)7);
	assert_null(baton_coro_self());
	assert_string_equal(baton_coro_name(co), TC_ATTR(state)->name);
	assert_int_equal(baton_coro_model(co), TC_ATTR(state)->model);
	baton_coro_destroy(co);
}

static baton_coro_t *outer_co;

static void *inner_fn(void *arg, void *in)
{
	(void)arg;
	/* The outer coroutine resumed us: it is NORMAL, cannot be resumed. */
	assert_int_equal(baton_coro_status(outer_co), BATON_CORO_NORMAL);
	assert_int_equal(baton_coro_resume(outer_co, NULL, NULL), BATON_ERUNNING);
	assert_int_equal(baton_coro_destroy(outer_co), BATON_EBUSY);
	baton_coro_yield((char *)in + 1, NULL);
	return (char *)in + 2;
}

static void *outer_fn(void *arg, void *in)
{
	const struct baton_coro_attr *attr = arg;
	baton_coro_t *inner;
	void *v;
	long sum = 0;

	assert_int_equal(baton_coro_create(&inner, attr, inner_fn, NULL), BATON_OK);
	assert_int_equal(baton_coro_resume(inner, (void *)40, &v), BATON_OK);
	sum += (long)v;
	assert_int_equal(baton_coro_yield((void *)sum, NULL), BATON_OK);
	assert_int_equal(baton_coro_resume(inner, NULL, &v), BATON_OK);
	sum += (long)v;
	assert_int_equal(baton_coro_status(inner), BATON_CORO_DEAD);
	baton_coro_destroy(inner);
	(void)in;
	return (void *)sum;
}

/* Every pairing of models: outer (state) resuming inner (both models). */
static void nested_resume(void **state)
{
	const struct baton_coro_attr *inner_attrs[] = { &tc_stackful, &tc_copystack };

	for (int i = 0; i < 2; i++) {
		void *v;

		assert_int_equal(baton_coro_create(&outer_co, TC_ATTR(state), outer_fn,
						   (void *)inner_attrs[i]),
				 BATON_OK);
		assert_int_equal(baton_coro_resume(outer_co, NULL, &v), BATON_OK);
		assert_int_equal((long)v, 41);
		assert_int_equal(baton_coro_resume(outer_co, NULL, &v), BATON_OK);
		assert_int_equal((long)v, 41 + 42);
		assert_int_equal(baton_coro_status(outer_co), BATON_CORO_DEAD);
		baton_coro_destroy(outer_co);
	}
}

static void *forever(void *arg, void *in)
{
	(void)arg;
	(void)in;
	for (;;)
		baton_coro_yield(NULL, NULL);
}

static void bad_arguments(void **state)
{
	struct baton_coro_attr attr = *TC_ATTR(state);
	baton_coro_t *co = NULL;

	assert_int_equal(baton_coro_create(NULL, &attr, forever, NULL), BATON_EINVAL);
	assert_int_equal(baton_coro_create(&co, &attr, NULL, NULL), BATON_EINVAL);
	assert_null(co);
	attr.model = (enum baton_coro_model)42;
	assert_int_equal(baton_coro_create(&co, &attr, forever, NULL), BATON_EINVAL);
	assert_int_equal(baton_coro_resume(NULL, NULL, NULL), BATON_EINVAL);
	assert_int_equal(baton_coro_status(NULL), BATON_EINVAL);
	assert_int_equal(baton_coro_yield(NULL, NULL), BATON_ENOTCORO);
	assert_int_equal(baton_coro_destroy(NULL), BATON_OK);
	assert_string_equal(baton_coro_name(NULL), "");
}

static void stack_size_limits(void **state)
{
	struct baton_coro_attr attr = { BATON_CORO_STACKFUL, BATON_CORO_STACK_MIN - 1, NULL, 0 };
	baton_coro_t *co;

	(void)state;
	assert_int_equal(baton_coro_create(&co, &attr, forever, NULL), BATON_ESTACK);
	attr.stack_size = (size_t)BATON_CORO_STACK_MAX + 1;
	assert_int_equal(baton_coro_create(&co, &attr, forever, NULL), BATON_ESTACK);
	/* A copy-stack coroutine has no stack of its own to size. */
	attr.model = BATON_CORO_COPYSTACK;
	attr.stack_size = 100000;
	assert_int_equal(baton_coro_create(&co, &attr, forever, NULL), BATON_EINVAL);
	attr.model = BATON_CORO_STACKFUL;
	attr.stack_size = 100000; /* rounded up to whole pages */
	assert_int_equal(baton_coro_create(&co, &attr, forever, NULL), BATON_OK);
	assert_true(baton_coro_stack_size(co) >= 100000);
	baton_coro_destroy(co);
	assert_int_equal(baton_coro_create(&co, NULL, forever, NULL), BATON_OK);
	assert_true(baton_coro_stack_size(co) >= BATON_CORO_STACK_DEFAULT);
	baton_coro_destroy(co);
}

static void destroy_suspended_and_unstarted(void **state)
{
	baton_coro_t *a, *b;

	assert_int_equal(baton_coro_create(&a, TC_ATTR(state), forever, NULL), BATON_OK);
	assert_int_equal(baton_coro_create(&b, TC_ATTR(state), forever, NULL), BATON_OK);
	assert_int_equal(baton_coro_resume(a, NULL, NULL), BATON_OK);
	assert_int_equal(baton_coro_destroy(a), BATON_OK); /* suspended in yield */
	assert_int_equal(baton_coro_destroy(b), BATON_OK); /* never started */
}

static void strerror_covers_every_code(void **state)
{
	(void)state;
	for (int code = BATON_OK; code >= BATON_ESHUTDOWN; code--) {
		const char *s = baton_strerror(code);
		assert_non_null(s);
		assert_string_not_equal(s, "unknown baton error code");
	}
	assert_string_equal(baton_strerror(12345), "unknown baton error code");
}

static void pool_recycles_stacks(void **state)
{
	baton_coro_t *co[8];

	(void)state;
	baton_coro_pool_trim();
	for (int i = 0; i < 8; i++)
		assert_int_equal(baton_coro_create(&co[i], NULL, forever, NULL), BATON_OK);
	for (int i = 0; i < 8; i++)
		baton_coro_destroy(co[i]);
	/* All eight went to the pool; trimming unmaps them. */
	assert_true(baton_coro_pool_trim() >= 8 * (size_t)BATON_CORO_STACK_DEFAULT);
	assert_int_equal(baton_coro_pool_trim(), 0);
}

static void many_coroutines_round_robin(void **state)
{
	enum { N = 1000 };
	static baton_coro_t *co[N];
	long rounds = tc_scale(200, 20);

	for (int i = 0; i < N; i++)
		assert_int_equal(baton_coro_create(&co[i], TC_ATTR(state), forever, NULL),
				 BATON_OK);
	for (long r = 0; r < rounds; r++)
		for (int i = 0; i < N; i++)
			assert_int_equal(baton_coro_resume(co[i], NULL, NULL), BATON_OK);
	for (int i = 0; i < N; i++)
		assert_int_equal(baton_coro_destroy(co[i]), BATON_OK);
}

/* The scheduler's way to keep its task record in the coroutine's own
 * memory (src/coro/coro_internal.h): the record must stay out of the
 * frames' way in both models, however deep the body goes, and a stackful
 * one starts a cache line (baton__coro_create_headed, from internal.h). */
enum { HEAD = 320, DIVE = 16 };

static int dive(int depth)
{
	volatile unsigned char frame[512];
	int sum = 0;

	for (unsigned i = 0; i < sizeof(frame); i++)
		frame[i] = (unsigned char)(depth + i);
	if (depth == 0)
		assert_int_equal(baton_coro_yield(NULL, NULL), BATON_OK);
	else
		sum = dive(depth - 1);
	for (unsigned i = 0; i < sizeof(frame); i++)
		if (frame[i] != (unsigned char)(depth + i))
			return -1000;
	return sum < 0 ? sum : sum + 1;
}

static unsigned char *head_seen;

static void *headed_body(void *arg, void *in)
{
	(void)in;
	head_seen = arg;
	memset(arg, 0xa5, HEAD); /* the embedder's record, written first */
	return (void *)(intptr_t)dive(DIVE);
}

static void assert_head_intact(void)
{
	for (unsigned i = 0; i < HEAD; i++)
		assert_int_equal(head_seen[i], 0xa5);
}

static void headed_record_beside_the_stack(void **state)
{
	baton_coro_t *co;
	void *out = NULL;

	for (int round = 0; round < 2; round++) { /* new, then recycled */
		head_seen = NULL;
		assert_int_equal(baton__coro_create_headed(&co, TC_ATTR(state), headed_body, HEAD),
				 BATON_OK);
		assert_int_equal(baton_coro_resume(co, NULL, NULL), BATON_OK);
		/* Parked 8 KiB deep: the head is untouched. */
		assert_non_null(head_seen);
		if (TC_ATTR(state)->model == BATON_CORO_STACKFUL)
			assert_int_equal((uintptr_t)head_seen % 64, 0);
		assert_head_intact();
		assert_int_equal(baton_coro_resume(co, NULL, &out), BATON_OK);
		assert_int_equal((intptr_t)out, DIVE + 1); /* every frame intact */
		assert_int_equal(baton_coro_status(co), BATON_CORO_DEAD);
		assert_head_intact();
		assert_int_equal(baton_coro_destroy(co), BATON_OK);
	}
	/* A head the model cannot place. */
	assert_int_equal(baton__coro_create_headed(&co, TC_ATTR(state), headed_body, 4096),
			 BATON_EINVAL);
	assert_int_equal(baton__coro_create_headed(&co, TC_ATTR(state), headed_body, 40),
			 BATON_EINVAL);
	if (TC_ATTR(state)->model == BATON_CORO_STACKFUL)
		assert_int_equal(baton__coro_create_headed(&co, TC_ATTR(state), headed_body, 80),
				 BATON_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		TC_MODEL_TESTS(values_travel_both_ways),
		TC_MODEL_TESTS(self_and_running_status),
		TC_MODEL_TESTS(nested_resume),
		TC_MODEL_TESTS(bad_arguments),
		cmocka_unit_test(stack_size_limits),
		TC_MODEL_TESTS(destroy_suspended_and_unstarted),
		cmocka_unit_test(strerror_covers_every_code),
		cmocka_unit_test(pool_recycles_stacks),
		TC_MODEL_TESTS(many_coroutines_round_robin),
		TC_MODEL_TESTS(headed_record_beside_the_stack),
	};

	tc_watchdog(120);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
