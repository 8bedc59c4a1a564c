/* SPDX-License-Identifier: MIT */
/*
 * Context switch for x86-64, System V ABI.
 *
 * void *baton__arch_switch(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                         void *value);
 * int baton__arch_switch_out(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                           void *value, void **out);
 *
 * Saves the callee-saved state of the running context on its own stack,
 * stores the stack pointer in from->sp, loads to->sp, restores that
 * context's callee-saved state and hands it `value`: baton__arch_switch
 * returns it; baton__arch_switch_out stores it in *out and returns 0, which
 * lets baton_coro_resume/yield tail-call it (see below).
 *
 * Saved frame, from the saved stack pointer upwards:
 *     0  mxcsr (4 bytes) | x87 control word (2 bytes) | 2 unused bytes
 *     8  out (NULL for baton__arch_switch)
 *    16  r15   24 r14   32 r13   40 r12   48 rbx   56 rbp   64 return address
 *
 * We return with pop + indirect jmp, not ret. Every switch lands at a
 * return address the return-stack predictor never saw pushed (the other
 * context's call site), so a ret would mispredict, and so would each ret
 * after it up the other context's call chain. With the public resume and
 * yield tail-calling baton__arch_switch_out, the jmp goes straight back into
 * the caller of resume or yield: no ret executes on a resume/yield round
 * trip, and the indirect-branch predictor learns the alternation. (On a CPU
 * enforcing CET indirect-branch tracking this jmp would need an endbr64 at
 * every call site; Linux does not enable IBT for user space.)
 *
 * MXCSR and the x87 control word are callee-saved, so a context that changed
 * the rounding mode must get its own back and must not leak it to others:
 * each switch stores ours and loads the target's. We measured the obvious
 * way to skip the loads - compare the stored values with the target's and
 * reload only on a difference - and it is slower here: reading back what
 * stmxcsr/fnstcw just stored waits for those stores to complete, and x86 has
 * no instruction that reads MXCSR into a register (docs/coroutines.md has
 * the round trips measured each way). (AArch64 reads FPCR into a register, so there the compare wins.)
 *
 * No system call and no signal-mask change happens here. The stack pointer
 * always points at valid, owned stack memory, so a signal arriving between
 * any two instructions runs on a sane stack.
 */
/*
 * The FP control state, per context unless the context shares it: the
 * flag byte at 8(ctx) (baton_arch_ctx_t.flags) says the context has no
 * state of its own (bit 0, BATON_CORO_SHARED_FPENV), for a shared context
 * whether it was suspended by the inline hop (bit 1, see below), and for
 * an own-state one whether its state is confined to it (bit 7: so that
 * one signed compare with 1 tells own, shared and hopped apart). The rule,
 * for a switch from A to B (arch.h): store A's state only if A keeps its
 * own, load B's only if B keeps its own, and load the thread's shared
 * state (baton__fp_shared) when A is confined and B shares. A shared
 * context never changes the state, so every entry into an own-state
 * context still finds exactly its saved value, and a switch between two
 * shared contexts does no FP work at all. The tests are on the byte the switch reads anyway
 * (next to the saved stack pointer) and predict perfectly; a shared
 * context's slot is left unwritten.
 *
 * On the Intel Xeon this was measured on, what stmxcsr stores cannot be
 * forwarded to a load: a switch back to a context that switched away a
 * few nanoseconds earlier waits until that store commits (about 25 ns),
 * so a resume/yield round trip with both stores and loads costs about
 * 60 ns against 5 ns without them (the bare switch). That wait is what the
 * shared flag removes.
 *
 * A context suspended by baton__arch_hop (arch.h, inline in the
 * scheduler's hop) has no frame here: its flag byte reads 3, and
 * 16(ctx) and 24(ctx) hold its rbp and the address it resumes at, with
 * every other register dead (the hop declared them clobbered). The load
 * below resumes it by restoring rsp and rbp and jumping there, and sets
 * its byte back to 1 (running, shared).
 */
/* The thread's shared FP state (thread.c sets it): MXCSR, x87 control
 * word, in the layout of the saved slot. An own-state context switching to
 * a shared one loads it (rax is free then: the value travels in rdx). */
	.macro	FP_SHARED_LOAD
	movq	baton__fp_shared@gottpoff(%rip), %rax
	ldmxcsr	%fs:(%rax)
	fldcw	%fs:4(%rax)
	.endm

/* A confined context (rdi, bit 7: own state, confined) switching to a
 * shared one (rsi): the thread's shared state back. */
	.macro	FP_PASS
	testb	$0x80, 8(%rdi)
	jz	2f
	testb	$1, 8(%rsi)
	jz	2f
	FP_SHARED_LOAD
2:
	.endm

/* The registers the switch saves, `out` (rcx) and room for the FP state,
 * and the test of whether the running context (rdi) keeps its own. */
	.macro	SWITCH_PUSH
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	pushq	%rcx			/* out */
	subq	$8, %rsp
	testb	$1, 8(%rdi)		/* from shares the FP state? */
	.endm

/* The first half of a switch: push the callee-saved state of the running
 * context (rcx is its `out`), store its FP state if it keeps its own and,
 * if it is confined and `to` (rsi) shares, load the thread's shared
 * state; then store the stack pointer in from (rdi). baton__arch_start and baton__arch_swap_ret
 * use it; the switch proper (SWITCH_BODY) inlines it in its own order. */
	.macro	SWITCH_SAVE
	SWITCH_PUSH
	jnz	1f
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
1:	FP_PASS
	movq	%rsp, (%rdi)		/* from->sp */
	.endm

/* The rest of a switch, from the point where rsp is to's (rsi) saved
 * stack pointer: pop what its SWITCH_SAVE pushed and hand it the value in
 * rdx (its `out` receives it and it returns 0, or it returns the value);
 * leave by `exit` (jmp: pop + indirect jmp; ret). */
	.macro	SWITCH_POP exit
	addq	$8, %rsp		/* the FP slot */
	popq	%rcx			/* out */
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	movq	%rdx, %rax
	testq	%rcx, %rcx
	jz	3f
	movq	%rax, (%rcx)
	xorl	%eax, %eax
3:
	.ifc	\exit, jmp
	popq	%rcx
	jmp	*%rcx
	.else
	ret
	.endif
	.endm

/* Resume a hopped context (rsi, rsp already its stack pointer). */
	.macro	HOPPED_RESUME
	movb	$1, 8(%rsi)
	movq	16(%rsi), %rbp
	jmpq	*24(%rsi)
	.endm

/* The second half of a switch alone, for a `to` (rsi) of any kind: load its
 * stack pointer and FP state (if it keeps its own), then pop or resume the
 * hop. baton__arch_jump and baton__arch_swap_ret use it. */
	.macro	SWITCH_LOAD exit
	cmpb	$1, 8(%rsi)		/* own 0 or 0x80 (< 1 signed), shared 1, hopped 3 */
	movq	(%rsi), %rsp		/* to->sp: from here on we are `to` */
	je	4f
	jg	5f
	ldmxcsr	(%rsp)			/* the target's FP control state */
	fldcw	4(%rsp)
4:	SWITCH_POP \exit
5:	HOPPED_RESUME
	.endm

/*
 * The switch: SWITCH_SAVE and SWITCH_LOAD, arranged so that the two common
 * cases run straight through with no test made twice: own -> own (store,
 * then load; the FP test of `to` made in the save half decides the load)
 * and shared -> shared (no FP work, one compare for the kind of `to`).
 */
	.macro	SWITCH_BODY exit
	SWITCH_PUSH
	jnz	6f
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
	testb	$1, 8(%rsi)		/* to shares? */
	jnz	7f
	movq	%rsp, (%rdi)		/* own -> own */
	movq	(%rsi), %rsp
	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
4:	SWITCH_POP \exit
6:	movq	%rsp, (%rdi)		/* shared -> ? */
	cmpb	$1, 8(%rsi)		/* own 0 or 0x80 (< 1 signed), shared 1, hopped 3 */
	movq	(%rsi), %rsp
	je	4b
	jg	5f
	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
	jmp	4b
7:	testb	$0x80, 8(%rdi)		/* own -> shared: confined? */
	jz	8f
	FP_SHARED_LOAD
8:	movq	%rsp, (%rdi)
	cmpb	$1, 8(%rsi)
	movq	(%rsi), %rsp
	je	4b
5:	HOPPED_RESUME
	.endm

	.text
	.globl	baton__arch_switch
	.hidden	baton__arch_switch
	.type	baton__arch_switch, @function
	.p2align 4
baton__arch_switch:
	.cfi_startproc
	endbr64
	xorl	%ecx, %ecx		/* out = NULL: hand the value back in rax */
	.globl	baton__arch_switch_out
	.hidden	baton__arch_switch_out
baton__arch_switch_out:
	SWITCH_BODY jmp
	.cfi_endproc
	.size	baton__arch_switch, .-baton__arch_switch

/*
 * void *baton__arch_switch_there(from, to, value), baton__arch_switch_back:
 * baton__arch_switch again, twice, for two contexts that switch to each
 * other in turn (a call onto a dedicated stack and its return: the
 * sequencer, src/coro/jump.h). Through one copy, its final jmp would go
 * alternately to either side and the indirect-branch predictor would miss
 * often; with one copy per direction each jmp has one target. The frame is
 * the same, so contexts saved by any entry are resumed by any other.
 */
	.macro	SWITCH_COPY name
	.globl	\name
	.hidden	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
	endbr64
	xorl	%ecx, %ecx		/* out = NULL: hand the value back in rax */
	SWITCH_BODY jmp
	.cfi_endproc
	.size	\name, .-\name
	.endm

	SWITCH_COPY baton__arch_switch_there
	SWITCH_COPY baton__arch_switch_back

/*
 * int baton__arch_switch_ret(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                           void *value, void **out);
 *
 * baton__arch_switch_out with a ret at the end instead of pop + jmp, for the
 * scheduler's task-to-task hop. There the context we leave and the one
 * we enter usually stopped at the same call sites (every task of a worker
 * blocks through the same few functions), so the return-stack predictor,
 * which holds the call chain of the context we leave, predicts the returns
 * of the context we enter: the ret here and each one after it up the
 * chain. With pop + jmp the ret of the entered context's callers would be
 * off by one entry and each would mispredict. The saved frame is the same,
 * so a context saved by one entry is resumed by the other.
 */
	.globl	baton__arch_switch_ret
	.hidden	baton__arch_switch_ret
	.type	baton__arch_switch_ret, @function
	.p2align 4
baton__arch_switch_ret:
	.cfi_startproc
	endbr64
	SWITCH_BODY ret
	.cfi_endproc
	.size	baton__arch_switch_ret, .-baton__arch_switch_ret

/*
 * First code a new context runs: baton__arch_make() leaves its address as the
 * return address of the initial frame and the entry function in r12. The
 * value passed by the first switch is in rax. The stack is 16-byte aligned
 * here, as a call requires. Marking rip undefined ends unwinding, so
 * debuggers and backtrace() stop at the coroutine's first frame.
 */
	.globl	baton__arch_trampoline
	.hidden	baton__arch_trampoline
	.type	baton__arch_trampoline, @function
	.p2align 4
baton__arch_trampoline:
	.cfi_startproc
	.cfi_undefined rip
	endbr64			/* reached by an indirect jmp; a NOP without CET */
	movq	%rax, %rdi
	callq	*%r12
	ud2				/* the entry function never returns */
	.cfi_endproc
	.size	baton__arch_trampoline, .-baton__arch_trampoline

/*
 * void *baton__arch_start(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                        char *lo, char *hi, void (*entry)(void *),
 *                        void *value);
 *
 * The first entry into a context: save the running one into `from` exactly
 * as the switch does (so any later switch back to `from` returns from this
 * call with the value it hands over), then call entry(value) at the top of
 * [lo, hi) through the trampoline. It does what baton__arch_make followed
 * by a switch would, minus the initial frame: no frame is written only to
 * be popped again, and the FP control state is not read out and loaded
 * back, since the new context starts in the caller's state either way.
 * `to` and `lo` are unused here (the new context fills `to` when it first
 * switches away). rbp is cleared so that frame-pointer walks end at the
 * new context's first frame, as in a made frame.
 */
	.globl	baton__arch_start
	.hidden	baton__arch_start
	.type	baton__arch_start, @function
	.p2align 4
baton__arch_start:
	.cfi_startproc
	endbr64
	movq	%rcx, %r10		/* hi */
	xorl	%ecx, %ecx		/* out = NULL: the value comes back in rax */
	SWITCH_SAVE
	movq	%r10, %rsp		/* the top (its caller keeps it 16-byte */
	andq	$-16, %rsp		/* aligned: this is only a safeguard) */
	movq	%r8, %r12		/* what the trampoline calls */
	movq	%r9, %rax		/* ... and hands over */
	xorl	%ebp, %ebp
	jmp	baton__arch_trampoline
	.cfi_endproc
	.size	baton__arch_start, .-baton__arch_start

/*
 * void baton__arch_jump(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                       void *value);
 *
 * The second half of the switch alone: resume `to` and hand it `value`,
 * saving nothing of `from` (a coroutine whose function has returned; only
 * its flag byte is read: confined -> shared loads the thread's shared
 * state).
 * Storing its registers and FP control state would be work for nobody, and
 * the x87 control word store is among the slowest steps of a switch on the
 * AMD cores we measured. Never returns.
 */
	.globl	baton__arch_jump
	.hidden	baton__arch_jump
	.type	baton__arch_jump, @function
	.p2align 4
baton__arch_jump:
	.cfi_startproc
	endbr64
	FP_PASS
	SWITCH_LOAD jmp
	.cfi_endproc
	.size	baton__arch_jump, .-baton__arch_jump

/*
 * void baton__arch_restart(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                          char *hi, void (*entry)(void *), void *value);
 *
 * baton__arch_start for a caller that ends: nothing is saved, the stack
 * pointer moves to the top of [.., hi) and entry(value) is called there
 * (`from` and `to` are read for their flag bytes: confined -> shared loads
 * the thread's shared state, as any switch).
 * The new stack may be the one we run on (a copy-stack coroutine that ends
 * and starts the next one on the same shared stack): from the moment rsp
 * moves, nothing below the new top is read again, and until then rsp
 * stays where it was, so a signal finds a sane stack at every instruction.
 */
	.globl	baton__arch_restart
	.hidden	baton__arch_restart
	.type	baton__arch_restart, @function
	.p2align 4
baton__arch_restart:
	.cfi_startproc
	endbr64
	FP_PASS
	andq	$-16, %rdx		/* the top, 16-byte aligned */
	movq	%rcx, %r12		/* what the trampoline calls */
	movq	%r8, %rax		/* ... and hands over */
	movq	%rdx, %rsp
	xorl	%ebp, %ebp
	jmp	baton__arch_trampoline
	.cfi_endproc
	.size	baton__arch_restart, .-baton__arch_restart

/*
 * int baton__arch_swap_ret(baton_arch_ctx_t *from, baton_arch_ctx_t *to,
 *                         void **out, char *scratch,
 *                         void (*fn)(baton_arch_ctx_t *from,
 *                                    baton_arch_ctx_t *to));
 *
 * A switch with a call in its middle, for copy-stack coroutines that share
 * one stack: save the running context into `from` as the switch does, move
 * to the top of the `scratch` stack (16-byte aligned), call fn(from, to)
 * there, then load `to` as the switch does (handing it NULL) and return
 * with ret, as baton__arch_switch_ret. fn may rewrite the stack that `from`
 * ran on and `to` will run on (it copies from's frames out and to's in):
 * from the moment from's state is stored until fn returns, nothing runs on
 * that stack, and the stack pointer always points into owned memory, so a
 * signal finds a sane stack at every instruction. One switch, where going
 * through a copier context takes two. to's pointer waits in rbx, which
 * SWITCH_SAVE has saved and fn preserves.
 */
	.globl	baton__arch_swap_ret
	.hidden	baton__arch_swap_ret
	.type	baton__arch_swap_ret, @function
	.p2align 4
baton__arch_swap_ret:
	.cfi_startproc
	endbr64
	movq	%rcx, %r10		/* scratch */
	movq	%rdx, %rcx		/* out, as SWITCH_SAVE wants it */
	SWITCH_SAVE
	movq	%r10, %rsp		/* off the shared stack */
	movq	%rsi, %rbx		/* to */
	callq	*%r8			/* fn(from, to) */
	movq	%rbx, %rsi
	xorl	%edx, %edx		/* the value handed over: NULL */
	SWITCH_LOAD ret
	.cfi_endproc
	.size	baton__arch_swap_ret, .-baton__arch_swap_ret

/* Read the current FP control state in the layout of the saved slot. */
	.globl	baton__arch_fpenv
	.hidden	baton__arch_fpenv
	.type	baton__arch_fpenv, @function
	.p2align 4
baton__arch_fpenv:
	.cfi_startproc
	endbr64
	movq	$0, -8(%rsp)
	stmxcsr	-8(%rsp)
	fnstcw	-4(%rsp)
	movq	-8(%rsp), %rax
	ret
	.cfi_endproc
	.size	baton__arch_fpenv, .-baton__arch_fpenv

/*
 * Control-flow enforcement (CET): this file is marked as supporting neither
 * indirect-branch tracking (IBT) nor shadow stacks (SHSTK), on purpose, so
 * that a program linking baton is not marked CET-ready by mistake. A switch
 * moves to another stack without moving to its shadow stack (the next ret
 * would fault), and it returns into the other context with an indirect jmp
 * to a return address, where IBT would want an endbr64 at every call site
 * of resume and yield. docs/coroutines.md says more; the test cet_notes
 * reads this note back.
 */
	.section .note.gnu.property,"a"
	.p2align 3
	.long	4		/* name size: "GNU" and its NUL */
	.long	16		/* descriptor size */
	.long	5		/* NT_GNU_PROPERTY_TYPE_0 */
	.asciz	"GNU"
	.long	0xc0000002	/* GNU_PROPERTY_X86_FEATURE_1_AND */
	.long	4
	.long	0		/* neither IBT (1) nor SHSTK (2) */
	.p2align 3

	.section .note.GNU-stack,"",@progbits
