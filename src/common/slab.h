/* SPDX-License-Identifier: MIT */
/*
 * src/common/slab.h - cache-line aligned slots of one size, many to a heap
 * block: for small records that must each own their cache lines (a
 * channel: two on one line would bounce it between the workers using
 * them) without the leftovers an aligned allocation of each leaves. A
 * 128-byte record aligned alone takes 264 bytes of resident memory in
 * glibc's heap; in a slot it takes its 128 and a share of its block's
 * header line.
 *
 * Example:
 *
 *     static struct baton_slab_pool pool = BATON_SLAB_POOL_INIT(sizeof(struct rec));
 *     struct baton_slab *home;
 *     struct rec *r = baton__slab_get(&pool, &home);  // NULL: no memory
 *     ...
 *     baton__slab_put(&pool, home, r);                // r's slot is free
 *
 * Rules:
 *  - the slot size is a multiple of BATON_CACHELINE (at most a block's
 *    room: BATON_SLAB_BLOCK less one line); a pool is a static object,
 *    set up by BATON_SLAB_POOL_INIT;
 *  - the caller keeps `home` (the block the slot is in) and gives it back
 *    with the slot; a slot is put back once, into the pool it came from;
 *  - a slot comes uninitialised (a used one holds what its last owner
 *    left); any thread may get and put (one mutex per pool: not for hot
 *    paths), and a put is ordered after the get that hands the slot on;
 *  - a block is freed with its last slot, so a pool holds no memory while
 *    none of its slots is in use. Every block comes from baton__aligned
 *    (alloc.h), so an injected allocation failure reaches the caller as
 *    NULL. Under AddressSanitizer a free slot is poisoned: a use of a
 *    record after its put is reported.
 */
#ifndef BATON_SRC_SLAB_H
#define BATON_SRC_SLAB_H

#include <pthread.h>
#include <stddef.h>

#include "list.h"
#include "prelude.h"

/* The bytes of one block: its header line and as many slots as fit.
 * Four pages less a line, so that with the heap's chunk header and the
 * alignment's slack a block takes about four pages. */
#define BATON_SLAB_BLOCK (16384 - BATON_CACHELINE)

struct baton_slab;

struct baton_slab_pool {
	size_t size; /* a slot's bytes */
	pthread_mutex_t lock;
	struct baton_list partial; /* blocks with a free slot (their link) */
};

#define BATON_SLAB_POOL_INIT(slot_size)                                                       \
	{                                                                                     \
		.size = ((slot_size) + BATON_CACHELINE - 1) & ~(size_t)(BATON_CACHELINE - 1), \
		.lock = PTHREAD_MUTEX_INITIALIZER, .partial = BATON_LIST_INIT                 \
	}

/* A free slot of p's size, cache-line aligned, or NULL without memory;
 * *home gets its block, for baton__slab_put. */
void *baton__slab_get(struct baton_slab_pool *p, struct baton_slab **home);

/* Give back `slot`, got from p with `home`. */
void baton__slab_put(struct baton_slab_pool *p, struct baton_slab *home, void *slot);

#endif /* BATON_SRC_SLAB_H */
