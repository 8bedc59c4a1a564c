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
 * The barrier is membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): an
 * inter-processor interrupt to every CPU running a thread of this process
 * (tens of microseconds), after a registration made once. Where the
 * kernel refuses it (no membarrier, a sandbox), baton__barrier_available()
 * is false and callers must keep to symmetric ordering. ThreadSanitizer
 * cannot see the ordering it gives, so sanitized builds report it
 * unavailable and take the symmetric paths.
 */
#ifndef BATON_SRC_BARRIER_H
#define BATON_SRC_BARRIER_H

#include <stdbool.h>

/* Register the process (once; any thread) and say whether the heavy
 * barrier works here. Cheap after the first call. */
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
