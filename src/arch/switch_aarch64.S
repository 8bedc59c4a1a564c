/* SPDX-License-Identifier: MIT */
/*
 * Context switch for AArch64, AAPCS64.
 *
 * void *baton__arch_switch(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                         void *value);
 * int baton__arch_switch_out(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                           void *value, void **out);
 *
 * baton__arch_switch_out stores the value in *out and returns 0 instead; see
 * switch_x86_64.S for why, and why we leave with `br x30` rather than `ret`
 * (the return-address predictor cannot know the other context's chain).
 *
 * Saves the callee-saved registers (x19-x28, the frame pointer x29, the link
 * register x30 and the low halves d8-d15 of v8-v15) and FPCR on the running
 * stack, stores sp in from->sp, loads to->sp, restores and returns `value`
 * in the other context.
 *
 * Saved frame (176 bytes, sp stays 16-byte aligned):
 *     0 x19 x20   16 x21 x22   32 x23 x24   48 x25 x26   64 x27 x28
 *    80 x29 x30   96 d8 d9    112 d10 d11  128 d12 d13  144 d14 d15
 *   160 fpcr     168 out (NULL for baton__arch_switch)
 *
 * FPCR (rounding mode, flush-to-zero...) is callee-saved. Writing it is
 * expensive on many cores while reading it is cheap, so it is written only
 * when the target's saved value differs from the current one, and not at
 * all when the target shares the FP state (the flag word at [ctx, #8],
 * BATON_CORO_SHARED_FPENV: see switch_x86_64.S for the rule). Reading FPCR
 * into the saved frame costs nothing worth a branch, so it always happens.
 */
/* The two halves of a switch. SWITCH_SAVE: store the callee-saved state of
 * the running context (x3 is its `out`) and its stack pointer in from (x0);
 * x9 keeps the current FPCR. SWITCH_LOAD: load to's (x1) stack pointer,
 * restore what its SWITCH_SAVE stored (FPCR only if it differs from x9)
 * and hand it the value in x2. baton__arch_start uses the first half
 * alone, baton__arch_jump the second. */
	.macro	SWITCH_SAVE
	sub	sp, sp, #176
	stp	x19, x20, [sp, #0]
	stp	x21, x22, [sp, #16]
	stp	x23, x24, [sp, #32]
	stp	x25, x26, [sp, #48]
	stp	x27, x28, [sp, #64]
	stp	x29, x30, [sp, #80]
	stp	d8, d9, [sp, #96]
	stp	d10, d11, [sp, #112]
	stp	d12, d13, [sp, #128]
	stp	d14, d15, [sp, #144]
	mrs	x9, fpcr
	stp	x9, x3, [sp, #160]	/* fpcr, out */
	mov	x10, sp
	str	x10, [x0]		/* from->sp */
	.endm

	.macro	SWITCH_LOAD exit
	ldr	w12, [x1, #8]		/* to shares the FP state? */
	ldr	x10, [x1]
	mov	sp, x10			/* to->sp: from here on we are `to` */
	cbnz	w12, 0f
	ldr	x11, [sp, #160]
	cmp	x11, x9
	b.ne	1f
0:	ldp	x19, x20, [sp, #0]
	ldp	x21, x22, [sp, #16]
	ldp	x23, x24, [sp, #32]
	ldp	x25, x26, [sp, #48]
	ldp	x27, x28, [sp, #64]
	ldp	x29, x30, [sp, #80]
	ldp	d8, d9, [sp, #96]
	ldp	d10, d11, [sp, #112]
	ldp	d12, d13, [sp, #128]
	ldp	d14, d15, [sp, #144]
	ldr	x3, [sp, #168]		/* out */
	add	sp, sp, #176
	mov	x0, x2
	cbz	x3, 2f
	str	x0, [x3]
	mov	x0, #0
2:	\exit
1:	msr	fpcr, x11
	b	0b
	.endm

	.text
	.globl	baton__arch_switch
	.hidden	baton__arch_switch
	.type	baton__arch_switch, %function
	.p2align 4
baton__arch_switch:
	.cfi_startproc
	mov	x3, xzr			/* out = NULL: hand the value back in x0 */
	.globl	baton__arch_switch_out
	.hidden	baton__arch_switch_out
baton__arch_switch_out:
	SWITCH_SAVE
	SWITCH_LOAD "br x30"
	.cfi_endproc
	.size	baton__arch_switch, .-baton__arch_switch

/*
 * int baton__arch_switch_ret(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                           void *value, void **out);
 *
 * baton__arch_switch_out ending in `ret` instead of `br x30`, for the
 * scheduler's task-to-task hand-off, where both contexts usually stopped at
 * the same call sites and the return-address predictor's stack is right
 * (see switch_x86_64.S). Same frame: either entry resumes the other's.
 */
	.globl	baton__arch_switch_ret
	.hidden	baton__arch_switch_ret
	.type	baton__arch_switch_ret, %function
	.p2align 4
baton__arch_switch_ret:
	.cfi_startproc
	SWITCH_SAVE
	SWITCH_LOAD ret
	.cfi_endproc
	.size	baton__arch_switch_ret, .-baton__arch_switch_ret

/*
 * First code of a new context: baton__arch_make() puts its address in the
 * saved x30 and the entry function in x19; the first switch left the value
 * in x0. x29 is zero, which ends frame-pointer unwinding, and the CFI marks
 * the return address undefined so debuggers stop here.
 */
	.globl	baton__arch_trampoline
	.hidden	baton__arch_trampoline
	.type	baton__arch_trampoline, %function
	.p2align 4
baton__arch_trampoline:
	.cfi_startproc
	.cfi_undefined x30
	blr	x19
	brk	#0			/* the entry function never returns */
	.cfi_endproc
	.size	baton__arch_trampoline, .-baton__arch_trampoline

/*
 * void *baton__arch_start(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                        char *lo, char *hi, void (*entry)(void *),
 *                        void *value);
 *
 * The first entry into a context (see switch_x86_64.S): save the running
 * one into `from` as the switch does, then call entry(value) at the top of
 * [lo, hi) through the trampoline, without building an initial frame.
 */
	.globl	baton__arch_start
	.hidden	baton__arch_start
	.type	baton__arch_start, %function
	.p2align 4
baton__arch_start:
	.cfi_startproc
	mov	x6, x3			/* hi */
	mov	x3, xzr			/* out = NULL: the value comes back in x0 */
	SWITCH_SAVE
	and	x6, x6, #~15		/* the top, 16-byte aligned */
	mov	sp, x6
	mov	x19, x4			/* what the trampoline calls */
	mov	x0, x5			/* ... and hands over */
	mov	x29, xzr		/* ends frame-pointer chains */
	b	baton__arch_trampoline
	.cfi_endproc
	.size	baton__arch_start, .-baton__arch_start

/*
 * void baton__arch_jump(baton_arch_ctx_t *to, void *value);
 *
 * The second half of the switch alone, for a context that ends: resume
 * `to`, save nothing (see switch_x86_64.S). Never returns.
 */
	.globl	baton__arch_jump
	.hidden	baton__arch_jump
	.type	baton__arch_jump, %function
	.p2align 4
baton__arch_jump:
	.cfi_startproc
	mrs	x9, fpcr		/* what SWITCH_LOAD compares with */
	mov	x2, x1			/* the value */
	mov	x1, x0			/* to */
	SWITCH_LOAD "br x30"
	.cfi_endproc
	.size	baton__arch_jump, .-baton__arch_jump

/*
 * void baton__arch_restart(char *hi, void (*entry)(void *), void *value);
 *
 * baton__arch_start for a caller that ends: save nothing, move to the top
 * of [.., hi) and call entry(value) there (see switch_x86_64.S).
 */
	.globl	baton__arch_restart
	.hidden	baton__arch_restart
	.type	baton__arch_restart, %function
	.p2align 4
baton__arch_restart:
	.cfi_startproc
	and	x0, x0, #~15		/* the top, 16-byte aligned */
	mov	x19, x1			/* what the trampoline calls */
	mov	sp, x0
	mov	x0, x2			/* ... and hands over */
	mov	x29, xzr
	b	baton__arch_trampoline
	.cfi_endproc
	.size	baton__arch_restart, .-baton__arch_restart

/*
 * int baton__arch_swap_ret(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                         void **out, char *scratch,
 *                         void (*fn)(baton_arch_ctx_t *from,
 *                                    baton_arch_ctx_t *to));
 *
 * A switch with a call in its middle (see switch_x86_64.S): save the
 * running context into `from`, move to the top of `scratch`, call
 * fn(from, to) there (it may rewrite the stack from left and to will run
 * on), then load `to`, hand it NULL and return. to's pointer waits in x19,
 * which SWITCH_SAVE has saved and fn preserves; fpcr is read again for
 * SWITCH_LOAD's compare, as fn may have used x9.
 */
	.globl	baton__arch_swap_ret
	.hidden	baton__arch_swap_ret
	.type	baton__arch_swap_ret, %function
	.p2align 4
baton__arch_swap_ret:
	.cfi_startproc
	mov	x6, x3			/* scratch */
	mov	x3, x2			/* out, as SWITCH_SAVE wants it */
	SWITCH_SAVE
	mov	sp, x6			/* off the shared stack */
	mov	x19, x1			/* to */
	blr	x4			/* fn(from, to) */
	mov	x1, x19
	mrs	x9, fpcr		/* what SWITCH_LOAD compares with */
	mov	x2, xzr			/* the value handed over: NULL */
	SWITCH_LOAD ret
	.cfi_endproc
	.size	baton__arch_swap_ret, .-baton__arch_swap_ret

	.globl	baton__arch_fpenv
	.hidden	baton__arch_fpenv
	.type	baton__arch_fpenv, %function
	.p2align 4
baton__arch_fpenv:
	.cfi_startproc
	mrs	x0, fpcr
	ret
	.cfi_endproc
	.size	baton__arch_fpenv, .-baton__arch_fpenv

/*
 * Branch protection: this file is marked as supporting neither BTI nor
 * pointer authentication, on purpose, so that a program linking baton is
 * not marked as protected by mistake: a switch returns into another
 * context's frames, whose return addresses were signed on another stack.
 * The test cet_notes reads this note back.
 */
	.section .note.gnu.property,"a"
	.p2align 3
	.long	4		/* name size: "GNU" and its NUL */
	.long	16		/* descriptor size */
	.long	5		/* NT_GNU_PROPERTY_TYPE_0 */
	.asciz	"GNU"
	.long	0xc0000000	/* GNU_PROPERTY_AARCH64_FEATURE_1_AND */
	.long	4
	.long	0		/* neither BTI (1) nor PAC (2) */
	.p2align 3

	.section .note.GNU-stack,"",%progbits
