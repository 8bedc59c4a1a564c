/* SPDX-License-Identifier: MIT */
/*
 * src/arch/arch.h - the machine-dependent part of a context switch.
 *
 * A context is a suspended flow of control: a stack plus the callee-saved
 * registers of the point where it stopped. The portable code in src/coro/
 * sees only this interface; each backend implements it:
 *
 *   switch_x86_64.S, switch_aarch64.S  hand-written switch (the default)
 *   switch_ucontext.c                  swapcontext(3), chosen at configure
 *                                      time with -DBATON_SWITCH=ucontext
 *
 * Rules:
 *  - baton__arch_switch() may only target a context made by baton__arch_make()
 *    and not yet run, or one suspended by baton__arch_switch() (or by
 *    baton__arch_start(), which suspends its caller the same way, or by
 *    baton__arch_hop()).
 *  - The entry function given to baton__arch_make() must never return; it
 *    leaves its context with a final baton__arch_switch().
 *
 * The FP control state (rounding mode and exception masks: MXCSR and the
 * x87 control word on x86-64, FPCR on AArch64) is callee-saved, and each
 * context keeps its own unless its flags say BATON_ARCH_SHARED_FP. A
 * switch from A to B
 *  - stores A's state with A if A keeps its own;
 *  - loads B's if B keeps its own;
 *  - loads the thread's shared state (baton__arch_fp_shared_set) if A's
 *    own state is confined to it (BATON_ARCH_FP_CONFINED) and B shares.
 * A shared context never changes the state, so an own-state context always
 * finds its own, a shared one runs in the state of whoever switched to it,
 * and what a confined context changed never reaches a shared one; between
 * two shared contexts there is no FP work at all. A context that has never
 * run starts in the state of the switch that starts it (its creator's, for
 * baton__arch_make).
 */
#ifndef BATON_SRC_ARCH_H
#define BATON_SRC_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* baton_arch_ctx_t.flags */
/* The context has no FP control state of its own (BATON_CORO_SHARED_FPENV):
 * it runs in its thread's shared state (see baton__arch_fp_shared_set). */
#define BATON_ARCH_SHARED_FP 1u
/* An own-state context whose state is confined to it: a switch from it to
 * a shared context loads the thread's shared state (a scheduler task with
 * BATON_TASK_OWN_FPENV). Without it, a shared context runs in the state of
 * whoever switched to it (coro.h rule 5). */
#define BATON_ARCH_FP_CONFINED 0x80u
/* Hand-written backends: the context was suspended by baton__arch_hop(), so
 * `sp`, `fp` and `pc` are all there is of it (see below). Only a shared
 * context is ever hopped. */
#define BATON_ARCH_HOPPED 2u

#if BATON_SWITCH_UCONTEXT
#include <ucontext.h>

typedef struct baton_arch_ctx {
	ucontext_t uc;
	uint8_t flags;              /* accepted, no effect: swapcontext saves
				       every context's FP state */
	void (*entry)(void *value); /* set while the context has never run */
	void *value;                /* handed over by the switch that resumes it */
} baton_arch_ctx_t;
#else
typedef struct baton_arch_ctx {
	void *sp;      /* the saved frame of a suspended context; for a
			       hopped one, its stack pointer at the hop */
	uint8_t flags; /* BATON_ARCH_*; one byte, read and written by
			       byte accesses only (a wider load of a byte just
			       stored would wait for the store to complete) */
	void *fp;      /* hopped: the frame pointer (rbp, x29) ... */
	void *pc;      /* ... and where it resumes */
} baton_arch_ctx_t;
#endif

/* Suspend the running context into `from`, resume `to`, hand it `value`.
 * Returns the value passed by whoever later switches back to `from`. */
void *baton__arch_switch(baton_arch_ctx_t *from, baton_arch_ctx_t *to, void *value);

#if BATON_SWITCH_UCONTEXT
static inline int baton__arch_switch_out(baton_arch_ctx_t *from, baton_arch_ctx_t *to, void *value,
					 void **out)
{
	*out = baton__arch_switch(from, to, value);
	return 0;
}
#else
/* As baton__arch_switch, but the value received is stored in *out and the
 * call returns 0, so that a C function can end with
 * `return baton__arch_switch_out(...)` as a tail call. `out` must not be
 * NULL. */
int baton__arch_switch_out(baton_arch_ctx_t *from, baton_arch_ctx_t *to, void *value, void **out);
#endif

#if BATON_SWITCH_UCONTEXT
#define baton__arch_switch_ret baton__arch_switch_out
#else
/* As baton__arch_switch_out, ending in a return instead of an indirect
 * jump: for switches between contexts that stopped at the same call sites
 * (see switch_x86_64.S). */
int baton__arch_switch_ret(baton_arch_ctx_t *from, baton_arch_ctx_t *to, void *value, void **out);
#endif

#if defined(__x86_64__) && !BATON_SWITCH_UCONTEXT
/* baton__arch_switch in two more copies, one per direction of a pair of
 * contexts that switch to each other in turn, so that each copy's final
 * indirect jump has one target (see switch_x86_64.S). */
void *baton__arch_switch_there(baton_arch_ctx_t *from, baton_arch_ctx_t *to, void *value);
void *baton__arch_switch_back(baton_arch_ctx_t *from, baton_arch_ctx_t *to, void *value);
#endif

/* Prepare `ctx` so that the first switch to it calls entry(value) on the
 * stack [lo, hi). The current FP control state becomes the context's. */
void baton__arch_make(baton_arch_ctx_t *ctx, char *lo, char *hi, void (*entry)(void *value));

/* The first entry into a context that has never run: suspend the running
 * one into `from` and call entry(value) on the stack [lo, hi). The same as
 * baton__arch_make(to, lo, hi, entry) followed by baton__arch_switch(from,
 * to, value), and cheaper: the hand-written backends build no initial
 * frame, and the new context simply starts in the caller's FP control
 * state (the state make would have copied). `to` is filled when the new
 * context first switches away. Returns what the switch back to `from`
 * hands over. */
void *baton__arch_start(baton_arch_ctx_t *from, baton_arch_ctx_t *to, char *lo, char *hi,
			void (*entry)(void *value), void *value);

/* Resume `to` and hand it `value` without saving the running context
 * `from`, which ends: the second half of a switch. (`from` is read for its
 * flags only.) */
__attribute__((noreturn)) void baton__arch_jump(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
						void *value);

#if !BATON_SWITCH_UCONTEXT
#define BATON_ARCH_HAS_RESTART 1
/* baton__arch_start for a running context `from` that ends: save nothing,
 * call entry(value) at the top of a stack that may be the one we run on (the
 * frames below are dead). `from` and `to` are read for their flags only.
 * Hand-written backends only: makecontext would write the new frame while
 * we still run on it. */
__attribute__((noreturn)) void baton__arch_restart(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
						   char *hi, void (*entry)(void *value),
						   void *value);
#else
#define BATON_ARCH_HAS_RESTART 0
#endif

#if !BATON_SWITCH_UCONTEXT
#define BATON_ARCH_HAS_SWAP 1
/* A switch from `from` to `to` with fn(from, to) called between its two
 * halves on the stack whose top is `scratch` (16-byte aligned): fn may
 * rewrite the stack `from` ran on and `to` will run on, since nothing runs
 * there meanwhile. `to` receives NULL; the value `from` later receives is
 * stored in *out and the call returns 0 (as baton__arch_switch_ret, whose
 * frame it saves and loads). Hand-written backends only. */
int baton__arch_swap_ret(baton_arch_ctx_t *from, baton_arch_ctx_t *to, void **out, char *scratch,
			 void (*fn)(baton_arch_ctx_t *from, baton_arch_ctx_t *to));
#else
#define BATON_ARCH_HAS_SWAP 0
#endif

/* The lowest stack address a suspended context still uses: everything in
 * [baton__arch_ctx_sp(ctx), top of its stack) must be kept to resume it. */
#if BATON_SWITCH_UCONTEXT
char *baton__arch_ctx_sp(const baton_arch_ctx_t *ctx);
#else
static inline char *baton__arch_ctx_sp(const baton_arch_ctx_t *ctx)
{
	return (char *)ctx->sp; /* the copy-stack hop reads it inline */
}
#endif

/* The calling thread's shared FP state (see the rule above) becomes its
 * current state. Called when the thread first uses coroutines and when it
 * declares its own context shared. */
#if BATON_SWITCH_UCONTEXT
static inline void baton__arch_fp_shared_set(void)
{
}
#else
void baton__arch_fp_shared_set(void);
#endif

/*
 * baton__arch_hop(from, to): a switch written inline into its caller, for
 * the scheduler's hop between two contexts that share the FP state.
 * Every register but the stack and frame pointers is declared clobbered,
 * so the compiler saves only the values live at the call site (in its own
 * frame, usually in registers its function saves anyway), and the hop
 * itself stores three words in `from` - stack pointer, frame pointer,
 * resume address - marks it BATON_ARCH_HOPPED, and writes nothing on the
 * stack (no red zone to respect). If `to` was hopped too, it loads its
 * three words and jumps; if `to` was suspended by the out-of-line switch
 * (or made and never run), it pops that switch's frame as the switch would,
 * handing it NULL. The out-of-line switch resumes a hopped context the same
 * way in reverse, so the two kinds mix freely. `to` receives nothing and
 * the hop returns nothing. Both contexts must share the FP state (no FP
 * work is done), and `to` must be suspended. Hand-written backends, builds
 * without switch hooks (the sanitizers must see every switch) only.
 */
#if !BATON_SWITCH_UCONTEXT && (defined(__x86_64__) || defined(__aarch64__))
#define BATON_ARCH_HAS_HOP 1
#else
#define BATON_ARCH_HAS_HOP 0
#endif

#if BATON_ARCH_HAS_HOP
_Static_assert(offsetof(baton_arch_ctx_t, sp) == 0 && offsetof(baton_arch_ctx_t, flags) == 8 &&
		       offsetof(baton_arch_ctx_t, fp) == 16 && offsetof(baton_arch_ctx_t, pc) == 24,
	       "the layout the switches read (switch_*.S and below)");

#if defined(__x86_64__)
static inline __attribute__((always_inline)) void baton__arch_hop(baton_arch_ctx_t *from,
								  baton_arch_ctx_t *to)
{
	register baton_arch_ctx_t *f __asm__("rdi") = from;
	register baton_arch_ctx_t *t __asm__("rsi") = to;

	__asm__ __volatile__("leaq	1f(%%rip), %%rax\n\t"
			     "movq	%%rbp, 16(%0)\n\t"
			     "movq	%%rax, 24(%0)\n\t"
			     "movq	%%rsp, (%0)\n\t"
			     "movb	$3, 8(%0)\n\t" /* SHARED_FP | HOPPED */
			     "cmpb	$1, 8(%1)\n\t"
			     "movq	(%1), %%rsp\n\t" /* from here on we are `to` */
			     "je	2f\n\t"
			     "movb	$1, 8(%1)\n\t" /* hopped: runs again */
			     "movq	16(%1), %%rbp\n\t"
			     "jmpq	*24(%1)\n"
			     "2:\t"                    /* the out-of-line switch's frame */
			     "addq	$8, %%rsp\n\t" /* FP slot: `to` shares */
			     "popq	%%rcx\n\t"     /* out */
			     "popq	%%r15\n\t"
			     "popq	%%r14\n\t"
			     "popq	%%r13\n\t"
			     "popq	%%r12\n\t"
			     "popq	%%rbx\n\t"
			     "popq	%%rbp\n\t"
			     "xorl	%%eax, %%eax\n\t" /* the value: NULL */
			     "testq	%%rcx, %%rcx\n\t"
			     "jz	3f\n\t"
			     "movq	%%rax, (%%rcx)\n"
			     "3:\t"
			     "popq	%%rcx\n\t"
			     "jmpq	*%%rcx\n"
			     "1:"
			     : "+r"(f), "+r"(t)
			     :
			     : "rax", "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11", "r12", "r13",
			       "r14", "r15", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
			       "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
			       "xmm15", "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)",
			       "st(7)", "mm0", "mm1", "mm2", "mm3", "mm4", "mm5", "mm6", "mm7",
			       "cc", "memory");
}
#elif defined(__aarch64__)
static inline __attribute__((always_inline)) void baton__arch_hop(baton_arch_ctx_t *from,
								  baton_arch_ctx_t *to)
{
	register baton_arch_ctx_t *f __asm__("x0") = from;
	register baton_arch_ctx_t *t __asm__("x1") = to;

	__asm__ __volatile__("adr	x9, 1f\n\t"
			     "mov	x10, sp\n\t"
			     "str	x10, [%0]\n\t"
			     "stp	x29, x9, [%0, #16]\n\t"
			     "mov	w11, #3\n\t" /* SHARED_FP | HOPPED */
			     "strb	w11, [%0, #8]\n\t"
			     "ldrb	w12, [%1, #8]\n\t"
			     "ldr	x10, [%1]\n\t"
			     "mov	sp, x10\n\t" /* from here on we are `to` */
			     "cmp	w12, #1\n\t"
			     "b.eq	2f\n\t"
			     "mov	w12, #1\n\t" /* hopped: runs again */
			     "strb	w12, [%1, #8]\n\t"
			     "ldp	x29, x9, [%1, #16]\n\t"
			     "br	x9\n"
			     "2:\t" /* the out-of-line switch's frame */
			     "ldp	x19, x20, [sp, #0]\n\t"
			     "ldp	x21, x22, [sp, #16]\n\t"
			     "ldp	x23, x24, [sp, #32]\n\t"
			     "ldp	x25, x26, [sp, #48]\n\t"
			     "ldp	x27, x28, [sp, #64]\n\t"
			     "ldp	x29, x30, [sp, #80]\n\t"
			     "ldp	d8, d9, [sp, #96]\n\t"
			     "ldp	d10, d11, [sp, #112]\n\t"
			     "ldp	d12, d13, [sp, #128]\n\t"
			     "ldp	d14, d15, [sp, #144]\n\t"
			     "ldr	x3, [sp, #168]\n\t" /* out (FPCR: `to` shares) */
			     "add	sp, sp, #176\n\t"
			     "mov	x0, #0\n\t" /* the value: NULL */
			     "cbz	x3, 3f\n\t"
			     "str	xzr, [x3]\n"
			     "3:\t"
			     "br	x30\n"
			     "1:"
			     : "+r"(f), "+r"(t)
			     :
			     : "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12",
			       "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22",
			       "x23", "x24", "x25", "x26", "x27", "x28", "x30", "v0", "v1", "v2",
			       "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13",
			       "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23",
			       "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc",
			       "memory");
}
#endif
#endif /* BATON_ARCH_HAS_HOP */

/* Bytes below the top of the stack that baton__arch_make() uses. */
#define BATON_ARCH_MAKE_RESERVE 256

#endif /* BATON_SRC_ARCH_H */
