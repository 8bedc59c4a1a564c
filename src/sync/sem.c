/* SPDX-License-Identifier: MIT */
/*
 * Counting semaphores, served strictly in arrival order: FIFO units
 * (units.h) with no bound, whose free units are the semaphore's value.
 */
#include <limits.h>
#include <stdlib.h>

#include "../common/alloc.h"
#include "units.h"

struct baton_sem {
	struct baton_units u; /* avail: the value */
};

int baton_sem_create(baton_sem_t **out, long initial)
{
	struct baton_sem *s;

	if (out == NULL || initial < 0)
		return BATON_EINVAL;
	s = baton__malloc(sizeof(*s));
	if (s == NULL)
		return BATON_ENOMEM;
	baton__units_init(&s->u, LONG_MAX);
	s->u.avail = initial;
	*out = s;
	return BATON_OK;
}

int baton_sem_acquire(baton_sem_t *s, long n, int64_t timeout_ns)
{
	if (s == NULL || n < 1)
		return BATON_EINVAL;
	return baton__units_acquire(&s->u, n, timeout_ns);
}

int baton_sem_release(baton_sem_t *s, long n)
{
	if (s == NULL || n < 1)
		return BATON_EINVAL;
	/* Refused only when the value would overflow. */
	return baton__units_release(&s->u, n) ? BATON_OK : BATON_EINVAL;
}

long baton_sem_value(baton_sem_t *s)
{
	long v;

	if (s == NULL)
		return BATON_EINVAL;
	baton__spin_lock(&s->u.lock);
	v = s->u.avail;
	baton__spin_unlock(&s->u.lock);
	return v;
}

int baton_sem_destroy(baton_sem_t *s)
{
	if (s == NULL)
		return BATON_OK;
	if (baton__units_has_waiters(&s->u)) /* timed-out waiters too */
		return BATON_EBUSY;
	baton__free(s);
	return BATON_OK;
}
