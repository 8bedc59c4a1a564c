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
 *    baton__arch_start(), which suspends its caller the same way).
 *  - The entry function given to baton__arch_make() must never return; it
 *    leaves its context with a final baton__arch_switch().
 */
#ifndef BATON_SRC_ARCH_H
#define BATON_SRC_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#if BATON_SWITCH_UCONTEXT
#include <ucontext.h>

typedef struct baton_arch_ctx {
	ucontext_t uc;
	uint32_t shared_fp;	    /* accepted, no effect: swapcontext saves all */
	void (*entry)(void *value); /* set while the context has never run */
	void *value;		    /* handed over by the switch that resumes it */
} baton_arch_ctx_t;
#else
typedef struct baton_arch_ctx {
	void *sp;	    /* the saved frame of a suspended context */
	uint32_t shared_fp; /* 1: no FP control state of its own (the switch
			       neither stores nor loads it; see the .S) */
} baton_arch_ctx_t;
#endif

/* Suspend the running context into `from`, resume `to`, hand it `value`.
 * Returns the value passed by whoever later switches back to `from`. */
void *baton__arch_switch(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
			void *value);

#if BATON_SWITCH_UCONTEXT
static inline int baton__arch_switch_out(baton_arch_ctx_t *from,
					baton_arch_ctx_t *to, void *value,
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
int baton__arch_switch_out(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
			  void *value, void **out);
#endif

#if BATON_SWITCH_UCONTEXT
#define baton__arch_switch_ret baton__arch_switch_out
#else
/* As baton__arch_switch_out, ending in a return instead of an indirect
 * jump: for switches between contexts that stopped at the same call sites
 * (see switch_x86_64.S). */
int baton__arch_switch_ret(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
			  void *value, void **out);
#endif

#if defined(__x86_64__) && !BATON_SWITCH_UCONTEXT
/* baton__arch_switch in two more copies, one per direction of a pair of
 * contexts that switch to each other in turn, so that each copy's final
 * indirect jump has one target (see switch_x86_64.S). */
void *baton__arch_switch_there(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
			      void *value);
void *baton__arch_switch_back(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
			     void *value);
#endif

/* Prepare `ctx` so that the first switch to it calls entry(value) on the
 * stack [lo, hi). The current FP control state becomes the context's. */
void baton__arch_make(baton_arch_ctx_t *ctx, char *lo, char *hi,
		     void (*entry)(void *value));

/* The first entry into a context that has never run: suspend the running
 * one into `from` and call entry(value) on the stack [lo, hi). The same as
 * baton__arch_make(to, lo, hi, entry) followed by baton__arch_switch(from,
 * to, value), and cheaper: the hand-written backends build no initial
 * frame, and the new context simply starts in the caller's FP control
 * state (the state make would have copied). `to` is filled when the new
 * context first switches away. Returns what the switch back to `from`
 * hands over. */
void *baton__arch_start(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
		       char *lo, char *hi, void (*entry)(void *value),
		       void *value);

/* Resume `to` and hand it `value` without saving the running context, which
 * ends: the second half of a switch. */
__attribute__((noreturn)) void baton__arch_jump(baton_arch_ctx_t *to,
					       void *value);

#if !BATON_SWITCH_UCONTEXT
#define BATON_ARCH_HAS_RESTART 1
/* baton__arch_start for a running context that ends: save nothing, call
 * entry(value) at the top of a stack that may be the one we run on (the
 * frames below are dead). Hand-written backends only: makecontext would
 * write the new frame while we still run on it. */
__attribute__((noreturn)) void baton__arch_restart(char *hi,
						  void (*entry)(void *value),
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
int baton__arch_swap_ret(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
			void **out, char *scratch,
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

/* Bytes below the top of the stack that baton__arch_make() uses. */
#define BATON_ARCH_MAKE_RESERVE 256

#endif /* BATON_SRC_ARCH_H */
