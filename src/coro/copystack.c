/* SPDX-License-Identifier: MIT */
/*
 * Copy-stack ("stackswap") coroutines.
 *
 * All copy-stack coroutines of a thread run on one shared stack S, always at
 * the same addresses, so pointers between their own frames stay valid. S has
 * at most one owner: the coroutine whose frames are on it now. A coroutine
 * that yields stays on S (owner) until another copy-stack coroutine needs S;
 * only then are the bytes it used, [its saved sp, top of S), copied to its
 * heap buffer (sized to what it used) and the newcomer's bytes copied back.
 * A coroutine resumed again before anyone else took S costs no copy at all.
 *
 * The copy must never run on the bytes it overwrites. When the coroutine
 * leaving S is the one running (a copy-stack coroutine resuming or yielding
 * to another copy-stack coroutine), we first switch to a small private
 * "copier" context with its own stack, copy there, and switch on from it;
 * the scheduler's hop does it in one switch, baton__arch_swap_ret, whose
 * middle runs baton__copystack_swap on a scratch stack (the top of the
 * copier's mapping). Otherwise the caller runs on its own stack and copies
 * directly. This is
 * what lets the model work at -O2 with the stack protector on: no frame of
 * the copying code ever lies inside the region being copied.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "coro_internal.h"

/* Usable size of the shared stack. Pages are committed only when touched, so
 * this bounds the deepest copy-stack coroutine, not memory use. */
#define SHARED_STACK_SIZE (1024u * 1024u)
#define COPIER_STACK_SIZE (64u * 1024u)
/* The top of the copier's mapping is not the copier's: it is the scratch
 * stack on which baton__arch_swap_ret runs baton__copystack_swap (the hop's
 * copies, and the realloc or the report of a save that must grow). */
#define SWAP_SCRATCH_SIZE (16u * 1024u)
/* A coroutine's frames reach at most this far below the frame of the call
 * that reserves room to save them before the switch away (the switch and,
 * in sanitized builds, the sanitizers' hooks below it). A buffer keeps
 * the size it was reserved at, so the margin is memory every parked
 * coroutine holds: a small one where no hook runs. Should a frame be
 * deeper, the copier grows the buffer as it saves. */
#if BATON_SWITCH_HOOKS
#define SAVE_MARGIN 1024
#else
#define SAVE_MARGIN 256
#endif

/* Uninstrumented copy of stack bytes: under AddressSanitizer the region
 * holds other frames' redzones, which a checked memcpy would report. */
#if BATON_ASAN
__attribute__((no_sanitize_address, noinline,
	       optimize("no-tree-loop-distribute-patterns"))) static void
copy_bytes(char *dst, const char *src, size_t n)
{
	volatile char *d = dst;

	while (n--)
		*d++ = *src++;
}
#else
static void copy_bytes(char *dst, const char *src, size_t n)
{
	memcpy(dst, src, n);
}
#endif

static void copier_main(void *value);

static int ensure_shared(struct baton_thread *t)
{
	struct baton_shared_stack *s = &t->shared;
	struct baton_coro *c = &t->copier;
	size_t page = baton__stack_page();
	int rc;

	if (s->map)
		return BATON_OK;
	rc = baton__stack_map(SHARED_STACK_SIZE, 0, &s->map, &s->map_size);
	if (rc != BATON_OK)
		return rc;
	rc = baton__stack_map(COPIER_STACK_SIZE, 0, &c->map, &c->map_size);
	if (rc != BATON_OK) {
		baton__stack_unmap(s->map, s->map_size);
		s->map = NULL;
		return rc;
	}
	s->lo = (char *)s->map + page;
	s->hi = (char *)s->map + s->map_size;
	/* A new mapping may lie where an exited thread's shared or copier
	 * stack was, and AddressSanitizer's shadow still holds that stack's
	 * redzones: frames built here would be reported as overflows. */
	baton__sanitizer_unpoison(s->lo, (size_t)(s->hi - s->lo));
	s->dirty = s->hi;
	s->vg_stack = baton__sanitizer_stack_register(s->lo, s->hi);

	c->model = BATON_CORO_STACKFUL;
	c->stack_lo = (char *)c->map + page;
	c->stack_hi = (char *)c->map + c->map_size;
	baton__sanitizer_unpoison(c->stack_lo, (size_t)(c->stack_hi - c->stack_lo));
	memcpy(c->name, "(copier)", sizeof("(copier)"));
	c->vg_stack = baton__sanitizer_stack_register(c->stack_lo, c->stack_hi);
	baton__sanitizer_fiber_init(&c->san, false);
	s->scratch = c->stack_hi;
	baton__arch_make(&c->ctx, c->stack_lo, c->stack_hi - SWAP_SCRATCH_SIZE, copier_main);
	/* The copier never touches the FP state: it shares it, so a switch
	 * through it costs what the direct switch would (see arch's rule). */
	c->ctx.flags = BATON_ARCH_SHARED_FP;
	return BATON_OK;
}

int baton__copystack_reserve(struct baton_coro *co, size_t len)
{
	char *p;

	if (len <= co->save_cap)
		return BATON_OK;
	p = baton__realloc(co->save, len);
	if (p == NULL)
		return BATON_ENOMEM;
	if (co->save == NULL)
		baton__tls.save_allocs++;
	co->save = p;
	co->save_cap = (uint32_t)len; /* at most the shared stack's size */
	return BATON_OK;
}

static void mark_dirty(struct baton_shared_stack *s, char *sp);

/* What a buffer keeps beyond its first save: room for the hop's estimate
 * of its next save (its frame address and a slack, COPYSTACK_HOP_SLACK in
 * coro.c, 8 bytes more than the switch's frame on x86-64), rounded to
 * malloc's 16-byte step. A deeper park grows the buffer once. */
#define SAVE_KEEP 16

/* Save `co`'s frames off S. Its buffer was reserved with a margin for
 * frames not known yet; on its first save, and on its first save by a hop
 * (the depth it will usually park at: the first park of a task often
 * takes the general path, deeper), it is sized to what it holds. Every
 * parked coroutine would hold the margin. A new buffer, not a smaller
 * realloc: the old one's contents are stale, and a shrink in place would
 * leave a hole behind it that no later buffer of this size fits, while
 * the freed larger one serves the next coroutine's reserve. */
static void copy_out(struct baton_thread *t, struct baton_coro *co, bool by_hop)
{
	char *sp = baton__arch_ctx_sp(&co->ctx);
	size_t len = (size_t)(t->shared.hi - sp);

	if ((co->save_len == 0 || (by_hop && !co->hop_saved)) && co->save_cap > len + SAVE_KEEP) {
		char *p = baton__malloc(len + SAVE_KEEP);

		if (p != NULL) {
			baton__free(co->save);
			co->save = p;
			co->save_cap = (uint32_t)(len + SAVE_KEEP);
		}
	}
	co->hop_saved |= by_hop;
	copy_bytes(co->save, sp, len);
	co->save_len = (uint32_t)len;
	t->copied += len;
	mark_dirty(&t->shared, sp);
}

/* Note that [sp, ...) may hold frames nobody will return through. */
static void mark_dirty(struct baton_shared_stack *s, char *sp)
{
	if (sp < s->dirty)
		s->dirty = sp;
}

/* Put `co`'s frames on S and make it the owner. Below its frames, S may hold
 * what earlier owners left (down to `dirty`): under AddressSanitizer their
 * redzones are cleared (a new frame's prologue only poisons its own
 * redzones), and debug builds fill it with 0xdb so that a stale pointer to
 * a suspended coroutine's local reads garbage that stands out. */
static void copy_in(struct baton_thread *t, struct baton_coro *co)
{
	struct baton_shared_stack *s = &t->shared;
	char *sp;

	if (s->dirty < s->hi)
		baton__sanitizer_unpoison(s->dirty, (size_t)(s->hi - s->dirty));
	if (!co->started) {
		/* Nothing to copy: the switch that follows starts it at the
		 * top of S (baton__coro_switch sees `fresh`). */
		baton__sanitizer_unpoison(s->hi - BATON_ARCH_MAKE_RESERVE, BATON_ARCH_MAKE_RESERVE);
		co->started = true;
		co->fresh = true;
		sp = s->hi - BATON_ARCH_MAKE_RESERVE;
	} else {
		baton__sanitizer_unpoison(s->hi - co->save_len, co->save_len);
		copy_bytes(s->hi - co->save_len, co->save, co->save_len);
		t->copied += co->save_len;
		sp = baton__arch_ctx_sp(&co->ctx);
	}
	if (BATON_DEBUG && s->dirty < sp)
		memset(s->dirty, 0xdb, (size_t)(sp - s->dirty));
	s->dirty = s->hi;
	s->owner = co;
}

int baton__copystack_prepare(struct baton_thread *t, struct baton_coro *from, struct baton_coro *to)
{
	struct baton_coro *owner;
	char *sp;
	int rc;

	if (to->home == 0)
		to->home = t->serial;
	else if (BATON_UNLIKELY(to->home != t->serial))
		return BATON_ETHREAD;
	owner = t->shared.owner;
	if (BATON_LIKELY(owner == to))
		return BATON_OK;
	rc = ensure_shared(t);
	if (rc != BATON_OK)
		return rc;
	to->stack_lo = t->shared.lo;
	to->stack_hi = t->shared.hi;

	if (owner == from) {
		/* `from` runs on S: the copier will save it once it has
		 * switched away. Reserve now, while failure can be returned;
		 * our frame plus a margin bounds what it will use. */
		if (from->status != BATON_CORO_DEAD) {
			sp = (char *)__builtin_frame_address(0) - SAVE_MARGIN;
			rc = baton__copystack_reserve(from, (size_t)(t->shared.hi - sp));
			if (rc != BATON_OK)
				return rc;
		}
		return BATON_COPYSTACK_VIA_COPIER;
	}
	if (owner) {
		sp = baton__arch_ctx_sp(&owner->ctx);
		rc = baton__copystack_reserve(owner, (size_t)(t->shared.hi - sp));
		if (rc != BATON_OK)
			return rc;
		copy_out(t, owner, false);
	}
	copy_in(t, to);
	return BATON_OK;
}

void *baton__copystack_via_copier(struct baton_thread *t, struct baton_coro *from,
				  struct baton_coro *to, void *value, bool from_dies)
{
	t->job_from = from;
	t->job_to = to;
	t->job_value = value;
	/* A dying `from` is not saved by the switch: what it left on S
	 * reaches at most a little below our frame. */
	if (from_dies)
		mark_dirty(&t->shared, (char *)__builtin_frame_address(0) - SAVE_MARGIN);
	return baton__coro_switch(from, &t->copier, value, from_dies);
}

/* Save `from`, which has switched away from S, running off S. Its room
 * was reserved with a margin while a failure could still be returned;
 * should the real frame be deeper, grow now or give up loudly. */
static void save_switched(struct baton_thread *t, struct baton_coro *from, bool by_hop)
{
	char *sp = baton__arch_ctx_sp(&from->ctx);

	if (BATON_UNLIKELY((size_t)(t->shared.hi - sp) > from->save_cap) &&
	    baton__copystack_reserve(from, (size_t)(t->shared.hi - sp)) != BATON_OK) {
		static const char msg[] = "baton: out of memory "
					  "saving a copy-stack coroutine\n";
		(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
		abort();
	}
	copy_out(t, from, by_hop);
}

static void copier_main(void *value)
{
	baton__sanitizer_entered();
	for (;;) {
		/* The copier belongs to one thread and never migrates. */
		struct baton_thread *t = &baton__tls;
		struct baton_coro *from = t->job_from, *to = t->job_to;

		/* A dead `from` was not saved; via_copier marked S dirty. */
		if (from->status != BATON_CORO_DEAD)
			save_switched(t, from, false);
		copy_in(t, to);
		value = baton__coro_switch(&t->copier, to, t->job_value, false);
		(void)value;
	}
}

#if BATON_ARCH_HAS_SWAP
/* A hop's `to` that has never run: it becomes S's owner, and the second
 * half of the switch loads the frame made for it at the top of S, which
 * calls baton__coro_entry (with NULL, the value the hop hands over). */
static void start_at_top(struct baton_thread *t, struct baton_coro *to)
{
	struct baton_shared_stack *s = &t->shared;

	to->home = t->serial;
	to->stack_lo = s->lo;
	to->stack_hi = s->hi;
	copy_in(t, to); /* started, fresh: nothing to copy */
	to->fresh = false;
	/* make keeps 16 bytes free above the frame; here the top of S may be
	 * used, as baton__arch_start uses it: every park then saves 16 bytes
	 * less. The frame still lies below s->hi. */
	baton__arch_make(&to->ctx, s->lo, s->hi + 16, baton__coro_entry);
}

/* The hop's copies, run by baton__arch_swap_ret on the scratch stack
 * between the two halves of the switch: `from` has just stopped on S, `to`
 * waits in its buffer. Both control blocks begin with their context. */
void baton__copystack_swap(baton_arch_ctx_t *from_ctx, baton_arch_ctx_t *to_ctx)
{
	/* The thread that switches runs this: baton__tls is not stale. */
	struct baton_thread *t = &baton__tls;
	struct baton_shared_stack *s = &t->shared;
	struct baton_coro *from = (struct baton_coro *)(void *)from_ctx;
	struct baton_coro *to = (struct baton_coro *)(void *)to_ctx;
	char *sp = baton__arch_ctx_sp(from_ctx), *low;
	size_t out = (size_t)(s->hi - sp), in = to->save_len;

	/* The first save by a hop sizes the buffer, a deeper one grows it:
	 * the general path. Every later hop: copy out, copy in, and the bookkeeping of
	 * both in a few stores (the hop's `to` has run, so it has a save;
	 * S is dirty down to from's sp at most, which is all copy_in would
	 * unpoison and fill). */
	if (BATON_UNLIKELY(!from->hop_saved || out > from->save_cap || !to->started ||
			   BATON_DEBUG || BATON_ASAN)) {
		save_switched(t, from, true);
		if (!to->started)
			start_at_top(t, to);
		else
			copy_in(t, to);
		return;
	}
	copy_bytes(from->save, sp, out);
	from->save_len = (uint32_t)out;
	/* One notice to memcheck for both: to's frames and what lies above
	 * them are written or dead. */
	low = sp < s->hi - in ? sp : s->hi - in;
	baton__sanitizer_unpoison(low, (size_t)(s->hi - low));
	copy_bytes(s->hi - in, to->save, in);
	t->copied += out + in;
	s->dirty = s->hi;
	s->owner = to;
}
#endif

#if BATON_ARCH_HAS_RESTART && !BATON_SWITCH_HOOKS
/*
 * `from`, running on S, has ended, and `to` has never run: start `to` at
 * the top of S right away, over from's dead frames, without the copier.
 * Nothing is copied either way (from needs no saving, to has nothing to put
 * back), and baton__arch_restart reads nothing below the new top once it
 * moves there. S stays dirty down to below our frame; the debug fill of
 * copy_in is skipped, as it would write over the frames we still run on.
 * Not in builds with switch hooks: the sanitizers must see a switch.
 */
void baton__copystack_restart(struct baton_thread *t, struct baton_coro *from,
			      struct baton_coro *to)
{
	struct baton_shared_stack *s = &t->shared;

	to->home = t->serial;
	to->stack_lo = s->lo;
	to->stack_hi = s->hi;
	to->started = true;
	mark_dirty(s, (char *)__builtin_frame_address(0) - SAVE_MARGIN);
	s->owner = to;
	t->current = to;
	baton__arch_restart(&from->ctx, &to->ctx, s->hi, baton__coro_entry, NULL);
}
#endif

/*
 * A coroutine that yields to a stackful one (not the thread's own context)
 * leaves its frames on S. If that stackful coroutine later ends, its return
 * goes to its resumer, and when that is a copy-stack coroutine other than
 * us, our frames must be saved then: in baton__coro_entry, where a failure
 * can be returned to nobody. Reserving now, as prepare does for the copier,
 * makes that save need no memory.
 */
__attribute__((noinline)) int baton__copystack_keep(struct baton_thread *t, struct baton_coro *co)
{
	char *sp = (char *)__builtin_frame_address(0) - SAVE_MARGIN;

	if (t->shared.owner != co)
		return BATON_OK;
	return baton__copystack_reserve(co, (size_t)(t->shared.hi - sp));
}

/* A copy-stack coroutine that finished, or is destroyed: nothing of it
 * needs saving, but what it left on S is dirty. When it is the one running
 * (finishing), its frames reach at most a little below ours. */
void baton__copystack_forget(struct baton_thread *t, struct baton_coro *co)
{
	if (t->shared.owner != co)
		return;
	if (co->status == BATON_CORO_DEAD && t->current == co)
		mark_dirty(&t->shared, (char *)__builtin_frame_address(0) - SAVE_MARGIN);
	else
		mark_dirty(&t->shared, baton__arch_ctx_sp(&co->ctx));
	t->shared.owner = NULL;
}

/* Spare control blocks a thread keeps, and the largest save buffer one may
 * keep: a burst of short copy-stack coroutines then costs no allocation.
 * Blocks with a head (an embedder's record before the control block, see
 * baton__coro_create_headed) have their own list: one size per list. */
#define SPARE_COPYSTACK 256
#define SPARE_SAVE_MAX 4096

static struct baton_coro **spare_list(struct baton_thread *t, size_t head, unsigned **count)
{
	*count = head ? &t->nspare_cs_headed : &t->nspare_cs;
	return head ? &t->spare_cs_headed : &t->spare_cs;
}

static size_t block_head(const struct baton_coro *co)
{
	return (size_t)co->head16 * 16;
}

static void block_free(struct baton_coro *co)
{
	baton__free(co->save);
	baton__free((char *)co - block_head(co));
}

struct baton_coro *baton__copystack_alloc(struct baton_thread *t, size_t head)
{
	unsigned *count;
	struct baton_coro **list = spare_list(t, head, &count);
	struct baton_coro *co = *list;
	char *block;

	if (co != NULL && BATON_UNLIKELY(block_head(co) != head)) {
		/* Another embedder's size: not this one's to reuse. */
		*list = co->resumer;
		--*count;
		block_free(co);
		co = NULL;
	}
	if (co == NULL) {
		block = baton__calloc(1, head + sizeof(*co));
		if (block == NULL)
			return NULL;
		co = (struct baton_coro *)(void *)(block + head);
		co->head16 = (uint8_t)(head / 16);
		return co;
	}
	*list = co->resumer;
	--*count;
	baton__copystack_renew(co);
	return co;
}

static void free_block(struct baton_thread *t, struct baton_coro *co);

/* What baton__copystack_free does not do on its short path: drop a large
 * save buffer, free a block the full list has no room for. */
static __attribute__((noinline, cold)) void free_slow(struct baton_thread *t, struct baton_coro *co)
{
	unsigned *count;

	(void)spare_list(t, block_head(co), &count);
	if (*count >= SPARE_COPYSTACK) {
		block_free(co);
		return;
	}
	baton__free(co->save);
	co->save = NULL;
	co->save_cap = 0;
	free_block(t, co); /* now its short path */
}

/* The short path frames nothing: a block with a small buffer joins a list
 * with room. */
static inline void free_block(struct baton_thread *t, struct baton_coro *co)
{
	unsigned *count;
	struct baton_coro **list = spare_list(t, block_head(co), &count);

	if (BATON_UNLIKELY(co->save_cap > SPARE_SAVE_MAX || *count >= SPARE_COPYSTACK)) {
		free_slow(t, co);
		return;
	}
	co->resumer = *list;
	*list = co;
	++*count;
}

int baton__copystack_destroy(struct baton_thread *t, struct baton_coro *co)
{
	baton__copystack_forget(t, co);
	free_block(t, co);
	return BATON_OK;
}

void baton__copystack_free(struct baton_thread *t, struct baton_coro *co)
{
	free_block(t, co);
}

static size_t trim_list(struct baton_coro **list, unsigned *count)
{
	size_t bytes = 0;

	while (*list) {
		struct baton_coro *co = *list;

		*list = co->resumer;
		bytes += block_head(co) + sizeof(*co) + co->save_cap;
		block_free(co);
	}
	*count = 0;
	return bytes;
}

size_t baton__copystack_trim(struct baton_thread *t)
{
	return trim_list(&t->spare_cs, &t->nspare_cs) +
		trim_list(&t->spare_cs_headed, &t->nspare_cs_headed);
}

void baton__copystack_thread_exit(struct baton_thread *t)
{
	struct baton_shared_stack *s = &t->shared;
	struct baton_coro *c = &t->copier;

	baton__copystack_trim(t);
	if (!s->map)
		return;
	baton__sanitizer_stack_deregister(s->vg_stack);
	baton__sanitizer_stack_deregister(c->vg_stack);
	baton__sanitizer_fiber_fini(&c->san);
	baton__stack_unmap(s->map, s->map_size);
	baton__stack_unmap(c->map, c->map_size);
	memset(s, 0, sizeof(*s));
}

bool baton__copystack_points_inside(const void *p)
{
	const struct baton_shared_stack *s = &baton__tls.shared;

	return s->map && (const char *)p >= s->lo && (const char *)p < s->hi;
}
