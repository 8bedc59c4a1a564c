/* SPDX-License-Identifier: MIT */
/*
 * Read sections and their grace periods (baton/smr.h; the ordering
 * argument is in the header). A section touches only its thread's record;
 * a grace period sums the records, index by index, around the asymmetric
 * barrier. Waiting is polling with growing sleeps: readers never signal
 * (that would cost them a read-modify-write), as SRCU's expedited path
 * polls.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/alloc.h"
#include "smr_internal.h"

_Static_assert((int)BATON__BARRIER_FENCE == BATON_SMR_BARRIER_FENCE &&
		       (int)BATON__BARRIER_MEMBARRIER == BATON_SMR_BARRIER_MEMBARRIER &&
		       (int)BATON__BARRIER_MPROTECT == BATON_SMR_BARRIER_MPROTECT,
	       "the public barrier kinds are the internal ones");

static uint64_t smr_next_id; /* (atomic) */

_Static_assert(offsetof(struct baton_smr, h) == 0 && offsetof(struct smr_rec, lock) == 0 &&
		       offsetof(struct smr_rec, unlock) == 2 * sizeof(uint64_t),
	       "the inline read side's view of a domain and a record (baton/smr.h)");

/* The calling thread's record in the domain it read last: one compare on
 * the fast path, inline or here. Keyed by the domain's id, which is never
 * reused, so a destroyed domain's entry never matches again. */
BATON_API __thread struct baton_smr_tls_ baton__smr_tls __attribute__((tls_model("initial-exec")));

/* The calling thread's record: found by its owner, else made and linked.
 * A thread that ended leaves its record to the next thread that gets its
 * pthread_t (its counts stay in the sums, so any thread may continue
 * them once the owner has ended). NULL without memory. */
static struct smr_rec *rec_slow(struct baton_smr *d)
{
	pthread_t self = pthread_self();
	struct smr_rec *r;

	/* Acquire: a record's owner and next were set before it was linked. */
	for (r = __atomic_load_n(&d->recs, __ATOMIC_ACQUIRE); r; r = r->next)
		if (pthread_equal(r->owner, self))
			goto found;
	r = baton__aligned(BATON_CACHELINE, sizeof(*r));
	if (r == NULL)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->owner = self;
	baton__spin_lock(&d->lock);
	r->next = d->recs;
	/* Release: the writer's acquire traversal sees owner and next. */
	__atomic_store_n(&d->recs, r, __ATOMIC_RELEASE);
	d->readers++;
	baton__spin_unlock(&d->lock);
found:
	baton__smr_tls.ctr = r->lock;
	baton__smr_tls.id = d->h.id;
	return r;
}

static inline struct smr_rec *rec_get(struct baton_smr *d)
{
	/* The record begins with its counters (the assertion above). */
	return BATON_LIKELY(baton__smr_tls.id == d->h.id) ? (struct smr_rec *)baton__smr_tls.ctr
							  : rec_slow(d);
}

int baton_smr_read_lock(baton_smr_t *d)
{
	struct smr_rec *r;
	unsigned i;

	if (BATON_UNLIKELY(d == NULL))
		return BATON_EINVAL;
	r = rec_get(d);
	if (BATON_UNLIKELY(r == NULL))
		return BATON_ENOMEM;
	/* Relaxed: an index read just before a flip only makes the grace
	 * period's second check wait for this section too (smr.h). */
	i = __atomic_load_n(&d->h.idx, __ATOMIC_RELAXED) & 1;
	/* Relaxed load and store, no read-modify-write: only this thread
	 * writes the record; the heavy side's barrier orders the store
	 * before the section's loads (baton__smr_light below). */
	__atomic_store_n(&r->lock[i], __atomic_load_n(&r->lock[i], __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	baton__smr_light(d);
	return (int)i;
}

int baton_smr_read_unlock(baton_smr_t *d, int token)
{
	struct smr_rec *r;

	if (BATON_UNLIKELY(d == NULL || (unsigned)token > 1))
		return BATON_EINVAL;
	r = rec_get(d);
	if (BATON_UNLIKELY(r == NULL)) {
		/* Release: the section's loads before the count, as below. */
		__atomic_fetch_add(&d->orphan_unlock[token], 1, __ATOMIC_RELEASE);
		return BATON_OK;
	}
	/* Release: the section's loads happen before a writer that sees
	 * this count (its acquire in idle()) frees anything. */
	__atomic_store_n(&r->unlock[token],
			 __atomic_load_n(&r->unlock[token], __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
	return BATON_OK;
}

/* Has every section that uses index i and whose lock store precedes the
 * barrier below ended? (smr.h: unlocks, barrier, locks.) */
static bool idle(struct baton_smr *d, unsigned i)
{
	/* Acquire (every load here): an unlock seen brings its section's
	 * lock store and loads with it. */
	uint64_t unlocks = __atomic_load_n(&d->orphan_unlock[i], __ATOMIC_ACQUIRE);
	uint64_t locks = 0;
	struct smr_rec *r;

	for (r = __atomic_load_n(&d->recs, __ATOMIC_ACQUIRE); r; r = r->next)
		unlocks += __atomic_load_n(&r->unlock[i], __ATOMIC_ACQUIRE);
	baton__smr_heavy(d);
	/* The head afresh: a record linked since may hold a lock whose
	 * unlock was summed above. */
	for (r = __atomic_load_n(&d->recs, __ATOMIC_ACQUIRE); r; r = r->next)
		locks += __atomic_load_n(&r->lock[i], __ATOMIC_RELAXED);
	return locks == unlocks;
}

/* Advance the grace-period machine as far as the readers let it, without
 * waiting; a no-op while another thread advances it. */
static void advance(struct baton_smr *d)
{
	/* Acquire: the previous holder's seq and idx stores are seen. */
	if (__atomic_exchange_n(&d->gp_busy, 1, __ATOMIC_ACQUIRE))
		return;
	for (;;) {
		/* Relaxed: only the holder of gp_busy writes seq and idx. */
		uint64_t s = __atomic_load_n(&d->seq, __ATOMIC_RELAXED);
		unsigned cur = __atomic_load_n(&d->h.idx, __ATOMIC_RELAXED);

		if ((s & 3) == 0) {
			/* Acquire: pairs with want_gp's release. */
			if (__atomic_load_n(&d->want, __ATOMIC_ACQUIRE) <= s >> 2)
				break;
			s |= 1;
			/* Release: a waiter reading it sees a period begun. */
			__atomic_store_n(&d->seq, s, __ATOMIC_RELEASE);
		}
		/* Phase 1 checks the index not in use, phase 2 the one just
		 * left: both are cur ^ 1 when they run. */
		if (!idle(d, cur ^ 1))
			break;
		if ((s & 3) == 1) {
			/* Relaxed: the flip is for progress, not for safety. */
			__atomic_store_n(&d->h.idx, cur ^ 1, __ATOMIC_RELAXED);
			s = (s & ~(uint64_t)3) | 2;
		} else {
			s = ((s >> 2) + 1) << 2;
		}
		/* Release: a waiter that sees the period done sees the
		 * readers' unlocks it was built on (their acquire chain). */
		__atomic_store_n(&d->seq, s, __ATOMIC_RELEASE);
	}
	/* Release: the next holder sees seq and idx as left here. */
	__atomic_store_n(&d->gp_busy, 0, __ATOMIC_RELEASE);
}

/* The count of completed grace periods after which everything unpublished
 * before this call may be freed, and ask the machine for it. */
static uint64_t want_gp(struct baton_smr *d)
{
	uint64_t s, target, w;

	/* Seq_cst: the caller's unpublishing stores come before the seq
	 * load, so a period that the load sees idle starts after them. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	s = __atomic_load_n(&d->seq, __ATOMIC_ACQUIRE);
	/* One in progress may have checked an index before our stores. */
	target = (s >> 2) + ((s & 3) ? 2 : 1);
	w = __atomic_load_n(&d->want, __ATOMIC_RELAXED);
	/* Release (on success): pairs with advance's acquire of want. */
	while (w < target &&
	       !__atomic_compare_exchange_n(&d->want, &w, target, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	return target;
}

static bool gp_done(struct baton_smr *d, uint64_t target)
{
	/* Acquire: pairs with advance's release of the completed period. */
	return __atomic_load_n(&d->seq, __ATOMIC_ACQUIRE) >> 2 >= target;
}

/* Free the closed batches that are due, outside the lock. */
static void reap(struct baton_smr *d)
{
	struct smr_batch *due = NULL, **tail = &due, *b;
	uint64_t n = 0;

	baton__spin_lock(&d->lock);
	while ((b = d->closed_head) != NULL && gp_done(d, b->target)) {
		d->closed_head = b->next;
		*tail = b;
		tail = &b->next;
	}
	if (d->closed_head == NULL)
		d->closed_tail = NULL;
	*tail = NULL;
	baton__spin_unlock(&d->lock);
	while ((b = due) != NULL) {
		due = b->next;
		for (unsigned k = 0; k < b->n; k++)
			b->objs[k].fn(b->objs[k].ptr);
		n += b->n;
		baton__free(b);
	}
	if (n) {
		baton__spin_lock(&d->lock);
		d->freed += n;
		d->pending -= n;
		baton__spin_unlock(&d->lock);
	}
}

/* Close the open batch (d->lock held): due after the next full period. */
static void close_locked(struct baton_smr *d)
{
	struct smr_batch *b = d->open;

	d->open = NULL;
	b->target = want_gp(d);
	b->next = NULL;
	if (d->closed_tail)
		d->closed_tail->next = b;
	else
		d->closed_head = b;
	d->closed_tail = b;
}

int baton_smr_retire(baton_smr_t *d, void *ptr, baton_smr_free_fn free_fn)
{
	struct smr_batch *fresh = NULL;
	bool closed;

	if (d == NULL || free_fn == NULL)
		return BATON_EINVAL;
	baton__spin_lock(&d->lock);
	if (d->open == NULL) {
		baton__spin_unlock(&d->lock);
		fresh = baton__malloc(sizeof(*fresh));
		if (fresh == NULL)
			return BATON_ENOMEM;
		fresh->n = 0;
		baton__spin_lock(&d->lock);
		if (d->open == NULL) { /* else another retire installed one */
			d->open = fresh;
			fresh = NULL;
		}
	}
	/* The open batch is never full: it is closed when it fills. */
	d->open->objs[d->open->n++] = (struct smr_obj){ ptr, free_fn };
	d->retired++;
	d->pending++;
	closed = d->open->n == BATON_SMR_BATCH;
	if (closed)
		close_locked(d);
	baton__spin_unlock(&d->lock);
	baton__free(fresh);
	if (closed) {
		advance(d);
		reap(d);
	}
	return BATON_OK;
}

/* Close the open batch if it holds anything; the target of the last
 * closed batch (0: nothing retired is waiting). */
static uint64_t close_open(struct baton_smr *d)
{
	uint64_t target;

	baton__spin_lock(&d->lock);
	if (d->open != NULL && d->open->n > 0)
		close_locked(d);
	target = d->closed_tail ? d->closed_tail->target : 0;
	baton__spin_unlock(&d->lock);
	return target;
}

int baton_smr_poll(baton_smr_t *d)
{
	if (d == NULL)
		return BATON_EINVAL;
	close_open(d);
	advance(d);
	reap(d);
	return BATON_OK;
}

/* Sleep the n-th time round a wait: yield a few times, then 10 us growing
 * to 1 ms, never past the deadline (< 0: none). */
static int backoff(unsigned n, int64_t deadline)
{
	int64_t ns = n < 4 ? 0 : (int64_t)10000 << (n - 4 < 7 ? n - 4 : 7);
	int rc;

	if (ns > 1000000)
		ns = 1000000;
	if (deadline >= 0) {
		int64_t left = deadline - baton__clock_now();

		if (left <= 0)
			return BATON_ETIMEDOUT;
		if (ns > left)
			ns = left;
	}
	rc = baton_sched_sleep(ns); /* parks the task, not its thread */
	if (rc == BATON_ENOSCHED) {
		struct timespec ts = { 0, (long)ns };

		if (ns == 0)
			sched_yield();
		else
			nanosleep(&ts, NULL);
		rc = BATON_OK;
	}
	return rc == BATON_ECANCELED ? rc : BATON_OK;
}

static int wait_gp(struct baton_smr *d, uint64_t target, int64_t timeout_ns)
{
	int64_t deadline = timeout_ns < 0 ? -1 : baton__clock_now() + timeout_ns;
	int rc = BATON_OK;

	for (unsigned n = 0; target != 0; n++) {
		advance(d);
		if (gp_done(d, target))
			break;
		if (timeout_ns == 0) { /* only tries, as every baton wait */
			rc = BATON_EAGAIN;
			break;
		}
		if ((rc = backoff(n, deadline)) != BATON_OK)
			break;
	}
	reap(d);
	return rc;
}

int baton_smr_synchronize(baton_smr_t *d, int64_t timeout_ns)
{
	if (d == NULL)
		return BATON_EINVAL;
	return wait_gp(d, want_gp(d), timeout_ns);
}

int baton_smr_barrier(baton_smr_t *d, int64_t timeout_ns)
{
	if (d == NULL)
		return BATON_EINVAL;
	return wait_gp(d, close_open(d), timeout_ns);
}

int baton_smr_create(baton_smr_t **out)
{
	struct baton_smr *d;

	if (out == NULL)
		return BATON_EINVAL;
	d = baton__aligned(BATON_CACHELINE, sizeof(*d));
	if (d == NULL)
		return BATON_ENOMEM;
	memset(d, 0, sizeof(*d));
	if (baton__smr_hp_init(d) != BATON_OK) {
		baton__free(d);
		return BATON_ENOMEM;
	}
	/* Relaxed: a unique number is all that is asked. */
	d->h.id = __atomic_add_fetch(&smr_next_id, 1, __ATOMIC_RELAXED);
	d->h.fence = baton__barrier_kind() == BATON__BARRIER_FENCE;
	*out = d;
	return BATON_OK;
}

static void free_batch_list(struct smr_batch *b)
{
	for (struct smr_batch *next; b; b = next) {
		next = b->next;
		for (unsigned k = 0; k < b->n; k++)
			b->objs[k].fn(b->objs[k].ptr);
		baton__free(b);
	}
}

int baton_smr_destroy(baton_smr_t *d)
{
	struct smr_rec *r, *next;

	if (d == NULL)
		return BATON_OK;
	/* No section open on either index (with the barrier, so a section
	 * that ended on another CPU is counted ended), no slot held. */
	if (!idle(d, 0) || !idle(d, 1) || baton__smr_hp_busy(d))
		return BATON_EBUSY;
	/* Nobody can hold a retired object any more: free them all now. */
	if (d->open != NULL)
		d->open->next = d->closed_head;
	free_batch_list(d->open != NULL ? d->open : d->closed_head);
	baton__smr_hp_fini(d);
	for (r = d->recs; r; r = next) {
		next = r->next;
		baton__free(r);
	}
	baton__free(d);
	return BATON_OK;
}

int baton_smr_stats(baton_smr_t *d, struct baton_smr_stats *out)
{
	if (d == NULL || out == NULL)
		return BATON_EINVAL;
	memset(out, 0, sizeof(*out));
	baton__spin_lock(&d->lock);
	out->retired = d->retired;
	out->freed = d->freed;
	out->pending = d->pending;
	out->readers = d->readers;
	baton__spin_unlock(&d->lock);
	/* Acquire: pairs with advance's release. */
	out->grace_periods = __atomic_load_n(&d->seq, __ATOMIC_ACQUIRE) >> 2;
	pthread_mutex_lock(&d->hp_lock);
	out->retired += d->hp_retired;
	out->freed += d->hp_freed;
	out->hp_pending = d->hp_n;
	/* Relaxed: a count read under the lock that guards the scans. */
	out->hp_slots = __atomic_load_n(&d->nhps, __ATOMIC_RELAXED);
	out->hp_bound = baton__smr_hp_bound(d);
	pthread_mutex_unlock(&d->hp_lock);
	return BATON_OK;
}

int baton_smr_barrier_kind(void)
{
	return (int)baton__barrier_kind();
}

const char *baton_smr_barrier_name(int kind)
{
	switch (kind) {
	case BATON_SMR_BARRIER_FENCE:
		return "fence";
	case BATON_SMR_BARRIER_MEMBARRIER:
		return "membarrier";
	case BATON_SMR_BARRIER_MPROTECT:
		return "mprotect";
	default:
		return "";
	}
}
