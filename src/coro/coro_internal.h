/* SPDX-License-Identifier: MIT */
/*
 * src/coro/coro_internal.h - what the coroutine files share: the control
 * block, the per-thread state and the annotated switch.
 *
 * Files behind include/baton/coro.h:
 *   coro.c       create / resume / yield / destroy, the hot paths
 *   thread.c     per-thread state: root context, alternate signal stack
 *   stack.c      the per-thread stack pool, canaries, overflow reports
 *   arena.c      stackful stacks carved from large mappings
 *   copystack.c  the shared stack of copy-stack coroutines and its copies,
 *                and the spare control blocks a thread keeps for reuse
 * Private to src/coro (the layers check says so): other modules switch
 * through the narrow headers made for them, hop.h (for src/sched) and
 * jump.h (for src/seq).
 */
#ifndef BATON_SRC_CORO_INTERNAL_H
#define BATON_SRC_CORO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <baton/coro.h>

#include "../arch/arch.h"
#include "../common/prelude.h"
#include "../common/sanitizer.h"

/* A stackful coroutine's control block sits at the top of its own mapping,
 * above its stack: one allocation, and a resume touches one page for both.
 * What a resume/yield round trip reads and writes (ctx, resumer, the
 * status bytes, discard) is its first cache line. */
struct baton_coro {
	baton_arch_ctx_t ctx;       /* saved registers while not running */
	struct baton_coro *resumer; /* where yield and return go */
	unsigned char status;       /* enum baton_coro_status */
	unsigned char model;        /* enum baton_coro_model */
	bool started;               /* false until the first resume */
	bool canary;                /* stackful: a canary at stack_lo instead of
				       guard pages (here: every switch reads it,
				       so it shares the first line with ctx) */
	bool fresh;                 /* copy-stack: on the shared stack, never
				       run; the next switch to it starts it
				       (baton__arch_start) */
	bool guarded;               /* stackful: guard pages below stack_lo */
	bool hop_saved;             /* copy-stack: saved by a hop at least once
				       (its buffer is sized to that save) */
	uint8_t head16;             /* copy-stack: 16-byte units of its block
				       before it, the embedder's (see
				       baton__coro_create_headed) */
	void *discard;              /* sink for values nobody asked for (the
				       switch stores there: it shares the
				       first line with the fields above) */
	baton_coro_fn fn;
	void *arg;

	char *stack_lo, *stack_hi; /* the stack it runs on: [lo, hi) */
	/* What only one model uses: a copy-stack coroutine is mostly its
	 * control block, so the two share the room. */
	union {
		struct {                   /* stackful */
			size_t stack_size; /* usable size asked for, in pages */
			void *map;         /* the whole slot */
			size_t map_size;
			struct baton_arena *arena; /* the arena of the slot */
		};
		struct {               /* copy-stack */
			uint64_t home; /* serial of the thread whose stack
					       it uses */
			char *save;    /* its frames while off the shared
					       stack */
			uint32_t save_len, save_cap;
		};
	};

	struct baton_sanitizer_fiber san;
	unsigned vg_stack; /* Valgrind's id for its stack */
	char name[32];
};

/* The shared stack of a thread's copy-stack coroutines. */
struct baton_shared_stack {
	char *lo, *hi; /* usable range; a guard page lies below lo */
	void *map;
	size_t map_size;
	unsigned vg_stack;
	struct baton_coro *owner; /* whose frames are on it now, or NULL */
	char *dirty;              /* [dirty, hi) may hold stale frames */
	char *scratch;            /* top of the stack the hop copies on */
};

/* One per thread, created on first use (see thread.c). */
struct baton_thread {
	struct baton_coro *current; /* running coroutine, NULL on own stack */
	/* &root once the thread is set up, NULL before (and after its exit):
	 * the jump pair's test and the address in one %fs-relative load
	 * (jump.h). */
	struct baton_coro *own;
	bool ready;
	uint64_t serial;        /* unique for the process's lifetime */
	struct baton_coro root; /* the thread's own stack as a context */

	struct baton_shared_stack shared;

	/* A small context that moves frames on and off the shared stack when
	 * the coroutine leaving it is itself running there (see copystack.c). */
	struct baton_coro copier;
	struct baton_coro *job_from, *job_to;
	void *job_value;

	uint64_t copied; /* bytes moved on and off the shared stack */
	/* Save buffers allocated (not grown): what a test asks to see that a
	 * coroutine which never left the shared stack got none. */
	uint64_t save_allocs;
	/* The overflow handler's install was asked for (the first create on
	 * this thread): later creates need not ask. */
	bool overflow_asked;
	/* Destroyed copy-stack control blocks kept for reuse, with their save
	 * buffers (linked by resumer): plain ones, and headed ones. */
	struct baton_coro *spare_cs, *spare_cs_headed;
	unsigned nspare_cs, nspare_cs_headed;

	struct baton_pooled_stack *pool;
	unsigned next_color; /* cache colour of the next stack */
	unsigned pool_count;

	void *altstack;
	size_t altstack_size;
};

extern __thread struct baton_thread baton__tls __attribute__((tls_model("initial-exec")));

void baton__thread_init(struct baton_thread *t);

/* The state of the thread running now, computed afresh. A compiler may keep
 * the address of a thread-local variable in a register across a call (on
 * AArch64 it is derived from TPIDR_EL0 once per function); after a call
 * during which the coroutine may have moved to another thread, use this,
 * not baton__thread_get(). Out of line (thread.c) so it cannot be folded. */
struct baton_thread *baton__thread_get_after_switch(void);

static inline struct baton_thread *baton__thread_get(void)
{
	struct baton_thread *t = &baton__tls;

	if (BATON_UNLIKELY(!t->ready))
		baton__thread_init(t);
	return t;
}

/* Every coroutine starts here (coro.c). */
void baton__coro_entry(void *value);

/* Switch from `from` (the running context) to `to`, telling the sanitizers.
 * `from_dies` means `from` will never be resumed: then nothing of it is
 * saved, and its saved stack pointer is stale. */
static inline void *baton__coro_switch(struct baton_coro *from, struct baton_coro *to, void *value,
				       bool from_dies)
{
	baton__sanitizer_switch_begin(&from->san, &to->san, to->stack_lo, to->stack_hi, from_dies);
	if (BATON_UNLIKELY(to->fresh)) {
		to->fresh = false;
		value = baton__arch_start(&from->ctx, &to->ctx, to->stack_lo, to->stack_hi,
					  baton__coro_entry, value);
	} else if (from_dies) {
		/* Nobody will read what a switch would save of `from`. */
		baton__arch_jump(&from->ctx, &to->ctx, value);
	} else {
		value = baton__arch_switch(&from->ctx, &to->ctx, value);
	}
	baton__sanitizer_switch_end(&from->san);
	return value;
}

/* What a switch makes of the two coroutines (baton__coro_switch_mark). */
enum baton__switch_kind {
	BATON__SWITCH_RESUME,   /* `to` runs for `from`, which waits (NORMAL) */
	BATON__SWITCH_YIELD,    /* `from` stops (SUSPENDED): back to its resumer */
	BATON__SWITCH_RETURN,   /* `from` has ended (DEAD): back to its resumer */
	BATON__SWITCH_HOP,      /* `to` takes from's place and resumer;
				       `from` SUSPENDED (hop.h) */
	BATON__SWITCH_HOP_EXIT, /* the same, `from` has ended (DEAD) */
};

/*
 * The bookkeeping of every switch, in one place: `to` becomes RUNNING and
 * `from` what `kind` says; a resume makes `from` to's resumer, a hop
 * gives `to` from's resumer; and, unless `current` is NULL, the thread's
 * running coroutine (`current`: &baton__tls.current, or the field of the
 * state found afresh) becomes `to`, or NULL when a yield or a return goes
 * to `root`, the thread's own context (resume and hop pass NULL: their
 * `to` is never that). The switches through transfer() (coro.c: copy-stack
 * targets, sanitizer builds, the ends) and baton__coro_hop (which may
 * take that path) pass NULL, and set it themselves: transfer once
 * the copy-stack preparation is done (until then an overflow on from's
 * stack must be reported as from's, and a coroutine that ends lets its
 * frames go while it is still the running one).
 *
 * Always inline, with `kind` a constant: it folds to the stores written
 * out by hand, so the frameless fast paths (coro.c, hop.h, jump.h)
 * stay frameless and as short.
 */
static inline __attribute__((always_inline)) void
baton__coro_switch_mark(enum baton__switch_kind kind, struct baton_coro *from,
			struct baton_coro *to, struct baton_coro **current,
			const struct baton_coro *root)
{
	bool ends = kind == BATON__SWITCH_RETURN || kind == BATON__SWITCH_HOP_EXIT;

	if (kind == BATON__SWITCH_RESUME) {
		to->resumer = from;
		to->status = BATON_CORO_RUNNING;
		from->status = BATON_CORO_NORMAL;
	} else {
		if (kind == BATON__SWITCH_HOP || kind == BATON__SWITCH_HOP_EXIT)
			to->resumer = from->resumer;
		from->status = ends ? BATON_CORO_DEAD : BATON_CORO_SUSPENDED;
		to->status = BATON_CORO_RUNNING;
	}
	if (current != NULL)
		*current = (kind == BATON__SWITCH_YIELD || kind == BATON__SWITCH_RETURN) &&
				to == root
			? NULL
			: to;
}

/* Below a stackful coroutine's stack: two guard pages (a frame larger than
 * one page still faults), or, in canary mode, two pages of slack, so that
 * an overflow found by its canary has room left for the switch that finds
 * it. Address space only: these pages are never touched. */
#define BATON_STACK_LOW_PAGES 2

/* A stackful coroutine's stack: a slot of an arena. */
struct baton_stack {
	void *map;
	size_t map_size;
	struct baton_arena *arena;
	bool guarded;
};

/* arena.c */
int baton__arena_take(size_t slot_size, bool want_guard, void **map, struct baton_arena **arena,
		      bool *guarded);
void baton__arena_give(struct baton_arena *a, void *map);
/* A batch of gives under one lock: begin, give_one for each, end. */
void baton__arena_give_begin(void);
void baton__arena_give_one(struct baton_arena *a, void *map);
void baton__arena_give_end(void);
size_t baton__arena_trim(void);

/* stack.c */
int baton__stack_map(size_t usable, size_t top_reserve, void **map, size_t *map_size);
void baton__stack_unmap(void *map, size_t map_size);
int baton__stack_take(struct baton_thread *t, size_t map_size, bool canary,
		      struct baton_stack *out);
void baton__stack_give(struct baton_thread *t, const struct baton_stack *st);
void baton__stack_overflow_handler_install(void);
size_t baton__stack_page(void);
__attribute__((noreturn, cold)) void baton__stack_canary_failed(const struct baton_coro *co);

/* A canary-mode coroutine that is switching away: is its canary intact?
 * One predictable branch for every other coroutine. The canary is the
 * stack's lowest word, zero: nothing but an overflow writes there, and a
 * page never written costs no resident memory (a written canary would cost
 * a page per coroutine: 4 GiB for a million). An overflow that writes only
 * zeros at that word goes unnoticed, as one that jumps over it would. */
static inline void baton__stack_canary_check(const struct baton_coro *co)
{
	if (BATON_UNLIKELY(co->canary) &&
	    BATON_UNLIKELY(*(const volatile uint64_t *)(const void *)co->stack_lo != 0))
		baton__stack_canary_failed(co);
}

/* copystack.c */
/* Get `to`'s frames onto the shared stack for a switch from `from`. Returns
 * BATON_OK when done (switch directly), BATON_COPYSTACK_VIA_COPIER when
 * `from` is running on the shared stack and the copier must do it, or an
 * error (nothing changed). */
#define BATON_COPYSTACK_VIA_COPIER 1
int baton__copystack_prepare(struct baton_thread *t, struct baton_coro *from,
			     struct baton_coro *to);
void *baton__copystack_via_copier(struct baton_thread *t, struct baton_coro *from,
				  struct baton_coro *to, void *value, bool from_dies);
/* `from`, the owner of S, has ended and `to` has never run: start `to` on
 * S at once (no copier, no copy). Only where baton__copystack_can_restart
 * says so. Does not return. */
#define baton__copystack_can_restart(t, from, to)                                                \
	(BATON_ARCH_HAS_RESTART && !BATON_SWITCH_HOOKS && (to)->model == BATON_CORO_COPYSTACK && \
	 !(to)->started && (t)->shared.owner == (from) &&                                        \
	 ((to)->home == 0 || (to)->home == (t)->serial))
__attribute__((noreturn)) void
baton__copystack_restart(struct baton_thread *t, struct baton_coro *from, struct baton_coro *to);
#if BATON_ARCH_HAS_SWAP
/* The hop's copies between the halves of baton__arch_swap_ret: save the
 * coroutine of `from` off S, put the one of `to` on it. */
void baton__copystack_swap(baton_arch_ctx_t *from, baton_arch_ctx_t *to);
#endif
/* `co`, running on the shared stack, is about to yield to a stackful
 * coroutine and stays the stack's owner: make room to save its frames
 * later, while a failure can still be returned (BATON_ENOMEM). */
int baton__copystack_keep(struct baton_thread *t, struct baton_coro *co);
/* Grow co's save buffer to at least len bytes (BATON_ENOMEM: unchanged). */
int baton__copystack_reserve(struct baton_coro *co, size_t len);
void baton__copystack_forget(struct baton_thread *t, struct baton_coro *co);
void baton__copystack_thread_exit(struct baton_thread *t);
/* A copy-stack control block after `head` bytes of the same allocation
 * (0, or a multiple of 16), reading as zeroed but for a save buffer kept
 * from an earlier life (and its name, empty, whose bytes past the
 * terminator may not be zero); the head is zero when new, as its last user
 * left it when reused. NULL without memory. baton__copystack_free takes
 * the whole block back. */
struct baton_coro *baton__copystack_alloc(struct baton_thread *t, size_t head);
void baton__copystack_free(struct baton_thread *t, struct baton_coro *co);
/* A spare block back in service, as a new one reads (see
 * baton__copystack_alloc): what a coroutine's life wrote is set back field
 * by field - cheaper than clearing the whole block - and the fixed fields
 * (its model, its head, its save buffer) stay. A spare block had ended or
 * never run: nothing refers to it, and it is not the shared stack's owner. */
static inline void baton__copystack_renew(struct baton_coro *co)
{
	co->ctx = (baton_arch_ctx_t){ 0 };
	co->resumer = NULL;
	co->status = 0;
	co->started = false;
	co->fresh = false;
	co->hop_saved = false;
	co->fn = NULL;
	co->arg = NULL;
	co->discard = NULL;
	co->stack_lo = NULL;
	co->stack_hi = NULL;
	co->home = 0;
	co->save_len = 0;
	co->san = (struct baton_sanitizer_fiber){ 0 };
	co->name[0] = '\0';
}

/* baton__copystack_forget, then baton__copystack_free: the destroy of a
 * copy-stack coroutine on its home thread (or one that never ran).
 * Returns BATON_OK (so that baton_coro_destroy can end in a tail call). */
int baton__copystack_destroy(struct baton_thread *t, struct baton_coro *co);
/* Free the spare control blocks; returns the bytes released. */
size_t baton__copystack_trim(struct baton_thread *t);
bool baton__copystack_points_inside(const void *p);

/* coro.c */

/* 1 if the calling thread's own context shares the FP state
 * (baton_coro_thread_share_fpenv), 0 if not: what a scheduler's worker
 * puts back after its run. */
int baton__coro_thread_fp_shared(void);
/* 1 if `co` shares the FP state (no FP work at its switches), for tests. */
int baton__coro_fp_shared(const baton_coro_t *co);

/* Bytes the calling thread has copied on and off its shared stack so far
 * (copy-stack switches): for the scheduler's statistics. */
uint64_t baton__coro_thread_copied(void);
/* Save buffers the calling thread has allocated so far (for tests). */
uint64_t baton__coro_thread_save_allocs(void);

/* A flag of baton_coro_attr.flags that only baton__coro_create_headed
 * accepts: the coroutine keeps its own FP control state, confined to it
 * (BATON_ARCH_FP_CONFINED: a switch from it to a shared context puts back
 * the thread's shared state). What a task spawned with
 * BATON_TASK_OWN_FPENV gets. */
#define BATON__CORO_FP_CONFINED 0x80000000u

/*
 * A coroutine with `head` bytes of the embedder's (a scheduler task's
 * record) in its own memory, so that the two cost one allocation and sit
 * side by side. fn receives the address of the head as its argument.
 * baton_coro_destroy frees the head with the rest (or keeps it for reuse):
 * the head must not be used after it.
 *  - Copy-stack (attr->model must say so): the head comes right before the
 *    control block in one heap block, and a parked one costs that block
 *    and its save buffer. `head` is a multiple of 16 under 4096; the
 *    bytes are zero when the block is new and as the last embedder left
 *    them when it is reused.
 *  - Stackful: the head lies just above the stack, below the control
 *    block, in the stack's top page, next to the frames a switch touches.
 *    `head` is a multiple of 64 (the head starts a cache line) under
 *    4096; the bytes are whatever the mapping last held (a recycled stack
 *    holds old frames): the embedder sets them all.
 * Errors as baton_coro_create.
 */
int baton__coro_create_headed(baton_coro_t **out, const struct baton_coro_attr *attr,
			      baton_coro_fn fn, size_t head);

#endif /* BATON_SRC_CORO_INTERNAL_H */
