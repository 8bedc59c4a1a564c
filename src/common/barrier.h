/* SPDX-License-Identifier: MIT */
/*
 * src/common/barrier.h - the asymmetric barrier: a full memory barrier that
 * one thread executes on every other running thread of the process, so
 * that those threads may order a store before a later load with nothing
 * but a compiler barrier.
 *
 * The pattern it serves (a biased lock, a reader that publishes with a
 * plain store): the fast side stores a flag, then (compiler barrier only)
 * loads another; the slow side stores that other flag, calls
 * baton__barrier_heavy(), then loads the first. Whatever point of the fast
 * side's instruction stream the barrier hits, one of the two sides sees
 * the other's store: before the fast side's store, the fast load comes
 * after the slow store reached memory; after it, the fast store reached
 * memory before the slow load. Store-to-load reordering is the only one
 * x86-64 allows, and the barrier closes it; on AArch64 the same argument
 * holds because the barrier is a full `dmb ish` on every running thread.
 *
 * The mechanism is chosen once per process (baton__barrier_kind), in this
 * order:
 *  1. membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): an inter-processor
 *     interrupt to every CPU running a thread of this process, after a
 *     registration made once (about a microsecond on an idle machine).
 *  2. x86-64 only: mprotect of a locked dummy page from read-write to
 *     read-only after writing it. Linux must then shoot the page's TLB
 *     entry down on every CPU that may cache it (every CPU running a
 *     thread of the process): an interrupt, and on x86-64 an interrupt is
 *     a full barrier for the interrupted thread. On AArch64 the TLB is
 *     invalidated by a broadcast instruction with no interrupt, so this is
 *     no barrier there and is never chosen.
 *  3. none: baton__barrier_available() is false and callers keep to
 *     symmetric ordering (a fence on the fast side).
 * The environment variable BATON_BARRIER (membarrier, mprotect or fence)
 * forces a mechanism, for tests: a forced one that does not work here
 * falls to the next in the list. ThreadSanitizer cannot see the ordering
 * an interrupt gives, so sanitized builds always take `fence`.
 */
#ifndef BATON_SRC_BARRIER_H
#define BATON_SRC_BARRIER_H

#include <stdbool.h>

enum baton__barrier_kind {
	BATON__BARRIER_FENCE = 0,      /* no asymmetric barrier */
	BATON__BARRIER_MEMBARRIER = 1, /* private expedited membarrier */
	BATON__BARRIER_MPROTECT = 2,   /* TLB shoot-down (x86-64) */
};

/* Choose the mechanism (once; any thread) and say which. Cheap after the
 * first call. */
enum baton__barrier_kind baton__barrier_kind(void);

/* Register the process (once; any thread) and say whether the heavy
 * barrier works here: baton__barrier_kind() != BATON__BARRIER_FENCE. */
bool baton__barrier_available(void);

/* The heavy side: returns once every thread of the process that was
 * running has executed a full memory barrier. Only after
 * baton__barrier_available() returned true. */
void baton__barrier_heavy(void);

/* The light side: orders the compiler only; the heavy side pays for the
 * hardware. */
static inline void baton__barrier_light(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

#endif /* BATON_SRC_BARRIER_H */
