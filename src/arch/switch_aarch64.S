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
 * when the value to load differs from the current one. The rule of
 * arch.h: a context that shares the FP state (bit 0 of the flag byte at
 * [ctx, #8], BATON_CORO_SHARED_FPENV) has none of its own; a switch loads
 * the target's FPCR only if the target keeps its own, and the thread's
 * shared state (baton__fp_shared) when a confined own-state context (bit 7)
 * switches to a shared one. Reading FPCR into the saved frame costs nothing worth a
 * branch, so it always happens.
 *
 * A context suspended by baton__arch_hop (arch.h) has no frame: its flag
 * byte reads 3, [ctx, #16] and [ctx, #24] hold its x29 and the address it
 * resumes at, every other register is dead. The load resumes it there and
 * sets its byte back to 1.
 */
/* The thread's shared FPCR into FPCR, if it differs from the current one
 * (x9), which it then becomes. Uses x10, x11. */
	.macro	FP_SHARED_LOAD
	adrp	x10, :gottprel:baton__fp_shared
	ldr	x10, [x10, #:gottprel_lo12:baton__fp_shared]
	mrs	x11, tpidr_el0
	ldr	x10, [x11, x10]
	cmp	x10, x9
	b.eq	9f
	msr	fpcr, x10
	mov	x9, x10
9:
	.endm

/* From (x0) and to (x1) flag bytes into w12 and w13; confined -> shared
 * loads the thread's shared state. x9 holds the current FPCR. */
	.macro	FP_PASS
	ldrb	w12, [x0, #8]
	ldrb	w13, [x1, #8]
	tbnz	w12, #0, 8f		/* from shares */
	tbz	w13, #0, 8f		/* to keeps its own */
	tbz	w12, #7, 8f		/* from is not confined */
	FP_SHARED_LOAD
8:
	.endm

/* The two halves of a switch. SWITCH_SAVE: store the callee-saved state of
 * the running context (x3 is its `out`) and its stack pointer in from (x0);
 * x9 keeps the current FPCR, w13 to's flag byte. SWITCH_LOAD: load to's
 * (x1) stack pointer, restore what its SWITCH_SAVE stored (FPCR only if it
 * keeps its own and it differs from x9), or resume it where it hopped, and
 * hand it the value in x2. baton__arch_start uses the first half alone,
 * baton__arch_jump the second. */
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
	FP_PASS
	mov	x10, sp
	str	x10, [x0]		/* from->sp */
	.endm

/* flags: "loaded" when w13 already holds to's flag byte (SWITCH_SAVE,
 * FP_PASS), anything else to read it here. */
	.macro	SWITCH_LOAD exit, flags
	.ifnc	\flags, loaded
	ldrb	w13, [x1, #8]
	.endif
	ldr	x10, [x1]
	mov	sp, x10			/* to->sp: from here on we are `to` */
	tbnz	w13, #1, 5f		/* hopped (3) */
	tbnz	w13, #0, 0f		/* shared (1); own: 0 or 0x80 */
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
5:	mov	w12, #1			/* hopped: runs again */
	strb	w12, [x1, #8]
	ldp	x29, x9, [x1, #16]
	br	x9
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
	SWITCH_LOAD "br x30", loaded
	.cfi_endproc
	.size	baton__arch_switch, .-baton__arch_switch

/*
 * int baton__arch_switch_ret(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                           void *value, void **out);
 *
 * baton__arch_switch_out ending in `ret` instead of `br x30`, for the
 * scheduler's task-to-task hop, where both contexts usually stopped at
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
	SWITCH_LOAD ret, loaded
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
 * void baton__arch_jump(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                       void *value);
 *
 * The second half of the switch alone, for a context that ends: resume
 * `to`, save nothing of `from` (its flag byte is read: confined -> shared loads
 * the thread's shared state; see switch_x86_64.S). Never returns.
 */
	.globl	baton__arch_jump
	.hidden	baton__arch_jump
	.type	baton__arch_jump, %function
	.p2align 4
baton__arch_jump:
	.cfi_startproc
	mrs	x9, fpcr		/* what SWITCH_LOAD compares with */
	FP_PASS
	SWITCH_LOAD "br x30", loaded
	.cfi_endproc
	.size	baton__arch_jump, .-baton__arch_jump

/*
 * void baton__arch_restart(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                          char *hi, void (*entry)(void *), void *value);
 *
 * baton__arch_start for a caller that ends: save nothing, move to the top
 * of [.., hi) and call entry(value) there (see switch_x86_64.S); confined
 * -> shared loads the thread's shared state.
 */
	.globl	baton__arch_restart
	.hidden	baton__arch_restart
	.type	baton__arch_restart, %function
	.p2align 4
baton__arch_restart:
	.cfi_startproc
	mrs	x9, fpcr
	FP_PASS
	and	x2, x2, #~15		/* the top, 16-byte aligned */
	mov	x19, x3			/* what the trampoline calls */
	mov	sp, x2
	mov	x0, x4			/* ... and hands over */
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
	SWITCH_LOAD ret, read
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
