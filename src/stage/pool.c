/* SPDX-License-Identifier: MIT */
/*
 * Resource pools: FIFO units (src/sync/units.h) with a capacity that may
 * change, a name and an id. A capacity below the use is a state where
 * nothing fits: shrinking takes nothing back, and acquisitions resume once
 * releases bring the use under the new capacity.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "stage_internal.h"

static uint64_t next_pool_id;

int baton_pool_create(baton_pool_t **out, const char *name, long capacity)
{
	struct baton_pool *p;

	if (out == NULL || capacity < 0)
		return BATON_EINVAL;
	p = baton__calloc(1, sizeof(*p));
	if (p == NULL)
		return BATON_ENOMEM;
	if (!baton__name_copy(p->name, sizeof(p->name), name)) { /* an identifier */
		baton__free(p);
		return BATON_EINVAL;
	}
	baton__units_init(&p->u, capacity);
	/* Relaxed: only uniqueness and order of the ids matter. */
	p->id = __atomic_fetch_add(&next_pool_id, 1, __ATOMIC_RELAXED);
	*out = p;
	return BATON_OK;
}

int baton_pool_acquire(baton_pool_t *p, long n, int64_t timeout_ns)
{
	if (p == NULL || n < 1)
		return BATON_EINVAL;
	return baton__units_acquire(&p->u, n, timeout_ns);
}

int baton_pool_release(baton_pool_t *p, long n)
{
	if (p == NULL || n < 1)
		return BATON_EINVAL;
	/* Refused when n exceeds the units in use. */
	return baton__units_release(&p->u, n) ? BATON_OK : BATON_EPERM;
}

int baton_pool_set_capacity(baton_pool_t *p, long capacity)
{
	if (p == NULL || capacity < 0)
		return BATON_EINVAL;
	baton__units_set_capacity(&p->u, capacity);
	return BATON_OK;
}

int baton_pool_snapshot(baton_pool_t *p, struct baton_pool_stats *out)
{
	if (p == NULL || out == NULL)
		return BATON_EINVAL;
	baton__spin_lock(&p->u.lock);
	out->name = p->name;
	out->capacity = p->u.capacity;
	out->in_use = p->u.capacity - p->u.avail;
	out->waiters = baton__units_waiting(&p->u);
	out->acquired = p->u.acquired;
	out->refused = p->u.refused;
	baton__spin_unlock(&p->u.lock);
	return BATON_OK;
}

int baton_pool_destroy(baton_pool_t *p)
{
	bool busy;

	if (p == NULL)
		return BATON_OK;
	baton__spin_lock(&p->u.lock);
	/* Timed-out waiters too: they take the lock to unlink themselves. */
	busy = p->u.avail != p->u.capacity || p->users > 0 || !baton__waitq_empty(&p->u.waiters);
	baton__spin_unlock(&p->u.lock);
	if (busy)
		return BATON_EBUSY;
	baton__free(p);
	return BATON_OK;
}

/* --- needs: what stages and gates share ------------------------------------ */

bool baton__needs_sort(struct baton_stage_need *dst, const struct baton_stage_need *src, size_t n)
{
	if (n > BATON_STAGE_MAX_NEEDS || (n > 0 && src == NULL))
		return false;
	/* Insertion sort by creation id (at most 8), each checked. */
	for (size_t i = 0; i < n; i++) {
		struct baton_stage_need nd = src[i];
		size_t j = i;

		if (nd.pool == NULL || nd.units < 1 || (nd.flags & ~BATON_STAGE_KEEP))
			return false;
		for (; j > 0 && dst[j - 1].pool->id > nd.pool->id; j--)
			dst[j] = dst[j - 1];
		dst[j] = nd;
	}
	for (size_t i = 1; i < n; i++)
		if (dst[i].pool == dst[i - 1].pool)
			return false;
	return true;
}

void baton__needs_use(const struct baton_stage_need *needs, size_t n, long delta)
{
	for (size_t i = 0; i < n; i++) {
		baton__spin_lock(&needs[i].pool->u.lock);
		needs[i].pool->users += delta;
		baton__spin_unlock(&needs[i].pool->u.lock);
	}
}
