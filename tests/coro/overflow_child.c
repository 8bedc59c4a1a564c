/* SPDX-License-Identifier: MIT */
/*
 * Helper of test_overflow: runs one faulting coroutine in a fresh process,
 * without cmocka's signal handlers, so the parent sees exactly what a user
 * program would: our report and SIGABRT, or the default SIGSEGV action.
 *
 *   overflow_child stackful|copystack|copystack-task|null|canary|fallback|own
 *
 * canary: a stackful coroutine with BATON_CORO_STACK_CANARY overflows by
 * about 2 KiB (into the slack page below its stack), then yields: the
 * switch finds the canary overwritten. fallback: the same with default
 * attributes, after the parent set BATON_STACK_GUARD_BUDGET=1 and one
 * guarded stack was taken, so this one is a canary stack. own: the program
 * keeps baton's reporter out (baton_coro_overflow_handler(0)) and installs
 * its own handler, which must be the one that sees the guard-page fault.
 * copystack-task: a copy-stack task of a one-worker scheduler parks once
 * (its frames copied out and back) and then overflows the shared stack.
 */
#include <alloca.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <baton/coro.h>
#include <baton/sched.h>

static volatile long sink;

__attribute__((noinline)) static long recurse(long n)
{
	volatile char frame[512];

	frame[0] = (char)n;
	frame[511] = (char)n;
	sink += recurse(n + 1) + frame[0] + frame[511];
	return sink;
}

/* Overflow by one block of `reach` bytes, every byte of it written (not
 * zero) from the top down, then yield with the block live. The canary is
 * one zero word that only a write there finds, and a chain of recursive
 * frames leaves words unwritten between its locals (return addresses,
 * padding) where the canary may fall as the stack's layout shifts; one
 * block has no gaps. */
__attribute__((noinline)) static long dive(size_t reach)
{
	volatile char *block = alloca(reach);

	for (size_t i = reach; i-- > 0;)
		block[i] = (char)(0x5a ^ (i & 0x0f));
	baton_coro_yield(NULL, NULL);
	return block[0] + block[reach - 1];
}

static void *overflow_then_yield(void *arg, void *in)
{
	(void)arg;
	(void)in;
	/* From here to the bottom of a 32 KiB stack: 32 KiB plus what the
	 * top page leaves below the control block (about 3.6 KiB). Reaching
	 * 39,000 bytes down overflows by about 2.5 KiB: past the canary, well
	 * inside the slack page below the stack. */
	return (void *)dive(39000);
}

static void *overflow(void *arg, void *in)
{
	(void)arg;
	(void)in;
	return (void *)recurse(0);
}

static void *null_deref(void *arg, void *in)
{
	(void)in;
	/* Not NULL, so UBSan builds fault instead of reporting a NULL load. */
	return (void *)(long)*(volatile int *)((char *)arg + 16);
}

static void own_handler(int sig)
{
	static const char msg[] = "the program's own handler ran\n";

	(void)sig;
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	_exit(42);
}

/* Keep baton's reporter out, then install the program's handler (on an
 * alternate stack: the fault is a stack overflow). */
static int own_setup(void)
{
	static char alt[65536];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	struct sigaction sa;

	if (baton_coro_overflow_handler(0) != BATON_OK ||
	    baton_coro_overflow_handler(0) != BATON_OK ||    /* the same choice again */
	    baton_coro_overflow_handler(1) != BATON_EBUSY || /* made once */
	    baton_coro_overflow_handler(2) != BATON_EINVAL)
		return 5;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = own_handler;
	sa.sa_flags = SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGSEGV, &sa, NULL) != 0)
		return 6;
	return 0;
}

static void task_diver(void *arg)
{
	(void)arg;
	baton_sched_sleep(1000000); /* park once: copied out and back in */
	recurse(0);
}

static int copystack_task(void)
{
	struct baton_task_attr ta = BATON_TASK_ATTR_INIT;
	baton_sched_t *s;
	int rc;

	ta.coro.model = BATON_CORO_COPYSTACK;
	ta.coro.name = "cs-task-diver";
	if ((rc = baton_sched_create(&s, NULL)) != BATON_OK ||
	    (rc = baton_sched_spawn(s, &ta, task_diver, NULL)) != BATON_OK) {
		fprintf(stderr, "sched: %s\n", baton_strerror(rc));
		return 3;
	}
	baton_sched_run(s);
	return 4; /* not reached */
}

int main(int argc, char **argv)
{
	struct baton_coro_attr attr = { BATON_CORO_STACKFUL, 32 * 1024, "deep-diver", 0 };
	baton_coro_fn fn = overflow;
	baton_coro_t *co;
	int rc;

	alarm(20);
	if (argc != 2) {
		fprintf(stderr,
			"usage: overflow_child stackful|copystack|copystack-task|null|"
			"canary|fallback|own\n");
		return 2;
	}
	if (strcmp(argv[1], "copystack-task") == 0)
		return copystack_task();
	if (strcmp(argv[1], "canary") == 0 || strcmp(argv[1], "fallback") == 0) {
		baton_coro_t *first = NULL;

		fn = overflow_then_yield;
		if (strcmp(argv[1], "canary") == 0) {
			attr.flags = BATON_CORO_STACK_CANARY;
			attr.name = "canary-diver";
		} else {
			attr.name = "fallback-diver";
			/* Takes the one guarded stack the budget allows. */
			if (baton_coro_create(&first, NULL, overflow, NULL) != BATON_OK)
				return 3;
		}
	}
	if (strcmp(argv[1], "own") == 0 && (rc = own_setup()) != 0)
		return rc;
	if (strcmp(argv[1], "copystack") == 0) {
		attr.model = BATON_CORO_COPYSTACK;
		attr.stack_size = 0; /* the shared stack's */
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
