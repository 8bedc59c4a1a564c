/* SPDX-License-Identifier: MIT */
/*
 * The asymmetric barrier (barrier.h): Linux's membarrier system call, or
 * the TLB shoot-down of an mprotect on x86-64.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc.h"
#include "barrier.h"
#include "prelude.h"

/* BARRIER_UNKNOWN until probed, then 1 + enum baton__barrier_kind. */
enum { BARRIER_UNKNOWN = 0 };

static int barrier_state; /* (atomic) */

/* The mprotect mechanism's page and the lock that serialises its users
 * (two at once would race each other's protection changes). */
static char *barrier_page;
static pthread_mutex_t barrier_page_lock = PTHREAD_MUTEX_INITIALIZER;

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

static bool probe_membarrier(void)
{
	long cmds = membarrier(MEMBARRIER_CMD_QUERY, 0);

	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
	    !(cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
		return false;
	/* Registering twice is harmless, so racing first callers may both. */
	return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
}

static bool probe_mprotect(void)
{
#if defined(__x86_64__)
	long psz = sysconf(_SC_PAGESIZE);
	void *p;

	/* Racing first callers: the loser's page is unmapped again. */
	p = baton__mmap((size_t)psz, PROT_READ | PROT_WRITE, MAP_PRIVATE);
	if (p == MAP_FAILED)
		return false;
	/* Locked, so the page stays mapped (a shoot-down needs a mapping);
	 * without the right to lock, mprotect keeps the page resident as
	 * long as we write it before each change, which we do. */
	(void)mlock(p, (size_t)psz);
	memset(p, 0, (size_t)psz);
	pthread_mutex_lock(&barrier_page_lock);
	if (barrier_page == NULL) {
		barrier_page = p;
		p = NULL;
	}
	pthread_mutex_unlock(&barrier_page_lock);
	if (p != NULL)
		baton__munmap(p, (size_t)psz);
	return true;
#else
	return false; /* no interrupt behind a TLB invalidation (barrier.h) */
#endif
}

static int barrier_probe(void)
{
	const char *force = getenv("BATON_BARRIER");
	bool want_mb = true, want_mp = true;

	if (BATON_TSAN)
		return 1 + BATON__BARRIER_FENCE; /* TSan cannot see the ordering */
	if (force != NULL && strcmp(force, "mprotect") == 0)
		want_mb = false;
	else if (force != NULL && strcmp(force, "fence") == 0)
		want_mb = want_mp = false;
	if (want_mb && probe_membarrier())
		return 1 + BATON__BARRIER_MEMBARRIER;
	if (want_mp && probe_mprotect())
		return 1 + BATON__BARRIER_MPROTECT;
	return 1 + BATON__BARRIER_FENCE;
}

enum baton__barrier_kind baton__barrier_kind(void)
{
	/* Acquire: a caller that sees the kind sees the registration (and
	 * the page) that the prober made before storing it. */
	int s = __atomic_load_n(&barrier_state, __ATOMIC_ACQUIRE);

	if (BATON_UNLIKELY(s == BARRIER_UNKNOWN)) {
		s = barrier_probe();
		/* Release: pairs with the acquire above. */
		__atomic_store_n(&barrier_state, s, __ATOMIC_RELEASE);
	}
	return (enum baton__barrier_kind)(s - 1);
}

bool baton__barrier_available(void)
{
	return baton__barrier_kind() != BATON__BARRIER_FENCE;
}

#ifndef MEMBARRIER_CMD_GLOBAL
#define MEMBARRIER_CMD_GLOBAL MEMBARRIER_CMD_SHARED /* its name before Linux 4.16 */
#endif

static void heavy_mprotect(void)
{
	long psz = sysconf(_SC_PAGESIZE);

	pthread_mutex_lock(&barrier_page_lock);
	/* Write first: the page is then dirty and mapped read-write on this
	 * CPU, and the downgrade below must flush it from every CPU of the
	 * process. A failed mprotect would leave no barrier behind it. */
	if (mprotect(barrier_page, (size_t)psz, PROT_READ | PROT_WRITE) != 0)
		abort();
	/* Relaxed: the store only needs to reach the page, not to order. */
	__atomic_store_n(barrier_page, (char)(barrier_page[0] + 1), __ATOMIC_RELAXED);
	if (mprotect(barrier_page, (size_t)psz, PROT_READ) != 0)
		abort();
	pthread_mutex_unlock(&barrier_page_lock);
}

void baton__barrier_heavy(void)
{
	/* Seq_cst fences: our own side of the pattern, before and after. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (baton__barrier_kind() == BATON__BARRIER_MPROTECT) {
		heavy_mprotect();
	} else if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0 &&
		   membarrier(MEMBARRIER_CMD_GLOBAL, 0) != 0) {
		/* Fails only for a process that is not registered, which
		 * cannot happen: a fork keeps the registration
		 * (tests/seq/test_seq.c checks it), an exec starts a program that
		 * registers anew. Should it fail all the same, the global
		 * command (no registration, an RCU grace period:
		 * milliseconds) gives the same guarantee; callers rely on one
		 * of them, so there is no silent failure. */
		abort();
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
