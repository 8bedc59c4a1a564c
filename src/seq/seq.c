/*
 * The call sequencer (include/baton/seq.h): a lock, a dedicated stack (a
 * stackful coroutine that loops "run the request, serve a batch, yield"),
 * and flat combining through per-waiter slots. docs/seq.md has the design;
 * the short version:
 *
 *  - Fast path (nobody else calling): CAS the lock 0 -> 1, resume the
 *    coroutine with a request that lives on the caller's stack, release the
 *    lock with an exchange, look whether anybody sleeps. Two atomic RMWs and
 *    one switch in each direction.
 *  - A caller that finds the lock taken claims a slot (one cache line of
 *    the sequencer), writes fn/arg there, marks it PENDING and spins on the
 *    slot's state and on the lock word; after a while it sleeps on the
 *    slot's event count.
 *  - The lock holder, still on the dedicated stack after its own call,
 *    scans the slots [0, hwm) round robin from a cursor and runs up to K
 *    PENDING requests, writing each result and setting the slot IDLE.
 *  - A waiter whose slot went IDLE has its result. A waiter that sees the
 *    lock free takes it and runs its own request (plus a batch).
 *  - Release: exchange the lock to 0, then, if a waiter announced that it
 *    may sleep, nudge one PENDING slot so that its owner comes to take the
 *    lock; the Dekker pair (sleepers RMW / lock load against lock exchange
 *    / sleepers load, all seq_cst) guarantees that either the sleeper sees
 *    the free lock or the releaser sees the sleeper.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <baton/coro.h>
#include <baton/ec.h>
#include <baton/seq.h>

#define SEQ_SLOTS BATON_SEQ_MAX_WAITERS
#define SEQ_LINE 64
#define SEQ_SPIN 128	      /* pause-spins of a waiter before it yields */
#define SEQ_YIELDS 64	      /* sched_yield()s before it sleeps */
#define SEQ_LOCK_EVERY 32     /* a combining waiter looks at the lock this seldom */
#define SEQ_CHAIN 32	      /* longest wait-for chain the deadlock check walks */

enum slot_state {
	SLOT_IDLE = 0,	   /* no request, or its result is ready */
	SLOT_PENDING = 1,  /* a request a lock holder may run */
	SLOT_LOCKONLY = 2, /* its owner only waits for the lock (no combining) */
	SLOT_GRANTED = 3,  /* K = 0 hand-off: the releaser passed the lock to its owner */
};

struct seq_req {
	baton_seq_fn fn;
	void *arg;
	void *result;
};

/* One waiter's record: everything a holder touches to serve it sits in
 * this one cache line, so serving costs one line transfer each way. */
struct seq_slot {
	_Atomic unsigned owner;	 /* 0 free, 1 claimed by a waiting thread */
	_Atomic unsigned state;	 /* enum slot_state */
	_Atomic unsigned hot;	 /* its owner is spinning (on a CPU, most likely) */
	struct seq_req req;	 /* written by the owner before PENDING, result by the server */
	baton_ec_t ec;		 /* the owner sleeps here: completion or "lock is free" */
} __attribute__((aligned(SEQ_LINE)));

/* Per thread: what it holds and waits for, for the deadlock check. */
struct seq_thread {
	_Atomic(struct baton_seq *) waiting_for;
	unsigned held;		 /* sequencer locks this thread holds */
	struct baton_seq *contended; /* our last call on it was served by combining */
	unsigned hint;		 /* slot to try first */
	bool hinted;
};

struct baton_seq {
	/* The lock line: written by every acquisition and release. */
	_Atomic unsigned lock;			  /* 0 free, 1 held */
	_Atomic(struct seq_thread *) holder;	  /* the holding thread, for EDEADLK */
	_Atomic unsigned sleepers;		  /* waiters that may be asleep */
	_Atomic unsigned batch;			  /* K */
	_Atomic unsigned hwm;			  /* slots [0, hwm) have been used */

	/* Under the lock only (the holder's data). */
	_Atomic unsigned cursor __attribute__((aligned(SEQ_LINE))); /* round robin start */
	uint64_t served[SEQ_SLOTS / 64];	  /* slots served in this holding */
	_Atomic uint64_t switches, combined;	  /* relaxed counters */
	_Atomic uint64_t sleeps;
	baton_coro_t *co;
	char name[32];

	struct seq_slot slots[SEQ_SLOTS];
};

/* initial-exec: the library is PIC, and the general-dynamic model would
 * call __tls_get_addr on every lock and unlock */
static __thread struct seq_thread seq_self __attribute__((tls_model("initial-exec")));
/* Spreads the threads' first slot choice; orders nothing. */
static _Atomic unsigned seq_next_hint;

/*
 * The full fence of the two Dekker halves (unlock / going to sleep).
 * ThreadSanitizer does not model atomic_thread_fence (and GCC warns); there,
 * an RMW on one shared word stands in for it, a seq_cst operation TSan does
 * understand (slower, and only in TSan builds).
 */
#if defined(__SANITIZE_THREAD__)
#define SEQ_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SEQ_TSAN 1
#endif
#endif
#if SEQ_TSAN
static _Atomic unsigned seq_tsan_fence_word;
#define seq_fence() atomic_fetch_add_explicit(&seq_tsan_fence_word, 0, memory_order_seq_cst)
#else
#define seq_fence() atomic_thread_fence(memory_order_seq_cst)
#endif

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

/* A relaxed increment by the lock holder (single writer at a time; the
 * lock orders successive holders), readable racily by baton_seq_stats. */
static inline void count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* ---- on the dedicated stack --------------------------------------------- */

/* Run up to K published requests. Called by the lock holder, on the stack. */
static void serve_batch(struct baton_seq *s)
{
	/* relaxed: K is a tuning knob; a stale value for one batch is fine */
	unsigned k = atomic_load_explicit(&s->batch, memory_order_relaxed);
	/* acquire: pairs with the release in claim_slot, so slots below hwm
	 * are initialised before we read them */
	unsigned hwm = atomic_load_explicit(&s->hwm, memory_order_acquire);
	/* relaxed: written under the lock; unlock reads it as a hint */
	unsigned i = atomic_load_explicit(&s->cursor, memory_order_relaxed), n = 0;

	if (k == 0 || hwm == 0)
		return;
	if (i >= hwm)
		i = 0;
	for (unsigned j = 0; j < hwm && n < k; j++) {
		struct seq_slot *sl = &s->slots[i];

		i = i + 1 == hwm ? 0 : i + 1;
		/* acquire: pairs with the owner's release of PENDING, so its
		 * fn and arg are visible */
		if (atomic_load_explicit(&sl->state, memory_order_acquire) != SLOT_PENDING)
			continue;
		sl->req.result = sl->req.fn(sl->req.arg);
		n++;
		/* release: the result is visible to the owner once it reads
		 * IDLE (its acquire load in wait_slot). No atomic RMW here:
		 * the store may complete in the background, and only owners
		 * that sleep get an event-count increment, from unlock() */
		atomic_store_explicit(&sl->state, SLOT_IDLE, memory_order_release);
		s->served[(sl - s->slots) / 64] |= 1ull << ((sl - s->slots) % 64);
	}
	/* relaxed: see above */
	atomic_store_explicit(&s->cursor, i, memory_order_relaxed);
	count(&s->combined, n);
}

static void *seq_main(void *arg, void *in)
{
	struct baton_seq *s = arg;

	for (;;) {
		struct seq_req *r = in;

		r->result = r->fn(r->arg);
		count(&s->switches, 1);
		/* relaxed: a hint; serve_batch re-reads it with acquire. A
		 * waiter that we miss here is served by a later holder or
		 * takes the lock itself */
		if (__builtin_expect(atomic_load_explicit(&s->hwm, memory_order_relaxed) != 0, 0))
			serve_batch(s);
		baton_coro_yield(NULL, &in);
	}
	return NULL;
}

/* ---- the lock ----------------------------------------------------------- */

static inline void became_holder(struct baton_seq *s)
{
	/* relaxed: read only by the deadlock check, which re-validates */
	atomic_store_explicit(&s->holder, &seq_self, memory_order_relaxed);
	seq_self.held++;
}

static inline bool try_lock(struct baton_seq *s)
{
	unsigned zero = 0;

	/* acquire: everything the previous holder did (stack, runtime state,
	 * results) happens before our run; relaxed on failure: we learn
	 * nothing from a failed attempt */
	if (!atomic_compare_exchange_strong_explicit(&s->lock, &zero, 1,
						     memory_order_acquire,
						     memory_order_relaxed))
		return false;
	became_holder(s);
	return true;
}

static inline bool waiting(unsigned st)
{
	return st == SLOT_PENDING || st == SLOT_LOCKONLY;
}

/* A waiting slot whose owner is spinning (so it takes over at once), round
 * robin from the cursor, or NULL. Under the lock. Handing the lock to a
 * thread that yielded its CPU or sleeps would leave it idle for a
 * scheduler round or a futex wake-up per call; those take the lock when
 * they find it free, or are nudged by unlock. */
static struct seq_slot *next_waiter(struct baton_seq *s)
{
	/* acquire: as in serve_batch */
	unsigned hwm = atomic_load_explicit(&s->hwm, memory_order_acquire);
	/* relaxed: written only under the lock (we hold it) */
	unsigned start = atomic_load_explicit(&s->cursor, memory_order_relaxed);

	for (unsigned j = 0; j < hwm; j++) {
		unsigned i = (start + j) % hwm;
		/* relaxed: a candidate only; the caller's CAS or event
		 * count increment is what counts */
		if (waiting(atomic_load_explicit(&s->slots[i].state, memory_order_relaxed)) &&
		    atomic_load_explicit(&s->slots[i].hot, memory_order_relaxed)) {
			atomic_store_explicit(&s->cursor, (i + 1) % hwm, memory_order_relaxed);
			return &s->slots[i];
		}
	}
	return NULL;
}

/*
 * Release the lock, or with K = 0 hand it to the next waiter (round
 * robin), so that without combining every waiter still gets its turn.
 * Then, only if some waiter announced that it may sleep, wake the owners
 * of the slots served in this holding, and the new holder or one waiter
 * (who comes to take the free lock). The plain release store plus the
 * seq_cst fence before the sleepers load is one half of a Dekker pair; the
 * other is in wait_slot (sleepers++, fence, then state and lock loads):
 * either the sleeper sees our stores (IDLE, GRANTED, lock 0) or we see it.
 */
static void unlock(struct baton_seq *s)
{
	uint64_t served[SEQ_SLOTS / 64];
	struct seq_slot *heir = NULL;
	bool any = false;

	for (unsigned w = 0; w < SEQ_SLOTS / 64; w++) {
		served[w] = s->served[w];
		s->served[w] = 0;
		any |= served[w] != 0;
	}
	seq_self.held--;
	/* relaxed: read only by the deadlock check */
	atomic_store_explicit(&s->holder, NULL, memory_order_relaxed);
	/* relaxed: K is a tuning knob. hwm != 0 only after contention */
	if (atomic_load_explicit(&s->batch, memory_order_relaxed) == 0 &&
	    atomic_load_explicit(&s->hwm, memory_order_relaxed) != 0 &&
	    (heir = next_waiter(s)) != NULL) {
		unsigned st = atomic_load_explicit(&heir->state, memory_order_relaxed);

		/* release: hands our run (runtime state, stack) to the heir,
		 * like the release store of the lock below; the CAS fails
		 * only if the owner withdrew a LOCKONLY request */
		if (!waiting(st) ||
		    !atomic_compare_exchange_strong_explicit(&heir->state, &st, SLOT_GRANTED,
							     memory_order_release,
							     memory_order_relaxed))
			heir = NULL;
	}
	if (heir == NULL)
		/* release: our run happens before the next holder's */
		atomic_store_explicit(&s->lock, 0, memory_order_release);
	/* seq_cst fence: orders the stores above before the sleepers load */
	seq_fence();
	/* relaxed: the fence did the ordering */
	if (__builtin_expect(atomic_load_explicit(&s->sleepers, memory_order_relaxed) == 0, 1))
		return;
	if (any)
		for (unsigned w = 0; w < SEQ_SLOTS / 64; w++)
			while (served[w]) {
				unsigned b = (unsigned)__builtin_ctzll(served[w]);

				served[w] &= served[w] - 1;
				/* release (inside): the slot memory stays
				 * valid (it belongs to the sequencer); a late
				 * increment on a reused slot is a spurious
				 * wake-up its new owner tolerates */
				baton_ec_inc(&s->slots[w * 64 + b].ec);
			}
	if (heir != NULL) {
		baton_ec_inc(&heir->ec);
	} else {
		/* Nudge one sleeper to come and take the free lock, unless a
		 * waiter is awake and spinning: it will take the lock (or go
		 * through the sleep protocol, which sees the free lock), and
		 * a futex wake on every release would cost more than the
		 * calls. The lock is not ours any more: the scan only picks
		 * a candidate. */
		unsigned hwm = atomic_load_explicit(&s->hwm, memory_order_acquire);
		/* relaxed: a fairness hint, raced on by releasers */
		unsigned start = atomic_load_explicit(&s->cursor, memory_order_relaxed);
		struct seq_slot *sleeper = NULL;

		for (unsigned j = 0; j < hwm; j++) {
			struct seq_slot *sl = &s->slots[(start + j) % hwm];

			/* relaxed: only picks whom to wake */
			if (!waiting(atomic_load_explicit(&sl->state, memory_order_relaxed)))
				continue;
			/* relaxed: a hint, see above */
			if (atomic_load_explicit(&sl->hot, memory_order_relaxed))
				return;
			if (sleeper == NULL)
				sleeper = sl;
		}
		if (sleeper != NULL)
			baton_ec_inc(&sleeper->ec);
	}
}

/* Holding the lock: switch to the stack, run r and a batch, switch back. */
static void run_locked(struct baton_seq *s, struct seq_req *r)
{
	/* Cannot fail: the coroutine is suspended (only lock holders resume
	 * it and it always yields back) and stackful. */
	baton_coro_resume(s->co, r, NULL);
	unlock(s);
}

/* ---- waiting ------------------------------------------------------------ */

static struct seq_slot *claim_slot(struct baton_seq *s)
{
	struct seq_thread *me = &seq_self;

	if (!me->hinted) {
		/* relaxed: only spreads threads over slots */
		me->hint = atomic_fetch_add_explicit(&seq_next_hint, 1,
						     memory_order_relaxed) % SEQ_SLOTS;
		me->hinted = true;
	}
	for (unsigned j = 0; j < SEQ_SLOTS; j++) {
		unsigned i = (me->hint + j) % SEQ_SLOTS;
		struct seq_slot *sl = &s->slots[i];
		unsigned zero = 0;
		unsigned hwm;

		/* relaxed peek, then acquire CAS: pairs with the previous
		 * owner's release of the slot, so its last use is over */
		if (atomic_load_explicit(&sl->owner, memory_order_relaxed) != 0 ||
		    !atomic_compare_exchange_strong_explicit(&sl->owner, &zero, 1,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		me->hint = i;
		/* relaxed load, release CAS: holders that see the new hwm
		 * (acquire) see the slot as we leave it */
		hwm = atomic_load_explicit(&s->hwm, memory_order_relaxed);
		while (hwm <= i &&
		       !atomic_compare_exchange_weak_explicit(&s->hwm, &hwm, i + 1,
							      memory_order_release,
							      memory_order_relaxed))
			;
		return sl;
	}
	return NULL;
}

static void release_slot(struct seq_slot *sl)
{
	/* release: our last reads of the slot happen before its next owner's
	 * acquire CAS */
	atomic_store_explicit(&sl->owner, 0, memory_order_release);
}

/* Is there a cycle: we wait for s, whose holder waits for ..., held by us? */
static bool would_deadlock(struct baton_seq *s)
{
	struct seq_thread *me = &seq_self;

	/* seq_cst store then seq_cst loads: of two threads closing a cycle
	 * at the same time, at least one sees the other's waiting_for */
	atomic_store_explicit(&me->waiting_for, s, memory_order_seq_cst);
	for (int depth = 0; s != NULL && depth < SEQ_CHAIN; depth++) {
		struct seq_thread *h = atomic_load_explicit(&s->holder, memory_order_seq_cst);

		if (h == me)
			return true;
		if (h == NULL)
			return false;
		s = atomic_load_explicit(&h->waiting_for, memory_order_seq_cst);
	}
	return false;
}

static int report_deadlock(struct baton_seq *s, const char *why)
{
	/* relaxed: our own variable; nobody needs to see this in order */
	atomic_store_explicit(&seq_self.waiting_for, NULL, memory_order_relaxed);
	fprintf(stderr, "baton_seq_call(%s): %s; returning BATON_EDEADLK\n",
		s->name[0] ? s->name : "unnamed", why);
	return BATON_EDEADLK;
}

enum wait_outcome { WAIT_SERVED, WAIT_LOCKED, WAIT_DEADLOCK };

/* Wait until our request in `sl` was served, or we hold the lock. */
static enum wait_outcome wait_slot(struct baton_seq *s, struct seq_slot *sl, bool check)
{
	/* A waiter that can be served keeps off the lock line most of the
	 * time, so that the holder's lock and unlock stay local to its core;
	 * one that cannot (K = 0, or LOCKONLY) watches the lock all along.
	 * relaxed: K is a tuning knob */
	unsigned every = !check && atomic_load_explicit(&s->batch, memory_order_relaxed) > 0
			 ? SEQ_LOCK_EVERY : 1;

	for (unsigned n = 0;; n++) {
		unsigned st;
		uint32_t v;

		/* acquire: pairs with the server's release of IDLE (the
		 * result is ours to read) or the releaser's of GRANTED (its
		 * run happens before ours) */
		st = atomic_load_explicit(&sl->state, memory_order_acquire);
		if (st == SLOT_IDLE)
			return WAIT_SERVED;
		if (st == SLOT_GRANTED) {
			became_holder(s);
			return WAIT_LOCKED;
		}
		/* relaxed peek before the CAS, to keep the line shared */
		if (n % every == every - 1 &&
		    atomic_load_explicit(&s->lock, memory_order_relaxed) == 0 && try_lock(s))
			return WAIT_LOCKED;
		if (check && would_deadlock(s))
			return WAIT_DEADLOCK;
		if (n < SEQ_SPIN) {
			if (n == 0)
				/* relaxed: a hint for unlock's hand-off choice */
				atomic_store_explicit(&sl->hot, 1, memory_order_relaxed);
			cpu_relax();
			continue;
		}
		if (n == SEQ_SPIN)
			/* relaxed: as above */
			atomic_store_explicit(&sl->hot, 0, memory_order_relaxed);
		if (n < SEQ_SPIN + SEQ_YIELDS) {
			sched_yield();
			continue;
		}
		/* relaxed RMW + seq_cst fence: our half of the Dekker pair
		 * with unlock(); the loads below cannot pass the fence */
		atomic_fetch_add_explicit(&s->sleepers, 1, memory_order_relaxed);
		seq_fence();
		v = baton_ec_value(&sl->ec);
		/* acquire: as above. relaxed lock load: the fence orders it;
		 * if it is still held, its holder will see us in sleepers */
		st = atomic_load_explicit(&sl->state, memory_order_acquire);
		if (waiting(st) && atomic_load_explicit(&s->lock, memory_order_relaxed) != 0) {
			atomic_fetch_add_explicit(&s->sleeps, 1, memory_order_relaxed);
			/* with a lock held we re-check for cycles now and then */
			baton_ec_wait_mp(&sl->ec, v, check ? 1000000 : -1);
		}
		/* relaxed: only a count; the loop re-reads state and lock */
		atomic_fetch_sub_explicit(&s->sleepers, 1, memory_order_relaxed);
		n = 0;
	}
}

/* The lock is taken: publish, wait, and get served or take the lock. */
static int call_slow(struct baton_seq *s, baton_seq_fn fn, void *arg, void **result)
{
	struct seq_req r = { fn, arg, NULL };
	bool check = seq_self.held > 0;
	struct seq_slot *sl;
	enum wait_outcome out;

	if (baton_coro_self() == s->co) {
		/* nested: we are the holder, on the stack; run it directly */
		r.result = fn(arg);
		goto done;
	}
	/* relaxed: if it is us, we wrote it ourselves (and only a thread
	 * that holds some lock can be its holder: keep off the lock line) */
	if (check && atomic_load_explicit(&s->holder, memory_order_relaxed) == &seq_self)
		return report_deadlock(s, "called off the dedicated stack by the thread that holds it "
					  "(from a coroutine resumed inside a sequenced call?)");
	while ((sl = claim_slot(s)) == NULL) {
		/* more waiters than slots: wait for the lock without one */
		if (try_lock(s)) {
			run_locked(s, &r);
			goto done;
		}
		if (check && would_deadlock(s))
			return report_deadlock(s, "a cycle of sequencers waiting for each other");
		sched_yield();
	}
	sl->req.fn = fn;
	sl->req.arg = arg;
	/* release: fn and arg are visible to a holder that sees PENDING */
	atomic_store_explicit(&sl->state, check ? SLOT_LOCKONLY : SLOT_PENDING,
			      memory_order_release);
	out = wait_slot(s, sl, check);
	/* relaxed: as in wait_slot */
	atomic_store_explicit(&sl->hot, 0, memory_order_relaxed);
	/* next time, publish at once if combining served us this time */
	seq_self.contended = out == WAIT_SERVED ? s : NULL;
	if (out == WAIT_LOCKED) {
		/* acquire: as in wait_slot; under the lock nobody else can
		 * serve the slot now, so IDLE means a previous holder did */
		if (atomic_load_explicit(&sl->state, memory_order_acquire) != SLOT_IDLE) {
			/* relaxed: we hold the lock; no holder scans now */
			atomic_store_explicit(&sl->state, SLOT_IDLE, memory_order_relaxed);
			run_locked(s, &r);
		} else {
			r.result = sl->req.result;
			unlock(s);
		}
	} else if (out == WAIT_SERVED) {
		r.result = sl->req.result;
	} else {
		unsigned st = SLOT_LOCKONLY;

		/* relaxed: withdraw; it fails only if a releaser granted us
		 * the lock meanwhile (acquire then: its run before ours), and
		 * then there is no deadlock any more: run as a holder */
		if (!atomic_compare_exchange_strong_explicit(&sl->state, &st, SLOT_IDLE,
							     memory_order_acquire,
							     memory_order_relaxed)) {
			became_holder(s);
			atomic_store_explicit(&sl->state, SLOT_IDLE, memory_order_relaxed);
			run_locked(s, &r);
			goto out;
		}
		release_slot(sl);
		return report_deadlock(s, "a cycle of sequencers waiting for each other");
	}
out:
	release_slot(sl);
	if (check)
		/* relaxed: our own variable, re-set before every check */
		atomic_store_explicit(&seq_self.waiting_for, NULL, memory_order_relaxed);
done:
	if (result)
		*result = r.result;
	return BATON_OK;
}

int baton_seq_call(baton_seq_t *s, baton_seq_fn fn, void *arg, void **result)
{
	struct seq_req r;

	if (__builtin_expect(s == NULL || fn == NULL, 0))
		return BATON_EINVAL;
	/* Under contention, go straight to publishing: a CAS that fails
	 * would still take the lock line away from the holder. */
	if (__builtin_expect(seq_self.contended == s || !try_lock(s), 0))
		return call_slow(s, fn, arg, result);
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
	size_t n;
	int rc;

	if (out == NULL)
		return BATON_EINVAL;
	if (attr == NULL)
		attr = &defaults;
	ca.stack_size = attr->stack_size ? attr->stack_size : BATON_SEQ_STACK_DEFAULT;
	ca.name = attr->name ? attr->name : "baton_seq";
	s = aligned_alloc(SEQ_LINE, sizeof(*s));
	if (s == NULL)
		return BATON_ENOMEM;
	memset(s, 0, sizeof(*s));
	atomic_init(&s->batch, attr->batch);
	for (unsigned i = 0; i < SEQ_SLOTS; i++)
		baton_ec_init(&s->slots[i].ec);
	n = attr->name ? strnlen(attr->name, sizeof(s->name) - 1) : 0;
	memcpy(s->name, attr->name ? attr->name : "", n);
	rc = baton_coro_create(&s->co, &ca, seq_main, s);
	if (rc != BATON_OK) {
		free(s);
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
	if (!atomic_compare_exchange_strong_explicit(&s->lock, &zero, 1,
						     memory_order_acquire,
						     memory_order_relaxed))
		return BATON_EBUSY;
	for (unsigned i = 0; i < SEQ_SLOTS; i++)
		/* acquire: pairs with release_slot; a claimed slot is a
		 * caller still inside baton_seq_call */
		if (atomic_load_explicit(&s->slots[i].owner, memory_order_acquire) != 0) {
			/* release: undo our acquisition */
			atomic_store_explicit(&s->lock, 0, memory_order_release);
			return BATON_EBUSY;
		}
	baton_coro_destroy(s->co);
	free(s);
	return BATON_OK;
}

int baton_seq_set_batch(baton_seq_t *s, unsigned k)
{
	if (s == NULL)
		return BATON_EINVAL;
	/* relaxed: read by the next batch; nothing else depends on it */
	atomic_store_explicit(&s->batch, k, memory_order_relaxed);
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
	st->switches = atomic_load_explicit(&s->switches, memory_order_relaxed);
	st->combined = atomic_load_explicit(&s->combined, memory_order_relaxed);
	st->calls = st->switches + st->combined;
	st->sleeps = atomic_load_explicit(&s->sleeps, memory_order_relaxed);
	return BATON_OK;
}

const char *baton_seq_name(const baton_seq_t *s)
{
	return s ? s->name : "";
}
