/*
 * The asymmetric barrier (barrier.h) on Linux's membarrier system call.
 */
#include <errno.h>
#include <stdlib.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "barrier.h"
#include "prelude.h"

enum { BARRIER_UNKNOWN = 0, BARRIER_YES = 1, BARRIER_NO = 2 };

static int barrier_state; /* BARRIER_* (atomic) */

static long membarrier(int cmd, unsigned flags)
{
#if defined(SYS_membarrier)
	return syscall(SYS_membarrier, cmd, flags, 0);
#else
	(void)cmd;
	(void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

static int barrier_probe(void)
{
	long cmds;

	if (BATON_TSAN)
		return BARRIER_NO; /* TSan cannot see the ordering it gives */
	cmds = membarrier(MEMBARRIER_CMD_QUERY, 0);
	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
	    !(cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
		return BARRIER_NO;
	/* Registering twice is harmless, so racing first callers may both. */
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) != 0)
		return BARRIER_NO;
	return BARRIER_YES;
}

bool baton__barrier_available(void)
{
	/* Acquire: a caller that sees YES sees the registration done. */
	int s = __atomic_load_n(&barrier_state, __ATOMIC_ACQUIRE);

	if (BATON_UNLIKELY(s == BARRIER_UNKNOWN)) {
		s = barrier_probe();
		/* Release: pairs with the acquire above. */
		__atomic_store_n(&barrier_state, s, __ATOMIC_RELEASE);
	}
	return s == BARRIER_YES;
}

#ifndef MEMBARRIER_CMD_GLOBAL
#define MEMBARRIER_CMD_GLOBAL MEMBARRIER_CMD_SHARED /* its name before Linux 4.16 */
#endif

void baton__barrier_heavy(void)
{
	/* Seq_cst fences: our own side of the pattern, before and after. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* Fails only for a process that is not registered, which cannot
	 * happen: a fork keeps the registration (tests/test_seq.c checks it),
	 * an exec starts a program that registers anew. Should it fail all
	 * the same, the global command (no registration, an RCU grace period:
	 * milliseconds) gives the same guarantee; callers rely on one of
	 * them, so there is no silent failure. */
	if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0 &&
	    membarrier(MEMBARRIER_CMD_GLOBAL, 0) != 0)
		abort();
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
