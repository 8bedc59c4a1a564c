/* SPDX-License-Identifier: MIT */
/*
 * Stack arenas: the stacks of stackful coroutines carved from large
 * mappings, so that the number of live coroutines is not bounded by the
 * kernel's limit on mappings per process (vm.max_map_count).
 *
 * A slot is one stack: [low pages][usable stack][top pages: control block].
 * Slots of one size and one kind come from arenas of about 32 MiB
 * (MAP_NORESERVE: untouched pages cost address space only). Two kinds:
 *
 *  - guarded: the low pages are made PROT_NONE, so an overflow faults there
 *    and is reported by name (stack.c). Each guard page splits the arena's
 *    mapping, two mappings per stack, as a stack of its own would cost.
 *  - canary: no guard page; the coroutine layer checks a canary word at
 *    the bottom of the stack at every switch away from the coroutine.
 *
 * Guarded slots are the default while the mappings they split stay within
 * a budget: three quarters of vm.max_map_count, halved (two mappings per
 * guarded stack), leaving a quarter to the program. Past it, new stacks are
 * canary slots (BATON_STACK_GUARD_BUDGET overrides the budget, for tests).
 *
 * Arenas are process-wide (a stackful coroutine may be created on one
 * thread and destroyed on another) behind one mutex; the per-thread pool of
 * stack.c keeps that off the hot path. A slot given back stays dirty (its
 * pages resident) while few are: freeing a burst of tasks then costs no
 * system call, and above all no TLB shoot-down interrupting the other
 * workers. Past BATON_DIRTY_MAX dirty free slots, the oldest are released
 * with MADV_DONTNEED (MADV_FREE would leave them counted in RSS until the
 * kernel is short of memory, which is what a user reading RSS after a
 * burst does not expect). An arena whose slots are all free is unmapped,
 * but for spares per kind and size.
 *
 * Both bounds scale with the recent peak (halved every second or so, as
 * arenas are taken and given): up to as many empty arenas as were in use
 * at the peak are kept, and up to as many dirty slots as were in use at
 * the peak (at least BATON_DIRTY_MAX), both within BATON_KEEP_MAX slots
 * (a burst of a million tasks keeps no more than one of 32,768 would).
 * So the end of a burst - a group of
 * 10,000 tasks cancelled at once - gives its stacks back without a
 * system call (each munmap of an arena whose stacks ran cost about a
 * millisecond, docs/sched.md), and the memory the burst used is released
 * over the next seconds of activity, or at once by baton_coro_pool_trim.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "../common/alloc.h"
#include "coro_internal.h"

#define ARENA_BYTES (32u * 1024u * 1024u)
#define MAX_CLASSES 16
#define BATON_DIRTY_MAX 8192u      /* dirty free slots kept, all classes (at least) */
#define PEAK_DECAY_NS 1000000000LL /* the recent peaks are halved this often */
#define BATON_KEEP_MAX 32768u      /* what a peak keeps, at most: slots */

struct baton_arena {
	struct baton_arena *next, *prev; /* in its class's avail or full list */
	bool full;                       /* no free and no uncarved slot: in `full` */
	struct baton_arena_class *cls;
	char *base;
	unsigned nslots;    /* slots in the mapping */
	unsigned carved;    /* slots [0, carved) have been handed out once */
	unsigned used;      /* slots handed out now */
	unsigned nfree;     /* entries in free_idx */
	unsigned ndirty;    /* free slots whose pages are still resident */
	uint32_t *free_idx; /* free slot indices, most recently freed last */
	uint8_t *dirty;     /* per slot: its pages may be resident */
};

struct baton_arena_class {
	size_t slot_size;
	bool guarded;
	struct baton_arena *avail; /* arenas with a slot to give */
	struct baton_arena *full;  /* the others (kept apart: never scanned) */
	unsigned nempty;           /* arenas with no slot in use (kept) */
	unsigned inuse;            /* arenas with a slot in use */
	unsigned peak;             /* inuse's recent peak: empty ones kept */
};

static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static struct baton_arena_class classes[MAX_CLASSES];
static unsigned nclasses;
static unsigned dirty_total;   /* dirty free slots, all arenas */
static unsigned used_total;    /* slots in use, all arenas */
static unsigned used_peak;     /* its recent peak: dirty slots kept */
static int64_t peak_at;        /* when the peaks were last halved */
static long guarded_live;      /* guarded slots carved in live arenas */
static long guard_budget = -1; /* guarded slots allowed; -1: not read */

static long read_budget(void)
{
	const char *env = getenv("BATON_STACK_GUARD_BUDGET");
	long max_maps = 65530;
	FILE *f;

	if (env && *env)
		return atol(env) > 0 ? atol(env) : 0;
	f = fopen("/proc/sys/vm/max_map_count", "re");
	if (f) {
		if (fscanf(f, "%ld", &max_maps) != 1)
			max_maps = 65530;
		fclose(f);
	}
	return max_maps / 4 * 3 / 2;
}

static struct baton_arena_class *class_of(size_t slot_size, bool guarded)
{
	for (unsigned i = 0; i < nclasses; i++)
		if (classes[i].slot_size == slot_size && classes[i].guarded == guarded)
			return &classes[i];
	if (nclasses == MAX_CLASSES)
		return NULL;
	classes[nclasses].slot_size = slot_size;
	classes[nclasses].guarded = guarded;
	return &classes[nclasses++];
}

static struct baton_arena **list_of(struct baton_arena_class *c, struct baton_arena *a)
{
	return a->full ? &c->full : &c->avail;
}

static void link_arena(struct baton_arena_class *c, struct baton_arena *a)
{
	struct baton_arena **head = list_of(c, a);

	a->prev = NULL;
	a->next = *head;
	if (*head)
		(*head)->prev = a;
	*head = a;
}

static void unlink_arena(struct baton_arena_class *c, struct baton_arena *a)
{
	if (a->prev)
		a->prev->next = a->next;
	else
		*list_of(c, a) = a->next;
	if (a->next)
		a->next->prev = a->prev;
}

/* Keep `full` in step with the arena's state. */
static void refile(struct baton_arena *a)
{
	bool full = a->nfree == 0 && a->carved == a->nslots;

	if (full == a->full)
		return;
	unlink_arena(a->cls, a);
	a->full = full;
	link_arena(a->cls, a);
}

static struct baton_arena *arena_new(struct baton_arena_class *c)
{
	size_t nslots = ARENA_BYTES / c->slot_size;
	struct baton_arena *a;

	if (nslots == 0)
		nslots = 1;
	a = baton__calloc(1, sizeof(*a));
	if (a == NULL)
		return NULL;
	a->free_idx = baton__malloc(nslots * sizeof(*a->free_idx));
	a->dirty = baton__calloc(nslots, 1);
	a->base = baton__mmap(nslots * c->slot_size, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_NORESERVE | MAP_STACK);
	if (a->free_idx == NULL || a->dirty == NULL || a->base == MAP_FAILED) {
		if (a->base != MAP_FAILED && a->base != NULL)
			baton__munmap(a->base, nslots * c->slot_size);
		baton__free(a->free_idx);
		baton__free(a->dirty);
		baton__free(a);
		return NULL;
	}
	a->cls = c;
	a->nslots = (unsigned)nslots;
	c->nempty++;
	link_arena(c, a);
	return a;
}

static void arena_free(struct baton_arena *a)
{
	size_t bytes = (size_t)a->nslots * a->cls->slot_size;

	unlink_arena(a->cls, a);
	if (a->used == 0)
		a->cls->nempty--;
	dirty_total -= a->ndirty;
	if (a->cls->guarded)
		guarded_live -= a->carved;
	/* AddressSanitizer keeps the shadow of unmapped memory. */
	baton__sanitizer_unpoison(a->base, bytes);
	baton__munmap(a->base, bytes);
	baton__free(a->free_idx);
	baton__free(a->dirty);
	baton__free(a);
}

/* Release a free slot's pages (not the mapping): it costs no RSS now. */
static void slot_release(struct baton_arena *a, uint32_t i)
{
	char *p = a->base + (size_t)i * a->cls->slot_size;
	size_t low = BATON_STACK_LOW_PAGES * baton__stack_page();

	baton__sanitizer_unpoison(p + low, a->cls->slot_size - low);
	madvise(p + low, a->cls->slot_size - low, MADV_DONTNEED);
	a->dirty[i] = 0;
	a->ndirty--;
	dirty_total--;
}

/* The dirty free slots kept: the recent peak of slots in use, at least
 * BATON_DIRTY_MAX. */
static unsigned dirty_bound(void)
{
	unsigned peak = used_peak < BATON_KEEP_MAX ? used_peak : BATON_KEEP_MAX;

	return peak > BATON_DIRTY_MAX ? peak : BATON_DIRTY_MAX;
}

/* Too many dirty free slots: release down to half the bound, oldest
 * frees first (the front of each arena's free list). */
static void release_excess(void)
{
	unsigned half = dirty_bound() / 2;

	for (unsigned c = 0; c < nclasses && dirty_total > half; c++)
		for (struct baton_arena *a = classes[c].avail; /* free: avail */
		     a && dirty_total > half; a = a->next)
			for (unsigned k = 0; k < a->nfree && a->ndirty && dirty_total > half; k++)
				if (a->dirty[a->free_idx[k]])
					slot_release(a, a->free_idx[k]);
}

/* Unmap c's empty arenas past the bound: as many as were in use at the
 * recent peak, within BATON_KEEP_MAX slots (one at least). */
static void free_empty_excess(struct baton_arena_class *c)
{
	size_t per = ARENA_BYTES / c->slot_size;
	unsigned cap = (unsigned)(BATON_KEEP_MAX / (per ? per : 1));
	unsigned keep = c->peak < cap ? c->peak : cap;

	if (keep < 1)
		keep = 1;

	for (struct baton_arena *a = c->avail, *next; a && c->nempty > keep; a = next) {
		next = a->next;
		if (a->used == 0)
			arena_free(a);
	}
}

/* Once a second or so, as arenas are taken and given: the recent peaks
 * are halved (not below what is in use now), and what they no longer
 * cover is released. A coarse clock: a vDSO read, no system call. */
static void peaks_decay(void)
{
	struct timespec ts;
	int64_t now;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	if (now - peak_at < PEAK_DECAY_NS)
		return;
	peak_at = now;
	used_peak = used_peak / 2 > used_total ? used_peak / 2 : used_total;
	for (unsigned i = 0; i < nclasses; i++) {
		struct baton_arena_class *c = &classes[i];

		c->peak = c->peak / 2 > c->inuse ? c->peak / 2 : c->inuse;
		free_empty_excess(c);
	}
	if (dirty_total > dirty_bound())
		release_excess();
}

/* A new slot of arena a: the next uncarved one, its guard page set. */
static int carve(struct baton_arena *a, uint32_t *idx)
{
	char *p = a->base + (size_t)a->carved * a->cls->slot_size;

	if (a->cls->guarded) {
		if (guarded_live >= guard_budget ||
		    mprotect(p, BATON_STACK_LOW_PAGES * baton__stack_page(), PROT_NONE) != 0)
			return BATON_ENOMEM; /* the mapping limit, after all */
		guarded_live++;
	}
	*idx = a->carved++;
	return BATON_OK;
}

/* A slot of class c, or an error; arena_lock held. */
static int class_take(struct baton_arena_class *c, struct baton_arena **out, uint32_t *idx)
{
	struct baton_arena *a;

	/* Every arena on `avail` has a free or an uncarved slot; a carve
	 * refused by the kernel moves on to the next. */
	for (a = c->avail; a; a = a->next) {
		if (a->nfree > 0) {
			*idx = a->free_idx[--a->nfree]; /* warmest first */
			if (a->dirty[*idx]) {
				a->dirty[*idx] = 0;
				a->ndirty--;
				dirty_total--;
			}
			goto got;
		}
		if (a->carved < a->nslots && carve(a, idx) == BATON_OK)
			goto got;
	}
	if (c->guarded && guarded_live >= guard_budget)
		return BATON_ENOMEM;
	a = arena_new(c);
	if (a == NULL)
		return BATON_ENOMEM;
	if (carve(a, idx) != BATON_OK) {
		if (a->used == 0 && a->carved == 0)
			arena_free(a);
		return BATON_ENOMEM;
	}
got:
	if (a->used++ == 0) {
		c->nempty--;
		if (++c->inuse > c->peak)
			c->peak = c->inuse;
	}
	if (++used_total > used_peak)
		used_peak = used_total;
	refile(a);
	*out = a;
	return BATON_OK;
}

int baton__arena_take(size_t slot_size, bool want_guard, void **map, struct baton_arena **arena,
		      bool *guarded)
{
	struct baton_arena_class *c;
	uint32_t idx = 0;
	int rc = BATON_ENOMEM;

	pthread_mutex_lock(&arena_lock);
	if (guard_budget < 0)
		guard_budget = read_budget();
	if (want_guard && (c = class_of(slot_size, true)) != NULL) {
		rc = class_take(c, arena, &idx);
		*guarded = true;
	}
	/* Canary asked for, or guard pages past the budget (or refused). */
	if (rc != BATON_OK && (c = class_of(slot_size, false)) != NULL) {
		rc = class_take(c, arena, &idx);
		*guarded = false;
	}
	if (rc == BATON_OK)
		*map = (*arena)->base + (size_t)idx * slot_size;
	pthread_mutex_unlock(&arena_lock);
	return rc;
}

/* Giving back takes the lock once for a batch (stack.c gives a thread's
 * spare stacks back 64 at a time): the per-stack part is a few stores,
 * and the clock read and the bounds' checks are paid once a batch. */
void baton__arena_give_begin(void)
{
	pthread_mutex_lock(&arena_lock);
}

void baton__arena_give_one(struct baton_arena *a, void *map)
{
	struct baton_arena_class *c = a->cls;
	uint32_t idx = (uint32_t)(((char *)map - a->base) / c->slot_size);

	a->free_idx[a->nfree++] = idx;
	a->dirty[idx] = 1;
	a->ndirty++;
	dirty_total++;
	refile(a);
	used_total--;
	if (--a->used == 0) {
		/* Kept (the next burst needs no mmap) within the bound. */
		c->inuse--;
		c->nempty++;
		free_empty_excess(c);
	}
}

void baton__arena_give_end(void)
{
	peaks_decay();
	if (dirty_total > dirty_bound())
		release_excess();
	pthread_mutex_unlock(&arena_lock);
}

void baton__arena_give(struct baton_arena *a, void *map)
{
	baton__arena_give_begin();
	baton__arena_give_one(a, map);
	baton__arena_give_end();
}

size_t baton__arena_trim(void)
{
	size_t released = 0;

	pthread_mutex_lock(&arena_lock);
	for (unsigned c = 0; c < nclasses; c++) {
		/* Arenas with free slots are all on `avail`. */
		struct baton_arena *a = classes[c].avail, *next;

		for (; a; a = next) {
			next = a->next;
			if (a->used == 0) {
				released += (size_t)a->nslots * classes[c].slot_size;
				arena_free(a);
				continue;
			}
			for (unsigned k = 0; k < a->nfree; k++)
				if (a->dirty[a->free_idx[k]]) {
					slot_release(a, a->free_idx[k]);
					released += classes[c].slot_size;
				}
		}
	}
	pthread_mutex_unlock(&arena_lock);
	return released;
}
