/* SPDX-License-Identifier: MIT */
/*
 * Coroutine life cycle: create, resume, yield, return, destroy.
 *
 * The two hot paths, resume and yield, check their arguments, update the
 * status of the two coroutines involved and switch. Everything else that a
 * switch may need (moving frames on or off the shared stack of copy-stack
 * coroutines) is decided by one branch on the target's model.
 *
 * After baton__arch_switch() returns we may be on another thread (a stackful
 * coroutine can be resumed anywhere), so no code here keeps a pointer to
 * thread-local state across a switch: the side that switches sets
 * t->current for the side that wakes up.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "coro_internal.h"
#include "hop.h"

/* baton__copystack_swap finds a coroutine from its context. */
_Static_assert(offsetof(struct baton_coro, ctx) == 0, "the context opens the control block");
#if !BATON_SWITCH_UCONTEXT /* a ucontext_t alone spans many lines */
_Static_assert(offsetof(struct baton_coro, discard) + sizeof(void *) <= 64,
	       "a round trip touches one line of the control block");
#endif

static struct baton_coro *running(struct baton_thread *t)
{
	return t->current ? t->current : &t->root;
}

/* Move control from `from` (running) to `to`, with copy-stack handling. */
static int transfer(struct baton_thread *t, struct baton_coro *from, struct baton_coro *to,
		    void *value, bool from_dies, void **result)
{
	bool via_copier = false;

	if (BATON_UNLIKELY(to->model == BATON_CORO_COPYSTACK)) {
		int rc = baton__copystack_prepare(t, from, to);
		if (rc < 0)
			return rc;
		via_copier = rc == BATON_COPYSTACK_VIA_COPIER;
	}
	t->current = to == &t->root ? NULL : to;
	if (via_copier)
		value = baton__copystack_via_copier(t, from, to, value, from_dies);
	else
		value = baton__coro_switch(from, to, value, from_dies);
	*result = value;
	return BATON_OK;
}

#if BATON_DEBUG
#define CHECK_LOCALADDR(p)                             \
	do {                                           \
		if (baton__copystack_points_inside(p)) \
			return BATON_ELOCALADDR;       \
	} while (0)
#else
#define CHECK_LOCALADDR(p) ((void)0)
#endif

/* A resume that could not switch leaves both coroutines as they were. */
static int resume_undo(struct baton_coro *from, struct baton_coro *co, int rc)
{
	co->status = BATON_CORO_SUSPENDED;
	from->status = BATON_CORO_RUNNING;
	return rc;
}

/* The general path: copy-stack targets, and every switch in builds where
 * the sanitizers must hear about it. Kept out of line so that the fast paths
 * below have no frame of their own and can tail-call the switch. Here and
 * in the other switches through transfer(), the running coroutine is set
 * by transfer, once the copy-stack preparation is done: until then we run
 * on from's stack, and an overflow there must be reported as from's. */
static __attribute__((noinline)) int resume_slow(struct baton_thread *t, struct baton_coro *from,
						 struct baton_coro *co, void *in, void **out)
{
	void *value;
	int rc;

	baton__coro_switch_mark(BATON__SWITCH_RESUME, from, co, NULL, NULL);
	rc = transfer(t, from, co, in, false, &value);
	if (BATON_UNLIKELY(rc != BATON_OK))
		return resume_undo(from, co, rc);
	/* `co` yielded or returned; it already made us current again. */
	*out = value;
	return BATON_OK;
}

static __attribute__((noinline)) int yield_slow(struct baton_thread *t, struct baton_coro *co,
						struct baton_coro *to, void *out, void **in)
{
	void *value;
	int rc;

	baton__coro_switch_mark(BATON__SWITCH_YIELD, co, to, NULL, NULL);
	rc = transfer(t, co, to, out, false, &value);
	if (BATON_UNLIKELY(rc != BATON_OK)) {
		co->status = BATON_CORO_RUNNING;
		to->status = BATON_CORO_NORMAL;
		return rc;
	}
	*in = value;
	return BATON_OK;
}

/* A switch needs the slow path when the sanitizers must be told about it, or
 * when `to` is a copy-stack coroutine whose frames are not on the stack. */
static inline bool needs_slow_switch(const struct baton_thread *t, const struct baton_coro *to)
{
	return BATON_SWITCH_HOOKS || (to->model == BATON_CORO_COPYSTACK && t->shared.owner != to);
}

/* The general resume: every case the fast path below leaves to it (a
 * thread not set up, a bad or busy target, a copy-stack target, a canary
 * caller, the sanitizers' and debug builds). Out of line, so that the fast
 * path makes no call that returns and keeps no frame of its own. */
static __attribute__((noinline)) int resume_general(baton_coro_t *co, void *in, void **out)
{
	struct baton_thread *t = baton__thread_get();
	struct baton_coro *from;

	if (BATON_UNLIKELY(co == NULL))
		return BATON_EINVAL;
	if (BATON_UNLIKELY(co->status != BATON_CORO_SUSPENDED))
		return co->status == BATON_CORO_DEAD ? BATON_EDEAD : BATON_ERUNNING;
	CHECK_LOCALADDR(in);
	from = running(t);
	baton__stack_canary_check(from);
	if (out == NULL)
		out = &from->discard;
	if (BATON_UNLIKELY(needs_slow_switch(t, co))) {
		int rc;

		/* Sanitizer builds, and a copy-stack caller that must itself
		 * leave the shared stack, take the general path. */
		if (BATON_SWITCH_HOOKS || from == t->shared.owner)
			return resume_slow(t, from, co, in, out);
		/* The common case, a copy-stack target resumed from off the
		 * shared stack: copy here (which needs none of the bookkeeping:
		 * a failure leaves everything as it was), then take the fast
		 * switch. */
		rc = baton__copystack_prepare(t, from, co);
		if (BATON_UNLIKELY(rc != BATON_OK))
			return rc;
	}
	baton__coro_switch_mark(BATON__SWITCH_RESUME, from, co, &t->current, NULL);
	if (BATON_UNLIKELY(co->fresh)) {
		/* Its first run: a start, not a switch (see arch.h). */
		co->fresh = false;
		*out = baton__arch_start(&from->ctx, &co->ctx, co->stack_lo, co->stack_hi,
					 baton__coro_entry, in);
		return BATON_OK;
	}
	/* Tail call: when `co` yields, the value lands in *out and we return
	 * BATON_OK straight from the switch to our caller. */
	return baton__arch_switch_out(&from->ctx, &co->ctx, in, out);
}

/* Zero for a suspended stackful coroutine: the fast resume's test of its
 * target. Two byte loads, not one 16-bit load of both: the status byte was
 * stored by the last switch, and a wider load that straddles a recent
 * narrower store cannot take its value from the store buffer (it waits for
 * the store to complete). */
static inline unsigned status_model(const struct baton_coro *co)
{
	return (unsigned)co->status | co->model;
}

_Static_assert(BATON_CORO_SUSPENDED == 0 && BATON_CORO_STACKFUL == 0,
	       "a suspended stackful coroutine reads as zero");

/* The fast resume: a suspended stackful coroutine resumed on a thread set
 * up, from a caller without a canary, in a build without switch hooks.
 * Nothing but the bookkeeping and a tail call to the switch: no frame, no
 * call that returns (which would make the compiler save registers that the
 * switch saves again). */
int baton_coro_resume(baton_coro_t *co, void *in, void **out)
{
	struct baton_thread *t = &baton__tls;
	struct baton_coro *from;

	if (BATON_SWITCH_HOOKS || BATON_DEBUG || BATON_UNLIKELY(co == NULL) ||
	    BATON_UNLIKELY(status_model(co) != 0) || BATON_UNLIKELY(!t->ready))
		return resume_general(co, in, out);
	from = running(t);
	if (BATON_UNLIKELY(from->canary))
		return resume_general(co, in, out);
	if (out == NULL)
		out = &from->discard;
	baton__coro_switch_mark(BATON__SWITCH_RESUME, from, co, &t->current, NULL);
	return baton__arch_switch_out(&from->ctx, &co->ctx, in, out);
}

/* The general yield (see resume_general). */
static __attribute__((noinline)) int yield_general(void *out, void **in)
{
	struct baton_thread *t = baton__thread_get();
	struct baton_coro *co = t->current;
	struct baton_coro *to;

	if (BATON_UNLIKELY(co == NULL))
		return BATON_ENOTCORO;
	CHECK_LOCALADDR(out);
	baton__stack_canary_check(co);
	if (in == NULL)
		in = &co->discard;
	to = co->resumer;
	if (BATON_UNLIKELY(co->model == BATON_CORO_COPYSTACK) && to != &t->root &&
	    to->model == BATON_CORO_STACKFUL) {
		int rc = baton__copystack_keep(t, co);

		if (rc != BATON_OK)
			return rc;
	}
	if (BATON_UNLIKELY(needs_slow_switch(t, to)))
		return yield_slow(t, co, to, out, in);
	baton__coro_switch_mark(BATON__SWITCH_YIELD, co, to, &t->current, &t->root);
	return baton__arch_switch_out(&co->ctx, &to->ctx, out, in);
}

/* The fast yield: a stackful coroutine without a canary yields to a
 * stackful resumer, in a build without switch hooks (see the fast resume).
 * A thread not set up has no current coroutine: the general path. */
int baton_coro_yield(void *out, void **in)
{
	struct baton_thread *t = &baton__tls;
	struct baton_coro *co = t->current;
	struct baton_coro *to;

	if (BATON_SWITCH_HOOKS || BATON_DEBUG || BATON_UNLIKELY(co == NULL) ||
	    BATON_UNLIKELY(co->canary))
		return yield_general(out, in);
	to = co->resumer;
	if (BATON_UNLIKELY((co->model | to->model) != BATON_CORO_STACKFUL))
		return yield_general(out, in);
	if (in == NULL)
		in = &co->discard;
	baton__coro_switch_mark(BATON__SWITCH_YIELD, co, to, &t->current, &t->root);
	return baton__arch_switch_out(&co->ctx, &to->ctx, out, in);
}

static void coro_finish(void *value);

/* Every coroutine starts here, on its own stack, from the trampoline. Its
 * frame stays under the coroutine's whole life, and a copy-stack one's is
 * copied at every park: it keeps nothing across the call (the end is a
 * tail call that finds the coroutine afresh), so it is one word. */
void baton__coro_entry(void *value)
{
	struct baton_coro *co;

	baton__sanitizer_entered();
	co = baton__tls.current;
	coro_finish(co->fn(co->arg, value));
}

/* The coroutine's function has returned `value`: end it, on its stack. */
static __attribute__((noinline)) void coro_finish(void *value)
{
	/* The function may have migrated to another thread while it ran:
	 * the address of baton__tls computed before the call is stale. */
	struct baton_thread *t = baton__thread_get_after_switch();
	struct baton_coro *co = t->current;
	void *ignored;

	baton__stack_canary_check(co);
	/* The thread's running coroutine stays `co` until transfer(): the
	 * forget below tells from it that co's frames are the live ones. */
	baton__coro_switch_mark(BATON__SWITCH_RETURN, co, co->resumer, NULL, NULL);
	/* Leaving S for a context off S: nobody needs our frames saved. (To a
	 * copy-stack resumer, the copier sees DEAD and skips the save.) */
	if (co->model == BATON_CORO_COPYSTACK && co->resumer->model != BATON_CORO_COPYSTACK)
		baton__copystack_forget(t, co);
	for (;;) {
		/* Only copy-stack bookkeeping can fail here, for lack of memory
		 * to save the coroutine that owns the shared stack, and
		 * baton_coro_yield reserved that memory when the owner left
		 * the stack for a stackful coroutine (baton__copystack_keep).
		 * Nothing can be returned to anyone: should it fail all the
		 * same, this is the one place that aborts. */
		if (transfer(t, co, co->resumer, value, true, &ignored) != BATON_OK)
			abort();
	}
}

/* A label: a longer name is cut (coro.h says so). */
static void set_name(struct baton_coro *co, const char *name)
{
	(void)baton__name_copy(co->name, sizeof(co->name), name);
}

static void init_common(struct baton_coro *co, baton_coro_fn fn, void *arg, const char *name)
{
	co->status = BATON_CORO_SUSPENDED;
	co->started = false;
	co->fn = fn;
	co->arg = arg;
	co->resumer = NULL;
	set_name(co, name);
	baton__sanitizer_fiber_init(&co->san, false);
}

static size_t control_block_size(void)
{
	return (sizeof(struct baton_coro) + 63) & ~(size_t)63;
}

/* Bytes of top frames that the highest cache colour still leaves in the
 * top page (see create_stackful). */
#define COLOR_FRAMES 512
/* A stackful coroutine's mapping: its low pages, the usable stack, and a
 * top page shared by the highest stack frames, `head` bytes of the
 * embedder's (zero for a plain create) and the control block, in that order
 * upwards. */
static int create_stackful(struct baton_thread *t, baton_coro_t **out, size_t size, bool canary,
			   size_t head)
{
	size_t page = baton__stack_page();
	size_t low = BATON_STACK_LOW_PAGES * page;
	size_t usable = (size + page - 1) & ~(page - 1);
	size_t map_size, color, top, ncolors;
	struct baton_stack st;
	struct baton_coro *co;
	int rc;

	/* The low pages (guard, or slack below the canary) come on top of
	 * the usable size; the control block shares the highest stack page
	 * (the first one any resume touches). */
	top = (head + control_block_size() + 31 * 64 + page - 1) & ~(page - 1);
	map_size = low + usable + top;
	rc = baton__stack_take(t, map_size, canary, &st);
	if (rc != BATON_OK)
		return rc;
	/* Cache colouring: stacks are page-aligned, so without an offset every
	 * control block and every top frame would share the same cache sets,
	 * and 20000 coroutines would fight over a handful of them. Successive
	 * coroutines step 64 bytes down, over as many colours as the top page
	 * holds with COLOR_FRAMES bytes of frames left below the control
	 * block (54 for a plain coroutine): a 32 KiB 8-way L1 chooses the set
	 * by the page offset alone, and with 32 colours (2 KiB) 100 hot
	 * coroutines did not fit in the sets they covered. */
	ncolors = (top - head - control_block_size() - COLOR_FRAMES) / 64 + 1;
	if (ncolors > 64)
		ncolors = 64;
	color = (t->next_color++ % ncolors) * 64u;
	/* A recycled stack still carries its last owner's redzones (ASan) and
	 * memcheck's view of its dead frames. */
	baton__sanitizer_unpoison((char *)st.map + low, map_size - low);
	co = (struct baton_coro *)((char *)st.map + map_size - control_block_size() - color);
	baton__zero(co, sizeof(*co));
	co->model = BATON_CORO_STACKFUL;
	co->map = st.map;
	co->map_size = map_size;
	co->arena = st.arena;
	co->guarded = st.guarded;
	co->canary = !st.guarded;
	co->stack_lo = (char *)st.map + low;
	co->stack_hi = (char *)co - head;
	co->stack_size = usable;
	/* Canary mode: the stack's lowest word must read zero. A fresh or
	 * released slot reads zero; a recycled one was checked when its last
	 * coroutine switched away, and only an overflow writes there. */
	co->vg_stack = baton__sanitizer_stack_register(co->stack_lo, co->stack_hi);
	*out = co;
	return BATON_OK;
}

static int create_copystack(struct baton_thread *t, baton_coro_t **out, size_t head)
{
	struct baton_coro *co = baton__copystack_alloc(t, head);

	if (co == NULL)
		return BATON_ENOMEM;
	co->model = BATON_CORO_COPYSTACK;
	*out = co;
	return BATON_OK;
}

/* The checks every create makes of its attributes. */
static int check_attr(const struct baton_coro_attr *attr, void *arg, unsigned known)
{
	size_t size = attr->stack_size ? attr->stack_size : BATON_CORO_STACK_DEFAULT;

	if ((attr->model != BATON_CORO_STACKFUL && attr->model != BATON_CORO_COPYSTACK) ||
	    (attr->flags & ~known) ||
	    (attr->model == BATON_CORO_COPYSTACK && attr->stack_size != 0))
		return BATON_EINVAL;
	if (attr->model == BATON_CORO_STACKFUL &&
	    (size < BATON_CORO_STACK_MIN || size > BATON_CORO_STACK_MAX))
		return BATON_ESTACK;
	/* Rule 2: a copy-stack coroutine runs on the shared stack, where its
	 * creator's locals will not be while it runs. */
	if (attr->model == BATON_CORO_COPYSTACK)
		CHECK_LOCALADDR(arg);
	(void)arg;
	return BATON_OK;
}

static const struct baton_coro_attr attr_defaults = BATON_CORO_ATTR_INIT;

/* The flags a headed coroutine (a scheduler task) may have. */
#define HEADED_FLAGS_KNOWN (BATON_CORO_FLAGS_KNOWN | BATON__CORO_FP_CONFINED)

/* The arch layer's flags for a coroutine created with `flags`. */
static inline uint8_t ctx_flags(unsigned flags)
{
	if (flags & BATON_CORO_SHARED_FPENV)
		return BATON_ARCH_SHARED_FP;
	return (flags & BATON__CORO_FP_CONFINED) ? BATON_ARCH_FP_CONFINED : 0;
}

/* Rule 6 of coro.h: the first create installs the overflow handler (unless
 * the program said no first), and the choice holds for the process; each
 * thread asks once, on its first create (an overflow of its shared stack
 * is reported as any other). */
static inline void overflow_handler_ask(struct baton_thread *t)
{
	if (BATON_UNLIKELY(!t->overflow_asked)) {
		baton__stack_overflow_handler_install();
		t->overflow_asked = true;
	}
}

/* A coroutine of attributes already checked: either model, and a stackful
 * one with `head` bytes of its embedder's above its stack (see
 * baton__coro_create_headed), which fn then receives instead of arg. */
static int create_checked(baton_coro_t **out, const struct baton_coro_attr *attr, baton_coro_fn fn,
			  void *arg, size_t head)
{
	struct baton_thread *t = baton__thread_get();
	int rc;

	overflow_handler_ask(t);
	if (attr->model == BATON_CORO_STACKFUL)
		rc = create_stackful(t, out,
				     attr->stack_size ? attr->stack_size : BATON_CORO_STACK_DEFAULT,
				     (attr->flags & BATON_CORO_STACK_CANARY) != 0, head);
	else
		rc = create_copystack(t, out, 0);
	if (rc != BATON_OK)
		return rc;
	init_common(*out, fn, head ? (*out)->stack_hi : arg, attr->name);
	(*out)->ctx.flags = ctx_flags(attr->flags);
	if (attr->model == BATON_CORO_STACKFUL)
		baton__arch_make(&(*out)->ctx, (*out)->stack_lo, (*out)->stack_hi,
				 baton__coro_entry);
	return BATON_OK;
}

int baton_coro_create(baton_coro_t **out, const struct baton_coro_attr *attr, baton_coro_fn fn,
		      void *arg)
{
	int rc;

	if (out == NULL || fn == NULL)
		return BATON_EINVAL;
	if (attr == NULL)
		attr = &attr_defaults;
	rc = check_attr(attr, arg, BATON_CORO_FLAGS_KNOWN);
	if (rc != BATON_OK)
		return rc;
	return create_checked(out, attr, fn, arg, 0);
}

/* baton__coro_create_headed for a stackful attr: the head goes just above
 * the stack, below the control block, in the page the top frames use. */
static int create_stackful_headed(baton_coro_t **out, const struct baton_coro_attr *attr,
				  baton_coro_fn fn, size_t head)
{
	int rc = check_attr(attr, NULL, HEADED_FLAGS_KNOWN);

	if (rc != BATON_OK)
		return rc;
	if (head == 0 || head % 64 != 0 || head >= 4096)
		return BATON_EINVAL;
	return create_checked(out, attr, fn, NULL, head);
}

/* A headed block's fields for its new coroutine but its name: it reads as
 * zeroed. */
static inline void headed_init(struct baton_coro *co, const struct baton_coro_attr *attr,
			       baton_coro_fn fn, size_t head)
{
	co->model = BATON_CORO_COPYSTACK;
	co->status = BATON_CORO_SUSPENDED;
	co->fn = fn;
	co->arg = (char *)co - head;
	baton__sanitizer_fiber_init(&co->san, false);
	co->ctx.flags = ctx_flags(attr->flags);
}

/* Out of line, so that the create of an unnamed one needs no frame. */
static __attribute__((noinline)) int headed_name(struct baton_coro *co, const char *name)
{
	set_name(co, name);
	return BATON_OK;
}

/* No spare block of this head: check the head, ask for the overflow
 * handler and make a new block. */
static __attribute__((noinline)) int create_headed_new(baton_coro_t **out,
						       const struct baton_coro_attr *attr,
						       baton_coro_fn fn, size_t head)
{
	struct baton_thread *t = baton__thread_get();
	struct baton_coro *co;

	if (head % 16 != 0 || head >= 4096)
		return BATON_EINVAL;
	overflow_handler_ask(t);
	co = baton__copystack_alloc(t, head);
	if (co == NULL)
		return BATON_ENOMEM;
	headed_init(co, attr, fn, head);
	*out = co;
	return attr->name ? headed_name(co, attr->name) : BATON_OK;
}

int baton__coro_create_headed(baton_coro_t **out, const struct baton_coro_attr *attr,
			      baton_coro_fn fn, size_t head)
{
	struct baton_thread *t;
	struct baton_coro *co;

	/* check_attr's rules for a copy-stack attr, and no default (it is
	 * stackful). The head is checked where a new block is made: a spare
	 * one of the same head passed that check when it was new, and its
	 * thread asked for the overflow handler then. */
	if (out != NULL && fn != NULL && attr != NULL && attr->model == BATON_CORO_STACKFUL)
		return create_stackful_headed(out, attr, fn, head);
	if (BATON_UNLIKELY(out == NULL || fn == NULL || attr == NULL ||
			   attr->model != BATON_CORO_COPYSTACK || attr->stack_size != 0 ||
			   (attr->flags & ~HEADED_FLAGS_KNOWN)))
		return BATON_EINVAL;
	/* Only a thread set up has spare blocks. */
	t = &baton__tls;
	co = t->spare_cs_headed;
	if (BATON_UNLIKELY(co == NULL || (size_t)co->head16 * 16 != head))
		return create_headed_new(out, attr, fn, head);
	t->spare_cs_headed = co->resumer;
	t->nspare_cs_headed--;
	baton__copystack_renew(co);
	headed_init(co, attr, fn, head);
	*out = co;
	if (BATON_UNLIKELY(attr->name != NULL))
		return headed_name(co, attr->name);
	return BATON_OK;
}

/* The general destroy: a stackful coroutine, or a thread not set up yet. */
static __attribute__((noinline)) int destroy_other(struct baton_coro *co)
{
	struct baton_thread *t = baton__thread_get();

	if (co->model == BATON_CORO_COPYSTACK) {
		if (co->home && co->home != t->serial)
			return BATON_ETHREAD;
		baton__sanitizer_fiber_fini(&co->san);
		return baton__copystack_destroy(t, co);
	}
	baton__sanitizer_fiber_fini(&co->san);
	baton__sanitizer_stack_deregister(co->vg_stack);
	{
		struct baton_stack st = { co->map, co->map_size, co->arena, co->guarded };

		baton__stack_give(t, &st);
	}
	return BATON_OK;
}

int baton_coro_destroy(baton_coro_t *co)
{
	struct baton_thread *t = &baton__tls;

	if (co == NULL)
		return BATON_OK;
	if (co->status == BATON_CORO_RUNNING || co->status == BATON_CORO_NORMAL)
		return BATON_EBUSY;
	/* A copy-stack one, on a thread set up: no frame of our own. */
	if (BATON_UNLIKELY(!t->ready || co->model != BATON_CORO_COPYSTACK))
		return destroy_other(co);
	if (co->home && co->home != t->serial)
		return BATON_ETHREAD;
	baton__sanitizer_fiber_fini(&co->san);
	return baton__copystack_destroy(t, co);
}

uint64_t baton__coro_thread_copied(void)
{
	return baton__thread_get()->copied;
}

uint64_t baton__coro_thread_save_allocs(void)
{
	return baton__thread_get()->save_allocs;
}

int baton_coro_thread_share_fpenv(int shared)
{
	struct baton_thread *t = baton__thread_get();

	if (t->current != NULL)
		return BATON_EBUSY;
	if (shared) {
		t->root.ctx.flags |= BATON_ARCH_SHARED_FP;
		/* The state the thread is in now is what shared contexts run
		 * in (arch.h). */
		baton__arch_fp_shared_set();
	} else {
		t->root.ctx.flags &= (uint8_t)~BATON_ARCH_SHARED_FP;
	}
	return BATON_OK;
}

int baton__coro_fp_shared(const baton_coro_t *co)
{
	return (co->ctx.flags & BATON_ARCH_SHARED_FP) != 0;
}

int baton__coro_thread_fp_shared(void)
{
	return (baton__thread_get()->root.ctx.flags & BATON_ARCH_SHARED_FP) != 0;
}

int baton_coro_status(const baton_coro_t *co)
{
	return co ? co->status : BATON_EINVAL;
}

int baton_coro_model(const baton_coro_t *co)
{
	return co ? co->model : BATON_EINVAL;
}

baton_coro_t *baton_coro_self(void)
{
	return baton__tls.current;
}

const char *baton_coro_name(const baton_coro_t *co)
{
	return co ? co->name : "";
}

size_t baton_coro_stack_size(const baton_coro_t *co)
{
	if (co == NULL)
		return 0;
	if (co->model == BATON_CORO_COPYSTACK)
		return co->save_len;
	return co->stack_size;
}

/*
 * Direct hop (the scheduler's switch, declared in hop.h): the
 * running coroutine stops and `to` runs in its place, inheriting its
 * resumer, so a later yield of `to` goes where `from`'s would have gone.
 * This is what lets a task that blocks switch straight to the next task of
 * its worker: one switch per hop instead of two through the worker's loop.
 */
static __attribute__((noinline)) int handoff_slow(struct baton_thread *t, struct baton_coro *from,
						  struct baton_coro *to, bool from_dies)
{
	void *ignored;
	int rc = transfer(t, from, to, NULL, from_dies, &ignored);

	if (BATON_UNLIKELY(rc != BATON_OK)) {
		to->status = BATON_CORO_SUSPENDED;
		from->status = BATON_CORO_RUNNING;
	}
	return rc;
}

/*
 * The copy-stack hop: `from` runs on the shared stack and `to`, started on
 * this thread, waits in its buffer, or has never run (it starts at the top
 * of the shared stack, from a frame made there). With the hand-written
 * switch one switch does it all: baton__arch_swap_ret saves `from`, runs
 * baton__copystack_swap on the scratch stack (save `from`, put `to` back)
 * and loads `to`. Elsewhere the copier does the copies between a switch to
 * it and one from it (copier_main). Here we only check that `from` has
 * room to be saved and switch, without the general path's frames, which
 * would be copied too. Our frame is the last one `from` keeps: the switch
 * is a tail call, so on x86-64 its saved registers (8 words) end exactly
 * COPYSTACK_HOP_SLACK bytes below our frame address: the first hop's
 * reserve is the save's size, and malloc's next 16-byte step is not taken
 * for nothing (every parked task would hold it). The save grows the buffer
 * where that is wrong (AArch64's larger frame, a compiler that does not
 * make the tail call).
 */
#define COPYSTACK_HOP_SLACK 56

static inline bool copystack_hop(const struct baton_thread *t, const struct baton_coro *from,
				 const struct baton_coro *to)
{
	return !BATON_SWITCH_HOOKS && to->model == BATON_CORO_COPYSTACK &&
		from == t->shared.owner &&
		(to->home == t->serial || (to->home == 0 && !to->started));
}

int baton__coro_hop(struct baton_coro *to)
{
	struct baton_thread *t = baton__thread_get();
	struct baton_coro *from = t->current;
	struct baton_coro *next = to; /* the context we switch to */
	bool hop = copystack_hop(t, from, to);

	baton__stack_canary_check(from);
	if (hop) {
		size_t need = (size_t)(t->shared.hi - (char *)__builtin_frame_address(0)) +
			COPYSTACK_HOP_SLACK;

		if (BATON_UNLIKELY(from->save_cap < need) &&
		    baton__copystack_reserve(from, need) != BATON_OK)
			return BATON_ENOMEM; /* nothing changed */
	}
	/* The running coroutine is set below, past the general path's branch
	 * (see resume_slow). Written in this order, the hop's test of the
	 * shared stack's owner stays one compare with memory: with the slow
	 * branch first, GCC kept the owner in a register, one instruction
	 * more per copy-stack hop (callgrind, ring 1t-copystack). */
	baton__coro_switch_mark(BATON__SWITCH_HOP, from, to, NULL, NULL);
	if (hop) {
#if BATON_ARCH_HAS_SWAP
		t->current = to;
		return baton__arch_swap_ret(&from->ctx, &to->ctx, &from->discard, t->shared.scratch,
					    baton__copystack_swap);
#endif
		/* The copier saves `from`, puts `to` back (or starts it: it
		 * runs on S from now on) and switches on. */
		if (!to->started) {
			to->home = t->serial;
			to->stack_lo = t->shared.lo;
			to->stack_hi = t->shared.hi;
		}
		t->job_from = from;
		t->job_to = to;
		t->job_value = NULL;
		next = &t->copier;
	} else if (BATON_UNLIKELY(needs_slow_switch(t, to))) {
		return handoff_slow(t, from, to, false);
	}
	t->current = to;
	/* Tail call, as in resume: we come back here only when someone
	 * switches to `from` again. */
	return baton__arch_switch_ret(&from->ctx, &next->ctx, NULL, &from->discard);
}

int baton__coro_hop_exit(struct baton_coro *to)
{
	struct baton_thread *t = baton__thread_get();
	struct baton_coro *from = t->current;
	int rc;

	baton__stack_canary_check(from);
	/* As in coro_finish, the running coroutine stays `from` for now. */
	baton__coro_switch_mark(BATON__SWITCH_HOP_EXIT, from, to, NULL, NULL);
	/* As at the end of baton__coro_entry: nobody needs our frames. */
	if (from->model == BATON_CORO_COPYSTACK && to->model != BATON_CORO_COPYSTACK)
		baton__copystack_forget(t, from);
	/* A copy-stack task ending into a new one: start it over our frames. */
	if (baton__copystack_can_restart(t, from, to))
		baton__copystack_restart(t, from, to);
	rc = handoff_slow(t, from, to, true); /* returns only on failure */
	from->status = BATON_CORO_RUNNING;
	return rc;
}
