/* SPDX-License-Identifier: MIT */
/*
 * The allocation-failure mode (fault.h): one process-wide count of the
 * library's allocations and the rule saying which of them fail. Compiled
 * only with BATON_FAULT_INJECTION; alloc.h asks baton__alloc_fails()
 * before each allocation.
 */
#include <pthread.h>

#include "alloc.h"

#if BATON_FAULT_INJECTION

/* The rule: fail allocation `first`, then every `every` after it (0: no
 * more); first == 0 fails none. Set while no other thread allocates (the
 * stores are relaxed: a racing allocation may still see the old rule). */
static unsigned long first, every;
static unsigned long counted, injected;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static unsigned long env_number(const char *name)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (v == NULL || *v == '\0')
		return 0;
	n = strtoul(v, &end, 10);
	return *end == '\0' ? n : 0;
}

static void set_rule(unsigned long k, unsigned long n)
{
	/* Relaxed: see the rule's comment. */
	__atomic_store_n(&first, k, __ATOMIC_RELAXED);
	__atomic_store_n(&every, n, __ATOMIC_RELAXED);
	__atomic_store_n(&counted, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&injected, 0, __ATOMIC_RELAXED);
}

/* BATON_FAIL_EVERY=N, BATON_FAIL_AFTER=K: N-th, 2N-th... after the K-th. */
static void read_env(void)
{
	unsigned long n = env_number("BATON_FAIL_EVERY");

	if (n > 0)
		set_rule(env_number("BATON_FAIL_AFTER") + n, n);
}

void baton__fault_set(unsigned long k, unsigned long n)
{
	pthread_once(&env_once, read_env); /* later, it would override us */
	set_rule(k, n);
}

unsigned long baton__fault_count(void)
{
	/* Relaxed: a count; the reader has joined whoever allocated. */
	return __atomic_load_n(&counted, __ATOMIC_RELAXED);
}

unsigned long baton__fault_injected(void)
{
	/* Relaxed: as above. */
	return __atomic_load_n(&injected, __ATOMIC_RELAXED);
}

bool baton__alloc_fails(void)
{
	unsigned long i, k, n;

	pthread_once(&env_once, read_env);
	/* Relaxed: each allocation gets its own number; no other memory is
	 * ordered by the count. */
	i = __atomic_add_fetch(&counted, 1, __ATOMIC_RELAXED);
	/* Relaxed: the rule, see above. */
	k = __atomic_load_n(&first, __ATOMIC_RELAXED);
	n = __atomic_load_n(&every, __ATOMIC_RELAXED);
	if (k == 0 || i < k || (i != k && (n == 0 || (i - k) % n != 0)))
		return false;
	/* Relaxed: a count, as above. */
	__atomic_add_fetch(&injected, 1, __ATOMIC_RELAXED);
	errno = ENOMEM;
	return true;
}

#endif /* BATON_FAULT_INJECTION */
