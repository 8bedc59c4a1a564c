/*
 * The asymmetric barrier (barrier.h) on Linux's membarrier system call.
 */
#include <errno.h>
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

void baton__barrier_heavy(void)
{
	/* Registered by baton__barrier_available(): cannot fail but for
	 * EINTR-free kernel errors we cannot handle; a full fence of our own
	 * keeps our side ordered whatever happens. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0)
		__builtin_trap(); /* registered first: the kernel promised it */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
