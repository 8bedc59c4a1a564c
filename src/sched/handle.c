/* SPDX-License-Identifier: MIT */
/*
 * Task ids (include/baton/sched.h, "tasks you can hold"): the process-wide
 * slot table, spawning with an id, a task's end as its slot records it,
 * and join, abort, detach and status on an id. See handle.h for the id's
 * shape and the lock order.
 *
 * The table is a list of chunks of growing size (chunk k holds 1024 << k
 * slots), allocated on demand and never freed: a stale id is looked up in
 * memory that is still a slot, and its generation says it is stale. The
 * first chunk is static (zero pages until used): most programs' ids are
 * all there, and are looked up without a load of the chunk list. Free
 * slots are a lock-free stack whose head carries a tag against ABA, in
 * front of which each worker keeps spares of its own.
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "../common/alloc.h"
#include "handle.h"
#include "queue.h"

#define CHUNK0_SHIFT 10
#define NCHUNKS 22                  /* 1024 * (2^22 - 1) slots: more than 32 bits of index */
#define GEN_ONE ((uint64_t)1 << 32) /* generation 1 in an id */

/* Its slots get their generation and index when first handed out
 * (slot_fresh): an id never given out meets generation 0 there, stale. */
static struct baton_tslot chunk0[1u << CHUNK0_SHIFT];
static struct baton_tslot *chunks[NCHUNKS] = { chunk0 };
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t fresh;     /* slots handed out of the chunks so far (atomic) */
static uint64_t free_head; /* tag << 32 | (index + 1), 0 = empty (atomic) */

static inline unsigned chunk_of(uint32_t idx, uint32_t *off)
{
	uint64_t j = (uint64_t)idx + (1u << CHUNK0_SHIFT);
	unsigned k = 63u - (unsigned)__builtin_clzll(j) - CHUNK0_SHIFT;

	*off = (uint32_t)(j - ((uint64_t)1 << (k + CHUNK0_SHIFT)));
	return k;
}

static inline struct baton_tslot *slot_at(uint32_t idx)
{
	uint32_t off;
	unsigned k;
	struct baton_tslot *c;

	if (BATON_LIKELY(idx < (1u << CHUNK0_SHIFT)))
		return &chunk0[idx];
	if ((k = chunk_of(idx, &off)) >= NCHUNKS)
		return NULL;
	/* Acquire: pairs with the release that publishes a chunk, so its
	 * slots read as initialised. */
	c = __atomic_load_n(&chunks[k], __ATOMIC_ACQUIRE);
	return c ? &c[off] : NULL;
}

static inline uint32_t slot_index(const struct baton_tslot *sl)
{
	return sl->index;
}

uint64_t baton__tslot_id(const struct baton_tslot *sl)
{
	return sl->id;
}

/* A slot never used: make sure its chunk exists. */
static struct baton_tslot *slot_fresh(void)
{
	/* Relaxed: a unique number is all we need of it. */
	uint32_t idx = __atomic_fetch_add(&fresh, 1, __ATOMIC_RELAXED);
	uint32_t off;
	unsigned k = chunk_of(idx, &off);
	struct baton_tslot *sl;

	if (k >= NCHUNKS || idx == UINT32_MAX)
		return NULL;
	if (k == 0) { /* nobody else has this number */
		sl = &chunk0[idx];
		sl->id = GEN_ONE | idx;
		sl->index = idx;
		return sl;
	}
	if ((sl = slot_at(idx)) != NULL)
		return sl;
	pthread_mutex_lock(&grow_lock);
	if (chunks[k] == NULL) {
		size_t n = (size_t)1 << (k + CHUNK0_SHIFT);
		struct baton_tslot *c = baton__aligned(BATON_CACHELINE, n * sizeof(*c));

		if (c != NULL) {
			memset(c, 0, n * sizeof(*c));
			for (size_t i = 0; i < n; i++) {
				c[i].index = (uint32_t)(n - (1u << CHUNK0_SHIFT) + i);
				c[i].id = GEN_ONE | c[i].index;
			}
			/* Release: see slot_at. */
			__atomic_store_n(&chunks[k], c, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&grow_lock);
	/* A number lost to a failed allocation stays unused: a later caller
	 * of a higher number retries the chunk. */
	return slot_at(idx);
}

static void slot_push_free(struct baton_tslot *sl)
{
	uint32_t idx = slot_index(sl);
	/* Relaxed: the CAS below orders. */
	uint64_t head = __atomic_load_n(&free_head, __ATOMIC_RELAXED), next;

	do {
		/* Relaxed: published by the release CAS below. */
		__atomic_store_n(&sl->next_free, (uint32_t)head, __ATOMIC_RELAXED);
		next = ((head >> 32) + 1) << 32 | (idx + 1u);
		/* Release: the slot's reset is visible to whoever pops it. */
	} while (!__atomic_compare_exchange_n(&free_head, &head, next, true, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

static struct baton_tslot *slot_pop_free(void)
{
	/* Acquire: pairs with the pushes' release CAS. */
	uint64_t head = __atomic_load_n(&free_head, __ATOMIC_ACQUIRE), next;
	struct baton_tslot *sl;

	do {
		if ((uint32_t)head == 0)
			return NULL;
		sl = slot_at((uint32_t)head - 1u);
		/* Relaxed: a stale link fails the tagged CAS below. */
		next = ((head >> 32) + 1) << 32 | __atomic_load_n(&sl->next_free, __ATOMIC_RELAXED);
		/* Acquire: as the load above. */
	} while (!__atomic_compare_exchange_n(&free_head, &head, next, true, __ATOMIC_ACQUIRE,
					      __ATOMIC_ACQUIRE));
	return sl;
}

/* A slot for a new task, set up without its lock: nobody has its new id
 * yet, and an older id's holder, who may lock the slot any time, reads
 * its generation (bumped under the lock when the slot was freed, not
 * written here) and stops there. The first lock taken after these writes
 * publishes them (baton__tslot_set_task's, before the id is given out). */
static inline void tslot_init(struct baton_tslot *sl, baton_task_result_fn fn, void *arg)
{
	sl->state = BATON_TSLOT_LIVE;
	sl->detached = false;
	sl->queued = false;
	sl->watched = false; /* cancel_pending is false in a free slot */
	sl->task = NULL;
	sl->fn = fn;
	sl->arg = arg;
	sl->group = NULL;
}

/* A slot from the worker's spares, or NULL. */
static inline struct baton_tslot *tslot_spare(void)
{
	struct baton_worker *w = baton__worker_get();

	return BATON_LIKELY(w != NULL && w->ntslots != 0) ? w->tslots[--w->ntslots] : NULL;
}

/* A slot from the shared table, or NULL (out of memory). */
static struct baton_tslot *tslot_shared(void)
{
	struct baton_tslot *sl = slot_pop_free();

	return sl != NULL ? sl : slot_fresh();
}

struct baton_tslot *baton__tslot_alloc(baton_task_result_fn fn, void *arg)
{
	struct baton_tslot *sl = tslot_spare();

	if (sl == NULL && (sl = tslot_shared()) == NULL)
		return NULL;
	tslot_init(sl, fn, arg);
	return sl;
}

/* Its result taken, or detached and ended: the id goes stale. Lock held;
 * released here. */
static inline void tslot_free_locked(struct baton_tslot *sl)
{
	sl->state = BATON_TSLOT_FREE;
	sl->id += 2 * GEN_ONE; /* odd, so never 0 (handle.h) */
	sl->result = NULL;
	baton__spin_unlock(&sl->lock);
	struct baton_worker *w = baton__worker_get();

	if (BATON_LIKELY(w != NULL && w->ntslots < sizeof(w->tslots) / sizeof(w->tslots[0])))
		w->tslots[w->ntslots++] = sl;
	else
		slot_push_free(sl);
}

void baton__tslot_free_locked(struct baton_tslot *sl)
{
	tslot_free_locked(sl);
}

/* The scheduler's destroy: w's spare slots go back to everybody. */
void baton__tslot_cache_flush(struct baton_worker *w)
{
	while (w->ntslots != 0)
		slot_push_free(w->tslots[--w->ntslots]);
}

/* In state `state`, and neither detached, queued nor watched (so in no
 * group): the fast paths of the end and of join, the four read in one
 * load. */
static inline bool slot_plain(const struct baton_tslot *sl, enum baton_tslot_state state)
{
	const uint8_t want[4] = { (uint8_t)state, false, false, false };
	uint32_t have, w;

	_Static_assert(offsetof(struct baton_tslot, detached) ==
				       offsetof(struct baton_tslot, state) + 1 &&
			       offsetof(struct baton_tslot, queued) ==
				       offsetof(struct baton_tslot, state) + 2 &&
			       offsetof(struct baton_tslot, watched) ==
				       offsetof(struct baton_tslot, state) + 3,
		       "state, detached, queued and watched are one 32-bit load");
	memcpy(&have, &sl->state, sizeof(have));
	memcpy(&w, want, sizeof(w));
	return have == w;
}

/* The slot's lock if it is free, without a spin (no call: the callers'
 * fast paths stay without a frame). */
static inline bool slot_trylock(struct baton_tslot *sl)
{
	/* Acquire: as baton__spin_lock's, which is this exchange first. */
	return __atomic_exchange_n(&sl->lock.locked, 1, __ATOMIC_ACQUIRE) == 0;
}

/* The id's slot, locked, if the id still names its task; else NULL. */
static inline struct baton_tslot *slot_lock_id(baton_tid_t id)
{
	struct baton_tslot *sl;

	if ((uint32_t)(id >> 32) == 0 || (sl = slot_at((uint32_t)id)) == NULL)
		return NULL;
	baton__spin_lock(&sl->lock);
	/* Detached and ended: only its group's bookkeeping keeps it. */
	if (sl->id != id || sl->state == BATON_TSLOT_FREE ||
	    (sl->state == BATON_TSLOT_ENDED && sl->detached)) {
		baton__spin_unlock(&sl->lock);
		return NULL;
	}
	return sl;
}

/* --- a task's life, as its slot sees it ------------------------------------ */
void baton__tslot_cancel_locked(struct baton_tslot *sl, struct baton_wakelist *wl)
{
	if (sl->state != BATON_TSLOT_LIVE)
		return;
	if (sl->task == NULL)
		sl->cancel_pending = true; /* baton__tslot_set_task passes it on */
	else
		baton__task_cancel_tree(sl->task, wl);
}

/* The end's general case, the slot's lock held (released), its end
 * recorded: joiners to wake, plain threads to tell, a detached slot to
 * free, or a group to hear of it once the slot's lock is released (the
 * slot is freed only once the group has unlinked it: a join or detach
 * meanwhile leaves that to us). */
static __attribute__((noinline)) void slot_end_slow(struct baton_tslot *sl, bool wake)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_group *g = sl->group;
	uint64_t id = baton__tslot_id(sl); /* the group reports it */
	bool bump = sl->nthreads != 0;

	if (wake)
		baton__waitq_wake_all(&sl->joiners, &wl, BATON_OK);
	if (g == NULL && sl->detached)
		tslot_free_locked(sl);
	else
		baton__spin_unlock(&sl->lock);
	if (bump)
		baton_ec_inc(&sl->ec);
	if (g) {
		/* Its status and result stay: the group holds the slot. */
		baton__group_child_end(g, sl, id, sl->status, sl->result, wake);
		baton__spin_lock(&sl->lock);
		sl->group = NULL;
		if (sl->detached && !sl->queued)
			tslot_free_locked(sl);
		else
			baton__spin_unlock(&sl->lock);
	}
	baton__wakelist_run_back(&wl);
}

/* The end: the slot records it; the common case - nobody waits, no group,
 * not detached - leaves it for the join. */
static inline __attribute__((always_inline)) void slot_end(struct baton_tslot *sl, bool wake)
{
	bool plain;

	baton__spin_lock(&sl->lock);
	plain = slot_plain(sl, BATON_TSLOT_LIVE); /* read before the store below */
	/* Its status and result are there already. Its task stays: only a
	 * LIVE slot's is read (cancel, join's deadlock check). */
	sl->state = BATON_TSLOT_ENDED;
	if (BATON_UNLIKELY(!plain)) {
		slot_end_slow(sl, wake);
		return;
	}
	baton__spin_unlock(&sl->lock);
}

void baton__tslot_main(void *arg)
{
	struct baton_tslot *sl = arg;

	/* The body writes its result into the slot (NULL there since the
	 * slot was freed, or new), and its status goes there too: nobody
	 * reads either before the end below publishes them (state ENDED,
	 * under the lock), and nothing of ours lives across the call but
	 * sl. */
	sl->status = sl->fn(sl->arg, &sl->result);
	/* Its groups end before it does. Its task was given to the slot
	 * before it could run (baton__tslot_set_task). */
	if (BATON_UNLIKELY(sl->task->groups != NULL))
		baton__task_close_groups(sl->task);
	slot_end(sl, true);
}

/* The scheduler's destroy frees t unfinished. Nothing may be readied now
 * (no worker runs): joiner tasks are being freed too; plain threads hear
 * it through the slot's event count. */
void baton__task_abandon(struct baton_task *t)
{
	if (t->fn == baton__tslot_main) {
		struct baton_tslot *sl = t->arg;

		sl->result = NULL; /* what the body may have written: not its end */
		sl->status = BATON_ESHUTDOWN;
		slot_end(sl, false);
	}
	if (t->groups != NULL) {
		baton__spin_lock(&t->glock);
		for (struct baton_group *g = t->groups; g; g = baton__group_forget_owner(g))
			;
		t->groups = NULL;
		baton__spin_unlock(&t->glock);
	}
}

/* --- the public calls -------------------------------------------------------- */
/* A spawn whose task could not be made: its slot goes back (the id,
 * given out already, is stale). */
void baton__tslot_unspawned(struct baton_tslot *sl)
{
	baton__spin_lock(&sl->lock);
	sl->cancel_pending = false; /* never passed on */
	tslot_free_locked(sl);
}

/* baton_task_spawn once the worker has no spare slot (or off a worker). */
static __attribute__((noinline)) int spawn_shared(baton_sched_t *s,
						  const struct baton_task_attr *attr,
						  baton_task_result_fn fn, void *arg,
						  baton_tid_t *tid)
{
	struct baton_tslot *sl = baton__tslot_alloc(fn, arg);

	if (sl == NULL)
		return BATON_ENOMEM;
	*tid = baton__tslot_id(sl);
	return baton__task_spawn_own(s, attr, sl);
}

int baton_task_spawn(baton_sched_t *s, const struct baton_task_attr *attr, baton_task_result_fn fn,
		     void *arg, baton_tid_t *tid)
{
	struct baton_worker *w = baton__worker_get();
	struct baton_tslot *sl;

	if (s == NULL || fn == NULL || tid == NULL)
		return BATON_EINVAL;
	if (BATON_UNLIKELY(w == NULL || w->ntslots == 0))
		return spawn_shared(s, attr, fn, arg, tid);
	sl = w->tslots[--w->ntslots];
	tslot_init(sl, fn, arg);
	/* Stored before the spawn, which ends in a tail call: nothing lives
	 * across it, so this path needs no frame (and read before it: on
	 * another worker the task may end, and a detach of its own id free
	 * the slot, before the spawn returns). The caller has it once we
	 * return; a failed spawn leaves a stale id there. */
	*tid = baton__tslot_id(sl);
	return baton__task_spawn_own(s, attr, sl);
}

/* An ended task's status and result, to the caller's (NULL: not asked). */
static inline void copy_end(const struct baton_tslot *sl, int *status, void **result)
{
	if (status)
		*status = sl->status;
	if (result)
		*result = sl->result;
}

/* Take an ended task's status and result (lock held; released). */
static inline int join_take(struct baton_tslot *sl, int *status, void **result)
{
	copy_end(sl, status, result);
	if (BATON_LIKELY(sl->group == NULL && !sl->queued)) {
		tslot_free_locked(sl);
	} else { /* its end frees it once its group let go (slot_end), or
		  * its group's next or close does (handle.h) */
		sl->detached = true;
		baton__spin_unlock(&sl->lock);
	}
	return BATON_OK;
}

/* Wait for the end of sl's task (lock held; released): the calling task
 * parks, a plain thread blocks on the slot's event count. */
static int join_wait(struct baton_tslot *sl, struct baton_task *self, int64_t timeout_ns)
{
	int rc;

	sl->watched = true; /* its end wakes us (slot_end_slow) */
	if (self != NULL)   /* woken by the end (OK) or not */
		return baton__wait_one(self, &sl->joiners, &sl->lock, timeout_ns);
	rc = baton__thread_wait_locked(&sl->lock, &sl->ec, &sl->nthreads, timeout_ns);
	baton__spin_unlock(&sl->lock);
	return rc;
}

/* Join's slow path: sl (locked) is not ended yet, or detached. */
static __attribute__((noinline)) int join_slow(struct baton_tslot *sl, baton_tid_t tid,
					       int64_t timeout_ns, int *status, void **result)
{
	struct baton_task *self = NULL;
	int64_t deadline = 0;
	int rc;

	for (bool first = true;; first = false) {
		if (!first && (sl = slot_lock_id(tid)) == NULL)
			return BATON_EDEAD;
		if (BATON_UNLIKELY(sl->detached)) {
			baton__spin_unlock(&sl->lock);
			return BATON_EDEAD;
		}
		if (sl->state == BATON_TSLOT_ENDED)
			return join_take(sl, status, result);
		if (timeout_ns == 0) {
			baton__spin_unlock(&sl->lock);
			return BATON_EAGAIN;
		}
		if (first) {
			self = baton__task_self();
			if (self == NULL && baton_sched_self() != NULL) {
				baton__spin_unlock(&sl->lock);
				return BATON_ENOSCHED; /* a plain coroutine a task resumed */
			}
			if (self != NULL && sl->task == self) {
				baton__spin_unlock(&sl->lock);
				return BATON_EDEADLK;
			}
			if (timeout_ns > 0)
				deadline = baton__deadline_after(timeout_ns);
		} else if (timeout_ns > 0 && (timeout_ns = deadline - baton__clock_now()) <= 0) {
			baton__spin_unlock(&sl->lock);
			return BATON_ETIMEDOUT;
		}
		if ((rc = join_wait(sl, self, timeout_ns)) != BATON_OK)
			return rc; /* ETIMEDOUT, ECANCELED, ENOMEM: still joinable */
	}
}

/* Join's general path: the id looked up again, under the slot's lock. */
static __attribute__((noinline)) int join_general(baton_tid_t tid, int64_t timeout_ns, int *status,
						  void **result)
{
	struct baton_tslot *sl = slot_lock_id(tid);

	if (sl == NULL)
		return BATON_EDEAD;
	/* slot_lock_id turned away one that ended and was detached. */
	if (sl->state == BATON_TSLOT_ENDED)
		return join_take(sl, status, result);
	return join_slow(sl, tid, timeout_ns, status, result);
}

int baton_task_join(baton_tid_t tid, int64_t timeout_ns, int *status, void **result)
{
	struct baton_tslot *sl;

	/* The fast path, short and without a frame: the task has ended, in
	 * no group (a fan-out's joins after the first, which waited), and
	 * its slot's lock is free. Anything else takes the general path. An
	 * id of generation 0 matches only a slot never used (id 0), which is
	 * not ENDED. */
	if (BATON_LIKELY((sl = slot_at((uint32_t)tid)) != NULL)) {
		if (BATON_LIKELY(slot_trylock(sl))) {
			if (BATON_LIKELY(sl->id == tid && slot_plain(sl, BATON_TSLOT_ENDED))) {
				copy_end(sl, status, result);
				tslot_free_locked(sl);
				return BATON_OK;
			}
			baton__spin_unlock(&sl->lock);
		}
	}
	return join_general(tid, timeout_ns, status, result);
}

int baton_task_abort(baton_tid_t tid)
{
	struct baton_wakelist wl = BATON_WAKELIST_INIT;
	struct baton_tslot *sl = slot_lock_id(tid);

	if (sl == NULL)
		return BATON_EDEAD;
	baton__tslot_cancel_locked(sl, &wl);
	baton__spin_unlock(&sl->lock);
	baton__wakelist_run(&wl);
	return BATON_OK;
}

int baton_task_detach(baton_tid_t tid)
{
	struct baton_tslot *sl = slot_lock_id(tid);

	if (sl == NULL)
		return BATON_EDEAD;
	if (sl->state == BATON_TSLOT_ENDED && sl->group == NULL && !sl->queued) {
		tslot_free_locked(sl); /* its result is dropped */
		return BATON_OK;
	}
	sl->detached = true; /* freed at its end (slot_end) */
	baton__spin_unlock(&sl->lock);
	return BATON_OK;
}

int baton_task_status(baton_tid_t tid)
{
	struct baton_tslot *sl = slot_lock_id(tid);
	int st;

	if (sl == NULL)
		return BATON_EDEAD;
	st = sl->state == BATON_TSLOT_ENDED ? BATON_TASK_ENDED : BATON_TASK_RUNNING;
	baton__spin_unlock(&sl->lock);
	return st;
}

baton_tid_t baton_task_id(void)
{
	struct baton_task *t = baton__task_self();
	baton_tid_t id = BATON_TID_NONE;

	if (t != NULL && t->fn == baton__tslot_main) {
		struct baton_tslot *sl = t->arg;

		baton__spin_lock(&sl->lock);
		id = baton__tslot_id(sl);
		baton__spin_unlock(&sl->lock);
	}
	return id;
}
