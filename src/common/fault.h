/* SPDX-License-Identifier: MIT */
/*
 * src/common/fault.h - the knob of the allocation-failure mode, for tests.
 *
 * A build configured with -DBATON_FAULT_INJECTION=ON (the asan and tsan
 * presets) counts every allocation the library makes (malloc, calloc,
 * realloc, aligned blocks, strdup, mmap: src/common/alloc.h) and can make
 * chosen ones fail as if the system were out of memory. Every public call
 * must then either succeed or return BATON_ENOMEM, leak nothing and leave
 * its objects usable (tests/fault/test_faults.c sweeps this). In other builds
 * these calls do not exist.
 *
 * The count is process-wide (one atomic counter: allocations made by any
 * thread count), and setting a mode restarts it from zero. Set modes while
 * no other thread allocates, or accept that the allocation failed is
 * whichever comes k-th.
 *
 * A program is put under the every-Nth mode from outside with the
 * environment, read at its first allocation:
 *   BATON_FAIL_EVERY=N   every N-th allocation fails (N >= 1)
 *   BATON_FAIL_AFTER=K   none of the first K does (a server's start-up)
 */
#ifndef BATON_SRC_FAULT_H
#define BATON_SRC_FAULT_H

/* From now on, fail allocation number k, k + n, k + 2n... counting from 1
 * (n = 0: only the k-th; k = 0: none). Restarts the count. */
void baton__fault_set(unsigned long k, unsigned long n);

/* The two modes the tests use: only the k-th, and every n-th. */
static inline void baton__fault_fail_nth(unsigned long k)
{
	baton__fault_set(k, 0);
}

static inline void baton__fault_fail_every(unsigned long n)
{
	baton__fault_set(n, n);
}

/* Allocations counted, and failures injected, since the last set. */
unsigned long baton__fault_count(void);
unsigned long baton__fault_injected(void);

#endif /* BATON_SRC_FAULT_H */
