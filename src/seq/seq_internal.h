/* SPDX-License-Identifier: MIT */
/*
 * src/seq/seq_internal.h - what seq.c and wait.c share: the sequencer, its
 * slots, the per-thread record, the lock's inline halves.
 */
#ifndef BATON_SRC_SEQ_INTERNAL_H
#define BATON_SRC_SEQ_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdbool.h>
#include <stdint.h>

#include <baton/coro.h>
#include <baton/ec.h>
#include <baton/seq.h>

#include "../sched/wait.h"

#define SEQ_SLOTS BATON_SEQ_MAX_WAITERS
#define SEQ_LINE 64
#define SEQ_SPIN 128      /* pause-spins of a waiter before it yields */
#define SEQ_YIELDS 64     /* sched_yield()s before it sleeps */
#define SEQ_LOCK_EVERY 32 /* a combining waiter looks at the lock this seldom */
#define SEQ_CHAIN 32      /* longest wait-for chain the deadlock check walks */

enum slot_state {
	SLOT_IDLE = 0,     /* no request, or its result is ready */
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
	unsigned owner;     /* 0 free, 1 claimed by a waiting thread */
	unsigned state;     /* enum slot_state */
	unsigned hot;       /* its owner is spinning (on a CPU, most likely) */
	struct seq_req req; /* written by the owner before PENDING, result by the server */
	baton_ec_t ec;      /* the owner sleeps here: completion or "lock is free" */
	/* An owner that is a scheduler task parks here instead of blocking
	 * its worker's thread; the lock orders the park against wakes. */
	baton_spinlock_t park_lock;
	struct baton_waitq parked;
} __attribute__((aligned(SEQ_LINE)));

/* Per thread: what it holds and waits for, for the deadlock check. */
struct seq_thread {
	struct baton_seq *waiting_for;
	unsigned held;               /* sequencer locks this thread holds */
	struct baton_seq *contended; /* our last call on it was served by combining */
	unsigned hint;               /* slot to try first */
	bool hinted;
};

struct baton_seq {
	/* The lock line: written by every acquisition and release. */
	unsigned lock;             /* 0 free, 1 held */
	struct seq_thread *holder; /* the holding thread, for EDEADLK */
	unsigned sleepers;         /* waiters that may be asleep */
	unsigned batch;            /* K */
	unsigned hwm;              /* slots [0, hwm) have been used */

	/* Under the lock only (the holder's data). */
	unsigned cursor __attribute__((aligned(SEQ_LINE))); /* round robin start */
	uint64_t served[SEQ_SLOTS / 64];                    /* slots served in this holding */
	uint64_t switches, combined;                        /* relaxed counters */
	uint64_t sleeps, parks;
	baton_coro_t *co;
	struct seq_req cur; /* the request the stack runs now */
	char name[32];

	struct seq_slot slots[SEQ_SLOTS];
};

/* initial-exec: the library is PIC, and the general-dynamic model would
 * call __tls_get_addr on every lock and unlock */

extern __thread struct seq_thread baton__seq_self __attribute__((tls_model("initial-exec")));

/* This thread's record, its address computed afresh. A task that waited
 * (yielded or parked) may go on on another thread, and a compiler may keep
 * a thread-local variable's address in a register across that call (GCC
 * derives it once per function from TPIDR_EL0 on AArch64, from %fs:0 on
 * x86-64). Every use after a wait goes through this, which is out of line
 * (seq.c) so that it cannot be folded into the caller. */
struct seq_thread *baton__seq_self_get(void);

/*
 * The full fence of the two Dekker halves (unlock / going to sleep).
 * ThreadSanitizer does not model atomic_thread_fence (and GCC warns); there,
 * an RMW on one shared word stands in for it, a seq_cst operation TSan does
 * understand (slower, and only in TSan builds).
 */
#if BATON_TSAN
extern unsigned baton__seq_tsan_fence_word;
#define seq_fence() __atomic_fetch_add(&baton__seq_tsan_fence_word, 0, __ATOMIC_SEQ_CST)
#else
#define seq_fence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

/*
 * The two halves are unequal: every release runs one, a waiter runs the
 * other only when it goes to sleep, after 128 spins and 64 yields. Where
 * the kernel has membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (registered
 * by the first baton_seq_create; baton__seq_asym is 1 then), the sleeper's
 * half issues it, which makes every running thread of the process execute
 * a full barrier (a thread that is not running passes one when it is
 * scheduled), and the releaser's half needs only a compiler barrier: of
 * sleepers++ ... membarrier ... loads and store ... barrier ... sleepers
 * load, one side still sees the other's store, the asymmetric Dekker
 * argument of the membarrier(2) manual. The full fence at every release
 * cost about 2 ns of a 48 ns Lua call (it waits until fn's stores left the
 * store buffer). Without membarrier, and in TSan builds (TSan does not know
 * it), both halves are seq_fence().
 */
extern int baton__seq_asym;

/* The releaser's half. */
static inline __attribute__((always_inline)) void seq_fence_light(void)
{
#if BATON_TSAN
	seq_fence();
#else
	/* relaxed: written once, before the first sequencer exists (create
	 * publishes the sequencer after it), never again */
	if (__atomic_load_n(&baton__seq_asym, __ATOMIC_RELAXED))
		__asm__ __volatile__("" ::: "memory");
	else
		seq_fence();
#endif
}

/* The sleeper's half (seq.c). */
void baton__seq_fence_heavy(void);

/* A relaxed increment by the lock holder (single writer at a time; the
 * lock orders successive holders), readable racily by baton_seq_stats. */
static inline void count(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* `me`: this thread's record (baton__seq_self_get() after a wait). */
static inline void became_holder(struct baton_seq *s, struct seq_thread *me)
{
	/* relaxed: read only by the deadlock check, which re-validates */
	__atomic_store_n(&s->holder, me, __ATOMIC_RELAXED);
	me->held++;
}

static inline bool try_lock(struct baton_seq *s, struct seq_thread *me)
{
	unsigned zero = 0;

	/* acquire: everything the previous holder did (stack, runtime state,
	 * results) happens before our run; relaxed on failure: we learn
	 * nothing from a failed attempt */
	if (!__atomic_compare_exchange_n(&s->lock, &zero, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return false;
	became_holder(s, me);
	return true;
}

static inline bool waiting(unsigned st)
{
	return st == SLOT_PENDING || st == SLOT_LOCKONLY;
}

enum wait_outcome { WAIT_SERVED, WAIT_LOCKED, WAIT_DEADLOCK };

/* seq.c */
void baton__seq_slot_wake(struct seq_slot *sl);
void baton__seq_unlock(struct baton_seq *s);
void baton__seq_run_locked(struct baton_seq *s, struct seq_req *r);

/* wait.c: the lock is taken; publish, wait, get served or take it */
int baton__seq_call_slow(struct baton_seq *s, baton_seq_fn fn, void *arg, void **result);

#endif /* BATON_SRC_SEQ_INTERNAL_H */
