/* SPDX-License-Identifier: MIT */
/*
 * Hazard pointers whose slots belong to whoever acquired them (baton/smr.h).
 *
 * Retired objects wait in one array per domain. When it holds hp_bound =
 * max(2 H, BATON_SMR_BATCH) objects (H: slots made), the retiring thread
 * runs the asymmetric barrier, reads every slot and frees each object no
 * slot names: at most H survive (a slot names one object), so the array
 * never holds more than hp_bound, whatever a stalled reader does.
 */
#include <string.h>

#include "../common/alloc.h"
#include "smr_internal.h"

int baton__smr_hp_init(struct baton_smr *d)
{
	return pthread_mutex_init(&d->hp_lock, NULL) == 0 ? BATON_OK : BATON_ENOMEM;
}

size_t baton__smr_hp_bound(struct baton_smr *d)
{
	/* Relaxed: H only grows; a stale value gives a smaller bound, and
	 * the scan then runs a little early. */
	uint64_t h = __atomic_load_n(&d->nhps, __ATOMIC_RELAXED);

	return h * 2 > BATON_SMR_BATCH ? (size_t)h * 2 : BATON_SMR_BATCH;
}

int baton_smr_hp_acquire(baton_smr_t *d, baton_smr_hp_t **out)
{
	struct baton_smr_hp *h;

	if (d == NULL || out == NULL)
		return BATON_EINVAL;
	/* Acquire: a slot's fields were set before it was linked. */
	for (h = __atomic_load_n(&d->hps, __ATOMIC_ACQUIRE); h; h = h->next) {
		int free_ = 0;

		/* Acquire: the previous owner's release is seen. */
		if (__atomic_load_n(&h->owned, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&h->owned, &free_, 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			*out = h;
			return BATON_OK;
		}
	}
	h = baton__aligned(BATON_CACHELINE, sizeof(*h));
	if (h == NULL)
		return BATON_ENOMEM;
	memset(h, 0, sizeof(*h));
	h->owned = 1;
	h->d = d;
	baton__spin_lock(&d->lock);
	h->next = d->hps;
	/* Release: scanners and acquirers traverse with acquire. */
	__atomic_store_n(&d->hps, h, __ATOMIC_RELEASE);
	/* Relaxed: read as a bound only (baton__smr_hp_bound). */
	__atomic_store_n(&d->nhps, __atomic_load_n(&d->nhps, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	baton__spin_unlock(&d->lock);
	*out = h;
	return BATON_OK;
}

int baton_smr_hp_protect(baton_smr_hp_t *hp, void *const *src, void **out)
{
	void *p, *q;

	if (hp == NULL || src == NULL || out == NULL)
		return BATON_EINVAL;
	/* Acquire: the object's contents, published before the pointer. */
	p = __atomic_load_n(src, __ATOMIC_ACQUIRE);
	for (;;) {
		/* Relaxed: the heavy side's barrier orders this store before
		 * the re-read below (smr.h, hazard pointers). */
		__atomic_store_n(&hp->ptr, p, __ATOMIC_RELAXED);
		baton__smr_light(hp->d);
		q = __atomic_load_n(src, __ATOMIC_ACQUIRE); /* as above */
		if (q == p)
			break;
		p = q;
	}
	*out = p;
	return BATON_OK;
}

int baton_smr_hp_clear(baton_smr_hp_t *hp)
{
	if (hp == NULL)
		return BATON_EINVAL;
	/* Release: the reader's uses of the object come before a scan that
	 * sees the slot empty (its acquire) and frees it. */
	__atomic_store_n(&hp->ptr, NULL, __ATOMIC_RELEASE);
	return BATON_OK;
}

int baton_smr_hp_release(baton_smr_hp_t *hp)
{
	if (hp == NULL)
		return BATON_EINVAL;
	baton_smr_hp_clear(hp);
	/* Release: the next owner starts after our last use. */
	__atomic_store_n(&hp->owned, 0, __ATOMIC_RELEASE);
	return BATON_OK;
}

static bool named(struct baton_smr *d, const void *p)
{
	/* Acquire (both): the slot list, and a reader's clear (release). */
	for (struct baton_smr_hp *h = __atomic_load_n(&d->hps, __ATOMIC_ACQUIRE); h; h = h->next)
		if (__atomic_load_n(&h->ptr, __ATOMIC_ACQUIRE) == p)
			return true;
	return false;
}

/* Free every retired object no slot names (hp_lock held). */
static void scan(struct baton_smr *d)
{
	size_t keep = 0;

	/* The retired objects were unpublished before; after the barrier a
	 * protect that the slots below do not show re-reads its source and
	 * finds them gone. */
	baton__smr_heavy(d);
	for (size_t i = 0; i < d->hp_n; i++) {
		if (named(d, d->hp_objs[i].ptr)) {
			d->hp_objs[keep++] = d->hp_objs[i];
		} else {
			d->hp_objs[i].fn(d->hp_objs[i].ptr);
			d->hp_freed++;
		}
	}
	d->hp_n = keep;
}

int baton_smr_hp_retire(baton_smr_t *d, void *ptr, baton_smr_free_fn free_fn)
{
	if (d == NULL || free_fn == NULL)
		return BATON_EINVAL;
	pthread_mutex_lock(&d->hp_lock);
	if (d->hp_n == d->hp_cap) {
		size_t cap = d->hp_cap ? d->hp_cap * 2 : BATON_SMR_BATCH;
		struct smr_obj *a = baton__realloc(d->hp_objs, cap * sizeof(*a));

		if (a == NULL) {
			pthread_mutex_unlock(&d->hp_lock);
			return BATON_ENOMEM;
		}
		d->hp_objs = a;
		d->hp_cap = cap;
	}
	d->hp_objs[d->hp_n++] = (struct smr_obj){ ptr, free_fn };
	d->hp_retired++;
	if (d->hp_n >= baton__smr_hp_bound(d))
		scan(d);
	pthread_mutex_unlock(&d->hp_lock);
	return BATON_OK;
}

bool baton__smr_hp_busy(struct baton_smr *d)
{
	for (struct baton_smr_hp *h = __atomic_load_n(&d->hps, __ATOMIC_ACQUIRE); h; h = h->next)
		/* Acquire: pairs with release's store. */
		if (__atomic_load_n(&h->owned, __ATOMIC_ACQUIRE))
			return true;
	return false;
}

/* The domain ends: no slot is held, so nothing retired is named. */
void baton__smr_hp_fini(struct baton_smr *d)
{
	struct baton_smr_hp *h, *next;

	for (size_t i = 0; i < d->hp_n; i++)
		d->hp_objs[i].fn(d->hp_objs[i].ptr);
	baton__free(d->hp_objs);
	for (h = d->hps; h; h = next) {
		next = h->next;
		baton__free(h);
	}
	pthread_mutex_destroy(&d->hp_lock);
}
