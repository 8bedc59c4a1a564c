/*
 * src/seq/enter.h - onto the dedicated stack and back: seq_resume() (the
 * lock holder, resuming the sequencer's coroutine) and seq_yield() (the
 * coroutine, back to the holder). Both are baton_coro_resume(co, in, NULL)
 * and baton_coro_yield(NULL, in) - the same functions, the same effects -
 * entered differently on x86-64.
 *
 * Why: the switch in src/arch/switch_x86_64.S arrives in the other context
 * with pop + jmp, not ret, so the entry that our `call` of resume pushed on
 * the CPU's return-stack predictor is never popped, nor is the one the
 * coroutine's `call` of yield pushed. Every round trip left two stale
 * entries on top of the caller's chain, and the caller's next two rets
 * (baton_seq_call's, then its caller's) were predicted from them and
 * mispredicted (perf put the time on the instructions after them); in a
 * one-thread loop a call went from 32.6 to 20.9 ns without them (2-core
 * AMD EPYC VM, docs/seq.md). Entering resume and yield with a jmp
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
#ifndef BATON_SRC_SEQ_ENTER_H
#define BATON_SRC_SEQ_ENTER_H

#include <baton/coro.h>

#include "../common/sanitizer.h" /* BATON_SWITCH_HOOKS */
#include "config.h"		  /* BATON_SWITCH_UCONTEXT */

#if defined(__x86_64__) && !BATON_SWITCH_UCONTEXT && !BATON_SWITCH_HOOKS
#define SEQ_JMP_ENTER 1

#ifdef __AVX512F__
#define SEQ_CLOBBERS_AVX512 , "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", \
	"xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", \
	"xmm30", "xmm31", "k1", "k2", "k3", "k4", "k5", "k6", "k7"
#else
#define SEQ_CLOBBERS_AVX512
#endif

/* What a call may change (System V): the argument registers are in/out
 * operands of the asm; rbx is ours (the saved stack pointer). */
#define SEQ_CALL_CLOBBERS "rax", "rbx", "rcx", "r8", "r9", "r10", "r11", \
	"memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", \
	"xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", \
	"xmm15", "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)", \
	"st(7)" SEQ_CLOBBERS_AVX512

/* `target` with its three arguments in rdi, rsi, rdx, entered by jmp. */
#define SEQ_JMP_CALL(target, a0, a1, a2) \
	__asm__ __volatile__( \
		"movq %%rsp, %%rbx\n\t" \
		"subq $128, %%rsp\n\t" /* the red zone */ \
		"andq $-16, %%rsp\n\t" \
		"leaq 1f(%%rip), %%rax\n\t" \
		"pushq %%rax\n\t" \
		"jmp " target "\n" \
		"1:\n\t" \
		"movq %%rbx, %%rsp" \
		: "+r"(a0), "+r"(a1), "+r"(a2) \
		: "r"(__builtin_frame_address(0)) \
		: SEQ_CALL_CLOBBERS)

/* baton_coro_resume(co, in, NULL). Cannot fail for the sequencer: its
 * coroutine is stackful and suspended whenever the lock is free. */
static inline __attribute__((always_inline)) void seq_resume(baton_coro_t *co, void *in)
{
	register baton_coro_t *a0 __asm__("rdi") = co;
	register void *a1 __asm__("rsi") = in;
	register void **a2 __asm__("rdx") = NULL;

	SEQ_JMP_CALL("baton_coro_resume@PLT", a0, a1, a2);
}

/* baton_coro_yield(NULL, in). Cannot fail: a stackful coroutine. */
static inline __attribute__((always_inline)) void seq_yield(void **in)
{
	register void *a0 __asm__("rdi") = NULL;
	register void **a1 __asm__("rsi") = in;
	register void *a2 __asm__("rdx") = NULL;

	SEQ_JMP_CALL("baton_coro_yield@PLT", a0, a1, a2);
}

#else
#define SEQ_JMP_ENTER 0

static inline void seq_resume(baton_coro_t *co, void *in)
{
	(void)baton_coro_resume(co, in, NULL);
}

static inline void seq_yield(void **in)
{
	(void)baton_coro_yield(NULL, in);
}
#endif

#endif /* BATON_SRC_SEQ_ENTER_H */
