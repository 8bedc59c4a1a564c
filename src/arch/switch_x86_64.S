/*
 * Context switch for x86-64, System V ABI.
 *
 * void *baton_arch_switch(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                         void *value);
 *
 * Saves the callee-saved state of the running context on its own stack,
 * stores the stack pointer in from->sp, loads to->sp, restores that
 * context's callee-saved state and returns `value` in it (the value appears
 * as the return value of the baton_arch_switch call that suspended it).
 *
 * Saved frame, from the saved stack pointer upwards:
 *     0  mxcsr (4 bytes) | x87 control word (2 bytes) | 2 bytes of zero
 *     8  r15   16 r14   24 r13   32 r12   40 rbx   48 rbp   56 return address
 *
 * MXCSR and the x87 control word are callee-saved, so a context that changed
 * the rounding mode must get its own back and must not leak it to others.
 * Loading them (ldmxcsr, fldcw) costs more than the rest of the switch, while
 * storing them is cheap; so we store both, compare the 8-byte slot with the
 * one the target saved, and reload only when they differ, which in practice
 * is only when some coroutine changed its floating-point environment.
 *
 * No system call and no signal-mask change happens here. The stack pointer
 * always points at valid, owned stack memory, so a signal arriving between
 * any two instructions runs on a sane stack.
 */
	.text
	.globl	baton_arch_switch
	.hidden	baton_arch_switch
	.type	baton_arch_switch, @function
	.p2align 4
baton_arch_switch:
	.cfi_startproc
	endbr64
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	subq	$8, %rsp
	movq	$0, (%rsp)
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
	movq	(%rsp), %rcx		/* our FP control state, to compare */
	movq	%rsp, (%rdi)		/* from->sp */
	movq	(%rsi), %rsp		/* to->sp: from here on we are `to` */
	cmpq	(%rsp), %rcx
	jne	1f
0:	addq	$8, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	movq	%rdx, %rax
	ret
1:	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
	jmp	0b
	.cfi_endproc
	.size	baton_arch_switch, .-baton_arch_switch

/*
 * First code a new context runs: baton_arch_make() leaves its address as the
 * return address of the initial frame and the entry function in r12. The
 * value passed by the first switch is in rax. The stack is 16-byte aligned
 * here, as a call requires. Marking rip undefined ends unwinding, so
 * debuggers and backtrace() stop at the coroutine's first frame.
 */
	.globl	baton_arch_trampoline
	.hidden	baton_arch_trampoline
	.type	baton_arch_trampoline, @function
	.p2align 4
baton_arch_trampoline:
	.cfi_startproc
	.cfi_undefined rip
	movq	%rax, %rdi
	callq	*%r12
	ud2				/* the entry function never returns */
	.cfi_endproc
	.size	baton_arch_trampoline, .-baton_arch_trampoline

/* Read the current FP control state in the layout of the saved slot. */
	.globl	baton_arch_fpenv
	.hidden	baton_arch_fpenv
	.type	baton_arch_fpenv, @function
	.p2align 4
baton_arch_fpenv:
	.cfi_startproc
	endbr64
	movq	$0, -8(%rsp)
	stmxcsr	-8(%rsp)
	fnstcw	-4(%rsp)
	movq	-8(%rsp), %rax
	ret
	.cfi_endproc
	.size	baton_arch_fpenv, .-baton_arch_fpenv

	.section .note.GNU-stack,"",@progbits
