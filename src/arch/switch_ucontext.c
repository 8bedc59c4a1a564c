/* SPDX-License-Identifier: MIT */
/*
 * Portable backend on swapcontext(3), selected with -DBATON_SWITCH=ucontext.
 *
 * It is slow: glibc's swapcontext saves and restores
 * the signal mask with a rt_sigprocmask system call on every switch. It is
 * here for architectures without a hand-written switch and as the baseline
 * the benchmarks compare the assembly against.
 *
 * The value handed over by a switch travels in the target context itself,
 * not in a thread-local: a stackful coroutine may be resumed by another
 * thread, and the code after swapcontext() returns may then run on a thread
 * other than the one whose thread-local address was computed before it.
 * makecontext() can only pass int arguments, so a fresh context finds itself
 * through a thread-local set just before its first switch, read on that
 * same thread by the trampoline.
 */
#include <stdlib.h>

#include "arch.h"

static __thread baton_arch_ctx_t *handoff_target;

static void trampoline(void)
{
	baton_arch_ctx_t *self = handoff_target;
	void (*entry)(void *) = self->entry;

	self->entry = NULL;
	entry(self->value);
	abort(); /* entry functions never return */
}

void *baton__arch_switch(baton_arch_ctx_t *from, baton_arch_ctx_t *to, void *value)
{
	to->value = value;
	handoff_target = to;
	if (swapcontext(&from->uc, &to->uc) != 0)
		abort(); /* only fails on bad arguments, which we never pass */
	return from->value;
}

void baton__arch_make(baton_arch_ctx_t *ctx, char *lo, char *hi, void (*entry)(void *value))
{
	if (getcontext(&ctx->uc) != 0)
		abort();
	ctx->uc.uc_stack.ss_sp = lo;
	ctx->uc.uc_stack.ss_size = (size_t)(hi - BATON_ARCH_MAKE_RESERVE - lo);
	ctx->uc.uc_link = NULL;
	ctx->entry = entry;
	makecontext(&ctx->uc, trampoline, 0);
}

void *baton__arch_start(baton_arch_ctx_t *from, baton_arch_ctx_t *to, char *lo, char *hi,
			void (*entry)(void *value), void *value)
{
	baton__arch_make(to, lo, hi, entry);
	return baton__arch_switch(from, to, value);
}

void baton__arch_jump(baton_arch_ctx_t *from, baton_arch_ctx_t *to, void *value)
{
	(void)from;
	to->value = value;
	handoff_target = to;
	setcontext(&to->uc);
	abort(); /* only fails on bad arguments, which we never pass */
}

char *baton__arch_ctx_sp(const baton_arch_ctx_t *ctx)
{
	const mcontext_t *mc = &ctx->uc.uc_mcontext;
	char *sp;

#if defined(__x86_64__)
	sp = (char *)mc->gregs[REG_RSP];
	sp -= 128; /* the red zone below rsp may hold live data */
#elif defined(__aarch64__)
	sp = (char *)mc->sp;
#else
#error "baton__arch_ctx_sp: add this architecture's saved stack pointer"
#endif
	return sp;
}
