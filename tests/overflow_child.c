/*
 * Helper of test_overflow: runs one faulting coroutine in a fresh process,
 * without cmocka's signal handlers, so the parent sees exactly what a user
 * program would: our report and SIGABRT, or the default SIGSEGV action.
 *
 *   overflow_child stackful|copystack|null
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <baton/coro.h>

static volatile long sink;

__attribute__((noinline)) static long recurse(long n)
{
	volatile char frame[512];

	frame[0] = (char)n;
	frame[511] = (char)n;
	sink += recurse(n + 1) + frame[0] + frame[511];
	return sink;
}

static void *overflow(void *arg, void *in)
{
	(void)arg; (void)in;
	return (void *)recurse(0);
}

static void *null_deref(void *arg, void *in)
{
	(void)in;
	/* Not NULL, so UBSan builds fault instead of reporting a NULL load. */
	return (void *)(long)*(volatile int *)((char *)arg + 16);
}

int main(int argc, char **argv)
{
	struct baton_coro_attr attr = { BATON_CORO_STACKFUL, 32 * 1024, "deep-diver" };
	baton_coro_fn fn = overflow;
	baton_coro_t *co;
	int rc;

	alarm(20);
	if (argc != 2) {
		fprintf(stderr, "usage: overflow_child stackful|copystack|null\n");
		return 2;
	}
	if (strcmp(argv[1], "copystack") == 0) {
		attr.model = BATON_CORO_COPYSTACK;
		attr.name = "cs-diver";
	} else if (strcmp(argv[1], "null") == 0) {
		fn = null_deref;
	}
	rc = baton_coro_create(&co, &attr, fn, NULL);
	if (rc != BATON_OK) {
		fprintf(stderr, "create: %s\n", baton_strerror(rc));
		return 3;
	}
	baton_coro_resume(co, NULL, NULL);
	return 4; /* not reached: the fault must end the process */
}
