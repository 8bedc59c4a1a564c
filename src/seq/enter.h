/* SPDX-License-Identifier: MIT */
/*
 * src/seq/enter.h - onto the dedicated stack and back: seq_enter() (the
 * lock holder, resuming the sequencer's coroutine) and seq_leave() (the
 * coroutine, back to the holder). They have the effects of
 * baton_coro_resume(co, NULL, NULL) and baton_coro_yield(NULL, NULL); on
 * x86-64 they do that bookkeeping themselves and switch by jmp (below),
 * elsewhere they are those calls.
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
#include "../coro/coro_internal.h" /* the fast pair's bookkeeping */
#include "seq_internal.h"		   /* baton__seq_self */
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

/* baton_coro_yield(NULL, NULL), entered by jmp: seq_leave's general
 * path. Cannot fail: a stackful coroutine. */
static inline __attribute__((always_inline)) void seq_yield(void)
{
	register void *a0 __asm__("rdi") = NULL;
	register void **a1 __asm__("rsi") = NULL;
	register void *a2 __asm__("rdx") = NULL;

	SEQ_JMP_CALL("baton_coro_yield@PLT", a0, a1, a2);
}

/*
 * The fast pair: seq_enter() and seq_leave() do what baton_coro_resume()
 * and baton_coro_yield() do for this one case - a stackful, suspended
 * coroutine resumed by the lock holder, which yields back to it - and
 * switch with baton__arch_switch directly, entered by jmp as above. They
 * skip what cannot apply here (argument checks, the status check the lock
 * makes true, copy-stack handling of the target, the value hand-over: the
 * request is always s->cur) and keep everything the coroutine module
 * relies on: the running coroutine, the statuses, the resumer, the stack
 * canaries, the saved contexts (the same frames, so either side may be
 * switched by the general functions). A caller the general path must
 * handle (a copy-stack caller whose frames left the shared stack while fn
 * ran) takes it. A round trip is about 60 instructions shorter than
 * through the public functions (241 -> 179 over a plain call, callgrind).
 *
 * What no entry can keep balanced: an fn that leaves calls unreturned
 * (CHICKEN's callbacks end in a longjmp) leaves their entries on the
 * return-stack predictor, so every return after it whose call came before
 * it mispredicts - fn's own frames, as in a plain call, and then
 * baton_seq_call's return and its caller's. Undoing that would take
 * knowing how many entries fn left. In the seq benchmark this is most of
 * what chicken-baton costs over c-baton (the instructions are the same): a
 * C fn that longjmps out of three frames widens the gap between a plain
 * and a sequenced call by about 13 ns.
 */

/*
 * The switch itself: baton__arch_switch(from, to, NULL) - the same saved
 * frame, so that a context saved here may be resumed by the general
 * functions and the other way round - in the two copies the arch layer
 * keeps for such pairs (baton__arch_switch_there and _back), one per
 * direction, entered by jmp. Each ends in the
 * indirect jmp to the context it enters; with one copy, that one jmp went
 * alternately to the caller and into seq_main, and the predictor missed
 * often enough to cost about 4 ns of an 18 ns call (one thread, the C
 * runtime of the seq benchmark, 2-core AMD EPYC VM: 17.9 -> 13.7 ns). With a jmp per
 * direction each has one target.
 */
#define SEQ_SWITCH(target, from, to) \
	do { \
		register baton_arch_ctx_t *a0_ __asm__("rdi") = (from); \
		register baton_arch_ctx_t *a1_ __asm__("rsi") = (to); \
		register void *a2_ __asm__("rdx") = NULL; \
		SEQ_JMP_CALL(target, a0_, a1_, a2_); \
	} while (0)

/*
 * The thread's coroutine state without its address: every access below is
 * a %fs-relative load or store of a field (baton__tls.current, of the
 * coroutine layer; baton__seq_self.root, ours), which reaches the running
 * thread's copy whatever happened before, so neither side needs the
 * out-of-line accessor (seq_internal.h). The one address needed, the
 * thread's own context, is looked up once per thread and kept in
 * baton__seq_self.root; the lookup also sets the thread up.
 */
struct baton_coro *baton__seq_root_slow(void);

/* Onto the stack: what baton_coro_resume(co, NULL, NULL) does for it.
 * Cannot fail: the coroutine is stackful and suspended whenever the lock
 * is free. */
static inline __attribute__((always_inline)) void seq_enter(baton_coro_t *co)
{
	struct baton_coro *from = baton__tls.current;

	if (from == NULL) {
		from = baton__seq_self.root;
		if (BATON_UNLIKELY(from == NULL))
			from = baton__seq_root_slow();
	}
	baton__stack_canary_check(from);
	co->resumer = from;
	co->status = BATON_CORO_RUNNING;
	from->status = BATON_CORO_NORMAL;
	baton__tls.current = co;
	SEQ_SWITCH("baton__arch_switch_there", &from->ctx, &co->ctx);
}

/* Back to the lock holder: what baton_coro_yield(NULL, NULL) does for the
 * running coroutine `co`. We run on the holder's thread: a lock holder
 * that called from its own stack went through seq_enter on it, which set
 * baton__seq_self.root there. */
static inline __attribute__((always_inline)) void seq_leave(baton_coro_t *co)
{
	struct baton_coro *to = co->resumer;

	baton__stack_canary_check(co);
	if (BATON_UNLIKELY(to->model == BATON_CORO_COPYSTACK &&
			   baton__tls.shared.owner != to)) {
		seq_yield(); /* the caller's frames must be copied back */
		return;
	}
	co->status = BATON_CORO_SUSPENDED;
	to->status = BATON_CORO_RUNNING;
	baton__tls.current = to == baton__seq_self.root ? NULL : to;
	SEQ_SWITCH("baton__arch_switch_back", &co->ctx, &to->ctx);
}

#else
#define SEQ_JMP_ENTER 0

static inline void seq_enter(baton_coro_t *co)
{
	(void)baton_coro_resume(co, NULL, NULL);
}

static inline void seq_leave(baton_coro_t *co)
{
	(void)co;
	(void)baton_coro_yield(NULL, NULL);
}
#endif

#endif /* BATON_SRC_SEQ_ENTER_H */
