/* SPDX-License-Identifier: MIT */
/*
 * Slots many to a block (slab.h). A block is its header line, then its
 * slots. Slots never handed out are taken in address order (`fresh`), so
 * a new block touches its pages one at a time as they are used; slots
 * given back are kept in a list through their first word and handed out
 * again before any fresh one.
 */
#include "slab.h"

#include "alloc.h"
#include "sanitizer.h"

struct baton_slab {
	struct baton_list_node link; /* in pool->partial while a slot is free */
	void *free;                  /* slots given back: a list through their first word */
	unsigned used;               /* slots handed out */
	unsigned fresh;              /* slots [fresh, n) never handed out */
} __attribute__((aligned(BATON_CACHELINE)));

_Static_assert(sizeof(struct baton_slab) == BATON_CACHELINE, "a block's header is one line");

/* Under AddressSanitizer a free slot is poisoned but for its first word
 * (the free list's link), which only this file touches. */
static void slot_poison(void *slot, size_t size)
{
#if BATON_ASAN
	ASAN_POISON_MEMORY_REGION((char *)slot + sizeof(void *), size - sizeof(void *));
#endif
	(void)slot;
	(void)size;
}

static void slot_unpoison(void *slot, size_t size)
{
#if BATON_ASAN
	ASAN_UNPOISON_MEMORY_REGION(slot, size);
#endif
	(void)slot;
	(void)size;
}

static unsigned slots_per_block(const struct baton_slab_pool *p)
{
	return (unsigned)((BATON_SLAB_BLOCK - sizeof(struct baton_slab)) / p->size);
}

static char *slot_at(struct baton_slab *b, const struct baton_slab_pool *p, unsigned i)
{
	return (char *)(b + 1) + (size_t)i * p->size;
}

void *baton__slab_get(struct baton_slab_pool *p, struct baton_slab **home)
{
	struct baton_slab *b;
	void *slot;

	pthread_mutex_lock(&p->lock);
	b = BATON_LIST_ENTRY_OF(baton__list_first(&p->partial), b, link);
	if (b == NULL) {
		/* Only the header is written: the slots come as they are. */
		b = baton__aligned(BATON_CACHELINE, BATON_SLAB_BLOCK);
		if (b == NULL) {
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		*b = (struct baton_slab){ .free = NULL };
		baton__list_push_head(&p->partial, &b->link);
	}
	if (b->free) {
		slot = b->free;
		b->free = *(void **)slot;
	} else {
		slot = slot_at(b, p, b->fresh++);
	}
	if (++b->used == slots_per_block(p))
		baton__list_remove(&p->partial, &b->link); /* full */
	pthread_mutex_unlock(&p->lock);
	slot_unpoison(slot, p->size);
	*home = b;
	return slot;
}

void baton__slab_put(struct baton_slab_pool *p, struct baton_slab *b, void *slot)
{
	bool was_full;

	pthread_mutex_lock(&p->lock);
	was_full = b->used-- == slots_per_block(p);
	if (b->used == 0) {
		/* Its last slot: the block goes (from the list, unless it
		 * held one slot only and was never there while used). */
		if (!was_full)
			baton__list_remove(&p->partial, &b->link);
		pthread_mutex_unlock(&p->lock);
		slot_unpoison(b, BATON_SLAB_BLOCK);
		baton__free(b);
		return;
	}
	*(void **)slot = b->free;
	b->free = slot;
	slot_poison(slot, p->size);
	if (was_full)
		baton__list_push_head(&p->partial, &b->link);
	pthread_mutex_unlock(&p->lock);
}
