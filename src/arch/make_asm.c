/* SPDX-License-Identifier: MIT */
/*
 * Initial frames for the hand-written switch (switch_x86_64.S and
 * switch_aarch64.S). The frame laid out here is exactly what the switch pops,
 * with the trampoline as the return address and the entry function in a
 * callee-saved register the trampoline calls through.
 */
#include <string.h>

#include "arch.h"

uint64_t baton__arch_fpenv(void);
void baton__arch_trampoline(void);

/* The thread's shared FP state (arch.h), in the layout of a saved slot:
 * what the switches load when an own-state context switches to a shared
 * one. Read by the switches through the initial-exec model, as baton__tls. */
__attribute__((visibility("hidden"))) __thread uint64_t baton__fp_shared
	__attribute__((tls_model("initial-exec")));

void baton__arch_fp_shared_set(void)
{
	baton__fp_shared = baton__arch_fpenv();
}

#if defined(__x86_64__)

/* Slots, from the saved stack pointer up: fpenv out r15 r14 r13 r12 rbx rbp
 * ret. `out` is NULL: the first switch hands its value over in rax. */
enum { X_FPENV, X_OUT, X_R15, X_R14, X_R13, X_R12, X_RBX, X_RBP, X_RET, X_WORDS };

void baton__arch_make(baton_arch_ctx_t *ctx, char *lo, char *hi, void (*entry)(void *value))
{
	(void)lo;
	/* After the switch pops X_RET (and jumps to it, or returns to it in
	 * baton__arch_switch_ret), rsp is `top`, which must be 16-byte aligned
	 * for the trampoline's call. */
	uintptr_t top = ((uintptr_t)hi - 16) & ~(uintptr_t)15;
	uint64_t *frame = (uint64_t *)top - X_WORDS;

	memset(frame, 0, X_WORDS * sizeof(uint64_t));
	frame[X_FPENV] = baton__arch_fpenv();
	frame[X_R12] = (uint64_t)(uintptr_t)entry;
	frame[X_RET] = (uint64_t)(uintptr_t)baton__arch_trampoline;
	ctx->sp = frame;
}

#elif defined(__aarch64__)

/* 22 eight-byte slots: x19..x28, x29, x30, d8..d15, fpcr, pad */
enum { A_X19 = 0, A_X29 = 10, A_X30 = 11, A_FPCR = 20, A_WORDS = 22 };

void baton__arch_make(baton_arch_ctx_t *ctx, char *lo, char *hi, void (*entry)(void *value))
{
	(void)lo;
	uintptr_t top = ((uintptr_t)hi - 16) & ~(uintptr_t)15;
	uint64_t *frame = (uint64_t *)top - A_WORDS;

	memset(frame, 0, A_WORDS * sizeof(uint64_t));
	frame[A_X19] = (uint64_t)(uintptr_t)entry;
	frame[A_X29] = 0; /* ends frame-pointer chains */
	frame[A_X30] = (uint64_t)(uintptr_t)baton__arch_trampoline;
	frame[A_FPCR] = baton__arch_fpenv();
	ctx->sp = frame;
}

#else
#error "no hand-written switch for this architecture; configure with -DBATON_SWITCH=ucontext"
#endif
