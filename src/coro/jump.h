/* SPDX-License-Identifier: MIT */
/*
 * src/coro/jump.h - the jump-entered pair, for a coroutine that is entered
 * and left as a call is (the sequencer's, src/seq: the lock holder resumes
 * it, it runs one request and yields back): baton__coro_jump_resume(co)
 * and baton__coro_jump_yield(co) have the effects of
 * baton_coro_resume(co, NULL, NULL) and baton_coro_yield(NULL, NULL); on
 * x86-64 they do that bookkeeping themselves (baton__coro_switch_mark) and
 * switch by jmp (below), elsewhere they are those calls.
 *
 * Rules: resume only a stackful, suspended coroutine, which yields back
 * only with baton__coro_jump_yield (or baton_coro_yield) to the context
 * that resumed it, on the resumer's thread; the value either hands over is
 * NULL (pass data in memory both sides see). Neither can fail.
 *
 * Example (the sequencer, src/seq/seq.c):
 *
 *	holder:    baton__coro_jump_resume(s->co);   runs one request
 *	coroutine: for (;;) { run(&s->cur); baton__coro_jump_yield(s->co); }
 *
 * Why: the switch in src/arch/switch_x86_64.S arrives in the other context
 * with pop + jmp, not ret, so the entry that our `call` of resume pushed on
 * the CPU's return-stack predictor is never popped, nor is the one the
 * coroutine's `call` of yield pushed. Every round trip left two stale
 * entries on top of the caller's chain, and the caller's next two rets
 * (baton_seq_call's, then its caller's) were predicted from them and
 * mispredicted (perf put the time on the instructions after them): a third
 * of a one-thread call's time (docs/seq.md, "The uncontended call"). Entering resume and yield with a jmp
 * and a return address pushed by hand instead of a call pushes nothing on
 * the predictor, so the two sides' own calls and returns stay balanced
 * and every ret is predicted.
 *
 * How: the inline asm below is a call without the call instruction. It
 * moves below the red zone (GCC may keep data there in a function it
 * believes to be a leaf), aligns the stack as a call site must, pushes the
 * label after the jmp as the return address and jumps; resume or yield
 * returns there (by ret, or by the switch's pop + jmp) with the callee-saved
 * registers intact, among them rbx, which kept our stack pointer. The asm
 * declares every caller-saved register clobbered, as a call does.
 * __builtin_frame_address(0) as an input makes the compiler give the
 * enclosing function a frame pointer, so its unwind information (CFA
 * relative to rbp) stays right while the asm moves rsp: debuggers and
 * profilers still walk through it.
 *
 * Elsewhere (AArch64, the ucontext switch, sanitizer builds, where resume
 * and yield take the general path and return normally) these are the plain
 * calls. The seq tests run both kinds (native, asan, tsan, aarch64).
 */
#ifndef BATON_SRC_CORO_JUMP_H
#define BATON_SRC_CORO_JUMP_H

#include <baton/coro.h>

#include "../common/sanitizer.h" /* BATON_SWITCH_HOOKS */
#include "coro_internal.h"       /* the bookkeeping, baton__tls */
#include "config.h"              /* BATON_SWITCH_UCONTEXT */

#if defined(__x86_64__) && !BATON_SWITCH_UCONTEXT && !BATON_SWITCH_HOOKS
#define BATON_CORO_JUMP 1

#ifdef __AVX512F__
#define JUMP_CLOBBERS_AVX512                                                                     \
	, "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",       \
		"xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", \
		"k4", "k5", "k6", "k7"
#else
#define JUMP_CLOBBERS_AVX512
#endif

/* What a call may change (System V): the argument registers are in/out
 * operands of the asm; rbx is ours (the saved stack pointer). */
#define JUMP_CALL_CLOBBERS                                                                         \
	"rax", "rbx", "rcx", "r8", "r9", "r10", "r11", "memory", "cc", "xmm0", "xmm1", "xmm2",     \
		"xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
		"xmm13", "xmm14", "xmm15", "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)",      \
		"st(6)", "st(7)" JUMP_CLOBBERS_AVX512

/* `target` with its three arguments in rdi, rsi, rdx, entered by jmp. */
#define JUMP_CALL(target, a0, a1, a2)                                  \
	__asm__ __volatile__("movq %%rsp, %%rbx\n\t"                   \
			     "subq $128, %%rsp\n\t" /* the red zone */ \
			     "andq $-16, %%rsp\n\t"                    \
			     "leaq 1f(%%rip), %%rax\n\t"               \
			     "pushq %%rax\n\t"                         \
			     "jmp " target "\n"                        \
			     "1:\n\t"                                  \
			     "movq %%rbx, %%rsp"                       \
			     : "+r"(a0), "+r"(a1), "+r"(a2)            \
			     : "r"(__builtin_frame_address(0))         \
			     : JUMP_CALL_CLOBBERS)

/* baton_coro_yield(NULL, NULL), entered by jmp: baton__coro_jump_yield's
 * general path. Cannot fail: a stackful coroutine. */
static inline __attribute__((always_inline)) void jump_yield_general(void)
{
	register void *a0 __asm__("rdi") = NULL;
	register void **a1 __asm__("rsi") = NULL;
	register void *a2 __asm__("rdx") = NULL;

	JUMP_CALL("baton_coro_yield@PLT", a0, a1, a2);
}

/*
 * The fast pair: baton__coro_jump_resume() and _yield() do what
 * baton_coro_resume() and baton_coro_yield() do for this one case - a
 * stackful, suspended coroutine resumed by (in src/seq) the lock holder,
 * which yields back to it - and
 * switch with baton__arch_switch directly, entered by jmp as above. They
 * skip what cannot apply here (argument checks, the status check the lock
 * makes true, copy-stack handling of the target, the value hand-over: the
 * request is always s->cur) and keep everything the coroutine module
 * relies on: the running coroutine, the statuses, the resumer, the stack
 * canaries, the saved contexts (the same frames, so either side may be
 * switched by the general functions). A caller the general path must
 * handle (a copy-stack caller whose frames left the shared stack while fn
 * ran) takes it. A round trip is about a quarter shorter than through the
 * public functions (docs/seq.md has the callgrind counts).
 *
 * What no entry can keep balanced: an fn that leaves calls unreturned
 * (CHICKEN's callbacks end in a longjmp) leaves their entries on the
 * return-stack predictor, so every return after it whose call came before
 * it mispredicts - fn's own frames, as in a plain call, and then
 * baton_seq_call's return and its caller's. Undoing that would take
 * knowing how many entries fn left. In the seq benchmark this is most of
 * what chicken-baton costs over c-baton (the instructions are the same): a
 * C fn that longjmps out of three frames widens the gap between a plain
 * and a sequenced call as much (docs/seq.md).
 */

/*
 * The switch itself: baton__arch_switch(from, to, NULL) - the same saved
 * frame, so that a context saved here may be resumed by the general
 * functions and the other way round - in the two copies the arch layer
 * keeps for such pairs (baton__arch_switch_there and _back), one per
 * direction, entered by jmp. Each ends in the
 * indirect jmp to the context it enters; with one copy, that one jmp went
 * alternately to the caller and into seq_main, and the predictor missed
 * often enough to cost a fifth of a one-thread call (docs/seq.md). With a
 * jmp per direction each has one target.
 */
#define JUMP_SWITCH(target, from, to)                                   \
	do {                                                            \
		register baton_arch_ctx_t *a0_ __asm__("rdi") = (from); \
		register baton_arch_ctx_t *a1_ __asm__("rsi") = (to);   \
		register void *a2_ __asm__("rdx") = NULL;               \
		JUMP_CALL(target, a0_, a1_, a2_);                       \
	} while (0)

/*
 * The thread's coroutine state without its address: every access below is
 * a %fs-relative load or store of a field of baton__tls (current, and own,
 * the thread's own context once it is set up), which reaches the running
 * thread's copy whatever happened before, so neither side needs the
 * out-of-line accessor. Only a thread not set up yet (own is NULL) calls
 * it, on its own stack, which sets the thread up.
 */

/* Onto co's stack: what baton_coro_resume(co, NULL, NULL) does for it. */
static inline __attribute__((always_inline)) void baton__coro_jump_resume(baton_coro_t *co)
{
	struct baton_coro *from = baton__tls.current;

	if (from == NULL) {
		from = baton__tls.own;
		if (BATON_UNLIKELY(from == NULL))
			from = &baton__thread_get_after_switch()->root;
	}
	baton__stack_canary_check(from);
	baton__coro_switch_mark(BATON__SWITCH_RESUME, from, co, &baton__tls.current, NULL);
	JUMP_SWITCH("baton__arch_switch_there", &from->ctx, &co->ctx);
}

/* Back to the resumer: what baton_coro_yield(NULL, NULL) does for the
 * running coroutine `co`. We run on the resumer's thread: one that resumed
 * from its own stack went through baton__coro_jump_resume on it, which set
 * the thread up (own is its root there). */
static inline __attribute__((always_inline)) void baton__coro_jump_yield(baton_coro_t *co)
{
	struct baton_coro *to = co->resumer;

	baton__stack_canary_check(co);
	if (BATON_UNLIKELY(to->model == BATON_CORO_COPYSTACK && baton__tls.shared.owner != to)) {
		jump_yield_general(); /* the resumer's frames must be copied back */
		return;
	}
	baton__coro_switch_mark(BATON__SWITCH_YIELD, co, to, &baton__tls.current, baton__tls.own);
	JUMP_SWITCH("baton__arch_switch_back", &co->ctx, &to->ctx);
}

#else
#define BATON_CORO_JUMP 0

static inline void baton__coro_jump_resume(baton_coro_t *co)
{
	(void)baton_coro_resume(co, NULL, NULL);
}

static inline void baton__coro_jump_yield(baton_coro_t *co)
{
	(void)co;
	(void)baton_coro_yield(NULL, NULL);
}
#endif

#endif /* BATON_SRC_CORO_JUMP_H */
