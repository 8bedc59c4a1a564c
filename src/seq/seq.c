/* SPDX-License-Identifier: MIT */
/*
 * The call sequencer (include/baton/seq.h): a lock, a dedicated stack (a
 * stackful coroutine that loops "run the request, serve a batch, yield"),
 * and flat combining through per-waiter slots. docs/seq.md has the design;
 * the short version:
 *
 *  - Fast path (nobody else calling): CAS the lock 0 -> 1, resume the
 *    coroutine with the request copied into the sequencer (the coroutine
 *    layer's jump-entered pair, src/coro/jump.h: by jmp, so the
 *    return-stack predictor stays balanced), release with a
 *    store and the releaser's barrier, look whether anybody sleeps.
 *  - A caller that finds the lock taken claims a slot (one cache line of
 *    the sequencer), writes fn/arg there, marks it PENDING and spins on the
 *    slot's state (and now and then on the lock word); after a while it
 *    sleeps on the slot's event count (wait.c).
 *  - The lock holder, still on the dedicated stack after its own call,
 *    scans the slots [0, hwm) round robin from a cursor and runs up to K
 *    PENDING requests, writing each result and setting the slot IDLE.
 *  - A waiter whose slot went IDLE has its result. A waiter that sees the
 *    lock free takes it and runs its own request (plus a batch).
 *  - Release: store the lock 0 (or, with K = 0, hand it to a spinning
 *    waiter), barrier, and only if a waiter announced that it may sleep,
 *    wake the served slots' owners and the heir or one waiter. The Dekker
 *    pair (sleepers++ / heavy barrier / state and lock loads against lock
 *    store / light barrier / sleepers load; seq_internal.h) guarantees that
 *    either the sleeper sees the free lock or its result, or the releaser
 *    sees the sleeper.
 *
 * Files: seq_internal.h (the structures, the barriers), seq.c (the stack,
 * the lock, life cycle), wait.c (slots, waiting, deadlock detection); onto
 * the stack and back is ../coro/jump.h's.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/barrier.h"
#include "../coro/jump.h"
#include "seq_internal.h"

/* initial-exec: the library is PIC, and the general-dynamic model would
 * call __tls_get_addr on every lock and unlock */
__thread struct seq_thread baton__seq_self __attribute__((tls_model("initial-exec")));

/* See seq_internal.h. noipa: no caller may learn that two calls return the
 * same address; the empty asm keeps the body opaque as well. */
__attribute__((noinline, noipa)) struct seq_thread *baton__seq_self_get(void)
{
	__asm__ __volatile__("" ::: "memory");
	return &baton__seq_self;
}
#if BATON_TSAN
unsigned baton__seq_tsan_fence_word;
#endif
/* 1: the releases' fence is a compiler barrier, the sleepers issue
 * membarrier (seq_internal.h). Tests may set it to 0 while no sequencer is
 * in use, to run the fallback. */
int baton__seq_asym;

static pthread_once_t asym_once = PTHREAD_ONCE_INIT;

/* The asymmetric barrier where the process has it (src/common/barrier.h:
 * expedited membarrier, registered once); else the releases keep their
 * full fence. */
static void asym_init(void)
{
	if (baton__barrier_available())
		/* relaxed: pthread_once and the publication of the first
		 * sequencer order it before every use */
		__atomic_store_n(&baton__seq_asym, 1, __ATOMIC_RELAXED);
}

void baton__seq_fence_heavy(void)
{
	/* relaxed: as in seq_fence_light */
	if (!__atomic_load_n(&baton__seq_asym, __ATOMIC_RELAXED)) {
		seq_fence();
		return;
	}
	baton__barrier_heavy();
}

/* ---- on the dedicated stack --------------------------------------------- */

/* Run up to K published requests. Called by the lock holder, on the stack. */
static void serve_batch(struct baton_seq *s)
{
	/* relaxed: K is a tuning knob; a stale value for one batch is fine */
	unsigned k = __atomic_load_n(&s->batch, __ATOMIC_RELAXED);
	/* acquire: pairs with the release in claim_slot, so slots below hwm
	 * are initialised before we read them */
	unsigned hwm = __atomic_load_n(&s->hwm, __ATOMIC_ACQUIRE);
	/* relaxed: written under the lock; unlock reads it as a hint */
	unsigned i = __atomic_load_n(&s->cursor, __ATOMIC_RELAXED), n = 0;

	if (k == 0 || hwm == 0)
		return;
	if (i >= hwm)
		i = 0;
	for (unsigned j = 0; j < hwm && n < k; j++) {
		struct seq_slot *sl = &s->slots[i];

		i = i + 1 == hwm ? 0 : i + 1;
		/* acquire: pairs with the owner's release of PENDING, so its
		 * fn and arg are visible */
		if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != SLOT_PENDING)
			continue;
		sl->req.result = sl->req.fn(sl->req.arg);
		n++;
		/* release: the result is visible to the owner once it reads
		 * IDLE (its acquire load in wait_slot). No atomic RMW here:
		 * the store may complete in the background, and only owners
		 * that sleep get an event-count increment, from baton__seq_unlock() */
		__atomic_store_n(&sl->state, SLOT_IDLE, __ATOMIC_RELEASE);
		s->served[(sl - s->slots) / 64] |= 1ull << ((sl - s->slots) % 64);
	}
	/* relaxed: see above */
	__atomic_store_n(&s->cursor, i, __ATOMIC_RELAXED);
	count(&s->combined, n);
}

/* The coroutine. Every request it runs is s->cur (run_locked), so it
 * ignores the value a resume hands over, which lets either entry (jump.h's
 * or baton_coro_resume) resume it. */
static void *seq_main(void *arg, void *in)
{
	struct baton_seq *s = arg;

	(void)in;
	for (;;) {
		struct seq_req *r = &s->cur;

		r->result = r->fn(r->arg);
		count(&s->switches, 1);
		/* relaxed: a hint; serve_batch re-reads it with acquire. A
		 * waiter that we miss here is served by a later holder or
		 * takes the lock itself */
		if (__builtin_expect(__atomic_load_n(&s->hwm, __ATOMIC_RELAXED) != 0, 0))
			serve_batch(s);
		baton__coro_jump_yield(s->co);
	}
	return NULL;
}

/* ---- the lock ----------------------------------------------------------- */

/* A waiting slot whose owner is spinning (so it takes over at once), round
 * robin from the cursor, or NULL. Under the lock. Handing the lock to a
 * thread that yielded its CPU or sleeps would leave it idle for a
 * scheduler round or a futex wake-up per call; those take the lock when
 * they find it free, or are nudged by unlock. */
static struct seq_slot *next_waiter(struct baton_seq *s)
{
	/* acquire: as in serve_batch */
	unsigned hwm = __atomic_load_n(&s->hwm, __ATOMIC_ACQUIRE);
	/* relaxed: written only under the lock (we hold it) */
	unsigned start = __atomic_load_n(&s->cursor, __ATOMIC_RELAXED);

	for (unsigned j = 0; j < hwm; j++) {
		unsigned i = (start + j) % hwm;
		/* relaxed: a candidate only; the caller's CAS or event
		 * count increment is what counts */
		if (waiting(__atomic_load_n(&s->slots[i].state, __ATOMIC_RELAXED)) &&
		    __atomic_load_n(&s->slots[i].hot, __ATOMIC_RELAXED)) {
			__atomic_store_n(&s->cursor, (i + 1) % hwm, __ATOMIC_RELAXED);
			return &s->slots[i];
		}
	}
	return NULL;
}

/*
 * Wake a slot's owner: a thread asleep on the event count, or a task parked
 * on the scheduler. The task checks the count's version under park_lock
 * before it parks, and we increment it before taking park_lock: either our
 * lock comes after its park and we find it queued, or its check comes after
 * our unlock and sees the new version. Reached only when some waiter
 * announced it may sleep, so the uncontended unlock never takes park_lock.
 */
void baton__seq_slot_wake(struct seq_slot *sl)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_waiter *w;

	baton_ec_inc(&sl->ec);
	baton__spin_lock(&sl->park_lock);
	w = baton__waitq_claim_first(&sl->parked);
	if (w != NULL)
		baton__waiter_wake(&wl, w, BATON_OK);
	baton__spin_unlock(&sl->park_lock);
	baton__wakelist_run(&wl);
}

/*
 * After a release, only if some waiter announced that it may sleep: wake
 * the owners of the slots served in this holding (`served`, or NULL), and
 * the new holder `heir` or, without one, one waiter (who comes to take the
 * free lock).
 */
static __attribute__((noinline)) void
wake_after_release(struct baton_seq *s, const uint64_t *served, struct seq_slot *heir)
{
	if (served != NULL)
		for (unsigned w = 0; w < SEQ_SLOTS / 64; w++)
			for (uint64_t bits = served[w]; bits != 0; bits &= bits - 1)
				/* release (inside): the slot memory stays
				 * valid (it belongs to the sequencer); a late
				 * increment on a reused slot is a spurious
				 * wake-up its new owner tolerates */
				baton__seq_slot_wake(
					&s->slots[w * 64 + (unsigned)__builtin_ctzll(bits)]);
	if (heir != NULL) {
		baton__seq_slot_wake(heir);
	} else {
		/* Nudge one sleeper to come and take the free lock, unless a
		 * waiter is awake and spinning: it will take the lock (or go
		 * through the sleep protocol, which sees the free lock), and
		 * a futex wake on every release would cost more than the
		 * calls. The lock is not ours any more: the scan only picks
		 * a candidate. acquire: as in serve_batch */
		unsigned hwm = __atomic_load_n(&s->hwm, __ATOMIC_ACQUIRE);
		/* relaxed: a fairness hint, raced on by releasers */
		unsigned start = __atomic_load_n(&s->cursor, __ATOMIC_RELAXED);
		struct seq_slot *sleeper = NULL;

		for (unsigned j = 0; j < hwm; j++) {
			struct seq_slot *sl = &s->slots[(start + j) % hwm];

			/* relaxed: only picks whom to wake */
			if (!waiting(__atomic_load_n(&sl->state, __ATOMIC_RELAXED)))
				continue;
			/* relaxed: a hint, see above */
			if (__atomic_load_n(&sl->hot, __ATOMIC_RELAXED))
				return;
			if (sleeper == NULL)
				sleeper = sl;
		}
		if (sleeper != NULL)
			baton__seq_slot_wake(sleeper);
	}
}

/*
 * The release of a sequencer that has seen contention (hwm != 0): release
 * the lock, or with K = 0 hand it to the next waiter (round robin), so
 * that without combining every waiter still gets its turn; then wake as
 * above. The plain release store (or the GRANTED CAS) plus the seq_cst
 * fence before the sleepers load is one half of a Dekker pair; the other
 * is in wait_slot (sleepers++, fence, then state and lock loads): either
 * the sleeper sees our stores (IDLE, GRANTED, lock 0) or we see it.
 */
static __attribute__((noinline)) void unlock_contended(struct baton_seq *s)
{
	uint64_t served[SEQ_SLOTS / 64];
	struct seq_slot *heir = NULL;
	bool any = false;

	for (unsigned w = 0; w < SEQ_SLOTS / 64; w++) {
		served[w] = s->served[w];
		s->served[w] = 0;
		any |= served[w] != 0;
	}
	/* relaxed: K is a tuning knob */
	if (__atomic_load_n(&s->batch, __ATOMIC_RELAXED) == 0 && (heir = next_waiter(s)) != NULL) {
		unsigned st = __atomic_load_n(&heir->state, __ATOMIC_RELAXED);

		/* release: hands our run (runtime state, stack) to the heir,
		 * like the release store of the lock below; the CAS fails
		 * only if the owner withdrew a LOCKONLY request */
		if (!waiting(st) ||
		    !__atomic_compare_exchange_n(&heir->state, &st, SLOT_GRANTED, false,
						 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			heir = NULL;
	}
	if (heir == NULL)
		/* release: our run happens before the next holder's */
		__atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE);
	/* our half of the Dekker pair: orders the stores above before the
	 * sleepers load (seq_internal.h) */
	seq_fence_light();
	/* relaxed: the fence did the ordering */
	if (__builtin_expect(__atomic_load_n(&s->sleepers, __ATOMIC_RELAXED) == 0, 1))
		return;
	wake_after_release(s, any ? served : NULL, heir);
}

/*
 * This thread's record's `held`, decremented. On x86-64 the access is
 * %fs-relative, so it reaches the running thread's record whatever the
 * caller did before (the segment base is per thread; what can go stale is
 * an address formed from %fs:0 and kept, see seq_internal.h); this saves
 * the out-of-line baton__seq_self_get() on every call. Elsewhere it goes
 * through baton__seq_self_get().
 */
#if defined(__x86_64__)
#define held_dec() ((void)--baton__seq_self.held)
#else
#define held_dec() ((void)--baton__seq_self_get()->held)
#endif

/*
 * Release the lock. Until some waiter has
 * claimed a slot (hwm == 0, the uncontended case) nothing was served and
 * nobody can be handed the lock, so the release is the lock store, the
 * fence and the sleepers load of the Dekker pair (see unlock_contended);
 * a waiter that claims a slot meanwhile and goes to sleep is seen in
 * sleepers, and woken by the nudge.
 */
static inline __attribute__((always_inline)) void unlock(struct baton_seq *s)
{
	held_dec(); /* fresh: fn, or the caller before, may have waited */
	/* relaxed: read only by the deadlock check */
	__atomic_store_n(&s->holder, NULL, __ATOMIC_RELAXED);
	/* relaxed: hwm only grows, and seq_main read it on this thread before
	 * it served anything (read-read coherence: we see at least that); a
	 * waiter we miss is the sleepers check's */
	if (__builtin_expect(__atomic_load_n(&s->hwm, __ATOMIC_RELAXED) != 0, 0)) {
		unlock_contended(s);
		return;
	}
	/* release: our run happens before the next holder's */
	__atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE);
	/* our half of the Dekker pair: orders the lock store before the
	 * sleepers load (seq_internal.h) */
	seq_fence_light();
	/* relaxed: the fence did the ordering */
	if (__builtin_expect(__atomic_load_n(&s->sleepers, __ATOMIC_RELAXED) != 0, 0))
		wake_after_release(s, NULL, NULL);
}

void baton__seq_unlock(struct baton_seq *s)
{
	unlock(s);
}

/* Holding the lock: switch to the stack, run r and a batch, switch back,
 * release. The request travels in the sequencer's own record, not the
 * caller's: a copy-stack task's `r` lies on its thread's shared stack,
 * which debug builds refuse as a resume value (coro.h rule 2), and which
 * fn could even hand to another copy-stack coroutine before the result is
 * written. */
static inline __attribute__((always_inline)) void run_locked(struct baton_seq *s, struct seq_req *r)
{
	s->cur = *r;
	/* Cannot fail: the coroutine is suspended (only lock holders resume
	 * it and it always yields back) and stackful. It runs s->cur. */
	baton__coro_jump_resume(s->co);
	r->result = s->cur.result; /* before the unlock: the next holder's */
	unlock(s);
}

void baton__seq_run_locked(struct baton_seq *s, struct seq_req *r)
{
	run_locked(s, r);
}

int baton_seq_call(baton_seq_t *s, baton_seq_fn fn, void *arg, void **result)
{
	struct seq_thread *me = &baton__seq_self; /* nothing waited yet */
	struct seq_req r;

	if (__builtin_expect(s == NULL || fn == NULL, 0))
		return BATON_EINVAL;
	/* Under contention, go straight to publishing: a CAS that fails
	 * would still take the lock line away from the holder. */
	if (__builtin_expect(me->contended == s || !try_lock(s, me), 0))
		return baton__seq_call_slow(s, fn, arg, result);
	r.fn = fn;
	r.arg = arg;
	run_locked(s, &r);
	if (result)
		*result = r.result;
	return BATON_OK;
}

/* ---- life cycle ----------------------------------------------------------- */

int baton_seq_create(baton_seq_t **out, const struct baton_seq_attr *attr)
{
	static const struct baton_seq_attr defaults = BATON_SEQ_ATTR_INIT;
	struct baton_coro_attr ca = BATON_CORO_ATTR_INIT;
	struct baton_seq *s;
	int rc;

	if (out == NULL)
		return BATON_EINVAL;
	(void)pthread_once(&asym_once, asym_init);
	if (attr == NULL)
		attr = &defaults;
	ca.stack_size = attr->stack_size ? attr->stack_size : BATON_SEQ_STACK_DEFAULT;
	ca.name = attr->name ? attr->name : "baton_seq";
	/* The dedicated stack keeps no FP control state of its own (rounding
	 * mode, exception masks): fn runs in that of the thread that runs it,
	 * as a plain call would. Safe because the state is callee-saved in
	 * both ABIs: fn, like any function, leaves it as it found it (seq.h
	 * rule 1), so the coroutine never changes it and has nothing to keep;
	 * and a caller that keeps its own state still gets exactly its own
	 * back, the switch to it reloads it. It saves the store and reload of
	 * the coroutine's state on every call (x86-64: stmxcsr/ldmxcsr). */
	ca.flags = BATON_CORO_SHARED_FPENV;
	s = baton__aligned(SEQ_LINE, sizeof(*s));
	if (s == NULL)
		return BATON_ENOMEM;
	memset(s, 0, sizeof(*s));
	__atomic_store_n(&s->batch, attr->batch, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < SEQ_SLOTS; i++)
		baton_ec_init(&s->slots[i].ec);
	(void)baton__name_copy(s->name, sizeof(s->name), attr->name); /* a label: cut */
	rc = baton_coro_create(&s->co, &ca, seq_main, s);
	if (rc != BATON_OK) {
		baton__free(s);
		return rc;
	}
	/* set first, so that init may use the sequencer */
	*out = s;
	if (attr->init)
		baton_seq_call(s, attr->init, attr->init_arg, NULL);
	return BATON_OK;
}

int baton_seq_destroy(baton_seq_t *s)
{
	unsigned zero = 0;

	if (s == NULL)
		return BATON_OK;
	/* acquire: we see the last holder's work finished; holding the lock
	 * ourselves keeps new callers out while we look at the slots */
	if (!__atomic_compare_exchange_n(&s->lock, &zero, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return BATON_EBUSY;
	for (unsigned i = 0; i < SEQ_SLOTS; i++)
		/* acquire: pairs with release_slot; a claimed slot is a
		 * caller still inside baton_seq_call */
		if (__atomic_load_n(&s->slots[i].owner, __ATOMIC_ACQUIRE) != 0) {
			/* release: undo our acquisition */
			__atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE);
			return BATON_EBUSY;
		}
	baton_coro_destroy(s->co);
	baton__free(s);
	return BATON_OK;
}

int baton_seq_set_batch(baton_seq_t *s, unsigned k)
{
	if (s == NULL)
		return BATON_EINVAL;
	/* relaxed: read by the next batch; nothing else depends on it */
	__atomic_store_n(&s->batch, k, __ATOMIC_RELAXED);
	return BATON_OK;
}

int baton_seq_on_stack(const baton_seq_t *s)
{
	return s != NULL && baton_coro_self() == s->co;
}

int baton_seq_stats(const baton_seq_t *s, struct baton_seq_stats *st)
{
	if (s == NULL || st == NULL)
		return BATON_EINVAL;
	/* relaxed: counters; exact once the sequencer is idle and the reader
	 * synchronised with the callers (e.g. joined them) */
	st->switches = __atomic_load_n(&s->switches, __ATOMIC_RELAXED);
	st->combined = __atomic_load_n(&s->combined, __ATOMIC_RELAXED);
	st->calls = st->switches + st->combined;
	st->sleeps = __atomic_load_n(&s->sleeps, __ATOMIC_RELAXED);
	st->parks = __atomic_load_n(&s->parks, __ATOMIC_RELAXED);
	return BATON_OK;
}

const char *baton_seq_name(const baton_seq_t *s)
{
	return s ? s->name : "";
}
